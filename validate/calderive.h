/* calderive.h: from the raw results of `ema-validate calibrate` to the
 * figures of the server model. One function, ema_calibration_derive(),
 * turns the measurements (a report, as measured or as read back from
 * measurements.csv and samples.csv) and the facts of the run that the
 * measurements do not hold (EmaCalibrationRun, saved as provenance.txt)
 * into EmaCalibrationFigures (calyaml.h): the largest-size rates, the copy
 * fits, the latencies, the VMM costs, the interference ratios and
 * coefficients, the prefetch overlap. The GPU run and `calibrate
 * --from-results DIR` (no GPU) both go through it, so a results directory
 * can be turned into a model again when the fit or the schema changes.
 *
 * Measurements are found by the names calibrate.c gives them (the
 * EMA_CAL_* prefixes below, then "-SIZE"); sizes come from their bytes
 * column. Pure C. */
#pragma once

#include <stdio.h>

#include <glib.h>

#include "calyaml.h"
#include "ema/hw/hwmodel.h"
#include "report.h"

G_BEGIN_DECLS

/* Name prefixes of the sized measurements (NAME = PREFIX-SIZE, e.g.
 * "peer-copy-push-gpu0-gpu1-4GiB"), and the names of the others. */
#define EMA_CAL_EMPTY_KERNEL "empty-kernel"
#define EMA_CAL_LOCAL_READ "local-read-gpu0"
#define EMA_CAL_LOCAL_COPY "local-copy-gpu0"
#define EMA_CAL_PEER_READ "peer-read-gpu1-gpu0"
#define EMA_CAL_PUSH_0TO1 "peer-copy-push-gpu0-gpu1"
#define EMA_CAL_PUSH_1TO0 "peer-copy-push-gpu1-gpu0"
#define EMA_CAL_PULL_1TO0 "peer-copy-pull-gpu1-gpu0"
#define EMA_CAL_PULL_0TO1 "peer-copy-pull-gpu0-gpu1"
#define EMA_CAL_PEER_BOTH "peer-copy-both-directions"
#define EMA_CAL_REMOTE_LATENCY "latency-gpu1-from-gpu0"
#define EMA_CAL_LOCAL_LATENCY "latency-gpu0-local"
#define EMA_CAL_H2D "host-copy-h2d"
#define EMA_CAL_D2H "host-copy-d2h"
#define EMA_CAL_HOST_BOTH "host-copy-both-directions"
#define EMA_CAL_VMM "vmm" /* vmm-STEP-1xSLICE, vmm-batch-STEP-NxSLICE */
#define EMA_CAL_VMM_READ "vmm-direct-read-gpu1-gpu0"
#define EMA_CAL_OVERLAP_COPIES "overlap-copies-alone"
#define EMA_CAL_OVERLAP_COMPUTE "overlap-compute-alone"
#define EMA_CAL_OVERLAP_PIPELINED "overlap-pipelined"
/* Interference: CASE-kernel-overlapped:kernel-alone|kernel-together|OTHER-alone|OTHER-together
 * and CASE-OTHER-overlapped:... for these cases and OTHER labels. */
#define EMA_CAL_LENDER_COPY "lender-vs-peer-copy"
#define EMA_CAL_LENDER_COPY_OTHER "peer-copy"
#define EMA_CAL_LENDER_READ "lender-vs-direct-read"
#define EMA_CAL_LENDER_READ_OTHER "direct-read"
#define EMA_CAL_BORROWER_COPY "borrower-vs-incoming-copy"
#define EMA_CAL_BORROWER_COPY_OTHER "incoming-copy"
/* Read kernels up to this size give the kernel's fixed cost. */
#define EMA_CAL_KERNEL_OVERHEAD_MAX_BYTES ((guint64) 1 << 20)

/* What a run knew besides its measurements (provenance.txt). */
typedef struct {
  char *name;           /* model name */
  char *date;           /* ISO 8601, UTC */
  char *command;        /* the command that measured */
  char *gpu_name;       /* device name */
  char *gpu_list;       /* every GPU, one line */
  char *driver_version; /* NVIDIA driver */
  char *cuda_versions;  /* "driver API 13.0, runtime 13.0" */
  char *results_dir;    /* where the CSVs are (as the command gave it) */
  char *reference_name; /* the server model of the unmeasured keys */
  gint64 gpus;
  EmaTopology topology;
  guint64 hbm_capacity, hbm_total; /* cudaMemGetInfo free and total before the run */
  double matrix_flops;             /* taken from the reference model */
  guint repeats, warmups;
  guint64 vmm_granularity_min, vmm_granularity_rec;
  guint overlap_chunks;
  guint64 overlap_chunk_bytes;
  guint remote_chase_steps, local_chase_steps; /* dependent loads per latency repeat */
} EmaCalibrationRun;

void ema_calibration_run_free(EmaCalibrationRun *run);
G_DEFINE_AUTOPTR_CLEANUP_FUNC(EmaCalibrationRun, ema_calibration_run_free)

/* DIR/provenance.txt, a GKeyFile with one [calibration] group. Errors:
 * EMA_VALIDATE_ERROR_IO (write), EMA_VALIDATE_ERROR_DATA (a missing or
 * malformed key, naming it). */
gboolean ema_calibration_run_save(const EmaCalibrationRun *run, const char *dir, GError **error);
EmaCalibrationRun *ema_calibration_run_load(const char *dir, GError **error);

/* Derive FIGURES from REPORT and RUN (FIGURES' strings point into RUN),
 * and add the fits, ratios and coefficients to REPORT's derived figures.
 * Errors: EMA_VALIDATE_ERROR_DATA naming a missing measurement,
 * EMA_VALIDATE_ERROR_FIT. */
gboolean ema_calibration_derive(EmaReport *report, const EmaCalibrationRun *run,
                                EmaCalibrationFigures *figures, GError **error);

/* Where the results of a run go. */
typedef struct {
  const char *results_dir;        /* the CSV files (created if missing) */
  gboolean new_run;               /* write measurements.csv, samples.csv and provenance.txt
                                     too (FALSE: only derived.csv, the measurements are read) */
  const char *output;             /* the server model YAML */
  const char *rederived_command;  /* for the YAML header when not a new run */
  const EmaServerSpec *reference; /* printed beside the figures; NULL: no comparison */
  FILE *log;                      /* where the figures are printed; NULL: nowhere */
} EmaCalibrationOutput;

/* Derive the figures of REPORT and RUN, write the files OUTPUT names, and
 * print the fits, the interference figures and the comparison with the
 * reference to OUTPUT->log. */
gboolean ema_calibration_write_results(EmaReport *report, const EmaCalibrationRun *run,
                                       const EmaCalibrationOutput *output, GError **error);

/* The kind a calibration's results folder records in its marker (ema/run/output.h: "# kind:
 * ema-validate calibrate"), and what a new calibration writes there (NULL-terminated): its four
 * files. */
#define EMA_CALIBRATE_OUTPUT_KIND "ema-validate calibrate"
extern const char *const ema_calibration_results_entries[];

/* Claim DIR for a new calibration's results as every output folder of ema-sim and
 * ema-validate is claimed (ema_output_claim_dir_kind, EMA_CALIBRATE_OUTPUT_KIND, CLEAR): DIR is
 * made where absent; an empty folder, or one an earlier calibration claimed, is taken, the files
 * that calibration wrote removed (none of them is left to pass for this run's when it fails),
 * anything else there left (the decode.csv that `ema-validate decode --csv` appends, a README);
 * a folder another kind of command claimed (an ema-sim run's or sweep's, an ema-validate run's or
 * pool's) or a non-empty folder no claim made is refused, every file in it left. DIR is locked
 * for this process's life. Called once the GPUs are found, before the first measurement.
 * Errors: the claim's (G_FILE_ERROR, naming DIR). */
gboolean ema_calibration_claim_results(const char *dir, GError **error);

/* `ema-validate calibrate --from-results DIR`: hold DIR (ema_output_hold_dir: refused while
 * another process holds it, a calibration measuring into it, or where its marker records
 * another kind of command; no marker written, so the committed results stay as they are), read
 * its provenance.txt, measurements.csv and samples.csv, derive the figures again, write the
 * model to OUTPUT (NULL: hwmodels/calibration/NAME.yaml), then rewrite DIR/derived.csv (a model
 * that does not load leaves both as they were). COMMAND goes into the model's header; the
 * figures go to LOG (may be NULL), beside REFERENCE's (may be NULL). */
gboolean ema_calibration_from_results(const char *dir, const char *output, const char *command,
                                      const EmaServerSpec *reference, FILE *log, GError **error);

G_END_DECLS
