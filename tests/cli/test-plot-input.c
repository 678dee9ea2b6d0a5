/* test-plot-input.c: `ema-sim plot` on damaged input, through the ema-sim program. A cell the
 * figures would read that is not what its writer writes (a word in a number's place, a tenant
 * or GPU the run's summary.json does not have, a variant or metric compare.csv does not have, a
 * column named twice) is an error at its file:line:col, saying what was expected, never a point
 * dropped or drawn; a setting of a sweep's plot.yaml that names no column or tenant of sweep.csv
 * is an error at its place in plot.yaml. Either way the folder's plots/ stays as it was (the
 * figures are drawn into plots.new/ and moved in only on success) and no plots.new/ is left; of
 * a comparison, its own plots/ and every variant's (a later repeat's too), all drawn before any
 * is moved in, and moved in all or none: a move that fails in a later folder undoes those done
 * (failures made so that they stop root too), and what a plot killed midway leaves (plots.old,
 * plots.new) is settled by the next, never taken for figures.
 *
 * Each case damages one file of a folder an earlier plot drew, runs plot and puts the file
 * back. Needs gnuplot (the plot command refuses to start without it). */
#include <errno.h>
#include <string.h>

#include <glib/gstdio.h>

#include "testutil.h"

/* Strings a check reads once, freed at the end (LeakSanitizer runs at exit). */
static GPtrArray *kept;

static char *keep(char *text) {
  g_ptr_array_add(kept, text);
  return text;
}

static gboolean exists(const char *dir, const char *name) {
  g_autofree char *path = g_build_filename(dir, name, NULL);
  return g_file_test(path, G_FILE_TEST_EXISTS);
}

static void write_file(const char *dir, const char *name, const char *text) {
  g_autofree char *path = g_build_filename(dir, name, NULL);
  g_assert_true(g_file_set_contents(path, text, -1, NULL));
}

/* Every file of DIR/plots as "name sha256" lines, for a before-and-after comparison. */
static char *plots_state(const char *dir) {
  g_autofree char *plots = g_build_filename(dir, "plots", NULL);
  g_autoptr(GPtrArray) names = ema_test_list_dir(plots, "");
  GString *state = g_string_new(NULL);
  for (guint i = 0; i < names->len; i++) {
    g_autofree char *path = g_build_filename(plots, names->pdata[i], NULL);
    g_autofree char *bytes = NULL;
    g_autofree char *sum = NULL;
    gsize length = 0;
    g_assert_true(g_file_get_contents(path, &bytes, &length, NULL));
    sum = g_compute_checksum_for_data(G_CHECKSUM_SHA256, (const guchar *) bytes, length);
    g_string_append_printf(state, "%s %s\n", (const char *) names->pdata[i], sum);
  }
  return g_string_free(state, FALSE);
}

/* ema-sim plot DIR (ARGS after it, NULL-terminated: at most 4; the environment changed by EDITS,
 * NULL: none) fails with exactly WANT on stderr (one line), nothing on stdout, and leaves
 * DIR/plots and each of DIR's SUBS (NULL or NULL-terminated folders: a comparison's variants)
 * plots/ as they were, with no plots.new. */
static void assert_refused_env(const char *const *edits, const char *dir, const char *const *subs,
                               const char *want, const char *const *args) {
  g_autoptr(GPtrArray) folders = g_ptr_array_new_with_free_func(g_free);
  g_autoptr(GPtrArray) before = g_ptr_array_new_with_free_func(g_free);
  g_autoptr(EmaTestRun) run = NULL;
  g_ptr_array_add(folders, g_strdup(dir));
  for (guint i = 0; subs && subs[i]; i++)
    g_ptr_array_add(folders, g_build_filename(dir, subs[i], NULL));
  for (guint i = 0; i < folders->len; i++)
    g_ptr_array_add(before, plots_state(folders->pdata[i]));
  {
    const char *a[4] = {NULL, NULL, NULL, NULL};
    for (guint i = 0; args && args[i]; i++) {
      g_assert_cmpuint(i, <, G_N_ELEMENTS(a));
      a[i] = args[i];
    }
    run = ema_test_cli_env(edits, "plot", dir, a[0], a[1], a[2], a[3], NULL);
  }
  g_assert_cmpint(run->status, ==, 1);
  g_assert_cmpstr(run->out, ==, "");
  g_assert_cmpstr(run->err, ==, want);
  for (guint i = 0; i < folders->len; i++) {
    g_autofree char *after = plots_state(folders->pdata[i]);
    g_assert_cmpstr(after, ==, before->pdata[i]);
    g_assert_false(exists(folders->pdata[i], "plots.new"));
  }
}

static void assert_refused(const char *dir, const char *const *subs, const char *want,
                           const char *const *args) {
  assert_refused_env(NULL, dir, subs, want, args);
}

/* ema-sim plot DIR succeeds. */
static void assert_plots(const char *dir) {
  g_autoptr(EmaTestRun) run = ema_test_cli("plot", dir, NULL);
  g_assert_cmpint(run->status, ==, 0);
  g_assert_cmpstr(run->err, ==, "");
  g_assert_true(exists(dir, "plots"));
}

/* The 1-based line LINE of TEXT with its field of column COLUMN (the header's name) set to VALUE
 * (no quoted field in the line); *AT the 1-based character column where that field begins.
 * LINE 1, the header: the name itself. */
static char *with_field(const char *text, guint line, const char *column, const char *value,
                        guint *at) {
  g_auto(GStrv) lines = g_strsplit(text, "\n", -1);
  g_auto(GStrv) header = g_strsplit(lines[0], ",", -1);
  g_auto(GStrv) fields = NULL;
  guint index = 0, col = 1;
  while (header[index] && strcmp(header[index], column) != 0)
    index++;
  g_assert_nonnull(header[index]);
  g_assert_cmpuint(line, <=, g_strv_length(lines));
  fields = g_strsplit(lines[line - 1], ",", -1);
  g_assert_cmpuint(index, <, g_strv_length(fields));
  for (guint i = 0; i < index; i++)
    col += (guint) strlen(fields[i]) + 1;
  *at = col;
  g_free(fields[index]);
  fields[index] = g_strdup(value);
  g_free(lines[line - 1]);
  lines[line - 1] = g_strjoinv(",", fields);
  return g_strjoinv("\n", lines);
}

/* The 1-based character column where line LINE of TEXT has its field of column COLUMN (line 1:
 * the header's name). */
static guint field_at(const char *text, guint line, const char *column) {
  g_auto(GStrv) lines = g_strsplit(text, "\n", -1);
  g_auto(GStrv) header = g_strsplit(lines[0], ",", -1);
  g_auto(GStrv) fields = g_strsplit(lines[line - 1], ",", -1);
  guint index = 0, at;
  g_autofree char *same = NULL;
  while (header[index] && strcmp(header[index], column) != 0)
    index++;
  g_assert_nonnull(header[index]);
  same = with_field(text, line, column, fields[index], &at);
  return at;
}

/* DIR/NAME with its line LINE's field of column COLUMN set to VALUE; plot DIR refused with
 * "DIR/NAME:LINE:COL: " then REST (COL: where the field of column AT begins, in the damaged
 * line; AT NULL: COLUMN), nothing of DIR changed (SUBS: as assert_refused); then DIR/NAME as it
 * was. */
static void assert_field_at_refused(const char *dir, const char *const *subs, const char *name,
                                    guint line, const char *column, const char *value,
                                    const char *at_column, const char *rest) {
  g_autofree char *original = ema_test_read_file(dir, name);
  guint at = 0;
  g_autofree char *damaged = with_field(original, line, column, value, &at);
  g_autofree char *want = NULL;
  if (at_column)
    at = field_at(damaged, line, at_column);
  want = g_strdup_printf("%s/%s:%u:%u: %s\n", dir, name, line, at, rest);
  write_file(dir, name, damaged);
  assert_refused(dir, subs, want, NULL);
  write_file(dir, name, original);
}

static void assert_field_refused(const char *dir, const char *const *subs, const char *name,
                                 guint line, const char *column, const char *value,
                                 const char *rest) {
  assert_field_at_refused(dir, subs, name, line, column, value, NULL, rest);
}

/* ---- a sweep's folder ------------------------------------------------------------------ */

/* A sweep.csv of ema-sim sweep's columns (a shortened metric set): two tenants, the variant
 * `alone` without code, one failed point; and its plot.yaml. */
static const char sweep_csv[] =
    "point,variant,tenants.0.trace.rate,repeat,seed,status,chat.throughput_tok_s,"
    "chat.ttft_p99_ms,chat.tpot_p99_ms,chat.e2e_p99_ms,code.throughput_tok_s,code.ttft_p99_ms,"
    "code.tpot_p99_ms,code.e2e_p99_ms,pool.borrows\n"
    "000-both-rate=2,both,2,0,1,ok,10,20,5,100,30,40,6,200,0\n"
    "001-both-rate=4,both,4,0,1,ok,11,21,5,101,31,41,6,201,3\n"
    "002-alone-rate=2,alone,2,0,1,ok,12,22,7,102,,,,,0\n"
    "003-alone-rate=4,alone,4,0,1,failed,,,,,,,,,\n";

static const char plot_yaml[] = "# How `ema-sim plot` draws sweep.csv\n"
                                "title: \"grid\"\n"
                                "tenant: \"chat\"\n"
                                "xlabel: \"rate (requests/s)\"\n";

/* A new folder of sweep_csv and plot_yaml, plotted once; NULL (the test skipped) without
 * gnuplot. */
static char *sweep_folder(void) {
  g_autofree char *dir = NULL;
  if (!ema_test_gnuplot_or_skip())
    return NULL;
  dir = ema_test_temp_dir();
  write_file(dir, "sweep.csv", sweep_csv);
  write_file(dir, "plot.yaml", plot_yaml);
  assert_plots(dir);
  return g_steal_pointer(&dir);
}

/* A metric the figures draw, of a point with results, that is not a number. */
static void test_sweep_metric(void) {
  g_autofree char *dir = sweep_folder();
  if (dir == NULL)
    return;
  assert_field_refused(dir, NULL, "sweep.csv", 3, "chat.ttft_p99_ms", "hello",
                       "column 'chat.ttft_p99_ms': 'hello' is not a non-negative number");
  /* a tenant's the point does not run has none: empty, not a word */
  assert_field_refused(dir, NULL, "sweep.csv", 4, "code.e2e_p99_ms", "n/a",
                       "column 'code.e2e_p99_ms': 'n/a' is not a non-negative number");
  assert_field_refused(dir, NULL, "sweep.csv", 2, "chat.throughput_tok_s", "-10",
                       "column 'chat.throughput_tok_s': '-10' is not a non-negative number");
  /* decimal only: strtod's hexadecimal was read (0x10 was 16) */
  assert_field_refused(dir, NULL, "sweep.csv", 2, "chat.throughput_tok_s", "0x10",
                       "column 'chat.throughput_tok_s': '0x10' is not a non-negative number");
  /* a column the figures do not read is not theirs to check; a failed point's are not drawn */
  {
    g_autofree char *original = ema_test_read_file(dir, "sweep.csv");
    guint at;
    g_autofree char *other = with_field(original, 2, "pool.borrows", "many", &at);
    g_autofree char *failed = with_field(other, 5, "chat.ttft_p99_ms", "x", &at);
    write_file(dir, "sweep.csv", failed);
    assert_plots(dir);
    write_file(dir, "sweep.csv", original);
  }
  ema_test_remove_tree(dir);
}

/* A status ema-sim sweep does not write, and a repeat that is not a whole number. */
static void test_sweep_status_repeat(void) {
  g_autofree char *dir = sweep_folder();
  if (dir == NULL)
    return;
  assert_field_refused(dir, NULL, "sweep.csv", 4, "status", "okay",
                       "column 'status': 'okay' is not a point's status (ok, missed, failed or "
                       "not-run)");
  assert_field_refused(dir, NULL, "sweep.csv", 2, "repeat", "first",
                       "column 'repeat': 'first' is not a non-negative integer (of at most 2^53)");
  /* a cell of any length quoted by its first 40 bytes (1 MB of it made a line of 1 MB) */
  {
    g_autofree char *okay = g_strnfill(1 << 20, 'o');
    assert_field_refused(dir, NULL, "sweep.csv", 4, "status", okay,
                         "column 'status': 'oooooooooooooooooooooooooooooooooooooooo...' is not "
                         "a point's status (ok, missed, failed or not-run)");
  }
  ema_test_remove_tree(dir);
}

/* A column the figures read named twice in the header: which one is meant is not guessed. */
static void test_sweep_header_twice(void) {
  g_autofree char *dir = sweep_folder();
  g_autofree char *damaged = NULL, *want = NULL;
  guint at;
  if (dir == NULL)
    return;
  damaged = with_field(sweep_csv, 1, "pool.borrows", "chat.tpot_p99_ms", &at);
  want = g_strdup_printf(
      "%s/sweep.csv:1:%u: column 'chat.tpot_p99_ms' is in the header twice (also at column %u)\n",
      dir, at, field_at(sweep_csv, 1, "chat.tpot_p99_ms"));
  write_file(dir, "sweep.csv", damaged);
  assert_refused(dir, NULL, want, NULL);
  /* the variant and status columns too */
  g_free(damaged);
  g_free(want);
  damaged = with_field(sweep_csv, 1, "pool.borrows", "status", &at);
  want = g_strdup_printf(
      "%s/sweep.csv:1:%u: column 'status' is in the header twice (also at column %u)\n", dir, at,
      field_at(sweep_csv, 1, "status"));
  write_file(dir, "sweep.csv", damaged);
  assert_refused(dir, NULL, want, NULL);
  ema_test_remove_tree(dir);
}

/* plot.yaml's x, by and tenant that sweep.csv does not have: at the setting in plot.yaml, with
 * what it may name; the same given as options: at sweep.csv, as before. */
static void test_settings(void) {
  static const struct {
    const char *line, *at, *message;
  } cases[] = {
      {"tenant: \"nope\"\n", "4:9",
       "tenant: no tenant 'nope' in sweep.csv (tenants: chat, code; or all)"},
      {"x: \"nope\"\n", "4:4",
       "x: 'nope' is not a column of sweep.csv (give a swept path: tenants.0.trace.rate; or "
       "variant, repeat, seed, or a metric column such as chat.throughput_tok_s)"},
      {"by:  nope\n", "4:6",
       "by: 'nope' is not a column of sweep.csv (give a swept path: tenants.0.trace.rate; or "
       "variant, repeat, seed, or a metric column such as chat.throughput_tok_s)"},
  };
  g_autofree char *dir = sweep_folder();
  if (dir == NULL)
    return;
  for (guint i = 0; i < G_N_ELEMENTS(cases); i++) {
    g_autofree char *text =
        g_strconcat("# edited\ntitle: \"grid\"\nxlabel: \"rate\"\n", cases[i].line, NULL);
    g_autofree char *want =
        g_strdup_printf("%s/plot.yaml:%s: %s\n", dir, cases[i].at, cases[i].message);
    write_file(dir, "plot.yaml", text);
    assert_refused(dir, NULL, want, NULL);
  }
  {
    /* an option overrides plot.yaml's setting, and is refused as an option */
    const char *const args[] = {"--tenant", "nobody", NULL};
    g_autofree char *want = g_strdup_printf(
        "ema-sim: %s/sweep.csv has no tenant 'nobody' (tenants: chat, code; or all)\n", dir);
    write_file(dir, "plot.yaml", plot_yaml);
    assert_refused(dir, NULL, want, args);
  }
  {
    const char *const args[] = {"--x", "nope", NULL};
    g_autofree char *want =
        g_strdup_printf("ema-sim: %s/sweep.csv has no column 'nope' for x\n", dir);
    assert_refused(dir, NULL, want, args);
  }
  {
    /* plot.yaml's bad by, overridden by --by: not used, not an error */
    g_autoptr(EmaTestRun) run = NULL;
    write_file(dir, "plot.yaml", "by: nope\n");
    run = ema_test_cli("plot", dir, "--by", "none", NULL);
    ema_test_assert_ok(run);
  }
  ema_test_remove_tree(dir);
}

/* ---- a run's folder ----------------------------------------------------------------------- */

/* A run of tenant a on GPU 0, b on GPUs 1 and 2 (tp 2) and GPU 3 without a tenant, lending. */
static const char run_summary[] =
    "{\"experiment\": \"tiny\", \"tenants\": [\n"
    "  {\"name\": \"a\", \"gpu\": 0, \"tp\": 1, \"kv_blocks\": 1000, \"kv_bytes_per_gpu\": 4e9},\n"
    "  {\"name\": \"b\", \"gpu\": 1, \"tp\": 2, \"kv_blocks\": 1000, \"kv_bytes_per_gpu\": 4e9}],\n"
    " \"idle_gpus\": [{\"gpu\": 3, \"lendable_bytes\": 8e9}]}\n";

static const char run_timeline[] =
    "time_s,gpu,tenant,kv_blocks_used,kv_blocks_free,running,waiting,last_step_ms,slices_lent,"
    "slices_borrowed,kv_blocks_remote,slices_staging,tokens\n"
    "0.000000000,0,a,0,1000,0,0,0.000000,0,0,0,0,0\n"
    "0.000000000,1,b,0,1000,0,0,0.000000,0,0,0,0,0\n"
    "0.000000000,2,b,0,1000,0,0,0.000000,0,0,0,0,0\n"
    "0.000000000,3,,0,0,0,0,0.000000,0,0,0,0,0\n"
    "0.500000000,0,a,900,100,8,1,21.500000,0,4,120,0,160\n"
    "0.500000000,1,b,100,900,2,0,18.000000,2,0,0,0,40\n"
    "0.500000000,2,b,100,900,2,0,18.000000,2,0,0,0,40\n"
    "0.500000000,3,,0,0,0,0,0.000000,3,0,0,0,0\n"
    "1.000000000,0,a,700,300,6,0,20.000000,0,2,60,1,150\n"
    "1.000000000,1,b,120,880,2,0,18.500000,1,0,0,0,45\n"
    "1.000000000,2,b,120,880,2,0,18.500000,1,0,0,0,45\n"
    "1.000000000,3,,0,0,0,0,0.000000,1,0,0,0,0\n";

static const char run_requests[] =
    "tenant,id,arrival_s,scheduled_s,first_token_s,finish_s,prompt_tokens,output_tokens,"
    "preemptions,ttft_ms,tpot_ms,e2e_ms\n"
    "a,0,0.100000000,0.100000000,0.150000000,0.900000000,100,20,0,50.000000,39.473684,"
    "800.000000\n"
    "b,0,0.200000000,0.200000000,0.230000000,0.700000000,80,10,0,30.000000,52.222222,"
    "500.000000\n"
    "a,1,0.300000000,0.300000000,0.360000000,0.360000000,60,1,0,60.000000,,60.000000\n"
    "b,1,0.400000000,0.400000000,0.440000000,0.990000000,50,12,0,40.000000,50.000000,"
    "590.000000\n";

/* A new folder of the run above, plotted once; NULL (the test skipped) without gnuplot. */
static char *run_folder(void) {
  g_autofree char *dir = NULL;
  if (!ema_test_gnuplot_or_skip())
    return NULL;
  dir = ema_test_temp_dir();
  write_file(dir, "summary.json", run_summary);
  write_file(dir, "timeline.csv", run_timeline);
  write_file(dir, "requests.csv", run_requests);
  assert_plots(dir);
  return g_steal_pointer(&dir);
}

/* timeline.csv rows of a tenant the run does not have, a GPU that is not its tenant's, an empty
 * tenant on a GPU that has one, a word in a number's place. */
static void test_run_timeline(void) {
  g_autofree char *dir = run_folder();
  g_autofree char *summary = NULL;
  if (dir == NULL)
    return;
  summary = g_build_filename(dir, "summary.json", NULL);
  assert_field_refused(dir, NULL, "timeline.csv", 7, "tenant", "c",
                       keep(g_strdup_printf("column 'tenant': no tenant 'c' in %s (its tenants: "
                                            "a, b)",
                                            summary)));
  assert_field_refused(dir, NULL, "timeline.csv", 6, "gpu", "4",
                       keep(g_strdup_printf("column 'gpu': gpu 4 is not one of tenant a's (%s: "
                                            "gpu 0)",
                                            summary)));
  assert_field_refused(dir, NULL, "timeline.csv", 7, "gpu", "0",
                       keep(g_strdup_printf("column 'gpu': gpu 0 is not one of tenant b's (%s: "
                                            "gpus 1-2)",
                                            summary)));
  assert_field_at_refused(dir, NULL, "timeline.csv", 4, "tenant", "", "gpu",
                          keep(g_strdup_printf("column 'gpu': gpu 2 has no tenant here, and is not "
                                               "one of the run's GPUs without one (%s: idle_gpus: "
                                               "3)",
                                               summary)));
  assert_field_refused(dir, NULL, "timeline.csv", 10, "slices_borrowed", "two",
                       "column 'slices_borrowed': 'two' is not a non-negative integer (of at most "
                       "2^53)");
  assert_field_refused(dir, NULL, "timeline.csv", 3, "time_s", "soon",
                       "column 'time_s': 'soon' is not a non-negative number");
  assert_field_refused(dir, NULL, "timeline.csv", 9, "gpu", "1.5",
                       "column 'gpu': '1.5' is not a non-negative integer (of at most 2^53)");
  ema_test_remove_tree(dir);
}

/* requests.csv rows of a tenant the run does not have, a TTFT that is not a number, a column
 * named twice or missing. */
static void test_run_requests(void) {
  g_autofree char *dir = run_folder();
  g_autofree char *summary = NULL;
  if (dir == NULL)
    return;
  summary = g_build_filename(dir, "summary.json", NULL);
  assert_field_refused(dir, NULL, "requests.csv", 3, "tenant", "ghost",
                       keep(g_strdup_printf("column 'tenant': no tenant 'ghost' in %s (its "
                                            "tenants: a, b)",
                                            summary)));
  assert_field_refused(dir, NULL, "requests.csv", 2, "ttft_ms", "hello",
                       "column 'ttft_ms': 'hello' is not a non-negative number");
  /* a TPOT may be empty (one output token), a TTFT not: every row is a finished request */
  assert_field_refused(dir, NULL, "requests.csv", 5, "ttft_ms", "",
                       "column 'ttft_ms': '' is not a non-negative number");
  assert_field_refused(dir, NULL, "requests.csv", 5, "tpot_ms", "fast",
                       "column 'tpot_ms': 'fast' is not a non-negative number");
  {
    guint at;
    g_autofree char *twice = with_field(run_requests, 1, "e2e_ms", "ttft_ms", &at);
    g_autofree char *want = g_strdup_printf(
        "%s/requests.csv:1:%u: column 'ttft_ms' is in the header twice (also at column %u)\n", dir,
        at, field_at(run_requests, 1, "ttft_ms"));
    write_file(dir, "requests.csv", twice);
    assert_refused(dir, NULL, want, NULL);
  }
  {
    guint at;
    g_autofree char *missing = with_field(run_requests, 1, "tpot_ms", "tpot", &at);
    g_autofree char *want = g_strdup_printf("%s/requests.csv:1:1: no column 'tpot_ms'\n", dir);
    write_file(dir, "requests.csv", missing);
    assert_refused(dir, NULL, want, NULL);
  }
  write_file(dir, "requests.csv", run_requests);
  assert_plots(dir);
  ema_test_remove_tree(dir);
}

/* ---- a comparison's folder -------------------------------------------------------------- */

static const char *const variants[] = {"static", "ema", "2x", NULL};

/* The folders of a comparison of two repeats: each variant's and its second run's. */
static const char *const repeat_folders[] = {"static", "static-r1", "ema", "ema-r1",
                                             "2x",     "2x-r1",     NULL};

/* A new comparison (experiments/default.yaml: static, ema and 2x, 30 s; REPEATS runs of each,
 * the folders FOLDERS), plotted once; NULL (the test skipped) without gnuplot. */
static char *compare_folder_of(const char *repeats, const char *const *folders) {
  g_autofree char *tmp = NULL;
  g_autofree char *dir = NULL;
  if (!ema_test_gnuplot_or_skip())
    return NULL;
  tmp = ema_test_temp_dir();
  dir = g_build_filename(tmp, "cmp", NULL);
  {
    g_autoptr(EmaTestRun) run =
        ema_test_cli("run", "experiments/default.yaml", "--set", "duration=30s", "--set", repeats,
                     "-o", dir, "--no-plot", NULL);
    g_assert_cmpint(run->status, ==, 0);
  }
  assert_plots(dir);
  for (guint i = 0; folders[i]; i++)
    g_assert_true(exists(dir, keep(g_strconcat(folders[i], "/plots", NULL))));
  g_assert_true(exists(dir, "plots/compare-change.png"));
  return g_steal_pointer(&dir);
}

static char *compare_folder(void) {
  return compare_folder_of("repeats=1", variants);
}

static void remove_compare_folder(const char *dir) {
  g_autofree char *tmp = g_path_get_dirname(dir);
  ema_test_remove_tree(tmp);
}

/* compare-paired.csv rows of a variant or metric compare.csv does not have, another baseline, a
 * change that is not a number; nothing of the comparison's figures or its variants' changed. */
static void test_compare_paired(void) {
  g_autofree char *dir = compare_folder();
  if (dir == NULL)
    return;
  assert_field_refused(dir, variants, "compare-paired.csv", 3, "change_mean_pct", "hello",
                       "column 'change_mean_pct': 'hello' is not a number");
  /* decimal only: strtod read -0x10 as -16 */
  assert_field_refused(dir, variants, "compare-paired.csv", 3, "change_mean_pct", "-0x10",
                       "column 'change_mean_pct': '-0x10' is not a number");
  assert_field_refused(dir, variants, "compare-paired.csv", 4, "variant", "ghost",
                       "column 'variant': no variant 'ghost' in compare.csv (variants: static, "
                       "ema, 2x)");
  assert_field_refused(dir, variants, "compare-paired.csv", 3, "baseline", "2x",
                       "column 'baseline': '2x' is not the first row's baseline 'static' (a "
                       "comparison has one)");
  assert_field_refused(dir, variants, "compare-paired.csv", 2, "metric", "borrower_hello",
                       "column 'metric': no paired metric 'borrower_hello' in compare.csv (paired "
                       "metrics: borrower_tok_s, borrower_ttft_p50_ms, borrower_ttft_p99_ms, "
                       "borrower_tpot_p99_ms, lenders_tok_s, lenders_ttft_p99_ms_max, "
                       "lenders_tpot_p99_ms_max)");
  assert_field_refused(dir, variants, "compare-paired.csv", 2, "repeats", "one",
                       "column 'repeats': 'one' is not a non-negative integer (of at most 2^53)");
  remove_compare_folder(dir);
}

/* compare.csv's borrower that a variant's run does not have, a dir outside the comparison; a
 * variant's requests.csv or timeline.csv of a tenant its run does not have (read for the
 * comparison's figure, before the variants' own). */
static void test_compare_runs(void) {
  g_autofree char *dir = compare_folder();
  g_autofree char *summary = NULL;
  if (dir == NULL)
    return;
  summary = g_build_filename(dir, "static", "summary.json", NULL);
  assert_field_refused(dir, variants, "compare.csv", 2, "borrower", "ghost",
                       keep(g_strdup_printf("column 'borrower': no tenant 'ghost' in %s (its "
                                            "tenants: burst, peer1, peer2, peer3)",
                                            summary)));
  assert_field_refused(dir, variants, "compare.csv", 3, "dir", "..",
                       keep(g_strdup_printf("column 'dir': '..' is not a variant's folder (a "
                                            "name in %s)",
                                            dir)));
  g_free(summary);
  summary = g_build_filename(dir, "ema", "summary.json", NULL);
  assert_field_refused(dir, variants, "ema/requests.csv", 3, "tenant", "ghost",
                       keep(g_strdup_printf("column 'tenant': no tenant 'ghost' in %s (its "
                                            "tenants: burst, peer1, peer2, peer3)",
                                            summary)));
  assert_field_refused(dir, variants, "2x/timeline.csv", 5, "tokens", "lots",
                       "column 'tokens': 'lots' is not a non-negative integer (of at most 2^53)");
  assert_plots(dir);
  remove_compare_folder(dir);
}

/* A line at the end of DIR/FOLDER/plots/plots.gp (FOLDER NULL: DIR's own) that a plot drawing
 * the folder again would not write: a figure drawn anew, even the same, changes its plots/. */
static void mark_plots(const char *dir, const char *folder) {
  g_autofree char *name = g_build_filename(folder ? folder : ".", "plots", "plots.gp", NULL);
  g_autofree char *text = ema_test_read_file(dir, name);
  g_autofree char *marked = g_strconcat(text, "# not drawn again\n", NULL);
  write_file(dir, name, marked);
}

/* A comparison with repeats: a later run's (repeat 1) requests.csv or timeline.csv is read only
 * for its own figures, not the comparison's; damaged, it is refused before any folder's figures
 * are moved in: the comparison's plots/ and every variant's are as they were. */
static void test_compare_repeats(void) {
  g_autofree char *dir = compare_folder_of("repeats=2", repeat_folders);
  g_autofree char *summary = NULL;
  if (dir == NULL)
    return;
  mark_plots(dir, NULL);
  for (guint i = 0; repeat_folders[i]; i++)
    mark_plots(dir, repeat_folders[i]);
  assert_field_refused(dir, repeat_folders, "2x-r1/timeline.csv", 5, "slices_borrowed", "lots",
                       "column 'slices_borrowed': 'lots' is not a non-negative integer (of at "
                       "most 2^53)");
  summary = g_build_filename(dir, "ema-r1", "summary.json", NULL);
  assert_field_refused(dir, repeat_folders, "ema-r1/requests.csv", 3, "tenant", "ghost",
                       keep(g_strdup_printf("column 'tenant': no tenant 'ghost' in %s (its "
                                            "tenants: burst, peer1, peer2, peer3)",
                                            summary)));
  assert_field_refused(dir, repeat_folders, "static-r1/requests.csv", 2, "ttft_ms", "soon",
                       "column 'ttft_ms': 'soon' is not a non-negative number");
  /* put back, every folder is drawn again (the mark gone: it told a folder drawn anew) */
  assert_plots(dir);
  for (guint i = 0; i <= g_strv_length((char **) repeat_folders); i++) {
    g_autofree char *name =
        g_build_filename(repeat_folders[i] ? repeat_folders[i] : ".", "plots", "plots.gp", NULL);
    g_autofree char *text = ema_test_read_file(dir, name);
    g_assert_null(strstr(text, "# not drawn again"));
  }
  remove_compare_folder(dir);
}

/* ---- a comparison's figures put in place, every folder's or none ------------------------- */

/* Whether DIR, or one of its VARIANTS' folders, holds NAME (plots.new, plots.old). */
static gboolean any_holds(const char *dir, const char *const *subs, const char *name) {
  gboolean found = exists(dir, name);
  for (guint i = 0; subs[i]; i++)
    found = found || exists(dir, keep(g_build_filename(subs[i], name, NULL)));
  return found;
}

/* Moving the figures into place failing in a later folder, once those before it were moved
 * (they were drawn anew while the later ones kept the old: a mix), undoes them: every plots/ as
 * it was (each marked, so that one drawn anew would show), no plots.new or plots.old left; by
 * failures that stop root too: the last variant's plots/ a file, and a plots.old appearing in
 * the third folder (ema) while it is drawn (a gnuplot that makes one), which the rename of its
 * plots/ aside cannot replace. That plots.old, not ema-sim's, is left as it is, and refused by
 * the next plot (never taken for figures set aside); moved, the folders are drawn anew. */
static void test_compare_move_whole(void) {
  g_autofree char *dir = compare_folder();
  g_autofree char *plots = NULL, *kept_plots = NULL, *script = NULL, *gnuplot = NULL;
  g_autofree char *old = NULL, *want = NULL;
  if (dir == NULL)
    return;
  mark_plots(dir, NULL);
  for (guint i = 0; variants[i]; i++)
    mark_plots(dir, variants[i]);

  /* 2x/plots a file (the comparison's, static's and ema's figures were moved in before it was
   * found: a mix; now it is found before any folder's plots/ is moved) */
  plots = g_build_filename(dir, "2x", "plots", NULL);
  kept_plots = g_build_filename(dir, "2x", "plots.kept", NULL);
  g_assert_cmpint(g_rename(plots, kept_plots), ==, 0);
  write_file(dir, "2x/plots", "not a folder\n");
  want = g_strdup_printf("ema-sim: %s is not a folder: move it (the figures go into a folder of "
                         "that name) (every plots/ is as it was)\n",
                         plots);
  assert_refused(dir, (const char *const[]){"static", "ema", NULL}, want, NULL);
  g_assert_false(any_holds(dir, variants, "plots.old"));
  g_assert_cmpstr(keep(ema_test_read_file(dir, "2x/plots")), ==, "not a folder\n");
  g_assert_cmpint(g_remove(plots), ==, 0);
  g_assert_cmpint(g_rename(kept_plots, plots), ==, 0);

  /* a rename refused in the third folder, after two folders' plots/ were moved aside */
  script = g_build_filename(dir, "..", "gnuplot.sh", NULL);
  g_assert_true(
      g_file_set_contents(script,
                          "#!/bin/sh\n"
                          "gnuplot \"$@\" || exit\n"
                          "case \"$(pwd)\" in\n"
                          "*/ema/plots.new) mkdir ../plots.old && echo x >../plots.old/x ;;\n"
                          "esac\n",
                          -1, NULL));
  g_assert_cmpint(g_chmod(script, 0755), ==, 0);
  gnuplot = g_strconcat("EMA_GNUPLOT=", script, NULL);
  old = g_build_filename(dir, "ema", "plots.old", NULL);
  g_free(want);
  want = g_strdup_printf("ema-sim: cannot move %s/ema/plots aside to %s: %s (every plots/ is as "
                         "it was)\n",
                         dir, old, g_strerror(ENOTEMPTY));
  assert_refused_env((const char *const[]){gnuplot, NULL}, dir, variants, want, NULL);
  g_assert_false(exists(dir, "plots.old"));
  g_assert_false(exists(dir, "static/plots.old"));
  g_assert_false(exists(dir, "2x/plots.old"));
  g_assert_cmpstr(keep(ema_test_read_file(dir, "ema/plots.old/x")), ==, "x\n");

  /* left there, it is in the way of the next plot; moved, every folder is drawn anew */
  g_free(want);
  want = g_strdup_printf("ema-sim: %s is in the way: not figures ema-sim set aside (no plots.gp "
                         "of its own): move it\n",
                         old);
  assert_refused(dir, variants, want, NULL);
  ema_test_remove_tree(old);
  assert_plots(dir);
  g_assert_false(any_holds(dir, variants, "plots.old"));
  g_assert_null(strstr(keep(ema_test_read_file(dir, "ema/plots/plots.gp")), "# not drawn again"));
  remove_compare_folder(dir);
}

/* What a plot killed while it put figures in place leaves, settled by the next: a plots.old
 * with no plots/ beside it (killed after it was moved aside, before the new one was in) is the
 * folder's figures, put back (a figure of its own under another name kept); one beside a plots/
 * (killed after the new one was in) goes, as does a plots.new (killed while drawing); a figure
 * of plots/ under a name the plot does not draw stays. */
static void test_compare_leftovers(void) {
  g_autofree char *dir = compare_folder();
  if (dir == NULL)
    return;
  g_assert_cmpint(g_rename(keep(g_build_filename(dir, "static", "plots", NULL)),
                           keep(g_build_filename(dir, "static", "plots.old", NULL))),
                  ==, 0);
  write_file(dir, "static/plots.old/other.txt", "mine\n");
  g_assert_cmpint(g_mkdir(keep(g_build_filename(dir, "ema", "plots.old", NULL)), 0755), ==, 0);
  write_file(dir, "ema/plots.old/plots.gp", "# Made by ema-sim plot 0.1: an earlier one\n");
  write_file(dir, "ema/plots.old/stale.txt", "stale\n");
  g_assert_cmpint(g_mkdir(keep(g_build_filename(dir, "2x", "plots.new", NULL)), 0755), ==, 0);
  write_file(dir, "2x/plots.new/junk.txt", "junk\n");
  write_file(dir, "plots/mine.txt", "mine too\n");
  assert_plots(dir);
  g_assert_false(any_holds(dir, variants, "plots.old"));
  g_assert_false(any_holds(dir, variants, "plots.new"));
  g_assert_cmpstr(keep(ema_test_read_file(dir, "static/plots/other.txt")), ==, "mine\n");
  g_assert_true(exists(dir, "static/plots/plots.gp"));
  g_assert_false(exists(dir, "ema/plots/stale.txt"));
  g_assert_false(exists(dir, "2x/plots/junk.txt"));
  g_assert_cmpstr(keep(ema_test_read_file(dir, "plots/mine.txt")), ==, "mine too\n");
  remove_compare_folder(dir);
}

int main(int argc, char **argv) {
  int status;
  g_test_init(&argc, &argv, NULL);
  kept = g_ptr_array_new_with_free_func(g_free);
  g_test_add_func("/plot-input/sweep/metric", test_sweep_metric);
  g_test_add_func("/plot-input/sweep/status-repeat", test_sweep_status_repeat);
  g_test_add_func("/plot-input/sweep/header-twice", test_sweep_header_twice);
  g_test_add_func("/plot-input/sweep/settings", test_settings);
  g_test_add_func("/plot-input/run/timeline", test_run_timeline);
  g_test_add_func("/plot-input/run/requests", test_run_requests);
  g_test_add_func("/plot-input/compare/paired", test_compare_paired);
  g_test_add_func("/plot-input/compare/runs", test_compare_runs);
  g_test_add_func("/plot-input/compare/repeats", test_compare_repeats);
  g_test_add_func("/plot-input/compare/move-whole", test_compare_move_whole);
  g_test_add_func("/plot-input/compare/leftovers", test_compare_leftovers);
  status = g_test_run();
  g_ptr_array_unref(kept);
  return status;
}
