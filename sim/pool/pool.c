/* pool.c: the elastic memory pool of the simulator (pool.h): the pool
 * mechanism (core.c: the slice ledger, the blocks, the policy calls, the
 * checks and application of their plans) with the simulator's backend
 * around it (modelled costs, pending actions as events, evictions through
 * the engines, interference), the tenants' KV memory, peer swap, and the
 * cost of remote KV in a step. What follows describes the whole; the
 * mechanism's code is core.c's.
 *
 * Ledger, per GPU g (all in slices unless said):
 *   slices        its KV region
 *   lent[g][b]    lent to borrower b (mapped and usable by b)
 *   lending[g]    reserved on g for borrows still being mapped
 *   returning[g]  reclaimed from borrowers, usable again when the reclaim's
 *                 copies and unmaps are done
 *   staging[g]    its tenant's prefetch staging buffer
 *   local_used    its tenant's blocks in its own slices (blocks)
 *   remote[g][j]  its tenant's blocks in slices lent by j (blocks)
 * Invariants (ema_pool_check): for every g,
 *   ceil(local_used x B / S) + sum_b lent[g][b] + lending + returning + staging <= slices;
 *   remote[g][j] <= floor(lent[j][g] x S / B);
 *   local_used + sum_j remote[g][j] == the blocks g's engine holds;
 * with B the block size and S the slice size; and on a lender with a tenant,
 * the shares of its HBM time the offloading steps running now take add up to
 * at most the largest offload_cap of their plans (policy.h; an offloading
 * step lengthens to hold it, offload_capped(), or with the plan's
 * offload_read reads the KV on the lenders at their cap by direct loads,
 * pulling from them, and offloads only the rest, offload_read_seconds()).
 * lent equals borrowed by construction (one matrix). Sharing GPUs lend and
 * borrow: tp = 1 tenants, idle GPUs and tensor-parallel groups (ledger.h:
 * one record of its t ranks, its block all t shards), which borrow from
 * GPUs outside them and lend as a group (lender_share(), the pulls and
 * ema_slice_ledger_remote_time spread what a lending group serves over its
 * ranks); a tenant with sharing: {lend: false} does not lend.
 *
 * A TP group's costs: its step model and breakdown are one rank's, and
 * each rank reads its shard of the remote KV over its own path
 * (ema_slice_ledger_step_cost); the lender's HBM serves all t shards, so
 * its pulls are t ranks' (interference_outgoing on the whole bytes),
 * while a prefetch lands a rank's shard in each rank's HBM (incoming per
 * rank, against the per-rank step), and so do the copies that land in or
 * leave the group (charge_copy spreads them over its ranks). A copy
 * between the group's own ranks and a peer (peer swap, migrations, the
 * prefix tier) takes a rank's shard over each rank's link on a mesh and
 * all shards over the peer's port otherwise; its host copies go over each
 * rank's own host link (group_link_time, group_host_time). A group
 * offloads attention as a group (hw/offload.h's group model: each rank's
 * queries, the lender computing every rank's partials over all shards,
 * its share of HBM time all shards' reads).
 *
 * Policy calls: a GPU decides after a step of its tenant that lacked
 * blocks, after its other steps at most once per policy.decision_period
 * and only when the view has changed since its last decision (not at all
 * while it lends nothing and the borrow policy never acts),
 * and, when its engine reports blocks it lacks while scheduling
 * (EmaKvMemoryOps.want), in an event at the same instant after the engines.
 * A decision: if it holds peers' parked KV and lacks memory, that goes to
 * host; if it lends and lacks memory, the reclaim policy (lender
 * priority); if it lends, the reclaim policy again as a proactive call
 * (needed 0); then the borrow policy.
 * Before each step with remote KV, the prefetch policy. Plans are checked
 * action by action; what the ledger cannot honour is cut to what it can
 * (counted in plans_adjusted), never applied beyond it. */
#include "ema/pool/pool.h"

#include <gsl/gsl_randist.h>
#include <gsl/gsl_rng.h>
#include <math.h>
#include <string.h>

#include "ema/core/file.h"
#include "ema/pool/core.h"
#include "ema/hw/offexec.h"
#include "ema/pool/registry.h"

#define DECIDE_PRIORITY 50

typedef struct _Pool Pool;

typedef struct {
  /* the ledger's counters (ledger.h), read as g->local_used and so on */
  union {
    EmaSliceGpu counters;
    struct {
      EMA_SLICE_GPU_FIELDS
    };
  };
  Pool *pool;
  guint layers;
  const EmaStepModel *model;
  EmaEngine *engine;
  /* peer swap (preempt: swap-peer): this tenant's preempted KV parked on
   * peers and on host, in blocks (the slices of other tenants' parked KV
   * this GPU holds are its parking) */
  guint64 *parked; /* [n] on lender j */
  guint64 parked_host;
  gboolean evicting_to_host; /* the pool's own eviction: swap_out must not park on peers */
  double *pull;              /* [n] B/s this tenant pulls from lender j in its last step... */
  EmaTime pull_until;        /* ...while that step runs (an idle borrower pulls nothing) */
  gboolean pulled;           /* set by its last step that read remote KV (in Pool.pulling) */
  guint64 *pulls_from;       /* [words]: the lenders j whose pull[j] is not 0 */
  double incoming;           /* B/s copied into this GPU by its prefetches in its last step */
  double copy_steal;         /* B/s of HBM rate taken by swap and migration copies... */
  EmaTime copy_until;        /* ...until then */
  EmaTime slowed_by_peers;   /* step time peers' traffic added to this GPU's steps */
  /* attention offload (hw/offload.h): the tenant's cost model (NULL: it cannot offload, and
   * offload_error says why), and while a step of it offloads (until offload_until), what each
   * lender holds of it and the step's time */
  EmaOffloadModel *offload;
  char *offload_error;
  EmaOffloadShare *offload_shares; /* [n] */
  guint64 *share_lenders;          /* [words]: where offload_shares may not be 0 (shares_start()) */
  EmaTime offload_step, offload_until;
  gboolean offloading; /* offload_until is set and its row of the ledger's offload_share too */
  /* prefix-tier moves held for one event per step (ema_pool_set_tier_per_step), per
   * EmaKvTierMove: blocks, bytes, copy seconds and moves since the last event, and the peer */
  struct {
    guint64 blocks, bytes, moves;
    double seconds;
    guint peer;
  } tier_held[3];
  /* the lenders' offload cap (EmaPrefetchPlan.offload_cap) on the planned step: the lender
   * holding it to the cap (G_MAXUINT: none) and the step's time without the cap; the last
   * offload-throttle event's lender (G_MAXUINT: none, or no throttle since) and its time */
  guint capped_by;
  double uncapped_s;
  guint throttled_by;
  EmaTime throttled_at;
  /* per-lender modes (EmaPrefetchPlan.offload_read) on the planned step: the lenders whose KV
   * it would read rather than offload (reads[n]), the shares left offloaded (read_shares[n]),
   * that step's time without the cap and the lender holding it to the cap (G_MAXUINT: none);
   * reading: the planned step does so */
  gboolean *reads;
  EmaOffloadShare *read_shares;
  guint64 *read_lenders; /* [words]: where reads and read_shares may not be 0 */
  double read_uncapped_s;
  guint read_capped_by;
  gboolean reading;
  /* the execution model (offexec.h): this step's draw D of its partials' time */
  double partial_draw;
  EmaEvent decide_event;
  gboolean dropping; /* a drop for a reclaim is freeing blocks: give() takes them from... */
  guint drop_lender; /* ...this lender first */
  /* memory_total_blocks()'s last answer and what it was computed from (its two divisions were
   * 4% of the serving benchmark: engines ask before every scheduling pass) */
  guint64 total_blocks, total_slices, total_borrowed, total_block_bytes;
} Gpu;

struct _Pool {
  EmaSim *sim;
  const EmaServerSpec *server;
  const EmaPolicySpec *spec;
  guint n;
  Gpu *gpus;
  EmaPoolCore core;      /* the mechanism; core.ledger.gpus[i] is &gpus[i].counters */
  double *bytes_scratch; /* [n], per-lender bytes of the step being timed */
  double *read_scratch;  /* [n], of those, the lenders' read in an offloading step */
  double *cap_scratch;   /* [n], lender_capped_step() of each lender of the step being timed */
  /* [n], per lender of the step whose shares are being summed (shares_start() to
   * shares_finish()): its requests with own blocks there that also hold cached blocks there */
  guint64 *share_overlap;
  gboolean tier_per_step; /* ema_pool_set_tier_per_step */
  guint pulling;          /* GPUs whose pull is not all 0: none, and no step sums peers' pulls */
  guint offloading;       /* GPUs whose offloading is set: none, and no step looks for them */
  EmaTime offload_expiry; /* at most the earliest offload_until of those (expire_offloads) */
  /* sets of GPUs as bits, WORDS words each, walked in index order (ema_bits_next()), so that a sum
   * over them adds what a walk of every GPU adds, in its order, the others' being 0: the GPUs
   * whose pulled is set; whose offloading is (per lender, the ledger's offload_to); per lender
   * j, at [j * words], the GPUs b whose pull[j] is not 0 (a step sums the pulls on its GPU
   * over them) */
  guint words;
  guint64 *pullers, *offloaders, *pulled_by;
  /* the execution model (offexec.h; exec FALSE: the server's is offload.h's own, mps at equal
   * priority with one median, and none of this is used): per borrower b and lender j, at
   * [b * n + j] while b's offloading step runs, rho_bj, rho_bj S_bj and L_b / T_b; the partials'
   * draws (NULL: partial_p90 1) */
  gboolean exec;
  double *exec_rho, *exec_rho_s, *exec_rate;
  gsl_rng *rng;
  GPtrArray *pending; /* Pending * in flight (freed with the pool if a run ends first) */
  EmaPoolStats stats; /* the step figures and reclaim waits; the rest is core.stats' */
};

struct _EmaPool {
  Pool pool;
};

/* G's lenders from J on (the GPUs lending it slices, ledger.h), or n: the
 * places of all its remote blocks, in index order, so that a step's sum
 * over them adds what a walk of every GPU adds, the others' terms being 0
 * (no blocks, no bytes, no offload share there). */
static inline guint next_lender(const Pool *p, const Gpu *g, guint j) {
  return ema_slice_ledger_next_lender(&p->core.ledger, g->index, j);
}
#define FOR_EACH_LENDER(p, g, j) EMA_SLICE_LEDGER_FOR_EACH_LENDER (&(p)->core.ledger, (g)->index, j)

/* A ledger change that completes after its cost: a borrow (slices being
 * mapped for a borrower), a return (empty slices a borrower gave back,
 * being unmapped) or a reclaim (slices a lender took back, data leaving and
 * unmapping). */
typedef struct {
  EmaEvent event;
  Pool *pool;
  EmaPoolEventKind kind;
  guint lender, borrower;
  guint64 slices;
  EmaTime started;
} Pending;

/* ---- ledger arithmetic --------------------------------------------------- */

static guint64 slices_for_blocks(const Gpu *g, guint64 blocks) {
  return ema_slices_for_blocks(&g->counters, blocks);
}

static guint64 blocks_in_slices(const Gpu *g, guint64 slices) {
  return ema_blocks_in_slices(&g->counters, slices);
}

static guint64 lendable(const Gpu *g) {
  return ema_slice_gpu_lendable(&g->counters);
}

/* ---- the tenant's KV memory ---------------------------------------------- */

static guint64 memory_free_blocks(gpointer self) {
  Gpu *g = self;
  return ema_slice_gpu_free_blocks(&g->counters);
}

static guint64 memory_total_blocks(gpointer self) {
  Gpu *g = self;
  if (g->slices != g->total_slices || g->borrowed_total != g->total_borrowed ||
      g->block_bytes != g->total_block_bytes) {
    /* the region it owns (lent slices come back on demand) plus what it borrows */
    g->total_blocks = blocks_in_slices(g, g->slices) + blocks_in_slices(g, g->borrowed_total);
    g->total_slices = g->slices;
    g->total_borrowed = g->borrowed_total;
    g->total_block_bytes = g->block_bytes;
  }
  return g->total_blocks;
}

/* The core's time is the simulation's (for its views, events and checks;
 * takes and gives, the hot path, leave it as the last action set it and
 * the checks' messages read the clock). */
static EmaPoolCore *core_at(Pool *p, EmaTime now) {
  p->core.now = now;
  return &p->core;
}

static EmaPoolCore *core_now(Pool *p) {
  return core_at(p, ema_sim_now(p->sim));
}

static EmaTime sim_clock(gpointer data) {
  const Pool *p = data;
  return ema_sim_now(p->sim);
}

static gboolean memory_take(gpointer self, guint64 request, guint64 n) {
  Gpu *g = self;
  return ema_pool_core_take(&g->pool->core, &g->counters, request, n, NULL);
}

static gboolean memory_take_each(gpointer self, const guint64 *requests, guint64 n) {
  Gpu *g = self;
  return ema_pool_core_take_each(&g->pool->core, &g->counters, requests, n, NULL);
}

static void memory_give(gpointer self, guint64 request, guint64 n) {
  Gpu *g = self;
  Pool *p = g->pool;
  /* a drop for a reclaim frees the lender's blocks first (of the cache's) */
  ema_pool_core_give(&p->core, &g->counters, request, n, g->dropping ? g->drop_lender : p->n, NULL);
}

static void memory_to_cache(gpointer self, guint64 request, guint64 n) {
  Gpu *g = self;
  ema_pool_core_to_cache(&g->pool->core, &g->counters, request, n);
}

static void memory_state(gpointer self, guint64 request, EmaKvState state) {
  Gpu *g = self;
  ema_pool_core_request_state(&g->pool->core, &g->counters, request, state);
  if (state == EMA_KV_RUNNING && g->engine)
    ema_pool_core_set_engine_ref(&g->pool->core, g->index, request,
                                 ema_engine_request_ref(g->engine, request));
}

static void schedule_decision(Gpu *g);

static void memory_want(gpointer self, guint64 blocks_short) {
  Gpu *g = self;
  g->blocks_short = MAX(g->blocks_short, blocks_short);
  ema_slice_gpu_touch(&g->counters);
  schedule_decision(g);
}

/* ---- peer swap: preempted KV parked on peers ------------------------------ */

static EmaTime ns(double seconds);
static double link_copy_time(const EmaServerSpec *server, double bytes);
static double host_copy_time(const EmaServerSpec *server, double bytes);

/* A copy of BYTES (whole blocks of G's tenant) between G's own HBM and a
 * peer's: a TP group's ranks each move their shard, over their own links
 * on a mesh, all through the peer's one port on a switch or PCIe. */
static double group_link_time(const Pool *p, const Gpu *g, double bytes) {
  gboolean mesh = p->server->topology == EMA_TOPOLOGY_DIRECT;
  return link_copy_time(p->server, mesh ? bytes / ema_slice_gpu_ranks(&g->counters) : bytes);
}

/* A copy of BYTES between G's own HBM and host memory: each rank's shard
 * over its own host link, side by side. */
static double group_host_time(const Pool *p, const Gpu *g, double bytes) {
  return host_copy_time(p->server, bytes / ema_slice_gpu_ranks(&g->counters));
}

/* A copy of BYTES taking SECONDS that reads from or lands in GPU's HBM
 * (COEFFICIENT: gpu.interference_outgoing or _incoming) takes HBM rate
 * from the GPU's own steps while it runs. A GPU's copies go over its port
 * one after another: a copy starts when the ones before it end, and the
 * rate taken is what is left to move (weighted by the coefficients) over
 * the time left, never more than the fastest copy's. (Simplification:
 * link, PCIe and peer-port copies share one queue; the copy's own SECONDS
 * reported to its caller do not include the wait.) A TP group's copy is
 * spread over its ranks: each rank's HBM takes its shard. */
static void charge_copy(Pool *p, guint gpu, double coefficient, double bytes, double seconds) {
  Gpu *g = &p->gpus[gpu];
  EmaTime now = ema_sim_now(p->sim);
  double left;
  if (bytes <= 0 || seconds <= 0 || coefficient <= 0)
    return;
  bytes /= ema_slice_gpu_ranks(&g->counters); /* a TP group's steps are one rank's */
  left = now < g->copy_until ? g->copy_steal * (double) (g->copy_until - now) * 1e-9 : 0;
  g->copy_until = MAX(now, g->copy_until) + MAX(ns(seconds), 1);
  g->copy_steal = (left + coefficient * bytes) / ((double) (g->copy_until - now) * 1e-9);
}

/* charge_copy for each GPU j the bytes_scratch[j] that one copy of
 * SECONDS moves to or from it, and clear them. */
static void charge_copies(Pool *p, double coefficient, double seconds) {
  for (guint j = 0; j < p->n; j++) {
    charge_copy(p, j, coefficient, p->bytes_scratch[j], seconds);
    p->bytes_scratch[j] = 0;
  }
}

/* Move K of g's parked blocks onto (K > 0) or off (K < 0) lender J. */
static void change_parked(Pool *p, Gpu *g, guint j, gint64 k) {
  Gpu *l = &p->gpus[j];
  l->parking -= slices_for_blocks(g, g->parked[j]);
  g->parked[j] = (guint64) ((gint64) g->parked[j] + k);
  l->parking += slices_for_blocks(g, g->parked[j]);
  ema_slice_gpu_refresh(&l->counters);
}

/* The blocks more of g's parked KV that peer J has room for now. */
static guint64 park_room(const Pool *p, const Gpu *g, guint j) {
  const Gpu *l = &p->gpus[j];
  if (j == g->index || !ema_slice_gpu_lends(&l->counters))
    return 0;
  return blocks_in_slices(g, slices_for_blocks(g, g->parked[j]) + lendable(l)) - g->parked[j];
}

/* The time g's parked KV takes one way: PEER_S for the blocks over the
 * link to or from the peers, TO_HOST blocks over the host link, side by
 * side. */
static double park_copy_time(const Pool *p, const Gpu *g, double peer_s, guint64 to_host) {
  return MAX(peer_s, group_host_time(p, g, (double) to_host * (double) g->block_bytes));
}

static EmaTime memory_swap_out(gpointer self, guint64 blocks) {
  Gpu *g = self;
  Pool *p = g->pool;
  guint64 left = blocks, to_peers = 0;
  double peer_time;
  memset(p->bytes_scratch, 0, p->n * sizeof(double));
  while (left > 0 && !g->evicting_to_host) {
    /* the peer with the most room left for g's blocks */
    guint best = p->n;
    guint64 most = 0;
    for (guint j = 0; j < p->n; j++) {
      guint64 room = park_room(p, g, j);
      if (room > most) {
        most = room;
        best = j;
      }
    }
    if (best == p->n)
      break;
    change_parked(p, g, best, (gint64) MIN(most, left));
    p->bytes_scratch[best] += (double) MIN(most, left) * (double) g->block_bytes;
    to_peers += MIN(most, left);
    left -= MIN(most, left);
  }
  g->parked_host += left;
  peer_time = group_link_time(p, g, (double) to_peers * (double) g->block_bytes);
  charge_copies(p, p->server->gpu.interference_incoming, peer_time);
  return (EmaTime) ema_llround(park_copy_time(p, g, peer_time, left) * 1e9);
}

/* EmaKvMemoryOps.swap_estimate: the peers take what they have room for
 * now (memory_swap_out), the host the rest, and the blocks come back the
 * same ways (the copies' queueing and the lenders' interference left
 * out). */
static EmaTime memory_swap_estimate(gpointer self, guint64 blocks) {
  const Gpu *g = self;
  const Pool *p = g->pool;
  guint64 room = 0, to_peers;
  double peer_s;
  for (guint j = 0; j < p->n && room < blocks; j++)
    room += park_room(p, g, j);
  to_peers = MIN(room, blocks);
  peer_s = group_link_time(p, g, (double) to_peers * (double) g->block_bytes);
  return 2 * (EmaTime) ema_llround(park_copy_time(p, g, peer_s, blocks - to_peers) * 1e9);
}

/* BLOCKS of G's parked KV leave their places: the peers' first (blocks of
 * parked KV are not told apart), the bytes off each peer in bytes_scratch,
 * then the host's. Returns how many came off the peers; *FROM_HOST the host's. */
static guint64 parked_leave(Pool *p, Gpu *g, guint64 blocks, guint64 *from_host) {
  guint64 left = blocks, from_peers = 0;
  memset(p->bytes_scratch, 0, p->n * sizeof(double));
  while (left > 0) {
    guint best = 0;
    guint64 k;
    for (guint j = 1; j < p->n; j++)
      if (g->parked[j] > g->parked[best])
        best = j;
    if (g->parked[best] == 0)
      break;
    k = MIN(g->parked[best], left);
    change_parked(p, g, best, -(gint64) k);
    p->bytes_scratch[best] += (double) k * (double) g->block_bytes;
    from_peers += k;
    left -= k;
  }
  *from_host = MIN(left, g->parked_host);
  g->parked_host -= *from_host;
  return from_peers;
}

static EmaTime memory_swap_in(gpointer self, guint64 blocks) {
  Gpu *g = self;
  Pool *p = g->pool;
  guint64 from_host, from_peers = parked_leave(p, g, blocks, &from_host);
  double peer_time = group_link_time(p, g, (double) from_peers * (double) g->block_bytes);
  charge_copies(p, p->server->gpu.interference_outgoing, peer_time);
  return (EmaTime) ema_llround(park_copy_time(p, g, peer_time, from_host) * 1e9);
}

/* EmaKvMemoryOps.swap_drop: an aborted request's parked KV is let go, no copy. */
static void memory_swap_drop(gpointer self, guint64 blocks) {
  Gpu *g = self;
  guint64 from_host;
  parked_leave(g->pool, g, blocks, &from_host);
}

/* ---- the prefix cache's remote tier ------------------------------------------ */

/* Cached blocks no request holds: in the free part of G's own slices, and
 * (prefix_tier: remote) in the free part of what its lenders lend it. */
static void memory_cache_room(gpointer self, guint64 *local, guint64 *remote) {
  Gpu *g = self;
  guint64 cap = ema_slice_gpu_local_capacity(&g->counters);
  *local = cap > g->local_used ? cap - g->local_used : 0;
  *remote = g->pool->spec->prefix_tier_remote && g->remote_cap_total > g->remote_total
                ? g->remote_cap_total - g->remote_total
                : 0;
}

/* The lender of G with the most free room for its blocks (the tier's
 * blocks are counted, not placed: its copies are timed to and from it);
 * the lowest index of those alike. Off its lenders there is no room (no
 * slice lent, no capacity). */
static guint tier_peer(const Gpu *g) {
  const Pool *p = g->pool;
  guint best = g->index;
  guint64 most = 0;
  FOR_EACH_LENDER (p, g, j) {
    guint64 cap = ema_slice_ledger_remote_capacity(&p->core.ledger, &g->counters, j);
    guint64 room = cap > g->remote[j] ? cap - g->remote[j] : 0;
    if (j != g->index && room > most) {
      most = room;
      best = j;
    }
  }
  return best;
}

/* A tier copy of BYTES of G's blocks from FROM to TO over the link (its
 * time), the HBM traffic charged to both. */
static double tier_copy(Pool *p, const Gpu *g, guint from, guint to, double bytes) {
  double seconds = group_link_time(p, g, bytes);
  charge_copy(p, from, p->server->gpu.interference_outgoing, bytes, seconds);
  charge_copy(p, to, p->server->gpu.interference_incoming, bytes, seconds);
  return seconds;
}

/* TEXT (LEN chars) appended to REASON at *AT, cut to its size. */
static void reason_put(char reason[EMA_POOL_REASON_CHARS], gsize *at, const char *text, gsize len) {
  len = MIN(len, EMA_POOL_REASON_CHARS - 1 - *at);
  memcpy(reason + *at, text, len);
  *at += len;
  reason[*at] = '\0';
}

/* A prefix-tier event's reason into REASON: "prefix tier: N cached
 * blocks WHAT", then gpu PEER's index and TAIL unless PEER is G_MAXUINT.
 * What printf would write, without its cost (an event per demotion). */
static void tier_reason(char reason[EMA_POOL_REASON_CHARS], guint64 n, const char *what, guint peer,
                        const char *tail) {
  static const char head[] = "prefix tier: ", blocks[] = " cached blocks ";
  char digits[EMA_FILE_UINT_CHARS];
  gsize at = 0;
  reason_put(reason, &at, head, sizeof head - 1);
  reason_put(reason, &at, digits, ema_file_format_uint(digits, n));
  reason_put(reason, &at, blocks, sizeof blocks - 1);
  reason_put(reason, &at, what, strlen(what));
  if (peer == G_MAXUINT)
    return;
  reason_put(reason, &at, digits, ema_file_format_uint(digits, peer));
  reason_put(reason, &at, tail, strlen(tail));
}

/* The tier event of N blocks moved MOVE (BYTES, SECONDS) with PEER, MOVES
 * moves of one step together (0: one move, said as before). */
static void note_tier(Pool *p, Gpu *g, EmaKvTierMove move, guint peer, guint64 n, double bytes,
                      double seconds, guint64 moves) {
  char reason[EMA_POOL_REASON_CHARS], tail[64];
  /* (the tail of a step's moves is printed only for them: a row per move is the default) */
  switch (move) {
  case EMA_KV_TIER_DEMOTE:
    if (moves)
      g_snprintf(tail, sizeof tail,
                 " (their local room was taken; %" G_GUINT64_FORMAT " move%s this step)", moves,
                 moves == 1 ? "" : "s");
    tier_reason(reason, n, "demoted to gpu", peer, moves ? tail : " (their local room was taken)");
    break;
  case EMA_KV_TIER_FETCH:
    if (moves)
      g_snprintf(tail, sizeof tail, " for %" G_GUINT64_FORMAT " hit%s this step", moves,
                 moves == 1 ? "" : "s");
    tier_reason(reason, n, "fetched from gpu", peer, moves ? tail : " for a hit");
    break;
  case EMA_KV_TIER_DROP:
  default:
    tier_reason(reason, n,
                "on peers dropped (their room went: a reclaim, a return or the tenant's own "
                "blocks)",
                G_MAXUINT, NULL);
    break;
  }
  ema_pool_core_note(core_now(p), EMA_POOL_EVENT_TIER, g->index, peer,
                     move == EMA_KV_TIER_DROP ? 0 : n, move == EMA_KV_TIER_DROP ? n : 0,
                     (guint64) bytes, seconds, reason);
}

/* G's held tier moves of kind MOVE as one event, if any. */
static void flush_tier(Pool *p, Gpu *g, EmaKvTierMove move) {
  if (g->tier_held[move].moves == 0)
    return;
  note_tier(p, g, move, g->tier_held[move].peer, g->tier_held[move].blocks,
            (double) g->tier_held[move].bytes, g->tier_held[move].seconds,
            g->tier_held[move].moves);
  memset(&g->tier_held[move], 0, sizeof g->tier_held[move]);
}

/* G's tier move MOVE of N blocks with PEER (BYTES copied in SECONDS) as events.csv keeps it: an
 * event of its own, or held for the step's one event of that kind and peer; nothing where nobody
 * keeps tier events. */
static void log_tier(Pool *p, Gpu *g, EmaKvTierMove move, guint peer, guint64 n, double bytes,
                     double seconds) {
  if (!ema_pool_core_wants(&p->core, EMA_POOL_EVENT_TIER))
    return;
  if (!p->tier_per_step) {
    note_tier(p, g, move, peer, n, bytes, seconds, 0);
    return;
  }
  if (g->tier_held[move].moves > 0 && g->tier_held[move].peer != peer)
    flush_tier(p, g, move);
  g->tier_held[move].peer = peer;
  g->tier_held[move].blocks += n;
  g->tier_held[move].bytes += (guint64) bytes;
  g->tier_held[move].seconds += seconds;
  g->tier_held[move].moves++;
}

static EmaTime memory_cache_tier(gpointer self, EmaKvTierMove move, guint64 n) {
  Gpu *g = self;
  Pool *p = g->pool;
  /* the tier's blocks are counted, not placed: a drop names no lender (its row says its own GPU,
   * not whichever lender has the most room now) */
  guint peer = move == EMA_KV_TIER_DROP ? g->index : tier_peer(g);
  double bytes = (double) n * (double) g->block_bytes, seconds = 0;
  if (move == EMA_KV_TIER_DEMOTE) /* a copy engine's copy to the peer; nothing waits for it */
    seconds = tier_copy(p, g, g->index, peer, bytes);
  else if (move == EMA_KV_TIER_FETCH)
    seconds = tier_copy(p, g, peer, g->index, bytes);
  else
    bytes = 0;
  log_tier(p, g, move, peer, n, bytes, seconds); /* (its copies charged whether logged or not) */
  return move == EMA_KV_TIER_FETCH ? ns(seconds) : 0;
}

void ema_pool_set_tier_per_step(EmaPool *pool, gboolean per_step) {
  pool->pool.tier_per_step = per_step;
}

void ema_pool_flush_events(EmaPool *pool) {
  Pool *p = &pool->pool;
  for (guint i = 0; p->tier_per_step && i < p->n; i++)
    for (guint move = 0; move < G_N_ELEMENTS(p->gpus[i].tier_held); move++)
      flush_tier(p, &p->gpus[i], move);
}

/* The pool's memory operations; peer swap adds its own. */
#define POOL_MEMORY_OPS                                                                            \
  .take = memory_take, .give = memory_give, .free_blocks = memory_free_blocks,                     \
  .total_blocks = memory_total_blocks, .want = memory_want, .take_each = memory_take_each,         \
  .to_cache = memory_to_cache, .state = memory_state, .cache_room = memory_cache_room,             \
  .cache_tier = memory_cache_tier

static const EmaKvMemoryOps pool_memory_ops = {POOL_MEMORY_OPS};

static const EmaKvMemoryOps pool_memory_ops_peer_swap = {
    POOL_MEMORY_OPS, .swap_out = memory_swap_out, .swap_in = memory_swap_in,
    .swap_estimate = memory_swap_estimate, .swap_drop = memory_swap_drop};

/* ---- views ----------------------------------------------------------------- */

static const EmaPoolView *build_view(Pool *p) {
  return ema_pool_core_view(core_now(p));
}

/* ---- the simulated backend: modelled costs, actions completing later ---------- */

static EmaTime ns(double seconds) {
  return (EmaTime) ema_llround(seconds * 1e9);
}

static void wake(Gpu *g) {
  if (g->engine)
    ema_engine_wake(g->engine);
}

static void on_pending_done(EmaSim *sim, EmaEvent *event, gpointer data) {
  Pending *pending = data;
  Pool *p = pending->pool;
  ema_pool_core_complete(core_now(p), pending->kind, pending->lender, pending->borrower,
                         pending->slices);
  if (pending->kind != EMA_POOL_EVENT_BORROW) {
    EmaTime waited = ema_sim_now(sim) - pending->started;
    if (pending->kind == EMA_POOL_EVENT_RECLAIM) {
      p->stats.reclaim_wait += waited;
      p->stats.reclaim_wait_max = MAX(p->stats.reclaim_wait_max, waited);
    }
    wake(&p->gpus[pending->lender]);
  } else {
    wake(&p->gpus[pending->borrower]);
  }
  g_ptr_array_remove_fast(p->pending, pending);
  g_free(pending);
}

static void start_pending(Pool *p, EmaPoolEventKind kind, guint lender, guint borrower,
                          guint64 slices, EmaTime cost) {
  Pending *pending = g_new0(Pending, 1);
  pending->pool = p;
  pending->kind = kind;
  pending->lender = lender;
  pending->borrower = borrower;
  pending->slices = slices;
  pending->started = ema_sim_now(p->sim);
  ema_event_init(&pending->event, on_pending_done, pending);
  ema_sim_schedule_in(p->sim, &pending->event, cost, 0);
  g_ptr_array_add(p->pending, pending);
}

static void sim_defer(gpointer data, EmaPoolEventKind kind, guint lender, guint borrower,
                      guint64 slices, EmaTime cost) {
  start_pending(data, kind, lender, borrower, slices, cost);
}

/* ---- the cost model (ema_pool_model_backend; DATA the server) ---- */

/* Borrowing n slices costs the VMM create + map time of n slices. */
static gboolean model_lend(gpointer data, guint lender, guint borrower, guint64 slices,
                           double *seconds, GError **error) {
  const EmaServerSpec *server = data;
  *seconds = (double) slices * (double) (server->vmm.create_cost + server->vmm.map_cost) / 1e9;
  return TRUE;
}

static gboolean model_unlend(gpointer data, guint lender, guint borrower, guint64 slices,
                             double *seconds, GError **error) {
  const EmaServerSpec *server = data;
  *seconds = (double) slices * (double) server->vmm.unmap_cost / 1e9;
  return TRUE;
}

static double link_copy_time(const EmaServerSpec *server, double bytes) {
  return bytes > 0 ? (double) server->link.copy_fixed_cost / 1e9 + bytes / server->link.bandwidth
                   : 0;
}

static double host_copy_time(const EmaServerSpec *server, double bytes) {
  return bytes > 0
             ? (double) server->host.copy_fixed_cost / 1e9 + bytes / server->host.d2h_bandwidth
             : 0;
}

/* The block size is the pool's to know: the model backend's moves and
 * host copies are timed by the core's records. */
static gboolean model_move(gpointer data, guint gpu, guint from, guint to, guint64 n,
                           double *seconds, GError **error) {
  const EmaPoolModel *m = data;
  *seconds = link_copy_time(m->server, (double) n * (double) m->ledger->gpus[gpu]->block_bytes);
  return TRUE;
}

static gboolean model_to_host(gpointer data, guint gpu, guint lender, guint64 n, double *seconds,
                              GError **error) {
  const EmaPoolModel *m = data;
  *seconds = host_copy_time(m->server, (double) n * (double) m->ledger->gpus[gpu]->block_bytes);
  return TRUE;
}

static gboolean model_lend_m(gpointer data, guint lender, guint borrower, guint64 slices,
                             double *seconds, GError **error) {
  return model_lend((gpointer) ((const EmaPoolModel *) data)->server, lender, borrower, slices,
                    seconds, error);
}

static gboolean model_unlend_m(gpointer data, guint lender, guint borrower, guint64 slices,
                               double *seconds, GError **error) {
  return model_unlend((gpointer) ((const EmaPoolModel *) data)->server, lender, borrower, slices,
                      seconds, error);
}

static const EmaPoolBackend model_backend = {
    .lend = model_lend_m, .unlend = model_unlend_m, .move = model_move, .to_host = model_to_host};

const EmaPoolBackend *ema_pool_model_backend(void) {
  return &model_backend;
}

/* ---- the simulator's backend: the cost model, engines, interference, events ---- */

static gboolean sim_lend(gpointer data, guint lender, guint borrower, guint64 slices,
                         double *seconds, GError **error) {
  const Pool *p = data;
  return model_lend((gpointer) p->server, lender, borrower, slices, seconds, error);
}

static gboolean sim_unlend(gpointer data, guint lender, guint borrower, guint64 slices,
                           double *seconds, GError **error) {
  const Pool *p = data;
  return model_unlend((gpointer) p->server, lender, borrower, slices, seconds, error);
}

/* A migration's copy over the link, landing in TO's HBM (between two
 * lenders, a TP group's blocks move whole over one link). */
static gboolean sim_move(gpointer data, guint gpu, guint from, guint to, guint64 n, double *seconds,
                         GError **error) {
  Pool *p = data;
  const Gpu *g = &p->gpus[gpu];
  double bytes = (double) n * (double) g->block_bytes;
  *seconds =
      from == gpu || to == gpu ? group_link_time(p, g, bytes) : link_copy_time(p->server, bytes);
  charge_copy(p, to, p->server->gpu.interference_incoming, bytes, *seconds);
  return TRUE;
}

/* The engine preempts requests of GPU's tenant (swapping them to host, or
 * dropping them to recompute) until N of its blocks on LENDER are free. */
/* Which of an evicting tenant's requests go: first those with blocks on
 * the lender, then (their blocks on it being the prefix cache's, which
 * requests share) any, newest first, until N of its blocks there are free. */
typedef struct {
  Pool *pool;
  Gpu *g;
  guint lender;
  guint64 until; /* remote[lender] to reach */
  gboolean any;  /* the second pass */
} Eviction;

static EmaKvVictim pick_evicted(gpointer data, const EmaRequest *request) {
  const Eviction *ev = data;
  const EmaPoolRequest *r;
  if (ev->g->remote[ev->lender] <= ev->until)
    return EMA_KV_VICTIM_STOP;
  if (ev->any)
    return EMA_KV_VICTIM_PREEMPT;
  r = ema_pool_core_request(&ev->pool->core, ev->g->index, request->serial);
  return r && ema_pool_request_at(r, ev->lender) > 0 ? EMA_KV_VICTIM_PREEMPT : EMA_KV_VICTIM_SKIP;
}

static gboolean sim_evict(gpointer data, guint gpu, guint lender, guint64 n, gboolean to_host,
                          guint64 *freed, double *seconds, GError **error) {
  Pool *p = data;
  Gpu *b = &p->gpus[gpu];
  guint64 before = b->remote[lender];
  Eviction ev = {p, b, lender, before > n ? before - n : 0, FALSE};
  EmaPreemptMode mode = to_host ? EMA_PREEMPT_SWAP : EMA_PREEMPT_RECOMPUTE;
  b->dropping = TRUE;
  b->drop_lender = lender;
  b->evicting_to_host = TRUE;
  ema_engine_release_where(b->engine, mode, pick_evicted, &ev);
  ev.any = TRUE;
  ema_engine_release_where(b->engine, mode, pick_evicted, &ev);
  b->evicting_to_host = FALSE;
  b->dropping = FALSE;
  *freed = before - b->remote[lender];
  *seconds = to_host ? host_copy_time(p->server, (double) *freed * (double) b->block_bytes) : 0;
  return TRUE;
}

static const EmaPoolBackend sim_backend = {.lend = sim_lend,
                                           .unlend = sim_unlend,
                                           .move = sim_move,
                                           .evict = sim_evict,
                                           .defer = sim_defer};

/* G needs memory that holds peers' parked KV: it goes to host memory (a TP
 * group's ranks each send their share over their own host link), and G has
 * the slices back when the copy is done. Each owner's KV sent is a reclaim
 * row of events.csv, as a reclaim policy's are. */
static void unpark(Pool *p, Gpu *g) {
  guint64 before = g->parking, blocks_bytes = 0;
  EmaPoolCoreStats *stats = &p->core.stats;
  for (guint b = 0; b < p->n; b++) {
    Gpu *owner = &p->gpus[b];
    guint64 k = owner->parked ? owner->parked[g->index] : 0;
    guint64 held = g->parking;
    EmaPoolEvent e = {
        .kind = EMA_POOL_EVENT_RECLAIM, .gpu = g->index, .peer = b, .target = EMA_VACATE_TO_HOST};
    if (k == 0)
      continue;
    change_parked(p, owner, g->index, -(gint64) k);
    owner->parked_host += k;
    blocks_bytes += k * owner->block_bytes;
    stats->blocks_to_host += k;
    e.slices = held - g->parking;
    e.blocks_to_host = k;
    e.bytes_copied = k * owner->block_bytes;
    e.seconds = e.copy_seconds = group_host_time(p, g, (double) e.bytes_copied);
    g_snprintf(e.reason, sizeof e.reason,
               "parked KV: gpu%u short %" G_GUINT64_FORMAT " blocks; %" G_GUINT64_FORMAT
               " slices of gpu%u's parked KV, %" G_GUINT64_FORMAT " blocks to host",
               g->index, g->blocks_short, e.slices, b, k);
    ema_pool_core_note_event(&p->core, &e);
  }
  g->returning += before - g->parking;
  ema_slice_gpu_refresh(&g->counters);
  stats->reclaims++;
  stats->slices_reclaimed += before - g->parking;
  start_pending(p, EMA_POOL_EVENT_RECLAIM, g->index, g->index, before - g->parking,
                ns(group_host_time(p, g, (double) blocks_bytes)));
  ema_pool_core_checked(&p->core, EMA_POOL_ACTION_SWAP, g->index);
}

/* G's decision, the core's clock set. Its only failure is a policy's
 * breach of its contract (core.c names it): the run stops there. */
static void decide_now(Gpu *g, EmaPoolCore *core) {
  Pool *p = g->pool;
  GError *error = NULL;
  if (g->blocks_short > 0 && g->parking > 0) {
    g->decided_at = core->now;
    unpark(p, g);
  }
  if (!ema_pool_core_decide(core, &g->counters, &error))
    ema_sim_fail(p->sim, error);
}

static void decide(Gpu *g) {
  decide_now(g, core_now(g->pool));
}

void ema_pool_reclaim_everything(EmaPool *pool, guint lender) {
  ema_pool_core_reclaim_everything(core_now(&pool->pool), lender, NULL);
}

static void on_decide(EmaSim *sim, EmaEvent *event, gpointer data) {
  decide(data);
}

/* G's decisions can do something: it shares, and it lends (reclaims,
 * parking) or its borrow policy acts (a TP group under a borrow policy
 * that never acts has nothing to decide). */
static gboolean decides(const Gpu *g) {
  return g->shares && (ema_slice_gpu_lends(&g->counters) ||
                       (!g->borrow_off && !g->pool->core.policies[EMA_POLICY_BORROW]->never_acts));
}

static void schedule_decision(Gpu *g) {
  if (decides(g) && !ema_event_is_scheduled(&g->decide_event))
    ema_sim_schedule(g->pool->sim, &g->decide_event, ema_sim_now(g->pool->sim), DECIDE_PRIORITY);
}

/* ---- remote KV in a step ----------------------------------------------------- */

double ema_remote_step_seconds(const EmaStepBreakdown *bd, const EmaServerSpec *server,
                               double layers, double slow, double t_copy, double t_direct,
                               const EmaPrefetchPlan *plan) {
  double layer_mem = bd->layer_memory_s * slow;
  double tail = bd->lm_head_s + bd->allreduce_s + bd->overhead_s;
  if (plan->mode == EMA_REMOTE_DIRECT) {
    /* the attention kernel loads the remote share over the link while its
     * other thread blocks read local KV; the remote loads hide under the
     * kernel's all-local time but do not shorten it (measured on two H200s:
     * up to 10% of the blocks remote left the step within 0.4% of all-local,
     * validate/results/2026-11-30-h200x2-direct); the rest of the layer's
     * memory traffic comes before and after */
    double kv_all = bd->layer_kv_read_s * slow;
    double attention = MAX(kv_all, t_direct);
    return layers *
               (MAX(bd->layer_compute_s, layer_mem - kv_all + attention) + bd->layer_overhead_s) +
           tail;
  } else {
    /* prefetched KV is read from the local staging buffer like local KV */
    double group = MAX(plan->layers_per_copy, 1);
    double groups = layers / group;
    double compute = group * (MAX(bd->layer_compute_s, layer_mem) + bd->layer_overhead_s);
    double copy = (double) server->link.copy_fixed_cost / 1e9 + group * t_copy;
    double fill = MAX(0, copy - MAX(plan->depth, 1) * MAX(0, compute - copy) - bd->lm_head_s);
    return groups * MAX(compute, copy) + fill + tail;
  }
}

/* What is left of RATE_M after STEAL B/s are taken, as a slowdown (>= 1;
 * at least a tenth of the rate is left). */
static double slowdown(double rate_m, double steal) {
  return rate_m / MAX(rate_m - steal, rate_m / 10);
}

double ema_remote_step_seconds_one_lender(const EmaStepBreakdown *bd, const EmaServerSpec *server,
                                          double layers, double steal, double remote,
                                          const EmaPrefetchPlan *plan) {
  double rate_m = server->gpu.hbm_bandwidth * server->gpu.hbm_efficiency;
  double slow = slowdown(rate_m, steal), t_copy, t_direct, seconds;
  if (remote <= 0)
    return layers * (MAX(bd->layer_compute_s, bd->layer_memory_s * slow) + bd->layer_overhead_s) +
           bd->lm_head_s + bd->allreduce_s + bd->overhead_s;
  t_copy = remote / server->link.bandwidth;
  t_direct = remote / server->link.direct_read_bandwidth;
  seconds = ema_remote_step_seconds(bd, server, layers, slow, t_copy, t_direct, plan);
  if (plan->mode == EMA_REMOTE_PREFETCH && server->gpu.interference_incoming > 0) {
    double incoming = remote * layers / seconds;
    slow = slowdown(rate_m, steal + server->gpu.interference_incoming * incoming);
    seconds = ema_remote_step_seconds(bd, server, layers, slow, t_copy, t_direct, plan);
  }
  return seconds;
}

/* Step of G's tenant (breakdown BD, all-local ALL_LOCAL ns) with its
 * HBM rate slowed by SLOW; when it reads REMOTE KV, under PLAN
 * (T_COPY, T_DIRECT: one layer's remote KV by copies or direct loads). */
static double step_seconds(const Pool *p, const Gpu *g, const EmaStepBreakdown *bd,
                           EmaTime all_local, double slow, gboolean remote, double t_copy,
                           double t_direct, const EmaPrefetchPlan *plan) {
  if (remote)
    return ema_remote_step_seconds(bd, p->server, g->layers, slow, t_copy, t_direct, plan);
  if (slow <= 1)
    return (double) all_local / 1e9;
  return g->layers * (MAX(bd->layer_compute_s, bd->layer_memory_s * slow) + bd->layer_overhead_s) +
         bd->lm_head_s + bd->allreduce_s + bd->overhead_s;
}

/* ---- attention offload ---------------------------------------------------------- */

/* Rows of the ledger's offload_share whose borrower's offloading step is
 * over: 0 (an idle borrower charges no lender). */
static void expire_offloads(Pool *p) {
  EmaTime now = ema_sim_now(p->sim), expiry = G_MAXINT64;
  if (p->offloading == 0 || now < p->offload_expiry)
    return; /* none is over yet: a step walks the offloaders only when one is */
  for (guint b = ema_bits_next(p->offloaders, 0, p->n); p->offloading > 0 && b < p->n;
       b = ema_bits_next(p->offloaders, b + 1, p->n)) {
    Gpu *g = &p->gpus[b];
    double *row = &p->core.ledger.offload_share[b * p->n];
    if (now < g->offload_until) {
      expiry = MIN(expiry, g->offload_until);
      continue;
    }
    for (guint j = 0; j < p->n; j++)
      if (row[j] > 0)
        ema_bits_set(&p->core.ledger.offload_to[j * p->words], b, FALSE);
    memset(row, 0, p->n * sizeof(double));
    ema_bits_set(p->offloaders, b, FALSE);
    if (p->exec) {
      memset(&p->exec_rho[b * p->n], 0, p->n * sizeof(double));
      memset(&p->exec_rho_s[b * p->n], 0, p->n * sizeof(double));
      memset(&p->exec_rate[b * p->n], 0, p->n * sizeof(double));
    }
    ema_slice_gpu_touch(&g->counters); /* the view changed (offload_share) */
    g->offloading = FALSE;
    p->offloading--;
  }
  p->offload_expiry = expiry;
}

/* The shares of LENDER's HBM time that the borrowers' offloading steps
 * running now take together, BORROWER's left out (G_MAXUINT: none). */
static double lender_offload_share(const Pool *p, guint lender, guint borrower) {
  EmaTime now = ema_sim_now(p->sim);
  double share = 0;
  if (p->offloading == 0)
    return 0;
  EMA_BITS_FOR_EACH (&p->core.ledger.offload_to[lender * p->words], p->n, b) {
    const Gpu *g = &p->gpus[b];
    if (b != lender && b != borrower && g->offloading && now < g->offload_until)
      share += p->core.ledger.offload_share[b * p->n + lender];
  }
  return share;
}

/* The sums of a step's offload shares (offload_shares()): the prefix
 * cache of the tenant and whether it is partly on lenders; the requests
 * merging remote partials (of those with own blocks on a lender); of the
 * requests whose own blocks are all local, those that hold cached blocks
 * and their cached blocks (counted together); of the others, likewise.
 * Every decoding request's cached blocks sit on the cache's places in the
 * cache's proportions, so the cached tokens on a lender are the sum of
 * those blocks times that lender's share, one product per lender and step
 * (shares_finish()), where a product per request and lender would give the
 * same sum. */
typedef struct {
  const EmaPoolRequest *cache;
  gboolean cache_remote;
  guint64 block_tokens;
  guint64 merged;
  guint64 cached_seqs, cached_blocks;
  guint64 remote_cached_seqs, remote_cached_blocks;
} ShareSums;

/* Start SUMS of G's step into SHARES[n] (zeroed); FALSE: the step
 * offloads nothing (no decode in it: DECODING false, or nothing remote). */
static gboolean shares_start(Pool *p, Gpu *g, gboolean decoding, EmaOffloadShare *shares,
                             ShareSums *sums) {
  if (shares == g->offload_shares) {
    /* its own: the entries its last shares wrote, then its lenders' now, may be other than 0 */
    EMA_BITS_FOR_EACH (g->share_lenders, p->n, j)
      shares[j] = (EmaOffloadShare){0};
    memcpy(g->share_lenders, ema_slice_ledger_lenders(&p->core.ledger, g->index),
           p->words * sizeof *g->share_lenders);
  } else {
    memset(shares, 0, p->n * sizeof *shares);
  }
  memset(sums, 0, sizeof *sums);
  if (!decoding || g->remote_total == 0)
    return FALSE;
  FOR_EACH_LENDER (p, g, j)
    p->share_overlap[j] = 0;
  sums->block_tokens = g->engine ? ema_engine_block_tokens(g->engine) : EMA_KV_BLOCK_TOKENS;
  sums->cache = ema_pool_core_request(&p->core, g->index, EMA_KV_PREFIX_CACHE);
  sums->cache_remote = sums->cache && sums->cache->blocks > sums->cache->local;
  return TRUE;
}

/* The next place from J on that may hold blocks of a request of G whose
 * places mask (EmaPoolRequest.places) is LENDERS, or n: the mask's below
 * 64; past them, G's lenders (a block on j sits in slices j lends G), not
 * every place. */
static inline guint next_place(const Pool *p, const Gpu *g, guint64 lenders, guint j) {
  j = ema_pool_next_lender(lenders, j, p->n);
  return j < 64 ? j : next_lender(p, g, j);
}

/* Running request R of G's tenant into SHARES and SUMS: with an engine,
 * it says whether R decodes in the step and its context; without one
 * (the pool's benches, which time hand-made batches), every running
 * request decodes, its context all of its blocks (blocks x block tokens,
 * the newest block full) and none of them cached. R's own blocks on each
 * lender, its newest one's spare tokens out (at most a block's less one:
 * a lender with any of its blocks holds some of its tokens), go into
 * SHARES; its cached blocks go into SUMS (shares_finish() spreads them over
 * the cache's places), with, per lender that holds both, one request not
 * to count twice (Pool.share_overlap). A request whose own blocks are all
 * local only counts in SUMS. */
static void share_request(const Pool *p, const Gpu *g, const EmaPoolRequest *r, ShareSums *sums,
                          EmaOffloadShare *shares) {
  const EmaPoolRequest *cache = sums->cache;
  guint64 block_tokens = sums->block_tokens;
  gboolean own_remote = r->local < r->blocks, remote = FALSE;
  guint64 context, blocks, cached = 0, spare = 0, lenders;
  if (!own_remote && !sums->cache_remote)
    return; /* nothing on a lender */
  if (g->engine == NULL) {
    context = r->blocks * block_tokens;
  } else {
    if (r->engine_ref == NULL ||
        !ema_engine_ref_decoding(g->engine, r->engine_ref, &context, &blocks))
      return; /* not decoding in this step */
    cached = sums->cache_remote ? blocks - r->blocks : 0;
    /* the newest block holds what is left of the context past the full ones */
    spare = blocks * block_tokens > context ? blocks * block_tokens - context : 0;
  }
  if (!own_remote) {
    sums->cached_seqs += cached > 0;
    sums->cached_blocks += cached;
    return;
  }
  sums->remote_cached_seqs += cached > 0;
  sums->remote_cached_blocks += cached;
  /* the lenders holding its own blocks (the places of the others hold none) */
  lenders = r->places;
  if (g->index < 64)
    lenders &= ~(G_GUINT64_CONSTANT(1) << g->index);
  for (guint j = next_place(p, g, lenders, 0); j < p->n; j = next_place(p, g, lenders, j + 1)) {
    guint64 there = j == g->index ? 0 : ema_pool_request_at(r, j);
    if (there == 0)
      continue; /* none of its blocks there (a place past the mask's 64) */
    g_assert(r->last != j || spare < there * block_tokens);
    shares[j].seqs++;
    shares[j].context += (double) (there * block_tokens) - (r->last == j ? (double) spare : 0);
    shares[j].new_kv += r->last == j;
    p->share_overlap[j] += cached > 0 && ema_pool_request_at(cache, j) > 0;
    remote = TRUE;
  }
  sums->merged += remote;
}

/* SHARES with the cached blocks of SUMS (every decoding request's that
 * holds any: its share of each place of the cache's, a request counted once
 * at a lender that also holds its own blocks) and the lenders' busy flags;
 * returns u. */
static guint64 shares_finish(const Pool *p, const Gpu *g, const ShareSums *sums,
                             EmaOffloadShare *shares) {
  const EmaPoolRequest *cache = sums->cache;
  guint64 seqs = sums->cached_seqs + sums->remote_cached_seqs;
  guint64 blocks = sums->cached_blocks + sums->remote_cached_blocks;
  FOR_EACH_LENDER (p, g, j)
    if (seqs > 0 && ema_pool_request_at(cache, j) > 0) {
      shares[j].seqs += seqs - p->share_overlap[j];
      shares[j].context += (double) (blocks * sums->block_tokens) *
                           (double) ema_pool_request_at(cache, j) / (double) cache->blocks;
    }
  /* (shares_start cleared the other GPUs') */
  FOR_EACH_LENDER (p, g, j)
    shares[j].lender_busy = shares[j].seqs > 0 && ema_pool_core_running(&p->core, j) != NULL;
  return sums->merged + sums->cached_seqs;
}

/* offload_shares() from a walk of every running request: what the kept
 * lists and sums must give, bit for bit (EMA_POOL_CHECKS=all). */
static guint64 offload_shares_walked(Pool *p, Gpu *g, gboolean decoding, EmaOffloadShare *shares) {
  ShareSums sums;
  if (!shares_start(p, g, decoding, shares, &sums))
    return 0;
  for (const GList *l = ema_pool_core_running(&p->core, g->index); l; l = l->next)
    share_request(p, g, l->data, &sums, shares);
  return shares_finish(p, g, &sums, shares);
}

/* The sum over borrowers other than BORROWER of ARRAY[b * n + LENDER]
 * (the execution model's loads on a lender). */
static double exec_load(const Pool *p, const double *array, guint lender, guint borrower) {
  double sum = 0;
  for (guint b = 0; b < p->n; b++)
    if (b != borrower && b != lender)
      sum += array[b * p->n + lender];
  return sum;
}

/* The execution model's wait and run scale (offexec.h) of each lender's
 * partials of G's step into SHARES (nothing without one: offload.h's). Only
 * G's lenders hold any (offload_shares). */
static void exec_shares(const Pool *p, const Gpu *g, EmaOffloadShare *shares) {
  if (!p->exec)
    return;
  FOR_EACH_LENDER (p, g, j) {
    EmaOffloadLender lender;
    EmaOffloadExec x;
    if (shares[j].seqs == 0)
      continue;
    lender = (EmaOffloadLender){.busy = shares[j].lender_busy,
                                .lender_step_s =
                                    (double) p->gpus[j].last_step * 1e-9, /* its last step */
                                .lender_layers = p->gpus[j].layers,
                                .others_rho = exec_load(p, p->exec_rho, j, g->index),
                                .others_rho_s = exec_load(p, p->exec_rho_s, j, g->index)};
    x = ema_offexec_partial(&p->server->offload, &lender,
                            ema_offload_partial_alone_s(g->offload, &shares[j]), g->partial_draw,
                            p->server->gpu.offload_partial_slowdown);
    shares[j].wait_s = x.wait_s;
    shares[j].run_scale = x.run_scale;
  }
}

/* What each lender holds of the step of G's tenant (pool.h's
 * ema_pool_offload_shares) into SHARES[n]; returns u (all 0 unless
 * DECODING: a step with no decode offloads nothing). The requests with own
 * blocks on a lender are the core's remote-running list, each one's blocks
 * where they are, in the running list's order (so each lender's context
 * is summed in the order of a walk of every running request:
 * offload_shares_walked, the same bits). A request whose own blocks are
 * all local holds nothing on a lender unless the prefix cache does, and
 * then only its cached blocks' share on each place of the cache's: those
 * requests are counted together, from the engine's count of the step's
 * decoding requests that hold cached blocks (ema_engine_decode_cached) less
 * the ones walked (integer sums: exact in any order). A lender whose own
 * requests are running is busy (its partials are slowed by its steps).
 * O(requests with remote blocks + the step's tail + GPUs). */
static guint64 offload_shares(Pool *p, Gpu *g, gboolean decoding, EmaOffloadShare *shares) {
  ShareSums sums;
  guint64 merged;
  if (!shares_start(p, g, decoding, shares, &sums))
    return 0;
  for (const GList *l = ema_pool_core_remote_running(&p->core, g->index); l; l = l->next)
    share_request(p, g, l->data, &sums, shares);
  if (sums.cache_remote && g->engine) {
    guint64 seqs, blocks;
    ema_engine_decode_cached(g->engine, &seqs, &blocks);
    g_assert(seqs >= sums.remote_cached_seqs && blocks >= sums.remote_cached_blocks);
    sums.cached_seqs = seqs - sums.remote_cached_seqs;
    sums.cached_blocks = blocks - sums.remote_cached_blocks;
  }
  merged = shares_finish(p, g, &sums, shares);
  if (p->core.check_level == EMA_POOL_CHECK_ALL) {
    EmaOffloadShare *walked = g_newa(EmaOffloadShare, p->n);
    gboolean same = offload_shares_walked(p, g, decoding, walked) == merged;
    for (guint j = 0; same && j < p->n; j++)
      same = walked[j].seqs == shares[j].seqs && walked[j].new_kv == shares[j].new_kv &&
             walked[j].lender_busy == shares[j].lender_busy &&
             memcmp(&walked[j].context, &shares[j].context, sizeof(double)) == 0;
    if (!same)
      g_error("pool offload shares of gpu%u at %.9f s differ from a walk of its running requests",
              g->index, (double) ema_sim_now(p->sim) / 1e9);
  }
  exec_shares(p, g, shares);
  return merged;
}

guint64 ema_pool_offload_shares(EmaPool *pool, guint borrower, EmaOffloadShare *shares) {
  return offload_shares(&pool->pool, &pool->pool.gpus[borrower], TRUE, shares);
}

/* The step of G's tenant (BATCH) with the decode attention over the remote
 * KV in SHARES (each lender's, offload_shares(); MERGED their u) offloaded
 * to the lenders, its HBM slowed by SLOW (seconds), and the KV on the
 * lenders outside SHARES read by direct loads taking T_READ (one layer's,
 * ema_slice_ledger_remote_time; 0: none read). Its local work is the batch
 * with the offloaded context taken out of its decode context (hw/offload.h),
 * the KV it reads still in it (the attention kernel loads it over the link
 * beside its local reads, as a direct step's); simplification: the layer
 * waits for the remote partials against its local KV time without those
 * loads (conservative where they are exposed), and prefill chunks read
 * their KV as if local (a chunk attends mostly to its own tokens, computed
 * in the step; every ShareGPT prompt here is one chunk). 0 when G cannot
 * offload. */
static double offload_seconds(Pool *p, Gpu *g, const EmaStepBatch *batch, double slow,
                              const EmaOffloadShare *shares, guint64 merged, double t_read) {
  EmaStepBatch local = *batch;
  EmaStepBreakdown bd;
  EmaOffloadBreakdown ob;
  EmaPrefetchPlan direct = ema_prefetch_plan_start();
  double remote = 0;
  EmaTime local_ns;
  if (g->offload == NULL)
    return 0;
  FOR_EACH_LENDER (p, g, j)
    remote += shares[j].context;
  local.decode_context = MAX(0, batch->decode_context - remote);
  local_ns = ema_step_time(g->model, &local, &bd);
  ema_offload_step_time_over(g->offload, &bd, shares, p->n,
                             ema_slice_ledger_lenders(&p->core.ledger, g->index), merged, &ob);
  return step_seconds(p, g, &bd, local_ns, slow, t_read > 0, 0, t_read, &direct) +
         (double) ob.added / 1e9;
}

/* The share of lender J's HBM time that G's offloaded partials SHARE take
 * in a step of STEP ns (hw/offload.h r_j): a TP group lending serves them
 * on its ranks side by side, each rank over its heads' share of the
 * partials, so each rank's HBM time takes 1/t of it (the partials' compute
 * is timed as on one GPU: the conservative side). */
static double lender_share(const Pool *p, const Gpu *g, guint j, const EmaOffloadShare *share,
                           EmaTime step) {
  return ema_offload_lender_share(g->offload, share, step) /
         ema_slice_gpu_ranks(&p->gpus[j].counters);
}

/* Longest offloading step the lenders' cap is held by (s): beyond it, none of the cap is left. */
#define CAPPED_STEP_MAX_S 1e6
/* What is left of a cap below this share of it is none: the others' shares summed to the cap
 * leave a rounding error (5e-12 of a 1% cap made a step of four days). */
#define CAP_LEFT_ROUNDING 1e-9

/* The length of G's offloading step at which lender J serves SHARE (the
 * step's partials on it) within the cap CAP: on a lender with a tenant,
 * the cap less the other borrowers' current shares of its HBM time leaves
 * a_j (first come, first served: a borrower's share is fixed for its step);
 * the partials take L_j seconds of its HBM time (r_j x T', the same at any
 * step length), served at a_j in L_j / a_j (whole ns, rounded up, so that
 * r_j <= a_j). 0: none of the cap left (a_j <= 0, or so little that the
 * step would take over CAPPED_STEP_MAX_S); -1: J bounds nothing (no share,
 * no tenant, no cap). */
static double lender_capped_step(const Pool *p, const Gpu *g, guint j, const EmaOffloadShare *share,
                                 double cap) {
  double left, lender_s;
  if (cap >= 1 || j == g->index || share->seqs == 0 || !p->gpus[j].has_tenant)
    return -1;
  /* r_j at a step of one second is L_j in seconds */
  lender_s = lender_share(p, g, j, share, 1000 * 1000 * 1000);
  if (lender_s <= 0)
    return -1;
  left = cap - lender_offload_share(p, j, g->index);
  if (left <= cap * CAP_LEFT_ROUNDING || lender_s > left * CAPPED_STEP_MAX_S)
    return 0;
  return ceil(lender_s / left * 1e9) / 1e9;
}

/* An offloading step of G of SECONDS with its lenders held within the plan's
 * offload_cap: AT_CAP[j] is lender_capped_step() of lender j's partials
 * (read for G's lenders only: another GPU's would be -1)
 * (the same for any step that offloads the same share of it); a lender
 * marked in SKIP (may be NULL) takes none of the step. Where a lender's
 * partials would take more than its cap left, the step lengthens until it
 * serves them at it, the longest over the lenders. *BY: the lender that
 * sets it (G_MAXUINT: none; SECONDS stands). 0 when a lender holding some
 * of the step has none of the cap left (*BY the first such). */
static double offload_capped(const Pool *p, const Gpu *g, const double *at_cap,
                             const gboolean *skip, double seconds, guint *by) {
  double capped = seconds;
  *by = G_MAXUINT;
  if (seconds <= 0)
    return seconds;
  FOR_EACH_LENDER (p, g, j) {
    if (skip && skip[j])
      continue;
    if (at_cap[j] == 0) {
      *by = j;
      return 0;
    }
    if (at_cap[j] > capped) {
      capped = at_cap[j];
      *by = j;
    }
  }
  return capped;
}

/* Whether SHARE's KV may be read rather than offloaded because its
 * partials would wait (offexec.h): not under lender-first, where reading
 * would pull from a busy lender's HBM (interference_outgoing) and the
 * borrower pays the wait instead. */
static gboolean read_waiting(const Pool *p, const EmaOffloadShare *share) {
  return share->wait_s > 0 && p->server->offload.priority != EMA_OFFLOAD_PRIORITY_LENDER;
}

/* G's offloading step (BATCH, SLOW, MERGED as offload_seconds(); its whole
 * offload g->uncapped_s) with the KV on each lender whose cap would hold
 * the whole offload (AT_CAP[j], lender_capped_step(), 0 or above
 * g->uncapped_s), and under an execution model each lender whose partials
 * would wait (read_waiting(): a busy lender, or other borrowers' partials
 * queued there), read
 * by direct loads instead and the rest offloaded, at the cap
 * (offload_capped()); the lenders read into g->reads, the shares left in
 * g->read_shares (their u the merged requests, at least their largest
 * seqs and at most their sum), the time without the cap into
 * g->read_uncapped_s and the lender holding it into g->read_capped_by. 0
 * when no lender would hold the whole offload, or every lender of the step
 * would. The bytes read are the step's per lender (p->bytes_scratch, the
 * remote share of its KV split as its blocks are). */
static double offload_read_seconds(Pool *p, Gpu *g, const EmaStepBatch *batch, double slow,
                                   guint64 merged, const double *at_cap) {
  guint64 seqs = 0, largest = 0;
  guint read = 0, kept = 0;
  double t_read;
  /* off G's lenders nothing is read and no share kept (at_cap -1, no wait): the entries
   * written last time are cleared, then its lenders' written */
  EMA_BITS_FOR_EACH (g->read_lenders, p->n, j) {
    g->reads[j] = FALSE;
    g->read_shares[j] = (EmaOffloadShare){0};
  }
  memcpy(g->read_lenders, ema_slice_ledger_lenders(&p->core.ledger, g->index),
         p->words * sizeof *g->read_lenders);
  FOR_EACH_LENDER (p, g, j) {
    const EmaOffloadShare *share = &g->offload_shares[j];
    g->reads[j] = at_cap[j] == 0 || at_cap[j] > g->uncapped_s || read_waiting(p, share);
    g->read_shares[j] = g->reads[j] ? (EmaOffloadShare){0} : *share;
    p->read_scratch[j] = g->reads[j] ? p->bytes_scratch[j] : 0;
    read += g->reads[j];
    kept += share->seqs > 0 && !g->reads[j];
    seqs += g->read_shares[j].seqs;
    largest = MAX(largest, g->read_shares[j].seqs);
  }
  if (read == 0 || kept == 0)
    return 0;
  t_read = ema_slice_ledger_remote_time(&p->core.ledger, &g->counters, p->server, p->read_scratch,
                                        p->server->link.direct_read_bandwidth,
                                        ema_slice_gpu_ranks(&g->counters));
  g->read_uncapped_s =
      offload_seconds(p, g, batch, slow, g->read_shares, CLAMP(merged, largest, seqs), t_read);
  return offload_capped(p, g, at_cap, g->reads, g->read_uncapped_s, &g->read_capped_by);
}

/* G's offloading steps (BATCH, SLOW, MERGED as offload_seconds()) at the
 * lenders' cap CAP into VIEW: the whole offload's and the one reading the
 * KV on the lenders at their cap, or whose partials would wait
 * (offload_read_seconds()): a policy reading those (its plan's
 * offload_read) offloads to the idle lenders and reads the busy ones. */
static void time_offload(Pool *p, Gpu *g, const EmaStepBatch *batch, double slow, guint64 merged,
                         double cap, EmaStepCostView *view) {
  double *at_cap = p->cap_scratch;
  gboolean waits = FALSE; /* a lender's partials would wait for it (offexec.h) */
  g->capped_by = G_MAXUINT;
  view->step_offload_s = g->uncapped_s;
  view->step_offload_read_s = 0;
  if (p->exec)
    FOR_EACH_LENDER (p, g, j)
      waits = waits || read_waiting(p, &g->offload_shares[j]);
  if (g->uncapped_s <= 0 || (cap >= 1 && !waits))
    return; /* nothing offloads, or no lender is capped or makes it wait */
  /* (the other GPUs' would be -1: none reads them) */
  FOR_EACH_LENDER (p, g, j)
    at_cap[j] = cap < 1 ? lender_capped_step(p, g, j, &g->offload_shares[j], cap) : -1;
  view->step_offload_s = offload_capped(p, g, at_cap, NULL, g->uncapped_s, &g->capped_by);
  view->step_offload_read_s = offload_read_seconds(p, g, batch, slow, merged, at_cap);
}

/* G's step reading the KV on lenders at their cap (g->reads) and
 * offloading the rest: an offload-throttle event naming the first lender
 * read when that starts for it (one other than the last logged, or after
 * steps the cap left alone), at most once an EMA_POOL_LOG_PERIOD per
 * borrower, as count_capped(). */
static void note_read(Pool *p, Gpu *g) {
  EmaTime now = ema_sim_now(p->sim);
  char reason[EMA_POOL_REASON_CHARS];
  guint j = 0, others = 0;
  while (j < p->n && !g->reads[j])
    j++;
  g_assert(j < p->n);
  for (guint k = j + 1; k < p->n; k++)
    others += g->reads[k];
  if (j == g->throttled_by || now - g->throttled_at < EMA_POOL_LOG_PERIOD)
    return;
  g_snprintf(reason, sizeof reason,
             "offload cap: lender gpu%u at its cap %.3g%%, others %.3g%%; its KV read directly%s, "
             "the rest offloaded: step %.2f ms",
             j, g->plan.offload_cap * 100, lender_offload_share(p, j, g->index) * 100,
             others > 0 ? " (and more lenders')" : "", g->uncapped_s * 1e3);
  ema_pool_core_note(core_now(p), EMA_POOL_EVENT_OFFLOAD_THROTTLE, g->index, j, 0, 0, 0, 0, reason);
  g->throttled_by = j;
  g->throttled_at = now;
}

/* G's planned step (CAPPED_S: its offloaded time at the lenders' cap) as
 * the cap left it: an offloading step counted, and where g->capped_by held
 * it to the cap, the time that added (against g->uncapped_s); where the cap
 * held it to a lender or left it none there, an offload-throttle event when
 * that starts for this lender (one other than the last logged, or after
 * steps the cap left alone), at most once an EMA_POOL_LOG_PERIOD per
 * borrower (with lenders alike the binding one flaps from step to step). */
static void count_capped(Pool *p, Gpu *g, double capped_s) {
  guint j = g->capped_by;
  gboolean offloads = g->plan.mode == EMA_REMOTE_OFFLOAD;
  EmaTime now = ema_sim_now(p->sim);
  char reason[EMA_POOL_REASON_CHARS];
  double others;
  if (offloads)
    p->stats.offload_steps++;
  if (offloads && g->reading) {
    p->stats.offload_read_steps++;
    note_read(p, g);
  }
  if (j >= p->n) {
    if (offloads)
      g->throttled_by = G_MAXUINT;
    return;
  }
  if (offloads) {
    p->stats.offload_throttled_steps++;
    p->stats.offload_throttled += ns(capped_s) - ns(g->uncapped_s);
  }
  if (j == g->throttled_by || now - g->throttled_at < EMA_POOL_LOG_PERIOD)
    return;
  others = lender_offload_share(p, j, g->index);
  g_snprintf(reason, sizeof reason,
             "offload cap: lender gpu%u at its cap %.3g%%, others %.3g%%; "
             "wanted %.3g%%, ",
             j, g->plan.offload_cap * 100, others * 100,
             lender_share(p, g, j, &g->offload_shares[j], ns(g->uncapped_s)) * 100);
  if (capped_s <= 0)
    g_strlcat(reason, "none left: the step reads its remote KV", sizeof reason);
  else if (offloads)
    g_snprintf(reason + strlen(reason), sizeof reason - strlen(reason),
               "served %.3g%%: step %.2f ms, %.2f uncapped",
               lender_share(p, g, j, &g->offload_shares[j], ns(capped_s)) * 100, capped_s * 1e3,
               g->uncapped_s * 1e3);
  else /* what the cap would have made of it, however long: %g keeps 10^8 ms readable */
    g_snprintf(reason + strlen(reason), sizeof reason - strlen(reason),
               "served %.3g%%: step %.4g ms if offloaded, %.2f uncapped; not offloaded",
               lender_share(p, g, j, &g->offload_shares[j], ns(capped_s)) * 100, capped_s * 1e3,
               g->uncapped_s * 1e3);
  /* the time the cap added: none to a step that did not offload */
  ema_pool_core_note(core_now(p), EMA_POOL_EVENT_OFFLOAD_THROTTLE, g->index, j, 0, 0, 0,
                     offloads && capped_s > 0 ? capped_s - g->uncapped_s : 0, reason);
  g->throttled_by = j;
  g->throttled_at = now;
}

/* G's offloading step of STEP ns starts now: its lenders' shares of HBM
 * time (r_j) go into the ledger's row for the views and the lenders' steps. */
static void start_offload(Pool *p, Gpu *g, EmaTime step) {
  double *row = &p->core.ledger.offload_share[g->index * p->n];
  /* a row that expired (expire_offloads) is all 0 and in no lender's offload_to: only G's
   * lenders, those with a share, change it; one still running is written whole */
  for (guint j = g->offloading ? 0 : next_lender(p, g, 0); j < p->n;
       j = g->offloading ? j + 1 : next_lender(p, g, j + 1)) {
    row[j] = g->offload_shares[j].seqs > 0 && step > 0
                 ? lender_share(p, g, j, &g->offload_shares[j], step)
                 : 0;
    ema_bits_set(&p->core.ledger.offload_to[j * p->words], g->index, row[j] > 0);
  }
  ema_bits_set(p->offloaders, g->index, TRUE);
  for (guint j = 0; p->exec && j < p->n; j++) {
    double alone = ema_offload_partial_alone_s(g->offload, &g->offload_shares[j]);
    double rate = alone > 0 && step > 0 ? g->layers / ((double) step * 1e-9) : 0;
    p->exec_rate[g->index * p->n + j] = rate;
    p->exec_rho[g->index * p->n + j] = rate * alone;
    p->exec_rho_s[g->index * p->n + j] = rate * alone * alone;
  }
  ema_slice_gpu_touch(&g->counters); /* the view changed (offload_share) */
  g->offload_step = step;
  g->offload_until = ema_sim_now(p->sim) + step;
  p->offload_expiry = MIN(p->offload_expiry, g->offload_until);
  if (!g->offloading)
    p->offloading++;
  g->offloading = TRUE;
}

/* What the borrowers offloading to LENDER now add to its step of STEP ns:
 * its measured slowdown at their shares of its HBM time together (at most
 * the slowdown at the cap their plans set, offload_capped()), or the
 * execution model's at their partials' load on it (offexec.h). */
static EmaTime offload_extra(const Pool *p, guint lender, EmaTime step) {
  double share = lender_offload_share(p, lender, G_MAXUINT), slowdown;
  if (share <= 0)
    return 0;
  slowdown = ema_gpu_offload_slowdown(&p->server->gpu, share);
  if (p->exec)
    slowdown = ema_offexec_lender_slowdown(&p->server->offload,
                                           exec_load(p, p->exec_rho, lender, G_MAXUINT),
                                           exec_load(p, p->exec_rate, lender, G_MAXUINT), slowdown);
  return (EmaTime) ema_llround(slowdown * (double) step);
}

/* The prefetch policy's plan for the coming step of G (BATCH; its cost so
 * far in VIEW), with the step's modelled times in each way of reading its
 * remote KV added to the view; its offload events logged. */
static void plan_step(Pool *p, Gpu *g, const EmaStepBatch *batch, const EmaStepBreakdown *bd,
                      EmaTime all_local, double slow, double t_copy, double t_direct,
                      EmaStepCostView *view) {
  EmaPrefetchPlan previous = g->plan, direct = ema_prefetch_plan_start();
  guint64 merged;
  double cap = previous.offload_cap;
  view->step_local_s = step_seconds(p, g, bd, all_local, slow, FALSE, 0, 0, &direct);
  view->step_direct_s = step_seconds(p, g, bd, all_local, slow, TRUE, t_copy, t_direct, &direct);
  view->context_tokens = batch->decode_context;
  /* the step's draw of its partials' time (offexec.h), then its shares, for both offloaded
   * timings below and the lenders' charge after */
  g->partial_draw = p->rng ? ema_offexec_draw(&p->server->offload, gsl_ran_ugaussian(p->rng)) : 1;
  merged = g->offload ? offload_shares(p, g, batch->decode_seqs > 0, g->offload_shares) : 0;
  g->uncapped_s = -1;
  if (g->offload && batch->decode_seqs > 0) {
    /* the allowance is of the lender's time while this tenant decodes: a step made long by a
     * prefill chunk's compute reads the same KV no faster, and must not admit KV that the
     * decode steps after it would read too often. The bound is c_max at the step of the
     * decode alone, with offload (shorter than all-local: the conservative side). */
    EmaStepBatch decode = {.decode_seqs = batch->decode_seqs,
                           .decode_context = batch->decode_context,
                           .logits = batch->decode_seqs};
    double decode_s = offload_seconds(p, g, &decode, slow, g->offload_shares, merged, 0);
    view->offload_full_context =
        decode_s > 0 ? ema_offload_max_context(g->offload, 1, ns(decode_s)) : 0;
    if (memcmp(&decode, batch, sizeof decode) == 0)
      g->uncapped_s = decode_s; /* a step of decodes alone is that step */
  }
  if (g->uncapped_s < 0)
    g->uncapped_s = offload_seconds(p, g, batch, slow, g->offload_shares, merged, 0);
  /* the offloaded steps at the lenders' cap of the last plan; a plan with another cap that
   * changes them is asked for once more with the steps at its own (policy.h), and applied */
  time_offload(p, g, batch, slow, merged, cap, view);
  for (guint asked = 1;; asked++) {
    double whole = view->step_offload_s, read = view->step_offload_read_s;
    GError *error = NULL;
    if (!ema_pool_core_plan_prefetch(core_now(p), &g->counters, view, g->layers, &error))
      ema_sim_fail(p->sim, error); /* the run stops after this event, on the view as it was */
    if (g->plan.offload_cap == cap)
      break;
    cap = g->plan.offload_cap;
    time_offload(p, g, batch, slow, merged, cap, view);
    if ((view->step_offload_s == whole && view->step_offload_read_s == read) || asked == 2)
      break;
  }
  g->reading = g->plan.offload_read && view->step_offload_read_s > 0;
  if (g->reading) {
    /* the step offloads only the shares left: they are the ones the lenders are charged */
    memcpy(g->offload_shares, g->read_shares, p->n * sizeof *g->offload_shares);
    g->uncapped_s = g->read_uncapped_s;
    g->capped_by = g->read_capped_by;
    view->step_offload_s = view->step_offload_read_s;
  }
  if (g->plan.mode == EMA_REMOTE_OFFLOAD && view->step_offload_s <= 0) {
    /* a tenant that cannot offload, or whose lender has none of its cap left, reads its
     * remote KV directly */
    g->plan.mode = EMA_REMOTE_DIRECT;
    p->core.stats.plans_adjusted++;
  }
  count_capped(p, g, view->step_offload_s);
  ema_pool_core_plan_events(core_now(p), &g->counters, &previous, view);
}

/* ema_pool_step_time's step of a GPU that may read remote KV, be slowed or
 * offload (not inlined: the all-local step stays a test and a call). */
G_GNUC_NO_INLINE static EmaTime shared_step_time(Pool *p, Gpu *g, guint gpu,
                                                 const EmaStepBatch *batch) {
  EmaStepBreakdown bd;
  EmaTime all_local, step, extra;
  const EmaGpuSpec *spec = &p->server->gpu;
  double rate_m = spec->hbm_bandwidth * spec->hbm_efficiency;
  /* HBM rate taken by this GPU's own prefetch copies, and by peers' traffic */
  double own = spec->interference_incoming * g->incoming, peers = 0, slow, seconds;
  double *bytes = p->bytes_scratch;
  const guint64 *by = &p->pulled_by[gpu * p->words];
  double t_copy = 0, t_direct = 0;
  gboolean remote = FALSE, offload; /* the step reads remote KV; offloads its attention */
  EmaStepCostView view;

  all_local = ema_step_time(g->model, batch, &bd);
  if (all_local == 0 || all_local == EMA_TIME_NEVER)
    return all_local; /* EMA_TIME_NEVER: past the clock, which the engine reports */
  expire_offloads(p);
  /* the GPUs pulling from this one (another's term would be 0, the sum the same) */
  if (p->pulling > 0)
    EMA_BITS_FOR_EACH (by, p->n, b)
      if (ema_sim_now(p->sim) < p->gpus[b].pull_until)
        peers += spec->interference_outgoing * p->gpus[b].pull[gpu] /
                 ema_slice_gpu_ranks(&g->counters); /* a lending group's ranks share it */
  if (ema_sim_now(p->sim) < g->copy_until) {
    /* the copies still to run take their bytes' HBM time from this step: their rate while
     * they overlap it, spread over the step when they end before it does */
    EmaTime left = g->copy_until - ema_sim_now(p->sim);
    peers += g->copy_steal * (double) MIN(left, all_local) / (double) all_local;
  }
  slow = own + peers > 0 ? slowdown(rate_m, own + peers) : 1; /* slowdown(rate_m, 0) is 1 */
  if (g->pulled) {
    EMA_BITS_FOR_EACH (g->pulls_from, p->n, j) {
      g->pull[j] = 0;
      ema_bits_set(&p->pulled_by[j * p->words], gpu, FALSE);
    }
    memset(g->pulls_from, 0, p->words * sizeof *g->pulls_from);
    g->pulled = FALSE;
    ema_bits_set(p->pullers, gpu, FALSE);
    p->pulling--;
  }
  g->incoming = 0;
  if (g->remote_total > 0) {
    ema_slice_ledger_step_cost(&p->core.ledger, &g->counters, p->server, &bd, g->layers, slow,
                               bytes, &view, &t_copy, &t_direct);
    remote = view.remote_bytes > 0;
  }
  if (!remote && slow <= 1 && p->offloading == 0)
    return all_local; /* what step_seconds() gives, in whole ns (and no offload extra) */
  if (remote)
    plan_step(p, g, batch, &bd, all_local, slow, t_copy, t_direct, &view);
  offload = remote && g->plan.mode == EMA_REMOTE_OFFLOAD;
  seconds = offload ? view.step_offload_s
                    : step_seconds(p, g, &bd, all_local, slow, remote, t_copy, t_direct, &g->plan);
  step = slow > 1 ? MAX(ns(seconds), 1) : ns(seconds);
  /* (an offloading step's own slowdown by peers is not told apart: it is the borrower's) */
  if (peers > 0 && !offload)
    g->slowed_by_peers += step - ns(step_seconds(p, g, &bd, all_local, slowdown(rate_m, own),
                                                 remote, t_copy, t_direct, &g->plan));
  /* a lender serving offloaded attention: its own step lengthens (hw/offload.h) */
  extra = offload_extra(p, gpu, step);
  step += extra;
  g->slowed_by_peers += extra;
  if (!remote)
    return step;
  p->stats.remote_steps++;
  if (step > all_local)
    p->stats.exposed_remote += step - all_local;
  if (offload) {
    /* only queries and partials cross the link: no pulls of KV, but from the lenders whose KV
     * it reads */
    start_offload(p, g, step);
    if (!g->reading)
      return step;
    bytes = p->read_scratch;
  }
  if (g->plan.mode == EMA_REMOTE_PREFETCH)
    g->incoming = view.remote_bytes * g->layers / seconds;
  /* a lender's HBM serves all of a TP group's ranks (bytes[] are one rank's); its pulls are
   * all 0 here (cleared above), and 0 off its lenders */
  FOR_EACH_LENDER (p, g, j) {
    g->pull[j] = bytes[j] * ema_slice_gpu_ranks(&g->counters) * g->layers / seconds;
    if (g->pull[j] != 0) {
      ema_bits_set(g->pulls_from, j, TRUE);
      ema_bits_set(&p->pulled_by[j * p->words], gpu, TRUE);
    }
  }
  g->pull_until = ema_sim_now(p->sim) + step;
  g->pulled = TRUE;
  ema_bits_set(p->pullers, gpu, TRUE);
  p->pulling++;
  return step;
}

EmaTime ema_pool_step_time(EmaPool *pool, guint gpu, const EmaStepBatch *batch) {
  Pool *p = &pool->pool;
  Gpu *g = &p->gpus[gpu];
  /* nothing remote, nothing slowing it (no pulls, copies or prefetches), no step offloading
   * anywhere: the all-local time, what shared_step_time gives then, without its breakdown */
  if (g->remote_total == 0 && p->pulling == 0 && p->offloading == 0 && g->incoming == 0 &&
      ema_sim_now(p->sim) >= g->copy_until)
    return ema_step_time(g->model, batch, NULL);
  return shared_step_time(p, g, gpu, batch);
}

void ema_pool_after_step(EmaPool *pool, guint gpu, const EmaStepReport *report) {
  Pool *p = &pool->pool;
  Gpu *g = &p->gpus[gpu];
  EmaTime now = ema_sim_now(p->sim);
  guint64 used = g->local_used + g->remote_total;
  for (guint move = 0; p->tier_per_step && move < G_N_ELEMENTS(g->tier_held); move++)
    flush_tier(p, g, move);
  if (g->running != report->running || g->waiting != report->waiting ||
      g->last_step != report->duration || g->blocks_short < report->blocks_short) {
    g->running = report->running;
    g->waiting = report->waiting;
    g->last_step = report->duration;
    g->blocks_short = MAX(g->blocks_short, report->blocks_short);
    ema_slice_ledger_note_step(&p->core.ledger, &g->counters);
  }
  ema_slice_gpu_update_demand(&g->counters, now, used);
  /* the policies run after a step that lacked blocks, and otherwise at
   * most once per decision period (a want() during scheduling has its own
   * event, as it comes from inside the engine); a periodic decision of a
   * GPU that lends nothing under a borrow policy that never acts would do
   * nothing, and is skipped */
  if (decides(g) &&
      (g->blocks_short > 0 ||
       ((!p->core.policies[EMA_POLICY_BORROW]->never_acts || g->lent_total > 0) &&
        ema_pool_core_periodic_due(core_at(p, now), &g->counters))) &&
      !ema_event_is_scheduled(&g->decide_event))
    decide_now(g, core_at(p, now));
}

/* ---- requests -------------------------------------------------------------------- */

/* EmaPoolCore.describe: what the engine knows of a request's view. */
static void describe_request(gpointer data, guint gpu, EmaPoolRequest *r, EmaRequestView *view) {
  Pool *p = data;
  Gpu *g = &p->gpus[gpu];
  const EmaRequest *request;
  if (g->engine == NULL || r->request == EMA_KV_PREFIX_CACHE)
    return;
  /* looked up once and kept (a view describes every request at each look) */
  if (r->engine_ref == NULL)
    r->engine_ref = ema_engine_request_ref(g->engine, r->request);
  if (r->engine_ref == NULL)
    return;
  request = ema_engine_ref_request(g->engine, r->engine_ref, &view->last_scheduled);
  view->context_tokens = request->kv_tokens;
  view->remaining_tokens = (gint64) request->output_tokens - (gint64) request->generated;
}

/* ---- set-up, figures, checks ----------------------------------------------------- */

/* Each request's blocks in the ledger are those its engine gives it, and
 * the prefix cache's the cached blocks requests hold. */
static gboolean check_requests(const EmaPoolCore *core, const Gpu *g, GError **error) {
  for (const GList *l = ema_pool_core_requests(core, g->index); l; l = l->next) {
    const EmaPoolRequest *r = l->data;
    guint64 engine = r->request == EMA_KV_PREFIX_CACHE
                         ? ema_engine_cached_held(g->engine)
                         : ema_engine_request_own_blocks(g->engine, r->request);
    if (r->blocks != engine) {
      g_set_error(error, EMA_POLICY_ERROR, EMA_POLICY_ERROR_INVALID,
                  "gpu%u: request %" G_GUINT64_FORMAT " holds %" G_GUINT64_FORMAT
                  " blocks in the pool, %" G_GUINT64_FORMAT " in its engine",
                  g->index, r->request, r->blocks, engine);
      return FALSE;
    }
  }
  return TRUE;
}

/* The lenders' bound (policy.h offload_cap): on a lender with a tenant, the
 * offloading steps running now take together at most the largest cap their
 * plans set (up to rounding). O(GPUs^2) while a step offloads, else O(1). */
static gboolean check_offload_caps(const Pool *p, GError **error) {
  EmaTime now = ema_sim_now(p->sim);
  for (guint j = 0; p->offloading > 0 && j < p->n; j++) {
    double share = lender_offload_share(p, j, G_MAXUINT), cap = 0;
    if (!p->gpus[j].has_tenant || share <= 0)
      continue;
    for (guint b = 0; b < p->n; b++) {
      const Gpu *g = &p->gpus[b];
      if (b != j && g->offloading && now < g->offload_until &&
          p->core.ledger.offload_share[b * p->n + j] > 0)
        cap = MAX(cap, g->plan.offload_cap);
    }
    if (share > cap * (1 + 1e-9)) {
      g_set_error(error, EMA_POLICY_ERROR, EMA_POLICY_ERROR_INVALID,
                  "gpu%u: offloaded attention takes %.9g of its HBM time, above its cap %.9g", j,
                  share, cap);
      return FALSE;
    }
  }
  return TRUE;
}

/* The lenders' offload caps hold, the engines' blocks are the ledger's,
 * and (EMA_POOL_CHECKS=all) every request's blocks are its engine's. */
static gboolean check_engines(const EmaPoolCore *core, gpointer data, GError **error) {
  const Pool *p = data;
  if (!check_offload_caps(p, error))
    return FALSE;
  for (guint i = 0; i < p->n; i++) {
    const Gpu *g = &p->gpus[i];
    if (g->engine == NULL)
      continue;
    if (ema_engine_blocks_held(g->engine) != g->local_used + g->remote_total) {
      g_set_error(error, EMA_POLICY_ERROR, EMA_POLICY_ERROR_INVALID,
                  "gpu%u: its engine holds %" G_GUINT64_FORMAT
                  " blocks, the pool counts %" G_GUINT64_FORMAT,
                  i, ema_engine_blocks_held(g->engine), g->local_used + g->remote_total);
      return FALSE;
    }
    /* walking every request is for the checked builds; a sampled check stays O(GPUs) */
    if (core->check_level == EMA_POOL_CHECK_ALL && !check_requests(core, g, error))
      return FALSE;
    if (core->check_level == EMA_POOL_CHECK_ALL &&
        ema_engine_request_blocks(g->engine) != ema_engine_blocks_held(g->engine)) {
      g_set_error(error, EMA_POLICY_ERROR, EMA_POLICY_ERROR_INVALID,
                  "gpu%u: its requests hold %" G_GUINT64_FORMAT
                  " blocks, its engine counts %" G_GUINT64_FORMAT,
                  i, ema_engine_request_blocks(g->engine), ema_engine_blocks_held(g->engine));
      return FALSE;
    }
    if (core->check_level == EMA_POOL_CHECK_ALL && ema_policy_spec_parks_on_peers(p->spec)) {
      /* the KV parked on peers and host is its waiting requests' swapped-out KV, no more */
      guint64 parked = g->parked_host;
      for (guint j = 0; j < p->n; j++)
        parked += g->parked[j];
      if (parked != ema_engine_swapped_blocks(g->engine)) {
        g_set_error(error, EMA_POLICY_ERROR, EMA_POLICY_ERROR_INVALID,
                    "gpu%u: %" G_GUINT64_FORMAT " blocks of its KV are parked, its waiting "
                    "requests swapped out %" G_GUINT64_FORMAT,
                    i, parked, ema_engine_swapped_blocks(g->engine));
        return FALSE;
      }
    }
  }
  return TRUE;
}

EmaPool *ema_pool_new(EmaSim *sim, const EmaServerSpec *server, const EmaPolicySpec *policy,
                      GError **error) {
  EmaPool *pool = g_new0(EmaPool, 1);
  Pool *p = &pool->pool;
  p->sim = sim;
  p->server = server;
  p->spec = policy;
  p->n = (guint) server->gpus;
  p->gpus = g_new0(Gpu, p->n);
  p->bytes_scratch = g_new0(double, p->n);
  p->read_scratch = g_new0(double, p->n);
  p->cap_scratch = g_new0(double, p->n);
  p->share_overlap = g_new0(guint64, p->n);
  p->words = (p->n + 63) / 64;
  p->pullers = g_new0(guint64, p->words);
  p->pulled_by = g_new0(guint64, (gsize) p->n * p->words);
  p->offloaders = g_new0(guint64, p->words);
  p->pending = g_ptr_array_new();
  p->exec = server->offload.execution != EMA_OFFLOAD_EXEC_MPS ||
            server->offload.priority != EMA_OFFLOAD_PRIORITY_EQUAL ||
            server->offload.partial_p90 > 1;
  if (p->exec) {
    p->exec_rho = g_new0(double, (gsize) p->n * p->n);
    p->exec_rho_s = g_new0(double, (gsize) p->n * p->n);
    p->exec_rate = g_new0(double, (gsize) p->n * p->n);
  }
  if (server->offload.partial_p90 > 1) {
    p->rng = gsl_rng_alloc(gsl_rng_mt19937);
    gsl_rng_set(p->rng, 0);
  }
  for (guint i = 0; i < p->n; i++) {
    Gpu *g = &p->gpus[i];
    ema_slice_gpu_setup(&g->counters, i, p->n);
    g->pool = p;
    g->parked = g_new0(guint64, p->n);
    g->pull = g_new0(double, p->n);
    g->pulls_from = g_new0(guint64, p->words);
    g->offload_shares = g_new0(EmaOffloadShare, p->n);
    g->share_lenders = g_new0(guint64, p->words);
    g->reads = g_new0(gboolean, p->n);
    g->read_shares = g_new0(EmaOffloadShare, p->n);
    g->read_lenders = g_new0(guint64, p->words);
    g->capped_by = g->read_capped_by = g->throttled_by = G_MAXUINT;
    g->partial_draw = 1;
    g->throttled_at = G_MININT64 / 2; /* never */
    ema_event_init(&g->decide_event, on_decide, g);
  }
  if (!ema_pool_core_init(&p->core, p->n, server, policy, &sim_backend, p, error)) {
    ema_pool_free(pool);
    return NULL;
  }
  for (guint i = 0; i < p->n; i++)
    p->core.ledger.gpus[i] = &p->gpus[i].counters;
  p->core.clock = sim_clock;
  p->core.clock_data = p;
  p->core.owner_check = check_engines;
  p->core.owner_data = p;
  p->core.describe = describe_request;
  return pool;
}

gboolean ema_pool_start(EmaPool *pool, GError **error) {
  return ema_pool_core_start(core_now(&pool->pool), error);
}

void ema_pool_free(EmaPool *pool) {
  Pool *p;
  if (pool == NULL)
    return;
  p = &pool->pool;
  for (guint i = 0; i < p->n; i++) {
    Gpu *g = &p->gpus[i];
    ema_sim_cancel(p->sim, &g->decide_event);
    ema_slice_gpu_clear(&g->counters);
    g_free(g->parked);
    g_free(g->pull);
    g_free(g->pulls_from);
    g_free(g->offload_shares);
    g_free(g->share_lenders);
    g_free(g->reads);
    g_free(g->read_shares);
    g_free(g->read_lenders);
    g_free(g->offload_error);
    ema_offload_model_free(g->offload);
  }
  for (guint i = 0; p->pending && i < p->pending->len; i++) {
    Pending *pending = p->pending->pdata[i];
    ema_sim_cancel(p->sim, &pending->event);
    g_free(pending);
  }
  g_clear_pointer(&p->pending, g_ptr_array_unref); /* NULL when the core failed to start */
  g_free(p->gpus);
  g_free(p->exec_rho);
  g_free(p->exec_rho_s);
  g_free(p->exec_rate);
  if (p->rng)
    gsl_rng_free(p->rng);
  ema_pool_core_clear(&p->core);
  g_free(p->bytes_scratch);
  g_free(p->read_scratch);
  g_free(p->cap_scratch);
  g_free(p->share_overlap);
  g_free(p->pullers);
  g_free(p->pulled_by);
  g_free(p->offloaders);
  g_free(pool);
}

guint64 ema_pool_lendable_slices(guint64 slices, double lend_limit) {
  return (guint64) floor(CLAMP(lend_limit, 0, 1) * (double) slices);
}

void ema_pool_set_sharing(EmaPool *pool, guint gpu, gboolean lend, gboolean borrow,
                          double lend_limit) {
  Gpu *g = &pool->pool.gpus[gpu];
  g->lend_off = !lend;
  g->borrow_off = !borrow;
  g->lend_keep = g->slices - ema_pool_lendable_slices(g->slices, lend_limit);
  ema_slice_gpu_refresh(&g->counters); /* what it lends, and its view entry */
  ema_slice_gpu_touch(&g->counters);
}

void ema_pool_add_idle_gpu(EmaPool *pool, guint gpu, guint64 slices) {
  Gpu *g = &pool->pool.gpus[gpu];
  g->present = g->shares = TRUE;
  g->slices = slices;
  ema_slice_gpu_refresh(&g->counters);
}

EmaKvMemory ema_pool_add_tenant(EmaPool *pool, guint gpu, guint64 slices, guint64 block_bytes,
                                const EmaStepModel *step_model) {
  Gpu *g = &pool->pool.gpus[gpu];
  guint tp = ema_step_model_tp(step_model);
  g->present = g->has_tenant = g->shares = TRUE;
  /* a TP group is one record: its ranks' regions together, a block all its shards (ledger.h) */
  g->ranks = tp;
  g->slices = slices * tp;
  g->block_bytes = block_bytes * tp;
  g->model = step_model;
  g->layers = (guint) ema_step_model_layers(step_model);
  ema_slice_gpu_refresh(&g->counters);
  return (EmaKvMemory){ema_policy_spec_parks_on_peers(pool->pool.spec) ? &pool_memory_ops_peer_swap
                                                                       : &pool_memory_ops,
                       g};
}

void ema_pool_set_offload_model(EmaPool *pool, guint gpu, const EmaLlmSpec *model) {
  Gpu *g = &pool->pool.gpus[gpu];
  GError *error = NULL;
  g_return_if_fail(g->has_tenant && g->offload == NULL && g->offload_error == NULL);
  /* a TP group's: the lender computes every rank's partials (hw/offload.h) */
  if ((g->offload = ema_offload_model_new_group(model, pool->pool.server,
                                                ema_slice_gpu_ranks(&g->counters), &error)) == NULL)
    g->offload_error = g_strdup(error->message);
  g_clear_error(&error);
}

const char *ema_pool_offload_unavailable(const EmaPool *pool, guint gpu) {
  const Gpu *g = &pool->pool.gpus[gpu];
  return g->offload ? NULL : g->offload_error ? g->offload_error : "no model of its tenant given";
}

void ema_pool_set_engine(EmaPool *pool, guint gpu, EmaEngine *engine) {
  pool->pool.gpus[gpu].engine = engine;
}

const EmaPoolStats *ema_pool_stats(const EmaPool *pool) {
  /* the counters are the core's; the step figures and waits the pool's own */
  EmaPoolStats *stats = (EmaPoolStats *) &pool->pool.stats;
  const EmaPoolCoreStats *core = &pool->pool.core.stats;
  stats->borrows = core->borrows;
  stats->slices_borrowed = core->slices_borrowed;
  stats->returns = core->returns;
  stats->slices_returned = core->slices_returned;
  stats->reclaims = core->reclaims;
  stats->slices_reclaimed = core->slices_reclaimed;
  stats->blocks_migrated = core->blocks_migrated;
  stats->blocks_to_host = core->blocks_to_host;
  stats->blocks_dropped = core->blocks_dropped;
  stats->plans_adjusted = core->plans_adjusted;
  stats->placements = core->placements;
  stats->blocks_placed = core->blocks_placed;
  return stats;
}

const EmaPoolView *ema_pool_view(EmaPool *pool) {
  return build_view(&pool->pool);
}

const EmaPoolRequest *ema_pool_request(const EmaPool *pool, guint gpu, guint64 serial) {
  return ema_pool_core_request(&pool->pool.core, gpu, serial);
}

guint64 ema_pool_slices_lent(const EmaPool *pool, guint gpu) {
  return pool->pool.gpus[gpu].lent_total;
}

guint64 ema_pool_slices_borrowed(const EmaPool *pool, guint gpu) {
  return pool->pool.gpus[gpu].borrowed_total;
}

guint64 ema_pool_blocks_remote(const EmaPool *pool, guint gpu) {
  return pool->pool.gpus[gpu].remote_total;
}

guint64 ema_pool_slices_staging(const EmaPool *pool, guint gpu) {
  return pool->pool.gpus[gpu].staging;
}

void ema_pool_set_seed(EmaPool *pool, guint64 seed) {
  g_return_if_fail(pool != NULL);
  if (pool->pool.rng)
    gsl_rng_set(pool->pool.rng, (unsigned long) (seed ^ (seed >> 32)));
}

EmaTime ema_pool_slowed_by_peers(const EmaPool *pool, guint gpu) {
  return pool->pool.gpus[gpu].slowed_by_peers;
}

void ema_pool_set_event_sink(EmaPool *pool, void (*sink)(gpointer data, const EmaPoolEvent *event),
                             gpointer data, guint32 kinds) {
  pool->pool.core.on_event = sink;
  pool->pool.core.on_event_data = data;
  pool->pool.core.on_event_kinds = kinds;
}

gboolean ema_pool_check(const EmaPool *pool, GError **error) {
  return ema_pool_core_check(&pool->pool.core, error);
}
