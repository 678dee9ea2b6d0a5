/* poolmem.c: the real memory behind the pool's slices (poolmem.h): the
 * pool backend (ema/pool/backend.h) of `ema-validate pool`, over a table of
 * device operations (CUDA's in realpool.c, poolfake.c's CPU emulation). The
 * pool itself (ledger, blocks, policies, plans, reclaim, events) is
 * sim/pool/core.c's; this file only keeps where each slice and block is.
 *
 * Real memory, per GPU g:
 *   home          handles of g's own mapped slices, in order (mapped at
 *                 home_va + i x S); home_uid the identity of each local block
 *   segments      g's borrowed range, slot_used its slots
 *   pairs[j][b]   the slices j lends b, in lending order: handle and slot in
 *                 b's borrowed range; pair_uid[j][b] the identity of each
 *                 of b's blocks on j
 *   retired       real resources on their way out (unmap, then release),
 *                 kept until both calls succeeded, so that a failed call is
 *                 retried by the teardown and nothing is forgotten.
 * A block's identity (uid) is the seed of the pattern written into it.
 * Invariants (the owner check the pool runs after its actions): each lent
 * slice one handle and one mapping; each GPU's mapped own slices its
 * blocks' slices plus staging; one uid per block the ledger counts; the
 * live handles and mappings are those the lists account for. */
#include "poolmem.h"

#include <math.h>
#include <string.h>
#include <time.h>

#include "errors.h"

#define SLICE EMA_SLICE_BYTES
#define DEFAULT_GROW 256
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
  /* the pool's counters (ema/pool/ledger.h), read as g->local_used and so on */
  union {
    EmaSliceGpu counters;
    struct {
      EMA_SLICE_GPU_FIELDS
    };
  };
  guint64 home_va;
  gboolean home_reserved;
  GArray *home;      /* guint64 handles */
  GArray *home_uid;  /* guint64 */
  GArray *segments;  /* Segment */
  GArray *slot_used; /* gboolean */
  guint64 slots_free;
} Gpu;

struct _EmaPoolMem {
  EmaPoolMemConfig config;
  guint n;
  Gpu *gpus;
  EmaPoolCore core;  /* the pool; core.ledger.gpus[i] is &gpus[i].counters */
  GArray **pairs;    /* [lender * n + borrower]: LentSlice */
  GArray **pair_uid; /* [lender * n + borrower]: guint64 */
  GArray *retired;   /* Retired */
  EmaPoolMemLive live;
  guint64 next_uid;
};

static double wall(void) {
  struct timespec t;
  clock_gettime(CLOCK_MONOTONIC, &t);
  return (double) t.tv_sec + (double) t.tv_nsec * 1e-9;
}

/* ---- real resources ------------------------------------------------------------ */

#define DEVICE(l) ((l)->config.device)
#define DATA(l) ((l)->config.device_data)

static gboolean do_create(EmaPoolMem *l, guint device, guint64 *handle, GError **error) {
  if (!DEVICE(l)->create(DATA(l), device, handle, error))
    return FALSE;
  l->live.handles++;
  return TRUE;
}

static gboolean do_release(EmaPoolMem *l, guint device, guint64 handle, GError **error) {
  if (!DEVICE(l)->release(DATA(l), device, handle, error))
    return FALSE;
  l->live.handles--;
  return TRUE;
}

static gboolean do_map(EmaPoolMem *l, guint device, guint64 va, guint64 handle, GError **error) {
  if (!DEVICE(l)->map(DATA(l), device, va, handle, error))
    return FALSE;
  l->live.mappings++;
  return TRUE;
}

static gboolean do_unmap(EmaPoolMem *l, guint device, guint64 va, GError **error) {
  if (!DEVICE(l)->unmap(DATA(l), device, va, error))
    return FALSE;
  l->live.mappings--;
  return TRUE;
}

static gboolean do_reserve(EmaPoolMem *l, guint device, guint64 bytes, guint64 hint, guint64 *va,
                           GError **error) {
  if (!DEVICE(l)->reserve(DATA(l), device, bytes, hint, va, error))
    return FALSE;
  l->live.reservations++;
  return TRUE;
}

static gboolean do_unreserve(EmaPoolMem *l, guint device, guint64 va, guint64 bytes,
                             GError **error) {
  if (!DEVICE(l)->unreserve(DATA(l), device, va, bytes, error))
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
 * later try (the teardown's), in its order. One pass that packs the entries
 * kept to the front: removing each done entry from the front moved all the
 * others (a 1 TiB region's 500k slices took minutes). */
static gboolean flush_retired(EmaPoolMem *l, GError **error) {
  gboolean ok = TRUE;
  guint kept = 0;
  for (guint i = 0; i < l->retired->len; i++) {
    Retired *r = &g_array_index(l->retired, Retired, i);
    gboolean done = TRUE;
    if (r->mapped) {
      if (do_unmap(l, r->map_device, r->va, error))
        r->mapped = FALSE;
      else
        done = ok = FALSE;
    }
    if (done && r->has_slot) {
      free_slot(&l->gpus[r->map_device], r->slot);
      r->has_slot = FALSE;
    }
    if (done && r->created) {
      if (do_release(l, r->mem_device, r->handle, error))
        r->created = FALSE;
      else
        done = ok = FALSE;
    }
    if (!done)
      g_array_index(l->retired, Retired, kept++) = *r;
  }
  g_array_set_size(l->retired, kept);
  return ok;
}

static void retire(EmaPoolMem *l, guint map_device, guint mem_device, guint64 va, guint64 handle,
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
static gboolean alloc_slots(EmaPoolMem *l, Gpu *g, guint64 n, guint64 *slots, GError **error) {
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
static gboolean lend_slices(EmaPoolMem *l, guint lender, guint borrower, guint64 n,
                            GError **error) {
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
    ok = DEVICE(l)->set_access(DATA(l), borrower, vas[i], (j - i) * SLICE, error);
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
static void retire_tail(EmaPoolMem *l, guint lender, guint borrower, guint64 k) {
  GArray *pair = l->pairs[lender * l->n + borrower];
  const Gpu *b = &l->gpus[borrower];
  g_assert(k <= pair->len);
  for (guint64 i = pair->len; i-- > pair->len - k;) {
    const LentSlice *s = &g_array_index(pair, LentSlice, i);
    retire(l, borrower, lender, slot_va(b, s->slot), s->handle, TRUE, TRUE, TRUE, s->slot);
  }
  g_array_set_size(pair, pair->len - (guint) k);
}

/* ---- a GPU's own slices (home range) ----------------------------------------------- */

static guint64 home_target(const Gpu *g) {
  return ema_slices_for_blocks(&g->counters, g->local_used) + g->staging;
}

static gboolean home_grow(EmaPoolMem *l, Gpu *g, guint64 target, GError **error) {
  guint64 have = g->home->len, n, created = 0, mapped = 0;
  g_autofree guint64 *handles = NULL;
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
  ok = ok && DEVICE(l)->set_access(DATA(l), g->index, g->home_va + have * SLICE, n * SLICE, error);
  if (!ok) {
    GError *inner = NULL;
    for (guint64 i = n; i-- > 0;)
      retire(l, g->index, g->index, g->home_va + (have + i) * SLICE, handles[i], i < mapped,
             i < created, FALSE, 0);
    quietly(flush_retired(l, &inner), inner);
    return FALSE;
  }
  g_array_append_vals(g->home, handles, (guint) n);
  return TRUE;
}

static gboolean home_shrink(EmaPoolMem *l, Gpu *g, guint64 target, GError **error) {
  guint64 have = g->home->len;
  if (target >= have)
    return TRUE;
  for (guint64 i = have; i-- > target;)
    retire(l, g->index, g->index, g->home_va + i * SLICE, g_array_index(g->home, guint64, i), TRUE,
           TRUE, FALSE, 0);
  g_array_set_size(g->home, (guint) target);
  return flush_retired(l, error);
}

/* ---- block data ------------------------------------------------------------------ */

/* Byte OFFSET of BORROWER's blocks on LENDER (LENDER == BORROWER: its home)
 * and how many bytes from there are contiguous. */
static guint64 place_va(const EmaPoolMem *l, guint borrower, guint lender, guint64 offset,
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

static gboolean fill_block(EmaPoolMem *l, guint b, guint where, guint64 k, guint64 uid,
                           GError **error) {
  guint64 bytes = l->gpus[b].block_bytes, done = 0;
  while (done < bytes) {
    guint64 run, va = place_va(l, b, where, k * bytes + done, &run);
    guint64 piece = MIN(run, bytes - done);
    if (!DEVICE(l)->fill(DATA(l), b, va, piece, uid, done / 2, error))
      return FALSE;
    done += piece;
  }
  return TRUE;
}

static gboolean copy_block(EmaPoolMem *l, guint b, guint from, guint64 k_from, guint to,
                           guint64 k_to, GError **error) {
  guint64 bytes = l->gpus[b].block_bytes, done = 0;
  while (done < bytes) {
    guint64 run_src, run_dst;
    guint64 src = place_va(l, b, from, k_from * bytes + done, &run_src);
    guint64 dst = place_va(l, b, to, k_to * bytes + done, &run_dst);
    guint64 piece = MIN(bytes - done, MIN(run_src, run_dst));
    if (!DEVICE(l)->copy(DATA(l), b, dst, src, piece, error))
      return FALSE;
    done += piece;
  }
  return TRUE;
}

static gboolean block_to_host(EmaPoolMem *l, guint b, guint from, guint64 k, GError **error) {
  guint64 bytes = l->gpus[b].block_bytes, done = 0;
  while (done < bytes) {
    guint64 run, va = place_va(l, b, from, k * bytes + done, &run);
    guint64 piece = MIN(run, bytes - done);
    if (!DEVICE(l)->to_host(DATA(l), b, va, piece, error))
      return FALSE;
    done += piece;
  }
  return TRUE;
}

/* The first and last CHECK_BYTES of block K of B at WHERE hold UID's pattern. */
static gboolean check_block(EmaPoolMem *l, guint b, guint where, guint64 k, guint64 uid,
                            GError **error) {
  guint64 bytes = l->gpus[b].block_bytes;
  guint64 offsets[2] = {0, bytes >= 2 * CHECK_BYTES ? bytes - CHECK_BYTES : 0};
  for (guint i = 0; i < (offsets[1] > 0 ? 2u : 1u); i++) {
    guint64 run, va = place_va(l, b, where, k * bytes + offsets[i], &run);
    guint64 piece = MIN(MIN(run, bytes), (guint64) CHECK_BYTES);
    if (!DEVICE(l)->check(DATA(l), b, va, piece, uid, offsets[i] / 2, error)) {
      g_prefix_error(error, "gpu%u: block %" G_GUINT64_FORMAT " moved to %s%u: ", b, k,
                     where == b ? "its own memory on gpu" : "gpu", where);
      return FALSE;
    }
  }
  l->core.stats.blocks_checked++;
  return TRUE;
}

static GArray *uids_at(EmaPoolMem *l, guint b, guint where) {
  return where == b ? l->gpus[b].home_uid : l->pair_uid[where * l->n + b];
}

/* ---- the pool backend ------------------------------------------------------------------ */

static gboolean mem_lend(gpointer data, guint lender, guint borrower, guint64 slices,
                         double *seconds, GError **error) {
  double t0 = wall();
  gboolean ok = lend_slices(data, lender, borrower, slices, error);
  *seconds = wall() - t0;
  return ok;
}

static gboolean mem_unlend(gpointer data, guint lender, guint borrower, guint64 slices,
                           double *seconds, GError **error) {
  EmaPoolMem *l = data;
  double t0 = wall();
  gboolean ok;
  retire_tail(l, lender, borrower, slices);
  ok = flush_retired(l, error);
  *seconds = wall() - t0;
  return ok;
}

static gboolean mem_own(gpointer data, guint gpu, guint64 slices, gint64 *changed, double *seconds,
                        GError **error) {
  EmaPoolMem *l = data;
  Gpu *g = &l->gpus[gpu];
  guint64 have = g->home->len;
  double t0 = wall();
  gboolean ok = slices > have ? home_grow(l, g, slices, error) : home_shrink(l, g, slices, error);
  *changed = (gint64) g->home->len - (gint64) have;
  *seconds = wall() - t0;
  return ok;
}

static gboolean mem_fill(gpointer data, guint gpu, guint where, guint64 n, GError **error) {
  EmaPoolMem *l = data;
  GArray *uids = uids_at(l, gpu, where);
  for (guint64 i = 0; i < n; i++) {
    guint64 uid = l->next_uid++, k = uids->len;
    g_array_append_val(uids, uid);
    if (l->config.write_blocks && !fill_block(l, gpu, where, k, uid, error))
      return FALSE;
  }
  return TRUE;
}

static void mem_forget(gpointer data, guint gpu, guint where, guint64 n) {
  GArray *uids = uids_at(data, gpu, where);
  g_assert(n <= uids->len);
  g_array_set_size(uids, uids->len - (guint) n);
}

/* The copies are waited for and the first and last moved block read back
 * before the blocks change place. */
static gboolean mem_move(gpointer data, guint gpu, guint from, guint to, guint64 n, double *seconds,
                         GError **error) {
  EmaPoolMem *l = data;
  GArray *from_uids = uids_at(l, gpu, from), *to_uids = uids_at(l, gpu, to);
  guint64 src_first = from_uids->len - n, dst_first = to_uids->len;
  double t0 = wall();
  gboolean ok = TRUE;
  for (guint64 i = 0; ok && i < n; i++)
    ok = copy_block(l, gpu, from, src_first + i, to, dst_first + i, error);
  ok = ok && DEVICE(l)->sync(DATA(l), gpu, error);
  *seconds = wall() - t0;
  if (ok && l->config.write_blocks) {
    guint64 last = n - 1;
    ok = check_block(l, gpu, to, dst_first, g_array_index(from_uids, guint64, src_first), error) &&
         (n == 1 || check_block(l, gpu, to, dst_first + last,
                                g_array_index(from_uids, guint64, src_first + last), error));
  }
  if (!ok)
    return FALSE;
  g_array_append_vals(to_uids, &g_array_index(from_uids, guint64, src_first), (guint) n);
  g_array_set_size(from_uids, (guint) src_first);
  return TRUE;
}

static gboolean mem_to_host(gpointer data, guint gpu, guint lender, guint64 n, double *seconds,
                            GError **error) {
  EmaPoolMem *l = data;
  guint64 first = uids_at(l, gpu, lender)->len - n;
  double t0 = wall();
  gboolean ok = TRUE;
  for (guint64 i = 0; ok && i < n; i++)
    ok = block_to_host(l, gpu, lender, first + i, error);
  ok = ok && DEVICE(l)->sync(DATA(l), gpu, error);
  *seconds = wall() - t0;
  return ok;
}

static gboolean mem_sync(gpointer data, guint gpu, GError **error) {
  EmaPoolMem *l = data;
  return DEVICE(l)->sync(DATA(l), gpu, error);
}

static double mem_clock(gpointer data) {
  return wall();
}

static const EmaPoolBackend mem_backend = {.lend = mem_lend,
                                           .unlend = mem_unlend,
                                           .own = mem_own,
                                           .fill = mem_fill,
                                           .forget = mem_forget,
                                           .move = mem_move,
                                           .to_host = mem_to_host,
                                           .sync = mem_sync,
                                           .clock = mem_clock};

/* The real resources match the ledger (the pool's owner check). */
static gboolean check_memory(const EmaPoolCore *core, gpointer data, GError **error) {
  const EmaPoolMem *l = data;
  guint64 handles = 0, mappings = 0;
  for (guint i = 0; i < l->n; i++) {
    const Gpu *g = &l->gpus[i];
    for (guint j = 0; j < l->n; j++) {
      const GArray *pair = l->pairs[j * l->n + i];
      guint64 lent = core->ledger.lent[j * l->n + i];
      if (pair->len != lent)
        return ema_slice_ledger_invalid(
            error, "gpu%u lends gpu%u %" G_GUINT64_FORMAT " slices, %u of them mapped", j, i, lent,
            pair->len);
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

/* ---- set-up, the round and the end ---------------------------------------------------------- */

EmaPoolMem *ema_pool_mem_new(const EmaPoolMemConfig *config, GError **error) {
  EmaPoolMem *l = g_new0(EmaPoolMem, 1);
  guint n = config->n_gpus;
  l->config = *config;
  if (l->config.grow_slices == 0)
    l->config.grow_slices = DEFAULT_GROW;
  l->n = n;
  l->gpus = g_new0(Gpu, n);
  l->pairs = g_new0(GArray *, (gsize) n * n);
  l->pair_uid = g_new0(GArray *, (gsize) n * n);
  for (guint i = 0; i < n * n; i++) {
    l->pairs[i] = g_array_new(FALSE, FALSE, sizeof(LentSlice));
    l->pair_uid[i] = g_array_new(FALSE, FALSE, sizeof(guint64));
  }
  l->retired = g_array_new(FALSE, FALSE, sizeof(Retired));
  l->next_uid = UID_BASE;
  for (guint i = 0; i < n; i++) {
    Gpu *g = &l->gpus[i];
    ema_slice_gpu_setup(&g->counters, i, n);
    g->home = g_array_new(FALSE, FALSE, sizeof(guint64));
    g->home_uid = g_array_new(FALSE, FALSE, sizeof(guint64));
    g->segments = g_array_new(FALSE, FALSE, sizeof(Segment));
    g->slot_used = g_array_new(FALSE, TRUE, sizeof(gboolean));
  }
  if (!ema_pool_core_init(&l->core, n, config->server, config->policy, &mem_backend, l, error)) {
    ema_pool_mem_free(l);
    return NULL;
  }
  for (guint i = 0; i < n; i++)
    l->core.ledger.gpus[i] = &l->gpus[i].counters;
  if (config->context_tokens > 0)
    l->core.context_tokens = config->context_tokens;
  l->core.owner_check = check_memory;
  l->core.owner_data = l;
  ema_pool_core_log(&l->core);
  return l;
}

void ema_pool_mem_add_tenant(EmaPoolMem *l, guint gpu, guint64 slices, guint64 block_bytes,
                             const EmaStepModel *step_model) {
  Gpu *g = &l->gpus[gpu];
  g->present = g->has_tenant = TRUE;
  g->shares = step_model == NULL || ema_step_model_tp(step_model) == 1;
  g->slices = slices;
  g->block_bytes = block_bytes;
  ema_pool_core_set_model(&l->core, gpu, step_model);
}

void ema_pool_mem_add_idle_gpu(EmaPoolMem *l, guint gpu, guint64 slices) {
  Gpu *g = &l->gpus[gpu];
  g->present = g->shares = TRUE;
  g->slices = slices;
}

gboolean ema_pool_mem_start(EmaPoolMem *l, EmaTime now, GError **error) {
  l->core.now = now;
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
  return ema_pool_core_start(&l->core, error);
}

gboolean ema_pool_mem_tick(EmaPoolMem *l, EmaTime now, const guint64 *targets, GError **error) {
  l->core.now = now;
  return ema_pool_core_tick(&l->core, targets, error);
}

void ema_pool_mem_set_last_step(EmaPoolMem *l, guint gpu, EmaTime duration) {
  l->gpus[gpu].last_step = duration;
  ema_slice_gpu_touch(&l->gpus[gpu].counters);
}

/* Free G's borrowed segments (all slots must be unmapped) and its home range. */
static gboolean unreserve_all(EmaPoolMem *l, Gpu *g, GError **error) {
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

gboolean ema_pool_mem_drain(EmaPoolMem *l, GError **error) {
  gboolean ok = TRUE;
  for (guint i = 0; i < l->n; i++) {
    Gpu *g = &l->gpus[i];
    if (!g->has_tenant)
      continue;
    g->staging = 0;
    ema_slice_gpu_refresh(&g->counters);
    ok = ema_pool_core_give(&l->core, &g->counters, EMA_KV_UNNAMED, g->local_used + g->remote_total,
                            l->n, error) &&
         ok;
    ok = ema_pool_core_sync_own(&l->core, &g->counters, error) && ok;
  }
  for (guint j = 0; j < l->n; j++)
    for (guint b = 0; b < l->n; b++)
      if (l->core.ledger.lent[j * l->n + b] > 0)
        ok = ema_pool_core_return(&l->core, b, j, l->core.ledger.lent[j * l->n + b], error) && ok;
  ok = flush_retired(l, error) && ok;
  for (guint i = 0; i < l->n; i++)
    ok = unreserve_all(l, &l->gpus[i], error) && ok;
  return ok;
}

gboolean ema_pool_mem_teardown(EmaPoolMem *l, GError **error) {
  gboolean ok = TRUE;
  for (guint j = 0; j < l->n; j++) {
    for (guint b = 0; b < l->n; b++) {
      guint64 lent = l->core.ledger.lent[j * l->n + b];
      if (lent > 0)
        ema_slice_ledger_change_lent(&l->core.ledger, j, b, -(gint64) lent);
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
    ema_slice_gpu_refresh(&g->counters);
  }
  ok = flush_retired(l, error);
  for (guint i = 0; i < l->n; i++)
    ok = unreserve_all(l, &l->gpus[i], error) && ok;
  return ok;
}

void ema_pool_mem_free(EmaPoolMem *l) {
  GError *error = NULL;
  if (l == NULL)
    return;
  if (l->core.ledger.gpus && !ema_pool_mem_teardown(l, &error)) {
    g_debug("releasing the pool's memory: %s", error ? error->message : "failed");
    g_clear_error(&error);
  }
  for (guint i = 0; i < l->n; i++) {
    Gpu *g = &l->gpus[i];
    ema_slice_gpu_clear(&g->counters);
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
  g_free(l->gpus);
  ema_pool_core_clear(&l->core);
  g_free(l);
}

/* ---- checks and figures -------------------------------------------------------------------- */

gboolean ema_pool_mem_check(const EmaPoolMem *l, GError **error) {
  return ema_pool_core_check(&l->core, error);
}

EmaPoolCore *ema_pool_mem_core(EmaPoolMem *l) {
  return &l->core;
}

const EmaPoolCoreStats *ema_pool_mem_stats(const EmaPoolMem *l) {
  return &l->core.stats;
}

EmaPoolMemLive ema_pool_mem_live(const EmaPoolMem *l) {
  return l->live;
}

const GArray *ema_pool_mem_events(const EmaPoolMem *l) {
  return l->core.events;
}

const EmaPoolView *ema_pool_mem_view(EmaPoolMem *l) {
  return ema_pool_core_view(&l->core);
}

guint64 ema_pool_mem_slices_lent(const EmaPoolMem *l, guint gpu) {
  return l->gpus[gpu].lent_total;
}

guint64 ema_pool_mem_slices_borrowed(const EmaPoolMem *l, guint gpu) {
  return l->gpus[gpu].borrowed_total;
}

guint64 ema_pool_mem_blocks_used(const EmaPoolMem *l, guint gpu) {
  return l->gpus[gpu].local_used + l->gpus[gpu].remote_total;
}

guint64 ema_pool_mem_blocks_remote(const EmaPoolMem *l, guint gpu) {
  return l->gpus[gpu].remote_total;
}

guint64 ema_pool_mem_blocks_short(const EmaPoolMem *l, guint gpu) {
  return l->core.lacking[gpu];
}

guint64 ema_pool_mem_own_mapped(const EmaPoolMem *l, guint gpu) {
  return l->gpus[gpu].home->len;
}

guint64 ema_pool_mem_staging(const EmaPoolMem *l, guint gpu) {
  return l->gpus[gpu].staging;
}

guint ema_pool_mem_segments(const EmaPoolMem *l, guint gpu, guint64 *slots) {
  const Gpu *g = &l->gpus[gpu];
  if (slots)
    *slots = g->slot_used->len;
  return g->segments->len;
}

guint64 ema_pool_mem_fill_seed(guint64 seed, guint64 index) {
  /* fill.h hashes seed x PHI + index: move the seed by index / PHI (PHI is
   * odd, so it has an inverse modulo 2^64; Newton's iteration doubles the
   * correct bits each step) */
  const guint64 phi = G_GUINT64_CONSTANT(0x9e3779b97f4a7c15);
  guint64 inverse = phi;
  for (guint i = 0; i < 6; i++)
    inverse *= 2 - phi * inverse;
  return seed + index * inverse;
}

gboolean ema_pool_mem_policy_parse(const char *text, EmaPolicySpec *spec, GError **error) {
  g_autoptr(EmaNode) tree = NULL;
  memset(spec, 0, sizeof *spec);
  /* an empty text (or blanks only) parses as an empty map, every policy its default: it names
   * no policy, as '~' names none */
  if (text[strspn(text, " \t")] == '\0') {
    g_set_error(error, EMA_CONFIG_ERROR, EMA_CONFIG_ERROR_TYPE,
                "--policy: a composition's name or a map of policies");
    return FALSE;
  }
  tree = ema_node_load_string(text, "--policy", NULL, error);
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
