/* fuzz-params.c: libFuzzer harness of the parameter tables: the input is an
 * experiment file (parts split at "\n%%\n": the file, then a file it may
 * `!include inc.yaml`), bound through every table (experiment, server,
 * models, tenants, traces, policies, ops). An experiment that loads is
 * written back as resolved YAML, which must load again and write back the
 * same text: what EMA writes, EMA reads. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "ema/run/experiment.h"
#include "fuzzutil.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
  const uint8_t *parts[2];
  size_t sizes[2];
  guint n;
  g_autofree char *path = NULL, *inc = NULL, *text = NULL, *again_path = NULL;
  g_autofree char *text_again = NULL;
  g_autoptr(EmaExperiment) experiment = NULL;
  g_autoptr(EmaExperiment) again = NULL;
  GError *error = NULL;
  ema_fuzz_init();
  if (size > 64 * 1024)
    return 0;
  n = ema_fuzz_split(data, size, parts, sizes, 2);
  path = ema_fuzz_write("experiment.yaml", parts[0], sizes[0]);
  inc = ema_fuzz_write("inc.yaml", n > 1 ? parts[1] : (const uint8_t *) "", n > 1 ? sizes[1] : 0);
  experiment = ema_experiment_load(path, NULL, &error);
  if (experiment == NULL) {
    if (error == NULL)
      abort();
    g_clear_error(&error);
    return 0;
  }
  text = ema_experiment_to_yaml(experiment);
  again_path = ema_fuzz_write("resolved.yaml", (const uint8_t *) text, strlen(text));
  again = ema_experiment_load(again_path, NULL, &error);
  if (again == NULL) {
    fprintf(stderr, "resolved YAML does not load: %s\n%s", error->message, text);
    abort();
  }
  text_again = ema_experiment_to_yaml(again);
  if (strcmp(text, text_again) != 0) {
    fprintf(stderr, "resolved YAML changes when loaded again:\n%s\n---\n%s", text, text_again);
    abort();
  }
  return 0;
}
