/* test-realpool.c: the pool of `ema-validate pool` (libema's pool over validate/poolmem.c)
 * without a GPU, over the recording backend (validate/poolfake.c) that
 * emulates CUDA virtual memory: plans beyond what the ledger can honour
 * are cut (and counted); a reclaim unmaps and releases exactly the slices
 * that were mapped for it, the last ones lent; a failure in the middle of a
 * borrow, a map, an access grant, a copy or a range's growth is undone (no
 * handle, mapping or reservation left, the ledger as before); blocks moved
 * by a reclaim (to the borrower, to another peer, to host) carry their data
 * and are read back; blocks that straddle slices are copied in pieces; the
 * built-in compositions and an external plugin run the whole `pool`
 * scenario with the ledger checked after every tick, and the end of the run
 * leaves nothing alive and the devices' memory as it was. */
#include <math.h>
#include <string.h>

#include "ema/run/experiment.h"
#include "ema/hw/hwmodel.h"
#include "ema/hw/llm.h"
#include "ema/pool/registry.h"
#include "errors.h"
#include "fill.h"
#include "poolfake.h"
#include "poolmem.h"
#include "testutil.h"

#define SLICE EMA_SLICE_BYTES
#define MS (1000 * 1000)

/* ---- test policies ---------------------------------------------------------- */

/* `test-greedy`: a GPU that lacks blocks asks the next GPU for a billion
 * slices, and a GPU that does not exist for five; an idle one returns a
 * billion slices to everyone. */
static void greedy_decide(gpointer state, gconstpointer params, const EmaPoolView *view,
                          guint borrower, EmaBorrowPlan *plan) {
  const EmaGpuView *g = &view->gpus[borrower];
  if (g->blocks_short > 0) {
    plan->actions[plan->n++] = (EmaBorrowAction){(borrower + 1) % view->n_gpus, 1000000000};
    plan->actions[plan->n++] = (EmaBorrowAction){99, 5};
  } else if (g->blocks_used == 0) {
    for (guint j = 0; j < view->n_gpus; j++)
      plan->actions[plan->n++] = (EmaBorrowAction){j, -1000000000};
  }
}

static const EmaBorrowPolicyOps greedy = {
    .abi_version = EMA_POLICY_ABI_VERSION,
    .name = "test-greedy",
    .summary = "asks for far more than there is",
    .decide = greedy_decide,
};

typedef struct {
  gint64 target, target_gpu;
} VacateParams;

static const EmaParam vacate_param_list[] = {
    {"target", EMA_PARAM_INT, G_STRUCT_OFFSET(VacateParams, target), .default_value = "0", .min = 0,
     .max = 3, .help = "EmaVacateTarget"},
    {"target_gpu", EMA_PARAM_INT, G_STRUCT_OFFSET(VacateParams, target_gpu), .default_value = "0",
     .min = 0, .max = 1000, .help = "for a peer target"},
};

static const EmaParamTable vacate_params = {"test-vacate", sizeof(VacateParams), vacate_param_list,
                                            EMA_PARAMS_N(vacate_param_list), NULL};

/* `test-vacate`: a lender that lacks memory takes back a billion slices
 * from every borrower, the data going to TARGET, and one slice from a GPU
 * that does not exist. */
static void vacate_decide(gpointer state, gconstpointer params, const EmaPoolView *view,
                          guint lender, guint64 needed, EmaReclaimPlan *plan) {
  const VacateParams *p = params;
  if (needed == 0)
    return;
  for (guint b = 0; b < view->n_gpus; b++)
    if (view->lent[lender * view->n_gpus + b] > 0)
      plan->actions[plan->n++] =
          (EmaReclaimAction){b, 1000000000, (EmaVacateTarget) p->target, (guint) p->target_gpu};
  plan->actions[plan->n++] = (EmaReclaimAction){99, 1, EMA_VACATE_DROP, 0};
}

static const EmaReclaimPolicyOps vacate = {
    .abi_version = EMA_POLICY_ABI_VERSION,
    .name = "test-vacate",
    .summary = "takes everything back",
    .params = &vacate_params,
    .decide = vacate_decide,
};

static const EmaBorrowPolicyOps *const test_borrow[] = {&greedy, NULL};
static const EmaReclaimPolicyOps *const test_reclaim[] = {&vacate, NULL};
static const EmaPolicyModule test_module = {EMA_POLICY_ABI_VERSION, test_borrow, NULL,
                                            test_reclaim};

/* ---- a rig: a ledger over the fake backend ---------------------------------------- */

typedef struct {
  guint n;
  EmaFakeBackend *fake;
  EmaPolicySpec spec;
  EmaServerSpec *server;
  EmaLlmSpec *llm;
  EmaStepModel *model;
  EmaPoolMem *ledger;
  guint64 block_bytes;
  EmaTime now;
} Rig;

/* N GPUs; REGIONS[i] slices (0: no tenant; G_MAXUINT64 - X: an idle GPU of
 * X slices is not needed here); MODEL NULL: blocks of one slice and no
 * prefetch decisions. */
static void rig_init(Rig *r, guint n, const char *policy, const guint64 *regions,
                     const gboolean *idle, const char *model) {
  GError *error = NULL;
  EmaPoolMemConfig config = {0};
  memset(r, 0, sizeof *r);
  r->n = n;
  r->fake = ema_fake_backend_new(n, 0);
  g_assert_true(ema_pool_mem_policy_parse(policy, &r->spec, &error));
  g_assert_no_error(error);
  r->server = ema_server_load("h200x2", &error);
  g_assert_no_error(error);
  r->block_bytes = SLICE;
  if (model) {
    r->llm = ema_llm_load(model, &error);
    g_assert_no_error(error);
    r->model = ema_step_model_new(r->llm, r->server, 1, &error);
    g_assert_no_error(error);
    r->block_bytes = (guint64) llround(ema_step_model_kv_bytes_per_token_per_gpu(r->model) * 16);
  }
  config.n_gpus = n;
  config.server = r->server;
  config.policy = &r->spec;
  config.device = ema_fake_backend_ops();
  config.device_data = r->fake;
  config.grow_slices = 16;
  config.write_blocks = TRUE;
  r->ledger = ema_pool_mem_new(&config, &error);
  g_assert_no_error(error);
  for (guint i = 0; i < n; i++) {
    if (idle && idle[i])
      ema_pool_mem_add_idle_gpu(r->ledger, i, regions[i]);
    else if (regions[i] > 0)
      ema_pool_mem_add_tenant(r->ledger, i, regions[i], r->block_bytes, r->model);
  }
  g_assert_true(ema_pool_mem_start(r->ledger, 0, &error));
  g_assert_no_error(error);
}

static void rig_clear(Rig *r) {
  EmaPoolMemLive live;
  ema_pool_mem_free(r->ledger);
  live = ema_fake_backend_live(r->fake);
  /* freeing the ledger releases whatever it still held */
  g_assert_cmpuint(live.handles, ==, 0);
  g_assert_cmpuint(live.mappings, ==, 0);
  g_assert_cmpuint(live.reservations, ==, 0);
  ema_fake_backend_free(r->fake);
  ema_params_clear(&ema_policy_spec_params, &r->spec);
  ema_server_free(r->server);
  if (r->model)
    ema_step_model_free(r->model);
  if (r->llm)
    ema_llm_free(r->llm);
}

static void assert_consistent(Rig *r) {
  GError *error = NULL;
  EmaPoolMemLive ledger = ema_pool_mem_live(r->ledger), fake = ema_fake_backend_live(r->fake);
  if (!ema_pool_mem_check(r->ledger, &error))
    g_error("ledger: %s", error->message);
  g_assert_cmpuint(ledger.handles, ==, fake.handles);
  g_assert_cmpuint(ledger.mappings, ==, fake.mappings);
  g_assert_cmpuint(ledger.reservations, ==, fake.reservations);
}

/* One tick 50 ms after the last; TARGETS per GPU. */
static void rig_tick(Rig *r, const guint64 *targets) {
  GError *error = NULL;
  r->now += 50 * MS;
  if (!ema_pool_mem_tick(r->ledger, r->now, targets, &error))
    g_error("tick at %.2f s: %s", (double) r->now / 1e9, error->message);
  assert_consistent(r);
}

/* A tick that must fail with an error containing PART. */
static void rig_tick_fails(Rig *r, const guint64 *targets, const char *part) {
  GError *error = NULL;
  r->now += 50 * MS;
  g_assert_false(ema_pool_mem_tick(r->ledger, r->now, targets, &error));
  g_assert_nonnull(error);
  ema_test_assert_contains(error->message, part);
  g_error_free(error);
}

static void rig_drain(Rig *r) {
  GError *error = NULL;
  EmaPoolMemLive live;
  if (!ema_pool_mem_drain(r->ledger, &error))
    g_error("drain: %s", error->message);
  assert_consistent(r);
  live = ema_fake_backend_live(r->fake);
  g_assert_cmpuint(live.handles, ==, 0);
  g_assert_cmpuint(live.mappings, ==, 0);
  g_assert_cmpuint(live.reservations, ==, 0);
  for (guint d = 0; d < r->n; d++)
    g_assert_cmpuint(ema_fake_backend_free_bytes(r->fake, d), ==, G_MAXUINT64);
}

/* "map gpu0 0x... hN" lines of LOG from GPU's range: their handles, in order. */
static GArray *handles_in_log(const char *log, const char *verb, guint gpu) {
  GArray *handles = g_array_new(FALSE, FALSE, sizeof(guint64));
  g_auto(GStrv) lines = g_strsplit(log, "\n", -1);
  g_autofree char *prefix = g_strdup_printf("%s gpu%u ", verb, gpu);
  for (guint i = 0; lines[i]; i++) {
    const char *h;
    guint64 handle;
    if (!g_str_has_prefix(lines[i], prefix) || (h = strrchr(lines[i], 'h')) == NULL)
      continue;
    handle = g_ascii_strtoull(h + 1, NULL, 10);
    g_array_append_val(handles, handle);
  }
  return handles;
}

/* ---- tests -------------------------------------------------------------------- */

static void test_policy_parse(void) {
  EmaPolicySpec spec;
  GError *error = NULL;
  g_assert_true(ema_pool_mem_policy_parse("ema", &spec, &error));
  g_assert_cmpstr(spec.name, ==, "ema");
  g_assert_cmpstr(spec.borrow, ==, "most-idle");
  g_assert_cmpstr(spec.prefetch, ==, "offload");
  g_assert_cmpstr(spec.reclaim, ==, "migrate");
  ema_params_clear(&ema_policy_spec_params, &spec);
  g_assert_true(ema_pool_mem_policy_parse("{borrow: on-demand, reclaim: migrate}", &spec, &error));
  g_assert_cmpstr(spec.name, ==, "custom");
  g_assert_cmpstr(spec.borrow, ==, "on-demand");
  g_assert_cmpstr(spec.prefetch, ==, "direct");
  ema_params_clear(&ema_policy_spec_params, &spec);
  g_assert_false(ema_pool_mem_policy_parse("sideways", &spec, &error));
  ema_test_assert_contains(error->message, "sideways");
  g_clear_error(&error);
  g_assert_false(ema_pool_mem_policy_parse("{borrow: sideways}", &spec, &error));
  ema_test_assert_contains(error->message, "unknown borrow policy 'sideways'");
  g_clear_error(&error);
  /* an empty --policy names none (it ran a 'custom' policy of every default) */
  g_assert_false(ema_pool_mem_policy_parse(" ", &spec, &error));
  g_assert_cmpstr(error->message, ==, "--policy: a composition's name or a map of policies");
  g_clear_error(&error);
}

static void test_fill_seed(void) {
  const guint64 seeds[] = {1000, 1001, G_GUINT64_CONSTANT(123456789012345)};
  const guint64 indexes[] = {0, 1, 8, 1048568, G_GUINT64_CONSTANT(1) << 40};
  for (guint s = 0; s < G_N_ELEMENTS(seeds); s++)
    for (guint k = 0; k < G_N_ELEMENTS(indexes); k++) {
      guint64 moved = ema_pool_mem_fill_seed(seeds[s], indexes[k]);
      for (guint64 i = 0; i < 64; i++)
        g_assert_cmpuint(ema_fill_bf16(moved, i), ==, ema_fill_bf16(seeds[s], indexes[k] + i));
    }
}

static void test_scenario_targets(void) {
  EmaPoolScenario s = {20, {1000, 4000}};
  g_assert_cmpuint(ema_pool_scenario_target(&s, 0, 0), ==, 500);
  g_assert_cmpuint(ema_pool_scenario_target(&s, 0, 5), ==, 1500); /* mid-ramp */
  g_assert_cmpuint(ema_pool_scenario_target(&s, 0, 9), ==, 2500);
  g_assert_cmpuint(ema_pool_scenario_target(&s, 0, 12), ==, 700);
  g_assert_cmpuint(ema_pool_scenario_target(&s, 0, 17), ==, 1500);
  g_assert_cmpuint(ema_pool_scenario_target(&s, 0, 19), ==, 200);
  g_assert_cmpuint(ema_pool_scenario_target(&s, 1, 11.9), ==, 400);
  g_assert_cmpuint(ema_pool_scenario_target(&s, 1, 12), ==, 4000);
  g_assert_cmpuint(ema_pool_scenario_target(&s, 1, 16), ==, 400);
  g_assert_cmpstr(ema_pool_scenario_phase(&s, 0), ==, "warm");
  g_assert_cmpstr(ema_pool_scenario_phase(&s, 13), ==, "jump");
  g_assert_cmpstr(ema_pool_scenario_phase(&s, 17), ==, "regrow");
  g_assert_cmpstr(ema_pool_scenario_phase(&s, 19.9), ==, "end");
}

/* GPU0 (64 slices) wants 200 blocks of one slice; GPU1 (128) holds 10. */
static const guint64 cut_regions[] = {64, 128};

static void setup_greedy_borrow(Rig *r, const char *reclaim) {
  const guint64 targets[] = {200, 10};
  g_autofree char *policy = g_strdup_printf("{borrow: test-greedy, reclaim: %s}", reclaim);
  rig_init(r, 2, policy, cut_regions, NULL, NULL);
  rig_tick(r, targets);
}

static void test_borrow_cut(void) {
  Rig r;
  const EmaPoolCoreStats *stats;
  const EmaPoolView *view;
  setup_greedy_borrow(&r, "drop");
  stats = ema_pool_mem_stats(r.ledger);
  /* a billion asked, 118 lendable (128 - 10 in use); the GPU that does not
   * exist is refused: two cuts */
  g_assert_cmpuint(ema_pool_mem_slices_lent(r.ledger, 1), ==, 118);
  g_assert_cmpuint(ema_pool_mem_slices_borrowed(r.ledger, 0), ==, 118);
  g_assert_cmpuint(stats->borrows, ==, 1);
  g_assert_cmpuint(stats->plans_adjusted, ==, 2);
  g_assert_cmpuint(ema_pool_mem_blocks_used(r.ledger, 0), ==, 182);
  g_assert_cmpuint(ema_pool_mem_blocks_remote(r.ledger, 0), ==, 118);
  g_assert_cmpuint(ema_pool_mem_blocks_short(r.ledger, 0), ==, 18);
  /* handles: 118 lent, 64 + 10 own */
  g_assert_cmpuint(ema_fake_backend_live(r.fake).handles, ==, 118 + 64 + 10);
  g_assert_cmpuint(ema_fake_backend_free_bytes(r.fake, 1), ==, G_MAXUINT64 - 128 * SLICE);
  /* the views, as sim/pool/pool.c builds them */
  view = ema_pool_mem_view(r.ledger);
  g_assert_cmpuint(view->n_gpus, ==, 2);
  g_assert_cmpuint(view->lent[1 * 2 + 0], ==, 118);
  g_assert_cmpuint(view->remote_blocks[0 * 2 + 1], ==, 118);
  g_assert_cmpuint(view->gpus[1].slices_lent, ==, 118);
  g_assert_cmpuint(view->gpus[1].slices_used, ==, 10);
  g_assert_cmpuint(view->gpus[0].slices_borrowed, ==, 118);
  g_assert_cmpuint(view->gpus[0].slices_borrowed_used, ==, 118);
  g_assert_cmpuint(view->gpus[0].blocks_total, ==, 64 + 118);
  g_assert_cmpuint(view->gpus[0].blocks_used, ==, 182);
  g_assert_cmpuint(view->gpus[0].slices_pending, ==, 0);
  g_assert_cmpuint(ema_pool_view_lendable(view, 1, 0), ==, 0);
  /* asking again: nothing left to lend, cut to zero */
  {
    const guint64 targets[] = {200, 10};
    rig_tick(&r, targets);
  }
  g_assert_cmpuint(stats->borrows, ==, 1);
  g_assert_cmpuint(stats->plans_adjusted, ==, 4);
  rig_drain(&r);
  rig_clear(&r);
}

static void test_reclaim_releases_exactly(void) {
  Rig r;
  const guint64 targets[] = {200, 100};
  g_autoptr(GArray) mapped = NULL, unmapped = NULL, released = NULL;
  const EmaPoolCoreStats *stats;
  rig_init(&r, 2, "{borrow: test-greedy, reclaim: drop}", cut_regions, NULL, NULL);
  ema_fake_backend_record(r.fake, TRUE);
  {
    const guint64 first[] = {200, 10};
    rig_tick(&r, first);
  }
  mapped = handles_in_log(ema_fake_backend_log(r.fake), "map", 0);
  g_assert_cmpuint(mapped->len, ==, 64 + 118); /* own slices, then the borrowed ones */
  ema_fake_backend_clear_log(r.fake);
  /* GPU1 now wants 100 of its 128 slices: it lacks 90, and `drop` takes
   * exactly those back */
  rig_tick(&r, targets);
  stats = ema_pool_mem_stats(r.ledger);
  g_assert_cmpuint(stats->reclaims, ==, 1);
  g_assert_cmpuint(stats->slices_reclaimed, ==, 90);
  g_assert_cmpuint(stats->blocks_dropped, ==, 90);
  g_assert_cmpuint(ema_pool_mem_slices_lent(r.ledger, 1), ==, 28);
  g_assert_cmpuint(ema_pool_mem_blocks_used(r.ledger, 1), ==, 100);
  unmapped = handles_in_log(ema_fake_backend_log(r.fake), "unmap", 0);
  released = handles_in_log(ema_fake_backend_log(r.fake), "release", 1);
  g_assert_cmpuint(unmapped->len, ==, 90);
  g_assert_cmpuint(released->len, ==, 90);
  /* the last 90 slices lent, each unmapped and then released */
  for (guint i = 0; i < 90; i++) {
    guint64 handle = g_array_index(mapped, guint64, mapped->len - 1 - i);
    g_assert_cmpuint(g_array_index(unmapped, guint64, i), ==, handle);
    g_assert_cmpuint(g_array_index(released, guint64, i), ==, handle);
  }
  g_assert_cmpuint(ema_fake_backend_live(r.fake).handles, ==, 28 + 64 + 100);
  rig_drain(&r);
  rig_clear(&r);
}

/* A borrow whose OP fails at its NTH call: nothing of it stays. */
static void borrow_fails(EmaFakeOp op, guint64 nth, const char *part) {
  Rig r;
  const guint64 targets[] = {200, 10};
  EmaPoolMemLive before;
  rig_init(&r, 2, "{borrow: test-greedy, reclaim: drop}", cut_regions, NULL, NULL);
  {
    const guint64 first[] = {64, 10}; /* own slices mapped first */
    rig_tick(&r, first);
  }
  before = ema_fake_backend_live(r.fake);
  ema_fake_backend_fail(r.fake, op, nth);
  rig_tick_fails(&r, targets, part);
  assert_consistent(&r);
  g_assert_cmpuint(ema_pool_mem_slices_lent(r.ledger, 1), ==, 0);
  g_assert_cmpuint(ema_fake_backend_live(r.fake).handles, ==, before.handles);
  g_assert_cmpuint(ema_fake_backend_live(r.fake).mappings, ==, before.mappings);
  /* a range that grew for the borrow stays reserved, empty, for the next */
  g_assert_cmpuint(ema_pool_mem_stats(r.ledger)->borrows, ==, 0);
  /* the run could go on: the same borrow now succeeds */
  rig_tick(&r, targets);
  g_assert_cmpuint(ema_pool_mem_slices_lent(r.ledger, 1), ==, 118);
  rig_drain(&r);
  rig_clear(&r);
}

static void test_borrow_failure_unwinds(void) {
  borrow_fails(EMA_FAKE_CREATE, 50, "fake create: injected");
  borrow_fails(EMA_FAKE_CREATE, 1, "fake create: injected");
  borrow_fails(EMA_FAKE_MAP, 30, "fake map: injected");
  borrow_fails(EMA_FAKE_MAP, 118, "fake map: injected");
  borrow_fails(EMA_FAKE_SET_ACCESS, 1, "fake set_access: injected");
  borrow_fails(EMA_FAKE_RESERVE, 1, "fake reserve: injected");
}

static void test_unmap_failure_is_retried(void) {
  Rig r;
  GError *error = NULL;
  EmaPoolMemLive live;
  setup_greedy_borrow(&r, "drop");
  /* an unmap that fails during a reclaim: the error stops the run, the
   * slice stays on the retired list (the ledger says so), and the teardown
   * releases it */
  ema_fake_backend_fail(r.fake, EMA_FAKE_UNMAP, 3);
  {
    const guint64 targets[] = {200, 100};
    rig_tick_fails(&r, targets, "fake unmap: injected");
  }
  assert_consistent(&r);
  g_assert_true(ema_pool_mem_teardown(r.ledger, &error));
  g_assert_no_error(error);
  live = ema_fake_backend_live(r.fake);
  g_assert_cmpuint(live.handles, ==, 0);
  g_assert_cmpuint(live.mappings, ==, 0);
  g_assert_cmpuint(live.reservations, ==, 0);
  rig_clear(&r);
}

/* GPU0 (64) borrows 118 of GPU1's 128 for 182 blocks, then needs only 100
 * (local 36 freed: proportional give keeps 64 x 100/182 local); GPU1 then
 * wants 100: test-vacate takes all 118 back with the data going to TARGET. */
static void vacate_rig(Rig *r, const char *target, guint n) {
  g_autofree char *policy =
      g_strdup_printf("{borrow: test-greedy, reclaim: test-vacate, reclaim_params: %s}", target);
  const guint64 regions[] = {64, 128, 256};
  const gboolean idle[] = {FALSE, FALSE, TRUE};
  rig_init(r, n, policy, regions, idle, NULL);
  {
    const guint64 first[] = {200, 10, 0};
    const guint64 fewer[] = {100, 10, 0};
    rig_tick(r, first);
    rig_tick(r, fewer);
  }
}

static void test_reclaim_migrates_to_borrower(void) {
  Rig r;
  vacate_rig(&r, "{target: 0}", 2);
  const guint64 jump[] = {100, 100};
  const EmaPoolCoreStats *stats = ema_pool_mem_stats(r.ledger);
  guint64 remote = ema_pool_mem_blocks_remote(r.ledger, 0);
  guint64 local = ema_pool_mem_blocks_used(r.ledger, 0) - remote;
  guint64 room = 64 - local;
  g_assert_cmpuint(remote, >, room); /* not all of it fits */
  rig_tick(&r, jump);
  g_assert_cmpuint(ema_pool_mem_slices_lent(r.ledger, 1), ==, 0);
  g_assert_cmpuint(stats->blocks_migrated, ==, room);
  g_assert_cmpuint(stats->blocks_dropped, ==, remote - room);
  g_assert_cmpuint(stats->blocks_checked, ==, 2); /* the first and the last moved */
  g_assert_cmpuint(stats->plans_adjusted, >=, 3); /* the billion, the bad GPU, the partial move */
  g_assert_cmpuint(ema_pool_mem_blocks_used(r.ledger, 0), ==, 64);
  g_assert_cmpuint(ema_fake_backend_calls(r.fake, EMA_FAKE_COPY), ==, room);
  rig_drain(&r);
  rig_clear(&r);
}

static void test_reclaim_copy_failure(void) {
  Rig r;
  vacate_rig(&r, "{target: 0}", 2);
  const guint64 jump[] = {100, 100};
  EmaPoolMemLive before = ema_fake_backend_live(r.fake);
  guint64 lent = ema_pool_mem_slices_lent(r.ledger, 1);
  guint64 remote = ema_pool_mem_blocks_remote(r.ledger, 0);
  /* GPU1 takes its free slices first, then the copy fails: the data stays
   * on GPU1, the borrower's new own slices go */
  ema_fake_backend_fail(r.fake, EMA_FAKE_COPY, 5);
  rig_tick_fails(&r, jump, "fake copy: injected");
  assert_consistent(&r);
  g_assert_cmpuint(ema_pool_mem_slices_lent(r.ledger, 1), ==, lent);
  g_assert_cmpuint(ema_pool_mem_blocks_remote(r.ledger, 0), ==, remote);
  g_assert_cmpuint(ema_fake_backend_live(r.fake).mappings, >=, before.mappings);
  g_assert_cmpuint(ema_pool_mem_own_mapped(r.ledger, 0), ==,
                   ema_pool_mem_blocks_used(r.ledger, 0) - remote);
  rig_drain(&r);
  rig_clear(&r);
}

static void test_reclaim_to_peer(void) {
  /* three GPUs: GPU2 idle; the data moves to slices GPU2 lends GPU0 */
  Rig r;
  vacate_rig(&r, "{target: 1, target_gpu: 2}", 3);
  const guint64 jump[] = {100, 100, 0};
  const EmaPoolCoreStats *stats = ema_pool_mem_stats(r.ledger);
  guint64 remote = ema_pool_mem_blocks_remote(r.ledger, 0);
  rig_tick(&r, jump);
  g_assert_cmpuint(ema_pool_mem_slices_lent(r.ledger, 1), ==, 0);
  /* (GPU1, short itself, then borrows the rest of GPU2 with test-greedy) */
  g_assert_cmpuint(ema_pool_mem_view(r.ledger)->lent[2 * 3 + 0], ==, remote);
  g_assert_cmpuint(stats->blocks_migrated, ==, remote);
  g_assert_cmpuint(stats->blocks_checked, ==, 2);
  g_assert_cmpuint(ema_pool_mem_blocks_remote(r.ledger, 0), ==, remote);
  rig_drain(&r);
  rig_clear(&r);
}

static void test_reclaim_to_host_and_drop(void) {
  for (guint target = 2; target <= 3; target++) {
    g_autofree char *params = g_strdup_printf("{target: %u}", target);
    Rig r;
    vacate_rig(&r, params, 2);
    const guint64 jump[] = {100, 100};
    const EmaPoolCoreStats *stats = ema_pool_mem_stats(r.ledger);
    guint64 remote = ema_pool_mem_blocks_remote(r.ledger, 0);
    rig_tick(&r, jump);
    g_assert_cmpuint(ema_pool_mem_slices_lent(r.ledger, 1), ==, 0);
    if (target == 2) {
      g_assert_cmpuint(stats->blocks_to_host, ==, remote);
      g_assert_cmpuint(ema_fake_backend_host_bytes(r.fake), ==, remote * SLICE);
    } else {
      g_assert_cmpuint(stats->blocks_dropped, ==, remote);
      g_assert_cmpuint(ema_fake_backend_calls(r.fake, EMA_FAKE_TO_HOST), ==, 0);
    }
    rig_drain(&r);
    rig_clear(&r);
  }
}

static void test_range_grows(void) {
  for (guint ignore = 0; ignore <= 1; ignore++) {
    Rig r;
    guint64 slots = 0;
    guint segments;
    guint64 reserves;
    rig_init(&r, 2, "{borrow: on-demand, reclaim: drop}", cut_regions, NULL, NULL);
    ema_fake_backend_ignore_hints(r.fake, ignore);
    /* borrow in steps of 20 slices (the range grows by 16 slots or half) */
    for (guint64 want = 74; want <= 200; want += 20) {
      const guint64 targets[] = {want, 10};
      rig_tick(&r, targets);
    }
    segments = ema_pool_mem_segments(r.ledger, 0, &slots);
    g_assert_cmpuint(segments, >, 1);
    g_assert_cmpuint(slots, >=, 118);
    g_assert_cmpuint(ema_pool_mem_slices_lent(r.ledger, 1), ==, 118);
    reserves = ema_fake_backend_calls(r.fake, EMA_FAKE_RESERVE);
    g_assert_cmpuint(reserves, ==, 2 + segments); /* the home ranges, the segments */
    rig_drain(&r);
    rig_clear(&r);
  }
}

/* The scenario of `ema-validate pool` with POLICY over MODEL's blocks,
 * regions of R0 and R1 slices, 400 ticks, the ledger checked after each. */
static EmaPoolCoreStats run_scenario(const char *policy, const char *model, guint64 r0,
                                     guint64 r1) {
  Rig r;
  const guint64 regions[] = {r0, r1};
  EmaPoolScenario s = {20, {0, 0}};
  EmaPoolCoreStats stats;
  rig_init(&r, 2, policy, regions, NULL, model);
  s.blocks[0] = r0 * SLICE / r.block_bytes;
  s.blocks[1] = r1 * SLICE / r.block_bytes;
  for (guint k = 0; k < 400; k++) {
    double t = k * 0.05;
    const guint64 targets[] = {ema_pool_scenario_target(&s, 0, t),
                               ema_pool_scenario_target(&s, 1, t)};
    ema_pool_mem_set_last_step(r.ledger, 1, 6 * MS);
    rig_tick(&r, targets);
    if (g_getenv("EMA_TEST_TRACE"))
      g_printerr(
          "%5.2f %-6s gpu0 %5" G_GUINT64_FORMAT " want %5" G_GUINT64_FORMAT
          " remote %5" G_GUINT64_FORMAT " short %5" G_GUINT64_FORMAT " | gpu1 %5" G_GUINT64_FORMAT
          " want %5" G_GUINT64_FORMAT " lent %5" G_GUINT64_FORMAT " short %5" G_GUINT64_FORMAT
          " staging0 %" G_GUINT64_FORMAT "\n",
          t, ema_pool_scenario_phase(&s, t), ema_pool_mem_blocks_used(r.ledger, 0), targets[0],
          ema_pool_mem_blocks_remote(r.ledger, 0), ema_pool_mem_blocks_short(r.ledger, 0),
          ema_pool_mem_blocks_used(r.ledger, 1), targets[1], ema_pool_mem_slices_lent(r.ledger, 1),
          ema_pool_mem_blocks_short(r.ledger, 1), ema_pool_mem_staging(r.ledger, 0));
  }
  if (g_getenv("EMA_TEST_TRACE")) {
    const GArray *events = ema_pool_mem_events(r.ledger);
    for (guint i = 0; i < events->len; i++) {
      const EmaPoolEvent *e = &g_array_index(events, EmaPoolEvent, i);
      if (e->kind == EMA_POOL_EVENT_OWN_MAP || e->kind == EMA_POOL_EVENT_OWN_UNMAP)
        continue;
      g_printerr("event %5.2f %-8s gpu%u peer%u %5" G_GUINT64_FORMAT
                 " slices moved %" G_GUINT64_FORMAT " host %" G_GUINT64_FORMAT
                 " dropped %" G_GUINT64_FORMAT " target %d\n",
                 (double) e->at / 1e9, ema_pool_event_kind_name(e->kind), e->gpu, e->peer,
                 e->slices, e->blocks_moved, e->blocks_to_host, e->blocks_dropped, e->target);
    }
  }
  stats = *ema_pool_mem_stats(r.ledger);
  rig_drain(&r);
  rig_clear(&r);
  return stats;
}

static void test_builtin_compositions(void) {
  g_autoptr(GPtrArray) compositions = ema_policy_registry_list_compositions();
  for (guint i = 0; i < compositions->len; i++) {
    const EmaPolicyComposition *c = compositions->pdata[i];
    EmaPoolCoreStats stats = run_scenario(c->name, "llama-3.1-8b", 256, 1024);
    if (g_test_verbose())
      g_printerr("%s: %" G_GUINT64_FORMAT " borrows, %" G_GUINT64_FORMAT
                 " reclaims, %" G_GUINT64_FORMAT " migrated, %" G_GUINT64_FORMAT
                 " to host, %" G_GUINT64_FORMAT " dropped\n",
                 c->name, stats.borrows, stats.reclaims, stats.blocks_migrated,
                 stats.blocks_to_host, stats.blocks_dropped);
    if (strcmp(c->name, "ema") == 0 || strcmp(c->name, "remote-direct") == 0) {
      g_assert_cmpuint(stats.borrows, >, 0);
      g_assert_cmpuint(stats.reclaims, >, 0);
      g_assert_cmpuint(stats.returns, >, 0);
    }
    if (strcmp(c->name, "ema") == 0)
      g_assert_cmpuint(stats.blocks_migrated, >, 0);
    if (strcmp(c->name, "static") == 0)
      g_assert_cmpuint(stats.borrows, ==, 0);
  }
}

static void test_every_policy_combination(void) {
  g_autoptr(GPtrArray) borrow = ema_policy_registry_list(EMA_POLICY_BORROW);
  g_autoptr(GPtrArray) prefetch = ema_policy_registry_list(EMA_POLICY_PREFETCH);
  g_autoptr(GPtrArray) reclaim = ema_policy_registry_list(EMA_POLICY_RECLAIM);
  for (guint b = 0; b < borrow->len; b++)
    for (guint p = 0; p < prefetch->len; p++)
      for (guint c = 0; c < reclaim->len; c++) {
        const EmaPolicyInfo *bi = borrow->pdata[b], *pi = prefetch->pdata[p],
                            *ci = reclaim->pdata[c];
        g_autofree char *policy = NULL;
        if (!g_str_has_prefix(bi->origin, "built-in") || !g_str_has_prefix(ci->origin, "built-in"))
          continue;
        policy = g_strdup_printf("{borrow: %s, prefetch: %s, reclaim: %s}", bi->name, pi->name,
                                 ci->name);
        run_scenario(policy, "llama-3.1-8b", 64, 256);
      }
}

static void test_straddling_blocks(void) {
  /* Qwen2.5-14B: blocks of 3 MiB straddle the 2 MiB slices */
  EmaPoolCoreStats stats = run_scenario("ema", "qwen2.5-14b", 192, 768);
  g_assert_cmpuint(stats.borrows, >, 0);
  g_assert_cmpuint(stats.blocks_migrated, >, 0);
  g_assert_cmpuint(stats.blocks_checked, >, 0);
  stats = run_scenario("remote-direct", "qwen2.5-14b", 192, 768);
  g_assert_cmpuint(stats.reclaims, >, 0);
}

static void test_plugin(void) {
  const char *path = g_getenv("EMA_TEST_NEIGHBOUR_PLUGIN");
  GError *error = NULL;
  EmaPoolCoreStats stats;
  if (path == NULL || !g_file_test(path, G_FILE_TEST_EXISTS)) {
    g_test_skip("the neighbour plugin was not built");
    return;
  }
  if (ema_policy_registry_find(EMA_POLICY_BORROW, "neighbour", NULL) == NULL) {
    g_assert_true(ema_policy_registry_load_file(path, &error));
    g_assert_no_error(error);
  }
  stats = run_scenario("{borrow: neighbour, prefetch: layer-ahead, reclaim: migrate}",
                       "llama-3.1-8b", 256, 1024);
  g_assert_cmpuint(stats.borrows, >, 0);
  g_assert_cmpuint(stats.reclaims, >, 0);
}

int main(int argc, char **argv) {
  GError *error = NULL;
  g_test_init(&argc, &argv, NULL);
  if (!ema_policy_registry_add_module(&test_module, "test-realpool", &error))
    g_error("test policies: %s", error->message);
  g_test_add_func("/realpool/policy-parse", test_policy_parse);
  g_test_add_func("/realpool/fill-seed", test_fill_seed);
  g_test_add_func("/realpool/scenario-targets", test_scenario_targets);
  g_test_add_func("/realpool/borrow-cut", test_borrow_cut);
  g_test_add_func("/realpool/reclaim-releases-exactly", test_reclaim_releases_exactly);
  g_test_add_func("/realpool/borrow-failure-unwinds", test_borrow_failure_unwinds);
  g_test_add_func("/realpool/unmap-failure-retried", test_unmap_failure_is_retried);
  g_test_add_func("/realpool/reclaim-migrates-to-borrower", test_reclaim_migrates_to_borrower);
  g_test_add_func("/realpool/reclaim-copy-failure", test_reclaim_copy_failure);
  g_test_add_func("/realpool/reclaim-to-peer", test_reclaim_to_peer);
  g_test_add_func("/realpool/reclaim-to-host-and-drop", test_reclaim_to_host_and_drop);
  g_test_add_func("/realpool/range-grows", test_range_grows);
  g_test_add_func("/realpool/builtin-compositions", test_builtin_compositions);
  g_test_add_func("/realpool/every-policy-combination", test_every_policy_combination);
  g_test_add_func("/realpool/straddling-blocks", test_straddling_blocks);
  g_test_add_func("/realpool/plugin", test_plugin);
  return g_test_run();
}
