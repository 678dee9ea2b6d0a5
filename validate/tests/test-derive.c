/* test-derive.c: from raw results to a server model without a GPU
 * (validate/calderive.c, and the CSV reader of validate/report.c). The
 * provenance file and the CSV files read back what was written; bad files
 * answer with the file, line and key; the committed two-H200 results
 * (validate/results/2026-11-29-h200x2-calibrate) derive the committed model
 * (hwmodels/calibration/h200x2.yaml) line for line; a missing measurement
 * is named; the step-time keys are fitted to decode runs (decode.csv: the
 * committed runs give the committed keys, synthetic runs give back the
 * parameters they were made with, bad files and unusable runs are named);
 * a new calibration's results folder is claimed as every output folder is.
 * Nothing in the source tree is written: results are copied to a temporary
 * directory first. */
#include <math.h>
#include <string.h>

#include <glib/gstdio.h>

#include "calderive.h"
#include "compare.h"
#include "decodefit.h"
#include "ema/hw/hwmodel.h"
#include "ema/core/params.h"
#include "ema/run/output.h"
#include "errors.h"
#include "report.h"
#include "testutil.h"

#define RESULTS "validate/results/2026-11-29-h200x2-calibrate"
#define MODEL "hwmodels/calibration/h200x2.yaml"
/* a value longer than messages quote, and what they quote of it (40 bytes and "...") */
#define LONG_NAME "a-measurement-name-longer-than-any-message-quotes-whole"
#define LONG_NAME_CUT "a-measurement-name-longer-than-any-messa..."
#define LONG_NAME_CUT_39 "a-measurement-name-longer-than-any-mess"

static char *source_path(const char *relative) {
  return g_build_filename(g_getenv("EMA_SOURCE_ROOT"), relative, NULL);
}

static void write_text(const char *dir, const char *name, const char *text) {
  g_autofree char *path = g_build_filename(dir, name, NULL);
  g_assert_true(g_file_set_contents(path, text, -1, NULL));
}

/* A copy of the committed results in a new temporary directory. */
static char *copy_results(void) {
  g_autofree char *from = source_path(RESULTS);
  char *dir = ema_test_temp_dir();
  const char *const files[] = {"measurements.csv", "samples.csv", "provenance.txt", "decode.csv"};
  for (guint i = 0; i < G_N_ELEMENTS(files); i++) {
    g_autofree char *text = ema_test_read_file(from, files[i]);
    write_text(dir, files[i], text);
  }
  return dir;
}

static void assert_error(GError *error, int code, const char *part) {
  g_assert_nonnull(error);
  g_assert_error(error, EMA_VALIDATE_ERROR, code);
  ema_test_assert_contains(error->message, part);
}

/* ---- provenance.txt --------------------------------------------------------- */

static void test_run_round_trip(void) {
  g_autofree char *dir = ema_test_temp_dir();
  EmaCalibrationRun run = {
      .name = "test",
      .date = "2026-11-29T22:32:24Z",
      .command = "ema-validate calibrate --name 'a b'",
      .gpu_name = "NVIDIA H200",
      .gpu_list = "GPU0 NVIDIA H200; GPU1 NVIDIA H200",
      .driver_version = "580.159.04",
      .cuda_versions = "driver API 13.0, runtime 13.0",
      .results_dir = "results/x",
      .reference_name = "h200x2",
      .gpus = 2,
      .topology = EMA_TOPOLOGY_SWITCH,
      .hbm_capacity = G_GUINT64_CONSTANT(149572236083),
      .hbm_total = G_GUINT64_CONSTANT(150109106995),
      .matrix_flops = 989e12,
      .repeats = 20,
      .warmups = 3,
      .vmm_granularity_min = 2097152,
      .vmm_granularity_rec = 2097152,
      .overlap_chunks = 16,
      .overlap_chunk_bytes = 67108864,
      .remote_chase_steps = 10000,
      .local_chase_steps = 20000,
  };
  g_autoptr(EmaCalibrationRun) back = NULL;
  GError *error = NULL;
  g_assert_true(ema_calibration_run_save(&run, dir, &error));
  g_assert_no_error(error);
  back = ema_calibration_run_load(dir, &error);
  g_assert_no_error(error);
  g_assert_cmpstr(back->name, ==, run.name);
  g_assert_cmpstr(back->command, ==, run.command);
  g_assert_cmpstr(back->gpu_list, ==, run.gpu_list);
  g_assert_cmpstr(back->reference_name, ==, "h200x2");
  g_assert_cmpint(back->topology, ==, EMA_TOPOLOGY_SWITCH);
  g_assert_cmpuint(back->hbm_capacity, ==, run.hbm_capacity);
  g_assert_cmpfloat(back->matrix_flops, ==, 989e12);
  g_assert_cmpuint(back->overlap_chunk_bytes, ==, 67108864);
  g_assert_cmpuint(back->local_chase_steps, ==, 20000);
  ema_test_remove_tree(dir);
}

static void test_run_errors(void) {
  g_autofree char *dir = ema_test_temp_dir();
  g_autofree char *good =
      ema_test_read_file(g_getenv("EMA_SOURCE_ROOT"), RESULTS "/provenance.txt");
  const struct {
    const char *from, *to, *message;
  } cases[] = {
      /* each at the line of its key (GKeyFile names none) */
      {"topology=direct", "topology=ring",
       "provenance.txt:15: [calibration] topology: 'ring' is not direct, switch or pcie"},
      /* never half a character: "é" across bytes 40 and 41 is left out whole */
      {"topology=direct", "topology=" LONG_NAME_CUT_39 "\u00e9tail",
       "provenance.txt:15: [calibration] topology: '" LONG_NAME_CUT_39 "...' is not direct"},
      {"topology=direct", "topology=" LONG_NAME,
       "provenance.txt:15: [calibration] topology: '" LONG_NAME_CUT "' is not direct, switch or "
       "pcie"},
      {"gpus=2", "gpus=two", "provenance.txt:16: [calibration] gpus: not a whole number in range"},
      {"gpus=2", "gpus = 0", "provenance.txt:16: [calibration] gpus: must be positive"},
      {"matrix_flops=989000000000000", "matrix_flops=fast",
       "provenance.txt:27: [calibration] matrix_flops: 'fast' is not a positive number"},
      /* what strtod stops short of, or reads as no number, is not one either (1e15x was
       * read as 1e15; inf failed only in the derived model, at its own line) */
      {"matrix_flops=989000000000000", "matrix_flops=989e12x",
       "provenance.txt:27: [calibration] matrix_flops: '989e12x' is not a positive number"},
      {"matrix_flops=989000000000000", "matrix_flops=inf",
       "provenance.txt:27: [calibration] matrix_flops: 'inf' is not a positive number"},
      /* decimal only: strtod read 0x383...0 as 989e12 */
      {"matrix_flops=989000000000000", "matrix_flops=0x3837D81AED000",
       "provenance.txt:27: [calibration] matrix_flops: '0x3837D81AED000' is not a positive "
       "number"},
      {"name=h200x2\n", "", "provenance.txt: [calibration] name: "},
      /* a key given twice is refused at the second, naming the first (the last was kept) */
      {"gpus=2\n", "gpus=2\ngpus = 4\n",
       "provenance.txt:17: [calibration] gpus: given again (first at line 16)"},
      /* a value is one line: a line break in it would add lines to the model's header */
      {"gpu_list=GPU0", "gpu_list=GPU0\\n# injected\\nGPU0",
       "provenance.txt:10: [calibration] gpu_list: holds a control character (0x0A): a value "
       "is one line"},
      {"date=2026", "date=\\t2026",
       "provenance.txt:7: [calibration] date: holds a control character (0x09)"},
      /* the name is the default model file's: as --name */
      {"name=h200x2", "name=../h200x2",
       "provenance.txt:6: [calibration] name: '../h200x2' must be a non-empty file name without "
       "'/' or spaces"},
      {"name=h200x2", "name=",
       "provenance.txt:6: [calibration] name: '' must be a non-empty file name without '/' or "
       "spaces"},
      /* what the derivation cannot use */
      {"overlap_chunks=16", "overlap_chunks=0",
       "provenance.txt:23: [calibration] overlap_chunks: must be positive"},
      {"overlap_chunk_bytes=67108864", "overlap_chunk_bytes=0",
       "provenance.txt:24: [calibration] overlap_chunk_bytes: must be positive"},
      {"vmm_granularity_min=2097152", "vmm_granularity_min=0",
       "provenance.txt:21: [calibration] vmm_granularity_min: 0 is not a power of two"},
      {"vmm_granularity_min=2097152", "vmm_granularity_min=3000000",
       "provenance.txt:21: [calibration] vmm_granularity_min: 3000000 is not a power of two"},
      {"vmm_granularity_rec=2097152", "vmm_granularity_rec=3145728",
       "provenance.txt:22: [calibration] vmm_granularity_rec: 3145728 is not a power-of-two "
       "multiple of vmm_granularity_min (2097152)"},
      {"vmm_granularity_rec=2097152", "vmm_granularity_rec=65536",
       "provenance.txt:22: [calibration] vmm_granularity_rec: 65536 is not a power-of-two "
       "multiple of vmm_granularity_min (2097152)"},
      {"[calibration]", "[calibration", "provenance.txt: "},
  };
  GError *error = NULL;
  g_assert_null(ema_calibration_run_load(dir, &error));
  assert_error(error, EMA_VALIDATE_ERROR_IO, "provenance.txt");
  g_clear_error(&error);
  for (guint i = 0; i < G_N_ELEMENTS(cases); i++) {
    g_autofree char *text = NULL;
    g_auto(GStrv) parts = g_strsplit(good, cases[i].from, 2);
    g_assert_cmpuint(g_strv_length(parts), ==, 2);
    text = g_strjoin(cases[i].to, parts[0], parts[1], NULL);
    write_text(dir, "provenance.txt", text);
    g_assert_null(ema_calibration_run_load(dir, &error));
    assert_error(error, EMA_VALIDATE_ERROR_DATA, cases[i].message);
    g_clear_error(&error);
  }
  /* a NUL byte, at its place: GKeyFile cut the value there and read on */
  {
    g_autofree char *path = g_build_filename(dir, "provenance.txt", NULL);
    g_autofree char *text = g_strdup(good);
    char *name = strstr(text, "name=h200x2\n");
    g_assert_nonnull(name);
    name[strlen("name=h200")] = '\0'; /* name=h200<NUL>2 */
    g_assert_true(g_file_set_contents(path, text, (gssize) strlen(good), NULL));
    g_assert_null(ema_calibration_run_load(dir, &error));
    assert_error(error, EMA_VALIDATE_ERROR_DATA, "provenance.txt:6:10: a NUL byte");
    g_clear_error(&error);
  }
  ema_test_remove_tree(dir);
}

/* ---- CSV files ----------------------------------------------------------------- */

static void test_report_round_trip(void) {
  g_autoptr(EmaReport) report = ema_report_new();
  g_autoptr(EmaReport) back = NULL;
  g_autofree char *dir = ema_test_temp_dir();
  const double samples[] = {10e-6, 12.5e-6, 11e-6};
  const EmaMeasurement *m;
  GError *error = NULL;
  ema_report_add(report, "peer-copy", "copy, odd name", "gpu0", "gpu1", 4194304, 4194304.0, samples,
                 3);
  ema_report_add(report, "local", "empty-kernel", NULL, NULL, 0, 0, samples, 1);
  g_assert_true(ema_report_write_csv(report, dir, &error));
  back = ema_report_read_csv(dir, &error);
  g_assert_no_error(error);
  g_assert_cmpuint(ema_report_count(back), ==, 2);
  m = ema_report_find(back, "copy, odd name");
  g_assert_nonnull(m);
  g_assert_cmpstr(m->group, ==, "peer-copy");
  g_assert_cmpuint(m->bytes, ==, 4194304);
  g_assert_cmpuint(m->stats.n, ==, 3);
  g_assert_cmpfloat_with_epsilon(m->stats.median, 11e-6, 1e-15);
  /* the rate comes back through gb_per_s (2 decimals) */
  g_assert_cmpfloat(fabs(m->rate_bytes / m->stats.median - 4194304.0 / 11e-6), <, 0.01e9);
  g_assert_cmpfloat(ema_report_find(back, "empty-kernel")->rate_bytes, ==, 0);
  ema_test_remove_tree(dir);
}

static void test_report_read_errors(void) {
  g_autofree char *dir = ema_test_temp_dir();
  const char *header =
      "group,name,src,dst,bytes,repeats,median_us,min_us,q1_us,q3_us,max_us,spread_pct,gb_per_s\n";
  const char *row = "local,k,-,-,0,2,1.000,1.000,1.000,1.000,1.000,0.00,\n";
  const struct {
    const char *measurements, *samples, *message;
  } cases[] = {
      {"bad header\n", "name,repeat,us\n", "measurements.csv:1:1: the header is not"},
      {NULL, "name,repeat\n", "samples.csv:1:1: the header is not"},
      {"local,k,-,-,0\n", "name,repeat,us\nk,0,1.0\nk,1,1.0\n",
       "measurements.csv:2:14: 5 fields where the header has 13"},
      {"local,k,-,-,x,2,1,1,1,1,1,0,\n", "name,repeat,us\nk,0,1.0\nk,1,1.0\n",
       "measurements.csv:2:13: bytes is not a whole number in [0, 2^64)"},
      {"local,k,-,-,1e300,2,1,1,1,1,1,0,\n", "name,repeat,us\nk,0,1.0\nk,1,1.0\n",
       "measurements.csv:2:13: bytes is not a whole number in [0, 2^64)"},
      {"local,k,-,-,0,1e300,1,1,1,1,1,0,\n", "name,repeat,us\nk,0,1.0\nk,1,1.0\n",
       "measurements.csv:2:15: repeats is not a count"},
      /* a fraction is no count of bytes or repeats (it was cut off: 2.5 repeats read as 2) */
      {"local,k,-,-,4096.5,2,1,1,1,1,1,0,\n", "name,repeat,us\nk,0,1.0\nk,1,1.0\n",
       "measurements.csv:2:13: bytes is not a whole number in [0, 2^64)"},
      {"local,k,-,-,0,2.5,1,1,1,1,1,0,\n", "name,repeat,us\nk,0,1.0\nk,1,1.0\n",
       "measurements.csv:2:15: repeats is not a count"},
      {NULL, "name,repeat,us\nk,0,fast\n", "samples.csv:2:5: us is not a number"},
      {NULL, "name,repeat,us\nk,0,1.0\n",
       "measurements.csv:2:7: 'k' has 1 samples in samples.csv, not 2"},
      {NULL, "name,repeat,us\nother,0,1.0\n", "'k' has 0 samples"},
      /* a name is quoted cut at 40 bytes, a message of any name one readable line */
      {"local," LONG_NAME ",-,-,0,2,1,1,1,1,1,0,\n", "name,repeat,us\nk,0,1.0\n",
       "measurements.csv:2:7: '" LONG_NAME_CUT "' has 0 samples in samples.csv, not 2"},
  };
  GError *error = NULL;
  g_assert_null(ema_report_read_csv(dir, &error));
  assert_error(error, EMA_VALIDATE_ERROR_IO, "cannot read");
  g_clear_error(&error);
  for (guint i = 0; i < G_N_ELEMENTS(cases); i++) {
    g_autofree char *measurements = NULL;
    if (cases[i].measurements && strchr(cases[i].measurements, ',') == NULL)
      measurements = g_strdup(cases[i].measurements); /* a whole (bad) file */
    else
      measurements = g_strconcat(header, cases[i].measurements ? cases[i].measurements : row, NULL);
    write_text(dir, "measurements.csv", measurements);
    write_text(dir, "samples.csv", cases[i].samples);
    g_assert_null(ema_report_read_csv(dir, &error));
    assert_error(error, EMA_VALIDATE_ERROR_DATA, cases[i].message);
    g_clear_error(&error);
  }
  {
    g_autofree char *twice = g_strconcat(header, row, row, NULL);
    write_text(dir, "measurements.csv", twice);
    write_text(dir, "samples.csv", "name,repeat,us\nk,0,1.0\nk,1,1.0\n");
    g_assert_null(ema_report_read_csv(dir, &error));
    assert_error(error, EMA_VALIDATE_ERROR_DATA, "measurements.csv:3:7: 'k' appears twice");
    g_clear_error(&error);
  }
  ema_test_remove_tree(dir);
}

/* ---- deriving the committed model ---------------------------------------------- */

/* TEXT without its "# Derived again" line. */
static char *without_rederived_line(const char *text) {
  g_auto(GStrv) lines = g_strsplit(text, "\n", -1);
  GString *out = g_string_new(NULL);
  for (guint i = 0; lines[i]; i++) {
    if (g_str_has_prefix(lines[i], "# Derived again"))
      continue;
    g_string_append(out, lines[i]);
    if (lines[i + 1])
      g_string_append_c(out, '\n');
  }
  return g_string_free(out, FALSE);
}

static void test_committed_results(void) {
  g_autofree char *dir = copy_results();
  g_autofree char *output = g_build_filename(dir, "h200x2.yaml", NULL);
  g_autofree char *committed = ema_test_read_file(g_getenv("EMA_SOURCE_ROOT"), MODEL);
  g_autofree char *written = NULL, *a = NULL, *b = NULL, *derived = NULL;
  GError *error = NULL;
  g_assert_true(ema_calibration_from_results(dir, output, "test", NULL, NULL, &error));
  g_assert_no_error(error);
  written = ema_test_read_file(dir, "h200x2.yaml");
  a = without_rederived_line(committed);
  b = without_rederived_line(written);
  g_assert_cmpstr(b, ==, a);
  /* derived.csv was written next to the measurements */
  derived = ema_test_read_file(dir, "derived.csv");
  ema_test_assert_contains(derived, "\nlender-loss-per-pulled-byte,0.9560998");
  ema_test_assert_contains(derived, "\ndecode-kv-efficiency,0.585");
  ema_test_assert_contains(derived, "\nborrower-loss-per-incoming-byte,1.942247");
  ema_test_remove_tree(dir);
}

/* ---- the results folder ------------------------------------------------------------ */

/* What `calibrate --results DIR` does besides measuring: claim DIR (before the first
 * measurement), then write a new run's results there (after the last): the committed results
 * stand for the measurements; the model goes to MODEL. */
static gboolean calibrate_into(const char *dir, const char *model, GError **error) {
  g_autofree char *results = source_path(RESULTS);
  GError *local = NULL;
  g_autoptr(EmaCalibrationRun) run = ema_calibration_run_load(results, &local);
  g_autoptr(EmaReport) report = NULL;
  EmaCalibrationOutput out = {.results_dir = dir, .new_run = TRUE, .output = model};
  g_assert_no_error(local);
  report = ema_report_read_csv(results, &local);
  g_assert_no_error(local);
  return ema_calibration_claim_results(dir, error) &&
         ema_calibration_write_results(report, run, &out, error);
}

/* `calibrate --results DIR` claims DIR as every other output folder of ema-sim and ema-validate
 * is claimed (ema/run/output.h): it wrote its four files into any folder. An ema-sim run's
 * folder, an ema-validate run's, a sweep's and a folder no claim made are refused, every file in
 * them as it was and none of the four written, each refusal naming the command whose folder it
 * is (an ema-validate run's was "ema-sim run"'s) and the option to change, --results (it said
 * "give another -o", the model's option); its own folder is taken again, the earlier run's four
 * files removed before anything is measured (none of them left to pass for the new run's if it
 * fails) and what others put there (decode.csv, appended by `ema-validate decode --csv`; a
 * user's notes) left. */
static void test_claim_results(void) {
  g_autofree char *dir = ema_test_temp_dir();
  g_autofree char *run_dir = g_build_filename(dir, "run", NULL);
  g_autofree char *measured_dir = g_build_filename(dir, "measured", NULL);
  g_autofree char *sweep_dir = g_build_filename(dir, "sweep", NULL);
  g_autofree char *foreign = g_build_filename(dir, "foreign", NULL);
  g_autofree char *own = g_build_filename(dir, "own", NULL);
  g_autofree char *model = g_build_filename(dir, "model.yaml", NULL);
  g_autofree char *results = source_path(RESULTS);
  static const char *const sweep_entries[] = {"sweep.csv", NULL};
  const char *const *written = ema_calibration_results_entries;
  GError *error = NULL;
  /* an ema-sim run's folder and a sweep's, claimed as those commands claim them */
  g_assert_true(ema_output_claim_dir(run_dir, NULL, &error));
  g_assert_no_error(error);
  write_text(run_dir, "summary.json", "{}\n");
  ema_output_release_dir(run_dir);
  /* and an ema-validate run's, as run.c claims it */
  g_assert_true(ema_output_claim_run_dir_as(measured_dir, &ema_run_output_claim, NULL, &error));
  g_assert_no_error(error);
  write_text(measured_dir, "summary.json", "{}\n");
  ema_output_release_dir(measured_dir);
  g_assert_true(
      ema_output_claim_dir_kind(sweep_dir, "sweep", sweep_entries, EMA_OUTPUT_CLAIM_KEEP, &error));
  g_assert_no_error(error);
  write_text(sweep_dir, "sweep.csv", "point\n");
  ema_output_release_dir(sweep_dir);
  g_assert_cmpint(g_mkdir(foreign, 0755), ==, 0);
  write_text(foreign, "notes.txt", "mine\n");
  {
    const struct {
      const char *dir, *file, *text, *message;
    } cases[] = {
        {run_dir, "summary.json", "{}\n",
         "holds the output of ema-sim run (its .ema-output says so), not of ema-validate "
         "calibrate: give another --results, or remove the folder first"},
        {measured_dir, "summary.json", "{}\n",
         "holds the output of ema-validate run (its .ema-output says so), not of ema-validate "
         "calibrate: give another --results, or remove the folder first"},
        {sweep_dir, "sweep.csv", "point\n",
         "holds the output of ema-sim sweep (its .ema-output says so), not of ema-validate "
         "calibrate: give another --results, or remove the folder first"},
        {foreign, "notes.txt", "mine\n",
         "is not empty and not an ema-sim output folder (no .ema-output): give another "
         "--results, or empty it"},
    };
    for (guint i = 0; i < G_N_ELEMENTS(cases); i++) {
      g_autofree char *want =
          g_strdup_printf("output directory %s %s", cases[i].dir, cases[i].message);
      g_autofree char *kept = NULL;
      g_assert_false(calibrate_into(cases[i].dir, model, &error));
      g_assert_error(error, G_FILE_ERROR, G_FILE_ERROR_EXIST);
      g_assert_cmpstr(error->message, ==, want);
      g_clear_error(&error);
      kept = ema_test_read_file(cases[i].dir, cases[i].file);
      g_assert_cmpstr(kept, ==, cases[i].text);
      for (guint f = 0; written[f]; f++) {
        g_autofree char *path = g_build_filename(cases[i].dir, written[f], NULL);
        g_assert_false(g_file_test(path, G_FILE_TEST_EXISTS));
      }
    }
  }
  g_assert_false(g_file_test(model, G_FILE_TEST_EXISTS));
  /* its own folder: made, then taken again by the next run */
  g_assert_true(calibrate_into(own, model, &error));
  g_assert_no_error(error);
  {
    g_autofree char *marker = ema_test_read_file(own, ".ema-output");
    ema_test_assert_contains(marker, "# kind: ema-validate calibrate\nmeasurements.csv\n"
                                     "samples.csv\nderived.csv\nprovenance.txt\n");
  }
  ema_output_release_dir(own); /* (the first run's process ends) */
  {
    g_autofree char *decode = ema_test_read_file(results, "decode.csv");
    write_text(own, "decode.csv", decode);
    write_text(own, "notes.txt", "mine\n");
  }
  g_assert_true(ema_calibration_claim_results(own, &error));
  g_assert_no_error(error);
  for (guint f = 0; written[f]; f++) {
    g_autofree char *path = g_build_filename(own, written[f], NULL);
    g_assert_false(g_file_test(path, G_FILE_TEST_EXISTS));
  }
  g_free(ema_test_read_file(own, "decode.csv"));
  ema_output_release_dir(own);
  g_assert_true(calibrate_into(own, model, &error));
  g_assert_no_error(error);
  {
    g_autofree char *derived = ema_test_read_file(own, "derived.csv");
    g_autofree char *notes = ema_test_read_file(own, "notes.txt");
    /* the decode runs beside the measurements were fitted */
    ema_test_assert_contains(derived, "\ndecode-kv-efficiency,0.585");
    g_assert_cmpstr(notes, ==, "mine\n");
    for (guint f = 0; written[f]; f++)
      g_free(ema_test_read_file(own, written[f]));
  }
  ema_output_release_dir(own);
  ema_test_remove_tree(dir);
}

static void test_derive_figures(void) {
  g_autofree char *results = source_path(RESULTS);
  g_autoptr(EmaCalibrationRun) run = NULL;
  g_autoptr(EmaReport) report = NULL;
  EmaCalibrationFigures f;
  GError *error = NULL;
  run = ema_calibration_run_load(results, &error);
  g_assert_no_error(error);
  report = ema_report_read_csv(results, &error);
  g_assert_no_error(error);
  g_assert_true(ema_calibration_derive(report, run, &f, &error));
  g_assert_no_error(error);
  /* 4 GiB read in 929.7 us; 1 GiB pulls; ten thousand chased loads in 9.58 ms */
  g_assert_cmpfloat(fabs(f.hbm_bandwidth - 4.62e12), <, 0.01e12);
  g_assert_cmpuint(f.local_bytes, ==, G_GUINT64_CONSTANT(4294967296));
  g_assert_cmpuint(f.peer_min_bytes, ==, 4096);
  g_assert_cmpuint(f.peer_max_bytes, ==, G_GUINT64_CONSTANT(4294967296));
  g_assert_cmpuint(f.peer_push.points, ==, 22);
  g_assert_cmpuint(f.h2d.points, ==, 10);
  g_assert_cmpfloat(fabs(f.link_latency_s - 958e-9), <, 1e-9);
  g_assert_cmpuint(f.vmm.batch_slices, ==, 512);
  g_assert_cmpuint(f.vmm.single_repeats, ==, 50);
  g_assert_cmpuint(f.vmm.slice_bytes, ==, 2097152);
  g_assert_cmpfloat(f.interference.lender_kernel_by_peer_copy, >, 1);
  g_assert_cmpfloat(f.interference.overlap_hidden_fraction, >, 0.8);
  g_assert_cmpstr(f.name, ==, "h200x2");
  g_assert_null(f.rederived_command);
}

static void test_missing_measurement(void) {
  g_autofree char *results = source_path(RESULTS);
  g_autoptr(EmaCalibrationRun) run = ema_calibration_run_load(results, NULL);
  const char *const dropped[] = {"empty-kernel", "latency-gpu1-from-gpu0", "overlap-pipelined",
                                 "lender-vs-peer-copy-kernel-overlapped:kernel-together"};
  const char *const prefixes[] = {"local-read-gpu0-", "vmm-batch-map-",
                                  "peer-copy-both-directions-"};
  for (guint i = 0; i < G_N_ELEMENTS(dropped) + G_N_ELEMENTS(prefixes); i++) {
    g_autoptr(EmaReport) full = ema_report_read_csv(results, NULL);
    g_autoptr(EmaReport) partial = ema_report_new();
    EmaCalibrationFigures f;
    GError *error = NULL;
    gboolean by_name = i < G_N_ELEMENTS(dropped);
    const char *what = by_name ? dropped[i] : prefixes[i - G_N_ELEMENTS(dropped)];
    for (guint k = 0; k < ema_report_count(full); k++) {
      const EmaMeasurement *m = ema_report_get(full, k);
      if (by_name ? strcmp(m->name, what) == 0 : g_str_has_prefix(m->name, what))
        continue;
      ema_report_add(partial, m->group, m->name, m->src, m->dst, m->bytes, m->rate_bytes,
                     (const double *) m->samples->data, m->samples->len);
    }
    g_assert_false(ema_calibration_derive(partial, run, &f, &error));
    if (by_name) {
      g_autofree char *message = g_strdup_printf("the results have no measurement '%s'", what);
      assert_error(error, EMA_VALIDATE_ERROR_DATA, message);
    } else {
      assert_error(error, EMA_VALIDATE_ERROR_DATA, "the results have no measurement");
    }
    g_clear_error(&error);
  }
}

/* A measurement whose samples are all 0 us gives no rate or ratio (the
 * VMM read's rate was "inf" in a comment of the model). */
static void test_untimed_measurement(void) {
  g_autofree char *results = source_path(RESULTS);
  g_autoptr(EmaCalibrationRun) run = ema_calibration_run_load(results, NULL);
  const struct {
    const char *name, *quoted;
  } zeroed[] = {
      {"vmm-direct-read-gpu1-gpu0-1GiB", "vmm-direct-read-gpu1-gpu0-1GiB"},
      {"local-read-gpu0-4GiB", "local-read-gpu0-4GiB"},
      {"overlap-copies-alone", "overlap-copies-alone"},
      {"lender-vs-peer-copy-kernel-overlapped:kernel-alone",
       "lender-vs-peer-copy-kernel-overlapped:ke..."},
  };
  for (guint i = 0; i < G_N_ELEMENTS(zeroed); i++) {
    g_autoptr(EmaReport) full = ema_report_read_csv(results, NULL);
    g_autoptr(EmaReport) edited = ema_report_new();
    g_autofree char *message =
        g_strdup_printf("'%s' takes no time (median of its samples 0 us): no rate or ratio "
                        "comes of it",
                        zeroed[i].quoted);
    EmaCalibrationFigures f;
    GError *error = NULL;
    gboolean found = FALSE;
    for (guint k = 0; k < ema_report_count(full); k++) {
      const EmaMeasurement *m = ema_report_get(full, k);
      g_autoptr(GArray) samples = g_array_copy(m->samples);
      if (strcmp(m->name, zeroed[i].name) == 0) {
        memset(samples->data, 0, samples->len * sizeof(double));
        found = TRUE;
      }
      ema_report_add(edited, m->group, m->name, m->src, m->dst, m->bytes, m->rate_bytes,
                     (const double *) samples->data, samples->len);
    }
    g_assert_true(found);
    g_assert_false(ema_calibration_derive(edited, run, &f, &error));
    assert_error(error, EMA_VALIDATE_ERROR_DATA, message);
    g_clear_error(&error);
  }
}

/* Provenance values YAML would read otherwise (quotes, backslashes, a
 * name that is no plain scalar, a date of more than ASCII) round-trip into
 * the model's name and summary; the header's comments stay one line each. */
static void test_values_round_trip(void) {
  g_autofree char *dir = copy_results();
  g_autofree char *output = g_build_filename(dir, "model.yaml", NULL);
  g_autofree char *path = g_build_filename(dir, "provenance.txt", NULL);
  g_autofree char *text = ema_test_read_file(dir, "provenance.txt");
  g_autofree char *model = NULL;
  const struct {
    const char *from, *to;
  } edits[] = {
      {"name=h200x2", "name=h200\"x2:[a]#b"},
      {"gpu_name=NVIDIA H200", "gpu_name=NVIDIA \"H200\" \\\\x # not a comment"},
      {"date=2026-11-29T22:32:24Z", "date=2026-11-2\u00e9T22:32:24Z"},
      {"driver_version=580.159.04", "driver_version=580\u2028.159"},
  };
  EmaServerSpec *server;
  GError *error = NULL;
  for (guint i = 0; i < G_N_ELEMENTS(edits); i++) {
    g_auto(GStrv) parts = g_strsplit(text, edits[i].from, 2);
    g_assert_cmpuint(g_strv_length(parts), ==, 2);
    g_free(text);
    text = g_strjoin(edits[i].to, parts[0], parts[1], NULL);
  }
  g_assert_true(g_file_set_contents(path, text, -1, NULL));
  ema_calibration_from_results(dir, output, "test", NULL, NULL, &error);
  g_assert_no_error(error);
  server = ema_params_load_file(&ema_server_params, output, &error);
  g_assert_no_error(error);
  g_assert_cmpstr(server->name, ==, "h200\"x2:[a]#b");
  g_assert_cmpstr(server->summary, ==,
                  "2x NVIDIA \"H200\" \\x # not a comment, calibrated by ema-validate on "
                  "2026-11-2\u00e9 (measured)");
  ema_params_free(&ema_server_params, server);
  model = ema_test_read_file(dir, "model.yaml");
  ema_test_assert_contains(model, "\n# Driver: 580\\u2028.159; CUDA ");
  ema_test_remove_tree(dir);
}

/* ---- the step-time keys from decode runs ------------------------------------------ */

static GPtrArray *read_rows(const char *dir, GError **error) {
  g_autofree char *path = g_build_filename(dir, "decode.csv", NULL);
  return ema_decode_rows_read(path, error);
}

static void test_decode_fit_committed(void) {
  g_autofree char *results = source_path(RESULTS);
  GError *error = NULL;
  g_autoptr(GPtrArray) rows = read_rows(results, &error);
  EmaStepFigures s;
  g_assert_no_error(error);
  g_assert_cmpuint(rows->len, ==, 17);
  /* the matrix rate of the reference h200x2: 989 TFLOP/s at the default 79.7% */
  g_assert_true(ema_decode_fit(rows, 4.62e12, 989e12 * 0.797, &s, &error));
  g_assert_no_error(error);
  g_assert_true(s.fitted);
  g_assert_cmpstr(s.model, ==, "llama-3.1-8b");
  g_assert_cmpuint(s.layers, ==, 32);
  g_assert_cmpuint(s.weight_runs, ==, 16); /* the one run without a CUDA graph is left out */
  g_assert_cmpuint(s.kv_runs, ==, 7);
  g_assert_cmpfloat(fabs(s.hbm_efficiency - 0.9231), <, 0.0005);
  g_assert_cmpfloat(fabs(s.kv_efficiency - 0.5853), <, 0.0005);
  g_assert_cmpfloat(fabs(s.layer_overhead_s - 16.54e-6), <, 0.01e-6);
  g_assert_false(s.intercept_clamped);
  g_assert_cmpfloat(s.step_residual_s, <, 0);
  g_assert_cmpfloat(s.step_overhead_s, ==, 0);
  /* the weight passes take 3.51-3.52 ms from 1 to 64 sequences (c/m up to 0.35 at 64): far
   * sharper than the default 1.25, which gives +20% at 64 */
  g_assert_true(s.p_fitted);
  g_assert_cmpuint(s.p_runs, ==, 16);
  g_assert_cmpuint(s.p_max_batch, ==, 64);
  g_assert_cmpfloat(s.roofline_p, >, 3);
  g_assert_cmpfloat(s.p_max_rel_error, <, 0.01);
}

#define DECODE_HEADER                                                                              \
  "extra,model,batch,context,mode,remote_fraction,step_ms_median,weights_ms,attention_ms,"         \
  "weight_gb,kv_local_gb,kv_remote_gb,launch,peer_pull_gb_s\n"

/* A row of the synthetic runs: weights at 4 TB/s, attention 32 x 10 us +
 * KV at 2 TB/s, the step 20 us more than both (times in ms). */
static char *synthetic_row(const char *model, const char *mode, double weight_gb, double kv_gb,
                           const char *launch, double pull) {
  double weights = weight_gb / 4e12 * 1e12;
  double attention = 0.32 + kv_gb / 2e12 * 1e12;
  char numbers[4][G_ASCII_DTOSTR_BUF_SIZE];
  g_ascii_formatd(numbers[0], sizeof numbers[0], "%.9g", weights + attention + 0.02);
  g_ascii_formatd(numbers[1], sizeof numbers[1], "%.9g", weights);
  g_ascii_formatd(numbers[2], sizeof numbers[2], "%.9g", attention);
  g_ascii_formatd(numbers[3], sizeof numbers[3], "%.9g", kv_gb);
  return g_strdup_printf("x,%s,8,1000,%s,0,%s,%s,%s,%g,%s,0,%s,%g\n", model, mode, numbers[0],
                         numbers[1], numbers[2], weight_gb, numbers[3], launch, pull);
}

static char *synthetic_csv(gboolean negative_intercept) {
  GString *text = g_string_new(DECODE_HEADER);
  const double kv[] = {1, 2, 4, 8};
  for (guint i = 0; i < G_N_ELEMENTS(kv); i++) {
    g_autofree char *row = synthetic_row("llama-3.1-8b", "local", 15, kv[i], "graph", 0);
    g_string_append(text, row);
  }
  {
    /* left out: stream launches (graph runs exist), pulled runs; another model's local run
     * counts for the weight rate only */
    g_autofree char *stream = g_strdup("x,llama-3.1-8b,8,1000,local,0,99,99,99,15,3,0,stream,0\n");
    g_autofree char *pulled = g_strdup("x,llama-3.1-8b,8,1000,local,0,99,99,99,15,5,0,graph,390\n");
    g_autofree char *other = synthetic_row("llama-2-7b", "local", 13, 8, "graph", 0);
    g_autofree char *direct = synthetic_row("llama-3.1-8b", "direct", 15, 6, "graph", 0);
    g_string_append(text, stream);
    g_string_append(text, pulled);
    g_string_append(text, other);
    g_string_append(text, direct);
  }
  if (negative_intercept) { /* attention shorter than the line at small KV: through 0 */
    g_string_truncate(text, strlen(DECODE_HEADER));
    g_string_append(text, "x,llama-3.1-8b,8,1000,local,0,4,3.75,0.1,15,1,0,graph,0\n"
                          "x,llama-3.1-8b,8,1000,local,0,5,3.75,1.0,15,4,0,graph,0\n");
  }
  return g_string_free(text, FALSE);
}

static void test_decode_fit_synthetic(void) {
  g_autofree char *dir = ema_test_temp_dir();
  g_autofree char *text = synthetic_csv(FALSE);
  g_autoptr(GPtrArray) rows = NULL;
  EmaStepFigures s;
  GError *error = NULL;
  write_text(dir, "decode.csv", text);
  rows = read_rows(dir, &error);
  g_assert_no_error(error);
  g_assert_cmpuint(rows->len, ==, 8);
  g_assert_cmpfloat(((EmaDecodeRow *) rows->pdata[5])->peer_pull_gb_s, ==, 390);
  g_assert_true(ema_decode_fit(rows, 5e12, 0, &s, &error));
  g_assert_no_error(error);
  g_assert_cmpuint(s.weight_runs, ==, 6);
  g_assert_cmpuint(s.kv_runs, ==, 4);
  g_assert_false(s.p_fitted); /* no matrix rate given */
  g_assert_cmpfloat(fabs(s.weight_rate / 4e12 - 1), <, 1e-6);
  g_assert_cmpfloat(fabs(s.hbm_efficiency - 0.8), <, 1e-6);
  g_assert_cmpfloat(fabs(s.kv_rate / 2e12 - 1), <, 1e-6);
  g_assert_cmpfloat(fabs(s.kv_efficiency - 0.5), <, 1e-6);
  g_assert_cmpfloat(fabs(s.layer_overhead_s - 10e-6), <, 1e-11);
  g_assert_cmpfloat(fabs(s.step_overhead_s - 20e-6), <, 1e-10);
  g_assert_cmpfloat(s.kv_max_rel_error, <, 1e-6);
  ema_test_remove_tree(dir);
}

static void test_decode_fit_clamped(void) {
  g_autofree char *dir = ema_test_temp_dir();
  g_autofree char *text = synthetic_csv(TRUE);
  g_autoptr(GPtrArray) rows = NULL;
  EmaStepFigures s;
  GError *error = NULL;
  write_text(dir, "decode.csv", text);
  rows = read_rows(dir, &error);
  /* batch 8 of 15 GB at 4 TB/s: c / m = 15e9 x 8 / 1e15 / 3.75e-3 = 0.032, under a tenth */
  g_assert_true(ema_decode_fit(rows, 5e12, 1e15, &s, &error));
  g_assert_false(s.p_fitted);
  g_assert_true(s.intercept_clamped);
  g_assert_cmpfloat(s.layer_overhead_s, ==, 0);
  /* through the origin: slope = sum(x y) / sum(x x) = (0.1 + 4) / 17 ms per GB */
  g_assert_cmpfloat(fabs(s.kv_rate - 17 / 4.1 * 1e12), <, 1e3);
  ema_test_remove_tree(dir);
}

/* Weight passes of 16 GB at 4 TB/s (m = 4 ms) whose time follows the roofline with p = 4 at
 * 500 TFLOP/s (c = 16e9 x B / 5e14: 0.032 ms a sequence): five runs of one sequence give the
 * weight rate (c / m = 0.008: 1 + 0.008^4 / 4 of m), and runs of 64, 128 and 256 sequences
 * (c / m = 0.51, 1.02, 2.05) tell p, which the fit finds within its grid's step. */
static void test_decode_fit_roofline_p(void) {
  g_autofree char *dir = ema_test_temp_dir();
  GString *text = g_string_new(DECODE_HEADER);
  g_autoptr(GPtrArray) rows = NULL;
  const guint batches[] = {1, 1, 1, 1, 1, 64, 128, 256};
  EmaStepFigures s;
  GError *error = NULL;
  for (guint i = 0; i < G_N_ELEMENTS(batches); i++) {
    double c = 16e9 * batches[i] / 5e14, m = 16e9 / 4e12;
    double big = MAX(c, m), small = MIN(c, m);
    double weights_ms = big * pow(1 + pow(small / big, 4), 0.25) * 1e3;
    char number[G_ASCII_DTOSTR_BUF_SIZE];
    g_ascii_formatd(number, sizeof number, "%.12g", weights_ms);
    /* (attention 0.5 ms a GB of KV: the attention line rises) */
    g_string_append_printf(text, "x,llama-3.1-8b,%u,1000,local,0,9,%s,%u,16,%u,0,graph,0\n",
                           batches[i], number, 1 + i, 2 + 2 * i);
  }
  write_text(dir, "decode.csv", text->str);
  g_string_free(text, TRUE);
  rows = read_rows(dir, &error);
  g_assert_no_error(error);
  g_assert_true(ema_decode_fit(rows, 5e12, 5e14, &s, &error));
  g_assert_no_error(error);
  g_assert_true(s.p_fitted);
  g_assert_cmpuint(s.p_runs, ==, 8);
  g_assert_cmpuint(s.p_max_batch, ==, 256);
  g_assert_cmpfloat(fabs(s.roofline_p - 4), <, 0.01);
  g_assert_cmpfloat(s.p_max_rel_error, <, 1e-3); /* the grid's step */
  ema_test_remove_tree(dir);
}

static void test_decode_fit_errors(void) {
  const struct {
    const char *csv;
    int code;
    const char *message;
  } cases[] = {
      {DECODE_HEADER "x,llama-3.1-8b,8,1000,local,0,5,3.5,1.5,15,4,0,graph,0\n"
                     "x,llama-3.1-8b,16,500,local,0,5,3.5,1.5,15,4,0,graph,0\n",
       EMA_VALIDATE_ERROR_FIT, "at two KV sizes at least (found 2 runs)"},
      {DECODE_HEADER "x,llama-3.1-8b,8,1000,direct,0.5,5,3.5,1.5,15,4,4,graph,0\n",
       EMA_VALIDATE_ERROR_FIT, "no all-local run"},
      {DECODE_HEADER "x,llama-3.1-8b,8,1000,local,0,5,0,1.5,15,4,0,graph,0\n",
       EMA_VALIDATE_ERROR_FIT, "no run with a timed weight pass"},
      {DECODE_HEADER "x,no-such-model,8,1000,local,0,5,3.5,1.5,15,4,0,graph,0\n"
                     "x,no-such-model,8,1000,local,0,5,3.5,2.5,15,8,0,graph,0\n",
       EMA_CONFIG_ERROR_INVALID, "the model of the KV line"},
      {DECODE_HEADER "x,llama-3.1-8b,8,1000,local,0,5,3.5,2.5,15,4,0,graph,0\n"
                     "x,llama-3.1-8b,8,1000,local,0,5,3.5,1.5,15,8,0,graph,0\n",
       EMA_VALIDATE_ERROR_FIT, "does not grow with its KV bytes"},
  };
  for (guint i = 0; i < G_N_ELEMENTS(cases); i++) {
    g_autofree char *dir = ema_test_temp_dir();
    g_autoptr(GPtrArray) rows = NULL;
    EmaStepFigures s;
    GError *error = NULL;
    write_text(dir, "decode.csv", cases[i].csv);
    rows = read_rows(dir, &error);
    g_assert_no_error(error);
    g_assert_false(ema_decode_fit(rows, 5e12, 0, &s, &error));
    g_assert_nonnull(error);
    if (cases[i].code == EMA_CONFIG_ERROR_INVALID)
      g_assert_true(error->domain != EMA_VALIDATE_ERROR);
    else
      g_assert_error(error, EMA_VALIDATE_ERROR, cases[i].code);
    ema_test_assert_contains(error->message, cases[i].message);
    g_clear_error(&error);
    ema_test_remove_tree(dir);
  }
}

static void test_decode_rows_errors(void) {
  const struct {
    const char *csv;
    int code;
    const char *message;
  } cases[] = {
      {"model,batch\n", EMA_VALIDATE_ERROR_DATA,
       "decode.csv:1:1: the header has no column 'context'"},
      {DECODE_HEADER "x,llama-3.1-8b,8,1000,local\n", EMA_VALIDATE_ERROR_DATA,
       "decode.csv:2:28: 5 fields where the header has 14"},
      /* each at its field, named (all were "LINE:1: a number is missing, malformed or
       * negative"), and what was read as something else without a word: a mode or launch of
       * another name (read as neither local nor graph), a fraction past 1, negative KV */
      {DECODE_HEADER "\nx,llama-3.1-8b,8,1000,local,0,5,3.5,fast,15,4,0,graph,0\n",
       EMA_VALIDATE_ERROR_DATA, "decode.csv:3:37: attention_ms: 'fast' is not a number >= 0"},
      {DECODE_HEADER "x,llama-3.1-8b,0,1000,local,0,5,3.5,1,15,4,0,graph,0\n",
       EMA_VALIDATE_ERROR_DATA, "decode.csv:2:16: batch: '0' is not a count in 1..4294967295"},
      {DECODE_HEADER "x,llama-3.1-8b,8,1000,sideways,0,5,3.5,1,15,4,0,graph,0\n",
       EMA_VALIDATE_ERROR_DATA,
       "decode.csv:2:23: mode: 'sideways' is not local, direct or prefetch"},
      {DECODE_HEADER "x,llama-3.1-8b,8,1000,local,0,5,3.5,1,15,4,0,graf,0\n",
       EMA_VALIDATE_ERROR_DATA, "decode.csv:2:46: launch: 'graf' is not graph or stream"},
      {DECODE_HEADER "x,llama-3.1-8b,8,1000,direct,1.5,5,3.5,1,15,4,0,graph,0\n",
       EMA_VALIDATE_ERROR_DATA,
       "decode.csv:2:30: remote_fraction: '1.5' is not a number in [0, 1]"},
      {DECODE_HEADER "x,llama-3.1-8b,8,1000,local,0,5,3.5,1,15,4,-1,graph,0\n",
       EMA_VALIDATE_ERROR_DATA, "decode.csv:2:44: kv_remote_gb: '-1' is not a number >= 0"},
      {DECODE_HEADER "x,llama-3.1-8b,8,1000,local,0,5,3.5,1,15,4,0,"
                     "graphgraphgraphgraphgraphgraphgraphgraphgraph,0\n",
       EMA_VALIDATE_ERROR_DATA,
       "decode.csv:2:46: launch: 'graphgraphgraphgraphgraphgraphgraphgraph...' is not graph or "
       "stream"},
      {NULL, EMA_VALIDATE_ERROR_IO, "cannot read"},
  };
  for (guint i = 0; i < G_N_ELEMENTS(cases); i++) {
    g_autofree char *dir = ema_test_temp_dir();
    GError *error = NULL;
    if (cases[i].csv)
      write_text(dir, "decode.csv", cases[i].csv);
    g_assert_null(read_rows(dir, &error));
    assert_error(error, cases[i].code, cases[i].message);
    g_clear_error(&error);
    ema_test_remove_tree(dir);
  }
}

/* --from-results with decode runs writes the step-time keys, and the model
 * loads with them; a directory without decode.csv leaves them out. */
static void test_decode_keys_written(void) {
  g_autofree char *dir = copy_results();
  g_autofree char *output = g_build_filename(dir, "model.yaml", NULL);
  g_autofree char *csv = synthetic_csv(FALSE);
  g_autofree char *text = NULL;
  EmaServerSpec *server;
  GError *error = NULL;
  write_text(dir, "decode.csv", csv);
  g_assert_true(ema_calibration_from_results(dir, output, "test", NULL, NULL, &error));
  g_assert_no_error(error);
  text = ema_test_read_file(dir, "model.yaml");
  ema_test_assert_contains(text, "\n  kv_efficiency: 50%");
  ema_test_assert_contains(text, "\n  layer_overhead: 10us");
  ema_test_assert_contains(text, "\n  step_overhead: 20us");
  server = ema_params_load_file(&ema_server_params, output, &error);
  g_assert_no_error(error);
  /* 4 TB/s over the measured 4.62 TB/s (rounded as written) */
  g_assert_cmpfloat(fabs(server->gpu.hbm_efficiency - 0.8658), <, 1e-6);
  g_assert_cmpfloat(fabs(server->gpu.kv_efficiency - 0.5), <, 1e-9);
  g_assert_cmpint(server->gpu.layer_overhead, ==, 10000);
  g_assert_cmpint(server->gpu.step_overhead, ==, 20000);
  ema_params_free(&ema_server_params, server);

  {
    g_autofree char *path = g_build_filename(dir, "decode.csv", NULL);
    g_autofree char *without = NULL;
    g_remove(path);
    g_assert_true(ema_calibration_from_results(dir, output, "test", NULL, NULL, &error));
    without = ema_test_read_file(dir, "model.yaml");
    g_assert_null(strstr(without, "\n  kv_efficiency:"));
    ema_test_assert_contains(without, "layer_overhead, step_overhead: not fitted");
  }
  ema_test_remove_tree(dir);
}

int main(int argc, char **argv) {
  g_test_init(&argc, &argv, NULL);
  g_test_add_func("/validate/derive/run-round-trip", test_run_round_trip);
  g_test_add_func("/validate/derive/run-errors", test_run_errors);
  g_test_add_func("/validate/derive/report-round-trip", test_report_round_trip);
  g_test_add_func("/validate/derive/report-read-errors", test_report_read_errors);
  g_test_add_func("/validate/derive/committed-results", test_committed_results);
  g_test_add_func("/validate/derive/claim-results", test_claim_results);
  g_test_add_func("/validate/derive/figures", test_derive_figures);
  g_test_add_func("/validate/derive/missing-measurement", test_missing_measurement);
  g_test_add_func("/validate/derive/untimed-measurement", test_untimed_measurement);
  g_test_add_func("/validate/derive/values-round-trip", test_values_round_trip);
  g_test_add_func("/validate/derive/decode-fit-committed", test_decode_fit_committed);
  g_test_add_func("/validate/derive/decode-fit-synthetic", test_decode_fit_synthetic);
  g_test_add_func("/validate/derive/decode-fit-clamped", test_decode_fit_clamped);
  g_test_add_func("/validate/derive/decode-fit-roofline-p", test_decode_fit_roofline_p);
  g_test_add_func("/validate/derive/decode-fit-errors", test_decode_fit_errors);
  g_test_add_func("/validate/derive/decode-rows-errors", test_decode_rows_errors);
  g_test_add_func("/validate/derive/decode-keys-written", test_decode_keys_written);
  return g_test_run();
}
