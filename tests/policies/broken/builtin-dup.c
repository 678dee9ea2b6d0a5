/* builtin-dup.c: a prefetch policy that tries to shadow the built-in
 * `direct`. */
#include "broken.h"

BROKEN_OK_BORROW(ok, "builtin-dup-ok");

static const EmaPrefetchPolicyOps direct = {
    .abi_version = EMA_POLICY_ABI_VERSION,
    .name = "direct",
    .summary = "a second `direct`",
    .decide = prefetch_decide,
};

static const EmaBorrowPolicyOps *const borrow[] = {&ok, NULL};
static const EmaPrefetchPolicyOps *const prefetch[] = {&direct, NULL};

G_MODULE_EXPORT const EmaPolicyModule ema_policy_module = {EMA_POLICY_ABI_VERSION, borrow, prefetch,
                                                           NULL};
