/* stepcheck.h: the step-time model against measured steps, on the CPU.
 *
 * Two checks, each a table of measured and predicted times and the median
 * and worst relative error:
 *  - captured steps (hwmodels/profiles/README.md's steps.csv: model,tp,phase,batch,context,
 *    chunk,prior_context,time_us,...): each row one step, predicted by the
 *    step model of that model shape on one GPU of SERVER in a TP group of tp
 *    (a decode or mixed row's context at least 1; a prefill row's batch 0
 *    or 1 and context 0, a decode row's chunk 0 or 1 and prior_context 0:
 *    what the capture writes where the phase has none; std_us, where there,
 *    at least 0 and repeats, where there, at least 1, each column once);
 *  - static batches (splitwise-perf/perf_model.csv: Llama2-70B on
 *    a100-80gb and h100-80gb at TP 2/4/8): prompt_time as one prefill step of
 *    batch_size sequences of prompt_size tokens, token_time as the mean of
 *    the decode steps of the token_size - 1 later tokens (sampled at 33
 *    evenly spaced contexts and averaged; the step time is smooth in the
 *    context; token_size at least 2), each measured point the median of its
 *    repeats.
 * Either way a measured time is from 1 ns to 2^63 ns (the simulator's
 * clock), and a step's KV cache (its sequences' cached and new tokens; a
 * static batch's at its last decode step) must fit its GPUs' HBM after the
 * weights, as no GPU of the server could have run it otherwise.
 * The GPU time only: no engine step cost is added (steptime.h).
 * Errors: a malformed row is EMA_CONFIG_ERROR "file:line:col: ..." (its
 * field: the model's or tp's where the row's step model cannot be made;
 * "file:line:1: ..." for the row's step as a whole: its tokens); a file
 * with no row to compare, "file: no ..."; a server that does not resolve,
 * the loader's error. */
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

/* How ema_stepcheck_static times each static batch. */
typedef struct {
  guint max_points;   /* > 0: the first MAX_POINTS distinct points (a test-sized run) */
  const char *server; /* every row on this server (NULL: its hardware column's, below) */
  /* NULL: the GPU's time alone; else each step as this engine's host runs it at the point's
   * TP degree (ema_engine_step_duration: its CPU costs and, where the step runs eagerly, every
   * step under ENFORCE_EAGER, its eager launch floor) */
  const EmaEngineProfile *engine;
  gboolean enforce_eager;
} EmaStaticCheckOptions;

/* The errors of one hardware's prefill or decode steps ("a100-80gb prefill"). */
typedef struct {
  char *name;
  EmaStepCheckStats stats;
} EmaStaticGroup;

/* An empty array of EmaStaticGroup * that frees them. */
GPtrArray *ema_static_groups_new(void);

/* Compare the static batches of PERF_CSV (splitwise-perf's perf_model.csv
 * format: model, hardware, prompt_size, batch_size, token_size,
 * prompt_time, token_time in ms, tensor_parallel; the repeats of a point
 * are one point, their medians) with the step model: the prompts in one
 * step, then the mean of the decode steps. A row's model is an LLM of
 * hwmodels/llms or one of splitwise's names (llama2-70b), its hardware one
 * of splitwise's GPUs (a100-80gb on a100x8-dgx, h100-80gb on h100x8-hgx,
 * a100-40gb on a100x4-40gb) or a server name, unless OPTIONS->server times
 * every row on one server. Every row is checked whole, one skipped for its
 * model or hardware too (an empty name is an error). TABLE gets one CSV
 * line per point (header first; a name quoted where it needs it), GROUPS
 * (ema_static_groups_new) the errors per hardware and phase in the order
 * first seen, *SKIPPED (NULL when none; free it) what was left out and why
 * ("3 rows skipped: 2 of bloom-176b (unknown model), ..."). */
gboolean ema_stepcheck_static(const char *perf_csv, const EmaStaticCheckOptions *options,
                              GString *table, GPtrArray *groups, char **skipped, GError **error);

/* "median 1.2%, worst 3.4% (mean +0.5%) over N rows" */
char *ema_stepcheck_stats_format(const EmaStepCheckStats *stats);

G_END_DECLS
