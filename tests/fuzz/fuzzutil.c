/* fuzzutil.c: the shared helpers of the fuzz harnesses (fuzzutil.h). The
 * scratch directory is made once per process and removed at exit; files in
 * it are overwritten by every input. */
#include "fuzzutil.h"

#include <stdlib.h>
#include <string.h>

#include <glib/gstdio.h>

static char *scratch;

static void quiet(const gchar *domain, GLogLevelFlags level, const gchar *message, gpointer data) {
  if (level & (G_LOG_LEVEL_ERROR | G_LOG_LEVEL_CRITICAL | G_LOG_LEVEL_WARNING)) {
    fprintf(stderr, "%s: %s\n", domain ? domain : "", message);
    abort();
  }
}

static void remove_scratch(void) {
  g_autoptr(GDir) dir = g_dir_open(scratch, 0, NULL);
  const char *name;
  while (dir && (name = g_dir_read_name(dir)) != NULL) {
    g_autofree char *path = g_build_filename(scratch, name, NULL);
    g_remove(path);
  }
  g_rmdir(scratch);
}

void ema_fuzz_init(void) {
  if (scratch)
    return;
  g_log_set_default_handler(quiet, NULL);
  g_log_set_always_fatal(G_LOG_LEVEL_CRITICAL | G_LOG_LEVEL_WARNING);
  scratch =
      g_build_filename(g_file_test("/dev/shm", G_FILE_TEST_IS_DIR) ? "/dev/shm" : g_get_tmp_dir(),
                       "ema-fuzz-XXXXXX", NULL);
  if (g_mkdtemp(scratch) == NULL)
    abort();
  atexit(remove_scratch);
}

const char *ema_fuzz_dir(void) {
  return scratch;
}

char *ema_fuzz_write(const char *name, const uint8_t *data, size_t size) {
  char *path = g_build_filename(scratch, name, NULL);
  if (!g_file_set_contents(path, (const char *) data, (gssize) size, NULL))
    abort();
  return path;
}

guint ema_fuzz_split(const uint8_t *data, size_t size, const uint8_t **starts, size_t *sizes,
                     guint max) {
  static const char mark[] = "\n%%\n";
  const gsize mark_len = sizeof mark - 1;
  guint n = 0;
  gsize begin = 0;
  for (gsize i = 0; n + 1 < max && i + mark_len <= size; i++) {
    if (memcmp(data + i, mark, mark_len) == 0) {
      starts[n] = data + begin;
      sizes[n++] = i - begin;
      begin = i + mark_len;
      i += mark_len - 1;
    }
  }
  starts[n] = data + begin;
  sizes[n++] = size - begin;
  return n;
}
