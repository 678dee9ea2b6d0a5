/* parse.c: allocation-free parsers for the fields of trace files: integers,
 * exact decimals (seconds to ns, ms to ns) and wall-clock date-times.
 *
 * Invariants: no parser goes through a double, so "4.314579" is exactly
 * 4314579000 ns and "2023-11-16 18:17:03.9799600" is exact to 100 ns;
 * digits past the target resolution round half away from zero; every
 * overflow of gint64 is reported, never wrapped. Problems are static strings
 * for the caller to put after "FILE:LINE: FIELD: ". */
#include "private.h"

static gboolean is_digit(char c) {
  return c >= '0' && c <= '9';
}

const char *ema_trace_parse_int(const char *p, gsize len, gint64 *value) {
  gsize i = 0;
  gboolean negative = FALSE;
  guint64 acc = 0;

  if (len == 0)
    return "empty field";
  if (p[0] == '-' || p[0] == '+') {
    negative = p[0] == '-';
    i++;
  }
  if (i >= len || !is_digit(p[i]))
    return "not an integer";
  for (; i < len && is_digit(p[i]); i++) {
    guint d = (guint) (p[i] - '0');
    if (acc > ((guint64) G_MAXINT64 - d) / 10)
      return "out of range";
    acc = acc * 10 + d;
  }
  if (i < len && p[i] == '.') { /* "12.0": an integer written as a real */
    for (i++; i < len && p[i] == '0'; i++)
      ;
  }
  if (i != len)
    return "not an integer";
  *value = negative ? -(gint64) acc : (gint64) acc;
  return NULL;
}

const char *ema_trace_parse_decimal(const char *p, gsize len, int scale_digits, gint64 *value) {
  gsize i = 0;
  gboolean negative = FALSE;
  gsize mant_begin, mant_end;
  int n_int = 0, n_digits = 0;
  gboolean seen_point = FALSE;
  int exponent = 0;

  if (len == 0)
    return "empty field";
  if (p[0] == '-' || p[0] == '+') {
    negative = p[0] == '-';
    i++;
  }
  mant_begin = i;
  for (; i < len; i++) {
    if (is_digit(p[i])) {
      n_digits++;
      if (!seen_point)
        n_int++;
    } else if (p[i] == '.' && !seen_point) {
      seen_point = TRUE;
    } else {
      break;
    }
  }
  mant_end = i;
  if (n_digits == 0)
    return "not a number";
  if (i < len && (p[i] == 'e' || p[i] == 'E')) {
    gboolean eneg = FALSE;
    i++;
    if (i < len && (p[i] == '-' || p[i] == '+')) {
      eneg = p[i] == '-';
      i++;
    }
    if (i >= len || !is_digit(p[i]))
      return "not a number";
    for (; i < len && is_digit(p[i]); i++) {
      if (exponent > 100000)
        return "out of range";
      exponent = exponent * 10 + (p[i] - '0');
    }
    if (eneg)
      exponent = -exponent;
  }
  if (i != len)
    return "not a number";

  /* The first P mantissa digits form the integer result; digit P rounds. */
  gint64 point = (gint64) n_int + exponent + scale_digits;
  guint64 acc = 0;
  int round_digit = 0;
  gint64 k = 0;
  for (gsize j = mant_begin; j < mant_end; j++) {
    if (p[j] == '.')
      continue;
    guint d = (guint) (p[j] - '0');
    if (k < point) {
      if (acc > (G_MAXUINT64 - d) / 10)
        return "out of range";
      acc = acc * 10 + d;
    } else if (k == point) {
      round_digit = (int) d;
    }
    k++;
  }
  for (; k < point; k++) {
    if (acc > G_MAXUINT64 / 10)
      return "out of range";
    acc *= 10;
  }
  if (round_digit >= 5) {
    if (acc == G_MAXUINT64) /* rounding up would wrap to 0 */
      return "out of range";
    acc++;
  }
  if (acc > (guint64) G_MAXINT64)
    return "out of range";
  *value = negative ? -(gint64) acc : (gint64) acc;
  return NULL;
}

const char *ema_trace_parse_seconds(const char *p, gsize len, gint64 *ns) {
  return ema_trace_parse_decimal(p, len, 9, ns);
}

/* Days from 1970-01-01 to Y-M-D in the proleptic Gregorian calendar
 * (H. Hinnant, "chrono-Compatible Low-Level Date Algorithms"). */
static gint64 days_from_civil(gint64 y, int m, int d) {
  y -= m <= 2;
  gint64 era = (y >= 0 ? y : y - 399) / 400;
  gint64 yoe = y - era * 400;
  gint64 doy = (153 * (m + (m > 2 ? -3 : 9)) + 2) / 5 + d - 1;
  gint64 doe = yoe * 365 + yoe / 4 - yoe / 100 + doy;
  return era * 146097 + doe - 719468;
}

static int days_in_month(int y, int m) {
  static const int days[12] = {31, 28, 31, 30, 31, 30, 31, 31, 30, 31, 30, 31};
  gboolean leap = (y % 4 == 0 && y % 100 != 0) || y % 400 == 0;
  return m == 2 && leap ? 29 : days[m - 1];
}

/* N fixed digits at P[*I]; FALSE if not all digits. */
static gboolean fixed_digits(const char *p, gsize len, gsize *i, int n, int *value) {
  int v = 0;
  if (*i + (gsize) n > len)
    return FALSE;
  for (int k = 0; k < n; k++) {
    char c = p[*i + (gsize) k];
    if (!is_digit(c))
      return FALSE;
    v = v * 10 + (c - '0');
  }
  *i += (gsize) n;
  *value = v;
  return TRUE;
}

static gboolean expect(const char *p, gsize len, gsize *i, char c) {
  if (*i >= len || p[*i] != c)
    return FALSE;
  (*i)++;
  return TRUE;
}

const char *ema_trace_parse_datetime(const char *p, gsize len, gint64 *ns) {
  static const char *const syntax = "not a date-time (YYYY-MM-DD HH:MM:SS[.fffffff][+HH:MM])";
  gsize i = 0;
  int year = 0, month = 0, day = 0, hour = 0, minute = 0, second = 0; /* set by fixed_digits() */
  gint64 frac = 0;

  if (len == 0)
    return "empty field";
  if (!fixed_digits(p, len, &i, 4, &year) || !expect(p, len, &i, '-') ||
      !fixed_digits(p, len, &i, 2, &month) || !expect(p, len, &i, '-') ||
      !fixed_digits(p, len, &i, 2, &day))
    return syntax;
  if (i >= len || (p[i] != ' ' && p[i] != 'T'))
    return syntax;
  i++;
  if (!fixed_digits(p, len, &i, 2, &hour) || !expect(p, len, &i, ':') ||
      !fixed_digits(p, len, &i, 2, &minute) || !expect(p, len, &i, ':') ||
      !fixed_digits(p, len, &i, 2, &second))
    return syntax;
  if (i < len && p[i] == '.') {
    int n = 0;
    for (i++; i < len && is_digit(p[i]); i++, n++) {
      if (n == 9)
        return "more than 9 fractional digits";
      frac = frac * 10 + (p[i] - '0');
    }
    if (n == 0)
      return syntax;
    for (; n < 9; n++)
      frac *= 10;
  }
  gint64 offset_min = 0;
  if (i < len && p[i] == 'Z') {
    i++;
  } else if (i < len && (p[i] == '+' || p[i] == '-')) {
    int sign = p[i] == '-' ? -1 : 1;
    int oh, om = 0;
    i++;
    if (!fixed_digits(p, len, &i, 2, &oh))
      return syntax;
    if (i < len && p[i] == ':') { /* "+HH:MM": the minutes must follow the colon */
      i++;
      if (!fixed_digits(p, len, &i, 2, &om))
        return syntax;
    } else if (i < len && !fixed_digits(p, len, &i, 2, &om)) { /* "+HHMM", or "+HH" alone */
      return syntax;
    }
    if (oh > 23 || om > 59)
      return "time-zone offset out of range";
    offset_min = sign * (oh * 60 + om);
  }
  if (i != len)
    return syntax;
  if (month < 1 || month > 12 || day < 1 || day > days_in_month(year, month) || hour > 23 ||
      minute > 59 || second > 60)
    return "date-time out of range";

  gint64 days = days_from_civil(year, month, day);
  gint64 secs = days * 86400 + hour * 3600 + minute * 60 + second - offset_min * 60;
  /* Representable years are 1677..2262; keep a margin for the offset. */
  if (secs <= G_MININT64 / 1000000000 + 1 || secs >= G_MAXINT64 / 1000000000 - 1)
    return "date-time out of range";
  *ns = secs * 1000000000 + frac;
  return NULL;
}

const char *ema_trace_format_time(EmaTime t, char *buf) {
  guint64 mag = t < 0 ? (guint64) 0 - (guint64) t : (guint64) t;
  g_snprintf(buf, 32, "%s%" G_GUINT64_FORMAT ".%09" G_GUINT64_FORMAT " s", t < 0 ? "-" : "",
             mag / 1000000000u, mag % 1000000000u);
  return buf;
}

gboolean ema_trace_arrival_in_range(EmaTime first, EmaTime t) {
  return first >= 0 ? t - first <= EMA_TRACE_MAX_ARRIVAL : t <= EMA_TRACE_MAX_ARRIVAL + first;
}
