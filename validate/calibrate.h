/* calibrate.h: `ema-validate calibrate`, the measurements behind a server
 * model, on the GPU pair 0 (borrower) and 1 (lender) of this machine:
 *
 *   local       streaming reads and device-to-device copies on GPU0,
 *               4 KiB..max; an empty kernel; local dependent-load latency
 *   peer-read   a kernel on GPU0 reading GPU1 memory (peer access)
 *   peer-copy   cudaMemcpyPeerAsync 4 KiB..max, 0->1 and 1->0, issued on
 *               the source's stream (push) and on the destination's (pull),
 *               and both directions at once
 *   latency     dependent loads (pointer chase) GPU0 -> GPU1 and GPU0 local
 *   host-copy   pinned host <-> GPU0, each way and both at once
 *   vmm         cuMemCreate on GPU1, cuMemAddressReserve + cuMemMap +
 *               cuMemSetAccess on GPU0, cuMemUnmap + cuMemRelease +
 *               cuMemAddressFree: one 2 MiB slice, and a batch of slices
 *   interference  a lender's HBM kernel against a peer pulling from it (copy
 *               engine, direct loads); a borrower's HBM kernel against
 *               copies landing in it; a pipelined prefetch beside compute
 *
 * Each GPU measurement is event-timed: warm-ups, then the median of N
 * repeats, with the spread kept. Results: measurements.csv, samples.csv,
 * derived.csv and provenance.txt in the results directory (claimed as every
 * output folder is: ema_calibration_claim_results), and the server
 * model YAML; the figures are derived from the results by calderive.c, the
 * same code that `calibrate --from-results` uses. */
#pragma once

#include <glib.h>

#include "ema/hw/hwmodel.h"

G_BEGIN_DECLS

typedef struct {
  const char *name;        /* model name; NULL: from the GPU name and count ("h200x2") */
  const char *output;      /* YAML path; NULL: hwmodels/calibration/NAME.yaml */
  const char *results_dir; /* CSV directory; NULL: results/calibrate-NAME-DATE */
  const char *reference;   /* server model the unmeasured keys come from ("h200x2") */
  EmaTopology topology;
  gboolean quick;      /* smaller sizes and fewer repeats: a check that everything runs */
  guint repeats;       /* 0: 20 (quick: 5) */
  const char *command; /* the command line, for the provenance header */
} EmaCalibrateOptions;

/* Run every measurement and write the results. Needs two GPUs with peer
 * access (EMA_VALIDATE_ERROR_NO_DEVICE / _UNSUPPORTED otherwise); once they
 * are found, the results directory is claimed (ema_calibration_claim_results:
 * another command's folder is refused before anything is measured). */
gboolean ema_calibrate_run(const EmaCalibrateOptions *options, GError **error);

G_END_DECLS
