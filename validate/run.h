/* run.h: `ema-validate run FILE`: an experiment's ops and decode scenarios
 * (experiment.h, the ones `ema-sim run` simulates) measured on this
 * machine's GPUs, written in the simulator's own output schema.
 *
 * Ops, one after another, each with buffers of its own:
 *   copy gpuA -> gpuB  cudaMemcpyPeerAsync issued on gpuA's stream (push,
 *                      as calibrate's link fit); peer access both ways
 *   copy gpuA -> gpuA  cudaMemcpyAsync device to device (counted twice)
 *   copy host <-> gpuA cudaMemcpyAsync on gpuA's stream, pinned host memory
 *   read gpuA -> gpuB  the streaming-read kernel (16-byte loads, all SMs)
 *                      on gpuB over gpuA's memory (peer access)
 * Each flow has its own stream; the flows of one op start together: the
 * first flow's stream records an event that the others wait for, and waits
 * for theirs at the end, so the op is timed on the first flow's stream
 * with CUDA events, from its start to the last flow's end. Source buffers
 * are filled with non-zero data first.
 *
 * Decode scenarios: ema-validate decode's synthetic step (decode.h) on
 * GPU0 with the scenario's model, batch, context, mode, remote fraction
 * and prefetch depth, each pass a CUDA graph; peer_pull > 0: GPU1 pulls
 * from GPU0's HBM while the step is timed (as fast as the link lets it;
 * the rate reached is printed and kept in derived.csv).
 *
 * Every time is the median of REPEATS timed repeats after WARMUPS. An op's
 * result is its median time and ema_op_bytes over it; a decode scenario's
 * its median step and, like the simulator's, the step-time model's bytes
 * over it. Expectations in the file are judged as ema-sim judges them.
 *
 * DIR gets summary.json (ema-sim's schema for ops experiments, measured
 * values where the simulator puts its own; sim.events is 0, sim.simulated_s
 * the sum of the ops' times), resolved.yaml, provenance.txt (a GKeyFile,
 * group [run]: date, command, experiment, server, GPUs, driver, CUDA,
 * repeats, how each kind of flow was issued), measurements.csv, samples.csv
 * and derived.csv (report.h: every op and step with its spread and
 * samples) and decode.csv (decode.h's rows, one per scenario). */
#pragma once

#include <glib.h>

#include "ema/run/experiment.h"
#include "ema/run/ops.h"

G_BEGIN_DECLS

typedef struct {
  guint repeats, warmups;
  gboolean verify;             /* decode: check outputs against the CPU references */
  const char *command;         /* the command line, for provenance.txt */
  const char *experiment_file; /* as given */
} EmaRunOptions;

/* The files a measuring run (run, calibrate) writes into its results folder beside a run's own
 * entries (NULL-terminated). */
extern const char *const ema_run_results_entries[];

/* Check what can be checked without a GPU: a serving experiment, a flow
 * the kernels cannot do (a read of a size not a multiple of 16), a decode
 * scenario whose model the synthetic step does not support. Errors:
 * EMA_VALIDATE_ERROR_ARGUMENT / _UNSUPPORTED naming the op or scenario. */
gboolean ema_run_check(const EmaExperiment *experiment, GError **error);

/* Measure EXPERIMENT on the GPUs and write DIR (created if needed). The
 * measured report, or NULL with an error (EMA_VALIDATE_ERROR_NO_DEVICE when
 * an op names a GPU this machine lacks). */
EmaOpsReport *ema_run_experiment(const EmaExperiment *experiment, const EmaRunOptions *options,
                                 const char *dir, GError **error);

G_END_DECLS
