/* offload.h: the cost model of attention offload, the third way (beside
 * direct loads and prefetch) for a borrower to use KV that lives on lender
 * GPUs: each lender computes decode attention over the borrower's KV that it
 * holds, and only queries and partial results cross the link.
 *
 * A borrower's decode step with offloaded KV. Per decoder layer, for every
 * lender j holding KV of n_j of the step's requests (c_j tokens of their
 * context together; for m_j <= n_j of them the new token's K/V is written on
 * the lender rather than locally), on one GPU of a TP group of tp (H = heads
 * / tp query heads, K = max(1, kv_heads / tp) KV heads of width d, b bytes
 * per element, kv_l = 2 K d b bytes of KV per token and layer):
 *
 *   sent     S_j = n_j H d b + m_j kv_l      the new token's query (and K/V)
 *   returned R_j = n_j H (d + 1) 4            partial output and log-sum-exp
 *                                             per head, fp32 (flash-decoding's
 *                                             split-KV partials)
 *   link     t_send_j = latency + S'_j / bandwidth, t_back_j likewise with R'_j,
 *            where S'_j = S_j on a direct topology (each pair has its own
 *            link) and S'_j = sum_k S_k on a switch or PCIe (every lender's
 *            message shares the borrower's port; charged to each, as the last
 *            of fair-shared transfers ends then); link.latency and
 *            link.bandwidth (per direction) of the server (hwmodel.h); no
 *            copy-engine fixed cost: the messages are a few KiB, written by
 *            the kernels themselves
 *   lender   t_att_j = kernel_overhead + max(c_j kv_l / rate_kv,
 *                                            4 H d c_j / rate_c) + m_j kv_l / rate_m
 *            rate_m = hbm_bandwidth x hbm_efficiency, rate_kv = rate_m x
 *            kv_efficiency, rate_c = matrix_flops x matrix_efficiency, as in
 *            steptime.h, times 1 + gpu.offload_partial_slowdown on a lender whose
 *            own tenant is running requests (its steps run beside the partial;
 *            measured on H200 by validate/offload-cost.py --latency-rates: the
 *            partial's median time beside four lender steps at 2-20% shares, x1.07
 *            to x1.44, median x1.165), as if alone on an idle lender
 *   remote   t_remote = max_j (t_send_j + t_att_j + t_back_j), or with the server's
 *            execution model (offexec.h) max_j (t_send_j + w_j + q_j + x_j + t_back_j),
 *            the sends and returns over its trigger path (copy: plus
 *            link.copy_fixed_cost each way)
 *   merge    per head of each of the step's u requests with remote KV, the
 *            split-KV merge reads its P partials ((d + 1) 4 bytes each: one
 *            per lender holding part of it, and the local one) and writes the
 *            d-element output:
 *              t_merge = H [(sum_j n_j + u) (d + 1) 4 + u d b] / rate_m
 *   layer    t_layer' = t_layer + max(0, t_remote - t_kv) + t_merge
 *            t_layer and t_kv (layer_s and layer_kv_read_s of the step model's
 *            breakdown of the step's local work, steptime.h): the remote
 *            partials run while the borrower's own attention reads its local
 *            KV, and the layer waits for the slower of the two, then merges
 *   step     T' = T + layers x (max(0, t_remote - t_kv) + t_merge)
 *
 * A TP group of t GPUs (ema_offload_model_new_group) offloads as a group:
 * each rank sends its own H heads' queries (S_j, R_j above, one rank's) to
 * the lender, which holds all t shards of the remote KV and computes every
 * rank's partials in one kernel:
 *   t_att_j = kernel_overhead + max(t c_j kv_l / rate_kv, t 4 H d c_j / rate_c)
 *             + t m_j kv_l / rate_m
 * Each rank's messages go over its own link on a direct topology; on a
 * switch or PCIe S'_j = max(sum_k S_k, t S_j) (the rank's port carrying
 * its messages to every lender, the lender's port every rank's), R'_j
 * likewise. The merge, the wait and the step are one rank's (the ranks
 * run alike); r_j and c_max below count the lender's reads of all t
 * shards (t c_j kv_l in place of c_j kv_l). Simplification: the t ranks'
 * queries reach the lender together (no skew between ranks).
 *
 * Assumption: per-layer round trips serialize with their layer (the query
 * exists only after the layer's QKV projection and the output projection
 * needs the merged output); they overlap only the layer's local attention,
 * never other layers.
 *
 * A lender's cost. Its share of HBM time that the offloaded reads take, at
 * the borrower's step rate, and its own step's extra time while the
 * borrowers B offloading to it run their steps:
 *   r_j = layers c_j kv_l / (T' x local_copy_bandwidth)
 *   dT_lender = s(sum_B r_j) x T_lender
 * s is gpu.offload_slowdown, the lender's measured slowdown against its
 * share, linear between the measured points (ema_gpu_offload_slowdown,
 * hwmodel.h). local_copy_bandwidth is the measure r was defined against
 * when s was measured (validate/offload-cost.py: the HBM traffic of a
 * large device-to-device copy, read + written); on H200 s is the mean of
 * four lender steps at each measured share (hwmodels/gpus/h200-sxm.yaml,
 * validate/offload-curve.py). Only the KV reads count in r (the
 * measurement's definition); the few-KiB queries, partials and new K/V are
 * left out of it.
 *
 * Within an allowance A (a share of the lender's HBM time, r_j <= A), the
 * most KV tokens a lender can take for a borrower whose step takes T:
 *   c_max = A x local_copy_bandwidth x T / (layers kv_l)
 * With T the borrower's step before the new offload (T' >= T), the bound is
 * conservative: the offload only lengthens the borrower's step, so the rate
 * of reads can only fall.
 *
 * Not modelled: link contention with other traffic (the messages are small
 * and the fabric's flows are not consulted), the partial's slowdown as a
 * function of the lender's load (one measured factor stands for every busy
 * lender), the LSE write on the lender. */
#pragma once

#include <glib.h>

#include "ema/core/event.h"
#include "ema/hw/hwmodel.h"
#include "ema/hw/llm.h"
#include "ema/hw/steptime.h"

G_BEGIN_DECLS

/* What one lender holds of a borrower's step: n_j, c_j, m_j above. */
typedef struct {
  guint64 seqs;         /* requests of the step with KV on this lender */
  double context;       /* tokens of their KV on this lender, together */
  guint64 new_kv;       /* of those requests, the ones whose new token's K/V the lender stores */
  gboolean lender_busy; /* the lender's own tenant is running requests: its steps run beside
                         * the partial, which takes 1 + gpu.offload_partial_slowdown as long */
  /* the execution model's (offexec.h) per-layer wait before the partial runs (s), and its run
   * over its time alone (0: the co-running factor above, offload.h's own model) */
  double wait_s;
  double run_scale;
} EmaOffloadShare;

/* Where the offloaded part of a borrower's step goes, per layer (seconds)
 * and per step. */
typedef struct {
  double layer_send_s;   /* the slowest lender's t_send_j */
  double layer_attend_s; /* the slowest lender's t_att_j */
  double layer_return_s; /* the slowest lender's t_back_j */
  double layer_remote_s; /* t_remote */
  double layer_wait_s;   /* max(0, t_remote - t_kv) */
  double layer_merge_s;  /* t_merge */
  double bytes_sent;     /* sum_j S_j x layers */
  double bytes_returned; /* sum_j R_j x layers */
  EmaTime added;         /* T' - T, ns */
  EmaTime time;          /* T', ns (what ema_offload_step_time returns) */
} EmaOffloadBreakdown;

typedef struct _EmaOffloadModel EmaOffloadModel;

/* An offload model for MODEL on SERVER (borrower and lenders are GPUs of
 * the same kind), one GPU of a TP group of TP. TP must divide the model's
 * heads and divide kv_heads or be a multiple of it; the server's rates and
 * link bandwidth must be positive. Errors: EMA_CONFIG_ERROR_INVALID. */
EmaOffloadModel *ema_offload_model_new(const EmaLlmSpec *model, const EmaServerSpec *server,
                                       guint tp, GError **error);
/* The offload model of a whole TP group of TP GPUs (above), one rank's
 * step, the lender computing every rank's partials; TP 1 is
 * ema_offload_model_new's model. Errors as ema_offload_model_new. */
EmaOffloadModel *ema_offload_model_new_group(const EmaLlmSpec *model, const EmaServerSpec *server,
                                             guint tp, GError **error);
void ema_offload_model_free(EmaOffloadModel *offload);
G_DEFINE_AUTOPTR_CLEANUP_FUNC(EmaOffloadModel, ema_offload_model_free)

/* The borrower's step T' given LOCAL, the step model's breakdown of the
 * step's local work (ema_step_time of the batch with only its local KV in
 * decode_context), and SHARES[0..N_SHARES-1], one per lender; MERGED (u
 * above) counts the step's requests with any remote KV: at least the
 * largest share's seqs, at most their sum. With no remote requests T' = T.
 * OUT (may be NULL) receives the breakdown. */
EmaTime ema_offload_step_time(const EmaOffloadModel *offload, const EmaStepBreakdown *local,
                              const EmaOffloadShare *shares, guint n_shares, guint64 merged,
                              EmaOffloadBreakdown *out);
/* ema_offload_step_time where only the lenders in the set LENDERS (bits, (N_SHARES + 63) / 64
 * words; NULL: all) may hold some of the step, the other shares being 0: the same time, at the
 * cost of those lenders (a rack's borrower offloads to a few of its GPUs). */
EmaTime ema_offload_step_time_over(const EmaOffloadModel *offload, const EmaStepBreakdown *local,
                                   const EmaOffloadShare *shares, guint n_shares,
                                   const guint64 *lenders, guint64 merged,
                                   EmaOffloadBreakdown *out);

/* r_j: the share of a lender's HBM time that reading SHARE's KV once per
 * borrower step of BORROWER_STEP ns takes (BORROWER_STEP > 0). */
double ema_offload_lender_share(const EmaOffloadModel *offload, const EmaOffloadShare *share,
                                EmaTime borrower_step);

/* c_max: the most KV tokens a lender can hold for offloaded attention of a
 * borrower whose steps take BORROWER_STEP ns while their reads stay within
 * ALLOWANCE (a share of the lender's HBM time, 0..1). */
double ema_offload_max_context(const EmaOffloadModel *offload, double allowance,
                               EmaTime borrower_step);

/* t_att_j of SHARE on an idle lender, one layer (s): the partial alone. */
double ema_offload_partial_alone_s(const EmaOffloadModel *offload, const EmaOffloadShare *share);

/* KV bytes per token on one GPU of the group, all layers (layers x kv_l). */
double ema_offload_kv_bytes_per_token(const EmaOffloadModel *offload);

G_END_DECLS
