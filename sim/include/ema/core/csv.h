/* csv.h: a small reader of comma-separated tables with a header row, for
 * the operator profiles (hwmodels/profiles, hwmodels/profiles/README.md) and the measured
 * tables the step model is checked against. Errors are EMA_CONFIG_ERROR
 * with "file:line: " (line 1 the header). */
#pragma once

#include <glib.h>

G_BEGIN_DECLS

typedef struct {
  const char *file; /* interned */
  char *text;
  GStrv lines;
  GStrv header;
  guint line;   /* 1-based number of the current row */
  GStrv fields; /* the current row */
} EmaCsv;

/* Read PATH and its header row (EMA_CONFIG_ERROR_IO when unreadable). */
gboolean ema_csv_open(EmaCsv *csv, const char *path, GError **error);
/* Advance to the next non-empty row: TRUE, or FALSE at the end (ERROR
 * unset) or on a row of another field count than the header's (ERROR set). */
gboolean ema_csv_next(EmaCsv *csv, GError **error);
/* Index of column NAME ("file:1: no column 'NAME'"). */
gboolean ema_csv_column(const EmaCsv *csv, const char *name, guint *index, GError **error);
/* Indices of every column of NAMES (NULL-terminated). */
gboolean ema_csv_columns(const EmaCsv *csv, const char *const *names, guint *index, GError **error);
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
