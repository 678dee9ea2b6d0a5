/* report.c: measurements, derived figures and their CSV files (report.h).
 * Numbers are printed with g_ascii_formatd-style fixed formats, so the
 * files read the same whatever the locale. */
#include "report.h"

#include <errno.h>
#include <math.h>
#include <stdio.h>
#include <string.h>

#include <glib/gstdio.h>

#include "errors.h"
#include "ema/core/csv.h"
#include "ema/core/file.h"

#define MEASUREMENTS_HEADER                                                                        \
  "group,name,src,dst,bytes,repeats,median_us,min_us,q1_us,q3_us,max_us,spread_pct,gb_per_s"
#define SAMPLES_HEADER "name,repeat,us"

struct _EmaReport {
  GPtrArray *measurements; /* EmaMeasurement *, in the order added */
  GPtrArray *derived;      /* EmaDerived *, in the order added */
};

static void measurement_free(gpointer data) {
  EmaMeasurement *m = data;
  g_free(m->group);
  g_free(m->name);
  g_free(m->src);
  g_free(m->dst);
  g_array_unref(m->samples);
  g_free(m);
}

static void derived_free(gpointer data) {
  EmaDerived *d = data;
  g_free(d->name);
  g_free(d->unit);
  g_free(d->description);
  g_free(d);
}

EmaReport *ema_report_new(void) {
  EmaReport *report = g_new0(EmaReport, 1);
  report->measurements = g_ptr_array_new_with_free_func(measurement_free);
  report->derived = g_ptr_array_new_with_free_func(derived_free);
  return report;
}

void ema_report_free(EmaReport *report) {
  if (report == NULL)
    return;
  g_ptr_array_unref(report->measurements);
  g_ptr_array_unref(report->derived);
  g_free(report);
}

const EmaMeasurement *ema_report_add(EmaReport *report, const char *group, const char *name,
                                     const char *src, const char *dst, guint64 bytes,
                                     double rate_bytes, const double *samples, guint n) {
  EmaMeasurement *m;
  g_return_val_if_fail(report != NULL && name != NULL && samples != NULL && n > 0, NULL);
  g_return_val_if_fail(ema_report_find(report, name) == NULL, NULL);
  m = g_new0(EmaMeasurement, 1);
  m->group = g_strdup(group);
  m->name = g_strdup(name);
  m->src = g_strdup(src ? src : "-");
  m->dst = g_strdup(dst ? dst : "-");
  m->bytes = bytes;
  m->rate_bytes = rate_bytes;
  m->samples = g_array_sized_new(FALSE, FALSE, sizeof(double), n);
  g_array_append_vals(m->samples, samples, n);
  ema_sample_stats(samples, n, &m->stats);
  g_ptr_array_add(report->measurements, m);
  return m;
}

const EmaMeasurement *ema_report_find(const EmaReport *report, const char *name) {
  for (guint i = 0; i < report->measurements->len; i++) {
    const EmaMeasurement *m = report->measurements->pdata[i];
    if (strcmp(m->name, name) == 0)
      return m;
  }
  return NULL;
}

guint ema_report_count(const EmaReport *report) {
  return report->measurements->len;
}

const EmaMeasurement *ema_report_get(const EmaReport *report, guint index) {
  g_return_val_if_fail(index < report->measurements->len, NULL);
  return report->measurements->pdata[index];
}

void ema_report_add_derived(EmaReport *report, const char *name, double value, const char *unit,
                            const char *description) {
  EmaDerived *d = (EmaDerived *) ema_report_find_derived(report, name);
  if (d == NULL) {
    d = g_new0(EmaDerived, 1);
    d->name = g_strdup(name);
    g_ptr_array_add(report->derived, d);
  }
  d->value = value;
  g_free(d->unit);
  d->unit = g_strdup(unit);
  g_free(d->description);
  d->description = g_strdup(description ? description : "");
}

const EmaDerived *ema_report_find_derived(const EmaReport *report, const char *name) {
  for (guint i = 0; i < report->derived->len; i++) {
    const EmaDerived *d = report->derived->pdata[i];
    if (strcmp(d->name, name) == 0)
      return d;
  }
  return NULL;
}

guint ema_report_derived_count(const EmaReport *report) {
  return report->derived->len;
}

const EmaDerived *ema_report_get_derived(const EmaReport *report, guint index) {
  g_return_val_if_fail(index < report->derived->len, NULL);
  return report->derived->pdata[index];
}

char *ema_csv_field(const char *text) {
  GString *out = g_string_new(NULL);
  ema_file_csv_field(out, text);
  return g_string_free(out, FALSE);
}

/* Append VALUE with a fixed number of decimals, in the C locale. */
static void append_fixed(GString *out, double value, int decimals) {
  char buffer[G_ASCII_DTOSTR_BUF_SIZE];
  char format[16];
  g_snprintf(format, sizeof format, "%%.%df", decimals);
  g_string_append(out, g_ascii_formatd(buffer, sizeof buffer, format, value));
}

static void append_general(GString *out, double value) {
  char buffer[G_ASCII_DTOSTR_BUF_SIZE];
  g_string_append(out, g_ascii_formatd(buffer, sizeof buffer, "%.9g", value));
}

static gboolean write_file(const char *dir, const char *name, const GString *text, GError **error) {
  g_autofree char *path = g_build_filename(dir, name, NULL);
  GError *local = NULL;
  if (!g_file_set_contents(path, text->str, (gssize) text->len, &local)) {
    g_set_error(error, EMA_VALIDATE_ERROR, EMA_VALIDATE_ERROR_IO, "cannot write %s: %s", path,
                local->message);
    g_error_free(local);
    return FALSE;
  }
  return TRUE;
}

gboolean ema_report_write_csv(const EmaReport *report, const char *dir, GError **error) {
  g_autoptr(GString) measurements = g_string_new(MEASUREMENTS_HEADER "\n");
  g_autoptr(GString) samples = g_string_new(SAMPLES_HEADER "\n");

  if (g_mkdir_with_parents(dir, 0755) != 0) {
    g_set_error(error, EMA_VALIDATE_ERROR, EMA_VALIDATE_ERROR_IO, "cannot create %s: %s", dir,
                g_strerror(errno));
    return FALSE;
  }

  for (guint i = 0; i < report->measurements->len; i++) {
    const EmaMeasurement *m = report->measurements->pdata[i];
    g_autofree char *group = ema_csv_field(m->group);
    g_autofree char *name = ema_csv_field(m->name);
    g_autofree char *src = ema_csv_field(m->src);
    g_autofree char *dst = ema_csv_field(m->dst);
    const double stats_us[] = {m->stats.median, m->stats.min, m->stats.q1, m->stats.q3,
                               m->stats.max};
    g_string_append_printf(measurements, "%s,%s,%s,%s,%" G_GUINT64_FORMAT ",%u", group, name, src,
                           dst, m->bytes, m->stats.n);
    for (guint k = 0; k < G_N_ELEMENTS(stats_us); k++) {
      g_string_append_c(measurements, ',');
      append_fixed(measurements, stats_us[k] * 1e6, 3);
    }
    g_string_append_c(measurements, ',');
    append_fixed(measurements, ema_sample_spread_pct(&m->stats), 2);
    g_string_append_c(measurements, ',');
    if (m->rate_bytes > 0 && m->stats.median > 0)
      append_fixed(measurements, m->rate_bytes / m->stats.median / 1e9, 2);
    g_string_append_c(measurements, '\n');

    for (guint k = 0; k < m->samples->len; k++) {
      g_string_append_printf(samples, "%s,%u,", name, k);
      append_fixed(samples, g_array_index(m->samples, double, k) * 1e6, 3);
      g_string_append_c(samples, '\n');
    }
  }

  return write_file(dir, "measurements.csv", measurements, error) &&
         write_file(dir, "samples.csv", samples, error) &&
         ema_report_write_derived_csv(report, dir, error);
}

gboolean ema_report_write_derived_csv(const EmaReport *report, const char *dir, GError **error) {
  g_autoptr(GString) derived = g_string_new("name,value,unit,description\n");
  for (guint i = 0; i < report->derived->len; i++) {
    const EmaDerived *d = report->derived->pdata[i];
    g_autofree char *name = ema_csv_field(d->name);
    g_autofree char *unit = ema_csv_field(d->unit);
    g_autofree char *description = ema_csv_field(d->description);
    g_string_append_printf(derived, "%s,", name);
    append_general(derived, d->value);
    g_string_append_printf(derived, ",%s,%s\n", unit, description);
  }
  return write_file(dir, "derived.csv", derived, error);
}

/* DIR/NAME opened by the one CSV reader (ema/core/csv.h); its header must
 * be HEADER. */
static gboolean open_table(EmaCsv *csv, const char *dir, const char *name, const char *header,
                           GError **error) {
  g_autofree char *path = g_build_filename(dir, name, NULL);
  g_autofree char *got = NULL;
  GError *local = NULL;
  if (!ema_csv_open(csv, path, &local))
    return ema_validate_error_from_csv(local, error);
  got = g_strjoinv(",", csv->header);
  if (strcmp(got, header) != 0) {
    g_set_error(error, EMA_VALIDATE_ERROR, EMA_VALIDATE_ERROR_DATA,
                "%s:1:1: the header is not '%s'", path, header);
    return FALSE;
  }
  return TRUE;
}

/* The next row of CSV: TRUE, or FALSE at its end (ERROR unset) or on a
 * malformed row (ERROR set). */
static gboolean next_row(EmaCsv *csv, GError **error) {
  GError *local = NULL;
  if (ema_csv_next(csv, &local))
    return TRUE;
  return local ? ema_validate_error_from_csv(local, error) : FALSE;
}

static gboolean parse_number(const char *text, double *value) {
  char *end = NULL;
  if (*text == '\0')
    return FALSE;
  *value = ema_csv_parse_decimal(text, &end); /* decimal only: not "0x10" */
  return end != NULL && *end == '\0' && isfinite(*value);
}

/* "file:line:col: WHAT" about field FIELD of CSV's current row; FALSE */
static gboolean row_error(const EmaCsv *csv, guint field, GError **error, const char *what) {
  g_set_error(error, EMA_VALIDATE_ERROR, EMA_VALIDATE_ERROR_DATA, "%s:%u:%u: %s", csv->file,
              csv->line, ema_csv_field_column(csv, field), what);
  return FALSE;
}

/* The samples of SAMPLES (an open samples.csv) by measurement name: GArrays
 * of seconds; NULL with ERROR set on a malformed row. */
static GHashTable *read_samples(EmaCsv *samples, GError **error) {
  g_autoptr(GHashTable) by_name =
      g_hash_table_new_full(g_str_hash, g_str_equal, g_free, (GDestroyNotify) g_array_unref);
  GError *local = NULL;
  while (next_row(samples, &local)) {
    GStrv f = samples->fields;
    GArray *values;
    double us;
    if (!parse_number(f[2], &us)) {
      row_error(samples, 2, error, "us is not a number");
      return NULL;
    }
    /* a measured time: never negative (a time that went backwards is no sample) */
    if (!(us >= 0) || !isfinite(us)) {
      row_error(samples, 2, error, "us must be a finite time >= 0");
      return NULL;
    }
    values = g_hash_table_lookup(by_name, f[0]);
    if (values == NULL) {
      values = g_array_new(FALSE, FALSE, sizeof(double));
      g_hash_table_insert(by_name, g_strdup(f[0]), values);
    }
    us *= 1e-6;
    g_array_append_val(values, us);
  }
  if (local) {
    g_propagate_error(error, local);
    return NULL;
  }
  return g_steal_pointer(&by_name);
}

/* The rows of MEASUREMENTS (an open measurements.csv) into REPORT, with
 * their samples BY_NAME; FALSE with ERROR set on a malformed row. */
static gboolean read_measurements(EmaCsv *measurements, GHashTable *by_name, EmaReport *report,
                                  GError **error) {
  GError *local = NULL;
  while (next_row(measurements, &local)) {
    GStrv f = measurements->fields;
    GArray *values;
    double bytes, repeats, gb_per_s = 0;
    EmaSampleStats stats;
    g_autofree char *what = NULL;
    /* both are converted to integers below: out of range would be undefined, and a fraction
     * would be cut off without a word */
    if (!parse_number(f[4], &bytes) || bytes < 0 || bytes >= 0x1p64 || bytes != floor(bytes))
      return row_error(measurements, 4, error, "bytes is not a whole number in [0, 2^64)");
    if (!parse_number(f[5], &repeats) || repeats < 0 || repeats > G_MAXUINT ||
        repeats != floor(repeats))
      return row_error(measurements, 5, error, "repeats is not a count");
    if (*f[12] && !parse_number(f[12], &gb_per_s))
      return row_error(measurements, 12, error, "gb_per_s is not a number");
    values = g_hash_table_lookup(by_name, f[1]);
    if (values == NULL || values->len != (guint) repeats) {
      g_autofree char *name = ema_file_quote_cut(f[1], -1);
      what = g_strdup_printf("'%s' has %u samples in samples.csv, not %g", name,
                             values ? values->len : 0, repeats);
      return row_error(measurements, 1, error, what);
    }
    if (ema_report_find(report, f[1]) != NULL) {
      g_autofree char *name = ema_file_quote_cut(f[1], -1);
      what = g_strdup_printf("'%s' appears twice", name);
      return row_error(measurements, 1, error, what);
    }
    ema_sample_stats((const double *) values->data, values->len, &stats);
    ema_report_add(report, f[0], f[1], f[2], f[3], (guint64) bytes, gb_per_s * 1e9 * stats.median,
                   (const double *) values->data, values->len);
  }
  if (local) {
    g_propagate_error(error, local);
    return FALSE;
  }
  return TRUE;
}

EmaReport *ema_report_read_csv(const char *dir, GError **error) {
  EmaCsv measurements = {0}, samples = {0};
  g_autoptr(GHashTable) by_name = NULL; /* name -> GArray of double seconds; looked up only */
  g_autoptr(EmaReport) report = ema_report_new();
  gboolean ok = open_table(&measurements, dir, "measurements.csv", MEASUREMENTS_HEADER, error) &&
                open_table(&samples, dir, "samples.csv", SAMPLES_HEADER, error) &&
                (by_name = read_samples(&samples, error)) != NULL &&
                read_measurements(&measurements, by_name, report, error);
  ema_csv_clear(&measurements);
  ema_csv_clear(&samples);
  return ok ? g_steal_pointer(&report) : NULL;
}

gboolean ema_csv_check_append(const char *path, const char *header, GError **error) {
  gsize header_len = strlen(header);
  g_autofree char *first = g_malloc(header_len + 3);
  gsize n;
  GError *local = NULL;
  FILE *file;
  if (!g_file_test(path, G_FILE_TEST_EXISTS))
    return TRUE;
  if ((file = ema_file_open_regular(path, &local)) == NULL) {
    g_set_error_literal(error, EMA_VALIDATE_ERROR, EMA_VALIDATE_ERROR_IO, local->message);
    g_error_free(local);
    return FALSE;
  }
  /* the header and its line end, or what stands there instead */
  n = fread(first, 1, header_len + 2, file);
  fclose(file);
  first[n] = '\0';
  if (n == 0 || (strncmp(first, header, header_len) == 0 &&
                 (first[header_len] == '\n' || strncmp(first + header_len, "\r\n", 2) == 0)))
    return TRUE;
  g_set_error(error, EMA_VALIDATE_ERROR, EMA_VALIDATE_ERROR_DATA,
              "%s:1:1: the header is not '%s': rows of another table, or of another version of "
              "this one (give a new file)",
              path, header);
  return FALSE;
}

gboolean ema_csv_append_row(const char *path, const char *header, const char *row, GError **error) {
  GStatBuf st;
  gboolean need_header = g_stat(path, &st) != 0 || st.st_size == 0;
  FILE *file;
  gboolean ok;
  if (!ema_csv_check_append(path, header, error))
    return FALSE;
  file = g_fopen(path, "a");
  if (file == NULL) {
    g_set_error(error, EMA_VALIDATE_ERROR, EMA_VALIDATE_ERROR_IO, "cannot open %s: %s", path,
                g_strerror(errno));
    return FALSE;
  }
  ok = (!need_header || fprintf(file, "%s\n", header) >= 0) && fprintf(file, "%s\n", row) >= 0;
  ok = (fclose(file) == 0) && ok;
  if (!ok)
    g_set_error(error, EMA_VALIDATE_ERROR, EMA_VALIDATE_ERROR_IO, "cannot write %s: %s", path,
                g_strerror(errno));
  return ok;
}
