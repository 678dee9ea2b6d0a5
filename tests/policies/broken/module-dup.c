/* module-dup.c: two reclaim policies of the same name in one module. */
#include "broken.h"

BROKEN_OK_BORROW(ok, "module-dup-ok");

static const EmaReclaimPolicyOps first = {
    .abi_version = EMA_POLICY_ABI_VERSION,
    .name = "twice",
    .summary = "the first of two",
    .decide = reclaim_decide,
};

static const EmaReclaimPolicyOps second = {
    .abi_version = EMA_POLICY_ABI_VERSION,
    .name = "twice",
    .summary = "the second of two",
    .decide = reclaim_decide,
};

static const EmaBorrowPolicyOps *const borrow[] = {&ok, NULL};
static const EmaReclaimPolicyOps *const reclaim[] = {&first, &second, NULL};

G_MODULE_EXPORT const EmaPolicyModule ema_policy_module = {EMA_POLICY_ABI_VERSION, borrow, NULL,
                                                           reclaim};
