/* llm.c: the LLM shape's parameter table (llm.h), the search for shapes by
 * name (EMA_LLM_PATH, then hwmodels/llms), and the derived figures.
 *
 * Invariants kept by the table's check: kv_heads divides heads,
 * active_experts <= experts, and shared experts only beside routed ones. The ranges keep every
 * derived count, and the same count in bytes or FLOPs, well inside 64 bits (the largest shape the
 * ranges allow has about 2^59 parameters). The derivation follows
 * hwmodels/llms/README.md term by term, biases included, so that it gives
 * the counts worked out by hand in each YAML file exactly. */
#include "ema/hw/llm.h"

#include <string.h>

#include "ema/core/file.h"
#include "ema/core/modelpath.h"

#define LLM_FIELD(f) G_STRUCT_OFFSET(EmaLlmSpec, f)
#define LLMS_DIR "llms"
#define LLMS_ENV "EMA_LLM_PATH"

static const char *const dtype_names[] = {"bf16", "fp16", "fp32", NULL};
static const char *const ffn_kind_names[] = {"gated", "plain", NULL};
static const char *const precision_names[] = {"auto", "fp8", "fp8-block", NULL};
static const char *const kv_precision_names[] = {"auto", "fp8", NULL};

static const EmaParam llm_params[] = {
    {"name", EMA_PARAM_STRING, LLM_FIELD(name), .flags = EMA_PARAM_REQUIRED,
     .help = "model id (the file name without .yaml)"},
    {"layers", EMA_PARAM_INT, LLM_FIELD(layers), .flags = EMA_PARAM_REQUIRED, .min = 1, .max = 1024,
     .help = "decoder layers (num_hidden_layers)"},
    {"hidden", EMA_PARAM_INT, LLM_FIELD(hidden), .flags = EMA_PARAM_REQUIRED, .min = 1,
     .max = 65536, .help = "model width d_model (hidden_size)"},
    {"ffn", EMA_PARAM_INT, LLM_FIELD(ffn), .flags = EMA_PARAM_REQUIRED, .min = 1, .max = 1048576,
     .help = "FFN inner width, per expert for MoE (intermediate_size)"},
    {"heads", EMA_PARAM_INT, LLM_FIELD(heads), .flags = EMA_PARAM_REQUIRED, .min = 1, .max = 4096,
     .help = "query heads (num_attention_heads)"},
    {"kv_heads", EMA_PARAM_INT, LLM_FIELD(kv_heads), .flags = EMA_PARAM_REQUIRED, .min = 1,
     .max = 4096, .help = "key/value heads, dividing heads (num_key_value_heads)"},
    {"head_dim", EMA_PARAM_INT, LLM_FIELD(head_dim), .flags = EMA_PARAM_REQUIRED, .min = 1,
     .max = 4096, .help = "per-head width (heads x head_dim may differ from hidden)"},
    {"vocab", EMA_PARAM_INT, LLM_FIELD(vocab), .flags = EMA_PARAM_REQUIRED, .min = 1,
     .max = 16777216, .help = "embedding / LM-head rows, padded size as stored"},
    {"dtype", EMA_PARAM_ENUM, LLM_FIELD(dtype), .flags = EMA_PARAM_REQUIRED, .choices = dtype_names,
     .help = "checkpoint weight type: bf16, fp16 (2 bytes) or fp32 (4)"},
    {"ffn_kind", EMA_PARAM_ENUM, LLM_FIELD(ffn_kind), .flags = EMA_PARAM_REQUIRED,
     .choices = ffn_kind_names,
     .help = "gated: gate, up, down (SwiGLU); plain: up, down (OPT family, see llm.h)"},
    {"experts", EMA_PARAM_INT, LLM_FIELD(experts), .flags = EMA_PARAM_REQUIRED, .min = 1,
     .max = 1024, .help = "routed experts per layer (1 = dense)"},
    {"active_experts", EMA_PARAM_INT, LLM_FIELD(active_experts), .flags = EMA_PARAM_REQUIRED,
     .min = 1, .max = 1024, .help = "experts per token, at most experts (1 = dense)"},
    {"shared_ffn", EMA_PARAM_INT, LLM_FIELD(shared_ffn), .default_value = "0", .min = 0,
     .max = 1048576,
     .help = "an MoE's shared experts, which every token runs beside its routed ones: their FFN "
             "width, summed (n_shared_experts x moe_intermediate_size; Llama 4: "
             "intermediate_size); 0 = none"},
    {"tied_embeddings", EMA_PARAM_BOOL, LLM_FIELD(tied_embeddings), .flags = EMA_PARAM_REQUIRED,
     .help = "the LM head shares the token-embedding matrix"},
    {"attention_bias", EMA_PARAM_BOOL, LLM_FIELD(attention_bias), .flags = EMA_PARAM_REQUIRED,
     .help = "attention projections have biases (gated: q/k/v; plain: every linear layer)"},
    {"max_context", EMA_PARAM_INT, LLM_FIELD(max_context), .flags = EMA_PARAM_REQUIRED, .min = 1,
     .max = 1e9, .help = "longest supported position (max_position_embeddings)"},
    {"reference_parameters", EMA_PARAM_DOUBLE, LLM_FIELD(reference_parameters),
     .flags = EMA_PARAM_OPTIONAL, .min = 1, .max = 1e15,
     .help = "published total parameter count, for checks"},
    {"weights", EMA_PARAM_ENUM, LLM_FIELD(weights), .default_value = "auto",
     .choices = precision_names,
     .help = "decoder-layer weights: auto (the dtype), fp8 (vLLM --quantization fp8: 1 byte, a "
             "scale per tensor) or fp8-block (block-quantized FP8 checkpoints: a scale per 128 x "
             "128 block); FP8 GEMMs take the profile's FP8 kernel times, else the FP8 roofline; "
             "on a GPU without FP8 tensor cores (no matrix_flops_fp8) weight-only, as vLLM's FP8 "
             "Marlin runs them (16-bit GEMM times carried to 1-byte weights; dense models only)"},
    {"kv_cache", EMA_PARAM_ENUM, LLM_FIELD(kv_cache), .default_value = "auto",
     .choices = kv_precision_names,
     .help = "KV cache: auto (the dtype) or fp8 (vLLM --kv-cache-dtype fp8: 1 byte)"},
};

static gboolean check_llm(gpointer object, const EmaNode *node, const char *path, GError **error) {
  const EmaLlmSpec *llm = object;
  if (llm->heads % llm->kv_heads != 0) {
    /* at the one of the two that an experiment's map gave over the model's file (model:
     * {name: opt-13b, heads: 7}), else at kv_heads */
    const EmaNode *heads = ema_node_get(node, "heads");
    gboolean at_heads =
        heads && node && heads->file && node->file && strcmp(heads->file, node->file) != 0;
    const char *key = at_heads ? "heads" : "kv_heads";
    g_autofree char *key_path = path && *path ? g_strconcat(path, ".", key, NULL) : g_strdup(key);
    ema_node_error(error, EMA_CONFIG_ERROR_INVALID, ema_node_get(node, key), key_path,
                   "kv_heads (%" G_GINT64_FORMAT ") must divide heads (%" G_GINT64_FORMAT ")",
                   llm->kv_heads, llm->heads);
    return FALSE;
  }
  if (llm->active_experts > llm->experts) {
    g_autofree char *key_path =
        path && *path ? g_strconcat(path, ".active_experts", NULL) : g_strdup("active_experts");
    ema_node_error(error, EMA_CONFIG_ERROR_INVALID, ema_node_get(node, "active_experts"), key_path,
                   "active_experts (%" G_GINT64_FORMAT ") cannot exceed experts (%" G_GINT64_FORMAT
                   ")",
                   llm->active_experts, llm->experts);
    return FALSE;
  }
  if (llm->shared_ffn > 0 && llm->experts == 1) {
    g_autofree char *key_path =
        path && *path ? g_strconcat(path, ".shared_ffn", NULL) : g_strdup("shared_ffn");
    ema_node_error(error, EMA_CONFIG_ERROR_INVALID, ema_node_get(node, "shared_ffn"), key_path,
                   "shared_ffn (%" G_GINT64_FORMAT ") needs routed experts (experts > 1): a dense "
                   "model's FFN is ffn",
                   llm->shared_ffn);
    return FALSE;
  }
  return TRUE;
}

const EmaParamTable ema_llm_params = {"model", sizeof(EmaLlmSpec), llm_params,
                                      EMA_PARAMS_N(llm_params), check_llm};

/* ---- derived figures ---------------------------------------------------- */

void ema_llm_derive(const EmaLlmSpec *spec, EmaLlmDerived *derived) {
  guint64 L, h, f, H, K, d, V, E, A, m, attention, attention_bias, router, norms;
  gboolean opt;

  g_return_if_fail(spec != NULL && derived != NULL);
  L = (guint64) spec->layers;
  h = (guint64) spec->hidden;
  f = (guint64) spec->ffn;
  H = (guint64) spec->heads;
  K = (guint64) spec->kv_heads;
  d = (guint64) spec->head_dim;
  V = (guint64) spec->vocab;
  E = (guint64) spec->experts;
  A = (guint64) spec->active_experts;
  m = spec->ffn_kind == EMA_FFN_GATED ? 3 : 2;
  opt = spec->ffn_kind == EMA_FFN_PLAIN;

  memset(derived, 0, sizeof *derived);
  derived->bytes_per_element = spec->dtype == EMA_DTYPE_FP32 ? 4 : 2;
  derived->layer_bytes_per_element =
      EMA_PRECISION_IS_FP8(spec->weights) ? 1 : derived->bytes_per_element;
  derived->kv_bytes_per_element =
      spec->kv_cache == EMA_PRECISION_FP8 ? 1 : derived->bytes_per_element;

  /* q, k, v, o projections */
  attention = h * H * d + 2 * h * K * d + H * d * h;
  /* Qwen2: q/k/v biases; OPT: q/k/v/o biases */
  attention_bias = spec->attention_bias ? H * d + 2 * K * d + (opt ? h : 0) : 0;
  /* one expert: m matrices (+ OPT's fc1 and fc2 biases) */
  derived->expert_parameters = m * h * f + (opt && spec->attention_bias ? f + h : 0);
  /* shared experts: m matrices of their summed width, no biases (Llama 4, DeepSeek, Qwen-MoE) */
  derived->shared_expert_parameters = m * h * (guint64) spec->shared_ffn;
  router = E > 1 ? h * E : 0;      /* MoE gate, no bias (Mixtral) */
  norms = opt ? 2 * 2 * h : 2 * h; /* two norms: LayerNorm weight + bias, or RMSNorm weight */

  derived->layer_parameters = attention + attention_bias + E * derived->expert_parameters +
                              derived->shared_expert_parameters + router + norms;
  derived->layer_active_parameters = attention + attention_bias + A * derived->expert_parameters +
                                     derived->shared_expert_parameters + router + norms;
  derived->embedding_parameters =
      V * h + (opt ? ((guint64) spec->max_context + 2) * h : 0); /* OPT offsets positions by 2 */
  derived->lm_head_parameters = spec->tied_embeddings ? 0 : V * h;
  derived->final_norm_parameters = opt ? 2 * h : h;

  derived->non_embedding_parameters =
      L * derived->layer_parameters + derived->final_norm_parameters;
  derived->active_non_embedding_parameters =
      L * derived->layer_active_parameters + derived->final_norm_parameters;
  derived->total_parameters = derived->embedding_parameters + derived->non_embedding_parameters +
                              derived->lm_head_parameters;
  derived->active_parameters = derived->total_parameters - L * (E - A) * derived->expert_parameters;

  derived->weight_bytes =
      L * derived->layer_parameters * derived->layer_bytes_per_element +
      (derived->total_parameters - L * derived->layer_parameters) * derived->bytes_per_element;
  derived->kv_bytes_per_token_per_layer = 2 * K * d * derived->kv_bytes_per_element;
  derived->kv_bytes_per_token = L * derived->kv_bytes_per_token_per_layer;

  derived->linear_flops_per_token = 2 * derived->active_non_embedding_parameters;
  derived->lm_head_flops_per_token = 2 * h * V;
  derived->attention_flops_per_token = 4 * L * H * d;
}

/* ---- finding models ----------------------------------------------------- */

GPtrArray *ema_llm_search_path(void) {
  return ema_model_dir_search_path(LLMS_DIR, LLMS_ENV);
}

GPtrArray *ema_llm_list(void) {
  return ema_model_dir_list(LLMS_DIR, LLMS_ENV);
}

char *ema_llm_find(const char *name, GError **error) {
  return ema_model_dir_find(LLMS_DIR, LLMS_ENV, name, "model", error);
}

EmaNode *ema_llm_resolve(const EmaNode *at, const char *key_path, GError **error) {
  GError *inner = NULL;
  g_autofree char *path = NULL;

  g_return_val_if_fail(at != NULL && at->value != NULL, NULL);
  path = ema_llm_find(at->value, &inner);
  if (path == NULL) {
    ema_node_error(error, EMA_CONFIG_ERROR_KEY, at, key_path ? key_path : "model", "%s",
                   inner->message);
    g_error_free(inner);
    return NULL;
  }
  return ema_model_load_named(path, at->value, error);
}

void ema_llm_free(EmaLlmSpec *spec) {
  ema_params_free(&ema_llm_params, spec);
}

EmaLlmSpec *ema_llm_load(const char *name, GError **error) {
  g_autofree char *path = ema_llm_find(name, error);
  return path
             ? ema_params_load_tree(&ema_llm_params, ema_model_load_named(path, name, error), error)
             : NULL;
}

static gboolean precision_lookup(const char *option, const char *const *names, const char *name,
                                 EmaPrecision *out, GError **error) {
  for (guint i = 0; names[i]; i++)
    if (strcmp(names[i], name) == 0) {
      *out = (EmaPrecision) i;
      return TRUE;
    }
  g_autofree char *valid = g_strjoinv(", ", (char **) names);
  g_autofree char *quoted = ema_file_quote_cut(name, -1);
  g_set_error(error, EMA_CONFIG_ERROR, EMA_CONFIG_ERROR_INVALID,
              "%s: unknown precision '%s' (valid: %s)", option, quoted, valid);
  return FALSE;
}

gboolean ema_llm_set_precision(EmaLlmSpec *spec, const char *weights, const char *kv_cache,
                               GError **error) {
  return (weights == NULL ||
          precision_lookup("--weights", precision_names, weights, &spec->weights, error)) &&
         (kv_cache == NULL ||
          precision_lookup("--kv-cache", kv_precision_names, kv_cache, &spec->kv_cache, error));
}
