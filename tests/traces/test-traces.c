/* test-traces.c: tests for traces/ (trace.h): the field parsers, every file
 * reader on good / malformed / truncated / empty fixtures with exact records
 * and exact "file:line: problem" messages, the transformations and their
 * composition (and the round-robin split on its own), the synthetic arrival
 * processes and length distributions (statistics on 100k draws with fixed
 * seeds, determinism), how far a trace file goes against a start
 * (ema_trace_spec_reaches, tenant.h), and integration tests on the real traces in
 * $EMA_SHARED_DIR/traces (skipped when absent).
 *
 * Fixtures live in $EMA_TEST_FIXTURES/traces and are hand-written; variants
 * that .editorconfig would not allow in the tree (CRLF, no final newline,
 * binary junk) are written at run time into a temporary folder. */
#include <math.h>
#include <string.h>

#include <glib/gstdio.h>

#include "ema/serving/tenant.h"
#include "ema/traces/trace.h"

static char *tmp_dir;

/* ---- helpers -------------------------------------------------------------- */

static char *fixture(const char *name) {
  const char *dir = g_getenv("EMA_TEST_FIXTURES");
  g_assert_nonnull(dir);
  return g_build_filename(dir, "traces", name, NULL);
}

static char *real_trace(const char *relative) {
  const char *dir = g_getenv("EMA_SHARED_DIR");
  if (dir == NULL)
    return NULL;
  char *path = g_build_filename(dir, "traces", relative, NULL);
  if (!g_file_test(path, G_FILE_TEST_IS_REGULAR)) {
    g_free(path);
    return NULL;
  }
  return path;
}

/* Writes LEN bytes (-1: strlen) to a new file in the temporary folder. */
static char *write_tmp(const char *name, const char *content, gssize len) {
  char *path = g_build_filename(tmp_dir, name, NULL);
  GError *error = NULL;
  g_file_set_contents(path, content, len, &error);
  g_assert_no_error(error);
  return path;
}

/* A copy of fixture NAME with "\r\n" line ends and no final newline. */
static char *crlf_variant(const char *name) {
  g_autofree char *path = fixture(name);
  g_autofree char *text = NULL;
  gsize len;
  GError *error = NULL;
  g_file_get_contents(path, &text, &len, &error);
  g_assert_no_error(error);
  GString *out = g_string_new(NULL);
  for (gsize i = 0; i < len; i++) {
    if (text[i] == '\n') {
      if (i + 1 == len)
        break;
      g_string_append(out, "\r\n");
    } else {
      g_string_append_c(out, text[i]);
    }
  }
  g_autofree char *tmp_name = g_strconcat("crlf-", name, NULL);
  char *result = write_tmp(tmp_name, out->str, (gssize) out->len);
  g_string_free(out, TRUE);
  return result;
}

/* Reads SRC to its end; returns the records; *ERROR holds the error, if any. */
static GArray *read_all(EmaTraceSource *src, GError **error) {
  GArray *records = g_array_new(FALSE, FALSE, sizeof(EmaRequestRecord));
  EmaRequestRecord r;
  while (ema_trace_source_next(src, &r, error))
    g_array_append_val(records, r);
  return records;
}

typedef struct {
  EmaTime arrival;
  guint32 prompt, output;
  guint64 id;
  guint32 blocks;
} Want;

static void assert_records(GArray *records, const Want *want, gsize n) {
  g_assert_cmpuint(records->len, ==, n);
  for (gsize i = 0; i < n; i++) {
    const EmaRequestRecord *r = &g_array_index(records, EmaRequestRecord, i);
    g_assert_cmpint(r->arrival, ==, want[i].arrival);
    g_assert_cmpuint(r->prompt_tokens, ==, want[i].prompt);
    g_assert_cmpuint(r->output_tokens, ==, want[i].output);
    g_assert_cmpuint(r->id, ==, want[i].id);
    g_assert_cmpuint(r->prefix_blocks, ==, want[i].blocks);
  }
}

/* Reads SRC fully and checks it yields WANT and ends cleanly. */
static void expect_records(EmaTraceSource *src, const Want *want, gsize n) {
  GError *error = NULL;
  g_assert_nonnull(src);
  g_autoptr(GArray) records = read_all(src, &error);
  g_assert_no_error(error);
  assert_records(records, want, n);
  ema_trace_source_free(src);
}

/* ERROR must be EMA_TRACE_ERROR/CODE with the message "PATH:SUFFIX". */
static void assert_error(GError *error, EmaTraceError code, const char *path, const char *suffix) {
  g_assert_nonnull(error);
  g_autofree char *want = g_strconcat(path, ":", suffix, NULL);
  g_assert_cmpstr(error->message, ==, want);
  g_assert_error(error, EMA_TRACE_ERROR, (gint) code);
}

/* Reads SRC: N_GOOD records, then the error. */
static void expect_row_error(EmaTraceSource *src, guint n_good, EmaTraceError code,
                             const char *path, const char *suffix) {
  GError *error = NULL;
  g_assert_nonnull(src);
  g_autoptr(GArray) records = read_all(src, &error);
  g_assert_cmpuint(records->len, ==, n_good);
  assert_error(error, code, path, suffix);
  g_error_free(error);
  ema_trace_source_free(src);
}

/* ---- parsers (through tiny Vidur and Azure files) ---------------------------- */

static EmaTime vidur_time(const char *text) {
  g_autofree char *content =
      g_strdup_printf("arrived_at,num_prefill_tokens,num_decode_tokens\n0,1,1\n%s,1,1\n", text);
  g_autofree char *path = write_tmp("time.csv", content, -1);
  GError *error = NULL;
  g_autoptr(EmaTraceSource) src = ema_trace_source_open_vidur(path, &error);
  g_assert_no_error(error);
  g_autoptr(GArray) records = read_all(src, &error);
  g_assert_no_error(error);
  g_assert_cmpuint(records->len, ==, 2);
  return g_array_index(records, EmaRequestRecord, 1).arrival;
}

static void test_parse_seconds(void) {
  g_assert_cmpint(vidur_time("4.314579"), ==, 4314579000);
  g_assert_cmpint(vidur_time("5.8926549999999995"), ==, 5892655000);
  g_assert_cmpint(vidur_time("11.836632999999999"), ==, 11836633000);
  g_assert_cmpint(vidur_time("0.0000000005"), ==, 1); /* half rounds away from zero */
  g_assert_cmpint(vidur_time("0.0000000004999"), ==, 0);
  g_assert_cmpint(vidur_time("1e-05"), ==, 10000);
  g_assert_cmpint(vidur_time("2.5E+3"), ==, 2500000000000);
  g_assert_cmpint(vidur_time("+7"), ==, 7000000000);
  g_assert_cmpint(vidur_time("604800.000000001"), ==, 604800000000001);
  /* the latest arrival a source hands out (2^62 ns); later is an error */
  g_assert_cmpint(vidur_time("4611686018.427387904"), ==, EMA_TRACE_MAX_ARRIVAL);
  g_assert_cmpint(vidur_time(".5"), ==, 500000000);
  g_assert_cmpint(vidur_time("3."), ==, 3000000000);
}

static EmaTime azure_time(const char *first, const char *second) {
  g_autofree char *content =
      g_strdup_printf("TIMESTAMP,ContextTokens,GeneratedTokens\n%s,1,1\n%s,1,1\n", first, second);
  g_autofree char *path = write_tmp("datetime.csv", content, -1);
  GError *error = NULL;
  g_autoptr(EmaTraceSource) src = ema_trace_source_open_azure(path, &error);
  g_assert_no_error(error);
  g_autoptr(GArray) records = read_all(src, &error);
  g_assert_no_error(error);
  g_assert_cmpuint(records->len, ==, 2);
  return g_array_index(records, EmaRequestRecord, 1).arrival;
}

static void test_parse_datetime(void) {
  /* Leap day, month and year boundaries. */
  g_assert_cmpint(azure_time("2024-02-28 23:59:59", "2024-03-01 00:00:00"), ==,
                  EMA_S(86400) + EMA_S(1));
  g_assert_cmpint(azure_time("2023-02-28 23:59:59", "2023-03-01 00:00:00"), ==, EMA_S(1));
  g_assert_cmpint(azure_time("2023-12-31 23:59:59.9999999", "2024-01-01 00:00:00.0000000"), ==,
                  100);
  g_assert_cmpint(azure_time("2023-11-16 18:17:03.9799600", "2023-11-16 18:17:04.0319600"), ==,
                  52000000);
  g_assert_cmpint(azure_time("2023-11-16 18:17:03.123456789", "2023-11-16 18:17:03.123456790"), ==,
                  1);
  /* Offsets: 02:00+02:00 is 00:00 UTC; -0130 is 01:30 UTC. */
  g_assert_cmpint(azure_time("2024-05-10 00:00:00Z", "2024-05-10T02:00:00+02:00"), ==, 0);
  g_assert_cmpint(azure_time("2024-05-10 00:00:00+00:00", "2024-05-10 00:00:00-0130"), ==,
                  EMA_S(5400));
  /* hours alone (ISO 8601's +HH) */
  g_assert_cmpint(azure_time("2024-05-10 00:00:00Z", "2024-05-10 05:00:00+05"), ==, 0);
  /* the latest a second request may come (EMA_TRACE_MAX_ARRIVAL, ~146 years) */
  g_assert_cmpint(azure_time("1970-01-01 00:00:00", "2116-01-01 00:00:00"), ==,
                  EMA_S(G_GINT64_CONSTANT(4607280000)));
}

/* ---- Azure ------------------------------------------------------------------- */

static const Want azure_good[] = {
    {0, 374, 44, 0, 0},
    {4314579000, 396, 109, 1, 0},
    {4314579000, 12, 7, 2, 0},
    {G_GINT64_CONSTANT(20653319410100), 879, 55, 3, 0},
};

static void test_azure_good(void) {
  g_autofree char *path = fixture("azure-good.csv");
  GError *error = NULL;
  expect_records(ema_trace_source_open_azure(path, &error), azure_good, G_N_ELEMENTS(azure_good));
  g_assert_no_error(error);
}

static void test_azure_crlf(void) {
  g_autofree char *path = crlf_variant("azure-good.csv");
  GError *error = NULL;
  expect_records(ema_trace_source_open_azure(path, &error), azure_good, G_N_ELEMENTS(azure_good));
  g_assert_no_error(error);
}

static void test_azure_2024(void) {
  static const Want want[] = {
      {0, 1024, 16, 0, 0},
      {1491761000, 2048, 1, 1, 0},
      {2241761000, 4, 0, 2, 0},
      {2991761000, 100, 200, 3, 0},
  };
  g_autofree char *path = fixture("azure-2024.csv");
  GError *error = NULL;
  expect_records(ema_trace_source_open_azure(path, &error), want, G_N_ELEMENTS(want));
  g_assert_no_error(error);
}

static void test_azure_swapped(void) {
  static const Want want[] = {{0, 374, 44, 0, 0}, {4314579000, 396, 109, 1, 0}};
  g_autofree char *path = fixture("azure-swapped.csv");
  GError *error = NULL;
  expect_records(ema_trace_source_open_azure(path, &error), want, G_N_ELEMENTS(want));
  g_assert_no_error(error);
}

static void test_azure_header_only(void) {
  g_autofree char *path = fixture("azure-header-only.csv");
  GError *error = NULL;
  expect_records(ema_trace_source_open_azure(path, &error), NULL, 0);
  g_assert_no_error(error);
}

static void test_azure_empty(void) {
  g_autofree char *path = fixture("empty.csv");
  GError *error = NULL;
  g_assert_null(ema_trace_source_open_azure(path, &error));
  assert_error(error, EMA_TRACE_ERROR_EMPTY, path, "1: empty file: no header");
  g_clear_error(&error);
  /* Blank lines only are no header either. */
  g_autofree char *blank = write_tmp("blank.csv", "\n\r\n\n", -1);
  g_assert_null(ema_trace_source_open_azure(blank, &error));
  assert_error(error, EMA_TRACE_ERROR_EMPTY, blank, "1: empty file: no header");
  g_clear_error(&error);
}

static void test_azure_missing_column(void) {
  g_autofree char *path = fixture("azure-missing-column.csv");
  GError *error = NULL;
  g_assert_null(ema_trace_source_open_azure(path, &error));
  assert_error(error, EMA_TRACE_ERROR_HEADER, path,
               "1: Azure LLM CSV header: missing column 'GeneratedTokens' (needs TIMESTAMP, "
               "ContextTokens, GeneratedTokens)");
  g_clear_error(&error);
  g_autofree char *twice =
      write_tmp("twice.csv", "TIMESTAMP,ContextTokens,contexttokens,GeneratedTokens\n", -1);
  g_assert_null(ema_trace_source_open_azure(twice, &error));
  assert_error(error, EMA_TRACE_ERROR_HEADER, twice, "1:25: column 'ContextTokens' appears twice");
  g_clear_error(&error);
}

static void test_azure_malformed(void) {
  g_autofree char *path = fixture("azure-malformed.csv");
  GError *error = NULL;
  expect_row_error(ema_trace_source_open_azure(path, &error), 1, EMA_TRACE_ERROR_PARSE, path,
                   "3:29: ContextTokens: not an integer: '39x6'");
}

static void test_azure_truncated(void) {
  g_autofree char *path = fixture("azure-truncated.csv");
  GError *error = NULL;
  expect_row_error(ema_trace_source_open_azure(path, &error), 2, EMA_TRACE_ERROR_PARSE, path,
                   "4:32: expected 3 fields, found 2");
  /* The same, cut without a final newline. */
  g_autofree char *cut = crlf_variant("azure-truncated.csv");
  expect_row_error(ema_trace_source_open_azure(cut, &error), 2, EMA_TRACE_ERROR_PARSE, cut,
                   "4:32: expected 3 fields, found 2");
}

/* Bad rows after one good row: each gives an exact message at line 3, at the column of the
 * field at fault. */
static void test_azure_rows(void) {
  static const struct {
    const char *row;
    EmaTraceError code;
    guint column; /* of the field at fault (past the row's end for a missing one) */
    const char *message;
  } cases[] = {
      {",396,109", EMA_TRACE_ERROR_PARSE, 1, "TIMESTAMP: empty field: ''"},
      {"2023-11-16 18:15:50.9951690,0,109", EMA_TRACE_ERROR_PARSE, 29,
       "ContextTokens must be > 0, found 0"},
      {"2023-11-16 18:15:50.9951690,-5,109", EMA_TRACE_ERROR_PARSE, 29,
       "ContextTokens must be > 0, found -5"},
      {"2023-11-16 18:15:50.9951690,5,-1", EMA_TRACE_ERROR_PARSE, 31,
       "GeneratedTokens must be >= 0, found -1"},
      {"2023-11-16 18:15:50.9951690,99999999999,1", EMA_TRACE_ERROR_PARSE, 29,
       "ContextTokens must be <= 4294967295, found 99999999999"},
      {"2023-11-16 18:15:50.9951690,99999999999999999999,1", EMA_TRACE_ERROR_PARSE, 29,
       "ContextTokens: out of range: '99999999999999999999'"},
      {"2023-11-16 18:15:50,1.5,1", EMA_TRACE_ERROR_PARSE, 21,
       "ContextTokens: not an integer: '1.5'"},
      {"2023-11-16 18:15:50,1e3,1", EMA_TRACE_ERROR_PARSE, 21,
       "ContextTokens: not an integer: '1e3'"},
      {"2023-11-16 18:15:40.0000000,1,1", EMA_TRACE_ERROR_ORDER, 1,
       "TIMESTAMP goes backwards: '2023-11-16 18:15:40.0000000' is earlier than line 2"},
      {"2023-13-16 18:15:50.9951690,1,1", EMA_TRACE_ERROR_PARSE, 1,
       "TIMESTAMP: date-time out of range: '2023-13-16 18:15:50.9951690'"},
      {"2023-11-31 18:15:50,1,1", EMA_TRACE_ERROR_PARSE, 1,
       "TIMESTAMP: date-time out of range: '2023-11-31 18:15:50'"},
      {"16/11/2023 18:15:50,1,1", EMA_TRACE_ERROR_PARSE, 1,
       "TIMESTAMP: not a date-time (YYYY-MM-DD HH:MM:SS[.fffffff][+HH:MM]): '16/11/2023 "
       "18:15:50'"},
      {"2023-11-16 18:15:50.1234567890,1,1", EMA_TRACE_ERROR_PARSE, 1,
       "TIMESTAMP: more than 9 fractional digits: '2023-11-16 18:15:50.1234567890'"},
      {"2023-11-16 18:15:50+25:00,1,1", EMA_TRACE_ERROR_PARSE, 1,
       "TIMESTAMP: time-zone offset out of range: '2023-11-16 18:15:50+25:00'"},
      /* a colon with no minutes after it is no offset (it was read as +05:00) */
      {"2023-11-16 18:15:50+05:,1,1", EMA_TRACE_ERROR_PARSE, 1,
       "TIMESTAMP: not a date-time (YYYY-MM-DD HH:MM:SS[.fffffff][+HH:MM]): '2023-11-16 "
       "18:15:50+05:'"},
      {"2023-11-16 18:15:50,1,1,1", EMA_TRACE_ERROR_PARSE, 25, "expected 3 fields, found 4"},
      {"2023-11-16 18:15:50", EMA_TRACE_ERROR_PARSE, 20, "expected 3 fields, found 1"},
      {"\"2023-11-16 18:15:50,1,1", EMA_TRACE_ERROR_PARSE, 1, "unterminated quoted field"},
      {"\"2023-11-16 18:15:50\"x,1,1", EMA_TRACE_ERROR_PARSE, 22, "text after a quoted field"},
      {"2023-11-16 18:15:50,\xff\x01,1", EMA_TRACE_ERROR_PARSE, 21,
       "ContextTokens: not an integer: '\\xff\\x01'"},
      /* the header again, as `cat day1.csv day2.csv` leaves it (it was "TIMESTAMP: not a
       * date-time: 'TIMESTAMP'"), in any case and column order */
      {"TIMESTAMP,ContextTokens,GeneratedTokens", EMA_TRACE_ERROR_PARSE, 1,
       "the header again (files joined with their headers?): remove this line"},
      {"timestamp,contexttokens,generatedtokens", EMA_TRACE_ERROR_PARSE, 1,
       "the header again (files joined with their headers?): remove this line"},
  };
  for (guint i = 0; i < G_N_ELEMENTS(cases); i++) {
    g_autofree char *content = g_strdup_printf(
        "TIMESTAMP,ContextTokens,GeneratedTokens\n2023-11-16 18:15:46.6805900,374,44\n%s\n",
        cases[i].row);
    g_autofree char *name = g_strdup_printf("row-%u.csv", i);
    g_autofree char *path = write_tmp(name, content, -1);
    g_autofree char *suffix = g_strdup_printf("3:%u: %s", cases[i].column, cases[i].message);
    GError *error = NULL;
    expect_row_error(ema_trace_source_open_azure(path, &error), 1, cases[i].code, path, suffix);
  }
}

static void test_azure_garbage(void) {
  GError *error = NULL;

  /* Binary junk with NUL bytes. */
  static const char elf[] = "\x7f"
                            "ELF\x02\x01\x01\x00\x00\x00\x00\x00\x00\x00\x00\x00\x03\x00>\x00";
  g_autofree char *bin = write_tmp("junk.bin", elf, sizeof elf - 1);
  g_assert_null(ema_trace_source_open_azure(bin, &error));
  assert_error(error, EMA_TRACE_ERROR_PARSE, bin, "1:8: binary data (NUL byte)");
  g_clear_error(&error);

  /* A compressed trace is named as such, not read as text: by the readers, the sniffing
   * (whatever the compressed text was), and the reader that reads a file whole. */
  static const char gzip[] = "\x1f\x8b\x08\x00\x00\x00\x00\x00\x00\x03{\x7f\x00}";
  static const char zstd[] = "\x28\xb5\x2f\xfd\x24\x05\x29\x00\x00{}";
  g_autofree char *gz = write_tmp("trace.csv.gz", gzip, sizeof gzip - 1);
  g_autofree char *zst = write_tmp("trace.json.zst", zstd, sizeof zstd - 1);
  EmaTraceFormat format;
  g_assert_null(ema_trace_source_open_azure(gz, &error));
  assert_error(error, EMA_TRACE_ERROR_PARSE, gz, "1: a gzip-compressed file: decompress it first");
  g_clear_error(&error);
  g_assert_false(ema_trace_format_sniff(gz, &format, &error));
  assert_error(error, EMA_TRACE_ERROR_PARSE, gz, "1: a gzip-compressed file: decompress it first");
  g_clear_error(&error);
  g_assert_null(ema_trace_source_open_mooncake(zst, &error));
  assert_error(error, EMA_TRACE_ERROR_PARSE, zst, "1: a zstd-compressed file: decompress it first");
  g_clear_error(&error);
  g_assert_null(
      ema_trace_source_open_vllm_bench(zst, ema_trace_arrivals_new_at_once(), FALSE, &error));
  assert_error(error, EMA_TRACE_ERROR_PARSE, zst, "1: a zstd-compressed file: decompress it first");
  g_clear_error(&error);
  /* UTF-16 text (PowerShell 5's '>' writes it) is named, not called binary data */
  static const char utf16[] = "\xff\xfeT\0I\0M\0E\0\n\0";
  g_autofree char *wide = write_tmp("utf16.csv", utf16, sizeof utf16 - 1);
  g_assert_false(ema_trace_format_sniff(wide, &format, &error));
  assert_error(error, EMA_TRACE_ERROR_PARSE, wide, "1: UTF-16 text: save it as UTF-8");
  g_clear_error(&error);
  g_assert_null(ema_trace_source_open_vidur(wide, &error));
  assert_error(error, EMA_TRACE_ERROR_PARSE, wide, "1: UTF-16 text: save it as UTF-8");
  g_clear_error(&error);

  /* Lines ended by "\r" alone (a classic Mac export) are one line: refused at the first "\r"
   * (its header's last column ran into the rows), as is a "\r" doubled before "\n". */
  g_autofree char *mac = write_tmp(
      "mac.csv", "TIMESTAMP,ContextTokens,GeneratedTokens\r2023-11-16 18:15:46,374,44\r", -1);
  g_assert_null(ema_trace_source_open_azure(mac, &error));
  assert_error(error, EMA_TRACE_ERROR_PARSE, mac,
               "1:40: a carriage return (\\r) inside the line: lines must end with \\n or "
               "\\r\\n");
  g_clear_error(&error);
  g_autofree char *double_cr =
      write_tmp("double-cr.csv",
                "TIMESTAMP,ContextTokens,GeneratedTokens\n2023-11-16 18:15:46,374,44\r\r\n", -1);
  expect_row_error(ema_trace_source_open_azure(double_cr, &error), 0, EMA_TRACE_ERROR_PARSE,
                   double_cr,
                   "2:27: a carriage return (\\r) inside the line: lines must end with \\n or "
                   "\\r\\n");

  /* Junk without NUL bytes is not a header. */
  g_autofree char *junk = write_tmp("junk.txt", "\xff\xfe\x80,garbage\n\x01\x02,3\n", -1);
  g_assert_null(ema_trace_source_open_azure(junk, &error));
  assert_error(error, EMA_TRACE_ERROR_HEADER, junk,
               "1: Azure LLM CSV header: missing column 'TIMESTAMP' (needs TIMESTAMP, "
               "ContextTokens, GeneratedTokens)");
  g_clear_error(&error);

  /* One huge line with no newline stops at the line limit. */
  gsize big = 200000;
  char *huge = g_malloc(big);
  memset(huge, 'a', big);
  g_autofree char *huge_path = write_tmp("huge.csv", huge, (gssize) big);
  g_free(huge);
  g_assert_null(ema_trace_source_open_azure(huge_path, &error));
  assert_error(error, EMA_TRACE_ERROR_PARSE, huge_path, "1: line longer than 65536 bytes");
  g_clear_error(&error);

  /* A row with NUL bytes after a good one. */
  static const char nul_row[] = "TIMESTAMP,ContextTokens,GeneratedTokens\n"
                                "2023-11-16 18:15:46.6805900,374,44\n"
                                "2023-11-16 18:15:47\x00,1,1\n";
  g_autofree char *nul_path = write_tmp("nul.csv", nul_row, sizeof nul_row - 1);
  expect_row_error(ema_trace_source_open_azure(nul_path, &error), 1, EMA_TRACE_ERROR_PARSE,
                   nul_path, "3:20: binary data (NUL byte)");

  /* A missing file. */
  g_autofree char *missing = g_build_filename(tmp_dir, "no-such-file.csv", NULL);
  g_assert_null(ema_trace_source_open_azure(missing, &error));
  g_assert_error(error, EMA_TRACE_ERROR, EMA_TRACE_ERROR_IO);
  g_autofree char *prefix = g_strconcat(missing, ": cannot open: ", NULL);
  g_assert_true(g_str_has_prefix(error->message, prefix));
  g_clear_error(&error);
}

/* After an error the source stays ended and repeats the error. */
static void test_source_error_latch(void) {
  g_autofree char *path = fixture("azure-malformed.csv");
  GError *error = NULL;
  g_autoptr(EmaTraceSource) src = ema_trace_source_open_azure(path, &error);
  EmaRequestRecord r;
  g_assert_true(ema_trace_source_next(src, &r, &error));
  for (int i = 0; i < 3; i++) {
    g_assert_false(ema_trace_source_next(src, &r, &error));
    assert_error(error, EMA_TRACE_ERROR_PARSE, path, "3:29: ContextTokens: not an integer: '39x6'");
    g_clear_error(&error);
  }
  g_assert_cmpuint(ema_trace_source_get_count(src), ==, 1);
}

/* ---- Vidur -------------------------------------------------------------------- */

static void test_vidur_good(void) {
  static const Want want[] = {
      {0, 374, 44, 0, 0},           {4314579000, 396, 109, 1, 0}, {5892655000, 91, 16, 2, 0},
      {11836633000, 369, 74, 3, 0}, {65000000000, 10, 1, 4, 0},
  };
  g_autofree char *path = fixture("vidur-good.csv");
  GError *error = NULL;
  expect_records(ema_trace_source_open_vidur(path, &error), want, G_N_ELEMENTS(want));
  g_autofree char *crlf = crlf_variant("vidur-good.csv");
  expect_records(ema_trace_source_open_vidur(crlf, &error), want, G_N_ELEMENTS(want));
  g_assert_no_error(error);
}

static void test_vidur_errors(void) {
  GError *error = NULL;
  g_autofree char *bad = fixture("vidur-malformed.csv");
  expect_row_error(ema_trace_source_open_vidur(bad, &error), 1, EMA_TRACE_ERROR_PARSE, bad,
                   "3:1: arrived_at: not a number: '4.3.14579'");
  g_autofree char *cut = fixture("vidur-truncated.csv");
  expect_row_error(ema_trace_source_open_vidur(cut, &error), 2, EMA_TRACE_ERROR_PARSE, cut,
                   "4:9: expected 3 fields, found 1");
  g_autofree char *empty = fixture("empty.csv");
  g_assert_null(ema_trace_source_open_vidur(empty, &error));
  assert_error(error, EMA_TRACE_ERROR_EMPTY, empty, "1: empty file: no header");
  g_clear_error(&error);
  /* An Azure file is not a Vidur file. */
  g_autofree char *azure = fixture("azure-good.csv");
  g_assert_null(ema_trace_source_open_vidur(azure, &error));
  assert_error(error, EMA_TRACE_ERROR_HEADER, azure,
               "1: Vidur CSV header: missing column 'arrived_at' (needs arrived_at, "
               "num_prefill_tokens, num_decode_tokens)");
  g_clear_error(&error);
  g_autofree char *nan = write_tmp("nan.csv",
                                   "arrived_at,num_prefill_tokens,num_decode_tokens\n"
                                   "nan,1,1\n",
                                   -1);
  expect_row_error(ema_trace_source_open_vidur(nan, &error), 0, EMA_TRACE_ERROR_PARSE, nan,
                   "2:1: arrived_at: not a number: 'nan'");
  g_autofree char *back = write_tmp("back.csv",
                                    "arrived_at,num_prefill_tokens,num_decode_tokens\n"
                                    "1.5,1,1\n1.499999999,1,1\n",
                                    -1);
  expect_row_error(ema_trace_source_open_vidur(back, &error), 1, EMA_TRACE_ERROR_ORDER, back,
                   "3:1: arrived_at goes backwards: '1.499999999' is earlier than line 2");
  g_autofree char *huge = write_tmp("huge.csv",
                                    "arrived_at,num_prefill_tokens,num_decode_tokens\n"
                                    "9223372037,1,1\n",
                                    -1);
  expect_row_error(ema_trace_source_open_vidur(huge, &error), 0, EMA_TRACE_ERROR_PARSE, huge,
                   "2:1: arrived_at: out of range: '9223372037'");
  /* 37#10: parsed, but past what the clock can serve after the first */
  g_autofree char *late = write_tmp("late.csv",
                                    "arrived_at,num_prefill_tokens,num_decode_tokens\n"
                                    "0,1,1\n4611686019,1,1\n",
                                    -1);
  expect_row_error(ema_trace_source_open_vidur(late, &error), 1, EMA_TRACE_ERROR_PARSE, late,
                   "3:1: arrived_at: '4611686019' is more than 4611686018 s (about 146 years) "
                   "after the first request: past the last time the simulator can serve it");
}

/* ---- BurstGPT ----------------------------------------------------------------- */

static void test_burstgpt_good(void) {
  static const Want want[] = {
      {0, 472, 18, 0, 0},
      {EMA_S(113), 417, 276, 2, 0},
      {EMA_MS(125250), 200, 50, 3, 0},
  };
  g_autofree char *path = fixture("burstgpt-good.csv");
  GError *error = NULL;
  EmaTraceSource *src = ema_trace_source_open_burstgpt(path, NULL, &error);
  g_assert_no_error(error);
  g_autoptr(GArray) records = read_all(src, &error);
  g_assert_no_error(error);
  assert_records(records, want, G_N_ELEMENTS(want));
  g_assert_cmpuint(ema_trace_source_get_skipped(src), ==, 1);
  ema_trace_source_free(src);
}

static void test_burstgpt_keep_failed(void) {
  static const Want want[] = {
      {0, 472, 18, 0, 0},
      {EMA_S(40), 1087, 0, 1, 0},
      {EMA_S(113), 417, 276, 2, 0},
      {EMA_MS(125250), 200, 50, 3, 0},
  };
  g_autofree char *path = fixture("burstgpt-good.csv");
  GError *error = NULL;
  EmaTraceBurstGptOptions options = {.keep_failed = TRUE};
  EmaTraceSource *src = ema_trace_source_open_burstgpt(path, &options, &error);
  g_assert_no_error(error);
  g_autoptr(GArray) records = read_all(src, &error);
  g_assert_no_error(error);
  assert_records(records, want, G_N_ELEMENTS(want));
  g_assert_cmpuint(ema_trace_source_get_skipped(src), ==, 0);
  ema_trace_source_free(src);
}

static void test_burstgpt_errors(void) {
  GError *error = NULL;
  g_autofree char *bad = fixture("burstgpt-malformed.csv");
  expect_row_error(ema_trace_source_open_burstgpt(bad, NULL, &error), 1, EMA_TRACE_ERROR_PARSE, bad,
                   "3:19: Request tokens must be > 0, found -3");
  g_autofree char *cut = fixture("burstgpt-truncated.csv");
  expect_row_error(ema_trace_source_open_burstgpt(cut, NULL, &error), 1, EMA_TRACE_ERROR_PARSE, cut,
                   "3:23: expected 8 fields, found 5");
  g_autofree char *empty = fixture("empty.csv");
  g_assert_null(ema_trace_source_open_burstgpt(empty, NULL, &error));
  assert_error(error, EMA_TRACE_ERROR_EMPTY, empty, "1: empty file: no header");
  g_clear_error(&error);
  g_autofree char *nohdr = write_tmp("burst-nohdr.csv", "Timestamp,Model,Request tokens\n", -1);
  g_assert_null(ema_trace_source_open_burstgpt(nohdr, NULL, &error));
  assert_error(error, EMA_TRACE_ERROR_HEADER, nohdr,
               "1: BurstGPT CSV header: missing column 'Response tokens' (needs Timestamp, "
               "Request tokens, Response tokens)");
  g_clear_error(&error);
}

/* ---- Mooncake ----------------------------------------------------------------- */

static void test_mooncake_good(void) {
  static const Want want[] = {
      {0, 6955, 52, 0, 14},
      {0, 6472, 26, 1, 13},
      {EMA_MS(27482), 512, 14, 2, 1},
      {EMA_US(30535500), 100, 1, 3, 0},
  };
  g_autofree char *path = fixture("mooncake-good.jsonl");
  GError *error = NULL;
  expect_records(ema_trace_source_open_mooncake(path, &error), want, G_N_ELEMENTS(want));
  g_autofree char *crlf = crlf_variant("mooncake-good.jsonl");
  expect_records(ema_trace_source_open_mooncake(crlf, &error), want, G_N_ELEMENTS(want));
  g_assert_no_error(error);

  /* A line of white space only is a blank line, skipped like an empty one. */
  static const Want spaced[] = {{0, 5, 6, 0, 0}, {EMA_MS(2), 7, 8, 1, 0}};
  g_autofree char *blank =
      write_tmp("moon-blank.jsonl",
                "  \n{\"timestamp\": 1, \"input_length\": 5, \"output_length\": 6}\n\t \n\n"
                "{\"timestamp\": 3, \"input_length\": 7, \"output_length\": 8}\n \n",
                -1);
  expect_records(ema_trace_source_open_mooncake(blank, &error), spaced, G_N_ELEMENTS(spaced));
  g_assert_no_error(error);

  /* An integer written as a real with no fraction is that integer, as in the CSV readers
   * ("12.0": a pandas column with a gap); so is one after a member of the same name inside
   * an object, or in an array spaced out. */
  static const Want reals[] = {{0, 12, 3, 0, 1}, {EMA_MS(1), 700, 0, 1, 2}};
  g_autofree char *real =
      write_tmp("moon-reals.jsonl",
                "{\"timestamp\": 1, \"input_length\": 12.0, \"output_length\": 3.00, "
                "\"hash_ids\": [7.0]}\n"
                "{\"meta\": {\"output_length\": 1e3}, \"timestamp\": 2.0, \"input_length\":700, "
                "\"output_length\" : -0, \"hash_ids\": [ 8 , /* a comment */ 9 ]}\n",
                -1);
  expect_records(ema_trace_source_open_mooncake(real, &error), reals, G_N_ELEMENTS(reals));
  g_assert_no_error(error);

  /* A timestamp is a decimal of ms read exactly from its text (an exponent too), to the ns
   * rounded half away from zero: 15.0000005 ms is 1 ns after 15 ms. */
  static const Want decimals[] = {{0, 5, 6, 0, 0}, {1, 7, 8, 1, 0}, {EMA_MS(1), 9, 1, 2, 0}};
  g_autofree char *decimal =
      write_tmp("moon-decimals.jsonl",
                "{\"timestamp\": 1.5e1, \"input_length\": 5, \"output_length\": 6}\n"
                "{\"timestamp\": 15.0000005, \"input_length\": 7, \"output_length\": 8}\n"
                "{\"timestamp\": 16E0, \"input_length\": 9, \"output_length\": 1}\n",
                -1);
  expect_records(ema_trace_source_open_mooncake(decimal, &error), decimals, G_N_ELEMENTS(decimals));
  g_assert_no_error(error);
}

/* The hash ids themselves, each record's valid until the next is read. */
static void test_mooncake_hash_ids(void) {
  g_autofree char *path = fixture("mooncake-good.jsonl");
  GError *error = NULL;
  g_autoptr(EmaTraceSource) src = ema_trace_source_open_mooncake(path, &error);
  EmaRequestRecord r;
  g_assert_no_error(error);
  g_assert_true(ema_trace_source_next(src, &r, &error));
  g_assert_cmpuint(r.prefix_blocks, ==, 14);
  g_assert_cmpuint(r.prefix_unit_tokens, ==, EMA_TRACE_MOONCAKE_HASH_TOKENS);
  g_assert_cmpuint(r.prefix_ids[0], ==, 46);
  g_assert_cmpuint(r.prefix_ids[11], ==, 57);
  g_assert_cmpuint(r.prefix_ids[13], ==, 2354);
  g_assert_true(ema_trace_source_next(src, &r, &error));
  g_assert_cmpuint(r.prefix_ids[12], ==, 2366);
  g_assert_true(ema_trace_source_next(src, &r, &error));
  g_assert_cmpuint(r.prefix_blocks, ==, 1);
  g_assert_cmpuint(r.prefix_ids[0], ==, 1);
  g_assert_true(ema_trace_source_next(src, &r, &error));
  g_assert_cmpuint(r.prefix_blocks, ==, 0);
  g_assert_null(r.prefix_ids);
  g_assert_false(ema_trace_source_next(src, &r, &error));
  g_assert_no_error(error);
}

/* shared_prefix: record k gets prefix k mod groups, as one unit of
 * min(tokens, prompt) tokens; lengths, times and ids pass through. */
static void test_transform_shared_prefix(void) {
  EmaRequestRecord records[4];
  EmaRequestRecord r;
  GError *error = NULL;
  guint64 ids[4];
  for (guint i = 0; i < 4; i++)
    records[i] = (EmaRequestRecord){
        .arrival = EMA_MS(i), .prompt_tokens = 600 + 300 * i, .output_tokens = 5, .id = i};
  g_autoptr(EmaTraceSource) src =
      ema_trace_shared_prefix(ema_trace_source_new_array(records, 4), 1024, 2);
  for (guint i = 0; i < 4; i++) {
    g_assert_true(ema_trace_source_next(src, &r, &error));
    g_assert_cmpint(r.arrival, ==, EMA_MS(i));
    g_assert_cmpuint(r.prompt_tokens, ==, 600 + 300 * i);
    g_assert_cmpuint(r.id, ==, i);
    g_assert_cmpuint(r.prefix_blocks, ==, 1);
    g_assert_cmpuint(r.prefix_unit_tokens, ==, MIN(1024, 600 + 300 * i));
    ids[i] = r.prefix_ids[0];
  }
  g_assert_false(ema_trace_source_next(src, &r, &error));
  g_assert_no_error(error);
  g_assert_cmpuint(ids[0], ==, ids[2]);
  g_assert_cmpuint(ids[1], ==, ids[3]);
  g_assert_cmpuint(ids[0], !=, ids[1]);
}

/* ---- the JSON scan: keys given twice ------------------------------------------ */

/* A key given twice in one object (json-glib keeps the last value, silently) is refused by the
 * scan every JSON reader runs, at the second one's opening quote. Each case ends in such a key, so
 * what comes before it is shown accepted: keys alike in objects side by side, or one inside
 * another, and strings that are values, not keys. */
static void test_json_scan_keys(void) {
  static const struct {
    const char *text;
    gsize at;
    const char *message;
  } cases[] = {
      /* at the top */
      {"{\"ttft\": 1, \"ttft\": 2}", 12, "key \"ttft\" given twice in one object"},
      /* in a nested object */
      {"{\"a\": 1, \"m\": {\"b\": 1, \"c\": 2, \"b\": 3}}", 31,
       "key \"b\" given twice in one object"},
      /* objects side by side in an array each have their own keys */
      {"[{\"a\": 1}, {\"a\": 2}, {\"b\": 1, \"b\": 2}]", 30, "key \"b\" given twice in one object"},
      /* the same key at three depths is three keys */
      {"{\"a\": {\"a\": {\"a\": 1}}, \"b\": 1, \"b\": 2}", 31,
       "key \"b\" given twice in one object"},
      /* an inner object's keys are its own, and the outer one's outlive it */
      {"{\"a\": {\"x\": 1}, \"x\": 2, \"a\": 3}", 24, "key \"a\" given twice in one object"},
      /* strings that are values (after ':', in arrays) are no keys */
      {"{\"a\": \"b\", \"b\": \"a\", \"c\": [\"c\", {\"c\": \"a\"}], \"a\": 1}", 45,
       "key \"a\" given twice in one object"},
      /* keys are compared as json-glib names members, decoded; named as written */
      {"{\"a\": 1, \"\\u0061\": 2}", 9, "key \"\\u0061\" given twice in one object"},
      {"{\"\xf0\x9f\x98\x80\": 1, \"\\ud83d\\ude00\": 2}", 12,
       "key \"\\ud83d\\ude00\" given twice in one object"},
      {"{\"a\\\"b\": 1, \"a\\\"b\": 2}", 12, "key \"a\\\"b\" given twice in one object"},
      /* over lines: the offset of the text, which the readers make LINE:COL */
      {"{\n  \"x\": [1, 2],\n  \"x\": []\n}", 19, "key \"x\" given twice in one object"},
  };
  for (guint i = 0; i < G_N_ELEMENTS(cases); i++) {
    gsize at = 0;
    g_autofree char *problem = ema_trace_json_scan(cases[i].text, strlen(cases[i].text), &at);
    g_assert_cmpstr(problem, ==, cases[i].message);
    g_assert_cmpuint(at, ==, cases[i].at);
  }

  /* An object of many keys (kept in a hash set past the first few), twice side by side: the
   * second one's keys are not the first one's, and its own repeat is found. */
  g_autoptr(GString) many = g_string_new("[");
  for (guint copy = 0; copy < 2; copy++) {
    g_string_append(many, copy == 0 ? "{" : ", {");
    for (guint k = 0; k < 100; k++)
      g_string_append_printf(many, "%s\"k%u\": %u", k == 0 ? "" : ", ", k, k);
  }
  gsize repeat_at = many->len + 2;
  g_string_append(many, ", \"k57\": 0}]");
  gsize at = 0;
  g_autofree char *problem = ema_trace_json_scan(many->str, many->len, &at);
  g_assert_cmpstr(problem, ==, "key \"k57\" given twice in one object");
  g_assert_cmpuint(at, ==, repeat_at);

  /* A long key is named by its first 40 bytes (ema_file_quote_length, the cut of all quoted
   * input). */
  g_autofree char *long_key = g_strnfill(1000, 'k');
  g_autofree char *twice = g_strdup_printf("{\"%s\": 1, \"%s\": 2}", long_key, long_key);
  g_autofree char *long_problem = ema_trace_json_scan(twice, strlen(twice), &at);
  g_assert_cmpstr(long_problem, ==,
                  "key \"kkkkkkkkkkkkkkkkkkkkkkkkkkkkkkkkkkkkkkkk...\" given twice in one object");
  g_assert_cmpuint(at, ==, 1008);
}

static void test_mooncake_errors(void) {
  GError *error = NULL;
  g_autofree char *bad = fixture("mooncake-malformed.jsonl");
  expect_row_error(ema_trace_source_open_mooncake(bad, &error), 1, EMA_TRACE_ERROR_PARSE, bad,
                   "2:19: input_length: not an integer: '\"many\"'");

  /* The truncated line is invalid JSON, at the line and json-glib's column (not json-glib's
   * "<data>:1:COL" of the text it was given); json-glib words the rest. */
  g_autofree char *cut = fixture("mooncake-truncated.jsonl");
  EmaTraceSource *src = ema_trace_source_open_mooncake(cut, &error);
  g_assert_no_error(error);
  g_autoptr(GArray) records = read_all(src, &error);
  g_assert_cmpuint(records->len, ==, 1);
  g_assert_error(error, EMA_TRACE_ERROR, EMA_TRACE_ERROR_PARSE);
  g_autofree char *prefix = g_strconcat(cut, ":2:38: invalid JSON: Parse error: ", NULL);
  g_assert_true(g_str_has_prefix(error->message, prefix));
  g_assert_null(strstr(error->message, "<data>"));
  g_clear_error(&error);
  ema_trace_source_free(src);

  g_autofree char *empty = fixture("empty.csv");
  g_assert_null(ema_trace_source_open_mooncake(empty, &error));
  assert_error(error, EMA_TRACE_ERROR_EMPTY, empty, "1: empty file: no records");
  g_clear_error(&error);

  static const struct {
    const char *line;
    EmaTraceError code;
    guint column; /* of the key whose value is at fault; 0: none (the line's whole) */
    const char *message;
  } cases[] = {
      {"[1, 2]", EMA_TRACE_ERROR_PARSE, 0, "not a JSON object"},
      {"{\"input_length\": 1, \"output_length\": 1}", EMA_TRACE_ERROR_PARSE, 0,
       "missing key 'timestamp'"},
      /* the timestamp is read from its text as the counts are, as the CSV readers read a decimal
       * (json-glib took 0x10 for 16 ms, which followed 10 ms: no error) */
      {"{\"timestamp\": \"x\", \"input_length\": 1, \"output_length\": 1}", EMA_TRACE_ERROR_PARSE,
       2, "timestamp: not a number: '\"x\"'"},
      {"{\"timestamp\": 0x10, \"input_length\": 1, \"output_length\": 1}", EMA_TRACE_ERROR_PARSE, 2,
       "timestamp: not a number: '0x10'"},
      {"{\"timestamp\": 0X1F, \"input_length\": 1, \"output_length\": 1}", EMA_TRACE_ERROR_PARSE, 2,
       "timestamp: not a number: '0X1F'"},
      {"{\"input_length\": 1, \"timestamp\": 1e400, \"output_length\": 1}", EMA_TRACE_ERROR_PARSE,
       21, "timestamp: out of range: '1e400'"},
      {"{\"timestamp\": 5, \"output_length\": 1}", EMA_TRACE_ERROR_PARSE, 0,
       "missing key 'input_length'"},
      {"{\"timestamp\": 5, \"input_length\": 0, \"output_length\": 1}", EMA_TRACE_ERROR_PARSE, 18,
       "input_length must be > 0, found 0"},
      {"{\"timestamp\": 5, \"input_length\": 1, \"output_length\": -2}", EMA_TRACE_ERROR_PARSE, 37,
       "output_length must be >= 0, found -2"},
      {"{\"timestamp\": 5, \"input_length\": 1.5, \"output_length\": 1}", EMA_TRACE_ERROR_PARSE, 18,
       "input_length: not an integer: '1.5'"},
      /* an integer is read from its text as the CSV readers read one, not from json-glib's
       * value (which takes 1e3 for 1000 and 0x10 for 16), in the CSV readers' words */
      {"{\"timestamp\": 5, \"input_length\": 1e3, \"output_length\": 1}", EMA_TRACE_ERROR_PARSE, 18,
       "input_length: not an integer: '1e3'"},
      {"{\"timestamp\": 5, \"input_length\": 7, \"output_length\": 2E1}", EMA_TRACE_ERROR_PARSE, 37,
       "output_length: not an integer: '2E1'"},
      {"{\"timestamp\": 5, \"input_length\": 0x10, \"output_length\": 1}", EMA_TRACE_ERROR_PARSE,
       18, "input_length: not an integer: '0x10'"},
      {"{\"timestamp\": 5, \"input_length\": \"12\", \"output_length\": 1}", EMA_TRACE_ERROR_PARSE,
       18, "input_length: not an integer: '\"12\"'"},
      {"{\"timestamp\": 5, \"input_length\": 99999999999999999999.0, \"output_length\": 1}",
       EMA_TRACE_ERROR_PARSE, 18, "input_length: out of range: '99999999999999999999.0'"},
      /* the record's own member, not one of the same name in an object before it, nor one
       * behind a comment; a name spelled with an escape is the name */
      {"{\"m\": {\"input_length\": 5}, \"timestamp\": 5, \"input_length\": 1e3, "
       "\"output_length\": 1}",
       EMA_TRACE_ERROR_PARSE, 44, "input_length: not an integer: '1e3'"},
      {"{\"timestamp\": 5, /* \"input_length\": 5, */ \"input_length\": 1e3, \"output_length\": 1}",
       EMA_TRACE_ERROR_PARSE, 43, "input_length: not an integer: '1e3'"},
      {"{\"timestamp\": 5, \"input\\u005flength\": 1e3, \"output_length\": 1}",
       EMA_TRACE_ERROR_PARSE, 18, "input_length: not an integer: '1e3'"},
      /* names in single quotes, which json-glib reads too */
      {"{'timestamp': 5, 'input_length': 1e3, 'output_length': 1}", EMA_TRACE_ERROR_PARSE, 18,
       "input_length: not an integer: '1e3'"},
      {"{\"timestamp\": 5, \"input_length\": 1, \"output_length\": 1, \"hash_ids\": 3}",
       EMA_TRACE_ERROR_PARSE, 57, "'hash_ids' is not an array"},
      {"{\"timestamp\": 5, \"input_length\": 1, \"output_length\": 1, \"hash_ids\": [4, \"a\"]}",
       EMA_TRACE_ERROR_PARSE, 57, "hash_ids item 1: not an integer: '\"a\"'"},
      {"{\"timestamp\": 5, \"input_length\": 600, \"output_length\": 1, \"hash_ids\": [4, 1e3]}",
       EMA_TRACE_ERROR_PARSE, 59, "hash_ids item 1: not an integer: '1e3'"},
      {"{\"timestamp\": 5, \"input_length\": 1, \"output_length\": 1, \"hash_ids\": [2.5]}",
       EMA_TRACE_ERROR_PARSE, 57, "hash_ids item 0: not an integer: '2.5'"},
      {"{\"timestamp\": 5, \"input_length\": 1, \"output_length\": 1, \"hash_ids\": [-1]}",
       EMA_TRACE_ERROR_PARSE, 57, "hash_ids item 0 must be >= 0, found -1"},
      /* more ids than the prompt's 512-token blocks: ids of smaller blocks (16-token ones
       * here), which would be read as 512 tokens each */
      {"{\"timestamp\": 5, \"input_length\": 513, \"output_length\": 1, \"hash_ids\": [1, 2, 3]}",
       EMA_TRACE_ERROR_PARSE, 59,
       "'hash_ids' has 3 ids, but input_length 513 fills 2 blocks of 512 tokens (ids of another "
       "block size?)"},
      {"{\"timestamp\": 9, \"input_length\": 1, \"output_length\": 1}", EMA_TRACE_ERROR_ORDER, 2,
       "timestamp goes backwards: 0.009000000 s is earlier than line 1"},
      /* a key given twice (json-glib keeps the last, silently), at its second name, in the
       * record or in an object inside it; the same name inside another key's value, or inside a
       * string, is no second one */
      {"{\"timestamp\": 15, \"input_length\": 1, \"output_length\": 1, \"output_length\": 500}",
       EMA_TRACE_ERROR_PARSE, 58, "key \"output_length\" given twice in one object"},
      {"{\"timestamp\": 15, \"hash_ids\": [1], \"input_length\": 1, \"output_length\": 1, "
       "\"hash_ids\": []}",
       EMA_TRACE_ERROR_PARSE, 75, "key \"hash_ids\" given twice in one object"},
      {"{\"timestamp\": 15, \"input_length\": 1, \"output_length\": 1, \"meta\": {\"k\": 1, "
       "\"k\": 2}}",
       EMA_TRACE_ERROR_PARSE, 75, "key \"k\" given twice in one object"},
      {"{\"timestamp\": 15, \"input_length\": 1, \"output_length\": 1, \"m\": {\"timestamp\": 1}, "
       "\"n\": \"\\\"timestamp\\\": 2\", \"hash_ids\": 3}",
       EMA_TRACE_ERROR_PARSE, 106, "'hash_ids' is not an array"},
      /* two records run together (a lost newline): json-glib would keep the first and drop
       * the second without a word */
      {"{\"timestamp\": 15, \"input_length\": 1, \"output_length\": 1}{\"timestamp\": 16, "
       "\"input_length\": 2, \"output_length\": 2}",
       EMA_TRACE_ERROR_PARSE, 57,
       "text after the end of the JSON value (two values run together?)"},
      {"{\"x\": 1} {\"timestamp\": 15, \"input_length\": 1, \"output_length\": 1}",
       EMA_TRACE_ERROR_PARSE, 10,
       "text after the end of the JSON value (two values run together?)"},
      /* what the scan refuses before json-glib, at its column */
      {"{\"timestamp\": 15, \"input_length\": 99999999999999999999, \"output_length\": 1}",
       EMA_TRACE_ERROR_PARSE, 35, "integer out of range (beyond 64 bits)"},
      {"{\"timestamp\": 15, \"x\": "
       "[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]}",
       EMA_TRACE_ERROR_PARSE, 55, "JSON nested deeper than 32 levels"},
      /* bytes that are not UTF-8, in a string or not, at their column (json-glib said only
       * "JSON data must be UTF-8 encoded"); UTF-8 text is text */
      {"{\"timestamp\": 15, \"input_length\": 1, \"output_length\": 1, \"k\xff\": 1}",
       EMA_TRACE_ERROR_PARSE, 60, "not UTF-8 text"},
      {"{\"timestamp\": 15, \"input_length\": 1, \"output_length\": 1}\xc3", EMA_TRACE_ERROR_PARSE,
       57, "text after the end of the JSON value (two values run together?)"},
      {"{\"timestamp\": 15, \"input_length\": 0, \"note\": \"caf\xc3\xa9 \xe4\xbd\xa0\", "
       "\"output_length\": 1}",
       EMA_TRACE_ERROR_PARSE, 19, "input_length must be > 0, found 0"},
      /* json-glib's own errors, at its column of the line */
      {"{\"timestamp\": 15, \"input_length\": 1 \"output_length\": 1}", EMA_TRACE_ERROR_PARSE, 35,
       "invalid JSON: Parse error: unexpected number `1', expected character `,'"},
  };
  for (guint i = 0; i < G_N_ELEMENTS(cases); i++) {
    g_autofree char *content = g_strdup_printf(
        "{\"timestamp\": 10, \"input_length\": 5, \"output_length\": 6}\n%s\n", cases[i].line);
    g_autofree char *name = g_strdup_printf("moon-%u.jsonl", i);
    g_autofree char *path = write_tmp(name, content, -1);
    g_autofree char *suffix = cases[i].column
                                  ? g_strdup_printf("2:%u: %s", cases[i].column, cases[i].message)
                                  : g_strconcat("2: ", cases[i].message, NULL);
    expect_row_error(ema_trace_source_open_mooncake(path, &error), 1, cases[i].code, path, suffix);
  }
  /* A bad first line fails the open. */
  g_autofree char *first = write_tmp("moon-first.jsonl", "garbage\n", -1);
  g_assert_null(ema_trace_source_open_mooncake(first, &error));
  g_assert_error(error, EMA_TRACE_ERROR, EMA_TRACE_ERROR_PARSE);
  g_clear_error(&error);
}

/* ---- length-only files -------------------------------------------------------- */

static void test_lengths_file(void) {
  GError *error = NULL;
  g_autofree char *path = fixture("lengths-good.csv");
  static const guint32 prompt[] = {3772, 2015, 3858}, output[] = {54, 156, 133};

  /* Stops at the end. */
  EmaTraceArrivals *arrivals = ema_trace_arrivals_new_poisson(2.0, 7, &error);
  g_autoptr(EmaTraceSource) once = ema_trace_source_open_lengths(path, arrivals, FALSE, &error);
  g_assert_no_error(error);
  g_autoptr(GArray) a = read_all(once, &error);
  g_assert_no_error(error);
  g_assert_cmpuint(a->len, ==, 3);

  /* Cycles: the same arrivals (same seed), the lengths again and again. */
  arrivals = ema_trace_arrivals_new_poisson(2.0, 7, &error);
  g_autoptr(EmaTraceSource) cyc =
      ema_trace_limit(ema_trace_source_open_lengths(path, arrivals, TRUE, &error), 8);
  g_assert_no_error(error);
  g_autoptr(GArray) b = read_all(cyc, &error);
  g_assert_no_error(error);
  g_assert_cmpuint(b->len, ==, 8);
  for (guint i = 0; i < b->len; i++) {
    const EmaRequestRecord *r = &g_array_index(b, EmaRequestRecord, i);
    g_assert_cmpuint(r->prompt_tokens, ==, prompt[i % 3]);
    g_assert_cmpuint(r->output_tokens, ==, output[i % 3]);
    g_assert_cmpuint(r->id, ==, i);
    g_assert_cmpint(r->arrival, >, 0);
    if (i < 3)
      g_assert_cmpint(r->arrival, ==, g_array_index(a, EmaRequestRecord, i).arrival);
    else
      g_assert_cmpint(r->arrival, >=, g_array_index(b, EmaRequestRecord, i - 1).arrival);
  }

  /* Header only: nothing once, an error when cycling. */
  g_autofree char *hdr = fixture("lengths-header-only.csv");
  g_autoptr(EmaTraceSource) none = ema_trace_source_open_lengths(
      hdr, ema_trace_arrivals_new_poisson(1.0, 1, NULL), FALSE, &error);
  g_assert_no_error(error);
  g_autoptr(GArray) c = read_all(none, &error);
  g_assert_no_error(error);
  g_assert_cmpuint(c->len, ==, 0);
  expect_row_error(ema_trace_source_open_lengths(hdr, ema_trace_arrivals_new_poisson(1.0, 1, NULL),
                                                 TRUE, &error),
                   0, EMA_TRACE_ERROR_EMPTY, hdr, "1: no data rows to cycle through");

  g_autofree char *empty = fixture("empty.csv");
  g_assert_null(ema_trace_source_open_lengths(empty, ema_trace_arrivals_new_poisson(1.0, 1, NULL),
                                              FALSE, &error));
  assert_error(error, EMA_TRACE_ERROR_EMPTY, empty, "1: empty file: no header");
  g_clear_error(&error);

  g_autofree char *bad =
      write_tmp("len-bad.csv", "num_prefill_tokens,num_decode_tokens\n10,5\n0,5\n", -1);
  expect_row_error(ema_trace_source_open_lengths(bad, ema_trace_arrivals_new_poisson(1.0, 1, NULL),
                                                 FALSE, &error),
                   1, EMA_TRACE_ERROR_PARSE, bad, "3:1: num_prefill_tokens must be > 0, found 0");
  g_autofree char *cut =
      write_tmp("len-cut.csv", "num_prefill_tokens,num_decode_tokens\n10,5\n7", -1);
  expect_row_error(ema_trace_source_open_lengths(cut, ema_trace_arrivals_new_poisson(1.0, 1, NULL),
                                                 FALSE, &error),
                   1, EMA_TRACE_ERROR_PARSE, cut, "3:2: expected 2 fields, found 1");
}

/* ---- vLLM benchmark results ---------------------------------------------------- */

static EmaTraceSource *open_vllm(const char *path, gboolean cycle, GError **error) {
  return ema_trace_source_open_vllm_bench(path, ema_trace_arrivals_new_poisson(2.0, 7, NULL), cycle,
                                          error);
}

/* a result as benchmark_serving.py writes it (one line, json.dump) is told
 * from Mooncake's JSON lines; its load and measured figures are read */
static void test_vllm_bench_sniff(void) {
  GError *error = NULL;
  g_autofree char *one_line = fixture("vllm-save-result.json");
  g_autofree char *indented = fixture("vllm-bench.json");
  g_autofree char *mooncake = fixture("mooncake-good.jsonl");
  EmaTraceFormat format = EMA_TRACE_FORMAT_AUTO;
  EmaTraceVllmBench bench;
  g_assert_true(ema_trace_format_sniff(one_line, &format, &error));
  g_assert_cmpint(format, ==, EMA_TRACE_FORMAT_VLLM_BENCH);
  g_assert_true(ema_trace_format_sniff(indented, &format, &error));
  g_assert_cmpint(format, ==, EMA_TRACE_FORMAT_VLLM_BENCH);
  g_assert_true(ema_trace_format_sniff(mooncake, &format, &error));
  g_assert_cmpint(format, ==, EMA_TRACE_FORMAT_MOONCAKE);
  /* after a UTF-8 byte-order mark too (it was taken for Mooncake's JSON lines) */
  g_autofree char *bom =
      write_tmp("vllm-bom.json",
                "\xef\xbb\xbf{\n  \"request_rate\": \"inf\",\n  \"input_lens\": [5],\n"
                "  \"output_lens\": [3]\n}\n",
                -1);
  g_assert_true(ema_trace_format_sniff(bom, &format, &error));
  g_assert_cmpint(format, ==, EMA_TRACE_FORMAT_VLLM_BENCH);
  g_assert_true(ema_trace_vllm_bench_read(bom, &bench, &error));
  g_assert_true(isinf(bench.request_rate));
  /* opened by path alone it asks for arrivals, not for Mooncake's timestamp */
  g_assert_null(ema_trace_source_open(EMA_TRACE_FORMAT_AUTO, one_line, &error));
  g_assert_nonnull(strstr(error->message, "vllm-bench trace holds no arrival times"));
  g_clear_error(&error);

  g_assert_true(ema_trace_vllm_bench_read(one_line, &bench, &error));
  g_assert_cmpfloat(bench.request_rate, ==, 4.0);
  g_assert_cmpfloat(bench.burstiness, ==, 0.5);
  g_assert_cmpuint(bench.max_concurrency, ==, 0);
  g_assert_cmpstr(ema_trace_vllm_metric_names[0], ==, "mean_ttft_ms");
  g_assert_cmpfloat(bench.measured[0], ==, 31.2);
  g_assert_true(isnan(bench.measured[9])); /* mean_e2el_ms: not in the file */
  /* "inf" (vLLM's default) and defaults for absent keys */
  g_assert_true(ema_trace_vllm_bench_read(indented, &bench, &error));
  g_assert_true(isinf(bench.request_rate));
  g_assert_cmpfloat(bench.burstiness, ==, 1.0);
  g_autofree char *bad = write_tmp("vllm-rate.json", "{\"request_rate\": \"fast\"}", -1);
  g_assert_false(ema_trace_vllm_bench_read(bad, &bench, &error));
  g_assert_nonnull(strstr(error->message, "'request_rate' is not a number or \"inf\""));
  g_clear_error(&error);
  /* the load read twice: which one ran is not the file's to leave open */
  g_autofree char *twice =
      write_tmp("vllm-rate-twice.json", "{\"request_rate\": 4, \"request_rate\": \"inf\"}", -1);
  g_assert_false(ema_trace_vllm_bench_read(twice, &bench, &error));
  assert_error(error, EMA_TRACE_ERROR_PARSE, twice,
               "1:21: key \"request_rate\" given twice in one object");
  g_clear_error(&error);
}

/* The load and the figures are read from their text, as the lengths are, not from json-glib's
 * doubles (which took 0x10 for 16, 1e3 for a count and 1e400 for "inf", all at once), each in
 * its range, the error at the value's line:col quoting it; what vLLM writes (Python's floats,
 * 1e-05 among them, "inf", null) is read. */
static void test_vllm_bench_numbers(void) {
  GError *error = NULL;
  EmaTraceVllmBench bench;
  g_autofree char *good = write_tmp(
      "vllm-num-good.json",
      "{\"request_rate\": 2.5e1, \"burstiness\": 0.25, \"max_concurrency\": 8.0, "
      "\"completed\": 16, \"p99_itl_ms\": 1e-05, \"mean_ttft_ms\": 0, \"median_ttft_ms\": "
      "null, \"input_lens\": [1], \"output_lens\": [1]}",
      -1);
  g_assert_true(ema_trace_vllm_bench_read(good, &bench, &error));
  g_assert_no_error(error);
  g_assert_cmpfloat(bench.request_rate, ==, 25.0);
  g_assert_cmpfloat(bench.burstiness, ==, 0.25);
  g_assert_cmpuint(bench.max_concurrency, ==, 8);
  g_assert_cmpfloat(bench.measured[11], ==, 16.0); /* completed */
  g_assert_cmpfloat(bench.measured[8], ==, 1e-05); /* p99_itl_ms */
  g_assert_cmpfloat(bench.measured[0], ==, 0.0);
  g_assert_true(isnan(bench.measured[1])); /* null: as absent */

  static const struct {
    const char *text, *message;
  } cases[] = {
      /* not decimal: json-glib's 16, infinity, 1000 for a count */
      {"{\"request_rate\": 0x10}", "1:18: 'request_rate': not a finite decimal number: '0x10'"},
      {"{\"request_rate\": 1e400}", "1:18: 'request_rate': not a finite decimal number: '1e400'"},
      {"{\"burstiness\": -0x1}", "1:16: 'burstiness': not a finite decimal number: '-0x1'"},
      {"{\"mean_ttft_ms\": 0x20}", "1:18: 'mean_ttft_ms': not a finite decimal number: '0x20'"},
      {"{\n  \"max_concurrency\": 1e3\n}", "2:22: 'max_concurrency': not an integer: '1e3'"},
      {"{\"completed\": 2.5}", "1:15: 'completed': not an integer: '2.5'"},
      /* out of range: what the trace's own arrivals refuse, a negative figure */
      {"{\"request_rate\": 0}",
       "1:18: 'request_rate' must be in [1e-09, 1e+09] or \"inf\", found '0'"},
      {"{\"request_rate\": 1e-12}",
       "1:18: 'request_rate' must be in [1e-09, 1e+09] or \"inf\", found '1e-12'"},
      {"{\"burstiness\": 1e7}", "1:16: 'burstiness' must be in [1e-06, 1e+06], found '1e7'"},
      {"{\"max_concurrency\": -1}", "1:21: 'max_concurrency' must be in [0, 1e+07], found '-1'"},
      {"{\"p99_e2el_ms\": -3.5}", "1:17: 'p99_e2el_ms' must be >= 0, found '-3.5'"},
      /* not a number: located, quoted */
      {"{\"request_rate\": \"fast\"}",
       "1:18: 'request_rate' is not a number or \"inf\": '\"fast\"'"},
      {"{\"burstiness\": \"inf\"}", "1:16: 'burstiness' is not a number: '\"inf\"'"},
      {"{\"request_rate\": true}", "1:18: 'request_rate' is not a number or \"inf\": 'true'"},
      {"{\"mean_tpot_ms\": [1]}", "1:18: 'mean_tpot_ms' is not a number: '[1]'"},
  };
  for (guint i = 0; i < G_N_ELEMENTS(cases); i++) {
    g_autofree char *name = g_strdup_printf("vllm-num-%u.json", i);
    g_autofree char *path = write_tmp(name, cases[i].text, -1);
    g_assert_false(ema_trace_vllm_bench_read(path, &bench, &error));
    assert_error(error, EMA_TRACE_ERROR_PARSE, path, cases[i].message);
    g_clear_error(&error);
  }

  /* a long value is quoted by its first 40 bytes (json-glib read this one as infinity) */
  g_autofree char *digits = g_strnfill(100, '7');
  g_autofree char *long_text = g_strdup_printf("{\"burstiness\": 1.%se400}", digits);
  g_autofree char *long_path = write_tmp("vllm-num-long.json", long_text, -1);
  g_assert_false(ema_trace_vllm_bench_read(long_path, &bench, &error));
  assert_error(error, EMA_TRACE_ERROR_PARSE, long_path,
               "1:16: 'burstiness': not a finite decimal number: "
               "'1.77777777777777777777777777777777777777...'");
  g_clear_error(&error);
}

static void test_vllm_bench_good(void) {
  GError *error = NULL;
  g_autofree char *path = fixture("vllm-bench.json");
  /* Request 1 failed ("Bad Request"): skipped, its 0 output tokens are not
   * what it asked for. */
  static const guint32 prompt[] = {12, 7, 41}, output[] = {64, 5, 128};

  g_autoptr(EmaTraceSource) once = open_vllm(path, FALSE, &error);
  g_assert_no_error(error);
  g_autoptr(GArray) a = read_all(once, &error);
  g_assert_no_error(error);
  g_assert_cmpuint(a->len, ==, 3);
  g_assert_cmpuint(ema_trace_source_get_skipped(once), ==, 1);

  /* The arrivals are the Poisson process's, the same as over a lengths CSV
   * with the same seed; cycling repeats the lengths. */
  g_autofree char *csv =
      write_tmp("vllm-same.csv", "num_prefill_tokens,num_decode_tokens\n12,64\n7,5\n41,128\n", -1);
  g_autoptr(EmaTraceSource) ref = ema_trace_source_open_lengths(
      csv, ema_trace_arrivals_new_poisson(2.0, 7, NULL), TRUE, &error);
  g_autoptr(EmaTraceSource) cyc = ema_trace_limit(open_vllm(path, TRUE, &error), 7);
  g_assert_no_error(error);
  for (guint i = 0; i < 7; i++) {
    EmaRequestRecord r, want;
    g_assert_true(ema_trace_source_next(cyc, &r, &error));
    g_assert_true(ema_trace_source_next(ref, &want, &error));
    g_assert_cmpuint(r.id, ==, i);
    g_assert_cmpuint(r.prompt_tokens, ==, prompt[i % 3]);
    g_assert_cmpuint(r.output_tokens, ==, output[i % 3]);
    g_assert_cmpint(r.arrival, ==, want.arrival);
    g_assert_cmpuint(r.prefix_blocks, ==, 0);
  }
  EmaRequestRecord r;
  g_assert_false(ema_trace_source_next(cyc, &r, &error));
  g_assert_no_error(error);

  /* Without "errors" every request is kept; null entries are successes. */
  g_autofree char *plain = write_tmp(
      "vllm-plain.json",
      "{\"input_lens\": [3, 4.0], \"output_lens\": [0, 9], \"errors\": [null, \"\"]}", -1);
  g_autoptr(EmaTraceSource) p = open_vllm(plain, FALSE, &error);
  g_assert_no_error(error);
  g_autoptr(GArray) b = read_all(p, &error);
  g_assert_cmpuint(b->len, ==, 2);
  g_assert_cmpuint(g_array_index(b, EmaRequestRecord, 1).prompt_tokens, ==, 4);
  g_assert_cmpuint(g_array_index(b, EmaRequestRecord, 0).output_tokens, ==, 0);
}

static void test_vllm_bench_errors(void) {
  GError *error = NULL;

  g_autofree char *share = fixture("sharegpt-mini.json");
  g_assert_null(open_vllm(share, FALSE, &error));
  assert_error(error, EMA_TRACE_ERROR_INVALID, share,
               " a ShareGPT dataset holds text, not token counts, and EMA has no tokenizer: use "
               "its lengths tokenized for the model, a length-only CSV (format: lengths), e.g. "
               "../shared/traces/lengths/sharegpt-llama.csv or sharegpt-opt.csv");
  g_clear_error(&error);

  /* Alpaca's dataset is named as such, with its own lengths (it was called ShareGPT's when
   * sniffed, and "not a JSON object" when read as a vLLM result), by every way in. */
  static const char alpaca_advice[] =
      "an Alpaca dataset holds text, not token counts, and EMA has no tokenizer: use its lengths "
      "tokenized for the model, a length-only CSV (format: lengths), e.g. "
      "../shared/traces/lengths/alpaca-llama.csv or alpaca-opt.csv";
  g_autofree char *alpaca = fixture("alpaca-mini.json");
  g_autofree char *as_source = g_strconcat(" ", alpaca_advice, NULL);
  g_autofree char *as_sniffed = g_strdup_printf("1: a JSON array, not a trace (%s)", alpaca_advice);
  EmaTraceVllmBench bench;
  EmaTraceFormat format;
  g_assert_null(open_vllm(alpaca, FALSE, &error));
  assert_error(error, EMA_TRACE_ERROR_INVALID, alpaca, as_source);
  g_clear_error(&error);
  g_assert_false(ema_trace_vllm_bench_read(alpaca, &bench, &error));
  assert_error(error, EMA_TRACE_ERROR_INVALID, alpaca, as_source);
  g_clear_error(&error);
  g_assert_false(ema_trace_format_sniff(alpaca, &format, &error));
  assert_error(error, EMA_TRACE_ERROR_HEADER, alpaca, as_sniffed);
  g_clear_error(&error);
  g_autofree char *share_sniffed =
      g_strconcat(share, ":1: a JSON array, not a trace (a ShareGPT dataset holds text", NULL);
  g_assert_false(ema_trace_format_sniff(share, &format, &error));
  g_assert_true(g_str_has_prefix(error->message, share_sniffed));
  g_clear_error(&error);

  static const struct {
    const char *text;
    EmaTraceError code;
    const char *message;
  } cases[] = {
      {"", EMA_TRACE_ERROR_EMPTY, " empty file: no JSON value"},
      {"[1, 2]", EMA_TRACE_ERROR_PARSE,
       " not a JSON object (a vLLM benchmark result: benchmark_serving.py --save-result)"},
      {"{\"output_lens\": [1]}", EMA_TRACE_ERROR_PARSE,
       " missing key 'input_lens' (not a vLLM benchmark result: benchmark_serving.py "
       "--save-result)"},
      {"{\"input_lens\": 3, \"output_lens\": [1]}", EMA_TRACE_ERROR_PARSE,
       " 'input_lens' is not an array"},
      {"{\"input_lens\": [1, 2], \"output_lens\": [1]}", EMA_TRACE_ERROR_PARSE,
       " input_lens has 2 entries but output_lens 1"},
      {"{\"input_lens\": [1], \"output_lens\": [1], \"errors\": []}", EMA_TRACE_ERROR_PARSE,
       " input_lens has 1 entries but errors 0"},
      {"{\"input_lens\": [1], \"output_lens\": [1], \"errors\": [3]}", EMA_TRACE_ERROR_PARSE,
       " errors[0] is not a string"},
      /* each length read from its text as Mooncake's counts and the CSV readers' are, in their
       * words, at the item's line:col (json-glib took 1e3 for 1000 and 0x10 for 16) */
      {"{\"input_lens\": [5, 0], \"output_lens\": [1, 1]}", EMA_TRACE_ERROR_PARSE,
       "1:20: input_lens item 1 must be > 0, found 0"},
      {"{\"input_lens\": [5], \"output_lens\": [4294967296]}", EMA_TRACE_ERROR_PARSE,
       "1:37: output_lens item 0 must be <= 4294967295, found 4294967296"},
      {"{\"input_lens\": [5], \"output_lens\": [-2]}", EMA_TRACE_ERROR_PARSE,
       "1:37: output_lens item 0 must be >= 0, found -2"},
      {"{\"input_lens\": [\"5\"], \"output_lens\": [1]}", EMA_TRACE_ERROR_PARSE,
       "1:17: input_lens item 0: not an integer: '\"5\"'"},
      {"{\"input_lens\": [1.5], \"output_lens\": [1]}", EMA_TRACE_ERROR_PARSE,
       "1:17: input_lens item 0: not an integer: '1.5'"},
      {"{\"input_lens\": [5, 1e3], \"output_lens\": [1, 1]}", EMA_TRACE_ERROR_PARSE,
       "1:20: input_lens item 1: not an integer: '1e3'"},
      {"{\"input_lens\": [0x10], \"output_lens\": [1]}", EMA_TRACE_ERROR_PARSE,
       "1:17: input_lens item 0: not an integer: '0x10'"},
      {"{\"input_lens\": [1, 2], \"output_lens\": [1e3, 0x10]}", EMA_TRACE_ERROR_PARSE,
       "1:40: output_lens item 0: not an integer: '1e3'"},
      {"{\"input_lens\": [[1]], \"output_lens\": [1]}", EMA_TRACE_ERROR_PARSE,
       "1:17: input_lens item 0: not an integer: '[1]'"},
      {"{\n  \"input_lens\": [\n    7,\n    -0x10\n  ],\n  \"output_lens\": [1, 1]\n}",
       EMA_TRACE_ERROR_PARSE, "4:5: input_lens item 1: not an integer: '-0x10'"},
      /* the array at the top, not a member of the same name inside another, nor one behind a
       * comment; a name spelled with an escape is the name */
      {"{\"m\": {\"input_lens\": [1]}, \"input_lens\": [1e3], /* \"input_lens\": [2] */ "
       "\"output_lens\": [1]}",
       EMA_TRACE_ERROR_PARSE, "1:43: input_lens item 0: not an integer: '1e3'"},
      {"{\"input\\u005flens\": [0x1], \"output_lens\": [1]}", EMA_TRACE_ERROR_PARSE,
       "1:22: input_lens item 0: not an integer: '0x1'"},
      {"{\"input_lens\": [], \"output_lens\": []}", EMA_TRACE_ERROR_EMPTY,
       " no requests (input_lens is empty)"},
      {"{\"input_lens\": [1], \"output_lens\": [0], \"errors\": [\"x\"]}", EMA_TRACE_ERROR_EMPTY,
       " no requests (input_lens is empty or every request failed)"},
      {"{\n  \"input_lens\": [1],\n  \"x\": 99999999999999999999}", EMA_TRACE_ERROR_PARSE,
       "3:8: integer out of range (beyond 64 bits)"},
      /* a key twice, which json-glib would settle by keeping the last: at the top, in a
       * nested object (after an object of its own keys, each once), spelled with an escape */
      {"{\"input_lens\": [1], \"output_lens\": [1], \"input_lens\": [2]}", EMA_TRACE_ERROR_PARSE,
       "1:41: key \"input_lens\" given twice in one object"},
      {"{\"input_lens\": [1], \"output_lens\": [1], \"x\": [{\"a\": {\"a\": 1}, \"b\": 2, "
       "\"b\": 3}]}",
       EMA_TRACE_ERROR_PARSE, "1:71: key \"b\" given twice in one object"},
      {"{\"input_lens\": [1], \"output_lens\": [1], \"outp\\u0075t_lens\": [2]}",
       EMA_TRACE_ERROR_PARSE, "1:41: key \"outp\\u0075t_lens\" given twice in one object"},
      /* a second object after the first, which json-glib would drop without a word */
      {"{\"input_lens\": [1], \"output_lens\": [1]}\n {\"input_lens\": [2], \"output_lens\": "
       "[2]}\n",
       EMA_TRACE_ERROR_PARSE,
       "2:2: text after the end of the JSON value (two values run together?)"},
  };
  for (guint i = 0; i < G_N_ELEMENTS(cases); i++) {
    g_autofree char *name = g_strdup_printf("vllm-%u.json", i);
    g_autofree char *path = write_tmp(name, cases[i].text, -1);
    g_assert_null(open_vllm(path, FALSE, &error));
    assert_error(error, cases[i].code, path, cases[i].message);
    g_clear_error(&error);
  }

  /* A NUL byte, in a string too, is binary data, at its line and column. */
  static const char nul[] = "{\"input_lens\": [1],\n \"output_lens\": [1], \"x\": \"a\0b\"}";
  g_autofree char *nul_path = write_tmp("vllm-nul.json", nul, sizeof nul - 1);
  g_assert_null(open_vllm(nul_path, FALSE, &error));
  assert_error(error, EMA_TRACE_ERROR_PARSE, nul_path, "2:29: binary data (NUL byte)");
  g_clear_error(&error);

  /* A long length item is quoted by its first 40 bytes, as every quoted input is. */
  g_autofree char *long_item = g_strnfill(100000, 'x');
  g_autofree char *long_text =
      g_strdup_printf("{\"input_lens\": [\"%s\"], \"output_lens\": [1]}", long_item);
  g_autofree char *long_path = write_tmp("vllm-long-item.json", long_text, -1);
  g_assert_null(open_vllm(long_path, FALSE, &error));
  assert_error(error, EMA_TRACE_ERROR_PARSE, long_path,
               "1:17: input_lens item 0: not an integer: "
               "'\"xxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxx...'");
  g_clear_error(&error);

  /* A long key given twice is named shortened (it was quoted whole: 100 kB of message). */
  g_autofree char *long_key = g_strnfill(100000, 'k');
  g_autofree char *twice = g_strdup_printf(
      "{\"input_lens\": [1], \"output_lens\": [1], \"%s\": 1, \"%s\": 2}", long_key, long_key);
  g_autofree char *twice_path = write_tmp("vllm-long-key.json", twice, -1);
  g_assert_null(open_vllm(twice_path, FALSE, &error));
  assert_error(error, EMA_TRACE_ERROR_PARSE, twice_path,
               "1:100048: key \"kkkkkkkkkkkkkkkkkkkkkkkkkkkkkkkkkkkkkkkk...\" given twice in one "
               "object");
  g_clear_error(&error);

  /* So are bytes that are not UTF-8 (json-glib named no place). */
  g_autofree char *latin = write_tmp(
      "vllm-latin1.json", "{\"input_lens\": [1],\n \"output_lens\": [1], \"x\": \"\xc3\"}", -1);
  g_assert_null(open_vllm(latin, FALSE, &error));
  assert_error(error, EMA_TRACE_ERROR_PARSE, latin, "2:28: not UTF-8 text");
  g_clear_error(&error);

  /* Nesting is refused before json-glib recurses, at its line and column. */
  g_autoptr(GString) deep = g_string_new("{\"input_lens\":\n");
  for (int i = 0; i < 40; i++)
    g_string_append_c(deep, '[');
  g_autofree char *deep_path = write_tmp("vllm-deep.json", deep->str, -1);
  g_assert_null(open_vllm(deep_path, FALSE, &error));
  assert_error(error, EMA_TRACE_ERROR_PARSE, deep_path, "2:32: JSON nested deeper than 32 levels");
  g_clear_error(&error);

  /* Syntax errors carry json-glib's line and column. */
  g_autofree char *cut = write_tmp("vllm-cut.json", "{\n \"input_lens\": [1,\n", -1);
  g_assert_null(open_vllm(cut, FALSE, &error));
  g_assert_error(error, EMA_TRACE_ERROR, EMA_TRACE_ERROR_PARSE);
  g_autofree char *prefix = g_strconcat(cut, ":3:", NULL);
  g_assert_true(g_str_has_prefix(error->message, prefix));
  g_clear_error(&error);

  /* Not a regular file. */
  g_assert_null(open_vllm(tmp_dir, FALSE, &error));
  g_assert_error(error, EMA_TRACE_ERROR, EMA_TRACE_ERROR_IO);
  g_assert_true(g_str_has_prefix(error->message, tmp_dir));
  g_clear_error(&error);

  /* Opening by format needs an arrival process. */
  g_autofree char *good = fixture("vllm-bench.json");
  g_assert_null(ema_trace_source_open(EMA_TRACE_FORMAT_VLLM_BENCH, good, &error));
  g_assert_error(error, EMA_TRACE_ERROR, EMA_TRACE_ERROR_INVALID);
  g_clear_error(&error);
}

/* ---- formats and open() ------------------------------------------------------- */

static void test_open_formats(void) {
  static const struct {
    const char *file;
    guint32 first_prompt;
  } files[] = {
      {"azure-good.csv", 374},
      {"vidur-good.csv", 374},
      {"burstgpt-good.csv", 472},
      {"mooncake-good.jsonl", 6955},
  };
  GError *error = NULL;
  for (guint i = 0; i < G_N_ELEMENTS(files); i++) {
    g_autofree char *path = fixture(files[i].file);
    g_autoptr(EmaTraceSource) src = ema_trace_source_open(EMA_TRACE_FORMAT_AUTO, path, &error);
    g_assert_no_error(error);
    EmaRequestRecord r;
    g_assert_true(ema_trace_source_next(src, &r, &error));
    g_assert_cmpuint(r.prompt_tokens, ==, files[i].first_prompt);
    /* By name too. */
    EmaTraceFormat format;
    g_assert_true(ema_trace_format_from_name(ema_trace_format_name((EmaTraceFormat) (i + 1)),
                                             &format, &error));
    g_assert_cmpint(format, ==, (EmaTraceFormat) (i + 1));
    g_autoptr(EmaTraceSource) named = ema_trace_source_open(format, path, &error);
    g_assert_no_error(error);
    g_assert_true(ema_trace_source_next(named, &r, &error));
    g_assert_cmpuint(r.prompt_tokens, ==, files[i].first_prompt);
  }
  EmaTraceFormat format;
  g_assert_false(ema_trace_format_from_name("azur", &format, &error));
  g_assert_error(error, EMA_TRACE_ERROR, EMA_TRACE_ERROR_INVALID);
  g_assert_cmpstr(error->message, ==,
                  "unknown trace format 'azur' (valid: auto, azure, vidur, burstgpt, mooncake, "
                  "lengths, vllm-bench)");
  g_clear_error(&error);

  g_autofree char *lengths = fixture("lengths-good.csv");
  g_assert_null(ema_trace_source_open(EMA_TRACE_FORMAT_AUTO, lengths, &error));
  g_assert_error(error, EMA_TRACE_ERROR, EMA_TRACE_ERROR_INVALID);
  g_clear_error(&error);
  /* A length-only file under Azure's names (which its reader takes) is one too; with Azure's
   * time column it is Azure's. */
  g_autofree char *azure_lengths =
      write_tmp("azure-lengths.csv", "ContextTokens,GeneratedTokens\n5,3\n", -1);
  g_assert_true(ema_trace_format_sniff(azure_lengths, &format, &error));
  g_assert_cmpint(format, ==, EMA_TRACE_FORMAT_LENGTHS);
  g_autofree char *azure = fixture("azure-good.csv");
  g_assert_true(ema_trace_format_sniff(azure, &format, &error));
  g_assert_cmpint(format, ==, EMA_TRACE_FORMAT_AZURE);
  /* A column is known by its whole name: an extra "arrived_at_bucket" made an Azure file
   * Vidur's (and it failed for want of arrived_at); quoted names, any case, are names. */
  g_autofree char *bucket = write_tmp(
      "azure-bucket.csv",
      "TIMESTAMP,ContextTokens,GeneratedTokens,arrived_at_bucket\n2023-11-16 18:15:46,374,44,1\n",
      -1);
  g_assert_true(ema_trace_format_sniff(bucket, &format, &error));
  g_assert_cmpint(format, ==, EMA_TRACE_FORMAT_AZURE);
  g_autofree char *quoted = write_tmp(
      "vidur-quoted.csv", "\"Arrived_At\",\"num_prefill_tokens\",num_decode_tokens\n0,5,3\n", -1);
  g_assert_true(ema_trace_format_sniff(quoted, &format, &error));
  g_assert_cmpint(format, ==, EMA_TRACE_FORMAT_VIDUR);
  g_autofree char *empty = fixture("empty.csv");
  g_assert_null(ema_trace_source_open(EMA_TRACE_FORMAT_AUTO, empty, &error));
  assert_error(error, EMA_TRACE_ERROR_EMPTY, empty, "1: empty file: no header");
  g_clear_error(&error);
  g_autofree char *other = write_tmp("other.csv", "a,b,c\n1,2,3\n", -1);
  g_assert_null(ema_trace_source_open(EMA_TRACE_FORMAT_AUTO, other, &error));
  g_assert_error(error, EMA_TRACE_ERROR, EMA_TRACE_ERROR_HEADER);
  g_clear_error(&error);

  /* Blank lines (spaces and tabs too) before the header, or between rows, are skipped: by the
   * sniffing as by the readers; white space alone is an empty file. */
  static const Want azure_spaced[] = {{0, 374, 44, 0, 0}, {EMA_MS(500), 396, 109, 1, 0}};
  g_autofree char *spaced = write_tmp(
      "spaced.csv",
      "\n \r\n\t\nTIMESTAMP,ContextTokens,GeneratedTokens\n2023-11-16 18:15:46.5,374,44\n  \n"
      "2023-11-16 18:15:47,396,109\n",
      -1);
  expect_records(ema_trace_source_open(EMA_TRACE_FORMAT_AUTO, spaced, &error), azure_spaced,
                 G_N_ELEMENTS(azure_spaced));
  static const Want moon_spaced[] = {{0, 5, 6, 0, 0}};
  g_autofree char *moon = write_tmp(
      "spaced.jsonl", "\n  \n {\"timestamp\": 1, \"input_length\": 5, \"output_length\": 6}\n", -1);
  expect_records(ema_trace_source_open(EMA_TRACE_FORMAT_AUTO, moon, &error), moon_spaced,
                 G_N_ELEMENTS(moon_spaced));
  g_autofree char *blank = write_tmp("blank-only.csv", "\n \t\n\n", -1);
  g_assert_null(ema_trace_source_open(EMA_TRACE_FORMAT_AUTO, blank, &error));
  assert_error(error, EMA_TRACE_ERROR_EMPTY, blank, "1: empty file: no header");
  g_clear_error(&error);
}

/* ---- transformations ------------------------------------------------------------ */

static EmaTraceSource *ramp_source(void) {
  EmaRequestRecord records[20];
  for (guint i = 0; i < 20; i++)
    records[i] = (EmaRequestRecord){
        .arrival = EMA_S(i), .prompt_tokens = 100 + i, .output_tokens = 10 + i, .id = i};
  return ema_trace_source_new_array(records, 20);
}

static void test_transform_compose(void) {
  /* window [5 s, 15 s) -> 0..9 s; x8 -> 0, 125 ms, ...; 4 requests; +1 s. */
  static const Want want[] = {
      {EMA_S(1), 105, 15, 5, 0},
      {EMA_MS(1125), 106, 16, 6, 0},
      {EMA_MS(1250), 107, 17, 7, 0},
      {EMA_MS(1375), 108, 18, 8, 0},
  };
  expect_records(
      ema_trace_offset(
          ema_trace_limit(
              ema_trace_scale_rate(ema_trace_window(ramp_source(), EMA_S(5), EMA_S(15)), 8.0), 4),
          EMA_S(1)),
      want, G_N_ELEMENTS(want));

  /* The window ends the source at its end. */
  g_autoptr(EmaTraceSource) w = ema_trace_window(ramp_source(), EMA_S(18), EMA_TIME_NEVER);
  GError *error = NULL;
  g_autoptr(GArray) tail = read_all(w, &error);
  g_assert_no_error(error);
  g_assert_cmpuint(tail->len, ==, 2);
  g_assert_cmpint(g_array_index(tail, EmaRequestRecord, 1).arrival, ==, EMA_S(1));

  /* On a real reader: rows 2-4 of azure-good, re-based at 1 s, 3x faster. */
  static const Want azure[] = {
      {1104859667, 396, 109, 1, 0},
      {1104859667, 12, 7, 2, 0},
  };
  g_autofree char *path = fixture("azure-good.csv");
  EmaTraceSource *src = ema_trace_source_open_azure(path, &error);
  g_assert_no_error(error);
  expect_records(
      ema_trace_limit(ema_trace_scale_rate(ema_trace_window(src, EMA_S(1), EMA_S(30000)), 3.0), 2),
      azure, G_N_ELEMENTS(azure));

  /* Slowing down (factor < 1) and the order of limit vs. window. */
  static const Want slow[] = {{0, 100, 10, 0, 0}, {EMA_S(4), 101, 11, 1, 0}};
  expect_records(ema_trace_window(ema_trace_scale_rate(ramp_source(), 0.25), 0, EMA_S(5)), slow,
                 G_N_ELEMENTS(slow));
  static const Want limited[] = {{0, 102, 12, 2, 0}};
  expect_records(ema_trace_window(ema_trace_limit(ramp_source(), 3), EMA_S(2), EMA_S(10)), limited,
                 G_N_ELEMENTS(limited));

  /* Errors pass through the wrappers with their location. */
  g_autofree char *bad = fixture("azure-malformed.csv");
  expect_row_error(
      ema_trace_offset(ema_trace_scale_rate(ema_trace_source_open_azure(bad, &error), 2.0),
                       EMA_S(3)),
      1, EMA_TRACE_ERROR_PARSE, bad, "3:29: ContextTokens: not an integer: '39x6'");
}

/* How far a trace file goes (ema_trace_spec_reaches, which the experiment loader asks of a
 * trace's start): azure-good.csv's last request arrives 20653.3194101 s after its first; a
 * start past it reaches none, and the answer names that last arrival. A file written anew is
 * read anew (the answers are kept per process); arrivals all at 0 (a closed loop of a lengths
 * file) reach no start past 0 without a read. */
static void test_spec_reaches(void) {
  const EmaTime last_arrival = G_GINT64_CONSTANT(20653319410100);
  g_autofree char *path = fixture("azure-good.csv");
  g_autofree char *text = NULL;
  g_autofree char *copy = NULL;
  g_autofree char *longer = NULL;
  g_autofree char *lengths = fixture("lengths-good.csv");
  EmaTraceSpec spec = {.format = EMA_TRACE_FORMAT_AZURE, .rate_scale = 1};
  gboolean reaches = FALSE;
  EmaTime last = 0;
  GError *error = NULL;
  g_assert_true(g_file_get_contents(path, &text, NULL, NULL));
  copy = write_tmp("reaches.csv", text, -1);
  spec.file = copy;
  g_assert_true(ema_trace_spec_reaches(&spec, 0, last_arrival, &reaches, &last, &error));
  g_assert_no_error(error);
  g_assert_true(reaches);
  g_assert_true(ema_trace_spec_reaches(&spec, 0, last_arrival + 1, &reaches, &last, &error));
  g_assert_false(reaches);
  g_assert_cmpint(last, ==, last_arrival);
  /* again, from what the first reads found */
  g_assert_true(ema_trace_spec_reaches(&spec, 0, last_arrival + 1, &reaches, &last, &error));
  g_assert_false(reaches);
  g_assert_cmpint(last, ==, last_arrival);
  /* a row a day later, written into the same file */
  longer = g_strconcat(text, "2023-11-18 00:00:00.0000001,10,10\n", NULL);
  g_free(write_tmp("reaches.csv", longer, -1));
  g_assert_true(ema_trace_spec_reaches(&spec, 0, last_arrival + 1, &reaches, &last, &error));
  g_assert_true(reaches);
  /* a lengths file's closed loop: every arrival at 0 */
  spec = (EmaTraceSpec){.file = lengths,
                        .format = EMA_TRACE_FORMAT_LENGTHS,
                        .rate_scale = 1,
                        .arrivals = EMA_ARRIVALS_FILE,
                        .concurrency = 2};
  g_assert_true(ema_trace_spec_reaches(&spec, 0, 1, &reaches, &last, &error));
  g_assert_false(reaches);
  g_assert_cmpint(last, ==, 0);
  g_remove(copy);
}

/* split: a round-robin router's share, by position in the source (not by
 * id); arrivals, lengths and ids pass through; composes with limit (which
 * counts the kept records) and offset. */
static void test_transform_split(void) {
  EmaRequestRecord records[10];
  for (guint i = 0; i < 10; i++)
    records[i] = (EmaRequestRecord){.arrival = EMA_MS(100) * i + i * i,
                                    .prompt_tokens = 50 + i,
                                    .output_tokens = 5 + i,
                                    .id = i};
  static const Want third[] = {
      {EMA_MS(100) + 1, 51, 6, 1, 0},
      {EMA_MS(400) + 16, 54, 9, 4, 0},
      {EMA_MS(700) + 49, 57, 12, 7, 0},
  };
  expect_records(ema_trace_split(ema_trace_source_new_array(records, 10), 3, 1), third,
                 G_N_ELEMENTS(third));
  /* index 0 of 3 gets the extra record; 1 way keeps everything */
  static const Want first[] = {
      {0, 50, 5, 0, 0},
      {EMA_MS(300) + 9, 53, 8, 3, 0},
      {EMA_MS(600) + 36, 56, 11, 6, 0},
      {EMA_MS(900) + 81, 59, 14, 9, 0},
  };
  expect_records(ema_trace_split(ema_trace_source_new_array(records, 10), 3, 0), first,
                 G_N_ELEMENTS(first));
  g_autoptr(EmaTraceSource) all = ema_trace_split(ema_trace_source_new_array(records, 10), 1, 0);
  GError *error = NULL;
  g_autoptr(GArray) kept = read_all(all, &error);
  g_assert_no_error(error);
  g_assert_cmpuint(kept->len, ==, 10);
  g_assert_cmpuint(ema_trace_source_get_count(all), ==, 10);
  /* more ways than records: the last index gets nothing, and ends cleanly */
  expect_records(ema_trace_split(ema_trace_source_new_array(records, 10), 12, 11), NULL, 0);
  /* position, not id: split a split (every 2nd of every 2nd = every 4th) */
  static const Want fourth[] = {{EMA_MS(300) + 9, 53, 8, 3, 0}, {EMA_MS(700) + 49, 57, 12, 7, 0}};
  expect_records(
      ema_trace_split(ema_trace_split(ema_trace_source_new_array(records, 10), 2, 1), 2, 1), fourth,
      G_N_ELEMENTS(fourth));
  /* the limit counts kept records; the offset shifts them */
  static const Want limited[] = {{EMA_MS(1100) + 1, 51, 6, 1, 0}, {EMA_MS(1400) + 16, 54, 9, 4, 0}};
  expect_records(
      ema_trace_offset(
          ema_trace_limit(ema_trace_split(ema_trace_source_new_array(records, 10), 3, 1), 2),
          EMA_S(1)),
      limited, G_N_ELEMENTS(limited));
}

/* ---- synthetic arrivals ------------------------------------------------------------ */

#define N_DRAWS 100000

/* Mean rate (1/s) and CV of the inter-arrival times of N draws. */
static void gap_stats(EmaTraceArrivals *a, guint n, double *rate, double *cv) {
  EmaTime prev = 0, t = 0;
  double sum = 0, sum2 = 0;
  for (guint i = 0; i < n; i++) {
    t = ema_trace_arrivals_next(a);
    g_assert_cmpint(t, >=, prev);
    double gap = (double) (t - prev) * 1e-9;
    sum += gap;
    sum2 += gap * gap;
    prev = t;
  }
  double mean = sum / n;
  *rate = 1.0 / mean;
  *cv = sqrt(sum2 / n - mean * mean) / mean;
}

static void test_poisson_rate(void) {
  GError *error = NULL;
  double rate, cv;
  g_autoptr(EmaTraceArrivals) a = ema_trace_arrivals_new_poisson(10.0, 42, &error);
  g_assert_no_error(error);
  gap_stats(a, N_DRAWS, &rate, &cv);
  /* 1/sqrt(100k) = 0.3%: the tolerances are > 6 sigma. */
  g_assert_cmpfloat_with_epsilon(rate, 10.0, 0.2);
  g_assert_cmpfloat_with_epsilon(cv, 1.0, 0.03);

  /* Counts in 1 s windows: mean and variance both ~ rate (Poisson). */
  g_autoptr(EmaTraceArrivals) b = ema_trace_arrivals_new_poisson(10.0, 43, &error);
  guint counts[10000] = {0};
  for (;;) {
    EmaTime t = ema_trace_arrivals_next(b);
    if (t >= EMA_S(10000))
      break;
    counts[t / EMA_S(1)]++;
  }
  double m = 0, v = 0;
  for (guint i = 0; i < 10000; i++)
    m += counts[i];
  m /= 10000;
  for (guint i = 0; i < 10000; i++)
    v += (counts[i] - m) * (counts[i] - m);
  v /= 10000;
  g_assert_cmpfloat_with_epsilon(m, 10.0, 0.2);
  g_assert_cmpfloat_with_epsilon(v / m, 1.0, 0.08);
}

static GArray *draw_source(guint64 seed, gboolean uniform_output) {
  GError *error = NULL;
  EmaTraceLengths *prompt =
      ema_trace_lengths_new_uniform(1, 8192, ema_trace_seed_derive(seed, "p"), &error);
  EmaTraceLengths *output =
      uniform_output
          ? ema_trace_lengths_new_uniform(1, 512, ema_trace_seed_derive(seed, "o"), &error)
          : ema_trace_lengths_new_fixed(64, &error);
  g_assert_no_error(error);
  g_autoptr(EmaTraceSource) src =
      ema_trace_source_new_poisson(5.0, prompt, output, 1000, 0, seed, &error);
  g_assert_no_error(error);
  GArray *records = read_all(src, &error);
  g_assert_no_error(error);
  g_assert_cmpuint(records->len, ==, 1000);
  return records;
}

static void test_poisson_determinism(void) {
  g_autoptr(GArray) a = draw_source(1234, TRUE);
  g_autoptr(GArray) b = draw_source(1234, TRUE);
  g_assert_cmpmem(a->data, a->len * sizeof(EmaRequestRecord), b->data,
                  b->len * sizeof(EmaRequestRecord));

  /* Another seed (even one differing only in its high 32 bits) differs. */
  const guint64 others[] = {1235, 1234 + (G_GUINT64_CONSTANT(1) << 32)};
  for (guint k = 0; k < G_N_ELEMENTS(others); k++) {
    g_autoptr(GArray) c = draw_source(others[k], TRUE);
    guint same = 0;
    for (guint i = 0; i < a->len; i++)
      same += g_array_index(a, EmaRequestRecord, i).arrival ==
              g_array_index(c, EmaRequestRecord, i).arrival;
    g_assert_cmpuint(same, <, 10);
  }

  /* Changing the output distribution does not move the arrivals or prompts. */
  g_autoptr(GArray) d = draw_source(1234, FALSE);
  for (guint i = 0; i < a->len; i++) {
    g_assert_cmpint(g_array_index(a, EmaRequestRecord, i).arrival, ==,
                    g_array_index(d, EmaRequestRecord, i).arrival);
    g_assert_cmpuint(g_array_index(a, EmaRequestRecord, i).prompt_tokens, ==,
                     g_array_index(d, EmaRequestRecord, i).prompt_tokens);
  }
  g_assert_cmpuint(ema_trace_seed_derive(1, "arrivals"), !=, ema_trace_seed_derive(1, "prompt"));
  g_assert_cmpuint(ema_trace_seed_derive(1, "arrivals"), ==, ema_trace_seed_derive(1, "arrivals"));
}

static void test_gamma_cv(void) {
  static const double cvs[] = {0.5, 1.0, 3.0};
  GError *error = NULL;
  for (guint i = 0; i < G_N_ELEMENTS(cvs); i++) {
    double rate, cv;
    g_autoptr(EmaTraceArrivals) a = ema_trace_arrivals_new_gamma(5.0, cvs[i], 99 + i, &error);
    g_assert_no_error(error);
    gap_stats(a, N_DRAWS, &rate, &cv);
    g_assert_cmpfloat_with_epsilon(rate / 5.0, 1.0, 0.03);
    g_assert_cmpfloat_with_epsilon(cv / cvs[i], 1.0, 0.05);
  }
}

static void test_onoff_rate(void) {
  GError *error = NULL;
  double rate, cv;
  /* on 1 s at 20/s, off 3 s at 0/s: 5/s on average, bursty. */
  g_autoptr(EmaTraceArrivals) a =
      ema_trace_arrivals_new_onoff(20.0, 0.0, EMA_S(1), EMA_S(3), 5, &error);
  g_assert_no_error(error);
  gap_stats(a, N_DRAWS, &rate, &cv);
  g_assert_cmpfloat_with_epsilon(rate / 5.0, 1.0, 0.06);
  g_assert_cmpfloat(cv, >, 1.5);
  /* rate_off > 0 */
  g_autoptr(EmaTraceArrivals) b =
      ema_trace_arrivals_new_onoff(20.0, 4.0, EMA_S(1), EMA_S(1), 6, &error);
  gap_stats(b, N_DRAWS, &rate, &cv);
  g_assert_cmpfloat_with_epsilon(rate / 12.0, 1.0, 0.06);
}

static void test_diurnal_rate(void) {
  GError *error = NULL;
  g_autoptr(EmaTraceArrivals) a = ema_trace_arrivals_new_diurnal(1.0, 9.0, EMA_S(100), 8, &error);
  g_assert_no_error(error);
  /* 200 whole periods; mean rate 5/s; over phase 0.4-0.6 the mean rate is
   * 5 + 4 sin(0.2 pi) / (0.2 pi) = 8.742/s, over phase 0.9-0.1 it is 1.258/s. */
  guint total = 0, peak = 0, trough = 0;
  for (;;) {
    EmaTime t = ema_trace_arrivals_next(a);
    if (t >= EMA_S(20000))
      break;
    total++;
    double phase = fmod((double) t * 1e-9, 100.0) / 100.0;
    if (phase >= 0.4 && phase < 0.6)
      peak++;
    if (phase < 0.1 || phase >= 0.9)
      trough++;
  }
  g_assert_cmpfloat_with_epsilon(total / 20000.0, 5.0, 0.15);
  g_assert_cmpfloat_with_epsilon(peak / (0.2 * 20000.0), 8.742, 0.3);
  g_assert_cmpfloat_with_epsilon(trough / (0.2 * 20000.0), 1.258, 0.1);
}

static void test_invalid_params(void) {
  GError *error = NULL;
  g_assert_null(ema_trace_arrivals_new_poisson(0.0, 1, &error));
  g_assert_error(error, EMA_TRACE_ERROR, EMA_TRACE_ERROR_INVALID);
  g_assert_cmpstr(error->message, ==, "poisson: rate must be > 0 (got 0)");
  g_clear_error(&error);
  g_assert_null(ema_trace_arrivals_new_gamma(1.0, -1.0, 1, &error));
  g_assert_cmpstr(error->message, ==, "gamma: cv must be > 0 (got -1)");
  g_clear_error(&error);
  g_assert_null(ema_trace_arrivals_new_onoff(1.0, -1.0, EMA_S(1), EMA_S(1), 1, &error));
  g_assert_cmpstr(error->message, ==, "onoff: rate_off must be >= 0 (got -1)");
  g_clear_error(&error);
  g_assert_null(ema_trace_arrivals_new_diurnal(5.0, 1.0, EMA_S(1), 1, &error));
  g_assert_cmpstr(error->message, ==, "diurnal: rate_max must be > 0 and >= rate_min (got 1)");
  g_clear_error(&error);
  g_assert_null(ema_trace_arrivals_new_poisson(NAN, 1, &error));
  g_clear_error(&error);
  g_assert_null(ema_trace_lengths_new_fixed(0, &error));
  g_assert_cmpstr(error->message, ==, "fixed: tokens must be >= 1");
  g_clear_error(&error);
  g_assert_null(ema_trace_lengths_new_uniform(10, 5, 1, &error));
  g_assert_cmpstr(error->message, ==, "uniform: needs 1 <= min <= max");
  g_clear_error(&error);
  g_assert_null(ema_trace_lengths_new_lognormal(-1.0, 1.0, 1, &error));
  g_assert_cmpstr(error->message, ==, "lognormal: needs median > 0 and sigma >= 0");
  g_clear_error(&error);
  /* The Poisson shortcut frees the lengths it was given on error. */
  g_assert_null(ema_trace_source_new_poisson(-1.0, ema_trace_lengths_new_fixed(1, NULL),
                                             ema_trace_lengths_new_fixed(1, NULL), 0, 0, 1,
                                             &error));
  g_assert_error(error, EMA_TRACE_ERROR, EMA_TRACE_ERROR_INVALID);
  g_clear_error(&error);
}

/* ---- lengths -------------------------------------------------------------------- */

static int cmp_u32(gconstpointer a, gconstpointer b) {
  guint32 x = *(const guint32 *) a, y = *(const guint32 *) b;
  return x < y ? -1 : x > y;
}

static void test_lengths_fixed_uniform(void) {
  GError *error = NULL;
  g_autoptr(EmaTraceLengths) f = ema_trace_lengths_new_fixed(77, &error);
  g_assert_no_error(error);
  for (int i = 0; i < 10; i++)
    g_assert_cmpuint(ema_trace_lengths_draw(f), ==, 77);
  ema_trace_lengths_set_bounds(f, 1, 50);
  g_assert_cmpuint(ema_trace_lengths_draw(f), ==, 50);

  g_autoptr(EmaTraceLengths) u = ema_trace_lengths_new_uniform(10, 20, 3, &error);
  g_assert_no_error(error);
  guint seen[21] = {0};
  double sum = 0;
  for (int i = 0; i < N_DRAWS; i++) {
    guint32 v = ema_trace_lengths_draw(u);
    g_assert_cmpuint(v, >=, 10);
    g_assert_cmpuint(v, <=, 20);
    seen[v]++;
    sum += v;
  }
  for (guint v = 10; v <= 20; v++)
    g_assert_cmpuint(seen[v], >, N_DRAWS / 11 * 0.9);
  g_assert_cmpfloat_with_epsilon(sum / N_DRAWS, 15.0, 0.05);

  g_autoptr(EmaTraceLengths) wide = ema_trace_lengths_new_uniform(1, G_MAXUINT32, 3, &error);
  g_assert_no_error(error);
  for (int i = 0; i < 1000; i++)
    g_assert_cmpuint(ema_trace_lengths_draw(wide), >=, 1);
}

static void test_lengths_lognormal(void) {
  GError *error = NULL;
  guint32 *v = g_new(guint32, N_DRAWS);

  /* By median: mu = ln 1000, sigma 0.5. */
  g_autoptr(EmaTraceLengths) l = ema_trace_lengths_new_lognormal(1000.0, 0.5, 11, &error);
  g_assert_no_error(error);
  double sl = 0, sl2 = 0;
  for (int i = 0; i < N_DRAWS; i++) {
    v[i] = ema_trace_lengths_draw(l);
    double x = log(v[i]);
    sl += x;
    sl2 += x * x;
  }
  qsort(v, N_DRAWS, sizeof *v, cmp_u32);
  double mu = sl / N_DRAWS, sd = sqrt(sl2 / N_DRAWS - mu * mu);
  g_assert_cmpfloat_with_epsilon(v[N_DRAWS / 2] / 1000.0, 1.0, 0.02);
  g_assert_cmpfloat_with_epsilon(mu, log(1000.0), 0.01);
  g_assert_cmpfloat_with_epsilon(sd, 0.5, 0.01);

  /* By mean: mean 300, sigma 1 (median 300/e^0.5 = 182). */
  g_autoptr(EmaTraceLengths) m = ema_trace_lengths_new_lognormal_mean(300.0, 1.0, 12, &error);
  g_assert_no_error(error);
  double sum = 0;
  for (int i = 0; i < N_DRAWS; i++) {
    v[i] = ema_trace_lengths_draw(m);
    sum += v[i];
  }
  qsort(v, N_DRAWS, sizeof *v, cmp_u32);
  g_assert_cmpfloat_with_epsilon(sum / N_DRAWS / 300.0, 1.0, 0.03);
  g_assert_cmpfloat_with_epsilon(v[N_DRAWS / 2] / (300.0 / exp(0.5)), 1.0, 0.03);

  /* Bounds clamp; tiny draws never give 0. */
  g_autoptr(EmaTraceLengths) b = ema_trace_lengths_new_lognormal(2.0, 3.0, 13, &error);
  ema_trace_lengths_set_bounds(b, 1, 4096);
  for (int i = 0; i < N_DRAWS; i++) {
    guint32 x = ema_trace_lengths_draw(b);
    g_assert_cmpuint(x, >=, 1);
    g_assert_cmpuint(x, <=, 4096);
  }
  g_free(v);
}

static void test_lengths_resample(void) {
  GError *error = NULL;
  g_autofree char *path = fixture("lengths-good.csv");
  g_autoptr(EmaTraceLengths) p =
      ema_trace_lengths_new_resample(path, EMA_TRACE_COLUMN_PROMPT, 21, &error);
  g_assert_no_error(error);
  g_autoptr(EmaTraceLengths) o =
      ema_trace_lengths_new_resample(path, EMA_TRACE_COLUMN_OUTPUT, 22, &error);
  g_assert_no_error(error);
  guint hits[3] = {0}, ohits[3] = {0};
  for (int i = 0; i < 3000; i++) {
    guint32 x = ema_trace_lengths_draw(p), y = ema_trace_lengths_draw(o);
    g_assert_true(x == 3772 || x == 2015 || x == 3858);
    g_assert_true(y == 54 || y == 156 || y == 133);
    hits[x == 3772 ? 0 : x == 2015 ? 1 : 2]++;
    ohits[y == 54 ? 0 : y == 156 ? 1 : 2]++;
  }
  for (int k = 0; k < 3; k++) {
    g_assert_cmpuint(hits[k], >, 800);
    g_assert_cmpuint(ohits[k], >, 800);
  }
  /* An Azure file has the lengths too (ContextTokens, GeneratedTokens). */
  g_autofree char *azure = fixture("azure-good.csv");
  g_autoptr(EmaTraceLengths) a =
      ema_trace_lengths_new_resample(azure, EMA_TRACE_COLUMN_PROMPT, 23, &error);
  g_assert_no_error(error);
  g_autofree char *hdr = fixture("lengths-header-only.csv");
  g_assert_null(ema_trace_lengths_new_resample(hdr, EMA_TRACE_COLUMN_PROMPT, 1, &error));
  assert_error(error, EMA_TRACE_ERROR_EMPTY, hdr, "1: no data rows to resample");
  g_clear_error(&error);
  g_autofree char *bad = fixture("burstgpt-good.csv");
  g_assert_null(ema_trace_lengths_new_resample(bad, EMA_TRACE_COLUMN_OUTPUT, 1, &error));
  assert_error(error, EMA_TRACE_ERROR_HEADER, bad,
               "1: length-only CSV header: missing column 'num_prefill_tokens' (needs "
               "num_prefill_tokens, num_decode_tokens)");
  g_clear_error(&error);
}

static void test_synthetic_limits(void) {
  GError *error = NULL;
  /* Count limit. */
  g_autoptr(EmaTraceSource) a = ema_trace_source_new_synthetic(
      ema_trace_arrivals_new_gamma(100.0, 2.0, 1, &error), ema_trace_lengths_new_fixed(10, &error),
      ema_trace_lengths_new_fixed(20, &error), 250, 0);
  g_assert_no_error(error);
  g_autoptr(GArray) ra = read_all(a, &error);
  g_assert_no_error(error);
  g_assert_cmpuint(ra->len, ==, 250);
  for (guint i = 0; i < ra->len; i++) {
    const EmaRequestRecord *r = &g_array_index(ra, EmaRequestRecord, i);
    g_assert_cmpuint(r->id, ==, i);
    g_assert_cmpuint(r->prompt_tokens, ==, 10);
    g_assert_cmpuint(r->output_tokens, ==, 20);
  }
  /* Duration limit: everything before 60 s, about 600 requests. */
  g_autoptr(EmaTraceSource) b = ema_trace_source_new_synthetic(
      ema_trace_arrivals_new_poisson(10.0, 2, &error), ema_trace_lengths_new_fixed(10, &error),
      ema_trace_lengths_new_fixed(20, &error), 0, EMA_S(60));
  g_autoptr(GArray) rb = read_all(b, &error);
  g_assert_no_error(error);
  g_assert_cmpuint(rb->len, >, 500);
  g_assert_cmpuint(rb->len, <, 700);
  g_assert_cmpint(g_array_index(rb, EmaRequestRecord, rb->len - 1).arrival, <, EMA_S(60));
}

/* ---- real traces -------------------------------------------------------------------- */

static void test_real_azure_conv(void) {
  g_autofree char *path = real_trace("azure-llm-2023/AzureLLMInferenceTrace_conv.csv");
  if (path == NULL) {
    g_test_skip("AzureLLMInferenceTrace_conv.csv not found under $EMA_SHARED_DIR/traces");
    return;
  }
  GError *error = NULL;
  gint64 t0 = g_get_monotonic_time();
  g_autoptr(EmaTraceSource) src = ema_trace_source_open_azure(path, &error);
  g_assert_no_error(error);
  EmaRequestRecord r, first = {0};
  guint64 n = 0, prompt = 0, output = 0;
  while (ema_trace_source_next(src, &r, &error)) {
    if (n == 0)
      first = r;
    n++;
    prompt += r.prompt_tokens;
    output += r.output_tokens;
  }
  gint64 t1 = g_get_monotonic_time();
  g_assert_no_error(error);
  /* Numbers from ../shared/traces/SOURCES.md and the file itself. */
  g_assert_cmpuint(n, ==, 19366);
  g_assert_cmpint(first.arrival, ==, 0);
  g_assert_cmpuint(first.prompt_tokens, ==, 374);
  g_assert_cmpuint(first.output_tokens, ==, 44);
  g_assert_cmpint(r.arrival, ==, G_GINT64_CONSTANT(3501721937000)); /* 19:14:08.4025270 */
  g_assert_cmpuint(r.prompt_tokens, ==, 197);
  g_assert_cmpuint(r.output_tokens, ==, 183);
  g_assert_cmpuint(r.id, ==, 19365);
  g_assert_cmpuint(prompt, ==, 22361870);
  g_assert_cmpuint(output, ==, 4088665);
  g_test_message("read %" G_GUINT64_FORMAT " rows in %.3f ms", n, (t1 - t0) / 1e3);
}

static void test_real_azure_code(void) {
  g_autofree char *path = real_trace("azure-llm-2023/AzureLLMInferenceTrace_code.csv");
  if (path == NULL) {
    g_test_skip("AzureLLMInferenceTrace_code.csv not found under $EMA_SHARED_DIR/traces");
    return;
  }
  GError *error = NULL;
  g_autoptr(EmaTraceSource) src = ema_trace_source_open(EMA_TRACE_FORMAT_AUTO, path, &error);
  g_assert_no_error(error);
  g_autoptr(GArray) records = read_all(src, &error);
  g_assert_no_error(error);
  g_assert_cmpuint(records->len, ==, 8819);
  const EmaRequestRecord *last = &g_array_index(records, EmaRequestRecord, records->len - 1);
  g_assert_cmpint(last->arrival, ==, G_GINT64_CONSTANT(3435948056000)); /* 19:14:19.9280160 */
  g_assert_cmpuint(last->prompt_tokens, ==, 549);
  g_assert_cmpuint(last->output_tokens, ==, 173);
}

static void test_real_splitwise_conv(void) {
  g_autofree char *azure = real_trace("azure-llm-2023/AzureLLMInferenceTrace_conv.csv");
  g_autofree char *vidur = real_trace("vidur-processed/splitwise_conv.csv");
  if (azure == NULL || vidur == NULL) {
    g_test_skip("splitwise_conv.csv or the Azure conv trace not found");
    return;
  }
  GError *error = NULL;
  g_autoptr(EmaTraceSource) a = ema_trace_source_open_azure(azure, &error);
  g_assert_no_error(error);
  g_autoptr(EmaTraceSource) v = ema_trace_source_open_vidur(vidur, &error);
  g_assert_no_error(error);
  EmaRequestRecord ra, rv;
  guint64 n = 0;
  /* Vidur's arrived_at is the Azure timestamp minus the first one, printed
   * as a double ("5.8926549999999995"); rounded to the ns they agree exactly. */
  while (ema_trace_source_next(v, &rv, &error)) {
    g_assert_true(ema_trace_source_next(a, &ra, &error));
    g_assert_cmpuint(rv.prompt_tokens, ==, ra.prompt_tokens);
    g_assert_cmpuint(rv.output_tokens, ==, ra.output_tokens);
    g_assert_cmpint(rv.arrival, ==, ra.arrival);
    n++;
  }
  g_assert_no_error(error);
  g_assert_false(ema_trace_source_next(a, &ra, &error));
  g_assert_no_error(error);
  g_assert_cmpuint(n, ==, 19366);
  g_assert_cmpint(rv.arrival, ==, G_GINT64_CONSTANT(3501721937000));
}

static void test_real_arxiv_lengths(void) {
  g_autofree char *path =
      real_trace("vidur-processed/arxiv_summarization_stats_llama2_tokenizer_filtered_v2.csv");
  if (path == NULL) {
    g_test_skip("arxiv_summarization_stats_llama2_tokenizer_filtered_v2.csv not found");
    return;
  }
  GError *error = NULL;
  g_autoptr(EmaTraceSource) src = ema_trace_source_open_lengths(
      path, ema_trace_arrivals_new_poisson(5.0, 1, &error), FALSE, &error);
  g_assert_no_error(error);
  EmaRequestRecord r;
  guint64 n = 0, prompt = 0, output = 0;
  while (ema_trace_source_next(src, &r, &error)) {
    n++;
    prompt += r.prompt_tokens;
    output += r.output_tokens;
    g_assert_cmpuint(r.prompt_tokens + r.output_tokens, <=, 4096);
  }
  g_assert_no_error(error);
  g_assert_cmpuint(n, ==, 28257);
  g_assert_cmpuint(prompt, ==, 73131321);
  g_assert_cmpuint(output, ==, 8234948);
  g_autoptr(EmaTraceLengths) l =
      ema_trace_lengths_new_resample(path, EMA_TRACE_COLUMN_PROMPT, 9, &error);
  g_assert_no_error(error);
  for (int i = 0; i < 1000; i++)
    g_assert_cmpuint(ema_trace_lengths_draw(l), <=, 4096);
}

/* Read speed: run with -m perf. */
static void test_perf_azure_conv(void) {
  if (!g_test_perf()) {
    g_test_skip("run with -m perf");
    return;
  }
  g_autofree char *path = real_trace("azure-llm-2023/AzureLLMInferenceTrace_conv.csv");
  if (path == NULL) {
    g_test_skip("AzureLLMInferenceTrace_conv.csv not found");
    return;
  }
  const int passes = 100;
  guint64 n = 0;
  GError *error = NULL;
  g_test_timer_start();
  for (int p = 0; p < passes; p++) {
    g_autoptr(EmaTraceSource) src = ema_trace_source_open_azure(path, &error);
    g_assert_no_error(error);
    EmaRequestRecord r;
    while (ema_trace_source_next(src, &r, &error))
      n++;
    g_assert_no_error(error);
  }
  double s = g_test_timer_elapsed();
  g_test_minimized_result(s / passes,
                          "Azure conv: %" G_GUINT64_FORMAT " rows in %.3f s: %.2f M rows/s", n, s,
                          n / s / 1e6);
}

int main(int argc, char **argv) {
  g_test_init(&argc, &argv, NULL);

  GError *error = NULL;
  tmp_dir = g_dir_make_tmp("ema-traces-XXXXXX", &error);
  g_assert_no_error(error);

  g_test_add_func("/traces/parse/seconds", test_parse_seconds);
  g_test_add_func("/traces/mooncake/hash-ids", test_mooncake_hash_ids);
  g_test_add_func("/traces/transform/shared-prefix", test_transform_shared_prefix);
  g_test_add_func("/traces/parse/datetime", test_parse_datetime);
  g_test_add_func("/traces/azure/good", test_azure_good);
  g_test_add_func("/traces/azure/crlf-no-final-newline", test_azure_crlf);
  g_test_add_func("/traces/azure/2024-offsets", test_azure_2024);
  g_test_add_func("/traces/azure/swapped-columns", test_azure_swapped);
  g_test_add_func("/traces/azure/header-only", test_azure_header_only);
  g_test_add_func("/traces/azure/empty", test_azure_empty);
  g_test_add_func("/traces/azure/missing-column", test_azure_missing_column);
  g_test_add_func("/traces/azure/malformed", test_azure_malformed);
  g_test_add_func("/traces/azure/truncated", test_azure_truncated);
  g_test_add_func("/traces/azure/bad-rows", test_azure_rows);
  g_test_add_func("/traces/azure/garbage", test_azure_garbage);
  g_test_add_func("/traces/source/error-latch", test_source_error_latch);
  g_test_add_func("/traces/vidur/good", test_vidur_good);
  g_test_add_func("/traces/vidur/errors", test_vidur_errors);
  g_test_add_func("/traces/burstgpt/good", test_burstgpt_good);
  g_test_add_func("/traces/burstgpt/keep-failed", test_burstgpt_keep_failed);
  g_test_add_func("/traces/burstgpt/errors", test_burstgpt_errors);
  g_test_add_func("/traces/mooncake/good", test_mooncake_good);
  g_test_add_func("/traces/json/scan-keys-twice", test_json_scan_keys);
  g_test_add_func("/traces/mooncake/errors", test_mooncake_errors);
  g_test_add_func("/traces/lengths-file/stop-cycle-errors", test_lengths_file);
  g_test_add_func("/traces/vllm-bench/good", test_vllm_bench_good);
  g_test_add_func("/traces/vllm-bench/sniff", test_vllm_bench_sniff);
  g_test_add_func("/traces/vllm-bench/errors", test_vllm_bench_errors);
  g_test_add_func("/traces/vllm-bench/numbers", test_vllm_bench_numbers);
  g_test_add_func("/traces/open/formats", test_open_formats);
  g_test_add_func("/traces/transform/compose", test_transform_compose);
  g_test_add_func("/traces/transform/split", test_transform_split);
  g_test_add_func("/traces/spec/reaches", test_spec_reaches);
  g_test_add_func("/traces/poisson/rate", test_poisson_rate);
  g_test_add_func("/traces/poisson/determinism", test_poisson_determinism);
  g_test_add_func("/traces/gamma/cv", test_gamma_cv);
  g_test_add_func("/traces/onoff/rate", test_onoff_rate);
  g_test_add_func("/traces/diurnal/rate", test_diurnal_rate);
  g_test_add_func("/traces/synthetic/invalid-params", test_invalid_params);
  g_test_add_func("/traces/synthetic/limits", test_synthetic_limits);
  g_test_add_func("/traces/lengths/fixed-uniform", test_lengths_fixed_uniform);
  g_test_add_func("/traces/lengths/lognormal", test_lengths_lognormal);
  g_test_add_func("/traces/lengths/resample", test_lengths_resample);
  g_test_add_func("/traces/real/azure-conv", test_real_azure_conv);
  g_test_add_func("/traces/real/azure-code", test_real_azure_code);
  g_test_add_func("/traces/real/splitwise-conv", test_real_splitwise_conv);
  g_test_add_func("/traces/real/arxiv-lengths", test_real_arxiv_lengths);
  g_test_add_func("/traces/perf/azure-conv", test_perf_azure_conv);

  int status = g_test_run();

  /* Remove the temporary files. */
  GDir *dir = g_dir_open(tmp_dir, 0, NULL);
  if (dir != NULL) {
    const char *name;
    while ((name = g_dir_read_name(dir)) != NULL) {
      g_autofree char *path = g_build_filename(tmp_dir, name, NULL);
      g_unlink(path);
    }
    g_dir_close(dir);
  }
  g_rmdir(tmp_dir);
  g_free(tmp_dir);
  return status;
}
