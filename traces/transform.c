/* transform.c: transformations that wrap any source: a time window [start,
 * end) re-based to start, rate scaling, a request limit, a time offset, a
 * round-robin split (one replica's share of a trace) and a shared prefix
 * (prompt identity for prefix caching).
 * Each takes its inner source over (freed with the wrapper) and they compose
 * in any order, e.g. limit(scale_rate(window(azure, 600 s, 1200 s), 8), 1000).
 *
 * Invariants: each wrapper maps arrivals through a non-decreasing function
 * (subtract, divide by a positive factor with rounding, add), so the order of
 * the inner source is kept; the window stops reading at the first arrival
 * >= end, so a window at the start of a week-long trace costs only its rows;
 * ids and lengths pass through untouched (the shared prefix replaces only
 * the prompt's identity). */
#include <math.h>

#include "private.h"

typedef struct {
  EmaTraceSource base;
  EmaTime start, end;
} WindowSource;

static gboolean window_next(EmaTraceSource *src, EmaRequestRecord *out, GError **error) {
  WindowSource *self = (WindowSource *) src;

  for (;;) {
    if (!ema_trace_source_next(src->inner, out, error))
      return FALSE;
    if (out->arrival < self->start)
      continue;
    if (out->arrival >= self->end)
      return FALSE;
    out->arrival -= self->start;
    return TRUE;
  }
}

static const EmaTraceSourceClass window_class = {"window", window_next, NULL};

EmaTraceSource *ema_trace_window(EmaTraceSource *src, EmaTime start, EmaTime end) {
  g_return_val_if_fail(src != NULL, NULL);
  g_return_val_if_fail(start >= 0 && end >= start, NULL);

  WindowSource *self = ema_trace_source_alloc(&window_class, sizeof *self);
  self->base.inner = src;
  self->start = start;
  self->end = end;
  return &self->base;
}

typedef struct {
  EmaTraceSource base;
  double factor;
} ScaleSource;

static gboolean scale_next(EmaTraceSource *src, EmaRequestRecord *out, GError **error) {
  ScaleSource *self = (ScaleSource *) src;

  if (!ema_trace_source_next(src->inner, out, error))
    return FALSE;
  /* long double keeps all 64 bits of the arrival on x86-64. */
  long double t = nearbyintl((long double) out->arrival / (long double) self->factor);
  if (t >= 9.2e18L) {
    g_set_error(error, EMA_TRACE_ERROR, EMA_TRACE_ERROR_INVALID,
                "scale_rate: arrival of request %" G_GUINT64_FORMAT " overflows", out->id);
    return FALSE;
  }
  out->arrival = (EmaTime) t;
  return TRUE;
}

static const EmaTraceSourceClass scale_class = {"scale_rate", scale_next, NULL};

EmaTraceSource *ema_trace_scale_rate(EmaTraceSource *src, double factor) {
  g_return_val_if_fail(src != NULL, NULL);
  g_return_val_if_fail(isfinite(factor) && factor > 0, NULL);

  ScaleSource *self = ema_trace_source_alloc(&scale_class, sizeof *self);
  self->base.inner = src;
  self->factor = factor;
  return &self->base;
}

typedef struct {
  EmaTraceSource base;
  guint64 max_requests;
} LimitSource;

static gboolean limit_next(EmaTraceSource *src, EmaRequestRecord *out, GError **error) {
  LimitSource *self = (LimitSource *) src;

  if (src->count >= self->max_requests)
    return FALSE;
  return ema_trace_source_next(src->inner, out, error);
}

static const EmaTraceSourceClass limit_class = {"limit", limit_next, NULL};

EmaTraceSource *ema_trace_limit(EmaTraceSource *src, guint64 max_requests) {
  g_return_val_if_fail(src != NULL, NULL);

  LimitSource *self = ema_trace_source_alloc(&limit_class, sizeof *self);
  self->base.inner = src;
  self->max_requests = max_requests;
  return &self->base;
}

typedef struct {
  EmaTraceSource base;
  EmaTime offset;
} OffsetSource;

static gboolean offset_next(EmaTraceSource *src, EmaRequestRecord *out, GError **error) {
  OffsetSource *self = (OffsetSource *) src;

  if (!ema_trace_source_next(src->inner, out, error))
    return FALSE;
  if (out->arrival > G_MAXINT64 - self->offset) {
    g_set_error(error, EMA_TRACE_ERROR, EMA_TRACE_ERROR_INVALID,
                "offset: arrival of request %" G_GUINT64_FORMAT " overflows", out->id);
    return FALSE;
  }
  out->arrival += self->offset;
  return TRUE;
}

static const EmaTraceSourceClass offset_class = {"offset", offset_next, NULL};

EmaTraceSource *ema_trace_offset(EmaTraceSource *src, EmaTime offset) {
  g_return_val_if_fail(src != NULL, NULL);
  g_return_val_if_fail(offset >= 0, NULL);

  OffsetSource *self = ema_trace_source_alloc(&offset_class, sizeof *self);
  self->base.inner = src;
  self->offset = offset;
  return &self->base;
}

typedef struct {
  EmaTraceSource base;
  guint64 ways, index, seen;
} SplitSource;

static gboolean split_next(EmaTraceSource *src, EmaRequestRecord *out, GError **error) {
  SplitSource *self = (SplitSource *) src;

  for (;;) {
    if (!ema_trace_source_next(src->inner, out, error))
      return FALSE;
    if (self->seen++ % self->ways == self->index)
      return TRUE;
  }
}

static const EmaTraceSourceClass split_class = {"split", split_next, NULL};

EmaTraceSource *ema_trace_split(EmaTraceSource *src, guint64 ways, guint64 index) {
  g_return_val_if_fail(src != NULL, NULL);
  g_return_val_if_fail(ways >= 1 && index < ways, NULL);

  SplitSource *self = ema_trace_source_alloc(&split_class, sizeof *self);
  self->base.inner = src;
  self->ways = ways;
  self->index = index;
  return &self->base;
}

typedef struct {
  EmaTraceSource base;
  guint32 tokens, groups;
  guint64 seen;
  guint64 id; /* the current record's prefix id */
} SharedPrefixSource;

static gboolean shared_prefix_next(EmaTraceSource *src, EmaRequestRecord *out, GError **error) {
  SharedPrefixSource *self = (SharedPrefixSource *) src;

  if (!ema_trace_source_next(src->inner, out, error))
    return FALSE;
  /* ids from the top of the range, apart from any small ids a trace uses */
  self->id = G_MAXUINT64 - self->seen++ % self->groups;
  out->prefix_blocks = 1;
  out->prefix_unit_tokens = MIN(self->tokens, out->prompt_tokens);
  out->prefix_ids = &self->id;
  return TRUE;
}

static const EmaTraceSourceClass shared_prefix_class = {"shared-prefix", shared_prefix_next, NULL};

EmaTraceSource *ema_trace_shared_prefix(EmaTraceSource *src, guint32 tokens, guint32 groups) {
  g_return_val_if_fail(src != NULL, NULL);
  g_return_val_if_fail(tokens > 0 && groups > 0, NULL);

  SharedPrefixSource *self = ema_trace_source_alloc(&shared_prefix_class, sizeof *self);
  self->base.inner = src;
  self->tokens = tokens;
  self->groups = groups;
  return &self->base;
}
