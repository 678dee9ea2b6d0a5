/* borrow-none.c: the `none` borrow policy: never borrows (each GPU keeps to
 * its own memory; with it, a composition is the static partition). */
#include "builtin.h"

static void decide(gpointer state, gconstpointer params, const EmaPoolView *view, guint borrower,
                   EmaBorrowPlan *plan) {}

const EmaBorrowPolicyOps ema_borrow_none = {
    .abi_version = EMA_POLICY_ABI_VERSION,
    .name = "none",
    .summary = "never borrow: every GPU keeps to its own memory",
    .decide = decide,
};
