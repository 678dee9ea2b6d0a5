/* compare.h: the simulator against the GPUs, op by op and decode scenario
 * by decode scenario (`ema-validate compare`). The measured side is an ops
 * report in the simulator's own schema (ops.h): from `ema-validate run`
 * directly, or read back from the summary.json it wrote (so a comparison
 * runs without a GPU, in CI); the simulated side is libema's ema_ops_run()
 * on the same experiment. For each op or scenario:
 *
 *   error = (simulated time - measured time) / measured time
 *
 * (a time error e is a bandwidth error of -e / (1 + e)), and over the ops,
 * the decode scenarios and all of them the median and the largest |error|.
 * The result prints as a table and is written as DIR/compare.csv
 *
 *   name,kind,measured_s,simulated_s,measured_gb_s,simulated_gb_s,error_pct
 *
 * and DIR/compare.md (the same table with the run's provenance). Pure C. */
#pragma once

#include <stdio.h>

#include <glib.h>

#include "ema/run/experiment.h"
#include "ema/run/ops.h"
#include "ema/run/output.h"

G_BEGIN_DECLS

/* The kind the folders of `ema-validate run` and `compare` record in their markers (output.h):
 * compare writes beside the measurements run wrote, so they share it; a refusal by another
 * command names this program, not ema-sim run. Their folders recorded ema-sim run's kind, "run",
 * before: ema_run_output_claim takes one of those where its marker lists provenance.txt or
 * compare.md (which ema-sim never writes), records this kind then, and refuses an ema-sim run's. */
#define EMA_RUN_OUTPUT_KIND "ema-validate run"
extern const EmaOutputClaimAs ema_run_output_claim;

/* Fill RESULT's expectation fields from EXPECT as ema-sim does (seconds_ns
 * and bandwidth already set; the experiment's tolerance by default), and
 * count a miss in REPORT. */
void ema_compare_judge(EmaOpResult *result, const EmaOpExpect *expect,
                       const EmaExperiment *experiment, EmaOpsReport *report);

/* DIR/summary.json (written by `ema-validate run`, or by hand in its schema)
 * as an ops report for EXPERIMENT: one result per op, then per decode scenario,
 * in the file's order, names pointing into EXPERIMENT, expectations judged
 * again. Errors: EMA_VALIDATE_ERROR_IO for a missing or unreadable file
 * (saying how to make one), EMA_VALIDATE_ERROR_DATA for a file that is not
 * a summary, one that `ema-sim run` (or compare's DIR/sim/) wrote: a
 * simulation, not a measurement ("PATH:LINE:COL: sim.events: ..." where it
 * counts simulated events, "...: provenance: ..." where it has that member
 * and DIR no provenance.txt), has a malformed result ("ops[3].seconds: ...")
 * or belongs to another experiment (its name, its number of results, or a
 * result whose name is not the experiment's at that place). */
EmaOpsReport *ema_compare_read_summary(const char *dir, const EmaExperiment *experiment,
                                       GError **error);

typedef struct {
  const char *name; /* borrowed from the reports */
  gboolean decode;  /* a decode scenario (else an op) */
  double measured_s, simulated_s;
  double measured_bandwidth, simulated_bandwidth; /* B/s, as the summaries give them */
  double error;                                   /* (simulated - measured) / measured */
} EmaCompareRow;

typedef struct {
  GArray *rows; /* EmaCompareRow, in the reports' order */
  guint ops, decodes;
  /* the median of |error| over the ops, the decode scenarios and all rows
   * (NAN when there are none), and the row of the largest |error| (-1) */
  double ops_median, decode_median, all_median;
  gint ops_worst, decode_worst;
} EmaComparison;

/* Pair MEASURED and SIMULATED (the same results in the same order, as
 * ema_compare_read_summary and ema_ops_run give them for one experiment).
 * Errors: EMA_VALIDATE_ERROR_DATA when they differ in length or names, or
 * a time is not positive. */
EmaComparison *ema_comparison_new(const EmaOpsReport *measured, const EmaOpsReport *simulated,
                                  GError **error);
void ema_comparison_free(EmaComparison *comparison);
G_DEFINE_AUTOPTR_CLEANUP_FUNC(EmaComparison, ema_comparison_free)

/* What the written files say about where the numbers came from. */
typedef struct {
  const char *experiment_file; /* as given on the command line */
  const char *experiment_name;
  const char *server_name;
  const char *measured_dir;   /* holds summary.json (and provenance.txt, if written by run) */
  const char *simulated_with; /* e.g. "libema 0.1.0 (ema_ops_run)" */
  /* the server the measured run's experiment named, where it is not SERVER_NAME (NULL: the
   * same, or not said) */
  const char *measured_server;
} EmaCompareInfo;

/* The table and the medians. */
void ema_comparison_print(FILE *out, const EmaComparison *comparison);
/* DIR/compare.csv and DIR/compare.md (DIR must exist). The markdown
 * quotes INFO->measured_dir/provenance.txt's date, GPUs, driver and
 * command when there is one. Errors: EMA_VALIDATE_ERROR_IO. */
gboolean ema_comparison_write(const EmaComparison *comparison, const EmaCompareInfo *info,
                              const char *dir, GError **error);

/* The provenance of a measured directory (provenance.txt written by `run`):
 * its [run] keys as "key: value" lines, or NULL when there is none. */
char *ema_compare_provenance(const char *dir);
/* The server model the measured directory's experiment named (its provenance.txt's `server`),
 * or NULL when it does not say. */
char *ema_compare_measured_server(const char *dir);

G_END_DECLS
