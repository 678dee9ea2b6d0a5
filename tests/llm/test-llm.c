/* test-llm.c: the LLM shapes (sim/hw/llm.c) and the step-time model
 * (sim/hw/steptime.c). Every model file in hwmodels/llms loads by name and
 * gives the parameter counts worked out by hand in its comments; name
 * search and shape errors answer with the known names or a file:line:col;
 * and the step time of small batches equals the equations of steptime.h,
 * with every number worked out in the comment next to it. Seconds in the
 * comments are rounded; the assertions use the exact expressions. */
#include <math.h>
#include <string.h>

#include <glib/gstdio.h>
#include <sys/stat.h>

#include "ema/run/experiment.h"
#include "ema/hw/hwmodel.h"
#include "ema/hw/llm.h"
#include "ema/hw/steptime.h"

/* Every shape of hwmodels/llms, with their total parameter counts as derived by hand in
 * hwmodels/llms/README.md (and at the bottom of each file). */
static const struct {
  const char *name;
  guint64 total_parameters;
} models[] = {
    {"codellama-34b", G_GUINT64_CONSTANT(33743970304)},
    {"llama-13b", G_GUINT64_CONSTANT(13015864320)},
    {"llama-2-13b", G_GUINT64_CONSTANT(13015864320)},
    {"llama-2-70b", G_GUINT64_CONSTANT(68976648192)},
    {"llama-2-7b", G_GUINT64_CONSTANT(6738415616)},
    {"llama-3.1-70b", G_GUINT64_CONSTANT(70553706496)},
    {"llama-3.1-8b", G_GUINT64_CONSTANT(8030261248)},
    {"llama-4-scout-17b-16e", G_GUINT64_CONSTANT(107769861120)},
    {"mistral-7b-v0.1", G_GUINT64_CONSTANT(7241732096)},
    {"mistral-nemo-12b", G_GUINT64_CONSTANT(12247782400)},
    {"mixtral-8x7b", G_GUINT64_CONSTANT(46702792704)},
    {"opt-13b", G_GUINT64_CONSTANT(12853473280)},
    {"opt-30b", G_GUINT64_CONSTANT(29974540288)},
    {"qwen2.5-14b", G_GUINT64_CONSTANT(14770033664)},
    {"qwen2.5-32b", G_GUINT64_CONSTANT(32763876352)},
    {"qwen2.5-7b", G_GUINT64_CONSTANT(7615616512)},
};

#define KNOWN_MODELS                                                                               \
  "codellama-34b, llama-13b, llama-2-13b, llama-2-70b, llama-2-7b, llama-3.1-70b, llama-3.1-8b, "  \
  "llama-4-scout-17b-16e, "                                                                        \
  "mistral-7b-v0.1, mistral-nemo-12b, mixtral-8x7b, opt-13b, opt-30b, qwen2.5-14b, qwen2.5-32b, "  \
  "qwen2.5-7b"

/* ---- helpers ------------------------------------------------------------ */

/* Find NAME, load its file and bind it, as an experiment would. */
static EmaLlmSpec *load_model(const char *name) {
  GError *error = NULL;
  g_autofree char *path = ema_llm_find(name, &error);
  g_autoptr(EmaNode) root = NULL;
  EmaLlmSpec *spec;
  g_assert_no_error(error);
  g_assert_nonnull(path);
  root = ema_node_load_file(path, &error);
  g_assert_no_error(error);
  spec = g_new0(EmaLlmSpec, 1);
  g_assert_true(ema_params_bind(&ema_llm_params, spec, root, NULL, &error));
  g_assert_no_error(error);
  return spec;
}

static EmaServerSpec *load_server(const char *name) {
  GError *error = NULL;
  EmaServerSpec *server = ema_server_load(name, &error);
  g_assert_no_error(error);
  g_assert_nonnull(server);
  return server;
}

/* A server whose GPU times every operator by its roofline: the step-time
 * tests below are derived by hand from the roofline's equations, so they
 * leave the GPU's measured profile out (tests/profile checks profiles). */
static EmaServerSpec *load_roofline_server(const char *name) {
  EmaServerSpec *server = load_server(name);
  g_clear_pointer(&server->gpu.profile, g_free);
  return server;
}

static EmaStepModel *step_model(const EmaLlmSpec *llm, const EmaServerSpec *server, guint tp) {
  GError *error = NULL;
  EmaStepModel *model = ema_step_model_new(llm, server, tp, &error);
  g_assert_no_error(error);
  g_assert_nonnull(model);
  return model;
}

/* Bind TEXT (a model file's contents, named "bad.yaml") and expect an
 * error with exactly MESSAGE. */
static void bind_fails(const char *text, int code, const char *message) {
  GError *error = NULL;
  g_autoptr(EmaNode) root = ema_node_load_string(text, "bad.yaml", NULL, &error);
  EmaLlmSpec spec = {0};
  g_assert_no_error(error);
  g_assert_false(ema_params_bind(&ema_llm_params, &spec, root, NULL, &error));
  g_assert_error(error, EMA_CONFIG_ERROR, code);
  g_assert_cmpstr(error->message, ==, message);
  g_error_free(error);
  ema_params_clear(&ema_llm_params, &spec);
}

/* A valid shape (Llama-3.1-8B) with one line replaced. */
static char *shape_with(const char *key, const char *line) {
  static const char *const lines[] = {
      "name: test",
      "layers: 32",
      "hidden: 4096",
      "ffn: 14336",
      "heads: 32",
      "kv_heads: 8",
      "head_dim: 128",
      "vocab: 128256",
      "dtype: bf16",
      "ffn_kind: gated",
      "experts: 1",
      "active_experts: 1",
      "tied_embeddings: false",
      "attention_bias: false",
      "max_context: 131072",
  };
  GString *text = g_string_new(NULL);
  for (guint i = 0; i < G_N_ELEMENTS(lines); i++) {
    gboolean replace = key && g_str_has_prefix(lines[i], key) && lines[i][strlen(key)] == ':';
    if (!replace)
      g_string_append_printf(text, "%s\n", lines[i]);
    else if (line)
      g_string_append_printf(text, "%s\n", line);
  }
  return g_string_free(text, FALSE);
}

static void assert_close(double got, double want, double rel) {
  if (fabs(got - want) > rel * fabs(want))
    g_error("got %.12g, want %.12g (relative tolerance %g)", got, want, rel);
}

/* ---- the model files ----------------------------------------------------- */

static void test_list(void) {
  g_autoptr(GPtrArray) names = ema_llm_list();
  g_assert_cmpuint(names->len, ==, G_N_ELEMENTS(models));
  for (guint i = 0; i < G_N_ELEMENTS(models); i++)
    g_assert_cmpstr(names->pdata[i], ==, models[i].name);
}

/* Each file loads by name; its name key is its file name; the derived total
 * equals the hand count exactly and lies within 2% of the published figure
 * (the largest gap, OPT-13B's nominal "13B", is -1.13%). */
static void test_load_all(void) {
  for (guint i = 0; i < G_N_ELEMENTS(models); i++) {
    g_autoptr(EmaLlmSpec) spec = load_model(models[i].name);
    EmaLlmDerived d;
    ema_llm_derive(spec, &d);
    g_assert_cmpstr(spec->name, ==, models[i].name);
    g_assert_cmpuint(d.total_parameters, ==, models[i].total_parameters);
    g_assert_cmpfloat(spec->reference_parameters, >, 0);
    assert_close((double) d.total_parameters, spec->reference_parameters, 0.02);
    g_assert_cmpuint(d.weight_bytes, ==, 2 * d.total_parameters); /* all are 2-byte types */
    g_assert_cmpuint(d.total_parameters, ==,
                     d.embedding_parameters + d.non_embedding_parameters + d.lm_head_parameters);
  }
}

/* ema_llm_load, and writing a shape back as YAML reads back the same. */
static void test_load_round_trip(void) {
  GError *error = NULL;
  g_autoptr(EmaLlmSpec) spec = ema_llm_load("qwen2.5-14b", &error);
  g_autoptr(GString) yaml = g_string_new(NULL);
  g_autoptr(EmaNode) root = NULL;
  EmaLlmSpec again = {0};
  g_assert_no_error(error);
  ema_params_write_yaml(&ema_llm_params, spec, yaml, 0);
  root = ema_node_load_string(yaml->str, "resolved.yaml", NULL, &error);
  g_assert_no_error(error);
  g_assert_true(ema_params_bind(&ema_llm_params, &again, root, NULL, &error));
  g_assert_no_error(error);
  g_assert_cmpstr(again.name, ==, "qwen2.5-14b");
  g_assert_cmpint(again.kv_heads, ==, 8);
  g_assert_cmpint(again.dtype, ==, EMA_DTYPE_BF16);
  g_assert_cmpint(again.ffn_kind, ==, EMA_FFN_GATED);
  g_assert_true(again.attention_bias);
  g_assert_cmpfloat(again.reference_parameters, ==, 14.7e9);
  ema_params_clear(&ema_llm_params, &again);
  g_assert_true(ema_params_check_defaults(&ema_llm_params, &error));
  g_assert_no_error(error);
}

/* Llama-3.1-8B, worked out in hwmodels/llms/llama-3.1-8b.yaml. */
static void test_derive_llama3_8b(void) {
  g_autoptr(EmaLlmSpec) spec = load_model("llama-3.1-8b");
  EmaLlmDerived d;
  ema_llm_derive(spec, &d);
  g_assert_cmpuint(d.bytes_per_element, ==, 2);
  /* q 16,777,216 + k,v 8,388,608 + o 16,777,216 + ffn 176,160,768 + norms 8,192 */
  g_assert_cmpuint(d.layer_parameters, ==, 218112000);
  g_assert_cmpuint(d.layer_active_parameters, ==, 218112000);
  g_assert_cmpuint(d.embedding_parameters, ==, 525336576); /* 128256 x 4096 */
  g_assert_cmpuint(d.lm_head_parameters, ==, 525336576);
  g_assert_cmpuint(d.non_embedding_parameters, ==, G_GUINT64_CONSTANT(6979588096));
  g_assert_cmpuint(d.active_non_embedding_parameters, ==, G_GUINT64_CONSTANT(6979588096));
  g_assert_cmpuint(d.active_parameters, ==, G_GUINT64_CONSTANT(8030261248));
  g_assert_cmpuint(d.weight_bytes, ==, 2 * G_GUINT64_CONSTANT(8030261248));
  /* 2 x 32 layers x 8 KV heads x 128 x 2 B */
  g_assert_cmpuint(d.kv_bytes_per_token, ==, 131072);
  g_assert_cmpuint(d.kv_bytes_per_token_per_layer, ==, 4096);
  g_assert_cmpuint(d.linear_flops_per_token, ==, 2 * G_GUINT64_CONSTANT(6979588096));
  g_assert_cmpuint(d.lm_head_flops_per_token, ==, 2 * 4096 * 128256);
  g_assert_cmpuint(d.attention_flops_per_token, ==, 4 * 32 * 32 * 128); /* 0.524 MFLOP */
}

static void test_derive_kv(void) {
  g_autoptr(EmaLlmSpec) llama2 = load_model("llama-2-7b");
  g_autoptr(EmaLlmSpec) mixtral = load_model("mixtral-8x7b");
  g_autoptr(EmaLlmSpec) opt = load_model("opt-30b");
  EmaLlmDerived d;
  ema_llm_derive(llama2, &d);
  g_assert_cmpuint(d.kv_bytes_per_token, ==, 524288); /* 2 x 32 x 32 x 128 x 2 (no GQA) */
  ema_llm_derive(mixtral, &d);
  g_assert_cmpuint(d.kv_bytes_per_token, ==, 131072); /* 2 x 32 x 8 x 128 x 2 */
  ema_llm_derive(opt, &d);
  g_assert_cmpuint(d.kv_bytes_per_token, ==, 1376256); /* 2 x 48 x 56 x 128 x 2 */
}

/* Mixtral: 8 experts, 2 active (hwmodels/llms/mixtral-8x7b.yaml). */
static void test_derive_moe(void) {
  g_autoptr(EmaLlmSpec) spec = load_model("mixtral-8x7b");
  EmaLlmDerived d;
  ema_llm_derive(spec, &d);
  g_assert_cmpuint(d.expert_parameters, ==, 176160768); /* 3 x 4096 x 14336 */
  /* q, k, v, o 41,943,040 + 8 experts 1,409,286,144 + router 32,768 + norms 8,192 */
  g_assert_cmpuint(d.layer_parameters, ==, 1451270144);
  g_assert_cmpuint(d.layer_active_parameters, ==, 1451270144 - 6 * 176160768);
  g_assert_cmpuint(d.active_non_embedding_parameters, ==, G_GUINT64_CONSTANT(12617781248));
  g_assert_cmpuint(d.active_parameters, ==, G_GUINT64_CONSTANT(12879925248)); /* card: 12.9B */
  g_assert_cmpuint(d.linear_flops_per_token, ==, 2 * G_GUINT64_CONSTANT(12617781248));
}

/* OPT: LayerNorm biases, every linear layer biased, the learned positional
 * table of 2048 + 2 rows, tied LM head (hwmodels/llms/opt-13b.yaml). */
static void test_derive_opt(void) {
  g_autoptr(EmaLlmSpec) spec = load_model("opt-13b");
  EmaLlmDerived d;
  ema_llm_derive(spec, &d);
  g_assert_cmpuint(d.layer_parameters, ==, 314639360);
  g_assert_cmpuint(d.embedding_parameters, ==, 257392640 + 10496000);
  g_assert_cmpuint(d.lm_head_parameters, ==, 0);
  g_assert_cmpuint(d.final_norm_parameters, ==, 10240);
  g_assert_cmpuint(d.non_embedding_parameters, ==, G_GUINT64_CONSTANT(12585584640));
}

/* ---- finding and errors ------------------------------------------------- */

static void test_find_unknown(void) {
  GError *error = NULL;
  g_assert_null(ema_llm_find("llama-9b", &error));
  g_assert_error(error, EMA_CONFIG_ERROR, EMA_CONFIG_ERROR_KEY);
  g_assert_cmpstr(error->message, ==, "unknown model 'llama-9b' (known: " KNOWN_MODELS ")");
  g_clear_error(&error);
  /* a path is not a name */
  g_assert_null(ema_llm_find("../llms/llama-3.1-8b", &error));
  g_assert_error(error, EMA_CONFIG_ERROR, EMA_CONFIG_ERROR_KEY);
  g_clear_error(&error);
  /* the shared search kept the hardware models' message */
  g_assert_null(ema_hwmodel_find("h300x2", &error));
  g_assert_true(g_str_has_prefix(error->message, "unknown hardware model 'h300x2' (known: "));
  g_assert_nonnull(strstr(error->message, "h200x2"));
  g_clear_error(&error);
}

/* `model: NAME` inside a larger file goes through ema_llm_resolve. */
typedef struct {
  EmaLlmSpec model;
} Holder;

static const EmaParam holder_params[] = {
    {"model", EMA_PARAM_STRUCT, G_STRUCT_OFFSET(Holder, model), .table = &ema_llm_params,
     .resolve = ema_llm_resolve, .flags = EMA_PARAM_REQUIRED, .help = "the LLM"},
};
static const EmaParamTable holder_table = {"tenant", sizeof(Holder), holder_params,
                                           EMA_PARAMS_N(holder_params), NULL};

static void test_resolve(void) {
  GError *error = NULL;
  g_autoptr(EmaNode) good =
      ema_node_load_string("model: mistral-7b-v0.1\n", "exp.yaml", NULL, &error);
  g_autoptr(EmaNode) bad = ema_node_load_string("x: 1\nmodel: gpt-5\n", "exp.yaml", NULL, &error);
  Holder holder = {0};
  g_assert_no_error(error);
  g_assert_true(ema_params_bind(&holder_table, &holder, good, NULL, &error));
  g_assert_no_error(error);
  g_assert_cmpstr(holder.model.name, ==, "mistral-7b-v0.1");
  g_assert_cmpint(holder.model.kv_heads, ==, 8);
  ema_params_clear(&holder_table, &holder);

  g_assert_null(ema_llm_resolve(ema_node_get(bad, "model"), NULL, &error));
  g_assert_error(error, EMA_CONFIG_ERROR, EMA_CONFIG_ERROR_KEY);
  g_assert_cmpstr(error->message, ==,
                  "exp.yaml:2:8: model: unknown model 'gpt-5' (known: " KNOWN_MODELS ")");
  g_clear_error(&error);
}

/* EMA_LLM_PATH is searched first; its models join the list. */
static void test_search_path(void) {
  GError *error = NULL;
  g_autofree char *dir = g_dir_make_tmp("ema-llm-XXXXXX", &error);
  g_autofree char *file = NULL;
  g_autofree char *shadow = NULL;
  g_autofree char *text = shape_with("name", "name: tiny");
  g_autoptr(GPtrArray) names = NULL;
  g_autofree char *found = NULL;
  g_assert_no_error(error);
  file = g_build_filename(dir, "tiny.yaml", NULL);
  shadow = g_build_filename(dir, "llama-3.1-8b.yaml", NULL);
  g_assert_true(g_file_set_contents(file, text, -1, &error));
  g_assert_true(g_file_set_contents(shadow, text, -1, &error));
  g_setenv("EMA_LLM_PATH", dir, TRUE);

  found = ema_llm_find("tiny", &error);
  g_assert_no_error(error);
  g_assert_cmpstr(found, ==, file);
  g_clear_pointer(&found, g_free);
  found = ema_llm_find("llama-3.1-8b", &error); /* the user's copy wins */
  g_assert_cmpstr(found, ==, shadow);
  names = ema_llm_list();
  g_assert_cmpuint(names->len, ==, G_N_ELEMENTS(models) + 1); /* no duplicate */
  g_assert_cmpstr(names->pdata[names->len - 1], ==, "tiny");

  g_unsetenv("EMA_LLM_PATH");
  g_remove(file);
  g_remove(shadow);
  g_rmdir(dir);
}

/* An entry of EMA_LLM_PATH that is not a regular file (a folder, a FIFO) is the model of its name
 * as the list says: loading it is the error that says what it is, never "unknown" while the list
 * names it, nor the built-in model of that name in its place. */
static void test_search_path_not_files(void) {
  GError *error = NULL;
  g_autofree char *dir = g_dir_make_tmp("ema-llm-XXXXXX", &error);
  g_autofree char *folder = g_build_filename(dir, "llama-3.1-8b.yaml", NULL);
  g_autofree char *fifo = g_build_filename(dir, "piped.yaml", NULL);
  const struct {
    const char *name, *path, *kind;
  } cases[] = {{"llama-3.1-8b", folder, "a directory"}, {"piped", fifo, "a FIFO"}};
  g_assert_no_error(error);
  g_assert_cmpint(g_mkdir(folder, 0755), ==, 0);
  g_assert_cmpint(mkfifo(fifo, 0600), ==, 0);
  g_setenv("EMA_LLM_PATH", dir, TRUE);
  for (guint i = 0; i < G_N_ELEMENTS(cases); i++) {
    g_autofree char *found = ema_llm_find(cases[i].name, &error);
    g_autofree char *want =
        g_strdup_printf("%s: not a regular file (%s)", cases[i].path, cases[i].kind);
    g_assert_no_error(error);
    g_assert_cmpstr(found, ==, cases[i].path);
    g_assert_null(ema_llm_load(cases[i].name, &error));
    g_assert_nonnull(error);
    g_assert_nonnull(strstr(error->message, want));
    g_clear_error(&error);
  }
  g_unsetenv("EMA_LLM_PATH");
  g_remove(fifo);
  g_rmdir(folder);
  g_rmdir(dir);
}

static void test_bad_shapes(void) {
  g_autofree char *kv = shape_with("kv_heads", "kv_heads: 5");
  g_autofree char *moe = shape_with("active_experts", "active_experts: 2");
  g_autofree char *dtype = shape_with("dtype", "dtype: int4");
  g_autofree char *missing = shape_with("vocab", NULL);
  g_autofree char *range = shape_with("layers", "layers: 0");
  g_autofree char *shared = shape_with("active_experts", "active_experts: 1\nshared_ffn: 1024");
  bind_fails(kv, EMA_CONFIG_ERROR_INVALID,
             "bad.yaml:6:11: kv_heads: kv_heads (5) must divide heads (32)");
  bind_fails(moe, EMA_CONFIG_ERROR_INVALID,
             "bad.yaml:12:17: active_experts: active_experts (2) cannot exceed experts (1)");
  bind_fails(dtype, EMA_CONFIG_ERROR_TYPE,
             "bad.yaml:9:8: dtype: unknown value 'int4' (choose from: bf16, fp16, fp32)");
  bind_fails(missing, EMA_CONFIG_ERROR_KEY,
             "bad.yaml:1:1: vocab: missing required key (an integer)");
  bind_fails(range, EMA_CONFIG_ERROR_RANGE, "bad.yaml:2:9: layers: 0 is out of range [1, 1024]");
  bind_fails(shared, EMA_CONFIG_ERROR_INVALID,
             "bad.yaml:13:13: shared_ffn: shared_ffn (1024) needs routed experts (experts > 1): a "
             "dense model's FFN is ffn");
}

/* ---- step time ---------------------------------------------------------- */

/* The H200 of hwmodels/servers/h200x2.yaml (gpus/h200-sxm.yaml): HBM
 * 4489 GB/s at hbm_efficiency 0.95 (4264.55 GB/s), KV at the same rate
 * (kv_efficiency 1); 989 TFLOP/s at 0.797 (788.233 TFLOP/s); roofline
 * p 1.25; layer_overhead 16.54 us; step_overhead 0; its profile left out
 * (load_roofline_server). */
#define H200_BW 4489e9
#define H200_FLOPS (989e12 * 0.797)

typedef struct {
  double rate_c, rate_m, rate_kv, p, layer_overhead_s;
} Rates;

static Rates server_rates(const EmaServerSpec *server) {
  Rates r = {server->gpu.matrix_flops * server->gpu.matrix_efficiency,
             server->gpu.hbm_bandwidth * server->gpu.hbm_efficiency,
             server->gpu.hbm_bandwidth * server->gpu.hbm_efficiency * server->gpu.kv_efficiency,
             server->gpu.roofline_p, (double) server->gpu.layer_overhead * 1e-9};
  return r;
}

/* One operator's roofline, (c^p + m^p)^(1/p) (steptime.h). */
static double op_s(const Rates *r, double flops, double bytes, double byte_rate) {
  double c = flops / r->rate_c, m = bytes / byte_rate;
  return pow(pow(c, r->p) + pow(m, r->p), 1 / r->p);
}

/* y[m, n] = x[m, k] W[k, n] in bf16: 2 m k n FLOPs, (k n + m (k + n)) x 2 bytes. */
static double gemm_s(const Rates *r, double m, double k, double n) {
  return m > 0 ? op_s(r, 2 * m * k * n, (k * n + m * (k + n)) * 2, r->rate_m) : 0;
}

/* An elementwise operator over T rows of WIDTH bf16 elements, read and written. */
static double elementwise_s(const Rates *r, double tokens, double width) {
  return op_s(r, 0, 2 * tokens * width * 2, r->rate_m);
}

/* The operators of a Llama-3.1-8B step at TP 1 or 2, by hand from its shape
 * (h 4096, 32 heads and 8 KV heads of 128, SwiGLU of 14336, vocab 128256,
 * bf16), per GPU: q = 32/tp, k = 8/tp heads, f = 14336/tp, V = 128256/tp.
 *   qkv 4096 -> (q + 2k) 128, o q 128 -> 4096, up 4096 -> 2f, down f -> 4096
 *   decode attention 4 q 128 C_d FLOPs, 2 k 128 x 2 x C_d KV bytes
 *   prefill attention 4 q 128 C_p FLOPs, 2 k 128 x 2 x kv_read KV bytes
 *   KV written 2 k 128 x 2 x T; 2 RMSNorms and 2 adds of 4096, silu_mul of
 *   2f, rope of (q + k) 128
 *   once: embedding and final norm (4096 each), LM head 4096 -> V at G rows
 * The step: 32 (layer + layer_overhead) + once (all-reduces apart). */
static double llama8b_step_s(const Rates *r, double tp, const EmaStepBatch *b) {
  double T = (double) (b->prefill_tokens + b->decode_seqs), q = 32 / tp, k = 8 / tp;
  double h = 4096, f = 14336 / tp, d = 128, V = 128256 / tp;
  double layer = gemm_s(r, T, h, (q + 2 * k) * d) + gemm_s(r, T, q * d, h) +
                 gemm_s(r, T, h, 2 * f) + gemm_s(r, T, f, h);
  if (b->decode_seqs > 0)
    layer += op_s(r, 4 * q * d * b->decode_context, 2 * k * d * 2 * b->decode_context, r->rate_kv);
  if (b->prefill_tokens > 0)
    layer +=
        op_s(r, 4 * q * d * b->prefill_context, 2 * k * d * 2 * b->prefill_kv_read, r->rate_kv);
  layer += op_s(r, 0, 2 * k * d * 2 * T, r->rate_m) + 4 * elementwise_s(r, T, h) +
           elementwise_s(r, T, 2 * f) + elementwise_s(r, T, (q + k) * d);
  return 32 * (layer + r->layer_overhead_s) + 2 * elementwise_s(r, T, h) +
         gemm_s(r, (double) b->logits, h, V);
}

/* THE hand-checkable step: one request decoding with a 1,000-token context
 * (incl. the new token), Llama-3.1-8B, one H200, tp = 1. Every operator is
 * memory bound; one layer's are (FLOPs, bytes):
 *   qkv (50,331,648, 50,352,128), o (33,554,432, 33,570,816),
 *   up (234,881,024, 234,946,560), down (117,440,512, 117,477,376),
 *   attention (16,384,000, 4,096,000 of KV), KV write (0, 4,096),
 *   norms and adds 4 x (0, 16,384), silu_mul (0, 114,688), rope (0, 20,480)
 *   -> 440,754,048 B over 4264.55 GB/s = 103.35 us, plus the compute side
 *   of each p-norm (+0.3%) and layer_overhead 16.54 us
 *   once: LM head (1,050,673,152, 1,050,937,856) and 2 x (0, 16,384)
 *   step: 4,086,556 ns (python with the same formula, by hand).
 * The analytic totals (bytes, FLOPs) are those of the roofline account:
 * 32 x 440,340,480 + 1,050,937,856 = 15,141,833,216 B. */
static void test_decode_hand(void) {
  g_autoptr(EmaLlmSpec) llm = load_model("llama-3.1-8b");
  g_autoptr(EmaServerSpec) server = load_roofline_server("h200x2");
  g_autoptr(EmaStepModel) model = step_model(llm, server, 1);
  EmaStepBatch batch = {.decode_seqs = 1, .decode_context = 1000, .logits = 1};
  EmaStepBreakdown b;
  Rates r = server_rates(server);
  EmaTime t = ema_step_time(model, &batch, &b);
  double layer = (llama8b_step_s(&r, 1, &batch) - 2 * elementwise_s(&r, 1, 4096) -
                  gemm_s(&r, 1, 4096, 128256)) /
                     32 -
                 r.layer_overhead_s;

  g_assert_cmpfloat(server->gpu.hbm_bandwidth, ==, H200_BW);
  g_assert_cmpfloat(server->gpu.hbm_efficiency, ==, 0.95);
  g_assert_cmpfloat(server->gpu.kv_efficiency, ==, 1.0);
  g_assert_cmpfloat(server->gpu.roofline_p, ==, 1.25);
  g_assert_cmpint(server->gpu.layer_overhead, ==, 16540);
  g_assert_cmpint(server->gpu.step_overhead, ==, 0);
  g_assert_cmpint(t, ==, b.time);
  g_assert_cmpint(t, ==, llround(llama8b_step_s(&r, 1, &batch) * 1e9));
  g_assert_cmpint(t, ==, 4086556);
  assert_close(layer, 103.35e-6, 0.004);
  g_assert_cmpint(b.layer_bound, ==, EMA_STEP_BOUND_MEMORY);
  g_assert_cmpint(b.lm_head_bound, ==, EMA_STEP_BOUND_MEMORY);
  /* the layer's sides scaled so that the memory side is the operator sum */
  assert_close(b.layer_memory_s, layer, 1e-12);
  assert_close(b.layers_s, 32 * (layer + r.layer_overhead_s), 1e-12);
  assert_close(b.lm_head_s, 2 * elementwise_s(&r, 1, 4096) + gemm_s(&r, 1, 4096, 128256), 1e-12);
  assert_close(b.bytes, 15141833216.0, 1e-12);
  assert_close(b.flops, 32 * 452608000.0 + 2.0 * 4096 * 128256, 1e-12);
  assert_close(b.kv_read_bytes, 32 * 4096 * 1000.0, 1e-12);
  g_assert_cmpfloat(b.allreduce_s, ==, 0);
  g_assert_cmpfloat(b.overhead_s, ==, 0);
  g_assert_cmpfloat(b.profiled_s, ==, 0);

  /* step_overhead and hbm_efficiency enter as the equations say */
  server->gpu.step_overhead = 50000;
  server->gpu.hbm_efficiency = 0.5;
  {
    g_autoptr(EmaStepModel) slower = step_model(llm, server, 1);
    Rates half = server_rates(server);
    g_assert_cmpint(ema_step_time(slower, &batch, NULL), ==,
                    llround(llama8b_step_s(&half, 1, &batch) * 1e9) + 50000);
  }
}

/* A 4,096-token prompt in one chunk, Llama-3.1-8B, one H200: its GEMMs and
 * attention compute bound (one layer: 1,924,246,011,904 FLOPs of the
 * roofline account, 2.441 ms at 788.233 TFLOP/s), each GEMM's memory side
 * adding through the p-norm; the LM head for the last token memory bound.
 * step: 88,676,040 ns (the same formula by hand). */
static void test_prefill_compute_bound(void) {
  g_autoptr(EmaLlmSpec) llm = load_model("llama-3.1-8b");
  g_autoptr(EmaServerSpec) server = load_roofline_server("h200x2");
  g_autoptr(EmaStepModel) model = step_model(llm, server, 1);
  EmaStepBatch batch = {.prefill_tokens = 4096,
                        .prefill_context = 4096.0 * 4097 / 2,
                        .prefill_kv_read = 4096,
                        .prefill_chunks = 1,
                        .logits = 1};
  EmaStepBreakdown b;
  Rates r = server_rates(server);
  EmaTime t = ema_step_time(model, &batch, &b);
  double layer_flops = 2.0 * 218112000 * 4096 + 4.0 * 32 * 128 * (4096.0 * 4097 / 2);

  g_assert_cmpfloat(layer_flops, ==, 1924246011904.0);
  g_assert_cmpint(b.layer_bound, ==, EMA_STEP_BOUND_COMPUTE);
  g_assert_cmpint(b.lm_head_bound, ==, EMA_STEP_BOUND_MEMORY);
  assert_close(b.compute_s, 32 * layer_flops / H200_FLOPS + 2.0 * 4096 * 128256 / H200_FLOPS,
               1e-12);
  g_assert_cmpint(t, ==, llround(llama8b_step_s(&r, 1, &batch) * 1e9));
  g_assert_cmpint(t, ==, 88676040);
  /* above the matrix work alone: the memory sides add through the p-norm */
  g_assert_cmpfloat((double) t * 1e-9, >, 32 * layer_flops / H200_FLOPS);
}

/* 32-bit weights (dtype fp32): no profile table holds kernels of that type, so on a GPU with a
 * profile (the H200's) every operator takes the roofline, its weights at 4 bytes a parameter:
 * the step of the same GPU without its profile, the sources saying so, and longer than the
 * 16-bit step (which reads half the bytes) by at least a third. */
static void test_fp32(void) {
  g_autoptr(EmaLlmSpec) llm = load_model("llama-3.1-8b");
  g_autoptr(EmaServerSpec) server = load_server("h200x2");
  g_autoptr(EmaServerSpec) bare = load_roofline_server("h200x2");
  EmaStepBatch batch = {.decode_seqs = 1, .decode_context = 1000, .logits = 1};
  g_autoptr(EmaStepModel) bf16 = step_model(llm, server, 1);
  g_autoptr(EmaStepModel) fp32 = NULL;
  g_autoptr(EmaStepModel) fp32_bare = NULL;
  EmaStepSources sources;
  llm->dtype = EMA_DTYPE_FP32;
  fp32 = step_model(llm, server, 1);
  fp32_bare = step_model(llm, bare, 1);
  g_assert_true(ema_step_model_profiled(bf16));
  g_assert_false(ema_step_model_profiled(fp32));
  g_assert_cmpint(ema_step_time(fp32, &batch, NULL), ==, ema_step_time(fp32_bare, &batch, NULL));
  g_assert_cmpint(3 * ema_step_time(fp32, &batch, NULL), >, 4 * ema_step_time(bf16, &batch, NULL));
  ema_step_model_sources(fp32, &sources);
  g_assert_cmpstr(sources.gemm, ==, "roofline");
  g_assert_cmpstr(sources.attn_decode, ==, "roofline");
}

/* FP8 (llm.h): Llama-3.1-8B with FP8 layer weights keeps its embedding and
 * LM head in bf16: 32 x 218,112,000 x 1 B + (8,030,261,248 - 6,979,584,000)
 * x 2 B = 9,080,938,496 B; an FP8 KV cache holds 2 x 32 x 8 x 128 x 1 B =
 * 65,536 B per token. The 4096-token prefill above is compute-bound in its
 * GEMMs: with FP8 weights they run by their roofline at the FP8 rate (1979
 * of 989 TFLOP/s on the H200), reading 1-byte weights; an A100, without an FP8
 * rate, runs them weight-only (vLLM's FP8 Marlin: 1-byte weights, 16-bit math). */
static void test_fp8(void) {
  g_autoptr(EmaLlmSpec) llm = load_model("llama-3.1-8b");
  g_autoptr(EmaServerSpec) server = load_server("h200x2");
  g_autoptr(EmaServerSpec) a100 = load_server("a100x4-40gb");
  g_autoptr(EmaStepModel) bf16 = step_model(llm, server, 1);
  g_autoptr(EmaStepModel) fp8 = NULL;
  EmaStepBatch batch = {.prefill_tokens = 4096,
                        .prefill_context = 4096.0 * 4097 / 2,
                        .prefill_kv_read = 4096,
                        .logits = 1};
  EmaStepBreakdown b16, b8;
  EmaTime t16, t8;
  EmaLlmDerived d;

  llm->weights = EMA_PRECISION_FP8;
  ema_llm_derive(llm, &d);
  g_assert_cmpuint(d.layer_bytes_per_element, ==, 1);
  g_assert_cmpuint(d.kv_bytes_per_element, ==, 2);
  g_assert_cmpuint(d.weight_bytes, ==, G_GUINT64_CONSTANT(9080938496));
  g_assert_cmpuint(d.kv_bytes_per_token, ==, 131072);
  fp8 = step_model(llm, server, 1);
  g_assert_cmpuint(ema_step_model_weight_bytes_per_gpu(fp8), ==, G_GUINT64_CONSTANT(9080938496));
  t16 = ema_step_time(bf16, &batch, &b16);
  t8 = ema_step_time(fp8, &batch, &b8);
  /* the same FLOPs; each of the 32 layers reads 218,112,000 B of weights instead of 436,224,000 */
  g_assert_cmpfloat(b8.flops, ==, b16.flops);
  assert_close(b16.weight_bytes_read - b8.weight_bytes_read, 32 * 218112000.0, 1e-12);
  /* the compute-bound prefill's GEMMs at the FP8 rate, twice the bf16 one: well under the bf16
   * step (its attention and the LM head stay) */
  g_assert_cmpint(t8, <, t16 * 3 / 4);
  g_assert_cmpint(t8, >, t16 / 3);
  {
    /* no FP8 tensor cores: weight-only FP8 (FP8 Marlin), the 16-bit rate on 1-byte weights: a
     * decode step reads half the layers' weights, a prefill keeps its 16-bit compute time */
    EmaStepBatch decode = {.decode_seqs = 1, .decode_context = 512, .logits = 1};
    EmaStepBreakdown d16, d8, p16, p8;
    g_autoptr(EmaStepModel) a16 = NULL, a8 = step_model(llm, a100, 1);
    llm->weights = EMA_PRECISION_AUTO;
    a16 = step_model(llm, a100, 1);
    llm->weights = EMA_PRECISION_FP8;
    ema_step_time(a16, &decode, &d16);
    ema_step_time(a8, &decode, &d8);
    assert_close(d16.weight_bytes_read - d8.weight_bytes_read, 32 * 218112000.0, 1e-12);
    g_assert_cmpint(d8.time, <, d16.time * 3 / 4);
    ema_step_time(a16, &batch, &p16);
    ema_step_time(a8, &batch, &p8);
    g_assert_cmpint(p8.time, >, p16.time * 9 / 10);
    g_assert_cmpint(p8.time, <=, p16.time);
  }

  llm->weights = EMA_PRECISION_AUTO;
  llm->kv_cache = EMA_PRECISION_FP8;
  ema_llm_derive(llm, &d);
  g_assert_cmpuint(d.weight_bytes, ==, 2 * G_GUINT64_CONSTANT(8030261248));
  g_assert_cmpuint(d.kv_bytes_per_token, ==, 65536);
  g_assert_cmpuint(d.kv_bytes_per_token_per_layer, ==, 2048);
  g_clear_pointer(&fp8, ema_step_model_free);
  fp8 = step_model(llm, a100, 1); /* an FP8 KV cache needs no FP8 matrix rate */
  assert_close(ema_step_model_kv_bytes_per_token_per_gpu(fp8), 65536, 0);
}

/* tp = 2 on the two H200s: each GPU holds half the weights, 4 of the 8 KV
 * heads, and pays 2 all-reduces per layer over NVLink (397 GB/s, 1002 ns),
 * no profile: the all-reduce model's custom all-reduce in a CUDA graph
 * (steptime.h; 4.72 us, 0.16 link latencies a further rank, 57% of the
 * link's bandwidth). The 1,000-token decode step:
 *   all-reduce of 1 token x 4096 x 2 B = 8192 B:
 *     4.72 us + 0.16 x 1002 ns + 2 (2-1)/2 x 8192 / (0.57 x 397e9)
 *     = 4720 + 160.32 + 36.2 ns = 4916.52 ns
 *     x 2 x 32 layers = 314.657 us
 *   the operators as llama8b_step_s at tp 2 (qkv 4096 -> 3072, o 2048 ->
 *   4096, up 4096 -> 14336, down 7168 -> 4096, LM head 4096 -> 64128)
 *   step: 2,622,949 ns */
static void test_tp2(void) {
  g_autoptr(EmaLlmSpec) llm = load_model("llama-3.1-8b");
  g_autoptr(EmaServerSpec) server = load_roofline_server("h200x2");
  g_autoptr(EmaStepModel) one = step_model(llm, server, 1);
  g_autoptr(EmaStepModel) two = step_model(llm, server, 2);
  EmaStepBatch batch = {.decode_seqs = 1, .decode_context = 1000, .logits = 1};
  EmaStepBreakdown b;
  Rates r = server_rates(server);
  EmaTime t = ema_step_time(two, &batch, &b);
  double allreduce =
      2 * 32 * (4.71e-6 + 0.16 * (2 - 1) * 1002e-9 + 2.0 * (2 - 1) / 2 * 8192 / (0.56 * 397e9));

  g_assert_cmpuint(ema_step_model_tp(two), ==, 2);
  g_assert_cmpuint(ema_step_model_weight_bytes_per_gpu(one), ==,
                   2 * G_GUINT64_CONSTANT(8030261248));
  g_assert_cmpuint(ema_step_model_weight_bytes_per_gpu(two), ==, G_GUINT64_CONSTANT(8030261248));
  g_assert_cmpfloat(ema_step_model_kv_bytes_per_token_per_gpu(one), ==, 131072);
  g_assert_cmpfloat(ema_step_model_kv_bytes_per_token_per_gpu(two), ==, 65536);
  assert_close(b.allreduce_s, allreduce, 1e-12);
  assert_close(b.allreduce_s, 314.059e-6, 1e-5);
  g_assert_cmpint(t, ==, llround((llama8b_step_s(&r, 2, &batch) + allreduce) * 1e9));
  g_assert_cmpint(t, ==, 2622350);
  g_assert_cmpint(t, <, ema_step_time(one, &batch, NULL));
}

/* tp = 8 on the eight H200s (397 GB/s switch ports, 1002 ns), no profile: a
 * decode step's 64 all-reduces of 8192 B take the all-reduce model's custom
 * all-reduce in a CUDA graph (4.71 us + 0.16 x 7 x 1002 ns + 2 x 7/8 x 8192 /
 * (0.56 x 397e9) = 5896.7 ns); with 4 GPUs to a host the group spans two, and
 * vLLM's custom all-reduce being one host's, NCCL's (6.91 us + 1.91 x 7 x
 * 1002 ns + 2 x 7/8 x 8192 / (0.73 x 397e9) = 20356.2 ns); a group of 4 stays
 * in its host. */
static void test_tp8_hosts(void) {
  g_autoptr(EmaLlmSpec) llm = load_model("llama-3.1-8b");
  g_autoptr(EmaServerSpec) server = load_roofline_server("h200x8-hgx");
  EmaStepBatch batch = {.decode_seqs = 1, .decode_context = 1000, .logits = 1};
  double custom = 4.71e-6 + 0.16 * 7 * 1002e-9 + 2.0 * 7 / 8 * 8192 / (0.56 * 397e9);
  double nccl = 6.91e-6 + 1.91 * 7 * 1002e-9 + 2.0 * 7 / 8 * 8192 / (0.73 * 397e9);
  double custom4 = 4.71e-6 + 0.16 * 3 * 1002e-9 + 2.0 * 3 / 4 * 8192 / (0.56 * 397e9);
  EmaStepBreakdown one_host, two_hosts, within;
  g_assert_cmpint(server->gpus_per_node, ==, 0);
  {
    g_autoptr(EmaStepModel) step = step_model(llm, server, 8);
    ema_step_time(step, &batch, &one_host);
  }
  server->gpus_per_node = 4;
  {
    g_autoptr(EmaStepModel) step = step_model(llm, server, 8);
    g_autoptr(EmaStepModel) four = step_model(llm, server, 4);
    ema_step_time(step, &batch, &two_hosts);
    ema_step_time(four, &batch, &within);
  }
  assert_close(custom, 5896.7e-9, 1e-4);
  assert_close(nccl, 20356.2e-9, 1e-4);
  assert_close(one_host.allreduce_s, 64 * custom, 1e-12);
  assert_close(two_hosts.allreduce_s, 64 * nccl, 1e-12);
  assert_close(within.allreduce_s, 64 * custom4, 1e-12);
}

static void step_model_fails(const EmaLlmSpec *llm, const EmaServerSpec *server, guint tp,
                             const char *message) {
  GError *error = NULL;
  g_assert_null(ema_step_model_new(llm, server, tp, &error));
  g_assert_error(error, EMA_CONFIG_ERROR, EMA_CONFIG_ERROR_INVALID);
  g_assert_cmpstr(error->message, ==, message);
  g_error_free(error);
}

static void test_tp_invalid(void) {
  g_autoptr(EmaLlmSpec) llm = load_model("llama-3.1-8b");
  g_autoptr(EmaServerSpec) h200x2 = load_roofline_server("h200x2");
  g_autoptr(EmaServerSpec) h200x8 = load_roofline_server("h200x8-hgx");
  step_model_fails(llm, h200x2, 3, "tensor-parallel size 3 must divide the server's 2 GPUs");
  step_model_fails(llm, h200x2, 4, "tensor-parallel size 4 must divide the server's 2 GPUs");
  step_model_fails(llm, h200x2, 0, "tensor-parallel size 0 must divide the server's 2 GPUs");
  /* a hypothetical shape of 20 heads (4 KV heads) cannot split 8 ways */
  llm->heads = 20;
  llm->kv_heads = 4;
  step_model_fails(llm, h200x8, 8, "tensor-parallel size 8 must divide llama-3.1-8b's 20 heads");
  /* 24 heads split 2 ways, but 3 KV heads neither split 2 ways nor divide 2 */
  llm->heads = 24;
  llm->kv_heads = 3;
  step_model_fails(llm, h200x8, 2,
                   "tensor-parallel size 2 must divide llama-3.1-8b's 3 KV heads or be a "
                   "multiple of them");
  /* an FFN width of 129 columns (or a shared expert's) does not split 2 ways: the layers were
   * timed at 64 columns a rank */
  llm->heads = 32;
  llm->kv_heads = 8;
  llm->ffn = 129;
  step_model_fails(llm, h200x8, 2,
                   "tensor-parallel size 2 must divide llama-3.1-8b's FFN width 129 (each rank "
                   "holds an equal share of it)");
  llm->ffn = 14336;
  llm->shared_ffn = 8193;
  step_model_fails(llm, h200x8, 2,
                   "tensor-parallel size 2 must divide llama-3.1-8b's FFN width 8193 (each rank "
                   "holds an equal share of it)");
}

/* KV heads fewer than tp are replicated: Llama-3.1-70B (8 KV heads) at tp 8
 * keeps 1 head per GPU; a 2-KV-head variant at tp 8 still keeps 1. */
static void test_tp8_kv_replication(void) {
  g_autoptr(EmaLlmSpec) llm = load_model("llama-3.1-70b");
  g_autoptr(EmaServerSpec) server = load_roofline_server("h200x8-hgx");
  g_autoptr(EmaStepModel) tp8 = step_model(llm, server, 8);
  EmaLlmDerived d;
  ema_llm_derive(llm, &d);
  g_assert_cmpuint(ema_step_model_weight_bytes_per_gpu(tp8), ==, d.weight_bytes / 8);
  g_assert_cmpfloat(ema_step_model_kv_bytes_per_token_per_gpu(tp8), ==, 2 * 80 * 1 * 128 * 2);
  llm->kv_heads = 2;
  {
    g_autoptr(EmaStepModel) replicated = step_model(llm, server, 8);
    g_assert_cmpfloat(ema_step_model_kv_bytes_per_token_per_gpu(replicated), ==,
                      2 * 80 * 1 * 128 * 2);
  }
}

/* More context or more sequences never shorten a step, and over the range
 * lengthen it (memory bound: KV adds bytes). Profiled operators are flat
 * below their grid's smallest point (a kernel over 1 or 2 tokens of context
 * costs the same), so only "never shorter" holds step by step. */
static void test_monotonic(void) {
  const char *const names[] = {"llama-3.1-8b", "mixtral-8x7b", "qwen2.5-14b", "opt-13b"};
  g_autoptr(EmaServerSpec) server = load_roofline_server("h200x2");
  for (guint n = 0; n < G_N_ELEMENTS(names); n++) {
    g_autoptr(EmaLlmSpec) llm = load_model(names[n]);
    g_autoptr(EmaStepModel) model = step_model(llm, server, 1);
    EmaTime last = 0, first = 0;
    for (guint64 context = 1; context <= 32768; context *= 2) {
      EmaStepBatch batch = {.decode_seqs = 1, .decode_context = (double) context, .logits = 1};
      EmaTime t = ema_step_time(model, &batch, NULL);
      g_assert_cmpint(t, >=, last);
      if (context == 1)
        first = t;
      last = t;
    }
    g_assert_cmpint(last, >, first);
    last = 0;
    for (guint64 seqs = 1; seqs <= 1024; seqs++) {
      EmaStepBatch batch = {
          .decode_seqs = seqs, .decode_context = 500.0 * (double) seqs, .logits = seqs};
      EmaTime t = ema_step_time(model, &batch, NULL);
      g_assert_cmpint(t, >, last);
      last = t;
    }
    /* adding a prefill chunk to a decode batch costs more than either */
    {
      EmaStepBatch decode = {.decode_seqs = 64, .decode_context = 64 * 2000.0, .logits = 64};
      EmaStepBatch mixed = decode;
      mixed.prefill_tokens = 512;
      mixed.prefill_context = 512.0 * 513 / 2;
      mixed.prefill_kv_read = 512;
      g_assert_cmpint(ema_step_time(model, &mixed, NULL), >, ema_step_time(model, &decode, NULL));
    }
  }
}

/* Mixtral: one token reads its 2 experts of 8; many tokens read them all.
 *   one token: (41,943,040 attention + 32,768 router + 8,192 norms
 *     + 2 x 176,160,768) x 2 B = 788,611,072 B of weights per layer
 *   256 tokens: 8 (1 - 0.75^256) = 8 experts (to 1e-30) */
static void test_moe_experts(void) {
  g_autoptr(EmaLlmSpec) llm = load_model("mixtral-8x7b");
  g_autoptr(EmaServerSpec) server = load_roofline_server("h200x2");
  g_autoptr(EmaStepModel) model = step_model(llm, server, 1);
  EmaStepBatch one = {.decode_seqs = 1, .decode_context = 100, .logits = 1};
  EmaStepBatch many = {.decode_seqs = 256, .decode_context = 256 * 100.0, .logits = 256};
  EmaStepBreakdown b;
  double head = (4096.0 * 32000 + 4096) * 2;
  ema_step_time(model, &one, &b);
  assert_close(b.weight_bytes_read, 32 * 788611072.0 + head, 1e-12);
  ema_step_time(model, &many, &b);
  assert_close(b.weight_bytes_read, 32 * (41984000.0 + 8 * 176160768.0) * 2 + head, 1e-12);
}

/* Shared experts (llm.h shared_ffn) on the roofline H200: Mixtral's shape with a SwiGLU of
 * 1024 beside its routed experts. Each layer gains 3 x 4096 x 1024 = 12,582,912 parameters,
 * which every token uses; a step gains, per layer, the shared up GEMM (4096 -> 2 x 1024), its
 * down GEMM (1024 -> 4096) and their silu_mul over 2048, at TP 2 each rank half the width;
 * Llama-4-Scout's figures as worked out in its file. */
static void test_moe_shared(void) {
  g_autoptr(EmaLlmSpec) base = load_model("mixtral-8x7b");
  g_autoptr(EmaLlmSpec) shared = load_model("mixtral-8x7b");
  g_autoptr(EmaLlmSpec) scout = load_model("llama-4-scout-17b-16e");
  g_autoptr(EmaServerSpec) server = load_roofline_server("h200x2");
  EmaStepBatch one = {.decode_seqs = 1, .decode_context = 100, .logits = 1};
  EmaStepBatch many = {.decode_seqs = 64, .decode_context = 64 * 100.0, .logits = 64};
  Rates r = server_rates(server);
  EmaLlmDerived d0, d1, ds;
  shared->shared_ffn = 1024;
  ema_llm_derive(base, &d0);
  ema_llm_derive(shared, &d1);
  g_assert_cmpuint(d0.shared_expert_parameters, ==, 0);
  g_assert_cmpuint(d1.shared_expert_parameters, ==, 12582912);
  g_assert_cmpuint(d1.layer_parameters - d0.layer_parameters, ==, 12582912);
  g_assert_cmpuint(d1.layer_active_parameters - d0.layer_active_parameters, ==, 12582912);
  g_assert_cmpuint(d1.total_parameters - d0.total_parameters, ==, 32 * 12582912);
  g_assert_cmpuint(d1.active_parameters - d0.active_parameters, ==, 32 * 12582912);
  for (guint tp = 1; tp <= 2; tp++) {
    g_autoptr(EmaStepModel) m0 = step_model(base, server, tp);
    g_autoptr(EmaStepModel) m1 = step_model(shared, server, tp);
    EmaStepBreakdown b0, b1;
    double w = 1024.0 / tp;
    for (guint i = 0; i < 2; i++) {
      const EmaStepBatch *batch = i ? &many : &one;
      double t = (double) batch->decode_seqs;
      double layer =
          gemm_s(&r, t, 4096, 2 * w) + gemm_s(&r, t, w, 4096) + elementwise_s(&r, t, 2 * w);
      EmaTime t0 = ema_step_time(m0, batch, &b0), t1 = ema_step_time(m1, batch, &b1);
      /* each step rounded to the nanosecond */
      g_assert_cmpfloat(fabs((double) (t1 - t0) - 32 * layer * 1e9), <=, 1.0);
      assert_close(b1.weight_bytes_read - b0.weight_bytes_read, 32 * 12582912.0 * 2 / tp, 1e-9);
    }
  }
  ema_llm_derive(scout, &ds);
  g_assert_cmpuint(ds.shared_expert_parameters, ==, 125829120);
  g_assert_cmpuint(ds.layer_parameters, ==, G_GUINT64_CONSTANT(2202101760));
  g_assert_cmpuint(ds.active_non_embedding_parameters, ==, G_GUINT64_CONSTANT(15103923200));
  g_assert_cmpuint(ds.active_parameters, ==, G_GUINT64_CONSTANT(17172894720)); /* card: 17B */
  g_assert_cmpuint(ds.kv_bytes_per_token, ==, 196608);
}

static void test_empty(void) {
  g_autoptr(EmaLlmSpec) llm = load_model("llama-3.1-8b");
  g_autoptr(EmaServerSpec) server = load_roofline_server("h200x2");
  g_autoptr(EmaStepModel) model = step_model(llm, server, 1);
  EmaStepBatch batch = {0};
  EmaStepBreakdown b;
  g_assert_cmpint(ema_step_time(model, &batch, &b), ==, 0);
  g_assert_cmpint(b.time, ==, 0);
  g_assert_cmpfloat(b.bytes, ==, 0);
  /* a prefill chunk that does not end its prompt computes no logits: the
   * once-per-step time is the embedding and the final norm, 2 x 256 rows
   * of 4096 read and written, memory bound */
  batch.prefill_tokens = 256;
  batch.prefill_context = 256.0 * 257 / 2;
  batch.prefill_kv_read = 256;
  g_assert_cmpint(ema_step_time(model, &batch, &b), >, 0);
  g_assert_cmpint(b.lm_head_bound, ==, EMA_STEP_BOUND_NONE);
  assert_close(
      b.lm_head_s,
      2 * (2 * 256 * 4096 * 2.0) / (server->gpu.hbm_bandwidth * server->gpu.hbm_efficiency), 1e-12);
}

int main(int argc, char **argv) {
  g_test_init(&argc, &argv, NULL);
  g_unsetenv("EMA_LLM_PATH");
  g_unsetenv("EMA_HWMODEL_PATH");
  g_test_add_func("/llm/list", test_list);
  g_test_add_func("/llm/load-all", test_load_all);
  g_test_add_func("/llm/load/round-trip", test_load_round_trip);
  g_test_add_func("/llm/derive/llama-3.1-8b", test_derive_llama3_8b);
  g_test_add_func("/llm/derive/kv-bytes", test_derive_kv);
  g_test_add_func("/llm/derive/moe", test_derive_moe);
  g_test_add_func("/llm/derive/opt", test_derive_opt);
  g_test_add_func("/llm/find/unknown", test_find_unknown);
  g_test_add_func("/llm/find/resolve", test_resolve);
  g_test_add_func("/llm/find/search-path", test_search_path);
  g_test_add_func("/llm/find/search-path-not-files", test_search_path_not_files);
  g_test_add_func("/llm/errors/bad-shapes", test_bad_shapes);
  g_test_add_func("/steptime/decode/hand-checked", test_decode_hand);
  g_test_add_func("/steptime/prefill/compute-bound", test_prefill_compute_bound);
  g_test_add_func("/steptime/tp/two", test_tp2);
  g_test_add_func("/steptime/tp/hosts", test_tp8_hosts);
  g_test_add_func("/steptime/tp/invalid", test_tp_invalid);
  g_test_add_func("/steptime/tp/kv-replication", test_tp8_kv_replication);
  g_test_add_func("/steptime/monotonic", test_monotonic);
  g_test_add_func("/steptime/moe/experts", test_moe_experts);
  g_test_add_func("/steptime/moe/shared-experts", test_moe_shared);
  g_test_add_func("/steptime/empty", test_empty);
  g_test_add_func("/steptime/fp8", test_fp8);
  g_test_add_func("/steptime/fp32", test_fp32);
  return g_test_run();
}
