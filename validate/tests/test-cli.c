/* test-cli.c: the ema-validate command line, run as a real program (its
 * path in EMA_VALIDATE) on a machine that may have no GPU: --help and
 * --version, every usage error (exit 2, the message and a pointer to
 * --help, all before any CUDA call), and the failure when no CUDA device is
 * visible (CUDA_VISIBLE_DEVICES empty, or no driver at all): one line
 * "ema-validate: no CUDA device: ..." and exit 1, never a crash, and
 * nothing written; and `calibrate --from-results` and `compare --measured`,
 * which need no GPU. Misuse: an option of one value given twice, empty names,
 * -o into another command's folder, a 1 TiB dry-run pool, ema-sim's results given to
 * compare --measured as measurements; errors at a place start with it, as ema-sim's do. */
#include <fcntl.h>
#include <glib/gstdio.h>
#include <string.h>
#include <sys/file.h>
#include <sys/stat.h>
#include <unistd.h>

#include "testutil.h"

#define FIXTURE_EXPERIMENT "validate/tests/fixtures/compare/experiment.yaml"
#define FIXTURE_MEASURED "validate/tests/fixtures/compare/measured"

static const char *program(void) {
  const char *path = g_getenv("EMA_VALIDATE");
  if (path == NULL || !g_file_test(path, G_FILE_TEST_IS_EXECUTABLE))
    g_error("EMA_VALIDATE must name the ema-validate executable (got %s)", path ? path : "nothing");
  return path;
}

/* Run ema-validate with ARGS (NULL-terminated) in EMA_SOURCE_ROOT, without
 * the user's model paths; HIDE_DEVICES empties CUDA_VISIBLE_DEVICES. */
static EmaTestRun *run_validate(gboolean hide_devices, const char *const *args) {
  const char *const edits[] = {"EMA_HWMODEL_PATH", "EMA_LLM_PATH",
                               hide_devices ? "CUDA_VISIBLE_DEVICES=" : NULL, NULL};
  g_autoptr(GPtrArray) argv = g_ptr_array_new();
  g_ptr_array_add(argv, (gpointer) program());
  for (guint i = 0; args[i] != NULL; i++)
    g_ptr_array_add(argv, (gpointer) args[i]);
  g_ptr_array_add(argv, NULL);
  return ema_test_run((const char *const *) argv->pdata, g_getenv("EMA_SOURCE_ROOT"), edits);
}

/* cli("decode", "--help", NULL): ema-validate with these arguments. */
#define cli(...) run_validate(FALSE, (const char *const[]){__VA_ARGS__})
#define cli_without_devices(...) run_validate(TRUE, (const char *const[]){__VA_ARGS__})

/* A usage error: exit 2, stderr "ema-validate: MESSAGE" (containing PART)
 * then the pointer to --help, nothing on stdout. */
static void assert_usage_error(const EmaTestRun *run, const char *part) {
  ema_test_assert_failed(run, 2, "ema-validate: ");
  ema_test_assert_contains(run->err, part);
  g_assert_true(g_str_has_suffix(run->err, "\nTry 'ema-validate --help'.\n"));
  g_assert_cmpstr(run->out, ==, "");
}

static void test_help(void) {
  g_autoptr(EmaTestRun) help = cli("--help", NULL);
  g_autoptr(EmaTestRun) short_help = cli("-h", NULL);
  g_autoptr(EmaTestRun) version = cli("--version", NULL);
  g_autoptr(EmaTestRun) decode_help = cli("decode", "--help", NULL);
  g_autoptr(EmaTestRun) calibrate_help = cli("calibrate", "--help", NULL);
  g_autoptr(EmaTestRun) devices_help = cli("devices", "--help", NULL);
  g_assert_cmpint(help->status, ==, 0);
  /* every command answers --help (devices took it for an argument: a usage error) */
  g_assert_cmpint(devices_help->status, ==, 0);
  g_assert_true(g_str_has_prefix(devices_help->out, "usage: ema-validate devices\n"));
  g_assert_cmpstr(devices_help->err, ==, "");
  ema_test_assert_contains(help->out, "Usage: ema-validate COMMAND [OPTIONS]");
  ema_test_assert_contains(help->out, "calibrate [-o FILE]");
  ema_test_assert_contains(help->out, "decode --model NAME --batch B --context C");
  ema_test_assert_contains(help->out, "devices");
  ema_test_assert_contains(help->out, "run FILE [-o DIR]");
  ema_test_assert_contains(help->out, "compare FILE [--measured DIR]");
  g_assert_cmpstr(help->err, ==, "");
  g_assert_cmpint(short_help->status, ==, 0);
  g_assert_cmpstr(short_help->out, ==, help->out);
  g_assert_cmpint(version->status, ==, 0);
  g_assert_true(g_str_has_prefix(version->out, "ema-validate "));
  g_assert_cmpint(decode_help->status, ==, 0);
  ema_test_assert_contains(decode_help->out, "ema-validate decode");
  ema_test_assert_contains(decode_help->out, "--remote-fraction=F");
  ema_test_assert_contains(decode_help->out, "--prefetch-depth=LAYERS");
  g_assert_cmpint(calibrate_help->status, ==, 0);
  ema_test_assert_contains(calibrate_help->out, "--quick");
  ema_test_assert_contains(calibrate_help->out, "--topology=KIND");
}

static void test_usage_errors(void) {
  const struct {
    const char *args[12];
    const char *message;
  } cases[] = {
      {{NULL}, "missing COMMAND"},
      {{"frobnicate"},
       "unknown command 'frobnicate' (known: calibrate, capture, compare, decode, devices, pool, "
       "profile, run)"},
      {{"capture", "-o", "d"}, "capture: no program (-- COMMAND [ARGS...])"},
      {{"capture", "--", "true"}, "capture: -o DIR is required"},
      {{"capture", "-o", "d", "extra", "--", "true"}, "capture: options first, then --"},
      {{"capture", "-o", "d", "--buffers", "1", "--", "true"},
       "--buffers: '1' is not a whole number in 2..1024"},
      {{"capture", "-o", "d", "--buffer-mb", "999", "--", "true"},
       "--buffer-mb: '999' is not a whole number in 1..256"},
      {{"profile"}, "profile: -o DIR is required"},
      {{"profile", "-o", "d", "x"}, "profile takes no arguments besides its options"},
      {{"profile", "-o", "d", "--workload", "/nonexistent/w.py"},
       "--workload: /nonexistent/w.py: no such file"},
      /* found before the folder is claimed (its earlier profile went, then the run failed) */
      {{"profile", "-o", "d", "--python", "/nonexistent/python3"},
       "--python: '/nonexistent/python3' is not a program (a path, or a name on PATH)"},
      {{"devices", "extra"}, "usage: ema-validate devices"},
      /* each of --seconds and --tick named on its own (a bad --tick was called --seconds') */
      {{"pool", "--seconds", "0.5"},
       "--seconds: '0.5' is not a duration of 1s..1h (a bare number is seconds: 20 or 20s)"},
      {{"pool", "--tick", "0"},
       "--tick: '0' is not a duration of 1ms..a tenth of --seconds (2 s "
       "here)"},
      {{"pool", "--seconds", "5", "--tick", "1s"},
       "--tick: '1s' is not a duration of 1ms..a tenth of --seconds (0.5 s here)"},
      /* an empty folder name read the working directory's summary.json as the measurements */
      {{"compare", "experiments/calibration/h200x2-baseline.yaml", "--measured", ""},
       "--measured: the folder's name is empty: give the folder ema-validate run -o wrote"},
      {{"decode"}, "decode needs --model, --batch and --context"},
      {{"decode", "--model", "llama-3.1-8b", "--batch", "1"},
       "decode needs --model, --batch and --context"},
      {{"decode", "--model", "llama-3.1-8b", "--batch", "x", "--context", "10"},
       "--batch: 'x' is not a whole number in 1..2147483647"},
      {{"decode", "--model", "llama-3.1-8b", "--batch", "0", "--context", "10"},
       "--batch: '0' is not a whole number in 1..2147483647"},
      {{"decode", "--model", "llama-3.1-8b", "--batch", "1", "--context", "-5"},
       "--context: '-5' is not a whole number"},
      {{"decode", "--model", "llama-3.1-8b", "--batch", "70000", "--context", "10"},
       "--batch: 70000 is outside 1..65536"},
      {{"decode", "--model", "llama-3.1-8b", "--batch", "1", "--context", "200000"},
       "--context: 200000 is outside 1..131072 (llama-3.1-8b's max_context)"},
      {{"decode", "--model", "nosuch", "--batch", "1", "--context", "10"},
       "--model: unknown model 'nosuch' (known: "},
      {{"decode", "--model", "llama-3.1-8b", "--batch", "1", "--context", "10", "--server",
        "nosuch"},
       "--server: unknown hardware model 'nosuch' (known: "},
      {{"decode", "--model", "llama-3.1-8b", "--batch", "1", "--context", "10", "--remote-fraction",
        "0.5"},
       "--remote-fraction 0.5 needs --mode direct or --mode prefetch"},
      {{"decode", "--model", "llama-3.1-8b", "--batch", "1", "--context", "10", "--remote-fraction",
        "half", "--mode", "direct"},
       "--remote-fraction: 'half' is not a fraction (0.25 or 25%)"},
      {{"decode", "--model", "llama-3.1-8b", "--batch", "1", "--context", "10", "--remote-fraction",
        "150%", "--mode", "direct"},
       "--remote-fraction: 1.5 is outside 0..1"},
      {{"decode", "--model", "llama-3.1-8b", "--batch", "1", "--context", "10", "--mode",
        "sideways"},
       "--mode: unknown mode 'sideways' (known: local, direct, prefetch)"},
      {{"decode", "--model", "llama-3.1-8b", "--batch", "1", "--context", "10", "--prefetch-depth",
        "2"},
       "--prefetch-depth applies to --mode prefetch only"},
      {{"decode", "--model", "llama-3.1-8b", "--batch", "1", "--context", "10", "--mode",
        "prefetch", "--prefetch-depth", "32"},
       "--prefetch-depth: 32 is outside 1..31 (layers - 1)"},
      {{"decode", "--model", "llama-3.1-8b", "--batch", "1", "--context", "10", "--repeats", "0"},
       "--repeats: '0' is not a whole number in 1..10000"},
      {{"decode", "--model", "llama-3.1-8b", "--batch", "1", "--context", "10", "--warmups", "-1"},
       "--warmups: '-1' is not a whole number in 0..1000"},
      {{"decode", "--model", "llama-3.1-8b", "--batch", "1", "--context", "10", "extra"},
       "decode takes no arguments besides its options"},
      {{"decode", "--bogus"}, "Unknown option --bogus"},
      {{"calibrate", "extra"}, "calibrate takes no arguments besides its options"},
      {{"calibrate", "--topology", "ring"},
       "--topology: unknown topology 'ring' (known: direct, switch, pcie)"},
      {{"calibrate", "--repeats", "0"}, "--repeats: '0' is not a whole number in 1..10000"},
      /* a file for the results' directory: refused before the GPUs are measured (it failed
       * when their CSV files were written) */
      {{"calibrate", "--results", "validate/README.md", "--quick"},
       "--results: 'validate/README.md' is not a directory: give the directory for the CSV "
       "files"},
      {{"calibrate", "--name", "a/b"},
       "--name: 'a/b' must be a non-empty file name without '/' or spaces"},
      {{"calibrate", "--reference", "nosuch"},
       "--reference: unknown hardware model 'nosuch' (known: "},
      {{"calibrate", "--from-results", "somewhere", "--quick"},
       "--from-results takes only -o and --reference"},
      {{"calibrate", "--from-results", "somewhere", "--name", "x"},
       "--from-results takes only -o and --reference"},
      {{"run"}, "run needs an experiment FILE"},
      {{"run", "a.yaml", "b.yaml"}, "run takes one experiment FILE"},
      {{"run", "a.yaml", "--repeats", "0"}, "--repeats: '0' is not a whole number in 1..10000"},
      {{"run", "a.yaml", "--warmups", "x"}, "--warmups: 'x' is not a whole number in 0..1000"},
      {{"run", "--bogus"}, "Unknown option --bogus"},
      {{"compare"}, "compare needs an experiment FILE"},
      {{"compare", "a.yaml", "b.yaml"}, "compare takes one experiment FILE"},
      {{"compare", "a.yaml", "--measured", "d", "--repeats", "5"},
       "--repeats, --warmups and --no-verify are for measuring now, not with --measured"},
      {{"compare", "a.yaml", "--measured", "d", "--no-verify"},
       "--repeats, --warmups and --no-verify are for measuring now"},
      /* an empty name: the working directory's files were read (or a GPU was looked for first,
       * and the name refused once one was found) */
      {{"run", ""}, "run: the experiment FILE's name is empty"},
      {{"compare", "", "--measured", "d"}, "compare: the experiment FILE's name is empty"},
      {{"run", "a.yaml", "-o", ""}, "the output directory's name is empty: give a folder (-o DIR)"},
      {{"compare", "a.yaml", "-o", ""}, "the output directory's name is empty"},
      {{"pool", "-o", ""}, "the output directory's name is empty"},
      {{"capture", "-o", "", "--", "true"}, "the output directory's name is empty"},
      {{"profile", "-o", ""}, "the output directory's name is empty"},
      {{"profile", "-o", "d", "--from-capture", ""},
       "--from-capture: the folder's name is empty: give the folder capture -o wrote"},
      {{"calibrate", "--from-results", ""},
       "--from-results: the folder's name is empty: give the results directory calibrate wrote"},
      /* found before a GPU is looked for: a program that is not there (capture claimed its
       * folder, an earlier capture's, then failed to start it), the lender's decode in `pool`
       * (found after the folder was claimed), a --csv in no folder (after the GPU ran) */
      {{"capture", "-o", "d", "--", "/nonexistent/program"},
       "capture: '/nonexistent/program' is not a program (a path, or a name on PATH)"},
      {{"pool", "--context", "200000"},
       "--context: 200000 is outside 1..131072 (llama-3.1-8b's max_context)"},
      {{"decode", "--model", "llama-3.1-8b", "--batch", "1", "--context", "16", "--csv",
        "/nonexistent/decode.csv"},
       "--csv: '/nonexistent/decode.csv': no folder /nonexistent to write it in"},
  };
  for (guint i = 0; i < G_N_ELEMENTS(cases); i++) {
    g_autoptr(EmaTestRun) run = run_validate(FALSE, cases[i].args); /* args[11] is NULL */
    assert_usage_error(run, cases[i].message);
  }
}

/* The one-line "no CUDA device" failure. */
static void assert_no_device(const EmaTestRun *run) {
  ema_test_assert_failed(run, 1, "ema-validate: no CUDA device: cudaGetDeviceCount");
}

static void test_no_device(void) {
  g_autofree char *dir = ema_test_temp_dir();
  g_autofree char *yaml = NULL, *results = NULL, *csv = NULL;
  yaml = g_build_filename(dir, "model.yaml", NULL);
  results = g_build_filename(dir, "results", NULL);
  csv = g_build_filename(dir, "decode.csv", NULL);
  {
    g_autoptr(EmaTestRun) devices = cli_without_devices("devices", NULL);
    g_autoptr(EmaTestRun) decode = cli_without_devices(
        "decode", "--model", "llama-3.1-8b", "--batch", "1", "--context", "16", "--csv", csv, NULL);
    g_autoptr(EmaTestRun) remote =
        cli_without_devices("decode", "--model", "llama-3.1-8b", "--batch", "1", "--context", "16",
                            "--remote-fraction", "25%", "--mode", "prefetch", NULL);
    g_autoptr(EmaTestRun) calibrate =
        cli_without_devices("calibrate", "-o", yaml, "--results", results, "--quick", NULL);
    g_autoptr(EmaTestRun) run = cli_without_devices("run", FIXTURE_EXPERIMENT, "-o", results, NULL);
    g_autoptr(EmaTestRun) compare =
        cli_without_devices("compare", FIXTURE_EXPERIMENT, "-o", results, NULL);
    assert_no_device(devices);
    assert_no_device(decode);
    assert_no_device(remote);
    assert_no_device(calibrate);
    assert_no_device(run);
    assert_no_device(compare);
    g_assert_cmpstr(decode->out, ==, "");
  }
  /* nothing was written */
  g_assert_false(g_file_test(yaml, G_FILE_TEST_EXISTS));
  g_assert_false(g_file_test(results, G_FILE_TEST_EXISTS));
  g_assert_false(g_file_test(csv, G_FILE_TEST_EXISTS));
  ema_test_remove_tree(dir);
}

/* run and compare: a file that does not load, or is not for them, exits 1
 * with one line. */
static void test_run_errors(void) {
  const struct {
    const char *file;
    const char *message;
  } cases[] = {
      {"no/such/file.yaml", "no/such/file.yaml"},
      {"experiments/h200x8-azure-conv.yaml",
       "serves tenants: ema-validate runs ops and decode scenarios"},
  };
  for (guint i = 0; i < G_N_ELEMENTS(cases); i++) {
    g_autoptr(EmaTestRun) run =
        cli_without_devices("run", cases[i].file, "-o", "/nonexistent", NULL);
    g_autoptr(EmaTestRun) compare =
        cli_without_devices("compare", cases[i].file, "--measured", "/nonexistent", NULL);
    const EmaTestRun *both[] = {run, compare};
    for (guint k = 0; k < 2; k++) {
      ema_test_assert_failed(both[k], 1, "ema-validate: ");
      ema_test_assert_contains(both[k]->err, cases[i].message);
    }
  }
}

/* compare --measured reads a saved summary.json: no GPU needed. */
static void test_compare_measured(void) {
  g_autofree char *dir = ema_test_temp_dir();
  g_autofree char *empty = ema_test_temp_dir();
  const char *const written[] = {"compare.csv", "compare.md", "sim/summary.json",
                                 "sim/resolved.yaml"};
  {
    g_autoptr(EmaTestRun) run = cli_without_devices("compare", FIXTURE_EXPERIMENT, "--measured",
                                                    FIXTURE_MEASURED, "-o", dir, NULL);
    g_autoptr(EmaTestRun) missing =
        cli_without_devices("compare", FIXTURE_EXPERIMENT, "--measured", empty, NULL);
    if (run->status != 0)
      g_error("exit %d: %s", run->status, run->err);
    ema_test_assert_contains(run->out, "compare-fixture on h200x2: measured (" FIXTURE_MEASURED
                                       ") against simulated");
    ema_test_assert_contains(run->out, "copy-both-1MiB          op         20.00 us");
    ema_test_assert_contains(run->out, "ops: median |error| ");
    ema_test_assert_contains(run->out, "decode: median |error| ");
    g_assert_cmpint(missing->status, ==, 1);
    ema_test_assert_contains(missing->err, "summary.json: no such file: measure first");
  }
  for (guint i = 0; i < G_N_ELEMENTS(written); i++) {
    g_autofree char *path = g_build_filename(dir, written[i], NULL);
    g_assert_true(g_file_test(path, G_FILE_TEST_EXISTS));
  }
  ema_test_remove_tree(dir);
  ema_test_remove_tree(empty);
}

#define SIMULATED_END                                                                              \
  ": an ema-sim result, not a measurement: give the folder ema-validate run -o wrote\n"

/* compare --measured DIR where DIR is what `ema-sim run` wrote (a simulation of the same file,
 * which compared as measurements at 0% everywhere) is refused: exit 1, one line naming the file
 * and the member that tells it (sim.events for ops, "provenance" without a provenance.txt for
 * decode scenarios alone), nothing written. */
static void test_compare_simulated(void) {
  g_autofree char *dir = ema_test_temp_dir();
  g_autofree char *sim = g_build_filename(dir, "sim-run", NULL);
  g_autofree char *decodes = g_build_filename(dir, "sim-decodes", NULL);
  g_autofree char *out = g_build_filename(dir, "out", NULL);
  g_autofree char *text = NULL, *want = NULL, *want_decodes = NULL;
  guint64 events;
  {
    g_autoptr(EmaTestRun) run = ema_test_cli("run", FIXTURE_EXPERIMENT, "-o", sim, NULL);
    g_autoptr(EmaTestRun) decode_run =
        ema_test_cli("run", FIXTURE_EXPERIMENT, "--set", "ops=[]", "-o", decodes, NULL);
    g_assert_cmpint(run->status, ==, 0);
    g_assert_cmpint(decode_run->status, ==, 0);
  }
  text = ema_test_read_file(sim, "summary.json");
  events = g_ascii_strtoull(strstr(strstr(text, "\"sim\" :"), "\"events\" : ") + 11, NULL, 10);
  g_assert_cmpuint(events, >, 0);
  want = g_strdup_printf("%s/summary.json: sim.events: %" G_GUINT64_FORMAT
                         " events simulated (a measurement counts none)" SIMULATED_END,
                         sim, events);
  want_decodes = g_strdup_printf("%s/summary.json: provenance: written without the "
                                 "provenance.txt that ema-validate run writes beside every "
                                 "measurement" SIMULATED_END,
                                 decodes);
  {
    g_autoptr(EmaTestRun) run =
        cli_without_devices("compare", FIXTURE_EXPERIMENT, "--measured", sim, "-o", out, NULL);
    g_autoptr(EmaTestRun) decode_run = cli_without_devices(
        "compare", FIXTURE_EXPERIMENT, "--set", "ops=[]", "--measured", decodes, "-o", out, NULL);
    g_assert_cmpint(run->status, ==, 1);
    g_assert_cmpstr(run->err, ==, want);
    g_assert_cmpstr(run->out, ==, "");
    g_assert_cmpint(decode_run->status, ==, 1);
    g_assert_cmpstr(decode_run->err, ==, want_decodes);
    g_assert_cmpstr(decode_run->out, ==, "");
  }
  g_assert_false(g_file_test(out, G_FILE_TEST_EXISTS));
  ema_test_remove_tree(dir);
}

/* An error of exit status 1 starts with its place where it has one (file:line:col, --set:N:M,
 * or a file or folder that is there), else with "ema-validate: ", by ema-sim's rule (one
 * function, ema_message_located): "ema-validate: " went before every error, a place too. */
static void test_error_prefix(void) {
  g_autoptr(EmaTestRun) file =
      cli_without_devices("run", "tests/fixtures/experiments/malformed.yaml", NULL);
  g_autoptr(EmaTestRun) set =
      cli_without_devices("run", FIXTURE_EXPERIMENT, "--set", "server.gpus=0", NULL);
  g_autoptr(EmaTestRun) key = cli_without_devices(
      "compare", FIXTURE_EXPERIMENT, "--set", "ops.0.nme=x", "--measured", FIXTURE_MEASURED, NULL);
  g_autoptr(EmaTestRun) twice =
      cli_without_devices("run", FIXTURE_EXPERIMENT, "--set", "seed=1", "--set", "seed=2", NULL);
  g_autoptr(EmaTestRun) missing =
      cli_without_devices("run", "tests/fixtures/experiments/does-not-exist.yaml", NULL);
  g_autoptr(EmaTestRun) device = cli_without_devices("devices", NULL);
  ema_test_assert_error_line(file, "tests/fixtures/experiments/malformed.yaml:8:5: ");
  ema_test_assert_error_line(set, "--set:1:13: server.gpus: ");
  g_assert_cmpstr(set->err, ==, "--set:1:13: server.gpus: 0 is out of range [1, 1024]\n");
  /* a key set twice (the last was taken unsaid), as ema-sim refuses it */
  g_assert_cmpstr(twice->err, ==, "--set:2:1: seed: --set 1 sets it already: give each key once\n");
  g_assert_cmpint(twice->status, ==, 1);
  ema_test_assert_error_line(key, "--set:1:7: ops.0.nme: ");
  g_assert_cmpstr(key->err, ==,
                  "--set:1:7: ops.0.nme: unknown key in op (valid keys: name, flows, expect)\n");
  /* a file that is not there is no place: the program's name goes first */
  ema_test_assert_error_line(missing,
                             "ema-validate: tests/fixtures/experiments/does-not-exist.yaml: ");
  assert_no_device(device);
}

/* compare --measured with another server than the measured run's experiment named (its
 * provenance.txt's h200x2): compared, with a note on stderr and in compare.md; the same server
 * gives none. */
static void test_compare_other_server(void) {
  g_autofree char *dir = ema_test_temp_dir();
  g_autofree char *md_path = g_build_filename(dir, "compare.md", NULL);
  {
    g_autofree char *md = NULL;
    g_autoptr(EmaTestRun) other =
        cli_without_devices("compare", FIXTURE_EXPERIMENT, "--measured", FIXTURE_MEASURED, "-o",
                            dir, "--set", "server=h200x8-hgx", NULL);
    if (other->status != 0)
      g_error("exit %d: %s", other->status, other->err);
    ema_test_assert_contains(other->err, "ema-validate: note: " FIXTURE_MEASURED
                                         " was measured under server 'h200x2'; simulating with "
                                         "'h200x8-hgx'");
    g_assert_true(g_file_get_contents(md_path, &md, NULL, NULL));
    ema_test_assert_contains(md,
                             "- **measured under server `h200x2`, simulated with `h200x8-hgx`**");
  }
  {
    g_autofree char *md = NULL;
    g_autoptr(EmaTestRun) same = cli_without_devices("compare", FIXTURE_EXPERIMENT, "--measured",
                                                     FIXTURE_MEASURED, "-o", dir, NULL);
    g_assert_cmpint(same->status, ==, 0);
    g_assert_null(strstr(same->err, "note:"));
    g_assert_true(g_file_get_contents(md_path, &md, NULL, NULL));
    g_assert_null(strstr(md, "measured under server"));
  }
  ema_test_remove_tree(dir);
}

/* compare --measured against results whose resolved.yaml (the measured run's) holds other ops
 * than the experiment as given now (a --set, an edited file) is refused naming the op: names
 * alone let a different measurement through; the same ops compare. */
static void test_compare_other_ops(void) {
  g_autofree char *dir = ema_test_temp_dir();
  g_autofree char *measured = g_build_filename(dir, "measured", NULL);
  g_autofree char *out = g_build_filename(dir, "out", NULL);
  static const char *const files[] = {"summary.json", "provenance.txt"};
  g_assert_true(g_mkdir_with_parents(measured, 0755) == 0);
  for (guint i = 0; i < G_N_ELEMENTS(files); i++) {
    g_autofree char *from =
        g_build_filename(g_getenv("EMA_SOURCE_ROOT"), FIXTURE_MEASURED, files[i], NULL);
    g_autofree char *to = g_build_filename(measured, files[i], NULL);
    g_autofree char *text = NULL;
    g_assert_true(g_file_get_contents(from, &text, NULL, NULL));
    g_assert_true(g_file_set_contents(to, text, -1, NULL));
  }
  {
    /* the run's resolved.yaml: the experiment as it was measured */
    g_autofree char *from = g_build_filename(g_getenv("EMA_SOURCE_ROOT"), FIXTURE_EXPERIMENT, NULL);
    g_autofree char *to = g_build_filename(measured, "resolved.yaml", NULL);
    g_autofree char *text = NULL;
    g_assert_true(g_file_get_contents(from, &text, NULL, NULL));
    g_assert_true(g_file_set_contents(to, text, -1, NULL));
  }
  {
    g_autoptr(EmaTestRun) same =
        cli_without_devices("compare", FIXTURE_EXPERIMENT, "--measured", measured, "-o", out, NULL);
    g_autoptr(EmaTestRun) other =
        cli_without_devices("compare", FIXTURE_EXPERIMENT, "--measured", measured, "-o", out,
                            "--set", "ops.1.flows.0.bytes=2MiB", NULL);
    if (same->status != 0)
      g_error("exit %d: %s", same->status, same->err);
    g_assert_cmpint(other->status, ==, 1);
    ema_test_assert_contains(other->err,
                             "resolved.yaml: op 'copy-both-1MiB' was measured as it is written "
                             "here, not as the experiment has it now");
  }
  {
    /* a resolved.yaml that is not a file does not pass the check unread */
    g_autofree char *resolved = g_build_filename(measured, "resolved.yaml", NULL);
    const char *const kinds[] = {"a FIFO", "a directory"};
    for (guint i = 0; i < G_N_ELEMENTS(kinds); i++) {
      g_assert_cmpint(g_remove(resolved), ==, 0);
      g_assert_cmpint(i == 0 ? mkfifo(resolved, 0600) : g_mkdir(resolved, 0755), ==, 0);
      g_autoptr(EmaTestRun) run = cli_without_devices("compare", FIXTURE_EXPERIMENT, "--measured",
                                                      measured, "-o", out, NULL);
      g_autofree char *want = g_strdup_printf("not a regular file (%s)", kinds[i]);
      /* at its place, the resolved.yaml that is there: no "ema-validate: " before it */
      ema_test_assert_error_line(run, resolved);
      ema_test_assert_contains(run->err, "resolved.yaml: does not load: ");
      ema_test_assert_contains(run->err, want);
    }
  }
  {
    /* a summary.json that is not a file: named once (its path was given twice), at its place
     * (no "ema-validate: " before a path that is there) */
    g_autofree char *summary = g_build_filename(measured, "summary.json", NULL);
    g_autofree char *want = g_strconcat(summary, ": not a regular file (a directory)\n", NULL);
    g_assert_cmpint(g_remove(summary), ==, 0);
    g_assert_cmpint(g_mkdir(summary, 0755), ==, 0);
    g_autoptr(EmaTestRun) run =
        cli_without_devices("compare", FIXTURE_EXPERIMENT, "--measured", measured, "-o", out, NULL);
    g_assert_cmpint(run->status, ==, 1);
    g_assert_cmpstr(run->err, ==, want);
  }
  ema_test_remove_tree(dir);
}

/* 37#14: compare -o into a folder with a user's compare.md refuses it, as
 * ema-sim run would, and leaves the file as it was. */
static void test_compare_user_file(void) {
  g_autofree char *dir = ema_test_temp_dir();
  g_autofree char *mine = g_build_filename(dir, "compare.md", NULL);
  g_autofree char *text = NULL;
  g_assert_true(g_file_set_contents(mine, "my notes\n", -1, NULL));
  {
    g_autoptr(EmaTestRun) run = cli_without_devices("compare", FIXTURE_EXPERIMENT, "--measured",
                                                    FIXTURE_MEASURED, "-o", dir, NULL);
    g_assert_cmpint(run->status, ==, 1);
    ema_test_assert_contains(run->err, "compare.md exists and is not ema-sim's");
  }
  g_assert_true(g_file_get_contents(mine, &text, NULL, NULL));
  g_assert_cmpstr(text, ==, "my notes\n");
  ema_test_remove_tree(dir);
}

/* DIR/NAME holds TEXT, written by the user. */
static char *user_file(const char *dir, const char *name, const char *text) {
  char *path = g_build_filename(dir, name, NULL);
  g_assert_true(g_mkdir_with_parents(dir, 0755) == 0);
  g_assert_true(g_file_set_contents(path, text, -1, NULL));
  return path;
}

/* PATH still holds TEXT. */
static void assert_kept(const char *path, const char *text) {
  g_autofree char *now = NULL;
  g_assert_true(g_file_get_contents(path, &now, NULL, NULL));
  g_assert_cmpstr(now, ==, text);
}

#define FOREIGN "is not empty and not an ema-sim output folder (no .ema-output)"

/* 37#3, 37#14: `pool -o` claims its folder as `run` does: a non-empty
 * folder no claim made is refused before anything runs (the user's file
 * as it was), and a second run into its own folder replaces what the
 * first wrote, leaving a file the user put there since. */
static void test_pool_claim(void) {
  g_autofree char *dir = ema_test_temp_dir();
  g_autofree char *foreign = g_build_filename(dir, "foreign", NULL);
  g_autofree char *out = g_build_filename(dir, "out", NULL);
  g_autofree char *mine = user_file(foreign, "summary.json", "my summary\n");
  g_autofree char *notes = NULL;
  {
    g_autoptr(EmaTestRun) run =
        cli_without_devices("pool", "--dry-run", "--seconds", "1", "-o", foreign, NULL);
    ema_test_assert_error_line(run, "ema-validate: output directory ");
    ema_test_assert_contains(run->err, FOREIGN);
  }
  assert_kept(mine, "my summary\n");
  for (guint round = 0; round < 2; round++) {
    g_autoptr(EmaTestRun) run =
        cli_without_devices("pool", "--dry-run", "--seconds", "1", "-o", out, NULL);
    g_autofree char *marker = NULL;
    if (run->status != 0)
      g_error("round %u: exit %d: %s", round, run->status, run->err);
    marker = ema_test_read_file(out, ".ema-output");
    ema_test_assert_contains(marker, "\nticks.csv\nevents.csv\nsteps.csv\nsummary.json\n");
    if (round == 0)
      notes = user_file(out, "notes.txt", "mine\n");
  }
  assert_kept(notes, "mine\n");
  ema_test_remove_tree(dir);
}

/* `pool` on a machine without its GPUs fails before it claims its folder: an earlier run's
 * results there stay (they were removed, then no CUDA device was found). */
static void test_pool_no_device(void) {
  g_autofree char *dir = ema_test_temp_dir();
  g_autofree char *out = g_build_filename(dir, "out", NULL);
  g_autofree char *earlier = NULL, *now = NULL;
  {
    g_autoptr(EmaTestRun) run =
        cli_without_devices("pool", "--dry-run", "--seconds", "1", "-o", out, NULL);
    ema_test_assert_ok(run);
  }
  earlier = ema_test_read_file(out, "summary.json");
  {
    g_autoptr(EmaTestRun) run = cli_without_devices("pool", "--seconds", "1", "-o", out, NULL);
    assert_no_device(run);
  }
  now = ema_test_read_file(out, "summary.json");
  g_assert_cmpstr(now, ==, earlier);
  ema_test_remove_tree(dir);
}

/* nvtx.csv of one profile point (table gemm) holding one repeat */
#define ONE_POINT_NVTX                                                                             \
  "timestamp_ns,flags,id,domain,name\n"                                                            \
  "1000,start,1,\"\",\"ema.point gemm m=1\"\n"                                                     \
  "1000,start,2,\"\",\"ema.rep\"\n"                                                                \
  "3000,end,2,\"\",\"\"\n"                                                                         \
  "3000,end,1,\"\",\"\"\n"

/* DIR/capture/, a capture folder that reads: one kernel, in the repeat of ONE_POINT_NVTX, and
 * the workload's notes */
static char *point_capture(const char *dir) {
  char *capture = g_build_filename(dir, "capture", NULL);
  g_free(user_file(capture, "kernels.csv",
                   "start_ns,end_ns,device,context,stream,correlation,grid_x,grid_y,grid_z,"
                   "block_x,block_y,block_z,registers,shared_bytes,graph,name\n"
                   "1500,2500,0,1,7,1,1,1,1,1,1,1,1,0,0,k\n"));
  g_free(user_file(capture, "nvtx.csv", ONE_POINT_NVTX));
  g_free(user_file(capture, "workload.yaml", "device: \"none\"\n"));
  return capture;
}

/* `profile` (a capture run) and `capture` on a machine without a GPU fail before they claim
 * their folder: an earlier profile, and an earlier capture, stay as they were (both were
 * emptied first, then the program found no GPU). */
static void test_capture_no_device(void) {
  g_autofree char *dir = ema_test_temp_dir();
  g_autofree char *out = g_build_filename(dir, "out", NULL);
  g_autofree char *capture = point_capture(dir);
  g_autofree char *library = user_file(dir, "libfake.so", "");
  g_autofree char *workload = user_file(dir, "workload.py", "import sys\nsys.exit(1)\n");
  g_autofree char *earlier = NULL, *now = NULL, *kernels = NULL, *kernels_now = NULL;
  {
    g_autoptr(EmaTestRun) run =
        cli_without_devices("profile", "--from-capture", capture, "-o", out, NULL);
    ema_test_assert_ok(run);
  }
  earlier = ema_test_read_file(out, "profile.yaml");
  kernels = ema_test_read_file(capture, "kernels.csv");
  g_setenv("EMA_CAPTURE_LIB", library, TRUE);
  {
    g_autoptr(EmaTestRun) run =
        cli_without_devices("profile", "--workload", workload, "-o", out, NULL);
    assert_no_device(run);
  }
  {
    g_autoptr(EmaTestRun) run = cli_without_devices("capture", "-o", capture, "--", "true", NULL);
    assert_no_device(run);
  }
  g_unsetenv("EMA_CAPTURE_LIB");
  now = ema_test_read_file(out, "profile.yaml");
  kernels_now = ema_test_read_file(capture, "kernels.csv");
  g_assert_cmpstr(now, ==, earlier);
  g_assert_cmpstr(kernels_now, ==, kernels);
  ema_test_remove_tree(dir);
}

/* 37#3: `profile -o` claims its folder before it runs anything or writes: a
 * foreign folder is refused, the user's file in it as it was. */
static void test_profile_claim(void) {
  g_autofree char *dir = ema_test_temp_dir();
  g_autofree char *capture = point_capture(dir);
  g_autofree char *mine = user_file(dir, "profile.yaml", "mine\n");
  g_autoptr(EmaTestRun) run =
      cli_without_devices("profile", "--from-capture", capture, "-o", dir, NULL);
  ema_test_assert_error_line(run, "ema-validate: output directory ");
  ema_test_assert_contains(run->err, FOREIGN);
  assert_kept(mine, "mine\n");
  ema_test_remove_tree(dir);
}

/* `profile --from-capture` with a capture folder that is not there, or one whose point ranges
 * break the protocol or are absent, fails before the earlier profile in its -o folder goes
 * (it was removed first, then the capture found missing or wrong). */
static void test_profile_missing_capture(void) {
  g_autofree char *dir = ema_test_temp_dir();
  g_autofree char *out = g_build_filename(dir, "out", NULL);
  g_autofree char *capture = point_capture(dir);
  g_autofree char *typo = g_build_filename(dir, "captur", NULL);
  g_autofree char *earlier = NULL, *table = NULL;
  const char *const broken[][2] = {
      {"timestamp_ns,flags,id,domain,name\n"
       "1000,start,1,\"\",\"ema.point gemm\"\n"
       "3000,end,1,\"\",\"\"\n",
       "not 'ema.point TABLE KEY=VALUE...'"},
      {"timestamp_ns,flags,id,domain,name\n", "no 'ema.point' NVTX range: nothing to profile"}};
  {
    g_autoptr(EmaTestRun) run =
        cli_without_devices("profile", "--from-capture", capture, "-o", out, NULL);
    g_assert_cmpint(run->status, ==, 0);
  }
  earlier = ema_test_read_file(out, "profile.yaml");
  table = ema_test_read_file(out, "gemm.csv");
  {
    g_autoptr(EmaTestRun) run =
        cli_without_devices("profile", "--from-capture", typo, "-o", out, NULL);
    ema_test_assert_error_line(run, "ema-validate: cannot read ");
    ema_test_assert_contains(run->err, "captur/kernels.csv");
  }
  for (guint i = 0; i < G_N_ELEMENTS(broken); i++) {
    g_free(user_file(capture, "nvtx.csv", broken[i][0]));
    g_autoptr(EmaTestRun) run =
        cli_without_devices("profile", "--from-capture", capture, "-o", out, NULL);
    /* at its place, in the capture folder (nvtx.csv:LINE:COL, or the folder) */
    ema_test_assert_error_line(run, capture);
    ema_test_assert_contains(run->err, broken[i][1]);
  }
  {
    g_autofree char *now = ema_test_read_file(out, "profile.yaml");
    g_autofree char *now_table = ema_test_read_file(out, "gemm.csv");
    g_assert_cmpstr(now, ==, earlier);
    g_assert_cmpstr(now_table, ==, table);
  }
  ema_test_remove_tree(dir);
}

static void copy_file(const char *from_dir, const char *to_dir, const char *name) {
  g_autofree char *to = g_build_filename(to_dir, name, NULL);
  g_autofree char *text = ema_test_read_file(from_dir, name);
  g_assert_true(g_file_set_contents(to, text, -1, NULL));
}

/* The committed calibration results (validate/results/), FILES of them
 * (NULL-terminated) copied into DIR; returns the results' folder. */
static char *copy_calibrate_results(const char *dir, const char *const *files) {
  char *results = g_build_filename(g_getenv("EMA_SOURCE_ROOT"), "validate", "results",
                                   "2026-11-29-h200x2-calibrate", NULL);
  for (guint i = 0; files[i]; i++)
    copy_file(results, dir, files[i]);
  return results;
}

/* calibrate --from-results needs no GPU: it runs with the devices hidden. */
static void test_from_results(void) {
  g_autofree char *dir = ema_test_temp_dir();
  g_autofree char *model = g_build_filename(dir, "model.yaml", NULL);
  g_autofree char *missing = g_build_filename(dir, "missing", NULL);
  const char *const files[] = {"measurements.csv", "samples.csv", "provenance.txt", NULL};
  g_free(copy_calibrate_results(dir, files));
  {
    g_autoptr(EmaTestRun) run =
        cli_without_devices("calibrate", "--from-results", dir, "-o", model, NULL);
    g_autoptr(EmaTestRun) none = cli("calibrate", "--from-results", missing, "-o", model, NULL);
    g_autofree char *text = NULL;
    if (run->status != 0)
      g_error("exit %d: %s", run->status, run->err);
    ema_test_assert_contains(run->out, "wrote ");
    ema_test_assert_contains(run->out, "gpu.interference_incoming");
    text = ema_test_read_file(dir, "model.yaml");
    ema_test_assert_contains(text, "# Derived again from these measurements (no GPU): ");
    ema_test_assert_contains(text, "\nlink:\n");
    ema_test_assert_failed(none, 1, "ema-validate: ");
    ema_test_assert_contains(none->err, "provenance.txt");
  }
  {
    /* an argument with a line break is recorded as $'...', one line a shell runs again */
    g_autofree char *odd = g_build_filename(dir, "mo'del\n\x01.yaml", NULL);
    g_autoptr(EmaTestRun) run =
        cli_without_devices("calibrate", "--from-results", dir, "-o", odd, NULL);
    g_autofree char *text = NULL;
    g_autofree char *want = g_strdup_printf(
        "# Derived again from these measurements (no GPU): %s calibrate --from-results %s -o "
        "$'%s/mo\\'del\\n\\x01.yaml'\n",
        program(), dir, dir);
    if (run->status != 0)
      g_error("exit %d: %s", run->status, run->err);
    text = ema_test_read_file(dir, "mo'del\n\x01.yaml");
    ema_test_assert_contains(text, want);
  }
  ema_test_remove_tree(dir);
}

/* calibrate --from-results DIR rewrites DIR/derived.csv: it holds DIR as a claim would (no
 * marker written). A DIR another process holds (a calibration measuring into it, whose claim
 * removed the files read here) and one whose marker says another kind of command wrote it are
 * refused, naming --from-results, with no derived.csv and no model written (both were written);
 * a DIR calibrate claimed, and one no claim made (the committed results), are derived again, and
 * the latter is left without a marker. */
static void test_from_results_held(void) {
  g_autofree char *dir = ema_test_temp_dir();
  g_autofree char *model = g_build_filename(dir, "model.yaml", NULL);
  g_autofree char *held = g_build_filename(dir, "held", NULL);
  g_autofree char *other = g_build_filename(dir, "other", NULL);
  g_autofree char *own = g_build_filename(dir, "own", NULL);
  g_autofree char *plain = g_build_filename(dir, "plain", NULL);
  g_autofree char *want_held = NULL, *want_other = NULL, *marker = NULL;
  const char *const files[] = {"measurements.csv", "samples.csv", "provenance.txt", NULL};
  const char *const folders[] = {held, other, own, plain};
  int fd;
  for (guint i = 0; i < G_N_ELEMENTS(folders); i++) {
    g_assert_cmpint(g_mkdir(folders[i], 0755), ==, 0);
    g_free(copy_calibrate_results(folders[i], files));
  }
  g_free(user_file(other, ".ema-output", "# kind: sweep\nsweep.csv\n"));
  g_free(user_file(own, ".ema-output",
                   "# kind: ema-validate calibrate\nmeasurements.csv\nsamples.csv\nderived.csv\n"
                   "provenance.txt\n"));
  want_held = g_strdup_printf("ema-validate: output directory %s is in use by another process "
                              "of ema-sim or ema-validate (writing there now): wait for it, or "
                              "give another --from-results\n",
                              held);
  want_other =
      g_strdup_printf("ema-validate: output directory %s holds the output of ema-sim sweep "
                      "(its .ema-output says so), not of ema-validate calibrate: give "
                      "another --from-results\n",
                      other);
  fd = open(held, O_RDONLY | O_DIRECTORY);
  g_assert_cmpint(flock(fd, LOCK_EX | LOCK_NB), ==, 0); /* as a calibration measuring holds it */
  {
    g_autoptr(EmaTestRun) in_use =
        cli_without_devices("calibrate", "--from-results", held, "-o", model, NULL);
    g_autoptr(EmaTestRun) sweep =
        cli_without_devices("calibrate", "--from-results", other, "-o", model, NULL);
    ema_test_assert_failed(in_use, 1, want_held);
    ema_test_assert_failed(sweep, 1, want_other);
  }
  close(fd);
  for (guint i = 0; i < 2; i++) {
    g_autofree char *derived = g_build_filename(folders[i], "derived.csv", NULL);
    g_assert_false(g_file_test(derived, G_FILE_TEST_EXISTS));
  }
  g_assert_false(g_file_test(model, G_FILE_TEST_EXISTS));
  marker = g_build_filename(other, ".ema-output", NULL);
  assert_kept(marker, "# kind: sweep\nsweep.csv\n");
  g_free(marker);
  {
    /* -o into another command's output (the sweep's sweep.csv): refused, nothing written */
    g_autofree char *theirs = g_build_filename(other, "sweep.csv", NULL);
    g_autofree char *real = realpath(other, NULL);
    g_autofree char *want = g_strdup_printf(
        "-o: '%s' is an output of ema-sim sweep (%s/.ema-output lists sweep.csv), which a later "
        "run of it replaces or removes: give another -o",
        theirs, real);
    g_autoptr(EmaTestRun) into =
        cli_without_devices("calibrate", "--from-results", plain, "-o", theirs, NULL);
    g_assert_cmpint(into->status, ==, 2);
    ema_test_assert_contains(into->err, want);
    g_assert_false(g_file_test(theirs, G_FILE_TEST_EXISTS));
  }
  for (guint i = 2; i < G_N_ELEMENTS(folders); i++) {
    g_autoptr(EmaTestRun) run =
        cli_without_devices("calibrate", "--from-results", folders[i], "-o", model, NULL);
    g_autofree char *derived = NULL;
    ema_test_assert_ok(run);
    derived = ema_test_read_file(folders[i], "derived.csv");
    ema_test_assert_contains(derived, "\nlender-loss-per-pulled-byte,");
  }
  marker = g_build_filename(plain, ".ema-output", NULL);
  g_assert_false(g_file_test(marker, G_FILE_TEST_EXISTS));
  ema_test_remove_tree(dir);
}

/* calibrate --from-results with a provenance.txt that is a FIFO refuses it at once, as its CSV
 * files are, never waiting for a writer; compare --measured goes on without it. */
static void test_from_results_fifo(void) {
  g_autofree char *dir = ema_test_temp_dir();
  g_autofree char *measured = ema_test_temp_dir();
  g_autofree char *model = g_build_filename(dir, "model.yaml", NULL);
  g_autofree char *fifo = g_build_filename(dir, "provenance.txt", NULL);
  g_autofree char *measured_fifo = g_build_filename(measured, "provenance.txt", NULL);
  g_autofree char *fixture = g_build_filename(g_getenv("EMA_SOURCE_ROOT"), FIXTURE_MEASURED, NULL);
  const char *const files[] = {"measurements.csv", "samples.csv", NULL};
  g_autofree char *want = g_strconcat(fifo, ": not a regular file (a FIFO)\n", NULL);
  g_free(copy_calibrate_results(dir, files));
  copy_file(fixture, measured, "summary.json");
  g_assert_cmpint(mkfifo(fifo, 0600), ==, 0);
  g_assert_cmpint(mkfifo(measured_fifo, 0600), ==, 0);
  {
    g_autoptr(EmaTestRun) run =
        cli_without_devices("calibrate", "--from-results", dir, "-o", model, NULL);
    g_autoptr(EmaTestRun) compare =
        cli_without_devices("compare", FIXTURE_EXPERIMENT, "--measured", measured, NULL);
    g_assert_cmpint(run->status, ==, 1);
    g_assert_cmpstr(run->err, ==, want);
    ema_test_assert_ok(compare);
  }
  g_assert_false(g_file_test(model, G_FILE_TEST_EXISTS));
  ema_test_remove_tree(measured);
  ema_test_remove_tree(dir);
}

/* calibrate -o naming a directory is a usage error found before anything is measured or
 * derived: no CUDA call, no derived.csv rewritten. */
static void test_calibrate_output_dir(void) {
  g_autofree char *dir = ema_test_temp_dir();
  g_autofree char *out = ema_test_temp_dir();
  g_autofree char *derived = g_build_filename(dir, "derived.csv", NULL);
  g_autofree char *want = g_strdup_printf("-o: '%s' is a directory: give the model's file", out);
  const char *const files[] = {"measurements.csv", "samples.csv", "provenance.txt", NULL};
  g_free(copy_calibrate_results(dir, files));
  {
    g_autoptr(EmaTestRun) derive =
        cli_without_devices("calibrate", "--from-results", dir, "-o", out, NULL);
    g_autoptr(EmaTestRun) measure = cli_without_devices("calibrate", "-o", out, "--quick", NULL);
    assert_usage_error(derive, want);
    assert_usage_error(measure, want);
  }
  g_assert_false(g_file_test(derived, G_FILE_TEST_EXISTS));
  ema_test_remove_tree(out);
  ema_test_remove_tree(dir);
}

/* calibrate -o naming a file of the results directory (measurements.csv, ...) is a usage error
 * found before anything is measured or derived: the model was written over the measurements it
 * came from. */
static void test_calibrate_output_results_file(void) {
  g_autofree char *dir = ema_test_temp_dir();
  g_autofree char *measurements = g_build_filename(dir, "measurements.csv", NULL);
  g_autofree char *samples = g_build_filename(dir, ".", "samples.csv", NULL);
  g_autofree char *kept = NULL;
  const char *const files[] = {"measurements.csv", "samples.csv", "provenance.txt", NULL};
  g_free(copy_calibrate_results(dir, files));
  kept = ema_test_read_file(dir, "measurements.csv");
  {
    g_autoptr(EmaTestRun) derive =
        cli_without_devices("calibrate", "--from-results", dir, "-o", measurements, NULL);
    g_autoptr(EmaTestRun) measure =
        cli_without_devices("calibrate", "--results", dir, "-o", samples, "--quick", NULL);
    g_autofree char *want = g_strdup_printf(
        "-o: '%s' is a file of the results directory %s: give the model's file", measurements, dir);
    g_autofree char *want_measure = g_strdup_printf(
        "-o: '%s' is a file of the results directory %s: give the model's file", samples, dir);
    assert_usage_error(derive, want);
    assert_usage_error(measure, want_measure);
  }
  assert_kept(measurements, kept);
  {
    /* nor the folder's marker, its claim (calibrate claims its results folder) */
    g_autofree char *marker = user_file(dir, ".ema-output", "# kind: ema-validate calibrate\n");
    g_autoptr(EmaTestRun) measure =
        cli_without_devices("calibrate", "--results", dir, "-o", marker, "--quick", NULL);
    g_autofree char *want = g_strdup_printf(
        "-o: '%s' is a file of the results directory %s: give the model's file", marker, dir);
    assert_usage_error(measure, want);
    assert_kept(marker, "# kind: ema-validate calibrate\n");
  }
  ema_test_remove_tree(dir);
}

/* decode --csv naming a table of another header is refused before the GPU runs (the row was
 * appended to it after the measurement, under the wrong columns), as is a directory. */
static void test_decode_csv_other_table(void) {
  g_autofree char *dir = ema_test_temp_dir();
  g_autofree char *other = user_file(dir, "measurements.csv", "group,name\nlocal,k\n");
  g_autofree char *want =
      g_strdup_printf("--csv: %s:1:1: the header is not 'date,gpu,model,", other);
  g_autofree char *want_dir = g_strdup_printf("--csv: '%s' is no file to append to", dir);
  {
    g_autoptr(EmaTestRun) run = cli_without_devices("decode", "--model", "llama-3.1-8b", "--batch",
                                                    "1", "--context", "16", "--csv", other, NULL);
    g_autoptr(EmaTestRun) in_dir = cli_without_devices(
        "decode", "--model", "llama-3.1-8b", "--batch", "1", "--context", "16", "--csv", dir, NULL);
    assert_usage_error(run, want);
    assert_usage_error(in_dir, want_dir);
  }
  assert_kept(other, "group,name\nlocal,k\n");
  ema_test_remove_tree(dir);
}

/* calibrate -o naming what is no regular file is refused as a directory is: the model was
 * renamed over it (a FIFO, or /dev/null as root, became a regular file; a link lost its
 * target), and an empty name or one ending in '/' failed only in a rename's words. */
static void test_calibrate_output_not_file(void) {
  g_autofree char *dir = ema_test_temp_dir();
  g_autofree char *fifo = g_build_filename(dir, "fifo", NULL);
  g_autofree char *link = g_build_filename(dir, "link.yaml", NULL);
  g_autofree char *slash = g_build_filename(dir, "model.yaml/", NULL);
  const char *const files[] = {"measurements.csv", "samples.csv", "provenance.txt", NULL};
  const struct {
    const char *output, *kind;
  } cases[] = {
      {fifo, "is a FIFO, not a file the model can replace"},
      {link, "is a symbolic link, not a file the model can replace"},
      {slash, "is no file name"},
      {"", "is no file name"},
  };
  g_free(copy_calibrate_results(dir, files));
  g_assert_cmpint(mkfifo(fifo, 0600), ==, 0);
  g_assert_cmpint(symlink("elsewhere.yaml", link), ==, 0);
  for (guint i = 0; i < G_N_ELEMENTS(cases); i++) {
    g_autoptr(EmaTestRun) derive =
        cli_without_devices("calibrate", "--from-results", dir, "-o", cases[i].output, NULL);
    g_autofree char *want =
        g_strdup_printf("-o: '%s' %s: give the model's file", cases[i].output, cases[i].kind);
    assert_usage_error(derive, want);
  }
  g_assert_true(g_file_test(fifo, G_FILE_TEST_EXISTS) &&
                !g_file_test(fifo, G_FILE_TEST_IS_REGULAR));
  g_assert_true(g_file_test(link, G_FILE_TEST_IS_SYMLINK));
  ema_test_remove_tree(dir);
}

/* 37#8, 37#17: samples so small that no copy fit is finite, a model whose
 * figures are out of range, or a negative sample time are errors (no
 * abort), and an earlier model at -o is left as it was (one that did not
 * load as a server was written over it, then removed), and so is the
 * earlier derived.csv beside the measurements (the figures of a model that
 * did not load were written over it). */
static void test_from_results_degenerate(void) {
  g_autofree char *dir = ema_test_temp_dir();
  const char *const files[] = {"measurements.csv", "provenance.txt", NULL};
  g_autofree char *results = copy_calibrate_results(dir, files);
  g_autofree char *model = g_build_filename(dir, "model.yaml", NULL);
  g_autofree char *samples = g_build_filename(dir, "samples.csv", NULL);
  g_autofree char *derived = user_file(dir, "derived.csv", "name,value,unit,description\n");
  const char *const earlier = "name: earlier\n";
  const char *const cases[][2] = {{"1e-300", "admit no finite fit"},
                                  {"1e18", "the derived model does not load as a server"},
                                  {"-5", "samples.csv:2:16: us must be a finite time >= 0"}};
  g_assert_true(g_file_set_contents(model, earlier, -1, NULL));
  for (guint c = 0; c < G_N_ELEMENTS(cases); c++) {
    g_autofree char *text = ema_test_read_file(results, "samples.csv");
    g_auto(GStrv) lines = g_strsplit(text, "\n", -1);
    g_autoptr(GString) out = g_string_new(lines[0]);
    for (guint i = 1; lines[i] && lines[i][0]; i++) {
      /* name,repeat,us: every time CASES[c][0] */
      *strrchr(lines[i], ',') = '\0';
      g_string_append_printf(out, "\n%s,%s", lines[i], cases[c][0]);
    }
    g_string_append_c(out, '\n');
    g_assert_true(g_file_set_contents(samples, out->str, -1, NULL));
    {
      g_autoptr(EmaTestRun) run =
          cli_without_devices("calibrate", "--from-results", dir, "-o", model, NULL);
      g_assert_cmpint(run->status, ==, 1);
      ema_test_assert_contains(run->err, cases[c][1]);
    }
    assert_kept(model, earlier);
    assert_kept(derived, "name,value,unit,description\n");
  }
  ema_test_remove_tree(dir);
}

/* A single-valued option given twice is a usage error naming both values, in every command
 * (GOption kept the last one unsaid: `pool -o A -o B` wrote B); nothing is written. Options that
 * repeat (--set, --plugin-dir) still do. */
static void test_option_twice(void) {
  g_autofree char *dir = ema_test_temp_dir();
  g_autofree char *a = g_build_filename(dir, "a", NULL);
  g_autofree char *b = g_build_filename(dir, "b", NULL);
  g_autofree char *two_o = g_strdup_printf("-o is given 2 times (%s, %s): give it once", a, b);
  g_autofree char *two_measured =
      g_strdup_printf("--measured is given 2 times (%s, %s)", FIXTURE_MEASURED, a);
  g_autofree char *two_captures = g_strdup_printf("--from-capture is given 2 times (%s, %s)", a, b);
  const struct {
    const char *args[12];
    const char *message;
  } cases[] = {
      {{"pool", "--dry-run", "--seconds", "1", "-o", a, "-o", b}, two_o},
      {{"pool", "--dry-run", "--seconds", "1", "--seconds", "2", "-o", a},
       "--seconds is given 2 times (1, 2): give it once"},
      {{"calibrate", "--from-results", a, "--from-results", b}, "--from-results is given 2 times"},
      {{"calibrate", "--name", "x", "--name", "y"}, "--name is given 2 times (x, y)"},
      {{"decode", "--model", "llama-3.1-8b", "--model", "llama-2-7b", "--batch", "1", "--context",
        "16"},
       "--model is given 2 times (llama-3.1-8b, llama-2-7b)"},
      {{"run", FIXTURE_EXPERIMENT, "-o", a, "--output", b}, two_o},
      {{"compare", FIXTURE_EXPERIMENT, "--measured", FIXTURE_MEASURED, "--measured", a, "-o", b},
       two_measured},
      {{"capture", "-o", a, "--buffers", "4", "--buffers", "8", "--", "true"},
       "--buffers is given 2 times (4, 8)"},
      {{"profile", "-o", a, "--from-capture", a, "--from-capture", b}, two_captures},
  };
  for (guint i = 0; i < G_N_ELEMENTS(cases); i++) {
    g_autoptr(EmaTestRun) run = run_validate(TRUE, cases[i].args);
    assert_usage_error(run, cases[i].message);
  }
  g_assert_false(g_file_test(a, G_FILE_TEST_EXISTS));
  g_assert_false(g_file_test(b, G_FILE_TEST_EXISTS));
  {
    g_autoptr(EmaTestRun) run =
        cli_without_devices("compare", FIXTURE_EXPERIMENT, "--measured", FIXTURE_MEASURED, "-o", a,
                            "--set", "server=h200x2", "--set", "tolerance=0.05", NULL);
    ema_test_assert_ok(run);
  }
  ema_test_remove_tree(dir);
}

/* The folders of pool and compare record their kind (output.h): `pool -o` into an ema-sim
 * sweep's folder erased its points and sweep.csv, `compare -o` there added a compare.csv that
 * `ema-sim plot` then refused; both are refused, the sweep as it was. A profile's -o naming
 * the capture it reads is refused before the capture is read (the profile's claim removed it). */
static void test_claim_kinds(void) {
  g_autofree char *dir = ema_test_temp_dir();
  g_autofree char *sweep = g_build_filename(dir, "sweep", NULL);
  g_autofree char *pool = g_build_filename(dir, "pool", NULL);
  g_autofree char *marker = user_file(sweep, ".ema-output", "# kind: sweep\nsweep.csv\n");
  g_autofree char *table = user_file(sweep, "sweep.csv", "point\n");
  g_autofree char *capture = point_capture(dir);
  {
    g_autoptr(EmaTestRun) in_sweep =
        cli_without_devices("pool", "--dry-run", "--seconds", "1", "-o", sweep, NULL);
    g_autoptr(EmaTestRun) compare = cli_without_devices("compare", FIXTURE_EXPERIMENT, "--measured",
                                                        FIXTURE_MEASURED, "-o", sweep, NULL);
    g_autoptr(EmaTestRun) own =
        cli_without_devices("pool", "--dry-run", "--seconds", "1", "-o", pool, NULL);
    g_autoptr(EmaTestRun) profile =
        cli_without_devices("profile", "--from-capture", capture, "-o", capture, NULL);
    g_autofree char *want = g_strdup_printf(
        "--from-capture: '%s' is the -o folder: the profile would replace the capture it reads",
        capture);
    g_autofree char *pool_marker = NULL;
    ema_test_assert_error_line(in_sweep, "ema-validate: output directory ");
    ema_test_assert_contains(in_sweep->err, "holds the output of ema-sim sweep");
    ema_test_assert_error_line(compare, "ema-validate: output directory ");
    ema_test_assert_contains(compare->err, "holds the output of ema-sim sweep");
    ema_test_assert_ok(own);
    pool_marker = ema_test_read_file(pool, ".ema-output");
    ema_test_assert_contains(pool_marker, "# kind: ema-validate pool\n");
    assert_usage_error(profile, want);
  }
  assert_kept(marker, "# kind: sweep\nsweep.csv\n");
  assert_kept(table, "point\n");
  {
    g_autoptr(GPtrArray) entries = ema_test_list_dir(sweep, "");
    g_assert_cmpuint(entries->len, ==, 2);
  }
  g_free(ema_test_read_file(capture, "kernels.csv"));
  g_free(ema_test_read_file(capture, "nvtx.csv"));
  ema_test_remove_tree(dir);
}

/* DIR's entry names, one a line (sorted). */
static char *entry_names(const char *dir) {
  g_autoptr(GPtrArray) names = ema_test_list_dir(dir, "");
  g_ptr_array_add(names, NULL);
  return g_strjoinv("\n", (char **) names->pdata);
}

/* The folders of `ema-validate run` and `compare` record their own kind, "ema-validate run"
 * (they recorded ema-sim run's, so another command's refusal named ema-sim run): ema-sim run
 * refuses one, naming ema-validate run, and compare refuses an ema-sim run's folder (it took it,
 * adding compare.md and sim/ beside the simulator's results); both folders stay as they were.
 * Folders compare and run claimed before, recording "run" and listing compare.md or
 * provenance.txt, are still theirs: taken, each recording the new kind after. */
static void test_run_folder_kind(void) {
  g_autofree char *dir = ema_test_temp_dir();
  g_autofree char *compared = g_build_filename(dir, "compared", NULL);
  g_autofree char *simulated = g_build_filename(dir, "simulated", NULL);
  g_autofree char *former = g_build_filename(dir, "former", NULL);
  g_autofree char *former_run = g_build_filename(dir, "former-run", NULL);
  g_autofree char *fixture = g_build_filename(g_getenv("EMA_SOURCE_ROOT"), FIXTURE_MEASURED, NULL);
  g_autofree char *compared_entries = NULL, *simulated_entries = NULL, *after = NULL;
  g_autofree char *marker = NULL, *want_sim = NULL, *want_validate = NULL, *notes = NULL;
  g_autofree char *run_marker = NULL;
  g_autofree char *compared_marker = g_build_filename(compared, ".ema-output", NULL);
  {
    g_autoptr(EmaTestRun) compare = cli_without_devices("compare", FIXTURE_EXPERIMENT, "--measured",
                                                        FIXTURE_MEASURED, "-o", compared, NULL);
    g_autoptr(EmaTestRun) sim = ema_test_cli("run", FIXTURE_EXPERIMENT, "-o", simulated, NULL);
    ema_test_assert_ok(compare);
    ema_test_assert_ok(sim);
  }
  marker = ema_test_read_file(compared, ".ema-output");
  ema_test_assert_contains(marker, "\n# kind: ema-validate run\n");
  compared_entries = entry_names(compared);
  simulated_entries = entry_names(simulated);
  want_sim = g_strdup_printf("ema-sim: output directory %s holds the output of ema-validate run "
                             "(its .ema-output says so), not of ema-sim run: give another -o, or "
                             "remove the folder first\n",
                             compared);
  want_validate = g_strdup_printf("ema-validate: output directory %s holds the output of ema-sim "
                                  "run (its .ema-output says so), not of ema-validate run: give "
                                  "another -o, or remove the folder first\n",
                                  simulated);
  {
    g_autoptr(EmaTestRun) sim = ema_test_cli("run", FIXTURE_EXPERIMENT, "-o", compared, NULL);
    g_autoptr(EmaTestRun) compare = cli_without_devices("compare", FIXTURE_EXPERIMENT, "--measured",
                                                        FIXTURE_MEASURED, "-o", simulated, NULL);
    ema_test_assert_failed(sim, 1, want_sim);
    ema_test_assert_failed(compare, 1, want_validate);
  }
  assert_kept(compared_marker, marker);
  after = entry_names(compared);
  g_assert_cmpstr(after, ==, compared_entries);
  g_free(after);
  after = entry_names(simulated);
  g_assert_cmpstr(after, ==, simulated_entries);
  /* a compare's folder and a run's, as they were claimed before */
  g_free(user_file(former, ".ema-output", "# kind: run\ncompare.csv\ncompare.md\nsim\n"));
  g_free(user_file(former, "compare.md", "earlier\n"));
  g_free(user_file(former_run, ".ema-output",
                   "# kind: run\nsummary.json\nresolved.yaml\ndecode.csv\nprovenance.txt\n"));
  copy_file(fixture, former_run, "summary.json");
  copy_file(fixture, former_run, "provenance.txt");
  {
    g_autoptr(EmaTestRun) compare = cli_without_devices("compare", FIXTURE_EXPERIMENT, "--measured",
                                                        FIXTURE_MEASURED, "-o", former, NULL);
    g_autoptr(EmaTestRun) in_place =
        cli_without_devices("compare", FIXTURE_EXPERIMENT, "--measured", former_run, NULL);
    ema_test_assert_ok(compare);
    ema_test_assert_ok(in_place);
  }
  g_free(marker);
  marker = ema_test_read_file(former, ".ema-output");
  ema_test_assert_contains(marker, "\n# kind: ema-validate run\n");
  run_marker = ema_test_read_file(former_run, ".ema-output");
  ema_test_assert_contains(run_marker, "\n# kind: ema-validate run\nsummary.json\n");
  notes = ema_test_read_file(former, "compare.md");
  g_assert_null(strstr(notes, "earlier"));
  ema_test_remove_tree(dir);
}

/* A dry run of a 1 TiB lender region (the largest --lender-region takes) ends in seconds: each
 * slice freed moved every other one of its list, and each mapping's lookup walked chains of
 * hundreds (GLib's 64-bit hash keeps the low 32 bits of 2 MiB-aligned addresses): 159 s. */
static void test_pool_large_region(void) {
  g_autofree char *dir = ema_test_temp_dir();
  g_autofree char *out = g_build_filename(dir, "out", NULL);
  gint64 start = g_get_monotonic_time();
  g_autoptr(EmaTestRun) run = cli_without_devices("pool", "--dry-run", "--seconds", "1",
                                                  "--lender-region", "1TiB", "-o", out, NULL);
  double seconds = (double) (g_get_monotonic_time() - start) / 1e6;
  ema_test_assert_ok(run);
  ema_test_assert_contains(run->out, "GPU1 524288 blocks");
  if (seconds > 30)
    g_error("a dry run of a 1 TiB region took %.1f s", seconds);
  ema_test_remove_tree(dir);
}

int main(int argc, char **argv) {
  g_test_init(&argc, &argv, NULL);
  g_test_add_func("/validate/cli/help", test_help);
  g_test_add_func("/validate/cli/usage-errors", test_usage_errors);
  g_test_add_func("/validate/cli/no-device", test_no_device);
  g_test_add_func("/validate/cli/from-results", test_from_results);
  g_test_add_func("/validate/cli/run-errors", test_run_errors);
  g_test_add_func("/validate/cli/compare-measured", test_compare_measured);
  g_test_add_func("/validate/cli/compare-simulated", test_compare_simulated);
  g_test_add_func("/validate/cli/error-prefix", test_error_prefix);
  g_test_add_func("/validate/cli/from-results-degenerate", test_from_results_degenerate);
  g_test_add_func("/validate/cli/from-results-fifo", test_from_results_fifo);
  g_test_add_func("/validate/cli/from-results-held", test_from_results_held);
  g_test_add_func("/validate/cli/calibrate-output-dir", test_calibrate_output_dir);
  g_test_add_func("/validate/cli/calibrate-output-results-file",
                  test_calibrate_output_results_file);
  g_test_add_func("/validate/cli/compare-user-file", test_compare_user_file);
  g_test_add_func("/validate/cli/compare-other-ops", test_compare_other_ops);
  g_test_add_func("/validate/cli/compare-other-server", test_compare_other_server);
  g_test_add_func("/validate/cli/pool-claim", test_pool_claim);
  g_test_add_func("/validate/cli/pool-no-device", test_pool_no_device);
  g_test_add_func("/validate/cli/capture-no-device", test_capture_no_device);
  g_test_add_func("/validate/cli/profile-claim", test_profile_claim);
  g_test_add_func("/validate/cli/calibrate-output-not-file", test_calibrate_output_not_file);
  g_test_add_func("/validate/cli/decode-csv-other-table", test_decode_csv_other_table);
  g_test_add_func("/validate/cli/profile-missing-capture", test_profile_missing_capture);
  g_test_add_func("/validate/cli/option-twice", test_option_twice);
  g_test_add_func("/validate/cli/claim-kinds", test_claim_kinds);
  g_test_add_func("/validate/cli/run-folder-kind", test_run_folder_kind);
  g_test_add_func("/validate/cli/pool-large-region", test_pool_large_region);
  return g_test_run();
}
