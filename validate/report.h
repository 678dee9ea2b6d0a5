/* report.h: the raw results of a calibration run and their CSV files.
 *
 * A measurement is one named quantity timed over repeats (every sample
 * kept, summarised by stats.h); a derived figure is a number computed from
 * measurements (a ratio, a fitted parameter) with its unit and a sentence
 * saying how. ema_report_write_csv() writes three files into a results
 * directory:
 *
 *   measurements.csv  group,name,src,dst,bytes,repeats,median_us,min_us,
 *                     q1_us,q3_us,max_us,spread_pct,gb_per_s
 *   samples.csv       name,repeat,us          (every timed repeat)
 *   derived.csv       name,value,unit,description
 *
 * gb_per_s is rate_bytes / median (empty when a measurement moves no
 * bytes); spread_pct is the interquartile range over the median. Rows keep
 * the order in which they were added. The files read back
 * (ema_report_read_csv), so a results directory can be derived again
 * without the GPUs (calderive.h). Pure C, no CUDA. */
#pragma once

#include <glib.h>

#include "stats.h"

G_BEGIN_DECLS

typedef struct {
  char *group;          /* peer-copy, host-copy, local, peer-read, latency, vmm, ... */
  char *name;           /* unique within a report */
  char *src, *dst;      /* gpu0, gpu1, host, or "-" */
  guint64 bytes;        /* bytes per repeat (0: not a transfer) */
  double rate_bytes;    /* bytes counted for gb_per_s (a local copy counts read + written) */
  EmaSampleStats stats; /* of the samples, seconds */
  GArray *samples;      /* double, seconds, in the order measured */
} EmaMeasurement;

typedef struct {
  char *name;
  double value;
  char *unit; /* "s", "B/s", "B", "ratio", "fraction", ... */
  char *description;
} EmaDerived;

typedef struct _EmaReport EmaReport;

EmaReport *ema_report_new(void);
void ema_report_free(EmaReport *report);
G_DEFINE_AUTOPTR_CLEANUP_FUNC(EmaReport, ema_report_free)

/* Add a measurement of N samples (seconds, N >= 1); returns it (owned by
 * the report). A name given twice is a programming error. */
const EmaMeasurement *ema_report_add(EmaReport *report, const char *group, const char *name,
                                     const char *src, const char *dst, guint64 bytes,
                                     double rate_bytes, const double *samples, guint n);
/* The measurement NAME, or NULL. */
const EmaMeasurement *ema_report_find(const EmaReport *report, const char *name);
guint ema_report_count(const EmaReport *report);
const EmaMeasurement *ema_report_get(const EmaReport *report, guint index);

/* Add or replace a derived figure. */
void ema_report_add_derived(EmaReport *report, const char *name, double value, const char *unit,
                            const char *description);
const EmaDerived *ema_report_find_derived(const EmaReport *report, const char *name);
guint ema_report_derived_count(const EmaReport *report);
const EmaDerived *ema_report_get_derived(const EmaReport *report, guint index);

/* Write measurements.csv, samples.csv and derived.csv into DIR (created
 * with its parents if missing). Errors: EMA_VALIDATE_ERROR_IO. */
gboolean ema_report_write_csv(const EmaReport *report, const char *dir, GError **error);
/* Write derived.csv alone (DIR must exist). */
gboolean ema_report_write_derived_csv(const EmaReport *report, const char *dir, GError **error);

/* Read the measurements back from DIR/measurements.csv and
 * DIR/samples.csv (derived.csv is not read: it is derived again). The
 * samples give the statistics; rate_bytes is gb_per_s x median. Errors:
 * EMA_VALIDATE_ERROR_IO (a missing file), EMA_VALIDATE_ERROR_DATA
 * ("file:line:col: what is wrong"). */
EmaReport *ema_report_read_csv(const char *dir, GError **error);

/* TRUE when rows under HEADER may be appended to PATH: it is absent, empty, or a regular file
 * whose first line is HEADER (rows of another table, or of another version of this one, are
 * not added to it; a FIFO is not waited on). Errors: EMA_VALIDATE_ERROR_IO,
 * EMA_VALIDATE_ERROR_DATA ("PATH:1:1: ..."). */
gboolean ema_csv_check_append(const char *path, const char *header, GError **error);

/* Append ROW (one CSV line without its newline) to PATH (ema_csv_check_append), writing
 * HEADER first when the file is new or empty. Errors: those of ema_csv_check_append,
 * EMA_VALIDATE_ERROR_IO. */
gboolean ema_csv_append_row(const char *path, const char *header, const char *row, GError **error);

/* TEXT as one CSV field: quoted (with doubled quotes) when it holds a comma,
 * a quote or a line break. Newly allocated. */
char *ema_csv_field(const char *text);

G_END_DECLS
