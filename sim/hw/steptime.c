/* steptime.c: the iteration-time model of one engine step (equations and
 * choices in steptime.h).
 *
 * ema_step_model_new() folds the model shape, the GPU and the TP split into
 * per-GPU constants once, so that ema_step_time() is a handful of
 * multiply-adds: O(1) in the batch size and free of allocation.
 *
 * Invariants: a step model's tp divides the server's GPUs and the model's
 * heads, and divides kv_heads or is a multiple of it; its rates are
 * positive; a step's time is monotone non-decreasing in every field of the
 * batch (each term is a sum of non-negative coefficients times the batch's
 * sums, passed through max and a monotone expert count). */
#include "ema/hw/steptime.h"

#include <math.h>

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
  double byte_rate; /* rate_m */
  double kv_rate;   /* rate_kv = rate_m x kv_efficiency */
  double layer_overhead_s;
  double link_bandwidth;
  double link_latency_s;
  EmaTime step_overhead;
  /* figures for the engine */
  guint64 weight_bytes_per_gpu;
  double kv_bytes_per_token_per_gpu;
};

EmaStepModel *ema_step_model_new(const EmaLlmSpec *model, const EmaServerSpec *server, guint tp,
                                 GError **error) {
  EmaLlmDerived derived;
  EmaStepModel *step;
  double b, bw, bkv, kv_heads_per_gpu;

  g_return_val_if_fail(model != NULL && server != NULL, NULL);
  if (tp == 0 || server->gpus % tp != 0) {
    g_set_error(error, EMA_CONFIG_ERROR, EMA_CONFIG_ERROR_INVALID,
                "tensor-parallel size %u must divide the server's %" G_GINT64_FORMAT " GPUs", tp,
                server->gpus);
    return NULL;
  }
  if (model->heads % tp != 0) {
    g_set_error(error, EMA_CONFIG_ERROR, EMA_CONFIG_ERROR_INVALID,
                "tensor-parallel size %u must divide %s's %" G_GINT64_FORMAT " heads", tp,
                model->name, model->heads);
    return NULL;
  }
  if (model->kv_heads % tp != 0 && tp % model->kv_heads != 0) {
    g_set_error(error, EMA_CONFIG_ERROR, EMA_CONFIG_ERROR_INVALID,
                "tensor-parallel size %u must divide %s's %" G_GINT64_FORMAT
                " KV heads or be a multiple of them",
                tp, model->name, model->kv_heads);
    return NULL;
  }
  if (server->gpu.matrix_flops <= 0 || server->gpu.matrix_efficiency <= 0 ||
      server->gpu.hbm_bandwidth <= 0 || server->gpu.hbm_efficiency <= 0 ||
      server->gpu.kv_efficiency <= 0 || (tp > 1 && server->link.bandwidth <= 0)) {
    g_set_error(error, EMA_CONFIG_ERROR, EMA_CONFIG_ERROR_INVALID,
                "server %s: the step-time model needs positive matrix and HBM rates and "
                "efficiencies (and a link bandwidth for tensor parallelism)",
                server->name ? server->name : "?");
    return NULL;
  }

  if (model->weights == EMA_PRECISION_FP8 && server->gpu.matrix_flops_fp8 <= 0) {
    g_set_error(error, EMA_CONFIG_ERROR, EMA_CONFIG_ERROR_INVALID,
                "%s: FP8 weights need a GPU with an FP8 matrix rate (gpu.matrix_flops_fp8)",
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

  step->flop_rate = (model->weights == EMA_PRECISION_FP8 ? server->gpu.matrix_flops_fp8
                                                         : server->gpu.matrix_flops) *
                    server->gpu.matrix_efficiency;
  step->byte_rate = server->gpu.hbm_bandwidth * server->gpu.hbm_efficiency;
  step->kv_rate = step->byte_rate * server->gpu.kv_efficiency;
  step->layer_overhead_s = (double) server->gpu.layer_overhead * 1e-9;
  step->link_bandwidth = server->link.bandwidth;
  step->link_latency_s = (double) server->link.latency * 1e-9;
  step->step_overhead = server->gpu.step_overhead;

  step->weight_bytes_per_gpu = (derived.weight_bytes + tp - 1) / tp;
  step->kv_bytes_per_token_per_gpu = step->layers * step->kv_bytes_per_token;
  return step;
}

void ema_step_model_free(EmaStepModel *step_model) {
  g_free(step_model);
}

guint ema_step_model_layers(const EmaStepModel *step_model) {
  g_return_val_if_fail(step_model != NULL, 0);
  return (guint) step_model->layers;
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

EmaTime ema_step_time(const EmaStepModel *step_model, const EmaStepBatch *batch,
                      EmaStepBreakdown *out) {
  const EmaStepModel *s = step_model;
  EmaStepBreakdown r = {0};
  double tokens, experts_touched, layer_flops, layer_weight_bytes, layer_kv_read, layer_bytes;
  double head_flops = 0, head_bytes = 0;

  g_return_val_if_fail(s != NULL && batch != NULL, 0);
  g_return_val_if_fail(batch->logits <= batch->prefill_tokens + batch->decode_seqs, 0);
  if (batch->prefill_tokens + batch->decode_seqs == 0) {
    if (out)
      *out = r;
    return 0;
  }
  tokens = (double) batch->prefill_tokens + (double) batch->decode_seqs;

  /* one layer */
  experts_touched = s->experts * (1.0 - pow(1.0 - s->active_fraction, tokens));
  layer_flops = s->linear_flops_per_token * tokens +
                s->attention_flops_per_context * (batch->prefill_context + batch->decode_context);
  layer_weight_bytes = s->shared_weight_bytes + s->expert_weight_bytes * experts_touched;
  layer_kv_read = s->kv_bytes_per_token * (batch->decode_context + batch->prefill_kv_read);
  layer_bytes = layer_weight_bytes + layer_kv_read + s->kv_bytes_per_token * tokens +
                s->activation_bytes_per_token * tokens;
  r.layer_compute_s = layer_flops / s->flop_rate;
  r.layer_kv_read_s = layer_kv_read / s->kv_rate;
  r.layer_memory_s = (layer_bytes - layer_kv_read) / s->byte_rate + r.layer_kv_read_s;
  r.layer_bound = bound_of(r.layer_compute_s, r.layer_memory_s);
  r.layer_overhead_s = s->layer_overhead_s;
  r.layers_s = s->layers * (MAX(r.layer_compute_s, r.layer_memory_s) + r.layer_overhead_s);

  /* the LM head */
  r.lm_head_bound = EMA_STEP_BOUND_NONE;
  if (batch->logits > 0) {
    head_flops = s->lm_head_flops_per_logit * (double) batch->logits;
    head_bytes = s->lm_head_weight_bytes + s->lm_head_bytes_per_logit * (double) batch->logits;
    r.lm_head_compute_s = head_flops / s->flop_rate;
    r.lm_head_memory_s = head_bytes / s->byte_rate;
    r.lm_head_bound = bound_of(r.lm_head_compute_s, r.lm_head_memory_s);
    r.lm_head_s = MAX(r.lm_head_compute_s, r.lm_head_memory_s);
  }

  /* two ring all-reduces per layer */
  if (s->tp > 1) {
    double size = s->allreduce_bytes_per_token * tokens;
    double ring = 2.0 * (s->tp - 1) / s->tp * size / s->link_bandwidth +
                  2.0 * (s->tp - 1) * s->link_latency_s;
    r.allreduce_s = 2.0 * s->layers * ring;
  }

  r.overhead_s = (double) s->step_overhead * 1e-9;
  r.compute_s = s->layers * r.layer_compute_s + r.lm_head_compute_s;
  r.memory_s = s->layers * r.layer_memory_s + r.lm_head_memory_s;
  r.flops = s->layers * layer_flops + head_flops;
  r.bytes = s->layers * layer_bytes + head_bytes;
  r.weight_bytes_read =
      s->layers * layer_weight_bytes + (batch->logits > 0 ? s->lm_head_weight_bytes : 0);
  r.kv_read_bytes = s->layers * layer_kv_read;
  r.time = (EmaTime) llround((r.layers_s + r.lm_head_s + r.allreduce_s) * 1e9) + s->step_overhead;
  if (out)
    *out = r;
  return r.time;
}
