/* test-prefetch-policy.c: the decisions of the `layer-ahead` prefetch
 * policy (policies/prefetch-layer-ahead.c), on hand-built views, each
 * figure computed here from its defaults (direct_margin 70%, hide_margin
 * 90%, fixed_share 10%, max_borrower_slowdown 5%, max_lender_slowdown 2%,
 * depth 2):
 *
 * - direct loads are chosen while the step's remote bytes fit in 70% of the
 *   attention kernel's all-local KV time at the direct-load bandwidth;
 * - each lender's 2% allowance binds on the share of the borrower's remote
 *   blocks it holds (the largest share binds first) and is split among the
 *   tenants reading from it; a lender without a tenant bounds nothing;
 * - prefetch is chosen when direct loads admit less than prefetching and
 *   the step's remote bytes do not fit under the direct bound; the landing
 *   copies' 5% bound and the layer group follow the fixed cost;
 * - the admitted share is the larger of the two bounds over the layer's KV;
 * and of `offload` (policies/prefetch-offload.c, allowance 5%): its
 * admission bound per lender (the allowance less what the offloading
 * borrowers' remote KV held there takes, all of the HBM time of a GPU
 * without a tenant), its mode by modelled step cost (per lender too:
 * reading the KV on lenders at their cap), its limit held (`admit_hold`),
 * and layer-ahead's plan exactly at allowance 0. */
#include "ema/core/node.h"
#include "ema/core/params.h"
#include "ema/pool/ledger.h"
#include "ema/pool/registry.h"

#include "testutil.h"

#define N_GPUS 3

typedef struct {
  const EmaPrefetchPolicyOps *ops;
  const EmaParamTable *table;
  gpointer params;
  gpointer state; /* the policy's private state, zeroed as the pool gives it */
  EmaServerSpec server;
  EmaGpuView gpus[N_GPUS];
  guint64 lent[N_GPUS * N_GPUS];
  guint64 remote[N_GPUS * N_GPUS]; /* [borrower * n + lender] */
  EmaPoolView view;
  EmaStepCostView step;
} Case;

/* GPU 0 borrows; one layer reads 5e8 B of KV (5e-4 s of it all-local) in
 * a 1 ms layer, the link moves 1e11 B/s either way, copies have no fixed
 * cost; HBM 1e12 B/s, k_out 1, k_in 2. GPU 0 holds 30 blocks on GPU 1 and
 * 10 on GPU 2; this step's remote bytes are 1e7 per layer. */
static Case *case_new_of(const char *name) {
  Case *c = g_new0(Case, 1);
  GError *error = NULL;
  const EmaPolicyInfo *info = ema_policy_registry_find(EMA_POLICY_PREFETCH, name, &error);
  g_assert_no_error(error);
  c->ops = info->ops;
  c->table = c->ops->params;
  c->params = g_malloc0(c->table->size);
  c->state = g_malloc0(MAX(c->ops->state_size, 1));
  g_assert_true(ema_params_bind(c->table, c->params, NULL, NULL, &error));
  g_assert_no_error(error);
  c->server.gpus = N_GPUS;
  c->server.gpu.hbm_bandwidth = 1e12;
  c->server.gpu.hbm_efficiency = 1;
  c->server.gpu.interference_outgoing = 1;
  c->server.gpu.interference_incoming = 2;
  for (guint i = 0; i < N_GPUS; i++)
    c->gpus[i] = (EmaGpuView){.index = i, .shares = TRUE, .has_tenant = TRUE};
  c->remote[0 * N_GPUS + 1] = 30;
  c->remote[0 * N_GPUS + 2] = 10;
  c->view = (EmaPoolView){0,    N_GPUS, c->gpus, c->lent, c->remote, &c->server,
                          NULL, NULL,   NULL,    NULL,    NULL,      NULL};
  c->step = (EmaStepCostView){.layers = 10,
                              .layer_compute_s = 1e-3,
                              .layer_memory_s = 1e-3,
                              .kv_bytes = 5e8,
                              .remote_bytes = 1e7,
                              .link_bandwidth = 1e11,
                              .direct_bandwidth = 1e11,
                              .copy_fixed_cost = 0,
                              .layer_kv_s = 5e-4};
  return c;
}

static Case *case_new(void) {
  return case_new_of("layer-ahead");
}

/* C's parameters bound anew from YAML (the others at their defaults). */
static void case_bind(Case *c, const char *yaml) {
  GError *error = NULL;
  g_autoptr(EmaNode) node = ema_node_load_string(yaml, "test", NULL, &error);
  g_assert_no_error(error);
  ema_params_clear(c->table, c->params);
  g_assert_true(ema_params_bind(c->table, c->params, node, NULL, &error));
  g_assert_no_error(error);
}

static void case_free(Case *c) {
  ema_params_free(c->table, c->params);
  g_free(c->state);
  g_free(c);
}

static EmaPrefetchPlan decide(Case *c) {
  EmaPrefetchPlan plan = ema_prefetch_plan_start(); /* the pool's start */
  c->ops->decide(c->state, c->params, &c->view, 0, &c->step, &plan);
  return plan;
}

/* Lender 1 holds 3/4 of the remote blocks: its allowance, 2% x 1e12 B/s x
 * 1 ms = 2e7 B per layer, allows 2e7 / 0.75 B; direct loads alone would
 * allow 0.7 x 5e-4 s x 1e11 B/s = 3.5e7 B; prefetch min(0.9 x 1 ms x 1e11,
 * 5% x 1 ms x 1e12 / 2) = 2.5e7 B. The larger bound, 2.67e7 B, is direct. */
static void test_direct_lender_share(void) {
  Case *c = case_new();
  EmaPrefetchPlan plan = decide(c);
  g_assert_cmpint(plan.mode, ==, EMA_REMOTE_DIRECT);
  g_assert_cmpfloat_with_epsilon(plan.remote_limit, 2e7 / 0.75 / 5e8, 1e-12);
  /* spread evenly, the lender bound (2 x 2e7 B) no longer binds: direct's own, 3.5e7 B */
  c->remote[0 * N_GPUS + 1] = 20;
  c->remote[0 * N_GPUS + 2] = 20;
  plan = decide(c);
  g_assert_cmpint(plan.mode, ==, EMA_REMOTE_DIRECT);
  g_assert_cmpfloat_with_epsilon(plan.remote_limit, 3.5e7 / 5e8, 1e-12);
  case_free(c);
}

/* A second tenant reading from lender 1 halves its allowance there:
 * 2e7 / 2 / 0.75 = 1.33e7 B binds both ways. */
static void test_shared_lender(void) {
  Case *c = case_new();
  EmaPrefetchPlan plan;
  c->remote[2 * N_GPUS + 1] = 5;
  plan = decide(c);
  g_assert_cmpint(plan.mode, ==, EMA_REMOTE_DIRECT);
  g_assert_cmpfloat_with_epsilon(plan.remote_limit, 2e7 / 2 / 0.75 / 5e8, 1e-12);
  case_free(c);
}

/* Lender 1 without a tenant (an idle GPU) has no steps to slow: its 3/4
 * of the remote blocks bound nothing, lender 2's 1/4 allows 2e7 / 0.25 =
 * 8e7 B, so direct loads' own 3.5e7 B binds. */
static void test_idle_lender(void) {
  Case *c = case_new();
  EmaPrefetchPlan plan;
  c->gpus[1].has_tenant = FALSE;
  plan = decide(c);
  g_assert_cmpint(plan.mode, ==, EMA_REMOTE_DIRECT);
  g_assert_cmpfloat_with_epsilon(plan.remote_limit, 3.5e7 / 5e8, 1e-12);
  case_free(c);
}

/* A short attention (1e-4 s) lets direct loads hide only 7e6 B, less than
 * this step's 1e7: prefetch, admitting its 2.5e7 B (the landing copies'
 * bound), depth 2, one layer per copy (no fixed cost). Without lender
 * interference the lenders bound nothing. */
static void test_prefetch(void) {
  Case *c = case_new();
  EmaPrefetchPlan plan;
  c->server.gpu.interference_outgoing = 0;
  c->step.layer_kv_s = 1e-4;
  plan = decide(c);
  g_assert_cmpint(plan.mode, ==, EMA_REMOTE_PREFETCH);
  g_assert_cmpuint(plan.depth, ==, 2);
  g_assert_cmpuint(plan.layers_per_copy, ==, 1);
  g_assert_cmpfloat_with_epsilon(plan.remote_limit, 2.5e7 / 5e8, 1e-12);
  /* remote bytes under the direct bound: direct, the limit unchanged */
  c->step.remote_bytes = 6.9e6;
  plan = decide(c);
  g_assert_cmpint(plan.mode, ==, EMA_REMOTE_DIRECT);
  g_assert_cmpfloat_with_epsilon(plan.remote_limit, 2.5e7 / 5e8, 1e-12);
  case_free(c);
}

/* A copy's fixed cost of 1e-4 s against 1e-4 s of link time per layer: the
 * group doubles while the fixed cost is above 10% of the copy, 1 -> 16,
 * cut to the 10 layers; the link then fills 0.9 ms less 1e-5 s per layer
 * (8.9e7 B), and with no landing-copy interference that is the bound. */
static void test_group(void) {
  Case *c = case_new();
  EmaPrefetchPlan plan;
  c->server.gpu.interference_outgoing = 0;
  c->server.gpu.interference_incoming = 0;
  c->step.layer_kv_s = 1e-4;
  c->step.copy_fixed_cost = 100000;
  plan = decide(c);
  g_assert_cmpint(plan.mode, ==, EMA_REMOTE_PREFETCH);
  g_assert_cmpuint(plan.layers_per_copy, ==, 10);
  g_assert_cmpfloat_with_epsilon(plan.remote_limit, (0.9e-3 - 1e-4 / 10) * 1e11 / 5e8, 1e-12);
  case_free(c);
}

/* `offload` (allowance 5%) on the same view: layer-ahead's plan is direct,
 * limit 2e7 / 0.75 / 5e8 = 5.33%. The step: 10,000 tokens of decode
 * context, c_max(1) = 20,000 tokens per lender, offloaded 9 ms against
 * direct 12 ms and all-local 10 ms. Lender 1 (3/4 of the remote blocks)
 * admits f <= 0.05 x 20,000 / (0.75 x 10,000) = 13.3%, lender 2 (1/4)
 * 40%: lender 1 binds, offload is cheaper and this step's 2% remote fits. */
static Case *offload_case(void) {
  Case *c = case_new_of("offload");
  c->step.context_tokens = 10000;
  c->step.offload_full_context = 20000;
  c->step.step_offload_s = 9e-3;
  c->step.step_direct_s = 12e-3;
  c->step.step_local_s = 10e-3;
  return c;
}

static void test_offload(void) {
  Case *c = offload_case();
  double share[N_GPUS * N_GPUS] = {0};
  EmaPrefetchPlan plan = decide(c);
  g_assert_cmpint(plan.mode, ==, EMA_REMOTE_OFFLOAD);
  g_assert_cmpfloat_with_epsilon(plan.remote_limit, 0.05 * 20000 / 7500, 1e-12);
  g_assert_cmpuint(plan.limit_lender, ==, 1);
  g_assert_cmpfloat(plan.limit_allowance, ==, 0.05);
  /* the pool holds every lender with a tenant to the allowance (policy.h offload_cap) */
  g_assert_cmpfloat(plan.offload_cap, ==, 0.05);
  /* GPU 2's offloaded steps take 4% of lender 1: 1% is left, f <= 2.67%,
   * below layer-ahead's bound, which stays; this step's 2% still fits */
  share[2 * N_GPUS + 1] = 0.04;
  c->view.offload_share = share;
  plan = decide(c);
  g_assert_cmpint(plan.mode, ==, EMA_REMOTE_OFFLOAD);
  g_assert_cmpfloat_with_epsilon(plan.remote_limit, 2e7 / 0.75 / 5e8, 1e-12);
  g_assert_cmpuint(plan.limit_lender, ==, G_MAXUINT);
  /* at 4.5% only 1.33% is left: the 2% remote is read directly (within
   * layer-ahead's bounds, cheaper for the lender than offloading it) */
  share[2 * N_GPUS + 1] = 0.045;
  plan = decide(c);
  g_assert_cmpint(plan.mode, ==, EMA_REMOTE_DIRECT);
  /* a lender without a tenant has nothing to protect: all of its HBM time,
   * so lender 2 binds, 40% */
  c->gpus[1].has_tenant = FALSE;
  plan = decide(c);
  g_assert_cmpint(plan.mode, ==, EMA_REMOTE_OFFLOAD);
  g_assert_cmpfloat_with_epsilon(plan.remote_limit, 0.4, 1e-12);
  g_assert_cmpuint(plan.limit_lender, ==, 2);
  case_free(c);
}

/* The view's kept sets (EmaPoolView.readers, offload_to: what the pool
 * hands the policies so that a decision looks at the lenders alone) give
 * the plans a count over every GPU gives: test_shared_lender's and
 * test_offload's second case, each with the sets and without. */
static void test_kept_sets(void) {
  Case *c = case_new(), *o = offload_case();
  double share[N_GPUS * N_GPUS] = {0};
  guint readers[N_GPUS] = {0, 2, 1};
  guint64 offload_to[N_GPUS] = {0, 1u << 2, 0};
  EmaPrefetchPlan counted, kept;
  c->remote[2 * N_GPUS + 1] = 5;
  counted = decide(c);
  c->view.readers = readers;
  kept = decide(c);
  g_assert_cmpint(memcmp(&counted, &kept, sizeof counted), ==, 0);
  g_assert_cmpfloat_with_epsilon(kept.remote_limit, 2e7 / 2 / 0.75 / 5e8, 1e-12);
  share[2 * N_GPUS + 1] = 0.04;
  o->view.offload_share = share;
  counted = decide(o);
  o->view.offload_to = offload_to;
  o->view.readers = (guint[N_GPUS]){0, 1, 1};
  kept = decide(o);
  g_assert_cmpint(memcmp(&counted, &kept, sizeof counted), ==, 0);
  g_assert_cmpuint(ema_pool_view_next_offloader(&o->view, 1, 0), ==, 2);
  g_assert_cmpuint(ema_pool_view_next_offloader(&o->view, 1, 3), ==, N_GPUS);
  g_assert_cmpuint(ema_pool_view_next_offloader(&o->view, 0, 0), ==, N_GPUS);
  case_free(c);
  case_free(o);
}

/* The allowance is shared by the KV the borrowers hold on a lender, not by
 * their steps in flight alone. This step's remote KV is 2% of its 10,000
 * tokens, 200 tokens in 40 remote blocks: 5 tokens a block. GPU 2 holds 100
 * blocks on lender 1 and offloads: counted at 5 tokens a block they are 500
 * tokens, 500 / 20,000 = 2.5% of lender 1's HBM time, more than the 1% its
 * step in flight takes now; 2.5% is left, f <= 0.025 x 20,000 / 7,500 =
 * 6.67%, above layer-ahead's bound, which is now 2e7 / 2 / 0.75 / 5e8 =
 * 2.67% (lender 1's 2% split between its two readers): offload's, lender
 * 1's. */
static void test_offload_held(void) {
  Case *c = offload_case();
  double share[N_GPUS * N_GPUS] = {0}, layer_ahead = 2e7 / 2 / 0.75 / 5e8;
  EmaPrefetchPlan plan;
  c->remote[2 * N_GPUS + 1] = 100;
  share[2 * N_GPUS + 1] = 0.01;
  c->view.offload_share = share;
  plan = decide(c);
  g_assert_cmpint(plan.mode, ==, EMA_REMOTE_OFFLOAD);
  g_assert_cmpfloat_with_epsilon(plan.remote_limit, 0.025 * 20000 / 7500, 1e-12);
  g_assert_cmpuint(plan.limit_lender, ==, 1);
  /* its step in flight is the larger: 4.5% of lender 1, 0.5% left, f <= 1.33%: layer-ahead's */
  share[2 * N_GPUS + 1] = 0.045;
  plan = decide(c);
  g_assert_cmpfloat_with_epsilon(plan.remote_limit, layer_ahead, 1e-12);
  g_assert_cmpuint(plan.limit_lender, ==, G_MAXUINT);
  /* 300 blocks (7.5%): none of lender 1's allowance left, f 0; layer-ahead's plan */
  c->remote[2 * N_GPUS + 1] = 300;
  share[2 * N_GPUS + 1] = 0.01;
  plan = decide(c);
  g_assert_cmpint(plan.mode, ==, EMA_REMOTE_DIRECT);
  g_assert_cmpfloat_with_epsilon(plan.remote_limit, layer_ahead, 1e-12);
  /* not offloading now (no share of lender 1): its blocks there are read another way and
   * take none of the allowance; 13.3% as alone */
  share[2 * N_GPUS + 1] = 0;
  plan = decide(c);
  g_assert_cmpfloat_with_epsilon(plan.remote_limit, 0.05 * 20000 / 7500, 1e-12);
  g_assert_cmpuint(plan.limit_lender, ==, 1);
  case_free(c);
}

/* Offload dearer than direct loads (13 ms against 12): layer-ahead's plan,
 * and its bound; against prefetch, offload is compared with the all-local
 * step (prefetch's best), or with its copies' time on the link where
 * that is longer. */
static void test_offload_dearer(void) {
  Case *c = offload_case(), *plain = case_new();
  EmaPrefetchPlan plan;
  c->step.step_offload_s = 13e-3;
  plan = decide(c);
  g_assert_cmpint(plan.mode, ==, EMA_REMOTE_DIRECT);
  g_assert_cmpfloat_with_epsilon(plan.remote_limit, 2e7 / 0.75 / 5e8, 1e-12);
  g_assert_cmpuint(plan.limit_lender, ==, G_MAXUINT);
  /* layer-ahead prefetches (test_prefetch's view): 9 ms beats 10 ms all-local, 10.5 does not */
  c->server.gpu.interference_outgoing = 0;
  c->step.layer_kv_s = 1e-4;
  c->step.step_offload_s = 9e-3;
  g_assert_cmpint(decide(c).mode, ==, EMA_REMOTE_OFFLOAD);
  c->step.step_offload_s = 10.5e-3;
  plan = decide(c);
  g_assert_cmpint(plan.mode, ==, EMA_REMOTE_PREFETCH);
  g_assert_cmpfloat_with_epsilon(plan.remote_limit, 2.5e7 / 5e8, 1e-12);
  /* but prefetch's step is at least its copies' time on the link: with 1.1e8 B a layer remote
   * (1.1 ms a layer, 11 ms a step), which layer-ahead still prefetches, 10.5 ms offloaded
   * (capped or not) is the cheaper step */
  c->step.remote_bytes = 1.1e8;
  plain->server = c->server;
  plain->step = c->step;
  g_assert_cmpint(decide(plain).mode, ==, EMA_REMOTE_PREFETCH);
  g_assert_cmpint(decide(c).mode, ==, EMA_REMOTE_OFFLOAD);
  case_free(plain);
  case_free(c);
}

/* Per lender (read_at_cap, on by default): the step reading the KV on the
 * lenders at their cap and offloading the rest (step_offload_read_s) is
 * taken where it is the cheapest: 8 ms against the whole offload's 9 ms
 * (which admits as before), against direct loads' 12 ms where the whole
 * offload is not taken (the 2% remote over what lender 1's 1.33% left
 * admits: test_offload), and where the whole offload has a lender with
 * none of its cap left (step_offload_s 0). Not where it is dearer, not
 * where the pool offers none (0), not with read_at_cap false. */
static void test_offload_read(void) {
  Case *c = offload_case();
  double share[N_GPUS * N_GPUS] = {0};
  EmaPrefetchPlan whole = decide(c), plan;
  g_assert_false(whole.offload_read);
  c->step.step_offload_read_s = 8e-3;
  plan = decide(c);
  g_assert_cmpint(plan.mode, ==, EMA_REMOTE_OFFLOAD);
  g_assert_true(plan.offload_read);
  g_assert_cmpfloat(plan.remote_limit, ==, whole.remote_limit);
  g_assert_cmpuint(plan.limit_lender, ==, whole.limit_lender);
  g_assert_cmpuint(plan.depth, ==, 1);
  g_assert_cmpuint(plan.layers_per_copy, ==, 1);
  c->step.step_offload_read_s = 9.5e-3;
  plan = decide(c);
  g_assert_cmpint(plan.mode, ==, EMA_REMOTE_OFFLOAD);
  g_assert_false(plan.offload_read);
  /* lender 1 has 1.33% left: the whole offload is not taken; reading lender 1 is, at 11 ms
   * against direct loads' 12, and not at 12.5 */
  share[2 * N_GPUS + 1] = 0.045;
  c->view.offload_share = share;
  c->step.step_offload_read_s = 11e-3;
  plan = decide(c);
  g_assert_cmpint(plan.mode, ==, EMA_REMOTE_OFFLOAD);
  g_assert_true(plan.offload_read);
  c->step.step_offload_read_s = 12.5e-3;
  plan = decide(c);
  g_assert_cmpint(plan.mode, ==, EMA_REMOTE_DIRECT);
  g_assert_false(plan.offload_read);
  /* no whole offload (a lender with none of its cap left) */
  c->step.step_offload_s = 0;
  c->step.step_offload_read_s = 11e-3;
  plan = decide(c);
  g_assert_cmpint(plan.mode, ==, EMA_REMOTE_OFFLOAD);
  g_assert_true(plan.offload_read);
  c->step.step_offload_read_s = 0;
  g_assert_cmpint(decide(c).mode, ==, EMA_REMOTE_DIRECT);
  /* read_at_cap false: the whole offload or layer-ahead's plan, as before */
  c->step.step_offload_read_s = 11e-3;
  case_bind(c, "{read_at_cap: false}");
  plan = decide(c);
  g_assert_cmpint(plan.mode, ==, EMA_REMOTE_DIRECT);
  g_assert_false(plan.offload_read);
  case_free(c);
}

/* admit_hold 100 ms: a limit that falls applies at once, one that rises
 * only once no limit at or below the one held was planned for 100 ms; the
 * plan keeps the held limit's lender and allowance. The limits: 13.3%
 * (lender 1's 5%, as in test_offload), 40% (lender 1 without a tenant:
 * lender 2 binds) and 5.33% (GPU 2 takes 4% of lender 1: layer-ahead's
 * bound, no lender). */
static void test_offload_admit_hold(void) {
  Case *c = offload_case();
  double share[N_GPUS * N_GPUS] = {0}, offload = 0.05 * 20000 / 7500,
                        layer_ahead = 2e7 / 0.75 / 5e8;
  EmaPrefetchPlan plan;
  case_bind(c, "{admit_hold: 100ms}");
  c->view.offload_share = share;
  plan = decide(c);
  g_assert_cmpfloat_with_epsilon(plan.remote_limit, offload, 1e-12);
  g_assert_cmpfloat(plan.room_limit, ==, -1); /* not held: the room is the limit's */
  /* at 10 ms it would rise to 40%: held at 13.3%, lender 1's; the room the step's own 40% */
  c->view.now = EMA_MS(10);
  c->gpus[1].has_tenant = FALSE;
  plan = decide(c);
  g_assert_cmpfloat_with_epsilon(plan.remote_limit, offload, 1e-12);
  g_assert_cmpfloat_with_epsilon(plan.room_limit, 0.4, 1e-12);
  g_assert_cmpuint(plan.limit_lender, ==, 1);
  g_assert_cmpfloat(plan.limit_allowance, ==, 0.05);
  /* at 50 ms it falls to 5.33%: at once */
  c->view.now = EMA_MS(50);
  c->gpus[1].has_tenant = TRUE;
  share[2 * N_GPUS + 1] = 0.04;
  plan = decide(c);
  g_assert_cmpfloat_with_epsilon(plan.remote_limit, layer_ahead, 1e-12);
  g_assert_cmpuint(plan.limit_lender, ==, G_MAXUINT);
  /* back to 13.3% at 150 ms: held, 100 ms since 5.33% was planned; after that, risen */
  share[2 * N_GPUS + 1] = 0;
  c->view.now = EMA_MS(150);
  plan = decide(c);
  g_assert_cmpfloat_with_epsilon(plan.remote_limit, layer_ahead, 1e-12);
  c->view.now = EMA_MS(150) + 1;
  plan = decide(c);
  g_assert_cmpfloat_with_epsilon(plan.remote_limit, offload, 1e-12);
  g_assert_cmpuint(plan.limit_lender, ==, 1);
  /* the default, 0: every step's own */
  case_bind(c, "{}");
  c->gpus[1].has_tenant = FALSE;
  plan = decide(c);
  g_assert_cmpfloat_with_epsilon(plan.remote_limit, 0.4, 1e-12);
  g_assert_cmpfloat(plan.room_limit, ==, -1);
  case_free(c);
}

static void assert_same_plan(const EmaPrefetchPlan *a, const EmaPrefetchPlan *b) {
  g_assert_cmpint(a->mode, ==, b->mode);
  g_assert_cmpuint(a->depth, ==, b->depth);
  g_assert_cmpuint(a->layers_per_copy, ==, b->layers_per_copy);
  g_assert_cmpfloat(a->remote_limit, ==, b->remote_limit);
  g_assert_cmpuint(a->limit_lender, ==, b->limit_lender);
  g_assert_cmpfloat(a->limit_allowance, ==, b->limit_allowance);
  g_assert_cmpfloat(a->offload_cap, ==, b->offload_cap);
  g_assert_cmpint(a->offload_read, ==, b->offload_read);
  g_assert_cmpfloat(a->room_limit, ==, b->room_limit);
}

/* Allowance 0, or a step that cannot offload: layer-ahead's plan exactly,
 * but for the lenders' cap, the allowance on every plan (a cap that stays
 * put times the next step at it, policy.h), the plan's start value (none)
 * at allowance 0. */
static void test_offload_off(void) {
  Case *c = offload_case(), *plain = case_new();
  EmaPrefetchPlan expected = decide(plain), plan;
  c->step.step_offload_s = 0;
  plan = decide(c);
  g_assert_cmpfloat(plan.offload_cap, ==, 0.05);
  g_assert_cmpfloat(expected.offload_cap, ==, 1);
  plan.offload_cap = expected.offload_cap;
  assert_same_plan(&plan, &expected);
  c->step.step_offload_s = 9e-3;
  case_bind(c, "{allowance: 0}");
  plan = decide(c);
  assert_same_plan(&plan, &expected);
  case_free(c);
  case_free(plain);
}

int main(int argc, char **argv) {
  g_test_init(&argc, &argv, NULL);
  g_test_add_func("/prefetch-policy/direct-lender-share", test_direct_lender_share);
  g_test_add_func("/prefetch-policy/shared-lender", test_shared_lender);
  g_test_add_func("/prefetch-policy/idle-lender", test_idle_lender);
  g_test_add_func("/prefetch-policy/prefetch", test_prefetch);
  g_test_add_func("/prefetch-policy/group", test_group);
  g_test_add_func("/prefetch-policy/offload", test_offload);
  g_test_add_func("/prefetch-policy/offload-held", test_offload_held);
  g_test_add_func("/prefetch-policy/offload-dearer", test_offload_dearer);
  g_test_add_func("/prefetch-policy/offload-read", test_offload_read);
  g_test_add_func("/prefetch-policy/offload-off", test_offload_off);
  g_test_add_func("/prefetch-policy/kept-sets", test_kept_sets);
  g_test_add_func("/prefetch-policy/offload-admit-hold", test_offload_admit_hold);
  return g_test_run();
}
