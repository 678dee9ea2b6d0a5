/* steptime.h: the iteration-time model of one engine step on one GPU, or on
 * one GPU of a tensor-parallel (TP) group of size tp. The engine keeps the
 * running sums of EmaStepBatch as requests join and leave the batch, so a
 * step costs O(1) to time, whatever the batch size; the step is computed
 * analytically inside one event (no event per layer).
 *
 * Notation (llm.h, hwmodel.h): L layers, h hidden, H heads, K kv_heads,
 * d head_dim, V vocab, b bytes per element, E experts, A active experts;
 * P_l = one layer's parameters as a token uses them (A experts), all per
 * GPU: everything split over the TP group is divided by tp. Of the batch:
 * T = prefill_tokens + decode_seqs, C = prefill_context + decode_context,
 * R = decode_context + prefill_kv_read, G = logits.
 *
 *   rate_c  = matrix_flops x matrix_efficiency       (FLOP/s)
 *   rate_m  = hbm_bandwidth x hbm_efficiency         (B/s, weights and activations)
 *   rate_kv = rate_m x kv_efficiency                 (B/s, KV-cache reads)
 *
 * One decoder layer (all L alike), a roofline:
 *   F_l = (2 P_l T + 4 H d C) / tp                             FLOPs
 *   B_l = W_l + kv_l (R + T) + 2 h b T                         bytes
 *     W_l  = (layer weights other than experts
 *             + E (1 - (1 - A/E)^T) x one expert's weights) b / tp
 *            (the expected number of distinct experts that T tokens route
 *            to, uniform independent routing; = 1 FFN for a dense model)
 *     kv_l = 2 max(1, K/tp) d b, KV bytes of one token in one layer on one
 *            GPU (KV heads are replicated when K < tp); the KV of R tokens
 *            is read and the KV of the T new tokens written
 *     2 h b T: the residual stream read and written once per token; every
 *            GPU of the group holds it whole, so it is not divided by tp
 *   t_l = max(F_l / rate_c, (B_l - kv_l R) / rate_m + kv_l R / rate_kv)
 *         + layer_overhead
 *   (the KV reads have their own rate: a paged-attention kernel walking a
 *   block table need not stream as fast as a weight GEMV; layer_overhead is
 *   what a layer's kernels cost beyond their roofline, e.g. small grids)
 * The LM head, once per step, only when G > 0:
 *   F_head = 2 h V G / tp,  B_head = (h V / tp + final norm) b + V b G / tp
 *   t_head = max(F_head / rate_c, B_head / rate_m)
 *   (the token-embedding gather of T rows is left out; a tied LM head still
 *   reads the whole table)
 * Tensor-parallel all-reduces, 2 per layer (after attention and after the
 * FFN), each of S = T h b bytes, as the analytic ring cost on the server's
 * link parameters (link.bandwidth per direction, link.latency), not as
 * simulated fabric flows, and not overlapped with the layer's kernels:
 *   t_ar = 2 L [2 (tp-1)/tp x S / link.bandwidth + 2 (tp-1) x link.latency]
 *   (0 when tp = 1; the logits all-gather of a vocab-parallel head is left
 *   out)
 * The step:
 *   t_step = L t_l + t_head + t_ar + step_overhead
 * (kv_efficiency 100% and layer_overhead 0, the defaults, give the plain
 * roofline B_l / rate_m)
 *
 * Prefill KV reads (R): a chunk of n prompt tokens that starts after p
 * tokens already in the cache reads the KV of all p + n tokens once (one
 * FlashAttention pass per chunk), so prefill_kv_read is the sum over the
 * step's prefill chunks of p + n; the engine adds each chunk's end position.
 *
 * Kernel launches: no per-kernel cost is charged (gpu.kernel_overhead is
 * not used). A decode step of Llama-3.1-8B runs ~10 kernels per layer, but
 * serving engines replay it as a CUDA graph, which hides launch cost; what
 * remains per step is left to gpu.step_overhead (default 0 until
 * ema-validate calibrates it).
 *
 * FP8 (llm.h): with `weights: fp8` b is 1 in W_l (the LM head keeps the
 * checkpoint's type) and rate_c uses gpu.matrix_flops_fp8 (for attention's
 * FLOPs too); with `kv_cache: fp8` b is 1 in kv_l. Activations and the
 * all-reduces stay in the checkpoint's type.
 *
 * Not modelled: attention's FLOPs run at the matrix rate like the linear
 * layers; norms, softmax, rotary and router arithmetic (< 0.1 % of FLOPs);
 * compute/memory overlap across layers; MoE load imbalance. */
#pragma once

#include <glib.h>

#include "ema/core/event.h"
#include "ema/hw/hwmodel.h"
#include "ema/hw/llm.h"

G_BEGIN_DECLS

/* One step's work, as running sums over the batch. A prefill chunk of n
 * prompt tokens after p tokens already cached adds n to prefill_tokens,
 * n p + n (n+1) / 2 to prefill_context and p + n to prefill_kv_read. */
typedef struct {
  /* prompt tokens computed this step (all chunks together) */
  guint64 prefill_tokens;
  /* sum over those tokens of the tokens each attends to (itself and all before it) */
  double prefill_context;
  /* sum over the prefill chunks of the tokens whose KV each chunk reads (p + n) */
  double prefill_kv_read;
  /* sequences decoding one token each */
  guint64 decode_seqs;
  /* sum of their context lengths (tokens attended to, incl. the new one) */
  double decode_context;
  /* sequences that produce a token this step (LM head rows); at most the step's tokens */
  guint64 logits;
} EmaStepBatch;

typedef enum {
  EMA_STEP_BOUND_NONE,    /* no work (an LM head with no logits) */
  EMA_STEP_BOUND_MEMORY,  /* bytes / rate_m >= FLOPs / rate_c (ties go to memory) */
  EMA_STEP_BOUND_COMPUTE, /* FLOPs / rate_c > bytes / rate_m */
} EmaStepBound;

/* Where a step's time goes, per GPU. compute_s and memory_s are the totals
 * of both sides of every roofline, hidden or not; the step time is
 * layers_s + lm_head_s + allreduce_s + overhead_s. */
typedef struct {
  double layer_compute_s, layer_memory_s; /* one layer */
  double layer_kv_read_s;                 /* of layer_memory_s, the KV-cache reads */
  double layer_overhead_s;                /* gpu.layer_overhead */
  EmaStepBound layer_bound;               /* every layer is alike */
  double lm_head_compute_s, lm_head_memory_s;
  EmaStepBound lm_head_bound;
  double compute_s;         /* L x layer_compute_s + lm_head_compute_s */
  double memory_s;          /* L x layer_memory_s + lm_head_memory_s */
  double layers_s;          /* L x (max(layer compute, layer memory) + layer overhead) */
  double lm_head_s;         /* max(lm head compute, lm head memory) */
  double allreduce_s;       /* tensor-parallel all-reduces */
  double overhead_s;        /* gpu.step_overhead */
  double flops;             /* matrix FLOPs on this GPU */
  double bytes;             /* HBM bytes this GPU reads and writes */
  double weight_bytes_read; /* of which weights (all layers and the LM head) */
  double kv_read_bytes;     /* of which KV cache reads (all layers) */
  EmaTime time;             /* the step, ns (what ema_step_time returns) */
} EmaStepBreakdown;

typedef struct _EmaStepModel EmaStepModel;

/* A step model for MODEL on one GPU of SERVER in a TP group of TP GPUs. TP
 * must divide the server's GPUs and the model's heads, and either divide
 * kv_heads or be a multiple of it. The specs are copied; they need not
 * outlive the model. Errors: EMA_CONFIG_ERROR_INVALID, no location. */
EmaStepModel *ema_step_model_new(const EmaLlmSpec *model, const EmaServerSpec *server, guint tp,
                                 GError **error);
void ema_step_model_free(EmaStepModel *step_model);
G_DEFINE_AUTOPTR_CLEANUP_FUNC(EmaStepModel, ema_step_model_free)

/* Time of one step of BATCH (ns, rounded to the nearest), and where it
 * goes if OUT is not NULL. An empty batch (no tokens) takes 0. O(1); never
 * allocates. */
EmaTime ema_step_time(const EmaStepModel *step_model, const EmaStepBatch *batch,
                      EmaStepBreakdown *out);

guint ema_step_model_tp(const EmaStepModel *step_model);
guint ema_step_model_layers(const EmaStepModel *step_model);
/* Resident weight bytes on each GPU: weight bytes / tp, rounded up (the
 * k/v projections replicated when kv_heads < tp and the replicated norms
 * are neglected: < 1 % for every shape in hwmodels/llms). */
guint64 ema_step_model_weight_bytes_per_gpu(const EmaStepModel *step_model);
/* KV-cache bytes one token occupies on each GPU: 2 L max(1, K/tp) d b. */
double ema_step_model_kv_bytes_per_token_per_gpu(const EmaStepModel *step_model);

G_END_DECLS
