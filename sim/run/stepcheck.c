/* stepcheck.c: the step-time model against measured steps (stepcheck.h).
 *
 * Invariants: every compared row adds one relative error to its set; a
 * step model is built once per (model, tp) and server; the tables list the
 * rows in the order of the input file (static points in the order of their
 * first row), so the output is deterministic. */
#include "ema/run/stepcheck.h"

#include <math.h>
#include <string.h>

#include "ema/core/csv.h"
#include "ema/core/file.h"
#include "ema/core/node.h"
#include "ema/core/units.h"
#include "ema/hw/hwmodel.h"
#include "ema/hw/llm.h"
#include "ema/hw/steptime.h"
#include "ema/run/experiment.h"
#include "ema/serving/tenant.h"

/* ---- errors and their summary -------------------------------------------- */

static gint compare_doubles(gconstpointer a, gconstpointer b) {
  double x = *(const double *) a, y = *(const double *) b;
  return (x > y) - (x < y);
}

/* Summarize the signed relative errors in ERRORS (reordered). */
static void summarize(GArray *errors, EmaStepCheckStats *stats) {
  g_autoptr(GArray) abs_errors = g_array_sized_new(FALSE, FALSE, sizeof(double), errors->len);
  double sum = 0;
  memset(stats, 0, sizeof *stats);
  stats->rows = errors->len;
  if (errors->len == 0)
    return;
  for (guint i = 0; i < errors->len; i++) {
    double e = g_array_index(errors, double, i), a = fabs(e);
    sum += e;
    g_array_append_val(abs_errors, a);
  }
  g_array_sort(abs_errors, compare_doubles);
  stats->worst_error = g_array_index(abs_errors, double, abs_errors->len - 1);
  stats->median_error = abs_errors->len % 2
                            ? g_array_index(abs_errors, double, abs_errors->len / 2)
                            : (g_array_index(abs_errors, double, abs_errors->len / 2 - 1) +
                               g_array_index(abs_errors, double, abs_errors->len / 2)) /
                                  2;
  stats->mean_signed_error = sum / errors->len;
}

char *ema_stepcheck_stats_format(const EmaStepCheckStats *stats) {
  return g_strdup_printf("median %.1f%%, worst %.1f%% (mean %+.1f%%) over %u rows",
                         100 * stats->median_error, 100 * stats->worst_error,
                         100 * stats->mean_signed_error, stats->rows);
}

/* ---- step models by (model, tp) ------------------------------------------ */

typedef struct {
  EmaServerSpec *server;
  GHashTable *models; /* "model/tp" -> EmaStepModel * */
  /* the measured steps are sums of kernel durations (captures), not an engine's steps */
  gboolean kernel_sums;
  /* how many times slower this server's host runs the engine profile's CPU work (0: not
   * looked up yet; ema_engine_profile_host_factor) */
  double host_factor;
} Models;

static void models_clear(Models *m) {
  if (m->models)
    g_hash_table_unref(m->models);
  if (m->server)
    ema_server_free(m->server);
}

static void models_free(Models *m) {
  if (!m)
    return; /* a server that did not load, remembered as such */
  models_clear(m);
  g_free(m);
}

static gboolean models_init(Models *m, const char *server, GError **error) {
  m->models =
      g_hash_table_new_full(g_str_hash, g_str_equal, g_free, (GDestroyNotify) ema_step_model_free);
  m->server = ema_server_load(server, error);
  return m->server != NULL;
}

/* LOCAL (freed) as ERROR at field FIELD of CSV's current row. Returns FALSE. */
static gboolean row_error(const EmaCsv *csv, guint field, GError *local, GError **error) {
  g_set_error(error, EMA_CONFIG_ERROR, local->code, "%s:%u:%u: %s", csv->file, csv->line,
              ema_csv_field_column(csv, field), local->message);
  g_error_free(local);
  return FALSE;
}

/* The step model of MODEL at TP, those of CSV's current row; an error is at the row's model
 * field (MODEL_FIELD) when the model does not load, else at its tp field (TP_FIELD): a TP degree
 * the model or the server refuses, or weights that leave its GPUs no room for any KV cache (a
 * step no GPU of the server could have run, as step-time refuses it). A context past the
 * model's max_context is not refused: a measurement may run one (splitwise's 8,192-token
 * prompts of Llama-2-70B; random weights). */
static const EmaStepModel *models_get(Models *m, const char *model, double tp, const EmaCsv *csv,
                                      guint model_field, guint tp_field, GError **error) {
  g_autofree char *key = NULL;
  EmaStepModel *step;
  g_autoptr(EmaLlmSpec) spec = NULL;
  GError *local = NULL;
  /* a whole number of up to 2^53 (ema_csv_number), past any server's GPUs long before a guint
   * would wrap it (TP 2^32 + 2 was timed at TP 2): the step model's own words for it */
  if (tp > G_MAXUINT) {
    g_set_error(error, EMA_CONFIG_ERROR, EMA_CONFIG_ERROR_INVALID,
                "%s:%u:%u: tensor-parallel size %.0f must divide the server's %" G_GINT64_FORMAT
                " GPUs",
                csv->file, csv->line, ema_csv_field_column(csv, tp_field), tp, m->server->gpus);
    return NULL;
  }
  key = g_strdup_printf("%s/%.0f", model, tp);
  step = g_hash_table_lookup(m->models, key);
  if (step)
    return step;
  spec = ema_llm_load(model, &local);
  if (spec)
    step = m->kernel_sums ? ema_step_model_new_kernel_sums(spec, m->server, (guint) tp, &local)
                          : ema_step_model_new(spec, m->server, (guint) tp, &local);
  if (step && !ema_tenant_model_fits(spec, m->server, (guint) tp, &local))
    g_clear_pointer(&step, ema_step_model_free);
  if (!step) {
    row_error(csv, spec ? tp_field : model_field, local, error);
    return NULL;
  }
  g_hash_table_insert(m->models, g_steal_pointer(&key), step);
  return step;
}

/* SEQS prefill chunks, each of N tokens after P, into B. */
static void add_prefill(EmaStepBatch *b, double seqs, double n, double p) {
  b->prefill_tokens += (guint64) (seqs * n);
  b->prefill_context += seqs * (n * p + n * (n + 1) / 2);
  b->prefill_kv_read += seqs * (p + n);
  b->prefill_chunks += (guint64) seqs;
  b->logits += (guint64) seqs;
}

/* SEQS decoding sequences with CONTEXT tokens attended each, into B. */
static void add_decode(EmaStepBatch *b, double seqs, double context) {
  b->decode_seqs += (guint64) seqs;
  b->decode_context += seqs * context;
  b->logits += (guint64) seqs;
}

/* The most tokens a row's step may hold (its sequences times their tokens): far past any GPU's,
 * and low enough that the batch's integer sums cannot wrap. */
#define STEP_MAX_TOKENS 1e12

/* TOKENS, a row's step size, at most STEP_MAX_TOKENS; else an error at the row (its first
 * column: the size comes from several fields). */
static gboolean step_tokens_ok(const EmaCsv *csv, double tokens, GError **error) {
  if (tokens <= STEP_MAX_TOKENS)
    return TRUE;
  g_set_error(error, EMA_CONFIG_ERROR, EMA_CONFIG_ERROR_TYPE,
              "%s:%u:1: a step of %.3g tokens (sequences x tokens each): at most %.0e", csv->file,
              csv->line, tokens, STEP_MAX_TOKENS);
  return FALSE;
}

/* TOKENS, the KV cache of a row's step on STEP (MODEL's, of server M) (its sequences' cached
 * tokens and new ones), within what its GPUs have room for after the weights, all of their HBM
 * taken (as ema_tenant_model_fits sizes it); else an error at the row (its first column: the
 * size comes from several fields): no GPU of the server could have run such a step (10^8
 * sequences of 8,192 tokens were timed at 2.5 years a step). */
static gboolean step_fits(const EmaStepModel *step, const Models *m, const char *model,
                          double tokens, const EmaCsv *csv, GError **error) {
  guint64 hbm = ema_gpu_hbm_bytes(&m->server->gpu);
  guint64 weights = ema_step_model_weight_bytes_per_gpu(step);
  double per_token = ema_step_model_kv_bytes_per_token_per_gpu(step);
  double room = hbm > weights && per_token > 0 ? floor((double) (hbm - weights) / per_token) : 0;
  g_autofree char *hbm_text = NULL;
  g_autofree char *weights_text = NULL;
  if (tokens <= room)
    return TRUE;
  hbm_text = ema_units_format_size_human(hbm);
  weights_text = ema_units_format_size_human(weights);
  g_set_error(error, EMA_CONFIG_ERROR, EMA_CONFIG_ERROR_RANGE,
              "%s:%u:1: the step holds %.0f tokens in its KV cache, more than %s at tp %u has "
              "room for on %s (%.0f tokens: %s of HBM per GPU after %s of weights)",
              csv->file, csv->line, tokens, model, ema_step_model_tp(step), m->server->gpu.name,
              room, hbm_text, weights_text);
  return FALSE;
}

/* The least a measured time may be, in ns: the simulator's clock tick. */
#define MEASURED_MIN_NS 1.0
/* The most: what the simulator's clock counts (EMA_TIME_NEVER). */
#define MEASURED_MAX_NS 9223372036854775807.0

/* The measured time VALUE of CSV's field FIELD, in units of NS_PER_UNIT ns, from 1 ns to 2^63 ns;
 * else an error at the field (a time of 1e-300 made an error of 10^302 %, 300 digits a cell). */
static gboolean measured_ok(const EmaCsv *csv, guint field, double value, double ns_per_unit,
                            GError **error) {
  double ns = value * ns_per_unit;
  if (ns >= MEASURED_MIN_NS && ns < MEASURED_MAX_NS)
    return TRUE;
  g_autofree char *quoted = ema_file_quote_cut(csv->fields[field], -1);
  g_set_error(error, EMA_CONFIG_ERROR, EMA_CONFIG_ERROR_RANGE,
              ns < MEASURED_MIN_NS
                  ? "%s:%u:%u: column '%s': '%s' is below 1 ns (%g), the simulator's clock tick"
                  : "%s:%u:%u: column '%s': '%s' is 2^63 ns (%g) or more, past what the "
                    "simulator's clock counts (about 292 years)",
              csv->file, csv->line, ema_csv_field_column(csv, field), csv->header[field], quoted,
              (ns < MEASURED_MIN_NS ? MEASURED_MIN_NS : MEASURED_MAX_NS) / ns_per_unit);
  return FALSE;
}

static double step_us(const EmaStepModel *step, const EmaStepBatch *b) {
  return (double) ema_step_time(step, b, NULL) * 1e-3;
}

/* One prefill step of SEQS sequences, each a chunk of N tokens after P. */
static double prefill_us(const EmaStepModel *step, double seqs, double n, double p) {
  EmaStepBatch b = {0};
  add_prefill(&b, seqs, n, p);
  return step_us(step, &b);
}

/* One decode step of SEQS sequences with CONTEXT tokens attended each. */
static double decode_us(const EmaStepModel *step, double seqs, double context) {
  EmaStepBatch b = {0};
  add_decode(&b, seqs, context);
  return step_us(step, &b);
}

static void add_error(GArray *errors, double predicted, double measured) {
  double e = predicted / measured - 1;
  g_array_append_val(errors, e);
}

/* ---- captured steps ------------------------------------------------------ */

static const char *const steps_columns[] = {
    "model", "tp", "phase", "batch", "context", "chunk", "prior_context", "time_us", NULL};

typedef struct {
  Models models;
  GArray *errors;
  GString *table;
  GPtrArray *group_names; /* "model phase", in the order first seen */
  GHashTable *groups;     /* "model phase" -> GArray of its errors */
  /* the optional std_us and repeats columns (hwmodels/profiles/README.md): looked up at the
   * first row, each checked where the file has it */
  gboolean looked_up, has_std, has_repeats;
  guint std_column, repeats_column;
} StepsCheck;

/* Whether CSV's header has the optional column NAME (*HAS), and its INDEX; FALSE with
 * ema_csv_column's error where it is there twice (both were taken for no column, and its
 * values went unchecked). */
static gboolean optional_column(const EmaCsv *csv, const char *name, gboolean *has, guint *index,
                                GError **error) {
  *has = g_strv_contains((const char *const *) csv->header, name);
  return !*has || ema_csv_column(csv, name, index, error);
}

/* The row's std_us, a standard deviation (>= 0), and repeats, a count of runs (>= 1), where
 * the file has those columns. */
static gboolean steps_spread_ok(StepsCheck *check, const EmaCsv *csv, GError **error) {
  double ignored;
  if (!check->looked_up) {
    if (!optional_column(csv, "std_us", &check->has_std, &check->std_column, error) ||
        !optional_column(csv, "repeats", &check->has_repeats, &check->repeats_column, error))
      return FALSE;
    check->looked_up = TRUE;
  }
  return (!check->has_std ||
          ema_csv_number(csv, check->std_column, FALSE, TRUE, &ignored, error)) &&
         (!check->has_repeats ||
          ema_csv_number(csv, check->repeats_column, TRUE, FALSE, &ignored, error));
}

/* Field FIELD of CSV's row, a column of the other phase than the row's: a whole number of at
 * most MOST (what the capture writes there, or 0); else an error at it, saying WHY (and
 * MORE after the limit): the step model would leave it out. */
static gboolean steps_unused_ok(const EmaCsv *csv, guint field, double most, const char *why,
                                const char *more, GError **error) {
  double value;
  if (!ema_csv_number(csv, field, TRUE, TRUE, &value, error))
    return FALSE;
  if (value <= most)
    return TRUE;
  g_autofree char *quoted = ema_file_quote_cut(csv->fields[field], -1);
  g_set_error(error, EMA_CONFIG_ERROR, EMA_CONFIG_ERROR_RANGE,
              "%s:%u:%u: column '%s': '%s' where %s: %s%.0f%s", csv->file, csv->line,
              ema_csv_field_column(csv, field), csv->header[field], quoted, why,
              most > 0 ? "0 or " : "", most, more);
  return FALSE;
}

static gboolean steps_row(const EmaCsv *csv, const guint *c, gpointer data, GError **error) {
  StepsCheck *check = data;
  const char *phase = csv->fields[c[2]];
  gboolean decode = strcmp(phase, "decode") == 0, mixed = strcmp(phase, "mixed") == 0;
  guint numeric[2] = {c[1], c[7]};
  double v[2], batch = 0, context = 0, chunk = 0, prior = 0, tokens, predicted;
  EmaStepBatch b = {0};
  const EmaStepModel *step;
  if (!decode && !mixed && strcmp(phase, "prefill") != 0) {
    g_autofree char *quoted = ema_file_quote_cut(phase, -1);
    g_set_error(error, EMA_CONFIG_ERROR, EMA_CONFIG_ERROR_TYPE,
                "%s:%u:%u: column 'phase': '%s' is not decode, prefill or mixed", csv->file,
                csv->line, ema_csv_field_column(csv, c[2]), quoted);
    return FALSE;
  }
  /* tp and time_us, then the columns of the row's phase (a mixed step has both): a decoding
   * sequence holds at least its prompt's one token, so its context is positive; the other
   * phase's columns are what the capture writes there (steps.py), nothing the step would
   * leave out */
  if (!ema_csv_numbers(csv, numeric, 2, 0, v, error) || !measured_ok(csv, c[7], v[1], 1e3, error))
    return FALSE;
  if (decode || mixed) {
    if (!ema_csv_number(csv, c[3], TRUE, FALSE, &batch, error) ||
        !ema_csv_number(csv, c[4], TRUE, FALSE, &context, error))
      return FALSE;
  } else if (!steps_unused_ok(csv, c[3], 1, "a prefill row times one sequence's chunk", "",
                              error) ||
             !steps_unused_ok(csv, c[4], 0, "a prefill row has no decoding sequence",
                              " (its chunk's cached tokens are prior_context)", error)) {
    return FALSE;
  }
  if (!decode) {
    if (!ema_csv_number(csv, c[5], TRUE, FALSE, &chunk, error) ||
        !ema_csv_number(csv, c[6], TRUE, TRUE, &prior, error))
      return FALSE;
  } else if (!steps_unused_ok(csv, c[5], 1, "a decode row's sequences add one token each",
                              "; decodes beside a prefill chunk are phase mixed", error) ||
             !steps_unused_ok(csv, c[6], 0, "a decode row has no prefill chunk",
                              "; decodes beside a prefill chunk are phase mixed", error)) {
    return FALSE;
  }
  if (!steps_spread_ok(check, csv, error))
    return FALSE;
  tokens = (decode || mixed ? batch * (context + 1) : 0) + chunk + prior;
  if (!step_tokens_ok(csv, tokens, error))
    return FALSE;
  step = models_get(&check->models, csv->fields[c[0]], v[0], csv, c[0], c[1], error);
  if (!step || !step_fits(step, &check->models, csv->fields[c[0]], tokens, csv, error))
    return FALSE;
  /* a decode sequence of CONTEXT cached tokens attends to them and its new one; a mixed step
   * is its decodes and its one prefill chunk in one batch */
  if (decode || mixed)
    add_decode(&b, batch, context + 1);
  if (!decode)
    add_prefill(&b, 1, chunk, prior);
  predicted = step_us(step, &b);
  add_error(check->errors, predicted, v[1]);
  {
    g_autofree char *name = g_strdup_printf("%s %s", csv->fields[c[0]], phase);
    GArray *group = g_hash_table_lookup(check->groups, name);
    if (!group) {
      group = g_array_new(FALSE, FALSE, sizeof(double));
      g_ptr_array_add(check->group_names, g_strdup(name));
      g_hash_table_insert(check->groups, g_steal_pointer(&name), group);
    }
    add_error(group, predicted, v[1]);
  }
  /* the model's name as one field: a model file may be named with a comma */
  ema_file_csv_field(check->table, csv->fields[c[0]]);
  g_string_append_printf(check->table, ",%.0f,%s,%.0f,%.0f,%.0f,%.0f,%.3f,%.3f,%+.2f%%\n", v[0],
                         phase, batch, context, chunk, prior, v[1], predicted,
                         100 * (predicted / v[1] - 1));
  return TRUE;
}

/* Check every row of STEPS_CSV; TABLE gets the CSV, SUMMARY (may be NULL)
 * the markdown table per model and phase, then all rows. */
static gboolean steps_check(const char *steps_csv, const char *server, GString *table,
                            GString *summary, EmaStepCheckStats *stats, GError **error) {
  StepsCheck check = {.errors = g_array_new(FALSE, FALSE, sizeof(double)),
                      .table = table,
                      .group_names = g_ptr_array_new_with_free_func(g_free),
                      .groups = g_hash_table_new_full(g_str_hash, g_str_equal, g_free,
                                                      (GDestroyNotify) g_array_unref)};
  gboolean ok = models_init(&check.models, server, error);
  check.models.kernel_sums = TRUE; /* steps.csv: the summed kernel durations of each step */
  if (ok) {
    g_string_append(table, "model,tp,phase,batch,context,chunk,prior_context,measured_us,"
                           "predicted_us,error\n");
    ok = ema_csv_read(steps_csv, steps_columns, steps_row, &check, error);
  }
  if (ok && check.errors->len == 0) {
    g_set_error(error, EMA_CONFIG_ERROR, EMA_CONFIG_ERROR_INVALID,
                "%s: no steps (the header and no row) to compare", steps_csv);
    ok = FALSE;
  }
  if (ok)
    summarize(check.errors, stats);
  if (ok && summary) {
    g_string_append(summary, "| model | phase | steps | median abs error | worst | mean |\n"
                             "|---|---|---|---|---|---|\n");
    for (guint i = 0; i <= check.group_names->len; i++) {
      EmaStepCheckStats group = *stats;
      const char *name = i < check.group_names->len ? check.group_names->pdata[i] : "all all";
      /* "MODEL PHASE": the phase has no space, a model's name (its own file on EMA_LLM_PATH)
       * may; a | in it is escaped, as markdown's tables take it */
      const char *space = strrchr(name, ' ');
      g_autofree char *model = g_strndup(name, (gsize) (space - name));
      g_auto(GStrv) parts = g_strsplit(model, "|", -1);
      g_autofree char *escaped = g_strjoinv("\\|", parts);
      if (i < check.group_names->len)
        summarize(g_hash_table_lookup(check.groups, name), &group);
      g_string_append_printf(summary, "| %s | %s | %u | %.1f%% | %.1f%% | %+.1f%% |\n", escaped,
                             space + 1, group.rows, 100 * group.median_error,
                             100 * group.worst_error, 100 * group.mean_signed_error);
    }
  }
  models_clear(&check.models);
  g_array_unref(check.errors);
  g_ptr_array_unref(check.group_names);
  g_hash_table_unref(check.groups);
  return ok;
}

gboolean ema_stepcheck_steps(const char *steps_csv, const char *server, GString *table,
                             EmaStepCheckStats *stats, GError **error) {
  return steps_check(steps_csv, server, table, NULL, stats, error);
}

gboolean ema_stepcheck_steps_summary(const char *steps_csv, const char *server, GString *summary,
                                     EmaStepCheckStats *stats, GError **error) {
  g_autoptr(GString) table = g_string_new(NULL);
  return steps_check(steps_csv, server, table, summary, stats, error);
}

/* ---- static batches ------------------------------------------------------ */

typedef struct {
  char *model, *hardware;   /* as the row gave them */
  char *llm;                /* the model's name here (an alias resolved) */
  char *server;             /* the server it is timed on */
  const EmaStepModel *step; /* its step model (owned by the server's Models) */
  double tp, prompt, batch, tokens;
  GArray *prompt_ms, *token_ms;
} StaticPoint;

static void static_point_free(gpointer data) {
  StaticPoint *p = data;
  g_free(p->model);
  g_free(p->hardware);
  g_free(p->llm);
  g_free(p->server);
  g_array_unref(p->prompt_ms);
  g_array_unref(p->token_ms);
  g_free(p);
}

static double median_of(GArray *values) {
  guint n = values->len;
  g_array_sort(values, compare_doubles);
  return n % 2 ? g_array_index(values, double, n / 2)
               : (g_array_index(values, double, n / 2 - 1) + g_array_index(values, double, n / 2)) /
                     2;
}

/* perf_model.csv's columns: the whole ones, the two times, model, hardware. */
static const char *const static_columns[] = {"tensor_parallel", "prompt_size", "batch_size",
                                             "token_size",      "prompt_time", "token_time",
                                             "model",           "hardware",    NULL};

/* splitwise-perf's names of the GPUs it profiled and of its models, and
 * what they are here (any other hardware value is taken as a server name,
 * any other model as an LLM name of hwmodels/llms). Its power-capped
 * h100-80gb-pcap has no server: its rows are skipped unless --server names
 * one. */
static const char *const static_hardware[][2] = {
    {"a100-80gb", "a100x8-dgx"}, {"h100-80gb", "h100x8-hgx"}, {"a100-40gb", "a100x4-40gb"}};
static const char *const static_models[][2] = {
    {"llama2-7b", "llama-2-7b"}, {"llama2-13b", "llama-2-13b"}, {"llama2-70b", "llama-2-70b"}};

static const char *alias_of(const char *const (*table)[2], gsize n, const char *name) {
  for (gsize i = 0; i < n; i++)
    if (strcmp(table[i][0], name) == 0)
      return table[i][1];
  return name;
}

typedef struct {
  GPtrArray *points;
  GHashTable *index;   /* "model/hw/tp/prompt/batch/tokens" -> StaticPoint * */
  GHashTable *specs;   /* LLM name -> EmaLlmSpec *, NULL where it does not load */
  GHashTable *servers; /* server name -> Models *, NULL where it does not load */
  GHashTable *skipped; /* "value (why)" -> rows skipped for it */
  GPtrArray *skip_order;
  const EmaStaticCheckOptions *options;
} StaticRead;

/* The LLM NAME, loaded on its first row (CSV's current one) into *SPEC: NULL where there is no
 * such LLM (its rows are skipped); FALSE with an error at the row's FIELD where its file is there
 * and does not load (a skip would blame the name for what is wrong in the file). */
static gboolean static_llm(StaticRead *read, const char *name, const EmaCsv *csv, guint field,
                           const EmaLlmSpec **spec, GError **error) {
  gpointer found;
  if (!g_hash_table_lookup_extended(read->specs, name, NULL, &found)) {
    g_autofree char *path = ema_llm_find(name, NULL);
    GError *local = NULL;
    if (path && !(found = ema_llm_load(name, &local)))
      return row_error(csv, field, local, error);
    g_hash_table_insert(read->specs, g_strdup(name), path ? found : NULL);
  }
  *spec = found;
  return TRUE;
}

/* The step models of server NAME, its server loaded on its first row into *MODELS, as
 * static_llm: NULL where there is no such server, an error where its file does not load. */
static gboolean static_server(StaticRead *read, const char *name, const EmaCsv *csv, guint field,
                              Models **models, GError **error) {
  gpointer found;
  if (!g_hash_table_lookup_extended(read->servers, name, NULL, &found)) {
    g_autofree char *path = ema_hwmodel_find(name, NULL);
    GError *local = NULL;
    found = NULL;
    if (path) {
      found = g_new0(Models, 1);
      if (!models_init(found, name, &local)) {
        models_free(found);
        return row_error(csv, field, local, error);
      }
    }
    g_hash_table_insert(read->servers, g_strdup(name), found);
  }
  *models = found;
  return TRUE;
}

static void static_skip(StaticRead *read, const char *value, const char *why) {
  g_autofree char *key = g_strdup_printf("%s (%s)", value, why);
  gpointer n = g_hash_table_lookup(read->skipped, key);
  if (!n)
    g_ptr_array_add(read->skip_order, g_strdup(key));
  g_hash_table_insert(read->skipped, g_steal_pointer(&key),
                      GSIZE_TO_POINTER(GPOINTER_TO_SIZE(n) + 1));
}

static gboolean static_row(const EmaCsv *csv, const guint *c, gpointer data, GError **error) {
  StaticRead *read = data;
  const char *model = csv->fields[c[6]], *hw = csv->fields[c[7]];
  const char *llm = alias_of(static_models, G_N_ELEMENTS(static_models), model);
  const char *server = read->options->server
                           ? read->options->server
                           : alias_of(static_hardware, G_N_ELEMENTS(static_hardware), hw);
  double v[6];
  g_autofree char *key = NULL;
  StaticPoint *p;
  Models *models;
  const EmaLlmSpec *spec;
  const EmaStepModel *step;
  /* the row whole first, a row skipped for its model or hardware too: a damaged cell is an
   * error wherever it is, never a skip that names another reason; an empty name is no name
   * (it was skipped as "1 of  (unknown model)") */
  for (guint i = 6; i < 8; i++)
    if (!*csv->fields[c[i]]) {
      g_set_error(error, EMA_CONFIG_ERROR, EMA_CONFIG_ERROR_TYPE, "%s:%u:%u: column '%s' is empty",
                  csv->file, csv->line, ema_csv_field_column(csv, c[i]), static_columns[i]);
      return FALSE;
    }
  /* the four sizes whole, prompt_time (the last of the five) and token_time not, each time
   * from 1 ns to 2^63 ns */
  if (!ema_csv_numbers(csv, c, 5, 0, v, error) ||
      !ema_csv_number(csv, c[5], FALSE, FALSE, &v[5], error) ||
      !measured_ok(csv, c[4], v[4], 1e6, error) || !measured_ok(csv, c[5], v[5], 1e6, error) ||
      !step_tokens_ok(csv, v[2] * (v[1] + v[3]), error))
    return FALSE;
  /* token_time is the mean of the decode steps after the prompt's, which makes the first token */
  if (v[3] < 2) {
    g_autofree char *quoted = ema_file_quote_cut(csv->fields[c[3]], -1);
    g_set_error(error, EMA_CONFIG_ERROR, EMA_CONFIG_ERROR_RANGE,
                "%s:%u:%u: column 'token_size': '%s' leaves no decode step to time (the prompt's "
                "step makes the first token): at least 2",
                csv->file, csv->line, ema_csv_field_column(csv, c[3]), quoted);
    return FALSE;
  }
  if (!static_llm(read, llm, csv, c[6], &spec, error))
    return FALSE;
  if (!spec) {
    static_skip(read, model, "unknown model");
    return TRUE;
  }
  if (!static_server(read, server, csv, c[7], &models, error))
    return FALSE;
  if (!models) {
    static_skip(read, hw, "no server for this hardware: give --server");
    return TRUE;
  }
  /* whole numbers of up to 2^53: every digit (%g would make 1000000 and 1000001 one point) */
  key = g_strdup_printf("%s/%s/%.0f/%.0f/%.0f/%.0f", model, hw, v[0], v[1], v[2], v[3]);
  p = g_hash_table_lookup(read->index, key);
  if (!p) {
    if (read->options->max_points > 0 && read->points->len >= read->options->max_points)
      return TRUE;
    /* the last decode step holds every sequence's prompt and its tokens but the last */
    if (!(step = models_get(models, llm, v[0], csv, c[6], c[0], error)) ||
        !step_fits(step, models, llm, v[2] * (v[1] + v[3] - 1), csv, error))
      return FALSE;
    p = g_new0(StaticPoint, 1);
    *p = (StaticPoint){g_strdup(model),
                       g_strdup(hw),
                       g_strdup(llm),
                       g_strdup(server),
                       step,
                       v[0],
                       v[1],
                       v[2],
                       v[3],
                       g_array_new(FALSE, FALSE, sizeof(double)),
                       g_array_new(FALSE, FALSE, sizeof(double))};
    g_ptr_array_add(read->points, p);
    g_hash_table_insert(read->index, g_steal_pointer(&key), p);
  }
  g_array_append_val(p->prompt_ms, v[4]);
  g_array_append_val(p->token_ms, v[5]);
  return TRUE;
}

/* A step of SEQS requests whose GPU work takes GPU_US, as an engine with
 * COSTS runs it (ema_engine_step_duration: its CPU time, its eager launch
 * floor); GPU_US itself without an engine (COSTS NULL). */
static double engine_step_us(const EmaEngineCosts *costs, double seqs, gboolean decode,
                             double gpu_us) {
  EmaStepBatch b = {.prefill_tokens = decode ? 0 : 1, .decode_seqs = decode ? (guint64) seqs : 0};
  EmaTime gpu, cpu;
  if (!costs)
    return gpu_us;
  return (double) ema_engine_step_duration(costs, &b, (guint64) seqs, ema_llround(gpu_us * 1e3),
                                           &gpu, &cpu) *
         1e-3;
}

/* The mean decode step of the TOKENS - 1 steps after a prompt of PROMPT
 * tokens (step i attends to PROMPT + i tokens), sampled at 33 points, each
 * as an engine with COSTS runs it (NULL: the GPU's time). */
static double mean_decode_us(const EmaStepModel *step, const EmaEngineCosts *costs, double batch,
                             double prompt, double tokens) {
  const guint samples = 33;
  double steps = tokens - 1, sum = 0;
  guint n = steps < samples ? (guint) steps : samples;
  if (steps < 1)
    return 0;
  for (guint j = 0; j < n; j++) {
    double i = n == 1 ? 1 : 1 + floor(j * (steps - 1) / (n - 1) + 0.5);
    sum += engine_step_us(costs, batch, TRUE, decode_us(step, batch, prompt + i));
  }
  return sum / n;
}

static void static_group_free(gpointer data) {
  EmaStaticGroup *g = data;
  g_free(g->name);
  g_free(g);
}

/* The errors of group "HARDWARE PHASE" in GROUPS (ERRORS: name -> GArray). */
static void static_error(GPtrArray *order, GHashTable *errors, const char *hardware,
                         const char *phase, double predicted, double measured) {
  g_autofree char *name = g_strdup_printf("%s %s", hardware, phase);
  GArray *group = g_hash_table_lookup(errors, name);
  if (!group) {
    group = g_array_new(FALSE, FALSE, sizeof(double));
    g_ptr_array_add(order, g_strdup(name));
    g_hash_table_insert(errors, g_steal_pointer(&name), group);
  }
  add_error(group, predicted, measured);
}

/* What SKIPS (value (why) -> rows, in ORDER) left out: "3 rows skipped: ...", or NULL. */
static char *static_skipped(GHashTable *skips, GPtrArray *order) {
  g_autoptr(GString) why = g_string_new(NULL);
  guint64 rows = 0;
  if (order->len == 0)
    return NULL;
  for (guint i = 0; i < order->len; i++) {
    guint64 n = GPOINTER_TO_SIZE(g_hash_table_lookup(skips, order->pdata[i]));
    rows += n;
    g_string_append_printf(why, "%s%" G_GUINT64_FORMAT " of %s", i ? ", " : "", n,
                           (const char *) order->pdata[i]);
  }
  return g_strdup_printf("%" G_GUINT64_FORMAT " row%s skipped: %s", rows, rows == 1 ? "" : "s",
                         why->str);
}

gboolean ema_stepcheck_static(const char *perf_csv, const EmaStaticCheckOptions *options,
                              GString *table, GPtrArray *groups, char **skipped, GError **error) {
  g_autoptr(GPtrArray) points = g_ptr_array_new_with_free_func(static_point_free);
  g_autoptr(GHashTable) index = g_hash_table_new_full(g_str_hash, g_str_equal, g_free, NULL);
  g_autoptr(GHashTable) skips = g_hash_table_new_full(g_str_hash, g_str_equal, g_free, NULL);
  g_autoptr(GPtrArray) skip_order = g_ptr_array_new_with_free_func(g_free);
  g_autoptr(GHashTable) servers =
      g_hash_table_new_full(g_str_hash, g_str_equal, g_free, (GDestroyNotify) models_free);
  g_autoptr(GHashTable) specs =
      g_hash_table_new_full(g_str_hash, g_str_equal, g_free, (GDestroyNotify) ema_llm_free);
  g_autoptr(GHashTable) errors =
      g_hash_table_new_full(g_str_hash, g_str_equal, g_free, (GDestroyNotify) g_array_unref);
  g_autoptr(GPtrArray) order = g_ptr_array_new_with_free_func(g_free);
  g_autofree char *skip_text = NULL;
  StaticRead read = {points, index, specs, servers, skips, skip_order, options};
  const EmaEngineProfile *engine = options->engine;
  *skipped = NULL;
  /* a profile that cannot time these steps fails before any is read */
  if (engine &&
      !ema_engine_profile_costs(engine, 1, 1, options->enforce_eager, &(EmaEngineCosts){0}, error))
    return FALSE;
  if (options->server) {
    Models *models = g_new0(Models, 1);
    if (!models_init(models, options->server, error)) {
      models_free(models);
      return FALSE;
    }
    g_hash_table_insert(servers, g_strdup(options->server), models);
  }
  if (!ema_csv_read(perf_csv, static_columns, static_row, &read, error))
    return FALSE;
  skip_text = static_skipped(skips, skip_order);
  if (points->len == 0) {
    g_set_error(error, EMA_CONFIG_ERROR, EMA_CONFIG_ERROR_INVALID,
                "%s: no static batch to compare%s%s", perf_csv, skip_text ? ": " : "",
                skip_text ? skip_text : "");
    return FALSE;
  }
  g_string_append(table, "hardware,server,tp,prompt,batch,tokens,prompt_ms,predicted_prompt_ms,"
                         "prompt_error,token_ms,predicted_token_ms,token_error,model\n");
  for (guint i = 0; i < points->len; i++) {
    StaticPoint *p = points->pdata[i];
    /* both loaded when the row was read */
    Models *models = g_hash_table_lookup(servers, p->server);
    const EmaLlmSpec *llm = g_hash_table_lookup(specs, p->llm);
    const EmaStepModel *step = p->step;
    double prompt_ms, token_ms, predicted_prompt, predicted_token;
    EmaEngineCosts costs;
    if (engine) {
      /* the profile's CPU costs on this server's host */
      if (models->host_factor == 0 &&
          !ema_engine_profile_host_factor(engine, models->server, &models->host_factor, error))
        return FALSE;
      ema_engine_profile_costs(engine, (guint) p->tp, (guint) llm->layers, options->enforce_eager,
                               &costs, NULL);
      ema_engine_costs_on_host(&costs, models->host_factor);
    }
    prompt_ms = median_of(p->prompt_ms);
    token_ms = median_of(p->token_ms);
    /* the batch's prompts in one step (no chunking), then its decode steps */
    predicted_prompt = engine_step_us(engine ? &costs : NULL, p->batch, FALSE,
                                      prefill_us(step, p->batch, p->prompt, 0)) *
                       1e-3;
    predicted_token =
        mean_decode_us(step, engine ? &costs : NULL, p->batch, p->prompt, p->tokens) * 1e-3;
    static_error(order, errors, p->hardware, "prefill", predicted_prompt, prompt_ms);
    static_error(order, errors, p->hardware, "decode", predicted_token, token_ms);
    /* the names as the row gave them, each one field (a hardware value of "a,b" under --server
     * made the row one field too long) */
    ema_file_csv_field(table, p->hardware);
    g_string_append_c(table, ',');
    ema_file_csv_field(table, p->server);
    g_string_append_printf(table, ",%.0f,%.0f,%.0f,%.0f,%.3f,%.3f,%+.1f%%,%.3f,%.3f,%+.1f%%,",
                           p->tp, p->prompt, p->batch, p->tokens, prompt_ms, predicted_prompt,
                           100 * (predicted_prompt / prompt_ms - 1), token_ms, predicted_token,
                           100 * (predicted_token / token_ms - 1));
    ema_file_csv_field(table, p->model);
    g_string_append_c(table, '\n');
  }
  for (guint i = 0; i < order->len; i++) {
    EmaStaticGroup *g = g_new0(EmaStaticGroup, 1);
    g->name = g_strdup(order->pdata[i]);
    summarize(g_hash_table_lookup(errors, g->name), &g->stats);
    g_ptr_array_add(groups, g);
  }
  *skipped = g_steal_pointer(&skip_text);
  return TRUE;
}

GPtrArray *ema_static_groups_new(void) {
  return g_ptr_array_new_with_free_func(static_group_free);
}
