/* core.c: the pool mechanism (core.h): blocks over the slice ledger, the
 * policy calls, the checks and application of their plans, the event log
 * and the invariant checks, over a backend (backend.h).
 *
 * Invariants (ema_pool_core_check, ledger.h's counters): for every GPU g,
 * its blocks' slices + lent + in flight + staging + parking fit in its
 * region; remote[j] fits in what j lends it; the totals equal the sums over
 * the lent matrix; only sharing GPUs lend or borrow; the owner's records
 * (an engine's blocks, real mappings) agree with the ledger.
 * With a deferring backend a borrow's slices are lending (lender) and
 * borrowing (borrower) until complete, and returned or reclaimed slices
 * are returning (lender); with a synchronous one those stay 0. */
#include "ema/pool/core.h"

#include <math.h>
#include <string.h>

#include "ema/pool/guard.h"
#include "ema/pool/registry.h"

#define DEFAULT_CONTEXT 2000
#define BLOCK_TOKENS 16

#define B(c) ((c)->backend)
#define D(c) ((c)->backend_data)

const char *ema_pool_event_kind_name(EmaPoolEventKind kind) {
  static const char *const names[] = {"borrow",         "return", "reclaim", "own-map",
                                      "own-unmap",      "refuse", "offload", "offload-end",
                                      "offload-refuse", "place",  "tier",    "offload-throttle",
                                      "debug"};
  return (guint) kind < G_N_ELEMENTS(names) ? names[kind] : "?";
}

const char *ema_pool_vacate_target_name(EmaVacateTarget target) {
  static const char *const names[] = {"borrower", "peer", "host", "drop"};
  return (guint) target < G_N_ELEMENTS(names) ? names[target] : "?";
}

const char *ema_pool_action_name(EmaPoolAction action) {
  static const char *const names[] = {"take",     "give",     "borrow", "return", "reclaim",
                                      "complete", "prefetch", "swap",   "tick",   "place"};
  return (guint) action < G_N_ELEMENTS(names) ? names[action] : "?";
}

/* ---- the requests' blocks -------------------------------------------------- */

static void request_free(EmaPoolRequest *r) {
  g_free(r->remote_at);
  g_free(r);
}

static EmaPoolRequest *request_find(const EmaPoolCore *c, guint gpu, guint64 request) {
  return ema_id_map_lookup(c->requests[gpu], request);
}

#define AT(r, p) ema_pool_request_at(r, p)

/* R's places mask (EmaPoolRequest.places) as its at[] says. */
static guint64 request_places(const EmaPoolCore *c, const EmaPoolRequest *r) {
  guint64 places = 0;
  for (guint p = 0; p < MIN(c->n, 64); p++)
    if (AT(r, p) > 0)
      places |= G_GUINT64_CONSTANT(1) << p;
  return places;
}

/* Where R's count of blocks on place P is kept: its own slices' in the
 * record, a lender's in remote_at[], made (of C's n places) at its first. */
static inline guint64 *request_slot(const EmaPoolCore *c, EmaPoolRequest *r, guint p) {
  if (p == r->gpu)
    return &r->local;
  if (r->remote_at == NULL)
    r->remote_at = g_new0(guint64, c->n);
  return &r->remote_at[p];
}

/* K more of R's blocks on place P, or K fewer: at[] and its mask (K = 0 touches neither, so a
 * local-only request makes no lenders' array for a move of none). */
static inline void request_add(const EmaPoolCore *c, EmaPoolRequest *r, guint p, guint64 k) {
  if (k == 0)
    return;
  *request_slot(c, r, p) += k;
  if (p < 64)
    r->places |= G_GUINT64_CONSTANT(1) << p;
}

static inline void request_sub(const EmaPoolCore *c, EmaPoolRequest *r, guint p, guint64 k) {
  guint64 *at;
  if (k == 0)
    return;
  at = request_slot(c, r, p);
  *at -= k;
  if (*at == 0 && p < 64)
    r->places &= ~(G_GUINT64_CONSTANT(1) << p);
}

/* R of GPU's tenant is in GPU's remote-running list while it runs with
 * blocks on a lender: called after anything that changes its state, its
 * blocks or their places. The list keeps the running list's order (by
 * started; a request joins it near its end, or it is short). */
static void request_placed(EmaPoolCore *c, guint gpu, EmaPoolRequest *r) {
  gboolean is = r->running.data != NULL && AT(r, gpu) < r->blocks, was = r->remote.data != NULL;
  GQueue *q = &c->remote_list[gpu];
  GList *before = q->tail;
  if (is == was)
    return;
  if (!is) {
    g_queue_unlink(q, &r->remote);
    r->remote.data = NULL;
    return;
  }
  while (before && ((const EmaPoolRequest *) before->data)->started > r->started)
    before = before->prev;
  r->remote.data = r;
  g_queue_insert_after_link(q, before, &r->remote); /* before NULL: at the head */
}

/* R of GPU's tenant is now in STATE: in GPU's running list while running. */
static void request_set_state(EmaPoolCore *c, guint gpu, EmaPoolRequest *r, EmaKvState state) {
  gboolean was = r->running.data != NULL, is = state == EMA_KV_RUNNING;
  r->state = state;
  if (is && !was) {
    r->running.data = r;
    r->started = c->starts++;
    g_queue_push_tail_link(&c->running_list[gpu], &r->running);
  } else if (was && !is) {
    g_queue_unlink(&c->running_list[gpu], &r->running);
    r->running.data = NULL;
  }
  request_placed(c, gpu, r);
}

void ema_pool_core_set_engine_ref(EmaPoolCore *c, guint gpu, guint64 request, gpointer ref) {
  EmaPoolRequest *r = request_find(c, gpu, request);
  g_assert(r != NULL);
  r->engine_ref = ref;
}

/* REQUEST of GPU's tenant, made when it is new. */
static EmaPoolRequest *request_get(EmaPoolCore *c, guint gpu, guint64 request) {
  EmaPoolRequest *r = request_find(c, gpu, request);
  if (r)
    return r;
  r = g_new0(EmaPoolRequest, 1);
  r->request = request;
  r->gpu = gpu;
  r->last = gpu;
  r->link.data = r;
  ema_id_map_insert(c->requests[gpu], request, r);
  g_queue_push_tail_link(&c->request_list[gpu], &r->link);
  request_set_state(c, gpu, r,
                    request == EMA_KV_PREFIX_CACHE ? EMA_KV_CACHED
                    : request == EMA_KV_UNNAMED    ? EMA_KV_RUNNING
                                                   : EMA_KV_WAITING);
  return r;
}

/* K blocks of R move from place FROM to place TO (counts only). */
static void request_shift(const EmaPoolCore *c, EmaPoolRequest *r, guint from, guint to,
                          guint64 k) {
  g_assert_cmpuint(k, <=, AT(r, from));
  request_sub(c, r, from, k);
  request_add(c, r, to, k);
  if (AT(r, from) == 0 && r->last == from)
    r->last = to;
}

/* R's newest block is where it still has blocks (after some left). */
static void request_fix_last(const EmaPoolCore *c, EmaPoolRequest *r) {
  if (r->blocks == 0 || AT(r, r->last) > 0)
    return;
  for (guint p = 0; p < c->n; p++)
    if (AT(r, p) > 0)
      r->last = p;
}

const EmaPoolRequest *ema_pool_core_request(const EmaPoolCore *c, guint gpu, guint64 request) {
  return request_find(c, gpu, request);
}

const GList *ema_pool_core_requests(const EmaPoolCore *c, guint gpu) {
  return c->request_list[gpu].head;
}

const GList *ema_pool_core_running(const EmaPoolCore *c, guint gpu) {
  return c->running_list[gpu].head;
}

const GList *ema_pool_core_remote_running(const EmaPoolCore *c, guint gpu) {
  return c->remote_list[gpu].head;
}

void ema_pool_core_request_state(EmaPoolCore *c, EmaSliceGpu *g, guint64 request,
                                 EmaKvState state) {
  EmaPoolRequest *r;
  if (state == EMA_KV_FINISHED) {
    r = request_find(c, g->index, request);
    if (r == NULL)
      return;
    g_assert_cmpuint(r->blocks, ==, 0); /* it gave everything back first */
    ema_id_map_remove(c->requests[g->index], request);
    g_queue_unlink(&c->request_list[g->index], &r->link);
    request_set_state(c, g->index, r, state);
    request_free(r);
    return;
  }
  request_set_state(c, g->index, request_get(c, g->index, request), state);
}

void ema_pool_core_to_cache(EmaPoolCore *c, EmaSliceGpu *g, guint64 request, guint64 n) {
  EmaPoolRequest *r = request_get(c, g->index, request);
  EmaPoolRequest *cache = request_get(c, g->index, EMA_KV_PREFIX_CACHE);
  guint64 left = n;
  g_assert_cmpuint(n, <=, r->blocks);
  /* its first blocks: the local ones first (takes are local first) */
  for (guint k = 0; left > 0 && k < c->n; k++) {
    guint p = (g->index + k) % c->n;
    guint64 m = MIN(left, AT(r, p));
    request_sub(c, r, p, m);
    request_add(c, cache, p, m);
    if (m > 0)
      cache->last = p;
    left -= m;
  }
  r->blocks -= n;
  cache->blocks += n;
  request_fix_last(c, r);
  request_placed(c, g->index, r);
}

const char *ema_request_state_name(EmaRequestState state) {
  static const char *const names[] = {"waiting", "running", "preempted", "cached"};
  return (guint) state < G_N_ELEMENTS(names) ? names[state] : "?";
}

/* The policies' state of a request. */
static EmaRequestState view_state(EmaKvState state) {
  switch (state) {
  case EMA_KV_RUNNING:
    return EMA_REQUEST_RUNNING;
  case EMA_KV_PREEMPTED:
    return EMA_REQUEST_PREEMPTED;
  case EMA_KV_CACHED:
    return EMA_REQUEST_CACHED;
  default:
    return EMA_REQUEST_WAITING;
  }
}

/* EmaPoolView.requests: GPU's requests, built now. */
static const EmaRequestView *view_requests(const EmaPoolView *view, guint gpu, guint *n) {
  EmaPoolCore *c = view->requests_data;
  *n = 0;
  if (gpu >= c->n || !c->ledger.gpus[gpu]->has_tenant)
    return NULL;
  /* sized once and filled in place (appending each took as long as describing it);
   * blocks_at a copy of the request's row, so that a policy writing into its
   * read-only view cannot reach the pool's records */
  g_array_set_size(c->request_views, c->request_list[gpu].length);
  g_array_set_size(c->request_at, c->request_list[gpu].length * c->n);
  for (const GList *l = c->request_list[gpu].head; l; l = l->next) {
    EmaPoolRequest *r = l->data;
    EmaRequestView *v = &g_array_index(c->request_views, EmaRequestView, *n);
    guint64 *at = &g_array_index(c->request_at, guint64, *n * c->n);
    if (r->remote_at)
      memcpy(at, r->remote_at, c->n * sizeof(guint64));
    else
      memset(at, 0, c->n * sizeof(guint64));
    at[gpu] = r->local;
    *v = (EmaRequestView){.request = r->request,
                          .state = view_state(r->state),
                          .blocks = r->blocks,
                          .blocks_at = at,
                          .last_scheduled = -1,
                          .remaining_tokens = -1};
    if (c->describe)
      c->describe(c->owner_data, gpu, r, v);
    ++*n;
  }
  return (const EmaRequestView *) (gpointer) c->request_views->data;
}

/* How cold R is, for the order of moves and drops: waiting or preempted
 * requests' KV first, then the prefix cache's, then running requests'. */
static guint coldness_rank(const EmaPoolRequest *r) {
  switch (r->state) {
  case EMA_KV_WAITING:
  case EMA_KV_PREEMPTED:
    return 0;
  case EMA_KV_CACHED:
    return 1;
  default:
    return 2;
  }
}

/* N of G's blocks on place FROM leave it, taken from its requests cold
 * first (then newest first): to place TO (TO < n), or gone (TO = n). HOT
 * reverses the rank order (hot first: a move into local room). *REQUESTS
 * (may be NULL): how many requests gave blocks. */
static void requests_take_from(EmaPoolCore *c, EmaSliceGpu *g, guint from, guint to, guint64 n,
                               gboolean hot, guint *requests) {
  guint64 left = n;
  guint touched = 0;
  for (guint pass = 0; left > 0 && pass < 3; pass++) {
    guint rank = hot ? 2 - pass : pass;
    for (GList *l = c->request_list[g->index].tail; left > 0 && l; l = l->prev) {
      EmaPoolRequest *r = l->data;
      guint64 k;
      if (coldness_rank(r) != rank || AT(r, from) == 0)
        continue;
      k = MIN(left, AT(r, from));
      if (to < c->n) {
        request_shift(c, r, from, to, k);
      } else {
        request_sub(c, r, from, k);
        r->blocks -= k;
        request_fix_last(c, r);
      }
      request_placed(c, g->index, r);
      left -= k;
      touched++;
    }
  }
  g_assert_cmpuint(left, ==, 0); /* the requests' blocks add up to the GPU's */
  if (requests)
    *requests = touched;
}

/* The requests' invariants of G: their blocks on each place add up to the
 * ledger's, each request's to its total, the running list holds the
 * running ones and the remote-running list those of them with blocks on a
 * lender, in order (request_placed's, against a fresh filter). */
static gboolean check_requests(const EmaPoolCore *c, const EmaSliceGpu *g, GError **error) {
  guint64 *sum = g_newa(guint64, c->n);
  guint running = 0;
  const GList *remote = c->remote_list[g->index].head;
  memset(sum, 0, c->n * sizeof *sum);
  for (const GList *l = c->request_list[g->index].head; l; l = l->next) {
    const EmaPoolRequest *r = l->data;
    guint64 total = 0;
    if ((r->state == EMA_KV_RUNNING) != (r->running.data != NULL))
      return ema_slice_ledger_invalid(
          error, "gpu%u: request %" G_GUINT64_FORMAT " is %s", g->index, r->request,
          r->state == EMA_KV_RUNNING ? "running, not in the running list"
                                     : "in the running list, not running");
    running += r->state == EMA_KV_RUNNING;
    for (guint p = 0; p < c->n; p++) {
      sum[p] += AT(r, p);
      total += AT(r, p);
    }
    if (total != r->blocks)
      return ema_slice_ledger_invalid(error,
                                      "gpu%u: request %" G_GUINT64_FORMAT
                                      " holds %" G_GUINT64_FORMAT " blocks but %" G_GUINT64_FORMAT
                                      " by place",
                                      g->index, r->request, r->blocks, total);
    if (r->blocks > 0 && AT(r, r->last) == 0)
      return ema_slice_ledger_invalid(error,
                                      "gpu%u: request %" G_GUINT64_FORMAT
                                      "'s newest block is on gpu%u, where it has none",
                                      g->index, r->request, r->last);
  }
  if (running != c->running_list[g->index].length)
    return ema_slice_ledger_invalid(error, "gpu%u: %u requests running, %u in the running list",
                                    g->index, running, c->running_list[g->index].length);
  /* the remote-running list: the running ones with blocks on a lender, in order */
  for (const GList *l = c->running_list[g->index].head; l; l = l->next) {
    const EmaPoolRequest *r = l->data;
    if (AT(r, g->index) == r->blocks)
      continue;
    if (remote == NULL || remote->data != r)
      return ema_slice_ledger_invalid(error,
                                      "gpu%u: running request %" G_GUINT64_FORMAT
                                      " holds blocks on a lender, not next in the remote-running "
                                      "list",
                                      g->index, r->request);
    remote = remote->next;
  }
  if (remote != NULL)
    return ema_slice_ledger_invalid(error,
                                    "gpu%u: request %" G_GUINT64_FORMAT
                                    " is in the remote-running list, not running with blocks on "
                                    "a lender",
                                    g->index, ((const EmaPoolRequest *) remote->data)->request);
  for (guint p = 0; p < c->n; p++) {
    guint64 ledger = p == g->index ? g->local_used : g->remote[p];
    if (sum[p] != ledger)
      return ema_slice_ledger_invalid(error,
                                      "gpu%u: its requests hold %" G_GUINT64_FORMAT
                                      " blocks on gpu%u, the ledger %" G_GUINT64_FORMAT,
                                      g->index, sum[p], p, ledger);
  }
  for (const GList *l = c->request_list[g->index].head; l; l = l->next) {
    const EmaPoolRequest *r = l->data;
    if (r->places != request_places(c, r))
      return ema_slice_ledger_invalid(
          error, "gpu%u: request %" G_GUINT64_FORMAT "'s places mask is not where its blocks are",
          g->index, r->request);
  }
  return TRUE;
}

/* ---- set-up ------------------------------------------------------------- */

static EmaPoolCheckLevel check_level_from_env(void) {
  const char *env = g_getenv("EMA_POOL_CHECKS");
  if (env == NULL || *env == '\0' || strcmp(env, "sample") == 0)
    return EMA_POOL_CHECK_SAMPLED;
  if (strcmp(env, "all") == 0)
    return EMA_POOL_CHECK_ALL;
  if (strcmp(env, "off") == 0)
    return EMA_POOL_CHECK_OFF;
  return (EmaPoolCheckLevel) -1; /* ema_pool_core_init says so */
}

/* EmaPoolView.debug: a policy's line, a "debug" event of GPU */
static void view_debug(const EmaPoolView *view, guint gpu, const char *message) {
  EmaPoolCore *c = view->debug_data;
  if (gpu < c->n)
    ema_pool_core_note(c, EMA_POOL_EVENT_DEBUG, gpu, gpu, 0, 0, 0, 0, message);
}

gboolean ema_pool_core_init(EmaPoolCore *c, guint n, const EmaServerSpec *server,
                            const EmaPolicySpec *policy, const EmaPoolBackend *backend,
                            gpointer backend_data, GError **error) {
  const char *names[3] = {policy->borrow, policy->prefetch, policy->reclaim};
  memset(c, 0, sizeof *c);
  c->n = n;
  c->server = server;
  c->spec = policy;
  c->backend = backend;
  c->backend_data = backend_data;
  ema_slice_ledger_init(&c->ledger, n);
  c->scratch = g_new0(guint64, n);
  c->bytes_scratch = g_new0(double, n);
  c->lacking = g_new0(guint64, n);
  c->models = g_new0(const EmaStepModel *, n);
  c->requests = g_new0(EmaIdMap *, n);
  c->request_list = g_new0(GQueue, n);
  c->running_list = g_new0(GQueue, n);
  c->remote_list = g_new0(GQueue, n);
  for (guint i = 0; i < n; i++)
    c->requests[i] = ema_id_map_new();
  c->request_views = g_array_new(FALSE, FALSE, sizeof(EmaRequestView));
  c->request_at = g_array_new(FALSE, FALSE, sizeof(guint64));
  c->ledger.view.requests = view_requests;
  c->ledger.view.requests_data = c;
  c->ledger.view.debug = view_debug;
  c->ledger.view.debug_data = c;
  c->context_tokens = DEFAULT_CONTEXT;
  c->check_level = check_level_from_env();
  c->check_scale = ema_pool_check_scale(n);
  if (c->check_level == (EmaPoolCheckLevel) -1)
    return ema_slice_ledger_invalid(error, "EMA_POOL_CHECKS=%s: give all, sample or off",
                                    g_getenv("EMA_POOL_CHECKS"));
  c->blocks_untracked = backend->own == NULL && backend->fill == NULL;
  for (guint k = 0; k < 3; k++) {
    c->policies[k] = ema_policy_registry_find((EmaPolicyKind) k, names[k], error);
    if (c->policies[k] == NULL)
      return FALSE;
  }
  return TRUE;
}

void ema_pool_core_clear(EmaPoolCore *c) {
  ema_slice_ledger_clear(&c->ledger);
  g_free(c->scratch);
  g_free(c->bytes_scratch);
  g_free(c->lacking);
  g_free(c->models);
  for (guint i = 0; c->requests && i < c->n; i++) {
    for (GList *l = c->request_list[i].head; l;) {
      EmaPoolRequest *r = l->data;
      l = l->next;
      request_free(r);
    }
    ema_id_map_free(c->requests[i], NULL);
  }
  g_free(c->requests);
  g_free(c->request_list);
  g_free(c->running_list);
  g_free(c->remote_list);
  if (c->request_views)
    g_array_unref(c->request_views);
  if (c->request_at)
    g_array_unref(c->request_at);
  if (c->events)
    g_array_unref(c->events);
  memset(c, 0, sizeof *c);
}

void ema_slice_gpu_setup(EmaSliceGpu *g, guint index, guint n) {
  memset(g, 0, sizeof *g);
  g->index = index;
  g->ranks = 1;
  g->remote = g_new0(guint64, n);
  g->plan = ema_prefetch_plan_start();
  g->refused_by = G_MAXUINT;
  g->refused_at = G_MININT64 / 2; /* never */
}

void ema_slice_gpu_clear(EmaSliceGpu *g) {
  for (guint k = 0; k < 3; k++)
    g_clear_pointer(&g->states[k], g_free);
  g_clear_pointer(&g->remote, g_free);
}

void ema_pool_core_log(EmaPoolCore *c) {
  if (c->events == NULL)
    c->events = g_array_new(FALSE, FALSE, sizeof(EmaPoolEvent));
}

gboolean ema_pool_core_start(EmaPoolCore *c, GError **error) {
  gconstpointer params[3] = {c->spec->borrow_params, c->spec->prefetch_params,
                             c->spec->reclaim_params};
  return ema_slice_ledger_init_policies(&c->ledger, c->policies, params, c->now, c->server, error);
}

/* ---- events --------------------------------------------------------------- */

static EmaPoolEvent event_start(const EmaPoolCore *c, EmaPoolEventKind kind, guint gpu,
                                guint peer) {
  EmaPoolEvent e = {.tick = c->tick, .at = c->now, .kind = kind, .gpu = gpu, .peer = peer};
  e.started = B(c)->clock ? B(c)->clock(D(c)) : (double) c->now / 1e9;
  return e;
}

/* Adds to E's reason (cut to its size). */
G_GNUC_PRINTF(2, 3) static void reason_add(EmaPoolEvent *e, const char *format, ...) {
  gsize used = strlen(e->reason);
  va_list args;
  va_start(args, format);
  g_vsnprintf(e->reason + used, sizeof e->reason - used, format, args);
  va_end(args);
}

static const char *policy_name(const EmaPoolCore *c, EmaPolicyKind kind) {
  return c->policies[kind] ? c->policies[kind]->name : "?";
}

gboolean ema_pool_core_wants(const EmaPoolCore *c, EmaPoolEventKind kind) {
  return c->events != NULL || (c->on_event != NULL && (c->on_event_kinds >> kind & 1));
}

static void event_push(EmaPoolCore *c, const EmaPoolEvent *e) {
  if (c->events)
    g_array_append_val(c->events, *e);
  if (c->on_event && (c->on_event_kinds >> e->kind & 1))
    c->on_event(c->on_event_data, e);
}

void ema_pool_core_note_event(EmaPoolCore *c, const EmaPoolEvent *what) {
  EmaPoolEvent e = *what;
  EmaPoolEvent start = event_start(c, what->kind, what->gpu, what->peer);
  e.tick = start.tick;
  e.at = start.at;
  e.started = start.started;
  event_push(c, &e);
}

void ema_pool_core_note(EmaPoolCore *c, EmaPoolEventKind kind, guint gpu, guint peer,
                        guint64 blocks, guint64 dropped, guint64 bytes, double seconds,
                        const char *reason) {
  EmaPoolEvent e = event_start(c, kind, gpu, peer);
  e.blocks_moved = blocks;
  e.blocks_dropped = dropped;
  e.bytes_copied = bytes;
  e.seconds = e.copy_seconds = seconds;
  /* reason_add's cut, without printf (E's reason is all zeros) */
  memcpy(e.reason, reason, strnlen(reason, sizeof e.reason - 1));
  event_push(c, &e);
}

static EmaTime ns(double seconds) {
  return (EmaTime) ema_llround(seconds * 1e9);
}

/* ---- the tenant's blocks ----------------------------------------------------- */

/* ema_pool_core_sync_own, adding its time to *SECONDS. */
static gboolean sync_own(EmaPoolCore *c, EmaSliceGpu *g, double *seconds, GError **error) {
  gint64 changed = 0;
  EmaPoolEvent e;
  if (B(c)->own == NULL)
    return TRUE;
  e = event_start(c, EMA_POOL_EVENT_OWN_MAP, g->index, g->index);
  if (!B(c)->own(D(c), g->index, ema_slices_for_blocks(g, g->local_used) + g->staging, &changed,
                 &e.seconds, error))
    return FALSE;
  *seconds += e.seconds;
  if (changed == 0)
    return TRUE;
  if (changed < 0) {
    e.kind = EMA_POOL_EVENT_OWN_UNMAP;
    e.unmap_seconds = e.seconds;
  } else {
    e.map_seconds = e.seconds;
  }
  e.slices = (guint64) (changed < 0 ? -changed : changed);
  reason_add(&e,
             "own blocks and staging: %" G_GUINT64_FORMAT " blocks, %" G_GUINT64_FORMAT
             " staging slices",
             g->local_used, g->staging);
  event_push(c, &e);
  return TRUE;
}

gboolean ema_pool_core_sync_own(EmaPoolCore *c, EmaSliceGpu *g, GError **error) {
  double seconds = 0;
  return sync_own(c, g, &seconds, error);
}

/* Own slices for LOCAL more local blocks of G (before they are counted);
 * adds the time to *SECONDS. */
static gboolean own_for(EmaPoolCore *c, EmaSliceGpu *g, guint64 local, double *seconds,
                        GError **error) {
  guint64 used = g->local_used;
  gboolean ok;
  if (B(c)->own == NULL)
    return TRUE;
  g->local_used += local;
  ok = sync_own(c, g, seconds, error);
  g->local_used = used;
  return ok;
}

/* Where N new blocks of G go: *LOCAL local, ADD[j] (c->scratch, zeroed
 * here) on lender j: local first, then the lender with the most free room
 * for g's blocks (ties to the lowest index). FALSE when they do not fit. */
static gboolean take_places(EmaPoolCore *c, EmaSliceGpu *g, guint64 n, guint64 *local_out) {
  guint64 local_cap = ema_slice_gpu_local_capacity(g);
  guint64 local = MIN(n, local_cap > g->local_used ? local_cap - g->local_used : 0);
  guint64 rest = n - local;
  guint64 *add = c->scratch;
  *local_out = local;
  if (rest > 0 && g->remote_cap_total < g->remote_total + rest)
    return FALSE;
  memset(add, 0, c->n * sizeof *add);
  while (rest > 0) {
    guint best = c->n;
    guint64 most = 0;
    /* the GPUs lending it slices (the others have no room for its blocks), in index order */
    EMA_SLICE_LEDGER_FOR_EACH_LENDER (&c->ledger, g->index, j) {
      guint64 cap = ema_slice_ledger_remote_capacity(&c->ledger, g, j),
              have = g->remote[j] + add[j];
      guint64 room = cap > have ? cap - have : 0;
      if (room > most) {
        most = room;
        best = j;
      }
    }
    g_assert(best < c->n); /* the rooms add up to at least what was asked */
    add[best] += MIN(most, rest);
    rest -= MIN(most, rest);
  }
  return TRUE;
}

/* The N blocks take_places gave (LOCAL local, c->scratch's on lenders)
 * become G's: slices mapped, blocks written, counted. */
static gboolean take_apply(EmaPoolCore *c, EmaSliceGpu *g, guint64 n, guint64 local,
                           GError **error) {
  const guint64 *add = c->scratch;
  double seconds = 0;
  /* the local blocks' slices first: nothing changes if they cannot be had */
  if (local > 0 && !own_for(c, g, local, &seconds, error))
    return FALSE;
  g->local_used += local;
  ema_slice_gpu_touch(g);
  if (B(c)->fill && local > 0 && !B(c)->fill(D(c), g->index, g->index, local, error))
    return FALSE;
  for (guint j = 0; local < n && j < c->n; j++) {
    if (add[j] == 0)
      continue;
    ema_slice_ledger_change_remote(&c->ledger, g, j, (gint64) add[j]);
    g->remote_total += add[j];
    if (B(c)->fill && !B(c)->fill(D(c), g->index, j, add[j], error))
      return FALSE;
  }
  return TRUE;
}

/* K of the N blocks just placed, from the K-th on (LOCAL local first, then
 * c->scratch's lenders in index order), become R's. */
static void take_assign(EmaPoolCore *c, EmaSliceGpu *g, EmaPoolRequest *r, guint64 first, guint64 k,
                        guint64 local) {
  const guint64 *add = c->scratch;
  guint64 at = 0; /* where the places' run starts */
  for (guint p = 0; p <= c->n && k > 0; p++) {
    guint place = p == 0 ? g->index : p - 1;
    guint64 count = p == 0 ? local : add[place];
    guint64 lo = MAX(at, first), hi = MIN(at + count, first + k);
    if (p > 0 && place == g->index)
      continue;
    if (hi > lo) {
      request_add(c, r, place, hi - lo);
      r->blocks += hi - lo;
      r->last = place;
      k -= hi - lo;
      first = hi;
    }
    at += count;
  }
  request_placed(c, g->index, r);
}

/* N blocks all fit locally and the backend has nothing to map or write for
 * them (the simulator's common case): what take_places, take_apply and
 * take_assign would do, in short. */
static gboolean take_fits_local(const EmaPoolCore *c, const EmaSliceGpu *g, guint64 n) {
  return c->blocks_untracked && g->local_used + n <= ema_slice_gpu_local_capacity(g);
}

/* K local blocks of such a take become R's (its blocks on lenders stay as
 * they were: no change to the remote-running list). */
static void take_local(EmaPoolCore *c, const EmaSliceGpu *g, EmaPoolRequest *r, guint64 k) {
  request_add(c, r, g->index, k);
  r->blocks += k;
  r->last = g->index;
}

gboolean ema_pool_core_take(EmaPoolCore *c, EmaSliceGpu *g, guint64 request, guint64 n,
                            GError **error) {
  guint64 local;
  EmaPoolRequest *r;
  if (n == 0)
    return TRUE;
  r = request_get(c, g->index, request);
  if (take_fits_local(c, g, n)) {
    g->local_used += n;
    ema_slice_gpu_note_local_use(g);
    take_local(c, g, r, n);
    ema_pool_core_checked(c, EMA_POOL_ACTION_TAKE, g->index);
    return TRUE;
  }
  if (!take_places(c, g, n, &local) || !take_apply(c, g, n, local, error))
    return FALSE;
  take_assign(c, g, r, 0, n, local);
  ema_pool_core_checked(c, EMA_POOL_ACTION_TAKE, g->index);
  return TRUE;
}

gboolean ema_pool_core_take_each(EmaPoolCore *c, EmaSliceGpu *g, const guint64 *requests, guint64 n,
                                 GError **error) {
  guint64 local;
  if (n == 0)
    return TRUE;
  if (take_fits_local(c, g, n)) {
    g->local_used += n;
    ema_slice_gpu_note_local_use(g);
    for (guint64 i = 0; i < n; i++)
      take_local(c, g, request_get(c, g->index, requests[i]), 1);
    ema_pool_core_checked(c, EMA_POOL_ACTION_TAKE, g->index);
    return TRUE;
  }
  if (!take_places(c, g, n, &local) || !take_apply(c, g, n, local, error))
    return FALSE;
  for (guint64 i = 0; i < n; i++)
    take_assign(c, g, request_get(c, g->index, requests[i]), i, 1, local);
  ema_pool_core_checked(c, EMA_POOL_ACTION_TAKE, g->index);
  return TRUE;
}

/* The places of a request whose mask (EmaPoolRequest.places) is PLACES
 * from J on (ema_pool_next_lender: every place past the mask's 64). */
#define FOR_EACH_PLACE(c, places, j)                                                               \
  for (guint j = ema_pool_next_lender(places, 0, (c)->n); j < (c)->n;                              \
       j = ema_pool_next_lender(places, j + 1, (c)->n))

/* N of R's remote blocks go: FIRST (if < n) first, then in proportion to
 * its share on each lender, the remainder from the largest; GONE[j] (zeroed
 * here on R's places, R->places' walk: nothing leaves the others, whose
 * terms below are 0) what left lender j. */
static void give_remote(EmaPoolCore *c, EmaSliceGpu *g, EmaPoolRequest *r, guint64 n, guint first,
                        guint64 *gone) {
  guint64 left = n, total = r->blocks - r->local, places = r->places;
  FOR_EACH_PLACE (c, places, j)
    gone[j] = 0;
  if (first < c->n && first != g->index && AT(r, first) > 0) {
    guint64 k = MIN(left, AT(r, first));
    gone[first] += k;
    left -= k;
    total -= k;
  }
  if (left > 0 && total > 0) {
    guint64 share_total = left;
    FOR_EACH_PLACE (c, places, j) {
      guint64 have, k;
      if (left == 0)
        break;
      have = j == g->index ? 0 : AT(r, j) - gone[j];
      k = MIN(have, share_total * have / total);
      gone[j] += MIN(left, k);
      left -= MIN(left, k);
    }
  }
  while (left > 0) {
    guint best = c->n;
    guint64 most = 0;
    FOR_EACH_PLACE (c, places, j)
      if (j != g->index && AT(r, j) - gone[j] > most) {
        most = AT(r, j) - gone[j];
        best = j;
      }
    g_assert(best < c->n);
    gone[best]++;
    left--;
  }
}

gboolean ema_pool_core_give(EmaPoolCore *c, EmaSliceGpu *g, guint64 request, guint64 n, guint first,
                            GError **error) {
  EmaPoolRequest *r;
  guint64 used, rremote, remote, places;
  guint64 *gone = c->scratch;
  if (n == 0)
    return TRUE;
  r = request_find(c, g->index, request);
  g_assert(r != NULL);
  places = r->places; /* where blocks may go from (give_remote), before they do */
  used = r->blocks;
  rremote = used - r->local;
  g_assert_cmpuint(n, <=, used);
  if (n == used) {
    remote = rremote;
  } else if (first < c->n) {
    remote = MIN(n, rremote);
  } else {
    /* in proportion, rounded to the nearest */
    remote = (guint64) floor((double) n * (double) rremote / (double) used + 0.5);
    remote = MIN(remote, rremote);
    if (n - remote > r->local)
      remote = n - r->local;
  }
  if (remote > 0) {
    give_remote(c, g, r, remote, first, gone);
    FOR_EACH_PLACE (c, places, j) {
      if (gone[j] == 0)
        continue;
      request_sub(c, r, j, gone[j]);
      ema_slice_ledger_change_remote(&c->ledger, g, j, -(gint64) gone[j]);
      if (B(c)->forget)
        B(c)->forget(D(c), g->index, j, gone[j]);
    }
    g->remote_total -= remote;
  }
  request_sub(c, r, g->index, n - remote);
  r->blocks -= n;
  request_fix_last(c, r);
  request_placed(c, g->index, r);
  g->local_used -= n - remote;
  if (remote > 0)
    ema_slice_gpu_touch(g);
  else
    ema_slice_gpu_note_local_use(g);
  if (B(c)->forget && n > remote)
    B(c)->forget(D(c), g->index, g->index, n - remote);
  if (B(c)->own && !ema_pool_core_sync_own(c, g, error))
    return FALSE;
  ema_pool_core_checked(c, EMA_POOL_ACTION_GIVE, g->index);
  return TRUE;
}

/* Exactly N of G's blocks on LENDER go (their data is gone or copied
 * out): the coldest requests' first. */
static void remove_remote(EmaPoolCore *c, EmaSliceGpu *g, guint lender, guint64 n) {
  g_assert(n <= g->remote[lender]);
  requests_take_from(c, g, lender, c->n, n, FALSE, NULL);
  ema_slice_ledger_change_remote(&c->ledger, g, lender, -(gint64) n);
  g->remote_total -= n;
  ema_slice_gpu_touch(g);
  if (B(c)->forget)
    B(c)->forget(D(c), g->index, lender, n);
}

/* ---- applying plans ---------------------------------------------------------- */

/* BORROWER borrows SLICES from LENDER (cut to what LENDER can lend). */
static gboolean apply_borrow(EmaPoolCore *c, guint borrower, guint lender, guint64 slices,
                             GError **error) {
  EmaPoolEvent e = event_start(c, EMA_POOL_EVENT_BORROW, borrower, lender);
  const EmaSliceGpu *b = c->ledger.gpus[borrower];
  guint64 asked = slices, limit = ema_slice_ledger_borrow_limit(&c->ledger, borrower, lender);
  slices = ema_slice_cut(slices, limit, &c->stats.plans_adjusted);
  reason_add(&e,
             "%s: gpu%u short %" G_GUINT64_FORMAT " blocks, %u waiting; asked %" G_GUINT64_FORMAT
             " slices of gpu%u",
             policy_name(c, EMA_POLICY_BORROW), borrower, b->blocks_short, b->waiting, asked,
             lender);
  if (slices < asked)
    reason_add(&e, "; %s",
               !c->ledger.gpus[lender]->shares                ? "it does not share"
               : !ema_slice_gpu_lends(c->ledger.gpus[lender]) ? "it does not lend (lend: false)"
               : lender == borrower                           ? "its own"
                                                              : "it can lend");
  if (slices < asked && ema_slice_gpu_lends(c->ledger.gpus[lender]) && lender != borrower)
    reason_add(&e, " %" G_GUINT64_FORMAT, limit);
  if (slices == 0) {
    e.kind = EMA_POOL_EVENT_REFUSE;
    event_push(c, &e);
    return TRUE;
  }
  if (!B(c)->lend(D(c), lender, borrower, slices, &e.seconds, error))
    return FALSE;
  e.map_seconds = e.seconds;
  e.slices = slices;
  c->stats.borrows++;
  c->stats.slices_borrowed += slices;
  c->stats.borrow_seconds += e.seconds;
  c->stats.borrow_max_seconds = MAX(c->stats.borrow_max_seconds, e.seconds);
  if (B(c)->defer) {
    c->ledger.gpus[lender]->lending += slices;
    c->ledger.gpus[borrower]->borrowing += slices;
    ema_slice_gpu_refresh(c->ledger.gpus[lender]);
    ema_slice_gpu_touch(c->ledger.gpus[borrower]);
    B(c)->defer(D(c), EMA_POOL_EVENT_BORROW, lender, borrower, slices, ns(e.seconds));
  } else {
    ema_slice_ledger_change_lent(&c->ledger, lender, borrower, (gint64) slices);
  }
  event_push(c, &e);
  ema_pool_core_checked(c, EMA_POOL_ACTION_BORROW, borrower);
  return TRUE;
}

/* BORROWER gives back SLICES empty slices of LENDER (cut to the empty
 * ones), as WHO asked. */
static gboolean apply_return(EmaPoolCore *c, guint borrower, guint lender, guint64 slices,
                             const char *who, GError **error) {
  EmaPoolEvent e = event_start(c, EMA_POOL_EVENT_RETURN, borrower, lender);
  const EmaSliceGpu *b = c->ledger.gpus[borrower];
  guint64 asked = slices, limit = ema_slice_ledger_return_limit(&c->ledger, borrower, lender);
  gboolean ok;
  slices = ema_slice_cut(slices, limit, &c->stats.plans_adjusted);
  reason_add(&e, "%s: asked to return %" G_GUINT64_FORMAT " slices of gpu%u", who, asked, lender);
  if (slices < asked)
    reason_add(&e, "; %" G_GUINT64_FORMAT " of them empty", limit);
  /* the prefetch plan's remote limit admits less than the borrowed room holds */
  if (ema_slice_gpu_remote_admitted(b) < b->remote_cap_total)
    reason_add(&e,
               "; remote limit %.1f%% admits %" G_GUINT64_FORMAT " of the %" G_GUINT64_FORMAT
               " blocks borrowed, %" G_GUINT64_FORMAT " used",
               b->plan.remote_limit * 100, ema_slice_gpu_remote_admitted(b), b->remote_cap_total,
               b->remote_total);
  /* the limit held for admission below the step's own, which sets the room */
  if (ema_slice_gpu_room_held(b))
    reason_add(&e, " (held; the step's own %.1f%% admits %" G_GUINT64_FORMAT ")",
               b->plan.room_limit * 100, ema_slice_gpu_remote_room(b));
  if (slices == 0) {
    e.kind = EMA_POOL_EVENT_REFUSE;
    event_push(c, &e);
    return TRUE;
  }
  /* the borrower unmaps; the lender has the slices back once that is done */
  ema_slice_ledger_change_lent(&c->ledger, lender, borrower, -(gint64) slices);
  ok = B(c)->unlend(D(c), lender, borrower, slices, &e.seconds, error);
  e.unmap_seconds = e.seconds;
  e.slices = slices;
  c->stats.returns++;
  c->stats.slices_returned += slices;
  c->stats.return_seconds += e.seconds;
  if (B(c)->defer) {
    c->ledger.gpus[lender]->returning += slices;
    ema_slice_gpu_refresh(c->ledger.gpus[lender]);
    B(c)->defer(D(c), EMA_POOL_EVENT_RETURN, lender, borrower, slices, ns(e.seconds));
  }
  event_push(c, &e);
  ema_pool_core_checked(c, EMA_POOL_ACTION_RETURN, borrower);
  return ok;
}

gboolean ema_pool_core_return(EmaPoolCore *c, guint borrower, guint lender, guint64 slices,
                              GError **error) {
  return apply_return(c, borrower, lender, slices, "the pool", error);
}

/* Move up to BLOCKS of b's blocks from LENDER to TARGET (b itself: its own
 * free slices; another GPU: slices it lends b on the spot); sets *MOVED
 * and the event's times. */
static gboolean migrate(EmaPoolCore *c, EmaSliceGpu *b, guint lender, guint target, guint64 blocks,
                        guint64 *moved, EmaPoolEvent *e, GError **error) {
  guint64 room, m, new_slices = 0;
  double map_s = 0, copy_s = 0;
  guint touched;
  if (target == b->index) {
    guint64 cap = ema_slice_gpu_local_capacity(b);
    room = cap > b->local_used ? cap - b->local_used : 0;
  } else {
    const EmaSliceGpu *t = c->ledger.gpus[target];
    room = ema_slice_gpu_lends(t) && target != lender
               ? ema_blocks_in_slices(b, ema_slice_gpu_lendable(t))
               : 0;
  }
  *moved = m = MIN(room, blocks);
  if (m == 0)
    return TRUE;
  /* the destination's slices first: a peer maps new slices for the borrower */
  if (target == b->index) {
    if (!own_for(c, b, m, &map_s, error))
      goto failed;
  } else {
    new_slices = ema_slices_for_blocks(b, m);
    if (!B(c)->lend(D(c), target, b->index, new_slices, &map_s, error))
      goto failed;
  }
  if (B(c)->move && !B(c)->move(D(c), b->index, lender, target, m, &copy_s, error)) {
    /* the data stays where it was; the destination goes */
    GError *inner = NULL;
    double ignored;
    if (target == b->index ? !ema_pool_core_sync_own(c, b, &inner)
                           : !B(c)->unlend(D(c), target, b->index, new_slices, &ignored, &inner))
      g_debug("while undoing a move: %s", inner ? inner->message : "failed");
    g_clear_error(&inner);
    goto failed;
  }
  /* the hottest requests' blocks move first: what finds no room, the
   * coldest', is dropped */
  requests_take_from(c, b, lender, target, m, TRUE, &touched);
  reason_add(e, "; %" G_GUINT64_FORMAT " blocks of %u requests (running first) moved", m, touched);
  ema_slice_ledger_change_remote(&c->ledger, b, lender, -(gint64) m);
  if (target == b->index) {
    b->remote_total -= m;
    b->local_used += m;
  } else {
    ema_slice_ledger_change_lent(&c->ledger, target, b->index, (gint64) new_slices);
    ema_slice_ledger_change_remote(&c->ledger, b, target, (gint64) m);
  }
  ema_slice_gpu_touch(b);
  c->stats.blocks_migrated += m;
  e->blocks_moved += m;
  e->bytes_copied += m * b->block_bytes;
  e->map_seconds += map_s;
  e->copy_seconds += copy_s;
  return TRUE;
failed:
  *moved = 0;
  return FALSE;
}

/* At least N of b's blocks on LENDER leave (to host, or dropped); *FREED. */
static gboolean evict(EmaPoolCore *c, EmaSliceGpu *b, guint lender, guint64 n, gboolean to_host,
                      guint64 *freed, double *seconds, GError **error) {
  *seconds = 0;
  if (B(c)->evict)
    return B(c)->evict(D(c), b->index, lender, n, to_host, freed, seconds, error);
  if (to_host && B(c)->to_host && !B(c)->to_host(D(c), b->index, lender, n, seconds, error))
    return FALSE;
  remove_remote(c, b, lender, n);
  *freed = n;
  return TRUE;
}

static const char *const vacate_names[] = {"to the borrower", "to a peer", "to host", "dropped"};

/* LENDER takes back the slices of ACTION, for WHY; *TAKEN, *DATA_S the
 * time its data takes to leave, *UNMAP the unmapping's. */
static gboolean apply_reclaim_action(EmaPoolCore *c, guint lender, const EmaReclaimAction *action,
                                     const char *why, guint64 *taken, double *data_s,
                                     EmaTime *unmap, double *sum, GError **error) {
  guint bi = action->borrower;
  EmaSliceGpu *b = c->ledger.gpus[bi];
  guint64 slices =
      ema_slice_cut(action->slices, ema_slice_ledger_reclaim_limit(&c->ledger, lender, bi),
                    &c->stats.plans_adjusted);
  guint64 keep, excess, moved = 0, freed;
  EmaPoolEvent e = event_start(c, EMA_POOL_EVENT_RECLAIM, lender, bi);
  double time = 0, unmap_s = 0, evict_s;
  gboolean ok = TRUE;
  /* a plan naming no place for the data (a target outside EmaVacateTarget, or a peer past the
   * server): its data is dropped, and the reason says why (it read as a target without room) */
  g_autofree char *no_place = NULL;
  *taken = 0;
  *data_s = 0;
  *unmap = 0;
  if (slices == 0 || bi == lender)
    return TRUE;
  no_place = ema_reclaim_action_no_place(action, c->n);
  e.target = action->target;
  e.target_gpu = action->target_gpu;
  excess = ema_slice_ledger_reclaim_excess(&c->ledger, lender, bi, slices, &keep);
  reason_add(&e, "%s; %" G_GUINT64_FORMAT " slices from gpu%u", why, slices, bi);
  if (excess > 0)
    reason_add(&e, ", %" G_GUINT64_FORMAT " blocks of its KV %s", excess,
               vacate_names[no_place ? EMA_VACATE_DROP : action->target]);
  if (excess > 0 && no_place)
    reason_add(&e, ": %s", no_place);
  else if (excess > 0 && action->target == EMA_VACATE_TO_PEER)
    reason_add(&e, " gpu%u", action->target_gpu);
  if (excess > 0) {
    switch (action->target) {
    case EMA_VACATE_TO_BORROWER:
      ok = migrate(c, b, lender, bi, excess, &moved, &e, error);
      time = e.copy_seconds + e.map_seconds;
      break;
    case EMA_VACATE_TO_PEER:
      if (action->target_gpu < c->n) {
        ok = migrate(c, b, lender, action->target_gpu, excess, &moved, &e, error);
        time = e.copy_seconds + e.map_seconds;
      }
      break;
    case EMA_VACATE_TO_HOST:
      ok = evict(c, b, lender, excess, TRUE, &moved, &time, error);
      c->stats.blocks_to_host += moved;
      e.blocks_to_host += moved;
      e.bytes_copied += moved * b->block_bytes;
      e.copy_seconds += time;
      break;
    case EMA_VACATE_DROP:
      break;
    }
    if (!ok)
      return FALSE;
    if (moved < excess) {
      if (action->target != EMA_VACATE_DROP)
        c->stats.plans_adjusted++;
      /* what could not go where the plan said is dropped */
      if (!evict(c, b, lender, excess - moved, FALSE, &freed, &evict_s, error))
        return FALSE;
      if (action->target != EMA_VACATE_DROP && !no_place)
        reason_add(&e, "; %" G_GUINT64_FORMAT " dropped: no room there", freed);
      c->stats.blocks_dropped += freed;
      e.blocks_dropped += freed;
    }
  }
  g_assert_cmpuint(b->remote[lender], <=, keep);
  ema_slice_ledger_change_lent(&c->ledger, lender, bi, -(gint64) slices);
  ok = B(c)->unlend(D(c), lender, bi, slices, &unmap_s, error);
  *taken = slices;
  *data_s = time;
  *unmap = ns(unmap_s);
  e.unmap_seconds = unmap_s;
  e.seconds = e.map_seconds + e.copy_seconds + unmap_s;
  *sum += e.seconds;
  e.slices = slices;
  event_push(c, &e);
  return ok;
}

/* TOTAL slices of LENDER taken back in one decision, whose data took
 * WAIT (the longest of its actions' copies: they run side by side) and
 * whose unmapping UNMAP; SUM the time of all its actions, one after the
 * other. */
static void reclaimed(EmaPoolCore *c, guint lender, guint64 total, double wait, EmaTime unmap,
                      double sum) {
  /* a deferring backend's actions overlap; a synchronous one's run in turn */
  double seconds = B(c)->defer ? wait + (double) unmap / 1e9 : sum;
  c->stats.reclaims++;
  c->stats.slices_reclaimed += total;
  c->stats.reclaim_seconds += seconds;
  c->stats.reclaim_max_seconds = MAX(c->stats.reclaim_max_seconds, seconds);
  if (B(c)->defer) {
    c->ledger.gpus[lender]->returning += total;
    ema_slice_gpu_refresh(c->ledger.gpus[lender]);
    B(c)->defer(D(c), EMA_POOL_EVENT_RECLAIM, lender, lender, total, ns(wait) + unmap);
  }
  ema_pool_core_checked(c, EMA_POOL_ACTION_RECLAIM, lender);
}

/* A core plan handed back empty: its first N of ACTIONS (of MAX, each SIZE
 * bytes) zero again, and *N 0 (what a policy set beyond n is not looked at,
 * and stays). */
static void plan_empty(guint *n, gpointer actions, gsize size, guint max) {
  if (*n == 0)
    return;
  memset(actions, 0, MIN(*n, max) * size);
  *n = 0;
}
#define PLAN_EMPTY(plan)                                                                           \
  plan_empty(&(plan)->n, (plan)->actions, sizeof(plan)->actions[0], G_N_ELEMENTS((plan)->actions))

/* Whether KIND's policy's calls are sealed: a module's always; a built-in's
 * (compiled and tested with the pool) under EMA_POOL_CHECKS=all, the tests'
 * level, as the prefetch decide's: the seal copies and compares the whole
 * view, the square of the GPUs, at every call (a rack's decisions spent
 * most of their time in it). */
static gboolean sealing(const EmaPoolCore *c, EmaPolicyKind kind) {
  return !c->policies[kind]->built_in || c->check_level == EMA_POOL_CHECK_ALL;
}

/* The view for a call of KIND's policy, sealed where sealing() says (ledger.h:
 * what the call writes into it is found after the call, by called()). */
static const EmaPoolView *sealed_view(EmaPoolCore *c, EmaPolicyKind kind) {
  const EmaPoolView *view = ema_pool_core_view(c);
  if (sealing(c, kind))
    ema_slice_ledger_seal(&c->ledger);
  return view;
}

/* Before a call of KIND's policy: its plan (N actions) is empty, as the
 * last call left it; one written since was kept by the policy and written
 * outside its call (a contract violation, named). */
static gboolean plan_unused(const EmaPoolCore *c, EmaPolicyKind kind, guint n, GError **error) {
  if (n == 0)
    return TRUE;
  g_set_error(error, EMA_POLICY_ERROR, EMA_POLICY_ERROR_INVALID,
              "%s policy %s (%s): its plan holds %u actions before the call: it kept a pointer "
              "to an earlier plan and wrote through it",
              ema_policy_kind_name(kind), c->policies[kind]->name, c->policies[kind]->origin, n);
  return FALSE;
}

/* After a call of KIND's policy's HOOK: it did not write into its view. */
/* KIND's bound parameters (policyspec.h) and their struct's size; NULL without any. */
static gconstpointer kind_params(const EmaPoolCore *c, EmaPolicyKind kind, gsize *size) {
  const EmaParamTable *table = c->policies[kind]->params;
  gconstpointer params = kind == EMA_POLICY_BORROW     ? c->spec->borrow_params
                         : kind == EMA_POLICY_PREFETCH ? c->spec->prefetch_params
                                                       : c->spec->reclaim_params;
  *size = table ? table->size : 0;
  return params && table ? params : NULL;
}

/* Before a call of KIND's policy, where its calls are sealed: a copy of its parameters into
 * *COPY (NULL without any), for params_unchanged() after it. */
static void seal_params(const EmaPoolCore *c, EmaPolicyKind kind, gpointer *copy) {
  gsize size;
  gconstpointer params = sealing(c, kind) ? kind_params(c, kind, &size) : NULL;
  *copy = params ? g_memdup2(params, size) : NULL;
}

/* After the call: its parameters as COPY holds them (freed here); a write into them is an error
 * naming the policy (it drifted its later decisions while resolved.yaml showed the values it
 * was given). */
static gboolean params_unchanged(const EmaPoolCore *c, EmaPolicyKind kind, const char *hook,
                                 gpointer copy, GError **error) {
  gsize size;
  gconstpointer params;
  gboolean same;
  if (copy == NULL)
    return TRUE;
  params = kind_params(c, kind, &size);
  same = memcmp(params, copy, size) == 0;
  g_free(copy);
  if (!same)
    g_set_error(error, EMA_POLICY_ERROR, EMA_POLICY_ERROR_INVALID,
                "%s policy %s (%s): %s wrote into its parameters: the run stops before the pool "
                "acts on it",
                ema_policy_kind_name(kind), c->policies[kind]->name, c->policies[kind]->origin,
                hook);
  return same;
}

static gboolean called(const EmaPoolCore *c, EmaPolicyKind kind, const char *hook, GError **error) {
  return !sealing(c, kind) ||
         ema_slice_ledger_check_seal(&c->ledger, c->policies[kind], hook, error);
}

/* The size of a plan's slices, whatever their sign (G_MININT64 too). */
static guint64 slice_magnitude(gint64 slices) {
  return slices < 0 ? (guint64) (-(slices + 1)) + 1 : (guint64) slices;
}

gboolean ema_pool_core_reclaim(EmaPoolCore *c, guint lender, guint64 needed, GError **error) {
  const EmaReclaimPolicyOps *ops = c->policies[EMA_POLICY_RECLAIM]->ops;
  EmaReclaimPlan *plan = &c->reclaim_plan;
  guint64 total = 0;
  double wait = 0, sum = 0;
  EmaTime unmap = 0;
  gboolean ok = TRUE;
  char why[64] = ""; /* formatted for the plan's first action (most plans have none) */
  gpointer params_copy;
  if (!plan_unused(c, EMA_POLICY_RECLAIM, plan->n, error))
    return FALSE;
  seal_params(c, EMA_POLICY_RECLAIM, &params_copy);
  ema_plugin_call_enter(c->policies[EMA_POLICY_RECLAIM]->guard_name, EMA_PLUGIN_HOOK_DECIDE);
  ops->decide(c->ledger.gpus[lender]->states[EMA_POLICY_RECLAIM], c->spec->reclaim_params,
              sealed_view(c, EMA_POLICY_RECLAIM), lender, needed, plan);
  ema_plugin_call_leave(c->policies[EMA_POLICY_RECLAIM]->guard_name);
  if (!params_unchanged(c, EMA_POLICY_RECLAIM, "decide", params_copy, error) ||
      !called(c, EMA_POLICY_RECLAIM, "decide", error) ||
      !ema_policy_info_plan_fits(c->policies[EMA_POLICY_RECLAIM], "decide", plan->n,
                                 G_N_ELEMENTS(plan->actions), error)) {
    PLAN_EMPTY(plan);
    return FALSE;
  }
  for (guint i = 0; ok && i < MIN(plan->n, G_N_ELEMENTS(plan->actions)); i++) {
    guint64 taken;
    double time;
    EmaTime action_unmap;
    if (plan->actions[i].borrower >= c->n) {
      c->stats.plans_adjusted++;
      continue;
    }
    if (why[0] == '\0' && needed > 0)
      g_snprintf(why, sizeof why, "%s: lender gpu%u lacks %" G_GUINT64_FORMAT " slices",
                 policy_name(c, EMA_POLICY_RECLAIM), lender, needed);
    else if (why[0] == '\0')
      g_snprintf(why, sizeof why, "%s: proactive", policy_name(c, EMA_POLICY_RECLAIM));
    ok = apply_reclaim_action(c, lender, &plan->actions[i], why, &taken, &time, &action_unmap, &sum,
                              error);
    if (taken == 0)
      continue;
    total += taken;
    unmap += action_unmap;
    wait = MAX(wait, time); /* copies to different places run side by side */
  }
  PLAN_EMPTY(plan);
  if (total > 0)
    reclaimed(c, lender, total, wait, unmap, sum);
  return ok;
}

gboolean ema_pool_core_reclaim_everything(EmaPoolCore *c, guint lender, GError **error) {
  if (c->ledger.gpus[lender]->lent_total == 0)
    return TRUE;
  if (!ema_pool_core_reclaim(c, lender, c->ledger.gpus[lender]->lent_total, error))
    return FALSE;
  for (guint b = 0; b < c->n; b++) {
    guint64 left = c->ledger.lent[lender * c->n + b];
    if (left > 0) {
      EmaReclaimAction drop = {b, left, EMA_VACATE_DROP, 0};
      guint64 taken;
      double time, sum = 0;
      EmaTime unmap;
      gboolean ok =
          apply_reclaim_action(c, lender, &drop, "everything back, the plan's rest dropped", &taken,
                               &time, &unmap, &sum, error);
      /* counted like the policy's, as its wait is */
      reclaimed(c, lender, taken, time, unmap, sum);
      if (!ok)
        return FALSE;
    }
  }
  return TRUE;
}

void ema_pool_core_complete(EmaPoolCore *c, EmaPoolEventKind kind, guint lender, guint borrower,
                            guint64 slices) {
  if (kind == EMA_POOL_EVENT_BORROW) {
    c->ledger.gpus[lender]->lending -= slices;
    c->ledger.gpus[borrower]->borrowing -= slices;
    ema_slice_ledger_change_lent(&c->ledger, lender, borrower, (gint64) slices);
  } else {
    c->ledger.gpus[lender]->returning -= slices;
  }
  ema_slice_gpu_refresh(c->ledger.gpus[lender]);
  ema_slice_gpu_touch(c->ledger.gpus[borrower]);
  ema_pool_core_checked(c, EMA_POOL_ACTION_COMPLETE, lender);
}

static gboolean run_borrow(EmaPoolCore *c, guint borrower, GError **error) {
  const EmaBorrowPolicyOps *ops = c->policies[EMA_POLICY_BORROW]->ops;
  EmaBorrowPlan *plan = &c->borrow_plan;
  gboolean ok = TRUE;
  gpointer params_copy;
  if (!plan_unused(c, EMA_POLICY_BORROW, plan->n, error))
    return FALSE;
  seal_params(c, EMA_POLICY_BORROW, &params_copy);
  ema_plugin_call_enter(c->policies[EMA_POLICY_BORROW]->guard_name, EMA_PLUGIN_HOOK_DECIDE);
  ops->decide(c->ledger.gpus[borrower]->states[EMA_POLICY_BORROW], c->spec->borrow_params,
              sealed_view(c, EMA_POLICY_BORROW), borrower, plan);
  ema_plugin_call_leave(c->policies[EMA_POLICY_BORROW]->guard_name);
  if (!params_unchanged(c, EMA_POLICY_BORROW, "decide", params_copy, error) ||
      !called(c, EMA_POLICY_BORROW, "decide", error) ||
      !ema_policy_info_plan_fits(c->policies[EMA_POLICY_BORROW], "decide", plan->n,
                                 G_N_ELEMENTS(plan->actions), error)) {
    PLAN_EMPTY(plan);
    return FALSE;
  }
  for (guint i = 0; ok && i < MIN(plan->n, G_N_ELEMENTS(plan->actions)); i++) {
    const EmaBorrowAction *a = &plan->actions[i];
    if (a->lender >= c->n)
      c->stats.plans_adjusted++;
    else if (a->slices > 0)
      ok = apply_borrow(c, borrower, a->lender, (guint64) a->slices, error);
    else if (a->slices < 0)
      ok = apply_return(c, borrower, a->lender, slice_magnitude(a->slices),
                        policy_name(c, EMA_POLICY_BORROW), error);
  }
  PLAN_EMPTY(plan);
  return ok;
}

/* Room on place TO for more of G's blocks: its own free slices, or the
 * room in what lender TO lends it. */
static guint64 place_room(const EmaPoolCore *c, const EmaSliceGpu *g, guint to) {
  guint64 cap, have;
  if (to == g->index) {
    cap = ema_slice_gpu_local_capacity(g);
    have = g->local_used;
  } else {
    cap = ema_slice_ledger_remote_capacity(&c->ledger, g, to);
    have = g->remote[to];
  }
  return cap > have ? cap - have : 0;
}

/* One placement action of G's tenant, as WHO asked. */
static gboolean apply_place(EmaPoolCore *c, EmaSliceGpu *g, const EmaPlacementAction *a,
                            const char *who, GError **error) {
  EmaPoolEvent e = event_start(c, EMA_POOL_EVENT_PLACE, g->index, a->to);
  EmaPoolRequest *r = a->from < c->n && a->to < c->n && a->from != a->to
                          ? request_find(c, g->index, a->request)
                          : NULL;
  guint64 have = r ? AT(r, a->from) : 0, room = r ? place_room(c, g, a->to) : 0;
  guint64 m = MIN(a->blocks, MIN(have, room));
  double map_s = 0, copy_s = 0;
  if (a->request == EMA_KV_PREFIX_CACHE) {
    reason_add(&e, "%s: the prefix cache, ", who);
  } else {
    /* what its engine knows of it: the output still to come says why it goes first */
    EmaRequestView v = {.request = a->request, .remaining_tokens = -1};
    if (r && c->describe)
      c->describe(c->owner_data, g->index, r, &v);
    reason_add(&e, "%s: request %" G_GUINT64_FORMAT " (%s", who, a->request,
               r ? ema_request_state_name(view_state(r->state)) : "unknown");
    if (v.remaining_tokens >= 0)
      reason_add(&e, ", %" G_GINT64_FORMAT " tokens to come", v.remaining_tokens);
    reason_add(&e, "), ");
  }
  reason_add(&e, "%" G_GUINT64_FORMAT " blocks gpu%u -> gpu%u", a->blocks, a->from, a->to);
  if (m < a->blocks) {
    c->stats.plans_adjusted++;
    reason_add(&e, "; %" G_GUINT64_FORMAT " there, room for %" G_GUINT64_FORMAT, have, room);
  }
  if (m == 0) {
    e.kind = EMA_POOL_EVENT_REFUSE;
    event_push(c, &e);
    return TRUE;
  }
  if (a->to == g->index && !own_for(c, g, m, &map_s, error))
    return FALSE;
  if (B(c)->move && !B(c)->move(D(c), g->index, a->from, a->to, m, &copy_s, error))
    return FALSE;
  request_shift(c, r, a->from, a->to, m);
  request_placed(c, g->index, r);
  if (a->from == g->index) {
    g->local_used -= m;
    g->remote_total += m;
  } else {
    ema_slice_ledger_change_remote(&c->ledger, g, a->from, -(gint64) m);
  }
  if (a->to == g->index) {
    g->local_used += m;
    g->remote_total -= m;
  } else {
    ema_slice_ledger_change_remote(&c->ledger, g, a->to, (gint64) m);
  }
  ema_slice_gpu_touch(g); /* its view's blocks_remote, slices_used and remote_blocks */
  if (a->from == g->index && B(c)->own && !ema_pool_core_sync_own(c, g, error))
    return FALSE;
  c->stats.placements++;
  c->stats.blocks_placed += m;
  e.blocks_moved = m;
  e.bytes_copied = m * g->block_bytes;
  e.map_seconds = map_s;
  e.copy_seconds = copy_s;
  e.seconds = map_s + copy_s;
  event_push(c, &e);
  ema_pool_core_checked(c, EMA_POOL_ACTION_PLACE, g->index);
  return TRUE;
}

gboolean ema_pool_core_place(EmaPoolCore *c, EmaSliceGpu *g, const EmaPlacementPlan *plan,
                             const char *who, GError **error) {
  for (guint i = 0; i < MIN(plan->n, G_N_ELEMENTS(plan->actions)); i++)
    if (!apply_place(c, g, &plan->actions[i], who, error))
      return FALSE;
  return TRUE;
}

/* The placement of G's tenant by the borrow policy (one that places). */
static gboolean run_place(EmaPoolCore *c, EmaSliceGpu *g, GError **error) {
  const EmaBorrowPolicyOps *ops = c->policies[EMA_POLICY_BORROW]->ops;
  EmaPlacementPlan *plan = &c->place_plan;
  gboolean ok;
  gpointer params_copy;
  if (!plan_unused(c, EMA_POLICY_BORROW, plan->n, error))
    return FALSE;
  seal_params(c, EMA_POLICY_BORROW, &params_copy);
  ema_plugin_call_enter(c->policies[EMA_POLICY_BORROW]->guard_name, EMA_PLUGIN_HOOK_PLACE);
  ops->place(g->states[EMA_POLICY_BORROW], c->spec->borrow_params,
             sealed_view(c, EMA_POLICY_BORROW), g->index, plan);
  ema_plugin_call_leave(c->policies[EMA_POLICY_BORROW]->guard_name);
  if (!params_unchanged(c, EMA_POLICY_BORROW, "place", params_copy, error) ||
      !called(c, EMA_POLICY_BORROW, "place", error) ||
      !ema_policy_info_plan_fits(c->policies[EMA_POLICY_BORROW], "place", plan->n,
                                 G_N_ELEMENTS(plan->actions), error)) {
    PLAN_EMPTY(plan);
    return FALSE;
  }
  ok = ema_pool_core_place(c, g, plan, policy_name(c, EMA_POLICY_BORROW), error);
  PLAN_EMPTY(plan);
  return ok;
}

gboolean ema_pool_core_decide(EmaPoolCore *c, EmaSliceGpu *g, GError **error) {
  gboolean ok = TRUE;
  g->decided_at = c->now;
  if (g->lent_total > 0) {
    if (g->blocks_short > 0) {
      guint64 needed = ema_slices_for_blocks(g, g->blocks_short);
      guint64 coming = g->returning;
      if (needed > coming)
        ok = ema_pool_core_reclaim(c, g->index, needed - coming, error);
    }
    if (ok && g->lent_total > 0)
      ok = ema_pool_core_reclaim(c, g->index, 0, error);
  }
  if (ok && g->has_tenant && !g->borrow_off)
    ok = run_borrow(c, g->index, error);
  /* most borrow policies place nothing; and a tenant that borrows no slice
   * has no place but its own to move a block to */
  if (ok && g->has_tenant && g->borrowed_total > 0 &&
      ((const EmaBorrowPolicyOps *) c->policies[EMA_POLICY_BORROW]->ops)->place)
    ok = run_place(c, g, error);
  /* the last view its policies saw (what it did since is touched) */
  g->decided_version = c->ledger.version;
  if (g->blocks_short > 0) {
    g->blocks_short = 0;
    ema_slice_gpu_touch(g);
  }
  return ok;
}

/* ---- the demand driver ----------------------------------------------------------- */

void ema_pool_core_set_model(EmaPoolCore *c, guint gpu, const EmaStepModel *step_model) {
  c->models[gpu] = step_model;
}

/* Before G's step: the prefetch policy, if G holds remote KV. The step is
 * the decode of its blocks by `running` sequences, timed by its step
 * model; interference is not tracked here (no steps run on this side). */
static gboolean plan_prefetch(EmaPoolCore *c, EmaSliceGpu *g, GError **error) {
  const EmaStepModel *model = c->models[g->index];
  EmaStepBatch batch = {0};
  EmaStepBreakdown bd;
  EmaStepCostView view;
  double used = (double) (g->local_used + g->remote_total), t_copy, t_direct, layers;
  if (model == NULL || g->remote_total == 0 || (layers = ema_step_model_layers(model)) <= 0)
    return TRUE;
  batch.decode_seqs = MAX(g->running, 1);
  batch.decode_context = used * BLOCK_TOKENS;
  batch.logits = batch.decode_seqs;
  if (ema_step_time(model, &batch, &bd) == 0)
    return TRUE;
  ema_slice_ledger_step_cost(&c->ledger, g, c->server, &bd, layers, 1, c->bytes_scratch, &view,
                             &t_copy, &t_direct);
  return ema_pool_core_plan_prefetch(c, g, &view, (guint) layers, error) &&
         ema_pool_core_sync_own(c, g, error);
}

gboolean ema_pool_core_plan_prefetch(EmaPoolCore *c, EmaSliceGpu *g, const EmaStepCostView *cost,
                                     guint layers, GError **error) {
  /* a module's decide is sealed as its borrow and reclaim decisions are (it was only under
   * EMA_POOL_CHECKS=all, so a write into the view went unnoticed or broke the ledger later) */
  gboolean sealed = sealing(c, EMA_POLICY_PREFETCH);
  gpointer params_copy;
  gboolean ok;
  seal_params(c, EMA_POLICY_PREFETCH, &params_copy);
  ok = ema_slice_gpu_plan_prefetch(g, sealed ? &c->ledger : NULL, c->policies[EMA_POLICY_PREFETCH],
                                   c->spec->prefetch_params, ema_pool_core_view(c), cost, layers,
                                   error);
  return params_unchanged(c, EMA_POLICY_PREFETCH, "decide", params_copy, ok ? error : NULL) && ok;
}

static guint64 blocks_used(const EmaSliceGpu *g) {
  return g->local_used + g->remote_total;
}

static guint count_seqs(const EmaPoolCore *c, guint64 blocks) {
  guint64 tokens = blocks * BLOCK_TOKENS;
  return (guint) ((tokens + c->context_tokens - 1) / c->context_tokens);
}

/* G's shortage and load, touching it only when they change. */
static void set_load(EmaSliceGpu *g, guint64 blocks_short, guint running, guint waiting) {
  if (g->blocks_short == blocks_short && g->running == running && g->waiting == waiting)
    return;
  g->blocks_short = blocks_short;
  g->running = running;
  g->waiting = waiting;
  ema_slice_gpu_touch(g);
}

/* G's tenant moves towards TARGET blocks; *LACKING what it still lacks. */
static gboolean adjust(EmaPoolCore *c, EmaSliceGpu *g, guint64 target, guint64 *lacking,
                       GError **error) {
  guint64 used = blocks_used(g);
  *lacking = 0;
  if (target < used)
    return ema_pool_core_give(c, g, EMA_KV_UNNAMED, used - target, c->n, error);
  if (target > used) {
    guint64 k = MIN(target - used, ema_slice_gpu_free_blocks(g));
    GError *inner = NULL;
    if (k > 0 && !ema_pool_core_take(c, g, EMA_KV_UNNAMED, k, &inner) && inner) {
      g_propagate_error(error, inner);
      return FALSE;
    }
    *lacking = target - blocks_used(g);
  }
  return TRUE;
}

gboolean ema_pool_core_tick(EmaPoolCore *c, const guint64 *targets, GError **error) {
  c->tick++;
  for (guint i = 0; i < c->n; i++) {
    EmaSliceGpu *g = c->ledger.gpus[i];
    guint64 lacking;
    if (!g->has_tenant)
      continue;
    if (!plan_prefetch(c, g, error) || !adjust(c, g, targets[i], &lacking, error))
      return FALSE;
    set_load(g, lacking, count_seqs(c, blocks_used(g)), count_seqs(c, lacking));
  }
  for (guint i = 0; i < c->n; i++) {
    EmaSliceGpu *g = c->ledger.gpus[i];
    if (g->has_tenant && g->shares && (g->blocks_short > 0 || ema_pool_core_periodic_due(c, g)) &&
        !ema_pool_core_decide(c, g, error))
      return FALSE;
  }
  for (guint i = 0; i < c->n; i++) {
    EmaSliceGpu *g = c->ledger.gpus[i];
    guint64 lacking;
    if (!g->has_tenant)
      continue;
    if (!adjust(c, g, targets[i], &lacking, error))
      return FALSE;
    c->lacking[i] = lacking;
    set_load(g, g->blocks_short, count_seqs(c, blocks_used(g)), count_seqs(c, lacking));
  }
  for (guint i = 0; i < c->n; i++) {
    EmaSliceGpu *g = c->ledger.gpus[i];
    if (g->has_tenant)
      ema_slice_gpu_update_demand(g, c->now, blocks_used(g));
  }
  for (guint i = 0; i < c->n; i++)
    if (c->ledger.gpus[i]->present && B(c)->sync && !B(c)->sync(D(c), i, error))
      return FALSE;
  ema_pool_core_checked(c, EMA_POOL_ACTION_TICK, G_MAXUINT);
  return TRUE;
}

/* ---- attention offload ------------------------------------------------------------ */

/* The lenders holding G's remote blocks, "gpu2 800, gpu3 434", into E's
 * reason; returns the one holding the most. */
static guint reason_lenders(const EmaPoolCore *c, const EmaSliceGpu *g, EmaPoolEvent *e) {
  guint most = c->n;
  for (guint j = 0; j < c->n; j++) {
    if (g->remote[j] == 0)
      continue;
    reason_add(e, "%sgpu%u %" G_GUINT64_FORMAT, most < c->n ? ", " : "", j, g->remote[j]);
    if (most == c->n || g->remote[j] > g->remote[most])
      most = j;
  }
  return most;
}

void ema_pool_core_plan_events(EmaPoolCore *c, EmaSliceGpu *g, const EmaPrefetchPlan *previous,
                               const EmaStepCostView *cost) {
  const EmaPrefetchPlan *plan = &g->plan;
  gboolean was = previous->mode == EMA_REMOTE_OFFLOAD, is = plan->mode == EMA_REMOTE_OFFLOAD;
  if (is && !was) {
    EmaPoolEvent e = event_start(c, EMA_POOL_EVENT_OFFLOAD, g->index, g->index);
    reason_add(&e, "%s: attention over remote blocks on ", policy_name(c, EMA_POLICY_PREFETCH));
    e.peer = reason_lenders(c, g, &e);
    reason_add(&e, "; step %.2f ms, direct %.2f, all-local %.2f; remote limit %.1f%%",
               cost->step_offload_s * 1e3, cost->step_direct_s * 1e3, cost->step_local_s * 1e3,
               plan->remote_limit * 100);
    event_push(c, &e);
  } else if (was && !is) {
    EmaPoolEvent e = event_start(c, EMA_POOL_EVENT_OFFLOAD_END, g->index, g->index);
    if (plan->mode == EMA_REMOTE_PREFETCH)
      reason_add(&e, "%s: prefetch; step at least %.2f ms (all-local), offload %.2f",
                 policy_name(c, EMA_POLICY_PREFETCH), cost->step_local_s * 1e3,
                 cost->step_offload_s * 1e3);
    else
      reason_add(&e, "%s: direct loads; step %.2f ms, offload %.2f",
                 policy_name(c, EMA_POLICY_PREFETCH), cost->step_direct_s * 1e3,
                 cost->step_offload_s * 1e3);
    if (cost->step_offload_s <= 0)
      reason_add(&e, " (offload not possible)");
    event_push(c, &e);
  }
  /* a refusal: the allowance bounds the remote KV while requests wait or blocks lack; logged
   * when that starts, and when another lender's allowance bounds it (at most once a second: with
   * lenders alike the binding one flaps from step to step) */
  if (plan->limit_lender >= c->n) {
    g->refused_by = G_MAXUINT;
  } else if ((g->waiting > 0 || g->blocks_short > 0) && plan->limit_lender != g->refused_by &&
             c->now - g->refused_at >= EMA_POOL_LOG_PERIOD) {
    EmaPoolEvent e = event_start(c, EMA_POOL_EVENT_OFFLOAD_REFUSE, g->index, plan->limit_lender);
    reason_add(&e,
               "remote limit: lender gpu%u at its allowance %.3g%%; %.1f%% of gpu%u's KV may be "
               "remote, %u waiting",
               plan->limit_lender, plan->limit_allowance * 100, plan->remote_limit * 100, g->index,
               g->waiting);
    event_push(c, &e);
    g->refused_by = plan->limit_lender;
    g->refused_at = c->now;
  }
}

/* ---- invariants ---------------------------------------------------------------- */

gboolean ema_pool_core_check(const EmaPoolCore *c, GError **error) {
  if (!ema_slice_ledger_check_counters(&c->ledger, error))
    return FALSE;
  /* every request's blocks: for the checked builds (O(requests)) */
  for (guint i = 0; c->check_level == EMA_POOL_CHECK_ALL && i < c->n; i++)
    if (c->ledger.gpus[i]->present && !check_requests(c, c->ledger.gpus[i], error))
      return FALSE;
  return c->owner_check == NULL || c->owner_check(c, c->owner_data, error);
}

/* A take or a give is checked inside its caller's bookkeeping (an engine
 * counts its blocks once the call returns): the ledger alone. */
static gboolean owner_agrees_now(EmaPoolAction action) {
  return action != EMA_POOL_ACTION_TAKE && action != EMA_POOL_ACTION_GIVE;
}

void ema_pool_core_check_now(EmaPoolCore *c, EmaPoolAction action, guint gpu) {
  GError *error = NULL;
  EmaTime now;
  if (owner_agrees_now(action) ? ema_pool_core_check(c, &error)
                               : ema_slice_ledger_check_counters(&c->ledger, &error))
    return;
  now = c->clock ? c->clock(c->clock_data) : c->now;
  if (gpu == G_MAXUINT)
    g_error("pool ledger broken after %s at %.9f s: %s", ema_pool_action_name(action),
            (double) now / 1e9, error->message);
  g_error("pool ledger broken after %s of gpu%u at %.9f s: %s", ema_pool_action_name(action), gpu,
          (double) now / 1e9, error->message);
}
