/* offload.c: the cost model of attention offload (equations and assumptions
 * in offload.h).
 *
 * ema_offload_model_new() folds the model shape, the GPU and the link into
 * per-GPU constants once; every query is then O(number of lenders) and free
 * of allocation.
 *
 * Invariants: a model's rates, link bandwidth and per-token sizes are
 * positive; a step's added time is never negative and is 0 when no request
 * has remote KV; every cost is monotone non-decreasing in every field of
 * every share. */
#include "ema/hw/offload.h"

#include <math.h>

#include "ema/core/bits.h"

#define FP32_BYTES 4.0

struct _EmaOffloadModel {
  double layers;
  double heads;              /* H: query heads on one GPU */
  double head_dim;           /* d */
  double element_bytes;      /* b */
  double kv_bytes_per_token; /* kv_l: one layer, one GPU */
  double ranks;              /* t: the group's ranks whose partials one lender computes (1: one) */
  /* the GPU */
  double flop_rate;        /* rate_c */
  double byte_rate;        /* rate_m */
  double kv_rate;          /* rate_kv */
  double copy_rate;        /* local_copy_bandwidth: what r is a share of */
  double kernel_s;         /* kernel_overhead */
  double partial_slowdown; /* gpu.offload_partial_slowdown: a busy lender's partial */
  /* the link */
  gboolean shared_port; /* switch or PCIe: the borrower's messages share one port */
  double link_bandwidth;
  double link_latency_s;
  double path_s; /* the trigger path's fixed cost beyond the latency (offexec.h: copy) */
};

EmaOffloadModel *ema_offload_model_new(const EmaLlmSpec *model, const EmaServerSpec *server,
                                       guint tp, GError **error) {
  g_autoptr(EmaStepModel) step = NULL;
  EmaLlmDerived derived;
  EmaOffloadModel *m;

  g_return_val_if_fail(model != NULL && server != NULL, NULL);
  /* the step model checks the TP split and the GPU's rates */
  step = ema_step_model_new(model, server, tp, error);
  if (step == NULL)
    return NULL;
  if (server->link.bandwidth <= 0 || server->gpu.local_copy_bandwidth <= 0) {
    g_set_error(error, EMA_CONFIG_ERROR, EMA_CONFIG_ERROR_INVALID,
                "server %s: attention offload needs a positive link bandwidth and local copy "
                "bandwidth",
                server->name ? server->name : "?");
    return NULL;
  }
  if (server->gpu.offload_slowdown == NULL || server->gpu.offload_slowdown->len == 0) {
    g_set_error(error, EMA_CONFIG_ERROR, EMA_CONFIG_ERROR_INVALID,
                "GPU %s: attention offload needs gpu.offload_slowdown (a lender's measured "
                "slowdown against the share of its HBM time that offloaded attention reads)",
                server->gpu.name ? server->gpu.name : "?");
    return NULL;
  }
  ema_llm_derive(model, &derived);

  m = g_new0(EmaOffloadModel, 1);
  m->layers = (double) model->layers;
  m->heads = (double) model->heads / tp;
  m->head_dim = (double) model->head_dim;
  m->element_bytes = (double) derived.bytes_per_element;
  m->kv_bytes_per_token = ema_step_model_kv_bytes_per_token_per_gpu(step) / m->layers;
  m->flop_rate = server->gpu.matrix_flops * server->gpu.matrix_efficiency;
  m->byte_rate = server->gpu.hbm_bandwidth * server->gpu.hbm_efficiency;
  m->kv_rate = m->byte_rate * server->gpu.kv_efficiency;
  m->copy_rate = server->gpu.local_copy_bandwidth;
  m->kernel_s = (double) server->gpu.kernel_overhead * 1e-9;
  m->partial_slowdown = server->gpu.offload_partial_slowdown;
  m->shared_port = server->topology != EMA_TOPOLOGY_DIRECT;
  m->link_bandwidth = server->link.bandwidth;
  m->link_latency_s = (double) server->link.latency * 1e-9;
  m->path_s = server->offload.path == EMA_OFFLOAD_PATH_COPY
                  ? (double) server->link.copy_fixed_cost * 1e-9
                  : 0;
  m->ranks = 1;
  return m;
}

EmaOffloadModel *ema_offload_model_new_group(const EmaLlmSpec *model, const EmaServerSpec *server,
                                             guint tp, GError **error) {
  EmaOffloadModel *m = ema_offload_model_new(model, server, tp, error);
  if (m)
    m->ranks = tp;
  return m;
}

void ema_offload_model_free(EmaOffloadModel *offload) {
  g_free(offload);
}

double ema_offload_kv_bytes_per_token(const EmaOffloadModel *offload) {
  g_return_val_if_fail(offload != NULL, 0);
  return offload->layers * offload->kv_bytes_per_token;
}

/* S_j and R_j: one layer's bytes to and from a lender. */
static double sent_bytes(const EmaOffloadModel *m, const EmaOffloadShare *share) {
  return (double) share->seqs * m->heads * m->head_dim * m->element_bytes +
         (double) share->new_kv * m->kv_bytes_per_token;
}

static double returned_bytes(const EmaOffloadModel *m, const EmaOffloadShare *share) {
  return (double) share->seqs * m->heads * (m->head_dim + 1) * FP32_BYTES;
}

/* t_att_j on an idle lender: the partial attention over its share, one
 * layer (of every rank of a group: t shards' reads and FLOPs, one kernel). */
static double alone_s(const EmaOffloadModel *m, const EmaOffloadShare *share) {
  double memory = m->ranks * share->context * m->kv_bytes_per_token / m->kv_rate;
  double compute = m->ranks * 4.0 * m->heads * m->head_dim * share->context / m->flop_rate;
  return m->kernel_s + MAX(memory, compute) +
         m->ranks * (double) share->new_kv * m->kv_bytes_per_token / m->byte_rate;
}

double ema_offload_partial_alone_s(const EmaOffloadModel *offload, const EmaOffloadShare *share) {
  g_return_val_if_fail(offload != NULL && share != NULL, 0);
  return share->seqs > 0 ? alone_s(offload, share) : 0;
}

/* t_att_j as the lender runs it: beside a busy lender's steps, or as the
 * execution model has it (its wait and run scale, offexec.h). */
static double attend_s(const EmaOffloadModel *m, const EmaOffloadShare *share) {
  if (share->run_scale > 0)
    return share->wait_s + alone_s(m, share) * share->run_scale;
  return alone_s(m, share) * (share->lender_busy ? 1 + m->partial_slowdown : 1);
}

/* The bytes that set a message's time on the link: its own on a link per
 * pair (a group's ranks each over their own); on a shared port the rank's
 * messages to every lender (TOTAL) or the lender's port carrying every
 * rank's (t x ONE), whichever is more. */
static double port_bytes(const EmaOffloadModel *m, double one, double total) {
  return m->shared_port ? MAX(total, m->ranks * one) : one;
}

EmaTime ema_offload_step_time(const EmaOffloadModel *offload, const EmaStepBreakdown *local,
                              const EmaOffloadShare *shares, guint n_shares, guint64 merged,
                              EmaOffloadBreakdown *out) {
  return ema_offload_step_time_over(offload, local, shares, n_shares, NULL, merged, out);
}

EmaTime ema_offload_step_time_over(const EmaOffloadModel *offload, const EmaStepBreakdown *local,
                                   const EmaOffloadShare *shares, guint n_shares,
                                   const guint64 *lenders, guint64 merged,
                                   EmaOffloadBreakdown *out) {
  const EmaOffloadModel *m = offload;
  EmaOffloadBreakdown r = {0};
  double sent_total = 0, returned_total = 0, parts = 0;
  guint64 largest = 0, sum = 0;

  g_return_val_if_fail(m != NULL && local != NULL && (shares != NULL || n_shares == 0), 0);
  /* (LENDERS NULL: the walks take every share) */
  EMA_BITS_FOR_EACH (lenders, n_shares, j) {
    g_return_val_if_fail(shares[j].new_kv <= shares[j].seqs && shares[j].context >= 0, 0);
    g_return_val_if_fail(shares[j].seqs > 0 || shares[j].context == 0, 0);
    if (shares[j].seqs == 0)
      continue; /* a lender with none of the step: no bytes either way (a rack's most GPUs) */
    sent_total += sent_bytes(m, &shares[j]);
    returned_total += returned_bytes(m, &shares[j]);
    largest = MAX(largest, shares[j].seqs);
    sum += shares[j].seqs;
  }
  g_return_val_if_fail(merged >= largest && merged <= sum, 0);

  EMA_BITS_FOR_EACH (lenders, n_shares, j) {
    double send, attend, back;
    if (shares[j].seqs == 0)
      continue;
    send = m->link_latency_s + m->path_s +
           port_bytes(m, sent_bytes(m, &shares[j]), sent_total) / m->link_bandwidth;
    attend = attend_s(m, &shares[j]);
    back = m->link_latency_s + m->path_s +
           port_bytes(m, returned_bytes(m, &shares[j]), returned_total) / m->link_bandwidth;
    if (send + attend + back > r.layer_remote_s) {
      r.layer_remote_s = send + attend + back;
      r.layer_send_s = send;
      r.layer_attend_s = attend;
      r.layer_return_s = back;
    }
  }
  if (merged > 0) {
    parts = (double) sum + (double) merged;
    r.layer_wait_s = MAX(0.0, r.layer_remote_s - local->layer_kv_read_s);
    r.layer_merge_s = m->heads *
                      (parts * (m->head_dim + 1) * FP32_BYTES +
                       (double) merged * m->head_dim * m->element_bytes) /
                      m->byte_rate;
  }
  r.bytes_sent = m->layers * sent_total;
  r.bytes_returned = m->layers * returned_total;
  r.added = (EmaTime) ema_llround(m->layers * (r.layer_wait_s + r.layer_merge_s) * 1e9);
  r.time = local->time + r.added;
  if (out)
    *out = r;
  return r.time;
}

double ema_offload_lender_share(const EmaOffloadModel *offload, const EmaOffloadShare *share,
                                EmaTime borrower_step) {
  g_return_val_if_fail(offload != NULL && share != NULL && borrower_step > 0, 0);
  return offload->ranks * offload->layers * share->context * offload->kv_bytes_per_token /
         ((double) borrower_step * 1e-9 * offload->copy_rate);
}

double ema_offload_max_context(const EmaOffloadModel *offload, double allowance,
                               EmaTime borrower_step) {
  g_return_val_if_fail(offload != NULL && borrower_step > 0, 0);
  g_return_val_if_fail(allowance >= 0 && allowance <= 1, 0);
  return allowance * offload->copy_rate * (double) borrower_step * 1e-9 /
         (offload->layers * offload->kv_bytes_per_token * offload->ranks);
}
