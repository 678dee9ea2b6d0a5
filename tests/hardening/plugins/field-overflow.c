/* field-overflow.c: a parameter whose field does not fit in its struct: a
 * double (8 bytes) at offset 2 of a 4-byte struct. The loader must refuse
 * it (binding it would write past the struct). */
#include <gmodule.h>

#include "ema/policy.h"

static void decide(gpointer state, gconstpointer params, const EmaPoolView *view, guint borrower,
                   EmaBorrowPlan *plan) {}

static const EmaParam param_list[] = {
    {.key = "ratio", .type = EMA_PARAM_DOUBLE, .offset = 2, .default_value = "1", .help = "x"},
};

static const EmaParamTable params = {"field-overflow", 4, param_list, EMA_PARAMS_N(param_list),
                                     NULL};

static const EmaBorrowPolicyOps bad = {
    .abi_version = EMA_POLICY_ABI_VERSION,
    .name = "field-overflow",
    .summary = "a double at offset 2 of a 4-byte struct",
    .params = &params,
    .decide = decide,
};

static const EmaBorrowPolicyOps *const borrow[] = {&bad, NULL};

G_MODULE_EXPORT const EmaPolicyModule ema_policy_module = {EMA_POLICY_ABI_VERSION, borrow, NULL,
                                                           NULL};
