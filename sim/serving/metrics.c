/* metrics.c: latency histograms and the per-tenant metrics observer
 * (metrics.h). The observer only reads what the engine reports.
 *
 * Histogram buckets: a value v < 512 is its own bucket; otherwise, with
 * s = floor(log2 v) - 8, v falls in bucket s * 256 + (v >> s), which covers
 * [(v >> s) << s, ((v >> s) + 1) << s). Bucket indices grow with v, so a
 * walk up from the lowest non-empty bucket (or down from the highest)
 * finds nearest-rank quantiles. */
#include "ema/serving/metrics.h"

#include <float.h>
#include <math.h>

#include "ema/core/file.h"

#define SUB_BUCKETS 256
#define EXACT_LIMIT (2 * SUB_BUCKETS)
#define N_BUCKETS (55 * SUB_BUCKETS + EXACT_LIMIT)

struct _EmaHistogram {
  guint64 count;
  double sum, sum_squares;
  guint64 min, max;
  guint64 buckets[N_BUCKETS];
};

static guint bucket_shift(guint64 value) {
  return value < EXACT_LIMIT ? 0 : (guint) (63 - __builtin_clzll(value)) - 8;
}

static guint bucket_index(guint64 value) {
  guint shift = bucket_shift(value);
  return shift == 0 ? (guint) value : shift * SUB_BUCKETS + (guint) (value >> shift);
}

EmaHistogram *ema_histogram_new(void) {
  EmaHistogram *histogram = g_new0(EmaHistogram, 1);
  histogram->min = G_MAXUINT64;
  return histogram;
}

void ema_histogram_free(EmaHistogram *histogram) {
  g_free(histogram);
}

void ema_histogram_add_n(EmaHistogram *histogram, guint64 value, guint64 n) {
  if (n == 0)
    return;
  histogram->buckets[bucket_index(value)] += n;
  histogram->count += n;
  histogram->sum += (double) value * (double) n;
  histogram->sum_squares += (double) value * (double) value * (double) n;
  histogram->min = MIN(histogram->min, value);
  histogram->max = MAX(histogram->max, value);
}

void ema_histogram_add(EmaHistogram *histogram, guint64 value) {
  ema_histogram_add_n(histogram, value, 1);
}

guint64 ema_histogram_count(const EmaHistogram *histogram) {
  return histogram->count;
}

double ema_histogram_mean(const EmaHistogram *histogram) {
  return histogram->count ? histogram->sum / (double) histogram->count : 0;
}

double ema_histogram_std(const EmaHistogram *histogram) {
  double mean, variance;
  if (histogram->count == 0)
    return 0;
  mean = histogram->sum / (double) histogram->count;
  variance = histogram->sum_squares / (double) histogram->count - mean * mean;
  return variance > 0 ? sqrt(variance) : 0;
}

/* The midpoint of bucket INDEX. */
static double bucket_middle(guint index) {
  guint shift;
  guint64 low;
  if (index < EXACT_LIMIT)
    return index;
  shift = index / SUB_BUCKETS - 1;
  low = (guint64) (index - shift * SUB_BUCKETS) << shift;
  return (double) low + ((double) (G_GUINT64_CONSTANT(1) << shift) - 1) / 2;
}

double ema_histogram_quantile(const EmaHistogram *histogram, double q) {
  guint64 rank, seen = 0;
  guint i, low, high;
  g_return_val_if_fail(q >= 0 && q <= 1, 0);
  if (histogram->count == 0)
    return 0;
  /* ceil(q x count), where a product a few ulps above a whole number is that
   * number (0.035 x 10000 = 350.00000000000006 is rank 350, not 351) */
  rank = (guint64) ceil(q * (double) histogram->count * (1 - 4 * DBL_EPSILON));
  rank = CLAMP(rank, 1, histogram->count);
  /* the buckets outside those of min and max hold nothing: walk from the
   * nearer end (each histogram is 14,592 buckets, a run's end reads several
   * quantiles of each) */
  low = bucket_index(histogram->min);
  high = bucket_index(histogram->max);
  if (rank <= histogram->count / 2) {
    for (i = low; seen + histogram->buckets[i] < rank; i++)
      seen += histogram->buckets[i];
  } else {
    /* SEEN counts the values above bucket i: the rank-th is in the first
     * bucket, from the top, under which fewer than RANK values lie */
    for (i = high; histogram->count - seen - histogram->buckets[i] >= rank; i--)
      seen += histogram->buckets[i];
  }
  g_assert(i >= low && i <= high);
  return CLAMP(bucket_middle(i), (double) histogram->min, (double) histogram->max);
}

/* ---- per-tenant metrics ---------------------------------------------------- */

EmaTenantMetrics *ema_tenant_metrics_new(const char *tenant, FILE *requests_csv) {
  EmaTenantMetrics *metrics = g_new0(EmaTenantMetrics, 1);
  metrics->tenant = tenant;
  metrics->requests_csv = requests_csv;
  {
    GString *field = g_string_new(NULL);
    ema_file_csv_field(field, tenant);
    metrics->tenant_csv = g_string_free(field, FALSE);
  }
  metrics->first_arrival = metrics->last_finish = -1;
  metrics->ttft = ema_histogram_new();
  metrics->tpot = ema_histogram_new();
  metrics->itl = ema_histogram_new();
  metrics->e2e = ema_histogram_new();
  metrics->last_step_end = -1;
  return metrics;
}

void ema_tenant_metrics_free(EmaTenantMetrics *metrics) {
  if (metrics == NULL)
    return;
  ema_histogram_free(metrics->ttft);
  ema_histogram_free(metrics->tpot);
  ema_histogram_free(metrics->itl);
  ema_histogram_free(metrics->e2e);
  g_free(metrics->tenant_csv);
  g_free(metrics);
}

void ema_requests_csv_header(FILE *out) {
  fputs("tenant,id,arrival_s,scheduled_s,first_token_s,finish_s,prompt_tokens,output_tokens,"
        "preemptions,ttft_ms,tpot_ms,e2e_ms\n",
        out);
}

/* ns as seconds and as milliseconds, exactly (integer division, no rounding). */
static void print_s(FILE *out, EmaTime ns) {
  fprintf(out, ",%" G_GINT64_FORMAT ".%09" G_GINT64_FORMAT, ns / 1000000000, ns % 1000000000);
}

static void print_ms(FILE *out, EmaTime ns) {
  fprintf(out, ",%" G_GINT64_FORMAT ".%06" G_GINT64_FORMAT, ns / 1000000, ns % 1000000);
}

static void on_finish(gpointer data, const EmaRequest *request) {
  EmaTenantMetrics *metrics = data;
  EmaTime ttft = request->first_token - request->arrival;
  EmaTime e2e = request->finished - request->arrival;
  EmaTime tpot = -1;
  metrics->completed++;
  metrics->prompt_tokens += request->prompt_tokens;
  metrics->output_tokens += request->output_tokens;
  metrics->preemptions += request->preemptions;
  if (metrics->first_arrival < 0 || request->arrival < metrics->first_arrival)
    metrics->first_arrival = request->arrival;
  metrics->last_finish = MAX(metrics->last_finish, request->finished);
  ema_histogram_add(metrics->ttft, (guint64) ttft);
  ema_histogram_add(metrics->e2e, (guint64) e2e);
  if (request->output_tokens > 1) {
    /* rounded to the nearest ns */
    tpot = (request->finished - request->first_token + (request->output_tokens - 1) / 2) /
           (request->output_tokens - 1);
    ema_histogram_add(metrics->tpot, (guint64) tpot);
  }
  if ((metrics->slo_ttft == 0 || ttft <= metrics->slo_ttft) &&
      (metrics->slo_tpot == 0 || tpot < 0 || tpot <= metrics->slo_tpot))
    metrics->slo_met++;
  if (metrics->requests_csv == NULL)
    return;
  fprintf(metrics->requests_csv, "%s,%" G_GUINT64_FORMAT, metrics->tenant_csv, request->id);
  print_s(metrics->requests_csv, request->arrival);
  print_s(metrics->requests_csv, request->scheduled);
  print_s(metrics->requests_csv, request->first_token);
  print_s(metrics->requests_csv, request->finished);
  fprintf(metrics->requests_csv, ",%u,%u,%u", request->prompt_tokens, request->output_tokens,
          request->preemptions);
  print_ms(metrics->requests_csv, ttft);
  if (tpot >= 0)
    print_ms(metrics->requests_csv, tpot);
  else
    fputs(",", metrics->requests_csv);
  print_ms(metrics->requests_csv, e2e);
  fputc('\n', metrics->requests_csv);
}

static void on_step(gpointer data, const EmaStepReport *step) {
  EmaTenantMetrics *metrics = data;
  EmaTime end = step->start + step->duration;
  /* each decode token's gap: since the engine's previous step ended (a
   * sequence that decoded then got its previous token then) */
  if (step->batch.decode_seqs > 0)
    ema_histogram_add_n(
        metrics->itl,
        (guint64) (metrics->last_step_end >= 0 ? end - metrics->last_step_end : step->duration),
        step->batch.decode_seqs);
  metrics->last_step_end = end;
  metrics->steps++;
  metrics->tokens_generated += step->sampled;
  metrics->busy += step->duration;
  metrics->last_step = step->duration;
}

EmaEngineObserver ema_tenant_metrics_observer(EmaTenantMetrics *metrics) {
  return (EmaEngineObserver){on_step, on_finish, metrics};
}

void ema_tenant_metrics_sample_kv(EmaTenantMetrics *metrics, guint64 used, guint64 own,
                                  guint64 usable, guint64 count) {
  metrics->kv_util_sum += (own ? (double) used / (double) own : 0) * (double) count;
  metrics->kv_util_usable_sum += (usable ? (double) used / (double) usable : 0) * (double) count;
  metrics->kv_util_samples += count;
}

static double active_span_s(const EmaTenantMetrics *metrics) {
  if (metrics->completed == 0 || metrics->last_finish <= metrics->first_arrival)
    return 0;
  return (double) (metrics->last_finish - metrics->first_arrival) / 1e9;
}

double ema_tenant_metrics_throughput_tok_s(const EmaTenantMetrics *metrics) {
  double span = active_span_s(metrics);
  return span > 0 ? (double) metrics->output_tokens / span : 0;
}

double ema_tenant_metrics_total_tok_s(const EmaTenantMetrics *metrics) {
  double span = active_span_s(metrics);
  return span > 0 ? (double) (metrics->prompt_tokens + metrics->output_tokens) / span : 0;
}

double ema_tenant_metrics_goodput_req_s(const EmaTenantMetrics *metrics) {
  double span = active_span_s(metrics);
  return span > 0 ? (double) metrics->slo_met / span : 0;
}

double ema_tenant_metrics_slo_attainment(const EmaTenantMetrics *metrics, guint64 timed_out) {
  guint64 served = metrics->completed + timed_out;
  return served ? (double) metrics->slo_met / (double) served : 0;
}

double ema_tenant_metrics_req_per_s(const EmaTenantMetrics *metrics) {
  double span = active_span_s(metrics);
  return span > 0 ? (double) metrics->completed / span : 0;
}

double ema_tenant_metrics_kv_util_mean(const EmaTenantMetrics *metrics) {
  return metrics->kv_util_samples ? metrics->kv_util_sum / (double) metrics->kv_util_samples : 0;
}

double ema_tenant_metrics_kv_util_usable_mean(const EmaTenantMetrics *metrics) {
  return metrics->kv_util_samples ? metrics->kv_util_usable_sum / (double) metrics->kv_util_samples
                                  : 0;
}
