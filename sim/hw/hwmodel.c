/* hwmodel.c: parameter tables for the hardware model (hwmodel.h) and the
 * search for server models by name (through modelpath.h).
 *
 * Invariants kept by the tables' checks: duplex bandwidth is at least one
 * direction's and at most both directions'; a direct read is no faster than
 * a copy over the same link; a server has at least one GPU; a server of
 * more than one GPU has a link (one GPU may leave it out: it stays zero). */
#include "ema/hw/hwmodel.h"

#include "ema/core/modelpath.h"
#include "ema/core/units.h"
#include "ema/hw/profile.h"

#include <string.h>

#define GPU_FIELD(f) G_STRUCT_OFFSET(EmaGpuSpec, f)
#define LINK_FIELD(f) G_STRUCT_OFFSET(EmaLinkSpec, f)
#define HOST_FIELD(f) G_STRUCT_OFFSET(EmaHostLinkSpec, f)
#define SERVER_FIELD(f) G_STRUCT_OFFSET(EmaServerSpec, f)
#define VMM_FIELD(f) G_STRUCT_OFFSET(EmaVmmSpec, f)

/* Bandwidth limits: 1 MB/s to 100 TB/s; durations up to 1 s; sizes to 1 PiB. */
#define BW_MIN 1e6
#define BW_MAX 1e14
#define FIXED_MAX 1e9

static const EmaParam offload_point_params[] = {
    {"share", EMA_PARAM_FRACTION, G_STRUCT_OFFSET(EmaOffloadPoint, share),
     .flags = EMA_PARAM_REQUIRED, .min = 1e-6, .max = 1,
     .help = "offloaded KV bytes read per second / local_copy_bandwidth"},
    {"slowdown", EMA_PARAM_FRACTION, G_STRUCT_OFFSET(EmaOffloadPoint, slowdown),
     .flags = EMA_PARAM_REQUIRED, .min = 0, .max = 100,
     .help = "the lender's step time at that share / alone - 1"},
};

static const EmaParamTable offload_point_table = {"offload point", sizeof(EmaOffloadPoint),
                                                  offload_point_params,
                                                  EMA_PARAMS_N(offload_point_params), NULL};

static const EmaParam gpu_params[] = {
    {"name", EMA_PARAM_STRING, GPU_FIELD(name), .flags = EMA_PARAM_REQUIRED,
     .help = "GPU model name"},
    {"hbm_capacity", EMA_PARAM_SIZE, GPU_FIELD(hbm_capacity), .flags = EMA_PARAM_REQUIRED,
     .min = 1048576, .max = 1125899906842624.0, .help = "usable HBM per GPU"},
    {"hbm_scale", EMA_PARAM_DOUBLE, GPU_FIELD(hbm_scale), .default_value = "1", .min = 0.01,
     .max = 64,
     .help = "what-if factor on hbm_capacity: the simulated GPU has hbm_capacity x hbm_scale "
             "(2: the 2x oracle, a server with twice the memory; nothing else changes)"},
    {"hbm_bandwidth", EMA_PARAM_BANDWIDTH, GPU_FIELD(hbm_bandwidth), .flags = EMA_PARAM_REQUIRED,
     .min = BW_MIN, .max = BW_MAX, .help = "streaming-read bandwidth of local HBM"},
    {"local_copy_bandwidth", EMA_PARAM_BANDWIDTH, GPU_FIELD(local_copy_bandwidth),
     .flags = EMA_PARAM_REQUIRED, .min = BW_MIN, .max = BW_MAX,
     .help = "device-to-device copy bandwidth, bytes read + written"},
    {"matrix_flops", EMA_PARAM_FLOPS, GPU_FIELD(matrix_flops), .flags = EMA_PARAM_REQUIRED,
     .min = 1e9, .max = 1e17, .help = "dense bf16/fp16 matrix rate"},
    {"matrix_flops_fp8", EMA_PARAM_FLOPS, GPU_FIELD(matrix_flops_fp8), .flags = EMA_PARAM_OPTIONAL,
     .min = 1e9, .max = 1e17,
     .help = "dense FP8 matrix rate (absent: the GPU has no FP8 tensor cores)"},
    {"kernel_overhead", EMA_PARAM_DURATION, GPU_FIELD(kernel_overhead), .flags = EMA_PARAM_REQUIRED,
     .min = 0, .max = FIXED_MAX, .help = "fixed cost of one kernel (launch and drain)"},
    {"matrix_efficiency", EMA_PARAM_FRACTION, GPU_FIELD(matrix_efficiency),
     .default_value = "79.7%", .min = 0.01, .max = 1,
     .help = "fraction of matrix_flops reached by a step's matrix products (default: 788 of 989 "
             "TFLOP/s, a bf16 8192^3 product measured on H200)"},
    {"hbm_efficiency", EMA_PARAM_FRACTION, GPU_FIELD(hbm_efficiency), .default_value = "100%",
     .min = 0.01, .max = 1,
     .help = "fraction of hbm_bandwidth reached by a step's weight and KV reads (default: as fast "
             "as a streaming read; not yet calibrated)"},
    {"step_overhead", EMA_PARAM_DURATION, GPU_FIELD(step_overhead), .default_value = "0ns",
     .min = 0, .max = 1e9,
     .help = "fixed cost of one engine step beyond its kernels (default 0: not yet calibrated)"},
    {"kv_efficiency", EMA_PARAM_FRACTION, GPU_FIELD(kv_efficiency), .default_value = "100%",
     .min = 0.01, .max = 1,
     .help = "fraction of the weight-streaming rate (hbm_bandwidth x hbm_efficiency) that a "
             "step's KV-cache reads reach (default: the same; not yet calibrated)"},
    {"layer_overhead", EMA_PARAM_DURATION, GPU_FIELD(layer_overhead), .default_value = "0ns",
     .min = 0, .max = 1e9,
     .help = "fixed cost of one decoder layer in a step beyond its roofline (default 0: not yet "
             "calibrated)"},
    {"roofline_p", EMA_PARAM_DOUBLE, GPU_FIELD(roofline_p), .default_value = "1.25", .min = 1,
     .max = 64,
     .help = "p of an operator's roofline time (c^p + m^p)^(1/p), c and m its compute and memory "
             "times (default 1.25: fitted on Vidur's A100 and H100 GEMM profiles)"},
    {"interference_outgoing", EMA_PARAM_DOUBLE, GPU_FIELD(interference_outgoing),
     .default_value = "1", .min = 0, .max = 10,
     .help = "HBM bytes of own work lost per byte peers pull from this GPU (default 1: one for "
             "one; not yet calibrated)"},
    {"interference_incoming", EMA_PARAM_DOUBLE, GPU_FIELD(interference_incoming),
     .default_value = "1", .min = 0, .max = 10,
     .help = "HBM bytes of own work lost per byte copied into this GPU (default 1; not yet "
             "calibrated)"},
    {"profile", EMA_PARAM_STRING, GPU_FIELD(profile), .default_value = "",
     .help = "operator profiles in hwmodels/profiles/<profile>/ that time the GPU's steps "
             "(default none: the roofline)"},
    {"offload_slowdown", EMA_PARAM_LIST, GPU_FIELD(offload_slowdown), .table = &offload_point_table,
     .flags = EMA_PARAM_OPTIONAL,
     .help = "a lender's measured cost of attention offload: [{share, slowdown}, ...] by "
             "increasing share (its steps take 1 + slowdown times as long while offloaded "
             "attention reads that share of its HBM time; linear in between; absent: offload "
             "unavailable)"},
    {"offload_partial_slowdown", EMA_PARAM_FRACTION, GPU_FIELD(offload_partial_slowdown),
     .default_value = "0", .min = 0, .max = 100,
     .help = "how much longer a borrower's offloaded partial attention takes on a lender whose "
             "own requests are running than on an idle one (default 0: as alone)"},
};

/* The offload points rise: shares strictly, slowdowns never fall; a profile named is one there
 * is (checked here, not when a step first needs it: an experiment of data movements alone
 * never loads it). */
static gboolean check_gpu(gpointer object, const EmaNode *node, const char *path, GError **error) {
  const EmaGpuSpec *gpu = object;
  const GArray *points = gpu->offload_slowdown;
  GError *unknown = NULL;
  if (gpu->profile && *gpu->profile && !ema_profile_exists(gpu->profile, &unknown)) {
    const EmaNode *key = node ? ema_node_get(node, "profile") : NULL;
    g_autofree char *key_path = g_strdup_printf("%s%sprofile", path ? path : "", path ? "." : "");
    ema_node_error(error, EMA_CONFIG_ERROR_KEY, key ? key : node, key_path, "%s", unknown->message);
    g_error_free(unknown);
    return FALSE;
  }
  for (guint i = 1; points != NULL && i < points->len; i++) {
    const EmaOffloadPoint *a = &g_array_index(points, EmaOffloadPoint, i - 1);
    const EmaOffloadPoint *b = &g_array_index(points, EmaOffloadPoint, i);
    if (b->share <= a->share || b->slowdown < a->slowdown) {
      const EmaNode *list = node ? ema_node_get(node, "offload_slowdown") : NULL;
      g_autofree char *key_path =
          g_strdup_printf("%s%soffload_slowdown.%u", path ? path : "", path ? "." : "", i);
      ema_node_error(
          error, EMA_CONFIG_ERROR_RANGE,
          list && list->kind == EMA_NODE_SEQ && i < list->items->len ? list->items->pdata[i] : node,
          key_path,
          "share %g, slowdown %g after share %g, slowdown %g: the points' shares "
          "must rise and their slowdowns must not fall",
          b->share, b->slowdown, a->share, a->slowdown);
      return FALSE;
    }
  }
  return TRUE;
}

const EmaParamTable ema_gpu_params = {"gpu", sizeof(EmaGpuSpec), gpu_params,
                                      EMA_PARAMS_N(gpu_params), check_gpu};

static const char *const topology_names[] = {"direct", "switch", "pcie", NULL};

static const EmaParam link_params[] = {
    {"bandwidth", EMA_PARAM_BANDWIDTH, LINK_FIELD(bandwidth), .flags = EMA_PARAM_REQUIRED,
     .min = BW_MIN, .max = BW_MAX, .help = "per direction, copy engine"},
    {"duplex_bandwidth", EMA_PARAM_BANDWIDTH, LINK_FIELD(duplex_bandwidth),
     .flags = EMA_PARAM_REQUIRED, .min = BW_MIN, .max = 2 * BW_MAX,
     .help = "both directions at once, summed"},
    {"direct_read_bandwidth", EMA_PARAM_BANDWIDTH, LINK_FIELD(direct_read_bandwidth),
     .flags = EMA_PARAM_REQUIRED, .min = BW_MIN, .max = BW_MAX,
     .help = "a kernel loading peer memory directly"},
    {"latency", EMA_PARAM_DURATION, LINK_FIELD(latency), .flags = EMA_PARAM_REQUIRED, .min = 0,
     .max = FIXED_MAX, .help = "dependent load from peer memory"},
    {"copy_fixed_cost", EMA_PARAM_DURATION, LINK_FIELD(copy_fixed_cost),
     .flags = EMA_PARAM_REQUIRED, .min = 0, .max = FIXED_MAX, .help = "fixed cost of one copy"},
    {"copy_ramp_time", EMA_PARAM_DURATION, LINK_FIELD(copy_ramp_time), .default_value = "0ns",
     .min = 0, .max = FIXED_MAX, .help = "extra time a copy needs to reach full rate (asymptote)"},
    {"copy_ramp_bytes", EMA_PARAM_SIZE, LINK_FIELD(copy_ramp_bytes), .default_value = "1MiB",
     .min = 1, .max = 1099511627776.0, .help = "size over which the ramp time builds up"},
};

/* Whether KEY's value in the map NODE came from elsewhere than the map: a --set, or an
 * experiment's keys over a model's file (the value the user just gave, where it contradicts the
 * file's, is the one to point at). */
static gboolean given_over(const EmaNode *node, const char *key) {
  const EmaNode *value = node ? ema_node_get(node, key) : NULL;
  return value && value->file && node->file && strcmp(value->file, node->file) != 0;
}

/* Of the keys KEY and OTHER of NODE whose values disagree, KEY unless only OTHER was given over
 * the map. */
static const char *blamed_key(const EmaNode *node, const char *key, const char *other) {
  return given_over(node, other) && !given_over(node, key) ? other : key;
}

/* An error at the key BLAMED of NODE (at PATH). */
static void disagree(GError **error, const EmaNode *node, const char *path, const char *blamed,
                     const char *message) {
  const EmaNode *at = node ? ema_node_get(node, blamed) : NULL;
  g_autofree char *key_path = path ? g_strconcat(path, ".", blamed, NULL) : g_strdup(blamed);
  ema_node_error(error, EMA_CONFIG_ERROR_INVALID, at ? at : node, key_path, "%s", message);
}

static gboolean check_link(gpointer object, const EmaNode *node, const char *path, GError **error) {
  const EmaLinkSpec *link = object;
  g_autofree char *bandwidth = ema_units_format_bandwidth(link->bandwidth);
  if (link->duplex_bandwidth < link->bandwidth || link->duplex_bandwidth > 2 * link->bandwidth) {
    g_autofree char *duplex = ema_units_format_bandwidth(link->duplex_bandwidth);
    g_autofree char *twice = ema_units_format_bandwidth(2 * link->bandwidth);
    g_autofree char *message =
        g_strdup_printf("duplex_bandwidth %s must lie between bandwidth (%s) and twice it (%s)",
                        duplex, bandwidth, twice);
    disagree(error, node, path, blamed_key(node, "duplex_bandwidth", "bandwidth"), message);
    return FALSE;
  }
  if (link->direct_read_bandwidth > link->bandwidth) {
    g_autofree char *direct = ema_units_format_bandwidth(link->direct_read_bandwidth);
    g_autofree char *message = g_strdup_printf(
        "direct_read_bandwidth %s cannot exceed the link bandwidth (%s)", direct, bandwidth);
    disagree(error, node, path, blamed_key(node, "direct_read_bandwidth", "bandwidth"), message);
    return FALSE;
  }
  return TRUE;
}

static const EmaParamTable link_table = {"link", sizeof(EmaLinkSpec), link_params,
                                         EMA_PARAMS_N(link_params), check_link};

static const EmaParam host_params[] = {
    {"h2d_bandwidth", EMA_PARAM_BANDWIDTH, HOST_FIELD(h2d_bandwidth), .flags = EMA_PARAM_REQUIRED,
     .min = BW_MIN, .max = BW_MAX, .help = "host to device, pinned memory"},
    {"d2h_bandwidth", EMA_PARAM_BANDWIDTH, HOST_FIELD(d2h_bandwidth), .flags = EMA_PARAM_REQUIRED,
     .min = BW_MIN, .max = BW_MAX, .help = "device to host, pinned memory"},
    {"duplex_bandwidth", EMA_PARAM_BANDWIDTH, HOST_FIELD(duplex_bandwidth),
     .flags = EMA_PARAM_REQUIRED, .min = BW_MIN, .max = 2 * BW_MAX,
     .help = "both directions at once, summed"},
    {"copy_fixed_cost", EMA_PARAM_DURATION, HOST_FIELD(copy_fixed_cost),
     .flags = EMA_PARAM_REQUIRED, .min = 0, .max = FIXED_MAX,
     .help = "fixed cost of one host copy"},
    {"cpu_speed", EMA_PARAM_DOUBLE, HOST_FIELD(cpu_speed), .default_value = "1", .min = 0.05,
     .max = 20,
     .help = "the host CPU's speed at an engine's host work (one thread), relative to a DGX "
             "A100's AMD EPYC 7742: engine CPU costs fitted on another host scale by the ratio "
             "(absent: 1, that host's)"},
};

static gboolean check_host(gpointer object, const EmaNode *node, const char *path, GError **error) {
  const EmaHostLinkSpec *host = object;
  double one_way = MAX(host->h2d_bandwidth, host->d2h_bandwidth);
  if (host->duplex_bandwidth < one_way ||
      host->duplex_bandwidth > host->h2d_bandwidth + host->d2h_bandwidth) {
    g_autofree char *duplex = ema_units_format_bandwidth(host->duplex_bandwidth);
    g_autofree char *faster = ema_units_format_bandwidth(one_way);
    g_autofree char *sum = ema_units_format_bandwidth(host->h2d_bandwidth + host->d2h_bandwidth);
    g_autofree char *message = g_strdup_printf(
        "duplex_bandwidth %s must lie between the faster direction (%s) and the sum of both (%s)",
        duplex, faster, sum);
    const char *blamed = given_over(node, "duplex_bandwidth") ? "duplex_bandwidth"
                         : given_over(node, "h2d_bandwidth")  ? "h2d_bandwidth"
                         : given_over(node, "d2h_bandwidth")  ? "d2h_bandwidth"
                                                              : "duplex_bandwidth";
    disagree(error, node, path, blamed, message);
    return FALSE;
  }
  return TRUE;
}

static const EmaParam vmm_params[] = {
    {"create_cost", EMA_PARAM_DURATION, VMM_FIELD(create_cost), .default_value = "15us", .min = 0,
     .max = FIXED_MAX,
     .help = "cuMemCreate of one 2 MiB slice on the lender (default: an estimate until "
             "calibrated)"},
    {"map_cost", EMA_PARAM_DURATION, VMM_FIELD(map_cost), .default_value = "25us", .min = 0,
     .max = FIXED_MAX,
     .help = "cuMemMap + cuMemSetAccess of one slice for the borrower (default: an estimate)"},
    {"unmap_cost", EMA_PARAM_DURATION, VMM_FIELD(unmap_cost), .default_value = "15us", .min = 0,
     .max = FIXED_MAX, .help = "cuMemUnmap + cuMemRelease of one slice (default: an estimate)"},
};

static const EmaParamTable vmm_table = {"vmm", sizeof(EmaVmmSpec), vmm_params,
                                        EMA_PARAMS_N(vmm_params), NULL};

static const EmaParamTable host_table = {"host link", sizeof(EmaHostLinkSpec), host_params,
                                         EMA_PARAMS_N(host_params), check_host};

static const EmaParam server_params[] = {
    {"name", EMA_PARAM_STRING, SERVER_FIELD(name), .flags = EMA_PARAM_REQUIRED,
     .help = "short name of the server model"},
    {"summary", EMA_PARAM_STRING, SERVER_FIELD(summary), .default_value = "",
     .help = "one line for listings"},
    {"gpus", EMA_PARAM_INT, SERVER_FIELD(gpus), .flags = EMA_PARAM_REQUIRED, .min = 1, .max = 1024,
     .help = "number of GPUs"},
    {"gpus_per_node", EMA_PARAM_INT, SERVER_FIELD(gpus_per_node), .flags = EMA_PARAM_OPTIONAL,
     .min = 1, .max = 1024,
     .help = "GPUs under one host (a GB200 NVL72 compute tray's 4): a TP group of more runs "
             "NCCL's all-reduce, vLLM's custom one being a host's (absent: all GPUs in one host)"},
    {"gpu", EMA_PARAM_STRUCT, SERVER_FIELD(gpu), .table = &ema_gpu_params,
     .flags = EMA_PARAM_REQUIRED, .help = "the GPU (all GPUs of a server are alike)"},
    {"topology", EMA_PARAM_ENUM, SERVER_FIELD(topology), .flags = EMA_PARAM_REQUIRED,
     .choices = topology_names,
     .help = "direct: a link per GPU pair; switch: a port per GPU into a switch; pcie: no GPU "
             "fabric"},
    {"link", EMA_PARAM_STRUCT, SERVER_FIELD(link), .table = &link_table,
     .flags = EMA_PARAM_OPTIONAL,
     .help = "peer path: a pair's link (direct), a GPU's switch port (switch), PCIe peer limits "
             "(required with more than one GPU)"},
    {"host", EMA_PARAM_STRUCT, SERVER_FIELD(host), .table = &host_table,
     .flags = EMA_PARAM_REQUIRED, .help = "each GPU's link to host memory"},
    {"vmm", EMA_PARAM_STRUCT, SERVER_FIELD(vmm), .table = &vmm_table,
     .help = "virtual-memory costs of lending a slice"},
    {"offload", EMA_PARAM_STRUCT, SERVER_FIELD(offload), .table = &ema_offload_exec_params,
     .help = "how lenders run offloaded attention: execution model, priority, trigger path, "
             "the partial's spread (offexec.h)"},
};

/* A server of more than one GPU needs its peer path; one GPU has none. */
static gboolean check_server(gpointer object, const EmaNode *node, const char *path,
                             GError **error) {
  const EmaServerSpec *server = object;
  const EmaNode *link = node ? ema_node_get(node, "link") : NULL;
  /* `link: ~` (or `--set server.link=~`) leaves it as absent as no key */
  if (server->gpus > 1 && (link == NULL || link->kind != EMA_NODE_MAP)) {
    g_autofree char *key_path = path ? g_strconcat(path, ".link", NULL) : g_strdup("link");
    ema_node_error(error, EMA_CONFIG_ERROR_KEY, link ? link : node, key_path,
                   "missing required key (a server of %" G_GINT64_FORMAT
                   " GPUs needs its peer link; only a one-GPU server may leave it out)",
                   server->gpus);
    return FALSE;
  }
  if (server->gpus_per_node > 0 && server->gpus % server->gpus_per_node != 0) {
    const EmaNode *key = node ? ema_node_get(node, "gpus_per_node") : NULL;
    g_autofree char *key_path =
        path ? g_strconcat(path, ".gpus_per_node", NULL) : g_strdup("gpus_per_node");
    ema_node_error(error, EMA_CONFIG_ERROR_INVALID, key ? key : node, key_path,
                   "%" G_GINT64_FORMAT " does not divide the server's %" G_GINT64_FORMAT " GPUs",
                   server->gpus_per_node, server->gpus);
    return FALSE;
  }
  return TRUE;
}

const EmaParamTable ema_server_params = {"server", sizeof(EmaServerSpec), server_params,
                                         EMA_PARAMS_N(server_params), check_server};

guint64 ema_gpu_hbm_bytes(const EmaGpuSpec *gpu) {
  return (guint64) ((double) gpu->hbm_capacity * gpu->hbm_scale);
}

/* ---- finding models ---------------------------------------------------- */

#define SERVERS_DIR "servers"
#define SERVERS_ENV "EMA_HWMODEL_PATH"

GPtrArray *ema_hwmodel_search_path(void) {
  return ema_model_dir_search_path(SERVERS_DIR, SERVERS_ENV);
}

GPtrArray *ema_hwmodel_list(void) {
  return ema_model_dir_list(SERVERS_DIR, SERVERS_ENV);
}

char *ema_hwmodel_find(const char *name, GError **error) {
  return ema_model_dir_find(SERVERS_DIR, SERVERS_ENV, name, "hardware model", error);
}

double ema_gpu_offload_slowdown(const EmaGpuSpec *gpu, double share) {
  const GArray *points = gpu->offload_slowdown;
  EmaOffloadPoint a = {0, 0}, b;
  g_return_val_if_fail(share >= 0, 0);
  if (points == NULL || points->len == 0)
    return 0;
  for (guint i = 0; i < points->len; i++) {
    b = g_array_index(points, EmaOffloadPoint, i);
    if (share <= b.share || i + 1 == points->len)
      break;
    a = b;
  }
  return a.slowdown + (b.slowdown - a.slowdown) * (share - a.share) / (b.share - a.share);
}
