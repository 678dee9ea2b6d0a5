/* output.c: writes resolved.yaml and summary.json and prints result tables.
 * Models never write output; the CLI calls these after a run. JSON is built
 * with json-glib in a fixed key order, so equal results give equal bytes. */
#include "ema/output.h"

#include <errno.h>
#include <json-glib/json-glib.h>
#include <math.h>

#include "ema/units.h"

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
  json_builder_add_string_value(builder, result->spec->name);
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

gboolean ema_output_write_ops_summary(const char *dir, const EmaExperiment *experiment,
                                      const EmaOpsReport *report, double wall_s, GError **error) {
  g_autoptr(JsonBuilder) builder = json_builder_new();
  g_autoptr(JsonGenerator) generator = json_generator_new();
  g_autoptr(JsonNode) root = NULL;
  g_autofree char *text = NULL;

  json_builder_begin_object(builder);
  json_builder_set_member_name(builder, "experiment");
  json_builder_add_string_value(builder, experiment->name);
  json_builder_set_member_name(builder, "version");
  json_builder_add_string_value(builder, EMA_VERSION);
  json_builder_set_member_name(builder, "seed");
  json_builder_add_int_value(builder, experiment->seed);
  json_builder_set_member_name(builder, "server");
  json_builder_add_string_value(builder, experiment->server.name);
  json_builder_set_member_name(builder, "ops");
  json_builder_begin_array(builder);
  for (guint i = 0; i < report->ops->len; i++)
    add_op(builder, &g_array_index(report->ops, EmaOpResult, i));
  json_builder_end_array(builder);
  json_builder_set_member_name(builder, "expectations_missed");
  json_builder_add_int_value(builder, report->failed);
  json_builder_set_member_name(builder, "sim");
  json_builder_begin_object(builder);
  json_builder_set_member_name(builder, "events");
  json_builder_add_int_value(builder, (gint64) report->events);
  json_builder_set_member_name(builder, "simulated_s");
  json_builder_add_double_value(builder, (double) report->simulated / 1e9);
  json_builder_set_member_name(builder, "wall_s");
  json_builder_add_double_value(builder, wall_s);
  json_builder_end_object(builder);
  json_builder_end_object(builder);

  root = json_builder_get_root(builder);
  json_generator_set_root(generator, root);
  json_generator_set_pretty(generator, TRUE);
  json_generator_set_indent(generator, 2);
  text = json_generator_to_data(generator, NULL);
  {
    g_autofree char *with_newline = g_strconcat(text, "\n", NULL);
    return write_file(dir, "summary.json", with_newline, error);
  }
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
    width = MAX(width, (guint) strlen(r->spec->name));
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
    fprintf(out, "%-*s %13s %10.2f", (int) width, r->spec->name, time, r->bandwidth / 1e9);
    if (!r->has_expect) {
      fputc('\n', out);
      continue;
    }
    expected = r->expect_is_time ? format_seconds(r->expected)
                                 : g_strdup_printf("%.2f GB/s", r->expected / 1e9);
    fprintf(out, " %13s %+7.2f%%%s\n", expected, r->error * 100, r->pass ? "" : "  MISSED");
  }
}
