/* fabric.h: the data-movement model of one server. Data moves as flows over
 * shared resources (link directions, link duplex limits, each GPU's HBM,
 * each GPU's host link). Concurrent flows share resources by max-min
 * fairness and are re-rated whenever a flow starts or finishes. A flow first
 * spends its fixed cost (no bandwidth used), then moves its bytes at the rate
 * it is given. See fabric.c for the equations.
 *
 * Flows are intrusive like events: the caller owns the EmaFlow storage and
 * keeps it alive until the done callback has run or the flow is aborted. */
#pragma once

#include <glib.h>

#include "ema/core/event.h"
#include "ema/hw/hwmodel.h"

G_BEGIN_DECLS

/* Errors of ema_fabric_check_flow(). */
#define EMA_FABRIC_ERROR (ema_fabric_error_quark())
GQuark ema_fabric_error_quark(void);

typedef enum {
  EMA_FABRIC_ERROR_INVALID_FLOW, /* bad endpoints, or the server gives the path no bandwidth */
} EmaFabricError;

/* An endpoint: a GPU index (0..gpus-1) or the host. */
#define EMA_ENDPOINT_HOST (-1)

typedef enum {
  EMA_FLOW_COPY, /* copy-engine copy SRC -> DST (GPU or host, either side) */
  EMA_FLOW_READ, /* kernel on GPU DST streams memory that lives on GPU SRC
                    (SRC == DST: local HBM; otherwise a direct peer load) */
} EmaFlowKind;

typedef struct _EmaFabric EmaFabric;
typedef struct _EmaFlow EmaFlow;

typedef void (*EmaFlowDoneFunc)(EmaFabric *fabric, EmaFlow *flow, gpointer user_data);

/* Flow state; fields are private to the fabric except where marked. */
struct _EmaFlow {
  /* public, read-only */
  EmaFlowKind kind;
  gint src, dst;
  guint64 bytes;
  EmaTime started;  /* when ema_fabric_start() was called */
  EmaTime finished; /* when the last byte arrived (valid in the done callback) */
  double rate;      /* current rate in B/s (0 while in the fixed-cost phase) */

  /* private */
  EmaFabric *fabric;
  EmaEvent event;
  EmaFlowDoneFunc done;
  gpointer user_data;
  double remaining; /* bytes still to move */
  EmaTime rated_at; /* time of the last rate change */
  double cap;       /* per-flow rate limit (B/s) */
  guint n_uses;
  guint use_resource[6];
  double use_weight[6];
  gboolean transferring;
  gint active_index; /* index in the fabric's active array, -1 if none */
  gint order;        /* scratch for the max-min solver */
};

EmaFabric *ema_fabric_new(EmaSim *sim, const EmaServerSpec *server);
void ema_fabric_free(EmaFabric *fabric);
G_DEFINE_AUTOPTR_CLEANUP_FUNC(EmaFabric, ema_fabric_free)

/* Check that a flow of KIND between SRC and DST is possible on this server
 * (valid endpoints; READ needs a GPU on both ends). */
gboolean ema_fabric_check_flow(const EmaFabric *fabric, EmaFlowKind kind, gint src, gint dst,
                               GError **error);

/* Start FLOW now. DONE runs (from the event loop) when the last byte has
 * arrived. Endpoints must have passed ema_fabric_check_flow(). */
void ema_fabric_start(EmaFabric *fabric, EmaFlow *flow, EmaFlowKind kind, gint src, gint dst,
                      guint64 bytes, EmaFlowDoneFunc done, gpointer user_data);
/* Stop FLOW early without calling its done function. */
void ema_fabric_abort(EmaFabric *fabric, EmaFlow *flow);

/* The time FLOW would take alone on an idle server (fixed cost + bytes at
 * its uncontended rate), in ns. */
EmaTime ema_fabric_solo_time(const EmaFabric *fabric, EmaFlowKind kind, gint src, gint dst,
                             guint64 bytes);

/* Number of flows currently moving bytes or in their fixed-cost phase. */
guint ema_fabric_active_flows(const EmaFabric *fabric);

G_END_DECLS
