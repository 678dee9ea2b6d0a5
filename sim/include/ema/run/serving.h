/* serving.h: runs the serving workload of an experiment: one engine per
 * tenant on its GPU (or tensor-parallel group), its KV blocks in the
 * elastic memory pool (pool.h) run by the experiment's policies (with the
 * default, static, no GPU lends memory to another), fed by the tenant's trace, timed by the
 * step-time model. Metrics observers collect the figures; a sampler writes timeline.csv every
 * sample_period. The run ends when every trace is exhausted and every request has finished, or at
 * the experiment's duration. */
#pragma once

#include <glib.h>

#include "ema/run/experiment.h"
#include "ema/serving/metrics.h"
#include "ema/pool/pool.h"
#include "ema/serving/tenant.h"

G_BEGIN_DECLS

typedef struct {
  const EmaTenantSpec *spec; /* borrowed from the experiment */
  EmaTenantPlan plan;
  EmaTenantMetrics *metrics;
  guint64 arrived;           /* requests the trace delivered */
  guint64 rejected;          /* of which never fit in the KV cache or were over max_model_len */
  guint64 rejected_too_long; /* of those, over max_model_len */
  guint64 outputs_raised;    /* asked for 0 output tokens, run with 1 */
  guint64 trace_skipped;     /* rows its trace's reader left out (BurstGPT's failed requests) */
  EmaPrefixCacheStats prefix;
  guint64 unfinished; /* still waiting or running at the end */
  guint64 timed_out;  /* whose client gave up first (trace.timeout): aborted, or finished past it */
  guint64 preemptions;         /* all preemptions, finished requests or not */
  guint64 preemptions_swapped; /* of those, the ones that kept the KV (swapped or parked) */
  EmaTime slowed_by_peers;     /* step time peers' traffic added (ema_pool_slowed_by_peers) */
  /* the most slices its GPUs had borrowed from peers / lent to peers at
   * one timeline sample (summed over a TP group) */
  guint64 peak_slices_borrowed, peak_slices_lent;
  /* the sample at which its borrowed slices most exceeded the remote room its
   * prefetch plan admitted (the pool view's blocks_room or blocks_total beyond
   * its own region, in slices): those two there (tp = 1 only; else 0) */
  guint64 idle_borrowed_slices, idle_admitted_slices;
} EmaTenantResult;

/* A GPU of the server that runs no tenant (nor a tenant's TP group): under a sharing policy it
 * lends idle_gpu_memory of its HBM (ema_serving_add_idle_gpus). */
typedef struct {
  guint gpu;
  guint64 slices;           /* what it may lend: idle_gpu_memory of its HBM, in slices */
  guint64 peak_slices_lent; /* the most it had lent at one timeline sample */
} EmaIdleGpuResult;

typedef struct {
  GPtrArray *tenants; /* EmaTenantResult *, in the experiment's order */
  GArray *idle_gpus;  /* EmaIdleGpuResult, in GPU order; empty where every GPU runs a tenant */
  /* the most the idle GPUs had lent together at one timeline sample */
  guint64 idle_peak_slices_lent;
  EmaPoolStats pool; /* what the memory pool did */
  guint64 events;
  EmaTime simulated; /* time of the last event */
  double wall_s;
  EmaTime timeline_capped_at; /* the sample time timeline.csv stopped at
                               * (timeline_max_rows reached: the samples
                               * after it count in the metrics, but are not
                               * written); -1: none */
  guint64 timeline_rows;      /* the rows timeline.csv holds */
  EmaTime events_capped_at;   /* the time of the first pool event events.csv did not
                               * write (events_max_rows reached); -1: none */
  EmaTime steps_capped_at;    /* the end of the first step steps.csv did not write
                               * (steps_max_rows reached); -1: none */
} EmaServingReport;

/* A warning, before the run, that timeline.csv may reach its cap (where
 * the experiment's duration bounds the samples), NULL when it will not or
 * cannot be known. */
char *ema_serving_timeline_warning(const EmaExperiment *experiment);

/* Run EXPERIMENT's tenants. OUT_DIR receives requests.csv (when the
 * experiment asks for it) and timeline.csv; NULL writes no files. PROGRESS,
 * when TRUE, redraws a progress line on stderr about twice a second. */
EmaServingReport *ema_serving_run(const EmaExperiment *experiment, const char *out_dir,
                                  gboolean progress, GError **error);
void ema_serving_report_free(EmaServingReport *report);
G_DEFINE_AUTOPTR_CLEANUP_FUNC(EmaServingReport, ema_serving_report_free)

/* The experiment's policy.preempt over a tenant's own engine.preempt:
 * CONFIG (a tenant's engine configuration, from ema_tenant_engine_config)
 * keeps its preempt mode for EMA_PREEMPT_CHOICE_ENGINE, and takes
 * EMA_PREEMPT_RECOMPUTE for recompute, EMA_PREEMPT_SWAP for swap-host
 * and swap-peer (with swap-peer the pool's KV memory parks the blocks on
 * peers, or the host, and times the copies) and EMA_PREEMPT_CHEAPER for
 * cheaper (the same memory, which prices the parking). ema_serving_run applies it to
 * every tenant; a harness that wires a run by hand (tests/pool/rig.c) calls
 * it to make the same engines. */
void ema_serving_apply_preempt_choice(const EmaExperiment *experiment, EmaEngineConfig *config);

/* Rank RANK's share of TOTAL slices of a group of RANKS GPUs in timeline.csv:
 * the shares differ by at most one and add up to TOTAL. */
guint64 ema_serving_rank_share(guint64 total, guint rank, guint ranks);

/* The GPUs of EXPERIMENT's server that no tenant (nor a tenant's TP group)
 * runs on, in GPU order (guint): the idle GPUs. */
GArray *ema_serving_idle_gpus(const EmaExperiment *experiment);

/* Make every idle GPU of EXPERIMENT's server (ema_serving_idle_gpus) an
 * idle lender in POOL, lending idle_gpu_memory of its HBM
 * (ema_pool_add_idle_gpu). ema_serving_run calls it once the tenants are in
 * the pool and before ema_pool_start; so does tests/pool/rig.c. */
void ema_serving_add_idle_gpus(const EmaExperiment *experiment, EmaPool *pool);

G_END_DECLS
