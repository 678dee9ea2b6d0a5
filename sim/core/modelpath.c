/* modelpath.c: the search for model files by name (modelpath.h), shared by
 * the hardware models (hwmodel.c) and the LLM shapes (llm.c).
 *
 * Invariants: the search order is the environment variable's directories in
 * order, then the built-in one (installed, else the source tree's); names are listed sorted
 * (strcmp) and each once, whatever directory order or duplicates the path has. */
#include "ema/core/modelpath.h"

#include <string.h>

#include "ema/core/file.h"
#include "ema/core/node.h"

/* <prefix> when this program is <prefix>/EMA_INSTALL_BINDIR/NAME and
 * <prefix>/EMA_INSTALL_DATADIR exists; NULL otherwise (a build tree). */
static char *installed_prefix(void) {
  g_autofree char *exe = g_file_read_link("/proc/self/exe", NULL);
  g_autofree char *bindir = NULL;
  g_autofree char *data = NULL;
  char *prefix;
  if (exe == NULL)
    return NULL;
  bindir = g_path_get_dirname(exe);
  if (!g_str_has_suffix(bindir, G_DIR_SEPARATOR_S EMA_INSTALL_BINDIR))
    return NULL;
  prefix = g_strndup(bindir, strlen(bindir) - strlen(EMA_INSTALL_BINDIR) - 1);
  data = g_build_filename(prefix, EMA_INSTALL_DATADIR, NULL);
  if (!g_file_test(data, G_FILE_TEST_IS_DIR)) {
    g_free(prefix);
    return NULL;
  }
  return prefix;
}

char *ema_data_dir(const char *name) {
  g_autofree char *prefix = installed_prefix();
  if (prefix)
    return g_build_filename(prefix, EMA_INSTALL_DATADIR, name, NULL);
  if (strcmp(name, "plots") == 0)
    return g_strdup(EMA_SOURCE_PLOTS);
  if (strcmp(name, "shared") == 0) /* the public data sit beside the source tree */
    return g_build_filename(EMA_SOURCE_HWMODELS, "..", "..", "shared", NULL);
  return g_strdup(EMA_SOURCE_HWMODELS);
}

char *ema_installed_plugin_dir(void) {
  g_autofree char *prefix = installed_prefix();
  char *dir = prefix ? g_build_filename(prefix, EMA_INSTALL_PLUGINDIR, NULL) : NULL;
  if (dir && !g_file_test(dir, G_FILE_TEST_IS_DIR))
    g_clear_pointer(&dir, g_free);
  return dir;
}

/* An entry DIR of ENV_VAR that is no folder (a typo, a file): said once per process on stderr,
 * as nothing is found there and every name falls through to the next folder without a word. */
static void warn_not_folder(const char *env_var, const char *dir) {
  static GHashTable *warned;
  G_LOCK_DEFINE_STATIC(warned);
  g_autofree char *key = NULL;
  if (g_file_test(dir, G_FILE_TEST_IS_DIR))
    return;
  key = g_strconcat(env_var, "=", dir, NULL);
  G_LOCK(warned);
  if (warned == NULL)
    warned = g_hash_table_new_full(g_str_hash, g_str_equal, g_free, NULL);
  if (g_hash_table_add(warned, g_steal_pointer(&key)))
    g_printerr("ema: warning: %s: %s is not a folder: nothing is found there\n", env_var, dir);
  G_UNLOCK(warned);
}

GPtrArray *ema_model_dir_search_path(const char *subdir, const char *env_var) {
  GPtrArray *dirs = g_ptr_array_new_with_free_func(g_free);
  const char *env = g_getenv(env_var);
  if (env && *env) {
    g_auto(GStrv) parts = g_strsplit(env, G_SEARCHPATH_SEPARATOR_S, -1);
    for (guint i = 0; parts[i]; i++)
      if (*parts[i]) {
        warn_not_folder(env_var, parts[i]);
        g_ptr_array_add(dirs, g_strdup(parts[i]));
      }
  }
  {
    g_autofree char *builtin = ema_data_dir("hwmodels");
    g_ptr_array_add(dirs, g_build_filename(builtin, subdir, NULL));
  }
  return dirs;
}

static gint compare_names(gconstpointer a, gconstpointer b) {
  return strcmp(*(char *const *) a, *(char *const *) b);
}

GPtrArray *ema_model_dir_list(const char *subdir, const char *env_var) {
  g_autoptr(GPtrArray) dirs = ema_model_dir_search_path(subdir, env_var);
  GPtrArray *names = g_ptr_array_new_with_free_func(g_free);
  for (guint i = 0; i < dirs->len; i++) {
    g_autoptr(GDir) dir = g_dir_open(dirs->pdata[i], 0, NULL);
    const char *entry;
    while (dir && (entry = g_dir_read_name(dir)) != NULL) {
      g_autofree char *name = NULL;
      gboolean seen = FALSE;
      /* (a file named ".yaml" names no model: it was listed as one named "") */
      if (!g_str_has_suffix(entry, ".yaml") || strlen(entry) == strlen(".yaml"))
        continue;
      name = g_strndup(entry, strlen(entry) - 5);
      for (guint j = 0; j < names->len && !seen; j++)
        seen = strcmp(names->pdata[j], name) == 0;
      if (!seen)
        g_ptr_array_add(names, g_steal_pointer(&name));
    }
  }
  g_ptr_array_sort(names, compare_names);
  return names;
}

EmaNode *ema_model_load_named(const char *path, const char *name, GError **error) {
  EmaNode *root = ema_node_load_file(path, error);
  const EmaNode *given = root && root->kind == EMA_NODE_MAP ? ema_node_get(root, "name") : NULL;
  if (given && given->kind == EMA_NODE_SCALAR && given->value && strcmp(given->value, name) != 0) {
    g_autofree char *quoted = ema_file_quote_cut(given->value, -1);
    ema_node_error(error, EMA_CONFIG_ERROR_INVALID, given, "name",
                   "'%s' is not the name the file is found by ('%s', its file's name without "
                   ".yaml): make them the same",
                   quoted, name);
    ema_node_free(root);
    return NULL;
  }
  return root;
}

char *ema_model_dir_find(const char *subdir, const char *env_var, const char *name,
                         const char *what, GError **error) {
  g_autoptr(GPtrArray) dirs = ema_model_dir_search_path(subdir, env_var);
  g_autoptr(GPtrArray) known = NULL;
  g_autofree char *list = NULL;
  if (strchr(name, '/') == NULL && *name) {
    for (guint i = 0; i < dirs->len; i++) {
      g_autofree char *file = g_strconcat(name, ".yaml", NULL);
      char *path = g_build_filename(dirs->pdata[i], file, NULL);
      /* any entry of the name, as ema_model_dir_list lists it: one that is not a regular file
       * (a folder, a FIFO, a dangling link) is the reader's error about it, not "unknown"
       * beside a list that names it, nor a silent fall-through to a later folder's file */
      if (g_file_test(path, G_FILE_TEST_EXISTS | G_FILE_TEST_IS_SYMLINK))
        return path;
      g_free(path);
    }
  }
  known = ema_model_dir_list(subdir, env_var);
  g_ptr_array_add(known, NULL);
  list = g_strjoinv(", ", (char **) known->pdata);
  g_autofree char *quoted = ema_file_quote_cut(name, -1);
  g_set_error(error, EMA_CONFIG_ERROR, EMA_CONFIG_ERROR_KEY, "unknown %s '%s' (known: %s)", what,
              quoted, list);
  return NULL;
}
