/* ledger.c: the slice ledger's arithmetic and views (ledger.h), for the
 * simulator's pool and the real pool of `ema-validate pool`. */
#include "ema/pool/ledger.h"

#include <math.h>
#include <stdarg.h>
#include <string.h>

#include "ema/pool/guard.h"

void ema_slice_ledger_init(EmaSliceLedger *l, guint n) {
  memset(l, 0, sizeof *l);
  l->n = n;
  l->gpus = g_new0(EmaSliceGpu *, n);
  l->lent = g_new0(guint64, (gsize) n * n);
  l->remote_view = g_new0(guint64, (gsize) n * n);
  l->blocks_room = g_new0(guint64, n);
  l->lend_keep = g_new0(guint64, n);
  l->offload_share = g_new0(double, (gsize) n *n);
  l->views = g_new0(EmaGpuView, n);
  l->stale = g_new0(guint64, (n + 63) / 64);
  l->sharers = g_new0(guint, n);
  l->offload_to = g_new0(guint64, (gsize) n * ((n + 63) / 64));
  l->lenders = g_new0(guint64, (gsize) n * ((n + 63) / 64));
  /* the view's tables are the ledger's own: a view sets its time and server */
  l->view.n_gpus = n;
  l->view.gpus = l->views;
  l->view.lent = l->lent;
  l->view.remote_blocks = l->remote_view;
  l->view.offload_share = l->offload_share;
  l->view.blocks_room = l->blocks_room;
  l->view.readers = l->sharers;
  l->view.offload_to = l->offload_to;
  l->view.lenders = l->lenders;
  l->view.lend_keep = l->lend_keep;
  l->seal_size = sizeof(EmaPoolView) + n * sizeof(EmaGpuView) +
                 (gsize) n * n * (2 * sizeof(guint64) + sizeof(double)) + 2 * n * sizeof(guint64) +
                 n * sizeof(guint) + 2 * (gsize) n * ((n + 63) / 64) * sizeof(guint64);
  l->seal = g_malloc0(l->seal_size);
}

/* The parts of L's view a policy reads: pointer and size, named. */
typedef struct {
  gconstpointer data;
  gsize size;
  const char *name;
} ViewPart;

#define VIEW_PARTS 10

static guint view_parts(const EmaSliceLedger *l, ViewPart parts[VIEW_PARTS]) {
  gsize nn = (gsize) l->n * l->n;
  parts[0] = (ViewPart){&l->view, sizeof l->view, "the view's own fields"};
  parts[1] = (ViewPart){l->views, l->n * sizeof(EmaGpuView), "gpus[]"};
  parts[2] = (ViewPart){l->lent, nn * sizeof(guint64), "lent[]"};
  parts[3] = (ViewPart){l->remote_view, nn * sizeof(guint64), "remote_blocks[]"};
  parts[4] = (ViewPart){l->offload_share, nn * sizeof(double), "offload_share[]"};
  parts[5] = (ViewPart){l->blocks_room, l->n * sizeof(guint64), "blocks_room[]"};
  parts[6] = (ViewPart){l->sharers, l->n * sizeof(guint), "readers[]"};
  parts[7] = (ViewPart){l->offload_to, (gsize) l->n * ((l->n + 63) / 64) * sizeof(guint64),
                        "offload_to[]"};
  parts[8] =
      (ViewPart){l->lenders, (gsize) l->n * ((l->n + 63) / 64) * sizeof(guint64), "lenders[]"};
  parts[9] = (ViewPart){l->lend_keep, l->n * sizeof(guint64), "lend_keep[]"};
  return VIEW_PARTS;
}

void ema_slice_ledger_seal(EmaSliceLedger *l) {
  ViewPart parts[VIEW_PARTS];
  gsize at = 0;
  for (guint i = 0, n = view_parts(l, parts); i < n; at += parts[i].size, i++)
    memcpy(l->seal + at, parts[i].data, parts[i].size);
}

gboolean ema_slice_ledger_check_seal(const EmaSliceLedger *l, const EmaPolicyInfo *policy,
                                     const char *hook, GError **error) {
  ViewPart parts[VIEW_PARTS];
  gsize at = 0;
  for (guint i = 0, n = view_parts(l, parts); i < n; at += parts[i].size, i++)
    if (memcmp(l->seal + at, parts[i].data, parts[i].size) != 0) {
      g_set_error(error, EMA_POLICY_ERROR, EMA_POLICY_ERROR_INVALID,
                  "%s policy %s (%s): %s wrote into its read-only view (%s): the run stops "
                  "before the pool acts on it",
                  ema_policy_kind_name(policy->kind), policy->name, policy->origin, hook,
                  parts[i].name);
      return FALSE;
    }
  return TRUE;
}

void ema_slice_ledger_restore_seal(EmaSliceLedger *l) {
  ViewPart parts[VIEW_PARTS];
  gsize at = 0;
  for (guint i = 0, n = view_parts(l, parts); i < n; at += parts[i].size, i++)
    memcpy((gpointer) parts[i].data, l->seal + at, parts[i].size);
}

void ema_slice_ledger_clear(EmaSliceLedger *l) {
  g_free(l->gpus);
  g_free(l->lent);
  g_free(l->remote_view);
  g_free(l->blocks_room);
  g_free(l->lend_keep);
  g_free(l->offload_share);
  g_free(l->views);
  g_free(l->seal);
  g_free(l->stale); /* the gpus' stale_word point here: they are not touched after this */
  g_free(l->sharers);
  g_free(l->offload_to);
  g_free(l->lenders);
  memset(l, 0, sizeof *l);
}

guint64 ema_slice_ledger_remote_capacity(const EmaSliceLedger *l, const EmaSliceGpu *g,
                                         guint lender) {
  return ema_blocks_in_slices(g, l->lent[lender * l->n + g->index]);
}

void ema_slice_ledger_change_remote(EmaSliceLedger *l, EmaSliceGpu *g, guint lender, gint64 delta) {
  guint64 was = g->remote[lender];
  g_assert(delta >= 0 || (guint64) -delta <= was);
  g->remote[lender] = (guint64) ((gint64) was + delta);
  if (g->present && (was == 0) != (g->remote[lender] == 0))
    l->sharers[lender] += was == 0 ? 1 : (guint) -1;
}

void ema_slice_ledger_change_lent(EmaSliceLedger *l, guint lender, guint borrower, gint64 delta) {
  guint64 *lent = &l->lent[lender * l->n + borrower];
  EmaSliceGpu *b = l->gpus[borrower];
  g_assert(delta >= 0 || (guint64) -delta <= *lent);
  b->remote_cap_total -= ema_slice_ledger_remote_capacity(l, b, lender);
  *lent = (guint64) ((gint64) *lent + delta);
  ema_bits_set(&l->lenders[borrower * EMA_BITS_WORDS(l->n)], lender, *lent > 0);
  b->remote_cap_total += ema_slice_ledger_remote_capacity(l, b, lender);
  l->gpus[lender]->lent_total = (guint64) ((gint64) l->gpus[lender]->lent_total + delta);
  b->borrowed_total = (guint64) ((gint64) b->borrowed_total + delta);
  ema_slice_gpu_refresh(l->gpus[lender]);
  ema_slice_gpu_touch(b);
}

/* A plan's share X (a limit or cap) clamped to LO..1; NaN (a broken
 * module's) is UNSET, the start plan's. */
static double plan_share(double x, double lo, double unset) {
  return isnan(x) ? unset : CLAMP(x, lo, 1);
}

gboolean ema_slice_gpu_plan_prefetch(EmaSliceGpu *g, EmaSliceLedger *seal,
                                     const EmaPolicyInfo *policy, gconstpointer params,
                                     const EmaPoolView *view, const EmaStepCostView *cost,
                                     guint layers, GError **error) {
  gboolean ok = TRUE;
  g->plan = ema_prefetch_plan_start();
  if (seal)
    ema_slice_ledger_seal(seal);
  ema_plugin_call_enter(policy->guard_name, EMA_PLUGIN_HOOK_DECIDE);
  ((const EmaPrefetchPolicyOps *) policy->ops)
      ->decide(g->states[EMA_POLICY_PREFETCH], params, view, g->index, cost, &g->plan);
  ema_plugin_call_leave(policy->guard_name);
  if (seal && !(ok = ema_slice_ledger_check_seal(seal, policy, "decide", error))) {
    /* the rest of the caller's step runs on the view and plan as they were */
    ema_slice_ledger_restore_seal(seal);
    g->plan = ema_prefetch_plan_start();
  }
  g->plan.depth = MAX(g->plan.depth, 1);
  g->plan.layers_per_copy = CLAMP(g->plan.layers_per_copy, 1, MAX(layers, 1));
  g->plan.remote_limit = plan_share(g->plan.remote_limit, 0, 1);
  g->plan.room_limit = plan_share(g->plan.room_limit, g->plan.remote_limit, g->plan.remote_limit);
  g->plan.offload_cap = plan_share(g->plan.offload_cap, 0, 1);
  if ((guint) g->plan.mode > EMA_REMOTE_OFFLOAD)
    g->plan.mode = EMA_REMOTE_DIRECT;
  g->plan.offload_read = g->plan.mode == EMA_REMOTE_OFFLOAD && g->plan.offload_read;
  ema_slice_gpu_touch(g); /* remote_limit and room_limit set its blocks_total and blocks_room */
  ema_slice_gpu_update_staging(g, layers);
  return ok;
}

/* ledger.h; a lender's sharers are the GPUs holding blocks on it. */
double ema_slice_ledger_remote_time(const EmaSliceLedger *l, const EmaSliceGpu *g,
                                    const EmaServerSpec *server, const double *bytes,
                                    double bandwidth, guint ranks) {
  double longest = 0, sum = 0;
  double port = server->topology == EMA_TOPOLOGY_DIRECT ? 1 : ranks;
  /* its lenders in index order: the terms of the other GPUs, 0 bytes, are skipped below */
  EMA_SLICE_LEDGER_FOR_EACH_LENDER (l, g->index, j) {
    if (bytes[j] <= 0)
      continue;
    /* a lending TP group's KV comes over its ranks' ports side by side */
    longest = MAX(longest, port * bytes[j] * MAX(l->sharers[j], 1) /
                               ema_slice_gpu_ranks(l->gpus[j]) / bandwidth);
    sum += bytes[j];
  }
  if (server->topology != EMA_TOPOLOGY_DIRECT)
    longest = MAX(longest, sum / bandwidth);
  return longest;
}

void ema_slice_ledger_step_cost(const EmaSliceLedger *l, const EmaSliceGpu *g,
                                const EmaServerSpec *server, const EmaStepBreakdown *bd,
                                double layers, double slow, double *bytes, EmaStepCostView *view,
                                double *t_copy, double *t_direct) {
  double used = (double) (g->local_used + g->remote_total);
  double layer_mem = bd->layer_memory_s * slow;
  double remote = (double) g->remote_total / used * bd->kv_read_bytes / layers;
  g_assert(g->remote_total > 0);
  /* its blocks are in slices its lenders lend it: every other GPU's share is 0 */
  EMA_SLICE_LEDGER_FOR_EACH_LENDER (l, g->index, j)
    bytes[j] = remote * (double) g->remote[j] / (double) g->remote_total;
  *t_copy = ema_slice_ledger_remote_time(l, g, server, bytes, server->link.bandwidth,
                                         ema_slice_gpu_ranks(g));
  *t_direct = ema_slice_ledger_remote_time(l, g, server, bytes, server->link.direct_read_bandwidth,
                                           ema_slice_gpu_ranks(g));
  *view =
      (EmaStepCostView){(guint) layers, MAX(bd->layer_compute_s, layer_mem), layer_mem,
                        bd->kv_read_bytes / layers, remote, remote / *t_copy, remote / *t_direct,
                        server->link.copy_fixed_cost, bd->layer_kv_read_s * slow,
                        /* the owner adds the step's times in each way, and offload's */
                        0, 0, 0, 0, 0, 0};
}

/* GPU I's view entry, as its counters say now, into V and *ROOM (its
 * blocks_room): every field set, its padding left as it was (zero: the
 * entries are allocated zeroed, and check_views() zeroes its own). */
static void view_fill(const EmaSliceLedger *l, guint i, EmaGpuView *v, guint64 *room) {
  const EmaSliceGpu *g = l->gpus[i];
  v->index = i;
  v->shares = ema_slice_gpu_lends(g); /* the policies' "shares": lends (not under lend: false) */
  v->has_tenant = g->has_tenant;
  v->slices = g->slices;
  v->slices_lent = g->lent_total + g->lending + g->returning + g->parking;
  v->slices_used = ema_slices_for_blocks(g, g->local_used);
  v->slices_staging = g->staging;
  v->slices_pending = g->borrowing;
  v->slices_borrowed = g->borrowed_total;
  v->slices_borrowed_used = 0;
  if (g->remote_total > 0)
    EMA_SLICE_LEDGER_FOR_EACH_LENDER (l, i, j)
      v->slices_borrowed_used += ema_slices_for_blocks(g, g->remote[j]); /* 0 off its lenders */
  v->block_bytes = g->block_bytes;
  v->blocks_total =
      g->has_tenant ? ema_slice_gpu_local_capacity(g) + ema_slice_gpu_remote_admitted(g) : 0;
  /* (the room's own arithmetic only where the plan holds its limit below the step's) */
  *room = g->has_tenant && ema_slice_gpu_room_held(g)
              ? ema_slice_gpu_local_capacity(g) + ema_slice_gpu_remote_room(g)
              : v->blocks_total;
  v->blocks_used = g->local_used + g->remote_total;
  v->blocks_remote = g->remote_total;
  v->blocks_short = g->blocks_short;
  v->running = g->running;
  v->waiting = g->waiting;
  v->demand_blocks_per_s = g->demand;
  v->last_step = g->last_step;
}

/* From the first view on, touches mark the stale mask too. */
static void track_stale(EmaSliceLedger *l) {
  for (guint i = 0; i < l->n; i++) {
    EmaSliceGpu *g = l->gpus[i];
    g->stale_word = &l->stale[i / 64];
    g->stale_bit = G_GUINT64_CONSTANT(1) << (i % 64);
    g->view_entry = &l->views[i];
    g->view_version = &l->version;
    if (g->view_stale)
      *g->stale_word |= g->stale_bit;
  }
  l->tracked = TRUE;
}

const EmaPoolView *ema_slice_ledger_view(EmaSliceLedger *l, EmaTime now,
                                         const EmaServerSpec *server) {
  gboolean refilled = FALSE;
  if (!l->tracked)
    track_stale(l);
  /* the stale entries, in index order (refilling touches nothing) */
  for (guint w = 0; w < (l->n + 63) / 64; w++) {
    guint64 bits = l->stale[w];
    l->stale[w] = 0;
    for (; bits != 0; bits &= bits - 1) {
      guint i = w * 64 + (guint) __builtin_ctzll(bits);
      EmaSliceGpu *g = l->gpus[i];
      view_fill(l, i, &l->views[i], &l->blocks_room[i]);
      l->lend_keep[i] = g->lend_keep;
      /* the remote row: copied while it holds blocks, and once more when it empties */
      if (g->remote_total > 0 || g->remote_viewed)
        memcpy(&l->remote_view[i * l->n], g->remote, l->n * sizeof(guint64));
      g->remote_viewed = g->remote_total > 0;
      g->view_stale = FALSE;
      refilled = TRUE;
    }
  }
  l->version += refilled;
  l->view.now = now;
  l->view.server = server;
  return &l->view;
}

void ema_slice_ledger_note_step(EmaSliceLedger *l, EmaSliceGpu *g) {
  EmaGpuView *v = ema_slice_gpu_entry_to_write(g);
  g_assert(v == NULL || v == &l->views[g->index]);
  if (v == NULL)
    return;
  /* the fields of view_fill() that a step changes */
  v->blocks_short = g->blocks_short;
  v->running = g->running;
  v->waiting = g->waiting;
  v->last_step = g->last_step;
}

gboolean ema_slice_ledger_changed_since(const EmaSliceLedger *l, guint64 version) {
  if (l->version != version)
    return TRUE;
  for (guint i = 0; i < l->n; i++)
    if (l->gpus[i]->view_stale)
      return TRUE;
  return FALSE;
}

/* The entries of GPUs not touched since the last view are what a fresh
 * view would hold. */
static gboolean check_views(const EmaSliceLedger *l, GError **error) {
  for (guint i = 0; i < l->n; i++) {
    const EmaSliceGpu *g = l->gpus[i];
    EmaGpuView fresh;
    guint64 room;
    if (l->tracked && g->view_stale != ((*g->stale_word & g->stale_bit) != 0))
      return ema_slice_ledger_invalid(error, "gpu%u: its view entry is %s", i,
                                      g->view_stale ? "stale, not in the stale mask"
                                                    : "in the stale mask, not stale");
    if (g->view_stale)
      continue;
    memset(&fresh, 0, sizeof fresh);
    view_fill(l, i, &fresh, &room);
    if (memcmp(&fresh, &l->views[i], sizeof fresh) != 0 || room != l->blocks_room[i] ||
        l->lend_keep[i] != g->lend_keep ||
        (g->remote && memcmp(&l->remote_view[i * l->n], g->remote, l->n * sizeof(guint64)) != 0))
      return ema_slice_ledger_invalid(error, "gpu%u: its view entry is out of date (not touched)",
                                      i);
  }
  return TRUE;
}

guint64 ema_slice_ledger_borrow_limit(const EmaSliceLedger *l, guint borrower, guint lender) {
  const EmaSliceGpu *lg = l->gpus[lender];
  return lender == borrower || !ema_slice_gpu_lends(lg) ? 0 : ema_slice_gpu_lendable(lg);
}

guint64 ema_slice_ledger_return_limit(const EmaSliceLedger *l, guint borrower, guint lender) {
  const EmaSliceGpu *b = l->gpus[borrower];
  guint64 lent = l->lent[lender * l->n + borrower];
  guint64 used = ema_slices_for_blocks(b, b->remote[lender]);
  return lent > used ? lent - used : 0;
}

guint64 ema_slice_ledger_reclaim_limit(const EmaSliceLedger *l, guint lender, guint borrower) {
  return l->lent[lender * l->n + borrower];
}

guint64 ema_slice_ledger_reclaim_excess(const EmaSliceLedger *l, guint lender, guint borrower,
                                        guint64 slices, guint64 *keep) {
  const EmaSliceGpu *b = l->gpus[borrower];
  *keep = ema_blocks_in_slices(b, l->lent[lender * l->n + borrower] - slices);
  return b->remote[lender] > *keep ? b->remote[lender] - *keep : 0;
}

void ema_slice_gpu_update_staging(EmaSliceGpu *g, guint layers) {
  guint64 want = 0, avail;
  guint64 taken = g->lent_total + g->lending + g->returning + g->parking +
                  ema_slices_for_blocks(g, g->local_used);
  if (g->plan.mode == EMA_REMOTE_PREFETCH && layers > 0) {
    /* the layers fetched ahead of the remote KV in use */
    guint64 ahead = (guint64) MAX(g->plan.depth, 1) * MAX(g->plan.layers_per_copy, 1);
    guint64 remote = ema_slices_for_blocks(g, g->remote_total);
    want = (MIN(ahead, layers) * remote + layers - 1) / layers;
  }
  avail = g->slices > taken ? g->slices - taken : 0;
  /* a TP group's buffer is a rank's share on each rank: whole multiples of
   * its ranks, so that what its own blocks keep is exactly t ranks' worth
   * (floor((t s - ceil(t x)) / t) = s - ceil(x) per rank) */
  want = (want + ema_slice_gpu_ranks(g) - 1) / ema_slice_gpu_ranks(g) * ema_slice_gpu_ranks(g);
  avail -= avail % ema_slice_gpu_ranks(g);
  if (g->staging != MIN(want, avail)) {
    g->staging = MIN(want, avail);
    ema_slice_gpu_refresh(g);
  }
}

#define DEMAND_SAMPLE (100 * 1000 * 1000)
#define DEMAND_TAU_S 2.0

void ema_slice_gpu_update_demand(EmaSliceGpu *g, EmaTime now, guint64 used) {
  double dt, rate, weight;
  EmaGpuView *v;
  if (now - g->demand_at < DEMAND_SAMPLE)
    return;
  dt = (double) (now - g->demand_at) / 1e9;
  rate = ((double) used - (double) g->demand_blocks) / dt;
  weight = -expm1(-dt / DEMAND_TAU_S);
  g->demand += weight * (rate - g->demand);
  g->demand_blocks = used;
  g->demand_at = now;
  v = ema_slice_gpu_entry_to_write(g);
  if (v != NULL)
    v->demand_blocks_per_s = g->demand;
}

gboolean ema_slice_ledger_invalid(GError **error, const char *format, ...) {
  va_list args;
  if (error == NULL || *error != NULL)
    return FALSE;
  va_start(args, format);
  *error = g_error_new_valist(EMA_POLICY_ERROR, EMA_POLICY_ERROR_INVALID, format, args);
  va_end(args);
  return FALSE;
}

gboolean ema_slice_ledger_check_counters(const EmaSliceLedger *l, GError **error) {
  for (guint i = 0; i < l->n; i++) {
    const EmaSliceGpu *g = l->gpus[i];
    guint64 sum = 0, lent = 0, borrowed = 0, cap = 0;
    guint64 taken = ema_slices_for_blocks(g, g->local_used) + g->lent_total + g->lending +
                    g->returning + g->staging + g->parking;
    if (taken > g->slices)
      return ema_slice_ledger_invalid(
          error,
          "gpu%u: %" G_GUINT64_FORMAT
          " slices in use, lent or reserved, above its %" G_GUINT64_FORMAT,
          i, taken, g->slices);
    if (!g->shares && (g->lent_total > 0 || g->borrowed_total > 0))
      return ema_slice_ledger_invalid(error, "gpu%u does not share, yet lends or borrows", i);
    if (!ema_slice_gpu_lends(g) && (g->lent_total > 0 || g->lending > 0 || g->parking > 0))
      return ema_slice_ledger_invalid(error, "gpu%u does not lend, yet lends", i);
    if (g->lent_total + g->lending + g->parking > g->slices - MIN(g->lend_keep, g->slices))
      return ema_slice_ledger_invalid(
          error,
          "gpu%u lends %" G_GUINT64_FORMAT
          " slices (peers' parked KV included), above its lend_limit's %" G_GUINT64_FORMAT
          " of %" G_GUINT64_FORMAT,
          i, g->lent_total + g->lending + g->parking, g->slices - MIN(g->lend_keep, g->slices),
          g->slices);
    if (g->staging % ema_slice_gpu_ranks(g) != 0)
      return ema_slice_ledger_invalid(
          error, "gpu%u: staging %" G_GUINT64_FORMAT " slices, not a multiple of its %u ranks", i,
          g->staging, ema_slice_gpu_ranks(g));
    for (guint j = 0; j < l->n; j++) {
      guint64 remote = g->remote ? g->remote[j] : 0;
      if (remote > ema_slice_ledger_remote_capacity(l, g, j))
        return ema_slice_ledger_invalid(error,
                                        "gpu%u holds %" G_GUINT64_FORMAT
                                        " blocks on gpu%u, above the %" G_GUINT64_FORMAT
                                        " its borrowed slices hold",
                                        i, remote, j, ema_slice_ledger_remote_capacity(l, g, j));
      sum += remote;
      lent += l->lent[i * l->n + j];
      borrowed += l->lent[j * l->n + i];
      if ((l->lent[j * l->n + i] > 0) !=
          ((l->lenders[i * ((l->n + 63) / 64) + j / 64] >> (j % 64) & 1) != 0))
        return ema_slice_ledger_invalid(error, "gpu%u: lender gpu%u not kept as its lender", i, j);
      cap += ema_slice_ledger_remote_capacity(l, g, j);
    }
    if (lent != g->lent_total || borrowed != g->borrowed_total || cap != g->remote_cap_total)
      return ema_slice_ledger_invalid(error,
                                      "gpu%u: lent/borrowed counters disagree with the ledger", i);
    if (sum != g->remote_total)
      return ema_slice_ledger_invalid(error,
                                      "gpu%u: remote blocks per lender add up to %" G_GUINT64_FORMAT
                                      ", not %" G_GUINT64_FORMAT,
                                      i, sum, g->remote_total);
    if (g->local_cap != ema_blocks_in_slices(g, ema_slice_gpu_own_slices(g)))
      return ema_slice_ledger_invalid(
          error, "gpu%u: local capacity %" G_GUINT64_FORMAT " blocks kept, not refreshed", i,
          g->local_cap);
  }
  for (guint j = 0; j < l->n; j++) {
    guint sharers = 0;
    for (guint b = 0; b < l->n; b++)
      sharers += l->gpus[b]->present && l->gpus[b]->remote && l->gpus[b]->remote[j] > 0;
    if (sharers != l->sharers[j])
      return ema_slice_ledger_invalid(error, "gpu%u: %u GPUs hold blocks on it, %u counted", j,
                                      sharers, l->sharers[j]);
  }
  return check_views(l, error);
}

gboolean ema_slice_ledger_init_policies(EmaSliceLedger *l, const EmaPolicyInfo *const *policies,
                                        const gconstpointer *params, EmaTime now,
                                        const EmaServerSpec *server, GError **error) {
  /* the owners set up their records directly: every capacity and view entry from them */
  for (guint i = 0; i < l->n; i++)
    ema_slice_gpu_refresh(l->gpus[i]);
  for (guint i = 0; i < l->n; i++) {
    EmaSliceGpu *g = l->gpus[i];
    if (!g->present)
      continue;
    for (guint k = 0; k < 3; k++) {
      const EmaPolicyInfo *info = policies[k];
      EmaPolicyInitFunc init = ema_policy_info_init_func(info);
      if (g->states[k] == NULL)
        g->states[k] = g_malloc0(MAX(ema_policy_info_state_size(info), 1));
      const EmaPoolView *view = init ? ema_slice_ledger_view(l, now, server) : NULL;
      if (init)
        ema_slice_ledger_seal(l);
      if (!ema_policy_info_init(info, g->states[k], params[k], view, error) ||
          (init && !ema_slice_ledger_check_seal(l, info, "init", error)))
        return FALSE;
    }
  }
  return TRUE;
}
