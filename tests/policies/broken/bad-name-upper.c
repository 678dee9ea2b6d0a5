/* bad-name-upper.c: a policy name with an upper-case letter. */
#include "broken.h"

BROKEN_OK_BORROW(ok, "bad-name-upper-ok");

static const EmaBorrowPolicyOps upper = {
    .abi_version = EMA_POLICY_ABI_VERSION,
    .name = "Neighbour",
    .summary = "an upper-case name",
    .decide = borrow_decide,
};

static const EmaBorrowPolicyOps *const borrow[] = {&ok, &upper, NULL};

G_MODULE_EXPORT const EmaPolicyModule ema_policy_module = {EMA_POLICY_ABI_VERSION, borrow, NULL,
                                                           NULL};
