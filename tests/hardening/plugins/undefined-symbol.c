/* undefined-symbol.c: a policy whose decide calls a function nothing defines. The loader must
 * refuse the module (binding every symbol at load), not let the run die at the first call. */
#include <gmodule.h>

#include "ema/policy.h"

void ema_no_such_function(void);

static void decide(gpointer state, gconstpointer params, const EmaPoolView *view, guint borrower,
                   EmaBorrowPlan *plan) {
  ema_no_such_function();
}

static const EmaBorrowPolicyOps bad = {
    .abi_version = EMA_POLICY_ABI_VERSION,
    .name = "undefined-symbol",
    .summary = "calls a function nothing defines",
    .decide = decide,
};

static const EmaBorrowPolicyOps *const borrow[] = {&bad, NULL};

G_MODULE_EXPORT const EmaPolicyModule ema_policy_module = {EMA_POLICY_ABI_VERSION, borrow, NULL,
                                                           NULL};
