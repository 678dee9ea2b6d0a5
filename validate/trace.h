/* trace.h: a captured CUDA trace (the CSVs libemacapture.so writes, validate/capturelib.c) read
 * back, its NVTX ranges paired, kernels attributed to ranges, aggregated per range name and per
 * kernel name, written as Chrome trace JSON (Perfetto opens it), and turned into the operator
 * profile tables of hwmodels/profiles/README.md. Plain C, no CUDA: tested on small fixtures.
 *
 * Invariants: times are nanoseconds on CUPTI's clock (one clock for GPU records and NVTX
 * markers); every record has end >= start (a row that does not is an error naming its line);
 * ranges are sorted by start, each with the index of its innermost enclosing range (or -1);
 * a kernel belongs to the innermost range in which it STARTS on the GPU, so a workload that
 * wants a range to own its kernels synchronizes the device before the range ends. */
#pragma once

#include <glib.h>

G_BEGIN_DECLS

typedef struct {
  guint64 start_ns, end_ns;
  guint device, stream;
  guint grid[3], block[3];
  guint registers, shared_bytes;
  char *name; /* demangled */
} EmaTraceKernel;

typedef struct {
  guint64 start_ns, end_ns;
  guint device, stream;
  char *kind; /* HtoD, DtoH, DtoD, PtoP, ... ; memset for memsets */
  guint64 bytes;
  int src_device, dst_device; /* -1 for a memset */
} EmaTraceCopy;

typedef struct {
  guint64 timestamp_ns;
  guint device;
  gboolean alloc; /* FALSE: release */
  char *memory_kind;
  guint64 address, bytes;
} EmaTraceMemory;

typedef struct {
  guint64 start_ns, end_ns;
  char *call; /* cuMemCreate, cuMemMap, ... */
  guint64 bytes;
  int result;
} EmaTraceVmm;

typedef struct {
  guint64 start_ns, end_ns; /* equal for an instantaneous mark */
  char *name, *domain;
  int parent; /* index of the innermost enclosing range, -1 at top level */
  int depth;
  guint order;      /* the rank of its start record in nvtx.csv (the outer first at a full tie) */
  gboolean unended; /* nvtx.csv has no end for it: kept up to the trace's last timestamp */
} EmaTraceRange;

typedef struct {
  GArray *kernels;         /* EmaTraceKernel, sorted by start */
  GArray *copies;          /* EmaTraceCopy: memcpys and memsets, sorted by start */
  GArray *memory;          /* EmaTraceMemory */
  GArray *vmm;             /* EmaTraceVmm */
  GArray *ranges;          /* EmaTraceRange, sorted by start */
  guint unmatched_markers; /* a start without its end (a crash) or an end without its start */
  char *summary;           /* capture.txt, or NULL when absent */
  char *nvtx_path;         /* DIR/nvtx.csv, of whose lines the ranges' order is */
} EmaTrace;

/* Reads DIR/kernels.csv (required) and memcpy.csv, memset.csv, memory.csv, vmm.csv, nvtx.csv and
 * capture.txt (each optional). A malformed row is an error "FILE:LINE:COL: ...". A range whose
 * end is missing (the program died inside it) is kept, ending at the trace's last timestamp, and
 * counted in unmatched_markers. */
EmaTrace *ema_trace_load(const char *dir, GError **error);
void ema_trace_free(EmaTrace *trace);
G_DEFINE_AUTOPTR_CLEANUP_FUNC(EmaTrace, ema_trace_free)

/* the index of the range that owns each kernel (-1: none), one per kernel */
GArray *ema_trace_kernel_owners(const EmaTrace *trace);

/* DIR/ranges.csv (per range name: count, median/min/max of the summed kernel time and of the GPU
 * span of its kernels, kernels per range) and DIR/kernel-names.csv (per kernel name: count, total,
 * median, min, max duration). */
gboolean ema_trace_write_summaries(const EmaTrace *trace, const char *dir, GError **error);

/* Chrome trace JSON (the "traceEvents" array of complete events, microseconds from the first
 * record): kernels and copies on pid = device, tid = stream; NVTX ranges on pid "nvtx", tid =
 * depth; VMM calls on pid "vmm"; allocations as a counter of device bytes in use per device. */
gboolean ema_trace_write_chrome(const EmaTrace *trace, const char *path, GError **error);

/* The profile tables of hwmodels/profiles/README.md from the point ranges of a profiling workload:
 * a range named "ema.point TABLE KEY=VALUE KEY=VALUE ..." holds child ranges "ema.rep", one per
 * repeat (or "ema.rep xN": the repeat ran the operator N times back to back); a repeat's time is
 * the sum of the durations of the kernels it owns (over N), the point's time the median over its
 * repeats (std_us: their standard deviation). Each TABLE becomes OUT_DIR/TABLE.csv
 * with the point's keys as columns (in the order of the first point of the table; every point of a
 * table must name the same keys), then time_us,std_us,repeats, rows sorted by their keys
 * (numerically where both values are numbers). Where a table's points differ only in a `backend`
 * key, TABLE.csv keeps the fastest backend per key and TABLE-backends.csv every one. A point
 * without repeats, a repeat that owns no kernel, and a point or a repeat whose range never
 * ends (the workload stopped inside it) are errors. Each file is listed in
 * OUT_DIR's marker before it is written (output.h, EMA_OUTPUT_CLAIM_KEEP): one already there that
 * no marker lists is refused. *tables gets the file names written (sorted), when not NULL.
 * It is ema_trace_profile_points() then ema_trace_write_profile_points(). */
gboolean ema_trace_write_profiles(const EmaTrace *trace, const char *out_dir, GPtrArray **tables,
                                  GError **error);
/* The points of TRACE's profile read whole, nothing written: TABLE -> its points (one table per
 * entry; none where TRACE has no point range), or NULL with the error of the first range that
 * breaks the protocol above. So a caller finds every error before it touches an earlier profile. */
GHashTable *ema_trace_profile_points(const EmaTrace *trace, GError **error);
/* The tables of POINTS (ema_trace_profile_points) into OUT_DIR, as ema_trace_write_profiles. */
gboolean ema_trace_write_profile_points(GHashTable *points, const char *out_dir, GPtrArray **tables,
                                        GError **error);

G_END_DECLS
