/* summary-newline.c: a summary of two lines (list policies prints one line a policy). */
#include "broken.h"

static const EmaBorrowPolicyOps two_lines = {
    .abi_version = EMA_POLICY_ABI_VERSION,
    .name = "two-lines",
    .summary = "first line\nsecond line",
    .decide = borrow_decide,
};

static const EmaBorrowPolicyOps *const borrow[] = {&two_lines, NULL};

G_MODULE_EXPORT const EmaPolicyModule ema_policy_module = {EMA_POLICY_ABI_VERSION, borrow, NULL,
                                                           NULL};
