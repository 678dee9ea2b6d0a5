/* prefetch-offload.c: the `offload` prefetch policy: `layer-ahead`
 * (direct loads or prefetch, with all of its parameters) plus attention
 * offload (policy.h EMA_REMOTE_OFFLOAD, the cost model in hw/offload.h):
 * the lenders compute the decode attention over the KV of this GPU's tenant
 * that they hold, and only queries, new K/V and partial outputs cross the
 * link.
 *
 * Mode, per step, by modelled cost: offload when the pool's modelled step
 * with offload (EmaStepCostView.step_offload_s) is shorter than the step of
 * the way layer-ahead chose: direct loads' modelled step (step_direct_s), or
 * for prefetch its lower bound, the all-local step (step_local_s: prefetch
 * hides at best) or its copies' time on the link if longer (layers x
 * remote_bytes / link_bandwidth: remote KV beyond what layer-ahead hides). Offload is not taken
 * while the remote share exceeds what the allowance admits but layer-ahead's bounds admit it
 * (reading it costs the lenders less than offloading it would, within their protection).
 * Per lender (`read_at_cap`): where the step reading the KV on each lender whose cap would hold
 * the whole offload by direct loads and offloading the rest (step_offload_read_s) is cheaper
 * still than the way chosen so far, it is taken (plan offload_read): a lender at its cap serves
 * this borrower's KV by pulls rather than lengthening its step, the others keep offloading.
 *
 * Bound: the plan's offload_cap is the allowance, which the pool holds on
 * every lender with a tenant whatever was admitted (policy.h): where the
 * steps would read KV admitted earlier faster than the allowance (a shorter
 * step, another borrower's share grown, remote KV beyond the bound below),
 * the step lengthens until its lenders are at the cap, and its
 * step_offload_s says so: the mode choice above weighs the capped step.
 *
 * Admission: each lender's reads for offloaded attention may take at most
 * `allowance` of its HBM time (hw/offload.h r_j <= A), less what the other
 * borrowers offloading to it take (lender_allowance(): their remote KV held
 * there, counted as this step's tokens per block and at this step's length,
 * or their steps' current share, EmaPoolView.offload_share, if larger; a
 * borrower not offloading to it now takes none); a GPU without a tenant has
 * nothing to protect and gives all of its HBM time. Counting the KV held,
 * not only the steps in flight, shares a lender's capacity at the cap among
 * its borrowers stably: by the steps in flight alone, the borrower whose
 * step came first took the whole allowance and the others, holding KV
 * admitted earlier, found the pool's cap left them none and read that KV
 * directly (slower than static where the caps bound). With lender j
 * holding the share s_j of this GPU's remote blocks and c_max(1) =
 * offload_full_context tokens at an allowance of 1, the remote share f of
 * the step's decode context C must satisfy f C s_j <= a_j c_max(1) for
 * every j, with c_max at the step's length without the cap (what can be
 * served without lengthening it); where offload is the cheaper step the
 * plan admits the larger of that bound and layer-ahead's, and names the
 * lender whose allowance set it. The bound gates admission: running
 * requests grow into any borrowed room, so the `offload` composition's
 * borrow policy holds only the room admitted (most-idle's within_limit).
 *
 * Held (`admit_hold`): the limit moves from step to step with the batch and
 * with which way is cheaper, and every rise admits new requests that the
 * next fall leaves short of blocks (preempted: their stall is in their
 * TPOT). A limit below the lowest one planned lately applies at once; a
 * higher one only once no limit at or below that lowest one has been
 * planned for `admit_hold`; meanwhile the plan keeps the lowest one and the
 * lender and allowance that set it, and names the step's own as its
 * room_limit: the hold is admission's, the borrowed room that most-idle's
 * within_limit holds follows each step's own limit. Only the plans of steps whose offload
 * was timed count and are held (the tenant holds remote KV and offload is
 * possible; the second plan of a step too): the others are layer-ahead's
 * plan as it is.
 *
 * `allowance` 0 is layer-ahead exactly: no offload, the same plans. */
#include "builtin.h"
#include "layer-ahead.h"

typedef struct {
  EmaLayerAheadParams layer_ahead; /* first: its parameter rows' offsets are from 0 */
  double allowance;
  gboolean read_at_cap;
  gint64 admit_hold;
} Params;

/* Private state (admit_hold): the lowest remote limit planned lately. */
typedef struct {
  gboolean planned; /* a limit has been planned */
  double low;       /* the limit held */
  EmaTime low_at;   /* when a limit at or below LOW was last planned */
  guint low_lender; /* the plan's limit_lender and limit_allowance with it */
  double low_allowance;
} State;

static const EmaParam params[] = {
    EMA_LAYER_AHEAD_PARAMS(G_STRUCT_OFFSET(Params, layer_ahead)){
        "allowance", EMA_PARAM_FRACTION, G_STRUCT_OFFSET(Params, allowance), .default_value = "5%",
        .min = 0, .max = 1,
        .help = "largest share of each lender's HBM time that borrowers' offloaded attention may "
                "take (its steps slow by gpu.offload_slowdown at that share; 0: no offload)"},
    {"read_at_cap", EMA_PARAM_BOOL, G_STRUCT_OFFSET(Params, read_at_cap), .default_value = "true",
     .help = "per lender: read the KV on lenders whose cap would lengthen the step by direct "
             "loads and offload the rest, where that is the cheapest step"},
    {"admit_hold", EMA_PARAM_DURATION, G_STRUCT_OFFSET(Params, admit_hold), .default_value = "0s",
     .min = 0, .max = 3.6e12,
     .help = "a remote limit that falls applies at once to admission; one that rises only once "
             "no lower limit has been planned for this long (0: each step's own limit)"},
};

static const EmaParamTable table = {"offload", sizeof(Params), params, EMA_PARAMS_N(params), NULL};

/* What of lender J's HBM time the borrower GPU may use for offloaded
 * attention: the allowance less what the other borrowers offloading to J
 * take, each the larger of its step's current share and its remote blocks
 * on J counted at this step's TOKENS_PER_BLOCK and length (FULL tokens at
 * a share of 1); all of it on a GPU without a tenant. */
static double lender_allowance(const Params *p, const EmaPoolView *view, guint gpu, guint j,
                               double tokens_per_block, double full) {
  double others = 0;
  if (!view->gpus[j].has_tenant)
    return 1;
  if (view->offload_share == NULL)
    return p->allowance;
  EMA_POOL_VIEW_FOR_EACH_OFFLOADER (view, j, b) {
    double now = view->offload_share[b * view->n_gpus + j];
    if (b != gpu && now > 0)
      others +=
          MAX(now, (double) view->remote_blocks[b * view->n_gpus + j] * tokens_per_block / full);
  }
  return MAX(0, p->allowance - others);
}

/* admit_hold: PLAN's remote limit held at the lowest planned lately (S),
 * as of NOW. */
static void hold_limit(const Params *p, State *s, EmaTime now, EmaPrefetchPlan *plan) {
  if (p->admit_hold <= 0)
    return;
  if (!s->planned || plan->remote_limit <= s->low || now - s->low_at > p->admit_hold) {
    s->planned = TRUE;
    s->low = plan->remote_limit;
    s->low_at = now;
    s->low_lender = plan->limit_lender;
    s->low_allowance = plan->limit_allowance;
    return;
  }
  plan->room_limit = plan->remote_limit; /* the borrowed room follows the step's own */
  plan->remote_limit = s->low;
  plan->limit_lender = s->low_lender;
  plan->limit_allowance = s->low_allowance;
}

static void decide(gpointer state, gconstpointer params_data, const EmaPoolView *view, guint gpu,
                   const EmaStepCostView *step, EmaPrefetchPlan *plan) {
  const Params *p = params_data;
  const guint64 *remote = &view->remote_blocks[gpu * view->n_gpus];
  double total = 0, limit = G_MAXDOUBLE, share, per_block, other;
  gboolean whole;
  guint lender = G_MAXUINT;
  ema_layer_ahead_plan(&p->layer_ahead, view, gpu, step, plan);
  if (p->allowance > 0)
    plan->offload_cap = p->allowance;
  if (p->allowance <= 0 || (step->step_offload_s <= 0 && step->step_offload_read_s <= 0) ||
      step->context_tokens <= 0 || step->offload_full_context <= 0 || step->kv_bytes <= 0)
    return;
  /* its lenders, in index order (the other GPUs hold none of its blocks) */
  EMA_POOL_VIEW_FOR_EACH_LENDER (view, gpu, j)
    total += (double) remote[j];
  if (total <= 0)
    return;
  /* the step's remote tokens per remote block */
  share = step->remote_bytes / step->kv_bytes;
  per_block = share * step->context_tokens / total;
  EMA_POOL_VIEW_FOR_EACH_LENDER (view, gpu, j) {
    double s_j = (double) remote[j] / total, f;
    if (s_j <= 0)
      continue;
    f = lender_allowance(p, view, gpu, j, per_block, step->offload_full_context) *
        step->offload_full_context / (s_j * step->context_tokens);
    if (f < limit) {
      limit = f;
      lender = j;
    }
  }
  limit = CLAMP(limit, 0, 1);
  /* prefetch's step: at least the all-local one, and at least its copies' time on the link */
  other = plan->mode == EMA_REMOTE_DIRECT
              ? step->step_direct_s
              : MAX(step->step_local_s, step->layers * step->remote_bytes / step->link_bandwidth);
  whole = step->step_offload_s > 0 && step->step_offload_s < other;
  if (whole && (share <= limit || share > plan->remote_limit)) {
    plan->mode = EMA_REMOTE_OFFLOAD;
    other = step->step_offload_s;
  }
  /* the lenders at their cap read, the rest offloaded: within every lender's protection */
  if (p->read_at_cap && step->step_offload_read_s > 0 && step->step_offload_read_s < other) {
    plan->mode = EMA_REMOTE_OFFLOAD;
    plan->offload_read = TRUE;
  }
  if (plan->mode == EMA_REMOTE_OFFLOAD) {
    plan->depth = 1;
    plan->layers_per_copy = 1;
  }
  /* admitting beyond layer-ahead's bounds pays only where offload is the cheaper step */
  if (whole && limit >= plan->remote_limit) {
    plan->remote_limit = limit;
    plan->limit_lender = lender;
    plan->limit_allowance = view->gpus[lender].has_tenant ? p->allowance : 1;
  }
  hold_limit(p, state, view->now, plan);
}

const EmaPrefetchPolicyOps ema_prefetch_offload = {
    .abi_version = EMA_POLICY_ABI_VERSION,
    .name = "offload",
    .summary = "layer-ahead, or offload attention to the lenders where that is the cheaper step, "
               "within an allowance of their HBM time",
    .params = &table,
    .state_size = sizeof(State),
    .decide = decide,
};
