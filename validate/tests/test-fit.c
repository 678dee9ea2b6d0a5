/* test-fit.c: the statistics of repeated timings (validate/stats.c) and
 * the copy-time fit (validate/fit.c). The fit must recover the parameters
 * that generated synthetic copy times, with and without the ramp, hold up
 * under measurement-like noise, and reject unusable points with a clear
 * message. */
#include <math.h>

#include "errors.h"
#include "fit.h"
#include "stats.h"
#include "testutil.h"

#define KIB 1024.0
#define MIB (1024.0 * KIB)

static void assert_close(double actual, double expected, double relative, const char *what) {
  if (!(fabs(actual - expected) <= relative * fabs(expected)))
    g_error("%s: %.9g, expected %.9g (relative tolerance %g)", what, actual, expected, relative);
}

/* ---- statistics ----------------------------------------------------------- */

static void test_stats_odd(void) {
  const double samples[] = {5, 1, 4, 2, 3};
  EmaSampleStats s;
  ema_sample_stats(samples, G_N_ELEMENTS(samples), &s);
  g_assert_cmpuint(s.n, ==, 5);
  g_assert_cmpfloat(s.median, ==, 3);
  g_assert_cmpfloat(s.min, ==, 1);
  g_assert_cmpfloat(s.max, ==, 5);
  g_assert_cmpfloat(s.q1, ==, 2);
  g_assert_cmpfloat(s.q3, ==, 4);
  g_assert_cmpfloat(s.mean, ==, 3);
  g_assert_cmpfloat_with_epsilon(ema_sample_spread_pct(&s), 200.0 / 3, 1e-12);
  /* the samples are left as they were */
  g_assert_cmpfloat(samples[0], ==, 5);
}

static void test_stats_even(void) {
  const double samples[] = {4, 1, 3, 2};
  EmaSampleStats s;
  ema_sample_stats(samples, G_N_ELEMENTS(samples), &s);
  g_assert_cmpfloat(s.median, ==, 2.5);
  g_assert_cmpfloat(s.q1, ==, 1.75);
  g_assert_cmpfloat(s.q3, ==, 3.25);
  g_assert_cmpfloat(ema_median(samples, 4), ==, 2.5);
}

static void test_stats_single(void) {
  const double sample = 7e-6;
  EmaSampleStats s;
  ema_sample_stats(&sample, 1, &s);
  g_assert_cmpfloat(s.median, ==, sample);
  g_assert_cmpfloat(s.q1, ==, sample);
  g_assert_cmpfloat(s.q3, ==, sample);
  g_assert_cmpfloat(ema_sample_spread_pct(&s), ==, 0);
}

static void test_stats_zero_median(void) {
  const double samples[] = {0, 0, 0};
  EmaSampleStats s;
  ema_sample_stats(samples, 3, &s);
  g_assert_cmpfloat(ema_sample_spread_pct(&s), ==, 0);
}

/* ---- the fit -------------------------------------------------------------- */

/* Copy times of the model with the given parameters at 4 KiB, 16 KiB, ...
 * up to LARGEST, each size COPIES times (both directions of a link give the
 * same size twice). NOISE, if not zero, multiplies point i by
 * 1 + NOISE * (-1)^i * ((i mod 3) + 1) / 3. */
static GArray *synthetic(const EmaCopyFit *truth, double largest, guint copies, double noise) {
  GArray *points = g_array_new(FALSE, FALSE, sizeof(EmaCopyPoint));
  guint i = 0;
  for (double n = 4 * KIB; n <= largest; n *= 4) {
    for (guint k = 0; k < copies; k++, i++) {
      double factor = 1 + noise * ((i % 2) ? -1 : 1) * ((i % 3) + 1) / 3.0;
      EmaCopyPoint point = {n, ema_copy_fit_time(truth, n) * factor};
      g_array_append_val(points, point);
    }
  }
  return points;
}

static EmaCopyFit fit_or_die(GArray *points, gboolean with_ramp) {
  EmaCopyFit fit;
  GError *error = NULL;
  g_assert_true(
      ema_copy_fit((const EmaCopyPoint *) points->data, points->len, with_ramp, &fit, &error));
  g_assert_no_error(error);
  g_assert_cmpuint(fit.points, ==, points->len);
  return fit;
}

static void test_fit_time(void) {
  EmaCopyFit fit = {.fixed_s = 6e-6, .ramp_s = 5e-6, .ramp_bytes = 2 * MIB, .bandwidth = 4e11};
  double n = 2 * MIB;
  double expected = 6e-6 + 5e-6 * (1 - exp(-1.0)) + n / 4e11;
  assert_close(ema_copy_fit_time(&fit, n), expected, 1e-15, "t(n)");
  fit.ramp_s = 0;
  assert_close(ema_copy_fit_time(&fit, n), 6e-6 + n / 4e11, 1e-15, "t(n) without ramp");
}

/* The parameters of hwmodels/servers/h200x2.yaml, 11 sizes, both
 * directions: recovered to within the fit's numerical accuracy. */
static void test_fit_recovers_h200(void) {
  EmaCopyFit truth = {6.4e-6, 4.95e-6, 2.64 * MIB, 397e9, 0, 0, 0};
  g_autoptr(GArray) points = synthetic(&truth, 4 * 1024 * MIB, 2, 0);
  EmaCopyFit fit = fit_or_die(points, TRUE);
  assert_close(fit.fixed_s, truth.fixed_s, 1e-6, "fixed");
  assert_close(fit.ramp_s, truth.ramp_s, 1e-6, "ramp");
  assert_close(fit.ramp_bytes, truth.ramp_bytes, 1e-5, "ramp bytes");
  assert_close(fit.bandwidth, truth.bandwidth, 1e-9, "bandwidth");
  g_assert_cmpfloat(fit.max_rel_error, <, 1e-9);
  g_assert_cmpfloat(fit.rms_rel_error, <=, fit.max_rel_error);
}

/* A pull-like copy: a larger fixed cost and ramp, fewer sizes. */
static void test_fit_recovers_pull(void) {
  EmaCopyFit truth = {15.2e-6, 11e-6, 7.5 * MIB, 389e9, 0, 0, 0};
  g_autoptr(GArray) points = synthetic(&truth, 256 * MIB, 1, 0);
  EmaCopyFit fit = fit_or_die(points, TRUE);
  /* 8 sizes up to 256 MiB pin the parameters less tightly than 11 to 4 GiB */
  assert_close(fit.fixed_s, truth.fixed_s, 1e-5, "fixed");
  assert_close(fit.ramp_s, truth.ramp_s, 1e-5, "ramp");
  assert_close(fit.ramp_bytes, truth.ramp_bytes, 1e-4, "ramp bytes");
  assert_close(fit.bandwidth, truth.bandwidth, 1e-7, "bandwidth");
  g_assert_cmpfloat(fit.max_rel_error, <, 1e-7);
}

/* +-1% noise, as repeated timings show: still within a few percent. */
static void test_fit_noise(void) {
  EmaCopyFit truth = {6.4e-6, 4.95e-6, 2.64 * MIB, 397e9, 0, 0, 0};
  g_autoptr(GArray) points = synthetic(&truth, 4 * 1024 * MIB, 2, 0.01);
  EmaCopyFit fit = fit_or_die(points, TRUE);
  assert_close(fit.fixed_s, truth.fixed_s, 0.05, "fixed");
  assert_close(fit.ramp_s + fit.fixed_s, truth.ramp_s + truth.fixed_s, 0.05, "fixed + ramp");
  assert_close(fit.bandwidth, truth.bandwidth, 0.01, "bandwidth");
  g_assert_cmpfloat(fit.max_rel_error, <=, 0.011);
}

/* Host copies: fixed + n / bandwidth. */
static void test_fit_without_ramp(void) {
  EmaCopyFit truth = {5.2e-6, 0, 0, 55.3e9, 0, 0, 0};
  g_autoptr(GArray) points = synthetic(&truth, 1024 * MIB, 1, 0);
  EmaCopyFit fit = fit_or_die(points, FALSE);
  assert_close(fit.fixed_s, truth.fixed_s, 1e-9, "fixed");
  assert_close(fit.bandwidth, truth.bandwidth, 1e-9, "bandwidth");
  g_assert_cmpfloat(fit.ramp_s, ==, 0);
  g_assert_cmpfloat(fit.ramp_bytes, ==, 0);
  g_assert_cmpfloat(fit.max_rel_error, <, 1e-12);
}

/* Data with no ramp fitted with the ramp model: the ramp adds nothing. */
static void test_fit_ramp_not_needed(void) {
  EmaCopyFit truth = {5.2e-6, 0, 0, 55.3e9, 0, 0, 0};
  g_autoptr(GArray) points = synthetic(&truth, 1024 * MIB, 1, 0);
  EmaCopyFit fit = fit_or_die(points, TRUE);
  g_assert_cmpfloat(fit.max_rel_error, <, 1e-6);
  assert_close(fit.bandwidth, truth.bandwidth, 1e-6, "bandwidth");
  assert_close(fit.fixed_s + fit.ramp_s, truth.fixed_s, 1e-3, "fixed + ramp");
}

/* Times that fall with size: the fit still returns a positive bandwidth,
 * and its error says how poorly it fits. */
static void test_fit_falling_times(void) {
  const EmaCopyPoint points[] = {{4096, 4e-3}, {65536, 3e-3}, {1048576, 2e-3}, {16777216, 1e-3}};
  EmaCopyFit fit;
  GError *error = NULL;
  g_assert_true(ema_copy_fit(points, G_N_ELEMENTS(points), TRUE, &fit, &error));
  g_assert_cmpfloat(fit.bandwidth, >, 0);
  g_assert_cmpfloat(fit.max_rel_error, >, 0.3);
}

static void expect_fit_error(const EmaCopyPoint *points, guint n, gboolean with_ramp,
                             const char *part) {
  EmaCopyFit fit;
  GError *error = NULL;
  g_assert_false(ema_copy_fit(points, n, with_ramp, &fit, &error));
  g_assert_error(error, EMA_VALIDATE_ERROR, EMA_VALIDATE_ERROR_FIT);
  ema_test_assert_contains(error->message, part);
  g_error_free(error);
}

static void test_fit_errors(void) {
  const EmaCopyPoint three[] = {{4096, 6e-6}, {65536, 7e-6}, {1048576, 10e-6}};
  const EmaCopyPoint repeated[] = {{4096, 6e-6}, {4096, 6.1e-6}, {65536, 7e-6}, {65536, 7.1e-6}};
  const EmaCopyPoint zero_time[] = {{4096, 0}, {65536, 7e-6}};
  const EmaCopyPoint negative_size[] = {{-4096, 6e-6}, {65536, 7e-6}};
  const EmaCopyPoint not_finite[] = {{4096, NAN}, {65536, 7e-6}};
  expect_fit_error(three, 3, TRUE,
                   "3 distinct sizes given, the fixed + ramp + n/bandwidth model "
                   "needs at least 4");
  expect_fit_error(repeated, 4, TRUE, "2 distinct sizes given");
  expect_fit_error(three, 1, FALSE,
                   "1 distinct sizes given, the fixed + n/bandwidth model needs "
                   "at least 2");
  expect_fit_error(three, 0, FALSE, "0 distinct sizes given");
  expect_fit_error(zero_time, 2, FALSE, "point 0 (4096 bytes, 0 s) needs a positive, finite");
  expect_fit_error(negative_size, 2, FALSE, "point 0 (-4096 bytes");
  expect_fit_error(not_finite, 2, FALSE, "point 0");
}

int main(int argc, char **argv) {
  g_test_init(&argc, &argv, NULL);
  g_test_add_func("/validate/stats/odd", test_stats_odd);
  g_test_add_func("/validate/stats/even", test_stats_even);
  g_test_add_func("/validate/stats/single", test_stats_single);
  g_test_add_func("/validate/stats/zero-median", test_stats_zero_median);
  g_test_add_func("/validate/fit/time", test_fit_time);
  g_test_add_func("/validate/fit/recovers-h200", test_fit_recovers_h200);
  g_test_add_func("/validate/fit/recovers-pull", test_fit_recovers_pull);
  g_test_add_func("/validate/fit/noise", test_fit_noise);
  g_test_add_func("/validate/fit/without-ramp", test_fit_without_ramp);
  g_test_add_func("/validate/fit/ramp-not-needed", test_fit_ramp_not_needed);
  g_test_add_func("/validate/fit/falling-times", test_fit_falling_times);
  g_test_add_func("/validate/fit/errors", test_fit_errors);
  return g_test_run();
}
