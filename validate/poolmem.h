/* poolmem.h: the real memory behind the pool of `ema-validate pool`. The
 * pool itself is libema's (ema/pool/core.h: the ledger, the views the
 * policies get, the plan checks, reclaim, migration, eviction and the event
 * log, as in the simulator); this is its backend (ema/pool/backend.h) over
 * a table of device operations: the CUDA one (realpool.c) turns them into
 * cuMemCreate / cuMemAddressReserve / cuMemMap / cuMemSetAccess /
 * cuMemUnmap / cuMemRelease calls and copies on a stream; a recording one
 * (poolfake.h) emulates them on the CPU for the tests and `pool --dry-run`.
 *
 * Real memory, per GPU g (S = EMA_SLICE_BYTES, B = g's block size):
 *   home range   a reservation of g's region (slices x S) on g; its first
 *                ceil(local blocks x B / S) + staging slices are mapped to
 *                physical slices created on g, as its own blocks need them
 *                (and released when they no longer do);
 *   borrowed     segments reserved on g as its borrowing grows (each asked
 *                for right after the last, so they are usually one range);
 *                each slice lent to g is created on the lender (location =
 *                lender), mapped at a free slot and made accessible to g;
 *                returned or reclaimed, it is unmapped and released.
 * A tenant's blocks are packed in order: local block k at byte k x B of its
 * home range; its blocks on lender j at byte k x B of the slices j lends
 * it, in the order they were lent (a block may straddle two slices). New
 * blocks go to the end, freed ones come off the end (backend.h), so empty
 * slices are the last ones of a lender's list; a return or reclaim takes
 * slices off the end. Each new block is written (a pattern that identifies
 * it), and a reclaim that moves blocks copies them on the borrower's
 * stream, waits, and checks the first and last moved block before the
 * slices go.
 *
 * Everything is synchronous: an action is done (or undone) when its call
 * returns, so the simulator's transient states (slices being mapped or
 * coming back) are always zero in the views. An action that fails half-way
 * undoes what it did (no handle, mapping or slot left) and leaves the
 * ledger as it was; the error stops the run, and ema_pool_mem_teardown()
 * releases whatever exists. What this side does not have: the simulator's
 * engines (blocks are demand targets per tick, ema_pool_core_tick), peer
 * swap (preempt: swap-peer), and step times (the caller gives each GPU's
 * last step). A drop or a move to host frees exactly the blocks on the
 * lender (an engine would preempt whole requests). */
#pragma once

#include <glib.h>

#include "ema/hw/hwmodel.h"
#include "ema/hw/steptime.h"
#include "ema/policy.h"
#include "ema/pool/core.h"
#include "ema/pool/policyspec.h"
#include "ema/pool/registry.h"

G_BEGIN_DECLS

/* What real memory is made of. DATA is the device table's. DEVICE is the
 * GPU that owns the memory (create, release), the address range (reserve,
 * unreserve, map, unmap, set_access: access is granted to that GPU) or the
 * stream (fill, copy, to_host, sync, check). Addresses and handles are
 * opaque 64-bit values. Data operations are asynchronous on DEVICE's
 * stream until sync; element i of a fill or check is the bf16 value
 * ema_fill_bf16(SEED, INDEX + i) (fill.h). Each returns FALSE with an
 * error when it fails and has then done nothing. */
typedef struct {
  gboolean (*create)(gpointer data, guint device, guint64 *handle, GError **error);
  gboolean (*release)(gpointer data, guint device, guint64 handle, GError **error);
  gboolean (*reserve)(gpointer data, guint device, guint64 bytes, guint64 hint, guint64 *va,
                      GError **error);
  gboolean (*unreserve)(gpointer data, guint device, guint64 va, guint64 bytes, GError **error);
  gboolean (*map)(gpointer data, guint device, guint64 va, guint64 handle, GError **error);
  gboolean (*unmap)(gpointer data, guint device, guint64 va, GError **error);
  gboolean (*set_access)(gpointer data, guint device, guint64 va, guint64 bytes, GError **error);
  gboolean (*fill)(gpointer data, guint device, guint64 va, guint64 bytes, guint64 seed,
                   guint64 index, GError **error);
  gboolean (*copy)(gpointer data, guint device, guint64 dst, guint64 src, guint64 bytes,
                   GError **error);
  gboolean (*to_host)(gpointer data, guint device, guint64 src, guint64 bytes, GError **error);
  gboolean (*sync)(gpointer data, guint device, GError **error);
  /* read BYTES at VA now (after a sync) and compare; a difference is
   * EMA_VALIDATE_ERROR_VERIFY */
  gboolean (*check)(gpointer data, guint device, guint64 va, guint64 bytes, guint64 seed,
                    guint64 index, GError **error);
} EmaPoolDevice;

typedef struct {
  guint n_gpus;
  const EmaServerSpec *server; /* for the views and the step-cost view */
  const EmaPolicySpec *policy; /* names checked against the registry by ema_pool_mem_new */
  const EmaPoolDevice *device;
  gpointer device_data;
  guint64 grow_slices;   /* a borrower's range grows by at least this many slots (0: 256) */
  guint context_tokens;  /* tokens per sequence, for running/waiting (0: 2000) */
  gboolean write_blocks; /* write every new block and check moved ones */
} EmaPoolMemConfig;

/* Real resources alive now. */
typedef struct {
  guint64 handles, mappings, reservations;
} EmaPoolMemLive;

typedef struct _EmaPoolMem EmaPoolMem;

/* A pool over CONFIG (copied; the specs and the device table must outlive
 * it), logging its events. Errors: an unknown policy name. */
EmaPoolMem *ema_pool_mem_new(const EmaPoolMemConfig *config, GError **error);
/* Release quietly whatever real resources remain (ema_pool_mem_teardown),
 * then free. */
void ema_pool_mem_free(EmaPoolMem *pool);
G_DEFINE_AUTOPTR_CLEANUP_FUNC(EmaPoolMem, ema_pool_mem_free)

/* GPU has a tenant with a region of SLICES, blocks of BLOCK_BYTES, and
 * STEP_MODEL (may be NULL: no prefetch decisions; borrowed, must outlive
 * the pool; tp 1). */
void ema_pool_mem_add_tenant(EmaPoolMem *pool, guint gpu, guint64 slices, guint64 block_bytes,
                             const EmaStepModel *step_model);
/* GPU has no tenant: it lends SLICES. */
void ema_pool_mem_add_idle_gpu(EmaPoolMem *pool, guint gpu, guint64 slices);
/* Reserve the home ranges and run the policies' init hooks at NOW. */
gboolean ema_pool_mem_start(EmaPoolMem *pool, EmaTime now, GError **error);

/* One round at NOW, TARGETS[g] the blocks g's tenant wants (ignored for
 * GPUs without one): ema_pool_core_tick. FALSE with the first error (the
 * ledger is consistent; stop the run). */
gboolean ema_pool_mem_tick(EmaPoolMem *pool, EmaTime now, const guint64 *targets, GError **error);
/* The duration of GPU's tenant's last step (for its view). */
void ema_pool_mem_set_last_step(EmaPoolMem *pool, guint gpu, EmaTime duration);

/* The end of a run: every tenant gives back all its blocks, staging goes,
 * every lent slice is returned, every reservation freed. Records RETURN
 * events. Keeps going after an error (the first is reported). */
gboolean ema_pool_mem_drain(EmaPoolMem *pool, GError **error);
/* Release every real resource that exists, whatever the ledger says
 * (unmap, release, unreserve), in reverse order of use; the ledger is then
 * empty. Keeps going after an error (the first is reported). */
gboolean ema_pool_mem_teardown(EmaPoolMem *pool, GError **error);

/* The pool's invariants (ema_pool_core_check), with the real resources
 * matching the ledger: each lent slice one handle and one mapping, each
 * GPU's mapped own slices its blocks' slices plus staging. */
gboolean ema_pool_mem_check(const EmaPoolMem *pool, GError **error);

/* The pool inside (for tests that drive it or break it on purpose). */
EmaPoolCore *ema_pool_mem_core(EmaPoolMem *pool);
const EmaPoolCoreStats *ema_pool_mem_stats(const EmaPoolMem *pool);
EmaPoolMemLive ema_pool_mem_live(const EmaPoolMem *pool);
/* Events so far (EmaPoolEvent), oldest first. */
const GArray *ema_pool_mem_events(const EmaPoolMem *pool);
/* The view the policies get now (valid until the next call). */
const EmaPoolView *ema_pool_mem_view(EmaPoolMem *pool);
guint64 ema_pool_mem_slices_lent(const EmaPoolMem *pool, guint gpu);
guint64 ema_pool_mem_slices_borrowed(const EmaPoolMem *pool, guint gpu);
guint64 ema_pool_mem_blocks_used(const EmaPoolMem *pool, guint gpu);
guint64 ema_pool_mem_blocks_remote(const EmaPoolMem *pool, guint gpu);
guint64 ema_pool_mem_blocks_short(const EmaPoolMem *pool, guint gpu);
guint64 ema_pool_mem_own_mapped(const EmaPoolMem *pool, guint gpu);
guint64 ema_pool_mem_staging(const EmaPoolMem *pool, guint gpu);
/* Segments reserved for GPU's borrowed slices, and their slots. */
guint ema_pool_mem_segments(const EmaPoolMem *pool, guint gpu, guint64 *slots);

/* The seed whose stream starts where SEED's element INDEX is:
 * ema_fill_bf16(ema_pool_mem_fill_seed(SEED, INDEX), i) ==
 * ema_fill_bf16(SEED, INDEX + i) for every i (fill.h), so that a device
 * can write the INDEX-th part of a block with the plain fill kernel. */
guint64 ema_pool_mem_fill_seed(guint64 seed, guint64 index);

/* Bind --policy TEXT: a composition's name (`ema`, `remote-direct`,
 * `static`, ...) or a YAML map of the `policy` section (`{borrow:
 * neighbour, reclaim: migrate}`), into SPEC (zeroed first; clear it with
 * ema_params_clear(&ema_policy_spec_params, SPEC)). */
gboolean ema_pool_mem_policy_parse(const char *text, EmaPolicySpec *spec, GError **error);

/* ---- the scenario of `ema-validate pool` ----------------------------------- */

/* Two tenants over SECONDS: GPU0 (the borrower, region R0) and GPU1 (the
 * lender, region R1), blocks wanted at time T (fractions of SECONDS):
 *   GPU0: 0.5 R0 until 0.1 (warm); ramps to 2.5 R0 by 0.4 (ramp: it
 *         borrows); holds to 0.5 (hold); 0.7 R0 until 0.8 (finish, jump:
 *         requests finished, room in its own memory); 1.5 R0 until 0.9
 *         (regrow: it borrows again); then 0.2 R0 (end);
 *   GPU1: 0.1 R1 until 0.6; all of R1 until 0.8 (jump: its own demand needs
 *         more than it has left, so it reclaims); then 0.1 R1.
 * R in blocks (region slices x S / B). */
typedef struct {
  double seconds;
  guint64 blocks[2]; /* each region in blocks */
} EmaPoolScenario;

guint64 ema_pool_scenario_target(const EmaPoolScenario *scenario, guint gpu, double t);
/* The phase at T: "warm", "ramp", "hold", "finish", "jump", "regrow", "end". */
const char *ema_pool_scenario_phase(const EmaPoolScenario *scenario, double t);

G_END_DECLS
