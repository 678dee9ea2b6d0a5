/* fuzz-trace.c: libFuzzer harness of one trace reader, chosen at build time
 * by EMA_FUZZ_FORMAT (an EmaTraceFormat: Azure, Vidur, BurstGPT, Mooncake,
 * or the lengths and vllm-bench readers over Poisson arrivals). The input is the file; every
 * record is read (at most 100,000); records never go back in time and a
 * failure always comes with an error naming the file. */
#include <stdio.h>
#include <stdlib.h>

#include "ema/traces/trace.h"
#include "fuzzutil.h"

#ifndef EMA_FUZZ_FORMAT
#error "EMA_FUZZ_FORMAT must name the reader"
#endif

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

static EmaTraceSource *open_source(const char *path, GError **error) {
  if (EMA_FUZZ_FORMAT == EMA_TRACE_FORMAT_LENGTHS) {
    EmaTraceArrivals *arrivals = ema_trace_arrivals_new_poisson(10, 1, error);
    return arrivals ? ema_trace_source_open_lengths(path, arrivals, FALSE, error) : NULL;
  }
  if (EMA_FUZZ_FORMAT == EMA_TRACE_FORMAT_VLLM_BENCH) {
    EmaTraceArrivals *arrivals = ema_trace_arrivals_new_poisson(10, 1, error);
    return arrivals ? ema_trace_source_open_vllm_bench(path, arrivals, FALSE, error) : NULL;
  }
  return ema_trace_source_open(EMA_FUZZ_FORMAT, path, error);
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
  g_autofree char *path = NULL;
  g_autoptr(EmaTraceSource) src = NULL;
  GError *error = NULL;
  EmaRequestRecord record;
  EmaTime last = G_MININT64;
  ema_fuzz_init();
  if (size > 1 << 20)
    return 0;
  path = ema_fuzz_write("trace", data, size);
  src = open_source(path, &error);
  if (src == NULL) {
    if (error == NULL || !g_str_has_prefix(error->message, path))
      abort();
    g_clear_error(&error);
    return 0;
  }
  for (guint i = 0; i < 100000 && ema_trace_source_next(src, &record, &error); i++) {
    if (record.arrival < last)
      abort();
    last = record.arrival;
  }
  if (error != NULL && !g_str_has_prefix(error->message, path))
    abort();
  g_clear_error(&error);
  return 0;
}
