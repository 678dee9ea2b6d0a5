/* calderive.c: the figures of a server model from the raw results of a
 * calibration run (calderive.h). Every figure is a median of repeats or a
 * fit over medians; a missing measurement is an error that names it. */
#include "calderive.h"

#include <errno.h>
#include <math.h>
#include <stdio.h>
#include <string.h>

#include <glib/gstdio.h>

#include "decodefit.h"
#include "ema/core/csv.h"
#include "ema/core/file.h"
#include "ema/run/experiment.h"
#include "ema/run/output.h"
#include "errors.h"
#include "fit.h"

#define GROUP "calibration"
#define PROVENANCE_FILE "provenance.txt"

static const char *const topology_names[] = {"direct", "switch", "pcie"};

void ema_calibration_run_free(EmaCalibrationRun *run) {
  if (run == NULL)
    return;
  g_free(run->name);
  g_free(run->date);
  g_free(run->command);
  g_free(run->gpu_name);
  g_free(run->gpu_list);
  g_free(run->driver_version);
  g_free(run->cuda_versions);
  g_free(run->results_dir);
  g_free(run->reference_name);
  g_free(run);
}

/* ---- provenance.txt ------------------------------------------------------- */

gboolean ema_calibration_run_save(const EmaCalibrationRun *run, const char *dir, GError **error) {
  g_autoptr(GKeyFile) file = g_key_file_new();
  g_autofree char *path = g_build_filename(dir, PROVENANCE_FILE, NULL);
  g_autofree char *text = NULL;
  GError *local = NULL;
  const struct {
    const char *key;
    const char *value;
  } strings[] = {
      {"name", run->name},
      {"date", run->date},
      {"command", run->command},
      {"gpu_name", run->gpu_name},
      {"gpu_list", run->gpu_list},
      {"driver_version", run->driver_version},
      {"cuda_versions", run->cuda_versions},
      {"results_dir", run->results_dir},
      {"reference", run->reference_name},
      {"topology", topology_names[run->topology]},
  };
  const struct {
    const char *key;
    guint64 value;
  } numbers[] = {
      {"gpus", (guint64) run->gpus},
      {"hbm_capacity", run->hbm_capacity},
      {"hbm_total", run->hbm_total},
      {"repeats", run->repeats},
      {"warmups", run->warmups},
      {"vmm_granularity_min", run->vmm_granularity_min},
      {"vmm_granularity_rec", run->vmm_granularity_rec},
      {"overlap_chunks", run->overlap_chunks},
      {"overlap_chunk_bytes", run->overlap_chunk_bytes},
      {"remote_chase_steps", run->remote_chase_steps},
      {"local_chase_steps", run->local_chase_steps},
  };

  g_key_file_set_comment(file, NULL, NULL,
                         " ema-validate calibrate: what the run knew besides its measurements "
                         "(validate/calderive.h)",
                         NULL);
  for (guint i = 0; i < G_N_ELEMENTS(strings); i++)
    g_key_file_set_string(file, GROUP, strings[i].key, strings[i].value ? strings[i].value : "");
  for (guint i = 0; i < G_N_ELEMENTS(numbers); i++)
    g_key_file_set_uint64(file, GROUP, numbers[i].key, numbers[i].value);
  g_key_file_set_double(file, GROUP, "matrix_flops", run->matrix_flops);
  text = g_key_file_to_data(file, NULL, NULL);
  if (!g_file_set_contents(path, text, -1, &local)) {
    g_set_error(error, EMA_VALIDATE_ERROR, EMA_VALIDATE_ERROR_IO, "cannot write %s: %s", path,
                local->message);
    g_error_free(local);
    return FALSE;
  }
  return TRUE;
}

/* provenance.txt parsed, with its text for the lines of errors (GKeyFile keeps none) */
typedef struct {
  GKeyFile *file;
  const char *path;
  const char *text;
} Provenance;

/* "PATH:LINE" of KEY's line in P's text ("PATH" where it is not there). */
static char *key_place(const Provenance *p, const char *key) {
  gsize key_len = strlen(key);
  guint line = 1;
  for (const char *at = p->text; at != NULL && *at != '\0'; line++) {
    const char *end = strchr(at, '\n');
    const char *after;
    while (*at == ' ' || *at == '\t')
      at++;
    after = at + key_len;
    if (strncmp(at, key, key_len) == 0) {
      while (*after == ' ' || *after == '\t')
        after++;
      if (*after == '=')
        return g_strdup_printf("%s:%u", p->path, line);
    }
    at = end != NULL ? end + 1 : NULL;
  }
  return g_strdup(p->path);
}

static gboolean key_error(const Provenance *p, const char *key, GError **error, const char *format,
                          ...) G_GNUC_PRINTF(4, 5);

/* "PATH:LINE: [calibration] KEY: message" about KEY; FALSE */
static gboolean key_error(const Provenance *p, const char *key, GError **error, const char *format,
                          ...) {
  va_list args;
  g_autofree char *place = key_place(p, key);
  g_autofree char *message = NULL;
  va_start(args, format);
  message = g_strdup_vprintf(format, args);
  va_end(args);
  g_set_error(error, EMA_VALIDATE_ERROR, EMA_VALIDATE_ERROR_DATA, "%s: [%s] %s: %s", place, GROUP,
              key, message);
  return FALSE;
}

/* The first key of P's text given twice in one group (GKeyFile keeps the
 * last without a word) as "PATH:LINE: [GROUP] KEY: given again (first at
 * line N)"; FALSE. */
static gboolean check_keys_once(const Provenance *p, GError **error) {
  g_autoptr(GHashTable) first_line = g_hash_table_new_full(g_str_hash, g_str_equal, g_free, NULL);
  g_autofree char *group = g_strdup("");
  g_auto(GStrv) lines = g_strsplit(p->text, "\n", -1);
  for (guint i = 0; lines[i] != NULL; i++) {
    const char *line = lines[i] + strspn(lines[i], " \t");
    const char *equals = strchr(line, '=');
    g_autofree char *key = NULL, *where = NULL;
    gpointer seen;
    if (*line == '[') {
      g_free(group);
      group = g_strndup(line + 1, strcspn(line + 1, "]"));
      continue;
    }
    if (*line == '#' || equals == NULL)
      continue;
    key = g_strchomp(g_strndup(line, (gsize) (equals - line)));
    where = g_strdup_printf("%s\x1f%s", group, key);
    if (g_hash_table_lookup_extended(first_line, where, NULL, &seen)) {
      g_set_error(error, EMA_VALIDATE_ERROR, EMA_VALIDATE_ERROR_DATA,
                  "%s:%u: [%s] %s: given again (first at line %u)", p->path, i + 1, group, key,
                  GPOINTER_TO_UINT(seen));
      return FALSE;
    }
    g_hash_table_insert(first_line, g_steal_pointer(&where), GUINT_TO_POINTER(i + 1));
  }
  return TRUE;
}

/* KEY's text: one line (it goes into the model's header comments, and the
 * GPU name and the date into its summary), as GKeyFile unescapes it. */
static gboolean read_string(const Provenance *p, const char *key, char **out, GError **error) {
  GError *local = NULL;
  *out = g_key_file_get_string(p->file, GROUP, key, &local);
  if (*out == NULL) {
    key_error(p, key, error, "%s", local->message);
    g_error_free(local);
    return FALSE;
  }
  for (const char *c = *out; *c != '\0'; c++)
    if ((guchar) *c < 0x20 || *c == 0x7f)
      return key_error(p, key, error, "holds a control character (0x%02X): a value is one line",
                       (guint) (guchar) *c);
  return TRUE;
}

static gboolean read_number(const Provenance *p, const char *key, guint64 max, guint64 *out,
                            GError **error) {
  GError *local = NULL;
  g_autofree char *text = g_key_file_get_string(p->file, GROUP, key, &local);
  guint64 value = 0;
  if (text == NULL || !g_ascii_string_to_unsigned(text, 10, 0, max, &value, NULL)) {
    key_error(p, key, error, "%s", local ? local->message : "not a whole number in range");
    g_clear_error(&local);
    return FALSE;
  }
  *out = value;
  return TRUE;
}

EmaCalibrationRun *ema_calibration_run_load(const char *dir, GError **error) {
  g_autofree char *path = g_build_filename(dir, PROVENANCE_FILE, NULL);
  g_autoptr(GKeyFile) file = g_key_file_new();
  g_autoptr(EmaCalibrationRun) run = g_new0(EmaCalibrationRun, 1);
  g_autofree char *topology = NULL, *flops = NULL, *text = NULL;
  GError *local = NULL;
  guint64 gpus = 0, repeats = 0, warmups = 0, chunks = 0, remote_steps = 0, local_steps = 0;
  gsize length = 0;
  char *flops_end = NULL;
  const char *nul;
  gboolean ok;

  /* read as every input is (a FIFO or a device is refused, never waited on), then parsed */
  if (!ema_file_read_regular(path, EMA_FILE_MAX_TEXT, &text, &length, &local)) {
    g_set_error_literal(error, EMA_VALIDATE_ERROR, EMA_VALIDATE_ERROR_IO, local->message);
    g_error_free(local);
    return NULL;
  }
  /* GKeyFile ends a value at a NUL byte and reads on ("name=h200x2<NUL>z" was h200x2) */
  if ((nul = memchr(text, '\0', length)) != NULL) {
    guint line, col;
    ema_file_position(text, nul, &line, &col);
    g_set_error(error, EMA_VALIDATE_ERROR, EMA_VALIDATE_ERROR_DATA, "%s:%u:%u: a NUL byte", path,
                line, col);
    return NULL;
  }
  if (!g_key_file_load_from_data(file, text, length, G_KEY_FILE_NONE, &local)) {
    g_set_error(error, EMA_VALIDATE_ERROR, EMA_VALIDATE_ERROR_DATA, "%s: %s", path, local->message);
    g_error_free(local);
    return NULL;
  }
  const Provenance p = {file, path, text};
  ok = check_keys_once(&p, error) && read_string(&p, "name", &run->name, error) &&
       read_string(&p, "date", &run->date, error) &&
       read_string(&p, "command", &run->command, error) &&
       read_string(&p, "gpu_name", &run->gpu_name, error) &&
       read_string(&p, "gpu_list", &run->gpu_list, error) &&
       read_string(&p, "driver_version", &run->driver_version, error) &&
       read_string(&p, "cuda_versions", &run->cuda_versions, error) &&
       read_string(&p, "results_dir", &run->results_dir, error) &&
       read_string(&p, "reference", &run->reference_name, error) &&
       read_string(&p, "topology", &topology, error) &&
       read_string(&p, "matrix_flops", &flops, error) &&
       read_number(&p, "gpus", 1024, &gpus, error) &&
       read_number(&p, "hbm_capacity", G_MAXUINT64, &run->hbm_capacity, error) &&
       read_number(&p, "hbm_total", G_MAXUINT64, &run->hbm_total, error) &&
       read_number(&p, "repeats", G_MAXUINT32, &repeats, error) &&
       read_number(&p, "warmups", G_MAXUINT32, &warmups, error) &&
       read_number(&p, "vmm_granularity_min", G_MAXUINT64, &run->vmm_granularity_min, error) &&
       read_number(&p, "vmm_granularity_rec", G_MAXUINT64, &run->vmm_granularity_rec, error) &&
       read_number(&p, "overlap_chunks", G_MAXUINT32, &chunks, error) &&
       read_number(&p, "overlap_chunk_bytes", G_MAXUINT64, &run->overlap_chunk_bytes, error) &&
       read_number(&p, "remote_chase_steps", G_MAXUINT32, &remote_steps, error) &&
       read_number(&p, "local_chase_steps", G_MAXUINT32, &local_steps, error);
  if (!ok)
    return NULL;
  /* as --name: the default model file is hwmodels/calibration/NAME.yaml */
  if (run->name[0] == '\0' || strpbrk(run->name, "/ ") != NULL) {
    g_autofree char *quoted = ema_file_quote_cut(run->name, -1);
    key_error(&p, "name", error, "'%s' must be a non-empty file name without '/' or spaces",
              quoted);
    return NULL;
  }
  run->topology = G_N_ELEMENTS(topology_names);
  for (guint i = 0; i < G_N_ELEMENTS(topology_names); i++)
    if (strcmp(topology, topology_names[i]) == 0)
      run->topology = (EmaTopology) i;
  if (run->topology == G_N_ELEMENTS(topology_names)) {
    g_autofree char *quoted = ema_file_quote_cut(topology, -1);
    key_error(&p, "topology", error, "'%s' is not direct, switch or pcie", quoted);
    return NULL;
  }
  /* the whole text a finite decimal number ("1e15x", "inf" and "0x10" are not) */
  run->matrix_flops = ema_csv_parse_decimal(flops, &flops_end);
  if (flops_end == flops || *flops_end != '\0' || !isfinite(run->matrix_flops) ||
      !(run->matrix_flops > 0)) {
    g_autofree char *quoted = ema_file_quote_cut(flops, -1);
    key_error(&p, "matrix_flops", error, "'%s' is not a positive number", quoted);
    return NULL;
  }
  {
    const struct {
      const char *key;
      guint64 value;
    } counts[] = {
        {"gpus", gpus},
        {"remote_chase_steps", remote_steps},
        {"local_chase_steps", local_steps},
        {"overlap_chunks", chunks},
        {"overlap_chunk_bytes", run->overlap_chunk_bytes},
    };
    for (guint i = 0; i < G_N_ELEMENTS(counts); i++)
      if (counts[i].value == 0) {
        key_error(&p, counts[i].key, error, "must be positive");
        return NULL;
      }
  }
  /* CUDA's allocation granularities: powers of two, the recommended one a multiple of the
   * minimum (the slice is the recommended size rounded up to the minimum, vmm.c) */
  if (run->vmm_granularity_min == 0 ||
      (run->vmm_granularity_min & (run->vmm_granularity_min - 1)) != 0) {
    key_error(&p, "vmm_granularity_min", error, "%" G_GUINT64_FORMAT " is not a power of two",
              run->vmm_granularity_min);
    return NULL;
  }
  if (run->vmm_granularity_rec < run->vmm_granularity_min ||
      (run->vmm_granularity_rec & (run->vmm_granularity_rec - 1)) != 0) {
    key_error(&p, "vmm_granularity_rec", error,
              "%" G_GUINT64_FORMAT
              " is not a power-of-two multiple of vmm_granularity_min (%" G_GUINT64_FORMAT ")",
              run->vmm_granularity_rec, run->vmm_granularity_min);
    return NULL;
  }
  run->gpus = (gint64) gpus;
  run->repeats = (guint) repeats;
  run->warmups = (guint) warmups;
  run->overlap_chunks = (guint) chunks;
  run->remote_chase_steps = (guint) remote_steps;
  run->local_chase_steps = (guint) local_steps;
  return g_steal_pointer(&run);
}

/* ---- finding measurements --------------------------------------------------- */

static const EmaMeasurement *require(const EmaReport *report, const char *name, GError **error) {
  const EmaMeasurement *m = ema_report_find(report, name);
  if (m == NULL)
    g_set_error(error, EMA_VALIDATE_ERROR, EMA_VALIDATE_ERROR_DATA,
                "the results have no measurement '%s'", name);
  return m;
}

/* The measurements named PREFIX-SIZE, in the order measured. */
static GPtrArray *sized(const EmaReport *report, const char *prefix) {
  GPtrArray *found = g_ptr_array_new();
  gsize length = strlen(prefix);
  for (guint i = 0; i < ema_report_count(report); i++) {
    const EmaMeasurement *m = ema_report_get(report, i);
    if (strncmp(m->name, prefix, length) == 0 && m->name[length] == '-' &&
        g_ascii_isdigit(m->name[length + 1]))
      g_ptr_array_add(found, (gpointer) m);
  }
  return found;
}

/* Whether M took time: a rate or a ratio is derived from its median (a
 * host-timed sample of 0 us would give an infinite one); else ERROR says so. */
static gboolean timed(const EmaMeasurement *m, GError **error) {
  g_autofree char *name = NULL;
  if (m->stats.median > 0)
    return TRUE;
  name = ema_file_quote_cut(m->name, -1);
  g_set_error(error, EMA_VALIDATE_ERROR, EMA_VALIDATE_ERROR_DATA,
              "'%s' takes no time (median of its samples 0 us): no rate or ratio comes of it",
              name);
  return FALSE;
}

/* The largest of the measurements PREFIX-SIZE (it took time: timed()). */
static const EmaMeasurement *largest(const EmaReport *report, const char *prefix, GError **error) {
  g_autoptr(GPtrArray) found = sized(report, prefix);
  const EmaMeasurement *best = NULL;
  for (guint i = 0; i < found->len; i++) {
    const EmaMeasurement *m = found->pdata[i];
    if (best == NULL || m->bytes > best->bytes)
      best = m;
  }
  if (best == NULL)
    g_set_error(error, EMA_VALIDATE_ERROR, EMA_VALIDATE_ERROR_DATA,
                "the results have no measurement '%s-SIZE'", prefix);
  return best != NULL && timed(best, error) ? best : NULL;
}

static double rate_of(const EmaMeasurement *m) {
  return m->rate_bytes / m->stats.median;
}

static double bytes_rate(const EmaMeasurement *m) {
  return (double) m->bytes / m->stats.median;
}

/* ---- the figures ------------------------------------------------------------ */

static gboolean fit_series(EmaReport *report, const char *name, const char *const *prefixes,
                           guint n_prefixes, gboolean with_ramp, EmaCopyFit *fit,
                           guint64 *min_bytes, guint64 *max_bytes, GError **error) {
  g_autoptr(GArray) points = g_array_new(FALSE, FALSE, sizeof(EmaCopyPoint));
  g_autofree char *fixed = g_strdup_printf("%s-fixed-cost", name);
  g_autofree char *ramp = g_strdup_printf("%s-ramp-time", name);
  g_autofree char *ramp_bytes = g_strdup_printf("%s-ramp-bytes", name);
  g_autofree char *bandwidth = g_strdup_printf("%s-bandwidth", name);
  g_autofree char *worst = g_strdup_printf("%s-max-rel-error", name);
  const char *how = with_ramp ? "least squares on relative error: fixed + ramp (1 - exp(-n / "
                                "ramp_bytes)) + n / bandwidth"
                              : "least squares on relative error: fixed + n / bandwidth";
  *min_bytes = G_MAXUINT64;
  *max_bytes = 0;
  for (guint p = 0; p < n_prefixes; p++) {
    g_autoptr(GPtrArray) found = sized(report, prefixes[p]);
    for (guint i = 0; i < found->len; i++) {
      const EmaMeasurement *m = found->pdata[i];
      EmaCopyPoint point = {(double) m->bytes, m->stats.median};
      g_array_append_val(points, point);
      *min_bytes = MIN(*min_bytes, m->bytes);
      *max_bytes = MAX(*max_bytes, m->bytes);
    }
  }
  if (!ema_copy_fit((const EmaCopyPoint *) points->data, points->len, with_ramp, fit, error)) {
    g_prefix_error(error, "%s: ", name);
    return FALSE;
  }
  ema_report_add_derived(report, fixed, fit->fixed_s, "s", how);
  if (with_ramp) {
    ema_report_add_derived(report, ramp, fit->ramp_s, "s", how);
    ema_report_add_derived(report, ramp_bytes, fit->ramp_bytes, "B", how);
  }
  ema_report_add_derived(report, bandwidth, fit->bandwidth, "B/s", how);
  ema_report_add_derived(report, worst, fit->max_rel_error, "fraction",
                         "largest |fit - measured| / measured over the fitted sizes");
  return TRUE;
}

static gboolean derive_local(const EmaReport *report, EmaCalibrationFigures *f, GError **error) {
  g_autoptr(GPtrArray) reads = sized(report, EMA_CAL_LOCAL_READ);
  g_autoptr(GArray) small = g_array_new(FALSE, FALSE, sizeof(double));
  const EmaMeasurement *empty, *read, *copy;
  if ((empty = require(report, EMA_CAL_EMPTY_KERNEL, error)) == NULL ||
      (read = largest(report, EMA_CAL_LOCAL_READ, error)) == NULL ||
      (copy = largest(report, EMA_CAL_LOCAL_COPY, error)) == NULL)
    return FALSE;
  for (guint i = 0; i < reads->len; i++) {
    const EmaMeasurement *m = reads->pdata[i];
    if (m->bytes <= EMA_CAL_KERNEL_OVERHEAD_MAX_BYTES)
      g_array_append_val(small, m->stats.median);
  }
  if (small->len == 0) {
    g_set_error(error, EMA_VALIDATE_ERROR, EMA_VALIDATE_ERROR_DATA,
                "the results have no '%s-SIZE' of 1 MiB or less (the kernel's fixed cost)",
                EMA_CAL_LOCAL_READ);
    return FALSE;
  }
  f->empty_kernel_s = empty->stats.median;
  f->hbm_bandwidth = bytes_rate(read);
  f->local_bytes = read->bytes;
  f->local_copy_bandwidth = 2.0 * bytes_rate(copy); /* read and written */
  f->kernel_overhead_s = ema_median((const double *) small->data, small->len);
  return TRUE;
}

static gboolean derive_link(EmaReport *report, const EmaCalibrationRun *run,
                            EmaCalibrationFigures *f, GError **error) {
  static const char *const push[] = {EMA_CAL_PUSH_0TO1, EMA_CAL_PUSH_1TO0};
  static const char *const pull[] = {EMA_CAL_PULL_1TO0, EMA_CAL_PULL_0TO1};
  const EmaMeasurement *read, *push_01, *push_10, *both, *remote, *local;
  guint64 pull_min, pull_max;
  if ((read = largest(report, EMA_CAL_PEER_READ, error)) == NULL ||
      (push_01 = largest(report, EMA_CAL_PUSH_0TO1, error)) == NULL ||
      (push_10 = largest(report, EMA_CAL_PUSH_1TO0, error)) == NULL ||
      (both = largest(report, EMA_CAL_PEER_BOTH, error)) == NULL ||
      (remote = require(report, EMA_CAL_REMOTE_LATENCY, error)) == NULL ||
      (local = require(report, EMA_CAL_LOCAL_LATENCY, error)) == NULL)
    return FALSE;
  f->direct_read_bandwidth = bytes_rate(read);
  f->peer_copy_0to1 = bytes_rate(push_01);
  f->peer_copy_1to0 = bytes_rate(push_10);
  f->duplex_bandwidth = bytes_rate(both); /* its bytes count both directions */
  f->link_latency_s = remote->stats.median / run->remote_chase_steps;
  f->local_latency_s = local->stats.median / run->local_chase_steps;
  return fit_series(report, "peer-copy-push", push, 2, TRUE, &f->peer_push, &f->peer_min_bytes,
                    &f->peer_max_bytes, error) &&
         fit_series(report, "peer-copy-pull", pull, 2, TRUE, &f->peer_pull, &pull_min, &pull_max,
                    error);
}

static gboolean derive_host(EmaReport *report, EmaCalibrationFigures *f, GError **error) {
  static const char *const h2d[] = {EMA_CAL_H2D};
  static const char *const d2h[] = {EMA_CAL_D2H};
  const EmaMeasurement *to_device, *to_host, *both;
  guint64 min_bytes, max_bytes;
  if ((to_device = largest(report, EMA_CAL_H2D, error)) == NULL ||
      (to_host = largest(report, EMA_CAL_D2H, error)) == NULL ||
      (both = largest(report, EMA_CAL_HOST_BOTH, error)) == NULL)
    return FALSE;
  f->h2d_largest = bytes_rate(to_device);
  f->d2h_largest = bytes_rate(to_host);
  f->host_duplex_bandwidth = bytes_rate(both);
  return fit_series(report, "host-copy-h2d", h2d, 1, FALSE, &f->h2d, &f->host_min_bytes,
                    &f->host_max_bytes, error) &&
         fit_series(report, "host-copy-d2h", d2h, 1, FALSE, &f->d2h, &min_bytes, &max_bytes, error);
}

/* The measurement whose name starts with PREFIX (the first one). */
static const EmaMeasurement *starting(const EmaReport *report, const char *prefix, GError **error) {
  for (guint i = 0; i < ema_report_count(report); i++) {
    const EmaMeasurement *m = ema_report_get(report, i);
    if (g_str_has_prefix(m->name, prefix))
      return m;
  }
  g_set_error(error, EMA_VALIDATE_ERROR, EMA_VALIDATE_ERROR_DATA,
              "the results have no measurement '%s...'", prefix);
  return NULL;
}

static gboolean derive_vmm(const EmaReport *report, const EmaCalibrationRun *run, EmaVmmFigures *v,
                           GError **error) {
  static const char *const steps[] = {"create", "reserve", "map",         "set-access",
                                      "unmap",  "release", "address-free"};
  const EmaMeasurement *single[G_N_ELEMENTS(steps)], *batch[G_N_ELEMENTS(steps)], *read;
  for (guint k = 0; k < G_N_ELEMENTS(steps); k++) {
    g_autofree char *one = g_strdup_printf("%s-%s-1x", EMA_CAL_VMM, steps[k]);
    g_autofree char *many = g_strdup_printf("%s-batch-%s-", EMA_CAL_VMM, steps[k]);
    if ((single[k] = starting(report, one, error)) == NULL ||
        (batch[k] = starting(report, many, error)) == NULL)
      return FALSE;
  }
  if ((read = largest(report, EMA_CAL_VMM_READ, error)) == NULL)
    return FALSE;
  v->slice_bytes = single[0]->bytes;
  if (v->slice_bytes == 0) {
    g_autofree char *name = ema_file_quote_cut(single[0]->name, -1);
    g_set_error(error, EMA_VALIDATE_ERROR, EMA_VALIDATE_ERROR_DATA,
                "'%s' gives no slice size in its bytes column", name);
    return FALSE;
  }
  v->granularity_min = run->vmm_granularity_min;
  v->granularity_rec = run->vmm_granularity_rec;
  v->single_repeats = single[0]->stats.n;
  v->create_s = single[0]->stats.median;
  v->reserve_s = single[1]->stats.median;
  v->map_s = single[2]->stats.median;
  v->set_access_s = single[3]->stats.median;
  v->unmap_s = single[4]->stats.median;
  v->release_s = single[5]->stats.median;
  v->address_free_s = single[6]->stats.median;
  v->batch_slices = (guint) (batch[0]->bytes / v->slice_bytes);
  v->batch_repeats = batch[0]->stats.n;
  v->batch_create_s = batch[0]->stats.median;
  v->batch_map_s = batch[2]->stats.median;
  v->batch_set_access_s = batch[3]->stats.median;
  v->batch_unmap_s = batch[4]->stats.median;
  v->batch_release_s = batch[5]->stats.median;
  v->direct_read_bandwidth = bytes_rate(read);
  return TRUE;
}

/* One interference case: the kernel's slowdown (from the arrangement where
 * the other load covers the kernel), the other load's slowdown (where the
 * kernel covers it), and the HBM bytes the kernel loses per byte the other
 * load moves. */
static gboolean derive_case(EmaReport *report, const char *name, const char *other,
                            const char *kernel_ratio, const char *other_ratio,
                            const char *loss_name, const char *what, double *kernel_slowdown,
                            double *other_slowdown, double *loss, GError **error) {
  g_autofree char *k_alone = g_strdup_printf("%s-kernel-overlapped:kernel-alone", name);
  g_autofree char *k_together = g_strdup_printf("%s-kernel-overlapped:kernel-together", name);
  g_autofree char *o_alone = g_strdup_printf("%s-%s-overlapped:%s-alone", name, other, other);
  g_autofree char *o_together = g_strdup_printf("%s-%s-overlapped:%s-together", name, other, other);
  g_autofree char *kernel_text = g_strdup_printf("%s: kernel time with / without", what);
  g_autofree char *other_text =
      g_strdup_printf("%s: the other load's time with / without the kernel", what);
  g_autofree char *loss_text = g_strdup_printf(
      "%s: kernel rate alone x (1 - 1 / kernel slowdown) / the other's rate while both run", what);
  const EmaMeasurement *ka, *kt, *oa, *ot;
  double other_rate_together;
  if ((ka = require(report, k_alone, error)) == NULL ||
      (kt = require(report, k_together, error)) == NULL ||
      (oa = require(report, o_alone, error)) == NULL ||
      (ot = require(report, o_together, error)) == NULL || !timed(ka, error) || !timed(kt, error) ||
      !timed(oa, error) || !timed(ot, error))
    return FALSE;
  *kernel_slowdown = kt->stats.median / ka->stats.median;
  *other_slowdown = ot->stats.median / oa->stats.median;
  other_rate_together = rate_of(oa) / *other_slowdown;
  *loss = rate_of(ka) * (1 - 1 / *kernel_slowdown) / other_rate_together;
  ema_report_add_derived(report, kernel_ratio, *kernel_slowdown, "ratio", kernel_text);
  ema_report_add_derived(report, other_ratio, *other_slowdown, "ratio", other_text);
  ema_report_add_derived(report, loss_name, *loss, "bytes per byte", loss_text);
  return TRUE;
}

static gboolean derive_interference(EmaReport *report, const EmaCalibrationRun *run,
                                    EmaInterferenceFigures *x, GError **error) {
  const EmaMeasurement *copies, *compute, *pipelined;
  if (!derive_case(report, EMA_CAL_LENDER_COPY, EMA_CAL_LENDER_COPY_OTHER,
                   "lender-kernel-slowdown-by-peer-copy", "peer-copy-slowdown-by-lender-kernel",
                   "lender-loss-per-pulled-byte",
                   "GPU1 HBM-streaming kernel vs GPU0 pulling from GPU1 (copy engine)",
                   &x->lender_kernel_by_peer_copy, &x->peer_copy_by_lender_kernel,
                   &x->lender_loss_per_pulled_byte, error) ||
      !derive_case(report, EMA_CAL_LENDER_READ, EMA_CAL_LENDER_READ_OTHER,
                   "lender-kernel-slowdown-by-direct-read", "direct-read-slowdown-by-lender-kernel",
                   "lender-loss-per-direct-read-byte",
                   "GPU1 HBM-streaming kernel vs a GPU0 kernel reading GPU1 memory",
                   &x->lender_kernel_by_direct_read, &x->direct_read_by_lender_kernel,
                   &x->lender_loss_per_direct_read_byte, error) ||
      !derive_case(report, EMA_CAL_BORROWER_COPY, EMA_CAL_BORROWER_COPY_OTHER,
                   "borrower-kernel-slowdown-by-incoming-copy",
                   "incoming-copy-slowdown-by-borrower-kernel", "borrower-loss-per-incoming-byte",
                   "GPU0 HBM-streaming kernel vs copies from GPU1 landing in GPU0",
                   &x->borrower_kernel_by_incoming_copy, &x->incoming_copy_by_borrower_kernel,
                   &x->borrower_loss_per_incoming_byte, error))
    return FALSE;
  if ((copies = require(report, EMA_CAL_OVERLAP_COPIES, error)) == NULL ||
      (compute = require(report, EMA_CAL_OVERLAP_COMPUTE, error)) == NULL ||
      (pipelined = require(report, EMA_CAL_OVERLAP_PIPELINED, error)) == NULL ||
      !timed(copies, error) || !timed(compute, error))
    return FALSE;
  x->overlap_chunks = run->overlap_chunks;
  x->overlap_chunk_bytes = run->overlap_chunk_bytes;
  x->overlap_copy_s = copies->stats.median;
  x->overlap_compute_s = compute->stats.median;
  x->overlap_pipelined_s = pipelined->stats.median;
  x->overlap_hidden_fraction = (x->overlap_copy_s + x->overlap_compute_s - x->overlap_pipelined_s) /
                               MIN(x->overlap_copy_s, x->overlap_compute_s);
  ema_report_add_derived(
      report, "prefetch-hidden-fraction", x->overlap_hidden_fraction, "fraction",
      "(copies alone + compute alone - pipelined) / min(copies, compute); 1 = fully hidden");
  return TRUE;
}

gboolean ema_calibration_derive(EmaReport *report, const EmaCalibrationRun *run,
                                EmaCalibrationFigures *f, GError **error) {
  memset(f, 0, sizeof *f);
  f->name = run->name;
  f->date = run->date;
  f->command = run->command;
  f->gpu_name = run->gpu_name;
  f->gpu_list = run->gpu_list;
  f->driver_version = run->driver_version;
  f->cuda_versions = run->cuda_versions;
  f->results_dir = run->results_dir;
  f->reference_name = run->reference_name;
  f->repeats = run->repeats;
  f->warmups = run->warmups;
  f->gpus = run->gpus;
  f->topology = run->topology;
  f->hbm_capacity = run->hbm_capacity;
  f->hbm_total = run->hbm_total;
  f->matrix_flops = run->matrix_flops;
  return derive_local(report, f, error) && derive_link(report, run, f, error) &&
         derive_host(report, f, error) && derive_vmm(report, run, &f->vmm, error) &&
         derive_interference(report, run, &f->interference, error);
}

/* The step-time keys from DIR/decode.csv, when there is one (decodefit.h),
 * added to REPORT's derived figures. */
static gboolean derive_step(EmaReport *report, const char *dir, EmaCalibrationFigures *f,
                            GError **error) {
  g_autofree char *path = g_build_filename(dir, "decode.csv", NULL);
  g_autoptr(GPtrArray) rows = NULL;
  EmaStepFigures *s = &f->step;
  memset(s, 0, sizeof *s);
  if (!g_file_test(path, G_FILE_TEST_EXISTS))
    return TRUE;
  rows = ema_decode_rows_read(path, error);
  if (rows == NULL || !ema_decode_fit(rows, ema_calibration_round(f->hbm_bandwidth),
                                      f->matrix_flops * f->matrix_efficiency, s, error))
    return FALSE;
  ema_report_add_derived(report, "decode-weight-rate", s->weight_rate, "B/s",
                         "median over the decode runs of weight bytes / the weight pass alone");
  ema_report_add_derived(report, "decode-hbm-efficiency", s->hbm_efficiency, "fraction",
                         "decode-weight-rate / hbm_bandwidth (gpu.hbm_efficiency)");
  ema_report_add_derived(report, "decode-kv-rate", s->kv_rate, "B/s",
                         "1 / slope of attention time against local KV bytes, all-local runs "
                         "of one model, least squares");
  ema_report_add_derived(report, "decode-kv-efficiency", s->kv_efficiency, "fraction",
                         "decode-kv-rate / decode-weight-rate (gpu.kv_efficiency)");
  ema_report_add_derived(report, "decode-layer-overhead", s->layer_overhead_s, "s",
                         "intercept of that line / layers (gpu.layer_overhead)");
  ema_report_add_derived(report, "decode-kv-max-rel-error", s->kv_max_rel_error, "fraction",
                         "largest |line - measured| / measured over its runs");
  if (s->p_fitted)
    ema_report_add_derived(report, "decode-roofline-p", s->roofline_p, "",
                           "p of (c^p + m^p)^(1/p) that fits the weight passes' times against "
                           "their batch, least squares on the relative error (gpu.roofline_p)");
  ema_report_add_derived(report, "decode-step-residual", s->step_residual_s, "s",
                         "median over those runs of step - (weights + attention as fitted)");
  ema_report_add_derived(report, "decode-step-overhead", s->step_overhead_s, "s",
                         "max(0, decode-step-residual) (gpu.step_overhead)");
  return TRUE;
}

/* ---- writing the results ------------------------------------------------------ */

static void print_figures(FILE *log, const EmaCalibrationFigures *f) {
  const EmaInterferenceFigures *x = &f->interference;
  const struct {
    const char *name;
    const EmaCopyFit *fit;
  } fits[] = {{"peer copy, push", &f->peer_push},
              {"peer copy, pull", &f->peer_pull},
              {"host to device", &f->h2d},
              {"device to host", &f->d2h}};
  fprintf(log, "\nfits (fixed + ramp (1 - exp(-n / ramp_bytes)) + n / bandwidth):\n");
  for (guint i = 0; i < G_N_ELEMENTS(fits); i++)
    fprintf(log,
            "  %-18s fixed %8.3f us, ramp %8.3f us over %10.3f MiB, %8.2f GB/s "
            "(largest error %.1f%%)\n",
            fits[i].name, fits[i].fit->fixed_s * 1e6, fits[i].fit->ramp_s * 1e6,
            fits[i].fit->ramp_bytes / 1048576.0, fits[i].fit->bandwidth / 1e9,
            100 * fits[i].fit->max_rel_error);
  fprintf(log,
          "interference (with / without) and HBM bytes lost per byte moved:\n"
          "  lender kernel vs peer pull     %.3f / pull %.3f; %.3f bytes per byte\n"
          "  lender kernel vs direct reads  %.3f / reads %.3f; %.3f bytes per byte\n"
          "  borrower kernel vs copies in   %.3f / copies %.3f; %.3f bytes per byte\n"
          "  prefetch beside compute: %.0f%% of the shorter hidden\n",
          x->lender_kernel_by_peer_copy, x->peer_copy_by_lender_kernel,
          x->lender_loss_per_pulled_byte, x->lender_kernel_by_direct_read,
          x->direct_read_by_lender_kernel, x->lender_loss_per_direct_read_byte,
          x->borrower_kernel_by_incoming_copy, x->incoming_copy_by_borrower_kernel,
          x->borrower_loss_per_incoming_byte, 100 * x->overlap_hidden_fraction);
  if (f->step.fitted)
    fprintf(log,
            "decode runs (decode.csv):\n"
            "  weight GEMVs %.3f TB/s (median of %u runs): %.1f%% of hbm_bandwidth\n"
            "  attention of %s (%u all-local runs): %.2f us per layer + KV at %.3f TB/s "
            "(%.1f%% of the weight rate; largest error %.1f%%)\n"
            "  step beyond weights + attention: %+.1f us (median)\n",
            f->step.weight_rate / 1e12, f->step.weight_runs, 100 * f->step.hbm_efficiency,
            f->step.model, f->step.kv_runs, f->step.layer_overhead_s * 1e6, f->step.kv_rate / 1e12,
            100 * f->step.kv_efficiency, 100 * f->step.kv_max_rel_error,
            f->step.step_residual_s * 1e6);
  if (f->step.p_fitted)
    fprintf(log,
            "  weight passes against batch (%u runs, up to %u sequences): roofline_p %.3g "
            "(largest error %.2f%%)\n",
            f->step.p_runs, f->step.p_max_batch, f->step.roofline_p, 100 * f->step.p_max_rel_error);
  else
    fprintf(log, "decode runs: none (no decode.csv): the step-time keys keep their defaults\n");
}

static void print_comparison(FILE *log, const EmaCalibrationFigures *f,
                             const EmaServerSpec *reference) {
  const EmaVmmFigures *v = &f->vmm;
  double slices = MAX(1, v->batch_slices);
  const struct {
    const char *key;
    double measured, reference;
    const char *unit;
    double scale;
  } rows[] = {
      {"gpu.hbm_bandwidth", f->hbm_bandwidth, reference->gpu.hbm_bandwidth, "GB/s", 1e-9},
      {"gpu.local_copy_bandwidth", f->local_copy_bandwidth, reference->gpu.local_copy_bandwidth,
       "GB/s", 1e-9},
      {"gpu.kernel_overhead", f->kernel_overhead_s, reference->gpu.kernel_overhead * 1e-9, "us",
       1e6},
      {"gpu.hbm_efficiency", f->step.hbm_efficiency, reference->gpu.hbm_efficiency, "%", 100},
      {"gpu.kv_efficiency", f->step.kv_efficiency, reference->gpu.kv_efficiency, "%", 100},
      {"gpu.layer_overhead", f->step.layer_overhead_s, reference->gpu.layer_overhead * 1e-9, "us",
       1e6},
      {"gpu.step_overhead", f->step.step_overhead_s, reference->gpu.step_overhead * 1e-9, "us",
       1e6},
      {"gpu.roofline_p", f->step.roofline_p, reference->gpu.roofline_p, "", 1},
      {"gpu.interference_outgoing", f->interference.lender_loss_per_pulled_byte,
       reference->gpu.interference_outgoing, "", 1},
      {"gpu.interference_incoming", f->interference.borrower_loss_per_incoming_byte,
       reference->gpu.interference_incoming, "", 1},
      {"link.bandwidth", f->peer_push.bandwidth, reference->link.bandwidth, "GB/s", 1e-9},
      {"link.duplex_bandwidth", f->duplex_bandwidth, reference->link.duplex_bandwidth, "GB/s",
       1e-9},
      {"link.direct_read_bandwidth", f->direct_read_bandwidth,
       reference->link.direct_read_bandwidth, "GB/s", 1e-9},
      {"link.latency", f->link_latency_s, reference->link.latency * 1e-9, "ns", 1e9},
      {"link.copy_fixed_cost", f->peer_push.fixed_s, reference->link.copy_fixed_cost * 1e-9, "us",
       1e6},
      {"link.copy_ramp_time", f->peer_push.ramp_s, reference->link.copy_ramp_time * 1e-9, "us",
       1e6},
      {"link.copy_ramp_bytes", f->peer_push.ramp_bytes, (double) reference->link.copy_ramp_bytes,
       "MiB", 1.0 / 1048576},
      {"host.h2d_bandwidth", f->h2d.bandwidth, reference->host.h2d_bandwidth, "GB/s", 1e-9},
      {"host.d2h_bandwidth", f->d2h.bandwidth, reference->host.d2h_bandwidth, "GB/s", 1e-9},
      {"host.duplex_bandwidth", f->host_duplex_bandwidth, reference->host.duplex_bandwidth, "GB/s",
       1e-9},
      {"host.copy_fixed_cost", (f->h2d.fixed_s + f->d2h.fixed_s) / 2,
       reference->host.copy_fixed_cost * 1e-9, "us", 1e6},
      {"vmm.create_cost", v->batch_create_s / slices, reference->vmm.create_cost * 1e-9, "us", 1e6},
      {"vmm.map_cost", (v->batch_map_s + v->batch_set_access_s) / slices,
       reference->vmm.map_cost * 1e-9, "us", 1e6},
      {"vmm.unmap_cost", (v->batch_unmap_s + v->batch_release_s) / slices,
       reference->vmm.unmap_cost * 1e-9, "us", 1e6},
  };
  fprintf(log, "\n%-28s %14s %14s %9s\n", "key", "measured", reference->name, "diff");
  for (guint i = 0; i < G_N_ELEMENTS(rows); i++) {
    double diff;
    if (!f->step.fitted && g_str_has_prefix(rows[i].key, "gpu.") &&
        (strstr(rows[i].key, "_efficiency") || strstr(rows[i].key, "layer_overhead") ||
         strstr(rows[i].key, "step_overhead")))
      continue; /* the step-time keys: no decode runs */
    if (!f->step.p_fitted && strcmp(rows[i].key, "gpu.roofline_p") == 0)
      continue; /* no run told p */
    diff = rows[i].reference != 0
               ? 100.0 * (rows[i].measured - rows[i].reference) / rows[i].reference
               : 0;
    fprintf(log, "%-28s %9.3f %-4s %9.3f %-4s %+8.1f%%\n", rows[i].key,
            rows[i].measured * rows[i].scale, rows[i].unit, rows[i].reference * rows[i].scale,
            rows[i].unit, diff);
  }
}

gboolean ema_calibration_write_results(EmaReport *report, const EmaCalibrationRun *run,
                                       const EmaCalibrationOutput *output, GError **error) {
  EmaCalibrationFigures figures;
  g_autoptr(EmaServerSpec) measured_against = NULL;
  if (!ema_calibration_derive(report, run, &figures, error))
    return FALSE;
  /* the matrix rate is the run's reference model's, whose matrix_flops provenance.txt holds (a
   * reference no longer found: roofline_p not fitted) */
  measured_against = ema_server_load(run->reference_name, NULL);
  figures.matrix_efficiency = measured_against ? measured_against->gpu.matrix_efficiency : 0;
  if (!derive_step(report, output->results_dir, &figures, error))
    return FALSE;
  figures.rederived_command = output->new_run ? NULL : output->rederived_command;
  /* a new run's measurements are kept though its model does not load (derived again once it
   * is mended); derived again, derived.csv is rewritten only once the model was (a model that
   * does not load left the earlier one beside a derived.csv of figures no model holds) */
  if (output->new_run) {
    if (!ema_report_write_csv(report, output->results_dir, error) ||
        !ema_calibration_run_save(run, output->results_dir, error) ||
        !ema_calibration_write(&figures, output->output, error))
      return FALSE;
  } else if (!ema_calibration_write(&figures, output->output, error) ||
             !ema_report_write_derived_csv(report, output->results_dir, error)) {
    return FALSE;
  }
  if (output->log == NULL)
    return TRUE;
  print_figures(output->log, &figures);
  if (output->reference)
    print_comparison(output->log, &figures, output->reference);
  fprintf(output->log, "\nwrote %s (loads as a server model) and %s in %s/\n", output->output,
          output->new_run ? "measurements.csv, samples.csv, derived.csv, provenance.txt"
                          : "derived.csv",
          output->results_dir);
  return TRUE;
}

const char *const ema_calibration_results_entries[] = {"measurements.csv", "samples.csv",
                                                       "derived.csv", PROVENANCE_FILE, NULL};

gboolean ema_calibration_claim_results(const char *dir, GError **error) {
  const EmaOutputClaimAs as = {.kind = EMA_CALIBRATE_OUTPUT_KIND, .option = "--results"};
  return ema_output_claim_dir_as(dir, &as, ema_calibration_results_entries, EMA_OUTPUT_CLAIM_CLEAR,
                                 error);
}

gboolean ema_calibration_from_results(const char *dir, const char *output, const char *command,
                                      const EmaServerSpec *reference, FILE *log, GError **error) {
  const EmaOutputClaimAs as = {.kind = EMA_CALIBRATE_OUTPUT_KIND, .option = "--from-results"};
  g_autoptr(EmaCalibrationRun) run = NULL;
  g_autoptr(EmaReport) report = NULL;
  g_autofree char *path = NULL;
  EmaCalibrationOutput out = {0};
  /* held before it is read: a calibration measuring into DIR now (its claim removed the files
   * read here; it writes them at its end) is refused, not mixed with, and a folder another kind
   * of command claimed keeps its derived.csv; no marker is written (the committed results) */
  if (!ema_output_hold_dir(dir, &as, error) || (run = ema_calibration_run_load(dir, error)) == NULL)
    return FALSE;
  report = ema_report_read_csv(dir, error);
  if (report == NULL)
    return FALSE;
  path = output ? g_strdup(output) : g_strdup_printf("hwmodels/calibration/%s.yaml", run->name);
  out.results_dir = dir;
  out.new_run = FALSE;
  out.output = path;
  out.rederived_command = command;
  out.reference = reference;
  out.log = log;
  return ema_calibration_write_results(report, run, &out, error);
}
