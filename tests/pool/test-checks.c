/* test-checks.c: the pool's invariants are checked after its actions
 * (sim/pool/core.c): a ledger corrupted on purpose is caught at the next
 * action, fatally, with the action and the broken invariant named; with
 * EMA_POOL_CHECKS=sample the check still comes within
 * EMA_POOL_CHECK_SAMPLE actions, and =off never. The pool here is the
 * mechanism alone over the simulator's cost model, driven by demand
 * targets (ema_pool_core_tick), two tenants of 64 slices, blocks of one
 * slice, GPU0 wanting more than its region; the log's reasons; the view
 * entries and capacities kept between actions, and when a periodic
 * decision is due. */
#include <string.h>

#include "ema/pool/core.h"
#include "ema/pool/pool.h"
#include "ema/pool/registry.h"
#include "ema/run/experiment.h"
#include "testpolicies.h"
#include "testutil.h"

#define MS (1000 * 1000)

typedef struct {
  EmaServerSpec *server;
  EmaPolicySpec spec;
  EmaPoolCore core;
  EmaPoolModel model;
  EmaSliceGpu gpus[2];
  guint64 targets[2];
} Rig;

/* The rig under POLICY (YAML). */
static void rig_init_policy(Rig *r, EmaPoolCheckLevel level, const char *policy) {
  GError *error = NULL;
  g_autoptr(EmaNode) node = ema_node_load_string(policy, "policy", NULL, &error);
  memset(r, 0, sizeof *r);
  g_assert_no_error(error);
  g_assert_true(ema_params_bind(&ema_policy_spec_params, &r->spec, node, "policy", &error));
  r->server = ema_server_load("h200x2", &error);
  g_assert_no_error(error);
  g_assert_true(ema_pool_core_init(&r->core, 2, r->server, &r->spec, ema_pool_model_backend(),
                                   &r->model, &error));
  r->model.server = r->server;
  r->model.ledger = &r->core.ledger;
  r->core.check_level = level;
  for (guint i = 0; i < 2; i++) {
    ema_slice_gpu_setup(&r->gpus[i], i, 2);
    r->gpus[i].present = r->gpus[i].has_tenant = r->gpus[i].shares = TRUE;
    r->gpus[i].slices = 64;
    r->gpus[i].block_bytes = EMA_SLICE_BYTES;
    r->core.ledger.gpus[i] = &r->gpus[i];
  }
  g_assert_true(ema_pool_core_start(&r->core, &error));
  r->targets[0] = 80;
  r->targets[1] = 8;
}

static void rig_init(Rig *r, EmaPoolCheckLevel level) {
  rig_init_policy(r, level, "{borrow: on-demand, reclaim: migrate}");
}

static void rig_ticks(Rig *r, guint n) {
  GError *error = NULL;
  for (guint k = 0; k < n; k++) {
    r->core.now += 50 * MS;
    /* GPU0 alternates between wanting more than its region and less */
    r->targets[0] = r->targets[0] == 80 ? 40 : 80;
    g_assert_true(ema_pool_core_tick(&r->core, r->targets, &error));
    g_assert_no_error(error);
  }
}

static void rig_clear(Rig *r) {
  for (guint i = 0; i < 2; i++)
    ema_slice_gpu_clear(&r->gpus[i]);
  ema_pool_core_clear(&r->core);
  ema_params_clear(&ema_policy_spec_params, &r->spec);
  ema_server_free(r->server);
}

/* A healthy run: it borrows, and every check passes. */
static void test_healthy(void) {
  Rig r;
  rig_init(&r, EMA_POOL_CHECK_ALL);
  rig_ticks(&r, 50);
  g_assert_cmpuint(r.core.stats.borrows, >, 0);
  g_assert_cmpuint(r.gpus[0].borrowed_total, >, 0);
  rig_clear(&r);
}

/* Every action is logged with its reason: GPU0 lacks blocks and borrows
 * from GPU1 under on-demand; when GPU1 wants its memory back, it reclaims
 * them under migrate, lender first. */
static void test_reasons(void) {
  Rig r;
  GError *error = NULL;
  const EmaPoolEvent *borrow = NULL, *reclaim = NULL;
  rig_init(&r, EMA_POOL_CHECK_ALL);
  ema_pool_core_log(&r.core);
  rig_ticks(&r, 2);
  r.targets[1] = 60;
  r.core.now += 50 * MS;
  g_assert_true(ema_pool_core_tick(&r.core, r.targets, &error));
  g_assert_no_error(error);
  for (guint i = 0; i < r.core.events->len; i++) {
    const EmaPoolEvent *e = &g_array_index(r.core.events, EmaPoolEvent, i);
    g_test_message("%s gpu%u peer%u %" G_GUINT64_FORMAT ": %s", ema_pool_event_kind_name(e->kind),
                   e->gpu, e->peer, e->slices, e->reason);
    if (e->kind == EMA_POOL_EVENT_BORROW && borrow == NULL)
      borrow = e;
    if (e->kind == EMA_POOL_EVENT_RECLAIM && reclaim == NULL)
      reclaim = e;
  }
  g_assert_nonnull(borrow);
  /* round 2: 80 blocks wanted in a region of 64, 16 short (one sequence of 2000 tokens) */
  g_assert_cmpstr(borrow->reason, ==,
                  "on-demand: gpu0 short 16 blocks, 1 waiting; asked 16 slices of gpu1");
  g_assert_nonnull(reclaim);
  /* round 3: GPU1 wants 60 of its 64 slices, 16 lent: 12 short; GPU0's own region is full */
  g_assert_cmpstr(reclaim->reason, ==,
                  "migrate: lender gpu1 lacks 12 slices; 12 slices from gpu0, 12 blocks of its KV "
                  "to host");
  rig_clear(&r);
}

/* A plan that asks more than the ledger allows is cut, and says so; one
 * that asks a GPU for its own slices is refused, logged as such. */
static void test_reasons_cut(void) {
  Rig r;
  const EmaPoolEvent *e;
  test_policies_register();
  rig_init_policy(&r, EMA_POOL_CHECK_ALL,
                  "{borrow: test-borrow-n, borrow_params: {borrower: 0, lender: 1, slices: 100, "
                  "lender2: 0, slices2: 5}, reclaim: migrate}");
  ema_pool_core_log(&r.core);
  rig_ticks(&r, 1);
  for (guint i = 0; i < r.core.events->len; i++) {
    e = &g_array_index(r.core.events, EmaPoolEvent, i);
    g_test_message("%s gpu%u peer%u %" G_GUINT64_FORMAT ": %s", ema_pool_event_kind_name(e->kind),
                   e->gpu, e->peer, e->slices, e->reason);
  }
  g_assert_cmpuint(r.core.events->len, ==, 2);
  e = &g_array_index(r.core.events, EmaPoolEvent, 0);
  g_assert_cmpint(e->kind, ==, EMA_POOL_EVENT_BORROW);
  /* GPU1's region of 64 slices holds its 8 blocks of a slice each: 56 to lend */
  g_assert_cmpuint(e->slices, ==, 56);
  g_assert_cmpstr(e->reason, ==,
                  "test-borrow-n: gpu0 short 0 blocks, 0 waiting; asked 100 slices of gpu1; it can "
                  "lend 56");
  e = &g_array_index(r.core.events, EmaPoolEvent, 1);
  g_assert_cmpint(e->kind, ==, EMA_POOL_EVENT_REFUSE);
  g_assert_cmpuint(e->slices, ==, 0);
  g_assert_cmpstr(e->reason, ==,
                  "test-borrow-n: gpu0 short 0 blocks, 0 waiting; asked 5 slices of gpu0; its own");
  g_assert_cmpuint(r.core.stats.plans_adjusted, ==, 2);
  rig_clear(&r);
}

/* The corruptions, run in a subprocess each (the check is fatal). */
static void corrupt_remote(void) {
  Rig r;
  rig_init(&r, EMA_POOL_CHECK_ALL);
  rig_ticks(&r, 3);
  r.gpus[0].remote_total += 1; /* a block counted remote that no lender holds */
  rig_ticks(&r, 1);
}

static void corrupt_region(void) {
  Rig r;
  rig_init(&r, EMA_POOL_CHECK_ALL);
  rig_ticks(&r, 3);
  r.gpus[1].slices = 1; /* GPU1 above its region */
  rig_ticks(&r, 1);
}

static void corrupt_lent(EmaPoolCheckLevel level, guint ticks) {
  Rig r;
  rig_init(&r, level);
  rig_ticks(&r, 3);
  r.core.ledger.lent[1 * 2 + 0] += 1; /* lent != borrowed */
  rig_ticks(&r, ticks);
  rig_clear(&r);
}

/* A field the view reads changed without a touch: the kept entry is out
 * of date (every entry is fresh after the view just built). */
static void corrupt_view(void) {
  Rig r;
  rig_init(&r, EMA_POOL_CHECK_ALL);
  rig_ticks(&r, 3);
  ema_pool_core_view(&r.core);
  r.gpus[1].demand += 1;
  rig_ticks(&r, 1);
}

/* A slice count changed without a refresh: the kept local capacity is wrong. */
static void corrupt_capacity(void) {
  Rig r;
  rig_init(&r, EMA_POOL_CHECK_ALL);
  rig_ticks(&r, 3);
  r.gpus[1].parking += 1;
  rig_ticks(&r, 1);
}

/* GPU1 lends to GPU0, then its lend_limit is cut to nothing without a reclaim: it lends above
 * what its limit lets it. */
static void corrupt_lend_limit(void) {
  Rig r;
  rig_init(&r, EMA_POOL_CHECK_ALL);
  rig_ticks(&r, 3);
  g_assert_cmpuint(r.gpus[1].lent_total, >, 0);
  r.gpus[1].lend_keep = r.gpus[1].slices;
  rig_ticks(&r, 1);
}

/* The subprocess that corrupts WHICH fails with STDERR. */
static void expect_broken(const char *which, const char *stderr_pattern) {
  g_setenv("EMA_TEST_CORRUPT", which, TRUE);
  g_test_trap_subprocess(NULL, 0, G_TEST_SUBPROCESS_DEFAULT);
  g_test_trap_assert_failed();
  g_test_trap_assert_stderr(stderr_pattern);
}

static void test_corrupted(void) {
  if (g_test_subprocess()) {
    const char *which = g_getenv("EMA_TEST_CORRUPT");
    if (strcmp(which, "remote") == 0)
      corrupt_remote();
    else if (strcmp(which, "view") == 0)
      corrupt_view();
    else if (strcmp(which, "capacity") == 0)
      corrupt_capacity();
    else if (strcmp(which, "region") == 0)
      corrupt_region();
    else if (strcmp(which, "lend-limit") == 0)
      corrupt_lend_limit();
    else if (strcmp(which, "lent-sampled") == 0)
      corrupt_lent(EMA_POOL_CHECK_SAMPLED, 2 * EMA_POOL_CHECK_SAMPLE);
    else
      corrupt_lent(EMA_POOL_CHECK_OFF, 2 * EMA_POOL_CHECK_SAMPLE);
    return;
  }
  /* GPU0's first action in a round is its take (or give) */
  expect_broken("remote", "*pool ledger broken after take of gpu0 at 0.200000000 s: gpu0: "
                          "remote blocks per lender add up to * not *");
  expect_broken("region", "*pool ledger broken after * gpu1: * slices in use, lent or reserved, "
                          "above its 1*");
  expect_broken("view", "*pool ledger broken after * gpu1: its view entry is out of date*");
  expect_broken("lend-limit", "*pool ledger broken after * gpu1 lends 8 slices (peers' parked "
                              "KV included), above its lend_limit's 0 of 64*");
  expect_broken("capacity",
                "*pool ledger broken after * gpu1: local capacity * blocks kept, not refreshed*");
  /* sampled: caught within EMA_POOL_CHECK_SAMPLE actions all the same (two GPUs: scale 1) */
  g_assert_cmpuint(ema_pool_check_scale(2), ==, 1);
  g_assert_cmpuint(ema_pool_check_scale(8), ==, 1);
  g_assert_cmpuint(ema_pool_check_scale(9), ==, 2);   /* 81 pairs: (81 + 63) / 64 */
  g_assert_cmpuint(ema_pool_check_scale(72), ==, 81); /* 5,184 pairs: 81 x 64 */
  expect_broken("lent-sampled", "*pool ledger broken after *lent/borrowed counters disagree*");
  /* off: nothing is checked */
  g_setenv("EMA_TEST_CORRUPT", "lent-off", TRUE);
  g_test_trap_subprocess(NULL, 0, G_TEST_SUBPROCESS_DEFAULT);
  g_test_trap_assert_passed();
}

/* The view keeps the entries of GPUs not touched since it was built, and
 * refills a touched one; a periodic decision is due once the period has
 * passed and only if the view changed since the GPU's last decision; a
 * step's figures, a local take or give and a demand sample are written
 * through. */
static void test_view_kept(void) {
  Rig r;
  GError *error = NULL;
  const EmaPoolView *view;
  guint64 version, used;
  rig_init(&r, EMA_POOL_CHECK_ALL);
  rig_ticks(&r, 3);
  view = ema_pool_core_view(&r.core);
  g_assert_false(r.gpus[0].view_stale || r.gpus[1].view_stale);
  /* untouched, a changed field stays as the entry was; touched, it is refilled */
  r.gpus[1].waiting += 5;
  g_assert_cmpuint(ema_pool_core_view(&r.core)->gpus[1].waiting, ==, r.gpus[1].waiting - 5);
  ema_slice_gpu_touch(&r.gpus[1]);
  g_assert_cmpuint(ema_pool_core_view(&r.core)->gpus[1].waiting, ==, r.gpus[1].waiting);
  g_assert_true(view == ema_pool_core_view(&r.core));

  /* a decision; the period passes with nothing changed: no periodic decision is due */
  g_assert_true(ema_pool_core_decide(&r.core, &r.gpus[1], &error));
  g_assert_no_error(error);
  ema_pool_core_view(&r.core);
  r.core.now += r.spec.decision_period;
  g_assert_false(ema_pool_core_periodic_due(&r.core, &r.gpus[1]));
  /* the other GPU's entry changes: due, whether the view was rebuilt since or not */
  ema_slice_gpu_touch(&r.gpus[0]);
  g_assert_true(ema_pool_core_periodic_due(&r.core, &r.gpus[1]));
  ema_pool_core_view(&r.core);
  g_assert_true(ema_pool_core_periodic_due(&r.core, &r.gpus[1]));
  /* decided again: not due before the period, then not while nothing changes */
  g_assert_true(ema_pool_core_decide(&r.core, &r.gpus[1], &error));
  g_assert_false(ema_pool_core_periodic_due(&r.core, &r.gpus[1]));
  r.core.now += r.spec.decision_period;
  g_assert_false(ema_pool_core_periodic_due(&r.core, &r.gpus[1]));

  /* a step's figures are written through into an up-to-date entry (not
   * stale, yet changed: due) and agree with a fresh fill; into a stale one
   * they wait for its refill */
  r.gpus[0].running = 7;
  r.gpus[0].waiting = 3;
  r.gpus[0].last_step = 12 * MS;
  r.gpus[0].blocks_short = 2;
  ema_slice_ledger_note_step(&r.core.ledger, &r.gpus[0]);
  g_assert_false(r.gpus[0].view_stale);
  g_assert_true(ema_pool_core_periodic_due(&r.core, &r.gpus[1]));
  g_assert_cmpuint(view->gpus[0].running, ==, 7);
  g_assert_cmpuint(view->gpus[0].waiting, ==, 3);
  g_assert_cmpint(view->gpus[0].last_step, ==, 12 * MS);
  g_assert_cmpuint(view->gpus[0].blocks_short, ==, 2);
  g_assert_true(ema_pool_core_check(&r.core, &error));
  g_assert_no_error(error);
  ema_slice_gpu_touch(&r.gpus[0]);
  r.gpus[0].running = 9;
  ema_slice_ledger_note_step(&r.core.ledger, &r.gpus[0]);
  g_assert_true(r.gpus[0].view_stale);
  g_assert_cmpuint(view->gpus[0].running, ==, 7);
  g_assert_cmpuint(ema_pool_core_view(&r.core)->gpus[0].running, ==, 9);

  /* so are a local take, a local give and a demand sample: the entry stays
   * up to date, the version moves once for each, and it agrees with a fresh
   * fill (ema_pool_core_check compares them) */
  g_assert_cmpuint(r.gpus[1].remote_total, ==, 0);
  version = r.core.ledger.version;
  used = r.gpus[1].local_used;
  g_assert_true(ema_pool_core_take(&r.core, &r.gpus[1], 42, 3, &error));
  g_assert_no_error(error);
  g_assert_false(r.gpus[1].view_stale);
  g_assert_cmpuint(r.core.ledger.version, ==, version + 1);
  g_assert_cmpuint(view->gpus[1].blocks_used, ==, used + 3);
  g_assert_cmpuint(view->gpus[1].slices_used, ==, used + 3); /* a block is a slice here */
  g_assert_true(ema_pool_core_check(&r.core, &error));
  g_assert_true(ema_pool_core_give(&r.core, &r.gpus[1], 42, 2, 2, &error));
  g_assert_false(r.gpus[1].view_stale);
  g_assert_cmpuint(r.core.ledger.version, ==, version + 2);
  g_assert_cmpuint(view->gpus[1].blocks_used, ==, used + 1);
  g_assert_true(ema_pool_core_check(&r.core, &error));
  ema_slice_gpu_update_demand(&r.gpus[1], r.gpus[1].demand_at + 200 * MS, used + 1);
  g_assert_false(r.gpus[1].view_stale);
  g_assert_cmpuint(r.core.ledger.version, ==, version + 3);
  g_assert_true(view->gpus[1].demand_blocks_per_s == r.gpus[1].demand);
  g_assert_true(ema_pool_core_check(&r.core, &error));
  g_assert_no_error(error);
  rig_clear(&r);
}

/* The level comes from EMA_POOL_CHECKS; a value it does not know is an
 * error of the pool's set-up (37#9: it was a g_error, an abort). */
static void test_level_from_env(void) {
  EmaPoolCore core;
  EmaPolicySpec spec = {.borrow = "none", .prefetch = "direct", .reclaim = "none"};
  g_autoptr(EmaServerSpec) server = ema_server_load("h200x2", NULL);
  EmaPoolModel model = {0};
  GError *error = NULL;
  g_setenv("EMA_POOL_CHECKS", "sometimes", TRUE);
  g_assert_false(
      ema_pool_core_init(&core, 2, server, &spec, ema_pool_model_backend(), &model, &error));
  g_assert_error(error, EMA_POLICY_ERROR, EMA_POLICY_ERROR_INVALID);
  g_assert_cmpstr(error->message, ==, "EMA_POOL_CHECKS=sometimes: give all, sample or off");
  g_error_free(error);
  ema_pool_core_clear(&core);
  g_setenv("EMA_POOL_CHECKS", "all", TRUE);
}

int main(int argc, char **argv) {
  g_test_init(&argc, &argv, NULL);
  g_test_add_func("/checks/healthy", test_healthy);
  g_test_add_func("/checks/reasons", test_reasons);
  g_test_add_func("/checks/reasons-cut", test_reasons_cut);
  g_test_add_func("/checks/corrupted", test_corrupted);
  g_test_add_func("/checks/level-from-env", test_level_from_env);
  g_test_add_func("/checks/view-kept", test_view_kept);
  return g_test_run();
}
