/* decodeplan.c: the synthetic decode step as data, and its CPU references
 * (decodeplan.h). Invariants of a plan: exactly round(F x blocks) blocks
 * are remote, spread evenly in the order (sequence, block); the local and
 * the remote physical block numbers are each a permutation (every number
 * used once); every sequence's blocks are covered by its attention parts. */
#include "decodeplan.h"

#include <math.h>
#include <string.h>

#include "errors.h"
#include "fill.h"

#define PLAN_PERMUTATION_SEED 0x5eed
#define MAX_BATCH 65536
#define MAX_GROUP 8
#define MIN_BLOCKS_PER_PART 4
#define MAX_BLOCKS_PER_PART 64
#define MAX_PARTS_PER_SEQ 32
#define TARGET_BLOCKS_PER_SM 16

static const char *const mode_names[] = {"local", "direct", "prefetch"};

const char *ema_decode_mode_name(EmaDecodeMode mode) {
  g_return_val_if_fail(mode <= EMA_DECODE_PREFETCH, "?");
  return mode_names[mode];
}

gboolean ema_decode_mode_parse(const char *text, EmaDecodeMode *mode, GError **error) {
  for (guint i = 0; i < G_N_ELEMENTS(mode_names); i++) {
    if (strcmp(text, mode_names[i]) == 0) {
      *mode = (EmaDecodeMode) i;
      return TRUE;
    }
  }
  g_set_error(error, EMA_VALIDATE_ERROR, EMA_VALIDATE_ERROR_ARGUMENT,
              "--mode: unknown mode '%s' (known: local, direct, prefetch)", text);
  return FALSE;
}

static gboolean check_model(const EmaLlmSpec *model, const EmaLlmDerived *derived, GError **error) {
  if (derived->bytes_per_element != 2) {
    g_set_error(error, EMA_VALIDATE_ERROR, EMA_VALIDATE_ERROR_UNSUPPORTED,
                "model %s: the decode kernels stream 2-byte elements (bf16/fp16), not %u-byte",
                model->name, derived->bytes_per_element);
    return FALSE;
  }
  if (model->head_dim != 64 && model->head_dim != 128 && model->head_dim != 256) {
    g_set_error(error, EMA_VALIDATE_ERROR, EMA_VALIDATE_ERROR_UNSUPPORTED,
                "model %s: head_dim %" G_GINT64_FORMAT
                " is not supported by the attention kernel (64, 128 or 256)",
                model->name, model->head_dim);
    return FALSE;
  }
  if (model->kv_heads < 1 || model->heads % model->kv_heads != 0 ||
      model->heads / model->kv_heads > MAX_GROUP) {
    g_set_error(error, EMA_VALIDATE_ERROR, EMA_VALIDATE_ERROR_UNSUPPORTED,
                "model %s: %" G_GINT64_FORMAT " heads over %" G_GINT64_FORMAT
                " KV heads: the attention kernel needs a whole group of at most %d query heads "
                "per KV head",
                model->name, model->heads, model->kv_heads, MAX_GROUP);
    return FALSE;
  }
  if (model->hidden % 256 != 0) {
    g_set_error(error, EMA_VALIDATE_ERROR, EMA_VALIDATE_ERROR_UNSUPPORTED,
                "model %s: hidden %" G_GINT64_FORMAT
                " is not a multiple of 256 (the GEMV kernel gives each lane of a warp whole "
                "16-byte vectors of a row)",
                model->name, model->hidden);
    return FALSE;
  }
  return TRUE;
}

static gboolean check_options(const EmaLlmSpec *model, const EmaDecodeOptions *options,
                              GError **error) {
  if (options->batch < 1 || options->batch > MAX_BATCH) {
    g_set_error(error, EMA_VALIDATE_ERROR, EMA_VALIDATE_ERROR_ARGUMENT,
                "--batch: %u is outside 1..%d", options->batch, MAX_BATCH);
    return FALSE;
  }
  if (options->context < 1 || (gint64) options->context > model->max_context) {
    g_set_error(error, EMA_VALIDATE_ERROR, EMA_VALIDATE_ERROR_ARGUMENT,
                "--context: %u is outside 1..%" G_GINT64_FORMAT " (%s's max_context)",
                options->context, model->max_context, model->name);
    return FALSE;
  }
  if (!(options->remote_fraction >= 0 && options->remote_fraction <= 1)) {
    g_set_error(error, EMA_VALIDATE_ERROR, EMA_VALIDATE_ERROR_ARGUMENT,
                "--remote-fraction: %g is outside 0..1", options->remote_fraction);
    return FALSE;
  }
  if (options->mode == EMA_DECODE_LOCAL && options->remote_fraction > 0) {
    g_set_error(error, EMA_VALIDATE_ERROR, EMA_VALIDATE_ERROR_ARGUMENT,
                "--remote-fraction %g needs --mode direct or --mode prefetch (local mode keeps "
                "every block local)",
                options->remote_fraction);
    return FALSE;
  }
  if (options->mode == EMA_DECODE_PREFETCH &&
      (options->prefetch_depth < 1 || (gint64) options->prefetch_depth >= model->layers)) {
    g_set_error(error, EMA_VALIDATE_ERROR, EMA_VALIDATE_ERROR_ARGUMENT,
                "--prefetch-depth: %u is outside 1..%" G_GINT64_FORMAT " (layers - 1)",
                options->prefetch_depth, model->layers - 1);
    return FALSE;
  }
  return TRUE;
}

/* A permutation of 0..N-1 (Fisher-Yates with GLib's Mersenne Twister). */
static guint *permutation(GRand *rand, guint n) {
  guint *order = g_new(guint, MAX(n, 1));
  for (guint i = 0; i < n; i++)
    order[i] = i;
  for (guint i = n; i > 1; i--) {
    guint j = (guint) g_rand_int_range(rand, 0, (gint32) i);
    guint swap = order[i - 1];
    order[i - 1] = order[j];
    order[j] = swap;
  }
  return order;
}

static guint tokens_in_block(const EmaDecodePlan *plan, guint block) {
  if (block + 1 < plan->blocks_per_seq)
    return EMA_KV_BLOCK_TOKENS;
  return plan->options.context - EMA_KV_BLOCK_TOKENS * (plan->blocks_per_seq - 1);
}

static void build_block_table(EmaDecodePlan *plan) {
  guint64 total = plan->total_blocks, remote = plan->remote_blocks;
  g_autoptr(GRand) rand = g_rand_new_with_seed(PLAN_PERMUTATION_SEED);
  g_autofree guint *local_order = permutation(rand, plan->local_blocks);
  g_autofree guint *remote_order = permutation(rand, plan->remote_blocks);
  guint next_local = 0, next_remote = 0;

  plan->block_table = g_new(gint32, total);
  for (guint64 k = 0; k < total; k++) {
    /* Block k is remote when floor((k+1) R / T) steps past floor(k R / T). */
    gboolean is_remote = ((k + 1) * remote) / total > (k * remote) / total;
    guint tokens = tokens_in_block(plan, (guint) (k % plan->blocks_per_seq));
    if (is_remote) {
      plan->block_table[k] = -(gint32) remote_order[next_remote++] - 1;
      plan->remote_tokens += tokens;
    } else {
      plan->block_table[k] = (gint32) local_order[next_local++];
      plan->local_tokens += tokens;
    }
  }
  g_assert(next_local == plan->local_blocks && next_remote == plan->remote_blocks);
}

gboolean ema_decode_plan_check(const EmaLlmSpec *model, const EmaDecodeOptions *options,
                               GError **error) {
  EmaLlmDerived derived;
  guint64 total;

  g_return_val_if_fail(model != NULL && options != NULL, FALSE);
  ema_llm_derive(model, &derived);
  if (!check_model(model, &derived, error) || !check_options(model, options, error))
    return FALSE;
  total = (guint64) options->batch *
          ((options->context + EMA_KV_BLOCK_TOKENS - 1) / EMA_KV_BLOCK_TOKENS);
  if (total > G_MAXINT32) {
    g_set_error(error, EMA_VALIDATE_ERROR, EMA_VALIDATE_ERROR_ARGUMENT,
                "--batch %u x --context %u needs %" G_GUINT64_FORMAT
                " KV blocks, more than a block table holds",
                options->batch, options->context, total);
    return FALSE;
  }
  return TRUE;
}

EmaDecodePlan *ema_decode_plan_new(const EmaLlmSpec *model, const EmaDecodeOptions *options,
                                   GError **error) {
  EmaLlmDerived derived;
  EmaDecodePlan *plan;
  guint64 total;

  g_return_val_if_fail(model != NULL && options != NULL, NULL);
  if (!ema_decode_plan_check(model, options, error))
    return NULL;
  ema_llm_derive(model, &derived);
  total = (guint64) options->batch *
          ((options->context + EMA_KV_BLOCK_TOKENS - 1) / EMA_KV_BLOCK_TOKENS);

  plan = g_new0(EmaDecodePlan, 1);
  plan->options = *options;
  if (options->mode != EMA_DECODE_PREFETCH)
    plan->options.prefetch_depth = 0;
  plan->model_name = g_strdup(model->name);
  plan->layers = (guint) model->layers;
  plan->hidden = (guint) model->hidden;
  plan->heads = (guint) model->heads;
  plan->kv_heads = (guint) model->kv_heads;
  plan->group = (guint) (model->heads / model->kv_heads);
  plan->group_splits = plan->group == 1 ? 1
                                        : (plan->group + EMA_ATTENTION_HEADS_PER_BLOCK - 1) /
                                              EMA_ATTENTION_HEADS_PER_BLOCK;
  plan->head_dim = (guint) model->head_dim;
  plan->vocab = (guint) model->vocab;
  plan->experts_read = ema_decode_plan_experts_read(model, options->batch);
  {
    /* every expert that gets a token is read once for the batch; the others not at all */
    guint64 unread = (guint64) llround(((double) model->experts - plan->experts_read) *
                                       (double) derived.expert_parameters);
    guint64 read =
        model->experts > 1 ? derived.layer_parameters - unread : derived.layer_active_parameters;
    plan->layer_weight_rows = (read + plan->hidden - 1) / plan->hidden;
  }
  plan->layer_weight_bytes = plan->layer_weight_rows * plan->hidden * 2;
  plan->lm_head_rows = plan->vocab;
  plan->lm_head_bytes = plan->lm_head_rows * plan->hidden * 2;
  plan->blocks_per_seq = (options->context + EMA_KV_BLOCK_TOKENS - 1) / EMA_KV_BLOCK_TOKENS;
  plan->total_blocks = (guint) total;
  plan->remote_blocks = (guint) llround(options->remote_fraction * (double) total);
  plan->local_blocks = plan->total_blocks - plan->remote_blocks;
  plan->block_elements = (guint64) 2 * EMA_KV_BLOCK_TOKENS * plan->kv_heads * plan->head_dim;
  plan->block_bytes = plan->block_elements * 2;
  plan->kv_bytes_per_token = derived.kv_bytes_per_token_per_layer;
  build_block_table(plan);
  ema_decode_plan_partition(plan, 1);
  return plan;
}

void ema_decode_plan_free(EmaDecodePlan *plan) {
  if (plan == NULL)
    return;
  g_free(plan->model_name);
  g_free(plan->block_table);
  g_free(plan);
}

void ema_decode_plan_partition(EmaDecodePlan *plan, guint multiprocessors) {
  guint64 work =
      (guint64) plan->options.batch * plan->blocks_per_seq * plan->kv_heads * plan->group_splits;
  guint64 target = (guint64) TARGET_BLOCKS_PER_SM * MAX(multiprocessors, 1);
  guint per_part = (guint) CLAMP(work / target, MIN_BLOCKS_PER_PART, MAX_BLOCKS_PER_PART);
  guint parts;
  per_part = MAX(per_part, (plan->blocks_per_seq + MAX_PARTS_PER_SEQ - 1) / MAX_PARTS_PER_SEQ);
  per_part = MIN(per_part, plan->blocks_per_seq);
  parts = (plan->blocks_per_seq + per_part - 1) / per_part;
  /* Even parts: the same number of parts, each as small as they can be. */
  plan->blocks_per_part = (plan->blocks_per_seq + parts - 1) / parts;
  plan->parts_per_seq = (plan->blocks_per_seq + plan->blocks_per_part - 1) / plan->blocks_per_part;
}

double ema_decode_plan_experts_read(const EmaLlmSpec *model, guint batch) {
  if (model->experts <= 1)
    return 1;
  double k = (double) model->active_experts, e = (double) model->experts;
  return e * (1.0 - pow(1.0 - k / e, (double) batch));
}

guint64 ema_decode_plan_weight_bytes(const EmaDecodePlan *plan) {
  return plan->layers * plan->layer_weight_bytes + plan->lm_head_bytes;
}

guint64 ema_decode_plan_kv_local_bytes(const EmaDecodePlan *plan) {
  return plan->layers * plan->local_tokens * plan->kv_bytes_per_token;
}

guint64 ema_decode_plan_kv_remote_bytes(const EmaDecodePlan *plan) {
  return plan->layers * plan->remote_tokens * plan->kv_bytes_per_token;
}

guint64 ema_decode_plan_copy_bytes_per_layer(const EmaDecodePlan *plan) {
  return (guint64) plan->remote_blocks * plan->block_bytes;
}

guint64 ema_decode_plan_query_elements(const EmaDecodePlan *plan) {
  return (guint64) plan->options.batch * plan->kv_heads * plan->group * plan->head_dim;
}

guint64 ema_decode_plan_output_elements(const EmaDecodePlan *plan) {
  return ema_decode_plan_query_elements(plan);
}

guint64 ema_decode_plan_partial_floats(const EmaDecodePlan *plan) {
  return (guint64) plan->options.batch * plan->parts_per_seq * plan->kv_heads * plan->group *
         (plan->head_dim + 2);
}

static double element(guint64 seed, guint64 index) {
  return ema_bf16_to_float(ema_fill_bf16(seed, index));
}

guint64 ema_decode_plan_counters(const EmaDecodePlan *plan) {
  return (guint64) plan->options.batch * plan->kv_heads;
}

double ema_decode_reference_gemv(const EmaDecodePlan *plan, guint layer, guint64 row,
                                 double *abs_sum) {
  gboolean lm_head = layer == plan->layers;
  guint64 seed = lm_head ? EMA_SEED_LM_HEAD : EMA_SEED_WEIGHTS;
  guint64 first = lm_head ? row * plan->hidden
                          : ((guint64) layer * plan->layer_weight_rows + row) * plan->hidden;
  double sum = 0, magnitude = 0;
  for (guint k = 0; k < plan->hidden; k++) {
    double product = element(seed, first + k) *
                     element(EMA_SEED_ACTIVATIONS, (guint64) layer * plan->hidden + k);
    sum += product;
    magnitude += fabs(product);
  }
  if (abs_sum)
    *abs_sum = magnitude;
  return sum;
}

/* Element index and seed of dimension D of token TOKEN's K (or V) vector
 * of head HEAD, sequence SEQ, layer LAYER. */
static void kv_element(const EmaDecodePlan *plan, guint layer, guint seq, guint token, guint head,
                       gboolean value, guint d, guint64 *seed, guint64 *index) {
  gint32 entry =
      plan->block_table[(guint64) seq * plan->blocks_per_seq + token / EMA_KV_BLOCK_TOKENS];
  guint slot = token % EMA_KV_BLOCK_TOKENS;
  guint64 blocks = entry >= 0 ? plan->local_blocks : plan->remote_blocks;
  guint64 physical = entry >= 0 ? (guint64) entry : (guint64) (-(gint64) entry - 1);
  guint64 base = ((guint64) layer * blocks + physical) * plan->block_elements;
  guint64 half = (guint64) EMA_KV_BLOCK_TOKENS * plan->kv_heads * plan->head_dim;
  *seed = entry >= 0 ? EMA_SEED_KV_LOCAL : EMA_SEED_KV_REMOTE;
  *index = base + (value ? half : 0) +
           ((guint64) head * EMA_KV_BLOCK_TOKENS + slot) * plan->head_dim + d;
}

void ema_decode_reference_attention(const EmaDecodePlan *plan, guint layer, guint seq, guint head,
                                    double *out) {
  guint context = plan->options.context, d_max = plan->head_dim;
  double scale = 1.0 / sqrt((double) plan->head_dim);
  g_autofree double *scores = g_new(double, context);
  g_autofree double *query = g_new(double, d_max);

  for (guint g = 0; g < plan->group; g++) {
    guint64 q_first =
        ((((guint64) layer * plan->options.batch + seq) * plan->kv_heads + head) * plan->group +
         g) *
        plan->head_dim;
    double top = -INFINITY, total = 0;
    for (guint d = 0; d < d_max; d++)
      query[d] = element(EMA_SEED_QUERIES, q_first + d);
    for (guint t = 0; t < context; t++) {
      double dot = 0;
      for (guint d = 0; d < d_max; d++) {
        guint64 seed, index;
        kv_element(plan, layer, seq, t, head, FALSE, d, &seed, &index);
        dot += query[d] * element(seed, index);
      }
      scores[t] = dot * scale;
      top = MAX(top, scores[t]);
    }
    for (guint t = 0; t < context; t++) {
      scores[t] = exp(scores[t] - top);
      total += scores[t];
    }
    for (guint d = 0; d < d_max; d++) {
      double sum = 0;
      for (guint t = 0; t < context; t++) {
        guint64 seed, index;
        kv_element(plan, layer, seq, t, head, TRUE, d, &seed, &index);
        sum += scores[t] * element(seed, index);
      }
      out[g * d_max + d] = sum / total;
    }
  }
}
