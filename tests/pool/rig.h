/* rig.h: a serving run built piece by piece for the pool tests: the same
 * wiring as sim/run/serving.c (a step model, the pool's KV memory and an engine
 * per tenant, idle GPUs lending their share, the policies' preemption
 * choice), without output files, so that a test can reach the pool while
 * the run goes: check the ledger every PERIOD (ema_pool_check) and inject
 * faults (every GPU suddenly reclaims everything it lends) at set times. */
#pragma once

#include "ema/serving/engine.h"
#include "ema/run/experiment.h"
#include "ema/pool/pool.h"

typedef struct _Rig Rig;

typedef struct {
  Rig *rig;
  const EmaTenantSpec *spec;
  EmaTenantPlan plan;
  EmaStepModel *step_model;
  EmaKvMemory memory;
  EmaEngineConfig config;
  EmaEngine *engine;
  guint gpu;
} RigTenant;

typedef struct {
  EmaEvent event;
  Rig *rig;
  EmaTime at;
  guint64 lent_before; /* slices lent over the server when it struck */
  gboolean fired;
} RigFault;

struct _Rig {
  const EmaExperiment *experiment;
  EmaSim *sim;
  EmaPool *pool;
  GArray *tenants; /* RigTenant */
  EmaTime check_period;
  EmaEvent check_event;
  guint64 checks;
  GPtrArray *faults; /* RigFault * */
};

/* Build EXPERIMENT's run (not started). NULL with an error. */
Rig *rig_new(const EmaExperiment *experiment, GError **error);
void rig_free(Rig *rig);
G_DEFINE_AUTOPTR_CLEANUP_FUNC(Rig, rig_free)

/* Check the ledger every PERIOD while the run goes (a failure fails it). */
void rig_check_every(Rig *rig, EmaTime period);
/* At AT, every GPU reclaims everything it lends (ema_pool_reclaim_everything). */
RigFault *rig_fault_at(Rig *rig, EmaTime at);
/* Start the engines and run to the end (or the experiment's duration); the
 * ledger is checked once more at the end. */
gboolean rig_run(Rig *rig, GError **error);

/* Requests over all tenants. */
guint64 rig_completed(const Rig *rig);
guint64 rig_rejected(const Rig *rig);
guint64 rig_unfinished(const Rig *rig);
guint64 rig_preemptions(const Rig *rig);
/* Requests the experiment's traces hold (the sum of their `requests`). */
guint64 rig_expected_requests(const Rig *rig);
