/* contract.c: borrow policies that break the plugin contract in the ways a
 * careless plugin does: writing into the read-only view (the lent matrix,
 * or a request's blocks_at through requests()), returning G_MININT64
 * slices, counting more actions than a plan holds, writing into its own parameters; a prefetch
 * policy writing into the lent matrix at step time; and a reclaim policy counting more actions
 * than its plan holds. The pool must name the policy and stop, or
 * cope, never corrupt its ledger or abort. */
#include <gmodule.h>

#include "ema/policy.h"

/* Borrow one slice from the first other GPU, so that the pool acts. */
static void borrow_one(const EmaPoolView *view, guint borrower, EmaBorrowPlan *plan) {
  for (guint j = 0; j < view->n_gpus; j++)
    if (j != borrower) {
      plan->actions[0] = (EmaBorrowAction){.lender = j, .slices = 1};
      plan->n = 1;
      return;
    }
}

static void writes_lent(gpointer state, gconstpointer params, const EmaPoolView *view,
                        guint borrower, EmaBorrowPlan *plan) {
  ((guint64 *) view->lent)[borrower] += 7;
  borrow_one(view, borrower, plan);
}

static void writes_blocks_at(gpointer state, gconstpointer params, const EmaPoolView *view,
                             guint borrower, EmaBorrowPlan *plan) {
  guint n = 0;
  const EmaRequestView *requests = view->requests(view, borrower, &n);
  for (guint i = 0; i < n; i++)
    ((guint64 *) requests[i].blocks_at)[borrower] += 1000;
  borrow_one(view, borrower, plan);
}

/* Borrows on one call, returns G_MININT64 slices (all it has, and more)
 * on the next. */
static void returns_minint(gpointer state, gconstpointer params, const EmaPoolView *view,
                           guint borrower, EmaBorrowPlan *plan) {
  guint64 *calls = state;
  borrow_one(view, borrower, plan);
  if ((*calls)++ % 2 == 1)
    plan->actions[0].slices = G_MININT64;
}

/* One action written, a thousand counted (a plan holds 16). */
static void overfull(gpointer state, gconstpointer params, const EmaPoolView *view, guint borrower,
                     EmaBorrowPlan *plan) {
  borrow_one(view, borrower, plan);
  plan->n = 1000;
}

static const EmaBorrowPolicyOps overfull_plan = {
    .abi_version = EMA_POLICY_ABI_VERSION,
    .name = "plan-overfull",
    .summary = "counts 1000 actions in its plan",
    .decide = overfull,
};

/* Every action to take back the first loan's slices, and one more counted than a reclaim plan
 * holds (32). */
static void reclaim_overfull(gpointer state, gconstpointer params, const EmaPoolView *view,
                             guint lender, guint64 needed, EmaReclaimPlan *plan) {
  for (guint i = 0; i < G_N_ELEMENTS(plan->actions); i++)
    plan->actions[i] = (EmaReclaimAction){(lender + 1) % view->n_gpus, 1, EMA_VACATE_DROP, 0};
  plan->n = G_N_ELEMENTS(plan->actions) + 1;
}

static const EmaReclaimPolicyOps reclaim_overfull_plan = {
    .abi_version = EMA_POLICY_ABI_VERSION,
    .name = "reclaim-plan-overfull",
    .summary = "counts 33 actions in its reclaim plan",
    .decide = reclaim_overfull,
};

/* Its one parameter, moved by every call (a plugin drifting its own settings). */
typedef struct {
  gint64 step;
} StepParams;

static const EmaParam step_param_list[] = {
    {"step", EMA_PARAM_INT, G_STRUCT_OFFSET(StepParams, step), .default_value = "1", .min = 0,
     .max = 1e9, .help = "slices a borrow takes"},
};

static const EmaParamTable step_params = {"writes-params", sizeof(StepParams), step_param_list,
                                          EMA_PARAMS_N(step_param_list), NULL};

static void writes_params(gpointer state, gconstpointer params, const EmaPoolView *view,
                          guint borrower, EmaBorrowPlan *plan) {
  ((StepParams *) params)->step++;
  borrow_one(view, borrower, plan);
}

static const EmaBorrowPolicyOps params_writer = {
    .abi_version = EMA_POLICY_ABI_VERSION,
    .name = "writes-params",
    .summary = "adds one to its own parameter at every call",
    .params = &step_params,
    .decide = writes_params,
};

static const EmaBorrowPolicyOps lent = {
    .abi_version = EMA_POLICY_ABI_VERSION,
    .name = "writes-lent",
    .summary = "writes into view->lent",
    .decide = writes_lent,
};

static const EmaBorrowPolicyOps blocks_at = {
    .abi_version = EMA_POLICY_ABI_VERSION,
    .name = "writes-blocks-at",
    .summary = "writes into a request view's blocks_at",
    .decide = writes_blocks_at,
};

static const EmaBorrowPolicyOps minint = {
    .abi_version = EMA_POLICY_ABI_VERSION,
    .name = "returns-minint",
    .summary = "returns G_MININT64 slices",
    .state_size = sizeof(guint64),
    .decide = returns_minint,
};

/* Before a step with remote KV: direct loads, the lent matrix written. */
static void prefetch_writes_lent(gpointer state, gconstpointer params, const EmaPoolView *view,
                                 guint gpu, const EmaStepCostView *step, EmaPrefetchPlan *plan) {
  ((guint64 *) view->lent)[gpu] += 7;
}

static const EmaPrefetchPolicyOps prefetch_lent = {
    .abi_version = EMA_POLICY_ABI_VERSION,
    .name = "prefetch-writes-lent",
    .summary = "writes into view->lent before a step",
    .decide = prefetch_writes_lent,
};

static const EmaBorrowPolicyOps *const borrow[] = {&lent,          &blocks_at,     &minint,
                                                   &overfull_plan, &params_writer, NULL};
static const EmaPrefetchPolicyOps *const prefetch[] = {&prefetch_lent, NULL};
static const EmaReclaimPolicyOps *const reclaim[] = {&reclaim_overfull_plan, NULL};

G_MODULE_EXPORT const EmaPolicyModule ema_policy_module = {EMA_POLICY_ABI_VERSION, borrow, prefetch,
                                                           reclaim};
