/* test-sweep.c: sweeps (sweep.h) and figures (plot.h). Through the library:
 * the points of a sweep file (order, names, variants as paths and as
 * partial trees, swept values, derived seeds) and the records' text form.
 * Through the ema-sim program (its path in EMA_SIM, run in
 * EMA_SOURCE_ROOT): `run` refusing a sweep file; every bad file in
 * tests/fixtures/sweep/errors/ as one located line (its first line says
 * which); the 24-point grid giving the same sweep.csv with -j 1, -j 2,
 * after being killed halfway and resumed, under `mpirun -n 2` (skipped
 * without MPI) and in --part shares gathered by a last run; resumes that
 * run points again under other search paths (run.env), find them done from
 * another working directory, and first remove the earlier sweep.csv and
 * figures; --set of a swept path refused, --list --part listing the part's
 * points; failing points reported while the others run, and --fail-fast;
 * ops sweeps ("missed"); figures of a sweep and of a run when gnuplot is
 * there (skipped otherwise), and one notice without it; a summary.json of
 * another point refused on resume, --part processes sharing their folder
 * (refused beside a sweep without --part or parts of another sweep), names
 * kept to one line and to what the folder's marker holds, and what a
 * resolved sweep keeps per point. */
#include <fcntl.h>
#include <signal.h>
#include <stdio.h>
#include <string.h>
#include <sys/file.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include <glib/gstdio.h>

#include "ema/cli/sweep.h"

#include "testutil.h"

#define FIXTURES "tests/fixtures/sweep/"
#define GRID FIXTURES "serving-grid.yaml"
#define GRID_POINTS 24

static gboolean exists(const char *dir, const char *name) {
  g_autofree char *path = g_build_filename(dir, name, NULL);
  return g_file_test(path, G_FILE_TEST_EXISTS);
}

/* The number of DIR's point folders with a summary.json. */
static guint points_done(const char *dir) {
  g_autoptr(GDir) d = g_dir_open(dir, 0, NULL);
  const char *name;
  guint done = 0;
  while (d && (name = g_dir_read_name(d)) != NULL) {
    g_autofree char *summary = g_build_filename(dir, name, "summary.json", NULL);
    done += g_file_test(summary, G_FILE_TEST_EXISTS);
  }
  return done;
}

/* The "status" column of each row of DIR/sweep.csv, joined by spaces. */
static char *statuses(const char *dir) {
  g_autofree char *csv = ema_test_read_file(dir, "sweep.csv");
  g_auto(GStrv) lines = g_strsplit(csv, "\n", -1);
  g_auto(GStrv) header = g_strsplit(lines[0], ",", -1);
  g_autoptr(GString) out = g_string_new(NULL);
  guint column = 0;
  while (header[column] && strcmp(header[column], "status") != 0)
    column++;
  g_assert_nonnull(header[column]);
  for (guint i = 1; lines[i] && lines[i][0]; i++) {
    g_auto(GStrv) fields = g_strsplit(lines[i], ",", -1);
    g_string_append_printf(out, "%s%s", out->len ? " " : "", fields[column]);
  }
  return g_strdup(out->str);
}

/* ---- the points of a sweep file (library) ---------------------------------- */

static EmaExperiment *load_point(const EmaSweep *sweep, guint point) {
  GError *error = NULL;
  EmaExperiment *experiment = ema_sweep_load_point(sweep, point, &error);
  g_assert_no_error(error);
  return experiment;
}

static double trace_rate(const EmaExperiment *experiment) {
  return g_array_index(experiment->tenants, EmaTenantSpec, 0).trace.rate;
}

static gint64 max_num_seqs(const EmaExperiment *experiment) {
  return g_array_index(experiment->tenants, EmaTenantSpec, 0).engine.max_num_seqs;
}

static void test_points(void) {
  GError *error = NULL;
  g_autoptr(EmaSweep) sweep = ema_sweep_load(GRID, NULL, &error);
  g_assert_no_error(error);
  g_assert_cmpstr(ema_sweep_name(sweep), ==, "grid");
  g_assert_cmpuint(ema_sweep_n_points(sweep), ==, GRID_POINTS);
  /* variant outermost, then the paths (the first slowest), the repeat innermost */
  g_assert_cmpstr(ema_sweep_point_name(sweep, 0), ==, "000-static-rate=10-max_num_seqs=16-r0");
  g_assert_cmpstr(ema_sweep_point_name(sweep, 1), ==, "001-static-rate=10-max_num_seqs=16-r1");
  g_assert_cmpstr(ema_sweep_point_name(sweep, 2), ==, "002-static-rate=10-max_num_seqs=64-r0");
  g_assert_cmpstr(ema_sweep_point_name(sweep, 4), ==, "004-static-rate=40-max_num_seqs=16-r0");
  g_assert_cmpstr(ema_sweep_point_name(sweep, 23), ==, "023-ema-rate=160-max_num_seqs=64-r1");
  {
    g_autofree char *what = ema_sweep_point_describe(sweep, 19);
    g_assert_cmpstr(
        what, ==, "variant=ema tenants.0.trace.rate=40 tenants.0.engine.max_num_seqs=64 repeat=1");
  }
  {
    g_autoptr(EmaExperiment) first = load_point(sweep, 0);
    g_autoptr(EmaExperiment) repeat = load_point(sweep, 1);
    g_autoptr(EmaExperiment) again = load_point(sweep, 1);
    g_autoptr(EmaExperiment) last = load_point(sweep, 23);
    g_autoptr(EmaExperiment) other = load_point(sweep, 20);
    g_assert_cmpstr(first->policy.name, ==, "static");
    g_assert_cmpfloat(trace_rate(first), ==, 10);
    g_assert_cmpint(max_num_seqs(first), ==, 16);
    g_assert_cmpstr(last->policy.name, ==, "ema");
    g_assert_cmpfloat(trace_rate(last), ==, 160);
    g_assert_cmpint(max_num_seqs(last), ==, 64);
    /* repeat 0 keeps the file's seed; the others derive theirs, the same
     * for the same repeat whatever the point */
    g_assert_cmpint(first->seed, ==, 3);
    g_assert_cmpint(repeat->seed, !=, 3);
    g_assert_cmpint(repeat->seed, >=, 0);
    g_assert_cmpint(repeat->seed, ==, again->seed);
    g_assert_cmpint(repeat->seed, ==, last->seed);
    g_assert_cmpint(other->seed, ==, 3);
  }
}

static void test_variants(void) {
  GError *error = NULL;
  g_autoptr(EmaSweep) sweep = ema_sweep_load(FIXTURES "variants.yaml", NULL, &error);
  g_autoptr(EmaExperiment) base = NULL, tree = NULL, paths = NULL, mixed = NULL;
  g_assert_no_error(error);
  g_assert_cmpuint(ema_sweep_n_points(sweep), ==, 4 * 2 * 3);
  base = load_point(sweep, 3);
  tree = load_point(sweep, 6);
  paths = load_point(sweep, 12);
  mixed = load_point(sweep, 21);
  g_assert_cmpfloat(trace_rate(base), ==, 10);
  g_assert_cmpint(max_num_seqs(base), ==, 32);
  g_assert_cmpstr(base->policy.name, ==, "static");
  /* a partial tree merges: the HBM changes, the rest of the model stays */
  g_assert_cmpuint(tree->server.gpu.hbm_capacity, ==, G_GUINT64_CONSTANT(100) << 30);
  g_assert_cmpuint(tree->server.gpu.hbm_capacity, !=, base->server.gpu.hbm_capacity);
  g_assert_cmpint(tree->server.gpus, ==, base->server.gpus);
  g_assert_cmpfloat(tree->server.link.bandwidth, ==, base->server.link.bandwidth);
  g_assert_cmpint(max_num_seqs(tree), ==, 8);
  g_assert_cmpfloat(trace_rate(tree), ==, 5);
  /* dot-paths */
  g_assert_cmpint(max_num_seqs(paths), ==, 16);
  g_assert_cmpfloat(paths->idle_gpu_memory, ==, 0.5);
  g_assert_cmpfloat(base->idle_gpu_memory, ==, 0.9);
  /* a composition, then a path inside it */
  g_assert_cmpstr(mixed->policy.borrow, ==, "on-demand");
  g_assert_cmpstr(mixed->policy.prefetch, ==, "offload");
  g_assert_cmpfloat(trace_rate(mixed), ==, 10);
}

/* Records as text (how MPI ranks send them to rank 0) and back. */
/* A point's name is its folder's, one path component: with many long swept paths and values
 * it is cut to 255 bytes (before its repeat), still unique by its number. */
static void test_long_point_names(void) {
  g_autofree char *dir = ema_test_temp_dir();
  g_autofree char *file = g_build_filename(dir, "long.yaml", NULL);
  g_autoptr(GString) text = g_string_new("name: long\nserver: h200x2\nrepeats: 2\nsweep:\n");
  g_autoptr(EmaSweep) sweep = NULL;
  GError *error = NULL;
  for (guint a = 0; a < 8; a++)
    g_string_append_printf(
        text, "  tenants.0.engine.a_long_parameter_name_%u: [1.000000000000%u, 2]\n", a, a);
  g_assert_true(g_file_set_contents(file, text->str, -1, NULL));
  sweep = ema_sweep_load(file, NULL, &error);
  g_assert_no_error(error);
  g_assert_cmpuint(ema_sweep_n_points(sweep), ==, 512);
  for (guint p = 0; p < ema_sweep_n_points(sweep); p++) {
    const char *name = ema_sweep_point_name(sweep, p);
    g_autofree char *number = g_strdup_printf("%03u-", p);
    g_assert_cmpuint(strlen(name), <=, 255);
    g_assert_true(g_str_has_prefix(name, number));
    g_assert_true(g_str_has_suffix(name, p % 2 ? "-r1" : "-r0"));
  }
  g_assert_cmpuint(strlen(ema_sweep_point_name(sweep, 0)), ==, 255);
  ema_test_remove_tree(dir);
}

static void test_records_text(void) {
  g_autoptr(GPtrArray) records =
      g_ptr_array_new_with_free_func((GDestroyNotify) ema_sweep_record_free);
  g_autoptr(GPtrArray) back = NULL;
  g_autofree char *text = NULL;
  GError *error = NULL;
  EmaSweepRecord *record = g_new0(EmaSweepRecord, 1);
  record->point = 7;
  record->status = EMA_SWEEP_MISSED;
  record->resumed = TRUE;
  record->names = g_ptr_array_new_with_free_func(g_free);
  record->values = g_ptr_array_new_with_free_func(g_free);
  g_ptr_array_add(record->names, g_strdup("odd\tname,\"quoted\"\nline.seconds"));
  g_ptr_array_add(record->values, g_strdup("1.5e-06"));
  g_ptr_array_add(records, record);
  record = g_new0(EmaSweepRecord, 1);
  record->point = 9;
  record->status = EMA_SWEEP_NOT_RUN;
  record->names = g_ptr_array_new_with_free_func(g_free);
  record->values = g_ptr_array_new_with_free_func(g_free);
  g_ptr_array_add(records, record);
  text = ema_sweep_records_to_text(records);
  back = ema_sweep_records_from_text(text, &error);
  g_assert_no_error(error);
  g_assert_cmpuint(back->len, ==, 2);
  record = back->pdata[0];
  g_assert_cmpuint(record->point, ==, 7);
  g_assert_cmpint(record->status, ==, EMA_SWEEP_MISSED);
  g_assert_true(record->resumed);
  g_assert_cmpuint(record->names->len, ==, 1);
  g_assert_cmpstr(record->names->pdata[0], ==, "odd\tname,\"quoted\"\nline.seconds");
  g_assert_cmpstr(record->values->pdata[0], ==, "1.5e-06");
  record = back->pdata[1];
  g_assert_cmpuint(record->point, ==, 9);
  g_assert_cmpint(record->status, ==, EMA_SWEEP_NOT_RUN);
  g_assert_false(record->resumed);
  g_assert_cmpstr(ema_sweep_status_name(EMA_SWEEP_NOT_RUN), ==, "not-run");
  g_assert_null(ema_sweep_records_from_text("X\tbad\n", &error));
  g_assert_error(error, G_FILE_ERROR, G_FILE_ERROR_INVAL);
  g_clear_error(&error);
}

/* ---- errors ------------------------------------------------------------------- */

static void test_run_refuses_sweep(void) {
  g_autoptr(EmaTestRun) run = ema_test_cli("run", GRID, "-o", "/nonexistent/never", NULL);
  g_autoptr(EmaTestRun) check = ema_test_cli("check", GRID, NULL);
  const char *prefix = GRID ":15:1: variants: this is a sweep file: run it with `ema-sim sweep";
  ema_test_assert_error_line(run, prefix);
  ema_test_assert_error_line(check, prefix);
}

static void test_bad_file(gconstpointer data) {
  const char *name = data;
  g_autofree char *file = g_strconcat(FIXTURES "errors/", name, NULL);
  g_autofree char *text = ema_test_read_file(g_getenv("EMA_SOURCE_ROOT"), file);
  g_autofree char *expected = NULL;
  g_autofree char *prefix = NULL;
  g_autofree char *dir = ema_test_temp_dir();
  g_autoptr(EmaTestRun) list = ema_test_cli("sweep", file, "--list", NULL);
  g_autoptr(EmaTestRun) run = ema_test_cli("sweep", file, "-o", dir, NULL);
  g_assert_true(g_str_has_prefix(text, "# error: "));
  expected = g_strndup(text + strlen("# error: "), strcspn(text + strlen("# error: "), "\n"));
  prefix = g_strconcat(file, ":", expected, NULL);
  ema_test_assert_error_line(list, prefix);
  ema_test_assert_error_line(run, prefix);
  /* nothing ran */
  g_assert_false(exists(dir, "sweep.csv"));
  ema_test_remove_tree(dir);
}

static void test_point_named(void) {
  g_autoptr(EmaTestRun) run =
      ema_test_cli("sweep", FIXTURES "errors/point-cross-check.yaml", "--list", NULL);
  g_assert_nonnull(strstr(run->err, " (point 001-gpu=2)\n"));
}

/* A --set changes the base, which a variant may then replace whole: under variants that each
 * name a policy, a bad `--set policy.…` is refused as a single run of the file refuses it, by a
 * sweep and by a comparison alike; a good one is refused too, since every variant replaces it
 * (it would change nothing), and one that only some variants replace loads with a warning
 * naming them; a sweep whose base needs its swept values to load still loads. */
static void test_set_under_replaced_policy(void) {
  const char *experiment =
      "name: replaced\n"
      "server: h200x2\n"
      "policy: ema\n"
      "tenants:\n"
      "  - {name: chat, model: llama-3.1-8b, gpu: 0, trace: {arrivals: poisson, rate: 5,\n"
      "     requests: 20, prompt: {dist: fixed, tokens: 100}, output: {dist: fixed, tokens: "
      "10}}}\n";
  const char *variants = "  static: {policy: static}\n  offload: {policy: offload}\n";
  const char *const bad[] = {"policy.prefetch_params.allowance=200%",
                             "policy.borrow_params.bogus=1", "policy.bogus=1",
                             "policy.reclaim=nosuch"};
  g_autofree char *dir = ema_test_temp_dir();
  g_autofree char *single = g_build_filename(dir, "single.yaml", NULL);
  g_autofree char *sweep = g_build_filename(dir, "sweep.yaml", NULL);
  g_autofree char *compare = g_build_filename(dir, "compare.yaml", NULL);
  g_autofree char *shifted = g_build_filename(dir, "shifted.yaml", NULL);
  g_autofree char *sweep_text = g_strconcat(experiment, "variants:\n", variants, NULL);
  g_autofree char *compare_text = g_strconcat(experiment, "compare:\n", variants, NULL);
  g_autofree char *shifted_text = NULL;
  g_assert_true(g_file_set_contents(single, experiment, -1, NULL));
  g_assert_true(g_file_set_contents(sweep, sweep_text, -1, NULL));
  g_assert_true(g_file_set_contents(compare, compare_text, -1, NULL));
  for (guint i = 0; i < G_N_ELEMENTS(bad); i++) {
    g_autoptr(EmaTestRun) one = ema_test_cli("check", single, "--set", bad[i], NULL);
    g_autoptr(EmaTestRun) listed = ema_test_cli("sweep", sweep, "--list", "--set", bad[i], NULL);
    g_autoptr(EmaTestRun) compared = ema_test_cli("check", compare, "--set", bad[i], NULL);
    ema_test_assert_error_line(one, "--set:1:");
    ema_test_assert_error_line(listed, "--set:1:");
    ema_test_assert_error_line(compared, "--set:1:");
    g_assert_cmpstr(listed->err, ==, one->err);
    g_assert_cmpstr(compared->err, ==, one->err);
    if (i == 0)
      g_assert_cmpstr(one->err, ==,
                      "--set:1:34: policy.prefetch_params.allowance: 200% is out of range "
                      "[0%, 100%]\n");
  }
  {
    g_autoptr(EmaTestRun) listed = ema_test_cli("sweep", sweep, "--list", "--set",
                                                "policy.borrow_params.lender_reserve=30%", NULL);
    g_autoptr(EmaTestRun) compared =
        ema_test_cli("check", compare, "--set", "policy.borrow_params.lender_reserve=30%", NULL);
    ema_test_assert_failed(listed, 1,
                           "--set:1:1: policy.borrow_params.lender_reserve: every variant of "
                           "variants sets it over the base (static, offload), so this --set "
                           "would change nothing: set it in the variants (or run a file without "
                           "variants)\n");
    ema_test_assert_failed(compared, 1,
                           "--set:1:1: policy.borrow_params.lender_reserve: every variant of "
                           "compare sets it over the base (static, offload), so this --set would "
                           "change nothing: set it in the variants (or run a file without "
                           "compare)\n");
  }
  {
    /* only the offload variant sets the allowance's policy over the base: a warning names it */
    g_autofree char *partial = g_build_filename(dir, "partial.yaml", NULL);
    g_autofree char *partial_text =
        g_strconcat(experiment, "compare:\n  base: ~\n  offload: {policy: offload}\n", NULL);
    g_autoptr(EmaTestRun) checked = NULL;
    g_assert_true(g_file_set_contents(partial, partial_text, -1, NULL));
    checked =
        ema_test_cli("check", partial, "--set", "policy.borrow_params.lender_reserve=30%", NULL);
    g_assert_cmpint(checked->status, ==, 0);
    ema_test_assert_contains(checked->err,
                             "ema-sim: warning: --set policy.borrow_params.lender_reserve=30%: "
                             "compare's offload sets policy.borrow_params.lender_reserve "
                             "itself; the --set reaches the other variants only\n");
  }
  /* the base's tenant on gpu5 of two: only its swept GPUs make it load */
  shifted_text =
      g_strconcat(experiment, "variants:\n", variants, "sweep:\n  tenants.0.gpu: [0, 1]\n", NULL);
  {
    char *gpu = strstr(shifted_text, "gpu: 0");
    gpu[strlen("gpu: ")] = '5';
  }
  g_assert_true(g_file_set_contents(shifted, shifted_text, -1, NULL));
  {
    g_autoptr(EmaTestRun) listed =
        ema_test_cli("sweep", shifted, "--list", "--set", "seed=5", NULL);
    ema_test_assert_ok(listed);
  }
  ema_test_remove_tree(dir);
}

/* A --set of a path the sweep sweeps, in any spelling of its list indices, or of a path inside
 * one (a swept map replaces it whole), would change no point: an error at the --set naming the
 * swept path where the sweep file has it. A --set inside a point only a variant replaces is a
 * warning (set-under-replaced-policy). */
static void test_set_swept_path(void) {
  g_autofree char *dir = ema_test_temp_dir();
  g_autofree char *file = g_build_filename(dir, "maps.yaml", NULL);
  g_autofree char *inside = NULL;
  g_autoptr(EmaTestRun) swept =
      ema_test_cli("sweep", GRID, "--list", "--set", "tenants.00.trace.rate=5", NULL);
  g_autoptr(EmaTestRun) below = NULL;
  ema_test_assert_failed(swept, 1,
                         "--set:1:1: tenants.00.trace.rate: the sweep sets tenants.0.trace.rate "
                         "in every point (" GRID ":19:3), so this --set would change nothing: "
                         "change the swept values instead\n");
  g_assert_true(g_file_set_contents(
      file,
      "name: maps\nserver: h200x2\ntenants:\n"
      "  - {name: a, model: llama-3.1-8b, gpu: 0, trace: {arrivals: poisson, rate: 2, "
      "requests: 5, prompt: {dist: fixed, tokens: 100}, output: {dist: fixed, tokens: 10}}}\n"
      "sweep:\n  tenants.0.trace:\n"
      "    - {arrivals: poisson, rate: 2, requests: 5, prompt: {dist: fixed, tokens: 100},\n"
      "       output: {dist: fixed, tokens: 10}}\n",
      -1, NULL));
  below = ema_test_cli("sweep", file, "--list", "--set", "tenants.0.trace.requests=9", NULL);
  inside = g_strdup_printf("--set:1:1: tenants.0.trace.requests: the sweep sets tenants.0.trace "
                           "in every point (%s:6:3), so this --set would change nothing",
                           file);
  ema_test_assert_failed(below, 1, inside);
  /* the sweep file's own keys (but repeats) are the file's: said so, not "unknown key in
   * experiment" */
  for (guint i = 0; i < 2; i++) {
    const char *set = i ? "plot.title=x" : "sweep.duration=[1s]";
    g_autoptr(EmaTestRun) own = ema_test_cli("sweep", GRID, "--list", "--set", set, NULL);
    g_autofree char *want = g_strdup_printf(
        "--set:1:1: %s: a key of the sweep file, not of its experiment: edit it there (--set sets "
        "the experiment's keys in every point, and repeats)\n",
        i ? "plot" : "sweep");
    ema_test_assert_failed(own, 1, want);
  }
  ema_test_remove_tree(dir);
}

/* --list --part R/K checks and lists the part's own points, the points i with i % K == R. */
static void test_list_part(void) {
  for (guint r = 0; r < 3; r += 2) {
    g_autofree char *part = g_strdup_printf("%u/3", r);
    g_autoptr(EmaTestRun) run = ema_test_cli("sweep", GRID, "--list", "--part", part, NULL);
    g_auto(GStrv) lines = g_strsplit(run->out, "\n", -1);
    ema_test_assert_ok(run);
    g_assert_cmpuint(g_strv_length(lines), ==, GRID_POINTS / 3 + 1);
    for (guint i = 0; i < GRID_POINTS / 3; i++) {
      g_autofree char *number = g_strdup_printf("%03u-", 3 * i + r);
      g_assert_true(g_str_has_prefix(lines[i], number));
    }
  }
}

/* ---- running: -j, resume, MPI ------------------------------------------------ */

/* A two-point sweep of a few requests each in DIR/small.yaml; its path. */
static char *small_sweep(const char *dir) {
  char *file = g_build_filename(dir, "small.yaml", NULL);
  g_assert_true(g_file_set_contents(
      file,
      "name: small\nserver: h200x2\ntenants:\n"
      "  - {name: a, model: llama-3.1-8b, gpu: 0, trace: {arrivals: poisson, rate: 2, "
      "requests: 10, prompt: {dist: fixed, tokens: 100}, output: {dist: fixed, tokens: 10}}}\n"
      "sweep:\n  tenants.0.trace.rate: [2, 4]\n",
      -1, NULL));
  return file;
}

static char *reference_dir;

/* The grid run uninterrupted with -j 1 (once; the tests compare to it). */
static const char *reference(void) {
  if (reference_dir == NULL) {
    g_autofree char *dir = ema_test_temp_dir();
    g_autoptr(EmaTestRun) run = NULL;
    reference_dir = g_build_filename(dir, "j1", NULL);
    run = ema_test_cli("sweep", GRID, "-j", "1", "-o", reference_dir, "--no-plot", NULL);
    ema_test_assert_ok(run);
  }
  return reference_dir;
}

static gint compare_names(gconstpointer a, gconstpointer b) {
  return strcmp(*(const char *const *) a, *(const char *const *) b);
}

/* The summary.json of DIR's first N point folders (sorted by name), into OUT. */
static void first_points(const char *dir, guint n, char **out) {
  g_autoptr(GDir) d = g_dir_open(dir, 0, NULL);
  g_autoptr(GPtrArray) names = g_ptr_array_new_with_free_func(g_free);
  const char *name;
  while (d && (name = g_dir_read_name(d)) != NULL) {
    g_autofree char *summary = g_build_filename(dir, name, "summary.json", NULL);
    if (g_file_test(summary, G_FILE_TEST_EXISTS))
      g_ptr_array_add(names, g_strdup(name));
  }
  g_ptr_array_sort(names, compare_names);
  g_assert_cmpuint(names->len, >=, n);
  for (guint i = 0; i < n; i++)
    out[i] = g_build_filename(dir, names->pdata[i], "summary.json", NULL);
}

/* A finished sweep resumed after two points' summary.json were tampered with: one nested past
 * what json-glib's recursive parser takes, one whose provenance names a FIFO as an input (its
 * hash is not waited for). Both points run again; the sweep ends with the reference's sweep.csv,
 * neither crashing nor hanging. */
static void test_resume_tampered(void) {
  const char *one = reference();
  g_autofree char *dir = ema_test_temp_dir();
  g_autofree char *copy = g_strdup_printf("cp -a '%s/.' '%s'", one, dir);
  g_autofree char *fifo = g_build_filename(dir, "fifo", NULL);
  g_autofree char *csv1 = ema_test_read_file(one, "sweep.csv");
  g_autofree char *csv2 = NULL;
  char *points[2] = {NULL, NULL};
  g_autofree char *text = NULL;
  g_autofree char *deep = g_strnfill(100000, '[');
  gint status = 0;
  g_assert_true(g_spawn_command_line_sync(copy, NULL, NULL, &status, NULL) && status == 0);
  first_points(dir, 2, points);
  g_assert_true(g_file_set_contents(points[0], deep, -1, NULL));
  g_assert_true(g_file_get_contents(points[1], &text, NULL, NULL));
  g_assert_cmpint(mkfifo(fifo, 0600), ==, 0);
  {
    g_autofree char *entry =
        g_strdup_printf("\"inputs\" : [ {\"file\" : \"%s\", \"sha256\" : \"00\"},", fifo);
    g_auto(GStrv) parts = g_strsplit(text, "\"inputs\" : [", 2);
    g_autofree char *tampered = NULL;
    g_assert_nonnull(parts[1]);
    tampered = g_strconcat(parts[0], entry, parts[1], NULL);
    g_assert_true(g_file_set_contents(points[1], tampered, -1, NULL));
  }
  {
    g_autoptr(EmaTestRun) run =
        ema_test_cli("sweep", GRID, "-j", "1", "-o", dir, "--no-plot", NULL);
    /* the FIFO's point: its input "changed" (no hash of a FIFO); the deep one: unreadable */
    ema_test_assert_ok_warned(run, "ema-sim sweep: 1 finished point was made from files that "
                                   "changed since (");
    g_assert_nonnull(strstr(run->out, "24 points: 24 ok (22 found done), 0 failed\n"));
  }
  /* --timeout takes whole seconds or a duration with its unit; nothing else */
  for (guint i = 0; i < 3; i++) {
    static const char *const bad[] = {"abc", "-1", "2y"};
    g_autoptr(EmaTestRun) refused =
        ema_test_cli("sweep", GRID, "--timeout", bad[i], "--list", NULL);
    ema_test_assert_failed(refused, 2,
                           "ema-sim: --timeout: give whole seconds (e.g. 90) or a duration (e.g. "
                           "90s, 5min), up to a year; 0: no limit");
  }
  {
    g_autoptr(EmaTestRun) listed = ema_test_cli("sweep", GRID, "--timeout", "2min", "--list", NULL);
    ema_test_assert_ok(listed);
  }
  csv2 = ema_test_read_file(dir, "sweep.csv");
  g_assert_cmpstr(csv1, ==, csv2);
  g_free(points[0]);
  g_free(points[1]);
  ema_test_remove_tree(dir);
}

static void test_jobs(void) {
  const char *one = reference();
  g_autofree char *dir = ema_test_temp_dir();
  g_autofree char *csv1 = ema_test_read_file(one, "sweep.csv");
  g_autofree char *csv2 = NULL;
  g_autofree char *states = NULL;
  g_auto(GStrv) lines = g_strsplit(csv1, "\n", -1);
  g_autoptr(EmaTestRun) run = ema_test_cli("sweep", GRID, "-j", "2", "-o", dir, "--no-plot", NULL);
  g_autofree char *header =
      g_strdup_printf("sweep grid: %u points in %s/, 2 at a time\n", GRID_POINTS, dir);
  ema_test_assert_ok(run);
  g_assert_true(g_str_has_prefix(run->out, header));
  g_assert_nonnull(strstr(run->out, "\n24 points: 24 ok, 0 failed\n"));
  /* -j takes 1 to 4096; leaving it out means one per CPU, and no -j value does */
  for (guint i = 0; i < 3; i++) {
    static const char *const bad[] = {"0", "-1", "4097"};
    g_autoptr(EmaTestRun) refused =
        ema_test_cli("sweep", GRID, "-j", bad[i], "-o", dir, "--no-plot", NULL);
    ema_test_assert_failed(refused, 2,
                           "ema-sim: --jobs: give a number of processes from 1 to 4096 (leave -j "
                           "out for one per CPU)");
  }
  csv2 = ema_test_read_file(dir, "sweep.csv");
  g_assert_cmpstr(csv1, ==, csv2);
  /* the header, then one row per point in point order */
  g_assert_cmpuint(g_strv_length(lines), ==, GRID_POINTS + 2);
  g_assert_true(g_str_has_prefix(
      lines[0], "point,variant,tenants.0.trace.rate,tenants.0.engine.max_num_seqs,repeat,seed,"
                "status,chat.throughput_tok_s,chat.total_tok_s,chat.req_per_s,chat.goodput_req_s,"
                "chat.slo_attainment,chat.arrived,chat.completed,chat.rejected,chat.unfinished,"
                "chat.timed_out,"
                "chat.preemptions,chat.kv_blocks,chat.kv_util_mean,chat.kv_util_usable_mean,"
                "chat.slowed_by_peers_s,chat.borrowed_peak_bytes,chat.lent_peak_bytes,"
                "chat.ttft_p50_ms,chat.ttft_p90_ms,chat.ttft_p95_ms,"
                "chat.ttft_p99_ms,chat.ttft_mean_ms,chat.ttft_std_ms,chat.tpot_p50_ms,"));
  g_assert_nonnull(strstr(lines[0], ",chat.itl_p99_ms,"));
  g_assert_nonnull(strstr(lines[0], ",chat.e2e_std_ms,"));
  g_assert_nonnull(strstr(lines[0], ",pool.borrows,"));
  g_assert_nonnull(strstr(lines[0], ",pool.reclaims,"));
  g_assert_true(
      g_str_has_prefix(lines[1], "000-static-rate=10-max_num_seqs=16-r0,static,10,16,0,3,ok,"));
  g_assert_true(g_str_has_prefix(lines[24], "023-ema-rate=160-max_num_seqs=64-r1,ema,160,64,1,"));
  g_assert_cmpstr(lines[25], ==, "");
  states = statuses(dir);
  g_assert_cmpuint(strlen(states), ==, GRID_POINTS * 3 - 1);
  g_assert_null(strstr(states, "failed"));
  /* each point in its folder, resolved.yaml first */
  g_assert_true(exists(dir, "000-static-rate=10-max_num_seqs=16-r0/resolved.yaml"));
  g_assert_true(exists(dir, "023-ema-rate=160-max_num_seqs=64-r1/summary.json"));
  g_assert_true(exists(dir, "023-ema-rate=160-max_num_seqs=64-r1/timeline.csv"));
  g_assert_true(exists(dir, "plot.yaml"));
  g_assert_false(exists(dir, "plots"));
  ema_test_remove_tree(dir);
}

static void kill_group(GPid pid) {
  int status;
  kill(-pid, SIGKILL);
  waitpid(pid, &status, 0);
}

static void in_own_group(gpointer data) {
  setpgid(0, 0);
}

static void test_resume(void) {
  const char *one = reference();
  g_autofree char *dir = ema_test_temp_dir();
  g_auto(GStrv) envp = ema_test_cli_environ(NULL);
  const char *argv[] = {ema_test_sim_path(), "sweep", GRID, "-j", "2", "-o", dir,
                        "--no-plot",         NULL};
  GError *error = NULL;
  GPid pid;
  guint done = 0;
  gint64 deadline = g_get_monotonic_time() + 60 * G_USEC_PER_SEC;
  g_autofree char *csv1 = ema_test_read_file(one, "sweep.csv");
  g_autofree char *csv2 = NULL;
  g_autofree char *found = NULL;
  /* start it in its own process group, wait until some points are done,
   * kill the whole group (the sweep and the points running) */
  if (!g_spawn_async(g_getenv("EMA_SOURCE_ROOT"), (char **) argv, envp,
                     G_SPAWN_DO_NOT_REAP_CHILD | G_SPAWN_STDOUT_TO_DEV_NULL |
                         G_SPAWN_STDERR_TO_DEV_NULL,
                     in_own_group, NULL, &pid, &error))
    g_error("cannot run ema-sim: %s", error->message);
  setpgid(pid, pid); /* the child does the same: whichever runs first */
  while ((done = points_done(dir)) < 6 && g_get_monotonic_time() < deadline)
    g_usleep(1000);
  kill_group(pid);
  g_usleep(100000); /* the points' processes die too (the group's signal) */
  done = points_done(dir);
  g_test_message("killed with %u of %u points done", done, GRID_POINTS);
  g_assert_cmpuint(done, >=, 6);
  g_assert_false(exists(dir, "sweep.csv"));
  if (done == GRID_POINTS)
    g_test_message("the sweep ended before the kill: resume finds everything done");
  {
    g_autoptr(EmaTestRun) run =
        ema_test_cli("sweep", GRID, "-j", "2", "-o", dir, "--no-plot", NULL);
    ema_test_assert_ok(run);
    /* every point complete after the kill is found done, not run again */
    found = g_strdup_printf("24 points: 24 ok (%u found done), 0 failed\n", done);
    g_assert_nonnull(strstr(run->out, found));
  }
  csv2 = ema_test_read_file(dir, "sweep.csv");
  g_assert_cmpstr(csv1, ==, csv2);
  /* a point whose experiment changed runs again */
  {
    g_autoptr(EmaTestRun) run = ema_test_cli("sweep", GRID, "-j", "2", "-o", dir, "--no-plot",
                                             "--set", "tenants.0.trace.requests=50", NULL);
    ema_test_assert_ok(run);
    g_assert_nonnull(strstr(run->out, "24 points: 24 ok, 0 failed\n"));
  }
  {
    g_autofree char *csv3 = ema_test_read_file(dir, "sweep.csv");
    g_assert_cmpstr(csv1, !=, csv3);
  }
  ema_test_remove_tree(dir);
}

static void test_mpi(void) {
  const char *one = reference();
  g_autofree char *mpirun = g_find_program_in_path("mpirun");
  g_autofree char *dir = NULL;
  g_autofree char *csv1 = NULL, *csv2 = NULL;
  g_autoptr(EmaTestRun) run = NULL;
  if (g_strcmp0(g_getenv("EMA_SIM_MPI"), "1") != 0) {
    g_test_skip("ema-sim was built without MPI (-Dmpi)");
    return;
  }
  if (mpirun == NULL) {
    g_test_skip("mpirun is not on PATH");
    return;
  }
  dir = ema_test_temp_dir();
  /* as root in CI: Open MPI refuses root without these; containers often
   * lack the shared-memory single-copy mechanism; one machine needs no ssh */
  g_setenv("OMPI_ALLOW_RUN_AS_ROOT", "1", TRUE);
  g_setenv("OMPI_ALLOW_RUN_AS_ROOT_CONFIRM", "1", TRUE);
  g_setenv("OMPI_MCA_btl_vader_single_copy_mechanism", "none", TRUE);
  g_setenv("OMPI_MCA_rmaps_base_oversubscribe", "1", TRUE);
  g_setenv("OMPI_MCA_plm", "isolated", TRUE);
  /* Open MPI's own allocations outlive MPI_Finalize: in the sanitizer
   * build, leak checking is off for the ranks (not for the other tests) */
  {
    g_autofree char *asan = g_strconcat(g_getenv("ASAN_OPTIONS") ? g_getenv("ASAN_OPTIONS") : "",
                                        ":detect_leaks=0", NULL);
    g_setenv("ASAN_OPTIONS", asan, TRUE);
  }
  {
    const char *argv[] = {
        mpirun, "-n",        "2", "--oversubscribe", ema_test_sim_path(), "sweep", GRID, "-o",
        dir,    "--no-plot", NULL};
    run = ema_test_cli_argv(argv, NULL);
  }
  if (run->status != 0) {
    g_autofree char *e = ema_test_escaped(run->err);
    g_error("mpirun exit %d, stderr '%s'", run->status, e);
  }
  g_assert_nonnull(strstr(run->out, " over 2 MPI ranks, 1 at a time each\n"));
  g_assert_nonnull(strstr(run->out, "24 points: 24 ok, 0 failed\n"));
  csv1 = ema_test_read_file(one, "sweep.csv");
  csv2 = ema_test_read_file(dir, "sweep.csv");
  g_assert_cmpstr(csv1, ==, csv2);
  ema_test_remove_tree(dir);
}

/* --part R/K: shares run apart (a job array), then one run gathers them. */
static void test_parts(void) {
  const char *one = reference();
  g_autofree char *dir = ema_test_temp_dir();
  g_autofree char *csv1 = ema_test_read_file(one, "sweep.csv");
  g_autofree char *csv2 = NULL;
  g_autoptr(EmaTestRun) first =
      ema_test_cli("sweep", GRID, "--part", "0/3", "-o", dir, "--no-plot", NULL);
  g_autoptr(EmaTestRun) second =
      ema_test_cli("sweep", GRID, "--part", "2/3", "-o", dir, "--no-plot", NULL);
  g_autoptr(EmaTestRun) bad = ema_test_cli("sweep", GRID, "--part", "3/3", "-o", dir, NULL);
  ema_test_assert_ok(first);
  ema_test_assert_ok(second);
  g_assert_nonnull(strstr(first->out, "part 0/3 of 24 points in "));
  g_assert_nonnull(strstr(first->out, "\n8 points: 8 ok, 0 failed\n"));
  {
    /* the next step, as a command to paste */
    g_autofree char *next =
        g_strdup_printf("sweep.csv: run `ema-sim sweep %s -o %s` (without --part) when every part "
                        "is done\n",
                        GRID, dir);
    ema_test_assert_contains(first->out, next);
  }
  g_assert_false(exists(dir, "sweep.csv"));
  g_assert_true(exists(dir, "000-static-rate=10-max_num_seqs=16-r0/summary.json"));
  g_assert_false(exists(dir, "001-static-rate=10-max_num_seqs=16-r1"));
  g_assert_true(exists(dir, "002-static-rate=10-max_num_seqs=64-r0/summary.json"));
  g_assert_cmpuint(points_done(dir), ==, 16);
  g_assert_cmpint(bad->status, ==, 2);
  {
    g_autoptr(EmaTestRun) gather = ema_test_cli("sweep", GRID, "-o", dir, "--no-plot", NULL);
    ema_test_assert_ok(gather);
    g_assert_nonnull(strstr(gather->out, "\n24 points: 24 ok (16 found done), 0 failed\n"));
  }
  csv2 = ema_test_read_file(dir, "sweep.csv");
  g_assert_cmpstr(csv1, ==, csv2);
  ema_test_remove_tree(dir);
}

/* A finished point is found done only under the search paths it ran with (its run.env): another
 * EMA_ENGINE_PATH, EMA_PROFILE_PATH or --plugin-dir may find other files under the same names,
 * so its points run again, the note naming what changed, and so they do on the way back. */
static void test_resume_search_paths(void) {
  g_autofree char *dir = ema_test_temp_dir();
  g_autofree char *file = small_sweep(dir);
  g_autofree char *out = g_build_filename(dir, "out", NULL);
  g_autofree char *engines = g_build_filename(dir, "engines", NULL);
  g_autofree char *engine_path = g_strconcat("EMA_ENGINE_PATH=", engines, NULL);
  g_autofree char *profile_path = g_strconcat("EMA_PROFILE_PATH=", dir, NULL);
  g_autofree char *was_engines = NULL;
  const char *const other_engines[] = {engine_path, NULL};
  const char *const other_profiles[] = {profile_path, NULL};
  g_assert_cmpint(g_mkdir(engines, 0755), ==, 0);
  {
    g_autoptr(EmaTestRun) run =
        ema_test_cli("sweep", file, "-j", "1", "-o", out, "--no-plot", NULL);
    ema_test_assert_ok(run);
    ema_test_assert_contains(run->out, "\n2 points: 2 ok, 0 failed\n");
  }
  {
    g_autoptr(EmaTestRun) run =
        ema_test_cli_env(other_engines, "sweep", file, "-j", "1", "-o", out, "--no-plot", NULL);
    g_autofree char *note =
        g_strdup_printf("ema-sim sweep: 2 finished points were made from files that changed since "
                        "(EMA_ENGINE_PATH is now %s, was ",
                        engines);
    g_assert_cmpint(run->status, ==, 0);
    g_assert_true(g_str_has_prefix(run->err, note));
    ema_test_assert_contains(run->out, "\n2 points: 2 ok, 0 failed\n");
  }
  {
    g_autoptr(EmaTestRun) run =
        ema_test_cli_env(other_engines, "sweep", file, "-j", "1", "-o", out, "--no-plot", NULL);
    ema_test_assert_ok(run);
    ema_test_assert_contains(run->out, "\n2 points: 2 ok (2 found done), 0 failed\n");
  }
  {
    g_autoptr(EmaTestRun) run =
        ema_test_cli("sweep", file, "-j", "1", "-o", out, "--no-plot", NULL);
    was_engines = g_strdup_printf(", was %s): running them again\n", engines);
    g_assert_cmpint(run->status, ==, 0);
    ema_test_assert_contains(run->err, "(EMA_ENGINE_PATH is now ");
    ema_test_assert_contains(run->err, was_engines);
    ema_test_assert_contains(run->out, "\n2 points: 2 ok, 0 failed\n");
  }
  {
    g_autoptr(EmaTestRun) run =
        ema_test_cli_env(other_profiles, "sweep", file, "-j", "1", "-o", out, "--no-plot", NULL);
    g_assert_cmpint(run->status, ==, 0);
    ema_test_assert_contains(run->err, "(EMA_PROFILE_PATH is now ");
    ema_test_assert_contains(run->out, "\n2 points: 2 ok, 0 failed\n");
  }
  {
    g_autoptr(EmaTestRun) run = ema_test_cli_env(other_profiles, "sweep", file, "-j", "1", "-o",
                                                 out, "--no-plot", "--plugin-dir", engines, NULL);
    g_autofree char *note =
        g_strdup_printf("(arguments is now --plugin-dir %s, was none)", engines);
    g_assert_cmpint(run->status, ==, 0);
    ema_test_assert_contains(run->err, note);
  }
  ema_test_remove_tree(dir);
}

/* A sweep run from one working directory with a relative -o is found done from another: what
 * its points recorded (their resolved.yaml's path) does not depend on the working directory. */
static void test_resume_other_cwd(void) {
  g_autofree char *dir = ema_test_temp_dir();
  g_autofree char *file = small_sweep(dir);
  g_autofree char *out = g_build_filename(dir, "out", NULL);
  const char *const cli[] = {"EMA_HWMODEL_PATH", NULL}; /* as ema_test_cli runs */
  const char *const here[] = {ema_test_sim_path(), "sweep", "small.yaml", "-o", "out", "-j", "1",
                              "--no-plot",         NULL};
  const char *const there[] = {ema_test_sim_path(), "sweep", file, "-o", out, "-j", "1",
                               "--no-plot",         NULL};
  g_autoptr(EmaTestRun) first = ema_test_run(here, dir, cli);
  g_autoptr(EmaTestRun) second = ema_test_run(there, "/", cli);
  ema_test_assert_ok(first);
  ema_test_assert_ok(second);
  ema_test_assert_contains(second->out, "\n2 points: 2 ok (2 found done), 0 failed\n");
  ema_test_remove_tree(dir);
}

/* Points that run again take the sweep.csv, plot.yaml and figures of the earlier results away
 * before they start (all come back once every point is done): a --part run of a changed sweep,
 * which writes none of them, leaves none that describe other results. */
static void test_results_removed(void) {
  g_autofree char *dir = ema_test_temp_dir();
  g_autofree char *file = small_sweep(dir);
  g_autofree char *out = g_build_filename(dir, "out", NULL);
  g_autofree char *plots = g_build_filename(out, "plots", NULL);
  {
    g_autoptr(EmaTestRun) run =
        ema_test_cli("sweep", file, "-j", "1", "-o", out, "--no-plot", NULL);
    ema_test_assert_ok(run);
  }
  g_assert_true(exists(out, "sweep.csv"));
  g_assert_true(exists(out, "plot.yaml"));
  g_assert_cmpint(g_mkdir(plots, 0755), ==, 0);
  {
    g_autofree char *old = g_build_filename(plots, "sweep-throughput.png", NULL);
    g_assert_true(g_file_set_contents(old, "an earlier figure", -1, NULL));
  }
  {
    g_autoptr(EmaTestRun) run = ema_test_cli("sweep", file, "-j", "1", "-o", out, "--no-plot",
                                             "--part", "0/2", "--set", "seed=5", NULL);
    ema_test_assert_ok(run);
    ema_test_assert_contains(run->out, "\n1 points: 1 ok, 0 failed\n");
    /* the gathering command carries the part's --set: without it, it would be another sweep */
    ema_test_assert_contains(run->out, " --set seed=5` (without --part) when every part is done\n");
  }
  g_assert_false(exists(out, "sweep.csv"));
  g_assert_false(exists(out, "plot.yaml"));
  g_assert_false(exists(out, "plots"));
  {
    g_autoptr(EmaTestRun) run =
        ema_test_cli("sweep", file, "-j", "1", "-o", out, "--no-plot", "--set", "seed=5", NULL);
    ema_test_assert_ok(run);
    ema_test_assert_contains(run->out, "\n2 points: 2 ok (1 found done), 0 failed\n");
  }
  g_assert_true(exists(out, "sweep.csv"));
  ema_test_remove_tree(dir);
}

/* A sweep's folder holds the points of the sweep as it is now: a run of another definition
 * (repeats, other values) into it removes the points of the last one that it lacks, and keeps
 * (and finds done) the ones they share. */
static void test_points_of_another_definition(void) {
  g_autofree char *dir = ema_test_temp_dir();
  g_autofree char *file = small_sweep(dir);
  g_autofree char *out = g_build_filename(dir, "out", NULL);
  g_autoptr(EmaTestRun) first =
      ema_test_cli("sweep", file, "-j", "1", "-o", out, "--no-plot", NULL);
  g_autoptr(EmaTestRun) repeated = NULL, again = NULL, values = NULL;
  ema_test_assert_ok(first);
  g_assert_true(exists(out, "000-rate=2") && exists(out, "001-rate=4"));
  repeated =
      ema_test_cli("sweep", file, "-j", "1", "-o", out, "--no-plot", "--set", "repeats=2", NULL);
  ema_test_assert_ok(repeated);
  g_assert_false(exists(out, "000-rate=2") || exists(out, "001-rate=4"));
  g_assert_true(exists(out, "000-rate=2-r0") && exists(out, "003-rate=4-r1"));
  again = ema_test_cli("sweep", file, "-j", "1", "-o", out, "--no-plot", NULL);
  ema_test_assert_ok(again);
  g_assert_false(exists(out, "000-rate=2-r0") || exists(out, "003-rate=4-r1"));
  g_assert_true(exists(out, "000-rate=2") && exists(out, "001-rate=4"));
  {
    g_autofree char *text = NULL;
    char *at;
    g_assert_true(g_file_get_contents(file, &text, NULL, NULL));
    at = strstr(text, "rate: [2, 4]");
    g_assert_nonnull(at);
    at[strlen("rate: [2, ")] = '8';
    g_assert_true(g_file_set_contents(file, text, -1, NULL));
  }
  values = ema_test_cli("sweep", file, "-j", "1", "-o", out, "--no-plot", NULL);
  ema_test_assert_ok(values);
  ema_test_assert_contains(values->out, "\n2 points: 2 ok (1 found done), 0 failed\n");
  g_assert_false(exists(out, "001-rate=4"));
  g_assert_true(exists(out, "000-rate=2") && exists(out, "001-rate=8"));
  ema_test_remove_tree(dir);
}

/* A sweep's point folder is the sweep's: a run given it as -o is refused, the point's results
 * (which sweep.csv describes) untouched, and another folder taken as usual. */
static void test_point_not_another_runs(void) {
  g_autofree char *dir = ema_test_temp_dir();
  g_autofree char *file = small_sweep(dir);
  g_autofree char *out = g_build_filename(dir, "out", NULL);
  g_autofree char *point = g_build_filename(out, "000-rate=2", NULL);
  g_autofree char *resolved = g_build_filename(point, "resolved.yaml", NULL);
  g_autofree char *elsewhere = g_build_filename(dir, "elsewhere", NULL);
  g_autofree char *before = NULL, *after = NULL;
  g_autoptr(EmaTestRun) sweep =
      ema_test_cli("sweep", file, "-j", "1", "-o", out, "--no-plot", NULL);
  g_autoptr(EmaTestRun) run = NULL, other = NULL;
  ema_test_assert_ok(sweep);
  before = ema_test_read_file(point, "summary.json");
  run = ema_test_cli("run", resolved, "-o", point, "--no-plot", "--set", "seed=9", NULL);
  g_assert_cmpint(run->status, !=, 0);
  ema_test_assert_contains(run->err, "is a point of the sweep in ");
  ema_test_assert_contains(run->err, "give another -o");
  after = ema_test_read_file(point, "summary.json");
  g_assert_cmpstr(before, ==, after);
  other = ema_test_cli("run", resolved, "-o", elsewhere, "--no-plot", "--set", "seed=9", NULL);
  ema_test_assert_ok(other);
  ema_test_remove_tree(dir);
}

/* ---- audit of sweeps on a cluster (2026-12-07): each test failed before its fix ---------- */

/* A summary.json that another point's run wrote (copied over this point's: the other point's
 * resolved.yaml is unchanged, so no input "changed"), or one without provenance, is not this
 * point's result: it runs again, with a note naming what made it, and sweep.csv holds its own
 * metrics, the same bytes as before (it held the other point's row, silently). */
static void test_summary_of_another_point(void) {
  g_autofree char *dir = ema_test_temp_dir();
  g_autofree char *file = small_sweep(dir);
  g_autofree char *out = g_build_filename(dir, "out", NULL);
  g_autofree char *first = g_build_filename(out, "000-rate=2", "summary.json", NULL);
  g_autofree char *second = g_build_filename(out, "001-rate=4", "summary.json", NULL);
  g_autofree char *csv = NULL, *other = NULL, *text = NULL;
  {
    g_autoptr(EmaTestRun) run =
        ema_test_cli("sweep", file, "-j", "1", "-o", out, "--no-plot", NULL);
    ema_test_assert_ok(run);
  }
  csv = ema_test_read_file(out, "sweep.csv");
  other = ema_test_read_file(out, "001-rate=4/summary.json");
  g_assert_true(g_file_set_contents(first, other, -1, NULL));
  {
    g_autoptr(EmaTestRun) run =
        ema_test_cli("sweep", file, "-j", "1", "-o", out, "--no-plot", NULL);
    g_autofree char *note = g_strdup_printf(
        "ema-sim sweep: 1 point has a summary.json that its resolved.yaml did not make "
        "(000-rate=2: made from %s/001-rate=4/resolved.yaml): running it again\n",
        out);
    g_assert_cmpint(run->status, ==, 0);
    g_assert_cmpstr(run->err, ==, note);
    ema_test_assert_contains(run->out, "\n2 points: 2 ok (1 found done), 0 failed\n");
  }
  {
    g_autofree char *again = ema_test_read_file(out, "sweep.csv");
    g_assert_cmpstr(again, ==, csv);
  }
  /* a summary.json without provenance: no run of this build is known to have made it */
  text = ema_test_read_file(out, "001-rate=4/summary.json");
  {
    char *at = strstr(text, "\"provenance\"");
    g_assert_nonnull(at);
    at[1] = 'P';
    g_assert_true(g_file_set_contents(second, text, -1, NULL));
  }
  {
    g_autoptr(EmaTestRun) run =
        ema_test_cli("sweep", file, "-j", "1", "-o", out, "--no-plot", NULL);
    g_assert_cmpint(run->status, ==, 0);
    g_assert_cmpstr(run->err, ==,
                    "ema-sim sweep: 1 point has a summary.json that its resolved.yaml did not "
                    "make (001-rate=4: no provenance): running it again\n");
  }
  {
    g_autofree char *again = ema_test_read_file(out, "sweep.csv");
    g_assert_cmpstr(again, ==, csv);
  }
  ema_test_remove_tree(dir);
}

/* --part processes and MPI ranks share their folder through a shared lock on it: a sweep
 * without --part (its exclusive lock) is refused while one runs there, and one is refused
 * while such a sweep runs (it removed and reran points under them, and wrote a sweep.csv their
 * runs then contradicted); and a part of another sweep (another --set) or of other shares
 * (another K) is refused while the parts of the first run (their points were mixed, or run
 * twice). With none running, a part of a changed sweep takes the folder, as a plain run does.
 * The test holds the lock as the other process would. */
static void test_parts_share(void) {
  g_autofree char *dir = ema_test_temp_dir();
  g_autofree char *file = small_sweep(dir);
  g_autofree char *out = g_build_filename(dir, "out", NULL);
  g_autofree char *busy = NULL, *other = NULL, *split = NULL, *waited = NULL;
  int fd;
  {
    g_autoptr(EmaTestRun) run =
        ema_test_cli("sweep", file, "--part", "0/2", "-o", out, "--no-plot", NULL);
    ema_test_assert_ok(run);
  }
  fd = open(out, O_RDONLY | O_DIRECTORY);
  g_assert_cmpint(fd, >=, 0);
  g_assert_cmpint(flock(fd, LOCK_SH | LOCK_NB), ==, 0); /* part 0/2 still running */
  busy = g_strdup_printf("ema-sim: output directory %s is in use by another process of ema-sim "
                         "or ema-validate (writing there now): wait for it, or give another -o\n",
                         out);
  other = g_strdup_printf("ema-sim: output directory %s is written now by processes of another "
                          "sweep (from %s): its points differ from this one's (another sweep "
                          "file, --set or search paths), and the two would be mixed there; wait "
                          "for them to end, or give another -o\n",
                          out, file);
  split = g_strdup_printf("ema-sim: output directory %s is written now by processes that split "
                          "the sweep into 2 parts (--part R/2, or 2 MPI ranks), not 3: their "
                          "shares and this one's overlap; wait for them to end, or give the "
                          "same K\n",
                          out);
  {
    g_autoptr(EmaTestRun) plain = ema_test_cli("sweep", file, "-o", out, "--no-plot", NULL);
    g_autoptr(EmaTestRun) changed = ema_test_cli("sweep", file, "--part", "1/2", "-o", out,
                                                 "--no-plot", "--set", "seed=5", NULL);
    g_autoptr(EmaTestRun) shares =
        ema_test_cli("sweep", file, "--part", "1/3", "-o", out, "--no-plot", NULL);
    g_autoptr(EmaTestRun) same =
        ema_test_cli("sweep", file, "--part", "1/2", "-o", out, "--no-plot", NULL);
    ema_test_assert_failed(plain, 1, busy);
    ema_test_assert_failed(changed, 1, other);
    /* refused, it ran nothing: no count of points, no next step */
    g_assert_null(strstr(changed->out, "points:"));
    g_assert_null(strstr(changed->out, "sweep.csv: run"));
    ema_test_assert_failed(shares, 1, split);
    ema_test_assert_ok(same);
    g_assert_cmpuint(points_done(out), ==, 2);
  }
  /* a sweep without --part runs there: a part waits a moment, then is refused */
  g_assert_cmpint(flock(fd, LOCK_EX | LOCK_NB), ==, 0);
  waited = g_strdup_printf("ema-sim: output directory %s is in use by another process of ema-sim "
                           "or ema-validate (a sweep of it without --part, writing there now): "
                           "wait for it to end, then run this one again\n",
                           out);
  {
    g_autoptr(EmaTestRun) part =
        ema_test_cli("sweep", file, "--part", "0/2", "-o", out, "--no-plot", NULL);
    ema_test_assert_failed(part, 1, waited);
  }
  close(fd);
  /* none running: the changed sweep's parts take the folder, a plain run gathers them */
  {
    g_autoptr(EmaTestRun) changed = ema_test_cli("sweep", file, "--part", "1/2", "-o", out,
                                                 "--no-plot", "--set", "seed=5", NULL);
    g_autoptr(EmaTestRun) gather =
        ema_test_cli("sweep", file, "-o", out, "--no-plot", "--set", "seed=5", NULL);
    ema_test_assert_ok(changed);
    ema_test_assert_ok(gather);
    ema_test_assert_contains(gather->out, "\n2 points: 2 ok (1 found done), 0 failed\n");
  }
  /* (the sweep the sharers run, which the marker lists: a plain run keeps it) */
  g_assert_true(exists(out, "sweep.parts"));
  ema_test_remove_tree(dir);
}

/* A variant's name is one line (a newline in it made sweep.csv a file ema-sim plot refuses,
 * and --list print a point over two lines): an error at its key; so is a swept experiment name,
 * at its value (as the experiment's own name, experiment.c). A swept value with a newline
 * (here a summary) is written escaped, one line, in --list and in sweep.csv. */
static void test_names_one_line(void) {
  g_autofree char *dir = ema_test_temp_dir();
  g_autofree char *variants = g_build_filename(dir, "variants.yaml", NULL);
  g_autofree char *values = g_build_filename(dir, "values.yaml", NULL);
  g_autofree char *out = g_build_filename(dir, "out", NULL);
  const char *base =
      "name: lines\nserver: h200x2\ntenants:\n"
      "  - {name: a, model: llama-3.1-8b, gpu: 0, trace: {arrivals: poisson, rate: 2, "
      "requests: 10, prompt: {dist: fixed, tokens: 100}, output: {dist: fixed, tokens: 10}}}\n";
  g_autofree char *with_variants = g_strconcat(
      base, "variants:\n  \"st,atic\": {policy: static}\n  \"e\\nma\": {policy: ema}\n", NULL);
  g_autofree char *with_values =
      g_strconcat(base, "sweep:\n  summary: [\"x,y\", \"a\\nb\"]\n", NULL);
  g_autofree char *with_names = g_strconcat(base, "sweep:\n  name: [\"x,y\", \"a\\nb\"]\n", NULL);
  g_autofree char *names = g_build_filename(dir, "names.yaml", NULL);
  g_assert_true(g_file_set_contents(variants, with_variants, -1, NULL));
  g_assert_true(g_file_set_contents(values, with_values, -1, NULL));
  g_assert_true(g_file_set_contents(names, with_names, -1, NULL));
  {
    g_autoptr(EmaTestRun) list = ema_test_cli("sweep", variants, "--list", NULL);
    g_autofree char *prefix = g_strconcat(
        variants, ":7:3: variants: a variant's name holds no control character (0x0a at byte 1)",
        NULL);
    ema_test_assert_error_line(list, prefix);
  }
  {
    g_autoptr(EmaTestRun) list = ema_test_cli("sweep", names, "--list", NULL);
    g_autofree char *want =
        g_strconcat(names,
                    ":6:17: name: a name holds no control character (0x0a at byte 1) (point "
                    "001-name=a_b)\n",
                    NULL);
    ema_test_assert_error_line(list, want);
  }
  {
    g_autoptr(EmaTestRun) list = ema_test_cli("sweep", values, "--list", NULL);
    ema_test_assert_ok(list);
    g_assert_cmpstr(list->out, ==,
                    "000-summary=x_y  summary=x,y\n001-summary=a_b  summary=\"a\\nb\"\n");
  }
  {
    g_autoptr(EmaTestRun) run = ema_test_cli("sweep", values, "-o", out, "--no-plot", NULL);
    g_autofree char *csv = NULL;
    g_auto(GStrv) lines = NULL;
    ema_test_assert_ok(run);
    csv = ema_test_read_file(out, "sweep.csv");
    lines = g_strsplit(csv, "\n", -1);
    g_assert_cmpuint(g_strv_length(lines), ==, 4); /* the header, two rows, the end */
    g_assert_true(g_str_has_prefix(lines[2], "001-summary=a_b,,\"\"\"a\\nb\"\"\",0,"));
  }
  ema_test_remove_tree(dir);
}

/* A sweep's folder lists each point's folder in its marker (.ema-output), which is refused
 * past 64 MiB when read: a sweep whose names took more ran once, then could neither resume nor
 * run a second --part there. It is refused when loaded, at its sweep key. */
static void test_names_past_marker(void) {
  g_autofree char *dir = ema_test_temp_dir();
  g_autofree char *file = g_build_filename(dir, "names.yaml", NULL);
  g_autoptr(GString) text = g_string_new(
      "name: names\nserver: h200x2\ntenants:\n  - {name: a, model: llama-3.1-8b, gpu: 0}\n"
      "sweep:\n");
  static const guint counts[] = {10, 10, 10, 10, 30};
  for (guint a = 0; a < G_N_ELEMENTS(counts); a++) {
    g_string_append_printf(text, "  tenants.0.engine.a_parameter_name_of_24_%u: [", a);
    for (guint v = 0; v < counts[a]; v++)
      g_string_append_printf(text, "%svalue_of_twenty_four_b%02u", v ? ", " : "", v);
    g_string_append(text, "]\n");
  }
  g_assert_true(g_file_set_contents(file, text->str, -1, NULL));
  {
    g_autoptr(EmaTestRun) list = ema_test_cli("sweep", file, "--list", NULL);
    g_autofree char *prefix =
        g_strconcat(file,
                    ":5:1: sweep: the names of its 300000 points take 73 MiB, more than "
                    "the 64 MiB the list of a sweep's folder may hold (.ema-output names "
                    "each point's folder): sweep fewer points, or shorter variant names "
                    "and values",
                    NULL);
    ema_test_assert_error_line(list, prefix);
  }
  ema_test_remove_tree(dir);
}

/* The resident memory of this process, in bytes (/proc/self/statm). */
static guint64 resident_bytes(void) {
  g_autofree char *text = NULL;
  guint64 pages = 0, resident = 0;
  g_assert_true(g_file_get_contents("/proc/self/statm", &text, NULL, NULL));
  g_assert_cmpint(sscanf(text, "%" G_GUINT64_FORMAT " %" G_GUINT64_FORMAT, &pages, &resident), ==,
                  2);
  return resident * (guint64) sysconf(_SC_PAGESIZE);
}

/* A resolved sweep keeps little of each point (its resolved.yaml's digest, its seed), not the
 * resolved.yaml (some 9 KB): 10^6 points held 10 GB in each --part process and MPI rank. */
static void test_resolve_memory(void) {
  g_autofree char *dir = NULL, *file = NULL;
  g_autoptr(EmaSweep) sweep = NULL;
  GError *error = NULL;
  guint64 before, after;
#ifdef __SANITIZE_ADDRESS__
  g_test_skip("AddressSanitizer holds freed memory (its quarantine): no measure of what is kept");
  return;
#endif
  dir = ema_test_temp_dir();
  file = g_build_filename(dir, "many.yaml", NULL);
  g_assert_true(g_file_set_contents(
      file,
      "name: many\nserver: h200x2\nrepeats: 1000\ntenants:\n"
      "  - {name: a, model: llama-3.1-8b, gpu: 0, trace: {arrivals: poisson, rate: 2, "
      "requests: 10, prompt: {dist: fixed, tokens: 100}, output: {dist: fixed, tokens: 10}}}\n"
      "sweep:\n  tenants.0.trace.rate: [2, 4, 6, 8]\n",
      -1, NULL));
  sweep = ema_sweep_load(file, NULL, &error);
  g_assert_no_error(error);
  g_assert_cmpuint(ema_sweep_n_points(sweep), ==, 4000);
  {
    /* a point loaded once first: what the loader keeps for the process (models, profiles) */
    g_autoptr(EmaExperiment) first = load_point(sweep, 0);
  }
  before = resident_bytes();
  g_assert_true(ema_sweep_resolve(sweep, &error));
  g_assert_no_error(error);
  after = resident_bytes();
  g_test_message("resolving 4000 points took %" G_GUINT64_FORMAT " KB", (after - before) >> 10);
  g_assert_cmpuint(after - before, <, 4000 * 1024);
  ema_test_remove_tree(dir);
}

/* plot.yaml holds the sweep's name and plot settings as they were written, UTF-8, quotes and
 * backslashes included: it loads back as the same text, and ema-sim plot reads it. */
static void test_plot_settings_text(void) {
  g_autofree char *dir = ema_test_temp_dir();
  g_autofree char *file = g_build_filename(dir, "débit.yaml", NULL);
  g_autofree char *out = g_build_filename(dir, "out", NULL);
  g_autofree char *path = g_build_filename(out, "plot.yaml", NULL);
  g_autofree char *gnuplot = g_find_program_in_path("gnuplot");
  g_autoptr(EmaNode) settings = NULL;
  GError *error = NULL;
  g_assert_true(g_file_set_contents(
      file,
      "name: débit\nserver: h200x2\ntenants:\n"
      "  - {name: a, model: llama-3.1-8b, gpu: 0, trace: {arrivals: poisson, rate: 2, "
      "requests: 10, prompt: {dist: fixed, tokens: 100}, output: {dist: fixed, tokens: 10}}}\n"
      "sweep:\n  tenants.0.trace.rate: [2, 4]\n"
      "plot: {xlabel: 'taux µ \"λ\" \\ (req/s)'}\n",
      -1, NULL));
  {
    g_autoptr(EmaTestRun) run =
        ema_test_cli("sweep", file, "-j", "1", "-o", out, "--no-plot", NULL);
    ema_test_assert_ok(run);
  }
  settings = ema_node_load_file(path, &error);
  g_assert_no_error(error);
  g_assert_cmpstr(ema_node_get(settings, "title")->value, ==, "débit");
  g_assert_cmpstr(ema_node_get(settings, "xlabel")->value, ==, "taux µ \"λ\" \\ (req/s)");
  if (gnuplot) {
    g_autoptr(EmaTestRun) run = ema_test_cli("plot", out, NULL);
    g_autofree char *driver = NULL;
    ema_test_assert_ok(run);
    driver = ema_test_read_file(out, "plots/plots.gp");
    g_assert_nonnull(strstr(driver, "figtitle = 'débit'\n"));
  }
  ema_test_remove_tree(dir);
}

/* ---- failures ---------------------------------------------------------------- */

static void test_failing_points(void) {
  g_autofree char *dir = ema_test_temp_dir();
  g_autofree char *fast = g_build_filename(dir, "fast", NULL);
  g_autofree char *states = NULL;
  g_autoptr(EmaTestRun) run =
      ema_test_cli("sweep", FIXTURES "failing.yaml", "-j", "2", "-o", dir, "--no-plot", NULL);
  g_auto(GStrv) lines = g_strsplit(run->err, "\n", -1);
  g_assert_cmpint(run->status, ==, 1);
  /* one line per failed point, with the run's own error */
  g_assert_cmpuint(g_strv_length(lines), ==, 3);
  for (guint i = 0; i < 2; i++) {
    g_assert_true(g_str_has_prefix(lines[i], "ema-sim sweep: point 00"));
    g_assert_nonnull(strstr(lines[i], "-file=malformed.csv-max_num_seqs="));
    g_assert_nonnull(strstr(lines[i], " failed (exit 1): "));
    /* the tenant named after the row's place (a row failing mid-run named none) */
    g_assert_nonnull(
        strstr(lines[i], "malformed.csv:3:29: tenant chat: ContextTokens: not an integer: '39x6'"));
  }
  g_assert_nonnull(strstr(run->out, "6 points: 4 ok, 2 failed\n"));
  states = statuses(dir);
  g_assert_cmpstr(states, ==, "ok ok failed failed ok ok");
  g_assert_true(exists(dir, "002-file=malformed.csv-max_num_seqs=8/run.err"));
  /* --fail-fast, one at a time: nothing starts after the first failure */
  {
    g_autoptr(EmaTestRun) stop = ema_test_cli("sweep", FIXTURES "failing.yaml", "-j", "1",
                                              "--fail-fast", "-o", fast, "--no-plot", NULL);
    g_autofree char *stopped = statuses(fast);
    g_assert_cmpint(stop->status, ==, 1);
    g_assert_cmpstr(stopped, ==, "ok ok failed not-run not-run not-run");
    g_assert_nonnull(strstr(stop->out, "6 points: 2 ok, 1 failed, 3 not run (--fail-fast)\n"));
    g_assert_false(exists(fast, "003-file=malformed.csv-max_num_seqs=16"));
  }
  /* resuming runs the failed points again, and only them */
  {
    g_autoptr(EmaTestRun) again =
        ema_test_cli("sweep", FIXTURES "failing.yaml", "-j", "2", "-o", dir, "--no-plot", NULL);
    g_assert_cmpint(again->status, ==, 1);
    g_assert_nonnull(strstr(again->out, "6 points: 4 ok (4 found done), 2 failed\n"));
  }
  ema_test_remove_tree(dir);
}

/* A point that runs and warns is named on stderr with its first warning, as
 * a single run prints it; the points that do not warn are not. */
static void test_warned_points(void) {
  g_autofree char *dir = ema_test_temp_dir();
  g_autofree char *file = g_build_filename(dir, "warns.yaml", NULL);
  g_autofree char *out = g_build_filename(dir, "out", NULL);
  g_autoptr(EmaTestRun) run = NULL;
  g_auto(GStrv) lines = NULL;
  /* (a server without profile tables: no warning about absent public data) */
  g_assert_true(g_file_set_contents(
      file,
      "name: warns\nserver: mi300x8\ntenants:\n"
      "  - {name: a, model: llama-3.1-8b, gpu: 0, trace: {arrivals: poisson, rate: 2, "
      "duration: 5s, prompt: {dist: fixed, tokens: 100}, output: {dist: fixed, tokens: 10}}}\n"
      "sweep:\n  duration: [1us, 6s]\n",
      -1, NULL));
  run = ema_test_cli("sweep", file, "-j", "1", "-o", out, "--no-plot", NULL);
  g_assert_cmpint(run->status, ==, 0);
  lines = g_strsplit(run->err, "\n", -1);
  g_assert_cmpuint(g_strv_length(lines), ==, 2); /* the one warned point, then "" */
  g_assert_cmpstr(lines[0], ==,
                  "ema-sim sweep: point 000-duration=1us warned: tenant a: no request arrived "
                  "(its trace holds none, or none before the run's end): its row is empty");
  ema_test_remove_tree(dir);
}

static void test_ops_sweep(void) {
  g_autofree char *dir = ema_test_temp_dir();
  g_autoptr(EmaTestRun) run =
      ema_test_cli("sweep", FIXTURES "copies.yaml", "-o", dir, "--no-plot", NULL);
  g_autofree char *csv = NULL;
  g_autofree char *states = NULL;
  g_assert_cmpint(run->status, ==, 1); /* expectations missed, as with run */
  g_assert_cmpstr(run->err, ==, "");
  g_assert_nonnull(strstr(run->out, "6 points: 2 ok, 4 missed an expectation, 0 failed\n"));
  csv = ema_test_read_file(dir, "sweep.csv");
  g_assert_true(g_str_has_prefix(
      csv, "point,variant,ops.0.flows.0.bytes,ops.1.flows.0.bytes,repeat,seed,status,"
           "copy.seconds,copy.bandwidth_gbps,read.seconds,read.bandwidth_gbps,"
           "expectations_missed,"));
  g_assert_nonnull(strstr(csv, "\n004-bytes=1GiB-bytes=1MiB,,1GiB,1MiB,0,1,ok,"));
  states = statuses(dir);
  g_assert_cmpstr(states, ==, "missed missed missed missed ok ok");
  ema_test_remove_tree(dir);
}

/* ---- figures ----------------------------------------------------------------- */

static void assert_figure(const char *dir, const char *name, const char *title) {
  g_autofree char *png_name = g_strconcat("plots/", name, ".png", NULL);
  g_autofree char *svg_name = g_strconcat("plots/", name, ".svg", NULL);
  g_autofree char *png = NULL, *svg = NULL;
  gsize png_size;
  g_autofree char *path = g_build_filename(dir, png_name, NULL);
  GError *error = NULL;
  g_file_get_contents(path, &png, &png_size, &error);
  g_assert_no_error(error);
  g_assert_cmpuint(png_size, >, 8000);
  g_assert_cmpuint(png_size, <, 400000);
  g_assert_cmpmem(png, 4, "\x89PNG", 4);
  svg = ema_test_read_file(dir, svg_name);
  g_assert_nonnull(strstr(svg, "<svg"));
  g_assert_nonnull(strstr(svg, title));
}

static void test_sweep_figures(void) {
  const char *one = reference();
  g_autofree char *dir = NULL;
  if (!ema_test_gnuplot_or_skip())
    return;
  dir = ema_test_temp_dir();
  /* plot a copy of the reference (sweep.csv and plot.yaml) */
  {
    g_autofree char *csv = ema_test_read_file(one, "sweep.csv");
    g_autofree char *settings = ema_test_read_file(one, "plot.yaml");
    g_autofree char *csv_path = g_build_filename(dir, "sweep.csv", NULL);
    g_autofree char *settings_path = g_build_filename(dir, "plot.yaml", NULL);
    g_assert_true(g_file_set_contents(csv_path, csv, -1, NULL));
    g_assert_true(g_file_set_contents(settings_path, settings, -1, NULL));
  }
  {
    g_autoptr(EmaTestRun) run = ema_test_cli("plot", dir, NULL);
    g_autofree char *expected = g_strdup_printf(
        "figures in %s/plots/ (sweep-throughput, sweep-latency; PNG and SVG)\n", dir);
    ema_test_assert_ok(run);
    g_assert_cmpstr(run->out, ==, expected);
  }
  assert_figure(dir, "sweep-throughput", "throughput of chat");
  assert_figure(dir, "sweep-latency", "p99 latency of chat");
  {
    /* the bars are named: each mean's interval over the repeats */
    g_autofree char *svg = ema_test_read_file(dir, "plots/sweep-latency.svg");
    g_autofree char *driver = ema_test_read_file(dir, "plots/plots.gp");
    g_assert_nonnull(strstr(driver, "\nnrepeats = "));
    g_assert_true(strstr(svg, "bars: 95% interval of each mean over ") != NULL ||
                  strstr(svg, "one repeat: no interval") != NULL);
  }
  {
    g_autofree char *driver = ema_test_read_file(dir, "plots/plots.gp");
    g_autofree char *data = ema_test_read_file(dir, "plots/sweep.dat");
    /* lines per variant and batch limit; x the swept rate, labelled by plot.yaml */
    g_assert_nonnull(strstr(driver, "nseries = 4\nseries1 = 'static, max_num_seqs=16'\n"));
    g_assert_nonnull(strstr(driver, "xtitle = 'arrival rate (requests/s)'\n"));
    g_assert_nonnull(strstr(driver, "categorical = 0\n"));
    g_assert_nonnull(strstr(data, "\n# ema, max_num_seqs=64\n10 "));
  }
  /* --tenant names its own files (one per tenant, none overwritten); --paper draws PDF */
  {
    g_autoptr(EmaTestRun) run = ema_test_cli("plot", dir, "--tenant", "chat", "--paper", NULL);
    g_autofree char *expected = g_strdup_printf(
        "figures in %s/plots/ (sweep-throughput-chat, sweep-latency-chat; PDF and SVG)\n", dir);
    g_autofree char *pdf = g_build_filename(dir, "plots", "sweep-latency-chat.pdf", NULL);
    g_autofree char *head = NULL;
    ema_test_assert_ok(run);
    g_assert_cmpstr(run->out, ==, expected);
    g_assert_true(g_file_get_contents(pdf, &head, NULL, NULL));
    g_assert_true(g_str_has_prefix(head, "%PDF"));
    g_assert_true(exists(dir, "plots/sweep-latency.png")); /* the default's, still there */
  }
  /* options override plot.yaml; a column that is not there is an error */
  {
    g_autoptr(EmaTestRun) run =
        ema_test_cli("plot", dir, "--by", "none", "--x", "tenants.0.engine.max_num_seqs", "--title",
                     "by batch", NULL);
    g_autofree char *driver = ema_test_read_file(dir, "plots/plots.gp");
    ema_test_assert_ok(run);
    g_assert_nonnull(strstr(driver, "figtitle = 'by batch'\n"));
    g_assert_nonnull(strstr(driver, "series1 = 'variant=static, rate=10'\n"));
  }
  /* a title with both quotes: a gnuplot string expression gnuplot reads back */
  {
    g_autoptr(EmaTestRun) run = ema_test_cli("plot", dir, "--title", "'\"it's", NULL);
    g_autofree char *driver = ema_test_read_file(dir, "plots/plots.gp");
    ema_test_assert_ok(run);
    g_assert_nonnull(strstr(driver, "figtitle = ''.\"'\".'\"it'.\"'\".'s'\n"));
  }
  {
    g_autoptr(EmaTestRun) run = ema_test_cli("plot", dir, "--x", "nope", NULL);
    g_autofree char *prefix =
        g_strdup_printf("ema-sim: %s/sweep.csv has no column 'nope' for x", dir);
    ema_test_assert_error_line(run, prefix);
  }
  {
    g_autoptr(EmaTestRun) run = ema_test_cli("plot", dir, "--tenant", "nobody", NULL);
    g_autofree char *prefix = g_strdup_printf(
        "ema-sim: %s/sweep.csv has no tenant 'nobody' (tenants: chat; or all)", dir);
    ema_test_assert_error_line(run, prefix);
  }
  ema_test_remove_tree(dir);
}

static void test_run_figures(void) {
  g_autofree char *dir = NULL;
  if (!ema_test_gnuplot_or_skip())
    return;
  dir = ema_test_temp_dir();
  {
    /* one point of the grid with borrowing under pressure: ema on a busy GPU */
    g_autoptr(EmaTestRun) run =
        ema_test_cli("run", FIXTURES "pressure.yaml", "-o", dir, "--set", "policy=ema", NULL);
    /* its second burst is cut by the end of the run */
    ema_test_assert_ok_warned(run, "ema-sim: warning: tenant "); /* later, busy: cut by the end */
  }
  assert_figure(dir, "latency-cdf", "latency CDFs per tenant");
  assert_figure(dir, "memory", "memory per GPU over time");
  assert_figure(dir, "remote", "remote KV per GPU");
  {
    g_autofree char *data = ema_test_read_file(dir, "plots/memory.dat");
    g_autofree char *driver = ema_test_read_file(dir, "plots/plots.gp");
    g_assert_true(g_str_has_prefix(data, "# time_s, local KV, staging, lent, borrowed"));
    g_assert_nonnull(strstr(driver, "series1 = 'gpu0 (busy)'\n"));
  }
  /* --tenant picks the tenants of a run's figures, and their GPUs */
  {
    g_autoptr(EmaTestRun) run = ema_test_cli("plot", dir, "--tenant", "later", NULL);
    g_autofree char *ttft = ema_test_read_file(dir, "plots/ttft-cdf.dat");
    g_autofree char *driver = ema_test_read_file(dir, "plots/plots.gp");
    ema_test_assert_ok(run);
    g_assert_nonnull(strstr(ttft, "\n# later\n"));
    g_assert_null(strstr(ttft, "# busy"));
    g_assert_nonnull(strstr(driver, "series1 = 'gpu1 (later)'\n"));
    g_assert_null(strstr(driver, "gpu0 (busy)"));
  }
  /* --no-plot draws nothing; plot draws the same again */
  ema_test_remove_tree(dir);
  g_free(dir);
  dir = ema_test_temp_dir();
  {
    g_autoptr(EmaTestRun) run =
        ema_test_cli("run", FIXTURES "pressure.yaml", "-o", dir, "--no-plot", NULL);
    ema_test_assert_ok_warned(run, "ema-sim: warning: tenant "); /* later, busy: cut by the end */
    g_assert_false(exists(dir, "plots"));
  }
  {
    g_autoptr(EmaTestRun) run = ema_test_cli("plot", dir, NULL);
    ema_test_assert_ok(run);
    g_assert_nonnull(strstr(run->out, "(latency-cdf, memory, remote; PNG and SVG)\n"));
  }
  ema_test_remove_tree(dir);
}

/* 72 tenants: no 72-entry legend over the curves; the title says how to pick */
static void test_many_tenants_figure(void) {
  g_autofree char *dir = NULL;
  g_autoptr(GString) summary = g_string_new("{\"experiment\": \"wide\", \"tenants\": [");
  g_autoptr(GString) requests = g_string_new("tenant,ttft_ms,tpot_ms\n");
  g_autoptr(EmaTestRun) run = NULL;
  if (!ema_test_gnuplot_or_skip())
    return;
  dir = ema_test_temp_dir();
  for (guint t = 0; t < 72; t++) {
    g_string_append_printf(summary, "%s{\"name\": \"t%u\"}", t ? ", " : "", t);
    for (guint r = 1; r <= 5; r++)
      g_string_append_printf(requests, "t%u,%u,%u\n", t, 10 * r + t, r + 5);
  }
  g_string_append(summary, "]}\n");
  {
    g_autofree char *json = g_build_filename(dir, "summary.json", NULL);
    g_autofree char *csv = g_build_filename(dir, "requests.csv", NULL);
    g_assert_true(g_file_set_contents(json, summary->str, -1, NULL) &&
                  g_file_set_contents(csv, requests->str, -1, NULL));
  }
  run = ema_test_cli("plot", dir, NULL);
  ema_test_assert_ok(run);
  assert_figure(dir, "latency-cdf", "(72 tenants, no legend: --tenant NAME,... picks some)");
  ema_test_remove_tree(dir);
}

/* The sweep.csv of a sweep whose variant `alone` runs chat without code. */
static const char tenant_sets_csv[] =
    "point,variant,tenants.0.trace.rate,repeat,seed,status,chat.throughput_tok_s,"
    "chat.ttft_p99_ms,chat.tpot_p99_ms,chat.e2e_p99_ms,code.throughput_tok_s,code.ttft_p99_ms,"
    "code.tpot_p99_ms,code.e2e_p99_ms\n"
    "000-both-rate=2,both,2,0,1,ok,10,20,5,100,30,40,6,200\n"
    "001-both-rate=4,both,4,0,1,ok,11,21,5,101,31,41,6,201\n"
    "002-alone-rate=2,alone,2,0,1,ok,12,22,7,102,,,,\n"
    "003-alone-rate=4,alone,4,0,1,ok,13,23,7,103,,,,\n";

/* A new temporary folder holding TEXT as its sweep.csv, for plot; NULL (the test skipped) where
 * gnuplot is not on PATH. */
static char *sweep_csv_folder(const char *text) {
  g_autofree char *dir = NULL;
  g_autofree char *path = NULL;
  if (!ema_test_gnuplot_or_skip())
    return NULL;
  dir = ema_test_temp_dir();
  path = g_build_filename(dir, "sweep.csv", NULL);
  g_assert_true(g_file_set_contents(path, text, -1, NULL));
  return g_steal_pointer(&dir);
}

/* A sweep whose variants run other tenants (`alone` drops the second): all tenants, the
 * default, sums throughput and takes the worst latency over the tenants each point has, so that
 * `alone` has its line instead of a legend entry with no point. */
static void test_sweep_tenant_sets(void) {
  g_autofree char *dir = sweep_csv_folder(tenant_sets_csv);
  g_autofree char *data = NULL;
  if (dir == NULL)
    return;
  {
    g_autoptr(EmaTestRun) run = ema_test_cli("plot", dir, NULL);
    ema_test_assert_ok(run);
  }
  data = ema_test_read_file(dir, "plots/sweep.dat");
  ema_test_assert_contains(data, "\n# both\n2 40 40 6 200 \"2\"");
  ema_test_assert_contains(data, "\n# alone\n2 12 22 7 102 \"2\" 0 0 0 0\n4 13 23 7 103 ");
  {
    /* one tenant picked: the points without it have no value */
    g_autoptr(EmaTestRun) run = ema_test_cli("plot", dir, "--tenant", "code", NULL);
    g_autofree char *code = NULL;
    ema_test_assert_ok(run);
    code = ema_test_read_file(dir, "plots/sweep.dat");
    ema_test_assert_contains(code, "\n# alone\n2 NaN NaN NaN NaN ");
  }
  ema_test_remove_tree(dir);
}

/* A sweep plotted by variant (categories as x): a variant's name with a quote is its tick label
 * with the quote as an apostrophe (a data file's string ended at the quote, cutting the label). */
static void test_sweep_quoted_category(void) {
  g_autofree char *dir = sweep_csv_folder("point,variant,repeat,seed,status,chat.throughput_tok_s,"
                                          "chat.ttft_p99_ms,chat.tpot_p99_ms,chat.e2e_p99_ms\n"
                                          "000-a,\"say \"\"hi\"\"\",0,1,ok,10,20,5,100\n"
                                          "001-b,plain,0,1,ok,11,21,5,101\n");
  g_autofree char *data = NULL;
  if (dir == NULL)
    return;
  {
    g_autoptr(EmaTestRun) run = ema_test_cli("plot", dir, "--x", "variant", NULL);
    ema_test_assert_ok(run);
  }
  data = ema_test_read_file(dir, "plots/sweep.dat");
  ema_test_assert_contains(data, " \"say 'hi'\" ");
  ema_test_remove_tree(dir);
}

/* A sweep over durations or sizes is drawn on a numeric axis in seconds or GiB, in order of
 * value (1000ms and 1s are one point), its title naming the unit; names stay categories. */
static void test_sweep_quantity_axis(void) {
  static const struct {
    const char *column, *values[3], *want, *title;
  } cases[] = {
      {"tenants.0.trace.timeout", {"20s", "500ms", "1s"}, "\n0.5 11 ", "timeout (s)"},
      {"server.gpu.hbm_capacity", {"80GiB", "512MiB", "1GiB"}, "\n0.5 11 ", "hbm_capacity (GiB)"},
      {"policy.name", {"ema", "static", "1s"}, "\n0 10 ", "policy.name'"},
  };
  for (guint c = 0; c < G_N_ELEMENTS(cases); c++) {
    g_autofree char *text = g_strdup_printf(
        "point,variant,%s,repeat,seed,status,chat.throughput_tok_s,"
        "chat.ttft_p99_ms,chat.tpot_p99_ms,chat.e2e_p99_ms\n"
        "000,base,%s,0,1,ok,10,20,5,100\n001,base,%s,0,1,ok,11,21,5,101\n"
        "002,base,%s,0,1,ok,12,22,5,102\n",
        cases[c].column, cases[c].values[0], cases[c].values[1], cases[c].values[2]);
    g_autofree char *dir = sweep_csv_folder(text);
    g_autofree char *data = NULL, *driver = NULL;
    if (dir == NULL)
      return;
    {
      g_autoptr(EmaTestRun) run = ema_test_cli("plot", dir, NULL);
      ema_test_assert_ok(run);
    }
    data = ema_test_read_file(dir, "plots/sweep.dat");
    driver = ema_test_read_file(dir, "plots/plots.gp");
    ema_test_assert_contains(data, cases[c].want);
    ema_test_assert_contains(driver, cases[c].title);
    ema_test_remove_tree(dir);
  }
}

/* A plot.yaml edited by hand (as its comment invites) is checked as a sweep file's plot: key
 * is: a setting without a value, or a file that is not a map, is an error at its place (not an
 * "unknown setting", nor ignored). */
static void test_plot_settings_file(void) {
  static const struct {
    const char *text, *message;
  } cases[] = {
      {"title: \"t\"\nx: ~\n", "plot.yaml:2:4: x: give one value"},
      {"by: [variant]\n", "plot.yaml:1:5: by: give one value"},
      {"- x\n", "plot.yaml:1:1: give a map of plot settings (x, by, tenant, title, xlabel)"},
      {"bx: variant\n", "plot.yaml:1:1: bx: unknown key (valid: x, by, tenant, title, xlabel)"},
  };
  g_autofree char *dir = sweep_csv_folder(tenant_sets_csv);
  g_autofree char *settings = NULL;
  if (dir == NULL)
    return;
  settings = g_build_filename(dir, "plot.yaml", NULL);
  for (guint i = 0; i < G_N_ELEMENTS(cases); i++) {
    g_autoptr(EmaTestRun) run = NULL;
    g_autofree char *want = g_strdup_printf("%s/%s", dir, cases[i].message);
    g_assert_true(g_file_set_contents(settings, cases[i].text, -1, NULL));
    run = ema_test_cli("plot", dir, NULL);
    ema_test_assert_error_line(run, want);
  }
  {
    /* a plot.yaml that is a folder is read as one and refused (its settings were skipped) */
    g_autoptr(EmaTestRun) run = NULL;
    g_autofree char *want = g_strdup_printf("%s: not a regular file (a directory)", settings);
    g_assert_cmpint(g_remove(settings), ==, 0);
    g_assert_cmpint(g_mkdir(settings, 0755), ==, 0);
    run = ema_test_cli("plot", dir, NULL);
    ema_test_assert_error_line(run, want);
  }
  ema_test_remove_tree(dir);
}

/* A --tenant that no figure of the folder can take is refused, not ignored: of an ops sweep
 * (no tenants) and of a frontier's folder (test_plot_tampered: an empty name, of a run). */
static void test_plot_tenant_unused(void) {
  g_autofree char *dir = NULL;
  g_autofree char *ops = NULL, *frontier = NULL, *csv = NULL;
  if (!ema_test_gnuplot_or_skip())
    return;
  dir = ema_test_temp_dir();
  ops = g_build_filename(dir, "ops", NULL);
  frontier = g_build_filename(dir, "frontier", NULL);
  csv = g_build_filename(ops, "sweep.csv", NULL);
  g_assert_cmpint(g_mkdir(ops, 0755), ==, 0);
  g_assert_true(g_file_set_contents(csv,
                                    "point,variant,ops.0.flows.0.bytes,repeat,seed,status,"
                                    "copy.seconds,copy.bandwidth_gbps\n"
                                    "000-bytes=1MiB,,1MiB,0,1,ok,0.001,100\n"
                                    "001-bytes=1GiB,,1GiB,0,1,ok,0.003,350\n",
                                    -1, NULL));
  {
    g_autoptr(EmaTestRun) run = ema_test_cli("plot", ops, "--tenant", "chat", NULL);
    g_autofree char *want = g_strdup_printf(
        "ema-sim: %s/sweep.csv has no tenant 'chat' (tenants: none, its points run ops; or all)",
        ops);
    ema_test_assert_error_line(run, want);
  }
  {
    g_autoptr(EmaTestRun) run =
        ema_test_cli("frontier", "-o", frontier, "--no-plot", "h200x2", NULL);
    ema_test_assert_ok(run);
  }
  {
    g_autoptr(EmaTestRun) run = ema_test_cli("plot", frontier, "--tenant", "chat", NULL);
    g_autofree char *want = g_strdup_printf("ema-sim: --tenant: %s has no tenants (", frontier);
    ema_test_assert_error_line(run, want);
  }
  ema_test_remove_tree(dir);
}

/* plot of a folder with nothing to plot (empty, or a run stopped before its summary.json) says
 * so and leaves the folder as it was: no plots/ of a copied common.gp. */
static void test_plot_nothing(void) {
  g_autofree char *dir = NULL;
  g_autofree char *requests = NULL;
  if (!ema_test_gnuplot_or_skip())
    return;
  dir = ema_test_temp_dir();
  for (guint i = 0; i < 2; i++) {
    g_autoptr(EmaTestRun) run = ema_test_cli("plot", dir, NULL);
    g_autofree char *want = g_strdup_printf("%s: nothing to plot (", dir);
    ema_test_assert_error_line(run, want);
    g_assert_false(exists(dir, "plots"));
    /* then an unfinished run's: its requests so far, no summary.json */
    g_free(requests);
    requests = g_build_filename(dir, "requests.csv", NULL);
    g_assert_true(g_file_set_contents(requests, "id,arrival_s\n", -1, NULL));
  }
  ema_test_remove_tree(dir);
}

/* The figures are drawn beside plots/ and moved in only once gnuplot drew every one: a gnuplot
 * that fails (its message cut to its last lines, a thousand bytes at most: a script writing
 * megabytes to stderr was quoted whole) or exits 0 having drawn nothing leaves plots/ as it
 * was, its plots.gp the one of its figures, and no folder it was drawn in. */
static void test_plot_fails_whole(void) {
  g_autofree char *tmp = NULL, *dir = NULL;
  g_autofree char *driver = NULL, *after = NULL;
  g_autofree char *loud = NULL;
  if (!ema_test_gnuplot_or_skip())
    return;
  tmp = ema_test_temp_dir();
  dir = g_build_filename(tmp, "out", NULL);
  loud = g_build_filename(tmp, "loud.sh", NULL);
  g_assert_true(g_file_set_contents(
      loud, "#!/bin/sh\nhead -c 3000000 /dev/zero | tr '\\0' x >&2\necho >&2\nexit 3\n", -1, NULL));
  g_assert_cmpint(g_chmod(loud, 0755), ==, 0);
  {
    g_autoptr(EmaTestRun) run =
        ema_test_cli("run", FIXTURES "pressure.yaml", "-o", dir, "--no-plot", NULL);
    g_autoptr(EmaTestRun) plot = ema_test_cli("plot", dir, "--title", "FIRST", NULL);
    ema_test_assert_ok_warned(run, "ema-sim: warning: tenant ");
    ema_test_assert_ok(plot);
  }
  driver = ema_test_read_file(dir, "plots/plots.gp");
  {
    g_autofree char *gnuplot = g_strconcat("EMA_GNUPLOT=", loud, NULL);
    const char *failing[] = {"EMA_GNUPLOT=false", gnuplot, NULL};
    for (guint i = 0; failing[i]; i++) {
      const char *edits[] = {failing[i], NULL};
      g_autoptr(EmaTestRun) run = ema_test_cli_env(edits, "plot", dir, "--title", "SECOND", NULL);
      g_autofree char *want = g_strdup_printf(
          "ema-sim: gnuplot failed on the figures of %s (its plots/ is as it was): ", dir);
      g_assert_cmpint(run->status, ==, 1);
      g_assert_true(g_str_has_prefix(run->err, want));
      g_assert_cmpuint(strlen(run->err), <, 1200);
    }
  }
  {
    const char *edits[] = {"EMA_GNUPLOT=true", NULL};
    g_autoptr(EmaTestRun) run = ema_test_cli_env(edits, "plot", dir, "--title", "SECOND", NULL);
    g_assert_cmpint(run->status, ==, 1);
    ema_test_assert_contains(run->err, " (it ran and exited 0): plots/ is as it was\n");
  }
  {
    /* a script of EMA_PLOT_PATH that is a folder: an error, not passed over for the built-in */
    g_autofree char *scripts = g_build_filename(tmp, "scripts", NULL);
    g_autofree char *folder = g_build_filename(scripts, "memory.gp", NULL);
    g_autofree char *path = g_strconcat("EMA_PLOT_PATH=", scripts, NULL);
    g_autofree char *want = g_strdup_printf(
        "ema-sim: gnuplot script %s (EMA_PLOT_PATH) is not a regular file\n", folder);
    const char *edits[] = {path, NULL};
    g_autoptr(EmaTestRun) run = NULL;
    g_assert_cmpint(g_mkdir_with_parents(folder, 0755), ==, 0);
    run = ema_test_cli_env(edits, "plot", dir, "--title", "SECOND", NULL);
    g_assert_cmpint(run->status, ==, 1);
    g_assert_cmpstr(run->err, ==, want);
  }
  after = ema_test_read_file(dir, "plots/plots.gp");
  g_assert_cmpstr(after, ==, driver);
  g_assert_false(exists(dir, "plots.new"));
  ema_test_remove_tree(tmp);
}

/* plot of a run given a sweep's axes, or whose summary.json was tampered with: refused with
 * the file and what is wrong, never a crash or a GLib critical (nesting json-glib's recursive
 * parser cannot take, a root that is not an object, a tenants member that is not a list); and of a
 * comparison whose compare.csv lacks the first repeat. */
static void test_plot_tampered(void) {
  g_autofree char *dir = NULL;
  g_autofree char *summary = NULL;
  g_autofree char *deep = g_strnfill(1000, '[');
  static const struct {
    const char *text, *message;
  } cases[] = {
      {NULL, "summary.json:1:33: JSON nested deeper than 32 levels"},
      /* json-glib's own findings at the file's line and column, not "<data>:..." */
      {"{\n  \"experiment\": NaN}", "summary.json:2:19: Parse error: unexpected identifier"},
      {"", "summary.json: not a JSON object"},
      {"[1, 2]", "summary.json: not a JSON object"},
      {"{\"experiment\": \"x\", \"tenants\": 5}", "summary.json: tenants: not a list"},
      /* a member of another type: a tenant's name a number (a SIGSEGV: json-glib answers NULL),
       * the experiment's, a count that is no number or is negative */
      {"{\"experiment\": \"x\", \"tenants\": [{\"name\": 5}]}",
       "summary.json: tenants.0.name: not a string"},
      {"{\"experiment\": 5, \"tenants\": []}", "summary.json: experiment: not a string"},
      {"{\"experiment\": \"x\", \"tenants\": [{\"name\": \"a\", \"kv_blocks\": \"abc\"}]}",
       "summary.json: tenants.0.kv_blocks: not a number"},
      {"{\"experiment\": \"x\", \"tenants\": [{\"name\": \"a\", \"kv_blocks\": -5}]}",
       "summary.json: tenants.0.kv_blocks: -5 is outside 0..1000000000000000"},
  };
  if (!ema_test_gnuplot_or_skip())
    return;
  dir = ema_test_temp_dir();
  summary = g_build_filename(dir, "summary.json", NULL);
  {
    g_autoptr(EmaTestRun) run =
        ema_test_cli("run", FIXTURES "pressure.yaml", "-o", dir, "--no-plot", NULL);
    ema_test_assert_ok_warned(run, "ema-sim: warning: tenant ");
  }
  {
    /* a sweep's axes given for a run: refused, and no plots/ folder made */
    g_autoptr(EmaTestRun) run = ema_test_cli("plot", dir, "--by", "policy", NULL);
    g_autofree char *want = g_strdup_printf(
        "ema-sim: --by: %s has no sweep.csv (--x, --by and --xlabel set a sweep's figures)", dir);
    g_autofree char *plots = g_build_filename(dir, "plots", NULL);
    g_assert_cmpint(run->status, ==, 1);
    g_assert_nonnull(strstr(run->err, want));
    g_assert_false(g_file_test(plots, G_FILE_TEST_EXISTS));
  }
  {
    /* a tenant the run does not have is named, with the run's tenants */
    g_autoptr(EmaTestRun) run = ema_test_cli("plot", dir, "--tenant", "busy,nosuch", NULL);
    g_autofree char *want = g_strdup_printf(
        "ema-sim: --tenant: %s has no tenant 'nosuch' (its tenants: busy, later)", dir);
    g_assert_cmpint(run->status, ==, 1);
    g_assert_nonnull(strstr(run->err, want));
  }
  {
    /* an empty --tenant names none (not every tenant, nor a run with nothing to plot) */
    g_autoptr(EmaTestRun) run = ema_test_cli("plot", dir, "--tenant", "", NULL);
    g_autofree char *want = g_strdup_printf(
        "ema-sim: --tenant: give a tenant's name (NAME or NAME,NAME,...) for %s", dir);
    ema_test_assert_error_line(run, want);
  }
  for (guint i = 0; i < G_N_ELEMENTS(cases); i++) {
    g_assert_true(g_file_set_contents(summary, cases[i].text ? cases[i].text : deep, -1, NULL));
    {
      g_autoptr(EmaTestRun) run = ema_test_cli("plot", dir, NULL);
      g_assert_cmpint(run->status, ==, 1);
      g_assert_nonnull(strstr(run->err, cases[i].message));
      g_assert_null(strstr(run->err, "CRITICAL"));
    }
  }
  ema_test_remove_tree(dir);
  /* a comparison whose compare.csv has no row of the first repeat: nothing to plot, said */
  g_free(dir);
  dir = ema_test_temp_dir();
  {
    g_autoptr(EmaTestRun) run =
        ema_test_cli("run", "experiments/default.yaml", "-o", dir, "--no-plot", NULL);
    g_autofree char *csv = NULL;
    g_auto(GStrv) lines = NULL;
    g_auto(GStrv) header = NULL;
    g_auto(GStrv) row = NULL;
    g_autofree char *path = g_build_filename(dir, "compare.csv", NULL);
    g_autofree char *joined = NULL, *text = NULL;
    guint repeat = 0;
    ema_test_assert_ok(run);
    csv = ema_test_read_file(dir, "compare.csv");
    lines = g_strsplit(csv, "\n", 3);
    header = g_strsplit(lines[0], ",", -1);
    row = g_strsplit(lines[1], ",", -1);
    while (header[repeat] && strcmp(header[repeat], "repeat") != 0)
      repeat++;
    g_assert_nonnull(header[repeat]);
    g_free(row[repeat]);
    row[repeat] = g_strdup("1");
    joined = g_strjoinv(",", row);
    text = g_strconcat(lines[0], "\n", joined, "\n", NULL);
    g_assert_true(g_file_set_contents(path, text, -1, NULL));
  }
  {
    g_autoptr(EmaTestRun) run = ema_test_cli("plot", dir, NULL);
    g_assert_cmpint(run->status, ==, 1);
    g_assert_nonnull(
        strstr(run->err, "compare.csv: no rows of the first repeat (repeat 0) to plot"));
  }
  ema_test_remove_tree(dir);
}

static void test_without_gnuplot(void) {
  g_autofree char *dir = ema_test_temp_dir();
  g_autofree char *run_dir = g_build_filename(dir, "run", NULL);
  g_autofree char *sweep_dir = g_build_filename(dir, "sweep", NULL);
  /* PATH without gnuplot (ema-sim runs its points by its own path) */
  const char *const no_gnuplot[] = {"PATH=/nonexistent", NULL};
  g_autoptr(EmaTestRun) sweep =
      ema_test_cli_env(no_gnuplot, "sweep", FIXTURES "copies.yaml", "-o", sweep_dir, NULL);
  g_autoptr(EmaTestRun) run =
      ema_test_cli_env(no_gnuplot, "run", FIXTURES "pressure.yaml", "-o", run_dir, NULL);
  g_autoptr(EmaTestRun) plot = ema_test_cli_env(no_gnuplot, "plot", run_dir, NULL);
  /* the sweep says so once and does not fail for it (1: expectations missed) */
  g_assert_cmpint(sweep->status, ==, 1);
  g_assert_cmpstr(sweep->err, ==,
                  "ema-sim: gnuplot is not on PATH: no figures (install gnuplot-nox, then "
                  "ema-sim plot DIR)\n");
  g_assert_true(exists(sweep_dir, "sweep.csv"));
  /* a run off a terminal says nothing of gnuplot (only of its cut burst) */
  ema_test_assert_ok_warned(run, "ema-sim: warning: tenant "); /* later, busy: cut by the end */
  g_assert_false(exists(run_dir, "plots"));
  ema_test_assert_error_line(plot, "ema-sim plot: gnuplot is not on PATH");
  ema_test_remove_tree(dir);
}

int main(int argc, char **argv) {
  g_autofree char *errors = NULL;
  g_autoptr(GPtrArray) names = NULL;
  int status;
  g_test_init(&argc, &argv, NULL);
  if (g_getenv("EMA_SOURCE_ROOT") == NULL || g_chdir(g_getenv("EMA_SOURCE_ROOT")) != 0)
    g_error("EMA_SOURCE_ROOT must name the source tree");
  g_test_add_func("/sweep/points", test_points);
  g_test_add_func("/sweep/variants", test_variants);
  g_test_add_func("/sweep/long-point-names", test_long_point_names);
  g_test_add_func("/sweep/records-text", test_records_text);
  g_test_add_func("/sweep/errors/run-refuses-sweep-file", test_run_refuses_sweep);
  errors = g_build_filename(g_getenv("EMA_SOURCE_ROOT"), FIXTURES "errors", NULL);
  names = ema_test_list_dir(errors, ".yaml");
  for (guint i = 0; i < names->len; i++) {
    g_autofree char *path = g_strdup_printf("/sweep/errors/%s", (char *) names->pdata[i]);
    g_test_add_data_func(path, names->pdata[i], test_bad_file);
  }
  g_test_add_func("/sweep/errors/point-named", test_point_named);
  g_test_add_func("/sweep/errors/set-under-replaced-policy", test_set_under_replaced_policy);
  g_test_add_func("/sweep/errors/set-swept-path", test_set_swept_path);
  g_test_add_func("/sweep/list-part", test_list_part);
  g_test_add_func("/sweep/run/jobs", test_jobs);
  g_test_add_func("/sweep/run/resume-after-kill", test_resume);
  g_test_add_func("/sweep/run/points-of-another-definition", test_points_of_another_definition);
  g_test_add_func("/sweep/run/resume-tampered", test_resume_tampered);
  g_test_add_func("/sweep/run/mpi", test_mpi);
  g_test_add_func("/sweep/run/parts", test_parts);
  g_test_add_func("/sweep/run/resume-search-paths", test_resume_search_paths);
  g_test_add_func("/sweep/run/resume-other-cwd", test_resume_other_cwd);
  g_test_add_func("/sweep/run/results-removed", test_results_removed);
  g_test_add_func("/sweep/run/point-not-another-runs", test_point_not_another_runs);
  g_test_add_func("/sweep/run/summary-of-another-point", test_summary_of_another_point);
  g_test_add_func("/sweep/run/parts-share", test_parts_share);
  g_test_add_func("/sweep/errors/names-one-line", test_names_one_line);
  g_test_add_func("/sweep/errors/names-past-marker", test_names_past_marker);
  g_test_add_func("/sweep/resolve-memory", test_resolve_memory);
  g_test_add_func("/sweep/run/plot-settings-text", test_plot_settings_text);
  g_test_add_func("/sweep/run/failing-points", test_failing_points);
  g_test_add_func("/sweep/run/warned-points", test_warned_points);
  g_test_add_func("/sweep/run/ops", test_ops_sweep);
  g_test_add_func("/sweep/plot/sweep", test_sweep_figures);
  g_test_add_func("/sweep/plot/run", test_run_figures);
  g_test_add_func("/sweep/plot/without-gnuplot", test_without_gnuplot);
  g_test_add_func("/sweep/plot/run-tampered", test_plot_tampered);
  g_test_add_func("/sweep/plot/fails-whole", test_plot_fails_whole);
  g_test_add_func("/sweep/plot/many-tenants", test_many_tenants_figure);
  g_test_add_func("/sweep/plot/tenant-sets", test_sweep_tenant_sets);
  g_test_add_func("/sweep/plot/quantity-axis", test_sweep_quantity_axis);
  g_test_add_func("/sweep/plot/quoted-category", test_sweep_quoted_category);
  g_test_add_func("/sweep/plot/nothing", test_plot_nothing);
  g_test_add_func("/sweep/plot/tenant-unused", test_plot_tenant_unused);
  g_test_add_func("/sweep/plot/settings-file", test_plot_settings_file);
  status = g_test_run();
  if (reference_dir) {
    g_autofree char *parent = g_path_get_dirname(reference_dir);
    ema_test_remove_tree(parent);
    g_clear_pointer(&reference_dir, g_free);
  }
  return status;
}
