/* broken.h: what the broken test modules share: decide hooks that do
 * nothing and a valid borrow policy to list before the broken one, so that
 * the loader tests can check that a refused module registers nothing. Each
 * module in this folder has exactly one defect; test-registry.c expects the
 * exact message each one earns. */
#pragma once

#include <gmodule.h>

#include "ema/policy.h"

G_GNUC_UNUSED static void borrow_decide(gpointer state, gconstpointer params,
                                        const EmaPoolView *view, guint borrower,
                                        EmaBorrowPlan *plan) {}

G_GNUC_UNUSED static void prefetch_decide(gpointer state, gconstpointer params,
                                          const EmaPoolView *view, guint gpu,
                                          const EmaStepCostView *step, EmaPrefetchPlan *plan) {}

G_GNUC_UNUSED static void reclaim_decide(gpointer state, gconstpointer params,
                                         const EmaPoolView *view, guint lender, guint64 needed,
                                         EmaReclaimPlan *plan) {}

/* A valid borrow policy called NAME, as static const ops IDENT. */
#define BROKEN_OK_BORROW(ident, policy_name)                                                       \
  static const EmaBorrowPolicyOps ident = {                                                        \
      .abi_version = EMA_POLICY_ABI_VERSION,                                                       \
      .name = policy_name,                                                                         \
      .summary = "a valid policy in a broken module",                                              \
      .decide = borrow_decide,                                                                     \
  }
