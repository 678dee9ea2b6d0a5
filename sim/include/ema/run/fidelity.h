/* fidelity.h: what a serving tenant's simulated times rest on, and how well
 * that combination is known to match real runs.
 *
 * Per tenant: the engine profile (its versions, what its CPU costs were
 * fitted on), the source of each operator class's kernel times (the GPU's
 * profile data sets, or the roofline: ema_step_model_sources()), the
 * profile's warnings (a public data set absent: its operators on the
 * roofline), and the measured error of its combination, GPU x TP degree x
 * weight type x KV type x engine profile, from the validation table
 * hwmodels/fidelity.yaml (written by experiments/groundtruth/run from real
 * runs; EMA_FIDELITY_FILE names another), or "unvalidated" with why. A
 * combination whose profile data is missing is unvalidated whatever the
 * table says: the table's errors were measured with the data present. */
#pragma once

#include <glib.h>
#include <json-glib/json-glib.h>

#include "ema/hw/steptime.h"
#include "ema/run/experiment.h"

G_BEGIN_DECLS

typedef struct {
  /* the engine profile, and its CPU costs as this tenant pays them (tenant.h) */
  char *engine, *engine_versions, *engine_fitted_on;
  const char *scheduler; /* "v1" or "v0" */
  double step_cpu_cost_s, step_cpu_cost_per_seq_s;
  double output_cpu_cost_s, output_cpu_cost_per_seq_s; /* beside the next step's GPU work */
  gboolean cpu_overlap;
  /* the host's time for an eager forward pass (0: not modelled), and the largest decode-only
   * step that replays a CUDA graph instead (0: none) */
  double eager_cpu_cost_s;
  guint64 cuda_graph_max_batch;
  /* the server whose host the profile's CPU costs were fitted on (NULL: none named), and how
   * many times slower this server's host runs them (the costs above include it) */
  char *engine_fitted_host;
  double host_factor;
  /* the combination */
  char *gpu; /* the GPU's profile name (gpu.profile), or its name without one */
  gint64 tp;
  const char *weights;    /* "16-bit", "fp8" or "fp8-block" */
  const char *kv_cache;   /* "16-bit" or "fp8" */
  EmaStepSources sources; /* where each operator class's times come from */
  GPtrArray *warnings;    /* char *: the profile's (data sets absent) */
  /* the validation table's row of this combination, if any and if the data is all there */
  gboolean validated;
  double ttft_error, tpot_error, e2e_error; /* worst |predicted / measured - 1| of its runs */
  gint64 runs;
  char *validation_source;
  char *status; /* one line: "validated: TTFT ..., ..." or "unvalidated: why" */
} EmaFidelity;

/* The fidelity of tenant SPEC on SERVER; NULL with the error of a step
 * model or validation table that does not load. */
EmaFidelity *ema_fidelity_of(const EmaTenantSpec *spec, const EmaServerSpec *server,
                             GError **error);
void ema_fidelity_free(EmaFidelity *fidelity);
G_DEFINE_AUTOPTR_CLEANUP_FUNC(EmaFidelity, ema_fidelity_free)

/* The fidelity as summary.json's tenant member "fidelity" (an object). */
void ema_fidelity_add_json(JsonBuilder *builder, const EmaFidelity *fidelity);

G_END_DECLS
