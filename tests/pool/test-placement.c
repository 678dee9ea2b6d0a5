/* test-placement.c: per-request placement in the pool mechanism
 * (sim/pool/core.c), by hand: the mechanism over the simulator's cost
 * model, three GPUs of the h200x4-hgx server (GPU0 a tenant of 8 slices, GPU1
 * a tenant of 16, GPU2 idle with 6), blocks of one slice, slices lent by
 * hand. Each case says where every request's blocks are after each take,
 * give, reclaim and placement move, and the requests' invariants are
 * checked after every action (EMA_POOL_CHECKS=all); a broken record is
 * caught with its request named; the running list follows the states,
 * and the remote-running list the states and the blocks' moves. */
#include <string.h>

#include "ema/pool/core.h"
#include "ema/pool/pool.h"
#include "ema/pool/registry.h"
#include "ema/run/experiment.h"
#include "testpolicies.h"
#include "testutil.h"

#define N 3
#define R0 10 /* running */
#define R1 11 /* running */
#define P 12  /* preempted, its KV parked */

typedef struct {
  EmaServerSpec *server;
  EmaPolicySpec spec;
  TestReclaimParams reclaim;
  EmaPoolCore core;
  EmaPoolModel model;
  EmaSliceGpu gpus[N];
} Rig;

static void rig_init(Rig *r) {
  GError *error = NULL;
  const guint64 slices[N] = {8, 16, 6};
  memset(r, 0, sizeof *r);
  test_policies_register();
  r->server = ema_server_load("h200x4-hgx", &error);
  g_assert_no_error(error);
  r->spec = (EmaPolicySpec){.name = "placement",
                            .borrow = "none",
                            .prefetch = "direct",
                            .reclaim = "test-reclaim-fixed",
                            .reclaim_params = &r->reclaim};
  g_assert_true(ema_pool_core_init(&r->core, N, r->server, &r->spec, ema_pool_model_backend(),
                                   &r->model, &error));
  r->model.server = r->server;
  r->model.ledger = &r->core.ledger;
  r->core.check_level = EMA_POOL_CHECK_ALL;
  ema_pool_core_log(&r->core);
  for (guint i = 0; i < N; i++) {
    ema_slice_gpu_setup(&r->gpus[i], i, N);
    r->gpus[i].present = r->gpus[i].shares = TRUE;
    r->gpus[i].has_tenant = i < 2;
    r->gpus[i].slices = slices[i];
    r->gpus[i].block_bytes = r->gpus[i].has_tenant ? EMA_SLICE_BYTES : 0;
    r->core.ledger.gpus[i] = &r->gpus[i];
  }
  g_assert_true(ema_pool_core_start(&r->core, &error));
}

static void rig_clear(Rig *r) {
  for (guint i = 0; i < N; i++)
    ema_slice_gpu_clear(&r->gpus[i]);
  ema_pool_core_clear(&r->core);
  ema_server_free(r->server);
}

/* REQUEST of GPU0 has L local, A on gpu1, B on gpu2, its newest on LAST. */
static void assert_at(const Rig *r, guint64 request, guint64 l, guint64 a, guint64 b, guint last) {
  const EmaPoolRequest *q = ema_pool_core_request(&r->core, 0, request);
  g_assert_nonnull(q);
  g_assert_cmpuint(ema_pool_request_at(q, 0), ==, l);
  g_assert_cmpuint(ema_pool_request_at(q, 1), ==, a);
  g_assert_cmpuint(ema_pool_request_at(q, 2), ==, b);
  g_assert_cmpuint(q->blocks, ==, l + a + b);
  /* the places mask: gpu0's bit, gpu1's, gpu2's */
  g_assert_cmpuint(q->places, ==, (l > 0 ? 1u : 0u) | (a > 0 ? 2u : 0u) | (b > 0 ? 4u : 0u));
  if (q->blocks > 0)
    g_assert_cmpuint(q->last, ==, last);
}

/* The walk of a request's lenders: the set bits in order, every place past 64. */
static void test_next_lender(void) {
  guint seen[70], n = 0;
  for (guint j = ema_pool_next_lender(0x2c, 0, 8); j < 8; j = ema_pool_next_lender(0x2c, j + 1, 8))
    seen[n++] = j;
  g_assert_cmpuint(n, ==, 3);
  g_assert_cmpuint(seen[0], ==, 2);
  g_assert_cmpuint(seen[1], ==, 3);
  g_assert_cmpuint(seen[2], ==, 5);
  g_assert_cmpuint(ema_pool_next_lender(0, 0, 8), ==, 8);
  /* 70 places: the mask is all ones and each place comes */
  n = 0;
  for (guint j = ema_pool_next_lender(G_MAXUINT64, 0, 70); j < 70;
       j = ema_pool_next_lender(G_MAXUINT64, j + 1, 70))
    seen[n++] = j;
  g_assert_cmpuint(n, ==, 70);
  g_assert_cmpuint(seen[69], ==, 69);
}

static void take(Rig *r, guint64 request, guint64 n) {
  GError *error = NULL;
  g_assert_true(ema_pool_core_take(&r->core, &r->gpus[0], request, n, &error));
  g_assert_no_error(error);
}

static void check(const Rig *r) {
  GError *error = NULL;
  g_assert_true(ema_pool_core_check(&r->core, &error));
  g_assert_no_error(error);
}

static const EmaPoolEvent *last_event(const Rig *r) {
  g_assert_cmpuint(r->core.events->len, >, 0);
  return &g_array_index(r->core.events, EmaPoolEvent, r->core.events->len - 1);
}

/* GPU1 lends GPU0 6 slices and GPU2 lends it 2; R0 fills the 8 local
 * blocks, then P (parked) takes 2 and R1 3: both to gpu1, the lender with
 * the most room (6 > 2, then 4 > 2). */
static void rig_fill(Rig *r) {
  rig_init(r);
  ema_slice_ledger_change_lent(&r->core.ledger, 1, 0, 6);
  ema_slice_ledger_change_lent(&r->core.ledger, 2, 0, 2);
  ema_pool_core_request_state(&r->core, &r->gpus[0], R0, EMA_KV_RUNNING);
  ema_pool_core_request_state(&r->core, &r->gpus[0], P, EMA_KV_PREEMPTED);
  ema_pool_core_request_state(&r->core, &r->gpus[0], R1, EMA_KV_RUNNING);
  take(r, R0, 8);
  take(r, P, 2);
  take(r, R1, 3);
  assert_at(r, R0, 8, 0, 0, 0);
  assert_at(r, P, 0, 2, 0, 1);
  assert_at(r, R1, 0, 3, 0, 1);
  check(r);
}

/* Takes, one block each, and gives: where each request's blocks are. */
static void test_take_give(void) {
  Rig r;
  const guint64 each[] = {R0, R1, P};
  const EmaRequestView *views;
  guint n;
  GError *error = NULL;
  rig_fill(&r);
  /* rooms now: local 0, gpu1 1, gpu2 2: the three go 2 to gpu2 and 1 to
   * gpu1, handed out in place order (gpu1 first) to R0, R1, P */
  g_assert_true(ema_pool_core_take_each(&r.core, &r.gpus[0], each, 3, &error));
  assert_at(&r, R0, 8, 1, 0, 1);
  assert_at(&r, R1, 0, 3, 1, 2);
  assert_at(&r, P, 0, 2, 1, 2);
  g_assert_cmpuint(r.gpus[0].local_used, ==, 8);
  g_assert_cmpuint(r.gpus[0].remote[1], ==, 6);
  g_assert_cmpuint(r.gpus[0].remote[2], ==, 2);
  /* no room left: nothing taken */
  g_assert_false(ema_pool_core_take(&r.core, &r.gpus[0], R0, 1, &error));
  g_assert_no_error(error);
  /* two of R1's blocks become the prefix cache's: its first ones, local
   * first (it has none), then gpu1 */
  ema_pool_core_to_cache(&r.core, &r.gpus[0], R1, 2);
  assert_at(&r, R1, 0, 1, 1, 2);
  assert_at(&r, EMA_KV_PREFIX_CACHE, 0, 2, 0, 1);
  check(&r);
  /* the policies' view: every request, in the order first seen */
  views = r.core.ledger.view.requests(ema_pool_core_view(&r.core), 0, &n);
  g_assert_cmpuint(n, ==, 4);
  g_assert_cmpuint(views[0].request, ==, R0);
  g_assert_cmpint(views[0].state, ==, EMA_REQUEST_RUNNING);
  g_assert_cmpuint(views[0].blocks, ==, 9);
  g_assert_cmpuint(views[0].blocks_at[0], ==, 8);
  g_assert_cmpint(views[1].state, ==, EMA_REQUEST_PREEMPTED);
  g_assert_cmpuint(views[1].blocks_at[1], ==, 2);
  g_assert_cmpint(views[3].state, ==, EMA_REQUEST_CACHED);
  g_assert_cmpint(views[3].last_scheduled, ==, -1); /* no engine to say */
  g_assert_cmpint(views[3].remaining_tokens, ==, -1);
  g_assert_null(r.core.ledger.view.requests(ema_pool_core_view(&r.core), 2, &n));
  g_assert_cmpuint(n, ==, 0);
  /* a whole request's blocks come back from where they are */
  g_assert_true(ema_pool_core_give(&r.core, &r.gpus[0], R0, 9, N, &error));
  assert_at(&r, R0, 0, 0, 0, 0);
  g_assert_cmpuint(r.gpus[0].local_used, ==, 0);
  g_assert_cmpuint(r.gpus[0].remote[1], ==, 5);
  ema_pool_core_request_state(&r.core, &r.gpus[0], R0, EMA_KV_FINISHED);
  g_assert_null(ema_pool_core_request(&r.core, 0, R0));
  /* part of the cache's: in proportion (both on gpu1) */
  g_assert_true(ema_pool_core_give(&r.core, &r.gpus[0], EMA_KV_PREFIX_CACHE, 1, N, &error));
  assert_at(&r, EMA_KV_PREFIX_CACHE, 0, 1, 0, 1);
  check(&r);
  rig_clear(&r);
}

/* GPU1 takes back its 6 slices, their data to gpu2, which can lend 4
 * (6 - 2): the hottest requests' blocks move first (R1's 3, then 1 of
 * P's), and what finds no room is the coldest's, dropped (P's other one). */
static void test_reclaim_cold_last(void) {
  Rig r;
  GError *error = NULL;
  const EmaPoolEvent *e;
  rig_fill(&r);
  r.reclaim = (TestReclaimParams){0, 6, EMA_VACATE_TO_PEER, 2, NULL};
  g_assert_true(ema_pool_core_reclaim(&r.core, 1, 6, &error));
  g_assert_no_error(error);
  assert_at(&r, R0, 8, 0, 0, 0);
  assert_at(&r, R1, 0, 0, 3, 2);
  assert_at(&r, P, 0, 0, 1, 2);
  g_assert_cmpuint(r.core.stats.blocks_migrated, ==, 4);
  g_assert_cmpuint(r.core.stats.blocks_dropped, ==, 1);
  g_assert_cmpuint(r.core.ledger.lent[2 * N + 0], ==, 2 + 4);
  g_assert_cmpuint(r.core.ledger.lent[1 * N + 0], ==, 0);
  e = last_event(&r);
  g_assert_cmpint(e->kind, ==, EMA_POOL_EVENT_RECLAIM);
  g_assert_cmpuint(e->blocks_moved, ==, 4);
  g_assert_cmpuint(e->blocks_dropped, ==, 1);
  g_assert_nonnull(strstr(e->reason, "4 blocks of 2 requests (running first) moved"));
  check(&r);
  rig_clear(&r);
}

/* A placement plan: cut to the blocks a request has there and the room
 * there is, each move an event with its copy's time. */
static void test_place(void) {
  Rig r;
  GError *error = NULL;
  EmaPlacementPlan plan = {0};
  const EmaPoolEvent *e;
  double copy;
  rig_fill(&r);
  /* no local room: refused */
  plan.n = 1;
  plan.actions[0] = (EmaPlacementAction){R1, 1, 0, 3};
  g_assert_true(ema_pool_core_place(&r.core, &r.gpus[0], &plan, "test", &error));
  e = last_event(&r);
  g_assert_cmpint(e->kind, ==, EMA_POOL_EVENT_REFUSE);
  g_assert_nonnull(strstr(e->reason, "test: request 11 (running), 3 blocks gpu1 -> gpu0"));
  g_assert_nonnull(strstr(e->reason, "3 there, room for 0"));
  g_assert_cmpuint(r.core.stats.plans_adjusted, ==, 1);
  /* R0 finishes: its 8 local blocks free; R1 comes home (3 blocks, one
   * copy), and P's 5 asked of gpu1 are cut to its 2, to gpu2 */
  g_assert_true(ema_pool_core_give(&r.core, &r.gpus[0], R0, 8, N, &error));
  plan.n = 2;
  plan.actions[1] = (EmaPlacementAction){P, 1, 2, 5};
  g_assert_true(ema_pool_core_place(&r.core, &r.gpus[0], &plan, "test", &error));
  g_assert_no_error(error);
  assert_at(&r, R1, 3, 0, 0, 0);
  assert_at(&r, P, 0, 0, 2, 2);
  g_assert_cmpuint(r.gpus[0].local_used, ==, 3);
  g_assert_cmpuint(r.gpus[0].remote_total, ==, 2);
  g_assert_cmpuint(r.core.stats.placements, ==, 2);
  g_assert_cmpuint(r.core.stats.blocks_placed, ==, 5);
  g_assert_cmpuint(r.core.stats.plans_adjusted, ==, 2);
  e = &g_array_index(r.core.events, EmaPoolEvent, r.core.events->len - 2);
  g_assert_cmpint(e->kind, ==, EMA_POOL_EVENT_PLACE);
  g_assert_cmpuint(e->blocks_moved, ==, 3);
  g_assert_cmpuint(e->bytes_copied, ==, 3 * EMA_SLICE_BYTES);
  /* the copy over the link: its fixed cost + bytes / bandwidth */
  copy = (double) r.server->link.copy_fixed_cost / 1e9 +
         3.0 * EMA_SLICE_BYTES / r.server->link.bandwidth;
  g_assert_cmpfloat_with_epsilon(e->copy_seconds, copy, 1e-12);
  g_assert_cmpfloat_with_epsilon(e->seconds, copy, 1e-12);
  check(&r);
  rig_clear(&r);
}

/* A record that does not add up is caught, its request named. */
static void test_check_catches(void) {
  Rig r;
  GError *error = NULL;
  EmaPoolRequest *q;
  rig_fill(&r);
  q = (EmaPoolRequest *) ema_pool_core_request(&r.core, 0, R1);
  q->remote_at[1]--; /* a block of R1 lost */
  q->remote_at[2]++; /* ...and found where the ledger has none of it */
  g_assert_false(ema_pool_core_check(&r.core, &error));
  g_assert_error(error, EMA_POLICY_ERROR, EMA_POLICY_ERROR_INVALID);
  g_assert_cmpstr(error->message, ==, "gpu0: its requests hold 4 blocks on gpu1, the ledger 5");
  g_clear_error(&error);
  q->remote_at[2]--;
  g_assert_false(ema_pool_core_check(&r.core, &error));
  g_assert_cmpstr(error->message, ==, "gpu0: request 11 holds 3 blocks but 2 by place");
  g_clear_error(&error);
  q->remote_at[1]++;
  check(&r);
  /* a places mask that names a place holding none of its blocks */
  q->places |= 1u << 3;
  g_assert_false(ema_pool_core_check(&r.core, &error));
  g_assert_cmpstr(error->message, ==, "gpu0: request 11's places mask is not where its blocks are");
  g_clear_error(&error);
  q->places &= ~(1u << 3);
  check(&r);
  /* a running request the running list has lost, and one it keeps but is not running */
  q->state = EMA_KV_WAITING;
  g_assert_false(ema_pool_core_check(&r.core, &error));
  g_assert_cmpstr(error->message, ==, "gpu0: request 11 is in the running list, not running");
  g_clear_error(&error);
  q->state = EMA_KV_RUNNING;
  q = (EmaPoolRequest *) ema_pool_core_request(&r.core, 0, P);
  q->state = EMA_KV_RUNNING;
  g_assert_false(ema_pool_core_check(&r.core, &error));
  g_assert_cmpstr(error->message, ==, "gpu0: request 12 is running, not in the running list");
  g_clear_error(&error);
  q->state = EMA_KV_PREEMPTED;
  check(&r);
  rig_clear(&r);
}

/* GPU's running requests, in order, are the NUMBER of EXPECTED. */
static void assert_running(const Rig *r, guint gpu, const guint64 *expected, guint number) {
  guint i = 0;
  for (const GList *l = ema_pool_core_running(&r->core, gpu); l; l = l->next, i++) {
    g_assert_cmpuint(i, <, number);
    g_assert_cmpuint(((const EmaPoolRequest *) l->data)->request, ==, expected[i]);
  }
  g_assert_cmpuint(i, ==, number);
}

/* The running list follows the requests' states: the order they started
 * to run, without the preempted, waiting and finished ones. */
static void test_running_list(void) {
  Rig r;
  const guint64 first[] = {R0, R1}, resumed[] = {R1, P}, last[] = {P};
  rig_fill(&r);
  assert_running(&r, 0, first, 2);
  ema_pool_core_request_state(&r.core, &r.gpus[0], P, EMA_KV_RUNNING);
  ema_pool_core_give(&r.core, &r.gpus[0], R0, 8, N, NULL);
  ema_pool_core_request_state(&r.core, &r.gpus[0], R0, EMA_KV_PREEMPTED);
  assert_running(&r, 0, resumed, 2);
  ema_pool_core_give(&r.core, &r.gpus[0], R1, 3, N, NULL);
  ema_pool_core_request_state(&r.core, &r.gpus[0], R1, EMA_KV_FINISHED);
  g_assert_null(ema_pool_core_request(&r.core, 0, R1));
  assert_running(&r, 0, last, 1);
  check(&r);
  rig_clear(&r);
}

/* GPU's running requests with blocks on a lender, in order, are the NUMBER of EXPECTED. */
static void assert_remote_running(const Rig *r, const guint64 *expected, guint number) {
  guint i = 0;
  for (const GList *l = ema_pool_core_remote_running(&r->core, 0); l; l = l->next, i++) {
    g_assert_cmpuint(i, <, number);
    g_assert_cmpuint(((const EmaPoolRequest *) l->data)->request, ==, expected[i]);
  }
  g_assert_cmpuint(i, ==, number);
}

/* The remote-running list follows the states and the blocks' moves, in
 * the running list's order: R1 (3 on gpu1) alone; P resumed after it; R0
 * (started first) at the head once its 9th block goes to gpu2, and out
 * again when that block goes; R1 out when preempted, P when its blocks come
 * home. A list that has lost a request, or keeps one it should not, is
 * caught. */
static void test_remote_running_list(void) {
  Rig r;
  GError *error = NULL;
  EmaPlacementPlan plan = {.n = 1};
  EmaPoolRequest *q;
  const guint64 r1[] = {R1}, r1p[] = {R1, P}, all[] = {R0, R1, P}, p[] = {P};
  rig_fill(&r);
  assert_remote_running(&r, r1, 1);
  ema_pool_core_request_state(&r.core, &r.gpus[0], P, EMA_KV_RUNNING);
  assert_remote_running(&r, r1p, 2);
  take(&r, R0, 1);
  assert_at(&r, R0, 8, 0, 1, 2); /* gpu2 has the most room left (2 > 1) */
  assert_remote_running(&r, all, 3);
  check(&r);
  /* the list loses R1: caught, and the list restored */
  q = (EmaPoolRequest *) ema_pool_core_request(&r.core, 0, R1);
  g_queue_unlink(&r.core.remote_list[0], &q->remote);
  g_assert_false(ema_pool_core_check(&r.core, &error));
  g_assert_cmpstr(error->message, ==,
                  "gpu0: running request 11 holds blocks on a lender, not next in the "
                  "remote-running list");
  g_clear_error(&error);
  g_queue_insert_after_link(&r.core.remote_list[0], r.core.remote_list[0].head, &q->remote);
  check(&r);
  g_assert_true(ema_pool_core_give(&r.core, &r.gpus[0], R0, 1, 2, &error));
  assert_at(&r, R0, 8, 0, 0, 0);
  assert_remote_running(&r, r1p, 2);
  ema_pool_core_request_state(&r.core, &r.gpus[0], R1, EMA_KV_PREEMPTED);
  assert_remote_running(&r, p, 1);
  /* R0 finishes; P's 2 blocks come home */
  g_assert_true(ema_pool_core_give(&r.core, &r.gpus[0], R0, 8, N, &error));
  ema_pool_core_request_state(&r.core, &r.gpus[0], R0, EMA_KV_FINISHED);
  plan.actions[0] = (EmaPlacementAction){P, 1, 0, 2};
  g_assert_true(ema_pool_core_place(&r.core, &r.gpus[0], &plan, "test", &error));
  g_assert_no_error(error);
  assert_at(&r, P, 2, 0, 0, 0);
  assert_remote_running(&r, NULL, 0);
  check(&r);
  /* a request kept in the list with all its blocks local: caught */
  q = (EmaPoolRequest *) ema_pool_core_request(&r.core, 0, P);
  q->remote.data = q;
  g_queue_push_tail_link(&r.core.remote_list[0], &q->remote);
  g_assert_false(ema_pool_core_check(&r.core, &error));
  g_assert_cmpstr(error->message, ==,
                  "gpu0: request 12 is in the remote-running list, not running with blocks on a "
                  "lender");
  g_clear_error(&error);
  g_queue_unlink(&r.core.remote_list[0], &q->remote);
  q->remote.data = NULL;
  check(&r);
  rig_clear(&r);
}

int main(int argc, char **argv) {
  g_test_init(&argc, &argv, NULL);
  g_test_add_func("/placement/take-give", test_take_give);
  g_test_add_func("/placement/reclaim-cold-last", test_reclaim_cold_last);
  g_test_add_func("/placement/place", test_place);
  g_test_add_func("/placement/check", test_check_catches);
  g_test_add_func("/placement/next-lender", test_next_lender);
  g_test_add_func("/placement/running", test_running_list);
  g_test_add_func("/placement/remote-running", test_remote_running_list);
  return g_test_run();
}
