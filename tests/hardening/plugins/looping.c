/* looping.c: a borrow policy whose init never returns (a plugin stuck in a
 * loop): a sweep's --timeout must end its point, not wait for ever. */
#include <gmodule.h>

#include "ema/policy.h"

static gboolean init(gpointer state, gconstpointer params, const EmaPoolView *view,
                     GError **error) {
  volatile guint64 spins = 0;
  for (;;)
    spins++;
  return TRUE;
}

static void decide(gpointer state, gconstpointer params, const EmaPoolView *view, guint borrower,
                   EmaBorrowPlan *plan) {}

static const EmaBorrowPolicyOps looping = {
    .abi_version = EMA_POLICY_ABI_VERSION,
    .name = "looping",
    .summary = "init never returns",
    .state_size = 8,
    .init = init,
    .decide = decide,
};

static const EmaBorrowPolicyOps *const borrow[] = {&looping, NULL};

G_MODULE_EXPORT const EmaPolicyModule ema_policy_module = {EMA_POLICY_ABI_VERSION, borrow, NULL,
                                                           NULL};
