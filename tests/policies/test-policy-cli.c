/* test-policy-cli.c: the policy commands of ema-sim, run as a real program
 * (its path in EMA_SIM): `list policies` with the built-ins, with the
 * example module from --plugin-dir (after the command or before it) and
 * from EMA_PLUGIN_PATH; `describe-policy` of a plugin policy, a built-in
 * and a composition; and the errors: an unknown name (exit 1, one line, the
 * known names), a missing plugin folder, a folder with a broken module, and
 * usage errors (exit 2). */
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>

#include <glib/gstdio.h>
#include <gmodule.h>

#define BASELINE "experiments/calibration/h200x2-baseline.yaml"

typedef struct {
  int status; /* exit code */
  char *out;
  char *err;
} CliRun;

static void cli_run_free(CliRun *run) {
  g_free(run->out);
  g_free(run->err);
  g_free(run);
}

G_DEFINE_AUTOPTR_CLEANUP_FUNC(CliRun, cli_run_free)

static const char *ema_sim_path(void) {
  const char *path = g_getenv("EMA_SIM");
  if (path == NULL || !g_file_test(path, G_FILE_TEST_IS_EXECUTABLE))
    g_error("EMA_SIM must name the ema-sim executable (got %s)", path ? path : "nothing");
  return path;
}

/* Run ema-sim with ARGS (NULL-terminated) in the source root, with
 * EMA_PLUGIN_PATH set to PLUGIN_PATH (unset when NULL). */
static CliRun *cli_with_path(const char *plugin_path, const char *first, va_list args) {
  g_autoptr(GPtrArray) argv = g_ptr_array_new();
  g_auto(GStrv) envp = g_get_environ();
  CliRun *run = g_new0(CliRun, 1);
  GError *error = NULL;
  int wait_status = 0;

  g_ptr_array_add(argv, (gpointer) ema_sim_path());
  for (const char *arg = first; arg != NULL; arg = va_arg(args, const char *))
    g_ptr_array_add(argv, (gpointer) arg);
  g_ptr_array_add(argv, NULL);
  envp = g_environ_unsetenv(envp, "EMA_HWMODEL_PATH");
  envp = plugin_path ? g_environ_setenv(envp, "EMA_PLUGIN_PATH", plugin_path, TRUE)
                     : g_environ_unsetenv(envp, "EMA_PLUGIN_PATH");
  if (!g_spawn_sync(g_getenv("EMA_SOURCE_ROOT"), (char **) argv->pdata, envp, G_SPAWN_DEFAULT, NULL,
                    NULL, &run->out, &run->err, &wait_status, &error))
    g_error("cannot run %s: %s", ema_sim_path(), error->message);
  g_assert_true(WIFEXITED(wait_status));
  run->status = WEXITSTATUS(wait_status);
  if (g_test_verbose())
    g_test_message("exit %d\nstdout: %s\nstderr: %s", run->status, run->out, run->err);
  return run;
}

static CliRun *cli(const char *first, ...) {
  va_list args;
  CliRun *run;
  va_start(args, first);
  run = cli_with_path(NULL, first, args);
  va_end(args);
  return run;
}

static CliRun *cli_env(const char *plugin_path, const char *first, ...) {
  va_list args;
  CliRun *run;
  va_start(args, first);
  run = cli_with_path(plugin_path, first, args);
  va_end(args);
  return run;
}

/* TEXT with its newlines escaped, so that a failure stays one TAP line. */
static char *escaped(const char *text) {
  g_auto(GStrv) lines = g_strsplit(text, "\n", -1);
  return g_strjoinv("\\n", lines);
}

static void assert_contains(const char *text, const char *part) {
  if (strstr(text, part) == NULL) {
    g_autofree char *e = escaped(text);
    g_error("'%s' does not contain '%s'", e, part);
  }
}

static void assert_lacks(const char *text, const char *part) {
  if (strstr(text, part) != NULL) {
    g_autofree char *e = escaped(text);
    g_error("'%s' contains '%s'", e, part);
  }
}

static void assert_ok(const CliRun *run) {
  if (run->status != 0) {
    g_autofree char *e = escaped(run->err);
    g_error("exit %d, expected 0 (stderr: %s)", run->status, e);
  }
  g_assert_cmpstr(run->err, ==, "");
}

/* A failed run: exit STATUS, and for exit 1 a stderr of exactly one line
 * that starts with PREFIX. */
static void assert_failed(const CliRun *run, int status, const char *prefix) {
  gsize len = strlen(run->err);
  if (run->status != status) {
    g_autofree char *e = escaped(run->err);
    g_error("exit %d, expected %d (stderr: %s)", run->status, status, e);
  }
  if (status == 1 &&
      (len == 0 || run->err[len - 1] != '\n' || strchr(run->err, '\n') != run->err + len - 1)) {
    g_autofree char *e = escaped(run->err);
    g_error("expected exactly one line on stderr, got '%s'", e);
  }
  if (!g_str_has_prefix(run->err, prefix)) {
    g_autofree char *e = escaped(run->err);
    g_error("stderr '%s' does not start with '%s'", e, prefix);
  }
}

/* A temporary folder with a link named ema-policy-neighbour.so to the
 * example module; *LINK is that link's path. */
static char *plugin_dir(char **link) {
  GError *error = NULL;
  char *dir = g_dir_make_tmp("ema-policy-cli-XXXXXX", &error);
  const char *target = g_getenv("EMA_TEST_POLICY_NEIGHBOUR");
  g_autofree char *absolute = NULL;
  g_assert_no_error(error);
  if (target == NULL || !g_file_test(target, G_FILE_TEST_IS_REGULAR))
    g_error("EMA_TEST_POLICY_NEIGHBOUR must name the example module");
  absolute = g_canonicalize_filename(target, NULL);
  *link = g_build_filename(dir, "ema-policy-neighbour." G_MODULE_SUFFIX, NULL);
  g_assert_cmpint(symlink(absolute, *link), ==, 0);
  return dir;
}

static void remove_plugin_dir(const char *dir, const char *link) {
  g_remove(link);
  g_rmdir(dir);
}

/* The groups in order, and one built-in of each (the names in a group are
 * sorted, so which one comes first depends on the table). */
static void assert_builtins_listed(const char *out) {
  const char *borrow = strstr(out, "borrow policies:\n");
  const char *prefetch = strstr(out, "\nprefetch policies:\n");
  const char *reclaim = strstr(out, "\nreclaim policies:\n");
  const char *compositions = strstr(out, "\ncompositions (policy: NAME):\n");
  g_assert_true(borrow == out);
  g_assert_true(prefetch && reclaim && compositions);
  g_assert_true(borrow < prefetch && prefetch < reclaim && reclaim < compositions);
  assert_contains(out, "\n  none ");
  assert_contains(out, "\n  direct ");
  assert_contains(out, "reclaim policies:\n");
  assert_contains(out, "\n  drop ");
  assert_contains(out, "compositions (policy: NAME):\n");
  assert_contains(out, "\n  static ");
}

static void test_list_builtins(void) {
  g_autoptr(CliRun) run = cli("list", "policies", NULL);
  assert_ok(run);
  assert_builtins_listed(run->out);
  assert_lacks(run->out, "(from ");
  assert_lacks(run->out, "neighbour");
}

static void test_list_plugin_dir(void) {
  g_autofree char *link = NULL;
  g_autofree char *dir = plugin_dir(&link);
  g_autofree char *from = g_strdup_printf("(from %s)\n", link);
  /* after the command, before it, and as --plugin-dir=DIR */
  g_autofree char *equals = g_strconcat("--plugin-dir=", dir, NULL);
  g_autoptr(CliRun) after = cli("list", "policies", "--plugin-dir", dir, NULL);
  g_autoptr(CliRun) before = cli("--plugin-dir", dir, "list", "policies", NULL);
  g_autoptr(CliRun) with_equals = cli(equals, "list", "policies", NULL);

  assert_ok(after);
  assert_builtins_listed(after->out);
  assert_contains(after->out, "\n  neighbour ");
  assert_contains(after->out, from);
  assert_ok(before);
  g_assert_cmpstr(before->out, ==, after->out);
  assert_ok(with_equals);
  g_assert_cmpstr(with_equals->out, ==, after->out);
  remove_plugin_dir(dir, link);
}

static void test_list_plugin_path(void) {
  g_autofree char *link = NULL;
  g_autofree char *dir = plugin_dir(&link);
  g_autofree char *from = g_strdup_printf("(from %s)\n", link);
  g_autofree char *path = g_strconcat("/nonexistent/ema-plugins:", dir, NULL);
  g_autoptr(CliRun) run = cli_env(path, "list", "policies", NULL);
  assert_ok(run);
  assert_contains(run->out, from);
  remove_plugin_dir(dir, link);
}

static void test_describe_plugin(void) {
  g_autofree char *link = NULL;
  g_autofree char *dir = plugin_dir(&link);
  g_autofree char *head = g_strdup_printf("neighbour: borrow policy (from %s)\n", link);
  g_autoptr(CliRun) run = cli("describe-policy", "neighbour", "--plugin-dir", dir, NULL);
  assert_ok(run);
  g_assert_true(g_str_has_prefix(run->out, head));
  assert_contains(run->out, "  parameters:\n    reserve ");
  assert_contains(run->out, "default 0");
  assert_contains(run->out, "\n    min_borrow ");
  assert_contains(run->out, "\n    hold ");
  remove_plugin_dir(dir, link);
}

static void test_describe_builtin(void) {
  g_autoptr(CliRun) none = cli("describe-policy", "none", NULL);
  g_autoptr(CliRun) composition = cli("describe-policy", "static", NULL);
  g_autoptr(CliRun) alias = cli("describe", "policy", "none", NULL);
  assert_ok(alias);
  assert_ok(none);
  g_assert_cmpstr(alias->out, ==, none->out);
  g_assert_true(g_str_has_prefix(none->out, "none: borrow policy (built-in)\n  never borrow"));
  assert_ok(composition);
  g_assert_true(g_str_has_prefix(composition->out, "static: composition (built-in)\n"));
  assert_contains(composition->out, "\n  policy: {borrow: none");
}

static void test_describe_unknown(void) {
  g_autoptr(CliRun) run = cli("describe-policy", "nope", NULL);
  assert_failed(run, 1, "unknown policy 'nope' (borrow: ");
  assert_contains(run->err, "none");
  assert_contains(run->err, "; prefetch: ");
  assert_contains(run->err, "direct");
  assert_contains(run->err, "; reclaim: ");
  assert_contains(run->err, "drop");
  assert_contains(run->err, "; compositions: ");
  assert_contains(run->err, "static");
  g_assert_true(g_str_has_suffix(run->err, ")\n"));
  g_assert_cmpstr(run->out, ==, "");
}

static void test_missing_plugin_dir(void) {
  g_autoptr(CliRun) list = cli("list", "policies", "--plugin-dir", "/nonexistent/ema", NULL);
  g_autoptr(CliRun) check = cli("check", BASELINE, "--plugin-dir", "/nonexistent/ema", NULL);
  g_autoptr(CliRun) run = cli("--plugin-dir", "/nonexistent/ema", "run", BASELINE, NULL);
  assert_failed(list, 1, "plugin directory /nonexistent/ema: no such directory\n");
  assert_failed(check, 1, "plugin directory /nonexistent/ema: no such directory\n");
  assert_failed(run, 1, "plugin directory /nonexistent/ema: no such directory\n");
  /* a missing folder on EMA_PLUGIN_PATH is skipped */
  {
    g_autoptr(CliRun) skipped = cli_env("/nonexistent/ema", "list", "policies", NULL);
    assert_ok(skipped);
  }
}

static void test_check_with_plugins(void) {
  g_autofree char *link = NULL;
  g_autofree char *dir = plugin_dir(&link);
  g_autoptr(CliRun) run = cli("check", BASELINE, "--plugin-dir", dir, NULL);
  assert_ok(run);
  assert_contains(run->out, ": ok (");
  remove_plugin_dir(dir, link);
}

/* A folder holding a broken module: the command stops with its error. */
static void test_broken_plugin(void) {
  GError *error = NULL;
  g_autofree char *dir = g_dir_make_tmp("ema-policy-cli-XXXXXX", &error);
  g_autofree char *target =
      g_build_filename(g_getenv("EMA_TEST_POLICY_MODULES"), "no-decide." G_MODULE_SUFFIX, NULL);
  g_autofree char *link = g_build_filename(dir, "no-decide." G_MODULE_SUFFIX, NULL);
  g_autofree char *expected =
      g_strdup_printf("%s: borrow policy 'no-decide': no decide hook\n", link);
  g_autofree char *absolute = g_canonicalize_filename(target, NULL);
  g_assert_no_error(error);
  g_assert_cmpint(symlink(absolute, link), ==, 0);
  {
    g_autoptr(CliRun) list = cli("list", "policies", "--plugin-dir", dir, NULL);
    g_autoptr(CliRun) describe = cli_env(dir, "describe-policy", "none", NULL);
    assert_failed(list, 1, link);
    g_assert_cmpstr(list->err, ==, expected);
    assert_failed(describe, 1, link);
    g_assert_cmpstr(describe->err, ==, expected);
  }
  remove_plugin_dir(dir, link);
}

static void test_usage_errors(void) {
  g_autoptr(CliRun) no_name = cli("describe-policy", NULL);
  g_autoptr(CliRun) two_names = cli("describe-policy", "a", "b", NULL);
  g_autoptr(CliRun) list_what = cli("list", "everything", NULL);
  g_autoptr(CliRun) no_dir = cli("list", "policies", "--plugin-dir", NULL);
  g_autoptr(CliRun) global_no_dir = cli("--plugin-dir", NULL);
  g_autoptr(CliRun) not_here = cli("--plugin-dir", "/tmp", "describe", "hwmodel", "h200x2", NULL);
  g_autoptr(CliRun) not_at_all = cli("--plugin-dir", "/tmp", "frobnicate", NULL);
  g_autoptr(CliRun) help = cli("--help", NULL);
  assert_failed(no_name, 2, "ema-sim: usage: ema-sim describe-policy NAME");
  assert_failed(two_names, 2, "ema-sim: usage: ema-sim describe-policy NAME");
  assert_failed(list_what, 2, "ema-sim: usage: ema-sim list hwmodels|policies");
  assert_failed(no_dir, 2, "ema-sim: ");
  assert_failed(global_no_dir, 2, "ema-sim: --plugin-dir: missing DIR");
  assert_failed(not_here, 2, "ema-sim: --plugin-dir is not an option of 'describe hwmodel'");
  assert_failed(not_at_all, 2, "ema-sim: --plugin-dir is not an option of 'frobnicate'");
  assert_ok(help);
  assert_contains(help->out, "list policies");
  assert_contains(help->out, "describe-policy NAME");
  assert_contains(help->out, "--plugin-dir DIR");
}

int main(int argc, char **argv) {
  g_test_init(&argc, &argv, NULL);
  g_test_add_func("/policy-cli/list/builtins", test_list_builtins);
  g_test_add_func("/policy-cli/list/plugin-dir", test_list_plugin_dir);
  g_test_add_func("/policy-cli/list/plugin-path", test_list_plugin_path);
  g_test_add_func("/policy-cli/describe/plugin", test_describe_plugin);
  g_test_add_func("/policy-cli/describe/builtin", test_describe_builtin);
  g_test_add_func("/policy-cli/describe/unknown", test_describe_unknown);
  g_test_add_func("/policy-cli/errors/missing-plugin-dir", test_missing_plugin_dir);
  g_test_add_func("/policy-cli/errors/broken-plugin", test_broken_plugin);
  g_test_add_func("/policy-cli/errors/usage", test_usage_errors);
  g_test_add_func("/policy-cli/check-with-plugins", test_check_with_plugins);
  return g_test_run();
}
