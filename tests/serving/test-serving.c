/* test-serving.c: serving runs at the library level (tenant.h, metrics.h,
 * serving.h, output.h), on the fixtures in tests/fixtures/serving/:
 *
 * - one request on an idle GPU, every time checked by hand against the
 *   step-time model (the batch sums of each step written out), in
 *   requests.csv, timeline.csv and summary.json; a request too big for its
 *   KV pool is rejected;
 * - KV pool sizing (ema_tenant_plan: bytes, 2 MiB slices, blocks) by
 *   hand for Llama-3.1-8B on one H200 and Llama-3.1-70B on a TP-4 group,
 *   and the "does not fit" error;
 * - configuration errors, each an exact "file:line:col: key: problem" line
 *   (tests/fixtures/serving/errors/);
 * - invariants of a larger run cut short by `duration`, with overloaded
 *   tenants that preempt (recompute and swap) and a TP group: request
 *   counts against the trace itself, requests.csv rows against their trace
 *   records and against summary.json, timeline.csv rows and block sums;
 * - golden outputs of a small experiment (tests/fixtures/serving/golden/;
 *   EMA_UPDATE_GOLDEN=1 rewrites them, see golden.yaml);
 * - resolved.yaml round trips (the same text, the same requests.csv);
 * - latency histograms (exactness below 512 ns, 0.2% quantiles, exact
 *   means); the metrics observer's requests.csv rows; output errors;
 * - the Azure 2023 conversation trace on one H200 (skipped without
 *   $EMA_SHARED_DIR/traces).
 *
 * Fixtures through EMA_TEST_FIXTURES, the shared traces through
 * EMA_SHARED_DIR. */
#include <math.h>
#include <stdio.h>
#include <string.h>

#include <glib/gstdio.h>
#include <json-glib/json-glib.h>

#include "ema/run/experiment.h"
#include "ema/run/fidelity.h"
#include "ema/serving/metrics.h"
#include "ema/run/output.h"
#include "ema/run/serving.h"
#include "ema/hw/steptime.h"
#include "ema/serving/tenant.h"

#include "testutil.h"

/* ---- helpers ------------------------------------------------------------ */

static EmaExperiment *load(const char *path, const char *const *overrides) {
  GError *error = NULL;
  EmaExperiment *experiment = ema_experiment_load(path, overrides, &error);
  g_assert_no_error(error);
  g_assert_nonnull(experiment);
  g_assert_true(ema_experiment_is_serving(experiment));
  return experiment;
}

/* The error of loading PATH with OVERRIDES, which must fail as an invalid configuration
 * (the caller frees it). */
static GError *load_error(const char *path, const char *const *overrides) {
  GError *error = NULL;
  g_autoptr(EmaExperiment) experiment = ema_experiment_load(path, overrides, &error);
  g_assert_null(experiment);
  g_assert_error(error, EMA_CONFIG_ERROR, EMA_CONFIG_ERROR_INVALID);
  return error;
}

static EmaExperiment *load_fixture(const char *rel) {
  g_autofree char *path = ema_test_fixture("serving", rel);
  return load(path, NULL);
}

static void write_text(const char *dir, const char *name, const char *text) {
  g_autofree char *path = g_build_filename(dir, name, NULL);
  GError *error = NULL;
  g_file_set_contents(path, text, -1, &error);
  g_assert_no_error(error);
}

/* Run EXPERIMENT into DIR as `ema-sim run` does: resolved.yaml, the
 * serving files, summary.json. */
static EmaServingReport *run_into(const EmaExperiment *experiment, const char *dir) {
  GError *error = NULL;
  EmaServingReport *report;
  g_assert_true(ema_output_write_resolved(dir, experiment, &error));
  g_assert_no_error(error);
  report = ema_serving_run(experiment, dir, FALSE, &error);
  g_assert_no_error(error);
  g_assert_nonnull(report);
  g_assert_true(ema_output_write_serving_summary(dir, experiment, report, &error));
  g_assert_no_error(error);
  return report;
}

static JsonObject *tenant_json(JsonNode *root, guint i) {
  JsonArray *tenants = json_object_get_array_member(json_node_get_object(root), "tenants");
  g_assert_nonnull(tenants);
  g_assert_cmpuint(i, <, json_array_get_length(tenants));
  return json_array_get_object_element(tenants, i);
}

static double latency(JsonObject *tenant, const char *metric, const char *which) {
  JsonObject *object = json_object_get_object_member(tenant, metric);
  g_assert_nonnull(object);
  g_assert_true(json_object_has_member(object, which));
  return json_object_get_double_member(object, which);
}

/* The lines of TEXT, which must end in a newline (the last, empty piece is
 * dropped). */
static GStrv lines_of(const char *text) {
  gsize len = strlen(text);
  GStrv lines;
  g_assert_cmpuint(len, >, 0);
  g_assert_cmpint(text[len - 1], ==, '\n');
  lines = g_strsplit(text, "\n", -1);
  g_free(lines[g_strv_length(lines) - 1]);
  lines[g_strv_length(lines) - 1] = NULL;
  return lines;
}

/* "S.FFF" with exactly DIGITS fraction digits, as an integer of 10^-DIGITS
 * units (ns for seconds with 9 digits, ns for ms with 6). */
static gint64 parse_fixed(const char *text, guint digits) {
  const char *dot = strchr(text, '.');
  guint64 whole, fraction;
  g_autofree char *head = NULL;
  if (dot == NULL || strlen(dot + 1) != digits)
    g_error("'%s' is not a number with %u decimals", text, digits);
  head = g_strndup(text, (gsize) (dot - text));
  g_assert_true(g_ascii_string_to_unsigned(head, 10, 0, G_MAXINT64, &whole, NULL));
  g_assert_true(g_ascii_string_to_unsigned(dot + 1, 10, 0, G_MAXINT64, &fraction, NULL));
  return (gint64) (whole * (guint64) pow(10, digits) + fraction);
}

static guint64 parse_count(const char *text) {
  guint64 value;
  if (!g_ascii_string_to_unsigned(text, 10, 0, G_MAXUINT64, &value, NULL))
    g_error("'%s' is not a count", text);
  return value;
}

/* ns as requests.csv writes seconds and milliseconds. */
static char *format_s(EmaTime ns) {
  return g_strdup_printf("%" G_GINT64_FORMAT ".%09" G_GINT64_FORMAT, ns / 1000000000,
                         ns % 1000000000);
}

static char *format_ms(EmaTime ns) {
  return g_strdup_printf("%" G_GINT64_FORMAT ".%06" G_GINT64_FORMAT, ns / 1000000, ns % 1000000);
}

/* Fail at the first line where GOT and WANT differ, showing both. */
static void assert_same_text(const char *what, const char *got, const char *want) {
  g_auto(GStrv) got_lines = g_strsplit(got, "\n", -1);
  g_auto(GStrv) want_lines = g_strsplit(want, "\n", -1);
  for (guint i = 0; got_lines[i] || want_lines[i]; i++) {
    if (got_lines[i] == NULL || want_lines[i] == NULL || strcmp(got_lines[i], want_lines[i]) != 0)
      g_error("%s differs at line %u:\n  got:  %s\n  want: %s", what, i + 1,
              got_lines[i] ? got_lines[i] : "(end)", want_lines[i] ? want_lines[i] : "(end)");
  }
}

/* The columns of timeline.csv this file checks (later columns, which the
 * memory pool may add, are left out), line by line. */
#define TIMELINE_COLUMNS 8
#define TIMELINE_HEADER                                                                            \
  "time_s,gpu,tenant,kv_blocks_used,kv_blocks_free,running,waiting,last_step_ms"

static char *timeline_head(const char *text) {
  g_auto(GStrv) lines = g_strsplit(text, "\n", -1);
  GString *out = g_string_new(NULL);
  for (guint i = 0; lines[i]; i++) {
    g_auto(GStrv) fields = g_strsplit(lines[i], ",", TIMELINE_COLUMNS + 1);
    if (g_strv_length(fields) > TIMELINE_COLUMNS) {
      g_free(fields[TIMELINE_COLUMNS]);
      fields[TIMELINE_COLUMNS] = NULL;
    }
    g_autofree char *head = g_strjoinv(",", fields);
    g_string_append(out, head);
    if (lines[i + 1])
      g_string_append_c(out, '\n');
  }
  return g_string_free(out, FALSE);
}

/* The nearest-rank quantile NUM/DEN of SORTED (N values): the value of rank
 * ceil(N NUM / DEN), computed in integers. */
static guint64 exact_quantile(const guint64 *sorted, guint64 n, guint64 num, guint64 den) {
  guint64 rank = (n * num + den - 1) / den;
  rank = CLAMP(rank, 1, n);
  return sorted[rank - 1];
}

static gint compare_u64(gconstpointer a, gconstpointer b) {
  guint64 x = *(const guint64 *) a, y = *(const guint64 *) b;
  return x < y ? -1 : x > y;
}

static guint64 blocks_for(guint64 tokens) {
  return (tokens + EMA_KV_BLOCK_TOKENS - 1) / EMA_KV_BLOCK_TOKENS;
}

/* ---- 1. one request, by hand --------------------------------------------- */

static EmaTime step_of(const EmaStepModel *model, guint64 prefill, double prefill_context,
                       double prefill_kv_read, guint64 decode_seqs, double decode_context) {
  EmaStepBatch batch = {prefill, prefill_context, prefill_kv_read, decode_seqs, decode_context, 1,
                        1};
  return ema_step_time(model, &batch, NULL);
}

static void test_one_request(void) {
  g_autoptr(EmaExperiment) experiment = load_fixture("one-request.yaml");
  const EmaTenantSpec *tenant = &g_array_index(experiment->tenants, EmaTenantSpec, 0);
  g_autofree char *dir = ema_test_temp_dir();
  g_autoptr(EmaServingReport) report = NULL;
  g_autoptr(EmaStepModel) model = NULL;
  g_autoptr(JsonNode) root = NULL;
  g_autofree char *requests = NULL, *timeline = NULL, *summary = NULL, *want_requests = NULL;
  g_autofree char *want_timeline = NULL, *timeline_text = NULL;
  g_autofree char *s_arrival = NULL, *s_first = NULL, *s_finish = NULL;
  g_autofree char *ms_ttft = NULL, *ms_tpot = NULL, *ms_e2e = NULL;
  const EmaTenantResult *result;
  JsonObject *t, *sim;
  GError *error = NULL;
  EmaTime arrival = EMA_MS(250), prefill, decode[3], first, finish, tpot;
  const double n = 1000;

  model = ema_step_model_new(&tenant->model, &experiment->server, 1, &error);
  g_assert_no_error(error);
  /* step 1: the whole prompt in one chunk (1000 <= max_num_batched_tokens
   * 8192) after p = 0 cached tokens: prefill_tokens n, prefill_context
   * n (n + 1) / 2, prefill_kv_read p + n = n; it samples the first token */
  prefill = step_of(model, 1000, n * (n + 1) / 2, n, 0, 0) + tenant->engine.costs.step_cpu_cost;
  /* steps 2-4: one decode token each, attending to 1001, 1002, 1003 tokens;
   * every step also costs the engine profile's fixed CPU time */
  for (guint i = 0; i < 3; i++)
    decode[i] = step_of(model, 0, 0, 0, 1, 1001 + i) + tenant->engine.costs.step_cpu_cost;
  first = arrival + prefill;
  finish = first + decode[0] + decode[1] + decode[2];
  tpot = (finish - first + 1) / 3; /* nearest ns: (x + (out - 1) / 2) / (out - 1) */
  g_assert_cmpint(tenant->engine.costs.step_cpu_cost, >, 0); /* the default profile, vllm-v1 */
  g_assert_cmpint(prefill - tenant->engine.costs.step_cpu_cost, >,
                  EMA_MS(10)); /* a sane 1000-token */
  g_assert_cmpint(prefill - tenant->engine.costs.step_cpu_cost, <,
                  EMA_MS(30)); /* prefill on an H200 */
  g_assert_cmpint(decode[0], <=, decode[1]);
  g_assert_cmpint(decode[1], <=, decode[2]);

  report = run_into(experiment, dir);
  g_assert_cmpuint(report->tenants->len, ==, 1);
  result = report->tenants->pdata[0];
  g_assert_cmpuint(result->arrived, ==, 1);
  g_assert_cmpuint(result->metrics->completed, ==, 1);
  g_assert_cmpuint(result->rejected, ==, 0);
  g_assert_cmpuint(result->unfinished, ==, 0);
  g_assert_cmpuint(result->metrics->steps, ==, 4);
  g_assert_cmpint(result->metrics->busy, ==, finish - arrival);

  /* requests.csv: exactly the header and this row */
  s_arrival = format_s(arrival);
  s_first = format_s(first);
  s_finish = format_s(finish);
  ms_ttft = format_ms(first - arrival);
  ms_tpot = format_ms(tpot);
  ms_e2e = format_ms(finish - arrival);
  want_requests = g_strdup_printf(
      "tenant,id,arrival_s,scheduled_s,first_token_s,finish_s,prompt_tokens,output_tokens,"
      "preemptions,ttft_ms,tpot_ms,e2e_ms\n"
      "solo,0,%s,%s,%s,%s,1000,4,0,%s,%s,%s\n",
      s_arrival, s_arrival, s_first, s_finish, ms_ttft, ms_tpot, ms_e2e);
  requests = ema_test_read_file(dir, "requests.csv");
  g_assert_cmpstr(requests, ==, want_requests);
  g_assert_cmpstr(s_arrival, ==, "0.250000000");

  /* timeline.csv: a sample at 0 (before the arrival) and at 1 s (after the
   * finish), when the sampler is the only event left; each with gpu1, no
   * tenant's (an empty tenant), after the tenant's row */
  want_timeline = g_strdup_printf(TIMELINE_HEADER "\n"
                                                  "0.000000000,0,solo,0,56362,0,0,0.000000\n"
                                                  "0.000000000,1,,0,0,0,0,0.000000\n"
                                                  "1.000000000,0,solo,0,56362,0,0,%.6f\n"
                                                  "1.000000000,1,,0,0,0,0,0.000000\n",
                                  (double) decode[2] / 1e6);
  timeline_text = ema_test_read_file(dir, "timeline.csv");
  timeline = timeline_head(timeline_text);
  g_assert_cmpstr(timeline, ==, want_timeline);

  /* summary.json */
  summary = ema_test_read_file(dir, "summary.json");
  root = ema_test_parse_json(summary);
  g_assert_cmpstr(json_object_get_string_member(json_node_get_object(root), "experiment"), ==,
                  "one-request");
  g_assert_cmpstr(json_object_get_string_member(json_node_get_object(root), "server"), ==,
                  "h200x2");
  t = tenant_json(root, 0);
  g_assert_cmpstr(json_object_get_string_member(t, "name"), ==, "solo");
  g_assert_cmpstr(json_object_get_string_member(t, "model"), ==, "llama-3.1-8b");
  g_assert_cmpint(json_object_get_int_member(t, "gpu"), ==, 0);
  g_assert_cmpint(json_object_get_int_member(t, "tp"), ==, 1);
  g_assert_cmpint(json_object_get_int_member(t, "arrived"), ==, 1);
  g_assert_cmpint(json_object_get_int_member(t, "completed"), ==, 1);
  g_assert_cmpint(json_object_get_int_member(t, "rejected"), ==, 0);
  g_assert_cmpint(json_object_get_int_member(t, "unfinished"), ==, 0);
  g_assert_cmpint(json_object_get_int_member(t, "preemptions"), ==, 0);
  g_assert_cmpint(json_object_get_int_member(t, "steps"), ==, 4);
  g_assert_cmpint(json_object_get_int_member(t, "kv_blocks"), ==, 56362);
  g_assert_cmpfloat(json_object_get_double_member(t, "busy_s"), ==,
                    (double) (finish - arrival) / 1e9);
  for (guint i = 0; i < 3; i++) {
    const char *const q[] = {"p50", "p90", "p99"};
    /* one sample: every quantile is the value itself (clamped to min/max) */
    g_assert_cmpfloat(latency(t, "ttft_ms", q[i]), ==, (double) (first - arrival) / 1e6);
    g_assert_cmpfloat(latency(t, "tpot_ms", q[i]), ==, (double) tpot / 1e6);
    g_assert_cmpfloat(latency(t, "e2e_ms", q[i]), ==, (double) (finish - arrival) / 1e6);
  }
  g_assert_cmpfloat(latency(t, "ttft_ms", "mean"), ==, (double) (first - arrival) / 1e6);
  g_assert_cmpfloat(latency(t, "tpot_ms", "mean"), ==, (double) tpot / 1e6);
  g_assert_cmpfloat(latency(t, "e2e_ms", "mean"), ==, (double) (finish - arrival) / 1e6);
  /* throughput over the span from the first arrival to the last finish */
  g_assert_cmpfloat_with_epsilon(json_object_get_double_member(t, "throughput_tok_s"),
                                 4 / ((double) (finish - arrival) / 1e9), 1e-9);
  g_assert_cmpfloat_with_epsilon(json_object_get_double_member(t, "req_per_s"),
                                 1 / ((double) (finish - arrival) / 1e9), 1e-9);
  g_assert_cmpfloat(json_object_get_double_member(t, "kv_util_mean"), ==, 0);
  sim = json_object_get_object_member(json_node_get_object(root), "sim");
  g_assert_cmpfloat(json_object_get_double_member(sim, "simulated_s"), ==, 1.0);
  ema_test_remove_tree(dir);
}

/* An engine profile's CPU costs as a tenant pays them (test-group: 1 ms, 100 us a request,
 * 200 us a rank beyond the first, and 300 us + 50 us a request in a group only): at TP 1 the
 * fixed and per-request costs alone; at TP 4 1 + 3 x 0.2 + 0.3 = 1.9 ms and 150 us a request.
 * Its output processing (400 us + 20 us a request) is the driver's, the same at both. */
static void test_engine_cpu_group(void) {
  g_autofree char *path = ema_test_fixture("serving", "one-request.yaml");
  const char *solo[] = {"tenants.0.engine.profile=test-group", NULL};
  const char *group[] = {"tenants.0.engine.profile=test-group", "tenants.0.tp=4",
                         "server=h200x8-hgx", NULL};
  g_autoptr(EmaExperiment) one = load(path, solo);
  g_autoptr(EmaExperiment) four = load(path, group);
  const EmaTenantSpec *t1 = &g_array_index(one->tenants, EmaTenantSpec, 0);
  const EmaTenantSpec *t4 = &g_array_index(four->tenants, EmaTenantSpec, 0);
  g_assert_cmpint(t1->engine.costs.step_cpu_cost, ==, EMA_MS(1));
  g_assert_cmpint(t1->engine.costs.step_cpu_cost_per_seq, ==, EMA_US(100));
  g_assert_cmpint(t4->engine.costs.step_cpu_cost, ==, EMA_US(1900));
  g_assert_cmpint(t4->engine.costs.step_cpu_cost_per_seq, ==, EMA_US(150));
  g_assert_cmpint(t1->engine.costs.output_cpu_cost, ==, EMA_US(400));
  g_assert_cmpint(t4->engine.costs.output_cpu_cost, ==, EMA_US(400));
  g_assert_cmpint(t4->engine.costs.output_cpu_cost_per_seq, ==, EMA_US(20));
}

/* An engine profile's CPU costs on another host (test-host, fitted on a100x8-dgx's, whose
 * host.cpu_speed is 1): on the server it was fitted on, its own; on a host S times as fast, each
 * of them divided by S (the request's API-server time and the eager launches too), rounded to
 * the nanosecond. */
static void test_engine_cpu_host(void) {
  g_autofree char *path = ema_test_fixture("serving", "one-request.yaml");
  const char *same[] = {"tenants.0.engine.profile=test-host", "server=a100x8-dgx", NULL};
  const char *faster[] = {"tenants.0.engine.profile=test-host", "server=a100x8-dgx",
                          "server.host.cpu_speed=1.6", NULL};
  const char *slower[] = {"tenants.0.engine.profile=test-host", "server=a100x8-dgx",
                          "server.host.cpu_speed=0.3", NULL};
  g_autoptr(EmaExperiment) home = load(path, same);
  g_autoptr(EmaExperiment) fast = load(path, faster);
  g_autoptr(EmaExperiment) slow = load(path, slower);
  const EmaEngineSpec *h = &g_array_index(home->tenants, EmaTenantSpec, 0).engine;
  const EmaEngineSpec *f = &g_array_index(fast->tenants, EmaTenantSpec, 0).engine;
  const EmaEngineSpec *s = &g_array_index(slow->tenants, EmaTenantSpec, 0).engine;
  g_assert_cmpfloat(h->host_factor, ==, 1.0);
  g_assert_cmpint(h->costs.step_cpu_cost, ==, EMA_MS(1));
  g_assert_cmpint(h->request_cpu_cost, ==, EMA_MS(2));
  g_assert_cmpfloat(f->host_factor, ==, 1.0 / 1.6);
  g_assert_cmpint(f->costs.step_cpu_cost, ==, 625000);        /* 1 ms / 1.6 */
  g_assert_cmpint(f->costs.step_cpu_cost_per_seq, ==, 62500); /* 100 us / 1.6 */
  g_assert_cmpint(f->costs.output_cpu_cost, ==, 250000);
  g_assert_cmpint(f->costs.output_cpu_cost_per_seq, ==, 12500);
  g_assert_cmpint(f->costs.eager_cpu_cost, ==, 1000000); /* 32 layers x 50 us / 1.6 */
  g_assert_cmpint(f->costs.cuda_graph_max_batch, ==, 8);
  g_assert_cmpint(f->request_cpu_cost, ==, 1250000);
  g_assert_cmpint(s->costs.step_cpu_cost, ==, 3333333); /* 1 ms / 0.3, to the nanosecond */
  g_assert_cmpint(s->request_cpu_cost, ==, 6666667);
  /* the profile's own costs stay as they are, for another server */
  g_assert_cmpint(f->profile_costs.step_cpu_cost, ==, EMA_MS(1));
}

/* A profile whose fitted_host names no server is refused at the tenant's engine.profile, and in
 * the profile at its fitted_host. */
static void test_engine_cpu_host_unknown(void) {
  g_autofree char *path = ema_test_fixture("serving", "one-request.yaml");
  g_autofree char *profile = ema_test_fixture("engines", "test-nohost.yaml");
  const char *set[] = {"tenants.0.engine.profile=test-nohost", NULL};
  g_autofree char *want = g_strconcat("--set:1:26: tenants.0.engine.profile: ", profile,
                                      ":18:14: fitted_host: unknown hardware model "
                                      "'no-such-server' (known: ",
                                      NULL);
  GError *error = NULL;
  g_autoptr(EmaExperiment) experiment = ema_experiment_load(path, set, &error);
  g_assert_null(experiment);
  g_assert_error(error, EMA_CONFIG_ERROR, EMA_CONFIG_ERROR_KEY); /* as any profile that fails */
  g_assert_true(g_str_has_prefix(error->message, want));
  g_error_free(error);
}

/* A profile is found by its file's name, and its name: must be that name: one calling itself
 * another was listed under the one and reported under the other; now an error at its name. */
static void test_engine_profile_misnamed(void) {
  g_autofree char *path = ema_test_fixture("serving", "one-request.yaml");
  g_autofree char *fixture = ema_test_fixture("engines", "test-v1.yaml");
  g_autofree char *dir = ema_test_temp_dir();
  g_autofree char *copy = g_build_filename(dir, "renamed.yaml", NULL);
  g_autofree char *text = NULL;
  g_autofree char *saved = g_strdup(g_getenv("EMA_ENGINE_PATH"));
  g_autofree char *env = g_strconcat(dir, ":", saved ? saved : "", NULL);
  g_autofree char *want = g_strconcat("--set:1:26: tenants.0.engine.profile: ", copy,
                                      ":4:7: name: 'test-v1' is not the name the file is found by "
                                      "('renamed', its file's name without .yaml): make them the "
                                      "same",
                                      NULL);
  const char *set[] = {"tenants.0.engine.profile=renamed", NULL};
  GError *error = NULL;
  g_autoptr(EmaExperiment) experiment = NULL;
  g_assert_true(g_file_get_contents(fixture, &text, NULL, NULL));
  g_assert_true(g_file_set_contents(copy, text, -1, NULL));
  g_setenv("EMA_ENGINE_PATH", env, TRUE);
  experiment = ema_experiment_load(path, set, &error);
  if (saved)
    g_setenv("EMA_ENGINE_PATH", saved, TRUE);
  else
    g_unsetenv("EMA_ENGINE_PATH");
  g_assert_null(experiment);
  g_assert_error(error, EMA_CONFIG_ERROR, EMA_CONFIG_ERROR_KEY);
  g_assert_cmpstr(error->message, ==, want);
  g_error_free(error);
  ema_test_remove_tree(dir);
}

/* On a server of hosts of 4 GPUs (gb200-nvl72's compute trays) a TP group sits within one host
 * or on whole hosts, as vLLM places it: tp 2 at gpu4 and tp 8 at gpu0 load, tp 2 at gpu3 and tp 8
 * at gpu2 are refused at the group's gpu. */
static void test_tp_group_hosts(void) {
  g_autofree char *path = ema_test_fixture("serving", "one-request.yaml");
  const struct {
    const char *gpu, *tp, *message;
  } cases[] = {
      {"tenants.0.gpu=4", "tenants.0.tp=2", NULL},
      {"tenants.0.gpu=0", "tenants.0.tp=8", NULL},
      {"tenants.0.gpu=3", "tenants.0.tp=2",
       "--set:2:15: tenants.0.gpu: GPUs gpu3..gpu4 (tp 2) straddle hosts of 4 GPUs (server "
       "gpus_per_node, a host starting at every 4th GPU): vLLM places a group within one host, "
       "or on whole hosts"},
      {"tenants.0.gpu=2", "tenants.0.tp=8",
       "--set:2:15: tenants.0.gpu: GPUs gpu2..gpu9 (tp 8) straddle hosts of 4 GPUs (server "
       "gpus_per_node, a host starting at every 4th GPU): vLLM places a group within one host, "
       "or on whole hosts"},
  };
  for (guint i = 0; i < G_N_ELEMENTS(cases); i++) {
    const char *set[] = {"server=gb200-nvl72", cases[i].gpu, cases[i].tp, NULL};
    GError *error;
    if (cases[i].message == NULL) {
      g_autoptr(EmaExperiment) experiment = load(path, set);
      continue;
    }
    error = load_error(path, set);
    g_assert_cmpstr(error->message, ==, cases[i].message);
    g_error_free(error);
  }
}

/* A TP size that the server's GPUs or the model's heads refuse is an error at tp where a --set
 * gave it (it named the tenant in the file, a place that holds no tp). */
static void test_tp_size_at_set(void) {
  g_autofree char *path = ema_test_fixture("serving", "one-request.yaml");
  const struct {
    const char *server, *message;
  } cases[] = {
      {"server=h200x8-hgx",
       "--set:2:14: tenants.0.tp: tensor-parallel size 9 must divide the server's 8 GPUs"},
      {"server=gb200-nvl72",
       "--set:2:14: tenants.0.tp: tensor-parallel size 9 must divide llama-3.1-8b's 32 heads"},
  };
  for (guint i = 0; i < G_N_ELEMENTS(cases); i++) {
    const char *set[] = {cases[i].server, "tenants.0.tp=9", NULL};
    GError *error = load_error(path, set);
    g_assert_cmpstr(error->message, ==, cases[i].message);
    g_error_free(error);
  }
}

/* An engine profile's eager launch cost as a tenant pays it (test-eager: 1 ms a layer, CUDA
 * graphs for decode-only steps of up to 4 requests): Llama-3.1-8B's 32 layers, 32 ms a step run
 * eagerly; under enforce_eager no step replays a graph. */
static void test_engine_eager_costs(void) {
  g_autofree char *path = ema_test_fixture("serving", "one-request.yaml");
  const char *graphs[] = {"tenants.0.engine.profile=test-eager", NULL};
  const char *eager[] = {"tenants.0.engine.profile=test-eager",
                         "tenants.0.engine.enforce_eager=true", NULL};
  g_autoptr(EmaExperiment) with_graphs = load(path, graphs);
  g_autoptr(EmaExperiment) all_eager = load(path, eager);
  const EmaTenantSpec *g = &g_array_index(with_graphs->tenants, EmaTenantSpec, 0);
  const EmaTenantSpec *e = &g_array_index(all_eager->tenants, EmaTenantSpec, 0);
  g_assert_cmpint(g->model.layers, ==, 32);
  g_assert_cmpint(g->engine.costs.eager_cpu_cost, ==, EMA_MS(32));
  g_assert_cmpuint(g->engine.costs.cuda_graph_max_batch, ==, 4);
  g_assert_cmpint(e->engine.costs.eager_cpu_cost, ==, EMA_MS(32));
  g_assert_cmpuint(e->engine.costs.cuda_graph_max_batch, ==, 0);
}

/* Batch limits an experiment leaves out come from the engine profile by GPU, as vllm serve
 * picks them: vllm-v1 on an H200 (>= 70 GiB) 1024 requests and 8192 tokens, on an A100-80GB
 * (excepted by name) 256 and 2048; vllm-v0 256 and max(2048, max_model_len), here Llama-3.1-8B's
 * 131072; a key the file gives wins. With chunked prefill (vllm-v0-async-output above a
 * max_model_len of 32k, its default; vllm-v0 when the file asks) a V0 tenant schedules as V1
 * with V0's chunked budget of 512 tokens; at a max_model_len of 8192 vllm-v0-async-output does
 * not chunk (8192 tokens, the prompt's floor). The V1 profiles run the LM head on every
 * scheduled request, the V0 ones, chunking or not, only on those that sample. */
static void test_batch_defaults(void) {
  g_autofree char *path = ema_test_fixture("serving", "one-request.yaml");
  const struct {
    const char *overrides[4];
    gint64 seqs, tokens;
    EmaSchedulerKind scheduler;
    gboolean logits_every_request; /* V1's model runner; V0 (chunked or not) samples only */
  } cases[] = {
      {{"tenants.0.engine.profile=vllm-v1", NULL}, 1024, 8192, EMA_SCHEDULER_V1, TRUE},
      {{"tenants.0.engine.profile=vllm-v1-async", NULL}, 1024, 8192, EMA_SCHEDULER_V1, TRUE},
      {{"tenants.0.engine.profile=vllm-v1", "server=a100x8-dgx", NULL},
       256,
       2048,
       EMA_SCHEDULER_V1,
       TRUE},
      {{"tenants.0.engine.profile=vllm-v0", NULL}, 256, 131072, EMA_SCHEDULER_V0, FALSE},
      {{"tenants.0.engine.profile=vllm-v0", "tenants.0.engine.max_model_len=1000", NULL},
       256,
       2048,
       EMA_SCHEDULER_V0,
       FALSE},
      {{"tenants.0.engine.profile=vllm-v1", "tenants.0.engine.max_num_seqs=7",
        "tenants.0.engine.max_num_batched_tokens=99", NULL},
       7,
       99,
       EMA_SCHEDULER_V1,
       TRUE},
      {{"tenants.0.engine.profile=vllm-v0-async-output", NULL}, 256, 512, EMA_SCHEDULER_V1, FALSE},
      {{"tenants.0.engine.profile=vllm-v0-async-output", "tenants.0.engine.max_model_len=8192",
        NULL},
       256,
       8192,
       EMA_SCHEDULER_V0,
       FALSE},
      {{"tenants.0.engine.profile=vllm-v0", "tenants.0.engine.chunked_prefill=true", NULL},
       256,
       512,
       EMA_SCHEDULER_V1,
       FALSE},
  };
  for (guint i = 0; i < G_N_ELEMENTS(cases); i++) {
    g_autoptr(EmaExperiment) experiment = load(path, cases[i].overrides);
    const EmaTenantSpec *t = &g_array_index(experiment->tenants, EmaTenantSpec, 0);
    g_assert_cmpint(t->engine.max_num_seqs, ==, cases[i].seqs);
    g_assert_cmpint(t->engine.max_num_batched_tokens, ==, cases[i].tokens);
    g_assert_cmpint(t->engine.scheduler, ==, cases[i].scheduler);
    g_assert_cmpint(t->engine.logits_every_request, ==, cases[i].logits_every_request);
  }
}

/* summary.json's provenance names every input file once, sorted: the profiles are read from
 * several threads, and the order they were read in must not reach an output. */
static void test_provenance_sorted(void) {
  g_autoptr(EmaExperiment) experiment = load_fixture("one-request.yaml");
  g_autofree char *dir = ema_test_temp_dir();
  g_autoptr(EmaServingReport) report = run_into(experiment, dir);
  g_autofree char *summary = ema_test_read_file(dir, "summary.json");
  g_autoptr(JsonNode) root = ema_test_parse_json(summary);
  JsonArray *inputs = json_object_get_array_member(
      json_object_get_object_member(json_node_get_object(root), "provenance"), "inputs");
  g_assert_cmpuint(json_array_get_length(inputs), >, 2);
  for (guint i = 1; i < json_array_get_length(inputs); i++) {
    const char *before =
        json_object_get_string_member(json_array_get_object_element(inputs, i - 1), "file");
    const char *after =
        json_object_get_string_member(json_array_get_object_element(inputs, i), "file");
    g_assert_cmpint(strcmp(before, after), <, 0);
  }
  ema_test_remove_tree(dir);
}

/* steps.csv of the one request: four rows in the columns of vLLM's step
 * traces, the GPU time in step.duration_us and the whole step (with the
 * profile's 1 ms of CPU) in cycle_time_us. */
static void test_steps_csv(void) {
  g_autoptr(EmaExperiment) experiment = load_fixture("one-request.yaml");
  const EmaTenantSpec *tenant = &g_array_index(experiment->tenants, EmaTenantSpec, 0);
  g_autofree char *dir = ema_test_temp_dir();
  g_autoptr(EmaServingReport) report = NULL;
  g_autoptr(EmaStepModel) model = NULL;
  g_autofree char *steps = NULL, *summary = NULL;
  g_autoptr(JsonNode) root = NULL;
  g_auto(GStrv) lines = NULL;
  g_autofree char *want0 = NULL, *want3 = NULL;
  JsonObject *fidelity;
  GError *error = NULL;
  const double n = 1000;
  EmaTime prefill, decode, cpu = EMA_MS(1), start3;

  g_assert_cmpint(tenant->engine.costs.step_cpu_cost, ==, cpu); /* test-v1 */
  model = ema_step_model_new(&tenant->model, &experiment->server, 1, &error);
  g_assert_no_error(error);
  prefill = step_of(model, 1000, n * (n + 1) / 2, n, 0, 0);
  decode = step_of(model, 0, 0, 0, 1, 1003);
  start3 = EMA_MS(250) + prefill + step_of(model, 0, 0, 0, 1, 1001) +
           step_of(model, 0, 0, 0, 1, 1002) + 3 * cpu;
  experiment->steps_csv = TRUE;
  report = run_into(experiment, dir);
  steps = ema_test_read_file(dir, "steps.csv");
  lines = g_strsplit(steps, "\n", -1);
  g_assert_cmpuint(g_strv_length(lines), ==, 6); /* header, 4 rows, "" */
  g_assert_cmpstr(lines[0], ==,
                  "step.id,step.ts_start_ns,step.ts_end_ns,step.duration_us,queue.running_depth,"
                  "queue.waiting_depth,batch.num_prefill_reqs,batch.num_decode_reqs,"
                  "batch.scheduled_tokens,batch.prefill_tokens,batch.decode_tokens,"
                  "batch.num_finished,batch.num_preempted,kv.usage_gpu_ratio,kv.blocks_total_gpu,"
                  "kv.blocks_free_gpu,tenant,cycle_time_us,cpu_time_us");
  /* step 0: the 1000-token prefill (63 blocks of 56362 in use) */
  want0 = g_strdup_printf("0,250000000,%" G_GINT64_FORMAT ",%.3f,1,0,1,0,1000,1000,0,0,0,%.6f,"
                          "56362,56299,solo,%.3f,1000.000",
                          EMA_MS(250) + prefill + cpu, (double) prefill / 1e3, 63.0 / 56362,
                          (double) (prefill + cpu) / 1e3);
  g_assert_cmpstr(lines[1], ==, want0);
  /* step 3: the last decode (context 1003), which finishes the request */
  want3 = g_strdup_printf("3,%" G_GINT64_FORMAT ",%" G_GINT64_FORMAT ",%.3f,1,0,0,1,1,0,1,1,0,"
                          "%.6f,56362,56299,solo,%.3f,1000.000",
                          start3, start3 + decode + cpu, (double) decode / 1e3, 63.0 / 56362,
                          (double) (decode + cpu) / 1e3);
  g_assert_cmpstr(lines[4], ==, want3);
  /* summary.json says what the times rest on */
  summary = ema_test_read_file(dir, "summary.json");
  root = ema_test_parse_json(summary);
  fidelity = json_object_get_object_member(tenant_json(root, 0), "fidelity");
  g_assert_cmpstr(json_object_get_string_member(fidelity, "engine_profile"), ==, "test-v1");
  g_assert_cmpstr(json_object_get_string_member(fidelity, "scheduler"), ==, "v1");
  g_assert_cmpfloat(json_object_get_double_member(fidelity, "step_cpu_cost_s"), ==, 0.001);
  /* the fixture table's row of h200-sxm, TP 1, 16-bit, test-v1 (main sets EMA_FIDELITY_FILE) */
  g_assert_cmpstr(json_object_get_string_member(fidelity, "status"), ==,
                  "validated: TTFT 1.0%, TPOT 2.0%, E2E 3.0% (worst of 5 real runs, means)");
  g_assert_cmpfloat(json_object_get_double_member(
                        json_object_get_object_member(fidelity, "measured_error"), "tpot_mean"),
                    ==, 0.02);
  g_assert_cmpstr(json_object_get_string_member(
                      json_object_get_object_member(fidelity, "operator_sources"), "gemm"),
                  ==, "h200-sxm measured tables");
  ema_test_remove_tree(dir);
}

/* The fidelity of three combinations (fidelity.h): a profiled GPU with a
 * validated row (FP8 weights at TP 2 on H200: the fixture table's second
 * row), a GPU without a profile (L40S: every operator on the roofline,
 * unvalidated whatever the table says), and a profiled GPU whose public data
 * set is absent (a profile that imports a missing file: unvalidated, its
 * warning named). */
static void test_fidelity_combinations(void) {
  g_autoptr(EmaExperiment) experiment = load_fixture("one-request.yaml");
  EmaTenantSpec spec = g_array_index(experiment->tenants, EmaTenantSpec, 0);
  g_autoptr(EmaServerSpec) h200 = ema_server_load("h200x2", NULL);
  g_autoptr(EmaServerSpec) l40s = ema_server_load("l40sx8-pcie", NULL);
  g_autoptr(EmaFidelity) fp8 = NULL, roofline = NULL, missing = NULL;
  g_autofree char *dir = ema_test_temp_dir();
  g_autofree char *profile_dir = g_build_filename(dir, "fid-missing", NULL);
  g_autofree char *yaml = g_build_filename(profile_dir, "profile.yaml", NULL);
  /* the built-in H200 profile, with its data where ../shared has it (not the suite's fixture) */
  g_autofree char *saved_path = g_strdup(g_getenv("EMA_PROFILE_PATH"));
  GError *error = NULL;
  g_unsetenv("EMA_PROFILE_PATH");
  spec.model.weights = EMA_PRECISION_FP8;
  spec.tp = 2;
  fp8 = ema_fidelity_of(&spec, h200, &error);
  g_assert_no_error(error);
  g_assert_cmpstr(fp8->weights, ==, "fp8");
  if (ema_test_shared_absent()) {
    /* the row stands for the profile with its data: without it, unvalidated */
    g_assert_false(fp8->validated);
    g_assert_true(g_str_has_prefix(fp8->status, "unvalidated: the h200-sxm profile's data is "
                                                "missing"));
  } else {
    g_assert_true(fp8->validated);
    g_assert_cmpstr(fp8->status, ==,
                    "validated: TTFT 4.0%, TPOT 5.0%, E2E 6.0% (worst of 2 real runs, means)");
  }
  /* FP8 GEMMs: AIConfigurator's rows where ../shared has them, else the roofline */
  g_assert_true(strcmp(fp8->sources.gemm, "aiconfigurator h200_sxm vLLM 0.19.0") == 0 ||
                strcmp(fp8->sources.gemm, "roofline") == 0);
  if (!ema_test_shared_absent()) {
    /* the row was measured with the tables' all-reduces and on the fitted host: on links
     * unlike the tables' (the all-reduce model), or on another host, it does not hold */
    g_autoptr(EmaFidelity) links = NULL, host = NULL;
    double bandwidth = h200->link.bandwidth;
    h200->link.bandwidth = 600e9;
    links = ema_fidelity_of(&spec, h200, &error);
    h200->link.bandwidth = bandwidth;
    g_assert_no_error(error);
    g_assert_false(links->validated);
    g_assert_cmpstr(links->status, ==,
                    "unvalidated: this group's all-reduces come from the all-reduce model, not "
                    "the h200-sxm tables its real runs were replayed with");
    spec.engine.host_factor = 1.5;
    host = ema_fidelity_of(&spec, h200, &error);
    spec.engine.host_factor = 1.0;
    g_assert_no_error(error);
    g_assert_false(host->validated);
    g_assert_true(g_str_has_prefix(host->status, "unvalidated: the engine's CPU costs run on "
                                                 "another host than the one its real runs had"));
  }
  spec.model.weights = EMA_PRECISION_AUTO;
  spec.tp = 1;
  roofline = ema_fidelity_of(&spec, l40s, &error);
  g_assert_no_error(error);
  g_assert_false(roofline->validated);
  g_assert_cmpstr(roofline->status, ==,
                  "unvalidated: no real runs of L40S-48GB, TP 1, 16-bit weights, 16-bit KV, "
                  "test-v1 (the GPU has no operator profile: every operator on the roofline)");
  g_assert_cmpstr(roofline->sources.gemm, ==, "roofline");
  g_assert_cmpstr(roofline->sources.attn_decode, ==, "roofline");
  /* a profile named h200-sxm-like whose one import is absent: the table has no row of it */
  g_assert_cmpint(g_mkdir_with_parents(profile_dir, 0755), ==, 0);
  g_assert_true(g_file_set_contents(
      yaml,
      "source: tests\nimport:\n  - {format: aic-gemm, label: absent, path: no/such/table.csv}\n",
      -1, NULL));
  g_setenv("EMA_PROFILE_PATH", dir, TRUE);
  g_free(h200->gpu.profile);
  h200->gpu.profile = g_strdup("fid-missing");
  missing = ema_fidelity_of(&spec, h200, &error);
  if (saved_path)
    g_setenv("EMA_PROFILE_PATH", saved_path, TRUE);
  else
    g_unsetenv("EMA_PROFILE_PATH");
  g_assert_no_error(error);
  g_assert_false(missing->validated);
  g_assert_cmpuint(missing->warnings->len, ==, 1);
  g_assert_nonnull(strstr(missing->warnings->pdata[0], "no/such/table.csv absent"));
  g_assert_cmpstr(missing->status, ==,
                  "unvalidated: no real runs of fid-missing, TP 1, 16-bit weights, 16-bit KV, "
                  "test-v1 (and the profile's data is missing)");
  g_assert_cmpstr(missing->sources.gemm, ==, "roofline");
  ema_test_remove_tree(dir);
}

/* num_gpu_blocks given: CodeLlama-34B's 3 MiB blocks (16 x 2 x 48 x 8 x
 * 128 x 2 B), 2537 of them as vLLM allocated on an H100: 7611 MiB, 3806
 * whole slices (7612 MiB), which hold 2537 blocks again. Without it, the
 * sizing of tenant.h: 79.2 GiB x 0.9 - 62.85 GiB of weights - the derived
 * activation reserve (test-v1 has no fixed reserve). */
static void test_plan_given_blocks(void) {
  g_autoptr(EmaExperiment) experiment = load_fixture("plan-given-blocks.yaml");
  const EmaTenantSpec *given = &g_array_index(experiment->tenants, EmaTenantSpec, 0);
  const EmaTenantSpec *derived = &g_array_index(experiment->tenants, EmaTenantSpec, 1);
  EmaTenantSpec fp8 = *derived; /* a shallow copy: only its model's kv_cache differs */
  EmaTenantPlan plan;
  GError *error = NULL;
  const guint64 mib = G_GUINT64_CONSTANT(1) << 20;
  const guint64 usable = (guint64) floor(79.2 * 1073741824.0 * 0.9);
  const guint64 weights = G_GUINT64_CONSTANT(67487940608);
  /* 4096 x (2 x 8192 + 80 x 128 + 2 x 22016) x 2 + 256 x 32000 x 4 */
  const guint64 reserve = 4096ull * (2 * 8192 + 80 * 128 + 2 * 22016) * 2 + 256ull * 32000 * 4;

  g_assert_true(ema_tenant_plan(given, &experiment->server, &plan, &error));
  g_assert_no_error(error);
  g_assert_cmpuint(plan.block_bytes, ==, 3 * mib);
  g_assert_cmpuint(plan.kv_bytes, ==, 7611 * mib);
  g_assert_cmpuint(plan.slices, ==, 3806);
  g_assert_cmpuint(plan.blocks, ==, 2537);
  g_assert_cmpuint(plan.watermark_blocks, ==, 26); /* ceil(1% of 2537) */

  g_assert_true(ema_tenant_plan(derived, &experiment->server, &plan, &error));
  g_assert_no_error(error);
  g_assert_cmpuint(plan.weight_bytes, ==, weights);
  g_assert_cmpuint(plan.activation_reserve, ==, reserve);
  g_assert_cmpuint(plan.kv_bytes, ==, usable - weights - reserve);
  g_assert_cmpuint(plan.blocks, ==, (usable - weights - reserve) / (2 * mib) * 2 / 3);
  /* 76,536,317,214 - 67,487,940,608 - 611,581,952 = 8,436,794,654 B: 4022 slices, 2681 blocks
   * (vLLM: 2537; the fixed reserve of hwmodels/engines/vllm-v1.yaml is for that gap) */
  g_assert_cmpuint(reserve, ==, 611581952);
  g_assert_cmpuint(plan.kv_bytes, ==, G_GUINT64_CONSTANT(8436794654));
  g_assert_cmpuint(plan.slices, ==, 4022);
  g_assert_cmpuint(plan.blocks, ==, 2681);

  /* an FP8 KV cache: 1.5 MiB blocks, twice as many in the same slices */
  fp8.model.kv_cache = EMA_PRECISION_FP8;
  g_assert_true(ema_tenant_plan(&fp8, &experiment->server, &plan, &error));
  g_assert_no_error(error);
  g_assert_cmpuint(plan.block_bytes, ==, 3 * mib / 2);
  g_assert_cmpuint(plan.slices, ==, 4022);
  g_assert_cmpuint(plan.blocks, ==, 5362);
}

/* The same request with a KV pool of 10 blocks (160 tokens): it can never
 * fit (1004 tokens need 63 blocks), so it is rejected on arrival. */
static void test_rejected(void) {
  g_autoptr(EmaExperiment) probe = load_fixture("one-request.yaml");
  g_autoptr(EmaExperiment) experiment = NULL;
  g_autoptr(EmaServingReport) report = NULL;
  g_autoptr(JsonNode) root = NULL;
  g_autofree char *path = ema_test_fixture("serving", "one-request.yaml");
  g_autofree char *dir = ema_test_temp_dir();
  g_autofree char *override = NULL, *requests = NULL, *timeline = NULL, *summary = NULL;
  g_autofree char *timeline_text = NULL;
  const EmaTenantSpec *tenant = &g_array_index(probe->tenants, EmaTenantSpec, 0);
  EmaTenantPlan plan;
  GError *error = NULL;
  JsonObject *t;
  guint64 usable;

  g_assert_true(ema_tenant_plan(tenant, &probe->server, &plan, &error));
  usable = (guint64) floor((double) probe->server.gpu.hbm_capacity * 0.9);
  override = g_strdup_printf("tenants.0.engine.activation_reserve=%" G_GUINT64_FORMAT,
                             usable - plan.weight_bytes - 10 * plan.block_bytes - 5);
  experiment = load(path, (const char *const[]){override, NULL});
  report = run_into(experiment, dir);
  t = NULL;
  summary = ema_test_read_file(dir, "summary.json");
  root = ema_test_parse_json(summary);
  t = tenant_json(root, 0);
  g_assert_cmpint(json_object_get_int_member(t, "kv_blocks"), ==, 10);
  g_assert_cmpint(json_object_get_int_member(t, "arrived"), ==, 1);
  g_assert_cmpint(json_object_get_int_member(t, "rejected"), ==, 1);
  g_assert_cmpint(json_object_get_int_member(t, "completed"), ==, 0);
  g_assert_cmpint(json_object_get_int_member(t, "unfinished"), ==, 0);
  g_assert_cmpint(json_object_get_int_member(t, "steps"), ==, 0);
  /* no samples: every latency figure is 0, and so are the rates */
  g_assert_cmpfloat(latency(t, "ttft_ms", "p99"), ==, 0);
  g_assert_cmpfloat(latency(t, "e2e_ms", "mean"), ==, 0);
  g_assert_cmpfloat(json_object_get_double_member(t, "throughput_tok_s"), ==, 0);
  g_assert_cmpfloat(json_object_get_double_member(t, "req_per_s"), ==, 0);
  requests = ema_test_read_file(dir, "requests.csv");
  g_assert_cmpstr(strchr(requests, '\n') + 1, ==, "");
  timeline_text = ema_test_read_file(dir, "timeline.csv");
  timeline = timeline_head(timeline_text);
  g_assert_nonnull(strstr(timeline, "\n0.000000000,0,solo,0,10,0,0,0.000000\n"));
  ema_test_remove_tree(dir);
}

/* A client timeout of 1 ms on the one request of one-request.yaml (4 output tokens): its
 * prompt's step outlasts the timeout, so the pass after it aborts the request: one step run,
 * the request timed out, not completed, no latency sampled and no row in requests.csv. */
static void test_timeout(void) {
  g_autofree char *path = ema_test_fixture("serving", "one-request.yaml");
  g_autofree char *dir = ema_test_temp_dir();
  g_autoptr(EmaExperiment) experiment =
      load(path, (const char *const[]){"tenants.0.trace.timeout=1ms", NULL});
  g_autoptr(EmaServingReport) report = run_into(experiment, dir);
  g_autofree char *summary = ema_test_read_file(dir, "summary.json");
  g_autofree char *requests = ema_test_read_file(dir, "requests.csv");
  g_autoptr(JsonNode) root = ema_test_parse_json(summary);
  JsonObject *t = tenant_json(root, 0);
  g_assert_cmpint(json_object_get_int_member(t, "arrived"), ==, 1);
  g_assert_cmpint(json_object_get_int_member(t, "timed_out"), ==, 1);
  g_assert_cmpint(json_object_get_int_member(t, "completed"), ==, 0);
  g_assert_cmpint(json_object_get_int_member(t, "unfinished"), ==, 0);
  g_assert_cmpint(json_object_get_int_member(t, "steps"), ==, 1);
  g_assert_cmpfloat(latency(t, "ttft_ms", "p50"), ==, 0);
  /* its client never had its answer: no SLO met */
  g_assert_cmpfloat(json_object_get_double_member(t, "slo_attainment"), ==, 0);
  g_assert_cmpstr(strchr(requests, '\n') + 1, ==, "");
  ema_test_remove_tree(dir);
}

/* ---- 2. KV pool sizing --------------------------------------------------- */

/* tenant.h: the KV region is counted in whole slices of 2 MiB */
#define SLICE (G_GUINT64_CONSTANT(2) << 20)

static void test_plan_h200(void) {
  g_autoptr(EmaExperiment) experiment = load_fixture("one-request.yaml");
  const EmaTenantSpec *tenant = &g_array_index(experiment->tenants, EmaTenantSpec, 0);
  EmaTenantPlan plan;
  GError *error = NULL;
  /* the H200's 139.8 GiB, as resolved.yaml shows it */
  const guint64 hbm = 150109106995;
  const guint64 usable = 135098196295; /* floor(hbm x 0.9) */
  /* 8,030,261,248 parameters x 2 B (bf16) */
  const guint64 weights = 16060522496;
  /* max_num_batched_tokens x (2 h + (H + 2 K) d + 2 F) x b + max_num_seqs x V x 4:
   * 8192 x (8192 + 6144 + 28672) x 2 + 256 x 128256 x 4 */
  const guint64 reserve =
      8192ull * (2 * 4096 + (32 + 2 * 8) * 128 + 2 * 14336) * 2 + 256ull * 128256 * 4;
  /* 16 tokens x 2 (K and V) x 32 layers x 8 KV heads x 128 x 2 B */
  const guint64 block = 16ull * 2 * 32 * 8 * 128 * 2;

  g_assert_cmpuint(experiment->server.gpu.hbm_capacity, ==, hbm);
  g_assert_cmpuint(reserve, ==, 835977216);
  g_assert_cmpuint(block, ==, 2097152);
  g_assert_cmpuint(ema_tenant_default_activation_reserve(tenant), ==, reserve);
  g_assert_true(ema_tenant_plan(tenant, &experiment->server, &plan, &error));
  g_assert_no_error(error);
  g_assert_cmpuint(plan.weight_bytes, ==, weights);
  g_assert_cmpuint(plan.activation_reserve, ==, reserve);
  g_assert_cmpuint(plan.block_bytes, ==, block);
  g_assert_cmpuint(plan.kv_bytes, ==, usable - weights - reserve);
  g_assert_cmpuint(plan.kv_bytes, ==, 118201696583);
  /* whole 2 MiB slices (the elastic pool's unit), then the blocks they hold */
  g_assert_cmpuint(plan.slices, ==, (usable - weights - reserve) / SLICE);
  g_assert_cmpuint(plan.slices, ==, 56362);
  g_assert_cmpuint(plan.blocks, ==, plan.slices * SLICE / block);
  g_assert_cmpuint(plan.blocks, ==, 56362);
  g_assert_cmpuint(plan.watermark_blocks, ==, 564); /* ceil(1% of 56362) */
  /* the loaded experiment holds the derived reserve explicitly */
  g_assert_cmpuint(tenant->engine.activation_reserve, ==, reserve);
}

/* A named model with keys over it: Llama-3.1-70B's shape from its file, FP8
 * weights and KV. Its KV block is half the BF16 one of test_plan_70b_tp4
 * (16 x 2 x 80 x 2 x 128 x 1 B); its decoder layers take a byte a weight:
 * 80 layers x 855,654,400 parameters (the BF16 weights less the embedding,
 * LM head and final norm, 2 x 128,256 x 8,192 + 8,192, over 2 B), so the
 * weights per GPU are those of test_plan_70b_tp4 less 80 x 855,654,400 / 4. */
static void test_plan_named_fp8(void) {
  g_autoptr(EmaExperiment) experiment = load_fixture("plan-70b-fp8.yaml");
  const EmaTenantSpec *tenant = &g_array_index(experiment->tenants, EmaTenantSpec, 0);
  EmaTenantPlan plan;
  GError *error = NULL;
  g_assert_cmpstr(tenant->model.name, ==, "llama-3.1-70b");
  g_assert_cmpint(tenant->model.layers, ==, 80);
  g_assert_cmpint(tenant->model.weights, ==, EMA_PRECISION_FP8);
  g_assert_cmpint(tenant->model.kv_cache, ==, EMA_PRECISION_FP8);
  g_assert_true(ema_tenant_plan(tenant, &experiment->server, &plan, &error));
  g_assert_no_error(error);
  g_assert_cmpuint(plan.block_bytes, ==, 16ull * 2 * 80 * 2 * 128);
  g_assert_cmpuint(plan.weight_bytes, ==, (141107412992ull + 3) / 4 - 80ull * 855654400 / 4);
}

static void test_plan_70b_tp4(void) {
  g_autoptr(EmaExperiment) experiment = load_fixture("plan-70b-tp4.yaml");
  const EmaTenantSpec *tenant = &g_array_index(experiment->tenants, EmaTenantSpec, 0);
  EmaTenantPlan plan;
  EmaEngineConfig config;
  GError *error = NULL;
  const guint64 usable = 135098196295;
  /* ceil(70,553,706,496 x 2 B / 4) */
  const guint64 weights = (141107412992ull + 3) / 4;
  /* per token: 2 h + (H + 2 K) d / tp + 2 F / tp = 16384 + 80 x 128 / 4 + 2 x 28672 / 4 */
  /* the default profile's batch limits on an H200: 8192 tokens, 1024 requests' fp32 logits */
  const guint64 reserve =
      8192ull * (2 * 8192 + (64 + 2 * 8) * 128 / 4 + 2 * 28672 / 4) * 2 + 1024ull * 128256 * 4;
  /* 16 tokens x 2 x 80 layers x (8 / 4) KV heads per GPU x 128 x 2 B */
  const guint64 block = 16ull * 2 * 80 * (8 / 4) * 128 * 2;

  g_assert_cmpint(tenant->tp, ==, 4);
  g_assert_cmpuint(weights, ==, 35276853248);
  g_assert_cmpuint(reserve, ==, 1070596096);
  g_assert_cmpuint(block, ==, 1310720);
  g_assert_true(ema_tenant_plan(tenant, &experiment->server, &plan, &error));
  g_assert_no_error(error);
  g_assert_cmpuint(plan.weight_bytes, ==, weights);
  g_assert_cmpuint(plan.activation_reserve, ==, reserve);
  g_assert_cmpuint(plan.block_bytes, ==, block);
  /* the default profile (vllm-v1) adds its fixed reserve and keeps no watermark */
  g_assert_cmpstr(tenant->engine.profile, ==, "vllm-v1");
  g_assert_cmpuint(tenant->engine.fixed_reserve, >, 0);
  g_assert_cmpuint(plan.kv_bytes, ==, usable - weights - reserve - tenant->engine.fixed_reserve);
  g_assert_cmpuint(plan.slices, ==, plan.kv_bytes / SLICE);
  /* slices of 2 MiB hold 1.6 blocks of 1.25 MiB each */
  g_assert_cmpuint(plan.blocks, ==, plan.slices * SLICE / block);
  g_assert_cmpuint(plan.blocks, ==, plan.slices * 8 / 5);
  g_assert_cmpuint(plan.watermark_blocks, ==, 0);

  /* what the engine gets: the plan, and swap over the slower host direction */
  ema_tenant_engine_config(tenant, &plan, &experiment->server, &config);
  g_assert_cmpuint(config.max_num_seqs, ==, 1024);
  g_assert_cmpuint(config.max_num_batched_tokens, ==, 8192);
  g_assert_cmpuint(config.watermark_blocks, ==, 0);
  g_assert_cmpuint(config.block_bytes, ==, block);
  g_assert_cmpuint(config.block_tokens, ==, 16);
  g_assert_cmpuint(config.max_model_len, ==, 131072); /* the model's max_context */
  g_assert_cmpint(config.costs.step_cpu_cost, ==, tenant->engine.costs.step_cpu_cost);
  g_assert_cmpint(config.scheduler, ==, EMA_SCHEDULER_V1);
  g_assert_true(config.prefix_caching);
  g_assert_cmpint(config.preempt, ==, EMA_PREEMPT_RECOMPUTE);
  g_assert_cmpfloat(config.swap_bandwidth, ==, 55.3e9);
  g_assert_cmpint(config.swap_fixed_cost, ==, EMA_NS(5200));
}

/* engine.prefix_caching left out is the profile's default_prefix_caching: on under V1, off
 * under V0 (vllm serve's --enable-prefix-caching default in each); given, it stands */
static void test_prefix_caching_default(void) {
  static const struct {
    const char *profile, *given;
    gboolean want;
  } cases[] = {
      {"vllm-v1", NULL, TRUE},
      {"vllm-v1", "false", FALSE},
      {"vllm-v0", NULL, FALSE},
      {"vllm-v0", "true", TRUE},
      {"vllm-v0-async-output", NULL, FALSE},
      {"vllm-v1-otel", NULL, TRUE},
  };
  for (guint i = 0; i < G_N_ELEMENTS(cases); i++) {
    g_autofree char *profile = g_strdup_printf("tenants.1.engine.profile=%s", cases[i].profile);
    g_autofree char *given =
        cases[i].given ? g_strdup_printf("tenants.1.engine.prefix_caching=%s", cases[i].given)
                       : NULL;
    /* (a V0 step holds a whole prompt: its budget at least max_model_len) */
    const char *overrides[] = {profile, "tenants.1.engine.max_model_len=2048", given, NULL};
    g_autofree char *path = ema_test_fixture("serving", "golden.yaml");
    g_autoptr(EmaExperiment) experiment = load(path, overrides);
    const EmaTenantSpec *tenant = &g_array_index(experiment->tenants, EmaTenantSpec, 1);
    g_assert_cmpint(tenant->engine.prefix_caching, ==, cases[i].want);
  }
}

static void test_plan_does_not_fit(void) {
  g_autofree char *path = ema_test_fixture("serving", "errors/does-not-fit.yaml");
  g_autofree char *want = g_strconcat(
      path,
      ":5:5: tenants.0: llama-3.1-70b does not fit with tp 1 on A100-SXM4-40GB: 35.5 GiB of "
      "HBM per GPU (gpu_memory_utilization 90%) leaves no KV cache after 131 GiB of weights, "
      "453 MiB of activation reserve and engine profile vllm-v1's fixed reserve of 341 MiB",
      NULL);
  GError *error = load_error(path, NULL);
  g_assert_cmpstr(error->message, ==, want);
  g_error_free(error);
}

/* ---- 3. configuration errors --------------------------------------------- */

typedef struct {
  const char *file; /* in tests/fixtures/serving/errors/ */
  gint code;
  const char *message; /* after "PATH:" */
} BadConfig;

static const BadConfig bad_configs[] = {
    {"same-gpu.yaml", EMA_CONFIG_ERROR_INVALID,
     "6:41: tenants.1.gpu: gpu0 already serves tenant a"},
    {"gpu-out-of-range.yaml", EMA_CONFIG_ERROR_INVALID,
     "5:41: tenants.0.gpu: gpu2 is not on h200x2 (it has gpu0..gpu1)"},
    {"tp-past-end.yaml", EMA_CONFIG_ERROR_INVALID,
     "5:41: tenants.0.gpu: GPUs gpu6..gpu9 (tp 4) are not on h200x8-hgx (it has gpu0..gpu7)"},
    {"tp-heads.yaml", EMA_CONFIG_ERROR_INVALID,
     "5:48: tenants.0.tp: tensor-parallel size 3 must divide llama-3.1-8b's 32 heads"},
    {"tp-gpus.yaml", EMA_CONFIG_ERROR_INVALID,
     "5:48: tenants.0.tp: tensor-parallel size 3 must divide the server's 8 GPUs"},
    {"duplicate-name.yaml", EMA_CONFIG_ERROR_INVALID,
     "6:12: tenants.1: tenant name 'a' is used twice"},
    {"no-end.yaml", EMA_CONFIG_ERROR_KEY,
     "9:7: tenants.0.trace: a synthetic trace never ends: give requests or duration"},
    {"cycle-no-end.yaml", EMA_CONFIG_ERROR_KEY,
     "8:12: tenants.0.trace: a cycled lengths file never ends: give requests or duration"},
    {"no-arrivals.yaml", EMA_CONFIG_ERROR_INVALID,
     "9:7: tenants.0.trace.arrivals: a synthetic trace needs an arrival process (arrivals: "
     "poisson, gamma, onoff, diurnal or phases), closed-loop clients (concurrency: N) or a file"},
    {"file-with-arrivals.yaml", EMA_CONFIG_ERROR_INVALID,
     "8:49: tenants.0.trace.arrivals: this trace file has its own arrival times: leave arrivals "
     "out, or use format: lengths or vllm-bench"},
    {"format-synthetic.yaml", EMA_CONFIG_ERROR_INVALID,
     "10:15: tenants.0.trace.format: format is about a trace file, and this trace has none (a "
     "synthetic trace): give file, or leave format out"},
    {"onoff-empty-bursts.yaml", EMA_CONFIG_ERROR_INVALID,
     "10:17: tenants.0.trace.arrivals: onoff: a burst holds 1e-09 requests on average (rate_on "
     "x mean_on); at least 0.001 are needed"},
    {"diurnal-min-above-max.yaml", EMA_CONFIG_ERROR_INVALID,
     "10:17: tenants.0.trace.arrivals: diurnal: rate_max must be > 0 and >= rate_min (got 6)"},
    {"cv-with-poisson.yaml", EMA_CONFIG_ERROR_KEY,
     "11:7: tenants.0.trace.cv: not used by arrivals: poisson"},
    {"closed-loop-duration.yaml", EMA_CONFIG_ERROR_KEY,
     "12:7: tenants.0.trace.duration: not used by a closed loop (its clients send as their "
     "requests end; requests ends it)"},
    {"closed-loop-arrivals.yaml", EMA_CONFIG_ERROR_INVALID,
     "10:17: tenants.0.trace.arrivals: concurrency 4 runs a closed loop, each client sending when "
     "its last request ends: an arrival process does not apply (leave arrivals and its keys out, "
     "or concurrency for an open loop)"},
    {"max-model-len-past-context.yaml", EMA_CONFIG_ERROR_INVALID,
     "8:29: tenants.0.engine.max_model_len: 200000 is above llama-3.1-8b's context of 131072 "
     "tokens (its max_context): vLLM refuses it"},
    {"v0-budget-below-len.yaml", EMA_CONFIG_ERROR_INVALID,
     "9:77: tenants.0.engine.max_num_batched_tokens: 2048 is below max_model_len (4096): without "
     "chunked prefill a prompt is scheduled whole, and vLLM refuses a step budget below the "
     "longest (give chunked_prefill: true, or a larger budget)"},
    {"name-control-char.yaml", EMA_CONFIG_ERROR_INVALID,
     "6:11: tenants.0.name: a name holds no control character (0x0a at byte 1)"},
    {"name-empty.yaml", EMA_CONFIG_ERROR_INVALID,
     "5:11: tenants.0.name: a tenant's name is not empty (an empty tenant in timeline.csv is a GPU "
     "without a tenant)"},
    {"name-all.yaml", EMA_CONFIG_ERROR_INVALID,
     "5:11: tenants.0.name: a tenant's name is not 'all' and holds no comma (plot's --tenant A,B "
     "lists tenants by commas, 'all' picks every one)"},
    {"name-comma.yaml", EMA_CONFIG_ERROR_INVALID,
     "5:11: tenants.0.name: a tenant's name is not 'all' and holds no comma (plot's --tenant A,B "
     "lists tenants by commas, 'all' picks every one)"},
    {"prefix-groups-no-prefix.yaml", EMA_CONFIG_ERROR_INVALID,
     "12:29: tenants.0.trace.shared_prefix_groups: groups of a shared prefix need "
     "shared_prefix_tokens above 0"},
    {"start-synthetic.yaml", EMA_CONFIG_ERROR_KEY,
     "8:54: tenants.0.trace.start: not used by a synthetic trace"},
    {"median-and-mean.yaml", EMA_CONFIG_ERROR_INVALID,
     "12:15: tenants.0.trace.prompt: dist: lognormal needs exactly one of median and mean"},
    {"uniform-min-max.yaml", EMA_CONFIG_ERROR_INVALID,
     "13:45: tenants.0.trace.output: max (10) is below min (50)"},
    {"missing-trace.yaml", EMA_CONFIG_ERROR_INVALID,
     "8:19: tenants.0.trace.file: no such file: @DIR@/no-such-trace.csv"},
    {"prompt-with-file.yaml", EMA_CONFIG_ERROR_KEY,
     "10:15: tenants.0.trace.prompt: lengths come from the trace file: leave prompt out"},
    {"split-index.yaml", EMA_CONFIG_ERROR_INVALID,
     "8:62: tenants.0.trace.split_index: split_index must be below split (3)"},
    {"ops-and-tenants.yaml", EMA_CONFIG_ERROR_KEY,
     "5:3: tenants: give ops and decode scenarios, or tenants, not both (run them as two "
     "experiments)"},
    {"engine-unknown-key.yaml", EMA_CONFIG_ERROR_KEY,
     "9:32: tenants.0.engine.max_batch: unknown key in engine (valid keys: profile, "
     "max_num_seqs, max_num_batched_tokens, gpu_memory_utilization, activation_reserve, "
     "watermark, preempt, block_size, max_model_len, max_waiting, num_gpu_blocks, chunked_prefill, "
     "enforce_eager, prefix_caching)"},
    {"unknown-profile.yaml", EMA_CONFIG_ERROR_KEY,
     "9:41: tenants.0.engine.profile: unknown engine profile 'vllm-v9' (known: test-eager, "
     "test-free, test-group, test-host, test-nohost, test-v1, vllm-v0, vllm-v0-async-output, "
     "vllm-v1, vllm-v1-async, "
     "vllm-v1-otel)"},
    {"v1-unchunked.yaml", EMA_CONFIG_ERROR_INVALID,
     "9:67: tenants.0.engine.chunked_prefill: engine profile 'vllm-v1' schedules as vLLM V1, "
     "whose prompts are always chunked here (V1 without chunked prefill is not modelled)"},
    {"eager-unmodelled.yaml", EMA_CONFIG_ERROR_INVALID,
     "9:65: tenants.0.engine.enforce_eager: engine profile 'vllm-v1' has no "
     "eager_layer_cpu_cost: its eager steps are not modelled (profiles that have one: ema-sim "
     "list engines)"},
    {"bad-unit.yaml", -1,
     "9:38: tenants.0.engine.gpu_memory_utilization: unknown unit 'GB' in '2GB' (fractions use % "
     "or a plain number)"},
    {"missing-gpu.yaml", EMA_CONFIG_ERROR_KEY,
     "5:5: tenants.0.gpu: missing required key (an integer)"},
    {"unknown-model.yaml", EMA_CONFIG_ERROR_KEY,
     "5:22: tenants.0.model: unknown model 'llama-9' (known: codellama-34b, llama-13b, "
     "llama-2-13b, llama-2-70b, llama-2-7b, llama-3.1-70b, llama-3.1-8b, llama-4-scout-17b-16e, "
     "mistral-7b-v0.1, mistral-nemo-12b, mixtral-8x7b, opt-13b, opt-30b, qwen2.5-14b, qwen2.5-32b, "
     "qwen2.5-7b)"},
    {"model-heads-override.yaml", EMA_CONFIG_ERROR_INVALID,
     "6:45: tenants.0.model.heads: kv_heads (40) must divide heads (7)"},
    {"unknown-model-keys.yaml", EMA_CONFIG_ERROR_KEY,
     "5:29: tenants.0.model: unknown model 'llama-9' (known: codellama-34b, llama-13b, "
     "llama-2-13b, llama-2-70b, llama-2-7b, llama-3.1-70b, llama-3.1-8b, llama-4-scout-17b-16e, "
     "mistral-7b-v0.1, mistral-nemo-12b, mixtral-8x7b, opt-13b, opt-30b, qwen2.5-14b, qwen2.5-32b, "
     "qwen2.5-7b)"},
};

static void test_bad_config(gconstpointer data) {
  const BadConfig *bad = data;
  g_autofree char *errors_path = ema_test_fixture("serving", "errors");
  g_autofree char *errors_dir = g_canonicalize_filename(errors_path, NULL);
  g_autofree char *relative = g_strconcat("errors/", bad->file, NULL);
  g_autofree char *file = ema_test_fixture("serving", relative);
  g_autoptr(GString) want = g_string_new(bad->message);
  GError *error = NULL;
  g_autoptr(EmaExperiment) experiment = NULL;
  const char *any;

  g_string_replace(want, "@DIR@", errors_dir, 0);
  g_string_prepend(want, ":");
  g_string_prepend(want, file);
  experiment = ema_experiment_load(file, NULL, &error);
  g_assert_null(experiment);
  g_assert_nonnull(error);
  if (g_test_verbose())
    g_test_message("%s", error->message);
  g_assert_null(strchr(error->message, '\n'));
  if (bad->code >= 0)
    g_assert_error(error, EMA_CONFIG_ERROR, bad->code);
  else
    g_assert_true(error->domain == EMA_CONFIG_ERROR);
  any = strstr(want->str, "@ANY@");
  if (any) {
    g_autofree char *head = g_strndup(want->str, (gsize) (any - want->str));
    if (!g_str_has_prefix(error->message, head) || !g_str_has_suffix(error->message, any + 5))
      g_error("error '%s' is not '%s...%s'", error->message, head, any + 5);
  } else {
    g_assert_cmpstr(error->message, ==, want->str);
  }
  g_error_free(error);
}

/* ---- 4. invariants of a larger run --------------------------------------- */

typedef struct {
  guint64 completed, rows, preemptions_in_rows, output_tokens;
  EmaTime first_arrival, last_finish;
  GArray *ttft, *tpot, *e2e; /* guint64 ns */
  GHashTable *seen_ids;
} RowStats;

static void check_latency(JsonObject *t, const char *metric, GArray *values) {
  static const char *const names[] = {"p50", "p90", "p99"};
  static const guint64 num[] = {1, 9, 99}, den[] = {2, 10, 100};
  guint64 sum = 0;
  g_array_sort(values, compare_u64);
  for (guint i = 0; i < values->len; i++)
    sum += g_array_index(values, guint64, i);
  for (guint i = 0; i < 3; i++) {
    double got = latency(t, metric, names[i]) * 1e6;
    double want = values->len ? (double) exact_quantile((const guint64 *) values->data, values->len,
                                                        num[i], den[i])
                              : 0;
    if (fabs(got - want) > 0.002 * want + 0.5)
      g_error("%s %s: %.1f ns, exact nearest-rank %.1f ns", metric, names[i], got, want);
  }
  g_assert_cmpfloat_with_epsilon(latency(t, metric, "mean") * 1e6,
                                 values->len ? (double) sum / values->len : 0,
                                 1e-9 * (double) sum / MAX(values->len, 1) + 1e-6);
}

static void test_invariants(void) {
  g_autoptr(EmaExperiment) experiment = load_fixture("invariants.yaml");
  g_autofree char *dir = ema_test_temp_dir();
  g_autoptr(EmaServingReport) report = run_into(experiment, dir);
  g_autofree char *summary = ema_test_read_file(dir, "summary.json");
  g_autofree char *requests = ema_test_read_file(dir, "requests.csv");
  g_autofree char *timeline = ema_test_read_file(dir, "timeline.csv");
  g_autoptr(JsonNode) root = ema_test_parse_json(summary);
  g_auto(GStrv) request_lines = lines_of(requests);
  g_auto(GStrv) timeline_lines = lines_of(timeline);
  guint n = experiment->tenants->len;
  g_autofree RowStats *stats = g_new0(RowStats, n);
  g_autofree GHashTable **records = g_new0(GHashTable *, n);
  g_autoptr(GArray) row_gpus = g_array_new(FALSE, FALSE, sizeof(gint64));
  g_autoptr(GArray) row_tenants = g_array_new(FALSE, FALSE, sizeof(guint));
  g_autofree double *kv_util_sum = g_new0(double, n);
  const EmaTime end = experiment->duration;
  const EmaTime period = experiment->sample_period;
  guint64 unfinished_total = 0;
  guint samples, n_columns;

  g_assert_cmpint(end, ==, EMA_S(20));
  g_assert_cmpint(period, ==, EMA_MS(500));
  g_assert_cmpint(report->simulated, ==, end);
  g_assert_cmpuint(report->tenants->len, ==, n);

  /* what each trace delivers up to the end: the same requests the run saw
   * (a tenant's streams are seeded from the experiment seed and
   * "tenant/NAME", as serving.c does) */
  for (guint i = 0; i < n; i++) {
    const EmaTenantSpec *spec = &g_array_index(experiment->tenants, EmaTenantSpec, i);
    const EmaTenantResult *result = report->tenants->pdata[i];
    g_autofree char *stream = g_strconcat("tenant/", spec->name, NULL);
    GError *error = NULL;
    g_autoptr(EmaTraceSource) trace = ema_trace_spec_open(
        &spec->trace, ema_trace_seed_derive((guint64) experiment->seed, stream), &error);
    JsonObject *t = tenant_json(root, i);
    EmaRequestRecord record;
    guint64 arrived = 0, too_big = 0;
    g_assert_no_error(error);
    records[i] = g_hash_table_new_full(g_int64_hash, g_int64_equal, NULL, g_free);
    while (ema_trace_source_next(trace, &record, &error)) {
      if (record.arrival > end)
        break;
      arrived++;
      if (blocks_for((guint64) MAX(record.prompt_tokens, 1) + MAX(record.output_tokens, 1)) >
          result->plan.blocks)
        too_big++;
      else {
        EmaRequestRecord *copy = g_memdup2(&record, sizeof record);
        g_hash_table_insert(records[i], &copy->id, copy);
      }
    }
    g_assert_no_error(error);

    g_assert_cmpstr(json_object_get_string_member(t, "name"), ==, spec->name);
    g_assert_cmpint(json_object_get_int_member(t, "arrived"), ==, (gint64) arrived);
    g_assert_cmpint(json_object_get_int_member(t, "rejected"), ==, (gint64) too_big);
    g_assert_cmpint(json_object_get_int_member(t, "completed") +
                        json_object_get_int_member(t, "rejected") +
                        json_object_get_int_member(t, "unfinished"),
                    ==, (gint64) arrived);
    g_assert_cmpint(json_object_get_int_member(t, "kv_blocks"), ==, (gint64) result->plan.blocks);
    g_assert_cmpint(json_object_get_int_member(t, "gpu"), ==, spec->gpu);
    g_assert_cmpint(json_object_get_int_member(t, "tp"), ==, spec->tp);
    stats[i].completed = (guint64) json_object_get_int_member(t, "completed");
    stats[i].first_arrival = G_MAXINT64;
    stats[i].last_finish = -1;
    stats[i].ttft = g_array_new(FALSE, FALSE, sizeof(guint64));
    stats[i].tpot = g_array_new(FALSE, FALSE, sizeof(guint64));
    stats[i].e2e = g_array_new(FALSE, FALSE, sizeof(guint64));
    stats[i].seen_ids = g_hash_table_new_full(g_int64_hash, g_int64_equal, g_free, NULL);
    unfinished_total += (guint64) json_object_get_int_member(t, "unfinished");
    for (gint64 g = spec->gpu; g < spec->gpu + spec->tp; g++) {
      g_array_append_val(row_gpus, g);
      g_array_append_val(row_tenants, i);
    }
  }
  /* the overloaded tenants preempt; the run was cut short */
  g_assert_cmpint(json_object_get_int_member(tenant_json(root, 0), "preemptions"), >, 0);
  g_assert_cmpint(json_object_get_int_member(tenant_json(root, 1), "preemptions"), >, 0);
  g_assert_cmpint(json_object_get_int_member(tenant_json(root, 2), "preemptions"), ==, 0);
  g_assert_cmpuint(unfinished_total, >, 0);

  /* requests.csv */
  g_assert_cmpstr(request_lines[0], ==,
                  "tenant,id,arrival_s,scheduled_s,first_token_s,finish_s,prompt_tokens,"
                  "output_tokens,preemptions,ttft_ms,tpot_ms,e2e_ms");
  for (guint r = 1; request_lines[r]; r++) {
    g_auto(GStrv) f = g_strsplit(request_lines[r], ",", -1);
    guint i = n;
    EmaTime arrival, scheduled, first, finish;
    guint64 id, prompt, output;
    const EmaRequestRecord *record;
    g_assert_cmpuint(g_strv_length(f), ==, 12);
    for (guint k = 0; k < n; k++)
      if (strcmp(f[0], g_array_index(experiment->tenants, EmaTenantSpec, k).name) == 0)
        i = k;
    g_assert_cmpuint(i, <, n);
    id = parse_count(f[1]);
    arrival = parse_fixed(f[2], 9);
    scheduled = parse_fixed(f[3], 9);
    first = parse_fixed(f[4], 9);
    finish = parse_fixed(f[5], 9);
    prompt = parse_count(f[6]);
    output = parse_count(f[7]);
    /* each request finishes once, and it is the trace's request of that id */
    g_assert_false(g_hash_table_contains(stats[i].seen_ids, &id));
    g_hash_table_add(stats[i].seen_ids, g_memdup2(&id, sizeof id));
    record = g_hash_table_lookup(records[i], &id);
    if (record == NULL)
      g_error("%s: request %" G_GUINT64_FORMAT " is not in its trace", f[0], id);
    g_assert_cmpint(arrival, ==, record->arrival);
    g_assert_cmpuint(prompt, ==, MAX(record->prompt_tokens, 1));
    g_assert_cmpuint(output, ==, MAX(record->output_tokens, 1));
    g_assert_cmpint(arrival, <=, scheduled);
    g_assert_cmpint(scheduled, <, first);
    g_assert_cmpint(first, <=, finish);
    g_assert_cmpint(finish, <=, end);
    g_assert_true(output > 1 || first == finish);
    g_assert_cmpint(parse_fixed(f[9], 6), ==, first - arrival);
    g_assert_cmpint(parse_fixed(f[11], 6), ==, finish - arrival);
    if (output > 1) {
      EmaTime tpot = (finish - first + (EmaTime) (output - 1) / 2) / (EmaTime) (output - 1);
      g_assert_cmpint(parse_fixed(f[10], 6), ==, tpot);
      g_array_append_val(stats[i].tpot, tpot);
    } else {
      g_assert_cmpstr(f[10], ==, "");
    }
    {
      guint64 ttft = (guint64) (first - arrival), e2e = (guint64) (finish - arrival);
      g_array_append_val(stats[i].ttft, ttft);
      g_array_append_val(stats[i].e2e, e2e);
    }
    stats[i].rows++;
    stats[i].preemptions_in_rows += parse_count(f[8]);
    stats[i].output_tokens += output;
    stats[i].first_arrival = MIN(stats[i].first_arrival, arrival);
    stats[i].last_finish = MAX(stats[i].last_finish, finish);
  }
  for (guint i = 0; i < n; i++) {
    JsonObject *t = tenant_json(root, i);
    double span = (double) (stats[i].last_finish - stats[i].first_arrival) / 1e9;
    g_assert_cmpuint(stats[i].rows, ==, stats[i].completed);
    g_assert_cmpuint(stats[i].rows, >, 10);
    g_assert_cmpint((gint64) stats[i].preemptions_in_rows, <=,
                    json_object_get_int_member(t, "preemptions"));
    g_assert_cmpfloat_with_epsilon(json_object_get_double_member(t, "throughput_tok_s"),
                                   (double) stats[i].output_tokens / span, 1e-9);
    g_assert_cmpfloat_with_epsilon(json_object_get_double_member(t, "req_per_s"),
                                   (double) stats[i].rows / span, 1e-9);
    check_latency(t, "ttft_ms", stats[i].ttft);
    check_latency(t, "tpot_ms", stats[i].tpot);
    check_latency(t, "e2e_ms", stats[i].e2e);
  }

  /* timeline.csv: one row per GPU of the server at 0, period, 2 period ...
   * up to the end, the tenants' GPUs first; used + free = the tenant's blocks;
   * a TP group's rows agree; the last sample sees exactly the unfinished
   * requests; then gpu3, which no tenant runs on: an empty tenant, nothing
   * of a tenant's, and nothing lent (static) */
  {
    g_autofree char *header = timeline_head(timeline_lines[0]);
    g_auto(GStrv) columns = g_strsplit(timeline_lines[0], ",", -1);
    g_assert_cmpstr(header, ==, TIMELINE_HEADER);
    n_columns = g_strv_length(columns);
  }
  samples = (guint) (end / period) + 1;
  g_assert_cmpuint(report->idle_gpus->len, ==, 1);
  g_assert_cmpuint(g_array_index(report->idle_gpus, EmaIdleGpuResult, 0).gpu, ==, 3);
  g_assert_cmpuint(row_gpus->len + 1, ==, experiment->server.gpus);
  g_assert_cmpuint(g_strv_length(timeline_lines), ==, 1 + samples * experiment->server.gpus);
  for (guint s = 0; s < samples; s++) {
    const char *idle_line = timeline_lines[1 + s * experiment->server.gpus + row_gpus->len];
    g_autofree char *want_idle =
        g_strdup_printf("%.9f,3,,0,0,0,0,0.000000,0,0,0,0,0", (double) (s * period) / 1e9);
    g_assert_cmpstr(idle_line, ==, want_idle);
    for (guint j = 0; j < row_gpus->len; j++) {
      const char *line = timeline_lines[1 + s * experiment->server.gpus + j];
      g_auto(GStrv) f = g_strsplit(line, ",", -1);
      guint i = g_array_index(row_tenants, guint, j);
      const EmaTenantSpec *spec = &g_array_index(experiment->tenants, EmaTenantSpec, i);
      JsonObject *t = tenant_json(root, i);
      guint64 used, free_blocks;
      g_assert_cmpuint(g_strv_length(f), ==, n_columns);
      g_assert_cmpint(parse_fixed(f[0], 9), ==, (EmaTime) s * period);
      g_assert_cmpint((gint64) parse_count(f[1]), ==, g_array_index(row_gpus, gint64, j));
      g_assert_cmpstr(f[2], ==, spec->name);
      used = parse_count(f[3]);
      free_blocks = parse_count(f[4]);
      g_assert_cmpint((gint64) (used + free_blocks), ==,
                      json_object_get_int_member(t, "kv_blocks"));
      if (g_array_index(row_gpus, gint64, j) == spec->gpu) {
        kv_util_sum[i] += (double) used / (double) json_object_get_int_member(t, "kv_blocks");
        if (s == samples - 1)
          g_assert_cmpint((gint64) (parse_count(f[5]) + parse_count(f[6])), ==,
                          json_object_get_int_member(t, "unfinished"));
      } else {
        /* the other GPUs of a TP group repeat the group's figures */
        g_autofree char *group_head =
            timeline_head(timeline_lines[1 + s * experiment->server.gpus + j - 1]);
        g_autofree char *head = timeline_head(line);
        g_assert_cmpstr(strchr(strchr(head, ',') + 1, ','), ==,
                        strchr(strchr(group_head, ',') + 1, ','));
      }
    }
  }
  for (guint i = 0; i < n; i++)
    g_assert_cmpfloat_with_epsilon(
        json_object_get_double_member(tenant_json(root, i), "kv_util_mean"),
        kv_util_sum[i] / samples, 1e-12);
  /* the overloaded tenants did fill their pools at some sample */
  g_assert_cmpfloat(json_object_get_double_member(tenant_json(root, 1), "kv_util_mean"), >, 0.2);

  for (guint i = 0; i < n; i++) {
    g_array_unref(stats[i].ttft);
    g_array_unref(stats[i].tpot);
    g_array_unref(stats[i].e2e);
    g_hash_table_unref(stats[i].seen_ids);
    g_hash_table_unref(records[i]);
  }
  ema_test_remove_tree(dir);
}

/* ---- 6. golden outputs ---------------------------------------------------- */

static void test_golden(void) {
  if (ema_test_skip_without_shared())
    return;
  g_autoptr(EmaExperiment) experiment = load_fixture("golden.yaml");
  g_autofree char *dir = ema_test_temp_dir();
  g_autofree char *golden = ema_test_fixture("serving", "golden");
  g_autoptr(EmaServingReport) report = run_into(experiment, dir);
  g_autofree char *summary_text = ema_test_read_file(dir, "summary.json");
  g_autofree char *summary = ema_test_summary_without_wall(summary_text);
  g_autofree char *requests = ema_test_read_file(dir, "requests.csv");
  g_autofree char *want_summary = NULL, *want_requests = NULL;
  g_autoptr(JsonNode) check = ema_test_parse_json(summary);

  (void) check; /* the golden summary stays JSON */
  if (g_strcmp0(g_getenv("EMA_UPDATE_GOLDEN"), "1") == 0) {
    write_text(golden, "summary.json", summary);
    write_text(golden, "requests.csv", requests);
    g_test_message("rewrote %s/summary.json and requests.csv", golden);
  }
  want_summary = ema_test_read_file(golden, "summary.json");
  want_requests = ema_test_read_file(golden, "requests.csv");
  assert_same_text("summary.json (golden/summary.json; EMA_UPDATE_GOLDEN=1 rewrites it)", summary,
                   want_summary);
  assert_same_text("requests.csv (golden/requests.csv; EMA_UPDATE_GOLDEN=1 rewrites it)", requests,
                   want_requests);
  /* the golden run is what golden.yaml says: 30 + 20 requests, all served */
  g_assert_cmpuint(((EmaTenantResult *) report->tenants->pdata[0])->metrics->completed, ==, 30);
  g_assert_cmpuint(((EmaTenantResult *) report->tenants->pdata[1])->metrics->completed, ==, 20);
  ema_test_remove_tree(dir);
}

/* ---- 7. resolved.yaml round trip ----------------------------------------- */

static void round_trip(gconstpointer data) {
  const char *name = data;
  g_autoptr(EmaExperiment) first = load_fixture(name);
  g_autofree char *dir = ema_test_temp_dir();
  g_autofree char *dir1 = g_build_filename(dir, "first", NULL);
  g_autofree char *dir2 = g_build_filename(dir, "second", NULL);
  g_autofree char *text1 = ema_experiment_to_yaml(first);
  g_autofree char *resolved = g_build_filename(dir, "resolved.yaml", NULL);
  g_autoptr(EmaExperiment) second = NULL;
  g_autofree char *text2 = NULL, *requests1 = NULL, *requests2 = NULL;
  g_autofree char *timeline1 = NULL, *timeline2 = NULL;
  g_autoptr(EmaServingReport) report1 = NULL, report2 = NULL;

  write_text(dir, "resolved.yaml", text1);
  second = load(resolved, NULL);
  text2 = ema_experiment_to_yaml(second);
  assert_same_text("resolved.yaml written again", text2, text1);
  g_assert_cmpint(g_mkdir(dir1, 0755), ==, 0);
  g_assert_cmpint(g_mkdir(dir2, 0755), ==, 0);
  report1 = run_into(first, dir1);
  report2 = run_into(second, dir2);
  requests1 = ema_test_read_file(dir1, "requests.csv");
  requests2 = ema_test_read_file(dir2, "requests.csv");
  timeline1 = ema_test_read_file(dir1, "timeline.csv");
  timeline2 = ema_test_read_file(dir2, "timeline.csv");
  g_assert_cmpuint(strlen(requests1), >, 200);
  assert_same_text("requests.csv of the resolved file", requests2, requests1);
  assert_same_text("timeline.csv of the resolved file", timeline2, timeline1);
  g_assert_cmpuint(report1->events, ==, report2->events);
  ema_test_remove_tree(dir);
}

/* Overrides land in resolved.yaml, and a synthetic trace's start stays a
 * default that loads again. */
static void test_resolved_overrides(void) {
  g_autofree char *path = ema_test_fixture("serving", "golden.yaml");
  g_autoptr(EmaExperiment) experiment =
      load(path, (const char *const[]){"tenants.0.trace.rate=9", "tenants.1.engine.preempt=swap",
                                       "duration=30s", NULL});
  g_autofree char *text = ema_experiment_to_yaml(experiment);
  g_assert_nonnull(strstr(text, "\n      rate: 9\n"));
  g_assert_nonnull(strstr(text, "\n      preempt: swap\n"));
  g_assert_nonnull(strstr(text, "\nduration: 30s\n"));
  g_assert_nonnull(strstr(text, "\n      start: 0ns\n"));
  g_assert_nonnull(strstr(text, "\nrequests_csv: true\n"));
}

/* What each tenant's engine preempts with: the policy's choice over the
 * tenant's own (engine.preempt: cheaper too), as a run makes it. */
static void test_preempt_choices(void) {
  g_autofree char *path = ema_test_fixture("serving", "golden.yaml");
  const struct {
    const char *policy, *engine;
    EmaPreemptMode want;
  } cases[] = {
      {"engine", "recompute", EMA_PREEMPT_RECOMPUTE}, {"engine", "swap", EMA_PREEMPT_SWAP},
      {"engine", "cheaper", EMA_PREEMPT_CHEAPER},     {"recompute", "swap", EMA_PREEMPT_RECOMPUTE},
      {"swap-host", "cheaper", EMA_PREEMPT_SWAP},     {"swap-peer", "recompute", EMA_PREEMPT_SWAP},
      {"cheaper", "recompute", EMA_PREEMPT_CHEAPER},
  };
  for (guint i = 0; i < G_N_ELEMENTS(cases); i++) {
    g_autofree char *policy = g_strconcat("policy.preempt=", cases[i].policy, NULL);
    g_autofree char *engine = g_strconcat("tenants.0.engine.preempt=", cases[i].engine, NULL);
    g_autoptr(EmaExperiment) experiment = load(path, (const char *const[]){policy, engine, NULL});
    const EmaTenantSpec *tenant = &g_array_index(experiment->tenants, EmaTenantSpec, 0);
    EmaTenantPlan plan;
    EmaEngineConfig config;
    g_assert_true(ema_tenant_plan(tenant, &experiment->server, &plan, NULL));
    ema_tenant_engine_config(tenant, &plan, &experiment->server, &config);
    ema_serving_apply_preempt_choice(experiment, &config);
    g_assert_cmpint(config.preempt, ==, cases[i].want);
  }
}

/* ---- 8. histograms -------------------------------------------------------- */

static void test_histogram_empty(void) {
  g_autoptr(EmaHistogram) h = ema_histogram_new();
  g_assert_cmpuint(ema_histogram_count(h), ==, 0);
  g_assert_cmpfloat(ema_histogram_mean(h), ==, 0);
  g_assert_cmpfloat(ema_histogram_quantile(h, 0), ==, 0);
  g_assert_cmpfloat(ema_histogram_quantile(h, 0.5), ==, 0);
  g_assert_cmpfloat(ema_histogram_quantile(h, 1), ==, 0);
  g_assert_cmpfloat(ema_histogram_std(h), ==, 0);
}

/* std by hand: 2, 4, 4, 4, 5, 5, 7, 9 has mean 5 and std 2; add_n is repeated add */
static void test_histogram_std(void) {
  g_autoptr(EmaHistogram) h = ema_histogram_new();
  ema_histogram_add(h, 2);
  ema_histogram_add_n(h, 4, 3);
  ema_histogram_add_n(h, 5, 2);
  ema_histogram_add(h, 7);
  ema_histogram_add(h, 9);
  ema_histogram_add_n(h, 1000, 0);
  g_assert_cmpuint(ema_histogram_count(h), ==, 8);
  g_assert_cmpfloat(ema_histogram_mean(h), ==, 5);
  g_assert_cmpfloat(ema_histogram_std(h), ==, 2);
  g_assert_cmpfloat(ema_histogram_quantile(h, 0.5), ==, 4);
  g_assert_cmpfloat(ema_histogram_quantile(h, 1), ==, 9);
}

static void test_histogram_exact(void) {
  g_autoptr(EmaHistogram) h = ema_histogram_new();
  guint64 values[1022];
  guint n = 0;
  /* 0 .. 511, each twice, in a scrambled order */
  for (guint i = 0; i < 511; i++) {
    values[n++] = (i * 7919) % 511 + 1;
    values[n++] = (i * 104729) % 511;
  }
  for (guint i = 0; i < n; i++)
    ema_histogram_add(h, values[i]);
  g_assert_cmpuint(ema_histogram_count(h), ==, n);
  qsort(values, n, sizeof values[0], compare_u64);
  for (guint k = 0; k <= 100; k++) {
    /* nearest rank ceil(n k / 100), exact below 512 */
    guint64 want = exact_quantile(values, n, k, 100);
    g_assert_cmpfloat(ema_histogram_quantile(h, k / 100.0), ==, (double) want);
  }
  g_assert_cmpfloat(ema_histogram_quantile(h, 0), ==, (double) values[0]);
  g_assert_cmpfloat(ema_histogram_quantile(h, 1), ==, (double) values[n - 1]);
  {
    guint64 sum = 0;
    for (guint i = 0; i < n; i++)
      sum += values[i];
    g_assert_cmpfloat(ema_histogram_mean(h), ==, (double) sum / n);
  }

  /* one value is every quantile, whatever its bucket's width */
  {
    g_autoptr(EmaHistogram) one = ema_histogram_new();
    ema_histogram_add(one, 123456789);
    g_assert_cmpfloat(ema_histogram_quantile(one, 0.5), ==, 123456789);
    g_assert_cmpfloat(ema_histogram_quantile(one, 0.99), ==, 123456789);
    g_assert_cmpfloat(ema_histogram_mean(one), ==, 123456789);
  }
  /* the ends of the range: 0 and 2^64 - 1 */
  {
    g_autoptr(EmaHistogram) ends = ema_histogram_new();
    ema_histogram_add(ends, 0);
    ema_histogram_add(ends, G_MAXUINT64);
    g_assert_cmpfloat(ema_histogram_quantile(ends, 0.5), ==, 0);
    g_assert_cmpfloat(fabs(ema_histogram_quantile(ends, 1) / (double) G_MAXUINT64 - 1), <=, 0.002);
  }
  /* the first bucketed values: 512 and 513 share a 2-wide bucket */
  {
    g_autoptr(EmaHistogram) edge = ema_histogram_new();
    ema_histogram_add(edge, 511);
    ema_histogram_add(edge, 512);
    ema_histogram_add(edge, 513);
    g_assert_cmpfloat(ema_histogram_quantile(edge, 0.3), ==, 511);
    g_assert_cmpfloat(ema_histogram_quantile(edge, 0.6), ==, 512.5);
    g_assert_cmpfloat(ema_histogram_quantile(edge, 1), ==, 512.5);
  }
}

static void test_histogram_quantiles(void) {
  g_autoptr(EmaHistogram) h = ema_histogram_new();
  g_autoptr(GRand) rand = g_rand_new_with_seed(20261129);
  const guint n = 10000;
  g_autofree guint64 *values = g_new(guint64, n);
  guint64 sum = 0;
  static const guint64 num[] = {1, 9, 99}, den[] = {2, 10, 100};

  /* log-uniform over 1 us .. 100 s */
  for (guint i = 0; i < n; i++) {
    values[i] = (guint64) llround(exp(g_rand_double_range(rand, log(1e3), log(1e11))));
    sum += values[i];
    ema_histogram_add(h, values[i]);
  }
  qsort(values, n, sizeof values[0], compare_u64);
  g_assert_cmpuint(values[0], <, 2000);
  g_assert_cmpuint(values[n - 1], >, 50000000000);
  g_assert_cmpuint(ema_histogram_count(h), ==, n);
  for (guint i = 0; i < 3; i++) {
    double q = (double) num[i] / (double) den[i];
    double want = (double) exact_quantile(values, n, num[i], den[i]);
    double got = ema_histogram_quantile(h, q);
    if (fabs(got - want) > 0.002 * want)
      g_error("quantile %.2f: %.0f, exact %.0f (%.4f%% off)", q, got, want,
              100 * fabs(got - want) / want);
  }
  /* every percentile, not only the reported ones */
  for (guint k = 1; k <= 1000; k++) {
    double want = (double) exact_quantile(values, n, k, 1000);
    double got = ema_histogram_quantile(h, k / 1000.0);
    if (fabs(got - want) > 0.002 * want)
      g_error("quantile %.3f: %.0f, exact %.0f", k / 1000.0, got, want);
  }
  /* the sum stays below 2^53, so the mean is exact */
  g_assert_cmpuint(sum, <, G_GUINT64_CONSTANT(1) << 53);
  g_assert_cmpfloat(ema_histogram_mean(h), ==, (double) sum / n);

  /* values 1% apart, each in a bucket of its own (buckets are under 0.4% wide): every rank,
   * walked up from the lowest bucket in the lower half and down from the highest in the upper,
   * must land in its own value's bucket (its middle within 0.2%; a neighbour's is 0.6% or more
   * away), the median's boundary ranks among them */
  {
    g_autoptr(EmaHistogram) spaced = ema_histogram_new();
    const guint m = 501; /* odd: ranks on both sides of count / 2 */
    g_autofree guint64 *sorted = g_new(guint64, m);
    for (guint i = 0; i < m; i++)
      sorted[i] = (guint64) llround(1e6 * pow(1.01, i));
    for (guint i = 0; i < m; i++)
      ema_histogram_add(spaced, sorted[(i * 7) % m]); /* 7 is prime to 501: each once */
    g_assert_cmpuint(ema_histogram_count(spaced), ==, m);
    for (guint k = 1; k <= m; k++) {
      double want = (double) sorted[k - 1];
      double got = ema_histogram_quantile(spaced, (double) k / m);
      if (fabs(got - want) > 0.002 * want)
        g_error("rank %u of %u: %.0f, exact %.0f", k, m, got, want);
    }
  }
}

/* ---- the metrics observer -------------------------------------------------- */

static void test_metrics_observer(void) {
  char *buffer = NULL;
  size_t size = 0;
  FILE *csv = open_memstream(&buffer, &size);
  g_autoptr(EmaTenantMetrics) metrics = ema_tenant_metrics_new("t1", csv);
  EmaEngineObserver observer = ema_tenant_metrics_observer(metrics);
  EmaRequest a = {.id = 7,
                  .arrival = EMA_MS(1500),
                  .scheduled = EMA_MS(1500) + 3,
                  .first_token = EMA_MS(1500) + 7,
                  .finished = EMA_MS(1500) + 12, /* 5 ns over 2 gaps: 2.5 -> 3 */
                  .prompt_tokens = 10,
                  .output_tokens = 3,
                  .preemptions = 2};
  EmaRequest b = {.id = 8,
                  .arrival = EMA_S(2),
                  .scheduled = EMA_S(3),
                  .first_token = EMA_S(4),
                  .finished = EMA_S(4), /* one output token: no TPOT */
                  .prompt_tokens = 1,
                  .output_tokens = 1};
  EmaStepReport step = {.start = 0, .duration = EMA_US(250)};

  ema_requests_csv_header(csv);
  observer.on_finish(observer.data, &a);
  observer.on_finish(observer.data, &b);
  observer.on_step(observer.data, &step);
  step.duration = EMA_US(100);
  observer.on_step(observer.data, &step);
  /* a decode step of 3 sequences from 400 us, 300 us after the previous step ended */
  step.start = EMA_US(400);
  step.duration = EMA_US(50);
  step.batch.decode_seqs = 3;
  observer.on_step(observer.data, &step);
  /* own region 4 blocks; usable 2 (lending) then 6 (borrowing) */
  ema_tenant_metrics_sample_kv(metrics, 1, 4, 2, 1);
  ema_tenant_metrics_sample_kv(metrics, 3, 4, 6, 1);
  ema_tenant_metrics_sample_kv(metrics, 0, 0, 0, 1);
  fclose(csv);
  g_assert_cmpstr(buffer, ==,
                  "tenant,id,arrival_s,scheduled_s,first_token_s,finish_s,prompt_tokens,"
                  "output_tokens,preemptions,ttft_ms,tpot_ms,e2e_ms\n"
                  "t1,7,1.500000000,1.500000003,1.500000007,1.500000012,10,3,2,0.000007,0.000003,"
                  "0.000012\n"
                  "t1,8,2.000000000,3.000000000,4.000000000,4.000000000,1,1,0,2000.000000,,"
                  "2000.000000\n");
  free(buffer);
  g_assert_cmpuint(metrics->completed, ==, 2);
  g_assert_cmpuint(metrics->prompt_tokens, ==, 11);
  g_assert_cmpuint(metrics->output_tokens, ==, 4);
  g_assert_cmpuint(metrics->preemptions, ==, 2);
  g_assert_cmpint(metrics->first_arrival, ==, EMA_MS(1500));
  g_assert_cmpint(metrics->last_finish, ==, EMA_S(4));
  g_assert_cmpuint(ema_histogram_count(metrics->ttft), ==, 2);
  g_assert_cmpuint(ema_histogram_count(metrics->tpot), ==, 1);
  g_assert_cmpfloat(ema_histogram_mean(metrics->tpot), ==, 3);
  g_assert_cmpuint(metrics->steps, ==, 3);
  g_assert_cmpint(metrics->busy, ==, EMA_US(400));
  g_assert_cmpint(metrics->last_step, ==, EMA_US(50));
  /* 3 decode tokens, each 450 - 100 us after the previous step's end */
  g_assert_cmpuint(ema_histogram_count(metrics->itl), ==, 3);
  g_assert_cmpfloat(ema_histogram_mean(metrics->itl), ==, 350000);
  g_assert_cmpfloat(ema_histogram_std(metrics->itl), ==, 0);
  g_assert_cmpfloat(ema_tenant_metrics_kv_util_mean(metrics), ==, (0.25 + 0.75 + 0) / 3);
  g_assert_cmpfloat(ema_tenant_metrics_kv_util_usable_mean(metrics), ==, (0.5 + 0.5 + 0) / 3);
  /* no SLO given: both requests meet them */
  g_assert_cmpfloat(ema_tenant_metrics_slo_attainment(metrics, 0), ==, 1);
  /* two requests whose client gave up first missed them: 2 of 4 */
  g_assert_cmpfloat(ema_tenant_metrics_slo_attainment(metrics, 2), ==, 0.5);
  g_assert_cmpfloat_with_epsilon(ema_tenant_metrics_goodput_req_s(metrics), 2 / 2.5, 1e-12);
  /* 11 prompt + 4 output tokens over 2.5 s */
  g_assert_cmpfloat_with_epsilon(ema_tenant_metrics_total_tok_s(metrics), 15 / 2.5, 1e-12);
  /* 4 tokens and 2 requests over 1.5 s .. 4 s */
  g_assert_cmpfloat_with_epsilon(ema_tenant_metrics_throughput_tok_s(metrics), 4 / 2.5, 1e-12);
  g_assert_cmpfloat_with_epsilon(ema_tenant_metrics_req_per_s(metrics), 2 / 2.5, 1e-12);
}

/* ---- outputs ---------------------------------------------------------------- */

/* A run writes no files for a NULL directory, and the same results. */
static void test_no_files(void) {
  g_autoptr(EmaExperiment) experiment = load_fixture("golden.yaml");
  g_autofree char *dir = ema_test_temp_dir();
  g_autoptr(EmaServingReport) with_files = run_into(experiment, dir);
  GError *error = NULL;
  g_autoptr(EmaServingReport) without = ema_serving_run(experiment, NULL, FALSE, &error);
  g_assert_no_error(error);
  g_assert_cmpuint(without->events, ==, with_files->events);
  g_assert_cmpint(without->simulated, ==, with_files->simulated);
  for (guint i = 0; i < without->tenants->len; i++) {
    const EmaTenantResult *a = with_files->tenants->pdata[i], *b = without->tenants->pdata[i];
    g_assert_cmpuint(a->metrics->completed, ==, b->metrics->completed);
    g_assert_cmpfloat(ema_histogram_mean(a->metrics->e2e), ==, ema_histogram_mean(b->metrics->e2e));
  }
  ema_test_remove_tree(dir);
}

/* requests_csv: false writes no requests.csv. */
static void test_no_requests_csv(void) {
  g_autofree char *path = ema_test_fixture("serving", "golden.yaml");
  g_autoptr(EmaExperiment) experiment =
      load(path, (const char *const[]){"requests_csv=false", NULL});
  g_autofree char *dir = ema_test_temp_dir();
  g_autofree char *requests = g_build_filename(dir, "requests.csv", NULL);
  g_autofree char *timeline = g_build_filename(dir, "timeline.csv", NULL);
  g_autoptr(EmaServingReport) report = run_into(experiment, dir);
  g_assert_false(g_file_test(requests, G_FILE_TEST_EXISTS));
  g_assert_true(g_file_test(timeline, G_FILE_TEST_IS_REGULAR));
  ema_test_remove_tree(dir);
}

/* A directory that cannot hold the files (a path through a regular file:
 * refused even to root) fails the run with the file's name, whether or not
 * requests.csv is written. */
static void test_unwritable_dir(void) {
  g_autofree char *dir = ema_test_temp_dir();
  g_autofree char *blocker = g_build_filename(dir, "file", NULL);
  g_autofree char *out = g_build_filename(blocker, "out", NULL);
  g_autofree char *path = ema_test_fixture("serving", "golden.yaml");
  const char *const settings[] = {"requests_csv=true", "requests_csv=false"};
  const char *const first_file[] = {"requests.csv", "timeline.csv"};
  write_text(dir, "file", "not a directory\n");
  for (guint i = 0; i < G_N_ELEMENTS(settings); i++) {
    g_autoptr(EmaExperiment) experiment = load(path, (const char *const[]){settings[i], NULL});
    g_autofree char *prefix = g_strdup_printf("cannot write %s/%s: ", out, first_file[i]);
    GError *error = NULL;
    g_autoptr(EmaServingReport) report = ema_serving_run(experiment, out, FALSE, &error);
    g_assert_null(report);
    g_assert_error(error, G_FILE_ERROR, G_FILE_ERROR_NOTDIR);
    if (!g_str_has_prefix(error->message, prefix))
      g_error("'%s' does not start with '%s'", error->message, prefix);
    g_error_free(error);
  }
  ema_test_remove_tree(dir);
}

/* ---- 9. the Azure 2023 conversation trace ---------------------------------- */

static void test_azure_conv(void) {
  const char *shared = g_getenv("EMA_SHARED_DIR");
  g_autofree char *trace = NULL, *canonical = NULL, *yaml = NULL, *dir = NULL, *path = NULL;
  g_autoptr(EmaExperiment) experiment = NULL;
  g_autoptr(EmaServingReport) report = NULL;
  const EmaTenantResult *result;
  GError *error = NULL;

  if (shared)
    trace = g_build_filename(shared, "traces", "azure-llm-2023", "AzureLLMInferenceTrace_conv.csv",
                             NULL);
  if (trace == NULL || !g_file_test(trace, G_FILE_TEST_IS_REGULAR)) {
    g_test_skip("AzureLLMInferenceTrace_conv.csv not found under $EMA_SHARED_DIR/traces");
    return;
  }
  canonical = g_canonicalize_filename(trace, NULL);
  /* a double-quoted YAML string: escape what YAML would read otherwise */
  {
    g_autoptr(GString) quoted = g_string_new(canonical);
    g_string_replace(quoted, "\\", "\\\\", 0);
    g_string_replace(quoted, "\"", "\\\"", 0);
    yaml = g_strdup_printf("# the Azure 2023 conversation trace on one H200, Llama-3.1-8B\n"
                           "name: azure-conv\n"
                           "server: h200x2\n"
                           "requests_csv: false\n"
                           "tenants:\n"
                           "  - {name: conv, model: llama-3.1-8b, gpu: 0, trace: {file: \"%s\"}}\n",
                           quoted->str);
  }
  dir = ema_test_temp_dir();
  write_text(dir, "azure-conv.yaml", yaml);
  path = g_build_filename(dir, "azure-conv.yaml", NULL);
  experiment = load(path, NULL);
  report = ema_serving_run(experiment, NULL, FALSE, &error);
  g_assert_no_error(error);
  result = report->tenants->pdata[0];
  g_assert_cmpuint(result->arrived, ==, 19366);
  g_assert_cmpuint(result->metrics->completed, ==, 19366);
  g_assert_cmpuint(result->rejected, ==, 0);
  g_assert_cmpuint(result->unfinished, ==, 0);
  /* the hour-long trace is served within minutes of its last arrival */
  g_assert_cmpint(report->simulated, >, EMA_S(3400));
  g_assert_cmpint(report->simulated, <, EMA_S(3700));
  ema_test_remove_tree(dir);
}

int main(int argc, char **argv) {
  g_test_init(&argc, &argv, NULL);
  {
    /* the fidelity tests' validation table (read once per process) */
    g_autofree char *table =
        g_build_filename(g_getenv("EMA_TEST_FIXTURES"), "fidelity", "table.yaml", NULL);
    g_setenv("EMA_FIDELITY_FILE", table, TRUE);
  }

  g_test_add_func("/serving/one-request", test_one_request);
  g_test_add_func("/serving/rejected", test_rejected);
  g_test_add_func("/serving/timeout", test_timeout);
  g_test_add_func("/serving/steps-csv", test_steps_csv);
  g_test_add_func("/serving/engine-cpu/group", test_engine_cpu_group);
  g_test_add_func("/serving/engine-cpu/host", test_engine_cpu_host);
  g_test_add_func("/serving/tp-group-hosts", test_tp_group_hosts);
  g_test_add_func("/serving/tp-size-at-set", test_tp_size_at_set);
  g_test_add_func("/serving/engine-cpu/host-unknown", test_engine_cpu_host_unknown);
  g_test_add_func("/serving/engine-profile-misnamed", test_engine_profile_misnamed);
  g_test_add_func("/serving/engine-cpu/eager", test_engine_eager_costs);
  g_test_add_func("/serving/batch-defaults", test_batch_defaults);
  g_test_add_func("/serving/provenance-sorted", test_provenance_sorted);
  g_test_add_func("/serving/plan/given-blocks", test_plan_given_blocks);
  g_test_add_func("/serving/plan/llama-8b-h200", test_plan_h200);
  g_test_add_func("/serving/plan/llama-70b-tp4", test_plan_70b_tp4);
  g_test_add_func("/serving/prefix-caching-default", test_prefix_caching_default);
  g_test_add_func("/serving/plan/named-fp8", test_plan_named_fp8);
  g_test_add_func("/serving/fidelity/combinations", test_fidelity_combinations);
  g_test_add_func("/serving/plan/does-not-fit", test_plan_does_not_fit);
  for (guint i = 0; i < G_N_ELEMENTS(bad_configs); i++) {
    g_autofree char *name = g_strndup(bad_configs[i].file, strlen(bad_configs[i].file) - 5);
    g_autofree char *test_path = g_strconcat("/serving/errors/", name, NULL);
    g_test_add_data_func(test_path, &bad_configs[i], test_bad_config);
  }
  g_test_add_func("/serving/invariants", test_invariants);
  g_test_add_func("/serving/golden", test_golden);
  g_test_add_data_func("/serving/round-trip/one-request", "one-request.yaml", round_trip);
  g_test_add_data_func("/serving/round-trip/golden", "golden.yaml", round_trip);
  g_test_add_data_func("/serving/round-trip/invariants", "invariants.yaml", round_trip);
  g_test_add_data_func("/serving/round-trip/every-setting", "roundtrip.yaml", round_trip);
  g_test_add_func("/serving/round-trip/overrides", test_resolved_overrides);
  g_test_add_func("/serving/preempt-choices", test_preempt_choices);
  g_test_add_func("/serving/histogram/empty", test_histogram_empty);
  g_test_add_func("/serving/histogram/exact", test_histogram_exact);
  g_test_add_func("/serving/histogram/std", test_histogram_std);
  g_test_add_func("/serving/histogram/quantiles", test_histogram_quantiles);
  g_test_add_func("/serving/metrics/observer", test_metrics_observer);
  g_test_add_func("/serving/output/no-files", test_no_files);
  g_test_add_func("/serving/output/no-requests-csv", test_no_requests_csv);
  g_test_add_func("/serving/output/unwritable-dir", test_unwritable_dir);
  g_test_add_func("/serving/azure-conv", test_azure_conv);
  return g_test_run();
}
