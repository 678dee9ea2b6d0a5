/* test-engine.c: the serving engine on small cases computed by hand. Every
 * step costs exactly 1 ms (a fake step-cost function), so times count
 * steps; block counts are checked after every step against the hand
 * computation in the comments, and the pool never over-commits. Then: the
 * engine against an oracle (engine-reference.c, the plain O(batch) walk)
 * on random workloads, step by step and request by request; the work a
 * step costs (ema_engine_work_counter); ema_engine_release_blocks between
 * and during steps; and blocks_short on cases computed by hand. */
#include "ema/serving/engine.h"

#include <math.h>

#define STEP EMA_MS(1)

typedef struct {
  EmaKvPool *pool;
  EmaKvMemory memory;
  GArray *steps;   /* EmaStepReport */
  GPtrArray *done; /* EmaRequest copies */
  guint64 total_blocks;
} Harness;

static EmaTime one_ms(gpointer data, const EmaStepBatch *batch) {
  return STEP;
}

static void on_step(gpointer data, const EmaStepReport *step) {
  Harness *h = data;
  g_assert_cmpuint(step->blocks_used + step->blocks_free, ==, h->total_blocks);
  g_array_append_val(h->steps, *step);
}

static void on_finish(gpointer data, const EmaRequest *request) {
  Harness *h = data;
  g_ptr_array_add(h->done, g_memdup2(request, sizeof *request));
}

static const EmaRequest *find_done(Harness *h, guint64 id) {
  for (guint i = 0; i < h->done->len; i++)
    if (((EmaRequest *) h->done->pdata[i])->id == id)
      return h->done->pdata[i];
  g_assert_not_reached();
}

/* Run requests RECORDS through an engine of CONFIG with POOL blocks; fills H. */
static void run_config(Harness *h, const EmaRequestRecord *records, gsize n, guint64 pool_blocks,
                       const EmaEngineConfig *config) {
  g_autoptr(EmaSim) sim = ema_sim_new();
  EmaEngineObserver observer = {on_step, on_finish, h};
  EmaEngine *engine;
  g_autoptr(GError) error = NULL;

  h->total_blocks = pool_blocks;
  h->pool = ema_kv_pool_new(pool_blocks);
  h->memory = ema_kv_pool_memory(h->pool);
  h->steps = g_array_new(FALSE, TRUE, sizeof(EmaStepReport));
  h->done = g_ptr_array_new_with_free_func(g_free);
  engine =
      ema_engine_new(sim, config, h->memory, one_ms, NULL, ema_trace_source_new_array(records, n));
  ema_engine_add_observer(engine, &observer);
  ema_engine_start(engine);
  g_assert_true(ema_sim_run_until(sim, EMA_TIME_NEVER, &error));
  g_assert_no_error(error);
  g_assert_cmpuint(ema_engine_running(engine), ==, 0);
  g_assert_cmpuint(ema_engine_waiting(engine), ==, 0);
  ema_engine_free(engine);
  /* every block came back */
  g_assert_cmpuint(h->memory.ops->free_blocks(h->memory.self), ==, pool_blocks);
}

/* run_config with a recompute-preempting engine of those limits */
static void run(Harness *h, const EmaRequestRecord *records, gsize n, guint64 pool_blocks,
                guint64 budget, guint64 max_seqs, guint64 watermark) {
  EmaEngineConfig config = {.max_num_seqs = max_seqs,
                            .max_num_batched_tokens = budget,
                            .watermark_blocks = watermark,
                            .preempt = EMA_PREEMPT_RECOMPUTE};
  run_config(h, records, n, pool_blocks, &config);
}

static void harness_clear(Harness *h) {
  ema_kv_pool_free(h->pool);
  g_array_unref(h->steps);
  g_ptr_array_unref(h->done);
}

/* Three requests at t = 0, 100 blocks, budget 64 tokens:
 *   r0 prompt 40 output 3, r1 prompt 20 output 2, r2 prompt 10 output 1.
 * Step 1 (0-1 ms): admit r0 (40 tokens, 3 blocks), r1 (20, 2 blocks), r2
 *   with the 4 tokens left (1 block): 64 prefill tokens, 6 blocks. r0 and
 *   r1 finish their prompts and sample their first tokens at 1 ms.
 * Step 2 (1-2 ms): r0 and r1 decode (contexts 41 and 21: no new block), r2
 *   prefills its last 6 tokens (10 tokens fit its block) and samples its
 *   first token. r1 (2 tokens) and r2 (1 token) finish at 2 ms: 3 blocks left.
 * Step 3 (2-3 ms): r0 decodes (context 42, 3 blocks) and finishes at 3 ms. */
static void test_three_requests(void) {
  const EmaRequestRecord records[] = {
      {.arrival = 0, .prompt_tokens = 40, .output_tokens = 3, .id = 0},
      {.arrival = 0, .prompt_tokens = 20, .output_tokens = 2, .id = 1},
      {.arrival = 0, .prompt_tokens = 10, .output_tokens = 1, .id = 2},
  };
  Harness h = {0};
  const EmaStepReport *s;
  run(&h, records, G_N_ELEMENTS(records), 100, 64, 8, 0);

  g_assert_cmpuint(h.steps->len, ==, 3);
  s = &g_array_index(h.steps, EmaStepReport, 0);
  g_assert_cmpint(s->start, ==, 0);
  g_assert_cmpuint(s->batch.prefill_tokens, ==, 64);
  g_assert_cmpuint(s->batch.decode_seqs, ==, 0);
  g_assert_cmpuint(s->batch.logits, ==, 2);
  g_assert_cmpuint(s->sampled, ==, 2);
  /* attention: r0 sum 1..40 = 820, r1 sum 1..20 = 210, r2 sum 1..4 = 10 */
  g_assert_cmpfloat(s->batch.prefill_context, ==, 820 + 210 + 10);
  g_assert_cmpuint(s->blocks_used, ==, 6);
  s = &g_array_index(h.steps, EmaStepReport, 1);
  g_assert_cmpint(s->start, ==, STEP);
  g_assert_cmpuint(s->batch.decode_seqs, ==, 2);
  g_assert_cmpfloat(s->batch.decode_context, ==, 41 + 21);
  g_assert_cmpuint(s->batch.prefill_tokens, ==, 6);
  /* r2's chunk: tokens 5..10 attend to 5..10 tokens: 45 */
  g_assert_cmpfloat(s->batch.prefill_context, ==, 45);
  g_assert_cmpuint(s->batch.logits, ==, 3);
  g_assert_cmpuint(s->sampled, ==, 3);
  g_assert_cmpuint(s->blocks_used, ==, 6); /* reported before r1 and r2 leave */
  s = &g_array_index(h.steps, EmaStepReport, 2);
  g_assert_cmpuint(s->batch.decode_seqs, ==, 1);
  g_assert_cmpfloat(s->batch.decode_context, ==, 42);
  g_assert_cmpuint(s->blocks_used, ==, 3);

  g_assert_cmpint(find_done(&h, 0)->first_token, ==, STEP);
  g_assert_cmpint(find_done(&h, 0)->finished, ==, 3 * STEP);
  g_assert_cmpint(find_done(&h, 1)->first_token, ==, STEP);
  g_assert_cmpint(find_done(&h, 1)->finished, ==, 2 * STEP);
  g_assert_cmpint(find_done(&h, 2)->first_token, ==, 2 * STEP);
  g_assert_cmpint(find_done(&h, 2)->finished, ==, 2 * STEP);
  for (guint i = 0; i < 3; i++) {
    const EmaRequest *r = find_done(&h, i);
    g_assert_cmpint(r->scheduled, ==, 0);
    g_assert_cmpuint(r->preemptions, ==, 0);
    g_assert_cmpuint(r->generated, ==, r->output_tokens);
  }
  harness_clear(&h);
}

/* The three requests above on an engine whose LM head runs on every scheduled request (vLLM
 * V1's model runner): r2's 4-token chunk in step 1, which does not finish its prompt, takes a
 * row of the LM head too (3 rows, 2 tokens sampled); the other steps are as above, and so are
 * the times, the tokens and the blocks. */
static void test_logits_every_request(void) {
  const EmaRequestRecord records[] = {
      {.arrival = 0, .prompt_tokens = 40, .output_tokens = 3, .id = 0},
      {.arrival = 0, .prompt_tokens = 20, .output_tokens = 2, .id = 1},
      {.arrival = 0, .prompt_tokens = 10, .output_tokens = 1, .id = 2},
  };
  const EmaEngineConfig config = {.max_num_seqs = 8,
                                  .max_num_batched_tokens = 64,
                                  .preempt = EMA_PREEMPT_RECOMPUTE,
                                  .logits_every_request = TRUE};
  const guint64 logits[] = {3, 3, 1}, sampled[] = {2, 3, 1}, used[] = {6, 6, 3};
  Harness h = {0};
  run_config(&h, records, G_N_ELEMENTS(records), 100, &config);
  g_assert_cmpuint(h.steps->len, ==, 3);
  for (guint i = 0; i < 3; i++) {
    const EmaStepReport *s = &g_array_index(h.steps, EmaStepReport, i);
    g_assert_cmpint(s->start, ==, i * STEP);
    g_assert_cmpuint(s->batch.logits, ==, logits[i]);
    g_assert_cmpuint(s->sampled, ==, sampled[i]);
    g_assert_cmpuint(s->blocks_used, ==, used[i]);
  }
  g_assert_cmpint(find_done(&h, 2)->first_token, ==, 2 * STEP);
  g_assert_cmpint(find_done(&h, 0)->finished, ==, 3 * STEP);
  harness_clear(&h);
}

/* Two requests of prompt 16 and output 40 in a pool of 4 blocks. Step 1
 * prefills both (1 block each); step n >= 2 decodes both with context
 * 16 + n - 1: step 2 needs each one's second block (4 used). Contexts reach
 * 32 in step 17; step 18 (starting at 17 ms) would take context 33, a third
 * block for r0, and none is free: r1 (the newest) is preempted there and
 * nowhere earlier. r1 had generated 17 tokens; it must recompute 33 tokens
 * (3 blocks) and only 1 is free while r0 runs, so it waits until r0
 * finishes its 40th token at 40 ms. */
static void test_preempt_when_full(void) {
  const EmaRequestRecord records[] = {
      {.arrival = 0, .prompt_tokens = 16, .output_tokens = 40, .id = 0},
      {.arrival = 0, .prompt_tokens = 16, .output_tokens = 40, .id = 1},
  };
  Harness h = {0};
  const EmaRequest *r0, *r1;
  guint preempted_at = 0, preempted_total = 0;
  run(&h, records, G_N_ELEMENTS(records), 4, 1024, 8, 0);

  for (guint i = 0; i < h.steps->len; i++) {
    const EmaStepReport *s = &g_array_index(h.steps, EmaStepReport, i);
    if (s->preempted) {
      preempted_at = (guint) (s->start / STEP);
      preempted_total += s->preempted;
    }
    if (s->start == STEP)
      g_assert_cmpuint(s->blocks_used, ==, 4);
  }
  g_assert_cmpuint(preempted_total, ==, 1);
  g_assert_cmpuint(preempted_at, ==, 17);
  r0 = find_done(&h, 0);
  r1 = find_done(&h, 1);
  g_assert_cmpuint(r0->preemptions, ==, 0);
  g_assert_cmpuint(r1->preemptions, ==, 1);
  g_assert_cmpint(r0->finished, ==, 40 * STEP);
  /* r1: re-prefill of 33 tokens in step 41 (40-41 ms) yields token 18;
   * tokens 19..40 take 22 more steps: done at 63 ms. */
  g_assert_cmpint(r1->finished, ==, 63 * STEP);
  harness_clear(&h);
}

/* The watermark: admission needs blocks + watermark free. 12 blocks,
 * watermark 2. r0 (prompt 32, output 4) takes 2 blocks, then a third for
 * context 33 in its first decode step. r1 (prompt 130: 9 blocks) arrives at
 * 10 us and finds 9 free, short of 9 + 2, until r0 is done. */
static void test_watermark(void) {
  const EmaRequestRecord records[] = {
      {.arrival = 0, .prompt_tokens = 32, .output_tokens = 4, .id = 0},
      {.arrival = EMA_US(10), .prompt_tokens = 130, .output_tokens = 1, .id = 1},
  };
  Harness h = {0};
  run(&h, records, G_N_ELEMENTS(records), 12, 1024, 8, 2);
  /* r0: prefill step 0-1 ms (first token), decodes 1-2, 2-3, 3-4: done at 4 ms.
   * During that time free = 12 - 3 = 9 < 9 + 2. r1 starts at 4 ms, done 5 ms. */
  g_assert_cmpint(find_done(&h, 0)->finished, ==, 4 * STEP);
  g_assert_cmpint(find_done(&h, 1)->scheduled, ==, 4 * STEP);
  g_assert_cmpint(find_done(&h, 1)->finished, ==, 5 * STEP);
  harness_clear(&h);
}

/* Client timeouts of 5.5 ms (max_num_seqs 1, 100 blocks, every step 1 ms):
 *   r0 at 0 (prompt 16, output 4): steps 0-1 .. 3-4, done at 4 ms (completed);
 *   r1 at 0 (output 10): admitted at 4 ms, its first two tokens at 5 and 6 ms; at the
 *     6 ms pass it is 6 ms old: aborted, running (its 2 blocks back);
 *   r2 at 0.5 ms (output 1): still waiting at 6 ms, 5.5 ms old: aborted, never admitted;
 *   r3 at 1 ms (output 1): 5 ms old at 6 ms, admitted; its one token at 7 ms is 6 ms after
 *     it was sent: its client gave up first, so it is timed out too, though it finished.
 * Only r0 is told to the observers; the run ends at 7 ms with every block back. */
static void test_timeout(void) {
  const EmaRequestRecord records[] = {
      {.arrival = 0, .prompt_tokens = 16, .output_tokens = 4, .id = 0},
      {.arrival = 0, .prompt_tokens = 16, .output_tokens = 10, .id = 1},
      {.arrival = EMA_US(500), .prompt_tokens = 16, .output_tokens = 1, .id = 2},
      {.arrival = EMA_MS(1), .prompt_tokens = 16, .output_tokens = 1, .id = 3},
  };
  EmaEngineConfig config = {.max_num_seqs = 1,
                            .max_num_batched_tokens = 1024,
                            .preempt = EMA_PREEMPT_RECOMPUTE,
                            .client_timeout = EMA_US(5500)};
  Harness h = {0};
  const EmaStepReport *last;
  run_config(&h, records, G_N_ELEMENTS(records), 100, &config);
  g_assert_cmpuint(h.done->len, ==, 1);
  g_assert_cmpint(find_done(&h, 0)->finished, ==, 4 * STEP);
  g_assert_cmpuint(h.steps->len, ==, 7);
  /* the 6 ms step is r3's prefill alone: r1 and r2 left before it was scheduled */
  last = &g_array_index(h.steps, EmaStepReport, 6);
  g_assert_cmpint(last->start, ==, 6 * STEP);
  g_assert_cmpuint(last->batch.prefill_tokens, ==, 16);
  g_assert_cmpuint(last->batch.decode_seqs, ==, 0);
  g_assert_cmpuint(last->waiting, ==, 0);
  harness_clear(&h);
}

/* An idle engine whose waiting request can never be admitted (3 blocks + a watermark of 2 on
 * 4 blocks) wakes at the request's deadline to abort it: the run ends then, nothing waiting. */
static void test_timeout_idle(void) {
  g_autoptr(EmaSim) sim = ema_sim_new();
  g_autoptr(EmaKvPool) pool = ema_kv_pool_new(4);
  const EmaRequestRecord records[] = {
      {.arrival = EMA_MS(2), .prompt_tokens = 40, .output_tokens = 1, .id = 0}};
  EmaEngineConfig config = {.max_num_seqs = 4,
                            .max_num_batched_tokens = 64,
                            .watermark_blocks = 2,
                            .client_timeout = EMA_S(1)};
  g_autoptr(EmaEngine) engine = ema_engine_new(sim, &config, ema_kv_pool_memory(pool), one_ms, NULL,
                                               ema_trace_source_new_array(records, 1));
  ema_engine_start(engine);
  g_assert_true(ema_sim_run_until(sim, EMA_TIME_NEVER, NULL));
  g_assert_cmpint(ema_sim_now(sim), ==, EMA_MS(2) + EMA_S(1));
  g_assert_cmpuint(ema_engine_timed_out(engine), ==, 1);
  g_assert_cmpuint(ema_engine_completed(engine), ==, 0);
  g_assert_cmpuint(ema_engine_waiting(engine), ==, 0);
  g_assert_cmpuint(ema_engine_blocks_held(engine), ==, 0);
}

/* A closed loop of one client with a 5.5 ms timeout: r0 (output 10) is aborted at the 6 ms
 * pass, and the client sends r1 (output 1) at once: sent at 6 ms, done at 7 ms. */
static void test_timeout_closed_loop(void) {
  const EmaRequestRecord records[] = {
      {.arrival = 0, .prompt_tokens = 16, .output_tokens = 10, .id = 0},
      {.arrival = 0, .prompt_tokens = 16, .output_tokens = 1, .id = 1},
  };
  EmaEngineConfig config = {.max_num_seqs = 4,
                            .max_num_batched_tokens = 1024,
                            .preempt = EMA_PREEMPT_RECOMPUTE,
                            .concurrency = 1,
                            .client_timeout = EMA_US(5500)};
  Harness h = {0};
  run_config(&h, records, G_N_ELEMENTS(records), 100, &config);
  g_assert_cmpuint(h.done->len, ==, 1);
  g_assert_cmpint(find_done(&h, 1)->arrival, ==, 6 * STEP);
  g_assert_cmpint(find_done(&h, 1)->finished, ==, 7 * STEP);
  harness_clear(&h);
}

/* A request that can never fit is rejected on arrival, not retried forever. */
static void test_reject_too_long(void) {
  g_autoptr(EmaSim) sim = ema_sim_new();
  g_autoptr(EmaKvPool) pool = ema_kv_pool_new(4);
  const EmaRequestRecord records[] = {
      {.arrival = 0, .prompt_tokens = 60, .output_tokens = 10, .id = 0}, /* 70 tokens: 5 blocks */
      {.arrival = 0, .prompt_tokens = 10, .output_tokens = 10, .id = 1},
  };
  EmaEngineConfig config = {.max_num_seqs = 4, .max_num_batched_tokens = 64};
  g_autoptr(EmaEngine) engine = ema_engine_new(sim, &config, ema_kv_pool_memory(pool), one_ms, NULL,
                                               ema_trace_source_new_array(records, 2));
  ema_engine_start(engine);
  g_assert_true(ema_sim_run_until(sim, EMA_TIME_NEVER, NULL));
  g_assert_cmpuint(ema_engine_rejected(engine), ==, 1);
  g_assert_cmpuint(ema_engine_completed(engine), ==, 1);
}

/* A step whose cost the clock cannot count (a step model saturated at EMA_TIME_NEVER by an
 * absurd operator time) ends the run with an error naming the tenant: it once wrapped negative
 * (a signed overflow and a CRITICAL from the scheduler) and the run went on. */
static EmaTime never(gpointer data, const EmaStepBatch *batch) {
  return batch->decode_seqs > 0 ? EMA_TIME_NEVER : STEP;
}

static void test_step_past_clock(void) {
  g_autoptr(EmaSim) sim = ema_sim_new();
  g_autoptr(EmaKvPool) pool = ema_kv_pool_new(16);
  const EmaRequestRecord records[] = {
      {.arrival = 0, .prompt_tokens = 10, .output_tokens = 5, .id = 0},
  };
  /* a CPU cost a step beyond its GPU time: the sum that wrapped */
  EmaEngineConfig config = {.max_num_seqs = 4,
                            .max_num_batched_tokens = 64,
                            .name = "t",
                            .costs = {.step_cpu_cost = 1000}};
  g_autoptr(EmaEngine) engine = ema_engine_new(sim, &config, ema_kv_pool_memory(pool), never, NULL,
                                               ema_trace_source_new_array(records, 1));
  GError *error = NULL;
  ema_engine_start(engine);
  g_assert_false(ema_sim_run_until(sim, EMA_TIME_NEVER, &error));
  g_assert_error(error, EMA_SIM_ERROR, EMA_SIM_ERROR_CLOCK);
  g_assert_cmpstr(error->message, ==,
                  "tenant t: at 0.001001 s a step of 1 tokens takes longer than the simulator's "
                  "clock counts (2^63 ns, about 292 years)");
  g_error_free(error);
}

/* ---- the engine against the plain O(batch) algorithm --------------------- */

/* The oracle (engine-reference.c): the engine as it was before the steady
 * region, walking every running request every step. */
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

typedef struct {
  GArray *steps; /* EmaStepReport */
  GArray *done;  /* EmaRequest */
} Record;

static void record_step(gpointer data, const EmaStepReport *step) {
  g_array_append_val(((Record *) data)->steps, *step);
}

static void record_finish(gpointer data, const EmaRequest *request) {
  g_array_append_val(((Record *) data)->done, *request);
}

/* A step cost that depends on every batch sum, so any difference in a sum
 * shows up in the times of everything that follows. */
static EmaTime sums_cost(gpointer data, const EmaStepBatch *b) {
  return EMA_US(150) +
         (EmaTime) (40 * b->prefill_tokens + 0.01 * b->prefill_context + 0.3 * b->prefill_kv_read +
                    250 * b->decode_seqs + 1.5 * b->decode_context + 90 * b->logits);
}

typedef struct {
  guint64 seed;
  guint requests;
  double rate; /* arrivals per second */
  guint64 pool, budget, max_seqs, watermark;
  guint32 max_output;
  EmaPreemptMode preempt;
} DiffCase;

/* N Poisson arrivals at RATE, prompts 1..3000, outputs 1..MAX_OUTPUT. */
static EmaRequestRecord *random_workload(guint64 seed, guint n, double rate, guint32 max_output) {
  g_autoptr(GRand) rand = g_rand_new_with_seed((guint32) seed);
  EmaRequestRecord *records = g_new0(EmaRequestRecord, n);
  double t = 0;
  for (guint i = 0; i < n; i++) {
    t += -log(1.0 - g_rand_double(rand)) / rate;
    records[i].arrival = (EmaTime) (t * 1e9);
    records[i].prompt_tokens = (guint32) g_rand_int_range(rand, 1, 3001);
    records[i].output_tokens = (guint32) g_rand_int_range(rand, 1, (gint32) max_output + 1);
    records[i].id = i;
  }
  return records;
}

static EmaEngineConfig diff_config(const DiffCase *c) {
  EmaEngineConfig config = {.max_num_seqs = c->max_seqs,
                            .max_num_batched_tokens = c->budget,
                            .watermark_blocks = c->watermark,
                            .preempt = c->preempt,
                            .block_bytes = 2 << 20,
                            .swap_bandwidth = 25e9,
                            .swap_fixed_cost = EMA_US(10)};
  return config;
}

static void run_one(const DiffCase *c, const EmaRequestRecord *records, gboolean reference,
                    Record *out, guint64 totals[3]) {
  g_autoptr(EmaSim) sim = ema_sim_new();
  g_autoptr(EmaKvPool) pool = ema_kv_pool_new(c->pool);
  EmaEngineConfig config = diff_config(c);
  EmaEngineObserver observer = {record_step, record_finish, out};
  EmaTraceSource *trace = ema_trace_source_new_array(records, c->requests);
  g_autoptr(GError) error = NULL;
  if (reference) {
    RefEngine *engine =
        ref_engine_new(sim, &config, ema_kv_pool_memory(pool), sums_cost, NULL, trace);
    ref_engine_add_observer(engine, &observer);
    ref_engine_start(engine);
    g_assert_true(ema_sim_run_until(sim, EMA_TIME_NEVER, &error));
    totals[0] = ref_engine_completed(engine);
    totals[1] = ref_engine_preemptions(engine);
    totals[2] = ref_engine_rejected(engine);
    ref_engine_free(engine);
  } else {
    EmaEngine *engine =
        ema_engine_new(sim, &config, ema_kv_pool_memory(pool), sums_cost, NULL, trace);
    ema_engine_add_observer(engine, &observer);
    ema_engine_start(engine);
    g_assert_true(ema_sim_run_until(sim, EMA_TIME_NEVER, &error));
    totals[0] = ema_engine_completed(engine);
    totals[1] = ema_engine_preemptions(engine);
    totals[2] = ema_engine_rejected(engine);
    g_assert_cmpuint(ema_engine_running(engine), ==, 0);
    g_assert_cmpuint(ema_engine_waiting(engine), ==, 0);
    g_assert_cmpuint(ema_engine_blocks_held(engine), ==, 0);
    ema_engine_free(engine);
  }
  g_assert_no_error(error);
  g_assert_cmpuint(ema_kv_pool_memory(pool).ops->free_blocks(pool), ==, c->pool);
}

static void assert_same_step(const EmaStepReport *a, const EmaStepReport *b) {
  g_assert_cmpint(a->start, ==, b->start);
  g_assert_cmpint(a->duration, ==, b->duration);
  g_assert_cmpuint(a->batch.prefill_tokens, ==, b->batch.prefill_tokens);
  g_assert_cmpfloat(a->batch.prefill_context, ==, b->batch.prefill_context);
  g_assert_cmpfloat(a->batch.prefill_kv_read, ==, b->batch.prefill_kv_read);
  g_assert_cmpuint(a->batch.decode_seqs, ==, b->batch.decode_seqs);
  g_assert_cmpfloat(a->batch.decode_context, ==, b->batch.decode_context);
  g_assert_cmpuint(a->batch.logits, ==, b->batch.logits);
  g_assert_cmpuint(a->running, ==, b->running);
  g_assert_cmpuint(a->waiting, ==, b->waiting);
  g_assert_cmpuint(a->blocks_used, ==, b->blocks_used);
  g_assert_cmpuint(a->blocks_free, ==, b->blocks_free);
  g_assert_cmpuint(a->preempted, ==, b->preempted);
  /* a step that preempts was short of blocks (the oracle does not say how many) */
  if (a->preempted > 0)
    g_assert_cmpuint(a->blocks_short, >, 0);
}

static void assert_same_request(const EmaRequest *a, const EmaRequest *b) {
  g_assert_cmpuint(a->id, ==, b->id);
  g_assert_cmpint(a->arrival, ==, b->arrival);
  g_assert_cmpint(a->scheduled, ==, b->scheduled);
  g_assert_cmpint(a->first_token, ==, b->first_token);
  g_assert_cmpint(a->finished, ==, b->finished);
  g_assert_cmpuint(a->preemptions, ==, b->preemptions);
  g_assert_cmpuint(a->prompt_tokens, ==, b->prompt_tokens);
  g_assert_cmpuint(a->output_tokens, ==, b->output_tokens);
  g_assert_cmpuint(a->kv_tokens, ==, b->kv_tokens);
  g_assert_cmpuint(a->generated, ==, b->generated);
  g_assert_cmpuint(a->blocks, ==, b->blocks);
  g_assert_cmpint(a->swapped, ==, b->swapped);
}

/* Returns the preemptions seen, for the caller to check the workload bites. */
static guint64 run_diff_case(const DiffCase *c) {
  g_autofree EmaRequestRecord *records =
      random_workload(c->seed, c->requests, c->rate, c->max_output);
  Record ref = {g_array_new(FALSE, TRUE, sizeof(EmaStepReport)),
                g_array_new(FALSE, TRUE, sizeof(EmaRequest))};
  Record now = {g_array_new(FALSE, TRUE, sizeof(EmaStepReport)),
                g_array_new(FALSE, TRUE, sizeof(EmaRequest))};
  guint64 ref_totals[3], now_totals[3];
  run_one(c, records, TRUE, &ref, ref_totals);
  run_one(c, records, FALSE, &now, now_totals);
  if (g_test_verbose())
    g_test_message("seed %" G_GUINT64_FORMAT " pool %" G_GUINT64_FORMAT " budget %" G_GUINT64_FORMAT
                   " seqs %" G_GUINT64_FORMAT ": %u steps, %" G_GUINT64_FORMAT
                   " done, %" G_GUINT64_FORMAT " preemptions, %" G_GUINT64_FORMAT " rejected",
                   c->seed, c->pool, c->budget, c->max_seqs, ref.steps->len, ref_totals[0],
                   ref_totals[1], ref_totals[2]);
  for (guint i = 0; i < 3; i++)
    g_assert_cmpuint(now_totals[i], ==, ref_totals[i]);
  g_assert_cmpuint(now.steps->len, ==, ref.steps->len);
  for (guint i = 0; i < ref.steps->len; i++)
    assert_same_step(&g_array_index(now.steps, EmaStepReport, i),
                     &g_array_index(ref.steps, EmaStepReport, i));
  g_assert_cmpuint(now.done->len, ==, ref.done->len);
  for (guint i = 0; i < ref.done->len; i++)
    assert_same_request(&g_array_index(now.done, EmaRequest, i),
                        &g_array_index(ref.done, EmaRequest, i));
  g_array_unref(ref.steps);
  g_array_unref(ref.done);
  g_array_unref(now.steps);
  g_array_unref(now.done);
  return ref_totals[1];
}

/* Random workloads, small pools (the largest request needs 225 blocks),
 * budgets from below the batch size to far above it, both preemption modes:
 * every step and every finished request must match the oracle exactly. */
static void test_differential(void) {
  /* seed, requests, rate, pool, budget, max_seqs, watermark, max_output
   * (the mode is set below); outputs of a few tokens make several requests
   * finish in one step, in both the steady set and the tail */
#define CASE(seed, n, rate, pool, budget, seqs, watermark, max_output)                             \
  { seed, n, rate, pool, budget, seqs, watermark, max_output, EMA_PREEMPT_RECOMPUTE }
  const DiffCase cases[] = {
      CASE(1, 400, 40, 400, 2048, 256, 0, 600),   CASE(2, 400, 200, 300, 512, 64, 0, 600),
      CASE(3, 300, 1000, 260, 8192, 256, 4, 600), CASE(4, 300, 100, 1200, 256, 128, 0, 600),
      CASE(5, 400, 500, 600, 64, 32, 0, 600),     CASE(6, 200, 2000, 230, 16, 256, 0, 600),
      CASE(7, 300, 300, 800, 4096, 16, 10, 600),  CASE(8, 400, 60, 500, 1024, 512, 2, 600),
      CASE(9, 150, 5000, 200, 100, 256, 0, 600),  CASE(10, 60, 400, 300, 7, 128, 0, 600),
      CASE(11, 300, 800, 2000, 160, 256, 0, 600), CASE(12, 300, 150, 250, 3000, 4, 1, 600),
      CASE(13, 600, 3000, 240, 8192, 256, 0, 3),  CASE(14, 600, 20000, 300, 512, 64, 0, 8),
      CASE(15, 500, 200, 250, 4096, 128, 0, 40),
  };
#undef CASE

  guint64 preemptions = 0;
  for (guint m = 0; m < 2; m++) {
    for (guint i = 0; i < G_N_ELEMENTS(cases); i++) {
      DiffCase c = cases[i];
      c.preempt = m == 0 ? EMA_PREEMPT_RECOMPUTE : EMA_PREEMPT_SWAP;
      c.seed += 100 * m;
      preemptions += run_diff_case(&c);
    }
  }
  /* the small pools do make the engines preempt, a lot */
  g_assert_cmpuint(preemptions, >, 1000);
}

/* ---- work per step --------------------------------------------------------- */

typedef struct {
  EmaKvMemory memory;
  guint64 total, used;
} ShrinkingMemory;

static gboolean shrink_take(gpointer self, guint64 request, guint64 n) {
  ShrinkingMemory *m = self;
  if (m->used + n > m->total)
    return FALSE;
  m->used += n;
  return TRUE;
}

static void shrink_give(gpointer self, guint64 request, guint64 n) {
  ShrinkingMemory *m = self;
  g_assert_cmpuint(n, <=, m->used);
  m->used -= n;
}

static guint64 shrink_free(gpointer self) {
  ShrinkingMemory *m = self;
  return m->total > m->used ? m->total - m->used : 0;
}

static guint64 shrink_total(gpointer self) {
  return ((ShrinkingMemory *) self)->total;
}

static const EmaKvMemoryOps shrink_ops = {.take = shrink_take,
                                          .give = shrink_give,
                                          .free_blocks = shrink_free,
                                          .total_blocks = shrink_total};

/* Each step report takes one block away from the memory's total. */
static void shrink_on_step(gpointer data, const EmaStepReport *step) {
  ((ShrinkingMemory *) data)->total--;
}

/* 256 requests of prompt 16 and output 5000 at t = 0 in ample memory.
 * Returns the work counter after 1,600 steps of 1 ms. */
static guint64 decoders_work(guint64 budget, gboolean shrinking, guint64 *steps_done) {
  g_autoptr(EmaSim) sim = ema_sim_new();
  g_autofree EmaRequestRecord *records = g_new0(EmaRequestRecord, 256);
  ShrinkingMemory memory = {.total = 200000};
  EmaEngineConfig config = {.max_num_seqs = 256, .max_num_batched_tokens = budget};
  EmaEngineObserver observer = {shrinking ? shrink_on_step : NULL, NULL, &memory};
  g_autoptr(EmaEngine) engine = NULL;
  guint64 work;
  memory.memory = (EmaKvMemory){&shrink_ops, &memory};
  for (guint i = 0; i < 256; i++)
    records[i] =
        (EmaRequestRecord){.arrival = 0, .prompt_tokens = 16, .output_tokens = 5000, .id = i};
  engine = ema_engine_new(sim, &config, memory.memory, one_ms, NULL,
                          ema_trace_source_new_array(records, 256));
  ema_engine_add_observer(engine, &observer);
  ema_engine_start(engine);
  g_assert_true(ema_sim_run_until(sim, 1600 * STEP - 1, NULL));
  work = ema_engine_work_counter(engine);
  *steps_done = (guint64) (ema_sim_now(sim) / STEP);
  g_assert_cmpuint(ema_engine_completed(engine), ==, 0);
  g_assert_cmpuint(ema_engine_preemptions(engine), ==, 0);
  return work;
}

/* The requirement: a decode step where nothing changes costs O(1), not
 * O(batch). 256 steady decoders for 1,600 steps would be 409,600 request
 * touches for the plain walk; the engine touches each request a few times
 * (admitted, its prefill applied, joins the steady set). A budget below the
 * batch (100 tokens for 256 decoders) stays O(1) per step too: the requests
 * the budget does not reach stall untouched. The fallback that is O(batch):
 * when the memory's total shrinks (here by one block every step), the engine
 * sweeps the running list for requests that no longer fit. */
static void test_work_per_step(void) {
  guint64 steps, work;
  work = decoders_work(8192, FALSE, &steps);
  g_assert_cmpuint(steps, >=, 1599);
  if (g_test_verbose())
    g_test_message("steady: %" G_GUINT64_FORMAT " touches in %" G_GUINT64_FORMAT " steps", work,
                   steps);
  g_assert_cmpuint(work, <, 256 * 1600 / 8);
  g_assert_cmpuint(work, <=, 4 * 256);

  work = decoders_work(100, FALSE, &steps);
  if (g_test_verbose())
    g_test_message("budget 100: %" G_GUINT64_FORMAT " touches in %" G_GUINT64_FORMAT " steps", work,
                   steps);
  g_assert_cmpuint(work, <, 256 * 1600 / 8);

  work = decoders_work(8192, TRUE, &steps);
  if (g_test_verbose())
    g_test_message("shrinking memory: %" G_GUINT64_FORMAT " touches in %" G_GUINT64_FORMAT " steps",
                   work, steps);
  g_assert_cmpuint(work, >=, 256 * 1500);
}

/* ---- releasing blocks ------------------------------------------------------ */

typedef struct {
  Harness h;
  EmaEngine *engine;
  EmaTime release_at; /* release from on_step of the step starting here */
  guint64 release_blocks, released;
  guint waiting_after, running_after;
} ReleaseHarness;

static void release_on_step(gpointer data, const EmaStepReport *step) {
  ReleaseHarness *r = data;
  g_array_append_val(r->h.steps, *step);
  if (step->start == r->release_at) {
    r->released = ema_engine_release_blocks(r->engine, r->release_blocks);
    r->waiting_after = ema_engine_waiting(r->engine);
    r->running_after = ema_engine_running(r->engine);
  }
}

static void release_on_finish(gpointer data, const EmaRequest *request) {
  on_finish(&((ReleaseHarness *) data)->h, request);
}

static EmaEngine *release_engine(ReleaseHarness *r, EmaSim *sim, const EmaRequestRecord *records,
                                 gsize n, guint64 pool_blocks, guint64 budget,
                                 const EmaEngineConfig *swap) {
  EmaEngineConfig config = {
      .max_num_seqs = 8, .max_num_batched_tokens = budget, .preempt = EMA_PREEMPT_RECOMPUTE};
  EmaEngineObserver observer = {release_on_step, release_on_finish, r};
  if (swap)
    config = *swap;
  r->h.total_blocks = pool_blocks;
  r->h.pool = ema_kv_pool_new(pool_blocks);
  r->h.memory = ema_kv_pool_memory(r->h.pool);
  r->h.steps = g_array_new(FALSE, TRUE, sizeof(EmaStepReport));
  r->h.done = g_ptr_array_new_with_free_func(g_free);
  r->engine = ema_engine_new(sim, &config, r->h.memory, one_ms, NULL,
                             ema_trace_source_new_array(records, n));
  ema_engine_add_observer(r->engine, &observer);
  ema_engine_start(r->engine);
  return r->engine;
}

/* Between steps (from the observer of the first step): four requests of
 * prompt 32 hold 2 blocks each after their prefill (8 of 100 used); asking
 * for 3 blocks preempts the newest two, r3 then r2, and gives back 4. They
 * go to the head of the waiting queue in their order (r2, r3) and recompute
 * their 33 tokens in the next step (3 blocks each), which also samples
 * their second token, so all four still finish at 100 ms. */
static void test_release_between_steps(void) {
  g_autoptr(EmaSim) sim = ema_sim_new();
  EmaRequestRecord records[4];
  ReleaseHarness r = {.release_at = 0, .release_blocks = 3};
  const EmaStepReport *s;
  for (guint i = 0; i < 4; i++)
    records[i] =
        (EmaRequestRecord){.arrival = 0, .prompt_tokens = 32, .output_tokens = 100, .id = i};
  release_engine(&r, sim, records, 4, 100, 1024, NULL);
  g_assert_true(ema_sim_run_until(sim, EMA_TIME_NEVER, NULL));
  g_assert_cmpuint(r.released, ==, 4);
  g_assert_cmpuint(r.running_after, ==, 2);
  g_assert_cmpuint(r.waiting_after, ==, 2);
  s = &g_array_index(r.h.steps, EmaStepReport, 0);
  g_assert_cmpuint(s->blocks_used, ==, 8);
  g_assert_cmpuint(s->released, ==, 0);
  s = &g_array_index(r.h.steps, EmaStepReport, 1);
  g_assert_cmpuint(s->released, ==, 2);
  g_assert_cmpuint(s->preempted, ==, 0);
  g_assert_cmpuint(s->batch.decode_seqs, ==, 2);
  g_assert_cmpuint(s->batch.prefill_tokens, ==, 66);
  g_assert_cmpuint(s->blocks_used, ==, 3 + 3 + 3 + 3); /* r0, r1 decode at context 33 too */
  g_assert_cmpuint(ema_engine_preemptions(r.engine), ==, 2);
  g_assert_cmpuint(ema_engine_completed(r.engine), ==, 4);
  for (guint i = 0; i < 4; i++) {
    const EmaRequest *done = find_done(&r.h, i);
    g_assert_cmpuint(done->preemptions, ==, i >= 2 ? 1 : 0);
    g_assert_cmpuint(done->generated, ==, 100);
    g_assert_cmpuint(done->kv_tokens, ==, 131);
    g_assert_cmpint(done->first_token, ==, STEP);
    g_assert_cmpint(done->finished, ==, 100 * STEP);
  }
  /* the order they finished in is still the admission order: r0 r1 r2 r3 */
  for (guint i = 0; i < 4; i++)
    g_assert_cmpuint(((EmaRequest *) r.h.done->pdata[i])->id, ==, i);
  g_assert_cmpuint(ema_engine_blocks_held(r.engine), ==, 0);
  ema_engine_free(r.engine);
  harness_clear(&r.h);
}

/* During a step: r0 (prompt 32, output 5) prefills in 0-1 ms (token 1),
 * decodes in 1-2 ms (token 2, kv 33: 3 blocks) and is decoding its third
 * token when, at 2.5 ms, the blocks are asked back: all 3 come back and
 * the step's token is dropped. At 3 ms it recomputes prompt + 2 tokens (34)
 * and samples token 3 at 4 ms; tokens 4 and 5 at 5 and 6 ms. */
static void test_release_during_step(void) {
  g_autoptr(EmaSim) sim = ema_sim_new();
  const EmaRequestRecord records[] = {{.arrival = 0, .prompt_tokens = 32, .output_tokens = 5}};
  ReleaseHarness r = {.release_at = -1};
  const EmaRequest *done;
  const EmaStepReport *s;
  release_engine(&r, sim, records, 1, 10, 1024, NULL);
  g_assert_true(ema_sim_run_until(sim, 2 * STEP + STEP / 2, NULL));
  g_assert_cmpuint(ema_engine_blocks_held(r.engine), ==, 3);
  g_assert_cmpuint(ema_engine_release_blocks(r.engine, 1), ==, 3);
  g_assert_cmpuint(ema_engine_blocks_held(r.engine), ==, 0);
  g_assert_cmpuint(ema_engine_running(r.engine), ==, 0);
  g_assert_cmpuint(ema_engine_waiting(r.engine), ==, 1);
  /* nothing more to give */
  g_assert_cmpuint(ema_engine_release_blocks(r.engine, 1), ==, 0);
  g_assert_true(ema_sim_run_until(sim, EMA_TIME_NEVER, NULL));
  g_assert_cmpuint(r.h.steps->len, ==, 6);
  s = &g_array_index(r.h.steps, EmaStepReport, 2); /* the dropped one */
  g_assert_cmpuint(s->batch.decode_seqs, ==, 1);
  g_assert_cmpuint(s->blocks_used, ==, 0);
  g_assert_cmpuint(s->released, ==, 1);
  s = &g_array_index(r.h.steps, EmaStepReport, 3);
  g_assert_cmpint(s->start, ==, 3 * STEP);
  g_assert_cmpuint(s->batch.prefill_tokens, ==, 34);
  g_assert_cmpuint(s->blocks_used, ==, 3);
  done = find_done(&r.h, 0);
  g_assert_cmpuint(done->preemptions, ==, 1);
  g_assert_cmpuint(done->generated, ==, 5);
  g_assert_cmpuint(done->kv_tokens, ==, 36);
  g_assert_cmpint(done->scheduled, ==, 0);
  g_assert_cmpint(done->first_token, ==, STEP);
  g_assert_cmpint(done->finished, ==, 6 * STEP);
  g_assert_cmpuint(ema_engine_preemptions(r.engine), ==, 1);
  g_assert_cmpuint(r.h.memory.ops->free_blocks(r.h.memory.self), ==, 10);
  ema_engine_free(r.engine);
  harness_clear(&r.h);
}

/* The same in swap mode, with a request still prefilling (prompt 40, budget
 * 16: chunks of 16, 16, 8): at 1.5 ms its second chunk (tokens 17-32, 2
 * blocks held) is dropped and its first 16 tokens (1 block) go to host:
 * swap_time(1) = 10 us + 1 MB / 1 GB/s = 1.01 ms. The next step, at 2 ms,
 * brings them back (another 1.01 ms) and computes tokens 17-32 again. */
static void test_release_during_step_swap(void) {
  g_autoptr(EmaSim) sim = ema_sim_new();
  const EmaRequestRecord records[] = {{.arrival = 0, .prompt_tokens = 40, .output_tokens = 2}};
  EmaEngineConfig config = {.max_num_seqs = 8,
                            .max_num_batched_tokens = 16,
                            .preempt = EMA_PREEMPT_SWAP,
                            .block_bytes = 1000000,
                            .swap_bandwidth = 1e9,
                            .swap_fixed_cost = EMA_US(10)};
  ReleaseHarness r = {.release_at = -1};
  const EmaRequest *done;
  const EmaStepReport *s;
  const EmaTime swap = EMA_US(1010);
  release_engine(&r, sim, records, 1, 10, 16, &config);
  g_assert_true(ema_sim_run_until(sim, STEP + STEP / 2, NULL));
  g_assert_cmpuint(ema_engine_release_blocks(r.engine, 2), ==, 2);
  g_assert_true(ema_sim_run_until(sim, EMA_TIME_NEVER, NULL));
  /* 0-1 chunk 1; 1-2 chunk 2, dropped; 2-: swap out + in, chunk 2 again;
   * then chunk 3 (token 1) and one decode step (token 2) */
  g_assert_cmpuint(r.h.steps->len, ==, 5);
  s = &g_array_index(r.h.steps, EmaStepReport, 2);
  g_assert_cmpint(s->start, ==, 2 * STEP);
  g_assert_cmpint(s->duration, ==, STEP + 2 * swap);
  g_assert_cmpuint(s->batch.prefill_tokens, ==, 16);
  g_assert_cmpfloat(s->batch.prefill_kv_read, ==, 32);
  done = find_done(&r.h, 0);
  g_assert_cmpuint(done->preemptions, ==, 1);
  g_assert_cmpuint(done->generated, ==, 2);
  g_assert_cmpuint(done->kv_tokens, ==, 41);
  g_assert_cmpint(done->first_token, ==, 4 * STEP + 2 * swap);
  g_assert_cmpint(done->finished, ==, 5 * STEP + 2 * swap);
  ema_engine_free(r.engine);
  harness_clear(&r.h);
}

/* Random releases at random instants (between and during steps) in random
 * workloads: every request still completes with all its tokens, blocks
 * balance, and nothing is lost. */
typedef struct {
  EmaEngine *engine;
  EmaEvent event;
  GRand *rand;
  guint64 given, asked;
  guint finished;
  Harness *h;
} Releaser;

static void releaser_fire(EmaSim *sim, EmaEvent *event, gpointer data) {
  Releaser *r = data;
  guint64 want = (guint64) g_rand_int_range(r->rand, 1, 400);
  guint64 held = ema_engine_blocks_held(r->engine);
  guint64 got = ema_engine_release_blocks(r->engine, want);
  g_assert_cmpuint(ema_engine_blocks_held(r->engine), ==, held - got);
  g_assert_true(got >= want || ema_engine_running(r->engine) == 0);
  r->given += got;
  if (ema_engine_completed(r->engine) + ema_engine_rejected(r->engine) < 200)
    ema_sim_schedule_in(sim, event, g_rand_int_range(r->rand, 1, (gint32) EMA_MS(50)), 0);
}

static void releaser_on_step(gpointer data, const EmaStepReport *step) {
  Releaser *r = data;
  g_assert_cmpuint(step->blocks_used + step->blocks_free, ==, r->h->total_blocks);
  if (g_rand_int_range(r->rand, 0, 50) == 0)
    r->given += ema_engine_release_blocks(r->engine, 1);
}

static void releaser_on_finish(gpointer data, const EmaRequest *request) {
  Releaser *r = data;
  g_assert_cmpuint(request->generated, ==, request->output_tokens);
  g_assert_cmpuint(request->kv_tokens, ==, request->prompt_tokens + request->output_tokens - 1);
  g_assert_cmpuint(request->blocks, ==, 0);
  g_assert_false(request->swapped);
  g_assert_cmpint(request->first_token, <=, request->finished);
  r->finished++;
}

static void test_release_random(void) {
  for (guint m = 0; m < 2; m++) {
    for (guint64 seed = 1; seed <= 4; seed++) {
      g_autoptr(EmaSim) sim = ema_sim_new();
      g_autofree EmaRequestRecord *records = random_workload(seed + 50, 200, 300, 600);
      g_autoptr(EmaKvPool) pool = ema_kv_pool_new(700);
      Harness h = {.total_blocks = 700};
      Releaser r = {.rand = g_rand_new_with_seed((guint32) seed), .h = &h};
      EmaEngineConfig config = {.max_num_seqs = 64,
                                .max_num_batched_tokens = seed * 300,
                                .preempt = m ? EMA_PREEMPT_SWAP : EMA_PREEMPT_RECOMPUTE,
                                .block_bytes = 2 << 20,
                                .swap_bandwidth = 25e9,
                                .swap_fixed_cost = EMA_US(10)};
      EmaEngineObserver observer = {releaser_on_step, releaser_on_finish, &r};
      r.engine = ema_engine_new(sim, &config, ema_kv_pool_memory(pool), sums_cost, NULL,
                                ema_trace_source_new_array(records, 200));
      ema_engine_add_observer(r.engine, &observer);
      ema_event_init(&r.event, releaser_fire, &r);
      ema_sim_schedule(sim, &r.event, EMA_MS(5), 0);
      ema_engine_start(r.engine);
      g_assert_true(ema_sim_run_until(sim, EMA_TIME_NEVER, NULL));
      g_assert_cmpuint(ema_engine_completed(r.engine) + ema_engine_rejected(r.engine), ==, 200);
      g_assert_cmpuint(r.finished, ==, ema_engine_completed(r.engine));
      g_assert_cmpuint(ema_engine_blocks_held(r.engine), ==, 0);
      g_assert_cmpuint(ema_kv_pool_memory(pool).ops->free_blocks(pool), ==, 700);
      g_assert_cmpuint(r.given, >, 0);
      ema_engine_free(r.engine);
      g_rand_free(r.rand);
    }
  }
}

/* Blocks released, then the memory's total shrinks: requests that no longer
 * fit are rejected (running and waiting), the rest complete. Two requests of
 * 64 + 64 tokens (8 blocks) and one of 16 + 300 (20 blocks) in 40 blocks;
 * at 5.5 ms everything is released and the total drops to 10 blocks. */
static void test_release_then_shrink(void) {
  g_autoptr(EmaSim) sim = ema_sim_new();
  const EmaRequestRecord records[] = {
      {.arrival = 0, .prompt_tokens = 64, .output_tokens = 64, .id = 0},
      {.arrival = 0, .prompt_tokens = 16, .output_tokens = 300, .id = 1},
      {.arrival = 0, .prompt_tokens = 64, .output_tokens = 64, .id = 2},
  };
  ShrinkingMemory memory = {.total = 40};
  EmaEngineConfig config = {.max_num_seqs = 8, .max_num_batched_tokens = 1024};
  g_autoptr(EmaEngine) engine = NULL;
  guint64 held;
  memory.memory = (EmaKvMemory){&shrink_ops, &memory};
  engine = ema_engine_new(sim, &config, memory.memory, one_ms, NULL,
                          ema_trace_source_new_array(records, 3));
  ema_engine_start(engine);
  g_assert_true(ema_sim_run_until(sim, 5 * STEP + STEP / 2, NULL));
  held = memory.used;
  g_assert_cmpuint(held, ==, ema_engine_blocks_held(engine));
  g_assert_cmpuint(ema_engine_release_blocks(engine, 1000), ==, held);
  g_assert_cmpuint(ema_engine_waiting(engine), ==, 3);
  memory.total = 10;
  g_assert_true(ema_sim_run_until(sim, EMA_TIME_NEVER, NULL));
  g_assert_cmpuint(ema_engine_rejected(engine), ==, 1);
  g_assert_cmpuint(ema_engine_completed(engine), ==, 2);
  g_assert_cmpuint(memory.used, ==, 0);
}

/* release_blocks_mode: an engine configured for recompute gives its blocks
 * back in swap mode. r0 (prompt 32, output 3) has 33 tokens and 3 blocks
 * after its first decode step (2 ms); from the observer of that step its 3
 * blocks go to host (swap_time(3) = 10 us + 3 ms at 1 MB per block and
 * 1 GB/s), and the next step brings them back (another 3.01 ms) and
 * decodes its third token: no recompute. */
static void test_release_mode(void) {
  g_autoptr(EmaSim) sim = ema_sim_new();
  const EmaRequestRecord records[] = {{.arrival = 0, .prompt_tokens = 32, .output_tokens = 3}};
  EmaEngineConfig config = {.max_num_seqs = 8,
                            .max_num_batched_tokens = 1024,
                            .preempt = EMA_PREEMPT_RECOMPUTE,
                            .block_bytes = 1000000,
                            .swap_bandwidth = 1e9,
                            .swap_fixed_cost = EMA_US(10)};
  ReleaseHarness r = {.release_at = -1};
  const EmaTime swap = EMA_US(3010);
  const EmaStepReport *s;
  const EmaRequest *done;
  release_engine(&r, sim, records, 1, 10, 1024, &config);
  g_assert_true(ema_sim_run_until(sim, STEP + STEP / 2, NULL));
  /* during the second step: the step's block is freed, 2 blocks of KV go out */
  g_assert_cmpuint(ema_engine_release_blocks_mode(r.engine, 1, EMA_PREEMPT_SWAP), ==, 3);
  g_assert_true(ema_sim_run_until(sim, EMA_TIME_NEVER, NULL));
  g_assert_cmpuint(r.h.steps->len, ==, 4);
  s = &g_array_index(r.h.steps, EmaStepReport, 2);
  /* back: swap out 2 blocks (kv 32) and in again, then decode token 2 */
  g_assert_cmpint(s->duration, ==, STEP + 2 * (swap - EMA_MS(1)));
  g_assert_cmpuint(s->batch.decode_seqs, ==, 1);
  g_assert_cmpuint(s->batch.prefill_tokens, ==, 0);
  done = find_done(&r.h, 0);
  g_assert_cmpuint(done->preemptions, ==, 1);
  g_assert_cmpuint(done->generated, ==, 3);
  g_assert_cmpuint(done->kv_tokens, ==, 34);
  g_assert_false(done->swapped);
  ema_engine_free(r.engine);
  harness_clear(&r.h);
}

/* EMA_PREEMPT_CHEAPER prices each victim. Steps cost 1 ms; the estimate
 * the engine prices recomputes with is 1 ms + PER_READ for each token of
 * KV a prefill chunk reads (prefill_kv_read). r0 (prompt 32, output 3) is
 * preempted from the observer of its first decode step: 33 tokens of KV in
 * 3 blocks. Swapping them costs 2 x swap_time(3) = 2 x (10 us + 3 ms) =
 * 6.02 ms. Recomputing them beside that step's one decode: with a budget
 * of 1024, one chunk of 33 (reads 33): 3.3 ms at 0.1 ms a token, cheaper;
 * with a budget of 16 (15 beside the decode), chunks of 15, 15 and 3
 * reading 15, 30 and 33: 7.8 ms, dearer; at 0.2 ms a token, 6.6 ms, dearer
 * too. The next step then swaps the 3 blocks out and in (1 ms + 6.02 ms)
 * and decodes, or prefills the 34 tokens known (as far as the budget
 * goes) in 1 ms. */
static EmaTime per_read(gpointer data, const EmaStepBatch *batch) {
  return STEP + (EmaTime) ((double) *(const EmaTime *) data * batch->prefill_kv_read);
}

static void test_release_cheaper(void) {
  const struct {
    guint64 budget;
    EmaTime per_read;
    gboolean swaps;
  } cases[] = {{1024, EMA_US(100), FALSE}, {16, EMA_US(100), TRUE}, {1024, EMA_US(200), TRUE}};
  for (guint i = 0; i < G_N_ELEMENTS(cases); i++) {
    g_autoptr(EmaSim) sim = ema_sim_new();
    const EmaRequestRecord records[] = {{.arrival = 0, .prompt_tokens = 32, .output_tokens = 3}};
    EmaEngineConfig config = {.max_num_seqs = 8,
                              .max_num_batched_tokens = cases[i].budget,
                              .preempt = EMA_PREEMPT_CHEAPER,
                              .block_bytes = 1000000,
                              .swap_bandwidth = 1e9,
                              .swap_fixed_cost = EMA_US(10)};
    ReleaseHarness r = {.release_blocks = 1};
    const EmaRequest *done;
    release_engine(&r, sim, records, 1, 10, cases[i].budget, &config);
    ema_engine_set_step_estimate(r.engine, per_read, (gpointer) &cases[i].per_read);
    /* the first decode step: after the prefill, in one step or two */
    r.release_at = cases[i].budget < 32 ? 2 * STEP : STEP;
    g_assert_true(ema_sim_run_until(sim, EMA_TIME_NEVER, NULL));
    g_assert_cmpuint(r.released, ==, 3);
    g_assert_cmpuint(ema_engine_preemptions(r.engine), ==, 1);
    g_assert_cmpuint(ema_engine_preemptions_swapped(r.engine), ==, cases[i].swaps ? 1 : 0);
    done = find_done(&r.h, 0);
    g_assert_cmpuint(done->generated, ==, 3);
    g_assert_cmpuint(done->kv_tokens, ==, 34);
    /* a swap's step waits for the copies out and in; a recompute's step
     * prefills the 33 tokens again */
    for (guint s = 0; s < r.h.steps->len; s++) {
      const EmaStepReport *step = &g_array_index(r.h.steps, EmaStepReport, s);
      if (step->start <= r.release_at)
        continue;
      g_assert_cmpint(step->duration, ==, cases[i].swaps ? STEP + 2 * EMA_US(3010) : STEP);
      g_assert_cmpuint(step->batch.prefill_tokens, ==, cases[i].swaps ? 0 : 34);
      break;
    }
    ema_engine_free(r.engine);
    harness_clear(&r.h);
  }
}

/* A memory shared with someone else, which hears what the engine lacks. */
typedef struct {
  ShrinkingMemory m;
  EmaEngine *engine;
  guint64 other;      /* blocks someone else holds */
  guint wants;        /* calls of want */
  guint64 last_short; /* its last argument */
} WantMemory;

static void want_hook(gpointer self, guint64 blocks_short) {
  WantMemory *w = self;
  w->wants++;
  w->last_short = blocks_short;
  /* the other user gives its blocks back, and the engine is told */
  w->m.used -= w->other;
  w->other = 0;
  ema_engine_wake(w->engine);
}

static const EmaKvMemoryOps want_ops = {.take = shrink_take,
                                        .give = shrink_give,
                                        .free_blocks = shrink_free,
                                        .total_blocks = shrink_total,
                                        .want = want_hook};

/* Someone else holds 8 of 10 blocks; r0 (prompt 40: 3 blocks) arrives and
 * cannot get in: no step starts, so no step report carries blocks_short;
 * want hears 1 (3 - 2), the memory frees the 8 and wakes the engine, which
 * then runs r0 from the same instant. */
static void test_want(void) {
  g_autoptr(EmaSim) sim = ema_sim_new();
  const EmaRequestRecord records[] = {
      {.arrival = EMA_MS(1), .prompt_tokens = 40, .output_tokens = 2}};
  EmaEngineConfig config = {.max_num_seqs = 8, .max_num_batched_tokens = 1024};
  WantMemory w = {.m = {.total = 10, .used = 8}, .other = 8};
  g_autoptr(GArray) steps = g_array_new(FALSE, TRUE, sizeof(EmaStepReport));
  GPtrArray *done = g_ptr_array_new_with_free_func(g_free);
  Harness h = {.steps = steps, .done = done, .total_blocks = 10};
  EmaEngineObserver observer = {on_step, on_finish, &h};
  w.engine = ema_engine_new(sim, &config, (EmaKvMemory){&want_ops, &w}, one_ms, NULL,
                            ema_trace_source_new_array(records, 1));
  ema_engine_add_observer(w.engine, &observer);
  ema_engine_start(w.engine);
  g_assert_true(ema_sim_run_until(sim, EMA_TIME_NEVER, NULL));
  g_assert_cmpuint(w.wants, ==, 1);
  g_assert_cmpuint(w.last_short, ==, 1);
  g_assert_cmpuint(ema_engine_completed(w.engine), ==, 1);
  g_assert_cmpint(find_done(&h, 0)->scheduled, ==, EMA_MS(1));
  g_assert_cmpint(find_done(&h, 0)->finished, ==, EMA_MS(3));
  ema_engine_free(w.engine);
  g_ptr_array_unref(done);
}

/* test_want's case with a 1 s client timeout: the idle engine arms its wake-up for r0's
 * deadline (1.001 s) before want frees the blocks; r0 is then served at once and done at 3 ms,
 * and the run ends there, not held open to a deadline nobody is left to miss. */
static void test_timeout_served(void) {
  g_autoptr(EmaSim) sim = ema_sim_new();
  const EmaRequestRecord records[] = {
      {.arrival = EMA_MS(1), .prompt_tokens = 40, .output_tokens = 2}};
  EmaEngineConfig config = {
      .max_num_seqs = 8, .max_num_batched_tokens = 1024, .client_timeout = EMA_S(1)};
  WantMemory w = {.m = {.total = 10, .used = 8}, .other = 8};
  w.engine = ema_engine_new(sim, &config, (EmaKvMemory){&want_ops, &w}, one_ms, NULL,
                            ema_trace_source_new_array(records, 1));
  ema_engine_start(w.engine);
  g_assert_true(ema_sim_run_until(sim, EMA_TIME_NEVER, NULL));
  g_assert_cmpuint(w.wants, ==, 1);
  g_assert_cmpuint(ema_engine_completed(w.engine), ==, 1);
  g_assert_cmpuint(ema_engine_timed_out(w.engine), ==, 0);
  g_assert_cmpint(ema_sim_now(sim), ==, EMA_MS(3));
  ema_engine_free(w.engine);
}

/* ---- blocks_short ---------------------------------------------------------- */

/* test_preempt_when_full's case, plus r2 (prompt 16, output 1) arriving at
 * 9.5 ms. Step n starts at n - 1 ms; r0 and r1 hold 2 blocks each from step
 * 2 on, so the pool (4) is full. Steps 11-17: r2 needs 1 block, 0 free:
 * short 1. Step 18: r0 and r1 both need a third block (context 33): 2 for
 * them + 1 for r2 (the head of the waiting queue), 0 free: short 3; r1 is
 * preempted. Steps 19-33: r1 heads the queue and needs 3 blocks (33 tokens
 * to recompute), 1 free (r0 holds 3): short 2. Steps 34-40: r0 took its 4th
 * block (context 49): short 3. Step 41: r0 is gone, r1 and r2 get in. */
static void test_blocks_short(void) {
  const EmaRequestRecord records[] = {
      {.arrival = 0, .prompt_tokens = 16, .output_tokens = 40, .id = 0},
      {.arrival = 0, .prompt_tokens = 16, .output_tokens = 40, .id = 1},
      {.arrival = EMA_US(9500), .prompt_tokens = 16, .output_tokens = 1, .id = 2},
  };
  Harness h = {0};
  run(&h, records, G_N_ELEMENTS(records), 4, 1024, 8, 0);
  for (guint i = 0; i < h.steps->len; i++) {
    const EmaStepReport *s = &g_array_index(h.steps, EmaStepReport, i);
    guint n = (guint) (s->start / STEP) + 1;
    guint64 expect = n >= 11 && n <= 17   ? 1
                     : n == 18            ? 3
                     : n >= 19 && n <= 33 ? 2
                     : n >= 34 && n <= 40 ? 3
                                          : 0;
    g_assert_cmpuint(s->blocks_short, ==, expect);
    g_assert_cmpuint(s->preempted, ==, n == 18 ? 1 : 0);
  }
  g_assert_cmpint(find_done(&h, 2)->scheduled, ==, 40 * STEP);
  harness_clear(&h);

  /* the watermark case: r1 needs 9 blocks + 2 of watermark, 9 are free
   * while r0 runs (steps 2-4), short 2; nothing held back otherwise */
  {
    const EmaRequestRecord wm[] = {
        {.arrival = 0, .prompt_tokens = 32, .output_tokens = 4, .id = 0},
        {.arrival = EMA_US(10), .prompt_tokens = 130, .output_tokens = 1, .id = 1},
    };
    Harness w = {0};
    run(&w, wm, G_N_ELEMENTS(wm), 12, 1024, 8, 2);
    g_assert_cmpuint(w.steps->len, ==, 5);
    for (guint i = 0; i < w.steps->len; i++)
      g_assert_cmpuint(g_array_index(w.steps, EmaStepReport, i).blocks_short, ==,
                       i >= 1 && i <= 3 ? 2 : 0);
    harness_clear(&w);
  }
}

int main(int argc, char **argv) {
  g_test_init(&argc, &argv, NULL);
  g_test_add_func("/engine/three-requests", test_three_requests);
  g_test_add_func("/engine/logits-every-request", test_logits_every_request);
  g_test_add_func("/engine/preempt-when-full", test_preempt_when_full);
  g_test_add_func("/engine/watermark", test_watermark);
  g_test_add_func("/engine/reject-too-long", test_reject_too_long);
  g_test_add_func("/engine/timeout", test_timeout);
  g_test_add_func("/engine/timeout/idle", test_timeout_idle);
  g_test_add_func("/engine/timeout/closed-loop", test_timeout_closed_loop);
  g_test_add_func("/engine/timeout/served", test_timeout_served);
  g_test_add_func("/engine/step-past-clock", test_step_past_clock);
  g_test_add_func("/engine/differential", test_differential);
  g_test_add_func("/engine/work-per-step", test_work_per_step);
  g_test_add_func("/engine/release/between-steps", test_release_between_steps);
  g_test_add_func("/engine/release/during-step", test_release_during_step);
  g_test_add_func("/engine/release/during-step-swap", test_release_during_step_swap);
  g_test_add_func("/engine/release/random", test_release_random);
  g_test_add_func("/engine/release/then-shrink", test_release_then_shrink);
  g_test_add_func("/engine/release/mode", test_release_mode);
  g_test_add_func("/engine/release/cheaper", test_release_cheaper);
  g_test_add_func("/engine/want", test_want);
  g_test_add_func("/engine/blocks-short", test_blocks_short);
  return g_test_run();
}
