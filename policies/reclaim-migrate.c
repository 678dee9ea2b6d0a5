/* reclaim-migrate.c: the `migrate` reclaim policy (the reclaim half of
 * `ema`). A lender that lacks memory takes slices back from the borrowers
 * holding the most of its slices; each borrower's data goes back to the
 * borrower if its own slices have room, else to the peer with the most
 * lendable memory, else to host memory (its requests swap back in later).
 * Empty slices come back first, with no copy. Proactively, after each of
 * its steps a lender keeps `headroom` of its demand trend free: when its
 * free memory falls below that, it reclaims the difference early. */
#include <math.h>

#include "builtin.h"
#include "common.h"

typedef struct {
  gint64 headroom;
} Params;

static const EmaParam params[] = {
    {"headroom", EMA_PARAM_DURATION, G_STRUCT_OFFSET(Params, headroom), .default_value = "1s",
     .min = 0, .max = 3.6e12, .help = "demand the lender keeps free ahead (trend x this)"},
};

static const EmaParamTable table = {"migrate", sizeof(Params), params, EMA_PARAMS_N(params), NULL};

/* Where BORROWER's DATA_SLICES of data on LENDER can go. */
static EmaReclaimAction place(const EmaPoolView *view, guint lender, guint borrower, guint64 slices,
                              guint64 data_blocks) {
  EmaReclaimAction action = {borrower, slices, EMA_VACATE_TO_HOST, 0};
  guint64 data_slices = view_slices_for(view, borrower, data_blocks);
  guint64 best_room = 0;
  if (data_blocks == 0 || view_local_free(view, borrower) >= data_blocks) {
    action.target = EMA_VACATE_TO_BORROWER;
    return action;
  }
  for (guint t = 0; t < view->n_gpus; t++) {
    guint64 room = t == lender || t == borrower ? 0 : ema_pool_view_lendable(view, t, 0);
    if (room >= data_slices && room > best_room) {
      best_room = room;
      action.target = EMA_VACATE_TO_PEER;
      action.target_gpu = t;
    }
  }
  return action;
}

static void decide(gpointer state, gconstpointer params_data, const EmaPoolView *view, guint lender,
                   guint64 needed, EmaReclaimPlan *plan) {
  const Params *p = params_data;
  const EmaGpuView *l = &view->gpus[lender];
  if (needed == 0) {
    double want = MAX(l->demand_blocks_per_s, 0) * ((double) p->headroom / 1e9);
    guint64 free_blocks = view_local_free(view, lender);
    if (!l->has_tenant || want <= (double) free_blocks)
      return;
    needed = view_slices_for(view, lender, (guint64) ceil(want) - free_blocks);
  }
  while (needed > 0 && plan->n < G_N_ELEMENTS(plan->actions)) {
    guint best = view->n_gpus;
    guint64 most = 0;
    for (guint b = 0; b < view->n_gpus; b++) {
      guint64 lent = view->lent[lender * view->n_gpus + b];
      for (guint k = 0; k < plan->n; k++)
        if (plan->actions[k].borrower == b)
          lent = 0;
      if (lent > most) {
        most = lent;
        best = b;
      }
    }
    if (best == view->n_gpus)
      return;
    {
      guint64 take = MIN(most, needed);
      guint64 keep_blocks = (most - take) * EMA_SLICE_BYTES / MAX(view->gpus[best].block_bytes, 1);
      guint64 held = view->remote_blocks[best * view->n_gpus + lender];
      guint64 data = held > keep_blocks ? held - keep_blocks : 0;
      plan->actions[plan->n++] = place(view, lender, best, take, data);
      needed -= take;
    }
  }
}

const EmaReclaimPolicyOps ema_reclaim_migrate = {
    .abi_version = EMA_POLICY_ABI_VERSION,
    .name = "migrate",
    .summary = "take back slices; move data to the borrower, a peer or host; keep headroom",
    .params = &table,
    .decide = decide,
};
