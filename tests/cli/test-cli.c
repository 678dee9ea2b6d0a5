/* test-cli.c: the ema-sim command line, run as a real program (its path in
 * EMA_SIM, working directory EMA_SOURCE_ROOT): help, version and usage
 * errors with their exit codes; `run` on the h200x2 baseline (resolved.yaml,
 * summary.json, determinism, --seed, --set); `check` (and its warning for a
 * tensor-parallel tenant asked to share), `list hwmodels` and
 * `describe hwmodel`; and bad input from tests/fixtures/experiments/, where
 * every error must be exactly one line on stderr that starts with
 * path:line:col: and exits 1. */
#include <math.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include <glib/gstdio.h>
#include <json-glib/json-glib.h>

#include "testutil.h"

#define BASELINE "experiments/calibration/h200x2-baseline.yaml"
#define FIXTURES "tests/fixtures/experiments/"

/* A failed run: exit 1, stderr one line that starts with PREFIX and
 * contains each of the NULL-terminated parts that follow. */
static void assert_error_line(const EmaTestRun *run, const char *prefix, ...) {
  va_list args;
  ema_test_assert_failed(run, 1, prefix);
  va_start(args, prefix);
  for (const char *part = va_arg(args, const char *); part; part = va_arg(args, const char *))
    ema_test_assert_contains(run->err, part);
  va_end(args);
}

/* summary.json without sim.wall_s, as canonical text. */
static char *summary_without_wall(const char *text) {
  g_autoptr(JsonNode) root = ema_test_parse_json(text);
  g_autoptr(JsonGenerator) generator = json_generator_new();
  JsonObject *sim = json_object_get_object_member(json_node_get_object(root), "sim");
  g_assert_nonnull(sim);
  g_assert_true(json_object_has_member(sim, "wall_s"));
  json_object_remove_member(sim, "wall_s");
  json_object_remove_member(json_node_get_object(root), "provenance"); /* the build's */
  json_generator_set_root(generator, root);
  json_generator_set_pretty(generator, TRUE);
  return json_generator_to_data(generator, NULL);
}

/* ---- help, version, usage ----------------------------------------------- */

static void test_help(void) {
  const char *const forms[] = {"--help", "-h", "help"};
  for (guint i = 0; i < G_N_ELEMENTS(forms); i++) {
    g_autoptr(EmaTestRun) run = ema_test_cli(forms[i], NULL);
    g_assert_cmpint(run->status, ==, 0);
    g_assert_cmpstr(run->err, ==, "");
    g_assert_true(g_str_has_prefix(run->out, "Usage: ema-sim COMMAND"));
    ema_test_assert_contains(run->out, "\n  run FILE");
    ema_test_assert_contains(run->out, "\n  check FILE");
    ema_test_assert_contains(run->out, "\n  list hwmodels");
    ema_test_assert_contains(run->out, "\n  describe hwmodel NAME");
    ema_test_assert_contains(run->out, "--set");
    /* every variable that moves a search path is documented */
    {
      const char *const vars[] = {"EMA_HWMODEL_PATH", "EMA_LLM_PATH",   "EMA_ENGINE_PATH",
                                  "EMA_PROFILE_PATH", "EMA_SHARED_DIR", "EMA_PLOT_PATH",
                                  "EMA_PLUGIN_PATH",  "EMA_GNUPLOT"};
      for (guint v = 0; v < G_N_ELEMENTS(vars); v++)
        ema_test_assert_contains(run->out, vars[v]);
    }
  }
  {
    g_autoptr(EmaTestRun) run = ema_test_cli("run", "--help", NULL);
    g_assert_cmpint(run->status, ==, 0);
    ema_test_assert_contains(run->out, "--seed");
    ema_test_assert_contains(run->out, "--output");
  }
}

static void test_version(void) {
  g_autoptr(EmaTestRun) run = ema_test_cli("--version", NULL);
  g_autoptr(GRegex) regex = g_regex_new("^ema-sim [0-9]+\\.[0-9]+\\.[0-9]+\n$", 0, 0, NULL);
  g_assert_cmpint(run->status, ==, 0);
  g_assert_cmpstr(run->err, ==, "");
  if (!g_regex_match(regex, run->out, 0, NULL))
    g_error("bad --version output '%s'", ema_test_escaped(run->out));
}

static void usage_error(EmaTestRun *run, const char *contains) {
  g_assert_cmpint(run->status, ==, 2);
  g_assert_cmpstr(run->out, ==, "");
  g_assert_true(g_str_has_prefix(run->err, "ema-sim: "));
  ema_test_assert_contains(run->err, contains);
  ema_test_assert_contains(run->err, "ema-sim --help");
  ema_test_run_free(run);
}

/* An unknown command names every command the help lists (the command table's). */
static void test_unknown_command(void) {
  g_autoptr(EmaTestRun) help = ema_test_cli("--help", NULL);
  g_autoptr(EmaTestRun) run = ema_test_cli("frobnicate", NULL);
  g_autoptr(GRegex) command = g_regex_new("^  ([a-z][a-z-]*) ", G_REGEX_MULTILINE, 0, NULL);
  g_autoptr(GMatchInfo) match = NULL;
  const char *list = strstr(run->err, " (commands: ");
  const char *section = strstr(help->out, "\nCommands:\n");
  g_autofree char *commands = g_strndup(section, strstr(section, "\nOptions:\n") - section);
  guint n = 0;
  ema_test_assert_failed(run, 2, "ema-sim: unknown command 'frobnicate' (commands: run, check, ");
  g_assert_nonnull(list);
  for (g_regex_match(command, commands, 0, &match); g_match_info_matches(match);
       g_match_info_next(match, NULL), n++) {
    g_autofree char *name = g_match_info_fetch(match, 1);
    g_autofree char *listed = g_strconcat(" ", name, ",", NULL);
    g_autofree char *last = g_strconcat(" ", name, ")", NULL);
    if (!strstr(list, listed) && !strstr(list, last))
      g_error("'%s' of --help is not in '%s'", name, ema_test_escaped(run->err));
  }
  g_assert_cmpuint(n, >=, 12);
  ema_test_assert_contains(list, " describe-policy, try-policy,");
}

static void test_usage_errors(void) {
  usage_error(ema_test_cli(NULL, NULL), "missing COMMAND"); /* no arguments at all */
  usage_error(ema_test_cli("run", NULL), "missing experiment FILE");
  usage_error(ema_test_cli("check", BASELINE, "extra", NULL), "too many arguments");
  usage_error(ema_test_cli("run", "--bogus", BASELINE, NULL), "--bogus");
  usage_error(ema_test_cli("run", BASELINE, "--seed", "x", NULL), "x");
  usage_error(ema_test_cli("list", NULL), "ema-sim list hwmodels");
  usage_error(ema_test_cli("list", "models", NULL), "ema-sim list hwmodels");
  usage_error(ema_test_cli("describe", "hwmodel", NULL), "ema-sim describe hwmodel NAME");
  usage_error(ema_test_cli("describe", "gpu", "h200", NULL),
              "ema-sim describe hwmodel|llm|engine NAME");
  /* a token budget below the request limit, which vLLM refuses, at the key that set it */
  {
    g_autoptr(EmaTestRun) run = ema_test_cli("check", "experiments/default.yaml", "--set",
                                             "tenants.0.engine.max_num_batched_tokens=8", NULL);
    g_assert_cmpint(run->status, ==, 1);
    ema_test_assert_contains(run->err, "--set:1:41: tenants.0.engine.max_num_batched_tokens: "
                                       "max_num_batched_tokens 8 is below max_num_seqs ");
  }
  /* a frontier over a server that is not one fails before printing any table */
  {
    g_autoptr(EmaTestRun) run =
        ema_test_cli("frontier", "h200x2", "nosuchserver", "--no-plot", NULL);
    g_assert_cmpint(run->status, ==, 1);
    g_assert_cmpstr(run->out, ==, "");
    ema_test_assert_contains(run->err, "unknown hardware model 'nosuchserver'");
  }
  /* a server named twice (its rows were written twice) */
  usage_error(ema_test_cli("frontier", "h200x2", "h200x8-hgx", "h200x2", "--no-plot", NULL),
              "server h200x2 is named twice: name it once");
  /* a model that does not fit one GPU of a server: said in its place, the others computed; where
   * it fits none, an error and nothing written */
  {
    g_autofree char *dir = ema_test_temp_dir();
    g_autofree char *out = g_build_filename(dir, "fr", NULL);
    g_autofree char *csv = g_build_filename(out, "frontier.csv", NULL);
    g_autofree char *alone = g_build_filename(dir, "alone", NULL);
    g_autoptr(EmaTestRun) mixed = ema_test_cli("frontier", "--model", "llama-3.1-70b", "-o", out,
                                               "--no-plot", "h200x2", "b200x8-hgx", NULL);
    g_autoptr(EmaTestRun) none = NULL;
    g_assert_cmpint(mixed->status, ==, 0);
    ema_test_assert_contains(mixed->out, "\n  not computed: llama-3.1-70b does not fit one GPU "
                                         "of h200x2: 131 GiB of weights against 126 GiB of HBM "
                                         "at 90% (the frontier is of one GPU, TP 1)\n");
    ema_test_assert_contains(mixed->out, "\nb200x8-hgx (");
    g_assert_true(g_file_test(csv, G_FILE_TEST_EXISTS));
    none = ema_test_cli("frontier", "--model", "llama-3.1-70b", "-o", alone, "--no-plot", "h200x2",
                        NULL);
    ema_test_assert_failed(none, 1, "ema-sim: llama-3.1-70b does not fit one GPU of h200x2");
    g_assert_false(g_file_test(alone, G_FILE_TEST_EXISTS));
    ema_test_remove_tree(dir);
  }
}

/* ---- run ---------------------------------------------------------------- */

static void check_summary(const char *text, gint64 seed) {
  g_autoptr(JsonNode) root = ema_test_parse_json(text);
  JsonObject *top, *sim;
  JsonArray *ops;
  g_assert_true(JSON_NODE_HOLDS_OBJECT(root));
  top = json_node_get_object(root);
  g_assert_cmpstr(json_object_get_string_member(top, "experiment"), ==, "h200x2-baseline");
  g_assert_cmpstr(json_object_get_string_member(top, "server"), ==, "h200x2");
  g_assert_nonnull(json_object_get_string_member(top, "version"));
  g_assert_cmpint(json_object_get_int_member(top, "seed"), ==, seed);
  g_assert_cmpint(json_object_get_int_member(top, "expectations_missed"), ==, 0);
  ops = json_object_get_array_member(top, "ops");
  g_assert_nonnull(ops);
  g_assert_cmpuint(json_array_get_length(ops), ==, 13);
  for (guint i = 0; i < json_array_get_length(ops); i++) {
    JsonObject *op = json_array_get_object_element(ops, i);
    const char *const members[] = {
        "name", "seconds", "bandwidth_gbps", "expected", "error_pct", "tolerance_pct", "pass"};
    for (guint m = 0; m < G_N_ELEMENTS(members); m++)
      if (!json_object_has_member(op, members[m]))
        g_error("op %u has no %s", i, members[m]);
    g_assert_cmpuint(strlen(json_object_get_string_member(op, "name")), >, 0);
    g_assert_cmpfloat(json_object_get_double_member(op, "seconds"), >, 0);
    g_assert_cmpfloat(json_object_get_double_member(op, "bandwidth_gbps"), >, 0);
    g_assert_cmpfloat(json_object_get_double_member(op, "expected"), >, 0);
    g_assert_cmpfloat(fabs(json_object_get_double_member(op, "error_pct")), <=, 5);
    g_assert_true(json_object_get_boolean_member(op, "pass"));
  }
  g_assert_cmpstr(json_object_get_string_member(json_array_get_object_element(ops, 9), "name"), ==,
                  "peer-copy-4KiB");
  g_assert_cmpfloat(json_object_get_double_member(json_array_get_object_element(ops, 9), "seconds"),
                    ==, 6419e-9);
  sim = json_object_get_object_member(top, "sim");
  g_assert_nonnull(sim);
  g_assert_cmpint(json_object_get_int_member(sim, "events"), >, 0);
  g_assert_cmpfloat(json_object_get_double_member(sim, "simulated_s"), >, 0);
  g_assert_cmpfloat(json_object_get_double_member(sim, "wall_s"), >=, 0);
}

static void test_run_baseline(void) {
  g_autofree char *dir = ema_test_temp_dir();
  g_autofree char *out1 = g_build_filename(dir, "first", NULL);
  g_autofree char *out2 = g_build_filename(dir, "second", "nested", NULL);
  g_autofree char *resolved_path = g_build_filename(out1, "resolved.yaml", NULL);
  g_autofree char *resolved1 = NULL, *resolved2 = NULL, *summary1 = NULL, *summary2 = NULL;
  g_autofree char *canon1 = NULL, *canon2 = NULL;
  g_autofree char *results_line = g_strdup_printf("results in %s/\n", out1);

  {
    g_autoptr(EmaTestRun) run = ema_test_cli("run", BASELINE, "-o", out1, NULL);
    g_assert_cmpint(run->status, ==, 0);
    g_assert_cmpstr(run->err, ==, "");
    g_assert_true(g_str_has_prefix(run->out, "h200x2-baseline on h200x2 (2 GPUs)\n"));
    ema_test_assert_contains(run->out, "\npeer-copy-4KiB ");
    ema_test_assert_contains(run->out, results_line);
    g_assert_null(strstr(run->out, "MISSED"));
  }
  resolved1 = ema_test_read_file(out1, "resolved.yaml");
  summary1 = ema_test_read_file(out1, "summary.json");
  g_assert_true(g_str_has_prefix(resolved1, "# Resolved by ema-sim "));
  ema_test_assert_contains(resolved1, "\nseed: 1\n");
  check_summary(summary1, 1);

  /* the resolved file runs again to the same results (directories are
   * created as needed) */
  {
    g_autoptr(EmaTestRun) run = ema_test_cli("run", resolved_path, "--output", out2, NULL);
    g_assert_cmpint(run->status, ==, 0);
    g_assert_cmpstr(run->err, ==, "");
  }
  resolved2 = ema_test_read_file(out2, "resolved.yaml");
  summary2 = ema_test_read_file(out2, "summary.json");
  g_assert_cmpstr(resolved1, ==, resolved2);
  canon1 = summary_without_wall(summary1);
  canon2 = summary_without_wall(summary2);
  g_assert_cmpstr(canon1, ==, canon2);
  ema_test_remove_tree(dir);
}

static void test_run_seed(void) {
  g_autofree char *dir = ema_test_temp_dir();
  g_autofree char *resolved = NULL, *summary = NULL;
  g_autoptr(EmaTestRun) run = ema_test_cli("run", BASELINE, "--seed", "7", "-o", dir, NULL);
  g_assert_cmpint(run->status, ==, 0);
  resolved = ema_test_read_file(dir, "resolved.yaml");
  summary = ema_test_read_file(dir, "summary.json");
  ema_test_assert_contains(resolved, "\nseed: 7\n");
  g_assert_null(strstr(resolved, "\nseed: 1\n"));
  check_summary(summary, 7);
  ema_test_remove_tree(dir);
}

/* A --seed outside the file's range [0, 9.2e18] is refused, not silently ignored nor taken past
 * it (its resolved.yaml would not run again): negative, above it, past 64 bits. */
static void test_run_seed_negative(void) {
  static const char *const bad[] = {"-5", "9223372036854775807", "18446744073709551615"};
  g_autofree char *dir = ema_test_temp_dir();
  g_autofree char *out = g_build_filename(dir, "out", NULL);
  for (guint i = 0; i < G_N_ELEMENTS(bad); i++) {
    g_autoptr(EmaTestRun) run = ema_test_cli("run", BASELINE, "--seed", bad[i], "-o", out, NULL);
    g_autofree char *want = g_strdup_printf(
        "ema-sim: --seed: '%s' is not a whole number in [0, 9200000000000000000]", bad[i]);
    ema_test_assert_failed(run, 2, want);
    g_assert_false(g_file_test(out, G_FILE_TEST_EXISTS));
  }
  ema_test_remove_tree(dir);
}

static void test_run_set(void) {
  g_autofree char *dir = ema_test_temp_dir();
  g_autofree char *resolved = NULL;
  g_autoptr(EmaTestRun) run = ema_test_cli("run", BASELINE, "--set", "server.gpus=4", "--set",
                                           "server.link.bandwidth=400GB/s", "-o", dir, NULL);
  g_assert_cmpint(run->status, ==, 0);
  g_assert_true(g_str_has_prefix(run->out, "h200x2-baseline on h200x2 (4 GPUs)\n"));
  resolved = ema_test_read_file(dir, "resolved.yaml");
  ema_test_assert_contains(resolved, "\n  gpus: 4\n");
  ema_test_assert_contains(resolved, "\n    bandwidth: 400GB/s\n");
  ema_test_remove_tree(dir);
}

static void test_run_missed_expectation(void) {
  g_autofree char *dir = ema_test_temp_dir();
  g_autofree char *summary = NULL;
  g_autoptr(JsonNode) root = NULL;
  JsonObject *op;
  g_autoptr(EmaTestRun) run =
      ema_test_cli("run", FIXTURES "missed-expectation.yaml", "-o", dir, NULL);
  g_assert_cmpint(run->status, ==, 1);
  g_assert_cmpstr(run->err, ==, "ema-sim: 1 of 1 expectations missed\n");
  ema_test_assert_contains(run->out, "MISSED");
  /* the results are still written */
  summary = ema_test_read_file(dir, "summary.json");
  root = ema_test_parse_json(summary);
  g_assert_cmpint(json_object_get_int_member(json_node_get_object(root), "expectations_missed"), ==,
                  1);
  op = json_array_get_object_element(
      json_object_get_array_member(json_node_get_object(root), "ops"), 0);
  g_assert_false(json_object_get_boolean_member(op, "pass"));
  g_assert_cmpfloat(json_object_get_double_member(op, "expected"), ==, 1e-6);
  ema_test_remove_tree(dir);
}

/* ---- options given twice ------------------------------------------------- */

/* An option of one value given twice took its last value unsaid (run -o A -o B wrote to B): in
 * every command it is a usage error naming the option and its values, before any work (A and B,
 * folders in a temporary one, are never made); the repeatable options (--set, --plugin-dir)
 * still repeat. */
static void test_option_twice(void) {
  static const struct {
    const char *args[9];
    const char *message; /* after "ema-sim: "; A and B: the folders' paths */
  } twice[] = {
      {{"run", BASELINE, "-o", "A", "-o", "B"}, "-o is given 2 times (A, B): give it once\n"},
      {{"run", BASELINE, "--output", "A", "-o", "B"}, "-o is given 2 times (A, B)"},
      {{"run", BASELINE, "--seed", "1", "--seed", "2", "-o", "A"},
       "--seed is given 2 times (1, 2): give it once"},
      {{"run", BASELINE, "--seed=1", "--seed", "1", "--seed", "3", "-o", "A"},
       "--seed is given 3 times (1, 1, 3)"},
      {{"plot", "A", "--x", "a", "--x", "b"}, "--x is given 2 times (a, b)"},
      {{"plot", "A", "--title", "a", "--by", "c", "--title", "b"},
       "--title is given 2 times (a, b)"},
      {{"sweep", "tests/fixtures/sweep/serving-grid.yaml", "-o", "A", "-o", "B"},
       "-o is given 2 times (A, B)"},
      {{"sweep", "tests/fixtures/sweep/serving-grid.yaml", "-j", "1", "--jobs", "2", "-o", "A"},
       "-j is given 2 times (1, 2)"},
      {{"sweep", "tests/fixtures/sweep/serving-grid.yaml", "--part", "0/2", "--part", "1/2", "-o",
        "A"},
       "--part is given 2 times (0/2, 1/2)"},
      {{"sweep", "tests/fixtures/sweep/serving-grid.yaml", "--timeout", "1", "--timeout", "2", "-o",
        "A"},
       "--timeout is given 2 times (1, 2)"},
      {{"step-time", "h200x2", "llama-3.1-8b", "1", "--weights", "fp8", "--weights", "auto"},
       "--weights is given 2 times (fp8, auto)"},
      {{"step-time", "h200x2", "llama-3.1-8b", "1", "--kv-cache", "fp8", "--kv-cache", "fp8"},
       "--kv-cache is given 2 times (fp8, fp8)"},
      {{"compare-steps", "S.csv", "--server", "h200x2", "--server", "h200x8-hgx", "-o", "A"},
       "--server is given 2 times (h200x2, h200x8-hgx)"},
      {{"compare-static", "--points", "1", "--points", "2", "-o", "A"},
       "--points is given 2 times (1, 2)"},
      {{"try-policy", "reclaim", "ema", "V.yaml", "--gpu", "0", "--gpu", "1"},
       "--gpu is given 2 times (0, 1)"},
      {{"frontier", "--tolerance", "5%", "--tolerance", "6%", "-o", "A", "h200x2"},
       "--tolerance is given 2 times (5%, 6%)"},
  };
  g_autofree char *dir = ema_test_temp_dir();
  g_autofree char *a = g_build_filename(dir, "A", NULL);
  g_autofree char *b = g_build_filename(dir, "B", NULL);
  g_autofree char *folders = g_strdup_printf("(%s, %s)", a, b);
  for (guint i = 0; i < G_N_ELEMENTS(twice); i++) {
    const char *argv[G_N_ELEMENTS(twice[i].args) + 2] = {ema_test_sim_path()};
    g_auto(GStrv) parts = g_strsplit(twice[i].message, "(A, B)", -1);
    g_autofree char *message = g_strjoinv(folders, parts);
    g_autofree char *want = g_strconcat("ema-sim: ", message, NULL);
    g_autoptr(EmaTestRun) run = NULL;
    for (guint j = 0; j < G_N_ELEMENTS(twice[i].args) && twice[i].args[j]; j++)
      argv[j + 1] = g_str_equal(twice[i].args[j], "A")   ? a
                    : g_str_equal(twice[i].args[j], "B") ? b
                                                         : twice[i].args[j];
    run = ema_test_cli_argv(argv, NULL);
    ema_test_assert_failed(run, 2, want);
    g_assert_cmpstr(run->out, ==, "");
    g_assert_false(g_file_test(a, G_FILE_TEST_EXISTS));
    g_assert_false(g_file_test(b, G_FILE_TEST_EXISTS));
  }
  /* --set and --plugin-dir repeat: each --set applies, each folder is searched */
  g_assert_cmpint(g_mkdir(a, 0755), ==, 0);
  g_assert_cmpint(g_mkdir(b, 0755), ==, 0);
  {
    g_autoptr(EmaTestRun) run =
        ema_test_cli("check", BASELINE, "--set", "server=h200x8-hgx", "--set", "name=twice",
                     "--plugin-dir", a, "--plugin-dir", b, NULL);
    ema_test_assert_ok(run);
    g_assert_cmpstr(run->out, ==, BASELINE ": ok (twice on h200x8-hgx, 13 ops)\n");
  }
  ema_test_remove_tree(dir);
}

/* A --set of a key an earlier --set sets took the last value unsaid (--set duration=10s --set
 * duration=20s ran 20 s): an error at the second, naming the first, in run and check, in a
 * comparison and in a sweep (its repeats too), before any work; --seed with a --set seed= is a
 * usage error (in a comparison --seed is one more --set). */
static void test_set_key_twice(void) {
  static const char want[] = "--set:2:1: seed: --set 1 sets it already: give each key once\n";
  g_autofree char *dir = ema_test_temp_dir();
  g_autofree char *out = g_build_filename(dir, "out", NULL);
  g_autofree char *cmp = g_build_filename(dir, "cmp.yaml", NULL);
  g_assert_true(g_file_set_contents(cmp,
                                    "name: ops\nserver: h200x2\nops:\n  - {name: c, flows: "
                                    "[{kind: copy, src: gpu0, dst: gpu1, bytes: 4MiB}]}\n"
                                    "compare: {a: {}, b: {tolerance: 2%}}\n",
                                    -1, NULL));
  {
    g_autoptr(EmaTestRun) run =
        ema_test_cli("run", BASELINE, "--set", "seed=1", "--set", "seed=2", "-o", out, NULL);
    g_autoptr(EmaTestRun) check =
        ema_test_cli("check", BASELINE, "--set", "seed=1", "--set", "seed=2", NULL);
    g_autoptr(EmaTestRun) compared =
        ema_test_cli("check", cmp, "--set", "seed=1", "--set", "seed=2", NULL);
    g_autoptr(EmaTestRun) swept =
        ema_test_cli("sweep", "tests/fixtures/sweep/serving-grid.yaml", "--list", "--set", "seed=1",
                     "--set", "seed=2", NULL);
    g_autoptr(EmaTestRun) repeats =
        ema_test_cli("sweep", "tests/fixtures/sweep/serving-grid.yaml", "--list", "--set",
                     "repeats=2", "--set", "repeats=3", NULL);
    ema_test_assert_error_line(run, want);
    ema_test_assert_error_line(check, want);
    ema_test_assert_error_line(compared, want);
    ema_test_assert_error_line(swept, want);
    ema_test_assert_error_line(repeats,
                               "--set:2:1: repeats: --set 1 sets it already: give each key once\n");
    g_assert_false(g_file_test(out, G_FILE_TEST_EXISTS));
  }
  for (guint i = 0; i < 2; i++) {
    g_autoptr(EmaTestRun) run =
        ema_test_cli("run", i ? cmp : BASELINE, "--seed", "3", "--set", "seed=2", "-o", out, NULL);
    ema_test_assert_failed(
        run, 2, "ema-sim: --seed and --set seed= both give the seed: give one of them\n");
    g_assert_false(g_file_test(out, G_FILE_TEST_EXISTS));
  }
  {
    /* a map, then a key inside it: another path, and both apply */
    g_autoptr(EmaTestRun) run = ema_test_cli("check", BASELINE, "--set", "server={name: h200x2}",
                                             "--set", "server.gpus=4", NULL);
    ema_test_assert_ok(run);
    g_assert_cmpstr(run->out, ==, BASELINE ": ok (h200x2-baseline on h200x2, 13 ops)\n");
  }
  ema_test_remove_tree(dir);
}

/* ---- check, list, describe ---------------------------------------------- */

static void test_check(void) {
  g_autoptr(EmaTestRun) run = ema_test_cli("check", BASELINE, NULL);
  g_autoptr(EmaTestRun) set = ema_test_cli("check", BASELINE, "--set", "server=h200x8-hgx", NULL);
  g_autoptr(EmaTestRun) inline_server = ema_test_cli("check", FIXTURES "inline-server.yaml", NULL);
  g_assert_cmpint(run->status, ==, 0);
  g_assert_cmpstr(run->err, ==, "");
  g_assert_cmpstr(run->out, ==, BASELINE ": ok (h200x2-baseline on h200x2, 13 ops)\n");
  g_assert_cmpint(set->status, ==, 0);
  g_assert_cmpstr(set->out, ==, BASELINE ": ok (h200x2-baseline on h200x8-hgx, 13 ops)\n");
  g_assert_cmpint(inline_server->status, ==, 0);
  g_assert_cmpstr(inline_server->out, ==,
                  FIXTURES "inline-server.yaml: ok (inline-server on inline-h200x4, 1 op)\n");
}

/* A tensor-parallel tenant under a sharing policy is named in a warning
 * saying how its group shares (under ema it borrows, offloads, lends and
 * holds parked KV, under remote-direct it reads its shard directly and
 * lends, under peer-swap it parks and holds parked KV, and with preempt:
 * cheaper the warning names that choice); under static (nothing shares)
 * there is none. */
static void test_check_tp_warning(void) {
  g_autoptr(EmaTestRun) ema = ema_test_cli("check", FIXTURES "tp-share.yaml", NULL);
  g_autoptr(EmaTestRun) direct =
      ema_test_cli("check", FIXTURES "tp-share.yaml", "--set", "policy=remote-direct", NULL);
  g_autoptr(EmaTestRun) park =
      ema_test_cli("check", FIXTURES "tp-share.yaml", "--set", "policy=peer-swap", NULL);
  g_autoptr(EmaTestRun) cheaper =
      ema_test_cli("check", FIXTURES "tp-share.yaml", "--set", "policy=peer-swap", "--set",
                   "policy.preempt=cheaper", NULL);
  g_autoptr(EmaTestRun) fixed =
      ema_test_cli("check", FIXTURES "tp-share.yaml", "--set", "policy=static", NULL);
  g_assert_cmpint(ema->status, ==, 0);
  g_assert_cmpstr(ema->err, ==,
                  "ema-sim: warning: tenant big (tp 2 on gpu0..gpu1) shares as a group under "
                  "policy ema (borrow: most-idle): it borrows from the GPUs outside the group, "
                  "each rank reading or offloading the attention over its shard of the remote "
                  "KV, and lends its spare KV memory as a group, each rank its share, holding "
                  "peers' parked KV\n");
  g_assert_cmpint(direct->status, ==, 0);
  g_assert_cmpstr(direct->err, ==,
                  "ema-sim: warning: tenant big (tp 2 on gpu0..gpu1) shares as a group under "
                  "policy remote-direct (borrow: on-demand): it borrows from the GPUs outside the "
                  "group, each rank reading its shard of the remote KV, and lends its spare KV "
                  "memory as a group, each rank its share\n");
  g_assert_cmpint(park->status, ==, 0);
  g_assert_cmpstr(park->err, ==,
                  "ema-sim: warning: tenant big (tp 2 on gpu0..gpu1) shares as a group under "
                  "policy peer-swap (preempt: swap-peer): it parks its preempted KV on peers and "
                  "holds theirs\n");
  g_assert_cmpint(cheaper->status, ==, 0);
  g_assert_cmpstr(cheaper->err, ==,
                  "ema-sim: warning: tenant big (tp 2 on gpu0..gpu1) shares as a group under "
                  "policy peer-swap (preempt: cheaper): it parks its preempted KV on peers and "
                  "holds theirs\n");
  g_assert_cmpint(fixed->status, ==, 0);
  g_assert_cmpstr(fixed->err, ==, "");
}

static void test_list(void) {
  const char *const names[] = {"a100x4-40gb", "a100x8-dgx", "gb200-nvl72", "h100x8-hgx",
                               "h200x2",      "h200x8-hgx", "l40sx8-pcie", "mi300x8"};
  g_autoptr(EmaTestRun) run = ema_test_cli("list", "hwmodels", NULL);
  g_assert_cmpint(run->status, ==, 0);
  g_assert_cmpstr(run->err, ==, "");
  for (guint i = 0; i < G_N_ELEMENTS(names); i++) {
    g_autofree char *line_start = g_strdup_printf("\n%s ", names[i]);
    g_autofree char *text = g_strconcat("\n", run->out, NULL);
    ema_test_assert_contains(text, line_start);
  }
  ema_test_assert_contains(run->out, "h200x2           2x H200 SXM 141GB");
  g_assert_null(strstr(run->out, "does not load"));
}

static void test_describe(void) {
  g_autoptr(EmaTestRun) run = ema_test_cli("describe", "hwmodel", "h200x2", NULL);
  g_autoptr(EmaTestRun) bad = ema_test_cli("describe", "hwmodel", "nope", NULL);
  g_assert_cmpint(run->status, ==, 0);
  g_assert_cmpstr(run->err, ==, "");
  g_assert_true(g_str_has_prefix(run->out, "name: \"h200x2\"\n"));
  ema_test_assert_contains(run->out, "\ngpus: 2\n");
  ema_test_assert_contains(run->out, "\ntopology: direct\n");
  ema_test_assert_contains(run->out, "\n  bandwidth: 397GB/s\n");
  ema_test_assert_contains(run->out, "\n  copy_fixed_cost: 6.4us\n");
  ema_test_assert_contains(run->out, "\n# derived: total HBM ");
  /* the H200's measured tables of its profiler's own kernels, named */
  ema_test_assert_contains(run->out, "\n# the measuring workload's own kernels, which a serving "
                                     "step takes from the imports first: attn_decode "
                                     "attn_prefill moe elementwise\n");
  /* a measured byte count is said in GiB too */
  {
    g_autoptr(EmaTestRun) h100 = ema_test_cli("describe", "hwmodel", "h100x8-hgx", NULL);
    ema_test_assert_contains(h100->out, "\n  hbm_capacity: 85040352461B  # 79.2 GiB\n");
  }

  g_assert_cmpstr(bad->out, ==, "");
  assert_error_line(bad, "ema-sim: unknown hardware model 'nope' (known: ", "a100x4-40gb", "h200x2",
                    "mi300x8", NULL);
}

/* ---- bad input ---------------------------------------------------------- */

typedef struct {
  const char *file; /* in tests/fixtures/experiments/ */
  const char *at;   /* ":line:col: " after the path */
  const char *key;  /* the key path in the message, or NULL */
  const char *problem;
} BadInput;

static const BadInput bad_inputs[] = {
    {"malformed.yaml", ":8:5: ", NULL,
     "did not find expected ',' or ']' while parsing a flow sequence"},
    {"bad-indent.yaml", ":4:7: ", NULL, "mapping values are not allowed in this context"},
    {"unknown-key-top.yaml", ":2:1: ", "nmae: ",
     "unknown key in experiment (valid keys: name, summary, seed, tolerance, server, ops, decode, "
     "tenants, "
     "duration, sample_period, timeline_max_rows, policy, idle_gpu_memory, requests_csv, slo, "
     "steps_csv, steps_max_rows, events_csv, events, events_max_rows, events_tier)"},
    {"unknown-key-nested.yaml",
     ":6:48: ", "ops.0.flows.0.byts: ", "unknown key in flow (valid keys: kind, src, dst, bytes)"},
    {"negative-size.yaml", ":6:55: ", "ops.0.flows.0.bytes: ", "negative size '-4KiB'"},
    {"unknown-unit.yaml", ":6:55: ", "ops.0.flows.0.bytes: ",
     "unknown unit 'XiB' in '4XiB' (sizes use B, KB, MB, GB, TB, KiB, MiB, GiB, TiB)"},
    {"missing-include.yaml", ":3:9: ", "!include nope.yaml: ", "experiments/nope.yaml"},
    {"unknown-hwmodel.yaml", ":3:9: ", "server: ", "unknown hardware model 'h900' (known: "},
    {"wrong-type.yaml",
     ":8:16: ", "ops.0.flows.0.bytes: ", "expected a size (e.g. 2MiB), got a map"},
    {"out-of-range.yaml", ":6:9: ", "server.gpus: ", "0 is out of range [1, 1024]"},
    {"bad-endpoint.yaml", ":9:38: ", "ops.1.flows.0.dst: ", "unknown endpoint 'gpu7'"},
    {"read-from-host.yaml", ":8:9: ", "ops.0.flows.1: ", "a read flow needs a GPU on both ends"},
};

static void test_bad_input(gconstpointer data) {
  const BadInput *bad = data;
  g_autofree char *file = g_strconcat(FIXTURES, bad->file, NULL);
  g_autofree char *prefix = g_strconcat(file, bad->at, bad->key ? bad->key : "", NULL);
  g_autofree char *dir = ema_test_temp_dir();
  g_autofree char *out = g_build_filename(dir, "out", NULL);
  g_autoptr(EmaTestRun) check = ema_test_cli("check", file, NULL);
  g_autoptr(EmaTestRun) run = ema_test_cli("run", file, "-o", out, NULL);
  assert_error_line(check, prefix, bad->problem, NULL);
  g_assert_cmpstr(check->out, ==, "");
  assert_error_line(run, prefix, bad->problem, NULL);
  g_assert_cmpstr(run->out, ==, "");
  /* nothing is written for an experiment that does not load */
  g_assert_false(g_file_test(out, G_FILE_TEST_EXISTS));
  g_rmdir(dir);
}

static void test_set_errors(void) {
  g_autoptr(EmaTestRun) range = ema_test_cli("check", BASELINE, "--set", "server.gpus=0", NULL);
  g_autoptr(EmaTestRun) index = ema_test_cli("check", BASELINE, "--set", "ops.20.name=x", NULL);
  g_autoptr(EmaTestRun) syntax = ema_test_cli("check", BASELINE, "--set", "server.gpus", NULL);
  g_autoptr(EmaTestRun) value = ema_test_cli("check", BASELINE, "--set", "seed=[1,", NULL);
  g_autoptr(EmaTestRun) second =
      ema_test_cli("check", BASELINE, "--set", "tolerance=1%", "--set", "seed=x", NULL);
  assert_error_line(range, "--set:1:13: server.gpus: ", "0 is out of range [1, 1024]", NULL);
  assert_error_line(index, "--set:1:1: ops.20.name: ", "'20' is not an index of this list", NULL);
  assert_error_line(syntax, "--set:1:1: ", "expected key.path=value", NULL);
  assert_error_line(value, "--set:1:6: seed: bad value: ", NULL);
  assert_error_line(second, "--set:2:6: seed: ", "'x'", NULL);
}

/* An unknown key from --set points at that key in the --set text. */
static void test_set_unknown_key(void) {
  g_autoptr(EmaTestRun) run = ema_test_cli("check", BASELINE, "--set", "server.gpuz=4", NULL);
  g_autoptr(EmaTestRun) second =
      ema_test_cli("run", BASELINE, "--set", "seed=2", "--set", "ops.0.nme=x", NULL);
  assert_error_line(run, "--set:1:8: server.gpuz: ", "unknown key in server (valid keys: ", NULL);
  assert_error_line(second, "--set:2:7: ops.0.nme: ", "unknown key in op", NULL);
}

/* A file that is not there is no place of an error: the program's name goes first. */
static void test_missing_file(void) {
  g_autoptr(EmaTestRun) check = ema_test_cli("check", FIXTURES "does-not-exist.yaml", NULL);
  g_autoptr(EmaTestRun) run = ema_test_cli("run", FIXTURES "does-not-exist.yaml", NULL);
  assert_error_line(check, "ema-sim: " FIXTURES "does-not-exist.yaml: ", NULL);
  g_assert_cmpstr(check->out, ==, "");
  assert_error_line(run, "ema-sim: " FIXTURES "does-not-exist.yaml: ", NULL);
}

/* An error starts with its place where it has one (file:line:col:, --set:N:M:, or a file or
 * folder that exists), else with "ema-sim: " (the GNU convention): those without one were
 * printed bare, as though the message were a place. */
static void test_error_prefix(void) {
  g_autofree char *dir = ema_test_temp_dir();
  g_autofree char *empty = g_strconcat(dir, ": nothing to plot (", NULL);
  g_autoptr(EmaTestRun) server = ema_test_cli("step-time", "nope", "llama-3.1-8b", "1", NULL);
  g_autoptr(EmaTestRun) policy = ema_test_cli("describe", "policy", "nope", NULL);
  g_autoptr(EmaTestRun) llm = ema_test_cli("describe", "llm", "nope", NULL);
  g_autoptr(EmaTestRun) file = ema_test_cli("check", FIXTURES "malformed.yaml", NULL);
  g_autoptr(EmaTestRun) set = ema_test_cli("check", BASELINE, "--set", "server.gpus=0", NULL);
  const char *gnuplot[] = {"EMA_GNUPLOT=true", NULL}; /* found, never run: nothing to plot */
  g_autoptr(EmaTestRun) folder = ema_test_cli_env(gnuplot, "plot", dir, NULL);
  assert_error_line(server, "ema-sim: unknown hardware model 'nope' (known: ", NULL);
  assert_error_line(policy, "ema-sim: unknown policy 'nope' (borrow: ", NULL);
  assert_error_line(llm, "ema-sim: unknown model 'nope' (known: ", NULL);
  assert_error_line(file, FIXTURES "malformed.yaml:8:5: ", NULL);
  assert_error_line(set, "--set:1:13: server.gpus: ", NULL);
  assert_error_line(folder, empty, NULL);
  ema_test_remove_tree(dir);
}

/* list engines: one line per profile with the vLLM versions it stands for; describe engine:
 * every value of one (the test fixtures' profiles, on EMA_ENGINE_PATH, and the tree's). */
static void test_engines(void) {
  g_autoptr(EmaTestRun) run = ema_test_cli("list", "engines", NULL);
  ema_test_assert_ok(run);
  ema_test_assert_contains(run->out,
                           "\ntest-group           vLLM test fixture; fitted on: nothing (a "
                           "test fixture)\n");
  ema_test_assert_contains(run->out, "\nvllm-v0              vLLM 0.1-0.5");
  /* a profile naming the host its CPU costs were fitted on says so */
  ema_test_assert_contains(run->out,
                           "\ntest-host            vLLM test fixture; fitted on: nothing (a "
                           "test fixture); CPU costs of the host of a100x8-dgx\n");
  g_clear_pointer(&run, ema_test_run_free);
  run = ema_test_cli("describe", "engine", "test-group", NULL);
  ema_test_assert_ok(run);
  ema_test_assert_contains(run->out, "\nstep_cpu_cost: 1ms\n");
  ema_test_assert_contains(run->out, "\nstep_cpu_cost_group: 300us\n");
  ema_test_assert_contains(run->out, "\nstep_cpu_cost_per_seq_group: 50us\n");
  ema_test_assert_contains(run->out, "\ndefault_max_num_batched_tokens: 8192\n");
  g_clear_pointer(&run, ema_test_run_free);
  run = ema_test_cli("describe", "engine", "vllm-v9", NULL);
  g_assert_cmpint(run->status, ==, 1);
  ema_test_assert_contains(run->err,
                           "unknown engine profile 'vllm-v9' (known: test-eager, test-free, ");
  g_clear_pointer(&run, ema_test_run_free);
  run = ema_test_cli("describe", "engine", NULL);
  g_assert_cmpint(run->status, ==, 2);
  ema_test_assert_contains(run->err, "usage: ema-sim describe engine NAME (ema-sim list engines)");
  /* --keys: the file format, from the profile's parameter table (every key, required or its
   * default, range and meaning), for a profile of one's own; not with a NAME */
  g_clear_pointer(&run, ema_test_run_free);
  run = ema_test_cli("describe", "engine", "--keys", NULL);
  ema_test_assert_ok(run);
  g_assert_true(g_str_has_prefix(run->out, "name                     string    required\n"
                                           "    profile id (the file name without .yaml)\n"));
  ema_test_assert_contains(run->out, "\nstep_cpu_cost            duration  required, range "
                                     "[0ns, 10s]\n");
  ema_test_assert_contains(run->out, "\nfitted_host ");
  g_clear_pointer(&run, ema_test_run_free);
  run = ema_test_cli("describe", "llm", "--keys", NULL);
  ema_test_assert_ok(run);
  ema_test_assert_contains(run->out, "\nlayers                   int       required");
  g_clear_pointer(&run, ema_test_run_free);
  run = ema_test_cli("describe", "engine", "--keys", "vllm-v1", NULL);
  g_assert_cmpint(run->status, ==, 2);
  ema_test_assert_contains(run->err, "or describe engine --keys");
}

#define STEP_TIME_HEADER                                                                           \
  "prefill_tokens,prefill_context,prefill_kv_read,decode_seqs,decode_context,logits\n"
#define STEP_TIME_HEADER_CHUNKS                                                                    \
  "prefill_tokens,prefill_context,prefill_kv_read,decode_seqs,decode_context,logits,"              \
  "prefill_chunks\n"

/* step-time: the step model's time of batches from a file, one line each;
 * an empty batch takes 0; a bad line, a bad header, an empty file and a line past the buffer
 * are errors with their line number (no output before the header is good); --weights and
 * --kv-cache set the model's precision as an experiment's model keys do. */
static void test_step_time(void) {
  g_autofree char *dir = ema_test_temp_dir();
  g_autofree char *good = g_build_filename(dir, "good.csv", NULL);
  g_autofree char *bad = g_build_filename(dir, "bad.csv", NULL);
  g_autofree char *want_bad = NULL;
  const char *header = STEP_TIME_HEADER;
  g_autofree char *good_text = g_strconcat(header, "0,0,0,0,0,0\n0,0,0,32,32000,32\n", NULL);
  g_autofree char *bad_text = g_strconcat(header, "1,2,3\n", NULL);
  g_autoptr(EmaTestRun) run = NULL;
  g_auto(GStrv) lines = NULL;
  g_assert_true(g_file_set_contents(good, good_text, -1, NULL));
  g_assert_true(g_file_set_contents(bad, bad_text, -1, NULL));
  /* h200x8-hgx: its profile is in the tree (h100x8-hgx's imports ../shared, absent in some
   * checkouts, and would warn) */
  run = ema_test_cli("step-time", "h200x8-hgx", "llama-2-70b", "4", good, NULL);
  ema_test_assert_ok(run);
  lines = g_strsplit(run->out, "\n", -1);
  g_assert_cmpstr(lines[0], ==, "time_us");
  g_assert_cmpstr(lines[1], ==, "0.000");
  /* a decode step of 32 sequences streams 32 GiB of weights per GPU: > 7 ms at H200's 4.3 TB/s */
  g_assert_cmpfloat(g_ascii_strtod(lines[2], NULL), >, 7000);
  g_clear_pointer(&run, ema_test_run_free);
  run = ema_test_cli("step-time", "h200x8-hgx", "llama-2-70b", "4", bad, NULL);
  g_assert_cmpint(run->status, ==, 1);
  want_bad = g_strconcat(bad, ":2:1: expected 6 fields, not 3\n", NULL);
  g_assert_cmpstr(run->err, ==, want_bad);
  g_clear_pointer(&run, ema_test_run_free);
  run = ema_test_cli("step-time", "h200x8-hgx", "llama-2-70b", "3", good, NULL);
  g_assert_cmpint(run->status, ==, 1);
  ema_test_assert_contains(run->err, "tensor-parallel size 3");
  g_clear_pointer(&run, ema_test_run_free);
  /* a wrong header, an empty file and a line past the buffer are errors at their line, and
   * nothing is printed before the input's header is known good */
  {
    static const struct {
      const char *text, *want;
    } cases[] = {
        {"tokens\n0\n", ":1:1: the header must be prefill_tokens,prefill_context,"
                        "prefill_kv_read,decode_seqs,decode_context,logits[,prefill_chunks]\n"},
        {"", ":1:1: empty: the header must be prefill_tokens,prefill_context,prefill_kv_read,"
             "decode_seqs,decode_context,logits[,prefill_chunks]\n"},
        {NULL, ":2:1: the line is longer than 1023 characters\n"},
    };
    for (guint i = 0; i < G_N_ELEMENTS(cases); i++) {
      g_autofree char *text = NULL, *want = NULL, *digits = g_strnfill(2000, '1');
      text = cases[i].text ? g_strdup(cases[i].text) : g_strconcat(header, digits, "\n", NULL);
      g_assert_true(g_file_set_contents(bad, text, -1, NULL));
      run = ema_test_cli("step-time", "h200x8-hgx", "llama-2-70b", "4", bad, NULL);
      g_assert_cmpint(run->status, ==, 1);
      want = g_strconcat(bad, cases[i].want, NULL);
      g_assert_cmpstr(run->err, ==, want);
      g_assert_cmpstr(run->out, ==, cases[i].text ? "" : "time_us\n");
      g_clear_pointer(&run, ema_test_run_free);
    }
  }
  /* 37#10: a step past the clock is an error, never a negative time */
  g_clear_pointer(&bad_text, g_free);
  bad_text = g_strconcat(header, "0,0,0,1e15,1e15,1e15\n", NULL);
  g_assert_true(g_file_set_contents(bad, bad_text, -1, NULL));
  run = ema_test_cli("step-time", "h200x8-hgx", "llama-2-70b", "4", bad, NULL);
  g_assert_cmpint(run->status, ==, 1);
  g_assert_null(strstr(run->out, "-"));
  ema_test_assert_contains(run->err, ":2: the step takes longer than the simulator's clock "
                                     "counts (2^63 ns, about 292 years)");
  g_clear_pointer(&run, ema_test_run_free);
  /* --weights fp8: the same decode step streams half the decoder's weight bytes, so it takes
   * under the 16-bit step and over half of it (the LM head, KV and launches stay) */
  {
    double auto_us = g_ascii_strtod(lines[2], NULL), fp8_us;
    g_auto(GStrv) fp8_lines = NULL;
    run = ema_test_cli("step-time", "--weights", "fp8", "--kv-cache", "auto", "h200x8-hgx",
                       "llama-2-70b", "4", good, NULL);
    ema_test_assert_ok(run);
    fp8_lines = g_strsplit(run->out, "\n", -1);
    fp8_us = g_ascii_strtod(fp8_lines[2], NULL);
    g_assert_cmpfloat(fp8_us, <, auto_us);
    g_assert_cmpfloat(fp8_us, >, auto_us / 2);
    g_clear_pointer(&run, ema_test_run_free);
  }
  run = ema_test_cli("step-time", "--weights", "fp4", "h200x8-hgx", "llama-2-70b", "4", good, NULL);
  g_assert_cmpint(run->status, ==, 1);
  ema_test_assert_contains(run->err,
                           "--weights: unknown precision 'fp4' (valid: auto, fp8, fp8-block)");
  g_clear_pointer(&run, ema_test_run_free);
  run = ema_test_cli("step-time", "h200x8-hgx", "llama-2-70b", NULL);
  g_assert_cmpint(run->status, ==, 2);
  ema_test_assert_contains(run->err, "usage: ema-sim step-time SERVER MODEL TP [FILE]");
  ema_test_remove_tree(dir);
}

/* step-time's FILE: a FIFO is refused at once, never waited on (as every input is); `-` is
 * stdin, as no FILE is. */
static void test_step_time_inputs(void) {
  g_autofree char *dir = ema_test_temp_dir();
  g_autofree char *fifo = g_build_filename(dir, "fifo", NULL);
  g_autofree char *good = g_build_filename(dir, "good.csv", NULL);
  g_autofree char *want = g_strconcat(fifo, ": not a regular file (a FIFO)\n", NULL);
  const char *script = "exec \"$0\" step-time h200x8-hgx llama-2-70b 4 - < \"$1\"";
  const char *const argv[] = {"/bin/sh", "-c", script, ema_test_sim_path(), good, NULL};
  const char *const edits[] = {"EMA_HWMODEL_PATH", NULL};
  g_autoptr(EmaTestRun) from_fifo = NULL, from_file = NULL, from_stdin = NULL;
  g_assert_cmpint(mkfifo(fifo, 0600), ==, 0);
  g_assert_true(g_file_set_contents(good, STEP_TIME_HEADER "0,0,0,32,32000,32\n", -1, NULL));
  from_fifo = ema_test_cli("step-time", "h200x8-hgx", "llama-2-70b", "4", fifo, NULL);
  g_assert_cmpint(from_fifo->status, ==, 1);
  g_assert_cmpstr(from_fifo->err, ==, want);
  from_file = ema_test_cli("step-time", "h200x8-hgx", "llama-2-70b", "4", good, NULL);
  from_stdin = ema_test_run(argv, g_getenv("EMA_SOURCE_ROOT"), edits);
  ema_test_assert_ok(from_file);
  ema_test_assert_ok(from_stdin);
  g_assert_cmpstr(from_stdin->out, ==, from_file->out);
  ema_test_remove_tree(dir);
}

/* A step-time input line and the start of the error it must get. */
typedef struct {
  const char *row, *want;
} StepTimeCase;

/* TEXT (LENGTH bytes) in the file PATH makes step-time fail with one line that starts with PATH
 * and WANT; the failure names it case CASE_NO where it does not. */
static void assert_step_time_refuses_text(const char *path, const char *text, gsize length,
                                          const char *want, guint case_no) {
  g_autofree char *want_line = g_strconcat(path, want, NULL);
  g_autoptr(EmaTestRun) run = NULL;
  g_assert_true(g_file_set_contents(path, text, (gssize) length, NULL));
  run = ema_test_cli("step-time", "h200x8-hgx", "llama-2-70b", "4", path, NULL);
  g_assert_cmpint(run->status, ==, 1);
  if (!g_str_has_prefix(run->err, want_line))
    g_error("case %u: '%s' does not start with '%s'", case_no, ema_test_escaped(run->err),
            want_line);
  ema_test_assert_one_line(run->err);
}

/* Each of the N CASES, a line under HEADER in the file PATH, makes step-time fail with one line
 * that starts with PATH and its want. */
static void assert_step_time_refuses(const char *path, const char *header,
                                     const StepTimeCase *cases, guint n) {
  for (guint i = 0; i < n; i++) {
    g_autofree char *text = g_strconcat(header, cases[i].row, "\n", NULL);
    assert_step_time_refuses_text(path, text, strlen(text), cases[i].want, i);
  }
}

/* step-time's output lines for TEXT (a header and batches) written to PATH; it must succeed. */
static GStrv step_time_lines_of(const char *path, const char *text) {
  g_autoptr(EmaTestRun) run = NULL;
  g_assert_true(g_file_set_contents(path, text, -1, NULL));
  run = ema_test_cli("step-time", "h200x8-hgx", "llama-2-70b", "4", path, NULL);
  ema_test_assert_ok(run);
  return g_strsplit(run->out, "\n", -1);
}

/* step-time's sums over the prefill tokens and the decode sequences: 0 without them, else at
 * least their count; another value (which the model would ignore or clamp) is an error at its
 * field; without prefill_chunks the prefill sums must be of one chunk (a chunk of 512 tokens
 * after 9,487 cached ones reads 9,999 tokens' KV and attends to 512 x 9,487 + 512 x 513 / 2 =
 * 4,988,672); a valid prefill_kv_read (a chunk of 512 tokens after 3,000 cached ones, within
 * llama-2-70b's 4,096: 3,512 and 512 x 3,000 + 131,328 = 1,667,328) lengthens the step. */
static void test_step_time_sums(void) {
  static const StepTimeCase cases[] = {
      {"2048,2098176,2098176,0,0,1",
       ":2:6: prefill_context 2098176 is not what one chunk of 2048 tokens after 2096128 cached "
       "ones attends to (4294968320; several prompts or chunks: give their count in a "
       "prefill_chunks column)\n"},
      {"512,131328,9999,0,0,1", ":2:5: prefill_context 131328 is not what one chunk of 512 "
                                "tokens after 9487 cached ones attends to (4988672;"},
      {"0,0,9999,0,0,0",
       ":2:5: prefill_kv_read 9999 without prefill_tokens (it sums over them: 0 when there are "
       "none)\n"},
      {"0,5,0,0,0,0", ":2:3: prefill_context 5 without prefill_tokens"},
      {"512,131328,100,0,0,1",
       ":2:12: prefill_kv_read 100 is below prefill_tokens 512 (each token attends to itself at "
       "least)\n"},
      {"0,0,0,0,7,0", ":2:9: decode_context 7 without decode_seqs"},
      {"0,0,0,4,3,4", ":2:9: decode_context 3 is below decode_seqs 4"},
  };
  g_autofree char *dir = ema_test_temp_dir();
  g_autofree char *path = g_build_filename(dir, "batches.csv", NULL);
  g_auto(GStrv) lines = NULL;
  assert_step_time_refuses(path, STEP_TIME_HEADER, cases, G_N_ELEMENTS(cases));
  lines =
      step_time_lines_of(path, STEP_TIME_HEADER "512,131328,512,0,0,1\n512,1667328,3512,0,0,1\n");
  g_assert_cmpfloat(g_ascii_strtod(lines[2], NULL), >, g_ascii_strtod(lines[1], NULL));
  ema_test_remove_tree(dir);
}

/* step-time's counts (prefill_tokens, decode_seqs, logits) are whole numbers: 1.5 tokens, 2.5
 * sequences or half a logit row were truncated by the model and timed silently; a field that is
 * not a decimal (strtod's hex "0x10") is refused; more logits than tokens is an error at the
 * logits field. */
static void test_step_time_counts(void) {
  static const StepTimeCase cases[] = {
      {"1.5,1.875,1.5,0,0,1", ":2:1: prefill_tokens 1.5: a count, a whole number\n"},
      {"0,0,0,2.5,1000,2", ":2:7: decode_seqs 2.5: a count, a whole number\n"},
      {"0,0,0,1,1000,0.5", ":2:14: logits 0.5: a count, a whole number\n"},
      {"0x10,136,16,0,0,1", ":2:1: prefill_tokens: not a number >= 0: '0x10'\n"},
      {"0,0,0,500000000500000000,1,1",
       ":2:7: decode_seqs: 500000000500000000 is above 10^15, more than any step holds\n"},
      {"0,0,0,4,400,5", ":2:13: logits 5: more than the tokens, prefill_tokens 0 and decode_seqs "
                        "4\n"},
  };
  g_autofree char *dir = ema_test_temp_dir();
  g_autofree char *path = g_build_filename(dir, "batches.csv", NULL);
  assert_step_time_refuses(path, STEP_TIME_HEADER, cases, G_N_ELEMENTS(cases));
  ema_test_remove_tree(dir);
}

/* step-time's optional prefill_chunks column: 0 without prefill tokens, else a whole number up
 * to them; one chunk times as the six columns do; four prompts of 1,024 tokens as four chunks
 * (4 x 1,024 x 1,025 / 2 = 2,099,200 query-key pairs) take less than their 4,096 tokens
 * (llama-2-70b's context) as one chunk (4,096 x 4,097 / 2 = 8,390,656 pairs), and a
 * prefill_context outside what its chunks can attend to is an error. */
static void test_step_time_chunks(void) {
  static const StepTimeCase cases[] = {
      {"0,0,0,4,400,4,1", ":2:15: prefill_chunks 1: a whole number, 0 without prefill_tokens, "
                          "else from 1 to prefill_tokens 0\n"},
      {"100,5050,100,0,0,1,0", ":2:20: prefill_chunks 0: a whole number"},
      {"100,5050,100,0,0,1,1.5", ":2:20: prefill_chunks 1.5: a whole number"},
      {"100,5050,100,0,0,1,101", ":2:20: prefill_chunks 101: a whole number"},
      {"2048,525311,2048,0,0,4,4", ":2:6: prefill_context 525311 is outside what 4 chunks of 2048 "
                                   "tokens reading 2048 tokens' KV attend to (525312 to "
                                   "4194304)\n"},
      {"2048,4194305,2048,0,0,4,4", ":2:6: prefill_context 4194305 is outside what 4 chunks"},
  };
  g_autofree char *dir = ema_test_temp_dir();
  g_autofree char *path = g_build_filename(dir, "batches.csv", NULL);
  g_auto(GStrv) lines = NULL, six = NULL;
  assert_step_time_refuses(path, STEP_TIME_HEADER_CHUNKS, cases, G_N_ELEMENTS(cases));
  lines = step_time_lines_of(path, STEP_TIME_HEADER_CHUNKS "4096,8390656,4096,0,0,1,1\n"
                                                           "4096,2099200,4096,0,0,4,4\n"
                                                           "0,0,0,32,32000,32,0\n");
  g_assert_cmpstr(lines[0], ==, "time_us");
  g_assert_cmpfloat(g_ascii_strtod(lines[2], NULL), <, g_ascii_strtod(lines[1], NULL));
  six = step_time_lines_of(path, STEP_TIME_HEADER "4096,8390656,4096,0,0,1\n0,0,0,32,32000,32\n");
  g_assert_cmpstr(six[1], ==, lines[1]);
  g_assert_cmpstr(six[2], ==, lines[3]);
  ema_test_remove_tree(dir);
}

/* step-time's sums within the model's context (llama-2-70b's 4,096 tokens): a decoding sequence's
 * context, a prefill chunk's KV read (its prompt so far) and what a prefill token attends to are
 * each at most the context, so their averages over decode_seqs, prefill_chunks and
 * prefill_tokens are too; one past it is an error at its field, one at it is timed. 1,009 tokens
 * in ten chunks, one of 1,000 after 9,000 cached ones and nine fresh single tokens, read 1,000.9
 * tokens a chunk on average but attend to 9,500,509 / 1,009 = 9,415.8 a token. */
static void test_step_time_context(void) {
  static const StepTimeCase cases[] = {
      {"0,0,0,2,8194,2,0",
       ":2:9: decode_context 8194: 4097 tokens per decoding sequence on average "
       "(decode_seqs 2), above llama-2-70b's context of 4096 tokens (its "
       "max_context)\n"},
      {"100,405050,4100,0,0,1,1", ":2:12: prefill_kv_read 4100: 4100 tokens read per prefill chunk "
                                  "on average (prefill_chunks 1), above llama-2-70b's context"},
      {"1009,9500509,10009,0,0,10,10", ":2:6: prefill_context 9500509: 9415.76709613479 tokens "
                                       "attended per prefill token on average (prefill_tokens "
                                       "1009), above llama-2-70b's context"},
  };
  g_autofree char *dir = ema_test_temp_dir();
  g_autofree char *path = g_build_filename(dir, "batches.csv", NULL);
  g_auto(GStrv) lines = NULL;
  assert_step_time_refuses(path, STEP_TIME_HEADER_CHUNKS, cases, G_N_ELEMENTS(cases));
  lines = step_time_lines_of(path, STEP_TIME_HEADER "0,0,0,3,12288,3\n4096,8390656,4096,0,0,1\n");
  g_assert_cmpuint(g_strv_length(lines), ==, 4);
  ema_test_remove_tree(dir);
}

/* A string literal and its length in bytes, NUL bytes within it included. */
#define BYTES(literal) literal, sizeof literal - 1

/* step-time's input bytes: a UTF-8 byte-order mark before the header (a spreadsheet's export) is
 * skipped, its columns counted after it; an empty line among the steps (nothing, blanks, a CR) is
 * an error at its line, the newline that ends the file is not; a NUL byte is an error at its
 * column. */
static void test_step_time_bytes(void) {
  static const struct {
    const char *text;
    gsize length;
    const char *want;
  } cases[] = {
      {BYTES(STEP_TIME_HEADER "\n0,0,0,32,32000,32\n"),
       ":2:1: an empty line (every line after the header is a step)\n"},
      {BYTES(STEP_TIME_HEADER "0,0,0,32,32000,32\n \t\r\n0,0,0,32,32000,32\n"),
       ":3:1: an empty line (every line after the header is a step)\n"},
      {BYTES(STEP_TIME_HEADER "0,0,0,32,32000,32\n\n"), ":3:1: an empty line"},
      {BYTES(STEP_TIME_HEADER "0,0\0,0,32,32000,32\n"), ":2:4: a NUL byte\n"},
      {BYTES("\xEF\xBB\xBF"
             "prefill_tokens\0"),
       ":1:15: a NUL byte\n"},
  };
  g_autofree char *dir = ema_test_temp_dir();
  g_autofree char *path = g_build_filename(dir, "batches.csv", NULL);
  g_auto(GStrv) plain = step_time_lines_of(path, STEP_TIME_HEADER "0,0,0,32,32000,32\n");
  g_auto(GStrv) marked =
      step_time_lines_of(path, "\xEF\xBB\xBF" STEP_TIME_HEADER "0,0,0,32,32000,32\n");
  g_assert_true(g_strv_equal((const char *const *) plain, (const char *const *) marked));
  for (guint i = 0; i < G_N_ELEMENTS(cases); i++)
    assert_step_time_refuses_text(path, cases[i].text, cases[i].length, cases[i].want, i);
  ema_test_remove_tree(dir);
}

/* step-time refuses a model whose weights leave its GPUs no KV cache at any engine setting (a run's
 * "does not fit", at all of the HBM), before reading a line: llama-4-scout-17b-16e's 201 GiB of
 * BF16 weights on one 141 GB H200. */
static void test_step_time_fit(void) {
  g_autofree char *dir = ema_test_temp_dir();
  g_autofree char *path = g_build_filename(dir, "batches.csv", NULL);
  g_autoptr(EmaTestRun) run = NULL;
  g_assert_true(g_file_set_contents(path, STEP_TIME_HEADER "0,0,0,32,32000,32\n", -1, NULL));
  run = ema_test_cli("step-time", "h200x8-hgx", "llama-4-scout-17b-16e", "1", path, NULL);
  g_assert_cmpint(run->status, ==, 1);
  g_assert_cmpstr(run->out, ==, "");
  g_assert_cmpstr(run->err, ==,
                  "ema-sim: llama-4-scout-17b-16e does not fit with tp 1 on H200-SXM: 140 GiB of "
                  "HBM per "
                  "GPU (gpu_memory_utilization 100%) leaves no KV cache after 201 GiB of weights "
                  "and 0 B of activation reserve\n");
  ema_test_remove_tree(dir);
}

/* compare-static: a row's step model that cannot be made (a TP size that divides nothing) is
 * an error at the row's tp field, a token_size below 2 (no decode step after the prompt's) or
 * not whole at its field, a step past 10^12 tokens at the row's first column (it had no
 * column); a file with nothing to compare is an error naming it. */
static void test_compare_static_errors(void) {
  static const struct {
    const char *row, *want;
  } cases[] = {
      {"llama-2-70b,h200x8-hgx,512,1,128,196,54,3",
       ":2:41: tensor-parallel size 3 must divide the server's 8 GPUs\n"},
      {"llama-2-70b,h200x8-hgx,512,1,1,196,54,2",
       ":2:30: column 'token_size': '1' leaves no decode step to time (the prompt's step makes "
       "the first token): at least 2\n"},
      {"llama-2-70b,h200x8-hgx,512,1,12.5,196,54,2",
       ":2:30: column 'token_size': '12.5' is not a positive integer (of at most 2^53)\n"},
      {"llama-2-70b,h200x8-hgx,1e13,1,128,196,54,2",
       ":2:1: a step of 1e+13 tokens (sequences x tokens each): at most 1e+12\n"},
      {NULL, ": no static batch to compare\n"},
      {"bloom-176b,h200x8-hgx,512,1,128,196,54,2",
       ": no static batch to compare: 1 row skipped: 1 of bloom-176b (unknown model)\n"},
  };
  g_autofree char *dir = ema_test_temp_dir();
  g_autofree char *path = g_build_filename(dir, "perf.csv", NULL);
  for (guint i = 0; i < G_N_ELEMENTS(cases); i++) {
    g_autofree char *text = g_strconcat("model,hardware,prompt_size,batch_size,token_size,"
                                        "prompt_time,token_time,tensor_parallel\n",
                                        cases[i].row ? cases[i].row : "", "\n", NULL);
    g_autofree char *want = g_strconcat(path, cases[i].want, NULL);
    g_autoptr(EmaTestRun) run = NULL;
    g_assert_true(g_file_set_contents(path, text, -1, NULL));
    run = ema_test_cli("compare-static", path, NULL);
    g_assert_cmpint(run->status, ==, 1);
    g_assert_cmpstr(run->err, ==, want);
    g_assert_cmpstr(run->out, ==, "");
  }
  ema_test_remove_tree(dir);
}

/* compare-static: a model or server whose file is there but does not load is an error at the
 * row's field naming the file and what is wrong in it, not a row skipped as if no such model
 * or server existed (an unknown name is still a skip: test_compare_static_errors). */
static void test_compare_static_broken_files(void) {
  static const struct {
    const char *var, *file, *text, *field, *want; /* the error: FIELD: the file's path, WANT */
  } cases[] = {
      {"EMA_LLM_PATH", "llama-2-70b.yaml", "name: llama-2-70b\nlayers: many\n",
       ":2:1: ", ":2:9: layers: 'many' is not a number\n"},
      {"EMA_HWMODEL_PATH", "h200x8-hgx.yaml", "name: h200x8-hgx\ngpus: [\n",
       ":2:13: ", ":3:1: did not find expected node content while parsing a flow node\n"},
  };
  g_autofree char *dir = ema_test_temp_dir();
  g_autofree char *path = g_build_filename(dir, "perf.csv", NULL);
  g_assert_true(g_file_set_contents(path,
                                    "model,hardware,prompt_size,batch_size,token_size,"
                                    "prompt_time,token_time,tensor_parallel\n"
                                    "llama-2-70b,h200x8-hgx,512,1,128,196,54,2\n",
                                    -1, NULL));
  for (guint i = 0; i < G_N_ELEMENTS(cases); i++) {
    g_autofree char *models = g_build_filename(dir, cases[i].var, NULL);
    g_autofree char *file = g_build_filename(models, cases[i].file, NULL);
    g_autofree char *edit = g_strconcat(cases[i].var, "=", models, NULL);
    g_autofree char *want = g_strconcat(path, cases[i].field, file, cases[i].want, NULL);
    const char *const edits[] = {edit, NULL};
    g_autoptr(EmaTestRun) run = NULL;
    g_assert_cmpint(g_mkdir_with_parents(models, 0755), ==, 0);
    g_assert_true(g_file_set_contents(file, cases[i].text, -1, NULL));
    run = ema_test_cli_env(edits, "compare-static", path, NULL);
    g_assert_cmpint(run->status, ==, 1);
    g_assert_cmpstr(run->err, ==, want);
    g_assert_cmpstr(run->out, ==, "");
  }
  ema_test_remove_tree(dir);
}

/* compare-steps and compare-static: -o naming a directory is a usage error before any work. */
static void test_compare_output_dir(void) {
  g_autofree char *dir = ema_test_temp_dir();
  g_autofree char *want = g_strdup_printf("-o: '%s' is a directory: give the table's file", dir);
  usage_error(ema_test_cli("compare-steps", "tests/no-such-steps.csv", "-o", dir, NULL), want);
  usage_error(ema_test_cli("compare-static", "tests/no-such-perf.csv", "-o", dir, NULL), want);
  ema_test_remove_tree(dir);
}

/* An entry of a model path that is no folder is said once on stderr (names fell through it to
 * the next folder without a word); the listing goes on from the others. */
static void test_model_path_not_folder(void) {
  const char *edits[] = {"EMA_LLM_PATH=/nonexistent-ema-llms", NULL};
  g_autoptr(EmaTestRun) run = ema_test_cli_env(edits, "list", "llms", NULL);
  ema_test_assert_contains(run->out, "llama-3.1-8b");
  g_assert_cmpint(run->status, ==, 0);
  g_assert_cmpstr(run->err, ==,
                  "ema: warning: EMA_LLM_PATH: /nonexistent-ema-llms is not a folder: nothing is "
                  "found there\n");
}

/* --set of a comparison's or a sweep file's own key on a file of one run names what the key is
 * (it was "an unknown key in experiment", the key being one, of another kind of file). */
static void test_set_other_kind_key(void) {
  const char *keys[] = {"repeats=3", "compare.a.seed=2", "sweep.seed=[1, 2]"};
  for (guint i = 0; i < G_N_ELEMENTS(keys); i++) {
    g_autofree char *key = g_strndup(keys[i], strcspn(keys[i], "=."));
    g_autofree char *want = g_strdup_printf(
        "--set:1:1: %s: a key of a comparison (compare:) or of a sweep file, which "
        "tests/fixtures/serving/one-request.yaml is not: add compare: to it, or write a sweep "
        "file (ema-sim sweep)\n",
        key);
    g_autoptr(EmaTestRun) run =
        ema_test_cli("check", "tests/fixtures/serving/one-request.yaml", "--set", keys[i], NULL);
    ema_test_assert_failed(run, 1, want);
  }
}

/* compare-steps and compare-static: -o naming the table the command reads is a usage error
 * that leaves it as it was; so is -o naming a symbolic link or a FIFO (as ema-validate
 * calibrate -o refuses them: the table, written beside and renamed over, put a regular file in
 * place of /dev/full as root, and of a link), before any work. */
static void test_compare_output_file(void) {
  g_autofree char *dir = ema_test_temp_dir();
  g_autofree char *steps = g_build_filename(dir, "steps.csv", NULL);
  g_autofree char *perf = g_build_filename(dir, "perf.csv", NULL);
  g_autofree char *link = g_build_filename(dir, "link.csv", NULL);
  g_autofree char *fifo = g_build_filename(dir, "fifo", NULL);
  const char *table = "model,tp,phase,batch,context,chunk,prior_context,time_us\n"
                      "llama-3.1-8b,1,decode,8,1000,0,0,100\n";
  g_autofree char *text = NULL;
  g_autofree char *want =
      g_strdup_printf("-o: '%s' is the table this command reads: give another file", steps);
  g_autofree char *want_perf =
      g_strdup_printf("-o: '%s' is the table this command reads: give another file", perf);
  g_autofree char *want_link = g_strdup_printf(
      "-o: '%s' is a symbolic link, not a file the table can replace: give the table's file", link);
  g_autofree char *want_fifo = g_strdup_printf(
      "-o: '%s' is a FIFO, not a file the table can replace: give the table's file", fifo);
  g_assert_true(g_file_set_contents(steps, table, -1, NULL));
  g_assert_true(g_file_set_contents(perf, "not read\n", -1, NULL));
  g_assert_cmpint(symlink(steps, link), ==, 0);
  g_assert_cmpint(mkfifo(fifo, 0600), ==, 0);
  usage_error(ema_test_cli("compare-steps", steps, "-o", steps, NULL), want);
  usage_error(ema_test_cli("compare-static", perf, "-o", perf, NULL), want_perf);
  usage_error(ema_test_cli("compare-steps", steps, "-o", link, NULL), want_link);
  usage_error(ema_test_cli("compare-static", perf, "-o", fifo, NULL), want_fifo);
  {
    /* a run's own files, and files in a folder its marker lists (a variant's), are refused: a
     * later run there replaces or removes them; a file of another name beside them is not */
    g_autofree char *run = g_build_filename(dir, "run", NULL);
    g_autofree char *variant = g_build_filename(run, "ema", NULL);
    g_autofree char *marker = g_build_filename(run, ".ema-output", NULL);
    g_autofree char *summary = g_build_filename(run, "summary.json", NULL);
    g_autofree char *inside = g_build_filename(variant, "steps-compared.csv", NULL);
    g_autofree char *beside = g_build_filename(run, "steps-compared.csv", NULL);
    g_autofree char *real = NULL, *want_summary = NULL, *want_inside = NULL;
    g_assert_cmpint(g_mkdir_with_parents(variant, 0755), ==, 0);
    g_assert_true(g_file_set_contents(marker, "# kind: run\nsummary.json\nema\n", -1, NULL));
    g_assert_true(g_file_set_contents(summary, "{}", -1, NULL));
    real = realpath(run, NULL);
    want_summary = g_strdup_printf("-o: '%s' is an output of ema-sim run (%s/.ema-output lists "
                                   "summary.json), which a later run of it replaces or removes: "
                                   "give another -o",
                                   summary, real);
    want_inside = g_strdup_printf("-o: '%s' is an output of ema-sim run (%s/.ema-output lists "
                                  "ema), which",
                                  inside, real);
    usage_error(ema_test_cli("compare-steps", steps, "-o", summary, NULL), want_summary);
    usage_error(ema_test_cli("compare-steps", steps, "-o", inside, NULL), want_inside);
    {
      g_autoptr(EmaTestRun) ok = ema_test_cli("compare-steps", steps, "-o", beside, NULL);
      ema_test_assert_ok(ok);
    }
    g_assert_false(g_file_test(inside, G_FILE_TEST_EXISTS));
    g_assert_true(g_file_test(beside, G_FILE_TEST_IS_REGULAR));
    g_assert_true(g_file_get_contents(summary, &text, NULL, NULL));
    g_assert_cmpstr(text, ==, "{}");
    g_clear_pointer(&text, g_free);
  }
  g_assert_true(g_file_get_contents(steps, &text, NULL, NULL));
  g_assert_cmpstr(text, ==, table);
  g_assert_true(g_file_test(link, G_FILE_TEST_IS_SYMLINK));
  g_assert_false(g_file_test(fifo, G_FILE_TEST_IS_REGULAR));
  ema_test_remove_tree(dir);
}

/* compare-steps of PATH holding HEADER and ROW on SERVER fails with one line, WANT after the
 * path, and prints no table. */
static void assert_steps_row_refused(const char *path, const char *header, const char *row,
                                     const char *server, const char *want) {
  g_autofree char *text = g_strconcat(header, row, "\n", NULL);
  g_autofree char *line = g_strconcat(path, want, NULL);
  g_autoptr(EmaTestRun) run = NULL;
  g_assert_true(g_file_set_contents(path, text, -1, NULL));
  run = ema_test_cli("compare-steps", path, "--server", server, NULL);
  g_assert_cmpint(run->status, ==, 1);
  g_assert_cmpstr(run->err, ==, line);
  g_assert_cmpstr(run->out, ==, "");
}

/* compare-steps refuses a captured step no GPU could have run: a decoding sequence with no
 * cached token, a negative or NaN spread, fewer than one repeat; each error is one line at
 * the field, and the rows around it (a prefill row's unused context of 0) still compare. */
static void test_compare_steps_errors(void) {
  static const struct {
    const char *row, *want;
  } cases[] = {
      {"llama-3.1-8b,1,decode,8,0,0,0,100,1,5",
       ":2:25: column 'context': '0' is not a positive integer (of at most 2^53)\n"},
      {"llama-3.1-8b,1,mixed,8,0,512,1024,100,1,5",
       ":2:24: column 'context': '0' is not a positive integer (of at most 2^53)\n"},
      {"llama-3.1-8b,1,decode,8,1000,0,0,100,-1,5",
       ":2:38: column 'std_us': '-1' is not a non-negative number\n"},
      {"llama-3.1-8b,1,decode,8,1000,0,0,100,nan,5",
       ":2:38: column 'std_us': 'nan' is not a non-negative number\n"},
      {"llama-3.1-8b,1,decode,8,1000,0,0,100,1,0",
       ":2:40: column 'repeats': '0' is not a positive integer (of at most 2^53)\n"},
  };
  const char *header = "model,tp,phase,batch,context,chunk,prior_context,time_us,std_us,repeats\n";
  g_autofree char *dir = ema_test_temp_dir();
  g_autofree char *path = g_build_filename(dir, "steps.csv", NULL);
  g_autofree char *good = g_strconcat(header,
                                      "llama-3.1-8b,1,decode,8,1,0,0,100,0,1\n"
                                      "llama-3.1-8b,1,prefill,0,0,512,1024,100,1.5,5\n",
                                      NULL);
  g_autoptr(EmaTestRun) run = NULL;
  g_assert_true(g_file_set_contents(path, good, -1, NULL));
  run = ema_test_cli("compare-steps", path, "--server", "h200x8-hgx", NULL);
  ema_test_assert_ok(run);
  ema_test_assert_contains(run->out, "llama-3.1-8b,1,decode,8,1,0,0,100.000,");
  /* a header alone compares nothing: an error, never "0.0% over 0 rows" */
  {
    g_autofree char *want =
        g_strconcat(path, ": no steps (the header and no row) to compare\n", NULL);
    g_assert_true(g_file_set_contents(path, header, -1, NULL));
    g_clear_pointer(&run, ema_test_run_free);
    run = ema_test_cli("compare-steps", path, "--server", "h200x8-hgx", NULL);
    g_assert_cmpint(run->status, ==, 1);
    g_assert_cmpstr(run->err, ==, want);
    g_assert_cmpstr(run->out, ==, "");
  }
  for (guint i = 0; i < G_N_ELEMENTS(cases); i++)
    assert_steps_row_refused(path, header, cases[i].row, "h200x8-hgx", cases[i].want);
  /* a step no GPU of the server could run: the model's weights leave no room for a KV cache
   * (Llama-2-70B at TP 2 on 40 GB A100s), as step-time refuses it, at the row's tp */
  assert_steps_row_refused(path, header, "llama-2-70b,2,decode,1,1024,0,0,8898.9,0,1",
                           "a100x4-40gb",
                           ":2:13: llama-2-70b does not fit with tp 2 on A100-SXM4-40GB: 39.5 GiB "
                           "of HBM per GPU (gpu_memory_utilization 100%) leaves no KV cache after "
                           "64.2 GiB of weights and 0 B of activation reserve\n");
  ema_test_remove_tree(dir);
}

/* A gnuplot named by EMA_GNUPLOT that is not there is named, not taken for gnuplot missing from
 * PATH. */
static void test_plot_gnuplot_missing(void) {
  const char *const edits[] = {"EMA_GNUPLOT=/nonexistent/gnuplot", NULL};
  g_autoptr(EmaTestRun) run = ema_test_cli_env(edits, "plot", "/nonexistent-dir", NULL);
  ema_test_assert_failed(run, 1,
                         "ema-sim plot: EMA_GNUPLOT=/nonexistent/gnuplot is not a program on PATH "
                         "(install gnuplot-nox)\n");
}

/* What goes to standard output and is not written (a full disk: /dev/full) fails the command,
 * saying why: a table lost is not a success. */
static void test_stdout_full(void) {
  g_autofree char *command = NULL;
  const char *argv[] = {"/bin/sh", "-c", NULL, NULL};
  g_autoptr(EmaTestRun) run = NULL;
  if (!g_file_test("/dev/full", G_FILE_TEST_EXISTS)) {
    g_test_skip("no /dev/full");
    return;
  }
  command = g_strdup_printf("'%s' list llms > /dev/full", ema_test_sim_path());
  argv[2] = command;
  run = ema_test_cli_argv(argv, NULL);
  g_assert_cmpint(run->status, ==, 1);
  g_assert_cmpstr(run->err, ==, "ema-sim: writing to standard output: No space left on device\n");
}

int main(int argc, char **argv) {
  g_test_init(&argc, &argv, NULL);
  ema_test_sim_path();

  g_test_add_func("/cli/help", test_help);
  g_test_add_func("/cli/version", test_version);
  g_test_add_func("/cli/usage-errors", test_usage_errors);
  g_test_add_func("/cli/unknown-command", test_unknown_command);
  g_test_add_func("/cli/run/baseline", test_run_baseline);
  g_test_add_func("/cli/run/seed", test_run_seed);
  g_test_add_func("/cli/run/seed-negative", test_run_seed_negative);
  g_test_add_func("/cli/run/set", test_run_set);
  g_test_add_func("/cli/run/missed-expectation", test_run_missed_expectation);
  g_test_add_func("/cli/option-twice", test_option_twice);
  g_test_add_func("/cli/set-key-twice", test_set_key_twice);
  g_test_add_func("/cli/check", test_check);
  g_test_add_func("/cli/list", test_list);
  g_test_add_func("/cli/describe", test_describe);
  g_test_add_func("/cli/check-tp-warning", test_check_tp_warning);
  for (guint i = 0; i < G_N_ELEMENTS(bad_inputs); i++) {
    g_autofree char *name = g_strndup(bad_inputs[i].file, strlen(bad_inputs[i].file) - 5);
    g_autofree char *path = g_strconcat("/cli/bad-input/", name, NULL);
    g_test_add_data_func(path, &bad_inputs[i], test_bad_input);
  }
  g_test_add_func("/cli/set-errors", test_set_errors);
  g_test_add_func("/cli/set-unknown-key", test_set_unknown_key);
  g_test_add_func("/cli/missing-file", test_missing_file);
  g_test_add_func("/cli/error-prefix", test_error_prefix);
  g_test_add_func("/cli/step-time", test_step_time);
  g_test_add_func("/cli/step-time/inputs", test_step_time_inputs);
  g_test_add_func("/cli/step-time/sums", test_step_time_sums);
  g_test_add_func("/cli/step-time/chunks", test_step_time_chunks);
  g_test_add_func("/cli/step-time/counts", test_step_time_counts);
  g_test_add_func("/cli/step-time/bytes", test_step_time_bytes);
  g_test_add_func("/cli/step-time/context", test_step_time_context);
  g_test_add_func("/cli/step-time/fit", test_step_time_fit);
  g_test_add_func("/cli/compare-steps/errors", test_compare_steps_errors);
  g_test_add_func("/cli/compare-static/errors", test_compare_static_errors);
  g_test_add_func("/cli/compare-static/broken-files", test_compare_static_broken_files);
  g_test_add_func("/cli/compare-output-dir", test_compare_output_dir);
  g_test_add_func("/cli/compare-output-file", test_compare_output_file);
  g_test_add_func("/cli/set-other-kind-key", test_set_other_kind_key);
  g_test_add_func("/cli/model-path-not-folder", test_model_path_not_folder);
  g_test_add_func("/cli/engines", test_engines);
  g_test_add_func("/cli/stdout-full", test_stdout_full);
  g_test_add_func("/cli/plot-gnuplot-missing", test_plot_gnuplot_missing);
  return g_test_run();
}
