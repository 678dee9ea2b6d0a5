/* trypolicy.c: `ema-sim try-policy` (trypolicy.h): a hand-written pool view
 * bound from YAML into the policy API's structs, one decide() call, the plan
 * printed. Nothing is simulated and the plan is not checked against a
 * ledger: it is what the policy asked, as the pool would receive it; only a
 * plan counting more actions than it holds is refused, as a run refuses it
 * (ema_policy_info_plan_fits). The view is checked for what a pool's never
 * is (check_view), so that a plan never answers a view no run could give a
 * policy, nor a GPU the pool never calls the policy's kind for
 * (check_called), and a setting the policy's kind does not read (step:) is
 * an error, not ignored. */
#include "ema/cli/trypolicy.h"

#include <math.h>
#include <string.h>

#include "ema/core/bits.h"
#include "ema/core/params.h"
#include "ema/core/units.h"
#include "ema/hw/hwmodel.h"
#include "ema/pool/guard.h"
#include "ema/run/experiment.h"

/* A GPU's view is bound in place: its counts as INT (gint64, the same bytes
 * as guint64 for the counts >= 0 they are held to), its flags as BOOL; the
 * two guint fields go through gint64 ones beside it, and its lend_keep (the
 * pool view's array) beside them. */
typedef struct {
  EmaGpuView view;
  gint64 running, waiting;
  gint64 lend_keep;
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
     .help = "lends its free slices (any GPU but a tenant's with sharing.lend: false)"},
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
    /* a rate of blocks as the counts are bounded (a policy projects it over a horizon of up to
     * an hour and converts that to a count: past ~5e15/s the conversion is undefined) */
    {"demand_blocks_per_s", EMA_PARAM_DOUBLE, G(demand_blocks_per_s), .default_value = "0",
     .min = -1e15, .max = 1e15},
    {"last_step", EMA_PARAM_DURATION, G(last_step), .default_value = "0s", .min = 0, .max = 1e18},
    {"lend_keep", EMA_PARAM_INT, G_STRUCT_OFFSET(HandGpu, lend_keep), .default_value = "0",
     .min = 0, .max = 1e15,
     .help = "slices of its region it never lends (the view's lend_keep: its lend limit)"},
};
#undef COUNT
static const EmaParamTable gpu_table = {"gpu view", sizeof(HandGpu), gpu_params,
                                        EMA_PARAMS_N(gpu_params), NULL};

#define L(f) G_STRUCT_OFFSET(HandLoan, f)
static const EmaParam loan_params[] = {
    {"lender", EMA_PARAM_INT, L(lender), .flags = EMA_PARAM_REQUIRED, .min = 0, .max = 1023},
    {"borrower", EMA_PARAM_INT, L(borrower), .flags = EMA_PARAM_REQUIRED, .min = 0, .max = 1023},
    /* (a pool's loan holds a slice at least: its lent matrix's 0 is no loan) */
    {"slices", EMA_PARAM_INT, L(slices), .flags = EMA_PARAM_REQUIRED, .min = 1, .max = 1e15},
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
    /* a hardware model's link bandwidth range (hwmodel.c): 0 would be a step that never ends */
    {"link_bandwidth", EMA_PARAM_BANDWIDTH, S(link_bandwidth), .default_value = "397GB/s",
     .min = 1e6, .max = 1e14},
    {"direct_bandwidth", EMA_PARAM_BANDWIDTH, S(direct_bandwidth), .default_value = "375GB/s",
     .min = 1e6, .max = 1e14},
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
  if (!ema_policy_info_init(info, state, params, view, error))
    return FALSE;
  if (info->kind == EMA_POLICY_BORROW) {
    const EmaBorrowPolicyOps *ops = info->ops;
    EmaBorrowPlan plan = {0};
    ema_plugin_call_enter(info->guard_name, EMA_PLUGIN_HOOK_DECIDE);
    ops->decide(state, params, view, gpu, &plan);
    ema_plugin_call_leave(info->guard_name);
    if (!ema_policy_info_plan_fits(info, "decide", plan.n, G_N_ELEMENTS(plan.actions), error))
      return FALSE;
    for (guint i = 0; i < plan.n; i++)
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
    ema_plugin_call_enter(info->guard_name, EMA_PLUGIN_HOOK_DECIDE);
    ops->decide(state, params, view, gpu, &step, &plan);
    ema_plugin_call_leave(info->guard_name);
    fprintf(out,
            "  mode %s, depth %u, layers_per_copy %u, remote_limit %.4g, room_limit %.4g, "
            "offload_cap %.4g%s\n",
            (guint) plan.mode < G_N_ELEMENTS(mode_names) ? mode_names[plan.mode] : "?", plan.depth,
            plan.layers_per_copy, plan.remote_limit, plan.room_limit, plan.offload_cap,
            plan.offload_read ? ", offload_read" : "");
  } else {
    const EmaReclaimPolicyOps *ops = info->ops;
    EmaReclaimPlan plan = {0};
    ema_plugin_call_enter(info->guard_name, EMA_PLUGIN_HOOK_DECIDE);
    ops->decide(state, params, view, gpu, needed, &plan);
    ema_plugin_call_leave(info->guard_name);
    if (!ema_policy_info_plan_fits(info, "decide", plan.n, G_N_ELEMENTS(plan.actions), error))
      return FALSE;
    for (guint i = 0; i < plan.n; i++) {
      const EmaReclaimAction *a = &plan.actions[i];
      /* data with no place (a target outside the four, a peer past the view): a run drops it,
       * for the reason its reclaim row gives (the pool's words) */
      g_autofree char *no_place = ema_reclaim_action_no_place(a, view->n_gpus);
      fprintf(out, "  take back %" G_GUINT64_FORMAT " slices from gpu%u, data ", a->slices,
              a->borrower);
      if (no_place)
        fprintf(out, "dropped: %s", no_place);
      else
        fprintf(out, "to %s", vacate_names[a->target]);
      if (!no_place && a->target == EMA_VACATE_TO_PEER)
        fprintf(out, " gpu%u", a->target_gpu);
      fputc('\n', out);
    }
    if (plan.n == 0)
      fprintf(out, "  (empty plan: nothing taken back)\n");
  }
  return TRUE;
}

/* An error at KEY of the map ITEM, the view's PREFIX ("gpus.0", "lent.1"), or at ITEM where
 * KEY is left out (its count then 0). Returns FALSE. */
static gboolean view_error(GError **error, gint code, const EmaNode *item, const char *prefix,
                           const char *key, const char *format, ...) G_GNUC_PRINTF(6, 7);
static gboolean view_error(GError **error, gint code, const EmaNode *item, const char *prefix,
                           const char *key, const char *format, ...) {
  const EmaNode *at = key ? ema_node_get_key(item, key) : NULL;
  g_autofree char *path = at ? g_strdup_printf("%s.%s", prefix, key) : g_strdup(prefix);
  g_autofree char *message = NULL;
  va_list args;
  va_start(args, format);
  message = g_strdup_vprintf(format, args);
  va_end(args);
  ema_node_error(error, code, at ? at : item, path, "%s", message);
  return FALSE;
}

/* The slices that BLOCKS blocks of BLOCK_BYTES fill, ceil(BLOCKS x BLOCK_BYTES / EMA_SLICE_BYTES)
 * (ledger.h's ema_slices_for_blocks), as a double where the bytes pass 2^64: the counts a view
 * takes are at most 1e15 each, so only a product past any real memory loses digits. */
static double slices_for_blocks(guint64 blocks, guint64 block_bytes) {
  guint64 bytes;
  if (!g_uint64_checked_mul(&bytes, blocks, block_bytes))
    return ceil((double) blocks * (double) block_bytes / (double) EMA_SLICE_BYTES);
  return (double) (bytes / EMA_SLICE_BYTES + (bytes % EMA_SLICE_BYTES != 0));
}

/* A GPU's counts that only a tenant has (EmaGpuView: its blocks, requests and the slices that
 * hold or fetch them), with their offsets in HandGpu. */
static const struct {
  const char *key;
  gsize offset;
} tenant_counts[] = {
    {"slices_used", G(slices_used)},
    {"slices_staging", G(slices_staging)},
    {"slices_borrowed", G(slices_borrowed)},
    {"slices_borrowed_used", G(slices_borrowed_used)},
    {"slices_pending", G(slices_pending)},
    {"blocks_total", G(blocks_total)},
    {"blocks_used", G(blocks_used)},
    {"blocks_remote", G(blocks_remote)},
    {"blocks_short", G(blocks_short)},
    {"running", G_STRUCT_OFFSET(HandGpu, running)},
    {"waiting", G_STRUCT_OFFSET(HandGpu, waiting)},
};

/* GPU I of the view (its map ITEM) against what a pool's entry always is (ledger.c's view_fill
 * and ema_slice_ledger_check_counters): a GPU without a tenant has none of a tenant's counts;
 * its own, lent and staging slices fit in its slices, its blocks in the slices that hold them;
 * the blocks and slices on peers are of those it uses and borrows; its last step, ended by
 * NOW, lasted at most NOW. */
static gboolean check_gpu(const HandGpu *h, guint i, EmaTime now, const EmaNode *item,
                          GError **error) {
  const EmaGpuView *g = &h->view;
  g_autofree char *prefix = g_strdup_printf("gpus.%u", i);
  const struct {
    const char *key;
    guint64 slices;
  } parts[] = {{"slices_used", g->slices_used},
               {"slices_lent", g->slices_lent},
               {"slices_staging", g->slices_staging}};
  guint64 taken = 0;
  double local_slices;
  for (guint k = 0; !g->has_tenant && k < G_N_ELEMENTS(tenant_counts); k++) {
    gint64 value = G_STRUCT_MEMBER(gint64, h, tenant_counts[k].offset);
    if (value != 0)
      return view_error(error, EMA_CONFIG_ERROR_INVALID, item, prefix, tenant_counts[k].key,
                        "%" G_GINT64_FORMAT " on a GPU without a tenant (has_tenant: false): a "
                        "tenant's counts are 0 there",
                        value);
  }
  for (guint k = 0; k < G_N_ELEMENTS(parts); k++) {
    taken += parts[k].slices; /* each at most 1e15: no wrap */
    if (taken > g->slices)
      return view_error(error, EMA_CONFIG_ERROR_RANGE, item, prefix, parts[k].key,
                        "slices_used, slices_lent and slices_staging add up to %" G_GUINT64_FORMAT
                        ", above slices (%" G_GUINT64_FORMAT ")",
                        taken, g->slices);
  }
  if (g->last_step > now) {
    g_autofree char *step = ema_units_format_duration(g->last_step);
    g_autofree char *at = ema_units_format_duration(now);
    return view_error(error, EMA_CONFIG_ERROR_RANGE, item, prefix, "last_step",
                      "%s is longer than the view's now (%s): a step that ended by now lasted "
                      "at most that",
                      step, at);
  }
  if ((guint64) h->lend_keep > g->slices)
    return view_error(error, EMA_CONFIG_ERROR_RANGE, item, prefix, "lend_keep",
                      "%" G_GINT64_FORMAT " is above slices (%" G_GUINT64_FORMAT
                      "): it keeps slices of its own region",
                      h->lend_keep, g->slices);
  if (g->slices_borrowed_used > g->slices_borrowed)
    return view_error(error, EMA_CONFIG_ERROR_RANGE, item, prefix, "slices_borrowed_used",
                      "%" G_GUINT64_FORMAT " is above slices_borrowed (%" G_GUINT64_FORMAT ")",
                      g->slices_borrowed_used, g->slices_borrowed);
  if (g->blocks_used > g->blocks_total)
    return view_error(error, EMA_CONFIG_ERROR_RANGE, item, prefix, "blocks_used",
                      "%" G_GUINT64_FORMAT " is above blocks_total (%" G_GUINT64_FORMAT ")",
                      g->blocks_used, g->blocks_total);
  if (g->blocks_remote > g->blocks_used)
    return view_error(error, EMA_CONFIG_ERROR_RANGE, item, prefix, "blocks_remote",
                      "%" G_GUINT64_FORMAT " is above blocks_used (%" G_GUINT64_FORMAT
                      "): the blocks on peers are of those in use",
                      g->blocks_remote, g->blocks_used);
  local_slices = slices_for_blocks(g->blocks_used - g->blocks_remote, g->block_bytes);
  if (local_slices > (double) g->slices_used)
    return view_error(error, EMA_CONFIG_ERROR_RANGE, item, prefix, "slices_used",
                      "%" G_GUINT64_FORMAT " slices cannot hold the %" G_GUINT64_FORMAT
                      " local blocks (blocks_used - blocks_remote) of %" G_GUINT64_FORMAT
                      " bytes: they fill %.0f",
                      g->slices_used, g->blocks_used - g->blocks_remote, g->block_bytes,
                      local_slices);
  return TRUE;
}

/* The step (its map STEP, NULL where left out: the defaults agree) against what the pool's
 * always is (ledger.c's ema_slice_ledger_step_cost): the remote bytes are of those a layer reads,
 * the KV read of the memory side, the memory side of the layer's time. */
static gboolean check_step(const HandStep *s, const EmaNode *step, GError **error) {
  const struct {
    const char *key, *total_key;
    double part, total;
    const char *why;
  } parts[] = {
      {"remote_bytes", "kv_bytes", s->remote_bytes, s->kv_bytes,
       "the remote bytes are of those a layer reads"},
      {"layer_memory_s", "layer_compute_s", s->layer_memory_s, s->layer_compute_s,
       "a layer takes at least its memory side's time"},
      {"layer_kv_s", "layer_memory_s", s->layer_kv_s, s->layer_memory_s,
       "reading the KV is of the memory side"},
  };
  for (guint k = 0; step && k < G_N_ELEMENTS(parts); k++)
    if (parts[k].part > parts[k].total)
      return view_error(error, EMA_CONFIG_ERROR_RANGE, step, "step", parts[k].key,
                        "%g is above %s (%g): %s", parts[k].part, parts[k].total_key,
                        parts[k].total, parts[k].why);
  return TRUE;
}

/* What a pool's view could not be, each at the key that says it: no GPUs; a GPU's counts that
 * disagree (check_gpu); a loan outside the view, to the lender itself, given twice, from a GPU
 * that does not share, or holding more blocks than its slices do; loans that add up to more than
 * a lender's slices_lent, or to other than a borrower's slices_borrowed and blocks_remote (a
 * pool's lent matrix is the one record of both sides: ledger.h). */
static gboolean check_view(const HandView *hand, const EmaNode *root, GError **error) {
  const EmaNode *gpus_node = ema_node_get(root, "gpus");
  const EmaNode *lent_node = ema_node_get(root, "lent");
  guint n = hand->gpus->len;
  g_autofree guint64 *lends = NULL, *borrows = NULL, *holds = NULL;
  g_autofree guint64 *given = NULL; /* the (lender, borrower) pairs of the loans so far */
  if (n == 0) {
    ema_node_error(error, EMA_CONFIG_ERROR_RANGE, gpus_node ? gpus_node : root, "gpus",
                   "the view has no GPUs");
    return FALSE;
  }
  for (guint i = 0; i < n; i++)
    if (!check_gpu(&g_array_index(hand->gpus, HandGpu, i), i, hand->now, gpus_node->items->pdata[i],
                   error))
      return FALSE;
  lends = g_new0(guint64, n);   /* slices each GPU lends in the loans */
  borrows = g_new0(guint64, n); /* ...each borrows in them */
  holds = g_new0(guint64, n);   /* ...and its blocks they hold */
  given = g_new0(guint64, EMA_BITS_WORDS((gsize) n * n));
  for (guint i = 0; hand->lent && i < hand->lent->len; i++) {
    const HandLoan *loan = &g_array_index(hand->lent, HandLoan, i);
    g_autofree char *prefix = g_strdup_printf("lent.%u", i);
    const EmaNode *at = lent_node->items->pdata[i];
    const EmaGpuView *lender, *borrower;
    double slices;
    gsize pair;
    gboolean twice;
    if ((guint64) loan->lender >= n || (guint64) loan->borrower >= n)
      return view_error(error, EMA_CONFIG_ERROR_RANGE, at, prefix,
                        (guint64) loan->lender >= n ? "lender" : "borrower",
                        "must be below %u (the view's GPUs)", n);
    /* (a set of pairs: a walk of the loans before each was quadratic, minutes at 1,024 GPUs) */
    pair = (gsize) loan->lender * n + (gsize) loan->borrower;
    twice = ema_bits_has(given, (guint) pair);
    ema_bits_set(given, (guint) pair, TRUE);
    if (loan->lender == loan->borrower || twice) {
      ema_node_error(error, EMA_CONFIG_ERROR_INVALID, at, prefix, "%s",
                     twice ? "a loan from this lender to this borrower is given twice: give one"
                           : "a GPU does not lend to itself");
      return FALSE;
    }
    lender = &g_array_index(hand->gpus, HandGpu, loan->lender).view;
    borrower = &g_array_index(hand->gpus, HandGpu, loan->borrower).view;
    if (!lender->shares)
      return view_error(error, EMA_CONFIG_ERROR_INVALID, at, prefix, "lender",
                        "gpu%" G_GINT64_FORMAT " does not share (shares: false): it lends nothing",
                        loan->lender);
    slices = slices_for_blocks((guint64) loan->blocks, borrower->block_bytes);
    if (slices > (double) loan->slices)
      return view_error(error, EMA_CONFIG_ERROR_RANGE, at, prefix, "blocks",
                        "%" G_GINT64_FORMAT " blocks of gpu%" G_GINT64_FORMAT
                        "'s %" G_GUINT64_FORMAT
                        " bytes fill %.0f slices, above the loan's %" G_GINT64_FORMAT,
                        loan->blocks, loan->borrower, borrower->block_bytes, slices, loan->slices);
    /* each at most 1e15, and at most 1023 loans per GPU (no pair twice): no wrap */
    lends[loan->lender] += (guint64) loan->slices;
    borrows[loan->borrower] += (guint64) loan->slices;
    holds[loan->borrower] += (guint64) loan->blocks;
    if (lends[loan->lender] > lender->slices_lent)
      return view_error(error, EMA_CONFIG_ERROR_RANGE, at, prefix, "slices",
                        "gpu%" G_GINT64_FORMAT "'s loans come to %" G_GUINT64_FORMAT
                        " slices, above its slices_lent (%" G_GUINT64_FORMAT ")",
                        loan->lender, lends[loan->lender], lender->slices_lent);
    if (borrows[loan->borrower] > borrower->slices_borrowed)
      return view_error(error, EMA_CONFIG_ERROR_RANGE, at, prefix, "slices",
                        "the loans to gpu%" G_GINT64_FORMAT " come to %" G_GUINT64_FORMAT
                        " slices, above its slices_borrowed (%" G_GUINT64_FORMAT ")",
                        loan->borrower, borrows[loan->borrower], borrower->slices_borrowed);
    if (holds[loan->borrower] > borrower->blocks_remote)
      return view_error(error, EMA_CONFIG_ERROR_RANGE, at, prefix, "blocks",
                        "the loans to gpu%" G_GINT64_FORMAT " hold %" G_GUINT64_FORMAT
                        " of its blocks, above its blocks_remote (%" G_GUINT64_FORMAT ")",
                        loan->borrower, holds[loan->borrower], borrower->blocks_remote);
  }
  for (guint i = 0; i < n; i++) {
    const EmaGpuView *g = &g_array_index(hand->gpus, HandGpu, i).view;
    g_autofree char *prefix = g_strdup_printf("gpus.%u", i);
    const EmaNode *item = gpus_node->items->pdata[i];
    if (borrows[i] < g->slices_borrowed)
      return view_error(error, EMA_CONFIG_ERROR_INVALID, item, prefix, "slices_borrowed",
                        "%" G_GUINT64_FORMAT
                        ", but the loans to gpu%u (lent) come to %" G_GUINT64_FORMAT " slices",
                        g->slices_borrowed, i, borrows[i]);
    if (holds[i] < g->blocks_remote)
      return view_error(error, EMA_CONFIG_ERROR_INVALID, item, prefix, "blocks_remote",
                        "%" G_GUINT64_FORMAT
                        ", but the loans to gpu%u (lent) hold %" G_GUINT64_FORMAT " of its blocks",
                        g->blocks_remote, i, holds[i]);
  }
  return TRUE;
}

/* GPU of the view (its map in the view's gpus list, GPUS) is one the pool calls a policy of KIND
 * for: a borrow policy for a GPU with a tenant (core.c's ema_pool_core_decide, after its tenant's
 * step or when it lacks blocks), a prefetch policy for one with a tenant whose KV is partly
 * remote (before its tenant's step: pool.c's shared_step_time asks plan_step only for a step that
 * reads remote KV), a reclaim policy for one with slices lent
 * (a loan from it: ema_pool_core_decide and ema_pool_core_reclaim_everything ask only then, of a
 * GPU with or without a tenant). A plan for another answers a call no run makes: an error at the
 * GPU's has_tenant, or its entry. */
static gboolean check_called(EmaPolicyKind kind, const HandView *hand, guint gpu,
                             const EmaNode *gpus, GError **error) {
  const EmaGpuView *g = &g_array_index(hand->gpus, HandGpu, gpu).view;
  const EmaNode *item = gpus->items->pdata[gpu];
  g_autofree char *prefix = g_strdup_printf("gpus.%u", gpu);
  if (kind == EMA_POLICY_RECLAIM) {
    for (guint i = 0; hand->lent && i < hand->lent->len; i++)
      if (g_array_index(hand->lent, HandLoan, i).lender == (gint64) gpu)
        return TRUE;
    return view_error(error, EMA_CONFIG_ERROR_INVALID, item, prefix, NULL,
                      "--gpu %u lends nothing (no loan in lent: is from it): the pool calls a "
                      "reclaim policy only for a GPU with slices lent",
                      gpu);
  }
  if (g->has_tenant && kind == EMA_POLICY_PREFETCH && g->blocks_remote == 0)
    return view_error(error, EMA_CONFIG_ERROR_INVALID, item, prefix, "blocks_remote",
                      "--gpu %u holds no remote KV (blocks_remote: 0): the pool calls a prefetch "
                      "policy only before a step of a tenant whose KV is partly on lenders",
                      gpu);
  if (g->has_tenant)
    return TRUE;
  return view_error(error, EMA_CONFIG_ERROR_INVALID, item, prefix, "has_tenant",
                    "--gpu %u has no tenant (has_tenant: false): the pool calls a %s policy only "
                    "for a GPU with a tenant (%s)",
                    gpu, ema_policy_kind_name(kind),
                    kind == EMA_POLICY_BORROW ? "after its tenant's step, or when it lacks blocks"
                                              : "before its tenant's step");
}

gboolean ema_trypolicy_run(EmaPolicyKind kind, const char *name, const char *file, guint gpu,
                           guint64 needed, FILE *out, GError **error) {
  const EmaPolicyInfo *info = ema_policy_registry_find(kind, name, error);
  g_autoptr(EmaNode) root = NULL;
  g_autofree EmaGpuView *gpus = NULL;
  g_autofree guint64 *lent = NULL, *remote = NULL, *keep = NULL;
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
  /* a step for a policy that reads none (decide() hands it to prefetch only) */
  if (kind != EMA_POLICY_PREFETCH && ema_node_get_key(root, "step")) {
    ema_node_error(error, EMA_CONFIG_ERROR_KEY, ema_node_get_key(root, "step"), "step",
                   "the coming step's costs are read by prefetch policies only, not by a %s "
                   "policy: leave it out",
                   ema_policy_kind_name(kind));
    goto out;
  }
  if (!check_view(&hand, root, error) || !check_step(&hand.step, ema_node_get(root, "step"), error))
    goto out;
  if (gpu >= n) {
    g_set_error(error, EMA_CONFIG_ERROR, EMA_CONFIG_ERROR_RANGE,
                "%s: --gpu %u: the view has %u GPUs (0 to %u)", file, gpu, n, n - 1);
    goto out;
  }
  /* the server by its name, its error at the view's server key: one it names none (as an
   * experiment's server: is), and one whose file does not load, after that file's place */
  {
    GError *inner = NULL;
    if ((server = ema_server_load(hand.server, &inner)) == NULL) {
      const EmaNode *server_node = ema_node_get(root, "server");
      ema_node_error(error,
                     inner->domain == EMA_CONFIG_ERROR ? inner->code : EMA_CONFIG_ERROR_INVALID,
                     server_node ? server_node : root, "server", "%s", inner->message);
      g_error_free(inner);
      goto out;
    }
  }
  if ((gint64) n > server->gpus) {
    const EmaNode *gpus_node = ema_node_get(root, "gpus");
    ema_node_error(error, EMA_CONFIG_ERROR_RANGE, gpus_node ? gpus_node : root, "gpus",
                   "the view has %u GPUs, more than %s's %" G_GINT64_FORMAT, n, server->name,
                   server->gpus);
    goto out;
  }
  if (!check_called(kind, &hand, gpu, ema_node_get(root, "gpus"), error))
    goto out;
  gpus = g_new0(EmaGpuView, n);
  lent = g_new0(guint64, (gsize) n * n);
  remote = g_new0(guint64, (gsize) n * n);
  shares = g_new0(double, (gsize) n *n);
  keep = g_new0(guint64, n);
  for (guint i = 0; i < n; i++) {
    const HandGpu *h = &g_array_index(hand.gpus, HandGpu, i);
    keep[i] = (guint64) h->lend_keep;
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
                       .lend_keep = keep,
                       .debug = print_debug,
                       .debug_data = out};
  fprintf(out, "%s (%s policy, %s) on gpu%u of %s (%u GPUs, %s):\n", info->name,
          ema_policy_kind_name(kind), info->origin, gpu, file, n, server->name);
  ok = decide(info, hand.params, &view, &hand.step, gpu, needed, out, error);
out:
  if (server)
    ema_server_free(server);
  ema_params_clear(&view_table, &hand);
  return ok;
}
