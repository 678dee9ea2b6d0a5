/* far-peer.c: a valid module with one reclaim policy, `far-peer`, whose plan names places a
 * server lacks: one slice from gpu0 to a peer past any test view (gpu9), one to a target outside
 * EmaVacateTarget (7), and one to gpu2, a peer the views have; try-policy says a run drops the
 * first two (test-policy-cli.c). */
#include <gmodule.h>

#include "ema/policy.h"

static void decide(gpointer state, gconstpointer params, const EmaPoolView *view, guint lender,
                   guint64 needed, EmaReclaimPlan *plan) {
  plan->actions[0] =
      (EmaReclaimAction){.borrower = 0, .slices = 1, .target = EMA_VACATE_TO_PEER, .target_gpu = 9};
  plan->actions[1] = (EmaReclaimAction){.borrower = 0, .slices = 1, .target = (EmaVacateTarget) 7};
  plan->actions[2] =
      (EmaReclaimAction){.borrower = 0, .slices = 1, .target = EMA_VACATE_TO_PEER, .target_gpu = 2};
  plan->n = 3;
}

static const EmaReclaimPolicyOps far_peer = {
    .abi_version = EMA_POLICY_ABI_VERSION,
    .name = "far-peer",
    .summary = "sends data to places the server lacks",
    .decide = decide,
};

static const EmaReclaimPolicyOps *const reclaim[] = {&far_peer, NULL};

G_MODULE_EXPORT const EmaPolicyModule ema_policy_module = {EMA_POLICY_ABI_VERSION, NULL, NULL,
                                                           reclaim};
