/* private.h: what the files of traces/ share and nobody else sees: the
 * source base struct and its class, the bounded line reader (its lines are
 * split by ema/core/csv.h's splitter), and the allocation-free number and date parsers.
 *
 * Invariants: a reader never holds more than one chunk plus one line (at most
 * max_line bytes); parsers never allocate and report problems as static
 * strings, so the hot path allocates nothing until an error is raised. */
#pragma once

#include <stdio.h>

#include <gsl/gsl_rng.h>
#include <json-glib/json-glib.h>

#include "ema/core/csv.h"
#include "ema/traces/trace.h"

G_BEGIN_DECLS

/* ---- source base ---------------------------------------------------------- */

typedef struct {
  const char *name;
  /* Fills OUT and returns TRUE, or returns FALSE at the end (ERROR unset) or
   * on error. Called only until it first returns FALSE. */
  gboolean (*next)(EmaTraceSource *src, EmaRequestRecord *out, GError **error);
  /* Frees what the subclass owns (not SRC itself). May be NULL. */
  void (*finalize)(EmaTraceSource *src);
} EmaTraceSourceClass;

struct _EmaTraceSource {
  const EmaTraceSourceClass *klass;
  EmaTraceSource *inner; /* wrapped source, owned (transformations) */
  guint64 count;         /* records returned */
  guint64 skipped;       /* rows skipped by a reader */
  EmaTime last_arrival;
  gboolean done;
  GError *error; /* copy of the error that ended the source */
};

/* Allocates SIZE bytes (>= sizeof(EmaTraceSource)), zeroed, with KLASS. */
gpointer ema_trace_source_alloc(const EmaTraceSourceClass *klass, gsize size);

/* ---- bounded line reader -------------------------------------------------- */

#define EMA_TRACE_CHUNK 65536
#define EMA_TRACE_CSV_MAX_LINE 65536
#define EMA_TRACE_JSON_MAX_LINE (4 * 1024 * 1024)
/* Why a dataset of text (ShareGPT's conversations) is no trace, and what to give instead. */
#define EMA_TRACE_TEXT_DATASET                                                                     \
  "a ShareGPT dataset holds text, not token counts, and EMA has no tokenizer: use its lengths "    \
  "tokenized for the model, a length-only CSV (format: lengths), e.g. "                            \
  "../shared/traces/lengths/sharegpt-llama.csv or sharegpt-opt.csv"
/* The same of Alpaca's (instruction, input, output). */
#define EMA_TRACE_ALPACA_DATASET                                                                   \
  "an Alpaca dataset holds text, not token counts, and EMA has no tokenizer: use its lengths "     \
  "tokenized for the model, a length-only CSV (format: lengths), e.g. "                            \
  "../shared/traces/lengths/alpaca-llama.csv or alpaca-opt.csv"
/* The advice for a JSON array of text whose first record has the member KEY ("conversations":
 * ShareGPT's, "instruction": Alpaca's), or NULL for another key. */
const char *ema_trace_text_dataset_advice(const char *key);

typedef struct {
  FILE *fp;
  char *path;
  guint64 line_no; /* number of the line last returned, from 1 */
  gsize max_line;
  char *chunk;
  gsize pos, fill;
  guint64 offset; /* bytes of the file before the chunk */
  char *line;     /* lines that straddle chunks are assembled here */
  gsize line_cap;
  gboolean eof;
} EmaTraceReader;

gboolean ema_trace_reader_open(EmaTraceReader *reader, const char *path, gsize max_line,
                               GError **error);
/* Why a file whose first bytes are DATA (LEN of them) is no text to read, or NULL: a
 * compressed file (gzip, zstd, xz, zip) or UTF-16 text, refused by name rather than read as
 * binary data. */
const char *ema_trace_not_text(const char *data, gsize len);
void ema_trace_reader_close(EmaTraceReader *reader);
/* Returns 1 and the next line (without "\n" or "\r\n", NUL-terminated,
 * writable until the next call), 0 at the end, -1 on error. A last line
 * without a newline is returned like any other. */
int ema_trace_reader_next(EmaTraceReader *reader, char **line, gsize *len, GError **error);
gboolean ema_trace_reader_rewind(EmaTraceReader *reader, GError **error);
/* TRUE when LINE holds only spaces and tabs, or nothing: a blank line, which every reader
 * skips. */
gboolean ema_trace_line_is_blank(const char *line, gsize len);
/* Sets ERROR to "PATH:LINE: message" (the reader's current line). */
void ema_trace_reader_error(const EmaTraceReader *reader, GError **error, EmaTraceError code,
                            const char *format, ...) G_GNUC_PRINTF(4, 5);
/* Same at an explicit line number. */
void ema_trace_reader_error_at(const EmaTraceReader *reader, guint64 line, GError **error,
                               EmaTraceError code, const char *format, ...) G_GNUC_PRINTF(5, 6);
/* "PATH:LINE:COLUMN: message" at the reader's current line (COLUMN 0: "PATH:LINE: message"). */
void ema_trace_reader_error_col(const EmaTraceReader *reader, guint column, GError **error,
                                EmaTraceError code, const char *format, ...) G_GNUC_PRINTF(5, 6);

/* ---- JSON (json.c) ------------------------------------------------------- */

/* ema_trace_json_scan is public (trace.h): summary.json's readers use it too. */
/* Where the member KEY of the object TEXT (LEN bytes: JSON json-glib has read, e.g. a Mooncake
 * line) is: *KEY_AT its name's opening quote, *VALUE_AT and *VALUE_LEN its value's text (a
 * number's digits as written: "1e3", not json-glib's 1000.0). Members of objects inside it are
 * not its own; a name is compared decoded ("input\u005flength" is input_length). FALSE where
 * the object has no member KEY (or TEXT is no object). */
gboolean ema_trace_json_member(const char *text, gsize len, const char *key, gsize *key_at,
                               gsize *value_at, gsize *value_len);
/* The items of the array ARRAY (LEN bytes, e.g. a member's value) one by one: *AT 0 before the
 * first, then left as this call leaves it; TRUE with the next item's text at *ITEM_AT
 * (*ITEM_LEN bytes) of ARRAY, FALSE after the last. */
gboolean ema_trace_json_item(const char *array, gsize len, gsize *at, gsize *item_at,
                             gsize *item_len);

/* ---- CSV ------------------------------------------------------------------ */

/* Lines are split by ema_csv_split() (ema/core/csv.h). */

/* Loads one column of a length-only CSV (the rows checked as by
 * ema_trace_source_open_lengths()) into a GArray of guint32. */
GArray *ema_trace_csv_load_lengths(const char *path, EmaTraceLengthColumn column, GError **error);

/* A printable, quoted copy of a field (LEN bytes at P) for error messages: in single quotes,
 * bytes other than printable ASCII (and the quote and backslash) as \xNN, cut where every quoted
 * input is (ema_file_quote_length: at most EMA_FILE_QUOTE_MAX bytes, then "..."). */
char *ema_trace_quote(const char *p, gsize len);

/* ---- parsers (return NULL on success or a static problem text) --------------- */

/* Optional sign, digits, optionally "." followed by zeros only. */
const char *ema_trace_parse_int(const char *p, gsize len, gint64 *value);
/* Decimal seconds, optional sign and exponent ("4.314579", "1e-05"), to ns
 * rounded half away from zero, exactly (no double). */
const char *ema_trace_parse_seconds(const char *p, gsize len, gint64 *ns);
/* Same with a decimal scale: SCALE_DIGITS = 9 for seconds, 6 for ms. */
const char *ema_trace_parse_decimal(const char *p, gsize len, int scale_digits, gint64 *value);
/* "YYYY-MM-DD[ T]HH:MM:SS[.f{1,9}][Z|+HH:MM|-HH:MM|+HHMM]" to ns since the
 * Unix epoch (UTC). */
const char *ema_trace_parse_datetime(const char *p, gsize len, gint64 *ns);

/* T, a timestamp not earlier than FIRST (the trace's first), is at most
 * EMA_TRACE_MAX_ARRIVAL after it (computed without overflow). */
gboolean ema_trace_arrival_in_range(EmaTime first, EmaTime t);

/* "1.500000000 s": a time for messages, written into BUF (>= 32 bytes). */
const char *ema_trace_format_time(EmaTime t, char *buf);

/* ---- randomness ----------------------------------------------------------- */

/* A gsl_rng_mt19937 seeded from a 64-bit seed mixed down by splitmix64 (GSL's
 * mt19937 uses only 32 bits of its seed). */
gsl_rng *ema_trace_rng_new(guint64 seed);

G_END_DECLS
