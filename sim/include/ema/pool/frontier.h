/* frontier.h: the transparency frontier: how much of a decode step's KV
 * can live on a peer before the step gets slower than all-local by more
 * than a tolerance, for a model on one GPU of a server, as a function of
 * batch and context. It evaluates the pool's own remote-step formula
 * (ema_remote_step_seconds) with the remote KV on one lender, for prefetch
 * (the layer-ahead rule for the group size, depth 2) and for direct loads,
 * both without interference, and for prefetch once more with its copies'
 * landing charged to the GPU's HBM (ema_remote_step_seconds_one_lender).
 * What pulls cost the lender is not part of it. For attention offload
 * (hw/offload.h) the share is that of every sequence's KV on the lender,
 * its attention computed there, within the tolerance for the borrower's
 * step and with the lender giving at most the tolerance of its HBM time
 * (its own steps then slow by gpu.offload_slowdown at that share; it serves
 * its own requests, so the partials take gpu.offload_partial_slowdown
 * longer than alone). */
#pragma once

#include <glib.h>

#include "ema/hw/hwmodel.h"
#include "ema/hw/llm.h"

G_BEGIN_DECLS

typedef struct {
  guint batch;                  /* sequences decoding */
  guint context;                /* tokens of context each */
  double local_step_s;          /* all-local step time */
  double prefetch_share;        /* largest remote share within the tolerance, prefetched */
  double direct_share;          /* the same with direct loads */
  double prefetch_landed_share; /* prefetched, its copies charged to this GPU's HBM as they land
                                   (gpu.interference_incoming, as the pool charges a step) */
  double offload_share;         /* offloaded, the lender's reads within the tolerance of its
                                   HBM time too */
} EmaFrontierPoint;

/* The share of a GPU's HBM a frontier's model may fill with its weights: vLLM's default
 * gpu_memory_utilization. */
#define EMA_FRONTIER_MEMORY_UTILIZATION 0.9

/* Whether MODEL's weights fit one GPU of SERVER (the frontier is at TP 1) within
 * EMA_FRONTIER_MEMORY_UTILIZATION of its HBM; FALSE with EMA_CONFIG_ERROR_INVALID saying by how
 * much they do not. */
gboolean ema_frontier_fits(const EmaLlmSpec *model, const EmaServerSpec *server, GError **error);

/* One point; shares to 0.1%. FALSE when MODEL does not fit SERVER's GPU (ema_frontier_fits). */
gboolean ema_frontier_point(const EmaLlmSpec *model, const EmaServerSpec *server, guint batch,
                            guint context, double tolerance, EmaFrontierPoint *point,
                            GError **error);

G_END_DECLS
