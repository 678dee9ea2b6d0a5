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
 * step time that libema's step-time model predicts for the same batch. */
#pragma once

#include <glib.h>

#include "decodeplan.h"
#include "ema/hwmodel.h"
#include "ema/llm.h"

G_BEGIN_DECLS

typedef struct {
  guint repeats, warmups;
  gboolean graph; /* capture each pass as a CUDA graph and time its replays */
  gboolean verify;
  const char *csv_path;        /* append one row per run; NULL: none */
  const EmaServerSpec *server; /* for the step-time prediction; NULL: none */
} EmaDecodeRunOptions;

/* Run PLAN (partitioned here for GPU0). Needs 1 GPU in local mode, 2 with
 * peer access otherwise. */
gboolean ema_decode_run(EmaDecodePlan *plan, const EmaLlmSpec *model,
                        const EmaDecodeRunOptions *options, GError **error);

G_END_DECLS
