/* trace.c: a captured CUDA trace read back, paired, attributed, aggregated and written (trace.h).
 *
 * Invariants: a file's header row must be exactly the one libemacapture.so writes (a capture of
 * another version is refused rather than misread); numbers are unsigned decimals (the result of a
 * VMM call may be negative); every text error says FILE:LINE:COL. Medians are of the sorted
 * values (the mean of the two middle ones for an even count), as stats.c. */
#include "trace.h"

#include <errno.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "errors.h"
#include "ema/run/output.h"
#include "ema/core/csv.h"
#include "ema/core/file.h"

/* one CSV file being read, by the one CSV reader (ema/core/csv.h) */
typedef struct {
  EmaCsv csv;
} CsvReader;

static gboolean csv_error(const CsvReader *r, guint field, const char *what, GError **error) {
  g_set_error(error, EMA_VALIDATE_ERROR, EMA_VALIDATE_ERROR_DATA, "%s:%u:%u: %s", r->csv.file,
              r->csv.line, ema_csv_field_column(&r->csv, field), what);
  return FALSE;
}

/* The largest capture file read back: the files grow with the program (the operator profile of
 * the five models writes ~0.5 GB of kernels.csv, its demangled names long), so not core/file.h's
 * limit for configuration text. */
#define TRACE_MAX_BYTES ((gsize) 4 << 30)

/* opens PATH and checks its header; *absent = TRUE (and TRUE returned) when it does not exist
 * and OPTIONAL */
static gboolean csv_open(CsvReader *r, const char *path, const char *header, gboolean optional,
                         gboolean *absent, GError **error) {
  GError *local = NULL;
  memset(r, 0, sizeof *r);
  *absent = optional && !g_file_test(path, G_FILE_TEST_EXISTS);
  if (*absent)
    return TRUE;
  if (!ema_csv_open_max(&r->csv, path, TRACE_MAX_BYTES, &local))
    return ema_validate_error_from_csv(local, error);
  g_autofree char *got = g_strjoinv(",", r->csv.header);
  if (strcmp(got, header) != 0) {
    g_set_error(error, EMA_VALIDATE_ERROR, EMA_VALIDATE_ERROR_DATA,
                "%s:1:1: the header is not '%s' (a capture of another version?)", path, header);
    return FALSE;
  }
  return TRUE;
}

static void csv_close(CsvReader *r) {
  ema_csv_clear(&r->csv);
}

/* the next non-empty row (as many fields as the header); FALSE at the end (or on error, set) */
static gboolean csv_next(CsvReader *r, GError **error) {
  GError *local = NULL;
  if (ema_csv_next(&r->csv, &local))
    return TRUE;
  return local ? ema_validate_error_from_csv(local, error) : FALSE;
}

static gboolean csv_u64(const CsvReader *r, guint field, guint64 *out, GError **error) {
  const char *s = r->csv.fields[field];
  char *end = NULL;
  errno = 0;
  if (*s < '0' || *s > '9')
    return csv_error(r, field, "not an unsigned integer", error);
  guint64 v = g_ascii_strtoull(s, &end, 10);
  if (errno || *end)
    return csv_error(r, field, "not an unsigned integer", error);
  *out = v;
  return TRUE;
}

static gboolean csv_uint(const CsvReader *r, guint field, guint *out, GError **error) {
  guint64 v = 0;
  if (!csv_u64(r, field, &v, error))
    return FALSE;
  if (v > G_MAXUINT)
    return csv_error(r, field, "out of range", error);
  *out = (guint) v;
  return TRUE;
}

static gboolean csv_span(const CsvReader *r, guint64 *start, guint64 *end, GError **error) {
  if (!csv_u64(r, 0, start, error) || !csv_u64(r, 1, end, error))
    return FALSE;
  if (*end < *start)
    return csv_error(r, 1, "ends before it starts", error);
  return TRUE;
}

static char *csv_text(const CsvReader *r, guint field) {
  return g_strdup(r->csv.fields[field]);
}

#define KERNEL_HEADER                                                                              \
  "start_ns,end_ns,device,context,stream,correlation,grid_x,grid_y,grid_z,block_x,block_y,"        \
  "block_z,registers,shared_bytes,graph,name"

static gboolean load_kernels(EmaTrace *t, const char *dir, GError **error) {
  g_autofree char *path = g_build_filename(dir, "kernels.csv", NULL);
  CsvReader r;
  gboolean absent, ok = csv_open(&r, path, KERNEL_HEADER, FALSE, &absent, error);
  while (ok && csv_next(&r, error)) {
    EmaTraceKernel k = {0};
    guint ignored = 0;
    ok = csv_span(&r, &k.start_ns, &k.end_ns, error) && csv_uint(&r, 2, &k.device, error) &&
         csv_uint(&r, 3, &ignored, error) && csv_uint(&r, 4, &k.stream, error) &&
         csv_uint(&r, 5, &ignored, error);
    for (guint i = 0; ok && i < 3; i++)
      ok = csv_uint(&r, 6 + i, &k.grid[i], error) && csv_uint(&r, 9 + i, &k.block[i], error);
    ok = ok && csv_uint(&r, 12, &k.registers, error) && csv_uint(&r, 13, &k.shared_bytes, error) &&
         csv_uint(&r, 14, &ignored, error);
    if (ok) {
      k.name = csv_text(&r, 15);
      g_array_append_val(t->kernels, k);
    }
  }
  ok = ok && !(error && *error);
  csv_close(&r);
  return ok;
}

static gboolean load_copies(EmaTrace *t, const char *dir, GError **error) {
  g_autofree char *mpath = g_build_filename(dir, "memcpy.csv", NULL);
  CsvReader r;
  gboolean absent, ok = csv_open(&r, mpath,
                                 "start_ns,end_ns,device,stream,kind,bytes,src_device,"
                                 "dst_device",
                                 TRUE, &absent, error);
  while (ok && !absent && csv_next(&r, error)) {
    EmaTraceCopy c = {0};
    guint src = 0, dst = 0;
    ok = csv_span(&r, &c.start_ns, &c.end_ns, error) && csv_uint(&r, 2, &c.device, error) &&
         csv_uint(&r, 3, &c.stream, error) && csv_u64(&r, 5, &c.bytes, error) &&
         csv_uint(&r, 6, &src, error) && csv_uint(&r, 7, &dst, error);
    if (ok) {
      c.kind = csv_text(&r, 4);
      c.src_device = (int) src;
      c.dst_device = (int) dst;
      g_array_append_val(t->copies, c);
    }
  }
  ok = ok && !(error && *error);
  csv_close(&r);
  if (!ok)
    return FALSE;
  g_autofree char *spath = g_build_filename(dir, "memset.csv", NULL);
  ok = csv_open(&r, spath, "start_ns,end_ns,device,stream,bytes,value", TRUE, &absent, error);
  while (ok && !absent && csv_next(&r, error)) {
    EmaTraceCopy c = {.src_device = -1, .dst_device = -1};
    guint value = 0;
    ok = csv_span(&r, &c.start_ns, &c.end_ns, error) && csv_uint(&r, 2, &c.device, error) &&
         csv_uint(&r, 3, &c.stream, error) && csv_u64(&r, 4, &c.bytes, error) &&
         csv_uint(&r, 5, &value, error);
    if (ok) {
      c.kind = g_strdup("memset");
      g_array_append_val(t->copies, c);
    }
  }
  ok = ok && !(error && *error);
  csv_close(&r);
  return ok;
}

static gboolean load_memory(EmaTrace *t, const char *dir, GError **error) {
  g_autofree char *path = g_build_filename(dir, "memory.csv", NULL);
  CsvReader r;
  gboolean absent,
      ok = csv_open(&r, path, "timestamp_ns,device,stream,operation,memory_kind,address,bytes",
                    TRUE, &absent, error);
  while (ok && !absent && csv_next(&r, error)) {
    EmaTraceMemory m = {0};
    guint stream = 0;
    const char *op = r.csv.fields[3];
    ok = csv_u64(&r, 0, &m.timestamp_ns, error) && csv_uint(&r, 1, &m.device, error) &&
         csv_uint(&r, 2, &stream, error) && csv_u64(&r, 5, &m.address, error) &&
         csv_u64(&r, 6, &m.bytes, error);
    if (ok && strcmp(op, "alloc") != 0 && strcmp(op, "release") != 0)
      ok = csv_error(&r, 3, "operation is neither alloc nor release", error);
    if (ok) {
      m.alloc = strcmp(op, "alloc") == 0;
      m.memory_kind = csv_text(&r, 4);
      g_array_append_val(t->memory, m);
    }
  }
  ok = ok && !(error && *error);
  csv_close(&r);
  return ok;
}

static gboolean load_vmm(EmaTrace *t, const char *dir, GError **error) {
  g_autofree char *path = g_build_filename(dir, "vmm.csv", NULL);
  CsvReader r;
  gboolean absent,
      ok = csv_open(&r, path, "start_ns,end_ns,call,bytes,result", TRUE, &absent, error);
  while (ok && !absent && csv_next(&r, error)) {
    EmaTraceVmm v = {0};
    const char *res = r.csv.fields[4];
    char *end = NULL;
    ok = csv_span(&r, &v.start_ns, &v.end_ns, error) && csv_u64(&r, 3, &v.bytes, error);
    long result = ok ? strtol(res, &end, 10) : 0;
    if (ok && (!*res || *end))
      ok = csv_error(&r, 4, "not an integer", error);
    if (ok) {
      v.call = csv_text(&r, 2);
      v.result = (int) result;
      g_array_append_val(t->vmm, v);
    }
  }
  ok = ok && !(error && *error);
  csv_close(&r);
  return ok;
}

typedef struct {
  guint64 ts;
  char *name, *domain;
  guint order;
} OpenMarker;

static void open_marker_free(gpointer p) {
  OpenMarker *m = p;
  g_free(m->name);
  g_free(m->domain);
  g_free(m);
}

static gint range_by_start(gconstpointer a, gconstpointer b) {
  const EmaTraceRange *x = a, *y = b;
  if (x->start_ns != y->start_ns)
    return x->start_ns < y->start_ns ? -1 : 1;
  /* the outer range first at a tie; the one started first at a full tie */
  if (x->end_ns != y->end_ns)
    return x->end_ns > y->end_ns ? -1 : 1;
  return x->order < y->order ? -1 : x->order > y->order ? 1 : 0;
}

static guint64 last_timestamp(const EmaTrace *t) {
  guint64 last = 0;
  for (guint i = 0; i < t->kernels->len; i++)
    last = MAX(last, g_array_index(t->kernels, EmaTraceKernel, i).end_ns);
  for (guint i = 0; i < t->copies->len; i++)
    last = MAX(last, g_array_index(t->copies, EmaTraceCopy, i).end_ns);
  for (guint i = 0; i < t->ranges->len; i++)
    last = MAX(last, g_array_index(t->ranges, EmaTraceRange, i).end_ns);
  return last;
}

static gboolean load_ranges(EmaTrace *t, const char *dir, GError **error) {
  g_autofree char *path = g_build_filename(dir, "nvtx.csv", NULL);
  CsvReader r;
  gboolean absent,
      ok = csv_open(&r, path, "timestamp_ns,flags,id,domain,name", TRUE, &absent, error);
  GHashTable *open = g_hash_table_new_full(g_direct_hash, g_direct_equal, NULL, open_marker_free);
  while (ok && !absent && csv_next(&r, error)) {
    guint64 ts = 0;
    guint id = 0;
    const char *flag = r.csv.fields[1];
    ok = csv_u64(&r, 0, &ts, error) && csv_uint(&r, 2, &id, error);
    if (!ok)
      break;
    if (strcmp(flag, "start") == 0) {
      OpenMarker *m = g_new0(OpenMarker, 1);
      m->ts = ts;
      m->domain = csv_text(&r, 3);
      m->name = csv_text(&r, 4);
      m->order = r.csv.line;
      g_hash_table_replace(open, GUINT_TO_POINTER(id), m);
    } else if (strcmp(flag, "end") == 0) {
      OpenMarker *m = g_hash_table_lookup(open, GUINT_TO_POINTER(id));
      if (!m) {
        t->unmatched_markers++;
        continue;
      }
      if (ts < m->ts)
        ok = csv_error(&r, 0, "a range ends before it starts", error);
      else {
        EmaTraceRange range = {m->ts, ts, m->name, m->domain, -1, 0, m->order, FALSE};
        m->name = m->domain = NULL;
        g_array_append_val(t->ranges, range);
        g_hash_table_remove(open, GUINT_TO_POINTER(id));
      }
    } else if (strcmp(flag, "mark") == 0) {
      EmaTraceRange range = {ts, ts, csv_text(&r, 4), csv_text(&r, 3), -1, 0, r.csv.line, FALSE};
      g_array_append_val(t->ranges, range);
    } else
      ok = csv_error(&r, 1, "flags is not start, end or mark", error);
  }
  ok = ok && !(error && *error);
  csv_close(&r);
  if (ok) {
    /* ranges the program never ended: kept up to the last record */
    guint64 last = last_timestamp(t);
    GHashTableIter it;
    gpointer value;
    g_hash_table_iter_init(&it, open);
    while (g_hash_table_iter_next(&it, NULL, &value)) {
      OpenMarker *m = value;
      EmaTraceRange range = {m->ts, MAX(last, m->ts), m->name, m->domain, -1, 0, m->order, TRUE};
      m->name = m->domain = NULL;
      g_array_append_val(t->ranges, range);
      t->unmatched_markers++;
    }
    g_array_sort(t->ranges, range_by_start);
    /* parents: a stack of the ranges that contain the current start */
    GArray *stack = g_array_new(FALSE, FALSE, sizeof(int));
    for (guint i = 0; i < t->ranges->len; i++) {
      EmaTraceRange *rg = &g_array_index(t->ranges, EmaTraceRange, i);
      while (stack->len > 0) {
        const EmaTraceRange *top =
            &g_array_index(t->ranges, EmaTraceRange, g_array_index(stack, int, stack->len - 1));
        if (top->end_ns >= rg->end_ns && top->start_ns <= rg->start_ns)
          break;
        g_array_set_size(stack, stack->len - 1);
      }
      rg->parent = stack->len > 0 ? g_array_index(stack, int, stack->len - 1) : -1;
      rg->depth = (int) stack->len;
      int index = (int) i;
      g_array_append_val(stack, index);
    }
    g_array_unref(stack);
  }
  g_hash_table_unref(open);
  return ok;
}

static gint kernel_by_start(gconstpointer a, gconstpointer b) {
  const EmaTraceKernel *x = a, *y = b;
  return x->start_ns < y->start_ns ? -1 : x->start_ns > y->start_ns ? 1 : 0;
}

static gint copy_by_start(gconstpointer a, gconstpointer b) {
  const EmaTraceCopy *x = a, *y = b;
  return x->start_ns < y->start_ns ? -1 : x->start_ns > y->start_ns ? 1 : 0;
}

static void kernel_clear(gpointer p) {
  g_free(((EmaTraceKernel *) p)->name);
}
static void copy_clear(gpointer p) {
  g_free(((EmaTraceCopy *) p)->kind);
}
static void memory_clear(gpointer p) {
  g_free(((EmaTraceMemory *) p)->memory_kind);
}
static void vmm_clear(gpointer p) {
  g_free(((EmaTraceVmm *) p)->call);
}
static void range_clear(gpointer p) {
  EmaTraceRange *r = p;
  g_free(r->name);
  g_free(r->domain);
}

EmaTrace *ema_trace_load(const char *dir, GError **error) {
  EmaTrace *t = g_new0(EmaTrace, 1);
  t->kernels = g_array_new(FALSE, FALSE, sizeof(EmaTraceKernel));
  t->copies = g_array_new(FALSE, FALSE, sizeof(EmaTraceCopy));
  t->memory = g_array_new(FALSE, FALSE, sizeof(EmaTraceMemory));
  t->vmm = g_array_new(FALSE, FALSE, sizeof(EmaTraceVmm));
  t->ranges = g_array_new(FALSE, FALSE, sizeof(EmaTraceRange));
  g_array_set_clear_func(t->kernels, kernel_clear);
  g_array_set_clear_func(t->copies, copy_clear);
  g_array_set_clear_func(t->memory, memory_clear);
  g_array_set_clear_func(t->vmm, vmm_clear);
  g_array_set_clear_func(t->ranges, range_clear);
  t->nvtx_path = g_build_filename(dir, "nvtx.csv", NULL);
  if (!load_kernels(t, dir, error) || !load_copies(t, dir, error) || !load_memory(t, dir, error) ||
      !load_vmm(t, dir, error) || !load_ranges(t, dir, error)) {
    ema_trace_free(t);
    return NULL;
  }
  g_array_sort(t->kernels, kernel_by_start);
  g_array_sort(t->copies, copy_by_start);
  g_autofree char *summary_path = g_build_filename(dir, "capture.txt", NULL);
  if (!ema_file_read_regular(summary_path, EMA_FILE_MAX_TEXT, &t->summary, NULL, NULL))
    t->summary = NULL;
  return t;
}

void ema_trace_free(EmaTrace *t) {
  if (!t)
    return;
  g_array_unref(t->kernels);
  g_array_unref(t->copies);
  g_array_unref(t->memory);
  g_array_unref(t->vmm);
  g_array_unref(t->ranges);
  g_free(t->summary);
  g_free(t->nvtx_path);
  g_free(t);
}

GArray *ema_trace_kernel_owners(const EmaTrace *t) {
  GArray *owners = g_array_sized_new(FALSE, FALSE, sizeof(int), t->kernels->len);
  /* ranges sorted by start: the innermost owner of a start is the last range that starts at or
   * before it and contains it, or an ancestor of that one */
  guint next = 0;
  int current = -1; /* the last range started so far */
  for (guint i = 0; i < t->kernels->len; i++) {
    guint64 s = g_array_index(t->kernels, EmaTraceKernel, i).start_ns;
    while (next < t->ranges->len && g_array_index(t->ranges, EmaTraceRange, next).start_ns <= s)
      current = (int) next++;
    int owner = current;
    while (owner >= 0) {
      const EmaTraceRange *r = &g_array_index(t->ranges, EmaTraceRange, owner);
      if (r->end_ns > s && r->end_ns > r->start_ns)
        break;
      owner = r->parent;
    }
    g_array_append_val(owners, owner);
  }
  return owners;
}

static gint cmp_double(gconstpointer a, gconstpointer b) {
  double x = *(const double *) a, y = *(const double *) b;
  return x < y ? -1 : x > y ? 1 : 0;
}

static double median_of(GArray *values) {
  g_array_sort(values, cmp_double);
  guint n = values->len;
  if (n == 0)
    return 0;
  double *v = (double *) (void *) values->data;
  return n % 2 ? v[n / 2] : 0.5 * (v[n / 2 - 1] + v[n / 2]);
}

static double std_of(GArray *values) {
  guint n = values->len;
  if (n < 2)
    return 0;
  double mean = 0, ss = 0;
  for (guint i = 0; i < n; i++)
    mean += g_array_index(values, double, i);
  mean /= n;
  for (guint i = 0; i < n; i++) {
    double d = g_array_index(values, double, i) - mean;
    ss += d * d;
  }
  return sqrt(ss / (n - 1));
}

/* per range: the summed kernel time, the GPU span and the count of the kernels it owns,
 * directly or through its descendants */
typedef struct {
  double busy_us, span_us;
  guint kernels;
  guint64 first, last;
} RangeLoad;

static RangeLoad *range_loads(const EmaTrace *t) {
  RangeLoad *loads = g_new0(RangeLoad, t->ranges->len + 1);
  g_autoptr(GArray) owners = ema_trace_kernel_owners(t);
  for (guint i = 0; i < t->kernels->len; i++) {
    const EmaTraceKernel *k = &g_array_index(t->kernels, EmaTraceKernel, i);
    for (int r = g_array_index(owners, int, i); r >= 0;
         r = g_array_index(t->ranges, EmaTraceRange, r).parent) {
      RangeLoad *l = &loads[r];
      l->busy_us += (double) (k->end_ns - k->start_ns) / 1e3;
      l->first = l->kernels ? MIN(l->first, k->start_ns) : k->start_ns;
      l->last = l->kernels ? MAX(l->last, k->end_ns) : k->end_ns;
      l->kernels++;
    }
  }
  for (guint r = 0; r < t->ranges->len; r++)
    loads[r].span_us = loads[r].kernels ? (double) (loads[r].last - loads[r].first) / 1e3 : 0;
  return loads;
}

typedef struct {
  GArray *busy, *span, *kernels; /* double each */
} NameStats;

static NameStats *name_stats_new(void) {
  NameStats *s = g_new0(NameStats, 1);
  s->busy = g_array_new(FALSE, FALSE, sizeof(double));
  s->span = g_array_new(FALSE, FALSE, sizeof(double));
  s->kernels = g_array_new(FALSE, FALSE, sizeof(double));
  return s;
}

static void name_stats_free(gpointer p) {
  NameStats *s = p;
  g_array_unref(s->busy);
  g_array_unref(s->span);
  g_array_unref(s->kernels);
  g_free(s);
}

static double min_of(GArray *v) {
  return v->len ? g_array_index(v, double, 0) : 0;
}
static double max_of(GArray *v) {
  return v->len ? g_array_index(v, double, v->len - 1) : 0;
}

static GList *sorted_keys(GHashTable *table) {
  return g_list_sort(g_hash_table_get_keys(table), (GCompareFunc) strcmp);
}

static gboolean write_file(const char *path, const GString *text, GError **error) {
  GError *io = NULL;
  if (!g_file_set_contents(path, text->str, (gssize) text->len, &io)) {
    g_set_error(error, EMA_VALIDATE_ERROR, EMA_VALIDATE_ERROR_IO, "%s: %s", path, io->message);
    g_error_free(io);
    return FALSE;
  }
  return TRUE;
}

static void csv_quote(GString *out, const char *s) {
  g_string_append_c(out, '"');
  for (; *s; s++) {
    if (*s == '"')
      g_string_append_c(out, '"');
    g_string_append_c(out, *s);
  }
  g_string_append_c(out, '"');
}

gboolean ema_trace_write_summaries(const EmaTrace *t, const char *dir, GError **error) {
  g_autofree RangeLoad *loads = range_loads(t);
  g_autoptr(GHashTable) by_range =
      g_hash_table_new_full(g_str_hash, g_str_equal, NULL, name_stats_free);
  for (guint r = 0; r < t->ranges->len; r++) {
    const EmaTraceRange *rg = &g_array_index(t->ranges, EmaTraceRange, r);
    NameStats *s = g_hash_table_lookup(by_range, rg->name);
    if (!s)
      g_hash_table_insert(by_range, rg->name, s = name_stats_new());
    double kernels = loads[r].kernels;
    g_array_append_val(s->busy, loads[r].busy_us);
    g_array_append_val(s->span, loads[r].span_us);
    g_array_append_val(s->kernels, kernels);
  }
  g_autoptr(GString) out = g_string_new("name,count,kernels_median,busy_us_median,busy_us_min,"
                                        "busy_us_max,span_us_median,span_us_min,span_us_max\n");
  GList *keys = sorted_keys(by_range);
  for (GList *l = keys; l; l = l->next) {
    NameStats *s = g_hash_table_lookup(by_range, l->data);
    csv_quote(out, l->data);
    double busy = median_of(s->busy), span = median_of(s->span), kn = median_of(s->kernels);
    g_string_append_printf(out, ",%u,%g,%.3f,%.3f,%.3f,%.3f,%.3f,%.3f\n", s->busy->len, kn, busy,
                           min_of(s->busy), max_of(s->busy), span, min_of(s->span),
                           max_of(s->span));
  }
  g_list_free(keys);
  g_autofree char *rpath = g_build_filename(dir, "ranges.csv", NULL);
  if (!write_file(rpath, out, error))
    return FALSE;

  g_autoptr(GHashTable) by_kernel =
      g_hash_table_new_full(g_str_hash, g_str_equal, NULL, name_stats_free);
  for (guint i = 0; i < t->kernels->len; i++) {
    const EmaTraceKernel *k = &g_array_index(t->kernels, EmaTraceKernel, i);
    NameStats *s = g_hash_table_lookup(by_kernel, k->name);
    if (!s)
      g_hash_table_insert(by_kernel, k->name, s = name_stats_new());
    double us = (double) (k->end_ns - k->start_ns) / 1e3;
    g_array_append_val(s->busy, us);
  }
  g_string_assign(out, "name,count,total_us,median_us,min_us,max_us\n");
  keys = sorted_keys(by_kernel);
  for (GList *l = keys; l; l = l->next) {
    NameStats *s = g_hash_table_lookup(by_kernel, l->data);
    double total = 0;
    for (guint i = 0; i < s->busy->len; i++)
      total += g_array_index(s->busy, double, i);
    csv_quote(out, l->data);
    double med = median_of(s->busy);
    g_string_append_printf(out, ",%u,%.3f,%.3f,%.3f,%.3f\n", s->busy->len, total, med,
                           min_of(s->busy), max_of(s->busy));
  }
  g_list_free(keys);
  g_autofree char *kpath = g_build_filename(dir, "kernel-names.csv", NULL);
  return write_file(kpath, out, error);
}

/* a JSON string literal */
static void json_string(GString *out, const char *s) {
  g_string_append_c(out, '"');
  for (const unsigned char *p = (const unsigned char *) s; *p; p++) {
    if (*p == '"' || *p == '\\')
      g_string_append_printf(out, "\\%c", *p);
    else if (*p < 0x20)
      g_string_append_printf(out, "\\u%04x", *p);
    else
      g_string_append_c(out, (char) *p);
  }
  g_string_append_c(out, '"');
}

static guint64 first_timestamp(const EmaTrace *t) {
  guint64 first = G_MAXUINT64;
  if (t->kernels->len)
    first = g_array_index(t->kernels, EmaTraceKernel, 0).start_ns;
  if (t->copies->len)
    first = MIN(first, g_array_index(t->copies, EmaTraceCopy, 0).start_ns);
  if (t->ranges->len)
    first = MIN(first, g_array_index(t->ranges, EmaTraceRange, 0).start_ns);
  for (guint i = 0; i < t->memory->len; i++)
    first = MIN(first, g_array_index(t->memory, EmaTraceMemory, i).timestamp_ns);
  for (guint i = 0; i < t->vmm->len; i++)
    first = MIN(first, g_array_index(t->vmm, EmaTraceVmm, i).start_ns);
  return first == G_MAXUINT64 ? 0 : first;
}

static void chrome_event(GString *out, gboolean *first, const char *name, const char *cat,
                         const char *pid, guint tid, guint64 start, guint64 end, guint64 t0) {
  g_string_append(out, *first ? "\n" : ",\n");
  *first = FALSE;
  g_string_append(out, "{\"ph\":\"X\",\"name\":");
  json_string(out, name);
  g_string_append_printf(out, ",\"cat\":\"%s\",\"pid\":\"%s\",\"tid\":%u,\"ts\":%.3f,\"dur\":%.3f",
                         cat, pid, tid, (double) (start - t0) / 1e3, (double) (end - start) / 1e3);
}

gboolean ema_trace_write_chrome(const EmaTrace *t, const char *path, GError **error) {
  guint64 t0 = first_timestamp(t);
  gboolean first = TRUE;
  g_autoptr(GString) out = g_string_new("{\"displayTimeUnit\":\"ns\",\"traceEvents\":[");
  for (guint i = 0; i < t->kernels->len; i++) {
    const EmaTraceKernel *k = &g_array_index(t->kernels, EmaTraceKernel, i);
    char pid[32];
    g_snprintf(pid, sizeof pid, "GPU %u", k->device);
    chrome_event(out, &first, k->name, "kernel", pid, k->stream, k->start_ns, k->end_ns, t0);
    g_string_append_printf(out,
                           ",\"args\":{\"grid\":\"%u,%u,%u\",\"block\":\"%u,%u,%u\","
                           "\"registers\":%u,\"shared_bytes\":%u}}",
                           k->grid[0], k->grid[1], k->grid[2], k->block[0], k->block[1],
                           k->block[2], k->registers, k->shared_bytes);
  }
  for (guint i = 0; i < t->copies->len; i++) {
    const EmaTraceCopy *c = &g_array_index(t->copies, EmaTraceCopy, i);
    char pid[32];
    g_snprintf(pid, sizeof pid, "GPU %u", c->device);
    chrome_event(out, &first, c->kind, "copy", pid, c->stream, c->start_ns, c->end_ns, t0);
    g_string_append_printf(out,
                           ",\"args\":{\"bytes\":%" G_GUINT64_FORMAT ",\"src\":%d,\"dst\":%d}}",
                           c->bytes, c->src_device, c->dst_device);
  }
  for (guint i = 0; i < t->ranges->len; i++) {
    const EmaTraceRange *r = &g_array_index(t->ranges, EmaTraceRange, i);
    chrome_event(out, &first, r->name, "nvtx", "nvtx", (guint) r->depth, r->start_ns, r->end_ns,
                 t0);
    g_string_append(out, "}");
  }
  for (guint i = 0; i < t->vmm->len; i++) {
    const EmaTraceVmm *v = &g_array_index(t->vmm, EmaTraceVmm, i);
    chrome_event(out, &first, v->call, "vmm", "vmm", 0, v->start_ns, v->end_ns, t0);
    g_string_append_printf(out, ",\"args\":{\"bytes\":%" G_GUINT64_FORMAT ",\"result\":%d}}",
                           v->bytes, v->result);
  }
  /* device memory in use: a counter per device, +bytes at an allocation, -bytes at a release of
   * an address allocated in the trace (releases of earlier allocations are not counted) */
  g_autoptr(GHashTable) live = g_hash_table_new_full(g_int64_hash, g_int64_equal, g_free, NULL);
  GHashTable *in_use = g_hash_table_new(g_direct_hash, g_direct_equal);
  for (guint i = 0; i < t->memory->len; i++) {
    const EmaTraceMemory *m = &g_array_index(t->memory, EmaTraceMemory, i);
    gint64 key = (gint64) m->address;
    guint64 used = GPOINTER_TO_SIZE(g_hash_table_lookup(in_use, GUINT_TO_POINTER(m->device)));
    if (m->alloc) {
      g_hash_table_insert(live, g_memdup2(&key, sizeof key), GSIZE_TO_POINTER(m->bytes));
      used += m->bytes;
    } else if (g_hash_table_contains(live, &key)) {
      used -= MIN(used, (guint64) GPOINTER_TO_SIZE(g_hash_table_lookup(live, &key)));
      g_hash_table_remove(live, &key);
    }
    g_hash_table_insert(in_use, GUINT_TO_POINTER(m->device), GSIZE_TO_POINTER(used));
    g_string_append(out, first ? "\n" : ",\n");
    first = FALSE;
    g_string_append_printf(out,
                           "{\"ph\":\"C\",\"name\":\"memory in use\",\"pid\":\"GPU %u\","
                           "\"ts\":%.3f,\"args\":{\"bytes\":%" G_GUINT64_FORMAT "}}",
                           m->device, (double) (m->timestamp_ns - t0) / 1e3, used);
  }
  g_hash_table_unref(in_use);
  g_string_append(out, "\n]}\n");
  return write_file(path, out, error);
}

/* one measured point of a profiling workload */
typedef struct {
  char *table;
  char **keys, **values; /* NULL-terminated, in the order of the range name */
  double time_us, std_us;
  guint repeats;
} Point;

static void point_clear(gpointer p) {
  Point *pt = p;
  g_free(pt->table);
  g_strfreev(pt->keys);
  g_strfreev(pt->values);
}

#define POINT_PREFIX "ema.point "
#define REP_NAME "ema.rep"

/* Whether NAME is a repeat range, "ema.rep" (one run) or "ema.rep xN" (N >= 1 runs back to back):
 * TRUE with *RUNS set; FALSE for another name; an error for "ema.rep " with a bad count. */
static gboolean repeat_runs(const char *name, guint *runs, gboolean *is_repeat, GError **error) {
  guint64 n = 0;
  *is_repeat = FALSE;
  *runs = 1;
  if (!g_str_has_prefix(name, REP_NAME))
    return TRUE;
  if (name[strlen(REP_NAME)] == '\0') {
    *is_repeat = TRUE;
    return TRUE;
  }
  if (name[strlen(REP_NAME)] != ' ')
    return TRUE; /* another name that starts so */
  if (name[strlen(REP_NAME) + 1] != 'x' ||
      !g_ascii_string_to_unsigned(name + strlen(REP_NAME) + 2, 10, 1, G_MAXUINT32, &n, NULL)) {
    g_autofree char *quoted = ema_file_quote_cut(name, -1);
    g_set_error(error, EMA_VALIDATE_ERROR, EMA_VALIDATE_ERROR_DATA,
                "NVTX range '%s': not '" REP_NAME "' or '" REP_NAME " xN' (N runs, N >= 1)",
                quoted);
    return FALSE;
  }
  *is_repeat = TRUE;
  *runs = (guint) n;
  return TRUE;
}

/* TEXT is a table name: one file name in the output folder (TABLE.csv),
 * letters, digits, '_' and '-', not starting with '-'. */
static gboolean is_table_name(const char *text) {
  if (!g_ascii_isalnum(*text) && *text != '_')
    return FALSE;
  for (; *text; text++)
    if (!g_ascii_isalnum(*text) && *text != '_' && *text != '-')
      return FALSE;
  return TRUE;
}

static int key_index(char **keys, const char *key) {
  for (int i = 0; keys[i]; i++)
    if (strcmp(keys[i], key) == 0)
      return i;
  return -1;
}

static gboolean parse_point(const char *name, Point *pt, GError **error) {
  /* what the messages quote: a name (and its words) of any length leaves them one readable line */
  g_autofree char *quoted = ema_file_quote_cut(name, -1);
  g_auto(GStrv) words = g_strsplit(name + strlen(POINT_PREFIX), " ", -1);
  GPtrArray *keys = g_ptr_array_new(), *values = g_ptr_array_new();
  gboolean ok = words[0] && *words[0];
  for (guint i = 1; ok && words[i]; i++) {
    const char *eq = strchr(words[i], '=');
    ok = eq && eq != words[i] && eq[1];
    if (ok) {
      g_ptr_array_add(keys, g_strndup(words[i], (gsize) (eq - words[i])));
      g_ptr_array_add(values, g_strdup(eq + 1));
    }
  }
  g_ptr_array_add(keys, NULL);
  g_ptr_array_add(values, NULL);
  pt->keys = (char **) g_ptr_array_free(keys, FALSE);
  pt->values = (char **) g_ptr_array_free(values, FALSE);
  if (!ok || !pt->keys[0]) {
    g_set_error(error, EMA_VALIDATE_ERROR, EMA_VALIDATE_ERROR_DATA,
                "NVTX range '%s': not 'ema.point TABLE KEY=VALUE...'", quoted);
    return FALSE;
  }
  /* the keys are the table's columns before time_us,std_us,repeats: each once */
  for (guint i = 0; pt->keys[i]; i++)
    if (key_index(pt->keys, pt->keys[i]) != (int) i || strcmp(pt->keys[i], "time_us") == 0 ||
        strcmp(pt->keys[i], "std_us") == 0 || strcmp(pt->keys[i], "repeats") == 0) {
      g_autofree char *key = ema_file_quote_cut(pt->keys[i], -1);
      g_set_error(error, EMA_VALIDATE_ERROR, EMA_VALIDATE_ERROR_DATA,
                  "NVTX range '%s': key '%s' %s", quoted, key,
                  key_index(pt->keys, pt->keys[i]) != (int) i
                      ? "given twice"
                      : "names a column the table gets from the repeats");
      return FALSE;
    }
  /* the table names a file in the output folder, the keys and values
   * become its CSV header and cells: nothing that leaves the folder or
   * splits a cell */
  if (!is_table_name(words[0])) {
    g_autofree char *table = ema_file_quote_cut(words[0], -1);
    g_set_error(error, EMA_VALIDATE_ERROR, EMA_VALIDATE_ERROR_DATA,
                "NVTX range '%s': table '%s' is not a table name (letters, digits, '_' and '-')",
                quoted, table);
    return FALSE;
  }
  for (guint i = 0; pt->keys[i]; i++)
    if (strpbrk(pt->keys[i], ",\"\r\n") || strpbrk(pt->values[i], ",\"\r\n")) {
      g_autofree char *key = ema_file_quote_cut(pt->keys[i], -1);
      g_autofree char *value = ema_file_quote_cut(pt->values[i], -1);
      g_set_error(error, EMA_VALIDATE_ERROR, EMA_VALIDATE_ERROR_DATA,
                  "NVTX range '%s': '%s=%s' holds a comma, quote or line break (a CSV cell "
                  "cannot)",
                  quoted, key, value);
      return FALSE;
    }
  pt->table = g_strdup(words[0]);
  return TRUE;
}

static gint compare_values(const char *a, const char *b) {
  char *ea = NULL, *eb = NULL;
  double x = g_ascii_strtod(a, &ea), y = g_ascii_strtod(b, &eb);
  if (*a && *b && !*ea && !*eb)
    return x < y ? -1 : x > y ? 1 : 0;
  return strcmp(a, b);
}

/* by the keys in order, the backend last */
static gint point_order(gconstpointer a, gconstpointer b) {
  const Point *x = a, *y = b;
  for (guint i = 0; x->keys[i] && y->values[i]; i++) {
    gint c = compare_values(x->values[i], y->values[i]);
    if (c)
      return c;
  }
  return 0;
}

static gboolean same_keys(const Point *a, const Point *b, int skip) {
  for (int i = 0; a->keys[i]; i++)
    if (i != skip && strcmp(a->values[i], b->values[i]) != 0)
      return FALSE;
  return TRUE;
}

static void append_row(GString *out, const Point *p) {
  for (guint i = 0; p->keys[i]; i++)
    g_string_append_printf(out, "%s,", p->values[i]);
  g_string_append_printf(out, "%.3f,%.3f,%u\n", p->time_us, p->std_us, p->repeats);
}

static void append_header(GString *out, const Point *p) {
  for (guint i = 0; p->keys[i]; i++)
    g_string_append_printf(out, "%s,", p->keys[i]);
  g_string_append(out, "time_us,std_us,repeats\n");
}

/* OUT_DIR/NAME, listed in OUT_DIR's marker first (output.h): a NAME there that no marker
 * lists is a user's file, refused and left as it is */
static gboolean write_listed(const char *out_dir, const char *name, const GString *text,
                             GError **error) {
  const char *const entries[] = {name, NULL};
  g_autofree char *path = g_build_filename(out_dir, name, NULL);
  return ema_output_claim_dir_full(out_dir, entries, EMA_OUTPUT_CLAIM_KEEP, error) &&
         write_file(path, text, error);
}

/* TABLE.csv (and TABLE-backends.csv) of the points of one table, sorted */
static gboolean write_table(GArray *points, const char *out_dir, GPtrArray *tables,
                            GError **error) {
  g_array_sort(points, point_order);
  const Point *p0 = &g_array_index(points, Point, 0);
  int backend = key_index(p0->keys, "backend");
  g_autoptr(GString) out = g_string_new(NULL);
  append_header(out, p0);
  if (backend < 0) {
    for (guint i = 0; i < points->len; i++)
      append_row(out, &g_array_index(points, Point, i));
  } else {
    g_autoptr(GString) all = g_string_new(NULL);
    append_header(all, p0);
    /* sorted with the backend a key: a shape's backends are neighbours only when the backend is
     * the last key; so for each point look for a faster one of the same shape */
    for (guint i = 0; i < points->len; i++) {
      const Point *p = &g_array_index(points, Point, i);
      append_row(all, p);
      gboolean fastest = TRUE;
      for (guint j = 0; j < points->len && fastest; j++) {
        const Point *q = &g_array_index(points, Point, j);
        if (j != i && same_keys(p, q, backend) &&
            (q->time_us < p->time_us || (q->time_us == p->time_us && j < i)))
          fastest = FALSE;
      }
      if (fastest)
        append_row(out, p);
    }
    g_autofree char *name = g_strdup_printf("%s-backends.csv", p0->table);
    if (!write_listed(out_dir, name, all, error))
      return FALSE;
    g_ptr_array_add(tables, g_steal_pointer(&name));
  }
  g_autofree char *name = g_strdup_printf("%s.csv", p0->table);
  if (!write_listed(out_dir, name, out, error))
    return FALSE;
  g_ptr_array_add(tables, g_steal_pointer(&name));
  return TRUE;
}

static void points_free(gpointer p) {
  g_array_unref(p);
}

static gint compare_names(gconstpointer a, gconstpointer b) {
  return strcmp(*(char *const *) a, *(char *const *) b);
}

GHashTable *ema_trace_profile_points(const EmaTrace *t, GError **error) {
  g_autofree RangeLoad *loads = range_loads(t);
  g_autoptr(GHashTable) by_table =
      g_hash_table_new_full(g_str_hash, g_str_equal, g_free, points_free);
  g_autoptr(GArray) reps = g_array_new(FALSE, FALSE, sizeof(double));
  /* each point's range name, to its line: a point measured twice would be two rows of one
   * shape, which the profile loader refuses */
  g_autoptr(GHashTable) seen = g_hash_table_new(g_str_hash, g_str_equal);
  const EmaTraceRange *at = NULL; /* the range an error is about */
  gpointer first;
  Point pt = {0};
  g_autofree char *quoted = NULL; /* the point's name, as the messages quote it */
  /* a repeat the workload never ended (it stopped inside it): kept up to the capture's end, past
   * its point's maybe, where it was no repeat of it (one fewer, unsaid) */
  for (guint r = 0; r < t->ranges->len; r++) {
    at = &g_array_index(t->ranges, EmaTraceRange, r);
    if (at->unended &&
        (strcmp(at->name, REP_NAME) == 0 || g_str_has_prefix(at->name, REP_NAME " "))) {
      quoted = ema_file_quote_cut(at->name, -1);
      g_set_error(error, EMA_VALIDATE_ERROR, EMA_VALIDATE_ERROR_DATA,
                  "NVTX range '%s' never ends in nvtx.csv (the workload stopped inside it?): the "
                  "repeat's time is not known",
                  quoted);
      goto fail;
    }
  }
  for (guint r = 0; r < t->ranges->len; r++) {
    const EmaTraceRange *rg = at = &g_array_index(t->ranges, EmaTraceRange, r);
    if (!g_str_has_prefix(rg->name, POINT_PREFIX))
      continue;
    memset(&pt, 0, sizeof pt);
    g_free(quoted);
    quoted = ema_file_quote_cut(rg->name, -1);
    if (!parse_point(rg->name, &pt, error))
      goto fail;
    if (g_hash_table_lookup_extended(seen, rg->name, NULL, &first)) {
      g_set_error(error, EMA_VALIDATE_ERROR, EMA_VALIDATE_ERROR_DATA,
                  "NVTX range '%s': the same point as line %u (measured twice)", quoted,
                  GPOINTER_TO_UINT(first));
      goto fail;
    }
    /* a point the workload never ended (it died, or was killed, inside it): its repeats stop
     * where the capture does, some of them maybe not run at all */
    if (rg->unended) {
      g_set_error(error, EMA_VALIDATE_ERROR, EMA_VALIDATE_ERROR_DATA,
                  "NVTX range '%s' never ends in nvtx.csv (the workload stopped inside it?): its "
                  "repeats are not all there",
                  quoted);
      goto fail;
    }
    g_hash_table_insert(seen, rg->name, GUINT_TO_POINTER(rg->order));
    g_array_set_size(reps, 0);
    for (guint c = r + 1; c < t->ranges->len; c++) {
      const EmaTraceRange *child = &g_array_index(t->ranges, EmaTraceRange, c);
      guint runs;
      gboolean is_repeat;
      if (child->start_ns > rg->end_ns)
        break;
      if (child->parent != (int) r)
        continue;
      at = child;
      if (!repeat_runs(child->name, &runs, &is_repeat, error))
        goto fail;
      at = rg;
      if (!is_repeat)
        continue;
      if (loads[c].kernels == 0) {
        g_set_error(error, EMA_VALIDATE_ERROR, EMA_VALIDATE_ERROR_DATA,
                    "NVTX range '%s': a repeat owns no kernel (did the workload synchronize "
                    "before the repeat ended?)",
                    quoted);
        goto fail;
      }
      double per_run = loads[c].busy_us / runs;
      g_array_append_val(reps, per_run);
    }
    if (reps->len == 0) {
      g_set_error(error, EMA_VALIDATE_ERROR, EMA_VALIDATE_ERROR_DATA,
                  "NVTX range '%s': no '" REP_NAME "' range inside it", quoted);
      goto fail;
    }
    pt.repeats = reps->len;
    pt.std_us = std_of(reps);
    pt.time_us = median_of(reps);
    GArray *points = g_hash_table_lookup(by_table, pt.table);
    if (!points) {
      points = g_array_new(FALSE, FALSE, sizeof(Point));
      g_array_set_clear_func(points, point_clear);
      g_hash_table_insert(by_table, g_strdup(pt.table), points);
    } else {
      const Point *p0 = &g_array_index(points, Point, 0);
      gboolean same = g_strv_length(p0->keys) == g_strv_length(pt.keys);
      for (guint i = 0; same && pt.keys[i]; i++)
        same = strcmp(p0->keys[i], pt.keys[i]) == 0;
      if (!same) {
        g_set_error(error, EMA_VALIDATE_ERROR, EMA_VALIDATE_ERROR_DATA,
                    "NVTX range '%s': its keys differ from those of the table's first point",
                    quoted);
        goto fail;
      }
    }
    g_array_append_val(points, pt);
  }
  return g_steal_pointer(&by_table);
fail:
  /* at the line of the range's start in nvtx.csv */
  g_prefix_error(error, "%s:%u: ", t->nvtx_path, at->order);
  point_clear(&pt);
  return NULL;
}

gboolean ema_trace_write_profile_points(GHashTable *by_table, const char *out_dir,
                                        GPtrArray **tables_out, GError **error) {
  g_autoptr(GPtrArray) tables = g_ptr_array_new_with_free_func(g_free);
  GList *names = sorted_keys(by_table);
  gboolean ok = TRUE;
  for (GList *l = names; l && ok; l = l->next)
    ok = write_table(g_hash_table_lookup(by_table, l->data), out_dir, tables, error);
  g_list_free(names);
  g_ptr_array_sort(tables, compare_names);
  if (ok && tables_out)
    *tables_out = g_ptr_array_ref(tables);
  return ok;
}

gboolean ema_trace_write_profiles(const EmaTrace *t, const char *out_dir, GPtrArray **tables,
                                  GError **error) {
  g_autoptr(GHashTable) points = ema_trace_profile_points(t, error);
  return points && ema_trace_write_profile_points(points, out_dir, tables, error);
}
