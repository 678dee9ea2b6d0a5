/* borrow-most-idle.c: the `most-idle` borrow policy (the borrow half of
 * `ema`). After each step it tops its tenant up to the memory it will need
 * over the next `horizon` at its current demand trend, plus whatever the
 * last step lacked, from the peers with the most idle memory, never taking
 * a lender below `lender_reserve` of its region plus its own demand over
 * the same horizon (lender priority: a lender's growth is reserved before
 * it lends). Borrows are at least `min_borrow` slices, to keep mapping
 * calls few. With `affinity` F > 0 a borrow goes to a peer that already
 * lends to the tenant when that peer can give the whole borrow and has at
 * least F of the most idle peer's lendable slices (a borrower's slices on
 * fewer lenders: fewer reclaims and less work per step on a rack, slower
 * lenders' admissions on 8 GPUs; off by default, docs/rack-scale.md). With
 * `spread` a borrow goes to the most idle peer that no other GPU reads
 * remote KV from, where one can give any, else to the most idle: several
 * borrowers' reads and offloaded attention on one lender share its HBM
 * time (and its offload allowance), so the most idle memory is not the
 * cheapest to use (off by default; experiments/rack/README.md measures it).
 * Empty borrowed slices beyond that need go back once nothing waits.
 * With `tier_slices` a tenant with a prefix cache (a request of state
 * cached in the view) also keeps that many slices borrowed beyond the need
 * (borrowing them while lenders have room to spare): room for the prefix
 * cache's remote tier (policy.prefix_tier), which keeps cached blocks no
 * request holds in borrowed slices that hold no blocks.
 *
 * With `within_limit` it holds borrowed room only up to what the prefetch
 * plan admits as remote (the tenant's blocks_room beyond its local
 * capacity, which the plan's room_limit sets: its remote_limit, or the
 * step's own limit where that is held lower for admission, as `offload`'s
 * admit_hold does): while that is less than
 * the room its borrowed slices hold, it borrows nothing (what its tenant
 * lacks is then the limit's, not memory), and once that has been so at
 * every decision for `limit_hold` it gives back the empty slices beyond the
 * larger of the admitted room and its remote blocks, whatever waits (the
 * limit moves from step to step with the batch; returning at every dip
 * borrowed and returned thousands of times a run). The pool's remote_limit gates only the admission
 * of new requests: without this, running requests grow into any borrowed room, past what the plan
 * can read at its cost (for `offload`, past what the lenders' allowance serves, so that the steps
 * wait for capped partials or read that KV directly).
 *
 * With `place` it also places its tenant's KV (the place hook, after each
 * decision): new blocks go local first, so the running requests that grew
 * while local room was full keep blocks on lenders, read remotely at every
 * step they run (direct loads, prefetch or offload: borrower step time and
 * lender HBM time), even once local room frees up. place() moves them home:
 *   1. hot blocks into free local room (place_local_room(): while the
 *      tenant holds more remote KV than its plan admits, only the room its
 *      engine does not need): the running requests' remote blocks, and the
 *      prefix cache's first (the cache holds the prompt blocks that the
 *      running requests filled and registered, read at each of their steps;
 *      cached blocks no request holds are not in the ledger but free room,
 *      which the engine's prefix tier demotes to peers itself), then the
 *      request with the most output still to come (its blocks are read at
 *      the most steps), never those of a request with PLACE_MIN_STEPS
 *      steps or fewer left (a copy costs about what reading the block
 *      remotely for that many steps does);
 *   2. where no local room is free, cold blocks out to borrowed room to
 *      make room for them: preempted or waiting requests' blocks, which no
 *      step reads, each block out paired with a hot block in;
 *   3. within a budget: a decision's copies take at most `place_budget` of
 *      the tenant's last step on the link (at least one block). A block
 *      moved costs one copy over the link, landing in the destination's
 *      HBM; a block left remote costs a read over the link at every step
 *      it runs (direct loads at about the copy's bandwidth, and the
 *      lender's HBM time either way), so a move pays for itself within
 *      a few steps and the budget only spreads the copies over decisions,
 *      leaving the link to the steps' own remote reads.
 * A look for cold blocks that found none, with no local room free, is not
 * repeated within `horizon` (each look reads every request of the tenant).
 * The pool logs each move to events.csv (`place`: the request, its state
 * and output to come, the blocks and the places). Off by default, and in
 * `ema` and `offload`: measured on the paper's scenarios it does not raise
 * the borrowers' gain (experiments/paper/README.md, "Placement"). */
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
  gboolean place;
  double place_budget;
  double affinity;
  gboolean spread;
} Params;

/* place(): a request with this many decode steps left or fewer (output
 * tokens to come) keeps its remote blocks: a block's copy costs about what
 * reading it remotely for that many steps does (one link transfer, plus
 * the landing in HBM: gpu.interference_incoming, ~1.9 bytes of the
 * borrower's HBM time per byte as measured on H200), and its blocks are
 * freed soon. */
#define PLACE_MIN_STEPS 2

/* Private state (within_limit): since when the plan's remote limit has
 * bound at every decision (a streak; bound FALSE: the last decision found
 * it open). */
typedef struct {
  gboolean bound;
  EmaTime bound_since;
  /* place: its last look for cold local blocks, with no local room free, found none (and when) */
  gboolean no_cold;
  EmaTime no_cold_at;
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
    {"place", EMA_PARAM_BOOL, G_STRUCT_OFFSET(Params, place), .default_value = "false",
     .help = "place the tenant's KV after each decision: running requests' remote blocks move "
             "into free local room (most output to come first), preempted or waiting requests' "
             "local blocks out to borrowed room to make room for them; each move a `place` "
             "event"},
    {"place_budget", EMA_PARAM_FRACTION, G_STRUCT_OFFSET(Params, place_budget),
     .default_value = "25%", .min = 0, .max = 1,
     .help = "place: the share of the tenant's last step that one decision's copies may take on "
             "the link (at least one block per decision)"},
    {"affinity", EMA_PARAM_FRACTION, G_STRUCT_OFFSET(Params, affinity), .default_value = "0",
     .min = 0, .max = 1,
     .help = "a borrow goes to a lender that already lends to the tenant when it can give the "
             "whole borrow and has at least this share of the most idle lender's lendable "
             "slices (0: every borrow from the most idle; docs/rack-scale.md measures both on a "
             "rack and on 8 GPUs)"},
    {"spread", EMA_PARAM_BOOL, G_STRUCT_OFFSET(Params, spread), .default_value = "false",
     .help = "a borrow goes to the most idle lender that no other GPU reads remote KV from, "
             "where one can give any (else the most idle): borrowers' reads and offloaded "
             "attention spread over lenders' HBM time instead of all going to the most idle"},
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
  EMA_POOL_VIEW_FOR_EACH_LENDER (view, borrower, j) {
    guint64 give;
    if (given >= slices || plan->n >= G_N_ELEMENTS(plan->actions))
      break;
    give = MIN(view_empty_borrowed(view, borrower, j), slices - given);
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
  guint64 local, room, total, admitted, keep, give;
  if (g->slices_borrowed == 0) { /* no room held (most decisions: the lenders') */
    s->bound = FALSE;
    return FALSE;
  }
  local = view_local_capacity(view, borrower);
  room = view_remote_room(view, borrower);
  total = view->blocks_room ? view->blocks_room[borrower] : g->blocks_total;
  admitted = total > local ? total - local : 0;
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
    plan_borrow_most_idle(view, borrower, slices, p->lender_reserve, horizon_s(p), p->affinity,
                          p->spread, plan);
    return;
  }
  /* with nothing borrowed there is nothing empty to give back */
  if (g->blocks_short == 0 && g->waiting == 0 && g->slices_borrowed > 0) {
    /* keep the projected growth; give back the rest of what is empty */
    guint64 keep = view_slices_for(view, borrower, (guint64) ceil(growth));
    guint64 local_room = view_slices_for(view, borrower, view_local_free(view, borrower));
    /* the tier's slices are kept whatever the local room */
    keep = (keep > local_room ? keep - local_room : 0) + tier;
    EMA_POOL_VIEW_FOR_EACH_LENDER (view, borrower, j) {
      guint64 empty, give;
      if (plan->n >= G_N_ELEMENTS(plan->actions))
        break;
      empty = view_empty_borrowed(view, borrower, j);
      give = empty > keep ? empty - keep : 0;
      keep -= MIN(keep, empty);
      if (give >= (guint64) p->min_borrow)
        plan->actions[plan->n++] = (EmaBorrowAction){j, -(gint64) give};
    }
  }
}

/* ---- placement ---------------------------------------------------------------- */

/* A request whose blocks place() brings home: running with more than
 * PLACE_MIN_STEPS steps to go (or not known), or the prefix cache's held
 * blocks (read by the running requests that share them). */
static gboolean place_hot(const EmaRequestView *r) {
  return r->state == EMA_REQUEST_CACHED ||
         (r->state == EMA_REQUEST_RUNNING &&
          (r->remaining_tokens < 0 || r->remaining_tokens > PLACE_MIN_STEPS));
}

/* A request whose local blocks no step reads. */
static gboolean place_cold(const EmaRequestView *r) {
  return r->state == EMA_REQUEST_PREEMPTED || r->state == EMA_REQUEST_WAITING;
}

/* The order place() brings hot requests home in: most steps to go first
 * (the prefix cache's blocks before any, a request not known after those
 * known), then the view's order. */
static gint64 place_key(const EmaRequestView *r) {
  return r->state == EMA_REQUEST_CACHED ? G_MAXINT64 : r->remaining_tokens;
}

/* A hot request with blocks off the borrower: its place_key and index. */
typedef struct {
  gint64 key;
  guint index;
} HotRequest;

/* place_key's order: key descending, then the view's order. */
static int hot_compare(const void *a, const void *b) {
  const HotRequest *x = a, *y = b;
  if (x->key != y->key)
    return x->key > y->key ? -1 : 1;
  return x->index < y->index ? -1 : x->index > y->index;
}

/* The hot requests among N with blocks off BORROWER into HOT[N], in
 * place_key's order; returns how many, and adds their blocks off BORROWER
 * to *BLOCKS. One pass and a sort of the few found (a look reads every
 * request: finding each next one by another pass cost a look O(N) per
 * request brought home). */
static guint place_hot_order(const EmaRequestView *requests, guint n, guint borrower,
                             HotRequest *hot, guint64 *blocks) {
  guint m = 0;
  for (guint i = 0; i < n; i++)
    if (place_hot(&requests[i]) && requests[i].blocks_at[borrower] < requests[i].blocks) {
      hot[m++] = (HotRequest){place_key(&requests[i]), i};
      *blocks += requests[i].blocks - requests[i].blocks_at[borrower];
    }
  qsort(hot, m, sizeof *hot, hot_compare);
  return m;
}

/* The next cold request from AT on with blocks on BORROWER; N if none. */
static guint place_next_cold(const EmaRequestView *requests, guint n, guint at, guint borrower) {
  while (at < n && !(place_cold(&requests[at]) && requests[at].blocks_at[borrower] > 0))
    at++;
  return at;
}

/* Blocks one decision's copies may move: PLACE_BUDGET of the last step's
 * duration at the link's copy bandwidth, at least one. */
static guint64 place_budget_blocks(const Params *p, const EmaPoolView *view, guint borrower) {
  const EmaGpuView *g = &view->gpus[borrower];
  double bytes = p->place_budget * (double) g->last_step / 1e9 * view->server->link.bandwidth;
  return MAX((guint64) (bytes / (double) g->block_bytes), 1);
}

/* Local room place() may fill with hot blocks: the free local blocks, all
 * of them while BORROWER's remote blocks are within what the prefetch plan
 * admits (blocks_total beyond the local capacity): a block home then frees
 * an admitted remote one, and its engine's free blocks stay as they were.
 * Beyond it the remote room counts as no free room to the engine, so each
 * block home takes a free block from it (its scheduler preempts sooner:
 * +34% preemptions under ema, +44% under offload, measured on
 * a100x4-opt13b-sharegpt over 5 seeds): only the local
 * room beyond the tenant's own growth over P's horizon, and none while it
 * lacks blocks or requests wait. */
static guint64 place_local_room(const Params *p, const EmaPoolView *view, guint borrower) {
  const EmaGpuView *g = &view->gpus[borrower];
  guint64 free_local = view_local_free(view, borrower), local = view_local_capacity(view, borrower);
  guint64 admitted = g->blocks_total > local ? g->blocks_total - local : 0, growth;
  if (g->blocks_remote <= admitted)
    return free_local;
  if (g->blocks_short > 0 || g->waiting > 0)
    return 0;
  growth = (guint64) ceil(MAX(g->demand_blocks_per_s, 0) * horizon_s(p));
  return free_local > growth ? free_local - growth : 0;
}

/* The place hook (`place`): the file's top comment says what it moves. */
static void place(gpointer state, gconstpointer params_data, const EmaPoolView *view,
                  guint borrower, EmaPlacementPlan *plan) {
  const Params *p = params_data;
  State *s = state;
  const EmaGpuView *g = &view->gpus[borrower];
  const EmaRequestView *requests;
  guint n_gpus = view->n_gpus, n = 0, n_hot, hot = 0, cold, j = 0;
  HotRequest *order;
  guint64 *room = g_newa(guint64, n_gpus);
  guint64 free_local, budget, remote_room = 0, hot_left = 0, done = 0, cold_done = 0;
  /* nothing remote, or nowhere to move anything: no need to look at the requests */
  if (!p->place || g->blocks_remote == 0 || g->block_bytes == 0 || view->requests == NULL)
    return;
  free_local = place_local_room(p, view, borrower);
  for (guint k = 0; k < n_gpus; k++) {
    guint64 cap = view->lent[k * n_gpus + borrower] * EMA_SLICE_BYTES / g->block_bytes;
    guint64 used = view->remote_blocks[borrower * n_gpus + k];
    room[k] = k != borrower && cap > used ? cap - used : 0;
    remote_room += room[k];
  }
  /* no local room, and none to make: cold blocks need borrowed room to go
   * to, and a request to be cold (preempted requests wait) */
  if (free_local == 0 && (remote_room == 0 || g->waiting == 0))
    return;
  /* with no local room free, only cold blocks out can make some: a look that found none is not
   * repeated within `horizon` (a look reads every request, the waiting ones too; with thousands
   * waiting, a look at every decision took 99% of a run's time) */
  if (free_local == 0 && s->no_cold && view->now - s->no_cold_at < p->horizon)
    return;
  requests = view->requests(view, borrower, &n);
  order = g_new(HotRequest, MAX(n, 1));
  n_hot = place_hot_order(requests, n, borrower, order, &hot_left);
  budget = place_budget_blocks(p, view, borrower);
  cold = place_next_cold(requests, n, 0, borrower);
  s->no_cold = free_local == 0 && cold >= n;
  s->no_cold_at = view->now;
  /* the HOT-th hot request's blocks on lender J, DONE of them moved already;
   * cold request COLD's local blocks, COLD_DONE of them moved out */
  while (hot < n_hot && budget > 0 && plan->n < G_N_ELEMENTS(plan->actions)) {
    const EmaRequestView *r = &requests[order[hot].index];
    guint64 k;
    if (j == borrower || r->blocks_at[j] == done) {
      done = 0;
      if (++j == n_gpus) {
        j = 0;
        hot++;
      }
      continue;
    }
    if (free_local == 0) {
      /* room for it: a cold request's local blocks out, to the lender
       * with the most room, as many as come in for them (each pair two
       * copies of the budget) */
      guint to = 0;
      for (guint m = 1; m < n_gpus; m++)
        if (room[m] > room[to])
          to = m;
      k = cold < n && plan->n + 2 <= G_N_ELEMENTS(plan->actions)
              ? MIN(MIN(requests[cold].blocks_at[borrower] - cold_done, room[to]),
                    MIN(budget / 2, hot_left))
              : 0;
      if (k == 0)
        break;
      plan->actions[plan->n++] = (EmaPlacementAction){requests[cold].request, borrower, to, k};
      room[to] -= k;
      free_local += k;
      budget -= k;
      cold_done += k;
      if (cold_done == requests[cold].blocks_at[borrower]) {
        cold = place_next_cold(requests, n, cold + 1, borrower);
        cold_done = 0;
      }
      continue;
    }
    k = MIN(MIN(r->blocks_at[j] - done, free_local), budget);
    plan->actions[plan->n++] = (EmaPlacementAction){r->request, j, borrower, k};
    done += k;
    free_local -= k;
    budget -= k;
    hot_left -= k;
    room[j] += k;
  }
  g_free(order);
}

const EmaBorrowPolicyOps ema_borrow_most_idle = {
    .abi_version = EMA_POLICY_ABI_VERSION,
    .name = "most-idle",
    .summary = "borrow ahead of the demand trend from the most idle peers, above a lender reserve",
    .params = &table,
    .state_size = sizeof(State),
    .decide = decide,
    .place = place,
};
