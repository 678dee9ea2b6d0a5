/* borrow-most-idle.c: the `most-idle` borrow policy (the borrow half of
 * `ema`). After each step it tops its tenant up to the memory it will need
 * over the next `horizon` at its current demand trend, plus whatever the
 * last step lacked, from the peers with the most idle memory, never taking
 * a lender below `lender_reserve` of its region plus its own demand over
 * the same horizon (lender priority: a lender's growth is reserved before
 * it lends). Borrows are at least `min_borrow` slices, to keep mapping
 * calls few. Empty borrowed slices beyond that need go back once nothing
 * waits. With `tier_slices` a tenant with a prefix cache (a request of
 * state cached in the view) also keeps that many slices borrowed beyond the
 * need (borrowing them while lenders have room to spare): room for the
 * prefix cache's remote tier (policy.prefix_tier), which keeps cached
 * blocks no request holds in borrowed slices that hold no blocks.
 *
 * With `within_limit` it holds borrowed room only up to what the prefetch
 * plan admits as remote (the tenant's blocks_total beyond its local
 * capacity, which the plan's remote_limit sets): while that is less than
 * the room its borrowed slices hold, it borrows nothing (what its tenant
 * lacks is then the limit's, not memory), and once that has been so at
 * every decision for `limit_hold` it gives back the empty slices beyond the
 * larger of the admitted room and its remote blocks, whatever waits (the
 * limit moves from step to step with the batch; returning at every dip
 * borrowed and returned thousands of times a run). The pool's remote_limit gates only the admission
 * of new requests: without this, running requests grow into any borrowed room, past what the plan
 * can read at its cost (for `offload`, past what the lenders' allowance serves, so that the steps
 * wait for capped partials or read that KV directly). */
#include <math.h>

#include "builtin.h"
#include "common.h"

typedef struct {
  double lender_reserve;
  gint64 horizon;
  gint64 min_borrow;
  gint64 tier_slices;
  gboolean within_limit;
  gint64 limit_hold;
} Params;

/* Private state (within_limit): since when the plan's remote limit has
 * bound at every decision (a streak; bound FALSE: the last decision found
 * it open). */
typedef struct {
  gboolean bound;
  EmaTime bound_since;
} State;

static const EmaParam params[] = {
    {"lender_reserve", EMA_PARAM_FRACTION, G_STRUCT_OFFSET(Params, lender_reserve),
     .default_value = "10%", .min = 0, .max = 1,
     .help = "share of each lender's KV region it never lends"},
    {"horizon", EMA_PARAM_DURATION, G_STRUCT_OFFSET(Params, horizon), .default_value = "2s",
     .min = 0, .max = 3.6e12, .help = "how far ahead demand trends are projected"},
    {"min_borrow", EMA_PARAM_INT, G_STRUCT_OFFSET(Params, min_borrow), .default_value = "16",
     .min = 1, .max = 1e9, .help = "smallest borrow, in 2 MiB slices"},
    {"tier_slices", EMA_PARAM_INT, G_STRUCT_OFFSET(Params, tier_slices), .default_value = "0",
     .min = 0, .max = 1e9,
     .help = "slices kept borrowed beyond the need, for the prefix cache's remote tier"},
    {"within_limit", EMA_PARAM_BOOL, G_STRUCT_OFFSET(Params, within_limit),
     .default_value = "false",
     .help = "hold borrowed room only up to what the prefetch plan admits as remote: no "
             "borrowing while its remote limit binds, empty slices beyond it given back"},
    {"limit_hold", EMA_PARAM_DURATION, G_STRUCT_OFFSET(Params, limit_hold),
     .default_value = "250ms", .min = 0, .max = 3.6e12,
     .help = "within_limit: how long the remote limit must bind at every decision before "
             "empty slices beyond it go back (a limit that moves from step to step returns "
             "nothing)"},
};

static const EmaParamTable table = {"most-idle", sizeof(Params), params, EMA_PARAMS_N(params),
                                    NULL};

/* The tier's slices BORROWER keeps: TIER_SLICES if its tenant has a prefix
 * cache (a request of state cached in the view), else none. */
static guint64 tier_keep(const EmaPoolView *view, guint borrower, gint64 tier_slices) {
  const EmaRequestView *requests;
  guint n = 0;
  if (tier_slices == 0 || view->requests == NULL)
    return 0;
  requests = view->requests(view, borrower, &n);
  for (guint i = 0; i < n; i++)
    if (requests[i].state == EMA_REQUEST_CACHED)
      return (guint64) tier_slices;
  return 0;
}

/* Give back up to SLICES of BORROWER's empty borrowed slices, at least
 * MIN_GIVE from a lender (the lenders in index order); returns how many. */
static guint64 give_empty(const EmaPoolView *view, guint borrower, guint64 slices, guint64 min_give,
                          EmaBorrowPlan *plan) {
  guint64 given = 0;
  for (guint j = 0; j < view->n_gpus && given < slices && plan->n < G_N_ELEMENTS(plan->actions);
       j++) {
    guint64 give = MIN(view_empty_borrowed(view, borrower, j), slices - given);
    if (give >= min_give) {
      plan->actions[plan->n++] = (EmaBorrowAction){j, -(gint64) give};
      given += give;
    }
  }
  return given;
}

/* within_limit: TRUE when the prefetch plan admits less remote KV than
 * BORROWER's borrowed slices hold; then, once that has been so at every
 * decision for limit_hold (S's streak), PLAN gives back the empty slices
 * beyond the larger of the admitted room and its remote blocks, but for
 * TIER slices (the prefix tier's, tier_keep()). */
static gboolean limit_binds(const Params *p, State *s, const EmaPoolView *view, guint borrower,
                            guint64 tier, EmaBorrowPlan *plan) {
  const EmaGpuView *g = &view->gpus[borrower];
  guint64 local = view_local_capacity(view, borrower);
  guint64 room = view_remote_room(view, borrower);
  guint64 admitted = g->blocks_total > local ? g->blocks_total - local : 0, keep, give;
  if (admitted >= room) {
    s->bound = FALSE;
    return FALSE;
  }
  if (!s->bound) {
    s->bound = TRUE;
    s->bound_since = view->now;
  }
  if (view->now - s->bound_since < p->limit_hold)
    return TRUE;
  keep = MAX(admitted, g->blocks_remote);
  /* whole empty slices: the blocks beyond KEEP, rounded down */
  give = room > keep ? (room - keep) * g->block_bytes / EMA_SLICE_BYTES : 0;
  if (give > tier)
    give_empty(view, borrower, give - tier, (guint64) p->min_borrow, plan);
  return TRUE;
}

static double horizon_s(const Params *p) {
  return (double) p->horizon / 1e9;
}

static void decide(gpointer state, gconstpointer params_data, const EmaPoolView *view,
                   guint borrower, EmaBorrowPlan *plan) {
  const Params *p = params_data;
  const EmaGpuView *g = &view->gpus[borrower];
  /* (the horizon's division only where demand grows: most decisions find it does not) */
  double growth = g->demand_blocks_per_s > 0 ? g->demand_blocks_per_s * horizon_s(p) : 0;
  guint64 free_blocks = g->blocks_total > g->blocks_used ? g->blocks_total - g->blocks_used : 0;
  double need = (double) g->blocks_short + MAX(0, growth - (double) free_blocks);
  guint64 tier = tier_keep(view, borrower, p->tier_slices);
  /* (no ceil() call where nothing is needed, as in most decisions) */
  guint64 slices = (need > 0 ? view_slices_for(view, borrower, (guint64) ceil(need)) : 0) + tier;
  /* borrowed slices it holds empty (the prefetch policy may not admit more
   * remote KV into them yet) and borrows on their way count first */
  guint64 have = g->slices_pending + (g->slices_borrowed - g->slices_borrowed_used);
  /* (within_limit off, the default, costs a decision one test) */
  if (p->within_limit && limit_binds(p, state, view, borrower, tier, plan))
    return;
  if (slices > have) {
    slices = MAX(slices - have, (guint64) p->min_borrow);
    plan_borrow_most_idle(view, borrower, slices, p->lender_reserve, horizon_s(p), plan);
    return;
  }
  /* with nothing borrowed there is nothing empty to give back */
  if (g->blocks_short == 0 && g->waiting == 0 && g->slices_borrowed > 0) {
    /* keep the projected growth; give back the rest of what is empty */
    guint64 keep = view_slices_for(view, borrower, (guint64) ceil(growth));
    guint64 local_room = view_slices_for(view, borrower, view_local_free(view, borrower));
    /* the tier's slices are kept whatever the local room */
    keep = (keep > local_room ? keep - local_room : 0) + tier;
    for (guint j = 0; j < view->n_gpus && plan->n < G_N_ELEMENTS(plan->actions); j++) {
      guint64 empty = view_empty_borrowed(view, borrower, j);
      guint64 give = empty > keep ? empty - keep : 0;
      keep -= MIN(keep, empty);
      if (give >= (guint64) p->min_borrow)
        plan->actions[plan->n++] = (EmaBorrowAction){j, -(gint64) give};
    }
  }
}

const EmaBorrowPolicyOps ema_borrow_most_idle = {
    .abi_version = EMA_POLICY_ABI_VERSION,
    .name = "most-idle",
    .summary = "borrow ahead of the demand trend from the most idle peers, above a lender reserve",
    .params = &table,
    .state_size = sizeof(State),
    .decide = decide,
};
