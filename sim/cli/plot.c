/* plot.c: the data side of the figures (plot.h). It reads sweep.csv,
 * requests.csv, timeline.csv and summary.json, writes the series gnuplot
 * draws into .dat files in DIR/plots/ (one block per series, blocks separated by
 * two blank lines, numbers in the C locale) and DIR/plots/plots.gp, which
 * sets each figure's variables and loads its script from plots/; then runs
 * gnuplot once on plots.gp.
 *
 * Invariants: a figure is only asked for when its data has at least one
 * point; series are in the order they first appear in the results; the
 * .dat files depend only on the results (so figures are reproducible). */
#include "ema/cli/plot.h"

#include <errno.h>
#include <math.h>
#include <stdio.h>
#include <string.h>
#include <sys/wait.h>

#include <glib/gstdio.h>
#include <json-glib/json-glib.h>

#include "ema/core/csv.h"
#include "ema/core/modelpath.h"
#include "ema/core/units.h"
#include "ema/core/node.h"
#include "ema/policy.h"
#include "ema/run/json.h"
#include "ema/run/output.h"

#define MAX_CDF_POINTS 400
#define MAX_TIMELINE_POINTS 2000
#define MAX_GPU_PANELS 16
#define MAX_GPUS 1024 /* a server's (hwmodel.c's gpus) */
#define GIB (1024.0 * 1024.0 * 1024.0)

/* ---- small helpers ----------------------------------------------------------- */

/* A run's tables may be larger than a configuration file: timeline.csv at its default cap of
 * 10,000,000 rows (timeline_max_rows, ~70 bytes each) */
#define MAX_TABLE_BYTES ((gsize) 1 << 30)

typedef struct {
  GPtrArray *header; /* char * */
  GPtrArray *rows;   /* GPtrArray * of char *, into table's text */
  EmaCsv table;      /* the file's text, which the rows' fields point into */
} Csv;

static void csv_clear(Csv *csv) {
  g_clear_pointer(&csv->header, g_ptr_array_unref);
  g_clear_pointer(&csv->rows, g_ptr_array_unref);
  ema_csv_clear(&csv->table);
}

/* The strings of STRV, copied. */
static GPtrArray *strv_copy(GStrv strv) {
  GPtrArray *out = g_ptr_array_new_with_free_func(g_free);
  for (guint i = 0; strv[i]; i++)
    g_ptr_array_add(out, g_strdup(strv[i]));
  return out;
}

/* The whole table at PATH, read by the one CSV reader (ema/core/csv.h); its rows' fields are
 * the reader's own, split in place in its text (a copy of each would take several times the
 * file's size: a rack's timeline.csv holds millions of rows). */
static gboolean csv_read(const char *path, Csv *csv, GError **error) {
  GError *row_error = NULL;
  if (!ema_csv_open_max(&csv->table, path, MAX_TABLE_BYTES, error)) {
    csv_clear(csv);
    return FALSE;
  }
  csv->header = strv_copy(csv->table.header);
  csv->rows = g_ptr_array_new_with_free_func((GDestroyNotify) g_ptr_array_unref);
  while (ema_csv_next(&csv->table, &row_error)) {
    GPtrArray *row = g_ptr_array_sized_new(csv->table.n_fields);
    for (guint i = 0; i < csv->table.n_fields; i++)
      g_ptr_array_add(row, csv->table.fields[i]);
    g_ptr_array_add(csv->rows, row);
  }
  if (row_error) {
    g_propagate_error(error, row_error);
    csv_clear(csv);
    return FALSE;
  }
  return TRUE;
}

static gint csv_column(const Csv *csv, const char *name) {
  for (guint i = 0; i < csv->header->len; i++)
    if (strcmp(csv->header->pdata[i], name) == 0)
      return (gint) i;
  return -1;
}

/* The columns NEEDED (N names) of CSV into COL; FALSE with an error naming
 * PATH and the first one missing. */
static gboolean csv_columns(const Csv *csv, const char *path, const char *const *needed, guint n,
                            gint *col, GError **error) {
  for (guint i = 0; i < n; i++)
    if ((col[i] = csv_column(csv, needed[i])) < 0) {
      g_set_error(error, G_FILE_ERROR, G_FILE_ERROR_INVAL, "%s has no column %s", path, needed[i]);
      return FALSE;
    }
  return TRUE;
}

static const char *csv_cell(GPtrArray *row, gint column) {
  return column >= 0 && (guint) column < row->len ? row->pdata[column] : "";
}

/* TEXT as a number; FALSE unless all of it is one finite number. */
static gboolean parse_number(const char *text, double *value) {
  char *end;
  if (text == NULL || *text == '\0')
    return FALSE;
  *value = g_ascii_strtod(text, &end);
  return *end == '\0' && isfinite(*value);
}

static void append_number(GString *out, double value) {
  char buffer[G_ASCII_DTOSTR_BUF_SIZE];
  if (!isfinite(value))
    g_string_append(out, "NaN");
  else
    g_string_append(out, g_ascii_formatd(buffer, sizeof buffer, "%.6g", value));
}

/* A gnuplot string expression: single-quoted, a quote joined in double quotes, no newlines. */
static void append_gp_string(GString *out, const char *text) {
  /* single-quoted pieces joined by a double-quoted quote ('a'."'".'b'): gnuplot's doubled quote
   * ('') is taken for an empty string where it follows the opening one */
  g_string_append_c(out, '\'');
  for (const char *c = text; *c; c++) {
    if (*c == '\'')
      g_string_append(out, "'.\"'\".'");
    else if (*c == '\n' || *c == '\r')
      g_string_append_c(out, ' ');
    else
      g_string_append_c(out, *c);
  }
  g_string_append_c(out, '\'');
}

static void gp_set(GString *driver, const char *name, const char *value) {
  g_string_append_printf(driver, "%s = ", name);
  append_gp_string(driver, value);
  g_string_append_c(driver, '\n');
}

static void gp_series(GString *driver, GPtrArray *names) {
  g_string_append_printf(driver, "nseries = %u\n", names->len);
  for (guint i = 0; i < names->len; i++) {
    g_autofree char *name = g_strdup_printf("series%u", i + 1);
    gp_set(driver, name, names->pdata[i]);
  }
}

/* Where SCRIPT (e.g. "memory.gp") is: EMA_PLOT_PATH's folders, then the
 * built-in plots/ (installed, else the source tree's: ema_data_dir). */
static char *find_script(const char *script, GError **error) {
  const char *env = g_getenv("EMA_PLOT_PATH");
  char *path;
  if (env && *env) {
    g_auto(GStrv) dirs = g_strsplit(env, G_SEARCHPATH_SEPARATOR_S, -1);
    for (guint i = 0; dirs[i]; i++) {
      if (*dirs[i] == '\0')
        continue;
      path = g_build_filename(dirs[i], script, NULL);
      if (g_file_test(path, G_FILE_TEST_IS_REGULAR))
        return path;
      /* the first of the name is the script, whatever it is (as a model path's NAME.yaml): a
       * folder, FIFO or dangling link there is an error, not passed over for the built-in one */
      if (g_file_test(path, G_FILE_TEST_EXISTS) || g_file_test(path, G_FILE_TEST_IS_SYMLINK)) {
        g_set_error(error, G_FILE_ERROR, G_FILE_ERROR_INVAL,
                    "gnuplot script %s (EMA_PLOT_PATH) is not a regular file", path);
        g_free(path);
        return NULL;
      }
      g_free(path);
    }
  }
  {
    g_autofree char *builtin = ema_data_dir("plots");
    path = g_build_filename(builtin, script, NULL);
    if (g_file_test(path, G_FILE_TEST_IS_REGULAR))
      return path;
    g_set_error(error, G_FILE_ERROR, G_FILE_ERROR_NOENT,
                "gnuplot script %s not found (in EMA_PLOT_PATH or %s)", script, builtin);
  }
  g_free(path);
  return NULL;
}

/* Ask for figure NAME (NAME.png and NAME.svg, WIDTH x HEIGHT pixels) drawn
 * by SCRIPT. */
/* Copy the script at PATH into PLOTS (so that plots.gp loads it by a path
 * relative to its folder, and the folder draws again wherever it is
 * moved); its file name, or NULL with an error. */
static char *copy_script(const char *plots, const char *path, GError **error) {
  g_autofree char *text = NULL;
  g_autofree char *name = g_path_get_basename(path);
  g_autofree char *copy = g_build_filename(plots, name, NULL);
  gsize length;
  if (!g_file_get_contents(path, &text, &length, error) ||
      !g_file_set_contents(copy, text, (gssize) length, error))
    return NULL;
  return g_steal_pointer(&name);
}

static gboolean add_figure(const char *plots, GString *driver, GPtrArray *figures, const char *name,
                           const char *script, guint width, guint height, GError **error) {
  static const char *const formats[] = {"png", "svg"};
  g_autofree char *found = find_script(script, error);
  g_autofree char *path = found ? copy_script(plots, found, error) : NULL;
  if (path == NULL)
    return FALSE;
  g_string_append_printf(driver, "width = %u; height = %u\n", width, height);
  for (guint f = 0; f < G_N_ELEMENTS(formats); f++) {
    g_string_append_printf(driver, "fmt = '%s'; name = ", formats[f]);
    append_gp_string(driver, name);
    g_string_append(driver, "; load ");
    append_gp_string(driver, path);
    g_string_append(driver, "; reset\n");
    g_ptr_array_add(figures, g_strdup_printf("%s.%s", name, formats[f]));
  }
  g_string_append_c(driver, '\n');
  return TRUE;
}

static gboolean write_data(const char *plots, const char *name, const GString *text,
                           GError **error) {
  g_autofree char *path = g_build_filename(plots, name, NULL);
  return g_file_set_contents(path, text->str, (gssize) text->len, error);
}

/* ---- plot.yaml (settings a sweep leaves for ema-sim plot) --------------------------- */

typedef struct {
  char *x, *by, *tenant, *title, *xlabel;
  gboolean tenant_given; /* --tenant, not plot.yaml: a sweep's figures take its name */
} Settings;

static void settings_clear(Settings *settings) {
  g_free(settings->x);
  g_free(settings->by);
  g_free(settings->tenant);
  g_free(settings->title);
  g_free(settings->xlabel);
}

static const char *const setting_keys[] = {"x", "by", "tenant", "title", "xlabel", NULL};

gboolean ema_plot_check_settings(const EmaNode *settings, const char *prefix, GError **error) {
  if (settings->kind != EMA_NODE_MAP) {
    ema_node_error(error, EMA_CONFIG_ERROR_TYPE, settings, prefix,
                   "give a map of plot settings (x, by, tenant, title, xlabel)");
    return FALSE;
  }
  for (guint i = 0; i < settings->keys->len; i++) {
    const EmaNode *key = settings->keys->pdata[i];
    const EmaNode *value = settings->items->pdata[i];
    g_autofree char *path =
        prefix ? g_strconcat(prefix, ".", key->value, NULL) : g_strdup(key->value);
    if (!g_strv_contains(setting_keys, key->value)) {
      ema_node_error(error, EMA_CONFIG_ERROR_KEY, key, path,
                     "unknown key (valid: x, by, tenant, title, xlabel)");
      return FALSE;
    }
    if (value->kind != EMA_NODE_SCALAR || value->value == NULL) {
      ema_node_error(error, EMA_CONFIG_ERROR_TYPE, value, path, "give one value");
      return FALSE;
    }
  }
  return TRUE;
}

static gboolean settings_load(const char *dir, const EmaPlotOptions *options, Settings *settings,
                              GError **error) {
  g_autofree char *path = g_build_filename(dir, "plot.yaml", NULL);
  char **fields[] = {&settings->x, &settings->by, &settings->tenant, &settings->title,
                     &settings->xlabel};
  /* (one that is there is read, whatever it is: a folder or FIFO named plot.yaml is the node
   * loader's error, not settings passed over) */
  if (g_file_test(path, G_FILE_TEST_EXISTS) || g_file_test(path, G_FILE_TEST_IS_SYMLINK)) {
    g_autoptr(EmaNode) root = ema_node_load_file(path, error);
    /* (edited by hand, as its comment invites: a list, a null value, a typo are errors) */
    if (root == NULL || !ema_plot_check_settings(root, NULL, error))
      return FALSE;
    for (guint i = 0; i < root->keys->len; i++)
      for (guint k = 0; setting_keys[k]; k++)
        if (strcmp(((const EmaNode *) root->keys->pdata[i])->value, setting_keys[k]) == 0) {
          g_free(*fields[k]);
          *fields[k] = g_strdup(((const EmaNode *) root->items->pdata[i])->value);
        }
  }
  if (options) {
    const char *given[] = {options->x, options->by, options->tenant, options->title,
                           options->xlabel};
    settings->tenant_given = options->tenant != NULL;
    for (guint k = 0; k < G_N_ELEMENTS(given); k++)
      if (given[k]) {
        g_free(*fields[k]);
        *fields[k] = g_strdup(given[k]);
      }
  }
  return TRUE;
}

/* ---- sweep figures -------------------------------------------------------------- */

#define SWEEP_Y 4 /* throughput, ttft p99, tpot p99, e2e p99 */

typedef struct {
  double x;
  char *label; /* the x value as text (categories) */
  double sum[SWEEP_Y], sum_squares[SWEEP_Y];
  guint count[SWEEP_Y];
} SweepRow;

typedef struct {
  char *name;
  GArray *rows; /* SweepRow */
} Series;

static void sweep_row_clear(SweepRow *row) {
  g_free(row->label);
}

static void series_free(Series *series) {
  g_free(series->name);
  g_array_unref(series->rows);
  g_free(series);
}

static Series *series_get(GPtrArray *all, const char *name) {
  Series *series;
  for (guint i = 0; i < all->len; i++)
    if (strcmp(((Series *) all->pdata[i])->name, name) == 0)
      return all->pdata[i];
  series = g_new0(Series, 1);
  series->name = g_strdup(name);
  series->rows = g_array_new(FALSE, TRUE, sizeof(SweepRow));
  g_array_set_clear_func(series->rows, (GDestroyNotify) sweep_row_clear);
  g_ptr_array_add(all, series);
  return series;
}

static void series_add(Series *series, double x, const char *label, const double *y) {
  SweepRow *row = NULL;
  for (guint i = 0; i < series->rows->len && row == NULL; i++)
    if (g_array_index(series->rows, SweepRow, i).x == x)
      row = &g_array_index(series->rows, SweepRow, i);
  if (row == NULL) {
    SweepRow fresh = {x, g_strdup(label), {0}, {0}, {0}};
    g_array_append_val(series->rows, fresh);
    row = &g_array_index(series->rows, SweepRow, series->rows->len - 1);
  }
  for (guint k = 0; k < SWEEP_Y; k++)
    if (isfinite(y[k])) {
      row->sum[k] += y[k];
      row->sum_squares[k] += y[k] * y[k];
      row->count[k]++;
    }
}

static gint compare_rows(gconstpointer a, gconstpointer b) {
  double x = ((const SweepRow *) a)->x, y = ((const SweepRow *) b)->x;
  return x < y ? -1 : x > y;
}

/* The half-width of the 95% confidence interval of the mean of N values
 * with sample standard deviation SD (Student's t); 0 for one value. */
static double ci95_half_width(guint n, double sd) {
  static const double t975[] = {12.706, 4.303, 3.182, 2.776, 2.571, 2.447, 2.365, 2.306,
                                2.262,  2.228, 2.201, 2.179, 2.160, 2.145, 2.131, 2.120,
                                2.110,  2.101, 2.093, 2.086, 2.080, 2.074, 2.069, 2.064,
                                2.060,  2.056, 2.052, 2.048, 2.045, 2.042};
  if (n < 2)
    return 0;
  return (n - 1 <= G_N_ELEMENTS(t975) ? t975[n - 2] : 1.960) * sd / sqrt((double) n);
}

/* The mean of Y over a row's repeats and its 95% confidence half-width. */
static void row_mean_ci(const SweepRow *row, guint k, double *mean, double *ci) {
  guint n = row->count[k];
  double variance;
  *mean = n ? row->sum[k] / n : NAN;
  *ci = 0;
  if (n < 2)
    return;
  variance = (row->sum_squares[k] - n * *mean * *mean) / (n - 1);
  *ci = ci95_half_width(n, variance > 0 ? sqrt(variance) : 0);
}

/* The blocks of SERIES as a .dat text: x, the means, the label, the
 * confidence half-widths. */
/* The points of the series ALL whose mean of Y (SweepRow's) is above 0. */
static guint positive_points(GPtrArray *all, guint y) {
  guint n = 0;
  for (guint s = 0; s < all->len; s++) {
    GArray *rows = ((Series *) all->pdata[s])->rows;
    for (guint r = 0; r < rows->len; r++) {
      const SweepRow *row = &g_array_index(rows, SweepRow, r);
      n += row->count[y] > 0 && row->sum[y] > 0;
    }
  }
  return n;
}

static GString *series_data(GPtrArray *all) {
  GString *out = g_string_new("# x, throughput_tok_s, ttft_p99_ms, tpot_p99_ms, e2e_p99_ms "
                              "(means over repeats; ops: GB/s, seconds), label, then the 95% "
                              "confidence half-width of each mean (Student t; 0: one repeat)\n");
  for (guint s = 0; s < all->len; s++) {
    Series *series = all->pdata[s];
    g_string_append_printf(out, "%s# %s\n", s ? "\n\n" : "", series->name);
    g_array_sort(series->rows, compare_rows);
    for (guint i = 0; i < series->rows->len; i++) {
      const SweepRow *row = &g_array_index(series->rows, SweepRow, i);
      /* a data file's string ends at its next '"' (gnuplot reads no escaped one): a quote in a
       * category (a variant's name) would cut its tick label there */
      g_autofree char *plain = g_strdelimit(g_strdup(row->label), "\"", '\'');
      g_autofree char *label = g_strescape(plain, NULL);
      double mean[SWEEP_Y], ci[SWEEP_Y];
      append_number(out, row->x);
      for (guint k = 0; k < SWEEP_Y; k++) {
        row_mean_ci(row, k, &mean[k], &ci[k]);
        g_string_append_c(out, ' ');
        append_number(out, mean[k]);
      }
      g_string_append_printf(out, " \"%s\"", label);
      for (guint k = 0; k < SWEEP_Y; k++) {
        g_string_append_c(out, ' ');
        append_number(out, ci[k]);
      }
      g_string_append_c(out, '\n');
    }
  }
  return out;
}

/* The last key of a swept PATH that is not a list index (the "bytes" of
 * ops.0.flows.0.bytes), for series names. */
static const char *path_leaf(const char *path) {
  const char *leaf = path;
  for (const char *c = path; *c; c++)
    if (*c == '.' && c[1] && !g_ascii_isdigit(c[1]))
      leaf = c + 1;
  return leaf;
}

/* A row with results: ok, or an ops point that missed an expectation. */
static gboolean row_has_results(GPtrArray *row, gint status) {
  const char *text = csv_cell(row, status);
  return strcmp(text, "ok") == 0 || strcmp(text, "missed") == 0;
}

/* The distinct values of COLUMN over the rows with results, in order of
 * appearance. */
static GPtrArray *distinct(const Csv *csv, gint column, gint status) {
  GPtrArray *values = g_ptr_array_new();
  for (guint r = 0; column >= 0 && r < csv->rows->len; r++) {
    GPtrArray *row = csv->rows->pdata[r];
    const char *value = csv_cell(row, column);
    gboolean seen = FALSE;
    if (!row_has_results(row, status))
      continue;
    for (guint i = 0; i < values->len && !seen; i++)
      seen = strcmp(values->pdata[i], value) == 0;
    if (!seen)
      g_ptr_array_add(values, (gpointer) value);
  }
  return values;
}

/* How a swept column's values read on an x axis: as numbers, as durations (in seconds) or as
 * sizes (in GiB), all of them the same way; else as names, one category each. */
typedef enum { X_NAMES, X_NUMBERS, X_DURATIONS, X_SIZES } XKind;

static gboolean parse_x(const char *text, XKind kind, double *value) {
  gint64 ns;
  guint64 bytes;
  if (text == NULL || *text == '\0')
    return FALSE;
  switch (kind) {
  case X_NUMBERS:
    return parse_number(text, value);
  case X_DURATIONS:
    if (!ema_units_parse_duration(text, &ns, NULL))
      return FALSE;
    *value = (double) ns / 1e9;
    return TRUE;
  case X_SIZES:
    if (!ema_units_parse_size(text, &bytes, NULL))
      return FALSE;
    *value = (double) bytes / (double) (G_GUINT64_CONSTANT(1) << 30);
    return TRUE;
  default:
    return FALSE;
  }
}

static XKind x_kind(GPtrArray *values) {
  double v;
  for (XKind kind = X_NUMBERS; kind <= X_SIZES; kind++) {
    guint i = 0;
    while (i < values->len && parse_x(values->pdata[i], kind, &v))
      i++;
    if (values->len > 0 && i == values->len)
      return kind;
  }
  return X_NAMES;
}

/* Sweep metric Y (0..3) of TENANT ("all": summed or worst over the tenants ROW's point has) in
 * ROW. */
static double tenant_metric(const Csv *csv, GPtrArray *row, GPtrArray *tenants, const char *tenant,
                            guint y) {
  static const char *const suffixes[] = {"throughput_tok_s", "ttft_p99_ms", "tpot_p99_ms",
                                         "e2e_p99_ms"};
  gboolean all = strcmp(tenant, "all") == 0;
  double total = y == 0 ? 0 : -INFINITY;
  guint counted = 0;
  for (guint t = 0; t < tenants->len; t++) {
    g_autofree char *throughput = g_strconcat(tenants->pdata[t], ".", suffixes[0], NULL);
    g_autofree char *name = g_strconcat(tenants->pdata[t], ".", suffixes[y], NULL);
    double value;
    if (!all && strcmp(tenant, tenants->pdata[t]) != 0)
      continue;
    /* a tenant of other points only (a variant or a swept value leaves it out of this one): no
     * throughput, which every tenant of a point has */
    if (all && csv_cell(row, csv_column(csv, throughput))[0] == '\0')
      continue;
    if (!parse_number(csv_cell(row, csv_column(csv, name)), &value))
      return NAN;
    total = y == 0 ? total + value : MAX(total, value);
    counted++;
  }
  return counted > 0 && isfinite(total) ? total : NAN;
}

static gboolean plot_sweep(const char *dir, const char *plots, const Settings *settings,
                           GString *driver, GPtrArray *figures, GError **error) {
  g_autofree char *path = g_build_filename(dir, "sweep.csv", NULL);
  Csv csv = {0};
  gint variant, repeat, status, x_column = -1, by_column = -1;
  g_autoptr(GPtrArray) swept = g_ptr_array_new(); /* gint columns as pointers */
  g_autoptr(GPtrArray) tenants = g_ptr_array_new_with_free_func(g_free);
  g_autoptr(GPtrArray) ops = g_ptr_array_new_with_free_func(g_free);
  g_autoptr(GPtrArray) serving = g_ptr_array_new_full(0, (GDestroyNotify) series_free);
  g_autoptr(GPtrArray) op_series = g_ptr_array_new_full(0, (GDestroyNotify) series_free);
  g_autoptr(GPtrArray) categories = NULL;
  g_autoptr(GPtrArray) names = g_ptr_array_new();
  const char *tenant = settings->tenant;
  gboolean categorical = FALSE;
  XKind kind;
  g_autofree char *xtitle = NULL;
  gboolean ok = FALSE;

  if (!csv_read(path, &csv, error))
    return FALSE;
  variant = csv_column(&csv, "variant");
  repeat = csv_column(&csv, "repeat");
  status = csv_column(&csv, "status");
  if (variant != 1 || repeat < variant || status < 0) {
    g_set_error(error, G_FILE_ERROR, G_FILE_ERROR_INVAL,
                "%s: not a sweep.csv of ema-sim sweep (point, variant, ..., repeat, seed, "
                "status, ...)",
                path);
    goto out;
  }
  for (gint c = variant + 1; c < repeat; c++)
    g_ptr_array_add(swept, GINT_TO_POINTER(c));
  for (guint c = (guint) status + 1; c < csv.header->len; c++) {
    const char *name = csv.header->pdata[c];
    if (g_str_has_suffix(name, ".throughput_tok_s"))
      g_ptr_array_add(tenants, g_strndup(name, strlen(name) - strlen(".throughput_tok_s")));
    else if (g_str_has_suffix(name, ".bandwidth_gbps"))
      g_ptr_array_add(ops, g_strndup(name, strlen(name) - strlen(".bandwidth_gbps")));
  }

  /* x: given, or the first swept column of numbers with two values or more */
  if (settings->x) {
    x_column = csv_column(&csv, settings->x);
    if (x_column < 0) {
      g_set_error(error, G_FILE_ERROR, G_FILE_ERROR_INVAL, "%s has no column '%s' for x", path,
                  settings->x);
      goto out;
    }
  }
  for (guint i = 0; x_column < 0 && i < swept->len; i++) {
    g_autoptr(GPtrArray) values = distinct(&csv, GPOINTER_TO_INT(swept->pdata[i]), status);
    if (values->len >= 2 && x_kind(values) != X_NAMES)
      x_column = GPOINTER_TO_INT(swept->pdata[i]);
  }
  if (x_column < 0) /* categories: the first swept column, or the variants */
    x_column = swept->len ? GPOINTER_TO_INT(swept->pdata[0]) : variant;
  categories = distinct(&csv, x_column, status);
  kind = x_kind(categories);
  categorical = kind == X_NAMES;
  /* lines: given, or the variants, or a swept policy */
  if (settings->by && strcmp(settings->by, "none") != 0) {
    by_column = csv_column(&csv, settings->by);
    if (by_column < 0) {
      g_set_error(error, G_FILE_ERROR, G_FILE_ERROR_INVAL, "%s has no column '%s' for the lines",
                  path, settings->by);
      goto out;
    }
  } else if (settings->by == NULL) {
    g_autoptr(GPtrArray) variants = distinct(&csv, variant, status);
    if (variant != x_column && variants->len >= 2)
      by_column = variant;
    for (guint i = 0; by_column < 0 && i < swept->len; i++) {
      gint c = GPOINTER_TO_INT(swept->pdata[i]);
      g_autoptr(GPtrArray) values = distinct(&csv, c, status);
      if (c != x_column && strstr(csv.header->pdata[c], "policy") && values->len >= 2)
        by_column = c;
    }
  }
  if (tenant == NULL)
    tenant = tenants->len == 1 ? tenants->pdata[0] : "all";
  /* (an ops sweep has none: a tenant named there would pick nothing, silently) */
  if (strcmp(tenant, "all") != 0 &&
      !g_ptr_array_find_with_equal_func(tenants, tenant, g_str_equal, NULL)) {
    g_autofree char *known = NULL;
    g_ptr_array_add(tenants, NULL);
    known = tenants->len > 1 ? g_strjoinv(", ", (char **) tenants->pdata)
                             : g_strdup("none, its points run ops");
    g_set_error(error, G_FILE_ERROR, G_FILE_ERROR_INVAL,
                "%s has no tenant '%s' (tenants: %s; or all)", path, tenant, known);
    goto out;
  }

  for (guint r = 0; r < csv.rows->len; r++) {
    GPtrArray *row = csv.rows->pdata[r];
    g_autoptr(GString) line = g_string_new(NULL);
    const char *x_text = csv_cell(row, x_column);
    double x = 0, y[SWEEP_Y];
    if (!row_has_results(row, status))
      continue;
    if (categorical) {
      for (guint i = 0; i < categories->len; i++)
        if (strcmp(categories->pdata[i], x_text) == 0)
          x = i;
    } else
      parse_x(x_text, kind, &x);
    /* the line: BY's value, then every other swept column that varies */
    if (by_column >= 0)
      g_string_append(line, csv_cell(row, by_column));
    for (gint c = variant; c < repeat; c++) {
      g_autoptr(GPtrArray) values = NULL;
      if (c == x_column || c == by_column)
        continue;
      values = distinct(&csv, c, status);
      if (values->len >= 2)
        g_string_append_printf(line, "%s%s=%s", line->len ? ", " : "",
                               c == variant ? "variant" : path_leaf(csv.header->pdata[c]),
                               csv_cell(row, c));
    }
    if (line->len == 0)
      g_string_append(line, strcmp(tenant, "all") == 0 ? "all tenants" : tenant);
    if (tenants->len) {
      for (guint k = 0; k < SWEEP_Y; k++)
        y[k] = tenant_metric(&csv, row, tenants, tenant, k);
      series_add(series_get(serving, line->str), x, x_text, y);
    }
    for (guint o = 0; o < ops->len; o++) {
      g_autofree char *gbps = g_strconcat(ops->pdata[o], ".bandwidth_gbps", NULL);
      g_autofree char *seconds = g_strconcat(ops->pdata[o], ".seconds", NULL);
      g_autofree char *name = line->len && (by_column >= 0 || strcmp(line->str, "all tenants"))
                                  ? g_strdup_printf("%s (%s)", (char *) ops->pdata[o], line->str)
                                  : g_strdup(ops->pdata[o]);
      double values[SWEEP_Y] = {NAN, NAN, NAN, NAN};
      parse_number(csv_cell(row, csv_column(&csv, gbps)), &values[0]);
      parse_number(csv_cell(row, csv_column(&csv, seconds)), &values[1]);
      series_add(series_get(op_series, name), x, x_text, values);
    }
  }

  {
    /* the repeats per point, for the bars' legend */
    guint nrepeats = 1;
    for (guint r = 0; r < csv.rows->len; r++) {
      double value;
      if (parse_number(csv_cell(csv.rows->pdata[r], repeat), &value) && value + 1 > nrepeats)
        nrepeats = (guint) value + 1;
    }
    g_string_append_printf(driver, "nrepeats = %u\n", nrepeats);
  }
  gp_set(driver, "figtitle", settings->title ? settings->title : "sweep");
  xtitle = settings->xlabel      ? g_strdup(settings->xlabel)
           : kind == X_DURATIONS ? g_strdup_printf("%s (s)", (char *) csv.header->pdata[x_column])
           : kind == X_SIZES     ? g_strdup_printf("%s (GiB)", (char *) csv.header->pdata[x_column])
                                 : g_strdup(csv.header->pdata[x_column]);
  gp_set(driver, "xtitle", xtitle);
  g_string_append_printf(driver, "categorical = %d\n", categorical);
  if (serving->len) {
    g_autoptr(GString) data = series_data(serving);
    g_autofree char *who = strcmp(tenant, "all") == 0
                               ? g_strdup("all tenants (throughput summed, latency the worst)")
                               : g_strdup(tenant);
    if (!write_data(plots, "sweep.dat", data, error))
      goto out;
    g_ptr_array_set_size(names, 0);
    for (guint s = 0; s < serving->len; s++)
      g_ptr_array_add(names, ((Series *) serving->pdata[s])->name);
    gp_series(driver, names);
    g_string_append_printf(driver, "ttft_points = %u\n", positive_points(serving, 1));
    gp_set(driver, "who", who);
    gp_set(driver, "data", "sweep.dat");
    /* a tenant picked by --tenant gets its own files: one per tenant, none overwritten */
    g_autofree char *safe = settings->tenant_given ? ema_output_safe_name(settings->tenant) : NULL;
    g_autofree char *throughput = g_strconcat("sweep-throughput", safe ? "-" : "", safe, NULL);
    g_autofree char *latency = g_strconcat("sweep-latency", safe ? "-" : "", safe, NULL);
    if (!add_figure(plots, driver, figures, throughput, "sweep-throughput.gp", 900, 560, error) ||
        !add_figure(plots, driver, figures, latency, "sweep-latency.gp", 1200, 520, error))
      goto out;
  }
  if (op_series->len) {
    g_autoptr(GString) data = series_data(op_series);
    if (!write_data(plots, "sweep-ops.dat", data, error))
      goto out;
    g_ptr_array_set_size(names, 0);
    for (guint s = 0; s < op_series->len; s++)
      g_ptr_array_add(names, ((Series *) op_series->pdata[s])->name);
    gp_series(driver, names);
    gp_set(driver, "data", "sweep-ops.dat");
    if (!add_figure(plots, driver, figures, "sweep-ops", "sweep-ops.gp", 900, 560, error))
      goto out;
  }
  if (serving->len == 0 && op_series->len == 0) {
    g_set_error(error, G_FILE_ERROR, G_FILE_ERROR_INVAL, "%s: no point ended ok: nothing to plot",
                path);
    goto out;
  }
  ok = TRUE;
out:
  csv_clear(&csv);
  return ok;
}

/* ---- run figures --------------------------------------------------------------- */

static gint compare_doubles(gconstpointer a, gconstpointer b) {
  double x = *(const double *) a, y = *(const double *) b;
  return x < y ? -1 : x > y;
}

/* Each tenant's sorted VALUES as CDF points, at most MAX_CDF_POINTS each. */
static GString *cdf_data(GPtrArray *tenants, GPtrArray *values, const char *what) {
  GString *out = g_string_new(NULL);
  g_string_append_printf(out, "# %s (ms), fraction of requests at or below; one block per tenant\n",
                         what);
  for (guint t = 0; t < tenants->len; t++) {
    GArray *v = values->pdata[t];
    guint n = v->len;
    g_string_append_printf(out, "%s# %s\n", t ? "\n\n" : "", (char *) tenants->pdata[t]);
    g_array_sort(v, compare_doubles);
    if (n == 0)
      g_string_append(out, "NaN NaN\n");
    for (guint k = 0; n && k < MIN(n, MAX_CDF_POINTS); k++) {
      /* evenly spaced ranks, the first and the last included */
      guint i = n <= MAX_CDF_POINTS ? k : (guint) ((double) k * (n - 1) / (MAX_CDF_POINTS - 1));
      append_number(out, g_array_index(v, double, i));
      g_string_append_c(out, ' ');
      append_number(out, (double) (i + 1) / n);
      g_string_append_c(out, '\n');
    }
  }
  return out;
}

/* Whether TENANT is drawn: ONLY (NAME or NAME,NAME,...) names it, or ONLY
 * is NULL (every tenant). */
static gboolean tenant_drawn(const char *only, const char *tenant) {
  g_auto(GStrv) names = NULL;
  if (only == NULL)
    return TRUE;
  names = g_strsplit(only, ",", -1);
  return g_strv_contains((const char *const *) names, tenant);
}

/* Every tenant ONLY names (NAME,NAME,...) is one of the run's (ORDER); else an error naming
 * the first that is not, and the run's tenants. */
static gboolean tenants_known(const char *dir, const char *only, GPtrArray *order, GError **error) {
  g_auto(GStrv) names = g_strsplit(only, ",", -1);
  for (guint i = 0; names[i]; i++) {
    g_autoptr(GString) known = g_string_new(NULL);
    gboolean found = FALSE;
    for (guint j = 0; j < order->len; j++) {
      found = found || strcmp(order->pdata[j], names[i]) == 0;
      g_string_append_printf(known, "%s%s", j ? ", " : "", (const char *) order->pdata[j]);
    }
    if (!found) {
      g_set_error(error, G_FILE_ERROR, G_FILE_ERROR_INVAL,
                  "--tenant: %s has no tenant '%s' (its tenants: %s)", dir, names[i], known->str);
      return FALSE;
    }
  }
  return TRUE;
}

/* ORDER: the tenants in the experiment's order (summary.json); others after.
 * ONLY: the tenants drawn (tenant_drawn). */
static gboolean plot_requests(const char *dir, const char *plots, const char *title,
                              GPtrArray *order, const char *only, GString *driver,
                              GPtrArray *figures, GError **error) {
  g_autofree char *path = g_build_filename(dir, "requests.csv", NULL);
  g_autoptr(GPtrArray) tenants = g_ptr_array_new_with_free_func(g_free);
  g_autoptr(GPtrArray) ttft = g_ptr_array_new_with_free_func((GDestroyNotify) g_array_unref);
  g_autoptr(GPtrArray) tpot = g_ptr_array_new_with_free_func((GDestroyNotify) g_array_unref);
  g_autoptr(GString) ttft_data = NULL, tpot_data = NULL;
  Csv csv = {0};
  gint tenant_col, ttft_col, tpot_col;
  guint n = 0, n_tpot = 0;
  if (!csv_read(path, &csv, error))
    return FALSE;
  for (guint t = 0; t < order->len; t++) {
    if (!tenant_drawn(only, order->pdata[t]))
      continue;
    g_ptr_array_add(tenants, g_strdup(order->pdata[t]));
    g_ptr_array_add(ttft, g_array_new(FALSE, FALSE, sizeof(double)));
    g_ptr_array_add(tpot, g_array_new(FALSE, FALSE, sizeof(double)));
  }
  tenant_col = csv_column(&csv, "tenant");
  ttft_col = csv_column(&csv, "ttft_ms");
  tpot_col = csv_column(&csv, "tpot_ms");
  for (guint r = 0; tenant_col >= 0 && r < csv.rows->len; r++) {
    GPtrArray *row = csv.rows->pdata[r];
    const char *tenant = csv_cell(row, tenant_col);
    guint t;
    double value;
    if (!tenant_drawn(only, tenant))
      continue;
    for (t = 0; t < tenants->len; t++)
      if (strcmp(tenants->pdata[t], tenant) == 0)
        break;
    if (t == tenants->len) {
      g_ptr_array_add(tenants, g_strdup(tenant));
      g_ptr_array_add(ttft, g_array_new(FALSE, FALSE, sizeof(double)));
      g_ptr_array_add(tpot, g_array_new(FALSE, FALSE, sizeof(double)));
    }
    if (parse_number(csv_cell(row, ttft_col), &value) && value > 0) {
      g_array_append_val(ttft->pdata[t], value);
      n++;
    }
    if (parse_number(csv_cell(row, tpot_col), &value) && value > 0)
      g_array_append_val(tpot->pdata[t], value);
  }
  csv_clear(&csv);
  if (n == 0)
    return TRUE; /* no finished request: no CDF */
  ttft_data = cdf_data(tenants, ttft, "TTFT");
  tpot_data = cdf_data(tenants, tpot, "TPOT");
  if (!write_data(plots, "ttft-cdf.dat", ttft_data, error) ||
      !write_data(plots, "tpot-cdf.dat", tpot_data, error))
    return FALSE;
  gp_set(driver, "figtitle", title);
  gp_series(driver, tenants);
  for (guint t = 0; t < tpot->len; t++)
    n_tpot += ((GArray *) tpot->pdata[t])->len;
  g_string_append_printf(driver, "ntpot = %u\n", n_tpot);
  return add_figure(plots, driver, figures, "latency-cdf", "latency-cdf.gp", 1200, 520, error);
}

/* ROOT's list KEY of objects (summary.json at PATH) into *LIST: NULL without one; FALSE with an
 * error where it is not a list of objects. */
static gboolean summary_objects(JsonObject *root, const char *key, const char *path,
                                JsonArray **list, GError **error) {
  JsonNode *node = json_object_get_member(root, key);
  *list = NULL;
  if (node == NULL)
    return TRUE;
  if (!JSON_NODE_HOLDS_ARRAY(node)) {
    g_set_error(error, G_FILE_ERROR, G_FILE_ERROR_INVAL, "%s: %s: not a list", path, key);
    return FALSE;
  }
  for (guint i = 0; i < json_array_get_length(json_node_get_array(node)); i++)
    if (!JSON_NODE_HOLDS_OBJECT(json_array_get_element(json_node_get_array(node), i))) {
      g_set_error(error, G_FILE_ERROR, G_FILE_ERROR_INVAL, "%s: %s.%u: not an object", path, key,
                  i);
      return FALSE;
    }
  *list = json_node_get_array(node);
  return TRUE;
}

/* What a run's summary.json says of its tenants and GPUs (read_kv_sizes). */
typedef struct {
  GHashTable *block_bytes, *region_bytes; /* tenant -> double *: one KV block, its KV region */
  GPtrArray *order;                       /* the tenants in the experiment's order */
  GArray *idle_region; /* double per GPU: the bytes it may lend where it has no tenant, else NAN */
  char *name;          /* the experiment's */
} RunSizes;

static void run_sizes_clear(RunSizes *sizes) {
  g_clear_pointer(&sizes->block_bytes, g_hash_table_unref);
  g_clear_pointer(&sizes->region_bytes, g_hash_table_unref);
  g_clear_pointer(&sizes->order, g_ptr_array_unref);
  g_clear_pointer(&sizes->idle_region, g_array_unref);
  g_clear_pointer(&sizes->name, g_free);
}
G_DEFINE_AUTO_CLEANUP_CLEAR_FUNC(RunSizes, run_sizes_clear)

/* Per-GPU bytes of one KV block, its own KV region, and the tenants in
 * order, from DIR's summary.json into SIZES (cleared first); its idle_region[g] the bytes GPU
 * g may lend where it has no tenant (idle_gpus), NAN elsewhere. */
static gboolean read_kv_sizes(const char *dir, RunSizes *sizes, GError **error) {
  g_autofree char *path = g_build_filename(dir, "summary.json", NULL);
  g_autoptr(JsonParser) parser = json_parser_new();
  JsonObject *root;
  JsonArray *tenants, *idle;
  GHashTable *block_bytes, *region_bytes;
  GArray *idle_region;
  const char *name;
  run_sizes_clear(sizes);
  block_bytes = sizes->block_bytes = g_hash_table_new_full(g_str_hash, g_str_equal, g_free, g_free);
  region_bytes = sizes->region_bytes =
      g_hash_table_new_full(g_str_hash, g_str_equal, g_free, g_free);
  sizes->order = g_ptr_array_new_with_free_func(g_free);
  idle_region = sizes->idle_region = g_array_new(FALSE, FALSE, sizeof(double));
  root = ema_json_load_object(parser, path, error);
  if (root == NULL)
    return FALSE;
  if (!ema_json_member_string(root, "experiment", "run", path, NULL, &name, error))
    return FALSE;
  sizes->name = g_strdup(name);
  if (!summary_objects(root, "tenants", path, &tenants, error) ||
      !summary_objects(root, "idle_gpus", path, &idle, error))
    return FALSE;
  for (guint i = 0; idle && i < json_array_get_length(idle); i++) {
    JsonObject *gpu = json_array_get_object_element(idle, i);
    g_autofree char *where = g_strdup_printf("idle_gpus.%u", i);
    double g, lendable;
    if (!ema_json_member_number(gpu, "gpu", -1, -1, MAX_GPUS - 1, path, where, &g, error) ||
        !ema_json_member_number(gpu, "lendable_bytes", 0, 0, 1e18, path, where, &lendable, error))
      return FALSE;
    if (g < 0)
      continue;
    while (idle_region->len <= (guint) g) {
      double none = NAN;
      g_array_append_val(idle_region, none);
    }
    g_array_index(idle_region, double, (guint) g) = lendable;
  }
  for (guint i = 0; tenants && i < json_array_get_length(tenants); i++) {
    JsonObject *tenant = json_array_get_object_element(tenants, i);
    g_autofree char *where = g_strdup_printf("tenants.%u", i);
    const char *tenant_name;
    double blocks, bytes, *block, *region;
    if (!ema_json_member_string(tenant, "name", "", path, where, &tenant_name, error) ||
        !ema_json_member_number(tenant, "kv_blocks", 0, 0, 1e15, path, where, &blocks, error) ||
        !ema_json_member_number(tenant, "kv_bytes_per_gpu", 0, 0, 1e18, path, where, &bytes, error))
      return FALSE;
    block = g_new(double, 1);
    region = g_new(double, 1);
    *block = blocks > 0 ? bytes / blocks : 0;
    *region = bytes;
    g_ptr_array_add(sizes->order, g_strdup(tenant_name));
    g_hash_table_insert(block_bytes, g_strdup(tenant_name), block);
    g_hash_table_insert(region_bytes, g_strdup(tenant_name), region);
  }
  return TRUE;
}

typedef struct {
  gint64 gpu;
  char *label;
  GString *data;
  guint rows;
  double last_lent;
  gboolean reclaim_pending; /* a reclaim in samples skipped by the stride */
  gboolean idle, lent;      /* a GPU without a tenant; one that lent at some sample */
} GpuSeries;

static void gpu_series_free(GpuSeries *series) {
  g_free(series->label);
  g_string_free(series->data, TRUE);
  g_free(series);
}

static gint compare_gpus(gconstpointer a, gconstpointer b) {
  const GpuSeries *x = *(GpuSeries *const *) a, *y = *(GpuSeries *const *) b;
  return x->gpu < y->gpu ? -1 : x->gpu > y->gpu;
}

/* The memory and remote figures of timeline.csv: a panel per GPU, each tenant's GPUs (those ONLY
 * names) and every GPU without a tenant (an empty tenant field) that lent at some sample, unless
 * ONLY names tenants: one that never lent has nothing to draw. IDLE_REGION: read_kv_sizes'. */
static gboolean plot_timeline(const char *dir, const char *plots, const char *title,
                              GHashTable *block_bytes, GHashTable *region_bytes,
                              const GArray *idle_region, const char *only, GString *driver,
                              GPtrArray *figures, GError **error) {
  static const char *const needed[] = {
      "time_s",       "gpu",         "tenant",          "kv_blocks_used",   "running",
      "last_step_ms", "slices_lent", "slices_borrowed", "kv_blocks_remote", "slices_staging"};
  g_autofree char *path = g_build_filename(dir, "timeline.csv", NULL);
  g_autoptr(GPtrArray) gpus = g_ptr_array_new_with_free_func((GDestroyNotify) gpu_series_free);
  g_autoptr(GPtrArray) names = g_ptr_array_new();
  g_autoptr(GString) with_tenant = g_string_new(NULL); /* "1 3": the series of GPUs with one */
  g_autoptr(GString) data = g_string_new(
      "# time_s, local KV, staging, lent, borrowed, own KV region (GiB), reclaim (1: lent "
      "fell), remote KV (GiB), remote read rate (GB/s: remote KV / step time)\n");
  gint col[G_N_ELEMENTS(needed)];
  Csv csv = {0};
  guint samples = 0, stride = 1;
  gboolean ok = FALSE;
  if (!csv_read(path, &csv, error))
    return FALSE;
  if (!csv_columns(&csv, path, needed, G_N_ELEMENTS(needed), col, error))
    goto out;
  /* one series per GPU, in GPU order */
  for (guint r = 0; r < csv.rows->len; r++) {
    GPtrArray *row = csv.rows->pdata[r];
    const char *tenant = csv_cell(row, col[2]);
    gboolean idle = tenant[0] == '\0'; /* a tenant's name is never empty */
    double gpu, lent = 0;
    GpuSeries *series = NULL;
    if (!parse_number(csv_cell(row, col[1]), &gpu) ||
        (idle ? only != NULL : !tenant_drawn(only, tenant)))
      continue;
    for (guint g = 0; g < gpus->len && series == NULL; g++)
      if (((GpuSeries *) gpus->pdata[g])->gpu == (gint64) gpu)
        series = gpus->pdata[g];
    if (series == NULL) {
      series = g_new0(GpuSeries, 1);
      series->gpu = (gint64) gpu;
      series->idle = idle;
      series->label =
          g_strdup_printf("gpu%" G_GINT64_FORMAT " (%s)", series->gpu, idle ? "no tenant" : tenant);
      series->data = g_string_new(NULL);
      series->last_lent = NAN;
      g_ptr_array_add(gpus, series);
    }
    series->lent = series->lent || (parse_number(csv_cell(row, col[6]), &lent) && lent > 0);
    series->rows++;
  }
  for (guint g = gpus->len; g-- > 0;) {
    GpuSeries *series = gpus->pdata[g];
    if (series->idle && !series->lent)
      g_ptr_array_remove_index(gpus, g);
    else
      samples = MAX(samples, series->rows);
  }
  if (gpus->len == 0) {
    ok = TRUE; /* no samples: no figure */
    goto out;
  }
  g_ptr_array_sort(gpus, compare_gpus);
  stride =
      samples > MAX_TIMELINE_POINTS ? (samples + MAX_TIMELINE_POINTS - 1) / MAX_TIMELINE_POINTS : 1;
  for (guint g = 0; g < gpus->len; g++)
    ((GpuSeries *) gpus->pdata[g])->rows = 0;
  for (guint r = 0; r < csv.rows->len; r++) {
    GPtrArray *row = csv.rows->pdata[r];
    double v[G_N_ELEMENTS(needed)] = {0};
    const double *block, *region;
    double region_gib;
    GpuSeries *series = NULL;
    double local, staging, lent, borrowed, remote, rate;
    gboolean reclaim;
    for (guint i = 0; i < G_N_ELEMENTS(needed); i++)
      if (i != 2)
        parse_number(csv_cell(row, col[i]), &v[i]);
    for (guint g = 0; g < gpus->len && series == NULL; g++)
      if (((GpuSeries *) gpus->pdata[g])->gpu == (gint64) v[1])
        series = gpus->pdata[g];
    if (series == NULL)
      continue;
    block = g_hash_table_lookup(block_bytes, csv_cell(row, col[2]));
    region = g_hash_table_lookup(region_bytes, csv_cell(row, col[2]));
    /* a GPU without a tenant: the room it may lend */
    region_gib = region ? *region / GIB
                 : series->idle && series->gpu < (gint64) idle_region->len
                     ? g_array_index(idle_region, double, series->gpu) / GIB
                     : NAN;
    lent = v[6] * EMA_SLICE_BYTES / GIB;
    reclaim = isfinite(series->last_lent) && lent < series->last_lent;
    series->last_lent = lent;
    if (series->rows++ % stride != 0) {
      series->reclaim_pending = series->reclaim_pending || reclaim;
      continue;
    }
    reclaim = reclaim || series->reclaim_pending;
    series->reclaim_pending = FALSE;
    remote = block ? v[8] * *block : 0;
    local = block ? (v[3] - v[8]) * *block / GIB : 0;
    staging = v[9] * EMA_SLICE_BYTES / GIB;
    borrowed = v[7] * EMA_SLICE_BYTES / GIB;
    rate = v[4] > 0 && v[5] > 0 ? remote / (v[5] / 1e3) / 1e9 : 0;
    g_string_append_printf(series->data, "%s", csv_cell(row, col[0]));
    for (guint k = 0; k < 5; k++) {
      double values[] = {local, staging, lent, borrowed, region_gib};
      g_string_append_c(series->data, ' ');
      append_number(series->data, values[k]);
    }
    g_string_append_printf(series->data, " %d ", reclaim);
    append_number(series->data, remote / GIB);
    g_string_append_c(series->data, ' ');
    append_number(series->data, rate);
    g_string_append_c(series->data, '\n');
  }
  for (guint g = 0; g < gpus->len && g < MAX_GPU_PANELS; g++) {
    GpuSeries *series = gpus->pdata[g];
    g_string_append_printf(data, "%s# %s\n%s", g ? "\n\n" : "", series->label, series->data->str);
    g_ptr_array_add(names, series->label);
    /* the remote figure's: a GPU without a tenant holds no remote KV and reads none */
    if (!series->idle)
      g_string_append_printf(with_tenant, "%s%u", with_tenant->len ? " " : "", g + 1);
  }
  if (!write_data(plots, "memory.dat", data, error))
    goto out;
  if (gpus->len > MAX_GPU_PANELS) {
    g_autofree char *shown =
        g_strdup_printf("%s (the first %u of %u GPUs)", title, MAX_GPU_PANELS, gpus->len);
    gp_set(driver, "figtitle", shown);
  } else
    gp_set(driver, "figtitle", title);
  gp_series(driver, names);
  gp_set(driver, "tenant_series", with_tenant->str);
  gp_set(driver, "data", "memory.dat");
  ok = add_figure(plots, driver, figures, "memory", "memory.gp", 1100,
                  120 + 230 * ((names->len + 1) / (names->len > 1 ? 2 : 1)), error) &&
       add_figure(plots, driver, figures, "remote", "remote.gp", 1000, 640, error);
out:
  csv_clear(&csv);
  return ok;
}

/* ---- running gnuplot ---------------------------------------------------------- */

/* ---- the transparency frontier (frontier.csv of ema-sim frontier) ------------------ */

typedef struct {
  double tokens, prefetch, direct;
} FrontierRow;

static gint compare_frontier_rows(gconstpointer a, gconstpointer b) {
  double x = ((const FrontierRow *) a)->tokens, y = ((const FrontierRow *) b)->tokens;
  return x < y ? -1 : x > y;
}

/* ROWS, sorted by tokens, as one data block; ROWS is emptied. */
static void frontier_block(GString *data, GArray *rows) {
  g_array_sort(rows, compare_frontier_rows);
  for (guint i = 0; i < rows->len; i++) {
    const FrontierRow *row = &g_array_index(rows, FrontierRow, i);
    append_number(data, row->tokens);
    g_string_append_c(data, ' ');
    append_number(data, row->prefetch);
    g_string_append_c(data, ' ');
    append_number(data, row->direct);
    g_string_append_c(data, '\n');
  }
  g_array_set_size(rows, 0);
}

static gboolean plot_frontier(const char *dir, const char *plots, const char *title,
                              GString *driver, GPtrArray *figures, GError **error) {
  static const char *const needed[] = {"server", "batch", "context", "prefetch_share",
                                       "direct_share"};
  g_autofree char *path = g_build_filename(dir, "frontier.csv", NULL);
  g_autoptr(GPtrArray) servers = g_ptr_array_new_with_free_func(g_free);
  g_autoptr(GString) data = g_string_new(
      "# per server: KV tokens a step reads (batch x context), prefetch and direct remote share "
      "(%), sorted by tokens\n");
  g_autoptr(GArray) block = g_array_new(FALSE, FALSE, sizeof(FrontierRow));
  gint col[G_N_ELEMENTS(needed)];
  Csv csv = {0};
  gboolean ok = FALSE;
  if (!csv_read(path, &csv, error))
    return FALSE;
  if (!csv_columns(&csv, path, needed, G_N_ELEMENTS(needed), col, error))
    goto out;
  for (guint r = 0; r < csv.rows->len; r++) {
    GPtrArray *row = csv.rows->pdata[r];
    const char *server = csv_cell(row, col[0]);
    double v[4];
    for (guint k = 0; k < 4; k++)
      if (!parse_number(csv_cell(row, col[k + 1]), &v[k])) {
        g_set_error(error, G_FILE_ERROR, G_FILE_ERROR_INVAL, "%s: row %u: not a number", path,
                    r + 2);
        goto out;
      }
    if (servers->len == 0 || strcmp(servers->pdata[servers->len - 1], server) != 0) {
      frontier_block(data, block);
      g_string_append_printf(data, "%s# %s\n", servers->len ? "\n\n" : "", server);
      g_ptr_array_add(servers, g_strdup(server));
    }
    {
      FrontierRow point = {v[0] * v[1], 100 * v[2], 100 * v[3]};
      g_array_append_val(block, point);
    }
  }
  frontier_block(data, block);
  if (servers->len == 0) {
    ok = TRUE;
    goto out;
  }
  if (!write_data(plots, "frontier.dat", data, error))
    goto out;
  gp_set(driver, "figtitle", title);
  gp_series(driver, servers);
  ok = add_figure(plots, driver, figures, "frontier", "frontier.gp", 1000, 560, error);
out:
  csv_clear(&csv);
  return ok;
}

/* ---- comparison figure (compare.csv of `ema-sim run` with compare:) ---------------- */

/* The borrower's output tokens/s and borrowed GiB over time in one
 * variant's timeline.csv, as one data block (tokens/s per sample: *BIN the
 * sample period, s; *POINTS += its points: none in a run shorter than its
 * sample period); FALSE on a read error. */
static gboolean compare_timeline(const char *dir, const char *borrower, GString *out, double *bin,
                                 guint *points, GError **error) {
  g_autofree char *path = g_build_filename(dir, "timeline.csv", NULL);
  Csv csv = {0};
  gint time_col, tenant_col, tokens_col, borrowed_col;
  double previous = NAN;
  gboolean ok = FALSE;
  guint rows = 0;
  if (!csv_read(path, &csv, error))
    return FALSE;
  time_col = csv_column(&csv, "time_s");
  tenant_col = csv_column(&csv, "tenant");
  tokens_col = csv_column(&csv, "tokens");
  borrowed_col = csv_column(&csv, "slices_borrowed");
  if (time_col < 0 || tenant_col < 0 || tokens_col < 0 || borrowed_col < 0) {
    g_set_error(error, G_FILE_ERROR, G_FILE_ERROR_INVAL,
                "%s lacks time_s, tenant, tokens or slices_borrowed", path);
    goto out;
  }
  for (guint r = 0; r < csv.rows->len; r++) {
    GPtrArray *row = csv.rows->pdata[r];
    double t, tokens, borrowed;
    if (strcmp(csv_cell(row, tenant_col), borrower) != 0 ||
        !parse_number(csv_cell(row, time_col), &t) ||
        !parse_number(csv_cell(row, tokens_col), &tokens) ||
        !parse_number(csv_cell(row, borrowed_col), &borrowed))
      continue;
    if (isfinite(previous) && t > previous) {
      *bin = t - previous;
      append_number(out, t);
      g_string_append_c(out, ' ');
      append_number(out, tokens / (t - previous));
      g_string_append_c(out, ' ');
      append_number(out, borrowed * (double) EMA_SLICE_BYTES / GIB);
      g_string_append_c(out, '\n');
      rows++;
    }
    previous = t;
  }
  if (rows == 0)
    g_string_append(out, "NaN NaN NaN\n");
  *points += rows;
  ok = TRUE;
out:
  csv_clear(&csv);
  return ok;
}

/* The TTFTs of one variant's requests.csv: the borrower's into MINE, every
 * other tenant's into LENDERS. */
static gboolean compare_ttfts(const char *dir, const char *borrower, GArray *mine, GArray *lenders,
                              GError **error) {
  g_autofree char *path = g_build_filename(dir, "requests.csv", NULL);
  Csv csv = {0};
  gint tenant_col, ttft_col;
  if (!g_file_test(path, G_FILE_TEST_IS_REGULAR))
    return TRUE; /* requests_csv: false */
  if (!csv_read(path, &csv, error))
    return FALSE;
  tenant_col = csv_column(&csv, "tenant");
  ttft_col = csv_column(&csv, "ttft_ms");
  for (guint r = 0; tenant_col >= 0 && ttft_col >= 0 && r < csv.rows->len; r++) {
    GPtrArray *row = csv.rows->pdata[r];
    double value;
    if (parse_number(csv_cell(row, ttft_col), &value) && value > 0)
      g_array_append_val(strcmp(csv_cell(row, tenant_col), borrower) == 0 ? mine : lenders, value);
  }
  csv_clear(&csv);
  return TRUE;
}

char **ema_plot_compare_variant_dirs(const char *dir) {
  g_autofree char *path = g_build_filename(dir, "compare.csv", NULL);
  GPtrArray *dirs = g_ptr_array_new();
  Csv csv = {0};
  gint dir_col;
  if (csv_read(path, &csv, NULL) && (dir_col = csv_column(&csv, "dir")) >= 0)
    for (guint r = 0; r < csv.rows->len; r++) {
      const char *name = csv_cell(csv.rows->pdata[r], dir_col);
      /* a variant's own folder, as ema_compare_run names it (nothing outside DIR) */
      if (*name && !strchr(name, '/') && strcmp(name, "..") != 0 && strcmp(name, ".") != 0)
        g_ptr_array_add(dirs, g_strdup(name));
    }
  csv_clear(&csv);
  g_ptr_array_add(dirs, NULL);
  return (char **) g_ptr_array_free(dirs, FALSE);
}

char *ema_plot_variant_title(const char *dir, const char *variant) {
  g_autofree char *summary = g_build_filename(dir, variant, "summary.json", NULL);
  g_autoptr(JsonParser) parser = json_parser_new();
  JsonObject *root = ema_json_load_object(parser, summary, NULL);
  const char *name = "run"; /* (kept where the member is bad: its reader says so, not a title) */
  if (root)
    (void) ema_json_member_string(root, "experiment", "run", summary, NULL, &name, NULL);
  return g_strdup_printf("%s: %s", name, variant);
}

/* "NAME: A, B" for a comparison in DIR: the experiment's name (its first
 * variant's summary.json) and the variants of compare.csv; "comparison"
 * where they cannot be read. */
static char *compare_title(const char *dir) {
  g_autofree char *path = g_build_filename(dir, "compare.csv", NULL);
  g_autoptr(GPtrArray) variants = g_ptr_array_new();
  g_autoptr(JsonParser) parser = json_parser_new();
  g_autofree char *summary = NULL;
  g_autofree char *names = NULL;
  char *title = NULL;
  Csv csv = {0};
  gint variant_col, dir_col, repeat_col;
  if (!csv_read(path, &csv, NULL))
    return g_strdup("comparison");
  variant_col = csv_column(&csv, "variant");
  dir_col = csv_column(&csv, "dir");
  repeat_col = csv_column(&csv, "repeat");
  for (guint r = 0; variant_col >= 0 && dir_col >= 0 && r < csv.rows->len; r++)
    if (repeat_col < 0 || strcmp(csv_cell(csv.rows->pdata[r], repeat_col), "0") == 0)
      g_ptr_array_add(variants, (gpointer) csv_cell(csv.rows->pdata[r], variant_col));
  if (variants->len > 0) {
    const char *first = csv_cell(csv.rows->pdata[0], dir_col);
    summary = strchr(first, '/') ? NULL : g_build_filename(dir, first, "summary.json", NULL);
  }
  g_ptr_array_add(variants, NULL);
  names = g_strjoinv(", ", (char **) variants->pdata);
  JsonObject *root = summary ? ema_json_load_object(parser, summary, NULL) : NULL;
  const char *name = "comparison";
  if (root && ema_json_member_string(root, "experiment", "comparison", summary, NULL, &name, NULL))
    title = g_strdup_printf("%s: %s", name, names);
  csv_clear(&csv);
  return title ? title : g_strdup("comparison");
}

/* The values in all of ARRAYS (GArrays) together. */
static guint total_len(GPtrArray *arrays) {
  guint n = 0;
  for (guint i = 0; i < arrays->len; i++)
    n += ((GArray *) arrays->pdata[i])->len;
  return n;
}

static gboolean plot_compare(const char *dir, const char *plots, const char *title, GString *driver,
                             GPtrArray *figures, GError **error) {
  g_autofree char *path = g_build_filename(dir, "compare.csv", NULL);
  g_autoptr(GPtrArray) variants = g_ptr_array_new_with_free_func(g_free);
  g_autoptr(GPtrArray) mine = g_ptr_array_new_with_free_func((GDestroyNotify) g_array_unref);
  g_autoptr(GPtrArray) lenders = g_ptr_array_new_with_free_func((GDestroyNotify) g_array_unref);
  g_autoptr(GString) timeline = g_string_new(
      "# per variant: time_s, the borrower's output tokens/s, the GiB it had borrowed\n");
  g_autoptr(GString) mine_data = NULL, lenders_data = NULL;
  g_autofree char *borrower = NULL;
  Csv csv = {0};
  gint variant_col, dir_col, borrower_col, repeat_col;
  double bin = NAN;
  guint timeline_points = 0;
  gboolean ok = FALSE;
  if (!csv_read(path, &csv, error))
    return FALSE;
  variant_col = csv_column(&csv, "variant");
  dir_col = csv_column(&csv, "dir");
  borrower_col = csv_column(&csv, "borrower");
  repeat_col = csv_column(&csv, "repeat");
  if (variant_col < 0 || dir_col < 0 || borrower_col < 0 || csv.rows->len == 0) {
    g_set_error(error, G_FILE_ERROR, G_FILE_ERROR_INVAL,
                "%s: no rows with variant, dir and borrower", path);
    goto out;
  }
  for (guint r = 0; r < csv.rows->len; r++) {
    GPtrArray *row = csv.rows->pdata[r];
    const char *sub = csv_cell(row, dir_col);
    g_autofree char *variant_dir = NULL;
    if (sub[0] == '\0' || strchr(sub, '/') || strcmp(sub, "..") == 0) {
      g_set_error(error, G_FILE_ERROR, G_FILE_ERROR_INVAL, "%s: row %u: bad dir '%s'", path, r + 2,
                  sub);
      goto out;
    }
    /* with repeats, the first repeat's run of each variant */
    if (repeat_col >= 0 && strcmp(csv_cell(row, repeat_col), "0") != 0)
      continue;
    variant_dir = g_build_filename(dir, sub, NULL);
    if (borrower == NULL)
      borrower = g_strdup(csv_cell(row, borrower_col));
    g_string_append_printf(timeline, "%s# %s\n", variants->len ? "\n\n" : "",
                           csv_cell(row, variant_col));
    g_ptr_array_add(variants, g_strdup(csv_cell(row, variant_col)));
    g_ptr_array_add(mine, g_array_new(FALSE, FALSE, sizeof(double)));
    g_ptr_array_add(lenders, g_array_new(FALSE, FALSE, sizeof(double)));
    if (!compare_timeline(variant_dir, borrower, timeline, &bin, &timeline_points, error) ||
        !compare_ttfts(variant_dir, borrower, mine->pdata[variants->len - 1],
                       lenders->pdata[variants->len - 1], error))
      goto out;
  }
  if (variants->len == 0) {
    g_set_error(error, G_FILE_ERROR, G_FILE_ERROR_INVAL,
                "%s: no rows of the first repeat (repeat 0) to plot", path);
    goto out;
  }
  mine_data = cdf_data(variants, mine, "the borrower's TTFT");
  lenders_data = cdf_data(variants, lenders, "the lenders' TTFT");
  if (!write_data(plots, "compare-timeline.dat", timeline, error) ||
      !write_data(plots, "compare-borrower-ttft.dat", mine_data, error) ||
      !write_data(plots, "compare-lenders-ttft.dat", lenders_data, error))
    goto out;
  gp_set(driver, "figtitle", title);
  gp_set(driver, "borrower", borrower);
  g_string_append_printf(driver, "borrower_ttfts = %u\nlender_ttfts = %u\ntimeline_points = %u\n",
                         total_len(mine), total_len(lenders), timeline_points);
  {
    /* (no two samples: no period to name) */
    g_autofree char *period = isfinite(bin) ? g_strdup_printf("%g s", bin) : g_strdup("one");
    gp_set(driver, "bin", period);
  }
  gp_series(driver, variants);
  ok = add_figure(plots, driver, figures, "compare", "compare.gp", 1200, 900, error);
out:
  csv_clear(&csv);
  return ok;
}

/* The change of each paired metric vs the baseline per variant (compare-paired.csv): one data
 * block per variant, x the metric's index dodged by the variant, its mean change and 95%
 * interval; the metrics name the x tics. */
static gboolean plot_compare_change(const char *dir, const char *plots, const char *title,
                                    GString *driver, GPtrArray *figures, GError **error) {
  g_autofree char *path = g_build_filename(dir, "compare-paired.csv", NULL);
  g_autoptr(GPtrArray) variants = g_ptr_array_new_with_free_func(g_free);
  g_autoptr(GPtrArray) metrics = g_ptr_array_new_with_free_func(g_free);
  g_autoptr(GString) data = g_string_new(
      "# per variant: metric index (dodged), mean change %, 95% interval low and high %\n");
  g_autoptr(GString) tics = g_string_new(NULL);
  const char *names[] = {"variant",         "baseline",     "metric",       "repeats",
                         "change_mean_pct", "ci95_low_pct", "ci95_high_pct"};
  gint cols[G_N_ELEMENTS(names)];
  Csv csv = {0};
  gboolean ok = FALSE;
  guint defined = 0; /* changes with a value (none where every baseline figure was 0) */
  if (!csv_read(path, &csv, error))
    return FALSE;
  for (guint c = 0; c < G_N_ELEMENTS(names); c++)
    if ((cols[c] = csv_column(&csv, names[c])) < 0) {
      g_set_error(error, G_FILE_ERROR, G_FILE_ERROR_INVAL, "%s lacks %s", path, names[c]);
      goto out;
    }
  for (guint r = 0; r < csv.rows->len; r++) {
    GPtrArray *row = csv.rows->pdata[r];
    const char *variant = csv_cell(row, cols[0]), *metric = csv_cell(row, cols[2]);
    guint v = 0, m = 0;
    while (v < variants->len && strcmp(variants->pdata[v], variant) != 0)
      v++;
    while (m < metrics->len && strcmp(metrics->pdata[m], metric) != 0)
      m++;
    if (v == variants->len) {
      g_string_append_printf(data, "%s# %s\n", v ? "\n\n" : "", variant);
      g_ptr_array_add(variants, g_strdup(variant));
    }
    if (m == metrics->len) {
      g_string_append_printf(tics, "%s\"%s\" %u", m ? ", " : "", metric, m);
      g_ptr_array_add(metrics, g_strdup(metric));
    }
    /* a variant's points beside the others' at each metric */
    append_number(data, m + 0.15 * ((double) v - 0.5 * (double) (variants->len - 1)));
    for (guint c = 4; c < G_N_ELEMENTS(names); c++) {
      double value;
      gboolean given = parse_number(csv_cell(row, cols[c]), &value);
      defined += c == 4 && given;
      g_string_append_c(data, ' ');
      append_number(data, given ? value : NAN);
    }
    g_string_append_c(data, '\n');
    if (r == 0) {
      gp_set(driver, "baseline", csv_cell(row, cols[1]));
      gp_set(driver, "repeats", csv_cell(row, cols[3]));
    }
  }
  if (variants->len == 0 || defined == 0) {
    ok = TRUE; /* one variant, or no change defined (gnuplot refuses a plot without a point) */
    goto out;
  }
  gp_set(driver, "figtitle", title);
  gp_set(driver, "metrictics", tics->str);
  gp_series(driver, variants);
  ok = write_data(plots, "compare-change.dat", data, error) &&
       add_figure(plots, driver, figures, "compare-change", "compare-change.gp", 1200, 700, error);
out:
  csv_clear(&csv);
  return ok;
}

char *ema_plot_find_gnuplot(void) {
  const char *given = g_getenv("EMA_GNUPLOT");
  if (given && *given)
    return g_find_program_in_path(given);
  return g_find_program_in_path("gnuplot");
}

char *ema_plot_gnuplot_missing(void) {
  const char *given = g_getenv("EMA_GNUPLOT");
  if (given && *given)
    return g_strdup_printf("EMA_GNUPLOT=%s is not a program on PATH", given);
  return g_strdup("gnuplot is not on PATH");
}

/* What of gnuplot's stderr a failure quotes: its last lines, and at most so many bytes. */
#define GNUPLOT_ERROR_LINES 4
#define GNUPLOT_ERROR_CHARS 1000

/* gnuplot run on PLOTS/plots.gp (the figures of results folder DIR, drawn beside its plots/). */
static gboolean run_gnuplot(const char *gnuplot, const char *plots, const char *dir,
                            GError **error) {
  const char *argv[] = {gnuplot, "plots.gp", NULL};
  g_autofree char *err = NULL;
  g_autoptr(GError) status_error = NULL;
  int wait_status = 0;
  if (!g_spawn_sync(plots, (char **) argv, NULL, G_SPAWN_STDOUT_TO_DEV_NULL, NULL, NULL, NULL, &err,
                    &wait_status, error))
    return FALSE;
  if (!g_spawn_check_wait_status(wait_status, &status_error)) {
    g_auto(GStrv) lines = g_strsplit(err ? err : "", "\n", -1);
    g_autoptr(GString) message = g_string_new(NULL);
    guint n = g_strv_length(lines), kept = 0, first = n;
    /* gnuplot's error: the last GNUPLOT_ERROR_LINES non-empty lines (not its warnings), on one
     * line and cut to GNUPLOT_ERROR_CHARS; else how it ended */
    while (first > 0 && kept < GNUPLOT_ERROR_LINES) {
      g_strstrip(lines[--first]);
      kept += lines[first][0] && strstr(lines[first], "warning:") == NULL;
    }
    for (guint i = first; i < n; i++)
      if (lines[i][0] && strstr(lines[i], "warning:") == NULL)
        g_string_append_printf(message, "%s%s", message->len ? " " : "", lines[i]);
    if (message->len > GNUPLOT_ERROR_CHARS) {
      g_string_truncate(message, GNUPLOT_ERROR_CHARS);
      g_string_append(message, "...");
    }
    g_set_error(error, G_SPAWN_ERROR, G_SPAWN_ERROR_FAILED,
                "gnuplot failed on the figures of %s (its plots/ is as it was): %s", dir,
                message->len ? message->str : status_error->message);
    return FALSE;
  }
  return TRUE;
}

/* The FIGURES (names in PLOTS) gnuplot was to draw, each there and not empty (a program that
 * exits 0 drawing nothing, a script of EMA_PLOT_PATH that writes no file): else an error. The
 * paper preset draws PDF where the default draws PNG (common.gp). */
static gboolean figures_drawn(const char *plots, GPtrArray *figures, gboolean paper,
                              GError **error) {
  for (guint i = 0; i < figures->len; i++) {
    const char *figure = figures->pdata[i];
    g_autofree char *name = paper && g_str_has_suffix(figure, ".png")
                                ? g_strdup_printf("%.*s.pdf", (int) strlen(figure) - 4, figure)
                                : g_strdup(figure);
    g_autofree char *path = g_build_filename(plots, name, NULL);
    GStatBuf st;
    if (g_stat(path, &st) != 0 || !S_ISREG(st.st_mode) || st.st_size == 0) {
      g_set_error(error, G_FILE_ERROR, G_FILE_ERROR_FAILED,
                  "gnuplot drew no %s (it ran and exited 0): plots/ is as it was", name);
      return FALSE;
    }
    g_free(figures->pdata[i]);
    figures->pdata[i] = g_steal_pointer(&name);
  }
  return TRUE;
}

/* DIR holds a run's results: its summary.json, and requests.csv or timeline.csv. */
static gboolean run_results(const char *dir) {
  g_autofree char *summary = g_build_filename(dir, "summary.json", NULL);
  g_autofree char *requests = g_build_filename(dir, "requests.csv", NULL);
  g_autofree char *timeline = g_build_filename(dir, "timeline.csv", NULL);
  return g_file_test(summary, G_FILE_TEST_IS_REGULAR) &&
         (g_file_test(requests, G_FILE_TEST_IS_REGULAR) ||
          g_file_test(timeline, G_FILE_TEST_IS_REGULAR));
}

static void nothing_to_plot(const char *dir, GError **error) {
  g_set_error(error, G_FILE_ERROR, G_FILE_ERROR_NOENT,
              "%s: nothing to plot (no sweep.csv, compare.csv or frontier.csv, and no "
              "requests.csv or timeline.csv with a summary.json)",
              dir);
}

/* Every tenant ONLY names is one of each of comparison DIR's variants' runs (their figures take
 * --tenant; the comparison's own does not): checked before any figure of DIR is drawn, so that
 * a name none has is refused with nothing written. */
static gboolean variants_know_tenants(const char *dir, const char *only, GError **error) {
  g_auto(GStrv) variants = ema_plot_compare_variant_dirs(dir);
  for (guint i = 0; variants[i]; i++) {
    g_autofree char *sub = g_build_filename(dir, variants[i], NULL);
    g_auto(RunSizes) sizes = {0};
    if (run_results(sub) &&
        (!read_kv_sizes(sub, &sizes, error) || !tenants_known(sub, only, sizes.order, error)))
      return FALSE;
  }
  return TRUE;
}

/* ema_plot_dir: the figures are drawn into plots.new, made whole there (gnuplot ran, every
 * figure it was to draw is there) and only then moved into plots/, each over the file of its
 * name: gnuplot failing halfway, or drawing nothing, leaves plots/ as it was (its plots.gp and
 * data the figures' beside them), and a folder it refuses gets no file. Figures of an earlier
 * plot under other names (another --tenant's, the other preset's format) stay beside them. */
static gboolean plot_into(const char *dir, const char *plots, const char *gnuplot,
                          const EmaPlotOptions *options, GPtrArray *figures, gboolean *made,
                          GError **error);

gboolean ema_plot_dir(const char *dir, const char *gnuplot, const EmaPlotOptions *options,
                      GPtrArray *figures, GError **error) {
  g_autofree char *plots = g_build_filename(dir, "plots", NULL);
  g_autofree char *building = g_strconcat(plots, ".new", NULL);
  g_autoptr(GPtrArray) drawn = g_ptr_array_new_with_free_func(g_free);
  GError *local = NULL;
  gboolean made = FALSE;
  if (!plot_into(dir, building, gnuplot, options, drawn, &made, &local) ||
      !ema_output_move_into(building, plots, &local)) {
    if (made)
      (void) ema_output_remove_own(building, NULL);
    g_propagate_error(error, local);
    return FALSE;
  }
  for (guint i = 0; figures && i < drawn->len; i++)
    g_ptr_array_add(figures, g_strdup(drawn->pdata[i]));
  return TRUE;
}

static gboolean plot_into(const char *dir, const char *plots, const char *gnuplot,
                          const EmaPlotOptions *options, GPtrArray *figures, gboolean *made,
                          GError **error) {
  g_autofree char *sweep_csv = g_build_filename(dir, "sweep.csv", NULL);
  g_autofree char *requests = g_build_filename(dir, "requests.csv", NULL);
  g_autofree char *timeline = g_build_filename(dir, "timeline.csv", NULL);
  g_autofree char *compare_csv = g_build_filename(dir, "compare.csv", NULL);
  g_autofree char *compare_paired = g_build_filename(dir, "compare-paired.csv", NULL);
  g_autofree char *frontier_csv = g_build_filename(dir, "frontier.csv", NULL);
  g_autofree char *driver_path = g_build_filename(plots, "plots.gp", NULL);
  g_autoptr(GPtrArray) drawn = g_ptr_array_new_with_free_func(g_free);
  g_autoptr(GString) driver = g_string_new(NULL);
  g_auto(RunSizes) sizes = {0};
  g_autofree char *common = find_script("common.gp", error);
  Settings settings = {0};
  gboolean ok = FALSE;

  if (common == NULL)
    return FALSE;
  if (!g_file_test(dir, G_FILE_TEST_IS_DIR)) {
    g_set_error(error, G_FILE_ERROR, G_FILE_ERROR_NOENT, "%s: no such directory", dir);
    return FALSE;
  }
  /* before plots/ is made: a folder of no results (another program's, a run's parent, a run
   * stopped before its summary.json) is left as it was */
  if (!g_file_test(sweep_csv, G_FILE_TEST_IS_REGULAR) &&
      !g_file_test(frontier_csv, G_FILE_TEST_IS_REGULAR) &&
      !g_file_test(compare_csv, G_FILE_TEST_IS_REGULAR) && !run_results(dir)) {
    nothing_to_plot(dir, error);
    return FALSE;
  }
  if (options && (options->x || options->by || options->xlabel) &&
      !g_file_test(sweep_csv, G_FILE_TEST_IS_REGULAR)) {
    /* the sweep figure's axes: given for another folder they would be left unused */
    g_set_error(error, G_OPTION_ERROR, G_OPTION_ERROR_BAD_VALUE,
                "--%s: %s has no sweep.csv (--x, --by and --xlabel set a sweep's figures)",
                options->x    ? "x"
                : options->by ? "by"
                              : "xlabel",
                dir);
    return FALSE;
  }
  /* tenants picked where no figure has any (a frontier's), or none named (g_strsplit finds no
   * name in ""): the figures would be drawn as if --tenant were not given */
  if (options && options->tenant && options->tenant[0] == '\0') {
    g_set_error(error, G_OPTION_ERROR, G_OPTION_ERROR_BAD_VALUE,
                "--tenant: give a tenant's name (NAME or NAME,NAME,...) for %s", dir);
    return FALSE;
  }
  if (options && options->tenant && !g_file_test(sweep_csv, G_FILE_TEST_IS_REGULAR) &&
      !g_file_test(compare_csv, G_FILE_TEST_IS_REGULAR) && !run_results(dir)) {
    g_set_error(error, G_OPTION_ERROR, G_OPTION_ERROR_BAD_VALUE,
                "--tenant: %s has no tenants (--tenant picks those of a run's, a comparison's "
                "or a sweep's figures)",
                dir);
    return FALSE;
  }
  if (options && options->tenant && g_file_test(compare_csv, G_FILE_TEST_IS_REGULAR) &&
      !variants_know_tenants(dir, options->tenant, error))
    return FALSE;
  /* a results folder's: one an earlier plot left, killed while it drew, goes */
  if (!ema_output_remove_own(plots, error))
    return FALSE;
  *made = TRUE;
  if (g_mkdir_with_parents(plots, 0777) != 0) {
    int saved = errno;
    g_set_error(error, G_FILE_ERROR, g_file_error_from_errno(saved), "cannot create %s: %s", plots,
                g_strerror(saved));
    return FALSE;
  }
  g_string_append_printf(driver,
                         "# Made by ema-sim plot %s: `gnuplot plots.gp` in this folder draws the\n"
                         "# figures again. The scripts it loads are copies, here, of the plain\n"
                         "# gnuplot scripts of ema-sim's plots/: edit them, or put your own\n"
                         "# versions in a folder named by EMA_PLOT_PATH.\n",
                         EMA_VERSION);
  {
    g_autofree char *copied = copy_script(plots, common, error);
    if (copied == NULL)
      return FALSE;
    gp_set(driver, "common", copied);
  }
  g_string_append_printf(driver, "paper = %d\n\n", options && options->paper);
  if (!settings_load(dir, options, &settings, error))
    goto out;
  if (g_file_test(sweep_csv, G_FILE_TEST_IS_REGULAR) &&
      !plot_sweep(dir, plots, &settings, driver, drawn, error))
    goto out;
  if (g_file_test(frontier_csv, G_FILE_TEST_IS_REGULAR) &&
      !plot_frontier(dir, plots, settings.title ? settings.title : "transparency frontier", driver,
                     drawn, error))
    goto out;
  if (g_file_test(compare_csv, G_FILE_TEST_IS_REGULAR)) {
    /* titled by the experiment and its variants unless a title is given */
    g_autofree char *title = settings.title ? g_strdup(settings.title) : compare_title(dir);
    if (!plot_compare(dir, plots, title, driver, drawn, error) ||
        (g_file_test(compare_paired, G_FILE_TEST_IS_REGULAR) &&
         !plot_compare_change(dir, plots, title, driver, drawn, error)))
      goto out;
  }
  if (run_results(dir)) {
    g_autofree char *title = NULL;
    if (!read_kv_sizes(dir, &sizes, error))
      goto out;
    if (settings.tenant_given && !tenants_known(dir, settings.tenant, sizes.order, error))
      goto out;
    title = g_strdup(settings.title ? settings.title : sizes.name);
    if (g_file_test(requests, G_FILE_TEST_IS_REGULAR) &&
        !plot_requests(dir, plots, title, sizes.order, settings.tenant, driver, drawn, error))
      goto out;
    if (g_file_test(timeline, G_FILE_TEST_IS_REGULAR) &&
        !plot_timeline(dir, plots, title, sizes.block_bytes, sizes.region_bytes, sizes.idle_region,
                       settings.tenant, driver, drawn, error))
      goto out;
  }
  if (drawn->len == 0) {
    nothing_to_plot(dir, error);
    goto out;
  }
  if (!g_file_set_contents(driver_path, driver->str, (gssize) driver->len, error) ||
      !run_gnuplot(gnuplot, plots, dir, error) ||
      !figures_drawn(plots, drawn, options && options->paper, error))
    goto out;
  g_ptr_array_extend_and_steal(figures, g_steal_pointer(&drawn));
  ok = TRUE;
out:
  settings_clear(&settings);
  return ok;
}
