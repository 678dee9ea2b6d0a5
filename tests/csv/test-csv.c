/* test-csv.c: the one CSV mechanism (ema/core/csv.h): the in-place splitter's
 * quoting and trimming rules and its problems with their offsets, and the
 * table reader on it: quoted fields, blank lines, field columns, and every
 * error with its FILE:LINE:COL. */
#include "ema/core/csv.h"

#include <string.h>

#include <glib/gstdio.h>

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

/* TEXT written to a new file; its path */
static char *write_table(const char *dir, const char *text) {
  char *path = g_build_filename(dir, "t.csv", NULL);
  g_assert_true(g_file_set_contents(path, text, -1, NULL));
  return path;
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

/* Reading TEXT to its end fails with PATH followed by WANT. */
static void table_fails(const char *text, const char *want) {
  g_autofree char *dir = g_dir_make_tmp("ema-test-csv-XXXXXX", NULL);
  g_autofree char *path = write_table(dir, text);
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

static void test_errors(void) {
  table_fails("", ":1:1: no header row");
  table_fails("a,\"b\n", ":1:3: unterminated quoted field");
  table_fails("a,b\n1,2\n3,\"4\"x\n", ":3:6: text after a quoted field");
  table_fails("a,b\n1\n", ":2:2: 1 field where the header has 2");
  table_fails("a,b\n1,2,3\n", ":2:5: 3 fields where the header has 2");
}

static void test_missing(void) {
  EmaCsv csv;
  GError *error = NULL;
  g_assert_false(ema_csv_open(&csv, "/nonexistent/t.csv", &error));
  g_assert_error(error, EMA_CONFIG_ERROR, EMA_CONFIG_ERROR_IO);
  g_error_free(error);
  ema_csv_clear(&csv);
}

int main(int argc, char **argv) {
  g_test_init(&argc, &argv, NULL);
  g_test_add_func("/csv/split", test_split);
  g_test_add_func("/csv/table", test_table);
  g_test_add_func("/csv/errors", test_errors);
  g_test_add_func("/csv/missing", test_missing);
  return g_test_run();
}
