/* arrivals.c: synthetic arrival processes (Poisson, Gamma renewal, on/off
 * bursts, diurnal sinusoid by thinning, piecewise-constant phases) and the seeding of every
 * synthetic generator in traces/.
 *
 * Invariants: each process owns one gsl_rng_mt19937, so its draws depend on
 * its seed only, never on other components; the process clock is a double in
 * seconds that only grows (a week is ~6e5 s, where a double resolves
 * ~1e-10 s), and arrivals are that clock rounded to the nearest ns, so they
 * never decrease. Parameters are checked at construction (finite, in range)
 * and reported as EMA_TRACE_ERROR_INVALID. */
#include <math.h>

#include <gsl/gsl_randist.h>

#include "private.h"

static guint64 splitmix64(guint64 x) {
  guint64 z = x + 0x9e3779b97f4a7c15ull;
  z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ull;
  z = (z ^ (z >> 27)) * 0x94d049bb133111ebull;
  return z ^ (z >> 31);
}

guint64 ema_trace_seed_derive(guint64 seed, const char *stream) {
  g_return_val_if_fail(stream != NULL, seed);

  guint64 h = 0xcbf29ce484222325ull; /* FNV-1a */
  for (const char *p = stream; *p != '\0'; p++) {
    h ^= (guchar) *p;
    h *= 0x100000001b3ull;
  }
  return splitmix64(seed ^ splitmix64(h));
}

gsl_rng *ema_trace_rng_new(guint64 seed) {
  gsl_rng *rng = gsl_rng_alloc(gsl_rng_mt19937);
  guint64 z = splitmix64(seed);
  gsl_rng_set(rng, (unsigned long) ((z ^ (z >> 32)) & 0xffffffffu));
  return rng;
}

typedef enum { KIND_POISSON, KIND_GAMMA, KIND_ONOFF, KIND_DIURNAL, KIND_PHASES, KIND_AT_ONCE } Kind;

struct _EmaTraceArrivals {
  Kind kind;
  gsl_rng *rng;
  double t; /* seconds */
  double rate;
  double gamma_shape, gamma_scale;
  double rate_on, rate_off, mean_on, mean_off; /* durations in s */
  gboolean on;
  double phase_end;
  double rate_min, rate_max, period;
  double *phase_rates, *phase_ends; /* phases: rate of phase k until phase_ends[k] (s) */
  guint n_phases, phase;
};

static gboolean check(gboolean ok, GError **error, const char *format, ...) G_GNUC_PRINTF(3, 4);

static gboolean check(gboolean ok, GError **error, const char *format, ...) {
  if (ok)
    return TRUE;
  va_list ap;
  va_start(ap, format);
  g_autofree char *message = g_strdup_vprintf(format, ap);
  va_end(ap);
  g_set_error_literal(error, EMA_TRACE_ERROR, EMA_TRACE_ERROR_INVALID, message);
  return FALSE;
}

static EmaTraceArrivals *arrivals_new(Kind kind, guint64 seed) {
  EmaTraceArrivals *a = g_new0(EmaTraceArrivals, 1);
  a->kind = kind;
  a->rng = ema_trace_rng_new(seed);
  return a;
}

EmaTraceArrivals *ema_trace_arrivals_new_poisson(double rate, guint64 seed, GError **error) {
  if (!check(isfinite(rate) && rate > 0, error, "poisson: rate must be > 0 (got %g)", rate))
    return NULL;
  EmaTraceArrivals *a = arrivals_new(KIND_POISSON, seed);
  a->rate = rate;
  return a;
}

EmaTraceArrivals *ema_trace_arrivals_new_at_once(void) {
  return arrivals_new(KIND_AT_ONCE, 0);
}

EmaTraceArrivals *ema_trace_arrivals_new_gamma(double rate, double cv, guint64 seed,
                                               GError **error) {
  if (!check(isfinite(rate) && rate > 0, error, "gamma: rate must be > 0 (got %g)", rate) ||
      !check(isfinite(cv) && cv > 0, error, "gamma: cv must be > 0 (got %g)", cv))
    return NULL;
  EmaTraceArrivals *a = arrivals_new(KIND_GAMMA, seed);
  a->rate = rate;
  a->gamma_shape = 1.0 / (cv * cv);
  a->gamma_scale = cv * cv / rate;
  return a;
}

/* The fewest requests an on/off burst may hold on average (rate_on x mean_on). */
#define ONOFF_MIN_BURST_REQUESTS 1e-3

EmaTraceArrivals *ema_trace_arrivals_new_onoff(double rate_on, double rate_off, EmaTime mean_on,
                                               EmaTime mean_off, guint64 seed, GError **error) {
  if (!check(isfinite(rate_on) && rate_on > 0, error, "onoff: rate_on must be > 0 (got %g)",
             rate_on) ||
      !check(isfinite(rate_off) && rate_off >= 0, error, "onoff: rate_off must be >= 0 (got %g)",
             rate_off) ||
      !check(mean_on > 0, error, "onoff: mean on duration must be > 0") ||
      !check(mean_off > 0, error, "onoff: mean off duration must be > 0") ||
      /* the generator walks the periods one by one: bursts that hold almost no request would
       * take it millions of periods per arrival */
      !check(rate_on * ((double) mean_on * 1e-9) >= ONOFF_MIN_BURST_REQUESTS, error,
             "onoff: a burst holds %g requests on average (rate_on x mean_on); at least %g "
             "are needed",
             rate_on * ((double) mean_on * 1e-9), ONOFF_MIN_BURST_REQUESTS))
    return NULL;
  EmaTraceArrivals *a = arrivals_new(KIND_ONOFF, seed);
  a->rate_on = rate_on;
  a->rate_off = rate_off;
  a->mean_on = (double) mean_on * 1e-9;
  a->mean_off = (double) mean_off * 1e-9;
  a->on = TRUE;
  a->phase_end = gsl_ran_exponential(a->rng, a->mean_on);
  return a;
}

EmaTraceArrivals *ema_trace_arrivals_new_diurnal(double rate_min, double rate_max, EmaTime period,
                                                 guint64 seed, GError **error) {
  if (!check(isfinite(rate_min) && rate_min >= 0, error, "diurnal: rate_min must be >= 0 (got %g)",
             rate_min) ||
      !check(isfinite(rate_max) && rate_max > 0 && rate_max >= rate_min, error,
             "diurnal: rate_max must be > 0 and >= rate_min (got %g)", rate_max) ||
      !check(period > 0, error, "diurnal: period must be > 0"))
    return NULL;
  EmaTraceArrivals *a = arrivals_new(KIND_DIURNAL, seed);
  a->rate_min = rate_min;
  a->rate_max = rate_max;
  a->period = (double) period * 1e-9;
  return a;
}

EmaTraceArrivals *ema_trace_arrivals_new_phases(const double *rates, const EmaTime *durations,
                                                guint n, guint64 seed, GError **error) {
  double end = 0;
  gboolean any = FALSE;
  if (!check(n > 0, error, "phases: at least one phase is needed"))
    return NULL;
  for (guint k = 0; k < n; k++) {
    if (!check(isfinite(rates[k]) && rates[k] >= 0, error,
               "phases: phase %u: rate must be >= 0 (got %g)", k + 1, rates[k]) ||
        !check(durations[k] > 0, error, "phases: phase %u: duration must be > 0", k + 1))
      return NULL;
    any |= rates[k] > 0;
  }
  if (!check(rates[n - 1] > 0, error, "phases: the last phase's rate must be > 0 (it lasts on)") ||
      !check(any, error, "phases: some rate must be > 0"))
    return NULL;
  EmaTraceArrivals *a = arrivals_new(KIND_PHASES, seed);
  a->n_phases = n;
  a->phase_rates = g_new(double, n);
  a->phase_ends = g_new(double, n);
  for (guint k = 0; k < n; k++) {
    end += (double) durations[k] * 1e-9;
    a->phase_rates[k] = rates[k];
    a->phase_ends[k] = k + 1 == n ? INFINITY : end;
  }
  return a;
}

static void advance(EmaTraceArrivals *a) {
  switch (a->kind) {
  case KIND_AT_ONCE:
    return;
  case KIND_POISSON:
    a->t += gsl_ran_exponential(a->rng, 1.0 / a->rate);
    return;
  case KIND_GAMMA:
    a->t += gsl_ran_gamma(a->rng, a->gamma_shape, a->gamma_scale);
    return;
  case KIND_ONOFF:
    /* Exponential gaps are memoryless: a gap that crosses the end of the
     * period is discarded and drawn again at the next period's rate. */
    for (;;) {
      double rate = a->on ? a->rate_on : a->rate_off;
      if (rate > 0) {
        double next = a->t + gsl_ran_exponential(a->rng, 1.0 / rate);
        if (next < a->phase_end) {
          a->t = next;
          return;
        }
      }
      a->t = a->phase_end;
      a->on = !a->on;
      a->phase_end = a->t + gsl_ran_exponential(a->rng, a->on ? a->mean_on : a->mean_off);
    }
  case KIND_PHASES:
    /* piecewise-constant Poisson: as for on/off, a gap that crosses the end
     * of a phase is drawn again from that end at the next phase's rate */
    for (;;) {
      double rate = a->phase_rates[a->phase];
      if (rate > 0) {
        double next = a->t + gsl_ran_exponential(a->rng, 1.0 / rate);
        if (next < a->phase_ends[a->phase]) {
          a->t = next;
          return;
        }
      }
      a->t = a->phase_ends[a->phase];
      a->phase++;
    }
  case KIND_DIURNAL:
    /* Lewis-Shedler thinning: candidates at rate_max, each kept with
     * probability rate(t) / rate_max. */
    for (;;) {
      a->t += gsl_ran_exponential(a->rng, 1.0 / a->rate_max);
      double rate = a->rate_min +
                    (a->rate_max - a->rate_min) * (1.0 - cos(2.0 * G_PI * a->t / a->period)) / 2.0;
      if (gsl_rng_uniform(a->rng) * a->rate_max < rate)
        return;
    }
  }
  g_assert_not_reached();
}

EmaTime ema_trace_arrivals_next(EmaTraceArrivals *arrivals) {
  g_return_val_if_fail(arrivals != NULL, EMA_TIME_NEVER);

  advance(arrivals);
  double ns = arrivals->t * 1e9;
  return ns >= 9.2e18 ? EMA_TIME_NEVER : (EmaTime) llround(ns);
}

void ema_trace_arrivals_free(EmaTraceArrivals *arrivals) {
  if (arrivals == NULL)
    return;
  gsl_rng_free(arrivals->rng);
  g_free(arrivals->phase_rates);
  g_free(arrivals->phase_ends);
  g_free(arrivals);
}
