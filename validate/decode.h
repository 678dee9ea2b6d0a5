/* decode.h: `ema-validate decode`, the synthetic decode step of a model on
 * real GPUs (the plan is decodeplan.h's): GPU0 computes, GPU1 holds the
 * remote KV blocks. It times, over repeats after warm-ups:
 *   step       the whole step as a serving engine runs it
 *   weights    the GEMV kernels alone (all layers and the LM head)
 *   attention  the attention kernels alone (reading remote blocks over the
 *              link in direct mode, the staging slots in prefetch mode)
 *   copies     the prefetch copies alone, back to back (prefetch mode)
 * (each pass captured once as a CUDA graph and replayed, as serving
 * engines run decode steps, unless told otherwise), checks layer 0's and
 * the last layer's outputs against CPU references, and
 * prints the breakdown, the bytes moved, the achieved bandwidth and the
 * step time that libema's step-time model predicts for the same batch.
 * `ema-validate run` times an experiment's decode scenarios with it (with
 * a peer pulling from GPU0 during the step when the scenario says so). */
#pragma once

#include <glib.h>

#include "decodeplan.h"
#include "ema/hw/hwmodel.h"
#include "ema/hw/llm.h"
#include "kernels.h"
#include "stats.h"

G_BEGIN_DECLS

/* The header of the CSV file `decode --csv FILE` appends its rows to (decode.csv). */
#define EMA_DECODE_CSV_HEADER                                                                      \
  "date,gpu,model,batch,context,mode,remote_fraction,prefetch_depth,remote_blocks,total_blocks,"   \
  "repeats,step_ms_mean,step_ms_median,step_ms_min,step_ms_max,step_spread_pct,weights_ms,"        \
  "attention_ms,copies_ms,weight_gb,kv_local_gb,kv_remote_gb,copy_gb,effective_tb_s,"              \
  "model_step_ms,launch,verified,peer_pull_gb_s"

typedef struct {
  guint repeats, warmups;
  gboolean graph; /* capture each pass as a CUDA graph and time its replays */
  gboolean verify;
  const char *csv_path;        /* append one row per run; NULL: none */
  const EmaServerSpec *server; /* for the step-time prediction; NULL: none */
  /* > 0: while the step is timed, GPU1 pulls from GPU0's HBM (the
   * lender's own decode while a borrower copies out of it): copies of
   * EMA_DECODE_PULL_CHUNK back to back with cudaMemcpyPeerAsync on a GPU1
   * stream (issued by the destination, as calibrate's interference
   * measurement), more of them per step than it lasts, so that the pull
   * runs through every timed step. They run as
   * fast as the link lets them: the value is what the scenario asks for,
   * the rate reached is measured (EmaDecodeResult.pull_rate). */
  double peer_pull;
  /* the pull is a streaming-read kernel on GPU1 loading GPU0's memory over
   * the link (as a borrower's direct loads), the same chunks, in place of
   * the copies */
  gboolean peer_pull_direct;
} EmaDecodeRunOptions;

#define EMA_DECODE_PULL_CHUNK ((guint64) 256 << 20)

/* What a run measured. Times are seconds. */
typedef struct {
  EmaSampleStats step, weights, attention, copies; /* copies: prefetch mode only */
  GArray *step_samples;                            /* double, every timed step */
  double bytes;     /* weights + local KV + remote KV one step reads */
  double pull_rate; /* peer_pull: bytes GPU1 pulled / the time the pull took; 0: none */
} EmaDecodeResult;

void ema_decode_result_clear(EmaDecodeResult *result);

/* Run PLAN (partitioned here for GPU0), print the breakdown (and append the
 * CSV row), and fill RESULT if not NULL (clear it with
 * ema_decode_result_clear). Needs 1 GPU in local mode without a peer pull,
 * 2 with peer access otherwise. */
gboolean ema_decode_run(EmaDecodePlan *plan, const EmaLlmSpec *model,
                        const EmaDecodeRunOptions *options, EmaDecodeResult *result,
                        GError **error);

/* The bytes of one layer's local KV blocks (the whole pool holds PLAN's
 * layers one after the other). */
guint64 ema_decode_local_layer_bytes(const EmaDecodePlan *plan);

/* The attention kernel's arguments for layer LAYER of PLAN (partitioned):
 * PLAN's shape, the block TABLE and the scratch PARTIAL and COUNTERS of the
 * step, the layer's blocks POOL_LOCAL and POOL_OTHER (NULL: none), and the
 * layer's part of QUERIES (bf16) and OUT, which hold every layer's. For the
 * decode step here and the lender's own decode of `ema-validate pool`. */
EmaAttentionArgs ema_decode_attention_args(const EmaDecodePlan *plan, guint layer,
                                           const int32_t *table, const void *pool_local,
                                           const void *pool_other, const void *queries,
                                           float *partial, unsigned *counters, float *out);

G_END_DECLS
