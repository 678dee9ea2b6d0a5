/* fuzz-profile.c: libFuzzer harness of the operator-profile import
 * (ema/hw/profile.h): a profile folder is loaded (ema_profile_load) and
 * every import read (ema_profile_read_all). The input's parts (split at
 * "\n%%\n"): profile.yaml, then up to four files of the folder, each
 * starting with a line that names it (a measured table such as gemm.csv, an
 * imported data set such as aic/gemm_perf.csv with its
 * aic/gemm_perf.constants.yaml, or a kernel-table folder's
 * decode/32-8-128.csv); the shared folder of the imports is the profile's
 * own. A failed load or read always comes with an error; what loads is
 * described and freed. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <glib/gstdio.h>

#include "ema/hw/profile.h"
#include "fuzzutil.h"
#include "testutil.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

#define MAX_PARTS 5

/* NAME is a relative path of at most two parts, each of [A-Za-z0-9._-], none
 * of them "." or "..", and not profile.yaml (the first part's). */
static gboolean file_name_valid(const char *name) {
  g_auto(GStrv) parts = NULL;
  guint n;
  if (!*name || strlen(name) > 64 || strcmp(name, "profile.yaml") == 0)
    return FALSE;
  for (const char *c = name; *c; c++)
    if (!g_ascii_isalnum(*c) && !strchr("._-/", *c))
      return FALSE;
  parts = g_strsplit(name, "/", -1);
  n = g_strv_length(parts);
  if (n > 2)
    return FALSE;
  for (guint i = 0; i < n; i++)
    if (!*parts[i] || strcmp(parts[i], ".") == 0 || strcmp(parts[i], "..") == 0)
      return FALSE;
  return TRUE;
}

/* Write a file part into FOLDER: its first line the name, the rest the
 * text. A part whose name is not valid or already taken is left out. */
static void write_file_part(const char *folder, const uint8_t *part, size_t size) {
  const uint8_t *newline = memchr(part, '\n', size);
  size_t name_len = newline ? (size_t) (newline - part) : size;
  size_t text_start = newline ? name_len + 1 : size;
  g_autofree char *name = g_strndup((const char *) part, name_len);
  g_autofree char *path = NULL, *parent = NULL;
  if (strlen(name) != name_len || !file_name_valid(name))
    return;
  path = g_build_filename(folder, name, NULL);
  parent = g_path_get_dirname(path);
  /* a name taken by another part's folder or file ("a" and "a/b.csv") is left out */
  if (g_mkdir_with_parents(parent, 0700) != 0 || g_file_test(path, G_FILE_TEST_IS_DIR))
    return;
  if (!g_file_set_contents(path, (const char *) part + text_start, (gssize) (size - text_start),
                           NULL))
    abort();
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
  const uint8_t *parts[MAX_PARTS];
  size_t sizes[MAX_PARTS];
  guint n;
  g_autofree char *folder = NULL, *yaml_path = NULL;
  g_autoptr(EmaProfile) profile = NULL;
  g_autoptr(GString) description = NULL;
  GError *error = NULL;
  ema_fuzz_init();
  if (size > 256 * 1024)
    return 0;
  /* a path out of the folder ("../") would read the machine's files */
  if (memmem(data, size, "..", 2) != NULL)
    return 0;
  folder = g_build_filename(ema_fuzz_dir(), "profile", NULL);
  ema_test_remove_tree(folder);
  if (g_mkdir(folder, 0700) != 0)
    abort();
  g_setenv("EMA_SHARED_DIR", folder, TRUE);
  n = ema_fuzz_split(data, size, parts, sizes, MAX_PARTS);
  yaml_path = g_build_filename(folder, "profile.yaml", NULL);
  if (!g_file_set_contents(yaml_path, (const char *) parts[0], (gssize) sizes[0], NULL))
    abort();
  for (guint i = 1; i < n; i++)
    write_file_part(folder, parts[i], sizes[i]);

  profile = ema_profile_load(folder, &error);
  if (profile == NULL) {
    if (error == NULL || !*error->message)
      abort();
    g_clear_error(&error);
    ema_test_remove_tree(folder);
    return 0;
  }
  if (!ema_profile_read_all(profile, &error)) {
    if (error == NULL || !*error->message)
      abort();
    g_clear_error(&error);
  } else if (error != NULL) {
    abort();
  }
  description = g_string_new(NULL);
  ema_profile_describe(profile, description);
  ema_test_remove_tree(folder);
  return 0;
}
