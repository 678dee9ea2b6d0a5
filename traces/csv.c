/* csv.c: the CSV trace readers: Azure LLM inference (2023 and 2024), Vidur/
 * Splitwise, BurstGPT, and length-only files paired with an arrival process.
 * One generic reader does the work; a small spec per format names its
 * columns and how its time column reads.
 *
 * Invariants: columns are found by name in the header (case-insensitive, in
 * any order; other columns are ignored), so swapped columns are read right
 * and a missing one is an error; every row has exactly the header's field
 * count; prompt tokens are in [1, 2^32-1] and output tokens in [0, 2^32-1];
 * timestamps never go backwards; arrivals are re-based on the first data
 * row's timestamp. A row costs no allocation: it is split in place in the
 * reader's line buffer and parsed by hand. Blank lines (spaces and tabs only) are
 * skipped. */
#include <string.h>

#include "ema/core/file.h"
#include "private.h"

typedef enum {
  TIME_NONE,     /* no time column: arrivals come from an arrival process */
  TIME_DATETIME, /* wall-clock text, exact to the ns */
  TIME_SECONDS,  /* decimal seconds */
} TimeKind;

typedef struct {
  const char *what;    /* "Azure LLM CSV", for messages */
  const char *needs;   /* "TIMESTAMP, ContextTokens, GeneratedTokens" */
  const char *cols[3]; /* time, prompt, output; '|' separates accepted names */
  TimeKind time_kind;
} CsvSpec;

enum { COL_TIME, COL_PROMPT, COL_OUTPUT };

static const CsvSpec azure_spec = {
    "Azure LLM CSV",
    "TIMESTAMP, ContextTokens, GeneratedTokens",
    {"TIMESTAMP", "ContextTokens", "GeneratedTokens"},
    TIME_DATETIME,
};

static const CsvSpec vidur_spec = {
    "Vidur CSV",
    "arrived_at, num_prefill_tokens, num_decode_tokens",
    {"arrived_at", "num_prefill_tokens", "num_decode_tokens"},
    TIME_SECONDS,
};

static const CsvSpec burstgpt_spec = {
    "BurstGPT CSV",
    "Timestamp, Request tokens, Response tokens",
    {"Timestamp", "Request tokens", "Response tokens"},
    TIME_SECONDS,
};

static const CsvSpec lengths_spec = {
    "length-only CSV",
    "num_prefill_tokens, num_decode_tokens",
    {NULL, "num_prefill_tokens|ContextTokens", "num_decode_tokens|GeneratedTokens"},
    TIME_NONE,
};

typedef struct {
  EmaTraceReader reader;
  const CsvSpec *spec;
  int n_fields;
  int col[3]; /* field index of each spec column, -1 for none */
  EmaCsvField fields[EMA_CSV_MAX_FIELDS];
  const char *line; /* the current row (the fields point into it), for columns in errors */
} Csv;

/* The column of the current row where field F starts (its opening quote if quoted). */
static guint field_column(const Csv *csv, const EmaCsvField *f) {
  return (guint) (f->p - csv->line) + 1;
}

/* Length of the first name in an '|' list. */
static int first_name_len(const char *names) {
  const char *bar = strchr(names, '|');
  return bar != NULL ? (int) (bar - names) : (int) strlen(names);
}

static gboolean name_matches(const char *names, const char *field) {
  gsize flen = strlen(field);
  const char *p = names;
  for (;;) {
    const char *bar = strchr(p, '|');
    gsize n = bar != NULL ? (gsize) (bar - p) : strlen(p);
    if (n == flen && g_ascii_strncasecmp(p, field, n) == 0)
      return TRUE;
    if (bar == NULL)
      return FALSE;
    p = bar + 1;
  }
}

/* Reads the header (the first non-blank line) and maps the spec's columns.
 * An empty file is an error. */
static gboolean csv_read_header(Csv *csv, GError **error) {
  char *line;
  gsize len;
  int got;

  do {
    got = ema_trace_reader_next(&csv->reader, &line, &len, error);
    if (got < 0)
      return FALSE;
  } while (got > 0 && ema_trace_line_is_blank(line, len));
  if (got == 0) {
    ema_trace_reader_error_at(&csv->reader, 1, error, EMA_TRACE_ERROR_EMPTY,
                              "empty file: no header");
    return FALSE;
  }
  {
    gsize bom = ema_file_bom_length(line, len); /* UTF-8's byte-order mark */
    line += bom;
    len -= bom;
  }
  const char *problem = NULL;
  gsize at = 0;
  csv->line = line;
  int n = ema_csv_split(line, len, csv->fields, &problem, &at);
  if (n < 0) {
    ema_trace_reader_error_col(&csv->reader, (guint) at + 1, error, EMA_TRACE_ERROR_HEADER,
                               "header: %s", problem);
    return FALSE;
  }
  csv->n_fields = n;
  for (int c = 0; c < 3; c++) {
    const char *names = csv->spec->cols[c];
    csv->col[c] = -1;
    if (names == NULL)
      continue;
    for (int f = 0; f < n; f++) {
      if (!name_matches(names, csv->fields[f].p))
        continue;
      if (csv->col[c] >= 0) {
        ema_trace_reader_error_col(&csv->reader, field_column(csv, &csv->fields[f]), error,
                                   EMA_TRACE_ERROR_HEADER, "column '%.*s' appears twice",
                                   first_name_len(names), names);
        return FALSE;
      }
      csv->col[c] = f;
    }
    if (csv->col[c] < 0) {
      ema_trace_reader_error(&csv->reader, error, EMA_TRACE_ERROR_HEADER,
                             "%s header: missing column '%.*s' (needs %s)", csv->spec->what,
                             first_name_len(names), names, csv->spec->needs);
      return FALSE;
    }
  }
  return TRUE;
}

static gboolean csv_open(Csv *csv, const CsvSpec *spec, const char *path, GError **error) {
  memset(csv, 0, sizeof *csv);
  csv->spec = spec;
  if (!ema_trace_reader_open(&csv->reader, path, EMA_TRACE_CSV_MAX_LINE, error))
    return FALSE;
  if (!csv_read_header(csv, error)) {
    ema_trace_reader_close(&csv->reader);
    return FALSE;
  }
  return TRUE;
}

/* A token count in column C: PROMPT must be >= 1, OUTPUT >= 0. */
static gboolean csv_tokens(Csv *csv, int c, guint32 *value, GError **error) {
  const EmaCsvField *f = &csv->fields[csv->col[c]];
  const char *names = csv->spec->cols[c];
  gint64 v;
  const char *problem = ema_trace_parse_int(f->p, f->len, &v);

  if (problem != NULL) {
    g_autofree char *quoted = ema_trace_quote(f->p, f->len);
    ema_trace_reader_error_col(&csv->reader, field_column(csv, f), error, EMA_TRACE_ERROR_PARSE,
                               "%.*s: %s: %s", first_name_len(names), names, problem, quoted);
    return FALSE;
  }
  gint64 min = c == COL_PROMPT ? 1 : 0;
  if (v < min) {
    ema_trace_reader_error_col(&csv->reader, field_column(csv, f), error, EMA_TRACE_ERROR_PARSE,
                               "%.*s must be %s, found %" G_GINT64_FORMAT, first_name_len(names),
                               names, min == 1 ? "> 0" : ">= 0", v);
    return FALSE;
  }
  if (v > G_MAXUINT32) {
    ema_trace_reader_error_col(&csv->reader, field_column(csv, f), error, EMA_TRACE_ERROR_PARSE,
                               "%.*s must be <= %u, found %" G_GINT64_FORMAT, first_name_len(names),
                               names, G_MAXUINT32, v);
    return FALSE;
  }
  *value = (guint32) v;
  return TRUE;
}

/* Reads the next data row into the fields. Returns 1, 0 at the end, -1. */
static int csv_next_row(Csv *csv, GError **error) {
  char *line;
  gsize len;
  int got;

  do {
    got = ema_trace_reader_next(&csv->reader, &line, &len, error);
  } while (got > 0 && ema_trace_line_is_blank(line, len));
  if (got <= 0)
    return got;
  const char *problem = NULL;
  gsize at = 0;
  csv->line = line;
  int n = ema_csv_split(line, len, csv->fields, &problem, &at);
  if (n < 0) {
    ema_trace_reader_error_col(&csv->reader, (guint) at + 1, error, EMA_TRACE_ERROR_PARSE, "%s",
                               problem);
    return -1;
  }
  if (n != csv->n_fields) {
    /* at the first field past the header's, or past the row's end */
    ema_trace_reader_error_col(
        &csv->reader,
        n > csv->n_fields ? field_column(csv, &csv->fields[csv->n_fields]) : (guint) len + 1, error,
        EMA_TRACE_ERROR_PARSE, "expected %d fields, found %d", csv->n_fields, n);
    return -1;
  }
  /* a row whose token columns hold their names: the header again, as files joined whole
   * (`cat day1.csv day2.csv`) leave it; said as such, not as a malformed value */
  if (name_matches(csv->spec->cols[COL_PROMPT], csv->fields[csv->col[COL_PROMPT]].p) &&
      name_matches(csv->spec->cols[COL_OUTPUT], csv->fields[csv->col[COL_OUTPUT]].p)) {
    ema_trace_reader_error_col(&csv->reader, 1, error, EMA_TRACE_ERROR_PARSE,
                               "the header again (files joined with their headers?): remove "
                               "this line");
    return -1;
  }
  return 1;
}

/* ---- timed CSV sources (Azure, Vidur, BurstGPT) --------------------------- */

typedef struct {
  EmaTraceSource base;
  Csv csv;
  guint64 row; /* data rows read so far: the next row's id */
  gboolean skip_failed;
  gboolean have_first;
  gint64 first_time;
  gint64 prev_time;
  guint64 prev_line;
} TimedSource;

static gboolean timed_next(EmaTraceSource *src, EmaRequestRecord *out, GError **error) {
  TimedSource *self = (TimedSource *) src;
  Csv *csv = &self->csv;

  for (;;) {
    int got = csv_next_row(csv, error);
    if (got <= 0)
      return FALSE;

    const EmaCsvField *tf = &csv->fields[csv->col[COL_TIME]];
    const char *tname = csv->spec->cols[COL_TIME];
    gint64 t;
    const char *problem = csv->spec->time_kind == TIME_DATETIME
                              ? ema_trace_parse_datetime(tf->p, tf->len, &t)
                              : ema_trace_parse_seconds(tf->p, tf->len, &t);
    if (problem != NULL) {
      g_autofree char *quoted = ema_trace_quote(tf->p, tf->len);
      ema_trace_reader_error_col(&csv->reader, field_column(csv, tf), error, EMA_TRACE_ERROR_PARSE,
                                 "%s: %s: %s", tname, problem, quoted);
      return FALSE;
    }
    if (!csv_tokens(csv, COL_PROMPT, &out->prompt_tokens, error) ||
        !csv_tokens(csv, COL_OUTPUT, &out->output_tokens, error))
      return FALSE;
    if (!self->have_first) {
      self->have_first = TRUE;
      self->first_time = self->prev_time = t;
    }
    if (t < self->prev_time) {
      g_autofree char *quoted = ema_trace_quote(tf->p, tf->len);
      ema_trace_reader_error_col(&csv->reader, field_column(csv, tf), error, EMA_TRACE_ERROR_ORDER,
                                 "%s goes backwards: %s is earlier than line %" G_GUINT64_FORMAT,
                                 tname, quoted, self->prev_line);
      return FALSE;
    }
    if (!ema_trace_arrival_in_range(self->first_time, t)) {
      g_autofree char *quoted = ema_trace_quote(tf->p, tf->len);
      ema_trace_reader_error_col(&csv->reader, field_column(csv, tf), error, EMA_TRACE_ERROR_PARSE,
                                 "%s: %s is more than %.0f s (about 146 years) after the first "
                                 "request: past the last time the simulator can serve it",
                                 tname, quoted, (double) EMA_TRACE_MAX_ARRIVAL / 1e9);
      return FALSE;
    }
    self->prev_time = t;
    self->prev_line = csv->reader.line_no;
    out->id = self->row++;
    if (self->skip_failed && out->output_tokens == 0) {
      src->skipped++;
      continue;
    }
    out->arrival = t - self->first_time;
    out->prefix_blocks = 0;
    out->prefix_unit_tokens = 0;
    out->prefix_ids = NULL;
    return TRUE;
  }
}

static void timed_finalize(EmaTraceSource *src) {
  ema_trace_reader_close(&((TimedSource *) src)->csv.reader);
}

static const EmaTraceSourceClass azure_class = {"azure", timed_next, timed_finalize};
static const EmaTraceSourceClass vidur_class = {"vidur", timed_next, timed_finalize};
static const EmaTraceSourceClass burstgpt_class = {"burstgpt", timed_next, timed_finalize};

static EmaTraceSource *timed_open(const EmaTraceSourceClass *klass, const CsvSpec *spec,
                                  const char *path, gboolean skip_failed, GError **error) {
  g_return_val_if_fail(path != NULL, NULL);

  TimedSource *self = ema_trace_source_alloc(klass, sizeof *self);
  if (!csv_open(&self->csv, spec, path, error)) {
    g_free(self);
    return NULL;
  }
  self->skip_failed = skip_failed;
  return &self->base;
}

EmaTraceSource *ema_trace_source_open_azure(const char *path, GError **error) {
  return timed_open(&azure_class, &azure_spec, path, FALSE, error);
}

EmaTraceSource *ema_trace_source_open_vidur(const char *path, GError **error) {
  return timed_open(&vidur_class, &vidur_spec, path, FALSE, error);
}

EmaTraceSource *ema_trace_source_open_burstgpt(const char *path,
                                               const EmaTraceBurstGptOptions *options,
                                               GError **error) {
  gboolean keep_failed = options != NULL && options->keep_failed;
  return timed_open(&burstgpt_class, &burstgpt_spec, path, !keep_failed, error);
}

/* ---- length-only CSV with an arrival process ------------------------------ */

typedef struct {
  EmaTraceSource base;
  Csv csv;
  EmaTraceArrivals *arrivals;
  gboolean cycle;
  guint64 rows_this_pass;
} LengthsSource;

static gboolean lengths_next(EmaTraceSource *src, EmaRequestRecord *out, GError **error) {
  LengthsSource *self = (LengthsSource *) src;
  Csv *csv = &self->csv;

  int got = csv_next_row(csv, error);
  if (got < 0)
    return FALSE;
  if (got == 0) {
    if (!self->cycle)
      return FALSE;
    if (self->rows_this_pass == 0) {
      ema_trace_reader_error_at(&csv->reader, 1, error, EMA_TRACE_ERROR_EMPTY,
                                "no data rows to cycle through");
      return FALSE;
    }
    self->rows_this_pass = 0;
    if (!ema_trace_reader_rewind(&csv->reader, error) || !csv_read_header(csv, error))
      return FALSE;
    got = csv_next_row(csv, error);
    if (got < 0)
      return FALSE;
    if (got == 0) { /* the file shrank under us */
      ema_trace_reader_error_at(&csv->reader, 1, error, EMA_TRACE_ERROR_EMPTY,
                                "no data rows to cycle through");
      return FALSE;
    }
  }
  if (!csv_tokens(csv, COL_PROMPT, &out->prompt_tokens, error) ||
      !csv_tokens(csv, COL_OUTPUT, &out->output_tokens, error))
    return FALSE;
  self->rows_this_pass++;
  out->id = src->count;
  out->arrival = ema_trace_arrivals_next(self->arrivals);
  out->prefix_blocks = 0;
  out->prefix_unit_tokens = 0;
  out->prefix_ids = NULL;
  return TRUE;
}

static void lengths_finalize(EmaTraceSource *src) {
  LengthsSource *self = (LengthsSource *) src;
  ema_trace_reader_close(&self->csv.reader);
  ema_trace_arrivals_free(self->arrivals);
}

static const EmaTraceSourceClass lengths_class = {"lengths", lengths_next, lengths_finalize};

EmaTraceSource *ema_trace_source_open_lengths(const char *path, EmaTraceArrivals *arrivals,
                                              gboolean cycle, GError **error) {
  g_return_val_if_fail(path != NULL && arrivals != NULL, NULL);

  LengthsSource *self = ema_trace_source_alloc(&lengths_class, sizeof *self);
  if (!csv_open(&self->csv, &lengths_spec, path, error)) {
    ema_trace_arrivals_free(arrivals);
    g_free(self);
    return NULL;
  }
  self->arrivals = arrivals;
  self->cycle = cycle;
  return &self->base;
}

GArray *ema_trace_csv_load_lengths(const char *path, EmaTraceLengthColumn column, GError **error) {
  g_return_val_if_fail(path != NULL, NULL);

  Csv csv;
  if (!csv_open(&csv, &lengths_spec, path, error))
    return NULL;
  GArray *values = g_array_new(FALSE, FALSE, sizeof(guint32));
  int got;
  while ((got = csv_next_row(&csv, error)) > 0) {
    guint32 prompt, output;
    if (!csv_tokens(&csv, COL_PROMPT, &prompt, error) ||
        !csv_tokens(&csv, COL_OUTPUT, &output, error)) {
      got = -1;
      break;
    }
    guint32 value = column == EMA_TRACE_COLUMN_PROMPT ? prompt : output;
    g_array_append_val(values, value);
  }
  ema_trace_reader_close(&csv.reader);
  if (got < 0) {
    g_array_unref(values);
    return NULL;
  }
  return values;
}
