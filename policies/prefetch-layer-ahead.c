/* prefetch-layer-ahead.c: the `layer-ahead` prefetch policy (and what the
 * `offload` policy, `ema`'s, does where it does not offload). It reads
 * remote KV the cheaper of two ways (pool.h):
 * - direct loads, while they hide under the attention kernel's all-local
 *   KV time: at most `direct_margin` of that time's worth of link bytes.
 *   They cost this GPU nothing, need no staging buffer and land nothing in
 *   its HBM (measured on two H200s: up to 10% of the KV remote left the
 *   step within 0.4% of all-local; validate/results/2026-11-30-h200x2-
 *   direct);
 * - prefetch: copies into a local staging buffer in groups of layers,
 *   `depth` groups ahead of the layer that reads them. The group is the
 *   smallest number of layers whose copy's fixed cost is at most
 *   `fixed_share` of the group's copy time. The link may fill `hide_margin`
 *   of a layer's memory time (the memory side only: a step made long by a
 *   prefill chunk's compute must not admit remote KV that the decode steps
 *   after it cannot hide), and the copies landing in this GPU's HBM may
 *   slow its layers by at most `max_borrower_slowdown`.
 * Either way the lenders' HBM, read at the rate a decode step pulls, may
 * lose at most `max_lender_slowdown` (lender priority), each lender's
 * allowance shared equally among the tenants reading from it and checked
 * against the share of this GPU's remote blocks it holds; a lender without
 * a tenant (an idle GPU) has no steps to slow and bounds nothing. The remote share
 * the plan admits is the larger of the two ways' bounds; the mode is direct
 * when this step's remote bytes fit under the direct bound. */
#include <math.h>

#include "builtin.h"

#include "layer-ahead.h"

static const EmaParam params[] = {EMA_LAYER_AHEAD_PARAMS(0)};

static const EmaParamTable table = {"layer-ahead", sizeof(EmaLayerAheadParams), params,
                                    EMA_PARAMS_N(params), NULL};

/* Remote KV bytes per layer that keep every lender's loss of HBM bandwidth
 * within the allowance: lender j serves a share s_j of this GPU's remote
 * blocks and its allowance is split among the r_j tenants reading from it,
 * so s_j x bytes / layer_s <= max_lender_slowdown x rate_m / (k_out r_j). */
static double lender_bytes_cap(const EmaLayerAheadParams *p, const EmaPoolView *view, guint gpu,
                               double layer_s) {
  const EmaGpuSpec *g = &view->server->gpu;
  double allowance, cap = G_MAXDOUBLE, total = 0;
  if (g->interference_outgoing <= 0)
    return cap;
  allowance = p->max_lender_slowdown * g->hbm_bandwidth * g->hbm_efficiency /
              g->interference_outgoing * layer_s;
  /* its lenders, in index order (the other GPUs hold none of its blocks) */
  EMA_POOL_VIEW_FOR_EACH_LENDER (view, gpu, j)
    total += (double) view->remote_blocks[gpu * view->n_gpus + j];
  if (total <= 0)
    return allowance;
  EMA_POOL_VIEW_FOR_EACH_LENDER (view, gpu, j) {
    double share = (double) view->remote_blocks[gpu * view->n_gpus + j] / total;
    if (share <= 0 || !view->gpus[j].has_tenant)
      continue; /* a GPU without a tenant has no steps to slow: nothing to protect */
    cap = MIN(cap, allowance / MAX(ema_pool_view_readers(view, j), 1) / share);
  }
  return cap;
}

void ema_layer_ahead_plan(const EmaLayerAheadParams *p, const EmaPoolView *view, guint gpu,
                          const EmaStepCostView *step, EmaPrefetchPlan *plan) {
  const EmaGpuSpec *g = &view->server->gpu;
  double rate_m = g->hbm_bandwidth * g->hbm_efficiency;
  double fixed = (double) step->copy_fixed_cost / 1e9;
  double per_layer = step->remote_bytes / step->link_bandwidth;
  double kv = step->kv_bytes, lender_cap, direct, prefetch;
  guint group = 1;
  if (kv <= 0) {
    plan->remote_limit = 1;
    return;
  }
  lender_cap = lender_bytes_cap(p, view, gpu, step->layer_memory_s);
  /* direct loads: hidden while the attention kernel's remote loads take at
   * most the margin of its all-local KV time; no copy lands in this GPU's
   * HBM and no staging buffer is needed */
  direct = MIN(p->direct_margin * step->layer_kv_s * step->direct_bandwidth, lender_cap);
  /* prefetch: the group is the smallest whose fixed cost is at most
   * fixed_share of its copy; the link moves within the margin of a layer's
   * memory time, after fixed costs */
  while (group < step->layers && fixed > p->fixed_share * (fixed + group * per_layer))
    group *= 2;
  group = MIN(group, step->layers);
  prefetch = MAX(0, p->hide_margin * step->layer_memory_s - fixed / group) * step->link_bandwidth;
  /* landing copies: k_in x bytes of this GPU's HBM time per layer */
  if (g->interference_incoming > 0)
    prefetch = MIN(prefetch, p->max_borrower_slowdown * step->layer_memory_s * rate_m /
                                 g->interference_incoming);
  prefetch = MIN(prefetch, lender_cap);
  /* direct loads cost this GPU nothing while they hide: use them whenever
   * the remote bytes of this step fit, or prefetching admits no more */
  if (step->remote_bytes <= direct || direct >= prefetch) {
    plan->mode = EMA_REMOTE_DIRECT;
  } else {
    plan->mode = EMA_REMOTE_PREFETCH;
    plan->depth = (guint) p->depth;
    plan->layers_per_copy = group;
  }
  plan->remote_limit = CLAMP(MAX(direct, prefetch) / kv, 0, 1);
}

static void decide(gpointer state, gconstpointer params_data, const EmaPoolView *view, guint gpu,
                   const EmaStepCostView *step, EmaPrefetchPlan *plan) {
  ema_layer_ahead_plan(params_data, view, gpu, step, plan);
}

const EmaPrefetchPolicyOps ema_prefetch_layer_ahead = {
    .abi_version = EMA_POLICY_ABI_VERSION,
    .name = "layer-ahead",
    .summary =
        "read remote KV directly, or prefetch it layer groups ahead; admit it while it hides",
    .params = &table,
    .decide = decide,
};
