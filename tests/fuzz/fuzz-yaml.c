/* fuzz-yaml.c: libFuzzer harness of the YAML node builder (node.h) with
 * includes and overrides. The input's parts (split at "\n%%\n"): the main
 * file, a file it may `!include inc.yaml`, and one `--set` assignment per
 * line of the third part. Every tree that loads is copied and freed. */
#include <stdio.h>
#include <stdlib.h>

#include <string.h>

#include "ema/core/node.h"
#include "fuzzutil.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
  const uint8_t *parts[3];
  size_t sizes[3];
  guint n;
  g_autofree char *main_path = NULL, *inc_path = NULL;
  g_autoptr(EmaNode) root = NULL;
  GError *error = NULL;
  ema_fuzz_init();
  if (size > 256 * 1024)
    return 0;
  n = ema_fuzz_split(data, size, parts, sizes, 3);
  main_path = ema_fuzz_write("main.yaml", parts[0], sizes[0]);
  inc_path =
      ema_fuzz_write("inc.yaml", n > 1 ? parts[1] : (const uint8_t *) "", n > 1 ? sizes[1] : 0);
  root = ema_node_load_file(main_path, &error);
  if (root == NULL) {
    /* every error names the file it is in: the main file or its include */
    if (error == NULL || (!g_str_has_prefix(error->message, main_path) &&
                          !g_str_has_prefix(error->message, inc_path)))
      abort();
    g_clear_error(&error);
    return 0;
  }
  if (n > 2) {
    g_autofree char *sets = g_strndup((const char *) parts[2], sizes[2]);
    g_auto(GStrv) lines = g_strsplit(sets, "\n", 16);
    for (guint i = 0; lines[i]; i++) {
      if (!ema_node_apply_override(root, lines[i], i + 1, &error)) {
        if (error == NULL || !g_str_has_prefix(error->message, "--set:"))
          abort();
        g_clear_error(&error);
        break;
      }
    }
  }
  g_autoptr(EmaNode) copy = ema_node_copy(root);
  if (copy->kind != root->kind)
    abort();
  return 0;
}
