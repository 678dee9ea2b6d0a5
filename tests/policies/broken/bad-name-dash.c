/* bad-name-dash.c: a policy named "-" (it would read as an option on a command line). */
#include "broken.h"

static const EmaBorrowPolicyOps dash = {
    .abi_version = EMA_POLICY_ABI_VERSION,
    .name = "-",
    .summary = "a name of a dash",
    .decide = borrow_decide,
};

static const EmaBorrowPolicyOps *const borrow[] = {&dash, NULL};

G_MODULE_EXPORT const EmaPolicyModule ema_policy_module = {EMA_POLICY_ABI_VERSION, borrow, NULL,
                                                           NULL};
