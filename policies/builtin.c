/* builtin.c: the explicit table of built-in policies and named
 * compositions (registry.h). Each policy lives in its own file here; adding
 * one means adding its ops struct to a list below. */
#include "ema/pool/registry.h"

#include "builtin.h"

static const EmaBorrowPolicyOps *const borrow_policies[] = {
    &ema_borrow_none,
    &ema_borrow_on_demand,
    &ema_borrow_most_idle,
    NULL,
};

static const EmaPrefetchPolicyOps *const prefetch_policies[] = {
    &ema_prefetch_direct,
    &ema_prefetch_layer_ahead,
    &ema_prefetch_offload,
    NULL,
};

static const EmaReclaimPolicyOps *const reclaim_policies[] = {
    &ema_reclaim_drop,
    &ema_reclaim_migrate,
    NULL,
};

const EmaPolicyModule ema_builtin_policies = {EMA_POLICY_ABI_VERSION, borrow_policies,
                                              prefetch_policies, reclaim_policies};

const EmaBorrowPolicyOps *const ema_builtin_never_borrows = &ema_borrow_none;

const EmaPolicyComposition ema_builtin_compositions[] = {
    {"static", "no sharing: each GPU keeps its own memory (the baseline)",
     "{borrow: none, prefetch: direct, reclaim: drop, preempt: engine}"},
    {"recompute", "no sharing; preempted requests drop their KV and recompute (vLLM v1)",
     "{borrow: none, prefetch: direct, reclaim: drop, preempt: recompute}"},
    {"host-swap", "no sharing; preempted requests swap their KV to host memory (vLLM v0)",
     "{borrow: none, prefetch: direct, reclaim: drop, preempt: swap-host}"},
    {"remote-direct", "borrow when short; kernels read remote KV over the link (UVM-like)",
     "{borrow: on-demand, prefetch: direct, reclaim: drop, preempt: recompute}"},
    {"peer-swap", "no borrowing; preempted requests park their KV on peers (Aqua-like)",
     "{borrow: none, prefetch: direct, reclaim: drop, preempt: swap-peer}"},
    {"ema",
     "borrow ahead of demand, read remote KV directly, prefetch it while that hides or offload "
     "its attention where that is cheaper (within 1% of lender HBM time), admit by the remote "
     "limit held 250 ms, park preempted KV on peers, reclaim with lender priority",
     "{borrow: most-idle, prefetch: offload, prefetch_params: {allowance: 1%, admit_hold: "
     "250ms}, reclaim: migrate, preempt: swap-peer}"},
    {"offload",
     "ema, with attention offloaded to the lenders where that is the cheaper step, within 5% "
     "of each lender's HBM time",
     "{borrow: most-idle, borrow_params: {within_limit: true}, prefetch: offload, reclaim: "
     "migrate, preempt: swap-peer}"},
    {NULL, NULL, NULL},
};
