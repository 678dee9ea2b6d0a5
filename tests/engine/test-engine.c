/* test-engine.c: the serving engine on small cases computed by hand. Every
 * step costs exactly 1 ms (a fake step-cost function), so times count
 * steps; block counts are checked after every step against the hand
 * computation in the comments, and the pool never over-commits. */
#include "ema/engine.h"

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

/* Run requests RECORDS through an engine with POOL blocks; fills H. */
static void run(Harness *h, const EmaRequestRecord *records, gsize n, guint64 pool_blocks,
                guint64 budget, guint64 max_seqs, guint64 watermark) {
  g_autoptr(EmaSim) sim = ema_sim_new();
  EmaEngineConfig config = {.max_num_seqs = max_seqs,
                            .max_num_batched_tokens = budget,
                            .watermark_blocks = watermark,
                            .preempt = EMA_PREEMPT_RECOMPUTE};
  EmaEngineObserver observer = {on_step, on_finish, h};
  EmaEngine *engine;
  g_autoptr(GError) error = NULL;

  h->total_blocks = pool_blocks;
  h->pool = ema_kv_pool_new(pool_blocks);
  h->memory = ema_kv_pool_memory(h->pool);
  h->steps = g_array_new(FALSE, TRUE, sizeof(EmaStepReport));
  h->done = g_ptr_array_new_with_free_func(g_free);
  engine =
      ema_engine_new(sim, &config, h->memory, one_ms, NULL, ema_trace_source_new_array(records, n));
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

int main(int argc, char **argv) {
  g_test_init(&argc, &argv, NULL);
  g_test_add_func("/engine/three-requests", test_three_requests);
  g_test_add_func("/engine/preempt-when-full", test_preempt_when_full);
  g_test_add_func("/engine/watermark", test_watermark);
  g_test_add_func("/engine/reject-too-long", test_reject_too_long);
  return g_test_run();
}
