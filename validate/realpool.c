/* realpool.c: `ema-validate pool` (realpool.h): the CUDA backend of the
 * pool ledger, the lender's own decode running beside it, the scenario's
 * ticks and what they measured. */
#include "realpool.h"

#include <errno.h>
#include <math.h>
#include <stdio.h>
#include <string.h>
#include <time.h>

#include "cudacheck.h"
#include "decode.h"
#include "decodeplan.h"
#include "report.h"
#include "ema/run/output.h"
#include "ema/hw/steptime.h"
#include "fill.h"
#include "gpu.h"
#include "kernels.h"
#include "poolfake.h"
#include "poolmem.h"

#define SLICE EMA_SLICE_BYTES
#define N_GPUS 2
#define BORROWER 0
#define LENDER 1
#define MARGIN ((guint64) 1 << 30)      /* free memory left beside a region (ballast) */
#define HOST_SWAP ((guint64) 256 << 20) /* pinned ring that data sent to host lands in */
#define LENDER_DEPTH 3                  /* decode steps queued ahead */
#define CHECK_ELEMENTS 16               /* at most, per read back */
#define WARM_SEED 7
#define GEMV_TOLERANCE 1e-4
#define ATTENTION_ABS_TOLERANCE 1e-4
#define ATTENTION_REL_TOLERANCE 1e-3

static double wall(void) {
  struct timespec t;
  clock_gettime(CLOCK_MONOTONIC, &t);
  return (double) t.tv_sec + (double) t.tv_nsec * 1e-9;
}

/* ---- the CUDA backend -------------------------------------------------------------- */

typedef struct {
  guint64 dst, src, bytes;
} PendingCopy;

typedef struct {
  const EmaDriverApi *api;
  cudaStream_t streams[N_GPUS];
  EmaKernelShape shapes[N_GPUS];
  PendingCopy pending[N_GPUS];
  char *host;
  guint64 host_bytes, host_at;
} Cuda;

static gboolean cu_create(gpointer data, guint device, guint64 *handle, GError **error) {
  Cuda *c = data;
  CUmemAllocationProp prop;
  CUmemGenericAllocationHandle h = 0;
  memset(&prop, 0, sizeof prop);
  prop.type = CU_MEM_ALLOCATION_TYPE_PINNED;
  prop.location.type = CU_MEM_LOCATION_TYPE_DEVICE;
  prop.location.id = (int) device;
  if (!EMA_CUDA((int) device, error, cudaSetDevice((int) device)) ||
      !EMA_CU((int) device, error, c->api->mem_create(&h, SLICE, &prop, 0)))
    return FALSE;
  *handle = h;
  return TRUE;
}

static gboolean cu_release(gpointer data, guint device, guint64 handle, GError **error) {
  Cuda *c = data;
  return EMA_CU((int) device, error, c->api->mem_release((CUmemGenericAllocationHandle) handle));
}

static gboolean cu_reserve(gpointer data, guint device, guint64 bytes, guint64 hint, guint64 *va,
                           GError **error) {
  Cuda *c = data;
  CUdeviceptr base = 0;
  if (!EMA_CUDA((int) device, error, cudaSetDevice((int) device)))
    return FALSE;
  /* the address asked for is a hint, which some drivers refuse outright
   * rather than place the range elsewhere: then without it */
  if (hint == 0 || c->api->mem_address_reserve(&base, bytes, 0, hint, 0) != CUDA_SUCCESS) {
    base = 0;
    if (!EMA_CU((int) device, error, c->api->mem_address_reserve(&base, bytes, 0, 0, 0)))
      return FALSE;
  }
  *va = base;
  return TRUE;
}

static gboolean cu_unreserve(gpointer data, guint device, guint64 va, guint64 bytes,
                             GError **error) {
  Cuda *c = data;
  return EMA_CU((int) device, error, c->api->mem_address_free(va, bytes));
}

static gboolean cu_map(gpointer data, guint device, guint64 va, guint64 handle, GError **error) {
  Cuda *c = data;
  return EMA_CU((int) device, error,
                c->api->mem_map(va, SLICE, 0, (CUmemGenericAllocationHandle) handle, 0));
}

static gboolean cu_unmap(gpointer data, guint device, guint64 va, GError **error) {
  Cuda *c = data;
  return EMA_CU((int) device, error, c->api->mem_unmap(va, SLICE));
}

static gboolean cu_set_access(gpointer data, guint device, guint64 va, guint64 bytes,
                              GError **error) {
  Cuda *c = data;
  CUmemAccessDesc access;
  memset(&access, 0, sizeof access);
  access.location.type = CU_MEM_LOCATION_TYPE_DEVICE;
  access.location.id = (int) device;
  access.flags = CU_MEM_ACCESS_FLAGS_PROT_READWRITE;
  return EMA_CU((int) device, error, c->api->mem_set_access(va, bytes, &access, 1));
}

/* Make DEVICE current (its stream takes work next) and issue its merged
 * copy, if any. */
static gboolean flush(Cuda *c, guint device, GError **error) {
  PendingCopy *p = &c->pending[device];
  guint64 bytes = p->bytes;
  if (!EMA_CUDA((int) device, error, cudaSetDevice((int) device)))
    return FALSE;
  if (bytes == 0)
    return TRUE;
  p->bytes = 0;
  return EMA_CUDA((int) device, error,
                  cudaMemcpyAsync((void *) (uintptr_t) p->dst, (const void *) (uintptr_t) p->src,
                                  bytes, cudaMemcpyDeviceToDevice, c->streams[device]));
}

static gboolean cu_fill(gpointer data, guint device, guint64 va, guint64 bytes, guint64 seed,
                        guint64 index, GError **error) {
  Cuda *c = data;
  return flush(c, device, error) &&
         EMA_CUDA((int) device, error,
                  ema_launch_fill_bf16(c->streams[device], &c->shapes[device],
                                       (void *) (uintptr_t) va, bytes / 2,
                                       ema_pool_mem_fill_seed(seed, index)));
}

static gboolean cu_copy(gpointer data, guint device, guint64 dst, guint64 src, guint64 bytes,
                        GError **error) {
  Cuda *c = data;
  PendingCopy *p = &c->pending[device];
  if (p->bytes > 0 && p->dst + p->bytes == dst && p->src + p->bytes == src) {
    p->bytes += bytes;
    return TRUE;
  }
  if (!flush(c, device, error))
    return FALSE;
  *p = (PendingCopy){dst, src, bytes};
  return TRUE;
}

static gboolean cu_to_host(gpointer data, guint device, guint64 src, guint64 bytes,
                           GError **error) {
  Cuda *c = data;
  guint64 done = 0;
  if (!flush(c, device, error))
    return FALSE;
  while (done < bytes) {
    guint64 n = MIN(bytes - done, c->host_bytes - c->host_at);
    if (!EMA_CUDA((int) device, error,
                  cudaMemcpyAsync(c->host + c->host_at, (const void *) (uintptr_t) (src + done), n,
                                  cudaMemcpyDeviceToHost, c->streams[device])))
      return FALSE;
    c->host_at = (c->host_at + n) % c->host_bytes;
    done += n;
  }
  return TRUE;
}

static gboolean cu_sync(gpointer data, guint device, GError **error) {
  Cuda *c = data;
  return flush(c, device, error) &&
         EMA_CUDA((int) device, error, cudaStreamSynchronize(c->streams[device]));
}

static gboolean cu_check(gpointer data, guint device, guint64 va, guint64 bytes, guint64 seed,
                         guint64 index, GError **error) {
  Cuda *c = data;
  guint16 got[CHECK_ELEMENTS];
  guint64 n = MIN(bytes / 2, (guint64) CHECK_ELEMENTS);
  if (!cu_sync(c, device, error) ||
      !EMA_CUDA((int) device, error,
                cudaMemcpyAsync(got, (const void *) (uintptr_t) va, n * 2, cudaMemcpyDeviceToHost,
                                c->streams[device])) ||
      !EMA_CUDA((int) device, error, cudaStreamSynchronize(c->streams[device])))
    return FALSE;
  for (guint64 i = 0; i < n; i++) {
    guint16 want = ema_fill_bf16(seed, index + i);
    if (got[i] != want) {
      g_set_error(error, EMA_VALIDATE_ERROR, EMA_VALIDATE_ERROR_VERIFY,
                  "GPU %u: read back 0x%" G_GINT64_MODIFIER "x: element %" G_GUINT64_FORMAT
                  " is 0x%04x, the block's pattern has 0x%04x",
                  device, va + 2 * i, index + i, got[i], want);
      return FALSE;
    }
  }
  return TRUE;
}

static const EmaPoolDevice cuda_ops = {
    cu_create,     cu_release, cu_reserve, cu_unreserve, cu_map,  cu_unmap,
    cu_set_access, cu_fill,    cu_copy,    cu_to_host,   cu_sync, cu_check,
};

/* One lend from LENDER to BORROWER and back, with a fill, a copy into a
 * slice of the borrower's own, a copy to host and a read back: whatever the
 * driver sets up on first use happens before the free memory is read. */
static gboolean warm_up(Cuda *c, guint lender, guint borrower, GError **error) {
  guint64 lent = 0, own = 0, va = 0;
  gboolean created_lent = FALSE, created_own = FALSE, reserved = FALSE;
  gboolean mapped_lent = FALSE, mapped_own = FALSE, ok;
  GError *inner = NULL;
  ok = cu_create(c, lender, &lent, error);
  created_lent = ok;
  ok = ok && cu_create(c, borrower, &own, error);
  created_own = ok;
  ok = ok && cu_reserve(c, borrower, 2 * SLICE, 0, &va, error);
  reserved = ok;
  ok = ok && cu_map(c, borrower, va, lent, error);
  mapped_lent = ok;
  ok = ok && cu_map(c, borrower, va + SLICE, own, error);
  mapped_own = ok;
  ok = ok && cu_set_access(c, borrower, va, 2 * SLICE, error) &&
       cu_fill(c, borrower, va, SLICE, WARM_SEED, 0, error) &&
       cu_copy(c, borrower, va + SLICE, va, SLICE, error) &&
       cu_to_host(c, borrower, va + SLICE, SLICE, error) &&
       cu_check(c, borrower, va + SLICE + SLICE - 32, 32, WARM_SEED, (SLICE - 32) / 2, error);
  if (!ok)
    (void) cudaStreamSynchronize(c->streams[borrower]);
  /* undo in reverse, keeping the first error */
  if (mapped_own && !cu_unmap(c, borrower, va + SLICE, ok ? error : &inner))
    ok = FALSE;
  if (mapped_lent && !cu_unmap(c, borrower, va, ok ? error : &inner))
    ok = FALSE;
  if (reserved && !cu_unreserve(c, borrower, va, 2 * SLICE, ok ? error : &inner))
    ok = FALSE;
  if (created_own && !cu_release(c, borrower, own, ok ? error : &inner))
    ok = FALSE;
  if (created_lent && !cu_release(c, lender, lent, ok ? error : &inner))
    ok = FALSE;
  g_clear_error(&inner);
  return ok;
}

/* ---- the lender's own decode ------------------------------------------------------------- */

typedef struct {
  guint64 index;
  double start;   /* CLOCK_MONOTONIC seconds */
  double step_ms; /* its events */
  double gap_ms;  /* from the end of the step before */
} StepSample;

typedef struct {
  int device;
  EmaDecodePlan *plan;
  EmaKernelShape shape;
  cudaStream_t stream;
  void *weights, *lm_head, *activations, *queries, *pool;
  int32_t *table;
  unsigned *counters;
  float *y, *partial, *out;
  guint64 y_floats;
  cudaGraph_t graph;
  cudaGraphExec_t exec;
  cudaEvent_t origin, start[LENDER_DEPTH + 1], stop[LENDER_DEPTH + 1];
  double origin_host;
  GThread *thread;
  gint stop_flag;
  GMutex lock;
  GArray *samples; /* StepSample, under lock */
  gint64 last_step_ns;
  GError *error; /* the thread's */
} Lender;

static gboolean lender_enqueue(Lender *d, GError **error) {
  const EmaDecodePlan *plan = d->plan;
  int dev = d->device;
  gboolean ok = EMA_CUDA(dev, error, cudaMemsetAsync(d->y, 0, d->y_floats * 4, d->stream));
  for (guint l = 0; ok && l <= plan->layers; l++) {
    gboolean head = l == plan->layers;
    const void *w =
        head ? d->lm_head : (const char *) d->weights + (guint64) l * plan->layer_weight_bytes;
    ok = EMA_CUDA(dev, error,
                  ema_launch_gemv(d->stream, &d->shape, w,
                                  (const char *) d->activations + (guint64) l * plan->hidden * 2,
                                  d->y + (guint64) l * plan->layer_weight_rows,
                                  head ? plan->lm_head_rows : plan->layer_weight_rows,
                                  plan->hidden));
    if (ok && !head) {
      EmaAttentionArgs args = ema_decode_attention_args(
          plan, l, d->table,
          (const char *) d->pool + (guint64) l * ema_decode_local_layer_bytes(plan), NULL,
          d->queries, d->partial, d->counters, d->out);
      ok = EMA_CUDA(dev, error, ema_launch_attention(d->stream, &args));
    }
  }
  return ok;
}

static gboolean fill_buffer(Lender *d, void *buffer, guint64 elements, guint64 seed,
                            GError **error) {
  return elements == 0 ||
         EMA_CUDA(d->device, error,
                  ema_launch_fill_bf16(d->stream, &d->shape, buffer, elements, seed));
}

/* Buffers, inputs and the graph of one step on DEVICE (all in ARENA but
 * the graph), then a few steps to warm up. */
static gboolean lender_setup(Lender *d, EmaGpuArena *arena, GError **error) {
  EmaDecodePlan *plan = d->plan;
  int dev = d->device;
  guint layers = plan->layers;
  gboolean ok;
  /* the attention split depends on the GPU: partition before sizing */
  if (!EMA_CUDA(dev, error, ema_kernel_shape(dev, &d->shape)))
    return FALSE;
  ema_decode_plan_partition(plan, (guint) d->shape.multiprocessors);
  guint64 weight_bytes = (guint64) layers * plan->layer_weight_bytes;
  guint64 activation_bytes = (guint64) (layers + 1) * plan->hidden * 2;
  guint64 query_bytes = (guint64) layers * ema_decode_plan_query_elements(plan) * 2;
  guint64 pool_bytes = MAX(16, (guint64) layers * ema_decode_local_layer_bytes(plan));
  guint64 table_bytes = (guint64) plan->total_blocks * sizeof(int32_t);
  guint64 partial_bytes = ema_decode_plan_partial_floats(plan) * sizeof(float);
  guint64 counter_bytes = ema_decode_plan_counters(plan) * sizeof(unsigned);
  guint64 out_bytes = (guint64) layers * ema_decode_plan_output_elements(plan) * sizeof(float);

  d->y_floats = (guint64) layers * plan->layer_weight_rows + plan->lm_head_rows;
  if (!ema_gpu_stream_new(arena, dev, &d->stream, error) ||
      !ema_gpu_event_new(arena, dev, TRUE, &d->origin, error))
    return FALSE;
  for (guint i = 0; i <= LENDER_DEPTH; i++)
    if (!ema_gpu_event_new(arena, dev, TRUE, &d->start[i], error) ||
        !ema_gpu_event_new(arena, dev, TRUE, &d->stop[i], error))
      return FALSE;
  if (!ema_gpu_malloc(arena, dev, weight_bytes, &d->weights, error) ||
      !ema_gpu_malloc(arena, dev, plan->lm_head_bytes, &d->lm_head, error) ||
      !ema_gpu_malloc(arena, dev, activation_bytes, &d->activations, error) ||
      !ema_gpu_malloc(arena, dev, query_bytes, &d->queries, error) ||
      !ema_gpu_malloc(arena, dev, pool_bytes, &d->pool, error) ||
      !ema_gpu_malloc(arena, dev, table_bytes, (void **) &d->table, error) ||
      !ema_gpu_malloc(arena, dev, partial_bytes, (void **) &d->partial, error) ||
      !ema_gpu_malloc(arena, dev, counter_bytes, (void **) &d->counters, error) ||
      !ema_gpu_malloc(arena, dev, out_bytes, (void **) &d->out, error) ||
      !ema_gpu_malloc(arena, dev, d->y_floats * sizeof(float), (void **) &d->y, error))
    return FALSE;
  if (!fill_buffer(d, d->weights, weight_bytes / 2, EMA_SEED_WEIGHTS, error) ||
      !fill_buffer(d, d->lm_head, plan->lm_head_bytes / 2, EMA_SEED_LM_HEAD, error) ||
      !fill_buffer(d, d->activations, activation_bytes / 2, EMA_SEED_ACTIVATIONS, error) ||
      !fill_buffer(d, d->queries, query_bytes / 2, EMA_SEED_QUERIES, error) ||
      !fill_buffer(d, d->pool, (guint64) layers * ema_decode_local_layer_bytes(plan) / 2,
                   EMA_SEED_KV_LOCAL, error) ||
      !EMA_CUDA(dev, error,
                cudaMemcpyAsync(d->table, plan->block_table, table_bytes, cudaMemcpyHostToDevice,
                                d->stream)) ||
      !EMA_CUDA(dev, error, cudaMemsetAsync(d->counters, 0, counter_bytes, d->stream)) ||
      !EMA_CUDA(dev, error, cudaStreamSynchronize(d->stream)))
    return FALSE;
  /* one step as a CUDA graph, replayed as serving engines run decode steps */
  ok = EMA_CUDA(dev, error, cudaStreamBeginCapture(d->stream, cudaStreamCaptureModeRelaxed));
  if (ok) {
    gboolean enqueued = lender_enqueue(d, error);
    ok = EMA_CUDA(dev, error, cudaStreamEndCapture(d->stream, &d->graph)) && enqueued;
  }
  ok = ok && EMA_CUDA(dev, error, cudaGraphInstantiate(&d->exec, d->graph, 0));
  for (guint i = 0; ok && i < 3; i++)
    ok = EMA_CUDA(dev, error, cudaGraphLaunch(d->exec, d->stream));
  return ok && EMA_CUDA(dev, error, cudaStreamSynchronize(d->stream));
}

static gboolean elapsed_ms(int dev, cudaEvent_t from, cudaEvent_t to, double *ms, GError **error) {
  float value = 0;
  if (!EMA_CUDA(dev, error, cudaEventElapsedTime(&value, from, to)))
    return FALSE;
  *ms = value;
  return TRUE;
}

/* Steps back to back, LENDER_DEPTH queued, until told to stop. */
static gpointer lender_thread(gpointer data) {
  Lender *d = data;
  int dev = d->device;
  GError *error = NULL;
  guint64 issued = 0, done = 0;
  const guint ring = LENDER_DEPTH + 1;
  gboolean ok = EMA_CUDA(dev, &error, cudaSetDevice(dev)) &&
                EMA_CUDA(dev, &error, cudaEventRecord(d->origin, d->stream)) &&
                EMA_CUDA(dev, &error, cudaEventSynchronize(d->origin));
  d->origin_host = wall();
  while (ok) {
    gboolean stopping = g_atomic_int_get(&d->stop_flag);
    StepSample sample = {0};
    double start_ms = 0;
    guint k;
    while (ok && !stopping && issued - done < LENDER_DEPTH) {
      k = (guint) (issued % ring);
      ok = EMA_CUDA(dev, &error, cudaEventRecord(d->start[k], d->stream)) &&
           EMA_CUDA(dev, &error, cudaGraphLaunch(d->exec, d->stream)) &&
           EMA_CUDA(dev, &error, cudaEventRecord(d->stop[k], d->stream));
      issued += ok;
    }
    if (!ok || done == issued)
      break;
    k = (guint) (done % ring);
    ok = EMA_CUDA(dev, &error, cudaEventSynchronize(d->stop[k])) &&
         elapsed_ms(dev, d->start[k], d->stop[k], &sample.step_ms, &error) &&
         elapsed_ms(dev, d->origin, d->start[k], &start_ms, &error) &&
         (done == 0 ||
          elapsed_ms(dev, d->stop[(done - 1) % ring], d->start[k], &sample.gap_ms, &error));
    if (!ok)
      break;
    sample.index = done;
    sample.start = d->origin_host + start_ms / 1e3;
    g_mutex_lock(&d->lock);
    g_array_append_val(d->samples, sample);
    d->last_step_ns = (gint64) llround(sample.step_ms * 1e6);
    g_mutex_unlock(&d->lock);
    done++;
  }
  if (!ok) {
    (void) cudaStreamSynchronize(d->stream);
    (void) cudaGetLastError();
    d->error = error;
  }
  return NULL;
}

static EmaTime lender_last_step(Lender *d) {
  EmaTime ns;
  g_mutex_lock(&d->lock);
  ns = d->last_step_ns;
  g_mutex_unlock(&d->lock);
  return ns;
}

/* Stop the thread, if it runs; its error, if any. */
static gboolean lender_stop(Lender *d, GError **error) {
  if (d->thread == NULL)
    return TRUE;
  g_atomic_int_set(&d->stop_flag, 1);
  g_thread_join(d->thread);
  d->thread = NULL;
  if (d->error) {
    if (error && *error == NULL)
      g_propagate_prefixed_error(error, d->error, "the lender's decode: ");
    else
      g_clear_error(&d->error);
    d->error = NULL;
    return FALSE;
  }
  return TRUE;
}

/* The last step's outputs against the CPU references: GEMV rows of the
 * first layer and the LM head, attention of the first sequence and head. */
static gboolean lender_verify(Lender *d, GError **error) {
  const EmaDecodePlan *plan = d->plan;
  int dev = d->device;
  guint64 width = (guint64) plan->group * plan->head_dim;
  g_autofree float *rows = g_new(float, plan->layer_weight_rows);
  g_autofree float *out = g_new(float, width);
  g_autofree double *expected = g_new(double, width);
  const guint64 picks[] = {0, plan->layer_weight_rows / 2, plan->layer_weight_rows - 1};
  if (!EMA_CUDA(dev, error, cudaSetDevice(dev)) ||
      !EMA_CUDA(dev, error, cudaStreamSynchronize(d->stream)) ||
      !EMA_CUDA(dev, error,
                cudaMemcpy(rows, d->y, plan->layer_weight_rows * sizeof(float),
                           cudaMemcpyDeviceToHost)) ||
      !EMA_CUDA(dev, error, cudaMemcpy(out, d->out, width * sizeof(float), cudaMemcpyDeviceToHost)))
    return FALSE;
  for (guint i = 0; i < G_N_ELEMENTS(picks); i++) {
    double magnitude, want = ema_decode_reference_gemv(plan, 0, picks[i], &magnitude);
    if (fabs(rows[picks[i]] - want) > GEMV_TOLERANCE * magnitude + 1e-6) {
      g_set_error(error, EMA_VALIDATE_ERROR, EMA_VALIDATE_ERROR_VERIFY,
                  "the lender's decode: GEMV of layer 0, row %" G_GUINT64_FORMAT
                  ": GPU %.9g, CPU reference %.9g",
                  picks[i], rows[picks[i]], want);
      return FALSE;
    }
  }
  ema_decode_reference_attention(plan, 0, 0, 0, expected);
  for (guint64 k = 0; k < width; k++) {
    if (fabs(out[k] - expected[k]) >
        ATTENTION_ABS_TOLERANCE + ATTENTION_REL_TOLERANCE * fabs(expected[k])) {
      g_set_error(
          error, EMA_VALIDATE_ERROR, EMA_VALIDATE_ERROR_VERIFY,
          "the lender's decode: attention of layer 0, sequence 0, head 0, value %" G_GUINT64_FORMAT
          ": GPU %.9g, CPU reference %.9g",
          k, out[k], expected[k]);
      return FALSE;
    }
  }
  return TRUE;
}

static void lender_clear(Lender *d) {
  GError *error = NULL;
  if (!lender_stop(d, &error))
    g_debug("%s", error->message);
  g_clear_error(&error);
  if (d->exec)
    (void) cudaGraphExecDestroy(d->exec);
  if (d->graph)
    (void) cudaGraphDestroy(d->graph);
  (void) cudaGetLastError();
  d->exec = NULL;
  d->graph = NULL;
  if (d->samples)
    g_array_unref(d->samples);
  d->samples = NULL;
  g_mutex_clear(&d->lock);
}

/* ---- the run ------------------------------------------------------------------------------- */

typedef struct {
  guint64 tick;
  double t;       /* the tick's planned time, s */
  double started; /* CLOCK_MONOTONIC */
  double took;    /* its round, s */
  const char *phase;
  guint64 target[N_GPUS], used[N_GPUS], remote[N_GPUS], lacking[N_GPUS];
  guint64 lent[N_GPUS], borrowed[N_GPUS], own[N_GPUS], staging[N_GPUS];
  guint borrows, returns, reclaims;
  guint64 slices_borrowed, slices_returned, slices_reclaimed;
  double borrow_s, return_s, reclaim_s;
} TickRow;

typedef struct {
  const EmaRealPoolOptions *o;
  GArray *ticks;   /* TickRow */
  GArray *samples; /* StepSample, copied from the lender at the end */
  const GArray *events;
  EmaPoolCoreStats stats;
  EmaPoolMemLive live_after;
  guint64 free_start[N_GPUS], free_before[N_GPUS], free_after[N_GPUS], free_end[N_GPUS];
  guint64 ballast[N_GPUS];
  guint64 region_slices[N_GPUS], block_bytes;
  double origin; /* CLOCK_MONOTONIC at the first tick */
  gboolean lender_verified, finished;
  char gpu_name[N_GPUS][256];
  char *driver, *cuda;
} Run;

static gboolean free_memory(guint device, guint64 *out, GError **error) {
  size_t free_bytes = 0, total = 0;
  if (!EMA_CUDA((int) device, error, cudaSetDevice((int) device)) ||
      !EMA_CUDA((int) device, error, cudaMemGetInfo(&free_bytes, &total)))
    return FALSE;
  *out = free_bytes;
  return TRUE;
}

static gboolean free_memory_all(const Run *run, EmaFakeBackend *fake, guint64 *out,
                                GError **error) {
  for (guint d = 0; d < N_GPUS; d++) {
    if (fake)
      out[d] = ema_fake_backend_free_bytes(fake, d);
    else if (!free_memory(d, &out[d], error))
      return FALSE;
  }
  return TRUE;
}

/* Two GPUs that can reach each other, with VMM and a granularity that
 * divides the slice. */
static gboolean check_devices(Run *run, const EmaDriverApi **api, GError **error) {
  int count = 0;
  if (!ema_cuda_device_count(&count, error))
    return FALSE;
  if (count < N_GPUS) {
    g_set_error(error, EMA_VALIDATE_ERROR, EMA_VALIDATE_ERROR_NO_DEVICE,
                "pool needs 2 GPUs (GPU0 borrows, GPU1 lends); found %d", count);
    return FALSE;
  }
  if ((*api = ema_driver_api(error)) == NULL)
    return FALSE;
  for (int d = 0; d < N_GPUS; d++) {
    struct cudaDeviceProp prop;
    CUdevice device = 0;
    int vmm = 0, peer = 0;
    size_t granularity = 0;
    CUmemAllocationProp alloc;
    memset(&alloc, 0, sizeof alloc);
    alloc.type = CU_MEM_ALLOCATION_TYPE_PINNED;
    alloc.location.type = CU_MEM_LOCATION_TYPE_DEVICE;
    alloc.location.id = d;
    if (!EMA_CUDA(d, error, cudaSetDevice(d)) || !EMA_CUDA(d, error, cudaFree(NULL)) ||
        !EMA_CUDA(d, error, cudaGetDeviceProperties(&prop, d)) ||
        !EMA_CU(d, error, (*api)->device_get(&device, d)) ||
        !EMA_CU(d, error,
                (*api)->device_get_attribute(
                    &vmm, CU_DEVICE_ATTRIBUTE_VIRTUAL_MEMORY_MANAGEMENT_SUPPORTED, device)) ||
        !EMA_CUDA(d, error, cudaDeviceCanAccessPeer(&peer, d, 1 - d)))
      return FALSE;
    g_strlcpy(run->gpu_name[d], prop.name, sizeof run->gpu_name[d]);
    if (!vmm || !peer) {
      g_set_error(error, EMA_VALIDATE_ERROR, EMA_VALIDATE_ERROR_UNSUPPORTED, "GPU %d: %s", d,
                  !vmm ? "no CUDA virtual memory management" : "cannot reach the other GPU");
      return FALSE;
    }
    if (!EMA_CU(d, error,
                (*api)->mem_get_allocation_granularity(&granularity, &alloc,
                                                       CU_MEM_ALLOC_GRANULARITY_MINIMUM)))
      return FALSE;
    if (granularity == 0 || SLICE % granularity != 0) {
      g_set_error(error, EMA_VALIDATE_ERROR, EMA_VALIDATE_ERROR_UNSUPPORTED,
                  "GPU %d: VMM granularity %zu bytes does not divide a 2 MiB slice", d,
                  granularity);
      return FALSE;
    }
  }
  return TRUE;
}

static EmaTime borrower_step(const EmaStepModel *model, guint64 blocks, guint context) {
  EmaStepBatch batch = {0};
  double tokens = (double) blocks * EMA_KV_BLOCK_TOKENS;
  if (blocks == 0)
    return 0;
  batch.decode_seqs = MAX(1, (guint64) ceil(tokens / context));
  batch.decode_context = tokens;
  batch.logits = batch.decode_seqs;
  return ema_step_time(model, &batch, NULL);
}

static void record_tick(Run *run, EmaPoolMem *ledger, TickRow *row, guint first_event) {
  const GArray *events = ema_pool_mem_events(ledger);
  for (guint d = 0; d < N_GPUS; d++) {
    row->used[d] = ema_pool_mem_blocks_used(ledger, d);
    row->remote[d] = ema_pool_mem_blocks_remote(ledger, d);
    row->lacking[d] = ema_pool_mem_blocks_short(ledger, d);
    row->lent[d] = ema_pool_mem_slices_lent(ledger, d);
    row->borrowed[d] = ema_pool_mem_slices_borrowed(ledger, d);
    row->own[d] = ema_pool_mem_own_mapped(ledger, d);
    row->staging[d] = ema_pool_mem_staging(ledger, d);
  }
  for (guint i = first_event; i < events->len; i++) {
    const EmaPoolEvent *e = &g_array_index(events, EmaPoolEvent, i);
    switch (e->kind) {
    case EMA_POOL_EVENT_BORROW:
      row->borrows++;
      row->slices_borrowed += e->slices;
      row->borrow_s += e->seconds;
      break;
    case EMA_POOL_EVENT_RETURN:
      row->returns++;
      row->slices_returned += e->slices;
      row->return_s += e->seconds;
      break;
    case EMA_POOL_EVENT_RECLAIM:
      row->reclaims++;
      row->slices_reclaimed += e->slices;
      row->reclaim_s += e->seconds;
      break;
    case EMA_POOL_EVENT_OWN_MAP:
    case EMA_POOL_EVENT_OWN_UNMAP:
    case EMA_POOL_EVENT_REFUSE:
    case EMA_POOL_EVENT_OFFLOAD:
    case EMA_POOL_EVENT_OFFLOAD_END:
    case EMA_POOL_EVENT_OFFLOAD_REFUSE:
    case EMA_POOL_EVENT_OFFLOAD_THROTTLE:
    case EMA_POOL_EVENT_PLACE:
    case EMA_POOL_EVENT_TIER:
    case EMA_POOL_EVENT_DEBUG:
      break;
    }
  }
  g_array_append_val(run->ticks, *row);
}

/* ---- what the steps did around the reclaims -------------------------------------------------- */

typedef struct {
  guint steps;
  double max_step_ms, max_gap_ms, sum_ms;
} StepWindow;

/* The lender's steps that ran during [FROM, TO] (CLOCK_MONOTONIC). */
static StepWindow steps_between(const GArray *samples, double from, double to) {
  StepWindow w = {0};
  for (guint i = 0; samples && i < samples->len; i++) {
    const StepSample *s = &g_array_index(samples, StepSample, i);
    double end = s->start + s->step_ms / 1e3;
    if (end < from || s->start > to)
      continue;
    w.steps++;
    w.sum_ms += s->step_ms;
    w.max_step_ms = MAX(w.max_step_ms, s->step_ms);
    w.max_gap_ms = MAX(w.max_gap_ms, s->gap_ms);
  }
  return w;
}

static int compare_doubles(gconstpointer a, gconstpointer b) {
  double x = *(const double *) a, y = *(const double *) b;
  return (x > y) - (x < y);
}

/* Quantile Q of the step times of SAMPLES whose start is in [FROM, TO). */
static double step_quantile(const GArray *samples, double from, double to, double q, guint *count) {
  g_autoptr(GArray) times = g_array_new(FALSE, FALSE, sizeof(double));
  for (guint i = 0; samples && i < samples->len; i++) {
    const StepSample *s = &g_array_index(samples, StepSample, i);
    if (s->start >= from && s->start < to)
      g_array_append_val(times, s->step_ms);
  }
  *count = times->len;
  if (times->len == 0)
    return 0;
  g_array_sort(times, compare_doubles);
  return g_array_index(times, double, (guint) floor(q * (times->len - 1) + 0.5));
}

/* ---- outputs ------------------------------------------------------------------------------ */

static gboolean write_file(const char *dir, const char *name, const GString *text, GError **error) {
  g_autofree char *path = g_build_filename(dir, name, NULL);
  GError *inner = NULL;
  if (!g_file_set_contents(path, text->str, (gssize) text->len, &inner)) {
    g_set_error(error, EMA_VALIDATE_ERROR, EMA_VALIDATE_ERROR_IO, "%s", inner->message);
    g_error_free(inner);
    return FALSE;
  }
  return TRUE;
}

static GString *ticks_csv(const Run *run) {
  GString *s = g_string_new(
      "tick,t_s,phase,round_ms,"
      "gpu0_target,gpu0_blocks,gpu0_remote,gpu0_short,gpu0_lent,gpu0_borrowed,gpu0_own,"
      "gpu0_staging,"
      "gpu1_target,gpu1_blocks,gpu1_remote,gpu1_short,gpu1_lent,gpu1_borrowed,gpu1_own,"
      "gpu1_staging,"
      "borrows,slices_borrowed,borrow_ms,returns,slices_returned,return_ms,reclaims,"
      "slices_reclaimed,reclaim_ms,lender_steps,lender_step_ms_max,lender_gap_ms_max\n");
  for (guint i = 0; i < run->ticks->len; i++) {
    const TickRow *r = &g_array_index(run->ticks, TickRow, i);
    double next = i + 1 < run->ticks->len ? g_array_index(run->ticks, TickRow, i + 1).started
                                          : r->started + run->o->tick_seconds;
    StepWindow w = steps_between(run->samples, r->started, next);
    g_string_append_printf(s, "%" G_GUINT64_FORMAT ",%.3f,%s,%.3f", r->tick, r->t, r->phase,
                           r->took * 1e3);
    for (guint d = 0; d < N_GPUS; d++)
      g_string_append_printf(s,
                             ",%" G_GUINT64_FORMAT ",%" G_GUINT64_FORMAT ",%" G_GUINT64_FORMAT
                             ",%" G_GUINT64_FORMAT ",%" G_GUINT64_FORMAT ",%" G_GUINT64_FORMAT
                             ",%" G_GUINT64_FORMAT ",%" G_GUINT64_FORMAT,
                             r->target[d], r->used[d], r->remote[d], r->lacking[d], r->lent[d],
                             r->borrowed[d], r->own[d], r->staging[d]);
    g_string_append_printf(s,
                           ",%u,%" G_GUINT64_FORMAT ",%.3f,%u,%" G_GUINT64_FORMAT
                           ",%.3f,%u,%" G_GUINT64_FORMAT ",%.3f,%u,%.4f,%.4f\n",
                           r->borrows, r->slices_borrowed, r->borrow_s * 1e3, r->returns,
                           r->slices_returned, r->return_s * 1e3, r->reclaims, r->slices_reclaimed,
                           r->reclaim_s * 1e3, w.steps, w.max_step_ms, w.max_gap_ms);
  }
  return s;
}

static GString *events_csv(const Run *run) {
  GString *s = g_string_new("tick,t_s,start_s,kind,gpu,peer,target,target_gpu,slices,"
                            "blocks_moved,blocks_to_host,blocks_dropped,bytes_copied,ms,map_ms,"
                            "copy_ms,unmap_ms,us_per_slice,lender_steps,lender_step_ms_max,"
                            "lender_gap_ms_max,reason\n");
  for (guint i = 0; run->events && i < run->events->len; i++) {
    const EmaPoolEvent *e = &g_array_index(run->events, EmaPoolEvent, i);
    StepWindow w = steps_between(run->samples, e->started, e->started + e->seconds);
    g_autofree char *reason = ema_csv_field(e->reason);
    g_string_append_printf(
        s,
        "%" G_GUINT64_FORMAT ",%.3f,%.6f,%s,%u,%u,%s,%u,%" G_GUINT64_FORMAT ",%" G_GUINT64_FORMAT
        ",%" G_GUINT64_FORMAT ",%" G_GUINT64_FORMAT ",%" G_GUINT64_FORMAT
        ",%.4f,%.4f,%.4f,%.4f,%.2f,%u,%.4f,%.4f,%s\n",
        e->tick, (double) e->at / 1e9, e->started - run->origin, ema_pool_event_kind_name(e->kind),
        e->gpu, e->peer,
        e->kind == EMA_POOL_EVENT_RECLAIM ? ema_pool_vacate_target_name(e->target) : "",
        e->target_gpu, e->slices, e->blocks_moved, e->blocks_to_host, e->blocks_dropped,
        e->bytes_copied, e->seconds * 1e3, e->map_seconds * 1e3, e->copy_seconds * 1e3,
        e->unmap_seconds * 1e3, e->slices ? e->seconds * 1e6 / (double) e->slices : 0, w.steps,
        w.max_step_ms, w.max_gap_ms, reason);
  }
  return s;
}

static GString *steps_csv(const Run *run) {
  GString *s = g_string_new("step,start_s,step_ms,gap_ms,phase,during_reclaim\n");
  for (guint i = 0; run->samples && i < run->samples->len; i++) {
    const StepSample *p = &g_array_index(run->samples, StepSample, i);
    gboolean reclaim = FALSE;
    EmaPoolScenario scenario = {run->o->seconds, {0, 0}};
    double t = p->start - run->origin;
    for (guint k = 0; run->events && k < run->events->len && !reclaim; k++) {
      const EmaPoolEvent *e = &g_array_index(run->events, EmaPoolEvent, k);
      reclaim = e->kind == EMA_POOL_EVENT_RECLAIM && p->start <= e->started + e->seconds &&
                p->start + p->step_ms / 1e3 >= e->started;
    }
    g_string_append_printf(s, "%" G_GUINT64_FORMAT ",%.6f,%.4f,%.4f,%s,%d\n", p->index, t,
                           p->step_ms, p->gap_ms,
                           t < 0 ? "before" : ema_pool_scenario_phase(&scenario, t), reclaim);
  }
  return s;
}

typedef struct {
  guint count;
  double sum_s, max_s;
  guint64 slices;
} KindFigures;

static KindFigures kind_figures(const Run *run, EmaPoolEventKind kind) {
  KindFigures f = {0};
  for (guint i = 0; run->events && i < run->events->len; i++) {
    const EmaPoolEvent *e = &g_array_index(run->events, EmaPoolEvent, i);
    if (e->kind != kind)
      continue;
    f.count++;
    f.sum_s += e->seconds;
    f.max_s = MAX(f.max_s, e->seconds);
    f.slices += e->slices;
  }
  return f;
}

static void json_kind(GString *s, const char *name, KindFigures f, gboolean last) {
  g_string_append_printf(s,
                         "    \"%s\": {\"count\": %u, \"slices\": %" G_GUINT64_FORMAT
                         ", \"total_ms\": %.3f, \"mean_ms\": %.4f, \"max_ms\": %.4f, "
                         "\"us_per_slice\": %.2f}%s\n",
                         name, f.count, f.slices, f.sum_s * 1e3,
                         f.count ? f.sum_s * 1e3 / f.count : 0, f.max_s * 1e3,
                         f.slices ? f.sum_s * 1e6 / (double) f.slices : 0, last ? "" : ",");
}

static void json_array(GString *s, const char *name, const guint64 *v, const char *end) {
  g_string_append_printf(s, "    \"%s\": [%" G_GUINT64_FORMAT ", %" G_GUINT64_FORMAT "]%s\n", name,
                         v[0], v[1], end);
}

typedef struct {
  guint steps, warm_steps, reclaim_steps;
  double warm_median, median, p99, max_ms, max_gap, reclaim_max, reclaim_gap, reclaim_sum;
  double reclaim_window_s;
} LenderFigures;

static LenderFigures lender_figures(const Run *run) {
  LenderFigures f = {0};
  double warm_end = run->origin + 0.1 * run->o->seconds;
  guint n;
  f.warm_median = step_quantile(run->samples, run->origin, warm_end, 0.5, &f.warm_steps);
  f.median = step_quantile(run->samples, run->origin, G_MAXDOUBLE, 0.5, &f.steps);
  f.p99 = step_quantile(run->samples, run->origin, G_MAXDOUBLE, 0.99, &n);
  for (guint i = 0; run->samples && i < run->samples->len; i++) {
    const StepSample *s = &g_array_index(run->samples, StepSample, i);
    if (s->start < run->origin)
      continue;
    f.max_ms = MAX(f.max_ms, s->step_ms);
    f.max_gap = MAX(f.max_gap, s->gap_ms);
  }
  for (guint i = 0; run->events && i < run->events->len; i++) {
    const EmaPoolEvent *e = &g_array_index(run->events, EmaPoolEvent, i);
    StepWindow w;
    if (e->kind != EMA_POOL_EVENT_RECLAIM)
      continue;
    w = steps_between(run->samples, e->started, e->started + e->seconds);
    f.reclaim_steps += w.steps;
    f.reclaim_sum += w.sum_ms;
    f.reclaim_max = MAX(f.reclaim_max, w.max_step_ms);
    f.reclaim_gap = MAX(f.reclaim_gap, w.max_gap_ms);
    f.reclaim_window_s += e->seconds;
  }
  return f;
}

static gboolean leaked(const Run *run, guint d) {
  return run->free_after[d] + SLICE <= run->free_before[d];
}

static GString *summary_json(const Run *run) {
  const EmaRealPoolOptions *o = run->o;
  const EmaPoolCoreStats *st = &run->stats;
  LenderFigures lf = lender_figures(run);
  GString *s = g_string_new("{\n");
  g_autoptr(GDateTime) now = g_date_time_new_now_utc();
  g_autofree char *date = g_date_time_format(now, "%Y-%m-%dT%H:%M:%SZ");
  g_autofree char *command = g_strescape(o->command ? o->command : "", NULL);
  guint64 diff[N_GPUS];
  for (guint d = 0; d < N_GPUS; d++)
    diff[d] =
        run->free_before[d] > run->free_after[d] ? run->free_before[d] - run->free_after[d] : 0;
  g_string_append_printf(s, "  \"command\": \"%s\",\n  \"date\": \"%s\",\n", command, date);
  g_string_append_printf(s, "  \"dry_run\": %s,\n  \"finished\": %s,\n",
                         o->dry_run ? "true" : "false", run->finished ? "true" : "false");
  g_string_append_printf(
      s, "  \"gpus\": [\"%s\", \"%s\"],\n  \"driver\": \"%s\",\n  \"cuda\": \"%s\",\n",
      run->gpu_name[0], run->gpu_name[1], run->driver ? run->driver : "",
      run->cuda ? run->cuda : "");
  g_string_append_printf(
      s,
      "  \"policy\": {\"name\": \"%s\", \"borrow\": \"%s\", \"prefetch\": \"%s\", "
      "\"reclaim\": \"%s\"},\n",
      o->policy->name, o->policy->borrow, o->policy->prefetch, o->policy->reclaim);
  g_string_append_printf(
      s,
      "  \"scenario\": {\"seconds\": %.3f, \"tick_s\": %.4f, \"ticks\": %u, "
      "\"model\": \"%s\", \"block_bytes\": %" G_GUINT64_FORMAT
      ", \"region_slices\": [%" G_GUINT64_FORMAT ", %" G_GUINT64_FORMAT
      "], \"lender_decode\": {\"batch\": %u, \"context\": %u}, \"ballast\": [%" G_GUINT64_FORMAT
      ", %" G_GUINT64_FORMAT "]},\n",
      o->seconds, o->tick_seconds, run->ticks->len, o->model->name, run->block_bytes,
      run->region_slices[0], run->region_slices[1], o->batch, o->context, run->ballast[0],
      run->ballast[1]);
  g_string_append_printf(
      s,
      "  \"pool\": {\"borrows\": %" G_GUINT64_FORMAT ", \"slices_borrowed\": %" G_GUINT64_FORMAT
      ", \"returns\": %" G_GUINT64_FORMAT ", \"slices_returned\": %" G_GUINT64_FORMAT
      ", \"reclaims\": %" G_GUINT64_FORMAT ", \"slices_reclaimed\": %" G_GUINT64_FORMAT
      ", \"blocks_migrated\": %" G_GUINT64_FORMAT ", \"blocks_to_host\": %" G_GUINT64_FORMAT
      ", \"blocks_dropped\": %" G_GUINT64_FORMAT ", \"blocks_checked\": %" G_GUINT64_FORMAT
      ", \"plans_adjusted\": %" G_GUINT64_FORMAT ", \"reclaim_decision_mean_ms\": %.4f, "
      "\"reclaim_decision_max_ms\": %.4f},\n",
      st->borrows, st->slices_borrowed, st->returns, st->slices_returned, st->reclaims,
      st->slices_reclaimed, st->blocks_migrated, st->blocks_to_host, st->blocks_dropped,
      st->blocks_checked, st->plans_adjusted,
      st->reclaims ? st->reclaim_seconds * 1e3 / (double) st->reclaims : 0,
      st->reclaim_max_seconds * 1e3);
  g_string_append(s, "  \"latency\": {\n");
  json_kind(s, "borrow", kind_figures(run, EMA_POOL_EVENT_BORROW), FALSE);
  json_kind(s, "return", kind_figures(run, EMA_POOL_EVENT_RETURN), FALSE);
  json_kind(s, "reclaim", kind_figures(run, EMA_POOL_EVENT_RECLAIM), FALSE);
  json_kind(s, "own_map", kind_figures(run, EMA_POOL_EVENT_OWN_MAP), FALSE);
  json_kind(s, "own_unmap", kind_figures(run, EMA_POOL_EVENT_OWN_UNMAP), TRUE);
  g_string_append(s, "  },\n  \"memory\": {\n");
  json_array(s, "free_start", run->free_start, ",");
  json_array(s, "free_before", run->free_before, ",");
  json_array(s, "free_after", run->free_after, ",");
  json_array(s, "used_difference", diff, ",");
  json_array(s, "free_end", run->free_end, ",");
  g_string_append_printf(
      s,
      "    \"live_after\": {\"handles\": %" G_GUINT64_FORMAT ", \"mappings\": %" G_GUINT64_FORMAT
      ", \"reservations\": %" G_GUINT64_FORMAT "},\n    \"leak\": %s\n  },\n",
      run->live_after.handles, run->live_after.mappings, run->live_after.reservations,
      leaked(run, 0) || leaked(run, 1) ? "true" : "false");
  g_string_append_printf(s,
                         "  \"lender\": {\"steps\": %u, \"median_ms\": %.4f, \"p99_ms\": %.4f, "
                         "\"max_ms\": %.4f, \"max_gap_ms\": %.4f, \"warm_median_ms\": %.4f, "
                         "\"during_reclaims\": {\"window_ms\": %.3f, \"steps\": %u, "
                         "\"mean_ms\": %.4f, \"max_ms\": %.4f, \"max_gap_ms\": %.4f}, "
                         "\"verified\": %s}\n}\n",
                         lf.steps, lf.median, lf.p99, lf.max_ms, lf.max_gap, lf.warm_median,
                         lf.reclaim_window_s * 1e3, lf.reclaim_steps,
                         lf.reclaim_steps ? lf.reclaim_sum / lf.reclaim_steps : 0, lf.reclaim_max,
                         lf.reclaim_gap, run->lender_verified ? "true" : "false");
  return s;
}

static void print_summary(const Run *run) {
  const EmaPoolCoreStats *st = &run->stats;
  KindFigures b = kind_figures(run, EMA_POOL_EVENT_BORROW),
              r = kind_figures(run, EMA_POOL_EVENT_RETURN),
              c = kind_figures(run, EMA_POOL_EVENT_RECLAIM),
              m = kind_figures(run, EMA_POOL_EVENT_OWN_MAP);
  LenderFigures lf = lender_figures(run);
  printf("pool %s: %u ticks of %.0f ms%s\n", run->o->policy->name, run->ticks->len,
         run->o->tick_seconds * 1e3, run->o->dry_run ? " (dry run: no GPU, simulated time)" : "");
  printf("  borrows   %4u, %6" G_GUINT64_FORMAT " slices: %8.3f ms in all, mean %.3f ms, max %.3f "
         "ms, %.1f us per slice (create + map + access)\n",
         b.count, b.slices, b.sum_s * 1e3, b.count ? b.sum_s * 1e3 / b.count : 0, b.max_s * 1e3,
         b.slices ? b.sum_s * 1e6 / (double) b.slices : 0);
  printf("  returns   %4u, %6" G_GUINT64_FORMAT " slices: %8.3f ms in all, mean %.3f ms, max %.3f "
         "ms, %.1f us per slice (unmap + release)\n",
         r.count, r.slices, r.sum_s * 1e3, r.count ? r.sum_s * 1e3 / r.count : 0, r.max_s * 1e3,
         r.slices ? r.sum_s * 1e6 / (double) r.slices : 0);
  printf("  reclaims  %4u, %6" G_GUINT64_FORMAT " slices: %8.3f ms in all, mean %.3f ms, max %.3f "
         "ms; %" G_GUINT64_FORMAT " blocks moved, %" G_GUINT64_FORMAT " to host, %" G_GUINT64_FORMAT
         " dropped, %" G_GUINT64_FORMAT " read back\n",
         c.count, c.slices, c.sum_s * 1e3, c.count ? c.sum_s * 1e3 / c.count : 0, c.max_s * 1e3,
         st->blocks_migrated, st->blocks_to_host, st->blocks_dropped, st->blocks_checked);
  printf("  own maps  %4u, %6" G_GUINT64_FORMAT
         " slices: %.1f us per slice; plans cut %" G_GUINT64_FORMAT "\n",
         m.count, m.slices, m.slices ? m.sum_s * 1e6 / (double) m.slices : 0, st->plans_adjusted);
  for (guint d = 0; d < N_GPUS; d++)
    printf("  GPU%u free memory: %.1f MiB before the pool, %.1f MiB after it gave everything back "
           "(%+.1f MiB)%s\n",
           d, run->free_before[d] / 1048576.0, run->free_after[d] / 1048576.0,
           ((double) run->free_after[d] - (double) run->free_before[d]) / 1048576.0,
           leaked(run, d) ? "  LEAK" : "");
  printf("  alive after: %" G_GUINT64_FORMAT " handles, %" G_GUINT64_FORMAT
         " mappings, %" G_GUINT64_FORMAT " reservations\n",
         run->live_after.handles, run->live_after.mappings, run->live_after.reservations);
  if (lf.steps > 0) {
    printf("  lender decode: %u steps, median %.3f ms (warm phase %.3f), p99 %.3f, max %.3f ms; "
           "largest gap between steps %.3f ms\n",
           lf.steps, lf.median, lf.warm_median, lf.p99, lf.max_ms, lf.max_gap);
    printf("  during reclaims (%.1f ms in all): %u steps, mean %.3f ms, max %.3f ms, largest gap "
           "%.3f ms%s\n",
           lf.reclaim_window_s * 1e3, lf.reclaim_steps,
           lf.reclaim_steps ? lf.reclaim_sum / lf.reclaim_steps : 0, lf.reclaim_max, lf.reclaim_gap,
           run->lender_verified ? "; outputs verified" : "");
  }
}

/* What a run writes into its folder */
static const char *const pool_entries[] = {"ticks.csv", "events.csv", "steps.csv", "summary.json",
                                           NULL};

static gboolean write_outputs(const Run *run, GError **error) {
  g_autoptr(GString) ticks = ticks_csv(run);
  g_autoptr(GString) events = events_csv(run);
  g_autoptr(GString) steps = steps_csv(run);
  g_autoptr(GString) summary = summary_json(run);
  return write_file(run->o->out_dir, "ticks.csv", ticks, error) &&
         write_file(run->o->out_dir, "events.csv", events, error) &&
         write_file(run->o->out_dir, "steps.csv", steps, error) &&
         write_file(run->o->out_dir, "summary.json", summary, error);
}

/* ---- the scenario --------------------------------------------------------------------------- */

static gboolean run_ticks(Run *run, EmaPoolMem *ledger, Lender *lender, const EmaStepModel *model,
                          GError **error) {
  const EmaRealPoolOptions *o = run->o;
  EmaPoolScenario scenario = {o->seconds,
                              {run->region_slices[0] * SLICE / run->block_bytes,
                               run->region_slices[1] * SLICE / run->block_bytes}};
  guint ticks = (guint) ceil(o->seconds / o->tick_seconds - 1e-9);
  run->origin = wall();
  for (guint k = 0; k < ticks; k++) {
    TickRow row = {0};
    guint first_event = ema_pool_mem_events(ledger)->len;
    double t = k * o->tick_seconds, now;
    guint64 targets[N_GPUS];
    if (!o->dry_run) {
      double wait = run->origin + t - wall();
      if (wait > 0)
        g_usleep((gulong) (wait * 1e6));
    }
    row.started = wall();
    now = o->dry_run ? t : row.started - run->origin;
    row.tick = k;
    row.t = t;
    row.phase = ema_pool_scenario_phase(&scenario, t);
    for (guint d = 0; d < N_GPUS; d++)
      row.target[d] = targets[d] = ema_pool_scenario_target(&scenario, d, t);
    ema_pool_mem_set_last_step(
        ledger, LENDER,
        lender ? lender_last_step(lender)
               : borrower_step(model, ema_pool_mem_blocks_used(ledger, LENDER), o->context));
    ema_pool_mem_set_last_step(
        ledger, BORROWER,
        borrower_step(model, ema_pool_mem_blocks_used(ledger, BORROWER), o->context));
    if (!ema_pool_mem_tick(ledger, (EmaTime) llround(now * 1e9), targets, error)) {
      g_prefix_error(error, "tick %u (%.2f s, %s): ", k, t, row.phase);
      return FALSE;
    }
    row.took = wall() - row.started;
    record_tick(run, ledger, &row, first_event);
    if (k == 0 || strcmp(row.phase, g_array_index(run->ticks, TickRow, k - 1).phase) != 0 ||
        k + 1 == ticks) {
      printf("  %6.2f s %-6s GPU0 %6" G_GUINT64_FORMAT " blocks (%" G_GUINT64_FORMAT
             " remote, %" G_GUINT64_FORMAT " short), GPU1 %6" G_GUINT64_FORMAT
             " blocks, lends %" G_GUINT64_FORMAT " slices; round %.2f ms\n",
             t, row.phase, row.used[0], row.remote[0], row.lacking[0], row.used[1], row.lent[1],
             row.took * 1e3);
      fflush(stdout);
    }
    if (!ema_pool_mem_check(ledger, error)) {
      g_prefix_error(error, "tick %u: ", k);
      return FALSE;
    }
  }
  return TRUE;
}

gboolean ema_realpool_run(const EmaRealPoolOptions *o, GError **error) {
  g_autoptr(EmaGpuArena) arena = NULL;
  g_autoptr(EmaFakeBackend) fake = NULL;
  g_autoptr(EmaStepModel) model = NULL;
  g_autoptr(EmaDecodePlan) plan = NULL;
  EmaPoolMem *ledger = NULL;
  Cuda cuda = {0};
  Lender lender = {0};
  Run run = {0};
  EmaPoolMemConfig config = {0};
  GError *cleanup = NULL;
  gboolean ok, scenario_ok;

  /* the folder is claimed before anything runs, as ema-sim's runs claim theirs (output.h), and
   * after the GPUs are found fit: a machine without them leaves an earlier run's results */
  if ((!o->dry_run && !check_devices(&run, &cuda.api, error)) ||
      !ema_output_claim_dir_kind(o->out_dir, EMA_REALPOOL_OUTPUT_KIND, pool_entries,
                                 EMA_OUTPUT_CLAIM_CLEAR, error))
    return FALSE;
  run.o = o;
  run.ticks = g_array_new(FALSE, TRUE, sizeof(TickRow));
  g_mutex_init(&lender.lock);
  lender.samples = g_array_new(FALSE, FALSE, sizeof(StepSample));
  lender.device = LENDER;
  model = ema_step_model_new(o->model, o->server, 1, error);
  if (model == NULL)
    goto out;
  run.block_bytes =
      (guint64) llround(ema_step_model_kv_bytes_per_token_per_gpu(model) * EMA_KV_BLOCK_TOKENS);
  for (guint d = 0; d < N_GPUS; d++)
    run.region_slices[d] = o->region_bytes[d] / SLICE;

  if (o->dry_run) {
    fake = ema_fake_backend_new(N_GPUS, MAX(o->region_bytes[0], o->region_bytes[1]) + MARGIN);
    g_strlcpy(run.gpu_name[0], "none (dry run)", sizeof run.gpu_name[0]);
    g_strlcpy(run.gpu_name[1], "none (dry run)", sizeof run.gpu_name[1]);
    config.device = ema_fake_backend_ops();
    config.device_data = fake;
  } else {
    EmaDecodeOptions decode = {o->batch, o->context, 0, EMA_DECODE_LOCAL, 1};
    arena = ema_gpu_arena_new();
    run.driver = ema_nvidia_driver_version();
    run.cuda = ema_cuda_versions();
    if (!free_memory_all(&run, NULL, run.free_start, error))
      goto out;
    plan = ema_decode_plan_new(o->model, &decode, error);
    lender.plan = plan;
    if (plan == NULL || !ema_gpu_peer_enable(arena, 0, 1, error) ||
        !ema_gpu_peer_enable(arena, 1, 0, error) ||
        !ema_gpu_host_malloc(arena, HOST_SWAP, (void **) &cuda.host, error))
      goto out;
    cuda.host_bytes = HOST_SWAP;
    for (guint d = 0; d < N_GPUS; d++)
      if (!ema_gpu_stream_new(arena, (int) d, &cuda.streams[d], error) ||
          !EMA_CUDA((int) d, error, ema_kernel_shape((int) d, &cuda.shapes[d])))
        goto out;
    printf("pool %s on %s + %s: GPU1 decodes %s (batch %u, context %u) from a thread of its own\n",
           o->policy->name, run.gpu_name[0], run.gpu_name[1], o->model->name, o->batch, o->context);
    fflush(stdout);
    if (!lender_setup(&lender, arena, error) || !warm_up(&cuda, LENDER, BORROWER, error) ||
        !warm_up(&cuda, BORROWER, LENDER, error))
      goto out;
    if (o->ballast) {
      for (guint d = 0; d < N_GPUS; d++) {
        guint64 free_bytes = 0, keep = o->region_bytes[d] + MARGIN;
        void *ballast = NULL;
        if (!free_memory(d, &free_bytes, error))
          goto out;
        if (free_bytes < keep) {
          g_set_error(error, EMA_VALIDATE_ERROR, EMA_VALIDATE_ERROR_UNSUPPORTED,
                      "GPU %u: %.2f GiB free, less than its region and 1 GiB", d,
                      free_bytes / 1073741824.0);
          goto out;
        }
        run.ballast[d] = free_bytes - keep;
        if (run.ballast[d] > 0 && !ema_gpu_malloc(arena, (int) d, run.ballast[d], &ballast, error))
          goto out;
      }
    }
    config.device = &cuda_ops;
    config.device_data = &cuda;
    lender.thread = g_thread_new("lender-decode", lender_thread, &lender);
    g_usleep(200 * 1000); /* its first steps */
  }

  config.n_gpus = N_GPUS;
  config.server = o->server;
  config.policy = o->policy;
  config.context_tokens = o->context;
  config.write_blocks = TRUE;
  ledger = ema_pool_mem_new(&config, error);
  if (ledger == NULL)
    goto out;
  for (guint d = 0; d < N_GPUS; d++)
    ema_pool_mem_add_tenant(ledger, d, run.region_slices[d], run.block_bytes, model);
  if (!free_memory_all(&run, fake, run.free_before, error) || !ema_pool_mem_start(ledger, 0, error))
    goto out;
  scenario_ok = run_ticks(&run, ledger, o->dry_run ? NULL : &lender, model, error);
  run.events = ema_pool_mem_events(ledger);
  run.stats = *ema_pool_mem_stats(ledger);
  if (!scenario_ok)
    goto out;
  if (!ema_pool_mem_drain(ledger, error)) {
    g_prefix_error(error, "giving everything back: ");
    goto out;
  }
  run.stats = *ema_pool_mem_stats(ledger);
  run.live_after = ema_pool_mem_live(ledger);
  if (!ema_pool_mem_check(ledger, error) || !free_memory_all(&run, fake, run.free_after, error))
    goto out;
  if (!o->dry_run) {
    if (!lender_stop(&lender, error) || !lender_verify(&lender, error))
      goto out;
    run.lender_verified = TRUE;
  }
  run.finished = TRUE;

out:
  ok = FALSE;
  /* every path: the thread, the pool's memory, the decode's, in that order
   * (after an error, the pool's queued writes and copies finish first) */
  if (!lender_stop(&lender, run.finished ? error : &cleanup))
    run.finished = FALSE;
  for (guint d = 0; !o->dry_run && d < N_GPUS; d++) {
    cuda.pending[d].bytes = 0;
    if (cuda.streams[d] &&
        !EMA_CUDA((int) d, run.finished ? error : &cleanup, cudaStreamSynchronize(cuda.streams[d])))
      run.finished = FALSE;
  }
  if (lender.samples)
    run.samples = g_array_ref(lender.samples);
  if (ledger && !ema_pool_mem_teardown(ledger, run.finished ? error : &cleanup))
    run.finished = FALSE;
  if (ledger)
    run.events = ema_pool_mem_events(ledger);
  if (!o->dry_run && arena) {
    (void) cudaSetDevice(LENDER);
    if (lender.exec &&
        !EMA_CUDA(LENDER, run.finished ? error : &cleanup, cudaGraphExecDestroy(lender.exec)))
      run.finished = FALSE;
    if (lender.graph &&
        !EMA_CUDA(LENDER, run.finished ? error : &cleanup, cudaGraphDestroy(lender.graph)))
      run.finished = FALSE;
    lender.exec = NULL;
    lender.graph = NULL;
    if (!ema_gpu_arena_release(arena, run.finished ? error : &cleanup))
      run.finished = FALSE;
    if (!free_memory_all(&run, NULL, run.free_end, &cleanup))
      memset(run.free_end, 0, sizeof run.free_end);
  }
  if (run.ticks->len > 0 || run.finished) {
    GError *write_error = NULL;
    if (!write_outputs(&run, &write_error)) {
      if (run.finished)
        g_propagate_error(error, write_error);
      else
        g_clear_error(&write_error);
      run.finished = FALSE;
    }
  }
  if (run.finished) {
    print_summary(&run);
    printf("results in %s/\n", o->out_dir);
    ok = !leaked(&run, 0) && !leaked(&run, 1) && run.live_after.handles == 0 &&
         run.live_after.mappings == 0 && run.live_after.reservations == 0;
    if (!ok)
      g_set_error(error, EMA_VALIDATE_ERROR, EMA_VALIDATE_ERROR_VERIFY,
                  "leak: after the pool gave everything back, GPU0 has %+.1f MiB and GPU1 "
                  "%+.1f MiB free against before, %" G_GUINT64_FORMAT " handles, %" G_GUINT64_FORMAT
                  " mappings and %" G_GUINT64_FORMAT " reservations alive",
                  ((double) run.free_after[0] - (double) run.free_before[0]) / 1048576.0,
                  ((double) run.free_after[1] - (double) run.free_before[1]) / 1048576.0,
                  run.live_after.handles, run.live_after.mappings, run.live_after.reservations);
  } else if (cleanup) {
    g_debug("cleaning up after an error: %s", cleanup->message);
  }
  g_clear_error(&cleanup);
  if (ledger)
    ema_pool_mem_free(ledger);
  if (run.samples)
    g_array_unref(run.samples);
  g_array_unref(run.ticks);
  lender_clear(&lender);
  g_free(run.driver);
  g_free(run.cuda);
  return ok;
}
