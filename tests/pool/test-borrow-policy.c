/* test-borrow-policy.c: the decisions of the `most-idle` borrow policy
 * (policies/borrow-most-idle.c) with `within_limit` (the `offload`
 * composition's), and the plans of its place hook (`place`), on hand-built
 * views, each figure computed here: 2 MiB slices of two 1 MiB blocks,
 * min_borrow 16 slices, limit_hold 250 ms.
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

/* C's parameter KEY is VALUE (as YAML gives it). */
static void set_param(Case *c, const char *key, const char *value) {
  GError *error = NULL;
  for (guint i = 0; i < c->table->n_params; i++)
    if (g_strcmp0(c->table->params[i].key, key) == 0) {
      g_assert_true(ema_params_parse_value(
          &c->table->params[i], value, (char *) c->params + c->table->params[i].offset, &error));
      g_assert_no_error(error);
      return;
    }
  g_assert_not_reached();
}

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
  set_param(c, "within_limit", within);
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
  c->view = (EmaPoolView){.n_gpus = N_GPUS,
                          .gpus = c->gpus,
                          .lent = c->lent,
                          .remote_blocks = c->remote,
                          .server = &c->server};
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

/* The room a held limit leaves (blocks_room): within_limit holds borrowed
 * room to it, not to blocks_total (admission's). Admission held at 50
 * remote blocks with the room at 120: open, and 150 short borrows 30
 * slices as in test_limit_open; the room at 50 too: bound (nothing
 * borrowed, 35 slices back after 250 ms as in test_within_limit). */
static void test_limit_room(void) {
  Case *c = case_new("true");
  guint64 room[N_GPUS] = {320};
  EmaBorrowPlan plan;
  c->view.blocks_room = room;
  c->gpus[0].blocks_short = 150;
  plan = decide(c);
  g_assert_cmpuint(plan.n, ==, 1);
  g_assert_cmpint(plan.actions[0].slices, ==, 30);
  room[0] = 250;
  plan = decide(c);
  g_assert_cmpuint(plan.n, ==, 0);
  c->view.now = EMA_MS(250);
  plan = decide(c);
  g_assert_cmpuint(plan.n, ==, 1);
  g_assert_cmpint(plan.actions[0].slices, ==, -25);
  case_free(c);
}

/* ---- placement (the place hook, `place: true`) ------------------------------------ */

#define N_REQUESTS 6
#define CACHE G_MAXUINT64 /* the prefix cache's request number */

/* A view of its own: GPU 0's 100 slices hold 200 blocks, 190 of them used
 * (10 free); lender 1 lends it 40 slices (80 blocks) and holds 30 of its
 * blocks, lender 2 20 slices (40 blocks) holding 10; the plan admits 50
 * remote blocks (blocks_total 250); nothing short, nothing waiting. Its
 * last step took 10 ms and the link copies at 10 GB/s: place_budget 25% is
 * 25,000,000 bytes, 23 blocks of 1 MiB (23.8, rounded down). Its requests,
 * in the view's order (local, lender 1, lender 2):
 *   100 running, 50 tokens to come:  10,  10, 0
 *   101 running, 500 to come:         5,  15, 5
 *   102 running, 2 to come:           0,   0, 5 (too near its end to move)
 *   the prefix cache:                 0,   5, 0
 *   103 running, 100 to come:       170,   0, 0
 *   104 preempted:                    5,   0, 0 */
typedef struct {
  Case *c;
  EmaRequestView requests[N_REQUESTS];
  guint64 at[N_REQUESTS][N_GPUS];
  guint calls; /* of requests() */
} Placing;

static const EmaRequestView *placing_requests(const EmaPoolView *view, guint gpu, guint *n) {
  Placing *pl = view->requests_data;
  g_assert_cmpuint(gpu, ==, 0);
  pl->calls++;
  *n = N_REQUESTS;
  return pl->requests;
}

static void placing_request(Placing *pl, guint i, guint64 request, EmaRequestState state,
                            gint64 remaining, guint64 local, guint64 on1, guint64 on2) {
  pl->at[i][0] = local;
  pl->at[i][1] = on1;
  pl->at[i][2] = on2;
  pl->requests[i] = (EmaRequestView){.request = request,
                                     .state = state,
                                     .blocks = local + on1 + on2,
                                     .blocks_at = pl->at[i],
                                     .last_scheduled = -1,
                                     .remaining_tokens = remaining};
}

/* most-idle with `place: true` and place_budget BUDGET on the view above. */
static Placing *placing_new(const char *budget) {
  Placing *pl = g_new0(Placing, 1);
  Case *c = pl->c = case_new("false");
  set_param(c, "place", "true");
  set_param(c, "place_budget", budget);
  c->server.link.bandwidth = 1e10;
  c->remote[0 * N_GPUS + 2] = 10;
  c->gpus[0] = (EmaGpuView){.index = 0,
                            .shares = TRUE,
                            .has_tenant = TRUE,
                            .slices = 100,
                            .slices_used = 95,
                            .slices_borrowed = 60,
                            .slices_borrowed_used = 20,
                            .block_bytes = BLOCK,
                            .blocks_total = 250,
                            .blocks_used = 230,
                            .blocks_remote = 40,
                            .running = 4,
                            .last_step = EMA_MS(10)};
  placing_request(pl, 0, 100, EMA_REQUEST_RUNNING, 50, 10, 10, 0);
  placing_request(pl, 1, 101, EMA_REQUEST_RUNNING, 500, 5, 15, 5);
  placing_request(pl, 2, 102, EMA_REQUEST_RUNNING, 2, 0, 0, 5);
  placing_request(pl, 3, CACHE, EMA_REQUEST_CACHED, -1, 0, 5, 0);
  placing_request(pl, 4, 103, EMA_REQUEST_RUNNING, 100, 170, 0, 0);
  placing_request(pl, 5, 104, EMA_REQUEST_PREEMPTED, -1, 5, 0, 0);
  c->view.requests = placing_requests;
  c->view.requests_data = pl;
  return pl;
}

static void placing_free(Placing *pl) {
  case_free(pl->c);
  g_free(pl);
}

static EmaPlacementPlan place(Placing *pl) {
  EmaPlacementPlan plan = {0};
  pl->c->ops->place(pl->c->state, pl->c->params, &pl->c->view, 0, &plan);
  return plan;
}

/* PLAN is the N actions EXPECTED, in order. */
static void assert_plan(const EmaPlacementPlan *plan, const EmaPlacementAction *expected, guint n) {
  g_assert_cmpuint(plan->n, ==, n);
  for (guint i = 0; i < n; i++) {
    g_assert_cmpuint(plan->actions[i].request, ==, expected[i].request);
    g_assert_cmpuint(plan->actions[i].from, ==, expected[i].from);
    g_assert_cmpuint(plan->actions[i].to, ==, expected[i].to);
    g_assert_cmpuint(plan->actions[i].blocks, ==, expected[i].blocks);
  }
}

/* PL's place hook plans EXPECTED (an array). */
#define ASSERT_PLAN(pl, ...)                                                                       \
  do {                                                                                             \
    const EmaPlacementAction expected_[] = {__VA_ARGS__};                                          \
    EmaPlacementPlan plan_ = place(pl);                                                            \
    assert_plan(&plan_, expected_, G_N_ELEMENTS(expected_));                                       \
  } while (0)

/* PL's place hook plans nothing and looks at no request. */
/* No local room left: 10 more local blocks used (200 of them, 40 remote). */
static void placing_fill_local(Placing *pl) {
  pl->c->gpus[0].slices_used = 100;
  pl->c->gpus[0].blocks_used = 240;
}

static void assert_no_look(Placing *pl) {
  EmaPlacementPlan plan = place(pl);
  g_assert_cmpuint(plan.n, ==, 0);
  g_assert_cmpuint(pl->calls, ==, 0);
}

/* The 10 free local blocks take the prefix cache's 5 (read by every
 * request that holds them: first), then 5 of 101's on lender 1 (500 tokens
 * to come, the most); with no local room left, preempted 104's 5 local
 * blocks go out to lender 1 (the most room: 80 - 30 + 10 moved home = 60)
 * and 5 more of 101's come in; 8 blocks of the budget of 23 are left, but
 * nothing cold remains to make room. 102 (2 tokens to come) stays. */
static void test_place_home(void) {
  Placing *pl = placing_new("25%");
  ASSERT_PLAN(pl, {CACHE, 1, 0, 5}, {101, 1, 0, 5}, {104, 0, 1, 5}, {101, 1, 0, 5});
  g_assert_cmpuint(pl->calls, ==, 1);
  /* off (the default): nothing, and the requests are not looked at */
  placing_free(pl);
  pl = placing_new("25%");
  set_param(pl->c, "place", "false");
  assert_no_look(pl);
  placing_free(pl);
}

/* The view with 100 blocks of local room (103 holds 80 local blocks, not
 * 170), place_budget BUDGET. */
static Placing *placing_roomy(const char *budget) {
  Placing *pl = placing_new(budget);
  pl->at[4][0] = 80;
  pl->requests[4].blocks = 80;
  pl->c->gpus[0].slices_used = 50;
  pl->c->gpus[0].blocks_used = 140;
  return pl;
}

/* With 100 blocks of local room (103 holding 80, not 170) the budget
 * binds: 23 blocks, the cache's 5, 101's 15 on lender 1 and 3 of its 5 on
 * lender 2. At 100% (95 blocks: 95.4) every hot remote block comes home
 * but 102's, 35 in all, and requests with as many tokens to come in the
 * view's order; with no step yet the budget is one block. */
static void test_place_budget(void) {
  Placing *pl = placing_roomy("25%");
  ASSERT_PLAN(pl, {CACHE, 1, 0, 5}, {101, 1, 0, 15}, {101, 2, 0, 3});
  pl->c->gpus[0].last_step = 0;
  ASSERT_PLAN(pl, {CACHE, 1, 0, 1});
  placing_free(pl);
  pl = placing_roomy("100%");
  ASSERT_PLAN(pl, {CACHE, 1, 0, 5}, {101, 1, 0, 15}, {101, 2, 0, 5}, {100, 1, 0, 10});
  /* a tie (100 with 500 tokens to come, as 101) goes in the view's order */
  pl->requests[0].remaining_tokens = 500;
  ASSERT_PLAN(pl, {CACHE, 1, 0, 5}, {100, 1, 0, 10}, {101, 1, 0, 15}, {101, 2, 0, 5});
  placing_free(pl);
}

/* The requests are looked at only when something can move: not without
 * remote blocks, nor without local room while nothing waits (no request
 * can be cold) or no borrowed room is free. */
static void test_place_early_out(void) {
  Placing *pl = placing_new("25%");
  EmaGpuView *g = &pl->c->gpus[0];
  g->blocks_remote = 0;
  assert_no_look(pl);
  /* no local room (190 + 10 more local blocks used), nothing waiting */
  g->blocks_remote = 40;
  placing_fill_local(pl);
  assert_no_look(pl);
  /* ...and with a request waiting, but every borrowed slice full */
  g->waiting = 1;
  pl->c->lent[1 * N_GPUS + 0] = 15;
  pl->c->lent[2 * N_GPUS + 0] = 5;
  assert_no_look(pl);
  /* borrowed room again: the requests are looked at */
  pl->c->lent[1 * N_GPUS + 0] = 40;
  place(pl);
  g_assert_cmpuint(pl->calls, ==, 1);
  placing_free(pl);
}

/* With no local room free, a look for cold local blocks that finds none
 * (104 running now) is not repeated within the horizon (2 s): the next
 * decisions plan nothing without looking; past the horizon the requests
 * are looked at again, and a cold request found then (104 preempted
 * again) makes room: its 5 blocks out, the cache's 5 in. */
static void test_place_no_cold(void) {
  Placing *pl = placing_new("25%");
  placing_fill_local(pl);
  pl->c->gpus[0].waiting = 1;
  pl->requests[5].state = EMA_REQUEST_RUNNING;
  pl->c->view.now = EMA_MS(100);
  g_assert_cmpuint(place(pl).n, ==, 0);
  g_assert_cmpuint(pl->calls, ==, 1);
  pl->requests[5].state = EMA_REQUEST_PREEMPTED;
  pl->c->view.now = EMA_MS(2099);
  g_assert_cmpuint(place(pl).n, ==, 0);
  g_assert_cmpuint(pl->calls, ==, 1);
  pl->c->view.now = EMA_MS(2100);
  ASSERT_PLAN(pl, {104, 0, 1, 5}, {CACHE, 1, 0, 5});
  g_assert_cmpuint(pl->calls, ==, 2);
  placing_free(pl);
}

/* Beyond what the plan admits (20 remote blocks of 40: blocks_total 220),
 * a block home would take a free block from the engine: with a request
 * waiting no local room is filled, only exchanged (104's 5 out, the
 * cache's 5 in); with none waiting, the room beyond the growth over the
 * horizon (2 blocks/s x 2 s = 4 of the 10) is filled (the cache's 5, 1 of
 * 101's) and then exchanged (104's 5 out, 5 of 101's in). */
static void test_place_beyond_admitted(void) {
  Placing *pl = placing_new("25%");
  EmaGpuView *g = &pl->c->gpus[0];
  g->blocks_total = 220;
  g->waiting = 3;
  ASSERT_PLAN(pl, {104, 0, 1, 5}, {CACHE, 1, 0, 5});
  g->waiting = 0;
  g->demand_blocks_per_s = 2;
  ASSERT_PLAN(pl, {CACHE, 1, 0, 5}, {101, 1, 0, 1}, {104, 0, 1, 5}, {101, 1, 0, 5});
  placing_free(pl);
}

/* affinity: lender 2 stops lending (GPU 0 holds lender 1's 40 slices, 25 of them empty); 150
 * blocks short is 75 slices, 50 beyond the empty ones. Lendable above the 10-slice reserve:
 * lender 1 100 - 40 - 10 = 50, lender 2 100 - 10 = 90. Without affinity the 50 come from the
 * most idle, lender 2; with affinity 0.5 from lender 1, which already lends and can give all
 * 50 with 50 >= 0.5 x 90; with 0.6 (50 < 54) from lender 2 again; and lender 1 giving less
 * than the whole borrow (70 short: 60 more) is passed over whatever the affinity. */
static void test_affinity(void) {
  static const struct {
    const char *affinity;
    guint64 short_blocks;
    guint lender;
    gint64 slices;
  } cases[] = {{"0", 150, 2, 50}, {"50%", 150, 1, 50}, {"60%", 150, 2, 50}, {"1", 170, 2, 60}};
  for (guint i = 0; i < G_N_ELEMENTS(cases); i++) {
    Case *c = case_new("false");
    EmaBorrowPlan plan;
    set_param(c, "affinity", cases[i].affinity);
    c->lent[2 * N_GPUS + 0] = 0;
    c->gpus[2].slices_lent = 0;
    c->gpus[0].slices_borrowed = 40;
    c->gpus[0].blocks_short = cases[i].short_blocks;
    plan = decide(c);
    g_assert_cmpuint(plan.n, ==, 1);
    g_assert_cmpuint(plan.actions[0].lender, ==, cases[i].lender);
    g_assert_cmpint(plan.actions[0].slices, ==, cases[i].slices);
    case_free(c);
  }
}

int main(int argc, char **argv) {
  g_test_init(&argc, &argv, NULL);
  g_test_add_func("/borrow-policy/within-limit", test_within_limit);
  g_test_add_func("/borrow-policy/limit-open", test_limit_open);
  g_test_add_func("/borrow-policy/limit-room", test_limit_room);
  g_test_add_func("/borrow-policy/place-home", test_place_home);
  g_test_add_func("/borrow-policy/place-budget", test_place_budget);
  g_test_add_func("/borrow-policy/place-early-out", test_place_early_out);
  g_test_add_func("/borrow-policy/place-no-cold", test_place_no_cold);
  g_test_add_func("/borrow-policy/place-beyond-admitted", test_place_beyond_admitted);
  g_test_add_func("/borrow-policy/affinity", test_affinity);
  return g_test_run();
}
