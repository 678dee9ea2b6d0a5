/* poolledger.c: the elastic pool of `ema-validate pool` over real memory
 * (poolledger.h). The arithmetic, the views and the plan checks follow
 * sim/pool/pool.c function by function (same names where there is one); what is
 * new is the real memory behind each slice and block, reached through the
 * backend table.
 *
 * Ledger, per GPU g (slices unless said), as in sim/pool/pool.c:
 *   slices        its KV region
 *   lent[g][b]    lent to borrower b
 *   staging       its tenant's prefetch staging buffer
 *   local_used    its tenant's blocks in its own slices (blocks)
 *   remote[j]     its tenant's blocks in slices lent by j (blocks)
 * (lending, returning and borrowing, the simulator's slices in flight, are
 * always zero here: every action completes inside its call.)
 * Real memory:
 *   home          handles of g's own mapped slices, in order (mapped at
 *                 home_va + i x S); home_uid the identity of each local block
 *   pairs[j][b]   the slices j lends b, in lending order: handle and slot in
 *                 b's borrowed range; pair_uid[j][b] the identity of each
 *                 of b's blocks on j
 *   retired       real resources on their way out (unmap, then release),
 *                 kept until both calls succeeded, so that a failed call is
 *                 retried by the teardown and nothing is forgotten.
 * A block's identity (uid) is the seed of the pattern written into it. */
#include "poolledger.h"

#include <math.h>
#include <string.h>
#include <time.h>

#include "ema/pool/ledger.h"
#include "ema/pool/registry.h"
#include "errors.h"

#define SLICE EMA_SLICE_BYTES
#define NONE G_MAXUINT
#define DEFAULT_GROW 256
#define DEFAULT_CONTEXT 2000
#define BLOCK_TOKENS 16
#define UID_BASE 1000 /* block seeds stay clear of fill.h's seeds */
#define CHECK_BYTES 16

typedef struct {
  guint64 handle, slot;
} LentSlice;

typedef struct {
  guint64 base, slots, first; /* first: the global index of its first slot */
} Segment;

typedef struct {
  guint map_device, mem_device;
  guint64 va, handle;
  gboolean mapped, created;
  gboolean has_slot; /* a slot of map_device's borrowed range, free once unmapped */
  guint64 slot;
} Retired;

typedef struct {
  /* the ledger's counters (ema/ledger.h), read as g->local_used and so on */
  union {
    EmaSliceGpu counters;
    struct {
      EMA_SLICE_GPU_FIELDS
    };
  };
  guint layers;
  const EmaStepModel *model;
  guint64 lacking; /* what the tenant still lacked at the end of the last tick */
  EmaTime decided_at;
  /* real memory */
  guint64 home_va;
  gboolean home_reserved;
  GArray *home;      /* guint64 handles */
  GArray *home_uid;  /* guint64 */
  GArray *segments;  /* Segment */
  GArray *slot_used; /* gboolean */
  guint64 slots_free;
} Gpu;

struct _EmaLedger {
  EmaLedgerConfig config;
  guint n;
  Gpu *gpus;
  EmaSliceLedger slice; /* the lent matrix and the views; gpus[i] is &gpus[i].counters */
  GArray **pairs;       /* [lender * n + borrower]: LentSlice */
  GArray **pair_uid;    /* [lender * n + borrower]: guint64 */
  GArray *retired;      /* Retired */
  double *bytes_scratch;
  const EmaPolicyInfo *policies[3];
  EmaLedgerStats stats;
  EmaLedgerLive live;
  GArray *events; /* EmaLedgerEvent */
  EmaTime now;
  guint64 tick;
  guint64 next_uid;
};

static double wall(void) {
  struct timespec t;
  clock_gettime(CLOCK_MONOTONIC, &t);
  return (double) t.tv_sec + (double) t.tv_nsec * 1e-9;
}

const char *ema_ledger_event_kind_name(EmaLedgerEventKind kind) {
  static const char *const names[] = {"borrow", "return", "reclaim", "own-map", "own-unmap"};
  return (guint) kind < G_N_ELEMENTS(names) ? names[kind] : "?";
}

/* ---- ledger arithmetic (ema/ledger.h) ------------------------------------------ */

static guint64 slices_for_blocks(const Gpu *g, guint64 blocks) {
  return ema_slices_for_blocks(&g->counters, blocks);
}

static void change_lent(EmaLedger *l, guint lender, guint borrower, gint64 delta) {
  ema_slice_ledger_change_lent(&l->slice, lender, borrower, delta);
}

/* ---- real resources ------------------------------------------------------------ */

#define BACKEND(l) ((l)->config.backend)
#define DATA(l) ((l)->config.backend_data)

static gboolean do_create(EmaLedger *l, guint device, guint64 *handle, GError **error) {
  if (!BACKEND(l)->create(DATA(l), device, handle, error))
    return FALSE;
  l->live.handles++;
  return TRUE;
}

static gboolean do_release(EmaLedger *l, guint device, guint64 handle, GError **error) {
  if (!BACKEND(l)->release(DATA(l), device, handle, error))
    return FALSE;
  l->live.handles--;
  return TRUE;
}

static gboolean do_map(EmaLedger *l, guint device, guint64 va, guint64 handle, GError **error) {
  if (!BACKEND(l)->map(DATA(l), device, va, handle, error))
    return FALSE;
  l->live.mappings++;
  return TRUE;
}

static gboolean do_unmap(EmaLedger *l, guint device, guint64 va, GError **error) {
  if (!BACKEND(l)->unmap(DATA(l), device, va, error))
    return FALSE;
  l->live.mappings--;
  return TRUE;
}

static gboolean do_reserve(EmaLedger *l, guint device, guint64 bytes, guint64 hint, guint64 *va,
                           GError **error) {
  if (!BACKEND(l)->reserve(DATA(l), device, bytes, hint, va, error))
    return FALSE;
  l->live.reservations++;
  return TRUE;
}

static gboolean do_unreserve(EmaLedger *l, guint device, guint64 va, guint64 bytes,
                             GError **error) {
  if (!BACKEND(l)->unreserve(DATA(l), device, va, bytes, error))
    return FALSE;
  l->live.reservations--;
  return TRUE;
}

/* A failure while undoing must not hide the error that made us undo. */
static void quietly(gboolean ok, GError *inner) {
  if (!ok && inner)
    g_debug("while undoing: %s", inner->message);
  g_clear_error(&inner);
}

static void free_slot(Gpu *g, guint64 slot) {
  gboolean *used = &g_array_index(g->slot_used, gboolean, slot);
  g_assert(*used);
  *used = FALSE;
  g->slots_free++;
}

/* Unmap and release what is retired; an entry whose call fails stays for a
 * later try (the teardown's). */
static gboolean flush_retired(EmaLedger *l, GError **error) {
  gboolean ok = TRUE;
  guint i = 0;
  while (i < l->retired->len) {
    Retired *r = &g_array_index(l->retired, Retired, i);
    if (r->mapped) {
      if (!do_unmap(l, r->map_device, r->va, error)) {
        ok = FALSE;
        i++;
        continue;
      }
      r->mapped = FALSE;
    }
    if (r->has_slot) {
      free_slot(&l->gpus[r->map_device], r->slot);
      r->has_slot = FALSE;
    }
    if (r->created) {
      if (!do_release(l, r->mem_device, r->handle, error)) {
        ok = FALSE;
        i++;
        continue;
      }
      r->created = FALSE;
    }
    g_array_remove_index(l->retired, i);
  }
  return ok;
}

static void retire(EmaLedger *l, guint map_device, guint mem_device, guint64 va, guint64 handle,
                   gboolean mapped, gboolean created, gboolean has_slot, guint64 slot) {
  Retired r = {map_device, mem_device, va, handle, mapped, created, has_slot, slot};
  g_array_append_val(l->retired, r);
}

static const Segment *segment_of(const Gpu *g, guint64 slot) {
  for (guint i = 0; i < g->segments->len; i++) {
    const Segment *s = &g_array_index(g->segments, Segment, i);
    if (slot >= s->first && slot < s->first + s->slots)
      return s;
  }
  g_assert_not_reached();
}

static guint64 slot_va(const Gpu *g, guint64 slot) {
  const Segment *s = segment_of(g, slot);
  return s->base + (slot - s->first) * SLICE;
}

/* N free slots of G's borrowed range, lowest first; the range grows (a new
 * segment asked for right after the last) when too few are free. */
static gboolean alloc_slots(EmaLedger *l, Gpu *g, guint64 n, guint64 *slots, GError **error) {
  guint64 k = 0;
  if (g->slots_free < n) {
    guint64 total = g->slot_used->len;
    guint64 want = MAX(n - g->slots_free, MAX(l->config.grow_slices, total / 2));
    guint64 hint = 0, va = 0;
    Segment segment;
    if (g->segments->len > 0) {
      const Segment *last = &g_array_index(g->segments, Segment, g->segments->len - 1);
      hint = last->base + last->slots * SLICE;
    }
    if (!do_reserve(l, g->index, want * SLICE, hint, &va, error))
      return FALSE;
    segment = (Segment){va, want, total};
    g_array_append_val(g->segments, segment);
    g_array_set_size(g->slot_used, total + want);
    g->slots_free += want;
  }
  for (guint64 s = 0; s < g->slot_used->len && k < n; s++) {
    gboolean *used = &g_array_index(g->slot_used, gboolean, s);
    if (!*used) {
      *used = TRUE;
      slots[k++] = s;
    }
  }
  g_assert(k == n);
  g->slots_free -= n;
  return TRUE;
}

/* LENDER creates N slices and maps them for BORROWER, appended to their
 * list: all or nothing. */
static gboolean lend_slices(EmaLedger *l, guint lender, guint borrower, guint64 n, GError **error) {
  Gpu *b = &l->gpus[borrower];
  g_autofree guint64 *slots = g_new0(guint64, n);
  g_autofree guint64 *handles = g_new0(guint64, n);
  g_autofree guint64 *vas = g_new0(guint64, n);
  GArray *pair = l->pairs[lender * l->n + borrower];
  guint64 created = 0, mapped = 0;
  gboolean ok;
  if (!alloc_slots(l, b, n, slots, error))
    return FALSE;
  for (guint64 i = 0; i < n; i++)
    vas[i] = slot_va(b, slots[i]);
  ok = TRUE;
  while (ok && created < n) {
    ok = do_create(l, lender, &handles[created], error);
    created += ok;
  }
  while (ok && mapped < n) {
    ok = do_map(l, borrower, vas[mapped], handles[mapped], error);
    mapped += ok;
  }
  /* one access call per run of adjacent slots */
  for (guint64 i = 0; ok && i < n;) {
    guint64 j = i + 1;
    while (j < n && vas[j] == vas[j - 1] + SLICE &&
           segment_of(b, slots[j]) == segment_of(b, slots[i]))
      j++;
    ok = BACKEND(l)->set_access(DATA(l), borrower, vas[i], (j - i) * SLICE, error);
    i = j;
  }
  if (!ok) {
    GError *inner = NULL;
    for (guint64 i = n; i-- > 0;)
      retire(l, borrower, lender, vas[i], handles[i], i < mapped, i < created, TRUE, slots[i]);
    quietly(flush_retired(l, &inner), inner);
    return FALSE;
  }
  for (guint64 i = 0; i < n; i++) {
    LentSlice s = {handles[i], slots[i]};
    g_array_append_val(pair, s);
  }
  return TRUE;
}

/* The last K slices LENDER lends BORROWER go to the retired list. */
static void retire_tail(EmaLedger *l, guint lender, guint borrower, guint64 k) {
  GArray *pair = l->pairs[lender * l->n + borrower];
  const Gpu *b = &l->gpus[borrower];
  g_assert(k <= pair->len);
  for (guint64 i = pair->len; i-- > pair->len - k;) {
    const LentSlice *s = &g_array_index(pair, LentSlice, i);
    retire(l, borrower, lender, slot_va(b, s->slot), s->handle, TRUE, TRUE, TRUE, s->slot);
  }
  g_array_set_size(pair, pair->len - (guint) k);
}

static void push_event(EmaLedger *l, const EmaLedgerEvent *event) {
  g_array_append_val(l->events, *event);
}

/* ---- a GPU's own slices (home range) ----------------------------------------------- */

static guint64 home_target(const Gpu *g) {
  return slices_for_blocks(g, g->local_used) + g->staging;
}

static gboolean home_grow(EmaLedger *l, Gpu *g, guint64 target, GError **error) {
  guint64 have = g->home->len, n, created = 0, mapped = 0;
  g_autofree guint64 *handles = NULL;
  double t0 = wall();
  gboolean ok = TRUE;
  if (target <= have)
    return TRUE;
  n = target - have;
  g_assert(g->home_reserved && target <= g->slices);
  handles = g_new0(guint64, n);
  while (ok && created < n) {
    ok = do_create(l, g->index, &handles[created], error);
    created += ok;
  }
  while (ok && mapped < n) {
    ok = do_map(l, g->index, g->home_va + (have + mapped) * SLICE, handles[mapped], error);
    mapped += ok;
  }
  ok = ok && BACKEND(l)->set_access(DATA(l), g->index, g->home_va + have * SLICE, n * SLICE, error);
  if (!ok) {
    GError *inner = NULL;
    for (guint64 i = n; i-- > 0;)
      retire(l, g->index, g->index, g->home_va + (have + i) * SLICE, handles[i], i < mapped,
             i < created, FALSE, 0);
    quietly(flush_retired(l, &inner), inner);
    return FALSE;
  }
  g_array_append_vals(g->home, handles, (guint) n);
  {
    EmaLedgerEvent event = {.tick = l->tick,
                            .at = l->now,
                            .started = t0,
                            .kind = EMA_LEDGER_OWN_MAP,
                            .gpu = g->index,
                            .peer = g->index,
                            .slices = n,
                            .seconds = wall() - t0};
    event.map_seconds = event.seconds;
    push_event(l, &event);
  }
  return TRUE;
}

static gboolean home_shrink(EmaLedger *l, Gpu *g, guint64 target, GError **error) {
  guint64 have = g->home->len;
  double t0 = wall();
  gboolean ok;
  if (target >= have)
    return TRUE;
  for (guint64 i = have; i-- > target;)
    retire(l, g->index, g->index, g->home_va + i * SLICE, g_array_index(g->home, guint64, i), TRUE,
           TRUE, FALSE, 0);
  g_array_set_size(g->home, (guint) target);
  ok = flush_retired(l, error);
  {
    EmaLedgerEvent event = {.tick = l->tick,
                            .at = l->now,
                            .started = t0,
                            .kind = EMA_LEDGER_OWN_UNMAP,
                            .gpu = g->index,
                            .peer = g->index,
                            .slices = have - target,
                            .seconds = wall() - t0};
    event.unmap_seconds = event.seconds;
    push_event(l, &event);
  }
  return ok;
}

static gboolean home_sync(EmaLedger *l, Gpu *g, GError **error) {
  guint64 target = home_target(g);
  return target > g->home->len ? home_grow(l, g, target, error) : home_shrink(l, g, target, error);
}

/* ---- block data ------------------------------------------------------------------ */

/* Byte OFFSET of BORROWER's blocks on LENDER (LENDER == BORROWER: its home)
 * and how many bytes from there are contiguous. */
static guint64 place_va(const EmaLedger *l, guint borrower, guint lender, guint64 offset,
                        guint64 *contiguous) {
  const Gpu *b = &l->gpus[borrower];
  const GArray *pair;
  if (lender == borrower) {
    *contiguous = G_MAXUINT64;
    return b->home_va + offset;
  }
  pair = l->pairs[lender * l->n + borrower];
  g_assert(offset / SLICE < pair->len);
  *contiguous = SLICE - offset % SLICE;
  return slot_va(b, g_array_index(pair, LentSlice, offset / SLICE).slot) + offset % SLICE;
}

static gboolean fill_block(EmaLedger *l, guint b, guint where, guint64 k, guint64 uid,
                           GError **error) {
  guint64 bytes = l->gpus[b].block_bytes, done = 0;
  while (done < bytes) {
    guint64 run, va = place_va(l, b, where, k * bytes + done, &run);
    guint64 piece = MIN(run, bytes - done);
    if (!BACKEND(l)->fill(DATA(l), b, va, piece, uid, done / 2, error))
      return FALSE;
    done += piece;
  }
  return TRUE;
}

static gboolean copy_block(EmaLedger *l, guint b, guint from, guint64 k_from, guint to,
                           guint64 k_to, GError **error) {
  guint64 bytes = l->gpus[b].block_bytes, done = 0;
  while (done < bytes) {
    guint64 run_src, run_dst;
    guint64 src = place_va(l, b, from, k_from * bytes + done, &run_src);
    guint64 dst = place_va(l, b, to, k_to * bytes + done, &run_dst);
    guint64 piece = MIN(bytes - done, MIN(run_src, run_dst));
    if (!BACKEND(l)->copy(DATA(l), b, dst, src, piece, error))
      return FALSE;
    done += piece;
  }
  return TRUE;
}

static gboolean block_to_host(EmaLedger *l, guint b, guint from, guint64 k, GError **error) {
  guint64 bytes = l->gpus[b].block_bytes, done = 0;
  while (done < bytes) {
    guint64 run, va = place_va(l, b, from, k * bytes + done, &run);
    guint64 piece = MIN(run, bytes - done);
    if (!BACKEND(l)->to_host(DATA(l), b, va, piece, error))
      return FALSE;
    done += piece;
  }
  return TRUE;
}

/* The first and last CHECK_BYTES of block K of B at WHERE hold UID's pattern. */
static gboolean check_block(EmaLedger *l, guint b, guint where, guint64 k, guint64 uid,
                            GError **error) {
  guint64 bytes = l->gpus[b].block_bytes;
  guint64 offsets[2] = {0, bytes >= 2 * CHECK_BYTES ? bytes - CHECK_BYTES : 0};
  for (guint i = 0; i < (offsets[1] > 0 ? 2u : 1u); i++) {
    guint64 run, va = place_va(l, b, where, k * bytes + offsets[i], &run);
    guint64 piece = MIN(MIN(run, bytes), (guint64) CHECK_BYTES);
    if (!BACKEND(l)->check(DATA(l), b, va, piece, uid, offsets[i] / 2, error)) {
      g_prefix_error(error, "gpu%u: block %" G_GUINT64_FORMAT " moved to %s%u: ", b, k,
                     where == b ? "its own memory on gpu" : "gpu", where);
      return FALSE;
    }
  }
  l->stats.blocks_checked++;
  return TRUE;
}

static GArray *uids_at(EmaLedger *l, guint b, guint where) {
  return where == b ? l->gpus[b].home_uid : l->pair_uid[where * l->n + b];
}

/* ---- the tenant's blocks ------------------------------------------------------------- */

/* G's tenant takes N blocks (at most its free blocks): local first, then
 * the lenders with the most free room (sim/pool/pool.c's memory_take). */
static gboolean take(EmaLedger *l, Gpu *g, guint64 n, GError **error) {
  guint64 local_cap = ema_slice_gpu_local_capacity(&g->counters);
  guint64 local = MIN(n, local_cap > g->local_used ? local_cap - g->local_used : 0);
  guint64 rest = n - local, first_local = g->local_used;
  g_autofree guint64 *add = g_new0(guint64, l->n);
  if (rest > 0 && g->remote_cap_total < g->remote_total + rest)
    return TRUE; /* as memory_take: nothing */
  while (rest > 0) {
    guint best = l->n;
    guint64 most = 0;
    for (guint j = 0; j < l->n; j++) {
      guint64 cap = ema_slice_ledger_remote_capacity(&l->slice, &g->counters, j),
              have = g->remote[j] + add[j];
      guint64 room = cap > have ? cap - have : 0;
      if (room > most) {
        most = room;
        best = j;
      }
    }
    g_assert(best < l->n);
    add[best] += MIN(most, rest);
    rest -= MIN(most, rest);
  }
  /* the local blocks' slices first: nothing changes if they cannot be had */
  if (!home_grow(l, g, slices_for_blocks(g, g->local_used + local) + g->staging, error))
    return FALSE;
  g->local_used += local;
  for (guint64 i = 0; i < local; i++) {
    guint64 uid = l->next_uid++;
    g_array_append_val(g->home_uid, uid);
    if (l->config.write_blocks && !fill_block(l, g->index, g->index, first_local + i, uid, error))
      return FALSE;
  }
  for (guint j = 0; j < l->n; j++) {
    guint64 first = g->remote[j];
    GArray *uids = l->pair_uid[j * l->n + g->index];
    if (add[j] == 0)
      continue;
    g->remote[j] += add[j];
    g->remote_total += add[j];
    for (guint64 i = 0; i < add[j]; i++) {
      guint64 uid = l->next_uid++;
      g_array_append_val(uids, uid);
      if (l->config.write_blocks && !fill_block(l, g->index, j, first + i, uid, error))
        return FALSE;
    }
  }
  return TRUE;
}

/* Take K blocks of G off LENDER's end (their data is gone). */
static void remove_remote(EmaLedger *l, Gpu *g, guint lender, guint64 k) {
  GArray *uids = l->pair_uid[lender * l->n + g->index];
  g_assert(k <= g->remote[lender] && uids->len == g->remote[lender]);
  g->remote[lender] -= k;
  g->remote_total -= k;
  g_array_set_size(uids, (guint) g->remote[lender]);
}

/* N remote blocks of G go: FIRST (if < n) first, then in proportion to each
 * lender's share, the remainder from the largest (sim/pool/pool.c). */
static void give_remote(EmaLedger *l, Gpu *g, guint64 n, guint first) {
  guint64 left = n, total = g->remote_total;
  g_autofree guint64 *cut = g_new0(guint64, l->n);
  if (first < l->n) {
    guint64 k = MIN(left, g->remote[first]);
    cut[first] += k;
    left -= k;
    total -= k;
  }
  if (left > 0 && total > 0) {
    guint64 share_total = left;
    for (guint j = 0; j < l->n && left > 0; j++) {
      guint64 have = g->remote[j] - cut[j];
      guint64 k = MIN(have, share_total * have / total);
      cut[j] += k;
      left -= MIN(left, k);
    }
  }
  while (left > 0) {
    guint best = 0;
    for (guint j = 1; j < l->n; j++)
      if (g->remote[j] - cut[j] > g->remote[best] - cut[best])
        best = j;
    g_assert(g->remote[best] - cut[best] > 0);
    cut[best]++;
    left--;
  }
  for (guint j = 0; j < l->n; j++)
    if (cut[j] > 0)
      remove_remote(l, g, j, cut[j]);
}

/* G's tenant gives back N blocks: local and remote in proportion
 * (sim/pool/pool.c's memory_give); its own slices follow. */
static gboolean give(EmaLedger *l, Gpu *g, guint64 n, GError **error) {
  guint64 used = g->local_used + g->remote_total, remote;
  g_assert(n <= used);
  if (n == 0)
    return TRUE;
  remote = (guint64) floor((double) n * (double) g->remote_total / (double) used + 0.5);
  remote = MIN(remote, g->remote_total);
  if (n - remote > g->local_used)
    remote = n - g->local_used;
  give_remote(l, g, remote, NONE);
  g->local_used -= n - remote;
  g_array_set_size(g->home_uid, (guint) g->local_used);
  return home_sync(l, g, error);
}

/* ---- views (sim/pool/pool.c's build_view) ---------------------------------------------------- */

static const EmaPoolView *build_view(EmaLedger *l) {
  return ema_slice_ledger_view(&l->slice, l->now, l->config.server);
}

const EmaPoolView *ema_ledger_view(EmaLedger *ledger) {
  return build_view(ledger);
}

/* ---- applying plans ------------------------------------------------------------------ */

/* BORROWER borrows SLICES from LENDER, cut to what LENDER can lend. */
static gboolean apply_borrow(EmaLedger *l, guint borrower, guint lender, guint64 slices,
                             GError **error) {
  EmaLedgerEvent event = {
      .tick = l->tick, .at = l->now, .kind = EMA_LEDGER_BORROW, .gpu = borrower, .peer = lender};
  double t0;
  slices = ema_slice_cut(slices, ema_slice_ledger_borrow_limit(&l->slice, borrower, lender),
                         &l->stats.plans_adjusted);
  if (slices == 0)
    return TRUE;
  event.started = t0 = wall();
  if (!lend_slices(l, lender, borrower, slices, error))
    return FALSE;
  event.seconds = event.map_seconds = wall() - t0;
  event.slices = slices;
  change_lent(l, lender, borrower, (gint64) slices);
  l->stats.borrows++;
  l->stats.slices_borrowed += slices;
  l->stats.borrow_seconds += event.seconds;
  l->stats.borrow_max_seconds = MAX(l->stats.borrow_max_seconds, event.seconds);
  push_event(l, &event);
  return TRUE;
}

/* BORROWER gives back SLICES empty slices of LENDER, cut to the empty ones. */
static gboolean apply_return(EmaLedger *l, guint borrower, guint lender, guint64 slices,
                             GError **error) {
  EmaLedgerEvent event = {
      .tick = l->tick, .at = l->now, .kind = EMA_LEDGER_RETURN, .gpu = borrower, .peer = lender};
  double t0;
  gboolean ok;
  slices = ema_slice_cut(slices, ema_slice_ledger_return_limit(&l->slice, borrower, lender),
                         &l->stats.plans_adjusted);
  if (slices == 0)
    return TRUE;
  event.started = t0 = wall();
  change_lent(l, lender, borrower, -(gint64) slices);
  retire_tail(l, lender, borrower, slices);
  ok = flush_retired(l, error);
  event.seconds = event.unmap_seconds = wall() - t0;
  event.slices = slices;
  l->stats.returns++;
  l->stats.slices_returned += slices;
  l->stats.return_seconds += event.seconds;
  push_event(l, &event);
  return ok;
}

/* Move up to BLOCKS of b's last blocks on LENDER to TARGET (b: its own free
 * slices; another GPU: slices it lends b on the spot); sets *MOVED. The
 * copies are waited for and the first and last moved block read back. */
static gboolean migrate(EmaLedger *l, Gpu *b, guint lender, guint target, guint64 blocks,
                        guint64 *moved, EmaLedgerEvent *event, GError **error) {
  guint bi = b->index;
  guint64 room, m, src_first, dst_first, new_slices = 0;
  GArray *from_uids = l->pair_uid[lender * l->n + bi], *to_uids;
  double t0;
  gboolean ok = TRUE;
  if (target == bi) {
    guint64 cap = ema_slice_gpu_local_capacity(&b->counters);
    room = cap > b->local_used ? cap - b->local_used : 0;
  } else {
    Gpu *t = &l->gpus[target];
    room = t->shares && target != lender
               ? ema_blocks_in_slices(&b->counters, ema_slice_gpu_lendable(&t->counters))
               : 0;
  }
  *moved = m = MIN(room, blocks);
  if (m == 0)
    return TRUE;
  src_first = b->remote[lender] - m;
  t0 = wall();
  if (target == bi) {
    dst_first = b->local_used;
    ok = home_grow(l, b, slices_for_blocks(b, b->local_used + m) + b->staging, error);
  } else {
    new_slices = slices_for_blocks(b, m);
    dst_first = b->remote[target];
    ok = lend_slices(l, target, bi, new_slices, error);
  }
  event->map_seconds += wall() - t0;
  if (!ok) {
    *moved = 0;
    return FALSE;
  }
  t0 = wall();
  for (guint64 i = 0; ok && i < m; i++)
    ok = copy_block(l, bi, lender, src_first + i, target, dst_first + i, error);
  ok = ok && BACKEND(l)->sync(DATA(l), bi, error);
  event->copy_seconds += wall() - t0;
  if (!ok) { /* the data stays where it was; the destination goes */
    GError *inner = NULL;
    if (target == bi) {
      quietly(home_shrink(l, b, home_target(b), &inner), inner);
    } else {
      retire_tail(l, target, bi, new_slices);
      quietly(flush_retired(l, &inner), inner);
    }
    *moved = 0;
    return FALSE;
  }
  event->bytes_copied += m * b->block_bytes;
  /* commit */
  to_uids = uids_at(l, bi, target);
  g_array_append_vals(to_uids, &g_array_index(from_uids, guint64, src_first), (guint) m);
  if (target == bi) {
    b->remote_total -= m;
    b->local_used += m;
  } else {
    change_lent(l, target, bi, (gint64) new_slices);
    b->remote[target] += m;
  }
  b->remote[lender] -= m;
  g_array_set_size(from_uids, (guint) b->remote[lender]);
  l->stats.blocks_migrated += m;
  event->blocks_moved += m;
  if (l->config.write_blocks) {
    guint64 last = dst_first + m - 1;
    if (!check_block(l, bi, target, dst_first, g_array_index(to_uids, guint64, dst_first), error) ||
        (m > 1 && !check_block(l, bi, target, last, g_array_index(to_uids, guint64, last), error)))
      return FALSE;
  }
  return TRUE;
}

/* BLOCKS of b's last blocks on LENDER are copied to host memory and leave
 * the pool (the requests would swap back in later). */
static gboolean evict_to_host(EmaLedger *l, Gpu *b, guint lender, guint64 blocks,
                              EmaLedgerEvent *event, GError **error) {
  guint64 first = b->remote[lender] - blocks;
  double t0 = wall();
  gboolean ok = TRUE;
  for (guint64 i = 0; ok && i < blocks; i++)
    ok = block_to_host(l, b->index, lender, first + i, error);
  ok = ok && BACKEND(l)->sync(DATA(l), b->index, error);
  event->copy_seconds += wall() - t0;
  if (!ok)
    return FALSE;
  event->bytes_copied += blocks * b->block_bytes;
  remove_remote(l, b, lender, blocks);
  l->stats.blocks_to_host += blocks;
  event->blocks_to_host += blocks;
  return TRUE;
}

/* LENDER takes back the slices of ACTION (sim/pool/pool.c's apply_reclaim_action). */
static gboolean apply_reclaim_action(EmaLedger *l, guint lender, const EmaReclaimAction *action,
                                     guint64 *taken, GError **error) {
  guint bi = action->borrower;
  Gpu *b = &l->gpus[bi];
  guint64 slices =
      ema_slice_cut(action->slices, ema_slice_ledger_reclaim_limit(&l->slice, lender, bi),
                    &l->stats.plans_adjusted);
  guint64 keep, excess, moved = 0;
  EmaLedgerEvent event = {.tick = l->tick,
                          .at = l->now,
                          .kind = EMA_LEDGER_RECLAIM,
                          .gpu = lender,
                          .peer = bi,
                          .target = action->target,
                          .target_gpu = action->target_gpu};
  double t0, t1;
  gboolean ok = TRUE;
  *taken = 0;
  if (slices == 0 || bi == lender)
    return TRUE;
  event.started = t0 = wall();
  excess = ema_slice_ledger_reclaim_excess(&l->slice, lender, bi, slices, &keep);
  if (excess > 0) {
    switch (action->target) {
    case EMA_VACATE_TO_BORROWER:
      ok = migrate(l, b, lender, bi, excess, &moved, &event, error);
      break;
    case EMA_VACATE_TO_PEER:
      if (action->target_gpu < l->n)
        ok = migrate(l, b, lender, action->target_gpu, excess, &moved, &event, error);
      break;
    case EMA_VACATE_TO_HOST:
      ok = evict_to_host(l, b, lender, excess, &event, error);
      moved = ok ? excess : 0;
      break;
    case EMA_VACATE_DROP:
      break;
    }
    if (!ok)
      return FALSE;
    if (moved < excess) {
      if (action->target != EMA_VACATE_DROP)
        l->stats.plans_adjusted++;
      /* what could not go where the plan said is dropped */
      remove_remote(l, b, lender, excess - moved);
      l->stats.blocks_dropped += excess - moved;
      event.blocks_dropped += excess - moved;
    }
  }
  g_assert(b->remote[lender] <= keep);
  change_lent(l, lender, bi, -(gint64) slices);
  retire_tail(l, lender, bi, slices);
  t1 = wall();
  ok = flush_retired(l, error);
  event.unmap_seconds = wall() - t1;
  event.seconds = wall() - t0;
  event.slices = slices;
  push_event(l, &event);
  *taken = slices;
  return ok;
}

static gboolean run_reclaim(EmaLedger *l, guint lender, guint64 needed, GError **error) {
  const EmaReclaimPolicyOps *ops = l->policies[EMA_POLICY_RECLAIM]->ops;
  EmaReclaimPlan plan = {0};
  guint64 total = 0;
  double t0, seconds;
  gboolean ok = TRUE;
  ops->decide(l->gpus[lender].states[EMA_POLICY_RECLAIM], l->config.policy->reclaim_params,
              build_view(l), lender, needed, &plan);
  t0 = wall();
  for (guint i = 0; ok && i < MIN(plan.n, G_N_ELEMENTS(plan.actions)); i++) {
    guint64 taken = 0;
    if (plan.actions[i].borrower >= l->n) {
      l->stats.plans_adjusted++;
      continue;
    }
    ok = apply_reclaim_action(l, lender, &plan.actions[i], &taken, error);
    total += taken;
  }
  seconds = wall() - t0;
  if (total == 0)
    return ok;
  l->stats.reclaims++;
  l->stats.slices_reclaimed += total;
  l->stats.reclaim_seconds += seconds;
  l->stats.reclaim_max_seconds = MAX(l->stats.reclaim_max_seconds, seconds);
  return ok;
}

static gboolean run_borrow(EmaLedger *l, guint borrower, GError **error) {
  const EmaBorrowPolicyOps *ops = l->policies[EMA_POLICY_BORROW]->ops;
  EmaBorrowPlan plan = {0};
  ops->decide(l->gpus[borrower].states[EMA_POLICY_BORROW], l->config.policy->borrow_params,
              build_view(l), borrower, &plan);
  for (guint i = 0; i < MIN(plan.n, G_N_ELEMENTS(plan.actions)); i++) {
    const EmaBorrowAction *a = &plan.actions[i];
    gboolean ok = TRUE;
    if (a->lender >= l->n)
      l->stats.plans_adjusted++;
    else if (a->slices > 0)
      ok = apply_borrow(l, borrower, a->lender, (guint64) a->slices, error);
    else if (a->slices < 0)
      ok = apply_return(l, borrower, a->lender, (guint64) -a->slices, error);
    if (!ok)
      return FALSE;
  }
  return TRUE;
}

/* sim/pool/pool.c's decide(). */
static gboolean decide(EmaLedger *l, Gpu *g, GError **error) {
  gboolean ok = TRUE;
  g->decided_at = l->now;
  if (g->lent_total > 0) {
    if (g->blocks_short > 0) {
      guint64 needed = slices_for_blocks(g, g->blocks_short);
      guint64 coming = g->returning;
      if (needed > coming)
        ok = run_reclaim(l, g->index, needed - coming, error);
    }
    if (ok && g->lent_total > 0)
      ok = run_reclaim(l, g->index, 0, error);
  }
  if (ok && g->has_tenant)
    ok = run_borrow(l, g->index, error);
  g->blocks_short = 0;
  return ok;
}

/* ---- prefetch: the step-cost view (sim/pool/pool.c's ema_pool_step_time) -----------------------
 */

/* Before G's step: the prefetch policy, if G holds remote KV. The step is
 * the decode of its blocks by `running` sequences, timed by its step
 * model; interference is not tracked here (no steps run on this side). */
static gboolean plan_prefetch(EmaLedger *l, Gpu *g, GError **error) {
  EmaStepBatch batch = {0};
  EmaStepBreakdown bd;
  EmaStepCostView view;
  double used = (double) (g->local_used + g->remote_total), L = g->layers, t_copy, t_direct;
  const EmaServerSpec *server = l->config.server;
  if (g->model == NULL || g->remote_total == 0 || L <= 0)
    return TRUE;
  batch.decode_seqs = MAX(g->running, 1);
  batch.decode_context = used * BLOCK_TOKENS;
  batch.logits = batch.decode_seqs;
  if (ema_step_time(g->model, &batch, &bd) == 0)
    return TRUE;
  ema_slice_ledger_step_cost(&l->slice, &g->counters, server, &bd, L, 1, l->bytes_scratch, &view,
                             &t_copy, &t_direct);
  ema_slice_gpu_plan_prefetch(&g->counters, l->policies[EMA_POLICY_PREFETCH],
                              l->config.policy->prefetch_params, build_view(l), &view, g->layers);
  return home_sync(l, g, error);
}

/* ---- the round ------------------------------------------------------------------------ */

static guint64 blocks_used(const Gpu *g) {
  return g->local_used + g->remote_total;
}

static guint count_seqs(const EmaLedger *l, guint64 blocks) {
  guint64 tokens = blocks * BLOCK_TOKENS;
  return (guint) ((tokens + l->config.context_tokens - 1) / l->config.context_tokens);
}

/* G's tenant moves towards TARGET blocks; returns what it still lacks. */
static gboolean adjust(EmaLedger *l, Gpu *g, guint64 target, guint64 *lacking, GError **error) {
  guint64 used = blocks_used(g);
  *lacking = 0;
  if (target < used)
    return give(l, g, used - target, error);
  if (target > used) {
    guint64 k = MIN(target - used, ema_slice_gpu_free_blocks(&g->counters));
    if (k > 0 && !take(l, g, k, error))
      return FALSE;
    *lacking = target - blocks_used(g);
  }
  return TRUE;
}

gboolean ema_ledger_tick(EmaLedger *l, EmaTime now, const guint64 *targets, GError **error) {
  l->now = now;
  l->tick++;
  for (guint i = 0; i < l->n; i++) {
    Gpu *g = &l->gpus[i];
    guint64 lacking;
    if (!g->has_tenant)
      continue;
    if (!plan_prefetch(l, g, error) || !adjust(l, g, targets[i], &lacking, error))
      return FALSE;
    g->blocks_short = lacking;
    g->running = count_seqs(l, blocks_used(g));
    g->waiting = count_seqs(l, lacking);
  }
  for (guint i = 0; i < l->n; i++) {
    Gpu *g = &l->gpus[i];
    if (g->has_tenant && g->shares &&
        (g->blocks_short > 0 || now - g->decided_at >= l->config.policy->decision_period) &&
        !decide(l, g, error))
      return FALSE;
  }
  for (guint i = 0; i < l->n; i++) {
    Gpu *g = &l->gpus[i];
    guint64 lacking;
    if (!g->has_tenant)
      continue;
    if (!adjust(l, g, targets[i], &lacking, error))
      return FALSE;
    g->lacking = lacking;
    g->running = count_seqs(l, blocks_used(g));
    g->waiting = count_seqs(l, lacking);
  }
  for (guint i = 0; i < l->n; i++) {
    Gpu *g = &l->gpus[i];
    if (g->has_tenant)
      ema_slice_gpu_update_demand(&g->counters, now, blocks_used(g));
  }
  for (guint i = 0; i < l->n; i++)
    if (l->gpus[i].present && !BACKEND(l)->sync(DATA(l), i, error))
      return FALSE;
  return TRUE;
}

void ema_ledger_set_last_step(EmaLedger *ledger, guint gpu, EmaTime duration) {
  ledger->gpus[gpu].last_step = duration;
}

/* ---- set-up and the end -------------------------------------------------------------------- */

EmaLedger *ema_ledger_new(const EmaLedgerConfig *config, GError **error) {
  EmaLedger *l = g_new0(EmaLedger, 1);
  const char *names[3] = {config->policy->borrow, config->policy->prefetch,
                          config->policy->reclaim};
  guint n = config->n_gpus;
  l->config = *config;
  if (l->config.grow_slices == 0)
    l->config.grow_slices = DEFAULT_GROW;
  if (l->config.context_tokens == 0)
    l->config.context_tokens = DEFAULT_CONTEXT;
  l->n = n;
  l->gpus = g_new0(Gpu, n);
  ema_slice_ledger_init(&l->slice, n);
  l->pairs = g_new0(GArray *, (gsize) n * n);
  l->pair_uid = g_new0(GArray *, (gsize) n * n);
  for (guint i = 0; i < n * n; i++) {
    l->pairs[i] = g_array_new(FALSE, FALSE, sizeof(LentSlice));
    l->pair_uid[i] = g_array_new(FALSE, FALSE, sizeof(guint64));
  }
  l->retired = g_array_new(FALSE, FALSE, sizeof(Retired));
  l->bytes_scratch = g_new0(double, n);
  l->events = g_array_new(FALSE, FALSE, sizeof(EmaLedgerEvent));
  l->next_uid = UID_BASE;
  for (guint i = 0; i < n; i++) {
    Gpu *g = &l->gpus[i];
    g->index = i;
    l->slice.gpus[i] = &g->counters;
    g->remote = g_new0(guint64, n);
    g->plan = (EmaPrefetchPlan){EMA_REMOTE_DIRECT, 1, 1, 1};
    g->home = g_array_new(FALSE, FALSE, sizeof(guint64));
    g->home_uid = g_array_new(FALSE, FALSE, sizeof(guint64));
    g->segments = g_array_new(FALSE, FALSE, sizeof(Segment));
    g->slot_used = g_array_new(FALSE, TRUE, sizeof(gboolean));
  }
  for (guint k = 0; k < 3; k++) {
    l->policies[k] = ema_policy_registry_find((EmaPolicyKind) k, names[k], error);
    if (l->policies[k] == NULL) {
      ema_ledger_free(l);
      return NULL;
    }
  }
  return l;
}

void ema_ledger_add_tenant(EmaLedger *l, guint gpu, guint64 slices, guint64 block_bytes,
                           const EmaStepModel *step_model) {
  Gpu *g = &l->gpus[gpu];
  g->present = g->has_tenant = TRUE;
  g->shares = step_model == NULL || ema_step_model_tp(step_model) == 1;
  g->slices = slices;
  g->block_bytes = block_bytes;
  g->model = step_model;
  g->layers = step_model ? ema_step_model_layers(step_model) : 0;
}

void ema_ledger_add_idle_gpu(EmaLedger *l, guint gpu, guint64 slices) {
  Gpu *g = &l->gpus[gpu];
  g->present = g->shares = TRUE;
  g->slices = slices;
}

gboolean ema_ledger_start(EmaLedger *l, EmaTime now, GError **error) {
  gconstpointer params[3] = {l->config.policy->borrow_params, l->config.policy->prefetch_params,
                             l->config.policy->reclaim_params};
  l->now = now;
  for (guint i = 0; i < l->n; i++) {
    Gpu *g = &l->gpus[i];
    g->decided_at = now;
    g->demand_at = now;
    if (g->has_tenant && g->slices > 0 && !g->home_reserved) {
      if (!do_reserve(l, i, g->slices * SLICE, 0, &g->home_va, error))
        return FALSE;
      g->home_reserved = TRUE;
    }
  }
  return ema_slice_ledger_init_policies(&l->slice, l->policies, params, l->now, l->config.server,
                                        error);
}

/* Free G's borrowed segments (all slots must be unmapped) and its home range. */
static gboolean unreserve_all(EmaLedger *l, Gpu *g, GError **error) {
  gboolean ok = TRUE;
  while (g->segments->len > 0) {
    guint last = g->segments->len - 1;
    const Segment *s = &g_array_index(g->segments, Segment, last);
    for (guint64 k = s->first; k < s->first + s->slots; k++) {
      if (g_array_index(g->slot_used, gboolean, k)) {
        g_set_error(error, EMA_VALIDATE_ERROR, EMA_VALIDATE_ERROR_CUDA,
                    "gpu%u: a borrowed slot is still mapped; its range stays reserved", g->index);
        return FALSE;
      }
    }
    if (!do_unreserve(l, g->index, s->base, s->slots * SLICE, error))
      return FALSE;
    g->slots_free -= s->slots;
    g_array_set_size(g->slot_used, (guint) s->first);
    g_array_remove_index(g->segments, last);
  }
  if (g->home_reserved) {
    if (g->home->len > 0) {
      g_set_error(error, EMA_VALIDATE_ERROR, EMA_VALIDATE_ERROR_CUDA,
                  "gpu%u: own slices are still mapped; its range stays reserved", g->index);
      return FALSE;
    }
    ok = do_unreserve(l, g->index, g->home_va, g->slices * SLICE, error);
    g->home_reserved = !ok;
  }
  return ok;
}

gboolean ema_ledger_drain(EmaLedger *l, GError **error) {
  gboolean ok = TRUE;
  for (guint i = 0; i < l->n; i++) {
    Gpu *g = &l->gpus[i];
    if (!g->has_tenant)
      continue;
    g->staging = 0;
    ok = give(l, g, blocks_used(g), error) && ok;
    ok = home_sync(l, g, error) && ok;
  }
  for (guint j = 0; j < l->n; j++)
    for (guint b = 0; b < l->n; b++)
      if (l->slice.lent[j * l->n + b] > 0)
        ok = apply_return(l, b, j, l->slice.lent[j * l->n + b], error) && ok;
  ok = flush_retired(l, error) && ok;
  for (guint i = 0; i < l->n; i++)
    ok = unreserve_all(l, &l->gpus[i], error) && ok;
  return ok;
}

gboolean ema_ledger_teardown(EmaLedger *l, GError **error) {
  gboolean ok = TRUE;
  for (guint j = 0; j < l->n; j++) {
    for (guint b = 0; b < l->n; b++) {
      guint64 lent = l->slice.lent[j * l->n + b];
      if (lent > 0)
        change_lent(l, j, b, -(gint64) lent);
      retire_tail(l, j, b, l->pairs[j * l->n + b]->len);
      g_array_set_size(l->pair_uid[j * l->n + b], 0);
    }
  }
  for (guint i = 0; i < l->n; i++) {
    Gpu *g = &l->gpus[i];
    for (guint64 k = g->home->len; k-- > 0;)
      retire(l, i, i, g->home_va + k * SLICE, g_array_index(g->home, guint64, k), TRUE, TRUE, FALSE,
             0);
    g_array_set_size(g->home, 0);
    g_array_set_size(g->home_uid, 0);
    g->local_used = g->remote_total = g->staging = 0;
    memset(g->remote, 0, l->n * sizeof(guint64));
  }
  ok = flush_retired(l, error);
  for (guint i = 0; i < l->n; i++)
    ok = unreserve_all(l, &l->gpus[i], error) && ok;
  return ok;
}

void ema_ledger_free(EmaLedger *l) {
  GError *error = NULL;
  if (l == NULL)
    return;
  if (!ema_ledger_teardown(l, &error)) {
    g_debug("releasing the pool's memory: %s", error ? error->message : "failed");
    g_clear_error(&error);
  }
  for (guint i = 0; i < l->n; i++) {
    Gpu *g = &l->gpus[i];
    for (guint k = 0; k < 3; k++)
      g_free(g->states[k]);
    g_free(g->remote);
    g_array_unref(g->home);
    g_array_unref(g->home_uid);
    g_array_unref(g->segments);
    g_array_unref(g->slot_used);
  }
  for (guint i = 0; i < l->n * l->n; i++) {
    g_array_unref(l->pairs[i]);
    g_array_unref(l->pair_uid[i]);
  }
  g_free(l->pairs);
  g_free(l->pair_uid);
  g_array_unref(l->retired);
  g_array_unref(l->events);
  g_free(l->gpus);
  ema_slice_ledger_clear(&l->slice);
  g_free(l->bytes_scratch);
  g_free(l);
}

/* ---- checks and figures -------------------------------------------------------------------- */

gboolean ema_ledger_check(const EmaLedger *l, GError **error) {
  guint64 handles = 0, mappings = 0;
  if (!ema_slice_ledger_check_counters(&l->slice, error))
    return FALSE;
  for (guint i = 0; i < l->n; i++) {
    const Gpu *g = &l->gpus[i];
    for (guint j = 0; j < l->n; j++) {
      const GArray *pair = l->pairs[j * l->n + i];
      if (pair->len != l->slice.lent[j * l->n + i])
        return ema_slice_ledger_invalid(
            error, "gpu%u lends gpu%u %" G_GUINT64_FORMAT " slices, %u of them mapped", j, i,
            l->slice.lent[j * l->n + i], pair->len);
      if (l->pair_uid[j * l->n + i]->len != g->remote[j])
        return ema_slice_ledger_invalid(error, "gpu%u: its blocks on gpu%u and their data disagree",
                                        i, j);
      handles += pair->len;
      mappings += pair->len;
    }
    if (g->home->len != home_target(g))
      return ema_slice_ledger_invalid(error,
                                      "gpu%u: %u own slices mapped for %" G_GUINT64_FORMAT
                                      " slices of blocks and staging",
                                      i, g->home->len, home_target(g));
    if (g->home_uid->len != g->local_used)
      return ema_slice_ledger_invalid(error, "gpu%u: its local blocks and their data disagree", i);
    handles += g->home->len;
    mappings += g->home->len;
  }
  for (guint k = 0; k < l->retired->len; k++) {
    const Retired *r = &g_array_index(l->retired, Retired, k);
    handles += r->created;
    mappings += r->mapped;
  }
  if (handles != l->live.handles || mappings != l->live.mappings)
    return ema_slice_ledger_invalid(error,
                                    "%" G_GUINT64_FORMAT " handles and %" G_GUINT64_FORMAT
                                    " mappings alive, the ledger accounts for %" G_GUINT64_FORMAT
                                    " and %" G_GUINT64_FORMAT,
                                    l->live.handles, l->live.mappings, handles, mappings);
  return TRUE;
}

const EmaLedgerStats *ema_ledger_stats(const EmaLedger *ledger) {
  return &ledger->stats;
}

EmaLedgerLive ema_ledger_live(const EmaLedger *ledger) {
  return ledger->live;
}

const GArray *ema_ledger_events(const EmaLedger *ledger) {
  return ledger->events;
}

guint64 ema_ledger_slices_lent(const EmaLedger *ledger, guint gpu) {
  return ledger->gpus[gpu].lent_total;
}

guint64 ema_ledger_slices_borrowed(const EmaLedger *ledger, guint gpu) {
  return ledger->gpus[gpu].borrowed_total;
}

guint64 ema_ledger_blocks_used(const EmaLedger *ledger, guint gpu) {
  return blocks_used(&ledger->gpus[gpu]);
}

guint64 ema_ledger_blocks_remote(const EmaLedger *ledger, guint gpu) {
  return ledger->gpus[gpu].remote_total;
}

guint64 ema_ledger_blocks_short(const EmaLedger *ledger, guint gpu) {
  return ledger->gpus[gpu].lacking;
}

guint64 ema_ledger_own_mapped(const EmaLedger *ledger, guint gpu) {
  return ledger->gpus[gpu].home->len;
}

guint64 ema_ledger_staging(const EmaLedger *ledger, guint gpu) {
  return ledger->gpus[gpu].staging;
}

guint ema_ledger_segments(const EmaLedger *ledger, guint gpu, guint64 *slots) {
  const Gpu *g = &ledger->gpus[gpu];
  if (slots)
    *slots = g->slot_used->len;
  return g->segments->len;
}

guint64 ema_ledger_fill_seed(guint64 seed, guint64 index) {
  /* fill.h hashes seed x PHI + index: move the seed by index / PHI (PHI is
   * odd, so it has an inverse modulo 2^64; Newton's iteration doubles the
   * correct bits each step) */
  const guint64 phi = G_GUINT64_CONSTANT(0x9e3779b97f4a7c15);
  guint64 inverse = phi;
  for (guint i = 0; i < 6; i++)
    inverse *= 2 - phi * inverse;
  return seed + index * inverse;
}

gboolean ema_ledger_policy_parse(const char *text, EmaPolicySpec *spec, GError **error) {
  g_autoptr(EmaNode) tree = ema_node_load_string(text, "--policy", NULL, error);
  memset(spec, 0, sizeof *spec);
  if (tree == NULL)
    return FALSE;
  if (tree->kind == EMA_NODE_SCALAR) {
    EmaNode *map = tree->value ? ema_policy_spec_resolve(tree, "--policy", error) : NULL;
    if (tree->value == NULL)
      g_set_error(error, EMA_CONFIG_ERROR, EMA_CONFIG_ERROR_TYPE,
                  "--policy: a composition's name or a map of policies");
    if (map == NULL)
      return FALSE;
    ema_node_free(tree);
    tree = map;
  }
  if (!ema_params_bind(&ema_policy_spec_params, spec, tree, "policy", error)) {
    ema_params_clear(&ema_policy_spec_params, spec);
    return FALSE;
  }
  return TRUE;
}

/* ---- the scenario --------------------------------------------------------------------------- */

guint64 ema_pool_scenario_target(const EmaPoolScenario *s, guint gpu, double t) {
  double f = s->seconds > 0 ? t / s->seconds : 1, r = (double) s->blocks[gpu ? 1 : 0], x;
  if (gpu == 0) {
    if (f < 0.1)
      x = 0.5;
    else if (f < 0.4)
      x = 0.5 + 2.0 * (f - 0.1) / 0.3;
    else if (f < 0.5)
      x = 2.5;
    else if (f < 0.8)
      x = 0.7;
    else if (f < 0.9)
      x = 1.5;
    else
      x = 0.2;
  } else {
    x = f >= 0.6 && f < 0.8 ? 1.0 : 0.1;
  }
  return (guint64) floor(x * r);
}

const char *ema_pool_scenario_phase(const EmaPoolScenario *s, double t) {
  double f = s->seconds > 0 ? t / s->seconds : 1;
  if (f < 0.1)
    return "warm";
  if (f < 0.4)
    return "ramp";
  if (f < 0.5)
    return "hold";
  if (f < 0.6)
    return "finish";
  if (f < 0.8)
    return "jump";
  if (f < 0.9)
    return "regrow";
  return "end";
}
