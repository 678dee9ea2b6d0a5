/* silent-init.c: a valid borrow policy whose init fails (returns FALSE)
 * without setting its GError: the host must report the failure, not
 * dereference the missing error. */
#include <gmodule.h>

#include "ema/policy.h"

static gboolean init(gpointer state, gconstpointer params, const EmaPoolView *view,
                     GError **error) {
  return FALSE;
}

static void decide(gpointer state, gconstpointer params, const EmaPoolView *view, guint borrower,
                   EmaBorrowPlan *plan) {}

static const EmaBorrowPolicyOps silent = {
    .abi_version = EMA_POLICY_ABI_VERSION,
    .name = "silent-init",
    .summary = "init fails without an error",
    .state_size = 8,
    .init = init,
    .decide = decide,
};

static const EmaBorrowPolicyOps *const borrow[] = {&silent, NULL};

G_MODULE_EXPORT const EmaPolicyModule ema_policy_module = {EMA_POLICY_ABI_VERSION, borrow, NULL,
                                                           NULL};
