/* fit.h: the copy-time fit of EMA's fabric model, done on measurements.
 *
 * A copy of n bytes alone takes (sim/hw/fabric.c, hwmodel.h's link keys)
 *
 *   t(n) = F + R (1 - exp(-n / B)) + n / W
 *
 * F: fixed cost (link.copy_fixed_cost), R: ramp time (copy_ramp_time),
 * B: ramp bytes (copy_ramp_bytes), W: bandwidth (link.bandwidth). Without
 * the ramp (host copies: host.copy_fixed_cost) it is t(n) = F + n / W.
 *
 * The fit minimises the sum of squared RELATIVE errors over the measured
 * sizes, so that a 4 KiB copy of 6 us weighs as much as a 4 GiB copy of
 * 11 ms. For a fixed B the model is linear in (F, R, 1/W): a non-negative
 * linear least-squares problem, solved exactly by trying every support set
 * (the optimum is the unconstrained solution on its support). B is then
 * found by a grid over log B and Brent's method around the best grid point.
 * Pure C (GSL), no CUDA; validate/tests/test-fit.c recovers known
 * parameters from synthetic data. */
#pragma once

#include <glib.h>

G_BEGIN_DECLS

typedef struct {
  double bytes;   /* copy size */
  double seconds; /* measured time (a median of repeats), > 0 */
} EmaCopyPoint;

typedef struct {
  double fixed_s;       /* F */
  double ramp_s;        /* R (0 without the ramp, or when the data need none) */
  double ramp_bytes;    /* B (0 without the ramp) */
  double bandwidth;     /* W, bytes per second */
  double max_rel_error; /* largest |t(n) - measured| / measured over the points */
  double rms_rel_error; /* root mean square of the same */
  guint points;         /* how many points were fitted */
} EmaCopyFit;

/* Fit N points; WITH_RAMP chooses the four-parameter model, else F + n/W.
 * Needs at least 4 (2) points of distinct sizes and every size and time
 * positive and finite (EMA_VALIDATE_ERROR_FIT otherwise). The fit always
 * has W > 0 (with F = R = 0 if nothing better fits, e.g. when times fall
 * with size; max_rel_error then shows how poor it is). */
gboolean ema_copy_fit(const EmaCopyPoint *points, guint n, gboolean with_ramp, EmaCopyFit *out,
                      GError **error);

/* t(n) of a fit, seconds. */
double ema_copy_fit_time(const EmaCopyFit *fit, double bytes);

G_END_DECLS
