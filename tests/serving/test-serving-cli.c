/* test-serving-cli.c: serving experiments through the ema-sim program (its
 * path in EMA_SIM, run in EMA_SOURCE_ROOT): `check` and `run` output for
 * serving files (the per-tenant table, a TP group's GPU range), determinism
 * of every output file across runs (summary.json up to sim.wall_s), --seed
 * and --set changing the results, requests_csv: false, events_csv: false
 * and the events filter by kind, a tenant's sharing settings (lend: false,
 * borrow: false), a TP group's timeline rows per rank, its name and
 * warning under compare: and its warning in a sweep, a GPU without a tenant
 * that lends (its timeline.csv rows, summary.json's idle_gpus, the
 * comparison's words and its memory panel), an output directory
 * that cannot be made, a vLLM benchmark result replayed with its own load and
 * its measured figures printed, a closed loop without an arrival process, the
 * keys only a serving run reads refused in an experiment of ops (its
 * resolved.yaml still runs) and the reverse (tolerance, read by ops only,
 * refused in a serving experiment), a trace's start past its end (an error at it, or
 * a warning where a seed draws the arrivals), frontier's options given twice,
 * and every bad file in tests/fixtures/serving/errors/ as one "path:line:col: ..."
 * line on stderr with exit status 1 and nothing written. */
#include <string.h>

#include <glib/gstdio.h>
#include <json-glib/json-glib.h>

#include "ema/core/units.h"
#include "ema/run/serving.h"
#include "testutil.h"

#define FIXTURES "tests/fixtures/serving/"
#define GOLDEN FIXTURES "golden.yaml"
#define INVARIANTS FIXTURES "invariants.yaml"
#define SHARING FIXTURES "sharing.yaml"
#define IDLE_LENDER FIXTURES "idle-lender.yaml"
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
  g_assert_null(strstr(run->out, "another run"));
  /* its resolved.yaml replays the same load: the errors again */
  {
    g_autofree char *again = g_build_filename(dir, "again", NULL);
    g_autofree char *resolved_path = g_build_filename(out, "resolved.yaml", NULL);
    g_autoptr(EmaTestRun) rerun =
        ema_test_cli("run", resolved_path, "-o", again, "--no-plot", NULL);
    ema_test_assert_ok(rerun);
    ema_test_assert_contains(rerun->out,
                             "\n  completed                   16.00        16.00    +0.0%");
  }
  /* another load (here 100 times the rate): vLLM's figures shown, no error against them */
  {
    g_autoptr(EmaTestRun) faster = ema_test_cli("run", VLLM_REPLAY, "-o", out, "--no-plot", "--set",
                                                "tenants.0.trace.rate_scale=100", NULL);
    ema_test_assert_ok(faster);
    ema_test_assert_contains(faster->out,
                             "\n  (the trace changes the benchmark's load or its requests: "
                             "vLLM's figures are of another run, shown without errors)\n");
    ema_test_assert_contains(faster->out, "\n  completed                   16.00        16.00\n");
  }
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
  ema_test_assert_contains(run->out, ": ok (closed on h200x2, 1 tenant)\n");
  /* every request arrives at once: only a request count ends it */
  g_assert_cmpint(refused->status, ==, 1);
  ema_test_assert_contains(refused->err, "endless.yaml:");
  ema_test_assert_contains(refused->err, "a closed loop without an arrival process never ends");
  ema_test_remove_tree(dir);
}

/* A trace file of no format known, given with an arrival process, is called unknown: it was
 * told "this trace file has its own arrival times", as if it were a trace of arrivals. */
static void test_unknown_trace_with_arrivals(void) {
  g_autofree char *dir = ema_test_temp_dir();
  g_autofree char *csv = g_build_filename(dir, "odd.csv", NULL);
  const char *text = "name: odd\nserver: h200x2\ntenants:\n"
                     "  - {name: a, model: llama-3.1-8b, gpu: 0, trace: {file: odd.csv, "
                     "arrivals: poisson, rate: 1, duration: 5s}}\n";
  g_autoptr(EmaTestRun) run = NULL;
  g_assert_true(g_file_set_contents(csv, "foo,bar\n1,2\n", -1, NULL));
  run = cli_on_text(dir, "exp.yaml", text, "check");
  g_assert_cmpint(run->status, ==, 1);
  ema_test_assert_contains(run->err, "odd.csv:1: tenant a: unknown trace format");
  g_assert_null(strstr(run->err, "own arrival times"));
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

/* a tenant whose clients give up sooner than its requests take (a 1 ms timeout on requests of
 * 20 output tokens) is not only called past its capacity: the timeout is named */
static void test_timeout_warning(void) {
  g_autofree char *dir = ema_test_temp_dir();
  g_autoptr(EmaTestRun) run = cli_on_text(
      dir, "impatient.yaml",
      "name: impatient\nserver: h200x2\ntenants:\n"
      "  - {name: calm, model: llama-3.1-8b, gpu: 0, trace: {arrivals: poisson, rate: 1, "
      "duration: 3s, timeout: 1ms, prompt: {dist: fixed, tokens: 200}, output: {dist: fixed, "
      "tokens: 20}}}\n",
      "run");
  g_assert_cmpint(run->status, ==, 0);
  ema_test_assert_contains(run->err, "ema-sim: warning: tenant calm: ");
  ema_test_assert_contains(run->err, "past its capacity, cut by the run's end or its clients' "
                                     "trace.timeout shorter than its requests take");
  ema_test_remove_tree(dir);
}

/* Tenants alike in a warning: up to three get a line each; a fourth puts them all on one line
 * that names each with its figures (a rack's 72 tenants printed 72 lines alike) */
static void test_grouped_warnings(void) {
  for (guint tenants = 3; tenants <= 4; tenants++) {
    g_autofree char *dir = ema_test_temp_dir();
    g_autoptr(GString) yaml = g_string_new("name: impatient\nserver: h200x4-hgx\ntenants:\n");
    g_autoptr(EmaTestRun) run = NULL;
    for (guint i = 0; i < tenants; i++)
      g_string_append_printf(yaml,
                             "  - {name: t%u, model: llama-3.1-8b, gpu: %u, trace: {arrivals: "
                             "poisson, rate: 1, duration: 3s, timeout: 1ms, prompt: "
                             "{dist: fixed, tokens: 200}, output: {dist: fixed, tokens: 20}}}\n",
                             i, i);
    run = cli_on_text(dir, "impatient.yaml", yaml->str, "run");
    g_assert_cmpint(run->status, ==, 0);
    if (tenants == 3) {
      for (guint i = 0; i < tenants; i++) {
        g_autofree char *line = g_strdup_printf("ema-sim: warning: tenant t%u: ", i);
        ema_test_assert_contains(run->err, line);
      }
    } else {
      /* every request of each timed out: the same counts for all four, in one line */
      g_auto(GStrv) lines = g_strsplit(run->err, "\n", -1);
      guint warned = 0;
      for (guint i = 0; lines[i]; i++)
        warned += strstr(lines[i], "left more than") != NULL;
      g_assert_cmpuint(warned, ==, 1);
      g_assert_null(strstr(run->err, "tenant t0:"));
      ema_test_assert_contains(run->err, "ema-sim: warning: 4 tenants left more than 25% of their "
                                         "requests: t0 ");
      ema_test_assert_contains(run->err, ", t3 ");
      ema_test_assert_contains(run->err, " timed out); past their capacity or cut by the run's "
                                         "end (or by their clients' trace.timeout");
    }
    ema_test_remove_tree(dir);
  }
}

/* a borrow policy that takes far more than its prefetch plan admits is named;
 * held to the plan's limit (most-idle's within_limit), it is not; the same
 * for the busy tenant as a TP-2 group on four H200s (it was never named: the
 * check left groups out) */
static void test_idle_borrow_warning(void) {
  const char *const held[] = {"false", "true"};
  for (guint i = 0; i < 2 * G_N_ELEMENTS(held); i++) {
    g_autofree char *dir = ema_test_temp_dir();
    g_autofree char *set = g_strconcat("policy.borrow_params.within_limit=", held[i % 2], NULL);
    gboolean group = i >= G_N_ELEMENTS(held);
    g_autoptr(EmaTestRun) run =
        group ? ema_test_cli("run", FIXTURES "idle-borrow.yaml", "--set", set, "--set",
                             "server=h200x4-hgx", "--set", "tenants.0.tp=2", "--set",
                             "tenants.1.gpu=2", "-o", dir, "--no-plot", NULL)
              : ema_test_cli("run", FIXTURES "idle-borrow.yaml", "--set", set, "-o", dir,
                             "--no-plot", NULL);
    g_assert_cmpint(run->status, ==, 0);
    g_assert_cmpint(strstr(run->err, "x what the plan's remote limit lets it use") != NULL, ==,
                    i % 2 == 0);
    if (i % 2 == 0)
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

/* The fidelity line of tenants of one status lists six whole and cuts more (a rack's 72 on one
 * line were 600 characters): the first five, "...", the last and how many. */
static void test_run_fidelity_names_cut(void) {
  g_autofree char *dir = ema_test_temp_dir();
  const char *status = ": unvalidated: no real runs of h200-sxm, TP 1, 16-bit weights, 16-bit KV, "
                       "vllm-v1\n";
  const guint counts[] = {6, 7};
  const char *const want[] = {"fidelity t0, t1, t2, t3, t4, t5",
                              "fidelity t0, t1, t2, t3, t4, ..., t6 (7 tenants)"};
  for (guint c = 0; c < G_N_ELEMENTS(counts); c++) {
    g_autoptr(GString) text = g_string_new("name: many\nserver: h200x8-hgx\ntenants:\n");
    g_autoptr(EmaTestRun) run = NULL;
    g_autofree char *line = g_strconcat(want[c], status, NULL);
    g_autofree char *out = g_build_filename(dir, "out", NULL);
    for (guint i = 0; i < counts[c]; i++)
      g_string_append_printf(text,
                             "  - {name: t%u, model: llama-3.1-8b, gpu: %u, engine: {profile: "
                             "vllm-v1}, trace: {arrivals: poisson, rate: 20, duration: 1s, prompt: "
                             "{dist: fixed, tokens: 10}, output: {dist: fixed, tokens: 2}}}\n",
                             i, i);
    run = cli_on_text(dir, "many.yaml", text->str, "run");
    ema_test_assert_ok(run);
    ema_test_assert_contains(run->out, line);
    ema_test_remove_tree(out);
  }
  ema_test_remove_tree(dir);
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
  {
    /* the closing line names the files written, and only those */
    g_autofree char *results = g_strdup_printf(
        "results in %s/ (summary.json, tenants.csv, timeline.csv, resolved.yaml)\n", quiet);
    g_assert_nonnull(strstr(run3->out, results));
  }
  {
    g_autofree char *a = ema_test_summary_without_wall(summary1);
    g_autofree char *b = ema_test_summary_without_wall(summary3);
    g_assert_cmpstr(a, ==, b);
  }
  ema_test_remove_tree(dir);
}

/* Whether DIR/NAME exists. */
static gboolean exists_in(const char *dir, const char *name) {
  g_autofree char *path = g_build_filename(dir, name, NULL);
  return g_file_test(path, G_FILE_TEST_EXISTS);
}

/* `ema-sim run FILE [--set SET1] [--set SET2] -o DIR/NAME --no-plot`, which
 * must exit 0 (what it warns of on stderr is left alone): its output
 * folder. */
static char *run_into(const char *dir, const char *name, const char *file, const char *set1,
                      const char *set2) {
  char *out = g_build_filename(dir, name, NULL);
  const char *argv[12] = {g_getenv("EMA_SIM"), "run", file};
  guint n = 3;
  g_autoptr(EmaTestRun) run = NULL;
  for (guint i = 0; i < 2; i++)
    if ((i == 0 ? set1 : set2) != NULL) {
      argv[n++] = "--set";
      argv[n++] = i == 0 ? set1 : set2;
    }
  argv[n++] = "-o";
  argv[n++] = out;
  argv[n++] = "--no-plot";
  run = ema_test_cli_argv(argv, NULL);
  g_assert_cmpint(run->status, ==, 0);
  return out;
}

/* events: only the kinds named reach events.csv; events_csv: false writes
 * none; neither changes the results; a kind not named so is an error;
 * events_tier: step sums a step's tier moves into one row. */
static void test_events(void) {
  g_autofree char *dir = ema_test_temp_dir();
  /* (a warning on stderr under ema: how the TP group shares) */
  g_autofree char *all = run_into(dir, "all", INVARIANTS, "policy=ema", NULL);
  g_autofree char *some = run_into(dir, "some", INVARIANTS, "policy=ema", "events=borrow, return");
  g_autofree char *none = run_into(dir, "none", INVARIANTS, "policy=ema", "events_csv=false");
  g_autofree char *bad = g_build_filename(dir, "bad", NULL);
  g_autoptr(EmaTestRun) run4 =
      ema_test_cli("run", INVARIANTS, "--set", "events=borrow,borow", "-o", bad, NULL);
  g_autofree char *events1 = NULL, *events2 = NULL;
  g_autoptr(GString) kept = g_string_new(NULL);
  g_auto(GStrv) rows = NULL;
  events1 = ema_test_read_file(all, "events.csv");
  events2 = ema_test_read_file(some, "events.csv");
  /* the borrow and return rows of the whole file, in its order */
  rows = g_strsplit(events1, "\n", -1);
  for (guint i = 0; rows[i] && rows[i][0]; i++)
    if (i == 0 || strstr(rows[i], ",borrow,") || strstr(rows[i], ",return,"))
      g_string_append_printf(kept, "%s\n", rows[i]);
  g_assert_nonnull(strstr(events1, ",tier,"));
  g_assert_nonnull(strstr(events1, ",borrow,"));
  g_assert_cmpstr(events2, ==, kept->str);
  /* a prefix tier's drop of N cached blocks counts them in blocks_dropped, moving none (the
   * column said 0 under "N cached blocks on peers dropped"), and names no lender as its peer
   * (it named whichever had the most room then) */
  {
    guint drops = 0;
    for (guint i = 1; rows[i] && rows[i][0]; i++) {
      g_auto(GStrv) cells = g_strsplit(rows[i], ",", 13);
      const char *said = strstr(rows[i], "\"prefix tier: ");
      if (strcmp(cells[1], "tier") != 0 ||
          strstr(rows[i], " cached blocks on peers dropped") == NULL)
        continue;
      drops++;
      g_assert_cmpuint(g_ascii_strtoull(cells[9], NULL, 10), ==,
                       g_ascii_strtoull(said + strlen("\"prefix tier: "), NULL, 10));
      g_assert_cmpuint(g_ascii_strtoull(cells[9], NULL, 10), >, 0);
      g_assert_cmpstr(cells[3], ==, cells[2]); /* peer: no lender named */
      g_assert_cmpstr(cells[7], ==, "0");      /* blocks_moved */
      g_assert_cmpstr(cells[10], ==, "0");     /* bytes_copied */
    }
    g_assert_cmpuint(drops, >, 0);
  }
  g_assert_false(exists_in(none, "events.csv"));
  for (guint i = 0; i < 2; i++) {
    g_autofree char *a = ema_test_read_file(all, "summary.json");
    g_autofree char *b = ema_test_read_file(i == 0 ? some : none, "summary.json");
    g_autofree char *a_ = ema_test_summary_without_wall(a);
    g_autofree char *b_ = ema_test_summary_without_wall(b);
    g_assert_cmpstr(a_, ==, b_);
  }
  g_assert_cmpint(run4->status, ==, 1);
  /* at the value (--set's column 8), not the key */
  g_assert_cmpstr(run4->err, ==,
                  "--set:1:8: events: 'borow' is not a pool event kind (all, or of "
                  "borrow, return, reclaim, own-map, own-unmap, refuse, "
                  "offload, offload-end, offload-refuse, place, tier, "
                  "offload-throttle, debug)\n");
  {
    g_autoptr(GError) error = NULL;
    g_autoptr(GError) twice = NULL;
    g_assert_cmpuint(ema_experiment_event_kinds("all, borrow", &error), ==, 0);
    g_assert_cmpstr(error->message, ==,
                    "'all' keeps every kind: give it alone, not in a list of kinds");
    g_assert_cmpuint(ema_experiment_event_kinds("borrow, tier, borrow", &twice), ==, 0);
    g_assert_cmpstr(twice->message, ==, "'borrow' is named twice: name each kind once");
  }
  /* events_tier: step: fewer tier rows, the same blocks and bytes in all, the other rows and
   * the results as they were */
  {
    g_autofree char *step = run_into(dir, "step", INVARIANTS, "policy=ema", "events_tier=step");
    g_autofree char *events3 = ema_test_read_file(step, "events.csv");
    guint64 rows_of[2] = {0}, blocks_of[2] = {0}, bytes_of[2] = {0};
    for (guint f = 0; f < 2; f++) {
      g_auto(GStrv) lines = g_strsplit(f == 0 ? events1 : events3, "\n", -1);
      for (guint i = 1; lines[i] && lines[i][0]; i++) {
        g_auto(GStrv) cells = g_strsplit(lines[i], ",", 13);
        if (strcmp(cells[1], "tier") != 0)
          continue;
        rows_of[f]++;
        blocks_of[f] += g_ascii_strtoull(cells[7], NULL, 10) + g_ascii_strtoull(cells[9], NULL, 10);
        bytes_of[f] += g_ascii_strtoull(cells[10], NULL, 10);
      }
    }
    g_assert_cmpuint(rows_of[1], <, rows_of[0]);
    g_assert_cmpuint(blocks_of[1], ==, blocks_of[0]);
    g_assert_cmpuint(bytes_of[1], ==, bytes_of[0]);
    g_assert_nonnull(strstr(events3, " moves this step)"));
  }
  /* events_max_rows: the first rows as the whole file has them, then none; the run says when it
   * stopped (summary.json, stderr), and the results are the uncapped run's */
  {
    g_autofree char *capped = g_build_filename(dir, "capped", NULL);
    g_autoptr(EmaTestRun) run5 = ema_test_cli("run", INVARIANTS, "--set", "policy=ema", "--set",
                                              "events_max_rows=3", "-o", capped, "--no-plot", NULL);
    g_autofree char *events5 = ema_test_read_file(capped, "events.csv");
    g_autofree char *summary5 = ema_test_read_file(capped, "summary.json");
    g_autofree char *summary1 = ema_test_read_file(all, "summary.json");
    g_autofree char *tenants5 = ema_test_read_file(capped, "tenants.csv");
    g_autofree char *tenants1 = ema_test_read_file(all, "tenants.csv");
    /* the header and three rows: up to the fourth newline */
    const char *end = events1;
    for (guint i = 0; i < 4; i++)
      end = strchr(end, '\n') + 1;
    g_assert_cmpint(run5->status, ==, 0);
    g_assert_cmpuint(strlen(events5), ==, (gsize) (end - events1));
    g_assert_true(strncmp(events5, events1, (gsize) (end - events1)) == 0);
    ema_test_assert_contains(run5->err, "ema-sim: warning: events.csv stopped at 3 rows, at ");
    ema_test_assert_contains(summary5, "\"events_csv_capped_at_s\" : ");
    g_assert_null(strstr(summary1, "capped"));
    g_assert_cmpstr(tenants5, ==, tenants1);
  }
  ema_test_remove_tree(dir);
}

/* sharing.yaml: the tight tenant borrows from the light one under ema;
 * with the light one's lend: false, or the tight one's borrow: false, the
 * pool borrows nothing (no events.csv); with its lend_limit it lends up to
 * that share of its region; describe experiment lists the settings. */
static void test_tenant_sharing(void) {
  g_autofree char *dir = ema_test_temp_dir();
  g_autofree char *shared = run_into(dir, "shared", SHARING, NULL, NULL);
  g_autofree char *no_lend =
      run_into(dir, "no-lend", SHARING, "tenants.1.sharing.lend=false", NULL);
  g_autofree char *no_borrow =
      run_into(dir, "no-borrow", SHARING, "tenants.0.sharing.borrow=false", NULL);
  g_autofree char *limited =
      run_into(dir, "limited", SHARING, "tenants.1.sharing.lend_limit=0.5%", NULL);
  g_autoptr(EmaTestRun) describe = ema_test_cli("describe", "experiment", NULL);
  g_autofree char *events = ema_test_read_file(shared, "events.csv");
  g_autofree char *summary2 = ema_test_read_file(no_lend, "summary.json");
  g_autofree char *summary3 = ema_test_read_file(no_borrow, "summary.json");
  g_autofree char *summary4 = ema_test_read_file(limited, "summary.json");
  g_autoptr(JsonNode) root = ema_test_parse_json(summary4);
  double lent = (double) tenant_int(root, 1, "lent_peak_bytes");
  double region = (double) tenant_int(root, 1, "kv_bytes_per_gpu");
  g_assert_nonnull(strstr(events, ",borrow,0,1,"));
  g_assert_false(exists_in(no_lend, "events.csv"));
  g_assert_false(exists_in(no_borrow, "events.csv"));
  /* (not the same run: where the light tenant lends, the tight one's swapped KV is parked on
   * its GPU, where it does not, in host memory) */
  g_assert_nonnull(strstr(summary2, "\"borrows\" : 0,"));
  g_assert_nonnull(strstr(summary3, "\"borrows\" : 0,"));
  /* lend_limit: 0.5%: the light tenant lends, at most 0.5% of its region at once (within a
   * slice), where it lends 1.16% without */
  g_assert_cmpfloat(lent, >, 0);
  g_assert_cmpfloat(lent, <=, 0.005 * region + 2 * 1024 * 1024);
  ema_test_assert_ok(describe);
  g_assert_nonnull(strstr(describe->out, "    lend_limit "));
  g_assert_nonnull(strstr(describe->out, "  sharing "));
  g_assert_nonnull(strstr(describe->out, "    lend "));
  g_assert_nonnull(strstr(describe->out, "    borrow "));
  ema_test_remove_tree(dir);
}

/* TP groups that share alike: up to three get a line each; more share one line naming each
 * (a rack's 36 groups printed 36 lines alike); a group that shares otherwise keeps its own */
static void test_group_sharing_grouped(void) {
  for (guint groups = 3; groups <= 4; groups++) {
    g_autofree char *dir = ema_test_temp_dir();
    g_autoptr(GString) yaml =
        g_string_new("name: groups\nserver: b200x8-hgx\npolicy: ema\ntenants:\n");
    g_autoptr(EmaTestRun) run = NULL;
    g_auto(GStrv) lines = NULL;
    guint shares = 0;
    for (guint i = 0; i < groups; i++)
      g_string_append_printf(yaml,
                             "  - {name: g%u, model: llama-3.1-8b, gpu: %u, tp: 2, trace: "
                             "{arrivals: poisson, rate: 1, duration: 1s, prompt: {dist: fixed, "
                             "tokens: 10}, output: {dist: fixed, tokens: 5}}}\n",
                             i, 2 * i);
    /* the last group takes nothing: it shares otherwise */
    g_string_append_printf(yaml,
                           "  - {name: other, model: llama-3.1-8b, gpu: %u, tp: 2, "
                           "sharing: {borrow: false}, trace: {arrivals: poisson, rate: 1, "
                           "duration: 1s, prompt: {dist: fixed, tokens: 10}, output: "
                           "{dist: fixed, tokens: 5}}}\n",
                           2 * groups);
    if (groups == 4) /* (the fifth group needs a larger server) */
      g_string_replace(yaml, "b200x8-hgx", "gb200-nvl72", 1);
    run = cli_on_text(dir, "groups.yaml", yaml->str, "check");
    g_assert_cmpint(run->status, ==, 0);
    lines = g_strsplit(run->err, "\n", -1);
    for (guint i = 0; lines[i]; i++)
      shares += strstr(lines[i], "share") != NULL;
    ema_test_assert_contains(run->err, "ema-sim: warning: tenant other (tp 2 on gpu");
    ema_test_assert_contains(run->err, ") shares as a group under policy ema (borrow: most-idle): "
                                       "it borrows nothing (sharing: {borrow: false})");
    if (groups == 3) {
      g_assert_cmpuint(shares, ==, 4);
      ema_test_assert_contains(run->err, "ema-sim: warning: tenant g2 (tp 2 on gpu4..gpu5) shares "
                                         "as a group under policy ema (borrow: most-idle): it "
                                         "borrows from the GPUs outside the group");
    } else {
      g_assert_cmpuint(shares, ==, 2);
      g_assert_null(strstr(run->err, "tenant g0 "));
      ema_test_assert_contains(
          run->err,
          "ema-sim: warning: 4 tenants share as TP groups under policy ema (borrow: "
          "most-idle), each alike: g0 (tp 2 on gpu0..gpu1), g1 (tp 2 on gpu2..gpu3), "
          "g2 (tp 2 on gpu4..gpu5), g3 (tp 2 on gpu6..gpu7); each: it borrows from the "
          "GPUs outside the group, each rank reading or offloading the attention over its "
          "shard of the remote KV, and lends its spare KV memory as a group");
    }
    ema_test_remove_tree(dir);
  }
}

#define TP_SHARE "tests/fixtures/experiments/tp-share.yaml"
#define GROUP_BIG                                                                                  \
  "ema-sim: warning: tenant big (tp 2 on gpu0..gpu1) shares as a group under policy "

/* tp-share.yaml (a TP-2 group on gpu0..gpu1 of four A100s, a tenant on gpu2, gpu3 idle): the
 * group's warning says what its own sharing settings let it do (it said "borrows ... and lends"
 * whatever they were); a group that takes no part gets none; where no memory can move at all
 * (nobody lends beside a tenant that may take, or nobody takes), one warning says so instead. */
static void test_group_sharing_warning(void) {
  g_autoptr(EmaTestRun) no_lend =
      ema_test_cli("check", TP_SHARE, "--set", "tenants.0.sharing.lend=false", NULL);
  g_autoptr(EmaTestRun) no_limit =
      ema_test_cli("check", TP_SHARE, "--set", "tenants.0.sharing.lend_limit=0", NULL);
  g_autoptr(EmaTestRun) no_borrow =
      ema_test_cli("check", TP_SHARE, "--set", "tenants.0.sharing.borrow=false", NULL);
  g_autoptr(EmaTestRun) parks_only = ema_test_cli("check", TP_SHARE, "--set", "policy=peer-swap",
                                                  "--set", "tenants.0.sharing.lend=false", NULL);
  g_autoptr(EmaTestRun) no_part =
      ema_test_cli("check", TP_SHARE, "--set", "policy=remote-direct", "--set",
                   "tenants.0.sharing.lend=false", "--set", "tenants.0.sharing.borrow=false", NULL);
  g_autoptr(EmaTestRun) no_lender =
      ema_test_cli("check", TP_SHARE, "--set", "tenants.0.sharing.lend=false", "--set",
                   "tenants.1.sharing.lend_limit=0", "--set", "idle_gpu_memory=0", NULL);
  g_autoptr(EmaTestRun) no_taker = ema_test_cli("check", TP_SHARE, "--set", "policy=remote-direct",
                                                "--set", "tenants.0.sharing.borrow=false", "--set",
                                                "tenants.1.sharing.borrow=false", NULL);
  g_autoptr(EmaTestRun) idle_lends =
      ema_test_cli("check", TP_SHARE, "--set", "tenants.0.sharing.lend=false", "--set",
                   "tenants.1.sharing.lend=false", NULL);
  /* a limit under one of the group's 23,594 slices (11,797 a GPU; 1e-5 of them: 0.24 of a
   * slice) lends none, as the pool keeps it; 1e-4 of them (2.36 slices) lends */
  g_autoptr(EmaTestRun) under_slice =
      ema_test_cli("check", TP_SHARE, "--set", "tenants.0.sharing.lend_limit=0.00001", NULL);
  g_autoptr(EmaTestRun) one_slice =
      ema_test_cli("check", TP_SHARE, "--set", "tenants.0.sharing.lend_limit=0.0001", NULL);
  g_autoptr(EmaTestRun) no_lender_under =
      ema_test_cli("check", TP_SHARE, "--set", "tenants.0.sharing.lend=false", "--set",
                   "tenants.1.sharing.lend_limit=0.0000001", "--set", "idle_gpu_memory=0", NULL);
  g_assert_cmpint(no_lend->status, ==, 0);
  g_assert_cmpstr(no_lend->err, ==,
                  GROUP_BIG "ema (borrow: most-idle): it borrows from the GPUs outside the group, "
                            "each rank reading or offloading the attention over its shard of the "
                            "remote KV, and lends nothing (sharing: {lend: false})\n");
  g_assert_cmpstr(no_limit->err, ==,
                  GROUP_BIG "ema (borrow: most-idle): it borrows from the GPUs outside the group, "
                            "each rank reading or offloading the attention over its shard of the "
                            "remote KV, and lends nothing (sharing: {lend_limit: 0%})\n");
  g_assert_cmpstr(no_borrow->err, ==,
                  GROUP_BIG "ema (borrow: most-idle): it borrows nothing (sharing: {borrow: "
                            "false}) but parks its preempted KV on peers, and lends its spare KV "
                            "memory as a group, each rank its share, holding peers' parked KV\n");
  g_assert_cmpstr(parks_only->err, ==,
                  GROUP_BIG "peer-swap (preempt: swap-peer): it parks its preempted KV on peers "
                            "and holds none of theirs (sharing: {lend: false})\n");
  ema_test_assert_ok(no_part);
  g_assert_cmpstr(no_part->err, ==, "");
  g_assert_cmpint(no_lender->status, ==, 0);
  g_assert_cmpstr(
      no_lender->err, ==,
      "ema-sim: warning: policy ema moves no memory between GPUs here: no tenant "
      "that may take peers' memory (sharing: {borrow: true}, or any tenant, its "
      "preempted KV parked on peers) has a GPU beside it that lends (a tenant with "
      "sharing: {lend: true} and a lend_limit of a slice or more, or a GPU without a tenant "
      "under an idle_gpu_memory above 0%)\n");
  g_assert_cmpstr(no_taker->err, ==,
                  "ema-sim: warning: policy remote-direct moves no memory between GPUs here: "
                  "every tenant has sharing: {borrow: false}, and the policy parks no preempted "
                  "KV on peers\n");
  g_assert_cmpint(under_slice->status, ==, 0);
  g_assert_cmpstr(under_slice->err, ==,
                  "ema-sim: warning: tenant big: sharing.lend_limit 0.001% of the 23594 slices "
                  "its GPUs hold for KV is under one 2 MiB slice: it lends nothing\n" GROUP_BIG
                  "ema (borrow: most-idle): it borrows from the GPUs outside the group, each "
                  "rank reading or offloading the attention over its shard of the remote KV, "
                  "and lends nothing (sharing: {lend_limit: 0.001%}, under one slice)\n");
  g_assert_nonnull(strstr(one_slice->err, "and lends its spare KV memory as a group"));
  g_assert_null(strstr(one_slice->err, "under one"));
  g_assert_nonnull(strstr(no_lender_under->err,
                          "ema-sim: warning: tenant small: sharing.lend_limit 1e-05% of the 5613 "
                          "slices its GPUs hold for KV is under one 2 MiB slice: it lends "
                          "nothing\n"));
  g_assert_nonnull(strstr(no_lender_under->err, "moves no memory between GPUs here"));
  /* the idle gpu3 lends (idle_gpu_memory 90%): the group borrows from it */
  g_assert_nonnull(strstr(idle_lends->err, GROUP_BIG "ema (borrow: most-idle): it borrows "));
  g_assert_null(strstr(idle_lends->err, "moves no memory"));
}

/* A single group spanning every GPU of the server under ema has no peer: one warning says no
 * memory moves (it said the group borrows from the GPUs outside it and lends to them). */
static void test_whole_server_group_warning(void) {
  g_autofree char *dir = ema_test_temp_dir();
  g_autoptr(EmaTestRun) run =
      cli_on_text(dir, "whole.yaml",
                  "name: whole\nserver: a100x4-40gb\npolicy: ema\ntenants:\n"
                  "  - {name: whole, model: opt-13b, gpu: 0, tp: 4, trace: {arrivals: poisson, "
                  "rate: 1, duration: 1s, prompt: {dist: fixed, tokens: 100}, output: {dist: "
                  "fixed, tokens: 10}}}\n",
                  "check");
  g_assert_cmpint(run->status, ==, 0);
  g_assert_nonnull(strstr(run->err, "ema-sim: warning: policy ema moves no memory between GPUs "
                                    "here: no tenant that may take peers' memory"));
  g_assert_null(strstr(run->err, "shares as a group"));
  ema_test_remove_tree(dir);
}

/* server.gpu.hbm_scale (the 2x oracle) beside a tenant whose engine.num_gpu_blocks fixes its KV
 * cache: a warning says the scale gives that tenant no more KV (a 2x variant read as static's
 * twin, silently); a cache sized from HBM, or no scale, gets none. */
static void test_scaled_fixed_kv_warning(void) {
  g_autoptr(EmaTestRun) fixed =
      ema_test_cli("check", TP_SHARE, "--set", "policy=static", "--set", "server.gpu.hbm_scale=2",
                   "--set", "tenants.1.engine.num_gpu_blocks=500", NULL);
  g_autoptr(EmaTestRun) sized = ema_test_cli("check", TP_SHARE, "--set", "policy=static", "--set",
                                             "server.gpu.hbm_scale=2", NULL);
  g_autoptr(EmaTestRun) unscaled =
      ema_test_cli("check", TP_SHARE, "--set", "policy=static", "--set",
                   "tenants.1.engine.num_gpu_blocks=500", NULL);
  g_assert_cmpint(fixed->status, ==, 0);
  g_assert_cmpstr(fixed->err, ==,
                  "ema-sim: warning: tenant small: engine.num_gpu_blocks fixes its KV cache at "
                  "500 blocks: server.gpu.hbm_scale 2 leaves it as it is (only a cache sized "
                  "from HBM scales)\n");
  ema_test_assert_ok(sized);
  ema_test_assert_ok(unscaled);
}

/* events, events_tier and events_max_rows where events_csv: false writes no events.csv, and
 * steps_max_rows where steps_csv: false (its default) writes no steps.csv: a warning each (they
 * were silently unused); events_csv: false alone, or with them at their defaults, none. */
static void test_events_unwritten_warning(void) {
  g_autoptr(EmaTestRun) both =
      ema_test_cli("check", TP_SHARE, "--set", "policy=static", "--set", "events_csv=false",
                   "--set", "events=borrow,reclaim", "--set", "events_tier=step", "--set",
                   "events_max_rows=5", "--set", "steps_max_rows=7", NULL);
  g_autoptr(EmaTestRun) capped = ema_test_cli("check", TP_SHARE, "--set", "policy=static", "--set",
                                              "steps_csv=true", "--set", "steps_max_rows=7", NULL);
  g_autoptr(EmaTestRun) alone = ema_test_cli("check", TP_SHARE, "--set", "policy=static", "--set",
                                             "events_csv=false", "--set", "events=all", NULL);
  g_autoptr(EmaTestRun) written =
      ema_test_cli("check", TP_SHARE, "--set", "policy=static", "--set", "events=borrow", NULL);
  g_assert_cmpint(both->status, ==, 0);
  g_assert_cmpstr(both->err, ==,
                  "ema-sim: warning: steps_max_rows: 7 caps steps.csv, which steps_csv: false "
                  "(its default) does not write\n"
                  "ema-sim: warning: events_max_rows: 5 caps events.csv, which events_csv: false "
                  "does not write\n"
                  "ema-sim: warning: events: borrow,reclaim picks rows of events.csv, which "
                  "events_csv: false does not write\n"
                  "ema-sim: warning: events_tier: step groups rows of events.csv, which "
                  "events_csv: false does not write\n");
  ema_test_assert_ok(capped);
  ema_test_assert_ok(alone);
  ema_test_assert_ok(written);
}

/* timeline_max_rows stops timeline.csv at a whole sample: tp-share.yaml's sample is four rows
 * (the TP-2 group's two, the other tenant's one, gpu3's, which has no tenant), so a cap of 5
 * keeps the first sample's four and none of the second (its group's two rows were written
 * without the other GPUs' rows). */
static void test_timeline_cap_whole_samples(void) {
  g_autofree char *dir = ema_test_temp_dir();
  g_autoptr(EmaTestRun) run = ema_test_cli("run", TP_SHARE, "--set", "timeline_max_rows=5", "--set",
                                           "policy=static", "-o", dir, "--no-plot", NULL);
  g_autofree char *timeline = ema_test_read_file(dir, "timeline.csv");
  g_auto(GStrv) lines = g_strsplit(timeline, "\n", -1);
  g_assert_cmpint(run->status, ==, 0);
  /* the rows it holds, not the cap */
  ema_test_assert_contains(run->err, "ema-sim: warning: timeline.csv stopped at 4 rows "
                                     "(timeline_max_rows 5: whole samples only), at 1 s");
  g_assert_cmpuint(g_strv_length(lines), ==, 6); /* the header, 4 rows, "" */
  g_assert_true(g_str_has_prefix(lines[1], "0.000000000,0,big,"));
  g_assert_true(g_str_has_prefix(lines[2], "0.000000000,1,big,"));
  g_assert_true(g_str_has_prefix(lines[3], "0.000000000,2,small,"));
  g_assert_cmpstr(lines[4], ==, "0.000000000,3,,0,0,0,0,0.000000,0,0,0,0,0");
  ema_test_remove_tree(dir);
}

/* steps_max_rows bounds steps.csv as events_max_rows bounds events.csv: 4 rows, then a warning
 * and summary.json's steps_csv_capped_at_s (an NVL72 hour's steps.csv was GBs, with no cap). */
static void test_steps_cap(void) {
  g_autofree char *dir = ema_test_temp_dir();
  g_autoptr(EmaTestRun) run =
      ema_test_cli("run", TP_SHARE, "--set", "steps_csv=true", "--set", "steps_max_rows=4", "--set",
                   "policy=static", "-o", dir, "--no-plot", NULL);
  g_autofree char *steps = ema_test_read_file(dir, "steps.csv");
  g_autofree char *summary = ema_test_read_file(dir, "summary.json");
  g_auto(GStrv) lines = g_strsplit(steps, "\n", -1);
  g_assert_cmpint(run->status, ==, 0);
  ema_test_assert_contains(run->err, "ema-sim: warning: steps.csv stopped at 4 rows, at ");
  g_assert_cmpuint(g_strv_length(lines), ==, 6); /* the header, 4 rows, "" */
  g_assert_true(g_str_has_prefix(lines[0], "step.id,"));
  ema_test_assert_contains(summary, "\"steps_csv_capped_at_s\" : ");
  ema_test_remove_tree(dir);
}

/* unpark.yaml: parked KV that its holder's own demand sends to host memory is a reclaim row of
 * events.csv (gpu the holder, peer the owner, target host, its slices and blocks to host), so
 * that the rows sum to the summary's reclaims, slices_reclaimed and blocks_to_host (no row was
 * written: a peer-swap run reclaimed without an events.csv). */
static void test_unpark_events(void) {
  g_autofree char *dir = ema_test_temp_dir();
  g_autofree char *out = run_into(dir, "out", FIXTURES "unpark.yaml", NULL, NULL);
  g_autofree char *events = ema_test_read_file(out, "events.csv");
  g_autofree char *summary = ema_test_read_file(out, "summary.json");
  g_autoptr(JsonNode) root = ema_test_parse_json(summary);
  JsonObject *pool = json_object_get_object_member(json_node_get_object(root), "pool");
  g_auto(GStrv) rows = g_strsplit(events, "\n", -1);
  guint64 reclaims = 0, slices = 0, to_host = 0;
  for (guint i = 1; rows[i] && rows[i][0]; i++) {
    g_auto(GStrv) cells = g_strsplit(rows[i], ",", 13);
    g_autofree char *reason = NULL;
    if (strcmp(cells[1], "reclaim") != 0)
      continue;
    reason = g_strdup_printf("\"parked KV: gpu%s short ", cells[2]);
    g_assert_cmpstr(cells[4], ==, "host");
    g_assert_cmpstr(cells[2], !=, cells[3]);
    g_assert_true(g_str_has_prefix(cells[12], reason));
    /* a Llama-3.1-8B block is 2 MiB, one slice */
    g_assert_cmpstr(cells[6], ==, cells[8]);
    g_assert_cmpuint(g_ascii_strtoull(cells[10], NULL, 10), ==,
                     g_ascii_strtoull(cells[8], NULL, 10) * 2 * 1024 * 1024);
    reclaims++;
    slices += g_ascii_strtoull(cells[6], NULL, 10);
    to_host += g_ascii_strtoull(cells[8], NULL, 10);
  }
  g_assert_cmpuint(reclaims, >, 0);
  g_assert_cmpint(json_object_get_int_member(pool, "reclaims"), ==, (gint64) reclaims);
  g_assert_cmpint(json_object_get_int_member(pool, "slices_reclaimed"), ==, (gint64) slices);
  g_assert_cmpint(json_object_get_int_member(pool, "blocks_to_host"), ==, (gint64) to_host);
  ema_test_remove_tree(dir);
}

/* unpark-group.yaml: parked KV that a TP-2 group holds goes to host over both ranks' host links:
 * each reclaim row's seconds are h200x4-hgx's host copy_fixed_cost (5.2 us) plus its bytes over
 * d2h_bandwidth (55.3 GB/s), halved for the group's rows (gpu1) and whole for gpu0's, to the
 * row's 6 decimals (the group's were timed as one GPU's). */
static void test_unpark_group(void) {
  g_autofree char *dir = ema_test_temp_dir();
  g_autofree char *out = run_into(dir, "out", FIXTURES "unpark-group.yaml", NULL, NULL);
  g_autofree char *events = ema_test_read_file(out, "events.csv");
  g_auto(GStrv) rows = g_strsplit(events, "\n", -1);
  guint by_group = 0, by_gpu0 = 0;
  for (guint i = 1; rows[i] && rows[i][0]; i++) {
    g_auto(GStrv) cells = g_strsplit(rows[i], ",", 13);
    double bytes, want;
    guint ranks;
    if (strcmp(cells[1], "reclaim") != 0)
      continue;
    ranks = strcmp(cells[2], "1") == 0 ? 2 : 1;
    g_assert_true(ranks == 2 || strcmp(cells[2], "0") == 0);
    bytes = g_ascii_strtod(cells[10], NULL);
    want = 5.2e-6 + bytes / ranks / 55.3e9;
    g_assert_cmpfloat_with_epsilon(g_ascii_strtod(cells[11], NULL), want, 5.1e-7);
    by_group += ranks == 2;
    by_gpu0 += ranks == 1;
  }
  g_assert_cmpuint(by_group, >, 0);
  g_assert_cmpuint(by_gpu0, >, 0);
  ema_test_remove_tree(dir);
}

/* tp-borrow.yaml: the TP-2 group borrows; each sample's two rows (gpu0,
 * gpu1) hold the same blocks, the same remote blocks (each rank its shard
 * of every block: none of the remote KV counted as local on either), and
 * shares of the group's borrowed slices that differ by at most one; the
 * shares by hand: 5 slices over 2 ranks are 2 and 3, 7 over 4 are 1, 2, 2
 * and 2. */
static void test_tp_timeline(void) {
  guint pairs = 0, remote_pairs = 0;
  g_autofree char *dir = ema_test_temp_dir(), *timeline = NULL;
  g_auto(GStrv) rows = NULL;
  {
    g_autoptr(EmaTestRun) run =
        ema_test_cli("run", FIXTURES "tp-borrow.yaml", "-o", dir, "--no-plot", NULL);
    g_assert_cmpint(run->status, ==, 0);
  }
  timeline = ema_test_read_file(dir, "timeline.csv");
  rows = g_strsplit(timeline, "\n", -1);
  for (guint i = 1; rows[i] && rows[i][0]; i++) {
    g_auto(GStrv) a = g_strsplit(rows[i], ",", -1);
    g_auto(GStrv) b = NULL;
    if (strcmp(a[2], "big") != 0)
      continue;
    g_assert_cmpstr(a[1], ==, "0");
    b = g_strsplit(rows[++i], ",", -1);
    g_assert_cmpstr(b[1], ==, "1");
    g_assert_cmpstr(a[3], ==, b[3]);   /* kv_blocks_used */
    g_assert_cmpstr(a[10], ==, b[10]); /* kv_blocks_remote */
    g_assert_cmpuint(g_ascii_strtoull(a[10], NULL, 10), <=, g_ascii_strtoull(a[3], NULL, 10));
    g_assert_cmpuint(g_ascii_strtoull(b[9], NULL, 10) - g_ascii_strtoull(a[9], NULL, 10), <=, 1);
    pairs++;
    remote_pairs += g_ascii_strtoull(a[10], NULL, 10) > 0;
  }
  g_assert_cmpuint(pairs, ==, 25); /* 0 s to 6 s every 250 ms */
  g_assert_cmpuint(remote_pairs, >, 0);
  g_assert_cmpuint(ema_serving_rank_share(5, 0, 2), ==, 2);
  g_assert_cmpuint(ema_serving_rank_share(5, 1, 2), ==, 3);
  for (guint r = 0; r < 4; r++)
    g_assert_cmpuint(ema_serving_rank_share(7, r, 4), ==, r == 0 ? 1 : 2);
  ema_test_remove_tree(dir);
}

/* The most the one GPU without a tenant of the run in DIR/VARIANT lent at one sample, as the
 * comparison writes it (summary.json's idle_gpus.0.lent_peak_bytes, for people). */
static char *idle_peak_text(const char *dir, const char *variant) {
  g_autofree char *folder = g_build_filename(dir, variant, NULL);
  g_autofree char *summary = ema_test_read_file(folder, "summary.json");
  g_autoptr(JsonParser) parser = json_parser_new();
  JsonArray *idle;
  g_assert_true(json_parser_load_from_data(parser, summary, -1, NULL));
  idle =
      json_object_get_array_member(json_node_get_object(json_parser_get_root(parser)), "idle_gpus");
  g_assert_cmpuint(json_array_get_length(idle), ==, 1);
  return ema_units_format_size_human((guint64) json_object_get_int_member(
      json_array_get_object_element(idle, 0), "lent_peak_bytes"));
}

/* tp-borrow.yaml under compare: (static, ema): the table names the
 * borrowing group by its GPUs and takes as lenders the tenants that lent
 * (the light tenant), then names the GPU without a tenant that lent and
 * its peak, and the
 * group's warning is printed for the variant that shares, as a single run
 * prints it. */
static void test_tp_compare(void) {
  g_autofree char *dir = ema_test_temp_dir();
  g_autofree char *fixture = NULL, *text = NULL, *path = g_build_filename(dir, "cmp.yaml", NULL);
  g_autofree char *out = g_build_filename(dir, "out", NULL);
  g_autoptr(EmaTestRun) run = NULL;
  g_autofree char *root = g_strdup(g_getenv("EMA_SOURCE_ROOT"));
  fixture = ema_test_read_file(root, FIXTURES "tp-borrow.yaml");
  text = g_strconcat(fixture, "compare:\n  static: {policy: static}\n  ema: {policy: ema}\n", NULL);
  g_assert_true(g_file_set_contents(path, text, -1, NULL));
  run = ema_test_cli("run", path, "-o", out, "--no-plot", NULL);
  g_assert_cmpint(run->status, ==, 0);
  {
    g_autofree char *peak = idle_peak_text(out, "ema");
    g_autofree char *want = g_strdup_printf(
        "\ncomparison: borrower big (gpu0..gpu1), lenders the tenants that lent: small (gpu2); "
        "gpu3 (no tenant) lent up to %s at one sample\n",
        peak);
    ema_test_assert_contains(run->out, want);
  }
  g_assert_nonnull(strstr(run->err, "ema-sim: warning: ema: tenant big (tp 2 on gpu0..gpu1)"));
  g_assert_null(strstr(run->err, "warning: static: tenant big (tp 2"));
  /* a run's own warnings (here the events.csv cap, ema's only: static's pool does nothing)
   * name their variant too */
  {
    g_autofree char *capped = g_build_filename(dir, "capped", NULL);
    g_autoptr(EmaTestRun) run2 =
        ema_test_cli("run", path, "--set", "events_max_rows=1", "-o", capped, "--no-plot", NULL);
    g_assert_cmpint(run2->status, ==, 0);
    ema_test_assert_contains(run2->err, "ema-sim: warning: ema: events.csv stopped at 1 rows");
  }
  ema_test_remove_tree(dir);
}

/* idle-lender.yaml: gpu1 has no tenant and lends to gpu0's. timeline.csv has both GPUs' rows at
 * every sample, gpu1's with an empty tenant and nothing of a tenant's, its slices_lent what gpu0
 * borrowed (the only borrower, the only lender); summary.json's idle_gpus holds its room (90% of
 * an H200's 139.8 GiB: 64,419 slices) and its peak. Under a cap of 5 rows the timeline keeps 2
 * whole samples (4 rows), and the warning before the run counts both GPUs. */
static void test_idle_lender_timeline(void) {
  g_autofree char *dir = ema_test_temp_dir();
  g_autofree char *capped = g_build_filename(dir, "capped", NULL);
  g_autofree char *timeline = NULL, *summary = NULL, *capped_timeline = NULL;
  g_auto(GStrv) rows = NULL, capped_rows = NULL;
  g_autoptr(JsonParser) parser = json_parser_new();
  JsonArray *idle;
  JsonObject *gpu1;
  guint64 lent_peak = 0;
  guint samples = 0;
  {
    g_autoptr(EmaTestRun) run = ema_test_cli("run", IDLE_LENDER, "-o", dir, "--no-plot", NULL);
    g_assert_cmpint(run->status, ==, 0);
  }
  timeline = ema_test_read_file(dir, "timeline.csv");
  rows = g_strsplit(timeline, "\n", -1);
  for (guint i = 1; rows[i] && rows[i][0]; i += 2, samples++) {
    g_auto(GStrv) busy = g_strsplit(rows[i], ",", -1);
    g_auto(GStrv) empty = NULL;
    g_autofree char *time = g_strdup_printf("%u.000000000", samples);
    g_assert_nonnull(rows[i + 1]);
    empty = g_strsplit(rows[i + 1], ",", -1);
    g_assert_cmpstr(busy[0], ==, time);
    g_assert_cmpstr(busy[1], ==, "0");
    g_assert_cmpstr(busy[2], ==, "tight");
    g_assert_cmpstr(empty[0], ==, time);
    g_assert_cmpstr(empty[1], ==, "1");
    g_assert_cmpstr(empty[2], ==, "");
    for (guint k = 3; k < 13; k++)
      if (k != 8) /* slices_lent */
        g_assert_cmpstr(empty[k], ==, k == 7 ? "0.000000" : "0");
    g_assert_cmpstr(busy[8], ==, "0");      /* gpu0 lends nothing */
    g_assert_cmpstr(empty[8], ==, busy[9]); /* gpu1 lent what gpu0 borrowed */
    lent_peak = MAX(lent_peak, g_ascii_strtoull(empty[8], NULL, 10));
  }
  g_assert_cmpuint(samples, ==, 11); /* 0 s to 10 s */
  g_assert_cmpuint(lent_peak, >, 0);
  summary = ema_test_read_file(dir, "summary.json");
  g_assert_true(json_parser_load_from_data(parser, summary, -1, NULL));
  idle =
      json_object_get_array_member(json_node_get_object(json_parser_get_root(parser)), "idle_gpus");
  g_assert_cmpuint(json_array_get_length(idle), ==, 1);
  gpu1 = json_array_get_object_element(idle, 0);
  g_assert_cmpint(json_object_get_int_member(gpu1, "gpu"), ==, 1);
  g_assert_cmpint(json_object_get_int_member(gpu1, "lendable_bytes"), ==, 64419 * EMA_SLICE_BYTES);
  g_assert_cmpint(json_object_get_int_member(gpu1, "lent_peak_bytes"), ==,
                  (gint64) (lent_peak * EMA_SLICE_BYTES));
  {
    g_autoptr(EmaTestRun) run = ema_test_cli("run", IDLE_LENDER, "--set", "timeline_max_rows=5",
                                             "-o", capped, "--no-plot", NULL);
    g_assert_cmpint(run->status, ==, 0);
    ema_test_assert_contains(run->err, "ema-sim: warning: timeline.csv may reach its cap of 5 rows "
                                       "(sample_period 1 s over duration 10 s: up to 11 samples "
                                       "of 2 GPUs)");
    ema_test_assert_contains(run->err, "ema-sim: warning: timeline.csv stopped at 4 rows "
                                       "(timeline_max_rows 5: whole samples only), at 2 s");
  }
  capped_timeline = ema_test_read_file(capped, "timeline.csv");
  capped_rows = g_strsplit(capped_timeline, "\n", -1);
  g_assert_cmpuint(g_strv_length(capped_rows), ==, 6); /* the header, 4 rows, "" */
  for (guint i = 1; i < 5; i++)
    g_assert_cmpstr(capped_rows[i], ==, rows[i]);
  ema_test_remove_tree(dir);
}

/* idle-lender.yaml under compare: (static, and static with a 1 ms client timeout, which every
 * request outlasts): compare.csv counts the borrower's timed-out requests per run, all that
 * arrived in the second and none in the first. */
static void test_compare_timed_out(void) {
  g_autofree char *dir = ema_test_temp_dir();
  g_autofree char *root = g_strdup(g_getenv("EMA_SOURCE_ROOT"));
  g_autofree char *fixture = ema_test_read_file(root, IDLE_LENDER);
  g_autofree char *text =
      g_strconcat(fixture,
                  "compare:\n  static: {policy: static}\n  hurried: {policy: static, "
                  "tenants.0.trace.timeout: 1ms}\n",
                  NULL);
  g_autofree char *path = g_build_filename(dir, "cmp.yaml", NULL);
  g_autofree char *out = g_build_filename(dir, "out", NULL);
  g_autofree char *csv = NULL;
  g_auto(GStrv) lines = NULL, header = NULL, patient = NULL, hurried = NULL;
  g_autoptr(EmaTestRun) run = NULL;
  guint arrived = 0, timed_out = 0;
  g_assert_true(g_file_set_contents(path, text, -1, NULL));
  run = ema_test_cli("run", path, "-o", out, "--no-plot", NULL);
  g_assert_cmpint(run->status, ==, 0);
  csv = ema_test_read_file(out, "compare.csv");
  lines = g_strsplit(csv, "\n", -1);
  header = g_strsplit(lines[0], ",", -1);
  patient = g_strsplit(lines[1], ",", -1);
  hurried = g_strsplit(lines[2], ",", -1);
  while (header[arrived] && strcmp(header[arrived], "borrower_arrived") != 0)
    arrived++;
  while (header[timed_out] && strcmp(header[timed_out], "borrower_timed_out") != 0)
    timed_out++;
  g_assert_nonnull(header[arrived]);
  g_assert_nonnull(header[timed_out]);
  g_assert_cmpstr(patient[0], ==, "static");
  g_assert_cmpstr(patient[timed_out], ==, "0");
  g_assert_cmpstr(hurried[0], ==, "hurried");
  g_assert_cmpstr(hurried[timed_out], !=, "0");
  g_assert_cmpstr(hurried[timed_out], ==, hurried[arrived]);
  ema_test_remove_tree(dir);
}

/* idle-lender.yaml under compare: (static, ema): gpu1, which has no tenant, lent to the
 * borrower under ema and nothing under static; the comparison names it, alone (gpu0's tenant has
 * no other beside it), with the most it lent at one sample (ema's summary.json; static's says
 * 0). ema-sim plot draws gpu1's memory panel in the ema run, where it lent, and not in the static
 * one, where it never did (where gnuplot is on PATH). */
static void test_idle_lender_compare(void) {
  g_autofree char *dir = ema_test_temp_dir();
  g_autofree char *root = g_strdup(g_getenv("EMA_SOURCE_ROOT"));
  g_autofree char *fixture = ema_test_read_file(root, IDLE_LENDER);
  g_autofree char *text =
      g_strconcat(fixture, "compare:\n  static: {policy: static}\n  ema: {policy: ema}\n", NULL);
  g_autofree char *path = g_build_filename(dir, "cmp.yaml", NULL);
  g_autofree char *out = g_build_filename(dir, "out", NULL);
  g_autofree char *gnuplot = g_find_program_in_path("gnuplot");
  g_autofree char *peak = NULL, *want = NULL, *zero = NULL;
  g_autoptr(EmaTestRun) run = NULL;
  g_assert_true(g_file_set_contents(path, text, -1, NULL));
  run = ema_test_cli("run", path, "-o", out, "--no-plot", NULL);
  g_assert_cmpint(run->status, ==, 0);
  peak = idle_peak_text(out, "ema");
  zero = idle_peak_text(out, "static");
  g_assert_cmpstr(zero, ==, "0 B");
  g_assert_cmpstr(peak, !=, "0 B");
  want = g_strdup_printf("\ncomparison: borrower tight (gpu0), lenders gpu1 (no tenant): lent up "
                         "to %s at one sample\n",
                         peak);
  ema_test_assert_contains(run->out, want);
  {
    /* no lender tenant: its figures are "-" and empty fields; the idle GPU's peak is a column */
    g_autofree char *csv = ema_test_read_file(out, "compare.csv");
    g_auto(GStrv) lines = g_strsplit(csv, "\n", -1);
    g_auto(GStrv) header = g_strsplit(lines[0], ",", -1);
    g_auto(GStrv) ema = g_strsplit(lines[2], ",", -1);
    guint idle = 0, lenders = 0;
    g_autofree char *size = NULL;
    ema_test_assert_contains(run->out, " |         -         - | ");
    while (header[idle] && strcmp(header[idle], "idle_gpus_lent_peak_gib") != 0)
      idle++;
    while (header[lenders] && strcmp(header[lenders], "lenders_ttft_p99_ms_max") != 0)
      lenders++;
    g_assert_nonnull(header[idle]);
    g_assert_nonnull(header[lenders]);
    g_assert_cmpstr(ema[0], ==, "ema");
    g_assert_cmpstr(ema[lenders], ==, "");
    /* the same peak as the header's "lent up to X" */
    size = ema_units_format_size_human((guint64) (g_ascii_strtod(ema[idle], NULL) * (1 << 30)));
    g_assert_cmpstr(size, ==, peak);
  }
  if (gnuplot) {
    g_autoptr(EmaTestRun) plot = ema_test_cli("plot", out, NULL);
    g_autofree char *ema_dir = g_build_filename(out, "ema", NULL);
    g_autofree char *static_dir = g_build_filename(out, "static", NULL);
    g_autofree char *ema_data = NULL, *static_data = NULL;
    g_assert_cmpint(plot->status, ==, 0);
    ema_data = ema_test_read_file(ema_dir, "plots/memory.dat");
    static_data = ema_test_read_file(static_dir, "plots/memory.dat");
    ema_test_assert_contains(ema_data, "\n# gpu1 (no tenant)\n");
    {
      /* the remote figure leaves gpu1 (series 2) out: it holds no remote KV */
      g_autofree char *plots = g_build_filename(ema_dir, "plots", NULL);
      g_autofree char *driver = ema_test_read_file(plots, "plots.gp");
      ema_test_assert_contains(driver, "\ntenant_series = '1'\n");
    }
    g_assert_null(strstr(static_data, "gpu1"));
  }
  ema_test_remove_tree(dir);
}

/* tp-borrow.yaml as a sweep of two variants (static, ema): the group's
 * warning is printed once, naming the one point that gives it. */
static void test_tp_sweep(void) {
  g_autofree char *dir = ema_test_temp_dir(), *root = g_strdup(g_getenv("EMA_SOURCE_ROOT"));
  g_autofree char *fixture = ema_test_read_file(root, FIXTURES "tp-borrow.yaml");
  g_autofree char *text =
      g_strconcat(fixture, "variants:\n  fixed: {policy: static}\n  shared: {}\n", NULL);
  g_autofree char *path = g_build_filename(dir, "sweep.yaml", NULL);
  g_autofree char *out = g_build_filename(dir, "out", NULL);
  g_autoptr(EmaTestRun) run = NULL;
  g_assert_true(g_file_set_contents(path, text, -1, NULL));
  run = ema_test_cli("sweep", path, "-o", out, "--no-plot", NULL);
  g_assert_cmpint(run->status, ==, 0);
  g_assert_nonnull(strstr(run->err, "ema-sim: warning: tenant big (tp 2 on gpu0..gpu1) shares as a "
                                    "group under policy ema"));
  g_assert_nonnull(strstr(run->err, "(1 of the 2 points: 001-shared)\n"));
  /* the point's run repeats it in its run.err; it names no point again */
  g_assert_null(strstr(run->err, "point 001-shared warned: tenant big (tp 2"));
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
  prefix = g_strdup_printf("ema-sim: cannot create output directory %s: ", out);
  {
    g_autoptr(EmaTestRun) run = ema_test_cli("run", GOLDEN, "-o", out, NULL);
    ema_test_assert_error_line(run, prefix);
  }
  /* -o naming the regular file itself */
  {
    g_autofree char *prefix_file =
        g_strdup_printf("ema-sim: cannot create output directory %s: ", blocker);
    g_autoptr(EmaTestRun) run = ema_test_cli("run", GOLDEN, "-o", blocker, NULL);
    ema_test_assert_error_line(run, prefix_file);
  }
  /* -o '' names no folder (mkdir's "Invalid argument" did not say which) */
  {
    g_autoptr(EmaTestRun) run = ema_test_cli("run", GOLDEN, "-o", "", NULL);
    ema_test_assert_error_line(
        run, "ema-sim: the output directory's name is empty: give a folder (-o DIR)");
  }
  /* and for a sweep, before it says where its points go ("24 points in /") */
  {
    g_autofree char *grid = ema_test_fixture("sweep", "serving-grid.yaml");
    g_autoptr(EmaTestRun) run = ema_test_cli("sweep", grid, "-o", "", NULL);
    ema_test_assert_error_line(
        run, "ema-sim: the output directory's name is empty: give a folder (-o DIR)");
    g_assert_cmpstr(run->out, ==, "");
  }
  ema_test_remove_tree(dir);
}

/* ---- keys an experiment of ops does not read ------------------------------------ */

#define OPS_LIST                                                                                   \
  "ops:\n  - name: one\n    flows:\n      - {kind: copy, src: gpu0, dst: gpu1, bytes: 1GiB}\n"

/* `ema-sim check|run DIR/NAME` (TEXT written there) refused, at LOCATION (after "DIR/NAME:"), with
 * MESSAGE; nothing written. */
static void assert_refused(const char *dir, const char *name, const char *text,
                           const char *location, const char *message) {
  g_autofree char *out = g_build_filename(dir, "out", NULL);
  g_autofree char *prefix = g_strdup_printf("%s/%s:%s: %s", dir, name, location, message);
  g_autoptr(EmaTestRun) check = cli_on_text(dir, name, text, "check");
  g_autoptr(EmaTestRun) run = cli_on_text(dir, name, text, "run");
  ema_test_assert_error_line(check, prefix);
  ema_test_assert_error_line(run, prefix);
  g_assert_false(g_file_test(out, G_FILE_TEST_EXISTS));
}

/* An experiment of ops or decode scenarios refuses the keys only a serving run reads, at the key
 * (it ignored duration, policy, slo, events and the rest); one holding its default is let be, so
 * that an ops run's resolved.yaml, which writes them all, runs again. Nothing in it is drawn at
 * random: a seed other than 1 (the file's or --seed) is a warning, and a sweep's repeats above 1
 * (every one the same run) an error at the key. */
/* The warning of a seed N other than 1 in an experiment of ops or decode scenarios. */
#define SEED_WARNING(n)                                                                            \
  "ema-sim: warning: seed " n ": ops and decode scenarios draw nothing at random, so the seed "    \
  "changes nothing\n"

static void test_ops_serving_keys(void) {
  g_autofree char *dir = ema_test_temp_dir();
  g_autofree char *out = g_build_filename(dir, "out", NULL);
  g_autofree char *resolved = g_build_filename(out, "resolved.yaml", NULL);
  g_autofree char *again = g_build_filename(dir, "again", NULL);
  const char *head = "name: o\nserver: h200x2\n";
  const char *why = "read only by a serving run (tenants:), and this experiment times ";
  g_autofree char *duration = g_strconcat(head, "duration: 10s\n", OPS_LIST, NULL);
  g_autofree char *slo = g_strconcat(head, OPS_LIST, "slo: {ttft: 1s}\n", NULL);
  g_autofree char *events = g_strconcat(head, "events: borrow\n", OPS_LIST, NULL);
  g_autofree char *policy =
      g_strconcat(head,
                  "policy: ema\ndecode:\n  - {name: d, model: llama-3.1-8b, batch: 1, "
                  "context: 100}\n",
                  NULL);
  g_autofree char *defaults = g_strconcat(
      head, "policy: static\nevents: all\nsample_period: 1s\nsteps_csv: false\n", OPS_LIST, NULL);
  g_autofree char *message = NULL;
  message = g_strconcat("duration: ", why, "ops: leave it out", NULL);
  assert_refused(dir, "duration.yaml", duration, "3:1", message);
  g_free(message);
  message = g_strconcat("slo: ", why, "ops: leave it out", NULL);
  assert_refused(dir, "slo.yaml", slo, "7:1", message);
  g_free(message);
  message = g_strconcat("events: ", why, "ops", NULL);
  assert_refused(dir, "events.yaml", events, "3:1", message);
  g_free(message);
  message = g_strconcat("policy: ", why, "decode scenarios: leave it out", NULL);
  assert_refused(dir, "policy.yaml", policy, "3:1", message);
  /* a seed: a warning, the run made; a sweep's repeats, every one the same run, an error */
  {
    g_autofree char *plain = g_build_filename(dir, "plain-seed.yaml", NULL);
    g_autofree char *seeded = g_build_filename(dir, "seeded.yaml", NULL);
    g_autofree char *sweep = g_build_filename(dir, "repeats.yaml", NULL);
    g_autofree char *text = g_strconcat(head, OPS_LIST, NULL);
    g_autofree char *seed_text = g_strconcat(head, "seed: 5\n", OPS_LIST, NULL);
    g_autofree char *repeats = g_strconcat(head, "repeats: 3\n", OPS_LIST, NULL);
    const char *want_seed = SEED_WARNING("3");
    const char *want_file = SEED_WARNING("5");
    g_autofree char *want_repeats =
        g_strdup_printf("%s:3:10: repeats: 3 repeats of ops or decode scenarios would be 3 times "
                        "the same run (they draw nothing at random): give 1",
                        sweep);
    g_autoptr(EmaTestRun) run = NULL;
    g_autoptr(EmaTestRun) check = NULL;
    g_autoptr(EmaTestRun) swept = NULL;
    g_assert_true(g_file_set_contents(plain, text, -1, NULL));
    g_assert_true(g_file_set_contents(seeded, seed_text, -1, NULL));
    g_assert_true(g_file_set_contents(sweep, repeats, -1, NULL));
    swept = ema_test_cli("sweep", sweep, "-o", out, NULL);
    ema_test_assert_error_line(swept, want_repeats);
    g_assert_false(g_file_test(out, G_FILE_TEST_EXISTS));
    check = ema_test_cli("check", seeded, NULL);
    g_assert_cmpint(check->status, ==, 0);
    g_assert_cmpstr(check->err, ==, want_file);
    run = ema_test_cli("run", plain, "--seed", "3", "-o", out, NULL);
    g_assert_cmpint(run->status, ==, 0);
    ema_test_assert_contains(run->err, want_seed);
    ema_test_remove_tree(out);
    g_assert_false(g_file_test(out, G_FILE_TEST_EXISTS));
  }
  /* from --set, at it */
  {
    g_autofree char *plain = g_build_filename(dir, "plain.yaml", NULL);
    g_autoptr(EmaTestRun) set = NULL;
    g_autofree char *text = g_strconcat(head, OPS_LIST, NULL);
    g_assert_true(g_file_set_contents(plain, text, -1, NULL));
    set = ema_test_cli("check", plain, "--set", "sample_period=2s", NULL);
    g_free(message);
    message = g_strconcat("--set:1:1: sample_period: ", why, "ops", NULL);
    ema_test_assert_error_line(set, message);
  }
  /* defaults given change nothing: let be; resolved.yaml writes every key, and runs again */
  {
    g_autoptr(EmaTestRun) run = cli_on_text(dir, "defaults.yaml", defaults, "run");
    g_autoptr(EmaTestRun) rerun = NULL;
    g_autofree char *text = NULL;
    ema_test_assert_ok(run);
    g_assert_true(g_file_get_contents(resolved, &text, NULL, NULL));
    ema_test_assert_contains(text, "\nsample_period: 1s\n");
    ema_test_assert_contains(text, "\nevents: \"all\"\n");
    rerun = ema_test_cli("run", resolved, "-o", again, NULL);
    ema_test_assert_ok(rerun);
  }
  ema_test_remove_tree(dir);
}

/* ---- a key a serving experiment does not read --------------------------------------- */

#define SERVING_TENANT                                                                             \
  "tenants:\n  - {name: a, model: llama-3.1-8b, gpu: 0, trace: {arrivals: poisson, rate: 1, "      \
  "duration: 2s, prompt: {dist: fixed, tokens: 100}, output: {dist: fixed, tokens: 10}}}\n"

/* The reverse of test_ops_serving_keys: a serving experiment refuses the top-level tolerance,
 * which only ops and decode scenarios read (their expectations' default; it was ignored), at the
 * key or its --set, and in a sweep's point; one holding its default is let be, so that a serving
 * run's resolved.yaml, which writes tolerance: 5%, runs again. */
static void test_serving_ops_keys(void) {
  g_autofree char *dir = ema_test_temp_dir();
  g_autofree char *out = g_build_filename(dir, "out", NULL);
  g_autofree char *resolved = g_build_filename(out, "resolved.yaml", NULL);
  g_autofree char *again = g_build_filename(dir, "again", NULL);
  const char *head = "name: s\nserver: h200x2\n";
  const char *why = "tolerance: read only by ops and decode scenarios (ops:, decode:), and this "
                    "experiment serves tenants: leave it out";
  g_autofree char *tolerance = g_strconcat(head, "tolerance: 20%\n", SERVING_TENANT, NULL);
  g_autofree char *defaults = g_strconcat(head, "tolerance: 5%\n", SERVING_TENANT, NULL);
  assert_refused(dir, "tolerance.yaml", tolerance, "3:1", why);
  /* from --set, at it */
  {
    g_autofree char *plain = g_build_filename(dir, "plain.yaml", NULL);
    g_autofree char *text = g_strconcat(head, SERVING_TENANT, NULL);
    g_autofree char *message = g_strconcat("--set:1:1: ", why, NULL);
    g_autoptr(EmaTestRun) set = NULL;
    g_assert_true(g_file_set_contents(plain, text, -1, NULL));
    set = ema_test_cli("check", plain, "--set", "tolerance=1%", NULL);
    ema_test_assert_error_line(set, message);
  }
  /* a sweep's variant that sets it: refused before any point runs, its point named */
  {
    g_autofree char *sweep = g_build_filename(dir, "sweep.yaml", NULL);
    g_autofree char *text = g_strconcat(
        head, SERVING_TENANT, "variants:\n  plain: {}\n  loose: {tolerance: 20%}\n", NULL);
    g_autoptr(EmaTestRun) run = NULL;
    g_assert_true(g_file_set_contents(sweep, text, -1, NULL));
    run = ema_test_cli("sweep", sweep, "-o", out, "--no-plot", NULL);
    g_assert_cmpint(run->status, ==, 1);
    ema_test_assert_contains(run->err, why);
    ema_test_assert_contains(run->err, "(point 001-loose)");
  }
  /* the default given changes nothing: let be; resolved.yaml writes it, and runs again */
  {
    g_autoptr(EmaTestRun) run = cli_on_text(dir, "defaults.yaml", defaults, "run");
    g_autoptr(EmaTestRun) rerun = NULL;
    g_autofree char *text = NULL;
    ema_test_assert_ok(run);
    g_assert_true(g_file_get_contents(resolved, &text, NULL, NULL));
    ema_test_assert_contains(text, "\ntolerance: 5%\n");
    rerun = ema_test_cli("run", resolved, "-o", again, "--no-plot", NULL);
    ema_test_assert_ok(rerun);
  }
  ema_test_remove_tree(dir);
}

/* ---- a trace's start past its end ------------------------------------------------ */

/* A trace file's start past its end left the tenant no request, with check and run silent: an
 * error at the start where the loader knows the end (a file of its own times, read up to the
 * start; arrivals all at 0), a warning naming the tenant where a seed draws the arrivals. */
static void test_trace_start_past_end(void) {
  g_autofree char *dir = ema_test_temp_dir();
  g_autofree char *azure = ema_test_fixture("traces", "azure-good.csv");
  g_autofree char *lengths = ema_test_fixture("traces", "lengths-good.csv");
  const char *head = "name: late\nserver: h200x2\ntenants:\n  - name: a\n    model: llama-3.1-8b\n"
                     "    gpu: 0\n    trace:\n";
  /* its last request arrives 5 h 44 min 13.32 s after its first */
  g_autofree char *past = g_strdup_printf("%s      start: 6h\n      file: %s\n", head, azure);
  g_autofree char *within = g_strdup_printf("%s      start: 5h\n      file: %s\n", head, azure);
  g_autofree char *closed =
      g_strdup_printf("%s      start: 10s\n      file: %s\n      concurrency: 2\n", head, lengths);
  g_autofree char *drawn = g_strdup_printf(
      "%s      start: 1h\n      file: %s\n      arrivals: poisson\n      rate: 1\n", head, lengths);
  assert_refused(dir, "past.yaml", past, "8:14",
                 "tenants.0.trace.start: 21600s is past the end of the trace: its last request "
                 "arrives at 20653.3 s (azure-good.csv's length, from its first request), so the "
                 "tenant would get none; give a start below it\n");
  assert_refused(dir, "closed.yaml", closed, "8:14",
                 "tenants.0.trace.start: 10s: every request of this trace arrives at 0s (a closed "
                 "loop: its clients send as their requests end): a start past it leaves the "
                 "tenant none; leave start out\n");
  {
    g_autoptr(EmaTestRun) run = cli_on_text(dir, "within.yaml", within, "check");
    ema_test_assert_ok(run);
  }
  /* arrivals drawn: known once the seed is, before the run */
  {
    g_autoptr(EmaTestRun) run = cli_on_text(dir, "drawn.yaml", drawn, "check");
    ema_test_assert_ok_warned(run, "ema-sim: warning: tenant a: trace.start 3600s is past the "
                                   "end of its trace: the arrivals drawn for lengths-good.csv's "
                                   "requests (seed 1) end at ");
    ema_test_assert_contains(run->err, " s, so it gets no requests (give a start below it, or "
                                       "cycle: true)\n");
    ema_test_assert_contains(run->out, "drawn.yaml: ok");
  }
  ema_test_remove_tree(dir);
}

/* ---- frontier's options ---------------------------------------------------------- */

/* frontier computes one model a run (frontier.csv has no model column): --model given twice
 * took the last one unsaid; so did --tolerance and -o. Usage errors, nothing written. */
static void test_frontier_option_twice(void) {
  g_autofree char *dir = ema_test_temp_dir();
  g_autofree char *out = g_build_filename(dir, "fr", NULL);
  g_autofree char *other = g_build_filename(dir, "other", NULL);
  g_autofree char *outs =
      g_strdup_printf("ema-sim: -o is given 2 times (%s, %s): give it once", out, other);
  g_autoptr(EmaTestRun) models =
      ema_test_cli("frontier", "--model", "llama-3.1-8b", "--model", "llama-3.1-70b", "-o", out,
                   "--no-plot", "h200x2", NULL);
  g_autoptr(EmaTestRun) tolerances = ema_test_cli("frontier", "--tolerance", "5%", "--tolerance",
                                                  "10%", "-o", out, "--no-plot", "h200x2", NULL);
  g_autoptr(EmaTestRun) folders =
      ema_test_cli("frontier", "-o", out, "-o", other, "--no-plot", "h200x2", NULL);
  ema_test_assert_failed(models, 2,
                         "ema-sim: --model is given 2 times (llama-3.1-8b, llama-3.1-70b): give "
                         "it once (frontier computes one model a run: run it once per model, "
                         "each with its own -o)\n");
  ema_test_assert_failed(tolerances, 2,
                         "ema-sim: --tolerance is given 2 times (5%, 10%): give it once");
  ema_test_assert_failed(folders, 2, outs);
  g_assert_cmpstr(models->out, ==, "");
  g_assert_false(g_file_test(out, G_FILE_TEST_EXISTS));
  g_assert_false(g_file_test(other, G_FILE_TEST_EXISTS));
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
  g_test_add_func("/serving-cli/run/fidelity-names-cut", test_run_fidelity_names_cut);
  g_test_add_func("/serving-cli/run/tp-table", test_run_tp_table);
  g_test_add_func("/serving-cli/run/determinism-and-seed", test_determinism);
  g_test_add_func("/serving-cli/run/set", test_set);
  g_test_add_func("/serving-cli/run/events", test_events);
  g_test_add_func("/serving-cli/run/tenant-sharing", test_tenant_sharing);
  g_test_add_func("/serving-cli/check/group-sharing-warning", test_group_sharing_warning);
  g_test_add_func("/serving-cli/check/whole-server-group-warning", test_whole_server_group_warning);
  g_test_add_func("/serving-cli/check/scaled-fixed-kv-warning", test_scaled_fixed_kv_warning);
  g_test_add_func("/serving-cli/check/events-unwritten-warning", test_events_unwritten_warning);
  g_test_add_func("/serving-cli/run/timeline-cap-whole-samples", test_timeline_cap_whole_samples);
  g_test_add_func("/serving-cli/run/steps-cap", test_steps_cap);
  g_test_add_func("/serving-cli/run/unpark-events", test_unpark_events);
  g_test_add_func("/serving-cli/run/unpark-group", test_unpark_group);
  g_test_add_func("/serving-cli/run/tp-timeline", test_tp_timeline);
  g_test_add_func("/serving-cli/run/tp-compare", test_tp_compare);
  g_test_add_func("/serving-cli/run/idle-lender-timeline", test_idle_lender_timeline);
  g_test_add_func("/serving-cli/run/idle-lender-compare", test_idle_lender_compare);
  g_test_add_func("/serving-cli/run/compare-timed-out", test_compare_timed_out);
  g_test_add_func("/serving-cli/sweep/tp-warning", test_tp_sweep);
  g_test_add_func("/serving-cli/run/unwritable-output", test_unwritable_output);
  g_test_add_func("/serving-cli/vllm/replay", test_vllm_replay);
  g_test_add_func("/serving-cli/overload-warning", test_overload_warning);
  g_test_add_func("/serving-cli/timeout-warning", test_timeout_warning);
  g_test_add_func("/serving-cli/grouped-warnings", test_grouped_warnings);
  g_test_add_func("/serving-cli/group-sharing-grouped", test_group_sharing_grouped);
  g_test_add_func("/serving-cli/idle-borrow-warning", test_idle_borrow_warning);
  g_test_add_func("/serving-cli/vllm/concurrency", test_vllm_concurrency);
  g_test_add_func("/serving-cli/closed-loop-without-arrivals", test_closed_loop_without_arrivals);
  g_test_add_func("/serving-cli/check/unknown-trace-with-arrivals",
                  test_unknown_trace_with_arrivals);
  g_test_add_func("/serving-cli/check/ops-serving-keys", test_ops_serving_keys);
  g_test_add_func("/serving-cli/check/serving-ops-keys", test_serving_ops_keys);
  g_test_add_func("/serving-cli/check/trace-start-past-end", test_trace_start_past_end);
  g_test_add_func("/serving-cli/frontier/option-twice", test_frontier_option_twice);
  for (guint i = 0; i < bad_files->len; i++) {
    const char *file = bad_files->pdata[i];
    g_autofree char *stem = g_strndup(file, strlen(file) - 5);
    g_autofree char *path = g_strconcat("/serving-cli/bad-file/", stem, NULL);
    g_test_add_data_func(path, file, test_bad_file);
  }
  return g_test_run();
}
