/* vmm.h: the costs of lending HBM with CUDA virtual memory management, as
 * the elastic pool would do it: the lender creates physical slices
 * (cuMemCreate), the borrower reserves an address range, maps the slices
 * into it and gives itself access (cuMemAddressReserve, cuMemMap,
 * cuMemSetAccess); returning them unmaps, releases and frees the range.
 * Host-side costs (these calls are synchronous), median of repeats, for
 * one slice and for a batch, plus the bandwidth of a kernel on the
 * borrower reading the borrowed batch. Part of `ema-validate calibrate`. */
#pragma once

#include <cuda_runtime_api.h>
#include <glib.h>

#include "kernels.h"
#include "report.h"

G_BEGIN_DECLS

typedef struct {
  int lender, borrower;
  guint single_repeats; /* one-slice cycles, after SINGLE_WARMUPS */
  guint batch_slices;
  guint batch_repeats; /* batch cycles, after one warm-up */
  guint read_repeats;  /* event-timed reads of the batch */
  cudaStream_t borrower_stream;
  const EmaKernelShape *borrower_shape;
  void *borrower_sink; /* 16 bytes on the borrower */
} EmaVmmSetup;

/* Measure and add every series to REPORT (group "vmm": vmm-STEP-1xSLICE,
 * vmm-batch-STEP-NxSLICE, vmm-direct-read-gpu1-gpu0-SIZE; calderive.c
 * turns them into figures); give the allocation granularities. Every
 * handle, mapping and reservation is released on every path. Errors:
 * EMA_VALIDATE_ERROR_CUDA, EMA_VALIDATE_ERROR_UNSUPPORTED (no VMM). */
gboolean ema_vmm_measure(const EmaVmmSetup *setup, EmaReport *report, guint64 *granularity_min,
                         guint64 *granularity_rec, GError **error);

G_END_DECLS
