/* csv.h: the one CSV mechanism of EMA. ema_csv_split() splits a line in
 * place (RFC 4180 quotes, no allocation): the trace readers stream through
 * it. EmaCsv reads a whole table with a header row on top of it: the
 * operator profiles (hwmodels/profiles/README.md), the measured tables the
 * step model is checked against, the figures' inputs and ema-validate's
 * captured traces. Errors are EMA_CONFIG_ERROR with "file:line:col: " (line
 * 1 the header). */
#pragma once

#include <glib.h>

G_BEGIN_DECLS

/* ---- one line -------------------------------------------------------------- */

/* The widest row read: a sweep.csv of EMA's own carries some twenty columns
 * per tenant (159 for eight tenants). */
#define EMA_CSV_MAX_FIELDS 2048

typedef struct {
  char *p; /* into the line; NUL-terminated by the splitter */
  gsize len;
  gsize at; /* 0-based offset in the line where the field begins (its quote, if quoted) */
} EmaCsvField;

/* Split LINE (LEN bytes, no newline) in place on commas: RFC 4180 quotes
 * ("" inside one is a quote; no newline inside), spaces and tabs around a
 * field trimmed. Returns the field count, or -1 with *PROBLEM and *AT (the
 * 0-based offset of the problem in the line) set: more than
 * EMA_CSV_MAX_FIELDS fields, an unterminated quoted field, text after a
 * quoted field. */
int ema_csv_split(char *line, gsize len, EmaCsvField *fields, const char **problem, gsize *at);

/* ---- a table ---------------------------------------------------------------- */

typedef struct {
  const char *file; /* interned */
  char *text;       /* the file; rows are split in place */
  char *rest;       /* the text after the current row (NULL at the end) */
  GStrv header;
  guint header_columns[EMA_CSV_MAX_FIELDS]; /* 1-based column of each of its names */
  guint line;                               /* 1-based number of the current row */
  /* the current row, NULL-terminated: its fields point into text and live until the next
   * ema_csv_next() (copy what is kept) */
  GStrv fields;
  guint n_fields;
  char **row;                        /* the storage fields points to (EMA_CSV_MAX_FIELDS + 1) */
  guint columns[EMA_CSV_MAX_FIELDS]; /* 1-based column of each of its fields */
} EmaCsv;

/* Read PATH and its header row (EMA_CONFIG_ERROR_IO when unreadable). */
gboolean ema_csv_open(EmaCsv *csv, const char *path, GError **error);
/* ema_csv_open() of a file of up to MAX_BYTES (ema_csv_open: EMA_FILE_MAX_TEXT, the limit for
 * configuration text; a captured trace may be larger). */
gboolean ema_csv_open_max(EmaCsv *csv, const char *path, gsize max_bytes, GError **error);
/* Advance to the next non-empty row: TRUE, or FALSE at the end (ERROR
 * unset) or on a row of another field count than the header's (ERROR set). */
gboolean ema_csv_next(EmaCsv *csv, GError **error);
/* The 1-based column (character position) of field INDEX of the current
 * row, for errors. */
guint ema_csv_field_column(const EmaCsv *csv, guint index);
/* Index of column NAME ("file:1:1: no column 'NAME'"). */
gboolean ema_csv_column(const EmaCsv *csv, const char *name, guint *index, GError **error);
/* Indices of every column of NAMES (NULL-terminated). */
gboolean ema_csv_columns(const EmaCsv *csv, const char *const *names, guint *index, GError **error);
/* TEXT as a decimal number, *END past it: exactly what g_ascii_strtod gives (the correctly
 * rounded value), without its cost for a plain decimal of up to 16 digits. Decimal only: a text
 * that does not begin with one (an optional sign, then a digit or a point and a digit), such as
 * hexadecimal "0x10" or "-0X1" (which strtod reads as 16 and -1), "inf", "nan" or a leading
 * blank, reads as no number: 0, *END at TEXT, so a caller's "the whole text is a number" check
 * refuses it in the caller's words. */
double ema_csv_parse_decimal(const char *text, char **end);
/* The current row's field INDEX as a positive number (or zero if ZERO_OK),
 * whole if INTEGER. */
gboolean ema_csv_number(const EmaCsv *csv, guint index, gboolean integer, gboolean zero_ok,
                        double *value, GError **error);
/* The fields INDEX[0..COUNT) into V: all whole but the last; those whose
 * bit is set in ZERO_OK may be 0. */
gboolean ema_csv_numbers(const EmaCsv *csv, const guint *index, guint count, guint zero_ok,
                         double *v, GError **error);
void ema_csv_clear(EmaCsv *csv);

/* Most columns ema_csv_read() looks up. */
#define EMA_CSV_MAX_COLUMNS 16

/* One row of ema_csv_read(): INDEX[i] is the field of its COLUMNS[i]. */
typedef gboolean (*EmaCsvRowFunc)(const EmaCsv *csv, const guint *index, gpointer data,
                                  GError **error);
/* Open PATH, find every column of COLUMNS (NULL-terminated, at most
 * EMA_CSV_MAX_COLUMNS) and call ROW on each row; FALSE at the first error,
 * the file's or ROW's. */
gboolean ema_csv_read(const char *path, const char *const *columns, EmaCsvRowFunc row,
                      gpointer data, GError **error);

G_END_DECLS
