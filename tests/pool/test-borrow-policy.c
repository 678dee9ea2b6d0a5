/* test-borrow-policy.c: the decisions of the `most-idle` borrow policy
 * (policies/borrow-most-idle.c) with `within_limit` (the `offload`
 * composition's) on hand-built views, each figure computed here: 2 MiB
 * slices of two 1 MiB blocks, min_borrow 16 slices, limit_hold 250 ms.
 *
 * GPU 0 borrows; its own 100 slices hold 200 blocks (it lends nothing and
 * stages nothing). Lender 1 lends it 40 slices (80 blocks), lender 2 20
 * (40 blocks): 120 blocks of borrowed room. It holds 30 blocks on lender 1
 * (15 slices) and none on lender 2; 10 blocks short, 3 requests waiting.
 * The prefetch plan admits 50 remote blocks: blocks_total 250. */
#include "ema/core/params.h"
#include "ema/pool/registry.h"

#include "testutil.h"

#define N_GPUS 3
#define BLOCK (1024 * 1024)

typedef struct {
  const EmaBorrowPolicyOps *ops;
  const EmaParamTable *table;
  gpointer params;
  EmaServerSpec server;
  EmaGpuView gpus[N_GPUS];
  guint64 lent[N_GPUS * N_GPUS];   /* [lender * n + borrower] */
  guint64 remote[N_GPUS * N_GPUS]; /* [borrower * n + lender] */
  EmaPoolView view;
  gpointer state; /* the policy's private state of GPU 0 */
} Case;

/* most-idle with within_limit set to WITHIN ("true" or "false"). */
static Case *case_new(const char *within) {
  Case *c = g_new0(Case, 1);
  GError *error = NULL;
  const EmaPolicyInfo *info = ema_policy_registry_find(EMA_POLICY_BORROW, "most-idle", &error);
  g_assert_no_error(error);
  c->ops = info->ops;
  c->table = c->ops->params;
  c->params = g_malloc0(c->table->size);
  c->state = g_malloc0(c->ops->state_size);
  g_assert_true(ema_params_bind(c->table, c->params, NULL, NULL, &error));
  g_assert_no_error(error);
  for (guint i = 0; i < c->table->n_params; i++)
    if (g_strcmp0(c->table->params[i].key, "within_limit") == 0)
      g_assert_true(ema_params_parse_value(
          &c->table->params[i], within, (char *) c->params + c->table->params[i].offset, &error));
  g_assert_no_error(error);
  c->server.gpus = N_GPUS;
  for (guint i = 0; i < N_GPUS; i++)
    c->gpus[i] = (EmaGpuView){
        .index = i, .shares = TRUE, .has_tenant = TRUE, .slices = 100, .block_bytes = BLOCK};
  c->lent[1 * N_GPUS + 0] = 40;
  c->lent[2 * N_GPUS + 0] = 20;
  c->remote[0 * N_GPUS + 1] = 30;
  c->gpus[0].slices_used = 100;
  c->gpus[0].slices_borrowed = 60;
  c->gpus[0].slices_borrowed_used = 15;
  c->gpus[0].blocks_used = 230;
  c->gpus[0].blocks_remote = 30;
  c->gpus[0].blocks_total = 250;
  c->gpus[0].blocks_short = 10;
  c->gpus[0].waiting = 3;
  c->gpus[1].slices_lent = 40;
  c->gpus[2].slices_lent = 20;
  c->view = (EmaPoolView){0, N_GPUS, c->gpus, c->lent, c->remote, &c->server, NULL, NULL, NULL};
  return c;
}

static void case_free(Case *c) {
  ema_params_free(c->table, c->params);
  g_free(c->state);
  g_free(c);
}

static EmaBorrowPlan decide(Case *c) {
  EmaBorrowPlan plan = {0};
  c->ops->decide(c->state, c->params, &c->view, 0, &plan);
  return plan;
}

/* The limit binds (50 admitted of 120): nothing borrowed whatever it lacks;
 * once it has bound at every decision for 250 ms, the empty room beyond
 * max(50 admitted, 30 used) blocks, 70 blocks = 35 slices, goes back:
 * lender 1's 25 empty slices (>= 16), then 10 of lender 2's 20 (below
 * min_borrow: kept). */
static void test_within_limit(void) {
  Case *c = case_new("true");
  EmaBorrowPlan plan = decide(c);
  g_assert_cmpuint(plan.n, ==, 0);
  c->view.now = EMA_MS(249);
  plan = decide(c);
  g_assert_cmpuint(plan.n, ==, 0);
  c->view.now = EMA_MS(250);
  plan = decide(c);
  g_assert_cmpuint(plan.n, ==, 1);
  g_assert_cmpuint(plan.actions[0].lender, ==, 1);
  g_assert_cmpint(plan.actions[0].slices, ==, -25);
  /* 70 blocks used remote (more than admitted): the 50 blocks beyond them,
   * 25 slices: lender 1's 5 empty slices are below 16, lender 2's 20 go */
  c->remote[0 * N_GPUS + 1] = 70;
  c->gpus[0].slices_borrowed_used = 35;
  c->gpus[0].blocks_remote = 70;
  c->gpus[0].blocks_used = 270;
  plan = decide(c);
  g_assert_cmpuint(plan.n, ==, 1);
  g_assert_cmpuint(plan.actions[0].lender, ==, 2);
  g_assert_cmpint(plan.actions[0].slices, ==, -20);
  /* a decision that finds the limit open ends the streak: 250 ms more before a return */
  c->gpus[0].blocks_total = 320;
  plan = decide(c);
  c->gpus[0].blocks_total = 250;
  c->view.now = EMA_MS(400);
  plan = decide(c);
  g_assert_cmpuint(plan.n, ==, 0);
  c->view.now = EMA_MS(650);
  plan = decide(c);
  g_assert_cmpuint(plan.n, ==, 1);
  case_free(c);
}

/* The limit does not bind (all 120 blocks admitted): the plain policy, which
 * with 45 empty borrowed slices for 10 blocks short borrows nothing and,
 * with requests waiting, returns nothing; with more short than that it
 * borrows (30 more slices than the 45 it has: 60 blocks). Without
 * within_limit the binding limit changes nothing either. */
static void test_limit_open(void) {
  Case *c = case_new("true"), *plain = case_new("false");
  EmaBorrowPlan plan = decide(plain);
  g_assert_cmpuint(plan.n, ==, 0);
  c->gpus[0].blocks_total = 320;
  plan = decide(c);
  g_assert_cmpuint(plan.n, ==, 0);
  c->gpus[0].blocks_short = 150;
  plan = decide(c);
  g_assert_cmpuint(plan.n, ==, 1);
  g_assert_cmpint(plan.actions[0].slices, ==, 30);
  /* bound again: no borrow, however short (and no return within 250 ms) */
  c->gpus[0].blocks_total = 250;
  plan = decide(c);
  g_assert_cmpuint(plan.n, ==, 0);
  case_free(c);
  case_free(plain);
}

int main(int argc, char **argv) {
  g_test_init(&argc, &argv, NULL);
  g_test_add_func("/borrow-policy/within-limit", test_within_limit);
  g_test_add_func("/borrow-policy/limit-open", test_limit_open);
  return g_test_run();
}
