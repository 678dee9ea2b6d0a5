/* decode.c: the synthetic decode step on GPUs (decode.h). GPU0 holds the
 * weights, the local KV pool, the staging slots and every output; GPU1 the
 * remote KV pool. One function enqueues a step, or the part of it a timed
 * pass asks for; all CUDA resources belong to one arena released on every
 * path.
 *
 * Prefetch schedule, with depth D and D + 1 staging slots: the copies of
 * layers 0..D-1 start with the step; before layer l is computed, the copy
 * of layer l + D is issued into slot (l + D) mod (D + 1) once layer l - 1,
 * the slot's previous user, has finished its attention (event consumed);
 * layer l's attention waits for its own copy (event copied). */
#include "decode.h"

#include <math.h>
#include <stdio.h>
#include <string.h>

#include "cudacheck.h"
#include "ema/hw/steptime.h"
#include "fill.h"
#include "gpu.h"
#include "kernels.h"
#include "report.h"
#include "stats.h"

#define COMPUTE_GPU 0
#define REMOTE_GPU 1
#define PULL_MARGIN 1.5     /* pull this many times the longest step the passes suggest */
#define PULL_RATE_MAX 450e9 /* B/s, above any NVLink 4 pair's copy rate */
#define MEMORY_MARGIN ((guint64) 512 << 20)
#define DATASHEET_HBM_BANDWIDTH 4.8e12 /* NVIDIA H200 datasheet, for the printed percentage */
#define GEMV_TOLERANCE 1e-4            /* of the sum of |w x| over the row */
#define ATTENTION_ABS_TOLERANCE 1e-4
#define ATTENTION_REL_TOLERANCE 1e-3

typedef struct {
  EmaDecodePlan *plan;
  EmaKernelShape shape;
  cudaStream_t stream, copy_stream;
  cudaEvent_t fork;
  cudaEvent_t *copied, *consumed; /* one per layer */
  void *weights, *lm_head, *activations, *queries;
  void *local_pool, *remote_pool, *staging;
  int32_t *table;
  unsigned *counters; /* attention: one per (sequence, KV head, split of the group) */
  float *y, *partial, *out;
  guint64 y_floats;
  /* what a timed pass enqueues */
  gboolean with_weights, with_attention, with_copies;
  /* the peer pull (options->peer_pull > 0): GPU1 copies pull_src (GPU0)
   * into pull_dst (GPU1) on pull_stream, pull_chunks times per step */
  gboolean pull;
  void *pull_src, *pull_dst;
  cudaStream_t pull_stream;
  cudaEvent_t pull_first, pull_last; /* timing events on GPU1 */
  guint pull_chunks;
  gboolean pull_direct;      /* a read kernel on GPU1 in place of the copies */
  EmaKernelShape pull_shape; /* GPU1's, for that kernel */
  void *pull_sink;           /* its 16 bytes of output, on GPU1 */
} Decode;

guint64 ema_decode_local_layer_bytes(const EmaDecodePlan *plan) {
  return (guint64) plan->local_blocks * plan->block_bytes;
}

static guint64 remote_layer_bytes(const EmaDecodePlan *plan) {
  return ema_decode_plan_copy_bytes_per_layer(plan);
}

static void *staging_slot(const Decode *d, guint layer) {
  guint slots = d->plan->options.prefetch_depth + 1;
  return (char *) d->staging + (guint64) (layer % slots) * remote_layer_bytes(d->plan);
}

static const void *other_pool(const Decode *d, guint layer) {
  switch (d->plan->options.mode) {
  case EMA_DECODE_DIRECT:
    return (const char *) d->remote_pool + (guint64) layer * remote_layer_bytes(d->plan);
  case EMA_DECODE_PREFETCH:
    return staging_slot(d, layer);
  case EMA_DECODE_LOCAL:
    break;
  }
  return NULL;
}

EmaAttentionArgs ema_decode_attention_args(const EmaDecodePlan *plan, guint layer,
                                           const int32_t *table, const void *pool_local,
                                           const void *pool_other, const void *queries,
                                           float *partial, unsigned *counters, float *out) {
  EmaAttentionArgs args = {
      .block_table = table,
      .pool_local = pool_local,
      .pool_other = pool_other,
      .queries =
          (const char *) queries + (guint64) layer * ema_decode_plan_query_elements(plan) * 2,
      .partial = partial,
      .counters = counters,
      .out = out + (guint64) layer * ema_decode_plan_output_elements(plan),
      .batch = plan->options.batch,
      .context = plan->options.context,
      .blocks_per_seq = plan->blocks_per_seq,
      .blocks_per_part = plan->blocks_per_part,
      .parts_per_seq = plan->parts_per_seq,
      .kv_heads = plan->kv_heads,
      .group = plan->group,
      .head_dim = plan->head_dim,
      .group_splits = plan->group_splits,
      .scale = (float) (1.0 / sqrt((double) plan->head_dim)),
  };
  return args;
}

static EmaAttentionArgs attention_args(const Decode *d, guint layer) {
  return ema_decode_attention_args(
      d->plan, layer, d->table,
      (const char *) d->local_pool + (guint64) layer * ema_decode_local_layer_bytes(d->plan),
      other_pool(d, layer), d->queries, d->partial, d->counters, d->out);
}

static gboolean enqueue_gemv(Decode *d, guint layer, GError **error) {
  const EmaDecodePlan *plan = d->plan;
  gboolean lm_head = layer == plan->layers;
  const void *weights =
      lm_head ? d->lm_head : (const char *) d->weights + (guint64) layer * plan->layer_weight_bytes;
  const void *x = (const char *) d->activations + (guint64) layer * plan->hidden * 2;
  float *y = d->y + (guint64) layer * plan->layer_weight_rows;
  guint64 rows = lm_head ? plan->lm_head_rows : plan->layer_weight_rows;
  return EMA_CUDA(COMPUTE_GPU, error,
                  ema_launch_gemv(d->stream, &d->shape, weights, x, y, rows, plan->hidden));
}

static gboolean enqueue_attention(Decode *d, guint layer, GError **error) {
  EmaAttentionArgs args = attention_args(d, layer);
  return EMA_CUDA(COMPUTE_GPU, error, ema_launch_attention(d->stream, &args));
}

static gboolean enqueue_copy(Decode *d, cudaStream_t stream, guint layer, GError **error) {
  guint64 bytes = remote_layer_bytes(d->plan);
  const void *source = (const char *) d->remote_pool + (guint64) layer * bytes;
  if (bytes == 0)
    return TRUE;
  /* a peer copy through unified addressing (peer access is on), which a
   * CUDA graph captures as an ordinary memcpy node */
  return EMA_CUDA(
      COMPUTE_GPU, error,
      cudaMemcpyAsync(staging_slot(d, layer), source, bytes, cudaMemcpyDefault, stream));
}

/* Issue the prefetch of LAYER on the copy stream, after WAIT_FOR (a layer
 * whose attention must be done first, or -1). */
static gboolean issue_prefetch(Decode *d, guint layer, int wait_for, GError **error) {
  return (wait_for < 0 ||
          EMA_CUDA(COMPUTE_GPU, error,
                   cudaStreamWaitEvent(d->copy_stream, d->consumed[wait_for], 0))) &&
         enqueue_copy(d, d->copy_stream, layer, error) &&
         EMA_CUDA(COMPUTE_GPU, error, cudaEventRecord(d->copied[layer], d->copy_stream));
}

static gboolean work_step(gpointer data, GError **error) {
  Decode *d = data;
  const EmaDecodePlan *plan = d->plan;
  guint layers = plan->layers, depth = plan->options.prefetch_depth;
  gboolean prefetch = d->with_copies && d->with_attention;
  gboolean ok = EMA_CUDA(COMPUTE_GPU, error, cudaSetDevice(COMPUTE_GPU));

  if (d->with_copies && !d->with_attention) { /* the copies alone, back to back */
    for (guint l = 0; ok && l < layers; l++)
      ok = enqueue_copy(d, d->stream, l, error);
    return ok;
  }
  if (ok && d->with_weights)
    ok = EMA_CUDA(COMPUTE_GPU, error,
                  cudaMemsetAsync(d->y, 0, d->y_floats * sizeof(float), d->stream));
  if (ok && prefetch) {
    ok = EMA_CUDA(COMPUTE_GPU, error, cudaEventRecord(d->fork, d->stream)) &&
         EMA_CUDA(COMPUTE_GPU, error, cudaStreamWaitEvent(d->copy_stream, d->fork, 0));
    for (guint l = 0; ok && l < depth; l++)
      ok = issue_prefetch(d, l, -1, error);
  }
  for (guint l = 0; ok && l < layers; l++) {
    if (prefetch && l + depth < layers)
      ok = issue_prefetch(d, l + depth, (int) l - 1, error);
    if (ok && d->with_weights)
      ok = enqueue_gemv(d, l, error);
    if (ok && d->with_attention) {
      if (prefetch)
        ok = EMA_CUDA(COMPUTE_GPU, error, cudaStreamWaitEvent(d->stream, d->copied[l], 0));
      ok = ok && enqueue_attention(d, l, error);
      if (ok && prefetch)
        ok = EMA_CUDA(COMPUTE_GPU, error, cudaEventRecord(d->consumed[l], d->stream));
    }
  }
  if (ok && d->with_weights)
    ok = enqueue_gemv(d, layers, error);
  return ok;
}

/* ---- setup -------------------------------------------------------------- */

static gboolean check_memory(int device, guint64 needed, GError **error) {
  size_t free_bytes = 0, total_bytes = 0;
  if (!EMA_CUDA(device, error, cudaSetDevice(device)) ||
      !EMA_CUDA(device, error, cudaMemGetInfo(&free_bytes, &total_bytes)))
    return FALSE;
  if (needed + MEMORY_MARGIN > free_bytes) {
    g_set_error(error, EMA_VALIDATE_ERROR, EMA_VALIDATE_ERROR_UNSUPPORTED,
                "GPU %d: this decode needs %.2f GiB but %.2f GiB are free (of %.2f GiB)", device,
                needed / 1073741824.0, free_bytes / 1073741824.0, total_bytes / 1073741824.0);
    return FALSE;
  }
  return TRUE;
}

static gboolean fill(cudaStream_t stream, const EmaKernelShape *shape, void *buffer,
                     guint64 elements, guint64 seed, int device, GError **error) {
  if (elements == 0)
    return TRUE;
  return EMA_CUDA(device, error, ema_launch_fill_bf16(stream, shape, buffer, elements, seed));
}

/* The peer pull's buffers, stream and events; peer access both ways. */
static gboolean allocate_pull(Decode *d, EmaGpuArena *arena, GError **error) {
  return ema_gpu_peer_enable(arena, REMOTE_GPU, COMPUTE_GPU, error) &&
         ema_gpu_malloc(arena, REMOTE_GPU, 16, &d->pull_sink, error) &&
         ema_gpu_peer_enable(arena, COMPUTE_GPU, REMOTE_GPU, error) &&
         ema_gpu_malloc(arena, COMPUTE_GPU, EMA_DECODE_PULL_CHUNK, &d->pull_src, error) &&
         ema_gpu_malloc(arena, REMOTE_GPU, EMA_DECODE_PULL_CHUNK, &d->pull_dst, error) &&
         ema_gpu_stream_new(arena, REMOTE_GPU, &d->pull_stream, error) &&
         ema_gpu_event_new(arena, REMOTE_GPU, TRUE, &d->pull_first, error) &&
         ema_gpu_event_new(arena, REMOTE_GPU, TRUE, &d->pull_last, error) &&
         fill(d->stream, &d->shape, d->pull_src, EMA_DECODE_PULL_CHUNK / 2,
              EMA_SEED_CALIBRATION + 16, COMPUTE_GPU, error) &&
         EMA_CUDA(COMPUTE_GPU, error, cudaStreamSynchronize(d->stream)) &&
         EMA_CUDA(REMOTE_GPU, error, ema_kernel_shape(REMOTE_GPU, &d->pull_shape)) &&
         fill(d->pull_stream, &d->pull_shape, d->pull_dst, EMA_DECODE_PULL_CHUNK / 2,
              EMA_SEED_CALIBRATION + 17, REMOTE_GPU, error) &&
         EMA_CUDA(REMOTE_GPU, error, cudaStreamSynchronize(d->pull_stream));
}

static gboolean allocate_and_fill(Decode *d, EmaGpuArena *arena, GError **error) {
  EmaDecodePlan *plan = d->plan;
  guint layers = plan->layers;
  gboolean remote = plan->options.mode != EMA_DECODE_LOCAL;
  gboolean prefetch = plan->options.mode == EMA_DECODE_PREFETCH;
  guint64 weight_bytes = (guint64) layers * plan->layer_weight_bytes;
  guint64 activation_bytes = (guint64) (layers + 1) * plan->hidden * 2;
  guint64 query_bytes = (guint64) layers * ema_decode_plan_query_elements(plan) * 2;
  guint64 local_bytes = MAX(16, (guint64) layers * ema_decode_local_layer_bytes(plan));
  guint64 remote_bytes = MAX(16, (guint64) layers * remote_layer_bytes(plan));
  guint64 staging_bytes =
      MAX(16, (guint64) (plan->options.prefetch_depth + 1) * remote_layer_bytes(plan));
  guint64 table_bytes = (guint64) plan->total_blocks * sizeof(int32_t);
  guint64 partial_bytes = ema_decode_plan_partial_floats(plan) * sizeof(float);
  guint64 counter_bytes = ema_decode_plan_counters(plan) * sizeof(unsigned);
  guint64 out_bytes = (guint64) layers * ema_decode_plan_output_elements(plan) * sizeof(float);
  guint64 needed;
  EmaKernelShape remote_shape;
  cudaStream_t remote_stream = NULL;

  d->y_floats = (guint64) layers * plan->layer_weight_rows + plan->lm_head_rows;
  needed = weight_bytes + plan->lm_head_bytes + activation_bytes + query_bytes + local_bytes +
           (prefetch ? staging_bytes : 0) + table_bytes + partial_bytes + counter_bytes +
           out_bytes + d->y_floats * sizeof(float) + (d->pull ? EMA_DECODE_PULL_CHUNK : 0);
  if (!check_memory(COMPUTE_GPU, needed, error) ||
      ((remote || d->pull) &&
       !check_memory(REMOTE_GPU,
                     (remote ? remote_bytes : 0) + (d->pull ? EMA_DECODE_PULL_CHUNK : 0), error)))
    return FALSE;

  if (!ema_gpu_stream_new(arena, COMPUTE_GPU, &d->stream, error) ||
      !ema_gpu_stream_new(arena, COMPUTE_GPU, &d->copy_stream, error) ||
      !ema_gpu_event_new(arena, COMPUTE_GPU, FALSE, &d->fork, error))
    return FALSE;
  d->copied = g_new0(cudaEvent_t, layers);
  d->consumed = g_new0(cudaEvent_t, layers);
  for (guint l = 0; l < layers; l++)
    if (!ema_gpu_event_new(arena, COMPUTE_GPU, FALSE, &d->copied[l], error) ||
        !ema_gpu_event_new(arena, COMPUTE_GPU, FALSE, &d->consumed[l], error))
      return FALSE;

  if (!ema_gpu_malloc(arena, COMPUTE_GPU, weight_bytes, &d->weights, error) ||
      !ema_gpu_malloc(arena, COMPUTE_GPU, plan->lm_head_bytes, &d->lm_head, error) ||
      !ema_gpu_malloc(arena, COMPUTE_GPU, activation_bytes, &d->activations, error) ||
      !ema_gpu_malloc(arena, COMPUTE_GPU, query_bytes, &d->queries, error) ||
      !ema_gpu_malloc(arena, COMPUTE_GPU, local_bytes, &d->local_pool, error) ||
      (prefetch && !ema_gpu_malloc(arena, COMPUTE_GPU, staging_bytes, &d->staging, error)) ||
      !ema_gpu_malloc(arena, COMPUTE_GPU, table_bytes, (void **) &d->table, error) ||
      !ema_gpu_malloc(arena, COMPUTE_GPU, partial_bytes, (void **) &d->partial, error) ||
      !ema_gpu_malloc(arena, COMPUTE_GPU, counter_bytes, (void **) &d->counters, error) ||
      !ema_gpu_malloc(arena, COMPUTE_GPU, out_bytes, (void **) &d->out, error) ||
      !ema_gpu_malloc(arena, COMPUTE_GPU, d->y_floats * sizeof(float), (void **) &d->y, error))
    return FALSE;

  if (!fill(d->stream, &d->shape, d->weights, weight_bytes / 2, EMA_SEED_WEIGHTS, COMPUTE_GPU,
            error) ||
      !fill(d->stream, &d->shape, d->lm_head, plan->lm_head_bytes / 2, EMA_SEED_LM_HEAD,
            COMPUTE_GPU, error) ||
      !fill(d->stream, &d->shape, d->activations, activation_bytes / 2, EMA_SEED_ACTIVATIONS,
            COMPUTE_GPU, error) ||
      !fill(d->stream, &d->shape, d->queries, query_bytes / 2, EMA_SEED_QUERIES, COMPUTE_GPU,
            error) ||
      !fill(d->stream, &d->shape, d->local_pool,
            (guint64) layers * ema_decode_local_layer_bytes(plan) / 2, EMA_SEED_KV_LOCAL,
            COMPUTE_GPU, error) ||
      !EMA_CUDA(COMPUTE_GPU, error,
                cudaMemcpyAsync(d->table, plan->block_table, table_bytes, cudaMemcpyHostToDevice,
                                d->stream)) ||
      !EMA_CUDA(COMPUTE_GPU, error, cudaMemsetAsync(d->counters, 0, counter_bytes, d->stream)) ||
      !EMA_CUDA(COMPUTE_GPU, error, cudaStreamSynchronize(d->stream)))
    return FALSE;

  if (d->pull && !allocate_pull(d, arena, error))
    return FALSE;
  if (remote) {
    if (!ema_gpu_peer_enable(arena, COMPUTE_GPU, REMOTE_GPU, error) ||
        !ema_gpu_malloc(arena, REMOTE_GPU, remote_bytes, &d->remote_pool, error) ||
        !ema_gpu_stream_new(arena, REMOTE_GPU, &remote_stream, error) ||
        !EMA_CUDA(REMOTE_GPU, error, ema_kernel_shape(REMOTE_GPU, &remote_shape)) ||
        !fill(remote_stream, &remote_shape, d->remote_pool,
              (guint64) layers * remote_layer_bytes(plan) / 2, EMA_SEED_KV_REMOTE, REMOTE_GPU,
              error) ||
        !EMA_CUDA(REMOTE_GPU, error, cudaStreamSynchronize(remote_stream)))
      return FALSE;
  }
  return EMA_CUDA(COMPUTE_GPU, error, cudaSetDevice(COMPUTE_GPU));
}

static gboolean setup(Decode *d, EmaGpuArena *arena, GError **error) {
  EmaDecodePlan *plan = d->plan;
  /* the attention split depends on the GPU: partition before sizing */
  if (!EMA_CUDA(COMPUTE_GPU, error, ema_kernel_shape(COMPUTE_GPU, &d->shape)))
    return FALSE;
  ema_decode_plan_partition(plan, (guint) d->shape.multiprocessors);
  return allocate_and_fill(d, arena, error);
}

/* ---- verification -------------------------------------------------------- */

static gboolean verify_gemv(Decode *d, guint layer, double *worst, GError **error) {
  const EmaDecodePlan *plan = d->plan;
  guint64 rows = layer == plan->layers ? plan->lm_head_rows : plan->layer_weight_rows;
  g_autofree float *y = g_new(float, rows);
  guint64 samples[24];
  guint n = 0;

  if (!EMA_CUDA(COMPUTE_GPU, error,
                cudaMemcpy(y, d->y + (guint64) layer * plan->layer_weight_rows,
                           rows * sizeof(float), cudaMemcpyDeviceToHost)))
    return FALSE;
  for (guint64 i = 0; i < 8; i++) {
    samples[n++] = MIN(i, rows - 1);
    samples[n++] = MIN(rows / 2 + i, rows - 1);
    samples[n++] = rows > 8 ? rows - 8 + i : MIN(i, rows - 1);
  }
  for (guint i = 0; i < n; i++) {
    double magnitude;
    double expected = ema_decode_reference_gemv(plan, layer, samples[i], &magnitude);
    double difference = fabs(y[samples[i]] - expected);
    *worst = MAX(*worst, difference / MAX(magnitude, 1e-30));
    if (difference > GEMV_TOLERANCE * magnitude + 1e-6) {
      g_set_error(error, EMA_VALIDATE_ERROR, EMA_VALIDATE_ERROR_VERIFY,
                  "GEMV of layer %u, row %" G_GUINT64_FORMAT ": GPU %.9g, CPU reference %.9g",
                  layer, samples[i], y[samples[i]], expected);
      return FALSE;
    }
  }
  return TRUE;
}

static gboolean verify_attention(Decode *d, guint layer, double *worst, GError **error) {
  const EmaDecodePlan *plan = d->plan;
  guint64 count = ema_decode_plan_output_elements(plan);
  guint width = plan->group * plan->head_dim;
  g_autofree float *out = g_new(float, count);
  g_autofree double *expected = g_new(double, width);
  guint seqs[2] = {0, plan->options.batch - 1};
  guint heads[2] = {0, plan->kv_heads - 1};

  if (!EMA_CUDA(COMPUTE_GPU, error,
                cudaMemcpy(out, d->out + (guint64) layer * count, count * sizeof(float),
                           cudaMemcpyDeviceToHost)))
    return FALSE;
  for (guint s = 0; s < 2; s++) {
    for (guint h = 0; h < 2; h++) {
      const float *got = out + ((guint64) seqs[s] * plan->kv_heads + heads[h]) * width;
      ema_decode_reference_attention(plan, layer, seqs[s], heads[h], expected);
      for (guint k = 0; k < width; k++) {
        double difference = fabs(got[k] - expected[k]);
        *worst = MAX(*worst, difference / MAX(fabs(expected[k]), 1e-3));
        if (difference > ATTENTION_ABS_TOLERANCE + ATTENTION_REL_TOLERANCE * fabs(expected[k])) {
          g_set_error(error, EMA_VALIDATE_ERROR, EMA_VALIDATE_ERROR_VERIFY,
                      "attention of layer %u, sequence %u, KV head %u, query %u, dimension %u: "
                      "GPU %.9g, CPU reference %.9g",
                      layer, seqs[s], heads[h], k / plan->head_dim, k % plan->head_dim, got[k],
                      expected[k]);
          return FALSE;
        }
      }
    }
  }
  return TRUE;
}

static gboolean verify(Decode *d, double *worst, GError **error) {
  guint last = d->plan->layers - 1;
  *worst = 0;
  return EMA_CUDA(COMPUTE_GPU, error, cudaStreamSynchronize(d->stream)) &&
         verify_gemv(d, 0, worst, error) && verify_gemv(d, last, worst, error) &&
         verify_gemv(d, d->plan->layers, worst, error) && verify_attention(d, 0, worst, error) &&
         verify_attention(d, last, worst, error);
}

/* ---- the run ------------------------------------------------------------- */

typedef struct {
  EmaSampleStats step, weights, attention, copies;
  gboolean has_copies;
  double verify_error;
  gboolean verified;
  double pull_bytes, pull_s; /* timed steps only */
} DecodeTimes;

typedef struct {
  cudaGraphExec_t exec;
  cudaStream_t stream;
} GraphWork;

static gboolean work_graph(gpointer data, GError **error) {
  GraphWork *work = data;
  return EMA_CUDA(COMPUTE_GPU, error, cudaGraphLaunch(work->exec, work->stream));
}

/* A step with the peer pull: the step first (so that the host enqueueing
 * the pull adds nothing to its timed span), then the pull's chunks on
 * GPU1's stream, behind what earlier steps left there: each step brings
 * more pull than it lasts, so from the first step on the pull never pauses
 * and covers every timed step whole. The first timed call records
 * pull_first before its chunks; every call records pull_last after them
 * (the last one counts). */
typedef struct {
  Decode *d;
  EmaGpuWork step;
  gpointer step_data;
  guint calls, warmups;
} PullWork;

static gboolean work_with_pull(gpointer data, GError **error) {
  PullWork *w = data;
  Decode *d = w->d;
  gboolean ok = EMA_CUDA(COMPUTE_GPU, error, cudaSetDevice(COMPUTE_GPU)) &&
                w->step(w->step_data, error) &&
                EMA_CUDA(REMOTE_GPU, error, cudaSetDevice(REMOTE_GPU)) &&
                (w->calls != w->warmups ||
                 EMA_CUDA(REMOTE_GPU, error, cudaEventRecord(d->pull_first, d->pull_stream)));
  if (ok && d->pull_direct)
    ok = EMA_CUDA(REMOTE_GPU, error,
                  ema_launch_stream_read(d->pull_stream, &d->pull_shape, d->pull_src,
                                         EMA_DECODE_PULL_CHUNK, d->pull_chunks, d->pull_sink));
  for (guint i = 0; ok && !d->pull_direct && i < d->pull_chunks; i++)
    ok = EMA_CUDA(REMOTE_GPU, error,
                  cudaMemcpyPeerAsync(d->pull_dst, REMOTE_GPU, d->pull_src, COMPUTE_GPU,
                                      EMA_DECODE_PULL_CHUNK, d->pull_stream));
  w->calls++;
  return ok && EMA_CUDA(REMOTE_GPU, error, cudaEventRecord(d->pull_last, d->pull_stream)) &&
         EMA_CUDA(COMPUTE_GPU, error, cudaSetDevice(COMPUTE_GPU));
}

/* Time WORK on GPU0's stream, with the peer pull around every call when D
 * has one; SAMPLES gets REPEATS seconds. The pull's timed bytes and time
 * go to T. */
static gboolean time_work(Decode *d, const EmaDecodeRunOptions *options, gboolean pull,
                          EmaGpuWork work, gpointer data, double *samples, DecodeTimes *t,
                          GError **error) {
  PullWork pull_work = {d, work, data, 0, options->warmups};
  float ms = 0;
  gboolean ok;
  if (!pull)
    return ema_gpu_time(COMPUTE_GPU, d->stream, options->warmups, options->repeats, work, data,
                        samples, error);
  ok = ema_gpu_time(COMPUTE_GPU, d->stream, options->warmups, options->repeats, work_with_pull,
                    &pull_work, samples, error);
  /* the pull outlasts the steps: wait for it whatever happened */
  ok = EMA_CUDA(REMOTE_GPU, error, cudaSetDevice(REMOTE_GPU)) &&
       EMA_CUDA(REMOTE_GPU, error, cudaStreamSynchronize(d->pull_stream)) && ok &&
       EMA_CUDA(REMOTE_GPU, error, cudaEventElapsedTime(&ms, d->pull_first, d->pull_last)) &&
       EMA_CUDA(COMPUTE_GPU, error, cudaSetDevice(COMPUTE_GPU));
  t->pull_bytes = (double) options->repeats * d->pull_chunks * EMA_DECODE_PULL_CHUNK;
  t->pull_s = ms * 1e-3;
  return ok;
}

/* Time the pass that D's flags select: as a CUDA graph captured once and
 * replayed (as serving engines run decode steps), or enqueued afresh; with
 * the peer pull if PULL. SAMPLES (NULL: none) gets every timed repeat. */
static gboolean time_pass(Decode *d, const EmaDecodeRunOptions *options, gboolean weights,
                          gboolean attention, gboolean copies, gboolean pull, EmaSampleStats *stats,
                          GArray *samples_out, DecodeTimes *t, GError **error) {
  g_autofree double *samples = g_new(double, options->repeats);
  cudaGraph_t graph = NULL;
  GraphWork work = {NULL, d->stream};
  gboolean ok;

  d->with_weights = weights;
  d->with_attention = attention;
  d->with_copies = copies;
  if (!options->graph) {
    ok = time_work(d, options, pull, work_step, d, samples, t, error);
  } else {
    ok = EMA_CUDA(COMPUTE_GPU, error, cudaSetDevice(COMPUTE_GPU)) &&
         EMA_CUDA(COMPUTE_GPU, error,
                  cudaStreamBeginCapture(d->stream, cudaStreamCaptureModeRelaxed));
    if (ok) {
      /* end the capture whatever happened inside it */
      gboolean enqueued = work_step(d, error);
      ok = EMA_CUDA(COMPUTE_GPU, error, cudaStreamEndCapture(d->stream, &graph)) && enqueued;
    }
    ok = ok && EMA_CUDA(COMPUTE_GPU, error, cudaGraphInstantiate(&work.exec, graph, 0)) &&
         time_work(d, options, pull, work_graph, &work, samples, t, error);
    if (work.exec)
      ok = EMA_CUDA(COMPUTE_GPU, error, cudaGraphExecDestroy(work.exec)) && ok;
    if (graph)
      ok = EMA_CUDA(COMPUTE_GPU, error, cudaGraphDestroy(graph)) && ok;
  }
  if (ok)
    ema_sample_stats(samples, options->repeats, stats);
  if (ok && samples_out)
    g_array_append_vals(samples_out, samples, options->repeats);
  return ok;
}

static char *format_row(const EmaDecodePlan *plan, const DecodeTimes *t, const char *gpu_name,
                        const char *date, double predicted_s, guint repeats, gboolean graph) {
  const EmaDecodeOptions *o = &plan->options;
  double weight_gb = ema_decode_plan_weight_bytes(plan) / 1e9;
  double local_gb = ema_decode_plan_kv_local_bytes(plan) / 1e9;
  double remote_gb = ema_decode_plan_kv_remote_bytes(plan) / 1e9;
  double copy_gb = o->mode == EMA_DECODE_PREFETCH
                       ? (double) ema_decode_plan_copy_bytes_per_layer(plan) * plan->layers / 1e9
                       : 0;
  double effective = (weight_gb + local_gb + remote_gb) * 1e9 / t->step.mean / 1e12;
  g_autofree char *gpu = ema_csv_field(gpu_name);
  return g_strdup_printf(
      "%s,%s,%s,%u,%u,%s,%.4f,%u,%u,%u,%u,%.4f,%.4f,%.4f,%.4f,%.2f,%.4f,%.4f,%.4f,%.4f,%.4f,%.4f,"
      "%.4f,%.4f,%.4f,%s,%s,%.2f",
      date, gpu, plan->model_name, o->batch, o->context, ema_decode_mode_name(o->mode),
      o->remote_fraction, o->prefetch_depth, plan->remote_blocks, plan->total_blocks, repeats,
      t->step.mean * 1e3, t->step.median * 1e3, t->step.min * 1e3, t->step.max * 1e3,
      ema_sample_spread_pct(&t->step), t->weights.median * 1e3, t->attention.median * 1e3,
      t->has_copies ? t->copies.median * 1e3 : 0, weight_gb, local_gb, remote_gb, copy_gb,
      effective, predicted_s * 1e3, graph ? "graph" : "stream", t->verified ? "yes" : "skipped",
      t->pull_s > 0 ? t->pull_bytes / t->pull_s / 1e9 : 0.0);
}

static void print_summary(const EmaDecodePlan *plan, const DecodeTimes *t, double predicted_s,
                          const char *server_name, guint repeats) {
  const EmaDecodeOptions *o = &plan->options;
  double weight_bytes = (double) ema_decode_plan_weight_bytes(plan);
  double local_bytes = (double) ema_decode_plan_kv_local_bytes(plan);
  double remote_bytes = (double) ema_decode_plan_kv_remote_bytes(plan);
  double total = weight_bytes + local_bytes + remote_bytes;

  printf("  step       %9.3f ms mean (median %.3f, min %.3f, max %.3f, spread %.1f%%; %u "
         "repeats)\n",
         t->step.mean * 1e3, t->step.median * 1e3, t->step.min * 1e3, t->step.max * 1e3,
         ema_sample_spread_pct(&t->step), repeats);
  printf("  weights    %9.3f ms  (%u layers + LM head: %.2f GB, %.0f GB/s)\n",
         t->weights.median * 1e3, plan->layers, weight_bytes / 1e9,
         weight_bytes / t->weights.median / 1e9);
  printf("  attention  %9.3f ms  (KV %.3f GB local + %.3f GB remote%s)\n",
         t->attention.median * 1e3, local_bytes / 1e9, remote_bytes / 1e9,
         o->mode == EMA_DECODE_PREFETCH ? ", remote part read from staging" : "");
  if (t->has_copies) {
    double copy_bytes = (double) ema_decode_plan_copy_bytes_per_layer(plan) * plan->layers;
    double hidden = (t->weights.median + t->attention.median + t->copies.median - t->step.median) /
                    t->copies.median;
    printf("  copies     %9.3f ms  (prefetch: %.3f GB in %u copies, %.0f GB/s)\n",
           t->copies.median * 1e3, copy_bytes / 1e9, plan->layers,
           copy_bytes / t->copies.median / 1e9);
    printf("  copy time hidden: %.0f%%  ((weights + attention + copies - step) / copies)\n",
           100 * hidden);
  }
  printf("  bytes read per step %.2f GB: %.0f GB/s effective (%.0f%% of the 4.8 TB/s datasheet "
         "HBM)\n",
         total / 1e9, total / t->step.mean / 1e9,
         100 * total / t->step.mean / DATASHEET_HBM_BANDWIDTH);
  if (predicted_s > 0)
    printf("  step-time model (%s, all KV local): %.3f ms (measured / model = %.3f)\n", server_name,
           predicted_s * 1e3, t->step.mean / predicted_s);
  if (t->verified)
    printf("  verified: GEMV rows and attention outputs of the first and last layers match the "
           "CPU reference (largest relative error %.1e)\n",
           t->verify_error);
}

static double predicted_step(const EmaLlmSpec *model, const EmaDecodePlan *plan,
                             const EmaServerSpec *server) {
  g_autoptr(EmaStepModel) step_model = NULL;
  EmaStepBatch batch = {0};
  GError *error = NULL;
  if (server == NULL)
    return 0;
  step_model = ema_step_model_new(model, server, 1, &error);
  if (step_model == NULL) {
    g_clear_error(&error);
    return 0;
  }
  batch.decode_seqs = plan->options.batch;
  batch.decode_context = (double) plan->options.batch * plan->options.context;
  batch.logits = plan->options.batch;
  return ema_step_time(step_model, &batch, NULL) * 1e-9;
}

void ema_decode_result_clear(EmaDecodeResult *result) {
  if (result == NULL)
    return;
  if (result->step_samples)
    g_array_unref(result->step_samples);
  memset(result, 0, sizeof *result);
}

/* The pull's setting: enough chunks per step to outlast the longest step
 * the passes alone suggest, at any rate the link can reach. */
static void size_pull(Decode *d, const DecodeTimes *t) {
  double step = t->weights.max + t->attention.max + (t->has_copies ? t->copies.max : 0);
  d->pull_chunks =
      (guint) MAX(1, ceil(PULL_MARGIN * step * PULL_RATE_MAX / (double) EMA_DECODE_PULL_CHUNK));
}

gboolean ema_decode_run(EmaDecodePlan *plan, const EmaLlmSpec *model,
                        const EmaDecodeRunOptions *options, EmaDecodeResult *result,
                        GError **error) {
  g_autoptr(EmaGpuArena) arena = ema_gpu_arena_new();
  g_autoptr(GDateTime) now = g_date_time_new_now_utc();
  g_autofree char *date = g_date_time_format(now, "%Y-%m-%dT%H:%M:%SZ");
  g_autofree char *row = NULL;
  g_autoptr(GArray) step_samples = g_array_new(FALSE, FALSE, sizeof(double));
  Decode d = {0};
  DecodeTimes t = {0};
  struct cudaDeviceProp prop;
  int count = 0;
  gboolean remote = plan->options.mode != EMA_DECODE_LOCAL;
  gboolean prefetch = plan->options.mode == EMA_DECODE_PREFETCH;
  gboolean pull = options->peer_pull > 0;
  double predicted;
  gboolean ok;

  if (!ema_cuda_device_count(&count, error))
    return FALSE;
  if ((remote || pull) && count < 2) {
    if (remote)
      g_set_error(error, EMA_VALIDATE_ERROR, EMA_VALIDATE_ERROR_NO_DEVICE,
                  "--mode %s keeps KV blocks on a second GPU; found %d CUDA device",
                  ema_decode_mode_name(plan->options.mode), count);
    else
      g_set_error(error, EMA_VALIDATE_ERROR, EMA_VALIDATE_ERROR_NO_DEVICE,
                  "a peer pull needs a second GPU; found %d CUDA device", count);
    return FALSE;
  }
  if (!EMA_CUDA(COMPUTE_GPU, error, cudaGetDeviceProperties(&prop, COMPUTE_GPU)))
    return FALSE;

  d.plan = plan;
  d.pull = pull;
  d.pull_direct = pull && options->peer_pull_direct;
  printf("decode %s: batch %u, context %u, mode %s", plan->model_name, plan->options.batch,
         plan->options.context, ema_decode_mode_name(plan->options.mode));
  if (remote)
    printf(" (%u of %u KV blocks on GPU1%s)", plan->remote_blocks, plan->total_blocks,
           prefetch ? "" : ", read over the link");
  if (prefetch)
    printf(", prefetch depth %u", plan->options.prefetch_depth);
  printf("\n  GPU0 %s computes%s; each pass %s\n", prop.name,
         remote ? ", GPU1 holds the remote blocks" : "",
         options->graph ? "captured once as a CUDA graph and replayed"
                        : "enqueued kernel by kernel");
  if (pull)
    printf("  while the step is timed, GPU1 pulls from GPU0's HBM (%s of %" G_GUINT64_FORMAT
           " MiB, back to back; the scenario asks %.0f GB/s)\n",
           d.pull_direct ? "a read kernel loading chunks" : "copies", EMA_DECODE_PULL_CHUNK >> 20,
           options->peer_pull / 1e9);
  fflush(stdout);

  t.has_copies = prefetch;
  ok = setup(&d, arena, error) &&
       time_pass(&d, options, TRUE, FALSE, FALSE, FALSE, &t.weights, NULL, &t, error) &&
       time_pass(&d, options, FALSE, TRUE, FALSE, FALSE, &t.attention, NULL, &t, error) &&
       (!prefetch || time_pass(&d, options, FALSE, FALSE, TRUE, FALSE, &t.copies, NULL, &t, error));
  if (ok && pull)
    size_pull(&d, &t);
  ok = ok && time_pass(&d, options, TRUE, TRUE, prefetch, pull, &t.step, step_samples, &t, error) &&
       (!options->verify || verify(&d, &t.verify_error, error));
  if (!ok) { /* let queued work finish before the buffers go; the error is already set */
    for (int g = MIN(count, 2) - 1; g >= 0; g--)
      if (cudaSetDevice(g) == cudaSuccess)
        (void) cudaDeviceSynchronize();
    (void) cudaGetLastError();
  }
  ok = ema_gpu_arena_release(arena, error) && ok;
  g_free(d.copied);
  g_free(d.consumed);
  if (!ok)
    return FALSE;
  t.verified = options->verify;

  predicted = predicted_step(model, plan, options->server);
  print_summary(plan, &t, predicted, options->server ? options->server->name : "-",
                options->repeats);
  if (pull)
    printf("  peer pull: GPU1 %s %.2f GB out of GPU0 while the steps were timed, at %.1f "
           "GB/s\n",
           d.pull_direct ? "loaded" : "copied", t.pull_bytes / 1e9, t.pull_bytes / t.pull_s / 1e9);
  if (options->csv_path) {
    row = format_row(plan, &t, prop.name, date, predicted, options->repeats, options->graph);
    if (!ema_csv_append_row(options->csv_path, EMA_DECODE_CSV_HEADER, row, error))
      return FALSE;
    printf("  appended to %s\n", options->csv_path);
  }
  if (result) {
    memset(result, 0, sizeof *result);
    result->step = t.step;
    result->weights = t.weights;
    result->attention = t.attention;
    result->copies = t.copies;
    result->step_samples = g_steal_pointer(&step_samples);
    result->bytes = (double) ema_decode_plan_weight_bytes(plan) +
                    (double) ema_decode_plan_kv_local_bytes(plan) +
                    (double) ema_decode_plan_kv_remote_bytes(plan);
    result->pull_rate = pull && t.pull_s > 0 ? t.pull_bytes / t.pull_s : 0;
  }
  return TRUE;
}
