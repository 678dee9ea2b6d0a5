/* experiment.h: an experiment file, bound to structs. An experiment names a
 * server (a hardware model) and a workload: "ops" (micro-operations such
 * as copies and streaming reads, each with an optional expected time or
 * bandwidth) and/or "decode" scenarios (one decode step with some of its
 * KV remote, timed by the step-time and pool models), or else a list of
 * serving tenants (tenant.h), one per GPU or tensor-parallel group. Loading goes: YAML file ->
 * expand names (server: h200x2 -> the model's tree) -> apply --set overrides
 * -> bind through the parameter tables -> cross-checks (endpoints exist). */
#pragma once

#include <glib.h>

#include "ema/hw/fabric.h"
#include "ema/hw/hwmodel.h"
#include "ema/hw/llm.h"
#include "ema/core/params.h"
#include "ema/pool/policyspec.h"
#include "ema/serving/tenant.h"

G_BEGIN_DECLS

/* One transfer inside an op. */
typedef struct {
  EmaFlowKind kind;
  char *src; /* "gpu0".."gpuN-1" or "host" */
  char *dst;
  guint64 bytes;
  /* derived by the checks, not in the file */
  gint src_index, dst_index;
} EmaOpFlowSpec;

/* What an op is expected to measure; a zero field is not checked. */
typedef struct {
  gint64 time;      /* ns */
  double bandwidth; /* B/s, op bytes over op time */
  double tolerance; /* relative; 0 = the experiment's tolerance */
} EmaOpExpect;

typedef struct {
  char *name;
  GArray *flows; /* EmaOpFlowSpec; all start together */
  EmaOpExpect expect;
} EmaOpSpec;

typedef enum {
  EMA_DECODE_SCENARIO_LOCAL,    /* every KV byte local */
  EMA_DECODE_SCENARIO_DIRECT,   /* remote KV loaded by the kernels over the link */
  EMA_DECODE_SCENARIO_PREFETCH, /* remote KV copied ahead into local staging */
} EmaDecodeScenarioMode;

/* How a peer pulls from the GPU's HBM in a decode scenario. */
typedef enum {
  EMA_PEER_PULL_COPY,   /* copy engines (cudaMemcpyPeerAsync issued by the peer) */
  EMA_PEER_PULL_DIRECT, /* the peer's kernel loads the memory over the link (direct loads) */
} EmaPeerPullMode;

/* One decode step to time (the synthetic decode of ema-validate): a batch
 * of sequences with a context each, a share of the KV on a peer. */
typedef struct {
  char *name;
  EmaLlmSpec model;
  gint64 batch;
  gint64 context;
  EmaDecodeScenarioMode mode;
  double remote_fraction;
  gint64 depth;     /* prefetch: layers ahead */
  double peer_pull; /* B/s peers pull from this GPU's HBM meanwhile (interference) */
  EmaPeerPullMode peer_pull_mode;
  EmaOpExpect expect;
} EmaDecodeScenarioSpec;

/* Service-level objectives a completed request meets (ns; 0: none). */
typedef struct {
  gint64 ttft;
  gint64 tpot;
} EmaSloSpec;

/* The largest seed (an experiment's `seed`, `ema-sim run --seed`). */
#define EMA_EXPERIMENT_SEED_MAX G_GINT64_CONSTANT(9200000000000000000)

typedef struct {
  char *name;
  char *summary;
  gint64 seed;
  double tolerance; /* default relative tolerance of expectations */
  EmaServerSpec server;
  GArray *ops;            /* EmaOpSpec; run one after another, each on an idle server */
  GArray *decode;         /* EmaDecodeScenarioSpec; timed after the ops, each alone on gpu0 */
  GArray *tenants;        /* EmaTenantSpec; serve together on the server */
  gint64 duration;        /* serving: stop at this simulated time; 0 = when every trace ends */
  gint64 sample_period;   /* serving: timeline.csv period, ns */
  gint64 timeline_rows;   /* serving: timeline.csv stops after this many rows */
  gboolean requests_csv;  /* serving: write requests.csv */
  gboolean steps_csv;     /* serving: write steps.csv */
  gint64 steps_rows;      /* serving: steps.csv stops after this many rows */
  gboolean events_csv;    /* serving: write events.csv */
  char *events;           /* serving: the pool event kinds events.csv keeps, comma-separated;
                             NULL or "all": every kind */
  int events_tier;        /* serving: 0 a tier event per prefix-tier move, 1 one per step */
  gint64 events_rows;     /* serving: events.csv stops after this many rows */
  EmaPolicySpec policy;   /* serving: memory-sharing policies */
  double idle_gpu_memory; /* serving: share of an idle GPU's HBM it lends */
  EmaSloSpec slo;         /* serving: goodput and SLO attainment against these */
} EmaExperiment;

extern const EmaParamTable ema_experiment_params;

/* The pool event kinds (bit k: EmaPoolEventKind k) that EVENTS names,
 * comma-separated; NULL or "all": every kind. 0 with ERROR when a name is
 * not a kind's, or none is named. */
guint32 ema_experiment_event_kinds(const char *events, GError **error);

/* Load PATH, apply OVERRIDES ("a.b=c", NULL-terminated, may be NULL), bind
 * and check. Returns NULL with a located error. */
EmaExperiment *ema_experiment_load(const char *path, const char *const *overrides, GError **error);
/* The same from a tree already loaded (ema-sim sweep builds one per point):
 * ROOT is edited in place (names expanded, overrides applied). Unlike
 * ema_experiment_load it does not refuse the sweep keys: the caller takes
 * them off first. */
EmaExperiment *ema_experiment_load_tree(EmaNode *root, const char *const *overrides,
                                        GError **error);
/* The top-level keys of sweep files (sweep.h), NULL-terminated; a file with
 * any of them is refused by ema_experiment_load ("this is a sweep file"). */
extern const char *const ema_experiment_sweep_keys[];
/* The top-level key of an experiment that runs under several variants side
 * by side (`ema-sim run`, see compare.h); ema_experiment_load refuses it. */
#define EMA_EXPERIMENT_COMPARE_KEY "compare"
void ema_experiment_free(EmaExperiment *experiment);
G_DEFINE_AUTOPTR_CLEANUP_FUNC(EmaExperiment, ema_experiment_free)

/* TRUE for a serving experiment (tenants), FALSE for an ops one. */
gboolean ema_experiment_is_serving(const EmaExperiment *experiment);

/* What the run will not do that the experiment asks for, or does
 * otherwise than one might read it, one sentence each (a new array, empty
 * when there is nothing to say): a tenant whose engine.num_gpu_blocks is
 * more than its GPU holds; under a borrow policy that acts, or under peer
 * swap, that no memory can move between GPUs (no tenant that may take
 * peers' memory has a GPU beside it that lends, as the tenants' sharing
 * settings and idle_gpu_memory say), else each tenant with tp > 1, named
 * with its GPUs, with how its group shares as its sharing settings let it
 * (it borrows from the GPUs outside it, reading or offloading its shard of
 * the remote KV, parks its preempted KV on peers, lends as a group and
 * holds peers' parked KV, or not); more than EMA_WARN_ALIKE_APART groups
 * that share alike, in one warning naming each. */
GPtrArray *ema_experiment_warnings(const EmaExperiment *experiment);

/* More tenants than this with one warning alike share one line that names
 * each (a rack's tenants or TP groups printed dozens of lines alike): the
 * before-run warnings here, and a run's (output.h). */
#define EMA_WARN_ALIKE_APART 3

/* The experiment as YAML with every value explicit (resolved.yaml). */
char *ema_experiment_to_yaml(const EmaExperiment *experiment);

/* Load a server model file by NAME (see ema_hwmodel_find). */
EmaServerSpec *ema_server_load(const char *name, GError **error);
void ema_server_free(EmaServerSpec *server);
G_DEFINE_AUTOPTR_CLEANUP_FUNC(EmaServerSpec, ema_server_free)

/* How many times slower SERVER's host runs PROFILE's CPU work than the host it was fitted on:
 * the cpu_speed of its fitted_host's server over SERVER's (1 where it names none). FALSE where
 * that server does not load. */
gboolean ema_engine_profile_host_factor(const EmaEngineProfile *profile,
                                        const EmaServerSpec *server, double *factor,
                                        GError **error);

/* Bytes an op moves, as its bandwidth counts them: a local copy counts its
 * bytes twice (read + written), like the calibration measurements. */
guint64 ema_op_bytes(const EmaOpSpec *op);

G_END_DECLS
