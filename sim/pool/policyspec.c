/* policyspec.c: the parameter table of an experiment's `policy` section
 * (policyspec.h). Names are checked against the registry when bound, with
 * the list of known names in the error; each *_params map is bound by the
 * chosen policy's own table (an OBJECT parameter whose table follows the
 * name bound just before it). */
#include "ema/pool/policyspec.h"

#include "ema/pool/registry.h"

#define SPEC_FIELD(f) G_STRUCT_OFFSET(EmaPolicySpec, f)

static const char *const preempt_choice_names[] = {"engine",    "recompute", "swap-host",
                                                   "swap-peer", "cheaper",   NULL};

static const char *const prefix_tier_names[] = {"local", "remote", NULL};

static const EmaParamTable *params_of(EmaPolicyKind kind, const char *name) {
  const EmaPolicyInfo *info = name ? ema_policy_registry_find(kind, name, NULL) : NULL;
  return info ? info->params : NULL;
}

static const EmaParamTable *borrow_table(gconstpointer object) {
  return params_of(EMA_POLICY_BORROW, ((const EmaPolicySpec *) object)->borrow);
}

static const EmaParamTable *prefetch_table(gconstpointer object) {
  return params_of(EMA_POLICY_PREFETCH, ((const EmaPolicySpec *) object)->prefetch);
}

static const EmaParamTable *reclaim_table(gconstpointer object) {
  return params_of(EMA_POLICY_RECLAIM, ((const EmaPolicySpec *) object)->reclaim);
}

/* The names must exist; checked before the *_params maps are bound, by
 * binding order: this runs as each name's parameter table lookup. */
static gboolean check_policy(gpointer object, const EmaNode *node, const char *path,
                             GError **error) {
  const EmaPolicySpec *spec = object;
  const char *const keys[] = {"borrow", "prefetch", "reclaim"};
  const char *const names[] = {spec->borrow, spec->prefetch, spec->reclaim};
  for (guint k = 0; k < 3; k++) {
    GError *inner = NULL;
    if (ema_policy_registry_find((EmaPolicyKind) k, names[k], &inner) == NULL) {
      g_autofree char *key_path = path ? g_strconcat(path, ".", keys[k], NULL) : g_strdup(keys[k]);
      const EmaNode *at = ema_node_get(node, keys[k]);
      ema_node_error(error, EMA_CONFIG_ERROR_KEY, at ? at : node, key_path, "%s", inner->message);
      g_error_free(inner);
      return FALSE;
    }
  }
  return TRUE;
}

static const EmaParam spec_params[] = {
    {"name", EMA_PARAM_STRING, SPEC_FIELD(name), .default_value = "custom",
     .help = "the composition's name (set by `policy: NAME`)"},
    {"borrow", EMA_PARAM_STRING, SPEC_FIELD(borrow), .default_value = "none",
     .help = "borrow policy (ema-sim list policies)"},
    {"borrow_params", EMA_PARAM_OBJECT, SPEC_FIELD(borrow_params), .table_for = borrow_table,
     .help = "the borrow policy's parameters (ema-sim describe-policy NAME)"},
    {"prefetch", EMA_PARAM_STRING, SPEC_FIELD(prefetch), .default_value = "direct",
     .help = "prefetch policy"},
    {"prefetch_params", EMA_PARAM_OBJECT, SPEC_FIELD(prefetch_params), .table_for = prefetch_table,
     .help = "the prefetch policy's parameters"},
    {"reclaim", EMA_PARAM_STRING, SPEC_FIELD(reclaim), .default_value = "drop",
     .help = "reclaim policy"},
    {"reclaim_params", EMA_PARAM_OBJECT, SPEC_FIELD(reclaim_params), .table_for = reclaim_table,
     .help = "the reclaim policy's parameters"},
    {"preempt", EMA_PARAM_ENUM, SPEC_FIELD(preempt), .default_value = "engine",
     .choices = preempt_choice_names,
     .help = "engine (each tenant's setting), recompute, swap-host, swap-peer or cheaper (each "
             "preempted request parked as swap-peer or recomputed, whichever the model prices "
             "lower)"},
    {"prefix_tier", EMA_PARAM_ENUM, SPEC_FIELD(prefix_tier_remote), .default_value = "remote",
     .choices = prefix_tier_names,
     .help = "where cached prefix blocks no request holds may stay: remote (also in borrowed "
             "slices, fetched over the link on a hit, dropped first when their room goes) or "
             "local (only in the GPU's own slices)"},
    {"decision_period", EMA_PARAM_DURATION, SPEC_FIELD(decision_period), .default_value = "10ms",
     .min = 0, .max = 3.6e12,
     .help = "after a step, the policies run at most this often per GPU (always when the step "
             "lacked blocks)"},
};

const EmaParamTable ema_policy_spec_params = {"policy", sizeof(EmaPolicySpec), spec_params,
                                              EMA_PARAMS_N(spec_params), check_policy};

const char *ema_preempt_choice_name(EmaPreemptChoice choice) {
  g_return_val_if_fail((guint) choice < G_N_ELEMENTS(preempt_choice_names) - 1, NULL);
  return preempt_choice_names[choice];
}

gboolean ema_policy_spec_parks_on_peers(const EmaPolicySpec *spec) {
  return spec->preempt == EMA_PREEMPT_CHOICE_SWAP_PEER ||
         spec->preempt == EMA_PREEMPT_CHOICE_CHEAPER;
}

EmaNode *ema_policy_spec_resolve(const EmaNode *at, const char *path, GError **error) {
  GError *inner = NULL;
  const EmaPolicyComposition *composition = ema_policy_registry_find_composition(at->value, &inner);
  EmaNode *tree;
  g_autofree char *source = NULL;
  if (composition == NULL) {
    ema_node_error(error, EMA_CONFIG_ERROR_KEY, at, path ? path : "policy", "%s", inner->message);
    g_error_free(inner);
    return NULL;
  }
  source = g_strdup_printf("composition '%s'", composition->name);
  tree = ema_node_load_string(composition->yaml, source, NULL, error);
  /* the name is the composition's own, from where its map is: a name from elsewhere would read
   * as a rename (params.c), and every later expansion would load the composition again over
   * the keys overrides had set inside it */
  if (tree && tree->kind == EMA_NODE_MAP)
    ema_node_set(tree, "name", ema_node_new_scalar(composition->name, tree->file, 1, 1));
  return tree;
}
