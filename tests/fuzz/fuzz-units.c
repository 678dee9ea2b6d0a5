/* fuzz-units.c: libFuzzer harness of the quantity parsers (units.h). The
 * first byte picks the kind (size, bandwidth, duration, FLOP rate,
 * fraction, number, integer); the rest is the text. A parsed value is
 * printed back and must parse again to the same value (sizes, durations,
 * integers exactly; floating kinds to the same double). */
#include <stdio.h>
#include <stdlib.h>

#include <string.h>

#include "ema/core/units.h"
#include "fuzzutil.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
  g_autofree char *text = NULL;
  GError *error = NULL;
  ema_fuzz_init();
  if (size < 1 || size > 4096)
    return 0;
  text = g_strndup((const char *) data + 1, size - 1);
  switch (data[0] % 7) {
  case 0: {
    guint64 v, w;
    if (ema_units_parse_size(text, &v, &error)) {
      g_autofree char *back = ema_units_format_size(v);
      if (!ema_units_parse_size(back, &w, NULL) || w != v)
        abort();
    }
    break;
  }
  case 1: {
    double v, w;
    if (ema_units_parse_bandwidth(text, &v, &error)) {
      g_autofree char *back = ema_units_format_bandwidth(v);
      if (!ema_units_parse_bandwidth(back, &w, NULL) || w != v)
        abort();
    }
    break;
  }
  case 2: {
    gint64 v, w;
    if (ema_units_parse_duration(text, &v, &error)) {
      g_autofree char *back = ema_units_format_duration(v);
      if (!ema_units_parse_duration(back, &w, NULL) || w != v)
        abort();
    }
    break;
  }
  case 3: {
    double v, w;
    if (ema_units_parse_flops(text, &v, &error)) {
      g_autofree char *back = ema_units_format_flops(v);
      if (!ema_units_parse_flops(back, &w, NULL) || w != v)
        abort();
    }
    break;
  }
  case 4: {
    double v, w;
    if (ema_units_parse_fraction(text, &v, &error)) {
      g_autofree char *back = ema_units_format_fraction(v);
      if (!ema_units_parse_fraction(back, &w, NULL) || w != v)
        abort();
    }
    break;
  }
  case 5: {
    double v;
    ema_units_parse_double(text, &v, &error);
    break;
  }
  default: {
    gint64 v;
    ema_units_parse_int(text, &v, &error);
    break;
  }
  }
  g_clear_error(&error);
  return 0;
}
