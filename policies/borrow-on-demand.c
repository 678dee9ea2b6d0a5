/* borrow-on-demand.c: the `on-demand` borrow policy: when its tenant lacked
 * blocks in its last step, borrow what it lacked (plus `extra` slices) from
 * the peers with the most free memory, keeping `reserve` of each lender's
 * region; give back empty borrowed slices once nothing waits and the
 * tenant's own slices have room for all it holds. No trend, no lender
 * headroom: the plain "borrow when short" behaviour. */
#include "builtin.h"
#include "common.h"

typedef struct {
  double reserve;
  gint64 extra;
} Params;

static const EmaParam params[] = {
    {"reserve", EMA_PARAM_FRACTION, G_STRUCT_OFFSET(Params, reserve), .default_value = "0%",
     .min = 0, .max = 1, .help = "share of each lender's KV region never lent"},
    {"extra", EMA_PARAM_INT, G_STRUCT_OFFSET(Params, extra), .default_value = "0", .min = 0,
     .max = 1e9, .help = "slices borrowed beyond the shortage"},
};

static const EmaParamTable table = {"on-demand", sizeof(Params), params, EMA_PARAMS_N(params),
                                    NULL};

static void decide(gpointer state, gconstpointer params_data, const EmaPoolView *view,
                   guint borrower, EmaBorrowPlan *plan) {
  const Params *p = params_data;
  const EmaGpuView *g = &view->gpus[borrower];
  if (g->blocks_short > 0) {
    guint64 want = view_slices_for(view, borrower, g->blocks_short) + (guint64) p->extra;
    guint64 have = g->slices_pending + (g->slices_borrowed - g->slices_borrowed_used);
    if (want > have)
      plan_borrow_most_idle(view, borrower, want - have, p->reserve, 0, 0, FALSE, plan);
    return;
  }
  /* with nothing borrowed there is nothing empty to give back */
  if (g->waiting == 0 && g->slices_borrowed > 0 &&
      g->blocks_used <= view_local_capacity(view, borrower))
    EMA_POOL_VIEW_FOR_EACH_LENDER (view, borrower, j) {
      guint64 empty;
      if (plan->n >= G_N_ELEMENTS(plan->actions))
        break;
      empty = view_empty_borrowed(view, borrower, j);
      if (empty > 0)
        plan->actions[plan->n++] = (EmaBorrowAction){j, -(gint64) empty};
    }
}

const EmaBorrowPolicyOps ema_borrow_on_demand = {
    .abi_version = EMA_POLICY_ABI_VERSION,
    .name = "on-demand",
    .summary = "borrow what the last step lacked from the most idle peers; return when idle",
    .params = &table,
    .decide = decide,
};
