/* ops-abi.c: its second borrow policy was built for ABI version 2. */
#include "broken.h"

BROKEN_OK_BORROW(ok, "ops-abi-ok");

static const EmaBorrowPolicyOps newer = {
    .abi_version = 2,
    .name = "ops-abi",
    .summary = "built for another ABI",
    .decide = borrow_decide,
};

static const EmaBorrowPolicyOps *const borrow[] = {&ok, &newer, NULL};

G_MODULE_EXPORT const EmaPolicyModule ema_policy_module = {EMA_POLICY_ABI_VERSION, borrow, NULL,
                                                           NULL};
