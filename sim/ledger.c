/* ledger.c: the slice ledger's arithmetic and views (ledger.h), for the
 * simulator's pool and the real pool of `ema-validate pool`. */
#include "ema/ledger.h"

#include <math.h>
#include <string.h>

void ema_slice_ledger_init(EmaSliceLedger *l, guint n) {
  memset(l, 0, sizeof *l);
  l->n = n;
  l->gpus = g_new0(EmaSliceGpu *, n);
  l->lent = g_new0(guint64, (gsize) n * n);
  l->remote_view = g_new0(guint64, (gsize) n * n);
  l->views = g_new0(EmaGpuView, n);
}

void ema_slice_ledger_clear(EmaSliceLedger *l) {
  g_free(l->gpus);
  g_free(l->lent);
  g_free(l->remote_view);
  g_free(l->views);
  memset(l, 0, sizeof *l);
}

guint64 ema_slice_ledger_remote_capacity(const EmaSliceLedger *l, const EmaSliceGpu *g,
                                         guint lender) {
  return ema_blocks_in_slices(g, l->lent[lender * l->n + g->index]);
}

void ema_slice_ledger_change_lent(EmaSliceLedger *l, guint lender, guint borrower, gint64 delta) {
  guint64 *lent = &l->lent[lender * l->n + borrower];
  EmaSliceGpu *b = l->gpus[borrower];
  g_assert(delta >= 0 || (guint64) -delta <= *lent);
  b->remote_cap_total -= ema_slice_ledger_remote_capacity(l, b, lender);
  *lent = (guint64) ((gint64) *lent + delta);
  b->remote_cap_total += ema_slice_ledger_remote_capacity(l, b, lender);
  l->gpus[lender]->lent_total = (guint64) ((gint64) l->gpus[lender]->lent_total + delta);
  b->borrowed_total = (guint64) ((gint64) b->borrowed_total + delta);
}

guint64 ema_slice_gpu_own_slices(const EmaSliceGpu *g) {
  guint64 taken = g->lent_total + g->lending + g->returning + g->staging + g->parking;
  return g->slices > taken ? g->slices - taken : 0;
}

guint64 ema_slice_gpu_local_capacity(const EmaSliceGpu *g) {
  return ema_blocks_in_slices(g, ema_slice_gpu_own_slices(g));
}

guint64 ema_slice_gpu_remote_admitted(const EmaSliceGpu *g) {
  guint64 total = g->remote_cap_total;
  if (total > 0 && g->plan.remote_limit < 1) {
    double limit = g->plan.remote_limit / (1 - g->plan.remote_limit) *
                   (double) ema_slice_gpu_local_capacity(g);
    total = MIN(total, (guint64) floor(limit));
  }
  return total;
}

guint64 ema_slice_gpu_lendable(const EmaSliceGpu *g) {
  guint64 used = ema_slices_for_blocks(g, g->local_used);
  guint64 own = ema_slice_gpu_own_slices(g);
  return own > used ? own - used : 0;
}

guint64 ema_slice_gpu_free_blocks(const EmaSliceGpu *g) {
  guint64 local_cap = ema_slice_gpu_local_capacity(g);
  guint64 local_free = local_cap > g->local_used ? local_cap - g->local_used : 0;
  guint64 admitted = ema_slice_gpu_remote_admitted(g);
  return local_free + (admitted > g->remote_total ? admitted - g->remote_total : 0);
}

const EmaPoolView *ema_slice_ledger_view(EmaSliceLedger *l, EmaTime now,
                                         const EmaServerSpec *server) {
  for (guint i = 0; i < l->n; i++) {
    const EmaSliceGpu *g = l->gpus[i];
    EmaGpuView *v = &l->views[i];
    memset(v, 0, sizeof *v);
    v->index = i;
    v->shares = g->shares;
    v->has_tenant = g->has_tenant;
    v->slices = g->slices;
    v->slices_lent = g->lent_total + g->lending + g->returning + g->parking;
    v->slices_used = ema_slices_for_blocks(g, g->local_used);
    v->slices_staging = g->staging;
    v->slices_pending = g->borrowing;
    v->slices_borrowed = g->borrowed_total;
    for (guint j = 0; g->remote_total > 0 && j < l->n; j++)
      v->slices_borrowed_used += ema_slices_for_blocks(g, g->remote[j]);
    v->block_bytes = g->block_bytes;
    v->blocks_total =
        g->has_tenant ? ema_slice_gpu_local_capacity(g) + ema_slice_gpu_remote_admitted(g) : 0;
    v->blocks_used = g->local_used + g->remote_total;
    v->blocks_remote = g->remote_total;
    v->blocks_short = g->blocks_short;
    v->running = g->running;
    v->waiting = g->waiting;
    v->demand_blocks_per_s = g->demand;
    v->last_step = g->last_step;
  }
  l->view.now = now;
  l->view.n_gpus = l->n;
  l->view.gpus = l->views;
  l->view.lent = l->lent;
  for (guint b = 0; b < l->n; b++)
    if (l->gpus[b]->remote_total > 0 || l->gpus[b]->remote_viewed)
      memcpy(&l->remote_view[b * l->n], l->gpus[b]->remote, l->n * sizeof(guint64));
  for (guint b = 0; b < l->n; b++)
    l->gpus[b]->remote_viewed = l->gpus[b]->remote_total > 0;
  l->view.remote_blocks = l->remote_view;
  l->view.server = server;
  return &l->view;
}
