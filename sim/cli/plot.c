/* plot.c: the data side of the figures (plot.h). It reads sweep.csv,
 * requests.csv, timeline.csv and summary.json, writes the series gnuplot
 * draws into .dat files in DIR/plots/ (one block per series, blocks separated by
 * two blank lines, numbers in the C locale) and DIR/plots/plots.gp, which
 * sets each figure's variables and loads its script from plots/; then runs
 * gnuplot once on plots.gp.
 *
 * Invariants: a figure is only asked for when its data has at least one
 * point; series are in the order they first appear in the results; the
 * .dat files depend only on the results (so figures are reproducible).
 * Every cell a figure reads is checked as its row is read (CsvRowCheck), against its writer's
 * format and the run's summary.json (its tenants and their GPUs) or compare.csv (its variants
 * and paired metrics), and every column it reads is in the header once: a damaged one is an
 * error at its file:line:col, never a point dropped or drawn; a setting of plot.yaml that
 * sweep.csv cannot take is an error at the setting's place in plot.yaml. */
#include "ema/cli/plot.h"

#include <errno.h>
#include <math.h>
#include <stdarg.h>
#include <stdio.h>
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>

#include <glib/gstdio.h>
#include <json-glib/json-glib.h>

#include "ema/core/csv.h"
#include "ema/core/file.h"
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

/* The table at PATH, its header read by the one CSV reader (ema/core/csv.h) and its rows not yet
 * (csv_read_rows). */
static gboolean csv_open(const char *path, Csv *csv, GError **error) {
  if (!ema_csv_open_max(&csv->table, path, MAX_TABLE_BYTES, error)) {
    csv_clear(csv);
    return FALSE;
  }
  csv->header = strv_copy(csv->table.header);
  csv->rows = g_ptr_array_new_with_free_func((GDestroyNotify) g_ptr_array_unref);
  return TRUE;
}

/* Whether the current row of TABLE (its cells, line and columns: ema_csv_next's) can be drawn;
 * else FALSE with an error at the cell that cannot, "file:line:col: column 'NAME': ...". */
typedef gboolean (*CsvRowCheck)(const EmaCsv *table, gpointer data, GError **error);

/* The rows of CSV (csv_open), each asked of CHECK (may be NULL) as it is read, while the reader
 * still knows its line; they are the reader's own fields, split in place in its text (a copy of
 * each would take several times the file's size: a rack's timeline.csv holds millions of
 * rows). FALSE, CSV cleared, at the first error. */
static gboolean csv_read_rows(Csv *csv, CsvRowCheck check, gpointer data, GError **error) {
  GError *row_error = NULL;
  while (ema_csv_next(&csv->table, &row_error)) {
    GPtrArray *row;
    if (check && !check(&csv->table, data, error)) {
      csv_clear(csv);
      return FALSE;
    }
    row = g_ptr_array_sized_new(csv->table.n_fields);
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

/* The whole table at PATH, its rows unchecked (compare.csv's, for a title). */
static gboolean csv_read(const char *path, Csv *csv, GError **error) {
  return csv_open(path, csv, error) && csv_read_rows(csv, NULL, NULL, error);
}

static gint csv_column(const Csv *csv, const char *name) {
  for (guint i = 0; i < csv->header->len; i++)
    if (strcmp(csv->header->pdata[i], name) == 0)
      return (gint) i;
  return -1;
}

/* Column NAME of CSV into *COLUMN, -1 where the header has none; FALSE with the reader's error
 * ("file:1:col: column 'NAME' is in the header twice ...") where it has two: which one is meant
 * is not for plot to guess. */
static gboolean csv_find(const Csv *csv, const char *name, gint *column, GError **error) {
  guint index;
  *column = csv_column(csv, name);
  if (*column < 0)
    return TRUE;
  if (!ema_csv_column(&csv->table, name, &index, error))
    return FALSE;
  *column = (gint) index;
  return TRUE;
}

/* The columns NEEDED (N names) of CSV into COL, each there once; else the reader's error
 * ("file:1:1: no column 'NAME'", or the name twice). */
static gboolean csv_columns(const Csv *csv, const char *const *needed, guint n, gint *col,
                            GError **error) {
  for (guint i = 0; i < n; i++) {
    guint index;
    if (!ema_csv_column(&csv->table, needed[i], &index, error))
      return FALSE;
    col[i] = (gint) index;
  }
  return TRUE;
}

/* An error at cell INDEX of TABLE's current row: "file:line:col: column 'NAME': MESSAGE", as the
 * reader's own (ema_csv_number). */
static void cell_error(GError **error, const EmaCsv *table, guint index, const char *format, ...)
    G_GNUC_PRINTF(4, 5);

static void cell_error(GError **error, const EmaCsv *table, guint index, const char *format, ...) {
  va_list args;
  g_autofree char *message = NULL;
  va_start(args, format);
  message = g_strdup_vprintf(format, args);
  va_end(args);
  g_set_error(error, EMA_CONFIG_ERROR, EMA_CONFIG_ERROR_INVALID, "%s:%u:%u: column '%s': %s",
              table->file, table->line, ema_csv_field_column(table, index), table->header[index],
              message);
}

/* VALUE, TABLE's cell in column INDEX, is the first row's (*FIRST: NULL before it, then a copy of
 * the first row's): a comparison has one WHAT (its borrower, its baseline); else an error at the
 * cell naming both. */
static gboolean same_as_first(const EmaCsv *table, guint index, const char *what, const char *value,
                              char **first, GError **error) {
  if (*first == NULL) {
    *first = g_strdup(value);
    return TRUE;
  }
  if (strcmp(value, *first) == 0)
    return TRUE;
  g_autofree char *quoted = ema_file_quote_cut(value, -1);
  g_autofree char *first_quoted = ema_file_quote_cut(*first, -1);
  cell_error(error, table, index, "'%s' is not the first row's %s '%s' (a comparison has one)",
             quoted, what, first_quoted);
  return FALSE;
}

/* Cell INDEX of TABLE's current row as a number into *VALUE (may be NULL): not negative, and
 * whole if INTEGER (ema_csv_number's error); an empty cell NAN where EMPTY_OK (a metric of a
 * tenant a point does not run, a request of one output token: no TPOT). */
static gboolean cell_number(const EmaCsv *table, gint index, gboolean integer, gboolean empty_ok,
                            double *value, GError **error) {
  double ignored;
  if (value == NULL)
    value = &ignored;
  if (empty_ok && table->fields[index][0] == '\0') {
    *value = NAN;
    return TRUE;
  }
  return ema_csv_number(table, (guint) index, integer, TRUE, value, error);
}

/* TEXT as a number; FALSE unless all of it is one finite decimal number (ema_csv_parse_decimal:
 * not hexadecimal). */
static gboolean parse_number(const char *text, double *value) {
  char *end;
  if (text == NULL || *text == '\0')
    return FALSE;
  *value = ema_csv_parse_decimal(text, &end);
  return *end == '\0' && isfinite(*value);
}

/* Cell INDEX of TABLE's current row as any finite number (a change in %: negative too), or
 * empty (no change defined). */
static gboolean cell_signed(const EmaCsv *table, guint index, GError **error) {
  const char *text = table->fields[index];
  double value;
  if (*text == '\0' || parse_number(text, &value))
    return TRUE;
  g_autofree char *quoted = ema_file_quote_cut(text, -1);
  cell_error(error, table, index, "'%s' is not a number", quoted);
  return FALSE;
}

/* NAMES (char *) joined by ", "; NONE where there is none. */
static char *joined(GPtrArray *names, const char *none) {
  g_autoptr(GString) out = g_string_new(NULL);
  for (guint i = 0; i < names->len; i++)
    g_string_append_printf(out, "%s%s", i ? ", " : "", (const char *) names->pdata[i]);
  return g_strdup(out->len ? out->str : none);
}

static const char *csv_cell(GPtrArray *row, gint column) {
  return column >= 0 && (guint) column < row->len ? row->pdata[column] : "";
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
  EmaNode *file;         /* plot.yaml, where there is one */
  /* the value in plot.yaml of each setting (setting_keys' order) where it gives the setting (not
   * an option): an error about it is at its file:line:col */
  const EmaNode *from_file[5];
} Settings;

static void settings_clear(Settings *settings) {
  g_free(settings->x);
  g_free(settings->by);
  g_free(settings->tenant);
  g_free(settings->title);
  g_free(settings->xlabel);
  g_clear_pointer(&settings->file, ema_node_free);
}

static const char *const setting_keys[] = {"x", "by", "tenant", "title", "xlabel", NULL};
enum { SETTING_X, SETTING_BY, SETTING_TENANT };

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
    EmaNode *root = settings->file = ema_node_load_file(path, error);
    /* (edited by hand, as its comment invites: a list, a null value, a typo are errors) */
    if (root == NULL || !ema_plot_check_settings(root, NULL, error))
      return FALSE;
    for (guint i = 0; i < root->keys->len; i++)
      for (guint k = 0; setting_keys[k]; k++)
        if (strcmp(((const EmaNode *) root->keys->pdata[i])->value, setting_keys[k]) == 0) {
          g_free(*fields[k]);
          settings->from_file[k] = root->items->pdata[i];
          *fields[k] = g_strdup(settings->from_file[k]->value);
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
        settings->from_file[k] = NULL;
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
 * ROW; COLS: each tenant's SWEEP_Y columns (SweepColumns' metrics). */
static double tenant_metric(GPtrArray *row, GPtrArray *tenants, const gint *cols,
                            const char *tenant, guint y) {
  gboolean all = strcmp(tenant, "all") == 0;
  double total = y == 0 ? 0 : -INFINITY;
  guint counted = 0;
  for (guint t = 0; t < tenants->len; t++) {
    double value;
    if (!all && strcmp(tenant, tenants->pdata[t]) != 0)
      continue;
    /* a tenant of other points only (a variant or a swept value leaves it out of this one): no
     * throughput, which every tenant of a point has */
    if (all && csv_cell(row, cols[t * SWEEP_Y])[0] == '\0')
      continue;
    if (!parse_number(csv_cell(row, cols[t * SWEEP_Y + y]), &value))
      return NAN;
    total = y == 0 ? total + value : MAX(total, value);
    counted++;
  }
  return counted > 0 && isfinite(total) ? total : NAN;
}

/* The columns of sweep.csv a row is read by (-1: the header has none). */
typedef struct {
  gint status, repeat;
  GArray *metrics; /* gint: each tenant's SWEEP_Y (tenant_metric), then each op's GB/s, seconds */
} SweepColumns;

static const char *const sweep_statuses[] = {"ok", "missed", "failed", "not-run", NULL};

/* A row of sweep.csv (SweepColumns): a status of ema-sim sweep's, a repeat, and, in a point with
 * results (ok, missed), every metric the figures draw a number or empty (a tenant the point does
 * not run); a failed or not-run point's are not drawn. */
static gboolean sweep_row_ok(const EmaCsv *table, gpointer data, GError **error) {
  const SweepColumns *columns = data;
  const char *status = table->fields[columns->status];
  if (!g_strv_contains(sweep_statuses, status)) {
    g_autofree char *quoted = ema_file_quote_cut(status, -1);
    cell_error(error, table, (guint) columns->status,
               "'%s' is not a point's status (ok, missed, failed or not-run)", quoted);
    return FALSE;
  }
  if (!cell_number(table, columns->repeat, TRUE, FALSE, NULL, error))
    return FALSE;
  if (strcmp(status, "ok") != 0 && strcmp(status, "missed") != 0)
    return TRUE;
  for (guint i = 0; i < columns->metrics->len; i++) {
    gint c = g_array_index(columns->metrics, gint, i);
    if (c >= 0 && !cell_number(table, c, FALSE, TRUE, NULL, error))
      return FALSE;
  }
  return TRUE;
}

/* What x or by of a sweep may name (SWEPT: its swept columns; TENANTS, OPS: its tenants' and
 * ops' names), for an error. */
static char *sweep_column_hint(const Csv *csv, GPtrArray *swept, GPtrArray *tenants,
                               GPtrArray *ops) {
  g_autoptr(GString) hint = g_string_new("give ");
  for (guint a = 0; a < swept->len; a++)
    g_string_append_printf(hint, "%s%s", a ? ", " : "a swept path: ",
                           (const char *) csv->header->pdata[GPOINTER_TO_INT(swept->pdata[a])]);
  g_string_append_printf(hint, "%svariant, repeat, seed, or a metric column such as %s.%s",
                         swept->len ? "; or " : "",
                         tenants->len ? (const char *) tenants->pdata[0]
                         : ops->len   ? (const char *) ops->pdata[0]
                                      : "TENANT",
                         tenants->len || !ops->len ? "throughput_tok_s" : "seconds");
  return g_string_free(g_steal_pointer(&hint), FALSE);
}

/* Column NAME of sweep.csv (CSV, at PATH) for setting K of SETTINGS (x or by: WHAT), into
 * *COLUMN; FALSE where the header has it twice, or not at all: at its value in plot.yaml where
 * it is set there, else (an option) at sweep.csv. */
static gboolean setting_column(const Csv *csv, const char *path, const Settings *settings, guint k,
                               const char *what, GPtrArray *swept, GPtrArray *tenants,
                               GPtrArray *ops, gint *column, GError **error) {
  const char *name = k == SETTING_X ? settings->x : settings->by;
  if (!csv_find(csv, name, column, error))
    return FALSE;
  if (*column >= 0)
    return TRUE;
  g_autofree char *quoted = ema_file_quote_cut(name, -1);
  if (settings->from_file[k]) {
    g_autofree char *hint = sweep_column_hint(csv, swept, tenants, ops);
    ema_node_error(error, EMA_CONFIG_ERROR_KEY, settings->from_file[k], setting_keys[k],
                   "'%s' is not a column of sweep.csv (%s)", quoted, hint);
  } else
    g_set_error(error, G_FILE_ERROR, G_FILE_ERROR_INVAL, "%s has no column '%s' for %s", path,
                quoted, what);
  return FALSE;
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
  g_autoptr(GArray) metrics = g_array_new(FALSE, FALSE, sizeof(gint));
  const char *tenant = settings->tenant;
  gboolean categorical = FALSE;
  XKind kind;
  g_autofree char *xtitle = NULL;
  gboolean ok = FALSE;

  if (!csv_open(path, &csv, error))
    return FALSE;
  if (!csv_find(&csv, "variant", &variant, error) || !csv_find(&csv, "repeat", &repeat, error) ||
      !csv_find(&csv, "status", &status, error))
    goto out;
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
  /* the columns drawn: each once (a tenant's metric twice in the header is an error, not one
   * of them picked) */
  for (guint t = 0; t < tenants->len; t++)
    for (guint k = 0; k < SWEEP_Y; k++) {
      static const char *const suffixes[] = {"throughput_tok_s", "ttft_p99_ms", "tpot_p99_ms",
                                             "e2e_p99_ms"};
      g_autofree char *name = g_strconcat(tenants->pdata[t], ".", suffixes[k], NULL);
      gint c;
      if (!csv_find(&csv, name, &c, error))
        goto out;
      g_array_append_val(metrics, c);
    }
  for (guint o = 0; o < ops->len; o++)
    for (guint k = 0; k < 2; k++) {
      g_autofree char *name = g_strconcat(ops->pdata[o], k ? ".seconds" : ".bandwidth_gbps", NULL);
      gint c;
      if (!csv_find(&csv, name, &c, error))
        goto out;
      g_array_append_val(metrics, c);
    }

  /* the settings, against the header: x, by, tenant */
  if (settings->x &&
      !setting_column(&csv, path, settings, SETTING_X, "x", swept, tenants, ops, &x_column, error))
    goto out;
  if (settings->by && strcmp(settings->by, "none") != 0 &&
      !setting_column(&csv, path, settings, SETTING_BY, "the lines", swept, tenants, ops,
                      &by_column, error))
    goto out;
  if (tenant == NULL)
    tenant = tenants->len == 1 ? tenants->pdata[0] : "all";
  /* (an ops sweep has none: a tenant named there would pick nothing, silently) */
  if (strcmp(tenant, "all") != 0 &&
      !g_ptr_array_find_with_equal_func(tenants, tenant, g_str_equal, NULL)) {
    g_autofree char *known = joined(tenants, "none, its points run ops");
    g_autofree char *quoted = ema_file_quote_cut(tenant, -1);
    if (settings->from_file[SETTING_TENANT])
      ema_node_error(error, EMA_CONFIG_ERROR_KEY, settings->from_file[SETTING_TENANT], "tenant",
                     "no tenant '%s' in sweep.csv (tenants: %s; or all)", quoted, known);
    else
      g_set_error(error, G_FILE_ERROR, G_FILE_ERROR_INVAL,
                  "%s has no tenant '%s' (tenants: %s; or all)", path, quoted, known);
    goto out;
  }

  {
    SweepColumns columns = {status, repeat, metrics};
    if (!csv_read_rows(&csv, sweep_row_ok, &columns, error))
      goto out;
  }
  /* x: given, or the first swept column of numbers with two values or more */
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
  if (settings->by == NULL) {
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
        y[k] = tenant_metric(row, tenants, &g_array_index(metrics, gint, 0), tenant, k);
      series_add(series_get(serving, line->str), x, x_text, y);
    }
    for (guint o = 0; o < ops->len; o++) {
      const gint *cols = &g_array_index(metrics, gint, tenants->len * SWEEP_Y + 2 * o);
      g_autofree char *name = line->len && (by_column >= 0 || strcmp(line->str, "all tenants"))
                                  ? g_strdup_printf("%s (%s)", (char *) ops->pdata[o], line->str)
                                  : g_strdup(ops->pdata[o]);
      double values[SWEEP_Y] = {NAN, NAN, NAN, NAN};
      parse_number(csv_cell(row, cols[0]), &values[0]);
      parse_number(csv_cell(row, cols[1]), &values[1]);
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
      g_autofree char *quoted = ema_file_quote_cut(names[i], -1);
      g_set_error(error, G_FILE_ERROR, G_FILE_ERROR_INVAL,
                  "--tenant: %s has no tenant '%s' (its tenants: %s)", dir, quoted, known->str);
      return FALSE;
    }
  }
  return TRUE;
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
  GHashTable *gpus; /* tenant -> gint64[2]: its first GPU and how many (tp); none where not said */
  GPtrArray *order; /* the tenants in the experiment's order */
  GArray *idle_region; /* double per GPU: the bytes it may lend where it has no tenant, else NAN */
  char *name;          /* the experiment's */
  char *path;          /* its summary.json, for errors */
} RunSizes;

static void run_sizes_clear(RunSizes *sizes) {
  g_clear_pointer(&sizes->block_bytes, g_hash_table_unref);
  g_clear_pointer(&sizes->region_bytes, g_hash_table_unref);
  g_clear_pointer(&sizes->gpus, g_hash_table_unref);
  g_clear_pointer(&sizes->order, g_ptr_array_unref);
  g_clear_pointer(&sizes->idle_region, g_array_unref);
  g_clear_pointer(&sizes->name, g_free);
  g_clear_pointer(&sizes->path, g_free);
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
  sizes->gpus = g_hash_table_new_full(g_str_hash, g_str_equal, g_free, g_free);
  sizes->order = g_ptr_array_new_with_free_func(g_free);
  idle_region = sizes->idle_region = g_array_new(FALSE, FALSE, sizeof(double));
  sizes->path = g_strdup(path);
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
    double blocks, bytes, gpu, tp, *block, *region;
    if (!ema_json_member_string(tenant, "name", "", path, where, &tenant_name, error) ||
        !ema_json_member_number(tenant, "kv_blocks", 0, 0, 1e15, path, where, &blocks, error) ||
        !ema_json_member_number(tenant, "kv_bytes_per_gpu", 0, 0, 1e18, path, where, &bytes,
                                error) ||
        !ema_json_member_number(tenant, "gpu", -1, -1, MAX_GPUS - 1, path, where, &gpu, error) ||
        !ema_json_member_number(tenant, "tp", 1, 1, MAX_GPUS, path, where, &tp, error))
      return FALSE;
    if (gpu >= 0) {
      gint64 *range = g_new(gint64, 2);
      range[0] = (gint64) gpu;
      range[1] = (gint64) tp;
      g_hash_table_insert(sizes->gpus, g_strdup(tenant_name), range);
    }
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

/* ---- a run's tables, each row checked against its summary.json ----------------------- */

/* Whether NAME is one of the tenants of SIZES' run; else an error at cell INDEX of TABLE's row
 * naming them. */
static gboolean tenant_known(const EmaCsv *table, guint index, const RunSizes *sizes,
                             const char *name, GError **error) {
  g_autofree char *known = NULL;
  if (g_hash_table_contains(sizes->region_bytes, name))
    return TRUE;
  g_autofree char *quoted = ema_file_quote_cut(name, -1);
  known = joined(sizes->order, "none");
  cell_error(error, table, index, "no tenant '%s' in %s (its tenants: %s)", quoted, sizes->path,
             known);
  return FALSE;
}

/* The columns of a run's requests.csv a row is read by, and the run's summary.json. */
typedef struct {
  const RunSizes *sizes;
  gint tenant, ttft, tpot;
} RequestColumns;

/* A row of requests.csv (a finished request): a tenant of the run's, a TTFT, and a TPOT or none
 * (one output token). */
static gboolean request_row_ok(const EmaCsv *table, gpointer data, GError **error) {
  const RequestColumns *columns = data;
  return tenant_known(table, (guint) columns->tenant, columns->sizes,
                      table->fields[columns->tenant], error) &&
         cell_number(table, columns->ttft, FALSE, FALSE, NULL, error) &&
         cell_number(table, columns->tpot, FALSE, TRUE, NULL, error);
}

/* The requests.csv at PATH of the run SIZES describes, read into CSV with the columns of
 * COLUMNS (tenant, ttft_ms, tpot_ms), every row checked (request_row_ok). */
static gboolean read_requests(const char *path, const RunSizes *sizes, Csv *csv,
                              RequestColumns *columns, GError **error) {
  static const char *const needed[] = {"tenant", "ttft_ms", "tpot_ms"};
  gint col[G_N_ELEMENTS(needed)];
  if (!csv_open(path, csv, error))
    return FALSE;
  if (!csv_columns(csv, needed, G_N_ELEMENTS(needed), col, error)) {
    csv_clear(csv);
    return FALSE;
  }
  *columns = (RequestColumns){sizes, col[0], col[1], col[2]};
  return csv_read_rows(csv, request_row_ok, columns, error);
}

/* The columns of a run's timeline.csv a row is read by (-1: not read), and the run's
 * summary.json. */
typedef struct {
  const RunSizes *sizes;
  gint gpu, tenant;
  gint numbers[16]; /* the columns of numbers read, -1 after the last */
} TimelineColumns;

/* GPU is one of those SIZES' run has without a tenant (summary.json's idle_gpus). */
static gboolean idle_gpu(const RunSizes *sizes, double gpu) {
  return gpu < sizes->idle_region->len &&
         !isnan(g_array_index(sizes->idle_region, double, (guint) gpu));
}

/* A row of timeline.csv: every number read a number (time_s and last_step_ms times, the rest
 * counts), and its GPU one of its tenant's (summary.json's gpu and tp) or, where its tenant is
 * empty, one of the run's GPUs without a tenant (summary.json's idle_gpus). */
static gboolean timeline_row_ok(const EmaCsv *table, gpointer data, GError **error) {
  const TimelineColumns *columns = data;
  const char *tenant = table->fields[columns->tenant];
  const gint64 *range;
  double gpu;
  for (guint i = 0; columns->numbers[i] >= 0; i++) {
    const char *name = table->header[columns->numbers[i]];
    gboolean time = strcmp(name, "time_s") == 0 || strcmp(name, "last_step_ms") == 0;
    if (!cell_number(table, columns->numbers[i], !time, FALSE, NULL, error))
      return FALSE;
  }
  if (!cell_number(table, columns->gpu, TRUE, FALSE, &gpu, error))
    return FALSE;
  if (tenant[0] == '\0') {
    g_autoptr(GPtrArray) idle = g_ptr_array_new_with_free_func(g_free);
    g_autofree char *known = NULL;
    if (idle_gpu(columns->sizes, gpu))
      return TRUE;
    for (guint g = 0; g < columns->sizes->idle_region->len; g++)
      if (idle_gpu(columns->sizes, g))
        g_ptr_array_add(idle, g_strdup_printf("%u", g));
    known = joined(idle, "none");
    cell_error(error, table, (guint) columns->gpu,
               "gpu %.0f has no tenant here, and is not one of the run's GPUs without one (%s: "
               "idle_gpus: %s)",
               gpu, columns->sizes->path, known);
    return FALSE;
  }
  if (!tenant_known(table, (guint) columns->tenant, columns->sizes, tenant, error))
    return FALSE;
  range = g_hash_table_lookup(columns->sizes->gpus, tenant);
  if (range && (gpu < (double) range[0] || gpu >= (double) (range[0] + range[1]))) {
    g_autofree char *its = range[1] > 1
                               ? g_strdup_printf("gpus %" G_GINT64_FORMAT "-%" G_GINT64_FORMAT,
                                                 range[0], range[0] + range[1] - 1)
                               : g_strdup_printf("gpu %" G_GINT64_FORMAT, range[0]);
    g_autofree char *quoted = ema_file_quote_cut(tenant, -1);
    cell_error(error, table, (guint) columns->gpu, "gpu %.0f is not one of tenant %s's (%s: %s)",
               gpu, quoted, columns->sizes->path, its);
    return FALSE;
  }
  return TRUE;
}

/* The timeline.csv at PATH of the run SIZES describes, read into CSV with the columns NEEDED
 * (N names, "gpu" and "tenant" among them) into COL, every row checked (timeline_row_ok). */
static gboolean read_timeline(const char *path, const RunSizes *sizes, const char *const *needed,
                              guint n, gint *col, Csv *csv, GError **error) {
  TimelineColumns columns = {sizes, -1, -1, {0}};
  guint numbers = 0;
  g_return_val_if_fail(n < G_N_ELEMENTS(columns.numbers), FALSE);
  if (!csv_open(path, csv, error))
    return FALSE;
  if (!csv_columns(csv, needed, n, col, error)) {
    csv_clear(csv);
    return FALSE;
  }
  for (guint i = 0; i < n; i++)
    if (strcmp(needed[i], "gpu") == 0)
      columns.gpu = col[i];
    else if (strcmp(needed[i], "tenant") == 0)
      columns.tenant = col[i];
    else
      columns.numbers[numbers++] = col[i];
  columns.numbers[numbers] = -1;
  g_return_val_if_fail(columns.gpu >= 0 && columns.tenant >= 0, FALSE);
  return csv_read_rows(csv, timeline_row_ok, &columns, error);
}

/* SIZES: the run's (summary.json: its tenants in the experiment's order); ONLY: the tenants drawn
 * (tenant_drawn). */
static gboolean plot_requests(const char *dir, const char *plots, const char *title,
                              const RunSizes *sizes, const char *only, GString *driver,
                              GPtrArray *figures, GError **error) {
  g_autofree char *path = g_build_filename(dir, "requests.csv", NULL);
  g_autoptr(GPtrArray) tenants = g_ptr_array_new_with_free_func(g_free);
  g_autoptr(GPtrArray) ttft = g_ptr_array_new_with_free_func((GDestroyNotify) g_array_unref);
  g_autoptr(GPtrArray) tpot = g_ptr_array_new_with_free_func((GDestroyNotify) g_array_unref);
  g_autoptr(GString) ttft_data = NULL, tpot_data = NULL;
  Csv csv = {0};
  RequestColumns col;
  guint n = 0, n_tpot = 0;
  if (!read_requests(path, sizes, &csv, &col, error))
    return FALSE;
  for (guint t = 0; t < sizes->order->len; t++) {
    if (!tenant_drawn(only, sizes->order->pdata[t]))
      continue;
    g_ptr_array_add(tenants, g_strdup(sizes->order->pdata[t]));
    g_ptr_array_add(ttft, g_array_new(FALSE, FALSE, sizeof(double)));
    g_ptr_array_add(tpot, g_array_new(FALSE, FALSE, sizeof(double)));
  }
  for (guint r = 0; r < csv.rows->len; r++) {
    GPtrArray *row = csv.rows->pdata[r];
    const char *tenant = csv_cell(row, col.tenant);
    guint t;
    double value;
    /* (every row's tenant is one of the run's: request_row_ok) */
    for (t = 0; t < tenants->len; t++)
      if (strcmp(tenants->pdata[t], tenant) == 0)
        break;
    if (t == tenants->len)
      continue; /* not drawn */
    if (parse_number(csv_cell(row, col.ttft), &value) && value > 0) {
      g_array_append_val(ttft->pdata[t], value);
      n++;
    }
    if (parse_number(csv_cell(row, col.tpot), &value) && value > 0)
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
 * ONLY names tenants: one that never lent has nothing to draw. SIZES: read_kv_sizes'. */
static gboolean plot_timeline(const char *dir, const char *plots, const char *title,
                              const RunSizes *sizes, const char *only, GString *driver,
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
  const GArray *idle_region = sizes->idle_region;
  guint samples = 0, stride = 1;
  gboolean ok = FALSE;
  if (!read_timeline(path, sizes, needed, G_N_ELEMENTS(needed), col, &csv, error))
    return FALSE;
  /* one series per GPU, in GPU order (every row's GPU one of its tenant's: timeline_row_ok) */
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
    block = g_hash_table_lookup(sizes->block_bytes, csv_cell(row, col[2]));
    region = g_hash_table_lookup(sizes->region_bytes, csv_cell(row, col[2]));
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

/* A row of frontier.csv (COLS: plot_frontier's columns): a batch and a context (whole), and the
 * two shares. */
static gboolean frontier_row_ok(const EmaCsv *table, gpointer data, GError **error) {
  const gint *cols = data;
  for (guint k = 1; k < 5; k++)
    if (!cell_number(table, cols[k], k <= 2, FALSE, NULL, error))
      return FALSE;
  return TRUE;
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
  if (!csv_open(path, &csv, error))
    return FALSE;
  if (!csv_columns(&csv, needed, G_N_ELEMENTS(needed), col, error) ||
      !csv_read_rows(&csv, frontier_row_ok, col, error))
    goto out;
  for (guint r = 0; r < csv.rows->len; r++) {
    GPtrArray *row = csv.rows->pdata[r];
    const char *server = csv_cell(row, col[0]);
    double v[4] = {0};
    for (guint k = 0; k < 4; k++)
      parse_number(csv_cell(row, col[k + 1]), &v[k]); /* (frontier_row_ok) */
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
 * variant's timeline.csv (its run: SIZES), as one data block (tokens/s per sample: *BIN the
 * sample period, s; *POINTS += its points: none in a run shorter than its
 * sample period); FALSE on a read error, or a row read_timeline refuses. */
static gboolean compare_timeline(const char *dir, const RunSizes *sizes, const char *borrower,
                                 GString *out, double *bin, guint *points, GError **error) {
  /* the first five read; the others checked as the variant's own figures will read them, so
   * that a row they refuse is refused before the comparison's figure is drawn */
  static const char *const needed[] = {
      "time_s",         "gpu",     "tenant",       "tokens",      "slices_borrowed",
      "kv_blocks_used", "running", "last_step_ms", "slices_lent", "kv_blocks_remote",
      "slices_staging"};
  g_autofree char *path = g_build_filename(dir, "timeline.csv", NULL);
  gint col[G_N_ELEMENTS(needed)];
  Csv csv = {0};
  double previous = NAN;
  guint rows = 0;
  if (!read_timeline(path, sizes, needed, G_N_ELEMENTS(needed), col, &csv, error))
    return FALSE;
  for (guint r = 0; r < csv.rows->len; r++) {
    GPtrArray *row = csv.rows->pdata[r];
    double t, tokens, borrowed;
    if (strcmp(csv_cell(row, col[2]), borrower) != 0 || !parse_number(csv_cell(row, col[0]), &t) ||
        !parse_number(csv_cell(row, col[3]), &tokens) ||
        !parse_number(csv_cell(row, col[4]), &borrowed))
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
  csv_clear(&csv);
  return TRUE;
}

/* The TTFTs of one variant's requests.csv (its run: SIZES): the borrower's into MINE, every
 * other tenant's into LENDERS. */
static gboolean compare_ttfts(const char *dir, const RunSizes *sizes, const char *borrower,
                              GArray *mine, GArray *lenders, GError **error) {
  g_autofree char *path = g_build_filename(dir, "requests.csv", NULL);
  Csv csv = {0};
  RequestColumns col;
  if (!g_file_test(path, G_FILE_TEST_IS_REGULAR))
    return TRUE; /* requests_csv: false */
  if (!read_requests(path, sizes, &csv, &col, error))
    return FALSE;
  for (guint r = 0; r < csv.rows->len; r++) {
    GPtrArray *row = csv.rows->pdata[r];
    double value;
    if (parse_number(csv_cell(row, col.ttft), &value) && value > 0)
      g_array_append_val(strcmp(csv_cell(row, col.tenant), borrower) == 0 ? mine : lenders, value);
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
      /* a variant's own folder, as ema_compare_run names it (nothing outside DIR), once (a
       * folder named twice is drawn once: ema_plot_dirs draws each folder once) */
      if (*name && !strchr(name, '/') && strcmp(name, "..") != 0 && strcmp(name, ".") != 0 &&
          !g_ptr_array_find_with_equal_func(dirs, name, g_str_equal, NULL))
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

static void run_sizes_free(RunSizes *sizes) {
  run_sizes_clear(sizes);
  g_free(sizes);
}

/* The columns of compare.csv a row is read by (repeat: -1 where it has none), and what its rows
 * so far gave. */
typedef struct {
  const char *dir; /* the comparison's */
  gint variant, dir_col, borrower, repeat;
  char *borrower_name; /* the first row's */
  GPtrArray *runs;     /* RunSizes *: the summary.json of each row of the first repeat */
} CompareColumns;

/* A row of compare.csv: its dir a folder of the comparison's own, its repeat whole, its borrower
 * the first row's and, in a run of the first repeat (the one drawn), one of its tenants. */
static gboolean compare_row_ok(const EmaCsv *table, gpointer data, GError **error) {
  CompareColumns *columns = data;
  const char *sub = table->fields[columns->dir_col];
  const char *borrower = table->fields[columns->borrower];
  g_autofree char *variant_dir = NULL;
  RunSizes *run;
  double repeat = 0;
  /* a variant's own folder, as ema_compare_run names it (nothing outside the comparison's) */
  if (sub[0] == '\0' || strchr(sub, '/') || strcmp(sub, "..") == 0 || strcmp(sub, ".") == 0) {
    g_autofree char *quoted = ema_file_quote_cut(sub, -1);
    cell_error(error, table, (guint) columns->dir_col,
               "'%s' is not a variant's folder (a name in %s)", quoted, columns->dir);
    return FALSE;
  }
  if (columns->repeat >= 0 && !cell_number(table, columns->repeat, TRUE, FALSE, &repeat, error))
    return FALSE;
  if (!same_as_first(table, (guint) columns->borrower, "borrower", borrower,
                     &columns->borrower_name, error))
    return FALSE;
  if (repeat != 0)
    return TRUE; /* with repeats, the first repeat's run of each variant is drawn */
  variant_dir = g_build_filename(columns->dir, sub, NULL);
  run = g_new0(RunSizes, 1);
  g_ptr_array_add(columns->runs, run);
  if (!read_kv_sizes(variant_dir, run, error))
    return FALSE;
  if (!g_hash_table_contains(run->region_bytes, borrower)) {
    g_autofree char *known = joined(run->order, "none");
    g_autofree char *quoted = ema_file_quote_cut(borrower, -1);
    cell_error(error, table, (guint) columns->borrower, "no tenant '%s' in %s (its tenants: %s)",
               quoted, run->path, known);
    return FALSE;
  }
  return TRUE;
}

static gboolean plot_compare(const char *dir, const char *plots, const char *title, GString *driver,
                             GPtrArray *figures, GError **error) {
  static const char *const needed[] = {"variant", "dir", "borrower"};
  g_autofree char *path = g_build_filename(dir, "compare.csv", NULL);
  g_autoptr(GPtrArray) variants = g_ptr_array_new_with_free_func(g_free);
  g_autoptr(GPtrArray) mine = g_ptr_array_new_with_free_func((GDestroyNotify) g_array_unref);
  g_autoptr(GPtrArray) lenders = g_ptr_array_new_with_free_func((GDestroyNotify) g_array_unref);
  g_autoptr(GPtrArray) runs = g_ptr_array_new_with_free_func((GDestroyNotify) run_sizes_free);
  g_autoptr(GString) timeline = g_string_new(
      "# per variant: time_s, the borrower's output tokens/s, the GiB it had borrowed\n");
  g_autoptr(GString) mine_data = NULL, lenders_data = NULL;
  CompareColumns columns = {dir, -1, -1, -1, -1, NULL, runs};
  gint col[G_N_ELEMENTS(needed)];
  Csv csv = {0};
  double bin = NAN;
  guint timeline_points = 0;
  gboolean ok = FALSE;
  if (!csv_open(path, &csv, error))
    return FALSE;
  if (!csv_columns(&csv, needed, G_N_ELEMENTS(needed), col, error) ||
      !csv_find(&csv, "repeat", &columns.repeat, error))
    goto out;
  columns.variant = col[0];
  columns.dir_col = col[1];
  columns.borrower = col[2];
  if (!csv_read_rows(&csv, compare_row_ok, &columns, error))
    goto out;
  if (csv.rows->len == 0) {
    g_set_error(error, G_FILE_ERROR, G_FILE_ERROR_INVAL,
                "%s: no rows with variant, dir and borrower", path);
    goto out;
  }
  for (guint r = 0; r < csv.rows->len; r++) {
    GPtrArray *row = csv.rows->pdata[r];
    g_autofree char *variant_dir = NULL;
    double repeat = 0;
    const RunSizes *run;
    /* with repeats, the first repeat's run of each variant (compare_row_ok read its summary) */
    if (columns.repeat >= 0 && parse_number(csv_cell(row, columns.repeat), &repeat) && repeat != 0)
      continue;
    run = runs->pdata[variants->len];
    variant_dir = g_build_filename(dir, csv_cell(row, columns.dir_col), NULL);
    g_string_append_printf(timeline, "%s# %s\n", variants->len ? "\n\n" : "",
                           csv_cell(row, columns.variant));
    g_ptr_array_add(variants, g_strdup(csv_cell(row, columns.variant)));
    g_ptr_array_add(mine, g_array_new(FALSE, FALSE, sizeof(double)));
    g_ptr_array_add(lenders, g_array_new(FALSE, FALSE, sizeof(double)));
    if (!compare_timeline(variant_dir, run, columns.borrower_name, timeline, &bin, &timeline_points,
                          error) ||
        !compare_ttfts(variant_dir, run, columns.borrower_name, mine->pdata[variants->len - 1],
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
  gp_set(driver, "borrower", columns.borrower_name);
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
  g_free(columns.borrower_name);
  csv_clear(&csv);
  return ok;
}

/* The columns of compare-paired.csv a row is read by, what compare.csv says, and what the rows
 * so far gave. */
typedef struct {
  gint cols[7];        /* plot_compare_change's names */
  GPtrArray *variants; /* compare.csv's */
  GPtrArray *paired;   /* compare.csv's paired metrics (METRIC_vs_baseline_pct) */
  char *baseline;      /* the first row's */
} PairedColumns;

/* Whether NAME is one of NAMES (char *); else an error at cell INDEX of TABLE's row that no
 * WHAT of compare.csv is NAME, naming them. */
static gboolean compare_name(const EmaCsv *table, gint index, GPtrArray *names, const char *what,
                             const char *name, GError **error) {
  g_autofree char *known = NULL;
  if (g_ptr_array_find_with_equal_func(names, name, g_str_equal, NULL))
    return TRUE;
  g_autofree char *quoted = ema_file_quote_cut(name, -1);
  known = joined(names, "none");
  cell_error(error, table, (guint) index, "no %s '%s' in compare.csv (%ss: %s)", what, quoted, what,
             known);
  return FALSE;
}

/* A row of compare-paired.csv: a variant of compare.csv's against its baseline (the first row's,
 * another variant), a metric compare.csv pairs, whole repeats, and the change and its interval
 * numbers or empty (undefined). */
static gboolean paired_row_ok(const EmaCsv *table, gpointer data, GError **error) {
  PairedColumns *columns = data;
  const gint *cols = columns->cols;
  const char *variant = table->fields[cols[0]], *baseline = table->fields[cols[1]];
  if (!compare_name(table, cols[0], columns->variants, "variant", variant, error) ||
      !compare_name(table, cols[1], columns->variants, "variant", baseline, error) ||
      !compare_name(table, cols[2], columns->paired, "paired metric", table->fields[cols[2]],
                    error))
    return FALSE;
  if (!same_as_first(table, (guint) cols[1], "baseline", baseline, &columns->baseline, error))
    return FALSE;
  if (strcmp(variant, baseline) == 0) {
    g_autofree char *quoted = ema_file_quote_cut(variant, -1);
    cell_error(error, table, (guint) cols[0], "'%s' is the baseline itself", quoted);
    return FALSE;
  }
  if (!cell_number(table, cols[3], TRUE, FALSE, NULL, error))
    return FALSE;
  for (guint c = 4; c < 7; c++)
    if (!cell_signed(table, (guint) cols[c], error))
      return FALSE;
  return TRUE;
}

/* compare.csv's variants (each once, in order) and paired metrics (its columns
 * METRIC_vs_baseline_pct) into VARIANTS and PAIRED (char *, owned). */
static gboolean compare_names(const char *dir, GPtrArray *variants, GPtrArray *paired,
                              GError **error) {
  g_autofree char *path = g_build_filename(dir, "compare.csv", NULL);
  static const char suffix[] = "_vs_baseline_pct";
  Csv csv = {0};
  gint variant;
  if (!csv_read(path, &csv, error))
    return FALSE;
  if (!csv_find(&csv, "variant", &variant, error)) {
    csv_clear(&csv);
    return FALSE;
  }
  for (guint r = 0; variant >= 0 && r < csv.rows->len; r++) {
    const char *name = csv_cell(csv.rows->pdata[r], variant);
    if (!g_ptr_array_find_with_equal_func(variants, name, g_str_equal, NULL))
      g_ptr_array_add(variants, g_strdup(name));
  }
  for (guint c = 0; c < csv.header->len; c++) {
    const char *name = csv.header->pdata[c];
    if (g_str_has_suffix(name, suffix))
      g_ptr_array_add(paired, g_strndup(name, strlen(name) - strlen(suffix)));
  }
  csv_clear(&csv);
  return TRUE;
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
  g_autoptr(GPtrArray) known = g_ptr_array_new_with_free_func(g_free);
  g_autoptr(GPtrArray) paired = g_ptr_array_new_with_free_func(g_free);
  PairedColumns columns = {{0}, known, paired, NULL};
  const gint *cols = columns.cols;
  Csv csv = {0};
  gboolean ok = FALSE;
  guint defined = 0; /* changes with a value (none where every baseline figure was 0) */
  G_STATIC_ASSERT(G_N_ELEMENTS(names) == G_N_ELEMENTS(columns.cols));
  if (!compare_names(dir, known, paired, error) || !csv_open(path, &csv, error))
    return FALSE;
  if (!csv_columns(&csv, names, G_N_ELEMENTS(names), columns.cols, error) ||
      !csv_read_rows(&csv, paired_row_ok, &columns, error))
    goto out;
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
  g_free(columns.baseline);
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

/* ---- figures put in place ------------------------------------------------------------------
 * ema_plot_dirs: each folder's figures are drawn into its plots.new, made whole there (gnuplot
 * ran, every figure it was to draw is there); only once every folder's are, they are put in
 * place, every folder or none, by renames of whole folders:
 *   1. what each old plots/ holds under names plots.new has not (figures of an earlier plot under
 *      other names: another --tenant's, the other preset's format) is linked into its plots.new
 *      (copied where the file system makes no link), the old plots/ untouched;
 *   2. each old plots/ is moved aside to plots.old;
 *   3. each plots.new is moved in as plots/;
 * and only then is each plots.old removed. A step that fails (a rename the file system refuses,
 * a plots/ that is no folder, a plots.old in the way) undoes those done before it, in every
 * folder: each plots/ as it was, each plots.new removed. A table refused, gnuplot failing
 * halfway or drawing nothing leaves every plots/ as it was too, and a folder it refuses gets no
 * file. A plot killed midway leaves a plots.new (removed by the next plot, its old plots/
 * untouched) or a plots.old, which the next plot of the folder settles before it draws
 * (plots_recover): put back where no plots/ is (killed before the new one was in), removed
 * beside one (killed after); a plots.old that is not a plots/ of ema-sim's (no plots.gp it
 * made) is never taken for one: refused, left as it is. */

/* The first line of every plots.gp ema-sim writes (plot_into): what tells a plots/ of its own. */
#define PLOTS_DRIVER_HEAD "# Made by ema-sim plot "

/* "cannot WHAT PATH: why" (WHAT: "inspect", "create"...) from errno SAVED; FALSE. */
static gboolean path_error(GError **error, int saved, const char *what, const char *path) {
  g_set_error(error, G_FILE_ERROR, g_file_error_from_errno(saved), "cannot %s %s: %s", what, path,
              g_strerror(saved));
  return FALSE;
}

/* Whether PATH is there (*THERE) and, there, a folder; else an error (a file named plots/ in a
 * folder: the figures go into a folder of that name). */
static gboolean plots_folder(const char *path, gboolean *there, GError **error) {
  GStatBuf st;
  *there = g_lstat(path, &st) == 0;
  if (!*there)
    return errno == ENOENT || path_error(error, errno, "inspect", path);
  if (S_ISDIR(st.st_mode))
    return TRUE;
  g_set_error(error, G_FILE_ERROR, G_FILE_ERROR_NOTDIR,
              "%s is not a folder: move it (the figures go into a folder of that name)", path);
  return FALSE;
}

/* FROM, an entry of an old plots/, made again at TO without changing FROM: a hard link, or
 * where the file system makes none a copy; a folder made anew and its entries so. */
static gboolean carry_entry(const char *from, const char *to, GError **error) {
  GStatBuf st;
  if (g_lstat(from, &st) != 0)
    return path_error(error, errno, "inspect", from);
  if (S_ISDIR(st.st_mode)) {
    g_autoptr(GDir) handle = g_dir_open(from, 0, error);
    const char *entry;
    if (handle == NULL)
      return FALSE;
    if (g_mkdir(to, (int) (st.st_mode & 0777)) != 0)
      return path_error(error, errno, "create", to);
    while ((entry = g_dir_read_name(handle)) != NULL) {
      g_autofree char *inner_from = g_build_filename(from, entry, NULL);
      g_autofree char *inner_to = g_build_filename(to, entry, NULL);
      if (!carry_entry(inner_from, inner_to, error))
        return FALSE;
    }
    return TRUE;
  }
  if (link(from, to) == 0)
    return TRUE;
  if (!S_ISREG(st.st_mode))
    return path_error(error, errno, "link into the new figures", from);
  {
    g_autofree char *bytes = NULL;
    gsize length = 0;
    return g_file_get_contents(from, &bytes, &length, error) &&
           g_file_set_contents(to, bytes, (gssize) length, error);
  }
}

/* Step 1 for one folder: each entry of PLOTS (its old plots/, if any) that BUILT (its
 * plots.new) has no entry of the name for, carried into BUILT. */
static gboolean carry_others(const char *plots, const char *built, GError **error) {
  g_autoptr(GDir) handle = NULL;
  const char *entry;
  gboolean there;
  if (!plots_folder(plots, &there, error))
    return FALSE;
  if (!there)
    return TRUE;
  if ((handle = g_dir_open(plots, 0, error)) == NULL)
    return FALSE;
  while ((entry = g_dir_read_name(handle)) != NULL) {
    g_autofree char *from = g_build_filename(plots, entry, NULL);
    g_autofree char *to = g_build_filename(built, entry, NULL);
    GStatBuf st;
    if (g_lstat(to, &st) == 0)
      continue; /* drawn anew */
    if (!carry_entry(from, to, error))
      return FALSE;
  }
  return TRUE;
}

/* Whether PLOTS_DIR (a plots.old) is a plots/ of ema-sim's: its plots.gp is one plot_into
 * wrote. */
static gboolean plots_own(const char *plots_dir) {
  g_autofree char *driver = g_build_filename(plots_dir, "plots.gp", NULL);
  char head[sizeof PLOTS_DRIVER_HEAD - 1];
  FILE *file = fopen(driver, "rb");
  gboolean own = file != NULL && fread(head, 1, sizeof head, file) == sizeof head &&
                 memcmp(head, PLOTS_DRIVER_HEAD, sizeof head) == 0;
  if (file != NULL)
    fclose(file);
  return own;
}

/* The plots.old of DIR that a plot killed while it put figures in place left, settled before
 * DIR is drawn: with no plots/ beside it, the folder's figures (killed before its new ones
 * were in), put back as plots/; beside a plots/ (the new ones, in before it was killed),
 * removed. One that is not a plots/ of ema-sim's is an error, left as it is. */
static gboolean plots_recover(const char *dir, GError **error) {
  g_autofree char *old = g_build_filename(dir, "plots.old", NULL);
  g_autofree char *plots = g_build_filename(dir, "plots", NULL);
  GStatBuf st;
  gboolean there;
  if (g_lstat(old, &st) != 0)
    return errno == ENOENT || path_error(error, errno, "inspect", old);
  if (!S_ISDIR(st.st_mode) || !plots_own(old)) {
    g_set_error(error, G_FILE_ERROR, G_FILE_ERROR_EXIST,
                "%s is in the way: not figures ema-sim set aside (no plots.gp of its own): move "
                "it",
                old);
    return FALSE;
  }
  if (!plots_folder(plots, &there, error))
    return FALSE;
  if (!there)
    return g_rename(old, plots) == 0 || path_error(error, errno, "put back", old);
  return ema_output_remove_own(old, error);
}

/* FROM renamed TO (HOW: "aside to", "into place as"), or an error naming both. */
static gboolean move(const char *from, const char *how, const char *to, GError **error) {
  int saved;
  if (g_rename(from, to) == 0)
    return TRUE;
  saved = errno;
  g_set_error(error, G_FILE_ERROR, g_file_error_from_errno(saved), "cannot move %s %s %s: %s", from,
              how, to, g_strerror(saved));
  return FALSE;
}

/* Steps 1 to 3 for the N FOLDERS, whose plots.new are BUILT's, as one: TRUE with each old
 * plots/ moved aside to its plots.old (*ASIDE[i]: there was one), which the caller removes;
 * else an error, what was done undone (each plots/ as it was, each plots.new in its place,
 * which the caller removes), the error saying so or what could not be undone. */
static gboolean put_in_place(const EmaPlotFolder *folders, guint n, GPtrArray *built,
                             gboolean *aside, GError **error) {
  g_autoptr(GPtrArray) plots = g_ptr_array_new_with_free_func(g_free);
  g_autoptr(GPtrArray) olds = g_ptr_array_new_with_free_func(g_free);
  g_autoptr(GString) stays = g_string_new(NULL); /* what could not be undone */
  g_autoptr(GError) step = NULL;
  gboolean ok = TRUE;
  guint placed = 0; /* the folders whose plots.new is their plots/ (the first PLACED) */
  for (guint i = 0; i < n; i++) {
    g_ptr_array_add(plots, g_build_filename(folders[i].dir, "plots", NULL));
    g_ptr_array_add(olds, g_build_filename(folders[i].dir, "plots.old", NULL));
    aside[i] = FALSE;
  }
  for (guint i = 0; i < n && ok; i++)
    ok = carry_others(plots->pdata[i], built->pdata[i], &step);
  for (guint i = 0; i < n && ok; i++) {
    gboolean there = FALSE;
    ok = plots_folder(plots->pdata[i], &there, &step) &&
         (!there || move(plots->pdata[i], "aside to", olds->pdata[i], &step));
    aside[i] = ok && there;
  }
  for (guint i = 0; i < n && ok; i++)
    if ((ok = move(built->pdata[i], "into place as", plots->pdata[i], &step)))
      placed = i + 1;
  if (ok)
    return TRUE;
  /* undone, last first: each plots/ moved in back to its plots.new (else removed), then each
   * old one back */
  for (guint i = placed; i-- > 0;)
    if (g_rename(plots->pdata[i], built->pdata[i]) != 0 &&
        !ema_output_remove_own(plots->pdata[i], NULL))
      g_string_append_printf(stays, "%s%s", stays->len ? ", " : "", (char *) plots->pdata[i]);
  for (guint i = n; i-- > 0;)
    if (aside[i] && g_rename(olds->pdata[i], plots->pdata[i]) != 0)
      g_string_append_printf(stays, "%s%s", stays->len ? ", " : "", (char *) olds->pdata[i]);
  if (stays->len)
    g_set_error(error, step->domain, step->code,
                "%s (and could not undo the folders done before: %s stays, settled by the next "
                "plot of its folder)",
                step->message, stays->str);
  else
    g_set_error(error, step->domain, step->code, "%s (every plots/ is as it was)", step->message);
  return FALSE;
}

static gboolean plot_into(const char *dir, const char *plots, const char *gnuplot,
                          const EmaPlotOptions *options, GPtrArray *figures, gboolean *made,
                          GError **error);

gboolean ema_plot_dirs(const EmaPlotFolder *folders, guint n, const char *gnuplot, GError **error) {
  g_autoptr(GPtrArray) building = g_ptr_array_new_with_free_func(g_free); /* each's plots.new */
  g_autoptr(GPtrArray) drawn = g_ptr_array_new_with_free_func((GDestroyNotify) g_ptr_array_unref);
  g_autofree gboolean *aside = g_new0(gboolean, n);
  GError *local = NULL;
  gboolean ok = TRUE;
  guint made = 0; /* the folders whose plots.new this made (the first MADE) */
  for (guint i = 0; i < n && ok; i++) {
    gboolean began = FALSE;
    g_ptr_array_add(building, g_build_filename(folders[i].dir, "plots.new", NULL));
    g_ptr_array_add(drawn, g_ptr_array_new_with_free_func(g_free));
    ok = plot_into(folders[i].dir, building->pdata[i], gnuplot, &folders[i].options,
                   drawn->pdata[i], &began, &local);
    if (began)
      made = i + 1;
  }
  if (ok)
    ok = put_in_place(folders, n, building, aside, &local);
  if (!ok) {
    for (guint i = 0; i < made; i++)
      (void) ema_output_remove_own(building->pdata[i], NULL);
    g_propagate_error(error, local);
    return FALSE;
  }
  /* every folder's figures in place: the old ones go (one that stays is removed by the next
   * plot of its folder, plots_recover) */
  for (guint i = 0; i < n; i++)
    if (aside[i]) {
      g_autofree char *old = g_build_filename(folders[i].dir, "plots.old", NULL);
      (void) ema_output_remove_own(old, NULL);
    }
  for (guint i = 0; i < n; i++)
    if (folders[i].figures) /* (the names moved: DRAWN's list left empty) */
      g_ptr_array_extend_and_steal(folders[i].figures, g_ptr_array_ref(drawn->pdata[i]));
  return TRUE;
}

gboolean ema_plot_dir(const char *dir, const char *gnuplot, const EmaPlotOptions *options,
                      GPtrArray *figures, GError **error) {
  EmaPlotFolder folder = {dir, {0}, figures};
  if (options)
    folder.options = *options;
  return ema_plot_dirs(&folder, 1, gnuplot, error);
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
  /* a results folder's: one an earlier plot left, killed while it drew, goes; so does (or
   * comes back) a plots.old of one killed while it put figures in place */
  if (!plots_recover(dir, error) || !ema_output_remove_own(plots, error))
    return FALSE;
  *made = TRUE;
  if (g_mkdir_with_parents(plots, 0777) != 0) {
    int saved = errno;
    g_set_error(error, G_FILE_ERROR, g_file_error_from_errno(saved), "cannot create %s: %s", plots,
                g_strerror(saved));
    return FALSE;
  }
  g_string_append_printf(driver,
                         PLOTS_DRIVER_HEAD
                         "%s: `gnuplot plots.gp` in this folder draws the\n"
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
        !plot_requests(dir, plots, title, &sizes, settings.tenant, driver, drawn, error))
      goto out;
    if (g_file_test(timeline, G_FILE_TEST_IS_REGULAR) &&
        !plot_timeline(dir, plots, title, &sizes, settings.tenant, driver, drawn, error))
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
