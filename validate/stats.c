/* stats.c: summary statistics of repeated timings (stats.h). Quantiles use
 * linear interpolation between order statistics (type 7 of Hyndman and Fan,
 * the default of R and NumPy), so the median of an even count is the mean of
 * the two middle samples. */
#include "stats.h"

#include <stdlib.h>
#include <string.h>

static int compare_doubles(const void *a, const void *b) {
  double x = *(const double *) a, y = *(const double *) b;
  return (x > y) - (x < y);
}

/* Quantile P (0..1) of N sorted values. */
static double sorted_quantile(const double *sorted, guint n, double p) {
  double position = p * (double) (n - 1);
  guint below = (guint) position;
  double fraction = position - (double) below;
  if (below + 1 >= n)
    return sorted[n - 1];
  return sorted[below] + fraction * (sorted[below + 1] - sorted[below]);
}

void ema_sample_stats(const double *samples, guint n, EmaSampleStats *out) {
  g_autofree double *sorted = NULL;
  double sum = 0;
  g_return_if_fail(samples != NULL && n > 0 && out != NULL);
  sorted = g_memdup2(samples, sizeof(double) * n);
  qsort(sorted, n, sizeof(double), compare_doubles);
  for (guint i = 0; i < n; i++)
    sum += sorted[i];
  out->n = n;
  out->min = sorted[0];
  out->max = sorted[n - 1];
  out->median = sorted_quantile(sorted, n, 0.5);
  out->q1 = sorted_quantile(sorted, n, 0.25);
  out->q3 = sorted_quantile(sorted, n, 0.75);
  out->mean = sum / n;
}

double ema_sample_spread_pct(const EmaSampleStats *stats) {
  if (stats->median == 0)
    return 0;
  return 100.0 * (stats->q3 - stats->q1) / stats->median;
}

double ema_median(const double *values, guint n) {
  EmaSampleStats stats;
  ema_sample_stats(values, n, &stats);
  return stats.median;
}
