/* test-plan.c: the synthetic decode step as data (validate/decodeplan.c)
 * and the synthetic inputs (validate/fill.h), without a GPU: per-layer
 * sizes of Llama-3.1-8B worked out by hand, the placement of remote blocks
 * (exactly round(F x blocks), evenly spread, physical numbers a
 * permutation), the split of the attention work, every argument error, and
 * the CPU references that the GPU results are checked against, compared
 * with independent computations over the layout that decodeplan.h
 * documents. */
#include <math.h>

#include "decodeplan.h"
#include "errors.h"
#include "fill.h"
#include "testutil.h"

#define H200_SMS 132

static EmaLlmSpec *load(const char *name) {
  GError *error = NULL;
  EmaLlmSpec *model = ema_llm_load(name, &error);
  g_assert_no_error(error);
  return model;
}

static EmaDecodePlan *plan_for(const EmaLlmSpec *model, guint batch, guint context, double fraction,
                               EmaDecodeMode mode) {
  EmaDecodeOptions options = {batch, context, fraction, mode, 1};
  GError *error = NULL;
  EmaDecodePlan *plan = ema_decode_plan_new(model, &options, &error);
  g_assert_no_error(error);
  g_assert_nonnull(plan);
  return plan;
}

static void expect_error(const EmaLlmSpec *model, const EmaDecodeOptions *options, int code,
                         const char *part) {
  GError *error = NULL;
  EmaDecodePlan *plan = ema_decode_plan_new(model, options, &error);
  g_assert_null(plan);
  g_assert_error(error, EMA_VALIDATE_ERROR, code);
  ema_test_assert_contains(error->message, part);
  g_error_free(error);
}

static void test_mode_names(void) {
  EmaDecodeMode mode = EMA_DECODE_LOCAL;
  GError *error = NULL;
  for (EmaDecodeMode m = EMA_DECODE_LOCAL; m <= EMA_DECODE_PREFETCH; m++) {
    g_assert_true(ema_decode_mode_parse(ema_decode_mode_name(m), &mode, &error));
    g_assert_cmpint(mode, ==, m);
  }
  g_assert_false(ema_decode_mode_parse("sideways", &mode, &error));
  g_assert_error(error, EMA_VALIDATE_ERROR, EMA_VALIDATE_ERROR_ARGUMENT);
  g_assert_cmpstr(error->message, ==,
                  "--mode: unknown mode 'sideways' (known: local, direct, prefetch)");
  g_error_free(error);
}

/* Llama-3.1-8B: per layer 218,112,000 parameters (hwmodels/llms/llama-3.1-8b.yaml)
 * = 53,250 rows of 4096; KV 2 x 8 x 128 x 2 B = 4 KiB per token and layer. */
static void test_llama_local(void) {
  g_autoptr(EmaLlmSpec) model = load("llama-3.1-8b");
  g_autoptr(EmaDecodePlan) plan = plan_for(model, 1, 1000, 0, EMA_DECODE_LOCAL);
  g_assert_cmpuint(plan->layers, ==, 32);
  g_assert_cmpuint(plan->hidden, ==, 4096);
  g_assert_cmpuint(plan->group, ==, 4);
  g_assert_cmpuint(plan->group_splits, ==, 2);
  g_assert_cmpuint(plan->head_dim, ==, 128);
  g_assert_cmpuint(plan->layer_weight_rows, ==, 53250);
  g_assert_cmpuint(plan->layer_weight_bytes, ==, G_GUINT64_CONSTANT(436224000));
  g_assert_cmpuint(plan->lm_head_rows, ==, 128256);
  g_assert_cmpuint(plan->lm_head_bytes, ==, G_GUINT64_CONSTANT(1050673152));
  g_assert_cmpuint(ema_decode_plan_weight_bytes(plan), ==, G_GUINT64_CONSTANT(15009841152));
  g_assert_cmpuint(plan->kv_bytes_per_token, ==, 4096);
  g_assert_cmpuint(plan->block_bytes, ==, 65536);
  g_assert_cmpuint(plan->blocks_per_seq, ==, 63);
  g_assert_cmpuint(plan->total_blocks, ==, 63);
  g_assert_cmpuint(plan->remote_blocks, ==, 0);
  g_assert_cmpuint(plan->local_tokens, ==, 1000);
  g_assert_cmpuint(ema_decode_plan_kv_local_bytes(plan), ==, 32 * 1000 * 4096);
  g_assert_cmpuint(ema_decode_plan_kv_remote_bytes(plan), ==, 0);
  g_assert_cmpuint(ema_decode_plan_copy_bytes_per_layer(plan), ==, 0);
  g_assert_cmpuint(plan->options.prefetch_depth, ==, 0);
  g_assert_cmpuint(ema_decode_plan_query_elements(plan), ==, 1 * 8 * 4 * 128);
  g_assert_cmpuint(ema_decode_plan_counters(plan), ==, 8);
  for (guint b = 0; b < plan->total_blocks; b++)
    g_assert_cmpint(plan->block_table[b], >=, 0);
}

/* Mixtral-8x7B: a layer is 1,451,270,144 parameters, an expert 3 x 4096 x 14336 = 176,160,768.
 * A step reads the experts its tokens are routed to: E (1 - (1 - k/E)^B) of 8 (top-2), so
 * batch 1 reads 2 (394,305,536 parameters = 96,266 rows, the active figure), batch 2 3.5,
 * batch 16 7.92 (1,437,145,439 parameters: the step reads ~92 GB, not 25.5), batch 64 all but
 * 14 parameters. Dense models read their layer whole at any batch. */
static void test_moe_experts_read(void) {
  g_autoptr(EmaLlmSpec) model = load("mixtral-8x7b");
  const struct {
    guint batch;
    double experts;
    guint64 rows, step_bytes;
  } cases[] = {
      {1, 2.0, 96266, G_GUINT64_CONSTANT(25497698304)},
      {2, 3.5, 160778, G_GUINT64_CONSTANT(42409132032)},
      {16, 7.919819233939052, 350866, G_GUINT64_CONSTANT(92239560704)},
      {64, 7.999999919274481, 354314, G_GUINT64_CONSTANT(93143433216)},
  };
  for (guint i = 0; i < G_N_ELEMENTS(cases); i++) {
    g_autoptr(EmaDecodePlan) plan = plan_for(model, cases[i].batch, 100, 0, EMA_DECODE_LOCAL);
    g_assert_cmpfloat_with_epsilon(plan->experts_read, cases[i].experts, 1e-12);
    g_assert_cmpfloat_with_epsilon(ema_decode_plan_experts_read(model, cases[i].batch),
                                   cases[i].experts, 1e-12);
    g_assert_cmpuint(plan->layer_weight_rows, ==, cases[i].rows);
    g_assert_cmpuint(ema_decode_plan_weight_bytes(plan), ==, cases[i].step_bytes);
  }
  g_autoptr(EmaLlmSpec) dense = load("llama-3.1-8b");
  g_autoptr(EmaDecodePlan) wide = plan_for(dense, 64, 100, 0, EMA_DECODE_LOCAL);
  g_assert_cmpfloat(wide->experts_read, ==, 1.0);
  g_assert_cmpuint(wide->layer_weight_rows, ==, 53250);
}

/* Each of the two pools' physical numbers is used exactly once. */
static void assert_permutations(const EmaDecodePlan *plan) {
  g_autofree guint8 *local_seen = g_new0(guint8, MAX(plan->local_blocks, 1));
  g_autofree guint8 *remote_seen = g_new0(guint8, MAX(plan->remote_blocks, 1));
  guint remote = 0;
  for (guint b = 0; b < plan->total_blocks; b++) {
    gint32 entry = plan->block_table[b];
    if (entry >= 0) {
      g_assert_cmpint(entry, <, (gint) plan->local_blocks);
      g_assert_cmpuint(local_seen[entry]++, ==, 0);
    } else {
      g_assert_cmpint(-entry - 1, <, (gint) plan->remote_blocks);
      g_assert_cmpuint(remote_seen[-entry - 1]++, ==, 0);
      remote++;
    }
  }
  g_assert_cmpuint(remote, ==, plan->remote_blocks);
}

static void test_remote_quarter(void) {
  g_autoptr(EmaLlmSpec) model = load("llama-3.1-8b");
  g_autoptr(EmaDecodePlan) plan = plan_for(model, 32, 2000, 0.25, EMA_DECODE_DIRECT);
  g_assert_cmpuint(plan->blocks_per_seq, ==, 125);
  g_assert_cmpuint(plan->total_blocks, ==, 4000);
  g_assert_cmpuint(plan->remote_blocks, ==, 1000);
  g_assert_cmpuint(plan->local_blocks, ==, 3000);
  assert_permutations(plan);
  /* evenly spread: one remote block in every 4 consecutive ones */
  for (guint b = 0; b < plan->total_blocks; b += 4) {
    guint remote = 0;
    for (guint k = 0; k < 4; k++)
      remote += plan->block_table[b + k] < 0;
    g_assert_cmpuint(remote, ==, 1);
  }
  /* every block is full (2000 = 125 x 16) */
  g_assert_cmpuint(plan->remote_tokens, ==, 1000 * 16);
  g_assert_cmpuint(plan->local_tokens, ==, 3000 * 16);
  g_assert_cmpuint(ema_decode_plan_copy_bytes_per_layer(plan), ==, 1000 * 65536);
  g_assert_cmpuint(ema_decode_plan_kv_remote_bytes(plan), ==,
                   G_GUINT64_CONSTANT(32) * 16000 * 4096);
}

static void test_fractions(void) {
  g_autoptr(EmaLlmSpec) model = load("llama-3.1-8b");
  const struct {
    double fraction;
    guint remote;
  } cases[] = {{0.1, 400}, {0.5, 2000}, {1.0, 4000}, {0.0, 0}, {0.33333, 1333}};
  for (guint i = 0; i < G_N_ELEMENTS(cases); i++) {
    g_autoptr(EmaDecodePlan) plan =
        plan_for(model, 32, 2000, cases[i].fraction, EMA_DECODE_PREFETCH);
    g_assert_cmpuint(plan->remote_blocks, ==, cases[i].remote);
    g_assert_cmpuint(plan->options.prefetch_depth, ==, 1);
    assert_permutations(plan);
  }
}

/* A partial last block: 1000 = 62 x 16 + 8. */
static void test_partial_block(void) {
  g_autoptr(EmaLlmSpec) model = load("llama-3.1-8b");
  g_autoptr(EmaDecodePlan) plan = plan_for(model, 3, 1000, 0.5, EMA_DECODE_DIRECT);
  g_assert_cmpuint(plan->total_blocks, ==, 189);
  g_assert_cmpuint(plan->remote_blocks, ==, 95); /* round(94.5) */
  g_assert_cmpuint(plan->local_tokens + plan->remote_tokens, ==, 3000);
  assert_permutations(plan);
}

static void assert_partition(const EmaDecodePlan *plan, guint per_part, guint parts) {
  g_assert_cmpuint(plan->blocks_per_part, ==, per_part);
  g_assert_cmpuint(plan->parts_per_seq, ==, parts);
  g_assert_cmpuint(plan->parts_per_seq * plan->blocks_per_part, >=, plan->blocks_per_seq);
  g_assert_cmpuint((plan->parts_per_seq - 1) * plan->blocks_per_part, <, plan->blocks_per_seq);
  g_assert_cmpuint(plan->parts_per_seq, <=, 32);
}

static void test_partition(void) {
  g_autoptr(EmaLlmSpec) model = load("llama-3.1-8b");
  g_autoptr(EmaDecodePlan) small = plan_for(model, 1, 1000, 0, EMA_DECODE_LOCAL);
  g_autoptr(EmaDecodePlan) large = plan_for(model, 64, 4000, 0, EMA_DECODE_LOCAL);
  g_autoptr(EmaDecodePlan) long_context = plan_for(model, 1, 100000, 0, EMA_DECODE_LOCAL);
  g_autoptr(EmaDecodePlan) tiny = plan_for(model, 1, 10, 0, EMA_DECODE_LOCAL);
  /* 1 x 63 x 8 x 2 = 1008 units < 16 x 132: the minimum, 4 blocks a part */
  ema_decode_plan_partition(small, H200_SMS);
  assert_partition(small, 4, 16);
  /* 64 x 250 x 8 x 2 = 256000 units / 2112 = 121 -> at most 64: 4 parts of 63 */
  ema_decode_plan_partition(large, H200_SMS);
  assert_partition(large, 63, 4);
  /* 6250 blocks: at most 32 parts, of 196 blocks */
  ema_decode_plan_partition(long_context, H200_SMS);
  assert_partition(long_context, 196, 32);
  ema_decode_plan_partition(tiny, H200_SMS);
  assert_partition(tiny, 1, 1);
  g_assert_cmpuint(ema_decode_plan_partial_floats(large), ==,
                   G_GUINT64_CONSTANT(64) * 4 * 8 * 4 * 130);
}

static void test_group_splits(void) {
  g_autoptr(EmaLlmSpec) mha = load("llama-2-7b");
  g_autoptr(EmaLlmSpec) five = load("qwen2.5-14b");
  g_autoptr(EmaDecodePlan) mha_plan = plan_for(mha, 2, 100, 0, EMA_DECODE_LOCAL);
  g_autoptr(EmaDecodePlan) five_plan = plan_for(five, 2, 100, 0, EMA_DECODE_LOCAL);
  g_assert_cmpuint(mha_plan->group, ==, 1);
  g_assert_cmpuint(mha_plan->group_splits, ==, 1);
  g_assert_cmpuint(five_plan->group, ==, 5);
  g_assert_cmpuint(five_plan->group_splits, ==, 3);
  g_assert_cmpuint(ema_decode_plan_counters(five_plan), ==, 2 * 8);
}

static void test_option_errors(void) {
  g_autoptr(EmaLlmSpec) model = load("llama-3.1-8b");
  EmaDecodeOptions o = {1, 1000, 0, EMA_DECODE_LOCAL, 1};
  o.batch = 0;
  expect_error(model, &o, EMA_VALIDATE_ERROR_ARGUMENT, "--batch: 0 is outside 1..65536");
  o.batch = 1;
  o.context = 0;
  expect_error(model, &o, EMA_VALIDATE_ERROR_ARGUMENT, "--context: 0 is outside 1..131072");
  o.context = 131073;
  expect_error(model, &o, EMA_VALIDATE_ERROR_ARGUMENT, "(llama-3.1-8b's max_context)");
  o.context = 1000;
  o.remote_fraction = 1.5;
  o.mode = EMA_DECODE_DIRECT;
  expect_error(model, &o, EMA_VALIDATE_ERROR_ARGUMENT, "--remote-fraction: 1.5 is outside 0..1");
  o.remote_fraction = NAN;
  expect_error(model, &o, EMA_VALIDATE_ERROR_ARGUMENT, "--remote-fraction");
  o.remote_fraction = 0.25;
  o.mode = EMA_DECODE_LOCAL;
  expect_error(model, &o, EMA_VALIDATE_ERROR_ARGUMENT,
               "--remote-fraction 0.25 needs --mode direct or --mode prefetch");
  o.mode = EMA_DECODE_PREFETCH;
  o.prefetch_depth = 0;
  expect_error(model, &o, EMA_VALIDATE_ERROR_ARGUMENT, "--prefetch-depth: 0 is outside 1..31");
  o.prefetch_depth = 32;
  expect_error(model, &o, EMA_VALIDATE_ERROR_ARGUMENT, "--prefetch-depth: 32 is outside 1..31");
  {
    /* a (made-up) context of 4 Mi tokens: 65536 x 262144 blocks overflow the table */
    EmaLlmSpec long_model = *model;
    long_model.max_context = 1 << 24;
    o.prefetch_depth = 1;
    o.batch = 65536;
    o.context = 1 << 22;
    expect_error(&long_model, &o, EMA_VALIDATE_ERROR_ARGUMENT, "more than a block table holds");
  }
}

static void test_unsupported_shapes(void) {
  g_autoptr(EmaLlmSpec) model = load("llama-3.1-8b");
  EmaDecodeOptions o = {1, 100, 0, EMA_DECODE_LOCAL, 1};
  EmaLlmSpec copy = *model;
  copy.dtype = EMA_DTYPE_FP32;
  expect_error(&copy, &o, EMA_VALIDATE_ERROR_UNSUPPORTED, "2-byte elements (bf16/fp16), not 4");
  copy = *model;
  copy.head_dim = 96;
  expect_error(&copy, &o, EMA_VALIDATE_ERROR_UNSUPPORTED, "head_dim 96 is not supported");
  copy = *model;
  copy.kv_heads = 2; /* 16 query heads per KV head */
  expect_error(&copy, &o, EMA_VALIDATE_ERROR_UNSUPPORTED, "at most 8 query heads");
  copy = *model;
  copy.kv_heads = 5; /* does not divide 32 */
  expect_error(&copy, &o, EMA_VALIDATE_ERROR_UNSUPPORTED, "32 heads over 5 KV heads");
  copy = *model;
  copy.hidden = 4000;
  expect_error(&copy, &o, EMA_VALIDATE_ERROR_UNSUPPORTED, "hidden 4000 is not a multiple of 256");
}

static void test_fill(void) {
  double sum = 0;
  guint zeros = 0;
  g_assert_cmpfloat(ema_bf16_to_float(0x3f80), ==, 1.0f);
  g_assert_cmpfloat(ema_bf16_to_float(0xbf00), ==, -0.5f);
  g_assert_cmpuint(ema_fill_bf16(3, 12345), ==, ema_fill_bf16(3, 12345));
  g_assert_cmpuint(ema_fill_bf16(3, 12345), !=, ema_fill_bf16(4, 12345));
  for (guint64 i = 0; i < 100000; i++) {
    float value = ema_bf16_to_float(ema_fill_bf16(EMA_SEED_WEIGHTS, i));
    g_assert_cmpfloat(value, >=, -0.5f);
    g_assert_cmpfloat(value, <, 0.5f);
    zeros += value == 0.0f;
    sum += value;
  }
  g_assert_cmpuint(zeros, <, 100);
  g_assert_cmpfloat(fabs(sum / 100000), <, 0.01);
}

static double element(guint64 seed, guint64 index) {
  return ema_bf16_to_float(ema_fill_bf16(seed, index));
}

/* The GEMV reference against the sum written out from the layout. */
static void test_reference_gemv(void) {
  g_autoptr(EmaLlmSpec) model = load("llama-3.1-8b");
  g_autoptr(EmaDecodePlan) plan = plan_for(model, 1, 16, 0, EMA_DECODE_LOCAL);
  const guint64 rows = 53250, hidden = 4096;
  const struct {
    guint layer;
    guint64 row;
  } cases[] = {{0, 0}, {3, 777}, {31, rows - 1}, {32, 128255}};
  for (guint i = 0; i < G_N_ELEMENTS(cases); i++) {
    gboolean lm_head = cases[i].layer == 32;
    double expected = 0, magnitude = 0, got_magnitude;
    double got = ema_decode_reference_gemv(plan, cases[i].layer, cases[i].row, &got_magnitude);
    for (guint64 k = 0; k < hidden; k++) {
      double w =
          lm_head ? element(EMA_SEED_LM_HEAD, cases[i].row * hidden + k)
                  : element(EMA_SEED_WEIGHTS, (cases[i].layer * rows + cases[i].row) * hidden + k);
      double x = element(EMA_SEED_ACTIVATIONS, cases[i].layer * hidden + k);
      expected += w * x;
      magnitude += fabs(w * x);
    }
    g_assert_cmpfloat(got, ==, expected);
    g_assert_cmpfloat(got_magnitude, ==, magnitude);
    g_assert_cmpfloat(magnitude, >, 0);
  }
}

/* A small made-up shape: 2 layers, 2 KV heads of 64 with 2 query heads each. */
static EmaLlmSpec *small_model(void) {
  EmaLlmSpec *model = g_new0(EmaLlmSpec, 1);
  model->name = g_strdup("small");
  model->layers = 2;
  model->hidden = 256;
  model->ffn = 512;
  model->heads = 4;
  model->kv_heads = 2;
  model->head_dim = 64;
  model->vocab = 512;
  model->dtype = EMA_DTYPE_BF16;
  model->ffn_kind = EMA_FFN_GATED;
  model->experts = 1;
  model->active_experts = 1;
  model->max_context = 1000;
  return model;
}

/* Attention written out from the documented layout: head-major blocks,
 * K then V, local pool (seed KV_LOCAL) or remote pool (seed KV_REMOTE). */
static void naive_attention(const EmaDecodePlan *p, guint layer, guint seq, guint head, guint g,
                            double *out) {
  guint d_max = p->head_dim, context = p->options.context;
  g_autofree double *weights = g_new(double, context);
  double top = -INFINITY, total = 0;
  for (guint t = 0; t < context; t++) {
    gint32 entry = p->block_table[seq * p->blocks_per_seq + t / 16];
    gboolean local = entry >= 0;
    guint64 physical = local ? (guint64) entry : (guint64) (-entry - 1);
    guint64 blocks = local ? p->local_blocks : p->remote_blocks;
    guint64 seed = local ? EMA_SEED_KV_LOCAL : EMA_SEED_KV_REMOTE;
    guint64 base = (layer * blocks + physical) * (2 * 16 * p->kv_heads * d_max);
    double dot = 0;
    for (guint d = 0; d < d_max; d++) {
      guint64 q_index =
          (((guint64) (layer * p->options.batch + seq) * p->kv_heads + head) * p->group + g) *
              d_max +
          d;
      dot += element(EMA_SEED_QUERIES, q_index) *
             element(seed, base + ((guint64) head * 16 + t % 16) * d_max + d);
    }
    weights[t] = dot / sqrt((double) d_max);
    top = MAX(top, weights[t]);
  }
  for (guint t = 0; t < context; t++) {
    weights[t] = exp(weights[t] - top);
    total += weights[t];
  }
  for (guint d = 0; d < d_max; d++) {
    double sum = 0;
    for (guint t = 0; t < context; t++) {
      gint32 entry = p->block_table[seq * p->blocks_per_seq + t / 16];
      gboolean local = entry >= 0;
      guint64 physical = local ? (guint64) entry : (guint64) (-entry - 1);
      guint64 blocks = local ? p->local_blocks : p->remote_blocks;
      guint64 seed = local ? EMA_SEED_KV_LOCAL : EMA_SEED_KV_REMOTE;
      guint64 base = (layer * blocks + physical) * (2 * 16 * p->kv_heads * d_max);
      guint64 half = 16 * p->kv_heads * d_max;
      sum += weights[t] * element(seed, base + half + ((guint64) head * 16 + t % 16) * d_max + d);
    }
    out[d] = sum / total;
  }
}

static void test_reference_attention(void) {
  g_autoptr(EmaLlmSpec) model = small_model();
  g_autoptr(EmaDecodePlan) plan = plan_for(model, 3, 37, 0.4, EMA_DECODE_DIRECT);
  double out[2 * 64], naive[64];
  guint remote_seen = 0;
  g_assert_cmpuint(plan->group, ==, 2);
  g_assert_cmpuint(plan->total_blocks, ==, 9);
  g_assert_cmpuint(plan->remote_blocks, ==, 4);
  for (guint layer = 0; layer < 2; layer++) {
    for (guint seq = 0; seq < 3; seq++) {
      for (guint head = 0; head < 2; head++) {
        ema_decode_reference_attention(plan, layer, seq, head, out);
        for (guint g = 0; g < 2; g++) {
          naive_attention(plan, layer, seq, head, g, naive);
          for (guint d = 0; d < 64; d++) {
            g_assert_cmpfloat(fabs(out[g * 64 + d] - naive[d]), <=, 1e-12);
            /* a convex combination of values in [-0.5, 0.5) */
            g_assert_cmpfloat(fabs(out[g * 64 + d]), <, 0.5);
          }
        }
      }
    }
  }
  for (guint b = 0; b < plan->total_blocks; b++)
    remote_seen += plan->block_table[b] < 0;
  g_assert_cmpuint(remote_seen, ==, 4);
}

int main(int argc, char **argv) {
  g_test_init(&argc, &argv, NULL);
  g_test_add_func("/validate/plan/mode-names", test_mode_names);
  g_test_add_func("/validate/plan/llama-local", test_llama_local);
  g_test_add_func("/validate/plan/moe-experts-read", test_moe_experts_read);
  g_test_add_func("/validate/plan/remote-quarter", test_remote_quarter);
  g_test_add_func("/validate/plan/fractions", test_fractions);
  g_test_add_func("/validate/plan/partial-block", test_partial_block);
  g_test_add_func("/validate/plan/partition", test_partition);
  g_test_add_func("/validate/plan/group-splits", test_group_splits);
  g_test_add_func("/validate/plan/option-errors", test_option_errors);
  g_test_add_func("/validate/plan/unsupported-shapes", test_unsupported_shapes);
  g_test_add_func("/validate/fill/values", test_fill);
  g_test_add_func("/validate/plan/reference-gemv", test_reference_gemv);
  g_test_add_func("/validate/plan/reference-attention", test_reference_attention);
  return g_test_run();
}
