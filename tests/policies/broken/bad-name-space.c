/* bad-name-space.c: a reclaim policy name with a space. */
#include "broken.h"

BROKEN_OK_BORROW(ok, "bad-name-space-ok");

static const EmaReclaimPolicyOps spaced = {
    .abi_version = EMA_POLICY_ABI_VERSION,
    .name = "two words",
    .summary = "a name with a space",
    .decide = reclaim_decide,
};

static const EmaBorrowPolicyOps *const borrow[] = {&ok, NULL};
static const EmaReclaimPolicyOps *const reclaim[] = {&spaced, NULL};

G_MODULE_EXPORT const EmaPolicyModule ema_policy_module = {EMA_POLICY_ABI_VERSION, borrow, NULL,
                                                           reclaim};
