/* prefetch-direct.c: the `direct` prefetch policy: remote KV is loaded by
 * the attention kernels over the link as they need it (as with unified or
 * peer-mapped memory, no prefetch), and any share of it may be remote. */
#include "builtin.h"

static void decide(gpointer state, gconstpointer params, const EmaPoolView *view, guint gpu,
                   const EmaStepCostView *step, EmaPrefetchPlan *plan) {
  plan->mode = EMA_REMOTE_DIRECT;
  plan->remote_limit = 1;
}

const EmaPrefetchPolicyOps ema_prefetch_direct = {
    .abi_version = EMA_POLICY_ABI_VERSION,
    .name = "direct",
    .summary = "no prefetch: kernels read remote KV over the link when they need it",
    .decide = decide,
};
