/* metrics.h: what a serving run measures, collected by observers of the
 * engines (models never measure themselves). Per tenant: request counts and
 * tokens, latency distributions (TTFT, TPOT, E2E), preemptions, KV-cache
 * use; rows of requests.csv as requests finish.
 *
 * Latency distributions are log-linear histograms of integer nanoseconds
 * (HDR-style): values below 512 ns are exact, larger ones fall in buckets
 * 1/256 of their power of two wide, so a quantile is within 0.2% of the
 * true sample quantile, memory is fixed (115 KiB per histogram) whatever the
 * number of requests, and adding a value is O(1). Quantiles are nearest-rank
 * (the smallest value with at least q of the samples at or below it),
 * reported as the midpoint of that value's bucket, clamped to the observed
 * minimum and maximum. Means are exact. */
#pragma once

#include <stdio.h>

#include <glib.h>

#include "ema/serving/engine.h"

G_BEGIN_DECLS

typedef struct _EmaHistogram EmaHistogram;

EmaHistogram *ema_histogram_new(void);
void ema_histogram_free(EmaHistogram *histogram);
G_DEFINE_AUTOPTR_CLEANUP_FUNC(EmaHistogram, ema_histogram_free)

void ema_histogram_add(EmaHistogram *histogram, guint64 value);
/* VALUE added N times. */
void ema_histogram_add_n(EmaHistogram *histogram, guint64 value, guint64 n);
guint64 ema_histogram_count(const EmaHistogram *histogram);
/* Exact mean of the values added; 0 when empty. */
double ema_histogram_mean(const EmaHistogram *histogram);
/* Exact (population) standard deviation of the values added; 0 when empty. */
double ema_histogram_std(const EmaHistogram *histogram);
/* Nearest-rank quantile Q in [0, 1] (see above); 0 when empty. */
double ema_histogram_quantile(const EmaHistogram *histogram, double q);

/* One tenant's figures. Times are ns; tokens are counts. */
typedef struct {
  const char *tenant; /* borrowed: the tenant's name */
  guint64 completed;
  guint64 prompt_tokens, output_tokens; /* of completed requests */
  guint64 preemptions;                  /* of completed requests */
  EmaTime first_arrival, last_finish;   /* -1 before the first */
  EmaHistogram *ttft;                   /* arrival -> first token */
  EmaHistogram *tpot; /* (finish - first token) / (output - 1), requests with output > 1 */
  EmaHistogram *e2e;  /* arrival -> finish */
  /* inter-token latency: per decode token, the time since its engine's
   * previous step ended (steps are back to back while a sequence decodes,
   * so this is the gap since its previous token; the stall of a preempted
   * request is not in it, its TPOT and E2E hold that) */
  EmaHistogram *itl;
  EmaTime last_step_end; /* -1 before the first step */
  /* SLOs (ns; 0: none) and the completed requests that met every one given */
  EmaTime slo_ttft, slo_tpot;
  guint64 slo_met;
  guint64 steps;
  guint64 tokens_generated; /* output tokens sampled by steps (finished or not, preempted or not) */
  EmaTime busy;             /* sum of step times */
  EmaTime last_step;
  double kv_util_sum;        /* of the samples: blocks used / the tenant's own KV region */
  double kv_util_usable_sum; /* of the samples: blocks used / (used + free: what it can use) */
  guint64 kv_util_samples;
  FILE *requests_csv; /* borrowed; NULL: no rows */
  char *tenant_csv;   /* the name as a requests.csv field (RFC 4180 quoting) */
} EmaTenantMetrics;

EmaTenantMetrics *ema_tenant_metrics_new(const char *tenant, FILE *requests_csv);
void ema_tenant_metrics_free(EmaTenantMetrics *metrics);
G_DEFINE_AUTOPTR_CLEANUP_FUNC(EmaTenantMetrics, ema_tenant_metrics_free)

/* The observer that fills METRICS from an engine. */
EmaEngineObserver ema_tenant_metrics_observer(EmaTenantMetrics *metrics);
/* Add COUNT equal KV-utilisation samples (taken by the timeline sampler;
 * more than one for the samples of an idle stretch it skipped): USED
 * blocks against OWN (its KV region's blocks, fixed) and against USABLE
 * (used + free now: less while it lends, more while it borrows). */
void ema_tenant_metrics_sample_kv(EmaTenantMetrics *metrics, guint64 used, guint64 own,
                                  guint64 usable, guint64 count);

/* The header line of requests.csv. */
void ema_requests_csv_header(FILE *out);

/* Derived figures. Throughput is over the tenant's active span, from its
 * first arrival to its last completion. */
double ema_tenant_metrics_throughput_tok_s(const EmaTenantMetrics *metrics);
double ema_tenant_metrics_req_per_s(const EmaTenantMetrics *metrics);
/* (prompt + output tokens of completed requests) / span */
double ema_tenant_metrics_total_tok_s(const EmaTenantMetrics *metrics);
/* Goodput as vLLM's benchmark_serving.py --goodput defines it: completed
 * requests that met every SLO given, per second (of the span here). */
double ema_tenant_metrics_goodput_req_s(const EmaTenantMetrics *metrics);
/* SLO attainment as DistServe defines it: the share of requests that met
 * every SLO given, of those completed and the TIMED_OUT ones whose client
 * gave up first (each missed them: its client never had its answer);
 * DistServe's goodput is then the highest rate at which this stays at or
 * above a target such as 90%: a sweep's answer. */
double ema_tenant_metrics_slo_attainment(const EmaTenantMetrics *metrics, guint64 timed_out);
/* Mean of used / own KV region (can exceed 1 while it borrows). */
double ema_tenant_metrics_kv_util_mean(const EmaTenantMetrics *metrics);
/* Mean of used / what it could use at the sample (own - lent + borrowed). */
double ema_tenant_metrics_kv_util_usable_mean(const EmaTenantMetrics *metrics);

G_END_DECLS
