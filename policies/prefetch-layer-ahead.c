/* prefetch-layer-ahead.c: the `layer-ahead` prefetch policy (the prefetch
 * half of `ema`). Remote KV is copied into a local staging buffer in groups
 * of layers, `depth` groups ahead of the layer that reads it. The group is
 * the smallest number of layers whose copy's fixed cost is at most
 * `fixed_share` of the group's copy time, so that fixed costs do not
 * dominate. Remote placement is admitted only while it can be hidden: the
 * share of KV that may be remote is what the link can bring in during
 * `hide_margin` of a layer's time, counting the memory side only: a step
 * made long by a prefill chunk's compute must not admit remote KV that the
 * decode steps after it cannot hide. Two more bounds keep the cost to HBM
 * bandwidth in check (pool.h, interference): the copies landing in this
 * GPU may slow its layers by at most `max_borrower_slowdown`, and the
 * lenders' HBM, read at the rate this step pulls, may lose at most
 * `max_lender_slowdown` (lender priority), shared equally among the
 * tenants that read from the same lender. */
#include <math.h>

#include "builtin.h"

typedef struct {
  gint64 depth;
  double hide_margin;
  double fixed_share;
  double max_borrower_slowdown;
  double max_lender_slowdown;
} Params;

static const EmaParam params[] = {
    {"depth", EMA_PARAM_INT, G_STRUCT_OFFSET(Params, depth), .default_value = "2", .min = 1,
     .max = 1024, .help = "layer groups fetched ahead (sizes the staging buffer)"},
    {"hide_margin", EMA_PARAM_FRACTION, G_STRUCT_OFFSET(Params, hide_margin),
     .default_value = "90%", .min = 0, .max = 10,
     .help = "share of a layer's memory time the link may fill (above 100%: remote KV may be "
             "exposed, trading step time for capacity)"},
    {"fixed_share", EMA_PARAM_FRACTION, G_STRUCT_OFFSET(Params, fixed_share),
     .default_value = "10%", .min = 1e-6, .max = 1,
     .help = "largest share of a copy's time its fixed cost may take (sets the group size)"},
    {"max_borrower_slowdown", EMA_PARAM_FRACTION, G_STRUCT_OFFSET(Params, max_borrower_slowdown),
     .default_value = "5%", .min = 0, .max = 10,
     .help = "largest slowdown of this GPU's layers by the copies landing in its HBM"},
    {"max_lender_slowdown", EMA_PARAM_FRACTION, G_STRUCT_OFFSET(Params, max_lender_slowdown),
     .default_value = "2%", .min = 0, .max = 10,
     .help = "largest loss of a lender's HBM bandwidth to this GPU's pulls"},
};

static const EmaParamTable table = {"layer-ahead", sizeof(Params), params, EMA_PARAMS_N(params),
                                    NULL};

static void decide(gpointer state, gconstpointer params_data, const EmaPoolView *view, guint gpu,
                   const EmaStepCostView *step, EmaPrefetchPlan *plan) {
  const Params *p = params_data;
  double fixed = (double) step->copy_fixed_cost / 1e9;
  double per_layer = step->remote_bytes / step->link_bandwidth;
  guint group = 1;
  double hideable;
  plan->mode = EMA_REMOTE_PREFETCH;
  plan->depth = (guint) p->depth;
  while (group < step->layers && fixed > p->fixed_share * (fixed + group * per_layer))
    group *= 2;
  plan->layers_per_copy = MIN(group, step->layers);
  /* bytes per layer the link moves within the margin of a layer's memory
   * time, after fixed costs */
  hideable = MAX(0, p->hide_margin * step->layer_memory_s - fixed / plan->layers_per_copy) *
             step->link_bandwidth;
  {
    const EmaGpuSpec *g = &view->server->gpu;
    double rate_m = g->hbm_bandwidth * g->hbm_efficiency;
    double layer_s = MAX(step->layer_compute_s, step->layer_memory_s);
    /* each lender's allowance is shared among the tenants reading from it */
    double lenders = 0;
    for (guint j = 0; j < view->n_gpus; j++) {
      guint readers = 0;
      if (view->remote_blocks[gpu * view->n_gpus + j] == 0)
        continue;
      for (guint b = 0; b < view->n_gpus; b++)
        readers += view->remote_blocks[b * view->n_gpus + j] > 0;
      lenders += 1.0 / MAX(readers, 1);
    }
    /* landing copies: k_in x bytes of this GPU's HBM time per layer */
    if (g->interference_incoming > 0)
      hideable = MIN(hideable, p->max_borrower_slowdown * step->layer_memory_s * rate_m /
                                   g->interference_incoming);
    /* pulls: k_out x (bytes per layer / layer time) of each lender's HBM rate */
    if (g->interference_outgoing > 0)
      hideable = MIN(hideable, p->max_lender_slowdown * rate_m / g->interference_outgoing *
                                   layer_s * MAX(lenders, 1.0 / view->n_gpus));
  }
  plan->remote_limit = step->kv_bytes > 0 ? CLAMP(hideable / step->kv_bytes, 0, 1) : 1;
}

const EmaPrefetchPolicyOps ema_prefetch_layer_ahead = {
    .abi_version = EMA_POLICY_ABI_VERSION,
    .name = "layer-ahead",
    .summary = "prefetch remote KV layer groups ahead; admit remote KV only while it hides",
    .params = &table,
    .decide = decide,
};
