/* pool.h: the elastic memory pool of one server in the simulator, for the
 * policies of policy.h: the pool mechanism (core.h: the ledger of 2 MiB
 * slices, each GPU's KV region; a slice is its owner's or lent to one
 * borrower; the policy calls, the checks and application of their plans)
 * over the simulator's backend (modelled costs, actions completing as
 * events), with each sharing tenant's EmaKvMemory over it and the cost of
 * remote KV in each step.
 *
 * The model, and what it leaves out:
 * - Blocks are placed per request: the pool keeps, for each request of a
 *   tenant (and its prefix cache), how many of its blocks are local and
 *   how many on each lender (core.h's EmaPoolRequest), not which block is
 *   which. A request's new blocks go local first (a running request's KV
 *   stays local while there is room), then to the lenders with the most
 *   free borrowed room; a finishing or preempted request frees its own
 *   blocks where they are (so a step's remote share of KV reads is the
 *   tenant's remote share of blocks). A reclaim that moves blocks takes
 *   the coldest requests' first to a peer (waiting or preempted, then the
 *   prefix cache's, then running ones, newest first) and the hottest'
 *   first into the borrower's own room; a drop preempts the requests
 *   holding blocks on the lender, newest first. A borrow policy's place
 *   hook moves requests' blocks between places (policy.h's
 *   EmaPlacementPlan, copies charged as migrations). The prefetch plan's
 *   remote_limit gates the admission of new requests (the free blocks the
 *   engine sees); running requests may grow into any borrowed room.
 * - Borrowing n slices costs the VMM create + map + set-access time of n
 *   slices (server vmm costs) before they can hold blocks; returning or
 *   reclaiming costs the unmap time, plus the copy time of any data moved
 *   (fixed cost + bytes / bandwidth of the link or host link, not shared
 *   with other traffic).
 * - Remote KV in a step: a share f of the step's KV reads is remote, R_l
 *   bytes per layer. Read directly, the attention kernel loads them over
 *   the link while it reads its local KV (the two overlap, as measured on
 *   H200: validate/README.md); the remote loads hide under the kernel's
 *   all-local time but do not shorten it (10% of the blocks remote left
 *   the measured step as long as all-local), so a layer's KV time becomes
 *   max(t_kv, R_l / B_direct) in place of t_kv. Prefetched in
 *   groups of g layers, d groups ahead, over the copy engines (a group's
 *   copy takes c = fixed + g R_l / B_copy and overlaps the compute of
 *   earlier groups):
 *     step = sum over groups of max(g t_l, c) + max(0, c - d max(0, g t_l - c) - t_head)
 *            + t_head + t_allreduce + overhead
 *   where t_l is the layer time with every byte local (prefetched KV is
 *   read from the local staging buffer). The staging buffer takes
 *   ceil(d g x slices of remote KV in use / L) of the tenant's local
 *   slices (fewer when they are full: the step time does not charge a
 *   buffer smaller than the plan asks).
 * - Link sharing: the B_copy and B_direct a tenant gets from lender j are
 *   the link bandwidth divided by the number of tenants holding data on j
 *   (its port or link is shared); on an NVSwitch the tenant's own ingress
 *   port also caps the sum over its lenders. This is an analytic stand-in
 *   for the fabric model's max-min sharing, evaluated once per step.
 * - Interference: bytes peers pull from a lender's HBM and bytes copied
 *   into a borrower's HBM take HBM bandwidth from the GPU's own work: its
 *   memory rate becomes rate_m - k_out x (pull rate) - k_in x (incoming
 *   rate), the pull rate being each borrower's over its step in flight (an
 *   idle borrower pulls nothing), the incoming rate this GPU's over its last
 *   step, k = gpu.interference_outgoing and
 *   gpu.interference_incoming (calibrated by ema-validate on H200: about 0.9
 *   and 2). Peer-swap, migration and prefix-tier copies do the same to the
 *   GPUs they read from and land in: a GPU's copies run one after another,
 *   and a step pays the HBM time of the copy bytes that overlap it (a copy
 *   that ends before the step does is spread over the step).
 * - Peer swap (policy preempt: swap-peer): a preempted request's KV is
 *   parked in the lendable slices of the peers with the most room (the
 *   rest on host), each copy timed as above, and brought back (peers
 *   first) before the request resumes. A GPU that needs memory holding
 *   peers' parked KV sends it to host memory first and waits for that copy.
 * - Attention offload (plan mode EMA_REMOTE_OFFLOAD, hw/offload.h): the
 *   borrower's step is ema_offload_step_time over each lender's share of
 *   the step, from the step's decoding requests' own blocks
 *   (ema_pool_offload_shares, below), and the batch with the lenders'
 *   context taken out of its decode context (never below 0) for its local
 *   work; prefill chunks read their KV as if local. No KV is pulled: the lenders' HBM is
 *   charged instead, each lender's own steps lengthening by its measured
 *   slowdown (ema_gpu_offload_slowdown) at the shares of its HBM time of
 *   the borrowers whose steps run (nothing once a step is over: an idle
 *   borrower costs no lender). The policy sees each way's
 *   modelled step and the lenders' current offload shares; a tenant without
 *   an offload model (ema_pool_set_offload_model) reads directly instead.
 *   Reclaim treats offloaded KV like any other lent block.
 * - Tensor-parallel tenants (tp = t > 1) share as a group: one record at
 *   their first GPU, their region t ranks' and their block all t shards
 *   (KV splits by heads); they borrow from GPUs outside the group (a
 *   borrowed block lies whole on its lender) and lend as a group, each
 *   rank its share of the slices lent: a borrower's remote KV on a group
 *   comes over its t ranks' ports side by side, its pulls load each rank's
 *   HBM with 1/t of them, and offloaded partials take each rank 1/t of
 *   what one GPU's HBM time would (each rank over its heads' share; the
 *   partials' compute is timed as on one GPU, the conservative side). Their step
 *   is one rank's: each rank reads its shard of the remote KV over its own
 *   link to the lender on a link-per-pair server (R_l of a rank per link),
 *   through the lender's one port on a switch or PCIe (t R_l there, R_l
 *   into each rank); the lender's HBM is
 *   charged all t shards, a prefetch lands a rank's shard in each rank
 *   (pool.c says how copies are timed). Offloaded, each rank sends its
 *   heads' queries and the lender computes every rank's partials over all
 *   t shards (hw/offload.h's group model; its share of HBM time is all t
 *   shards' reads).
 * GPUs without a tenant lend all their KV region. */
#pragma once

#include <glib.h>

#include "ema/serving/engine.h"
#include "ema/core/event.h"
#include "ema/hw/hwmodel.h"
#include "ema/policy.h"
#include "ema/pool/core.h"
#include "ema/pool/backend.h"
#include "ema/pool/ledger.h"
#include "ema/pool/policyspec.h"
#include "ema/hw/offload.h"
#include "ema/hw/steptime.h"

G_BEGIN_DECLS

typedef struct _EmaPool EmaPool;

/* What the pool did, for the summary. Times are ns. */
typedef struct {
  guint64 borrows, slices_borrowed;   /* borrow actions and slices */
  guint64 returns, slices_returned;   /* empty slices given back by borrowers */
  guint64 reclaims, slices_reclaimed; /* reclaim actions by lenders and slices */
  guint64 blocks_migrated, blocks_to_host, blocks_dropped;
  EmaTime reclaim_wait;     /* sum over reclaims of the time until the slices were usable */
  EmaTime reclaim_wait_max; /* the longest */
  guint64 plans_adjusted;   /* plan actions the ledger could not honour as asked */
  guint64 remote_steps;     /* steps with remote KV */
  EmaTime exposed_remote;   /* step time added by remote KV over all-local */
  /* attention offload: steps that offloaded, those of them lengthened to hold a lender at the
   * plan's offload_cap (policy.h), and the time that added; of the offloading steps, those that
   * read the KV on lenders at their cap by direct loads (EmaPrefetchPlan.offload_read) */
  guint64 offload_steps, offload_throttled_steps;
  EmaTime offload_throttled;
  guint64 offload_read_steps;
  /* placement (a borrow policy's place hook): moves and the blocks they moved */
  guint64 placements, blocks_placed;
} EmaPoolStats;

/* A pool for SERVER under POLICY (names already checked). Errors: a
 * policy's init failing. */
EmaPool *ema_pool_new(EmaSim *sim, const EmaServerSpec *server, const EmaPolicySpec *policy,
                      GError **error);
void ema_pool_free(EmaPool *pool);
G_DEFINE_AUTOPTR_CLEANUP_FUNC(EmaPool, ema_pool_free)

/* GPU has no tenant: it lends SLICES slices. */
void ema_pool_add_idle_gpu(EmaPool *pool, guint gpu, guint64 slices);
/* GPU's tenant has a KV region of SLICES slices on each of its GPUs,
 * blocks of BLOCK_BYTES per GPU (a rank's shard: ema_tenant_plan's), and
 * STEP_MODEL (borrowed; must outlive the pool). A tenant of tp t > 1 spans
 * GPUs GPU..GPU+t-1, which get no other record: it is one group of t x
 * SLICES slices and blocks of t x BLOCK_BYTES. Returns the memory its
 * engine takes blocks from. */
EmaKvMemory ema_pool_add_tenant(EmaPool *pool, guint gpu, guint64 slices, guint64 block_bytes,
                                const EmaStepModel *step_model);
/* GPU's tenant's own sharing settings (added by ema_pool_add_tenant, before
 * the pool starts): LEND FALSE, its GPUs lend nothing (nor hold peers'
 * parked KV); BORROW FALSE, it never borrows; LEND_LIMIT (0..1), the share
 * of its KV region it lends and parks peers' KV in at most at once. TRUE,
 * TRUE and 1 by default. */
/* The slices of a KV region of SLICES that LEND_LIMIT (0..1, clamped) lets
 * its GPU lend: the whole slices of that share, rounded down (a limit under
 * one slice lends none). */
guint64 ema_pool_lendable_slices(guint64 slices, double lend_limit);
void ema_pool_set_sharing(EmaPool *pool, guint gpu, gboolean lend, gboolean borrow,
                          double lend_limit);
/* The model GPU's tenant runs (added by ema_pool_add_tenant), for its
 * attention offload (hw/offload.h; a TP group's: the lender computes every
 * rank's partials); without it, or when the model cannot be built for the
 * server, the tenant's remote KV is never offloaded and
 * ema_pool_offload_unavailable() says why. */
void ema_pool_set_offload_model(EmaPool *pool, guint gpu, const EmaLlmSpec *model);
/* Why GPU's tenant cannot offload attention (NULL: it can). */
const char *ema_pool_offload_unavailable(const EmaPool *pool, guint gpu);
/* The tenant's engine, once created (for preemptions a reclaim forces, and
 * for waking it when memory arrives). */
void ema_pool_set_engine(EmaPool *pool, guint gpu, EmaEngine *engine);
/* Start: the policies' init hooks. */
gboolean ema_pool_start(EmaPool *pool, GError **error);

/* The step time of BATCH for GPU's tenant, remote KV and interference
 * included (calls the prefetch policy). */
EmaTime ema_pool_step_time(EmaPool *pool, guint gpu, const EmaStepBatch *batch);
/* The formula above, alone: the step time (s) of a step whose all-local
 * breakdown is BD, on LAYERS layers, whose remote KV of one layer moves in
 * T_COPY by copy engines or T_DIRECT by direct loads, local HBM slowed by
 * SLOW (>= 1) by interference, under PLAN. */
double ema_remote_step_seconds(const EmaStepBreakdown *bd, const EmaServerSpec *server,
                               double layers, double slow, double t_copy, double t_direct,
                               const EmaPrefetchPlan *plan);

/* A step read from one lender alone (no link sharing): REMOTE bytes of
 * each layer's KV on the peer (0: all local), STEAL B/s of this GPU's HBM
 * rate already taken by others (weighted by the interference
 * coefficients). With PLAN's prefetch the copies land in this GPU's HBM at
 * the rate the step lets them, and the step is timed once more with that
 * incoming traffic (k_in x bytes / step) taken as well, as the pool charges
 * a borrower's next step. For decode scenarios and the frontier. */
double ema_remote_step_seconds_one_lender(const EmaStepBreakdown *bd, const EmaServerSpec *server,
                                          double layers, double steal, double remote,
                                          const EmaPrefetchPlan *plan);

/* For attention offload (hw/offload.h), what the pool charges an
 * offloading step: the step being timed or in flight (or, between steps,
 * the last one) of BORROWER's tenant, per lender j: SHARES[j] (the
 * server's GPUs, filled; BORROWER's own entry 0) has n_j = the step's
 * decoding requests with KV on j, c_j = the tokens of their context (the
 * KV they attend to, the new token's included) in blocks on j, m_j = of
 * those requests, the ones whose newest block, where the new token's K/V
 * is written, is on j. Returns u, the step's decoding requests with any KV
 * on a lender (EmaOffloadModel's MERGED). Exact for each request's own
 * blocks (the newest block holds the context past the full ones); the
 * cached prefix blocks a request shares with others are the prefix cache's
 * one set in the ledger, so they count on each place in proportion to
 * where the cache's blocks are. Prefill chunks are not counted. Without an
 * engine (a bench timing hand-made batches) every running request of the
 * ledger decodes, its context all of its blocks' tokens. O(the tenant's
 * running requests), an engine look-up for those with KV on a lender. */
guint64 ema_pool_offload_shares(EmaPool *pool, guint borrower, EmaOffloadShare *shares);

/* After a step of GPU's tenant: the reclaim and borrow policies. */
void ema_pool_after_step(EmaPool *pool, guint gpu, const EmaStepReport *step);

/* Fault injection (for the policy contract tests): LENDER suddenly needs
 * every slice it lends; the reclaim policy is asked for all of them, and
 * whatever its plan leaves lent is then dropped (EMA_VACATE_DROP) so that
 * nothing stays lent. */
void ema_pool_reclaim_everything(EmaPool *pool, guint lender);

/* The cost model alone as a pool backend (backend.h), for the pool
 * mechanism driven by demand targets (core.h's ema_pool_core_tick): a
 * borrow costs the VMM create + map time of its slices, a return or reclaim
 * their unmap time, a migration its copy over the link, a move to host its
 * copy over the host link; no engines (evictions free exactly the blocks
 * asked), no interference, every action done within its call. DATA: an
 * EmaPoolModel, which must outlive the pool. */
typedef struct {
  const EmaServerSpec *server;
  const EmaSliceLedger *ledger; /* the pool's (for the block sizes) */
} EmaPoolModel;
const EmaPoolBackend *ema_pool_model_backend(void);

/* Read-only figures. */
const EmaPoolStats *ema_pool_stats(const EmaPool *pool);
/* The view the policies get now (valid until the next call into the pool). */
const EmaPoolView *ema_pool_view(EmaPool *pool);
/* Request SERIAL (an engine's, or EMA_KV_PREFIX_CACHE) of GPU's tenant:
 * where its blocks are; NULL if the pool has none. */
const EmaPoolRequest *ema_pool_request(const EmaPool *pool, guint gpu, guint64 serial);
/* Slices GPU lends to peers now, and borrows from them. */
guint64 ema_pool_slices_lent(const EmaPool *pool, guint gpu);
guint64 ema_pool_slices_borrowed(const EmaPool *pool, guint gpu);
guint64 ema_pool_blocks_remote(const EmaPool *pool, guint gpu);
guint64 ema_pool_slices_staging(const EmaPool *pool, guint gpu);
/* Step time that peers' traffic (their pulls from GPU's HBM, and swap or
 * migration copies reading from or landing in it) added to GPU's steps so
 * far, over what they would have taken with only GPU's own prefetch copies
 * landing. */
EmaTime ema_pool_slowed_by_peers(const EmaPool *pool, guint gpu);
/* Seeds the pool's own stream of the partials' draws (server offload.partial_p90 above 1,
 * offexec.h; nothing otherwise) with SEED. */
void ema_pool_set_seed(EmaPool *pool, guint64 seed);
/* PER_STEP: a GPU's prefix-tier moves of one kind to or from one peer make
 * one tier event per step (their blocks, bytes and copy seconds summed,
 * the moves counted in its reason), logged when the step ends
 * (ema_pool_after_step); FALSE (the default): an event per move. */
void ema_pool_set_tier_per_step(EmaPool *pool, gboolean per_step);
/* Write the events held back so far (the tier moves held for a step's one event, made after
 * the last step): at the end of a run, before its events are closed. */
void ema_pool_flush_events(EmaPool *pool);
/* SINK gets every pool event of the KINDS it wants (bit k: kind k; borrow, return, reclaim,
 * refuse, ...: core.h's EmaPoolEvent with its reason) as it happens; NULL: none. Events of the
 * other kinds are not made for it. */
void ema_pool_set_event_sink(EmaPool *pool, void (*sink)(gpointer data, const EmaPoolEvent *event),
                             gpointer data, guint32 kinds);

/* Check every ledger invariant (no GPU above its region, lent equals
 * borrowed, blocks in borrowed slices fit them, blocks counted equal the
 * engine's); FALSE with a message naming the first broken one. O(n^2) in
 * GPUs. */
gboolean ema_pool_check(const EmaPool *pool, GError **error);

G_END_DECLS
