/* capture.h: `ema-validate capture` and `ema-validate profile`: run a program under the CUPTI
 * injection library (libemacapture.so, capturelib.c) and turn what it recorded into summaries,
 * Chrome trace JSON and, for a profiling workload, the operator profile tables of
 * hwmodels/profiles/README.md. No CUDA here: the program run does the CUDA; this side forks, waits
 * and converts (trace.h).
 *
 * Invariants: the program's exit status is returned whatever it was (a crash is a status too:
 * 128 + signal), and the trace is converted in every case, so a program that died leaves a
 * readable trace; a conversion that fails is an error, never a partial silent result. */
#pragma once

#include <glib.h>

G_BEGIN_DECLS

/* The kinds of command their folders' markers record (output.h, ema_output_claim_dir_kind): a
 * capture's folder is taken by no other command (a profile with -o naming it removed the
 * capture), and neither command takes a sweep's, a run's or a pool's. */
#define EMA_CAPTURE_OUTPUT_KIND "ema-validate capture"
#define EMA_PROFILE_OUTPUT_KIND "ema-validate profile"

typedef struct {
  const char *dir;          /* where the CSVs, summaries and trace.json go (claimed, output.h) */
  const char *library;      /* libemacapture.so (absolute) */
  char **argv;              /* the program and its arguments, NULL-terminated */
  guint buffers, buffer_mb; /* the activity-buffer pool (0: the library's default) */
} EmaCaptureOptions;

/* the injection library: EMA_CAPTURE_LIB, else libemacapture.so beside the running executable,
 * else NULL (with the error saying where it looked) */
char *ema_capture_find_library(GError **error);

/* Claims the directory (ema_output_claim_dir_kind, EMA_CAPTURE_OUTPUT_KIND: what an earlier
 * capture wrote there goes, a non-empty folder no claim made, or another command's, is refused, a
 * user's file stays), runs the program with
 * CUDA_INJECTION64_PATH and NVTX_INJECTION64_PATH naming the library and
 * EMA_CAPTURE_DIR the directory, waits for it, and writes DIR/ranges.csv, DIR/kernel-names.csv
 * and DIR/trace.json from what it recorded. *status gets the program's exit status (128 + N
 * when signal N ended it). FALSE when the program cannot start or its trace cannot be read. */
gboolean ema_capture_run(const EmaCaptureOptions *options, int *status, GError **error);

/* The profile tables of a capture directory into OUT_DIR (trace.h's ema_trace_write_profiles)
 * and OUT_DIR/profile.yaml: the `key: value` lines of CAPTURE_DIR/workload.yaml the workload
 * wrote (device, driver, versions, what it measured), then date, command, source: measured and
 * the tables written. Once the capture has been read and its points checked, OUT_DIR is
 * claimed (EMA_PROFILE_OUTPUT_KIND) and what an earlier profile wrote there removed
 * (EMA_OUTPUT_CLAIM_CLEAR), so a capture
 * that does not read, or whose points are malformed or absent, leaves the earlier profile as it
 * was; each file is listed in its marker before it is written: one
 * there that no marker lists (a user's gemm.csv) is refused, never overwritten. */
extern const char *const ema_capture_profile_entries[];
gboolean ema_capture_write_profile(const char *capture_dir, const char *out_dir,
                                   const char *command, GError **error);

G_END_DECLS
