/* test-compare.c: `ema-validate compare` without a GPU (validate/compare.c):
 * the comparison maths on hand-made reports (errors, medians of odd and
 * even counts, the largest error, mismatches), expectations judged as
 * ema-sim judges them, the measured summary.json read back for the
 * experiment of tests/fixtures/compare/ (and every way such a file can be
 * missing, malformed, too deep for json-glib, another experiment's or a simulation's that
 * ema-sim wrote), the written compare.csv and compare.md, and the claims of
 * run's and compare's folder (their kind, EMA_RUN_OUTPUT_KIND). */
#include <math.h>
#include <string.h>

#include <glib/gstdio.h>

#include "compare.h"
#include "ema/run/output.h"
#include "errors.h"
#include "testutil.h"

/* a name longer than messages quote, and what they quote of it (40 bytes and "...") */
#define LONG_NAME "a-measurement-name-longer-than-any-message-quotes-whole"
#define LONG_NAME_CUT "a-measurement-name-longer-than-any-messa..."

static void write_text(const char *dir, const char *name, const char *text) {
  g_autofree char *path = g_build_filename(dir, name, NULL);
  g_assert_true(g_file_set_contents(path, text, -1, NULL));
}

static void assert_error(GError *error, int code, const char *part) {
  g_assert_nonnull(error);
  g_assert_error(error, EMA_VALIDATE_ERROR, code);
  ema_test_assert_contains(error->message, part);
}

static EmaExperiment *load_fixture(void) {
  g_autofree char *path = ema_test_fixture("compare", "experiment.yaml");
  GError *error = NULL;
  EmaExperiment *experiment = ema_experiment_load(path, NULL, &error);
  g_assert_no_error(error);
  return experiment;
}

/* A report of N results named NAMES, the first OPS of them ops. */
static EmaOpsReport *make_report(const char *const *names, const double *seconds, guint n,
                                 guint ops) {
  static const EmaOpSpec op_spec = {0}; /* only its address: "an op, not a decode scenario" */
  EmaOpsReport *report = g_new0(EmaOpsReport, 1);
  report->ops = g_array_new(FALSE, TRUE, sizeof(EmaOpResult));
  for (guint i = 0; i < n; i++) {
    EmaOpResult r = {0};
    r.name = names[i];
    r.spec = i < ops ? &op_spec : NULL;
    r.seconds_ns = (EmaTime) llround(seconds[i] * 1e9);
    r.bandwidth = 1e9 / seconds[i];
    g_array_append_val(report->ops, r);
  }
  return report;
}

/* ---- the maths ------------------------------------------------------------------- */

static void test_maths(void) {
  static const char *const names[] = {"a", "b", "c", "d", "e"};
  const double measured_s[] = {10e-6, 20e-6, 1e-3, 40e-3, 50e-3};
  const double simulated_s[] = {11e-6, 19e-6, 1.03e-3, 40e-3, 60e-3};
  g_autoptr(EmaOpsReport) measured = make_report(names, measured_s, 5, 3);
  g_autoptr(EmaOpsReport) simulated = make_report(names, simulated_s, 5, 3);
  GError *error = NULL;
  g_autoptr(EmaComparison) c = ema_comparison_new(measured, simulated, &error);
  const EmaCompareRow *rows;
  g_assert_no_error(error);
  rows = (const EmaCompareRow *) c->rows->data;
  g_assert_cmpuint(c->rows->len, ==, 5);
  g_assert_cmpuint(c->ops, ==, 3);
  g_assert_cmpuint(c->decodes, ==, 2);
  g_assert_cmpfloat(fabs(rows[0].error - 0.10), <, 1e-9);
  g_assert_cmpfloat(fabs(rows[1].error + 0.05), <, 1e-9);
  g_assert_cmpfloat(fabs(rows[2].error - 0.03), <, 1e-9);
  g_assert_cmpfloat(fabs(rows[3].error), <, 1e-12);
  g_assert_cmpfloat(fabs(rows[4].error - 0.20), <, 1e-9);
  g_assert_false(rows[2].decode);
  g_assert_true(rows[3].decode);
  g_assert_cmpfloat(fabs(rows[0].measured_bandwidth - 1e14), <, 1);
  /* |errors| of the ops 0.10, 0.05, 0.03: median 0.05, the largest the first */
  g_assert_cmpfloat(fabs(c->ops_median - 0.05), <, 1e-9);
  g_assert_cmpint(c->ops_worst, ==, 0);
  /* decode 0 and 0.20: the mean of the middle two */
  g_assert_cmpfloat(fabs(c->decode_median - 0.10), <, 1e-9);
  g_assert_cmpint(c->decode_worst, ==, 4);
  /* all: 0, 0.03, 0.05, 0.10, 0.20 */
  g_assert_cmpfloat(fabs(c->all_median - 0.05), <, 1e-9);
}

static void test_maths_empty_side(void) {
  static const char *const names[] = {"only"};
  const double seconds[] = {1e-3};
  const double other[] = {0.5e-3};
  g_autoptr(EmaOpsReport) measured = make_report(names, seconds, 1, 1);
  g_autoptr(EmaOpsReport) simulated = make_report(names, other, 1, 1);
  g_autoptr(EmaComparison) c = ema_comparison_new(measured, simulated, NULL);
  g_assert_nonnull(c);
  g_assert_cmpfloat(fabs(c->ops_median - 0.5), <, 1e-9);
  g_assert_true(isnan(c->decode_median));
  g_assert_cmpint(c->decode_worst, ==, -1);
}

static void test_maths_mismatch(void) {
  static const char *const names[] = {"a", "b"};
  static const char *const other_names[] = {"a", "x"};
  const double seconds[] = {1e-3, 2e-3};
  const double zero[] = {1e-3, 0};
  g_autoptr(EmaOpsReport) two = make_report(names, seconds, 2, 2);
  g_autoptr(EmaOpsReport) one = make_report(names, seconds, 1, 1);
  g_autoptr(EmaOpsReport) renamed = make_report(other_names, seconds, 2, 2);
  g_autoptr(EmaOpsReport) decode = make_report(names, seconds, 2, 1);
  g_autoptr(EmaOpsReport) zero_time = make_report(names, zero, 2, 2);
  GError *error = NULL;
  g_assert_null(ema_comparison_new(two, one, &error));
  assert_error(error, EMA_VALIDATE_ERROR_DATA, "2 measured results against 1 simulated");
  g_clear_error(&error);
  g_assert_null(ema_comparison_new(two, renamed, &error));
  assert_error(error, EMA_VALIDATE_ERROR_DATA, "result 2 is 'b' measured but 'x' simulated");
  g_clear_error(&error);
  g_assert_null(ema_comparison_new(two, decode, &error));
  assert_error(error, EMA_VALIDATE_ERROR_DATA, "result 2 is 'b'");
  g_clear_error(&error);
  g_assert_null(ema_comparison_new(two, zero_time, &error));
  assert_error(error, EMA_VALIDATE_ERROR_DATA, "'b' takes no time");
  g_clear_error(&error);
  {
    /* names quoted cut at 40 bytes */
    static const char *const long_names[] = {"a", LONG_NAME};
    g_autoptr(EmaOpsReport) long_named = make_report(long_names, seconds, 2, 2);
    g_assert_null(ema_comparison_new(two, long_named, &error));
    assert_error(error, EMA_VALIDATE_ERROR_DATA,
                 "result 2 is 'b' measured but '" LONG_NAME_CUT "' simulated");
    g_clear_error(&error);
  }
}

static void test_judge(void) {
  g_autoptr(EmaExperiment) experiment = load_fixture();
  EmaOpsReport report = {0};
  EmaOpResult result = {0};
  EmaOpExpect by_time = {6500, 0, 0}; /* 6.5 us, the experiment's 5% */
  EmaOpExpect by_bandwidth = {0, 400e9, 0.001};
  result.seconds_ns = 6800; /* +4.6% */
  result.bandwidth = 398e9; /* -0.5% */
  ema_compare_judge(&result, &by_time, experiment, &report);
  g_assert_true(result.has_expect && result.expect_is_time && result.pass);
  g_assert_cmpfloat(fabs(result.error - 300.0 / 6500), <, 1e-12);
  g_assert_cmpfloat(result.tolerance, ==, 0.05);
  g_assert_cmpuint(report.failed, ==, 0);
  ema_compare_judge(&result, &by_bandwidth, experiment, &report);
  g_assert_false(result.expect_is_time);
  g_assert_false(result.pass);
  g_assert_cmpfloat(fabs(result.error + 0.005), <, 1e-12);
  g_assert_cmpuint(report.failed, ==, 1);
}

/* ---- summary.json ------------------------------------------------------------------ */

static void test_read_summary(void) {
  g_autoptr(EmaExperiment) experiment = load_fixture();
  g_autofree char *dir = ema_test_fixture("compare", "measured");
  GError *error = NULL;
  g_autoptr(EmaOpsReport) report = ema_compare_read_summary(dir, experiment, &error);
  const EmaOpResult *r;
  g_assert_no_error(error);
  g_assert_cmpuint(report->ops->len, ==, 3);
  r = &g_array_index(report->ops, EmaOpResult, 0);
  g_assert_true(r->name == g_array_index(experiment->ops, EmaOpSpec, 0).name);
  g_assert_true(r->spec == &g_array_index(experiment->ops, EmaOpSpec, 0));
  g_assert_cmpint(r->seconds_ns, ==, 10800000);
  g_assert_cmpfloat(fabs(r->bandwidth - 397.6755e9), <, 1);
  g_assert_true(r->has_expect && !r->expect_is_time && r->pass); /* 397.68 against 397 GB/s */
  r = &g_array_index(report->ops, EmaOpResult, 1);
  g_assert_cmpint(r->seconds_ns, ==, 20000);
  g_assert_false(r->has_expect);
  r = &g_array_index(report->ops, EmaOpResult, 2);
  g_assert_null(r->spec);
  g_assert_cmpstr(r->name, ==, "llama31-8b-local-1x1000");
  g_assert_cmpint(r->seconds_ns, ==, 4000000);
  g_assert_cmpuint(report->failed, ==, 0);
  g_assert_cmpint(report->simulated, ==, 10820000); /* the ops' times, not the decode's */
}

/* The fixture summary with FROM replaced by TO, in a new directory. */
static char *edited_summary(const char *from, const char *to) {
  g_autofree char *measured = ema_test_fixture("compare", "measured");
  g_autofree char *text = ema_test_read_file(measured, "summary.json");
  g_auto(GStrv) parts = g_strsplit(text, from, 2);
  g_autofree char *edited = NULL;
  char *dir = ema_test_temp_dir();
  g_assert_nonnull(parts[1]); /* FROM is in the fixture */
  edited = g_strjoin(to, parts[0], parts[1], NULL);
  write_text(dir, "summary.json", edited);
  return dir;
}

static void test_read_summary_errors(void) {
  const struct {
    const char *from, *to; /* NULL from: replace the whole file with TO */
    int code;
    const char *message;
  } cases[] = {
      {"\"compare-fixture\"", "\"another\"", EMA_VALIDATE_ERROR_DATA,
       "the results of experiment 'another', not 'compare-fixture'"},
      {"\"compare-fixture\"", "\"" LONG_NAME "\"", EMA_VALIDATE_ERROR_DATA,
       "the results of experiment '" LONG_NAME_CUT "', not 'compare-fixture'"},
      {"\"copy-both-1MiB\"", "\"" LONG_NAME "\"", EMA_VALIDATE_ERROR_DATA,
       "ops[1] is '" LONG_NAME_CUT "', but the experiment's op 2 is 'copy-both-1MiB'"},
      {"\"experiment\" : \"compare-fixture\",", "", EMA_VALIDATE_ERROR_DATA,
       "no \"experiment\" name"},
      {"\"ops\" :", "\"tenants\" :", EMA_VALIDATE_ERROR_DATA, "no \"ops\" list"},
      {"\"copy-both-1MiB\"", "\"copy-both-2MiB\"", EMA_VALIDATE_ERROR_DATA,
       "ops[1] is 'copy-both-2MiB', but the experiment's op 2 is 'copy-both-1MiB'"},
      {"\"llama31-8b-local-1x1000\"", "\"x\"", EMA_VALIDATE_ERROR_DATA,
       "the experiment's decode scenario 1 is 'llama31-8b-local-1x1000'"},
      {"\"seconds\" : 2e-05", "\"seconds\" : -1", EMA_VALIDATE_ERROR_DATA,
       "ops[1].seconds (copy-both-1MiB): missing or not a positive number"},
      {"\"seconds\" : 0.004", "\"seconds\" : \"4ms\"", EMA_VALIDATE_ERROR_DATA,
       "ops[2].seconds (llama31-8b-local-1x1000)"},
      /* 37#10: a huge time is not "no time" */
      {"\"seconds\" : 2e-05", "\"seconds\" : 1e20", EMA_VALIDATE_ERROR_DATA,
       "ops[1].seconds (copy-both-1MiB): 1e+20 s is longer than the simulator's clock counts"},
      {"\"bandwidth_gbps\" : 104.8576", "\"bw\" : 1", EMA_VALIDATE_ERROR_DATA,
       "ops[1].bandwidth_gbps (copy-both-1MiB)"},
      /* a time under the clock's 1 ns failed later as "takes no time", naming no file; a
       * bandwidth past 1 EB/s was "inf" in compare.csv */
      {"\"seconds\" : 2e-05", "\"seconds\" : 1e-15", EMA_VALIDATE_ERROR_DATA,
       "ops[1].seconds (copy-both-1MiB): 1e-15 s is shorter than the simulator's clock counts "
       "(1 ns)"},
      {"\"bandwidth_gbps\" : 104.8576", "\"bandwidth_gbps\" : 1e308", EMA_VALIDATE_ERROR_DATA,
       "ops[1].bandwidth_gbps (copy-both-1MiB): missing or not a number in 0..1e+09 (1 EB/s)"},
      {"\"name\" : \"copy-0to1-4GiB\",", "", EMA_VALIDATE_ERROR_DATA,
       "ops[0].name: missing or not a string"},
      {"    {\n      \"name\" : \"copy-both-1MiB\",\n      \"seconds\" : 2e-05,\n      "
       "\"bandwidth_gbps\" : 104.8576\n    },\n",
       "", EMA_VALIDATE_ERROR_DATA,
       "2 results, but experiment 'compare-fixture' has 2 ops and 1 decode scenario"},
      {NULL, "{\"experiment\": ", EMA_VALIDATE_ERROR_DATA, "summary.json"},
      {NULL, "[1, 2]", EMA_VALIDATE_ERROR_DATA, "not a summary"},
      /* json-glib's place in the text is the file's, not "<data>:..." */
      {NULL, "{\"experiment\": NaN}", EMA_VALIDATE_ERROR_DATA,
       "summary.json:1:18: Parse error: unexpected identifier `NaN'"},
      /* what json-glib would get wrong is refused first, at its line and column: an integer it
       * would wrap, a second value it would drop (the first one's experiment checked, the
       * second one's ops never read) */
      {NULL, "{\"experiment\": \"compare-fixture\", \"x\": 99999999999999999999}",
       EMA_VALIDATE_ERROR_DATA, "summary.json:1:40: integer out of range (beyond 64 bits)"},
      {NULL, "{\"experiment\": \"compare-fixture\"}\n{\"ops\": []}\n", EMA_VALIDATE_ERROR_DATA,
       "summary.json:2:1: text after the end of the JSON value"},
      /* a key given twice, of which json-glib would keep the last value: at the second one's
       * place, at the top or in one op (the ops side by side share their keys) */
      {"\"seed\" : 1,", "\"seed\" : 1,\n  \"seed\" : 2,", EMA_VALIDATE_ERROR_DATA,
       "summary.json:5:3: key \"seed\" given twice in one object"},
      {"\"bandwidth_gbps\" : 104.8576",
       "\"bandwidth_gbps\" : 104.8576,\n      \"bandwidth_gbps\" : 1", EMA_VALIDATE_ERROR_DATA,
       "summary.json:21:7: key \"bandwidth_gbps\" given twice in one object"},
  };
  g_autoptr(EmaExperiment) experiment = load_fixture();
  for (guint i = 0; i < G_N_ELEMENTS(cases); i++) {
    g_autofree char *dir = NULL;
    GError *error = NULL;
    if (cases[i].from) {
      dir = edited_summary(cases[i].from, cases[i].to);
    } else {
      dir = ema_test_temp_dir();
      write_text(dir, "summary.json", cases[i].to);
    }
    g_assert_null(ema_compare_read_summary(dir, experiment, &error));
    assert_error(error, cases[i].code, cases[i].message);
    g_clear_error(&error);
    ema_test_remove_tree(dir);
  }
}

/* The measured folder's resolved.yaml (what `ema-validate run` measured) checked against the
 * experiment as it is now: the same file reads back; an op's bytes, a decode scenario's batch
 * or the list of scenarios changed since (another version of the file, or --set) is refused by
 * name; a resolved.yaml that does not load is an error at its path */
static void test_read_summary_resolved(void) {
  const struct {
    const char *override; /* on the experiment as measured (NULL: as it is) */
    const char *message;  /* NULL: reads back */
  } cases[] = {
      {NULL, NULL},
      {"ops.1.flows.0.bytes=2MiB",
       "op 'copy-both-1MiB' was measured as it is written here, not as the experiment has it now"},
      {"decode.0.batch=2", "decode scenario 'llama31-8b-local-1x1000' was measured as it is "
                           "written here, not as the experiment has it now"},
      {"decode=[]", "other ops or decode scenarios than experiment 'compare-fixture' has"},
  };
  g_autoptr(EmaExperiment) experiment = load_fixture();
  g_autofree char *path = ema_test_fixture("compare", "experiment.yaml");
  for (guint i = 0; i < G_N_ELEMENTS(cases); i++) {
    const char *overrides[] = {cases[i].override, NULL};
    g_autofree char *dir = edited_summary("\"compare-fixture\"", "\"compare-fixture\"");
    GError *error = NULL;
    g_autoptr(EmaExperiment) measured = ema_experiment_load(path, overrides, &error);
    g_autoptr(EmaOpsReport) report = NULL;
    g_assert_no_error(error);
    g_assert_true(ema_output_write_resolved(dir, measured, &error));
    g_assert_no_error(error);
    report = ema_compare_read_summary(dir, experiment, &error);
    if (cases[i].message == NULL) {
      g_assert_no_error(error);
      g_assert_nonnull(report);
    } else {
      g_autofree char *resolved = g_build_filename(dir, "resolved.yaml", NULL);
      g_assert_null(report);
      assert_error(error, EMA_VALIDATE_ERROR_DATA, resolved);
      ema_test_assert_contains(error->message, cases[i].message);
      g_clear_error(&error);
    }
    ema_test_remove_tree(dir);
  }
  /* one that does not load */
  {
    g_autofree char *dir = edited_summary("\"compare-fixture\"", "\"compare-fixture\"");
    GError *error = NULL;
    write_text(dir, "resolved.yaml", "name: compare-fixture\nserver: no-such-server\n");
    g_assert_null(ema_compare_read_summary(dir, experiment, &error));
    assert_error(error, EMA_VALIDATE_ERROR_DATA, "resolved.yaml: does not load: ");
    g_clear_error(&error);
    ema_test_remove_tree(dir);
  }
}

/* Nesting deeper than json-glib's recursive parser takes is refused before it runs (it
 * overflowed the stack: a crash). */
static void test_read_summary_deep(void) {
  g_autoptr(EmaExperiment) experiment = load_fixture();
  g_autofree char *dir = ema_test_temp_dir();
  g_autoptr(GString) deep = g_string_new("{\"experiment\": \"compare-fixture\", \"x\": ");
  GError *error = NULL;
  for (int i = 0; i < 200000; i++)
    g_string_append_c(deep, '[');
  for (int i = 0; i < 200000; i++)
    g_string_append_c(deep, ']');
  g_string_append(deep, "}\n");
  write_text(dir, "summary.json", deep->str);
  g_assert_null(ema_compare_read_summary(dir, experiment, &error));
  assert_error(error, EMA_VALIDATE_ERROR_DATA,
               "summary.json:1:71: JSON nested deeper than 32 levels");
  g_clear_error(&error);
  ema_test_remove_tree(dir);
}

static void test_read_summary_missing(void) {
  g_autoptr(EmaExperiment) experiment = load_fixture();
  g_autofree char *dir = ema_test_temp_dir();
  g_autofree char *file = g_build_filename(dir, "summary.json", NULL);
  GError *error = NULL;
  g_assert_null(ema_compare_read_summary(dir, experiment, &error));
  assert_error(error, EMA_VALIDATE_ERROR_IO, "summary.json: no such file");
  ema_test_assert_contains(error->message, "ema-validate run FILE -o ");
  g_clear_error(&error);
  /* a file given as the folder is not told to measure into it */
  write_text(dir, "summary.json", "{}");
  g_assert_null(ema_compare_read_summary(file, experiment, &error));
  assert_error(error, EMA_VALIDATE_ERROR_IO,
               "summary.json: not a folder (the measurements are the folder ema-validate run -o "
               "wrote)");
  g_clear_error(&error);
  ema_test_remove_tree(dir);
}

#define SIMULATED_END                                                                              \
  ": an ema-sim result, not a measurement: give the folder ema-validate run -o wrote"

/* A summary.json that ema-sim wrote is refused as measurements, naming the member that tells it:
 * compared with the simulation of the same file it gave 0% everywhere. ema-sim run writes it
 * with ema_output_write_ops_summary, as here: its ops count simulated events (sim.events); one of
 * decode scenarios alone counts none, but carries "provenance" with no provenance.txt beside it
 * (which ema-validate run writes with every measurement: with one, the same file reads, as a
 * measured run of this version, events 0 and "provenance", does); an older result without
 * "provenance" still counts its events. The fixture (neither sign) reads (read-summary). */
static void test_read_summary_simulated(void) {
  g_autoptr(EmaExperiment) experiment = load_fixture();
  g_autofree char *path = ema_test_fixture("compare", "experiment.yaml");
  g_autofree char *measured = ema_test_fixture("compare", "measured");
  const char *const decode_only[] = {"ops=[]", NULL};
  GError *error = NULL;
  {
    g_autofree char *dir = ema_test_temp_dir();
    g_autofree char *summary = g_build_filename(dir, "summary.json", NULL);
    g_autoptr(EmaOpsReport) simulated = ema_ops_run(experiment, &error);
    g_autofree char *text = NULL, *want = NULL;
    guint64 events;
    g_assert_no_error(error);
    g_assert_true(ema_output_write_ops_summary(dir, experiment, simulated, 0.001, &error));
    g_assert_no_error(error);
    text = ema_test_read_file(dir, "summary.json");
    events = g_ascii_strtoull(strstr(strstr(text, "\"sim\" :"), "\"events\" : ") + 11, NULL, 10);
    g_assert_cmpuint(events, >, 0);
    want = g_strdup_printf("%s: sim.events: %" G_GUINT64_FORMAT
                           " events simulated (a measurement counts none)" SIMULATED_END,
                           summary, events);
    g_assert_null(ema_compare_read_summary(dir, experiment, &error));
    g_assert_error(error, EMA_VALIDATE_ERROR, EMA_VALIDATE_ERROR_DATA);
    g_assert_cmpstr(error->message, ==, want);
    g_clear_error(&error);
    ema_test_remove_tree(dir);
  }
  {
    g_autoptr(EmaExperiment) decodes = ema_experiment_load(path, decode_only, &error);
    g_autofree char *dir = ema_test_temp_dir();
    g_autofree char *summary = g_build_filename(dir, "summary.json", NULL);
    g_autofree char *want = NULL, *provenance = NULL;
    g_autoptr(EmaOpsReport) simulated = NULL, read = NULL;
    g_assert_no_error(error);
    simulated = ema_ops_run(decodes, &error);
    g_assert_no_error(error);
    g_assert_cmpuint(simulated->events, ==, 0);
    g_assert_true(ema_output_write_ops_summary(dir, decodes, simulated, 0.001, &error));
    g_assert_no_error(error);
    want = g_strdup_printf("%s: provenance: written without the provenance.txt that "
                           "ema-validate run writes beside every measurement" SIMULATED_END,
                           summary);
    g_assert_null(ema_compare_read_summary(dir, decodes, &error));
    g_assert_error(error, EMA_VALIDATE_ERROR, EMA_VALIDATE_ERROR_DATA);
    g_assert_cmpstr(error->message, ==, want);
    g_clear_error(&error);
    /* with the provenance.txt of a measurement beside it: read, as ema-validate run's is */
    provenance = ema_test_read_file(measured, "provenance.txt");
    write_text(dir, "provenance.txt", provenance);
    read = ema_compare_read_summary(dir, decodes, &error);
    g_assert_no_error(error);
    g_assert_cmpuint(read->ops->len, ==, 1);
    ema_test_remove_tree(dir);
  }
  {
    /* an ema-sim result of a version before "provenance": its events tell it */
    g_autofree char *dir = edited_summary("\"events\" : 0", "\"events\" : 3");
    g_autofree char *summary = g_build_filename(dir, "summary.json", NULL);
    g_autofree char *want = g_strdup_printf(
        "%s: sim.events: 3 events simulated (a measurement counts none)" SIMULATED_END, summary);
    g_assert_null(ema_compare_read_summary(dir, experiment, &error));
    g_assert_error(error, EMA_VALIDATE_ERROR, EMA_VALIDATE_ERROR_DATA);
    g_assert_cmpstr(error->message, ==, want);
    g_clear_error(&error);
    ema_test_remove_tree(dir);
  }
}

/* ---- compare.csv and compare.md ------------------------------------------------------- */

static void test_write(void) {
  g_autoptr(EmaExperiment) experiment = load_fixture();
  g_autofree char *measured_dir = ema_test_fixture("compare", "measured");
  g_autofree char *dir = ema_test_temp_dir();
  g_autofree char *csv = NULL, *md = NULL, *expected_row = NULL;
  GError *error = NULL;
  g_autoptr(EmaOpsReport) measured = ema_compare_read_summary(measured_dir, experiment, &error);
  g_autoptr(EmaOpsReport) simulated = ema_ops_run(experiment, &error);
  g_autoptr(EmaComparison) c = NULL;
  EmaCompareInfo info = {.experiment_file = "experiment.yaml",
                         .experiment_name = experiment->name,
                         .server_name = experiment->server.name,
                         .measured_dir = measured_dir,
                         .simulated_with = "libema (test)"};
  const EmaCompareRow *decode;
  char error_text[G_ASCII_DTOSTR_BUF_SIZE];
  g_assert_no_error(error);
  c = ema_comparison_new(measured, simulated, &error);
  g_assert_no_error(error);
  g_assert_true(ema_comparison_write(c, &info, dir, &error));
  g_assert_no_error(error);
  csv = ema_test_read_file(dir, "compare.csv");
  md = ema_test_read_file(dir, "compare.md");
  g_assert_true(g_str_has_prefix(
      csv, "name,kind,measured_s,simulated_s,measured_gb_s,simulated_gb_s,error_pct\n"));
  ema_test_assert_contains(csv, "\ncopy-0to1-4GiB,op,0.0108,");
  ema_test_assert_contains(csv, "\nllama31-8b-local-1x1000,decode,0.004,");
  /* the decode row's error is (simulated - 4 ms) / 4 ms, to 4 decimals of a percent */
  decode = &g_array_index(c->rows, EmaCompareRow, 2);
  g_assert_cmpfloat(fabs(decode->error - (decode->simulated_s - 0.004) / 0.004), <, 1e-12);
  g_ascii_formatd(error_text, sizeof error_text, "%.4f", 100 * decode->error);
  expected_row = g_strdup_printf(",%s\n", error_text);
  ema_test_assert_contains(csv, expected_row);
  ema_test_assert_contains(md, "# compare-fixture: the GPUs against the simulator");
  ema_test_assert_contains(md, "- experiment: `experiment.yaml` (server `h200x2`)");
  ema_test_assert_contains(md, "  - driver: 580.159.04");
  ema_test_assert_contains(md, "  - gpus: GPU0 NVIDIA H200");
  ema_test_assert_contains(md, "Ops: median |error| ");
  ema_test_assert_contains(md, "over 2 ops, largest ");
  ema_test_assert_contains(md, "Decode: median |error| ");
  ema_test_assert_contains(md, "| copy-both-1MiB | op | 20.00 us |");
  g_assert_true(ema_comparison_write(c, &info, "/nonexistent/dir", &error) == FALSE);
  assert_error(error, EMA_VALIDATE_ERROR_IO, "cannot write /nonexistent/dir/compare.csv");
  g_clear_error(&error);
  ema_test_remove_tree(dir);
}

static void test_provenance(void) {
  g_autofree char *dir = ema_test_fixture("compare", "measured");
  g_autofree char *text = ema_compare_provenance(dir);
  g_autofree char *empty = ema_test_temp_dir();
  g_assert_nonnull(text);
  g_assert_true(g_str_has_prefix(text, "date: 2026-11-29T23:07:00Z\n"));
  ema_test_assert_contains(text, "\nrepeats: 20\n");
  g_assert_null(ema_compare_provenance(empty));
  ema_test_remove_tree(empty);
}

/* `compare` measuring now claims its folder twice in one process, as run does (a run's entries,
 * CLEAR) then as compare does (its own, KEEP): both in ema-validate's kind, the marker listing
 * both. A folder recording ema-sim run's kind is taken only where it lists an entry that
 * ema-validate wrote (provenance.txt, compare.md: one claimed before the kind was its own), and
 * records ema-validate's kind after; an ema-sim run's folder is refused, named as ema-sim run's,
 * its files as they were. */
static void test_run_folder_claim(void) {
  g_autofree char *dir = ema_test_temp_dir();
  g_autofree char *measured = g_build_filename(dir, "measured", NULL);
  g_autofree char *former = g_build_filename(dir, "former", NULL);
  g_autofree char *simulated = g_build_filename(dir, "simulated", NULL);
  g_autofree char *former_provenance = g_build_filename(former, "provenance.txt", NULL);
  g_autofree char *want = NULL, *marker = NULL, *kept = NULL;
  static const char *const run_files[] = {"provenance.txt", "derived.csv", NULL};
  static const char *const compare_files[] = {"compare.csv", "compare.md", "sim", NULL};
  GError *error = NULL;
  g_assert_true(ema_output_claim_run_dir_as(measured, &ema_run_output_claim, run_files, &error));
  g_assert_no_error(error);
  g_assert_true(ema_output_claim_dir_as(measured, &ema_run_output_claim, compare_files,
                                        EMA_OUTPUT_CLAIM_KEEP, &error));
  g_assert_no_error(error);
  marker = ema_test_read_file(measured, ".ema-output");
  ema_test_assert_contains(marker, "\n# kind: " EMA_RUN_OUTPUT_KIND "\nsummary.json\n");
  ema_test_assert_contains(marker, "\nplots\nprovenance.txt\nderived.csv\ncompare.md\nsim\n");
  ema_output_release_dir(measured);
  g_free(marker);
  /* as run claimed its folder before: its files go, the kind is ema-validate's after */
  g_assert_cmpint(g_mkdir(former, 0755), ==, 0);
  write_text(former, ".ema-output", "# kind: run\nsummary.json\nprovenance.txt\n");
  write_text(former, "provenance.txt", "[run]\n");
  g_assert_true(ema_output_claim_run_dir_as(former, &ema_run_output_claim, run_files, &error));
  g_assert_no_error(error);
  g_assert_false(g_file_test(former_provenance, G_FILE_TEST_EXISTS));
  marker = ema_test_read_file(former, ".ema-output");
  ema_test_assert_contains(marker, "\n# kind: " EMA_RUN_OUTPUT_KIND "\n");
  /* an ema-sim run's */
  g_assert_true(ema_output_claim_dir(simulated, NULL, &error));
  g_assert_no_error(error);
  write_text(simulated, "summary.json", "{}\n");
  ema_output_release_dir(simulated);
  want = g_strdup_printf("output directory %s holds the output of ema-sim run (its .ema-output "
                         "says so), not of " EMA_RUN_OUTPUT_KIND
                         ": give another -o, or remove the folder first",
                         simulated);
  g_assert_false(ema_output_claim_dir_as(simulated, &ema_run_output_claim, compare_files,
                                         EMA_OUTPUT_CLAIM_KEEP, &error));
  g_assert_error(error, G_FILE_ERROR, G_FILE_ERROR_EXIST);
  g_assert_cmpstr(error->message, ==, want);
  g_clear_error(&error);
  kept = ema_test_read_file(simulated, "summary.json");
  g_assert_cmpstr(kept, ==, "{}\n");
  ema_test_remove_tree(dir);
}

int main(int argc, char **argv) {
  g_test_init(&argc, &argv, NULL);
  g_test_add_func("/validate/compare/maths", test_maths);
  g_test_add_func("/validate/compare/maths-empty-side", test_maths_empty_side);
  g_test_add_func("/validate/compare/maths-mismatch", test_maths_mismatch);
  g_test_add_func("/validate/compare/judge", test_judge);
  g_test_add_func("/validate/compare/read-summary", test_read_summary);
  g_test_add_func("/validate/compare/read-summary-errors", test_read_summary_errors);
  g_test_add_func("/validate/compare/read-summary-missing", test_read_summary_missing);
  g_test_add_func("/validate/compare/read-summary-deep", test_read_summary_deep);
  g_test_add_func("/validate/compare/read-summary-resolved", test_read_summary_resolved);
  g_test_add_func("/validate/compare/read-summary-simulated", test_read_summary_simulated);
  g_test_add_func("/validate/compare/write", test_write);
  g_test_add_func("/validate/compare/provenance", test_provenance);
  g_test_add_func("/validate/compare/run-folder-claim", test_run_folder_claim);
  return g_test_run();
}
