/* testpolicies.c: the test policies of testpolicies.h. Like real policies
 * they decide only from their arguments and private state; the probe is a
 * test channel that hand-built specs may set. */
#include "testpolicies.h"

#include <string.h>

#include "ema/pool/registry.h"

/* ---- test-borrow-n ----------------------------------------------------------- */

static const EmaParam borrow_param_list[] = {
    {"borrower", EMA_PARAM_INT, G_STRUCT_OFFSET(TestBorrowParams, borrower), .default_value = "0",
     .min = -1, .max = 1024, .help = "the GPU that borrows (-1: every tenant GPU but the lenders)"},
    {"lender", EMA_PARAM_INT, G_STRUCT_OFFSET(TestBorrowParams, lender), .default_value = "1",
     .min = 0, .max = 1024, .help = "the lender"},
    {"slices", EMA_PARAM_INT, G_STRUCT_OFFSET(TestBorrowParams, slices), .default_value = "64",
     .min = 0, .max = 1e9, .help = "slices borrowed from the lender at the first decision"},
    {"lender2", EMA_PARAM_INT, G_STRUCT_OFFSET(TestBorrowParams, lender2), .default_value = "2",
     .min = 0, .max = 1024, .help = "a second lender"},
    {"slices2", EMA_PARAM_INT, G_STRUCT_OFFSET(TestBorrowParams, slices2), .default_value = "0",
     .min = 0, .max = 1e9, .help = "slices borrowed from the second lender"},
    {"give", EMA_PARAM_INT, G_STRUCT_OFFSET(TestBorrowParams, give), .default_value = "0", .min = 0,
     .max = 1e9, .help = "slices given back to the lender at the second decision"},
};

static const EmaParamTable borrow_params = {"test-borrow-n", sizeof(TestBorrowParams),
                                            borrow_param_list, EMA_PARAMS_N(borrow_param_list),
                                            NULL};

typedef struct {
  guint decisions;
} BorrowState;

static void borrow_decide(gpointer state, gconstpointer params, const EmaPoolView *view,
                          guint borrower, EmaBorrowPlan *plan) {
  const TestBorrowParams *p = params;
  BorrowState *s = state;
  if (p->borrower >= 0 ? (gint64) borrower != p->borrower
                       : (gint64) borrower == p->lender || (gint64) borrower == p->lender2)
    return;
  s->decisions++;
  if (s->decisions == 1) {
    if (p->slices > 0)
      plan->actions[plan->n++] = (EmaBorrowAction){(guint) p->lender, p->slices};
    if (p->slices2 > 0)
      plan->actions[plan->n++] = (EmaBorrowAction){(guint) p->lender2, p->slices2};
  } else if (s->decisions == 2 && p->give > 0) {
    plan->actions[plan->n++] = (EmaBorrowAction){(guint) p->lender, -p->give};
  }
}

static const EmaBorrowPolicyOps test_borrow_n = {
    .abi_version = EMA_POLICY_ABI_VERSION,
    .name = "test-borrow-n",
    .summary = "test: borrow a fixed number of slices from fixed lenders at the first decision",
    .params = &borrow_params,
    .state_size = sizeof(BorrowState),
    .decide = borrow_decide,
};

/* ---- test-prefetch-fixed ------------------------------------------------------- */

static const char *const mode_names[] = {"direct", "prefetch", "offload", NULL};

static const EmaParam prefetch_param_list[] = {
    {"mode", EMA_PARAM_ENUM, G_STRUCT_OFFSET(TestPrefetchParams, mode), .default_value = "prefetch",
     .choices = mode_names, .help = "direct, prefetch or offload"},
    {"depth", EMA_PARAM_INT, G_STRUCT_OFFSET(TestPrefetchParams, depth), .default_value = "2",
     .min = 1, .max = 1024, .help = "layer groups fetched ahead"},
    {"group", EMA_PARAM_INT, G_STRUCT_OFFSET(TestPrefetchParams, group), .default_value = "4",
     .min = 1, .max = 1024, .help = "layers per copy"},
    {"limit", EMA_PARAM_FRACTION, G_STRUCT_OFFSET(TestPrefetchParams, limit),
     .default_value = "100%", .min = 0, .max = 1, .help = "largest remote share of the KV"},
    {"offload_cap", EMA_PARAM_FRACTION, G_STRUCT_OFFSET(TestPrefetchParams, cap),
     .default_value = "0", .min = 0, .max = 1,
     .help = "largest share of a lender's HBM time offloaded attention may take (0: no cap)"},
    {"offload_read", EMA_PARAM_BOOL, G_STRUCT_OFFSET(TestPrefetchParams, read),
     .default_value = "false", .help = "read the KV on lenders at their cap, offload the rest"},
    {"room_limit", EMA_PARAM_FRACTION, G_STRUCT_OFFSET(TestPrefetchParams, room),
     .default_value = "0", .min = 0, .max = 1,
     .help = "largest remote share of the KV in the borrowed room (0: the limit's)"},
};

static const EmaParamTable prefetch_params = {"test-prefetch-fixed", sizeof(TestPrefetchParams),
                                              prefetch_param_list,
                                              EMA_PARAMS_N(prefetch_param_list), NULL};

static void probe_view(TestProbe *probe, const EmaPoolView *view, guint gpu) {
  guint n = MIN(view->n_gpus, TEST_PROBE_GPUS);
  probe->calls++;
  probe->n_gpus = view->n_gpus;
  probe->gpu = gpu;
  memcpy(probe->gpus, view->gpus, n * sizeof(EmaGpuView));
  if (view->blocks_room)
    memcpy(probe->blocks_room, view->blocks_room, n * sizeof(guint64));
  for (guint a = 0; a < n; a++)
    for (guint b = 0; b < n; b++) {
      probe->lent[a * TEST_PROBE_GPUS + b] = view->lent[a * view->n_gpus + b];
      probe->remote_blocks[a * TEST_PROBE_GPUS + b] = view->remote_blocks[a * view->n_gpus + b];
    }
}

static void prefetch_decide(gpointer state, gconstpointer params, const EmaPoolView *view,
                            guint gpu, const EmaStepCostView *step, EmaPrefetchPlan *plan) {
  const TestPrefetchParams *p = params;
  plan->mode = (EmaRemoteMode) p->mode;
  plan->depth = (guint) p->depth;
  plan->layers_per_copy = (guint) p->group;
  plan->remote_limit = p->limit;
  if (p->cap != 0) /* (NaN too: the hostile-plan test's) */
    plan->offload_cap = p->cap;
  plan->offload_read = p->read;
  if (p->room != 0)
    plan->room_limit = p->room;
  if (p->probe) {
    probe_view(p->probe, view, gpu);
    p->probe->step = *step;
  }
}

static const EmaPrefetchPolicyOps test_prefetch_fixed = {
    .abi_version = EMA_POLICY_ABI_VERSION,
    .name = "test-prefetch-fixed",
    .summary = "test: the same remote-access plan for every step",
    .params = &prefetch_params,
    .decide = prefetch_decide,
};

/* ---- test-reclaim-fixed ---------------------------------------------------------- */

static const char *const target_names[] = {"borrower", "peer", "host", "drop", NULL};

static const EmaParam reclaim_param_list[] = {
    {"borrower", EMA_PARAM_INT, G_STRUCT_OFFSET(TestReclaimParams, borrower), .default_value = "0",
     .min = 0, .max = 1024, .help = "the borrower slices are taken from"},
    {"slices", EMA_PARAM_INT, G_STRUCT_OFFSET(TestReclaimParams, slices), .default_value = "16",
     .min = 0, .max = 1e9, .help = "slices taken back at every call"},
    {"target", EMA_PARAM_ENUM, G_STRUCT_OFFSET(TestReclaimParams, target), .default_value = "drop",
     .choices = target_names, .help = "where the data goes"},
    {"target_gpu", EMA_PARAM_INT, G_STRUCT_OFFSET(TestReclaimParams, target_gpu),
     .default_value = "2", .min = 0, .max = 1024, .help = "the peer, for target peer"},
};

static const EmaParamTable reclaim_params = {"test-reclaim-fixed", sizeof(TestReclaimParams),
                                             reclaim_param_list, EMA_PARAMS_N(reclaim_param_list),
                                             NULL};

static void reclaim_decide(gpointer state, gconstpointer params, const EmaPoolView *view,
                           guint lender, guint64 needed, EmaReclaimPlan *plan) {
  const TestReclaimParams *p = params;
  if (p->probe) {
    probe_view(p->probe, view, lender);
    p->probe->needed = needed;
  }
  if (p->slices > 0)
    plan->actions[plan->n++] =
        (EmaReclaimAction){(guint) p->borrower, (guint64) p->slices, (EmaVacateTarget) p->target,
                           (guint) p->target_gpu};
}

static const EmaReclaimPolicyOps test_reclaim_fixed = {
    .abi_version = EMA_POLICY_ABI_VERSION,
    .name = "test-reclaim-fixed",
    .summary = "test: the same reclaim action at every call",
    .params = &reclaim_params,
    .decide = reclaim_decide,
};

/* ---- the module ---------------------------------------------------------------- */

static const EmaBorrowPolicyOps *const borrow_list[] = {&test_borrow_n, NULL};
static const EmaPrefetchPolicyOps *const prefetch_list[] = {&test_prefetch_fixed, NULL};
static const EmaReclaimPolicyOps *const reclaim_list[] = {&test_reclaim_fixed, NULL};

static const EmaPolicyModule test_module = {EMA_POLICY_ABI_VERSION, borrow_list, prefetch_list,
                                            reclaim_list};

void test_policies_register(void) {
  GError *error = NULL;
  if (ema_policy_registry_find(EMA_POLICY_BORROW, "test-borrow-n", NULL))
    return;
  if (!ema_policy_registry_add_module(&test_module, "tests/pool", &error))
    g_error("registering the test policies: %s", error->message);
}
