/* crashing.c: policies that crash inside a hook: `null-decide` reads through
 * a NULL pointer in its borrow decide (SIGSEGV), `abort-init` aborts in its
 * init (SIGABRT), `deep-decide` recurses until its stack overflows (SIGSEGV,
 * caught on the handler's own stack). The run must die of the signal with a line naming the
 * policy, its module and the hook. */
#include <stdlib.h>

#include <gmodule.h>

#include "ema/policy.h"

static void null_decide(gpointer state, gconstpointer params, const EmaPoolView *view,
                        guint borrower, EmaBorrowPlan *plan) {
  int *volatile nowhere = NULL;
  plan->n = (guint) *nowhere;
}

static gboolean abort_init(gpointer state, gconstpointer params, const EmaPoolView *view,
                           GError **error) {
  abort();
  return TRUE;
}

/* never returns 0 before the stack runs out: not a tail call, not a loop */
static G_GNUC_NO_INLINE guint recurse(volatile guint *depth) {
  volatile char pad[256];
  pad[0] = (char) *depth;
  if (++*depth == G_MAXUINT)
    return 0;
  return recurse(depth) + (guint) pad[0];
}

static void deep_decide(gpointer state, gconstpointer params, const EmaPoolView *view,
                        guint borrower, EmaBorrowPlan *plan) {
  volatile guint depth = 0;
  plan->n = recurse(&depth);
}

static void empty_decide(gpointer state, gconstpointer params, const EmaPoolView *view,
                         guint borrower, EmaBorrowPlan *plan) {}

static const EmaBorrowPolicyOps null_decide_ops = {
    .abi_version = EMA_POLICY_ABI_VERSION,
    .name = "null-decide",
    .summary = "decide reads through a NULL pointer",
    .decide = null_decide,
};

static const EmaBorrowPolicyOps abort_init_ops = {
    .abi_version = EMA_POLICY_ABI_VERSION,
    .name = "abort-init",
    .summary = "init aborts",
    .init = abort_init,
    .decide = empty_decide,
};

static const EmaBorrowPolicyOps deep_decide_ops = {
    .abi_version = EMA_POLICY_ABI_VERSION,
    .name = "deep-decide",
    .summary = "decide overflows its stack",
    .decide = deep_decide,
};

static const EmaBorrowPolicyOps *const borrow[] = {&null_decide_ops, &abort_init_ops,
                                                   &deep_decide_ops, NULL};

G_MODULE_EXPORT const EmaPolicyModule ema_policy_module = {EMA_POLICY_ABI_VERSION, borrow, NULL,
                                                           NULL};
