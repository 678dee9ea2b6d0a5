/* csv.c: reading the comma-separated tables of hwmodels/profiles/README.md and of the
 * public data sets: a header row, then rows of as many fields (blank lines
 * skipped, fields trimmed, no quoting). Errors carry "file:line: ".
 *
 * Invariants: after a TRUE ema_csv_next() the current row has exactly as
 * many fields as the header; line is the 1-based line of that row. */
#include "ema/core/csv.h"

#include <math.h>
#include <string.h>

#include "ema/core/file.h"
#include "ema/core/node.h"

void ema_csv_clear(EmaCsv *csv) {
  g_free(csv->text);
  g_strfreev(csv->lines);
  g_strfreev(csv->header);
  g_strfreev(csv->fields);
  memset(csv, 0, sizeof *csv);
}

static GStrv split_row(const char *line) {
  GStrv fields = g_strsplit(line, ",", -1);
  for (guint i = 0; fields[i]; i++)
    g_strstrip(fields[i]);
  return fields;
}

gboolean ema_csv_open(EmaCsv *csv, const char *path, GError **error) {
  GError *local = NULL;
  memset(csv, 0, sizeof *csv);
  csv->file = g_intern_string(path);
  if (!ema_file_read_regular(path, EMA_FILE_MAX_TEXT, &csv->text, NULL, &local)) {
    g_set_error_literal(error, EMA_CONFIG_ERROR, EMA_CONFIG_ERROR_IO, local->message);
    g_error_free(local);
    return FALSE;
  }
  csv->lines = g_strsplit(csv->text, "\n", -1);
  if (!csv->lines[0] || !*g_strstrip(csv->lines[0])) {
    g_set_error(error, EMA_CONFIG_ERROR, EMA_CONFIG_ERROR_SYNTAX, "%s:1: no header row", path);
    return FALSE;
  }
  csv->header = split_row(csv->lines[0]);
  csv->line = 1;
  return TRUE;
}

/* Advance to the next non-empty row: TRUE, or FALSE at the end or on a row
 * whose field count differs from the header's (ERROR set). */
gboolean ema_csv_next(EmaCsv *csv, GError **error) {
  g_clear_pointer(&csv->fields, g_strfreev);
  while (csv->lines[csv->line]) {
    char *row = g_strstrip(csv->lines[csv->line++]);
    if (!*row)
      continue;
    csv->fields = split_row(row);
    if (g_strv_length(csv->fields) != g_strv_length(csv->header)) {
      g_set_error(error, EMA_CONFIG_ERROR, EMA_CONFIG_ERROR_SYNTAX,
                  "%s:%u: %u fields where the header has %u", csv->file, csv->line,
                  g_strv_length(csv->fields), g_strv_length(csv->header));
      return FALSE;
    }
    return TRUE;
  }
  return FALSE;
}

gboolean ema_csv_column(const EmaCsv *csv, const char *name, guint *index, GError **error) {
  for (guint i = 0; csv->header[i]; i++)
    if (strcmp(csv->header[i], name) == 0) {
      *index = i;
      return TRUE;
    }
  g_set_error(error, EMA_CONFIG_ERROR, EMA_CONFIG_ERROR_KEY, "%s:1: no column '%s'", csv->file,
              name);
  return FALSE;
}

/* Find every column of NAMES (NULL-terminated) into INDEX. */
gboolean ema_csv_columns(const EmaCsv *csv, const char *const *names, guint *index,
                         GError **error) {
  for (guint i = 0; names[i]; i++)
    if (!ema_csv_column(csv, names[i], &index[i], error))
      return FALSE;
  return TRUE;
}

/* The field of column INDEX as a number: positive (or zero if ZERO_OK),
 * and whole if INTEGER. */
gboolean ema_csv_number(const EmaCsv *csv, guint index, gboolean integer, gboolean zero_ok,
                        double *value, GError **error) {
  const char *text = csv->fields[index];
  char *end = NULL;
  double v = g_ascii_strtod(text, &end);
  if (!*text || *end || !isfinite(v) || v < 0 || (v == 0 && !zero_ok) ||
      (integer && v != floor(v))) {
    g_set_error(error, EMA_CONFIG_ERROR, EMA_CONFIG_ERROR_TYPE,
                "%s:%u: column '%s': '%s' is not a %s %s", csv->file, csv->line, csv->header[index],
                text, zero_ok ? "non-negative" : "positive", integer ? "integer" : "number");
    return FALSE;
  }
  *value = v;
  return TRUE;
}

/* Numbers of the columns INDEX into V: all whole but the last, a time;
 * those whose bit is set in ZERO_OK may be 0. */
gboolean ema_csv_numbers(const EmaCsv *csv, const guint *index, guint count, guint zero_ok,
                         double *v, GError **error) {
  for (guint i = 0; i < count; i++)
    if (!ema_csv_number(csv, index[i], i + 1 < count, (zero_ok >> i) & 1, &v[i], error))
      return FALSE;
  return TRUE;
}

gboolean ema_csv_read(const char *path, const char *const *columns, EmaCsvRowFunc row,
                      gpointer data, GError **error) {
  EmaCsv csv;
  guint index[EMA_CSV_MAX_COLUMNS];
  GError *row_error = NULL;
  gboolean ok = FALSE;
  g_return_val_if_fail(g_strv_length((char **) columns) <= EMA_CSV_MAX_COLUMNS, FALSE);
  if (!ema_csv_open(&csv, path, error) || !ema_csv_columns(&csv, columns, index, error))
    goto out;
  while (ema_csv_next(&csv, &row_error))
    if (!row(&csv, index, data, error))
      goto out;
  if (row_error) {
    g_propagate_error(error, row_error);
    goto out;
  }
  ok = TRUE;
out:
  ema_csv_clear(&csv);
  return ok;
}
