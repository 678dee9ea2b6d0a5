/* units.c: strict parsing and exact printing of quantities with units
 * ("2MiB", "6.5us", "397GB/s", "989TFLOP/s", "5%"), as used in experiment
 * and hardware-model YAML. See ema/units.h for the contract.
 *
 * How exactness is kept:
 * - Integer quantities (sizes, durations) are converted from the decimal
 *   text with integer arithmetic only (no double rounding), so
 *   "9223372036.854775807s" is exactly G_MAXINT64 ns and "139.8GiB" is
 *   round(139.8 * 2^30) computed exactly (half rounds up).
 * - Floating quantities with a decimal unit ("55.4GB/s") are parsed by
 *   shifting the decimal exponent of the text and letting strtod round once
 *   ("554e8"), so the result is the correctly rounded double of the exact
 *   decimal value. Binary units scale by a power of two, which is exact.
 * - Printing takes the shortest %.15/16/17 digit form that round-trips and
 *   moves its decimal point for the chosen unit, which is exact in decimal;
 *   the parser then rounds that same decimal value to the same double. */
#include "ema/core/units.h"

#include <math.h>
#include <string.h>

#include "ema/core/file.h"

GQuark ema_units_error_quark(void) {
  return g_quark_from_static_string("ema-units-error-quark");
}

/* One unit: value = number * factor * 10^pow10. factor is 1, a power of two
 * or (for min/h) 60 and 36; for floating kinds it is always a power of two
 * so that scaling by it is exact. */
typedef struct {
  const char *name;
  guint64 factor;
  int pow10;
} Unit;

typedef struct {
  const char *what;      /* "size", used in "negative size ..." */
  const char *plural;    /* "sizes", used in "(sizes use ...)" */
  const char *unit_list; /* the units named in error messages */
  const Unit *units;     /* terminated by a NULL name; NULL for none */
  gboolean unit_required;
  gboolean allow_negative;
} Kind;

#define KIB G_GUINT64_CONSTANT(1024)

static const Unit size_units[] = {
    {"B", 1, 0},
    {"KB", 1, 3},
    {"MB", 1, 6},
    {"GB", 1, 9},
    {"TB", 1, 12},
    {"KiB", KIB, 0},
    {"MiB", KIB *KIB, 0},
    {"GiB", KIB *KIB *KIB, 0},
    {"TiB", KIB *KIB *KIB *KIB, 0},
    {NULL, 0, 0},
};

static const Unit bandwidth_units[] = {
    {"B/s", 1, 0},
    {"KB/s", 1, 3},
    {"MB/s", 1, 6},
    {"GB/s", 1, 9},
    {"TB/s", 1, 12},
    {"KiB/s", KIB, 0},
    {"MiB/s", KIB *KIB, 0},
    {"GiB/s", KIB *KIB *KIB, 0},
    {"TiB/s", KIB *KIB *KIB *KIB, 0},
    {NULL, 0, 0},
};

/* "\xc2\xb5s" is MICRO SIGN + s; "\xce\xbcs" is GREEK SMALL LETTER MU + s,
 * which looks the same and is what many keyboards produce. */
static const Unit duration_units[] = {
    {"ns", 1, 0}, {"us", 1, 3},   {"\xc2\xb5s", 1, 3}, {"\xce\xbcs", 1, 3}, {"ms", 1, 6},
    {"s", 1, 9},  {"min", 60, 9}, {"h", 36, 11},       {NULL, 0, 0},
};

static const Unit flops_units[] = {
    {"FLOP/s", 1, 0}, {"GFLOP/s", 1, 9}, {"TFLOP/s", 1, 12}, {"PFLOP/s", 1, 15}, {"FLOPS", 1, 0},
    {"GFLOPS", 1, 9}, {"TFLOPS", 1, 12}, {"PFLOPS", 1, 15},  {NULL, 0, 0},
};

static const Unit fraction_units[] = {
    {"%", 1, -2},
    {NULL, 0, 0},
};

static const Kind kind_size = {"size",     "sizes", "B, KB, MB, GB, TB, KiB, MiB, GiB, TiB",
                               size_units, FALSE,   FALSE};
static const Kind kind_bandwidth = {
    "bandwidth",     "bandwidths", "B/s, KB/s, MB/s, GB/s, TB/s, KiB/s, MiB/s, GiB/s, TiB/s",
    bandwidth_units, TRUE,         FALSE};
static const Kind kind_duration = {"duration",     "durations", "ns, us, ms, s, min, h",
                                   duration_units, TRUE,        FALSE};
static const Kind kind_flops = {"FLOP rate", "FLOP rates", "FLOP/s, GFLOP/s, TFLOP/s, PFLOP/s",
                                flops_units, TRUE,         FALSE};
static const Kind kind_fraction = {"fraction",     "fractions", "% or a plain number",
                                   fraction_units, FALSE,       TRUE};
static const Kind kind_number = {"number", "numbers", "no unit", NULL, FALSE, TRUE};

/* A decimal number as written: [sign] int_digits [. frac_digits] [e exp].
 * Its value is 0.D * 10^(n_int + exp) where D = int_digits frac_digits. */
typedef struct {
  gboolean negative;
  const char *int_digits;
  gint64 n_int;
  const char *frac_digits;
  gint64 n_frac;
  gboolean has_point;
  gboolean has_exp;
  gint64 exp;   /* saturated at +-EXP_LIMIT */
  double value; /* g_ascii_strtod of the text */
} Decimal;

/* Exponents beyond this are saturated; any nonzero value is then far out
 * of range of every quantity (or rounds to zero), so nothing is lost. */
#define EXP_LIMIT 1000000

/* Digits kept when a decimal is handed to strtod with a shifted exponent.
 * Correct rounding of a double needs at most 767 significant digits; any
 * further nonzero digits are replaced by a single sticky '1'. */
#define MAX_SIG_DIGITS 800

/* Error messages quote the input, cut as all quoted input is (ema_file_quote_cut: a value of
 * megabytes is its first 40 bytes and "..."); escape control characters so they stay on one
 * line, but keep UTF-8 ("µs") readable. */
static char *quote(const char *text, gssize len) {
  char high[129];
  for (int i = 0; i < 128; i++)
    high[i] = (char) (0x80 + i);
  high[128] = '\0';
  char *raw = ema_file_quote_cut(text, len);
  char *escaped = g_strescape(raw, high);
  g_free(raw);
  return escaped;
}

static const char *skip_space(const char *p) {
  while (g_ascii_isspace(*p))
    p++;
  return p;
}

/* Scans a decimal number at s. Returns the end of it, or NULL if s does
 * not start with one (no digits, "nan", "inf", ...). */
static const char *scan_decimal(const char *s, Decimal *d) {
  const char *p = s;
  memset(d, 0, sizeof *d);
  if (*p == '+' || *p == '-') {
    d->negative = *p == '-';
    p++;
  }
  d->int_digits = p;
  while (g_ascii_isdigit(*p))
    p++;
  d->n_int = p - d->int_digits;
  d->frac_digits = p;
  if (*p == '.') {
    const char *q = p + 1;
    d->frac_digits = q;
    while (g_ascii_isdigit(*q))
      q++;
    d->n_frac = q - d->frac_digits;
    if (d->n_int == 0 && d->n_frac == 0)
      return NULL;
    d->has_point = TRUE;
    p = q;
  } else if (d->n_int == 0) {
    return NULL;
  }
  if (*p == 'e' || *p == 'E') {
    const char *q = p + 1;
    gboolean exp_negative = FALSE;
    if (*q == '+' || *q == '-') {
      exp_negative = *q == '-';
      q++;
    }
    if (g_ascii_isdigit(*q)) {
      gint64 e = 0;
      for (; g_ascii_isdigit(*q); q++)
        e = MIN(e * 10 + (*q - '0'), EXP_LIMIT);
      d->exp = exp_negative ? -e : e;
      d->has_exp = TRUE;
      p = q;
    }
  }
  /* strtod must agree on where the number ends; it would not for "0x1p3",
   * which is rejected as not a number. */
  char *end = NULL;
  d->value = g_ascii_strtod(s, &end);
  if (end != p)
    return NULL;
  return p;
}

static int digit_at(const Decimal *d, gint64 j) {
  if (j < 0)
    return 0;
  if (j < d->n_int)
    return d->int_digits[j] - '0';
  if (j < d->n_int + d->n_frac)
    return d->frac_digits[j - d->n_int] - '0';
  return 0;
}

/* Index of the first nonzero digit, or -1 if the number is zero. */
static gint64 first_nonzero(const Decimal *d) {
  gint64 n = d->n_int + d->n_frac;
  for (gint64 j = 0; j < n; j++)
    if (digit_at(d, j) != 0)
      return j;
  return -1;
}

/* round(|value| * factor * 10^pow10), exactly, half away from zero.
 * Returns FALSE if the result does not fit in a guint64. */
static gboolean decimal_to_u64(const Decimal *d, guint64 factor, int pow10, guint64 *out) {
  gint64 n = d->n_int + d->n_frac;
  gint64 f = first_nonzero(d);
  if (f < 0) {
    *out = 0;
    return TRUE;
  }
  /* The decimal point sits before digit p: digits [0, p) are the integer
   * part, digits [p, n) the fraction. */
  gint64 p = d->n_int + d->exp + pow10;

  guint64 whole = 0;
  for (gint64 j = f; j < p; j++) {
    guint64 dig = (guint64) digit_at(d, j);
    if (whole > (G_MAXUINT64 - dig) / 10)
      return FALSE; /* digit f is nonzero, so this ends within 20 digits */
    whole = whole * 10 + dig;
  }
  if (whole != 0 && factor > G_MAXUINT64 / whole)
    return FALSE;
  whole *= factor;

  /* fraction * factor, by long multiplication from the last digit: carry
   * ends as the integer part, last as the first digit after the point. The
   * carry stays below factor, so nothing overflows. If the first nonzero
   * digit is 15 or more places after the point, fraction * factor < 0.01
   * (factor <= 2^40) and contributes nothing. */
  guint64 carry = 0;
  guint64 last = 0;
  if (f - p < 15) {
    for (gint64 j = n - 1; j >= p; j--) {
      guint64 t = (guint64) digit_at(d, j) * factor + carry;
      last = t % 10;
      carry = t / 10;
    }
  }
  guint64 add = carry + (last >= 5 ? 1 : 0);
  if (whole > G_MAXUINT64 - add)
    return FALSE;
  *out = whole + add;
  return TRUE;
}

/* The double nearest to value * 10^pow10 (correctly rounded, sign kept).
 * Overflow gives an infinity, underflow zero or a subnormal. */
static double decimal_to_double(const Decimal *d, int pow10) {
  if (pow10 == 0)
    return d->value;
  gint64 f = first_nonzero(d);
  if (f < 0)
    return d->negative ? -0.0 : 0.0;
  gint64 n = d->n_int + d->n_frac;
  char buf[MAX_SIG_DIGITS + 40];
  gsize k = 0;
  if (d->negative)
    buf[k++] = '-';
  gint64 len = 0;
  gint64 j = f;
  for (; j < n && len < MAX_SIG_DIGITS; j++, len++)
    buf[k++] = (char) ('0' + digit_at(d, j));
  for (; j < n; j++) {
    if (digit_at(d, j) != 0) {
      buf[k++] = '1';
      len++;
      break;
    }
  }
  /* value = mantissa digits * 10^(p - f - len), p as in decimal_to_u64 */
  gint64 exp10 = d->n_int + d->exp + pow10 - f - len;
  g_snprintf(buf + k, sizeof buf - k, "e%" G_GINT64_FORMAT, exp10);
  return g_ascii_strtod(buf, NULL);
}

/* Splits text into a number and a unit of the given kind and checks both.
 * On success *unit is the unit, or NULL if there was none (allowed only
 * where the kind does not require one). */
static gboolean parse_quantity(const char *text, const Kind *kind, Decimal *dec, const Unit **unit,
                               GError **error) {
  g_return_val_if_fail(text != NULL, FALSE);
  const char *start = skip_space(text);
  if (*start == '\0') {
    if (kind->units != NULL)
      g_set_error(error, EMA_UNITS_ERROR, EMA_UNITS_ERROR_SYNTAX,
                  "empty value where a %s is expected (%s use %s)", kind->what, kind->plural,
                  kind->unit_list);
    else
      g_set_error(error, EMA_UNITS_ERROR, EMA_UNITS_ERROR_SYNTAX,
                  "empty value where a number is expected");
    return FALSE;
  }
  const char *end = scan_decimal(start, dec);
  if (end == NULL) {
    char *q = quote(text, -1);
    g_set_error(error, EMA_UNITS_ERROR, EMA_UNITS_ERROR_SYNTAX, "'%s' is not a number", q);
    g_free(q);
    return FALSE;
  }
  const char *unit_start = skip_space(end);
  const char *unit_end = unit_start;
  while (*unit_end != '\0' && !g_ascii_isspace(*unit_end))
    unit_end++;
  gsize unit_len = (gsize) (unit_end - unit_start);
  const char *rest = skip_space(unit_end);

  *unit = NULL;
  if (unit_len > 0) {
    for (const Unit *u = kind->units; u != NULL && u->name != NULL; u++) {
      if (strlen(u->name) == unit_len && memcmp(u->name, unit_start, unit_len) == 0) {
        *unit = u;
        break;
      }
    }
    if (*unit == NULL) {
      char *qu = quote(unit_start, (gssize) unit_len);
      char *q = quote(text, -1);
      if (kind->units != NULL)
        g_set_error(error, EMA_UNITS_ERROR, EMA_UNITS_ERROR_UNIT,
                    "unknown unit '%s' in '%s' (%s use %s)", qu, q, kind->plural, kind->unit_list);
      else
        g_set_error(error, EMA_UNITS_ERROR, EMA_UNITS_ERROR_UNIT,
                    "unexpected '%s' after the number in '%s' (a plain number has no unit)", qu, q);
      g_free(q);
      g_free(qu);
      return FALSE;
    }
  }
  if (*rest != '\0') {
    char *qr = quote(rest, -1);
    char *q = quote(text, -1);
    g_set_error(error, EMA_UNITS_ERROR, EMA_UNITS_ERROR_SYNTAX,
                "unexpected '%s' after the unit in '%s' (%s use %s)", qr, q, kind->plural,
                kind->unit_list);
    g_free(q);
    g_free(qr);
    return FALSE;
  }
  if (*unit == NULL && kind->unit_required) {
    char *q = quote(text, -1);
    g_set_error(error, EMA_UNITS_ERROR, EMA_UNITS_ERROR_UNIT, "'%s' needs a unit (%s use %s)", q,
                kind->plural, kind->unit_list);
    g_free(q);
    return FALSE;
  }
  if (dec->negative && !kind->allow_negative) {
    char *q = quote(text, -1);
    g_set_error(error, EMA_UNITS_ERROR, EMA_UNITS_ERROR_RANGE, "negative %s '%s' is not allowed",
                kind->what, q);
    g_free(q);
    return FALSE;
  }
  return TRUE;
}

static void set_too_large(GError **error, const char *text, const char *what, const char *limit) {
  char *q = quote(text, -1);
  g_set_error(error, EMA_UNITS_ERROR, EMA_UNITS_ERROR_RANGE, "'%s' is too large for a %s%s", q,
              what, limit);
  g_free(q);
}

gboolean ema_units_parse_size(const char *text, guint64 *bytes, GError **error) {
  Decimal dec;
  const Unit *unit;
  if (!parse_quantity(text, &kind_size, &dec, &unit, error))
    return FALSE;
  if (unit == NULL) {
    if (dec.has_point || dec.has_exp) {
      char *q = quote(text, -1);
      g_set_error(error, EMA_UNITS_ERROR, EMA_UNITS_ERROR_UNIT,
                  "'%s' needs a unit: a plain number is a whole number of bytes (sizes use %s)", q,
                  kind_size.unit_list);
      g_free(q);
      return FALSE;
    }
    unit = &size_units[0];
  }
  guint64 v;
  if (!decimal_to_u64(&dec, unit->factor, unit->pow10, &v)) {
    set_too_large(error, text, "size", " (at most 18446744073709551615B)");
    return FALSE;
  }
  if (bytes != NULL)
    *bytes = v;
  return TRUE;
}

gboolean ema_units_parse_duration(const char *text, gint64 *ns, GError **error) {
  Decimal dec;
  const Unit *unit;
  if (!parse_quantity(text, &kind_duration, &dec, &unit, error))
    return FALSE;
  guint64 v;
  if (!decimal_to_u64(&dec, unit->factor, unit->pow10, &v) || v > (guint64) G_MAXINT64) {
    set_too_large(error, text, "duration", " (at most 9223372036854775807ns, about 292 years)");
    return FALSE;
  }
  if (ns != NULL)
    *ns = (gint64) v;
  return TRUE;
}

/* Bandwidths, FLOP rates, fractions and plain numbers. */
static gboolean parse_floating(const char *text, const Kind *kind, double *out, GError **error) {
  Decimal dec;
  const Unit *unit;
  if (!parse_quantity(text, kind, &dec, &unit, error))
    return FALSE;
  double v =
      unit != NULL ? decimal_to_double(&dec, unit->pow10) * (double) unit->factor : dec.value;
  if (isinf(v)) {
    set_too_large(error, text, kind->what, "");
    return FALSE;
  }
  if (out != NULL)
    *out = v;
  return TRUE;
}

gboolean ema_units_parse_bandwidth(const char *text, double *bytes_per_s, GError **error) {
  return parse_floating(text, &kind_bandwidth, bytes_per_s, error);
}

gboolean ema_units_parse_flops(const char *text, double *flop_per_s, GError **error) {
  return parse_floating(text, &kind_flops, flop_per_s, error);
}

gboolean ema_units_parse_fraction(const char *text, double *fraction, GError **error) {
  return parse_floating(text, &kind_fraction, fraction, error);
}

gboolean ema_units_parse_double(const char *text, double *value, GError **error) {
  return parse_floating(text, &kind_number, value, error);
}

gboolean ema_units_parse_int(const char *text, gint64 *value, GError **error) {
  g_return_val_if_fail(text != NULL, FALSE);
  Decimal dec;
  const Unit *unit;
  const char *start = skip_space(text);
  if (*start == '\0') {
    g_set_error(error, EMA_UNITS_ERROR, EMA_UNITS_ERROR_SYNTAX,
                "empty value where an integer is expected");
    return FALSE;
  }
  const char *end = scan_decimal(start, &dec);
  if (end == NULL || dec.has_point || dec.has_exp || *skip_space(end) != '\0') {
    /* Let the general parser explain junk; but say "integer" for 1.5. */
    if (end != NULL && (dec.has_point || dec.has_exp) && *skip_space(end) == '\0') {
      char *q = quote(text, -1);
      g_set_error(error, EMA_UNITS_ERROR, EMA_UNITS_ERROR_SYNTAX, "'%s' is not an integer", q);
      g_free(q);
      return FALSE;
    }
    return parse_quantity(text, &kind_number, &dec, &unit, error);
  }
  guint64 magnitude = 0;
  guint64 limit = dec.negative ? (guint64) G_MAXINT64 + 1 : (guint64) G_MAXINT64;
  for (gint64 j = 0; j < dec.n_int; j++) {
    guint64 dig = (guint64) (dec.int_digits[j] - '0');
    if (magnitude > (limit - dig) / 10) {
      char *q = quote(text, -1);
      g_set_error(error, EMA_UNITS_ERROR, EMA_UNITS_ERROR_RANGE,
                  "'%s' is out of range for an integer (-9223372036854775808 to "
                  "9223372036854775807)",
                  q);
      g_free(q);
      return FALSE;
    }
    magnitude = magnitude * 10 + dig;
  }
  if (value != NULL)
    *value = dec.negative ? (gint64) (0 - magnitude) : (gint64) magnitude;
  return TRUE;
}

/* ---- printing ---- */

/* The unit that divides exactly and leaves the smallest number; on a tie
 * the binary one. Binary sizes print in binary units ("4GiB") and decimal
 * ones in decimal units ("80GB", not "78125000KiB"); else plain bytes. */
char *ema_units_format_size(guint64 bytes) {
  static const Unit *const order[] = {
      &size_units[8], &size_units[7], &size_units[6], &size_units[5], /* TiB..KiB */
      &size_units[4], &size_units[3], &size_units[2], &size_units[1], /* TB..KB */
  };
  const Unit *best = &size_units[0];
  guint64 best_value = bytes;
  for (gsize i = 0; bytes != 0 && i < G_N_ELEMENTS(order); i++) {
    guint64 scale = order[i]->factor;
    for (int k = 0; k < order[i]->pow10; k++)
      scale *= 10;
    if (bytes % scale == 0 && bytes / scale < best_value) {
      best = order[i];
      best_value = bytes / scale;
    }
  }
  return g_strdup_printf("%" G_GUINT64_FORMAT "%s", best_value, best->name);
}

char *ema_units_format_size_human(guint64 bytes) {
  static const char *const names[] = {"B", "KiB", "MiB", "GiB", "TiB", "PiB", "EiB"};
  double value = (double) bytes;
  guint i = 0;
  while (value >= 1024 && i + 1 < G_N_ELEMENTS(names)) {
    value /= 1024;
    i++;
  }
  return i == 0 ? g_strdup_printf("%" G_GUINT64_FORMAT " B", bytes)
                : g_strdup_printf("%.*f %s",
                                  value < 10    ? 2
                                  : value < 100 ? 1
                                                : 0,
                                  value, names[i]);
}

char *ema_units_format_duration(gint64 ns) {
  static const struct {
    guint64 scale;
    const char *name;
  } units[] = {
      {G_GUINT64_CONSTANT(1000000000), "s"},
      {G_GUINT64_CONSTANT(1000000), "ms"},
      {G_GUINT64_CONSTANT(1000), "us"},
  };
  guint64 m = ns < 0 ? 0 - (guint64) ns : (guint64) ns;
  const char *sign = ns < 0 ? "-" : "";
  for (gsize i = 0; i < G_N_ELEMENTS(units); i++) {
    guint64 scale = units[i].scale;
    /* At most 3 decimals: the value must be a multiple of scale / 1000. */
    if (m < scale || m % (scale / 1000) != 0)
      continue;
    guint64 whole = m / scale;
    guint frac = (guint) ((m % scale) / (scale / 1000));
    if (frac == 0)
      return g_strdup_printf("%s%" G_GUINT64_FORMAT "%s", sign, whole, units[i].name);
    char digits[4];
    g_snprintf(digits, sizeof digits, "%03u", frac);
    for (int k = 2; k > 0 && digits[k] == '0'; k--)
      digits[k] = '\0';
    return g_strdup_printf("%s%" G_GUINT64_FORMAT ".%s%s", sign, whole, digits, units[i].name);
  }
  return g_strdup_printf("%s%" G_GUINT64_FORMAT "ns", sign, m);
}

/* The shortest of %.15g, %.16g, %.17g (as %.14e..%.16e) that reads back as
 * x: significant digits without trailing zeros, and the exponent e10 with
 * x = d1.d2d3... * 10^e10. x must be finite and >= 0. */
static void shortest_digits(double x, char digits[24], int *n_digits, int *e10) {
  static const char *const formats[] = {"%.14e", "%.15e", "%.16e"};
  char buf[G_ASCII_DTOSTR_BUF_SIZE];
  if (x == 0) {
    strcpy(digits, "0");
    *n_digits = 1;
    *e10 = 0;
    return;
  }
  for (gsize i = 0; i < G_N_ELEMENTS(formats); i++) {
    g_ascii_formatd(buf, sizeof buf, formats[i], x);
    if (g_ascii_strtod(buf, NULL) == x)
      break;
  }
  int n = 0;
  const char *p = buf;
  for (; *p != '\0' && *p != 'e' && *p != 'E'; p++)
    if (g_ascii_isdigit(*p) && n < 23)
      digits[n++] = *p;
  while (n > 1 && digits[n - 1] == '0')
    n--;
  digits[n] = '\0';
  *n_digits = n;
  *e10 = (*p != '\0') ? (int) g_ascii_strtoll(p + 1, NULL, 10) : 0;
}

/* Writes sign, digits and exponent as a decimal: positional where that is
 * short, else d.ddde<exp>. The text has exactly the value of the digits. */
static void render_decimal(GString *out, gboolean negative, const char *digits, int n, int e10) {
  if (negative)
    g_string_append_c(out, '-');
  if (digits[0] == '0')
    e10 = 0; /* zero has no magnitude to shift */
  if (e10 < -5 || e10 >= 21) {
    g_string_append_c(out, digits[0]);
    if (n > 1) {
      g_string_append_c(out, '.');
      g_string_append(out, digits + 1);
    }
    g_string_append_printf(out, "e%d", e10);
  } else if (e10 < 0) {
    g_string_append(out, "0.");
    for (int i = 0; i < -e10 - 1; i++)
      g_string_append_c(out, '0');
    g_string_append(out, digits);
  } else {
    for (int i = 0; i <= e10; i++)
      g_string_append_c(out, i < n ? digits[i] : '0');
    if (n > e10 + 1) {
      g_string_append_c(out, '.');
      g_string_append(out, digits + e10 + 1);
    }
  }
}

/* x printed as x / 10^pow10 followed by unit, exactly. */
static char *format_scaled(double x, int pow10, const char *unit) {
  if (!isfinite(x))
    return g_strdup_printf("%s%s", isnan(x) ? "nan" : x < 0 ? "-inf" : "inf", unit);
  char digits[24];
  int n, e10;
  shortest_digits(fabs(x), digits, &n, &e10);
  GString *out = g_string_new(NULL);
  render_decimal(out, signbit(x) != 0, digits, n, e10 - pow10);
  g_string_append(out, unit);
  return g_string_free(out, FALSE);
}

char *ema_units_format_bandwidth(double bytes_per_s) {
  double a = fabs(bytes_per_s);
  if (a >= 1e12)
    return format_scaled(bytes_per_s, 12, "TB/s");
  if (a >= 1e9)
    return format_scaled(bytes_per_s, 9, "GB/s");
  if (a >= 1e6)
    return format_scaled(bytes_per_s, 6, "MB/s");
  if (a >= 1e3)
    return format_scaled(bytes_per_s, 3, "KB/s");
  return format_scaled(bytes_per_s, 0, "B/s");
}

char *ema_units_format_flops(double flop_per_s) {
  double a = fabs(flop_per_s);
  if (a >= 1e15)
    return format_scaled(flop_per_s, 15, "PFLOP/s");
  if (a >= 1e12)
    return format_scaled(flop_per_s, 12, "TFLOP/s");
  if (a >= 1e9)
    return format_scaled(flop_per_s, 9, "GFLOP/s");
  return format_scaled(flop_per_s, 0, "FLOP/s");
}

char *ema_units_format_fraction(double fraction) {
  if (isfinite(fraction)) {
    char digits[24];
    int n, e10;
    shortest_digits(fabs(fraction), digits, &n, &e10);
    /* Percent when it reads naturally: 0.0001% up to 15 integer digits. */
    if (e10 + 2 >= -4 && e10 + 2 < 15) {
      GString *out = g_string_new(NULL);
      render_decimal(out, signbit(fraction) != 0, digits, n, e10 + 2);
      g_string_append_c(out, '%');
      return g_string_free(out, FALSE);
    }
  }
  return ema_units_format_double(fraction);
}

char *ema_units_format_double(double value) {
  static const char *const formats[] = {"%.15g", "%.16g", "%.17g"};
  char buf[G_ASCII_DTOSTR_BUF_SIZE];
  for (gsize i = 0; i < G_N_ELEMENTS(formats); i++) {
    g_ascii_formatd(buf, sizeof buf, formats[i], value);
    if (g_ascii_strtod(buf, NULL) == value)
      break;
  }
  return g_strdup(buf);
}
