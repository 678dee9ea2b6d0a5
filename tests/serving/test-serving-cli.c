/* test-serving-cli.c: serving experiments through the ema-sim program (its
 * path in EMA_SIM, run in EMA_SOURCE_ROOT): `check` and `run` output for
 * serving files (the per-tenant table, a TP group's GPU range), determinism
 * of every output file across runs (summary.json up to sim.wall_s), --seed
 * and --set changing the results, requests_csv: false, an output directory
 * that cannot be made, and every bad file in tests/fixtures/serving/errors/
 * as one "path:line:col: ..." line on stderr with exit status 1 and nothing
 * written. */
#include <string.h>

#include <glib/gstdio.h>
#include <json-glib/json-glib.h>

#include "testutil.h"

#define FIXTURES "tests/fixtures/serving/"
#define GOLDEN FIXTURES "golden.yaml"
#define INVARIANTS FIXTURES "invariants.yaml"

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
  g_autoptr(EmaTestRun) golden = ema_test_cli("check", GOLDEN, NULL);
  g_autoptr(EmaTestRun) invariants = ema_test_cli("check", INVARIANTS, NULL);
  g_autoptr(EmaTestRun) set = ema_test_cli("check", GOLDEN, "--set", "server=h200x8-hgx", NULL);
  ema_test_assert_ok(golden);
  g_assert_cmpstr(golden->out, ==, GOLDEN ": ok (golden on h200x2, 2 tenants)\n");
  ema_test_assert_ok(invariants);
  g_assert_cmpstr(invariants->out, ==, INVARIANTS ": ok (invariants on h200x8-hgx, 4 tenants)\n");
  ema_test_assert_ok(set);
  g_assert_cmpstr(set->out, ==, GOLDEN ": ok (golden on h200x8-hgx, 2 tenants)\n");
}

static void test_run_table(void) {
  g_autofree char *dir = ema_test_temp_dir();
  g_autofree char *results = g_strdup_printf(
      "results in %s/ (summary.json, tenants.csv, requests.csv, timeline.csv, resolved.yaml)", dir);
  g_autoptr(EmaTestRun) run = ema_test_cli("run", GOLDEN, "-o", dir, NULL);
  g_auto(GStrv) lines = NULL;
  g_autofree char *summary = NULL;
  g_autoptr(JsonNode) root = NULL;
  ema_test_assert_ok(run);
  lines = g_strsplit(run->out, "\n", -1);
  g_assert_cmpuint(g_strv_length(lines), ==, 9); /* eight lines and the empty end */
  g_assert_cmpstr(lines[0], ==, "golden on h200x2 (2 GPUs)");
  g_assert_cmpstr(lines[1], ==,
                  "tenant  gpus model               done   left     tok/s     TTFT p50/p99 ms   "
                  "TPOT p50/p99 ms E2E p99 s preempt KV use");
  g_assert_true(g_str_has_prefix(lines[2], "chat       0 llama-3.1-8b    "));
  g_assert_true(g_str_has_prefix(lines[3], "code       1 mistral-7b-v0.1 "));
  /* each tenant's fidelity (two engine profiles: two lines; the test environment's validation
   * table, hwmodels/fidelity.yaml, has no H200 row) */
  g_assert_cmpstr(lines[4], ==,
                  "fidelity chat: unvalidated: no real runs of h200-sxm, TP 1, 16-bit weights, "
                  "16-bit KV, test-v1");
  g_assert_cmpstr(lines[5], ==,
                  "fidelity code: unvalidated: no real runs of h200-sxm, TP 1, 16-bit weights, "
                  "16-bit KV, vllm-v1");
  g_assert_true(g_str_has_prefix(lines[6], "simulated "));
  g_assert_cmpstr(lines[7], ==, results);
  g_assert_cmpstr(lines[8], ==, "");
  /* the table's done and left columns are summary.json's figures */
  summary = ema_test_read_file(dir, "summary.json");
  root = ema_test_parse_json(summary);
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
  ema_test_remove_tree(dir);
}

/* A TP group shows as its GPU range; names wider than "tenant" widen the
 * first column. */
static void test_run_tp_table(void) {
  g_autofree char *dir = ema_test_temp_dir();
  g_autoptr(EmaTestRun) run = ema_test_cli("run", INVARIANTS, "-o", dir, NULL);
  ema_test_assert_ok(run);
  g_assert_nonnull(strstr(run->out, "\ntenant           gpus model "));
  g_assert_nonnull(strstr(run->out, "\ntight-recompute     0 llama-3.1-8b "));
  g_assert_nonnull(strstr(run->out, "\nbig               4-7 llama-3.1-70b "));
  ema_test_remove_tree(dir);
}

/* ---- determinism, --seed, --set -------------------------------------------- */

static void test_determinism(void) {
  static const char *const files[] = {"requests.csv", "timeline.csv", "resolved.yaml"};
  g_autofree char *dir = ema_test_temp_dir();
  g_autofree char *one = g_build_filename(dir, "one", NULL);
  g_autofree char *two = g_build_filename(dir, "two", NULL);
  g_autofree char *seeded = g_build_filename(dir, "seeded", NULL);
  g_autoptr(EmaTestRun) run1 = ema_test_cli("run", INVARIANTS, "-o", one, NULL);
  g_autoptr(EmaTestRun) run2 = ema_test_cli("run", INVARIANTS, "-o", two, NULL);
  g_autoptr(EmaTestRun) run3 = ema_test_cli("run", INVARIANTS, "--seed", "2", "-o", seeded, NULL);
  ema_test_assert_ok(run1);
  ema_test_assert_ok(run2);
  ema_test_assert_ok(run3);
  for (guint i = 0; i < G_N_ELEMENTS(files); i++) {
    g_autofree char *a = ema_test_read_file(one, files[i]);
    g_autofree char *b = ema_test_read_file(two, files[i]);
    g_assert_cmpuint(strlen(a), >, 100);
    if (strcmp(a, b) != 0)
      g_error("%s differs between two identical runs", files[i]);
  }
  {
    g_autofree char *a = ema_test_read_file(one, "summary.json");
    g_autofree char *b = ema_test_read_file(two, "summary.json");
    g_autofree char *a_rest = ema_test_summary_without_wall(a);
    g_autofree char *b_rest = ema_test_summary_without_wall(b);
    g_assert_cmpstr(a_rest, ==, b_rest);
  }
  /* another seed: other requests, and the seed in the outputs */
  {
    g_autofree char *a = ema_test_read_file(one, "requests.csv");
    g_autofree char *c = ema_test_read_file(seeded, "requests.csv");
    g_autofree char *resolved = ema_test_read_file(seeded, "resolved.yaml");
    g_autofree char *summary = ema_test_read_file(seeded, "summary.json");
    g_autoptr(JsonNode) root = ema_test_parse_json(summary);
    g_assert_cmpstr(a, !=, c);
    g_assert_nonnull(strstr(resolved, "\nseed: 2\n"));
    g_assert_cmpint(json_object_get_int_member(json_node_get_object(root), "seed"), ==, 2);
  }
  ema_test_remove_tree(dir);
}

static void test_set(void) {
  g_autofree char *dir = ema_test_temp_dir();
  g_autofree char *base = g_build_filename(dir, "base", NULL);
  g_autofree char *faster = g_build_filename(dir, "faster", NULL);
  g_autofree char *quiet = g_build_filename(dir, "quiet", NULL);
  g_autofree char *no_requests = g_build_filename(quiet, "requests.csv", NULL);
  g_autoptr(EmaTestRun) run1 = ema_test_cli("run", GOLDEN, "-o", base, NULL);
  g_autoptr(EmaTestRun) run2 =
      ema_test_cli("run", GOLDEN, "--set", "tenants.0.trace.rate=20", "-o", faster, NULL);
  g_autoptr(EmaTestRun) run3 =
      ema_test_cli("run", GOLDEN, "--set", "requests_csv=false", "-o", quiet, NULL);
  g_autofree char *requests1 = NULL, *requests2 = NULL, *resolved2 = NULL;
  g_autofree char *summary1 = NULL, *summary2 = NULL, *summary3 = NULL;
  g_autoptr(JsonNode) root1 = NULL, root2 = NULL;
  ema_test_assert_ok(run1);
  ema_test_assert_ok(run2);
  ema_test_assert_ok(run3);
  requests1 = ema_test_read_file(base, "requests.csv");
  requests2 = ema_test_read_file(faster, "requests.csv");
  resolved2 = ema_test_read_file(faster, "resolved.yaml");
  g_assert_cmpstr(requests1, !=, requests2);
  g_assert_nonnull(strstr(resolved2, "\n      rate: 20\n"));
  /* the same 30 requests arrive four times as fast: the span shrinks */
  summary1 = ema_test_read_file(base, "summary.json");
  summary2 = ema_test_read_file(faster, "summary.json");
  root1 = ema_test_parse_json(summary1);
  root2 = ema_test_parse_json(summary2);
  g_assert_cmpint(tenant_int(root2, 0, "completed"), ==, 30);
  g_assert_cmpfloat(tenant_double(root2, 0, "req_per_s"), >,
                    1.3 * tenant_double(root1, 0, "req_per_s"));
  /* requests_csv: false leaves requests.csv out, nothing else */
  g_assert_false(g_file_test(no_requests, G_FILE_TEST_EXISTS));
  summary3 = ema_test_read_file(quiet, "summary.json");
  g_assert_nonnull(strstr(run3->out, "results in "));
  {
    g_autofree char *a = ema_test_summary_without_wall(summary1);
    g_autofree char *b = ema_test_summary_without_wall(summary3);
    g_assert_cmpstr(a, ==, b);
  }
  ema_test_remove_tree(dir);
}

/* -o through a regular file: the directory cannot be made (even by root). */
static void test_unwritable_output(void) {
  g_autofree char *dir = ema_test_temp_dir();
  g_autofree char *blocker = g_build_filename(dir, "file", NULL);
  g_autofree char *out = g_build_filename(blocker, "out", NULL);
  g_autofree char *prefix = NULL;
  GError *error = NULL;
  g_file_set_contents(blocker, "not a directory\n", -1, &error);
  g_assert_no_error(error);
  prefix = g_strdup_printf("cannot create output directory %s: ", out);
  {
    g_autoptr(EmaTestRun) run = ema_test_cli("run", GOLDEN, "-o", out, NULL);
    ema_test_assert_error_line(run, prefix);
  }
  /* -o naming the regular file itself */
  {
    g_autofree char *prefix_file = g_strdup_printf("cannot create output directory %s: ", blocker);
    g_autoptr(EmaTestRun) run = ema_test_cli("run", GOLDEN, "-o", blocker, NULL);
    ema_test_assert_error_line(run, prefix_file);
  }
  ema_test_remove_tree(dir);
}

/* ---- bad files -------------------------------------------------------------- */

static void test_bad_file(gconstpointer data) {
  const char *name = data;
  g_autofree char *file = g_strconcat(FIXTURES "errors/", name, NULL);
  g_autofree char *prefix = g_strconcat(file, ":", NULL);
  g_autofree char *dir = ema_test_temp_dir();
  g_autofree char *out = g_build_filename(dir, "out", NULL);
  g_autoptr(EmaTestRun) check = ema_test_cli("check", file, NULL);
  g_autoptr(EmaTestRun) run = ema_test_cli("run", file, "-o", out, NULL);
  g_autoptr(GRegex) located = g_regex_new("^[^:]+:[0-9]+:[0-9]+: ", 0, 0, NULL);
  ema_test_assert_error_line(check, prefix);
  ema_test_assert_error_line(run, prefix);
  g_assert_cmpstr(check->err, ==, run->err);
  g_assert_true(g_regex_match(located, check->err, 0, NULL));
  /* nothing is written for an experiment that does not load */
  g_assert_false(g_file_test(out, G_FILE_TEST_EXISTS));
  g_rmdir(dir);
}

int main(int argc, char **argv) {
  g_autoptr(GPtrArray) bad_files = NULL;
  g_autofree char *errors = NULL;

  g_test_init(&argc, &argv, NULL);
  ema_test_sim_path();
  g_assert_nonnull(g_getenv("EMA_SOURCE_ROOT"));
  errors = g_build_filename(g_getenv("EMA_SOURCE_ROOT"), FIXTURES "errors", NULL);
  bad_files = ema_test_list_dir(errors, ".yaml");
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
