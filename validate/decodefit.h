/* decodefit.h: the step-time model's GPU keys fitted to the synthetic
 * decode runs of `ema-validate decode --csv FILE` (decode.csv in a
 * calibration results directory). With the figures of steptime.h:
 *
 * Runs with a peer pull are left out (the step shares the HBM); of the
 * others, the CUDA-graph runs are used (all of them when none is one).
 *
 *   rate_m  = hbm_bandwidth x hbm_efficiency: the weight GEMVs' rate, the
 *             median over the runs of
 *             weight_gb / weights_ms (the weight pass alone);
 *   the attention kernels alone, over the all-local runs of the model with
 *   the most such runs, follow a least-squares line
 *             attention_ms = L x layer_overhead + kv_local_gb / rate_kv
 *             (L that model's layers): rate_kv = rate_m x kv_efficiency;
 *             an intercept below 0 gives layer_overhead 0 and a line
 *             through the origin;
 *   step_overhead = max(0, median over the same runs of step_ms_median -
 *             (weight_gb / rate_m + L x layer_overhead + kv_local_gb /
 *             rate_kv)): what a step costs beyond its two passes;
 *   roofline_p: the step model times each matrix product as
 *             (c^p + m^p)^(1/p) of its compute time c and memory time m;
 *             with MATRIX_RATE (FLOP/s) the weight passes of batch B give
 *             c = 2 x (weight_gb / 2 bytes) x B / MATRIX_RATE (2-byte
 *             weights, the workload's) and m = weight_gb / rate_m, and p in
 *             [1, 64] minimises the squared relative errors of the
 *             formula against weights_ms over the runs; fitted only where
 *             some run has c >= m / 10 (else the runs cannot tell p).
 *
 * Pure C. */
#pragma once

#include <glib.h>

#include "calyaml.h"

G_BEGIN_DECLS

/* One row of decode.csv, the columns the fit and `run` use. */
typedef struct {
  char *model;
  guint batch, context;
  char *mode; /* local, direct, prefetch */
  double remote_fraction;
  double step_ms;      /* step_ms_median */
  double weights_ms;   /* the weight pass alone */
  double attention_ms; /* the attention pass alone */
  double weight_gb, kv_local_gb, kv_remote_gb;
  gboolean graph;        /* launch: graph (else stream) */
  double peer_pull_gb_s; /* a peer pulled from the GPU meanwhile (0 when the column is absent) */
} EmaDecodeRow;

void ema_decode_row_free(EmaDecodeRow *row);

/* The rows of PATH (decode.csv; columns found by their header names, so
 * added columns do not matter). Errors: EMA_VALIDATE_ERROR_IO (a missing
 * file), EMA_VALIDATE_ERROR_DATA ("path:line: what is wrong"). A
 * GPtrArray of EmaDecodeRow *, owning them. */
GPtrArray *ema_decode_rows_read(const char *path, GError **error);

/* Fit OUT from ROWS for a GPU whose streaming read reaches HBM_BANDWIDTH
 * (B/s, as the model file states it) and whose matrix products run at
 * MATRIX_RATE (FLOP/s: matrix_flops x matrix_efficiency of the model file;
 * 0: roofline_p not fitted). The model of the attention line is loaded by
 * name (ema_llm_load) for its layers. Errors: EMA_VALIDATE_ERROR_FIT (no
 * usable run, fewer than two KV sizes, a line that does not rise),
 * libema's errors for an unknown model. */
gboolean ema_decode_fit(const GPtrArray *rows, double hbm_bandwidth, double matrix_rate,
                        EmaStepFigures *out, GError **error);

G_END_DECLS
