/* fit.c: the copy-time fit (fit.h). Notation: point i has size n_i and time
 * t_i; for a ramp scale B, g_i = 1 - exp(-n_i / B). The relative residual
 * of parameters theta = (F, R, s = 1/W) is
 *
 *   r_i = (F + R g_i + s n_i) / t_i - 1 = a_i . theta - 1,
 *   a_i = (1 / t_i, g_i / t_i, n_i / t_i),
 *
 * so for fixed B, minimising sum r_i^2 over theta >= 0 (s > 0) is a linear
 * least-squares problem with the right-hand side 1. Its non-negative optimum
 * is the unconstrained optimum restricted to some support set; every set
 * that contains s is tried (s = 0 cannot describe a copy) and the best
 * feasible one kept. Columns are scaled to unit maximum before GSL's SVD
 * solver, since 1/t and n/t differ by ten orders of magnitude.
 *
 * The outer problem, over u = ln B, is one-dimensional and smooth: a grid of
 * GRID_POINTS values from (smallest size / 1024) to (largest size / 4), then
 * Brent's method on the bracket around the best grid point. */
#include "fit.h"

#include <math.h>

#include <gsl/gsl_errno.h>
#include <gsl/gsl_min.h>
#include <gsl/gsl_multifit.h>

#include "errors.h"

#define GRID_POINTS 241
#define BRENT_MAX_ITERATIONS 200
#define BRENT_REL_TOLERANCE 1e-10

enum { PARAM_FIXED, PARAM_RAMP, PARAM_SLOPE, N_PARAMS };

typedef struct {
  const EmaCopyPoint *points;
  guint n;
  gboolean with_ramp;
} FitProblem;

/* Solve the least-squares problem for ramp scale RAMP_BYTES on the support
 * MASK (bits of PARAM_*). THETA gets the solution (zeros off the support);
 * returns the sum of squared relative residuals, or INFINITY when the
 * solution is infeasible (a negative parameter, s <= 0) or the solver
 * fails. */
static double solve_support(const FitProblem *problem, double ramp_bytes, guint mask,
                            double theta[N_PARAMS]) {
  guint columns = 0, column_of[N_PARAMS];
  double scale[N_PARAMS] = {0, 0, 0};
  double chisq = INFINITY;
  gsl_matrix *design;
  gsl_vector *rhs, *solution;
  gsl_matrix *covariance;
  gsl_multifit_linear_workspace *work;

  for (guint p = 0; p < N_PARAMS; p++) {
    theta[p] = 0;
    if (mask & (1u << p))
      column_of[p] = columns++;
  }
  if (columns > problem->n)
    return INFINITY;

  design = gsl_matrix_alloc(problem->n, columns);
  rhs = gsl_vector_alloc(problem->n);
  solution = gsl_vector_alloc(columns);
  covariance = gsl_matrix_alloc(columns, columns);
  work = gsl_multifit_linear_alloc(problem->n, columns);

  for (guint i = 0; i < problem->n; i++) {
    double n_i = problem->points[i].bytes, t_i = problem->points[i].seconds;
    double row[N_PARAMS] = {1.0 / t_i, 0, n_i / t_i};
    if (problem->with_ramp)
      row[PARAM_RAMP] = -expm1(-n_i / ramp_bytes) / t_i;
    for (guint p = 0; p < N_PARAMS; p++) {
      if (!(mask & (1u << p)))
        continue;
      gsl_matrix_set(design, i, column_of[p], row[p]);
      scale[p] = MAX(scale[p], fabs(row[p]));
    }
    gsl_vector_set(rhs, i, 1.0);
  }
  for (guint p = 0; p < N_PARAMS; p++) {
    if (!(mask & (1u << p)))
      continue;
    if (scale[p] == 0)
      scale[p] = 1; /* an all-zero column: the solver gives it 0 */
    for (guint i = 0; i < problem->n; i++)
      gsl_matrix_set(design, i, column_of[p], gsl_matrix_get(design, i, column_of[p]) / scale[p]);
  }

  if (gsl_multifit_linear(design, rhs, solution, covariance, &chisq, work) != GSL_SUCCESS) {
    chisq = INFINITY;
  } else {
    for (guint p = 0; p < N_PARAMS; p++) {
      if (!(mask & (1u << p)))
        continue;
      theta[p] = gsl_vector_get(solution, column_of[p]) / scale[p];
      if (!(theta[p] >= 0) || !isfinite(theta[p]))
        chisq = INFINITY;
    }
    if (!(theta[PARAM_SLOPE] > 0))
      chisq = INFINITY;
  }

  gsl_multifit_linear_free(work);
  gsl_matrix_free(covariance);
  gsl_vector_free(solution);
  gsl_vector_free(rhs);
  gsl_matrix_free(design);
  return chisq;
}

/* The best feasible support for a ramp scale: the sum of squared relative
 * residuals, and THETA. */
static double solve_for_ramp(const FitProblem *problem, double ramp_bytes, double theta[N_PARAMS]) {
  static const guint supports_with_ramp[] = {
      (1u << PARAM_FIXED) | (1u << PARAM_RAMP) | (1u << PARAM_SLOPE),
      (1u << PARAM_FIXED) | (1u << PARAM_SLOPE),
      (1u << PARAM_RAMP) | (1u << PARAM_SLOPE),
      (1u << PARAM_SLOPE),
  };
  static const guint supports_without_ramp[] = {
      (1u << PARAM_FIXED) | (1u << PARAM_SLOPE),
      (1u << PARAM_SLOPE),
  };
  const guint *supports = problem->with_ramp ? supports_with_ramp : supports_without_ramp;
  guint n_supports =
      problem->with_ramp ? G_N_ELEMENTS(supports_with_ramp) : G_N_ELEMENTS(supports_without_ramp);
  double best = INFINITY;
  for (guint k = 0; k < n_supports; k++) {
    double candidate[N_PARAMS];
    double chisq = solve_support(problem, ramp_bytes, supports[k], candidate);
    if (chisq < best) {
      best = chisq;
      for (guint p = 0; p < N_PARAMS; p++)
        theta[p] = candidate[p];
    }
  }
  return best;
}

/* Objective of the outer search, for GSL: u = ln B. Infeasible is mapped to
 * a large finite value so that Brent's method can still compare. */
static double outer_objective(double log_ramp_bytes, void *data) {
  double theta[N_PARAMS];
  double chisq = solve_for_ramp(data, exp(log_ramp_bytes), theta);
  return isfinite(chisq) ? chisq : G_MAXDOUBLE;
}

/* Brent's method on [LOWER, UPPER] around GUESS (f(GUESS) below both ends). */
static double refine_log_ramp(FitProblem *problem, double lower, double guess, double upper) {
  gsl_function function = {outer_objective, problem};
  gsl_min_fminimizer *minimizer = gsl_min_fminimizer_alloc(gsl_min_fminimizer_brent);
  double result = guess;
  if (gsl_min_fminimizer_set(minimizer, &function, guess, lower, upper) == GSL_SUCCESS) {
    for (int iteration = 0; iteration < BRENT_MAX_ITERATIONS; iteration++) {
      if (gsl_min_fminimizer_iterate(minimizer) != GSL_SUCCESS)
        break;
      result = gsl_min_fminimizer_x_minimum(minimizer);
      if (gsl_min_test_interval(gsl_min_fminimizer_x_lower(minimizer),
                                gsl_min_fminimizer_x_upper(minimizer), 0,
                                BRENT_REL_TOLERANCE) == GSL_SUCCESS)
        break;
    }
  }
  gsl_min_fminimizer_free(minimizer);
  return result;
}

static gboolean check_points(const EmaCopyPoint *points, guint n, gboolean with_ramp,
                             GError **error) {
  guint needed = with_ramp ? 4 : 2, distinct = 0;
  for (guint i = 0; i < n; i++) {
    gboolean seen = FALSE;
    if (!(points[i].bytes > 0) || !isfinite(points[i].bytes) || !(points[i].seconds > 0) ||
        !isfinite(points[i].seconds)) {
      g_set_error(error, EMA_VALIDATE_ERROR, EMA_VALIDATE_ERROR_FIT,
                  "copy fit: point %u (%g bytes, %g s) needs a positive, finite size and time", i,
                  points[i].bytes, points[i].seconds);
      return FALSE;
    }
    for (guint j = 0; j < i && !seen; j++)
      seen = points[j].bytes == points[i].bytes;
    distinct += !seen;
  }
  if (distinct < needed) {
    g_set_error(error, EMA_VALIDATE_ERROR, EMA_VALIDATE_ERROR_FIT,
                "copy fit: %u distinct sizes given, the %s model needs at least %u", distinct,
                with_ramp ? "fixed + ramp + n/bandwidth" : "fixed + n/bandwidth", needed);
    return FALSE;
  }
  return TRUE;
}

/* The fit proper; GSL's abort-on-error handler is off while it runs.
 * Points that admit no finite fit (times so small or sizes so large that
 * the sums overflow or underflow) are an error, not an abort. */
static gboolean fit_points(const EmaCopyPoint *points, guint n, gboolean with_ramp, EmaCopyFit *out,
                           GError **error) {
  FitProblem problem = {points, n, with_ramp};
  double theta[N_PARAMS], chisq, ramp_bytes = 0;
  double sum_sq = 0, worst = 0;

  if (with_ramp) {
    double smallest = points[0].bytes, largest = points[0].bytes;
    double grid[GRID_POINTS], values[GRID_POINTS], lower, upper;
    guint best = 0;
    for (guint i = 1; i < n; i++) {
      smallest = MIN(smallest, points[i].bytes);
      largest = MAX(largest, points[i].bytes);
    }
    lower = log(smallest / 1024.0);
    /* beyond a quarter of the largest size the ramp is a straight line
     * that the bandwidth term already provides: no information there */
    upper = log(largest / 4.0);
    for (guint k = 0; k < GRID_POINTS; k++) {
      grid[k] = lower + (upper - lower) * k / (GRID_POINTS - 1);
      values[k] = outer_objective(grid[k], &problem);
      if (values[k] < values[best])
        best = k;
    }
    ramp_bytes = exp(grid[best]);
    if (best > 0 && best + 1 < GRID_POINTS && values[best] < values[best - 1] &&
        values[best] < values[best + 1])
      ramp_bytes = exp(refine_log_ramp(&problem, grid[best - 1], grid[best], grid[best + 1]));
  }

  /* The support {s} alone always has a feasible solution (every a_i >= 0
   * and the right-hand side is positive), so the best support is finite. */
  chisq = solve_for_ramp(&problem, with_ramp ? ramp_bytes : 1.0, theta);
  if (!isfinite(chisq) || !isfinite(1.0 / theta[PARAM_SLOPE]) || !(theta[PARAM_SLOPE] > 0)) {
    g_set_error(error, EMA_VALIDATE_ERROR, EMA_VALIDATE_ERROR_FIT,
                "copy fit: %u points (%g to %g s) admit no finite fit: are the times in "
                "seconds, and measured?",
                n, points[0].seconds, points[n - 1].seconds);
    return FALSE;
  }

  out->fixed_s = theta[PARAM_FIXED];
  out->ramp_s = with_ramp ? theta[PARAM_RAMP] : 0;
  out->ramp_bytes = with_ramp ? ramp_bytes : 0;
  out->bandwidth = 1.0 / theta[PARAM_SLOPE];
  out->points = n;
  for (guint i = 0; i < n; i++) {
    double relative = ema_copy_fit_time(out, points[i].bytes) / points[i].seconds - 1.0;
    sum_sq += relative * relative;
    worst = MAX(worst, fabs(relative));
  }
  out->max_rel_error = worst;
  out->rms_rel_error = sqrt(sum_sq / n);
  return TRUE;
}

gboolean ema_copy_fit(const EmaCopyPoint *points, guint n, gboolean with_ramp, EmaCopyFit *out,
                      GError **error) {
  gsl_error_handler_t *previous;
  gboolean ok;
  g_return_val_if_fail(out != NULL, FALSE);
  if (!check_points(points, n, with_ramp, error))
    return FALSE;
  previous = gsl_set_error_handler_off();
  ok = fit_points(points, n, with_ramp, out, error);
  gsl_set_error_handler(previous);
  return ok;
}

double ema_copy_fit_time(const EmaCopyFit *fit, double bytes) {
  double ramp = 0;
  if (fit->ramp_s > 0 && fit->ramp_bytes > 0)
    ramp = fit->ramp_s * -expm1(-bytes / fit->ramp_bytes);
  return fit->fixed_s + ramp + bytes / fit->bandwidth;
}
