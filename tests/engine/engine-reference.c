/* engine-reference.c: TEST-ONLY ORACLE. A verbatim copy of the serving
 * engine's scheduler as it was before the O(1)-per-step rewrite of
 * sim/serving/engine.c (git 6758ad4), renamed RefEngine / ref_engine_*. It walks every
 * running request every step, O(batch) per step, which makes it obviously
 * right and slow. tests/engine/test-engine.c runs it side by side with the
 * real engine on random workloads and checks that every step and every
 * request come out identical; bench/bench-engine.c times it as "before".
 * Never link it into libema; do not "fix" it: it defines the behaviour.
 *
 * Semantics (as they were documented in sim/serving/engine.c):
 *
 * Token accounting. A request has S = prompt + generated known tokens and
 * kv_tokens of them in the KV cache. Each step it is scheduled for, it
 * processes chunk = min(S - kv_tokens, budget) tokens; when that brings
 * kv_tokens to S, the step samples one new token (generated += 1). After a
 * recompute preemption kv_tokens = 0 and the request prefills prompt +
 * generated tokens again. A step needs ceil((kv_tokens + chunk) / 16) blocks.
 *
 * Scheduling one step (as vLLM v1): running requests first, oldest first;
 * if one needs a block and none is free, the newest running request is
 * preempted until the block fits or the request itself is the newest, in
 * which case it is preempted too. Then, unless something was preempted in
 * this step, waiting requests are admitted in FCFS order while max_num_seqs,
 * the token budget and the watermark allow. Preempted requests go to the
 * front of the waiting queue. */
#include "ema/serving/engine.h"

typedef struct _RefEngine RefEngine;

RefEngine *ref_engine_new(EmaSim *sim, const EmaEngineConfig *config, EmaKvMemory memory,
                          EmaStepCostFunc step_cost, gpointer step_cost_data,
                          EmaTraceSource *trace);
void ref_engine_free(RefEngine *engine);
void ref_engine_add_observer(RefEngine *engine, const EmaEngineObserver *observer);
void ref_engine_start(RefEngine *engine);
guint64 ref_engine_completed(const RefEngine *engine);
guint64 ref_engine_preemptions(const RefEngine *engine);
guint64 ref_engine_rejected(const RefEngine *engine);
guint ref_engine_running(const RefEngine *engine);
guint ref_engine_waiting(const RefEngine *engine);

/* ---- the engine -------------------------------------------------------- */

struct _RefEngine {
  EmaSim *sim;
  EmaEngineConfig config;
  EmaKvMemory memory;
  EmaStepCostFunc step_cost;
  gpointer step_cost_data;
  EmaTraceSource *trace;
  GArray *observers; /* EmaEngineObserver */

  GQueue waiting;   /* EmaRequest *, FCFS; preempted ones at the head */
  GQueue running;   /* EmaRequest *, oldest admission at the head */
  GPtrArray *batch; /* requests of the step in flight */
  GArray *chunks;   /* guint32 tokens each processes in that step */

  EmaEvent arrival_event, step_event;
  EmaEvent kick_event;   /* a step start after all arrivals of this instant */
  EmaRequestRecord next; /* the arrival scheduled in arrival_event */
  gboolean step_in_flight;
  EmaStepReport step;

  guint64 completed, preemptions, rejected, blocks_held;
};

/* Arrivals fire before a step starts at the same instant. */
#define ARRIVAL_PRIORITY 0

static guint64 blocks_for(guint64 tokens) {
  return (tokens + EMA_KV_BLOCK_TOKENS - 1) / EMA_KV_BLOCK_TOKENS;
}

static guint32 known_tokens(const EmaRequest *request) {
  return request->prompt_tokens + request->generated;
}

static void kick(RefEngine *engine);

static void fetch_arrival(RefEngine *engine) {
  GError *error = NULL;
  if (ema_trace_source_next(engine->trace, &engine->next, &error)) {
    EmaTime at = MAX(engine->next.arrival, ema_sim_now(engine->sim));
    ema_sim_schedule(engine->sim, &engine->arrival_event, at, ARRIVAL_PRIORITY);
  } else if (error) {
    ema_sim_fail(engine->sim, error);
  }
}

static void on_arrival(EmaSim *sim, EmaEvent *event, gpointer data) {
  RefEngine *engine = data;
  EmaRequest *request = g_new0(EmaRequest, 1);
  request->id = engine->next.id;
  request->arrival = ema_sim_now(sim);
  request->scheduled = request->first_token = request->finished = -1;
  request->prompt_tokens = MAX(engine->next.prompt_tokens, 1);
  request->output_tokens = MAX(engine->next.output_tokens, 1);
  fetch_arrival(engine);
  /* A request whose whole KV can never fit would preempt itself forever. */
  if (blocks_for((guint64) request->prompt_tokens + request->output_tokens) >
      engine->memory.ops->total_blocks(engine->memory.self)) {
    engine->rejected++;
    g_free(request);
    return;
  }
  g_queue_push_tail(&engine->waiting, request);
  /* start a step once every arrival of this instant is queued */
  if (!engine->step_in_flight && !ema_event_is_scheduled(&engine->kick_event))
    ema_sim_schedule(sim, &engine->kick_event, ema_sim_now(sim), ARRIVAL_PRIORITY + 1);
}

static void release_blocks(RefEngine *engine, EmaRequest *request) {
  engine->memory.ops->give(engine->memory.self, request->id, request->blocks);
  engine->blocks_held -= request->blocks;
  request->blocks = 0;
}

static gboolean take_blocks(RefEngine *engine, EmaRequest *request, guint64 n) {
  if (n == 0)
    return TRUE;
  if (!engine->memory.ops->take(engine->memory.self, request->id, n))
    return FALSE;
  request->blocks += n;
  engine->blocks_held += n;
  return TRUE;
}

/* Host-link time to move BLOCKS blocks one way (swap mode). */
static EmaTime swap_time(const RefEngine *engine, guint64 blocks) {
  double bytes = (double) blocks * (double) engine->config.block_bytes;
  if (blocks == 0)
    return 0;
  return engine->config.swap_fixed_cost +
         (EmaTime) ((bytes / engine->config.swap_bandwidth) * 1e9 + 0.5);
}

/* Preempt the newest running request; returns the host-link time its swap
 * costs (0 for recompute). */
static EmaTime preempt_newest(RefEngine *engine) {
  EmaRequest *victim = g_queue_pop_tail(&engine->running);
  EmaTime cost = 0;
  victim->preemptions++;
  engine->preemptions++;
  engine->step.preempted++;
  if (engine->config.preempt == EMA_PREEMPT_SWAP) {
    cost = swap_time(engine, victim->blocks);
    victim->swapped = TRUE;
  } else {
    victim->kv_tokens = 0;
  }
  release_blocks(engine, victim);
  g_queue_push_head(&engine->waiting, victim);
  return cost;
}

/* Add REQUEST with CHUNK tokens to the step batch sums. */
static void add_to_batch(RefEngine *engine, EmaRequest *request, guint32 chunk) {
  EmaStepBatch *b = &engine->step.batch;
  double kv = request->kv_tokens;
  gboolean samples = request->kv_tokens + chunk == known_tokens(request);
  if (chunk == 1 && request->generated > 0) {
    b->decode_seqs++;
    b->decode_context += kv + 1;
  } else {
    b->prefill_tokens += chunk;
    /* token i of the chunk attends to kv + i tokens (i = 1..chunk) */
    b->prefill_context += chunk * kv + (double) chunk * (chunk + 1) / 2;
    b->prefill_kv_read += kv + chunk;
    b->prefill_chunks++;
  }
  if (samples)
    b->logits++;
  g_ptr_array_add(engine->batch, request);
  g_array_append_val(engine->chunks, chunk);
}

/* Schedule the running requests; returns the swap time spent. */
static EmaTime schedule_running(RefEngine *engine, guint64 *budget) {
  EmaTime swap = 0;
  GList *link = engine->running.head;
  while (link && *budget > 0) {
    EmaRequest *request = link->data;
    guint32 chunk = (guint32) MIN((guint64) (known_tokens(request) - request->kv_tokens), *budget);
    guint64 need = blocks_for(request->kv_tokens + chunk) - request->blocks;
    gboolean preempted_self = FALSE;
    while (!take_blocks(engine, request, need)) {
      if (engine->running.tail == link)
        preempted_self = TRUE;
      swap += preempt_newest(engine);
      if (preempted_self)
        break;
    }
    if (preempted_self)
      break;
    add_to_batch(engine, request, chunk);
    *budget -= chunk;
    link = link->next;
  }
  return swap;
}

/* Admit waiting requests in FCFS order; returns the swap-in time spent. */
static EmaTime admit_waiting(RefEngine *engine, guint64 *budget) {
  EmaTime swap = 0;
  while (!g_queue_is_empty(&engine->waiting) && *budget > 0 &&
         engine->running.length < engine->config.max_num_seqs) {
    EmaRequest *request = g_queue_peek_head(&engine->waiting);
    guint32 resume_kv = request->swapped ? request->kv_tokens : 0;
    guint32 chunk = (guint32) MIN((guint64) (known_tokens(request) - resume_kv), *budget);
    guint64 need = blocks_for(resume_kv + chunk);
    guint64 free_blocks = engine->memory.ops->free_blocks(engine->memory.self);
    if (free_blocks < need + engine->config.watermark_blocks)
      break;
    g_queue_pop_head(&engine->waiting);
    if (request->swapped) {
      swap += swap_time(engine, blocks_for(request->kv_tokens));
      request->swapped = FALSE;
    }
    take_blocks(engine, request, need);
    if (request->scheduled < 0)
      request->scheduled = ema_sim_now(engine->sim);
    g_queue_push_tail(&engine->running, request);
    add_to_batch(engine, request, chunk);
    *budget -= chunk;
  }
  return swap;
}

static void on_step_done(EmaSim *sim, EmaEvent *event, gpointer data);

static void on_kick(EmaSim *sim, EmaEvent *event, gpointer data) {
  kick(data);
}

/* Start a step if none is in flight and there is work. */
static void kick(RefEngine *engine) {
  guint64 budget = engine->config.max_num_batched_tokens;
  EmaTime swap;
  if (engine->step_in_flight)
    return;
  memset(&engine->step, 0, sizeof engine->step);
  g_ptr_array_set_size(engine->batch, 0);
  g_array_set_size(engine->chunks, 0);
  swap = schedule_running(engine, &budget);
  if (engine->step.preempted == 0)
    swap += admit_waiting(engine, &budget);
  if (engine->batch->len == 0)
    return; /* idle until the next arrival */
  engine->step.start = ema_sim_now(engine->sim);
  engine->step.duration = swap + engine->step_cost(engine->step_cost_data, &engine->step.batch);
  engine->step_in_flight = TRUE;
  ema_sim_schedule_in(engine->sim, &engine->step_event, engine->step.duration, 0);
}

static void finish_request(RefEngine *engine, EmaRequest *request) {
  request->finished = ema_sim_now(engine->sim);
  g_queue_remove(&engine->running, request);
  release_blocks(engine, request);
  engine->completed++;
  for (guint i = 0; i < engine->observers->len; i++) {
    const EmaEngineObserver *o = &g_array_index(engine->observers, EmaEngineObserver, i);
    if (o->on_finish)
      o->on_finish(o->data, request);
  }
  g_free(request);
}

static void on_step_done(EmaSim *sim, EmaEvent *event, gpointer data) {
  RefEngine *engine = data;
  EmaTime now = ema_sim_now(sim);
  engine->step_in_flight = FALSE;
  for (guint i = 0; i < engine->batch->len; i++) {
    EmaRequest *request = engine->batch->pdata[i];
    request->kv_tokens += g_array_index(engine->chunks, guint32, i);
    if (request->kv_tokens == known_tokens(request)) {
      request->generated++;
      if (request->first_token < 0)
        request->first_token = now;
    }
  }
  engine->step.running = engine->running.length;
  engine->step.waiting = engine->waiting.length;
  engine->step.blocks_free = engine->memory.ops->free_blocks(engine->memory.self);
  engine->step.blocks_used = engine->blocks_held;
  for (guint i = 0; i < engine->observers->len; i++) {
    const EmaEngineObserver *o = &g_array_index(engine->observers, EmaEngineObserver, i);
    if (o->on_step)
      o->on_step(o->data, &engine->step);
  }
  for (guint i = 0; i < engine->batch->len; i++) {
    EmaRequest *request = engine->batch->pdata[i];
    if (request->generated >= request->output_tokens)
      finish_request(engine, request);
  }
  g_ptr_array_set_size(engine->batch, 0);
  kick(engine);
}

RefEngine *ref_engine_new(EmaSim *sim, const EmaEngineConfig *config, EmaKvMemory memory,
                          EmaStepCostFunc step_cost, gpointer step_cost_data,
                          EmaTraceSource *trace) {
  RefEngine *engine = g_new0(RefEngine, 1);
  g_return_val_if_fail(config->max_num_seqs > 0 && config->max_num_batched_tokens > 0, NULL);
  engine->sim = sim;
  engine->config = *config;
  engine->memory = memory;
  engine->step_cost = step_cost;
  engine->step_cost_data = step_cost_data;
  engine->trace = trace;
  engine->observers = g_array_new(FALSE, FALSE, sizeof(EmaEngineObserver));
  engine->batch = g_ptr_array_new();
  engine->chunks = g_array_new(FALSE, FALSE, sizeof(guint32));
  g_queue_init(&engine->waiting);
  g_queue_init(&engine->running);
  ema_event_init(&engine->arrival_event, on_arrival, engine);
  ema_event_init(&engine->step_event, on_step_done, engine);
  ema_event_init(&engine->kick_event, on_kick, engine);
  return engine;
}

void ref_engine_free(RefEngine *engine) {
  if (engine == NULL)
    return;
  ema_sim_cancel(engine->sim, &engine->arrival_event);
  ema_sim_cancel(engine->sim, &engine->step_event);
  ema_sim_cancel(engine->sim, &engine->kick_event);
  g_queue_clear_full(&engine->waiting, g_free);
  g_queue_clear_full(&engine->running, g_free);
  g_ptr_array_unref(engine->batch);
  g_array_unref(engine->chunks);
  g_array_unref(engine->observers);
  ema_trace_source_free(engine->trace);
  g_free(engine);
}

void ref_engine_add_observer(RefEngine *engine, const EmaEngineObserver *observer) {
  g_array_append_val(engine->observers, *observer);
}

void ref_engine_start(RefEngine *engine) {
  fetch_arrival(engine);
}

guint64 ref_engine_completed(const RefEngine *engine) {
  return engine->completed;
}

guint64 ref_engine_preemptions(const RefEngine *engine) {
  return engine->preemptions;
}

guint64 ref_engine_rejected(const RefEngine *engine) {
  return engine->rejected;
}

guint ref_engine_running(const RefEngine *engine) {
  return engine->running.length;
}

guint ref_engine_waiting(const RefEngine *engine) {
  return engine->waiting.length;
}
