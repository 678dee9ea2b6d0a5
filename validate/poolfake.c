/* poolfake.c: CUDA virtual memory emulated on the CPU for the pool ledger
 * (poolfake.h). Handles are numbered from 1; each device's addresses come
 * from its own window, handed out upwards in whole slices; a mapping is one
 * slice; the data of a handle is a list of runs, each a byte range holding
 * consecutive elements of one fill.h stream. */
#include "poolfake.h"

#include <stdarg.h>
#include <string.h>

#include "errors.h"

#define SLICE EMA_SLICE_BYTES
#define VA_BASE G_GUINT64_CONSTANT(0x100000000000)
#define VA_WINDOW G_GUINT64_CONSTANT(0x10000000000) /* 1 TiB of addresses per device */

typedef struct {
  guint64 off, len; /* bytes of the handle */
  guint64 seed, index;
} Run;

typedef struct {
  guint device;
  gboolean live;
  guint mapped;
  GArray *runs; /* Run */
} Handle;

typedef struct {
  guint device;
  guint64 va, bytes;
  gboolean live;
} Range;

typedef struct {
  guint device;
  guint64 handle;
  gboolean access;
} Mapping;

struct _EmaFakeBackend {
  guint n;
  guint64 capacity;
  guint64 *used;
  GPtrArray *handles;   /* Handle *, id - 1 */
  GArray *ranges;       /* Range */
  GHashTable *mappings; /* slice address (guint64 *) -> Mapping * */
  guint64 *next_va;
  guint64 calls[EMA_FAKE_N_OPS];
  int fail_op;
  guint64 fail_countdown;
  gboolean ignore_hints, record;
  GString *log;
  guint64 host_bytes;
  guint64 reservations;
};

static const char *const op_names[EMA_FAKE_N_OPS] = {"create", "release", "reserve",    "unreserve",
                                                     "map",    "unmap",   "set_access", "fill",
                                                     "copy",   "to_host", "sync",       "check"};

static gboolean fail(GError **error, int code, const char *format, ...) G_GNUC_PRINTF(3, 4);

static gboolean fail(GError **error, int code, const char *format, ...) {
  va_list args;
  if (error == NULL || *error != NULL)
    return FALSE;
  va_start(args, format);
  *error = g_error_new_valist(EMA_VALIDATE_ERROR, code, format, args);
  va_end(args);
  return FALSE;
}

static void note(EmaFakeBackend *f, const char *format, ...) G_GNUC_PRINTF(2, 3);

static void note(EmaFakeBackend *f, const char *format, ...) {
  va_list args;
  if (!f->record)
    return;
  va_start(args, format);
  g_string_append_vprintf(f->log, format, args);
  va_end(args);
  g_string_append_c(f->log, '\n');
}

/* Count the call; FALSE if it is the one that must fail. */
static gboolean enter(EmaFakeBackend *f, EmaFakeOp op, GError **error) {
  f->calls[op]++;
  if (f->fail_op == (int) op && f->fail_countdown > 0 && --f->fail_countdown == 0) {
    f->fail_op = -1;
    note(f, "%s: injected failure", op_names[op]);
    return fail(error, EMA_VALIDATE_ERROR_CUDA, "fake %s: injected failure", op_names[op]);
  }
  return TRUE;
}

static void handle_free(gpointer data) {
  Handle *h = data;
  g_array_unref(h->runs);
  g_free(h);
}

/* The mappings' hash: their slice's address mixed whole. g_int64_hash before GLib 2.76 keeps the
 * low 32 bits, of which 2 MiB-aligned addresses have 2,048 values: a 1 TiB region's 500k slices
 * made chains of hundreds, and a dry run of minutes. */
static guint address_hash(gconstpointer key) {
  guint64 v = *(const guint64 *) key;
  v ^= v >> 33;
  v *= G_GUINT64_CONSTANT(0xff51afd7ed558ccd);
  v ^= v >> 33;
  return (guint) v;
}

EmaFakeBackend *ema_fake_backend_new(guint n_devices, guint64 capacity) {
  EmaFakeBackend *f = g_new0(EmaFakeBackend, 1);
  f->n = n_devices;
  f->capacity = capacity;
  f->used = g_new0(guint64, n_devices);
  f->handles = g_ptr_array_new_with_free_func(handle_free);
  f->ranges = g_array_new(FALSE, FALSE, sizeof(Range));
  f->mappings = g_hash_table_new_full(address_hash, g_int64_equal, g_free, g_free);
  f->next_va = g_new0(guint64, n_devices);
  for (guint d = 0; d < n_devices; d++)
    f->next_va[d] = VA_BASE + d * VA_WINDOW;
  f->fail_op = -1;
  f->log = g_string_new(NULL);
  return f;
}

void ema_fake_backend_free(EmaFakeBackend *f) {
  if (f == NULL)
    return;
  g_free(f->used);
  g_ptr_array_unref(f->handles);
  g_array_unref(f->ranges);
  g_hash_table_unref(f->mappings);
  g_free(f->next_va);
  g_string_free(f->log, TRUE);
  g_free(f);
}

void ema_fake_backend_fail(EmaFakeBackend *f, EmaFakeOp op, guint64 nth) {
  f->fail_op = nth > 0 ? (int) op : -1;
  f->fail_countdown = nth;
}

void ema_fake_backend_ignore_hints(EmaFakeBackend *f, gboolean ignore) {
  f->ignore_hints = ignore;
}

void ema_fake_backend_record(EmaFakeBackend *f, gboolean record) {
  f->record = record;
}

const char *ema_fake_backend_log(const EmaFakeBackend *f) {
  return f->log->str;
}

void ema_fake_backend_clear_log(EmaFakeBackend *f) {
  g_string_truncate(f->log, 0);
}

guint64 ema_fake_backend_calls(const EmaFakeBackend *f, EmaFakeOp op) {
  return f->calls[op];
}

EmaPoolMemLive ema_fake_backend_live(const EmaFakeBackend *f) {
  EmaPoolMemLive live = {0, g_hash_table_size(f->mappings), f->reservations};
  for (guint i = 0; i < f->handles->len; i++)
    live.handles += ((const Handle *) f->handles->pdata[i])->live;
  return live;
}

guint64 ema_fake_backend_free_bytes(const EmaFakeBackend *f, guint device) {
  return (f->capacity ? f->capacity : G_MAXUINT64) - f->used[device];
}

guint64 ema_fake_backend_host_bytes(const EmaFakeBackend *f) {
  return f->host_bytes;
}

/* ---- the data of a handle ---------------------------------------------------- */

/* Forget what [OFF, OFF + LEN) of H held. */
static void runs_clear(Handle *h, guint64 off, guint64 len) {
  guint64 end = off + len;
  for (guint i = 0; i < h->runs->len;) {
    Run *r = &g_array_index(h->runs, Run, i);
    guint64 r_end = r->off + r->len;
    if (r_end <= off || r->off >= end) {
      i++;
      continue;
    }
    if (r->off < off && r_end > end) { /* split around the hole */
      Run tail = {end, r_end - end, r->seed, r->index + (end - r->off) / 2};
      r->len = off - r->off;
      g_array_append_val(h->runs, tail);
      i++;
    } else if (r->off < off) {
      r->len = off - r->off;
      i++;
    } else if (r_end > end) {
      r->index += (end - r->off) / 2;
      r->len = r_end - end;
      r->off = end;
      i++;
    } else {
      g_array_remove_index_fast(h->runs, i);
    }
  }
}

static void runs_write(Handle *h, guint64 off, guint64 len, guint64 seed, guint64 index) {
  Run run = {off, len, seed, index};
  runs_clear(h, off, len);
  g_array_append_val(h->runs, run);
}

/* Append to OUT the runs of H over [OFF, OFF + LEN), with offsets made
 * relative to the read's start (AT is where this piece starts in it). */
static void runs_read(const Handle *h, guint64 off, guint64 len, guint64 at, GArray *out) {
  guint64 end = off + len;
  for (guint i = 0; i < h->runs->len; i++) {
    const Run *r = &g_array_index(h->runs, Run, i);
    guint64 from = MAX(r->off, off), to = MIN(r->off + r->len, end);
    if (from < to) {
      Run piece = {at + (from - off), to - from, r->seed, r->index + (from - r->off) / 2};
      g_array_append_val(out, piece);
    }
  }
}

/* ---- addresses ---------------------------------------------------------------- */

static Handle *handle_get(EmaFakeBackend *f, guint64 id) {
  return id >= 1 && id <= f->handles->len ? f->handles->pdata[id - 1] : NULL;
}

static Mapping *mapping_at(EmaFakeBackend *f, guint64 slice_va) {
  return g_hash_table_lookup(f->mappings, &slice_va);
}

static Range *range_of(EmaFakeBackend *f, guint device, guint64 va) {
  for (guint i = 0; i < f->ranges->len; i++) {
    Range *r = &g_array_index(f->ranges, Range, i);
    if (r->live && r->device == device && va >= r->va && va < r->va + r->bytes)
      return r;
  }
  return NULL;
}

/* The handle and offset behind each slice-piece of [VA, VA + BYTES), which
 * DEVICE must be allowed to reach; calls PIECE for each. */
typedef void (*PieceFunc)(EmaFakeBackend *f, Handle *h, guint64 off, guint64 len, guint64 at,
                          gpointer data);

static gboolean walk(EmaFakeBackend *f, guint device, guint64 va, guint64 bytes, PieceFunc piece,
                     gpointer data, GError **error) {
  guint64 done = 0;
  if (bytes == 0)
    return fail(error, EMA_VALIDATE_ERROR_CUDA, "fake: an empty range at 0x%" G_GINT64_MODIFIER "x",
                va);
  while (done < bytes) {
    guint64 at = va + done, base = at - at % SLICE, len = MIN(bytes - done, base + SLICE - at);
    Mapping *m = mapping_at(f, base);
    if (m == NULL || m->device != device || !m->access)
      return fail(error, EMA_VALIDATE_ERROR_CUDA,
                  "fake: gpu%u cannot reach 0x%" G_GINT64_MODIFIER "x (%s)", device, at,
                  m == NULL             ? "not mapped"
                  : m->device != device ? "another GPU's range"
                                        : "no access");
    if (piece)
      piece(f, handle_get(f, m->handle), at - base, len, done, data);
    done += len;
  }
  return TRUE;
}

/* ---- the operations ------------------------------------------------------------- */

static gboolean fake_create(gpointer data, guint device, guint64 *handle, GError **error) {
  EmaFakeBackend *f = data;
  Handle *h;
  if (!enter(f, EMA_FAKE_CREATE, error))
    return FALSE;
  if (device >= f->n)
    return fail(error, EMA_VALIDATE_ERROR_CUDA, "fake create: no gpu%u", device);
  if (f->capacity && f->used[device] + SLICE > f->capacity)
    return fail(error, EMA_VALIDATE_ERROR_CUDA,
                "GPU %u: fake cuMemCreate: out of memory (CUDA_ERROR_OUT_OF_MEMORY)", device);
  h = g_new0(Handle, 1);
  h->device = device;
  h->live = TRUE;
  h->runs = g_array_new(FALSE, FALSE, sizeof(Run));
  g_ptr_array_add(f->handles, h);
  f->used[device] += SLICE;
  *handle = f->handles->len;
  note(f, "create gpu%u -> h%" G_GUINT64_FORMAT, device, *handle);
  return TRUE;
}

static gboolean fake_release(gpointer data, guint device, guint64 handle, GError **error) {
  EmaFakeBackend *f = data;
  Handle *h = handle_get(f, handle);
  if (!enter(f, EMA_FAKE_RELEASE, error))
    return FALSE;
  if (h == NULL || !h->live || h->device != device)
    return fail(error, EMA_VALIDATE_ERROR_CUDA,
                "fake release: h%" G_GUINT64_FORMAT " is not a live handle of gpu%u", handle,
                device);
  if (h->mapped > 0)
    return fail(error, EMA_VALIDATE_ERROR_CUDA,
                "fake release: h%" G_GUINT64_FORMAT " is still mapped", handle);
  h->live = FALSE;
  g_array_set_size(h->runs, 0);
  f->used[device] -= SLICE;
  note(f, "release gpu%u h%" G_GUINT64_FORMAT, device, handle);
  return TRUE;
}

static gboolean fake_reserve(gpointer data, guint device, guint64 bytes, guint64 hint, guint64 *va,
                             GError **error) {
  EmaFakeBackend *f = data;
  Range range;
  if (!enter(f, EMA_FAKE_RESERVE, error))
    return FALSE;
  if (device >= f->n || bytes == 0 || bytes % SLICE != 0)
    return fail(error, EMA_VALIDATE_ERROR_CUDA, "fake reserve: gpu%u, %" G_GUINT64_FORMAT " bytes",
                device, bytes);
  if (hint != 0 && hint == f->next_va[device] && !f->ignore_hints)
    *va = hint;
  else
    *va = f->next_va[device] + (f->ignore_hints ? SLICE : 0);
  f->next_va[device] = *va + bytes;
  range = (Range){device, *va, bytes, TRUE};
  g_array_append_val(f->ranges, range);
  f->reservations++;
  note(f, "reserve gpu%u %" G_GUINT64_FORMAT " slices at 0x%" G_GINT64_MODIFIER "x%s", device,
       bytes / SLICE, *va, hint && *va == hint ? " (as hinted)" : "");
  return TRUE;
}

static gboolean fake_unreserve(gpointer data, guint device, guint64 va, guint64 bytes,
                               GError **error) {
  EmaFakeBackend *f = data;
  Range *r = range_of(f, device, va);
  if (!enter(f, EMA_FAKE_UNRESERVE, error))
    return FALSE;
  if (r == NULL || r->va != va || r->bytes != bytes)
    return fail(error, EMA_VALIDATE_ERROR_CUDA,
                "fake unreserve: no reservation of gpu%u at 0x%" G_GINT64_MODIFIER "x", device, va);
  for (guint64 s = va; s < va + bytes; s += SLICE)
    if (mapping_at(f, s))
      return fail(error, EMA_VALIDATE_ERROR_CUDA,
                  "fake unreserve: 0x%" G_GINT64_MODIFIER "x is still mapped", s);
  r->live = FALSE;
  f->reservations--;
  note(f, "unreserve gpu%u 0x%" G_GINT64_MODIFIER "x", device, va);
  return TRUE;
}

static gboolean fake_map(gpointer data, guint device, guint64 va, guint64 handle, GError **error) {
  EmaFakeBackend *f = data;
  Handle *h = handle_get(f, handle);
  Mapping *m;
  guint64 *key;
  if (!enter(f, EMA_FAKE_MAP, error))
    return FALSE;
  if (va % SLICE != 0 || range_of(f, device, va) == NULL)
    return fail(error, EMA_VALIDATE_ERROR_CUDA,
                "fake map: 0x%" G_GINT64_MODIFIER "x is not in a reservation of gpu%u", va, device);
  if (mapping_at(f, va))
    return fail(error, EMA_VALIDATE_ERROR_CUDA,
                "fake map: 0x%" G_GINT64_MODIFIER "x is already mapped", va);
  if (h == NULL || !h->live)
    return fail(error, EMA_VALIDATE_ERROR_CUDA,
                "fake map: h%" G_GUINT64_FORMAT " is not a live handle", handle);
  m = g_new0(Mapping, 1);
  m->device = device;
  m->handle = handle;
  key = g_new(guint64, 1);
  *key = va;
  g_hash_table_insert(f->mappings, key, m);
  h->mapped++;
  note(f, "map gpu%u 0x%" G_GINT64_MODIFIER "x h%" G_GUINT64_FORMAT, device, va, handle);
  return TRUE;
}

static gboolean fake_unmap(gpointer data, guint device, guint64 va, GError **error) {
  EmaFakeBackend *f = data;
  Mapping *m = mapping_at(f, va);
  if (!enter(f, EMA_FAKE_UNMAP, error))
    return FALSE;
  if (m == NULL || m->device != device)
    return fail(error, EMA_VALIDATE_ERROR_CUDA,
                "fake unmap: 0x%" G_GINT64_MODIFIER "x is not mapped for gpu%u", va, device);
  handle_get(f, m->handle)->mapped--;
  note(f, "unmap gpu%u 0x%" G_GINT64_MODIFIER "x h%" G_GUINT64_FORMAT, device, va, m->handle);
  g_hash_table_remove(f->mappings, &va);
  return TRUE;
}

static gboolean fake_set_access(gpointer data, guint device, guint64 va, guint64 bytes,
                                GError **error) {
  EmaFakeBackend *f = data;
  if (!enter(f, EMA_FAKE_SET_ACCESS, error))
    return FALSE;
  if (va % SLICE != 0 || bytes == 0 || bytes % SLICE != 0)
    return fail(error, EMA_VALIDATE_ERROR_CUDA, "fake set_access: unaligned range");
  for (guint64 s = va; s < va + bytes; s += SLICE) {
    Mapping *m = mapping_at(f, s);
    if (m == NULL || m->device != device)
      return fail(error, EMA_VALIDATE_ERROR_CUDA,
                  "fake set_access: 0x%" G_GINT64_MODIFIER "x is not mapped for gpu%u", s, device);
  }
  for (guint64 s = va; s < va + bytes; s += SLICE)
    mapping_at(f, s)->access = TRUE;
  note(f, "set_access gpu%u 0x%" G_GINT64_MODIFIER "x %" G_GUINT64_FORMAT " slices", device, va,
       bytes / SLICE);
  return TRUE;
}

typedef struct {
  guint64 seed, index;
} FillData;

static void fill_piece(EmaFakeBackend *f, Handle *h, guint64 off, guint64 len, guint64 at,
                       gpointer data) {
  const FillData *d = data;
  runs_write(h, off, len, d->seed, d->index + at / 2);
}

static gboolean fake_fill(gpointer data, guint device, guint64 va, guint64 bytes, guint64 seed,
                          guint64 index, GError **error) {
  EmaFakeBackend *f = data;
  FillData d = {seed, index};
  if (!enter(f, EMA_FAKE_FILL, error) || !walk(f, device, va, bytes, NULL, NULL, error))
    return FALSE;
  return walk(f, device, va, bytes, fill_piece, &d, error);
}

static void read_piece(EmaFakeBackend *f, Handle *h, guint64 off, guint64 len, guint64 at,
                       gpointer data) {
  runs_read(h, off, len, at, data);
}

static void write_piece(EmaFakeBackend *f, Handle *h, guint64 off, guint64 len, guint64 at,
                        gpointer data) {
  const GArray *runs = data;
  runs_clear(h, off, len);
  for (guint i = 0; i < runs->len; i++) {
    const Run *r = &g_array_index(runs, Run, i);
    guint64 from = MAX(r->off, at), to = MIN(r->off + r->len, at + len);
    if (from < to)
      runs_write(h, off + (from - at), to - from, r->seed, r->index + (from - r->off) / 2);
  }
}

static gboolean fake_copy(gpointer data, guint device, guint64 dst, guint64 src, guint64 bytes,
                          GError **error) {
  EmaFakeBackend *f = data;
  g_autoptr(GArray) runs = g_array_new(FALSE, FALSE, sizeof(Run));
  if (!enter(f, EMA_FAKE_COPY, error) || !walk(f, device, dst, bytes, NULL, NULL, error) ||
      !walk(f, device, src, bytes, read_piece, runs, error))
    return FALSE;
  note(f,
       "copy gpu%u 0x%" G_GINT64_MODIFIER "x <- 0x%" G_GINT64_MODIFIER "x %" G_GUINT64_FORMAT
       " bytes",
       device, dst, src, bytes);
  return walk(f, device, dst, bytes, write_piece, runs, error);
}

static gboolean fake_to_host(gpointer data, guint device, guint64 src, guint64 bytes,
                             GError **error) {
  EmaFakeBackend *f = data;
  if (!enter(f, EMA_FAKE_TO_HOST, error) || !walk(f, device, src, bytes, NULL, NULL, error))
    return FALSE;
  f->host_bytes += bytes;
  note(f, "to_host gpu%u 0x%" G_GINT64_MODIFIER "x %" G_GUINT64_FORMAT " bytes", device, src,
       bytes);
  return TRUE;
}

static gboolean fake_sync(gpointer data, guint device, GError **error) {
  return enter(data, EMA_FAKE_SYNC, error);
}

static gboolean fake_check(gpointer data, guint device, guint64 va, guint64 bytes, guint64 seed,
                           guint64 index, GError **error) {
  EmaFakeBackend *f = data;
  g_autoptr(GArray) runs = g_array_new(FALSE, FALSE, sizeof(Run));
  guint64 covered = 0;
  if (!enter(f, EMA_FAKE_CHECK, error) || !walk(f, device, va, bytes, read_piece, runs, error))
    return FALSE;
  for (guint i = 0; i < runs->len; i++) {
    const Run *r = &g_array_index(runs, Run, i);
    if (r->seed != seed || r->index != index + r->off / 2)
      return fail(error, EMA_VALIDATE_ERROR_VERIFY,
                  "read back 0x%" G_GINT64_MODIFIER "x: stream %" G_GUINT64_FORMAT
                  " element %" G_GUINT64_FORMAT ", expected stream %" G_GUINT64_FORMAT
                  " element %" G_GUINT64_FORMAT,
                  va + r->off, r->seed, r->index, seed, index + r->off / 2);
    covered += r->len;
  }
  if (covered != bytes)
    return fail(error, EMA_VALIDATE_ERROR_VERIFY,
                "read back 0x%" G_GINT64_MODIFIER "x: %" G_GUINT64_FORMAT " of %" G_GUINT64_FORMAT
                " bytes were never written",
                va, bytes - covered, bytes);
  return TRUE;
}

static const EmaPoolDevice fake_ops = {
    fake_create,     fake_release, fake_reserve, fake_unreserve, fake_map,  fake_unmap,
    fake_set_access, fake_fill,    fake_copy,    fake_to_host,   fake_sync, fake_check,
};

const EmaPoolDevice *ema_fake_backend_ops(void) {
  return &fake_ops;
}
