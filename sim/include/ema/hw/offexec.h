/* offexec.h: how offloaded attention runs on a lender (its execution
 * model), beside the cost model of the work itself (offload.h).
 *
 * offload.h prices a partial as if it co-ran with the lender's steps, with
 * the curves measured on one H200 with two streams of one process. A
 * lender is another serving process: its kernels and a borrower's partial
 * co-run only under MPS (or a shared runtime); otherwise the GPU
 * time-slices the two contexts. The server's `offload` keys pick the model
 * (EmaOffloadExecSpec); per lender j of a borrower's step, per layer:
 *
 *   t_remote_j = t_send_j + w_j + q_j + x_j + t_back_j
 *
 * t_send_j, t_back_j: offload.h's, over the trigger and return PATH:
 *   doorbell  the borrower's kernel writes the query into the lender's
 *             memory and a flag the lender polls (a peer store:
 *             link.latency, the measured dependent load from peer memory);
 *   copy      a copy-engine copy each way (link.latency plus
 *             link.copy_fixed_cost, the server file's measured fixed cost
 *             of one copy).
 * x_j: the partial's run, t_alone_j (offload.h's t_att_j on an idle lender)
 *   times D, a draw per step from the lognormal of median 1 and 90th
 *   percentile partial_p90 (sigma = ln(partial_p90) / z_0.9, z_0.9 =
 *   1.28155; validate/results/2026-12-01-h200-offload-partial: medians
 *   x1.07-x1.44 its time alone, 90th percentiles up to 2.1x the median;
 *   partial_p90 1: D = 1, the median alone); beside a busy lender under
 *   mps at equal priority also times 1 + gpu.offload_partial_slowdown.
 * w_j: its wait for the lender's own work, 0 on an idle lender; beside a
 *   busy one (T_L the lender's step, L_L its layers):
 *   mps            0 (the kernels co-run)
 *   timeslice      Q / 2 + c: the rest of the lender's time slice at a
 *                  uniform arrival, and one context switch (Q timeslice, c
 *                  switch_cost)
 *   lender-engine  T_L / (2 L_L): the lender's engine launches pending
 *                  partials at its next layer boundary (inside its step)
 *   priority lender (any execution: lender-first): T_L / 2, the partial
 *                  at low priority starts when the lender's step has no
 *                  more work to dispatch (its end, at a uniform arrival)
 * q_j: its wait behind the other borrowers' partials on the same lender,
 *   each borrower k offering rho_k = L_k S_k / T_k of the lender's time
 *   (S_k its partial alone, L_k layers per step T_k), rho = sum_k rho_k
 *   (at most RHO_MAX):
 *   mps            processor sharing, x_j rho / (1 - rho) (M/G/1-PS mean
 *                  response S / (1 - rho), Kleinrock, Queueing Systems
 *                  vol. 2, 4.4)
 *   otherwise      first come first served, sum_k rho_k S_k / (2 (1 - rho))
 *                  (Pollaczek-Khinchine mean wait lambda E[S^2] / (2 (1 -
 *                  rho)), each partial's service its median, deterministic)
 *
 * The lender's cost, its own step T_L lengthened by dT while borrowers
 * offload to it (r the share of its HBM time their reads take, offload.h;
 * f = sum_B rho_B; n = sum_B L_B / T_B partials per second):
 *   mps            s(r) T_L, the measured curve (gpu.offload_slowdown)
 *   timeslice      T_L f' / (1 - f'), f' = f + 2 c n: the GPU is the
 *                  partials' (and two switches') for f' of the time
 *   lender-engine  T_L f / (1 - f): the partials run in its own stream
 *   priority lender  lender_first_residual x T_L: the low-priority
 *                  partials' blocks already resident when the lender's
 *                  kernels launch (assumed until measured; the measured
 *                  curve's +0.9% at a 1% share is its scale), at most s(r)
 * (f' and f at most RHO_MAX.)
 *
 * Defaults: execution mps, priority equal, path doorbell, partial_p90 1:
 * offload.h's model unchanged (the existing results). timeslice 2 ms is
 * nvidia-smi compute-policy's SHORT time slice (NVIDIA's default for
 * compute contexts is not documented); switch_cost 25 us is assumed (the
 * order of Pascal-and-later compute preemption, a context save and
 * restore); both are measured by validate/offload-exec.py on one GPU.
 *
 * Not modelled: a partial's wait correlating with the lender's layer
 * phase; several lenders' draws differing within a step (one D per step);
 * the queue's variance (means only). */
#pragma once

#include <glib.h>

#include "ema/core/params.h"

G_BEGIN_DECLS

typedef enum {
  EMA_OFFLOAD_EXEC_MPS,
  EMA_OFFLOAD_EXEC_TIMESLICE,
  EMA_OFFLOAD_EXEC_LENDER_ENGINE,
} EmaOffloadExecution;

typedef enum {
  EMA_OFFLOAD_PATH_DOORBELL,
  EMA_OFFLOAD_PATH_COPY,
} EmaOffloadPath;

typedef enum {
  EMA_OFFLOAD_PRIORITY_EQUAL,  /* the partials and the lender's work alike */
  EMA_OFFLOAD_PRIORITY_LENDER, /* lender-first: the lender's own work goes first */
} EmaOffloadPriority;

/* A utilisation the queue formulas are held to (a lender offered more is
 * saturated; its waits stay finite). */
#define EMA_OFFLOAD_RHO_MAX 0.95

/* The server's `offload` keys. */
typedef struct {
  int execution;                /* EmaOffloadExecution */
  int priority;                 /* EmaOffloadPriority */
  int path;                     /* EmaOffloadPath: trigger and return */
  gint64 timeslice;             /* ns: Q, the time slice of a context (timeslice) */
  gint64 switch_cost;           /* ns: c, one context switch (timeslice) */
  double partial_p90;           /* the partial's 90th percentile / median (1: the median alone) */
  double lender_first_residual; /* a lender's slowdown under lender-first */
} EmaOffloadExecSpec;

extern const EmaParamTable ema_offload_exec_params;

/* One lender's side of a step's partials: its state and the other
 * borrowers' partials on it. */
typedef struct {
  gboolean busy;        /* its own requests are running */
  double lender_step_s; /* T_L: its step (s; 0: not known, no wait for it) */
  double lender_layers; /* L_L */
  double others_rho;    /* sum over the other borrowers of rho_k */
  double others_rho_s;  /* sum over them of rho_k S_k (s) */
} EmaOffloadLender;

/* What the execution model gives one lender's partial, per layer (s). */
typedef struct {
  double wait_s;    /* w_j + q_j */
  double run_scale; /* x_j / t_alone_j */
} EmaOffloadExec;

/* The per-layer wait and run scale of a partial that takes ALONE_S alone
 * on LENDER, with DRAW the step's D and PARTIAL_SLOWDOWN
 * gpu.offload_partial_slowdown. */
EmaOffloadExec ema_offexec_partial(const EmaOffloadExecSpec *spec, const EmaOffloadLender *lender,
                                   double alone_s, double draw, double partial_slowdown);

/* dT / T_L: a lender's extra step time over its step while borrowers
 * offload to it: RHO = f, RATE = n (partials per second), CURVE = s(r)
 * (the measured slowdown at their HBM share). */
double ema_offexec_lender_slowdown(const EmaOffloadExecSpec *spec, double rho, double rate,
                                   double curve);

/* sigma of the partial's lognormal draw (0 with partial_p90 1). */
double ema_offexec_sigma(const EmaOffloadExecSpec *spec);

/* D from a standard normal deviate Z: exp(sigma Z). */
double ema_offexec_draw(const EmaOffloadExecSpec *spec, double z);

/* The name of EXECUTION ("mps", "timeslice", "lender-engine"). */
const char *ema_offexec_name(EmaOffloadExecution execution);

G_END_DECLS
