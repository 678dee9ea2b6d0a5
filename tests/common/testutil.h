/* testutil.h: helpers shared by the test suites (tests/common/, built into
 * the static library ema_test_lib; suites link it through ema_test_dep,
 * which brings GLib and JSON-GLib but not libema):
 *
 * - running a program and capturing its exit status, stdout and stderr
 *   (ema_test_run), and ema-sim itself as the CLI suites run it
 *   (ema_test_cli: the program named by EMA_SIM, in EMA_SOURCE_ROOT,
 *   without EMA_HWMODEL_PATH);
 * - checks of such runs and of their text, whose failures stay one TAP
 *   line (ema_test_escaped);
 * - fixtures, temporary directories, sorted directory listings, whole
 * files and JSON text.
 *
 * Every helper fails the test (g_error or g_assert) when what it needs is
 * missing, so callers check nothing. */
#pragma once

#include <glib.h>
#include <json-glib/json-glib.h>

G_BEGIN_DECLS

/* ---- running programs ------------------------------------------------------ */

/* A finished run of a program. */
typedef struct {
  int status; /* exit code */
  char *out;  /* all it wrote on stdout */
  char *err;  /* all it wrote on stderr */
} EmaTestRun;

void ema_test_run_free(EmaTestRun *run);
G_DEFINE_AUTOPTR_CLEANUP_FUNC(EmaTestRun, ema_test_run_free)

/* The test's environment with EDITS applied in order: each a string
 * "NAME=VALUE" sets NAME, a bare "NAME" unsets it. EDITS is
 * NULL-terminated; NULL edits nothing. Free with g_strfreev. */
char **ema_test_environ(const char *const *edits);

/* Run ARGV (NULL-terminated, the program first; looked up on PATH when it
 * holds no slash) in CWD (NULL: the test's working directory) with the
 * environment of ema_test_environ (EDITS), and wait for it to exit. The
 * test fails if it cannot start or does not exit normally. With --verbose,
 * the exit code and both outputs go to the test log. */
EmaTestRun *ema_test_run(const char *const *argv, const char *cwd, const char *const *edits);
/* Where the public data is absent (ema_test_skip_without_shared), ERR
 * leaves out the warnings the profiles print for their absent imports, which
 * a checkout without ../shared gives on every run and no test is about. */

/* The path of the ema-sim program, from EMA_SIM (the test fails unless it
 * names an executable). */
const char *ema_test_sim_path(void);

/* The environment of the CLI runs: the test's without EMA_HWMODEL_PATH (so
 * that ema-sim finds the source tree's hardware models, not the user's),
 * then EDITS as in ema_test_environ. For a run started by other means
 * (g_spawn_async) that must match ema_test_cli's. */
char **ema_test_cli_environ(const char *const *edits);

/* Run ARGV as a CLI run: in EMA_SOURCE_ROOT, in the environment of
 * ema_test_cli_environ (EDITS). For ema-sim under another program
 * (mpirun ... ema-sim ...). */
EmaTestRun *ema_test_cli_argv(const char *const *argv, const char *const *edits);

/* Run ema-sim with the arguments FIRST, ... (NULL-terminated) as a CLI
 * run, the environment further edited by EDITS (as in ema_test_environ).
 * ema_test_cli(...) is ema_test_cli_env(NULL, ...): no more edits than the
 * CLI runs' own. ema-sim with no arguments at all: ema_test_cli(NULL, NULL). */
EmaTestRun *ema_test_cli_env(const char *const *edits, const char *first,
                             ...) G_GNUC_NULL_TERMINATED;
#define ema_test_cli(...) ema_test_cli_env(NULL, __VA_ARGS__)

/* ---- checks -------------------------------------------------------------------- */

/* TEXT with its newlines escaped as \n, so that a failure message that
 * quotes it stays one TAP line. Free with g_free. */
char *ema_test_escaped(const char *text);

/* TEXT contains PART. */
void ema_test_assert_contains(const char *text, const char *part);

/* TEXT is exactly one line, ending in a newline. */
void ema_test_assert_one_line(const char *text);

/* A successful run: exit 0 and nothing on stderr. */
void ema_test_assert_ok(const EmaTestRun *run);
/* A successful run whose stderr holds only lines starting with PREFIX (the
 * warnings a run under deliberate overload gives). */
void ema_test_assert_ok_warned(const EmaTestRun *run, const char *prefix);

/* A failed run: exit STATUS, stderr starting with PREFIX and, for exit 1
 * (an error in the input, not in the usage), exactly one line. */
void ema_test_assert_failed(const EmaTestRun *run, int status, const char *prefix);

/* A run that met an error: ema_test_assert_failed with exit 1, and nothing
 * on stdout. */
void ema_test_assert_error_line(const EmaTestRun *run, const char *prefix);

/* How the error line of a run into OUT that failed once it had claimed OUT ends
 * (ema_output_run_failed): "; no results written (OUT/ keeps only the failed run's
 * resolved.yaml)\n". */
char *ema_test_no_results(const char *out);

/* ---- files ------------------------------------------------------------------------ */

/* Whether the public data the GPU profiles import (EMA_SHARED_DIR/groundtruth)
 * is absent. */
gboolean ema_test_shared_absent(void);
/* Whether the public data the GPU profiles import (EMA_SHARED_DIR, the
 * source tree's ../shared) is absent; if so the test is marked skipped
 * (g_test_skip) and the caller returns: without it the profiles' kernels
 * fall back to the roofline, so exact figures and a quiet stderr cannot be
 * asserted. */
gboolean ema_test_skip_without_shared(void);

/* Whether gnuplot is on PATH; where it is not, the test is marked skipped (g_test_skip) and the
 * caller returns. */
gboolean ema_test_gnuplot_or_skip(void);

/* The path of fixture REL of AREA: $EMA_TEST_FIXTURES/AREA/REL. */
char *ema_test_fixture(const char *area, const char *rel);

/* A new temporary directory, ema-PROGRAM-XXXXXX (PROGRAM: the test
 * program's name). Free with g_free, after ema_test_remove_tree. */
char *ema_test_temp_dir(void);

/* Remove DIR and everything in it. Symbolic links are removed, never
 * followed. */
void ema_test_remove_tree(const char *dir);

/* Make DIR/NAME a symbolic link to TARGET (made absolute). */
void ema_test_link_into(const char *dir, const char *name, const char *target);

/* The whole text of DIR/NAME. Free with g_free. */
char *ema_test_read_file(const char *dir, const char *name);

/* The names of DIR's entries that end in SUFFIX, sorted (strcmp). The
 * test fails if DIR cannot be read. Free with g_ptr_array_unref. */
GPtrArray *ema_test_list_dir(const char *dir, const char *suffix);
/* DIR's entries (hidden ones too), sorted (strcmp), space-separated. Free with g_free. */
char *ema_test_dir_entries(const char *dir);

/* TEXT, a summary.json, without its provenance block (which build made
 * it: it differs between builds) and its sim.wall_s line (the wall-clock time,
 * the one figure that differs between identical runs; the test fails
 * unless exactly one line holds it) and with the comma before that line
 * dropped, so that the text stays JSON. Free with g_free. */
char *ema_test_summary_without_wall(const char *text);

/* The JSON document TEXT. Free with json_node_unref. */
JsonNode *ema_test_parse_json(const char *text);

G_END_DECLS
