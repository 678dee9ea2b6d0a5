/* test-csv.c: the one CSV mechanism (ema/core/csv.h): the in-place splitter's
 * quoting and trimming rules and its problems with their offsets, and the
 * table reader on it: quoted fields, blank lines, field columns, and every
 * error with its FILE:LINE:COL; and the fixed-point and integer number
 * writers of the large CSVs (ema/core/file.h) against printf, the one
 * CSV field writer's quoting, and the number reader against strtod; and a label put into an
 * error message after its place (ema_message_prefix_error). */
#include "ema/core/csv.h"

#include <math.h>
#include <string.h>

#include <glib/gstdio.h>

#include "ema/core/file.h"
#include "ema/core/options.h"
#include "ema/core/node.h"

static void test_split(void) {
  EmaCsvField f[EMA_CSV_MAX_FIELDS];
  const char *problem = NULL;
  gsize at = 0;
  char quoted[] = "1,\"a, b\",\"say \"\"hi\"\"\",";
  char trimmed[] = "  x\t, \"y\" ,z";
  char open[] = "1,\"open";
  char after[] = "\"a\"b";
  g_autofree char *wide = g_strnfill(EMA_CSV_MAX_FIELDS, ',');
  g_assert_cmpint(ema_csv_split(quoted, strlen(quoted), f, &problem, &at), ==, 4);
  g_assert_cmpstr(f[0].p, ==, "1");
  g_assert_cmpstr(f[1].p, ==, "a, b");
  g_assert_cmpuint(f[1].at, ==, 2);
  g_assert_cmpstr(f[2].p, ==, "say \"hi\"");
  g_assert_cmpuint(f[2].len, ==, 8);
  g_assert_cmpuint(f[2].at, ==, 9);
  g_assert_cmpstr(f[3].p, ==, "");
  g_assert_cmpint(ema_csv_split(trimmed, strlen(trimmed), f, &problem, &at), ==, 3);
  g_assert_cmpstr(f[0].p, ==, "x");
  g_assert_cmpstr(f[1].p, ==, "y");
  g_assert_cmpstr(f[2].p, ==, "z");
  g_assert_cmpint(ema_csv_split(open, strlen(open), f, &problem, &at), ==, -1);
  g_assert_cmpstr(problem, ==, "unterminated quoted field");
  g_assert_cmpuint(at, ==, 2);
  g_assert_cmpint(ema_csv_split(after, strlen(after), f, &problem, &at), ==, -1);
  g_assert_cmpstr(problem, ==, "text after a quoted field");
  g_assert_cmpuint(at, ==, 3);
  /* a sweep.csv header of eight tenants (159 columns) splits whole */
  g_autofree char *sweep = g_strnfill(158, ',');
  g_assert_cmpint(ema_csv_split(sweep, strlen(sweep), f, &problem, &at), ==, 159);
  /* EMA_CSV_MAX_FIELDS commas make one field more than it holds */
  g_assert_cmpint(ema_csv_split(wide, strlen(wide), f, &problem, &at), ==, -1);
  g_assert_cmpstr(problem, ==, "too many fields");
  g_assert_cmpuint(at, ==, EMA_CSV_MAX_FIELDS);
}

/* TEXT (LENGTH bytes; -1: up to its NUL) written to a new file; its path */
static char *write_table_bytes(const char *dir, const char *text, gssize length) {
  char *path = g_build_filename(dir, "t.csv", NULL);
  g_assert_true(g_file_set_contents(path, text, length, NULL));
  return path;
}

static char *write_table(const char *dir, const char *text) {
  return write_table_bytes(dir, text, -1);
}

static void test_table(void) {
  g_autofree char *dir = g_dir_make_tmp("ema-test-csv-XXXXXX", NULL);
  g_autofree char *path =
      write_table(dir, "name, value\r\n\n\"a, b\",1\r\n  c ,\"2\"\n\n\"say \"\"x\"\"\",3");
  EmaCsv csv;
  GError *error = NULL;
  guint value = 0;
  g_assert_true(ema_csv_open(&csv, path, &error));
  g_assert_true(ema_csv_column(&csv, "value", &value, &error));
  g_assert_cmpuint(value, ==, 1);
  g_assert_true(ema_csv_next(&csv, &error));
  g_assert_cmpuint(csv.line, ==, 3);
  g_assert_cmpstr(csv.fields[0], ==, "a, b");
  g_assert_cmpuint(ema_csv_field_column(&csv, 1), ==, 8);
  g_assert_true(ema_csv_next(&csv, &error));
  g_assert_cmpstr(csv.fields[0], ==, "c");
  g_assert_cmpstr(csv.fields[1], ==, "2");
  g_assert_cmpuint(ema_csv_field_column(&csv, 0), ==, 3);
  g_assert_true(ema_csv_next(&csv, &error));
  g_assert_cmpuint(csv.line, ==, 6);
  g_assert_cmpstr(csv.fields[0], ==, "say \"x\"");
  g_assert_false(ema_csv_next(&csv, &error));
  g_assert_no_error(error);
  ema_csv_clear(&csv);
  g_unlink(path);
  g_rmdir(dir);
}

/* A UTF-8 byte-order mark before the header (a spreadsheet's export) is not part of the first
 * column's name; columns are counted after it. */
static void test_byte_order_mark(void) {
  g_autofree char *dir = g_dir_make_tmp("ema-test-csv-XXXXXX", NULL);
  g_autofree char *path = write_table(dir, "\xEF\xBB\xBFname,value\nx,1\n");
  EmaCsv csv;
  GError *error = NULL;
  guint name = 9;
  g_assert_true(ema_csv_open(&csv, path, &error));
  g_assert_true(ema_csv_column(&csv, "name", &name, &error));
  g_assert_cmpuint(name, ==, 0);
  g_assert_true(ema_csv_next(&csv, &error));
  g_assert_cmpstr(csv.fields[0], ==, "x");
  ema_csv_clear(&csv);
  g_unlink(path);
  g_rmdir(dir);
}

/* Reading TEXT (LENGTH bytes) to its end fails with PATH followed by WANT. */
static void table_fails_bytes(const char *text, gssize length, const char *want) {
  g_autofree char *dir = g_dir_make_tmp("ema-test-csv-XXXXXX", NULL);
  g_autofree char *path = write_table_bytes(dir, text, length);
  g_autofree char *expected = g_strconcat(path, want, NULL);
  EmaCsv csv;
  GError *error = NULL;
  if (ema_csv_open(&csv, path, &error))
    while (ema_csv_next(&csv, &error))
      ;
  g_assert_error(error, EMA_CONFIG_ERROR, EMA_CONFIG_ERROR_SYNTAX);
  g_assert_cmpstr(error->message, ==, expected);
  g_error_free(error);
  ema_csv_clear(&csv);
  g_unlink(path);
  g_rmdir(dir);
}

static void table_fails(const char *text, const char *want) {
  table_fails_bytes(text, -1, want);
}

static void test_errors(void) {
  static const char nul[] = "a,b\n1,2\n3,x\0y\n";
  table_fails("", ":1:1: no header row");
  /* a NUL byte at its place, not a row cut short there ("1 field where the header has 2") */
  table_fails_bytes(nul, sizeof nul - 1, ":3:4: a NUL byte");
  table_fails_bytes("\0", 1, ":1:1: a NUL byte");
  table_fails("a,\"b\n", ":1:3: unterminated quoted field");
  table_fails("a,b\n1,2\n3,\"4\"x\n", ":3:6: text after a quoted field");
  table_fails("a,b\n1\n", ":2:2: 1 field where the header has 2");
  table_fails("a,b\n1,2,3\n", ":2:5: 3 fields where the header has 2");
  /* lines ended by a CR alone read as one header line of every row, and no row */
  table_fails("a,b\r1,2\r", ":1:4: a carriage return (\\r) inside the line: lines must end "
                            "with \\n or \\r\\n");
  table_fails("a,b\r\n1,2\r\n3\r,4\r\n", ":3:2: a carriage return (\\r) inside the line: "
                                         "lines must end with \\n or \\r\\n");
}

/* A column looked up by a name the header gives twice is an error at the second (which one is
 * meant is not for the reader to guess); a name given twice that is not looked up is no error. */
static void test_duplicate_column(void) {
  g_autofree char *dir = g_dir_make_tmp("ema-test-csv-XXXXXX", NULL);
  g_autofree char *path = write_table(dir, "name, value, note,value\nx,1,,2\n");
  g_autofree char *want = g_strconcat(path,
                                      ":1:19: column 'value' is in the header twice (also "
                                      "at column 7)",
                                      NULL);
  EmaCsv csv;
  GError *error = NULL;
  guint index = 9;
  g_assert_true(ema_csv_open(&csv, path, &error));
  g_assert_true(ema_csv_column(&csv, "name", &index, &error));
  g_assert_cmpuint(index, ==, 0);
  g_assert_false(ema_csv_column(&csv, "value", &index, &error));
  g_assert_error(error, EMA_CONFIG_ERROR, EMA_CONFIG_ERROR_KEY);
  g_assert_cmpstr(error->message, ==, want);
  g_error_free(error);
  ema_csv_clear(&csv);
  g_unlink(path);
  g_rmdir(dir);
}

/* A number cell is read as a decimal only: hexadecimal ("0x1", which strtod read as 1: a tp of 1;
 * also after a sign) is refused at its cell, in the reader's words. A bad cell of any length is
 * quoted by its first 40 bytes and "..." (a 10 MB cell made a 10 MB message), and so is a long
 * column name given twice. */
static void test_number_errors(void) {
  g_autofree char *dir = g_dir_make_tmp("ema-test-csv-XXXXXX", NULL);
  g_autofree char *huge = g_strnfill(10 << 20, '7');
  g_autofree char *huge_cell = g_strconcat(huge, "x", NULL);
  g_autofree char *cut = g_strnfill(40, '7');
  g_autofree char *cut_quoted = g_strconcat(cut, "...", NULL);
  const struct {
    const char *cell, *quoted;
  } cases[] = {
      {"0x1", "0x1"},     {"0X10", "0X10"},   {"-0x1", "-0x1"},
      {"+0x10", "+0x10"}, {"0x1p3", "0x1p3"}, {huge_cell, cut_quoted},
  };
  for (guint i = 0; i < G_N_ELEMENTS(cases); i++) {
    g_autofree char *text = g_strdup_printf("tp,time_us\n%s,5\n", cases[i].cell);
    g_autofree char *path = write_table(dir, text);
    g_autofree char *want =
        g_strdup_printf("%s:2:1: column 'tp': '%s' is not a positive integer (of at most 2^53)",
                        path, cases[i].quoted);
    EmaCsv csv;
    GError *error = NULL;
    double v = -1;
    g_assert_true(ema_csv_open(&csv, path, &error));
    g_assert_true(ema_csv_next(&csv, &error));
    g_assert_false(ema_csv_number(&csv, 0, TRUE, FALSE, &v, &error));
    g_assert_error(error, EMA_CONFIG_ERROR, EMA_CONFIG_ERROR_TYPE);
    g_assert_cmpstr(error->message, ==, want);
    g_assert_cmpfloat(v, ==, -1);
    g_error_free(error);
    ema_csv_clear(&csv);
    g_unlink(path);
  }
  /* decimals as they were */
  {
    g_autofree char *path = write_table(dir, "tp,time_us\n2,1.5e1\n");
    EmaCsv csv;
    GError *error = NULL;
    double v[2];
    guint index[2] = {0, 1};
    g_assert_true(ema_csv_open(&csv, path, &error));
    g_assert_true(ema_csv_next(&csv, &error));
    g_assert_true(ema_csv_numbers(&csv, index, 2, 0, v, &error));
    g_assert_cmpfloat(v[0], ==, 2);
    g_assert_cmpfloat(v[1], ==, 15);
    ema_csv_clear(&csv);
    g_unlink(path);
  }
  /* a long name given twice */
  {
    g_autofree char *name = g_strnfill(100000, 'n');
    g_autofree char *text = g_strdup_printf("%s,%s\n1,2\n", name, name);
    g_autofree char *path = write_table(dir, text);
    g_autofree char *want = g_strdup_printf(
        "%s:1:100002: column 'nnnnnnnnnnnnnnnnnnnnnnnnnnnnnnnnnnnnnnnn...' is in the header twice "
        "(also at column 1)",
        path);
    EmaCsv csv;
    GError *error = NULL;
    guint index;
    g_assert_true(ema_csv_open(&csv, path, &error));
    g_assert_false(ema_csv_column(&csv, name, &index, &error));
    g_assert_cmpstr(error->message, ==, want);
    g_error_free(error);
    ema_csv_clear(&csv);
    g_unlink(path);
  }
  g_rmdir(dir);
}

/* The one cut of quoted input (ema_file_quote_cut): whole up to 40 bytes, else the first 40 and
 * "...", fewer where the cut would split a UTF-8 character; LENGTH bytes where given. */
static void test_quote_cut(void) {
  g_autofree char *forty = g_strnfill(40, 'a');
  g_autofree char *forty_one = g_strnfill(41, 'a');
  g_autofree char *forty_cut = g_strconcat(forty, "...", NULL);
  g_autofree char *thirty_nine = g_strnfill(39, 'a');
  /* 39 bytes, then "é" (2 bytes: the cut at 40 falls inside it), then more */
  g_autofree char *accent = g_strconcat(thirty_nine,
                                        "\xc3\xa9"
                                        "b",
                                        NULL);
  g_autofree char *accent_cut = g_strconcat(thirty_nine, "...", NULL);
  g_autofree char *accent_fits = g_strconcat(thirty_nine, "\xc3\xa9", NULL); /* 41 bytes */
  const struct {
    const char *text;
    gssize length;
    const char *want;
  } cases[] = {
      {"", -1, ""},
      {"abc", -1, "abc"},
      {"abcdef", 3, "abc"},
      {forty, -1, forty},
      {forty_one, -1, forty_cut},
      {forty_one, 40, forty},
      {accent, -1, accent_cut},
      {accent_fits, -1, accent_cut},
  };
  for (guint i = 0; i < G_N_ELEMENTS(cases); i++) {
    g_autofree char *got = ema_file_quote_cut(cases[i].text, cases[i].length);
    g_assert_cmpstr(got, ==, cases[i].want);
  }
  g_assert_cmpuint(ema_file_quote_length(accent, strlen(accent)), ==, 39);
  g_assert_cmpuint(ema_file_quote_length(forty_one, 41), ==, 40);
  g_assert_cmpuint(ema_file_quote_length(forty_one, 7), ==, 7);
}

static void test_missing(void) {
  EmaCsv csv;
  GError *error = NULL;
  g_assert_false(ema_csv_open(&csv, "/nonexistent/t.csv", &error));
  g_assert_error(error, EMA_CONFIG_ERROR, EMA_CONFIG_ERROR_IO);
  g_error_free(error);
  ema_csv_clear(&csv);
}

/* The fixed-point writer prints what printf's "%.*f" prints: on hand-picked
 * values (ties in binary and in decimal, zero, negative zero, negatives,
 * the largest exact integers, NaN, infinities) and on a million values of
 * every magnitude a run's times and durations take, at 3, 6 and 9 digits. */
static void test_fixed(void) {
  static const double picked[] = {0,     -0.0,  0.5,    1.5,    2.5e-7,    0.0000005,
                                  1e-7,  1e-6,  0.125,  3600.0, 23.546946, 1e300,
                                  -1.25, -1e-9, 9.9e15, 4.5e15, 0.0625,    123456.5e-6};
  const double special[] = {NAN, INFINITY, -INFINITY};
  g_autoptr(GString) fast = g_string_new(NULL);
  GRand *rand = g_rand_new_with_seed(7);
  for (guint digits = 1; digits <= 9; digits++) {
    for (guint i = 0; i < G_N_ELEMENTS(picked) + G_N_ELEMENTS(special); i++) {
      double v = i < G_N_ELEMENTS(picked) ? picked[i] : special[i - G_N_ELEMENTS(picked)];
      g_autofree char *slow = g_strdup_printf("%.*f", (int) digits, v);
      g_string_truncate(fast, 0);
      ema_file_append_fixed(fast, v, digits);
      g_assert_cmpstr(fast->str, ==, slow);
    }
  }
  for (guint i = 0; i < 1000000; i++) {
    guint digits = 3 * (1 + i % 3);
    /* 1 ns to 10^5 s, uniform in the exponent; every tenth one a whole
     * number of nanoseconds, as the event times are */
    double v = pow(10, g_rand_double_range(rand, -9, 5));
    g_autofree char *slow = NULL;
    if (i % 10 == 0)
      v = (double) (gint64) (v * 1e9) / 1e9;
    slow = g_strdup_printf("%.*f", (int) digits, v);
    g_string_truncate(fast, 0);
    ema_file_append_fixed(fast, v, digits);
    if (strcmp(fast->str, slow) != 0)
      g_error("%.17g at %u digits: %s, printf %s", v, digits, fast->str, slow);
  }
  g_rand_free(rand);
}

/* The integer writer prints what printf's "%" G_GUINT64_FORMAT prints: at
 * every power of ten and one below it, the extremes, and random values. */
/* ema_csv_parse_decimal gives g_ascii_strtod's double bit for bit, and ends where it does: on
 * edge cases (leading zeros, 16 and 17 significant digits, 2^53 and past it, a point alone or at
 * either end, signs and exponents it leaves to strtod, text after a number) and on 200,000
 * random decimals of 1-20 digits with the point anywhere. What strtod reads and is no decimal
 * (hexadecimal, also after a sign; "inf", "nan"; a leading blank) it reads as no number: 0,
 * nothing read (strtod took "0x1" for 1: a tp of 0x1 was a tp of 1). */
static void assert_decimal(const char *text) {
  char *end = NULL, *want_end = NULL;
  double got = ema_csv_parse_decimal(text, &end);
  double want = g_ascii_strtod(text, &want_end);
  if (memcmp(&got, &want, sizeof got) != 0 || end != want_end)
    g_error("'%s': %.17g (end +%td) against strtod's %.17g (end +%td)", text, got, end - text, want,
            want_end - text);
}

static void test_decimal(void) {
  static const char *const cases[] = {"0",
                                      "0000",
                                      "1",
                                      "1.",
                                      ".5",
                                      ".",
                                      "",
                                      "0.1",
                                      "0.3",
                                      "0.01071999967098236",
                                      "0.010703999549150467",
                                      "40.13378567165798",
                                      "9007199254740992",
                                      "9007199254740993",
                                      "9007199254740991.5",
                                      "1234567890123456",
                                      "12345678901234567",
                                      "0.0000000000000000000001",
                                      "0.00000000000000000000001",
                                      "123.456e3",
                                      "-1.5",
                                      "+2",
                                      "1e400",
                                      "1.5 ",
                                      "1.2.3",
                                      "-0",
                                      "0.5x",
                                      "1x10",
                                      "-.5",
                                      "99999999999999999999",
                                      "4.9406564584124654e-324"};
  static const char *const not_decimal[] = {"0x1", "0x10", "0X1",  "-0x1", "+0X10",    "0x1p3",
                                            "0x",  "inf",  "-inf", "nan",  "infinity", " 1.5",
                                            "\t1", "e5",   ".",    "-",    "+.e1"};
  GRand *rand = g_rand_new_with_seed(7);
  for (guint i = 0; i < G_N_ELEMENTS(cases); i++)
    assert_decimal(cases[i]);
  for (guint i = 0; i < G_N_ELEMENTS(not_decimal); i++) {
    char *end = NULL;
    double got = ema_csv_parse_decimal(not_decimal[i], &end);
    if (got != 0 || end != not_decimal[i])
      g_error("'%s': read as %.17g (end +%td), not as no number", not_decimal[i], got,
              end - not_decimal[i]);
  }
  for (guint i = 0; i < 200000; i++) {
    char text[32];
    guint n = (guint) g_rand_int_range(rand, 1, 21), point = (guint) g_rand_int_range(rand, 0, 22);
    guint w = 0;
    for (guint d = 0; d < n; d++) {
      if (d == point)
        text[w++] = '.';
      text[w++] = (char) ('0' + g_rand_int_range(rand, 0, 10));
    }
    text[w] = '\0';
    assert_decimal(text);
  }
  g_rand_free(rand);
}

static void test_uint(void) {
  g_autoptr(GString) appended = g_string_new("x");
  GRand *rand = g_rand_new_with_seed(11);
  guint64 power = 1;
  for (guint i = 0; i < 1000 + 2 * 20; i++) {
    guint64 v =
        i < 40 ? (i % 2 ? power - 1 : power) : (guint64) g_rand_int(rand) << 32 | g_rand_int(rand);
    char out[EMA_FILE_UINT_CHARS];
    g_autofree char *slow = g_strdup_printf("%" G_GUINT64_FORMAT, v);
    if (i < 40 && i % 2)
      power = power > G_MAXUINT64 / 10 ? G_MAXUINT64 : power * 10;
    g_assert_cmpuint(ema_file_format_uint(out, v), ==, strlen(slow));
    g_assert_cmpstr(out, ==, slow);
  }
  ema_file_append_uint(appended, 0);
  ema_file_append_uint(appended, G_MAXUINT64);
  g_assert_cmpstr(appended->str, ==, "x018446744073709551615");
  g_rand_free(rand);
}

/* A CSV field is written as it is, or quoted with its quotes doubled. */
static void test_field(void) {
  static const char *const cases[][2] = {
      {"plain text", "plain text"},         {"", ""},           {"a, b", "\"a, b\""},
      {"say \"hi\"", "\"say \"\"hi\"\"\""}, {"\"", "\"\"\"\""}, {"\"\",\"", "\"\"\"\"\",\"\"\""},
      {"two\nlines", "\"two\nlines\""},
  };
  for (guint i = 0; i < G_N_ELEMENTS(cases); i++) {
    g_autoptr(GString) out = g_string_new("<");
    ema_file_csv_field(out, cases[i][0]);
    g_assert_cmpstr(out->str + 1, ==, cases[i][1]);
  }
}

/* A label goes after the place an error message starts with (a file's line and column, or a
 * path that exists), so the message still leads with its place; before a message without one,
 * as g_prefix_error puts it. */
static void test_prefix_error(void) {
  g_autofree char *dir = g_dir_make_tmp("ema-csv-XXXXXX", NULL);
  g_autofree char *file = g_build_filename(dir, "bench.json", NULL);
  g_autofree char *missing = g_build_filename(dir, "none.csv", NULL);
  g_assert_true(g_file_set_contents(file, "{}", -1, NULL));
  g_autofree char *at_file = g_strconcat(file, ": input_lens[1] must be > 0", NULL);
  g_autofree char *at_file_want = g_strconcat(file, ": tenant b: input_lens[1] must be > 0", NULL);
  g_autofree char *at_missing = g_strconcat(missing, ": cannot open: No such file", NULL);
  g_autofree char *at_missing_want = g_strconcat("tenant b: ", at_missing, NULL);
  const struct {
    const char *message, *want;
  } cases[] = {
      {"/x/bad.csv:3:1: TIMESTAMP: not a date-time",
       "/x/bad.csv:3:1: tenant b: TIMESTAMP: not a date-time"},
      {"/x/lens.csv:1: missing column", "/x/lens.csv:1: tenant b: missing column"},
      {at_file, at_file_want},
      /* no place: a path that is not there, or no path at all */
      {at_missing, at_missing_want},
      {"rate must be > 0", "tenant b: rate must be > 0"},
  };
  for (guint i = 0; i < G_N_ELEMENTS(cases); i++) {
    GError *error = g_error_new_literal(G_FILE_ERROR, G_FILE_ERROR_INVAL, cases[i].message);
    ema_message_prefix_error(&error, "tenant %s: ", "b");
    g_assert_error(error, G_FILE_ERROR, G_FILE_ERROR_INVAL);
    g_assert_cmpstr(error->message, ==, cases[i].want);
    g_error_free(error);
  }
  /* labels nest, each after the place */
  GError *error = g_error_new_literal(G_FILE_ERROR, G_FILE_ERROR_INVAL, "/x/m.jsonl:1:18: bad");
  ema_message_prefix_error(&error, "tenant %s: ", "b");
  ema_message_prefix_error(&error, "compare: variant %s: ", "static");
  g_assert_cmpstr(error->message, ==, "/x/m.jsonl:1:18: compare: variant static: tenant b: bad");
  g_clear_error(&error);
  ema_message_prefix_error(&error, "tenant %s: ", "b"); /* no error: nothing */
  ema_message_prefix_error(NULL, "tenant %s: ", "b");
  g_assert_null(error);
  g_assert_cmpint(g_remove(file), ==, 0);
  g_assert_cmpint(g_rmdir(dir), ==, 0);
}

int main(int argc, char **argv) {
  g_test_init(&argc, &argv, NULL);
  g_test_add_func("/csv/uint", test_uint);
  g_test_add_func("/csv/decimal", test_decimal);
  g_test_add_func("/csv/field", test_field);
  g_test_add_func("/csv/fixed", test_fixed);
  g_test_add_func("/csv/split", test_split);
  g_test_add_func("/csv/table", test_table);
  g_test_add_func("/csv/errors", test_errors);
  g_test_add_func("/csv/duplicate-column", test_duplicate_column);
  g_test_add_func("/csv/byte-order-mark", test_byte_order_mark);
  g_test_add_func("/csv/missing", test_missing);
  g_test_add_func("/csv/number-errors", test_number_errors);
  g_test_add_func("/csv/quote-cut", test_quote_cut);
  g_test_add_func("/csv/prefix-error", test_prefix_error);
  return g_test_run();
}
