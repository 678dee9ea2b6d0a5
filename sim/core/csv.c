/* csv.c: the one CSV splitter (in place, RFC 4180 quotes) and the table
 * reader on it (csv.h): a header row, then rows of as many fields (blank
 * lines skipped, fields trimmed). Errors carry "file:line:col: ".
 *
 * Invariants: after a TRUE ema_csv_next() the current row has exactly as
 * many fields as the header; line is the 1-based line of that row and
 * columns[i] the 1-based column where its field i begins. */
#include "ema/core/csv.h"

#include <float.h>
#include <math.h>
#include <string.h>

#include "ema/core/file.h"
#include "ema/core/node.h"

void ema_csv_clear(EmaCsv *csv) {
  g_free(csv->text);
  g_strfreev(csv->header);
  g_free(csv->row);
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

/* LINE (the CSV's line LINE_NO) split in place into OUT (NULL-terminated,
 * room for EMA_CSV_MAX_FIELDS + 1 pointers) and the columns of its fields;
 * the field count, or -1 with "file:line:col: problem". */
static int split_row(const EmaCsv *csv, char *line, guint line_no, char **out, guint *columns,
                     GError **error) {
  EmaCsvField fields[EMA_CSV_MAX_FIELDS];
  const char *problem = NULL;
  gsize at = 0;
  int n = ema_csv_split(line, strlen(line), fields, &problem, &at);
  if (n < 0) {
    g_set_error(error, EMA_CONFIG_ERROR, EMA_CONFIG_ERROR_SYNTAX, "%s:%u:%" G_GSIZE_FORMAT ": %s",
                csv->file, line_no, at + 1, problem);
    return -1;
  }
  for (int i = 0; i < n; i++) {
    out[i] = fields[i].p;
    if (columns)
      columns[i] = (guint) fields[i].at + 1;
  }
  out[n] = NULL;
  return n;
}

/* The next line of the text (its newline cut), or NULL at the end. */
static char *next_line(EmaCsv *csv) {
  char *line = csv->rest, *newline;
  if (!line)
    return NULL;
  newline = strchr(line, '\n');
  if (newline) {
    *newline = '\0';
    csv->rest = newline + 1;
  } else {
    csv->rest = NULL;
  }
  return line;
}

gboolean ema_csv_open(EmaCsv *csv, const char *path, GError **error) {
  return ema_csv_open_max(csv, path, EMA_FILE_MAX_TEXT, error);
}

/* The first NUL byte or carriage return not before a newline of TEXT (LENGTH bytes) as
 * PATH:LINE:COL into ERROR: FALSE (a string stops at a NUL, so its row would read as cut short;
 * lines ended by a CR alone, a classic Mac export, would read as one header and no row); TRUE
 * where there is none. Found by memchr (profile tables run to megabytes), placed only then. */
static gboolean text_ok(const char *path, const char *text, gsize length, GError **error) {
  const char *end = text + length, *bad = memchr(text, '\0', length);
  guint line, col;
  for (const char *cr = memchr(text, '\r', length); cr && (!bad || cr < bad);
       cr = memchr(cr + 1, '\r', (gsize) (end - cr - 1)))
    if (cr + 1 == end || cr[1] != '\n') {
      bad = cr;
      break;
    }
  if (bad == NULL)
    return TRUE;
  ema_file_position(text, bad, &line, &col);
  g_set_error(error, EMA_CONFIG_ERROR, EMA_CONFIG_ERROR_SYNTAX, "%s:%u:%u: %s", path, line, col,
              *bad == '\0' ? "a NUL byte"
                           : "a carriage return (\\r) inside the line: lines must end with \\n "
                             "or \\r\\n");
  return FALSE;
}

gboolean ema_csv_open_max(EmaCsv *csv, const char *path, gsize max_bytes, GError **error) {
  GError *local = NULL;
  gsize length = 0;
  memset(csv, 0, sizeof *csv);
  csv->file = g_intern_string(path);
  if (!ema_file_read_regular(path, max_bytes, &csv->text, &length, &local)) {
    g_set_error_literal(error, EMA_CONFIG_ERROR, EMA_CONFIG_ERROR_IO, local->message);
    g_error_free(local);
    return FALSE;
  }
  if (!text_ok(path, csv->text, length, error))
    return FALSE;
  /* a byte-order mark before the header is skipped: the first column's name is after it */
  csv->rest = csv->text + ema_file_bom_length(csv->text, length);
  csv->row = g_new(char *, EMA_CSV_MAX_FIELDS + 1);
  {
    char *first = next_line(csv);
    int n;
    if (!first || is_blank_line(g_strchomp(first))) {
      g_set_error(error, EMA_CONFIG_ERROR, EMA_CONFIG_ERROR_SYNTAX, "%s:1:1: no header row", path);
      return FALSE;
    }
    csv->line = 1;
    n = split_row(csv, first, 1, csv->row, csv->header_columns, error);
    if (n < 0)
      return FALSE;
    csv->header = g_strdupv(csv->row);
  }
  return TRUE;
}

/* Advance to the next non-empty row: TRUE, or FALSE at the end or on a row
 * whose field count differs from the header's (ERROR set). */
gboolean ema_csv_next(EmaCsv *csv, GError **error) {
  char *row;
  csv->fields = NULL;
  csv->n_fields = 0;
  while ((row = next_line(csv)) != NULL) {
    guint want = g_strv_length(csv->header), end;
    int n;
    csv->line++;
    row = g_strchomp(row);
    if (is_blank_line(row))
      continue;
    end = (guint) strlen(row) + 1;
    n = split_row(csv, row, csv->line, csv->row, csv->columns, error);
    if (n < 0)
      return FALSE;
    if ((guint) n != want) {
      /* where the row goes wrong: its first extra field, or its end */
      guint col = (guint) n > want ? csv->columns[want] : end;
      g_set_error(error, EMA_CONFIG_ERROR, EMA_CONFIG_ERROR_SYNTAX,
                  "%s:%u:%u: %u field%s where the header has %u", csv->file, csv->line, col, n,
                  n == 1 ? "" : "s", want);
      return FALSE;
    }
    csv->fields = csv->row;
    csv->n_fields = (guint) n;
    return TRUE;
  }
  return FALSE;
}

guint ema_csv_field_column(const EmaCsv *csv, guint index) {
  return csv->fields && index < csv->n_fields ? csv->columns[index] : 1;
}

gboolean ema_csv_column(const EmaCsv *csv, const char *name, guint *index, GError **error) {
  for (guint i = 0; csv->header[i]; i++)
    if (strcmp(csv->header[i], name) == 0) {
      /* a name given twice: which column is meant is not for the reader to guess */
      for (guint j = i + 1; csv->header[j]; j++)
        if (strcmp(csv->header[j], name) == 0) {
          g_autofree char *quoted = ema_file_quote_cut(name, -1);
          g_set_error(error, EMA_CONFIG_ERROR, EMA_CONFIG_ERROR_KEY,
                      "%s:1:%u: column '%s' is in the header twice (also at column %u)", csv->file,
                      csv->header_columns[j], quoted, csv->header_columns[i]);
          return FALSE;
        }
      *index = i;
      return TRUE;
    }
  g_autofree char *quoted = ema_file_quote_cut(name, -1);
  g_set_error(error, EMA_CONFIG_ERROR, EMA_CONFIG_ERROR_KEY, "%s:1:1: no column '%s'", csv->file,
              quoted);
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

/* 10^k for k in 0..22: every one exact in a double */
static const double exact_powers_of_ten[] = {1e0,  1e1,  1e2,  1e3,  1e4,  1e5,  1e6,  1e7,
                                             1e8,  1e9,  1e10, 1e11, 1e12, 1e13, 1e14, 1e15,
                                             1e16, 1e17, 1e18, 1e19, 1e20, 1e21, 1e22};

/* Whether TEXT begins with a decimal number: an optional sign, then a digit or a point and a
 * digit, and not "0x" (strtod would read on: "0x10" as 16, "0x1p3" as 8). */
static gboolean decimal_start(const char *text) {
  const char *p = text + (*text == '+' || *text == '-');
  if (p[0] == '0' && (p[1] == 'x' || p[1] == 'X'))
    return FALSE;
  return g_ascii_isdigit(p[0]) || (p[0] == '.' && g_ascii_isdigit(p[1]));
}

double ema_csv_parse_decimal(const char *text, char **end) {
  /* digits[.digits] whose digits make an integer n <= 2^53 with k <= 22 after the point: n and
   * 10^k are exact doubles and IEEE division rounds n / 10^k correctly, so the result is the
   * correctly rounded value of the text, strtod's (Clinger's fast path); any other decimal
   * (a sign, an exponent, more digits) goes to strtod, and what is no decimal (hexadecimal,
   * "inf", "nan", a leading blank, all of which strtod reads) is no number: nothing read */
  const char *p = text;
  guint64 n = 0;
  guint digits = 0, significant = 0, after = 0;
  /* at most 16 significant digits (n < 10^16: no overflow) and 22 after the point */
  while (*p >= '0' && *p <= '9' && significant < 16) {
    n = n * 10 + (guint64) (*p++ - '0');
    digits++;
    significant += n > 0;
  }
  if (*p == '.') {
    p++;
    while (*p >= '0' && *p <= '9' && significant < 16 && after < 22) {
      n = n * 10 + (guint64) (*p++ - '0');
      digits++;
      after++;
      significant += n > 0;
    }
  }
  if (digits > 0 && *p == '\0' && n <= (G_GUINT64_CONSTANT(1) << 53)) {
    *end = (char *) p;
    return (double) n / exact_powers_of_ten[after];
  }
  if (!decimal_start(text)) {
    *end = (char *) text;
    return 0;
  }
  return g_ascii_strtod(text, end);
}

/* The largest integer a field may hold: every whole number up to it is exact in a double, and
 * it converts to any of the callers' integer types without wrapping. */
#define CSV_MAX_INTEGER 9007199254740992.0 /* 2^53 */

/* The field of column INDEX as a number: positive (or zero if ZERO_OK), and whole and at most
 * 2^53 if INTEGER; a number that is not zero is at least DBL_MIN (no subnormal: a time that
 * small divides into infinity). */
gboolean ema_csv_number(const EmaCsv *csv, guint index, gboolean integer, gboolean zero_ok,
                        double *value, GError **error) {
  const char *text = csv->fields[index];
  char *end = NULL;
  double v = ema_csv_parse_decimal(text, &end);
  if (!*text || *end || !isfinite(v) || v < 0 || (v == 0 && !zero_ok) || (v != 0 && v < DBL_MIN) ||
      (integer && (v != floor(v) || v > CSV_MAX_INTEGER))) {
    g_autofree char *quoted = ema_file_quote_cut(text, -1);
    g_set_error(error, EMA_CONFIG_ERROR, EMA_CONFIG_ERROR_TYPE,
                "%s:%u:%u: column '%s': '%s' is not a %s %s", csv->file, csv->line,
                ema_csv_field_column(csv, index), csv->header[index], quoted,
                zero_ok ? "non-negative" : "positive",
                integer ? "integer (of at most 2^53)" : "number");
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
