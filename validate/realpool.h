/* realpool.h: `ema-validate pool`, the elastic pool on real GPUs. The
 * ledger, the policy calls and the checks of their plans are poolmem.h's
 * (the simulator's rules); this file gives them CUDA:
 *
 *   create     cuMemCreate of one 2 MiB slice, location = the lending GPU
 *   reserve    cuMemAddressReserve (a borrower's range grows by segments,
 *              each asked for right after the last)
 *   map        cuMemMap of one slice; set_access: cuMemSetAccess (read and
 *              write for the range's GPU) over each run of adjacent slices
 *   unmap      cuMemUnmap; release: cuMemRelease; unreserve: cuMemAddressFree
 *   fill       the fill kernel writes a block's pattern (on the borrower's
 *              pool stream, through the mapping: over NVLink for a remote
 *              block)
 *   copy       cudaMemcpyAsync on the borrower's pool stream (a reclaim's
 *              move; adjacent copies are merged); to_host: into a pinned
 *              ring; sync: cudaStreamSynchronize; check: read back and
 *              compare with the pattern
 * every call checked (EMA_CU / EMA_CUDA), every handle, mapping and range
 * released on every path.
 *
 * The scenario (ema_pool_scenario_target): GPU0 borrows, GPU1 lends; both
 * are tenants with blocks of the model's KV size, so in principle either
 * lends to the other. While it runs, GPU1 runs its own synthetic decode
 * steps (the decode plan and kernels of `decode`, all local, captured once
 * as a CUDA graph and replayed back to back from a thread of their own, a
 * few steps queued), each timed by CUDA events, with the gap to the step
 * before. Each tick (50 ms) gives both tenants their target and runs the
 * ledger's round. Before the scenario both GPUs are warmed up (a lend,
 * fill, copy, read back and release each way) and, unless told otherwise,
 * each GPU's free memory is cut down with a ballast allocation to its
 * region plus 1 GiB, so that the regions are all the memory there is.
 * The free memory of both GPUs (cudaMemGetInfo) is read before the pool
 * starts and after it has given everything back: they must be equal within
 * one slice, or the run fails.
 *
 * Outputs (DIR): ticks.csv (per tick: each GPU's target, blocks, remote
 * blocks, shortage, slices lent and borrowed, own slices mapped, staging;
 * the real time of the tick's borrows, returns and reclaims), events.csv
 * (every borrow, return, reclaim and own mapping with the wall time of its
 * calls, and for a reclaim the lender's steps during it), steps.csv (every
 * decode step of the lender: start, duration, gap), summary.json and the
 * printed summary. */
#pragma once

#include <glib.h>

#include "ema/hw/hwmodel.h"
#include "ema/hw/llm.h"
#include "ema/pool/policyspec.h"

G_BEGIN_DECLS

typedef struct {
  const EmaPolicySpec *policy; /* bound (poolmem.h's ema_pool_mem_policy_parse) */
  double seconds;              /* the scenario */
  double tick_seconds;
  const char *out_dir;
  const EmaLlmSpec *model; /* the tenants' KV blocks and step model; the lender's decode */
  guint batch, context;    /* the lender's decode */
  const EmaServerSpec *server;
  guint64 region_bytes[2]; /* GPU0 (the borrower), GPU1 (the lender) */
  gboolean ballast;        /* cut each GPU's free memory to its region + 1 GiB */
  gboolean dry_run;        /* no GPU: poolfake.h's backend, simulated time, no decode */
  const char *command;     /* for the summary */
} EmaRealPoolOptions;

/* The kind of command DIR's marker records (output.h, ema_output_claim_dir_kind): a pool's
 * folder is taken by no sweep, run or capture, and a pool takes none of theirs (it erased a
 * sweep's points). */
#define EMA_REALPOOL_OUTPUT_KIND "ema-validate pool"

/* Run the scenario and write DIR (claimed as EMA_REALPOOL_OUTPUT_KIND). Errors: no GPU pair with
 * VMM and peer access (EMA_VALIDATE_ERROR_NO_DEVICE / _UNSUPPORTED), a CUDA call
 * (_CUDA), data read back wrong (_VERIFY), memory not given back (_VERIFY:
 * "leak: ..."), the outputs (_IO). */
gboolean ema_realpool_run(const EmaRealPoolOptions *options, GError **error);

G_END_DECLS
