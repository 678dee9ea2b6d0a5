/* stats.h: summary statistics of repeated timings. Every measurement of
 * ema-validate is a set of repeats; it is reported as its median with its
 * spread (minimum, quartiles, maximum), never as one run. Pure C, no CUDA. */
#pragma once

#include <glib.h>

G_BEGIN_DECLS

typedef struct {
  guint n;       /* number of samples */
  double median; /* middle value (mean of the two middle ones for even n) */
  double min, max;
  double q1, q3; /* quartiles, linear interpolation between order statistics */
  double mean;
} EmaSampleStats;

/* Statistics of N samples (N >= 1; the array is not modified). */
void ema_sample_stats(const double *samples, guint n, EmaSampleStats *out);

/* The interquartile range relative to the median, in percent (0 when the
 * median is 0): the spread column of the CSV files. */
double ema_sample_spread_pct(const EmaSampleStats *stats);

/* The median of N values (N >= 1). */
double ema_median(const double *values, guint n);

G_END_DECLS
