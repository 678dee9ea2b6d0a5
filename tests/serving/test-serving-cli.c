/* test-serving-cli.c: serving experiments through the ema-sim program (its
 * path in EMA_SIM, run in EMA_SOURCE_ROOT): `check` and `run` output for
 * serving files (the per-tenant table, a TP group's GPU range), determinism
 * of every output file across runs (summary.json up to sim.wall_s), --seed
 * and --set changing the results, requests_csv: false, an output directory
 * that cannot be made, a vLLM benchmark result replayed with its own load and
 * its measured figures printed, a closed loop without an arrival process, and every bad file in
 * tests/fixtures/serving/errors/ as one "path:line:col: ..." line on stderr with exit status 1 and
 * nothing written. */
#include <string.h>

#include <glib/gstdio.h>
#include <json-glib/json-glib.h>

#include "testutil.h"

#define FIXTURES "tests/fixtures/serving/"
#define GOLDEN FIXTURES "golden.yaml"
#define INVARIANTS FIXTURES "invariants.yaml"
/* the warning invariants.yaml's deliberately tight tenants give */
#define OVERLOADED "ema-sim: warning: tenant tight-"

static gint64 tenant_int(JsonNode *root, guint i, const char *member) {
  JsonArray *tenants = json_object_get_array_member(json_node_get_object(root), "tenants");
  return json_object_get_int_member(json_array_get_object_element(tenants, i), member);
}

static double tenant_double(JsonNode *root, guint i, const char *member) {
  JsonArray *tenants = json_object_get_array_member(json_node_get_object(root), "tenants");
  return json_object_get_double_member(json_array_get_object_element(tenants, i), member);
}

/* ---- vLLM benchmark results and closed loops ------------------------------- */

/* Write TEXT to DIR/NAME and run `ema-sim COMMAND DIR/NAME` (run: into DIR/out, no figures). */
static EmaTestRun *cli_on_text(const char *dir, const char *name, const char *text,
                               const char *command) {
  g_autofree char *yaml = g_build_filename(dir, name, NULL);
  g_autofree char *out = g_build_filename(dir, "out", NULL);
  g_assert_true(g_file_set_contents(yaml, text, -1, NULL));
  if (strcmp(command, "run") == 0)
    return ema_test_cli("run", yaml, "-o", out, "--no-plot", NULL);
  return ema_test_cli(command, yaml, NULL);
}

#define VLLM_REPLAY FIXTURES "vllm-replay.yaml"

static void test_vllm_replay(void) {
  g_autofree char *dir = ema_test_temp_dir();
  g_autofree char *out = g_build_filename(dir, "out", NULL);
  g_autoptr(EmaTestRun) run = ema_test_cli("run", VLLM_REPLAY, "-o", out, "--no-plot", NULL);
  g_autofree char *resolved = NULL;
  ema_test_assert_ok(run);
  /* sniffed as vLLM's (not Mooncake's JSON lines), replayed at its own rate and burstiness */
  resolved = ema_test_read_file(out, "resolved.yaml");
  ema_test_assert_contains(resolved, "format: vllm-bench");
  ema_test_assert_contains(resolved, "arrivals: gamma");
  ema_test_assert_contains(resolved, "rate: 4\n");
  ema_test_assert_contains(resolved, "cv: 1.41421"); /* burstiness 0.5: cv 1/sqrt(0.5) */
  /* vLLM's measured figures beside the simulated ones */
  ema_test_assert_contains(run->out, "bench: vLLM benchmark ");
  ema_test_assert_contains(run->out, "(request_rate 4, burstiness 0.5, max_concurrency none)");
  ema_test_assert_contains(run->out, "\n  mean_ttft_ms                31.20 ");
  ema_test_assert_contains(run->out, "\n  p99_tpot_ms                  8.02 ");
  ema_test_assert_contains(run->out, "\n  completed                   16.00        16.00    +0.0%");
  ema_test_remove_tree(dir);
}

/* "inf" sends everything at once; max_concurrency is the closed loop's clients */
static void test_vllm_concurrency(void) {
  g_autofree char *dir = ema_test_temp_dir();
  g_autofree char *fixture = ema_test_read_file(g_getenv("EMA_SOURCE_ROOT"),
                                                "tests/fixtures/traces/vllm-save-result.json");
  g_autoptr(GString) text = g_string_new(fixture);
  g_autofree char *json = g_build_filename(dir, "result.json", NULL);
  g_autofree char *out = g_build_filename(dir, "out", NULL);
  g_autofree char *resolved = NULL;
  g_autoptr(EmaTestRun) run = NULL;
  g_assert_cmpuint(g_string_replace(text,
                                    "\"request_rate\": 4.0, \"burstiness\": 0.5, "
                                    "\"max_concurrency\": null",
                                    "\"request_rate\": \"inf\", \"burstiness\": 1.0, "
                                    "\"max_concurrency\": 4",
                                    1),
                   ==, 1);
  g_assert_true(g_file_set_contents(json, text->str, -1, NULL));
  run = cli_on_text(dir, "exp.yaml",
                    "name: closed\nserver: h100x8-hgx\ntenants:\n"
                    "  - {name: b, model: llama-2-7b, gpu: 0, trace: {file: result.json}}\n",
                    "run");
  ema_test_assert_ok(run);
  resolved = ema_test_read_file(out, "resolved.yaml");
  ema_test_assert_contains(resolved, "arrivals: file");
  ema_test_assert_contains(resolved, "concurrency: 4\n");
  ema_test_assert_contains(run->out, "(request_rate inf, burstiness 1, max_concurrency 4)");
  ema_test_remove_tree(dir);
}

/* clients set a closed loop's pace: no arrival process is asked for */
static void test_closed_loop_without_arrivals(void) {
  g_autofree char *dir = ema_test_temp_dir();
  const char *head = "name: closed\nserver: h200x2\ntenants:\n"
                     "  - {name: b, model: llama-3.1-8b, gpu: 0, trace: {concurrency: 16, ";
  const char *lengths = "prompt: {dist: fixed, tokens: 100}, output: {dist: fixed, tokens: 20}}}\n";
  g_autofree char *good = g_strconcat(head, "requests: 50, ", lengths, NULL);
  g_autofree char *bad = g_strconcat(head, "duration: 5s, ", lengths, NULL);
  g_autoptr(EmaTestRun) run = cli_on_text(dir, "exp.yaml", good, "check");
  g_autoptr(EmaTestRun) refused = cli_on_text(dir, "endless.yaml", bad, "check");
  ema_test_assert_ok(run);
  /* every request arrives at once: only a request count ends it */
  g_assert_cmpint(refused->status, ==, 1);
  ema_test_assert_contains(refused->err, "endless.yaml:");
  ema_test_assert_contains(refused->err, "a closed loop without an arrival process never ends");
  ema_test_remove_tree(dir);
}

/* a tenant far past its capacity is named: its latencies are of the few
 * requests that completed */
static void test_overload_warning(void) {
  g_autofree char *dir = ema_test_temp_dir();
  g_autoptr(EmaTestRun) run = cli_on_text(
      dir, "over.yaml",
      "name: over\nserver: h200x2\nduration: 4s\ntenants:\n"
      "  - {name: flood, model: llama-3.1-8b, gpu: 0, trace: {arrivals: poisson, rate: 400, "
      "duration: 4s, prompt: {dist: fixed, tokens: 2000}, output: {dist: fixed, tokens: 400}}}\n"
      "  - {name: calm, model: llama-3.1-8b, gpu: 1, trace: {arrivals: poisson, rate: 1, "
      "duration: 3s, prompt: {dist: fixed, tokens: 200}, output: {dist: fixed, tokens: 20}}}\n",
      "run");
  g_assert_cmpint(run->status, ==, 0);
  ema_test_assert_contains(run->err, "ema-sim: warning: tenant flood: ");
  ema_test_assert_contains(run->err,
                           "past its capacity or cut by the run's end, its latencies are of the ");
  g_assert_null(strstr(run->err, "tenant calm"));
  ema_test_remove_tree(dir);
}

/* a borrow policy that takes far more than its prefetch plan admits is named;
 * held to the plan's limit (most-idle's within_limit), it is not */
static void test_idle_borrow_warning(void) {
  const char *const held[] = {"false", "true"};
  for (guint i = 0; i < G_N_ELEMENTS(held); i++) {
    g_autofree char *dir = ema_test_temp_dir();
    g_autofree char *set = g_strconcat("policy.borrow_params.within_limit=", held[i], NULL);
    g_autoptr(EmaTestRun) run = ema_test_cli("run", FIXTURES "idle-borrow.yaml", "--set", set, "-o",
                                             dir, "--no-plot", NULL);
    g_assert_cmpint(run->status, ==, 0);
    g_assert_cmpint(strstr(run->err, "x what the plan's remote limit lets it use") != NULL, ==,
                    i == 0);
    if (i == 0)
      ema_test_assert_contains(run->err, "ema-sim: warning: tenant busy: borrowed ");
    ema_test_remove_tree(dir);
  }
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
  ema_test_assert_ok_warned(run, OVERLOADED);
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
  ema_test_assert_ok_warned(run1, OVERLOADED);
  ema_test_assert_ok_warned(run2, OVERLOADED);
  ema_test_assert_ok_warned(run3, OVERLOADED);
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
  g_test_add_func("/serving-cli/vllm/replay", test_vllm_replay);
  g_test_add_func("/serving-cli/overload-warning", test_overload_warning);
  g_test_add_func("/serving-cli/idle-borrow-warning", test_idle_borrow_warning);
  g_test_add_func("/serving-cli/vllm/concurrency", test_vllm_concurrency);
  g_test_add_func("/serving-cli/closed-loop-without-arrivals", test_closed_loop_without_arrivals);
  for (guint i = 0; i < bad_files->len; i++) {
    const char *file = bad_files->pdata[i];
    g_autofree char *stem = g_strndup(file, strlen(file) - 5);
    g_autofree char *path = g_strconcat("/serving-cli/bad-file/", stem, NULL);
    g_test_add_data_func(path, file, test_bad_file);
  }
  return g_test_run();
}
