/* run.c: an experiment's ops and decode scenarios on the GPUs (run.h).
 * One arena for the whole run holds peer access between the GPUs the ops
 * use; each op has an arena of its own for its buffers, streams and
 * events, released before the next op starts, on every path. */
#include "run.h"

#include <math.h>
#include <stdio.h>
#include <string.h>

#include <glib/gstdio.h>

#include "compare.h"
#include "cudacheck.h"
#include "decode.h"
#include "decodeplan.h"
#include "ema/core/file.h"
#include "ema/run/output.h"
#include "ema/hw/steptime.h"
#include "fill.h"
#include "gpu.h"
#include "kernels.h"
#include "report.h"

#define SINK_BYTES 64
#define PROVENANCE_GROUP "run"

/* One flow of an op, ready to enqueue. */
typedef struct {
  EmaFlowKind kind;
  int device; /* the GPU whose stream issues it */
  cudaStream_t stream;
  cudaEvent_t join; /* flows after the first: recorded on their stream when done */
  void *dst;
  const void *src;
  int src_device, dst_device; /* -1: host memory */
  guint64 bytes;
  const EmaKernelShape *shape; /* reads: the kernel's GPU */
  void *sink;                  /* reads: written only to keep the loads alive */
} Flow;

typedef struct {
  Flow *flows;
  guint n;
  cudaEvent_t fork; /* on the first flow's GPU */
} OpWork;

typedef struct {
  const EmaExperiment *experiment;
  const EmaRunOptions *options;
  EmaGpuArena *arena; /* peer access for the whole run */
  EmaKernelShape *shapes;
  int devices;
  gboolean *peer_enabled; /* [devices x devices] */
  EmaOpsReport *report;
  EmaReport *raw; /* measurements.csv, samples.csv, derived.csv */
} Run;

static int gpu_of(gint index) {
  return index == EMA_ENDPOINT_HOST ? -1 : (int) index;
}

static char *place_name(int device) {
  return device < 0 ? g_strdup("host") : g_strdup_printf("gpu%d", device);
}

/* ---- checks without a GPU ------------------------------------------------------ */

static gboolean decode_options(const EmaDecodeScenarioSpec *d, EmaDecodeOptions *o) {
  memset(o, 0, sizeof *o);
  o->batch = (guint) d->batch;
  o->context = (guint) d->context;
  o->remote_fraction = d->remote_fraction;
  o->mode = d->mode == EMA_DECODE_SCENARIO_PREFETCH ? EMA_DECODE_PREFETCH
            : d->mode == EMA_DECODE_SCENARIO_DIRECT ? EMA_DECODE_DIRECT
                                                    : EMA_DECODE_LOCAL;
  o->prefetch_depth = o->mode == EMA_DECODE_PREFETCH ? (guint) d->depth : 1;
  return TRUE;
}

/* Result I of EXPERIMENT's name: an op's, then a decode scenario's. */
static const char *result_name(const EmaExperiment *experiment, guint i) {
  guint ops = experiment->ops ? experiment->ops->len : 0;
  return i < ops ? g_array_index(experiment->ops, EmaOpSpec, i).name
                 : g_array_index(experiment->decode, EmaDecodeScenarioSpec, i - ops).name;
}

gboolean ema_run_check(const EmaExperiment *experiment, GError **error) {
  guint results = (experiment->ops ? experiment->ops->len : 0) +
                  (experiment->decode ? experiment->decode->len : 0);
  g_autoptr(GHashTable) names = g_hash_table_new(g_str_hash, g_str_equal);
  if (ema_experiment_is_serving(experiment)) {
    g_autofree char *quoted = ema_file_quote_cut(experiment->name, -1);
    g_set_error(error, EMA_VALIDATE_ERROR, EMA_VALIDATE_ERROR_ARGUMENT,
                "experiment '%s' serves tenants: ema-validate runs ops and decode scenarios only",
                quoted);
    return FALSE;
  }
  for (guint i = 0; i < results; i++) {
    const char *name = result_name(experiment, i);
    if (!g_hash_table_add(names, (gpointer) name)) {
      g_autofree char *quoted = ema_file_quote_cut(name, -1);
      g_set_error(error, EMA_VALIDATE_ERROR, EMA_VALIDATE_ERROR_ARGUMENT,
                  "the name '%s' is used twice: ema-validate needs each op and decode scenario "
                  "named once (its results are found by name)",
                  quoted);
      return FALSE;
    }
  }
  for (guint i = 0; experiment->ops && i < experiment->ops->len; i++) {
    const EmaOpSpec *op = &g_array_index(experiment->ops, EmaOpSpec, i);
    for (guint j = 0; j < op->flows->len; j++) {
      const EmaOpFlowSpec *f = &g_array_index(op->flows, EmaOpFlowSpec, j);
      if (f->kind == EMA_FLOW_READ && (f->bytes == 0 || f->bytes % 16 != 0)) {
        g_set_error(error, EMA_VALIDATE_ERROR, EMA_VALIDATE_ERROR_UNSUPPORTED,
                    "op %s, flow %u: the read kernel streams 16-byte loads: give a size that is a "
                    "multiple of 16 bytes (not %" G_GUINT64_FORMAT ")",
                    op->name, j + 1, f->bytes);
        return FALSE;
      }
    }
  }
  for (guint i = 0; experiment->decode && i < experiment->decode->len; i++) {
    const EmaDecodeScenarioSpec *d = &g_array_index(experiment->decode, EmaDecodeScenarioSpec, i);
    g_autoptr(EmaDecodePlan) plan = NULL;
    EmaDecodeOptions o;
    decode_options(d, &o);
    plan = ema_decode_plan_new(&d->model, &o, error);
    if (plan == NULL) {
      g_prefix_error(error, "decode scenario %s: ", d->name);
      return FALSE;
    }
  }
  return TRUE;
}

/* The GPUs the experiment needs: 1 + the largest index used. */
static int devices_needed(const EmaExperiment *experiment, const char **what) {
  int needed = 1;
  *what = NULL;
  for (guint i = 0; experiment->ops && i < experiment->ops->len; i++) {
    const EmaOpSpec *op = &g_array_index(experiment->ops, EmaOpSpec, i);
    for (guint j = 0; j < op->flows->len; j++) {
      const EmaOpFlowSpec *f = &g_array_index(op->flows, EmaOpFlowSpec, j);
      int most = MAX(gpu_of(f->src_index), gpu_of(f->dst_index)) + 1;
      if (most > needed) {
        needed = most;
        *what = op->name;
      }
    }
  }
  for (guint i = 0; experiment->decode && i < experiment->decode->len; i++) {
    const EmaDecodeScenarioSpec *d = &g_array_index(experiment->decode, EmaDecodeScenarioSpec, i);
    if ((d->mode != EMA_DECODE_SCENARIO_LOCAL || d->peer_pull > 0) && needed < 2) {
      needed = 2;
      *what = d->name;
    }
  }
  return needed;
}

/* ---- ops -------------------------------------------------------------------- */

static gboolean enqueue_flow(const Flow *f, GError **error) {
  if (!EMA_CUDA(f->device, error, cudaSetDevice(f->device)))
    return FALSE;
  if (f->kind == EMA_FLOW_READ)
    return EMA_CUDA(f->device, error,
                    ema_launch_stream_read(f->stream, f->shape, f->src, f->bytes, 1, f->sink));
  if (f->src_device >= 0 && f->dst_device >= 0 && f->src_device != f->dst_device)
    return EMA_CUDA(
        f->device, error,
        cudaMemcpyPeerAsync(f->dst, f->dst_device, f->src, f->src_device, f->bytes, f->stream));
  return EMA_CUDA(f->device, error,
                  cudaMemcpyAsync(f->dst, f->src, f->bytes, cudaMemcpyDefault, f->stream));
}

/* Fork the other flows off the first one's stream, enqueue every flow, join
 * them back. */
static gboolean work_op(gpointer data, GError **error) {
  OpWork *w = data;
  const Flow *first = &w->flows[0];
  gboolean ok = TRUE;
  if (w->n > 1)
    ok = EMA_CUDA(first->device, error, cudaSetDevice(first->device)) &&
         EMA_CUDA(first->device, error, cudaEventRecord(w->fork, first->stream));
  for (guint j = 1; ok && j < w->n; j++) {
    const Flow *f = &w->flows[j];
    ok = EMA_CUDA(f->device, error, cudaSetDevice(f->device)) &&
         EMA_CUDA(f->device, error, cudaStreamWaitEvent(f->stream, w->fork, 0)) &&
         enqueue_flow(f, error) && EMA_CUDA(f->device, error, cudaEventRecord(f->join, f->stream));
  }
  ok = ok && enqueue_flow(first, error);
  for (guint j = 1; ok && j < w->n; j++)
    ok = EMA_CUDA(first->device, error, cudaSetDevice(first->device)) &&
         EMA_CUDA(first->device, error, cudaStreamWaitEvent(first->stream, w->flows[j].join, 0));
  return ok;
}

/* Peer access from DEVICE to PEER, once for the whole run. */
static gboolean peer(Run *run, int device, int peer, GError **error) {
  gboolean *done;
  if (device < 0 || peer < 0 || device == peer)
    return TRUE;
  done = &run->peer_enabled[device * run->devices + peer];
  if (*done)
    return TRUE;
  if (!ema_gpu_peer_enable(run->arena, device, peer, error))
    return FALSE;
  *done = TRUE;
  return TRUE;
}

/* A buffer of BYTES on DEVICE (-1: pinned host memory); a source is filled
 * with non-zero data (on a stream of its own GPU). */
static gboolean buffer(Run *run, EmaGpuArena *arena, int device, guint64 bytes, gboolean source,
                       void **out, GError **error) {
  cudaStream_t stream;
  if (device < 0) {
    if (!ema_gpu_host_malloc(arena, bytes, out, error))
      return FALSE;
    memset(*out, source ? 0x5a : 0xa5, bytes);
    return TRUE;
  }
  if (!ema_gpu_malloc(arena, device, bytes, out, error))
    return FALSE;
  if (!source)
    return TRUE;
  return ema_gpu_stream_new(arena, device, &stream, error) &&
         EMA_CUDA(device, error, cudaSetDevice(device)) &&
         EMA_CUDA(device, error,
                  ema_launch_fill_bf16(stream, &run->shapes[device], *out, bytes / 2,
                                       EMA_SEED_CALIBRATION + 20 + (guint64) device)) &&
         EMA_CUDA(device, error, cudaStreamSynchronize(stream));
}

/* Set up FLOW for SPEC in ARENA. */
static gboolean prepare_flow(Run *run, EmaGpuArena *arena, const EmaOpFlowSpec *spec, Flow *flow,
                             GError **error) {
  int src = gpu_of(spec->src_index), dst = gpu_of(spec->dst_index);
  void *source = NULL;
  memset(flow, 0, sizeof *flow);
  flow->kind = spec->kind;
  flow->src_device = src;
  flow->dst_device = dst;
  flow->bytes = spec->bytes;
  /* the issuer: the source GPU (push), the GPU of a host copy, the reader */
  flow->device = spec->kind == EMA_FLOW_READ ? dst : src >= 0 ? src : dst;
  if (!ema_gpu_stream_new(arena, flow->device, &flow->stream, error) ||
      !ema_gpu_event_new(arena, flow->device, FALSE, &flow->join, error) ||
      !buffer(run, arena, src, spec->bytes, TRUE, &source, error))
    return FALSE;
  flow->src = source;
  if (spec->kind == EMA_FLOW_READ) {
    flow->shape = &run->shapes[dst];
    return peer(run, dst, src, error) && ema_gpu_malloc(arena, dst, SINK_BYTES, &flow->sink, error);
  }
  return peer(run, src, dst, error) && peer(run, dst, src, error) &&
         buffer(run, arena, dst, spec->bytes, FALSE, &flow->dst, error);
}

static void print_line(const char *kind, const char *name, const EmaSampleStats *stats,
                       double bandwidth) {
  g_autofree char *spread = g_strdup_printf("%.1f%%", ema_sample_spread_pct(stats));
  printf("  %-6s %-40s %12.3f us %10.2f GB/s  (spread %s)\n", kind, name, stats->median * 1e6,
         bandwidth / 1e9, spread);
  fflush(stdout);
}

static gboolean measure_op(Run *run, const EmaOpSpec *op, GError **error) {
  g_autoptr(EmaGpuArena) arena = ema_gpu_arena_new();
  g_autofree Flow *flows = g_new0(Flow, op->flows->len);
  g_autofree double *samples = g_new(double, run->options->repeats);
  OpWork work = {flows, op->flows->len, NULL};
  EmaOpResult result = {.name = op->name, .spec = op};
  const EmaOpFlowSpec *first = &g_array_index(op->flows, EmaOpFlowSpec, 0);
  g_autofree char *src = place_name(gpu_of(first->src_index));
  g_autofree char *dst = place_name(gpu_of(first->dst_index));
  const EmaMeasurement *m;
  gboolean ok = TRUE;
  double bytes = (double) ema_op_bytes(op);

  for (guint j = 0; ok && j < op->flows->len; j++)
    ok = prepare_flow(run, arena, &g_array_index(op->flows, EmaOpFlowSpec, j), &flows[j], error);
  ok = ok && ema_gpu_event_new(arena, flows[0].device, FALSE, &work.fork, error) &&
       ema_gpu_time(flows[0].device, flows[0].stream, run->options->warmups, run->options->repeats,
                    work_op, &work, samples, error);
  if (!ok) { /* let queued work finish before its buffers go; the error is already set */
    for (int g = 0; g < run->devices; g++)
      if (cudaSetDevice(g) == cudaSuccess)
        (void) cudaDeviceSynchronize();
    (void) cudaGetLastError();
  }
  ok = ema_gpu_arena_release(arena, error) && ok;
  if (!ok) {
    g_prefix_error(error, "op %s: ", op->name);
    return FALSE;
  }
  m = ema_report_add(run->raw, "op", op->name, op->flows->len > 1 ? "several" : src,
                     op->flows->len > 1 ? "several" : dst, ema_op_bytes(op), bytes, samples,
                     run->options->repeats);
  result.seconds_ns = ema_llround(m->stats.median * 1e9);
  result.bandwidth = bytes / m->stats.median;
  ema_compare_judge(&result, &op->expect, run->experiment, run->report);
  g_array_append_val(run->report->ops, result);
  run->report->simulated += result.seconds_ns;
  print_line("op", op->name, &m->stats, result.bandwidth);
  return TRUE;
}

/* ---- decode scenarios ---------------------------------------------------------- */

/* The bytes the simulator counts for a step (ops.c: the all-local
 * breakdown's bytes), so that a bandwidth means the same on both sides. */
static double model_bytes(const EmaExperiment *experiment, const EmaDecodeScenarioSpec *d,
                          double fallback) {
  g_autoptr(EmaStepModel) model = ema_step_model_new(&d->model, &experiment->server, 1, NULL);
  EmaStepBatch batch = {0};
  EmaStepBreakdown bd;
  if (model == NULL)
    return fallback;
  batch.decode_seqs = (guint64) d->batch;
  batch.decode_context = (double) d->batch * (double) d->context;
  batch.logits = (guint64) d->batch;
  ema_step_time(model, &batch, &bd);
  return bd.bytes;
}

static gboolean measure_decode(Run *run, const EmaDecodeScenarioSpec *d, const char *csv,
                               GError **error) {
  g_autoptr(EmaDecodePlan) plan = NULL;
  EmaDecodeOptions o;
  EmaDecodeRunOptions options = {run->options->repeats,
                                 run->options->warmups,
                                 TRUE,
                                 run->options->verify,
                                 csv,
                                 &run->experiment->server,
                                 d->peer_pull,
                                 d->peer_pull_mode == EMA_PEER_PULL_DIRECT};
  EmaDecodeResult measured = {0};
  EmaOpResult result = {.name = d->name, .spec = NULL};
  const EmaMeasurement *m;

  decode_options(d, &o);
  plan = ema_decode_plan_new(&d->model, &o, error);
  printf("decode scenario %s\n", d->name);
  if (plan == NULL || !ema_decode_run(plan, &d->model, &options, &measured, error)) {
    g_prefix_error(error, "decode scenario %s: ", d->name);
    ema_decode_result_clear(&measured);
    return FALSE;
  }
  m = ema_report_add(run->raw, "decode", d->name, "gpu0", "gpu0", (guint64) measured.bytes,
                     measured.bytes, (const double *) measured.step_samples->data,
                     measured.step_samples->len);
  if (d->peer_pull > 0) {
    g_autofree char *name = g_strdup_printf("%s-peer-pull-rate", d->name);
    ema_report_add_derived(run->raw, name, measured.pull_rate, "B/s",
                           d->peer_pull_mode == EMA_PEER_PULL_DIRECT
                               ? "GPU1 loading GPU0's memory (a streaming-read kernel on GPU1) "
                                 "while the steps were timed: bytes / time"
                               : "GPU1 pulling from GPU0 (back-to-back copies on a GPU1 stream) "
                                 "while the steps were timed: bytes / time");
    if (fabs(measured.pull_rate - d->peer_pull) > 0.1 * d->peer_pull)
      printf("  note: the scenario asks a pull of %.0f GB/s; the GPUs pulled %.0f GB/s (as fast "
             "as the link lets them)\n",
             d->peer_pull / 1e9, measured.pull_rate / 1e9);
  }
  result.seconds_ns = ema_llround(m->stats.median * 1e9);
  result.bandwidth = model_bytes(run->experiment, d, measured.bytes) / m->stats.median;
  ema_compare_judge(&result, &d->expect, run->experiment, run->report);
  g_array_append_val(run->report->ops, result);
  print_line("decode", d->name, &m->stats, measured.bytes / m->stats.median);
  ema_decode_result_clear(&measured);
  return TRUE;
}

/* ---- provenance and the run ------------------------------------------------------ */

static char *gpu_list(int devices, GError **error) {
  GString *list = g_string_new(NULL);
  for (int g = 0; g < devices; g++) {
    struct cudaDeviceProp prop;
    char bus[32] = "";
    if (!EMA_CUDA(g, error, cudaGetDeviceProperties(&prop, g)) ||
        !EMA_CUDA(g, error, cudaDeviceGetPCIBusId(bus, sizeof bus, g))) {
      g_string_free(list, TRUE);
      return NULL;
    }
    g_string_append_printf(list, "%sGPU%d %s (PCI %s, %d SMs, %.1f GiB)", g ? "; " : "", g,
                           prop.name, bus, prop.multiProcessorCount,
                           prop.totalGlobalMem / 1073741824.0);
  }
  return g_string_free(list, FALSE);
}

static gboolean write_provenance(const char *dir, const EmaExperiment *experiment,
                                 const EmaRunOptions *options, const char *date, const char *gpus,
                                 GError **error) {
  g_autoptr(GKeyFile) file = g_key_file_new();
  g_autofree char *path = g_build_filename(dir, "provenance.txt", NULL);
  g_autofree char *driver = ema_nvidia_driver_version();
  g_autofree char *cuda = ema_cuda_versions();
  g_autofree char *text = NULL;
  GError *local = NULL;
  g_key_file_set_comment(file, NULL, NULL,
                         " ema-validate run: where the measured summary.json comes from "
                         "(validate/run.h)",
                         NULL);
  g_key_file_set_string(file, PROVENANCE_GROUP, "date", date);
  g_key_file_set_string(file, PROVENANCE_GROUP, "command",
                        options->command ? options->command : "");
  g_key_file_set_string(file, PROVENANCE_GROUP, "experiment",
                        options->experiment_file ? options->experiment_file : "");
  g_key_file_set_string(file, PROVENANCE_GROUP, "server", experiment->server.name);
  g_key_file_set_string(file, PROVENANCE_GROUP, "gpus", gpus);
  g_key_file_set_string(file, PROVENANCE_GROUP, "driver", driver);
  g_key_file_set_string(file, PROVENANCE_GROUP, "cuda", cuda);
  g_key_file_set_integer(file, PROVENANCE_GROUP, "repeats", (int) options->repeats);
  g_key_file_set_integer(file, PROVENANCE_GROUP, "warmups", (int) options->warmups);
  g_key_file_set_string(file, PROVENANCE_GROUP, "timing",
                        "CUDA events, median of the repeats, each waited for before the next");
  g_key_file_set_string(file, PROVENANCE_GROUP, "ops",
                        "peer copies cudaMemcpyPeerAsync on the source GPU's stream (push); host "
                        "copies on the GPU's stream, pinned memory; reads: streaming-read kernel "
                        "on the destination GPU; flows of an op forked from and joined to the "
                        "first flow's stream");
  g_key_file_set_string(file, PROVENANCE_GROUP, "decode",
                        "ema-validate decode's synthetic step on GPU0 (remote KV on GPU1), CUDA "
                        "graphs; peer_pull: GPU1 copies out of GPU0 back to back meanwhile "
                        "(peer_pull_mode direct: a streaming-read kernel on GPU1 loads it)");
  text = g_key_file_to_data(file, NULL, NULL);
  if (!g_file_set_contents(path, text, -1, &local)) {
    g_set_error(error, EMA_VALIDATE_ERROR, EMA_VALIDATE_ERROR_IO, "cannot write %s: %s", path,
                local->message);
    g_error_free(local);
    return FALSE;
  }
  return TRUE;
}

/* libema's writers report G_FILE_ERRORs: as this program's IO errors. */
static gboolean output_ok(gboolean ok, GError **error) {
  if (!ok && error && *error && (*error)->domain != EMA_VALIDATE_ERROR) {
    GError *inner = *error;
    *error = NULL;
    g_set_error_literal(error, EMA_VALIDATE_ERROR, EMA_VALIDATE_ERROR_IO, inner->message);
    g_error_free(inner);
  }
  return ok;
}

const char *const ema_run_results_entries[] = {"decode.csv",  "provenance.txt", "measurements.csv",
                                               "samples.csv", "derived.csv",    NULL};

EmaOpsReport *ema_run_experiment(const EmaExperiment *experiment, const EmaRunOptions *options,
                                 const char *dir, GError **error) {
  g_autoptr(EmaOpsReport) report = g_new0(EmaOpsReport, 1);
  g_autoptr(EmaReport) raw = ema_report_new();
  g_autoptr(EmaGpuArena) arena = NULL;
  g_autoptr(GDateTime) now = g_date_time_new_now_utc();
  g_autofree char *date = g_date_time_format(now, "%Y-%m-%dT%H:%M:%SZ");
  g_autofree char *csv = g_build_filename(dir, "decode.csv", NULL);
  g_autofree char *gpus = NULL;
  g_autofree EmaKernelShape *shapes = NULL;
  g_autofree gboolean *peer_enabled = NULL;
  gint64 wall_start = g_get_monotonic_time();
  const char *needs_most = NULL;
  int count = 0, needed;
  Run run = {0};
  gboolean ok = TRUE;

  report->ops = g_array_new(FALSE, TRUE, sizeof(EmaOpResult));
  if (!ema_run_check(experiment, error) || !ema_cuda_device_count(&count, error))
    return NULL;
  needed = devices_needed(experiment, &needs_most);
  if (needed > count) {
    g_set_error(error, EMA_VALIDATE_ERROR, EMA_VALIDATE_ERROR_NO_DEVICE,
                "%s needs %d GPUs; this machine has %d CUDA device%s", needs_most, needed, count,
                count == 1 ? "" : "s");
    return NULL;
  }
  /* the folder is claimed as ema-sim's runs claim theirs (output.h), in this program's kind
   * (compare.h): what an earlier run wrote there goes, a user's file stays */
  if ((gpus = gpu_list(count, error)) == NULL ||
      !output_ok(
          ema_output_claim_run_dir_as(dir, &ema_run_output_claim, ema_run_results_entries, error),
          error))
    return NULL;

  shapes = g_new0(EmaKernelShape, count);
  peer_enabled = g_new0(gboolean, (gsize) count * count);
  for (int g = 0; ok && g < count; g++)
    ok = EMA_CUDA(g, error, ema_kernel_shape(g, &shapes[g]));
  if (!ok)
    return NULL;
  run.experiment = experiment;
  run.options = options;
  run.arena = arena = ema_gpu_arena_new();
  run.shapes = shapes;
  run.devices = count;
  run.peer_enabled = peer_enabled;
  run.report = report;
  run.raw = raw;

  printf("run %s on %s\n", experiment->name, gpus);
  for (guint i = 0; ok && experiment->ops && i < experiment->ops->len; i++)
    ok = measure_op(&run, &g_array_index(experiment->ops, EmaOpSpec, i), error);
  ok = ok && ema_gpu_arena_release(arena, error); /* peer access off before the decodes */
  for (guint i = 0; ok && experiment->decode && i < experiment->decode->len; i++)
    ok = measure_decode(&run, &g_array_index(experiment->decode, EmaDecodeScenarioSpec, i), csv,
                        error);
  if (!ok) {
    (void) ema_gpu_arena_release(arena, NULL);
    return NULL;
  }

  if (!output_ok(ema_output_write_resolved(dir, experiment, error), error) ||
      !output_ok(ema_output_write_ops_summary(dir, experiment, report,
                                              (double) (g_get_monotonic_time() - wall_start) / 1e6,
                                              error),
                 error) ||
      !ema_report_write_csv(raw, dir, error) ||
      !write_provenance(dir, experiment, options, date, gpus, error))
    return NULL;
  return g_steal_pointer(&report);
}
