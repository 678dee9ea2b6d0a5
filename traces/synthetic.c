/* synthetic.c: the synthetic request source: an arrival process plus a
 * prompt-length and an output-length distribution, ended by a request count
 * or a duration.
 *
 * Invariants: the three components own separate generators, so changing the
 * length distribution never changes the arrival times (and vice versa); the
 * draw order per request is arrival, prompt, output; ids count from 0. */
#include "private.h"

typedef struct {
  EmaTraceSource base;
  EmaTraceArrivals *arrivals;
  EmaTraceLengths *prompt;
  EmaTraceLengths *output;
  guint64 max_requests;
  EmaTime duration;
} SyntheticSource;

static gboolean synthetic_next(EmaTraceSource *src, EmaRequestRecord *out, GError **error) {
  SyntheticSource *self = (SyntheticSource *) src;

  if (self->max_requests > 0 && src->count >= self->max_requests)
    return FALSE;
  EmaTime t = ema_trace_arrivals_next(self->arrivals);
  /* an arrival past the clock (EMA_TIME_NEVER) is handed out: the source's
   * limit (EMA_TRACE_MAX_ARRIVAL) makes it an error, not a silent end */
  if (self->duration > 0 && t >= self->duration)
    return FALSE;
  out->arrival = t;
  out->prompt_tokens = ema_trace_lengths_draw(self->prompt);
  out->output_tokens = ema_trace_lengths_draw(self->output);
  out->id = src->count;
  out->prefix_blocks = 0;
  out->prefix_unit_tokens = 0;
  out->prefix_ids = NULL;
  return TRUE;
}

static void synthetic_finalize(EmaTraceSource *src) {
  SyntheticSource *self = (SyntheticSource *) src;

  ema_trace_arrivals_free(self->arrivals);
  ema_trace_lengths_free(self->prompt);
  ema_trace_lengths_free(self->output);
}

static const EmaTraceSourceClass synthetic_class = {"synthetic", synthetic_next,
                                                    synthetic_finalize};

EmaTraceSource *ema_trace_source_new_synthetic(EmaTraceArrivals *arrivals, EmaTraceLengths *prompt,
                                               EmaTraceLengths *output, guint64 max_requests,
                                               EmaTime duration) {
  g_return_val_if_fail(arrivals != NULL && prompt != NULL && output != NULL, NULL);
  g_return_val_if_fail(duration >= 0, NULL);

  SyntheticSource *self = ema_trace_source_alloc(&synthetic_class, sizeof *self);
  self->arrivals = arrivals;
  self->prompt = prompt;
  self->output = output;
  self->max_requests = max_requests;
  self->duration = duration;
  return &self->base;
}

EmaTraceSource *ema_trace_source_new_poisson(double rate, EmaTraceLengths *prompt,
                                             EmaTraceLengths *output, guint64 max_requests,
                                             EmaTime duration, guint64 seed, GError **error) {
  g_return_val_if_fail(prompt != NULL && output != NULL, NULL);

  EmaTraceArrivals *arrivals =
      ema_trace_arrivals_new_poisson(rate, ema_trace_seed_derive(seed, "arrivals"), error);
  if (arrivals == NULL) {
    ema_trace_lengths_free(prompt);
    ema_trace_lengths_free(output);
    return NULL;
  }
  return ema_trace_source_new_synthetic(arrivals, prompt, output, max_requests, duration);
}
