/* experiment.c: the experiment file's parameter tables and its loading
 * pipeline (load -> expand names -> overrides -> bind -> cross-checks), the
 * resolved.yaml writer, and loading of server models by name.
 *
 * Invariants after a successful load: the server is complete and checked;
 * every op has at least one flow; every flow's endpoints exist on the server
 * and form a flow the fabric can carry (src_index/dst_index are set). */
#include "ema/run/experiment.h"

#include "ema/hw/steptime.h"

#include <string.h>

#include "ema/core/file.h"
#include "ema/core/modelpath.h"
#include "ema/core/units.h"
#include "ema/pool/core.h"
#include "ema/pool/pool.h"
#include "ema/pool/registry.h"

static const char *const flow_kind_names[] = {"copy", "read", NULL};

#define FLOW_FIELD(f) G_STRUCT_OFFSET(EmaOpFlowSpec, f)
#define EXPECT_FIELD(f) G_STRUCT_OFFSET(EmaOpExpect, f)
#define OP_FIELD(f) G_STRUCT_OFFSET(EmaOpSpec, f)
#define EXPERIMENT_FIELD(f) G_STRUCT_OFFSET(EmaExperiment, f)

static const EmaParam flow_params[] = {
    {"kind", EMA_PARAM_ENUM, FLOW_FIELD(kind), .flags = EMA_PARAM_REQUIRED,
     .choices = flow_kind_names,
     .help = "copy: copy engine src -> dst; read: a kernel on dst streams memory of src"},
    {"src", EMA_PARAM_STRING, FLOW_FIELD(src), .flags = EMA_PARAM_REQUIRED,
     .help = "where the data is: gpu0..gpuN-1 or host"},
    {"dst", EMA_PARAM_STRING, FLOW_FIELD(dst), .flags = EMA_PARAM_REQUIRED,
     .help = "where it goes (copy) or which GPU reads it (read)"},
    {"bytes", EMA_PARAM_SIZE, FLOW_FIELD(bytes), .flags = EMA_PARAM_REQUIRED, .min = 1,
     .max = 1125899906842624.0, .help = "bytes to move"},
};

static const EmaParamTable flow_table = {"flow", sizeof(EmaOpFlowSpec), flow_params,
                                         EMA_PARAMS_N(flow_params), NULL};

static const EmaParam expect_params[] = {
    {"time", EMA_PARAM_DURATION, EXPECT_FIELD(time), .flags = EMA_PARAM_OPTIONAL, .min = 1,
     .max = 1e15, .help = "expected op time"},
    {"bandwidth", EMA_PARAM_BANDWIDTH, EXPECT_FIELD(bandwidth), .flags = EMA_PARAM_OPTIONAL,
     .min = 1, .max = 1e15, .help = "expected op bytes / op time"},
    {"tolerance", EMA_PARAM_FRACTION, EXPECT_FIELD(tolerance), .flags = EMA_PARAM_OPTIONAL,
     .min = 1e-9, .max = 1, .help = "allowed relative error (default: the experiment's)"},
};

static gboolean check_expect(gpointer object, const EmaNode *node, const char *path,
                             GError **error) {
  const EmaOpExpect *expect = object;
  if (expect->time && expect->bandwidth) {
    ema_node_error(error, EMA_CONFIG_ERROR_INVALID, node, path,
                   "give either time or bandwidth, not both");
    return FALSE;
  }
  if (!expect->time && !expect->bandwidth && node->keys->len > 0) { /* `expect: {}` is none */
    ema_node_error(error, EMA_CONFIG_ERROR_INVALID, node, path,
                   "an expectation needs time or bandwidth");
    return FALSE;
  }
  return TRUE;
}

static const EmaParamTable expect_table = {"expect", sizeof(EmaOpExpect), expect_params,
                                           EMA_PARAMS_N(expect_params), check_expect};

static const EmaParam op_params[] = {
    {"name", EMA_PARAM_STRING, OP_FIELD(name), .flags = EMA_PARAM_REQUIRED,
     .help = "name shown in the results"},
    {"flows", EMA_PARAM_LIST, OP_FIELD(flows), .table = &flow_table,
     .help = "transfers that start together"},
    {"expect", EMA_PARAM_STRUCT, OP_FIELD(expect), .table = &expect_table,
     .help = "optional: measured value to compare with (time or bandwidth)"},
};

/* The most flows one op holds: every ordered pair of a GB200 NVL72's GPUs is 5,112; the fabric's
 * fair shares cost more than the square of the flows sharing it (8,192 distinct copies on the
 * rack: about 5 s; 20,000: 40 s, 50,000: past 100 s), so an op past it is an error, not a wait
 * that looks like a hang. */
#define OP_FLOWS_MAX 8192

static gboolean check_op(gpointer object, const EmaNode *node, const char *path, GError **error) {
  const EmaOpSpec *op = object;
  const EmaNode *flows = ema_node_get(node, "flows");
  g_autofree char *flows_path = g_strconcat(path, ".flows", NULL);
  if (op->flows->len == 0) {
    ema_node_error(error, EMA_CONFIG_ERROR_INVALID, flows ? flows : node, flows_path,
                   "an op needs at least one flow");
    return FALSE;
  }
  if (op->flows->len > OP_FLOWS_MAX) {
    ema_node_error(error, EMA_CONFIG_ERROR_RANGE, flows ? flows : node, flows_path,
                   "%u flows: an op holds at most %d (every ordered pair of 72 GPUs is 5,112; "
                   "the fabric's shares take more than the square of the flows): split it into "
                   "ops",
                   op->flows->len, OP_FLOWS_MAX);
    return FALSE;
  }
  return TRUE;
}

static const EmaParamTable op_table = {"op", sizeof(EmaOpSpec), op_params, EMA_PARAMS_N(op_params),
                                       check_op};

static const char *const decode_mode_names[] = {"local", "direct", "prefetch", NULL};
static const char *const peer_pull_mode_names[] = {"copy", "direct", NULL};
static const char *const events_tier_names[] = {"each", "step", NULL};

#define DECODE_FIELD(f) G_STRUCT_OFFSET(EmaDecodeScenarioSpec, f)
/* prefetch's layers fetched ahead where a scenario leaves depth out */
#define DECODE_DEPTH_DEFAULT 2

static const EmaParam decode_params[] = {
    {"name", EMA_PARAM_STRING, DECODE_FIELD(name), .flags = EMA_PARAM_REQUIRED,
     .help = "name shown in the results"},
    {"model", EMA_PARAM_STRUCT, DECODE_FIELD(model), .table = &ema_llm_params,
     .resolve = ema_llm_resolve, .flags = EMA_PARAM_REQUIRED,
     .help = "LLM shape: a name from hwmodels/llms, or a map"},
    {"batch", EMA_PARAM_INT, DECODE_FIELD(batch), .flags = EMA_PARAM_REQUIRED, .min = 1, .max = 1e6,
     .help = "sequences decoding one token each"},
    {"context", EMA_PARAM_INT, DECODE_FIELD(context), .flags = EMA_PARAM_REQUIRED, .min = 1,
     .max = 1e8, .help = "tokens of KV each sequence reads"},
    {"mode", EMA_PARAM_ENUM, DECODE_FIELD(mode), .default_value = "local",
     .choices = decode_mode_names,
     .help = "local, direct (kernels load remote KV) or prefetch (copied ahead)"},
    {"remote_fraction", EMA_PARAM_FRACTION, DECODE_FIELD(remote_fraction), .default_value = "0%",
     .min = 0, .max = 1, .help = "share of the KV on gpu1 (direct and prefetch)"},
    {"depth", EMA_PARAM_INT, DECODE_FIELD(depth),
     .default_value = G_STRINGIFY(DECODE_DEPTH_DEFAULT), .min = 1, .max = 1024,
     .help = "prefetch: layers fetched ahead"},
    {"peer_pull", EMA_PARAM_BANDWIDTH, DECODE_FIELD(peer_pull), .default_value = "0B/s", .min = 0,
     .max = 1e14, .help = "a peer pulls this much from gpu0's HBM during the step (interference)"},
    {"peer_pull_mode", EMA_PARAM_ENUM, DECODE_FIELD(peer_pull_mode), .default_value = "copy",
     .choices = peer_pull_mode_names,
     .help = "how the peer pulls: copy engines, or its kernel loading gpu0's memory (direct); "
             "the simulator charges both with gpu.interference_outgoing"},
    {"expect", EMA_PARAM_STRUCT, DECODE_FIELD(expect), .table = &expect_table,
     .help = "optional: measured value to compare with (time, or bytes read / time)"},
};

static gboolean check_decode(gpointer object, const EmaNode *node, const char *path,
                             GError **error) {
  const EmaDecodeScenarioSpec *d = object;
  if ((d->mode == EMA_DECODE_SCENARIO_LOCAL) != (d->remote_fraction == 0)) {
    g_autofree char *key_path = g_strconcat(path, ".remote_fraction", NULL);
    ema_node_error(error, EMA_CONFIG_ERROR_INVALID, node, key_path, "%s",
                   d->mode == EMA_DECODE_SCENARIO_LOCAL
                       ? "mode local has no remote KV: give mode direct or prefetch"
                       : "mode direct or prefetch needs a remote_fraction above 0");
    return FALSE;
  }
  if (d->mode != EMA_DECODE_SCENARIO_PREFETCH && d->depth != DECODE_DEPTH_DEFAULT) {
    /* only prefetch fetches layers ahead: another mode would ignore it */
    g_autofree char *key_path = g_strconcat(path, ".depth", NULL);
    ema_node_error(error, EMA_CONFIG_ERROR_INVALID, ema_node_get(node, "depth"), key_path, "%s",
                   "depth is prefetch's (layers fetched ahead): give mode prefetch, or leave depth "
                   "out");
    return FALSE;
  }
  if (d->peer_pull_mode != EMA_PEER_PULL_COPY && d->peer_pull == 0) {
    g_autofree char *key_path = g_strconcat(path, ".peer_pull_mode", NULL);
    ema_node_error(error, EMA_CONFIG_ERROR_INVALID, ema_node_get(node, "peer_pull_mode"), key_path,
                   "%s", "a peer_pull_mode needs a peer_pull above 0");
    return FALSE;
  }
  return TRUE;
}

static const EmaParamTable decode_table = {"decode scenario", sizeof(EmaDecodeScenarioSpec),
                                           decode_params, EMA_PARAMS_N(decode_params),
                                           check_decode};

static EmaNode *resolve_server(const EmaNode *at, const char *key_path, GError **error) {
  GError *inner = NULL;
  g_autofree char *path = ema_hwmodel_find(at->value, &inner);
  EmaNode *tree;
  if (path == NULL) {
    ema_node_error(error, EMA_CONFIG_ERROR_KEY, at, key_path ? key_path : "server", "%s",
                   inner->message);
    g_error_free(inner);
    return NULL;
  }
  tree = ema_model_load_named(path, at->value, error);
  return tree;
}

/* "host" -> EMA_ENDPOINT_HOST, "gpuN" -> N (N < gpus, in decimal without leading zeros: gpu01
 * is not gpu1's name); -2 if invalid. */
static gint parse_endpoint(const char *text, gint64 gpus) {
  guint64 index;
  if (strcmp(text, "host") == 0)
    return EMA_ENDPOINT_HOST;
  if (!g_str_has_prefix(text, "gpu") || !g_ascii_isdigit(text[3]) ||
      (text[3] == '0' && text[4] != '\0') ||
      !g_ascii_string_to_unsigned(text + 3, 10, 0, (guint64) gpus - 1, &index, NULL))
    return -2;
  return (gint) index;
}

/* The error for the endpoint TEXT that parse_endpoint() refused, at NODE (PATH): what this
 * server has, and the name to write where TEXT is one with leading zeros (gpu01: gpu1). */
static void endpoint_error(GError **error, const char *text, gint64 gpus, const EmaNode *node,
                           const char *path) {
  /* (TEXT past "gpu" only where it starts so: "0" or "" is shorter than the prefix) */
  const char *digits = g_str_has_prefix(text, "gpu") ? text + 3 + strspn(text + 3, "0") : NULL;
  g_autofree char *quoted = ema_file_quote_cut(text, -1);
  g_autofree char *written = NULL;
  if (digits && digits > text + 3 && digits[strspn(digits, "0123456789")] == '\0') {
    written = g_strconcat("gpu", *digits ? digits : "0", NULL);
    if (parse_endpoint(written, gpus) < 0)
      g_clear_pointer(&written, g_free);
  }
  ema_node_error(error, EMA_CONFIG_ERROR_INVALID, node, path,
                 "unknown endpoint '%s' (%s%s%sthis server has host and gpu0..gpu%" G_GINT64_FORMAT
                 ")",
                 quoted, written ? "write " : "", written ? written : "",
                 written ? ", without leading zeros: " : "", gpus - 1);
}

/* NAME (of the item at NODE, PATH; the experiment's where PATH is NULL) holds no control
 * character: names are columns and labels of the outputs (a newline in a CSV field made the
 * run's own figures unreadable). */
static gboolean name_plain(const char *name, const EmaNode *node, const char *path,
                           GError **error) {
  const char *c = ema_file_control_char(name);
  g_autofree char *key_path = NULL;
  if (c == NULL)
    return TRUE;
  key_path = path ? g_strconcat(path, ".name", NULL) : g_strdup("name");
  ema_node_error(error, EMA_CONFIG_ERROR_INVALID, ema_node_get(node, "name"), key_path,
                 "a name holds no control character (0x%02x at byte %u)", (guchar) *c,
                 (guint) (c - name));
  return FALSE;
}

/* NAME (of the item at NODE, PATH, a WHAT's) is not empty: it is a key of the outputs (WHY);
 * else an error at it. */
static gboolean name_filled(const char *name, const EmaNode *node, const char *path,
                            const char *what, const char *why, GError **error) {
  if (name[0] != '\0')
    return TRUE;
  ema_node_error(error, EMA_CONFIG_ERROR_INVALID, ema_node_get(node, "name"), path,
                 "%s's name is not empty (%s)", what, why);
  return FALSE;
}

/* NAME, item I of the list KEY, into SEEN; FALSE with an error at its name when already there. */
static gboolean name_once(GHashTable *seen, const char *name, const EmaNode *root, const char *key,
                          guint i, GError **error) {
  const EmaNode *item = ema_node_get(root, key)->items->pdata[i];
  g_autofree char *path = g_strdup_printf("%s.%u", key, i);
  g_autofree char *name_path = g_strconcat(path, ".name", NULL);
  if (!name_plain(name, item, path, error) ||
      !name_filled(name, item, name_path, strcmp(key, "ops") == 0 ? "an op" : "a decode scenario",
                   "its figures are keyed by it", error))
    return FALSE;
  if (g_hash_table_add(seen, (gpointer) name))
    return TRUE;
  g_autofree char *quoted = ema_file_quote_cut(name, -1);
  ema_node_error(error, EMA_CONFIG_ERROR_INVALID, ema_node_get(item, "name"), path,
                 "name '%s' is used twice (each op and decode scenario needs its own)", quoted);
  return FALSE;
}

/* The experiment's name is one line and not empty; every op and decode scenario has a name of
 * its own, one line and not empty: their figures are keyed by it, side by side (summary.json, a
 * sweep's columns). The second of a name is the error. */
static gboolean check_names(const EmaExperiment *experiment, const EmaNode *root, GError **error) {
  g_autoptr(GHashTable) seen = g_hash_table_new(g_str_hash, g_str_equal);
  /* the experiment's own: its results folder (results/NAME), figures' titles, a sweep's name */
  if (!name_plain(experiment->name, root, NULL, error))
    return FALSE;
  if (!name_filled(experiment->name, root, "name", "an experiment",
                   "it names its results folder and figures", error))
    return FALSE;
  for (guint i = 0; experiment->ops && i < experiment->ops->len; i++)
    if (!name_once(seen, g_array_index(experiment->ops, EmaOpSpec, i).name, root, "ops", i, error))
      return FALSE;
  for (guint i = 0; experiment->decode && i < experiment->decode->len; i++)
    if (!name_once(seen, g_array_index(experiment->decode, EmaDecodeScenarioSpec, i).name, root,
                   "decode", i, error))
      return FALSE;
  return TRUE;
}

/* Each decode scenario's step model can be built on the server (its model's shape, the GPU's
 * profile, FP8 weights on a GPU with an FP8 rate), its context is within the model's (as
 * step-time holds a step's), and its remote KV and peer pulls have a gpu1 to be on (the
 * scenario runs on gpu0): said at the scenario, not at run time. */
static gboolean check_decodes(const EmaExperiment *experiment, const EmaNode *root,
                              GError **error) {
  const EmaNode *decode_node = ema_node_get(root, "decode");
  for (guint i = 0; experiment->decode && i < experiment->decode->len; i++) {
    const EmaDecodeScenarioSpec *d = &g_array_index(experiment->decode, EmaDecodeScenarioSpec, i);
    GError *inner = NULL;
    g_autoptr(EmaStepModel) model = NULL;
    if (experiment->server.gpus < 2 && (d->remote_fraction > 0 || d->peer_pull > 0)) {
      const char *key = d->remote_fraction > 0 ? "remote_fraction" : "peer_pull";
      g_autofree char *path = g_strdup_printf("decode.%u.%s", i, key);
      ema_node_error(error, EMA_CONFIG_ERROR_INVALID,
                     ema_node_get(decode_node->items->pdata[i], key), path,
                     "%s needs a gpu1, and server %s has one GPU", key, experiment->server.name);
      return FALSE;
    }
    if (d->model.max_context > 0 && d->context > d->model.max_context) {
      g_autofree char *path = g_strdup_printf("decode.%u.context", i);
      ema_node_error(error, EMA_CONFIG_ERROR_RANGE,
                     ema_node_get(decode_node->items->pdata[i], "context"), path,
                     "%" G_GINT64_FORMAT " tokens, above %s's context of %" G_GINT64_FORMAT
                     " tokens (its max_context)",
                     d->context, d->model.name, d->model.max_context);
      return FALSE;
    }
    model = ema_step_model_new(&d->model, &experiment->server, 1, &inner);
    if (model == NULL) {
      g_autofree char *path = g_strdup_printf("decode.%u", i);
      ema_node_error(error, EMA_CONFIG_ERROR_INVALID, decode_node->items->pdata[i], path, "%s",
                     inner->message);
      g_error_free(inner);
      return FALSE;
    }
  }
  return TRUE;
}

static gboolean check_flows(EmaExperiment *experiment, const EmaNode *root, GError **error) {
  const EmaNode *ops_node = ema_node_get(root, "ops");
  g_autoptr(EmaSim) sim = ema_sim_new();
  g_autoptr(EmaFabric) fabric = ema_fabric_new(sim, &experiment->server);

  for (guint i = 0; experiment->ops && i < experiment->ops->len; i++) {
    EmaOpSpec *op = &g_array_index(experiment->ops, EmaOpSpec, i);
    const EmaNode *flows_node = ema_node_get(ops_node->items->pdata[i], "flows");
    for (guint j = 0; j < op->flows->len; j++) {
      EmaOpFlowSpec *flow = &g_array_index(op->flows, EmaOpFlowSpec, j);
      const EmaNode *flow_node = flows_node->items->pdata[j];
      const char *const ends[] = {"src", "dst"};
      gint *indices[] = {&flow->src_index, &flow->dst_index};
      g_autofree char *flow_path = g_strdup_printf("ops.%u.flows.%u", i, j);
      GError *inner = NULL;
      for (guint e = 0; e < 2; e++) {
        const char *text = e == 0 ? flow->src : flow->dst;
        *indices[e] = parse_endpoint(text, experiment->server.gpus);
        if (*indices[e] == -2) {
          g_autofree char *end_path = g_strconcat(flow_path, ".", ends[e], NULL);
          endpoint_error(error, text, experiment->server.gpus, ema_node_get(flow_node, ends[e]),
                         end_path);
          return FALSE;
        }
      }
      if (!ema_fabric_check_flow(fabric, flow->kind, flow->src_index, flow->dst_index, &inner)) {
        ema_node_error(error, EMA_CONFIG_ERROR_INVALID, flow_node, flow_path, "%s", inner->message);
        g_error_free(inner);
        return FALSE;
      }
    }
  }
  return TRUE;
}

/* Tenants: a workload is ops or tenants; groups lie on the server and do
 * not overlap; names are unique (default tenantN); each fits in memory. */
/* TENANT's GPUs as vLLM places a TP group on SERVER's hosts (gpus_per_node): within one host,
 * or on whole hosts (the step model takes a group past one host as NCCL's, steptime.h). */
static gboolean group_on_hosts(const EmaTenantSpec *tenant, const EmaServerSpec *server) {
  gint64 per = server->gpus_per_node, first = tenant->gpu, last = tenant->gpu + tenant->tp - 1;
  if (per == 0 || tenant->tp <= 1)
    return TRUE;
  if (tenant->tp <= per)
    return first / per == last / per;
  return first % per == 0 && tenant->tp % per == 0;
}

/* How many times slower SERVER's host runs CPU work than one of SPEED (0: no host named, 1). */
static double host_factor(double speed, const EmaServerSpec *server) {
  return speed > 0 ? speed / server->host.cpu_speed : 1.0;
}

/* The host.cpu_speed of the server PROFILE names as its fitted_host into *SPEED (0: it names
 * none). */
static gboolean fitted_host_speed(const EmaEngineProfile *profile, double *speed, GError **error) {
  g_autoptr(EmaServerSpec) fitted = NULL;
  GError *inner = NULL;
  *speed = 0;
  if (!profile->fitted_host)
    return TRUE;
  if (!(fitted = ema_server_load(profile->fitted_host, &inner))) {
    g_set_error(error, EMA_CONFIG_ERROR, inner->code, "engine profile '%s': fitted_host: %s",
                profile->name, inner->message);
    g_error_free(inner);
    return FALSE;
  }
  *speed = fitted->host.cpu_speed;
  return TRUE;
}

gboolean ema_engine_profile_host_factor(const EmaEngineProfile *profile,
                                        const EmaServerSpec *server, double *factor,
                                        GError **error) {
  double speed;
  if (!fitted_host_speed(profile, &speed, error))
    return FALSE;
  *factor = host_factor(speed, server);
  return TRUE;
}

/* fitted_host_speed of the engine profile NAME, each looked up once per process and search
 * paths: resolving a sweep loads thousands of experiments, which would read every tenant's
 * profile and its fitted host's server each time (the files stay among the process's inputs,
 * ema_file_inputs, for every run's provenance). */
static GMutex host_speeds_lock;
static GHashTable *host_speeds; /* "NAME\nEMA_ENGINE_PATH\nEMA_HWMODEL_PATH" -> double * */

static gboolean profile_host_speed(const char *name, double *speed, GError **error) {
  g_autofree char *key = g_strjoin("\n", name, g_getenv("EMA_ENGINE_PATH") ?: "",
                                   g_getenv("EMA_HWMODEL_PATH") ?: "", NULL);
  g_autoptr(EmaEngineProfile) profile = NULL;
  const double *known;
  g_mutex_lock(&host_speeds_lock);
  known = host_speeds ? g_hash_table_lookup(host_speeds, key) : NULL;
  if (known)
    *speed = *known;
  g_mutex_unlock(&host_speeds_lock);
  if (known)
    return TRUE;
  if (!(profile = ema_engine_profile_load(name, error)) ||
      !fitted_host_speed(profile, speed, error))
    return FALSE;
  g_mutex_lock(&host_speeds_lock);
  if (!host_speeds)
    host_speeds = g_hash_table_new_full(g_str_hash, g_str_equal, g_free, g_free);
  g_hash_table_replace(host_speeds, g_steal_pointer(&key), g_memdup2(speed, sizeof *speed));
  g_mutex_unlock(&host_speeds_lock);
  return TRUE;
}

/* TENANT's engine costs on SERVER's host (profile_host_speed); errors at the
 * tenant's engine.profile, NODE at PATH. */
static gboolean put_on_host(EmaTenantSpec *tenant, const EmaServerSpec *server, const EmaNode *node,
                            const char *path, GError **error) {
  GError *inner = NULL;
  double speed;
  if (!profile_host_speed(tenant->engine.profile, &speed, &inner)) {
    const EmaNode *engine = ema_node_get(node, "engine");
    const EmaNode *at = engine ? ema_node_get(engine, "profile") : NULL;
    g_autofree char *key = g_strconcat(path ? path : "tenant", ".engine.profile", NULL);
    ema_node_error(error, EMA_CONFIG_ERROR_INVALID, at ? at : node, key, "%s", inner->message);
    g_error_free(inner);
    return FALSE;
  }
  ema_tenant_put_on_host(tenant, host_factor(speed, server));
  return TRUE;
}

static gboolean check_tenants(EmaExperiment *experiment, const EmaNode *root, GError **error) {
  const EmaNode *tenants_node = ema_node_get(root, "tenants");
  guint n_ops = (experiment->ops ? experiment->ops->len : 0) +
                (experiment->decode ? experiment->decode->len : 0);
  guint n_tenants = experiment->tenants ? experiment->tenants->len : 0;
  g_autofree gint *owner = g_new(gint, (gsize) experiment->server.gpus);

  if ((n_ops > 0) == (n_tenants > 0)) {
    /* both: at tenants; neither: at an empty list given (by the file or a --set), else the top */
    static const char *const lists[] = {"tenants", "ops", "decode"};
    const char *key = n_ops ? "tenants" : NULL;
    for (guint i = 0; key == NULL && i < G_N_ELEMENTS(lists); i++)
      if (ema_node_get(root, lists[i]) != NULL)
        key = lists[i];
    ema_node_error(error, EMA_CONFIG_ERROR_KEY, key ? ema_node_get(root, key) : root, key, "%s",
                   n_ops ? "give ops and decode scenarios, or tenants, not both (run them as two "
                           "experiments)"
                         : "nothing to run: give ops (data movements), decode scenarios or tenants "
                           "(serving)");
    return FALSE;
  }
  if (ema_node_get(root, "policy") == NULL) {
    g_free(experiment->policy.name);
    experiment->policy.name = g_strdup("static");
  }
  for (gint64 g = 0; g < experiment->server.gpus; g++)
    owner[g] = -1;
  for (guint i = 0; i < n_tenants; i++) {
    EmaTenantSpec *tenant = &g_array_index(experiment->tenants, EmaTenantSpec, i);
    const EmaNode *node = tenants_node->items->pdata[i];
    g_autofree char *path = g_strdup_printf("tenants.%u", i);
    g_autofree char *gpu_path = g_strconcat(path, ".gpu", NULL);
    EmaTenantPlan plan;
    GError *inner = NULL;
    if (tenant->name == NULL)
      tenant->name = g_strdup_printf("tenant%u", i);
    if (!name_plain(tenant->name, node, path, error))
      return FALSE;
    if (tenant->name[0] == '\0') {
      /* timeline.csv's rows of a GPU without a tenant are the ones with an empty tenant */
      g_autofree char *key_path = g_strconcat(path, ".name", NULL);
      ema_node_error(error, EMA_CONFIG_ERROR_INVALID, ema_node_get(node, "name"), key_path,
                     "a tenant's name is not empty (an empty tenant in timeline.csv is a GPU "
                     "without a tenant)");
      return FALSE;
    }
    if (strcmp(tenant->name, "all") == 0 || strchr(tenant->name, ',') != NULL) {
      /* ema-sim plot's --tenant and a sweep's plot.tenant list tenants by commas, and "all"
       * names them all: such a tenant could not be picked alone */
      g_autofree char *key_path = g_strconcat(path, ".name", NULL);
      ema_node_error(error, EMA_CONFIG_ERROR_INVALID, ema_node_get(node, "name"), key_path,
                     "a tenant's name is not 'all' and holds no comma (plot's --tenant A,B lists "
                     "tenants by commas, 'all' picks every one)");
      return FALSE;
    }
    for (guint j = 0; j < i; j++)
      if (strcmp(g_array_index(experiment->tenants, EmaTenantSpec, j).name, tenant->name) == 0) {
        g_autofree char *quoted = ema_file_quote_cut(tenant->name, -1);
        ema_node_error(error, EMA_CONFIG_ERROR_INVALID, ema_node_get(node, "name"), path,
                       "tenant name '%s' is used twice", quoted);
        return FALSE;
      }
    if (!ema_step_model_check_tp(&tenant->model, &experiment->server, (guint) tenant->tp, &inner)) {
      /* at tp, where the file or a --set chose it (the model and the server it must fit are
       * named in the message) */
      g_autofree char *tp_path = g_strconcat(path, ".tp", NULL);
      const EmaNode *tp_node = ema_node_get(node, "tp");
      ema_node_error(error, EMA_CONFIG_ERROR_INVALID, tp_node ? tp_node : node,
                     tp_node ? tp_path : path, "%s", inner->message);
      g_error_free(inner);
      return FALSE;
    }
    if (tenant->gpu + tenant->tp > experiment->server.gpus) {
      g_autofree char *gpus =
          tenant->tp > 1 ? g_strdup_printf("GPUs gpu%" G_GINT64_FORMAT "..gpu%" G_GINT64_FORMAT
                                           " (tp %" G_GINT64_FORMAT ") are",
                                           tenant->gpu, tenant->gpu + tenant->tp - 1, tenant->tp)
                         : g_strdup_printf("gpu%" G_GINT64_FORMAT " is", tenant->gpu);
      ema_node_error(error, EMA_CONFIG_ERROR_INVALID, ema_node_get(node, "gpu"), gpu_path,
                     "%s not on %s (it has gpu0..gpu%" G_GINT64_FORMAT ")", gpus,
                     experiment->server.name, experiment->server.gpus - 1);
      return FALSE;
    }
    if (!group_on_hosts(tenant, &experiment->server)) {
      gint64 per = experiment->server.gpus_per_node;
      ema_node_error(error, EMA_CONFIG_ERROR_INVALID, ema_node_get(node, "gpu"), gpu_path,
                     "GPUs gpu%" G_GINT64_FORMAT "..gpu%" G_GINT64_FORMAT " (tp %" G_GINT64_FORMAT
                     ") straddle hosts of %" G_GINT64_FORMAT " GPUs (server gpus_per_node, a "
                     "host starting at every %" G_GINT64_FORMAT "th GPU): vLLM places a group "
                     "within one host, or on whole hosts",
                     tenant->gpu, tenant->gpu + tenant->tp - 1, tenant->tp, per, per);
      return FALSE;
    }
    for (gint64 g = tenant->gpu; g < tenant->gpu + tenant->tp; g++) {
      if (owner[g] >= 0) {
        ema_node_error(error, EMA_CONFIG_ERROR_INVALID, ema_node_get(node, "gpu"), gpu_path,
                       "gpu%" G_GINT64_FORMAT " already serves tenant %s", g,
                       g_array_index(experiment->tenants, EmaTenantSpec, owner[g]).name);
        return FALSE;
      }
      owner[g] = (gint) i;
    }
    ema_tenant_resolve_batch_defaults(tenant, &experiment->server.gpu);
    if (tenant->engine.max_num_batched_tokens < tenant->engine.max_num_seqs) {
      /* vLLM's SchedulerConfig refuses it: a step gives each running request a token at least */
      const EmaNode *engine = ema_node_get(node, "engine");
      const EmaNode *key = engine ? ema_node_get(engine, "max_num_batched_tokens") : NULL;
      const EmaNode *seqs = engine ? ema_node_get(engine, "max_num_seqs") : NULL;
      g_autofree char *at =
          g_strconcat(path, key ? ".engine.max_num_batched_tokens" : ".engine.max_num_seqs", NULL);
      ema_node_error(error, EMA_CONFIG_ERROR_INVALID,
                     key    ? key
                     : seqs ? seqs
                            : node,
                     at,
                     "max_num_batched_tokens %" G_GINT64_FORMAT
                     " is below max_num_seqs %" G_GINT64_FORMAT
                     " (vLLM refuses it: a step gives each running request a "
                     "token at least); raise the one or lower the other",
                     tenant->engine.max_num_batched_tokens, tenant->engine.max_num_seqs);
      return FALSE;
    }
    if (!put_on_host(tenant, &experiment->server, node, path, error))
      return FALSE;
    if (!ema_tenant_plan(tenant, &experiment->server, &plan, &inner)) {
      ema_node_error(error, EMA_CONFIG_ERROR_INVALID, node, path, "%s", inner->message);
      g_error_free(inner);
      return FALSE;
    }
    tenant->engine.activation_reserve = plan.activation_reserve;
  }
  return TRUE;
}

#define SLO_FIELD(f) G_STRUCT_OFFSET(EmaSloSpec, f)

static const EmaParam slo_params[] = {
    {"ttft", EMA_PARAM_DURATION, SLO_FIELD(ttft), .flags = EMA_PARAM_OPTIONAL, .min = 1,
     .max = 1e15, .help = "a request meets it when its time to first token is at most this"},
    {"tpot", EMA_PARAM_DURATION, SLO_FIELD(tpot), .flags = EMA_PARAM_OPTIONAL, .min = 1,
     .max = 1e15,
     .help = "a request meets it when its time per output token (after the first) is at most "
             "this"},
};

static const EmaParamTable slo_table = {"slo", sizeof(EmaSloSpec), slo_params,
                                        EMA_PARAMS_N(slo_params), NULL};

/* The default of events_max_rows and of steps_max_rows (their tables' default_value). */
#define CSV_MAX_ROWS_DEFAULT 10000000

static const EmaParam experiment_params[] = {
    {"name", EMA_PARAM_STRING, EXPERIMENT_FIELD(name), .flags = EMA_PARAM_REQUIRED,
     .help = "experiment name"},
    {"summary", EMA_PARAM_STRING, EXPERIMENT_FIELD(summary), .default_value = "",
     .help = "one line on what it shows"},
    {"seed", EMA_PARAM_INT, EXPERIMENT_FIELD(seed), .default_value = "1", .min = 0,
     .max = (double) EMA_EXPERIMENT_SEED_MAX,
     .help = "seed of every random stream (--seed overrides; ops and decode scenarios draw "
             "nothing at random: a warning where it is not 1)"},
    {"tolerance", EMA_PARAM_FRACTION, EXPERIMENT_FIELD(tolerance), .default_value = "5%",
     .min = 1e-9, .max = 1,
     .help = "ops and decode: default allowed relative error of their expectations"},
    {"server", EMA_PARAM_STRUCT, EXPERIMENT_FIELD(server), .table = &ema_server_params,
     .resolve = resolve_server, .flags = EMA_PARAM_REQUIRED,
     .help = "hardware model: a name from `ema-sim list hwmodels`, or a map"},
    {"ops", EMA_PARAM_LIST, EXPERIMENT_FIELD(ops), .table = &op_table,
     .help = "micro-operations to time, one after another (or give tenants)"},
    {"decode", EMA_PARAM_LIST, EXPERIMENT_FIELD(decode), .table = &decode_table,
     .flags = EMA_PARAM_OPTIONAL,
     .help = "decode steps to time, with some KV remote (with or without ops)"},
    {"tenants", EMA_PARAM_LIST, EXPERIMENT_FIELD(tenants), .table = &ema_tenant_params,
     .max = 1024, /* a server's GPUs at most, one or more a tenant */
     .help = "LLM serving instances, one per GPU or tensor-parallel group (or give ops)"},
    {"duration", EMA_PARAM_DURATION, EXPERIMENT_FIELD(duration), .flags = EMA_PARAM_OPTIONAL,
     .min = 1, .max = 1e18,
     .help = "serving: stop at this simulated time (default: when every request has "
             "finished)"},
    {"sample_period", EMA_PARAM_DURATION, EXPERIMENT_FIELD(sample_period), .default_value = "1s",
     .min = 1000, .max = 1e18, .help = "serving: one timeline.csv row per GPU this often"},
    {"timeline_max_rows", EMA_PARAM_INT, EXPERIMENT_FIELD(timeline_rows),
     .default_value = "10000000", .min = 1, .max = 1e12,
     .help = "serving: timeline.csv stops after this many rows (~70 bytes each); a run says so "
             "before it starts where its duration bounds the samples"},
    {"policy", EMA_PARAM_STRUCT, EXPERIMENT_FIELD(policy), .table = &ema_policy_spec_params,
     .resolve = ema_policy_spec_resolve,
     .help = "serving: memory sharing, a composition name (ema-sim list policies) or a map of "
             "borrow, prefetch, reclaim and preempt (default: static, no sharing)"},
    {"idle_gpu_memory", EMA_PARAM_FRACTION, EXPERIMENT_FIELD(idle_gpu_memory),
     .default_value = "90%", .min = 0, .max = 1,
     .help = "serving: share of the HBM of a GPU without a tenant that it lends"},
    {"requests_csv", EMA_PARAM_BOOL, EXPERIMENT_FIELD(requests_csv), .default_value = "true",
     .help = "serving: write one requests.csv row per finished request"},
    {"slo", EMA_PARAM_STRUCT, EXPERIMENT_FIELD(slo), .table = &slo_table,
     .help = "serving: SLOs for goodput (vLLM's: requests/s meeting all) and SLO attainment "
             "(DistServe's: the share meeting all); none given: every request meets them"},
    {"steps_csv", EMA_PARAM_BOOL, EXPERIMENT_FIELD(steps_csv), .default_value = "false",
     .help = "serving: write steps.csv, one row per engine step (the columns of vLLM's step "
             "traces)"},
    {"steps_max_rows", EMA_PARAM_INT, EXPERIMENT_FIELD(steps_rows),
     .default_value = G_STRINGIFY(CSV_MAX_ROWS_DEFAULT), .min = 1, .max = 1e12,
     .help = "serving: steps.csv stops after this many rows (~120 bytes each); a run that "
             "reaches it says so (summary.json's steps_csv_capped_at_s, and on stderr)"},
    {"events_csv", EMA_PARAM_BOOL, EXPERIMENT_FIELD(events_csv), .default_value = "true",
     .help = "serving: write events.csv, one row per pool event (false: none)"},
    {"events", EMA_PARAM_STRING, EXPERIMENT_FIELD(events), .default_value = "all",
     .help = "serving: the pool event kinds events.csv keeps, comma-separated (all, or of "
             "borrow, return, reclaim, own-map, own-unmap, refuse, offload, offload-end, "
             "offload-refuse, place, tier, offload-throttle, debug)"},
    {"events_max_rows", EMA_PARAM_INT, EXPERIMENT_FIELD(events_rows),
     .default_value = G_STRINGIFY(CSV_MAX_ROWS_DEFAULT), .min = 1, .max = 1e12,
     .help = "serving: events.csv stops after this many rows (~100 bytes each); a run that "
             "reaches it says so (summary.json's events_csv_capped_at_s, and on stderr)"},
    {"events_tier", EMA_PARAM_ENUM, EXPERIMENT_FIELD(events_tier),
     .help = "serving: a tier event per prefix-tier move (each), or one per GPU, kind of move "
             "and peer per step, logged when the step ends (step)",
     .default_value = "each", .choices = events_tier_names},
};

/* events names pool event kinds (ema_experiment_event_kinds), each once; an error at its
 * value. */
static gboolean check_events(EmaExperiment *experiment, const EmaNode *root, GError **error) {
  g_autoptr(GError) inner = NULL;
  const EmaNode *value = ema_node_get(root, "events");
  if (ema_experiment_event_kinds(experiment->events, &inner) != 0)
    return TRUE;
  ema_node_error(error, EMA_CONFIG_ERROR_INVALID, value ? value : root, "events", "%s",
                 inner ? inner->message : "no event kind named");
  return FALSE;
}

const EmaParamTable ema_experiment_params = {"experiment", sizeof(EmaExperiment), experiment_params,
                                             EMA_PARAMS_N(experiment_params), NULL};

/* The top-level keys only one kind of run reads, the other never looking at them: a serving run's
 * (their help begins "serving:"), and the ops and decode scenarios' (their help begins "ops and
 * decode:": tolerance, the default of their expectations', by which ops.c and validate's
 * compare.c judge them; a serving run and its SLOs never read it). */
static const char *const serving_keys[] = {"duration",
                                           "sample_period",
                                           "timeline_max_rows",
                                           "policy",
                                           "idle_gpu_memory",
                                           "requests_csv",
                                           "slo",
                                           "steps_csv",
                                           "steps_max_rows",
                                           "events_csv",
                                           "events",
                                           "events_max_rows",
                                           "events_tier",
                                           NULL};
static const char *const ops_keys[] = {"tolerance", NULL};

/* Whether EXPERIMENT's PARAM (a top-level key) holds what it holds where no file gives it: the
 * two written as resolved.yaml writes them (a policy given none is static, check_tenants). */
static gboolean holds_default(const EmaExperiment *experiment, const EmaParam *param) {
  const EmaParamTable one = {ema_experiment_params.name, sizeof(EmaExperiment), param, 1, NULL};
  g_autoptr(EmaExperiment) unset = g_new0(EmaExperiment, 1);
  g_autoptr(GString) given = g_string_new(NULL);
  g_autoptr(GString) fallback = g_string_new(NULL);
  if (!ema_params_bind(&one, unset, NULL, NULL, NULL))
    return FALSE;
  if (param->offset == EXPERIMENT_FIELD(policy)) {
    g_free(unset->policy.name);
    unset->policy.name = g_strdup("static");
  }
  ema_params_write_yaml(&one, experiment, given, 0);
  ema_params_write_yaml(&one, unset, fallback, 0);
  return strcmp(given->str, fallback->str) == 0;
}

/* An experiment sets none of the keys only the other kind of run reads: an ops or decode
 * experiment none of serving_keys, a serving one none of ops_keys; each would be ignored. A key
 * that holds its default is let be, as it changes nothing: a run's resolved.yaml writes every one
 * (an ops run's sample_period: 1s, policy: static, ...; a serving run's tolerance: 5%), and must
 * run again. The error is at the key. */
static gboolean check_unread_keys(const EmaExperiment *experiment, const EmaNode *root,
                                  GError **error) {
  gboolean serving = ema_experiment_is_serving(experiment);
  gboolean ops = experiment->ops && experiment->ops->len > 0;
  gboolean decode = experiment->decode && experiment->decode->len > 0;
  const char *const *unread = serving ? ops_keys : serving_keys;
  for (guint i = 0; i < G_N_ELEMENTS(experiment_params); i++) {
    const EmaParam *param = &experiment_params[i];
    const EmaNode *key = ema_node_get_key(root, param->key);
    if (key == NULL || !g_strv_contains(unread, param->key) || holds_default(experiment, param))
      continue;
    if (serving)
      ema_node_error(error, EMA_CONFIG_ERROR_KEY, key, param->key,
                     "read only by ops and decode scenarios (ops:, decode:), and this experiment "
                     "serves tenants: leave it out");
    else
      ema_node_error(error, EMA_CONFIG_ERROR_KEY, key, param->key,
                     "read only by a serving run (tenants:), and this experiment times %s%s%s: "
                     "leave it out",
                     ops ? "ops" : "", ops && decode ? " and " : "",
                     decode ? "decode scenarios" : "");
    return FALSE;
  }
  return TRUE;
}

void ema_experiment_free(EmaExperiment *experiment) {
  if (experiment == NULL)
    return;
  ema_params_clear(&ema_experiment_params, experiment);
  g_free(experiment);
}

const char *const ema_experiment_sweep_keys[] = {"variants", "sweep", "repeats", "plot", NULL};

EmaExperiment *ema_experiment_load(const char *path, const char *const *overrides, GError **error) {
  g_autoptr(EmaNode) root = ema_node_load_file(path, error);
  if (root == NULL)
    return NULL;
  /* a sweep file's own keys are only accepted by ema-sim sweep (sweep.c),
   * which takes them off before it loads each point */
  for (guint i = 0; root->kind == EMA_NODE_MAP && ema_experiment_sweep_keys[i]; i++) {
    const EmaNode *key = ema_node_get_key(root, ema_experiment_sweep_keys[i]);
    if (key) {
      ema_node_error(error, EMA_CONFIG_ERROR_KEY, key, key->value,
                     "this is a sweep file: run it with `ema-sim sweep %s`", path);
      return NULL;
    }
  }
  if (root->kind == EMA_NODE_MAP && ema_node_get_key(root, EMA_EXPERIMENT_COMPARE_KEY)) {
    const EmaNode *key = ema_node_get_key(root, EMA_EXPERIMENT_COMPARE_KEY);
    ema_node_error(error, EMA_CONFIG_ERROR_KEY, key, key->value,
                   "this experiment compares variants: load it with ema_sweep_load_compare "
                   "(ema-sim run and check do)");
    return NULL;
  }
  /* nor does a --set give one (--set repeats=3 on a file of one run was "an unknown key",
   * though the key is one: of another kind of file) */
  for (guint i = 0; overrides && overrides[i]; i++) {
    gsize length = strcspn(overrides[i], "=.");
    g_autofree char *key = g_strndup(overrides[i], length);
    if (g_strv_contains(ema_experiment_sweep_keys, key) ||
        strcmp(key, EMA_EXPERIMENT_COMPARE_KEY) == 0) {
      g_autoptr(EmaNode) at = ema_node_new_scalar(NULL, "--set", i + 1, 1);
      ema_node_error(error, EMA_CONFIG_ERROR_KEY, at, key,
                     "a key of a comparison (compare:) or of a sweep file, which %s is not: "
                     "add compare: to it, or write a sweep file (ema-sim sweep)",
                     path);
      return NULL;
    }
  }
  return ema_experiment_load_tree(root, overrides, error);
}

EmaExperiment *ema_experiment_load_tree(EmaNode *root, const char *const *overrides,
                                        GError **error) {
  g_autoptr(EmaExperiment) experiment = NULL;
  if (root->kind != EMA_NODE_MAP) {
    ema_node_error(error, EMA_CONFIG_ERROR_TYPE, root, NULL,
                   "an experiment file must be a map of settings");
    return NULL;
  }
  if (root->keys->len == 0 && (overrides == NULL || overrides[0] == NULL)) {
    ema_node_error(error, EMA_CONFIG_ERROR_KEY, root, NULL,
                   "no settings (the file is empty, or comments only): an experiment needs a "
                   "name, a server and tenants, ops or decode scenarios");
    return NULL;
  }
  if (!ema_params_expand(&ema_experiment_params, root, error))
    return NULL;
  /* names an override sets (--set policy=ema) are expanded before the next
   * override, so that it can reach inside them (--set policy.borrow=...); one that sets again
   * what an earlier one set, or replaces what it set inside it, would drop that silently: an
   * error */
  for (guint i = 0; overrides && overrides[i]; i++) {
    if (ema_node_override_repeated(overrides, i, error))
      return NULL;
    for (guint j = 0; j < i; j++)
      if (ema_node_override_within(overrides[j], overrides[i])) {
        g_autoptr(EmaNode) at = ema_node_new_scalar(NULL, "--set", i + 1, 1);
        g_autofree char *inner = g_strndup(overrides[j], strcspn(overrides[j], "="));
        g_autofree char *outer = g_strndup(overrides[i], strcspn(overrides[i], "="));
        ema_node_error(error, EMA_CONFIG_ERROR_INVALID, at, outer,
                       "replaces what --set %u set inside it (%s): give %s before the keys "
                       "inside it",
                       j + 1, inner, outer);
        return NULL;
      }
    if (!ema_node_apply_override(root, overrides[i], i + 1, error) ||
        !ema_params_expand(&ema_experiment_params, root, error))
      return NULL;
  }
  experiment = g_new0(EmaExperiment, 1);
  if (!ema_params_bind(&ema_experiment_params, experiment, root, NULL, error))
    return NULL;
  if (!check_names(experiment, root, error) || !check_flows(experiment, root, error) ||
      !check_decodes(experiment, root, error) || !check_tenants(experiment, root, error) ||
      !check_unread_keys(experiment, root, error) || !check_events(experiment, root, error))
    return NULL;
  return g_steal_pointer(&experiment);
}

/* Into WARNINGS: each tenant whose engine.num_gpu_blocks, with its weights and reserves, is more
 * than its GPU's HBM (vLLM would not start; an oracle such as twice the KV asks for it). */
static void warn_kv_over_hbm(const EmaExperiment *experiment, GPtrArray *warnings) {
  guint64 hbm = ema_gpu_hbm_bytes(&experiment->server.gpu);
  for (guint i = 0; i < experiment->tenants->len; i++) {
    const EmaTenantSpec *t = &g_array_index(experiment->tenants, EmaTenantSpec, i);
    EmaTenantPlan plan;
    double held;
    if (t->engine.num_gpu_blocks == 0 || !ema_tenant_plan(t, &experiment->server, &plan, NULL))
      continue;
    held = (double) plan.weight_bytes + (double) plan.kv_bytes + (double) plan.activation_reserve +
           (double) t->engine.fixed_reserve;
    if (held > (double) hbm) {
      g_autofree char *kv = ema_units_format_size_human(plan.kv_bytes);
      g_autofree char *all = ema_units_format_size_human((guint64) held);
      g_autofree char *gpu = ema_units_format_size_human(hbm);
      g_ptr_array_add(warnings,
                      g_strdup_printf("tenant %s: engine.num_gpu_blocks %" G_GINT64_FORMAT
                                      " holds %s of KV, %s with its weights and reserves, more "
                                      "than a GPU's %s of HBM: vLLM would not start; the run "
                                      "goes on as given",
                                      t->name, t->engine.num_gpu_blocks, kv, all, gpu));
    }
  }
}

/* The slices T's lend_limit lets it lend: ema_pool_lendable_slices of the slices its GPUs hold
 * for KV, as the run sizes them (a TP group's ranks' regions together, as the pool keeps a
 * group: one record); *REGION those slices, 0 where its plan fails (the checks said why). */
static guint64 tenant_lendable(const EmaExperiment *experiment, const EmaTenantSpec *t,
                               guint64 *region) {
  EmaTenantPlan plan = {0};
  guint64 slices;
  if (!ema_tenant_plan(t, &experiment->server, &plan, NULL))
    plan.slices = 0;
  slices = plan.slices * (guint64) MAX(t->tp, 1);
  *region = slices;
  return ema_pool_lendable_slices(slices, t->sharing.lend_limit);
}

/* Which tenants' sharing settings let their GPUs lend (and hold peers' parked KV): lend, and a
 * lend_limit that leaves their GPUs one slice or more to lend (a region sized only for a limit
 * under 100%, the default lending all of it); newly allocated, one entry per tenant. Into
 * WARNINGS: each tenant that may lend with a lend_limit above 0 that is under one slice of its
 * KV region, which lends nothing. */
static gboolean *tenants_lending(const EmaExperiment *experiment, GPtrArray *warnings) {
  gboolean *lends = g_new0(gboolean, experiment->tenants->len);
  for (guint i = 0; i < experiment->tenants->len; i++) {
    const EmaTenantSpec *t = &g_array_index(experiment->tenants, EmaTenantSpec, i);
    guint64 region = 0;
    if (!t->sharing.lend || t->sharing.lend_limit <= 0)
      continue;
    lends[i] = t->sharing.lend_limit >= 1 || tenant_lendable(experiment, t, &region) > 0;
    if (!lends[i] && region > 0)
      g_ptr_array_add(warnings,
                      g_strdup_printf("tenant %s: sharing.lend_limit %g%% of the %" G_GUINT64_FORMAT
                                      " slices its GPUs hold for KV is under one 2 MiB slice: it "
                                      "lends nothing",
                                      t->name, t->sharing.lend_limit * 100, region));
  }
  return lends;
}

/* Whether any memory can move between GPUs under a policy that borrows (BORROWS) or parks
 * preempted KV on peers (PARKS): some tenant takes peers' memory (it borrows, or it parks) and
 * a GPU beside it lends (another tenant that lends, or a GPU without a tenant under
 * idle_gpu_memory above 0; LENDS[i]: tenant i lends, tenants_lending). If none can, a warning
 * into WARNINGS saying why. */
static gboolean warn_nothing_shared(const EmaExperiment *experiment, const gboolean *lends,
                                    gboolean borrows, gboolean parks, GPtrArray *warnings) {
  const EmaServerSpec *server = &experiment->server;
  gint64 tenant_gpus = 0;
  guint lenders = 0, takers = 0;
  gboolean idle_lends;
  for (guint i = 0; i < experiment->tenants->len; i++) {
    const EmaTenantSpec *t = &g_array_index(experiment->tenants, EmaTenantSpec, i);
    tenant_gpus += t->tp;
    lenders += lends[i];
  }
  idle_lends = tenant_gpus < server->gpus &&
               (guint64) ((double) ema_gpu_hbm_bytes(&server->gpu) * experiment->idle_gpu_memory) >=
                   EMA_SLICE_BYTES;
  for (guint i = 0; i < experiment->tenants->len; i++) {
    const EmaTenantSpec *t = &g_array_index(experiment->tenants, EmaTenantSpec, i);
    if (!(borrows && t->sharing.borrow) && !parks)
      continue;
    takers++;
    if (idle_lends || lenders > (guint) lends[i])
      return TRUE;
  }
  if (takers == 0)
    g_ptr_array_add(warnings, g_strdup_printf("policy %s moves no memory between GPUs here: every "
                                              "tenant has sharing: {borrow: false}, and the "
                                              "policy parks no preempted KV on peers",
                                              experiment->policy.name));
  else
    g_ptr_array_add(
        warnings,
        g_strdup_printf(
            "policy %s moves no memory between GPUs here: no tenant that may take "
            "peers' memory (sharing: {borrow: true}%s) has a GPU beside it that "
            "lends (a tenant with sharing: {lend: true} and a lend_limit of a slice or more, "
            "or a GPU without a tenant under an idle_gpu_memory above 0%%)",
            experiment->policy.name,
            parks ? ", or any tenant, its preempted KV parked on peers" : ""));
  return FALSE;
}

/* How the TP group T shares under a policy that borrows (BORROWS) or parks preempted KV on
 * peers (PARKS), as its own sharing settings let it (LENDS: they let it lend, tenants_lending):
 * *HEAD the policy's part ("under policy ema (borrow: most-idle)") and the return the group's ("it
 * borrows ..., and lends ..."); NULL where they let it take no part. */
static char *group_shares(const EmaExperiment *experiment, const EmaTenantSpec *t, gboolean lends,
                          gboolean borrows, gboolean parks, char **head) {
  gboolean takes = borrows && t->sharing.borrow;
  /* why it lends nothing, where it does not */
  g_autofree char *kept = !t->sharing.lend ? g_strdup("sharing: {lend: false}")
                          : t->sharing.lend_limit > 0
                              ? g_strdup_printf("sharing: {lend_limit: %g%%}, under one slice",
                                                t->sharing.lend_limit * 100)
                              : g_strdup("sharing: {lend_limit: 0%}");
  if (!takes && !lends && !parks)
    return NULL;
  if (borrows) {
    g_autofree char *take =
        takes ? g_strdup_printf("it borrows from the GPUs outside the group, each rank %s its "
                                "shard of the remote KV",
                                g_strcmp0(experiment->policy.prefetch, "offload") == 0
                                    ? "reading or offloading the attention over"
                                    : "reading")
              : g_strdup_printf("it borrows nothing (sharing: {borrow: false})%s",
                                parks ? " but parks its preempted KV on peers" : "");
    g_autofree char *lend =
        lends ? g_strdup_printf("lends its spare KV memory as a group, each rank its share%s",
                                parks ? ", holding peers' parked KV" : "")
              : g_strdup_printf("lends nothing (%s)", kept);
    *head = g_strdup_printf("under policy %s (borrow: %s)", experiment->policy.name,
                            experiment->policy.borrow);
    return g_strdup_printf("%s, and %s", take, lend);
  }
  *head = g_strdup_printf("under policy %s (preempt: %s)", experiment->policy.name,
                          ema_preempt_choice_name(experiment->policy.preempt));
  return lends ? g_strdup("it parks its preempted KV on peers and holds theirs")
               : g_strdup_printf("it parks its preempted KV on peers and holds none of theirs "
                                 "(%s)",
                                 kept);
}

/* Into WARNINGS: how each TP group shares under a policy that borrows (BORROWS) or parks
 * preempted KV on peers (PARKS), as its own sharing settings let it (nothing for a group that
 * takes no part): a line per group, or one per way of sharing where more than
 * EMA_WARN_ALIKE_APART groups share alike, in the order the first of each comes (LENDS as
 * warn_nothing_shared's). */
static void warn_groups_share(const EmaExperiment *experiment, const gboolean *lends,
                              gboolean borrows, gboolean parks, GPtrArray *warnings) {
  /* per group that takes part: the policy's part, its own, and its name and GPUs */
  g_autoptr(GPtrArray) heads = g_ptr_array_new_with_free_func(g_free);
  g_autoptr(GPtrArray) details = g_ptr_array_new_with_free_func(g_free);
  g_autoptr(GPtrArray) names = g_ptr_array_new_with_free_func(g_free);
  for (guint i = 0; i < experiment->tenants->len; i++) {
    const EmaTenantSpec *t = &g_array_index(experiment->tenants, EmaTenantSpec, i);
    char *head = NULL, *detail;
    if (t->tp <= 1 ||
        (detail = group_shares(experiment, t, lends[i], borrows, parks, &head)) == NULL)
      continue;
    g_ptr_array_add(heads, head);
    g_ptr_array_add(details, detail);
    g_ptr_array_add(names, g_strdup_printf("%s (tp %" G_GINT64_FORMAT " on gpu%" G_GINT64_FORMAT
                                           "..gpu%" G_GINT64_FORMAT ")",
                                           t->name, t->tp, t->gpu, t->gpu + t->tp - 1));
  }
  for (guint i = 0; i < details->len; i++) {
    g_autoptr(GString) alike = g_string_new(NULL);
    guint count = 0, j;
    /* (the head is the policy's, the same for every group) */
    for (j = 0; j < i && strcmp(details->pdata[j], details->pdata[i]) != 0; j++) {
    }
    if (j < i)
      continue; /* said with the first group that shares so */
    for (j = i; j < details->len; j++)
      if (strcmp(details->pdata[j], details->pdata[i]) == 0)
        g_string_append_printf(alike, "%s%s", count++ ? ", " : "", (char *) names->pdata[j]);
    for (j = i; count <= EMA_WARN_ALIKE_APART && j < details->len; j++)
      if (strcmp(details->pdata[j], details->pdata[i]) == 0)
        g_ptr_array_add(warnings,
                        g_strdup_printf("tenant %s shares as a group %s: %s",
                                        (char *) names->pdata[j], (char *) heads->pdata[j],
                                        (char *) details->pdata[j]));
    if (count > EMA_WARN_ALIKE_APART)
      g_ptr_array_add(warnings,
                      g_strdup_printf("%u tenants share as TP groups %s, each alike: %s; each: %s",
                                      count, (char *) heads->pdata[i], alike->str,
                                      (char *) details->pdata[i]));
  }
}

/* Into WARNINGS: each tenant whose engine.num_gpu_blocks fixes its KV cache on a server whose
 * HBM is scaled (server.gpu.hbm_scale, the 2x oracle's knob): the scale gives it no more KV. */
static void warn_scaled_fixed_kv(const EmaExperiment *experiment, GPtrArray *warnings) {
  double scale = experiment->server.gpu.hbm_scale;
  if (scale == 1)
    return;
  for (guint i = 0; i < experiment->tenants->len; i++) {
    const EmaTenantSpec *t = &g_array_index(experiment->tenants, EmaTenantSpec, i);
    if (t->engine.num_gpu_blocks > 0)
      g_ptr_array_add(warnings,
                      g_strdup_printf("tenant %s: engine.num_gpu_blocks fixes its KV cache at "
                                      "%" G_GINT64_FORMAT " blocks: server.gpu.hbm_scale %g "
                                      "leaves it as it is (only a cache sized from HBM scales)",
                                      t->name, t->engine.num_gpu_blocks, scale));
  }
}

/* Into WARNINGS: events.csv's and steps.csv's own settings where events_csv: false or
 * steps_csv: false (its default) writes no such file (a filter or a row cap asked for and
 * silently unused). */
static void warn_csv_unwritten(const EmaExperiment *experiment, GPtrArray *warnings) {
  if (!experiment->steps_csv && experiment->steps_rows != CSV_MAX_ROWS_DEFAULT)
    g_ptr_array_add(warnings, g_strdup_printf("steps_max_rows: %" G_GINT64_FORMAT
                                              " caps steps.csv, which steps_csv: false (its "
                                              "default) does not write",
                                              experiment->steps_rows));
  if (experiment->events_csv)
    return;
  if (experiment->events_rows != CSV_MAX_ROWS_DEFAULT)
    g_ptr_array_add(warnings, g_strdup_printf("events_max_rows: %" G_GINT64_FORMAT
                                              " caps events.csv, which events_csv: false does "
                                              "not write",
                                              experiment->events_rows));
  if (experiment->events && strcmp(experiment->events, "all") != 0)
    g_ptr_array_add(warnings, g_strdup_printf("events: %s picks rows of events.csv, which "
                                              "events_csv: false does not write",
                                              experiment->events));
  if (experiment->events_tier != 0)
    g_ptr_array_add(warnings, g_strdup("events_tier: step groups rows of events.csv, which "
                                       "events_csv: false does not write"));
}

/* Into WARNINGS: each tenant whose trace file's arrivals a seed draws (lengths, vllm-bench) and
 * end before its start (the experiment's seed, as the run draws them): it gets no requests. A
 * start past the end of a file of its own times, or of arrivals all at 0, is the loader's error
 * (tenant.c's check_start); a file that fails to read here is said by check and run. */
static void warn_start_past_end(const EmaExperiment *experiment, GPtrArray *warnings) {
  for (guint i = 0; i < experiment->tenants->len; i++) {
    const EmaTenantSpec *t = &g_array_index(experiment->tenants, EmaTenantSpec, i);
    const EmaTraceSpec *trace = &t->trace;
    g_autofree char *stream = NULL, *start = NULL, *name = NULL;
    gboolean reaches;
    EmaTime last;
    if (trace->file == NULL || trace->start <= 0 || trace->cycle ||
        trace->arrivals == EMA_ARRIVALS_FILE || !ema_trace_format_counts_only(trace->format))
      continue;
    stream = g_strconcat("tenant/", t->name, NULL);
    if (!ema_trace_spec_reaches(trace, ema_trace_seed_derive((guint64) experiment->seed, stream),
                                trace->start, &reaches, &last, NULL) ||
        reaches || last < 0)
      continue;
    start = ema_units_format_duration(trace->start);
    name = g_path_get_basename(trace->file);
    g_ptr_array_add(warnings,
                    g_strdup_printf("tenant %s: trace.start %s is past the end of its trace: the "
                                    "arrivals drawn for %s's requests (seed %" G_GINT64_FORMAT
                                    ") end at %.6g s, so it gets no requests (give a start below "
                                    "it, or cycle: true)",
                                    t->name, start, name, experiment->seed, (double) last / 1e9));
  }
}

GPtrArray *ema_experiment_warnings(const EmaExperiment *experiment) {
  GPtrArray *warnings = g_ptr_array_new_with_free_func(g_free);
  const EmaPolicyInfo *borrow;
  gboolean borrows, parks;
  g_autofree gboolean *lends = NULL;
  if (!ema_experiment_is_serving(experiment)) {
    /* not refused: a sweep over seeds of an ops file, or a common header that sets one, runs */
    if (experiment->seed != 1)
      g_ptr_array_add(warnings, g_strdup_printf("seed %" G_GINT64_FORMAT
                                                ": ops and decode scenarios draw nothing at "
                                                "random, so the seed changes nothing",
                                                experiment->seed));
    return warnings;
  }
  warn_kv_over_hbm(experiment, warnings);
  warn_scaled_fixed_kv(experiment, warnings);
  warn_csv_unwritten(experiment, warnings);
  warn_start_past_end(experiment, warnings);
  if (experiment->policy.borrow == NULL)
    return warnings;
  /* bound experiments name registered policies: no error here */
  borrow = ema_policy_registry_find(EMA_POLICY_BORROW, experiment->policy.borrow, NULL);
  borrows = borrow != NULL && !borrow->never_acts;
  parks = ema_policy_spec_parks_on_peers(&experiment->policy);
  if (!(borrows || parks))
    return warnings;
  lends = tenants_lending(experiment, warnings);
  if (warn_nothing_shared(experiment, lends, borrows, parks, warnings))
    warn_groups_share(experiment, lends, borrows, parks, warnings);
  return warnings;
}

guint32 ema_experiment_event_kinds(const char *events, GError **error) {
  g_auto(GStrv) names = NULL;
  guint32 kinds = 0;
  if (events == NULL || strcmp(events, "all") == 0)
    return G_MAXUINT32;
  names = g_strsplit(events, ",", -1);
  for (guint i = 0; names[i]; i++) {
    const char *name = g_strstrip(names[i]);
    guint k = 0;
    if (strcmp(name, "all") == 0) {
      g_set_error(error, EMA_CONFIG_ERROR, EMA_CONFIG_ERROR_INVALID,
                  "'all' keeps every kind: give it alone, not in a list of kinds");
      return 0;
    }
    while (k < EMA_POOL_EVENT_KINDS && strcmp(name, ema_pool_event_kind_name(k)) != 0)
      k++;
    if (k == EMA_POOL_EVENT_KINDS) {
      g_autoptr(GString) known = g_string_new("all");
      for (guint j = 0; j < EMA_POOL_EVENT_KINDS; j++)
        g_string_append_printf(known, "%s%s", j == 0 ? ", or of " : ", ",
                               ema_pool_event_kind_name(j));
      g_autofree char *quoted = ema_file_quote_cut(name, -1);
      g_set_error(error, EMA_CONFIG_ERROR, EMA_CONFIG_ERROR_INVALID,
                  "'%s' is not a pool event kind (%s)", quoted, known->str);
      return 0;
    }
    if (kinds & (1u << k)) { /* (a kind's own name: short) */
      g_set_error(error, EMA_CONFIG_ERROR, EMA_CONFIG_ERROR_INVALID,
                  "'%s' is named twice: name each kind once", name);
      return 0;
    }
    kinds |= 1u << k;
  }
  return kinds;
}

gboolean ema_experiment_is_serving(const EmaExperiment *experiment) {
  return experiment->tenants && experiment->tenants->len > 0;
}

char *ema_experiment_to_yaml(const EmaExperiment *experiment) {
  GString *out = g_string_new(NULL);
  g_string_append_printf(out, "# Resolved by ema-sim %s: every value explicit.\n", EMA_VERSION);
  ema_params_write_yaml(&ema_experiment_params, experiment, out, 0);
  /* where each tenant's step times come from, as comments (the file still
   * loads as the experiment it resolves) */
  for (guint i = 0; experiment->tenants && i < experiment->tenants->len; i++) {
    const EmaTenantSpec *t = &g_array_index(experiment->tenants, EmaTenantSpec, i);
    g_autoptr(GError) error = NULL;
    g_autoptr(EmaStepModel) step =
        ema_step_model_new(&t->model, &experiment->server, (guint) t->tp, &error);
    g_string_append_printf(out, "# tenants.%u (%s, tp %" G_GINT64_FORMAT "):\n", i, t->model.name,
                           t->tp);
    if (step)
      ema_step_model_describe(step, out);
    else
      g_string_append_printf(out, "# no step model: %s\n", error->message);
  }
  return g_string_free(out, FALSE);
}

void ema_server_free(EmaServerSpec *server) {
  ema_params_free(&ema_server_params, server);
}

EmaServerSpec *ema_server_load(const char *name, GError **error) {
  g_autofree char *path = ema_hwmodel_find(name, error);
  return path ? ema_params_load_tree(&ema_server_params, ema_model_load_named(path, name, error),
                                     error)
              : NULL;
}

guint64 ema_op_bytes(const EmaOpSpec *op) {
  guint64 total = 0;
  for (guint j = 0; j < op->flows->len; j++) {
    const EmaOpFlowSpec *flow = &g_array_index(op->flows, EmaOpFlowSpec, j);
    gboolean local_copy = flow->kind == EMA_FLOW_COPY && flow->src_index == flow->dst_index &&
                          flow->src_index != EMA_ENDPOINT_HOST;
    total += local_copy ? 2 * flow->bytes : flow->bytes;
  }
  return total;
}
