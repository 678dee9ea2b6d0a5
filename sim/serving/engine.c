/* engine.c: the vLLM-like serving engine (see engine.h).
 *
 * Token accounting. A request has S = prompt + generated known tokens and
 * kv_tokens of them in the KV cache. Each step it is scheduled for, it
 * processes chunk = min(S - kv_tokens, budget) tokens; when that brings
 * kv_tokens to S, the step samples one new token (generated += 1). So a new
 * request prefills its prompt in chunks, its last prefill step yields the
 * first token, and every later step is a decode step of one token (a chunk
 * of one token counts as a decode only once the request has generated). A
 * request is finished when generated == output_tokens. After a recompute
 * preemption kv_tokens = 0 and the request prefills prompt + generated
 * tokens again. A step needs ceil((kv_tokens + chunk) / B) blocks, B the
 * block size (block_tokens, 16 by default). A step lasts the step cost
 * (GPU; where the step runs eagerly, not from a CUDA graph, at least the
 * host's eager launch time, eager_cpu_cost) + its CPU time (step_cpu_cost +
 * step_cpu_cost_per_seq per request scheduled; under cpu_overlap, async
 * scheduling, the longer of the GPU and the CPU time instead of their sum;
 * output processing that runs beside the next step, output_cpu_cost, only
 * where it outlasts the GPU) + any swap time (ema_engine_step_duration).
 * Under cpu_overlap the
 * engine schedules a step while the one before runs (vLLM's async
 * scheduling): a request that arrived after that step began is admitted one
 * step later, unless the step would otherwise be empty. A request becomes
 * schedulable request_cpu_cost after its arrival (the API server's work),
 * its latencies measured from the arrival itself.
 *
 * Scheduling one step (as vLLM v1): running requests first, oldest first;
 * if one needs a block and none is free, the newest running request is
 * preempted (its blocks freed) until the block fits or the request itself is
 * the newest, in which case it is preempted too. Then, unless something was
 * preempted in this step, waiting requests are admitted in FCFS order while
 * max_num_seqs, the token budget and the watermark allow. Preempted requests
 * go to the front of the waiting queue. In swap mode a preempted request's
 * KV goes to host and comes back when it is admitted again; both copies are
 * charged to the step (host link, swap_fixed_cost + bytes / bandwidth each).
 * A request whose prompt + output can never fit in the memory's total, or
 * exceeds max_model_len, is rejected on arrival. A step starts once every
 * arrival of its instant is queued (the kick event runs after the arrivals
 * of the same time). V0 (EMA_SCHEDULER_V0): admission comes first, and a
 * step that admitted anything holds prefills only; the steady region is
 * not scheduled in it and its clock does not advance.
 *
 * Closed loop (concurrency N): the next trace record is fetched when fewer
 * than N requests are in the engine (arrived, not finished or rejected) and
 * arrives when its client became free: every client at the start, then at
 * the finish, rejection or timeout of its last request. Clients free together send
 * together (the API server takes them side by side).
 *
 * Client timeouts (client_timeout T): a request still in the engine T after
 * its arrival is aborted at the next scheduling pass (a step in flight runs
 * to its end first); an idle engine wakes at its oldest request's deadline.
 * Arrivals come in serial order, so deadlines do too: a cursor over the
 * serials finds the expired ones, each serial looked at once.
 *
 * Prefix caching (as vLLM's, with counted blocks). Every full prompt block
 * of a request may be cached. Those of its identified prefix have hashes
 * chained from the first (compute_hashes), by the prefix's ids: shared with
 * other requests, each one an entry of a hash table. The rest are the
 * request's own: only the request itself can hit them, when it is admitted
 * again after a recompute preemption (as vLLM's preempted requests find
 * their freed blocks still cached), so they are not hashed but counted, as
 * the request's run (Run): how many of its leading own blocks are cached,
 * how many of those it holds, and its free ones as one counted entry of
 * local room's eviction queue (and one of the tier's, the older part, once
 * some are demoted), which a queue's head gives up block by block, last
 * block first; a run outlives its request while it has free blocks, which
 * are evicted in their turn. Everything seen outside (the memory's takes,
 * gives, to_cache calls and tier moves, the evictions, their order) is as
 * with one hashed block each, but the hash table and the queues cost
 * O(identified blocks) per request plus O(1) for its own ones (the memory
 * still gets a take per revived block; the blocks one registration pass
 * caches go to it in one to_cache). At admission (not of a swapped-out request) the
 * leading blocks found in the cache, at most all but the last known token, are taken by reference
 * (kv_tokens starts after them; its own cached blocks count only past all of its identified ones);
 * a cached block no request holds is free in the memory, so taking it back takes one block from the
 * memory. Blocks a request fills become cached as they fill, until one is
 * found cached already. When a request lets go, a block others still hold
 * stays taken; one nobody holds goes back to the memory but stays cached,
 * last in the eviction order (a request's blocks tail first). After any
 * take, while more cached blocks are free than the memory has free blocks,
 * the least recently freed is evicted. Simplification: the memory's free blocks that
 * hold nothing cached are always used before cached ones (vLLM keeps one
 * LRU queue over all free blocks, so it may evict an old cached block
 * while a more recently freed uncached one is left); only prompt blocks
 * are hashed (vLLM hashes the generated tokens' full blocks too: a
 * preempted request here recomputes its generated tokens' KV).
 * With a memory that has cache_room (the elastic pool), free cached blocks
 * live in two LRU queues: local room (the most recently freed) and the
 * remote tier (borrowed room): when local room is taken the oldest local
 * ones are demoted to the tier while it has room (else dropped), the
 * tier's oldest are dropped while it is over its room (checked after every
 * take and at the start of each scheduling pass: a reclaim may have taken
 * it), and a hit on a tier block is fetched back, its copy added to the
 * step. Simplification: a freed cached block joins local room wherever its
 * data was.
 *
 * Names. Every take and give names its request (its serial) or the prefix
 * cache (EMA_KV_PREFIX_CACHE): a request's blocks are its own until one it
 * filled becomes cached (to_cache), a revived cached block is taken by the
 * cache, and a block nobody holds any more is given back by the cache. The
 * steady region's needing requests are named one by one (take_each, from
 * per-phase arrays of serials) only when the memory asks for names.
 *
 * How a step is computed without walking the batch. The running requests
 * form one list in admission order (the scheduling order). It is split in
 * two: a prefix, the steady region, and the rest, the tail.
 *
 * - A steady request decodes one token every step: it has generated, its KV
 *   holds all but the last sampled token, and it is scheduled every step
 *   (the region is a prefix and the budget covers it). Its kv_tokens and
 *   generated are not stored: they are kv0 + (clock - t0) and gen0 + (clock
 *   - t0), where clock counts completed steps and t0 is the step at which
 *   it joined. The region keeps only running sums: D requests, the sum of
 *   kv0 - t0 (so the decode context of a step is that sum + D x clock + D),
 *   and, per phase (kv0 - t0) mod B, how many of them there are: at a step
 *   exactly the phase whose kv_tokens is a multiple of B needs one new
 *   block each (and, for ema_engine_decode_cached, how many hold cached
 *   blocks and how many they hold). Their finishing steps are in a binary heap keyed by (step
 *   of the last token, admission order).
 * - The tail is walked request by request, exactly as the plain algorithm
 *   does: partly prefilled requests, requests just admitted, stalled ones
 *   the budget did not reach. The walk stops when the budget is spent, so
 *   it touches at most one request that does not change state.
 *
 * The region never outgrows the token budget (it only gains requests that
 * were scheduled in the step before, each with at least one token of it),
 * so the plain walk always gets through the whole region. A step, in order:
 * 1. If the free blocks cover the needing phase (n_c requests), one bulk
 *    take of n_c blocks (O(1)). Otherwise preemption starts inside the
 *    region: victims are taken newest first from the end of the running
 *    list, and with s = free + blocks freed so far, the region's first s
 *    needing requests are served, so the front is the (s+1)-th; the walk
 *    preempts until s covers every needing request left, or the victim is
 *    the front itself (it preempts itself and the step's walk ends). Cost
 *    O(log n) per victim; the region is never walked.
 * 2. The region's sums go into the batch (O(1)); the tail is walked (plain
 *    algorithm, its own preemptions); then admission (plain algorithm).
 * 3. When the step completes: clock += 1 advances the whole region (O(1));
 *    the tail's chunks are applied one by one; the heap gives the region's
 *    finishing requests (O(log n) each), which are finished before the
 *    tail's, both in admission order; tail requests that completed their
 *    chunk and now decode join the region at its end (O(log n) each).
 * So a step where nothing joins, leaves, finishes or is preempted costs
 * O(1) plus at most one partially prefilled tail request, whether or not
 * requests cross a block boundary in it; each request event costs
 * O(log n). The only O(batch) pass is the rejection
 * sweep after the memory's total shrank (below). Blocks short (engine.h)
 * costs a walk of the tail up to the budget, only in steps that preempt.
 * ema_engine_work_counter() counts the requests touched one by one.
 *
 * The outcome is identical to walking every running request every step
 * (tests/engine/engine-reference.c is that walk, kept as a test oracle):
 * same blocks taken and freed (the region's in one call per step), same
 * preemption victims in the same order, same batch sums (all sums are
 * integers, exact in a double below 2^53), same finishing order.
 *
 * Releasing blocks (ema_engine_release_blocks) preempts the newest running
 * requests, in the configured mode, until enough blocks came back. Between
 * steps (idle, or from an observer while a step completes) requests that
 * have just produced their last token are skipped: they are about to give
 * their blocks back anyway. During a step, a victim's work in that step is
 * dropped: the blocks it took for the step are freed with the rest, its
 * chunk is not applied when the step completes and it does not finish
 * there; in swap mode it copies out only the KV it had before the step.
 * The swap-out time is added to the next step that starts (the mode may
 * differ from the configured one: ema_engine_release_blocks_mode). These count as
 * preemptions (per request and in total) and in the next step report's
 * released field, not in its preempted field.
 *
 * When the memory's total shrinks (an elastic owner took blocks back), a
 * request whose prompt + output no longer fits the new total is rejected,
 * as on arrival (counted by ema_engine_rejected, not passed to on_finish):
 * running ones at the next scheduling (a sweep of the running list, only
 * when the total is seen lower than before), waiting ones when they reach
 * the head of the queue. A step whose requests all preempted themselves
 * (possible only when the memory is shared or shrank) schedules another
 * scheduling pass at the same instant rather than idling with work queued.
 *
 * Invariants: blocks held by requests, a cached block shared by several
 * once, == blocks taken from the memory (blocks_held); a running request
 * holds exactly ceil(kv_tokens / B) blocks between steps, its first
 * `registered` of them cache blocks it holds a reference on, and
 * ceil((kv_tokens + chunk) / B) while its step is in flight (a swapped-out
 * request holds none on the GPU); a cached block with no reference is in
 * the eviction queue, and there are never more of those than free blocks
 * in the memory after a take; the steady
 * region is a prefix of the running list and every member of it is in
 * every step; time only moves forward. */
#include "ema/serving/engine.h"

#include "ema/core/idmap.h"
#include "ema/core/options.h"

/* ---- the fixed KV pool (static partition) ------------------------------ */

struct _EmaKvPool {
  guint64 total, used;
};

/* The fixed pool keeps no requests apart: REQUEST is not looked at. */
static gboolean pool_take(gpointer self, guint64 request, guint64 n) {
  EmaKvPool *pool = self;
  if (pool->total - pool->used < n)
    return FALSE;
  pool->used += n;
  return TRUE;
}

static void pool_give(gpointer self, guint64 request, guint64 n) {
  EmaKvPool *pool = self;
  g_assert_cmpuint(n, <=, pool->used);
  pool->used -= n;
}

static guint64 pool_free_blocks(gpointer self) {
  EmaKvPool *pool = self;
  return pool->total - pool->used;
}

static guint64 pool_total_blocks(gpointer self) {
  return ((EmaKvPool *) self)->total;
}

static const EmaKvMemoryOps pool_ops = {.take = pool_take,
                                        .give = pool_give,
                                        .free_blocks = pool_free_blocks,
                                        .total_blocks = pool_total_blocks};

EmaKvPool *ema_kv_pool_new(guint64 blocks) {
  EmaKvPool *pool = g_new0(EmaKvPool, 1);
  pool->total = blocks;
  return pool;
}

void ema_kv_pool_free(EmaKvPool *pool) {
  g_free(pool);
}

EmaKvMemory ema_kv_pool_memory(EmaKvPool *pool) {
  return (EmaKvMemory){&pool_ops, pool};
}

/* ---- the engine -------------------------------------------------------- */

typedef enum {
  REQ_WAITING,   /* in the waiting queue */
  REQ_TAIL,      /* running, after the steady region: walked one by one */
  REQ_STEADY,    /* running, in the steady region: state derived from clock */
  REQ_FINISHING, /* produced its last token in the step being completed */
} ReqState;

/* A request and the engine's bookkeeping around it. */
typedef struct {
  EmaRequest pub; /* what observers see (materialised before they do) */
  GList link;     /* in the waiting or the running list; data = this */
  ReqState state;
  gboolean in_batch; /* a tail request scheduled in the current step */
  guint32 chunk;     /* its tokens in that step */
  guint64 seq;       /* admission order: the running list is sorted by it */
  /* steady region: kv_tokens = kv0 + clock - t0, generated = gen0 + clock - t0 */
  guint64 t0, finish_at; /* finish_at: clock value after its last token */
  guint32 kv0, gen0;
  guint phase;     /* (kv0 - t0) mod block_tokens */
  guint heap_slot; /* 1 + index in the finish heap, 0 if not in it */
  /* prefix caching: the hashes of the prompt's first n_ident full blocks
   * (those of its identified prefix), how many of its full blocks may be
   * cached (n_hashes: the identified ones, then its own), how many of its
   * leading blocks are cache blocks it holds a reference on, and the run of
   * its own cached blocks (NULL until one is cached) */
  guint64 *hashes;
  guint n_ident, n_hashes, registered;
  struct _Run *run;
  EmaTime last_step; /* start of the last step it was in as a tail request (-1: none) */
} Req;

/* Where a cached block no request holds waits: local room or the tier. */
typedef enum { ROOM_LOCAL, ROOM_TIER } Room;

/* An entry of an eviction queue (evictable or tier): COUNT free cached
 * blocks that leave it head first, one hashed block (run NULL, count 1)
 * or a part of a run. */
typedef struct {
  GList lru; /* data = this */
  guint64 count;
  struct _Run *run;
} LruEntry;

/* A hashed cached block (of an identified prefix): its hash, the requests
 * holding it, and its place in the eviction order while no request holds
 * it (then its memory is free). */
typedef struct {
  LruEntry entry; /* in evictable (or tier) when refs == 0 */
  guint64 hash;
  guint refs;
  gboolean remote; /* in the tier: on a peer */
} CachedBlock;

/* A request's own cached blocks (past its identified prefix: no other
 * request can hit them), counted, never hashed: its first `cached` own
 * blocks are cached; the first held (Req.registered - Req.n_ident) of them
 * the request holds, the next part[ROOM_LOCAL].count are free in local
 * room, the last part[ROOM_TIER].count free in the tier (an eviction
 * queue's head takes a run's last blocks first). A part is linked in its
 * queue while its count is > 0. It outlives its request (orphan) while it
 * has free blocks: they hold room until evicted, and are never hit. */
typedef struct _Run {
  LruEntry part[2]; /* [Room] */
  guint64 cached;
  gboolean orphan;
} Run;

/* A growable array of requests, emptied and shortened in place: the step's
 * batch and finishing requests and the finish heap change every step. */
typedef struct {
  Req **pdata;
  guint len, cap;
} ReqArray;

/* The serials of the steady region's members of one phase, in admission
 * order: the step's needing requests as the memory's take_each takes them,
 * read without touching the requests themselves. Not a GArray: its header
 * is an allocation of its own, one more miss per step on a rack whose
 * tenants' records are out of the cache by their next step (the rack's
 * first 600 s 6% slower with GArrays, 7 pairs); these headers sit in one
 * array of the engine's. */
typedef struct {
  guint64 *serials;
  guint len, cap;
} SerialArray;

static void serial_array_append(SerialArray *a, guint64 serial) {
  if (a->len == a->cap) {
    a->cap = MAX(8, 2 * a->cap);
    a->serials = g_renew(guint64, a->serials, a->cap);
  }
  a->serials[a->len++] = serial;
}

/* SERIAL out of A, the order of the others kept. */
static void serial_array_remove(SerialArray *a, guint64 serial) {
  guint i = 0;
  while (i < a->len && a->serials[i] != serial)
    i++;
  g_assert(i < a->len);
  memmove(&a->serials[i], &a->serials[i + 1], (a->len - i - 1) * sizeof *a->serials);
  a->len--;
}

static void req_array_add(ReqArray *a, Req *req) {
  if (a->len == a->cap) {
    a->cap = MAX(16, 2 * a->cap);
    a->pdata = g_renew(Req *, a->pdata, a->cap);
  }
  a->pdata[a->len++] = req;
}

struct _EmaEngine {
  EmaSim *sim;
  EmaEngineConfig config;
  EmaKvMemory memory;
  EmaStepCostFunc step_cost;
  gpointer step_cost_data;
  EmaStepCostFunc step_estimate; /* prices recomputes (EMA_PREEMPT_CHEAPER) */
  gpointer step_estimate_data;
  EmaTraceSource *trace;
  GArray *observers; /* EmaEngineObserver */

  GQueue waiting;     /* Req links, FCFS; preempted ones at the head */
  GQueue running;     /* Req links, oldest admission at the head */
  GList *tail_head;   /* first running link after the steady region, or NULL */
  ReqArray batch;     /* the tail scheduled in the step in flight */
  ReqArray finishing; /* requests finishing in the step being completed */

  /* the steady region */
  guint64 clock;      /* steps the region has advanced */
  guint needing;      /* needing_phase() at this clock, kept as it advances (no division) */
  guint64 steady;     /* D: requests in it */
  gint64 steady_base; /* sum of kv0 - t0 */
  /* of its members, how many hold cached blocks and how many they hold (a
   * member's `registered` does not change while it is in the region) */
  guint64 steady_cached, steady_cached_blocks;
  SerialArray *phase_members; /* [block_tokens]: each phase's members, in admission order */
  EmaIdMap *by_serial;        /* serial -> Req, every waiting and running request */
  guint64 next_serial;
  EmaTime last_step_start; /* start of the step in flight, or of the last one */
  EmaTime last_step_end;   /* end of the last step done (-1: none) */
  /* async scheduling (cpu_overlap): this step was scheduled while the last one ran, so a
   * request that arrived after that one began joins the step after; -1: no cutoff */
  EmaTime admit_cutoff;
  ReqArray heap;             /* min-heap on (finish_at, seq) */
  gboolean steady_scheduled; /* the region holds its blocks for the step in flight */

  EmaEvent arrival_event, step_event;
  EmaEvent kick_event;   /* a step start after all arrivals of this instant */
  EmaRequestRecord next; /* the arrival scheduled in arrival_event */
  EmaTime next_arrival;  /* its arrival (arrival_event fires request_cpu_cost later) */
  gboolean step_in_flight, scheduling;
  EmaStepReport step;

  /* scheduling state of the step being built (for blocks_short) */
  guint64 free_at_start, taken_this_step, running_at_start;
  Req *waiting_head_at_start;
  gboolean shortage_noted;

  EmaTime pending_swap; /* swap-out time of releases, charged to the next step */
  guint released_since_report;
  guint64 last_total;
  guint64 next_seq, work;
  guint64 completed, preemptions, preemptions_swapped, rejected, rejected_too_long, blocks_held;
  guint64 outputs_raised; /* requests whose trace asked for 0 output tokens, run with 1 */
  /* client timeouts: requests whose client gave up (timed_out); the serial of the oldest
   * request that may still be in the engine unchecked (arrivals, and so deadlines, come in
   * serial order); the event that wakes an idle engine at the oldest one's deadline */
  guint64 timed_out, expire_serial;
  EmaEvent timeout_event;
  /* the decodes of the step in flight, or of the last one (what a recompute is priced beside) */
  guint64 last_decode_seqs;
  double last_decode_context;
  /* closed loop: when each free client became free, oldest first (a ring of concurrency
   * entries; the other clients have a request in the engine or on its way): its next request
   * is sent then, whenever the engine fetches it */
  EmaTime *free_since;
  guint64 free_head, free_count;
  gboolean trace_done;

  /* prefix caching */
  EmaIdMap *cache;        /* CachedBlock.hash -> CachedBlock */
  GQueue evictable;       /* LruEntry links in local room, least recently freed at the head */
  GQueue tier;            /* LruEntry links on peers (the remote tier), likewise */
  guint64 room_blocks[2]; /* [Room]: free cached blocks in evictable, in tier */
  guint64 run_blocks;     /* cached blocks of runs (sum of Run.cached) */
  guint64 cached_held;    /* cached blocks some request holds (refs > 0) */
  EmaPrefixCacheStats prefix;
};

/* Arrivals fire before a step starts at the same instant. */
#define ARRIVAL_PRIORITY 0

static guint64 blocks_for(const EmaEngine *engine, guint64 tokens) {
  return (tokens + engine->config.block_tokens - 1) / engine->config.block_tokens;
}

static guint32 known_tokens(const EmaRequest *request) {
  return request->prompt_tokens + request->generated;
}

/* Blocks of the whole request: more than the memory's total never fits. */
static guint64 footprint(const EmaEngine *engine, const EmaRequest *request) {
  return blocks_for(engine, (guint64) request->prompt_tokens + request->output_tokens);
}

static guint64 total_blocks(const EmaEngine *engine) {
  return engine->memory.ops->total_blocks(engine->memory.self);
}

static guint64 free_blocks(const EmaEngine *engine) {
  return engine->memory.ops->free_blocks(engine->memory.self);
}

/* Tell the memory REQ is now in STATE (EmaKvMemoryOps.state). */
static void tell_state(EmaEngine *engine, const Req *req, EmaKvState state) {
  if (engine->memory.ops->state)
    engine->memory.ops->state(engine->memory.self, req->pub.serial, state);
}

/* ---- the prefix cache ---------------------------------------------------- */

/* splitmix64's finaliser: the chain's mixing function. */
static guint64 mix64(guint64 x) {
  x ^= x >> 30;
  x *= G_GUINT64_CONSTANT(0xbf58476d1ce4e5b9);
  x ^= x >> 27;
  x *= G_GUINT64_CONSTANT(0x94d049bb133111eb);
  return x ^ (x >> 31);
}

/* The hashes of REQ's identified full prompt blocks: block i (tokens i b ..
 * (i+1) b - 1) hashes its parent's hash with the id of the unit holding its
 * last token, so equal hashes mean equal prefixes (up to 64-bit
 * collisions). The full blocks past them are the request's own (a run, not
 * hashed: they are the request's alone). */
static void compute_hashes(EmaEngine *engine, Req *req, const EmaRequestRecord *record) {
  guint64 b = engine->config.block_tokens, unit = record->prefix_unit_tokens;
  guint64 identified = 0, parent = 0;
  if (!engine->config.prefix_caching)
    return;
  if (record->prefix_blocks > 0 && unit > 0 && record->prefix_ids != NULL)
    identified = MIN((guint64) record->prefix_blocks * unit, (guint64) req->pub.prompt_tokens);
  req->n_hashes = (guint) (req->pub.prompt_tokens / b);
  req->n_ident = (guint) (identified / b);
  if (req->n_ident > 0)
    req->hashes = g_new(guint64, req->n_ident);
  for (guint i = 0; i < req->n_ident; i++) {
    guint64 id = record->prefix_ids[((guint64) i * b + b - 1) / unit];
    parent = mix64(parent ^ mix64(id + G_GUINT64_CONSTANT(0x9e3779b97f4a7c15) * (i + 1)));
    req->hashes[i] = parent;
  }
}

static CachedBlock *cache_lookup(const EmaEngine *engine, guint64 hash) {
  return ema_id_map_lookup(engine->cache, hash);
}

/* The own blocks REQ holds: its registered blocks past the identified ones. */
static guint64 run_held(const Req *req) {
  return req->registered > req->n_ident ? req->registered - req->n_ident : 0;
}

static void run_free_if_unused(Run *run) {
  if (run->orphan && run->part[ROOM_LOCAL].count == 0 && run->part[ROOM_TIER].count == 0)
    g_free(run);
}

/* N blocks leave the part of a run E in ROOM's queue (taken, evicted or
 * demoted); the run goes with its last part once its request is gone. */
static void part_shrink(EmaEngine *engine, LruEntry *e, Room room, guint64 n) {
  g_assert_cmpuint(n, <=, e->count);
  e->count -= n;
  engine->room_blocks[room] -= n;
  if (n > 0 && e->count == 0) {
    g_queue_unlink(room == ROOM_TIER ? &engine->tier : &engine->evictable, &e->lru);
    run_free_if_unused(e->run);
  }
}

/* REQ is gone: its run stays while it has free blocks. */
static void run_orphan(Run *run) {
  if (run == NULL)
    return;
  run->orphan = TRUE;
  run_free_if_unused(run);
}

static void req_free(Req *req) {
  run_orphan(req->run);
  g_free(req->hashes);
  g_free(req);
}

/* N blocks at the head of ROOM's queue, all of entry E, are evicted (a run
 * loses its last cached blocks). */
static void lru_evict(EmaEngine *engine, LruEntry *e, Room room, guint64 n) {
  engine->prefix.evictions += n;
  if (e->run) {
    e->run->cached -= n;
    engine->run_blocks -= n;
    part_shrink(engine, e, room, n);
    return;
  }
  g_queue_unlink(room == ROOM_TIER ? &engine->tier : &engine->evictable, &e->lru);
  engine->room_blocks[room]--;
  g_free(ema_id_map_remove(engine->cache, ((CachedBlock *) e)->hash));
}

/* N blocks at the head of local room, all of entry E, move to the tier's
 * tail. A run's part there is the tier's tail already: everything demoted
 * since it was made came from the head of local room, its local part. */
static void lru_demote(EmaEngine *engine, LruEntry *e, guint64 n) {
  if (e->run) {
    LruEntry *tier = &e->run->part[ROOM_TIER];
    if (tier->count == 0)
      g_queue_push_tail_link(&engine->tier, &tier->lru);
    else
      g_assert(engine->tier.tail == &tier->lru);
    tier->count += n;
    engine->room_blocks[ROOM_TIER] += n;
    part_shrink(engine, e, ROOM_LOCAL, n);
    return;
  }
  g_queue_unlink(&engine->evictable, &e->lru);
  engine->room_blocks[ROOM_LOCAL]--;
  ((CachedBlock *) e)->remote = TRUE;
  g_queue_push_tail_link(&engine->tier, &e->lru);
  engine->room_blocks[ROOM_TIER]++;
}

/* Keep the cached blocks no request holds within their room (a take or a
 * reclaim used some): the least recently freed of those in local room move
 * to the tier while it has room (else they are dropped), then the tier's
 * least recently freed are dropped while it is over its room. Without the
 * memory's cache_room: all free blocks are local room, there is no tier.
 * Blocks leave an entry at a queue's head together, as one by one. */
static void evict_over(EmaEngine *engine, guint64 local, guint64 remote);

static void evict_excess(EmaEngine *engine) {
  guint64 local, remote = 0;
  if (engine->room_blocks[ROOM_LOCAL] == 0 && engine->room_blocks[ROOM_TIER] == 0)
    return;
  if (engine->memory.ops->cache_room)
    engine->memory.ops->cache_room(engine->memory.self, &local, &remote);
  else
    local = engine->memory.ops->free_blocks(engine->memory.self);
  if (engine->room_blocks[ROOM_LOCAL] > local || engine->room_blocks[ROOM_TIER] > remote)
    evict_over(engine, local, remote);
}

/* evict_excess's evictions and demotions, with LOCAL and REMOTE room (not
 * inlined: most calls find the blocks within their room). */
G_GNUC_NO_INLINE static void evict_over(EmaEngine *engine, guint64 local, guint64 remote) {
  guint64 demoted = 0, dropped = 0;
  guint64 *in_local = &engine->room_blocks[ROOM_LOCAL], *in_tier = &engine->room_blocks[ROOM_TIER];
  while (*in_local > local) {
    LruEntry *e = engine->evictable.head->data;
    guint64 n = MIN(e->count, *in_local - local);
    if (remote == 0) {
      lru_evict(engine, e, ROOM_LOCAL, n);
      continue;
    }
    lru_demote(engine, e, n);
    demoted += n;
  }
  while (*in_tier > remote) {
    LruEntry *e = engine->tier.head->data;
    guint64 n = MIN(e->count, *in_tier - remote);
    lru_evict(engine, e, ROOM_TIER, n);
    dropped += n;
  }
  engine->prefix.demoted += demoted;
  if (demoted > 0 && engine->memory.ops->cache_tier)
    engine->memory.ops->cache_tier(engine->memory.self, EMA_KV_TIER_DEMOTE, demoted);
  if (dropped > 0 && engine->memory.ops->cache_tier)
    engine->memory.ops->cache_tier(engine->memory.self, EMA_KV_TIER_DROP, dropped);
}

/* Leading blocks of REQ found in the cache, at most all but the last known
 * token (vLLM computes at least one token): its identified blocks while
 * they are cached, then, past all of them, its run's cached blocks (local
 * ones first, the tier's after). *REVIVED: how many of them no request
 * holds now (their room is free and must be taken); *FETCHED: how many of
 * them are in the tier. */
static guint cache_hits(const EmaEngine *engine, const Req *req, guint64 *revived,
                        guint64 *fetched) {
  guint64 limit = (guint64) (req->pub.prompt_tokens + req->pub.generated - 1);
  guint64 most = MIN((guint64) req->n_hashes, limit / engine->config.block_tokens);
  guint hits = 0;
  *revived = 0;
  *fetched = 0;
  while (hits < MIN(most, (guint64) req->n_ident)) {
    CachedBlock *block = cache_lookup(engine, req->hashes[hits]);
    if (block == NULL)
      return hits;
    *revived += block->refs == 0;
    *fetched += block->remote;
    hits++;
  }
  if (hits == req->n_ident && req->run && most > hits) {
    const Run *run = req->run;
    guint64 own = MIN(run->cached, most - hits);
    g_assert_cmpuint(run_held(req), ==, 0); /* a waiting request holds no blocks */
    *revived += own;
    *fetched += own - MIN(own, run->part[ROOM_LOCAL].count);
    hits += (guint) own;
  }
  return hits;
}

/* The cache takes a free cached block back for a request: its room. */
static void cache_revive(EmaEngine *engine) {
  gboolean taken = engine->memory.ops->take(engine->memory.self, EMA_KV_PREFIX_CACHE, 1);
  g_assert(taken); /* a free cached block's room is free */
  engine->cached_held++;
  engine->blocks_held++;
}

/* REQ (admitted, no blocks) takes a reference on its first HITS blocks
 * (cache_hits). */
static void cache_take(EmaEngine *engine, Req *req, guint hits) {
  guint ident = MIN(hits, req->n_ident);
  for (guint i = 0; i < ident; i++) {
    CachedBlock *block = cache_lookup(engine, req->hashes[i]);
    if (block->refs++ == 0) {
      cache_revive(engine);
      g_queue_unlink(block->remote ? &engine->tier : &engine->evictable, &block->entry.lru);
      engine->room_blocks[block->remote ? ROOM_TIER : ROOM_LOCAL]--;
      block->remote = FALSE;
    }
  }
  if (hits > ident) {
    Run *run = req->run;
    guint64 own = hits - ident, local = MIN(own, run->part[ROOM_LOCAL].count);
    for (guint64 i = 0; i < own; i++)
      cache_revive(engine);
    part_shrink(engine, &run->part[ROOM_LOCAL], ROOM_LOCAL, local);
    part_shrink(engine, &run->part[ROOM_TIER], ROOM_TIER, own - local);
  }
  req->registered = hits;
  req->pub.blocks = hits;
}

/* REQ's run, made on its first own cached block. */
static Run *req_run(Req *req) {
  if (req->run == NULL) {
    req->run = g_new0(Run, 1);
    for (guint r = 0; r < 2; r++) {
      req->run->part[r].lru.data = &req->run->part[r];
      req->run->part[r].run = req->run;
    }
  }
  return req->run;
}

/* The blocks REQ has just filled become cached, in order, until one is
 * cached already (an identified one computed by another request
 * meanwhile, or an own one still cached from before a swap: REQ keeps its
 * own copy, as vLLM does, and registers no further). */
static void cache_register(EmaEngine *engine, Req *req) {
  guint64 b = engine->config.block_tokens, moved = 0;
  guint64 full = MIN((guint64) req->n_hashes, (guint64) req->pub.kv_tokens / b);
  while (req->registered < full && req->registered < req->n_ident) {
    CachedBlock *block;
    if (cache_lookup(engine, req->hashes[req->registered])) {
      req->n_hashes = req->registered;
      full = 0;
      break;
    }
    block = g_new0(CachedBlock, 1);
    block->hash = req->hashes[req->registered];
    block->refs = 1;
    block->entry.lru.data = block;
    block->entry.count = 1;
    ema_id_map_insert(engine->cache, block->hash, block);
    engine->cached_held++;
    req->registered++;
    moved++;
  }
  if (req->registered < full) {
    /* its own blocks, all at once: it holds its first run_held of the run's cached ones, so
     * either its next own block is cached and free (it registers none) or it holds them all
     * and each block it registers is the run's next */
    Run *run = req_run(req);
    guint64 own = full - req->registered;
    if (run_held(req) < run->cached) {
      req->n_hashes = req->registered;
    } else {
      run->cached += own;
      engine->run_blocks += own;
      engine->cached_held += own;
      req->registered += (guint) own;
      moved += own;
    }
  }
  /* one call for the pass: its blocks are the request's next ones, in order */
  if (moved > 0 && engine->memory.ops->to_cache)
    engine->memory.ops->to_cache(engine->memory.self, req->pub.serial, moved);
}

/* REQ lets go of its cached blocks; returns how many of them others still
 * hold (their room stays taken). Freed ones join the eviction order last
 * block first, so a prompt's tail is evicted before its head (vLLM's
 * order): its own blocks as one part of its run, then its identified ones. */
static guint64 cache_release(EmaEngine *engine, Req *req) {
  guint64 held = 0, own = run_held(req);
  if (own > 0) {
    LruEntry *part = &req->run->part[ROOM_LOCAL];
    /* a request that holds own blocks has no free ones (cache_register) */
    g_assert(part->count == 0 && req->run->part[ROOM_TIER].count == 0);
    part->count = own;
    g_queue_push_tail_link(&engine->evictable, &part->lru);
    engine->room_blocks[ROOM_LOCAL] += own;
    engine->cached_held -= own;
  }
  for (guint i = MIN(req->registered, req->n_ident); i-- > 0;) {
    CachedBlock *block = cache_lookup(engine, req->hashes[i]);
    if (--block->refs == 0) {
      g_queue_push_tail_link(&engine->evictable, &block->entry.lru);
      engine->room_blocks[ROOM_LOCAL]++;
      engine->cached_held--;
    } else
      held++;
  }
  req->registered = 0;
  return held;
}

/* ---- the finish heap of the steady region ------------------------------- */

static gboolean heap_less(const Req *a, const Req *b) {
  return a->finish_at < b->finish_at || (a->finish_at == b->finish_at && a->seq < b->seq);
}

static void heap_set(EmaEngine *engine, guint i, Req *req) {
  engine->heap.pdata[i] = req;
  req->heap_slot = i + 1;
}

static void heap_up(EmaEngine *engine, guint i) {
  Req *req = engine->heap.pdata[i];
  while (i > 0) {
    guint parent = (i - 1) / 2;
    Req *p = engine->heap.pdata[parent];
    if (!heap_less(req, p))
      break;
    heap_set(engine, i, p);
    i = parent;
  }
  heap_set(engine, i, req);
}

static void heap_down(EmaEngine *engine, guint i) {
  guint n = engine->heap.len;
  Req *req = engine->heap.pdata[i];
  for (;;) {
    guint child = 2 * i + 1;
    Req *c;
    if (child >= n)
      break;
    if (child + 1 < n && heap_less(engine->heap.pdata[child + 1], engine->heap.pdata[child]))
      child++;
    c = engine->heap.pdata[child];
    if (!heap_less(c, req))
      break;
    heap_set(engine, i, c);
    i = child;
  }
  heap_set(engine, i, req);
}

static void heap_push(EmaEngine *engine, Req *req) {
  req_array_add(&engine->heap, req);
  heap_up(engine, engine->heap.len - 1);
}

static void heap_remove(EmaEngine *engine, Req *req) {
  guint i = req->heap_slot - 1;
  Req *last = engine->heap.pdata[engine->heap.len - 1];
  g_assert(req->heap_slot > 0);
  engine->heap.len--;
  req->heap_slot = 0;
  if (last != req) {
    heap_set(engine, i, last);
    heap_up(engine, i);
    heap_down(engine, last->heap_slot - 1);
  }
}

/* ---- the steady region ------------------------------------------------- */

/* Write a steady request's derived state into its public fields. */
static void materialise(const EmaEngine *engine, Req *req) {
  guint64 steps;
  if (req->state != REQ_STEADY)
    return;
  steps = engine->clock - req->t0;
  req->pub.kv_tokens = req->kv0 + (guint32) steps;
  req->pub.generated = req->gen0 + (guint32) steps;
  req->pub.blocks =
      blocks_for(engine, (guint64) req->pub.kv_tokens + (engine->steady_scheduled ? 1 : 0));
}

/* REQ (a tail request that decodes, between steps, first of the tail) joins
 * the end of the region. */
static void steady_add(EmaEngine *engine, Req *req) {
  engine->work++;
  req->state = REQ_STEADY;
  req->t0 = engine->clock;
  req->kv0 = req->pub.kv_tokens;
  req->gen0 = req->pub.generated;
  /* (kv0 - t0) mod B, with kv0 < t0 as often as not: the unsigned difference wraps modulo
   * 2^64, which only a power-of-two B divides, so each side is reduced first */
  guint64 b = engine->config.block_tokens;
  req->phase = (guint) (((guint64) req->kv0 % b + b - (guint64) req->t0 % b) % b);
  req->finish_at = req->t0 + (req->pub.output_tokens - req->gen0);
  heap_push(engine, req);
  serial_array_append(&engine->phase_members[req->phase], req->pub.serial);
  engine->steady++;
  engine->steady_base += (gint64) req->kv0 - (gint64) req->t0;
  engine->steady_cached += req->registered > 0;
  engine->steady_cached_blocks += req->registered;
}

/* REQ leaves the region with its state materialised; it becomes a tail
 * request (the caller moves it on). */
static void steady_remove(EmaEngine *engine, Req *req) {
  g_assert(req->state == REQ_STEADY);
  materialise(engine, req);
  heap_remove(engine, req);
  serial_array_remove(&engine->phase_members[req->phase], req->pub.serial);
  engine->steady--;
  engine->steady_base -= (gint64) req->kv0 - (gint64) req->t0;
  engine->steady_cached -= req->registered > 0;
  engine->steady_cached_blocks -= req->registered;
  req->state = REQ_TAIL;
}

/* The phase whose members need a new block in the step about to run:
 * kv_tokens = kv0 - t0 + clock is a multiple of B, the phase
 * (B - clock mod B) mod B, which falls by one (mod B) as the clock
 * advances (advance_clock()). */
static guint needing_phase(const EmaEngine *engine) {
  return engine->needing;
}

static void advance_clock(EmaEngine *engine) {
  engine->clock++;
  engine->needing = (engine->needing == 0 ? engine->config.block_tokens : engine->needing) - 1;
}

/* ---- lists ------------------------------------------------------------- */

static void running_unlink(EmaEngine *engine, Req *req) {
  if (engine->tail_head == &req->link)
    engine->tail_head = req->link.next;
  g_queue_unlink(&engine->running, &req->link);
}

/* REQ joins the end of the running list (the tail). */
static void running_append(EmaEngine *engine, Req *req) {
  req->seq = engine->next_seq++;
  req->state = REQ_TAIL;
  g_queue_push_tail_link(&engine->running, &req->link);
  if (engine->tail_head == NULL)
    engine->tail_head = &req->link;
}

static Req *running_newest(const EmaEngine *engine) {
  return engine->running.tail ? engine->running.tail->data : NULL;
}

/* ---- arrivals ---------------------------------------------------------- */

static void kick(EmaEngine *engine);

/* Closed loop: a client became free at AT (the start, a finish or a rejection). */
static void client_free(EmaEngine *engine, EmaTime at) {
  guint64 n = engine->config.concurrency;
  g_assert(engine->free_count < n);
  engine->free_since[(engine->free_head + engine->free_count++) % n] = at;
}

/* Schedule the trace's next request: at its arrival time (open loop), or
 * when the longest-free client became free, if one is (closed loop). */
static void fetch_arrival(EmaEngine *engine) {
  GError *error = NULL;
  gboolean closed = engine->config.concurrency > 0;
  if (engine->trace_done || ema_event_is_scheduled(&engine->arrival_event) ||
      (closed && engine->free_count == 0))
    return;
  if (ema_trace_source_next(engine->trace, &engine->next, &error)) {
    EmaTime now = ema_sim_now(engine->sim);
    /* The last request was fetched when it left the API server (request_cpu_cost after it
     * arrived), which this one may already have entered: the API server serves requests side
     * by side. Open loop: its own arrival time, only a time before that moved up to it. Closed
     * loop: sent when its client became free (the oldest free one), not after the one before
     * it was handed over */
    EmaTime at;
    if (closed) {
      at = engine->free_since[engine->free_head];
      engine->free_head = (engine->free_head + 1) % engine->config.concurrency;
      engine->free_count--;
    } else {
      at = MAX(engine->next.arrival, now - engine->config.request_cpu_cost);
    }
    g_assert(at + engine->config.request_cpu_cost >= now);
    engine->next_arrival = at;
    /* the engine sees it once the API server has handed it over */
    ema_sim_schedule(engine->sim, &engine->arrival_event, at + engine->config.request_cpu_cost,
                     ARRIVAL_PRIORITY);
  } else {
    engine->trace_done = TRUE;
    if (error) {
      /* named by its tenant, as where the trace was opened, after the error's place */
      if (engine->config.name)
        ema_message_prefix_error(&error, "tenant %s: ", engine->config.name);
      ema_sim_fail(engine->sim, error);
    }
  }
}

/* A request left the engine (finished or rejected): its client is free. */
static void request_gone(EmaEngine *engine) {
  if (engine->config.concurrency > 0)
    client_free(engine, ema_sim_now(engine->sim));
  fetch_arrival(engine); /* a no-op unless the trace was waiting for a client */
}

static void reject(EmaEngine *engine, Req *req);

static void schedule_kick(EmaEngine *engine) {
  if (!engine->step_in_flight && !ema_event_is_scheduled(&engine->kick_event))
    ema_sim_schedule(engine->sim, &engine->kick_event, ema_sim_now(engine->sim),
                     ARRIVAL_PRIORITY + 1);
}

static void on_arrival(EmaSim *sim, EmaEvent *event, gpointer data) {
  EmaEngine *engine = data;
  Req *req = g_new0(Req, 1);
  EmaRequest *request = &req->pub;
  req->link.data = req;
  req->last_step = -1;
  request->id = engine->next.id;
  request->serial = engine->next_serial++;
  request->arrival = engine->next_arrival;
  request->scheduled = request->first_token = request->finished = -1;
  request->prompt_tokens = MAX(engine->next.prompt_tokens, 1);
  /* vLLM generates at least one token (max_tokens >= 1): a trace's 0 runs as 1, counted */
  request->output_tokens = MAX(engine->next.output_tokens, 1);
  engine->outputs_raised += engine->next.output_tokens == 0;
  /* Longer than the model's context: vLLM refuses it. */
  if (engine->config.max_model_len > 0 &&
      (guint64) request->prompt_tokens + request->output_tokens > engine->config.max_model_len) {
    engine->rejected_too_long++;
    reject(engine, req);
    return;
  }
  /* A request whose whole KV can never fit would preempt itself forever. */
  if (footprint(engine, request) > total_blocks(engine)) {
    reject(engine, req);
    return;
  }
  if (engine->config.max_waiting > 0 && engine->waiting.length >= engine->config.max_waiting) {
    ema_sim_fail(engine->sim,
                 g_error_new(EMA_SIM_ERROR, EMA_SIM_ERROR_OVERLOADED,
                             "%s%s: a request arrived at %.3f s with %" G_GUINT64_FORMAT
                             " waiting, past engine.max_waiting (%" G_GUINT64_FORMAT
                             "): the offered load is far past what the engine serves (raise "
                             "max_waiting to let the queue grow further)",
                             engine->config.name ? "tenant " : "",
                             engine->config.name ? engine->config.name : "the engine",
                             (double) ema_sim_now(sim) / 1e9, (guint64) engine->waiting.length,
                             engine->config.max_waiting));
    req_free(req);
    return;
  }
  compute_hashes(engine, req, &engine->next);
  fetch_arrival(engine);
  req->state = REQ_WAITING;
  g_queue_push_tail_link(&engine->waiting, &req->link);
  ema_id_map_insert(engine->by_serial, req->pub.serial, req);
  tell_state(engine, req, EMA_KV_WAITING);
  /* start a step once every arrival of this instant is queued */
  schedule_kick(engine);
}

/* ---- blocks, preemption, rejection ------------------------------------- */

/* Give back the blocks of REQ (a tail, waiting or finishing request); its
 * cached blocks that other requests still hold stay taken. */
static guint64 release_request_blocks(EmaEngine *engine, Req *req) {
  guint64 registered = req->registered, own = req->pub.blocks - registered;
  guint64 uncached = registered - cache_release(engine, req), n = own + uncached;
  if (own > 0)
    engine->memory.ops->give(engine->memory.self, req->pub.serial, own);
  if (uncached > 0)
    engine->memory.ops->give(engine->memory.self, EMA_KV_PREFIX_CACHE, uncached);
  engine->blocks_held -= n;
  req->pub.blocks = 0;
  return n;
}

static gboolean take_blocks(EmaEngine *engine, Req *req, guint64 n) {
  if (n == 0)
    return TRUE;
  if (!engine->memory.ops->take(engine->memory.self, req->pub.serial, n))
    return FALSE;
  req->pub.blocks += n;
  engine->blocks_held += n;
  engine->taken_this_step += n;
  evict_excess(engine);
  return TRUE;
}

/* Host-link time to move BLOCKS blocks one way (swap mode). */
static EmaTime swap_time(const EmaEngine *engine, guint64 blocks) {
  double bytes = (double) blocks * (double) engine->config.block_bytes;
  if (blocks == 0)
    return 0;
  if (engine->config.swap_bandwidth <= 0) /* no host link configured: the fixed cost only */
    return engine->config.swap_fixed_cost;
  return engine->config.swap_fixed_cost +
         (EmaTime) ((bytes / engine->config.swap_bandwidth) * 1e9 + 0.5);
}

/* The modelled time recomputing TOKENS tokens of KV adds to steps
 * (ema_engine_set_step_estimate says how it is priced). At most
 * RECOMPUTE_CHUNKS chunks are priced: where the budget left beside the
 * decodes would cut more, the chunks are larger (a bound on the work of
 * one preemption whatever the configuration). */
#define RECOMPUTE_CHUNKS 64
static EmaTime recompute_time(EmaEngine *engine, guint32 tokens) {
  EmaStepBatch decodes = {.decode_seqs = engine->last_decode_seqs,
                          .decode_context = engine->last_decode_context,
                          .logits = engine->last_decode_seqs};
  EmaTime alone = engine->step_estimate(engine->step_estimate_data, &decodes), added = 0;
  guint64 budget = engine->config.max_num_batched_tokens > decodes.decode_seqs
                       ? engine->config.max_num_batched_tokens - decodes.decode_seqs
                       : 1;
  budget = MAX(budget, tokens / RECOMPUTE_CHUNKS + 1);
  for (guint32 done = 0; done < tokens;) {
    guint32 chunk = (guint32) MIN((guint64) (tokens - done), budget);
    EmaStepBatch with = decodes;
    with.prefill_tokens = chunk;
    with.prefill_context = (double) chunk * done + (double) chunk * (chunk + 1) / 2;
    with.prefill_kv_read = (double) done + chunk;
    with.prefill_chunks = 1;
    done += chunk;
    /* the last chunk samples the next token; under V1 every chunk runs the LM head */
    with.logits += done == tokens || engine->config.logits_every_request;
    added += MAX(engine->step_estimate(engine->step_estimate_data, &with) - alone, 0);
  }
  return added;
}

/* MODE for preempting REQ: EMA_PREEMPT_CHEAPER resolved by the model (a
 * tie swaps: the KV is kept). */
static EmaPreemptMode preempt_mode(EmaEngine *engine, const Req *req, EmaPreemptMode mode) {
  guint64 blocks;
  EmaTime swap;
  if (mode != EMA_PREEMPT_CHEAPER)
    return mode;
  blocks = blocks_for(engine, req->pub.kv_tokens);
  swap = engine->memory.ops->swap_estimate
             ? engine->memory.ops->swap_estimate(engine->memory.self, blocks)
             : 2 * swap_time(engine, blocks);
  return swap <= recompute_time(engine, req->pub.kv_tokens) ? EMA_PREEMPT_SWAP
                                                            : EMA_PREEMPT_RECOMPUTE;
}

/* Preempt running request REQ in MODE: its blocks go back (*FREED), it goes
 * to the head of the waiting queue; work it had in a step in flight is
 * dropped. Returns the host-link time its swap-out costs (0 for
 * recompute). */
static EmaTime preempt(EmaEngine *engine, Req *req, EmaPreemptMode mode, guint64 *freed) {
  EmaTime cost = 0;
  engine->work++;
  mode = preempt_mode(engine, req, mode);
  engine->preemptions_swapped += mode == EMA_PREEMPT_SWAP;
  if (req->state == REQ_STEADY)
    steady_remove(engine, req);
  req->in_batch = FALSE;
  req->pub.preemptions++;
  engine->preemptions++;
  if (mode == EMA_PREEMPT_SWAP) {
    if (engine->memory.ops->swap_out == NULL)
      cost = swap_time(engine, blocks_for(engine, req->pub.kv_tokens));
    req->pub.swapped = TRUE;
  } else {
    req->pub.kv_tokens = 0;
  }
  *freed = release_request_blocks(engine, req);
  if (mode == EMA_PREEMPT_SWAP && engine->memory.ops->swap_out)
    cost =
        engine->memory.ops->swap_out(engine->memory.self, blocks_for(engine, req->pub.kv_tokens));
  running_unlink(engine, req);
  req->state = REQ_WAITING;
  g_queue_push_head_link(&engine->waiting, &req->link);
  tell_state(engine, req, EMA_KV_PREEMPTED);
  return cost;
}

/* Preempt the newest running request while scheduling; returns its swap
 * time and adds its blocks to *FREED. */
static EmaTime preempt_newest(EmaEngine *engine, guint64 *freed) {
  guint64 n;
  EmaTime cost = preempt(engine, running_newest(engine), engine->config.preempt, &n);
  engine->step.preempted++;
  *freed += n;
  return cost;
}

/* Waiting request REQ leaves the queue for good (rejected or aborted): it holds no blocks, and
 * the KV it swapped out is dropped where the memory kept it. */
static void leave_waiting(EmaEngine *engine, Req *req) {
  g_assert(req->pub.blocks == 0);
  g_queue_unlink(&engine->waiting, &req->link);
  if (req->pub.swapped && engine->memory.ops->swap_drop)
    engine->memory.ops->swap_drop(engine->memory.self, blocks_for(engine, req->pub.kv_tokens));
}

/* Running request REQ leaves the running list for good (rejected or aborted; not a finishing
 * one): out of the steady region, its blocks given back (its cached ones stay cached). */
static void leave_running(EmaEngine *engine, Req *req) {
  if (req->state == REQ_STEADY)
    steady_remove(engine, req);
  release_request_blocks(engine, req);
  running_unlink(engine, req);
}

static void reject(EmaEngine *engine, Req *req) {
  engine->rejected++;
  if (ema_id_map_remove(engine->by_serial, req->pub.serial))
    tell_state(engine, req, EMA_KV_FINISHED);
  req_free(req);
  request_gone(engine);
}

/* After the memory's total shrank: reject the running requests that can no
 * longer ever fit. O(running), only when the total went down. */
static void reject_unfit_running(EmaEngine *engine) {
  guint64 total = total_blocks(engine);
  GList *link = engine->running.head;
  gboolean shrank = total < engine->last_total;
  engine->last_total = total;
  if (!shrank)
    return;
  while (link) {
    Req *req = link->data;
    link = link->next;
    engine->work++;
    if (footprint(engine, &req->pub) <= total)
      continue;
    leave_running(engine, req);
    reject(engine, req);
  }
}

/* REQ's client gave up (client_timeout): it leaves the engine, as vLLM aborts a request whose
 * client disconnected, between steps. A running one gives its blocks back (its cached blocks
 * stay cached, as a finished request's do); a swapped-out one's KV is dropped where the memory
 * kept it. */
static void abort_request(EmaEngine *engine, Req *req) {
  engine->work++;
  if (req->state == REQ_WAITING)
    leave_waiting(engine, req);
  else
    leave_running(engine, req);
  engine->timed_out++;
  ema_id_map_remove(engine->by_serial, req->pub.serial);
  tell_state(engine, req, EMA_KV_FINISHED);
  req_free(req);
  request_gone(engine);
}

/* The oldest request still in the engine whose deadline is not past, after aborting those
 * whose is (between steps); NULL if none is left. Deadlines come in serial order, so each
 * serial is looked at once past its deadline. */
static Req *abort_expired(EmaEngine *engine) {
  EmaTime now = ema_sim_now(engine->sim);
  for (; engine->expire_serial < engine->next_serial; engine->expire_serial++) {
    Req *req = ema_id_map_lookup(engine->by_serial, engine->expire_serial);
    if (req == NULL)
      continue; /* finished or rejected */
    if (now - req->pub.arrival < engine->config.client_timeout)
      return req;
    abort_request(engine, req);
  }
  return NULL;
}

/* An idle engine with requests in it wakes at the oldest one's deadline, to abort it; one with
 * none left drops its wake-up, which would otherwise hold the run open to a deadline of a
 * request served since. */
static void arm_timeout(EmaEngine *engine) {
  Req *oldest;
  if (engine->config.client_timeout <= 0)
    return;
  oldest = abort_expired(engine);
  if (oldest == NULL)
    ema_sim_cancel(engine->sim, &engine->timeout_event);
  else if (!ema_event_is_scheduled(&engine->timeout_event))
    ema_sim_schedule(engine->sim, &engine->timeout_event,
                     oldest->pub.arrival + engine->config.client_timeout, ARRIVAL_PRIORITY + 1);
}

static void on_timeout(EmaSim *sim, EmaEvent *event, gpointer data) {
  kick(data); /* a step in flight: its end schedules the next pass, which aborts */
}

/* ---- scheduling one step ----------------------------------------------- */

/* Add tail request REQ with CHUNK tokens to the step batch sums. */
static void add_to_batch(EmaEngine *engine, Req *req, guint32 chunk) {
  EmaStepBatch *b = &engine->step.batch;
  EmaRequest *request = &req->pub;
  double kv = request->kv_tokens;
  gboolean samples = request->kv_tokens + chunk == known_tokens(request);
  if (chunk == 1 && request->generated > 0) {
    b->decode_seqs++;
    b->decode_context += kv + 1;
  } else {
    b->prefill_tokens += chunk;
    engine->step.prefill_seqs++;
    /* token i of the chunk attends to kv + i tokens (i = 1..chunk) */
    b->prefill_context += chunk * kv + (double) chunk * (chunk + 1) / 2;
    b->prefill_kv_read += kv + chunk;
    b->prefill_chunks++;
  }
  if (samples)
    engine->step.sampled++;
  if (samples || engine->config.logits_every_request)
    b->logits++;
  req->in_batch = TRUE;
  req->chunk = chunk;
  req->last_step = ema_sim_now(engine->sim);
  req_array_add(&engine->batch, req);
}

/* Blocks the tail from LINK on would take with BUDGET tokens and nothing
 * preempted (the counterfactual of blocks_short); *BUDGET_LEFT: what stays. */
static guint64 tail_demand(EmaEngine *engine, GList *link, guint64 budget, guint64 *budget_left) {
  guint64 demand = 0;
  for (; link && budget > 0; link = link->next) {
    const EmaRequest *request = &((Req *) link->data)->pub;
    guint32 chunk = (guint32) MIN((guint64) (known_tokens(request) - request->kv_tokens), budget);
    engine->work++;
    demand += blocks_for(engine, (guint64) request->kv_tokens + chunk) - request->blocks;
    budget -= chunk;
  }
  *budget_left = budget;
  return demand;
}

/* The step is about to preempt: the running requests would have taken
 * DEMAND blocks in all, leaving BUDGET_LEFT tokens for admission. */
static void note_shortage(EmaEngine *engine, guint64 demand, guint64 budget_left) {
  guint64 want = demand;
  const Req *head = engine->waiting_head_at_start;
  if (engine->shortage_noted)
    return;
  engine->shortage_noted = TRUE;
  if (head && budget_left > 0 && engine->running_at_start < engine->config.max_num_seqs &&
      footprint(engine, &head->pub) <= total_blocks(engine)) {
    guint32 resume_kv = head->pub.swapped ? head->pub.kv_tokens : 0;
    guint32 chunk = (guint32) MIN((guint64) (known_tokens(&head->pub) - resume_kv), budget_left);
    want += blocks_for(engine, (guint64) resume_kv + chunk) + engine->config.watermark_blocks;
  }
  engine->step.blocks_short = want > engine->free_at_start ? want - engine->free_at_start : 0;
}

/* Schedule the steady region (its blocks, its sums); returns TRUE if the
 * step's walk ended there (a request preempted itself). *BUDGET >= D. */
static gboolean schedule_steady(EmaEngine *engine, guint64 *budget, EmaTime *swap) {
  guint phase = needing_phase(engine);
  guint64 need = engine->phase_members[phase].len;
  guint64 served = engine->free_at_start; /* needing requests that can be served */
  gboolean preempted_self = FALSE;
  EmaStepBatch *b = &engine->step.batch;
  if (need > served) {
    guint64 left;
    guint64 demand = need + tail_demand(engine, engine->tail_head, *budget - engine->steady, &left);
    note_shortage(engine, demand, left);
  }
  /* The front (the (served+1)-th needing request) cannot get its block:
   * preempt the newest until it can, or until it is the newest itself. */
  while (need > served) {
    Req *victim = running_newest(engine);
    if (victim->state == REQ_STEADY && victim->phase == phase) {
      /* needing requests are served in order: the victim is the last one left */
      if (need == served + 1)
        preempted_self = TRUE;
      need--;
    }
    *swap += preempt_newest(engine, &served);
    if (preempted_self)
      break;
  }
  if (need > 0) {
    gboolean taken;
    if (engine->memory.ops->take_each) {
      /* the needing requests left are the phase's members (victims left it) */
      g_assert_cmpuint(need, ==, engine->phase_members[phase].len);
      taken = engine->memory.ops->take_each(engine->memory.self,
                                            engine->phase_members[phase].serials, need);
    } else {
      taken = engine->memory.ops->take(engine->memory.self, EMA_KV_UNNAMED, need);
    }
    g_assert(taken);
    engine->blocks_held += need;
    engine->taken_this_step += need;
    evict_excess(engine);
  }
  engine->steady_scheduled = TRUE;
  if (engine->steady > 0) {
    gint64 context = engine->steady_base + (gint64) engine->steady * (gint64) engine->clock;
    b->decode_seqs += engine->steady;
    b->decode_context += (double) (context + (gint64) engine->steady);
    b->logits += engine->steady;
    engine->step.sampled += engine->steady;
    *budget -= engine->steady;
  }
  return preempted_self;
}

/* Schedule the tail requests (the plain walk); returns the swap time. */
static EmaTime schedule_tail(EmaEngine *engine, guint64 *budget) {
  EmaTime swap = 0;
  GList *link = engine->tail_head;
  while (link && *budget > 0) {
    Req *req = link->data;
    EmaRequest *request = &req->pub;
    guint32 chunk = (guint32) MIN((guint64) (known_tokens(request) - request->kv_tokens), *budget);
    guint64 need = blocks_for(engine, (guint64) request->kv_tokens + chunk) - request->blocks;
    gboolean preempted_self = FALSE;
    engine->work++;
    if (!take_blocks(engine, req, need)) {
      guint64 left, freed = 0;
      guint64 demand = engine->taken_this_step + tail_demand(engine, link, *budget, &left);
      note_shortage(engine, demand, left);
      do {
        if (engine->running.tail == link)
          preempted_self = TRUE;
        swap += preempt_newest(engine, &freed);
        if (preempted_self)
          break;
      } while (!take_blocks(engine, req, need));
    }
    if (preempted_self)
      break;
    add_to_batch(engine, req, chunk);
    *budget -= chunk;
    link = link->next;
  }
  return swap;
}

/* Admit waiting requests in FCFS order; returns the swap-in time spent. */
static EmaTime admit_waiting(EmaEngine *engine, guint64 *budget) {
  EmaTime swap = 0;
  while (!g_queue_is_empty(&engine->waiting) && *budget > 0 &&
         engine->running.length < engine->config.max_num_seqs) {
    Req *req = engine->waiting.head->data;
    EmaRequest *request = &req->pub;
    guint32 resume_kv, chunk, hits;
    guint64 need, free_now, revived = 0, fetched = 0;
    engine->work++;
    /* async scheduling: one that arrived after the last step began waits for the next step,
     * unless this step would otherwise hold nothing (the engine then schedules at once) */
    if (engine->admit_cutoff >= 0 &&
        request->arrival + engine->config.request_cpu_cost > engine->admit_cutoff &&
        (engine->batch.len > 0 || engine->running.length > 0))
      break;
    if (footprint(engine, request) > total_blocks(engine)) {
      /* the memory shrank under it: it can never fit any more */
      leave_waiting(engine, req);
      reject(engine, req);
      continue;
    }
    hits = request->swapped ? 0 : cache_hits(engine, req, &revived, &fetched);
    resume_kv = request->swapped ? request->kv_tokens : hits * engine->config.block_tokens;
    chunk = (guint32) MIN((guint64) (known_tokens(request) - resume_kv), *budget);
    /* V0 admits whole prompts; only the step's first may be cut to the budget */
    if (engine->config.scheduler == EMA_SCHEDULER_V0 && engine->batch.len > 0 &&
        chunk < known_tokens(request) - resume_kv)
      break;
    need = blocks_for(engine, (guint64) resume_kv + chunk) - hits + revived;
    free_now = free_blocks(engine);
    if (free_now < need + engine->config.watermark_blocks) {
      engine->step.blocks_short = need + engine->config.watermark_blocks - free_now;
      break;
    }
    need -= revived;
    if (!request->swapped) {
      engine->prefix.query_tokens += known_tokens(request);
      engine->prefix.hit_tokens += resume_kv;
      engine->prefix.remote_hit_tokens += fetched * engine->config.block_tokens;
      engine->prefix.fetched += fetched;
      /* the tier's blocks come back over the link before the step runs */
      if (fetched > 0 && engine->memory.ops->cache_tier)
        swap += engine->memory.ops->cache_tier(engine->memory.self, EMA_KV_TIER_FETCH, fetched);
      cache_take(engine, req, hits);
      request->kv_tokens = resume_kv;
    }
    g_queue_unlink(&engine->waiting, &req->link);
    if (request->swapped) {
      guint64 blocks = blocks_for(engine, request->kv_tokens);
      swap += engine->memory.ops->swap_in ? engine->memory.ops->swap_in(engine->memory.self, blocks)
                                          : swap_time(engine, blocks);
      request->swapped = FALSE;
    }
    tell_state(engine, req, EMA_KV_RUNNING);
    take_blocks(engine, req, need);
    if (request->scheduled < 0)
      request->scheduled = ema_sim_now(engine->sim);
    running_append(engine, req);
    add_to_batch(engine, req, chunk);
    *budget -= chunk;
  }
  return swap;
}

static void on_step_done(EmaSim *sim, EmaEvent *event, gpointer data);

static void on_kick(EmaSim *sim, EmaEvent *event, gpointer data) {
  kick(data);
}

/* Tell the memory what the pass just done lacked (EmaKvMemoryOps.want);
 * called once the step is in flight, or the engine idle, so that the hook
 * may call back into the engine. */
static void tell_want(EmaEngine *engine) {
  if (engine->step.blocks_short > 0 && engine->memory.ops->want)
    engine->memory.ops->want(engine->memory.self, engine->step.blocks_short);
}

/* Start a step if none is in flight and there is work. */
static void kick(EmaEngine *engine) {
  guint64 budget = engine->config.max_num_batched_tokens;
  EmaTime swap = 0;
  gboolean stopped;
  if (engine->step_in_flight)
    return;
  /* a copy of a zeroed report, not a memset: GCC 12 makes a memset of this size a `rep stos`,
   * whose start-up was 4% of the serving benchmark's time; the copy is a few vector moves */
  static const EmaStepReport cleared;
  engine->step = cleared;
  engine->batch.len = 0;
  if (engine->config.client_timeout > 0)
    abort_expired(engine);
  engine->scheduling = TRUE;
  reject_unfit_running(engine);
  /* the tier's room may have gone since the last take (a reclaim) */
  if (engine->memory.ops->cache_room)
    evict_excess(engine);
  /* The region only gains requests that were scheduled in the step before,
   * each with at least one token of that step's budget: it never outgrows
   * the budget, so the plain walk never stops inside it. */
  g_assert_cmpuint(engine->steady, <=, budget);
  engine->free_at_start = free_blocks(engine);
  engine->taken_this_step = 0;
  engine->admit_cutoff = engine->config.costs.cpu_overlap && engine->last_step_end >= 0 &&
                                 engine->last_step_end == ema_sim_now(engine->sim)
                             ? engine->last_step_start
                             : -1;
  engine->running_at_start = engine->running.length;
  engine->waiting_head_at_start = engine->waiting.head ? engine->waiting.head->data : NULL;
  engine->shortage_noted = FALSE;
  if (engine->config.scheduler == EMA_SCHEDULER_V0)
    swap += admit_waiting(engine, &budget);
  if (engine->batch.len == 0) {
    /* V1, or V0 with nothing admitted: the running requests first */
    stopped = schedule_steady(engine, &budget, &swap);
    if (!stopped)
      swap += schedule_tail(engine, &budget);
    if (engine->step.preempted == 0 && engine->config.scheduler == EMA_SCHEDULER_V1)
      swap += admit_waiting(engine, &budget);
  }
  engine->scheduling = FALSE;
  if (engine->steady == 0 && engine->batch.len == 0) {
    engine->steady_scheduled = FALSE;
    /* everything preempted itself (a shared or shrunk memory): try again
     * rather than idle with requests queued */
    if (engine->step.preempted > 0)
      schedule_kick(engine);
    tell_want(engine);
    arm_timeout(engine);
    return; /* idle until the next arrival, a timeout (or ema_engine_wake) */
  }
  swap += engine->pending_swap;
  engine->pending_swap = 0;
  engine->step.start = ema_sim_now(engine->sim);
  engine->last_step_start = engine->step.start;
  engine->last_decode_seqs = engine->step.batch.decode_seqs;
  engine->last_decode_context = engine->step.batch.decode_context;
  engine->step.duration =
      ema_engine_step_duration(&engine->config.costs, &engine->step.batch,
                               engine->step.batch.decode_seqs + engine->step.prefill_seqs,
                               engine->step_cost(engine->step_cost_data, &engine->step.batch),
                               &engine->step.gpu_time, &engine->step.cpu_time);
  /* a step the clock cannot count (its step model's time saturated: an absurd operator time
   * in a profile) ends the run with an error, rather than wrapping negative */
  if (engine->step.duration > EMA_TIME_NEVER - 1 - swap) {
    ema_sim_fail(engine->sim,
                 g_error_new(EMA_SIM_ERROR, EMA_SIM_ERROR_CLOCK,
                             "%s%s: at %.6g s a step of %" G_GUINT64_FORMAT
                             " tokens takes longer than the simulator's clock counts (2^63 ns, "
                             "about 292 years)",
                             engine->config.name ? "tenant " : "",
                             engine->config.name ? engine->config.name : "the engine",
                             (double) engine->step.start / 1e9,
                             engine->step.batch.prefill_tokens + engine->step.batch.decode_seqs));
    return;
  }
  engine->step.duration += swap;
  engine->step_in_flight = TRUE;
  ema_sim_schedule_in(engine->sim, &engine->step_event, engine->step.duration, 0);
  tell_want(engine);
}

EmaTime ema_engine_step_duration(const EmaEngineCosts *costs, const EmaStepBatch *batch,
                                 guint64 seqs, EmaTime gpu_time, EmaTime *gpu, EmaTime *cpu) {
  gboolean graphed =
      batch->prefill_tokens == 0 && batch->decode_seqs <= costs->cuda_graph_max_batch;
  EmaTime step = costs->step_cpu_cost + costs->step_cpu_cost_per_seq * (EmaTime) seqs;
  EmaTime output = costs->output_cpu_cost + costs->output_cpu_cost_per_seq * (EmaTime) seqs;
  *gpu = graphed ? gpu_time : MAX(gpu_time, costs->eager_cpu_cost);
  *cpu = step + output;
  if (costs->cpu_overlap)
    return MAX(*gpu, *cpu);
  /* saturated at the end of the clock (a GPU time of EMA_TIME_NEVER stays so) */
  return MAX(*gpu, output) > EMA_TIME_NEVER - step ? EMA_TIME_NEVER : MAX(*gpu, output) + step;
}

/* ---- completing a step ------------------------------------------------- */

static void finish_request(EmaEngine *engine, Req *req) {
  /* its client gave up before this last token (client_timeout): not a completion */
  gboolean late = engine->config.client_timeout > 0 &&
                  ema_sim_now(engine->sim) - req->pub.arrival >= engine->config.client_timeout;
  engine->work++;
  req->pub.finished = ema_sim_now(engine->sim);
  running_unlink(engine, req);
  release_request_blocks(engine, req);
  ema_id_map_remove(engine->by_serial, req->pub.serial);
  tell_state(engine, req, EMA_KV_FINISHED);
  engine->completed += !late;
  engine->timed_out += late;
  for (guint i = 0; !late && i < engine->observers->len; i++) {
    const EmaEngineObserver *o = &g_array_index(engine->observers, EmaEngineObserver, i);
    if (o->on_finish)
      o->on_finish(o->data, &req->pub);
  }
  req_free(req);
  request_gone(engine);
}

/* Tail requests that completed their chunk in this step and now decode
 * join the region, from the head of the tail on. */
static void promote(EmaEngine *engine) {
  while (engine->tail_head) {
    Req *req = engine->tail_head->data;
    const EmaRequest *request = &req->pub;
    if (!req->in_batch || request->generated == 0 ||
        known_tokens(request) - request->kv_tokens != 1)
      break;
    steady_add(engine, req);
    engine->tail_head = engine->tail_head->next;
  }
}

static void on_step_done(EmaSim *sim, EmaEvent *event, gpointer data) {
  EmaEngine *engine = data;
  EmaTime now = ema_sim_now(sim);
  engine->step_in_flight = FALSE;
  engine->last_step_end = now;
  /* the steady region decodes one token each (not in a V0 prefill-only step) */
  if (engine->steady_scheduled)
    advance_clock(engine);
  engine->steady_scheduled = FALSE;
  for (guint i = 0; i < engine->batch.len; i++) {
    Req *req = engine->batch.pdata[i];
    EmaRequest *request = &req->pub;
    if (!req->in_batch)
      continue; /* preempted while the step ran: its work is dropped */
    engine->work++;
    request->kv_tokens += req->chunk;
    if (req->registered < req->n_hashes)
      cache_register(engine, req);
    if (request->kv_tokens == known_tokens(request)) {
      request->generated++;
      if (request->first_token < 0)
        request->first_token = now;
    }
  }
  /* who finishes, in admission order: the region first, then the tail */
  engine->finishing.len = 0;
  while (engine->heap.len > 0 && ((Req *) engine->heap.pdata[0])->finish_at == engine->clock) {
    Req *req = engine->heap.pdata[0];
    engine->work++;
    steady_remove(engine, req);
    req->state = REQ_FINISHING;
    req_array_add(&engine->finishing, req);
  }
  for (guint i = 0; i < engine->batch.len; i++) {
    Req *req = engine->batch.pdata[i];
    if (req->in_batch && req->pub.generated >= req->pub.output_tokens) {
      req->state = REQ_FINISHING;
      req->in_batch = FALSE;
      engine->batch.pdata[i] = NULL; /* freed when it finishes */
      req_array_add(&engine->finishing, req);
    }
  }
  engine->step.running = engine->running.length;
  engine->step.waiting = engine->waiting.length;
  engine->step.blocks_free = free_blocks(engine);
  engine->step.blocks_used = engine->blocks_held;
  engine->step.released = engine->released_since_report;
  engine->step.finished = engine->finishing.len;
  engine->released_since_report = 0;
  for (guint i = 0; i < engine->observers->len; i++) {
    const EmaEngineObserver *o = &g_array_index(engine->observers, EmaEngineObserver, i);
    if (o->on_step)
      o->on_step(o->data, &engine->step);
  }
  for (guint i = 0; i < engine->finishing.len; i++)
    finish_request(engine, engine->finishing.pdata[i]);
  engine->finishing.len = 0;
  promote(engine);
  for (guint i = 0; i < engine->batch.len; i++)
    if (engine->batch.pdata[i])
      ((Req *) engine->batch.pdata[i])->in_batch = FALSE;
  engine->batch.len = 0;
  kick(engine);
}

/* ---- the public interface ---------------------------------------------- */

EmaEngine *ema_engine_new(EmaSim *sim, const EmaEngineConfig *config, EmaKvMemory memory,
                          EmaStepCostFunc step_cost, gpointer step_cost_data,
                          EmaTraceSource *trace) {
  EmaEngine *engine;
  g_return_val_if_fail(config->max_num_seqs > 0 && config->max_num_batched_tokens > 0, NULL);
  engine = g_new0(EmaEngine, 1);
  engine->sim = sim;
  engine->config = *config;
  if (engine->config.block_tokens == 0)
    engine->config.block_tokens = EMA_KV_BLOCK_TOKENS;
  engine->phase_members = g_new0(SerialArray, engine->config.block_tokens);
  engine->free_since = g_new0(EmaTime, MAX(engine->config.concurrency, 1));
  engine->by_serial = ema_id_map_new();
  engine->last_step_start = -1;
  engine->last_step_end = -1;
  engine->admit_cutoff = -1;
  engine->cache = ema_id_map_new();
  g_queue_init(&engine->evictable);
  g_queue_init(&engine->tier);
  engine->memory = memory;
  engine->step_cost = engine->step_estimate = step_cost;
  engine->step_cost_data = engine->step_estimate_data = step_cost_data;
  engine->trace = trace;
  engine->observers = g_array_new(FALSE, FALSE, sizeof(EmaEngineObserver));
  engine->last_total = total_blocks(engine);
  g_queue_init(&engine->waiting);
  g_queue_init(&engine->running);
  ema_event_init(&engine->arrival_event, on_arrival, engine);
  ema_event_init(&engine->step_event, on_step_done, engine);
  ema_event_init(&engine->kick_event, on_kick, engine);
  ema_event_init(&engine->timeout_event, on_timeout, engine);
  return engine;
}

static void free_requests(GQueue *queue) {
  GList *link = queue->head;
  while (link) {
    Req *req = link->data;
    link = link->next;
    req_free(req);
  }
  g_queue_init(queue);
}

/* The runs with free blocks in QUEUE (their requests are freed: orphans)
 * go with their last part; the hash table owns the hashed blocks. */
static void free_runs(GQueue *queue) {
  GList *link = queue->head;
  while (link) {
    LruEntry *e = link->data;
    link = link->next;
    if (e->run) {
      e->count = 0;
      run_free_if_unused(e->run);
    }
  }
  g_queue_init(queue);
}

void ema_engine_free(EmaEngine *engine) {
  if (engine == NULL)
    return;
  ema_sim_cancel(engine->sim, &engine->arrival_event);
  ema_sim_cancel(engine->sim, &engine->step_event);
  ema_sim_cancel(engine->sim, &engine->kick_event);
  ema_sim_cancel(engine->sim, &engine->timeout_event);
  free_requests(&engine->waiting);
  free_requests(&engine->running);
  free_runs(&engine->evictable);
  free_runs(&engine->tier);
  g_free(engine->free_since);
  g_free(engine->batch.pdata);
  g_free(engine->finishing.pdata);
  g_free(engine->heap.pdata);
  for (guint i = 0; i < engine->config.block_tokens; i++)
    g_free(engine->phase_members[i].serials);
  g_free(engine->phase_members);
  ema_id_map_free(engine->by_serial, NULL);
  ema_id_map_free(engine->cache, g_free);
  g_array_unref(engine->observers);
  ema_trace_source_free(engine->trace);
  g_free(engine);
}

void ema_engine_add_observer(EmaEngine *engine, const EmaEngineObserver *observer) {
  g_array_append_val(engine->observers, *observer);
}

EmaTime ema_engine_model_step_cost(gpointer step_model, const EmaStepBatch *batch) {
  return ema_step_time(step_model, batch, NULL);
}

void ema_engine_set_step_estimate(EmaEngine *engine, EmaStepCostFunc estimate, gpointer data) {
  g_return_if_fail(engine != NULL && estimate != NULL);
  engine->step_estimate = estimate;
  engine->step_estimate_data = data;
}

void ema_engine_start(EmaEngine *engine) {
  /* closed loop: every client is free at the start */
  for (guint64 i = 0; i < engine->config.concurrency; i++)
    client_free(engine, ema_sim_now(engine->sim));
  fetch_arrival(engine);
}

guint64 ema_engine_release_blocks(EmaEngine *engine, guint64 blocks) {
  g_return_val_if_fail(engine != NULL, 0);
  return ema_engine_release_blocks_mode(engine, blocks, engine->config.preempt);
}

guint64 ema_engine_release_where(EmaEngine *engine, EmaPreemptMode mode, EmaKvVictimFunc pick,
                                 gpointer data) {
  guint64 given = 0;
  GList *link;
  g_return_val_if_fail(engine != NULL, 0);
  g_return_val_if_fail(!engine->scheduling, 0);
  link = engine->running.tail;
  while (link) {
    Req *req = link->data;
    guint64 n;
    EmaKvVictim verdict;
    link = link->prev;
    if (req->state == REQ_FINISHING)
      continue; /* its blocks come back when it finishes, in a moment */
    materialise(engine, req);
    verdict = pick(data, &req->pub);
    if (verdict == EMA_KV_VICTIM_STOP)
      break;
    if (verdict == EMA_KV_VICTIM_SKIP)
      continue;
    engine->pending_swap += preempt(engine, req, mode, &n);
    engine->released_since_report++;
    given += n;
  }
  return given;
}

/* ema_engine_release_blocks_mode's victims: the newest until BLOCKS came
 * back (blocks_held fell from HELD by that much). */
typedef struct {
  const EmaEngine *engine;
  guint64 blocks, held;
} ReleaseCount;

static EmaKvVictim pick_until_count(gpointer data, const EmaRequest *request) {
  const ReleaseCount *count = data;
  return count->held - count->engine->blocks_held < count->blocks ? EMA_KV_VICTIM_PREEMPT
                                                                  : EMA_KV_VICTIM_STOP;
}

guint64 ema_engine_release_blocks_mode(EmaEngine *engine, guint64 blocks, EmaPreemptMode mode) {
  ReleaseCount count = {engine, blocks, engine ? engine->blocks_held : 0};
  g_return_val_if_fail(engine != NULL, 0);
  return ema_engine_release_where(engine, mode, pick_until_count, &count);
}

/* REQ is in the step in flight (or, between steps, was in the last one). */
static gboolean req_in_step(const EmaEngine *engine, const Req *req) {
  return req->state == REQ_STEADY ? engine->steady_scheduled || !engine->step_in_flight
                                  : req->in_batch;
}

gboolean ema_engine_request(EmaEngine *engine, guint64 serial, EmaRequest *out, gboolean *in_step,
                            EmaTime *last_scheduled) {
  Req *req = ema_id_map_lookup(engine->by_serial, serial);
  if (req == NULL)
    return FALSE;
  if (in_step)
    *in_step = req_in_step(engine, req);
  *out = *ema_engine_ref_request(engine, req, last_scheduled);
  return TRUE;
}

gpointer ema_engine_request_ref(EmaEngine *engine, guint64 serial) {
  return ema_id_map_lookup(engine->by_serial, serial);
}

const EmaRequest *ema_engine_ref_request(EmaEngine *engine, gpointer ref, EmaTime *last_scheduled) {
  Req *req = ref; /* the engine's own request (ema_engine_request_ref) */
  if (last_scheduled)
    *last_scheduled = req->state == REQ_STEADY ? engine->last_step_start : req->last_step;
  materialise(engine, req);
  return &req->pub;
}

gboolean ema_engine_ref_decoding(EmaEngine *engine, gpointer ref, guint64 *context,
                                 guint64 *blocks) {
  Req *req = ref; /* the engine's own request (ema_engine_request_ref) */
  if (!req_in_step(engine, req))
    return FALSE;
  materialise(engine, req);
  if (req->pub.generated == 0 ||
      (guint64) req->pub.kv_tokens + 1 != (guint64) req->pub.prompt_tokens + req->pub.generated)
    return FALSE;
  *context = (guint64) req->pub.kv_tokens + 1;
  *blocks = req->pub.blocks;
  return TRUE;
}

void ema_engine_decode_cached(const EmaEngine *engine, guint64 *seqs, guint64 *blocks) {
  /* ema_engine_ref_decoding's test: the region decodes whenever it is in the step */
  gboolean steady_in_step = engine->steady_scheduled || !engine->step_in_flight;
  *seqs = steady_in_step ? engine->steady_cached : 0;
  *blocks = steady_in_step ? engine->steady_cached_blocks : 0;
  for (guint i = 0; i < engine->batch.len; i++) {
    const Req *req = engine->batch.pdata[i]; /* NULL: finishing */
    if (req == NULL || req->state == REQ_STEADY || !req->in_batch || req->pub.generated == 0 ||
        (guint64) req->pub.kv_tokens + 1 != (guint64) known_tokens(&req->pub))
      continue;
    *seqs += req->registered > 0;
    *blocks += req->registered;
  }
}

guint64 ema_engine_request_own_blocks(EmaEngine *engine, guint64 serial) {
  Req *req = ema_id_map_lookup(engine->by_serial, serial);
  if (req == NULL)
    return 0;
  materialise(engine, req);
  return req->pub.blocks - req->registered;
}

guint ema_engine_block_tokens(const EmaEngine *engine) {
  return engine->config.block_tokens;
}

guint64 ema_engine_cached_held(const EmaEngine *engine) {
  return engine->cached_held;
}

guint64 ema_engine_blocks_held(const EmaEngine *engine) {
  return engine->blocks_held;
}

/* The blocks REQ holds (a steady request's derived from the clock). */
static guint64 request_blocks(const EmaEngine *engine, const Req *req) {
  if (req->state != REQ_STEADY)
    return req->pub.blocks;
  return blocks_for(engine, (guint64) req->kv0 + (engine->clock - req->t0) +
                                (engine->steady_scheduled ? 1 : 0));
}

guint64 ema_engine_swapped_blocks(const EmaEngine *engine) {
  guint64 blocks = 0;
  for (const GList *link = engine->waiting.head; link; link = link->next) {
    const Req *req = link->data;
    if (req->pub.swapped)
      blocks += blocks_for(engine, req->pub.kv_tokens);
  }
  return blocks;
}

guint64 ema_engine_request_blocks(const EmaEngine *engine) {
  guint64 sum = 0;
  const GQueue *queues[2] = {&engine->running, &engine->waiting};
  for (guint q = 0; q < 2; q++)
    for (const GList *link = queues[q]->head; link; link = link->next)
      sum += request_blocks(engine, link->data) - ((const Req *) link->data)->registered;
  /* finishing requests are in the running list until they finish; a cached block is held once
   * however many requests share it */
  return sum + engine->cached_held;
}

void ema_engine_wake(EmaEngine *engine) {
  schedule_kick(engine);
}

guint64 ema_engine_work_counter(const EmaEngine *engine) {
  return engine->work;
}

guint64 ema_engine_completed(const EmaEngine *engine) {
  return engine->completed;
}

guint64 ema_engine_timed_out(const EmaEngine *engine) {
  return engine->timed_out;
}

guint64 ema_engine_preemptions(const EmaEngine *engine) {
  return engine->preemptions;
}

guint64 ema_engine_preemptions_swapped(const EmaEngine *engine) {
  return engine->preemptions_swapped;
}

guint64 ema_engine_rejected(const EmaEngine *engine) {
  return engine->rejected;
}

guint64 ema_engine_rejected_too_long(const EmaEngine *engine) {
  return engine->rejected_too_long;
}

guint64 ema_engine_outputs_raised(const EmaEngine *engine) {
  return engine->outputs_raised;
}

guint64 ema_engine_trace_skipped(const EmaEngine *engine) {
  return engine->trace ? ema_trace_source_get_skipped(engine->trace) : 0;
}

EmaPrefixCacheStats ema_engine_prefix_cache_stats(const EmaEngine *engine) {
  EmaPrefixCacheStats stats = engine->prefix;
  stats.cached_blocks = ema_id_map_size(engine->cache) + engine->run_blocks;
  stats.remote_blocks = engine->room_blocks[ROOM_TIER];
  return stats;
}

guint ema_engine_running(const EmaEngine *engine) {
  return engine->running.length;
}

guint ema_engine_waiting(const EmaEngine *engine) {
  return engine->waiting.length;
}

guint ema_engine_arriving(const EmaEngine *engine) {
  return ema_event_is_scheduled(&engine->arrival_event) &&
         engine->next_arrival <= ema_sim_now(engine->sim);
}
