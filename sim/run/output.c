/* output.c: writes resolved.yaml and summary.json and prints result tables.
 * Models never write output; the CLI calls these after a run. JSON is built
 * with json-glib in a fixed key order, so equal results give equal bytes. */
#include "ema/run/output.h"

#include <errno.h>
#include <json-glib/json-glib.h>
#include <math.h>
#include <string.h>

#include "ema/core/units.h"

gboolean ema_output_prepare_dir(const char *dir, GError **error) {
  if (g_mkdir_with_parents(dir, 0755) != 0) {
    int saved = errno;
    g_set_error(error, G_FILE_ERROR, g_file_error_from_errno(saved),
                "cannot create output directory %s: %s", dir, g_strerror(saved));
    return FALSE;
  }
  return TRUE;
}

static gboolean write_file(const char *dir, const char *name, const char *text, GError **error) {
  g_autofree char *path = g_build_filename(dir, name, NULL);
  return g_file_set_contents(path, text, -1, error);
}

gboolean ema_output_write_resolved(const char *dir, const EmaExperiment *experiment,
                                   GError **error) {
  g_autofree char *text = ema_experiment_to_yaml(experiment);
  return write_file(dir, "resolved.yaml", text, error);
}

static void add_op(JsonBuilder *builder, const EmaOpResult *result) {
  json_builder_begin_object(builder);
  json_builder_set_member_name(builder, "name");
  json_builder_add_string_value(builder, result->name);
  json_builder_set_member_name(builder, "seconds");
  json_builder_add_double_value(builder, (double) result->seconds_ns / 1e9);
  json_builder_set_member_name(builder, "bandwidth_gbps");
  json_builder_add_double_value(builder, isfinite(result->bandwidth) ? result->bandwidth / 1e9 : 0);
  if (result->has_expect) {
    json_builder_set_member_name(builder, "expected");
    json_builder_add_double_value(builder, result->expect_is_time ? result->expected
                                                                  : result->expected / 1e9);
    json_builder_set_member_name(builder, "expected_metric");
    json_builder_add_string_value(builder, result->expect_is_time ? "seconds" : "bandwidth_gbps");
    json_builder_set_member_name(builder, "error_pct");
    json_builder_add_double_value(builder, result->error * 100);
    json_builder_set_member_name(builder, "tolerance_pct");
    json_builder_add_double_value(builder, result->tolerance * 100);
    json_builder_set_member_name(builder, "pass");
    json_builder_add_boolean_value(builder, result->pass);
  }
  json_builder_end_object(builder);
}

/* The members every summary.json starts with. */
static void begin_summary(JsonBuilder *builder, const EmaExperiment *experiment) {
  json_builder_begin_object(builder);
  json_builder_set_member_name(builder, "experiment");
  json_builder_add_string_value(builder, experiment->name);
  json_builder_set_member_name(builder, "version");
  json_builder_add_string_value(builder, EMA_VERSION);
  json_builder_set_member_name(builder, "seed");
  json_builder_add_int_value(builder, experiment->seed);
  json_builder_set_member_name(builder, "server");
  json_builder_add_string_value(builder, experiment->server.name);
}

/* The "sim" member every summary.json ends with; then write DIR/summary.json. */
static gboolean end_summary(JsonBuilder *builder, guint64 events, EmaTime simulated, double wall_s,
                            const char *dir, GError **error) {
  g_autoptr(JsonGenerator) generator = json_generator_new();
  g_autoptr(JsonNode) root = NULL;
  g_autofree char *text = NULL;
  g_autofree char *with_newline = NULL;
  json_builder_set_member_name(builder, "sim");
  json_builder_begin_object(builder);
  json_builder_set_member_name(builder, "events");
  json_builder_add_int_value(builder, (gint64) events);
  json_builder_set_member_name(builder, "simulated_s");
  json_builder_add_double_value(builder, (double) simulated / 1e9);
  json_builder_set_member_name(builder, "wall_s");
  json_builder_add_double_value(builder, wall_s);
  json_builder_end_object(builder);
  json_builder_end_object(builder);

  root = json_builder_get_root(builder);
  json_generator_set_root(generator, root);
  json_generator_set_pretty(generator, TRUE);
  json_generator_set_indent(generator, 2);
  text = json_generator_to_data(generator, NULL);
  with_newline = g_strconcat(text, "\n", NULL);
  return write_file(dir, "summary.json", with_newline, error);
}

gboolean ema_output_write_ops_summary(const char *dir, const EmaExperiment *experiment,
                                      const EmaOpsReport *report, double wall_s, GError **error) {
  g_autoptr(JsonBuilder) builder = json_builder_new();
  begin_summary(builder, experiment);
  json_builder_set_member_name(builder, "ops");
  json_builder_begin_array(builder);
  for (guint i = 0; i < report->ops->len; i++)
    add_op(builder, &g_array_index(report->ops, EmaOpResult, i));
  json_builder_end_array(builder);
  json_builder_set_member_name(builder, "expectations_missed");
  json_builder_add_int_value(builder, report->failed);
  return end_summary(builder, report->events, report->simulated, wall_s, dir, error);
}

static void add_number(JsonBuilder *builder, const char *name, double value) {
  json_builder_set_member_name(builder, name);
  json_builder_add_double_value(builder, value);
}

static void add_count(JsonBuilder *builder, const char *name, guint64 value) {
  json_builder_set_member_name(builder, name);
  json_builder_add_int_value(builder, (gint64) value);
}

/* {p50, p90, p99, mean} of a histogram of ns, in ms. */
static void add_latency(JsonBuilder *builder, const char *name, const EmaHistogram *histogram) {
  static const double quantiles[] = {0.5, 0.9, 0.99};
  static const char *const names[] = {"p50", "p90", "p99"};
  json_builder_set_member_name(builder, name);
  json_builder_begin_object(builder);
  for (guint i = 0; i < G_N_ELEMENTS(quantiles); i++)
    add_number(builder, names[i], ema_histogram_quantile(histogram, quantiles[i]) / 1e6);
  add_number(builder, "mean", ema_histogram_mean(histogram) / 1e6);
  json_builder_end_object(builder);
}

static void add_string(JsonBuilder *builder, const char *name, const char *value) {
  json_builder_set_member_name(builder, name);
  json_builder_add_string_value(builder, value);
}

/* What the tenant's times rest on: the engine profile (with its measured
 * error, from its file) and the step model. */
static void add_fidelity(JsonBuilder *builder, const EmaTenantSpec *spec) {
  g_autoptr(EmaEngineProfile) profile = ema_engine_profile_load(spec->engine.profile, NULL);
  json_builder_set_member_name(builder, "fidelity");
  json_builder_begin_object(builder);
  add_string(builder, "engine_profile", spec->engine.profile);
  add_string(builder, "scheduler", spec->engine.scheduler == EMA_SCHEDULER_V0 ? "v0" : "v1");
  add_number(builder, "step_cpu_cost_s", (double) spec->engine.step_cpu_cost / 1e9);
  add_string(builder, "step_model",
             "sim/hw/steptime.c: the GPU's operator profiles (gpu.profile) where they hold an "
             "operator, else its roofline");
  /* the profile was loaded when the experiment was; it is there unless removed since */
  add_string(builder, "profile_source", profile ? profile->source : "(profile file gone)");
  add_string(builder, "measured_error", profile ? profile->fidelity : "(profile file gone)");
  json_builder_end_object(builder);
}

static void add_tenant(JsonBuilder *builder, const EmaTenantResult *result) {
  const EmaTenantMetrics *metrics = result->metrics;
  json_builder_begin_object(builder);
  json_builder_set_member_name(builder, "name");
  json_builder_add_string_value(builder, result->spec->name);
  add_count(builder, "gpu", (guint64) result->spec->gpu);
  add_count(builder, "tp", (guint64) result->spec->tp);
  json_builder_set_member_name(builder, "model");
  json_builder_add_string_value(builder, result->spec->model.name);
  add_count(builder, "arrived", result->arrived);
  add_count(builder, "completed", metrics->completed);
  add_count(builder, "rejected", result->rejected);
  add_count(builder, "rejected_max_model_len", result->rejected_too_long);
  add_count(builder, "unfinished", result->unfinished);
  add_number(builder, "throughput_tok_s", ema_tenant_metrics_throughput_tok_s(metrics));
  add_number(builder, "req_per_s", ema_tenant_metrics_req_per_s(metrics));
  add_latency(builder, "ttft_ms", metrics->ttft);
  add_latency(builder, "tpot_ms", metrics->tpot);
  add_latency(builder, "e2e_ms", metrics->e2e);
  add_count(builder, "preemptions", result->preemptions);
  json_builder_set_member_name(builder, "prefix_cache");
  json_builder_begin_object(builder);
  add_count(builder, "query_tokens", result->prefix.query_tokens);
  add_count(builder, "hit_tokens", result->prefix.hit_tokens);
  add_number(builder, "hit_rate",
             result->prefix.query_tokens
                 ? (double) result->prefix.hit_tokens / (double) result->prefix.query_tokens
                 : 0);
  add_count(builder, "evictions", result->prefix.evictions);
  json_builder_end_object(builder);
  add_number(builder, "kv_util_mean", ema_tenant_metrics_kv_util_mean(metrics));
  add_count(builder, "kv_blocks", result->plan.blocks);
  add_count(builder, "kv_bytes_per_gpu", result->plan.kv_bytes);
  add_count(builder, "weight_bytes_per_gpu", result->plan.weight_bytes);
  add_count(builder, "activation_reserve_per_gpu", result->plan.activation_reserve);
  add_count(builder, "steps", metrics->steps);
  add_number(builder, "busy_s", (double) metrics->busy / 1e9);
  add_number(builder, "slowed_by_peers_s", (double) result->slowed_by_peers / 1e9);
  add_fidelity(builder, result->spec);
  json_builder_end_object(builder);
}

static void add_pool(JsonBuilder *builder, const EmaExperiment *experiment,
                     const EmaPoolStats *pool) {
  json_builder_set_member_name(builder, "pool");
  json_builder_begin_object(builder);
  json_builder_set_member_name(builder, "policy");
  json_builder_add_string_value(builder, experiment->policy.name);
  add_count(builder, "borrows", pool->borrows);
  add_count(builder, "slices_borrowed", pool->slices_borrowed);
  add_count(builder, "returns", pool->returns);
  add_count(builder, "slices_returned", pool->slices_returned);
  add_count(builder, "reclaims", pool->reclaims);
  add_count(builder, "slices_reclaimed", pool->slices_reclaimed);
  add_count(builder, "blocks_migrated", pool->blocks_migrated);
  add_count(builder, "blocks_to_host", pool->blocks_to_host);
  add_count(builder, "blocks_dropped", pool->blocks_dropped);
  add_number(builder, "reclaim_wait_mean_ms",
             pool->reclaims ? (double) pool->reclaim_wait / (double) pool->reclaims / 1e6 : 0);
  add_number(builder, "reclaim_wait_max_ms", (double) pool->reclaim_wait_max / 1e6);
  add_count(builder, "plans_adjusted", pool->plans_adjusted);
  add_count(builder, "remote_steps", pool->remote_steps);
  add_number(builder, "exposed_remote_s", (double) pool->exposed_remote / 1e9);
  json_builder_end_object(builder);
}

gboolean ema_output_write_serving_summary(const char *dir, const EmaExperiment *experiment,
                                          const EmaServingReport *report, GError **error) {
  g_autoptr(JsonBuilder) builder = json_builder_new();
  begin_summary(builder, experiment);
  json_builder_set_member_name(builder, "tenants");
  json_builder_begin_array(builder);
  for (guint i = 0; i < report->tenants->len; i++)
    add_tenant(builder, report->tenants->pdata[i]);
  json_builder_end_array(builder);
  add_pool(builder, experiment, &report->pool);
  return end_summary(builder, report->events, report->simulated, report->wall_s, dir, error);
}

void ema_output_print_serving(FILE *out, const EmaServingReport *report) {
  guint width = 6;
  for (guint i = 0; i < report->tenants->len; i++) {
    const EmaTenantResult *r = report->tenants->pdata[i];
    width = MAX(width, (guint) strlen(r->spec->name));
  }
  fprintf(out, "%-*s %5s %-15s %8s %6s %9s %19s %17s %9s %7s %6s\n", (int) width, "tenant", "gpus",
          "model", "done", "left", "tok/s", "TTFT p50/p99 ms", "TPOT p50/p99 ms", "E2E p99 s",
          "preempt", "KV use");
  for (guint i = 0; i < report->tenants->len; i++) {
    const EmaTenantResult *r = report->tenants->pdata[i];
    const EmaTenantMetrics *m = r->metrics;
    g_autofree char *gpus = r->spec->tp == 1
                                ? g_strdup_printf("%" G_GINT64_FORMAT, r->spec->gpu)
                                : g_strdup_printf("%" G_GINT64_FORMAT "-%" G_GINT64_FORMAT,
                                                  r->spec->gpu, r->spec->gpu + r->spec->tp - 1);
    g_autofree char *ttft = g_strdup_printf("%.1f/%.1f", ema_histogram_quantile(m->ttft, 0.5) / 1e6,
                                            ema_histogram_quantile(m->ttft, 0.99) / 1e6);
    g_autofree char *tpot = g_strdup_printf("%.2f/%.2f", ema_histogram_quantile(m->tpot, 0.5) / 1e6,
                                            ema_histogram_quantile(m->tpot, 0.99) / 1e6);
    fprintf(out,
            "%-*s %5s %-15s %8" G_GUINT64_FORMAT " %6" G_GUINT64_FORMAT " %9.0f %19s %17s %9.2f "
            "%7" G_GUINT64_FORMAT " %5.1f%%\n",
            (int) width, r->spec->name, gpus, r->spec->model.name, m->completed,
            r->unfinished + r->rejected, ema_tenant_metrics_throughput_tok_s(m), ttft, tpot,
            ema_histogram_quantile(m->e2e, 0.99) / 1e9, r->preemptions,
            100 * ema_tenant_metrics_kv_util_mean(m));
  }
  fprintf(out, "simulated %.1f s in %.2f s (%" G_GUINT64_FORMAT " events)\n",
          (double) report->simulated / 1e9, report->wall_s, report->events);
}

static char *format_seconds(double seconds) {
  if (seconds >= 1)
    return g_strdup_printf("%.4f s", seconds);
  if (seconds >= 1e-3)
    return g_strdup_printf("%.4f ms", seconds * 1e3);
  return g_strdup_printf("%.3f us", seconds * 1e6);
}

void ema_output_print_ops(FILE *out, const EmaOpsReport *report) {
  guint width = 2;
  gboolean any_expect = FALSE;
  for (guint i = 0; i < report->ops->len; i++) {
    const EmaOpResult *r = &g_array_index(report->ops, EmaOpResult, i);
    width = MAX(width, (guint) strlen(r->name));
    any_expect |= r->has_expect;
  }
  fprintf(out, "%-*s %13s %10s", (int) width, "op", "time", "GB/s");
  if (any_expect)
    fprintf(out, " %13s %8s", "expected", "error");
  fputc('\n', out);
  for (guint i = 0; i < report->ops->len; i++) {
    const EmaOpResult *r = &g_array_index(report->ops, EmaOpResult, i);
    g_autofree char *time = format_seconds((double) r->seconds_ns / 1e9);
    g_autofree char *expected = NULL;
    fprintf(out, "%-*s %13s %10.2f", (int) width, r->name, time, r->bandwidth / 1e9);
    if (!r->has_expect) {
      fputc('\n', out);
      continue;
    }
    expected = r->expect_is_time ? format_seconds(r->expected)
                                 : g_strdup_printf("%.2f GB/s", r->expected / 1e9);
    fprintf(out, " %13s %+7.2f%%%s\n", expected, r->error * 100, r->pass ? "" : "  MISSED");
  }
}
