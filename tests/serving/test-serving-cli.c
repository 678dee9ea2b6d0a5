/* test-serving-cli.c: serving experiments through the ema-sim program (its
 * path in EMA_SIM, run in EMA_SOURCE_ROOT): `check` and `run` output for
 * serving files (the per-tenant table, a TP group's GPU range), determinism
 * of every output file across runs (summary.json up to sim.wall_s), --seed
 * and --set changing the results, requests_csv: false, an output directory
 * that cannot be made, and every bad file in tests/fixtures/serving/errors/
 * as one "path:line:col: ..." line on stderr with exit status 1 and nothing
 * written. */
#include <string.h>
#include <sys/wait.h>

#include <glib/gstdio.h>
#include <json-glib/json-glib.h>

#define FIXTURES "tests/fixtures/serving/"
#define GOLDEN FIXTURES "golden.yaml"
#define INVARIANTS FIXTURES "invariants.yaml"

typedef struct {
  int status; /* exit code */
  char *out;
  char *err;
} CliRun;

static void cli_run_free(CliRun *run) {
  g_free(run->out);
  g_free(run->err);
  g_free(run);
}

G_DEFINE_AUTOPTR_CLEANUP_FUNC(CliRun, cli_run_free)

static const char *ema_sim_path(void) {
  const char *path = g_getenv("EMA_SIM");
  if (path == NULL || !g_file_test(path, G_FILE_TEST_IS_EXECUTABLE))
    g_error("EMA_SIM must name the ema-sim executable (got %s)", path ? path : "nothing");
  return path;
}

/* Run ema-sim with ARGS (NULL-terminated) in the source root. */
static CliRun *cli(const char *first, ...) {
  g_autoptr(GPtrArray) argv = g_ptr_array_new();
  g_auto(GStrv) envp = g_get_environ();
  CliRun *run = g_new0(CliRun, 1);
  GError *error = NULL;
  int wait_status = 0;
  va_list args;

  g_ptr_array_add(argv, (gpointer) ema_sim_path());
  va_start(args, first);
  for (const char *arg = first; arg != NULL; arg = va_arg(args, const char *))
    g_ptr_array_add(argv, (gpointer) arg);
  va_end(args);
  g_ptr_array_add(argv, NULL);
  envp = g_environ_unsetenv(envp, "EMA_HWMODEL_PATH");

  if (!g_spawn_sync(g_getenv("EMA_SOURCE_ROOT"), (char **) argv->pdata, envp, G_SPAWN_DEFAULT, NULL,
                    NULL, &run->out, &run->err, &wait_status, &error))
    g_error("cannot run %s: %s", ema_sim_path(), error->message);
  g_assert_true(WIFEXITED(wait_status));
  run->status = WEXITSTATUS(wait_status);
  if (g_test_verbose())
    g_test_message("exit %d\nstdout: %s\nstderr: %s", run->status, run->out, run->err);
  return run;
}

/* TEXT with its newlines escaped, so that a failure stays one TAP line. */
static char *escaped(const char *text) {
  g_auto(GStrv) lines = g_strsplit(text, "\n", -1);
  return g_strjoinv("\\n", lines);
}

/* A successful run: exit 0 and nothing on stderr. */
static void assert_ok(const CliRun *run) {
  if (run->status != 0 || run->err[0] != '\0') {
    g_autofree char *e = escaped(run->err);
    g_error("exit %d, stderr '%s'", run->status, e);
  }
}

/* A failed run: exit 1, nothing on stdout, stderr exactly one line that
 * starts with PREFIX. */
static void assert_error_line(const CliRun *run, const char *prefix) {
  gsize len = strlen(run->err);
  g_autofree char *e = escaped(run->err);
  if (run->status != 1)
    g_error("exit %d, expected 1 (stderr: %s)", run->status, e);
  if (len == 0 || run->err[len - 1] != '\n' || strchr(run->err, '\n') != run->err + len - 1)
    g_error("expected exactly one line on stderr, got '%s'", e);
  if (!g_str_has_prefix(run->err, prefix))
    g_error("stderr '%s' does not start with '%s'", e, prefix);
  g_assert_cmpstr(run->out, ==, "");
}

static char *temp_dir(void) {
  GError *error = NULL;
  char *dir = g_dir_make_tmp("ema-serving-cli-XXXXXX", &error);
  g_assert_no_error(error);
  return dir;
}

static void remove_tree(const char *dir) {
  g_autoptr(GDir) d = g_dir_open(dir, 0, NULL);
  const char *name;
  while (d && (name = g_dir_read_name(d)) != NULL) {
    g_autofree char *path = g_build_filename(dir, name, NULL);
    if (g_file_test(path, G_FILE_TEST_IS_DIR))
      remove_tree(path);
    else
      g_remove(path);
  }
  g_rmdir(dir);
}

static char *read_text(const char *dir, const char *name) {
  g_autofree char *path = g_build_filename(dir, name, NULL);
  char *text = NULL;
  GError *error = NULL;
  g_file_get_contents(path, &text, NULL, &error);
  g_assert_no_error(error);
  return text;
}

/* TEXT without its line that holds "wall_s". */
static char *without_wall_line(const char *text) {
  g_auto(GStrv) lines = g_strsplit(text, "\n", -1);
  GString *out = g_string_new(NULL);
  guint found = 0;
  for (guint i = 0; lines[i]; i++) {
    if (strstr(lines[i], "\"wall_s\"")) {
      found++;
      continue;
    }
    g_string_append(out, lines[i]);
    g_string_append_c(out, '\n');
  }
  g_assert_cmpuint(found, ==, 1);
  return g_string_free(out, FALSE);
}

static JsonNode *parse_json(const char *text) {
  g_autoptr(JsonParser) parser = json_parser_new();
  GError *error = NULL;
  json_parser_load_from_data(parser, text, -1, &error);
  g_assert_no_error(error);
  return json_node_copy(json_parser_get_root(parser));
}

static gint64 tenant_int(JsonNode *root, guint i, const char *member) {
  JsonArray *tenants = json_object_get_array_member(json_node_get_object(root), "tenants");
  return json_object_get_int_member(json_array_get_object_element(tenants, i), member);
}

static double tenant_double(JsonNode *root, guint i, const char *member) {
  JsonArray *tenants = json_object_get_array_member(json_node_get_object(root), "tenants");
  return json_object_get_double_member(json_array_get_object_element(tenants, i), member);
}

/* ---- check and run -------------------------------------------------------- */

static void test_check(void) {
  g_autoptr(CliRun) golden = cli("check", GOLDEN, NULL);
  g_autoptr(CliRun) invariants = cli("check", INVARIANTS, NULL);
  g_autoptr(CliRun) set = cli("check", GOLDEN, "--set", "server=h200x8-hgx", NULL);
  assert_ok(golden);
  g_assert_cmpstr(golden->out, ==, GOLDEN ": ok (golden on h200x2, 2 tenants)\n");
  assert_ok(invariants);
  g_assert_cmpstr(invariants->out, ==, INVARIANTS ": ok (invariants on h200x8-hgx, 4 tenants)\n");
  assert_ok(set);
  g_assert_cmpstr(set->out, ==, GOLDEN ": ok (golden on h200x8-hgx, 2 tenants)\n");
}

static void test_run_table(void) {
  g_autofree char *dir = temp_dir();
  g_autofree char *results = g_strdup_printf(
      "results in %s/ (summary.json, requests.csv, timeline.csv, resolved.yaml)", dir);
  g_autoptr(CliRun) run = cli("run", GOLDEN, "-o", dir, NULL);
  g_auto(GStrv) lines = NULL;
  g_autofree char *summary = NULL;
  g_autoptr(JsonNode) root = NULL;
  assert_ok(run);
  lines = g_strsplit(run->out, "\n", -1);
  g_assert_cmpuint(g_strv_length(lines), ==, 7); /* six lines and the empty end */
  g_assert_cmpstr(lines[0], ==, "golden on h200x2 (2 GPUs)");
  g_assert_cmpstr(lines[1], ==,
                  "tenant  gpus model               done   left     tok/s     TTFT p50/p99 ms   "
                  "TPOT p50/p99 ms E2E p99 s preempt KV use");
  g_assert_true(g_str_has_prefix(lines[2], "chat       0 llama-3.1-8b    "));
  g_assert_true(g_str_has_prefix(lines[3], "code       1 mistral-7b-v0.1 "));
  g_assert_true(g_str_has_prefix(lines[4], "simulated "));
  g_assert_cmpstr(lines[5], ==, results);
  g_assert_cmpstr(lines[6], ==, "");
  /* the table's done and left columns are summary.json's figures */
  summary = read_text(dir, "summary.json");
  root = parse_json(summary);
  for (guint i = 0; i < 2; i++) {
    g_auto(GStrv) fields = g_strsplit_set(lines[2 + i], " ", -1);
    g_autoptr(GPtrArray) words = g_ptr_array_new();
    for (guint k = 0; fields[k]; k++)
      if (fields[k][0])
        g_ptr_array_add(words, fields[k]);
    g_assert_cmpuint(words->len, ==, 11);
    g_assert_cmpint(g_ascii_strtoll(words->pdata[3], NULL, 10), ==,
                    tenant_int(root, i, "completed"));
    g_assert_cmpint(g_ascii_strtoll(words->pdata[4], NULL, 10), ==,
                    tenant_int(root, i, "unfinished") + tenant_int(root, i, "rejected"));
    g_assert_cmpint(g_ascii_strtoll(words->pdata[9], NULL, 10), ==,
                    tenant_int(root, i, "preemptions"));
  }
  remove_tree(dir);
}

/* A TP group shows as its GPU range; names wider than "tenant" widen the
 * first column. */
static void test_run_tp_table(void) {
  g_autofree char *dir = temp_dir();
  g_autoptr(CliRun) run = cli("run", INVARIANTS, "-o", dir, NULL);
  assert_ok(run);
  g_assert_nonnull(strstr(run->out, "\ntenant           gpus model "));
  g_assert_nonnull(strstr(run->out, "\ntight-recompute     0 llama-3.1-8b "));
  g_assert_nonnull(strstr(run->out, "\nbig               4-7 llama-3.1-70b "));
  remove_tree(dir);
}

/* ---- determinism, --seed, --set -------------------------------------------- */

static void test_determinism(void) {
  static const char *const files[] = {"requests.csv", "timeline.csv", "resolved.yaml"};
  g_autofree char *dir = temp_dir();
  g_autofree char *one = g_build_filename(dir, "one", NULL);
  g_autofree char *two = g_build_filename(dir, "two", NULL);
  g_autofree char *seeded = g_build_filename(dir, "seeded", NULL);
  g_autoptr(CliRun) run1 = cli("run", INVARIANTS, "-o", one, NULL);
  g_autoptr(CliRun) run2 = cli("run", INVARIANTS, "-o", two, NULL);
  g_autoptr(CliRun) run3 = cli("run", INVARIANTS, "--seed", "2", "-o", seeded, NULL);
  assert_ok(run1);
  assert_ok(run2);
  assert_ok(run3);
  for (guint i = 0; i < G_N_ELEMENTS(files); i++) {
    g_autofree char *a = read_text(one, files[i]);
    g_autofree char *b = read_text(two, files[i]);
    g_assert_cmpuint(strlen(a), >, 100);
    if (strcmp(a, b) != 0)
      g_error("%s differs between two identical runs", files[i]);
  }
  {
    g_autofree char *a = read_text(one, "summary.json");
    g_autofree char *b = read_text(two, "summary.json");
    g_autofree char *a_rest = without_wall_line(a);
    g_autofree char *b_rest = without_wall_line(b);
    g_assert_cmpstr(a_rest, ==, b_rest);
  }
  /* another seed: other requests, and the seed in the outputs */
  {
    g_autofree char *a = read_text(one, "requests.csv");
    g_autofree char *c = read_text(seeded, "requests.csv");
    g_autofree char *resolved = read_text(seeded, "resolved.yaml");
    g_autofree char *summary = read_text(seeded, "summary.json");
    g_autoptr(JsonNode) root = parse_json(summary);
    g_assert_cmpstr(a, !=, c);
    g_assert_nonnull(strstr(resolved, "\nseed: 2\n"));
    g_assert_cmpint(json_object_get_int_member(json_node_get_object(root), "seed"), ==, 2);
  }
  remove_tree(dir);
}

static void test_set(void) {
  g_autofree char *dir = temp_dir();
  g_autofree char *base = g_build_filename(dir, "base", NULL);
  g_autofree char *faster = g_build_filename(dir, "faster", NULL);
  g_autofree char *quiet = g_build_filename(dir, "quiet", NULL);
  g_autofree char *no_requests = g_build_filename(quiet, "requests.csv", NULL);
  g_autoptr(CliRun) run1 = cli("run", GOLDEN, "-o", base, NULL);
  g_autoptr(CliRun) run2 =
      cli("run", GOLDEN, "--set", "tenants.0.trace.rate=20", "-o", faster, NULL);
  g_autoptr(CliRun) run3 = cli("run", GOLDEN, "--set", "requests_csv=false", "-o", quiet, NULL);
  g_autofree char *requests1 = NULL, *requests2 = NULL, *resolved2 = NULL;
  g_autofree char *summary1 = NULL, *summary2 = NULL, *summary3 = NULL;
  g_autoptr(JsonNode) root1 = NULL, root2 = NULL;
  assert_ok(run1);
  assert_ok(run2);
  assert_ok(run3);
  requests1 = read_text(base, "requests.csv");
  requests2 = read_text(faster, "requests.csv");
  resolved2 = read_text(faster, "resolved.yaml");
  g_assert_cmpstr(requests1, !=, requests2);
  g_assert_nonnull(strstr(resolved2, "\n      rate: 20\n"));
  /* the same 30 requests arrive four times as fast: the span shrinks */
  summary1 = read_text(base, "summary.json");
  summary2 = read_text(faster, "summary.json");
  root1 = parse_json(summary1);
  root2 = parse_json(summary2);
  g_assert_cmpint(tenant_int(root2, 0, "completed"), ==, 30);
  g_assert_cmpfloat(tenant_double(root2, 0, "req_per_s"), >,
                    1.5 * tenant_double(root1, 0, "req_per_s"));
  /* requests_csv: false leaves requests.csv out, nothing else */
  g_assert_false(g_file_test(no_requests, G_FILE_TEST_EXISTS));
  summary3 = read_text(quiet, "summary.json");
  g_assert_nonnull(strstr(run3->out, "results in "));
  {
    g_autofree char *a = without_wall_line(summary1);
    g_autofree char *b = without_wall_line(summary3);
    g_assert_cmpstr(a, ==, b);
  }
  remove_tree(dir);
}

/* -o through a regular file: the directory cannot be made (even by root). */
static void test_unwritable_output(void) {
  g_autofree char *dir = temp_dir();
  g_autofree char *blocker = g_build_filename(dir, "file", NULL);
  g_autofree char *out = g_build_filename(blocker, "out", NULL);
  g_autofree char *prefix = NULL;
  GError *error = NULL;
  g_file_set_contents(blocker, "not a directory\n", -1, &error);
  g_assert_no_error(error);
  prefix = g_strdup_printf("cannot create output directory %s: ", out);
  {
    g_autoptr(CliRun) run = cli("run", GOLDEN, "-o", out, NULL);
    assert_error_line(run, prefix);
  }
  /* -o naming the regular file itself */
  {
    g_autofree char *prefix_file = g_strdup_printf("cannot create output directory %s: ", blocker);
    g_autoptr(CliRun) run = cli("run", GOLDEN, "-o", blocker, NULL);
    assert_error_line(run, prefix_file);
  }
  remove_tree(dir);
}

/* ---- bad files -------------------------------------------------------------- */

static gint compare_names(gconstpointer a, gconstpointer b) {
  return strcmp(*(const char *const *) a, *(const char *const *) b);
}

static void test_bad_file(gconstpointer data) {
  const char *name = data;
  g_autofree char *file = g_strconcat(FIXTURES "errors/", name, NULL);
  g_autofree char *prefix = g_strconcat(file, ":", NULL);
  g_autofree char *dir = temp_dir();
  g_autofree char *out = g_build_filename(dir, "out", NULL);
  g_autoptr(CliRun) check = cli("check", file, NULL);
  g_autoptr(CliRun) run = cli("run", file, "-o", out, NULL);
  g_autoptr(GRegex) located = g_regex_new("^[^:]+:[0-9]+:[0-9]+: ", 0, 0, NULL);
  assert_error_line(check, prefix);
  assert_error_line(run, prefix);
  g_assert_cmpstr(check->err, ==, run->err);
  g_assert_true(g_regex_match(located, check->err, 0, NULL));
  /* nothing is written for an experiment that does not load */
  g_assert_false(g_file_test(out, G_FILE_TEST_EXISTS));
  g_rmdir(dir);
}

int main(int argc, char **argv) {
  g_autoptr(GPtrArray) bad_files = g_ptr_array_new_with_free_func(g_free);
  g_autofree char *errors = NULL;
  g_autoptr(GDir) dir = NULL;
  const char *name;

  g_test_init(&argc, &argv, NULL);
  ema_sim_path();
  g_assert_nonnull(g_getenv("EMA_SOURCE_ROOT"));
  errors = g_build_filename(g_getenv("EMA_SOURCE_ROOT"), FIXTURES "errors", NULL);
  dir = g_dir_open(errors, 0, NULL);
  g_assert_nonnull(dir);
  while ((name = g_dir_read_name(dir)) != NULL)
    if (g_str_has_suffix(name, ".yaml"))
      g_ptr_array_add(bad_files, g_strdup(name));
  g_ptr_array_sort(bad_files, compare_names);
  g_assert_cmpuint(bad_files->len, >=, 20);

  g_test_add_func("/serving-cli/check", test_check);
  g_test_add_func("/serving-cli/run/table", test_run_table);
  g_test_add_func("/serving-cli/run/tp-table", test_run_tp_table);
  g_test_add_func("/serving-cli/run/determinism-and-seed", test_determinism);
  g_test_add_func("/serving-cli/run/set", test_set);
  g_test_add_func("/serving-cli/run/unwritable-output", test_unwritable_output);
  for (guint i = 0; i < bad_files->len; i++) {
    const char *file = bad_files->pdata[i];
    g_autofree char *stem = g_strndup(file, strlen(file) - 5);
    g_autofree char *path = g_strconcat("/serving-cli/bad-file/", stem, NULL);
    g_test_add_data_func(path, file, test_bad_file);
  }
  return g_test_run();
}
