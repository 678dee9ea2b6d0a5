/* fuzz-validate.c: libFuzzer harness of the result readers of ema-validate
 * that run on the CPU (validate/), and of what they feed: the first byte
 * picks the reader, the rest (split at "\n%%\n") is its files: a decode
 * table (decode.csv), a measurement directory (measurements.csv, then
 * samples.csv, then provenance.txt: with all three the figures are derived
 * and written as a server model's text, as calibrate --from-results does), a
 * measured summary.json compared with an ops experiment of the source tree,
 * or a captured CUDA trace (kernels.csv, memcpy.csv, memset.csv,
 * memory.csv, vmm.csv, nvtx.csv; the parts not given are absent), whose
 * profile tables are then written (ema-validate profile --from-capture). */
#include <stdio.h>
#include <stdlib.h>

#include <glib/gstdio.h>

#include "calderive.h"
#include "calyaml.h"
#include "compare.h"
#include "decodefit.h"
#include "ema/run/experiment.h"
#include "fuzzutil.h"
#include "report.h"
#include "trace.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

/* The ops experiment the summaries are read against (loaded once). */
static const EmaExperiment *ops_experiment(void) {
  static EmaExperiment *experiment;
  if (experiment == NULL) {
    g_autofree char *path =
        g_build_filename(EMA_FUZZ_SOURCE_ROOT, "experiments", "validate", "h200x2-ops.yaml", NULL);
    experiment = ema_experiment_load(path, NULL, NULL);
    if (experiment == NULL)
      abort();
  }
  return experiment;
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
  static const char *const capture_files[] = {"kernels.csv", "memcpy.csv", "memset.csv",
                                              "memory.csv",  "vmm.csv",    "nvtx.csv"};
  const uint8_t *parts[G_N_ELEMENTS(capture_files)];
  size_t sizes[G_N_ELEMENTS(capture_files)];
  GError *error = NULL;
  guint n;
  ema_fuzz_init();
  if (size < 1 || size > 256 * 1024)
    return 0;
  n = ema_fuzz_split(data + 1, size - 1, parts, sizes, G_N_ELEMENTS(parts));
  switch (data[0] % 4) {
  case 0: {
    g_autofree char *path = ema_fuzz_write("decode.csv", parts[0], sizes[0]);
    GPtrArray *rows = ema_decode_rows_read(path, &error);
    if (rows)
      g_ptr_array_unref(rows);
    break;
  }
  case 1: {
    g_free(ema_fuzz_write("measurements.csv", parts[0], sizes[0]));
    g_free(ema_fuzz_write("samples.csv", n > 1 ? parts[1] : (const uint8_t *) "",
                          n > 1 ? sizes[1] : 0));
    g_free(ema_fuzz_write("provenance.txt", n > 2 ? parts[2] : (const uint8_t *) "",
                          n > 2 ? sizes[2] : 0));
    EmaReport *report = ema_report_read_csv(ema_fuzz_dir(), &error);
    EmaCalibrationRun *run =
        report && n > 2 ? ema_calibration_run_load(ema_fuzz_dir(), NULL) : NULL;
    EmaCalibrationFigures figures = {0};
    if (run && ema_calibration_derive(report, run, &figures, &error))
      g_free(ema_calibration_yaml(&figures));
    if (run)
      ema_calibration_run_free(run);
    if (report)
      ema_report_free(report);
    break;
  }
  case 3: {
    for (guint i = 0; i < G_N_ELEMENTS(capture_files); i++) {
      g_autofree char *path = g_build_filename(ema_fuzz_dir(), capture_files[i], NULL);
      g_remove(path);
      if (i < n)
        g_free(ema_fuzz_write(capture_files[i], parts[i], sizes[i]));
    }
    EmaTrace *trace = ema_trace_load(ema_fuzz_dir(), &error);
    if (trace) {
      /* the profile tables, into a folder of their own (an NVTX range names the files) */
      g_autofree char *out = g_build_filename(ema_fuzz_dir(), "profile", NULL);
      GPtrArray *tables = NULL;
      g_mkdir_with_parents(out, 0700);
      if (ema_trace_write_profiles(trace, out, &tables, &error) && tables)
        g_ptr_array_unref(tables);
      ema_trace_free(trace);
    }
    break;
  }
  default: {
    g_free(ema_fuzz_write("summary.json", parts[0], sizes[0]));
    EmaOpsReport *report = ema_compare_read_summary(ema_fuzz_dir(), ops_experiment(), &error);
    if (report)
      ema_ops_report_free(report);
    break;
  }
  }
  g_clear_error(&error);
  return 0;
}
