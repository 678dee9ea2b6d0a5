/* testutil.c: the helpers of testutil.h. */
#include "testutil.h"

#include <errno.h>
#include <stdarg.h>
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>

#include <glib/gstdio.h>

/* ---- running programs ------------------------------------------------------ */

void ema_test_run_free(EmaTestRun *run) {
  if (run == NULL)
    return;
  g_free(run->out);
  g_free(run->err);
  g_free(run);
}

char **ema_test_environ(const char *const *edits) {
  char **envp = g_get_environ();
  for (guint i = 0; edits && edits[i]; i++) {
    const char *equals = strchr(edits[i], '=');
    if (equals) {
      g_autofree char *name = g_strndup(edits[i], (gsize) (equals - edits[i]));
      envp = g_environ_setenv(envp, name, equals + 1, TRUE);
    } else {
      envp = g_environ_unsetenv(envp, edits[i]);
    }
  }
  return envp;
}

gboolean ema_test_shared_absent(void) {
  const char *dir = g_getenv("EMA_SHARED_DIR");
  g_autofree char *groundtruth = g_build_filename(dir ? dir : "", "groundtruth", NULL);
  return dir == NULL || !g_file_test(groundtruth, G_FILE_TEST_IS_DIR);
}

/* *ERR without the lines a profile prints for an import whose data set is
 * absent ("ema: warning: profile ...: its operators fall back to the
 * roofline"). */
static void drop_absent_data_warnings(char **err) {
  g_auto(GStrv) lines = g_strsplit(*err, "\n", -1);
  GString *kept = g_string_new(NULL);
  for (guint i = 0; lines[i] != NULL; i++) {
    gboolean last = lines[i + 1] == NULL;
    if (g_str_has_prefix(lines[i], "ema: warning: profile ") &&
        g_str_has_suffix(lines[i], "fall back to the roofline"))
      continue;
    g_string_append(kept, lines[i]);
    if (!last)
      g_string_append_c(kept, '\n');
  }
  g_free(*err);
  *err = g_string_free(kept, FALSE);
}

EmaTestRun *ema_test_run(const char *const *argv, const char *cwd, const char *const *edits) {
  g_auto(GStrv) envp = ema_test_environ(edits);
  EmaTestRun *run = g_new0(EmaTestRun, 1);
  GError *error = NULL;
  int wait_status = 0;
  if (!g_spawn_sync(cwd, (char **) argv, envp, G_SPAWN_SEARCH_PATH, NULL, NULL, &run->out,
                    &run->err, &wait_status, &error))
    g_error("cannot run %s: %s", argv[0], error->message);
  g_assert_true(WIFEXITED(wait_status));
  run->status = WEXITSTATUS(wait_status);
  if (ema_test_shared_absent())
    drop_absent_data_warnings(&run->err);
  if (g_test_verbose())
    g_test_message("exit %d\nstdout: %s\nstderr: %s", run->status, run->out, run->err);
  return run;
}

const char *ema_test_sim_path(void) {
  const char *path = g_getenv("EMA_SIM");
  if (path == NULL || !g_file_test(path, G_FILE_TEST_IS_EXECUTABLE))
    g_error("EMA_SIM must name the ema-sim executable (got %s)", path ? path : "nothing");
  return path;
}

/* "EMA_HWMODEL_PATH" (unset), then EDITS: NULL-terminated, in a new array
 * that borrows the strings. */
static GPtrArray *cli_edits(const char *const *edits) {
  GPtrArray *all = g_ptr_array_new();
  g_ptr_array_add(all, (gpointer) "EMA_HWMODEL_PATH");
  for (guint i = 0; edits && edits[i]; i++)
    g_ptr_array_add(all, (gpointer) edits[i]);
  g_ptr_array_add(all, NULL);
  return all;
}

char **ema_test_cli_environ(const char *const *edits) {
  g_autoptr(GPtrArray) all = cli_edits(edits);
  return ema_test_environ((const char *const *) all->pdata);
}

EmaTestRun *ema_test_cli_argv(const char *const *argv, const char *const *edits) {
  g_autoptr(GPtrArray) all = cli_edits(edits);
  return ema_test_run(argv, g_getenv("EMA_SOURCE_ROOT"), (const char *const *) all->pdata);
}

EmaTestRun *ema_test_cli_env(const char *const *edits, const char *first, ...) {
  g_autoptr(GPtrArray) argv = g_ptr_array_new();
  va_list args;
  g_ptr_array_add(argv, (gpointer) ema_test_sim_path());
  va_start(args, first);
  for (const char *arg = first; arg != NULL; arg = va_arg(args, const char *))
    g_ptr_array_add(argv, (gpointer) arg);
  va_end(args);
  g_ptr_array_add(argv, NULL);
  return ema_test_cli_argv((const char *const *) argv->pdata, edits);
}

/* ---- checks -------------------------------------------------------------------- */

char *ema_test_escaped(const char *text) {
  g_auto(GStrv) lines = g_strsplit(text, "\n", -1);
  return g_strjoinv("\\n", lines);
}

char *ema_test_no_results(const char *out) {
  return g_strdup_printf("; no results written (%s/ keeps only the failed run's resolved.yaml)\n",
                         out);
}

void ema_test_assert_contains(const char *text, const char *part) {
  if (strstr(text, part) == NULL) {
    g_autofree char *e = ema_test_escaped(text);
    g_error("'%s' does not contain '%s'", e, part);
  }
}

void ema_test_assert_one_line(const char *text) {
  gsize len = strlen(text);
  if (len == 0 || text[len - 1] != '\n' || strchr(text, '\n') != text + len - 1) {
    g_autofree char *e = ema_test_escaped(text);
    g_error("expected exactly one line, got '%s'", e);
  }
}

void ema_test_assert_ok(const EmaTestRun *run) {
  if (run->status != 0 || run->err[0] != '\0') {
    g_autofree char *e = ema_test_escaped(run->err);
    g_error("exit %d, expected 0 and nothing on stderr (stderr: '%s')", run->status, e);
  }
}

void ema_test_assert_ok_warned(const EmaTestRun *run, const char *prefix) {
  g_auto(GStrv) lines = g_strsplit(run->err, "\n", -1);
  for (guint i = 0; lines[i]; i++)
    if (run->status != 0 || (*lines[i] && !g_str_has_prefix(lines[i], prefix))) {
      g_autofree char *e = ema_test_escaped(run->err);
      g_error("exit %d, expected 0 and only '%s' lines on stderr (stderr: '%s')", run->status,
              prefix, e);
    }
}

void ema_test_assert_failed(const EmaTestRun *run, int status, const char *prefix) {
  g_autofree char *e = ema_test_escaped(run->err);
  if (run->status != status)
    g_error("exit %d, expected %d (stderr: '%s')", run->status, status, e);
  if (status == 1)
    ema_test_assert_one_line(run->err);
  if (!g_str_has_prefix(run->err, prefix))
    g_error("stderr '%s' does not start with '%s'", e, prefix);
}

void ema_test_assert_error_line(const EmaTestRun *run, const char *prefix) {
  ema_test_assert_failed(run, 1, prefix);
  g_assert_cmpstr(run->out, ==, "");
}

/* ---- files ------------------------------------------------------------------------ */

gboolean ema_test_skip_without_shared(void) {
  if (!ema_test_shared_absent())
    return FALSE;
  g_test_skip("the public data (EMA_SHARED_DIR/groundtruth) is absent");
  return TRUE;
}

char *ema_test_fixture(const char *area, const char *rel) {
  const char *dir = g_getenv("EMA_TEST_FIXTURES");
  if (dir == NULL)
    g_error("EMA_TEST_FIXTURES must name tests/fixtures");
  return g_build_filename(dir, area, rel, NULL);
}

gboolean ema_test_gnuplot_or_skip(void) {
  g_autofree char *gnuplot = g_find_program_in_path("gnuplot");
  if (gnuplot == NULL)
    g_test_skip("gnuplot is not on PATH");
  return gnuplot != NULL;
}

char *ema_test_temp_dir(void) {
  const char *program = g_get_prgname();
  g_autofree char *base = g_path_get_basename(program ? program : "test");
  g_autofree char *template = g_strdup_printf("ema-%s-XXXXXX", base);
  GError *error = NULL;
  char *dir = g_dir_make_tmp(template, &error);
  g_assert_no_error(error);
  return dir;
}

void ema_test_remove_tree(const char *dir) {
  g_autoptr(GDir) d = g_dir_open(dir, 0, NULL);
  const char *name;
  while (d && (name = g_dir_read_name(d)) != NULL) {
    g_autofree char *path = g_build_filename(dir, name, NULL);
    if (g_file_test(path, G_FILE_TEST_IS_DIR) && !g_file_test(path, G_FILE_TEST_IS_SYMLINK))
      ema_test_remove_tree(path);
    else
      g_remove(path);
  }
  g_rmdir(dir);
}

void ema_test_link_into(const char *dir, const char *name, const char *target) {
  g_autofree char *path = g_build_filename(dir, name, NULL);
  g_autofree char *absolute = g_canonicalize_filename(target, NULL);
  if (symlink(absolute, path) != 0)
    g_error("cannot link %s to %s: %s", path, absolute, g_strerror(errno));
}

char *ema_test_read_file(const char *dir, const char *name) {
  g_autofree char *path = g_build_filename(dir, name, NULL);
  char *text = NULL;
  GError *error = NULL;
  g_file_get_contents(path, &text, NULL, &error);
  g_assert_no_error(error);
  return text;
}

static gint compare_names(gconstpointer a, gconstpointer b) {
  return strcmp(*(const char *const *) a, *(const char *const *) b);
}

GPtrArray *ema_test_list_dir(const char *dir, const char *suffix) {
  GPtrArray *names = g_ptr_array_new_with_free_func(g_free);
  GError *error = NULL;
  g_autoptr(GDir) d = g_dir_open(dir, 0, &error);
  const char *name;
  g_assert_no_error(error);
  while ((name = g_dir_read_name(d)) != NULL)
    if (g_str_has_suffix(name, suffix))
      g_ptr_array_add(names, g_strdup(name));
  g_ptr_array_sort(names, compare_names);
  return names;
}

char *ema_test_dir_entries(const char *dir) {
  g_autoptr(GPtrArray) names = ema_test_list_dir(dir, "");
  g_ptr_array_add(names, NULL);
  return g_strjoinv(" ", (char **) names->pdata);
}

char *ema_test_summary_without_wall(const char *text) {
  g_auto(GStrv) lines = g_strsplit(text, "\n", -1);
  GString *out = g_string_new(NULL);
  guint found = 0;
  for (guint i = 0; lines[i]; i++) {
    if (strcmp(lines[i], "  \"provenance\" : {") == 0) {
      /* which build made it: differs between builds, not between runs */
      while (lines[i + 1] && strcmp(lines[i], "  },") != 0)
        i++;
      continue;
    }
    if (strstr(lines[i], "\"wall_s\" :")) {
      found++;
      if (out->len >= 2 && out->str[out->len - 2] == ',')
        g_string_erase(out, (gssize) out->len - 2, 1);
      continue;
    }
    g_string_append(out, lines[i]);
    if (lines[i + 1])
      g_string_append_c(out, '\n');
  }
  g_assert_cmpuint(found, ==, 1);
  return g_string_free(out, FALSE);
}

JsonNode *ema_test_parse_json(const char *text) {
  g_autoptr(JsonParser) parser = json_parser_new();
  GError *error = NULL;
  json_parser_load_from_data(parser, text, -1, &error);
  g_assert_no_error(error);
  return json_node_copy(json_parser_get_root(parser));
}
