/* rig.c: the test harness of rig.h. The wiring follows sim/run/serving.c
 * step by step (tenant order, stream names of the seeds) and takes the
 * preemption choice and the idle GPUs' lending from serving.c itself
 * (ema_serving_apply_preempt_choice, ema_serving_add_idle_gpus), so a rig
 * run is the serving run of the same experiment. */
#include "rig.h"

#include "ema/pool/registry.h"
#include "ema/run/serving.h"
#include "ema/serving/tenant.h"
#include "ema/traces/trace.h"

#define CHECK_PRIORITY 100
#define FAULT_PRIORITY 60

static EmaTime step_cost(gpointer data, const EmaStepBatch *batch) {
  RigTenant *tenant = data;
  return ema_pool_step_time(tenant->rig->pool, tenant->gpu, batch);
}

static void on_step(gpointer data, const EmaStepReport *step) {
  RigTenant *tenant = data;
  ema_pool_after_step(tenant->rig->pool, tenant->gpu, step);
}

static void fail_on_ledger(Rig *rig, const char *when) {
  GError *error = NULL;
  if (!ema_pool_check(rig->pool, &error)) {
    g_prefix_error(&error, "ledger broken %s at %.9f s: ", when,
                   (double) ema_sim_now(rig->sim) / 1e9);
    ema_sim_fail(rig->sim, error);
  }
}

static void on_check(EmaSim *sim, EmaEvent *event, gpointer data) {
  Rig *rig = data;
  rig->checks++;
  fail_on_ledger(rig, "at a check");
  if (ema_sim_pending(sim) > 0)
    ema_sim_schedule_in(sim, event, rig->check_period, CHECK_PRIORITY);
}

static void on_fault(EmaSim *sim, EmaEvent *event, gpointer data) {
  RigFault *fault = data;
  Rig *rig = fault->rig;
  guint n = (guint) rig->experiment->server.gpus;
  fault->fired = TRUE;
  for (guint g = 0; g < n; g++)
    fault->lent_before += ema_pool_slices_lent(rig->pool, g);
  for (guint g = 0; g < n; g++) {
    ema_pool_reclaim_everything(rig->pool, g);
    if (ema_pool_slices_lent(rig->pool, g) != 0) {
      ema_sim_fail(sim, g_error_new(EMA_POLICY_ERROR, EMA_POLICY_ERROR_INVALID,
                                    "gpu%u still lends %" G_GUINT64_FORMAT
                                    " slices after reclaiming everything",
                                    g, ema_pool_slices_lent(rig->pool, g)));
      return;
    }
    fail_on_ledger(rig, "after a fault");
  }
}

static void tenant_clear(gpointer data) {
  RigTenant *tenant = data;
  ema_engine_free(tenant->engine);
  ema_step_model_free(tenant->step_model);
}

void rig_free(Rig *rig) {
  if (rig == NULL)
    return;
  if (rig->sim)
    ema_sim_cancel(rig->sim, &rig->check_event);
  for (guint i = 0; rig->faults && i < rig->faults->len; i++)
    ema_sim_cancel(rig->sim, &((RigFault *) rig->faults->pdata[i])->event);
  if (rig->tenants)
    g_array_set_size(rig->tenants, 0); /* engines before the pool and the simulator */
  g_clear_pointer(&rig->pool, ema_pool_free);
  g_clear_pointer(&rig->tenants, g_array_unref);
  g_clear_pointer(&rig->faults, g_ptr_array_unref);
  g_clear_pointer(&rig->sim, ema_sim_free);
  g_free(rig);
}

Rig *rig_new(const EmaExperiment *experiment, GError **error) {
  g_autoptr(Rig) rig = g_new0(Rig, 1);
  const EmaServerSpec *server = &experiment->server;

  rig->experiment = experiment;
  rig->sim = ema_sim_new();
  rig->tenants = g_array_new(FALSE, TRUE, sizeof(RigTenant));
  g_array_set_clear_func(rig->tenants, tenant_clear);
  rig->faults = g_ptr_array_new_with_free_func(g_free);
  ema_event_init(&rig->check_event, on_check, rig);
  rig->pool = ema_pool_new(rig->sim, server, &experiment->policy, error);
  if (rig->pool == NULL)
    return NULL;
  for (guint i = 0; i < experiment->tenants->len; i++) {
    const EmaTenantSpec *spec = &g_array_index(experiment->tenants, EmaTenantSpec, i);
    RigTenant tenant = {.rig = rig, .spec = spec, .gpu = (guint) spec->gpu};
    if (!ema_tenant_plan(spec, server, &tenant.plan, error))
      return NULL;
    tenant.step_model = ema_step_model_new(&spec->model, server, (guint) spec->tp, error);
    if (tenant.step_model == NULL)
      return NULL;
    tenant.memory = ema_pool_add_tenant(rig->pool, tenant.gpu, tenant.plan.slices,
                                        tenant.plan.block_bytes, tenant.step_model);
    ema_tenant_engine_config(spec, &tenant.plan, server, &tenant.config);
    ema_serving_apply_preempt_choice(experiment, &tenant.config);
    g_array_append_val(rig->tenants, tenant);
  }
  ema_serving_add_idle_gpus(experiment, rig->pool);
  if (!ema_pool_start(rig->pool, error))
    return NULL;
  /* engines once the array is complete: their callbacks point into it */
  for (guint i = 0; i < rig->tenants->len; i++) {
    RigTenant *tenant = &g_array_index(rig->tenants, RigTenant, i);
    g_autofree char *stream = g_strconcat("tenant/", tenant->spec->name, NULL);
    EmaEngineObserver observer = {on_step, NULL, tenant};
    EmaTraceSource *trace = ema_trace_spec_open(
        &tenant->spec->trace, ema_trace_seed_derive((guint64) experiment->seed, stream), error);
    if (trace == NULL)
      return NULL;
    tenant->engine =
        ema_engine_new(rig->sim, &tenant->config, tenant->memory, step_cost, tenant, trace);
    ema_engine_set_step_estimate(tenant->engine, ema_engine_model_step_cost, tenant->step_model);
    ema_engine_add_observer(tenant->engine, &observer);
    ema_pool_set_engine(rig->pool, tenant->gpu, tenant->engine);
  }
  return g_steal_pointer(&rig);
}

void rig_check_every(Rig *rig, EmaTime period) {
  rig->check_period = period;
}

RigFault *rig_fault_at(Rig *rig, EmaTime at) {
  RigFault *fault = g_new0(RigFault, 1);
  fault->rig = rig;
  fault->at = at;
  ema_event_init(&fault->event, on_fault, fault);
  g_ptr_array_add(rig->faults, fault);
  return fault;
}

gboolean rig_run(Rig *rig, GError **error) {
  for (guint i = 0; i < rig->tenants->len; i++)
    ema_engine_start(g_array_index(rig->tenants, RigTenant, i).engine);
  for (guint i = 0; i < rig->faults->len; i++) {
    RigFault *fault = rig->faults->pdata[i];
    ema_sim_schedule(rig->sim, &fault->event, fault->at, FAULT_PRIORITY);
  }
  if (rig->check_period > 0)
    ema_sim_schedule(rig->sim, &rig->check_event, 0, CHECK_PRIORITY);
  if (!ema_sim_run_until(
          rig->sim, rig->experiment->duration ? rig->experiment->duration : EMA_TIME_NEVER, error))
    return FALSE;
  ema_sim_cancel(rig->sim, &rig->check_event);
  if (!ema_pool_check(rig->pool, error)) {
    g_prefix_error(error, "ledger broken at the end: ");
    return FALSE;
  }
  return TRUE;
}

#define SUM_OVER_TENANTS(rig, expr)                                                                \
  guint64 total = 0;                                                                               \
  for (guint i = 0; i < (rig)->tenants->len; i++) {                                                \
    const RigTenant *tenant = &g_array_index((rig)->tenants, RigTenant, i);                        \
    total += (expr);                                                                               \
  }                                                                                                \
  return total

guint64 rig_completed(const Rig *rig) {
  SUM_OVER_TENANTS(rig, ema_engine_completed(tenant->engine));
}

guint64 rig_rejected(const Rig *rig) {
  SUM_OVER_TENANTS(rig, ema_engine_rejected(tenant->engine));
}

guint64 rig_unfinished(const Rig *rig) {
  SUM_OVER_TENANTS(rig, ema_engine_running(tenant->engine) + ema_engine_waiting(tenant->engine));
}

guint64 rig_preemptions(const Rig *rig) {
  SUM_OVER_TENANTS(rig, ema_engine_preemptions(tenant->engine));
}

guint64 rig_expected_requests(const Rig *rig) {
  SUM_OVER_TENANTS(rig, (guint64) tenant->spec->trace.requests);
}
