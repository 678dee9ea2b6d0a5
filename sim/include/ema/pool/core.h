/* core.h: the one mechanism of the elastic memory pool, shared by the
 * simulator (pool.c, with its engines and events around it) and the real
 * pool of `ema-validate pool` (validate/poolmem.c, driven by demand targets
 * per tick): the slice ledger (ledger.h) and its invariants, the tenants'
 * blocks over it (take, give), the views the policies read, the policy
 * calls, the checks of their plans (every action cut to what the ledger can
 * honour, counted in plans_adjusted) and their application (borrow, return,
 * reclaim with migration or eviction), and the log of what was done. What
 * the memory behind a slice is, and what an action costs, is the backend's
 * (backend.h).
 *
 * Decision order (ema_pool_core_decide): a lender that lacks memory
 * reclaims first (lender priority), then a proactive reclaim (needed 0),
 * then the borrow policy. A reclaim action moves the borrower's blocks that
 * no longer fit (to its own free slices, to a peer's slices lent on the
 * spot, to host), and what cannot go where the plan said is dropped.
 *
 * Invariant checks (ema_pool_core_checked): after every pool action when
 * EMA_POOL_CHECKS=all (the test builds set it), one action in
 * EMA_POOL_CHECK_SAMPLE otherwise (release builds: a cheap sample); a
 * violation is fatal, with the action named. */
#pragma once

#include <glib.h>

#include "ema/core/idmap.h"
#include "ema/hw/offload.h"
#include "ema/hw/steptime.h"
#include "ema/policy.h"
#include "ema/pool/backend.h"
#include "ema/pool/ledger.h"
#include "ema/pool/policyspec.h"
#include "ema/serving/engine.h"

G_BEGIN_DECLS

/* One request of a tenant in the pool's ledger: where its blocks are. A
 * tenant's blocks are its requests' (and its prefix cache's, request
 * EMA_KV_PREFIX_CACHE; a driver without engines names its blocks
 * EMA_KV_UNNAMED): for every GPU g and place p (g itself: its own slices; a
 * lender j), the sum over g's requests of at[p] (ema_pool_request_at) is g's local_used (p = g)
 * or remote[p], no request holds a block twice, the GPU's running list
 * holds exactly its requests in EMA_KV_RUNNING, and its remote-running
 * list exactly those of them with blocks on a lender (at[g] < blocks), in
 * the running list's order (ema_pool_core_check walks them when
 * EMA_POOL_CHECKS=all). */
typedef struct {
  guint64 request;
  EmaKvState state;
  guint gpu;           /* g: the GPU whose tenant's it is */
  guint64 blocks;      /* in all */
  guint64 local;       /* in g's own slices: at[g] (ema_pool_request_at) */
  guint64 *remote_at;  /* [n], or NULL while it has never had a block on a lender: at[j] in the
                          slices lender j lends g (remote_at[g] unused, 0). Apart, so that the
                          common local-only record stays one line or two whatever the server's
                          GPU count */
  guint last;          /* where its newest block is (the new token's K/V goes there) */
  guint64 places;      /* bit p (p < 64): it has blocks on place p (what at[] says, kept with it) */
  GList link;          /* in its GPU's list, in the order the pool first saw it; data = this */
  GList running;       /* in its GPU's running list while EMA_KV_RUNNING; data = this */
  GList remote;        /* in its GPU's remote-running list while running with blocks on a
                          lender; data = this */
  guint64 started;     /* the GPU's running lists' order: when it last started to run */
  gpointer engine_ref; /* its engine's handle (ema_engine_request_ref) once it has run or
                          been described, kept until it finishes; NULL before, without an
                          engine and for the prefix cache */
} EmaPoolRequest;

/* R's blocks on place P: its GPU's own slices (P = R's GPU) or lender P's. */
static inline guint64 ema_pool_request_at(const EmaPoolRequest *r, guint p) {
  return p == r->gpu ? r->local : r->remote_at ? r->remote_at[p] : 0;
}

#define EMA_POOL_REASON_CHARS 160

/* One action as it was applied (or, REFUSE, asked and not applied). Times: the backend's (modelled
 * or real). */
typedef struct {
  guint64 tick;   /* the round (demand driver) */
  EmaTime at;     /* the pool's time */
  double started; /* the backend's clock when it began (no clock: at, in s) */
  EmaPoolEventKind kind;
  guint gpu, peer;
  EmaVacateTarget target; /* RECLAIM: where the plan sent the data */
  guint target_gpu;
  guint64 slices;
  guint64 blocks_moved, blocks_to_host, blocks_dropped;
  guint64 bytes_copied;
  double seconds;      /* the whole action */
  double map_seconds;  /* of which creating and mapping (a move's destination) */
  double copy_seconds; /* of which copies */
  double unmap_seconds;
  /* why: the policy that asked, what the ledger made of it, what its data
   * did ("most-idle: gpu0 short 120 blocks, 14 waiting; asked 64 slices") */
  char reason[EMA_POOL_REASON_CHARS];
} EmaPoolEvent;

/* "borrow", "return", "reclaim", "own-map", "own-unmap", "refuse". */
const char *ema_pool_event_kind_name(EmaPoolEventKind kind);
/* "waiting", "running", "preempted", "cached". */
const char *ema_request_state_name(EmaRequestState state);
/* "borrower", "peer", "host", "drop". */
const char *ema_pool_vacate_target_name(EmaVacateTarget target);

typedef struct {
  guint64 borrows, slices_borrowed;   /* borrow actions and slices */
  guint64 returns, slices_returned;   /* empty slices given back by borrowers */
  guint64 reclaims, slices_reclaimed; /* reclaim decisions by lenders and their slices */
  guint64 blocks_migrated, blocks_to_host, blocks_dropped;
  guint64 plans_adjusted;            /* plan actions the ledger could not honour as asked */
  guint64 placements, blocks_placed; /* placement moves (EmaPlacementPlan) and their blocks */
  guint64 blocks_checked;            /* moved blocks whose data was read back (real backends) */
  double borrow_seconds, borrow_max_seconds;
  double return_seconds;
  double reclaim_seconds, reclaim_max_seconds; /* per reclaim decision (all its actions) */
} EmaPoolCoreStats;

/* Every action the checks name. */
typedef enum {
  EMA_POOL_ACTION_TAKE,
  EMA_POOL_ACTION_GIVE,
  EMA_POOL_ACTION_BORROW,
  EMA_POOL_ACTION_RETURN,
  EMA_POOL_ACTION_RECLAIM,
  EMA_POOL_ACTION_COMPLETE,
  EMA_POOL_ACTION_PREFETCH,
  EMA_POOL_ACTION_SWAP,
  EMA_POOL_ACTION_TICK,
  EMA_POOL_ACTION_PLACE,
  EMA_POOL_N_ACTIONS,
} EmaPoolAction;

const char *ema_pool_action_name(EmaPoolAction action);

/* How often the invariants are checked: every action, one in
 * EMA_POOL_CHECK_SAMPLE (on up to 8 GPUs; EmaPoolCore.check_scale times
 * rarer on more), or never (EMA_POOL_CHECKS=all, =sample (the default),
 * =off). */
#define EMA_POOL_CHECK_SAMPLE 4096

/* How many times rarer sampled checks come on N GPUs: the ledger's check
 * walks every pair of GPUs, so past 8 GPUs they come (n/8)^2 times rarer
 * (rounded up) and cost an action about the same on any server. */
static inline guint64 ema_pool_check_scale(guint n) {
  return MAX(1, ((guint64) n * n + 63) / 64);
}
typedef enum { EMA_POOL_CHECK_OFF, EMA_POOL_CHECK_SAMPLED, EMA_POOL_CHECK_ALL } EmaPoolCheckLevel;

typedef struct _EmaPoolCore EmaPoolCore;

/* The owner's own invariants (blocks its engines hold...), checked after
 * the ledger's. */
typedef gboolean (*EmaPoolOwnerCheck)(const EmaPoolCore *core, gpointer data, GError **error);

struct _EmaPoolCore {
  guint n;
  EmaSliceLedger ledger; /* gpus[i]: the owner's records (ledger.h) */
  const EmaServerSpec *server;
  const EmaPolicySpec *spec;
  const EmaPolicyInfo *policies[3];
  const EmaPoolBackend *backend;
  gpointer backend_data;
  EmaTime now;                           /* set by the owner before each call but take and give */
  EmaTime (*clock)(gpointer clock_data); /* the owner's time now, for messages (NULL: now) */
  gpointer clock_data;
  guint64 tick;
  EmaPoolCoreStats stats;
  GArray *events; /* EmaPoolEvent, NULL unless logging (ema_pool_core_log) */
  /* called with every event of the kinds it wants as it is logged (NULL: none), e.g. to
   * write it out */
  void (*on_event)(gpointer data, const EmaPoolEvent *event);
  gpointer on_event_data;
  guint32 on_event_kinds; /* bit k: on_event wants kind k */
  guint64 *scratch;       /* [n] */
  double *bytes_scratch;  /* [n] */
  guint64 *lacking;       /* [n] what each tenant lacked at the end of its last round */
  /* the demand driver (ema_pool_core_tick) */
  const EmaStepModel **models; /* [n] */
  guint context_tokens;
  /* checks */
  gboolean blocks_untracked; /* the backend neither maps own slices nor writes blocks */
  EmaPoolCheckLevel check_level;
  guint64 check_count;
  guint64 check_scale; /* a sampled check comes once in EMA_POOL_CHECK_SAMPLE x this many
                          actions (ema_pool_check_scale) */
  EmaPoolOwnerCheck owner_check;
  gpointer owner_data;
  /* requests: per GPU, the table serial -> EmaPoolRequest and their list */
  EmaIdMap **requests;   /* [n] */
  GQueue *request_list;  /* [n] */
  GQueue *running_list;  /* [n] the requests in EMA_KV_RUNNING, in the order they started */
  GQueue *remote_list;   /* [n] those of them with blocks on a lender, in the same order */
  guint64 starts;        /* requests started to run so far (EmaPoolRequest.started) */
  GArray *request_views; /* EmaRequestView, the last view's requests() */
  GArray *request_at;    /* guint64 [n] per request view: copies of their blocks_at */
  /* the plans a decision hands its borrow (decide, place) and reclaim
   * policies: zeroed with the core and emptied again after each use (n = 0,
   * the actions it set zero), never cleared whole per decision (a clear of
   * 264 to 776 bytes cost more than the policy's decision); decisions do not
   * nest (a backend's action schedules a decision, never makes one) */
  EmaBorrowPlan borrow_plan;
  EmaPlacementPlan place_plan;
  EmaReclaimPlan reclaim_plan;
  /* the owner fills what only it knows of request R's view (context, last
   * scheduled, remaining tokens; NULL: not known) */
  void (*describe)(gpointer owner_data, guint gpu, EmaPoolRequest *r, EmaRequestView *view);
};

/* CORE over N GPUs under POLICY (names looked up in the registry) on
 * SERVER, with BACKEND. The owner then points core->ledger.gpus[i] at its
 * records, each set up by ema_slice_gpu_setup(). Errors: an unknown policy. */
gboolean ema_pool_core_init(EmaPoolCore *core, guint n, const EmaServerSpec *server,
                            const EmaPolicySpec *policy, const EmaPoolBackend *backend,
                            gpointer backend_data, GError **error);
void ema_pool_core_clear(EmaPoolCore *core);
/* Whether an event of KIND is logged or wanted by on_event: where not, a caller may skip
 * making it (its reason's text). */
gboolean ema_pool_core_wants(const EmaPoolCore *core, EmaPoolEventKind kind);
/* A GPU record's counters, zeroed, for GPU INDEX of N. */
void ema_slice_gpu_setup(EmaSliceGpu *g, guint index, guint n);
void ema_slice_gpu_clear(EmaSliceGpu *g);
/* Keep a log of every action (events). */
void ema_pool_core_log(EmaPoolCore *core);

/* The policies' init hooks at core->now. */
gboolean ema_pool_core_start(EmaPoolCore *core, GError **error);
/* The view the policies get at core->now (valid until the next call). */
static inline const EmaPoolView *ema_pool_core_view(EmaPoolCore *core) {
  return ema_slice_ledger_view(&core->ledger, core->now, core->server);
}

/* REQUEST of G's tenant takes N blocks: local first (a running request's
 * new blocks stay local while there is room), then the lenders with the
 * most free room for its blocks (ties to the lowest index); FALSE (nothing
 * taken) when its room does not hold them (*ERROR set only when the
 * backend failed). Growth may use all borrowed room: the prefetch plan's
 * remote_limit gates admission, through ema_slice_gpu_free_blocks(). */
gboolean ema_pool_core_take(EmaPoolCore *core, EmaSliceGpu *g, guint64 request, guint64 n,
                            GError **error);
/* Each of the N requests REQUESTS of G's tenant takes one block: the
 * places are those ema_pool_core_take(N) would give, the local ones to
 * the first requests; all or nothing. */
gboolean ema_pool_core_take_each(EmaPoolCore *core, EmaSliceGpu *g, const guint64 *requests,
                                 guint64 n, GError **error);
/* REQUEST of G's tenant gives back N of its blocks: all of them exactly;
 * fewer, its local and remote ones in proportion (rounded to the nearest),
 * the remote ones in proportion to its share on each lender, the remainder
 * from the largest; with FIRST < n, FIRST's blocks go first (a drop for a
 * reclaim). Its own mapped slices follow. */
gboolean ema_pool_core_give(EmaPoolCore *core, EmaSliceGpu *g, guint64 request, guint64 n,
                            guint first, GError **error);
/* REQUEST of G's tenant is now in STATE: its record is made at its first
 * state or take and forgotten when FINISHED (holding nothing). */
void ema_pool_core_request_state(EmaPoolCore *core, EmaSliceGpu *g, guint64 request,
                                 EmaKvState state);
/* The engine's handle of REQUEST of GPU's tenant (kept until it is
 * FINISHED). */
void ema_pool_core_set_engine_ref(EmaPoolCore *core, guint gpu, guint64 request, gpointer ref);
/* N of REQUEST's blocks become the prefix cache's (its local ones first,
 * as its first blocks were taken first). */
void ema_pool_core_to_cache(EmaPoolCore *core, EmaSliceGpu *g, guint64 request, guint64 n);
/* REQUEST of GPU's tenant, NULL if the pool has none. */
const EmaPoolRequest *ema_pool_core_request(const EmaPoolCore *core, guint gpu, guint64 request);
/* GPU's requests, in the order the pool first saw them (links of EmaPoolRequest). */
const GList *ema_pool_core_requests(const EmaPoolCore *core, guint gpu);
/* GPU's running requests (EMA_KV_RUNNING), in the order they started to
 * run (their running links): what a step's decode may read, without the
 * waiting ones. */
const GList *ema_pool_core_running(const EmaPoolCore *core, guint gpu);
/* Those of them with blocks on a lender, in the same order (their remote
 * links): the ones whose decode reads remote KV of their own; kept as their
 * blocks move, not searched for. */
const GList *ema_pool_core_remote_running(const EmaPoolCore *core, guint gpu);
/* The next place from J on in LENDERS (a mask of EmaPoolRequest.places), or
 * N: a walk of the places that skips those holding none of a request's
 * blocks. Past the mask's 64 places every place comes. */
static inline guint ema_pool_next_lender(guint64 lenders, guint j, guint n) {
  if (j >= 64)
    return j;
  lenders >>= j;
  if (lenders == 0)
    return MIN(n, 64);
  return j + (guint) __builtin_ctzll(lenders);
}

/* A periodic decision of G is due at core->now: a decision period has
 * passed since its last decision and something in the view has changed
 * since (a GPU was touched, ledger.h); otherwise the policies would see
 * the view of their last call again (policy.h). */
static inline gboolean ema_pool_core_periodic_due(const EmaPoolCore *core, const EmaSliceGpu *g) {
  /* its own entry touched (the common case after its step), or any */
  return core->now - g->decided_at >= core->spec->decision_period &&
         (g->view_stale || ema_slice_ledger_changed_since(&core->ledger, g->decided_version));
}

/* Logs the event WHAT that the owner did itself, every field its own but the round and the
 * times, which are the core's now (the owner's own reclaims: parked KV sent to host). */
void ema_pool_core_note_event(EmaPoolCore *core, const EmaPoolEvent *what);

/* Logs an event of KIND (PLACE, TIER, OFFLOAD_THROTTLE) that the owner did for GPU with
 * PEER: BLOCKS moved (BYTES copied) in SECONDS, DROPPED dropped, for REASON. */
void ema_pool_core_note(EmaPoolCore *core, EmaPoolEventKind kind, guint gpu, guint peer,
                        guint64 blocks, guint64 dropped, guint64 bytes, double seconds,
                        const char *reason);

/* Applies PLAN for G's tenant, asked by WHO: each action cut to the blocks
 * its request has where it says and the room where it goes (counted in
 * plans_adjusted), its copy charged through the backend's move; every move,
 * and every action cut to nothing, is an event (place, refuse). */
gboolean ema_pool_core_place(EmaPoolCore *core, EmaSliceGpu *g, const EmaPlacementPlan *plan,
                             const char *who, GError **error);

/* The prefetch policy's plan for G's coming step (COST, LAYERS:
 * ema_slice_gpu_plan_prefetch) on the core's view. Under EMA_POOL_CHECKS=all
 * the view is sealed for the call (a copy of it per step is too dear for
 * every run): FALSE, the policy named in ERROR, when it wrote into it. */
gboolean ema_pool_core_plan_prefetch(EmaPoolCore *core, EmaSliceGpu *g, const EmaStepCostView *cost,
                                     guint layers, GError **error);
/* A decision of G at core->now (the order above, then the borrow policy's
 * placement, if it has one); blocks_short is then 0. */
gboolean ema_pool_core_decide(EmaPoolCore *core, EmaSliceGpu *g, GError **error);
/* The reclaim policy of LENDER for NEEDED slices (0: proactive), its plan
 * checked and applied. */
gboolean ema_pool_core_reclaim(EmaPoolCore *core, guint lender, guint64 needed, GError **error);
/* BORROWER gives back SLICES empty slices of LENDER (cut to the empty ones). */
gboolean ema_pool_core_return(EmaPoolCore *core, guint borrower, guint lender, guint64 slices,
                              GError **error);
/* Fault injection: LENDER needs every slice it lends; what the reclaim
 * policy's plan leaves lent is then dropped. */
gboolean ema_pool_core_reclaim_everything(EmaPoolCore *core, guint lender, GError **error);
/* A deferred action is done (backend.h's defer): its slices usable. */
void ema_pool_core_complete(EmaPoolCore *core, EmaPoolEventKind kind, guint lender, guint borrower,
                            guint64 slices);
/* G's own mapped slices follow its blocks and staging (backend's own). */
gboolean ema_pool_core_sync_own(EmaPoolCore *core, EmaSliceGpu *g, GError **error);

/* ---- the demand driver (a synchronous backend without engines) ---------- */

/* GPU's tenant runs STEP_MODEL (for its prefetch plans; NULL: none);
 * sequences count CONTEXT_TOKENS tokens (0: 2000). */
void ema_pool_core_set_model(EmaPoolCore *core, guint gpu, const EmaStepModel *step_model);
/* One round at core->now, TARGETS[g] the blocks g's tenant wants:
 *   1. the prefetch policy for each tenant holding remote blocks (the step
 *      is the decode of its blocks by its running sequences), then each
 *      tenant gives back blocks above its target or takes what it lacks,
 *      as far as its free blocks allow: what it still lacks is its
 *      blocks_short;
 *   2. each sharing tenant's GPU decides (at most once per decision_period,
 *      and only when the view changed since its last decision,
 *      unless short);
 *   3. each tenant takes what it still lacks from the memory step 2 gave;
 *   4. the demand trend; every GPU's work is waited for.
 * FALSE with the first error (the ledger is consistent; stop the run). */
gboolean ema_pool_core_tick(EmaPoolCore *core, const guint64 *targets, GError **error);

/* ---- attention offload --------------------------------------------------- */

/* The shortest time between two offload-refuse (or offload-throttle) events
 * of one borrower for different lenders: with lenders alike the binding one
 * flaps from step to step. */
#define EMA_POOL_LOG_PERIOD ((EmaTime) 1000 * 1000 * 1000)

/* After the prefetch policy planned a step of G's tenant whose costs were
 * COST (PREVIOUS: the plan before): the event log gets an `offload` event
 * when its steps start offloading attention, `offload-end` when they stop,
 * and `offload-refuse` when a lender's allowance starts to bound the
 * tenant's remote KV (a lender other than the last one that did), each with
 * its reason. */
void ema_pool_core_plan_events(EmaPoolCore *core, EmaSliceGpu *g, const EmaPrefetchPlan *previous,
                               const EmaStepCostView *cost);

/* ---- invariants ---------------------------------------------------------- */

/* The ledger's invariants (ema_slice_ledger_check_counters), then the
 * owner's. */
gboolean ema_pool_core_check(const EmaPoolCore *core, GError **error);
/* The check after ACTION of GPU (G_MAXUINT: none), now; a violation is
 * fatal, naming the action. */
void ema_pool_core_check_now(EmaPoolCore *core, EmaPoolAction action, guint gpu);
/* After ACTION of GPU: the check at core's level (inline: the pool's hot
 * paths call it on every take and give). */
static inline void ema_pool_core_checked(EmaPoolCore *core, EmaPoolAction action, guint gpu) {
  if (core->check_level == EMA_POOL_CHECK_ALL ||
      (core->check_level == EMA_POOL_CHECK_SAMPLED &&
       ++core->check_count % (EMA_POOL_CHECK_SAMPLE * core->check_scale) == 0))
    ema_pool_core_check_now(core, action, gpu);
}

G_END_DECLS
