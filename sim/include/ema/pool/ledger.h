/* ledger.h: the slice ledger of an elastic memory pool, shared by the
 * simulator's pool (pool.c) and the real, CUDA-backed pool of
 * `ema-validate pool` (both through core.c): each GPU's counters, the
 * lent matrix, the arithmetic over them and the views the policies get.
 *
 * Per GPU g (slices unless said; S = EMA_SLICE_BYTES, B = g's block size):
 *   slices        its KV region
 *   lent[g][b]    lent to borrower b (mapped and usable by b)
 *   lending       reserved on g for borrows still being mapped
 *   returning     reclaimed from borrowers, usable again when the reclaim's
 *                 copies and unmaps are done
 *   staging       its tenant's prefetch staging buffer
 *   parking       holding other tenants' preempted KV (peer swap)
 *   borrowing     being mapped for g as a borrower (not yet in lent)
 *   local_used    its tenant's blocks in its own slices (blocks)
 *   remote[j]     its tenant's blocks in slices lent by j (blocks)
 * A tensor-parallel group of t GPUs is one record, at its first GPU (its
 * other ranks have none: they are not present): ranks = t, its region the
 * t ranks' regions together (slices = t x a rank's) and its block all t
 * shards of a block (B = t x a rank's shard; KV splits by heads). Its own
 * blocks stay sharded over its ranks, so its staging buffer is kept to a
 * multiple of t slices (a rank's share each) and its local capacity is
 * then exactly t ranks' worth; a block it borrows lies whole on the lender
 * (all t shards in the lender's slices). A group lends as one: its spare
 * region (each rank its share of the slices lent) is offered to peers and
 * holds their parked KV, and a reclaim takes its slices back as a group;
 * a tenant with sharing: {lend: false} lends nothing (ema_slice_gpu_lends,
 * lend_off).
 * lent_total, borrowed_total and remote_cap_total are kept equal to the
 * sums over the lent matrix by ema_slice_ledger_change_lent(); remote_total
 * is the sum of remote[] (kept by its owner). A pool whose actions complete
 * inside their call (validate) leaves lending, returning, borrowing and
 * parking at zero.
 *
 * Kept by the actions that change them (never rebuilt per view): local_cap,
 * the blocks its own slices hold, refreshed by ema_slice_gpu_refresh()
 * after any change of slices, block_bytes, lent_total, lending, returning,
 * staging or parking; and each GPU's entry of the policies' view, refilled
 * only when ema_slice_gpu_touch() (or a refresh) marked it stale since the
 * last view: every change of a field the view reads touches its GPU (which,
 * from the first view on, also sets its bit in the ledger's stale mask, so a
 * view refills the stale entries without looking at the others). Both
 * are checked against a fresh computation with the counters
 * (ema_slice_ledger_check_counters).
 *
 * The owner's per-GPU record starts with the counters through
 * EMA_SLICE_GPU_FIELDS in an anonymous union with an EmaSliceGpu (so it
 * reads g->local_used as before, and &g->counters is the EmaSliceGpu the
 * ledger sees):
 *   typedef struct {
 *     union { EmaSliceGpu counters; struct { EMA_SLICE_GPU_FIELDS }; };
 *     ...the owner's own fields...
 *   } Gpu;
 * and points the ledger's gpus[i] at each of them. */
#pragma once

#include <glib.h>
#include <math.h>

#include "ema/policy.h"
#include "ema/pool/registry.h"
#include "ema/hw/steptime.h"

G_BEGIN_DECLS

#define EMA_SLICE_GPU_FIELDS                                                                       \
  guint index;                                                                                     \
  gboolean present, shares, has_tenant;                                                            \
  gboolean lend_off, borrow_off; /* its tenant's own settings: never lends, never borrows */       \
  guint64 lend_keep; /* ...and slices of its region it never lends nor parks peers' KV in */       \
  guint ranks; /* GPUs its tenant spans: a TP group's tp (0 or 1: one GPU; ema_slice_gpu_ranks) */ \
  guint64 slices, block_bytes;                                                                     \
  guint64 local_used;                                                                              \
  guint64 *remote; /* [n] blocks on lender j */                                                    \
  guint64 remote_total;                                                                            \
  gboolean remote_viewed; /* the ledger's remote_view holds nonzero entries of this GPU */         \
  guint64 lending, returning, staging, borrowing, parking;                                         \
  guint64 lent_total;       /* sum_b lent[g][b] */                                                 \
  guint64 borrowed_total;   /* sum_j lent[j][g] */                                                 \
  guint64 remote_cap_total; /* sum_j floor(lent[j][g] x S / B): blocks its borrowed slices hold */ \
  EmaPrefetchPlan plan;     /* the last prefetch plan (remote_limit gates admission) */            \
  guint64 blocks_short;                                                                            \
  guint running, waiting;                                                                          \
  double demand;         /* blocks per second (ema_slice_gpu_update_demand()) */                   \
  guint64 demand_blocks; /* blocks used at the last trend sample */                                \
  EmaTime demand_at;     /* time of that sample */                                                 \
  EmaTime last_step;                                                                               \
  EmaTime decided_at; /* the last decision */                                                      \
  guint refused_by;   /* the lender of the last offload-refuse event (G_MAXUINT: none, or the */   \
  EmaTime refused_at; /* allowance stopped binding since) and when it was logged */                \
  gpointer states[3]; /* the borrow, prefetch and reclaim policies' state (EmaPolicyKind order) */ \
  guint64 local_cap;  /* blocks its own slices hold (ema_slice_gpu_refresh) */                     \
  gboolean view_stale;     /* its view entry is out of date (ema_slice_gpu_touch) */               \
  guint64 *stale_word;     /* its word of the ledger's stale mask (NULL until the first view) */   \
  guint64 stale_bit;       /* ...and its bit there */                                              \
  EmaGpuView *view_entry;  /* its entry of the ledger's views, and the ledger's view version */    \
  guint64 *view_version;   /* (both NULL until the first view) */                                  \
  guint64 decided_version; /* the ledger's view version at the end of its last decision */

typedef struct {
  EMA_SLICE_GPU_FIELDS
} EmaSliceGpu;

typedef struct {
  guint n;
  EmaSliceGpu **gpus;   /* [n], the owner's records */
  guint64 *lent;        /* [lender * n + borrower] */
  guint64 *remote_view; /* [borrower * n + lender], a copy of the gpus' remote[] for views */
  guint64 *blocks_room; /* [gpu], the views' blocks_room (view_fill()) */
  guint64 *lend_keep; /* [gpu], the views' lend_keep (each GPU's, copied as its entry is filled) */
  /* [borrower * n + lender]: the share of lender's HBM time the borrower's offloaded attention
   * takes in its current step (kept by the owner; all 0 where nothing is offloaded) */
  double *offload_share;
  EmaGpuView *views; /* [n] */
  EmaPoolView view;
  guint64 version; /* views built with an entry refilled, and entries written through */
  /* [(n + 63) / 64]: bit i set while gpus[i]->view_stale, from the first view on (which points
   * each GPU's stale_word here): a view refills the stale entries without looking at the rest */
  guint64 *stale;
  /* [lender]: the present GPUs holding blocks on it (ema_slice_ledger_change_remote) */
  guint *sharers;
  /* [lender * ((n + 63) / 64)]: bit b set while offload_share[b * n + lender] is above 0 (kept
   * by the owner with offload_share) */
  guint64 *offload_to;
  /* [borrower * ((n + 63) / 64)]: bit j set while lent[j * n + borrower] is above 0 */
  guint64 *lenders;
  gboolean tracked;
  /* the view as the policy called now received it (ema_slice_ledger_seal) */
  guint8 *seal;
  gsize seal_size;
} EmaSliceLedger;

/* Policies get read-only views: seal copies the view (the struct and every
 * array it points to) before a policy's call, check_seal compares after
 * it; FALSE, with ERROR naming the policy (and its module), its HOOK and
 * what it wrote, when they differ, before the pool acts on its plan. */
void ema_slice_ledger_seal(EmaSliceLedger *l);
gboolean ema_slice_ledger_check_seal(const EmaSliceLedger *l, const EmaPolicyInfo *policy,
                                     const char *hook, GError **error);
/* Put L's view back as the last seal copied it (after a check that failed). */
void ema_slice_ledger_restore_seal(EmaSliceLedger *l);

/* LEDGER over N GPUs, its matrices zero; the caller sets gpus[i]. */
void ema_slice_ledger_init(EmaSliceLedger *ledger, guint n);
void ema_slice_ledger_clear(EmaSliceLedger *ledger);

/* BORROWER's lenders (the GPUs lending it slices) as bits, (n + 63) / 64 words. */
static inline const guint64 *ema_slice_ledger_lenders(const EmaSliceLedger *l, guint borrower) {
  return &l->lenders[borrower * EMA_BITS_WORDS(l->n)];
}

/* Each lender J of BORROWER (a GPU lending it slices), in index order
 * (EMA_BITS_FOR_EACH: the body must not change its lenders). */
#define EMA_SLICE_LEDGER_FOR_EACH_LENDER(l, borrower, j)                                           \
  EMA_BITS_FOR_EACH (ema_slice_ledger_lenders((l), (borrower)), (l)->n, j)

/* The first lender of BORROWER from J on (a GPU lending it slices), or n. */
static inline guint ema_slice_ledger_next_lender(const EmaSliceLedger *l, guint borrower, guint j) {
  return ema_bits_next(ema_slice_ledger_lenders(l, borrower), j, l->n);
}

/* The GPUs G's tenant spans (a TP group's tp; 1 otherwise). */
static inline guint ema_slice_gpu_ranks(const EmaSliceGpu *g) {
  return MAX(g->ranks, 1);
}

/* G lends its free slices (and holds peers' parked KV): a sharing GPU
 * that is not a tensor-parallel group. */
static inline gboolean ema_slice_gpu_lends(const EmaSliceGpu *g) {
  return g->shares && !g->lend_off;
}

/* Slices that BLOCKS of G's blocks fill, rounded up (0 without a block
 * size). Inline: the tenants' memory calls it on every take and free. */
static inline guint64 ema_slices_for_blocks(const EmaSliceGpu *g, guint64 blocks) {
  if (g->block_bytes == 0)
    return 0;
  return (blocks * g->block_bytes + EMA_SLICE_BYTES - 1) / EMA_SLICE_BYTES;
}

/* Whole blocks of G that SLICES hold (0 without a block size). */
static inline guint64 ema_blocks_in_slices(const EmaSliceGpu *g, guint64 slices) {
  return g->block_bytes ? slices * EMA_SLICE_BYTES / g->block_bytes : 0;
}

/* Add DELTA slices to lent[LENDER][BORROWER], keeping the counters. */
/* G's blocks on LENDER change by DELTA (remote[lender] only: its owner
 * keeps remote_total), the lender's count of sharers with them. */
void ema_slice_ledger_change_remote(EmaSliceLedger *ledger, EmaSliceGpu *g, guint lender,
                                    gint64 delta);
void ema_slice_ledger_change_lent(EmaSliceLedger *ledger, guint lender, guint borrower,
                                  gint64 delta);
/* Blocks of G that the slices LENDER lends it hold. */
guint64 ema_slice_ledger_remote_capacity(const EmaSliceLedger *ledger, const EmaSliceGpu *g,
                                         guint lender);
/* Inline, as the slice counts above: the views and the tenants' memory
 * call them on every view, take and free. */
/* Slices of G not lent, lending, returning, staging or parking: where its
 * own blocks live. */
static inline guint64 ema_slice_gpu_own_slices(const EmaSliceGpu *g) {
  guint64 taken = g->lent_total + g->lending + g->returning + g->staging + g->parking;
  return g->slices > taken ? g->slices - taken : 0;
}

/* G's view entry must be refilled: a field the view reads changed (its
 * blocks, remote[], running, waiting, blocks_short, demand, last_step...). */
static inline void ema_slice_gpu_touch(EmaSliceGpu *g) {
  g->view_stale = TRUE;
  if (g->stale_word)
    *g->stale_word |= g->stale_bit;
}

/* G's view entry, for the caller to write the fields that just changed
 * into, where the entry is up to date (the ledger's version moves, as the
 * refill it saves would have moved it); else NULL, and G is touched. A
 * change that steps, takes and gives make every few milliseconds is
 * written through so, and a view then refills no entry for it. */
static inline EmaGpuView *ema_slice_gpu_entry_to_write(EmaSliceGpu *g) {
  if (g->view_entry == NULL || g->view_stale) {
    ema_slice_gpu_touch(g);
    return NULL;
  }
  (*g->view_version)++;
  return g->view_entry;
}

/* G's step figures (running, waiting, last_step, blocks_short) changed
 * (written through, or G touched). */
void ema_slice_ledger_note_step(EmaSliceLedger *l, EmaSliceGpu *g);

/* G's own blocks (local_used) changed, and nothing else (likewise). */
static inline void ema_slice_gpu_note_local_use(EmaSliceGpu *g) {
  EmaGpuView *v = ema_slice_gpu_entry_to_write(g);
  if (v == NULL)
    return;
  v->slices_used = ema_slices_for_blocks(g, g->local_used);
  v->blocks_used = g->local_used + g->remote_total;
}

/* G's slices, block size, lent, lending, returning, staging or parking
 * changed: its local capacity follows (and its view entry is stale). */
static inline void ema_slice_gpu_refresh(EmaSliceGpu *g) {
  g->local_cap = ema_blocks_in_slices(g, ema_slice_gpu_own_slices(g));
  ema_slice_gpu_touch(g);
}

/* Blocks of G its own slices hold (kept by ema_slice_gpu_refresh()). */
static inline guint64 ema_slice_gpu_local_capacity(const EmaSliceGpu *g) {
  return g->local_cap;
}

/* Remote blocks of G's borrowed room that a remote share of LIMIT (0..1)
 * of its tenant's blocks admits. */
static inline guint64 ema_slice_gpu_remote_at(const EmaSliceGpu *g, double limit) {
  guint64 total = g->remote_cap_total;
  if (total > 0 && limit < 1) {
    double blocks = limit / (1 - limit) * (double) ema_slice_gpu_local_capacity(g);
    total = MIN(total, (guint64) floor(blocks));
  }
  return total;
}

/* Remote blocks the prefetch plan admits in all: what admission of new
 * requests may fill; running requests may grow beyond it into any borrowed
 * room. */
static inline guint64 ema_slice_gpu_remote_admitted(const EmaSliceGpu *g) {
  return ema_slice_gpu_remote_at(g, g->plan.remote_limit);
}

/* Whether G's plan holds its remote limit below its step's own for
 * admission (room_limit above remote_limit): then the room differs. */
static inline gboolean ema_slice_gpu_room_held(const EmaSliceGpu *g) {
  return g->plan.room_limit > g->plan.remote_limit;
}

/* Remote blocks the plan's room_limit admits: the room its borrow policy
 * may hold (EmaPoolView.blocks_room). */
static inline guint64 ema_slice_gpu_remote_room(const EmaSliceGpu *g) {
  return ema_slice_gpu_remote_at(g, g->plan.room_limit);
}

/* Own slices of G not used by its blocks: what it can lend (beyond what
 * it keeps, lend_keep). */
static inline guint64 ema_slice_gpu_lendable(const EmaSliceGpu *g) {
  guint64 used = ema_slices_for_blocks(g, g->local_used);
  guint64 own = ema_slice_gpu_own_slices(g);
  guint64 out = g->lent_total + g->lending + g->parking + g->lend_keep;
  guint64 free_slices = own > used ? own - used : 0;
  return MIN(free_slices, g->slices > out ? g->slices - out : 0);
}

/* Blocks G's tenant may still take: free local ones plus admitted remote room. */
static inline guint64 ema_slice_gpu_free_blocks(const EmaSliceGpu *g) {
  guint64 local_cap = ema_slice_gpu_local_capacity(g);
  guint64 local_free = local_cap > g->local_used ? local_cap - g->local_used : 0;
  guint64 admitted = ema_slice_gpu_remote_admitted(g);
  return local_free + (admitted > g->remote_total ? admitted - g->remote_total : 0);
}

/* The time one layer's remote KV of reader G takes at BANDWIDTH, BYTES[j]
 * from lender j per rank of RANKS reading side by side: each lender's port
 * (its link to each rank on a mesh, its one port otherwise, which then
 * carries all RANKS shards) shared by the tenants holding data on it; on a
 * switch or PCIe, each rank's ingress carries its sum too. Only G's lenders
 * are read (BYTES[j] of another GPU j is taken as 0, whatever it holds). */
double ema_slice_ledger_remote_time(const EmaSliceLedger *l, const EmaSliceGpu *g,
                                    const EmaServerSpec *server, const double *bytes,
                                    double bandwidth, guint ranks);

/* What the prefetch policy sees of a step of G's tenant (G holds remote
 * blocks; the view means nothing when the step reads no KV, remote_bytes
 * 0) whose all-local breakdown is BD, on LAYERS layers, its local HBM
 * slowed by SLOW (>= 1): each layer's remote KV is the tenant's remote
 * share of its KV reads, split over the lenders as its blocks are
 * (BYTES[j] of each lender j of G filled; the others' left as they are); *T_COPY and *T_DIRECT are
 * the times copy engines and direct loads take to bring one layer's of it, each lender's port
 * shared by the tenants holding data on it and, on a switch (and PCIe), the reader's ingress
 * carrying the sum. A TP group's step model, BD, BYTES and the view are one rank's (kv_read_bytes
 * is a rank's shard of the KV): every rank reads its shard of each remote block at once, over its
 * own path. On a link per GPU pair (DIRECT) each rank has its own link to
 * the lender, carrying BYTES[j]; on a switch (and PCIe) the lender's one
 * port carries all t ranks' shards (t x BYTES[j]) while each rank's
 * ingress carries its own sum. (Simplification: the group counts as one
 * tenant among a lender's sharers; the lender's HBM, serving all t
 * shards, is the owner's interference to charge.) */
void ema_slice_ledger_step_cost(const EmaSliceLedger *ledger, const EmaSliceGpu *g,
                                const EmaServerSpec *server, const EmaStepBreakdown *bd,
                                double layers, double slow, double *bytes, EmaStepCostView *view,
                                double *t_copy, double *t_direct);

/* Sets *ERROR (EMA_POLICY_ERROR_INVALID, FORMAT) unless it is NULL or
 * already set; returns FALSE. The ledger checks of both pools use it. */
gboolean ema_slice_ledger_invalid(GError **error, const char *format, ...) G_GNUC_PRINTF(2, 3);

/* Slices BORROWER may borrow from LENDER: what LENDER can lend (0 when it
 * is BORROWER itself or does not share). A borrow plan's action is cut to it. */
guint64 ema_slice_ledger_borrow_limit(const EmaSliceLedger *ledger, guint borrower, guint lender);
/* Slices of LENDER that BORROWER may give back: those it lends BORROWER
 * that BORROWER's blocks there do not fill. A return is cut to it. */
guint64 ema_slice_ledger_return_limit(const EmaSliceLedger *ledger, guint borrower, guint lender);
/* Slices LENDER may reclaim from BORROWER: all it lends it. */
guint64 ema_slice_ledger_reclaim_limit(const EmaSliceLedger *ledger, guint lender, guint borrower);
/* Blocks of BORROWER on LENDER that must leave when LENDER takes back
 * SLICES of the slices it lends it; *KEEP is what may stay. */
guint64 ema_slice_ledger_reclaim_excess(const EmaSliceLedger *ledger, guint lender, guint borrower,
                                        guint64 slices, guint64 *keep);
/* SLICES cut to LIMIT, counting a cut in *ADJUSTED (plans_adjusted). */
static inline guint64 ema_slice_cut(guint64 slices, guint64 limit, guint64 *adjusted) {
  if (slices > limit) {
    (*adjusted)++;
    return limit;
  }
  return slices;
}

/* The plan a prefetch policy starts from: direct loads, depth 1, one layer
 * per copy, no limit, no lender's allowance binding, no offload cap, room
 * as the limit. */
static inline EmaPrefetchPlan ema_prefetch_plan_start(void) {
  return (EmaPrefetchPlan){EMA_REMOTE_DIRECT, 1, 1, 1, G_MAXUINT, 0, 1, FALSE, -1};
}

/* Sets G's staging to what its prefetch plan wants (the layers fetched
 * ahead, of its LAYERS, times its remote slices; 0 without prefetch), cut
 * to what its slices not lent, returning, parking or used leave. */
void ema_slice_gpu_update_staging(EmaSliceGpu *g, guint layers);

/* Before a step of G's tenant (LAYERS layers) whose cost is COST: asks
 * the prefetch POLICY (PARAMS, G's state) for G's plan, starting from
 * direct loads, depth 1, one layer per copy, no limit; clamps what it
 * returns and sizes G's staging buffer for it. With SEAL (the ledger VIEW
 * is of; NULL: unchecked) the view is sealed for the call: a policy that
 * wrote into it is named in ERROR (FALSE), the view is put back as it was
 * and G's plan is the start plan. */
gboolean ema_slice_gpu_plan_prefetch(EmaSliceGpu *g, EmaSliceLedger *seal,
                                     const EmaPolicyInfo *policy, gconstpointer params,
                                     const EmaPoolView *view, const EmaStepCostView *cost,
                                     guint layers, GError **error);

/* The demand trend of G, whose tenant uses USED blocks at NOW: an
 * exponential average of the rate of change of its blocks, sampled at most
 * every 100 ms (nothing happens before), with a time constant of 2 s (so one
 * request's prefill moves it little, a sustained climb moves it fully
 * within a few seconds). */
void ema_slice_gpu_update_demand(EmaSliceGpu *g, EmaTime now, guint64 used);

/* Invariants of the counters, for every GPU g: its slices in use, lent,
 * reserved, staging or parking fit in its region; only a sharing GPU lends
 * or borrows; remote[j] fits in what j lends it; lent_total, borrowed_total
 * and remote_cap_total equal the sums over the lent matrix; remote_total is
 * the sum of remote[]. FALSE with ERROR (EMA_POLICY_ERROR_INVALID) at the
 * first that fails. The owner checks its own records after. */
gboolean ema_slice_ledger_check_counters(const EmaSliceLedger *ledger, GError **error);

/* Gives each present GPU's states[k] (allocated zeroed when NULL) to the
 * init function of POLICIES[k] with PARAMS[k] and the view at NOW over
 * SERVER, in GPU order then kind order; FALSE with ERROR (prefixed with the
 * policy's kind and name) at the first that fails. */
gboolean ema_slice_ledger_init_policies(EmaSliceLedger *ledger,
                                        const EmaPolicyInfo *const *policies,
                                        const gconstpointer *params, EmaTime now,
                                        const EmaServerSpec *server, GError **error);

/* Something in the view has changed since it was at VERSION (a
 * ledger's version): an entry refilled since, or one touched. */
gboolean ema_slice_ledger_changed_since(const EmaSliceLedger *ledger, guint64 version);

/* The view the policies get (valid until the next call), at NOW over SERVER:
 * the entries of GPUs touched since the last view refilled, the others as
 * they were. */
const EmaPoolView *ema_slice_ledger_view(EmaSliceLedger *ledger, EmaTime now,
                                         const EmaServerSpec *server);

G_END_DECLS
