/* no-summary.c: a policy with an empty summary. */
#include "broken.h"

BROKEN_OK_BORROW(ok, "no-summary-ok");

static const EmaBorrowPolicyOps silent = {
    .abi_version = EMA_POLICY_ABI_VERSION,
    .name = "no-summary",
    .summary = "",
    .decide = borrow_decide,
};

static const EmaBorrowPolicyOps *const borrow[] = {&ok, &silent, NULL};

G_MODULE_EXPORT const EmaPolicyModule ema_policy_module = {EMA_POLICY_ABI_VERSION, borrow, NULL,
                                                           NULL};
