/* modelpath.h: finding model files by name. Hardware models
 * (hwmodels/servers/<name>.yaml) and LLM shapes (hwmodels/llms/<name>.yaml)
 * are looked up the same way: the directories of an environment variable
 * (colon-separated, searched in order) first, then the built-in directory:
 * that of an installed ema-sim (ema_data_dir("hwmodels")/<subdir>), else
 * the source tree's EMA_SOURCE_HWMODELS/<subdir>. The first file found wins (a folder, FIFO
 * or dangling link of the name too: reading it is then the error); a name never contains a '/'.
 * A miss answers with the sorted list of known names. */
#pragma once

#include <glib.h>

#include "ema/core/node.h"

G_BEGIN_DECLS

/* The data folder NAME ("hwmodels", "plots" or "shared", the public data
 * sets that profiles import) of this program: when it runs from an installed
 * prefix (<prefix>/bin/ema-sim, wherever the prefix was moved),
 * <prefix>/share/ema/NAME; otherwise the source tree's (shared: the folder
 * beside the source tree, ../shared). */
char *ema_data_dir(const char *name);
/* The installed policy-module folder (<prefix>/lib/.../ema/policies) of an
 * installed program when it exists; NULL otherwise. */
char *ema_installed_plugin_dir(void);

/* Directories searched for SUBDIR's models: ENV_VAR's entries, then
 * ema_data_dir("hwmodels")/SUBDIR. */
GPtrArray *ema_model_dir_search_path(const char *subdir, const char *env_var);
/* Sorted, de-duplicated names (file names without .yaml) on that path. */
GPtrArray *ema_model_dir_list(const char *subdir, const char *env_var);
/* Path of NAME.yaml on that path, or NULL with an EMA_CONFIG_ERROR_KEY error
 * "unknown WHAT 'NAME' (known: a, b, ...)" (no location: the caller adds it). */
char *ema_model_dir_find(const char *subdir, const char *env_var, const char *name,
                         const char *what, GError **error);

/* The model file PATH, found by NAME, as a tree (free with ema_node_free): its `name:` must be
 * NAME, the file's name without .yaml, or it is an error at that key (a file found by one name
 * and calling itself another was listed under the one, refused under it, and reported under
 * the other). */
EmaNode *ema_model_load_named(const char *path, const char *name, GError **error);

G_END_DECLS
