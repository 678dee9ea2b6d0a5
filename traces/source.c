/* source.c: the EmaTraceSource base behind trace.h: next/free dispatch, the
 * end-of-source latch, counters, and the in-memory array source. The readers
 * (csv.c, mooncake.c, ...) build on this base; formats.c, above them, names
 * the formats and opens a file with the right reader. Nothing here calls a
 * reader, so the dependency runs one way: formats -> readers -> source.
 *
 * Invariants kept here for every source: once a subclass's next() returns
 * FALSE it is never called again, and later calls return FALSE with a copy
 * of the same error (or none); the arrivals handed out never decrease
 * (asserted: the subclasses check their input, so a violation is a bug);
 * none is later than EMA_TRACE_MAX_ARRIVAL (an error: input can ask for
 * it, e.g. a timestamp of 9e9 s or a rate of 1e-9). */
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
  if (out->arrival > EMA_TRACE_MAX_ARRIVAL) {
    src->done = TRUE;
    src->error = g_error_new(EMA_TRACE_ERROR, EMA_TRACE_ERROR_PARSE,
                             "request %" G_GUINT64_FORMAT " (number %" G_GUINT64_FORMAT
                             " of the trace) arrives at %.6g s, past the last time the "
                             "simulator can serve it (%.6g s, about 146 years)",
                             out->id, src->count + 1, (double) out->arrival / 1e9,
                             (double) EMA_TRACE_MAX_ARRIVAL / 1e9);
    g_propagate_error(error, g_error_copy(src->error));
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
