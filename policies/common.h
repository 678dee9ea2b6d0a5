/* common.h: small read-only helpers over the pool view that several
 * built-in policies use (inline, so each policy stays one file to read). */
#pragma once

#include "ema/policy.h"

/* Blocks the tenant of GPU can hold in its own slices now. */
static inline guint64 view_local_capacity(const EmaPoolView *view, guint gpu) {
  const EmaGpuView *g = &view->gpus[gpu];
  guint64 taken = g->slices_lent + g->slices_staging;
  if (g->block_bytes == 0 || taken >= g->slices)
    return 0;
  return (g->slices - taken) * EMA_SLICE_BYTES / g->block_bytes;
}

/* Free blocks in the tenant's own slices. */
static inline guint64 view_local_free(const EmaPoolView *view, guint gpu) {
  const EmaGpuView *g = &view->gpus[gpu];
  guint64 cap = view_local_capacity(view, gpu);
  guint64 used = g->blocks_used - g->blocks_remote;
  return cap > used ? cap - used : 0;
}

/* Slices that hold BLOCKS of GPU's tenant. */
static inline guint64 view_slices_for(const EmaPoolView *view, guint gpu, guint64 blocks) {
  guint64 bytes = blocks * view->gpus[gpu].block_bytes;
  return (bytes + EMA_SLICE_BYTES - 1) / EMA_SLICE_BYTES;
}

/* Blocks of BORROWER's tenant the slices it borrows hold, each lender's
 * counted in whole blocks (the pool's remote capacity). */
static inline guint64 view_remote_room(const EmaPoolView *view, guint borrower) {
  guint64 room = 0, bytes = view->gpus[borrower].block_bytes;
  if (bytes == 0)
    return 0;
  EMA_POOL_VIEW_FOR_EACH_LENDER (view, borrower, j)
    room += view->lent[j * view->n_gpus + borrower] * EMA_SLICE_BYTES / bytes;
  return room;
}

/* Empty slices BORROWER holds from LENDER (no block of it in them). */
static inline guint64 view_empty_borrowed(const EmaPoolView *view, guint borrower, guint lender) {
  guint64 lent = view->lent[lender * view->n_gpus + borrower];
  guint64 used =
      view_slices_for(view, borrower, view->remote_blocks[borrower * view->n_gpus + lender]);
  return lent > used ? lent - used : 0;
}

/* Borrow up to SLICES for BORROWER from the peers with the most lendable
 * slices above RESERVE_SHARE of their region (plus each peer's own demand
 * over HORIZON_S seconds, in slices); appends to PLAN; returns what it
 * planned. With AFFINITY > 0 a borrow goes to a peer that already lends
 * to BORROWER when that peer can give all that is left to borrow and has
 * at least AFFINITY of the most idle peer's lendable slices (the one with
 * the most of those), so that a borrower's slices gather on fewer lenders;
 * 0: every borrow from the most idle peer. With SPREAD (and no such peer)
 * a borrow goes to the most idle peer that no other GPU reads remote KV
 * from, where one can give any. */
static inline guint64 plan_borrow_most_idle(const EmaPoolView *view, guint borrower, guint64 slices,
                                            double reserve_share, double horizon_s, double affinity,
                                            gboolean spread, EmaBorrowPlan *plan) {
  guint64 planned = 0;
  while (planned < slices && plan->n < G_N_ELEMENTS(plan->actions)) {
    guint best = view->n_gpus, held = view->n_gpus, alone = view->n_gpus;
    guint64 most = 0, held_most = 0, alone_most = 0, left = slices - planned;
    for (guint j = 0; j < view->n_gpus; j++) {
      const EmaGpuView *l = &view->gpus[j];
      double own = l->demand_blocks_per_s > 0 ? l->demand_blocks_per_s * horizon_s : 0;
      guint64 reserve = (guint64) (reserve_share * (double) l->slices) +
                        view_slices_for(view, j, (guint64) own) +
                        view_slices_for(view, j, l->blocks_short);
      guint64 can = j == borrower ? 0 : ema_pool_view_lendable(view, j, reserve);
      for (guint k = 0; k < plan->n; k++)
        if (plan->actions[k].lender == j)
          can = 0;
      if (can > most) {
        most = can;
        best = j;
      }
      if (spread && can > alone_most &&
          ema_pool_view_readers(view, j) ==
              (view->remote_blocks[borrower * view->n_gpus + j] > 0 ? 1u : 0u)) {
        alone_most = can;
        alone = j;
      }
      if (affinity > 0 && can >= left && can > held_most &&
          view->lent[j * view->n_gpus + borrower] > 0) {
        held_most = can;
        held = j;
      }
    }
    if (held < view->n_gpus && (double) held_most >= affinity * (double) most) {
      best = held;
      most = held_most;
    } else if (alone < view->n_gpus) {
      best = alone;
      most = alone_most;
    }
    if (best == view->n_gpus)
      break;
    plan->actions[plan->n++] = (EmaBorrowAction){best, (gint64) MIN(most, slices - planned)};
    planned += MIN(most, slices - planned);
  }
  return planned;
}
