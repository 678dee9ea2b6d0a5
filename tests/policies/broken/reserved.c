/* reserved.c: a policy that uses a reserved slot (index 2). */
#include "broken.h"

BROKEN_OK_BORROW(ok, "reserved-ok");

static const EmaBorrowPolicyOps squatter = {
    .abi_version = EMA_POLICY_ABI_VERSION,
    .name = "reserved",
    .summary = "puts a hook into a reserved slot",
    .decide = borrow_decide,
    .reserved = {NULL, NULL, (gpointer) &ok},
};

static const EmaBorrowPolicyOps *const borrow[] = {&ok, &squatter, NULL};

G_MODULE_EXPORT const EmaPolicyModule ema_policy_module = {EMA_POLICY_ABI_VERSION, borrow, NULL,
                                                           NULL};
