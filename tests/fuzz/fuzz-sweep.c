/* fuzz-sweep.c: libFuzzer harness of sweep expansion and resume (sweep.h):
 * the input (split at "\n%%\n") is a sweep file (variants, swept paths,
 * repeats, plot), then a point's summary.json, then its resolved.yaml. A
 * sweep that loads is described point by point; one of at most 64 points is
 * also resolved (every point bound as an experiment), and then its first
 * point's folder, made of the other two parts (resolved.yaml: the point's
 * own when absent), is judged as a resume judges it (ema_sweep_point_done:
 * the summary's shape, its provenance's build id and input hashes). */
#include <stdio.h>
#include <stdlib.h>

#include <glib/gstdio.h>

#include "ema/cli/sweep.h"
#include "fuzzutil.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
  g_autofree char *path = NULL;
  g_autoptr(EmaSweep) sweep = NULL;
  GError *error = NULL;
  const uint8_t *parts[3];
  size_t sizes[3];
  guint n, given;
  ema_fuzz_init();
  if (size > 64 * 1024)
    return 0;
  given = ema_fuzz_split(data, size, parts, sizes, G_N_ELEMENTS(parts));
  path = ema_fuzz_write("sweep.yaml", parts[0], sizes[0]);
  sweep = ema_sweep_load(path, NULL, &error);
  if (sweep == NULL) {
    if (error == NULL)
      abort();
    g_clear_error(&error);
    return 0;
  }
  n = ema_sweep_n_points(sweep);
  for (guint p = 0; p < n && p < 4096; p++) {
    g_autofree char *what = ema_sweep_point_describe(sweep, p);
    if (ema_sweep_point_name(sweep, p) == NULL || what == NULL)
      abort();
  }
  if (n <= 64 && !ema_sweep_resolve(sweep, &error)) {
    if (error == NULL)
      abort();
    g_clear_error(&error);
    return 0;
  }
  if (n >= 1 && n <= 64 && given >= 2) {
    g_autofree char *dir = g_build_filename(ema_fuzz_dir(), "point", NULL);
    g_autofree char *summary = g_build_filename(dir, "summary.json", NULL);
    g_autofree char *resolved = g_build_filename(dir, "resolved.yaml", NULL);
    g_autofree char *stale = NULL;
    g_autofree char *own = NULL;
    EmaSweepRecord *record;
    g_mkdir_with_parents(dir, 0700);
    g_file_set_contents(summary, (const char *) parts[1], (gssize) sizes[1], NULL);
    if (given >= 3)
      g_file_set_contents(resolved, (const char *) parts[2], (gssize) sizes[2], NULL);
    else {
      g_autoptr(EmaExperiment) point = ema_sweep_load_point(sweep, 0, NULL);
      own = point ? ema_experiment_to_yaml(point) : g_strdup("");
      g_file_set_contents(resolved, own, -1, NULL);
    }
    {
      /* the point's search paths as the sweep gives them (run.env), so that the summary and
       * resolved.yaml of the input are what the resume check reads */
      g_autofree char *env = g_build_filename(dir, "run.env", NULL);
      g_file_set_contents(env, "fuzz\n", -1, NULL);
    }
    record = ema_sweep_point_done(sweep, 0, dir, "fuzz", "fuzz\n", FALSE, &stale);
    ema_sweep_record_free(record);
  }
  return 0;
}
