/* fields-overlap.c: a parameter table with two parameters on overlapping bytes (the second read the
 * first's). The loader must refuse it. */
#include <gmodule.h>

#include "ema/policy.h"

static void decide(gpointer state, gconstpointer params, const EmaPoolView *view, guint borrower,
                   EmaBorrowPlan *plan) {}

static const EmaParam param_list[] = {
    {.key = "a", .type = EMA_PARAM_INT, .offset = 0, .default_value = "1", .help = "x"},
    {.key = "b", .type = EMA_PARAM_DOUBLE, .offset = 4, .default_value = "1", .help = "x"},
};

static const EmaParamTable params = {"fields-overlap", 16, param_list, EMA_PARAMS_N(param_list),
                                     NULL};

static const EmaBorrowPolicyOps bad = {
    .abi_version = EMA_POLICY_ABI_VERSION,
    .name = "fields-overlap",
    .summary = "two parameters on overlapping bytes (the second read the first's)",
    .params = &params,
    .decide = decide,
};

static const EmaBorrowPolicyOps *const borrow[] = {&bad, NULL};

G_MODULE_EXPORT const EmaPolicyModule ema_policy_module = {EMA_POLICY_ABI_VERSION, borrow, NULL,
                                                           NULL};
