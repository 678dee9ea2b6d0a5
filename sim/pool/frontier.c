/* frontier.c: the transparency frontier (frontier.h). For a remote share
 * f, the step's remote bytes per layer are f x its KV reads per layer; the
 * share found is the largest f (bisection to 0.1%) whose step time is
 * within the tolerance of the all-local step. Step time is monotone in f
 * in every mode that reads remote KV, so bisection is exact to its
 * resolution. Offload's step is not (the lender's partials run beside the
 * borrower's shrinking local attention), so its share is found by a scan
 * of f in steps of 0.1%. */
#include "ema/pool/frontier.h"

#include <math.h>

#include "ema/pool/pool.h"
#include "ema/hw/offload.h"
#include "ema/hw/steptime.h"
#include "ema/core/units.h"
#include "ema/core/node.h"

/* The layer-ahead policy's group size: the smallest power of two whose
 * copy's fixed cost is at most 10% of its time. */
static guint group_for(double fixed_s, double per_layer_s, guint layers) {
  guint group = 1;
  while (group < layers && fixed_s > 0.1 * (fixed_s + group * per_layer_s))
    group *= 2;
  return MIN(group, layers);
}

/* The step with SHARE of its KV remote, read MODE; LANDED: prefetch copies
 * charged to this GPU's HBM as they land. */
static double step_with_share(const EmaStepBreakdown *bd, const EmaServerSpec *server,
                              double layers, double share, EmaRemoteMode mode, gboolean landed) {
  double remote = share * bd->kv_read_bytes / layers;
  EmaPrefetchPlan plan = ema_prefetch_plan_start();
  plan.mode = mode;
  plan.depth = 2;
  if (remote <= 0)
    return bd->layers_s + bd->lm_head_s + bd->allreduce_s + bd->overhead_s;
  plan.layers_per_copy = group_for((double) server->link.copy_fixed_cost / 1e9,
                                   remote / server->link.bandwidth, (guint) layers);
  if (landed)
    return ema_remote_step_seconds_one_lender(bd, server, layers, 0, remote, &plan);
  return ema_remote_step_seconds(bd, server, layers, 1, remote / server->link.bandwidth,
                                 remote / server->link.direct_read_bandwidth, &plan);
}

static double largest_share(const EmaStepBreakdown *bd, const EmaServerSpec *server, double layers,
                            double limit_s, EmaRemoteMode mode, gboolean landed) {
  double lo = 0, hi = 1;
  if (step_with_share(bd, server, layers, 1, mode, landed) <= limit_s)
    return 1;
  while (hi - lo > 0.0005) {
    double mid = (lo + hi) / 2;
    if (step_with_share(bd, server, layers, mid, mode, landed) <= limit_s)
      lo = mid;
    else
      hi = mid;
  }
  return lo;
}

/* The step (seconds) of BATCH sequences of CONTEXT tokens with SHARE of
 * every sequence's KV on one lender and its attention offloaded there (the
 * new tokens' K/V written locally; the lender serving its own requests, so
 * its partials run beside its steps), and in *LENDER_SHARE the share of the
 * lender's HBM time that reading it takes (hw/offload.h r). */
static double offload_step(const EmaStepModel *step, const EmaOffloadModel *offload, guint batch,
                           guint context, double share, double *lender_share) {
  EmaStepBatch local = {.decode_seqs = batch,
                        .decode_context = (1 - share) * (double) batch * context,
                        .logits = batch};
  EmaOffloadShare remote = {
      .seqs = batch, .context = share * (double) batch * context, .lender_busy = TRUE};
  EmaStepBreakdown bd;
  EmaTime t;
  ema_step_time(step, &local, &bd);
  t = ema_offload_step_time(offload, &bd, &remote, 1, share > 0 ? batch : 0, NULL);
  *lender_share = share > 0 && t > 0 ? ema_offload_lender_share(offload, &remote, t) : 0;
  return (double) t / 1e9;
}

/* The largest share (to 0.1%) whose offloaded step is within LIMIT_S and
 * whose lender's share of HBM time is within TOLERANCE. */
static double largest_offload_share(const EmaStepModel *step, const EmaOffloadModel *offload,
                                    guint batch, guint context, double limit_s, double tolerance) {
  double best = 0;
  for (guint k = 1; k <= 1000; k++) {
    double lender, share = k / 1000.0;
    if (offload_step(step, offload, batch, context, share, &lender) <= limit_s &&
        lender <= tolerance)
      best = share;
  }
  return best;
}

/* ema_frontier_fits with MODEL's STEP model on SERVER at TP 1, made already. */
static gboolean step_fits(const EmaLlmSpec *model, const EmaServerSpec *server,
                          const EmaStepModel *step, GError **error) {
  double usable = floor((double) ema_gpu_hbm_bytes(&server->gpu) * EMA_FRONTIER_MEMORY_UTILIZATION);
  guint64 weights = ema_step_model_weight_bytes_per_gpu(step);
  if ((double) weights < usable)
    return TRUE;
  {
    g_autofree char *have = ema_units_format_size_human((guint64) usable);
    g_autofree char *need = ema_units_format_size_human(weights);
    g_set_error(error, EMA_CONFIG_ERROR, EMA_CONFIG_ERROR_INVALID,
                "%s does not fit one GPU of %s: %s of weights against %s of HBM at %.0f%% (the "
                "frontier is of one GPU, TP 1)",
                model->name, server->name, need, have, 100 * EMA_FRONTIER_MEMORY_UTILIZATION);
  }
  return FALSE;
}

gboolean ema_frontier_fits(const EmaLlmSpec *model, const EmaServerSpec *server, GError **error) {
  g_autoptr(EmaStepModel) step = ema_step_model_new(model, server, 1, error);
  return step != NULL && step_fits(model, server, step, error);
}

gboolean ema_frontier_point(const EmaLlmSpec *model, const EmaServerSpec *server, guint batch,
                            guint context, double tolerance, EmaFrontierPoint *point,
                            GError **error) {
  g_autoptr(EmaStepModel) step = ema_step_model_new(model, server, 1, error);
  g_autoptr(EmaOffloadModel) offload = NULL;
  EmaStepBatch work = {0};
  EmaStepBreakdown bd;
  double layers, limit_s;
  if (step == NULL || !step_fits(model, server, step, error) ||
      (offload = ema_offload_model_new(model, server, 1, error)) == NULL)
    return FALSE;
  layers = ema_step_model_layers(step);
  work.decode_seqs = batch;
  work.decode_context = (double) batch * context;
  work.logits = batch;
  ema_step_time(step, &work, &bd);
  point->batch = batch;
  point->context = context;
  point->local_step_s = bd.layers_s + bd.lm_head_s + bd.allreduce_s + bd.overhead_s;
  limit_s = point->local_step_s * (1 + tolerance);
  point->prefetch_share = largest_share(&bd, server, layers, limit_s, EMA_REMOTE_PREFETCH, FALSE);
  point->direct_share = largest_share(&bd, server, layers, limit_s, EMA_REMOTE_DIRECT, FALSE);
  point->prefetch_landed_share =
      largest_share(&bd, server, layers, limit_s, EMA_REMOTE_PREFETCH, TRUE);
  point->offload_share = largest_offload_share(step, offload, batch, context, limit_s, tolerance);
  return TRUE;
}
