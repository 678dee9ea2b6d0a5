/* test-engine-vllm.c: the engine's vLLM behaviours on small cases computed
 * by hand: block size, max_model_len, the fixed CPU cost per step, V0's
 * prefill-first steps against V1, closed-loop clients, and prefix caching
 * (hits, shared blocks held once, reference counts, eviction of the least
 * recently freed block, tail first, a preempted request's own blocks hit,
 * also once split between local room and the tier and partly dropped).
 * Every step's GPU part
 * costs exactly 1 ms (a fake step-cost function), so times count steps. */
#include "ema/serving/engine.h"

#define STEP EMA_MS(1)

typedef struct {
  guint64 total;
  EmaKvPool *pool;
  EmaEngine *engine;
  GArray *steps;   /* EmaStepReport */
  GPtrArray *done; /* EmaRequest copies */
  GArray *cached;  /* guint64 pairs per step: ema_engine_decode_cached's seqs, blocks */
  gsize records;   /* requests in the trace (serials 0 .. records - 1) */
} Run;

/* Every step: ema_engine_decode_cached is what a walk of every request
 * through ema_engine_request gives (those in the step that decode, their
 * blocks less their own), and is recorded. */
static EmaTime one_ms(gpointer data, const EmaStepBatch *batch) {
  Run *r = data;
  guint64 seqs = 0, blocks = 0, kept[2];
  for (guint64 serial = 0; serial < r->records; serial++) {
    EmaRequest q;
    gboolean in_step;
    guint64 cached;
    if (!ema_engine_request(r->engine, serial, &q, &in_step, NULL) || !in_step ||
        q.generated == 0 || (guint64) q.kv_tokens + 1 != (guint64) q.prompt_tokens + q.generated)
      continue;
    cached = q.blocks - ema_engine_request_own_blocks(r->engine, serial);
    seqs += cached > 0;
    blocks += cached;
  }
  ema_engine_decode_cached(r->engine, &kept[0], &kept[1]);
  g_assert_cmpuint(kept[0], ==, seqs);
  g_assert_cmpuint(kept[1], ==, blocks);
  g_array_append_vals(r->cached, kept, 2);
  return STEP;
}

static void on_step(gpointer data, const EmaStepReport *step) {
  Run *r = data;
  /* blocks the engine holds (shared ones once) + free == the pool */
  g_assert_cmpuint(step->blocks_used + step->blocks_free, ==, r->total);
  /* counted request by request, a shared cached block once */
  g_assert_cmpuint(ema_engine_request_blocks(r->engine), ==, ema_engine_blocks_held(r->engine));
  g_array_append_val(r->steps, *step);
}

static void on_finish(gpointer data, const EmaRequest *request) {
  Run *r = data;
  g_ptr_array_add(r->done, g_memdup2(request, sizeof *request));
}

/* Run RECORDS through an engine with CONFIG and BLOCKS blocks; the engine
 * stays in R for its counters (run_clear frees it). */
static void run(Run *r, EmaEngineConfig config, const EmaRequestRecord *records, gsize n,
                guint64 blocks) {
  g_autoptr(EmaSim) sim = ema_sim_new();
  EmaEngineObserver observer = {on_step, on_finish, r};
  g_autoptr(GError) error = NULL;
  if (config.max_num_seqs == 0)
    config.max_num_seqs = 8;
  if (config.max_num_batched_tokens == 0)
    config.max_num_batched_tokens = 64;
  r->total = blocks;
  r->records = n;
  r->pool = ema_kv_pool_new(blocks);
  r->steps = g_array_new(FALSE, TRUE, sizeof(EmaStepReport));
  r->done = g_ptr_array_new_with_free_func(g_free);
  r->cached = g_array_new(FALSE, TRUE, sizeof(guint64));
  r->engine = ema_engine_new(sim, &config, ema_kv_pool_memory(r->pool), one_ms, r,
                             ema_trace_source_new_array(records, n));
  ema_engine_add_observer(r->engine, &observer);
  ema_engine_start(r->engine);
  g_assert_true(ema_sim_run_until(sim, EMA_TIME_NEVER, &error));
  g_assert_no_error(error);
  g_assert_cmpuint(ema_engine_running(r->engine) + ema_engine_waiting(r->engine), ==, 0);
  g_assert_cmpuint(ema_engine_blocks_held(r->engine), ==, 0);
  g_assert_cmpuint(ema_kv_pool_memory(r->pool).ops->free_blocks(r->pool), ==, blocks);
}

static void run_clear(Run *r) {
  ema_engine_free(r->engine); /* before the pool it points to */
  ema_kv_pool_free(r->pool);
  g_array_unref(r->steps);
  g_ptr_array_unref(r->done);
  g_array_unref(r->cached);
}

static const EmaRequest *done(const Run *r, guint64 id) {
  for (guint i = 0; i < r->done->len; i++)
    if (((EmaRequest *) r->done->pdata[i])->id == id)
      return r->done->pdata[i];
  g_assert_not_reached();
}

static const EmaStepReport *step(const Run *r, guint i) {
  g_assert_cmpuint(i, <, r->steps->len);
  return &g_array_index(r->steps, EmaStepReport, i);
}

/* Step I's decoding requests holding cached blocks were SEQS, with BLOCKS of them. */
static void assert_cached(const Run *r, guint i, guint64 seqs, guint64 blocks) {
  g_assert_cmpuint(2 * i + 1, <, r->cached->len);
  g_assert_cmpuint(g_array_index(r->cached, guint64, 2 * i), ==, seqs);
  g_assert_cmpuint(g_array_index(r->cached, guint64, 2 * i + 1), ==, blocks);
}

/* Block size 4: prompt 10, output 4. Step 1 prefills 10 tokens:
 * ceil(10/4) = 3 blocks; steps 2, 3 and 4 decode with 11, 12, 13 tokens of
 * KV: 3, 3, 4 blocks. With 16-token blocks it would be 1 block throughout. */
static void test_block_size(void) {
  const EmaRequestRecord records[] = {{.prompt_tokens = 10, .output_tokens = 4}};
  EmaEngineConfig config = {.block_tokens = 4};
  Run r = {0};
  const guint64 want[] = {3, 3, 3, 4};
  run(&r, config, records, 1, 100);
  g_assert_cmpuint(r.steps->len, ==, 4);
  for (guint i = 0; i < 4; i++)
    g_assert_cmpuint(step(&r, i)->blocks_used, ==, want[i]);
  g_assert_cmpint(done(&r, 0)->finished, ==, 4 * STEP);
  run_clear(&r);
  /* the same request at the default 16 tokens */
  config.block_tokens = 0;
  run(&r, config, records, 1, 100);
  for (guint i = 0; i < 4; i++)
    g_assert_cmpuint(step(&r, i)->blocks_used, ==, 1);
  run_clear(&r);
}

/* Block size 3 (not a power of two), a request that joins the decoding region after more
 * steps than it has tokens: A (prompt 1, output 20) holds k tokens after step k,
 * ceil(k / 3) blocks; B (prompt 2, output 5) arrives during step 11, is prefilled in step 12
 * (2 tokens) and decodes in steps 13-16 (3..6 tokens): its blocks are taken when its own
 * tokens cross a block, whatever the clock (its phase, (2 - t0) mod 3, was once reduced from an
 * unsigned difference that wrapped). */
static void test_block_size_not_power_of_two(void) {
  const EmaRequestRecord records[] = {
      {.prompt_tokens = 1, .output_tokens = 20, .id = 0},
      {.prompt_tokens = 2, .output_tokens = 5, .id = 1, .arrival = 10 * STEP + 1},
  };
  EmaEngineConfig config = {.block_tokens = 3};
  Run r = {0};
  guint64 want[20];
  for (guint k = 1; k <= 20; k++) {
    guint64 b_tokens = k >= 12 && k <= 16 ? k - 10 : 0;
    want[k - 1] = (k + 2) / 3 + (b_tokens + 2) / 3;
  }
  run(&r, config, records, 2, 100);
  g_assert_cmpuint(r.steps->len, ==, 20);
  for (guint i = 0; i < 20; i++)
    g_assert_cmpuint(step(&r, i)->blocks_used, ==, want[i]);
  g_assert_cmpint(done(&r, 1)->finished, ==, 16 * STEP);
  run_clear(&r);
}

/* max_waiting 2: five requests arrive at time 0 and join the queue before the first step
 * starts (a step is kicked once every arrival of the instant is queued), so the third finds
 * two waiting and the run stops with EMA_SIM_ERROR_OVERLOADED, naming the tenant. */
static void test_max_waiting(void) {
  EmaRequestRecord records[5];
  EmaEngineConfig config = {
      .max_num_seqs = 1, .max_num_batched_tokens = 64, .max_waiting = 2, .name = "t"};
  g_autoptr(EmaSim) sim = ema_sim_new();
  EmaKvPool *pool = ema_kv_pool_new(100);
  g_autoptr(GError) error = NULL;
  EmaEngine *engine;
  for (guint i = 0; i < 5; i++)
    records[i] = (EmaRequestRecord){.prompt_tokens = 4, .output_tokens = 2, .id = i};
  engine = ema_engine_new(sim, &config, ema_kv_pool_memory(pool), one_ms, NULL,
                          ema_trace_source_new_array(records, 5));
  ema_engine_start(engine);
  g_assert_false(ema_sim_run_until(sim, EMA_TIME_NEVER, &error));
  g_assert_error(error, EMA_SIM_ERROR, EMA_SIM_ERROR_OVERLOADED);
  g_assert_cmpstr(error->message, ==,
                  "tenant t: a request arrived at 0.000 s with 2 waiting, past engine.max_waiting "
                  "(2): the offered load is far past what the engine serves (raise max_waiting to "
                  "let the queue grow further)");
  ema_engine_free(engine);
  ema_kv_pool_free(pool);
}

/* max_model_len 50: prompt 40 + output 10 = 50 runs; 41 + 10 = 51 is
 * refused (counted in rejected and in rejected_too_long). With 3 blocks,
 * the two that fit the length never fit the memory (4 blocks of 16 each):
 * rejected too, but not as too long. */
static void test_max_model_len(void) {
  const EmaRequestRecord records[] = {
      {.prompt_tokens = 40, .output_tokens = 10, .id = 0},
      {.prompt_tokens = 41, .output_tokens = 10, .id = 1},
      {.prompt_tokens = 45, .output_tokens = 4, .id = 2}, /* 49 tokens: 4 blocks of 16 > 3 */
  };
  EmaEngineConfig config = {.max_model_len = 50};
  Run r = {0};
  run(&r, config, records, 3, 4);
  g_assert_cmpuint(ema_engine_completed(r.engine), ==, 2);
  g_assert_cmpuint(ema_engine_rejected(r.engine), ==, 1);
  g_assert_cmpuint(ema_engine_rejected_too_long(r.engine), ==, 1);
  run_clear(&r);
  run(&r, config, records, 3, 3);
  g_assert_cmpuint(ema_engine_completed(r.engine), ==, 0);
  g_assert_cmpuint(ema_engine_rejected(r.engine), ==, 3);
  g_assert_cmpuint(ema_engine_rejected_too_long(r.engine), ==, 1);
  run_clear(&r);
}

/* step_cpu_cost 0.5 ms: prompt 16, output 2 takes two steps of 1 ms GPU +
 * 0.5 ms CPU: first token at 1.5 ms, done at 3 ms. */
static void test_step_cpu_cost(void) {
  const EmaRequestRecord records[] = {{.prompt_tokens = 16, .output_tokens = 2}};
  EmaEngineConfig config = {.costs.step_cpu_cost = EMA_US(500)};
  Run r = {0};
  run(&r, config, records, 1, 10);
  g_assert_cmpuint(r.steps->len, ==, 2);
  g_assert_cmpint(step(&r, 1)->start, ==, EMA_US(1500));
  g_assert_cmpint(step(&r, 1)->gpu_time, ==, STEP);
  g_assert_cmpint(step(&r, 1)->cpu_time, ==, EMA_US(500));
  g_assert_cmpint(step(&r, 1)->duration, ==, EMA_US(1500));
  g_assert_cmpint(done(&r, 0)->first_token, ==, EMA_US(1500));
  g_assert_cmpint(done(&r, 0)->finished, ==, EMA_MS(3));
  run_clear(&r);
}

/* The CPU time per request and async overlap. Two requests (prompt 16,
 * output 2) at 0, STEP = 1 ms of GPU a step. step_cpu_cost 0.2 ms + 0.1 ms
 * per scheduled request: both steps schedule two, 0.4 ms of CPU; without
 * overlap a step lasts 1.4 ms (done at 2.8 ms). With cpu_overlap it lasts
 * max(1 ms, 0.4 ms) = 1 ms (done at 2 ms); with 0.7 ms per request (1.6 ms of
 * CPU) the CPU bounds it: 1.6 ms a step, done at 3.2 ms. */
static void test_step_cpu_cost_per_seq(void) {
  const EmaRequestRecord records[] = {{.prompt_tokens = 16, .output_tokens = 2, .id = 0},
                                      {.prompt_tokens = 16, .output_tokens = 2, .id = 1}};
  EmaEngineConfig config = {
      .costs = {.step_cpu_cost = EMA_US(200), .step_cpu_cost_per_seq = EMA_US(100)}};
  Run r = {0};
  run(&r, config, records, 2, 10);
  g_assert_cmpuint(r.steps->len, ==, 2);
  g_assert_cmpint(step(&r, 0)->cpu_time, ==, EMA_US(400));
  g_assert_cmpint(step(&r, 1)->cpu_time, ==, EMA_US(400));
  g_assert_cmpint(step(&r, 1)->duration, ==, EMA_US(1400));
  g_assert_cmpint(done(&r, 1)->finished, ==, EMA_US(2800));
  run_clear(&r);
  config.costs.cpu_overlap = TRUE;
  run(&r, config, records, 2, 10);
  g_assert_cmpint(step(&r, 1)->duration, ==, STEP);
  g_assert_cmpint(done(&r, 1)->finished, ==, 2 * STEP);
  run_clear(&r);
  config.costs.step_cpu_cost_per_seq = EMA_US(700);
  run(&r, config, records, 2, 10);
  g_assert_cmpint(step(&r, 0)->cpu_time, ==, EMA_US(1600));
  g_assert_cmpint(step(&r, 1)->duration, ==, EMA_US(1600));
  g_assert_cmpint(done(&r, 1)->finished, ==, EMA_US(3200));
  run_clear(&r);
}

/* Output processing beside the next step (V0's async output processing):
 * one request (prompt 16, output 2), STEP = 1 ms of GPU a step, 0.2 ms of
 * CPU a step and 0.3 ms + 0.2 ms a request of output processing (0.5 ms):
 * hidden behind the GPU, a step lasts 1 + 0.2 ms (done at 2.4 ms), its CPU
 * time 0.7 ms; at 1.5 ms + 0.2 ms a request (1.7 ms) it outlasts the GPU:
 * 1.7 + 0.2 ms a step (done at 3.8 ms). Under cpu_overlap all of it is
 * beside the GPU: max(1, 1.9) = 1.9 ms. */
static void test_output_cpu_cost(void) {
  const EmaRequestRecord records[] = {{.prompt_tokens = 16, .output_tokens = 2}};
  EmaEngineConfig config = {.costs = {.step_cpu_cost = EMA_US(200),
                                      .output_cpu_cost = EMA_US(300),
                                      .output_cpu_cost_per_seq = EMA_US(200)}};
  Run r = {0};
  run(&r, config, records, 1, 10);
  g_assert_cmpint(step(&r, 1)->cpu_time, ==, EMA_US(700));
  g_assert_cmpint(step(&r, 1)->duration, ==, EMA_US(1200));
  g_assert_cmpint(done(&r, 0)->finished, ==, EMA_US(2400));
  run_clear(&r);
  config.costs.output_cpu_cost = EMA_US(1500);
  run(&r, config, records, 1, 10);
  g_assert_cmpint(step(&r, 1)->duration, ==, EMA_US(1900));
  g_assert_cmpint(done(&r, 0)->finished, ==, EMA_US(3800));
  run_clear(&r);
  config.costs.cpu_overlap = TRUE;
  run(&r, config, records, 1, 10);
  g_assert_cmpint(step(&r, 1)->duration, ==, EMA_US(1900));
  run_clear(&r);
}

/* The eager launch floor. Three requests (prompt 16, output 3) at 0, STEP =
 * 1 ms of GPU a step, eager_cpu_cost 2.5 ms, 0.2 ms of CPU a step. The
 * first step prefills (eager: 2.5 + 0.2 ms); with CUDA graphs for decode-only
 * steps of up to 3 requests the two decode steps take 1 + 0.2 ms each (done
 * at 5.1 ms), with graphs up to 2 requests they run eagerly too (2.7 ms each,
 * done at 8.1 ms). Under cpu_overlap the floor still holds: max(2.5, 0.2). */
static void test_eager_floor(void) {
  const EmaRequestRecord records[] = {{.prompt_tokens = 16, .output_tokens = 3, .id = 0},
                                      {.prompt_tokens = 16, .output_tokens = 3, .id = 1},
                                      {.prompt_tokens = 16, .output_tokens = 3, .id = 2}};
  EmaEngineConfig config = {.costs = {.step_cpu_cost = EMA_US(200),
                                      .eager_cpu_cost = EMA_US(2500),
                                      .cuda_graph_max_batch = 3}};
  Run r = {0};
  run(&r, config, records, 3, 10);
  g_assert_cmpuint(r.steps->len, ==, 3);
  g_assert_cmpint(step(&r, 0)->gpu_time, ==, EMA_US(2500));
  g_assert_cmpint(step(&r, 0)->duration, ==, EMA_US(2700));
  g_assert_cmpint(step(&r, 1)->gpu_time, ==, STEP);
  g_assert_cmpint(step(&r, 2)->duration, ==, EMA_US(1200));
  g_assert_cmpint(done(&r, 2)->finished, ==, EMA_US(5100));
  run_clear(&r);
  config.costs.cuda_graph_max_batch = 2;
  run(&r, config, records, 3, 10);
  g_assert_cmpint(step(&r, 2)->duration, ==, EMA_US(2700));
  g_assert_cmpint(done(&r, 2)->finished, ==, EMA_US(8100));
  run_clear(&r);
  config.costs.cpu_overlap = TRUE;
  run(&r, config, records, 3, 10);
  g_assert_cmpint(step(&r, 2)->duration, ==, EMA_US(2500));
  run_clear(&r);
}

/* Async scheduling's admission: r0 (prompt 16, output 5) at 0, r1 (prompt
 * 16, output 2) at 1.5 ms, steps of 1 ms. Without overlap r1 joins the step
 * at 2 ms (first token at 3 ms); with cpu_overlap the step at 2 ms was
 * scheduled while the one at 1 ms ran, before r1 arrived: r1 joins the step
 * at 3 ms (first token at 4 ms). A request arriving at an idle engine is
 * scheduled at once either way (r0: first token at 1 ms). */
static void test_async_admission(void) {
  const EmaRequestRecord records[] = {
      {.arrival = 0, .prompt_tokens = 16, .output_tokens = 5, .id = 0},
      {.arrival = EMA_US(1500), .prompt_tokens = 16, .output_tokens = 2, .id = 1},
  };
  EmaEngineConfig config = {.scheduler = EMA_SCHEDULER_V1};
  Run r = {0};
  run(&r, config, records, 2, 10);
  g_assert_cmpint(done(&r, 1)->first_token, ==, 3 * STEP);
  run_clear(&r);
  config.costs.cpu_overlap = TRUE;
  run(&r, config, records, 2, 10);
  g_assert_cmpint(done(&r, 0)->first_token, ==, STEP);
  g_assert_cmpint(done(&r, 1)->first_token, ==, 4 * STEP);
  g_assert_cmpint(done(&r, 1)->finished, ==, 5 * STEP);
  run_clear(&r);
}

/* request_cpu_cost 0.3 ms: a request (prompt 16, output 2) arriving at 1 ms
 * is schedulable at 1.3 ms: its steps run 1.3-2.3 and 2.3-3.3 ms, its
 * arrival stays 1 ms (TTFT 1.3 ms). */
static void test_request_cpu_cost(void) {
  const EmaRequestRecord records[] = {
      {.arrival = EMA_MS(1), .prompt_tokens = 16, .output_tokens = 2, .id = 0}};
  EmaEngineConfig config = {.request_cpu_cost = EMA_US(300)};
  Run r = {0};
  run(&r, config, records, 1, 10);
  g_assert_cmpint(done(&r, 0)->arrival, ==, EMA_MS(1));
  g_assert_cmpint(step(&r, 0)->start, ==, EMA_US(1300));
  g_assert_cmpint(done(&r, 0)->first_token, ==, EMA_US(2300));
  g_assert_cmpint(done(&r, 0)->finished, ==, EMA_US(3300));
  run_clear(&r);
}

/* r0 (prompt 16, output 4) at 0, r1 (prompt 16, output 2) at 1.5 ms.
 * V1: step 3 (2-3 ms) decodes r0 and prefills r1 together; r0's 4th token
 * and r1's 2nd come at 4 ms. V0: step 3 only prefills r1 (r0 waits), step 4
 * decodes both (r1 done at 4 ms), step 5 gives r0 its 4th token at 5 ms. */
static void test_v0_prefill_first(void) {
  const EmaRequestRecord records[] = {
      {.arrival = 0, .prompt_tokens = 16, .output_tokens = 4, .id = 0},
      {.arrival = EMA_US(1500), .prompt_tokens = 16, .output_tokens = 2, .id = 1},
  };
  EmaEngineConfig config = {.scheduler = EMA_SCHEDULER_V1};
  Run r = {0};
  run(&r, config, records, 2, 10);
  g_assert_cmpuint(r.steps->len, ==, 4);
  g_assert_cmpuint(step(&r, 2)->batch.decode_seqs, ==, 1);
  g_assert_cmpuint(step(&r, 2)->batch.prefill_tokens, ==, 16);
  g_assert_cmpuint(step(&r, 2)->prefill_seqs, ==, 1);
  g_assert_cmpint(done(&r, 0)->finished, ==, 4 * STEP);
  g_assert_cmpint(done(&r, 1)->finished, ==, 4 * STEP);
  run_clear(&r);

  config.scheduler = EMA_SCHEDULER_V0;
  run(&r, config, records, 2, 10);
  g_assert_cmpuint(r.steps->len, ==, 5);
  g_assert_cmpuint(step(&r, 2)->batch.decode_seqs, ==, 0);
  g_assert_cmpuint(step(&r, 2)->batch.prefill_tokens, ==, 16);
  g_assert_cmpuint(step(&r, 3)->batch.decode_seqs, ==, 2);
  g_assert_cmpint(done(&r, 1)->finished, ==, 4 * STEP);
  g_assert_cmpint(done(&r, 0)->finished, ==, 5 * STEP);
  g_assert_cmpuint(done(&r, 0)->generated, ==, 4);
  run_clear(&r);
}

/* Closed loop, 2 clients, four requests (prompt 16, output 2) whose trace
 * times (1, 2, 3, 4 s) are not used: r0 and r1 are sent at 0 and done at
 * 2 ms (prefill, decode); r2 and r3 are sent then and done at 4 ms. One
 * client: each request after the last, 2 ms each. */
static void test_closed_loop(void) {
  const EmaRequestRecord records[] = {
      {.arrival = EMA_S(1), .prompt_tokens = 16, .output_tokens = 2, .id = 0},
      {.arrival = EMA_S(2), .prompt_tokens = 16, .output_tokens = 2, .id = 1},
      {.arrival = EMA_S(3), .prompt_tokens = 16, .output_tokens = 2, .id = 2},
      {.arrival = EMA_S(4), .prompt_tokens = 16, .output_tokens = 2, .id = 3},
  };
  EmaEngineConfig config = {.concurrency = 2};
  Run r = {0};
  run(&r, config, records, 4, 10);
  for (guint i = 0; i < 4; i++) {
    g_assert_cmpint(done(&r, i)->arrival, ==, i < 2 ? 0 : 2 * STEP);
    g_assert_cmpint(done(&r, i)->finished, ==, i < 2 ? 2 * STEP : 4 * STEP);
  }
  for (guint i = 0; i < r.steps->len; i++)
    g_assert_cmpuint(step(&r, i)->running, <=, 2);
  run_clear(&r);

  config.concurrency = 1;
  run(&r, config, records, 4, 10);
  for (guint i = 0; i < 4; i++) {
    g_assert_cmpint(done(&r, i)->arrival, ==, 2 * i * STEP);
    g_assert_cmpint(done(&r, i)->finished, ==, 2 * (i + 1) * STEP);
  }
  run_clear(&r);
}

/* Clients free together send together: concurrency 2, request_cpu_cost
 * 0.3 ms, four requests (prompt 16, output 2), 1 ms steps. Both clients
 * send at 0 (the API server takes both side by side): both reach the
 * engine at 0.3 ms, share its steps and finish at 2.3 ms; both send again
 * then, arrive at 2.3 ms and finish at 4.6 ms. (Handing them over one after
 * the other would start the second 0.3 ms later.) */
static void test_closed_loop_request_cost(void) {
  const EmaRequestRecord records[] = {
      {.arrival = EMA_S(1), .prompt_tokens = 16, .output_tokens = 2, .id = 0},
      {.arrival = EMA_S(2), .prompt_tokens = 16, .output_tokens = 2, .id = 1},
      {.arrival = EMA_S(3), .prompt_tokens = 16, .output_tokens = 2, .id = 2},
      {.arrival = EMA_S(4), .prompt_tokens = 16, .output_tokens = 2, .id = 3},
  };
  EmaEngineConfig config = {.concurrency = 2, .request_cpu_cost = EMA_US(300)};
  Run r = {0};
  run(&r, config, records, 4, 10);
  for (guint i = 0; i < 4; i++) {
    g_assert_cmpint(done(&r, i)->arrival, ==, i < 2 ? 0 : EMA_US(2300));
    g_assert_cmpint(done(&r, i)->scheduled, ==, i < 2 ? EMA_US(300) : EMA_US(2600));
    g_assert_cmpint(done(&r, i)->finished, ==, i < 2 ? EMA_US(2300) : EMA_US(4600));
  }
  run_clear(&r);
}

/* A rejected request frees its client too: concurrency 1, the first
 * request over max_model_len; the second is sent at once. */
static void test_closed_loop_reject(void) {
  const EmaRequestRecord records[] = {
      {.arrival = EMA_S(1), .prompt_tokens = 90, .output_tokens = 20, .id = 0},
      {.arrival = EMA_S(2), .prompt_tokens = 16, .output_tokens = 2, .id = 1},
  };
  EmaEngineConfig config = {.concurrency = 1, .max_model_len = 100};
  Run r = {0};
  run(&r, config, records, 2, 10);
  g_assert_cmpuint(ema_engine_rejected_too_long(r.engine), ==, 1);
  g_assert_cmpint(done(&r, 1)->arrival, ==, 0);
  g_assert_cmpint(done(&r, 1)->finished, ==, 2 * STEP);
  run_clear(&r);
}

/* Prefix caching, 4-token blocks, 5 blocks in all, budget 64. r0, r1, r3
 * and r4 (prompt 12) start with the same 8-token prefix (one id, a unit of
 * 8 tokens: 2 hashed blocks, A then B); r2 (prompt 16) has no identity.
 * Every full prompt block is cached: past the prefix by the request's own
 * hash (r0's third block C0, r1's C1, r3's C3, r4's C4, r2's D0..D3).
 *  0 ms  r0: no hit; prefills 12 (3 blocks), A, B and C0 become cached;
 *        decodes with 13 tokens (4 blocks); done at 2 ms: A, B and C0 are
 *        free and cached, freed tail first (C0, B, A: C0 is evicted first).
 *  5 ms  r2 takes 4 blocks: 1 free left for 3 cached ones: C0 and B are
 *        evicted; D0..D3 become cached, freed at 6 ms after A.
 * 10 ms  r1: hits A only (4 tokens): prefills 8 tokens after 4 cached
 *        (context 8 x 4 + 36 = 68, KV read 12), takes A back plus 2 new
 *        blocks (D3, D2 evicted); B is cached again from its own copy, C1
 *        too; its decode block evicts D1. Done at 12 ms.
 * 20 ms  r3 and r4 arrive together; each hits A and B (8 tokens) and needs
 *        one block of its own (r4's evicts D0): 4 blocks held (A and B
 *        once), where without sharing they would need 6 > 5 and r4 would
 *        wait. Done at 21 ms; cached at the end: A, B, C1, C3, C4.
 * Queries 12 + 16 + 12 + 12 + 12 = 64 tokens, hits 0 + 0 + 4 + 8 + 8 = 20;
 * evictions C0, B, D3, D2, D1, D0. */
static void test_prefix_cache(void) {
  static const guint64 prefix[] = {7};
#define SHARED .prefix_blocks = 1, .prefix_unit_tokens = 8, .prefix_ids = prefix
  const EmaRequestRecord records[] = {
      {.arrival = 0, .prompt_tokens = 12, .output_tokens = 2, .id = 0, SHARED},
      {.arrival = EMA_MS(5), .prompt_tokens = 16, .output_tokens = 1, .id = 2},
      {.arrival = EMA_MS(10), .prompt_tokens = 12, .output_tokens = 2, .id = 1, SHARED},
      {.arrival = EMA_MS(20), .prompt_tokens = 12, .output_tokens = 1, .id = 3, SHARED},
      {.arrival = EMA_MS(20), .prompt_tokens = 12, .output_tokens = 1, .id = 4, SHARED},
  };
#undef SHARED
  EmaEngineConfig config = {.block_tokens = 4, .prefix_caching = TRUE};
  Run r = {0};
  EmaPrefixCacheStats stats;
  run(&r, config, records, G_N_ELEMENTS(records), 5);
  /* steps: r0 0-1, 1-2; r2 5-6; r1 10-11, 11-12; r3 + r4 20-21 */
  g_assert_cmpuint(r.steps->len, ==, 6);
  g_assert_cmpuint(step(&r, 0)->batch.prefill_tokens, ==, 12);
  g_assert_cmpuint(step(&r, 1)->blocks_used, ==, 4);
  g_assert_cmpuint(step(&r, 3)->batch.prefill_tokens, ==, 8);
  g_assert_cmpfloat(step(&r, 3)->batch.prefill_context, ==, 68);
  g_assert_cmpfloat(step(&r, 3)->batch.prefill_kv_read, ==, 12);
  g_assert_cmpuint(step(&r, 3)->blocks_used, ==, 3);
  g_assert_cmpint(done(&r, 1)->first_token, ==, EMA_MS(11));
  g_assert_cmpint(step(&r, 5)->start, ==, EMA_MS(20));
  g_assert_cmpuint(step(&r, 5)->batch.prefill_tokens, ==, 8);
  g_assert_cmpuint(step(&r, 5)->prefill_seqs, ==, 2);
  g_assert_cmpuint(step(&r, 5)->blocks_used, ==, 4);
  g_assert_cmpint(done(&r, 3)->finished, ==, EMA_MS(21));
  g_assert_cmpint(done(&r, 4)->finished, ==, EMA_MS(21));
  stats = ema_engine_prefix_cache_stats(r.engine);
  g_assert_cmpuint(stats.query_tokens, ==, 64);
  g_assert_cmpuint(stats.hit_tokens, ==, 20);
  g_assert_cmpuint(stats.evictions, ==, 6);
  g_assert_cmpuint(stats.cached_blocks, ==, 5);
  /* r0 decodes holding its 3 full prompt blocks cached (A, B and C0) */
  assert_cached(&r, 0, 0, 0);
  assert_cached(&r, 1, 1, 3);
  run_clear(&r);

  /* off: no hits, r4 waits for r3's blocks (prefill 21-22 ms) */
  config.prefix_caching = FALSE;
  run(&r, config, records, G_N_ELEMENTS(records), 5);
  stats = ema_engine_prefix_cache_stats(r.engine);
  g_assert_cmpuint(stats.hit_tokens, ==, 0);
  g_assert_cmpuint(stats.cached_blocks, ==, 0);
  g_assert_cmpint(done(&r, 4)->finished, ==, EMA_MS(22));
  run_clear(&r);
}

/* A prompt that is all prefix still computes its last token: prompt 8 =
 * the 8-token prefix, cached by r0; r1 hits 1 block only (4 of its 8
 * tokens: at most 7 may hit, whole blocks). */
static void test_prefix_cache_last_token(void) {
  static const guint64 prefix[] = {9};
  const EmaRequestRecord records[] = {
      {.arrival = 0,
       .prompt_tokens = 8,
       .output_tokens = 1,
       .id = 0,
       .prefix_blocks = 1,
       .prefix_unit_tokens = 8,
       .prefix_ids = prefix},
      {.arrival = EMA_MS(5),
       .prompt_tokens = 8,
       .output_tokens = 1,
       .id = 1,
       .prefix_blocks = 1,
       .prefix_unit_tokens = 8,
       .prefix_ids = prefix},
  };
  EmaEngineConfig config = {.block_tokens = 4, .prefix_caching = TRUE};
  Run r = {0};
  run(&r, config, records, 2, 5);
  g_assert_cmpuint(step(&r, 1)->batch.prefill_tokens, ==, 4);
  g_assert_cmpuint(ema_engine_prefix_cache_stats(r.engine).hit_tokens, ==, 4);
  run_clear(&r);
}

/* A request preempted by recompute finds its own freed prompt blocks still
 * cached when it is admitted again (vLLM hashes every full block). 4-token
 * blocks, 4 in all; r0 (prompt 8, output 3) and r1 (prompt 4, output 6)
 * arrive at 0, neither with a shared prefix.
 * 0-1 ms  both prefill (r0 2 blocks, r1 1: block R cached); 1 free.
 * 1-2 ms  r0's 9th token takes the last block; r1's 5th needs one, none is
 *         free: r1, the newest, preempts itself (R free, still cached).
 * 2-3 ms  r0 decodes and finishes; r1 (5 known tokens) would hit R but needs
 *         2 blocks with 1 free: it waits.
 * 3-4 ms  r1 is admitted: R hits (4 tokens), it computes 1 token, not 5
 *         (a decode: it has generated).
 * Then 4 decode steps: r1 done at 8 ms. Queries 8 + 4 + 5, hits 4. */
static void test_prefix_cache_preempted(void) {
  const EmaRequestRecord records[] = {
      {.arrival = 0, .prompt_tokens = 8, .output_tokens = 3, .id = 0},
      {.arrival = 0, .prompt_tokens = 4, .output_tokens = 6, .id = 1},
  };
  EmaEngineConfig config = {.block_tokens = 4, .prefix_caching = TRUE};
  Run r = {0};
  EmaPrefixCacheStats stats;
  run(&r, config, records, G_N_ELEMENTS(records), 4);
  g_assert_cmpuint(step(&r, 1)->preempted, ==, 1);
  g_assert_cmpint(step(&r, 3)->start, ==, EMA_MS(3));
  /* its 1 token counts as a decode (it has generated) */
  g_assert_cmpuint(step(&r, 3)->batch.prefill_tokens, ==, 0);
  g_assert_cmpuint(step(&r, 3)->batch.decode_seqs, ==, 1);
  g_assert_cmpint(done(&r, 0)->finished, ==, EMA_MS(3));
  g_assert_cmpuint(done(&r, 1)->preemptions, ==, 1);
  g_assert_cmpint(done(&r, 1)->finished, ==, EMA_MS(8));
  stats = ema_engine_prefix_cache_stats(r.engine);
  g_assert_cmpuint(stats.query_tokens, ==, 17);
  g_assert_cmpuint(stats.hit_tokens, ==, 4);
  /* decoding with cached blocks: r0 (its 2 prompt blocks) in the region at 1-3 ms; r1 (R) in
   * the tail at 3-4 ms, just admitted, then in the region */
  assert_cached(&r, 1, 1, 2);
  assert_cached(&r, 2, 1, 2);
  assert_cached(&r, 3, 1, 1);
  assert_cached(&r, 4, 1, 1);
  run_clear(&r);
  /* without caching r1 computes its 5 tokens again */
  config.prefix_caching = FALSE;
  run(&r, config, records, G_N_ELEMENTS(records), 4);
  g_assert_cmpuint(step(&r, 3)->batch.prefill_tokens, ==, 5);
  assert_cached(&r, 1, 0, 0);
  run_clear(&r);
}

/* ---- a run of own blocks split between local room and the tier -------- */

/* A memory of LOCAL blocks of the GPU's own and REMOTE borrowed ones
 * (taken after the own ones); its free borrowed blocks are the prefix
 * cache's tier. It logs what the cache does to it ("ms:call:name:n;",
 * name C for the cache), not the requests' own takes. */
typedef struct {
  EmaSim *sim;
  guint64 local, remote, used;
  GString *log;
} TierMemory;

static void tier_log(TierMemory *m, const char *call, guint64 request, guint64 n) {
  g_string_append_printf(m->log, "%" G_GINT64_FORMAT ":%s:", ema_sim_now(m->sim) / EMA_MS(1), call);
  if (request == EMA_KV_PREFIX_CACHE)
    g_string_append_c(m->log, 'C');
  else
    g_string_append_printf(m->log, "%" G_GUINT64_FORMAT, request);
  g_string_append_printf(m->log, ":%" G_GUINT64_FORMAT ";", n);
}

static gboolean tier_take(gpointer self, guint64 request, guint64 n) {
  TierMemory *m = self;
  if (m->local + m->remote - m->used < n)
    return FALSE;
  m->used += n;
  if (request == EMA_KV_PREFIX_CACHE)
    tier_log(m, "take", request, n);
  return TRUE;
}

static void tier_give(gpointer self, guint64 request, guint64 n) {
  TierMemory *m = self;
  g_assert_cmpuint(n, <=, m->used);
  m->used -= n;
  tier_log(m, "give", request, n);
}

static guint64 tier_free(gpointer self) {
  TierMemory *m = self;
  return m->local + m->remote - m->used;
}

static guint64 tier_total(gpointer self) {
  TierMemory *m = self;
  return m->local + m->remote;
}

static void tier_to_cache(gpointer self, guint64 request, guint64 n) {
  tier_log(self, "cache", request, n);
}

static void tier_room(gpointer self, guint64 *local, guint64 *remote) {
  TierMemory *m = self;
  *local = m->used < m->local ? m->local - m->used : 0;
  *remote = tier_free(m) - *local;
}

/* A fetch costs 1 us a block. */
static EmaTime tier_move(gpointer self, EmaKvTierMove move, guint64 n) {
  static const char *names[] = {"demote", "fetch", "drop"};
  tier_log(self, names[move], 0, n);
  return move == EMA_KV_TIER_FETCH ? (EmaTime) n * EMA_US(1) : 0;
}

static const EmaKvMemoryOps tier_ops = {.take = tier_take,
                                        .give = tier_give,
                                        .free_blocks = tier_free,
                                        .total_blocks = tier_total,
                                        .to_cache = tier_to_cache,
                                        .cache_room = tier_room,
                                        .cache_tier = tier_move};

/* Blocks of 4 tokens, 6 local + 4 borrowed. B (serial 0: 3 prompt tokens,
 * no full block; 16 output) and A (serial 1: 24 prompt tokens, 6 full
 * blocks of its own, no identified prefix; 10 output) start at 0: A's 6
 * blocks are cached at 1 ms; A has 8 blocks from 5 ms, B 2, all 10 taken.
 * At 6 ms B needs its 3rd block: A (the newest) is preempted (A gives its
 * 2 uncached blocks, the cache its 6: A's run, free in local room) and
 * B's block leaves 3 of local room: A's last 3 run blocks are demoted.
 * A (30 known tokens) would hit all 6 (3 of them fetched) but needs 8
 * blocks, 7 free, and waits while B grows: B's 4th block (10 ms) demotes
 * one more (the tier's 4 blocks are A's), its 5th (14 ms) one more and
 * the tier, its room down to 4, drops A's last. B finishes at 16 ms
 * (gives 5); A hits its 5 cached blocks, the first local, the other 4
 * fetched (4 us), prefills 10 tokens (16 ms to 17 ms + 4 us), registers
 * its 6th block, decodes 3 more (its 9th block at 19 ms) and finishes at
 * 20 ms + 4 us: its run of 6 stays cached, orphaned. */
static void test_prefix_run_tier(void) {
  const EmaRequestRecord records[] = {
      {.arrival = 0, .prompt_tokens = 3, .output_tokens = 16, .id = 0},
      {.arrival = 0, .prompt_tokens = 24, .output_tokens = 10, .id = 1},
  };
  EmaEngineConfig config = {
      .block_tokens = 4, .prefix_caching = TRUE, .max_num_seqs = 8, .max_num_batched_tokens = 64};
  g_autoptr(EmaSim) sim = ema_sim_new();
  g_autoptr(GError) error = NULL;
  TierMemory m = {sim, 6, 4, 0, g_string_new(NULL)};
  Run r = {.total = 10,
           .steps = g_array_new(FALSE, TRUE, sizeof(EmaStepReport)),
           .done = g_ptr_array_new_with_free_func(g_free),
           .cached = g_array_new(FALSE, TRUE, sizeof(guint64)),
           .records = G_N_ELEMENTS(records)};
  EmaEngineObserver observer = {on_step, on_finish, &r};
  EmaPrefixCacheStats stats;
  r.engine = ema_engine_new(sim, &config, (EmaKvMemory){&tier_ops, &m}, one_ms, &r,
                            ema_trace_source_new_array(records, G_N_ELEMENTS(records)));
  ema_engine_add_observer(r.engine, &observer);
  ema_engine_start(r.engine);
  g_assert_true(ema_sim_run_until(sim, EMA_TIME_NEVER, &error));
  g_assert_no_error(error);
  g_assert_cmpstr(m.log->str, ==,
                  "1:cache:1:6;"
                  "6:give:1:2;6:give:C:6;6:demote:0:3;"
                  "10:demote:0:1;14:demote:0:1;14:drop:0:1;16:give:0:5;"
                  "16:fetch:0:4;16:take:C:1;16:take:C:1;16:take:C:1;16:take:C:1;16:take:C:1;"
                  "17:cache:1:1;20:give:1:3;20:give:C:6;");
  g_assert_cmpint(done(&r, 0)->finished, ==, EMA_MS(16));
  g_assert_cmpuint(done(&r, 1)->preemptions, ==, 1);
  g_assert_cmpint(done(&r, 1)->finished, ==, EMA_MS(20) + EMA_US(4));
  stats = ema_engine_prefix_cache_stats(r.engine);
  g_assert_cmpuint(stats.query_tokens, ==, 3 + 24 + 30);
  g_assert_cmpuint(stats.hit_tokens, ==, 20);
  g_assert_cmpuint(stats.remote_hit_tokens, ==, 16);
  g_assert_cmpuint(stats.fetched, ==, 4);
  g_assert_cmpuint(stats.demoted, ==, 5);
  g_assert_cmpuint(stats.evictions, ==, 1);
  g_assert_cmpuint(stats.cached_blocks, ==, 6);
  g_assert_cmpuint(stats.remote_blocks, ==, 0);
  g_assert_cmpuint(ema_engine_blocks_held(r.engine), ==, 0);
  g_assert_cmpuint(m.used, ==, 0);
  /* B decodes holding its 6 prompt blocks cached; A has none */
  assert_cached(&r, 1, 1, 6);
  ema_engine_free(r.engine);
  g_array_unref(r.steps);
  g_ptr_array_unref(r.done);
  g_array_unref(r.cached);
  g_string_free(m.log, TRUE);
}

int main(int argc, char **argv) {
  g_test_init(&argc, &argv, NULL);
  g_test_add_func("/engine-vllm/block-size", test_block_size);
  g_test_add_func("/engine-vllm/block-size-not-power-of-two", test_block_size_not_power_of_two);
  g_test_add_func("/engine-vllm/max-model-len", test_max_model_len);
  g_test_add_func("/engine-vllm/max-waiting", test_max_waiting);
  g_test_add_func("/engine-vllm/step-cpu-cost", test_step_cpu_cost);
  g_test_add_func("/engine-vllm/step-cpu-cost-per-seq", test_step_cpu_cost_per_seq);
  g_test_add_func("/engine-vllm/output-cpu-cost", test_output_cpu_cost);
  g_test_add_func("/engine-vllm/eager-floor", test_eager_floor);
  g_test_add_func("/engine-vllm/async-admission", test_async_admission);
  g_test_add_func("/engine-vllm/request-cpu-cost", test_request_cpu_cost);
  g_test_add_func("/engine-vllm/v0-prefill-first", test_v0_prefill_first);
  g_test_add_func("/engine-vllm/closed-loop", test_closed_loop);
  g_test_add_func("/engine-vllm/closed-loop-request-cost", test_closed_loop_request_cost);
  g_test_add_func("/engine-vllm/closed-loop-reject", test_closed_loop_reject);
  g_test_add_func("/engine-vllm/prefix-cache", test_prefix_cache);
  g_test_add_func("/engine-vllm/prefix-cache-last-token", test_prefix_cache_last_token);
  g_test_add_func("/engine-vllm/prefix-cache-preempted", test_prefix_cache_preempted);
  g_test_add_func("/engine-vllm/prefix-run-tier", test_prefix_run_tier);
  return g_test_run();
}
