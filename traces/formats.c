/* formats.c: the table of trace file formats behind trace.h's
 * ema_trace_format_*() and ema_trace_source_open(): each row names a format,
 * the header words that identify its CSV files when the format is "auto",
 * and the reader that opens it. This file sits above the readers (csv.c,
 * mooncake.c, vllm.c) and they never call back into it: adding a format is a reader
 * plus one row here. */
#include <stdio.h>
#include <string.h>

#include "ema/core/file.h"
#include "private.h"

typedef EmaTraceSource *(*OpenFn)(const char *path, GError **error);

static EmaTraceSource *open_burstgpt(const char *path, GError **error) {
  return ema_trace_source_open_burstgpt(path, NULL, error);
}

typedef struct {
  EmaTraceFormat format;
  const char *name;
  /* the column names (any case) that all are in the first line of such a CSV file, each one
   * of names separated by '|' (NULL: not recognised from a CSV header) */
  const char *const *header_words;
  OpenFn open; /* NULL: cannot be opened from a path alone */
} FormatRow;

/* Sniffing tries the rows in this order; "auto" is not a format of its own. */
static const FormatRow formats[] = {
    {EMA_TRACE_FORMAT_AUTO, "auto", NULL, NULL},
    {EMA_TRACE_FORMAT_AZURE, "azure", (const char *const[]){"contexttokens", "timestamp", NULL},
     ema_trace_source_open_azure},
    {EMA_TRACE_FORMAT_VIDUR, "vidur", (const char *const[]){"arrived_at", NULL},
     ema_trace_source_open_vidur},
    {EMA_TRACE_FORMAT_BURSTGPT, "burstgpt", (const char *const[]){"request tokens", NULL},
     open_burstgpt},
    {EMA_TRACE_FORMAT_MOONCAKE, "mooncake", NULL, ema_trace_source_open_mooncake},
    /* the column names its reader takes (csv.c), after Azure's header (which has a time) */
    {EMA_TRACE_FORMAT_LENGTHS, "lengths",
     (const char *const[]){"num_prefill_tokens|contexttokens", NULL}, NULL},
    {EMA_TRACE_FORMAT_VLLM_BENCH, "vllm-bench", NULL, NULL},
};

static const FormatRow *row_of(EmaTraceFormat format) {
  for (guint i = 0; i < G_N_ELEMENTS(formats); i++)
    if (formats[i].format == format)
      return &formats[i];
  return NULL;
}

const char *ema_trace_format_name(EmaTraceFormat format) {
  const FormatRow *row = row_of(format);
  g_return_val_if_fail(row != NULL, NULL);

  return row->name;
}

gboolean ema_trace_format_from_name(const char *name, EmaTraceFormat *format, GError **error) {
  g_return_val_if_fail(name != NULL && format != NULL, FALSE);

  for (guint i = 0; i < G_N_ELEMENTS(formats); i++) {
    if (strcmp(name, formats[i].name) == 0) {
      *format = formats[i].format;
      return TRUE;
    }
  }
  g_autoptr(GString) valid = g_string_new(NULL);
  for (guint i = 0; i < G_N_ELEMENTS(formats); i++)
    g_string_append_printf(valid, "%s%s", i ? ", " : "", formats[i].name);
  g_autofree char *quoted = ema_file_quote_cut(name, -1);
  g_set_error(error, EMA_TRACE_ERROR, EMA_TRACE_ERROR_INVALID,
              "unknown trace format '%s' (valid: %s)", quoted, valid->str);
  return FALSE;
}

/* TRUE when each of WORDS (one of its '|'-separated names) is the whole name of one of the N
 * header FIELDS, in any case: "arrived_at_bucket" is no "arrived_at". */
static gboolean header_has_words(const EmaCsvField *fields, int n, const char *const *words) {
  for (; *words != NULL; words++) {
    g_auto(GStrv) names = g_strsplit(*words, "|", -1);
    gboolean found = FALSE;
    for (guint i = 0; names[i] != NULL && !found; i++)
      for (int f = 0; f < n && !found; f++)
        found = g_ascii_strcasecmp(fields[f].p, names[i]) == 0;
    if (!found)
      return FALSE;
  }
  return TRUE;
}

/* The first HEAD_BYTES bytes of PATH (fewer where it is shorter, none where it does not open),
 * NUL-terminated, into HEAD: what the sniffing reads of a JSON file before its reader parses it
 * whole. */
#define HEAD_BYTES 4096
static gsize read_head(const char *path, char head[HEAD_BYTES + 1]) {
  gsize n = 0;
  FILE *fp = ema_file_open_regular(path, NULL);
  if (fp != NULL) {
    n = fread(head, 1, HEAD_BYTES, fp);
    fclose(fp);
  }
  head[n] = '\0';
  return n;
}

/* TRUE when the first bytes of PATH open a JSON object with a key that only
 * vLLM's benchmark result has (its load settings and length arrays come
 * before any measurement, written on one line or indented). */
static gboolean is_vllm_bench(const char *path) {
  static const char *const keys[] = {"\"request_rate\"", "\"max_concurrency\"", "\"burstiness\"",
                                     "\"input_lens\"", "\"num_prompts\""};
  char head[HEAD_BYTES + 1];
  const char *at = head;
  at += ema_file_bom_length(head, read_head(path, head)); /* a UTF-8 byte-order mark */
  while (*at == ' ' || *at == '\t' || *at == '\r' || *at == '\n')
    at++;
  if (*at != '{')
    return FALSE;
  for (guint i = 0; i < G_N_ELEMENTS(keys); i++)
    if (strstr(at, keys[i]) != NULL)
      return TRUE;
  return FALSE;
}

/* What to give instead of the JSON array in PATH: by the first key of a known dataset of text
 * in its first bytes (Alpaca's "instruction"), ShareGPT's lengths otherwise. */
static const char *array_advice(const char *path) {
  static const char *const keys[] = {"instruction", "conversations"};
  char head[HEAD_BYTES + 1];
  const char *first = NULL;
  const char *advice = EMA_TRACE_TEXT_DATASET;
  read_head(path, head);
  for (guint i = 0; i < G_N_ELEMENTS(keys); i++) {
    g_autofree char *quoted = g_strdup_printf("\"%s\"", keys[i]);
    const char *at = strstr(head, quoted);
    if (at != NULL && (first == NULL || at < first)) {
      first = at;
      advice = ema_trace_text_dataset_advice(keys[i]);
    }
  }
  return advice;
}

/* Guess the format from the first line that is not blank: a vLLM benchmark result (above),
 * else '{' is JSONL (Mooncake), otherwise a CSV header is recognised by the
 * column names of a row above. Vidur's header is tried before Azure's (a Vidur file
 * may carry a timestamp column too). */
static gboolean sniff_format(const char *path, EmaTraceFormat *format, GError **error) {
  static const EmaTraceFormat csv_order[] = {EMA_TRACE_FORMAT_VIDUR, EMA_TRACE_FORMAT_BURSTGPT,
                                             EMA_TRACE_FORMAT_AZURE, EMA_TRACE_FORMAT_LENGTHS};
  EmaTraceReader reader;
  char *line;
  gsize len;

  if (is_vllm_bench(path)) {
    *format = EMA_TRACE_FORMAT_VLLM_BENCH;
    return TRUE;
  }
  if (!ema_trace_reader_open(&reader, path, EMA_TRACE_JSON_MAX_LINE, error))
    return FALSE;
  int got;
  do { /* blank lines before the header, as the readers skip them */
    got = ema_trace_reader_next(&reader, &line, &len, error);
    if (got > 0 && len >= 3 && memcmp(line, "\xef\xbb\xbf", 3) == 0) {
      line += 3;
      len -= 3;
    }
  } while (got > 0 && ema_trace_line_is_blank(line, len));
  gboolean ok = got > 0;
  if (got == 0)
    ema_trace_reader_error_at(&reader, 1, error, EMA_TRACE_ERROR_EMPTY, "empty file: no header");
  if (ok) {
    while (*line == ' ' || *line == '\t') {
      line++;
      len--;
    }
    ok = FALSE;
    if (len > 0 && line[0] == '{') {
      *format = EMA_TRACE_FORMAT_MOONCAKE;
      ok = TRUE;
    } else if (len > 0 && line[0] == '[') {
      /* a JSON array: a dataset of text such as ShareGPT's (a vLLM result is an object) */
      ema_trace_reader_error(&reader, error, EMA_TRACE_ERROR_HEADER,
                             "a JSON array, not a trace (%s)", array_advice(path));
      ema_trace_reader_close(&reader);
      return FALSE;
    }
    EmaCsvField fields[EMA_CSV_MAX_FIELDS];
    const char *problem = NULL;
    gsize at = 0;
    int n = ok ? 0 : ema_csv_split(line, len, fields, &problem, &at); /* a bad header: none */
    for (guint i = 0; !ok && i < G_N_ELEMENTS(csv_order); i++) {
      if (header_has_words(fields, n, row_of(csv_order[i])->header_words)) {
        *format = csv_order[i];
        ok = TRUE;
      }
    }
    if (!ok)
      ema_trace_reader_error(&reader, error, EMA_TRACE_ERROR_HEADER,
                             "unknown trace format (not an Azure, Vidur, BurstGPT, Mooncake, "
                             "lengths or vLLM benchmark result header)");
  }
  ema_trace_reader_close(&reader);
  return ok;
}

gboolean ema_trace_format_sniff(const char *path, EmaTraceFormat *format, GError **error) {
  g_return_val_if_fail(path != NULL && format != NULL, FALSE);
  return sniff_format(path, format, error);
}

EmaTraceSource *ema_trace_source_open(EmaTraceFormat format, const char *path, GError **error) {
  g_return_val_if_fail(path != NULL, NULL);

  if (format == EMA_TRACE_FORMAT_AUTO && !ema_trace_format_sniff(path, &format, error))
    return NULL;
  const FormatRow *row = row_of(format);
  g_return_val_if_fail(row != NULL && format != EMA_TRACE_FORMAT_AUTO, NULL);
  if (row->open == NULL) {
    g_set_error(error, EMA_TRACE_ERROR, EMA_TRACE_ERROR_INVALID,
                "%s: a %s trace holds no arrival times: it needs an arrival process", path,
                row->name);
    return NULL;
  }
  return row->open(path, error);
}
