/* capture.c: run a program under libemacapture.so and convert its trace (capture.h).
 *
 * Invariants: the child gets the environment of this process plus the capture's variables
 * (any CUDA_INJECTION64_PATH / NVTX_INJECTION64_PATH it had is replaced, and said so); the
 * directory exists before the child starts; nothing here calls CUDA. */
#include "capture.h"

#include <errno.h>
#include <signal.h>
#include <stdio.h>
#include <string.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "ema/core/file.h"
#include "ema/core/node.h"
#include "ema/run/output.h"
#include "errors.h"
#include "trace.h"

#define LIBRARY_NAME "libemacapture.so"

char *ema_capture_find_library(GError **error) {
  const char *env = g_getenv("EMA_CAPTURE_LIB");
  if (env && *env) {
    if (g_file_test(env, G_FILE_TEST_IS_REGULAR))
      return g_canonicalize_filename(env, NULL);
    g_set_error(error, EMA_VALIDATE_ERROR, EMA_VALIDATE_ERROR_IO,
                "EMA_CAPTURE_LIB=%s: no such file", env);
    return NULL;
  }
  g_autofree char *exe = g_file_read_link("/proc/self/exe", NULL);
  g_autofree char *dir = exe ? g_path_get_dirname(exe) : g_strdup(".");
  char *path = g_build_filename(dir, LIBRARY_NAME, NULL);
  if (g_file_test(path, G_FILE_TEST_IS_REGULAR))
    return path;
  g_set_error(error, EMA_VALIDATE_ERROR, EMA_VALIDATE_ERROR_IO,
              "the capture library is not at %s (built with the CUPTI headers and libcupti); "
              "set EMA_CAPTURE_LIB to its path",
              path);
  g_free(path);
  return NULL;
}

/* What a capture writes into its folder: the library's files, the workload's provenance and
 * the summaries made from them (the folder is claimed as ema-sim's runs claim theirs, output.h) */
static const char *const capture_entries[] = {
    "kernels.csv", "memcpy.csv", "memset.csv",       "memory.csv", "nvtx.csv",      "vmm.csv",
    "capture.txt", "ranges.csv", "kernel-names.csv", "trace.json", "workload.yaml", NULL};

gboolean ema_capture_run(const EmaCaptureOptions *o, int *status, GError **error) {
  if (!ema_output_claim_dir_kind(o->dir, EMA_CAPTURE_OUTPUT_KIND, capture_entries,
                                 EMA_OUTPUT_CLAIM_CLEAR, error))
    return FALSE;
  g_autofree char *dir = g_canonicalize_filename(o->dir, NULL);
  g_auto(GStrv) env = g_get_environ();
  for (const char *const *v =
           (const char *const[]){"CUDA_INJECTION64_PATH", "NVTX_INJECTION64_PATH", NULL};
       *v; v++)
    if (g_environ_getenv(env, *v) && strcmp(g_environ_getenv(env, *v), o->library) != 0)
      fprintf(stderr, "ema-validate: capture: %s=%s replaced by the capture library\n", *v,
              g_environ_getenv(env, *v));
  env = g_environ_setenv(env, "CUDA_INJECTION64_PATH", o->library, TRUE);
  env = g_environ_setenv(env, "NVTX_INJECTION64_PATH", o->library, TRUE);
  env = g_environ_setenv(env, "EMA_CAPTURE_DIR", dir, TRUE);
  char number[32];
  if (o->buffers) {
    g_snprintf(number, sizeof number, "%u", o->buffers);
    env = g_environ_setenv(env, "EMA_CAPTURE_BUFFERS", number, TRUE);
  }
  if (o->buffer_mb) {
    g_snprintf(number, sizeof number, "%u", o->buffer_mb);
    env = g_environ_setenv(env, "EMA_CAPTURE_BUFFER_MB", number, TRUE);
  }
  GPid pid = 0;
  GError *spawn = NULL;
  if (!g_spawn_async(NULL, o->argv, env,
                     G_SPAWN_SEARCH_PATH | G_SPAWN_DO_NOT_REAP_CHILD | G_SPAWN_CHILD_INHERITS_STDIN,
                     NULL, NULL, &pid, &spawn)) {
    g_set_error(error, EMA_VALIDATE_ERROR, EMA_VALIDATE_ERROR_IO, "capture: cannot run %s: %s",
                o->argv[0], spawn->message);
    g_error_free(spawn);
    return FALSE;
  }
  int wstatus = 0;
  while (waitpid(pid, &wstatus, 0) < 0 && errno == EINTR) {
  }
  g_spawn_close_pid(pid);
  *status = WIFEXITED(wstatus)     ? WEXITSTATUS(wstatus)
            : WIFSIGNALED(wstatus) ? 128 + WTERMSIG(wstatus)
                                   : 1;
  /* the library writes kernels.csv as it starts, when the program initializes CUDA */
  g_autofree char *kernels = g_build_filename(dir, "kernels.csv", NULL);
  if (!g_file_test(kernels, G_FILE_TEST_EXISTS)) {
    g_set_error(error, EMA_VALIDATE_ERROR, EMA_VALIDATE_ERROR_IO,
                "capture: %s exited with status %d and produced no kernel trace (no %s): the "
                "capture library never started in it, as when there is no GPU or CUDA driver, "
                "CUPTI is unavailable, or the program makes no CUDA call",
                o->argv[0], *status, kernels);
    return FALSE;
  }
  g_autoptr(EmaTrace) trace = ema_trace_load(dir, error);
  if (!trace) {
    g_prefix_error(error, "capture: the program exited with status %d; its trace: ", *status);
    return FALSE;
  }
  g_autofree char *json = g_build_filename(dir, "trace.json", NULL);
  if (!ema_trace_write_summaries(trace, dir, error) || !ema_trace_write_chrome(trace, json, error))
    return FALSE;
  g_print("capture: %s exited with status %d; %u kernels, %u copies/memsets, %u allocation "
          "records, %u VMM calls, %u NVTX ranges (%u unmatched markers) in %s\n",
          o->argv[0], *status, trace->kernels->len, trace->copies->len, trace->memory->len,
          trace->vmm->len, trace->ranges->len, trace->unmatched_markers, dir);
  if (trace->summary && strstr(trace->summary, "ended: running"))
    g_print("capture: the library did not record the program's end (killed?): the trace holds "
            "the buffers completed before it\n");
  return TRUE;
}

/* the keys profile.yaml gets after the workload's lines */
static const char *const profile_own_keys[] = {"date", "command", "source", "tables",
                                               "backend_tables"};

/* the workload's own provenance, copied line by line; a line that is not `key: value` is an
 * error with its line number, and so, at their place, is what would not leave profile.yaml a
 * YAML map that loads: not YAML (a NUL byte, an unclosed quote), a key given twice, a key that
 * profile.yaml writes itself */
static gboolean append_workload(GString *out, const char *path, GError **error) {
  g_autofree char *text = NULL;
  g_autoptr(EmaNode) root = NULL;
  GError *io = NULL;
  if (!ema_file_read_regular(path, EMA_FILE_MAX_TEXT, &text, NULL, &io)) {
    g_set_error(error, EMA_VALIDATE_ERROR, EMA_VALIDATE_ERROR_IO,
                "%s (the workload writes it: did it run?)", io->message);
    g_error_free(io);
    return FALSE;
  }
  g_auto(GStrv) lines = g_strsplit(text, "\n", -1);
  for (guint i = 0; lines[i]; i++) {
    const char *line = lines[i];
    if (*line == '\0')
      continue;
    const char *colon = strchr(line, ':');
    if (line[0] != ' ' && line[0] != '#' && line[0] != '-' && (!colon || colon == line)) {
      g_set_error(error, EMA_VALIDATE_ERROR, EMA_VALIDATE_ERROR_DATA,
                  "%s:%u:1: not a 'key: value' line", path, i + 1);
      return FALSE;
    }
    g_string_append_printf(out, "%s\n", line);
  }
  if ((root = ema_node_load_file(path, error)) == NULL)
    return FALSE;
  if (root->kind != EMA_NODE_MAP && !(root->kind == EMA_NODE_SCALAR && root->value == NULL)) {
    ema_node_error(error, EMA_CONFIG_ERROR_TYPE, root, NULL, "not a map of 'key: value' lines");
    return FALSE;
  }
  for (guint i = 0; i < G_N_ELEMENTS(profile_own_keys); i++) {
    const EmaNode *key = ema_node_get_key(root, profile_own_keys[i]);
    if (key != NULL) {
      ema_node_error(error, EMA_CONFIG_ERROR_KEY, key, profile_own_keys[i],
                     "profile.yaml writes this key itself");
      return FALSE;
    }
  }
  return TRUE;
}

const char *const ema_capture_profile_entries[] = {"profile.yaml", NULL};

gboolean ema_capture_write_profile(const char *capture_dir, const char *out_dir,
                                   const char *command, GError **error) {
  g_autoptr(EmaTrace) trace = ema_trace_load(capture_dir, error);
  if (!trace)
    return FALSE;
  g_autoptr(GString) out = g_string_new("# Operator profiles measured by ema-validate profile "
                                        "(format: hwmodels/profiles/README.md)\n");
  g_autofree char *workload = g_build_filename(capture_dir, "workload.yaml", NULL);
  if (!append_workload(out, workload, error))
    return FALSE;
  /* its points read whole, a malformed one or none an error before anything is removed */
  g_autoptr(GHashTable) points = ema_trace_profile_points(trace, error);
  if (!points)
    return FALSE;
  if (g_hash_table_size(points) == 0) {
    g_set_error(error, EMA_VALIDATE_ERROR, EMA_VALIDATE_ERROR_DATA,
                "%s: no 'ema.point' NVTX range: nothing to profile (were NVTX ranges recorded?)",
                capture_dir);
    return FALSE;
  }
  /* the capture read whole: only now does an earlier profile's output go */
  if (!ema_output_claim_dir_kind(out_dir, EMA_PROFILE_OUTPUT_KIND, ema_capture_profile_entries,
                                 EMA_OUTPUT_CLAIM_CLEAR, error))
    return FALSE;
  g_autoptr(GPtrArray) tables = NULL;
  if (!ema_trace_write_profile_points(points, out_dir, &tables, error))
    return FALSE;
  g_autoptr(GDateTime) now = g_date_time_new_now_utc();
  g_autofree char *date = g_date_time_format(now, "%F");
  g_autofree char *quoted = g_strescape(command, NULL);
  g_string_append_printf(out, "date: %s\ncommand: \"%s\"\nsource: measured\n", date, quoted);
  /* the step model reads `tables:`; each backend's own times (TABLE-backends.csv) are
   * listed apart, for reading by people and scripts */
  for (int backends = 0; backends <= 1; backends++) {
    g_string_append(out, backends ? "backend_tables:\n" : "tables:\n");
    for (guint i = 0; i < tables->len; i++) {
      const char *name = g_ptr_array_index(tables, i);
      if (g_str_has_suffix(name, "-backends.csv") == backends)
        g_string_append_printf(out, "  - %s\n", name);
    }
  }
  g_autofree char *path = g_build_filename(out_dir, "profile.yaml", NULL);
  GError *io = NULL;
  if (!g_file_set_contents(path, out->str, (gssize) out->len, &io)) {
    g_set_error(error, EMA_VALIDATE_ERROR, EMA_VALIDATE_ERROR_IO, "%s: %s", path, io->message);
    g_error_free(io);
    return FALSE;
  }
  g_print("profile: %u tables from %u NVTX ranges into %s\n", tables->len, trace->ranges->len,
          out_dir);
  return TRUE;
}
