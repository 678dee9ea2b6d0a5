/* path-probe.c: a valid module with one prefetch policy, `path-probe`,
 * that the loader tests reach only through EMA_PLUGIN_PATH. */
#include <gmodule.h>

#include "ema/policy.h"

static void decide(gpointer state, gconstpointer params, const EmaPoolView *view, guint gpu,
                   const EmaStepCostView *step, EmaPrefetchPlan *plan) {
  plan->mode = EMA_REMOTE_DIRECT;
}

static const EmaPrefetchPolicyOps probe = {
    .abi_version = EMA_POLICY_ABI_VERSION,
    .name = "path-probe",
    .summary = "found through EMA_PLUGIN_PATH",
    .decide = decide,
};

static const EmaPrefetchPolicyOps *const prefetch[] = {&probe, NULL};

G_MODULE_EXPORT const EmaPolicyModule ema_policy_module = {EMA_POLICY_ABI_VERSION, NULL, prefetch,
                                                           NULL};
