/* borrow-neighbour.c: an example external borrow policy, built as a
 * plugin module (policies/README.md walks through it). `neighbour`: after a
 * step in which a GPU's tenant was short of KV blocks, borrow enough 2 MiB
 * slices to cover the shortfall from the next GPU (b + 1 mod n), as far as
 * that GPU can lend while keeping `reserve` slices; once the tenant has
 * plenty of free blocks again and `hold` has passed since its last borrow,
 * give back the borrowed slices that are empty.
 *
 * It uses only the header (ema/policy.h) and GLib: a plugin does not link
 * libema. Like every policy it keeps no globals, does no I/O and decides
 * only from its arguments and its private state, so the same inputs always
 * give the same plan. */
#include <gmodule.h>

#include "ema/policy.h"

typedef struct {
  gint64 reserve;    /* slices the lender keeps for itself */
  gint64 min_borrow; /* smallest borrow, in slices */
  gint64 hold;       /* ns: keep borrowed slices at least this long after a borrow */
  double slack;      /* free share of the tenant's blocks that counts as plenty */
} NeighbourParams;

static const EmaParam neighbour_param_list[] = {
    {.key = "reserve",
     .type = EMA_PARAM_INT,
     .offset = G_STRUCT_OFFSET(NeighbourParams, reserve),
     .default_value = "0",
     .min = 0,
     .max = 1e9,
     .help = "slices the lender keeps free for its own tenant"},
    {.key = "min_borrow",
     .type = EMA_PARAM_INT,
     .offset = G_STRUCT_OFFSET(NeighbourParams, min_borrow),
     .default_value = "1",
     .min = 1,
     .max = 1e9,
     .help = "borrow at least this many slices at a time (fewer only if the lender has fewer)"},
    {.key = "hold",
     .type = EMA_PARAM_DURATION,
     .offset = G_STRUCT_OFFSET(NeighbourParams, hold),
     .default_value = "10ms",
     .help = "keep borrowed slices at least this long after the last borrow"},
    {.key = "slack",
     .type = EMA_PARAM_FRACTION,
     .offset = G_STRUCT_OFFSET(NeighbourParams, slack),
     .default_value = "10%",
     .min = 0,
     .max = 1,
     .help = "return empty slices only while this share of the tenant's blocks stays free"},
};

static const EmaParamTable neighbour_params = {
    .name = "neighbour",
    .size = sizeof(NeighbourParams),
    .params = neighbour_param_list,
    .n_params = EMA_PARAMS_N(neighbour_param_list),
};

/* Private state: the backend allocates state_size zeroed bytes for each
 * GPU (the simulator keeps one state per GPU and policy kind), so this is
 * the state of the GPU whose decisions it sees. */
typedef struct {
  EmaTime last_borrow; /* when this GPU last borrowed */
} NeighbourState;

static gboolean neighbour_init(gpointer state, gconstpointer params, const EmaPoolView *view,
                               GError **error) {
  if (view->n_gpus < 2) {
    g_set_error(error, g_quark_from_static_string("ema-neighbour-error"), 0,
                "needs a server with at least 2 GPUs (this one has %u)", view->n_gpus);
    return FALSE;
  }
  return TRUE;
}

/* Slices that BLOCKS of GPU's tenant fill, rounded up. */
static guint64 slices_for(const EmaGpuView *g, guint64 blocks) {
  return (blocks * g->block_bytes + EMA_SLICE_BYTES - 1) / EMA_SLICE_BYTES;
}

/* Whole blocks of GPU's tenant that SLICES hold (a block may be larger
 * than a slice: OPT-13B's 16-token block is 13 MB, over six slices). */
static guint64 blocks_in(const EmaGpuView *g, guint64 slices) {
  return slices * EMA_SLICE_BYTES / g->block_bytes;
}

static void neighbour_decide(gpointer state, gconstpointer params, const EmaPoolView *view,
                             guint borrower, EmaBorrowPlan *plan) {
  const NeighbourParams *p = params;
  NeighbourState *s = state;
  const EmaGpuView *me = &view->gpus[borrower];
  guint n = view->n_gpus;
  guint64 free_blocks, empty_blocks = 0;

  if (n < 2 || !me->shares || !me->has_tenant || me->block_bytes == 0)
    return;

  if (me->blocks_short > 0) {
    /* cover the shortfall in whole slices, less what is being mapped */
    guint lender = (borrower + 1) % n;
    guint64 want = MAX(slices_for(me, me->blocks_short), (guint64) p->min_borrow);
    guint64 can = ema_pool_view_lendable(view, lender, (guint64) p->reserve);
    if (want > me->slices_pending && MIN(want - me->slices_pending, can) > 0) {
      plan->actions[plan->n++] =
          (EmaBorrowAction){lender, (gint64) MIN(want - me->slices_pending, can)};
      s->last_borrow = view->now;
    }
    /* why, for the event log (events.csv, kind debug) and ema-sim try-policy */
    ema_policy_debug(view, borrower,
                     "neighbour: short %" G_GUINT64_FORMAT " blocks, want %" G_GUINT64_FORMAT
                     " slices (%" G_GUINT64_FORMAT " pending), gpu%u can lend %" G_GUINT64_FORMAT,
                     me->blocks_short, want, me->slices_pending, lender, can);
    return;
  }

  /* plenty of free blocks: give back the empty borrowed slices, unless the
   * last borrow is recent or the tenant would then run low */
  if (me->slices_borrowed == 0 || view->now - s->last_borrow < p->hold)
    return;
  for (guint j = 0; j < n; j++) {
    guint64 lent = view->lent[j * n + borrower];
    guint64 used = slices_for(me, view->remote_blocks[borrower * n + j]);
    if (lent > used)
      empty_blocks += blocks_in(me, lent) - blocks_in(me, used); /* the room they take away */
  }
  free_blocks = me->blocks_total - MIN(me->blocks_used, me->blocks_total);
  if (empty_blocks == 0 || free_blocks < empty_blocks ||
      (double) (free_blocks - empty_blocks) < p->slack * (double) me->blocks_total)
    return;
  for (guint j = 0; j < n && plan->n < G_N_ELEMENTS(plan->actions); j++) {
    guint64 lent = view->lent[j * n + borrower];
    guint64 used = slices_for(me, view->remote_blocks[borrower * n + j]);
    if (lent > used)
      plan->actions[plan->n++] = (EmaBorrowAction){j, -(gint64) (lent - used)};
  }
}

static const EmaBorrowPolicyOps neighbour = {
    .abi_version = EMA_POLICY_ABI_VERSION,
    .name = "neighbour",
    .summary = "borrow what the last step lacked from the next GPU; return empty slices later",
    .params = &neighbour_params,
    .state_size = sizeof(NeighbourState),
    .init = neighbour_init,
    .decide = neighbour_decide,
};

static const EmaBorrowPolicyOps *const borrow_policies[] = {&neighbour, NULL};

/* The one symbol the registry looks up. */
G_MODULE_EXPORT const EmaPolicyModule ema_policy_module = {
    .abi_version = EMA_POLICY_ABI_VERSION,
    .borrow = borrow_policies,
};
