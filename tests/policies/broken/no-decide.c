/* no-decide.c: a borrow policy without its required decide hook. */
#include "broken.h"

BROKEN_OK_BORROW(ok, "no-decide-ok");

static const EmaBorrowPolicyOps undecided = {
    .abi_version = EMA_POLICY_ABI_VERSION,
    .name = "no-decide",
    .summary = "forgot its decide hook",
};

static const EmaBorrowPolicyOps *const borrow[] = {&ok, &undecided, NULL};

G_MODULE_EXPORT const EmaPolicyModule ema_policy_module = {EMA_POLICY_ABI_VERSION, borrow, NULL,
                                                           NULL};
