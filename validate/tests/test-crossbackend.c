/* test-crossbackend.c: one pool, two backends. The same scripted demands
 * (the `ema-validate pool` scenario: a borrower that ramps past its region,
 * a lender whose own demand jumps, then both fall back) drive the pool of
 * libema (sim/pool/core.c) over the simulator's cost model
 * (ema_pool_model_backend) and over real memory emulated on the CPU
 * (validate/poolmem.c over poolfake.c), under every built-in composition
 * and every built-in borrow policy with every built-in reclaim policy and
 * one that sends reclaimed data everywhere in turn: the two event logs (borrow,
 * return, reclaim with the blocks moved, sent to host or dropped, slice
 * counts, GPUs, rounds), the counters and the ledger after every round
 * are identical; only the times differ (modelled against measured), and
 * the real side's own-slice mappings have no counterpart in the model. */
#include <math.h>
#include <string.h>

#include "ema/hw/hwmodel.h"
#include "ema/hw/llm.h"
#include "ema/pool/core.h"
#include "ema/pool/pool.h"
#include "ema/pool/registry.h"
#include "ema/run/experiment.h"
#include "poolfake.h"
#include "poolmem.h"
#include "testutil.h"

#define SLICE EMA_SLICE_BYTES
#define MS (1000 * 1000)
#define TICKS 400

typedef struct {
  guint64 borrow, ret, reclaim, moved, to_host, dropped;
} Seen;

/* `test-rotate`: a lender that lacks memory takes back half of what it
 * lends each borrower, its data sent in turn to host, to the borrower, to
 * a GPU that does not lend it room (itself: cut to a drop), and dropped. */
static void rotate_decide(gpointer state, gconstpointer params, const EmaPoolView *view,
                          guint lender, guint64 needed, EmaReclaimPlan *plan) {
  static const EmaVacateTarget order[] = {EMA_VACATE_TO_HOST, EMA_VACATE_TO_BORROWER,
                                          EMA_VACATE_TO_PEER, EMA_VACATE_DROP};
  guint *turn = state;
  if (needed == 0)
    return;
  for (guint b = 0; b < view->n_gpus; b++) {
    guint64 lent = view->lent[lender * view->n_gpus + b];
    if (lent > 0)
      plan->actions[plan->n++] =
          (EmaReclaimAction){b, (lent + 1) / 2, order[*turn % G_N_ELEMENTS(order)], lender};
  }
  (*turn)++;
}

static const EmaReclaimPolicyOps rotate = {
    .abi_version = EMA_POLICY_ABI_VERSION,
    .name = "test-rotate",
    .summary = "sends reclaimed data everywhere in turn",
    .state_size = sizeof(guint),
    .decide = rotate_decide,
};

static const EmaReclaimPolicyOps *const test_reclaim[] = {&rotate, NULL};
static const EmaPolicyModule test_module = {EMA_POLICY_ABI_VERSION, NULL, NULL, test_reclaim};

/* E's fields the two backends must agree on (not its times; its reason too). */
static char *describe(const EmaPoolEvent *e) {
  return g_strdup_printf(
      "tick %" G_GUINT64_FORMAT " %s gpu%u peer%u target %d/%u slices %" G_GUINT64_FORMAT
      " moved %" G_GUINT64_FORMAT " host %" G_GUINT64_FORMAT " dropped %" G_GUINT64_FORMAT
      " bytes %" G_GUINT64_FORMAT " (%s)",
      e->tick, ema_pool_event_kind_name(e->kind), e->gpu, e->peer, e->target, e->target_gpu,
      e->slices, e->blocks_moved, e->blocks_to_host, e->blocks_dropped, e->bytes_copied, e->reason);
}

/* The log without own-slice mappings, as lines. */
static GPtrArray *log_lines(const GArray *events) {
  GPtrArray *lines = g_ptr_array_new_with_free_func(g_free);
  for (guint i = 0; i < events->len; i++) {
    const EmaPoolEvent *e = &g_array_index(events, EmaPoolEvent, i);
    if (e->kind != EMA_POOL_EVENT_OWN_MAP && e->kind != EMA_POOL_EVENT_OWN_UNMAP)
      g_ptr_array_add(lines, describe(e));
  }
  return lines;
}

static void assert_same_ledger(const EmaPoolCore *a, const EmaPoolCore *b, guint tick) {
  for (guint i = 0; i < a->n; i++) {
    const EmaSliceGpu *ga = a->ledger.gpus[i], *gb = b->ledger.gpus[i];
    if (ga->local_used != gb->local_used || ga->remote_total != gb->remote_total ||
        ga->staging != gb->staging || a->lacking[i] != b->lacking[i])
      g_error("round %u, gpu%u: model %" G_GUINT64_FORMAT " local %" G_GUINT64_FORMAT
              " remote, real %" G_GUINT64_FORMAT " local %" G_GUINT64_FORMAT " remote",
              tick, i, ga->local_used, ga->remote_total, gb->local_used, gb->remote_total);
    for (guint j = 0; j < a->n; j++)
      g_assert_cmpuint(a->ledger.lent[i * a->n + j], ==, b->ledger.lent[i * a->n + j]);
  }
}

/* The scenario under POLICY over MODEL's blocks, regions R0 and R1, on both
 * backends; adds what the logs hold to SEEN. */
static void run_both(const char *policy, const char *model, guint64 r0, guint64 r1, Seen *seen) {
  GError *error = NULL;
  EmaPolicySpec spec;
  EmaServerSpec *server = ema_server_load("h200x2", &error);
  EmaLlmSpec *llm = ema_llm_load(model, &error);
  EmaStepModel *step = NULL;
  EmaFakeBackend *fake = ema_fake_backend_new(2, 0);
  EmaPoolMemConfig config = {0};
  EmaPoolMem *real;
  EmaPoolCore modelled;
  EmaPoolModel cost;
  EmaSliceGpu records[2];
  const guint64 regions[2] = {r0, r1};
  EmaPoolScenario s = {20, {0, 0}};
  guint64 block_bytes;
  g_autoptr(GPtrArray) model_log = NULL;
  g_autoptr(GPtrArray) real_log = NULL;

  g_assert_no_error(error);
  g_assert_true(ema_pool_mem_policy_parse(policy, &spec, &error));
  step = ema_step_model_new(llm, server, 1, &error);
  g_assert_no_error(error);
  block_bytes = (guint64) llround(ema_step_model_kv_bytes_per_token_per_gpu(step) * 16);
  s.blocks[0] = r0 * SLICE / block_bytes;
  s.blocks[1] = r1 * SLICE / block_bytes;

  /* the real side: poolmem over the CPU emulation of CUDA */
  config.n_gpus = 2;
  config.server = server;
  config.policy = &spec;
  config.device = ema_fake_backend_ops();
  config.device_data = fake;
  config.write_blocks = TRUE;
  real = ema_pool_mem_new(&config, &error);
  g_assert_no_error(error);
  /* the modelled side: the same mechanism over the simulator's cost model */
  cost.server = server;
  cost.ledger = &modelled.ledger;
  g_assert_true(
      ema_pool_core_init(&modelled, 2, server, &spec, ema_pool_model_backend(), &cost, &error));
  ema_pool_core_log(&modelled);
  for (guint i = 0; i < 2; i++) {
    ema_slice_gpu_setup(&records[i], i, 2);
    records[i].present = records[i].has_tenant = records[i].shares = TRUE;
    records[i].slices = regions[i];
    records[i].block_bytes = block_bytes;
    modelled.ledger.gpus[i] = &records[i];
    ema_pool_core_set_model(&modelled, i, step);
    ema_pool_mem_add_tenant(real, i, regions[i], block_bytes, step);
  }
  g_assert_true(ema_pool_core_start(&modelled, &error));
  g_assert_true(ema_pool_mem_start(real, 0, &error));
  g_assert_no_error(error);

  for (guint k = 0; k < TICKS; k++) {
    double t = k * 0.05;
    const guint64 targets[] = {ema_pool_scenario_target(&s, 0, t),
                               ema_pool_scenario_target(&s, 1, t)};
    EmaTime now = (EmaTime) (k + 1) * 50 * MS;
    records[1].last_step = 6 * MS;
    ema_pool_mem_set_last_step(real, 1, 6 * MS);
    modelled.now = now;
    if (!ema_pool_core_tick(&modelled, targets, &error))
      g_error("%s, model, round %u: %s", policy, k, error->message);
    if (!ema_pool_mem_tick(real, now, targets, &error))
      g_error("%s, real, round %u: %s", policy, k, error->message);
    assert_same_ledger(&modelled, ema_pool_mem_core(real), k);
  }

  model_log = log_lines(modelled.events);
  real_log = log_lines(ema_pool_mem_events(real));
  for (guint i = 0; i < MIN(model_log->len, real_log->len); i++)
    if (strcmp(model_log->pdata[i], real_log->pdata[i]) != 0)
      g_error("%s, event %u: model '%s', real '%s'", policy, i, (char *) model_log->pdata[i],
              (char *) real_log->pdata[i]);
  g_assert_cmpuint(model_log->len, ==, real_log->len);
  {
    const EmaPoolCoreStats *a = &modelled.stats, *b = ema_pool_mem_stats(real);
    g_assert_cmpuint(a->borrows, ==, b->borrows);
    g_assert_cmpuint(a->slices_borrowed, ==, b->slices_borrowed);
    g_assert_cmpuint(a->returns, ==, b->returns);
    g_assert_cmpuint(a->reclaims, ==, b->reclaims);
    g_assert_cmpuint(a->slices_reclaimed, ==, b->slices_reclaimed);
    g_assert_cmpuint(a->blocks_migrated, ==, b->blocks_migrated);
    g_assert_cmpuint(a->blocks_to_host, ==, b->blocks_to_host);
    g_assert_cmpuint(a->blocks_dropped, ==, b->blocks_dropped);
    g_assert_cmpuint(a->plans_adjusted, ==, b->plans_adjusted);
    seen->borrow += a->borrows;
    seen->ret += a->returns;
    seen->reclaim += a->reclaims;
    seen->moved += a->blocks_migrated;
    seen->to_host += a->blocks_to_host;
    seen->dropped += a->blocks_dropped;
    /* the modelled times are the cost model's */
    if (a->borrows > 0)
      g_assert_cmpfloat_with_epsilon(a->borrow_seconds,
                                     (double) a->slices_borrowed *
                                         (double) (server->vmm.create_cost + server->vmm.map_cost) /
                                         1e9,
                                     1e-9);
  }
  if (!ema_pool_mem_drain(real, &error))
    g_error("drain: %s", error->message);
  ema_pool_mem_free(real);
  g_assert_cmpuint(ema_fake_backend_live(fake).handles, ==, 0);
  ema_fake_backend_free(fake);
  for (guint i = 0; i < 2; i++)
    ema_slice_gpu_clear(&records[i]);
  ema_pool_core_clear(&modelled);
  ema_step_model_free(step);
  ema_llm_free(llm);
  ema_server_free(server);
  ema_params_clear(&ema_policy_spec_params, &spec);
}

static void test_compositions(void) {
  g_autoptr(GPtrArray) compositions = ema_policy_registry_list_compositions();
  Seen seen = {0};
  for (guint i = 0; i < compositions->len; i++) {
    const EmaPolicyComposition *c = compositions->pdata[i];
    run_both(c->name, "llama-3.1-8b", 256, 1024, &seen);
    /* blocks that straddle two slices */
    run_both(c->name, "qwen2.5-14b", 192, 768, &seen);
  }
  g_assert_cmpuint(seen.borrow, >, 0);
  g_assert_cmpuint(seen.ret, >, 0);
  g_assert_cmpuint(seen.reclaim, >, 0);
  g_assert_cmpuint(seen.moved, >, 0);
}

static void test_borrow_reclaim_pairs(void) {
  g_autoptr(GPtrArray) borrow = ema_policy_registry_list(EMA_POLICY_BORROW);
  g_autoptr(GPtrArray) reclaim = ema_policy_registry_list(EMA_POLICY_RECLAIM);
  Seen seen = {0};
  for (guint b = 0; b < borrow->len; b++)
    for (guint c = 0; c < reclaim->len; c++) {
      const EmaPolicyInfo *bi = borrow->pdata[b], *ci = reclaim->pdata[c];
      g_autofree char *policy = NULL;
      if (!g_str_has_prefix(bi->origin, "built-in") ||
          (!g_str_has_prefix(ci->origin, "built-in") && strcmp(ci->name, "test-rotate") != 0))
        continue;
      policy =
          g_strdup_printf("{borrow: %s, prefetch: layer-ahead, reclaim: %s}", bi->name, ci->name);
      run_both(policy, "llama-3.1-8b", 256, 1024, &seen);
    }
  /* every way data leaves a reclaimed slice was exercised */
  g_assert_cmpuint(seen.moved, >, 0);
  g_assert_cmpuint(seen.to_host, >, 0);
  g_assert_cmpuint(seen.dropped, >, 0);
  g_test_message("%" G_GUINT64_FORMAT " borrows, %" G_GUINT64_FORMAT " returns, %" G_GUINT64_FORMAT
                 " reclaims, %" G_GUINT64_FORMAT " blocks moved, %" G_GUINT64_FORMAT
                 " to host, %" G_GUINT64_FORMAT " dropped",
                 seen.borrow, seen.ret, seen.reclaim, seen.moved, seen.to_host, seen.dropped);
}

int main(int argc, char **argv) {
  GError *error = NULL;
  g_test_init(&argc, &argv, NULL);
  if (!ema_policy_registry_add_module(&test_module, "test-crossbackend", &error))
    g_error("test policies: %s", error->message);
  g_test_add_func("/crossbackend/compositions", test_compositions);
  g_test_add_func("/crossbackend/borrow-reclaim-pairs", test_borrow_reclaim_pairs);
  return g_test_run();
}
