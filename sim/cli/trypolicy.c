/* trypolicy.c: `ema-sim try-policy` (trypolicy.h): a hand-written pool view
 * bound from YAML into the policy API's structs, one decide() call, the plan
 * printed. Nothing is simulated and nothing is checked against a ledger: the
 * plan is what the policy asked, as the pool would receive it. */
#include "ema/cli/trypolicy.h"

#include <string.h>

#include "ema/core/params.h"
#include "ema/hw/hwmodel.h"

/* A GPU's view is bound in place: its counts as INT (gint64, the same bytes
 * as guint64 for the counts >= 0 they are held to), its flags as BOOL; the
 * two guint fields go through gint64 ones beside it. */
typedef struct {
  EmaGpuView view;
  gint64 running, waiting;
} HandGpu;

typedef struct {
  gint64 lender, borrower, slices, blocks;
} HandLoan;

typedef struct {
  gint64 layers;
  double layer_compute_s, layer_memory_s, kv_bytes, remote_bytes, link_bandwidth, direct_bandwidth,
      layer_kv_s, step_local_s, step_direct_s, step_offload_s, context_tokens, offload_full_context,
      step_offload_read_s;
  gint64 copy_fixed_cost;
} HandStep;

typedef struct {
  const EmaParamTable *policy_table; /* set before binding: the table of `params` */
  char *server;
  gint64 now;
  GArray *gpus;
  GArray *lent;
  HandStep step;
  gpointer params;
} HandView;

#define G(f) (G_STRUCT_OFFSET(HandGpu, view) + G_STRUCT_OFFSET(EmaGpuView, f))
#define COUNT(key, field)                                                                          \
  { key, EMA_PARAM_INT, G(field), .default_value = "0", .min = 0, .max = 1e15 }
static const EmaParam gpu_params[] = {
    {"shares", EMA_PARAM_BOOL, G(shares), .default_value = "true",
     .help = "lends its free slices (a tenant with tp = 1, or no tenant)"},
    {"has_tenant", EMA_PARAM_BOOL, G(has_tenant), .default_value = "false"},
    COUNT("slices", slices),
    COUNT("slices_lent", slices_lent),
    COUNT("slices_used", slices_used),
    COUNT("slices_staging", slices_staging),
    COUNT("slices_borrowed", slices_borrowed),
    COUNT("slices_borrowed_used", slices_borrowed_used),
    COUNT("slices_pending", slices_pending),
    {"block_bytes", EMA_PARAM_SIZE, G(block_bytes), .default_value = "2MiB", .min = 1, .max = 1e15},
    COUNT("blocks_total", blocks_total),
    COUNT("blocks_used", blocks_used),
    COUNT("blocks_remote", blocks_remote),
    COUNT("blocks_short", blocks_short),
    {"running", EMA_PARAM_INT, G_STRUCT_OFFSET(HandGpu, running), .default_value = "0", .min = 0,
     .max = 1e9},
    {"waiting", EMA_PARAM_INT, G_STRUCT_OFFSET(HandGpu, waiting), .default_value = "0", .min = 0,
     .max = 1e9},
    {"demand_blocks_per_s", EMA_PARAM_DOUBLE, G(demand_blocks_per_s), .default_value = "0"},
    {"last_step", EMA_PARAM_DURATION, G(last_step), .default_value = "0s", .min = 0, .max = 1e18},
};
#undef COUNT
static const EmaParamTable gpu_table = {"gpu view", sizeof(HandGpu), gpu_params,
                                        EMA_PARAMS_N(gpu_params), NULL};

#define L(f) G_STRUCT_OFFSET(HandLoan, f)
static const EmaParam loan_params[] = {
    {"lender", EMA_PARAM_INT, L(lender), .flags = EMA_PARAM_REQUIRED, .min = 0, .max = 1023},
    {"borrower", EMA_PARAM_INT, L(borrower), .flags = EMA_PARAM_REQUIRED, .min = 0, .max = 1023},
    {"slices", EMA_PARAM_INT, L(slices), .flags = EMA_PARAM_REQUIRED, .min = 0, .max = 1e15},
    {"blocks", EMA_PARAM_INT, L(blocks), .default_value = "0", .min = 0, .max = 1e15,
     .help = "the borrower's blocks in them"},
};
static const EmaParamTable loan_table = {"loan", sizeof(HandLoan), loan_params,
                                         EMA_PARAMS_N(loan_params), NULL};

#define S(f) G_STRUCT_OFFSET(HandStep, f)
#define SECONDS(key)                                                                               \
  { #key, EMA_PARAM_DOUBLE, S(key), .default_value = "0", .min = 0, .max = 1e9 }
static const EmaParam step_params[] = {
    {"layers", EMA_PARAM_INT, S(layers), .default_value = "32", .min = 1, .max = 1e6},
    SECONDS(layer_compute_s),
    SECONDS(layer_memory_s),
    {"kv_bytes", EMA_PARAM_DOUBLE, S(kv_bytes), .default_value = "0", .min = 0, .max = 1e18},
    {"remote_bytes", EMA_PARAM_DOUBLE, S(remote_bytes), .default_value = "0", .min = 0,
     .max = 1e18},
    {"link_bandwidth", EMA_PARAM_BANDWIDTH, S(link_bandwidth), .default_value = "397GB/s"},
    {"direct_bandwidth", EMA_PARAM_BANDWIDTH, S(direct_bandwidth), .default_value = "375GB/s"},
    {"copy_fixed_cost", EMA_PARAM_DURATION, S(copy_fixed_cost), .default_value = "6.4us", .min = 0,
     .max = 1e18},
    SECONDS(layer_kv_s),
    SECONDS(step_local_s),
    SECONDS(step_direct_s),
    SECONDS(step_offload_s),
    {"context_tokens", EMA_PARAM_DOUBLE, S(context_tokens), .default_value = "0", .min = 0,
     .max = 1e15},
    {"offload_full_context", EMA_PARAM_DOUBLE, S(offload_full_context), .default_value = "0",
     .min = 0, .max = 1e15},
    SECONDS(step_offload_read_s),
};
#undef SECONDS
static const EmaParamTable step_table = {"step", sizeof(HandStep), step_params,
                                         EMA_PARAMS_N(step_params), NULL};

static const EmaParamTable *policy_table_for(gconstpointer object) {
  return ((const HandView *) object)->policy_table;
}

#define V(f) G_STRUCT_OFFSET(HandView, f)
static const EmaParam view_params[] = {
    {"server", EMA_PARAM_STRING, V(server), .default_value = "h200x8-hgx",
     .help = "a hardware model by name (ema-sim list hwmodels)"},
    {"now", EMA_PARAM_DURATION, V(now), .default_value = "1s", .min = 0, .max = 1e18},
    {"gpus", EMA_PARAM_LIST, V(gpus), .table = &gpu_table, .flags = EMA_PARAM_REQUIRED},
    {"lent", EMA_PARAM_LIST, V(lent), .table = &loan_table, .flags = EMA_PARAM_OPTIONAL},
    {"step", EMA_PARAM_STRUCT, V(step), .table = &step_table},
    {"params", EMA_PARAM_OBJECT, V(params), .table_for = policy_table_for,
     .flags = EMA_PARAM_OPTIONAL},
};
static const EmaParamTable view_table = {"hand-made view", sizeof(HandView), view_params,
                                         EMA_PARAMS_N(view_params), NULL};

static void print_debug(const EmaPoolView *view, guint gpu, const char *message) {
  fprintf(view->debug_data, "  debug gpu%u: %s\n", gpu, message);
}

static const char *const vacate_names[] = {"borrower", "peer", "host", "drop"};
static const char *const mode_names[] = {"direct", "prefetch", "offload"};

/* One decide() of INFO on GPU against VIEW; the plan to OUT. */
static gboolean decide(const EmaPolicyInfo *info, gconstpointer params, const EmaPoolView *view,
                       const HandStep *hand_step, guint gpu, guint64 needed, FILE *out,
                       GError **error) {
  g_autofree gpointer state = g_malloc0(MAX(ema_policy_info_state_size(info), 1));
  EmaPolicyInitFunc init = ema_policy_info_init_func(info);
  if (init && !init(state, params, view, error))
    return FALSE;
  if (info->kind == EMA_POLICY_BORROW) {
    const EmaBorrowPolicyOps *ops = info->ops;
    EmaBorrowPlan plan = {0};
    ops->decide(state, params, view, gpu, &plan);
    for (guint i = 0; i < plan.n && i < G_N_ELEMENTS(plan.actions); i++)
      fprintf(out, "  %s %" G_GINT64_FORMAT " slices %s gpu%u\n",
              plan.actions[i].slices >= 0 ? "borrow" : "return", ABS(plan.actions[i].slices),
              plan.actions[i].slices >= 0 ? "from" : "to", plan.actions[i].lender);
    if (plan.n == 0)
      fprintf(out, "  (empty plan: nothing borrowed or returned)\n");
  } else if (info->kind == EMA_POLICY_PREFETCH) {
    const EmaPrefetchPolicyOps *ops = info->ops;
    EmaStepCostView step = {
        .layers = (guint) hand_step->layers,
        .layer_compute_s = hand_step->layer_compute_s,
        .layer_memory_s = hand_step->layer_memory_s,
        .kv_bytes = hand_step->kv_bytes,
        .remote_bytes = hand_step->remote_bytes,
        .link_bandwidth = hand_step->link_bandwidth,
        .direct_bandwidth = hand_step->direct_bandwidth,
        .copy_fixed_cost = hand_step->copy_fixed_cost,
        .layer_kv_s = hand_step->layer_kv_s,
        .step_local_s = hand_step->step_local_s,
        .step_direct_s = hand_step->step_direct_s,
        .step_offload_s = hand_step->step_offload_s,
        .context_tokens = hand_step->context_tokens,
        .offload_full_context = hand_step->offload_full_context,
        .step_offload_read_s = hand_step->step_offload_read_s,
    };
    /* the pool's start (policy.h) */
    EmaPrefetchPlan plan = {.mode = EMA_REMOTE_DIRECT,
                            .depth = 1,
                            .layers_per_copy = 1,
                            .remote_limit = 1,
                            .limit_lender = G_MAXUINT,
                            .offload_cap = 1,
                            .room_limit = -1};
    ops->decide(state, params, view, gpu, &step, &plan);
    fprintf(out,
            "  mode %s, depth %u, layers_per_copy %u, remote_limit %.4g, room_limit %.4g, "
            "offload_cap %.4g%s\n",
            (guint) plan.mode < G_N_ELEMENTS(mode_names) ? mode_names[plan.mode] : "?", plan.depth,
            plan.layers_per_copy, plan.remote_limit, plan.room_limit, plan.offload_cap,
            plan.offload_read ? ", offload_read" : "");
  } else {
    const EmaReclaimPolicyOps *ops = info->ops;
    EmaReclaimPlan plan = {0};
    ops->decide(state, params, view, gpu, needed, &plan);
    for (guint i = 0; i < plan.n && i < G_N_ELEMENTS(plan.actions); i++) {
      const EmaReclaimAction *a = &plan.actions[i];
      fprintf(out, "  take back %" G_GUINT64_FORMAT " slices from gpu%u, data to %s", a->slices,
              a->borrower,
              (guint) a->target < G_N_ELEMENTS(vacate_names) ? vacate_names[a->target] : "?");
      if (a->target == EMA_VACATE_TO_PEER)
        fprintf(out, " gpu%u", a->target_gpu);
      fputc('\n', out);
    }
    if (plan.n == 0)
      fprintf(out, "  (empty plan: nothing taken back)\n");
  }
  return TRUE;
}

/* What a pool's view could not be, at the key that says it: no GPUs, a GPU using more slices or
 * blocks than it has, a loan outside the view, to the lender itself, or given twice. */
static gboolean check_view(const HandView *hand, const EmaNode *root, GError **error) {
  const EmaNode *gpus_node = ema_node_get(root, "gpus");
  const EmaNode *lent_node = ema_node_get(root, "lent");
  guint n = hand->gpus->len;
  if (n == 0) {
    ema_node_error(error, EMA_CONFIG_ERROR_RANGE, gpus_node ? gpus_node : root, "gpus",
                   "the view has no GPUs");
    return FALSE;
  }
  for (guint i = 0; i < n; i++) {
    const EmaGpuView *g = &g_array_index(hand->gpus, HandGpu, i).view;
    g_autofree char *path = g_strdup_printf("gpus.%u", i);
    const char *what = g->slices_used > g->slices         ? "slices_used is above slices"
                       : g->blocks_used > g->blocks_total ? "blocks_used is above blocks_total"
                                                          : NULL;
    if (what) {
      ema_node_error(error, EMA_CONFIG_ERROR_RANGE, gpus_node->items->pdata[i], path, "%s", what);
      return FALSE;
    }
  }
  for (guint i = 0; hand->lent && i < hand->lent->len; i++) {
    const HandLoan *loan = &g_array_index(hand->lent, HandLoan, i);
    g_autofree char *path = g_strdup_printf("lent.%u", i);
    const EmaNode *at = lent_node->items->pdata[i];
    gboolean twice = FALSE;
    for (guint j = 0; j < i; j++) {
      const HandLoan *other = &g_array_index(hand->lent, HandLoan, j);
      twice = twice || (other->lender == loan->lender && other->borrower == loan->borrower);
    }
    if ((guint64) loan->lender >= n || (guint64) loan->borrower >= n) {
      ema_node_error(error, EMA_CONFIG_ERROR_RANGE, at, path,
                     "lender and borrower must be below %u (the view's GPUs)", n);
      return FALSE;
    }
    if (loan->lender == loan->borrower || twice) {
      ema_node_error(error, EMA_CONFIG_ERROR_INVALID, at, path, "%s",
                     twice ? "a loan from this lender to this borrower is given twice: give one"
                           : "a GPU does not lend to itself");
      return FALSE;
    }
  }
  return TRUE;
}

gboolean ema_trypolicy_run(EmaPolicyKind kind, const char *name, const char *file, guint gpu,
                           guint64 needed, FILE *out, GError **error) {
  const EmaPolicyInfo *info = ema_policy_registry_find(kind, name, error);
  g_autoptr(EmaNode) root = NULL;
  g_autofree char *server_path = NULL;
  g_autofree EmaGpuView *gpus = NULL;
  g_autofree guint64 *lent = NULL, *remote = NULL;
  g_autofree double *shares = NULL;
  EmaServerSpec *server = NULL;
  HandView hand = {0};
  EmaPoolView view = {0};
  gboolean ok = FALSE;
  guint n;
  if (info == NULL || (root = ema_node_load_file(file, error)) == NULL)
    return FALSE;
  hand.policy_table = info->params;
  if (!ema_params_bind(&view_table, &hand, root, NULL, error))
    goto out;
  n = hand.gpus->len;
  if (!check_view(&hand, root, error))
    goto out;
  if (gpu >= n) {
    g_set_error(error, EMA_CONFIG_ERROR, EMA_CONFIG_ERROR_RANGE,
                "%s: --gpu %u: the view has %u GPUs (0 to %u)", file, gpu, n, n - 1);
    goto out;
  }
  server_path = ema_hwmodel_find(hand.server, error);
  if (server_path == NULL ||
      (server = ema_params_load_file(&ema_server_params, server_path, error)) == NULL)
    goto out;
  if ((gint64) n > server->gpus) {
    const EmaNode *gpus_node = ema_node_get(root, "gpus");
    ema_node_error(error, EMA_CONFIG_ERROR_RANGE, gpus_node ? gpus_node : root, "gpus",
                   "the view has %u GPUs, more than %s's %" G_GINT64_FORMAT, n, server->name,
                   server->gpus);
    goto out;
  }
  gpus = g_new0(EmaGpuView, n);
  lent = g_new0(guint64, (gsize) n * n);
  remote = g_new0(guint64, (gsize) n * n);
  shares = g_new0(double, (gsize) n *n);
  for (guint i = 0; i < n; i++) {
    const HandGpu *h = &g_array_index(hand.gpus, HandGpu, i);
    gpus[i] = h->view;
    gpus[i].index = i;
    gpus[i].running = (guint) h->running;
    gpus[i].waiting = (guint) h->waiting;
  }
  for (guint i = 0; hand.lent && i < hand.lent->len; i++) {
    const HandLoan *loan = &g_array_index(hand.lent, HandLoan, i);
    lent[loan->lender * n + loan->borrower] += (guint64) loan->slices;
    remote[loan->borrower * n + loan->lender] += (guint64) loan->blocks;
  }
  /* the pool's view, its tables the hand-made ones; no requests, no held room */
  view = (EmaPoolView){.now = hand.now,
                       .n_gpus = n,
                       .gpus = gpus,
                       .lent = lent,
                       .remote_blocks = remote,
                       .server = server,
                       .offload_share = shares,
                       .debug = print_debug,
                       .debug_data = out};
  fprintf(out, "%s (%s policy, %s) on gpu%u of %s (%u GPUs, %s):\n", info->name,
          ema_policy_kind_name(kind), info->origin, gpu, file, n, server->name);
  ok = decide(info, hand.params, &view, &hand.step, gpu, needed, out, error);
out:
  if (server)
    ema_params_free(&ema_server_params, server);
  ema_params_clear(&view_table, &hand);
  return ok;
}
