/* decodeplan.h: the synthetic decode step of `ema-validate decode`, as
 * plain data: what one step of a model reads per layer, where every KV
 * block lives, and the CPU references its GPU results are checked against.
 * decode.c runs the plan on the GPUs; validate/tests/test-plan.c checks it
 * without one.
 *
 * One step of a batch of B sequences, each with C tokens of context:
 *   per layer: a GEMV-like kernel streams the layer's weights (rows of
 *   `hidden` bf16 values, ceil(layer parameters read / hidden) rows: a dense
 *   layer's parameters; for MoE, the layer less the experts no token of the
 *   batch is routed to: with top-k of E experts routed uniformly and
 *   independently, E (1 - (1 - k/E)^B) experts are read at batch B, their
 *   expected number: 2 of Mixtral's 8 at batch 1, 7.92 at 16),
 *   then a paged-attention kernel reads every sequence's KV blocks through
 *   a block table: 16 tokens per block, kv_bytes_per_token = 2 x kv_heads x
 *   head_dim x 2 bytes per layer; after the last layer the LM head (vocab
 *   rows) is streamed like a layer's weights.
 * A fraction F of all blocks (spread evenly over the batch, exactly
 * round(F x blocks) of them) lives on the lender GPU. Mode `direct` reads
 * them over NVLink from the attention kernel; `prefetch` copies a layer's
 * remote blocks (contiguous on the lender) into a local staging slot on a
 * separate stream, `prefetch_depth` layers ahead, event-synchronised;
 * `local` has none.
 *
 * Memory layout (the CPU references follow it exactly):
 *   block table entry e >= 0: local block e; e < 0: remote block -e - 1
 *   a pool (local or remote) holds, per layer, its blocks one after
 *   another; a block is [K: kv_heads x 16 tokens x head_dim]
 *   [V: kv_heads x 16 tokens x head_dim], bf16 (head-major, as vLLM's
 *   cache: one head's 16 keys are one contiguous run). Physical block
 *   numbers are a fixed pseudo-random permutation, as a paged allocator
 *   leaves them. */
#pragma once

#include <glib.h>

#include "ema/hw/llm.h"

G_BEGIN_DECLS

#define EMA_KV_BLOCK_TOKENS 16
/* Query heads one attention sub-block of 128 threads serves (kernels.cu):
 * a group of G query heads per KV head takes ceil(G / 2) sub-blocks of one
 * thread block (1 if G = 1). */
#define EMA_ATTENTION_HEADS_PER_BLOCK 2

typedef enum {
  EMA_DECODE_LOCAL,    /* every block on the borrower */
  EMA_DECODE_DIRECT,   /* remote blocks read by the attention kernel over the link */
  EMA_DECODE_PREFETCH, /* remote blocks copied into local staging ahead of use */
} EmaDecodeMode;

/* "local", "direct", "prefetch". */
const char *ema_decode_mode_name(EmaDecodeMode mode);
gboolean ema_decode_mode_parse(const char *text, EmaDecodeMode *mode, GError **error);

typedef struct {
  guint batch;            /* sequences, >= 1 */
  guint context;          /* tokens of context per sequence, >= 1 */
  double remote_fraction; /* of all KV blocks, 0..1; 0 in local mode */
  EmaDecodeMode mode;
  guint prefetch_depth; /* layers ahead, 1..layers-1 (prefetch mode) */
} EmaDecodeOptions;

typedef struct {
  EmaDecodeOptions options;
  char *model_name;
  guint layers, hidden, heads, kv_heads, group, head_dim, vocab;
  double experts_read;        /* experts a step reads per layer (1 for a dense model) */
  guint64 layer_weight_rows;  /* ceil(parameters read per layer / hidden) */
  guint64 layer_weight_bytes; /* rows x hidden x 2 */
  guint64 lm_head_rows;       /* vocab */
  guint64 lm_head_bytes;      /* vocab x hidden x 2 */
  guint blocks_per_seq;       /* ceil(context / 16) */
  guint total_blocks, local_blocks, remote_blocks;
  guint64 block_elements;     /* one block of one layer: 2 x 16 x kv_heads x head_dim */
  guint64 block_bytes;        /* ... x 2 bytes */
  guint64 kv_bytes_per_token; /* one token of one layer, K and V */
  guint64 local_tokens;       /* context tokens (all sequences) in local blocks */
  guint64 remote_tokens;      /* ... in remote blocks */
  gint32 *block_table;        /* [batch x blocks_per_seq] */
  guint group_splits;         /* attention sub-blocks per thread block */
  guint blocks_per_part;      /* attention work split: KV blocks per thread block */
  guint parts_per_seq;        /* ceil(blocks_per_seq / blocks_per_part) */
} EmaDecodePlan;

/* Check OPTIONS against MODEL and build the plan (block table included).
 * Errors: EMA_VALIDATE_ERROR_ARGUMENT for options out of range or
 * inconsistent, EMA_VALIDATE_ERROR_UNSUPPORTED for a model shape the
 * kernels do not handle (element size other than 2 bytes, head_dim other
 * than 64/128/256, more than 8 query heads per KV head, hidden not a
 * multiple of 256). */
EmaDecodePlan *ema_decode_plan_new(const EmaLlmSpec *model, const EmaDecodeOptions *options,
                                   GError **error);
/* The checks of ema_decode_plan_new, building nothing: what a command finds before a GPU is
 * looked for (`pool`, whose lender decodes this plan). */
gboolean ema_decode_plan_check(const EmaLlmSpec *model, const EmaDecodeOptions *options,
                               GError **error);
void ema_decode_plan_free(EmaDecodePlan *plan);
G_DEFINE_AUTOPTR_CLEANUP_FUNC(EmaDecodePlan, ema_decode_plan_free)

/* Split the attention work for a GPU of MULTIPROCESSORS SMs: about 16
 * thread blocks (of 128 threads) per SM, each with 4 to 64 KV blocks (so
 * that it streams several tiles), at most 32 parts per sequence (the last
 * block of a sequence merges them), parts of equal size within a
 * sequence. */
void ema_decode_plan_partition(EmaDecodePlan *plan, guint multiprocessors);

/* The expected number of a layer's experts that a batch of BATCH tokens routes at least one
 * token to: E (1 - (1 - k/E)^BATCH) for top-k of E (uniform, independent routing); 1 when
 * dense. */
double ema_decode_plan_experts_read(const EmaLlmSpec *model, guint batch);

/* Bytes one step reads: all layers' weights and the LM head; KV in local
 * blocks; KV in remote blocks (all layers, context tokens only). */
guint64 ema_decode_plan_weight_bytes(const EmaDecodePlan *plan);
guint64 ema_decode_plan_kv_local_bytes(const EmaDecodePlan *plan);
guint64 ema_decode_plan_kv_remote_bytes(const EmaDecodePlan *plan);
/* Bytes prefetch copies for one layer: every remote block whole. */
guint64 ema_decode_plan_copy_bytes_per_layer(const EmaDecodePlan *plan);

/* Element counts of the buffers (bf16 elements, or floats for outputs). */
guint64 ema_decode_plan_query_elements(const EmaDecodePlan *plan);  /* one layer */
guint64 ema_decode_plan_output_elements(const EmaDecodePlan *plan); /* one layer, floats */
guint64 ema_decode_plan_partial_floats(const EmaDecodePlan *plan);  /* one layer */
guint64 ema_decode_plan_counters(const EmaDecodePlan *plan);        /* attention merge counters */

/* CPU references, in double, over regenerated inputs (fill.h).
 * Row ROW of layer LAYER's GEMV (LAYER == layers: the LM head). */
double ema_decode_reference_gemv(const EmaDecodePlan *plan, guint layer, guint64 row,
                                 double *abs_sum);
/* Attention output of sequence SEQ, KV head HEAD in LAYER: OUT gets
 * group x head_dim values (query head g of the group first). */
void ema_decode_reference_attention(const EmaDecodePlan *plan, guint layer, guint seq, guint head,
                                    double *out);

G_END_DECLS
