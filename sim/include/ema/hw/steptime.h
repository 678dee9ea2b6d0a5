/* steptime.h: the iteration-time model of one engine step on one GPU, or on
 * one GPU of a tensor-parallel (TP) group of size tp: the GPU time of the
 * step's kernels (the engine's own CPU time per step is the engine's,
 * sim/serving). The engine keeps the running sums of EmaStepBatch as
 * requests join and leave the batch, so a step costs O(1) to time, whatever
 * the batch size; the step is computed inside one event (no event per
 * layer).
 *
 * Notation (llm.h, hwmodel.h): L layers, h hidden, H heads, K kv_heads,
 * d head_dim, f ffn, V vocab, b bytes per element, E experts, A active
 * experts; per GPU: q = H/tp query heads, k = max(1, K/tp) KV heads (KV
 * heads are replicated when K < tp). Of the batch: T = prefill_tokens +
 * decode_seqs, B = decode_seqs, C_d = decode_context, N = prefill_tokens in
 * c = prefill_chunks chunks after P = prefill_kv_read - N cached tokens in
 * all, C_p = prefill_context, G = logits.
 *
 *   rate_c  = matrix_flops x matrix_efficiency       (FLOP/s)
 *   rate_m  = hbm_bandwidth x hbm_efficiency         (B/s, weights and activations)
 *   rate_kv = rate_m x kv_efficiency                 (B/s, KV-cache reads)
 *
 * A step is a sum of operators, each timed from the GPU's profile
 * (gpu.profile, profile.h: interpolated tables of measured kernel times)
 * where the profile holds its shape, else by its own roofline
 *   t_op = (c^p + m^p)^(1/p),  c = F_op / rate_c,  m = B_op / rate
 * (p = gpu.roofline_p, 1.25 fitted on Vidur's A100 and H100 GEMM profiles
 * of Llama-2-7B/70B and CodeLlama-34B: median error 7-12%; max(c, m) is
 * p -> infinity and hides one side entirely, which measured GEMMs of
 * 64-512 tokens do not):
 *   GEMMs y[m, n] = x[m, k] W[k, n], m = T tokens, F = 2 m k n,
 *     B = (k n + m (k + n)) b:  qkv (h -> (q + 2k) d), o (q d -> h),
 *     up (h -> 2 f/tp gated, f/tp plain), down (f/tp -> h); the LM head
 *     (h -> V/tp) at m = G
 *   MoE experts (E > 1), per projection: the moe table at the D experts
 *     touched (linear between its power-of-two expert counts) with T A / D
 *     tokens each, or F = 2 T A k n, B = (D k n + T A (k + n)) b, with
 *     D = E (1 - (1 - A/E)^T) the expected distinct experts T tokens route
 *     to (uniform independent routing); the router GEMM (h -> E) at m = T;
 *     the routing's own kernels (elementwise moe_route, width h: softmax,
 *     top-k, per expert a gather and a weighted scatter-add); silu_mul once
 *     per expert touched on T A / D rows
 *   decode attention: the table at (B, C_d / B): a mixed batch of different
 *     contexts is taken as B sequences of the mean context, i.e. at its
 *     total KV tokens (exact for the KV read, which is linear in the
 *     tokens; it ignores the tail of the longest sequence in a kernel that
 *     splits work per sequence); roofline F = 4 q d C_d, B = 2 k d b C_d at
 *     rate_kv
 *   prefill attention: c runs of the table at (chunk N / c, prior P / c):
 *     the chunks taken alike (with no prior context, at the chunk n whose
 *     pairs c n (n + 1) / 2 are the step's C_p, at least N / c: prompts of
 *     different lengths hold more query-key pairs than as many of their
 *     mean length); a table of fresh prompts only (no prior
 *     context: AIConfigurator's) gives c runs at (N / c, 0) plus the
 *     roofline of the cached part, F = 4 q d (C_p - c n (n + 1) / 2) with
 *     n = N / c, B = 2 k d b P, its compute the C_p - c n (n + 1) / 2
 *     query-key pairs at the most pairs per second the table reaches (its
 *     kernel at its largest prompt: about 60% of the dense rate on A100,
 *     75% on H100, 107% on B200, against rate_c's matrix_efficiency),
 *     rate_c where it has none; else the roofline F = 4 q d C_p, B = 2 k d b (P + N)
 *     at rate_kv (one FlashAttention pass per chunk reads its KV once); at
 *     least c runs of the decode table at one sequence of (P + N) / c
 *     tokens where the profile has it: a chunk's kernel reads the same KV
 *     as one decode query of its whole context, with more queries (the
 *     roofline alone times a 64-token chunk after 3,000 cached tokens of
 *     CodeLlama-34B at 11 us a layer, a quarter of the one-query decode
 *     kernel's 41 us; vLLM 0.11 runs one FlashAttention kernel for both).
 *     A serving engine's step runs its fresh prompts (c > 1, no prior
 *     context) in one kernel: where the profile has prompts run together
 *     (AIConfigurator's context attention at every batch size,
 *     ema_profile_op_attn_prefill_prompts, each batch's curve at least the
 *     one below it) their c runs take
 *     T(c, n) / (c T(1, n)) of that table at the chunk n above (at most 1),
 *     one launch gap, and the floor is one run of the decode table at c
 *     sequences of (P + N) / c. Left out: chunks after cached tokens, and
 *     decode sequences, share that kernel too in vLLM V1; they are timed as
 *     their own runs
 *   the KV of the T new tokens written: elementwise kv_write of width k d
 *     (K and V in one row; roofline B = 2 k d b T)
 *   elementwise, each reading and writing its width per token (roofline
 *     B = 2 T width b): 2 norms (rmsnorm, or layernorm for the plain FFN
 *     family) of width h, the activation of a dense FFN (silu_mul of width
 *     2 f/tp, or gelu of width f/tp for OPT's ReLU), rope of width (q + k) d
 *     (gated models only; RoPE on q and on k), 2 residual adds of width h; once per step the token
 * embedding (T rows of h) and the final norm all-reduces, 2 per layer of S = T h b bytes: the
 * allreduce table at (tp, S) of the implementation vLLM takes (custom, from a CUDA graph up to
 * 512 tokens, eager past them, below 8 MiB, not on more than two PCIe GPUs nor past one host's
 * gpus_per_node; NCCL otherwise),
 * where the profile's tables were measured on links like the group's (its
 * collective_bandwidth); else the all-reduce model fitted on those tables,
 * c + kappa (tp-1) link.latency + 2 (tp-1)/tp S / (eta B), B each rank's link bandwidth to the
 * group (link.bandwidth; (tp-1) x that on a direct topology) (not overlapped with the kernels;
 * the logits all-gather left out). The step: t_step = L (sum of a layer's operators +
 * layer_overhead)
 *          + embedding + final norm + LM head + all-reduces + step_overhead
 * layer_overhead (a layer's kernels' tails beyond their rooflines) is
 * charged only on GPUs without a profile: measured kernel times include it.
 * step_overhead is the GPU's fixed cost of a step (0 unless calibrated).
 *
 * Kernel launches: no per-kernel cost is charged (gpu.kernel_overhead is
 * not used): serving engines replay a decode step as a CUDA graph.
 *
 * FP8 (llm.h): with `weights: fp8` (one scale per tensor) or `fp8-block`
 * (a scale per 128 x 128 block) the decoder layers' GEMMs take the
 * profile's rows of that dtype (fp8, fp8_block: AIConfigurator's measured
 * FP8 kernels), else their roofline with 1-byte weights at
 * gpu.matrix_flops_fp8; with `kv_cache: fp8` the attention takes the
 * profile's FP8-KV rows, else its roofline with 1-byte KV. Activations, the
 * LM head, the router and the all-reduces stay in the checkpoint's type.
 *
 * Tensor parallelism: each all-reduce from the profile's table of the
 * implementation vLLM picks (profile.h): its custom all-reduce below 8 MiB,
 * replayed in a CUDA graph in steps of up to 512 tokens (vLLM V1's largest
 * capture size) and launched eagerly in larger ones, NCCL from 8 MiB; where
 * that table is missing, NCCL's, then an all-reduce table that does not
 * say. The ranks of a group are alike (each has its share of the heads and
 * the FFN), so the group's step is any rank's; the skew between ranks and
 * the engine's per-rank work are in the engine profile's CPU cost per rank
 * (sim/serving).
 *
 * Breakdown. flops and bytes are the step's analytic matrix work and HBM
 * traffic (per layer F_l = (2 P_l T + 4 H d (C_p + C_d)) / tp with P_l a
 * layer's parameters as a token uses them, and B_l = weights read (the
 * touched experts) + KV read and written + the residual stream 2 h b T;
 * plus the LM head), compute_s and memory_s those over rate_c and over
 * rate_m (rate_kv for the KV reads), whatever times the step. layer_compute_s and layer_memory_s
 * are the two sides of one layer's roofline, scaled by one factor so that the larger equals the
 * layer's operator sum; the elastic pool (pool.h) slows the memory side by
 * HBM interference and recombines them with max.
 *
 * Monotonicity: every operator time is non-decreasing in its sizes (the
 * tables are made non-decreasing at load, the rooflines are), so a step is
 * non-decreasing in each batch sum at a fixed sequence count; adding a
 * decode sequence at the same total context moves the attention to a
 * larger batch of shorter contexts, which the table may time faster.
 *
 * Precision: the per-GPU operator shapes are those the tables key (a TP
 * split divides heads and the FFN; a model whose f is not divisible by tp
 * rounds down). fp16 and bf16 share the tables. */
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
  /* prefill chunks in the step (0 is read as 1 when prefill_tokens > 0) */
  guint64 prefill_chunks;
} EmaStepBatch;

typedef enum {
  EMA_STEP_BOUND_NONE,    /* no work (an LM head with no logits) */
  EMA_STEP_BOUND_MEMORY,  /* bytes / rate_m >= FLOPs / rate_c (ties go to memory) */
  EMA_STEP_BOUND_COMPUTE, /* FLOPs / rate_c > bytes / rate_m */
} EmaStepBound;

/* Where a step's time goes, per GPU (see "Breakdown" above); the step time
 * is layers_s + lm_head_s + allreduce_s + overhead_s. */
typedef struct {
  double layer_compute_s, layer_memory_s; /* one layer's roofline sides, scaled (above) */
  double layer_kv_read_s;                 /* of layer_memory_s, the KV-cache reads, scaled */
  double layer_overhead_s;                /* gpu.layer_overhead */
  EmaStepBound layer_bound;               /* every layer is alike */
  double lm_head_compute_s, lm_head_memory_s;
  EmaStepBound lm_head_bound;
  double compute_s;         /* L x layer_compute_s + lm_head_compute_s */
  double memory_s;          /* L x layer_memory_s + lm_head_memory_s */
  double layers_s;          /* L x (a layer's operators + layer overhead) */
  double lm_head_s;         /* the LM head, the token embedding and the final norm */
  double allreduce_s;       /* tensor-parallel all-reduces */
  double overhead_s;        /* gpu.step_overhead */
  double flops;             /* matrix FLOPs on this GPU */
  double bytes;             /* HBM bytes this GPU reads and writes */
  double weight_bytes_read; /* of which weights (all layers and the LM head) */
  double kv_read_bytes;     /* of which KV cache reads (all layers) */
  /* with a profile: of layers_s + lm_head_s + allreduce_s, the operators
   * timed from the profile's tables and those timed by the roofline (both 0
   * without a profile: everything is the roofline's) */
  double profiled_s, roofline_s;
  EmaTime time; /* the step, ns (what ema_step_time returns) */
} EmaStepBreakdown;

typedef struct _EmaStepModel EmaStepModel;

/* A step model for MODEL on one GPU of SERVER in a TP group of TP GPUs. TP
 * must divide the server's GPUs and the model's heads, and either divide
 * kv_heads or be a multiple of it. The specs are copied; they need not
 * outlive the model. Errors: EMA_CONFIG_ERROR_INVALID, no location. */
EmaStepModel *ema_step_model_new(const EmaLlmSpec *model, const EmaServerSpec *server, guint tp,
                                 GError **error);
/* Whether TP GPUs can run MODEL on SERVER, as ema_step_model_new requires (its first checks,
 * for a caller that places the error at the setting that chose TP). Errors as it gives them. */
gboolean ema_step_model_check_tp(const EmaLlmSpec *model, const EmaServerSpec *server, guint tp,
                                 GError **error);
/* A step model that times steps as the profile's measuring workload ran them (what `ema-sim
 * compare-steps` compares with its captured steps): the sums of its kernels' durations, without
 * the launch gaps a CUDA graph adds per kernel that the profile's `graph_gap` says its measured
 * tables leave out, and every operator from the profile's measured tables first, the workload's
 * own kernels included (its workload view, profile.h). A serving engine's steps
 * (ema_step_model_new) hold the gaps and take the engine's kernels. */
EmaStepModel *ema_step_model_new_kernel_sums(const EmaLlmSpec *model, const EmaServerSpec *server,
                                             guint tp, GError **error);
void ema_step_model_free(EmaStepModel *step_model);
G_DEFINE_AUTOPTR_CLEANUP_FUNC(EmaStepModel, ema_step_model_free)

/* The time of one operator by its roofline: (c^p + m^p)^(1/p) of its compute time COMPUTE_S and
 * memory time MEMORY_S with P (gpu.roofline_p), the step model's formula; 0 where both are 0. */
double ema_roofline_time(double compute_s, double memory_s, double p);

/* Time of one step of BATCH (ns, rounded to the nearest), and where it
 * goes if OUT is not NULL (without OUT only the operator sums are made,
 * none of the breakdown's roofline figures: the same time, cheaper). An
 * empty batch (no tokens) takes 0. O(1); never allocates. The operators that depend on the token
 * count alone are kept per token count (up to 8,192) in the step model, filled on first use: one
 * step model is used by one thread at a time. */
EmaTime ema_step_time(const EmaStepModel *step_model, const EmaStepBatch *batch,
                      EmaStepBreakdown *out);

/* Where each class of the model's operators takes its times: the labels of
 * the profile's data sets that time them (profile.yaml's `tables:`, an
 * import's `label`), joined by " + " where the class's operators come from
 * several, and "roofline" for those the profile lacks; allreduce is "none
 * (tp 1)", or "all-reduce model" where no table has the group's size or the
 * profile's tables were measured on links unlike the group's (then saying so). */
typedef struct {
  char gemm[192], moe[192], attn_decode[192], attn_prefill[192], elementwise[192], allreduce[192];
  gboolean allreduce_modelled; /* a TP group's all-reduces from the all-reduce model */
} EmaStepSources;
void ema_step_model_sources(const EmaStepModel *step_model, EmaStepSources *out);

/* Append "# " lines to OUT: the profile's rows and warnings, and each
 * operator class's sources (ema_step_model_sources). */
void ema_step_model_describe(const EmaStepModel *step_model, GString *out);

/* Whether the step model reads a GPU profile: FALSE on a GPU without one, and for 32-bit
 * weights (no table holds kernels of that type): every operator then on the roofline. */
gboolean ema_step_model_profiled(const EmaStepModel *step_model);
guint ema_step_model_tp(const EmaStepModel *step_model);
guint ema_step_model_layers(const EmaStepModel *step_model);
/* Resident weight bytes on each GPU: weight bytes / tp, rounded up (the
 * k/v projections replicated when kv_heads < tp and the replicated norms
 * are neglected: < 1 % for every shape in hwmodels/llms). */
guint64 ema_step_model_weight_bytes_per_gpu(const EmaStepModel *step_model);
/* KV-cache bytes one token occupies on each GPU: 2 L max(1, K/tp) d b. */
double ema_step_model_kv_bytes_per_token_per_gpu(const EmaStepModel *step_model);

G_END_DECLS
