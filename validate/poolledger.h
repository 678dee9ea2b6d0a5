/* poolledger.h: the elastic memory pool of `ema-validate pool`, as the
 * simulator's pool (sim/pool/pool.c) keeps it, with every slice backed by real
 * memory through a table of backend operations. The CUDA backend
 * (realpool.c) turns them into cuMemCreate / cuMemAddressReserve / cuMemMap
 * / cuMemSetAccess / cuMemUnmap / cuMemRelease calls and copies on a
 * stream; a recording backend (poolfake.h) emulates them on the CPU for
 * the tests and `pool --dry-run`.
 *
 * The ledger is sim/pool/pool.c's (2 MiB slices, a KV region per GPU, the lent
 * matrix, each tenant's blocks local and per lender), and so are the views
 * the policies get (EmaPoolView, EmaGpuView: the same fields with the same
 * meaning), the rules that check a plan (every action cut to what the
 * ledger can honour, counted in plans_adjusted) and the decision order (a
 * lender that lacks memory reclaims first, then a proactive reclaim, then
 * the borrow policy). The policies are the registry's ops structs, built-in
 * or loaded from plugins, called unchanged.
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
 * blocks go to the end, freed ones come off the end, so empty slices are
 * the last ones of a lender's list; a return or reclaim takes slices off
 * the end. Each new block is written (a pattern that identifies it), and a
 * reclaim that moves blocks copies them on the borrower's stream, waits,
 * and checks the first and last moved block before the slices go.
 *
 * Everything is synchronous: an action is done (or undone) when its call
 * returns, so the simulator's transient states (slices being mapped or
 * coming back) are always zero in the views. An action that fails half-way
 * undoes what it did (no handle, mapping or slot left) and leaves the
 * ledger as it was; the error stops the run, and ema_ledger_teardown()
 * releases whatever exists. What this backend does not have: the
 * simulator's engines (blocks are demand targets per tick, see
 * ema_ledger_tick), peer swap (preempt: swap-peer), and step times (the
 * caller gives each GPU's last step). A drop or a move to host frees
 * exactly the blocks on the lender (an engine would preempt whole
 * requests). */
#pragma once

#include <glib.h>

#include "ema/hw/hwmodel.h"
#include "ema/policy.h"
#include "ema/pool/policyspec.h"
#include "ema/pool/registry.h"
#include "ema/hw/steptime.h"

G_BEGIN_DECLS

/* What the ledger asks of real memory. DATA is the backend's. DEVICE is the
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
} EmaLedgerBackend;

typedef struct {
  guint n_gpus;
  const EmaServerSpec *server; /* for the views and the step-cost view */
  const EmaPolicySpec *policy; /* names checked against the registry by ema_ledger_new */
  const EmaLedgerBackend *backend;
  gpointer backend_data;
  guint64 grow_slices;   /* a borrower's range grows by at least this many slots (0: 256) */
  guint context_tokens;  /* tokens per sequence, for running/waiting (0: 2000) */
  gboolean write_blocks; /* write every new block and check moved ones */
} EmaLedgerConfig;

typedef enum {
  EMA_LEDGER_BORROW,    /* GPU borrows SLICES from PEER: created, mapped, access */
  EMA_LEDGER_RETURN,    /* GPU gives SLICES empty slices back to PEER: unmapped, released */
  EMA_LEDGER_RECLAIM,   /* GPU (lender) takes SLICES back from PEER: data moved or dropped */
  EMA_LEDGER_OWN_MAP,   /* GPU maps SLICES of its own for its blocks or staging */
  EMA_LEDGER_OWN_UNMAP, /* GPU releases SLICES of its own */
} EmaLedgerEventKind;

/* "borrow", "return", "reclaim", "own-map", "own-unmap". */
const char *ema_ledger_event_kind_name(EmaLedgerEventKind kind);

/* One action as it was applied, with the wall time of its real calls. */
typedef struct {
  guint64 tick;
  EmaTime at;     /* the tick's time */
  double started; /* when its first call was made, CLOCK_MONOTONIC seconds */
  EmaLedgerEventKind kind;
  guint gpu, peer;
  EmaVacateTarget target; /* RECLAIM: where the plan sent the data */
  guint target_gpu;
  guint64 slices;
  guint64 blocks_moved, blocks_to_host, blocks_dropped;
  guint64 bytes_copied;
  double seconds;      /* the whole action */
  double map_seconds;  /* of which creating and mapping (a move's destination) */
  double copy_seconds; /* of which copies issued and waited for */
  double unmap_seconds;
} EmaLedgerEvent;

typedef struct {
  guint64 borrows, slices_borrowed;
  guint64 returns, slices_returned;
  guint64 reclaims, slices_reclaimed; /* reclaim actions and their slices */
  guint64 blocks_migrated, blocks_to_host, blocks_dropped;
  guint64 plans_adjusted; /* plan actions the ledger could not honour as asked */
  guint64 blocks_checked; /* moved blocks whose data was read back and matched */
  double borrow_seconds, borrow_max_seconds;
  double return_seconds;
  double reclaim_seconds, reclaim_max_seconds; /* per reclaim decision (all its actions) */
} EmaLedgerStats;

/* Real resources alive now. */
typedef struct {
  guint64 handles, mappings, reservations;
} EmaLedgerLive;

typedef struct _EmaLedger EmaLedger;

/* A ledger over CONFIG (copied; the specs and the backend must outlive
 * it). Errors: an unknown policy name. */
EmaLedger *ema_ledger_new(const EmaLedgerConfig *config, GError **error);
/* Release quietly whatever real resources remain (ema_ledger_teardown),
 * then free. */
void ema_ledger_free(EmaLedger *ledger);
G_DEFINE_AUTOPTR_CLEANUP_FUNC(EmaLedger, ema_ledger_free)

/* GPU has a tenant with a region of SLICES, blocks of BLOCK_BYTES, and
 * STEP_MODEL (may be NULL: no prefetch decisions; borrowed, must outlive
 * the ledger; tp 1). */
void ema_ledger_add_tenant(EmaLedger *ledger, guint gpu, guint64 slices, guint64 block_bytes,
                           const EmaStepModel *step_model);
/* GPU has no tenant: it lends SLICES. */
void ema_ledger_add_idle_gpu(EmaLedger *ledger, guint gpu, guint64 slices);
/* Reserve the home ranges and run the policies' init hooks at NOW. */
gboolean ema_ledger_start(EmaLedger *ledger, EmaTime now, GError **error);

/* One round at NOW, TARGETS[g] the blocks g's tenant wants (ignored for
 * GPUs without one):
 *   1. the prefetch policy for each tenant holding remote blocks (its
 *      staging follows the plan), then each tenant gives back blocks above
 *      its target or takes what it lacks, as far as its free blocks allow
 *      (local first, then the lenders with most room; the prefetch plan's
 *      remote_limit gates it, as admission in the simulator): what it still
 *      lacks is its blocks_short;
 *   2. each tenant's GPU decides (at most once per decision_period unless
 *      short): reclaim (lender priority), proactive reclaim, borrow;
 *   3. each tenant takes what it still lacks from the memory step 2 gave;
 *   4. the demand trend (as the simulator's, sampled every 100 ms).
 * FALSE with the first error (the ledger is consistent; stop the run). */
gboolean ema_ledger_tick(EmaLedger *ledger, EmaTime now, const guint64 *targets, GError **error);
/* The duration of GPU's tenant's last step (for its view). */
void ema_ledger_set_last_step(EmaLedger *ledger, guint gpu, EmaTime duration);

/* The end of a run: every tenant gives back all its blocks, staging goes,
 * every lent slice is returned (its data dropped), every reservation
 * freed. Records RETURN events. Keeps going after an error (the first is
 * reported). */
gboolean ema_ledger_drain(EmaLedger *ledger, GError **error);
/* Release every real resource that exists, whatever the ledger says
 * (unmap, release, unreserve), in reverse order of use; the ledger is then
 * empty. Keeps going after an error (the first is reported). */
gboolean ema_ledger_teardown(EmaLedger *ledger, GError **error);

/* The ledger's invariants (sim/pool/pool.c's ema_pool_check), and that the real
 * resources match it: each lent slice one handle and one mapping, each
 * GPU's mapped own slices its blocks' slices plus staging. */
gboolean ema_ledger_check(const EmaLedger *ledger, GError **error);

const EmaLedgerStats *ema_ledger_stats(const EmaLedger *ledger);
EmaLedgerLive ema_ledger_live(const EmaLedger *ledger);
/* Events so far (EmaLedgerEvent), oldest first. */
const GArray *ema_ledger_events(const EmaLedger *ledger);
/* The view the policies get now (valid until the next call). */
const EmaPoolView *ema_ledger_view(EmaLedger *ledger);
guint64 ema_ledger_slices_lent(const EmaLedger *ledger, guint gpu);
guint64 ema_ledger_slices_borrowed(const EmaLedger *ledger, guint gpu);
guint64 ema_ledger_blocks_used(const EmaLedger *ledger, guint gpu);
guint64 ema_ledger_blocks_remote(const EmaLedger *ledger, guint gpu);
guint64 ema_ledger_blocks_short(const EmaLedger *ledger, guint gpu);
guint64 ema_ledger_own_mapped(const EmaLedger *ledger, guint gpu);
guint64 ema_ledger_staging(const EmaLedger *ledger, guint gpu);
/* Segments reserved for GPU's borrowed slices, and their slots. */
guint ema_ledger_segments(const EmaLedger *ledger, guint gpu, guint64 *slots);

/* The seed whose stream starts where SEED's element INDEX is:
 * ema_fill_bf16(ema_ledger_fill_seed(SEED, INDEX), i) ==
 * ema_fill_bf16(SEED, INDEX + i) for every i (fill.h), so that a backend
 * can write the INDEX-th part of a block with the plain fill kernel. */
guint64 ema_ledger_fill_seed(guint64 seed, guint64 index);

/* Bind --policy TEXT: a composition's name (`ema`, `remote-direct`,
 * `static`, ...) or a YAML map of the `policy` section (`{borrow:
 * neighbour, reclaim: migrate}`), into SPEC (zeroed first; clear it with
 * ema_params_clear(&ema_policy_spec_params, SPEC)). */
gboolean ema_ledger_policy_parse(const char *text, EmaPolicySpec *spec, GError **error);

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
