/* decodefit.c: decode.csv and the step-time keys fitted to it
 * (decodefit.h). */
#include "decodefit.h"

#include <math.h>
#include <string.h>

#include "ema/hw/llm.h"
#include "ema/hw/steptime.h"
#include "decodeplan.h"
#include "errors.h"
#include "report.h"
#include "stats.h"
#include "ema/core/csv.h"
#include "ema/core/file.h"

void ema_decode_row_free(EmaDecodeRow *row) {
  if (row == NULL)
    return;
  g_free(row->model);
  g_free(row->mode);
  g_free(row);
}

/* The columns read, in the order of EmaDecodeRow's fields. */
enum {
  COL_MODEL,
  COL_BATCH,
  COL_CONTEXT,
  COL_MODE,
  COL_REMOTE_FRACTION,
  COL_STEP,
  COL_WEIGHTS,
  COL_ATTENTION,
  COL_WEIGHT_GB,
  COL_KV_LOCAL_GB,
  COL_KV_REMOTE_GB,
  COL_LAUNCH,
  COL_PULL, /* optional */
  N_COLUMNS
};

static const char *const column_names[N_COLUMNS] = {
    "model",          "batch",      "context",       "mode",      "remote_fraction",
    "step_ms_median", "weights_ms", "attention_ms",  "weight_gb", "kv_local_gb",
    "kv_remote_gb",   "launch",     "peer_pull_gb_s"};

static gboolean parse_double(const char *text, double *value) {
  char *end = NULL;
  if (*text == '\0')
    return FALSE;
  *value = ema_csv_parse_decimal(text, &end); /* decimal only: not "0x10" */
  return end != NULL && *end == '\0' && isfinite(*value);
}

static gboolean parse_count(const char *text, guint *value) {
  guint64 number = 0;
  if (!g_ascii_string_to_unsigned(text, 10, 1, G_MAXUINT32, &number, NULL))
    return FALSE;
  *value = (guint) number;
  return TRUE;
}

/* "file:line:col: COLUMN: 'VALUE' WHAT" about column C of CSV's current row (VALUE cut:
 * ema_file_quote_cut); FALSE */
static gboolean field_error(const EmaCsv *csv, const int *index, int c, const char *what,
                            GError **error) {
  g_autofree char *value = ema_file_quote_cut(csv->fields[index[c]], -1);
  g_set_error(error, EMA_VALIDATE_ERROR, EMA_VALIDATE_ERROR_DATA, "%s:%u:%u: %s: '%s' %s",
              csv->file, csv->line, ema_csv_field_column(csv, (guint) index[c]), column_names[c],
              value, what);
  return FALSE;
}

/* Column C of CSV's current row as a count (1..2^32-1) into *VALUE. */
static gboolean read_count(const EmaCsv *csv, const int *index, int c, guint *value,
                           GError **error) {
  return parse_count(csv->fields[index[c]], value) ||
         field_error(csv, index, c, "is not a count in 1..4294967295", error);
}

/* Column C of CSV's current row as a number in [MIN, MAX] into *VALUE. */
static gboolean read_number(const EmaCsv *csv, const int *index, int c, double min, double max,
                            double *value, GError **error) {
  if (parse_double(csv->fields[index[c]], value) && *value >= min && *value <= max)
    return TRUE;
  g_autofree char *what = isinf(max) ? g_strdup_printf("is not a number >= %g", min)
                                     : g_strdup_printf("is not a number in [%g, %g]", min, max);
  return field_error(csv, index, c, what, error);
}

/* One row of decode.csv: the fields of CSV's current row (columns INDEX)
 * into a new row of ROWS; FALSE with "file:line:col: column: ..." otherwise. */
static gboolean read_row(const EmaCsv *csv, const int *index, GPtrArray *rows, GError **error) {
  GStrv f = csv->fields;
  EmaDecodeRow *row = g_new0(EmaDecodeRow, 1);
  const char *launch = f[index[COL_LAUNCH]];
  EmaDecodeMode mode;
  g_ptr_array_add(rows, row);
  row->model = g_strdup(f[index[COL_MODEL]]);
  row->mode = g_strdup(f[index[COL_MODE]]);
  row->graph = strcmp(launch, "graph") == 0;
  if (row->model[0] == '\0')
    return field_error(csv, index, COL_MODEL, "is no model name", error);
  if (!ema_decode_mode_parse(row->mode, &mode, NULL))
    return field_error(csv, index, COL_MODE, "is not local, direct or prefetch", error);
  if (!row->graph && strcmp(launch, "stream") != 0)
    return field_error(csv, index, COL_LAUNCH, "is not graph or stream", error);
  return read_count(csv, index, COL_BATCH, &row->batch, error) &&
         read_count(csv, index, COL_CONTEXT, &row->context, error) &&
         read_number(csv, index, COL_REMOTE_FRACTION, 0, 1, &row->remote_fraction, error) &&
         read_number(csv, index, COL_STEP, 0, INFINITY, &row->step_ms, error) &&
         read_number(csv, index, COL_WEIGHTS, 0, INFINITY, &row->weights_ms, error) &&
         read_number(csv, index, COL_ATTENTION, 0, INFINITY, &row->attention_ms, error) &&
         read_number(csv, index, COL_WEIGHT_GB, 0, INFINITY, &row->weight_gb, error) &&
         read_number(csv, index, COL_KV_LOCAL_GB, 0, INFINITY, &row->kv_local_gb, error) &&
         read_number(csv, index, COL_KV_REMOTE_GB, 0, INFINITY, &row->kv_remote_gb, error) &&
         (index[COL_PULL] < 0 ||
          read_number(csv, index, COL_PULL, 0, INFINITY, &row->peer_pull_gb_s, error));
}

GPtrArray *ema_decode_rows_read(const char *path, GError **error) {
  g_autoptr(GPtrArray) rows = g_ptr_array_new_with_free_func((GDestroyNotify) ema_decode_row_free);
  EmaCsv csv;
  int index[N_COLUMNS];
  GError *local = NULL;
  gboolean ok = TRUE;

  if (!ema_csv_open(&csv, path, &local)) {
    ema_csv_clear(&csv);
    ema_validate_error_from_csv(local, error);
    return NULL;
  }
  for (guint c = 0; ok && c < N_COLUMNS; c++) {
    index[c] = -1;
    for (guint k = 0; csv.header[k]; k++)
      if (strcmp(csv.header[k], column_names[c]) == 0)
        index[c] = (int) k;
    if (index[c] < 0 && c != COL_PULL) {
      g_set_error(error, EMA_VALIDATE_ERROR, EMA_VALIDATE_ERROR_DATA,
                  "%s:1:1: the header has no column '%s'", path, column_names[c]);
      ok = FALSE;
    }
  }
  while (ok && ema_csv_next(&csv, &local))
    ok = read_row(&csv, index, rows, error);
  if (local)
    ok = ema_validate_error_from_csv(local, error);
  ema_csv_clear(&csv);
  return ok ? g_steal_pointer(&rows) : NULL;
}

/* Runs without a peer pull; of those, the graph-launched ones, or every one
 * when none is. */
static gboolean use_row(const EmaDecodeRow *row, gboolean any_graph) {
  return row->peer_pull_gb_s == 0 && (row->graph || !any_graph);
}

/* The model with the most all-local runs (the first such on a tie). */
static const char *line_model(const GPtrArray *rows, gboolean any_graph) {
  const char *best = NULL;
  guint best_count = 0;
  for (guint i = 0; i < rows->len; i++) {
    const EmaDecodeRow *a = rows->pdata[i];
    guint count = 0;
    if (!use_row(a, any_graph) || strcmp(a->mode, "local") != 0)
      continue;
    for (guint k = 0; k < rows->len; k++) {
      const EmaDecodeRow *b = rows->pdata[k];
      count +=
          use_row(b, any_graph) && strcmp(b->mode, "local") == 0 && strcmp(b->model, a->model) == 0;
    }
    if (count > best_count) {
      best = a->model;
      best_count = count;
    }
  }
  return best;
}

static gboolean fit_error(GError **error, const char *message) {
  g_set_error(error, EMA_VALIDATE_ERROR, EMA_VALIDATE_ERROR_FIT, "decode runs: %s", message);
  return FALSE;
}

/* The squared relative errors of the weight passes of the runs USED (their compute times C[i],
 * memory time per byte of weights PER_BYTE) against the roofline with P. */
static double p_error(const GPtrArray *used, const double *c, double per_byte, double p) {
  double sum = 0;
  for (guint i = 0; i < used->len; i++) {
    const EmaDecodeRow *row = used->pdata[i];
    double predicted = ema_roofline_time(c[i], row->weight_gb * 1e9 * per_byte, p) * 1e3;
    double e = (predicted - row->weights_ms) / row->weights_ms;
    sum += e * e;
  }
  return sum;
}

/* OUT's roofline_p from the weight passes of ROWS (decodefit.h), at MATRIX_RATE FLOP/s and
 * OUT's weight rate. p is searched on a grid of 2,001 points even in log p over [1, 64] (the
 * key's range), the first of the least error kept. */
static void fit_roofline_p(const GPtrArray *rows, gboolean any_graph, double matrix_rate,
                           EmaStepFigures *out) {
  g_autoptr(GPtrArray) used = g_ptr_array_new();
  g_autoptr(GArray) compute = g_array_new(FALSE, FALSE, sizeof(double));
  double per_byte = 1 / out->weight_rate, reach = 0, best = G_MAXDOUBLE;
  if (!(matrix_rate > 0))
    return;
  for (guint i = 0; i < rows->len; i++) {
    const EmaDecodeRow *row = rows->pdata[i];
    /* 2-byte weights: weight_gb / 2 elements, one multiply-add each per sequence */
    double c = row->weight_gb * 1e9 * (double) row->batch / matrix_rate;
    if (!use_row(row, any_graph) || !(row->weights_ms > 0) || !(row->weight_gb > 0))
      continue;
    g_ptr_array_add(used, (gpointer) row);
    g_array_append_val(compute, c);
    reach = MAX(reach, c / (row->weight_gb * 1e9 * per_byte));
    out->p_max_batch = MAX(out->p_max_batch, row->batch);
  }
  if (reach < 0.1)
    return; /* every run's compute time under a tenth of its memory time: p untold */
  for (guint k = 0; k <= 2000; k++) {
    double p = exp(log(64.0) * k / 2000.0),
           e = p_error(used, (double *) compute->data, per_byte, p);
    if (e < best) {
      best = e;
      out->roofline_p = p;
    }
  }
  out->p_fitted = TRUE;
  out->p_runs = used->len;
  for (guint i = 0; i < used->len; i++) {
    const EmaDecodeRow *row = used->pdata[i];
    double predicted = ema_roofline_time(g_array_index(compute, double, i),
                                         row->weight_gb * 1e9 * per_byte, out->roofline_p) *
                       1e3;
    out->p_max_rel_error =
        MAX(out->p_max_rel_error, fabs(predicted - row->weights_ms) / row->weights_ms);
  }
}

gboolean ema_decode_fit(const GPtrArray *rows, double hbm_bandwidth, double matrix_rate,
                        EmaStepFigures *out, GError **error) {
  g_autoptr(GArray) rates = g_array_new(FALSE, FALSE, sizeof(double));
  g_autoptr(GArray) residuals = g_array_new(FALSE, FALSE, sizeof(double));
  g_autoptr(GPtrArray) line = g_ptr_array_new();
  g_autoptr(EmaLlmSpec) model = NULL;
  gboolean any_graph = FALSE;
  const char *name;
  double n, sx = 0, sy = 0, sxx = 0, sxy = 0, slope, intercept, kv_min = INFINITY, kv_max = 0;

  memset(out, 0, sizeof *out);
  for (guint i = 0; i < rows->len; i++) {
    const EmaDecodeRow *row = rows->pdata[i];
    any_graph |= row->graph && row->peer_pull_gb_s == 0;
  }

  /* the weight rate */
  for (guint i = 0; i < rows->len; i++) {
    const EmaDecodeRow *row = rows->pdata[i];
    double rate;
    if (!use_row(row, any_graph) || !(row->weights_ms > 0) || !(row->weight_gb > 0))
      continue;
    rate = row->weight_gb * 1e9 / (row->weights_ms * 1e-3);
    g_array_append_val(rates, rate);
  }
  if (rates->len == 0)
    return fit_error(error, "no run with a timed weight pass");
  out->weight_runs = rates->len;
  out->weight_rate = ema_median((const double *) rates->data, rates->len);
  out->hbm_efficiency = out->weight_rate / hbm_bandwidth;
  fit_roofline_p(rows, any_graph, matrix_rate, out);

  /* the attention line */
  name = line_model(rows, any_graph);
  if (name == NULL)
    return fit_error(error, "no all-local run (mode local) for the KV line");
  for (guint i = 0; i < rows->len; i++) {
    const EmaDecodeRow *row = rows->pdata[i];
    if (use_row(row, any_graph) && strcmp(row->mode, "local") == 0 &&
        strcmp(row->model, name) == 0) {
      g_ptr_array_add(line, (gpointer) row);
      sx += row->kv_local_gb;
      sy += row->attention_ms;
      sxx += row->kv_local_gb * row->kv_local_gb;
      sxy += row->kv_local_gb * row->attention_ms;
      kv_min = MIN(kv_min, row->kv_local_gb);
      kv_max = MAX(kv_max, row->kv_local_gb);
    }
  }
  if (!(kv_max > kv_min)) {
    g_autofree char *message = g_strdup_printf(
        "the KV line needs all-local runs of %s at two KV sizes at least (found %u run%s)", name,
        line->len, line->len == 1 ? "" : "s");
    return fit_error(error, message);
  }
  model = ema_llm_load(name, error);
  if (model == NULL) {
    g_prefix_error(error, "decode runs: the model of the KV line: ");
    return FALSE;
  }
  n = line->len;
  slope = (n * sxy - sx * sy) / (n * sxx - sx * sx); /* ms per GB */
  intercept = (sy - slope * sx) / n;                 /* ms */
  if (intercept < 0) {
    out->intercept_clamped = TRUE;
    intercept = 0;
    slope = sxy / sxx;
  }
  if (!(slope > 0)) {
    g_autofree char *message =
        g_strdup_printf("the attention time of %s does not grow with its KV bytes", name);
    return fit_error(error, message);
  }
  g_strlcpy(out->model, name, sizeof out->model);
  out->layers = (guint) model->layers;
  out->kv_runs = line->len;
  out->kv_rate = 1e9 / (slope * 1e-3);
  out->kv_efficiency = out->kv_rate / out->weight_rate;
  out->line_intercept_s = intercept * 1e-3;
  out->layer_overhead_s = out->line_intercept_s / out->layers;
  for (guint i = 0; i < line->len; i++) {
    const EmaDecodeRow *row = line->pdata[i];
    double fitted = intercept + slope * row->kv_local_gb;
    double residual =
        row->step_ms * 1e-3 - (row->weight_gb * 1e9 / out->weight_rate + out->line_intercept_s +
                               row->kv_local_gb * 1e9 / out->kv_rate);
    out->kv_max_rel_error =
        MAX(out->kv_max_rel_error, fabs(fitted - row->attention_ms) / MAX(row->attention_ms, 1e-9));
    g_array_append_val(residuals, residual);
  }
  out->step_residual_s = ema_median((const double *) residuals->data, residuals->len);
  out->step_overhead_s = MAX(0, out->step_residual_s);
  out->fitted = TRUE;
  return TRUE;
}
