/* compare.c: measured against simulated (compare.h). */
#include "compare.h"

#include <json-glib/json-glib.h>
#include <math.h>
#include <string.h>

#include "errors.h"
#include "report.h"
#include "stats.h"
#include "ema/core/file.h"
#include "ema/run/json.h"

#define SUMMARY_FILE "summary.json"
#define PROVENANCE_FILE "provenance.txt"
#define PROVENANCE_GROUP "run"
/* The largest measured bandwidth read back, GB/s: 1 EB/s, a thousand times a GB200 NVL72's whole
 * NVLink fabric */
#define MAX_GBPS 1e9

static const char *const former_run_entries[] = {PROVENANCE_FILE, "compare.md", NULL};
const EmaOutputClaimAs ema_run_output_claim = {
    .kind = EMA_RUN_OUTPUT_KIND, .former = "run", .former_entries = former_run_entries};

void ema_compare_judge(EmaOpResult *result, const EmaOpExpect *expect,
                       const EmaExperiment *experiment, EmaOpsReport *report) {
  ema_op_result_judge(result, expect, experiment->tolerance, &report->failed);
}

/* ---- reading summary.json ------------------------------------------------------ */

static gboolean data_error(GError **error, const char *path, const char *format, ...)
    G_GNUC_PRINTF(3, 4);

static gboolean data_error(GError **error, const char *path, const char *format, ...) {
  va_list args;
  g_autofree char *message = NULL;
  va_start(args, format);
  message = g_strdup_vprintf(format, args);
  va_end(args);
  g_set_error(error, EMA_VALIDATE_ERROR, EMA_VALIDATE_ERROR_DATA, "%s: %s", path, message);
  return FALSE;
}

/* MEMBER of OBJECT as a finite number (ema_json_member_number); FALSE if absent or not one (the
 * callers say which member, in their own words). */
static gboolean get_number(JsonObject *object, const char *member, double *out) {
  return ema_json_member_number(object, member, NAN, -G_MAXDOUBLE, G_MAXDOUBLE, NULL, NULL, out,
                                NULL) &&
         !isnan(*out);
}

/* MEMBER of OBJECT as a string (ema_json_member_string); NULL if absent or not one. */
static const char *get_string(JsonObject *object, const char *member) {
  const char *value = NULL;
  return ema_json_member_string(object, member, NULL, NULL, NULL, &value, NULL) ? value : NULL;
}

/* Result I of EXPERIMENT: an op, then a decode scenario. */
static void expected_result(const EmaExperiment *experiment, guint i, const char **name,
                            const EmaOpSpec **spec, const EmaOpExpect **expect) {
  guint ops = experiment->ops ? experiment->ops->len : 0;
  if (i < ops) {
    const EmaOpSpec *op = &g_array_index(experiment->ops, EmaOpSpec, i);
    *name = op->name;
    *spec = op;
    *expect = &op->expect;
  } else {
    const EmaDecodeScenarioSpec *d =
        &g_array_index(experiment->decode, EmaDecodeScenarioSpec, i - ops);
    *name = d->name;
    *spec = NULL;
    *expect = &d->expect;
  }
}

/* Whether op or decode scenario I of A and of B (both with it) measure the same thing: an op's
 * flows (kind, ends, bytes) one by one, a scenario's model, batch, context, mode, remote share,
 * depth and peer pull. */
static gboolean same_result(const EmaExperiment *a, const EmaExperiment *b, guint i) {
  guint ops = a->ops ? a->ops->len : 0;
  if (i < ops) {
    const EmaOpSpec *x = &g_array_index(a->ops, EmaOpSpec, i);
    const EmaOpSpec *y = &g_array_index(b->ops, EmaOpSpec, i);
    if (x->flows->len != y->flows->len)
      return FALSE;
    for (guint f = 0; f < x->flows->len; f++) {
      const EmaOpFlowSpec *u = &g_array_index(x->flows, EmaOpFlowSpec, f);
      const EmaOpFlowSpec *v = &g_array_index(y->flows, EmaOpFlowSpec, f);
      if (u->kind != v->kind || u->bytes != v->bytes || g_strcmp0(u->src, v->src) != 0 ||
          g_strcmp0(u->dst, v->dst) != 0)
        return FALSE;
    }
    return TRUE;
  }
  {
    const EmaDecodeScenarioSpec *x = &g_array_index(a->decode, EmaDecodeScenarioSpec, i - ops);
    const EmaDecodeScenarioSpec *y = &g_array_index(b->decode, EmaDecodeScenarioSpec, i - ops);
    return g_strcmp0(x->model.name, y->model.name) == 0 && x->model.weights == y->model.weights &&
           x->batch == y->batch && x->context == y->context && x->mode == y->mode &&
           x->remote_fraction == y->remote_fraction && x->depth == y->depth &&
           x->peer_pull == y->peer_pull && x->peer_pull_mode == y->peer_pull_mode;
  }
}

/* The measured results in DIR were of EXPERIMENT's ops and scenarios as they are now: where DIR
 * holds the resolved.yaml its run wrote, each of its ops and scenarios the same as the
 * experiment's (names alone let an edited file through: the same op moving other bytes).
 * TRUE without that file (results written before it was kept); a resolved.yaml that is there
 * but not a regular file (a folder, a FIFO, a dangling link) does not load, never passing the
 * check unread. */
static gboolean same_experiment(const char *dir, const EmaExperiment *experiment, guint results,
                                GError **error) {
  g_autofree char *path = g_build_filename(dir, "resolved.yaml", NULL);
  g_autoptr(EmaExperiment) measured = NULL;
  GError *local = NULL;
  guint ops = experiment->ops ? experiment->ops->len : 0;
  g_autofree char *experiment_name = ema_file_quote_cut(experiment->name, -1);
  if (!g_file_test(path, G_FILE_TEST_EXISTS | G_FILE_TEST_IS_SYMLINK))
    return TRUE;
  if ((measured = ema_experiment_load(path, NULL, &local)) == NULL) {
    data_error(error, path, "does not load: %s", local->message);
    g_error_free(local);
    return FALSE;
  }
  if ((measured->ops ? measured->ops->len : 0) != ops ||
      (measured->decode ? measured->decode->len : 0) + ops != results)
    return data_error(error, path, "other ops or decode scenarios than experiment '%s' has",
                      experiment_name);
  for (guint i = 0; i < results; i++)
    if (!same_result(experiment, measured, i)) {
      g_autofree char *name = ema_file_quote_cut(
          i < ops ? g_array_index(experiment->ops, EmaOpSpec, i).name
                  : g_array_index(experiment->decode, EmaDecodeScenarioSpec, i - ops).name,
          -1);
      return data_error(error, path,
                        "%s '%s' was measured as it is written here, not as the experiment has it "
                        "now: measured from another version of the file (or with --set)?",
                        i < ops ? "op" : "decode scenario", name);
    }
  return TRUE;
}

/* FALSE with ERROR where OBJECT, the summary.json at PATH in DIR, was written by
 * ema-sim: a simulation of the experiment, which compared with the simulation of the same file
 * gave 0% everywhere as though the GPUs had been measured. Either of two signs tells it:
 *   - sim.events above 0: the simulator's events; a measured summary counts none (run.c counts
 *     no events), so this holds for any ema-sim result of ops, at any version;
 *   - a "provenance" member (every summary.json EMA writes now has one: ema-sim's and
 *     ema-validate run's) with no provenance.txt beside it, which ema-validate run writes with
 *     every measurement and ema-sim never does: an ema-sim result of decode scenarios alone
 *     (which counts no events too), or compare's DIR/sim/.
 * A summary with neither (written by hand, or by an ema-validate run older than "provenance",
 * as the committed validate/results/ are) is read as measurements. The error names the file and
 * the member that tells it (PATH: MEMBER: ...). */
#define SIMULATED                                                                                  \
  ": an ema-sim result, not a measurement: give the folder ema-validate run -o wrote"

static gboolean refuse_simulated(const char *dir, const char *path, JsonObject *object,
                                 GError **error) {
  JsonNode *sim = json_object_get_member(object, "sim");
  g_autofree char *provenance = g_build_filename(dir, PROVENANCE_FILE, NULL);
  double events = 0;
  if (sim != NULL && JSON_NODE_HOLDS_OBJECT(sim) &&
      get_number(json_node_get_object(sim), "events", &events) && events > 0)
    return data_error(error, path,
                      "sim.events: %.15g events simulated (a measurement counts none)" SIMULATED,
                      events);
  if (json_object_has_member(object, "provenance") &&
      !g_file_test(provenance, G_FILE_TEST_EXISTS | G_FILE_TEST_IS_SYMLINK))
    return data_error(error, path,
                      "provenance: written without the %s that ema-validate run writes beside "
                      "every measurement" SIMULATED,
                      PROVENANCE_FILE);
  return TRUE;
}

EmaOpsReport *ema_compare_read_summary(const char *dir, const EmaExperiment *experiment,
                                       GError **error) {
  g_autofree char *path = g_build_filename(dir, SUMMARY_FILE, NULL);
  g_autoptr(JsonParser) parser = json_parser_new();
  g_autoptr(EmaOpsReport) report = g_new0(EmaOpsReport, 1);
  guint ops = experiment->ops ? experiment->ops->len : 0;
  guint decodes = experiment->decode ? experiment->decode->len : 0;
  GError *local = NULL;
  JsonNode *root;
  JsonObject *object;
  JsonArray *results;
  JsonNode *results_node;
  const char *name;
  double simulated = 0;
  g_autofree char *text = NULL;
  gsize length = 0;

  report->ops = g_array_new(FALSE, TRUE, sizeof(EmaOpResult));
  if (g_file_test(dir, G_FILE_TEST_EXISTS) && !g_file_test(dir, G_FILE_TEST_IS_DIR)) {
    g_set_error(error, EMA_VALIDATE_ERROR, EMA_VALIDATE_ERROR_IO,
                "%s: not a folder (the measurements are the folder ema-validate run -o wrote)",
                dir);
    return NULL;
  }
  if (!g_file_test(path, G_FILE_TEST_EXISTS)) {
    g_set_error(error, EMA_VALIDATE_ERROR, EMA_VALIDATE_ERROR_IO,
                "%s: no such file: measure first (ema-validate run FILE -o %s)", path, dir);
    return NULL;
  }
  if (!ema_file_read_regular(path, EMA_FILE_MAX_TEXT, &text, &length, &local)) {
    /* (its message names the file) */
    g_set_error_literal(error, EMA_VALIDATE_ERROR, EMA_VALIDATE_ERROR_IO, local->message);
    g_error_free(local);
    return NULL;
  }
  /* scanned and parsed as every summary.json EMA reads back (its message names the place) */
  if (!ema_json_parse_text(parser, path, text, length, &local)) {
    g_set_error_literal(error, EMA_VALIDATE_ERROR, EMA_VALIDATE_ERROR_DATA, local->message);
    g_error_free(local);
    return NULL;
  }
  root = json_parser_get_root(parser);
  if (root == NULL || !JSON_NODE_HOLDS_OBJECT(root)) {
    data_error(error, path, "not a summary (no JSON object)");
    return NULL;
  }
  object = json_node_get_object(root);
  /* what the file is before whose it is: a simulation of another experiment is a simulation */
  if (!refuse_simulated(dir, path, object, error))
    return NULL;
  name = get_string(object, "experiment");
  if (name == NULL) {
    data_error(error, path,
               "no \"experiment\" name: not a summary.json of ema-sim or "
               "ema-validate run");
    return NULL;
  }
  if (strcmp(name, experiment->name) != 0) {
    g_autofree char *found = ema_file_quote_cut(name, -1);
    g_autofree char *wanted = ema_file_quote_cut(experiment->name, -1);
    data_error(error, path, "the results of experiment '%s', not '%s'", found, wanted);
    return NULL;
  }
  results_node = json_object_get_member(object, "ops");
  if (results_node == NULL || !JSON_NODE_HOLDS_ARRAY(results_node)) {
    data_error(error, path,
               "no \"ops\" list: the summary of a serving run, not of ops and decode "
               "scenarios");
    return NULL;
  }
  results = json_node_get_array(results_node);
  if (json_array_get_length(results) != ops + decodes) {
    g_autofree char *wanted = ema_file_quote_cut(experiment->name, -1);
    data_error(error, path,
               "%u results, but experiment '%s' has %u op%s and %u decode scenario%s: measured "
               "from another version of the file?",
               json_array_get_length(results), wanted, ops, ops == 1 ? "" : "s", decodes,
               decodes == 1 ? "" : "s");
    return NULL;
  }
  for (guint i = 0; i < ops + decodes; i++) {
    JsonNode *node = json_array_get_element(results, i);
    EmaOpResult result = {0};
    const EmaOpExpect *expect;
    const char *got;
    double seconds = 0, gbps = 0;
    expected_result(experiment, i, &result.name, &result.spec, &expect);
    if (!JSON_NODE_HOLDS_OBJECT(node)) {
      data_error(error, path, "ops[%u]: not an object", i);
      return NULL;
    }
    got = get_string(json_node_get_object(node), "name");
    if (got == NULL) {
      data_error(error, path, "ops[%u].name: missing or not a string", i);
      return NULL;
    }
    if (strcmp(got, result.name) != 0) {
      g_autofree char *found = ema_file_quote_cut(got, -1);
      g_autofree char *wanted = ema_file_quote_cut(result.name, -1);
      data_error(error, path,
                 "ops[%u] is '%s', but the experiment's %s %u is '%s': measured from another "
                 "version of the file?",
                 i, found, result.spec ? "op" : "decode scenario",
                 result.spec ? i + 1 : i - ops + 1, wanted);
      return NULL;
    }
    if (!get_number(json_node_get_object(node), "seconds", &seconds) || !(seconds > 0)) {
      data_error(error, path, "ops[%u].seconds (%s): missing or not a positive number", i, got);
      return NULL;
    }
    if (seconds * 1e9 >= (double) EMA_TIME_NEVER) {
      data_error(error, path,
                 "ops[%u].seconds (%s): %g s is longer than the simulator's clock counts "
                 "(2^63 ns, about 292 years)",
                 i, got, seconds);
      return NULL;
    }
    if (ema_llround(seconds * 1e9) < 1) {
      data_error(error, path,
                 "ops[%u].seconds (%s): %g s is shorter than the simulator's clock counts (1 ns)",
                 i, got, seconds);
      return NULL;
    }
    /* (a bandwidth past 1 EB/s, in bytes per second, became "inf" in compare.csv) */
    if (!get_number(json_node_get_object(node), "bandwidth_gbps", &gbps) || gbps < 0 ||
        gbps > MAX_GBPS) {
      data_error(error, path,
                 "ops[%u].bandwidth_gbps (%s): missing or not a number in 0..%g (1 EB/s)", i, got,
                 MAX_GBPS);
      return NULL;
    }
    result.seconds_ns = ema_llround(seconds * 1e9);
    result.bandwidth = gbps * 1e9;
    ema_compare_judge(&result, expect, experiment, report);
    if (result.spec)
      simulated += seconds;
    g_array_append_val(report->ops, result);
  }
  if (!same_experiment(dir, experiment, ops + decodes, error))
    return NULL;
  report->simulated = ema_llround(simulated * 1e9);
  return g_steal_pointer(&report);
}

/* ---- the comparison ---------------------------------------------------------------- */

EmaComparison *ema_comparison_new(const EmaOpsReport *measured, const EmaOpsReport *simulated,
                                  GError **error) {
  g_autoptr(EmaComparison) c = g_new0(EmaComparison, 1);
  g_autoptr(GArray) ops = g_array_new(FALSE, FALSE, sizeof(double));
  g_autoptr(GArray) decodes = g_array_new(FALSE, FALSE, sizeof(double));
  g_autoptr(GArray) all = g_array_new(FALSE, FALSE, sizeof(double));
  double ops_worst = -1, decode_worst = -1;

  c->rows = g_array_new(FALSE, TRUE, sizeof(EmaCompareRow));
  c->ops_worst = c->decode_worst = -1;
  if (measured->ops->len != simulated->ops->len) {
    g_set_error(error, EMA_VALIDATE_ERROR, EMA_VALIDATE_ERROR_DATA,
                "%u measured results against %u simulated", measured->ops->len,
                simulated->ops->len);
    return NULL;
  }
  for (guint i = 0; i < measured->ops->len; i++) {
    const EmaOpResult *m = &g_array_index(measured->ops, EmaOpResult, i);
    const EmaOpResult *s = &g_array_index(simulated->ops, EmaOpResult, i);
    EmaCompareRow row = {0};
    double magnitude;
    if (strcmp(m->name, s->name) != 0 || (m->spec == NULL) != (s->spec == NULL)) {
      g_autofree char *measured_name = ema_file_quote_cut(m->name, -1);
      g_autofree char *simulated_name = ema_file_quote_cut(s->name, -1);
      g_set_error(error, EMA_VALIDATE_ERROR, EMA_VALIDATE_ERROR_DATA,
                  "result %u is '%s' measured but '%s' simulated", i + 1, measured_name,
                  simulated_name);
      return NULL;
    }
    if (m->seconds_ns <= 0 || s->seconds_ns <= 0) {
      g_autofree char *name = ema_file_quote_cut(m->name, -1);
      g_set_error(error, EMA_VALIDATE_ERROR, EMA_VALIDATE_ERROR_DATA,
                  "'%s' takes no time (measured %" G_GINT64_FORMAT
                  " ns, simulated %" G_GINT64_FORMAT " ns)",
                  name, (gint64) m->seconds_ns, (gint64) s->seconds_ns);
      return NULL;
    }
    row.name = m->name;
    row.decode = m->spec == NULL;
    row.measured_s = (double) m->seconds_ns / 1e9;
    row.simulated_s = (double) s->seconds_ns / 1e9;
    row.measured_bandwidth = m->bandwidth;
    row.simulated_bandwidth = s->bandwidth;
    row.error = (row.simulated_s - row.measured_s) / row.measured_s;
    magnitude = fabs(row.error);
    g_array_append_val(row.decode ? decodes : ops, magnitude);
    g_array_append_val(all, magnitude);
    if (row.decode && magnitude > decode_worst) {
      decode_worst = magnitude;
      c->decode_worst = (gint) i;
    } else if (!row.decode && magnitude > ops_worst) {
      ops_worst = magnitude;
      c->ops_worst = (gint) i;
    }
    g_array_append_val(c->rows, row);
  }
  c->ops = ops->len;
  c->decodes = decodes->len;
  c->ops_median = ops->len ? ema_median((const double *) ops->data, ops->len) : NAN;
  c->decode_median = decodes->len ? ema_median((const double *) decodes->data, decodes->len) : NAN;
  c->all_median = all->len ? ema_median((const double *) all->data, all->len) : NAN;
  return g_steal_pointer(&c);
}

void ema_comparison_free(EmaComparison *comparison) {
  if (comparison == NULL)
    return;
  g_array_unref(comparison->rows);
  g_free(comparison);
}

/* ---- printing and writing ------------------------------------------------------------ */

/* SECONDS with 4 significant digits in ns, us, ms or s. */
static char *format_time(double seconds) {
  static const struct {
    double scale;
    const char *unit;
  } units[] = {{1e-6, "us"}, {1e-3, "ms"}, {1, "s"}};
  double value = seconds * 1e9;
  const char *unit = "ns";
  int decimals;
  for (guint i = 0; i < G_N_ELEMENTS(units) && fabs(seconds) >= units[i].scale; i++) {
    value = seconds / units[i].scale;
    unit = units[i].unit;
  }
  decimals = fabs(value) >= 100 ? 1 : fabs(value) >= 10 ? 2 : 3;
  return g_strdup_printf("%.*f %s", decimals, value, unit);
}

static const EmaCompareRow *row_at(const EmaComparison *c, gint i) {
  return i < 0 ? NULL : &g_array_index(c->rows, EmaCompareRow, i);
}

/* "median |error| 1.23% over 36 ops, largest +4.56% (name)" */
static char *summary_line(const EmaComparison *c, gboolean decode) {
  guint count = decode ? c->decodes : c->ops;
  const EmaCompareRow *worst = row_at(c, decode ? c->decode_worst : c->ops_worst);
  if (count == 0)
    return g_strdup_printf("no %s", decode ? "decode scenarios" : "ops");
  return g_strdup_printf("median |error| %.2f%% over %u %s, largest %+.2f%% (%s)",
                         100 * (decode ? c->decode_median : c->ops_median), count,
                         decode ? (count == 1 ? "decode scenario" : "decode scenarios")
                                : (count == 1 ? "op" : "ops"),
                         100 * worst->error, worst->name);
}

void ema_comparison_print(FILE *out, const EmaComparison *c) {
  guint width = 8;
  g_autofree char *ops = summary_line(c, FALSE);
  g_autofree char *decodes = summary_line(c, TRUE);
  for (guint i = 0; i < c->rows->len; i++)
    width = MAX(width, (guint) strlen(g_array_index(c->rows, EmaCompareRow, i).name));
  fprintf(out, "%-*s %-6s %12s %12s %9s\n", (int) width, "name", "kind", "measured", "simulated",
          "error");
  for (guint i = 0; i < c->rows->len; i++) {
    const EmaCompareRow *r = &g_array_index(c->rows, EmaCompareRow, i);
    g_autofree char *measured = format_time(r->measured_s);
    g_autofree char *simulated = format_time(r->simulated_s);
    fprintf(out, "%-*s %-6s %12s %12s %+8.2f%%\n", (int) width, r->name,
            r->decode ? "decode" : "op", measured, simulated, 100 * r->error);
  }
  fprintf(out, "ops: %s\ndecode: %s\n", ops, decodes);
  if (c->ops && c->decodes)
    fprintf(out, "all: median |error| %.2f%% over %u\n", 100 * c->all_median, c->rows->len);
}

static gboolean write_file(const char *dir, const char *name, const char *text, GError **error) {
  g_autofree char *path = g_build_filename(dir, name, NULL);
  GError *local = NULL;
  if (!g_file_set_contents(path, text, -1, &local)) {
    g_set_error(error, EMA_VALIDATE_ERROR, EMA_VALIDATE_ERROR_IO, "cannot write %s: %s", path,
                local->message);
    g_error_free(local);
    return FALSE;
  }
  return TRUE;
}

/* DIR's provenance.txt, loaded; NULL when there is none or it does not parse. */
static GKeyFile *provenance_load(const char *dir) {
  g_autofree char *path = g_build_filename(dir, PROVENANCE_FILE, NULL);
  g_autoptr(GKeyFile) file = g_key_file_new();
  g_autofree char *text = NULL;
  gsize length = 0;
  if (!ema_file_read_regular(path, EMA_FILE_MAX_TEXT, &text, &length, NULL) ||
      !g_key_file_load_from_data(file, text, length, G_KEY_FILE_NONE, NULL))
    return NULL;
  return g_steal_pointer(&file);
}

char *ema_compare_measured_server(const char *dir) {
  g_autoptr(GKeyFile) file = provenance_load(dir);
  return file ? g_key_file_get_string(file, PROVENANCE_GROUP, "server", NULL) : NULL;
}

char *ema_compare_provenance(const char *dir) {
  g_autoptr(GKeyFile) file = provenance_load(dir);
  g_auto(GStrv) keys = NULL;
  GString *out;
  if (file == NULL)
    return NULL;
  keys = g_key_file_get_keys(file, PROVENANCE_GROUP, NULL, NULL);
  if (keys == NULL)
    return NULL;
  out = g_string_new(NULL);
  for (guint i = 0; keys[i]; i++) {
    g_autofree char *value = g_key_file_get_string(file, PROVENANCE_GROUP, keys[i], NULL);
    if (value)
      g_string_append_printf(out, "%s: %s\n", keys[i], value);
  }
  return g_string_free(out, FALSE);
}

/* A markdown table cell: '|' escaped. */
static char *cell(const char *text) {
  g_auto(GStrv) parts = g_strsplit(text, "|", -1);
  return g_strjoinv("\\|", parts);
}

gboolean ema_comparison_write(const EmaComparison *c, const EmaCompareInfo *info, const char *dir,
                              GError **error) {
  GString *csv =
      g_string_new("name,kind,measured_s,simulated_s,measured_gb_s,simulated_gb_s,error_pct\n");
  GString *md = g_string_new(NULL);
  g_autofree char *provenance = ema_compare_provenance(info->measured_dir);
  g_autofree char *ops = summary_line(c, FALSE);
  g_autofree char *decodes = summary_line(c, TRUE);
  gboolean ok;

  g_string_append_printf(md, "# %s: the GPUs against the simulator\n\n", info->experiment_name);
  g_string_append_printf(md, "- experiment: `%s` (server `%s`)\n", info->experiment_file,
                         info->server_name);
  g_string_append_printf(md, "- measured: `%s/summary.json`\n", info->measured_dir);
  if (provenance) {
    g_auto(GStrv) lines = g_strsplit(provenance, "\n", -1);
    for (guint i = 0; lines[i]; i++)
      if (*lines[i])
        g_string_append_printf(md, "  - %s\n", lines[i]);
  }
  if (info->measured_server)
    g_string_append_printf(md,
                           "- **measured under server `%s`, simulated with `%s`**: this table "
                           "compares that model with those GPUs\n",
                           info->measured_server, info->server_name);
  g_string_append_printf(md, "- simulated: %s\n", info->simulated_with);
  g_string_append(md, "- error = (simulated - measured) / measured time\n\n");
  g_string_append_printf(md, "Ops: %s.  \nDecode: %s.", ops, decodes);
  if (c->ops && c->decodes)
    g_string_append_printf(md, "  \nAll: median |error| %.2f%% over %u.", 100 * c->all_median,
                           c->rows->len);
  g_string_append(md, "\n\n| name | kind | measured | simulated | measured GB/s | simulated "
                      "GB/s | error |\n|---|---|---:|---:|---:|---:|---:|\n");
  for (guint i = 0; i < c->rows->len; i++) {
    const EmaCompareRow *r = &g_array_index(c->rows, EmaCompareRow, i);
    g_autofree char *name_csv = NULL;
    g_autofree char *name_md = cell(r->name);
    g_autofree char *measured = format_time(r->measured_s);
    g_autofree char *simulated = format_time(r->simulated_s);
    char numbers[5][G_ASCII_DTOSTR_BUF_SIZE];
    g_ascii_formatd(numbers[0], sizeof numbers[0], "%.9g", r->measured_s);
    g_ascii_formatd(numbers[1], sizeof numbers[1], "%.9g", r->simulated_s);
    g_ascii_formatd(numbers[2], sizeof numbers[2], "%.6g", r->measured_bandwidth / 1e9);
    g_ascii_formatd(numbers[3], sizeof numbers[3], "%.6g", r->simulated_bandwidth / 1e9);
    g_ascii_formatd(numbers[4], sizeof numbers[4], "%.4f", 100 * r->error);
    name_csv = ema_csv_field(r->name);
    g_string_append_printf(csv, "%s,%s,%s,%s,%s,%s,%s\n", name_csv, r->decode ? "decode" : "op",
                           numbers[0], numbers[1], numbers[2], numbers[3], numbers[4]);
    g_string_append_printf(md, "| %s | %s | %s | %s | %.2f | %.2f | %+.2f%% |\n", name_md,
                           r->decode ? "decode" : "op", measured, simulated,
                           r->measured_bandwidth / 1e9, r->simulated_bandwidth / 1e9,
                           100 * r->error);
  }
  ok = write_file(dir, "compare.csv", csv->str, error) &&
       write_file(dir, "compare.md", md->str, error);
  g_string_free(csv, TRUE);
  g_string_free(md, TRUE);
  return ok;
}
