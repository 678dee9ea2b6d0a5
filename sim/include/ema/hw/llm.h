/* llm.h: the shape of one LLM (hwmodels/llms/<name>.yaml) as a plain struct,
 * its parameter table, the search for shapes by name, and the figures
 * derived from a shape: parameter counts, weight bytes, KV-cache bytes per
 * token and FLOPs per token. The step-time model (steptime.h) and the
 * serving engine read these; hwmodels/llms/README.md states the formulas and
 * each YAML file works them out by hand at its bottom.
 *
 * The schema has no "family" key, so two architecture details are inferred:
 * `ffn_kind: plain` marks the OPT family (pre-LN LayerNorms with weight and
 * bias, a learned positional table of max_context + 2 rows, and, with
 * attention_bias, biases on q/k/v/o and on both FFN matrices); a `gated`
 * model with attention_bias has biases on q/k/v only (Qwen2). Gated models
 * use RMSNorm (a weight vector, no bias) and rotary positions (no table). */
#pragma once

#include <glib.h>

#include "ema/core/params.h"

G_BEGIN_DECLS

typedef enum {
  EMA_DTYPE_BF16,
  EMA_DTYPE_FP16,
  EMA_DTYPE_FP32,
} EmaDtype;

/* What a serving engine stores in fewer bits than the checkpoint (vLLM's
 * --quantization fp8 and --kv-cache-dtype fp8): FP8 weights are the
 * decoder layers' (the embedding, the LM head and, negligibly, the norms
 * stay in the checkpoint's type, as vLLM's FP8 keeps them), and their
 * matrix products run at the GPU's FP8 rate; an FP8 KV cache halves
 * (16-bit) the KV bytes per token, hence the block size. */
typedef enum {
  EMA_PRECISION_AUTO,      /* the checkpoint's dtype */
  EMA_PRECISION_FP8,       /* 1 byte per element, one scale per tensor */
  EMA_PRECISION_FP8_BLOCK, /* 1 byte per element, a scale per 128 x 128 block (weights only) */
} EmaPrecision;

/* Whether P stores a byte per element (FP8, either scaling). */
#define EMA_PRECISION_IS_FP8(p) ((p) == EMA_PRECISION_FP8 || (p) == EMA_PRECISION_FP8_BLOCK)

typedef enum {
  EMA_FFN_GATED, /* SwiGLU/GeGLU: gate, up, down (3 matrices) */
  EMA_FFN_PLAIN, /* up, down (2 matrices), e.g. OPT's ReLU fc1/fc2 */
} EmaFfnKind;

/* One model; the fields are the YAML keys (see hwmodels/llms/README.md). */
typedef struct {
  char *name;
  gint64 layers;   /* decoder layers */
  gint64 hidden;   /* d_model */
  gint64 ffn;      /* FFN inner width, per expert for MoE */
  gint64 heads;    /* query heads */
  gint64 kv_heads; /* key/value heads; divides heads */
  gint64 head_dim; /* per-head width (heads x head_dim need not equal hidden) */
  gint64 vocab;    /* embedding / LM-head rows */
  EmaDtype dtype;  /* weight (and KV) element type */
  EmaFfnKind ffn_kind;
  gint64 experts;        /* routed experts per layer (1 = dense) */
  gint64 active_experts; /* experts per token, <= experts */
  gboolean tied_embeddings;
  gboolean attention_bias;
  gint64 max_context;          /* longest supported position */
  double reference_parameters; /* published count; 0 when absent */
  EmaPrecision weights;        /* decoder-layer weights (quantization) */
  EmaPrecision kv_cache;       /* the KV cache (kv_cache_dtype) */
  gint64 shared_ffn;           /* an MoE's shared experts: their FFN width, summed (0: none) */
} EmaLlmSpec;

extern const EmaParamTable ema_llm_params;

/* Figures derived from a shape. Parameters are counts, bytes are bytes,
 * FLOPs count a multiply-add as 2. */
typedef struct {
  guint bytes_per_element;                 /* 2 for bf16/fp16, 4 for fp32 (the checkpoint) */
  guint layer_bytes_per_element;           /* decoder-layer weights: 1 with FP8 weights */
  guint kv_bytes_per_element;              /* KV cache: 1 with an FP8 KV cache */
  guint64 layer_parameters;                /* one decoder layer, all experts, biases and norms */
  guint64 layer_active_parameters;         /* one layer as a token uses it: active experts only */
  guint64 expert_parameters;               /* one routed expert's FFN (matrices and biases) */
  guint64 shared_expert_parameters;        /* an MoE's shared experts (every token uses them) */
  guint64 embedding_parameters;            /* token embedding (+ OPT's positional table) */
  guint64 lm_head_parameters;              /* 0 when tied to the token embedding */
  guint64 final_norm_parameters;           /* the norm after the last layer */
  guint64 total_parameters;                /* everything in the checkpoint */
  guint64 active_parameters;               /* total minus the experts a token does not use */
  guint64 non_embedding_parameters;        /* layers + final norm */
  guint64 active_non_embedding_parameters; /* layers (active experts) + final norm */
  guint64 weight_bytes;       /* layers x layer_bytes_per_element + the rest x bytes_per_element */
  guint64 kv_bytes_per_token; /* 2 x layers x kv_heads x head_dim x kv bytes */
  guint64 kv_bytes_per_token_per_layer; /* 2 x kv_heads x head_dim x kv bytes */
  guint64 linear_flops_per_token;       /* 2 x active non-embedding parameters (no LM head) */
  guint64 lm_head_flops_per_token;   /* 2 x hidden x vocab, per token whose logits are computed */
  guint64 attention_flops_per_token; /* 4 x layers x heads x head_dim, per token of context */
} EmaLlmDerived;

void ema_llm_derive(const EmaLlmSpec *spec, EmaLlmDerived *derived);

/* Directory list searched for <name>.yaml: EMA_LLM_PATH (colon-separated)
 * first, then the built-in hwmodels/llms. */
GPtrArray *ema_llm_search_path(void);
/* Path of the model NAME, or NULL with an error that lists the known names:
 * "unknown model 'NAME' (known: ...)". */
char *ema_llm_find(const char *name, GError **error);
/* Sorted names of all models on the search path. */
GPtrArray *ema_llm_list(void);
/* EmaParamResolveFunc for `model: NAME`: the named file's node tree, or NULL
 * with "file:line:col: PATH: unknown model 'NAME' (known: ...)" (PATH NULL:
 * `model`). */
EmaNode *ema_llm_resolve(const EmaNode *at, const char *path, GError **error);

/* Load and bind the model NAME (see ema_llm_find). */
EmaLlmSpec *ema_llm_load(const char *name, GError **error);
void ema_llm_free(EmaLlmSpec *spec);
/* Set SPEC's weights and KV cache precision by their YAML names (the `weights` and `kv_cache`
 * keys: auto, fp8, fp8-block; auto, fp8); a NULL name leaves that one. FALSE with "--weights:
 * unknown precision 'X' (valid: ...)" on an unknown name. */
gboolean ema_llm_set_precision(EmaLlmSpec *spec, const char *weights, const char *kv_cache,
                               GError **error);
G_DEFINE_AUTOPTR_CLEANUP_FUNC(EmaLlmSpec, ema_llm_free)

G_END_DECLS
