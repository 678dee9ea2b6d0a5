/* test-offexec.c: the execution models of offloaded attention
 * (sim/hw/offexec.c) on cases worked out by hand from offexec.h: each
 * model's wait and run beside a busy and an idle lender, two borrowers'
 * partials queueing on one lender, the lenders' cost, the partial's
 * lognormal draw, the copy trigger path in a whole offloaded layer, and the
 * server keys' defaults (offload.h's model unchanged). */
#include <math.h>

#include "ema/hw/hwmodel.h"
#include "ema/hw/llm.h"
#include "ema/hw/offexec.h"
#include "ema/hw/offload.h"
#include "ema/run/experiment.h"

static void assert_close(double got, double want, double rel) {
  if (fabs(got - want) > rel * fabs(want) + 1e-18)
    g_error("got %.12g, want %.12g (relative tolerance %g)", got, want, rel);
}

/* The defaults of the keys: mps at equal priority, doorbell, Q 2 ms, c 25 us,
 * one median. */
static EmaOffloadExecSpec spec_of(EmaOffloadExecution execution, EmaOffloadPriority priority) {
  EmaOffloadExecSpec spec = {.execution = execution,
                             .priority = priority,
                             .path = EMA_OFFLOAD_PATH_DOORBELL,
                             .timeslice = 2000000,
                             .switch_cost = 25000,
                             .partial_p90 = 1,
                             .lender_first_residual = 0.01};
  return spec;
}

/* A busy lender: steps of 20 ms, 40 layers; nobody else offloads to it. */
static const EmaOffloadLender busy = {.busy = TRUE, .lender_step_s = 20e-3, .lender_layers = 40};
static const EmaOffloadLender idle = {.busy = FALSE, .lender_step_s = 20e-3, .lender_layers = 40};

/* A partial of 100 us alone, a busy lender's co-running slowdown 16.6%:
 *   mps            idle: no wait, x1; busy: no wait, x1.166 (116.6 us)
 *   timeslice      idle: none; busy: 2 ms / 2 + 25 us = 1.025 ms, x1
 *   lender-engine  idle: none; busy: 20 ms / (2 x 40) = 250 us, x1
 *   lender-first   busy: 20 ms / 2 = 10 ms, x1 (any execution) */
static void assert_exec(const EmaOffloadExecSpec *spec, const EmaOffloadLender *lender,
                        double wait_s, double run_scale) {
  EmaOffloadExec x = ema_offexec_partial(spec, lender, 100e-6, 1, 0.166);
  assert_close(x.wait_s, wait_s, 1e-12);
  assert_close(x.run_scale, run_scale, 1e-15);
}

static void test_each_model(void) {
  EmaOffloadExecSpec mps = spec_of(EMA_OFFLOAD_EXEC_MPS, EMA_OFFLOAD_PRIORITY_EQUAL);
  EmaOffloadExecSpec ts = spec_of(EMA_OFFLOAD_EXEC_TIMESLICE, EMA_OFFLOAD_PRIORITY_EQUAL);
  EmaOffloadExecSpec le = spec_of(EMA_OFFLOAD_EXEC_LENDER_ENGINE, EMA_OFFLOAD_PRIORITY_EQUAL);
  EmaOffloadExecSpec first = spec_of(EMA_OFFLOAD_EXEC_MPS, EMA_OFFLOAD_PRIORITY_LENDER);

  assert_exec(&mps, &idle, 0, 1);
  assert_exec(&mps, &busy, 0, 1.166);
  assert_exec(&ts, &idle, 0, 1);
  assert_exec(&ts, &busy, 1.025e-3, 1);
  assert_exec(&le, &idle, 0, 1);
  assert_exec(&le, &busy, 250e-6, 1);
  assert_exec(&first, &busy, 10e-3, 1);
  assert_exec(&first, &idle, 0, 1);
  first.execution = EMA_OFFLOAD_EXEC_TIMESLICE;
  assert_exec(&first, &busy, 10e-3, 1);
  g_assert_cmpstr(ema_offexec_name(EMA_OFFLOAD_EXEC_LENDER_ENGINE), ==, "lender-engine");
}

/* Two borrowers on one idle lender. Borrower A: 40 layers, steps of 20 ms,
 * partials of 100 us alone: L / T = 2,000 partials per second, rho_A = 0.2,
 * rho_A S_A = 20 us. Borrower B's partial of 50 us behind A's:
 *   FCFS (timeslice, lender-engine): 20 us / (2 x 0.8) = 12.5 us
 *   processor sharing (mps): 50 us x 0.2 / 0.8 = 12.5 us
 * With a third borrower C like A (rho 0.4, rho S 40 us): FCFS 40 / (2 x 0.6)
 * = 33.33 us; PS 50 x 0.4 / 0.6 = 33.33 us. Saturated (rho 1.2): held at
 * 0.95, FCFS 120 us / 0.1 = 1.2 ms. */
static void test_two_borrowers_queue(void) {
  EmaOffloadExecSpec mps = spec_of(EMA_OFFLOAD_EXEC_MPS, EMA_OFFLOAD_PRIORITY_EQUAL);
  EmaOffloadExecSpec ts = spec_of(EMA_OFFLOAD_EXEC_TIMESLICE, EMA_OFFLOAD_PRIORITY_EQUAL);
  EmaOffloadExecSpec le = spec_of(EMA_OFFLOAD_EXEC_LENDER_ENGINE, EMA_OFFLOAD_PRIORITY_EQUAL);
  double rate_a = 40 / 20e-3, s_a = 100e-6;
  EmaOffloadLender lender = {.busy = FALSE,
                             .lender_step_s = 20e-3,
                             .lender_layers = 40,
                             .others_rho = rate_a * s_a,
                             .others_rho_s = rate_a * s_a * s_a};
  EmaOffloadExec x;

  assert_close(lender.others_rho, 0.2, 1e-12);
  x = ema_offexec_partial(&ts, &lender, 50e-6, 1, 0.166);
  assert_close(x.wait_s, 12.5e-6, 1e-12);
  x = ema_offexec_partial(&le, &lender, 50e-6, 1, 0.166);
  assert_close(x.wait_s, 12.5e-6, 1e-12);
  x = ema_offexec_partial(&mps, &lender, 50e-6, 1, 0.166);
  assert_close(x.wait_s, 12.5e-6, 1e-12);

  lender.others_rho *= 2;
  lender.others_rho_s *= 2;
  x = ema_offexec_partial(&ts, &lender, 50e-6, 1, 0.166);
  assert_close(x.wait_s, 100e-6 / 3, 1e-12);
  x = ema_offexec_partial(&mps, &lender, 50e-6, 1, 0.166);
  assert_close(x.wait_s, 100e-6 / 3, 1e-12);

  lender.others_rho = 1.2;
  lender.others_rho_s = 120e-6;
  x = ema_offexec_partial(&ts, &lender, 50e-6, 1, 0.166);
  assert_close(x.wait_s, 1.2e-3, 1e-9);

  /* a busy lender under timeslice: its own slice's rest first, then the queue */
  lender = (EmaOffloadLender){.busy = TRUE,
                              .lender_step_s = 20e-3,
                              .lender_layers = 40,
                              .others_rho = 0.2,
                              .others_rho_s = 20e-6};
  x = ema_offexec_partial(&ts, &lender, 50e-6, 1, 0.166);
  assert_close(x.wait_s, 1.025e-3 + 12.5e-6, 1e-12);
}

/* The lender's cost at its borrowers' rho 0.2, 2,000 partials per second,
 * the measured curve's s(r) 3%:
 *   mps 3%; timeslice f' = 0.2 + 2 x 25 us x 2000 = 0.3, 0.3 / 0.7 = 42.86%;
 *   lender-engine 0.2 / 0.8 = 25%; lender-first 1% (the residual, at most
 *   s(r): 0.5% where the curve gives 0.5%); nothing offloaded, nothing. */
static void test_lender_cost(void) {
  EmaOffloadExecSpec mps = spec_of(EMA_OFFLOAD_EXEC_MPS, EMA_OFFLOAD_PRIORITY_EQUAL);
  EmaOffloadExecSpec ts = spec_of(EMA_OFFLOAD_EXEC_TIMESLICE, EMA_OFFLOAD_PRIORITY_EQUAL);
  EmaOffloadExecSpec le = spec_of(EMA_OFFLOAD_EXEC_LENDER_ENGINE, EMA_OFFLOAD_PRIORITY_EQUAL);
  EmaOffloadExecSpec first = spec_of(EMA_OFFLOAD_EXEC_TIMESLICE, EMA_OFFLOAD_PRIORITY_LENDER);

  g_assert_cmpfloat(ema_offexec_lender_slowdown(&mps, 0.2, 2000, 0.03), ==, 0.03);
  assert_close(ema_offexec_lender_slowdown(&ts, 0.2, 2000, 0.03), 0.3 / 0.7, 1e-12);
  assert_close(ema_offexec_lender_slowdown(&le, 0.2, 2000, 0.03), 0.25, 1e-12);
  g_assert_cmpfloat(ema_offexec_lender_slowdown(&first, 0.2, 2000, 0.03), ==, 0.01);
  g_assert_cmpfloat(ema_offexec_lender_slowdown(&first, 0.2, 2000, 0.005), ==, 0.005);
  g_assert_cmpfloat(ema_offexec_lender_slowdown(&ts, 0, 0, 0), ==, 0);
  /* saturated: f' held at 0.95, 19x */
  assert_close(ema_offexec_lender_slowdown(&le, 3, 2000, 0.03), 19, 1e-12);
}

/* The draw: sigma = ln 2.1 / 1.28155 = 0.741937 / 1.28155 = 0.578937; D(z_0.9) = 2.1, D(0) = 1
 * (the median), D(-z_0.9) = 1 / 2.1; with partial_p90 1, always 1. The
 * draw scales the run, not the wait. */
static void test_draw(void) {
  EmaOffloadExecSpec spec = spec_of(EMA_OFFLOAD_EXEC_TIMESLICE, EMA_OFFLOAD_PRIORITY_EQUAL);
  EmaOffloadExec x;
  g_assert_cmpfloat(ema_offexec_sigma(&spec), ==, 0);
  g_assert_cmpfloat(ema_offexec_draw(&spec, 2.5), ==, 1);
  spec.partial_p90 = 2.1;
  assert_close(ema_offexec_sigma(&spec), 0.578937, 1e-5);
  assert_close(ema_offexec_draw(&spec, 1.2815515655446004), 2.1, 1e-12);
  g_assert_cmpfloat(ema_offexec_draw(&spec, 0), ==, 1);
  assert_close(ema_offexec_draw(&spec, -1.2815515655446004), 1 / 2.1, 1e-12);
  x = ema_offexec_partial(&spec, &busy, 100e-6, 2.1, 0.166);
  assert_close(x.run_scale, 2.1, 1e-15);
  assert_close(x.wait_s, 1.025e-3, 1e-12);
}

/* The server keys' defaults leave offload.h's model as it was; the copy path
 * adds link.copy_fixed_cost (a100x4-40gb: 6.4 us) to each of the layer's
 * send and return, and the execution model's wait and run scale replace
 * the co-running factor: OPT-13B, one lender holding 4,000 tokens of 4
 * requests (test-offload.c's first case: attend alone 66.306 us, send
 * 1.4541 us, return 1.9133 us), busy under timeslice: remote = (1.4541 +
 * 6.4) + 1025 + 66.306 + (1.9133 + 6.4) us. */
static void test_in_the_layer(void) {
  GError *error = NULL;
  g_autoptr(EmaServerSpec) server = ema_server_load("a100x4-40gb", &error);
  g_autoptr(EmaLlmSpec) llm = ema_llm_load("opt-13b", &error);
  g_autoptr(EmaOffloadModel) doorbell = NULL;
  g_autoptr(EmaOffloadModel) copy = NULL;
  EmaOffloadExecSpec ts = spec_of(EMA_OFFLOAD_EXEC_TIMESLICE, EMA_OFFLOAD_PRIORITY_EQUAL);
  EmaStepBreakdown local = {.layer_kv_read_s = 20e-6, .time = 20000000};
  EmaOffloadShare share = {.seqs = 4, .context = 4000, .lender_busy = TRUE};
  EmaOffloadBreakdown a, b;
  EmaOffloadExec x;
  double alone;

  g_assert_no_error(error);
  g_assert_cmpint(server->offload.execution, ==, EMA_OFFLOAD_EXEC_MPS);
  g_assert_cmpint(server->offload.priority, ==, EMA_OFFLOAD_PRIORITY_EQUAL);
  g_assert_cmpint(server->offload.path, ==, EMA_OFFLOAD_PATH_DOORBELL);
  g_assert_cmpint(server->offload.timeslice, ==, 2000000);
  g_assert_cmpint(server->offload.switch_cost, ==, 25000);
  g_assert_cmpfloat(server->offload.partial_p90, ==, 1);
  doorbell = ema_offload_model_new(llm, server, 1, &error);
  g_assert_no_error(error);
  alone = ema_offload_partial_alone_s(doorbell, &share);
  assert_close(alone, 66.306e-6, 1e-4);
  /* run_scale 0: the co-running factor, as before */
  ema_offload_step_time(doorbell, &local, &share, 1, 4, &a);
  assert_close(a.layer_attend_s, alone * 1.166, 1e-12);

  server->offload.path = EMA_OFFLOAD_PATH_COPY;
  copy = ema_offload_model_new(llm, server, 1, &error);
  g_assert_no_error(error);
  x = ema_offexec_partial(&ts, &busy, alone, 1, server->gpu.offload_partial_slowdown);
  share.wait_s = x.wait_s;
  share.run_scale = x.run_scale;
  ema_offload_step_time(copy, &local, &share, 1, 4, &b);
  assert_close(b.layer_send_s, 1.4541e-6 + 6.4e-6, 1e-4);
  assert_close(b.layer_return_s, 1.9133e-6 + 6.4e-6, 1e-4);
  assert_close(b.layer_attend_s, 1.025e-3 + alone, 1e-12);
  assert_close(b.layer_remote_s, b.layer_send_s + 1.025e-3 + alone + b.layer_return_s, 1e-12);
  assert_close(b.layer_wait_s, b.layer_remote_s - 20e-6, 1e-12);
}

int main(int argc, char **argv) {
  g_test_init(&argc, &argv, NULL);
  g_test_add_func("/offexec/each-model", test_each_model);
  g_test_add_func("/offexec/two-borrowers-queue", test_two_borrowers_queue);
  g_test_add_func("/offexec/lender-cost", test_lender_cost);
  g_test_add_func("/offexec/draw", test_draw);
  g_test_add_func("/offexec/in-the-layer", test_in_the_layer);
  return g_test_run();
}
