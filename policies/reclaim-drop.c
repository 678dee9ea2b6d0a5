/* reclaim-drop.c: the `drop` reclaim policy: a lender takes back exactly
 * the slices it lacks, from the borrowers holding the most of its slices,
 * and drops their data (the borrowers' affected requests recompute). */
#include "builtin.h"

static void decide(gpointer state, gconstpointer params, const EmaPoolView *view, guint lender,
                   guint64 needed, EmaReclaimPlan *plan) {
  while (needed > 0 && plan->n < G_N_ELEMENTS(plan->actions)) {
    guint best = view->n_gpus;
    guint64 most = 0;
    for (guint b = 0; b < view->n_gpus; b++) {
      guint64 lent = view->lent[lender * view->n_gpus + b];
      for (guint k = 0; k < plan->n; k++)
        if (plan->actions[k].borrower == b)
          lent = 0; /* already in the plan */
      if (lent > most) {
        most = lent;
        best = b;
      }
    }
    if (best == view->n_gpus)
      return;
    plan->actions[plan->n++] = (EmaReclaimAction){best, MIN(most, needed), EMA_VACATE_DROP, 0};
    needed -= MIN(most, needed);
  }
}

const EmaReclaimPolicyOps ema_reclaim_drop = {
    .abi_version = EMA_POLICY_ABI_VERSION,
    .name = "drop",
    .summary = "take back what is needed from the largest borrowers; their requests recompute",
    .decide = decide,
};
