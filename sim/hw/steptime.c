/* steptime.c: the iteration-time model of one engine step (equations and
 * choices in steptime.h).
 *
 * ema_step_model_new() folds the model shape, the GPU and the TP split into
 * per-GPU constants once and resolves every operator's profile surfaces
 * (no key formatting or hashing per step); the operators that depend on the
 * token count alone are kept per token count in rows filled on first use
 * by the same functions that time a step past the rows (so a row's times
 * are exactly those the operators give), so that ema_step_time() is one
 * row read, the two attention interpolations and a handful of
 * multiply-adds: O(1) in the batch size and free of allocation.
 *
 * Invariants: a step model's tp divides the server's GPUs and the model's
 * heads, and divides kv_heads or is a multiple of it; its rates are
 * positive; a step's time is monotone non-decreasing in every field of the
 * batch (each term is a sum of non-negative coefficients times the batch's
 * sums, passed through max and a monotone expert count). */
#include "ema/hw/steptime.h"

#include <math.h>
#include <string.h>

#include "ema/hw/profile.h"

struct _EmaStepModel {
  guint tp;
  double layers;
  /* one layer on one GPU */
  double linear_flops_per_token;      /* 2 P_l / tp */
  double attention_flops_per_context; /* 4 H d / tp */
  double shared_weight_bytes;         /* layer weights other than the experts, / tp */
  double expert_weight_bytes;         /* one expert, / tp */
  double experts, active_fraction;    /* E, A / E */
  double kv_bytes_per_token;          /* kv_l */
  double activation_bytes_per_token;  /* 2 h b */
  double allreduce_bytes_per_token;   /* h b */
  /* the LM head on one GPU */
  double lm_head_flops_per_logit; /* 2 h V / tp */
  double lm_head_weight_bytes;    /* (h V / tp + final norm) b */
  double lm_head_bytes_per_logit; /* V b / tp */
  /* the GPU and its link */
  double flop_rate; /* rate_c */
  /* FP8 weights on a GPU without FP8 tensor cores: 16-bit GEMMs of 1-byte weights (gemm_time) */
  gboolean weight_only_fp8;
  double byte_rate; /* rate_m */
  double kv_rate;   /* rate_kv = rate_m x kv_efficiency */
  /* query-key pairs per second of the profile's prefill attention at its largest fresh prompt
   * (ema_profile_op_pair_rate; 0: none) */
  double prefill_pair_rate;
  double layer_overhead_s;
  /* the profile's launch gap per kernel of its measured tables (0: none, or kernel sums asked
   * for: ema_step_model_new_kernel_sums) */
  double graph_gap_s;
  /* a serving engine's steps (ema_step_model_new), not the measuring workload's kernel sums */
  gboolean engine_steps;
  /* its profile times prompts run together, one prompt among them (together()) */
  gboolean prompts_together;
  double roofline_p;      /* p of the per-operator roofline */
  double group_bandwidth; /* each rank's link bandwidth to the rest of its TP group */
  double link_latency_s;
  /* vLLM's custom all-reduce runs (not on more than two PCIe GPUs, nor past one host) */
  gboolean custom_allreduce;
  /* why the profile's all-reduce tables do not apply to the group ("": they do, or none) */
  char allreduce_note[128];
  EmaTime step_overhead;
  /* figures for the engine */
  guint64 weight_bytes_per_gpu;
  double kv_bytes_per_token_per_gpu;
  /* the profile path (NULL: the roofline above); shapes on one GPU */
  const EmaProfile *profile;
  EmaProfileDtype dtype;
  double bytes_per_element;
  /* FP8 (llm.h): 1-byte GEMM weights (their kernels the profile's FP8 rows,
   * else the FP8 roofline), 1-byte KV (its attention the FP8-KV rows) */
  double weight_bytes_per_element;
  EmaProfileDtype weight_dtype, kv_dtype;
  guint q_heads, kv_heads, head_dim;
  guint64 hidden, qkv_n, o_k, up_n, down_k, head_n, act_width, rope_width;
  /* an MoE's shared experts (llm.h shared_ffn), a dense FFN beside the routed ones: its GEMMs'
   * widths on one GPU, 0 without them */
  guint64 shared_up_n, shared_down_k;
  gboolean gated, moe;
  /* 32-bit weights: no profile table holds kernels of that type, every operator on the
   * roofline (its bytes at 4 a parameter) */
  gboolean fp32;
  /* GEMMs with a bias (llm.h): q/k/v with attention_bias; o and the FFN's too in a plain MLP */
  gboolean qkv_bias, dense_bias;
  guint experts_n, active_n; /* E, A */
  /* the MoE experts from the profile's fused-kernel table: it has one and no per-projection
   * table (a measured one) comes first */
  gboolean moe_fused;
  /* the fused kernel's table lacks this shape: moe_fused is the nearest shape it holds,
   * MOE_FROM, whose times moe_fused_time carries to this one */
  gboolean moe_carried;
  EmaProfileMoeShape moe_from;
  double router_fraction;     /* A / E */
  double lm_head_extra_bytes; /* final norm */
  /* the operators' profile surfaces, resolved once (set_profile_ops) */
  struct {
    EmaProfileOp qkv, o, up, down, lm_head, moe[2], moe_fused, attn_decode, attn_prefill;
    /* prefill attention of a step's prompts run together (engine steps only) */
    EmaProfileOp attn_prefill_prompts;
    EmaProfileOp shared_up, shared_down, shared_act;
    EmaProfileOp norm, act, add, rope, embedding, router, moe_route, kv_write;
    EmaProfileOp allreduce[EMA_PROFILE_N_ALLREDUCE]; /* by implementation (profile.h) */
  } ops;
  /* the operators that depend on a step's token count alone, by tokens
   * 0..TOKEN_ROWS-1, each row filled by fill_row() on first use (the
   * model's one mutable part, with the cursors; a step model serves one
   * thread) */
  struct _TokenRow *rows;
  /* bit x: rows[x] is filled (the rows themselves are left unwritten until then: a step
   * model costs no more to make than the rows it uses) */
  guint64 *filled;
  /* where the attention lookups of the last step landed (profile.h) */
  struct {
    EmaProfileCursor attn_decode, attn_prefill;
  } * cursors;
};

/* The operators timed at the step's T tokens (or, for the LM head, at the
 * row's index as its logits), each the time op_time() gives. */
enum {
  ROW_QKV,
  ROW_O,
  ROW_ROUTER,    /* an MoE's router GEMM (hidden -> experts) */
  ROW_MOE_ROUTE, /* an MoE's routing kernels (softmax, top-k, gathers, scatter-add) */
  ROW_UP,        /* the experts' first projection for an MoE */
  ROW_DOWN,
  ROW_SHARED_UP, /* an MoE's shared experts (none: 0) */
  ROW_SHARED_DOWN,
  ROW_KV_WRITE,
  ROW_NORM2, /* the layer's 2 norms */
  ROW_ACT,
  ROW_SHARED_ACT, /* the shared experts' silu_mul */
  ROW_ADD2,       /* the layer's 2 residual adds */
  ROW_ROPE,
  ROW_EMBEDDING,
  ROW_NORM1, /* the final norm */
  ROW_LM_HEAD,
  ROW_ALLREDUCE, /* one all-reduce: the profile's or the all-reduce model's */
  N_ROW
};

typedef struct _TokenRow {
  double t[N_ROW];
  /* the sums of the row's operators before the attention and after the KV write, in the
   * layer's order (layer_sum adds them around the attention) */
  double before_attention, after_kv_write;
  guint32 found; /* bit i: t[i] is the profile's */
} TokenRow;

/* Rows kept: tokens 0..8191 (vLLM's default max_num_batched_tokens is
 * 8192); a larger step is timed without the table, by the same code. */
#define TOKEN_ROWS 8192

/* The operators' shapes on one GPU, as the profile tables key them (the
 * Vidur import in profile.c forms the same shapes). */
static void set_operator_shapes(EmaStepModel *s, const EmaLlmSpec *model, guint tp) {
  s->dtype = model->dtype == EMA_DTYPE_FP16 ? EMA_PROFILE_FP16 : EMA_PROFILE_BF16;
  s->weight_dtype = model->weights == EMA_PRECISION_FP8         ? EMA_PROFILE_FP8
                    : model->weights == EMA_PRECISION_FP8_BLOCK ? EMA_PROFILE_FP8_BLOCK
                                                                : s->dtype;
  s->kv_dtype = model->kv_cache == EMA_PRECISION_FP8 ? EMA_PROFILE_FP8 : s->dtype;
  s->q_heads = (guint) (model->heads / tp);
  s->kv_heads = (guint) MAX(1, model->kv_heads / (gint64) tp);
  s->head_dim = (guint) model->head_dim;
  s->hidden = (guint64) model->hidden;
  s->gated = model->ffn_kind == EMA_FFN_GATED;
  s->qkv_bias = model->attention_bias;
  s->dense_bias = model->attention_bias && !s->gated;
  s->qkv_n = (guint64) (s->q_heads + 2 * s->kv_heads) * s->head_dim;
  s->o_k = (guint64) s->q_heads * s->head_dim;
  s->up_n = (guint64) ((s->gated ? 2 : 1) * model->ffn / (gint64) tp);
  s->down_k = (guint64) (model->ffn / (gint64) tp);
  s->head_n = (guint64) (model->vocab / (gint64) tp);
  s->act_width = s->gated ? 2 * s->down_k : s->down_k;
  s->rope_width = (guint64) (s->q_heads + s->kv_heads) * s->head_dim;
  s->moe = model->experts > 1;
  s->experts_n = (guint) model->experts;
  s->active_n = (guint) model->active_experts;
  s->router_fraction = (double) model->active_experts / (double) model->experts;
  s->shared_down_k = (guint64) (model->shared_ffn / (gint64) tp);
  s->shared_up_n = (s->gated ? 2 : 1) * s->shared_down_k;
}

/* Resolve every operator's shape in the profile once, so that a step does
 * no key formatting or hashing. */
static void set_profile_ops(EmaStepModel *s) {
  const EmaProfile *p = s->profile;
  EmaProfileDtype t = s->dtype, w = s->weight_dtype, kv = s->kv_dtype;
  /* the decoder layers' GEMMs in the weights' type; the LM head and the router stay in the
   * checkpoint's (llm.h) */
  ema_profile_op_gemm(p, w, s->qkv_bias, s->hidden, s->qkv_n, &s->ops.qkv);
  ema_profile_op_gemm(p, w, s->dense_bias, s->o_k, s->hidden, &s->ops.o);
  ema_profile_op_gemm(p, w, s->dense_bias, s->hidden, s->up_n, &s->ops.up);
  ema_profile_op_gemm(p, w, s->dense_bias, s->down_k, s->hidden, &s->ops.down);
  ema_profile_op_gemm(p, t, FALSE, s->hidden, s->head_n, &s->ops.lm_head);
  /* only the operators the model runs are looked up: a lookup may read a public data set
   * (profile.h), and an MoE's or a TP group's tables are large */
  if (s->moe) {
    ema_profile_op_moe(p, w, s->experts_n, s->hidden, s->up_n, &s->ops.moe[0]);
    ema_profile_op_moe(p, w, s->experts_n, s->down_k, s->hidden, &s->ops.moe[1]);
    ema_profile_op_moe_fused(p, w, s->hidden, s->down_k, s->active_n, s->experts_n,
                             &s->ops.moe_fused);
    /* the fused kernel where a data set has it, unless per-expert rows of higher precedence
     * do (the measuring workload's looped experts yield to an engine's fused kernel) */
    s->moe_fused = ema_profile_op_source(p, &s->ops.moe_fused) &&
                   (!ema_profile_op_source(p, &s->ops.moe[0]) ||
                    (s->ops.moe[0].workload && !s->ops.moe_fused.workload));
    /* a shape neither table has: the fused kernel at the nearest shape the table holds */
    if (!s->moe_fused && !ema_profile_op_source(p, &s->ops.moe[0]) && s->gated &&
        ema_profile_op_moe_fused_nearest(p, w, s->hidden, s->down_k, s->active_n, s->experts_n,
                                         &s->ops.moe_fused, &s->moe_from))
      s->moe_fused = s->moe_carried = TRUE;
    ema_profile_op_gemm(p, t, FALSE, s->hidden, s->experts_n, &s->ops.router);
    ema_profile_op_elementwise(p, t, "moe_route", s->hidden, &s->ops.moe_route);
    /* the measuring workload's routing (a gather and a scatter-add per expert hit) is that of
     * its looped experts; an engine's fused kernel routes inside: the roofline of the routing's
     * bytes, as where no table has it */
    if (s->moe_fused && s->ops.moe_route.workload)
      s->ops.moe_route = (EmaProfileOp){{NULL}, FALSE};
    if (s->shared_down_k > 0) { /* vLLM runs them as a dense MLP of their summed width */
      ema_profile_op_gemm(p, w, FALSE, s->hidden, s->shared_up_n, &s->ops.shared_up);
      ema_profile_op_gemm(p, w, FALSE, s->shared_down_k, s->hidden, &s->ops.shared_down);
      ema_profile_op_elementwise(p, t, s->gated ? "silu_mul" : "gelu", s->shared_up_n,
                                 &s->ops.shared_act);
    }
  }
  ema_profile_op_attn_decode(p, kv, s->q_heads, s->kv_heads, s->head_dim, &s->ops.attn_decode);
  ema_profile_op_attn_prefill(p, kv, s->q_heads, s->kv_heads, s->head_dim, &s->ops.attn_prefill);
  /* a serving engine runs a step's prompts in one kernel; the measuring workload's steps
   * (kernel sums) ran their own */
  if (s->engine_steps) {
    ema_profile_op_attn_prefill_prompts(p, kv, s->q_heads, s->kv_heads, s->head_dim,
                                        &s->ops.attn_prefill_prompts);
    s->prompts_together = ema_profile_op_has_outer(&s->ops.attn_prefill_prompts, 1);
  }
  s->prefill_pair_rate = ema_profile_op_pair_rate(&s->ops.attn_prefill, 0);
  ema_profile_op_elementwise(p, t, s->gated ? "rmsnorm" : "layernorm", s->hidden, &s->ops.norm);
  ema_profile_op_elementwise(p, t, s->gated ? "silu_mul" : "gelu", s->act_width, &s->ops.act);
  ema_profile_op_elementwise(p, t, "add", s->hidden, &s->ops.add);
  if (s->gated)
    ema_profile_op_elementwise(p, t, "rope", s->rope_width, &s->ops.rope);
  ema_profile_op_elementwise(p, t, "embedding", s->hidden, &s->ops.embedding);
  for (guint i = 0; i < EMA_PROFILE_N_ALLREDUCE && s->tp > 1 && !*s->allreduce_note; i++)
    ema_profile_op_allreduce(p, t, s->tp, (EmaProfileAllreduce) i, &s->ops.allreduce[i]);
  ema_profile_op_elementwise(p, t, "kv_write", (guint64) s->kv_heads * s->head_dim,
                             &s->ops.kv_write);
}

gboolean ema_step_model_check_tp(const EmaLlmSpec *model, const EmaServerSpec *server, guint tp,
                                 GError **error) {
  g_return_val_if_fail(model != NULL && server != NULL, FALSE);
  if (tp == 0 || server->gpus % tp != 0) {
    g_set_error(error, EMA_CONFIG_ERROR, EMA_CONFIG_ERROR_INVALID,
                "tensor-parallel size %u must divide the server's %" G_GINT64_FORMAT " GPUs", tp,
                server->gpus);
    return FALSE;
  }
  if (model->heads % tp != 0) {
    g_set_error(error, EMA_CONFIG_ERROR, EMA_CONFIG_ERROR_INVALID,
                "tensor-parallel size %u must divide %s's %" G_GINT64_FORMAT " heads", tp,
                model->name, model->heads);
    return FALSE;
  }
  if (model->kv_heads % tp != 0 && tp % model->kv_heads != 0) {
    g_set_error(error, EMA_CONFIG_ERROR, EMA_CONFIG_ERROR_INVALID,
                "tensor-parallel size %u must divide %s's %" G_GINT64_FORMAT
                " KV heads or be a multiple of them",
                tp, model->name, model->kv_heads);
    return FALSE;
  }
  /* vLLM's column- and row-parallel FFN layers give each rank ffn / tp columns exactly */
  if (model->ffn % tp != 0 || model->shared_ffn % tp != 0) {
    g_set_error(error, EMA_CONFIG_ERROR, EMA_CONFIG_ERROR_INVALID,
                "tensor-parallel size %u must divide %s's FFN width %" G_GINT64_FORMAT
                " (each rank holds an equal share of it)",
                tp, model->name, model->ffn % tp != 0 ? model->ffn : model->shared_ffn);
    return FALSE;
  }
  return TRUE;
}

/* The step model of ema_step_model_new (KERNEL_SUMS FALSE) or ema_step_model_new_kernel_sums. */
static EmaStepModel *step_model_new(const EmaLlmSpec *model, const EmaServerSpec *server, guint tp,
                                    gboolean kernel_sums, GError **error) {
  EmaLlmDerived derived;
  EmaStepModel *step;
  double b, bw, bkv, kv_heads_per_gpu;

  g_return_val_if_fail(model != NULL && server != NULL, NULL);
  if (!ema_step_model_check_tp(model, server, tp, error))
    return NULL;
  if (server->gpu.matrix_flops <= 0 || server->gpu.matrix_efficiency <= 0 ||
      server->gpu.hbm_bandwidth <= 0 || server->gpu.hbm_efficiency <= 0 ||
      server->gpu.kv_efficiency <= 0 || (tp > 1 && server->link.bandwidth <= 0)) {
    g_set_error(error, EMA_CONFIG_ERROR, EMA_CONFIG_ERROR_INVALID,
                "server %s: the step-time model needs positive matrix and HBM rates and "
                "efficiencies (and a link bandwidth for tensor parallelism)",
                server->name ? server->name : "?");
    return NULL;
  }

  /* without FP8 tensor cores vLLM runs FP8 checkpoints weight-only (FP8 Marlin, W8A16), dense
   * layers only: its fused MoE has no such kernel */
  if (EMA_PRECISION_IS_FP8(model->weights) && server->gpu.matrix_flops_fp8 <= 0 &&
      model->experts > 1) {
    g_set_error(error, EMA_CONFIG_ERROR, EMA_CONFIG_ERROR_INVALID,
                "%s: FP8 weights of an MoE model need a GPU with an FP8 matrix rate "
                "(gpu.matrix_flops_fp8): without one vLLM runs FP8 weight-only (FP8 Marlin) in "
                "dense layers, and its fused MoE has no such kernel",
                server->gpu.name ? server->gpu.name : "?");
    return NULL;
  }

  ema_llm_derive(model, &derived);
  b = derived.bytes_per_element;
  /* the FP8 hook (llm.h): layer weights and the KV cache may be 1 byte */
  bw = derived.layer_bytes_per_element;
  bkv = derived.kv_bytes_per_element;
  kv_heads_per_gpu = MAX(1.0, (double) model->kv_heads / tp);

  step = g_new0(EmaStepModel, 1);
  step->tp = tp;
  step->bytes_per_element = b;
  step->weight_bytes_per_element = bw;
  step->layers = (double) model->layers;
  step->linear_flops_per_token = 2.0 * (double) derived.layer_active_parameters / tp;
  step->attention_flops_per_context = 4.0 * (double) model->heads * (double) model->head_dim / tp;
  step->shared_weight_bytes =
      (double) (derived.layer_parameters - (guint64) model->experts * derived.expert_parameters) *
      bw / tp;
  step->expert_weight_bytes = (double) derived.expert_parameters * bw / tp;
  step->experts = (double) model->experts;
  step->active_fraction = (double) model->active_experts / (double) model->experts;
  step->kv_bytes_per_token = 2.0 * kv_heads_per_gpu * (double) model->head_dim * bkv;
  step->activation_bytes_per_token = 2.0 * (double) model->hidden * b;
  step->allreduce_bytes_per_token = (double) model->hidden * b;

  step->lm_head_flops_per_logit = (double) derived.lm_head_flops_per_token / tp;
  step->lm_head_weight_bytes = ((double) model->hidden * (double) model->vocab / tp +
                                (double) derived.final_norm_parameters) *
                               b;
  step->lm_head_bytes_per_logit = (double) model->vocab * b / tp;

  step->weight_only_fp8 = EMA_PRECISION_IS_FP8(model->weights) && server->gpu.matrix_flops_fp8 <= 0;
  step->flop_rate =
      (EMA_PRECISION_IS_FP8(model->weights) && !step->weight_only_fp8 ? server->gpu.matrix_flops_fp8
                                                                      : server->gpu.matrix_flops) *
      server->gpu.matrix_efficiency;
  step->byte_rate = server->gpu.hbm_bandwidth * server->gpu.hbm_efficiency;
  step->kv_rate = step->byte_rate * server->gpu.kv_efficiency;
  step->layer_overhead_s = (double) server->gpu.layer_overhead * 1e-9;
  step->roofline_p = server->gpu.roofline_p;
  /* on a direct topology each rank has a link of its own to each other rank, all of which an
   * all-reduce uses; through a switch or PCIe, one port */
  step->group_bandwidth = server->link.bandwidth *
                          (server->topology == EMA_TOPOLOGY_DIRECT ? (double) MAX(tp, 2) - 1 : 1);
  step->link_latency_s = (double) server->link.latency * 1e-9;
  step->custom_allreduce = (server->topology != EMA_TOPOLOGY_PCIE || tp <= 2) &&
                           (server->gpus_per_node == 0 || tp <= server->gpus_per_node);
  step->step_overhead = server->gpu.step_overhead;

  step->weight_bytes_per_gpu = (derived.weight_bytes + tp - 1) / tp;
  step->kv_bytes_per_token_per_gpu = step->layers * step->kv_bytes_per_token;

  step->fp32 = model->dtype == EMA_DTYPE_FP32;
  if (server->gpu.profile && *server->gpu.profile && !step->fp32) {
    step->profile = ema_profile_get_view(
        server->gpu.profile, kernel_sums ? EMA_PROFILE_WORKLOAD : EMA_PROFILE_ENGINE, error);
    if (!step->profile) {
      g_free(step);
      return NULL;
    }
  }
  set_operator_shapes(step, model, tp);
  if (step->weight_only_fp8)
    step->weight_dtype = step->dtype; /* the 16-bit GEMM tables, carried to 1-byte weights */
  if (step->profile && tp > 1) {
    /* all-reduce tables hold on the links they were measured on (5%: the servers' figures) */
    double measured = ema_profile_collective_bandwidth(step->profile);
    if (measured > 0 && fabs(step->group_bandwidth / measured - 1) > 0.05)
      g_snprintf(step->allreduce_note, sizeof step->allreduce_note,
                 " (the profile's tables are of %.4g GB/s links a GPU, this group's %.4g GB/s)",
                 measured / 1e9, step->group_bandwidth / 1e9);
  }
  if (step->profile) {
    step->graph_gap_s = kernel_sums ? 0 : (double) ema_profile_graph_gap(step->profile) * 1e-9;
    step->engine_steps = !kernel_sums;
    set_profile_ops(step);
    /* a public data set the lookups read that does not parse */
    if (!ema_profile_check(step->profile, error)) {
      g_free(step);
      return NULL;
    }
  }
  step->rows = g_new(TokenRow, TOKEN_ROWS);
  step->filled = g_new0(guint64, TOKEN_ROWS / 64);
  step->cursors = g_malloc0(sizeof *step->cursors);
  return step;
}

EmaStepModel *ema_step_model_new(const EmaLlmSpec *model, const EmaServerSpec *server, guint tp,
                                 GError **error) {
  return step_model_new(model, server, tp, FALSE, error);
}

EmaStepModel *ema_step_model_new_kernel_sums(const EmaLlmSpec *model, const EmaServerSpec *server,
                                             guint tp, GError **error) {
  return step_model_new(model, server, tp, TRUE, error);
}

void ema_step_model_free(EmaStepModel *step_model) {
  if (!step_model)
    return;
  g_free(step_model->rows);
  g_free(step_model->filled);
  g_free(step_model->cursors);
  g_free(step_model);
}

guint ema_step_model_layers(const EmaStepModel *step_model) {
  g_return_val_if_fail(step_model != NULL, 0);
  return (guint) step_model->layers;
}

gboolean ema_step_model_profiled(const EmaStepModel *step_model) {
  g_return_val_if_fail(step_model != NULL, FALSE);
  return step_model->profile != NULL;
}

guint ema_step_model_tp(const EmaStepModel *step_model) {
  g_return_val_if_fail(step_model != NULL, 0);
  return step_model->tp;
}

guint64 ema_step_model_weight_bytes_per_gpu(const EmaStepModel *step_model) {
  g_return_val_if_fail(step_model != NULL, 0);
  return step_model->weight_bytes_per_gpu;
}

double ema_step_model_kv_bytes_per_token_per_gpu(const EmaStepModel *step_model) {
  g_return_val_if_fail(step_model != NULL, 0);
  return step_model->kv_bytes_per_token_per_gpu;
}

static EmaStepBound bound_of(double compute_s, double memory_s) {
  return compute_s > memory_s ? EMA_STEP_BOUND_COMPUTE : EMA_STEP_BOUND_MEMORY;
}

/* ---- the profile path (equations in steptime.h) ------------------------- */

/* Running sums of a step's operator times by their origin. */
typedef struct {
  double profiled_s, roofline_s;
} OpSums;

/* Add T, the profile's if FOUND, to SUMS. */
static void op_sum(OpSums *sums, gboolean found, double t) {
  if (found)
    sums->profiled_s += t;
  else
    sums->roofline_s += t;
}

double ema_roofline_time(double compute_s, double memory_s, double p) {
  double big = MAX(compute_s, memory_s), small = MIN(compute_s, memory_s);
  if (big <= 0)
    return 0;
  if (small <= 0)
    return big; /* what the formula gives: big (1 + 0)^(1/p) */
  /* factored so that the powers stay within range: big (1 + (small/big)^p)^(1/p) */
  return big * pow(1.0 + pow(small / big, p), 1.0 / p);
}

/* The roofline of one operator of S's model. */
static double roofline(const EmaStepModel *s, double compute_s, double memory_s) {
  return ema_roofline_time(compute_s, memory_s, s->roofline_p);
}

/* The launch gaps of KERNELS kernels of OP where the profile timed it from tables that sum
 * kernel durations (its measured tables: profile.yaml's graph_gap), else 0. */
static double graph_gaps(const EmaStepModel *s, const EmaProfileOp *op, double kernels) {
  return s->graph_gap_s > 0 && op && ema_profile_op_measured(op) ? kernels * s->graph_gap_s : 0;
}

/* COUNT runs of one operator: the profile's time (FOUND, US microseconds)
 * with the launch gaps of its COUNT kernels in a graph (graph_gaps), or the
 * roofline of FLOPS at rate_c and BYTES at RATE. */
static double op_time(const EmaStepModel *s, OpSums *sums, const EmaProfileOp *op, gboolean found,
                      double us, double flops, double bytes, double rate, double count) {
  double t = found ? count * (us * 1e-6) + graph_gaps(s, op, count)
                   : count * roofline(s, flops / s->flop_rate, bytes / rate);
  op_sum(sums, found, t);
  return t;
}

/* OP at (OUTER, X) where the step model has a profile (profile.h). */
static gboolean profiled(const EmaStepModel *s, const EmaProfileOp *op, double outer, double x,
                         double *us) {
  return s->profile && ema_profile_op_at(op, outer, x, us);
}

/* A GEMM of M tokens by a K x N weight; LAYER: a decoder layer's, in the weights' type. With
 * weight-only FP8 (a GPU without FP8 tensor cores: vLLM's FP8 Marlin kernels dequantize 1-byte
 * weights to 16 bits inside the GEMM) a layer GEMM's 16-bit table time is carried to 1-byte
 * weights by its own roofline, t R(c, m8) / R(c, m16): a weight-bound decode GEMM speeds up by
 * the bytes it no longer reads, a compute-bound one keeps its time. Left out: the dequantization's
 * own cost and Marlin's kernel choices. */
static double gemm_time(const EmaStepModel *s, OpSums *sums, const EmaProfileOp *op, double m,
                        guint64 k, guint64 n, gboolean layer) {
  double us = 0, kd = (double) k, nd = (double) n, flops = 2 * m * kd * nd;
  double activations = m * (kd + nd) * s->bytes_per_element;
  gboolean found;
  if (m <= 0)
    return 0;
  found = profiled(s, op, 0, m, &us);
  if (found && layer && s->weight_only_fp8)
    us *= roofline(s, flops / s->flop_rate,
                   (kd * nd * s->weight_bytes_per_element + activations) / s->byte_rate) /
          roofline(s, flops / s->flop_rate,
                   (kd * nd * s->bytes_per_element + activations) / s->byte_rate);
  return op_time(s, sums, op, found, us, flops, kd * nd * s->weight_bytes_per_element + activations,
                 s->byte_rate, 1);
}

/* An elementwise operator reads and writes WIDTH elements per token. */
static double elementwise_time(const EmaStepModel *s, OpSums *sums, const EmaProfileOp *op,
                               guint64 width, double tokens, double count) {
  double us = 0;
  gboolean found = profiled(s, op, 0, tokens, &us);
  return op_time(s, sums, op, found, us, 0, 2 * tokens * (double) width * s->bytes_per_element,
                 s->byte_rate, count);
}

/* The roofline of a fused MoE layer (ema_profile_moe_fused_work) in the weights' type. */
static double moe_roofline(const EmaStepModel *s, double hidden, double ffn, double topk,
                           double experts, double tokens) {
  double flops, bytes;
  ema_profile_moe_fused_work(hidden, ffn, topk, experts, tokens, s->weight_bytes_per_element,
                             &flops, &bytes);
  return roofline(s, flops / s->flop_rate, bytes / s->byte_rate);
}

/* The fused MoE kernel's time at T tokens: its table's; where the table holds only the nearest
 * shape (moe_carried), that shape's time at as many routed rows (token-expert pairs, the rows
 * the kernel's tiles cover), T A = T' k, carried to this shape by the ratio of the two
 * rooflines, R(T) / R'(T'). Checked by leaving each model's shapes out of AIConfigurator's
 * tables and predicting them from the rest (experiments/fidelity/moe-nearest, docs/fidelity.md). */
static gboolean moe_fused_time(const EmaStepModel *s, double tokens, double *us) {
  const EmaProfileMoeShape *f = &s->moe_from;
  double x;
  if (!s->moe_carried)
    return profiled(s, &s->ops.moe_fused, 0, tokens, us);
  x = tokens * (double) s->active_n / (double) f->topk;
  if (!profiled(s, &s->ops.moe_fused, 0, x, us))
    return FALSE;
  *us *= moe_roofline(s, (double) s->hidden, (double) s->down_k, (double) s->active_n,
                      (double) s->experts_n, tokens) /
         moe_roofline(s, (double) f->hidden, (double) f->ffn, (double) f->topk, (double) f->experts,
                      x);
  return TRUE;
}

/* The expert FFN of one layer for T tokens, projection I (0 up, 1 down): from
 * the moe table at the experts touched (linear between its measured expert
 * counts) with T A / touched tokens each, or the roofline of the experts
 * touched. Called once per token count (fill_row), so it may look the table
 * up by key. */
static double moe_time(const EmaStepModel *s, OpSums *sums, int i, double tokens, double touched) {
  const guint64 k[2] = {s->hidden, s->down_k}, n[2] = {s->up_n, s->hidden};
  double hit = CLAMP(touched, 1.0, (double) s->experts_n);
  double per_expert = tokens * s->router_fraction * s->experts / hit; /* T A / touched */
  double us = 0, us_lo = 0, us_hi = 0, kd = (double) k[i], nd = (double) n[i];
  /* the table's expert counts are powers of two (1, 2, 4, 8, ...) */
  guint lo = 1;
  while (lo * 2 <= hit && lo * 2 <= s->experts_n)
    lo *= 2;
  guint hi = MIN(lo * 2, s->experts_n);
  gboolean found =
      s->profile &&
      ema_profile_moe(s->profile, s->weight_dtype, lo, per_expert, k[i], n[i], &us_lo) &&
      ema_profile_moe(s->profile, s->weight_dtype, hi, per_expert, k[i], n[i], &us_hi);
  if (found)
    us = hi > lo ? us_lo + (us_hi - us_lo) * (hit - lo) / (hi - lo) : us_lo;
  double routed = tokens * s->router_fraction * s->experts;
  double t = op_time(s, sums, NULL, found, us, 2 * routed * kd * nd,
                     touched * kd * nd * s->weight_bytes_per_element +
                         routed * (kd + nd) * s->bytes_per_element,
                     s->byte_rate, 1);
  /* the table's time is of the HIT experts' kernels together: a launch gap each */
  double gaps = found ? graph_gaps(s, &s->ops.moe[i], hit) : 0;
  op_sum(sums, found, gaps);
  return t + gaps;
}

/* vLLM's custom all-reduce takes messages below its buffer, 8 MiB (vllm/distributed/
 * device_communicators/custom_all_reduce.py, max_size = 8192 * 1024), on NVLink or two PCIe
 * GPUs of one host; NCCL the larger ones, any on more than two PCIe GPUs and any of a group
 * past one host (server gpus_per_node). Simplification: from vLLM 0.11, with PyTorch's
 * symmetric memory on (its default), the custom kernel stops lower on some GPUs and TP degrees
 * (all_reduce_utils.py CUSTOM_ALL_REDUCE_MAX_SIZES: Hopper 512 KB at TP 6, 256 KB at TP 8;
 * Blackwell 2 MiB at TP 2-4, 1 MiB at TP 6-8) and a multimem all-reduce takes the sizes past it;
 * no table of that one is measured here, so those sizes take the custom kernel's table, which
 * vLLM's thresholds say is the slower (an upper bound). */
#define CUSTOM_ALLREDUCE_MAX_BYTES (8.0 * 1024 * 1024)
/* Steps of up to this many tokens replay CUDA graphs (vLLM V1's largest capture size, 512 by
 * default), the all-reduces in them too; larger steps launch them eagerly. */
#define GRAPH_MAX_TOKENS 512

/* The all-reduce model, where no table answers: one all-reduce of S bytes among n ranks takes
 *   c + kappa (n - 1) L + 2 (n - 1) / n x S / (eta B)
 * with L the server's link latency and B each rank's link bandwidth to the rest of its group
 * (the step model's group_bandwidth): c the fixed cost of a call (launch and synchronisation),
 * kappa the link latencies each further rank adds, eta the share of B the algorithm reaches. Fitted
 * per implementation by `experiments/engines/fit-allreduce` (least squares of the relative errors)
 * on AIConfigurator's all-reduce tables of A100, H100, H200, B200 and GB200, 2-8 GPUs on
 * NVSwitch servers, 2026-12-06 (the DGX A100's link bandwidth measured): median / worst error
 * over their points 14.7% / 73.5% (custom, graph), 20.6% / 58.8% (custom, eager), 19.4% / 65.4%
 * (NCCL); 7-54% median on each GPU left out of the fit. The ring model it replaces (no fixed cost,
 * 2 (n - 1) latencies, the link's whole bandwidth) was 46-73% off, median (short of all but small
 * messages at 8 GPUs). Simplification: one curve per implementation where the real algorithms
 * switch (one-shot to two-shot, ring to tree or NVLS); fitted on NVSwitch servers only, so on
 * direct and PCIe links it is unvalidated. */
typedef struct {
  double fixed_s, latencies_per_rank, bus_efficiency;
} AllreduceModel;
static const AllreduceModel allreduce_model[EMA_PROFILE_N_ALLREDUCE] = {
    [EMA_PROFILE_ALLREDUCE_CUSTOM_GRAPH] = {4.71e-6, 0.16, 0.56},
    [EMA_PROFILE_ALLREDUCE_CUSTOM_EAGER] = {23.27e-6, 0.27, 0.94},
    [EMA_PROFILE_ALLREDUCE_NCCL] = {6.91e-6, 1.91, 0.73},
};

/* The implementation vLLM takes for an all-reduce of SIZE bytes in a step of TOKENS tokens:
 * its custom all-reduce below CUSTOM_ALLREDUCE_MAX_BYTES (from a CUDA graph up to
 * GRAPH_MAX_TOKENS tokens, eager past them) where it runs, NCCL otherwise. */
static EmaProfileAllreduce allreduce_backend(const EmaStepModel *s, double tokens, double size) {
  if (size >= CUSTOM_ALLREDUCE_MAX_BYTES || !s->custom_allreduce)
    return EMA_PROFILE_ALLREDUCE_NCCL;
  return tokens <= GRAPH_MAX_TOKENS ? EMA_PROFILE_ALLREDUCE_CUSTOM_GRAPH
                                    : EMA_PROFILE_ALLREDUCE_CUSTOM_EAGER;
}

/* One all-reduce of SIZE bytes in a step of TOKENS tokens from the profile: the
 * implementation's table (allreduce_backend()), else NCCL's, then a table that does not say
 * (Vidur's, allreduce.csv). FALSE where none answers (allreduce_modelled()). */
static gboolean allreduce_profiled(const EmaStepModel *s, double tokens, double size, double *us) {
  return profiled(s, &s->ops.allreduce[allreduce_backend(s, tokens, size)], 0, size, us) ||
         profiled(s, &s->ops.allreduce[EMA_PROFILE_ALLREDUCE_NCCL], 0, size, us) ||
         profiled(s, &s->ops.allreduce[EMA_PROFILE_ALLREDUCE_ANY], 0, size, us);
}

/* One all-reduce of SIZE bytes by IMPL under the all-reduce model. */
static double allreduce_model_time(const EmaStepModel *s, EmaProfileAllreduce impl, double size) {
  const AllreduceModel *m = &allreduce_model[impl];
  double ranks = (double) s->tp;
  return m->fixed_s + m->latencies_per_rank * (ranks - 1) * s->link_latency_s +
         2.0 * (ranks - 1) / ranks * size / (m->bus_efficiency * s->group_bandwidth);
}

/* One all-reduce of SIZE bytes in a step of TOKENS tokens from the all-reduce model. The
 * custom kernel launched eagerly is the same kernel as in a CUDA graph plus its launch, so it
 * is never faster than the graph's: the two fits' bus efficiencies (0.94 eager, 0.56 graph)
 * part on slow links, where a 513-token step would otherwise beat a 512-token one (MI300X,
 * TP 2, Llama-3.1-8B: 14.0 -> 11.8 ms). */
static double allreduce_modelled(const EmaStepModel *s, double tokens, double size) {
  EmaProfileAllreduce impl = allreduce_backend(s, tokens, size);
  double t = allreduce_model_time(s, impl, size);
  if (impl == EMA_PROFILE_ALLREDUCE_CUSTOM_EAGER)
    t = MAX(t, allreduce_model_time(s, EMA_PROFILE_ALLREDUCE_CUSTOM_GRAPH, size));
  return t;
}

/* D = E (1 - (1 - A/E)^T), the experts T tokens touch (steptime.h); every
 * expert active (a dense model): pow(0, T > 0) = 0, all touched. */
static double experts_touched(const EmaStepModel *s, double tokens) {
  return s->active_fraction >= 1.0 ? s->experts
                                   : s->experts * (1.0 - pow(1.0 - s->active_fraction, tokens));
}

/* ROW's operators at X tokens (the LM head at X logits): the times and
 * origins that the operator functions give. */
static void fill_row(const EmaStepModel *s, guint64 x, TokenRow *row) {
  double tokens = (double) x, touched = experts_touched(s, tokens);
  double size = s->allreduce_bytes_per_token * tokens, us = 0;
  for (int i = 0; i < N_ROW; i++) {
    OpSums sums = {0};
    double t = 0;
    switch (i) {
    case ROW_QKV:
      t = gemm_time(s, &sums, &s->ops.qkv, tokens, s->hidden, s->qkv_n, TRUE);
      break;
    case ROW_O:
      t = gemm_time(s, &sums, &s->ops.o, tokens, s->o_k, s->hidden, TRUE);
      break;
    case ROW_ROUTER: /* the router and the routing's own kernels: MoE steps with tokens */
      if (s->moe && tokens > 0)
        t = gemm_time(s, &sums, &s->ops.router, tokens, s->hidden, s->experts_n, FALSE);
      break;
    case ROW_MOE_ROUTE:
      if (s->moe && tokens > 0)
        t = elementwise_time(s, &sums, &s->ops.moe_route, s->hidden, tokens, 1);
      break;
    case ROW_UP:
    case ROW_DOWN:
      /* an MoE whose fused kernel the profile has: all of its experts in ROW_UP */
      if (s->moe_fused && tokens > 0 && moe_fused_time(s, tokens, &us))
        op_sum(&sums, TRUE, t = i == ROW_UP ? us * 1e-6 : 0);
      else
        t = s->moe        ? (tokens > 0 ? moe_time(s, &sums, i - ROW_UP, tokens, touched) : 0)
            : i == ROW_UP ? gemm_time(s, &sums, &s->ops.up, tokens, s->hidden, s->up_n, TRUE)
                          : gemm_time(s, &sums, &s->ops.down, tokens, s->down_k, s->hidden, TRUE);
      break;
    case ROW_SHARED_UP:
      t = s->shared_up_n
              ? gemm_time(s, &sums, &s->ops.shared_up, tokens, s->hidden, s->shared_up_n, TRUE)
              : 0;
      break;
    case ROW_SHARED_DOWN:
      t = s->shared_down_k
              ? gemm_time(s, &sums, &s->ops.shared_down, tokens, s->shared_down_k, s->hidden, TRUE)
              : 0;
      break;
    case ROW_SHARED_ACT:
      t = s->shared_down_k
              ? elementwise_time(s, &sums, &s->ops.shared_act, s->shared_up_n, tokens, 1)
              : 0;
      break;
    case ROW_KV_WRITE: /* the new tokens' K and V copied into the cache (one kv_write row
                        * covers both; its roofline: the bytes written) */
      t = elementwise_time(s, &sums, &s->ops.kv_write, (guint64) s->kv_heads * s->head_dim, tokens,
                           1);
      break;
    case ROW_NORM2:
    case ROW_NORM1:
      t = elementwise_time(s, &sums, &s->ops.norm, s->hidden, tokens, i == ROW_NORM2 ? 2 : 1);
      break;
    case ROW_ACT: /* an MoE: one silu_mul per expert touched on its T A / touched rows (none
                   * where the fused kernel times the experts: it holds the activation) */
      if (s->moe_fused && tokens > 0 && moe_fused_time(s, tokens, &us))
        t = 0;
      else if (!s->moe)
        t = elementwise_time(s, &sums, &s->ops.act, s->act_width, tokens, 1);
      else if (tokens > 0)
        t = elementwise_time(s, &sums, &s->ops.act, s->act_width,
                             tokens * s->router_fraction * s->experts / MAX(touched, 1.0),
                             MAX(touched, 1.0));
      break;
    case ROW_ADD2:
      t = elementwise_time(s, &sums, &s->ops.add, s->hidden, tokens, 2);
      break;
    case ROW_ROPE:
      t = elementwise_time(s, &sums, &s->ops.rope, s->rope_width, tokens, 1);
      break;
    case ROW_EMBEDDING:
      t = elementwise_time(s, &sums, &s->ops.embedding, s->hidden, tokens, 1);
      break;
    case ROW_LM_HEAD:
      t = gemm_time(s, &sums, &s->ops.lm_head, tokens, s->hidden, s->head_n, FALSE);
      break;
    case ROW_ALLREDUCE:
      if (allreduce_profiled(s, tokens, size, &us))
        op_sum(&sums, TRUE, t = us * 1e-6);
      else
        t = allreduce_modelled(s, tokens, size);
      break;
    default:
      g_assert_not_reached();
    }
    row->t[i] = t;
    /* a profile's times are positive (profile.h): > 0 where it timed the operator */
    if (sums.profiled_s > 0)
      row->found |= 1u << i;
  }
  row->before_attention = row->t[ROW_QKV] + row->t[ROW_O];
  row->before_attention += row->t[ROW_ROUTER] + row->t[ROW_MOE_ROUTE];
  row->before_attention += row->t[ROW_UP] + row->t[ROW_DOWN];
  row->before_attention += row->t[ROW_SHARED_UP] + row->t[ROW_SHARED_DOWN];
  row->after_kv_write = row->t[ROW_NORM2] + row->t[ROW_ACT] + row->t[ROW_SHARED_ACT];
  row->after_kv_write += row->t[ROW_ADD2];
}

/* The row of X tokens: the model's, filled on first use, or SCRATCH past
 * the rows kept. */
G_ALWAYS_INLINE static inline const TokenRow *token_row(const EmaStepModel *s, guint64 x,
                                                        TokenRow *scratch) {
  if (x >= TOKEN_ROWS) {
    *scratch = (TokenRow){0};
    fill_row(s, x, scratch);
    return scratch;
  }
  if (!(s->filled[x / 64] >> (x % 64) & 1)) {
    s->rows[x] = (TokenRow){0};
    fill_row(s, x, &s->rows[x]);
    s->filled[x / 64] |= G_GUINT64_CONSTANT(1) << (x % 64);
  }
  return &s->rows[x];
}

/* ROW's operator I, counted in SUMS. */
static double row_op(const TokenRow *row, int i, OpSums *sums) {
  op_sum(sums, (row->found >> i) & 1u, row->t[i]);
  return row->t[i];
}

/* Decode attention of B sequences of C context tokens in all: the table at
 * (B, C / B), every sequence taken at the batch's mean context. */
G_ALWAYS_INLINE static inline double decode_attention_time(const EmaStepModel *s, OpSums *sums,
                                                           const EmaStepBatch *b) {
  double us = 0, seqs = (double) b->decode_seqs;
  gboolean found;
  if (b->decode_seqs == 0)
    return 0;
  found = s->profile && ema_profile_op_at_cursor(&s->ops.attn_decode, &s->cursors->attn_decode,
                                                 seqs, b->decode_context / seqs, &us);
  return op_time(s, sums, &s->ops.attn_decode, found, us,
                 s->attention_flops_per_context * b->decode_context,
                 s->kv_bytes_per_token * b->decode_context, s->kv_rate, 1);
}

/* What running C fresh prompts of N tokens each in one kernel takes of C
 * runs of one: *SAVED = T(C, N) / (C T(1, N)) of the profile's prompts-run-together table
 * (at most 1), TRUE; FALSE where the table has no such shape or no one-prompt rows to compare
 * with (engine steps only). The
 * kernel's fixed cost is paid once, and short prompts fill the GPU together: AIConfigurator's
 * H100 table runs 16 prompts of 128 tokens (16 query heads over 2) in 19 us, one in 12 us,
 * and 4 of 2,048 tokens in 136 us, one in 40 us. */
static gboolean together(const EmaStepModel *s, double c, double n, double *saved) {
  double one, many;
  if (!s->prompts_together || !ema_profile_op_at(&s->ops.attn_prefill_prompts, 1, n, &one) ||
      !ema_profile_op_at(&s->ops.attn_prefill_prompts, c, n, &many) || !(one > 0))
    return FALSE;
  *saved = MIN(1.0, many / (c * one));
  return TRUE;
}

/* Prefill attention of c chunks: c runs of the table at the mean chunk
 * N / c after the mean prior context (sum of p) / c (fresh prompts of an
 * engine's step: less what running them in one kernel saves, together());
 * where the table has fresh prompts only (no prior context), c runs at the
 * chunk alone plus the roofline of the cached part; else the roofline; at
 * least c runs of the decode table at one sequence of the chunk's whole
 * context (p + n) / c (prompts together: one run at c sequences), where the
 * profile has it (steptime.h). */
G_ALWAYS_INLINE static inline double prefill_attention_time(const EmaStepModel *s, OpSums *sums,
                                                            const EmaStepBatch *b) {
  double us = 0, floor_us = 0, chunks, tokens = (double) b->prefill_tokens, prior, chunk, t;
  double saved = 1, runs; /* runs: kernels the floor below counts (1: the prompts together) */
  OpSums own = {0};
  gboolean found;
  if (b->prefill_tokens == 0)
    return 0;
  chunks = (double) MAX(b->prefill_chunks, 1);
  runs = chunks;
  prior = MAX(0.0, b->prefill_kv_read - tokens) / chunks;
  /* fresh prompts only: the chunk whose pairs, c times, are the step's (c n (n + 1) / 2 =
   * C_p), at least the mean chunk: prompts of different lengths hold more query-key pairs than
   * as many of their mean length */
  chunk = tokens / chunks;
  if (prior <= 0 && chunks > 1)
    chunk = MAX(chunk, (sqrt(1 + 8 * b->prefill_context / chunks) - 1) / 2);
  found = s->profile && ema_profile_op_at_cursor(&s->ops.attn_prefill, &s->cursors->attn_prefill,
                                                 prior, chunk, &us);
  if (found && prior <= 0 && chunks > 1 && together(s, chunks, chunk, &saved)) {
    /* fresh prompts in one kernel: c prompts' time, less what running them together saves */
    t = op_time(s, &own, &s->ops.attn_prefill, TRUE, chunks * us * saved, 0, 0, s->kv_rate, 1);
    runs = 1;
  } else if (found) {
    t = op_time(s, &own, &s->ops.attn_prefill, TRUE, us, 0, 0, s->kv_rate, chunks);
  } else if (prior > 0 && s->profile &&
             ema_profile_op_covers(&s->ops.attn_prefill, 0, tokens / chunks) &&
             ema_profile_op_at(&s->ops.attn_prefill, 0, tokens / chunks, &us)) {
    /* a table of fresh prompts only, measured down to this chunk: the
     * chunks as fresh prompts, plus the roofline of what the cached tokens
     * add (their KV read, the chunks' queries against them), its pairs at
     * the rate the table's kernel reaches at its largest prompt */
    double n = tokens / chunks;
    double pairs = MAX(0.0, b->prefill_context - chunks * n * (n + 1) / 2);
    double compute = s->prefill_pair_rate > 0
                         ? pairs / s->prefill_pair_rate
                         : s->attention_flops_per_context * pairs / s->flop_rate;
    double cached =
        roofline(s, compute, s->kv_bytes_per_token * (b->prefill_kv_read - tokens) / s->kv_rate);
    op_sum(&own, FALSE, cached);
    t = op_time(s, &own, &s->ops.attn_prefill, TRUE, us, 0, 0, s->kv_rate, chunks) + cached;
  } else {
    t = op_time(s, &own, NULL, FALSE, 0, s->attention_flops_per_context * b->prefill_context,
                s->kv_bytes_per_token * b->prefill_kv_read, s->kv_rate, 1);
  }
  if (s->profile &&
      ema_profile_op_at(&s->ops.attn_decode, chunks / runs, b->prefill_kv_read / chunks,
                        &floor_us) &&
      runs * floor_us * 1e-6 > t)
    return op_time(s, sums, &s->ops.attn_decode, TRUE, floor_us, 0, 0, s->kv_rate, runs);
  sums->profiled_s += own.profiled_s;
  sums->roofline_s += own.roofline_s;
  return t;
}

/* One decoder layer from the profile, its token-count operators from ROW. */
/* One layer's time from its token row and ATTENTION (the decode and prefill
 * attention of the step together): the row's operators in the order their
 * sums were made (fill_row), the attention between them. */
static double layer_sum(const EmaStepModel *s, const TokenRow *row, double attention) {
  double t = row->before_attention;
  t += attention;
  t += row->t[ROW_KV_WRITE];
  t += row->after_kv_write;
  if (s->gated)
    t += row->t[ROW_ROPE];
  return t;
}

/* One layer's time, each operator's time added to SUMS by its origin in
 * the layer's order. */
static double operator_layer(const EmaStepModel *s, OpSums *sums, const EmaStepBatch *b,
                             const TokenRow *row) {
  static const int before[] = {ROW_QKV, ROW_O,    ROW_ROUTER,    ROW_MOE_ROUTE,
                               ROW_UP,  ROW_DOWN, ROW_SHARED_UP, ROW_SHARED_DOWN};
  static const int after[] = {ROW_KV_WRITE, ROW_NORM2, ROW_ACT, ROW_SHARED_ACT, ROW_ADD2};
  double attention;
  for (guint i = 0; i < G_N_ELEMENTS(before); i++)
    row_op(row, before[i], sums);
  attention = decode_attention_time(s, sums, b) + prefill_attention_time(s, sums, b);
  for (guint i = 0; i < G_N_ELEMENTS(after); i++)
    row_op(row, after[i], sums);
  if (s->gated)
    row_op(row, ROW_ROPE, sums);
  return layer_sum(s, row, attention);
}

/* operator_layer's time alone, no sums kept. */
static double layer_time(const EmaStepModel *s, const EmaStepBatch *b, const TokenRow *row) {
  OpSums unused = {0};
  return layer_sum(s, row,
                   decode_attention_time(s, &unused, b) + prefill_attention_time(s, &unused, b));
}

/* Scale the layer's two roofline sides (and its KV-read share) by one
 * factor so that the larger is ONE, the operator sum: the elastic pool
 * (pool.h) slows the memory side by HBM interference and recombines the
 * sides with max, which then gives back ONE when nothing slows it. */
static void rescale_layer_sides(EmaStepBreakdown *r, double one) {
  double big = MAX(r->layer_compute_s, r->layer_memory_s), k;
  if (big <= 0)
    return;
  k = one / big;
  r->layer_kv_read_s *= k;
  if (r->layer_memory_s >= r->layer_compute_s) {
    r->layer_compute_s *= k;
    r->layer_memory_s = one;
  } else {
    r->layer_memory_s *= k;
    r->layer_compute_s = one;
  }
}

/* The step as a sum of operators into R: layers, the once-per-step
 * operators (in lm_head_s) and the all-reduces; with FULL, also the layer's
 * rescaled roofline sides and the profiled and roofline shares (without it
 * only the three times step_ns reads are set, the same doubles). */
G_ALWAYS_INLINE static inline void operator_step(const EmaStepModel *s, const EmaStepBatch *b,
                                                 EmaStepBreakdown *r, gboolean full) {
  OpSums layer = {0}, once = {0}, reduce = {0};
  TokenRow scratch, logits_scratch;
  const TokenRow *row = token_row(s, b->prefill_tokens + b->decode_seqs, &scratch);
  const TokenRow *logits = token_row(s, b->logits, &logits_scratch);
  double one = full ? operator_layer(s, &layer, b, row) : layer_time(s, b, row);
  /* a profile's kernel times include their tails: no layer_overhead */
  r->layer_overhead_s = s->profile ? 0 : s->layer_overhead_s;
  r->layers_s = s->layers * (one + r->layer_overhead_s);
  r->lm_head_s = row_op(row, ROW_EMBEDDING, &once) + row_op(row, ROW_NORM1, &once) +
                 row_op(logits, ROW_LM_HEAD, &once);
  r->allreduce_s = 0;
  if (s->tp > 1) {
    r->allreduce_s = 2.0 * s->layers * row->t[ROW_ALLREDUCE];
    op_sum(&reduce, (row->found >> ROW_ALLREDUCE) & 1u, r->allreduce_s);
  }
  if (!full)
    return;
  rescale_layer_sides(r, one);
  r->profiled_s = s->layers * layer.profiled_s + once.profiled_s + reduce.profiled_s;
  r->roofline_s =
      s->layers * (layer.roofline_s + r->layer_overhead_s) + once.roofline_s + reduce.roofline_s;
}

/* The step's time from operator_step's three times. */
static EmaTime step_ns(const EmaStepModel *s, const EmaStepBreakdown *r) {
  EmaTime ns = ema_llround((r->layers_s + r->lm_head_s + r->allreduce_s) * 1e9);
  return ns > EMA_TIME_NEVER - s->step_overhead ? EMA_TIME_NEVER : ns + s->step_overhead;
}

EmaTime ema_step_time(const EmaStepModel *step_model, const EmaStepBatch *batch,
                      EmaStepBreakdown *out) {
  const EmaStepModel *s = step_model;
  static const EmaStepBreakdown none = {0};
  /* every field is set below (not zeroed first: this is the hot path) */
  EmaStepBreakdown local, *r = out;
  double tokens, touched, layer_flops, layer_weight_bytes, layer_kv_read, layer_bytes;
  double head_flops = 0, head_bytes = 0;

  g_return_val_if_fail(s != NULL && batch != NULL, 0);
  g_return_val_if_fail(batch->logits <= batch->prefill_tokens + batch->decode_seqs, 0);
  if (batch->prefill_tokens + batch->decode_seqs == 0) {
    if (out)
      *out = none;
    return 0;
  }
  if (out == NULL) {
    /* the time alone: the operator sums, none of the breakdown's roofline figures */
    operator_step(s, batch, &local, FALSE);
    return step_ns(s, &local);
  }
  tokens = (double) batch->prefill_tokens + (double) batch->decode_seqs;

  /* one layer */
  touched = experts_touched(s, tokens);
  layer_flops = s->linear_flops_per_token * tokens +
                s->attention_flops_per_context * (batch->prefill_context + batch->decode_context);
  layer_weight_bytes = s->shared_weight_bytes + s->expert_weight_bytes * touched;
  layer_kv_read = s->kv_bytes_per_token * (batch->decode_context + batch->prefill_kv_read);
  layer_bytes = layer_weight_bytes + layer_kv_read + s->kv_bytes_per_token * tokens +
                s->activation_bytes_per_token * tokens;
  r->layer_compute_s = layer_flops / s->flop_rate;
  r->layer_kv_read_s = layer_kv_read / s->kv_rate;
  r->layer_memory_s = (layer_bytes - layer_kv_read) / s->byte_rate + r->layer_kv_read_s;
  r->layer_bound = bound_of(r->layer_compute_s, r->layer_memory_s);

  /* the LM head */
  r->lm_head_bound = EMA_STEP_BOUND_NONE;
  r->lm_head_compute_s = r->lm_head_memory_s = 0;
  if (batch->logits > 0) {
    head_flops = s->lm_head_flops_per_logit * (double) batch->logits;
    head_bytes = s->lm_head_weight_bytes + s->lm_head_bytes_per_logit * (double) batch->logits;
    r->lm_head_compute_s = head_flops / s->flop_rate;
    r->lm_head_memory_s = head_bytes / s->byte_rate;
    r->lm_head_bound = bound_of(r->lm_head_compute_s, r->lm_head_memory_s);
  }

  r->overhead_s = (double) s->step_overhead * 1e-9;
  r->compute_s = s->layers * r->layer_compute_s + r->lm_head_compute_s;
  r->memory_s = s->layers * r->layer_memory_s + r->lm_head_memory_s;
  r->flops = s->layers * layer_flops + head_flops;
  r->bytes = s->layers * layer_bytes + head_bytes;
  r->weight_bytes_read =
      s->layers * layer_weight_bytes + (batch->logits > 0 ? s->lm_head_weight_bytes : 0);
  r->kv_read_bytes = s->layers * layer_kv_read;
  operator_step(s, batch, r, TRUE);
  r->time = step_ns(s, r);
  return r->time;
}

/* Where OPS' times come from: the labels of their data sets, each once, in
 * the order met, joined by " + ", with "roofline" for an operator the
 * profile lacks; into BUF. */
static const char *sources_of(const EmaStepModel *s, const EmaProfileOp *const *ops, guint n,
                              char *buf, gsize size) {
  const char *seen[8];
  guint count = 0;
  buf[0] = '\0';
  for (guint i = 0; i < n; i++) {
    const char *label = s->profile ? ema_profile_op_source(s->profile, ops[i]) : NULL;
    gboolean again = FALSE;
    if (!label)
      label = "roofline";
    for (guint j = 0; j < count; j++)
      again = again || strcmp(seen[j], label) == 0;
    if (again || count == G_N_ELEMENTS(seen))
      continue;
    seen[count++] = label;
    g_strlcat(buf, count > 1 ? " + " : "", size);
    g_strlcat(buf, label, size);
  }
  return buf;
}

void ema_step_model_sources(const EmaStepModel *step_model, EmaStepSources *out) {
  const EmaStepModel *s = step_model;
  const EmaProfileOp *gemms[] = {&s->ops.qkv, &s->ops.o, &s->ops.up, &s->ops.down, &s->ops.lm_head};
  /* the shared experts last: an MoE with them only */
  const EmaProfileOp *moe[] = {&s->ops.moe[0],    &s->ops.moe[1],      &s->ops.router,
                               &s->ops.shared_up, &s->ops.shared_down, &s->ops.shared_act};
  const EmaProfileOp *moe_fused[] = {&s->ops.moe_fused, &s->ops.router, &s->ops.shared_up,
                                     &s->ops.shared_down, &s->ops.shared_act};
  guint shared = s->shared_down_k > 0 ? 3 : 0;
  /* rope last: a gated model's only */
  const EmaProfileOp *elementwise[] = {&s->ops.norm,      &s->ops.act,      &s->ops.add,
                                       &s->ops.embedding, &s->ops.kv_write, &s->ops.rope};
  const EmaProfileOp *allreduce[EMA_PROFILE_N_ALLREDUCE];
  g_return_if_fail(s != NULL && out != NULL);
  for (guint i = 0; i < EMA_PROFILE_N_ALLREDUCE; i++)
    allreduce[i] = &s->ops.allreduce[i];
  /* an MoE's up and down projections are its experts' */
  sources_of(s, gemms, s->moe ? 2 : 5, out->gemm, sizeof out->gemm);
  if (s->weight_only_fp8)
    g_strlcat(out->gemm, " (weight-only FP8: 16-bit times carried to 1-byte weights)",
              sizeof out->gemm);
  if (s->moe_fused) {
    sources_of(s, moe_fused, 2 + shared, out->moe, sizeof out->moe);
    if (s->moe_carried) {
      char note[160];
      g_snprintf(note, sizeof note,
                 " (the fused kernel's nearest shape, h %" G_GUINT64_FORMAT " f %" G_GUINT64_FORMAT
                 " top-%u of %u, carried by the roofline)",
                 s->moe_from.hidden, s->moe_from.ffn, s->moe_from.topk, s->moe_from.experts);
      g_strlcat(out->moe, note, sizeof out->moe);
    }
  } else
    sources_of(s, moe, s->moe ? 3 + shared : 0, out->moe, sizeof out->moe);
  sources_of(s, (const EmaProfileOp *[]){&s->ops.attn_decode}, 1, out->attn_decode,
             sizeof out->attn_decode);
  sources_of(s, (const EmaProfileOp *[]){&s->ops.attn_prefill}, 1, out->attn_prefill,
             sizeof out->attn_prefill);
  sources_of(s, elementwise, G_N_ELEMENTS(elementwise) - !s->gated, out->elementwise,
             sizeof out->elementwise);
  out->allreduce_modelled = FALSE;
  if (s->tp == 1)
    g_strlcpy(out->allreduce, "none (tp 1)", sizeof out->allreduce);
  else {
    /* the tables an all-reduce may take (allreduce_profiled), else the all-reduce model */
    guint found = 0;
    for (guint i = 0; i < EMA_PROFILE_N_ALLREDUCE; i++)
      if (s->profile && ema_profile_op_source(s->profile, allreduce[i]))
        allreduce[found++] = allreduce[i];
    out->allreduce_modelled = found == 0;
    if (found == 0)
      g_snprintf(out->allreduce, sizeof out->allreduce, "all-reduce model%s", s->allreduce_note);
    else
      sources_of(s, allreduce, found, out->allreduce, sizeof out->allreduce);
  }
}

void ema_step_model_describe(const EmaStepModel *step_model, GString *out) {
  const EmaStepModel *s = step_model;
  EmaStepSources src;
  g_return_if_fail(s != NULL && out != NULL);
  if (!s->profile) {
    g_string_append(out, s->fp32 ? "# step time: every operator from the per-operator roofline "
                                   "(32-bit weights: the profiles hold 16- and 8-bit kernels)\n"
                                 : "# step time: every operator from the per-operator roofline "
                                   "(the GPU has no profile)\n");
    return;
  }
  ema_profile_describe(s->profile, out);
  ema_step_model_sources(s, &src);
  g_string_append_printf(out,
                         "# step time by operator class: gemm %s;%s%s attn_decode %s; "
                         "attn_prefill %s; elementwise %s; allreduce %s\n",
                         src.gemm, s->moe ? " moe " : "", s->moe ? src.moe : "", src.attn_decode,
                         src.attn_prefill, src.elementwise, src.allreduce);
}
