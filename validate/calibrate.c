/* calibrate.c: `ema-validate calibrate` (calibrate.h). The run sets up two
 * big buffers per GPU, pinned host buffers, two streams per GPU and peer
 * access both ways, all owned by one arena; each measurement then borrows
 * them. A measurement is an Op (a copy or a streaming-read kernel on one
 * stream) or a pair of Ops started together, timed by ema_gpu_time();
 * concurrent measurements (interference) time each side with its own
 * events. GPU0 is the borrower, GPU1 the lender. */
#include "calibrate.h"

#include <math.h>
#include <stdio.h>
#include <string.h>

#include "calderive.h"
#include "calyaml.h"
#include "cudacheck.h"
#include "ema/run/experiment.h"
#include "ema/core/units.h"
#include "fill.h"
#include "gpu.h"
#include "kernels.h"
#include "report.h"
#include "vmm.h"

#define BORROWER 0
#define LENDER 1
#define MIN_BYTES ((guint64) 4 << 10)
#define FULL_MAX_BYTES ((guint64) 4 << 30)
#define QUICK_MAX_BYTES ((guint64) 256 << 20)
#define FULL_HOST_BYTES ((guint64) 1 << 30)
#define QUICK_HOST_BYTES ((guint64) 64 << 20)
#define INTERFERENCE_BYTES ((guint64) 1 << 30)
#define CHASE_BYTES ((guint64) 256 << 20)
#define CHASE_SLOT_BYTES 256
#define REMOTE_CHASE_STEPS 10000
#define LOCAL_CHASE_STEPS 20000
#define SINK_BYTES 64
#define CURSOR_OFFSET 32

typedef enum { OP_COPY, OP_READ } OpKind;

/* One piece of work on one stream. */
typedef struct {
  OpKind kind;
  int device; /* the stream's device */
  cudaStream_t stream;
  void *dst;                  /* OP_COPY: destination */
  const void *src;            /* OP_COPY: source; OP_READ: the buffer read */
  int dst_device, src_device; /* OP_COPY: -1 for host memory */
  guint64 bytes;
  guint passes; /* OP_READ */
} Op;

typedef struct {
  const EmaCalibrateOptions *options;
  EmaGpuArena *arena;
  EmaReport *report;
  EmaCalibrationRun *run; /* what the run knows besides its measurements */
  EmaKernelShape shape[2];
  cudaStream_t stream[2], side[2]; /* per GPU: the main stream and a second one */
  cudaEvent_t fork[2], join[2];    /* per GPU: synchronisation-only events */
  void *src[2], *dst[2], *sink[2]; /* per GPU: two buffers of max_bytes, a small sink */
  void *host_src, *host_dst;       /* pinned, host_bytes each */
  guint64 max_bytes, host_bytes;
  guint repeats, warmups;
} Calibration;

static const char *const gpu_names[2] = {"gpu0", "gpu1"};

/* "gpu0", "gpu1", or "host" for -1. */
static const char *place_name(int device) {
  return device < 0 ? "host" : gpu_names[device];
}

static gboolean enqueue_op(Calibration *c, const Op *op, GError **error) {
  if (!EMA_CUDA(op->device, error, cudaSetDevice(op->device)))
    return FALSE;
  if (op->kind == OP_READ)
    return EMA_CUDA(op->device, error,
                    ema_launch_stream_read(op->stream, &c->shape[op->device], op->src, op->bytes,
                                           op->passes, c->sink[op->device]));
  if (op->src_device >= 0 && op->dst_device >= 0 && op->src_device != op->dst_device)
    return EMA_CUDA(op->device, error,
                    cudaMemcpyPeerAsync(op->dst, op->dst_device, op->src, op->src_device, op->bytes,
                                        op->stream));
  return EMA_CUDA(op->device, error,
                  cudaMemcpyAsync(op->dst, op->src, op->bytes, cudaMemcpyDefault, op->stream));
}

typedef struct {
  Calibration *c;
  Op op;
} OneWork;

static gboolean work_one(gpointer data, GError **error) {
  OneWork *work = data;
  return enqueue_op(work->c, &work->op, error);
}

/* FIRST runs on the timed stream; SECOND is forked onto its own stream when
 * the first is enqueued and joined back, so the timed span covers both. */
typedef struct {
  Calibration *c;
  Op first, second;
} PairWork;

static gboolean work_pair(gpointer data, GError **error) {
  PairWork *work = data;
  Calibration *c = work->c;
  int a = work->first.device, b = work->second.device;
  return EMA_CUDA(a, error, cudaSetDevice(a)) &&
         EMA_CUDA(a, error, cudaEventRecord(c->fork[a], work->first.stream)) &&
         EMA_CUDA(b, error, cudaSetDevice(b)) &&
         EMA_CUDA(b, error, cudaStreamWaitEvent(work->second.stream, c->fork[a], 0)) &&
         enqueue_op(c, &work->second, error) &&
         EMA_CUDA(b, error, cudaEventRecord(c->join[b], work->second.stream)) &&
         enqueue_op(c, &work->first, error) &&
         EMA_CUDA(a, error, cudaStreamWaitEvent(work->first.stream, c->join[b], 0));
}

typedef struct {
  Calibration *c;
} EmptyWork;

static gboolean work_empty(gpointer data, GError **error) {
  EmptyWork *work = data;
  return EMA_CUDA(BORROWER, error, ema_launch_empty(work->c->stream[BORROWER]));
}

typedef struct {
  Calibration *c;
  void *cursor;
  guint steps;
} ChaseWork;

static gboolean work_chase(gpointer data, GError **error) {
  ChaseWork *work = data;
  return EMA_CUDA(BORROWER, error,
                  ema_launch_chase(work->c->stream[BORROWER], work->cursor, work->steps));
}

static void print_measurement(const EmaMeasurement *m) {
  if (m->rate_bytes > 0)
    printf("  %-52s %12.3f us %9.2f GB/s  (spread %.1f%%)\n", m->name, m->stats.median * 1e6,
           m->rate_bytes / m->stats.median / 1e9, ema_sample_spread_pct(&m->stats));
  else
    printf("  %-52s %12.3f us  (spread %.1f%%)\n", m->name, m->stats.median * 1e6,
           ema_sample_spread_pct(&m->stats));
  fflush(stdout);
}

/* Time WORK on STREAM of DEVICE and add it to the report. */
static const EmaMeasurement *measure(Calibration *c, int device, cudaStream_t stream,
                                     EmaGpuWork work, gpointer data, const char *group,
                                     const char *name, const char *src, const char *dst,
                                     guint64 bytes, double rate_bytes, GError **error) {
  g_autofree double *samples = g_new(double, c->repeats);
  const EmaMeasurement *m;
  if (!ema_gpu_time(device, stream, c->warmups, c->repeats, work, data, samples, error))
    return NULL;
  m = ema_report_add(c->report, group, name, src, dst, bytes, rate_bytes, samples, c->repeats);
  print_measurement(m);
  return m;
}

static const EmaMeasurement *measure_op(Calibration *c, const Op *op, const char *group,
                                        const char *name, const char *src, const char *dst,
                                        double rate_bytes, GError **error) {
  OneWork work = {c, *op};
  return measure(c, op->device, op->stream, work_one, &work, group, name, src, dst, op->bytes,
                 rate_bytes, error);
}

static const EmaMeasurement *measure_pair(Calibration *c, const Op *first, const Op *second,
                                          const char *group, const char *name, const char *src,
                                          const char *dst, GError **error) {
  PairWork work = {c, *first, *second};
  guint64 bytes = first->bytes + second->bytes;
  return measure(c, first->device, first->stream, work_pair, &work, group, name, src, dst, bytes,
                 (double) bytes, error);
}

static Op copy_op(int device, cudaStream_t stream, void *dst, int dst_device, const void *src,
                  int src_device, guint64 bytes) {
  Op op = {OP_COPY, device, stream, dst, src, dst_device, src_device, bytes, 0};
  return op;
}

static Op read_op(int device, cudaStream_t stream, const void *buffer, guint64 bytes,
                  guint passes) {
  Op op = {OP_READ, device, stream, NULL, buffer, -1, -1, bytes, passes};
  return op;
}

static char *sized_name(const char *prefix, guint64 bytes) {
  g_autofree char *size = ema_units_format_size(bytes);
  return g_strdup_printf("%s-%s", prefix, size);
}

/* ---- setup --------------------------------------------------------------- */

static gboolean setup(Calibration *c, GError **error) {
  for (int g = 0; g < 2; g++) {
    if (!EMA_CUDA(g, error, ema_kernel_shape(g, &c->shape[g])) ||
        !ema_gpu_stream_new(c->arena, g, &c->stream[g], error) ||
        !ema_gpu_stream_new(c->arena, g, &c->side[g], error) ||
        !ema_gpu_event_new(c->arena, g, FALSE, &c->fork[g], error) ||
        !ema_gpu_event_new(c->arena, g, FALSE, &c->join[g], error) ||
        !ema_gpu_malloc(c->arena, g, c->max_bytes, &c->src[g], error) ||
        !ema_gpu_malloc(c->arena, g, c->max_bytes, &c->dst[g], error) ||
        !ema_gpu_malloc(c->arena, g, SINK_BYTES, &c->sink[g], error) ||
        !EMA_CUDA(g, error,
                  ema_launch_fill_bf16(c->stream[g], &c->shape[g], c->src[g], c->max_bytes / 2,
                                       EMA_SEED_CALIBRATION + g)) ||
        !EMA_CUDA(g, error,
                  ema_launch_fill_bf16(c->stream[g], &c->shape[g], c->dst[g], c->max_bytes / 2,
                                       EMA_SEED_CALIBRATION + 2 + g)) ||
        !EMA_CUDA(g, error, cudaStreamSynchronize(c->stream[g])))
      return FALSE;
  }
  if (!ema_gpu_peer_enable(c->arena, BORROWER, LENDER, error) ||
      !ema_gpu_peer_enable(c->arena, LENDER, BORROWER, error) ||
      !ema_gpu_host_malloc(c->arena, c->host_bytes, &c->host_src, error) ||
      !ema_gpu_host_malloc(c->arena, c->host_bytes, &c->host_dst, error))
    return FALSE;
  memset(c->host_src, 0x5a, c->host_bytes);
  memset(c->host_dst, 0xa5, c->host_bytes);
  return TRUE;
}

/* ---- measurements -------------------------------------------------------- */

/* Bytes over the median time of the measurement PREFIX-BYTES (measured). */
static double measured_rate(const Calibration *c, const char *prefix, guint64 bytes) {
  g_autofree char *name = sized_name(prefix, bytes);
  const EmaMeasurement *m = ema_report_find(c->report, name);
  g_assert(m != NULL);
  return (double) m->bytes / m->stats.median;
}

/* Local reads and copies on GPU0, and the empty kernel. */
static gboolean measure_local(Calibration *c, GError **error) {
  EmptyWork empty = {c};
  printf("local (GPU0)\n");
  if (measure(c, BORROWER, c->stream[BORROWER], work_empty, &empty, "local", EMA_CAL_EMPTY_KERNEL,
              "gpu0", "gpu0", 0, 0, error) == NULL)
    return FALSE;
  for (guint64 s = MIN_BYTES; s <= c->max_bytes; s *= 4) {
    g_autofree char *read_name = sized_name(EMA_CAL_LOCAL_READ, s);
    g_autofree char *copy_name = sized_name(EMA_CAL_LOCAL_COPY, s);
    Op read = read_op(BORROWER, c->stream[BORROWER], c->src[BORROWER], s, 1);
    Op copy = copy_op(BORROWER, c->stream[BORROWER], c->dst[BORROWER], BORROWER, c->src[BORROWER],
                      BORROWER, s);
    if (measure_op(c, &read, "local", read_name, "gpu0", "gpu0", (double) s, error) == NULL ||
        measure_op(c, &copy, "local", copy_name, "gpu0", "gpu0", 2.0 * s, error) == NULL)
      return FALSE;
  }
  return TRUE;
}

/* A kernel on GPU0 reading GPU1's memory through peer access. */
static gboolean measure_peer_read(Calibration *c, GError **error) {
  printf("peer-read (kernel on GPU0, memory on GPU1)\n");
  for (guint64 s = MIN_BYTES; s <= c->max_bytes; s *= 4) {
    g_autofree char *name = sized_name(EMA_CAL_PEER_READ, s);
    Op read = read_op(BORROWER, c->stream[BORROWER], c->src[LENDER], s, 1);
    if (measure_op(c, &read, "peer-read", name, "gpu1", "gpu0", (double) s, error) == NULL)
      return FALSE;
  }
  return TRUE;
}

/* Peer copies: push and pull, both directions, and both at once. */
static gboolean measure_peer_copies(Calibration *c, GError **error) {
  printf("peer-copy (cudaMemcpyPeerAsync; push: on the source's stream, pull: on the "
         "destination's)\n");
  for (guint64 s = MIN_BYTES; s <= c->max_bytes; s *= 4) {
    g_autofree char *push_01 = sized_name(EMA_CAL_PUSH_0TO1, s);
    g_autofree char *push_10 = sized_name(EMA_CAL_PUSH_1TO0, s);
    g_autofree char *pull_10 = sized_name(EMA_CAL_PULL_1TO0, s);
    g_autofree char *pull_01 = sized_name(EMA_CAL_PULL_0TO1, s);
    g_autofree char *both = sized_name(EMA_CAL_PEER_BOTH, s);
    Op push_0to1 = copy_op(BORROWER, c->stream[BORROWER], c->dst[LENDER], LENDER, c->src[BORROWER],
                           BORROWER, s);
    Op push_1to0 =
        copy_op(LENDER, c->stream[LENDER], c->dst[BORROWER], BORROWER, c->src[LENDER], LENDER, s);
    Op pull_1to0 = copy_op(BORROWER, c->stream[BORROWER], c->dst[BORROWER], BORROWER,
                           c->src[LENDER], LENDER, s);
    Op pull_0to1 =
        copy_op(LENDER, c->stream[LENDER], c->dst[LENDER], LENDER, c->src[BORROWER], BORROWER, s);
    if (measure_op(c, &push_0to1, "peer-copy", push_01, "gpu0", "gpu1", (double) s, error) ==
            NULL ||
        measure_op(c, &push_1to0, "peer-copy", push_10, "gpu1", "gpu0", (double) s, error) ==
            NULL ||
        measure_op(c, &pull_1to0, "peer-copy", pull_10, "gpu1", "gpu0", (double) s, error) ==
            NULL ||
        measure_op(c, &pull_0to1, "peer-copy", pull_01, "gpu0", "gpu1", (double) s, error) ==
            NULL ||
        measure_pair(c, &push_0to1, &push_1to0, "peer-copy", both, "both", "both", error) == NULL)
      return FALSE;
  }
  return TRUE;
}

/* Dependent-load latency: one thread on GPU0 chasing pointers through
 * BUFFER (on OWNER), STEPS loads per repeat. */
static gboolean chase_latency(Calibration *c, int owner, void *buffer, guint steps,
                              const char *name, GError **error) {
  void *cursor = (char *) c->sink[BORROWER] + CURSOR_OFFSET;
  guint64 start = (guint64) (uintptr_t) buffer;
  guint64 bytes = MIN(CHASE_BYTES, c->max_bytes);
  guint64 slots = bytes / CHASE_SLOT_BYTES;
  ChaseWork work = {c, cursor, steps};
  const EmaMeasurement *m;

  while (slots & (slots - 1)) /* a power of two, for the full-period LCG */
    slots &= slots - 1;
  if (!EMA_CUDA(owner, error, cudaSetDevice(owner)) ||
      !EMA_CUDA(owner, error,
                ema_launch_chase_init(c->stream[owner], &c->shape[owner], buffer, slots,
                                      CHASE_SLOT_BYTES)) ||
      !EMA_CUDA(owner, error, cudaStreamSynchronize(c->stream[owner])) ||
      !EMA_CUDA(BORROWER, error, cudaSetDevice(BORROWER)) ||
      !EMA_CUDA(BORROWER, error,
                cudaMemcpyAsync(cursor, &start, sizeof start, cudaMemcpyHostToDevice,
                                c->stream[BORROWER])) ||
      !EMA_CUDA(BORROWER, error, cudaStreamSynchronize(c->stream[BORROWER])))
    return FALSE;
  m = measure(c, BORROWER, c->stream[BORROWER], work_chase, &work, "latency", name,
              gpu_names[owner], "gpu0", 0, 0, error);
  if (m == NULL)
    return FALSE;
  printf("  %-52s %12.1f ns per load\n", name, m->stats.median / steps * 1e9);
  return TRUE;
}

static gboolean measure_latency(Calibration *c, GError **error) {
  printf("latency (pointer chase, one thread on GPU0)\n");
  return chase_latency(c, LENDER, c->dst[LENDER], REMOTE_CHASE_STEPS, EMA_CAL_REMOTE_LATENCY,
                       error) &&
         chase_latency(c, BORROWER, c->dst[BORROWER], LOCAL_CHASE_STEPS, EMA_CAL_LOCAL_LATENCY,
                       error);
}

/* Pinned host copies to and from GPU0, each way and both at once. */
static gboolean measure_host(Calibration *c, GError **error) {
  printf("host-copy (pinned host memory <-> GPU0)\n");
  for (guint64 s = MIN_BYTES; s <= c->host_bytes; s *= 4) {
    g_autofree char *h2d_name = sized_name(EMA_CAL_H2D, s);
    g_autofree char *d2h_name = sized_name(EMA_CAL_D2H, s);
    g_autofree char *both_name = sized_name(EMA_CAL_HOST_BOTH, s);
    Op to_device =
        copy_op(BORROWER, c->stream[BORROWER], c->dst[BORROWER], BORROWER, c->host_src, -1, s);
    Op to_host =
        copy_op(BORROWER, c->stream[BORROWER], c->host_dst, -1, c->src[BORROWER], BORROWER, s);
    Op to_host_side = to_host;
    to_host_side.stream = c->side[BORROWER];
    if (measure_op(c, &to_device, "host-copy", h2d_name, "host", "gpu0", (double) s, error) ==
            NULL ||
        measure_op(c, &to_host, "host-copy", d2h_name, "gpu0", "host", (double) s, error) == NULL ||
        measure_pair(c, &to_device, &to_host_side, "host-copy", both_name, "both", "both", error) ==
            NULL)
      return FALSE;
  }
  return TRUE;
}

static gboolean measure_vmm(Calibration *c, GError **error) {
  EmaVmmSetup vmm = {
      .lender = LENDER,
      .borrower = BORROWER,
      .single_repeats = c->options->quick ? 10 : 50,
      .batch_slices = c->options->quick ? 64 : 512,
      .batch_repeats = c->options->quick ? 2 : 5,
      .read_repeats = c->repeats,
      .borrower_stream = c->stream[BORROWER],
      .borrower_shape = &c->shape[BORROWER],
      .borrower_sink = c->sink[BORROWER],
  };
  printf("vmm (cuMem* on the host: memory created on GPU1, mapped for GPU0)\n");
  return ema_vmm_measure(&vmm, c->report, &c->run->vmm_granularity_min,
                         &c->run->vmm_granularity_rec, error);
}

/* Medians of two ops, each alone and both started together. */
typedef struct {
  double first_alone, second_alone, first_together, second_together;
} Concurrent;

static gboolean run_together(Calibration *c, const Op *first, const Op *second, cudaEvent_t go,
                             cudaEvent_t first_start, cudaEvent_t first_stop,
                             cudaEvent_t second_start, cudaEvent_t second_stop, double *first_s,
                             double *second_s, GError **error) {
  int a = first->device, b = second->device;
  float first_ms = 0, second_ms = 0;
  gboolean ok = EMA_CUDA(a, error, cudaSetDevice(a)) &&
                EMA_CUDA(a, error, cudaEventRecord(go, first->stream)) &&
                EMA_CUDA(b, error, cudaSetDevice(b)) &&
                EMA_CUDA(b, error, cudaStreamWaitEvent(second->stream, go, 0)) &&
                EMA_CUDA(b, error, cudaEventRecord(second_start, second->stream)) &&
                enqueue_op(c, second, error) &&
                EMA_CUDA(b, error, cudaEventRecord(second_stop, second->stream)) &&
                EMA_CUDA(a, error, cudaSetDevice(a)) &&
                EMA_CUDA(a, error, cudaEventRecord(first_start, first->stream)) &&
                enqueue_op(c, first, error) &&
                EMA_CUDA(a, error, cudaEventRecord(first_stop, first->stream)) &&
                EMA_CUDA(a, error, cudaEventSynchronize(first_stop)) &&
                EMA_CUDA(b, error, cudaEventSynchronize(second_stop)) &&
                EMA_CUDA(a, error, cudaEventElapsedTime(&first_ms, first_start, first_stop)) &&
                EMA_CUDA(b, error, cudaEventElapsedTime(&second_ms, second_start, second_stop));
  *first_s = first_ms * 1e-3;
  *second_s = second_ms * 1e-3;
  return ok;
}

static gboolean measure_concurrent(Calibration *c, const char *name, const char *first_label,
                                   const Op *first, const char *second_label, const Op *second,
                                   Concurrent *out, GError **error) {
  g_autoptr(EmaGpuArena) arena = ema_gpu_arena_new();
  g_autofree double *first_samples = g_new(double, c->repeats);
  g_autofree double *second_samples = g_new(double, c->repeats);
  g_autofree char *first_alone = g_strdup_printf("%s:%s-alone", name, first_label);
  g_autofree char *second_alone = g_strdup_printf("%s:%s-alone", name, second_label);
  g_autofree char *first_together = g_strdup_printf("%s:%s-together", name, first_label);
  g_autofree char *second_together = g_strdup_printf("%s:%s-together", name, second_label);
  const char *first_src = first->kind == OP_READ ? "-" : place_name(first->src_device);
  const char *second_src = second->kind == OP_READ ? "-" : place_name(second->src_device);
  const EmaMeasurement *m;
  cudaEvent_t go, first_start, first_stop, second_start, second_stop;
  gboolean ok;

  if ((m = measure_op(c, first, "interference", first_alone, first_src, gpu_names[first->device],
                      (double) first->bytes * MAX(first->passes, 1), error)) == NULL)
    return FALSE;
  out->first_alone = m->stats.median;
  if ((m = measure_op(c, second, "interference", second_alone, second_src,
                      gpu_names[second->device], (double) second->bytes * MAX(second->passes, 1),
                      error)) == NULL)
    return FALSE;
  out->second_alone = m->stats.median;

  ok = ema_gpu_event_new(arena, first->device, FALSE, &go, error) &&
       ema_gpu_event_new(arena, first->device, TRUE, &first_start, error) &&
       ema_gpu_event_new(arena, first->device, TRUE, &first_stop, error) &&
       ema_gpu_event_new(arena, second->device, TRUE, &second_start, error) &&
       ema_gpu_event_new(arena, second->device, TRUE, &second_stop, error);
  for (guint r = 0; ok && r < c->warmups + c->repeats; r++) {
    double first_s, second_s;
    ok = run_together(c, first, second, go, first_start, first_stop, second_start, second_stop,
                      &first_s, &second_s, error);
    if (ok && r >= c->warmups) {
      first_samples[r - c->warmups] = first_s;
      second_samples[r - c->warmups] = second_s;
    }
  }
  if (!ok) {
    (void) cudaDeviceSynchronize();
    (void) cudaGetLastError();
  }
  if (!ema_gpu_arena_release(arena, error) || !ok)
    return FALSE;

  m = ema_report_add(c->report, "interference", first_together, first_src, gpu_names[first->device],
                     first->bytes, 0, first_samples, c->repeats);
  print_measurement(m);
  out->first_together = m->stats.median;
  m = ema_report_add(c->report, "interference", second_together, second_src,
                     gpu_names[second->device], second->bytes, 0, second_samples, c->repeats);
  print_measurement(m);
  out->second_together = m->stats.median;
  return TRUE;
}

/* Passes of a streaming read over BYTES that take about SECONDS. */
static guint passes_for(double seconds, guint64 bytes, double bandwidth) {
  double pass = (double) bytes / bandwidth;
  return (guint) MAX(1, llround(seconds / pass));
}

/* A kernel on KERNEL_DEVICE streaming its own HBM against OTHER (a copy or
 * a read on another stream, labelled OTHER_LABEL): once with the kernel
 * shorter than OTHER (NAME-kernel-overlapped: the kernel's slowdown, it is
 * overlapped all along) and once longer (NAME-OTHER_LABEL-overlapped:
 * OTHER's slowdown). OTHER_SECONDS is OTHER's time alone. */
static gboolean measure_interference_pair(Calibration *c, const char *name, int kernel_device,
                                          cudaStream_t kernel_stream, const void *kernel_buffer,
                                          const char *other_label, const Op *other,
                                          double other_seconds, GError **error) {
  guint64 bytes = MIN(INTERFERENCE_BYTES, c->max_bytes);
  double hbm = measured_rate(c, EMA_CAL_LOCAL_READ, c->max_bytes);
  guint short_passes = passes_for(0.6 * other_seconds, bytes, hbm);
  guint long_passes = passes_for(1.8 * other_seconds, bytes, hbm) + 1;
  Op short_kernel = read_op(kernel_device, kernel_stream, kernel_buffer, bytes, short_passes);
  Op long_kernel = read_op(kernel_device, kernel_stream, kernel_buffer, bytes, long_passes);
  g_autofree char *kernel_case = g_strdup_printf("%s-kernel-overlapped", name);
  g_autofree char *other_case = g_strdup_printf("%s-%s-overlapped", name, other_label);
  Concurrent kernel_run, other_run;

  if (!measure_concurrent(c, kernel_case, "kernel", &short_kernel, other_label, other, &kernel_run,
                          error) ||
      !measure_concurrent(c, other_case, "kernel", &long_kernel, other_label, other, &other_run,
                          error))
    return FALSE;
  printf("  %-52s %12.3f\n  %-52s %12.3f\n", "kernel slowdown (with / without)",
         kernel_run.first_together / kernel_run.first_alone, "other slowdown (with / without)",
         other_run.second_together / other_run.second_alone);
  return TRUE;
}

static gboolean measure_interference(Calibration *c, GError **error) {
  guint64 bytes = MIN(INTERFERENCE_BYTES, c->max_bytes);
  double copy_seconds = (double) bytes / measured_rate(c, EMA_CAL_PULL_1TO0, bytes);
  double read_seconds = (double) bytes / measured_rate(c, EMA_CAL_PEER_READ, bytes);
  /* GPU0 pulls GPU1's dst buffer; the kernels read the src buffers. */
  Op pull = copy_op(BORROWER, c->side[BORROWER], c->dst[BORROWER], BORROWER, c->dst[LENDER], LENDER,
                    bytes);
  Op direct = read_op(BORROWER, c->stream[BORROWER], c->dst[LENDER], bytes, 1);

  printf("interference (median times, with and without the other load)\n");
  return measure_interference_pair(c, EMA_CAL_LENDER_COPY, LENDER, c->stream[LENDER],
                                   c->src[LENDER], EMA_CAL_LENDER_COPY_OTHER, &pull, copy_seconds,
                                   error) &&
         measure_interference_pair(c, EMA_CAL_LENDER_READ, LENDER, c->stream[LENDER],
                                   c->src[LENDER], EMA_CAL_LENDER_READ_OTHER, &direct, read_seconds,
                                   error) &&
         measure_interference_pair(c, EMA_CAL_BORROWER_COPY, BORROWER, c->stream[BORROWER],
                                   c->src[BORROWER], EMA_CAL_BORROWER_COPY_OTHER, &pull,
                                   copy_seconds, error);
}

/* A pipelined prefetch: chunk i+1 copied from GPU1 into one of two staging
 * slots on GPU0's side stream while a compute stage on GPU0's main stream
 * streams local memory and then the staged chunk i. */
typedef struct {
  Calibration *c;
  guint chunks;
  guint64 chunk, local_bytes;
  gboolean copies, compute;
  cudaEvent_t *copied, *consumed;
} PipelineWork;

static void *staging_slot(const PipelineWork *w, guint i) {
  return (char *) w->c->dst[BORROWER] + (i % 2) * w->chunk;
}

static gboolean enqueue_copy_chunk(PipelineWork *w, cudaStream_t stream, guint i, GError **error) {
  const char *source = (const char *) w->c->src[LENDER] + (guint64) i * w->chunk;
  return EMA_CUDA(
      BORROWER, error,
      cudaMemcpyPeerAsync(staging_slot(w, i), BORROWER, source, LENDER, w->chunk, stream));
}

static gboolean enqueue_compute_stage(PipelineWork *w, guint i, GError **error) {
  Calibration *c = w->c;
  cudaStream_t stream = c->stream[BORROWER];
  return EMA_CUDA(BORROWER, error,
                  ema_launch_stream_read(stream, &c->shape[BORROWER], c->src[BORROWER],
                                         w->local_bytes, 1, c->sink[BORROWER])) &&
         EMA_CUDA(BORROWER, error,
                  ema_launch_stream_read(stream, &c->shape[BORROWER], staging_slot(w, i), w->chunk,
                                         1, c->sink[BORROWER]));
}

static gboolean work_pipeline(gpointer data, GError **error) {
  PipelineWork *w = data;
  Calibration *c = w->c;
  cudaStream_t main_stream = c->stream[BORROWER], copy_stream = c->side[BORROWER];
  gboolean ok = EMA_CUDA(BORROWER, error, cudaSetDevice(BORROWER));

  if (!w->compute) {
    for (guint i = 0; ok && i < w->chunks; i++)
      ok = enqueue_copy_chunk(w, main_stream, i, error);
    return ok;
  }
  if (!w->copies) {
    for (guint i = 0; ok && i < w->chunks; i++)
      ok = enqueue_compute_stage(w, i, error);
    return ok;
  }
  ok = ok && EMA_CUDA(BORROWER, error, cudaEventRecord(c->fork[BORROWER], main_stream)) &&
       EMA_CUDA(BORROWER, error, cudaStreamWaitEvent(copy_stream, c->fork[BORROWER], 0));
  for (guint i = 0; ok && i < w->chunks; i++) {
    if (i >= 2)
      ok = EMA_CUDA(BORROWER, error, cudaStreamWaitEvent(copy_stream, w->consumed[i - 2], 0));
    ok = ok && enqueue_copy_chunk(w, copy_stream, i, error) &&
         EMA_CUDA(BORROWER, error, cudaEventRecord(w->copied[i], copy_stream)) &&
         EMA_CUDA(BORROWER, error, cudaStreamWaitEvent(main_stream, w->copied[i], 0)) &&
         enqueue_compute_stage(w, i, error) &&
         EMA_CUDA(BORROWER, error, cudaEventRecord(w->consumed[i], main_stream));
  }
  return ok;
}

static gboolean measure_overlap(Calibration *c, GError **error) {
  g_autoptr(EmaGpuArena) arena = ema_gpu_arena_new();
  guint chunks = c->options->quick ? 8 : 16;
  guint64 chunk = c->options->quick ? (guint64) 16 << 20 : (guint64) 64 << 20;
  /* The compute stage reads about as long as a chunk's copy takes. */
  double ratio = measured_rate(c, EMA_CAL_LOCAL_READ, c->max_bytes) /
                 measured_rate(c, EMA_CAL_PULL_1TO0, c->max_bytes);
  guint64 local = (guint64) MAX(1.0, ratio - 1.0) * chunk;
  g_autofree cudaEvent_t *copied = g_new0(cudaEvent_t, chunks);
  g_autofree cudaEvent_t *consumed = g_new0(cudaEvent_t, chunks);
  PipelineWork work = {c,     chunks, chunk,  MIN(local, c->max_bytes) / 16 * 16,
                       FALSE, FALSE,  copied, consumed};
  gboolean ok = TRUE;

  printf("prefetch overlap (%u chunks of %" G_GUINT64_FORMAT " MiB, GPU1 -> GPU0)\n", chunks,
         chunk >> 20);
  for (guint i = 0; ok && i < chunks; i++)
    ok = ema_gpu_event_new(arena, BORROWER, FALSE, &copied[i], error) &&
         ema_gpu_event_new(arena, BORROWER, FALSE, &consumed[i], error);
  work.copies = TRUE;
  ok = ok && measure(c, BORROWER, c->stream[BORROWER], work_pipeline, &work, "overlap",
                     EMA_CAL_OVERLAP_COPIES, "gpu1", "gpu0", chunks * chunk,
                     (double) chunks * chunk, error) != NULL;
  work.copies = FALSE;
  work.compute = TRUE;
  ok = ok && measure(c, BORROWER, c->stream[BORROWER], work_pipeline, &work, "overlap",
                     EMA_CAL_OVERLAP_COMPUTE, "gpu0", "gpu0", chunks * (work.local_bytes + chunk),
                     0, error) != NULL;
  work.copies = TRUE;
  ok = ok && measure(c, BORROWER, c->stream[BORROWER], work_pipeline, &work, "overlap",
                     EMA_CAL_OVERLAP_PIPELINED, "gpu1", "gpu0", chunks * chunk, 0, error) != NULL;
  if (!ok) {
    (void) cudaDeviceSynchronize();
    (void) cudaGetLastError();
  }
  c->run->overlap_chunks = chunks;
  c->run->overlap_chunk_bytes = chunk;
  return ema_gpu_arena_release(arena, error) && ok;
}

/* ---- the run ------------------------------------------------------------- */

static char *gpu_description(int device, GError **error) {
  struct cudaDeviceProp prop;
  char bus[32] = "";
  if (!EMA_CUDA(device, error, cudaGetDeviceProperties(&prop, device)) ||
      !EMA_CUDA(device, error, cudaDeviceGetPCIBusId(bus, sizeof bus, device)))
    return NULL;
  return g_strdup_printf("GPU%d %s (PCI %s, %d SMs, %.1f GiB)", device, prop.name, bus,
                         prop.multiProcessorCount, prop.totalGlobalMem / 1073741824.0);
}

gboolean ema_calibrate_run(const EmaCalibrateOptions *options, GError **error) {
  g_autoptr(EmaGpuArena) arena = NULL;
  g_autoptr(EmaReport) report = ema_report_new();
  g_autoptr(EmaServerSpec) reference = NULL;
  g_autoptr(EmaCalibrationRun) run = g_new0(EmaCalibrationRun, 1);
  g_autoptr(GDateTime) now = g_date_time_new_now_utc();
  g_autofree char *stamp = g_date_time_format(now, "%Y%m%d-%H%M%S");
  g_autofree char *gpu0 = NULL, *gpu1 = NULL, *output = NULL;
  EmaCalibrationOutput out = {0};
  Calibration c = {0};
  struct cudaDeviceProp prop;
  size_t free_bytes = 0, total_bytes = 0;
  int count = 0;
  gboolean ok;

  reference = ema_server_load(options->reference, error);
  if (reference == NULL)
    return FALSE;
  if (!ema_cuda_device_count(&count, error))
    return FALSE;
  if (count < 2) {
    g_set_error(error, EMA_VALIDATE_ERROR, EMA_VALIDATE_ERROR_NO_DEVICE,
                "calibrate measures a GPU pair and needs 2 CUDA devices; found %d", count);
    return FALSE;
  }
  if (!EMA_CUDA(BORROWER, error, cudaGetDeviceProperties(&prop, BORROWER)) ||
      !EMA_CUDA(BORROWER, error, cudaSetDevice(BORROWER)) ||
      !EMA_CUDA(BORROWER, error, cudaMemGetInfo(&free_bytes, &total_bytes)) ||
      (gpu0 = gpu_description(BORROWER, error)) == NULL ||
      (gpu1 = gpu_description(LENDER, error)) == NULL)
    return FALSE;

  run->name =
      options->name ? g_strdup(options->name) : ema_calibration_default_name(prop.name, count);
  run->date = g_date_time_format(now, "%Y-%m-%dT%H:%M:%SZ");
  run->command = g_strdup(options->command);
  run->gpu_name = g_strdup(prop.name);
  run->gpu_list = g_strdup_printf("%s; %s (of %d)", gpu0, gpu1, count);
  run->driver_version = ema_nvidia_driver_version();
  run->cuda_versions = ema_cuda_versions();
  run->results_dir = options->results_dir
                         ? g_strdup(options->results_dir)
                         : g_strdup_printf("results/calibrate-%s-%s", run->name, stamp);
  run->reference_name = g_strdup(reference->name);
  run->gpus = count;
  run->topology = options->topology;
  run->hbm_capacity = free_bytes;
  run->hbm_total = total_bytes;
  run->matrix_flops = reference->gpu.matrix_flops;
  run->repeats = options->repeats ? options->repeats : (options->quick ? 5 : 20);
  run->warmups = options->quick ? 1 : 3;
  run->remote_chase_steps = REMOTE_CHASE_STEPS;
  run->local_chase_steps = LOCAL_CHASE_STEPS;
  output = options->output ? g_strdup(options->output)
                           : g_strdup_printf("hwmodels/calibration/%s.yaml", run->name);

  /* the folder is claimed as every output folder is (calderive.h), once the GPUs are found and
   * before the first measurement: another command's folder is refused before minutes of
   * measuring, and an earlier calibration's files there go */
  if (!ema_calibration_claim_results(run->results_dir, error))
    return FALSE;

  c.options = options;
  c.arena = arena = ema_gpu_arena_new();
  c.report = report;
  c.run = run;
  c.max_bytes = options->quick ? QUICK_MAX_BYTES : FULL_MAX_BYTES;
  c.host_bytes = options->quick ? QUICK_HOST_BYTES : FULL_HOST_BYTES;
  c.repeats = run->repeats;
  c.warmups = run->warmups;

  printf("calibrate %s: %s\n%s; CUDA %s\n", run->name, run->gpu_list, run->driver_version,
         run->cuda_versions);
  ok = setup(&c, error) && measure_local(&c, error) && measure_peer_read(&c, error) &&
       measure_peer_copies(&c, error) && measure_latency(&c, error) && measure_host(&c, error) &&
       measure_vmm(&c, error) && measure_interference(&c, error) && measure_overlap(&c, error);
  if (!ok) {
    (void) cudaDeviceSynchronize();
    (void) cudaGetLastError();
  }
  ok = ema_gpu_arena_release(arena, error) && ok;
  if (!ok)
    return FALSE;

  out.results_dir = run->results_dir;
  out.new_run = TRUE;
  out.output = output;
  out.reference = reference;
  out.log = stdout;
  return ema_calibration_write_results(report, run, &out, error);
}
