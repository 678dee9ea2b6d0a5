/* hwmodel.h: the hardware model of one server as plain structs: its GPUs,
 * the GPU-to-GPU fabric and the host link. hwmodels/servers/<name>.yaml are
 * bound into these structs by hwmodel.c through the parameter tables; the
 * fabric model (fabric.h) and, later, the step-time model read them.
 *
 * Units: bytes, bytes per second, FLOP per second, nanoseconds. Every number
 * in the YAML files carries its provenance in a comment there. */
#pragma once

#include <glib.h>

#include "ema/core/params.h"
#include "ema/hw/offexec.h"

G_BEGIN_DECLS

/* The unit in which GPU memory is lent, mapped and counted: 2 MiB, the CUDA
 * VMM allocation granularity on every NVIDIA data-centre GPU. */
#define EMA_SLICE_BYTES (G_GUINT64_CONSTANT(2) << 20)

/* One measured point of a lender's cost of attention offload (offload.h):
 * its own steps take 1 + SLOWDOWN times as long while offloaded attention
 * reads SHARE of its HBM time. */
typedef struct {
  double share;
  double slowdown;
} EmaOffloadPoint;

/* One GPU. */
typedef struct {
  char *name;
  guint64 hbm_capacity;        /* usable HBM bytes */
  double hbm_scale;            /* what-if factor on hbm_capacity (2: the 2x oracle); 1 = as built */
  double hbm_bandwidth;        /* B/s a streaming-read kernel achieves on local HBM */
  double local_copy_bandwidth; /* device-to-device copy, (bytes read + bytes written) per s */
  double matrix_flops;         /* dense bf16/fp16 matrix FLOP/s */
  double matrix_flops_fp8;     /* dense FP8 matrix FLOP/s; 0: no FP8 tensor cores */
  gint64 kernel_overhead;      /* ns: fixed cost of one kernel (launch and drain) */
  /* LLM step-time model (see steptime.h); calibration sets these */
  double matrix_efficiency; /* fraction of matrix_flops that a step's matrix products reach */
  double hbm_efficiency;    /* fraction of hbm_bandwidth that a step's weight and KV reads reach */
  gint64 step_overhead;     /* ns: fixed cost of one engine step (scheduling, launches) */
  double kv_efficiency;     /* fraction of the weight-streaming rate that KV-cache reads reach */
  gint64 layer_overhead;    /* ns: fixed cost of one decoder layer in a step (its kernels' tails) */
  double roofline_p;        /* p of an operator's roofline (c^p + m^p)^(1/p) (steptime.h) */
  /* elastic pool (see pool.h): HBM bytes of this GPU's own work lost per
   * byte peers pull from its HBM (outgoing) or copy into it (incoming) */
  double interference_outgoing;
  double interference_incoming;
  /* operator profiles (profile.h): the name of hwmodels/profiles/<name>/,
   * NULL or "" for none (the step-time model then uses the roofline) */
  char *profile;
  /* attention offload (see offload.h): a lender's measured slowdown against
   * the share of its HBM time that offloaded attention reads, EmaOffloadPoint
   * by increasing share (empty: not known; offload is then unavailable) */
  GArray *offload_slowdown;
  /* the borrower's side: a partial's time beside a busy lender's steps / alone - 1 */
  double offload_partial_slowdown;
} EmaGpuSpec;

typedef enum {
  EMA_TOPOLOGY_DIRECT, /* every GPU pair has its own point-to-point link (full mesh) */
  EMA_TOPOLOGY_SWITCH, /* each GPU has one port into a non-blocking switch (NVSwitch) */
  EMA_TOPOLOGY_PCIE,   /* no GPU fabric: peer traffic crosses the GPUs' host links */
} EmaTopology;

/* The peer path. DIRECT: one GPU pair's link. SWITCH: one GPU's port into
 * the switch (a flow i->j uses i's egress and j's ingress). PCIE: the limits
 * of a peer transfer over PCIe; the bandwidth is shared on the host links. */
typedef struct {
  double bandwidth;             /* B/s per direction, copy engine */
  double duplex_bandwidth;      /* B/s both directions together (<= 2 x bandwidth) */
  double direct_read_bandwidth; /* B/s a kernel gets loading peer memory directly */
  gint64 latency;               /* ns: dependent load from peer memory */
  gint64 copy_fixed_cost;       /* ns: fixed cost of one copy-engine copy */
  gint64 copy_ramp_time;        /* ns: extra time a copy needs to reach full rate (asymptote) */
  guint64 copy_ramp_bytes;      /* bytes: size scale over which that ramp time builds up */
} EmaLinkSpec;

/* The host: one GPU's link to its memory (PCIe), and its CPU. */
typedef struct {
  double h2d_bandwidth;    /* B/s host -> device, pinned memory */
  double d2h_bandwidth;    /* B/s device -> host, pinned memory */
  double duplex_bandwidth; /* B/s both directions together */
  gint64 copy_fixed_cost;  /* ns: fixed cost of one host copy */
  /* the CPU's speed at a serving engine's host work (one thread: scheduling, launches), relative
   * to a DGX A100's (AMD EPYC 7742): an engine profile's CPU costs, fitted on one host, take
   * the ratio of that host's speed to this one's (ema_engine_costs_on_host) */
  double cpu_speed;
} EmaHostLinkSpec;

/* CUDA virtual-memory costs of lending one 2 MiB slice (driver calls). */
typedef struct {
  gint64 create_cost; /* ns: cuMemCreate on the lender */
  gint64 map_cost;    /* ns: cuMemMap + cuMemSetAccess on the borrower */
  gint64 unmap_cost;  /* ns: cuMemUnmap + cuMemRelease */
} EmaVmmSpec;

typedef struct {
  char *name;
  char *summary;
  gint64 gpus; /* number of GPUs */
  /* GPUs under one host (one OS image; 0: all of them): vLLM's custom all-reduce stays within
   * one, a TP group past it all-reduces through NCCL */
  gint64 gpus_per_node;
  EmaGpuSpec gpu;
  EmaTopology topology;
  EmaLinkSpec link;
  EmaHostLinkSpec host;
  EmaVmmSpec vmm;
  EmaOffloadExecSpec offload; /* how lenders run offloaded attention (offexec.h) */
} EmaServerSpec;

/* The HBM bytes a GPU has in the simulation: hbm_capacity x hbm_scale. */
guint64 ema_gpu_hbm_bytes(const EmaGpuSpec *gpu);

/* A lender's slowdown (its step's extra time over its step's time) while
 * offloaded attention reads SHARE (>= 0) of its HBM time: linear between
 * gpu.offload_slowdown's points and (0, 0), the last segment continued past
 * the last point. 0 without points. Monotone non-decreasing in SHARE. */
double ema_gpu_offload_slowdown(const EmaGpuSpec *gpu, double share);

/* Parameter tables that bind YAML to the structs above. */
extern const EmaParamTable ema_server_params;
extern const EmaParamTable ema_gpu_params;

/* Directory list searched for hwmodels/servers/<name>.yaml: EMA_HWMODEL_PATH
 * (colon-separated) first, then the built-in directory. */
GPtrArray *ema_hwmodel_search_path(void);
/* Path of the server model NAME, or NULL with an error that lists the known
 * names. */
char *ema_hwmodel_find(const char *name, GError **error);
/* Sorted names of all server models on the search path. */
GPtrArray *ema_hwmodel_list(void);

G_END_DECLS
