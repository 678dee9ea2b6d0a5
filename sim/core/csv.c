/* csv.c: the one CSV splitter (in place, RFC 4180 quotes) and the table
 * reader on it (csv.h): a header row, then rows of as many fields (blank
 * lines skipped, fields trimmed). Errors carry "file:line:col: ".
 *
 * Invariants: after a TRUE ema_csv_next() the current row has exactly as
 * many fields as the header; line is the 1-based line of that row and
 * columns[i] the 1-based column where its field i begins. */
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

static gboolean is_blank(char c) {
  return c == ' ' || c == '\t';
}

int ema_csv_split(char *line, gsize len, EmaCsvField *fields, const char **problem, gsize *at) {
  gsize i = 0;
  int n = 0;

  for (;;) {
    if (n == EMA_CSV_MAX_FIELDS) {
      *problem = "too many fields";
      *at = i;
      return -1;
    }
    while (i < len && is_blank(line[i]))
      i++;
    char *begin = line + i;
    gsize flen, start = i;
    if (i < len && line[i] == '"') {
      /* quoted: unescape "" in place */
      char *w = line + i;
      gboolean closed = FALSE;
      i++;
      while (i < len) {
        if (line[i] == '"') {
          if (i + 1 < len && line[i + 1] == '"') {
            *w++ = '"';
            i += 2;
            continue;
          }
          i++;
          closed = TRUE;
          break;
        }
        *w++ = line[i++];
      }
      if (!closed) {
        *problem = "unterminated quoted field";
        *at = start;
        return -1;
      }
      flen = (gsize) (w - begin);
      while (i < len && is_blank(line[i]))
        i++;
      if (i < len && line[i] != ',') {
        *problem = "text after a quoted field";
        *at = i;
        return -1;
      }
    } else {
      while (i < len && line[i] != ',')
        i++;
      flen = (gsize) (line + i - begin);
      while (flen > 0 && is_blank(begin[flen - 1]))
        flen--;
    }
    fields[n].p = begin;
    fields[n].len = flen;
    fields[n].at = start;
    n++;
    if (i >= len) {
      begin[flen] = '\0';
      return n;
    }
    /* line[i] == ','; terminating the field may overwrite that comma */
    i++;
    begin[flen] = '\0';
  }
}

/* TRUE if LINE holds only spaces and tabs (or nothing) */
static gboolean is_blank_line(const char *line) {
  return line[strspn(line, " \t")] == '\0';
}

/* LINE (the CSV's line LINE_NO) split into *OUT and the columns of its
 * fields; FALSE with "file:line:col: problem". */
static gboolean split_row(const EmaCsv *csv, char *line, guint line_no, GStrv *out, guint *columns,
                          GError **error) {
  EmaCsvField fields[EMA_CSV_MAX_FIELDS];
  const char *problem = NULL;
  gsize at = 0;
  int n = ema_csv_split(line, strlen(line), fields, &problem, &at);
  if (n < 0) {
    g_set_error(error, EMA_CONFIG_ERROR, EMA_CONFIG_ERROR_SYNTAX, "%s:%u:%" G_GSIZE_FORMAT ": %s",
                csv->file, line_no, at + 1, problem);
    return FALSE;
  }
  *out = g_new(char *, n + 1);
  for (int i = 0; i < n; i++) {
    (*out)[i] = g_strndup(fields[i].p, fields[i].len);
    if (columns)
      columns[i] = (guint) fields[i].at + 1;
  }
  (*out)[n] = NULL;
  return TRUE;
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
  if (!csv->lines[0] || is_blank_line(g_strchomp(csv->lines[0]))) {
    g_set_error(error, EMA_CONFIG_ERROR, EMA_CONFIG_ERROR_SYNTAX, "%s:1:1: no header row", path);
    return FALSE;
  }
  csv->line = 1;
  return split_row(csv, csv->lines[0], 1, &csv->header, NULL, error);
}

/* Advance to the next non-empty row: TRUE, or FALSE at the end or on a row
 * whose field count differs from the header's (ERROR set). */
gboolean ema_csv_next(EmaCsv *csv, GError **error) {
  g_clear_pointer(&csv->fields, g_strfreev);
  while (csv->lines[csv->line]) {
    char *row = g_strchomp(csv->lines[csv->line++]);
    if (is_blank_line(row))
      continue;
    guint n, want = g_strv_length(csv->header), end = (guint) strlen(row) + 1;
    if (!split_row(csv, row, csv->line, &csv->fields, csv->columns, error))
      return FALSE;
    n = g_strv_length(csv->fields);
    if (n != want) {
      /* where the row goes wrong: its first extra field, or its end */
      guint col = n > want ? csv->columns[want] : end;
      g_set_error(error, EMA_CONFIG_ERROR, EMA_CONFIG_ERROR_SYNTAX,
                  "%s:%u:%u: %u field%s where the header has %u", csv->file, csv->line, col, n,
                  n == 1 ? "" : "s", want);
      g_clear_pointer(&csv->fields, g_strfreev);
      return FALSE;
    }
    return TRUE;
  }
  return FALSE;
}

guint ema_csv_field_column(const EmaCsv *csv, guint index) {
  return csv->fields && index < g_strv_length(csv->fields) ? csv->columns[index] : 1;
}

gboolean ema_csv_column(const EmaCsv *csv, const char *name, guint *index, GError **error) {
  for (guint i = 0; csv->header[i]; i++)
    if (strcmp(csv->header[i], name) == 0) {
      *index = i;
      return TRUE;
    }
  g_set_error(error, EMA_CONFIG_ERROR, EMA_CONFIG_ERROR_KEY, "%s:1:1: no column '%s'", csv->file,
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
                "%s:%u:%u: column '%s': '%s' is not a %s %s", csv->file, csv->line,
                ema_csv_field_column(csv, index), csv->header[index], text,
                zero_ok ? "non-negative" : "positive", integer ? "integer" : "number");
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
