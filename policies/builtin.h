/* builtin.h: the ops structs of the built-in policies, one file each in
 * policies/, listed in builtin.c. */
#pragma once

#include "ema/policy.h"

extern const EmaBorrowPolicyOps ema_borrow_none;
extern const EmaBorrowPolicyOps ema_borrow_on_demand;
extern const EmaBorrowPolicyOps ema_borrow_most_idle;
extern const EmaPrefetchPolicyOps ema_prefetch_direct;
extern const EmaPrefetchPolicyOps ema_prefetch_offload;
extern const EmaPrefetchPolicyOps ema_prefetch_layer_ahead;
extern const EmaReclaimPolicyOps ema_reclaim_drop;
extern const EmaReclaimPolicyOps ema_reclaim_migrate;
