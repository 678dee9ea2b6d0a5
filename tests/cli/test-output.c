/* test-output.c: the output folder rule and what results carry, through
 * the ema-sim program: a run owns its folder (.ema-output; what an earlier
 * run wrote is removed, nothing else; an unmarked non-empty folder is
 * refused; a failed run leaves no earlier summary.json), the default
 * folder results/NAME is name-safe, summary.json's provenance (version,
 * build id, trace hashes), the compare mode, a sweep that reruns points
 * another build made unless --reuse, and each folder one kind of command's
 * (run, sweep, frontier: each refuses the others'). */
#include <string.h>

#include <glib/gstdio.h>
#include <json-glib/json-glib.h>

#include "testutil.h"

/* Strings a check reads once, freed at the end (LeakSanitizer runs at exit). */
static GPtrArray *kept;

static char *keep(char *text) {
  g_ptr_array_add(kept, text);
  return text;
}

/* A synthetic two-tenant experiment on h200x2 (each GPU one tenant). */
static const char experiment_text[] =
    "name: %s\n"
    "server: h200x2\n"
    "requests_csv: %s\n"
    "tenants:\n"
    "  - {name: a, model: llama-3.1-8b, gpu: 0, trace: {arrivals: poisson, rate: 2, duration: 5s,\n"
    "      prompt: {dist: fixed, tokens: 100}, output: {dist: fixed, tokens: 20}}}\n"
    "  - {name: b, model: llama-3.1-8b, gpu: 1, trace: {%s}}\n";

static const char synthetic_b[] = "arrivals: poisson, rate: 1, duration: 5s, prompt: {dist: "
                                  "fixed, tokens: 50}, output: {dist: fixed, tokens: 10}";

static char *write_experiment(const char *dir, const char *file, const char *name,
                              const char *requests_csv, const char *trace_b) {
  g_autofree char *path = g_build_filename(dir, file, NULL);
  g_autofree char *text = g_strdup_printf(experiment_text, name, requests_csv, trace_b);
  GError *error = NULL;
  g_file_set_contents(path, text, -1, &error);
  g_assert_no_error(error);
  return g_steal_pointer(&path);
}

static gboolean exists(const char *dir, const char *name) {
  g_autofree char *path = g_build_filename(dir, name, NULL);
  return g_file_test(path, G_FILE_TEST_EXISTS);
}

static void touch(const char *dir, const char *name, const char *text) {
  g_autofree char *path = g_build_filename(dir, name, NULL);
  GError *error = NULL;
  g_file_set_contents(path, text, -1, &error);
  g_assert_no_error(error);
}

/* A run marks its folder; the next run removes what the first wrote and
 * does not write now (requests.csv), keeps a file it never wrote. */
/* ema-sim run EXP -o OUT --no-plot, which must succeed. */
static void run_ok(const char *exp, const char *out) {
  g_autoptr(EmaTestRun) run = ema_test_cli("run", exp, "-o", out, "--no-plot", NULL);
  ema_test_assert_ok(run);
}

static void test_owned_folder(void) {
  g_autofree char *tmp = ema_test_temp_dir();
  g_autofree char *out = g_build_filename(tmp, "out", NULL);
  g_autofree char *with = write_experiment(tmp, "with.yaml", "owned", "true", synthetic_b);
  g_autofree char *without = write_experiment(tmp, "without.yaml", "owned", "false", synthetic_b);
  g_autofree char *marker = NULL;
  run_ok(with, out);
  marker = ema_test_read_file(out, ".ema-output");
  ema_test_assert_contains(marker, "\nsummary.json\n");
  ema_test_assert_contains(marker, "\nrequests.csv\n");
  g_assert_true(exists(out, "requests.csv"));
  g_assert_true(exists(out, "tenants.csv"));
  g_mkdir(keep(g_build_filename(out, "plots", NULL)), 0755);
  touch(out, "plots/old.png", "stale figure");
  touch(out, "notes.txt", "mine");
  run_ok(without, out);
  g_assert_false(exists(out, "requests.csv"));
  g_assert_false(exists(out, "plots/old.png"));
  g_assert_true(exists(out, "summary.json"));
  g_assert_true(exists(out, "notes.txt"));
  ema_test_remove_tree(tmp);
}

/* A folder ema-sim did not make, with something in it, is refused
 * untouched; an empty one is taken. */
static void test_foreign_folder(void) {
  g_autofree char *tmp = ema_test_temp_dir();
  g_autofree char *out = g_build_filename(tmp, "theirs", NULL);
  g_autofree char *empty = g_build_filename(tmp, "empty", NULL);
  g_autofree char *exp = write_experiment(tmp, "e.yaml", "foreign", "true", synthetic_b);
  g_autofree char *want = g_strdup_printf(
      "ema-sim: output directory %s is not empty and not an ema-sim output folder (no "
      ".ema-output): give "
      "another -o, or empty it\n",
      out);
  g_mkdir(out, 0755);
  g_mkdir(empty, 0755);
  touch(out, "summary.json", "{\"not\": \"ours\"}");
  {
    g_autoptr(EmaTestRun) run = ema_test_cli("run", exp, "-o", out, "--no-plot", NULL);
    ema_test_assert_failed(run, 1, want);
  }
  g_assert_false(exists(out, "resolved.yaml"));
  g_assert_cmpstr(keep(ema_test_read_file(out, "summary.json")), ==, "{\"not\": \"ours\"}");
  {
    g_autoptr(EmaTestRun) run = ema_test_cli("run", exp, "-o", empty, "--no-plot", NULL);
    ema_test_assert_ok(run);
  }
  g_assert_true(exists(empty, ".ema-output"));
  ema_test_remove_tree(tmp);
}

/* A run killed while it wrote its marker leaves only the marker's temporary
 * file (.ema-output.new): the next run takes the folder and removes it; any
 * other name like it (a user's .ema-output.backup, 37#16) is someone
 * else's. */
static void test_marker_leftover(void) {
  g_autofree char *tmp = ema_test_temp_dir();
  g_autofree char *out = g_build_filename(tmp, "killed", NULL);
  g_autofree char *other = g_build_filename(tmp, "other", NULL);
  g_autofree char *exp = write_experiment(tmp, "e.yaml", "leftover", "true", synthetic_b);
  g_mkdir(out, 0755);
  g_mkdir(other, 0755);
  touch(out, ".ema-output.new", "# ema-sim output folder: half written");
  touch(other, ".ema-output.backup", "mine");
  run_ok(exp, out);
  /* the leftover gone, the run's files there */
  g_assert_cmpstr(keep(ema_test_dir_entries(out)), ==,
                  ".ema-output requests.csv resolved.yaml summary.json tenants.csv timeline.csv");
  {
    g_autoptr(EmaTestRun) run = ema_test_cli("run", exp, "-o", other, "--no-plot", NULL);
    g_assert_cmpint(run->status, !=, 0);
  }
  g_assert_true(exists(other, ".ema-output.backup"));
  g_assert_false(exists(other, "summary.json"));
  ema_test_remove_tree(tmp);
}

/* A run writes its tables into .ema-partial and moves them into place at its end: one that a
 * killed run left (the marker lists it) goes with the next claim; one that the marker does not
 * list (a folder claimed by an ema-sim before .ema-partial) is not ema-sim's: the run is refused
 * before it starts, the user's file in it untouched. */
static void test_partial_folder(void) {
  g_autofree char *tmp = ema_test_temp_dir();
  g_autofree char *out = g_build_filename(tmp, "out", NULL);
  g_autofree char *partial = g_build_filename(out, ".ema-partial", NULL);
  g_autofree char *exp = write_experiment(tmp, "e.yaml", "partial", "true", synthetic_b);
  g_autofree char *want = g_strdup_printf(
      "ema-sim: cannot create %s: it exists, and the folder's .ema-output does not list it (not "
      "ema-sim's): remove it, or give another -o\n",
      partial);
  run_ok(exp, out);
  g_assert_false(exists(out, ".ema-partial"));
  ema_test_assert_contains(keep(ema_test_read_file(out, ".ema-output")), "\n.ema-partial\n");
  g_assert_cmpint(g_mkdir(partial, 0755), ==, 0);
  touch(out, ".ema-partial/timeline.csv", "half a table");
  run_ok(exp, out);
  g_assert_false(exists(out, ".ema-partial"));
  g_assert_true(exists(out, "summary.json"));
  touch(out, ".ema-output", "# kind: run\nsummary.json\n");
  g_assert_cmpint(g_mkdir(partial, 0755), ==, 0);
  touch(out, ".ema-partial/mine.txt", "mine");
  {
    g_autoptr(EmaTestRun) run = ema_test_cli("run", exp, "-o", out, "--no-plot", NULL);
    ema_test_assert_failed(run, 1, want);
  }
  g_assert_cmpstr(keep(ema_test_read_file(out, ".ema-partial/mine.txt")), ==, "mine");
  ema_test_remove_tree(tmp);
}

/* 17#8: a run that fails after it started writing leaves its new
 * resolved.yaml and no summary.json of the run before; and none of its own
 * tables (they went with .ema-partial: timeline.csv, opened before the
 * trace, was left empty). */
static void test_failed_run_leaves_no_summary(void) {
  g_autofree char *tmp = ema_test_temp_dir();
  g_autofree char *out = g_build_filename(tmp, "out", NULL);
  g_autofree char *good = write_experiment(tmp, "good.yaml", "fails", "true", synthetic_b);
  g_autofree char *bad =
      write_experiment(tmp, "bad.yaml", "fails", "true", "file: bad.csv, format: azure");
  touch(tmp, "bad.csv", "TIMESTAMP,ContextTokens,GeneratedTokens\nnot-a-time,10,10\n");
  {
    g_autoptr(EmaTestRun) run = ema_test_cli("run", good, "-o", out, "--no-plot", NULL);
    ema_test_assert_ok(run);
  }
  g_assert_true(exists(out, "summary.json"));
  {
    g_autoptr(EmaTestRun) run = ema_test_cli("run", bad, "-o", out, "--no-plot", NULL);
    g_assert_cmpint(run->status, ==, 1);
    ema_test_assert_contains(run->err, "bad.csv");
  }
  g_assert_true(exists(out, "resolved.yaml"));
  ema_test_assert_contains(keep(ema_test_read_file(out, "resolved.yaml")), "bad.csv");
  g_assert_false(exists(out, "summary.json"));
  g_assert_false(exists(out, "tenants.csv"));
  g_assert_false(exists(out, "timeline.csv"));
  g_assert_false(exists(out, ".ema-partial"));
  ema_test_remove_tree(tmp);
}

/* 17#9: the default folder results/NAME takes NAME as one safe component:
 * no escape from results/, no blank or slash in a folder name (a name holds
 * no control character: the loader refuses it); for a run (DATA "run") and
 * for a sweep (the same file with a sweep: key), whose folder was
 * results/NAME as written, ../ included. */
static void test_default_folder_is_name_safe(gconstpointer data) {
  const char *command = data;
  g_autofree char *tmp = ema_test_temp_dir();
  g_autofree char *work = g_build_filename(tmp, "a", "b", NULL);
  g_autofree char *exp = NULL;
  g_autofree char *results = g_build_filename(work, "results", NULL);
  g_autoptr(GPtrArray) entries = NULL;
  const char *argv[] = {ema_test_sim_path(), command, "e.yaml", "--no-plot", NULL};
  const char *summary = strcmp(command, "sweep") == 0 ? "_.._.._esc_aped/000-seed=1/summary.json"
                                                      : "_.._.._esc_aped/summary.json";
  g_mkdir_with_parents(work, 0755);
  exp = write_experiment(work, "e.yaml", "\"../../esc aped\"", "true", synthetic_b);
  if (strcmp(command, "sweep") == 0) {
    g_autofree char *text = ema_test_read_file(work, "e.yaml");
    g_autofree char *swept = g_strconcat(text, "sweep: {seed: [1]}\n", NULL);
    g_assert_true(g_file_set_contents(exp, swept, -1, NULL));
  }
  {
    g_autoptr(EmaTestRun) run = ema_test_run(argv, work, NULL);
    ema_test_assert_ok(run);
  }
  g_assert_false(exists(tmp, "esc aped"));
  g_assert_false(exists(tmp, "escaped"));
  entries = ema_test_list_dir(results, "");
  g_assert_cmpuint(entries->len, ==, 1);
  g_assert_cmpstr(entries->pdata[0], ==, "_.._.._esc_aped");
  g_assert_true(exists(results, summary));
  ema_test_remove_tree(tmp);
}

/* A name with a control character (a newline) is refused at it, by run and by sweep (each
 * point's), before any folder is made: it named results/NAME's folder, CSV fields and labels. */
static void test_default_folder_name_refused(gconstpointer data) {
  const char *command = data;
  g_autofree char *work = ema_test_temp_dir();
  g_autofree char *exp = write_experiment(work, "e.yaml", "\"esc\\naped\"", "true", synthetic_b);
  g_autofree char *want = NULL;
  const char *argv[] = {ema_test_sim_path(), command, "e.yaml", "--no-plot", NULL};
  if (strcmp(command, "sweep") == 0) {
    g_autofree char *text = ema_test_read_file(work, "e.yaml");
    g_autofree char *swept = g_strconcat(text, "sweep: {seed: [1]}\n", NULL);
    g_assert_true(g_file_set_contents(exp, swept, -1, NULL));
  }
  want = g_strdup_printf("e.yaml:1:7: name: a name holds no control character (0x0a at byte 3)%s",
                         strcmp(command, "sweep") == 0 ? " (point 000-seed=1)\n" : "\n");
  {
    g_autoptr(EmaTestRun) run = ema_test_run(argv, work, NULL);
    ema_test_assert_error_line(run, want);
  }
  g_assert_false(exists(work, "results"));
  ema_test_remove_tree(work);
}

/* summary.json's provenance: the version ema-sim reports, a build id, and
 * the SHA-256 of each trace file read. */
static void test_provenance(void) {
  g_autofree char *tmp = ema_test_temp_dir();
  g_autofree char *out = g_build_filename(tmp, "out", NULL);
  g_autofree char *trace = g_build_filename(tmp, "b.csv", NULL);
  g_autofree char *trace_text =
      g_strdup("TIMESTAMP,ContextTokens,GeneratedTokens\n"
               "2023-11-16 18:15:46.6805900,100,10\n2023-11-16 18:15:47.0000000,50,5\n");
  g_autofree char *hash = g_compute_checksum_for_string(G_CHECKSUM_SHA256, trace_text, -1);
  g_autofree char *exp =
      write_experiment(tmp, "e.yaml", "provenance", "true", "file: b.csv, format: azure");
  g_autoptr(EmaTestRun) version = ema_test_cli("--version", NULL);
  g_autoptr(JsonNode) root = NULL;
  JsonObject *provenance, *file;
  touch(tmp, "b.csv", trace_text);
  run_ok(exp, out);
  root = ema_test_parse_json(keep(ema_test_read_file(out, "summary.json")));
  provenance = json_object_get_object_member(json_node_get_object(root), "provenance");
  g_assert_nonnull(provenance);
  g_assert_cmpstr(
      version->out + strlen("ema-sim "), ==,
      keep(g_strconcat(json_object_get_string_member(provenance, "version"), "\n", NULL)));
  g_assert_cmpuint(strlen(json_object_get_string_member(provenance, "build_id")), ==, 64);
  g_assert_true(json_object_has_member(provenance, "commit"));
  g_assert_cmpuint(json_array_get_length(json_object_get_array_member(provenance, "plugins")), ==,
                   0);
  g_assert_cmpuint(json_array_get_length(json_object_get_array_member(provenance, "traces")), ==,
                   1);
  file = json_array_get_object_element(json_object_get_array_member(provenance, "traces"), 0);
  g_assert_cmpstr(json_object_get_string_member(file, "file"), ==, trace);
  g_assert_cmpstr(json_object_get_string_member(file, "sha256"), ==, hash);
  /* run again into its folder: the run reads its folder's marker, which is not an input of
   * its results (its summary would name its own folder, and a sweep hash it) */
  run_ok(exp, out);
  g_assert_null(strstr(keep(ema_test_read_file(out, "summary.json")), ".ema-output"));
  ema_test_remove_tree(tmp);
}

/* compare: each variant in its folder, compare.csv one row per variant in
 * file order, the comparison printed; check checks every variant. */
/* TMP/c.yaml: the synthetic experiment "cmp" and COMPARE (its compare: or sweep: and
 * more); its path */
static char *write_comparison(const char *tmp, const char *compare) {
  g_autofree char *base = write_experiment(tmp, "base.yaml", "cmp", "true", synthetic_b);
  g_autofree char *text = g_strconcat(keep(ema_test_read_file(tmp, "base.yaml")), compare, NULL);
  touch(tmp, "c.yaml", text);
  return g_build_filename(tmp, "c.yaml", NULL);
}

/* TMP/c.yaml comparing static and SECOND (2x: twice the HBM). */
static char *write_compare(const char *tmp, const char *second) {
  g_autofree char *compare = g_strconcat("compare:\n  static: {policy: static}\n  ", second,
                                         ": {server.gpu.hbm_scale: 2}\n", NULL);
  return write_comparison(tmp, compare);
}

static void test_compare(void) {
  g_autofree char *tmp = ema_test_temp_dir();
  g_autofree char *out = g_build_filename(tmp, "out", NULL);
  g_autofree char *path = write_comparison(tmp, "compare:\n  static: {policy: static}\n"
                                                "  2x: {server.gpu.hbm_scale: 2}\n");
  g_autofree char *csv = NULL;
  g_auto(GStrv) lines = NULL;
  {
    g_autoptr(EmaTestRun) run = ema_test_cli("check", path, NULL);
    ema_test_assert_ok(run);
    ema_test_assert_contains(run->out, "ok (cmp on h200x2, 2 tenants, compares static, 2x)");
  }
  {
    /* repeats: the variants once and the runs of each counted, not every run named (a
     * line as long as the repeats) */
    g_autoptr(EmaTestRun) run = ema_test_cli("check", path, "--set", "repeats=1000", NULL);
    ema_test_assert_ok(run);
    ema_test_assert_contains(run->out,
                             "ok (cmp on h200x2, 2 tenants, compares static, 2x, 1000 runs of "
                             "each)\n");
    g_assert_cmpuint(strlen(run->out), <, 200 + strlen(path));
  }
  {
    g_autoptr(EmaTestRun) run = ema_test_cli("run", path, "-o", out, "--no-plot", NULL);
    ema_test_assert_ok(run);
    ema_test_assert_contains(run->out, "cmp: static, 2x side by side\n");
    ema_test_assert_contains(run->out, "\ncomparison: borrower ");
  }
  g_assert_true(exists(out, "static/summary.json"));
  g_assert_true(exists(out, "2x/summary.json"));
  ema_test_assert_contains(keep(ema_test_read_file(out, "2x/resolved.yaml")), "hbm_scale: 2\n");
  csv = ema_test_read_file(out, "compare.csv");
  lines = g_strsplit(csv, "\n", -1);
  g_assert_cmpuint(g_strv_length(lines), ==, 4);
  g_assert_true(g_str_has_prefix(lines[0], "variant,dir,borrower,borrower_tok_s,"));
  g_assert_true(g_str_has_prefix(lines[1], "static,static,"));
  g_assert_true(g_str_has_prefix(lines[2], "2x,2x,"));
  /* a plain experiment loader refuses the key */
  {
    g_autoptr(EmaTestRun) run = ema_test_cli("sweep", path, "--list", NULL);
    g_assert_cmpint(run->status, ==, 1);
    ema_test_assert_contains(run->err, "compare: compare is for ema-sim run");
  }
  ema_test_remove_tree(tmp);
}

/* 37#13, 37#4: a compare run again clears its variant folders by their own
 * markers: a user's file in one stays, and events.csv (a run's, listed)
 * goes. */
static void test_compare_keeps_user_files(void) {
  g_autofree char *tmp = ema_test_temp_dir();
  g_autofree char *out = g_build_filename(tmp, "out", NULL);
  g_autofree char *path = write_compare(tmp, "2x");
  run_ok(path, out);
  ema_test_assert_contains(keep(ema_test_read_file(out, "static/.ema-output")), "\nevents.csv\n");
  touch(out, "static/notes.txt", "mine");
  touch(out, "static/events.csv", "stale");
  run_ok(path, out);
  g_assert_cmpstr(keep(ema_test_read_file(out, "static/notes.txt")), ==, "mine");
  g_assert_false(exists(out, "static/events.csv"));
  g_assert_true(exists(out, "static/summary.json"));
  ema_test_remove_tree(tmp);
}

/* 37#17: a variant whose folder would be one of the comparison's own files
 * is refused before any variant runs. */
static void test_compare_variant_named_like_a_file(void) {
  g_autofree char *tmp = ema_test_temp_dir();
  g_autofree char *out = g_build_filename(tmp, "out", NULL);
  g_autofree char *path = write_compare(tmp, "compare.csv");
  g_autoptr(EmaTestRun) run = ema_test_cli("run", path, "-o", out, "--no-plot", NULL);
  g_autoptr(EmaTestRun) checked = ema_test_cli("check", path, NULL);
  /* at the variant's key in the file */
  g_autofree char *want = g_strconcat(path,
                                      ":10:3: compare: variant 'compare.csv' would write its "
                                      "folder over the comparison's own compare.csv: rename it\n",
                                      NULL);
  ema_test_assert_failed(run, 1, want);
  g_assert_false(exists(out, "static"));
  /* check finds it too (it said ok) */
  ema_test_assert_failed(checked, 1, want);
  ema_test_remove_tree(tmp);
}

/* check of a comparison prints each variant's warnings before a run, as check of a plain file
 * does (it printed none): here a timeline that may reach its cap, named by the variant. */
static void test_compare_check_warnings(void) {
  g_autofree char *tmp = ema_test_temp_dir();
  g_autofree char *path = write_compare(tmp, "2x");
  g_autoptr(EmaTestRun) run =
      ema_test_cli("check", path, "--set", "timeline_max_rows=1", "--set", "duration=10s", NULL);
  g_autoptr(EmaTestRun) set_variant =
      ema_test_cli("check", path, "--set", "compare.2x.policy=ema", NULL);
  /* a variant is the file's: a --set into compare: is refused, saying so */
  ema_test_assert_failed(set_variant, 1,
                         "--set:1:1: compare: the compare variants are the file's, not --set's: "
                         "edit them there (a --set of another key changes it in every variant)\n");
  g_assert_cmpint(run->status, ==, 0);
  ema_test_assert_contains(run->err,
                           "ema-sim: warning: static: timeline.csv may reach its cap of 1 "
                           "rows");
  ema_test_assert_contains(run->err, "ema-sim: warning: 2x: timeline.csv may reach its cap of 1 "
                                     "rows");
  ema_test_remove_tree(tmp);
}

/* A variant that does not load is named as a variant, not as a sweep's point ("point 001-tiny"),
 * by check and by run. */
static void test_compare_variant_error(void) {
  g_autofree char *tmp = ema_test_temp_dir();
  g_autofree char *out = g_build_filename(tmp, "out", NULL);
  g_autofree char *path =
      write_comparison(tmp, "compare:\n  static: {policy: static}\n"
                            "  tiny: {tenants.0.engine.gpu_memory_utilization: 0.01}\n");
  g_autoptr(EmaTestRun) check = ema_test_cli("check", path, NULL);
  g_autoptr(EmaTestRun) run = ema_test_cli("run", path, "-o", out, "--no-plot", NULL);
  g_assert_cmpint(check->status, ==, 1);
  ema_test_assert_contains(check->err, "leaves no KV cache");
  ema_test_assert_contains(check->err, " (variant tiny)\n");
  g_assert_cmpint(run->status, ==, 1);
  ema_test_assert_contains(run->err, " (variant tiny)\n");
  ema_test_remove_tree(tmp);
}

/* COMMAND (run or sweep) of PATH into OUT without figures, which must exit 0, then ema-sim plot
 * OUT, which must succeed; the first command's result (its stderr is the caller's to check). */
static EmaTestRun *run_then_plot(const char *command, const char *path, const char *out) {
  EmaTestRun *run = ema_test_cli(command, path, "-o", out, "--no-plot", NULL);
  g_autoptr(EmaTestRun) plot = NULL;
  g_assert_cmpint(run->status, ==, 0);
  plot = ema_test_cli("plot", out, NULL);
  ema_test_assert_ok(plot);
  return run;
}

/* ema-sim plot of a comparison's folder draws its variants' figures again too, each in its own
 * folder, as the run did (it drew only the comparison's). Needs gnuplot. */
static void test_compare_plot_variants(void) {
  g_autofree char *tmp = ema_test_temp_dir();
  g_autofree char *out = g_build_filename(tmp, "out", NULL);
  g_autofree char *path = write_compare(tmp, "2x");
  if (!ema_test_gnuplot_or_skip()) {
    ema_test_remove_tree(tmp);
    return;
  }
  {
    g_autoptr(EmaTestRun) run = ema_test_cli("run", path, "-o", out, "--no-plot", NULL);
    g_autoptr(EmaTestRun) plot = NULL;
    ema_test_assert_ok(run);
    g_assert_false(exists(out, "static/plots/latency-cdf.png"));
    {
      /* a tenant no variant has: refused before any figure is drawn (the comparison's were,
       * and "figures in" printed, before the first variant's refused it) */
      g_autoptr(EmaTestRun) nope = ema_test_cli("plot", out, "--tenant", "nope", NULL);
      g_autofree char *want = g_strdup_printf(
          "ema-sim: --tenant: %s/static has no tenant 'nope' (its tenants: a, b)", out);
      ema_test_assert_error_line(nope, want);
      g_assert_cmpstr(nope->out, ==, "");
      g_assert_false(exists(out, "plots"));
    }
    plot = ema_test_cli("plot", out, NULL);
    ema_test_assert_ok(plot);
    g_assert_true(exists(out, "plots/compare.png"));
    g_assert_true(exists(out, "static/plots/latency-cdf.png"));
    g_assert_true(exists(out, "2x/plots/memory.png"));
    /* titled as the run titles them: the experiment and the variant */
    ema_test_assert_contains(keep(ema_test_read_file(out, "2x/plots/plots.gp")), "cmp: 2x");
  }
  ema_test_remove_tree(tmp);
}

/* TMP/c.yaml: an experiment of tenants a and b (TRACE b's), then EXTRA (top-level keys), then
 * a comparison of static and 2x; NULL, TMP removed, where gnuplot is not there to plot it. */
static char *write_static_2x_compare(const char *tmp, const char *trace, const char *extra) {
  g_autofree char *base = write_experiment(tmp, "base.yaml", "cmp", "true", trace);
  g_autofree char *text =
      g_strconcat(keep(ema_test_read_file(tmp, "base.yaml")), extra,
                  "compare:\n  static: {policy: static}\n  2x: {server.gpu.hbm_scale: 2}\n", NULL);
  if (!ema_test_gnuplot_or_skip()) {
    ema_test_remove_tree(tmp);
    return NULL;
  }
  touch(tmp, "c.yaml", text);
  return g_build_filename(tmp, "c.yaml", NULL);
}

/* A comparison whose lenders got no first token (here b, one request in 1,000 s over 5 s) draws
 * its figure, the lenders' TTFT an empty panel that says so: gnuplot refused the CDF of no
 * points, and no comparison figure was drawn. */
static void test_compare_plot_no_ttfts(void) {
  g_autofree char *tmp = ema_test_temp_dir();
  g_autofree char *out = g_build_filename(tmp, "out", NULL);
  g_autofree char *path = write_static_2x_compare(
      tmp,
      "arrivals: poisson, rate: 0.001, duration: 5s, prompt: {dist: fixed, tokens: 50}, "
      "output: {dist: fixed, tokens: 10}",
      "");
  if (path == NULL)
    return;
  {
    g_autoptr(EmaTestRun) run = run_then_plot("run", path, out);
    ema_test_assert_contains(run->err, "static: tenant b: no request arrived");
    /* nobody borrowed: the table says why it calls a its borrower */
    ema_test_assert_contains(
        run->out, "\ncomparison: borrower a (gpu0) (no tenant borrowed: the one preempted most), "
                  "lenders (no tenant lent) the other tenants: b (gpu1)\n");
    g_assert_true(exists(out, "plots/compare.png"));
    ema_test_assert_contains(keep(ema_test_read_file(out, "plots/plots.gp")), "lender_ttfts = 0\n");
  }
  ema_test_remove_tree(tmp);
}

/* A comparison of runs shorter than their sample period (one timeline sample: no throughput
 * point) and whose every paired change is undefined (no request finished: each baseline figure
 * 0) draws its figure with empty timeline panels that say so, and no change figure: gnuplot
 * refused both plots of no point, and with them every figure of the run. */
static void test_compare_plot_nothing_to_draw(void) {
  g_autofree char *tmp = ema_test_temp_dir();
  g_autofree char *out = g_build_filename(tmp, "out", NULL);
  g_autofree char *path = write_static_2x_compare(tmp, synthetic_b, "duration: 1ms\n");
  if (path == NULL)
    return;
  {
    g_autoptr(EmaTestRun) run = run_then_plot("run", path, out);
    g_autofree char *paired = ema_test_read_file(out, "compare-paired.csv");
    ema_test_assert_contains(paired, "\n2x,static,borrower_tok_s,0,,,\n");
    g_assert_true(exists(out, "plots/compare.png"));
    g_assert_false(exists(out, "plots/compare-change.png"));
    ema_test_assert_contains(keep(ema_test_read_file(out, "plots/plots.gp")),
                             "\ntimeline_points = 0\n");
  }
  ema_test_remove_tree(tmp);
}

/* A run's timeline.csv past the 64 MiB of a configuration file (a rack's at a fine sample period:
 * 72 GPUs a sample) is plotted: plot refused the run's own output ("larger than 67108864
 * bytes"). The run's file is lengthened by samples after its last, to 66 MiB. */
static void test_plot_large_timeline(void) {
  g_autofree char *tmp = ema_test_temp_dir();
  g_autofree char *out = g_build_filename(tmp, "out", NULL);
  g_autofree char *path = write_experiment(tmp, "big.yaml", "big", "true", synthetic_b);
  g_autofree char *timeline = g_build_filename(out, "timeline.csv", NULL);
  g_autofree char *text = NULL;
  g_autoptr(GString) longer = NULL;
  g_auto(GStrv) lines = NULL;
  guint n;
  if (!ema_test_gnuplot_or_skip()) {
    ema_test_remove_tree(tmp);
    return;
  }
  {
    g_autoptr(EmaTestRun) run = ema_test_cli("run", path, "-o", out, "--no-plot", NULL);
    ema_test_assert_ok(run);
  }
  g_assert_true(g_file_get_contents(timeline, &text, NULL, NULL));
  longer = g_string_new(text);
  lines = g_strsplit(text, "\n", -1);
  n = g_strv_length(lines) - 1; /* the last is the empty one after the final newline */
  /* the last sample's two rows (one per GPU), again and again, a second later each time */
  for (guint s = 1; longer->len <= ((gsize) 66 << 20); s++)
    for (guint r = n - 2; r < n; r++) {
      const char *rest = strchr(lines[r], ',');
      g_string_append_printf(longer, "%u.000000000%s\n", 5 + s, rest);
    }
  g_assert_true(g_file_set_contents(timeline, longer->str, (gssize) longer->len, NULL));
  {
    g_autoptr(EmaTestRun) plot = ema_test_cli("plot", out, NULL);
    ema_test_assert_ok(plot);
    g_assert_true(exists(out, "plots/memory.png"));
  }
  ema_test_remove_tree(tmp);
}

/* A sweep none of whose requests got a first token draws its latency figure, the TTFT panel an
 * empty one that says so: every TTFT p99 was 0, which the log axis cannot show, and gnuplot
 * refused the figure (and the throughput figure with it). */
static void test_sweep_plot_no_ttfts(void) {
  g_autofree char *tmp = ema_test_temp_dir();
  g_autofree char *out = g_build_filename(tmp, "out", NULL);
  g_autofree char *path = write_comparison(tmp, "sweep:\n  tenants.0.trace.rate: [0.0001, 0.0002]\n"
                                                "  tenants.1.trace.rate: [0.0001]\n");
  if (!ema_test_gnuplot_or_skip()) {
    ema_test_remove_tree(tmp);
    return;
  }
  {
    g_autoptr(EmaTestRun) run = run_then_plot("sweep", path, out);
    g_assert_true(exists(out, "plots/sweep-latency.png"));
    g_assert_true(exists(out, "plots/sweep-throughput.png"));
    ema_test_assert_contains(keep(ema_test_read_file(out, "plots/plots.gp")), "ttft_points = 0\n");
  }
  ema_test_remove_tree(tmp);
}

/* A comparison of ops experiments (compare needs tenants) is refused by check, and by run
 * before it touches its folder: an earlier run's results there stay. */
static void test_compare_not_serving(void) {
  g_autofree char *tmp = ema_test_temp_dir();
  g_autofree char *out = g_build_filename(tmp, "out", NULL);
  g_autofree char *ops = g_build_filename(tmp, "ops.yaml", NULL);
  g_autofree char *cmp = g_build_filename(tmp, "cmp.yaml", NULL);
  static const char ops_text[] =
      "name: ops\nserver: h200x2\nops:\n"
      "  - {name: c, flows: [{kind: copy, src: gpu0, dst: gpu1, bytes: 4MiB}]}\n";
  g_autofree char *cmp_text = g_strconcat(ops_text, "compare: {a: {}, b: {seed: 2}}\n", NULL);
  g_assert_true(g_file_set_contents(ops, ops_text, -1, NULL));
  g_assert_true(g_file_set_contents(cmp, cmp_text, -1, NULL));
  {
    g_autoptr(EmaTestRun) first = ema_test_cli("run", ops, "-o", out, "--no-plot", NULL);
    g_autoptr(EmaTestRun) checked = ema_test_cli("check", cmp, NULL);
    g_autoptr(EmaTestRun) run = ema_test_cli("run", cmp, "-o", out, "--no-plot", NULL);
    g_autofree char *want = g_strconcat(
        cmp, ":5:11: compare: variant a is not a serving experiment (compare needs tenants)\n",
        NULL);
    ema_test_assert_ok(first);
    ema_test_assert_failed(checked, 1, want);
    ema_test_assert_failed(run, 1, want);
    g_assert_true(exists(out, "summary.json"));
  }
  ema_test_remove_tree(tmp);
}

/* compare with repeats: each variant's repeat r shares repeat r's seed with
 * the baseline's (static), and the table, compare.csv, compare-paired.csv
 * and the figure give the change vs static with its paired interval */
static void test_compare_repeats(void) {
  g_autofree char *tmp = ema_test_temp_dir();
  g_autofree char *out = g_build_filename(tmp, "out", NULL);
  g_autofree char *path = write_comparison(tmp, "compare:\n  2x: {server.gpu.hbm_scale: 2}\n"
                                                "  static: {policy: static}\nrepeats: 3\n");
  g_autofree char *csv = NULL, *paired = NULL;
  g_autofree char *gnuplot = g_find_program_in_path("gnuplot");
  g_autoptr(EmaTestRun) run = NULL;
  g_auto(GStrv) lines = NULL;
  run = ema_test_cli("run", path, "-o", out, NULL);
  ema_test_assert_ok(run);
  ema_test_assert_contains(run->out, "cmp: 2x, static side by side\n");
  ema_test_assert_contains(run->out, "\nvs static, paired by repeat (3 repeats, common random "
                                     "numbers): mean change [95% interval, Student's t]\n");
  ema_test_assert_contains(run->out, "\nborrower TTFT p99  ");
  ema_test_assert_contains(run->out, "lent in all: every slice lent over the run, cumulative");
  /* repeat r of every variant has the same seed, another than repeat 0's */
  {
    const char *const runs[] = {"2x", "static", "2x-r1", "static-r1"};
    char *seeds[G_N_ELEMENTS(runs)] = {NULL};
    for (guint i = 0; i < G_N_ELEMENTS(runs); i++) {
      g_autofree char *file = g_build_filename(runs[i], "resolved.yaml", NULL);
      g_autofree char *resolved = ema_test_read_file(out, file);
      const char *line = strstr(resolved, "\nseed: ");
      if (line == NULL) /* (g_error, not an assertion: the release build's -O3 reads on) */
        g_error("%s/%s has no seed line", out, file);
      seeds[i] = g_strndup(line, strcspn(line + 1, "\n") + 1);
    }
    g_assert_cmpstr(seeds[0], ==, seeds[1]);
    g_assert_cmpstr(seeds[2], ==, seeds[3]);
    g_assert_cmpstr(seeds[0], !=, seeds[2]);
    for (guint i = 0; i < G_N_ELEMENTS(runs); i++)
      g_free(seeds[i]);
  }
  csv = ema_test_read_file(out, "compare.csv");
  lines = g_strsplit(csv, "\n", -1);
  g_assert_cmpuint(g_strv_length(lines), ==, 8); /* header, 6 runs, the empty end */
  ema_test_assert_contains(lines[0], ",lenders_lent_peak_gib,returns,borrower_kv_blocks,"
                                     "borrower_arrived,borrower_rejected,borrower_timed_out,"
                                     "offload_steps,idle_gpus_lent_peak_gib,repeat,"
                                     "borrower_tok_s_vs_baseline_pct,");
  g_assert_true(g_str_has_prefix(lines[2], "2x,2x-r1,"));
  paired = ema_test_read_file(out, "compare-paired.csv");
  ema_test_assert_contains(paired, "variant,baseline,metric,repeats,change_mean_pct,ci95_low_pct,"
                                   "ci95_high_pct\n2x,static,borrower_tok_s,3,");
  if (gnuplot != NULL) {
    /* drawn again without a title: titled by the experiment and its variants, not "comparison" */
    g_autoptr(EmaTestRun) plot = ema_test_cli("plot", out, NULL);
    g_autofree char *driver = NULL;
    ema_test_assert_ok(plot);
    g_assert_true(exists(out, "plots/compare-change.svg"));
    driver = ema_test_read_file(out, "plots/plots.gp");
    ema_test_assert_contains(driver, "\nfigtitle = 'cmp: 2x, static'\n");
  }
  ema_test_remove_tree(tmp);
}

/* Resume keeps a point of this build, reruns one whose build_id is
 * another's, and keeps it with --reuse. */
static void test_sweep_other_build(void) {
  g_autofree char *tmp = ema_test_temp_dir();
  g_autofree char *out = g_build_filename(tmp, "out", NULL);
  g_autofree char *path = g_build_filename(tmp, "s.yaml", NULL);
  g_autofree char *base = write_experiment(tmp, "base.yaml", "swp", "true", synthetic_b);
  g_autofree char *text =
      g_strconcat(keep(ema_test_read_file(tmp, "base.yaml")), "repeats: 2\n", NULL);
  g_autofree char *point = g_build_filename(out, "000-r0", NULL);
  g_autofree char *summary = NULL;
  GError *error = NULL;
  touch(tmp, "s.yaml", text);
  {
    g_autoptr(EmaTestRun) run =
        ema_test_cli("sweep", path, "-o", out, "-j", "1", "--no-plot", NULL);
    ema_test_assert_ok(run);
  }
  summary = ema_test_read_file(point, "summary.json");
  {
    /* the point as another build would have left it */
    g_autoptr(GRegex) regex = g_regex_new("\"build_id\" : \"[0-9a-f]+\"", 0, 0, NULL);
    g_autofree char *other =
        g_regex_replace_literal(regex, summary, -1, 0, "\"build_id\" : \"other\"", 0, NULL);
    g_autofree char *file = g_build_filename(point, "summary.json", NULL);
    g_assert_cmpstr(other, !=, summary);
    g_file_set_contents(file, other, -1, &error);
    g_assert_no_error(error);
  }
  {
    g_autoptr(EmaTestRun) run =
        ema_test_cli("sweep", path, "-o", out, "-j", "1", "--no-plot", "--reuse", NULL);
    ema_test_assert_ok(run);
    ema_test_assert_contains(run->out, "2 points: 2 ok (2 found done)");
  }
  {
    g_autoptr(EmaTestRun) run =
        ema_test_cli("sweep", path, "-o", out, "-j", "1", "--no-plot", NULL);
    g_assert_cmpint(run->status, ==, 0);
    ema_test_assert_contains(run->out, "2 points: 2 ok (1 found done)");
    ema_test_assert_contains(run->err, "1 finished point was made by another build");
  }
  ema_test_assert_contains(keep(ema_test_read_file(point, "summary.json")), "\"build_id\" : \"");
  g_assert_null(strstr(keep(ema_test_read_file(point, "summary.json")), "\"other\""));
  ema_test_remove_tree(tmp);
}

/* OUT, as another kind of command found it: refused with one line naming the folder and what it
 * holds, and left as it was. */
static void assert_refused(EmaTestRun *run, const char *out, const char *holds, const char *by,
                           const char *before) {
  g_autofree char *want =
      g_strdup_printf("ema-sim: output directory %s holds the output of ema-sim %s (its "
                      ".ema-output says so), not of "
                      "ema-sim %s: give another -o, or remove the folder first\n",
                      out, holds, by);
  g_autofree char *after = ema_test_dir_entries(out);
  ema_test_assert_failed(run, 1, want);
  g_assert_cmpstr(after, ==, before);
  ema_test_run_free(run);
}

/* Each output folder is one kind of command's, which .ema-output records: a sweep refuses a
 * run's folder (it would leave the run's files beside sweep.csv), a run and frontier refuse a
 * sweep's (they would remove every point; frontier before it prints its table), a run refuses
 * frontier's; each folder stays as it was. A run into a run's folder and a sweep into its own go on
 * as before. */
static void test_folder_kinds(void) {
  g_autofree char *tmp = ema_test_temp_dir();
  g_autofree char *run_dir = g_build_filename(tmp, "run", NULL);
  g_autofree char *sweep_dir = g_build_filename(tmp, "sweep", NULL);
  g_autofree char *frontier_dir = g_build_filename(tmp, "frontier", NULL);
  g_autofree char *exp = write_experiment(tmp, "e.yaml", "kinds", "true", synthetic_b);
  g_autofree char *sweep = g_build_filename(tmp, "s.yaml", NULL);
  g_autofree char *text =
      g_strconcat(keep(ema_test_read_file(tmp, "e.yaml")), "repeats: 2\n", NULL);
  g_autofree char *run_entries = NULL, *sweep_entries = NULL, *frontier_entries = NULL;
  touch(tmp, "s.yaml", text);
  run_ok(exp, run_dir);
  ema_test_assert_contains(keep(ema_test_read_file(run_dir, ".ema-output")), "\n# kind: run\n");
  run_entries = ema_test_dir_entries(run_dir);
  assert_refused(ema_test_cli("sweep", sweep, "-o", run_dir, "--no-plot", NULL), run_dir, "run",
                 "sweep", run_entries);
  {
    g_autoptr(EmaTestRun) run = ema_test_cli("sweep", sweep, "-o", sweep_dir, "--no-plot", NULL);
    ema_test_assert_ok(run);
  }
  ema_test_assert_contains(keep(ema_test_read_file(sweep_dir, ".ema-output")), "\n# kind: sweep\n");
  sweep_entries = ema_test_dir_entries(sweep_dir);
  assert_refused(ema_test_cli("run", exp, "-o", sweep_dir, "--no-plot", NULL), sweep_dir, "sweep",
                 "run", sweep_entries);
  {
    /* refused before its table is computed or printed */
    EmaTestRun *frontier = ema_test_cli("frontier", "h200x2", "-o", sweep_dir, "--no-plot", NULL);
    g_assert_cmpstr(frontier->out, ==, "");
    assert_refused(frontier, sweep_dir, "sweep", "frontier", sweep_entries);
  }
  {
    g_autoptr(EmaTestRun) run =
        ema_test_cli("frontier", "h200x2", "-o", frontier_dir, "--no-plot", NULL);
    g_assert_cmpint(run->status, ==, 0);
  }
  frontier_entries = ema_test_dir_entries(frontier_dir);
  assert_refused(ema_test_cli("run", exp, "-o", frontier_dir, "--no-plot", NULL), frontier_dir,
                 "frontier", "run", frontier_entries);
  /* the same kind goes on as before */
  run_ok(exp, run_dir);
  {
    g_autoptr(EmaTestRun) run = ema_test_cli("sweep", sweep, "-o", sweep_dir, "--no-plot", NULL);
    ema_test_assert_ok(run);
    ema_test_assert_contains(run->out, "2 points: 2 ok (2 found done)");
  }
  ema_test_remove_tree(tmp);
}

/* check reads trace files through: a bad row fails check, at its place, the tenant named after
 * it (ema_message_prefix_error, as a run's). */
static void test_check_reads_traces(void) {
  g_autofree char *tmp = ema_test_temp_dir();
  g_autofree char *exp =
      write_experiment(tmp, "e.yaml", "chk", "true", "file: bad.csv, format: azure");
  g_autofree char *want = g_strdup_printf("%s/bad.csv:3:1: tenant b: TIMESTAMP: not a date-time "
                                          "(YYYY-MM-DD HH:MM:SS[.fffffff][+HH:MM]): "
                                          "'not-a-time'\n",
                                          tmp);
  touch(tmp, "bad.csv",
        "TIMESTAMP,ContextTokens,GeneratedTokens\n2023-11-16 18:15:46.6805900,100,10\n"
        "not-a-time,10,10\n");
  {
    g_autoptr(EmaTestRun) run = ema_test_cli("check", exp, NULL);
    ema_test_assert_failed(run, 1, want);
  }
  ema_test_remove_tree(tmp);
}

/* An error in a tenant's trace leads with its place, the tenant named after it (the label
 * went first: "ema-sim: tenant b: PATH:LINE:COL: ...", which no editor jumps to), when the
 * trace fails to open (a Mooncake file reads its first record then) and when a row fails
 * mid-run (which named no tenant), in a comparison's variant too; and ema-sim then puts no
 * "ema-sim: " before it. */
static void test_run_trace_error_place_first(void) {
  g_autofree char *tmp = ema_test_temp_dir();
  g_autofree char *out_moon = g_build_filename(tmp, "out-moon", NULL);
  g_autofree char *out_csv = g_build_filename(tmp, "out-csv", NULL);
  g_autofree char *out_cmp = g_build_filename(tmp, "out-cmp", NULL);
  g_autofree char *moon =
      write_experiment(tmp, "m.yaml", "moon", "true", "file: bad.jsonl, format: mooncake");
  g_autofree char *csv =
      write_experiment(tmp, "c.yaml", "csv", "true", "file: bad.csv, format: azure");
  g_autofree char *comparison = NULL;
  g_autofree char *out_variant = g_build_filename(out_cmp, "static", NULL);
  g_autofree char *no_moon = ema_test_no_results(out_moon);
  g_autofree char *no_csv = ema_test_no_results(out_csv);
  g_autofree char *no_variant = ema_test_no_results(out_variant);
  /* each says that the run wrote no results (the variant's, in its own folder) */
  g_autofree char *want_moon = g_strdup_printf(
      "%s/bad.jsonl:1:18: tenant b: input_length: not an integer: '1e3'%s", tmp, no_moon);
  g_autofree char *want_csv =
      g_strdup_printf("%s/bad.csv:3:1: tenant b: TIMESTAMP: not a date-time "
                      "(YYYY-MM-DD HH:MM:SS[.fffffff][+HH:MM]): 'not-a-time'%s",
                      tmp, no_csv);
  g_autofree char *want_variant =
      g_strdup_printf("%s/bad.csv:3:1: compare: variant static: tenant b: TIMESTAMP: not a "
                      "date-time (YYYY-MM-DD HH:MM:SS[.fffffff][+HH:MM]): 'not-a-time'%s",
                      tmp, no_variant);
  touch(tmp, "bad.jsonl", "{\"timestamp\": 0, \"input_length\": 1e3, \"output_length\": 5}\n");
  touch(tmp, "bad.csv",
        "TIMESTAMP,ContextTokens,GeneratedTokens\n2023-11-16 18:15:46.6805900,100,10\n"
        "not-a-time,10,10\n");
  {
    g_autoptr(EmaTestRun) run = ema_test_cli("run", moon, "-o", out_moon, "--no-plot", NULL);
    ema_test_assert_failed(run, 1, want_moon);
  }
  {
    g_autoptr(EmaTestRun) run = ema_test_cli("run", csv, "-o", out_csv, "--no-plot", NULL);
    ema_test_assert_failed(run, 1, want_csv);
  }
  touch(tmp, "cmp.yaml",
        keep(g_strconcat(keep(ema_test_read_file(tmp, "c.yaml")),
                         "compare:\n  static: {policy: static}\n  2x: {server.gpu.hbm_scale: 2}\n",
                         NULL)));
  comparison = g_build_filename(tmp, "cmp.yaml", NULL);
  {
    g_autoptr(EmaTestRun) run = ema_test_cli("run", comparison, "-o", out_cmp, "--no-plot", NULL);
    ema_test_assert_failed(run, 1, want_variant);
  }
  ema_test_remove_tree(tmp);
}

/* check opens a vllm-bench trace too: with arrivals it passes, a bad entry
 * fails at its line:col with the key and index (a length read from its text,
 * as Mooncake's counts are: 0x10 and 1e3 are no integers), a ShareGPT file
 * with the way out. */
static void test_check_vllm_bench(void) {
  g_autofree char *tmp = ema_test_temp_dir();
  g_autofree char *good = write_experiment(
      tmp, "good.yaml", "chk", "true",
      "file: bench.json, format: vllm-bench, arrivals: poisson, rate: 2, requests: 2");
  g_autofree char *bad =
      write_experiment(tmp, "bad.yaml", "chk", "true",
                       "file: bad.json, format: vllm-bench, arrivals: poisson, rate: 2");
  g_autofree char *share =
      write_experiment(tmp, "share.yaml", "chk", "true",
                       "file: share.json, format: vllm-bench, arrivals: poisson, rate: 2");
  g_autofree char *hex =
      write_experiment(tmp, "hex.yaml", "chk", "true",
                       "file: hex.json, format: vllm-bench, arrivals: poisson, rate: 2");
  g_autofree char *none =
      write_experiment(tmp, "none.yaml", "chk", "true", "file: bench.json, format: vllm-bench");
  touch(tmp, "bench.json", "{\"input_lens\": [10, 20], \"output_lens\": [5, 6]}");
  touch(tmp, "bad.json", "{\"input_lens\": [10, 0], \"output_lens\": [5, 6]}");
  touch(tmp, "share.json", "[{\"id\": \"x\", \"conversations\": []}]");
  touch(tmp, "hex.json", "{\"input_lens\": [10, 0x10],\n \"output_lens\": [5, 1e3]}");
  {
    g_autoptr(EmaTestRun) run = ema_test_cli("check", good, NULL);
    ema_test_assert_ok(run);
  }
  {
    g_autoptr(EmaTestRun) run = ema_test_cli("check", bad, NULL);
    g_autofree char *want = g_strdup_printf(
        "%s/bad.json:1:21: tenant b: input_lens item 1 must be > 0, found 0\n", tmp);
    ema_test_assert_failed(run, 1, want);
  }
  {
    g_autoptr(EmaTestRun) run = ema_test_cli("check", hex, NULL);
    g_autofree char *want = g_strdup_printf(
        "%s/hex.json:1:21: tenant b: input_lens item 1: not an integer: '0x10'\n", tmp);
    ema_test_assert_failed(run, 1, want);
  }
  {
    g_autoptr(EmaTestRun) run = ema_test_cli("check", share, NULL);
    g_assert_cmpint(run->status, ==, 1);
    ema_test_assert_contains(run->err, "share.json: tenant b: a ShareGPT dataset holds text, not "
                                       "token counts");
    ema_test_assert_contains(run->err, "../shared/traces/lengths/sharegpt-llama.csv");
  }
  {
    /* no arrivals: the benchmark's own load (here vLLM's defaults: all at once) */
    g_autoptr(EmaTestRun) run = ema_test_cli("check", none, NULL);
    ema_test_assert_ok(run);
  }
  ema_test_remove_tree(tmp);
}

/* list llms, describe llm, describe experiment, describe hwmodel --help. */
static void test_discover(void) {
  g_autoptr(EmaTestRun) llms = ema_test_cli("list", "llms", NULL);
  g_autoptr(EmaTestRun) llm = ema_test_cli("describe", "llm", "llama-3.1-8b", NULL);
  g_autoptr(EmaTestRun) keys = ema_test_cli("describe", "experiment", NULL);
  g_autoptr(EmaTestRun) help = ema_test_cli("describe", "hwmodel", "--help", NULL);
  g_autoptr(EmaTestRun) none = ema_test_cli("describe", "llm", "no-such-model", NULL);
  ema_test_assert_ok(llms);
  /* 2 x 32 layers x 8 KV heads x 128 x 2 bytes = 131072 B per token */
  /* the names' column as wide as the longest, llama-4-scout-17b-16e's 21 characters */
  ema_test_assert_contains(llms->out,
                           "\nllama-3.1-8b          8.03 B parameters (8.03 B active per "
                           "token), weights 15.0 GiB, KV 128 KiB per token (131072 B); "
                           "published 8.03 B: ");
  ema_test_assert_contains(llms->out, "\nllama-4-scout-17b-16e 108 B parameters (17.2 B active per "
                                      "token), weights 201 GiB, KV 192 KiB per token (196608 B); "
                                      "published 109 B: -1.13%\n");
  ema_test_assert_ok(llm);
  ema_test_assert_contains(llm->out, "layers: 32\n");
  ema_test_assert_contains(llm->out, "# derived: 8.03 B parameters");
  ema_test_assert_ok(keys);
  /* from the tables: a key of every level, with type, default and range */
  ema_test_assert_contains(keys->out, "\nsample_period            duration  default 1s, range ");
  ema_test_assert_contains(keys->out, "\n    hbm_scale                number    default 1, range ");
  ema_test_assert_contains(keys->out, "\n  ttft                     duration  optional");
  ema_test_assert_contains(keys->out, "phases");
  /* and the keys of sweeps and comparisons, each as a key line */
  {
    const char *const sweep_keys[] = {"\ncompare ", "\nvariants ", "\nsweep ",
                                      "\nrepeats ", "\nplot ",     "\n  x ",
                                      "\n  by ",    "\n  tenant ", "\n  xlabel "};
    for (guint i = 0; i < G_N_ELEMENTS(sweep_keys); i++)
      ema_test_assert_contains(keys->out, sweep_keys[i]);
  }
  ema_test_assert_ok(help);
  ema_test_assert_contains(help->out, "Usage:\n  ema-sim describe hwmodel [OPTION");
  g_assert_cmpint(none->status, ==, 1);
  ema_test_assert_contains(none->err, "unknown model 'no-such-model'");
}

/* A one-GPU server needs no link block; two GPUs do. */
static void test_one_gpu_without_link(void) {
  g_autofree char *tmp = ema_test_temp_dir();
  g_autofree char *out = g_build_filename(tmp, "out", NULL);
  g_autofree char *fixture = ema_test_fixture("experiments", "one-gpu-no-link.yaml");
  g_autofree char *resolved = NULL;
  {
    g_autoptr(EmaTestRun) run = ema_test_cli("run", fixture, "-o", out, "--no-plot", NULL);
    ema_test_assert_ok(run);
  }
  resolved = ema_test_read_file(out, "resolved.yaml");
  g_assert_null(strstr(resolved, "link:"));
  {
    g_autofree char *again = g_build_filename(out, "resolved.yaml", NULL);
    g_autoptr(EmaTestRun) run = ema_test_cli("check", again, NULL);
    ema_test_assert_ok(run);
  }
  {
    g_autoptr(EmaTestRun) run = ema_test_cli("check", fixture, "--set", "server.gpus=2", NULL);
    g_autofree char *want = g_strconcat(fixture,
                                        ":6:3: server.link: missing required key (a "
                                        "server of 2 GPUs needs its peer link; only a "
                                        "one-GPU server may leave it out)\n",
                                        NULL);
    ema_test_assert_failed(run, 1, want);
  }
  {
    /* a required map given as null is refused where the null was written */
    g_autoptr(EmaTestRun) run = ema_test_cli("check", fixture, "--set", "server.gpu=~", NULL);
    ema_test_assert_failed(run, 1, "--set:1:12: server.gpu: needs a value (a map)\n");
  }
  {
    /* a null link is refused at the null, not run with a zero link */
    g_autoptr(EmaTestRun) run =
        ema_test_cli("check", fixture, "--set", "server.gpus=2", "--set", "server.link=~", NULL);
    ema_test_assert_failed(run, 1,
                           "--set:2:13: server.link: needs a value (a map); leave the key out, "
                           "or give {}, for its defaults\n");
  }
  {
    /* hosts of 2 GPUs do not make up a server of 3 */
    g_autoptr(EmaTestRun) run =
        ema_test_cli("check", fixture, "--set", "server.gpus=3", "--set",
                     "server.link={bandwidth: 100GB/s, duplex_bandwidth: 200GB/s, "
                     "direct_read_bandwidth: 90GB/s, latency: 1us, copy_fixed_cost: 6us, "
                     "copy_ramp_time: 5us, copy_ramp_bytes: 2MiB}",
                     "--set", "server.gpus_per_node=2", NULL);
    ema_test_assert_failed(run, 1,
                           "--set:3:22: server.gpus_per_node: 2 does not divide the server's 3 "
                           "GPUs\n");
  }
  ema_test_remove_tree(tmp);
}

int main(int argc, char **argv) {
  int status;
  g_test_init(&argc, &argv, NULL);
  kept = g_ptr_array_new_with_free_func(g_free);
  g_test_add_func("/output/owned-folder", test_owned_folder);
  g_test_add_func("/output/foreign-folder", test_foreign_folder);
  g_test_add_func("/output/marker-leftover", test_marker_leftover);
  g_test_add_func("/output/partial-folder", test_partial_folder);
  g_test_add_func("/output/failed-run-leaves-no-summary", test_failed_run_leaves_no_summary);
  g_test_add_data_func("/output/default-folder-is-name-safe/run", "run",
                       test_default_folder_is_name_safe);
  g_test_add_data_func("/output/default-folder-is-name-safe/sweep", "sweep",
                       test_default_folder_is_name_safe);
  g_test_add_data_func("/output/default-folder-name-refused/run", "run",
                       test_default_folder_name_refused);
  g_test_add_data_func("/output/default-folder-name-refused/sweep", "sweep",
                       test_default_folder_name_refused);
  g_test_add_func("/output/provenance", test_provenance);
  g_test_add_func("/output/compare-keeps-user-files", test_compare_keeps_user_files);
  g_test_add_func("/output/compare-variant-named-like-a-file",
                  test_compare_variant_named_like_a_file);
  g_test_add_func("/output/compare-not-serving", test_compare_not_serving);
  g_test_add_func("/output/compare-check-warnings", test_compare_check_warnings);
  g_test_add_func("/output/compare-plot-variants", test_compare_plot_variants);
  g_test_add_func("/output/compare-variant-error", test_compare_variant_error);
  g_test_add_func("/output/compare-plot-no-ttfts", test_compare_plot_no_ttfts);
  g_test_add_func("/output/compare-plot-nothing-to-draw", test_compare_plot_nothing_to_draw);
  g_test_add_func("/output/plot-large-timeline", test_plot_large_timeline);
  g_test_add_func("/output/sweep-plot-no-ttfts", test_sweep_plot_no_ttfts);
  g_test_add_func("/output/compare", test_compare);
  g_test_add_func("/output/compare-repeats", test_compare_repeats);
  g_test_add_func("/output/sweep-other-build", test_sweep_other_build);
  g_test_add_func("/output/folder-kinds", test_folder_kinds);
  g_test_add_func("/output/check-reads-traces", test_check_reads_traces);
  g_test_add_func("/output/run-trace-error-place-first", test_run_trace_error_place_first);
  g_test_add_func("/output/check-vllm-bench", test_check_vllm_bench);
  g_test_add_func("/output/discover", test_discover);
  g_test_add_func("/output/one-gpu-without-link", test_one_gpu_without_link);
  status = g_test_run();
  g_ptr_array_unref(kept);
  return status;
}
