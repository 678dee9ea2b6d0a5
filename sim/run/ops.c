/* ops.c: runs the "ops" workload of an experiment. Op k starts all its
 * flows at the time op k-1 finished, so each op meets an idle server; its
 * time runs from its start to its last flow's end. The event core fires the
 * fabric's events; nothing here computes times by itself.
 *
 * Invariants: ops run in file order; an op's result is complete only when
 * every one of its flows has called back. */
#include "ema/run/ops.h"

#include <math.h>

#include "ema/pool/pool.h"
#include "ema/hw/steptime.h"

typedef struct {
  const EmaExperiment *experiment;
  EmaSim *sim;
  EmaFabric *fabric;
  EmaOpsReport *report;
  guint op_index;
  EmaTime op_start;
  guint flows_left;
  EmaFlow *flows; /* storage for the current op's flows */
  EmaEvent start_event;
} OpsRun;

static void start_op(EmaSim *sim, EmaEvent *event, gpointer user_data);

void ema_op_result_judge(EmaOpResult *result, const EmaOpExpect *expect, double default_tolerance,
                         guint *failed) {
  double seconds = (double) result->seconds_ns / 1e9;
  result->has_expect = expect->time != 0 || expect->bandwidth != 0;
  if (!result->has_expect)
    return;
  result->expect_is_time = expect->time != 0;
  result->expected = result->expect_is_time ? (double) expect->time / 1e9 : expect->bandwidth;
  result->measured = result->expect_is_time ? seconds : result->bandwidth;
  result->error = (result->measured - result->expected) / result->expected;
  result->tolerance = expect->tolerance > 0 ? expect->tolerance : default_tolerance;
  result->pass = fabs(result->error) <= result->tolerance;
  if (!result->pass)
    (*failed)++;
}

static void finish_op(OpsRun *run) {
  const EmaOpSpec *op = &g_array_index(run->experiment->ops, EmaOpSpec, run->op_index);
  EmaOpResult result = {.name = op->name, .spec = op};
  double seconds;

  result.seconds_ns = ema_sim_now(run->sim) - run->op_start;
  seconds = (double) result.seconds_ns / 1e9;
  result.bandwidth = seconds > 0 ? (double) ema_op_bytes(op) / seconds : INFINITY;
  ema_op_result_judge(&result, &op->expect, run->experiment->tolerance, &run->report->failed);
  g_array_append_val(run->report->ops, result);

  run->op_index++;
  if (run->op_index < run->experiment->ops->len)
    ema_sim_schedule_in(run->sim, &run->start_event, 0, 0);
}

static void flow_done(EmaFabric *fabric, EmaFlow *flow, gpointer user_data) {
  OpsRun *run = user_data;
  if (--run->flows_left == 0)
    finish_op(run);
}

static void start_op(EmaSim *sim, EmaEvent *event, gpointer user_data) {
  OpsRun *run = user_data;
  const EmaOpSpec *op = &g_array_index(run->experiment->ops, EmaOpSpec, run->op_index);

  g_free(run->flows);
  run->flows = g_new0(EmaFlow, op->flows->len);
  run->op_start = ema_sim_now(sim);
  run->flows_left = op->flows->len;
  for (guint j = 0; j < op->flows->len; j++) {
    const EmaOpFlowSpec *spec = &g_array_index(op->flows, EmaOpFlowSpec, j);
    ema_fabric_start(run->fabric, &run->flows[j], spec->kind, spec->src_index, spec->dst_index,
                     spec->bytes, flow_done, run);
  }
}

/* One decode scenario: the step-time model's all-local breakdown, then the
 * remote share through the pool's formula (one lender, gpu1; interference
 * from peer_pull on gpu0's HBM, the same per byte whether the peer copies
 * or loads). */
static gboolean time_decode(const EmaExperiment *experiment, const EmaDecodeScenarioSpec *d,
                            EmaOpsReport *report, GError **error) {
  const EmaServerSpec *server = &experiment->server;
  g_autoptr(EmaStepModel) model = ema_step_model_new(&d->model, server, 1, error);
  EmaStepBatch batch = {0};
  EmaStepBreakdown bd;
  EmaOpResult result = {.name = d->name};
  EmaPrefetchPlan plan = ema_prefetch_plan_start();
  double layers, seconds;
  plan.mode = d->mode == EMA_DECODE_SCENARIO_PREFETCH ? EMA_REMOTE_PREFETCH : EMA_REMOTE_DIRECT;
  plan.depth = (guint) d->depth;
  if (model == NULL) {
    g_prefix_error(error, "decode scenario %s: ", d->name);
    return FALSE;
  }
  batch.decode_seqs = (guint64) d->batch;
  batch.decode_context = (double) d->batch * (double) d->context;
  batch.logits = (guint64) d->batch;
  ema_step_time(model, &batch, &bd);
  layers = ema_step_model_layers(model);
  seconds = ema_remote_step_seconds_one_lender(
      &bd, server, layers, server->gpu.interference_outgoing * d->peer_pull,
      d->remote_fraction * bd.kv_read_bytes / layers, &plan);
  result.seconds_ns = (EmaTime) ema_llround(seconds * 1e9);
  result.bandwidth = bd.bytes / seconds;
  ema_op_result_judge(&result, &d->expect, experiment->tolerance, &report->failed);
  g_array_append_val(report->ops, result);
  return TRUE;
}

EmaOpsReport *ema_ops_run(const EmaExperiment *experiment, GError **error) {
  g_autoptr(EmaSim) sim = ema_sim_new();
  g_autoptr(EmaOpsReport) report = g_new0(EmaOpsReport, 1);
  OpsRun run = {.experiment = experiment, .sim = sim, .report = report};
  gboolean ok;

  report->ops = g_array_new(FALSE, TRUE, sizeof(EmaOpResult));
  if (experiment->ops == NULL || experiment->ops->len == 0)
    goto decode;
  run.fabric = ema_fabric_new(sim, &experiment->server);
  ema_event_init(&run.start_event, start_op, &run);
  ema_sim_schedule(sim, &run.start_event, 0, 0);
  ok = ema_sim_run_until(sim, EMA_TIME_NEVER, error);
  report->events = ema_sim_events_fired(sim);
  report->simulated = ema_sim_now(sim);
  ema_fabric_free(run.fabric);
  g_free(run.flows);
  if (!ok)
    return NULL;
  g_assert_cmpuint(report->ops->len, ==, experiment->ops->len);
decode:
  for (guint i = 0; experiment->decode && i < experiment->decode->len; i++)
    if (!time_decode(experiment, &g_array_index(experiment->decode, EmaDecodeScenarioSpec, i),
                     report, error))
      return NULL;
  return g_steal_pointer(&report);
}

void ema_ops_report_free(EmaOpsReport *report) {
  if (report == NULL)
    return;
  g_array_unref(report->ops);
  g_free(report);
}
