/* units.h: parsing and printing quantities with units, as they appear in
 * experiment and hardware-model YAML ("2MiB", "139.8GiB", "397GB/s",
 * "6.5us", "989TFLOP/s", "5%").
 *
 * Parsing is strict: the whole text must be one number and one known unit
 * (no unit means bytes for sizes; durations, bandwidths and rates need one).
 * Errors carry a one-line message that names the valid units; they use
 * EMA_UNITS_ERROR and never include a location (the caller adds it).
 * Printing picks the largest unit that keeps the value exact enough to parse
 * back to the same number, so resolved.yaml round-trips bit for bit. */
#pragma once

#include <glib.h>

G_BEGIN_DECLS

#define EMA_UNITS_ERROR (ema_units_error_quark())
GQuark ema_units_error_quark(void);

typedef enum {
  EMA_UNITS_ERROR_SYNTAX, /* not a number, or junk after it */
  EMA_UNITS_ERROR_UNIT,   /* unknown unit for this kind of quantity */
  EMA_UNITS_ERROR_RANGE,  /* negative where not allowed, or overflow */
} EmaUnitsError;

/* Bytes: plain integer (bytes) or a number with B, KB, MB, GB, TB (powers
 * of 1000) or KiB, MiB, GiB, TiB (powers of 1024). Fractions allowed
 * ("139.8GiB"); rounded to the nearest byte. Never negative. */
gboolean ema_units_parse_size(const char *text, guint64 *bytes, GError **error);

/* Bytes per second: a number with B/s, KB/s, MB/s, GB/s, TB/s, KiB/s,
 * MiB/s, GiB/s, TiB/s. Never negative. */
gboolean ema_units_parse_bandwidth(const char *text, double *bytes_per_s, GError **error);

/* Nanoseconds: a number with ns, us (or µs), ms, s, min, h. Rounded to the
 * nearest nanosecond. Never negative. */
gboolean ema_units_parse_duration(const char *text, gint64 *ns, GError **error);

/* Operations per second: a number with FLOP/s, GFLOP/s, TFLOP/s, PFLOP/s
 * (FLOPS, GFLOPS, TFLOPS, PFLOPS are accepted too). Never negative. */
gboolean ema_units_parse_flops(const char *text, double *flop_per_s, GError **error);

/* A fraction: "5%" (= 0.05) or a plain number ("0.05"). May be negative
 * only if the caller's range allows it (the parser itself accepts a sign). */
gboolean ema_units_parse_fraction(const char *text, double *fraction, GError **error);

/* A plain number with no unit (optional sign, decimal or exponent). */
gboolean ema_units_parse_double(const char *text, double *value, GError **error);
/* A plain integer with no unit (optional sign), within gint64. */
gboolean ema_units_parse_int(const char *text, gint64 *value, GError **error);

/* Printing: newly allocated strings that the matching parser reads back to
 * exactly the same value. */
char *ema_units_format_size(guint64 bytes); /* "4GiB", "1000B" -> "1KB" */
/* For people, not for files: binary units with 3 significant digits
 * ("39.5 GiB", "512 B"); not exact, so never written where it is read back. */
char *ema_units_format_size_human(guint64 bytes);
char *ema_units_format_bandwidth(double bytes_per_s); /* "397GB/s" */
char *ema_units_format_duration(gint64 ns);           /* "6530ns" -> "6.53us" */
char *ema_units_format_flops(double flop_per_s);      /* "989TFLOP/s" */
char *ema_units_format_fraction(double fraction);     /* 0.05 -> "5%" */
char *ema_units_format_double(double value);          /* shortest round-trip */

G_END_DECLS
