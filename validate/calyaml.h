/* calyaml.h: the figures that `ema-validate calibrate` derives from its
 * measurements, and the server-model YAML it writes from them
 * (hwmodels/calibration/<name>.yaml).
 *
 * The YAML has the schema of hwmodels/servers/NAME.yaml (the
 * ema_server_params table of libema: name, summary, gpus, gpu with its
 * interference_outgoing and _incoming, topology, link, host, vmm); the
 * step-time model's hbm_efficiency, kv_efficiency, layer_overhead and
 * step_overhead are written when decode runs were fitted (figures->step),
 * and left at their defaults otherwise, as is matrix_efficiency (not
 * measured). Every key has a
 * comment saying how it was measured; a provenance header gives the date,
 * GPUs, driver, CUDA and the exact command; and, as YAML comments under
 * names ready to become keys, follows what the schema cannot hold yet:
 * pull-copy costs, the VMM costs of each call, the interference ratios and
 * the prefetch/compute overlap. Values are rounded to 4 significant
 * digits; a value outside a bound that the schema enforces (duplex
 * bandwidths, direct reads no faster than copies, interference 0..10) is
 * clamped to the bound and the comment says so. ema_calibration_write()
 * loads what it wrote back through libema, so a file it accepts is a file
 * `ema-sim` accepts. Pure C. */
#pragma once

#include <glib.h>

#include "ema/hw/hwmodel.h"
#include "fit.h"

G_BEGIN_DECLS

/* CUDA virtual memory management costs (cuMem*), seconds, medians. The
 * schema's vmm keys take the batch figures per slice: create_cost =
 * cuMemCreate, map_cost = cuMemMap + cuMemSetAccess, unmap_cost =
 * cuMemUnmap + cuMemRelease. */
typedef struct {
  guint64 slice_bytes;          /* the slice: the allocation granularity, normally 2 MiB */
  guint64 granularity_min;      /* cuMemGetAllocationGranularity MINIMUM */
  guint64 granularity_rec;      /* ... RECOMMENDED */
  guint single_repeats;         /* repeats of the one-slice measurements */
  double create_s;              /* cuMemCreate of one slice on the lender */
  double release_s;             /* cuMemRelease of one unmapped slice */
  double reserve_s;             /* cuMemAddressReserve of one slice's range on the borrower */
  double address_free_s;        /* cuMemAddressFree of it */
  double map_s;                 /* cuMemMap of one slice */
  double set_access_s;          /* cuMemSetAccess (borrower read/write) on one slice */
  double unmap_s;               /* cuMemUnmap of one slice */
  guint batch_slices;           /* slices in the batch measurement */
  guint batch_repeats;          /* repeats of the batch */
  double batch_create_s;        /* all slices created one after another (total) */
  double batch_map_s;           /* all slices mapped into one reserved range (total) */
  double batch_set_access_s;    /* one cuMemSetAccess over the whole range */
  double batch_unmap_s;         /* every slice unmapped (total) */
  double batch_release_s;       /* every slice released (total) */
  double direct_read_bandwidth; /* kernel on the borrower reading the batch range */
} EmaVmmFigures;

/* Interference and overlap, ratios of median kernel or copy times. */
typedef struct {
  double lender_kernel_by_peer_copy;   /* lender's HBM kernel: with / without a peer pulling */
  double peer_copy_by_lender_kernel;   /* that pull: with / without the lender's kernel */
  double lender_kernel_by_direct_read; /* lender's kernel: with / without a peer kernel reading */
  double direct_read_by_lender_kernel; /* the peer's direct read: with / without */
  double borrower_kernel_by_incoming_copy; /* borrower's HBM kernel: with / without copies in */
  double incoming_copy_by_borrower_kernel; /* those copies: with / without the kernel */
  /* HBM bytes of the kernel's own work lost per byte moved by the other load
   * (the schema's gpu.interference_outgoing and _incoming): rate_alone
   * (1 - 1 / slowdown) / the other load's rate while both run */
  double lender_loss_per_pulled_byte;      /* a peer pulls with its copy engine */
  double lender_loss_per_direct_read_byte; /* a peer's kernel loads directly */
  double borrower_loss_per_incoming_byte;  /* copies land in the kernel's GPU */
  guint64 overlap_chunk_bytes;             /* pipelined prefetch: bytes per chunk */
  guint overlap_chunks;                    /* ... and chunks */
  double overlap_copy_s;                   /* all chunks copied, no compute */
  double overlap_compute_s;                /* all compute stages, no copies */
  double overlap_pipelined_s;              /* both, pipelined */
  double overlap_hidden_fraction;          /* (copy + compute - pipelined) / min(copy, compute) */
} EmaInterferenceFigures;

/* The step-time model's GPU keys (steptime.h), fitted to the synthetic
 * decode runs of a results directory (decode.csv, decodefit.h). */
typedef struct {
  gboolean fitted;            /* FALSE: no decode runs; the keys keep their defaults */
  char model[64];             /* the model of the attention line */
  guint layers;               /* its decoder layers */
  guint weight_runs;          /* decode runs whose weight pass gives the weight rate */
  double weight_rate;         /* median of weight bytes / weight-pass time, B/s */
  double hbm_efficiency;      /* weight_rate / hbm_bandwidth (the value written) */
  guint kv_runs;              /* all-local runs of MODEL on the attention line */
  double kv_rate;             /* 1 / the line's slope, B/s */
  double kv_efficiency;       /* kv_rate / weight_rate */
  double line_intercept_s;    /* attention time at no KV: layers x layer_overhead */
  double layer_overhead_s;    /* line_intercept_s / layers, at least 0 */
  gboolean intercept_clamped; /* the line crossed below 0: refitted through the origin */
  double kv_max_rel_error;    /* largest |line - measured| / measured over its runs */
  double step_residual_s;     /* median over those runs of step - fitted model */
  double step_overhead_s;     /* max(0, step_residual_s) */
  /* gpu.roofline_p fitted to the weight passes' times against their batch (decodefit.h); not
   * fitted (the key left to its default) where no run reaches the compute side */
  gboolean p_fitted;
  double roofline_p;
  guint p_runs, p_max_batch;
  double p_max_rel_error; /* largest |roofline - measured| / measured over those runs */
} EmaStepFigures;

typedef struct {
  /* provenance */
  const char *name;              /* model name, also the file name */
  const char *date;              /* ISO 8601, UTC */
  const char *command;           /* the exact command line */
  const char *gpu_name;          /* device name of the GPUs ("NVIDIA H200") */
  const char *gpu_list;          /* every GPU with its PCI bus id, one line */
  const char *driver_version;    /* NVIDIA driver ("580.159.04") */
  const char *cuda_versions;     /* "driver API 13.0, runtime 13.0" */
  const char *results_dir;       /* where the CSV files went */
  const char *reference_name;    /* server model the unmeasured keys come from */
  const char *rederived_command; /* `calibrate --from-results` that wrote it again, or NULL */
  guint repeats, warmups;        /* of the event-timed measurements */
  gint64 gpus;
  EmaTopology topology;

  /* gpu */
  guint64 hbm_capacity;        /* free HBM before the run (cudaMemGetInfo) */
  guint64 hbm_total;           /* total HBM (cudaMemGetInfo) */
  double hbm_bandwidth;        /* streaming-read kernel at the largest size */
  double local_copy_bandwidth; /* device-to-device copy, (read + written) / time */
  guint64 local_bytes;         /* the size of both */
  double kernel_overhead_s;    /* median of small read kernels (4 KiB-1 MiB) */
  double empty_kernel_s;       /* one empty kernel, event-timed */
  double matrix_flops;         /* not measured: from the reference model */
  double matrix_efficiency;    /* not measured: the reference model's (0: not written) */
  double local_latency_s;      /* dependent load from local HBM */

  /* link */
  EmaCopyFit peer_push; /* copies issued on the source GPU's stream, both directions */
  EmaCopyFit peer_pull; /* copies issued on the destination GPU's stream */
  guint64 peer_min_bytes, peer_max_bytes; /* the fitted sizes */
  double peer_copy_0to1, peer_copy_1to0;  /* largest push copy alone, B/s */
  double duplex_bandwidth;                /* both directions at once, largest size, sum */
  double direct_read_bandwidth; /* kernel on GPU0 reading GPU1 (cudaMalloc, peer access) */
  double link_latency_s;        /* dependent load GPU0 -> GPU1 memory */

  /* host */
  EmaCopyFit h2d, d2h; /* pinned host copies, F + n/W */
  guint64 host_min_bytes, host_max_bytes;
  double h2d_largest, d2h_largest; /* largest size alone, B/s */
  double host_duplex_bandwidth;    /* both directions at once, largest size, sum */

  EmaVmmFigures vmm;
  EmaInterferenceFigures interference;
  EmaStepFigures step;
} EmaCalibrationFigures;

/* VALUE rounded to the 4 significant digits every number of the YAML has. */
double ema_calibration_round(double value);

/* The default model name for COUNT GPUs named DEVICE_NAME: lower case,
 * a leading "nvidia " dropped, runs of characters other than letters and
 * digits turned into one '-', then "xCOUNT" ("NVIDIA H200", 2 -> "h200x2"). */
char *ema_calibration_default_name(const char *device_name, int count);

/* The YAML text. Newly allocated. */
char *ema_calibration_yaml(const EmaCalibrationFigures *figures);

/* Write the YAML to PATH (ema_file_output_ok; its directory is created), then load it
 * back through libema's server table to prove that it is a valid model. Errors:
 * EMA_VALIDATE_ERROR_ARGUMENT, EMA_VALIDATE_ERROR_IO, or libema's located EMA_CONFIG_ERROR. */
gboolean ema_calibration_write(const EmaCalibrationFigures *figures, const char *path,
                               GError **error);

G_END_DECLS
