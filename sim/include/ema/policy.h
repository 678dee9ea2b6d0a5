/* policy.h: the policy API of the elastic memory pool. Policies decide,
 * the backend acts: a policy gets a read-only view of the pool and returns
 * a plan; the backend (the simulator's pool, or ema-validate on real GPUs)
 * checks the plan against the ledger, charges its costs and applies it. A
 * policy never changes state outside its own private state, never opens
 * files and keeps no globals, so the same code runs in both backends.
 *
 * Three kinds of policy, each with its own ops struct, composed per
 * experiment (`policy: {borrow: ..., prefetch: ..., reclaim: ...}`):
 *   borrow   - after each step of a tenant: borrow slices from peers, or
 *              return borrowed slices that are empty;
 *   prefetch - before each step of a tenant that holds remote KV: read it
 *              directly over the link, or prefetch it layer groups ahead
 *              into a local staging buffer; and how much of the tenant's KV
 *              may be remote at all;
 *   reclaim  - when a lender's own tenant needs memory it has lent (and,
 *              proactively, after each of its steps): which slices to take
 *              back from which borrower, and where their data goes.
 *
 * When the calls come (what a policy may rely on): the borrow policy, and
 * the reclaim policy of a GPU that lends, are called together in one
 * decision of a GPU (reclaim first), which comes
 *   - after a step (or, in ema-validate, a round) in which its tenant lacked
 *     blocks, and when its engine reports blocks it lacks while scheduling;
 *   - otherwise periodically: after a step, once policy.decision_period has
 *     passed since its last decision, and only if something in the view
 *     (any GPU's entry, the lent matrix, remote_blocks, offload_share) has
 *     changed since that decision; a view equal to the one of its last call
 *     but for `now` brings no call. (The simulator's pool also makes no
 *     periodic call under a borrow policy that never acts while the GPU
 *     lends nothing.)
 * A policy is therefore a function of the view (and its own state, changed
 * only by its calls): one that would act on the passing of time alone,
 * with nothing else changing, is not called for it. The prefetch policy is
 * called before every step of a tenant that holds remote KV.
 *
 * Memory is counted in slices of EMA_SLICE_BYTES (2 MiB, the CUDA VMM
 * granularity). A GPU's slices are its KV region (HBM x
 * gpu_memory_utilization - weights - activation reserve; all of it on a GPU
 * without a tenant). Each slice is the owner's, or lent to one borrower.
 *
 * State: the backend keeps one private state (state_size bytes, zeroed)
 * per GPU and policy kind, passed to that GPU's calls; init runs once per
 * state, at the start of a run.
 *
 * ABI: an ops struct starts with abi_version == EMA_POLICY_ABI_VERSION and
 * ends with reserved pointers that must be NULL; new optional hooks take
 * reserved slots, so a module built against an older minor layout keeps
 * loading. Structs passed by pointer (EmaPoolView, EmaStepCostView,
 * EmaPrefetchPlan) grow only at their end, and a new field's zero (or the
 * pool's start value) means what the older layout meant; EmaGpuView, read
 * as an array, never changes size within a version. Attention offload
 * (EMA_REMOTE_OFFLOAD and the fields marked so) was added that way, within
 * version 1, and so were the lenders' offload cap (EmaPrefetchPlan.offload_cap) and
 * the per-lender modes (EmaStepCostView.step_offload_read_s, EmaPrefetchPlan.offload_read),
 * and a limit held for admission (EmaPrefetchPlan.room_limit, EmaPoolView.blocks_room),
 * and the debug channel (EmaPoolView.debug, ema_policy_debug()),
 * and the slices a lender keeps under its lend limit (EmaPoolView.lend_keep).
 * A module that exports `ema_policy_module` (EmaPolicyModule) is a
 * plugin (see policies/README.md). */
#pragma once

#include <stdarg.h>

#include <glib.h>

#include "ema/core/bits.h"
#include "ema/core/event.h"
#include "ema/hw/hwmodel.h"
#include "ema/core/params.h"

G_BEGIN_DECLS

#define EMA_POLICY_ABI_VERSION 1
#define EMA_POLICY_RESERVED 6

/* ---- views (read only) ------------------------------------------------------ */

/* One GPU as the policies see it. Block counts are the tenant's KV blocks
 * (0 on a GPU without a tenant). A tensor-parallel group (tp = t > 1) is
 * one entry at its first GPU: its slices are its t ranks' together, its
 * block all t shards of a block; it borrows and lends like any tenant (as a
 * group: each rank its share of a loan), and its other GPUs are entries
 * with no slices. */
typedef struct {
  guint index;
  gboolean shares; /* lends its free slices (any GPU but a tenant's with sharing.lend: false) */
  gboolean has_tenant;
  guint64 slices;               /* the GPU's KV region */
  guint64 slices_lent;          /* of which lent to peers, being mapped for them, or coming back */
  guint64 slices_used;          /* of which holding the tenant's own blocks (local use) */
  guint64 slices_staging;       /* of which the tenant's prefetch staging buffer */
  guint64 slices_borrowed;      /* peers' slices mapped for this GPU's tenant */
  guint64 slices_borrowed_used; /* of which holding its blocks */
  guint64 slices_pending;       /* borrows for this GPU being mapped, not usable yet */
  guint64 block_bytes;          /* one KV block of the tenant */
  guint64 blocks_total, blocks_used; /* the tenant's KV blocks, local and remote */
  guint64 blocks_remote;             /* of blocks_used, on peers */
  guint64 blocks_short;              /* free blocks the last step lacked (engine.h) */
  guint running, waiting;
  double demand_blocks_per_s; /* trend of blocks_used (exponential average of its rate) */
  EmaTime last_step;          /* duration of the tenant's last step */
} EmaGpuView;

/* One request of a tenant as the policies see it (EmaPoolView.requests). */
typedef enum {
  EMA_REQUEST_WAITING,   /* queued, not admitted yet: no KV */
  EMA_REQUEST_RUNNING,   /* admitted: its KV is read by each step it is in (hot) */
  EMA_REQUEST_PREEMPTED, /* preempted, queued again: its KV dropped or swapped out (cold) */
  EMA_REQUEST_CACHED,    /* the tenant's prefix cache: cached blocks requests share */
} EmaRequestState;

typedef struct {
  guint64 request; /* the tenant's name for it (its engine's serial; the prefix cache's own) */
  EmaRequestState state;
  guint64 context_tokens;   /* tokens in its KV (0 where the pool does not know) */
  guint64 blocks;           /* its KV blocks in all */
  const guint64 *blocks_at; /* [n_gpus]: [gpu] in the tenant's own slices, [j] on lender j */
  EmaTime last_scheduled;   /* start of the last step it was in; -1: none, or not known */
  gint64 remaining_tokens;  /* output tokens still to come; -1: not known */
} EmaRequestView;

typedef struct _EmaPoolView EmaPoolView;

struct _EmaPoolView {
  EmaTime now;
  guint n_gpus;
  const EmaGpuView *gpus;
  /* lent[lender * n_gpus + borrower]: slices LENDER lends to BORROWER */
  const guint64 *lent;
  /* remote_blocks[borrower * n_gpus + lender]: BORROWER's blocks in them */
  const guint64 *remote_blocks;
  const EmaServerSpec *server;
  /* appended for attention offload: offload_share[borrower * n_gpus + lender], the share of
   * LENDER's HBM time that reading BORROWER's offloaded KV takes during BORROWER's current step
   * (hw/offload.h r_j; 0 once that step is over or when it does not offload) */
  const double *offload_share;
  /* GPU's tenant's requests (*N of them; NULL and 0 without a tenant or
   * where the pool does not know them), built when asked (O(requests)),
   * valid until the next view: in the order the pool first saw them, the
   * prefix cache (state CACHED) among them where it holds blocks. */
  const EmaRequestView *(*requests)(const EmaPoolView *view, guint gpu, guint *n);
  gpointer requests_data; /* the pool's, for requests() */
  /* appended for a held limit: blocks_room[gpu], the tenant's KV blocks, local and remote,
   * that its plan's room_limit admits (EmaGpuView.blocks_total, which its remote_limit sets,
   * where the plan holds no other; NULL: blocks_total) */
  const guint64 *blocks_room;
  /* appended so that a decision costs the lenders it looks at, not the server's GPUs: readers[j],
   * the GPUs with blocks on lender J (remote_blocks' column j above 0; NULL: count them,
   * ema_pool_view_readers()); offload_to[j * ((n_gpus + 63) / 64)], a set of bits: b's bit is set
   * where offload_share[b * n_gpus + j] is above 0 (NULL: look at every b,
   * ema_pool_view_next_offloader()) */
  const guint *readers;
  const guint64 *offload_to;
  /* appended for policy authors: a line for the pool's event log (events.csv, kind "debug",
   * GPU's row, MESSAGE as its reason, cut to 159 bytes); NULL where the backend keeps no log.
   * Call it through ema_policy_debug(), which checks. */
  void (*debug)(const EmaPoolView *view, guint gpu, const char *message);
  gpointer debug_data; /* the backend's, for debug() */
  /* appended so that a decision costs a borrower's lenders, not the server's GPUs:
   * lenders[b * ((n_gpus + 63) / 64)], a set of bits: j's bit is set where lent[j * n_gpus + b]
   * is above 0, so every block of b's remote_blocks row is on one of them (NULL: look at every
   * j, ema_pool_view_next_lender()) */
  const guint64 *lenders;
  /* appended so that a lend limit shows before a borrow asks past it: lend_keep[gpu], the slices
   * of GPU's region it never lends nor parks peers' KV in (its tenant's sharing.lend_limit), so
   * that it lends at most slices - lend_keep at once, lent slices included (NULL: none kept) */
  const guint64 *lend_keep;
};

/* The GPUs holding blocks on lender J. */
static inline guint ema_pool_view_readers(const EmaPoolView *view, guint j) {
  guint readers = 0;
  if (view->readers)
    return view->readers[j];
  for (guint b = 0; b < view->n_gpus; b++)
    readers += view->remote_blocks[b * view->n_gpus + j] > 0;
  return readers;
}

/* The first borrower from B on whose offloaded attention may take some of
 * lender J's HBM time (view->offload_share above 0 there), or n_gpus: the
 * others' shares are 0. */
static inline guint ema_pool_view_next_offloader(const EmaPoolView *view, guint j, guint b) {
  if (view->offload_to == NULL)
    return MIN(b, view->n_gpus);
  return ema_bits_next(&view->offload_to[j * EMA_BITS_WORDS(view->n_gpus)], b, view->n_gpus);
}

/* The first lender of BORROWER from J on (lent[j * n_gpus + BORROWER] above 0), or n_gpus:
 * the others hold none of its remote blocks. */
static inline guint ema_pool_view_next_lender(const EmaPoolView *view, guint borrower, guint j) {
  if (view->lenders == NULL)
    return MIN(j, view->n_gpus);
  return ema_bits_next(&view->lenders[borrower * EMA_BITS_WORDS(view->n_gpus)], j, view->n_gpus);
}

/* Each lender J of BORROWER in VIEW, in index order (every GPU where the
 * view keeps no lender sets), as ema_pool_view_next_lender() walks them, a
 * word of the set at a time (EMA_BITS_FOR_EACH; a break ends the walk). */
#define EMA_POOL_VIEW_FOR_EACH_LENDER(view, borrower, j)                                           \
  EMA_BITS_FOR_EACH (                                                                              \
      (view)->lenders ? &(view)->lenders[EMA_BITS_WORDS((view)->n_gpus) * (borrower)] : NULL,      \
      (view)->n_gpus, j)

/* Each borrower B whose offloaded attention may take some of lender J's
 * HBM time, in index order, as ema_pool_view_next_offloader() walks them. */
#define EMA_POOL_VIEW_FOR_EACH_OFFLOADER(view, lender, b)                                          \
  EMA_BITS_FOR_EACH (                                                                              \
      (view)->offload_to ? &(view)->offload_to[EMA_BITS_WORDS((view)->n_gpus) * (lender)] : NULL,  \
      (view)->n_gpus, b)

/* Write a line (printf FORMAT) to the pool's event log as a "debug" event of GPU: what a policy
 * saw and why it decided, beside the actions the pool took. A no-op where the backend keeps no
 * log (view->debug NULL). Costs nothing in the simulation's time and changes no result. */
G_GNUC_PRINTF(3, 4)
static inline void ema_policy_debug(const EmaPoolView *view, guint gpu, const char *format, ...) {
  char message[160];
  va_list args;
  if (view == NULL || view->debug == NULL)
    return;
  va_start(args, format);
  g_vsnprintf(message, sizeof message, format, args);
  va_end(args);
  view->debug(view, gpu, message);
}

/* Slices a GPU can lend right now: its KV region minus what it lends, what
 * its own blocks and staging occupy, and RESERVE slices it keeps; at most
 * what its lend limit leaves beside what it lends already (lend_keep).
 * (Inline, so that plugins need no symbol from the program that loads them.) */
static inline guint64 ema_pool_view_lendable(const EmaPoolView *view, guint gpu, guint64 reserve) {
  const EmaGpuView *g = &view->gpus[gpu];
  guint64 taken = g->slices_lent + g->slices_used + g->slices_staging + reserve;
  guint64 can = g->slices > taken ? g->slices - taken : 0;
  if (!g->shares)
    return 0;
  if (view->lend_keep) {
    guint64 out = g->slices_lent + view->lend_keep[gpu];
    can = MIN(can, g->slices > out ? g->slices - out : 0);
  }
  return can;
}

/* ---- borrow ------------------------------------------------------------------ */

typedef struct {
  guint lender;
  gint64 slices; /* > 0 borrow this many; < 0 return this many empty slices */
} EmaBorrowAction;

/* A plan is its first n actions (a policy appends: actions[plan->n++]);
 * it starts empty, n = 0, and the actions beyond n are not read. */
typedef struct {
  guint n;
  EmaBorrowAction actions[16];
} EmaBorrowPlan;

/* Placement: which requests' blocks go where. An action moves BLOCKS of
 * REQUEST's blocks from FROM to TO (places: the tenant's GPU for its own
 * slices, a lender j for the slices j lends it); the pool copies them over
 * the link (charged as migrations are) and cuts an action to the blocks
 * the request has there and the room there is. */
typedef struct {
  guint64 request; /* EmaRequestView.request */
  guint from, to;
  guint64 blocks;
} EmaPlacementAction;

typedef struct { /* as EmaBorrowPlan: its first n actions */
  guint n;
  EmaPlacementAction actions[32];
} EmaPlacementPlan;

typedef struct {
  guint abi_version;
  const char *name;
  const char *summary;
  const EmaParamTable *params; /* may be NULL: no parameters */
  gsize state_size;            /* private state the backend allocates, zeroed; may be 0 */
  /* optional: set up STATE; FALSE with an error stops the run */
  gboolean (*init)(gpointer state, gconstpointer params, const EmaPoolView *view, GError **error);
  /* required: after a step of BORROWER's tenant, fill PLAN (starts empty) */
  void (*decide)(gpointer state, gconstpointer params, const EmaPoolView *view, guint borrower,
                 EmaBorrowPlan *plan);
  /* optional (NULL: blocks stay where they were taken): after decide's
   * plan was applied, while BORROWER borrows slices (with none there is no
   * place to move a block to), fill PLAN (starts empty) to move BORROWER's
   * requests' blocks (view->requests) */
  void (*place)(gpointer state, gconstpointer params, const EmaPoolView *view, guint borrower,
                EmaPlacementPlan *plan);
  gpointer reserved[EMA_POLICY_RESERVED - 1];
} EmaBorrowPolicyOps;

/* ---- prefetch ------------------------------------------------------------------ */

typedef enum {
  EMA_REMOTE_DIRECT,   /* kernels load remote KV over the link as they need it */
  EMA_REMOTE_PREFETCH, /* copy engines bring it into a staging buffer layers ahead */
  EMA_REMOTE_OFFLOAD,  /* the lenders compute the decode attention over the KV they hold; only
                          queries, new K/V and partial outputs cross the link (hw/offload.h) */
} EmaRemoteMode;

/* What the coming step looks like, per layer, on the tenant's GPU. */
typedef struct {
  guint layers;
  double layer_compute_s;  /* one layer with every byte local: max(compute, memory) */
  double layer_memory_s;   /* of which the memory side alone (what a decode step of the same
                              KV takes: prefill chunks lengthen only the compute side) */
  double kv_bytes;         /* KV bytes one layer reads, local and remote */
  double remote_bytes;     /* of which remote */
  double link_bandwidth;   /* B/s the copy engines get from the lenders now */
  double direct_bandwidth; /* B/s direct loads get from the lenders now */
  EmaTime copy_fixed_cost; /* per prefetch copy */
  double layer_kv_s;       /* of layer_memory_s, reading the layer's KV (all of it local) */
  /* appended for attention offload (a module built before them never reads them): the coming
   * step's modelled time, seconds, with every byte local, with its remote KV read by direct
   * loads, and with the attention over its remote KV offloaded to the lenders (0: offload is
   * not possible for this tenant) */
  double step_local_s;
  double step_direct_s;
  /* (with offload: at the offload_cap of this GPU's last plan, the lenders serving the partials
   * at their cap where they would take more: a policy whose plan sets another cap is asked
   * once more, with the step timed at that one; 0 too where a capped lender has none of the
   * cap left) */
  double step_offload_s;
  double context_tokens; /* the step's decode context (tokens attended to), local and remote */
  /* KV tokens of this tenant one lender could hold for offloaded attention while their reads
   * take all of its HBM time, at this step's length (hw/offload.h c_max at an allowance of 1;
   * c_max is linear in the allowance) */
  double offload_full_context;
  /* appended for per-lender modes (a module built before it never reads it): the offloading
   * step with the KV on each lender whose cap would hold the whole offload (step_offload_s
   * lengthened by that lender, or none of its cap left) read by direct loads instead, and the
   * attention over the rest offloaded (seconds; 0: no lender would hold it, or every lender of
   * the step would, which leaves the direct step) */
  double step_offload_read_s;
} EmaStepCostView;

typedef struct {
  EmaRemoteMode mode;
  guint depth;           /* prefetch: layers fetched ahead (>= 1); sizes the staging buffer */
  guint layers_per_copy; /* prefetch: layers per copy (a layer group, >= 1) */
  double remote_limit;   /* largest share of the tenant's KV blocks that may be remote, 0..1 */
  /* appended for attention offload (the pool starts them as below; a module that does not know
   * them leaves them so): the lender whose allowance sets remote_limit (G_MAXUINT: none), and
   * that allowance (a share of its HBM time), for the pool's event log */
  guint limit_lender;
  double limit_allowance;
  /* appended for the lenders' bound (the pool starts it at 1, a module that does not know it
   * leaves it so): the largest share of a lender's HBM time that offloaded attention may take,
   * every borrower's together, on a lender with a tenant (a GPU without one gives all of its
   * time). The pool holds it: where this step's partials would take more of a lender's time
   * than the cap less the other borrowers' current shares leaves, the lender serves them at
   * that rate and the step lengthens until its share is at it (step_offload_s says how long);
   * a lender with none of it left takes no offload (the step reads its remote KV directly).
   * 1 (or more): no cap */
  double offload_cap;
  /* appended for per-lender modes (the pool starts it at FALSE, a module that does not know it
   * leaves it so): with mode EMA_REMOTE_OFFLOAD, the step reads the KV on the lenders at their
   * cap by direct loads and offloads the attention over the rest (step_offload_read_s says how
   * long; where that is 0 the whole offload stands) */
  gboolean offload_read;
  /* appended for a held limit (the pool starts it at -1, a module that does not know it leaves
   * it so): the largest share of the tenant's KV blocks that may be remote in the room its
   * borrow policy holds (EmaPoolView.blocks_room), where the plan holds remote_limit, which
   * gates admission, below its step's own limit; below remote_limit (-1): remote_limit */
  double room_limit;
} EmaPrefetchPlan;

typedef struct {
  guint abi_version;
  const char *name;
  const char *summary;
  const EmaParamTable *params;
  gsize state_size;
  gboolean (*init)(gpointer state, gconstpointer params, const EmaPoolView *view, GError **error);
  /* required: before a step of GPU's tenant (or when its remote share is
   * planned), fill PLAN (starts as direct, depth 1, group 1, limit 1, no
   * offload cap); called a second time for the same step, with STEP's
   * step_offload_s timed at the new cap, when the plan sets an offload_cap
   * that changes that time (the second plan is the one applied) */
  void (*decide)(gpointer state, gconstpointer params, const EmaPoolView *view, guint gpu,
                 const EmaStepCostView *step, EmaPrefetchPlan *plan);
  gpointer reserved[EMA_POLICY_RESERVED];
} EmaPrefetchPolicyOps;

/* ---- reclaim ----------------------------------------------------------------- */

typedef enum {
  EMA_VACATE_TO_BORROWER, /* copy into the borrower's free local memory */
  EMA_VACATE_TO_PEER,     /* copy to another GPU that lends it room (target) */
  EMA_VACATE_TO_HOST,     /* copy to host memory (the requests swap back in later) */
  EMA_VACATE_DROP,        /* drop it: the borrower's affected requests recompute */
} EmaVacateTarget;

typedef struct {
  guint borrower;
  guint64 slices; /* slices LENDER takes back from BORROWER */
  EmaVacateTarget target;
  guint target_gpu; /* EMA_VACATE_TO_PEER: where the data goes */
} EmaReclaimAction;

typedef struct { /* as EmaBorrowPlan: its first n actions */
  guint n;
  EmaReclaimAction actions[32];
} EmaReclaimPlan;

typedef struct {
  guint abi_version;
  const char *name;
  const char *summary;
  const EmaParamTable *params;
  gsize state_size;
  gboolean (*init)(gpointer state, gconstpointer params, const EmaPoolView *view, GError **error);
  /* required: LENDER's tenant lacks NEEDED slices (0: a proactive call after
   * one of its steps); fill PLAN (starts empty). Empty slices come back
   * first whatever the plan says about data. */
  void (*decide)(gpointer state, gconstpointer params, const EmaPoolView *view, guint lender,
                 guint64 needed, EmaReclaimPlan *plan);
  gpointer reserved[EMA_POLICY_RESERVED];
} EmaReclaimPolicyOps;

/* ---- modules ------------------------------------------------------------------- */

/* What a plugin exports as the symbol `ema_policy_module`. */
typedef struct {
  guint abi_version;
  const EmaBorrowPolicyOps *const *borrow;     /* NULL-terminated, may be NULL */
  const EmaPrefetchPolicyOps *const *prefetch; /* NULL-terminated, may be NULL */
  const EmaReclaimPolicyOps *const *reclaim;   /* NULL-terminated, may be NULL */
} EmaPolicyModule;

G_END_DECLS
