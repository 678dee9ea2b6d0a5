/* test-hardening.c: hostile input through the library and the ema-sim
 * program, one test per way it once crashed, hung or passed for something
 * else (issue 17): deep nesting (YAML, --set, model files, Mooncake JSON),
 * wrapping decimals and integers, quadratic key checks, special files (FIFO,
 * /dev/zero, directories), misbehaving plugins (fields outside their
 * struct, a too-small module symbol, an init failing without an error),
 * sweeps (signals, resume of a summary of the wrong shape, --list of many
 * points, -j 0), CSV quoting, null values, all-rejected runs; and fault
 * injection: a run or a sweep whose writes fail (RLIMIT_FSIZE, as a full
 * disk) or whose allocation fails (faultalloc.c, an LD_PRELOAD shim) leaves no summary.json that
 * passes for a result, and the sweep resumes to the full result. */
#include <errno.h>
#include <fcntl.h>
#include <sys/file.h>
#include <signal.h>
#include <string.h>
#include <sys/resource.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/un.h>
#include <sys/wait.h>
#include <unistd.h>

#include <glib/gstdio.h>

#include "ema/core/file.h"
#include "ema/core/node.h"
#include "ema/pool/guard.h"
#include "ema/pool/registry.h"
#include "ema/traces/trace.h"
#include "private.h"
#include "testutil.h"

/* ---- helpers ------------------------------------------------------------------ */

/* Strings a check reads once, freed at exit (LeakSanitizer runs then). */
static GPtrArray *kept;

static char *keep_path(char *text) {
  if (kept == NULL)
    kept = g_ptr_array_new_with_free_func(g_free);
  g_ptr_array_add(kept, text);
  return text;
}

/* DIR/sweep.csv, kept. */
static const char *keep_csv(const char *dir) {
  return keep_path(ema_test_read_file(dir, "sweep.csv"));
}

static char *write_temp(const char *dir, const char *name, const char *text) {
  char *path = g_build_filename(dir, name, NULL);
  GError *error = NULL;
  g_file_set_contents(path, text, -1, &error);
  g_assert_no_error(error);
  return path;
}

static char *repeat(const char *unit, guint n) {
  GString *out = g_string_new(NULL);
  for (guint i = 0; i < n; i++)
    g_string_append(out, unit);
  return g_string_free(out, FALSE);
}

/* "[" N times, then "]" N times. */
static char *nested_list(guint n) {
  g_autofree char *open = repeat("[", n);
  g_autofree char *close = repeat("]", n);
  return g_strconcat(open, close, NULL);
}

static char *fixture(const char *area, const char *name) {
  return ema_test_fixture(area, name);
}

/* A small serving experiment of one tenant (its name TENANT, synthetic
 * trace TRACE as YAML flow text) on an H200 pair. */
static char *serving_yaml(const char *tenant, const char *trace) {
  return g_strdup_printf("name: hardening\nserver: h200x2\ntenants:\n"
                         "  - {name: '%s', model: llama-3.1-8b, gpu: 0, trace: %s}\n",
                         tenant, trace);
}

/* 200 requests: requests.csv grows to ~18 KB, past the write limit of the
 * fault tests, while resolved.yaml (~2 KB) fits under it. */
static const char fault_trace[] =
    "{arrivals: poisson, rate: 20, requests: 200, prompt: {dist: fixed, tokens: 200}, "
    "output: {dist: fixed, tokens: 8}}";

static const char short_trace[] =
    "{arrivals: poisson, rate: 20, requests: 40, prompt: {dist: fixed, tokens: 200}, "
    "output: {dist: fixed, tokens: 8}}";

/* Run (ema-sim run, no plots) the serving experiment of serving_yaml
 * (TENANT, TRACE), written to DIR/exp.yaml, into DIR/out. */
static EmaTestRun *run_serving(const char *dir, const char *tenant, const char *trace) {
  g_autofree char *text = serving_yaml(tenant, trace);
  g_autofree char *path = write_temp(dir, "exp.yaml", text);
  g_autofree char *out = g_build_filename(dir, "out", NULL);
  return ema_test_cli("run", path, "-o", out, "--no-plot", NULL);
}

/* DIR/NAME: the serving experiment of serving_yaml("a", TRACE) after
 * BEFORE (top-level lines, may be ""), swept over the seeds SEEDS ("[1, 2]"). */
static char *write_sweep(const char *dir, const char *name, const char *before, const char *trace,
                         const char *seeds) {
  g_autofree char *base = serving_yaml("a", trace);
  g_autofree char *text = g_strdup_printf("%s%ssweep:\n  seed: %s\n", before, base, seeds);
  return write_temp(dir, name, text);
}

/* Limits for a child: RLIMIT_FSIZE (bytes a file may grow to; writes past
 * it fail with EFBIG, SIGXFSZ ignored). 0: not set. */
typedef struct {
  rlim_t fsize;
} Limits;

static void set_limits(gpointer data) {
  const Limits *limits = data;
  struct rlimit no_core = {0, 0};
  setrlimit(RLIMIT_CORE, &no_core); /* a child that dies of a signal leaves no core file */
  if (limits->fsize) {
    struct rlimit r = {limits->fsize, limits->fsize};
    signal(SIGXFSZ, SIG_IGN);
    setrlimit(RLIMIT_FSIZE, &r);
  }
}

/* Run ema-sim ARGS (after the program) in EMA_SOURCE_ROOT under LIMITS,
 * its environment edited by EDITS (as ema_test_environ; may be NULL);
 * returns the wait status, and its stderr in *ERR_OUT unless NULL. */
static int run_faulty(const char *const *args, const Limits *limits, const char *const *edits,
                      char **err_out) {
  g_autoptr(GPtrArray) argv = g_ptr_array_new();
  g_auto(GStrv) envp = ema_test_cli_environ(edits);
  g_autofree char *out = NULL, *err = NULL;
  GError *error = NULL;
  int status = 0;
  g_ptr_array_add(argv, (gpointer) ema_test_sim_path());
  for (guint i = 0; args[i]; i++)
    g_ptr_array_add(argv, (gpointer) args[i]);
  g_ptr_array_add(argv, NULL);
  g_spawn_sync(g_getenv("EMA_SOURCE_ROOT"), (char **) argv->pdata, envp, G_SPAWN_DEFAULT,
               set_limits, (gpointer) limits, &out, &err, &status, &error);
  g_assert_no_error(error);
  if (g_test_verbose())
    g_test_message("status %d\nstdout: %s\nstderr: %s", status, out, err);
  if (err_out)
    *err_out = g_steal_pointer(&err);
  return status;
}

static int run_limited(const char *const *args, const Limits *limits) {
  return run_faulty(args, limits, NULL, NULL);
}

/* ---- YAML ----------------------------------------------------------------------- */

static void test_yaml_deep_file(void) {
  g_autofree char *dir = ema_test_temp_dir();
  g_autofree char *deep = nested_list(50000);
  g_autofree char *text = g_strconcat("name: deep\nserver: ", deep, "\n", NULL);
  g_autofree char *path = write_temp(dir, "deep.yaml", text);
  g_autoptr(EmaTestRun) run = ema_test_cli("check", path, NULL);
  g_autofree char *prefix = g_strconcat(path, ":2:", NULL);
  ema_test_assert_error_line(run, prefix);
  ema_test_assert_contains(run->err, "maps and lists nested deeper than 64 levels");
  ema_test_remove_tree(dir);
}

static void test_yaml_deep_set(void) {
  g_autofree char *deep = nested_list(50000);
  g_autofree char *value = g_strconcat("server=", deep, NULL);
  g_autofree char *keys = repeat("a.", 50000);
  g_autofree char *path = g_strconcat(keys, "b=1", NULL);
  g_autofree char *experiment = fixture("serving", "one-request.yaml");
  g_autoptr(EmaTestRun) run = ema_test_cli("check", experiment, "--set", value, NULL);
  g_autoptr(EmaTestRun) run_path = ema_test_cli("check", experiment, "--set", path, NULL);
  ema_test_assert_error_line(run, "--set:1:8: server: bad value: ");
  ema_test_assert_contains(run->err, "nested deeper than 64 levels");
  ema_test_assert_error_line(run_path, "--set:1:1: key path nested deeper than 64 levels");
}

/* Includes add up: 16 files each 10 levels deep pass the include limit but
 * not the tree's. */
static void test_yaml_deep_includes(void) {
  g_autofree char *dir = ema_test_temp_dir();
  GError *error = NULL;
  for (guint i = 0; i < 8; i++) {
    g_autofree char *name = g_strdup_printf("f%u.yaml", i);
    g_autofree char *open = repeat("{a: ", 10);
    g_autofree char *close = repeat("}", 10);
    g_autofree char *text =
        i == 7 ? g_strdup("1\n") : g_strdup_printf("%s!include f%u.yaml%s\n", open, i + 1, close);
    g_free(write_temp(dir, name, text));
  }
  g_autofree char *top = g_build_filename(dir, "f0.yaml", NULL);
  g_autoptr(EmaNode) root = ema_node_load_file(top, &error);
  g_assert_null(root);
  g_assert_error(error, EMA_CONFIG_ERROR, EMA_CONFIG_ERROR_SYNTAX);
  ema_test_assert_contains(error->message, "f6.yaml:1:");
  ema_test_assert_contains(error->message, "nested deeper than 64 levels");
  g_clear_error(&error);
  ema_test_remove_tree(dir);
}

static void test_yaml_deep_hwmodel(void) {
  g_autofree char *dir = ema_test_temp_dir();
  g_autofree char *deep = nested_list(50000);
  g_autofree char *text = g_strconcat("summary: ", deep, "\n", NULL);
  g_autofree char *edit = g_strconcat("EMA_HWMODEL_PATH=", dir, NULL);
  const char *edits[] = {edit, NULL};
  g_free(write_temp(dir, "deep.yaml", text));
  g_autoptr(EmaTestRun) run = ema_test_cli_env(edits, "list", "hwmodels", NULL);
  g_assert_cmpint(run->status, ==, 0);
  ema_test_assert_contains(run->out, "deep ");
  ema_test_assert_contains(run->out, "nested deeper than 64 levels");
  ema_test_remove_tree(dir);
}

/* 100,000 keys, the last one a duplicate: found at once (a hash), not after
 * 5e9 string comparisons. */
/* 37#17: what YAML can say that EMA would not keep is an error at its
 * place: a NUL escape (it cut the string), a tag beyond the core schema's
 * (!!binary, a %TAG prefix's), a tag on a key (its message said the tag it
 * named was the only one known); !!str stays harmless. */
static void test_yaml_tags_and_nul(void) {
  const char *const cases[][2] = {
      {"name: \"a\\0b\"\n",
       "t.yaml:1:7: a NUL character (\\0) in a string: EMA's strings end at it"},
      {"name: !!binary aGVsbG8=\n",
       "t.yaml:1:7: unknown tag 'tag:yaml.org,2002:binary' (the only tag EMA knows is !include)"},
      {"%TAG !e! tag:example.com,2000:\n---\nname: !e!foo x\n",
       "t.yaml:3:7: unknown tag 'tag:example.com,2000:foo' (the only tag EMA knows is !include)"},
      {"!include name: x\n", "t.yaml:1:1: a map key takes no tag ('!include')"},
  };
  for (guint i = 0; i < G_N_ELEMENTS(cases); i++) {
    GError *error = NULL;
    g_autoptr(EmaNode) root = ema_node_load_string(cases[i][0], "t.yaml", NULL, &error);
    g_assert_null(root);
    g_assert_error(error, EMA_CONFIG_ERROR, EMA_CONFIG_ERROR_SYNTAX);
    g_assert_cmpstr(error->message, ==, cases[i][1]);
    g_clear_error(&error);
  }
  {
    GError *error = NULL;
    g_autoptr(EmaNode) root = ema_node_load_string("name: !!str 5\n", "t.yaml", NULL, &error);
    g_assert_no_error(error);
    g_assert_cmpstr(ema_node_get(root, "name")->value, ==, "5");
  }
}

static void test_yaml_many_keys(void) {
  GString *text = g_string_new(NULL);
  GError *error = NULL;
  gint64 start = g_get_monotonic_time();
  for (guint i = 0; i < 100000; i++)
    g_string_append_printf(text, "k%u: %u\n", i, i);
  g_string_append(text, "k5: again\n");
  g_autoptr(EmaNode) root = ema_node_load_string(text->str, "keys.yaml", NULL, &error);
  g_assert_null(root);
  g_assert_error(error, EMA_CONFIG_ERROR, EMA_CONFIG_ERROR_KEY);
  g_assert_cmpstr(error->message, ==, "keys.yaml:100001:1: duplicate key 'k5'");
  g_clear_error(&error);
  g_assert_cmpint(g_get_monotonic_time() - start, <, 10 * G_USEC_PER_SEC);
  g_string_free(text, TRUE);
}

static void test_yaml_special_include(void) {
  g_autofree char *dir = ema_test_temp_dir();
  g_autofree char *fifo = g_build_filename(dir, "fifo", NULL);
  g_autofree char *zero = write_temp(dir, "zero.yaml", "name: x\nserver: !include /dev/zero\n");
  g_autofree char *pipe = write_temp(dir, "pipe.yaml", "name: x\nserver: !include fifo\n");
  g_autofree char *zero_prefix = g_strconcat(zero, ":2:9: !include /dev/zero: ", NULL);
  g_autofree char *pipe_prefix = g_strconcat(pipe, ":2:9: !include fifo: ", NULL);
  g_assert_cmpint(mkfifo(fifo, 0600), ==, 0);
  g_autoptr(EmaTestRun) run_zero = ema_test_cli("check", zero, NULL);
  g_autoptr(EmaTestRun) run_pipe = ema_test_cli("check", pipe, NULL);
  g_autoptr(EmaTestRun) run_fifo = ema_test_cli("check", fifo, NULL);
  ema_test_assert_error_line(run_zero, zero_prefix);
  ema_test_assert_contains(run_zero->err, "not a regular file (a character device)");
  ema_test_assert_error_line(run_pipe, pipe_prefix);
  ema_test_assert_contains(run_pipe->err, "not a regular file (a FIFO)");
  ema_test_assert_error_line(run_fifo, fifo);
  ema_test_assert_contains(run_fifo->err, "not a regular file (a FIFO)");
  ema_test_remove_tree(dir);
}

/* ---- parameters --------------------------------------------------------------- */

static void test_params_null(void) {
  g_autofree char *dir = ema_test_temp_dir();
  g_autofree char *text = serving_yaml(
      "a", "{arrivals: gamma, rate: ~, cv: 1.09, duration: 2s, prompt: {dist: fixed, tokens: "
           "10}, output: {dist: fixed, tokens: 5}}");
  g_autofree char *path = write_temp(dir, "null.yaml", text);
  g_autofree char *prefix = g_strconcat(path, ":4:77: tenants.0.trace.rate: needs a value", NULL);
  g_autoptr(EmaTestRun) run = ema_test_cli("check", path, NULL);
  ema_test_assert_error_line(run, prefix);
  ema_test_remove_tree(dir);
}

/* What a run writes as resolved.yaml is an experiment `check` accepts. */
static void test_params_resolved_checks(void) {
  g_autofree char *dir = ema_test_temp_dir();
  g_autofree char *resolved = g_build_filename(dir, "out", "resolved.yaml", NULL);
  g_autoptr(EmaTestRun) run = run_serving(dir, "a", short_trace);
  ema_test_assert_ok(run);
  g_autoptr(EmaTestRun) check = ema_test_cli("check", resolved, NULL);
  ema_test_assert_ok(check);
  ema_test_remove_tree(dir);
}

static void test_params_range_messages(void) {
  g_autofree char *experiment = fixture("serving", "one-request.yaml");
  g_autoptr(EmaTestRun) seed =
      ema_test_cli("check", experiment, "--set", "seed=9223372036854775807", NULL);
  g_autoptr(EmaTestRun) tokens = ema_test_cli("check", experiment, "--set",
                                              "tenants.0.trace.prompt={dist: fixed, tokens: "
                                              "9223372036854775807}",
                                              NULL);
  ema_test_assert_error_line(
      seed, "--set:1:6: seed: 9223372036854775807 is out of range [0, 9200000000000000000]");
  ema_test_assert_error_line(tokens, "--set:1:46: tenants.0.trace.prompt.tokens: "
                                     "9223372036854775807 is out of range [1, 4294967295]");
}

static void test_params_size_range_message(void) {
  g_autofree char *dir = ema_test_temp_dir();
  g_autofree char *path =
      write_temp(dir, "ops.yaml",
                 "name: ops\nserver: h200x2\nops:\n  - name: copy\n    flows: [{kind: copy, src: "
                 "gpu0, dst: gpu1, bytes: 18446744073709551615B}]\n");
  g_autofree char *prefix = g_strconcat(
      path, ":5:55: ops.0.flows.0.bytes: 18446744073709551615B is out of range [1B, 1024TiB]",
      NULL);
  g_autoptr(EmaTestRun) run = ema_test_cli("check", path, NULL);
  ema_test_assert_error_line(run, prefix);
  ema_test_remove_tree(dir);
}

/* ---- traces --------------------------------------------------------------------- */

static void test_traces_decimal_overflow(void) {
  static const char text[] = "18446744073.7095516155";
  g_autofree char *dir = ema_test_temp_dir();
  g_autofree char *first = write_temp(dir, "first.csv",
                                      "arrived_at,num_prefill_tokens,num_decode_tokens\n"
                                      "18446744073.7095516155,10,10\n");
  g_autofree char *later = write_temp(dir, "later.csv",
                                      "arrived_at,num_prefill_tokens,num_decode_tokens\n"
                                      "1.0,10,10\n"
                                      "18446744073.7095516155,10,10\n");
  g_autofree char *first_message = g_strconcat(first, ":2:1: arrived_at: out of range", NULL);
  g_autofree char *later_message = g_strconcat(later, ":3:1: arrived_at: out of range", NULL);
  GError *error = NULL;
  gint64 value = 7;
  EmaRequestRecord record;
  g_assert_cmpstr(ema_trace_parse_decimal(text, strlen(text), 9, &value), ==, "out of range");
  g_assert_cmpint(value, ==, 7);
  /* the largest that fits still reads exactly */
  g_assert_null(ema_trace_parse_decimal("9223372036.854775807", 20, 9, &value));
  g_assert_cmpint(value, ==, G_MAXINT64);

  g_autoptr(EmaTraceSource) bad_first = ema_trace_source_open_vidur(first, &error);
  g_assert_no_error(error);
  g_assert_false(ema_trace_source_next(bad_first, &record, &error));
  g_assert_nonnull(error);
  ema_test_assert_contains(error->message, first_message);
  g_clear_error(&error);
  g_autoptr(EmaTraceSource) src = ema_trace_source_open_vidur(later, &error);
  g_assert_no_error(error);
  g_assert_true(ema_trace_source_next(src, &record, &error));
  g_assert_false(ema_trace_source_next(src, &record, &error));
  g_assert_nonnull(error);
  ema_test_assert_contains(error->message, later_message);
  g_clear_error(&error);
  ema_test_remove_tree(dir);
}

static void test_traces_mooncake_deep(void) {
  g_autofree char *dir = ema_test_temp_dir();
  g_autofree char *deep = nested_list(200000);
  g_autofree char *text = g_strconcat(
      "{\"timestamp\": 0, \"input_length\": 5, \"output_length\": 1, \"hash_ids\": ", deep, "}\n",
      NULL);
  g_autofree char *path = write_temp(dir, "deep.jsonl", text);
  g_autofree char *expected = g_strconcat(path, ":1:100: JSON nested deeper than 32 levels", NULL);
  GError *error = NULL;
  g_autoptr(EmaTraceSource) src = ema_trace_source_open_mooncake(path, &error);
  g_assert_null(src);
  g_assert_nonnull(error);
  g_assert_cmpstr(error->message, ==, expected);
  g_clear_error(&error);
  ema_test_remove_tree(dir);
}

static void test_traces_mooncake_bigint(void) {
  g_autofree char *dir = ema_test_temp_dir();
  g_autofree char *path = write_temp(
      dir, "big.jsonl",
      "{\"timestamp\": 0, \"input_length\": 18446744073709551621, \"output_length\": 1}\n");
  g_autofree char *text_ok =
      write_temp(dir, "ok.jsonl",
                 "{\"timestamp\": 0, \"input_length\": 5, \"output_length\": 1, \"note\": \"[[[ "
                 "99999999999999999999\"}\n");
  g_autofree char *expected =
      g_strconcat(path, ":1:34: integer out of range (beyond 64 bits)", NULL);
  GError *error = NULL;
  EmaRequestRecord record;
  g_autoptr(EmaTraceSource) src = ema_trace_source_open_mooncake(path, &error);
  g_assert_null(src);
  g_assert_nonnull(error);
  g_assert_cmpstr(error->message, ==, expected);
  g_clear_error(&error);
  /* brackets and digits inside strings are text */
  g_autoptr(EmaTraceSource) ok = ema_trace_source_open_mooncake(text_ok, &error);
  g_assert_no_error(error);
  g_assert_true(ema_trace_source_next(ok, &record, &error));
  g_assert_cmpuint(record.prompt_tokens, ==, 5);
  ema_test_remove_tree(dir);
}

static void test_traces_special_files(void) {
  g_autofree char *dir = ema_test_temp_dir();
  g_autofree char *fifo = g_build_filename(dir, "fifo.csv", NULL);
  GError *error = NULL;
  g_assert_cmpint(mkfifo(fifo, 0600), ==, 0);
  const char *paths[] = {"/dev/zero", fifo, dir};
  for (guint i = 0; i < G_N_ELEMENTS(paths); i++) {
    g_autoptr(EmaTraceSource) src = ema_trace_source_open_vidur(paths[i], &error);
    g_autofree char *prefix = g_strconcat(paths[i], ": not a regular file", NULL);
    g_assert_null(src);
    g_assert_error(error, EMA_TRACE_ERROR, EMA_TRACE_ERROR_IO);
    g_assert_true(g_str_has_prefix(error->message, prefix));
    g_clear_error(&error);
  }
  /* an experiment naming a directory as its trace says so */
  g_autofree char *text = serving_yaml("a", "{file: .}");
  g_autofree char *path = write_temp(dir, "exp.yaml", text);
  g_autoptr(EmaTestRun) run = ema_test_cli("check", path, NULL);
  g_autofree char *prefix =
      g_strconcat(path, ":4:60: tenants.0.trace.file: not a regular file: ", dir, NULL);
  ema_test_assert_error_line(run, prefix);
  ema_test_remove_tree(dir);
}

/* A file that is no regular file is named for its kind, in the same words whether it was
 * given to read or for an output: a character device (/dev/null) and a block device are
 * told apart (an output's message said "a device" for both), a socket is a socket. */
static void test_file_kinds(void) {
  g_autofree char *dir = ema_test_temp_dir();
  g_autofree char *fifo = g_build_filename(dir, "fifo", NULL);
  g_autofree char *sock = g_build_filename(dir, "sock", NULL);
  g_autofree char *link = g_build_filename(dir, "link", NULL);
  struct sockaddr_un address = {.sun_family = AF_UNIX};
  int fd = socket(AF_UNIX, SOCK_STREAM, 0);
  const char *block = NULL;
  GError *error = NULL;
  g_assert_cmpint(mkfifo(fifo, 0600), ==, 0);
  g_assert_cmpint(symlink(fifo, link), ==, 0);
  g_assert_cmpint(fd, >=, 0);
  g_assert_cmpuint(strlen(sock), <, sizeof address.sun_path);
  strcpy(address.sun_path, sock);
  g_assert_cmpint(bind(fd, (struct sockaddr *) &address, sizeof address), ==, 0);
  {
    g_autoptr(GDir) devices = g_dir_open("/dev", 0, NULL);
    const char *name;
    while (block == NULL && devices && (name = g_dir_read_name(devices)) != NULL) {
      g_autofree char *path = g_build_filename("/dev", name, NULL);
      GStatBuf st;
      if (g_lstat(path, &st) == 0 && S_ISBLK(st.st_mode))
        block = keep_path(g_steal_pointer(&path));
    }
  }
  const struct {
    const char *path, *kind;
  } cases[] = {
      {"/dev/null", "a character device"}, {fifo, "a FIFO"},          {sock, "a socket"},
      {link, "a symbolic link"},           {block, "a block device"},
  };
  for (guint i = 0; i < G_N_ELEMENTS(cases); i++) {
    g_autofree char *want = NULL;
    if (cases[i].path == NULL)
      continue; /* no block device here */
    want = g_strdup_printf("'%s' is %s, not a file the table can replace: give the table's file",
                           cases[i].path, cases[i].kind);
    g_assert_false(ema_file_output_ok(cases[i].path, "the table", &error));
    g_assert_error(error, G_FILE_ERROR, G_FILE_ERROR_INVAL);
    g_assert_cmpstr(error->message, ==, want);
    g_clear_error(&error);
  }
  /* read: the same words (a link is followed, to the FIFO it names) */
  const struct {
    const char *path, *kind;
  } reads[] = {{"/dev/null", "a character device"}, {link, "a FIFO"}, {dir, "a directory"}};
  for (guint i = 0; i < G_N_ELEMENTS(reads); i++) {
    g_autofree char *want =
        g_strdup_printf("%s: not a regular file (%s)", reads[i].path, reads[i].kind);
    g_assert_null(ema_file_open_regular(reads[i].path, &error));
    g_assert_error(error, G_FILE_ERROR, G_FILE_ERROR_INVAL);
    g_assert_cmpstr(error->message, ==, want);
    g_clear_error(&error);
  }
  close(fd);
  ema_test_remove_tree(dir);
}

/* ---- plugins ---------------------------------------------------------------------- */

static char *plugin_path(const char *name) {
  return g_build_filename(g_getenv("EMA_TEST_HARDENING_PLUGINS"), name, NULL);
}

/* DIR/plugins, holding (a link to) the test plugin NAME alone. */
static char *plugin_dir_with(const char *dir, const char *name) {
  char *plugins = g_build_filename(dir, "plugins", NULL);
  g_autofree char *file = g_strconcat(name, "." G_MODULE_SUFFIX, NULL);
  g_autofree char *module = plugin_path(file);
  g_assert_cmpint(g_mkdir(plugins, 0700), ==, 0);
  ema_test_link_into(plugins, file, module);
  return plugins;
}

static void assert_plugin_refused(const char *name, gint code, const char *message) {
  g_autofree char *path = plugin_path(name);
  g_autofree char *expected = g_strdup_printf("%s: %s", path, message);
  GError *error = NULL;
  g_assert_false(ema_policy_registry_load_file(path, &error));
  g_assert_error(error, EMA_POLICY_ERROR, code);
  g_assert_cmpstr(error->message, ==, expected);
  g_clear_error(&error);
}

static void test_plugin_field_overflow(void) {
  assert_plugin_refused("field-overflow." G_MODULE_SUFFIX, EMA_POLICY_ERROR_INVALID,
                        "borrow policy 'field-overflow': parameter 'ratio' (8 bytes at offset 2) "
                        "does not fit in the 4-byte parameter struct");
}

/* Parameter tables whose binding would crash or corrupt are refused at load: an OBJECT without
 * its table_for, a key listed twice, two fields on the same bytes. */
static void test_plugin_bad_tables(void) {
  assert_plugin_refused("object-no-table." G_MODULE_SUFFIX, EMA_POLICY_ERROR_INVALID,
                        "borrow policy 'object-no-table': parameter 'sub' has no table_for");
  assert_plugin_refused("key-twice." G_MODULE_SUFFIX, EMA_POLICY_ERROR_INVALID,
                        "borrow policy 'key-twice': parameter 'a' is listed twice");
  assert_plugin_refused("fields-overlap." G_MODULE_SUFFIX, EMA_POLICY_ERROR_INVALID,
                        "borrow policy 'fields-overlap': parameters 'a' and 'b' share bytes of the "
                        "parameter struct");
}

/* A module that calls a function nothing defines is refused at load (it loaded, and the run died
 * at the first call). */
static void test_plugin_undefined_symbol(void) {
  g_autofree char *path = plugin_path("undefined-symbol." G_MODULE_SUFFIX);
  GError *error = NULL;
  g_assert_false(ema_policy_registry_load_file(path, &error));
  g_assert_error(error, EMA_POLICY_ERROR, EMA_POLICY_ERROR_LOAD);
  g_assert_nonnull(strstr(error->message, ": cannot load: "));
  g_assert_nonnull(strstr(error->message, "ema_no_such_function"));
  g_clear_error(&error);
}

static void test_plugin_small_symbol(void) {
  g_autofree char *message =
      g_strdup_printf("symbol 'ema_policy_module' is 4 bytes, smaller than an EmaPolicyModule "
                      "(%zu bytes)",
                      sizeof(EmaPolicyModule));
  assert_plugin_refused("small-symbol." G_MODULE_SUFFIX, EMA_POLICY_ERROR_SYMBOL, message);
}

static void test_plugin_silent_init(void) {
  g_autofree char *dir = ema_test_temp_dir();
  g_autofree char *base = serving_yaml("a", short_trace);
  g_autofree char *text = g_strconcat("policy: {borrow: silent-init}\n", base, NULL);
  g_autofree char *path = write_temp(dir, "exp.yaml", text);
  g_autofree char *out = g_build_filename(dir, "out", NULL);
  g_autofree char *plugins = plugin_dir_with(dir, "silent-init");
  g_autofree char *module = g_build_filename(plugins, "silent-init." G_MODULE_SUFFIX, NULL);
  /* named with its file, as its decide's errors are (it was the policy's name alone) */
  g_autofree char *want = g_strdup_printf(
      "ema-sim: borrow policy silent-init (%s): init failed without saying why\n", module);
  g_autofree char *no_results = ema_test_no_results(out);
  g_autofree char *want_run =
      g_strdup_printf("ema-sim: borrow policy silent-init (%s): init failed without saying why%s",
                      module, no_results);
  g_autoptr(EmaTestRun) run =
      ema_test_cli("--plugin-dir", plugins, "run", path, "-o", out, "--no-plot", NULL);
  g_assert_cmpint(run->status, ==, 1);
  ema_test_assert_contains(run->err, want_run);
  {
    /* try-policy calls init the same way (it crashed on the missing error) */
    g_autofree char *view = ema_test_fixture("policies", "view-short.yaml");
    g_autoptr(EmaTestRun) tried =
        ema_test_cli("--plugin-dir", plugins, "try-policy", "borrow", "silent-init", view, NULL);
    ema_test_assert_failed(tried, 1, want);
  }
  ema_test_remove_tree(dir);
}

/* Run a tenant short of KV memory on gpu0 of an H200 pair (gpu1 idle,
 * lending) under POLICY (a policy map's entries: "borrow: NAME") of the
 * contract.c plugin, its environment edited by EDITS (may be NULL). */
static EmaTestRun *run_contract(const char *dir, const char *policy, const char *const *edits) {
  g_autofree char *text = g_strdup_printf(
      "name: contract\nserver: h200x2\npolicy: {%s}\ntenants:\n"
      "  - {name: a, model: llama-3.1-8b, gpu: 0, engine: {gpu_memory_utilization: 12%%},\n"
      "     trace: {arrivals: poisson, rate: 8, duration: 5s, prompt: {dist: fixed, tokens: "
      "1500},\n             output: {dist: fixed, tokens: 200}}}\n",
      policy);
  g_autofree char *path = write_temp(dir, "exp.yaml", text);
  g_autofree char *out = g_build_filename(dir, "out", NULL);
  g_autofree char *plugins = g_build_filename(dir, "plugins", NULL);
  if (!g_file_test(plugins, G_FILE_TEST_IS_DIR))
    g_free(plugin_dir_with(dir, "contract"));
  return ema_test_cli_env(edits, "--plugin-dir", plugins, "run", path, "-o", out, "--no-plot",
                          NULL);
}

/* 37#9: a policy that writes into its read-only view (a borrow policy's
 * decide, or a prefetch policy's at step time) is named, with its
 * module, and stops the run before the pool acts (the ledger was corrupted,
 * found late, unnamed, or an abort); one writing a request view's
 * blocks_at writes into a copy; G_MININT64 slices returned are all it has
 * (no undefined negation); EMA_POOL_CHECKS=bogus is an error, not an
 * abort. */
static void test_plugin_contract(void) {
  g_autofree char *dir = ema_test_temp_dir();
  g_autofree char *module = NULL;
  g_autofree char *out = g_build_filename(dir, "out", NULL);
  g_autofree char *no_results = ema_test_no_results(out);
  {
    g_autoptr(EmaTestRun) run = run_contract(dir, "borrow: writes-lent", NULL);
    module = g_build_filename(dir, "plugins", "contract." G_MODULE_SUFFIX, NULL);
    g_autofree char *want = g_strdup_printf(
        "ema-sim: borrow policy writes-lent (%s): decide wrote into its read-only view "
        "(lent[]): the run stops before the pool acts on it%s",
        module, no_results);
    ema_test_assert_failed(run, 1, want);
  }
  {
    g_autoptr(EmaTestRun) run = run_contract(dir, "borrow: writes-blocks-at", NULL);
    ema_test_assert_ok(run);
  }
  {
    /* a write into its own parameters: named (its later decisions drifted from resolved.yaml) */
    g_autoptr(EmaTestRun) run = run_contract(dir, "borrow: writes-params", NULL);
    g_autofree char *want = g_strdup_printf("ema-sim: borrow policy writes-params (%s): decide "
                                            "wrote into its parameters: the run stops before "
                                            "the pool acts on it%s",
                                            module, no_results);
    ema_test_assert_failed(run, 1, want);
  }
  {
    /* more actions counted than a plan holds: named, not applied in part */
    g_autoptr(EmaTestRun) run = run_contract(dir, "borrow: plan-overfull", NULL);
    g_autofree char *want = g_strdup_printf("ema-sim: borrow policy plan-overfull (%s): decide "
                                            "planned 1000 actions, more than a plan holds "
                                            "(16)%s",
                                            module, no_results);
    ema_test_assert_failed(run, 1, want);
  }
  {
    /* try-policy refuses it in the same words (it printed the first 16 actions and exited 0),
     * and a reclaim plan of more than its 32 */
    g_autofree char *view = ema_test_fixture("policies", "view-short.yaml");
    g_autofree char *plugins = g_build_filename(dir, "plugins", NULL);
    g_autoptr(EmaTestRun) borrow =
        ema_test_cli("--plugin-dir", plugins, "try-policy", "borrow", "plan-overfull", view, NULL);
    g_autoptr(EmaTestRun) reclaim =
        ema_test_cli("--plugin-dir", plugins, "try-policy", "reclaim", "reclaim-plan-overfull",
                     view, "--gpu", "1", "--needed", "20", NULL);
    g_autofree char *want = g_strdup_printf("ema-sim: borrow policy plan-overfull (%s): decide "
                                            "planned 1000 actions, more than a plan holds "
                                            "(16)\n",
                                            module);
    g_autofree char *want_reclaim =
        g_strdup_printf("ema-sim: reclaim policy reclaim-plan-overfull (%s): decide planned 33 "
                        "actions, more than a plan holds (32)\n",
                        module);
    ema_test_assert_failed(borrow, 1, want);
    ema_test_assert_failed(reclaim, 1, want_reclaim);
  }
  {
    g_autoptr(EmaTestRun) run = run_contract(dir, "borrow: returns-minint", NULL);
    ema_test_assert_ok(run);
    ema_test_assert_contains(keep_path(ema_test_read_file(out, "summary.json")), "\"returns\" : ");
  }
  for (guint level = 0; level < 2; level++) {
    /* a prefetch policy at step time, under EMA_POOL_CHECKS=all (the tests' default) and off: a
     * module's decide is sealed at every level, as its borrow and reclaim decisions are */
    const char *edits[] = {level == 0 ? "EMA_POOL_CHECKS=all" : "EMA_POOL_CHECKS=off", NULL};
    g_autoptr(EmaTestRun) run =
        run_contract(dir, "borrow: on-demand, prefetch: prefetch-writes-lent", edits);
    g_autofree char *want = g_strdup_printf(
        "ema-sim: prefetch policy prefetch-writes-lent (%s): decide wrote into its read-only view "
        "(lent[]): the run stops before the pool acts on it%s",
        module, no_results);
    ema_test_assert_failed(run, 1, want);
  }
  {
    const char *edits[] = {"EMA_POOL_CHECKS=bogus", NULL};
    g_autoptr(EmaTestRun) run = run_contract(dir, "borrow: returns-minint", edits);
    g_autofree char *want =
        g_strconcat("EMA_POOL_CHECKS=bogus: give all, sample or off", no_results, NULL);
    ema_test_assert_contains(run->err, want);
    g_assert_cmpint(run->status, ==, 1);
  }
  ema_test_remove_tree(dir);
}

/* A run that a plugin stops mid-run (the contract plugin's writes-lent, its decide writing into
 * its view) leaves no folder that passes for a result: it left resolved.yaml and the tables as
 * far as they went (requests.csv, timeline.csv) without a summary.json. Its tables
 * are written into out/.ema-partial and go with it; out/ keeps the marker, the run's
 * resolved.yaml and the user's notes.txt, and the error line says that no results were written.
 * A run that ends well moves them into place and leaves no .ema-partial. */
static void test_plugin_failed_run_no_results(void) {
  g_autofree char *dir = ema_test_temp_dir();
  g_autofree char *out = g_build_filename(dir, "out", NULL);
  g_autofree char *notes = g_build_filename(out, "notes.txt", NULL);
  g_autofree char *module = g_build_filename(dir, "plugins", "contract." G_MODULE_SUFFIX, NULL);
  g_autofree char *no_results = ema_test_no_results(out);
  g_autofree char *want = g_strdup_printf(
      "ema-sim: borrow policy writes-lent (%s): decide wrote into its read-only view (lent[]): "
      "the run stops before the pool acts on it%s",
      module, no_results);
  {
    g_autoptr(EmaTestRun) run = run_contract(dir, "borrow: returns-minint", NULL);
    ema_test_assert_ok(run);
  }
  g_assert_cmpstr(keep_path(ema_test_dir_entries(out)), ==,
                  ".ema-output events.csv requests.csv resolved.yaml summary.json tenants.csv "
                  "timeline.csv");
  g_assert_true(g_file_set_contents(notes, "mine", -1, NULL));
  {
    g_autoptr(EmaTestRun) run = run_contract(dir, "borrow: writes-lent", NULL);
    ema_test_assert_failed(run, 1, want);
  }
  g_assert_cmpstr(keep_path(ema_test_dir_entries(out)), ==, ".ema-output notes.txt resolved.yaml");
  ema_test_assert_contains(keep_path(ema_test_read_file(out, "resolved.yaml")), "writes-lent");
  g_assert_cmpstr(keep_path(ema_test_read_file(out, "notes.txt")), ==, "mine");
  ema_test_remove_tree(dir);
}

/* Run `ema-sim --plugin-dir DIR/plugins run` of the short serving experiment under POLICY (a policy
 * map's entries) into DIR/out, its environment edited by EDITS (may be NULL); the wait status,
 * stderr in *ERR. */
static int run_plugin_policy(const char *dir, const char *policy, const char *const *edits,
                             char **err) {
  g_autofree char *base = serving_yaml("a", short_trace);
  g_autofree char *text = g_strdup_printf("policy: {%s}\n%s", policy, base);
  g_autofree char *path = write_temp(dir, "exp.yaml", text);
  g_autofree char *out = g_build_filename(dir, "out", NULL);
  g_autofree char *plugins = g_build_filename(dir, "plugins", NULL);
  const char *args[] = {"--plugin-dir", plugins, "run", path, "-o", out, "--no-plot", NULL};
  Limits limits = {0};
  return run_faulty(args, &limits, edits, err);
}

/* A plugin that crashes inside a hook (a NULL read, an abort, a stack overflow) is named, with its
 * module and the hook, on one line of stderr, and the process still dies of the signal (it died
 * unnamed). Not under AddressSanitizer,
 * whose own report names the frames (the handlers are not installed there). */
static void test_plugin_crash(void) {
  static const struct {
    const char *policy, *hook;
    int signal;
    const char *signal_name;
  } cases[] = {
      {"null-decide", "decide", SIGSEGV, "SIGSEGV"},
      {"abort-init", "init", SIGABRT, "SIGABRT"},
      {"deep-decide", "decide", SIGSEGV, "SIGSEGV"}, /* a stack overflow */
  };
  g_autofree char *dir = NULL, *plugins = NULL, *module = NULL, *out = NULL;
  if (!EMA_PLUGIN_GUARD_SIGNALS) {
    g_test_skip("the crash handlers are not installed under AddressSanitizer");
    return;
  }
  dir = ema_test_temp_dir();
  plugins = plugin_dir_with(dir, "crashing");
  module = g_build_filename(plugins, "crashing." G_MODULE_SUFFIX, NULL);
  out = g_build_filename(dir, "out", NULL);
  for (guint i = 0; i < G_N_ELEMENTS(cases); i++) {
    g_autofree char *policy = g_strdup_printf("borrow: %s", cases[i].policy);
    g_autofree char *err = NULL;
    g_autofree char *want =
        g_strdup_printf("ema-sim: policy plugin '%s' (%s) crashed in its %s hook (signal %s)\n",
                        cases[i].policy, module, cases[i].hook, cases[i].signal_name);
    int status = run_plugin_policy(dir, policy, NULL, &err);
    g_assert_true(WIFSIGNALED(status));
    g_assert_cmpint(WTERMSIG(status), ==, cases[i].signal);
    ema_test_assert_contains(err, want);
    /* its tables as far as they went only in the hidden .ema-partial (the next claim removes
     * it): the folder does not pass for a result */
    g_assert_cmpstr(keep_path(ema_test_dir_entries(out)), ==,
                    ".ema-output .ema-partial resolved.yaml");
  }
  {
    /* try-policy calls the same hooks */
    g_autofree char *view = ema_test_fixture("policies", "view-short.yaml");
    const char *args[] = {"--plugin-dir", plugins, "try-policy", "borrow",
                          "null-decide",  view,    NULL};
    g_autofree char *err = NULL;
    g_autofree char *want = g_strdup_printf(
        "ema-sim: policy plugin 'null-decide' (%s) crashed in its decide hook (signal SIGSEGV)\n",
        module);
    Limits limits = {0};
    int status = run_faulty(args, &limits, NULL, &err);
    g_assert_true(WIFSIGNALED(status));
    g_assert_cmpint(WTERMSIG(status), ==, SIGSEGV);
    g_assert_cmpstr(err, ==, want);
  }
  ema_test_remove_tree(dir);
}

/* A plugin call that never returns is stopped at EMA_PLUGIN_CALL_LIMIT seconds (60 unset), named
 * with its hook, exit 1; a limit that is not a whole number of seconds is an error once a plugin
 * is loaded, and no concern of a run without plugins. */
static void test_plugin_hang(void) {
  g_autofree char *dir = ema_test_temp_dir();
  g_autofree char *plugins = plugin_dir_with(dir, "looping");
  g_autofree char *module = g_build_filename(plugins, "looping." G_MODULE_SUFFIX, NULL);
  {
    const char *edits[] = {"EMA_PLUGIN_CALL_LIMIT=1", NULL};
    g_autofree char *err = NULL;
    g_autofree char *want = g_strdup_printf("ema-sim: policy plugin 'looping' (%s): its init hook "
                                            "ran past 1 s (EMA_PLUGIN_CALL_LIMIT): stopped\n",
                                            module);
    gint64 start = g_get_monotonic_time();
    int status = run_plugin_policy(dir, "borrow: looping", edits, &err);
    gint64 took = g_get_monotonic_time() - start;
    g_assert_true(WIFEXITED(status));
    g_assert_cmpint(WEXITSTATUS(status), ==, 1);
    /* its last line; before it only the warnings of a profile whose public data is absent */
    g_assert_cmpstr(strlen(err) >= strlen(want) ? err + strlen(err) - strlen(want) : err, ==, want);
    {
      g_auto(GStrv) lines = g_strsplit(err, "\n", -1);
      for (guint i = 0; lines[i + 1] != NULL && lines[i + 2] != NULL; i++)
        g_assert_true(g_str_has_prefix(lines[i], "ema: warning: profile "));
    }
    g_assert_cmpint(took, >=, 1 * G_USEC_PER_SEC);
    g_assert_cmpint(took, <, 10 * G_USEC_PER_SEC);
  }
  {
    const char *edits[] = {"EMA_PLUGIN_CALL_LIMIT=1s", NULL};
    g_autofree char *err = NULL;
    int status = run_plugin_policy(dir, "borrow: looping", edits, &err);
    g_assert_true(WIFEXITED(status));
    g_assert_cmpint(WEXITSTATUS(status), ==, 1);
    ema_test_assert_contains(err, "EMA_PLUGIN_CALL_LIMIT='1s': not a whole number of seconds from "
                                  "0 (no limit) to 31536000\n");
  }
  {
    const char *edits[] = {"EMA_PLUGIN_CALL_LIMIT=1s", NULL};
    g_autoptr(EmaTestRun) run = ema_test_cli_env(edits, "list", "policies", NULL);
    ema_test_assert_ok(run);
  }
  ema_test_remove_tree(dir);
}

/* The guard changes nothing a plugin run writes: the contract plugin's well-behaved policy with
 * the watchdog and the handlers (the default) and without the watchdog (EMA_PLUGIN_CALL_LIMIT=0)
 * write the same files, byte for byte. */
static void test_plugin_guard_unchanged(void) {
  g_autofree char *dir = ema_test_temp_dir();
  g_autofree char *out = g_build_filename(dir, "out", NULL);
  static const char *const files[] = {"timeline.csv", "events.csv", "requests.csv"};
  char *first[G_N_ELEMENTS(files)];
  for (guint pass = 0; pass < 2; pass++) {
    const char *edits[] = {pass ? "EMA_PLUGIN_CALL_LIMIT=0" : "EMA_PLUGIN_CALL_LIMIT", NULL};
    g_autoptr(EmaTestRun) run = run_contract(dir, "borrow: writes-blocks-at", edits);
    ema_test_assert_ok(run);
    for (guint i = 0; i < G_N_ELEMENTS(files); i++) {
      char *text = ema_test_read_file(out, files[i]);
      if (pass == 0)
        first[i] = text;
      else {
        g_assert_cmpstr(text, ==, first[i]);
        g_free(text);
        g_free(first[i]);
      }
    }
  }
  ema_test_remove_tree(dir);
}

/* ---- runs ------------------------------------------------------------------------ */

/* A tenant's name with quotes (a comma is refused in one) is one quoted field of requests.csv. */
static void test_run_csv_quoting(void) {
  g_autofree char *dir = ema_test_temp_dir();
  g_autofree char *out = g_build_filename(dir, "out", NULL);
  g_autoptr(EmaTestRun) run = run_serving(dir, "a \"b\"", short_trace);
  ema_test_assert_ok(run);
  g_autofree char *csv = ema_test_read_file(out, "requests.csv");
  g_auto(GStrv) lines = g_strsplit(csv, "\n", -1);
  g_assert_true(g_str_has_prefix(lines[1], "\"a \"\"b\"\"\",0,"));
  /* every row has the header's 12 fields once the quoted one is counted as one */
  g_auto(GStrv) fields = g_strsplit(lines[1] + strlen("\"a \"\"b\"\"\""), ",", -1);
  g_assert_cmpuint(g_strv_length(fields), ==, 12);
  ema_test_remove_tree(dir);
}

/* 37#1: two requests 1e8 s apart: timeline.csv holds the busy samples and
 * one sample either side of the idle stretch (it was ~5 GB), and the KV means
 * count the samples it skipped as the same as its edges. A sample is two rows
 * (gpu1 has no tenant). */
static void test_run_idle_stretch(void) {
  g_autofree char *dir = ema_test_temp_dir();
  g_autofree char *out = g_build_filename(dir, "out", NULL);
  g_autofree char *trace = write_temp(dir, "t.csv",
                                      "TIMESTAMP,ContextTokens,GeneratedTokens\n"
                                      "2023-11-16 18:15:46.0000000,100,10\n"
                                      "2026-11-16 18:15:46.0000000,50,5\n");
  g_autoptr(EmaTestRun) run = run_serving(dir, "a", "{file: t.csv, format: azure}");
  g_autofree char *timeline = NULL;
  g_auto(GStrv) lines = NULL;
  ema_test_assert_ok(run);
  timeline = ema_test_read_file(out, "timeline.csv");
  lines = g_strsplit(timeline, "\n", -1);
  g_assert_cmpuint(g_strv_length(lines), <=, 2 + 6 * 2); /* the header, 6 samples, "" */
  /* the second request reaches the engine the default profile's request_cpu_cost (the API
   * server, a few ms) after its arrival at 94694400 s: the stretch's last idle sample is that
   * second's, the first busy one the next */
  ema_test_assert_contains(timeline, "\n94694400.000000000,0,a,0,");
  ema_test_assert_contains(timeline, "\n94694401.000000000,0,a,");
  ema_test_remove_tree(dir);
}

/* 37#1: a timeline that would outgrow timeline_max_rows is capped, and the
 * run says so before it starts (its duration bounds the samples) and when
 * it stopped writing. */
static void test_run_timeline_cap(void) {
  g_autofree char *dir = ema_test_temp_dir();
  g_autofree char *out = g_build_filename(dir, "out", NULL);
  g_autofree char *base = serving_yaml("a", short_trace);
  g_autofree char *text =
      g_strconcat("sample_period: 1ms\nduration: 10s\ntimeline_max_rows: 50\n", base, NULL);
  g_autofree char *path = write_temp(dir, "exp.yaml", text);
  g_autoptr(EmaTestRun) run = ema_test_cli("run", path, "-o", out, "--no-plot", NULL);
  g_autofree char *timeline = NULL;
  g_auto(GStrv) lines = NULL;
  g_assert_cmpint(run->status, ==, 0);
  /* a sample is a row per GPU: gpu0's tenant's and gpu1's, which has none */
  g_assert_true(g_str_has_prefix(
      run->err, "ema-sim: warning: timeline.csv may reach its cap of 50 rows (sample_period "
                "0.001 s over duration 10 s: up to 10001 samples of 2 GPUs)"));
  ema_test_assert_contains(run->err, "ema-sim: warning: timeline.csv stopped at 50 rows "
                                     "(timeline_max_rows 50: whole samples only), at ");
  timeline = ema_test_read_file(out, "timeline.csv");
  lines = g_strsplit(timeline, "\n", -1);
  g_assert_cmpuint(g_strv_length(lines), ==, 52); /* the header, 50 rows, "" */
  ema_test_remove_tree(dir);
}

/* A tenant to whom no request arrives (a trace of a header only, or one
 * whose first arrival comes after the run's end) runs, and the run says so. */
static void test_run_no_arrivals(void) {
  g_autofree char *dir = ema_test_temp_dir();
  g_autofree char *header_only = ema_test_fixture("traces", "azure-header-only.csv");
  g_autofree char *trace = g_strdup_printf("{format: azure, file: '%s'}", header_only);
  g_autoptr(EmaTestRun) run = run_serving(dir, "quiet", trace);
  /* Poisson arrivals at 20/s: none within the first microsecond */
  g_autofree char *late_text = serving_yaml("late", short_trace);
  g_autofree char *late = write_temp(dir, "late.yaml", late_text);
  g_autofree char *out = g_build_filename(dir, "late-out", NULL);
  g_autoptr(EmaTestRun) run2 =
      ema_test_cli("run", late, "--set", "duration=1us", "-o", out, "--no-plot", NULL);
  g_assert_cmpint(run->status, ==, 0);
  ema_test_assert_contains(run->err, "ema-sim: warning: tenant quiet: no request arrived (its "
                                     "trace holds none, or none before the run's end)");
  g_assert_cmpint(run2->status, ==, 0);
  ema_test_assert_contains(run2->err, "ema-sim: warning: tenant late: no request arrived");
  ema_test_remove_tree(dir);
}

/* A trace's rows that ask for 0 output tokens run with 1 (vLLM's max_tokens is at least 1),
 * and the run says how many did. */
static void test_run_zero_output(void) {
  g_autofree char *dir = ema_test_temp_dir();
  g_autofree char *zero = ema_test_fixture("traces", "azure-zero-output.csv");
  g_autofree char *trace = g_strdup_printf("{format: azure, file: '%s'}", zero);
  g_autoptr(EmaTestRun) run = run_serving(dir, "zero", trace);
  g_assert_cmpint(run->status, ==, 0);
  ema_test_assert_contains(run->err, "ema-sim: warning: tenant zero: 2 requests of its trace ask "
                                     "for 0 output tokens: each ran with 1, as vLLM generates at "
                                     "least one");
  ema_test_remove_tree(dir);
}

/* A BurstGPT trace's failed rows (0 response tokens) left out are counted aloud, with the key
 * that keeps them (they vanished without a word; a trace of failed rows alone warned that it
 * held no request); with keep_failed no such line. */
static void test_run_failed_rows_skipped(void) {
  g_autofree char *dir = ema_test_temp_dir();
  g_autofree char *keep = ema_test_temp_dir();
  g_autofree char *file = ema_test_fixture("traces", "burstgpt-good.csv");
  g_autofree char *trace = g_strdup_printf("{file: '%s', rate_scale: 100}", file);
  g_autofree char *keeping =
      g_strdup_printf("{file: '%s', rate_scale: 100, keep_failed: true}", file);
  g_autoptr(EmaTestRun) run = run_serving(dir, "bursty", trace);
  g_autoptr(EmaTestRun) run2 = run_serving(keep, "bursty", keeping);
  g_assert_cmpint(run->status, ==, 0);
  ema_test_assert_contains(run->err, "ema-sim: warning: tenant bursty: 1 failed request of its "
                                     "trace (0 response tokens) left out (trace.keep_failed: "
                                     "true replays them)\n");
  g_assert_cmpint(run2->status, ==, 0);
  g_assert_null(strstr(run2->err, "left out"));
  ema_test_remove_tree(dir);
  ema_test_remove_tree(keep);
}

/* KV blocks given directly (engine.num_gpu_blocks) beyond what the GPU holds with the weights:
 * vLLM would not start; the run goes on as given (an oracle of twice the KV asks for it) and
 * says so. 2^30 blocks of 16 tokens x 128 KiB (Llama-3.1-8B) are 2 PiB. */
static void test_run_kv_over_hbm(void) {
  g_autofree char *dir = ema_test_temp_dir();
  g_autofree char *out = g_build_filename(dir, "out", NULL);
  g_autofree char *text = serving_yaml("big", short_trace);
  g_autofree char *path = write_temp(dir, "exp.yaml", text);
  g_autoptr(EmaTestRun) run =
      ema_test_cli("run", path, "--set", "tenants.0.engine.num_gpu_blocks=1073741824", "-o", out,
                   "--no-plot", NULL);
  g_assert_cmpint(run->status, ==, 0);
  ema_test_assert_contains(run->err,
                           "ema-sim: warning: tenant big: engine.num_gpu_blocks "
                           "1073741824 holds 2.00 PiB of KV, 2.00 PiB with its weights and "
                           "reserves, more than a GPU's 140 GiB of HBM: vLLM would not "
                           "start; the run goes on as given");
  ema_test_remove_tree(dir);
}

/* A serving experiment of one tenant whose trace is the fixture FILE with
 * the more trace keys MORE ("" or ", k: v"), written to DIR/exp.yaml and
 * run into DIR/out. */
static EmaTestRun *run_fixture_trace(const char *dir, const char *file, const char *more) {
  g_autofree char *path = fixture("traces", file);
  g_autofree char *trace = g_strdup_printf("{file: %s%s}", path, more);
  return run_serving(dir, "a", trace);
}

/* 37#5, 37#17: a trace under format: auto is read as the format it is:
 * keep_failed keeps BurstGPT's failed requests, a lengths file takes its
 * arrival process; an option its format has no use for is an error at the
 * key. */
static void test_run_auto_format(void) {
  g_autofree char *dir = ema_test_temp_dir();
  g_autofree char *out = g_build_filename(dir, "out", NULL);
  g_autofree char *exp = g_build_filename(dir, "exp.yaml", NULL);
  {
    g_autoptr(EmaTestRun) run = run_fixture_trace(dir, "burstgpt-good.csv", ", keep_failed: true");
    g_auto(GStrv) lines = NULL;
    /* the failed request kept asks for 0 tokens: it runs with 1, and the run says so */
    g_assert_cmpint(run->status, ==, 0);
    g_assert_cmpstr(run->err, ==,
                    "ema-sim: warning: tenant a: 1 request of its trace asks for 0 output tokens: "
                    "each ran with 1, as vLLM generates at least one\n");
    lines = g_strsplit(keep_path(ema_test_read_file(out, "requests.csv")), "\n", -1);
    g_assert_cmpuint(g_strv_length(lines), ==, 6); /* the header, 4 requests, "" */
    ema_test_assert_contains(keep_path(ema_test_read_file(out, "resolved.yaml")),
                             "format: burstgpt\n");
  }
  {
    g_autoptr(EmaTestRun) run =
        run_fixture_trace(dir, "lengths-good.csv", ", arrivals: poisson, rate: 2, requests: 3");
    ema_test_assert_ok(run);
  }
  {
    g_autoptr(EmaTestRun) run = run_fixture_trace(dir, "vidur-good.csv", ", keep_failed: true");
    g_autofree char *want = g_strdup_printf("%s:4:", exp);
    ema_test_assert_error_line(run, want);
    ema_test_assert_contains(run->err, ": tenants.0.trace.keep_failed: only BurstGPT traces "
                                       "record failed requests (the file's format is vidur)\n");
  }
  {
    g_autoptr(EmaTestRun) run = run_fixture_trace(dir, "azure-good.csv", ", cycle: true");
    ema_test_assert_contains(run->err, ": tenants.0.trace.cycle: only a lengths or vllm-bench "
                                       "file (its arrivals drawn) starts again at its end (the "
                                       "file's format is azure)\n");
  }
  ema_test_remove_tree(dir);
}

/* 37#10, 37#17: an arrival past what the clock can serve is an error that
 * says so (a date 200 years on; a rate of 1e-9 with 10 requests), never a
 * CRITICAL, a silent stop or an unbounded output. */
static void test_run_arrival_limit(void) {
  g_autofree char *dir = ema_test_temp_dir();
  g_autoptr(EmaTestRun) rate = run_serving(
      dir, "a",
      "{arrivals: poisson, rate: 1e-9, requests: 10, prompt: {dist: fixed, tokens: 10}, "
      "output: {dist: fixed, tokens: 2}}");
  g_assert_cmpint(rate->status, ==, 1);
  ema_test_assert_contains(rate->err, "past the last time the simulator can serve it "
                                      "(4.61169e+09 s, about 146 years)");
  g_assert_null(strstr(rate->err, "CRITICAL"));
  ema_test_remove_tree(dir);
}

/* 37#12: timeline.csv and steps.csv quote the tenant's name too (one with quotes: a comma is
 * refused in a tenant's name, as plot's --tenant lists names by commas). */
static void test_run_csv_quoting_all(void) {
  g_autofree char *dir = ema_test_temp_dir();
  g_autofree char *out = g_build_filename(dir, "out", NULL);
  g_autofree char *base = serving_yaml("a \"b\"", short_trace);
  g_autofree char *text = g_strconcat("steps_csv: true\n", base, NULL);
  g_autofree char *path = write_temp(dir, "exp.yaml", text);
  g_autoptr(EmaTestRun) run = ema_test_cli("run", path, "-o", out, "--no-plot", NULL);
  ema_test_assert_ok(run);
  ema_test_assert_contains(keep_path(ema_test_read_file(out, "timeline.csv")),
                           "\n0.000000000,0,\"a \"\"b\"\"\",");
  ema_test_assert_contains(keep_path(ema_test_read_file(out, "steps.csv")), ",\"a \"\"b\"\"\",");
  ema_test_remove_tree(dir);
}

static void test_run_all_rejected(void) {
  g_autofree char *dir = ema_test_temp_dir();
  g_autoptr(EmaTestRun) run =
      run_serving(dir, "huge",
                  "{arrivals: poisson, rate: 5, requests: 3, prompt: {dist: fixed, "
                  "tokens: 4000000}, output: {dist: fixed, tokens: 8}}");
  g_assert_cmpint(run->status, ==, 0);
  /* 37#17: 4M tokens are past the model's context (max_model_len) before the KV cache */
  g_assert_cmpstr(run->err, ==,
                  "ema-sim: warning: tenant huge: all 3 requests were rejected (prompt + output "
                  "longer than the engine's max_model_len)\n");
  ema_test_remove_tree(dir);
}

/* A prompt within max_model_len but beyond a small KV cache is rejected
 * for the cache. */
static void test_run_all_rejected_kv(void) {
  g_autofree char *dir = ema_test_temp_dir();
  g_autofree char *text = g_strconcat(
      "name: hardening\nserver: h200x2\ntenants:\n  - {name: huge, model: llama-3.1-8b, gpu: 0, "
      "engine: {gpu_memory_utilization: 12%}, trace: ",
      "{arrivals: poisson, rate: 5, requests: 3, prompt: {dist: fixed, tokens: 120000}, "
      "output: {dist: fixed, tokens: 8}}}\n",
      NULL);
  g_autofree char *path = write_temp(dir, "exp.yaml", text);
  g_autofree char *out = g_build_filename(dir, "out", NULL);
  g_autoptr(EmaTestRun) run = ema_test_cli("run", path, "-o", out, "--no-plot", NULL);
  g_assert_cmpint(run->status, ==, 0);
  g_assert_cmpstr(run->err, ==,
                  "ema-sim: warning: tenant huge: all 3 requests were rejected (prompt + output "
                  "larger than its KV cache)\n");
  ema_test_remove_tree(dir);
}

/* ---- sweeps ------------------------------------------------------------------------ */

static void test_sweep_jobs_zero(void) {
  g_autofree char *sweep = fixture("sweep", "copies.yaml");
  g_autoptr(EmaTestRun) run = ema_test_cli("sweep", sweep, "-j", "0", "--list", NULL);
  ema_test_assert_failed(run, 2, "ema-sim: --jobs: give a number of processes from 1 to 4096");
}

/* A summary.json of the wrong shape is not a finished point: resume runs
 * the point again. */
static void test_sweep_resume_shape(void) {
  g_autofree char *dir = ema_test_temp_dir();
  g_autofree char *sweep = fixture("sweep", "copies.yaml");
  g_autoptr(EmaTestRun) first = ema_test_cli("sweep", sweep, "-o", dir, "-j", "2", NULL);
  g_autofree char *point = g_build_filename(dir, "005-bytes=1GiB-bytes=1GiB", NULL);
  g_autofree char *csv = ema_test_read_file(dir, "sweep.csv");
  g_free(write_temp(point, "summary.json", "{\"tenants\": [1, 2]}\n"));
  g_autoptr(EmaTestRun) again = ema_test_cli("sweep", sweep, "-o", dir, "-j", "2", NULL);
  g_assert_cmpint(again->status, ==, first->status);
  g_assert_null(strstr(again->err, "CRITICAL"));
  /* 5 points found done, the one with the bad summary run again */
  ema_test_assert_contains(again->out, "(5 found done)");
  g_autofree char *summary = ema_test_read_file(point, "summary.json");
  ema_test_assert_contains(summary, "\"ops\"");
  g_autofree char *csv_again = ema_test_read_file(dir, "sweep.csv");
  g_assert_cmpstr(csv_again, ==, csv);
  ema_test_remove_tree(dir);
}

/* --list of 20,000 points holds no resolved text of every point: its peak
 * memory stays far below the ~60 MB that would take. */
static void test_sweep_list_many(void) {
  g_autofree char *dir = ema_test_temp_dir();
  g_autoptr(GString) text =
      g_string_new("name: many\nserver: h200x2\nops:\n  - name: copy\n    flows: [{kind: "
                   "copy, src: gpu0, dst: gpu1, bytes: 1GiB}]\nsweep:\n  ops.0.flows.0.bytes: [");
  struct rusage usage;
  for (guint i = 0; i < 200; i++)
    g_string_append_printf(text, "%s%uMiB", i ? ", " : "", i + 1);
  g_string_append(text, "]\n  seed: [");
  for (guint i = 0; i < 100; i++)
    g_string_append_printf(text, "%s%u", i ? ", " : "", i + 1);
  g_string_append(text, "]\n");
  g_autofree char *path = write_temp(dir, "many.yaml", text->str);
  g_autoptr(EmaTestRun) run = ema_test_cli("sweep", path, "--list", NULL);
  g_assert_cmpint(run->status, ==, 0);
  g_auto(GStrv) lines = g_strsplit(run->out, "\n", -1);
  g_assert_cmpuint(g_strv_length(lines), ==, 20001);
  g_assert_true(g_str_has_prefix(lines[19999], "19999-bytes=200MiB-seed=100  "));
  getrusage(RUSAGE_CHILDREN, &usage);
#if !defined(__SANITIZE_ADDRESS__)
  g_assert_cmpint(usage.ru_maxrss, <, 30 * 1024); /* KiB */
#endif
  ema_test_remove_tree(dir);
}

/* Process ids whose parent is PARENT (from /proc). */
static GArray *children_of(GPid parent) {
  GArray *pids = g_array_new(FALSE, FALSE, sizeof(GPid));
  g_autoptr(GDir) proc = g_dir_open("/proc", 0, NULL);
  const char *name;
  while (proc && (name = g_dir_read_name(proc)) != NULL) {
    g_autofree char *path = g_build_filename("/proc", name, "stat", NULL);
    g_autofree char *stat = NULL;
    const char *close;
    int ppid;
    if (!g_ascii_isdigit(name[0]) || !g_file_get_contents(path, &stat, NULL, NULL))
      continue;
    close = strrchr(stat, ')');
    if (close && sscanf(close + 2, "%*c %d", &ppid) == 1 && ppid == parent) {
      GPid pid = (GPid) atoi(name);
      g_array_append_val(pids, pid);
    }
  }
  return pids;
}

/* The state letter of process PID in /proc ('Z': a zombie), 0 when gone. */
static char process_state(GPid pid) {
  g_autofree char *path = g_strdup_printf("/proc/%d/stat", (int) pid);
  g_autofree char *stat = NULL;
  const char *close;
  if (!g_file_get_contents(path, &stat, NULL, NULL) || (close = strrchr(stat, ')')) == NULL)
    return 0;
  return close[2];
}

/* Start `ema-sim sweep` of four long points, two at a time, into DIR/out;
 * wait until both points run and return their pids in *KIDS. */
static GPid start_long_sweep(const char *dir, GArray **kids) {
  g_autofree char *out = g_build_filename(dir, "out", NULL);
  g_autofree char *base =
      serving_yaml("long", "{arrivals: poisson, rate: 40, duration: 3600s, prompt: {dist: fixed, "
                           "tokens: 200}, output: {dist: fixed, tokens: 64}}");
  g_autofree char *text = g_strconcat(base, "sweep:\n  seed: [1, 2, 3, 4]\n", NULL);
  g_autofree char *path = write_temp(dir, "long.yaml", text);
  g_auto(GStrv) envp = ema_test_cli_environ(NULL);
  const char *argv[] = {ema_test_sim_path(), "sweep", path, "-o", out, "-j", "2", NULL};
  GError *error = NULL;
  GPid pid;
  g_spawn_async(g_getenv("EMA_SOURCE_ROOT"), (char **) argv, envp,
                G_SPAWN_DO_NOT_REAP_CHILD | G_SPAWN_STDOUT_TO_DEV_NULL | G_SPAWN_STDERR_TO_DEV_NULL,
                NULL, NULL, &pid, &error);
  g_assert_no_error(error);
  *kids = NULL;
  for (guint i = 0; i < 600; i++) { /* up to 60 s for both points to start */
    g_clear_pointer(kids, g_array_unref);
    *kids = children_of(pid);
    if ((*kids)->len == 2)
      break;
    g_usleep(100000);
  }
  g_assert_cmpuint((*kids)->len, ==, 2);
  return pid;
}

/* SIGTERM to a sweep reaches its running points; it waits for them and
 * then dies of the signal, leaving no point process behind. */
static void test_sweep_sigterm(void) {
  g_autofree char *dir = ema_test_temp_dir();
  g_autoptr(GArray) kids = NULL;
  GPid pid = start_long_sweep(dir, &kids);
  int status;
  g_usleep(200000);
  kill(pid, SIGTERM);
  g_assert_cmpint(waitpid(pid, &status, 0), ==, pid);
  g_assert_true(WIFSIGNALED(status));
  g_assert_cmpint(WTERMSIG(status), ==, SIGTERM);
  for (guint i = 0; i < kids->len; i++) {
    GPid kid = g_array_index(kids, GPid, i);
    g_assert_cmpint(kill(kid, 0), ==, -1);
    g_assert_cmpint(errno, ==, ESRCH);
  }
  ema_test_remove_tree(dir);
}

/* 37#2: a sweep killed by SIGKILL (no handler runs) takes its running
 * points with it: no orphan goes on to write into the folders a resumed
 * sweep owns. */
static void test_sweep_kill9(void) {
  g_autofree char *dir = ema_test_temp_dir();
  g_autoptr(GArray) kids = NULL;
  GPid pid = start_long_sweep(dir, &kids);
  int status;
  kill(pid, SIGKILL);
  g_assert_cmpint(waitpid(pid, &status, 0), ==, pid);
  for (guint i = 0; i < kids->len; i++) {
    GPid kid = g_array_index(kids, GPid, i);
    char state = 'R';
    for (guint t = 0; t < 100 && (state = process_state(kid)) != 0 && state != 'Z'; t++)
      g_usleep(50000);
    g_assert_true(state == 0 || state == 'Z');
  }
  ema_test_remove_tree(dir);
}

/* 37#9: a point stuck in a plugin's loop is killed at --timeout and fails
 * (it would hold the sweep for ever); its process group goes with it. */
static void test_sweep_timeout(void) {
  g_autofree char *dir = ema_test_temp_dir();
  g_autofree char *path =
      write_sweep(dir, "exp.yaml", "policy: {borrow: looping}\n", short_trace, "[1, 2]");
  g_autofree char *out = g_build_filename(dir, "out", NULL);
  g_autofree char *plugins = plugin_dir_with(dir, "looping");
  gint64 start = g_get_monotonic_time();
  {
    g_autoptr(EmaTestRun) run = ema_test_cli("--plugin-dir", plugins, "sweep", path, "-o", out,
                                             "-j", "2", "--timeout", "1", "--no-plot", NULL);
    g_assert_cmpint(run->status, ==, 1);
    ema_test_assert_contains(run->err, "point 000-seed=1 failed (killed at the --timeout of 1 s)");
    ema_test_assert_contains(run->err, "point 001-seed=2 failed (killed at the --timeout of 1 s)");
  }
  g_assert_cmpint(g_get_monotonic_time() - start, <, 60 * G_USEC_PER_SEC);
  ema_test_assert_contains(keep_csv(out), "\n000-seed=1,,1,0,");
  ema_test_remove_tree(dir);
}

/* 37#11: a point whose process died of a signal after it wrote its
 * summary.json failed: sweep.csv says so, and the summary goes (a resume
 * runs it again). */
static void test_sweep_signal_after_summary(void) {
#if defined(__SANITIZE_ADDRESS__)
  g_test_skip("the LD_PRELOAD shim and AddressSanitizer do not mix");
#else
  g_autofree char *dir = ema_test_temp_dir();
  g_autofree char *path = write_sweep(dir, "exp.yaml", "", short_trace, "[1]");
  g_autofree char *out = g_build_filename(dir, "out", NULL);
  g_autofree char *preload = g_strconcat("LD_PRELOAD=", g_getenv("EMA_TEST_FAULT_ALLOC"), NULL);
  const char *edits[] = {preload, "EMA_FAULT_KILL_AT_EXIT=run", NULL};
  g_autofree char *summary = g_build_filename(out, "000-seed=1", "summary.json", NULL);
  {
    g_autoptr(EmaTestRun) run =
        ema_test_cli_env(edits, "sweep", path, "-o", out, "-j", "1", "--no-plot", NULL);
    g_assert_cmpint(run->status, ==, 1);
    ema_test_assert_contains(run->err, "point 000-seed=1 failed (killed by signal 9)");
  }
  ema_test_assert_contains(keep_csv(out), ",failed");
  g_assert_false(g_file_test(summary, G_FILE_TEST_EXISTS));
  {
    g_autoptr(EmaTestRun) run =
        ema_test_cli("sweep", path, "-o", out, "-j", "1", "--no-plot", NULL);
    ema_test_assert_ok(run);
    ema_test_assert_contains(run->out, "1 points: 1 ok, 0 failed\n");
  }
  ema_test_remove_tree(dir);
#endif
}

/* 37#6: a point made from a trace that changed since is not "found done":
 * the resume runs it again, and says why. */
static void test_sweep_stale_input(void) {
  g_autofree char *dir = ema_test_temp_dir();
  g_autofree char *trace = write_temp(dir, "t.csv",
                                      "TIMESTAMP,ContextTokens,GeneratedTokens\n"
                                      "2023-11-16 18:15:46.6805900,100,10\n");
  g_autofree char *path =
      write_sweep(dir, "exp.yaml", "", "{file: t.csv, format: azure}", "[1, 2]");
  g_autofree char *out = g_build_filename(dir, "out", NULL);
  {
    g_autoptr(EmaTestRun) run =
        ema_test_cli("sweep", path, "-o", out, "-j", "1", "--no-plot", NULL);
    ema_test_assert_ok(run);
  }
  g_free(write_temp(dir, "t.csv",
                    "TIMESTAMP,ContextTokens,GeneratedTokens\n"
                    "2023-11-16 18:15:46.6805900,100,10\n2023-11-16 18:15:47.0,100,10\n"));
  {
    g_autoptr(EmaTestRun) run =
        ema_test_cli("sweep", path, "-o", out, "-j", "1", "--no-plot", NULL);
    g_assert_cmpint(run->status, ==, 0);
    ema_test_assert_contains(run->out, "2 points: 2 ok, 0 failed\n");
    ema_test_assert_contains(run->err, "2 finished points were made from files that changed since");
    ema_test_assert_contains(run->err, trace);
    g_assert_null(strstr(run->out, "found done"));
  }
  ema_test_assert_contains(keep_csv(out), ",2,"); /* both requests of the new trace */
  ema_test_remove_tree(dir);
}

/* 37#15: a FIFO where a point's run.out goes fails the point at once (the
 * open never waits for a reader). */
static void test_sweep_fifo_log(void) {
  g_autofree char *dir = ema_test_temp_dir();
  g_autofree char *path = write_sweep(dir, "exp.yaml", "", short_trace, "[1]");
  g_autofree char *out = g_build_filename(dir, "out", NULL);
  g_autofree char *point = g_build_filename(out, "000-seed=1", NULL);
  g_autofree char *fifo = g_build_filename(point, "run.out", NULL);
  g_assert_cmpint(g_mkdir_with_parents(point, 0755), ==, 0);
  g_free(write_temp(out, ".ema-output", "# ema-sim output folder\n"));
  g_free(write_temp(point, ".ema-output", "# ema-sim output folder\n"));
  g_assert_cmpint(mkfifo(fifo, 0644), ==, 0);
  {
    g_autoptr(EmaTestRun) run =
        ema_test_cli("sweep", path, "-o", out, "-j", "1", "--no-plot", NULL);
    g_assert_cmpint(run->status, ==, 1);
    ema_test_assert_contains(run->err, "run.out: not a regular file\n");
  }
  ema_test_remove_tree(dir);
}

/* ---- output folders ------------------------------------------------------------ */

/* 37#3: a folder another ema-sim process writes into is refused (run,
 * sweep and compare alike); once it is free, it is taken. */
static void test_output_locked(void) {
  g_autofree char *dir = ema_test_temp_dir();
  g_autofree char *out = g_build_filename(dir, "out", NULL);
  g_autofree char *sweep = write_sweep(dir, "s.yaml", "", short_trace, "[1]");
  g_autofree char *want =
      g_strdup_printf("ema-sim: output directory %s is in use by another process of ema-sim or "
                      "ema-validate (writing there now)",
                      out);
  int fd;
  {
    g_autoptr(EmaTestRun) run = run_serving(dir, "a", short_trace);
    ema_test_assert_ok(run);
  }
  fd = open(out, O_RDONLY | O_DIRECTORY);
  g_assert_cmpint(flock(fd, LOCK_EX | LOCK_NB), ==, 0); /* as a running ema-sim holds it */
  {
    g_autoptr(EmaTestRun) run = run_serving(dir, "a", short_trace);
    ema_test_assert_error_line(run, want);
  }
  {
    g_autoptr(EmaTestRun) run = ema_test_cli("sweep", sweep, "-o", out, "--no-plot", NULL);
    g_assert_cmpint(run->status, ==, 1);
    ema_test_assert_contains(run->err, want);
  }
  g_assert_true(
      g_file_test(keep_path(g_build_filename(out, "summary.json", NULL)), G_FILE_TEST_EXISTS));
  close(fd);
  {
    g_autoptr(EmaTestRun) run = run_serving(dir, "a", short_trace);
    ema_test_assert_ok(run);
  }
  ema_test_remove_tree(dir);
}

/* 37#15: a FIFO named .ema-output is an error, not a wait. */
static void test_output_fifo_marker(void) {
  g_autofree char *dir = ema_test_temp_dir();
  g_autofree char *out = g_build_filename(dir, "out", NULL);
  g_autofree char *marker = g_build_filename(out, ".ema-output", NULL);
  g_assert_cmpint(g_mkdir(out, 0755), ==, 0);
  g_assert_cmpint(mkfifo(marker, 0644), ==, 0);
  {
    g_autoptr(EmaTestRun) run = run_serving(dir, "a", short_trace);
    g_autofree char *want = g_strdup_printf("%s: not a regular file (a FIFO)", marker);
    ema_test_assert_error_line(run, want);
  }
  ema_test_remove_tree(dir);
}

/* 37#14: a sweep refuses a folder with a user's sweep.csv in it, as run
 * does; it resumes in its own. */
static void test_output_sweep_foreign(void) {
  g_autofree char *dir = ema_test_temp_dir();
  g_autofree char *out = g_build_filename(dir, "out", NULL);
  g_autofree char *path = write_sweep(dir, "s.yaml", "", short_trace, "[1]");
  g_assert_cmpint(g_mkdir(out, 0755), ==, 0);
  g_free(write_temp(out, "sweep.csv", "mine\n"));
  {
    g_autoptr(EmaTestRun) run = ema_test_cli("sweep", path, "-o", out, "--no-plot", NULL);
    g_assert_cmpint(run->status, ==, 1);
    ema_test_assert_contains(run->err, "sweep.csv exists and is not ema-sim's (no ");
  }
  g_assert_cmpstr(keep_csv(out), ==, "mine\n");
  ema_test_remove_tree(dir);
}

/* ---- fault injection ----------------------------------------------------------- */

/* The point directories of a sweep in DIR that hold a summary.json. */
static guint count_summaries(const char *dir) {
  g_autoptr(GPtrArray) names = ema_test_list_dir(dir, "");
  guint n = 0;
  for (guint i = 0; i < names->len; i++) {
    g_autofree char *summary = g_build_filename(dir, names->pdata[i], "summary.json", NULL);
    n += g_file_test(summary, G_FILE_TEST_IS_REGULAR);
  }
  return n;
}

/* A run whose writes fail (a file may not grow past 8 KiB: EFBIG, as when
 * the disk is full) fails, and leaves no summary.json. */
static void test_fault_write_run(void) {
  g_autofree char *dir = ema_test_temp_dir();
  g_autofree char *text = serving_yaml("a", fault_trace);
  g_autofree char *path = write_temp(dir, "exp.yaml", text);
  g_autofree char *out = g_build_filename(dir, "out", NULL);
  g_autofree char *summary = g_build_filename(out, "summary.json", NULL);
  const char *args[] = {"run", path, "-o", out, "--no-plot", NULL};
  Limits limits = {8192};
  int status = run_limited(args, &limits);
  g_assert_true(WIFEXITED(status));
  g_assert_cmpint(WEXITSTATUS(status), ==, 1);
  g_assert_false(g_file_test(summary, G_FILE_TEST_EXISTS));
  ema_test_remove_tree(dir);
}

/* A sweep whose points fail (LIMITS, or the faults EDITS set up) and the
 * same sweep run again without faults: it resumes to the sweep.csv of a
 * clean sweep. FALSE (nothing checked) when the faults hit no point. */
static gboolean sweep_fault_then_resume(const Limits *limits, const char *const *edits) {
  g_autofree char *dir = ema_test_temp_dir();
  g_autofree char *out = g_build_filename(dir, "out", NULL);
  g_autofree char *clean = g_build_filename(dir, "clean", NULL);
  g_autofree char *base = serving_yaml("a", fault_trace);
  g_autofree char *text = g_strconcat(base, "sweep:\n  seed: [1, 2, 3]\n", NULL);
  g_autofree char *path = write_temp(dir, "sweep.yaml", text);
  const char *args[] = {"sweep", path, "-o", out, "-j", "2", NULL};
  const char *clean_args[] = {"sweep", path, "-o", clean, "-j", "2", NULL};
  const Limits none = {0};
  int status = run_faulty(args, limits ? limits : &none, edits, NULL);
  if (WIFEXITED(status) && WEXITSTATUS(status) == 0) {
    ema_test_remove_tree(dir);
    return FALSE;
  }
  g_assert_cmpuint(count_summaries(out), <, 3);
  g_assert_cmpint(run_limited(args, &none), ==, 0);
  g_assert_cmpuint(count_summaries(out), ==, 3);
  g_assert_cmpint(run_limited(clean_args, &none), ==, 0);
  g_autofree char *resumed_csv = ema_test_read_file(out, "sweep.csv");
  g_autofree char *clean_csv = ema_test_read_file(clean, "sweep.csv");
  g_assert_cmpstr(resumed_csv, ==, clean_csv);
  ema_test_remove_tree(dir);
  return TRUE;
}

static void test_fault_write_sweep(void) {
  Limits limits = {8192};
  g_assert_true(sweep_fault_then_resume(&limits, NULL));
}

#if !defined(__SANITIZE_ADDRESS__)
/* The run of the fault tests without faults: its summary.json without
 * wall_s. */
static char *clean_summary(const char *dir, const char *path) {
  g_autofree char *out = g_build_filename(dir, "clean-run", NULL);
  const char *args[] = {"run", path, "-o", out, "--no-plot", NULL};
  const Limits none = {0};
  g_assert_cmpint(run_limited(args, &none), ==, 0);
  g_autofree char *text = ema_test_read_file(out, "summary.json");
  return ema_test_summary_without_wall(text);
}

/* Allocation failure (the faultalloc shim fails the Nth allocation; GLib
 * aborts) anywhere in a run, for N over the whole run: a summary.json
 * left is always the same as without faults, and a run that leaves none
 * failed, never with a parse error that blames the input;
 * and at least one N hits the run after resolved.yaml is written (mid-run).
 * Returns the N that failed the run (a GArray of long). Not under ASan (the shim would come before
 * its runtime). */
static GArray *check_alloc_runs(const char *dir, const char *path) {
  g_autofree char *clean = clean_summary(dir, path);
  g_autofree char *out = g_build_filename(dir, "out", NULL);
  g_autofree char *summary = g_build_filename(out, "summary.json", NULL);
  g_autofree char *resolved = g_build_filename(out, "resolved.yaml", NULL);
  g_autofree char *preload = g_strconcat("LD_PRELOAD=", g_getenv("EMA_TEST_FAULT_ALLOC"), NULL);
  const char *args[] = {"run", path, "-o", out, "--no-plot", NULL};
  const Limits none = {0};
  GArray *failing = g_array_new(FALSE, FALSE, sizeof(long));
  gboolean hit_mid_run = FALSE;
  g_autofree char *count_path = g_build_filename(dir, "allocations", NULL);
  g_autofree char *count_edit = g_strconcat("EMA_FAULT_ALLOC_COUNT=", count_path, NULL);
  const char *count_edits[] = {preload, count_edit, NULL};
  g_autofree char *count_text = NULL;
  long total;
  /* how many allocations a whole run makes; then N over all of it (40 steps) and each of the
   * last 300 (writing the results: after resolved.yaml, before summary.json) */
  g_assert_cmpint(run_faulty(args, &none, count_edits, NULL), ==, 0);
  g_assert_true(g_file_get_contents(count_path, &count_text, NULL, NULL));
  total = atol(count_text);
  g_assert_cmpint(total, >, 300);
  for (long n = 0; n < total; n += n < total - 300 ? MAX(1, total / 40) : 1) {
    g_autofree char *after = g_strdup_printf("EMA_FAULT_ALLOC_AFTER=%ld", n);
    const char *edits[] = {preload, after, NULL};
    g_autofree char *err = NULL;
    int status;
    ema_test_remove_tree(out);
    status = run_faulty(args, &none, edits, &err);
    g_assert_null(strstr(err, "malformed YAML"));
    g_assert_null(strstr(err, "unexpected YAML structure"));
    /* a summary.json, whenever there is one (the process may die after writing it), is the
     * whole result */
    if (g_file_test(summary, G_FILE_TEST_EXISTS)) {
      g_autofree char *text = ema_test_read_file(out, "summary.json");
      g_autofree char *without = ema_test_summary_without_wall(text);
      g_assert_cmpstr(without, ==, clean);
      continue;
    }
    g_assert_false(WIFEXITED(status) && WEXITSTATUS(status) == 0);
    if (g_file_test(resolved, G_FILE_TEST_EXISTS))
      hit_mid_run = TRUE;
    g_array_append_val(failing, n);
  }
  g_assert_true(hit_mid_run);
  ema_test_remove_tree(out);
  return failing;
}

#endif

static void test_fault_alloc_run(void) {
#if defined(__SANITIZE_ADDRESS__)
  g_test_skip("the allocation shim and AddressSanitizer do not mix");
#else
  g_autofree char *dir = ema_test_temp_dir();
  g_autofree char *text = serving_yaml("a", fault_trace);
  g_autofree char *path = write_temp(dir, "exp.yaml", text);
  g_array_unref(check_alloc_runs(dir, path));
  ema_test_remove_tree(dir);
#endif
}

/* A sweep whose point processes hit an allocation failure fails;
 * the same sweep without faults resumes to the sweep.csv of a clean one. */
static void test_fault_alloc_sweep(void) {
#if defined(__SANITIZE_ADDRESS__)
  g_test_skip("the allocation shim and AddressSanitizer do not mix");
#else
  g_autofree char *dir = ema_test_temp_dir();
  g_autofree char *text = serving_yaml("a", fault_trace);
  g_autofree char *path = write_temp(dir, "exp.yaml", text);
  g_autoptr(GArray) failing = check_alloc_runs(dir, path);
  g_autofree char *preload = g_strconcat("LD_PRELOAD=", g_getenv("EMA_TEST_FAULT_ALLOC"), NULL);
  gboolean hit = FALSE;
  /* the points run their resolved.yaml, whose allocations differ from the
   * direct run's: the first N that failed the run and also fails them */
  for (guint i = 0; i < failing->len && !hit; i++) {
    g_autofree char *after =
        g_strdup_printf("EMA_FAULT_ALLOC_AFTER=%ld", g_array_index(failing, long, i));
    const char *edits[] = {preload, after, "EMA_FAULT_ALLOC_COMMAND=run", NULL};
    hit = sweep_fault_then_resume(NULL, edits);
  }
  g_assert_true(hit);
  ema_test_remove_tree(dir);
#endif
}

int main(int argc, char **argv) {
  g_test_init(&argc, &argv, NULL);
  g_test_add_func("/hardening/yaml/deep-file", test_yaml_deep_file);
  g_test_add_func("/hardening/yaml/deep-set", test_yaml_deep_set);
  g_test_add_func("/hardening/yaml/deep-includes", test_yaml_deep_includes);
  g_test_add_func("/hardening/yaml/deep-hwmodel", test_yaml_deep_hwmodel);
  g_test_add_func("/hardening/yaml/many-keys", test_yaml_many_keys);
  g_test_add_func("/hardening/yaml/tags-and-nul", test_yaml_tags_and_nul);
  g_test_add_func("/hardening/yaml/special-include", test_yaml_special_include);
  g_test_add_func("/hardening/params/null", test_params_null);
  g_test_add_func("/hardening/params/resolved-checks", test_params_resolved_checks);
  g_test_add_func("/hardening/params/range-messages", test_params_range_messages);
  g_test_add_func("/hardening/params/size-range-message", test_params_size_range_message);
  g_test_add_func("/hardening/traces/decimal-overflow", test_traces_decimal_overflow);
  g_test_add_func("/hardening/traces/mooncake-deep", test_traces_mooncake_deep);
  g_test_add_func("/hardening/traces/mooncake-bigint", test_traces_mooncake_bigint);
  g_test_add_func("/hardening/traces/special-files", test_traces_special_files);
  g_test_add_func("/hardening/file/kinds", test_file_kinds);
  g_test_add_func("/hardening/plugin/field-overflow", test_plugin_field_overflow);
  g_test_add_func("/hardening/plugin/bad-tables", test_plugin_bad_tables);
  g_test_add_func("/hardening/plugin/undefined-symbol", test_plugin_undefined_symbol);
  g_test_add_func("/hardening/plugin/small-symbol", test_plugin_small_symbol);
  g_test_add_func("/hardening/plugin/silent-init", test_plugin_silent_init);
  g_test_add_func("/hardening/plugin/contract", test_plugin_contract);
  g_test_add_func("/hardening/plugin/failed-run-no-results", test_plugin_failed_run_no_results);
  g_test_add_func("/hardening/plugin/crash", test_plugin_crash);
  g_test_add_func("/hardening/plugin/hang", test_plugin_hang);
  g_test_add_func("/hardening/plugin/guard-unchanged", test_plugin_guard_unchanged);
  g_test_add_func("/hardening/run/csv-quoting", test_run_csv_quoting);
  g_test_add_func("/hardening/run/csv-quoting-all", test_run_csv_quoting_all);
  g_test_add_func("/hardening/run/idle-stretch", test_run_idle_stretch);
  g_test_add_func("/hardening/run/arrival-limit", test_run_arrival_limit);
  g_test_add_func("/hardening/run/timeline-cap", test_run_timeline_cap);
  g_test_add_func("/hardening/run/auto-format", test_run_auto_format);
  g_test_add_func("/hardening/run/all-rejected", test_run_all_rejected);
  g_test_add_func("/hardening/run/all-rejected-kv", test_run_all_rejected_kv);
  g_test_add_func("/hardening/sweep/jobs-zero", test_sweep_jobs_zero);
  g_test_add_func("/hardening/sweep/resume-shape", test_sweep_resume_shape);
  g_test_add_func("/hardening/sweep/list-many", test_sweep_list_many);
  g_test_add_func("/hardening/sweep/sigterm", test_sweep_sigterm);
  g_test_add_func("/hardening/sweep/kill9", test_sweep_kill9);
  g_test_add_func("/hardening/sweep/timeout", test_sweep_timeout);
  g_test_add_func("/hardening/sweep/signal-after-summary", test_sweep_signal_after_summary);
  g_test_add_func("/hardening/sweep/stale-input", test_sweep_stale_input);
  g_test_add_func("/hardening/sweep/fifo-log", test_sweep_fifo_log);
  g_test_add_func("/hardening/output/locked", test_output_locked);
  g_test_add_func("/hardening/output/fifo-marker", test_output_fifo_marker);
  g_test_add_func("/hardening/output/sweep-foreign", test_output_sweep_foreign);
  g_test_add_func("/hardening/run/no-arrivals", test_run_no_arrivals);
  g_test_add_func("/hardening/run/zero-output", test_run_zero_output);
  g_test_add_func("/hardening/run/failed-rows-skipped", test_run_failed_rows_skipped);
  g_test_add_func("/hardening/run/kv-over-hbm", test_run_kv_over_hbm);
  g_test_add_func("/hardening/fault/write-run", test_fault_write_run);
  g_test_add_func("/hardening/fault/write-sweep", test_fault_write_sweep);
  g_test_add_func("/hardening/fault/alloc-run", test_fault_alloc_run);
  g_test_add_func("/hardening/fault/alloc-sweep", test_fault_alloc_sweep);
  {
    int status = g_test_run();
    g_clear_pointer(&kept, g_ptr_array_unref);
    return status;
  }
}
