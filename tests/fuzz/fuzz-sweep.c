/* fuzz-sweep.c: libFuzzer harness of sweep expansion (sweep.h): the input is
 * a sweep file (variants, swept paths, repeats, plot). A sweep that loads
 * is described point by point; one of at most 64 points is also resolved
 * (every point bound as an experiment). */
#include <stdio.h>
#include <stdlib.h>

#include "ema/cli/sweep.h"
#include "fuzzutil.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
  g_autofree char *path = NULL;
  g_autoptr(EmaSweep) sweep = NULL;
  GError *error = NULL;
  guint n;
  ema_fuzz_init();
  if (size > 64 * 1024)
    return 0;
  path = ema_fuzz_write("sweep.yaml", data, size);
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
  }
  return 0;
}
