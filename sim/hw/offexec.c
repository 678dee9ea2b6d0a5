/* offexec.c: the execution models of offloaded attention (equations,
 * sources and assumptions in offexec.h): the server's `offload` keys and
 * the per-layer wait, run and lender cost they give. Pure functions. */
#include "ema/hw/offexec.h"

#include <math.h>

#define EXEC_FIELD(f) G_STRUCT_OFFSET(EmaOffloadExecSpec, f)

/* z_0.9: the standard normal's 90th percentile. */
#define Z90 1.2815515655446004

static const char *const execution_names[] = {"mps", "timeslice", "lender-engine", NULL};
static const char *const priority_names[] = {"equal", "lender", NULL};
static const char *const path_names[] = {"doorbell", "copy", NULL};

static const EmaParam exec_params[] = {
    {"execution", EMA_PARAM_ENUM, EXEC_FIELD(execution),
     .help = "how a lender runs borrowers' partial attention: mps (co-running, the measured "
             "curves), timeslice (behind its kernels, a time slice at a time), lender-engine "
             "(its engine launches them at its layer boundaries)",
     .choices = execution_names, .default_value = "mps"},
    {"priority", EMA_PARAM_ENUM, EXEC_FIELD(priority),
     .help = "equal, or lender: lender-first, the partials at low priority wait for the end of "
             "the lender's step and the lender pays only lender_first_residual",
     .choices = priority_names, .default_value = "equal"},
    {"path", EMA_PARAM_ENUM, EXEC_FIELD(path),
     .help = "per-layer trigger and return: doorbell (peer stores, link.latency) or copy (a "
             "copy-engine copy each way, link.latency + link.copy_fixed_cost)",
     .choices = path_names, .default_value = "doorbell"},
    {"timeslice", EMA_PARAM_DURATION, EXEC_FIELD(timeslice),
     .help = "a context's time slice under timeslice (default: nvidia-smi compute-policy SHORT)",
     .default_value = "2ms", .min = 1000, .max = 1e9},
    {"switch_cost", EMA_PARAM_DURATION, EXEC_FIELD(switch_cost),
     .help = "one context switch under timeslice (default: assumed)", .default_value = "25us",
     .max = 1e8},
    {"partial_p90", EMA_PARAM_DOUBLE, EXEC_FIELD(partial_p90),
     .help = "the partial's 90th-percentile time over its median, drawn per step (1: the median "
             "alone; 2.1 measured on H200)",
     .default_value = "1", .min = 1, .max = 100},
    {"lender_first_residual", EMA_PARAM_FRACTION, EXEC_FIELD(lender_first_residual),
     .help = "a lender's step slowdown under priority lender (default: assumed, the scale of "
             "the measured curve at a 1% share)",
     .default_value = "1%", .max = 1},
};

const EmaParamTable ema_offload_exec_params = {"offload execution", sizeof(EmaOffloadExecSpec),
                                               exec_params, EMA_PARAMS_N(exec_params), NULL};

const char *ema_offexec_name(EmaOffloadExecution execution) {
  g_return_val_if_fail(execution <= EMA_OFFLOAD_EXEC_LENDER_ENGINE, "?");
  return execution_names[execution];
}

double ema_offexec_sigma(const EmaOffloadExecSpec *spec) {
  return log(MAX(spec->partial_p90, 1.0)) / Z90;
}

double ema_offexec_draw(const EmaOffloadExecSpec *spec, double z) {
  return exp(ema_offexec_sigma(spec) * z);
}

/* w_j: the wait for the lender's own work (offexec.h). */
static double own_wait(const EmaOffloadExecSpec *spec, const EmaOffloadLender *lender) {
  if (!lender->busy)
    return 0;
  if (spec->priority == EMA_OFFLOAD_PRIORITY_LENDER)
    return lender->lender_step_s / 2;
  switch (spec->execution) {
  case EMA_OFFLOAD_EXEC_TIMESLICE:
    return (double) spec->timeslice * 1e-9 / 2 + (double) spec->switch_cost * 1e-9;
  case EMA_OFFLOAD_EXEC_LENDER_ENGINE:
    return lender->lender_layers > 0 ? lender->lender_step_s / (2 * lender->lender_layers) : 0;
  default:
    return 0;
  }
}

EmaOffloadExec ema_offexec_partial(const EmaOffloadExecSpec *spec, const EmaOffloadLender *lender,
                                   double alone_s, double draw, double partial_slowdown) {
  EmaOffloadExec r = {0};
  double rho;
  g_return_val_if_fail(spec != NULL && lender != NULL && alone_s >= 0 && draw > 0, r);
  rho = MIN(MAX(lender->others_rho, 0.0), EMA_OFFLOAD_RHO_MAX);
  r.run_scale = draw;
  if (lender->busy && spec->execution == EMA_OFFLOAD_EXEC_MPS &&
      spec->priority == EMA_OFFLOAD_PRIORITY_EQUAL)
    r.run_scale *= 1 + partial_slowdown;
  r.wait_s = own_wait(spec, lender);
  if (spec->execution == EMA_OFFLOAD_EXEC_MPS)
    r.wait_s += alone_s * r.run_scale * rho / (1 - rho); /* processor sharing */
  else
    r.wait_s += lender->others_rho_s / (2 * (1 - rho)); /* Pollaczek-Khinchine, FCFS */
  return r;
}

double ema_offexec_lender_slowdown(const EmaOffloadExecSpec *spec, double rho, double rate,
                                   double curve) {
  double f;
  g_return_val_if_fail(spec != NULL && rho >= 0 && rate >= 0, 0);
  if (rho <= 0)
    return 0;
  if (spec->priority == EMA_OFFLOAD_PRIORITY_LENDER)
    return MIN(spec->lender_first_residual, curve); /* never more than co-running */
  switch (spec->execution) {
  case EMA_OFFLOAD_EXEC_TIMESLICE:
    f = rho + 2 * (double) spec->switch_cost * 1e-9 * rate;
    break;
  case EMA_OFFLOAD_EXEC_LENDER_ENGINE:
    f = rho;
    break;
  default:
    return curve;
  }
  f = MIN(f, EMA_OFFLOAD_RHO_MAX);
  return f / (1 - f);
}
