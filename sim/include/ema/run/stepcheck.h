/* stepcheck.h: the step-time model against measured steps, on the CPU.
 *
 * Two checks, each a table of measured and predicted times and the median
 * and worst relative error:
 *  - captured steps (hwmodels/profiles/README.md's steps.csv: model,tp,phase,batch,context,
 *    chunk,prior_context,time_us,...): each row one step, predicted by the
 *    step model of that model shape on one GPU of SERVER in a TP group of tp;
 *  - static batches (splitwise-perf/perf_model.csv: Llama2-70B on
 *    a100-80gb and h100-80gb at TP 2/4/8): prompt_time as one prefill step of
 *    batch_size sequences of prompt_size tokens, token_time as the mean of
 *    the decode steps of the token_size - 1 later tokens (sampled at 33
 *    evenly spaced contexts and averaged; the step time is smooth in the
 *    context), each measured point the median of its repeats.
 * The GPU time only: no engine step cost is added (steptime.h).
 * Errors: a malformed row is EMA_CONFIG_ERROR "file:line: ..."; a model or
 * server that does not resolve, the loader's error. */
#pragma once

#include <glib.h>

#include "ema/serving/tenant.h"

G_BEGIN_DECLS

typedef struct {
  guint rows;          /* rows compared */
  double median_error; /* of |predicted / measured - 1| */
  double worst_error;
  double mean_signed_error; /* mean of predicted / measured - 1 */
} EmaStepCheckStats;

/* Compare STEPS_CSV's rows with SERVER's step model; one CSV line per row
 * (header first) appended to TABLE, and the summary in STATS. */
gboolean ema_stepcheck_steps(const char *steps_csv, const char *server, GString *table,
                             EmaStepCheckStats *stats, GError **error);

/* The same comparison as a markdown table appended to SUMMARY: one row per
 * (model, phase) in the order first seen (steps, median and worst absolute
 * error, mean signed error), then "all both"; STATS as above. */
gboolean ema_stepcheck_steps_summary(const char *steps_csv, const char *server, GString *summary,
                                     EmaStepCheckStats *stats, GError **error);

/* Compare perf_model.csv's Llama2-70B points (a100-80gb on a100x8-dgx,
 * h100-80gb on h100x8-hgx; the power-capped h100-80gb-pcap and BLOOM-176B,
 * which has no shape here, are skipped). MAX_POINTS > 0 keeps the first
 * MAX_POINTS distinct points (a test-sized run). Each step's GPU time alone
 * (ENGINE NULL), or as ENGINE's host runs it at the point's TP degree
 * (ema_engine_step_duration: its CPU costs and, where the step runs eagerly,
 * every step with ENFORCE_EAGER, its eager launch floor; the prompts in one
 * step). STATS[0..3]: prefill on A100, decode on A100, prefill on H100,
 * decode on H100. */
gboolean ema_stepcheck_static(const char *perf_csv, guint max_points,
                              const EmaEngineProfile *engine, gboolean enforce_eager,
                              GString *table, EmaStepCheckStats stats[4], GError **error);

/* "median 1.2%, worst 3.4% (mean +0.5%) over N rows" */
char *ema_stepcheck_stats_format(const EmaStepCheckStats *stats);

G_END_DECLS
