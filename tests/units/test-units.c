/* test-units.c: tests for ema/units.h: exact parsing of sizes, bandwidths,
 * durations, FLOP rates, fractions and plain numbers; strict rejection of
 * malformed input with one-line messages; and exact round trips
 * parse(format(x)) == x over many random values (fixed seed). */
#include "ema/core/units.h"

#include <float.h>
#include <math.h>
#include <string.h>

#define ROUND_TRIPS 200000
#define SEED 0x5eed2024u

/* ---- helpers ---- */

static void check_error(GError *error, int code, const char *message, const char *contains) {
  g_assert_nonnull(error);
  g_assert_error(error, EMA_UNITS_ERROR, code);
  g_assert_null(strchr(error->message, '\n'));
  if (message != NULL)
    g_assert_cmpstr(error->message, ==, message);
  if (contains != NULL)
    g_assert_nonnull(strstr(error->message, contains));
}

static void size_ok(const char *text, guint64 expected) {
  GError *error = NULL;
  guint64 v = 12345;
  gboolean ok = ema_units_parse_size(text, &v, &error);
  g_assert_no_error(error);
  g_assert_true(ok);
  g_assert_cmpuint(v, ==, expected);
}

static void size_bad(const char *text, int code, const char *message, const char *contains) {
  GError *error = NULL;
  guint64 v = 12345;
  g_assert_false(ema_units_parse_size(text, &v, &error));
  check_error(error, code, message, contains);
  g_assert_cmpuint(v, ==, 12345); /* untouched on error */
  g_error_free(error);
}

static void duration_ok(const char *text, gint64 expected) {
  GError *error = NULL;
  gint64 v = -1;
  gboolean ok = ema_units_parse_duration(text, &v, &error);
  g_assert_no_error(error);
  g_assert_true(ok);
  g_assert_cmpint(v, ==, expected);
}

static void duration_bad(const char *text, int code, const char *message, const char *contains) {
  GError *error = NULL;
  gint64 v = -1;
  g_assert_false(ema_units_parse_duration(text, &v, &error));
  check_error(error, code, message, contains);
  g_assert_cmpint(v, ==, -1);
  g_error_free(error);
}

typedef gboolean (*ParseDouble)(const char *, double *, GError **);

static gboolean same_double(double a, double b) {
  return memcmp(&a, &b, sizeof a) == 0;
}

static void double_ok(ParseDouble parse, const char *text, double expected) {
  GError *error = NULL;
  double v = -42.0;
  gboolean ok = parse(text, &v, &error);
  g_assert_no_error(error);
  g_assert_true(ok);
  if (!same_double(v, expected))
    g_error("'%s' parsed as %.17g, expected %.17g", text, v, expected);
}

static void double_bad(ParseDouble parse, const char *text, int code, const char *message,
                       const char *contains) {
  GError *error = NULL;
  double v = -42.0;
  g_assert_false(parse(text, &v, &error));
  check_error(error, code, message, contains);
  g_assert_true(same_double(v, -42.0));
  g_error_free(error);
}

static void int_ok(const char *text, gint64 expected) {
  GError *error = NULL;
  gint64 v = -1;
  gboolean ok = ema_units_parse_int(text, &v, &error);
  g_assert_no_error(error);
  g_assert_true(ok);
  g_assert_cmpint(v, ==, expected);
}

static void int_bad(const char *text, int code, const char *message) {
  GError *error = NULL;
  gint64 v = -1;
  g_assert_false(ema_units_parse_int(text, &v, &error));
  check_error(error, code, message, NULL);
  g_assert_cmpint(v, ==, -1);
  g_error_free(error);
}

static void format_is(char *formatted, const char *expected) {
  g_assert_cmpstr(formatted, ==, expected);
  g_free(formatted);
}

/* ---- sizes ---- */

static void test_size_parse(void) {
  size_ok("2MiB", 2097152);
  size_ok("139.8GiB", (guint64) llround(139.8 * 1073741824.0));
  size_ok("139.8GiB", G_GUINT64_CONSTANT(150109106995)); /* 150109106995.2 */
  size_ok("4096", 4096);
  size_ok("0", 0);
  size_ok("  4096\t", 4096);
  size_ok("4 KiB", 4096);
  size_ok(" 4KiB ", 4096);
  size_ok("+4KiB", 4096);
  size_ok("1KB", 1000);
  size_ok("1.5KB", 1500);
  size_ok("1e3B", 1000);
  size_ok("0.5B", 1); /* half rounds up */
  size_ok("0.49B", 0);
  size_ok("1.0005KB", 1001); /* 1000.5 exactly, no double error */
  size_ok(".5KiB", 512);
  size_ok("1.KiB", 1024);
  size_ok("80GB", G_GUINT64_CONSTANT(80000000000));
  size_ok("1TiB", G_GUINT64_CONSTANT(1099511627776));
  size_ok("3TB", G_GUINT64_CONSTANT(3000000000000));
  size_ok("0e999999999999TiB", 0);
  size_ok("1e-999999999999TiB", 0);
  size_ok("18446744073709551615", G_MAXUINT64);
  size_ok("18446744073709551615B", G_MAXUINT64);
  size_ok("00000000000000000000000018446744073709551615", G_MAXUINT64);
  size_ok("18446744073709.551615MB", G_MAXUINT64);
  size_ok("16777215.999999999999TiB", G_MAXUINT64); /* 2^64 - 1.0995 rounds down */
}

static void test_size_errors(void) {
  size_bad("1.5", EMA_UNITS_ERROR_UNIT, NULL, "B, KB, MB, GB, TB, KiB, MiB, GiB, TiB");
  size_bad("1e3", EMA_UNITS_ERROR_UNIT, NULL, "needs a unit");
  size_bad("-4KiB", EMA_UNITS_ERROR_RANGE, "negative size '-4KiB' is not allowed", NULL);
  size_bad("-0", EMA_UNITS_ERROR_RANGE, NULL, "negative");
  size_bad("4XiB", EMA_UNITS_ERROR_UNIT,
           "unknown unit 'XiB' in '4XiB' (sizes use B, KB, MB, GB, TB, KiB, MiB, GiB, TiB)", NULL);
  size_bad("4XB", EMA_UNITS_ERROR_UNIT,
           "unknown unit 'XB' in '4XB' (sizes use B, KB, MB, GB, TB, KiB, MiB, GiB, TiB)", NULL);
  size_bad("4kib", EMA_UNITS_ERROR_UNIT, NULL, "unknown unit 'kib'"); /* case-sensitive */
  size_bad("4kB", EMA_UNITS_ERROR_UNIT, NULL, "unknown unit 'kB'");
  size_bad("abc", EMA_UNITS_ERROR_SYNTAX, "'abc' is not a number", NULL);
  size_bad("", EMA_UNITS_ERROR_SYNTAX, NULL, "empty");
  size_bad("  ", EMA_UNITS_ERROR_SYNTAX, NULL, "empty");
  size_bad("KiB", EMA_UNITS_ERROR_SYNTAX, "'KiB' is not a number", NULL);
  size_bad("4 KiB extra", EMA_UNITS_ERROR_SYNTAX, NULL, "'extra'");
  size_bad("4KiB 4", EMA_UNITS_ERROR_SYNTAX, NULL, "'4'");
  size_bad("nan", EMA_UNITS_ERROR_SYNTAX, "'nan' is not a number", NULL);
  size_bad("infB", EMA_UNITS_ERROR_SYNTAX, "'infB' is not a number", NULL);
  size_bad("0x10", EMA_UNITS_ERROR_SYNTAX, "'0x10' is not a number", NULL);
  size_bad("0x1p3KiB", EMA_UNITS_ERROR_SYNTAX, NULL, "is not a number");
  size_bad("4\nKiB junk", EMA_UNITS_ERROR_SYNTAX, NULL, "'4\\nKiB junk'"); /* one line */
  size_bad("18446744073709551616", EMA_UNITS_ERROR_RANGE, NULL, "too large");
  size_bad("18446744073709551616B", EMA_UNITS_ERROR_RANGE, NULL, "too large");
  size_bad("16777216TiB", EMA_UNITS_ERROR_RANGE, NULL, "too large");
  size_bad("18446744073709551.6155KB", EMA_UNITS_ERROR_RANGE, NULL, "too large");
  size_bad("1e20B", EMA_UNITS_ERROR_RANGE, NULL, "too large");
  size_bad("1e400GB", EMA_UNITS_ERROR_RANGE, NULL, "too large");
  size_bad("1e99999999999999999999999B", EMA_UNITS_ERROR_RANGE, NULL, "too large");
}

static void test_size_format(void) {
  format_is(ema_units_format_size(0), "0B");
  format_is(ema_units_format_size(7), "7B");
  format_is(ema_units_format_size(1000), "1KB");
  format_is(ema_units_format_size(1024), "1KiB");
  format_is(ema_units_format_size(2097152), "2MiB");
  format_is(ema_units_format_size(G_GUINT64_CONSTANT(4) << 30), "4GiB");
  format_is(ema_units_format_size(G_GUINT64_CONSTANT(80000000000)), "80GB");
  format_is(ema_units_format_size(G_GUINT64_CONSTANT(1) << 50), "1024TiB");
  format_is(ema_units_format_size(1536), "1536B"); /* 1.5KiB, 1.536KB: neither whole */
  format_is(ema_units_format_size(3000), "3KB");
  format_is(ema_units_format_size(2048000), "2000KiB"); /* smaller number than "2048KB" */
  format_is(ema_units_format_size(1024000), "1000KiB");
  format_is(ema_units_format_size(G_GUINT64_CONSTANT(1000000000000)), "1TB");
  format_is(ema_units_format_size(G_GUINT64_CONSTANT(1024000000000)),
            "1024GB"); /* not 1000000000KiB */
  format_is(ema_units_format_size(3072), "3KiB");
  format_is(ema_units_format_size(1001), "1001B");
  format_is(ema_units_format_size(G_MAXUINT64), "18446744073709551615B");
}

/* ---- durations ---- */

static void test_duration_parse(void) {
  duration_ok("6.5us", 6500);
  duration_ok("6.5\xc2\xb5s", 6500); /* µs, MICRO SIGN */
  duration_ok("6.5\xce\xbcs", 6500); /* μs, GREEK SMALL LETTER MU */
  duration_ok("10ms", 10000000);
  duration_ok("1.5s", 1500000000);
  duration_ok("7ns", 7);
  duration_ok("0ns", 0);
  duration_ok("0.5ns", 1);
  duration_ok("0.4ns", 0);
  duration_ok("2min", G_GINT64_CONSTANT(120000000000));
  duration_ok("1.5h", G_GINT64_CONSTANT(5400000000000));
  duration_ok(" 10 ms ", 10000000);
  duration_ok("1e3us", 1000000);
  duration_ok("6.53us", 6530);
  duration_ok("9223372036854775807ns", G_MAXINT64);
  duration_ok("9223372036.854775807s", G_MAXINT64);
  duration_ok("9223372036.8547758074s", G_MAXINT64);
  duration_ok("2562047h", G_GINT64_CONSTANT(2562047) * 3600 * 1000000000);
}

static void test_duration_errors(void) {
  duration_bad("10", EMA_UNITS_ERROR_UNIT,
               "'10' needs a unit (durations use ns, us, ms, s, min, h)", NULL);
  duration_bad("10sec", EMA_UNITS_ERROR_UNIT,
               "unknown unit 'sec' in '10sec' (durations use ns, us, ms, s, min, h)", NULL);
  duration_bad("10S", EMA_UNITS_ERROR_UNIT, NULL, "unknown unit 'S'");
  duration_bad("-1ms", EMA_UNITS_ERROR_RANGE, "negative duration '-1ms' is not allowed", NULL);
  duration_bad("", EMA_UNITS_ERROR_SYNTAX, NULL, "empty");
  duration_bad("ms", EMA_UNITS_ERROR_SYNTAX, "'ms' is not a number", NULL);
  duration_bad("1ms 2ms", EMA_UNITS_ERROR_SYNTAX, NULL, "'2ms'");
  duration_bad("9223372036854775808ns", EMA_UNITS_ERROR_RANGE, NULL, "too large");
  duration_bad("9223372036.8547758075s", EMA_UNITS_ERROR_RANGE, NULL, "too large");
  duration_bad("2562048h", EMA_UNITS_ERROR_RANGE, NULL, "too large");
  duration_bad("1e19ns", EMA_UNITS_ERROR_RANGE, NULL, "too large");
  duration_bad("1e400s", EMA_UNITS_ERROR_RANGE, NULL, "too large");
}

static void test_duration_format(void) {
  format_is(ema_units_format_duration(0), "0ns");
  format_is(ema_units_format_duration(7), "7ns");
  format_is(ema_units_format_duration(999), "999ns");
  format_is(ema_units_format_duration(1000), "1us");
  format_is(ema_units_format_duration(6530), "6.53us");
  format_is(ema_units_format_duration(6500), "6.5us");
  format_is(ema_units_format_duration(6501), "6.501us");
  format_is(ema_units_format_duration(10000000), "10ms");
  format_is(ema_units_format_duration(1500000000), "1.5s");
  format_is(ema_units_format_duration(500000000), "500ms");
  format_is(ema_units_format_duration(1000001), "1000.001us");
  format_is(ema_units_format_duration(G_GINT64_CONSTANT(3600000000000)), "3600s");
  format_is(ema_units_format_duration(G_MAXINT64), "9223372036854775.807us");
  format_is(ema_units_format_duration(-1500), "-1.5us");
  format_is(ema_units_format_duration(G_MININT64), "-9223372036854775.808us");
}

/* ---- bandwidth, FLOP rates, fractions, numbers ---- */

static void test_bandwidth(void) {
  ParseDouble p = ema_units_parse_bandwidth;
  double_ok(p, "397GB/s", 397e9);
  double_ok(p, "55.4GB/s", 55.4e9);
  double_ok(p, "3.35TB/s", 3.35e12);
  double_ok(p, "1B/s", 1.0);
  double_ok(p, "0B/s", 0.0);
  double_ok(p, "25 GB/s", 25e9);
  double_ok(p, "1.5KiB/s", 1536.0);
  double_ok(p, "64GiB/s", 64.0 * 1073741824.0);
  double_ok(p, "2TiB/s", 2199023255552.0);
  double_ok(p, "1e-400GB/s", 0.0);
  double_bad(p, "397", EMA_UNITS_ERROR_UNIT, NULL, "needs a unit");
  double_bad(p, "397GB", EMA_UNITS_ERROR_UNIT,
             "unknown unit 'GB' in '397GB' (bandwidths use B/s, KB/s, MB/s, GB/s, TB/s, KiB/s, "
             "MiB/s, GiB/s, TiB/s)",
             NULL);
  double_bad(p, "397gb/s", EMA_UNITS_ERROR_UNIT, NULL, "unknown unit");
  double_bad(p, "-1GB/s", EMA_UNITS_ERROR_RANGE, "negative bandwidth '-1GB/s' is not allowed",
             NULL);
  double_bad(p, "1e400GB/s", EMA_UNITS_ERROR_RANGE, NULL, "too large");
  double_bad(p, "1e300TiB/s", EMA_UNITS_ERROR_RANGE, NULL, "too large");
  double_bad(p, "nanGB/s", EMA_UNITS_ERROR_SYNTAX, NULL, "is not a number");
  double_bad(p, "infGB/s", EMA_UNITS_ERROR_SYNTAX, NULL, "is not a number");

  format_is(ema_units_format_bandwidth(397e9), "397GB/s");
  format_is(ema_units_format_bandwidth(55.4e9), "55.4GB/s");
  format_is(ema_units_format_bandwidth(3.35e12), "3.35TB/s");
  format_is(ema_units_format_bandwidth(25e6), "25MB/s");
  format_is(ema_units_format_bandwidth(12.5e3), "12.5KB/s");
  format_is(ema_units_format_bandwidth(999.0), "999B/s");
  format_is(ema_units_format_bandwidth(0.0), "0B/s");
  format_is(ema_units_format_bandwidth(0.001), "0.001B/s");
}

static void test_flops(void) {
  ParseDouble p = ema_units_parse_flops;
  double_ok(p, "989TFLOP/s", 989e12);
  double_ok(p, "989TFLOPS", 989e12);
  double_ok(p, "1.979PFLOP/s", 1.979e15);
  double_ok(p, "67GFLOP/s", 67e9);
  double_ok(p, "67GFLOPS", 67e9);
  double_ok(p, "100FLOP/s", 100.0);
  double_ok(p, "100FLOPS", 100.0);
  double_bad(p, "989", EMA_UNITS_ERROR_UNIT, NULL, "FLOP/s, GFLOP/s, TFLOP/s, PFLOP/s");
  double_bad(p, "989TFLOP", EMA_UNITS_ERROR_UNIT, NULL, "unknown unit 'TFLOP'");
  double_bad(p, "989tflop/s", EMA_UNITS_ERROR_UNIT, NULL, "unknown unit");
  double_bad(p, "-989TFLOP/s", EMA_UNITS_ERROR_RANGE, NULL, "negative");

  format_is(ema_units_format_flops(989e12), "989TFLOP/s");
  format_is(ema_units_format_flops(1.979e15), "1.979PFLOP/s");
  format_is(ema_units_format_flops(67e9), "67GFLOP/s");
  format_is(ema_units_format_flops(5e6), "5000000FLOP/s");
  format_is(ema_units_format_flops(0.0), "0FLOP/s");
}

static void test_fraction(void) {
  ParseDouble p = ema_units_parse_fraction;
  double_ok(p, "5%", 0.05);
  double_ok(p, "5 %", 0.05);
  double_ok(p, "0.9", 0.9);
  double_ok(p, "90%", 0.9);
  double_ok(p, "12.5%", 0.125);
  double_ok(p, "100%", 1.0);
  double_ok(p, "-5%", -0.05);
  double_ok(p, "-0.25", -0.25);
  double_ok(p, "0.07%", 0.0007);
  double_ok(p, "1e-3", 0.001);
  double_bad(p, "5%%", EMA_UNITS_ERROR_UNIT, NULL, "unknown unit '%%'");
  double_bad(p, "5x", EMA_UNITS_ERROR_UNIT, NULL, "unknown unit 'x'");
  double_bad(p, "%", EMA_UNITS_ERROR_SYNTAX, "'%' is not a number", NULL);
  double_bad(p, "", EMA_UNITS_ERROR_SYNTAX, NULL, "empty");
  double_bad(p, "nan", EMA_UNITS_ERROR_SYNTAX, NULL, "is not a number");
  double_bad(p, "1e400%", EMA_UNITS_ERROR_RANGE, NULL, "too large");

  format_is(ema_units_format_fraction(0.05), "5%");
  format_is(ema_units_format_fraction(0.9), "90%");
  format_is(ema_units_format_fraction(0.125), "12.5%");
  format_is(ema_units_format_fraction(1.0), "100%");
  format_is(ema_units_format_fraction(0.0), "0%");
  format_is(ema_units_format_fraction(-0.05), "-5%");
  format_is(ema_units_format_fraction(0.07), "7%"); /* 0.07 * 100 is 7.000000000000001 */
  format_is(ema_units_format_fraction(1e-12), "1e-12");
}

static void test_double_and_int(void) {
  ParseDouble p = ema_units_parse_double;
  double_ok(p, "1.5", 1.5);
  double_ok(p, " -2.5e3 ", -2500.0);
  double_ok(p, "+.5", 0.5);
  double_ok(p, "0.1", 0.1);
  double_ok(p, "-0", -0.0);
  double_ok(p, "4.9406564584124654e-324", 4.9406564584124654e-324);
  double_ok(p, "1.7976931348623157e308", 1.7976931348623157e308);
  double_bad(p, "1e400", EMA_UNITS_ERROR_RANGE, NULL, "too large");
  double_bad(p, "-1e400", EMA_UNITS_ERROR_RANGE, NULL, "too large");
  double_bad(p, "nan", EMA_UNITS_ERROR_SYNTAX, "'nan' is not a number", NULL);
  double_bad(p, "inf", EMA_UNITS_ERROR_SYNTAX, "'inf' is not a number", NULL);
  double_bad(p, "-infinity", EMA_UNITS_ERROR_SYNTAX, NULL, "is not a number");
  double_bad(p, "0x10", EMA_UNITS_ERROR_SYNTAX, "'0x10' is not a number", NULL);
  double_bad(p, "1,5", EMA_UNITS_ERROR_UNIT, NULL, "',5'");
  double_bad(p, "1.5 x", EMA_UNITS_ERROR_UNIT, NULL, "'x'");
  double_bad(p, "", EMA_UNITS_ERROR_SYNTAX, NULL, "empty");
  double_bad(p, "  ", EMA_UNITS_ERROR_SYNTAX, NULL, "empty");
  double_bad(p, ".", EMA_UNITS_ERROR_SYNTAX, NULL, "is not a number");
  double_bad(p, "e5", EMA_UNITS_ERROR_SYNTAX, NULL, "is not a number");

  format_is(ema_units_format_double(0.1), "0.1");
  format_is(ema_units_format_double(1.5), "1.5");
  format_is(ema_units_format_double(-0.0), "-0");
  format_is(ema_units_format_double(1e21), "1e+21");
  format_is(ema_units_format_double(0.1 + 0.2), "0.30000000000000004");

  int_ok("42", 42);
  int_ok(" -42 ", -42);
  int_ok("+7", 7);
  int_ok("9223372036854775807", G_MAXINT64);
  int_ok("-9223372036854775808", G_MININT64);
  int_bad("9223372036854775808", EMA_UNITS_ERROR_RANGE, NULL);
  int_bad("-9223372036854775809", EMA_UNITS_ERROR_RANGE, NULL);
  int_bad("1.5", EMA_UNITS_ERROR_SYNTAX, "'1.5' is not an integer");
  int_bad("1e3", EMA_UNITS_ERROR_SYNTAX, "'1e3' is not an integer");
  int_bad("abc", EMA_UNITS_ERROR_SYNTAX, "'abc' is not a number");
  int_bad("", EMA_UNITS_ERROR_SYNTAX, NULL);
  int_bad("4KiB", EMA_UNITS_ERROR_UNIT, NULL);
  int_bad("0x10", EMA_UNITS_ERROR_SYNTAX, NULL);
}

/* NULL outputs validate without storing. */
static void test_null_outputs(void) {
  g_assert_true(ema_units_parse_size("4KiB", NULL, NULL));
  g_assert_true(ema_units_parse_duration("4ms", NULL, NULL));
  g_assert_true(ema_units_parse_bandwidth("4GB/s", NULL, NULL));
  g_assert_false(ema_units_parse_size("4XB", NULL, NULL));
}

/* ---- round trips ---- */

static guint64 rand_u64(GRand *r) {
  return ((guint64) g_rand_int(r) << 32) | g_rand_int(r);
}

/* A random finite double over the whole range (including subnormals), or,
 * half the time, a "nice" one like 55.4e9 or 0.125. */
static double rand_double(GRand *r, gboolean allow_negative) {
  double x;
  if (g_rand_boolean(r)) {
    do {
      guint64 bits = rand_u64(r);
      memcpy(&x, &bits, sizeof x);
    } while (!isfinite(x));
  } else {
    x = (double) g_rand_int_range(r, 0, 100000) * pow(10.0, g_rand_int_range(r, -12, 18));
  }
  if (!allow_negative)
    x = fabs(x);
  return x;
}

static void check_double_round_trip(char *(*format)(double), ParseDouble parse, double x) {
  char *text = format(x);
  GError *error = NULL;
  double y = -42.0;
  if (!parse(text, &y, &error))
    g_error("%.17g formatted as '%s' does not parse: %s", x, text, error->message);
  if (!same_double(x, y))
    g_error("%.17g formatted as '%s' parses back as %.17g", x, text, y);
  g_free(text);
}

static void test_round_trip_size(void) {
  GRand *r = g_rand_new_with_seed(SEED);
  static const guint64 scales[] = {1,
                                   1000,
                                   1000000,
                                   1000000000,
                                   G_GUINT64_CONSTANT(1000000000000),
                                   1024,
                                   1048576,
                                   1073741824,
                                   G_GUINT64_CONSTANT(1099511627776)};
  for (int i = 0; i < ROUND_TRIPS; i++) {
    guint64 x;
    switch (i % 3) {
    case 0:
      x = rand_u64(r);
      break;
    case 1:
      x = rand_u64(r) >> g_rand_int_range(r, 0, 64);
      break;
    default:
      x = (guint64) g_rand_int_range(r, 0, 1 << 20) *
          scales[g_rand_int_range(r, 0, G_N_ELEMENTS(scales))];
      break;
    }
    if (i < 8)
      x = (guint64[]){0, 1, 1023, 1024, 1000, G_MAXUINT64, G_MAXUINT64 - 1, 1ull << 63}[i];
    char *text = ema_units_format_size(x);
    guint64 y = 0;
    GError *error = NULL;
    if (!ema_units_parse_size(text, &y, &error))
      g_error("%" G_GUINT64_FORMAT " formatted as '%s' does not parse: %s", x, text,
              error->message);
    g_assert_cmpuint(x, ==, y);
    g_free(text);
  }
  g_rand_free(r);
}

static void test_round_trip_duration(void) {
  GRand *r = g_rand_new_with_seed(SEED + 1);
  static const gint64 scales[] = {1, 10, 1000, 1000000, 1000000000, 60000000000};
  for (int i = 0; i < ROUND_TRIPS; i++) {
    gint64 x;
    switch (i % 3) {
    case 0:
      x = (gint64) (rand_u64(r) >> 1);
      break;
    case 1:
      x = (gint64) (rand_u64(r) >> g_rand_int_range(r, 1, 64));
      break;
    default:
      x = g_rand_int_range(r, 0, 1 << 20) * scales[g_rand_int_range(r, 0, G_N_ELEMENTS(scales))];
      break;
    }
    if (i < 4)
      x = (gint64[]){0, 1, G_MAXINT64, G_MAXINT64 - 1}[i];
    char *text = ema_units_format_duration(x);
    gint64 y = -1;
    GError *error = NULL;
    if (!ema_units_parse_duration(text, &y, &error))
      g_error("%" G_GINT64_FORMAT " formatted as '%s' does not parse: %s", x, text, error->message);
    g_assert_cmpint(x, ==, y);
    g_free(text);
  }
  g_rand_free(r);
}

static void test_round_trip_bandwidth(void) {
  GRand *r = g_rand_new_with_seed(SEED + 2);
  check_double_round_trip(ema_units_format_bandwidth, ema_units_parse_bandwidth, 0.0);
  check_double_round_trip(ema_units_format_bandwidth, ema_units_parse_bandwidth, DBL_MAX);
  check_double_round_trip(ema_units_format_bandwidth, ema_units_parse_bandwidth, DBL_MIN);
  check_double_round_trip(ema_units_format_bandwidth, ema_units_parse_bandwidth,
                          4.9406564584124654e-324);
  for (int i = 0; i < ROUND_TRIPS; i++)
    check_double_round_trip(ema_units_format_bandwidth, ema_units_parse_bandwidth,
                            rand_double(r, FALSE));
  g_rand_free(r);
}

static void test_round_trip_flops(void) {
  GRand *r = g_rand_new_with_seed(SEED + 3);
  check_double_round_trip(ema_units_format_flops, ema_units_parse_flops, 0.0);
  check_double_round_trip(ema_units_format_flops, ema_units_parse_flops, DBL_MAX);
  for (int i = 0; i < ROUND_TRIPS; i++)
    check_double_round_trip(ema_units_format_flops, ema_units_parse_flops, rand_double(r, FALSE));
  g_rand_free(r);
}

static void test_round_trip_fraction(void) {
  GRand *r = g_rand_new_with_seed(SEED + 4);
  check_double_round_trip(ema_units_format_fraction, ema_units_parse_fraction, 0.0);
  check_double_round_trip(ema_units_format_fraction, ema_units_parse_fraction, -0.0);
  check_double_round_trip(ema_units_format_fraction, ema_units_parse_fraction, DBL_MAX);
  check_double_round_trip(ema_units_format_fraction, ema_units_parse_fraction, -DBL_MAX);
  for (int i = 0; i < ROUND_TRIPS; i++) {
    double x = rand_double(r, TRUE);
    if (i % 2 == 0)
      x = g_rand_int_range(r, -1000000, 1000000) / 1e4; /* percents like 12.34% */
    check_double_round_trip(ema_units_format_fraction, ema_units_parse_fraction, x);
  }
  g_rand_free(r);
}

static void test_round_trip_double(void) {
  GRand *r = g_rand_new_with_seed(SEED + 5);
  check_double_round_trip(ema_units_format_double, ema_units_parse_double, -0.0);
  check_double_round_trip(ema_units_format_double, ema_units_parse_double, -DBL_MAX);
  for (int i = 0; i < ROUND_TRIPS; i++)
    check_double_round_trip(ema_units_format_double, ema_units_parse_double, rand_double(r, TRUE));
  for (int i = 0; i < 1000; i++) {
    gint64 x = (gint64) rand_u64(r);
    char *text = g_strdup_printf("%" G_GINT64_FORMAT, x);
    int_ok(text, x);
    g_free(text);
  }
  g_rand_free(r);
}

int main(int argc, char **argv) {
  g_test_init(&argc, &argv, NULL);
  g_test_add_func("/units/size/parse", test_size_parse);
  g_test_add_func("/units/size/errors", test_size_errors);
  g_test_add_func("/units/size/format", test_size_format);
  g_test_add_func("/units/duration/parse", test_duration_parse);
  g_test_add_func("/units/duration/errors", test_duration_errors);
  g_test_add_func("/units/duration/format", test_duration_format);
  g_test_add_func("/units/bandwidth", test_bandwidth);
  g_test_add_func("/units/flops", test_flops);
  g_test_add_func("/units/fraction", test_fraction);
  g_test_add_func("/units/double-and-int", test_double_and_int);
  g_test_add_func("/units/null-outputs", test_null_outputs);
  g_test_add_func("/units/round-trip/size", test_round_trip_size);
  g_test_add_func("/units/round-trip/duration", test_round_trip_duration);
  g_test_add_func("/units/round-trip/bandwidth", test_round_trip_bandwidth);
  g_test_add_func("/units/round-trip/flops", test_round_trip_flops);
  g_test_add_func("/units/round-trip/fraction", test_round_trip_fraction);
  g_test_add_func("/units/round-trip/double", test_round_trip_double);
  return g_test_run();
}
