/* tenant.h: the serving part of an experiment file. A tenant is one LLM
 * serving instance (a model, a request stream and engine settings) placed on
 * one GPU of the server or on a tensor-parallel group of tp consecutive GPUs
 * starting at `gpu`. This header holds the structs the tenant keys bind to,
 * their parameter tables, and the two things built from them: the request
 * source of a tenant (ema_trace_spec_open) and the sizing of its KV-cache
 * pool (ema_tenant_plan).
 *
 * A trace is either a file (`file:`, read by the readers in traces/, with
 * `arrivals` only for the length-only format) or synthetic (`arrivals:` a
 * process, `prompt:`/`output:` length distributions, ended by `requests`
 * or `duration`). Transformations apply in a fixed order: window (start,
 * duration for files), rate_scale, split (a round-robin router's share),
 * requests (limit), offset.
 *
 * KV pool sizing (vLLM's rule): on each GPU of the group,
 *   kv_bytes = hbm_capacity x gpu_memory_utilization
 *              - weights / tp - activation_reserve - profile's fixed_reserve
 *   slices   = floor(kv_bytes / 2 MiB)        (the elastic pool's unit)
 *   blocks   = floor(slices x 2 MiB / (16 x KV bytes of a token on one GPU))
 * activation_reserve, when not given, is derived as the peak activation
 * memory of a step of max_num_batched_tokens tokens plus the logits of
 * max_num_seqs sequences (formula in tenant.c); vLLM measures this peak by a
 * profiling run, so the derived value is an estimate. fixed_reserve (the
 * engine profile's) is what vLLM's profiling finds beyond that: CUDA
 * context, non-torch allocations, the sampler's buffers. num_gpu_blocks,
 * when given, replaces the sizing: kv_bytes = num_gpu_blocks x block bytes,
 * rounded up to whole slices (so the engine may see a block or two more
 * when a block is smaller than a slice). */
#pragma once

#include <glib.h>

#include "ema/serving/engine.h"
#include "ema/hw/hwmodel.h"
#include "ema/hw/llm.h"
#include "ema/core/params.h"
#include "ema/hw/steptime.h"
#include "ema/traces/trace.h"

G_BEGIN_DECLS

typedef enum {
  EMA_LENGTH_NONE, /* the length comes from the trace file */
  EMA_LENGTH_FIXED,
  EMA_LENGTH_UNIFORM,
  EMA_LENGTH_LOGNORMAL,
  EMA_LENGTH_RESAMPLE,
} EmaLengthKind;

/* A token-length distribution (prompt or output). */
typedef struct {
  EmaLengthKind dist;
  gint64 tokens; /* fixed */
  gint64 min;    /* bounds of every draw (uniform: the range) */
  gint64 max;    /* 0 = no upper bound */
  double median; /* lognormal: median, or */
  double mean;   /* lognormal: mean (give one of them) */
  double sigma;  /* lognormal: standard deviation of the log */
  char *file;    /* resample: a length-only CSV, relative to the experiment file */
} EmaLengthSpec;

typedef enum {
  EMA_ARRIVALS_FILE, /* the arrival times in the trace file */
  EMA_ARRIVALS_POISSON,
  EMA_ARRIVALS_GAMMA,
  EMA_ARRIVALS_ONOFF,
  EMA_ARRIVALS_DIURNAL,
  EMA_ARRIVALS_PHASES,
} EmaArrivalsKind;

/* One phase of `arrivals: phases`. */
typedef struct {
  gint64 duration; /* ns */
  double rate;     /* req/s */
} EmaPhaseSpec;

typedef struct {
  char *file;            /* a trace file, relative to the experiment file */
  EmaTraceFormat format; /* auto: sniffed */
  gboolean keep_failed;  /* BurstGPT: keep failed requests */
  gboolean cycle;        /* lengths format: start again at the end */
  EmaArrivalsKind arrivals;
  double rate;     /* poisson, gamma: req/s */
  double cv;       /* gamma: coefficient of variation of inter-arrival times */
  double rate_on;  /* onoff */
  double rate_off; /* onoff */
  gint64 mean_on;  /* onoff, ns */
  gint64 mean_off; /* onoff, ns */
  double rate_min; /* diurnal */
  double rate_max; /* diurnal */
  gint64 period;   /* diurnal, ns */
  GArray *phases;  /* phases: EmaPhaseSpec */
  EmaLengthSpec prompt, output;
  gint64 start;       /* window start (files), ns */
  gint64 duration;    /* window length (files) or end of a synthetic stream; 0 = none */
  double rate_scale;  /* arrivals x this rate */
  gint64 split;       /* keep one request in split (round robin); 0 = all */
  gint64 split_index; /* which one: 0 .. split-1 */
  gint64 requests;    /* at most this many; 0 = no limit */
  gint64 offset;      /* added to every arrival, ns */
  gint64 concurrency; /* closed loop: this many clients (0: open loop, the arrival times) */
  gint64 timeout; /* the clients give up on a request this long after sending it, ns; 0: never */
  gint64 shared_prefix_tokens; /* every prompt starts with one of ... (0: none) */
  gint64 shared_prefix_groups; /* ... this many distinct prefixes of that length */
} EmaTraceSpec;

/* Whether a tenant's engine splits prompts into chunks within its token budget. */
typedef enum {
  EMA_CHUNKED_PREFILL_AUTO, /* as the engine profile's version does by max_model_len */
  EMA_CHUNKED_PREFILL_ON,
  EMA_CHUNKED_PREFILL_OFF,
} EmaChunkedPrefill;

/* A pair of vLLM batch limits (max_num_seqs, max_num_batched_tokens); 0: not given. */
typedef struct {
  gint64 seqs, tokens;
} EmaBatchLimits;

/* An engine profile (hwmodels/engines/<name>.yaml): what one vLLM version
 * does and costs beyond its knobs. The numbers are measured; each file says
 * on what. */
typedef struct {
  char *name;
  char *versions; /* the engine versions the profile stands for */
  EmaSchedulerKind scheduler;
  /* the LM head runs on the last token of every request in a step, prefill chunks that do not
   * finish their prompt included (vLLM V1's model runner samples them and drops the tokens);
   * FALSE: only on the requests that sample (V0) */
  gboolean logits_every_request;
  /* The engine's CPU time per step (engine.h): step_cpu_cost + step_cpu_cost_per_rank (tp - 1)
   * + step_cpu_cost_per_seq x the step's scheduled requests, and for a group (tp > 1)
   * step_cpu_cost_group + step_cpu_cost_per_seq_group x the requests; added to the GPU time,
   * or under async scheduling (cpu_overlap) hidden behind it up to the longer of the two. */
  gint64 step_cpu_cost;               /* ns per step: scheduling, input preparation, sampling */
  gint64 step_cpu_cost_per_rank;      /* ns per step per TP rank beyond the first (sync) */
  gint64 step_cpu_cost_per_seq;       /* ns per step per scheduled request (inputs, outputs) */
  gint64 step_cpu_cost_group;         /* ns per step of a group: inputs handed to the workers */
  gint64 step_cpu_cost_per_seq_group; /* ns per step per request of a group: its share of that */
  gboolean cpu_overlap;               /* async scheduling: the CPU work overlaps the GPU's */
  /* CPU time per step, and per scheduled request, of processing the step's outputs beside the
   * next step's GPU work (V0's async output processing): paid only where it outlasts the GPU */
  gint64 output_cpu_cost, output_cpu_cost_per_seq;
  /* The host's time per decoder layer to run a forward pass eagerly (PyTorch's dispatch and the
   * layer's kernel and collective launches, one by one): a step not replayed from a CUDA graph
   * takes at least the layers' sum on its GPU side. 0: not measured (enforce_eager refused). */
  gint64 eager_layer_cpu_cost;
  gint64 cuda_graph_max_batch; /* decode-only steps of at most this many requests replay a
                                * CUDA graph (0: none, every step eager) */
  gint64 request_cpu_cost;     /* ns from a request's arrival to its being schedulable */
  guint64 fixed_reserve;       /* bytes per GPU outside weights, activations and KV */
  /* chunked prefill by default for a max_model_len above this (vLLM 0.6's V0: 32768; 0: off by
   * default), and its default max_num_batched_tokens; under the v0 scheduler a tenant with
   * chunked prefill takes the v1 one (V0's chunked-prefill scheduler: running requests first,
   * prefill chunks within the token budget) */
  gint64 chunked_prefill_above_len;
  gint64 chunked_max_num_batched_tokens;
  /* max_num_seqs and max_num_batched_tokens where an experiment leaves them out, as this
   * version's `vllm serve` picks them: the large_gpu pair on a GPU of at least 70 GiB that is
   * not an A100 (vLLM's EngineArgs batch defaults; 0: the default pair), the default pair on
   * others; under the v0 scheduler (no chunked prefill) the token budget is at least
   * max_model_len. */
  EmaBatchLimits default_limits, large_gpu_limits;
  double watermark;                /* the admission watermark this engine keeps (V1: none) */
  gboolean default_prefix_caching; /* engine.prefix_caching where an experiment leaves it out */
  char *source;                    /* what the numbers were fitted on */
  /* the server (hwmodels/servers) whose host the CPU costs were fitted on: on another server
   * they scale by the two hosts' cpu_speed (NULL: none named, they hold on any host) */
  char *fitted_host;
  char *fitted_on; /* the runs (GPU, TP, engine version) the fit used */
  char *fidelity;  /* the measured error of this profile with the step model */
} EmaEngineProfile;

extern const EmaParamTable ema_engine_profile_params;
/* PROFILE's costs (ema_engine_step_duration) for a tenant of TP ranks whose model has LAYERS
 * decoder layers, every step eager if ENFORCE_EAGER (vLLM's --enforce-eager); FALSE with
 * EMA_CONFIG_ERROR_INVALID where ENFORCE_EAGER asks for an eager cost the profile does not
 * have. */
gboolean ema_engine_profile_costs(const EmaEngineProfile *profile, guint tp, guint layers,
                                  gboolean enforce_eager, EmaEngineCosts *costs, GError **error);
/* COSTS' times on a host FACTOR times slower than the one they were fitted on (the fitted
 * host's cpu_speed over this one's: every CPU time, the eager launches included, takes it). */
void ema_engine_costs_on_host(EmaEngineCosts *costs, double factor);
/* The profile names that EMA_ENGINE_PATH and hwmodels/engines hold, sorted. */
GPtrArray *ema_engine_profile_list(void);
/* Load the profile NAME (EMA_ENGINE_PATH, then hwmodels/engines). */
EmaEngineProfile *ema_engine_profile_load(const char *name, GError **error);
void ema_engine_profile_free(EmaEngineProfile *profile);
G_DEFINE_AUTOPTR_CLEANUP_FUNC(EmaEngineProfile, ema_engine_profile_free)

typedef struct {
  char *profile;                 /* engine profile name */
  gint64 max_num_seqs;           /* absent: the profile's default on the GPU (resolved below) */
  gint64 max_num_batched_tokens; /* absent: likewise */
  double gpu_memory_utilization;
  guint64 activation_reserve; /* bytes per GPU; 0: absent from the file, derived */
  double watermark;           /* fraction of the KV blocks admission leaves free */
  EmaPreemptMode preempt;
  gint64 block_size;     /* tokens per KV block */
  gint64 max_model_len;  /* prompt + output at most (absent: the model's max_context) */
  gint64 max_waiting;    /* requests waiting at most before the run stops with an error */
  gint64 num_gpu_blocks; /* KV blocks given directly (0: sized from memory) */
  gboolean prefix_caching;
  gboolean enforce_eager; /* vLLM's --enforce-eager: no CUDA graphs, every step eager */
  /* vLLM's --enable-chunked-prefill: EMA_CHUNKED_PREFILL_AUTO in the file (the profile's
   * default by max_model_len), resolved to on or off by the table's check */
  EmaChunkedPrefill chunked_prefill;
  /* from the profile file, filled by the table's check (not keys of the file) */
  EmaSchedulerKind scheduler;
  gboolean logits_every_request;
  /* the profile's at the tenant's TP degree and model, on the host it was fitted on */
  EmaEngineCosts profile_costs;
  gint64 profile_request_cpu_cost;
  /* those on the server's host (ema_tenant_put_on_host): what the engine pays */
  EmaEngineCosts costs;
  gint64 request_cpu_cost;
  double host_factor; /* the profile's host's cpu_speed over the server's (1: the same) */
  guint64 fixed_reserve;
  /* the profile's batch limits where the file leaves them out, by GPU (see
   * ema_tenant_resolve_batch_defaults) */
  EmaBatchLimits default_limits, large_gpu_limits;
} EmaEngineSpec;

/* A tenant's part in memory sharing, within the experiment's policy. */
typedef struct {
  gboolean lend;     /* its GPUs lend their spare KV memory and hold peers' parked KV */
  gboolean borrow;   /* it borrows from the other GPUs */
  double lend_limit; /* the share of its KV region it lends (and parks peers' KV in) at most */
} EmaTenantSharing;

typedef struct {
  char *name;
  EmaLlmSpec model;
  gint64 gpu; /* first GPU of the group */
  gint64 tp;  /* GPUs in the group */
  EmaTraceSpec trace;
  EmaEngineSpec engine;
  EmaTenantSharing sharing;
} EmaTenantSpec;

extern const EmaParamTable ema_tenant_params;

/* The request source of TRACE; SEED seeds its random streams (derive one
 * per tenant). Errors: the trace readers' and generators' errors. */
EmaTraceSource *ema_trace_spec_open(const EmaTraceSpec *trace, guint64 seed, GError **error);
/* FORMAT's files hold token counts only (lengths, vllm-bench): their arrivals are drawn
 * (arrivals:) or all at 0, where the other formats' files hold their own times. */
gboolean ema_trace_format_counts_only(EmaTraceFormat format);
/* Whether TRACE's file holds a request arriving at AT or later, in the file's own time (before
 * its start window, rate_scale and the rest): read up to the first such request, arrivals drawn
 * from SEED (as ema_trace_spec_open's) where its format draws them; a cycled file of drawn
 * arrivals always does. Into *REACHES, and *LAST: where it does not, its last arrival (-1: it
 * holds no request). A file of its own times is read once per process as far as asked (a
 * sweep loads each point more than once). FALSE with the reader's error where it fails. */
gboolean ema_trace_spec_reaches(const EmaTraceSpec *trace, guint64 seed, EmaTime at,
                                gboolean *reaches, EmaTime *last, GError **error);

/* What a tenant gets on each GPU of its group. */
typedef struct {
  guint64 weight_bytes;       /* resident weights per GPU */
  guint64 activation_reserve; /* bytes per GPU */
  guint64 block_bytes;        /* one 16-token KV block on one GPU */
  guint64 kv_bytes;           /* the KV region per GPU */
  guint64 slices;             /* the KV region in whole 2 MiB slices (policy.h) */
  guint64 blocks;             /* KV blocks the slices hold (the same on every GPU of the group) */
  guint64 watermark_blocks;
} EmaTenantPlan;

/* Size TENANT's memory on SERVER. FALSE with a message that says what does
 * not fit when the weights and the reserve leave no room for one request. */
gboolean ema_tenant_plan(const EmaTenantSpec *tenant, const EmaServerSpec *server,
                         EmaTenantPlan *plan, GError **error);

/* The activation reserve derived for TENANT when the file gives none. */
guint64 ema_tenant_default_activation_reserve(const EmaTenantSpec *tenant);
/* Whether MODEL's weights at TP leave SERVER's GPUs room for any KV cache, as ema_tenant_plan
 * sizes a tenant's memory with an engine looser than any a run takes (all of the HBM, no
 * reserve, blocks of one token): only a model no engine could hold is refused, with its
 * "does not fit" error (the offline checks: step-time, compare-steps, compare-static). */
gboolean ema_tenant_model_fits(const EmaLlmSpec *model, const EmaServerSpec *server, guint tp,
                               GError **error);

/* Fill TENANT's max_num_seqs and max_num_batched_tokens that its file left out from its engine
 * profile's defaults for GPU (EmaEngineProfile); the experiment calls it once the server is
 * known, before ema_tenant_plan. */
void ema_tenant_resolve_batch_defaults(EmaTenantSpec *tenant, const EmaGpuSpec *gpu);
/* TENANT's engine costs and request CPU cost on a host FACTOR times slower than its profile's
 * (ema_engine_costs_on_host); may be called again (it starts from the profile's). */
void ema_tenant_put_on_host(EmaTenantSpec *tenant, double factor);
/* The engine configuration of TENANT with PLAN on SERVER. */
void ema_tenant_engine_config(const EmaTenantSpec *tenant, const EmaTenantPlan *plan,
                              const EmaServerSpec *server, EmaEngineConfig *config);

G_END_DECLS
