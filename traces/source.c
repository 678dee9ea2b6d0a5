/* source.c: the EmaTraceSource base behind trace.h: next/free dispatch, the
 * end-of-source latch, counters, format names, ema_trace_source_open() with
 * format sniffing, and the in-memory array source.
 *
 * Invariants kept here for every source: once a subclass's next() returns
 * FALSE it is never called again, and later calls return FALSE with a copy
 * of the same error (or none); the arrivals handed out never decrease
 * (asserted: the subclasses check their input, so a violation is a bug). */
#include <string.h>

#include "private.h"

G_DEFINE_QUARK(ema - trace - error - quark, ema_trace_error)

gpointer ema_trace_source_alloc(const EmaTraceSourceClass *klass, gsize size) {
  g_return_val_if_fail(klass != NULL && size >= sizeof(EmaTraceSource), NULL);

  EmaTraceSource *src = g_malloc0(size);
  src->klass = klass;
  src->last_arrival = G_MININT64;
  return src;
}

gboolean ema_trace_source_next(EmaTraceSource *src, EmaRequestRecord *out, GError **error) {
  g_return_val_if_fail(src != NULL, FALSE);
  g_return_val_if_fail(out != NULL, FALSE);
  g_return_val_if_fail(error == NULL || *error == NULL, FALSE);

  if (src->done) {
    if (src->error != NULL)
      g_propagate_error(error, g_error_copy(src->error));
    return FALSE;
  }
  GError *local = NULL;
  if (!src->klass->next(src, out, &local)) {
    src->done = TRUE;
    if (local != NULL) {
      src->error = g_error_copy(local);
      g_propagate_error(error, local);
    }
    return FALSE;
  }
  g_assert(out->arrival >= src->last_arrival);
  src->last_arrival = out->arrival;
  src->count++;
  return TRUE;
}

void ema_trace_source_free(EmaTraceSource *src) {
  if (src == NULL)
    return;
  if (src->klass->finalize != NULL)
    src->klass->finalize(src);
  ema_trace_source_free(src->inner);
  g_clear_error(&src->error);
  g_free(src);
}

guint64 ema_trace_source_get_count(const EmaTraceSource *src) {
  g_return_val_if_fail(src != NULL, 0);

  return src->count;
}

guint64 ema_trace_source_get_skipped(const EmaTraceSource *src) {
  g_return_val_if_fail(src != NULL, 0);

  while (src->inner != NULL)
    src = src->inner;
  return src->skipped;
}

/* ---- formats -------------------------------------------------------------- */

static const char *const format_names[] = {
    [EMA_TRACE_FORMAT_AUTO] = "auto",         [EMA_TRACE_FORMAT_AZURE] = "azure",
    [EMA_TRACE_FORMAT_VIDUR] = "vidur",       [EMA_TRACE_FORMAT_BURSTGPT] = "burstgpt",
    [EMA_TRACE_FORMAT_MOONCAKE] = "mooncake", [EMA_TRACE_FORMAT_LENGTHS] = "lengths",
};

const char *ema_trace_format_name(EmaTraceFormat format) {
  g_return_val_if_fail((guint) format < G_N_ELEMENTS(format_names), NULL);

  return format_names[format];
}

gboolean ema_trace_format_from_name(const char *name, EmaTraceFormat *format, GError **error) {
  g_return_val_if_fail(name != NULL && format != NULL, FALSE);

  for (guint i = 0; i < G_N_ELEMENTS(format_names); i++) {
    if (strcmp(name, format_names[i]) == 0) {
      *format = (EmaTraceFormat) i;
      return TRUE;
    }
  }
  g_set_error(error, EMA_TRACE_ERROR, EMA_TRACE_ERROR_INVALID,
              "unknown trace format '%s' (valid: auto, azure, vidur, burstgpt, mooncake, lengths)",
              name);
  return FALSE;
}

/* Guess the format from the first line: '{' is JSONL, otherwise a CSV header
 * is recognised by its time column. */
static gboolean sniff_format(const char *path, EmaTraceFormat *format, GError **error) {
  EmaTraceReader reader;
  char *line;
  gsize len;

  if (!ema_trace_reader_open(&reader, path, EMA_TRACE_JSON_MAX_LINE, error))
    return FALSE;
  int got = ema_trace_reader_next(&reader, &line, &len, error);
  gboolean ok = got > 0;
  if (got == 0)
    ema_trace_reader_error_at(&reader, 1, error, EMA_TRACE_ERROR_EMPTY, "empty file: no header");
  if (ok) {
    if (len >= 3 && memcmp(line, "\xef\xbb\xbf", 3) == 0) {
      line += 3;
      len -= 3;
    }
    while (len > 0 && (*line == ' ' || *line == '\t')) {
      line++;
      len--;
    }
    g_autofree char *lower = g_ascii_strdown(line, (gssize) len);
    if (len > 0 && line[0] == '{')
      *format = EMA_TRACE_FORMAT_MOONCAKE;
    else if (strstr(lower, "arrived_at") != NULL)
      *format = EMA_TRACE_FORMAT_VIDUR;
    else if (strstr(lower, "request tokens") != NULL)
      *format = EMA_TRACE_FORMAT_BURSTGPT;
    else if (strstr(lower, "contexttokens") != NULL && strstr(lower, "timestamp") != NULL)
      *format = EMA_TRACE_FORMAT_AZURE;
    else if (strstr(lower, "num_prefill_tokens") != NULL)
      *format = EMA_TRACE_FORMAT_LENGTHS;
    else {
      ema_trace_reader_error(&reader, error, EMA_TRACE_ERROR_HEADER,
                             "unknown trace format (not an Azure, Vidur, BurstGPT or Mooncake "
                             "header)");
      ok = FALSE;
    }
  }
  ema_trace_reader_close(&reader);
  return ok;
}

EmaTraceSource *ema_trace_source_open(EmaTraceFormat format, const char *path, GError **error) {
  g_return_val_if_fail(path != NULL, NULL);

  if (format == EMA_TRACE_FORMAT_AUTO && !sniff_format(path, &format, error))
    return NULL;
  switch (format) {
  case EMA_TRACE_FORMAT_AZURE:
    return ema_trace_source_open_azure(path, error);
  case EMA_TRACE_FORMAT_VIDUR:
    return ema_trace_source_open_vidur(path, error);
  case EMA_TRACE_FORMAT_BURSTGPT:
    return ema_trace_source_open_burstgpt(path, NULL, error);
  case EMA_TRACE_FORMAT_MOONCAKE:
    return ema_trace_source_open_mooncake(path, error);
  case EMA_TRACE_FORMAT_LENGTHS:
    g_set_error(error, EMA_TRACE_ERROR, EMA_TRACE_ERROR_INVALID,
                "%s: a length-only trace needs an arrival process", path);
    return NULL;
  case EMA_TRACE_FORMAT_AUTO:
  default:
    break;
  }
  g_return_val_if_reached(NULL);
}

/* ---- array source --------------------------------------------------------- */

typedef struct {
  EmaTraceSource base;
  EmaRequestRecord *records;
  gsize n, next;
} ArraySource;

static gboolean array_next(EmaTraceSource *src, EmaRequestRecord *out, GError **error) {
  ArraySource *self = (ArraySource *) src;

  if (self->next >= self->n)
    return FALSE;
  *out = self->records[self->next++];
  return TRUE;
}

static void array_finalize(EmaTraceSource *src) {
  g_free(((ArraySource *) src)->records);
}

static const EmaTraceSourceClass array_class = {"array", array_next, array_finalize};

EmaTraceSource *ema_trace_source_new_array(const EmaRequestRecord *records, gsize n) {
  g_return_val_if_fail(records != NULL || n == 0, NULL);
  for (gsize i = 0; i < n; i++) {
    g_return_val_if_fail(records[i].prompt_tokens >= 1, NULL);
    g_return_val_if_fail(i == 0 || records[i].arrival >= records[i - 1].arrival, NULL);
  }

  ArraySource *self = ema_trace_source_alloc(&array_class, sizeof *self);
  self->records = g_memdup2(records, n * sizeof *records);
  self->n = n;
  return &self->base;
}
