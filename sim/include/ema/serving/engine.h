/* engine.h: a vLLM-like serving engine for one tenant (one GPU, or one
 * tensor-parallel group). Continuous batching: an FCFS waiting queue,
 * max_num_seqs, max_num_batched_tokens and chunked prefill; a paged KV cache
 * of block_tokens-token blocks (16 by default) taken from a memory interface
 * (EmaKvMemory), admission only with a watermark of free blocks left, and
 * preemption of the newest running request when a running request needs a
 * block and none is free (recompute, as vLLM v1; or swap to host, as vLLM
 * v0). vLLM's V1 or V0 step filling, max_model_len, a fixed CPU cost per
 * step, prefix caching and closed-loop clients are EmaEngineConfig options.
 *
 * The engine only decides and keeps state; the time of a step comes from a
 * step-cost function (normally the step-time model), and what happened is
 * told to observers (metrics, CSV writers). Requests arrive from a trace
 * source that is read lazily, so memory stays flat in trace length. */
#pragma once

#include <glib.h>

#include "ema/core/event.h"
#include "ema/hw/steptime.h"
#include "ema/traces/trace.h"

G_BEGIN_DECLS

/* vLLM's default block size; EmaEngineConfig.block_tokens overrides it. */
#define EMA_KV_BLOCK_TOKENS 16

/* Who a memory call is for: a request's serial (EmaRequest.serial), or one
 * of these two. */
/* the prefix cache's blocks (held by several requests) */
#define EMA_KV_PREFIX_CACHE G_MAXUINT64
/* the steady region's blocks in one take (a memory without take_each) */
#define EMA_KV_UNNAMED (G_MAXUINT64 - 1)

/* What a request is doing, as its memory is told (EmaKvMemoryOps.state). */
typedef enum {
  EMA_KV_WAITING,   /* queued, not admitted yet: holds nothing */
  EMA_KV_RUNNING,   /* admitted: in the steps, its KV read by each one it is in */
  EMA_KV_PREEMPTED, /* preempted, back in the queue: its KV dropped (recompute) or swapped out */
  EMA_KV_CACHED,    /* the prefix cache (EMA_KV_PREFIX_CACHE): cached blocks requests hold */
  EMA_KV_FINISHED,  /* finished or rejected: holds nothing, gone */
} EmaKvState;

/* What the prefix cache's remote tier does with cached blocks no request
 * holds (EmaKvMemoryOps.cache_tier). */
typedef enum {
  EMA_KV_TIER_DEMOTE, /* they leave the GPU's own room for a peer's (copied, not waited for) */
  EMA_KV_TIER_FETCH,  /* they come back from a peer for a hit (copied; the step waits) */
  EMA_KV_TIER_DROP,   /* they are dropped from a peer: their room went */
} EmaKvTierMove;

/* Where KV blocks come from, request by request. The static-partition
 * baseline is a fixed pool (ema_kv_pool_new); the elastic pool implements
 * the same interface and keeps, per request, where its blocks are. Every
 * block the engine holds is one request's or the prefix cache's
 * (EMA_KV_PREFIX_CACHE): a request's blocks are given back by that request
 * (all of them when it finishes or is preempted), and a block it filled
 * that becomes cached passes to the cache (to_cache). */
typedef struct {
  /* REQUEST takes N blocks; FALSE (and nothing taken) if fewer are free. */
  gboolean (*take)(gpointer self, guint64 request, guint64 n);
  /* REQUEST gives back N of its blocks. */
  void (*give)(gpointer self, guint64 request, guint64 n);
  /* Blocks free now. */
  guint64 (*free_blocks)(gpointer self);
  /* Blocks in all (free + taken). */
  guint64 (*total_blocks)(gpointer self);
  /* Optional (NULL: not told). Called at the end of a scheduling pass that
   * was held back by blocks, with that pass's blocks_short (see
   * EmaStepReport), whether or not a step started: an idle engine whose
   * queue's head does not fit reports no step, so this is the only word of
   * its need. It may schedule events, call ema_engine_release_blocks or
   * ema_engine_wake (only once blocks were added: a woken engine that is
   * still short asks again at the same instant); it may not take or give
   * blocks for the engine. */
  void (*want)(gpointer self, guint64 blocks_short);
  /* Optional (NULL: the engine charges its host link, EmaEngineConfig's
   * swap_bandwidth and swap_fixed_cost). In swap mode, a preempted
   * request's BLOCKS of KV leave the GPU (swap_out, after they were given
   * back) or come back (swap_in, before they are taken); each returns the
   * time the copy takes, which the engine adds to the step, and the memory
   * decides where the data is kept meanwhile. */
  EmaTime (*swap_out)(gpointer self, guint64 blocks);
  EmaTime (*swap_in)(gpointer self, guint64 blocks);
  /* Optional, with swap_out: the time swapping BLOCKS out now and back in
   * later would take, where swap_out would put them now; changes nothing.
   * EMA_PREEMPT_CHEAPER weighs it against recomputing (NULL: twice the
   * host link's swap time). */
  EmaTime (*swap_estimate)(gpointer self, guint64 blocks);
  /* Optional, with swap_out: BLOCKS of swapped-out KV will never come back
   * (their request was aborted while swapped out): the memory lets go of
   * where it kept them, with no copy. */
  void (*swap_drop)(gpointer self, guint64 blocks);
  /* Optional: each of the N requests REQUESTS takes one block, all or
   * nothing (the steady region's requests that cross a block boundary in a
   * step, in admission order). NULL: the memory does not keep requests
   * apart, and the engine takes them in one take(EMA_KV_UNNAMED, N), so a
   * step in which no request changes state stays O(1); with it, such a step
   * costs O(the requests that take a block). */
  gboolean (*take_each)(gpointer self, const guint64 *requests, guint64 n);
  /* Optional: N of REQUEST's blocks (those it filled with its prompt's
   * identified prefix, its first ones) become the prefix cache's. */
  void (*to_cache)(gpointer self, guint64 request, guint64 n);
  /* Optional: REQUEST is now in STATE (arrival: WAITING; admission:
   * RUNNING; preemption: PREEMPTED, after its blocks were given back;
   * finish or rejection: FINISHED, holding nothing). */
  void (*state)(gpointer self, guint64 request, EmaKvState state);
  /* Optional: the prefix cache's room (NULL: cached blocks no request
   * holds may stay in any of the free blocks, all counted local and hit
   * for free). Of the free blocks, *LOCAL are in the GPU's own slices and
   * *REMOTE in slices peers lend it that may keep cached blocks (the remote
   * tier; 0: none). The engine keeps its most recently freed cached
   * blocks in local room, moves older ones to the tier when local room is
   * taken (demote), drops the oldest of the tier first when its room goes
   * (a reclaim, or the tenant's own growth), and brings a tier block back
   * for a hit (fetch). */
  void (*cache_room)(gpointer self, guint64 *local, guint64 *remote);
  /* Optional, with cache_room: N cached blocks make MOVE; returns the time
   * the step waits for it (a fetch's copy; 0 otherwise). */
  EmaTime (*cache_tier)(gpointer self, EmaKvTierMove move, guint64 n);
} EmaKvMemoryOps;

typedef struct {
  const EmaKvMemoryOps *ops;
  gpointer self;
} EmaKvMemory;

typedef struct _EmaKvPool EmaKvPool;
EmaKvPool *ema_kv_pool_new(guint64 blocks);
void ema_kv_pool_free(EmaKvPool *pool);
EmaKvMemory ema_kv_pool_memory(EmaKvPool *pool);
G_DEFINE_AUTOPTR_CLEANUP_FUNC(EmaKvPool, ema_kv_pool_free)

typedef enum {
  EMA_PREEMPT_RECOMPUTE, /* drop the KV; the request prefills again later */
  EMA_PREEMPT_SWAP,      /* copy the KV to host memory and back before it resumes */
  /* each preempted request the cheaper of the two by the model: the swap's
   * round trip (EmaKvMemoryOps.swap_estimate) against the time its
   * recompute adds to steps (ema_engine_set_step_estimate) */
  EMA_PREEMPT_CHEAPER,
} EmaPreemptMode;

/* How a step is filled (vLLM's two engines). */
typedef enum {
  /* V1: running requests first (decodes and prefill chunks alike, in
   * admission order), then waiting ones, all within the token budget */
  EMA_SCHEDULER_V1,
  /* V0 (chunked prefill off): a step that can admit waiting requests is
   * prefill-only (whole prompts while the budget holds; the first one is
   * chunked if it alone is over the budget); otherwise the running requests
   * decode (and partly prefilled ones go on) as in V1, with no admission */
  EMA_SCHEDULER_V0,
} EmaSchedulerKind;

/* What the engine's host adds to its steps: an engine profile's costs at a tenant's TP degree
 * and model (ema_engine_profile_costs, tenant.h). */
typedef struct {
  EmaTime step_cpu_cost;         /* fixed CPU time per step, added to its GPU time */
  EmaTime step_cpu_cost_per_seq; /* and CPU time per request scheduled in the step */
  /* the CPU time per step, and per request in it, of processing a step's outputs
   * (detokenisation, stop checks, the output queue) beside the next step's GPU work (V0's
   * async output processing, vLLM 0.6-0.7): a step takes the longer of its GPU time and this,
   * then the CPU time above */
  EmaTime output_cpu_cost, output_cpu_cost_per_seq;
  /* async scheduling: all of the step's CPU work runs beside its GPU work (the step takes the
   * longer of the two), not after it */
  gboolean cpu_overlap;
  /* the host's time to run one forward pass eagerly (every layer's kernels and collectives
   * launched one by one, no CUDA graph): the GPU side of a step run so takes at least this
   * long; 0: not modelled */
  EmaTime eager_cpu_cost;
  /* decode-only steps of at most this many requests replay a captured CUDA graph (no launch
   * cost); the other steps run eagerly. 0: every step runs eagerly */
  guint64 cuda_graph_max_batch;
} EmaEngineCosts;

/* A step of BATCH with SEQS requests scheduled whose step model gave GPU_TIME: its GPU side
 * (GPU_TIME, at least COSTS' eager_cpu_cost where the step runs eagerly) into *GPU, its CPU
 * time (the step's and its output processing's) into *CPU; returns its duration: the longer of
 * the GPU side and the output processing, plus the step's CPU time, or under cpu_overlap the
 * longer of the GPU side and all of the CPU time. */
EmaTime ema_engine_step_duration(const EmaEngineCosts *costs, const EmaStepBatch *batch,
                                 guint64 seqs, EmaTime gpu_time, EmaTime *gpu, EmaTime *cpu);

typedef struct {
  guint64 max_num_seqs;           /* running requests at most */
  guint64 max_num_batched_tokens; /* tokens per step at most */
  guint64 watermark_blocks;       /* admission leaves at least this many blocks free */
  EmaPreemptMode preempt;
  guint64 block_bytes;   /* KV bytes of one block on this GPU (for swap) */
  double swap_bandwidth; /* B/s host link for swap; the slower direction */
  EmaTime swap_fixed_cost;
  guint block_tokens;    /* tokens per KV block; 0 = EMA_KV_BLOCK_TOKENS */
  guint64 max_model_len; /* prompt + output at most; longer ones are rejected; 0 = no limit */
  /* requests waiting at most: one more fails the run (ema_sim_fail, EMA_SIM_ERROR_OVERLOADED)
   * rather than fill the host's memory; 0 = no limit */
  guint64 max_waiting;
  const char *name;     /* the tenant's, for the run's errors (NULL: "the engine"); not copied */
  EmaEngineCosts costs; /* the host's share of each step */
  /* a request becomes schedulable this long after it arrived (the API server's work before the
   * engine sees it); its arrival, TTFT and E2E stay measured from the arrival itself */
  EmaTime request_cpu_cost;
  EmaSchedulerKind scheduler;
  /* the LM head runs on every scheduled request's last token, a prefill chunk's that does not
   * finish its prompt too (vLLM V1), not only on the requests that sample (V0) */
  gboolean logits_every_request;
  /* closed loop: this many clients, each sending its next request (the
   * trace's next, arrival time ignored) the moment its last one finished or
   * was rejected; 0 = open loop (the trace's arrival times) */
  guint64 concurrency;
  /* prefix caching (vLLM's automatic prefix caching): a prompt's full
   * blocks are cached by a hash chained with their parent's, those of its
   * identified prefix (EmaRequestRecord.prefix_ids) shared with other
   * requests, the others its own (hit after a recompute preemption); see
   * engine.c */
  gboolean prefix_caching;
  /* the clients give up on a request this long after sending it (its arrival): one not finished
   * by then is aborted at the engine's next scheduling pass (vLLM aborts a request whose client
   * disconnected, between steps), its blocks given back, and counted as timed out
   * (ema_engine_timed_out), not finished: observers are not told of it (one that produces its
   * last token at or past its timeout is timed out too); a closed loop's client sends its next
   * request then. 0 = the clients wait for ever */
  EmaTime client_timeout;
} EmaEngineConfig;

/* One request as the engine tracks it; observers read it, never write. */
typedef struct {
  guint64 id;
  guint64 serial; /* the engine's number for it (arrivals from 0, unique): its memory's name */
  EmaTime arrival, scheduled, first_token, finished; /* -1 until it happens */
  guint32 prompt_tokens, output_tokens;
  guint32 kv_tokens; /* tokens whose KV is in the cache */
  guint32 generated; /* output tokens produced */
  guint64 blocks;    /* KV blocks held */
  guint32 preemptions;
  gboolean swapped; /* KV on host (swap mode), to be brought back */
} EmaRequest;

/* What one step did, for observers. */
typedef struct {
  EmaTime start, duration; /* ema_engine_step_duration of gpu_time and cpu_time, + swap */
  /* what the step-cost function gave, at least the eager launch time if the step ran eagerly */
  EmaTime gpu_time;
  /* step_cpu_cost + step_cpu_cost_per_seq x the requests scheduled, and the same of the output
   * processing (output_cpu_cost) */
  EmaTime cpu_time;
  EmaStepBatch batch;
  guint prefill_seqs; /* requests with a prefill chunk in the step (decode_seqs: decoding) */
  /* tokens the step produced: its decodes and the chunks that finish their prompts (batch.logits
   * also counts the other chunks where the engine runs the LM head on them) */
  guint64 sampled;
  guint running, waiting;
  guint64 blocks_used, blocks_free;
  guint preempted; /* requests preempted while scheduling this step */
  guint finished;  /* requests that produced their last token in this step */
  /* How many more free blocks this step would have needed, at the start of
   * its scheduling, to preempt nothing and to admit the head of the waiting
   * queue; 0 when nothing was held back by blocks. When the step preempts:
   * the blocks its running requests would have taken with nothing
   * preempted (each as far as the token budget reaches), plus, if the
   * budget and max_num_seqs would still have let the waiting queue's head
   * in, that head's blocks and the watermark, minus the free blocks. When
   * it does not preempt but admission stopped on blocks: the blocks and
   * watermark of the request it stopped at, minus the free blocks then. */
  guint64 blocks_short;
  /* requests preempted by ema_engine_release_blocks since the previous
   * step's report (not counted in preempted) */
  guint released;
} EmaStepReport;

typedef struct {
  void (*on_step)(gpointer data, const EmaStepReport *step);
  void (*on_finish)(gpointer data, const EmaRequest *request);
  gpointer data;
} EmaEngineObserver;

/* Time of one step with BATCH (normally ema_step_time). */
typedef EmaTime (*EmaStepCostFunc)(gpointer data, const EmaStepBatch *batch);

typedef struct _EmaEngine EmaEngine;

/* The engine takes TRACE (and frees it). */
EmaEngine *ema_engine_new(EmaSim *sim, const EmaEngineConfig *config, EmaKvMemory memory,
                          EmaStepCostFunc step_cost, gpointer step_cost_data,
                          EmaTraceSource *trace);
void ema_engine_free(EmaEngine *engine);
G_DEFINE_AUTOPTR_CLEANUP_FUNC(EmaEngine, ema_engine_free)

void ema_engine_add_observer(EmaEngine *engine, const EmaEngineObserver *observer);
/* The step time EMA_PREEMPT_CHEAPER prices a recompute with: ESTIMATE must
 * not change anything (the step-cost function of a shared memory charges
 * its lenders). Unset: the engine's step-cost function. The price of
 * recomputing K tokens: the prefill of those tokens, in chunks of the token
 * budget left beside the last step's decodes (larger where that would make
 * more than 64), each chunk priced as what it adds to a step of those
 * decodes alone. It leaves out prefix-cache hits
 * the recompute may find (it is priced as if none). */
void ema_engine_set_step_estimate(EmaEngine *engine, EmaStepCostFunc estimate, gpointer data);
/* The EmaStepCostFunc of a step model alone: ema_step_time(STEP_MODEL,
 * BATCH) (an EmaStepModel), e.g. for ema_engine_set_step_estimate. */
EmaTime ema_engine_model_step_cost(gpointer step_model, const EmaStepBatch *batch);
/* Schedule the first arrival. A trace error fails the simulation. */
void ema_engine_start(EmaEngine *engine);

guint64 ema_engine_completed(const EmaEngine *engine);
guint64 ema_engine_preemptions(const EmaEngine *engine);
/* Of those, the ones that swapped the request's KV out (the rest dropped
 * it to recompute). */
guint64 ema_engine_preemptions_swapped(const EmaEngine *engine);
/* Requests dropped because their prompt and output can never fit in the KV
 * memory at once, or are longer than max_model_len (both counted here). */
guint64 ema_engine_rejected(const EmaEngine *engine);
/* Of those, the ones longer than max_model_len (vLLM answers them with an
 * error: prompt + max_tokens over the model's context). */
guint64 ema_engine_rejected_too_long(const EmaEngine *engine);
/* Requests whose trace asked for 0 output tokens: each ran with 1 (vLLM's max_tokens is at least
 * 1). */
guint64 ema_engine_outputs_raised(const EmaEngine *engine);
/* Rows of its trace file the reader left out (BurstGPT's failed requests, 0 response tokens,
 * without trace.keep_failed). */
guint64 ema_engine_trace_skipped(const EmaEngine *engine);
/* Requests whose client gave up before their last token (client_timeout): aborted, or finished
 * at or past the timeout; not counted in ema_engine_completed. */
guint64 ema_engine_timed_out(const EmaEngine *engine);
guint ema_engine_running(const EmaEngine *engine);

/* Prefix caching, as vLLM counts it: prompt tokens looked up at admission
 * (queries), those found cached (hits), cached blocks evicted, and cached
 * blocks now (held or free). */
typedef struct {
  guint64 query_tokens, hit_tokens, evictions, cached_blocks;
  /* the remote tier (EmaKvMemoryOps.cache_room): hit tokens served from
   * peers, blocks demoted to peers, fetched back, and on peers now */
  guint64 remote_hit_tokens, demoted, fetched, remote_blocks;
} EmaPrefixCacheStats;
EmaPrefixCacheStats ema_engine_prefix_cache_stats(const EmaEngine *engine);
guint ema_engine_waiting(const EmaEngine *engine);
/* Requests that have arrived at the server but are still in its API server (request_cpu_cost),
 * not yet in the engine: 0 or 1, the trace being read one request ahead. */
guint ema_engine_arriving(const EmaEngine *engine);

/* KV blocks the engine holds now (taken from its memory, including those
 * taken for the step in flight). */
guint64 ema_engine_blocks_held(const EmaEngine *engine);
/* The blocks its requests hold (running, waiting), counted one
 * by one, a cached block shared by several once: equal to
 * ema_engine_blocks_held() (an invariant). O(requests). */
guint64 ema_engine_request_blocks(const EmaEngine *engine);
/* The blocks of KV its waiting requests swapped out (swap_out), to come back when each is
 * admitted again: what the memory keeps for it elsewhere. O(waiting). */
guint64 ema_engine_swapped_blocks(const EmaEngine *engine);

/* Give blocks back to the memory: preempt running requests newest first,
 * in the configured mode (recompute drops the KV; swap copies it to host,
 * and the copy's time is added to the next step that starts), until at
 * least BLOCKS blocks came back or no running request is left. Returns the
 * blocks given back (possibly more than BLOCKS: whole requests go). These
 * count as preemptions (ema_engine_preemptions, EmaRequest.preemptions)
 * and in the next step report's released field.
 *
 * Safe between steps, from an observer (requests that have just produced
 * their last token are not preempted: they finish and give their blocks
 * back in a moment), and while a step is in flight: a victim's work in
 * that step is dropped (its tokens are not counted when the step
 * completes, it does not finish there, and the blocks taken for the step
 * come back too). Not from a step-cost function. The caller may then take
 * blocks away from the memory's total: requests that can no longer ever
 * fit in the smaller total are rejected (ema_engine_rejected), running ones
 * at the next scheduling and waiting ones when they reach the queue's head.
 * The engine does not start a step by itself when the memory grows again:
 * call ema_engine_wake(). */
guint64 ema_engine_release_blocks(EmaEngine *engine, guint64 blocks);
/* The same in MODE whatever the configured mode (the swap time from the
 * config's block_bytes, swap_bandwidth and swap_fixed_cost). */
guint64 ema_engine_release_blocks_mode(EmaEngine *engine, guint64 blocks, EmaPreemptMode mode);

/* Which requests ema_engine_release_where preempts. */
typedef enum {
  EMA_KV_VICTIM_SKIP,    /* not this one */
  EMA_KV_VICTIM_PREEMPT, /* preempt it */
  EMA_KV_VICTIM_STOP,    /* enough: stop before it */
} EmaKvVictim;
typedef EmaKvVictim (*EmaKvVictimFunc)(gpointer data, const EmaRequest *request);

/* ema_engine_release_blocks_mode with the victims chosen by PICK: the
 * running requests, newest first (those that have just produced their last
 * token skipped), each preempted in MODE if PICK says so, until it says
 * stop or none is left. PICK sees each request materialised. Returns the
 * blocks given back. The same rules as ema_engine_release_blocks. */
guint64 ema_engine_release_where(EmaEngine *engine, EmaPreemptMode mode, EmaKvVictimFunc pick,
                                 gpointer data);

/* The request whose serial is SERIAL (waiting or running), materialised
 * into *OUT; FALSE if the engine has no such request. *IN_STEP (may be
 * NULL): it is in the step in flight (or, between steps, was in the last
 * one); *LAST_SCHEDULED (may be NULL): the start of the last step it was
 * in, -1 if none. O(1). */
gboolean ema_engine_request(EmaEngine *engine, guint64 serial, EmaRequest *out, gboolean *in_step,
                            EmaTime *last_scheduled);
/* A handle of request SERIAL for ema_engine_ref_request and
 * ema_engine_ref_decoding, valid while the engine holds the request (until
 * its state FINISHED); NULL if it has no such request. */
gpointer ema_engine_request_ref(EmaEngine *engine, guint64 serial);
/* ema_engine_request of the request of handle REF, without the lookup or
 * the copy: the engine's own record, materialised, valid until the engine
 * next acts. O(1). */
const EmaRequest *ema_engine_ref_request(EmaEngine *engine, gpointer ref, EmaTime *last_scheduled);
/* Whether the request of handle REF decodes one token in the step in
 * flight (generated before, in the step, its KV all but the last known
 * token: what ema_engine_request's IN_STEP and fields say), and then its
 * decode context (kv_tokens + 1) in *CONTEXT and its blocks in *BLOCKS.
 * What the pool's offload shares ask of every running request at every
 * step: no lookup, nothing copied. O(1). */
gboolean ema_engine_ref_decoding(EmaEngine *engine, gpointer ref, guint64 *context,
                                 guint64 *blocks);
/* Of the requests that ema_engine_ref_decoding says decode in the step in
 * flight, how many hold cached blocks (*SEQS) and how many cached blocks
 * they hold in all (*BLOCKS; a request's blocks less its own,
 * ema_engine_request_own_blocks). From sums the steady region keeps, and
 * a walk of the step's tail: O(tail in the step). */
void ema_engine_decode_cached(const EmaEngine *engine, guint64 *seqs, guint64 *blocks);
/* The blocks REQUEST (a serial) holds of its own (not the cached ones it
 * shares), and the cached blocks requests hold (EMA_KV_PREFIX_CACHE's). */
guint64 ema_engine_request_own_blocks(EmaEngine *engine, guint64 serial);
guint64 ema_engine_cached_held(const EmaEngine *engine);
/* Tokens per KV block (the config's, EMA_KV_BLOCK_TOKENS when it said 0). */
guint ema_engine_block_tokens(const EmaEngine *engine);

/* Start a step at the current instant if none is in flight and there is
 * work (after the memory gained free blocks, say). Safe from anywhere
 * except a step-cost function; a no-op when a step is in flight. */
void ema_engine_wake(EmaEngine *engine);

/* Diagnostic, for tests and benchmarks: how many times the engine has
 * touched a request individually (scheduled, admitted, preempted, finished,
 * moved into or out of the steady set, applied a step's tokens to it). A
 * decode step in which no request changes state adds O(1) to it. */
guint64 ema_engine_work_counter(const EmaEngine *engine);

G_END_DECLS
