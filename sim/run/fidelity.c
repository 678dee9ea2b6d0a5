/* fidelity.c: a tenant's fidelity (fidelity.h): its engine profile, the
 * sources of its operators' times, and the validation table's row of its
 * combination (hwmodels/fidelity.yaml, loaded once per process and kept). */
#include "ema/run/fidelity.h"

#include "ema/run/json.h"

#include <string.h>

#include "ema/core/modelpath.h"
#include "ema/core/params.h"
#include "ema/hw/profile.h"
#include "ema/serving/tenant.h"

/* ---- the validation table -------------------------------------------------- */

typedef struct {
  char *gpu;
  gint64 tp;
  int weights, kv_cache; /* indices into weight_names, kv_names */
  char *engine;
  double ttft, tpot, e2e;
  gint64 runs;
  char *source;
} Combination;

typedef struct {
  GArray *combinations; /* Combination */
} Table;

static const char *const weight_names[] = {"16-bit", "fp8", "fp8-block", "32-bit", NULL};
static const char *const kv_names[] = {"16-bit", "fp8", "32-bit", NULL};

#define COMBINATION_FIELD(f) G_STRUCT_OFFSET(Combination, f)

static const EmaParam combination_params[] = {
    {"gpu", EMA_PARAM_STRING, COMBINATION_FIELD(gpu), .flags = EMA_PARAM_REQUIRED,
     .help = "the GPU's operator profile (gpu.profile)"},
    {"tp", EMA_PARAM_INT, COMBINATION_FIELD(tp), .flags = EMA_PARAM_REQUIRED, .min = 1, .max = 1024,
     .help = "tensor-parallel degree"},
    {"weights", EMA_PARAM_ENUM, COMBINATION_FIELD(weights), .flags = EMA_PARAM_REQUIRED,
     .choices = weight_names, .help = "16-bit (bf16 or fp16), fp8, fp8-block or 32-bit"},
    {"kv_cache", EMA_PARAM_ENUM, COMBINATION_FIELD(kv_cache), .flags = EMA_PARAM_REQUIRED,
     .choices = kv_names, .help = "16-bit, fp8 or 32-bit"},
    {"engine", EMA_PARAM_STRING, COMBINATION_FIELD(engine), .flags = EMA_PARAM_REQUIRED,
     .help = "the engine profile (hwmodels/engines)"},
    {"ttft_mean_error", EMA_PARAM_FRACTION, COMBINATION_FIELD(ttft), .flags = EMA_PARAM_REQUIRED,
     .min = 0, .max = 100, .help = "worst |predicted / measured - 1| of the TTFT means"},
    {"tpot_mean_error", EMA_PARAM_FRACTION, COMBINATION_FIELD(tpot), .flags = EMA_PARAM_REQUIRED,
     .min = 0, .max = 100, .help = "worst |predicted / measured - 1| of the TPOT means"},
    {"e2e_mean_error", EMA_PARAM_FRACTION, COMBINATION_FIELD(e2e), .flags = EMA_PARAM_REQUIRED,
     .min = 0, .max = 100, .help = "worst |predicted / measured - 1| of the E2E means"},
    {"runs", EMA_PARAM_INT, COMBINATION_FIELD(runs), .flags = EMA_PARAM_REQUIRED, .min = 1,
     .max = 1e6, .help = "real runs predicted (not fitted on)"},
    {"source", EMA_PARAM_STRING, COMBINATION_FIELD(source), .flags = EMA_PARAM_REQUIRED,
     .help = "the runs and the command that measured the errors"},
};

static const EmaParamTable combination_table = {
    "combination", sizeof(Combination), combination_params, EMA_PARAMS_N(combination_params), NULL};

static const EmaParam table_params[] = {
    {"combinations", EMA_PARAM_LIST, G_STRUCT_OFFSET(Table, combinations),
     .table = &combination_table, .help = "the validated combinations"},
};

static const EmaParamTable validation_table = {"fidelity table", sizeof(Table), table_params,
                                               EMA_PARAMS_N(table_params), NULL};

/* The validation table, loaded once per process (EMA_FIDELITY_FILE, else
 * hwmodels/fidelity.yaml); NULL with its error. */
static const Table *table_get(GError **error) {
  static GMutex lock;
  static Table *table;
  static char *failure;
  const Table *found;
  g_mutex_lock(&lock);
  if (!table && !failure) {
    const char *env = g_getenv("EMA_FIDELITY_FILE");
    g_autofree char *dir = ema_data_dir("hwmodels");
    g_autofree char *path =
        env && *env ? g_strdup(env) : g_build_filename(dir, "fidelity.yaml", NULL);
    GError *inner = NULL;
    table = ema_params_load_file(&validation_table, path, &inner);
    if (!table) {
      failure = g_strdup(inner->message);
      g_error_free(inner);
    }
  }
  found = table;
  if (!found)
    g_set_error_literal(error, EMA_CONFIG_ERROR, EMA_CONFIG_ERROR_INVALID, failure);
  g_mutex_unlock(&lock);
  return found;
}

/* ---- a tenant's fidelity ------------------------------------------------- */

void ema_fidelity_free(EmaFidelity *fidelity) {
  if (!fidelity)
    return;
  g_free(fidelity->engine);
  g_free(fidelity->engine_versions);
  g_free(fidelity->engine_fitted_on);
  g_free(fidelity->engine_fitted_host);
  g_free(fidelity->gpu);
  if (fidelity->warnings)
    g_ptr_array_unref(fidelity->warnings);
  g_free(fidelity->validation_source);
  g_free(fidelity->status);
  g_free(fidelity);
}

EmaFidelity *ema_fidelity_of(const EmaTenantSpec *spec, const EmaServerSpec *server,
                             GError **error) {
  g_autoptr(EmaFidelity) f = g_new0(EmaFidelity, 1);
  g_autoptr(EmaEngineProfile) profile = ema_engine_profile_load(spec->engine.profile, error);
  g_autoptr(EmaStepModel) step = NULL;
  const EmaProfile *gpu_profile = NULL;
  const gboolean fp32 = spec->model.dtype == EMA_DTYPE_FP32;
  gboolean profiled;
  const Table *table;
  if (!profile)
    return NULL;
  step = ema_step_model_new(&spec->model, server, (guint) spec->tp, error);
  if (!step)
    return NULL;
  profiled = ema_step_model_profiled(step);
  if (profiled && !(gpu_profile = ema_profile_get(server->gpu.profile, error)))
    return NULL;
  if (!(table = table_get(error)))
    return NULL;
  f->engine = g_strdup(profile->name);
  f->engine_versions = g_strdup(profile->versions);
  f->engine_fitted_on = g_strdup(profile->fitted_on);
  f->scheduler = spec->engine.scheduler == EMA_SCHEDULER_V0 ? "v0" : "v1";
  f->step_cpu_cost_s = (double) spec->engine.costs.step_cpu_cost / 1e9;
  f->step_cpu_cost_per_seq_s = (double) spec->engine.costs.step_cpu_cost_per_seq / 1e9;
  f->cpu_overlap = spec->engine.costs.cpu_overlap;
  f->output_cpu_cost_s = (double) spec->engine.costs.output_cpu_cost / 1e9;
  f->output_cpu_cost_per_seq_s = (double) spec->engine.costs.output_cpu_cost_per_seq / 1e9;
  f->eager_cpu_cost_s = (double) spec->engine.costs.eager_cpu_cost / 1e9;
  f->cuda_graph_max_batch = spec->engine.costs.cuda_graph_max_batch;
  f->engine_fitted_host = g_strdup(profile->fitted_host);
  f->host_factor = spec->engine.host_factor;
  f->gpu = g_strdup(profiled ? server->gpu.profile : server->gpu.name);
  f->tp = spec->tp;
  f->weights = weight_names[spec->model.weights == EMA_PRECISION_FP8         ? 1
                            : spec->model.weights == EMA_PRECISION_FP8_BLOCK ? 2
                            : fp32                                           ? 3
                                                                             : 0];
  f->kv_cache = kv_names[spec->model.kv_cache == EMA_PRECISION_FP8 ? 1 : fp32 ? 2 : 0];
  ema_step_model_sources(step, &f->sources);
  f->warnings = g_ptr_array_new_with_free_func(g_free);
  for (guint i = 0; gpu_profile && i < ema_profile_warnings(gpu_profile)->len; i++)
    g_ptr_array_add(f->warnings, g_strdup(ema_profile_warnings(gpu_profile)->pdata[i]));
  for (guint i = 0; table->combinations && i < table->combinations->len && !f->validated; i++) {
    const Combination *c = &g_array_index(table->combinations, Combination, i);
    if (profiled && strcmp(c->gpu, f->gpu) == 0 && c->tp == f->tp &&
        strcmp(weight_names[c->weights], f->weights) == 0 &&
        strcmp(kv_names[c->kv_cache], f->kv_cache) == 0 && strcmp(c->engine, f->engine) == 0) {
      f->validated = TRUE;
      f->ttft_error = c->ttft;
      f->tpot_error = c->tpot;
      f->e2e_error = c->e2e;
      f->runs = c->runs;
      f->validation_source = g_strdup(c->source);
    }
  }
  if (f->validated && f->warnings->len > 0) {
    f->validated = FALSE;
    f->status = g_strdup_printf("unvalidated: the %s profile's data is missing (%u data set%s "
                                "absent; validated with it present)",
                                f->gpu, f->warnings->len, f->warnings->len == 1 ? "" : "s");
  } else if (f->validated && f->sources.allreduce_modelled) {
    /* the combination was validated with the profile's all-reduce tables */
    f->validated = FALSE;
    f->status = g_strdup_printf("unvalidated: this group's all-reduces come from the all-reduce "
                                "model, not the %s tables its real runs were replayed with",
                                f->gpu);
  } else if (f->validated && spec->engine.host_factor != 1.0) {
    /* and with the engine's CPU costs on the host they were fitted on */
    f->validated = FALSE;
    f->status = g_strdup_printf("unvalidated: the engine's CPU costs run on another host than "
                                "the one its real runs had");
  } else if (f->validated) {
    f->status = g_strdup_printf(
        "validated: TTFT %.1f%%, TPOT %.1f%%, E2E %.1f%% (worst of %" G_GINT64_FORMAT
        " real runs, means)",
        100 * f->ttft_error, 100 * f->tpot_error, 100 * f->e2e_error, f->runs);
  } else {
    f->status = g_strdup_printf(
        "unvalidated: no real runs of %s, TP %" G_GINT64_FORMAT ", %s weights, %s KV, %s%s", f->gpu,
        f->tp, f->weights, f->kv_cache, f->engine,
        profiled ? (f->warnings->len ? " (and the profile's data is missing)" : "")
        : fp32   ? " (32-bit weights: every operator on the roofline, the profile's tables hold "
                   "16- and 8-bit kernels)"
                 : " (the GPU has no operator profile: every operator on the roofline)");
  }
  if (f->host_factor != 1.0) {
    /* the engine's CPU costs carried to this host: say so beside the status */
    char *status = g_strdup_printf(
        "%s; engine CPU costs x%.2f (fitted on %s's host)", f->status, f->host_factor,
        f->engine_fitted_host ? f->engine_fitted_host : "another server");
    g_free(f->status);
    f->status = status;
  }
  return g_steal_pointer(&f);
}

void ema_fidelity_add_json(JsonBuilder *builder, const EmaFidelity *f) {
  const struct {
    const char *name, *value;
  } sources[] = {{"gemm", f->sources.gemm},
                 {"moe", f->sources.moe},
                 {"attn_decode", f->sources.attn_decode},
                 {"attn_prefill", f->sources.attn_prefill},
                 {"elementwise", f->sources.elementwise},
                 {"allreduce", f->sources.allreduce}};
  json_builder_set_member_name(builder, "fidelity");
  json_builder_begin_object(builder);
  ema_json_add_string(builder, "status", f->status);
  ema_json_add_string(builder, "engine_profile", f->engine);
  ema_json_add_string(builder, "engine_versions", f->engine_versions);
  ema_json_add_string(builder, "engine_fitted_on", f->engine_fitted_on);
  ema_json_add_string(builder, "scheduler", f->scheduler);
  ema_json_add_number(builder, "step_cpu_cost_s", f->step_cpu_cost_s);
  ema_json_add_number(builder, "step_cpu_cost_per_seq_s", f->step_cpu_cost_per_seq_s);
  ema_json_add_bool(builder, "cpu_overlap", f->cpu_overlap);
  ema_json_add_number(builder, "output_cpu_cost_s", f->output_cpu_cost_s);
  ema_json_add_number(builder, "output_cpu_cost_per_seq_s", f->output_cpu_cost_per_seq_s);
  ema_json_add_number(builder, "eager_cpu_cost_s", f->eager_cpu_cost_s);
  ema_json_add_count(builder, "cuda_graph_max_batch", f->cuda_graph_max_batch);
  if (f->engine_fitted_host)
    ema_json_add_string(builder, "engine_fitted_host", f->engine_fitted_host);
  ema_json_add_number(builder, "host_cpu_factor", f->host_factor);
  ema_json_add_string(builder, "gpu", f->gpu);
  ema_json_add_count(builder, "tp", (guint64) f->tp);
  ema_json_add_string(builder, "weights", f->weights);
  ema_json_add_string(builder, "kv_cache", f->kv_cache);
  json_builder_set_member_name(builder, "operator_sources");
  json_builder_begin_object(builder);
  for (guint i = 0; i < G_N_ELEMENTS(sources); i++)
    if (sources[i].value[0])
      ema_json_add_string(builder, sources[i].name, sources[i].value);
  json_builder_end_object(builder);
  json_builder_set_member_name(builder, "profile_warnings");
  json_builder_begin_array(builder);
  for (guint i = 0; i < f->warnings->len; i++)
    json_builder_add_string_value(builder, f->warnings->pdata[i]);
  json_builder_end_array(builder);
  if (f->validated) {
    json_builder_set_member_name(builder, "measured_error");
    json_builder_begin_object(builder);
    ema_json_add_number(builder, "ttft_mean", f->ttft_error);
    ema_json_add_number(builder, "tpot_mean", f->tpot_error);
    ema_json_add_number(builder, "e2e_mean", f->e2e_error);
    ema_json_add_count(builder, "runs", (guint64) f->runs);
    ema_json_add_string(builder, "source", f->validation_source);
    json_builder_end_object(builder);
  }
  json_builder_end_object(builder);
}
