/* object-no-table.c: a parameter table with an OBJECT parameter without table_for (binding read a
 * NULL table: the run crashed). The loader must refuse it. */
#include <gmodule.h>

#include "ema/policy.h"

static void decide(gpointer state, gconstpointer params, const EmaPoolView *view, guint borrower,
                   EmaBorrowPlan *plan) {}

static const EmaParam param_list[] = {
    {.key = "sub", .type = EMA_PARAM_OBJECT, .offset = 0, .help = "x"},
};

static const EmaParamTable params = {"object-no-table", 16, param_list, EMA_PARAMS_N(param_list),
                                     NULL};

static const EmaBorrowPolicyOps bad = {
    .abi_version = EMA_POLICY_ABI_VERSION,
    .name = "object-no-table",
    .summary = "an OBJECT parameter without table_for (binding read a NULL table: the run crashed)",
    .params = &params,
    .decide = decide,
};

static const EmaBorrowPolicyOps *const borrow[] = {&bad, NULL};

G_MODULE_EXPORT const EmaPolicyModule ema_policy_module = {EMA_POLICY_ABI_VERSION, borrow, NULL,
                                                           NULL};
