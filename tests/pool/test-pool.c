/* test-pool.c: the elastic memory pool (pool.h) driven through its public
 * API, with the test policies of testpolicies.h and figures checked by
 * hand:
 *
 * - the ledger: a borrow of N slices becomes usable exactly N x
 *   (vmm.create_cost + vmm.map_cost) after the decision, and the lender's
 *   memory shrinks at once; plans beyond what can be lent are cut and
 *   counted; new blocks go local first, then to the lender with the most
 *   free borrowed room; a take that does not fit takes nothing; a return
 *   gives the lender its slices back after the unmap; the prefetch plan's
 *   remote limit gates admission, not growth; a YAML experiment naming the
 *   test policies runs with the ledger checked every millisecond; a pool
 *   freed with changes in flight frees them (the sanitizer build checks);
 *   KV parked on a peer (preempt: swap-peer) keeps its slices from the
 *   peer's own staging buffer, and its copies slow the peer's steps while
 *   they run;
 * - remote KV in a step (ema_pool_step_time on hand-built batches): hidden
 *   prefetch costs exactly the all-local step (also with a step overhead,
 *   over 64 batches); what peers' traffic adds to a GPU's steps is counted
 *   (ema_pool_slowed_by_peers), its own copies' share is not; exposed
 *   prefetch, direct
 *   reads, interference (the lender's and the borrower's), a lender shared
 *   by two borrowers and two lenders on a link-per-pair and on a switch
 *   server each give the formula of pool.h, computed here from
 *   EmaStepBreakdown and the server's parameters; an offloading step is
 *   charged for its requests' own blocks on the lender (one long request
 *   remote among short local ones: one request's messages, not a share of
 *   the batch's);
 * - gives: n blocks given back return round(n R / (L + R)) of the remote
 *   ones; a drop during a reclaim frees the reclaimed lender's blocks
 *   first;
 * - reclaims with real engines: to the borrower, to a peer, to host
 *   (requests swap, preemptions rise), drop (requests recompute); what
 *   cannot go where the plan says is dropped and counted in
 *   plans_adjusted; the lender's slices come back after the copy and the
 *   unmap, to the nanosecond.
 *
 * Fixtures in $EMA_TEST_FIXTURES/pool. Llama-3.1-8B's KV block is one 2 MiB
 * slice, so blocks and slices count alike in the hand figures. */
#include <gsl/gsl_randist.h>
#include <gsl/gsl_rng.h>
#include <math.h>
#include <string.h>

#include "ema/serving/engine.h"
#include "ema/run/experiment.h"
#include "ema/pool/pool.h"
#include "ema/pool/registry.h"
#include "ema/run/serving.h"
#include "ema/hw/steptime.h"
#include "ema/serving/tenant.h"
#include "ema/traces/trace.h"

#include "rig.h"
#include "testpolicies.h"
#include "testutil.h"

#define MAX_GPUS 8

/* ---- the bench: a pool built by hand ------------------------------------- */

typedef struct _Bench Bench;

/* What an engine's callbacks get: the bench and the GPU. */
typedef struct {
  Bench *bench;
  guint gpu;
} BenchSlot;

struct _Bench {
  EmaExperiment *experiment;
  const EmaServerSpec *server;
  EmaSim *sim;
  EmaPool *pool;
  EmaPolicySpec spec;
  TestBorrowParams borrow;
  TestPrefetchParams prefetch;
  TestReclaimParams reclaim;
  TestProbe prefetch_probe, reclaim_probe;
  guint64 block_bytes;
  EmaStepModel *models[MAX_GPUS];
  EmaKvMemory memory[MAX_GPUS];
  EmaEngine *engines[MAX_GPUS];
  BenchSlot slots[MAX_GPUS];
};

static EmaExperiment *load(const char *rel, const char *const *overrides) {
  g_autofree char *path = ema_test_fixture("pool", rel);
  GError *error = NULL;
  EmaExperiment *experiment = ema_experiment_load(path, overrides, &error);
  g_assert_no_error(error);
  g_assert_nonnull(experiment);
  return experiment;
}

static const EmaTenantSpec *tenant_spec(const EmaExperiment *experiment, guint i) {
  return &g_array_index(experiment->tenants, EmaTenantSpec, i);
}

/* A bench on bench.yaml (SERVER_OVERRIDE: `--set` assignments separated by
 * ';', or NULL): the test policies with no action (borrow nothing, direct
 * reads, reclaim nothing) until the test sets their parameters; then
 * bench_pool(). */
static Bench *bench_new(const char *server_override) {
  Bench *b = g_new0(Bench, 1);
  g_auto(GStrv) overrides = server_override ? g_strsplit(server_override, ";", -1) : NULL;
  EmaTenantPlan plan;
  GError *error = NULL;
  b->experiment = load("bench.yaml", (const char *const *) overrides);
  b->server = &b->experiment->server;
  b->sim = ema_sim_new();
  g_assert_true(ema_tenant_plan(tenant_spec(b->experiment, 0), b->server, &plan, &error));
  g_assert_no_error(error);
  b->block_bytes = plan.block_bytes;
  g_assert_cmpuint(b->block_bytes, ==, EMA_SLICE_BYTES); /* Llama-3.1-8B: a block is a slice */
  b->borrow = (TestBorrowParams){0, 1, 0, 2, 0, 0};
  b->prefetch = (TestPrefetchParams){EMA_REMOTE_DIRECT, 1, 1, 1, &b->prefetch_probe, 0, FALSE, 0};
  b->reclaim = (TestReclaimParams){0, 0, EMA_VACATE_DROP, 0, &b->reclaim_probe};
  /* decision_period 0: every after-step decides (bench_decide) */
  b->spec = (EmaPolicySpec){.name = (char *) "test",
                            .borrow = (char *) "test-borrow-n",
                            .borrow_params = &b->borrow,
                            .prefetch = (char *) "test-prefetch-fixed",
                            .prefetch_params = &b->prefetch,
                            .reclaim = (char *) "test-reclaim-fixed",
                            .reclaim_params = &b->reclaim,
                            .preempt = EMA_PREEMPT_CHOICE_ENGINE,
                            .decision_period = 0};
  return b;
}

static void bench_pool(Bench *b) {
  GError *error = NULL;
  b->pool = ema_pool_new(b->sim, b->server, &b->spec, &error);
  g_assert_no_error(error);
  g_assert_nonnull(b->pool);
}

static EmaKvMemory *bench_tenant(Bench *b, guint gpu, guint64 slices) {
  GError *error = NULL;
  b->models[gpu] = ema_step_model_new(&tenant_spec(b->experiment, 0)->model, b->server, 1, &error);
  g_assert_no_error(error);
  b->memory[gpu] = ema_pool_add_tenant(b->pool, gpu, slices, b->block_bytes, b->models[gpu]);
  ema_pool_set_offload_model(b->pool, gpu, &tenant_spec(b->experiment, 0)->model);
  return &b->memory[gpu];
}

static void bench_start(Bench *b) {
  GError *error = NULL;
  g_assert_true(ema_pool_start(b->pool, &error));
  g_assert_no_error(error);
}

static void bench_check(Bench *b) {
  GError *error = NULL;
  gboolean ok = ema_pool_check(b->pool, &error);
  g_assert_no_error(error);
  g_assert_true(ok);
}

/* Run to T exactly (every event at T included), checking the ledger. */
static void bench_to(Bench *b, EmaTime t) {
  GError *error = NULL;
  g_assert_cmpint(t, >=, ema_sim_now(b->sim));
  g_assert_true(ema_sim_run_until(b->sim, t, &error));
  g_assert_no_error(error);
  g_assert_cmpint(ema_sim_now(b->sim), ==, t);
  bench_check(b);
}

/* GPU's policies decide now (as after one of its steps). */
static void bench_decide(Bench *b, guint gpu) {
  EmaStepReport report = {0};
  report.start = ema_sim_now(b->sim);
  ema_pool_after_step(b->pool, gpu, &report);
  bench_to(b, ema_sim_now(b->sim));
}

static EmaTime step_cost(gpointer data, const EmaStepBatch *batch) {
  BenchSlot *slot = data;
  return ema_pool_step_time(slot->bench->pool, slot->gpu, batch);
}

static void on_step(gpointer data, const EmaStepReport *step) {
  BenchSlot *slot = data;
  ema_pool_after_step(slot->bench->pool, slot->gpu, step);
}

/* An engine on GPU's memory serving RECORDS (recompute on preemption,
 * swap over the host link, no watermark). */
static EmaEngine *bench_engine(Bench *b, guint gpu, const EmaRequestRecord *records, gsize n) {
  EmaEngineConfig config = {.max_num_seqs = 16,
                            .max_num_batched_tokens = 4096,
                            .watermark_blocks = 0,
                            .preempt = EMA_PREEMPT_RECOMPUTE,
                            .block_bytes = b->block_bytes,
                            .swap_bandwidth = b->server->host.d2h_bandwidth,
                            .swap_fixed_cost = b->server->host.copy_fixed_cost};
  BenchSlot *slot = &b->slots[gpu];
  EmaEngineObserver observer = {on_step, NULL, slot};
  slot->bench = b;
  slot->gpu = gpu;
  b->engines[gpu] = ema_engine_new(b->sim, &config, b->memory[gpu], step_cost, slot,
                                   ema_trace_source_new_array(records, n));
  ema_engine_add_observer(b->engines[gpu], &observer);
  ema_pool_set_engine(b->pool, gpu, b->engines[gpu]);
  ema_engine_start(b->engines[gpu]);
  return b->engines[gpu];
}

static void bench_free(Bench *b) {
  for (guint g = 0; g < MAX_GPUS; g++)
    g_clear_pointer(&b->engines[g], ema_engine_free);
  g_clear_pointer(&b->pool, ema_pool_free);
  for (guint g = 0; g < MAX_GPUS; g++)
    g_clear_pointer(&b->models[g], ema_step_model_free);
  ema_sim_free(b->sim);
  ema_experiment_free(b->experiment);
  g_free(b);
}

/* The bench's blocks without an engine: one unnamed set, given back in
 * proportion (core.h). */
static gboolean take(EmaKvMemory *m, guint64 n) {
  return m->ops->take(m->self, EMA_KV_UNNAMED, n);
}

static void give(EmaKvMemory *m, guint64 n) {
  m->ops->give(m->self, EMA_KV_UNNAMED, n);
}

/* Request SERIAL of GPU's tenant has L blocks local, R1 on gpu1, R2 on gpu2. */
static void assert_request_at(Bench *b, guint gpu, guint64 serial, guint64 l, guint64 r1,
                              guint64 r2) {
  const EmaPoolRequest *r = ema_pool_request(b->pool, gpu, serial);
  g_assert_nonnull(r);
  g_assert_cmpuint(ema_pool_request_at(r, gpu), ==, l);
  g_assert_cmpuint(ema_pool_request_at(r, 1), ==, r1);
  g_assert_cmpuint(ema_pool_request_at(r, 2), ==, r2);
  g_assert_cmpuint(r->blocks, ==, l + r1 + r2);
}

static guint64 free_blocks(EmaKvMemory *m) {
  return m->ops->free_blocks(m->self);
}

static guint64 total_blocks(EmaKvMemory *m) {
  return m->ops->total_blocks(m->self);
}

static EmaTime borrow_time(const Bench *b, guint64 slices) {
  return (EmaTime) slices * (b->server->vmm.create_cost + b->server->vmm.map_cost);
}

static EmaTime unmap_time(const Bench *b, guint64 slices) {
  return (EmaTime) slices * b->server->vmm.unmap_cost;
}

static EmaTime ns(double seconds) {
  return (EmaTime) llround(seconds * 1e9);
}

/* The copy of BLOCKS blocks over the link and to host (pool.h). */
static double link_copy_s(const Bench *b, guint64 blocks) {
  double bytes = (double) blocks * (double) b->block_bytes;
  return bytes > 0
             ? (double) b->server->link.copy_fixed_cost / 1e9 + bytes / b->server->link.bandwidth
             : 0;
}

/* A migration to a peer: the peer's new slices (one block each here) are
 * created and mapped, then the blocks copied. */
static double peer_migrate_s(const Bench *b, guint64 blocks) {
  return (double) blocks * (double) (b->server->vmm.create_cost + b->server->vmm.map_cost) / 1e9 +
         link_copy_s(b, blocks);
}

static double host_copy_s(const Bench *b, guint64 blocks) {
  double bytes = (double) blocks * (double) b->block_bytes;
  return bytes > 0 ? (double) b->server->host.copy_fixed_cost / 1e9 +
                         bytes / b->server->host.d2h_bandwidth
                   : 0;
}

/* GPU 0 borrows SLICES from LENDER (and SLICES2 from LENDER2), decided at
 * the current instant; returns when they are usable. */
static void bench_borrow(Bench *b, guint64 slices, guint64 slices2) {
  EmaTime start = ema_sim_now(b->sim);
  guint64 before = ema_pool_slices_borrowed(b->pool, 0);
  bench_decide(b, 0);
  bench_to(b, start + MAX(borrow_time(b, slices), borrow_time(b, slices2)));
  g_assert_cmpuint(ema_pool_slices_borrowed(b->pool, 0), ==, before + slices + slices2);
}

/* ---- 1. the ledger ---------------------------------------------------------- */

static void test_borrow_timing(void) {
  Bench *b = bench_new(NULL);
  EmaKvMemory *m0, *m1;
  EmaTime ready;
  b->borrow = (TestBorrowParams){0, 1, 8, 2, 0, 0};
  bench_pool(b);
  m0 = bench_tenant(b, 0, 10);
  m1 = bench_tenant(b, 1, 40);
  ema_pool_add_idle_gpu(b->pool, 2, 30);
  bench_start(b);
  bench_check(b);
  for (guint g = 0; g < 4; g++) {
    g_assert_cmpuint(ema_pool_slices_lent(b->pool, g), ==, 0);
    g_assert_cmpuint(ema_pool_slices_borrowed(b->pool, g), ==, 0);
  }
  g_assert_cmpuint(total_blocks(m0), ==, 10);
  g_assert_cmpuint(free_blocks(m0), ==, 10);
  g_assert_cmpuint(free_blocks(m1), ==, 40);

  /* the decision at t = 0: the lender reserves the slices at once, the
   * borrower has them once they are created and mapped */
  bench_decide(b, 0);
  ready = borrow_time(b, 8);
  /* a100x4-40gb's VMM costs (kvcached's A100 benchmark): cuMemCreate, cuMemMap + SetAccess */
  g_assert_cmpint(ready, ==, 8 * (193320 + 37440));
  g_assert_cmpuint(ema_pool_stats(b->pool)->borrows, ==, 1);
  g_assert_cmpuint(ema_pool_stats(b->pool)->slices_borrowed, ==, 8);
  g_assert_cmpuint(ema_pool_slices_borrowed(b->pool, 0), ==, 0);
  g_assert_cmpuint(ema_pool_slices_lent(b->pool, 1), ==, 0);
  g_assert_cmpuint(free_blocks(m1), ==, 32);
  g_assert_cmpuint(total_blocks(m1), ==, 40);
  g_assert_cmpuint(total_blocks(m0), ==, 10);

  bench_to(b, ready - 1);
  g_assert_cmpuint(ema_pool_slices_borrowed(b->pool, 0), ==, 0);
  g_assert_cmpuint(free_blocks(m0), ==, 10);
  g_assert_false(take(m0, 11));

  bench_to(b, ready);
  g_assert_cmpuint(ema_pool_slices_borrowed(b->pool, 0), ==, 8);
  g_assert_cmpuint(ema_pool_slices_lent(b->pool, 1), ==, 8);
  g_assert_cmpuint(ema_pool_slices_lent(b->pool, 2), ==, 0);
  g_assert_cmpuint(total_blocks(m0), ==, 18);
  g_assert_cmpuint(free_blocks(m0), ==, 18);
  g_assert_cmpuint(free_blocks(m1), ==, 32);
  g_assert_true(take(m0, 18));
  g_assert_cmpuint(ema_pool_blocks_remote(b->pool, 0), ==, 8);
  g_assert_cmpuint(free_blocks(m0), ==, 0);
  bench_check(b);
  /* the second decision does nothing (give 0) */
  bench_decide(b, 0);
  g_assert_cmpuint(ema_pool_stats(b->pool)->borrows, ==, 1);
  g_assert_cmpuint(ema_pool_stats(b->pool)->plans_adjusted, ==, 0);
  give(m0, 18);
  bench_check(b);
  bench_free(b);
}

/* Borrows beyond what a lender can lend are cut to it, and counted; a GPU
 * cannot lend to itself, and a GPU outside the pool lends nothing. */
static void test_borrow_cut(void) {
  Bench *b = bench_new(NULL);
  EmaKvMemory *m0;
  b->borrow = (TestBorrowParams){0, 2, 100, 0, 5, 0};
  bench_pool(b);
  m0 = bench_tenant(b, 0, 10);
  bench_tenant(b, 1, 40);
  ema_pool_add_idle_gpu(b->pool, 2, 30);
  bench_start(b);
  g_assert_true(take(m0, 4)); /* its own blocks do not change what it can lend others */
  bench_decide(b, 0);
  g_assert_cmpuint(ema_pool_stats(b->pool)->plans_adjusted, ==, 2);
  g_assert_cmpuint(ema_pool_stats(b->pool)->borrows, ==, 1);
  g_assert_cmpuint(ema_pool_stats(b->pool)->slices_borrowed, ==, 30);
  bench_to(b, borrow_time(b, 30));
  g_assert_cmpuint(ema_pool_slices_borrowed(b->pool, 0), ==, 30);
  g_assert_cmpuint(ema_pool_slices_lent(b->pool, 2), ==, 30);
  g_assert_cmpuint(ema_pool_slices_lent(b->pool, 0), ==, 0);
  g_assert_cmpuint(free_blocks(m0), ==, 6 + 30);
  give(m0, 4);
  bench_free(b);

  /* gpu3 is not in the pool; a lender with a tenant keeps its used slices */
  b = bench_new(NULL);
  b->borrow = (TestBorrowParams){0, 3, 10, 1, 50, 0};
  bench_pool(b);
  bench_tenant(b, 0, 10);
  {
    EmaKvMemory *m1 = bench_tenant(b, 1, 40);
    bench_start(b);
    g_assert_true(take(m1, 15));
    bench_decide(b, 0);
    g_assert_cmpuint(ema_pool_stats(b->pool)->plans_adjusted, ==, 2);
    g_assert_cmpuint(ema_pool_stats(b->pool)->slices_borrowed, ==, 25);
    g_assert_cmpuint(free_blocks(m1), ==, 0);
    g_assert_false(take(m1, 1));
    bench_to(b, borrow_time(b, 25));
    g_assert_cmpuint(ema_pool_slices_lent(b->pool, 1), ==, 25);
    g_assert_cmpuint(ema_pool_slices_lent(b->pool, 3), ==, 0);
    give(m1, 15);
    g_assert_cmpuint(free_blocks(m1), ==, 15);
  }
  bench_free(b);
}

/* The blocks GPU 0 holds on each lender, as the policies see them (the
 * prefetch policy's probe, through a one-token step). */
static guint64 remote_on(Bench *b, guint lender) {
  EmaStepBatch batch = {.decode_seqs = 1, .decode_context = 16, .logits = 1};
  guint calls = b->prefetch_probe.calls;
  ema_pool_step_time(b->pool, 0, &batch);
  g_assert_cmpuint(b->prefetch_probe.calls, ==, calls + 1);
  return b->prefetch_probe.remote_blocks[0 * TEST_PROBE_GPUS + lender];
}

/* New blocks go local first, then to the lender with the most free room
 * in its borrowed slices (ties to the lower index); a take that does not
 * fit takes nothing. */
static void test_take_order(void) {
  Bench *b = bench_new(NULL);
  EmaKvMemory *m0;
  b->borrow = (TestBorrowParams){0, 1, 4, 2, 6, 0};
  bench_pool(b);
  m0 = bench_tenant(b, 0, 4);
  ema_pool_add_idle_gpu(b->pool, 1, 20);
  ema_pool_add_idle_gpu(b->pool, 2, 20);
  bench_start(b);
  bench_borrow(b, 4, 6);
  g_assert_cmpuint(free_blocks(m0), ==, 14);
  g_assert_true(take(m0, 4));
  g_assert_cmpuint(ema_pool_blocks_remote(b->pool, 0), ==, 0);
  g_assert_true(take(m0, 3)); /* rooms 4 and 6: gpu2 */
  g_assert_cmpuint(remote_on(b, 1), ==, 0);
  g_assert_cmpuint(remote_on(b, 2), ==, 3);
  g_assert_true(take(m0, 2)); /* rooms 4 and 3: gpu1 */
  g_assert_cmpuint(remote_on(b, 1), ==, 2);
  g_assert_cmpuint(remote_on(b, 2), ==, 3);
  g_assert_true(take(m0, 1)); /* rooms 2 and 3: gpu2 */
  g_assert_cmpuint(remote_on(b, 2), ==, 4);
  g_assert_true(take(m0, 1)); /* rooms 2 and 2: the lower index */
  g_assert_cmpuint(remote_on(b, 1), ==, 3);
  g_assert_cmpuint(remote_on(b, 2), ==, 4);
  g_assert_cmpuint(free_blocks(m0), ==, 3);
  g_assert_false(take(m0, 4));
  g_assert_cmpuint(free_blocks(m0), ==, 3);
  g_assert_cmpuint(ema_pool_blocks_remote(b->pool, 0), ==, 7);
  g_assert_true(take(m0, 3)); /* rooms 1 and 2: 2 on gpu2, then 1 on gpu1 */
  g_assert_cmpuint(remote_on(b, 1), ==, 4);
  g_assert_cmpuint(remote_on(b, 2), ==, 6);
  g_assert_cmpuint(free_blocks(m0), ==, 0);
  g_assert_false(take(m0, 1));
  bench_check(b);
  give(m0, 14);
  g_assert_cmpuint(ema_pool_blocks_remote(b->pool, 0), ==, 0);
  bench_check(b);
  bench_free(b);
}

/* A borrower gives back empty slices: gone from the ledger at once, the
 * lender's again after the unmap; a return of more than the empty slices
 * is cut to them. */
static void test_return(void) {
  Bench *b = bench_new(NULL);
  EmaKvMemory *m0, *m1;
  EmaTime t;
  b->borrow = (TestBorrowParams){0, 1, 8, 2, 0, 5};
  bench_pool(b);
  m0 = bench_tenant(b, 0, 10);
  m1 = bench_tenant(b, 1, 40);
  bench_start(b);
  bench_borrow(b, 8, 0);
  g_assert_true(take(m0, 12));
  g_assert_cmpuint(ema_pool_blocks_remote(b->pool, 0), ==, 2);
  t = ema_sim_now(b->sim);
  bench_decide(b, 0); /* second decision: give 5 back (6 are empty) */
  g_assert_cmpuint(ema_pool_stats(b->pool)->returns, ==, 1);
  g_assert_cmpuint(ema_pool_stats(b->pool)->slices_returned, ==, 5);
  g_assert_cmpuint(ema_pool_stats(b->pool)->plans_adjusted, ==, 0);
  g_assert_cmpuint(ema_pool_slices_borrowed(b->pool, 0), ==, 3);
  g_assert_cmpuint(ema_pool_slices_lent(b->pool, 1), ==, 3);
  g_assert_cmpuint(total_blocks(m0), ==, 13);
  g_assert_cmpuint(free_blocks(m0), ==, 1);
  g_assert_cmpuint(free_blocks(m1), ==, 32);
  bench_to(b, t + unmap_time(b, 5) - 1);
  g_assert_cmpuint(free_blocks(m1), ==, 32);
  bench_to(b, t + unmap_time(b, 5));
  g_assert_cmpuint(free_blocks(m1), ==, 37);
  give(m0, 12);
  bench_free(b);

  /* give 7 while only 6 are empty */
  b = bench_new(NULL);
  b->borrow = (TestBorrowParams){0, 1, 8, 2, 0, 7};
  bench_pool(b);
  m0 = bench_tenant(b, 0, 10);
  m1 = bench_tenant(b, 1, 40);
  bench_start(b);
  bench_borrow(b, 8, 0);
  g_assert_true(take(m0, 12));
  t = ema_sim_now(b->sim);
  bench_decide(b, 0);
  g_assert_cmpuint(ema_pool_stats(b->pool)->plans_adjusted, ==, 1);
  g_assert_cmpuint(ema_pool_stats(b->pool)->slices_returned, ==, 6);
  g_assert_cmpuint(ema_pool_slices_borrowed(b->pool, 0), ==, 2);
  g_assert_cmpuint(free_blocks(m0), ==, 0);
  bench_to(b, t + unmap_time(b, 6));
  g_assert_cmpuint(free_blocks(m1), ==, 38);
  give(m0, 12);
  bench_free(b);
}

/* The limit tests' bench: GPU 0's tenant (*M0) with 20 blocks of its own,
 * idle GPU 1 with 40 slices lending it SLICES (a block a slice), under
 * the test prefetch policy's LIMIT and ROOM (0: none). */
static Bench *limit_bench(gint64 slices, double limit, double room, EmaKvMemory **m0) {
  Bench *b = bench_new(NULL);
  b->borrow = (TestBorrowParams){0, 1, slices, 2, 0, 0};
  b->prefetch.limit = limit;
  b->prefetch.room = room;
  bench_pool(b);
  *m0 = bench_tenant(b, 0, 20);
  ema_pool_add_idle_gpu(b->pool, 1, 40);
  bench_start(b);
  bench_borrow(b, slices, 0);
  return b;
}

/* The prefetch plan's remote_limit gates admission: the free blocks the
 * engine sees leave at most limit / (1 - limit) x the local capacity
 * remote; growth (take) may still use every borrowed block. */
static void test_remote_limit(void) {
  EmaKvMemory *m0;
  Bench *b = limit_bench(10, 0.25, 0, &m0);
  EmaStepBatch batch = {.decode_seqs = 1, .decode_context = 16, .logits = 1};
  g_assert_cmpuint(free_blocks(m0), ==, 30); /* no plan yet: any share */
  g_assert_true(take(m0, 21));
  ema_pool_step_time(b->pool, 0, &batch); /* the plan: limit 25% */
  /* floor(0.25 / 0.75 x 20) = 6 remote blocks admitted */
  g_assert_cmpuint(free_blocks(m0), ==, 5);
  g_assert_true(take(m0, 6)); /* growth beyond the limit */
  g_assert_cmpuint(free_blocks(m0), ==, 0);
  g_assert_cmpuint(ema_pool_blocks_remote(b->pool, 0), ==, 7);
  g_assert_true(take(m0, 3));
  g_assert_false(take(m0, 1)); /* but not beyond the borrowed slices */
  g_assert_cmpuint(ema_pool_blocks_remote(b->pool, 0), ==, 10);
  bench_check(b);
  give(m0, 30);
  g_assert_cmpuint(free_blocks(m0), ==, 20 + 6);
  bench_free(b);
}

/* A plan's room_limit above its remote_limit (a limit held for admission):
 * admission keeps to the remote limit, the view's blocks_room says what
 * the room limit admits (what a borrow policy's within_limit holds); one
 * below the remote limit is the remote limit. */
static void test_room_limit(void) {
  EmaKvMemory *m0;
  Bench *b = limit_bench(30, 0.25, 0.5, &m0);
  EmaStepBatch batch = {.decode_seqs = 1, .decode_context = 16, .logits = 1};
  g_assert_true(take(m0, 21));
  ema_pool_step_time(b->pool, 0, &batch); /* the plan: limit 25%, room 50% */
  /* floor(0.25 / 0.75 x 20) = 6 remote blocks admitted, 20 in the room */
  g_assert_cmpuint(free_blocks(m0), ==, 5);
  ema_pool_step_time(b->pool, 0, &batch); /* its view: the first plan's */
  g_assert_cmpuint(b->prefetch_probe.gpus[0].blocks_total, ==, 26);
  g_assert_cmpuint(b->prefetch_probe.blocks_room[0], ==, 40);
  g_assert_cmpuint(b->prefetch_probe.blocks_room[1], ==, 0); /* no tenant */
  bench_check(b);
  b->prefetch.room = 0.1; /* below the limit: the limit's */
  ema_pool_step_time(b->pool, 0, &batch);
  ema_pool_step_time(b->pool, 0, &batch);
  g_assert_cmpuint(b->prefetch_probe.blocks_room[0], ==, 26);
  bench_check(b);
  give(m0, 21);
  bench_free(b);
}

/* A plan of NaNs (a broken plugin's) is the start plan's: every borrowed
 * block admitted, the room the limit's, no offload cap, and the step's
 * time what it is without a plan. */
static void test_plan_nan(void) {
  EmaKvMemory *m0;
  Bench *b = limit_bench(10, 1, 0, &m0); /* direct loads (the bench's plan) */
  EmaStepBatch batch = {.decode_seqs = 1, .decode_context = 16, .logits = 1};
  EmaTime plain, broken;
  g_assert_true(take(m0, 25));
  plain = ema_pool_step_time(b->pool, 0, &batch);
  b->prefetch.limit = NAN;
  b->prefetch.cap = NAN;
  b->prefetch.room = NAN;
  broken = ema_pool_step_time(b->pool, 0, &batch);
  g_assert_cmpint(broken, ==, plain);
  g_assert_cmpuint(free_blocks(m0), ==, 5);
  ema_pool_step_time(b->pool, 0, &batch); /* its view: the NaN plan's */
  g_assert_cmpuint(b->prefetch_probe.gpus[0].blocks_total, ==, 30);
  g_assert_cmpuint(b->prefetch_probe.blocks_room[0], ==, 30);
  bench_check(b);
  give(m0, 25);
  bench_free(b);
}

/* A YAML experiment naming the test policies, through ema_serving_run (the
 * sampler checks the ledger every millisecond) and through the rig (the
 * ledger checked at the end as well). */
static void test_serving_custom(void) {
  g_autoptr(EmaExperiment) experiment = load("custom.yaml", NULL);
  g_autoptr(EmaServingReport) report = NULL;
  g_autoptr(Rig) rig = NULL;
  const EmaTenantResult *result;
  GError *error = NULL;
  g_assert_cmpstr(experiment->policy.borrow, ==, "test-borrow-n");
  g_assert_cmpint(((TestBorrowParams *) experiment->policy.borrow_params)->slices, ==, 640);
  g_assert_cmpint(((TestPrefetchParams *) experiment->policy.prefetch_params)->group, ==, 4);
  g_assert_null(((TestPrefetchParams *) experiment->policy.prefetch_params)->probe);
  g_assert_cmpint(experiment->sample_period, ==, EMA_MS(1));
  report = ema_serving_run(experiment, NULL, FALSE, &error);
  g_assert_no_error(error);
  g_assert_nonnull(report);
  result = report->tenants->pdata[0];
  g_assert_cmpuint(result->metrics->completed, ==, 150);
  g_assert_cmpuint(result->unfinished, ==, 0);
  g_assert_cmpuint(report->pool.borrows, ==, 1);
  g_assert_cmpuint(report->pool.slices_borrowed, ==, 640);
  g_assert_cmpuint(report->pool.plans_adjusted, ==, 0);
  g_assert_cmpuint(report->pool.remote_steps, >, 0);

  rig = rig_new(experiment, &error);
  g_assert_no_error(error);
  rig_check_every(rig, EMA_MS(1));
  g_assert_true(rig_run(rig, &error));
  g_assert_no_error(error);
  g_assert_cmpuint(rig_completed(rig), ==, 150);
  g_assert_cmpuint(rig->checks, >, 1000);
  /* the rig is the same run */
  g_assert_cmpuint(ema_pool_stats(rig->pool)->remote_steps, ==, report->pool.remote_steps);
  g_assert_cmpint(ema_pool_stats(rig->pool)->exposed_remote, ==, report->pool.exposed_remote);
}

/* A pool freed with ledger changes still in flight (a run that ends at its
 * duration while slices are being mapped, returned or reclaimed) frees
 * them too (the sanitizer build's leak check is the assertion). */
static void test_free_in_flight(void) {
  Bench *b = bench_new(NULL);
  b->borrow = (TestBorrowParams){0, 1, 8, 2, 4, 2};
  bench_pool(b);
  bench_tenant(b, 0, 10);
  bench_tenant(b, 1, 40);
  ema_pool_add_idle_gpu(b->pool, 2, 30);
  bench_start(b);
  bench_borrow(b, 8, 4);
  bench_decide(b, 0); /* the return of 2: an unmap in flight */
  b->reclaim = (TestReclaimParams){0, 4, EMA_VACATE_TO_BORROWER, 0, &b->reclaim_probe};
  ema_pool_reclaim_everything(b->pool, 2); /* and a reclaim */
  g_assert_cmpuint(ema_pool_slices_borrowed(b->pool, 0), ==, 6);
  b->borrow = (TestBorrowParams){0, 1, 8, 2, 0, 0};
  bench_free(b);

  /* a serving run cut by its duration while a borrow is being mapped */
  {
    const char *overrides[] = {"policy=ema", "duration=1ms", NULL};
    g_autoptr(EmaExperiment) experiment = load("tiny.yaml", overrides);
    g_autoptr(EmaServingReport) report = NULL;
    GError *error = NULL;
    report = ema_serving_run(experiment, NULL, FALSE, &error);
    g_assert_no_error(error);
    g_assert_nonnull(report);
  }
}

/* Peer swap (preempt: swap-peer): a tenant's preempted KV parked in a
 * peer's free slices is the peer's to keep room for: neither its own new
 * blocks nor its prefetch staging buffer may take those slices. */
static void test_parked_staging(void) {
  Bench *b = bench_new(NULL);
  EmaKvMemory *m0, *m1;
  EmaStepBatch batch = {.decode_seqs = 20, .decode_context = 20 * 16, .logits = 20};
  EmaTime copy;
  b->spec.preempt = EMA_PREEMPT_CHOICE_SWAP_PEER;
  b->borrow = (TestBorrowParams){0, 2, 10, 3, 0, 0};
  b->prefetch = (TestPrefetchParams){EMA_REMOTE_PREFETCH, 2, 4, 1, &b->prefetch_probe, 0, FALSE, 0};
  bench_pool(b);
  m0 = bench_tenant(b, 0, 40);
  m1 = bench_tenant(b, 1, 8);
  ema_pool_add_idle_gpu(b->pool, 2, 10);
  bench_start(b);
  g_assert_nonnull(m1->ops->swap_out);
  bench_borrow(b, 10, 0); /* gpu2 lends all it has to gpu0 */
  /* 7 of gpu1's blocks swap out: to gpu0, the peer with room */
  copy = m1->ops->swap_out(m1->self, 7);
  g_assert_cmpint(copy, ==, ns(link_copy_s(b, 7)));
  bench_check(b);
  g_assert_cmpuint(free_blocks(m0), ==, 33 + 10);
  g_assert_true(take(m0, 33 + 5));
  g_assert_cmpuint(ema_pool_blocks_remote(b->pool, 0), ==, 5);
  bench_check(b);
  ema_pool_step_time(b->pool, 0, &batch); /* staging for the 5 remote blocks... */
  bench_check(b);                         /* ...only from slices nobody else holds */
  g_assert_cmpuint(ema_pool_slices_staging(b->pool, 0), ==, 0);
  give(m0, 38);
  ema_pool_step_time(b->pool, 0, &batch);
  /* the parked KV comes back */
  g_assert_cmpint(m1->ops->swap_in(m1->self, 7), ==, ns(link_copy_s(b, 7)));
  g_assert_cmpuint(free_blocks(m0), ==, 40 + 10);
  bench_check(b);
  bench_free(b);
}

/* Peer swap's price (swap_estimate, for preempt: cheaper): the round trip
 * of the blocks where swap_out would put them now, the peers' room over
 * the link and the rest to host, side by side; pricing moves nothing. */
static void test_parked_estimate(void) {
  Bench *b = bench_new(NULL);
  EmaKvMemory *m0, *m1;
  guint64 room;
  b->spec.preempt = EMA_PREEMPT_CHOICE_CHEAPER;
  bench_pool(b);
  m0 = bench_tenant(b, 0, 40);
  m1 = bench_tenant(b, 1, 8);
  bench_start(b);
  g_assert_nonnull(m1->ops->swap_estimate);
  /* gpu0 has room for all 7 */
  g_assert_cmpint(m1->ops->swap_estimate(m1->self, 7), ==, 2 * ns(link_copy_s(b, 7)));
  g_assert_cmpuint(free_blocks(m0), ==, 40);
  bench_check(b);
  g_assert_cmpint(m1->ops->swap_out(m1->self, 7), ==, ns(link_copy_s(b, 7)));
  g_assert_cmpint(m1->ops->swap_in(m1->self, 7), ==, ns(link_copy_s(b, 7)));
  /* gpu0 keeps all but 3 of its blocks: 3 over the link, 4 to host */
  g_assert_true(take(m0, 37));
  room = free_blocks(m0);
  g_assert_cmpuint(room, ==, 3);
  g_assert_cmpint(m1->ops->swap_estimate(m1->self, 7), ==,
                  2 * ns(MAX(link_copy_s(b, 3), host_copy_s(b, 4))));
  g_assert_cmpint(m1->ops->swap_out(m1->self, 7), ==,
                  ns(MAX(link_copy_s(b, 3), host_copy_s(b, 4))));
  bench_check(b);
  /* none left on the peers: all to host */
  g_assert_cmpint(m1->ops->swap_estimate(m1->self, 1), ==, 2 * ns(host_copy_s(b, 1)));
  bench_free(b);
}

/* ---- 2. remote KV in a step --------------------------------------------------- */

/* What pool.h's formula gives for GPU's step of BATCH with REMOTE of USED
 * blocks remote, all on one lender shared by SHARERS tenants, the GPU's
 * HBM slowed by STEAL B/s of peer traffic. Also the rates it leaves behind. */
typedef struct {
  EmaStepBreakdown bd;
  EmaTime all_local;
  double slow, t_l, R, bytes, t_copy, t_direct, copy, step_s;
  EmaTime step;
  double pull, incoming;
} Expected;

static Expected expect_step(const Bench *b, guint gpu, const EmaStepBatch *batch, guint64 remote,
                            guint64 used, double sharers, double steal) {
  /* (the test servers keep kv_efficiency 100%) */
  const EmaGpuSpec *gpu_spec = &b->server->gpu;
  const EmaLinkSpec *link = &b->server->link;
  double rate_m = gpu_spec->hbm_bandwidth * gpu_spec->hbm_efficiency;
  double L = ema_step_model_layers(b->models[gpu]);
  double layer_mem, tail, overhead;
  Expected e = {0};
  e.all_local = ema_step_time(b->models[gpu], batch, &e.bd);
  /* STEAL is already weighted by the interference coefficients (1 here) */
  e.slow = rate_m / MAX(rate_m - steal, rate_m / 10);
  layer_mem = e.bd.layer_memory_s * e.slow;
  e.t_l = MAX(e.bd.layer_compute_s, layer_mem);
  tail = e.bd.lm_head_s + e.bd.allreduce_s + e.bd.overhead_s;
  overhead = e.bd.layer_overhead_s;
  e.R = used > 0 ? (double) remote / (double) used * e.bd.kv_read_bytes / L : 0;
  if (e.R <= 0) {
    e.step_s = L * (e.t_l + overhead) + tail;
    e.step = steal > 0 ? ns(e.step_s) : e.all_local;
    return e;
  }
  e.bytes = e.R * (double) remote / (double) remote; /* one lender holds it all */
  e.t_copy = e.bytes * sharers / link->bandwidth;
  e.t_direct = e.bytes * sharers / link->direct_read_bandwidth;
  if (b->prefetch.mode == EMA_REMOTE_DIRECT) {
    /* the remote loads hide under the attention kernel's all-local time */
    double kv_all = e.bd.layer_kv_read_s * e.slow;
    e.step_s =
        L * (MAX(e.bd.layer_compute_s, layer_mem - kv_all + MAX(kv_all, e.t_direct)) + overhead) +
        tail;
  } else {
    double g = (double) b->prefetch.group, d = (double) b->prefetch.depth;
    double groups = L / g, compute = g * (e.t_l + overhead);
    double fill;
    e.copy = (double) link->copy_fixed_cost / 1e9 + g * e.t_copy;
    fill = MAX(0, e.copy - d * MAX(0, compute - e.copy) - e.bd.lm_head_s);
    e.step_s = groups * MAX(compute, e.copy) + fill + tail;
    e.incoming = e.R * L / e.step_s;
  }
  e.pull = e.bytes * L / e.step_s;
  e.step = ns(e.step_s);
  return e;
}

/* A per-layer overhead (gpu.layer_overhead: charged on a GPU without an
 * operator profile: the L40S) is charged with and without remote KV: a step with
 * nothing remote and no peer traffic is exactly the all-local one, and a
 * peer's pull slows only its memory side, while the peer's step runs. */
static void test_step_layer_overhead(void) {
  Bench *b = bench_new("server=l40sx8-pcie;server.gpu.layer_overhead=20us");
  EmaStepBatch batch = {.decode_seqs = 100, .decode_context = 16000, .logits = 100};
  EmaStepBatch lender_batch = {.decode_seqs = 10, .decode_context = 10 * 100, .logits = 10};
  Expected local, first, lender;
  EmaTime start;
  b->borrow = (TestBorrowParams){0, 1, 800, 2, 0, 0};
  bench_pool(b);
  bench_tenant(b, 0, 200);
  bench_tenant(b, 1, 1000);
  bench_start(b);
  local = expect_step(b, 1, &lender_batch, 0, 0, 1, 0);
  g_assert_cmpfloat(local.bd.layer_overhead_s, ==, 20e-6);
  g_assert_cmpint(ema_pool_step_time(b->pool, 1, &lender_batch), ==, local.all_local);
  bench_borrow(b, 800, 0);
  g_assert_true(take(&b->memory[0], 1000));
  first = expect_step(b, 0, &batch, 800, 1000, 1, 0);
  start = ema_sim_now(b->sim); /* the borrower's step starts */
  g_assert_cmpint(ema_pool_step_time(b->pool, 0, &batch), ==, first.step);
  lender = expect_step(b, 1, &lender_batch, 0, 0, 1, first.pull);
  g_assert_cmpint(ema_pool_step_time(b->pool, 1, &lender_batch), ==, lender.step);
  g_assert_cmpint(lender.step, >, local.all_local);
  g_assert_cmpint(lender.step - local.all_local, <,
                  ns(32 * lender.bd.layer_memory_s * (lender.slow - 1)) + 2);
  /* the pull lasts while the borrower's step runs: from its last nanosecond on, once the
   * borrower is idle, the lender's steps are all-local again */
  bench_to(b, start + first.step - 1);
  g_assert_cmpint(ema_pool_step_time(b->pool, 1, &lender_batch), ==, lender.step);
  bench_to(b, start + first.step);
  g_assert_cmpint(ema_pool_step_time(b->pool, 1, &lender_batch), ==, local.all_local);
  bench_free(b);
}

/* The HBM rate a step of ALL_LOCAL ns pays for copies of RATE B/s that
 * run LEFT ns more: their rate while they overlap it, spread over the step
 * when they end before it does. */
static double copy_steal(double rate, EmaTime left, EmaTime all_local) {
  return rate * (double) MIN(left, all_local) / (double) all_local;
}

/* Peer swap's copies take HBM rate from the peers while they run: 7
 * blocks parked on GPU 0 slow its steps by k_in x bytes / copy time while
 * the copy overlaps them, and bringing them back by k_out x bytes / copy
 * time (the bench's coefficients are 1). A GPU's copies run one after
 * another: two at once take the sum of their bytes over the sum of their
 * times, so their rate is not added up. */
static void test_parked_interference(void) {
  Bench *b = bench_new(NULL);
  EmaKvMemory *m1;
  EmaStepBatch batch = {.decode_seqs = 20, .decode_context = 20 * 16, .logits = 20};
  double copy_s = 0, rate, bytes;
  EmaTime t, half, both;
  Expected slowed, local;
  b->spec.preempt = EMA_PREEMPT_CHOICE_SWAP_PEER;
  bench_pool(b);
  bench_tenant(b, 0, 40);
  m1 = bench_tenant(b, 1, 8);
  bench_start(b);
  local = expect_step(b, 0, &batch, 0, 0, 1, 0);
  t = local.all_local;
  copy_s = link_copy_s(b, 7);
  bytes = 7.0 * (double) b->block_bytes;
  rate = bytes / copy_s;
  g_assert_cmpint(m1->ops->swap_out(m1->self, 7), ==, ns(copy_s));
  slowed = expect_step(b, 0, &batch, 0, 0, 1, copy_steal(rate, ns(copy_s), t));
  g_assert_cmpint(slowed.step, >, slowed.all_local);
  g_assert_cmpint(ema_pool_step_time(b->pool, 0, &batch), ==, slowed.step);
  g_assert_cmpint(ema_pool_slowed_by_peers(b->pool, 0), ==, slowed.step - slowed.all_local);
  /* halfway through the copy, a step pays for the half left; once it ends, nothing */
  half = ns(copy_s) / 2;
  bench_to(b, half);
  g_assert_cmpint(ema_pool_step_time(b->pool, 0, &batch), ==,
                  expect_step(b, 0, &batch, 0, 0, 1, copy_steal(rate, ns(copy_s) - half, t)).step);
  bench_to(b, ns(copy_s));
  g_assert_cmpint(ema_pool_step_time(b->pool, 0, &batch), ==, slowed.all_local);
  /* swapping back in reads them out of GPU 0's HBM */
  g_assert_cmpint(m1->ops->swap_in(m1->self, 7), ==, ns(copy_s));
  g_assert_cmpint(ema_pool_step_time(b->pool, 0, &batch), ==,
                  expect_step(b, 0, &batch, 0, 0, 1, copy_steal(rate, ns(copy_s), t)).step);
  /* two copies at once: one after the other, 7 blocks over both copies' times */
  bench_to(b, 10 * ns(copy_s));
  g_assert_cmpint(m1->ops->swap_out(m1->self, 3), ==, ns(link_copy_s(b, 3)));
  g_assert_cmpint(m1->ops->swap_out(m1->self, 4), ==, ns(link_copy_s(b, 4)));
  both = ns(link_copy_s(b, 3)) + ns(link_copy_s(b, 4));
  g_assert_cmpint(
      ema_pool_step_time(b->pool, 0, &batch), ==,
      expect_step(b, 0, &batch, 0, 0, 1, copy_steal(bytes / ((double) both * 1e-9), both, t)).step);
  bench_check(b);
  bench_free(b);
}

/* GPU 0 with a local region of LOCAL slices and REMOTE slices lent by
 * GPU 1 (a tenant with LENDER_SLICES slices, so that its own steps can be
 * timed), no block taken yet. */
static Bench *remote_bench_empty(guint64 local, guint64 remote, guint64 lender_slices, int mode,
                                 guint depth, guint group) {
  Bench *b = bench_new(NULL);
  b->borrow = (TestBorrowParams){0, 1, (gint64) remote, 2, 0, 0};
  b->prefetch.mode = mode;
  b->prefetch.depth = depth;
  b->prefetch.group = group;
  bench_pool(b);
  bench_tenant(b, 0, local);
  bench_tenant(b, 1, lender_slices);
  bench_start(b);
  bench_borrow(b, remote, 0);
  return b;
}

/* remote_bench_empty() holding LOCAL local and REMOTE remote blocks (one
 * request, EMA_KV_UNNAMED, running). */
static Bench *remote_bench(guint64 local, guint64 remote, guint64 lender_slices, int mode,
                           guint depth, guint group) {
  Bench *b = remote_bench_empty(local, remote, lender_slices, mode, depth, group);
  g_assert_true(take(&b->memory[0], local + remote));
  g_assert_cmpuint(ema_pool_blocks_remote(b->pool, 0), ==, remote);
  return b;
}

/* Prefetch hides every remote byte: the step is exactly the all-local one. */
static void test_step_hidden(void) {
  Bench *b = remote_bench(20, 10, 40, EMA_REMOTE_PREFETCH, 2, 4);
  EmaStepBatch batch = {.decode_seqs = 20, .decode_context = 20 * 16, .logits = 20};
  Expected e;
  EmaTime t;
  /* 10 blocks given: round(10 x 10 / 30) = 3 of them remote */
  give(&b->memory[0], 10);
  g_assert_cmpuint(ema_pool_blocks_remote(b->pool, 0), ==, 7);
  e = expect_step(b, 0, &batch, 7, 20, 1, 0);
  /* hidden: each group's copy fits in its compute, and the first copy in
   * the depth ahead */
  g_assert_cmpfloat(4 * e.t_l, >, e.copy);
  g_assert_cmpfloat(2 * (4 * e.t_l - e.copy) + e.bd.lm_head_s, >=, e.copy);
  t = ema_pool_step_time(b->pool, 0, &batch);
  g_assert_cmpint(t, ==, e.all_local);
  g_assert_cmpint(t, ==, e.step);
  g_assert_cmpuint(ema_pool_stats(b->pool)->remote_steps, ==, 1);
  g_assert_cmpint(ema_pool_stats(b->pool)->exposed_remote, ==, 0);
  /* the policy saw the step as pool.h says */
  g_assert_cmpuint(b->prefetch_probe.step.layers, ==, 32);
  g_assert_cmpfloat(b->prefetch_probe.step.remote_bytes, ==, e.R);
  g_assert_cmpfloat(b->prefetch_probe.step.kv_bytes, ==, e.bd.kv_read_bytes / 32);
  g_assert_cmpfloat(b->prefetch_probe.step.layer_compute_s, ==, e.t_l);
  g_assert_cmpfloat(b->prefetch_probe.step.link_bandwidth, ==, e.R / e.t_copy);
  g_assert_cmpint(b->prefetch_probe.step.copy_fixed_cost, ==, b->server->link.copy_fixed_cost);
  /* staging: ceil(d g x 7 remote slices / L) = ceil(56 / 32) = 2 of the 7 free local slices */
  g_assert_cmpuint(ema_pool_slices_staging(b->pool, 0), ==, 2);
  g_assert_cmpuint(free_blocks(&b->memory[0]), ==, (20 - 2 - 13) + (10 - 7));
  bench_check(b);
  bench_free(b);

  /* with no room for staging the step is charged the same */
  b = remote_bench(20, 10, 40, EMA_REMOTE_PREFETCH, 2, 4);
  e = expect_step(b, 0, &batch, 10, 30, 1, 0);
  t = ema_pool_step_time(b->pool, 0, &batch);
  g_assert_cmpint(t, ==, e.all_local);
  g_assert_cmpuint(ema_pool_slices_staging(b->pool, 0), ==, 0);
  bench_free(b);

  /* and with a per-step overhead, over many batches: whenever the formula
   * hides the remote KV, not even a rounding nanosecond is added */
  {
    guint hidden = 0;
    for (guint i = 0; i < 64; i++) {
      EmaStepBatch varied = {
          .decode_seqs = 1 + i, .decode_context = (1 + i) * (16 + 7 * i), .logits = 1 + i};
      guint64 remote = i % 11;
      b = bench_new("server.gpu.step_overhead=37.3us");
      b->borrow = (TestBorrowParams){0, 1, 10, 2, 0, 0};
      b->prefetch.mode = EMA_REMOTE_PREFETCH;
      b->prefetch.depth = 2;
      b->prefetch.group = 4;
      bench_pool(b);
      bench_tenant(b, 0, 20);
      bench_tenant(b, 1, 40);
      bench_start(b);
      bench_borrow(b, 10, 0);
      g_assert_true(take(&b->memory[0], 20 + remote));
      e = expect_step(b, 0, &varied, remote, 20 + remote, 1, 0);
      g_assert_cmpfloat(e.bd.overhead_s, >, 0);
      t = ema_pool_step_time(b->pool, 0, &varied);
      g_assert_cmpint(t, ==, e.step);
      if (remote == 0 ||
          (4 * e.t_l >= e.copy && 2 * (4 * e.t_l - e.copy) + e.bd.lm_head_s >= e.copy)) {
        g_assert_cmpint(t, ==, e.all_local);
        hidden++;
      } else {
        g_assert_cmpint(t, >, e.all_local);
      }
      bench_free(b);
    }
    g_assert_cmpuint(hidden, >, 32);
  }
}

/* Prefetch cannot keep up: groups x max(g t_l, c) + fill + head + ... */
static void test_step_exposed(void) {
  Bench *b = remote_bench(200, 800, 1000, EMA_REMOTE_PREFETCH, 2, 4);
  EmaStepBatch batch = {.decode_seqs = 100, .decode_context = 16000, .logits = 100};
  Expected e = expect_step(b, 0, &batch, 800, 1000, 1, 0);
  EmaTime t;
  g_assert_cmpfloat(e.copy, >, 4 * e.t_l); /* not hidden */
  t = ema_pool_step_time(b->pool, 0, &batch);
  g_assert_cmpint(t, ==, e.step);
  g_assert_cmpint(t, >, e.all_local);
  /* spelled out: 8 groups of c, plus the first copy less the LM head, plus the tail */
  g_assert_cmpint(t, ==,
                  ns(8 * e.copy + (e.copy - e.bd.lm_head_s) + e.bd.lm_head_s + e.bd.allreduce_s +
                     e.bd.overhead_s));
  g_assert_cmpint(ema_pool_stats(b->pool)->exposed_remote, ==, t - e.all_local);
  bench_free(b);

  /* deeper prefetch does not help a link that is slower than compute; a
   * single group (g = L) pays one copy then the compute */
  b = remote_bench(200, 800, 1000, EMA_REMOTE_PREFETCH, 1, 32);
  e = expect_step(b, 0, &batch, 800, 1000, 1, 0);
  t = ema_pool_step_time(b->pool, 0, &batch);
  g_assert_cmpint(t, ==, e.step);
  g_assert_cmpint(
      t, ==,
      ns(e.copy + (e.copy - e.bd.lm_head_s) + e.bd.lm_head_s + e.bd.allreduce_s + e.bd.overhead_s));
  bench_free(b);
}

/* Direct reads: the local KV reads (20%) and the remote loads (80%) overlap:
 * L x max(compute, other memory + max(0.2 t_kv, R / B_direct)) + tail. */
static void test_step_direct(void) {
  Bench *b = remote_bench(200, 800, 1000, EMA_REMOTE_DIRECT, 1, 1);
  EmaStepBatch batch = {.decode_seqs = 100, .decode_context = 16000, .logits = 100};
  Expected e = expect_step(b, 0, &batch, 800, 1000, 1, 0);
  double other = e.bd.layer_memory_s - e.bd.layer_kv_read_s;
  double attention = MAX(0.2 * e.bd.layer_kv_read_s, e.R / b->server->link.direct_read_bandwidth);
  EmaTime t = ema_pool_step_time(b->pool, 0, &batch);
  g_assert_cmpint(t, ==, e.step);
  g_assert_cmpint(t, ==,
                  ns(32 * MAX(e.bd.layer_compute_s, other + attention) + e.bd.lm_head_s +
                     e.bd.allreduce_s + e.bd.overhead_s));
  g_assert_cmpint(t, >, e.all_local);
  g_assert_cmpuint(ema_pool_slices_staging(b->pool, 0), ==, 0);
  bench_free(b);

  /* a small remote share: the remote loads replace local ones, the step
   * stays memory-bound on the local side plus the link time */
  b = remote_bench(20, 10, 40, EMA_REMOTE_DIRECT, 1, 1);
  batch = (EmaStepBatch){.decode_seqs = 30, .decode_context = 30 * 16, .logits = 30};
  e = expect_step(b, 0, &batch, 10, 30, 1, 0);
  t = ema_pool_step_time(b->pool, 0, &batch);
  g_assert_cmpint(t, ==, e.step);
  bench_free(b);
}

/* Interference: a step's pulls slow the lender's next step, and its
 * incoming prefetch copies the borrower's own next step (unless the link,
 * not HBM, sets that step's time). */
static void test_step_interference(void) {
  Bench *b = remote_bench(200, 800, 1000, EMA_REMOTE_PREFETCH, 2, 4);
  EmaStepBatch batch = {.decode_seqs = 100, .decode_context = 16000, .logits = 100};
  EmaStepBatch lender_batch = {.decode_seqs = 10, .decode_context = 10 * 100, .logits = 10};
  EmaStepBatch small = {.decode_seqs = 20, .decode_context = 20 * 16, .logits = 20};
  Expected first = expect_step(b, 0, &batch, 800, 1000, 1, 0), lender, second;
  EmaTime t = ema_pool_step_time(b->pool, 0, &batch);
  g_assert_cmpint(t, ==, first.step);
  g_assert_cmpfloat(first.pull, >, 0);
  g_assert_cmpfloat(first.incoming, >, 0);
  /* GPU 1 holds no remote KV; its HBM served first.pull B/s */
  lender = expect_step(b, 1, &lender_batch, 0, 0, 1, first.pull);
  g_assert_cmpfloat(lender.slow, >, 1);
  g_assert_cmpint(ema_pool_step_time(b->pool, 1, &lender_batch), ==, lender.step);
  g_assert_cmpint(lender.step, >, lender.all_local);
  /* what the pull cost the lender is counted as peers' doing */
  g_assert_cmpint(ema_pool_slowed_by_peers(b->pool, 1), ==, lender.step - lender.all_local);
  /* GPU 0's next step, slowed by its own incoming copies of the last one:
   * the link still sets its time */
  second = expect_step(b, 0, &batch, 800, 1000, 1, first.incoming);
  g_assert_cmpfloat(second.slow, >, 1);
  g_assert_cmpint(ema_pool_step_time(b->pool, 0, &batch), ==, second.step);
  g_assert_cmpint(second.step, ==, first.step);
  /* (its own copies are not peers' doing) */
  g_assert_cmpint(ema_pool_slowed_by_peers(b->pool, 0), ==, 0);
  /* all blocks back: GPU 0's next step has no remote traffic but is still
   * slowed by the last one's copies; the step after it is all-local; and
   * GPU 1, no longer pulled from, runs unslowed */
  give(&b->memory[0], 1000);
  g_assert_cmpint(ema_pool_step_time(b->pool, 0, &batch), ==,
                  expect_step(b, 0, &batch, 0, 0, 1, second.incoming).step);
  g_assert_cmpint(ema_pool_step_time(b->pool, 0, &batch), ==, first.all_local);
  g_assert_cmpint(ema_pool_step_time(b->pool, 1, &lender_batch), ==, lender.all_local);
  bench_free(b);

  /* a hidden prefetch: HBM sets the step, so the incoming copies show */
  b = remote_bench(20, 10, 40, EMA_REMOTE_PREFETCH, 2, 4);
  first = expect_step(b, 0, &small, 10, 30, 1, 0);
  g_assert_cmpint(ema_pool_step_time(b->pool, 0, &small), ==, first.all_local);
  second = expect_step(b, 0, &small, 10, 30, 1, first.incoming);
  g_assert_cmpint(ema_pool_step_time(b->pool, 0, &small), ==, second.step);
  g_assert_cmpint(second.step, >, first.all_local);
  bench_free(b);
}

/* Two borrowers on one lender share its link: each gets half. */
static void test_step_shared_lender(void) {
  Bench *b = bench_new(NULL);
  EmaStepBatch batch = {.decode_seqs = 30, .decode_context = 30 * 400, .logits = 30};
  Expected alone, shared;
  b->borrow = (TestBorrowParams){-1, 1, 10, 3, 0, 0};
  bench_pool(b);
  bench_tenant(b, 0, 20);
  ema_pool_add_idle_gpu(b->pool, 1, 40);
  bench_tenant(b, 2, 20);
  bench_start(b);
  bench_borrow(b, 10, 0);
  g_assert_true(take(&b->memory[0], 30));
  alone = expect_step(b, 0, &batch, 10, 30, 1, 0);
  g_assert_cmpint(ema_pool_step_time(b->pool, 0, &batch), ==, alone.step);
  /* GPU 2 borrows from GPU 1 too and puts blocks there */
  bench_decide(b, 2);
  bench_to(b, ema_sim_now(b->sim) + borrow_time(b, 10));
  g_assert_cmpuint(ema_pool_slices_lent(b->pool, 1), ==, 20);
  g_assert_true(take(&b->memory[2], 21));
  /* GPU 0's next step: the link shared by 2, and no interference (GPU 0
   * pulls from GPU 1, direct mode brings nothing into GPU 0's HBM) */
  shared = expect_step(b, 0, &batch, 10, 30, 2, 0);
  g_assert_cmpfloat(shared.t_direct, ==, 2 * alone.t_direct);
  g_assert_cmpint(ema_pool_step_time(b->pool, 0, &batch), ==, shared.step);
  g_assert_cmpint(shared.step, >, alone.step);
  bench_free(b);
}

/* Two lenders: on links per GPU pair the slower lender sets the time; on a
 * switch the borrower's own port carries the sum. */
static void two_lenders(const char *server, gboolean is_switch) {
  Bench *b = bench_new(server);
  EmaStepBatch batch = {.decode_seqs = 40, .decode_context = 40 * 2000, .logits = 40};
  EmaStepBreakdown bd;
  double R, b1, b2, t_direct, step;
  g_assert_cmpint(b->server->topology, ==, is_switch ? EMA_TOPOLOGY_SWITCH : EMA_TOPOLOGY_DIRECT);
  b->borrow = (TestBorrowParams){0, 1, 30, 2, 10, 0};
  bench_pool(b);
  bench_tenant(b, 0, 20);
  ema_pool_add_idle_gpu(b->pool, 1, 40);
  ema_pool_add_idle_gpu(b->pool, 2, 40);
  bench_start(b);
  bench_borrow(b, 30, 10);
  g_assert_true(take(&b->memory[0], 20 + 40));
  ema_step_time(b->models[0], &batch, &bd);
  R = 40.0 / 60.0 * bd.kv_read_bytes / 32;
  b1 = R * 30 / 40;
  b2 = R * 10 / 40;
  t_direct = is_switch ? (b1 + b2) / b->server->link.direct_read_bandwidth
                       : MAX(b1 / b->server->link.direct_read_bandwidth,
                             b2 / b->server->link.direct_read_bandwidth);
  /* a third of the KV local, read side by side with the remote loads */
  step = 32 * (MAX(bd.layer_compute_s,
                   bd.layer_memory_s - bd.layer_kv_read_s + MAX(bd.layer_kv_read_s / 3, t_direct)) +
               bd.layer_overhead_s) +
         (bd.lm_head_s + bd.allreduce_s + bd.overhead_s);
  g_assert_cmpint(ema_pool_step_time(b->pool, 0, &batch), ==, ns(step));
  bench_free(b);
}

static void test_step_two_lenders(void) {
  two_lenders(NULL, FALSE);
  two_lenders("server=h200x8-hgx", TRUE);
}

/* ---- tensor-parallel groups --------------------------------------------------- */

/* GPU 0's tenant as a TP group of 2 on gpus 0-1 (Llama-3.1-8B split by
 * heads): SLICES_RANK slices on each rank, each rank's shard of a block
 * half of the model's 2 MiB, so that a block of the group (both shards) is
 * one slice and its region 2 x SLICES_RANK blocks. */
static EmaKvMemory *bench_tp_tenant(Bench *b, guint64 slices_rank) {
  GError *error = NULL;
  b->models[0] = ema_step_model_new(&tenant_spec(b->experiment, 0)->model, b->server, 2, &error);
  g_assert_no_error(error);
  b->memory[0] = ema_pool_add_tenant(b->pool, 0, slices_rank, b->block_bytes / 2, b->models[0]);
  ema_pool_set_offload_model(b->pool, 0, &tenant_spec(b->experiment, 0)->model);
  return &b->memory[0];
}

/* A TP group borrows from GPUs outside it (its own second rank lends
 * nothing: it is no GPU of the pool), each borrowed block whole on the
 * lender; the policies see it as a lender (it shares), and a tp 1 tenant
 * borrows from it: by hand, GPU 3 asks the group for 5 of its 2 x 10
 * slices and gets them (lendable: the 20 slices, none used), the group's
 * own room falls to 15 of its blocks (a block of the group is one slice,
 * both shards); it takes 15 and finds no 16th and, reclaiming everything
 * as a group (empty slices: the engines' moves are /pool/tp/serving's),
 * has its 20 back. */
/* A lender's lend limit in the policies' view: GPU 2 (40 slices, lend_limit 25%) keeps 40 -
 * floor(0.25 x 40) = 30 slices, so the view's lend_keep is 30 and ema_pool_view_lendable gives
 * 10 of its 40 free slices (5 where a reserve of 35 leaves 5); GPU 1 (30 slices, no limit)
 * keeps none and lends its 30. Before, the view showed all 40 and a borrow past the limit was
 * cut by the ledger after the policy had chosen its lender. */
static void test_lend_limit_view(void) {
  Bench *b = bench_new(NULL);
  const EmaPoolView *view;
  bench_pool(b);
  bench_tenant(b, 0, 10);
  ema_pool_add_idle_gpu(b->pool, 1, 30);
  ema_pool_add_idle_gpu(b->pool, 2, 40);
  ema_pool_set_sharing(b->pool, 2, TRUE, TRUE, 0.25);
  bench_start(b);
  view = ema_pool_view(b->pool);
  g_assert_nonnull(view->lend_keep);
  g_assert_cmpuint(view->lend_keep[1], ==, 0);
  g_assert_cmpuint(view->lend_keep[2], ==, 30);
  g_assert_cmpuint(ema_pool_view_lendable(view, 1, 0), ==, 30);
  g_assert_cmpuint(ema_pool_view_lendable(view, 2, 0), ==, 10);
  g_assert_cmpuint(ema_pool_view_lendable(view, 2, 35), ==, 5);
  bench_free(b);
}

static void test_tp_borrow(void) {
  Bench *b = bench_new(NULL);
  EmaKvMemory *m0;
  const EmaPoolView *view;
  /* asks its own rank gpu1 for 5 slices, gpu2 for 8 */
  b->borrow = (TestBorrowParams){0, 1, 5, 2, 8, 0};
  bench_pool(b);
  m0 = bench_tp_tenant(b, 10);
  ema_pool_add_idle_gpu(b->pool, 2, 30);
  bench_tenant(b, 3, 40);
  bench_start(b);
  g_assert_cmpuint(total_blocks(m0), ==, 20);
  view = ema_pool_view(b->pool);
  g_assert_true(view->gpus[0].shares); /* a lender too, as a group */
  g_assert_true(view->gpus[0].has_tenant);
  g_assert_cmpuint(view->gpus[0].slices, ==, 20);
  g_assert_cmpuint(view->gpus[0].block_bytes, ==, EMA_SLICE_BYTES);
  g_assert_false(view->gpus[1].shares);
  g_assert_cmpuint(view->gpus[1].slices, ==, 0);
  g_assert_true(view->gpus[3].shares);
  bench_decide(b, 0);
  g_assert_cmpuint(ema_pool_stats(b->pool)->plans_adjusted, ==, 1); /* gpu1's 5 */
  bench_to(b, borrow_time(b, 8));
  g_assert_cmpuint(ema_pool_slices_borrowed(b->pool, 0), ==, 8);
  g_assert_cmpuint(ema_pool_slices_lent(b->pool, 2), ==, 8);
  g_assert_cmpuint(ema_pool_slices_lent(b->pool, 1), ==, 0);
  g_assert_cmpuint(total_blocks(m0), ==, 28);
  g_assert_true(take(m0, 28));
  g_assert_cmpuint(ema_pool_blocks_remote(b->pool, 0), ==, 8);
  g_assert_false(take(m0, 1));
  bench_check(b);
  g_assert_null(ema_pool_offload_unavailable(b->pool, 0)); /* it may offload (/pool/tp/offload) */
  give(m0, 28);
  bench_free(b);

  /* a tp 1 tenant borrows from the group, which reclaims as a group */
  b = bench_new(NULL);
  b->borrow = (TestBorrowParams){3, 0, 5, 2, 0, 0};
  bench_pool(b);
  m0 = bench_tp_tenant(b, 10);
  ema_pool_add_idle_gpu(b->pool, 2, 30);
  bench_tenant(b, 3, 1);
  bench_start(b);
  bench_decide(b, 3);
  g_assert_cmpuint(ema_pool_stats(b->pool)->plans_adjusted, ==, 0);
  bench_to(b, borrow_time(b, 5));
  g_assert_cmpuint(ema_pool_stats(b->pool)->borrows, ==, 1);
  g_assert_cmpuint(ema_pool_slices_lent(b->pool, 0), ==, 5);
  g_assert_cmpuint(ema_pool_slices_borrowed(b->pool, 3), ==, 5);
  g_assert_cmpuint(ema_serving_rank_share(ema_pool_slices_lent(b->pool, 0), 0, 2), ==, 2);
  g_assert_cmpuint(total_blocks(m0), ==, 20); /* lent slices come back on demand */
  g_assert_cmpuint(free_blocks(m0), ==, 15);
  g_assert_true(take(&b->memory[3], 1)); /* its own block */
  g_assert_true(take(m0, 15));
  g_assert_false(take(m0, 1));
  bench_check(b);
  b->reclaim = (TestReclaimParams){3, 5, EMA_VACATE_TO_BORROWER, 3, &b->reclaim_probe};
  ema_pool_reclaim_everything(b->pool, 0);
  bench_to(b, ema_sim_now(b->sim) + 1000 * 1000 * 1000);
  g_assert_cmpuint(ema_pool_slices_lent(b->pool, 0), ==, 0);
  g_assert_cmpuint(ema_pool_slices_borrowed(b->pool, 3), ==, 0);
  g_assert_cmpuint(free_blocks(m0), ==, 5);
  g_assert_true(take(m0, 5));
  bench_check(b);
  give(m0, 20);
  give(&b->memory[3], 1);
  bench_free(b);
}

/* A TP group's step with remote KV, by hand. The group (tp 2 on gpus 0-1)
 * holds 20 blocks locally, 30 on gpu2 (a tp 1 tenant) and 10 on gpu3;
 * its step model is one rank's: the rank holds 4 of the 8 KV heads, so a
 * decode step over C tokens reads 32 x 2 x 4 x 128 x 2 B x C of KV on each
 * rank, and R = 40/60 of it per layer is remote, b2 = 3/4 R from gpu2 and
 * b3 = 1/4 R from gpu3. Each rank loads its shard over its own path: on a
 * link per GPU pair (a100x4-40gb) each rank's link to gpu2 carries b2, so
 * t_direct = max(b2, b3) / B_direct; on a switch (h200x8-hgx) gpu2's port
 * carries both ranks' shards, t_direct = max(2 b2, 2 b3, b2 + b3) /
 * B_direct = 2 b2 / B_direct. The lender's HBM serves both shards: gpu2's
 * next step is slowed by k_out x 2 b2 x 32 / step. */
static void tp_step(const char *server, gboolean is_switch) {
  Bench *b = bench_new(server);
  EmaStepBatch batch = {.decode_seqs = 40, .decode_context = 40 * 2000, .logits = 40};
  EmaStepBatch lender_batch = {.decode_seqs = 10, .decode_context = 10 * 100, .logits = 10};
  EmaStepBreakdown bd;
  Expected lender;
  double R, b2, b3, t_direct, step, kv, pull;
  g_assert_cmpint(b->server->topology, ==, is_switch ? EMA_TOPOLOGY_SWITCH : EMA_TOPOLOGY_DIRECT);
  b->borrow = (TestBorrowParams){0, 2, 30, 3, 10, 0};
  bench_pool(b);
  bench_tp_tenant(b, 10);
  bench_tenant(b, 2, 40);
  ema_pool_add_idle_gpu(b->pool, 3, 40);
  bench_start(b);
  bench_borrow(b, 30, 10);
  g_assert_true(take(&b->memory[0], 20 + 40));
  ema_step_time(b->models[0], &batch, &bd);
  g_assert_cmpfloat(bd.kv_read_bytes, ==, 32.0 * 2 * 4 * 128 * 2 * 40 * 2000);
  R = 40.0 / 60.0 * bd.kv_read_bytes / 32;
  b2 = R * 30 / 40;
  b3 = R * 10 / 40;
  t_direct = is_switch ? 2 * b2 / b->server->link.direct_read_bandwidth
                       : MAX(b2, b3) / b->server->link.direct_read_bandwidth;
  kv = bd.layer_kv_read_s;
  g_assert_cmpfloat(t_direct, >, kv); /* the link sets the attention's time */
  step = 32 * (MAX(bd.layer_compute_s, bd.layer_memory_s - kv + MAX(kv, t_direct)) +
               bd.layer_overhead_s) +
         (bd.lm_head_s + bd.allreduce_s + bd.overhead_s);
  g_assert_cmpint(ema_pool_step_time(b->pool, 0, &batch), ==, ns(step));
  /* the policy saw one rank's step */
  g_assert_cmpfloat(b->prefetch_probe.step.remote_bytes, ==, R);
  g_assert_cmpfloat(b->prefetch_probe.step.direct_bandwidth, ==, R / t_direct);
  /* gpu2's own step while the group's runs: its HBM served both ranks */
  pull = 2 * b2 * 32 / step;
  lender = expect_step(b, 2, &lender_batch, 0, 0, 1, b->server->gpu.interference_outgoing * pull);
  g_assert_cmpfloat(lender.slow, >, 1);
  g_assert_cmpint(ema_pool_step_time(b->pool, 2, &lender_batch), ==, lender.step);
  give(&b->memory[0], 60);
  bench_free(b);
}

static void test_tp_step_direct(void) {
  tp_step(NULL, FALSE);
}

static void test_tp_step_switch(void) {
  tp_step("server=h200x8-hgx", TRUE);
}

/* A TP group's prefetch, 10 of its 20 blocks on gpu2: the copy of a
 * layer's remote KV takes each rank R / B_copy over its own link (a link
 * per GPU pair); the staging buffer is a rank's share on each rank, a
 * multiple of 2 slices (ceil(d g x 10 remote slices / L) = ceil(80 / 32) =
 * 3 -> 4); the copies land a rank's shard in each rank's HBM, so once HBM
 * sets the step (a small batch, the copies hidden) the group's next step
 * is slowed by k_in x R x L / step, not twice that. */
static double tp_prefetch_step(const Bench *b, const EmaStepBatch *batch, double incoming) {
  EmaPrefetchPlan plan = ema_prefetch_plan_start();
  const EmaGpuSpec *gpu = &b->server->gpu;
  double rate_m = gpu->hbm_bandwidth * gpu->hbm_efficiency;
  double slow = rate_m / MAX(rate_m - gpu->interference_incoming * incoming, rate_m / 10);
  EmaStepBreakdown bd;
  double R;
  plan.mode = EMA_REMOTE_PREFETCH;
  plan.depth = 2;
  plan.layers_per_copy = 4;
  ema_step_time(b->models[0], batch, &bd);
  R = 10.0 / 20.0 * bd.kv_read_bytes / 32;
  return ema_remote_step_seconds(&bd, b->server, 32, slow, R / b->server->link.bandwidth,
                                 R / b->server->link.direct_read_bandwidth, &plan);
}

/* The TP group of SLICES_RANK slices per rank on a bench whose gpu2 is
 * idle with LENDER_SLICES, the group's remote KV read in MODE (prefetch: 2
 * groups of 4 layers ahead), BORROWED slices of gpu2 borrowed and mapped. */
static Bench *tp_bench(int mode, guint64 slices_rank, guint64 lender_slices, guint64 borrowed) {
  Bench *b = bench_new(NULL);
  b->borrow = (TestBorrowParams){0, 2, (gint64) borrowed, 2, 0, 0};
  b->prefetch = (TestPrefetchParams){mode, 2, 4, 1, &b->prefetch_probe, 0, FALSE, 0};
  bench_pool(b);
  bench_tp_tenant(b, slices_rank);
  ema_pool_add_idle_gpu(b->pool, 2, lender_slices);
  bench_start(b);
  bench_borrow(b, borrowed, 0);
  return b;
}

static Bench *tp_prefetch_bench(void) {
  Bench *b = tp_bench(EMA_REMOTE_PREFETCH, 10, 40, 20);
  g_assert_true(take(&b->memory[0], 20 + 20));
  give(&b->memory[0], 20); /* round(20 x 20 / 40) = 10 of them remote: 10 local, 10 remote */
  g_assert_cmpuint(ema_pool_blocks_remote(b->pool, 0), ==, 10);
  return b;
}

static void test_tp_prefetch(void) {
  Bench *b = tp_prefetch_bench();
  EmaStepBatch big = {.decode_seqs = 40, .decode_context = 40 * 2000, .logits = 40};
  EmaStepBatch small = {.decode_seqs = 20, .decode_context = 20 * 16, .logits = 20};
  EmaStepBreakdown bd;
  double first, R;
  /* a long context: the link sets the step */
  first = tp_prefetch_step(b, &big, 0);
  g_assert_cmpint(ema_pool_step_time(b->pool, 0, &big), ==, ns(first));
  g_assert_cmpint(ns(first), >, ema_step_time(b->models[0], &big, NULL)); /* the copies show */
  g_assert_cmpuint(ema_pool_slices_staging(b->pool, 0), ==, 4);
  /* what is left local: 20 - 4 slices, 8 on each rank */
  g_assert_cmpuint(free_blocks(&b->memory[0]), ==, (16 - 10) + (20 - 10));
  bench_check(b);
  give(&b->memory[0], 20);
  bench_free(b);

  /* a short context: hidden, then slowed by its own landing copies, one rank's shard */
  b = tp_prefetch_bench();
  first = tp_prefetch_step(b, &small, 0);
  g_assert_cmpint(ema_pool_step_time(b->pool, 0, &small), ==, ns(first));
  g_assert_cmpint(ns(first), ==, ema_step_time(b->models[0], &small, &bd)); /* hidden */
  R = 10.0 / 20.0 * bd.kv_read_bytes / 32;
  g_assert_cmpint(ema_pool_step_time(b->pool, 0, &small), ==,
                  ns(tp_prefetch_step(b, &small, R * 32 / first)));
  g_assert_cmpint(ns(tp_prefetch_step(b, &small, R * 32 / first)), <,
                  ns(tp_prefetch_step(b, &small, 2 * R * 32 / first)));
  g_assert_cmpint(ns(tp_prefetch_step(b, &small, R * 32 / first)), >, ns(first));
  give(&b->memory[0], 20);
  bench_free(b);
}

/* A TP group offloads as a group (hw/offload.h): the group (tp 2 on gpus
 * 0-1) holds 200 blocks locally and 800 on gpu2, one running request of
 * 1,000 blocks (16,000 tokens, all decoding: 12,800 of them and the newest
 * block on the lender); a decode step of 100 sequences over 16,000 tokens.
 * Its step is one rank's local work (the batch less the lender's 12,800
 * tokens, on the tp 2 step model) plus the group model's wait and merge:
 * the lender computes both ranks' partials, reading both shards, so its
 * share of HBM time is what the tp 1 tenant's whole KV would take, twice
 * one rank's. */
static void test_tp_offload(void) {
  Bench *b = tp_bench(EMA_REMOTE_OFFLOAD, 100, 1000, 800);
  const EmaLlmSpec *llm = &tenant_spec(b->experiment, 0)->model;
  EmaStepBatch batch = {.decode_seqs = 100, .decode_context = 16000, .logits = 100};
  EmaStepBatch local = batch;
  EmaOffloadShare share = {.seqs = 1, .context = 12800, .new_kv = 1};
  EmaOffloadShare shares[MAX_GPUS];
  EmaStepBreakdown bd;
  EmaTime local_ns, step, rank_step;
  GError *error = NULL;
  g_autoptr(EmaOffloadModel) group = ema_offload_model_new_group(llm, b->server, 2, &error);
  g_autoptr(EmaOffloadModel) rank = ema_offload_model_new(llm, b->server, 2, &error);
  g_assert_no_error(error);
  g_assert_null(ema_pool_offload_unavailable(b->pool, 0));
  g_assert_true(take(&b->memory[0], 1000));
  g_assert_cmpuint(ema_pool_offload_shares(b->pool, 0, shares), ==, 1);
  g_assert_cmpuint(shares[2].seqs, ==, 1);
  g_assert_cmpfloat(shares[2].context, ==, 12800);
  g_assert_cmpuint(shares[2].new_kv, ==, 1);
  local.decode_context = 16000 - 12800;
  local_ns = ema_step_time(b->models[0], &local, &bd);
  step = local_ns + (ema_offload_step_time(group, &bd, &share, 1, 1, NULL) - bd.time);
  rank_step = local_ns + (ema_offload_step_time(rank, &bd, &share, 1, 1, NULL) - bd.time);
  g_assert_cmpint(step, >, rank_step); /* the lender's partials of both ranks take longer */
  g_assert_cmpint(ema_pool_step_time(b->pool, 0, &batch), ==, step);
  g_assert_cmpfloat_with_epsilon(b->prefetch_probe.step.step_offload_s, (double) step / 1e9, 1e-12);
  /* the lender's share of HBM time: both shards' reads */
  g_assert_cmpfloat(ema_pool_view(b->pool)->offload_share[0 * b->server->gpus + 2], ==,
                    ema_offload_lender_share(group, &share, step));
  g_assert_cmpfloat_with_epsilon(ema_offload_lender_share(group, &share, step),
                                 2 * ema_offload_lender_share(rank, &share, step),
                                 1e-12 * ema_offload_lender_share(group, &share, step));
  give(&b->memory[0], 1000);
  bench_free(b);
}

/* A serving run of a TP group whose KV outgrows its ranks (tp-group.yaml)
 * under each borrowing composition (ema and offload park its preempted KV
 * on peers too): the group borrows, from gpus 2 and 3 only, with the
 * ledger and every request's blocks checked (EMA_POOL_CHECKS=all) every
 * 10 ms; and through the rig, with every GPU taking back all it lends
 * twice while the group holds borrowed memory, every request still
 * completes. */
/* EXPERIMENT's run through the rig, the ledger checked every CHECK_PERIOD
 * and every GPU taking back all it lends at each of FAULT_TIMES[N]. */
static Rig *run_rig_with_faults(const EmaExperiment *experiment, EmaTime check_period,
                                const EmaTime *fault_times, RigFault **faults, guint n) {
  GError *error = NULL;
  Rig *rig = rig_new(experiment, &error);
  g_assert_no_error(error);
  rig_check_every(rig, check_period);
  for (guint i = 0; i < n; i++)
    faults[i] = rig_fault_at(rig, fault_times[i]);
  g_assert_true(rig_run(rig, &error));
  g_assert_no_error(error);
  return rig;
}

static void tp_serving(const char *const *overrides) {
  g_autoptr(EmaExperiment) experiment = load("tp-group.yaml", overrides);
  g_autoptr(Rig) rig = NULL;
  const EmaTime fault_times[] = {EMA_MS(4500), EMA_MS(6000)};
  RigFault *faults[2];
  GError *error = NULL;
  g_autoptr(EmaServingReport) report = ema_serving_run(experiment, NULL, FALSE, &error);
  const EmaTenantResult *big;
  g_assert_no_error(error);
  g_assert_cmpint(tenant_spec(experiment, 0)->tp, ==, 2);
  big = report->tenants->pdata[0];
  g_assert_cmpuint(report->pool.borrows, >, 0);
  g_assert_cmpuint(report->pool.remote_steps, >, 0);
  g_assert_cmpuint(big->peak_slices_borrowed, >, 0);
  g_assert_cmpuint(big->peak_slices_lent, ==, 0);
  g_assert_cmpuint(big->unfinished, ==, 0);
  g_assert_cmpuint(big->metrics->completed, ==, big->arrived);

  rig = run_rig_with_faults(experiment, EMA_MS(5), fault_times, faults, 2);
  g_assert_true(faults[0]->fired && faults[1]->fired);
  g_assert_cmpuint(faults[0]->lent_before + faults[1]->lent_before, >, 0);
  g_assert_cmpuint(ema_pool_stats(rig->pool)->reclaims, >, 0);
  g_assert_cmpuint(ema_pool_slices_lent(rig->pool, 1), ==, 0);
  g_assert_cmpuint(rig_unfinished(rig), ==, 0);
  /* the same requests arrive (the traces are the run's): all of them done */
  g_assert_cmpuint(rig_completed(rig), ==,
                   big->arrived + ((const EmaTenantResult *) report->tenants->pdata[1])->arrived);
}

static void test_tp_serving(gconstpointer data) {
  g_autofree char *policy = g_strconcat("policy=", (const char *) data, NULL);
  const char *overrides[] = {policy, NULL};
  tp_serving(overrides);
}

/* A TP group places as a group too (ema with most-idle's place hook
 * turned on): its running requests' remote blocks (all ranks' shards of
 * each) move home, checked by the ledger as above; it offloads, reading
 * the KV on a lender at its cap in some steps. */
static void test_tp_serving_place(void) {
  const char *overrides[] = {"policy=ema", "policy.borrow_params.place=true", NULL};
  g_autoptr(EmaExperiment) experiment = load("tp-group.yaml", overrides);
  GError *error = NULL;
  g_autoptr(EmaServingReport) report = ema_serving_run(experiment, NULL, FALSE, &error);
  g_assert_no_error(error);
  g_assert_cmpuint(report->pool.placements, >, 0);
  g_assert_cmpuint(report->pool.blocks_placed, >, 0);
  g_assert_cmpuint(report->pool.offload_steps, >, 0);
  g_assert_cmpuint(report->pool.offload_read_steps, >, 0);
  tp_serving(overrides);
}

/* Attention offload (hw/offload.h), by hand: GPU 0 holds 200 blocks
 * locally and 800 on GPU 1; a decode step of 100 sequences over 16,000
 * tokens offloads the attention over the remote KV. Llama-3.1-8B on one
 * GPU: L = 32 layers, H = 32 query heads of d = 128, K = 8 KV heads, b = 2
 * bytes, kv_l = 2 K d b = 4,096 bytes per token and layer. The pool's
 * shares are its requests' (ema_pool_offload_shares): the blocks are one
 * running request's (EMA_KV_UNNAMED; without an engine its context is its
 * 1,000 blocks x 16 tokens, all decoding), whose 800 blocks on the lender,
 * its newest among them, make n = 1 request, c = 12,800 tokens, m = 1 new
 * K/V there and u = 1 request merging; the local step attends to the other
 * 16,000 - 12,800 = 3,200 tokens. */
typedef struct {
  double c;               /* tokens on the lender */
  double n, m, u;         /* its requests, the new K/V it writes, the requests that merge */
  double sent, back;      /* S and R, bytes per layer */
  EmaStepBreakdown local; /* the step of the local share: the batch less c tokens of context */
  EmaTime local_step, added, step;
} Offloaded;

static Offloaded expect_offload(const Bench *b, const EmaStepBatch *batch, double c, double n,
                                double m, double u, gboolean busy, double wait_s) {
  const EmaGpuSpec *gpu = &b->server->gpu;
  EmaStepBatch local = *batch;
  Offloaded o = {.c = c, .n = n, .m = m, .u = u};
  double H = 32, d = 128, kv_l = 4096;
  double rate_m = gpu->hbm_bandwidth * gpu->hbm_efficiency, rate_kv = rate_m * gpu->kv_efficiency;
  double rate_c = gpu->matrix_flops * gpu->matrix_efficiency;
  double latency = (double) b->server->link.latency / 1e9, bw = b->server->link.bandwidth;
  double attend, remote, wait, merge;
  o.sent = n * H * d * 2 + m * kv_l;
  o.back = n * H * (d + 1) * 4;
  attend = ((double) gpu->kernel_overhead / 1e9 + MAX(c * kv_l / rate_kv, 4 * H * d * c / rate_c) +
            m * kv_l / rate_m) *
               (busy ? 1 + gpu->offload_partial_slowdown : 1) +
           wait_s;
  /* a link per GPU pair (a100x4-40gb): each lender's messages have their own link */
  g_assert_cmpint(b->server->topology, ==, EMA_TOPOLOGY_DIRECT);
  remote = (latency + o.sent / bw) + attend + (latency + o.back / bw);
  local.decode_context = batch->decode_context - c;
  o.local_step = ema_step_time(b->models[0], &local, &o.local);
  wait = MAX(0, remote - o.local.layer_kv_read_s);
  merge = H * ((n + u) * (d + 1) * 4 + u * d * 2) / rate_m;
  o.added = (EmaTime) llround(32 * (wait + merge) * 1e9);
  o.step = o.local_step + o.added;
  return o;
}

/* BORROWER's offload share on lender 1 is N requests over C tokens, M of
 * them writing their new K/V there, U = N merging (the only lender). */
static void assert_share(Bench *b, guint borrower, guint64 n, double c, guint64 m) {
  EmaOffloadShare shares[MAX_GPUS];
  g_assert_cmpuint(ema_pool_offload_shares(b->pool, borrower, shares), ==, n);
  g_assert_cmpuint(shares[borrower].seqs, ==, 0);
  g_assert_cmpuint(shares[1].seqs, ==, n);
  g_assert_cmpfloat(shares[1].context, ==, c);
  g_assert_cmpuint(shares[1].new_kv, ==, m);
  for (guint j = 2; j < (guint) b->server->gpus; j++)
    g_assert_cmpuint(shares[j].seqs, ==, 0);
}

static void test_step_offload(void) {
  Bench *b = remote_bench(200, 800, 1000, EMA_REMOTE_OFFLOAD, 1, 1);
  EmaStepBatch batch = {.decode_seqs = 100, .decode_context = 16000, .logits = 100};
  EmaStepBatch lender_batch = {.decode_seqs = 10, .decode_context = 10 * 100, .logits = 10};
  Expected all = expect_step(b, 0, &batch, 800, 1000, 1, 0);
  Offloaded o = expect_offload(b, &batch, 12800, 1, 1, 1, FALSE, 0);
  const EmaStepCostView *seen = &b->prefetch_probe.step;
  EmaStepBreakdown lender_bd;
  EmaTime start = ema_sim_now(b->sim), t = ema_pool_step_time(b->pool, 0, &batch), lender_local,
          extra;
  double r;
  /* S = 1 x 32 x 128 x 2 + 4,096 bytes, R = 1 x 32 x 129 x 4 */
  g_assert_cmpfloat(o.sent, ==, 12288);
  g_assert_cmpfloat(o.back, ==, 16512);
  assert_share(b, 0, 1, 12800, 1);
  g_assert_cmpint(t, ==, o.step);
  /* the remote partial runs beside the local attention over a fifth of the
   * KV; one request's messages (12 KiB out and 16 KiB back per layer) cost
   * about what the lender's HBM saves by reading four fifths of the KV
   * beside the borrower's: the step is within 1% of the one with every byte
   * local (+0.9% on the A100-40GB profile's attention), and shorter than
   * copying 80% of the KV over the link (its prefetch is exposed) */
  g_assert_cmpint(o.step, <, all.all_local * 101 / 100);
  g_assert_cmpint(o.step, >, all.all_local * 99 / 100);
  g_assert_cmpint(o.step, <, all.step);
  g_assert_cmpint(o.added, >, 0);
  /* the policy saw each way's modelled step */
  g_assert_cmpfloat_with_epsilon(seen->step_offload_s, (double) o.step / 1e9, 1e-12);
  g_assert_cmpfloat_with_epsilon(seen->step_local_s, (double) all.all_local / 1e9, 1e-12);
  g_assert_cmpfloat(seen->context_tokens, ==, 16000);
  /* c_max at allowance 1 over the decode step (this one): the tokens whose
   * reads fill the lender's copy rate for a whole step */
  g_assert_cmpfloat_with_epsilon(seen->offload_full_context,
                                 b->server->gpu.local_copy_bandwidth * (double) o.step / 1e9 /
                                     (32 * 4096),
                                 1e-6 * seen->offload_full_context);
  /* no KV crosses the link: nothing is pulled from the lender's HBM */
  ema_step_time(b->models[1], &lender_batch, &lender_bd);
  lender_local = lender_bd.time;
  /* the lender's step while GPU 0's step runs: + s(r) x its step, r =
   * L c kv_l / (T' x local_copy_bandwidth), s the measured curve, here
   * between its points (4.80%, 4.58%) and (9.49%, 9.29%) */
  r = 32 * o.c * 4096 / ((double) o.step / 1e9 * b->server->gpu.local_copy_bandwidth);
  g_assert_cmpfloat(r, >, 0.0480);
  g_assert_cmpfloat(r, <, 0.0949);
  extra = (EmaTime) llround((0.0458 + (0.0929 - 0.0458) * (r - 0.0480) / (0.0949 - 0.0480)) *
                            (double) lender_local);
  g_assert_cmpint(extra, >, 0);
  g_assert_cmpint(ema_pool_step_time(b->pool, 1, &lender_batch), ==, lender_local + extra);
  g_assert_cmpint(ema_pool_slowed_by_peers(b->pool, 1), ==, extra);
  g_assert_cmpint(ema_pool_slowed_by_peers(b->pool, 0), ==, 0);
  /* the last nanosecond of the borrower's step still charges the lender;
   * once it is over (an idle borrower), nothing does */
  bench_to(b, start + o.step - 1);
  g_assert_cmpint(ema_pool_step_time(b->pool, 1, &lender_batch), ==, lender_local + extra);
  bench_to(b, start + o.step);
  g_assert_cmpint(ema_pool_step_time(b->pool, 1, &lender_batch), ==, lender_local);
  g_assert_cmpuint(ema_pool_stats(b->pool)->remote_steps, ==, 1);
  /* exposed: what the step takes past its all-local time */
  g_assert_cmpint(ema_pool_stats(b->pool)->exposed_remote, ==, MAX(0, o.step - all.all_local));
  g_assert_cmpuint(ema_pool_slices_staging(b->pool, 0), ==, 0);
  /* once the lender serves a request of its own, the partial runs beside
   * its steps and takes gpu.offload_partial_slowdown longer: the layer
   * waits longer for it */
  g_assert_true(take(&b->memory[1], 10));
  {
    Offloaded busy = expect_offload(b, &batch, 12800, 1, 1, 1, TRUE, 0);
    g_assert_cmpfloat(b->server->gpu.offload_partial_slowdown, >, 0);
    g_assert_cmpint(busy.step, >, o.step);
    g_assert_cmpint(ema_pool_step_time(b->pool, 0, &batch), ==, busy.step);
  }
  give(&b->memory[1], 10);
  bench_check(b);
  bench_free(b);
}

/* test_step_offload's bench under the server's offload keys EXECUTION and
 * P90 (offexec.h): GPU 0 holds 200 blocks locally and 800 on GPU 1, one
 * running request; with TWO, GPU 2 likewise (on a lender of 2,000 slices).
 * *ALONE: the partial's time alone on GPU 1, one layer. */
static Bench *exec_bench(int execution, double p90, gboolean two, double *alone) {
  Bench *b = bench_new(NULL);
  g_autoptr(EmaOffloadModel) m = NULL;
  EmaOffloadShare shares[MAX_GPUS];
  GError *error = NULL;
  b->experiment->server.offload.execution = execution;
  b->experiment->server.offload.partial_p90 = p90;
  b->borrow = (TestBorrowParams){two ? -1 : 0, 1, 800, two ? 1 : 2, 0, 0};
  b->prefetch.mode = EMA_REMOTE_OFFLOAD;
  bench_pool(b);
  bench_tenant(b, 0, 200);
  bench_tenant(b, 1, two ? 2000 : 1000);
  if (two)
    bench_tenant(b, 2, 200);
  bench_start(b);
  if (two)
    bench_decide(b, 2);
  bench_borrow(b, 800, 0);
  g_assert_true(take(&b->memory[0], 1000));
  if (two)
    g_assert_true(take(&b->memory[2], 1000));
  m = ema_offload_model_new(&tenant_spec(b->experiment, 0)->model, b->server, 1, &error);
  g_assert_no_error(error);
  ema_pool_offload_shares(b->pool, 0, shares);
  *alone = ema_offload_partial_alone_s(m, &shares[1]);
  return b;
}

/* The lender's step (10 requests over 100 tokens each) is its own time x
 * (1 + F / (1 - F)) while the borrowers' steps run. */
static void assert_lender_slowed(Bench *b, double f) {
  EmaStepBatch lender_batch = {.decode_seqs = 10, .decode_context = 10 * 100, .logits = 10};
  EmaStepBreakdown bd;
  ema_step_time(b->models[1], &lender_batch, &bd);
  g_assert_cmpint(ema_pool_step_time(b->pool, 1, &lender_batch), ==,
                  bd.time + llround(f / (1 - f) * (double) bd.time));
}

/* test_step_offload's step under the timeslice execution model (offexec.h):
 * beside an idle lender the same; beside a busy one the partial runs alone
 * (no co-running factor) after the rest of the lender's time slice and a
 * context switch, 2 ms / 2 + 25 us = 1.025 ms per layer. While the step
 * runs the lender's own step lengthens by f' / (1 - f') of it: the
 * borrower's 32 partials of S (alone) per step of T take rho = 32 S / T
 * of its time, and 2 x 32 / T switches of 25 us, f' = rho + 1.6 ms / T. */
static void test_step_offload_timeslice(void) {
  EmaStepBatch batch = {.decode_seqs = 100, .decode_context = 16000, .logits = 100};
  double alone, seconds;
  Bench *b = exec_bench(EMA_OFFLOAD_EXEC_TIMESLICE, 1, FALSE, &alone);
  Offloaded idle = expect_offload(b, &batch, 12800, 1, 1, 1, FALSE, 0), busy;
  EmaTime t;
  g_assert_cmpint(ema_pool_step_time(b->pool, 0, &batch), ==, idle.step);
  bench_to(b, ema_sim_now(b->sim) + idle.step);
  g_assert_true(take(&b->memory[1], 10));
  busy = expect_offload(b, &batch, 12800, 1, 1, 1, FALSE, 1.025e-3);
  t = ema_pool_step_time(b->pool, 0, &batch);
  g_assert_cmpint(t, ==, busy.step);
  g_assert_cmpint(busy.step - idle.step, >, 32 * 1000000); /* the slices' waits: 32 x ~1 ms */
  seconds = (double) t / 1e9;
  assert_lender_slowed(b, 32 * alone / seconds + 2 * 25e-6 * 32 / seconds);
  give(&b->memory[1], 10);
  bench_check(b);
  bench_free(b);
}

/* The partial's time drawn per step (offload.partial_p90 2.1, offexec.h):
 * test_step_offload's step with its partial alone x D, D = exp(sigma z),
 * sigma = ln 2.1 / z_0.9, z the next standard normal of the pool's own
 * mt19937 stream seeded from the seed given (the same stream drawn here),
 * one per step. */
static void test_step_offload_draw(void) {
  EmaStepBatch batch = {.decode_seqs = 100, .decode_context = 16000, .logits = 100};
  gsl_rng *rng = gsl_rng_alloc(gsl_rng_mt19937);
  guint64 seed = G_GUINT64_CONSTANT(0x123456789abcdef);
  double alone, draw;
  Bench *b = exec_bench(EMA_OFFLOAD_EXEC_MPS, 2.1, FALSE, &alone);
  ema_pool_set_seed(b->pool, seed);
  gsl_rng_set(rng, (unsigned long) (seed ^ (seed >> 32)));
  for (guint step = 0; step < 2; step++) {
    EmaTime t = ema_pool_step_time(b->pool, 0, &batch);
    draw = ema_offexec_draw(&b->server->offload, gsl_ran_ugaussian(rng));
    g_assert_cmpint(t, ==,
                    expect_offload(b, &batch, 12800, 1, 1, 1, FALSE, alone * (draw - 1)).step);
    bench_to(b, ema_sim_now(b->sim) + t);
  }
  gsl_rng_free(rng);
  bench_check(b);
  bench_free(b);
}

/* Two borrowers' partials queue on one lender (offexec.h): GPUs 0 and 2
 * each hold test_step_offload's request (200 blocks local, 800 on GPU 1)
 * and step together under timeslice, the lender idle. GPU 0's step starts
 * first, alone: T_A as with nobody else, its 32 partials of S (alone) take
 * rho_A = 32 S / T_A of the lender's time. GPU 2's partials wait behind
 * them, first come first served, rho_A S / (2 (1 - rho_A)) per layer
 * (Pollaczek-Khinchine). While both run, the lender's own step lengthens
 * by f' / (1 - f'), f' = rho_A + rho_B + 2 x 25 us x (32 / T_A + 32 / T_B). */
static void test_step_offload_queue(void) {
  EmaStepBatch batch = {.decode_seqs = 100, .decode_context = 16000, .logits = 100};
  double alone, rho_a, rho_b, t_a, t_b;
  Bench *b = exec_bench(EMA_OFFLOAD_EXEC_TIMESLICE, 1, TRUE, &alone);
  Offloaded first = expect_offload(b, &batch, 12800, 1, 1, 1, FALSE, 0), second;
  g_assert_cmpuint(ema_pool_slices_borrowed(b->pool, 2), ==, 800);
  assert_share(b, 0, 1, 12800, 1);
  assert_share(b, 2, 1, 12800, 1);
  g_assert_cmpint(ema_pool_step_time(b->pool, 0, &batch), ==, first.step);
  t_a = (double) first.step / 1e9;
  rho_a = 32 * alone / t_a;
  second = expect_offload(b, &batch, 12800, 1, 1, 1, FALSE, rho_a * alone / (2 * (1 - rho_a)));
  g_assert_cmpint(ema_pool_step_time(b->pool, 2, &batch), ==, second.step);
  g_assert_cmpint(second.step, >, first.step);
  t_b = (double) second.step / 1e9;
  rho_b = 32 * alone / t_b;
  assert_lender_slowed(b, rho_a + rho_b + 2 * 25e-6 * (32 / t_a + 32 / t_b));
  bench_check(b);
  bench_free(b);
}

/* A TP group lends and serves offloaded attention: the group (tp 2 on
 * gpus 0-1, 2 x 500 slices) lends GPU 2 800 slices, GPU 2 holds 200 blocks
 * locally and 800 there, and its decode step of 100 sequences over 16,000
 * tokens offloads the attention over the 12,800 tokens on the group (one
 * request, as test_step_offload). The group's ranks serve the partials side
 * by side, each over its heads' share: of each rank's HBM time the partials
 * take r / 2, r = L c kv_l / (T' x local_copy_bandwidth) what one GPU
 * would give (T' the borrower's step), so the group's own step while T'
 * runs lengthens by the measured slowdown at r / 2. */
static void test_tp_lender_offload(void) {
  Bench *b = bench_new(NULL);
  EmaStepBatch batch = {.decode_seqs = 100, .decode_context = 16000, .logits = 100};
  EmaStepBatch group_batch = {.decode_seqs = 10, .decode_context = 10 * 100, .logits = 10};
  EmaStepBreakdown group_bd;
  EmaTime start, t;
  double r, row;
  b->borrow = (TestBorrowParams){2, 0, 800, 3, 0, 0};
  b->prefetch.mode = EMA_REMOTE_OFFLOAD;
  b->prefetch.depth = 1;
  b->prefetch.group = 1;
  bench_pool(b);
  bench_tp_tenant(b, 500);
  bench_tenant(b, 2, 200);
  bench_start(b);
  start = ema_sim_now(b->sim);
  bench_decide(b, 2);
  bench_to(b, start + borrow_time(b, 800));
  g_assert_cmpuint(ema_pool_slices_lent(b->pool, 0), ==, 800);
  g_assert_true(take(&b->memory[2], 1000));
  g_assert_cmpuint(ema_pool_blocks_remote(b->pool, 2), ==, 800);
  start = ema_sim_now(b->sim);
  t = ema_pool_step_time(b->pool, 2, &batch);
  g_assert_cmpuint(ema_pool_stats(b->pool)->offload_steps, ==, 1);
  r = 32 * 12800.0 * 4096 / ((double) t / 1e9 * b->server->gpu.local_copy_bandwidth);
  row = ema_pool_view(b->pool)->offload_share[2 * 4 + 0];
  g_assert_cmpfloat_with_epsilon(row, r / 2, 1e-12 * r);
  /* the group's own step (one rank's model) while the borrower's runs */
  ema_step_time(b->models[0], &group_batch, &group_bd);
  g_assert_cmpint(ema_pool_step_time(b->pool, 0, &group_batch), ==,
                  group_bd.time + (EmaTime) llround(ema_gpu_offload_slowdown(&b->server->gpu, row) *
                                                    (double) group_bd.time));
  g_assert_cmpint(ema_pool_slowed_by_peers(b->pool, 0), >, 0);
  bench_to(b, start + t);
  g_assert_cmpint(ema_pool_step_time(b->pool, 0, &group_batch), ==, group_bd.time);
  give(&b->memory[2], 1000);
  bench_check(b);
  bench_free(b);
}

/* Where the requests' blocks, not the tenant's block counts, decide: GPU 0's
 * 100 local blocks hold 50 short requests of 2 blocks (32 tokens each),
 * and a long one's 300 blocks (4,800 tokens) all went to GPU 1, the local
 * room being full. A step decodes all 51 (6,400 tokens). Split by the
 * counts (lender 1 holding 300 / 400 of the KV), the lender would serve
 * ceil(0.75 x 51) = 39 requests, each sending its query and new K/V and
 * merging two partials; exactly, it serves the long one alone: n = m = u =
 * 1, c = 4,800 tokens, and the local step attends to the other 1,600. */
static void test_step_offload_one_long(void) {
  Bench *b = remote_bench_empty(100, 300, 1000, EMA_REMOTE_OFFLOAD, 1, 1);
  EmaStepBatch batch = {.decode_seqs = 51, .decode_context = 6400, .logits = 51};
  EmaKvMemory *m = &b->memory[0];
  Offloaded exact = expect_offload(b, &batch, 4800, 1, 1, 1, FALSE, 0),
            by_counts = expect_offload(b, &batch, 4800, 39, 39, 39, FALSE, 0);
  for (guint64 i = 0; i <= 50; i++) {
    m->ops->state(m->self, i, EMA_KV_RUNNING);
    g_assert_true(m->ops->take(m->self, i, i < 50 ? 2 : 300));
  }
  assert_request_at(b, 0, 0, 2, 0, 0);
  assert_request_at(b, 0, 49, 2, 0, 0);
  assert_request_at(b, 0, 50, 0, 300, 0);
  /* the lenders' counts only for the request that has blocks on one: a record's size does
   * not grow with the server's GPUs where its request stays local */
  g_assert_null(ema_pool_request(b->pool, 0, 49)->remote_at);
  g_assert_nonnull(ema_pool_request(b->pool, 0, 50)->remote_at);
  assert_share(b, 0, 1, 4800, 1);
  /* S = 12,288 and R = 16,512 bytes per layer, against 39 times as much */
  g_assert_cmpfloat(exact.sent, ==, 12288);
  g_assert_cmpfloat(exact.back, ==, 16512);
  g_assert_cmpfloat(by_counts.sent, ==, 39 * 12288);
  g_assert_cmpint(ema_pool_step_time(b->pool, 0, &batch), ==, exact.step);
  g_assert_cmpint(exact.local_step, ==, by_counts.local_step);
  g_assert_cmpint(by_counts.step, >, exact.step);
  /* a short request no longer decoding (preempted, its blocks given back) changes nothing on
   * the lender; the long one's end leaves it nothing */
  m->ops->give(m->self, 0, 2);
  m->ops->state(m->self, 0, EMA_KV_PREEMPTED);
  assert_share(b, 0, 1, 4800, 1);
  m->ops->give(m->self, 50, 300);
  m->ops->state(m->self, 50, EMA_KV_FINISHED);
  g_assert_cmpuint(ema_pool_blocks_remote(b->pool, 0), ==, 0);
  assert_share(b, 0, 0, 0, 0);
  bench_check(b);
  bench_free(b);
}

/* The events of kind offload-throttle. */
/* (the sink is given the throttle events alone: the pool makes no others for it) */
static void throttle_sink(gpointer data, const EmaPoolEvent *event) {
  g_assert_cmpint(event->kind, ==, EMA_POOL_EVENT_OFFLOAD_THROTTLE);
  g_array_append_val((GArray *) data, *event);
}

/* The lenders' cap (policy.h offload_cap), by hand: test_step_offload's
 * step, whose partials on lender 1 (a tenant: capped) take L = 32 x 12,800
 * x 4,096 B / local_copy_bandwidth of its HBM time, r = L / T' between
 * 4.80% and 9.49% uncapped. With the cap at 4.80% (a point of the measured
 * curve, +4.58% there) the lender serves them at the cap: the step takes
 * L / 4.80% (whole ns, rounded up), the lender's steps while it runs +4.58%,
 * the step counted as throttled with the time it added, and an
 * offload-throttle event names gpu1. The policy first saw the step at the
 * cap of the plan before (none) and was asked again with the step at its
 * cap; the next step is timed at it once. A cap that leaves the lender
 * next to nothing (1e-9: the step would take 25 days) reads the remote KV
 * directly (a plan adjusted); a lender without a tenant has no cap. */
static void test_step_offload_capped(void) {
  Bench *b = remote_bench(200, 800, 1000, EMA_REMOTE_OFFLOAD, 1, 1);
  EmaStepBatch batch = {.decode_seqs = 100, .decode_context = 16000, .logits = 100};
  EmaStepBatch lender_batch = {.decode_seqs = 10, .decode_context = 10 * 100, .logits = 10};
  Offloaded o = expect_offload(b, &batch, 12800, 1, 1, 1, FALSE, 0);
  const EmaStepCostView *seen = &b->prefetch_probe.step;
  g_autoptr(GArray) events = g_array_new(FALSE, FALSE, sizeof(EmaPoolEvent));
  const EmaPoolStats *stats;
  EmaStepBreakdown lender_bd;
  double L = 32 * 12800 * 4096 / b->server->gpu.local_copy_bandwidth, cap = 0.0480;
  EmaTime capped = (EmaTime) ceil(L / cap * 1e9), start, t, direct;
  guint calls;
  guint64 adjusted;
  g_assert_cmpfloat(L / ((double) o.step / 1e9), >, cap); /* uncapped above the cap */
  g_assert_cmpint(capped, >, o.step);
  ema_pool_set_event_sink(b->pool, throttle_sink, events, 1u << EMA_POOL_EVENT_OFFLOAD_THROTTLE);
  b->prefetch.cap = cap;
  calls = b->prefetch_probe.calls;
  start = ema_sim_now(b->sim);
  t = ema_pool_step_time(b->pool, 0, &batch);
  g_assert_cmpint(t, ==, capped);
  g_assert_cmpuint(b->prefetch_probe.calls, ==, calls + 2);
  g_assert_cmpfloat_with_epsilon(seen->step_offload_s, (double) capped / 1e9, 1e-15);
  /* the lender's share is at the cap (less a nanosecond of the step's
   * rounding up), its step slowed by the curve there */
  ema_step_time(b->models[1], &lender_batch, &lender_bd);
  g_assert_cmpfloat_with_epsilon(ema_pool_view(b->pool)->offload_share[0 * 4 + 1], cap,
                                 cap / (double) capped);
  g_assert_cmpfloat(ema_pool_view(b->pool)->offload_share[0 * 4 + 1], <=, cap);
  g_assert_cmpint(llabs(ema_pool_step_time(b->pool, 1, &lender_batch) - lender_bd.time -
                        (EmaTime) llround(0.0458 * (double) lender_bd.time)),
                  <=, 1);
  stats = ema_pool_stats(b->pool);
  g_assert_cmpuint(stats->offload_steps, ==, 1);
  g_assert_cmpuint(stats->offload_throttled_steps, ==, 1);
  g_assert_cmpint(stats->offload_throttled, ==, capped - o.step);
  g_assert_cmpuint(events->len, ==, 1);
  g_assert_cmpuint(g_array_index(events, EmaPoolEvent, 0).gpu, ==, 0);
  g_assert_cmpuint(g_array_index(events, EmaPoolEvent, 0).peer, ==, 1);
  g_assert_true(g_str_has_prefix(g_array_index(events, EmaPoolEvent, 0).reason,
                                 "offload cap: lender gpu1 at its cap 4.8%"));
  bench_check(b);
  /* the next step: asked once, at the cap; throttled again, not logged again */
  bench_to(b, start + capped);
  calls = b->prefetch_probe.calls;
  g_assert_cmpint(ema_pool_step_time(b->pool, 0, &batch), ==, capped);
  g_assert_cmpuint(b->prefetch_probe.calls, ==, calls + 1);
  g_assert_cmpuint(stats->offload_throttled_steps, ==, 2);
  g_assert_cmpuint(events->len, ==, 1);
  /* next to nothing left: direct loads (the fixed policy's plan cut to them) */
  bench_to(b, start + 2 * capped);
  b->prefetch.cap = 1e-9;
  b->prefetch.mode = EMA_REMOTE_DIRECT;
  direct = expect_step(b, 0, &batch, 800, 1000, 1, 0).step;
  b->prefetch.mode = EMA_REMOTE_OFFLOAD;
  adjusted = ema_pool_stats(b->pool)->plans_adjusted;
  g_assert_cmpint(ema_pool_step_time(b->pool, 0, &batch), ==, direct);
  g_assert_cmpfloat(seen->step_offload_s, ==, 0);
  g_assert_cmpuint(ema_pool_stats(b->pool)->plans_adjusted, ==, adjusted + 1);
  g_assert_cmpuint(stats->offload_steps, ==, 2);
  bench_check(b);
  bench_free(b);
}

/* The cap on a step that does not offload (the policy chose direct loads,
 * test_step_offload_capped's step and cap): the offload-throttle event
 * says what the offload would have taken at the cap, and the cap added no
 * time (seconds 0, no throttled step). */
static void test_step_offload_capped_unused(void) {
  Bench *b = remote_bench(200, 800, 1000, EMA_REMOTE_DIRECT, 1, 1);
  EmaStepBatch batch = {.decode_seqs = 100, .decode_context = 16000, .logits = 100};
  const EmaStepCostView *seen = &b->prefetch_probe.step;
  g_autoptr(GArray) events = g_array_new(FALSE, FALSE, sizeof(EmaPoolEvent));
  double L = 32 * 12800 * 4096 / b->server->gpu.local_copy_bandwidth, cap = 0.0480;
  EmaTime direct = expect_step(b, 0, &batch, 800, 1000, 1, 0).step;
  const EmaPoolEvent *e;
  ema_pool_set_event_sink(b->pool, throttle_sink, events, 1u << EMA_POOL_EVENT_OFFLOAD_THROTTLE);
  b->prefetch.cap = cap;
  g_assert_cmpint(ema_pool_step_time(b->pool, 0, &batch), ==, direct);
  g_assert_cmpfloat_with_epsilon(seen->step_offload_s, ceil(L / cap * 1e9) / 1e9, 1e-15);
  g_assert_cmpuint(events->len, ==, 1);
  e = &g_array_index(events, EmaPoolEvent, 0);
  g_assert_cmpuint(e->peer, ==, 1);
  g_assert_true(g_str_has_suffix(e->reason, "; not offloaded"));
  g_assert_nonnull(strstr(e->reason, " ms if offloaded, "));
  g_assert_cmpfloat(e->seconds, ==, 0);
  g_assert_cmpuint(ema_pool_stats(b->pool)->offload_throttled_steps, ==, 0);
  g_assert_cmpint(ema_pool_stats(b->pool)->offload_throttled, ==, 0);
  bench_check(b);
  bench_free(b);
}

/* Per lender (policy.h offload_read), by hand: GPU 0 holds 200 blocks
 * locally, 800 on GPU 1 and 100 on GPU 2 (both tenants), one running
 * request, and decodes 100 sequences over its 1,100 blocks' 17,600 tokens.
 * With the cap at 4.80%, lender 1's partials over 12,800 tokens would take
 * more of its HBM time than that (the whole offload is held to it:
 * L_1 / 4.80%), lender 2's over 1,600 tokens less: the step reads lender
 * 1's KV by direct loads and offloads the attention over lender 2's. Its
 * local work is the batch less lender 2's 1,600 tokens (lender 1's among
 * the rest, loaded over the link beside the local reads: max(kv_all,
 * t_read) per layer, t_read lender 1's share of the remote bytes, 800 /
 * 900, at the direct-load bandwidth), plus the wait and merge of lender
 * 2's partials (n = 1 request, c = 1,600 tokens, u = 1). Lender 2 is
 * charged its share of HBM time at the step, lender 1 none of it but the
 * pull of its bytes over the step; the step counts as offloading and
 * reading (not throttled), and an offload-throttle event names gpu1. */
static void test_step_offload_read(void) {
  Bench *b = bench_new(NULL);
  EmaStepBatch batch = {.decode_seqs = 100, .decode_context = 17600, .logits = 100};
  EmaStepBatch lender_batch = {.decode_seqs = 10, .decode_context = 10 * 100, .logits = 10};
  const EmaStepCostView *seen = &b->prefetch_probe.step;
  const EmaPoolStats *stats;
  g_autoptr(GArray) events = g_array_new(FALSE, FALSE, sizeof(EmaPoolEvent));
  EmaOffloadShare shares[MAX_GPUS];
  EmaStepBreakdown all, *bd;
  Offloaded o;
  Expected lender;
  double cap = 0.0480, copy_bw, L1, L2, R, b1, t_read, kv, step_s, r2;
  EmaTime t;
  b->borrow = (TestBorrowParams){0, 1, 800, 2, 100, 0};
  b->prefetch.mode = EMA_REMOTE_OFFLOAD;
  b->prefetch.cap = cap;
  b->prefetch.read = TRUE;
  bench_pool(b);
  bench_tenant(b, 0, 200);
  bench_tenant(b, 1, 1000);
  bench_tenant(b, 2, 1000);
  bench_start(b);
  bench_borrow(b, 800, 100);
  g_assert_true(take(&b->memory[0], 1100));
  g_assert_cmpuint(ema_pool_offload_shares(b->pool, 0, shares), ==, 1);
  g_assert_cmpfloat(shares[1].context, ==, 12800);
  g_assert_cmpfloat(shares[2].context, ==, 1600);
  g_assert_cmpuint(shares[1].new_kv + shares[2].new_kv, ==, 1);
  ema_pool_set_event_sink(b->pool, throttle_sink, events, 1u << EMA_POOL_EVENT_OFFLOAD_THROTTLE);
  copy_bw = b->server->gpu.local_copy_bandwidth;
  L1 = 32 * 12800 * 4096 / copy_bw;
  L2 = 32 * 1600 * 4096 / copy_bw;
  o = expect_offload(b, &batch, 1600, 1, (double) shares[2].new_kv, 1, FALSE, 0);
  bd = &o.local;
  ema_step_time(b->models[0], &batch, &all);
  R = 900.0 / 1100.0 * all.kv_read_bytes / 32;
  b1 = R * 800 / 900;
  t_read = b1 / b->server->link.direct_read_bandwidth; /* a link per GPU pair, one reader */
  kv = bd->layer_kv_read_s;
  step_s = 32 * (MAX(bd->layer_compute_s, bd->layer_memory_s - kv + MAX(kv, t_read)) +
                 bd->layer_overhead_s) +
           (bd->lm_head_s + bd->allreduce_s + bd->overhead_s) + (double) o.added / 1e9;
  /* lender 2 does not hold this step (lender 1 holds the whole offload: below) */
  g_assert_cmpfloat(L2 / step_s, <, cap);
  t = ema_pool_step_time(b->pool, 0, &batch);
  g_assert_cmpint(t, ==, ns(step_s));
  /* what the policy saw: the whole offload held by lender 1, and this step */
  g_assert_cmpfloat_with_epsilon(seen->step_offload_s, ceil(L1 / cap * 1e9) / 1e9, 1e-15);
  g_assert_cmpfloat_with_epsilon(seen->step_offload_read_s, step_s, 1e-12);
  /* lender 2 serves its partials at its share of the step; lender 1 is pulled from */
  r2 = L2 / ((double) t / 1e9);
  g_assert_cmpfloat(ema_pool_view(b->pool)->offload_share[0 * 4 + 1], ==, 0);
  g_assert_cmpfloat_with_epsilon(ema_pool_view(b->pool)->offload_share[0 * 4 + 2], r2, 1e-9 * r2);
  lender = expect_step(b, 1, &lender_batch, 0, 0, 1,
                       b->server->gpu.interference_outgoing * b1 * 32 / step_s);
  g_assert_cmpfloat(lender.slow, >, 1);
  g_assert_cmpint(ema_pool_step_time(b->pool, 1, &lender_batch), ==, lender.step);
  stats = ema_pool_stats(b->pool);
  g_assert_cmpuint(stats->offload_steps, ==, 1);
  g_assert_cmpuint(stats->offload_read_steps, ==, 1);
  g_assert_cmpuint(stats->offload_throttled_steps, ==, 0);
  g_assert_cmpuint(events->len, ==, 1);
  g_assert_cmpuint(g_array_index(events, EmaPoolEvent, 0).peer, ==, 1);
  g_assert_true(g_str_has_prefix(g_array_index(events, EmaPoolEvent, 0).reason,
                                 "offload cap: lender gpu1 at its cap 4.8%, others 0%; its KV "
                                 "read directly, the rest offloaded"));
  bench_check(b);
  /* without offload_read: the whole offload, held to lender 1's cap */
  bench_to(b, ema_sim_now(b->sim) + t);
  b->prefetch.read = FALSE;
  g_assert_cmpint(ema_pool_step_time(b->pool, 0, &batch), ==, (EmaTime) ceil(L1 / cap * 1e9));
  g_assert_cmpuint(stats->offload_read_steps, ==, 1);
  g_assert_cmpuint(stats->offload_throttled_steps, ==, 1);
  bench_check(b);
  bench_free(b);
}

/* ---- 3. gives ----------------------------------------------------------------- */

/* n blocks given return round(n R / (L + R)) of the remote ones. */

/* GPU 0 with LOCAL slices of its own and 8 borrowed from GPU 1, holding 4
 * blocks (LOCAL local, the rest remote); *M0 is its memory. */
static Bench *rounding_bench(guint64 local, EmaKvMemory **m0) {
  Bench *b = bench_new(NULL);
  b->borrow = (TestBorrowParams){0, 1, 8, 2, 0, 0};
  bench_pool(b);
  *m0 = bench_tenant(b, 0, local);
  ema_pool_add_idle_gpu(b->pool, 1, 40);
  bench_start(b);
  bench_borrow(b, 8, 0);
  g_assert_true(take(*m0, 4));
  return b;
}

static void test_give_proportional(void) {
  Bench *b = bench_new(NULL);
  EmaKvMemory *m0;
  guint64 local = 40, remote = 24;
  const guint64 gives[] = {1, 2, 3, 5, 7, 10, 4, 1, 6, 1};
  b->borrow = (TestBorrowParams){0, 1, 30, 2, 0, 0};
  bench_pool(b);
  m0 = bench_tenant(b, 0, 40);
  ema_pool_add_idle_gpu(b->pool, 1, 40);
  bench_start(b);
  bench_borrow(b, 30, 0);
  g_assert_true(take(m0, local + remote));
  for (guint i = 0; i < G_N_ELEMENTS(gives); i++) {
    guint64 n = gives[i], used = local + remote;
    /* round half up in integers: floor((2 n R + used) / (2 used)) */
    guint64 back = (2 * n * remote + used) / (2 * used);
    give(m0, n);
    remote -= back;
    local -= n - back;
    g_assert_cmpuint(ema_pool_blocks_remote(b->pool, 0), ==, remote);
    g_assert_cmpuint(free_blocks(m0), ==, (40 - local) + (30 - remote));
    bench_check(b);
  }
  g_assert_cmpuint(local, ==, 14); /* the sequence above, by hand: 26 local and 14 remote given */
  g_assert_cmpuint(remote, ==, 10);
  /* giving everything back empties both */
  give(m0, local + remote);
  g_assert_cmpuint(ema_pool_blocks_remote(b->pool, 0), ==, 0);
  g_assert_cmpuint(free_blocks(m0), ==, 70);
  bench_free(b);

  /* the rounding's edge: with 1 local and 3 remote, giving 2 is 1.5 -> 2
   * remote; with 3 local and 1 remote, 2 is 0.5 -> 1 */
  b = rounding_bench(1, &m0);
  give(m0, 2);
  g_assert_cmpuint(ema_pool_blocks_remote(b->pool, 0), ==, 1);
  give(m0, 2);
  bench_free(b);
  b = rounding_bench(3, &m0);
  give(m0, 2);
  g_assert_cmpuint(ema_pool_blocks_remote(b->pool, 0), ==, 0);
  g_assert_cmpuint(free_blocks(m0), ==, 1 + 8);
  give(m0, 2);
  bench_free(b);
}

/* ---- 4. reclaims, with an engine ------------------------------------------------ */

/* Requests of PROMPT tokens and OUTPUT tokens arriving at 1 ms. */
static EmaRequestRecord request(guint64 id, guint32 prompt, guint32 output) {
  return (EmaRequestRecord){EMA_MS(1), prompt, output, id, 0, 0, NULL};
}

/* GPU 0 (8 slices, an engine), GPU 1 a lender tenant with 40 slices and no
 * engine, GPU 2 idle with PEER_SLICES; GPU 0 borrows 16 from GPU 1 (and
 * SLICES2 from GPU 2) at t = 0 and serves RECORDS from 1 ms. */
static Bench *reclaim_bench(guint64 peer_slices, guint64 slices2, const EmaRequestRecord *records,
                            gsize n) {
  Bench *b = bench_new(NULL);
  b->borrow = (TestBorrowParams){0, 1, 16, 2, (gint64) slices2, 0};
  bench_pool(b);
  bench_tenant(b, 0, 8);
  bench_tenant(b, 1, 40);
  ema_pool_add_idle_gpu(b->pool, 2, peer_slices);
  bench_start(b);
  bench_engine(b, 0, records, n);
  bench_borrow(b, 16, slices2);
  return b;
}

typedef struct {
  guint64 held, remote, lent1;
  EmaPoolStats stats;
  guint64 preemptions;
} Before;

static Before before_reclaim(Bench *b) {
  Before s = {ema_engine_blocks_held(b->engines[0]), ema_pool_blocks_remote(b->pool, 0),
              ema_pool_slices_lent(b->pool, 1), *ema_pool_stats(b->pool),
              ema_engine_preemptions(b->engines[0])};
  return s;
}

/* GPU 1 reclaims everything at T (its policy: ACTION's target); returns
 * when that happened, checking the probe saw the lender's need. */
static EmaTime reclaim_at(Bench *b, EmaTime t, int target, guint target_gpu) {
  b->reclaim = (TestReclaimParams){0, 16, target, target_gpu, &b->reclaim_probe};
  bench_to(b, t);
  ema_pool_reclaim_everything(b->pool, 1);
  g_assert_cmpuint(b->reclaim_probe.calls, ==, 1);
  g_assert_cmpuint(b->reclaim_probe.gpu, ==, 1);
  g_assert_cmpuint(b->reclaim_probe.needed, ==, 16);
  bench_check(b);
  g_assert_cmpuint(ema_pool_slices_lent(b->pool, 1), ==, 0);
  return t;
}

/* The lender's 16 slices are back WAIT after T (its memory shows them),
 * and the reclaim's wait is counted. */
static void assert_back_after(Bench *b, EmaTime t, EmaTime wait) {
  EmaTime waited = ema_pool_stats(b->pool)->reclaim_wait;
  g_assert_cmpuint(free_blocks(&b->memory[1]), ==, 40 - 16);
  bench_to(b, t + wait - 1);
  g_assert_cmpuint(free_blocks(&b->memory[1]), ==, 40 - 16);
  g_assert_cmpint(ema_pool_stats(b->pool)->reclaim_wait, ==, waited);
  bench_to(b, t + wait);
  g_assert_cmpuint(free_blocks(&b->memory[1]), ==, 40);
  g_assert_cmpint(ema_pool_stats(b->pool)->reclaim_wait, ==, waited + wait);
  g_assert_cmpint(ema_pool_stats(b->pool)->reclaim_wait_max, >=, wait);
}

static void finish(Bench *b, guint64 completed) {
  bench_to(b, EMA_S(60));
  g_assert_cmpuint(ema_engine_completed(b->engines[0]), ==, completed);
  g_assert_cmpuint(ema_engine_rejected(b->engines[0]), ==, 0);
  g_assert_cmpuint(ema_engine_running(b->engines[0]) + ema_engine_waiting(b->engines[0]), ==, 0);
  g_assert_cmpuint(ema_engine_blocks_held(b->engines[0]), ==, 0);
  g_assert_cmpuint(ema_pool_blocks_remote(b->pool, 0), ==, 0);
  bench_check(b);
}

/* To the borrower: A (7 blocks, all local) finished and gave back its own
 * 7 local blocks; B's 6 remote blocks (of its 7: 1 local) move into the 7
 * free local ones. */
static void test_reclaim_to_borrower(void) {
  const EmaRequestRecord records[] = {request(0, 100, 2), request(1, 100, 20)};
  Bench *b = reclaim_bench(40, 0, records, 2);
  Before s;
  EmaTime t;
  bench_to(b, EMA_MS(60));
  s = before_reclaim(b);
  g_assert_cmpuint(ema_engine_completed(b->engines[0]), ==, 1);
  g_assert_cmpuint(s.held, ==, 7);
  g_assert_cmpuint(s.remote, ==, 6); /* B's, A's were all local */
  assert_request_at(b, 0, 1, 1, 6, 0);
  t = reclaim_at(b, EMA_MS(60), EMA_VACATE_TO_BORROWER, 0);
  assert_request_at(b, 0, 1, 7, 0, 0);
  g_assert_cmpuint(ema_pool_blocks_remote(b->pool, 0), ==, 0);
  g_assert_cmpuint(ema_engine_blocks_held(b->engines[0]), ==, 7);
  g_assert_cmpuint(ema_engine_preemptions(b->engines[0]), ==, 0);
  g_assert_cmpuint(free_blocks(&b->memory[0]), ==, 1);
  g_assert_cmpuint(total_blocks(&b->memory[0]), ==, 8);
  g_assert_cmpuint(ema_pool_stats(b->pool)->reclaims, ==, 1);
  g_assert_cmpuint(ema_pool_stats(b->pool)->slices_reclaimed, ==, 16);
  g_assert_cmpuint(ema_pool_stats(b->pool)->blocks_migrated, ==, 6);
  g_assert_cmpuint(ema_pool_stats(b->pool)->blocks_dropped, ==, 0);
  g_assert_cmpuint(ema_pool_stats(b->pool)->plans_adjusted, ==, 0);
  assert_back_after(b, t, ns(link_copy_s(b, 6)) + unmap_time(b, 16));
  finish(b, 2);
  g_assert_cmpuint(ema_engine_preemptions(b->engines[0]), ==, 0);
  bench_free(b);
}

/* A (7 blocks, all local) and B (7 blocks: 1 local, 6 on gpu1), from 1 ms. */
static const EmaRequestRecord two_requests[] = {{EMA_MS(1), 100, 20, 0, 0, 0, NULL},
                                                {EMA_MS(1), 100, 20, 1, 0, 0, NULL}};

/* To a peer: B's 6 remote blocks move to GPU 2, which lends the room. */
static void test_reclaim_to_peer(void) {
  Bench *b = reclaim_bench(40, 0, two_requests, 2);
  Before s;
  EmaTime t;
  bench_to(b, EMA_MS(25));
  s = before_reclaim(b);
  g_assert_cmpuint(s.held, ==, 14);
  g_assert_cmpuint(s.remote, ==, 6);
  t = reclaim_at(b, EMA_MS(25), EMA_VACATE_TO_PEER, 2);
  g_assert_cmpuint(ema_pool_blocks_remote(b->pool, 0), ==, 6);
  g_assert_cmpuint(ema_pool_slices_lent(b->pool, 2), ==, 6);
  g_assert_cmpuint(ema_pool_slices_borrowed(b->pool, 0), ==, 6);
  g_assert_cmpuint(total_blocks(&b->memory[0]), ==, 8 + 6);
  g_assert_cmpuint(free_blocks(&b->memory[0]), ==, 0);
  g_assert_cmpuint(ema_engine_preemptions(b->engines[0]), ==, 0);
  g_assert_cmpuint(ema_pool_stats(b->pool)->blocks_migrated, ==, 6);
  g_assert_cmpuint(ema_pool_stats(b->pool)->plans_adjusted, ==, 0);
  assert_back_after(b, t, ns(peer_migrate_s(b, 6)) + unmap_time(b, 16));
  finish(b, 2);
  bench_free(b);
}

/* To host: the newest request (B) swaps out; its 6 remote blocks are the
 * ones that go, and the copy is charged on the host link. */
static void test_reclaim_to_host(void) {
  Bench *b = reclaim_bench(40, 0, two_requests, 2);
  EmaTime t;
  bench_to(b, EMA_MS(25));
  g_assert_cmpuint(ema_engine_blocks_held(b->engines[0]), ==, 14);
  g_assert_cmpuint(ema_pool_blocks_remote(b->pool, 0), ==, 6);
  t = reclaim_at(b, EMA_MS(25), EMA_VACATE_TO_HOST, 0);
  g_assert_cmpuint(ema_engine_preemptions(b->engines[0]), ==, 1);
  g_assert_cmpuint(ema_engine_blocks_held(b->engines[0]), ==, 7);
  g_assert_cmpuint(ema_pool_blocks_remote(b->pool, 0), ==, 0);
  g_assert_cmpuint(free_blocks(&b->memory[0]), ==, 1);
  g_assert_cmpuint(ema_pool_stats(b->pool)->blocks_to_host, ==, 6);
  g_assert_cmpuint(ema_pool_stats(b->pool)->blocks_dropped, ==, 0);
  g_assert_cmpuint(ema_pool_stats(b->pool)->plans_adjusted, ==, 0);
  assert_back_after(b, t, ns(host_copy_s(b, 6)) + unmap_time(b, 16));
  finish(b, 2); /* B swaps back in once A is done */
  g_assert_cmpuint(ema_engine_preemptions(b->engines[0]), ==, 1);
  bench_free(b);
}

/* Drop: B recomputes; nothing is copied, only the unmap is charged. */
static void test_reclaim_drop(void) {
  Bench *b = reclaim_bench(40, 0, two_requests, 2);
  EmaTime t;
  bench_to(b, EMA_MS(25));
  t = reclaim_at(b, EMA_MS(25), EMA_VACATE_DROP, 0);
  g_assert_cmpuint(ema_engine_preemptions(b->engines[0]), ==, 1);
  g_assert_cmpuint(ema_engine_blocks_held(b->engines[0]), ==, 7);
  g_assert_cmpuint(ema_pool_blocks_remote(b->pool, 0), ==, 0);
  g_assert_cmpuint(ema_pool_stats(b->pool)->blocks_dropped, ==, 6);
  g_assert_cmpuint(ema_pool_stats(b->pool)->blocks_to_host, ==, 0);
  g_assert_cmpuint(ema_pool_stats(b->pool)->plans_adjusted, ==, 0);
  assert_back_after(b, t, unmap_time(b, 16));
  finish(b, 2);
  bench_free(b);
}

/* The reclaim events. */
static void reclaim_sink(gpointer data, const EmaPoolEvent *event) {
  g_assert_cmpint(event->kind, ==, EMA_POOL_EVENT_RECLAIM);
  g_array_append_val((GArray *) data, *event);
}

/* A reclaim at 25 ms on the two-request bench whose plan sends the lender's 6 blocks to TARGET
 * (TARGET_GPU), a place that is not there: they are dropped, the plan counted as adjusted, and
 * its reclaim row says WHY. */
static void assert_reclaim_no_place(int target, guint target_gpu, const char *why) {
  g_autoptr(GArray) events = g_array_new(FALSE, TRUE, sizeof(EmaPoolEvent));
  g_autofree char *reason = g_strconcat("test-reclaim-fixed: lender gpu1 lacks 16 slices; 16 "
                                        "slices from gpu0, 6 blocks of its KV dropped: ",
                                        why, NULL);
  Bench *b = reclaim_bench(40, 0, two_requests, 2);
  const EmaPoolEvent *e;
  EmaTime t;
  bench_to(b, EMA_MS(25));
  ema_pool_set_event_sink(b->pool, reclaim_sink, events, 1u << EMA_POOL_EVENT_RECLAIM);
  t = reclaim_at(b, EMA_MS(25), target, target_gpu);
  g_assert_cmpuint(ema_pool_stats(b->pool)->plans_adjusted, ==, 1);
  g_assert_cmpuint(ema_pool_stats(b->pool)->blocks_dropped, ==, 6);
  g_assert_cmpuint(events->len, ==, 1);
  e = &g_array_index(events, EmaPoolEvent, 0);
  g_assert_cmpint(e->target, ==, target);
  g_assert_cmpuint(e->target_gpu, ==, target_gpu);
  g_assert_cmpstr(e->reason, ==, reason);
  assert_back_after(b, t, unmap_time(b, 16));
  finish(b, 2);
  bench_free(b);
}

/* What cannot go where the plan says is dropped, and counted: the
 * borrower has no free local block; the peer has room for 3 of 6; the
 * "peer" is the lender itself; the plan names a borrower that does not
 * exist (nothing happens, then everything is dropped); a target outside
 * EmaVacateTarget, and a peer past the server, whose events say so (they
 * said "no room there"). */
static void test_reclaim_fallback(void) {
  Bench *b = reclaim_bench(40, 0, two_requests, 2);
  EmaTime t;
  bench_to(b, EMA_MS(25));
  t = reclaim_at(b, EMA_MS(25), EMA_VACATE_TO_BORROWER, 0);
  g_assert_cmpuint(ema_pool_stats(b->pool)->plans_adjusted, ==, 1);
  g_assert_cmpuint(ema_pool_stats(b->pool)->blocks_migrated, ==, 0);
  g_assert_cmpuint(ema_pool_stats(b->pool)->blocks_dropped, ==, 6);
  g_assert_cmpuint(ema_engine_preemptions(b->engines[0]), ==, 1);
  g_assert_cmpuint(ema_pool_blocks_remote(b->pool, 0), ==, 0);
  assert_back_after(b, t, unmap_time(b, 16));
  finish(b, 2);
  bench_free(b);

  b = reclaim_bench(3, 0, two_requests, 2);
  bench_to(b, EMA_MS(25));
  t = reclaim_at(b, EMA_MS(25), EMA_VACATE_TO_PEER, 2);
  g_assert_cmpuint(ema_pool_stats(b->pool)->plans_adjusted, ==, 1);
  g_assert_cmpuint(ema_pool_stats(b->pool)->blocks_migrated, ==, 3);
  /* B is dropped whole: the 3 left on gpu1 count as dropped from it, and
   * the 3 just moved to gpu2 go with B */
  g_assert_cmpuint(ema_pool_stats(b->pool)->blocks_dropped, ==, 3);
  g_assert_cmpuint(ema_engine_preemptions(b->engines[0]), ==, 1);
  g_assert_cmpuint(ema_pool_blocks_remote(b->pool, 0), ==, 0);
  g_assert_cmpuint(ema_pool_slices_lent(b->pool, 2), ==, 3);
  assert_back_after(b, t, ns(peer_migrate_s(b, 3)) + unmap_time(b, 16));
  finish(b, 2);
  bench_free(b);

  b = reclaim_bench(40, 0, two_requests, 2);
  bench_to(b, EMA_MS(25));
  t = reclaim_at(b, EMA_MS(25), EMA_VACATE_TO_PEER, 1);
  g_assert_cmpuint(ema_pool_stats(b->pool)->plans_adjusted, ==, 1);
  g_assert_cmpuint(ema_pool_stats(b->pool)->blocks_dropped, ==, 6);
  g_assert_cmpuint(ema_pool_slices_lent(b->pool, 2), ==, 0);
  assert_back_after(b, t, unmap_time(b, 16));
  finish(b, 2);
  bench_free(b);

  b = reclaim_bench(40, 0, two_requests, 2);
  bench_to(b, EMA_MS(25));
  b->reclaim = (TestReclaimParams){7, 16, EMA_VACATE_TO_HOST, 0, &b->reclaim_probe};
  ema_pool_reclaim_everything(b->pool, 1);
  bench_check(b);
  g_assert_cmpuint(ema_pool_stats(b->pool)->plans_adjusted, ==, 1);
  g_assert_cmpuint(ema_pool_stats(b->pool)->blocks_dropped, ==, 6);
  /* the forced drop is a reclaim like the policy's own */
  g_assert_cmpuint(ema_pool_stats(b->pool)->reclaims, ==, 1);
  g_assert_cmpuint(ema_pool_stats(b->pool)->slices_reclaimed, ==, 16);
  g_assert_cmpuint(ema_pool_slices_lent(b->pool, 1), ==, 0);
  assert_back_after(b, EMA_MS(25), unmap_time(b, 16));
  finish(b, 2);
  bench_free(b);

  /* data with no place: a target outside the four, a peer past the server */
  assert_reclaim_no_place(7, 0, "target 7 is not a reclaim target");
  assert_reclaim_no_place(EMA_VACATE_TO_PEER, 9,
                          "target_gpu 9 is not a GPU of this server (gpu0..gpu3)");
}

/* The offload shares of the step in flight, with A 7 local, B 1 local + 2
 * on gpu1, C 4 on gpu2, all decoding: gpu1 holds B's context past its
 * first block (kv + 1 - 16 tokens) and its newest block; gpu2 all of C's
 * (kv + 1) and its newest; two requests merge remote partials. */
static void assert_offload_shares(Bench *b) {
  EmaOffloadShare shares[MAX_GPUS]; /* the server's GPUs */
  EmaRequest rb, rc;
  gboolean in_step;
  const EmaRequestView *views;
  guint n;
  g_assert_true(ema_engine_request(b->engines[0], 1, &rb, &in_step, NULL));
  g_assert_true(in_step);
  g_assert_true(ema_engine_request(b->engines[0], 2, &rc, &in_step, NULL));
  g_assert_true(in_step);
  g_assert_cmpuint(rb.generated, >, 0);
  g_assert_cmpuint(rb.kv_tokens + 1, ==, rb.prompt_tokens + rb.generated);
  g_assert_cmpuint(ema_pool_offload_shares(b->pool, 0, shares), ==, 2);
  g_assert_cmpuint(shares[0].seqs, ==, 0);
  g_assert_cmpuint(shares[1].seqs, ==, 1);
  g_assert_cmpfloat(shares[1].context, ==, rb.kv_tokens + 1 - 16);
  g_assert_cmpuint(shares[1].new_kv, ==, 1);
  g_assert_cmpuint(shares[2].seqs, ==, 1);
  g_assert_cmpfloat(shares[2].context, ==, rc.kv_tokens + 1);
  g_assert_cmpuint(shares[2].new_kv, ==, 1);
  /* the policies' view of the same requests, with what the engine knows */
  views = ema_pool_view(b->pool)->requests(ema_pool_view(b->pool), 0, &n);
  g_assert_cmpuint(n, ==, 3);
  g_assert_cmpuint(views[1].request, ==, 1);
  g_assert_cmpint(views[1].state, ==, EMA_REQUEST_RUNNING);
  g_assert_cmpuint(views[1].context_tokens, ==, rb.kv_tokens);
  g_assert_cmpint(views[1].remaining_tokens, ==, 20 - (gint64) rb.generated);
  g_assert_cmpint(views[1].last_scheduled, >=, EMA_MS(1));
  g_assert_cmpint(views[1].last_scheduled, <=, ema_sim_now(b->sim));
  g_assert_cmpuint(views[1].blocks_at[1], ==, 2);
}

/* A drop during a reclaim preempts the requests whose blocks are on the
 * reclaimed lender: B (1 local + 2 on gpu1) goes, not C, the newest (its 4
 * blocks are on gpu2), and A's 7 local blocks stay. (With blocks fungible
 * within the tenant, C went, its 4 blocks taken off gpu1's 2 first.) */
static void test_drop_attribution(void) {
  const EmaRequestRecord records[] = {request(0, 100, 20), request(1, 40, 20), request(2, 60, 20)};
  Bench *b = bench_new(NULL);
  b->borrow = (TestBorrowParams){0, 1, 4, 2, 4, 0};
  bench_pool(b);
  bench_tenant(b, 0, 8);
  bench_tenant(b, 1, 40);
  ema_pool_add_idle_gpu(b->pool, 2, 40);
  bench_start(b);
  bench_engine(b, 0, records, 3);
  bench_borrow(b, 4, 4);
  bench_to(b, EMA_MS(25));
  g_assert_cmpuint(ema_engine_blocks_held(b->engines[0]), ==, 7 + 3 + 4);
  g_assert_cmpuint(ema_pool_blocks_remote(b->pool, 0), ==, 6);
  /* A 7 local; B 1 local + 2 on gpu1 (rooms 4 and 4: the lower index); C 4
   * on gpu2 (rooms 2 and 4) */
  assert_request_at(b, 0, 0, 7, 0, 0);
  assert_request_at(b, 0, 1, 1, 2, 0);
  assert_request_at(b, 0, 2, 0, 0, 4);
  assert_offload_shares(b);
  b->reclaim = (TestReclaimParams){0, 4, EMA_VACATE_DROP, 0, &b->reclaim_probe};
  ema_pool_reclaim_everything(b->pool, 1);
  /* where the blocks were: A 7 local; B 1 local + 2 on gpu1 (rooms 4 and
   * 4: the lower index); C 4 on gpu2 (rooms 2 and 4) */
  g_assert_cmpuint(b->reclaim_probe.remote_blocks[0 * TEST_PROBE_GPUS + 1], ==, 2);
  g_assert_cmpuint(b->reclaim_probe.remote_blocks[0 * TEST_PROBE_GPUS + 2], ==, 4);
  g_assert_cmpuint(b->reclaim_probe.gpus[0].blocks_used, ==, 14);
  bench_check(b);
  g_assert_cmpuint(ema_engine_preemptions(b->engines[0]), ==, 1);
  g_assert_cmpuint(ema_engine_blocks_held(b->engines[0]), ==, 7 + 4);
  assert_request_at(b, 0, 0, 7, 0, 0);
  assert_request_at(b, 0, 1, 0, 0, 0);
  assert_request_at(b, 0, 2, 0, 0, 4);
  g_assert_cmpint(ema_pool_request(b->pool, 0, 1)->state, ==, EMA_KV_PREEMPTED);
  g_assert_cmpuint(ema_pool_blocks_remote(b->pool, 0), ==, 4);
  g_assert_cmpuint(ema_pool_stats(b->pool)->blocks_dropped, ==, 2);
  g_assert_cmpuint(ema_pool_slices_lent(b->pool, 1), ==, 0);
  g_assert_cmpuint(ema_pool_slices_lent(b->pool, 2), ==, 4);
  /* local: 7 of 8 used; gpu2's room full with C's */
  g_assert_cmpuint(free_blocks(&b->memory[0]), ==, 1);
  finish(b, 3);
  bench_free(b);
}

/* ---- 5. the prefix cache's remote tier ---------------------------------------- */

typedef struct {
  GArray *events; /* EmaPoolEvent of kind tier */
  GArray *steps;  /* EmaStepReport */
} TierLog;

static void tier_sink(gpointer data, const EmaPoolEvent *event) {
  g_assert_cmpint(event->kind, ==, EMA_POOL_EVENT_TIER);
  g_array_append_val(((TierLog *) data)->events, *event);
}

static void tier_step(gpointer data, const EmaStepReport *step) {
  g_array_append_val(((TierLog *) data)->steps, *step);
}

/* The tier event I (of kind tier) moved BLOCKS and its reason starts with HEAD. */
static void assert_tier_event(const TierLog *log, guint i, guint64 blocks, const char *head) {
  const EmaPoolEvent *e;
  g_assert_cmpuint(log->events->len, >, i);
  e = &g_array_index(log->events, EmaPoolEvent, i);
  g_assert_cmpuint(e->blocks_moved, ==, blocks);
  g_assert_true(g_str_has_prefix(e->reason, head));
}

/* GPU 0 (8 blocks) borrows 16 of gpu1's. A (64 prompt tokens, 4 identified
 * blocks) finishes: its 4 cached blocks are free, in local room. B's 7
 * prefill blocks leave 1 local block free: the 3 least recently freed
 * (A's tail first) are demoted to the tier, and B's first decode block the
 * last one. B finishes: its 7 full prompt blocks stay cached (every full
 * prompt block is cached, B's as its own run), in local room, beside its
 * uncached decode block. C (A's prefix) hits 3 blocks (all but its last
 * token's), all on the tier: they come back over the link and C's first
 * step waits for the copy of 3 blocks. C's 3 fetched blocks and its last
 * prompt block take the free block and 3 of B's (demoted: the tier holds
 * 1 + 3), its decode block one more (1 + 4 = 5 on the tier). gpu1 then
 * takes its slices back: the tier's 5 blocks are dropped at the next
 * scheduling (D's), and D hits C's 3, local. */
static void test_prefix_tier(void) {
  static const guint64 ids[] = {1, 2, 3, 4};
  const EmaRequestRecord records[] = {{EMA_MS(1), 64, 2, 0, 4, 16, ids},
                                      {EMA_MS(100), 112, 4, 1, 0, 0, NULL},
                                      {EMA_MS(200), 64, 2, 2, 4, 16, ids},
                                      {EMA_MS(400), 64, 2, 3, 4, 16, ids}};
  Bench *b = bench_new(NULL);
  TierLog log = {g_array_new(FALSE, FALSE, sizeof(EmaPoolEvent)),
                 g_array_new(FALSE, FALSE, sizeof(EmaStepReport))};
  EmaEngineConfig config = {.max_num_seqs = 16,
                            .max_num_batched_tokens = 4096,
                            .preempt = EMA_PREEMPT_RECOMPUTE,
                            .block_bytes = b->block_bytes,
                            .prefix_caching = TRUE};
  EmaEngineObserver observers[] = {{on_step, NULL, &b->slots[0]}, {tier_step, NULL, &log}};
  EmaPrefixCacheStats stats;
  const EmaStepReport *first_c = NULL;
  b->borrow = (TestBorrowParams){0, 1, 16, 2, 0, 0};
  b->spec.prefix_tier_remote = TRUE;
  bench_pool(b);
  bench_tenant(b, 0, 8);
  bench_tenant(b, 1, 40);
  bench_start(b);
  ema_pool_set_event_sink(b->pool, tier_sink, &log, 1u << EMA_POOL_EVENT_TIER);
  b->slots[0] = (BenchSlot){b, 0};
  b->engines[0] = ema_engine_new(b->sim, &config, b->memory[0], step_cost, &b->slots[0],
                                 ema_trace_source_new_array(records, G_N_ELEMENTS(records)));
  for (guint i = 0; i < G_N_ELEMENTS(observers); i++)
    ema_engine_add_observer(b->engines[0], &observers[i]);
  ema_pool_set_engine(b->pool, 0, b->engines[0]);
  ema_engine_start(b->engines[0]);
  bench_borrow(b, 16, 0);
  bench_to(b, EMA_MS(199));
  stats = ema_engine_prefix_cache_stats(b->engines[0]);
  g_assert_cmpuint(ema_engine_completed(b->engines[0]), ==, 2);
  g_assert_cmpuint(stats.demoted, ==, 4);
  g_assert_cmpuint(stats.remote_blocks, ==, 4);
  assert_tier_event(&log, 0, 3, "prefix tier: 3 cached blocks demoted to gpu1");
  assert_tier_event(&log, 1, 1, "prefix tier: 1 cached blocks demoted to gpu1");
  bench_to(b, EMA_MS(300));
  stats = ema_engine_prefix_cache_stats(b->engines[0]);
  g_assert_cmpuint(stats.hit_tokens, ==, 48);
  g_assert_cmpuint(stats.remote_hit_tokens, ==, 48);
  g_assert_cmpuint(stats.fetched, ==, 3);
  g_assert_cmpuint(stats.remote_blocks, ==, 5);
  g_assert_cmpuint(stats.demoted, ==, 8);
  assert_tier_event(&log, 2, 3, "prefix tier: 3 cached blocks fetched from gpu1 for a hit");
  assert_tier_event(&log, 3, 3, "prefix tier: 3 cached blocks demoted to gpu1");
  assert_tier_event(&log, 4, 1, "prefix tier: 1 cached blocks demoted to gpu1");
  g_assert_cmpfloat_with_epsilon(g_array_index(log.events, EmaPoolEvent, 2).seconds,
                                 link_copy_s(b, 3), 1e-12);
  for (guint i = 0; i < log.steps->len && first_c == NULL; i++)
    if (g_array_index(log.steps, EmaStepReport, i).start == EMA_MS(200))
      first_c = &g_array_index(log.steps, EmaStepReport, i);
  g_assert_nonnull(first_c);
  g_assert_cmpint(first_c->duration - first_c->gpu_time - first_c->cpu_time, ==,
                  ns(link_copy_s(b, 3)));
  /* the lender takes everything back: the tier's room goes */
  ema_pool_reclaim_everything(b->pool, 1);
  bench_to(b, EMA_MS(500));
  stats = ema_engine_prefix_cache_stats(b->engines[0]);
  g_assert_cmpuint(stats.remote_blocks, ==, 0);
  g_assert_cmpuint(stats.fetched, ==, 3);
  g_assert_cmpuint(stats.hit_tokens, ==, 96);
  assert_tier_event(&log, 5, 0, "prefix tier: 5 cached blocks on peers dropped");
  g_assert_cmpuint(log.events->len, ==, 6);
  finish(b, 4);
  g_array_unref(log.events);
  g_array_unref(log.steps);
  bench_free(b);
}

int main(int argc, char **argv) {
  g_test_init(&argc, &argv, NULL);
  test_policies_register();
  g_test_add_func("/pool/ledger/borrow-timing", test_borrow_timing);
  g_test_add_func("/pool/ledger/borrow-cut", test_borrow_cut);
  g_test_add_func("/pool/ledger/take-order", test_take_order);
  g_test_add_func("/pool/ledger/return", test_return);
  g_test_add_func("/pool/ledger/remote-limit", test_remote_limit);
  g_test_add_func("/pool/ledger/room-limit", test_room_limit);
  g_test_add_func("/pool/ledger/plan-nan", test_plan_nan);
  g_test_add_func("/pool/ledger/serving-custom", test_serving_custom);
  g_test_add_func("/pool/ledger/free-in-flight", test_free_in_flight);
  g_test_add_func("/pool/ledger/parked-staging", test_parked_staging);
  g_test_add_func("/pool/ledger/parked-estimate", test_parked_estimate);
  g_test_add_func("/pool/step/hidden", test_step_hidden);
  g_test_add_func("/pool/step/exposed", test_step_exposed);
  g_test_add_func("/pool/step/direct", test_step_direct);
  g_test_add_func("/pool/step/interference", test_step_interference);
  g_test_add_func("/pool/step/shared-lender", test_step_shared_lender);
  g_test_add_func("/pool/step/two-lenders", test_step_two_lenders);
  g_test_add_func("/pool/lend-limit-view", test_lend_limit_view);
  g_test_add_func("/pool/tp/borrow", test_tp_borrow);
  g_test_add_func("/pool/tp/step-direct", test_tp_step_direct);
  g_test_add_func("/pool/tp/step-switch", test_tp_step_switch);
  g_test_add_func("/pool/tp/prefetch", test_tp_prefetch);
  g_test_add_func("/pool/tp/offload", test_tp_offload);
  g_test_add_func("/pool/tp/lender-offload", test_tp_lender_offload);
  g_test_add_data_func("/pool/tp/serving/ema", "ema", test_tp_serving);
  g_test_add_data_func("/pool/tp/serving/offload", "offload", test_tp_serving);
  g_test_add_data_func("/pool/tp/serving/remote-direct", "remote-direct", test_tp_serving);
  g_test_add_func("/pool/tp/serving/ema-place", test_tp_serving_place);
  g_test_add_func("/pool/step/offload", test_step_offload);
  g_test_add_func("/pool/step/offload-timeslice", test_step_offload_timeslice);
  g_test_add_func("/pool/step/offload-queue", test_step_offload_queue);
  g_test_add_func("/pool/step/offload-draw", test_step_offload_draw);
  g_test_add_func("/pool/step/offload-one-long", test_step_offload_one_long);
  g_test_add_func("/pool/step/offload-read", test_step_offload_read);
  g_test_add_func("/pool/step/offload-capped", test_step_offload_capped);
  g_test_add_func("/pool/step/offload-capped-unused", test_step_offload_capped_unused);
  g_test_add_func("/pool/step/parked-interference", test_parked_interference);
  g_test_add_func("/pool/step/layer-overhead", test_step_layer_overhead);
  g_test_add_func("/pool/give/proportional", test_give_proportional);
  g_test_add_func("/pool/give/drop-attribution", test_drop_attribution);
  g_test_add_func("/pool/reclaim/to-borrower", test_reclaim_to_borrower);
  g_test_add_func("/pool/reclaim/to-peer", test_reclaim_to_peer);
  g_test_add_func("/pool/reclaim/to-host", test_reclaim_to_host);
  g_test_add_func("/pool/reclaim/drop", test_reclaim_drop);
  g_test_add_func("/pool/reclaim/fallback", test_reclaim_fallback);
  g_test_add_func("/pool/prefix-tier", test_prefix_tier);
  return g_test_run();
}
