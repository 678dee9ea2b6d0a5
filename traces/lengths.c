/* lengths.c: token-length distributions for synthetic sources: fixed,
 * uniform, lognormal (by median or by mean, sigma of the log), and resampling
 * a column of a length-only CSV (e.g. Vidur's arXiv-summarization lengths,
 * ../shared/traces/vidur-processed/).
 *
 * Invariants: every draw is an integer in [min, max] (default [1, 2^32-1]);
 * real-valued draws are rounded to the nearest integer before clamping; each
 * distribution owns its own gsl_rng_mt19937; the resampled column is the only
 * trace data held in memory (4 bytes a row). */
#include <math.h>

#include <gsl/gsl_randist.h>

#include "private.h"

typedef enum { KIND_FIXED, KIND_UNIFORM, KIND_LOGNORMAL, KIND_RESAMPLE } Kind;

struct _EmaTraceLengths {
  Kind kind;
  gsl_rng *rng; /* NULL for fixed */
  guint32 min, max;
  guint32 fixed;
  guint32 lo, hi;   /* uniform */
  double mu, sigma; /* lognormal, of the log */
  GArray *values;   /* resample: guint32 */
};

static EmaTraceLengths *lengths_new(Kind kind, guint64 seed) {
  EmaTraceLengths *l = g_new0(EmaTraceLengths, 1);
  l->kind = kind;
  l->rng = kind == KIND_FIXED ? NULL : ema_trace_rng_new(seed);
  l->min = 1;
  l->max = G_MAXUINT32;
  return l;
}

static gboolean invalid(GError **error, const char *message) {
  g_set_error_literal(error, EMA_TRACE_ERROR, EMA_TRACE_ERROR_INVALID, message);
  return FALSE;
}

EmaTraceLengths *ema_trace_lengths_new_fixed(guint32 tokens, GError **error) {
  if (tokens < 1) {
    invalid(error, "fixed: tokens must be >= 1");
    return NULL;
  }
  EmaTraceLengths *l = lengths_new(KIND_FIXED, 0);
  l->fixed = tokens;
  return l;
}

EmaTraceLengths *ema_trace_lengths_new_uniform(guint32 min, guint32 max, guint64 seed,
                                               GError **error) {
  if (min < 1 || max < min) {
    invalid(error, "uniform: needs 1 <= min <= max");
    return NULL;
  }
  EmaTraceLengths *l = lengths_new(KIND_UNIFORM, seed);
  l->lo = min;
  l->hi = max;
  return l;
}

static EmaTraceLengths *lognormal(double mu, double sigma, guint64 seed) {
  EmaTraceLengths *l = lengths_new(KIND_LOGNORMAL, seed);
  l->mu = mu;
  l->sigma = sigma;
  return l;
}

EmaTraceLengths *ema_trace_lengths_new_lognormal(double median, double sigma, guint64 seed,
                                                 GError **error) {
  if (!(isfinite(median) && median > 0) || !(isfinite(sigma) && sigma >= 0)) {
    invalid(error, "lognormal: needs median > 0 and sigma >= 0");
    return NULL;
  }
  return lognormal(log(median), sigma, seed);
}

EmaTraceLengths *ema_trace_lengths_new_lognormal_mean(double mean, double sigma, guint64 seed,
                                                      GError **error) {
  if (!(isfinite(mean) && mean > 0) || !(isfinite(sigma) && sigma >= 0)) {
    invalid(error, "lognormal: needs mean > 0 and sigma >= 0");
    return NULL;
  }
  return lognormal(log(mean) - sigma * sigma / 2.0, sigma, seed);
}

EmaTraceLengths *ema_trace_lengths_new_resample(const char *path, EmaTraceLengthColumn column,
                                                guint64 seed, GError **error) {
  g_return_val_if_fail(path != NULL, NULL);

  GArray *values = ema_trace_csv_load_lengths(path, column, error);
  if (values == NULL)
    return NULL;
  if (values->len == 0) {
    g_set_error(error, EMA_TRACE_ERROR, EMA_TRACE_ERROR_EMPTY, "%s:1: no data rows to resample",
                path);
    g_array_unref(values);
    return NULL;
  }
  EmaTraceLengths *l = lengths_new(KIND_RESAMPLE, seed);
  l->values = values;
  return l;
}

void ema_trace_lengths_set_bounds(EmaTraceLengths *lengths, guint32 min, guint32 max) {
  g_return_if_fail(lengths != NULL);
  g_return_if_fail(min >= 1 && min <= max);

  lengths->min = min;
  lengths->max = max;
}

static guint32 clamp_real(const EmaTraceLengths *l, double x) {
  double r = nearbyint(x);
  if (!(r >= l->min)) /* also NaN */
    return l->min;
  if (r >= l->max)
    return l->max;
  return (guint32) r;
}

guint32 ema_trace_lengths_draw(EmaTraceLengths *lengths) {
  g_return_val_if_fail(lengths != NULL, 1);

  guint32 v = 1;
  switch (lengths->kind) {
  case KIND_FIXED:
    v = lengths->fixed;
    break;
  case KIND_UNIFORM:
    /* span <= 2^32 - 1, which is mt19937's range, as gsl_rng_uniform_int needs. */
    v = lengths->lo + (guint32) gsl_rng_uniform_int(
                          lengths->rng, (unsigned long) (lengths->hi - lengths->lo) + 1);
    break;
  case KIND_LOGNORMAL:
    return clamp_real(lengths, gsl_ran_lognormal(lengths->rng, lengths->mu, lengths->sigma));
  case KIND_RESAMPLE:
    v = g_array_index(lengths->values, guint32,
                      gsl_rng_uniform_int(lengths->rng, lengths->values->len));
    break;
  }
  return CLAMP(v, lengths->min, lengths->max);
}

void ema_trace_lengths_free(EmaTraceLengths *lengths) {
  if (lengths == NULL)
    return;
  if (lengths->rng != NULL)
    gsl_rng_free(lengths->rng);
  if (lengths->values != NULL)
    g_array_unref(lengths->values);
  g_free(lengths);
}
