/* tenant.c: the tenant, trace, length and engine parameter tables (tenant.h),
 * the request source built from a trace spec, and the KV-pool sizing.
 *
 * Invariants after a successful bind: a trace is a file or synthetic, never
 * half of each; every key an arrival process or length distribution does
 * not use is absent (given one is an error, not ignored); file paths are
 * absolute (resolved against the directory of the file that named them,
 * or the working directory for --set) and the files exist; a trace file's
 * start is before its end where that end is known without a seed (a file of
 * its own arrival times, read up to the start; arrivals all at 0). */
#include "ema/serving/tenant.h"

#include <math.h>
#include <string.h>

#include <glib/gstdio.h>

#include "ema/core/modelpath.h"
#include "ema/core/units.h"

#define LENGTH_FIELD(f) G_STRUCT_OFFSET(EmaLengthSpec, f)
#define TRACE_FIELD(f) G_STRUCT_OFFSET(EmaTraceSpec, f)
#define ENGINE_FIELD(f) G_STRUCT_OFFSET(EmaEngineSpec, f)
#define TENANT_FIELD(f) G_STRUCT_OFFSET(EmaTenantSpec, f)
#define SHARING_FIELD(f) G_STRUCT_OFFSET(EmaTenantSharing, f)
#define PROFILE_FIELD(f) G_STRUCT_OFFSET(EmaEngineProfile, f)

static const char *const length_kind_names[] = {"none",      "fixed",    "uniform",
                                                "lognormal", "resample", NULL};
static const char *const arrivals_kind_names[] = {"file",    "poisson", "gamma", "onoff",
                                                  "diurnal", "phases",  NULL};
static const char *const format_names[] = {"auto",     "azure",   "vidur",      "burstgpt",
                                           "mooncake", "lengths", "vllm-bench", NULL};
static const char *const preempt_names[] = {"recompute", "swap", "cheaper", NULL};
static const char *const scheduler_names[] = {"v1", "v0", NULL};
static const char *const chunked_prefill_names[] = {"auto", "true", "false", NULL};

/* ---- file paths ---------------------------------------------------------- */

/* Make *FIELD (the value of KEY in NODE) absolute and check that it exists. */
static gboolean resolve_path(char **field, const EmaNode *node, const char *key, const char *path,
                             GError **error) {
  const EmaNode *value = ema_node_get(node, key);
  g_autofree char *key_path = path ? g_strconcat(path, ".", key, NULL) : g_strdup(key);
  g_autofree char *base = NULL;
  char *absolute;
  if (*field == NULL)
    return TRUE;
  /* values from --set have no file: they are relative to the working directory */
  if (value && value->file && g_file_test(value->file, G_FILE_TEST_IS_REGULAR)) {
    g_autofree char *dir = g_path_get_dirname(value->file);
    base = g_canonicalize_filename(dir, NULL);
  } else
    base = g_get_current_dir();
  absolute = g_canonicalize_filename(*field, base);
  g_free(*field);
  *field = absolute;
  if (!g_file_test(absolute, G_FILE_TEST_IS_REGULAR)) {
    ema_node_error(error, EMA_CONFIG_ERROR_INVALID, value ? value : node, key_path, "%s: %s",
                   g_file_test(absolute, G_FILE_TEST_EXISTS) ? "not a regular file"
                                                             : "no such file",
                   absolute);
    return FALSE;
  }
  return TRUE;
}

/* Fail if any of KEYS (NULL-terminated) is present in NODE: WHY says what
 * makes it unused. */
static gboolean reject_keys(const EmaNode *node, const char *path, const char *const *keys,
                            const char *why, GError **error) {
  for (guint i = 0; node && keys[i]; i++) {
    const EmaNode *key = ema_node_get_key(node, keys[i]);
    if (key) {
      g_autofree char *key_path = path ? g_strconcat(path, ".", keys[i], NULL) : g_strdup(keys[i]);
      ema_node_error(error, EMA_CONFIG_ERROR_KEY, key, key_path, "not used %s", why);
      return FALSE;
    }
  }
  return TRUE;
}

/* Fail unless every one of KEYS is present in NODE. */
static gboolean require_keys(const EmaNode *node, const char *path, const char *const *keys,
                             const char *why, GError **error) {
  for (guint i = 0; keys[i]; i++) {
    if (node == NULL || ema_node_get(node, keys[i]) == NULL) {
      g_autofree char *key_path = path ? g_strconcat(path, ".", keys[i], NULL) : g_strdup(keys[i]);
      ema_node_error(error, EMA_CONFIG_ERROR_KEY, node, key_path, "missing required key %s", why);
      return FALSE;
    }
  }
  return TRUE;
}

/* Keys of a choice that are required, and all keys any choice may use: a
 * key of the family not in the chosen one's list is rejected. */
typedef struct {
  const char *const *required;
  const char *const *optional;
} ChoiceKeys;

static gboolean check_choice_keys(const EmaNode *node, const char *path, const char *const *family,
                                  const ChoiceKeys *chosen, const char *why, GError **error) {
  for (guint i = 0; family[i]; i++) {
    gboolean used = g_strv_contains(chosen->required, family[i]) ||
                    (chosen->optional && g_strv_contains(chosen->optional, family[i]));
    const char *one[] = {family[i], NULL};
    if (!used && !reject_keys(node, path, one, why, error))
      return FALSE;
  }
  return require_keys(node, path, chosen->required, why, error);
}

/* ---- lengths ------------------------------------------------------------- */

static const char *const length_keys[] = {"tokens", "min",   "max",  "median",
                                          "mean",   "sigma", "file", NULL};

static const ChoiceKeys length_choice_keys[] = {
    [EMA_LENGTH_FIXED] = {(const char *const[]){"tokens", NULL}, NULL},
    [EMA_LENGTH_UNIFORM] = {(const char *const[]){"min", "max", NULL}, NULL},
    [EMA_LENGTH_LOGNORMAL] = {(const char *const[]){"sigma", NULL},
                              (const char *const[]){"median", "mean", "min", "max", NULL}},
    [EMA_LENGTH_RESAMPLE] = {(const char *const[]){"file", NULL},
                             (const char *const[]){"min", "max", NULL}},
};

static const EmaParam length_params[] = {
    {"dist", EMA_PARAM_ENUM, LENGTH_FIELD(dist), .default_value = "none",
     .choices = length_kind_names,
     .help = "none (lengths from the trace file), fixed, uniform, lognormal or resample"},
    {"tokens", EMA_PARAM_INT, LENGTH_FIELD(tokens), .flags = EMA_PARAM_OPTIONAL, .min = 1,
     .max = 4294967295.0, .help = "fixed: every request's length"},
    {"min", EMA_PARAM_INT, LENGTH_FIELD(min), .flags = EMA_PARAM_OPTIONAL, .min = 1,
     .max = 4294967295.0, .help = "smallest length (uniform: the range; others: a clamp)"},
    {"max", EMA_PARAM_INT, LENGTH_FIELD(max), .flags = EMA_PARAM_OPTIONAL, .min = 1,
     .max = 4294967295.0, .help = "largest length (uniform: the range; others: a clamp)"},
    {"median", EMA_PARAM_DOUBLE, LENGTH_FIELD(median), .flags = EMA_PARAM_OPTIONAL, .min = 1,
     .max = 1e9, .help = "lognormal: the median (or give mean)"},
    {"mean", EMA_PARAM_DOUBLE, LENGTH_FIELD(mean), .flags = EMA_PARAM_OPTIONAL, .min = 1,
     .max = 1e9, .help = "lognormal: the mean (or give median)"},
    {"sigma", EMA_PARAM_DOUBLE, LENGTH_FIELD(sigma), .flags = EMA_PARAM_OPTIONAL, .min = 1e-6,
     .max = 10, .help = "lognormal: standard deviation of ln(length)"},
    {"file", EMA_PARAM_STRING, LENGTH_FIELD(file), .flags = EMA_PARAM_OPTIONAL,
     .help = "resample: a length-only CSV (its column for this length is drawn from)"},
};

static gboolean check_length(gpointer object, const EmaNode *node, const char *path,
                             GError **error) {
  EmaLengthSpec *length = object;
  g_autofree char *why = NULL;
  if (length->dist == EMA_LENGTH_NONE)
    return reject_keys(node, path, length_keys, "without a dist", error);
  why = g_strdup_printf("by dist: %s", length_kind_names[length->dist]);
  if (!check_choice_keys(node, path, length_keys, &length_choice_keys[length->dist], why, error))
    return FALSE;
  if (length->dist == EMA_LENGTH_LOGNORMAL && (length->median > 0) == (length->mean > 0)) {
    ema_node_error(error, EMA_CONFIG_ERROR_INVALID, node, path,
                   "dist: lognormal needs exactly one of median and mean");
    return FALSE;
  }
  if (length->min && length->max && length->min > length->max) {
    ema_node_error(error, EMA_CONFIG_ERROR_INVALID, ema_node_get(node, "max"), path,
                   "max (%" G_GINT64_FORMAT ") is below min (%" G_GINT64_FORMAT ")", length->max,
                   length->min);
    return FALSE;
  }
  return resolve_path(&length->file, node, "file", path, error);
}

static const EmaParamTable length_table = {"length", sizeof(EmaLengthSpec), length_params,
                                           EMA_PARAMS_N(length_params), check_length};

/* ---- traces -------------------------------------------------------------- */

static const char *const arrival_keys[] = {"rate",    "cv",       "rate_on",  "rate_off",
                                           "mean_on", "mean_off", "rate_min", "rate_max",
                                           "period",  "phases",   NULL};

static const ChoiceKeys arrival_choice_keys[] = {
    [EMA_ARRIVALS_FILE] = {(const char *const[]){NULL}, NULL},
    [EMA_ARRIVALS_POISSON] = {(const char *const[]){"rate", NULL}, NULL},
    [EMA_ARRIVALS_GAMMA] = {(const char *const[]){"rate", "cv", NULL}, NULL},
    [EMA_ARRIVALS_ONOFF] = {(const char *const[]){"rate_on", "mean_on", "mean_off", NULL},
                            (const char *const[]){"rate_off", NULL}},
    [EMA_ARRIVALS_DIURNAL] = {(const char *const[]){"rate_max", "period", NULL},
                              (const char *const[]){"rate_min", NULL}},
    [EMA_ARRIVALS_PHASES] = {(const char *const[]){"phases", NULL}, NULL},
};

static const EmaParam phase_params[] = {
    {"duration", EMA_PARAM_DURATION, G_STRUCT_OFFSET(EmaPhaseSpec, duration),
     .flags = EMA_PARAM_REQUIRED, .min = 1, .max = 1e18, .help = "how long the phase lasts"},
    {"rate", EMA_PARAM_DOUBLE, G_STRUCT_OFFSET(EmaPhaseSpec, rate), .flags = EMA_PARAM_REQUIRED,
     .min = 0, .max = 1e9, .help = "requests per second in the phase (Poisson)"},
};

static const EmaParamTable phase_table = {"phase", sizeof(EmaPhaseSpec), phase_params,
                                          EMA_PARAMS_N(phase_params), NULL};

static const EmaParam trace_params[] = {
    {"file", EMA_PARAM_STRING, TRACE_FIELD(file), .flags = EMA_PARAM_OPTIONAL,
     .help = "a trace file (relative to the experiment file); absent: synthetic"},
    {"format", EMA_PARAM_ENUM, TRACE_FIELD(format), .default_value = "auto",
     .choices = format_names,
     .help = "auto (sniffed), azure, vidur, burstgpt, mooncake, lengths or vllm-bench (these two "
             "need arrivals)"},
    {"keep_failed", EMA_PARAM_BOOL, TRACE_FIELD(keep_failed), .default_value = "false",
     .help = "burstgpt: keep failed requests (0 response tokens: each runs with 1, as vLLM "
             "generates at least one, and the run says how many)"},
    {"cycle", EMA_PARAM_BOOL, TRACE_FIELD(cycle), .default_value = "false",
     .help = "lengths: start the file again at its end"},
    {"arrivals", EMA_PARAM_ENUM, TRACE_FIELD(arrivals), .default_value = "file",
     .choices = arrivals_kind_names,
     .help = "file (times from the trace file), poisson, gamma, onoff, diurnal or phases"},
    {"rate", EMA_PARAM_DOUBLE, TRACE_FIELD(rate), .flags = EMA_PARAM_OPTIONAL, .min = 1e-9,
     .max = 1e9, .help = "poisson, gamma: mean requests per second"},
    {"cv", EMA_PARAM_DOUBLE, TRACE_FIELD(cv), .flags = EMA_PARAM_OPTIONAL, .min = 1e-3, .max = 1e3,
     .help = "gamma: coefficient of variation of inter-arrival times (1 = Poisson)"},
    {"rate_on", EMA_PARAM_DOUBLE, TRACE_FIELD(rate_on), .flags = EMA_PARAM_OPTIONAL, .min = 1e-9,
     .max = 1e9, .help = "onoff: requests per second during a burst"},
    {"rate_off", EMA_PARAM_DOUBLE, TRACE_FIELD(rate_off), .flags = EMA_PARAM_OPTIONAL, .min = 0,
     .max = 1e9, .help = "onoff: requests per second between bursts (default 0)"},
    {"mean_on", EMA_PARAM_DURATION, TRACE_FIELD(mean_on), .flags = EMA_PARAM_OPTIONAL, .min = 1e6,
     .max = 1e18, .help = "onoff: mean burst length (exponential), at least 1ms"},
    {"mean_off", EMA_PARAM_DURATION, TRACE_FIELD(mean_off), .flags = EMA_PARAM_OPTIONAL, .min = 1e6,
     .max = 1e18, .help = "onoff: mean time between bursts (exponential), at least 1ms"},
    {"rate_min", EMA_PARAM_DOUBLE, TRACE_FIELD(rate_min), .flags = EMA_PARAM_OPTIONAL, .min = 0,
     .max = 1e9, .help = "diurnal: rate at time 0 (default 0)"},
    {"rate_max", EMA_PARAM_DOUBLE, TRACE_FIELD(rate_max), .flags = EMA_PARAM_OPTIONAL, .min = 1e-9,
     .max = 1e9, .help = "diurnal: rate at half a period"},
    {"period", EMA_PARAM_DURATION, TRACE_FIELD(period), .flags = EMA_PARAM_OPTIONAL, .min = 1,
     .max = 1e18, .help = "diurnal: period of the cosine"},
    {"phases", EMA_PARAM_LIST, TRACE_FIELD(phases), .table = &phase_table,
     .flags = EMA_PARAM_OPTIONAL,
     .help = "phases: [{duration, rate}, ...]; the last phase lasts on"},
    {"prompt", EMA_PARAM_STRUCT, TRACE_FIELD(prompt), .table = &length_table,
     .help = "prompt lengths (synthetic and lengths-file traces)"},
    {"output", EMA_PARAM_STRUCT, TRACE_FIELD(output), .table = &length_table,
     .help = "output lengths (synthetic and lengths-file traces)"},
    {"start", EMA_PARAM_DURATION, TRACE_FIELD(start), .default_value = "0s", .min = 0, .max = 1e18,
     .help = "files: skip the requests before this time"},
    {"duration", EMA_PARAM_DURATION, TRACE_FIELD(duration), .flags = EMA_PARAM_OPTIONAL, .min = 1,
     .max = 1e18, .help = "files: keep this much after start; synthetic: stop after it"},
    {"rate_scale", EMA_PARAM_DOUBLE, TRACE_FIELD(rate_scale), .default_value = "1", .min = 1e-6,
     .max = 1e6, .help = "replay this many times faster (divides every arrival time)"},
    {"split", EMA_PARAM_INT, TRACE_FIELD(split), .flags = EMA_PARAM_OPTIONAL, .min = 1, .max = 1e6,
     .help = "keep one request in this many, round robin (a router over replicas)"},
    {"split_index", EMA_PARAM_INT, TRACE_FIELD(split_index), .default_value = "0", .min = 0,
     .max = 1e6, .help = "which request of each split to keep: 0 .. split-1"},
    {"requests", EMA_PARAM_INT, TRACE_FIELD(requests), .flags = EMA_PARAM_OPTIONAL, .min = 1,
     .max = 9.2e18, .help = "stop after this many requests"},
    {"offset", EMA_PARAM_DURATION, TRACE_FIELD(offset), .default_value = "0s", .min = 0,
     .max = 1e18, .help = "shift every arrival by this much (after the other transformations)"},
    {"concurrency", EMA_PARAM_INT, TRACE_FIELD(concurrency), .default_value = "0", .min = 0,
     .max = 1e7,
     .help = "closed loop: this many clients, each sending the next request when its last "
             "one finished (the arrival times are not used); 0: open loop"},
    {"timeout", EMA_PARAM_DURATION, TRACE_FIELD(timeout), .flags = EMA_PARAM_OPTIONAL, .min = 1,
     .max = 1e18,
     .help = "the clients give up on a request this long after sending it: one not finished by "
             "then is aborted and counted as timed out, not in the latencies (absent: they wait "
             "for ever; aiohttp's default total timeout is 300s)"},
    {"shared_prefix_tokens", EMA_PARAM_INT, TRACE_FIELD(shared_prefix_tokens), .default_value = "0",
     .min = 0, .max = 4294967295.0,
     .help = "every prompt starts with a shared prefix of this many tokens (for prefix "
             "caching; replaces a trace's own hash_ids); 0: none"},
    {"shared_prefix_groups", EMA_PARAM_INT, TRACE_FIELD(shared_prefix_groups), .default_value = "1",
     .min = 1, .max = 4294967295.0,
     .help = "distinct shared prefixes, given round robin (request k gets prefix k mod groups)"},
};

static EmaTraceArrivals *open_arrivals(const EmaTraceSpec *spec, guint64 seed, GError **error);

/* A start of a trace file past its end leaves the tenant no request: an error at it where the
 * end is known as the experiment loads (every arrival at 0; a file of its own times, read up to
 * the start: ema_trace_spec_reaches), a warning before the run where a seed draws the arrivals
 * (ema_experiment_warnings). NODE at PATH is the trace's map; LENGTHS_FILE: its format draws
 * arrivals for its lengths (lengths, vllm-bench). A file that fails to read is let be: check
 * and run read it and say why. */
static gboolean check_start(const EmaTraceSpec *trace, gboolean lengths_file, const EmaNode *node,
                            const char *path, GError **error) {
  g_autofree char *key_path = NULL, *start = NULL, *name = NULL;
  const EmaNode *value = ema_node_get(node, "start");
  gboolean reaches;
  EmaTime last;
  if (trace->file == NULL || trace->start <= 0)
    return TRUE;
  key_path = path ? g_strconcat(path, ".start", NULL) : g_strdup("start");
  start = ema_units_format_duration(trace->start);
  if (lengths_file && trace->arrivals == EMA_ARRIVALS_FILE) {
    ema_node_error(error, EMA_CONFIG_ERROR_INVALID, value ? value : node, key_path,
                   "%s: every request of this trace arrives at 0s (%s): a start past it leaves "
                   "the tenant none%s; leave start out",
                   start,
                   trace->concurrency > 0 ? "a closed loop: its clients send as their requests end"
                                          : "vLLM's request_rate inf: all at once",
                   trace->cycle ? ", and the run would cycle the file for ever for one" : "");
    return FALSE;
  }
  if (lengths_file || trace->format == EMA_TRACE_FORMAT_AUTO ||
      !ema_trace_spec_reaches(trace, 0, trace->start, &reaches, &last, NULL) || reaches || last < 0)
    return TRUE;
  name = g_path_get_basename(trace->file);
  ema_node_error(error, EMA_CONFIG_ERROR_RANGE, value ? value : node, key_path,
                 "%s is past the end of the trace: its last request arrives at %.6g s (%s's "
                 "length, from its first request), so the tenant would get none; give a start "
                 "below it",
                 start, (double) last / 1e9, name);
  return FALSE;
}

/* An option (KEY, true) that the trace's format has no use for: an error at
 * the key, naming the format, not a setting silently ignored. */
static gboolean reject_unused(const EmaNode *node, const char *path, const char *key,
                              const EmaTraceSpec *trace, const char *what, GError **error) {
  g_autofree char *key_path = path ? g_strconcat(path, ".", key, NULL) : g_strdup(key);
  ema_node_error(error, EMA_CONFIG_ERROR_INVALID, ema_node_get(node, key), key_path,
                 "%s (the file's format is %s)", what, ema_trace_format_name(trace->format));
  return FALSE;
}

/* The load a vLLM benchmark ran with, for a trace that gives none:
 * --request-rate and --burstiness become gamma arrivals (vLLM draws gamma
 * gaps of shape burstiness and mean 1/rate: cv = 1/sqrt(burstiness)), "inf"
 * sends every request at once, and --max-concurrency is the closed loop's
 * clients unless the trace sets concurrency. */
static gboolean vllm_load(EmaTraceSpec *trace, const EmaNode *file, const char *path,
                          GError **error) {
  EmaTraceVllmBench bench;
  GError *inner = NULL;
  if (!ema_trace_vllm_bench_read(trace->file, &bench, &inner)) {
    g_autofree char *key_path = path ? g_strconcat(path, ".file", NULL) : g_strdup("file");
    ema_node_error(error, EMA_CONFIG_ERROR_INVALID, file, key_path, "%s", inner->message);
    g_error_free(inner);
    return FALSE;
  }
  if (isfinite(bench.request_rate)) {
    trace->arrivals = EMA_ARRIVALS_GAMMA;
    trace->rate = bench.request_rate;
    trace->cv = 1 / sqrt(bench.burstiness);
  }
  if (trace->concurrency == 0)
    trace->concurrency = (gint64) bench.max_concurrency;
  return TRUE;
}

static gboolean check_trace(gpointer object, const EmaNode *node, const char *path,
                            GError **error) {
  EmaTraceSpec *trace = object;
  gboolean lengths_file, vllm_file, needs_arrivals, own_times;
  gboolean needs_lengths = trace->file == NULL;
  g_autofree char *why = g_strdup_printf("by arrivals: %s", arrivals_kind_names[trace->arrivals]);
  g_autofree char *prompt_path = path ? g_strconcat(path, ".prompt", NULL) : g_strdup("prompt");
  g_autofree char *output_path = path ? g_strconcat(path, ".output", NULL) : g_strdup("output");
  const EmaNode *at = ema_node_get(node, "arrivals");

  if (!resolve_path(&trace->file, node, "file", path, error))
    return FALSE;
  /* what describes a trace file, set on a synthetic trace: an error, not ignored */
  if (trace->file == NULL) {
    const char *key = trace->format != EMA_TRACE_FORMAT_AUTO ? "format"
                      : trace->keep_failed                   ? "keep_failed"
                      : trace->cycle                         ? "cycle"
                                                             : NULL;
    if (key) {
      g_autofree char *key_path = path ? g_strconcat(path, ".", key, NULL) : g_strdup(key);
      const EmaNode *at_key = ema_node_get(node, key);
      ema_node_error(error, EMA_CONFIG_ERROR_INVALID, at_key ? at_key : node, key_path,
                     "%s is about a trace file, and this trace has none (a synthetic trace): "
                     "give file, or leave %s out",
                     key, key);
      return FALSE;
    }
  }
  /* format: auto is the file's format from here on (a file that cannot be
   * read yet stays auto: opening it says why) */
  if (trace->file && trace->format == EMA_TRACE_FORMAT_AUTO &&
      !ema_trace_format_sniff(trace->file, &trace->format, NULL))
    trace->format = EMA_TRACE_FORMAT_AUTO;
  vllm_file = trace->file && trace->format == EMA_TRACE_FORMAT_VLLM_BENCH;
  lengths_file = trace->file && ema_trace_format_counts_only(trace->format);
  /* (a file of no format known has neither: opening it says why, where an arrivals key beside
   * it was called out as beside a file of its own times) */
  own_times = trace->file && trace->format != EMA_TRACE_FORMAT_AUTO && !lengths_file;
  /* a closed loop sends when a client is free: arrival times are not used;
   * a vLLM result has the benchmark's own load */
  needs_arrivals = (trace->file == NULL || lengths_file) && trace->concurrency == 0 && !vllm_file;
  if (trace->keep_failed && trace->file && trace->format != EMA_TRACE_FORMAT_AUTO &&
      trace->format != EMA_TRACE_FORMAT_BURSTGPT)
    return reject_unused(node, path, "keep_failed", trace,
                         "only BurstGPT traces record failed requests", error);
  if (trace->cycle && trace->file && trace->format != EMA_TRACE_FORMAT_AUTO && !lengths_file)
    return reject_unused(node, path, "cycle", trace,
                         "only a lengths or vllm-bench file (its arrivals drawn) starts again at "
                         "its end",
                         error);
  if ((needs_arrivals && trace->arrivals == EMA_ARRIVALS_FILE) ||
      (own_times && trace->arrivals != EMA_ARRIVALS_FILE)) {
    g_autofree char *key_path = path ? g_strconcat(path, ".arrivals", NULL) : g_strdup("arrivals");
    ema_node_error(error, EMA_CONFIG_ERROR_INVALID, at ? at : node, key_path, "%s",
                   needs_arrivals
                       ? (trace->file ? "a lengths file needs an arrival process (arrivals: "
                                        "poisson, gamma, onoff, diurnal or phases)"
                                      : "a synthetic trace needs an arrival process (arrivals: "
                                        "poisson, gamma, onoff, diurnal or phases), closed-loop "
                                        "clients (concurrency: N) or a file")
                       : "this trace file has its own arrival times: leave arrivals out, or use "
                         "format: lengths or vllm-bench");
    return FALSE;
  }
  /* a closed loop sends when a client is free: an arrival process beside it would be ignored;
   * likewise groups of a shared prefix that is not there */
  if (trace->concurrency > 0 && trace->arrivals != EMA_ARRIVALS_FILE) {
    g_autofree char *key_path = path ? g_strconcat(path, ".arrivals", NULL) : g_strdup("arrivals");
    ema_node_error(error, EMA_CONFIG_ERROR_INVALID, at ? at : node, key_path,
                   "concurrency %" G_GINT64_FORMAT " runs a closed loop, each client sending "
                   "when its last request ends: an arrival process does not apply (leave "
                   "arrivals and its keys out, or concurrency for an open loop)",
                   trace->concurrency);
    return FALSE;
  }
  if (trace->shared_prefix_tokens == 0 && trace->shared_prefix_groups > 1) {
    g_autofree char *key_path =
        path ? g_strconcat(path, ".shared_prefix_groups", NULL) : g_strdup("shared_prefix_groups");
    ema_node_error(error, EMA_CONFIG_ERROR_INVALID, ema_node_get(node, "shared_prefix_groups"),
                   key_path, "%s", "groups of a shared prefix need shared_prefix_tokens above 0");
    return FALSE;
  }
  if (!check_choice_keys(node, path, arrival_keys, &arrival_choice_keys[trace->arrivals], why,
                         error))
    return FALSE;
  for (guint i = 0; i < 2; i++) {
    const EmaLengthSpec *length = i == 0 ? &trace->prompt : &trace->output;
    const char *length_path = i == 0 ? prompt_path : output_path;
    const EmaNode *length_node = ema_node_get(node, i == 0 ? "prompt" : "output");
    if (needs_lengths && length->dist == EMA_LENGTH_NONE) {
      ema_node_error(error, EMA_CONFIG_ERROR_KEY, length_node ? length_node : node, length_path,
                     "a synthetic trace needs a length distribution (dist: fixed, uniform, "
                     "lognormal or resample)");
      return FALSE;
    }
    if (!needs_lengths && length->dist != EMA_LENGTH_NONE) {
      ema_node_error(error, EMA_CONFIG_ERROR_KEY, length_node ? length_node : node, length_path,
                     "lengths come from the trace file: leave %s out",
                     i == 0 ? "prompt" : "output");
      return FALSE;
    }
  }
  if (trace->arrivals != EMA_ARRIVALS_FILE) {
    /* the generator's own checks (diurnal's rate_max >= rate_min, on/off's bounds, each phase),
     * located at the arrivals key, or at the phases list */
    g_autoptr(EmaTraceArrivals) probe = NULL;
    GError *inner = NULL;
    const char *key = trace->arrivals == EMA_ARRIVALS_PHASES ? "phases" : "arrivals";
    g_autofree char *key_path = path ? g_strconcat(path, ".", key, NULL) : g_strdup(key);
    const EmaNode *at_key = ema_node_get(node, key);
    if (trace->arrivals == EMA_ARRIVALS_PHASES && trace->phases->len == 0)
      g_set_error(&inner, EMA_TRACE_ERROR, EMA_TRACE_ERROR_INVALID,
                  "phases: at least one phase is needed");
    else
      probe = open_arrivals(trace, 0, &inner);
    if (probe == NULL) {
      ema_node_error(error, EMA_CONFIG_ERROR_INVALID, at_key ? at_key : node, key_path, "%s",
                     inner->message);
      g_error_free(inner);
      return FALSE;
    }
  }
  if (vllm_file && trace->arrivals == EMA_ARRIVALS_FILE &&
      !vllm_load(trace, ema_node_get(node, "file"), path, error))
    return FALSE;
  /* a closed loop's requests all arrive at time 0: a duration does not end it */
  if ((trace->file == NULL || (lengths_file && trace->cycle)) &&
      trace->arrivals == EMA_ARRIVALS_FILE && trace->requests == 0) {
    ema_node_error(error, EMA_CONFIG_ERROR_KEY, node, path, "%s",
                   "a closed loop without an arrival process never ends: give requests");
    return FALSE;
  }
  /* a cycled lengths file never ends either (the run would not stop) */
  if ((trace->file == NULL || (lengths_file && trace->cycle)) && trace->duration == 0 &&
      trace->requests == 0) {
    ema_node_error(error, EMA_CONFIG_ERROR_KEY, node, path, "%s",
                   trace->file ? "a cycled lengths file never ends: give requests or duration"
                               : "a synthetic trace never ends: give requests or duration");
    return FALSE;
  }
  if (trace->split_index >= MAX(trace->split, 1)) {
    g_autofree char *key_path =
        path ? g_strconcat(path, ".split_index", NULL) : g_strdup("split_index");
    ema_node_error(error, EMA_CONFIG_ERROR_INVALID, ema_node_get(node, "split_index"), key_path,
                   "split_index must be below split (%" G_GINT64_FORMAT ")", MAX(trace->split, 1));
    return FALSE;
  }
  if (trace->file == NULL && trace->start != 0) {
    const char *one[] = {"start", NULL};
    return reject_keys(node, path, one, "by a synthetic trace", error);
  }
  /* nor do the keys that end or move arrival times, where they would: a closed loop's requests
   * all wait from the start for a free client, and requests ends it (a vLLM benchmark's file
   * keeps its own load; resolved.yaml's rate_scale 1 and offset 0s change nothing) */
  if (trace->concurrency > 0 && !vllm_file) {
    const char *open_loop[4] = {NULL};
    guint n = 0;
    if (trace->duration > 0)
      open_loop[n++] = "duration";
    if (trace->rate_scale != 1)
      open_loop[n++] = "rate_scale";
    if (trace->offset != 0)
      open_loop[n++] = "offset";
    if (!reject_keys(node, path, open_loop,
                     "by a closed loop (its clients send as their requests end; requests ends "
                     "it)",
                     error))
      return FALSE;
  }
  return check_start(trace, lengths_file, node, path, error);
}

static const EmaParamTable trace_table = {"trace", sizeof(EmaTraceSpec), trace_params,
                                          EMA_PARAMS_N(trace_params), check_trace};

/* ---- engine profiles ------------------------------------------------------ */

#define ENGINES_DIR "engines"
#define ENGINES_ENV "EMA_ENGINE_PATH"

static const EmaParam profile_params[] = {
    {"name", EMA_PARAM_STRING, PROFILE_FIELD(name), .flags = EMA_PARAM_REQUIRED,
     .help = "profile id (the file name without .yaml)"},
    {"scheduler", EMA_PARAM_ENUM, PROFILE_FIELD(scheduler), .flags = EMA_PARAM_REQUIRED,
     .choices = scheduler_names,
     .help = "v1 (running first, chunked prefill) or v0 (prefill-first steps)"},
    {"logits_every_request", EMA_PARAM_BOOL, PROFILE_FIELD(logits_every_request),
     .default_value = "false",
     .help = "the LM head runs on every scheduled request's last token, prefill chunks that do "
             "not finish their prompt included, whose samples are dropped (vLLM V1's model "
             "runner); false: only on the requests that sample (V0)"},
    {"versions", EMA_PARAM_STRING, PROFILE_FIELD(versions), .flags = EMA_PARAM_REQUIRED,
     .help = "the engine versions this profile stands for"},
    {"step_cpu_cost", EMA_PARAM_DURATION, PROFILE_FIELD(step_cpu_cost), .flags = EMA_PARAM_REQUIRED,
     .min = 0, .max = 1e10,
     .help = "fixed CPU time of every step (scheduling, inputs, sampling, detokenisation)"},
    {"step_cpu_cost_per_rank", EMA_PARAM_DURATION, PROFILE_FIELD(step_cpu_cost_per_rank),
     .default_value = "0s", .min = 0, .max = 1e10,
     .help = "CPU and synchronisation time per step per tensor-parallel rank beyond the first"},
    {"step_cpu_cost_per_seq", EMA_PARAM_DURATION, PROFILE_FIELD(step_cpu_cost_per_seq),
     .default_value = "0s", .min = 0, .max = 1e9,
     .help = "CPU time per step per scheduled request (its inputs, sampling and output)"},
    {"step_cpu_cost_group", EMA_PARAM_DURATION, PROFILE_FIELD(step_cpu_cost_group),
     .default_value = "0s", .min = 0, .max = 1e10,
     .help = "CPU time per step of a tensor-parallel group (TP > 1) only: the hand-over of the "
             "step's inputs to the other ranks' worker processes"},
    {"step_cpu_cost_per_seq_group", EMA_PARAM_DURATION, PROFILE_FIELD(step_cpu_cost_per_seq_group),
     .default_value = "0s", .min = 0, .max = 1e9,
     .help = "CPU time per step per scheduled request of a tensor-parallel group (TP > 1) only: "
             "that request's share of the hand-over"},
    {"request_cpu_cost", EMA_PARAM_DURATION, PROFILE_FIELD(request_cpu_cost), .default_value = "0s",
     .min = 0, .max = 1e10,
     .help = "time from a request's arrival at the server to its being schedulable (the API "
             "server's parsing and tokenisation, its hand-over to the engine): its TTFT and E2E "
             "include it"},
    {"default_max_num_seqs", EMA_PARAM_INT, PROFILE_FIELD(default_limits.seqs),
     .default_value = "256", .min = 1, .max = 1e7,
     .help = "max_num_seqs where an experiment leaves it out (vllm serve's default)"},
    {"default_max_num_batched_tokens", EMA_PARAM_INT, PROFILE_FIELD(default_limits.tokens),
     .default_value = "2048", .min = 1, .max = 1e8,
     .help = "max_num_batched_tokens where an experiment leaves it out (vllm serve's default; "
             "under the v0 scheduler at least max_model_len)"},
    {"chunked_prefill_above_len", EMA_PARAM_INT, PROFILE_FIELD(chunked_prefill_above_len),
     .default_value = "0", .min = 0, .max = 1e8,
     .help = "the v0 scheduler: chunked prefill by default for a max_model_len above this (vLLM "
             "0.6: 32768; 0: off by default)"},
    {"chunked_max_num_batched_tokens", EMA_PARAM_INT, PROFILE_FIELD(chunked_max_num_batched_tokens),
     .default_value = "512", .min = 1, .max = 1e8,
     .help = "the v0 scheduler: max_num_batched_tokens where an experiment leaves it out and "
             "chunked prefill is on (vLLM V0's default)"},
    {"large_gpu_max_num_seqs", EMA_PARAM_INT, PROFILE_FIELD(large_gpu_limits.seqs),
     .default_value = "0", .min = 0, .max = 1e7,
     .help = "the default max_num_seqs on a GPU of at least 70 GiB other than an A100 (0: as on "
             "others)"},
    {"large_gpu_max_num_batched_tokens", EMA_PARAM_INT, PROFILE_FIELD(large_gpu_limits.tokens),
     .default_value = "0", .min = 0, .max = 1e8,
     .help = "the default max_num_batched_tokens on a GPU of at least 70 GiB other than an A100 "
             "(0: as on others)"},
    {"default_prefix_caching", EMA_PARAM_BOOL, PROFILE_FIELD(default_prefix_caching),
     .default_value = "true",
     .help = "prefix caching where an experiment leaves engine.prefix_caching out, as this "
             "version's `vllm serve` has it (--enable-prefix-caching: on by default in V1, off "
             "in V0)"},
    {"cpu_overlap", EMA_PARAM_BOOL, PROFILE_FIELD(cpu_overlap), .default_value = "false",
     .help = "async scheduling: a step's CPU work overlaps the GPU's (a step takes the longer)"},
    {"output_cpu_cost", EMA_PARAM_DURATION, PROFILE_FIELD(output_cpu_cost), .default_value = "0s",
     .min = 0, .max = 1e10,
     .help = "CPU time per step of processing its outputs (detokenisation, stop checks) beside "
             "the next step's GPU work (V0's async output processing, vLLM 0.6-0.7): a step "
             "takes the longer of its GPU time and this, then its other CPU time"},
    {"output_cpu_cost_per_seq", EMA_PARAM_DURATION, PROFILE_FIELD(output_cpu_cost_per_seq),
     .default_value = "0s", .min = 0, .max = 1e9,
     .help = "the output processing's CPU time per request scheduled in the step"},
    {"eager_layer_cpu_cost", EMA_PARAM_DURATION, PROFILE_FIELD(eager_layer_cpu_cost),
     .default_value = "0s", .min = 0, .max = 1e9,
     .help = "host time per decoder layer of a forward pass run eagerly (no CUDA graph): a step "
             "so run takes at least the layers' sum on its GPU side (0: not measured)"},
    {"cuda_graph_max_batch", EMA_PARAM_INT, PROFILE_FIELD(cuda_graph_max_batch),
     .default_value = "0", .min = 0, .max = 1e7,
     .help = "decode-only steps of at most this many requests replay a CUDA graph; the others "
             "run eagerly (0: every step)"},
    {"fixed_reserve", EMA_PARAM_SIZE, PROFILE_FIELD(fixed_reserve), .flags = EMA_PARAM_REQUIRED,
     .min = 0, .max = 1125899906842624.0,
     .help = "HBM per GPU outside weights, activations and KV (CUDA context, non-torch, sampler)"},
    {"watermark", EMA_PARAM_FRACTION, PROFILE_FIELD(watermark), .flags = EMA_PARAM_REQUIRED,
     .min = 0, .max = 0.5, .help = "share of KV blocks its admission leaves free"},
    {"source", EMA_PARAM_STRING, PROFILE_FIELD(source), .flags = EMA_PARAM_REQUIRED,
     .help = "what the numbers were measured or fitted on"},
    {"fitted_host", EMA_PARAM_STRING, PROFILE_FIELD(fitted_host), .flags = EMA_PARAM_OPTIONAL,
     .help = "the server whose host the CPU costs were fitted on: on another server they scale "
             "by its host.cpu_speed over that server's (absent: they hold on any host)"},
    {"fitted_on", EMA_PARAM_STRING, PROFILE_FIELD(fitted_on), .flags = EMA_PARAM_REQUIRED,
     .help = "the runs the CPU costs were fitted on (GPU, TP degrees, engine version), or "
             "'nothing' with where the numbers come from"},
    {"fidelity", EMA_PARAM_STRING, PROFILE_FIELD(fidelity), .flags = EMA_PARAM_REQUIRED,
     .help = "the measured error of this profile with the step model (experiments/groundtruth)"},
};

/* A profile's fitted_host names a server model there is, found where the profile is read (at
 * its key), not where a run first scales its CPU costs by it. */
static gboolean check_profile(gpointer object, const EmaNode *node, const char *path,
                              GError **error) {
  const EmaEngineProfile *profile = object;
  g_autofree char *host = NULL;
  GError *inner = NULL;
  if (!profile->fitted_host || (host = ema_hwmodel_find(profile->fitted_host, &inner)))
    return TRUE;
  ema_node_error(error, EMA_CONFIG_ERROR_INVALID, ema_node_get(node, "fitted_host"),
                 path ? path : "fitted_host", "%s", inner->message);
  g_error_free(inner);
  return FALSE;
}

const EmaParamTable ema_engine_profile_params = {"engine profile", sizeof(EmaEngineProfile),
                                                 profile_params, EMA_PARAMS_N(profile_params),
                                                 check_profile};

GPtrArray *ema_engine_profile_list(void) {
  return ema_model_dir_list(ENGINES_DIR, ENGINES_ENV);
}

EmaEngineProfile *ema_engine_profile_load(const char *name, GError **error) {
  g_autofree char *path =
      ema_model_dir_find(ENGINES_DIR, ENGINES_ENV, name, "engine profile", error);
  return path ? ema_params_load_tree(&ema_engine_profile_params,
                                     ema_model_load_named(path, name, error), error)
              : NULL;
}

void ema_engine_profile_free(EmaEngineProfile *profile) {
  ema_params_free(&ema_engine_profile_params, profile);
}

/* ---- engine and tenant --------------------------------------------------- */

static const EmaParam engine_params[] = {
    {"profile", EMA_PARAM_STRING, ENGINE_FIELD(profile), .default_value = "vllm-v1",
     .help = "engine profile: hwmodels/engines/<name>.yaml (scheduler, CPU cost per step, "
             "reserve)"},
    {"max_num_seqs", EMA_PARAM_INT, ENGINE_FIELD(max_num_seqs), .flags = EMA_PARAM_OPTIONAL,
     .min = 1, .max = 1e7,
     .help = "running requests at most (vLLM max_num_seqs; absent: the engine profile's default "
             "on the tenant's GPU)"},
    {"max_num_batched_tokens", EMA_PARAM_INT, ENGINE_FIELD(max_num_batched_tokens),
     .flags = EMA_PARAM_OPTIONAL, .min = 1, .max = 1e8,
     .help = "tokens per step at most, prefill chunks included (vLLM max_num_batched_tokens; "
             "absent: the engine profile's default on the tenant's GPU)"},
    {"gpu_memory_utilization", EMA_PARAM_FRACTION, ENGINE_FIELD(gpu_memory_utilization),
     .default_value = "90%", .min = 1e-3, .max = 1,
     .help = "share of HBM for weights, activations and KV cache (vLLM's knob)"},
    {"activation_reserve", EMA_PARAM_SIZE, ENGINE_FIELD(activation_reserve),
     .flags = EMA_PARAM_OPTIONAL, .min = 1, .max = 1125899906842624.0,
     .help = "HBM per GPU kept for activations, at least 1 B (absent: derived, see tenant.h)"},
    {"watermark", EMA_PARAM_FRACTION, ENGINE_FIELD(watermark),
     .flags = EMA_PARAM_OPTIONAL | EMA_PARAM_KEEP_ZERO, .min = 0, .max = 0.5,
     .help = "share of KV blocks that admission leaves free (absent: the profile's)"},
    {"preempt", EMA_PARAM_ENUM, ENGINE_FIELD(preempt), .default_value = "recompute",
     .choices = preempt_names,
     .help = "recompute (drop KV, vLLM v1), swap (to host memory, vLLM v0) or cheaper (each "
             "preempted request whichever of the two the model prices lower); a policy whose "
             "preempt is not engine decides instead (every composition but static)"},
    {"block_size", EMA_PARAM_INT, ENGINE_FIELD(block_size), .default_value = "16", .min = 1,
     .max = 4096, .help = "tokens per KV block (vLLM block_size)"},
    {"max_model_len", EMA_PARAM_INT, ENGINE_FIELD(max_model_len), .flags = EMA_PARAM_OPTIONAL,
     .min = 1, .max = 1e9,
     .help = "prompt + output at most; longer requests are rejected (absent: the model's "
             "max_context)"},
    {"max_waiting", EMA_PARAM_INT, ENGINE_FIELD(max_waiting), .default_value = "1000000", .min = 1,
     .max = 1e12,
     .help = "requests waiting at most: more stops the run with an error (an offered load "
             "far past what the engine serves would otherwise fill the host's memory)"},
    {"num_gpu_blocks", EMA_PARAM_INT, ENGINE_FIELD(num_gpu_blocks), .flags = EMA_PARAM_OPTIONAL,
     .min = 1, .max = 1e12, .help = "KV blocks per GPU given directly (absent: sized from HBM)"},
    {"chunked_prefill", EMA_PARAM_ENUM, ENGINE_FIELD(chunked_prefill), .default_value = "auto",
     .choices = chunked_prefill_names,
     .help = "vLLM's --enable-chunked-prefill: auto (as the profile's version does: V1 always, "
             "vLLM 0.6's V0 above a max_model_len of 32k), true or false (the v0 scheduler "
             "only: V1's chunks are not optional here)"},
    {"enforce_eager", EMA_PARAM_BOOL, ENGINE_FIELD(enforce_eager), .default_value = "false",
     .help = "no CUDA graphs, every step run eagerly (vLLM's --enforce-eager; vLLM before 0.2.5 "
             "had no CUDA graphs): needs a profile with eager_layer_cpu_cost"},
    {"prefix_caching", EMA_PARAM_BOOL, ENGINE_FIELD(prefix_caching),
     .flags = EMA_PARAM_OPTIONAL | EMA_PARAM_KEEP_ZERO,
     .help = "cache full prompt blocks by content (absent: the profile's default_prefix_caching, "
             "on in V1, off in V0); needs prompts with an identity: a trace's hash_ids or "
             "trace.shared_prefix_tokens"},
};

static const EmaParamTable engine_table = {"engine", sizeof(EmaEngineSpec), engine_params,
                                           EMA_PARAMS_N(engine_params), NULL};

static const EmaParam sharing_params[] = {
    {"lend", EMA_PARAM_BOOL, SHARING_FIELD(lend),
     .help = "its GPUs lend their spare KV memory (and hold peers' parked KV) under the "
             "experiment's policy; false: never",
     .default_value = "true"},
    {"borrow", EMA_PARAM_BOOL, SHARING_FIELD(borrow),
     .help = "it borrows from the other GPUs under the experiment's policy; false: never (a "
             "latency-critical tenant)",
     .default_value = "true"},
    {"lend_limit", EMA_PARAM_FRACTION, SHARING_FIELD(lend_limit), .default_value = "100%",
     .help = "the share of its KV region its GPUs lend (and hold peers' parked KV in) at most at "
             "once; the ledger cuts a borrow beyond it",
     .min = 0, .max = 1},
};

static const EmaParamTable sharing_table = {"sharing", sizeof(EmaTenantSharing), sharing_params,
                                            EMA_PARAMS_N(sharing_params), NULL};

static const EmaParam tenant_params[] = {
    {"name", EMA_PARAM_STRING, TENANT_FIELD(name), .flags = EMA_PARAM_OPTIONAL,
     .help = "name in the results (default: tenantN, N its index); not empty, not all, no comma"},
    {"model", EMA_PARAM_STRUCT, TENANT_FIELD(model), .table = &ema_llm_params,
     .resolve = ema_llm_resolve, .flags = EMA_PARAM_REQUIRED,
     .help = "LLM shape: a name from hwmodels/llms, or a map"},
    {"gpu", EMA_PARAM_INT, TENANT_FIELD(gpu), .flags = EMA_PARAM_REQUIRED, .min = 0, .max = 65535,
     .help = "first GPU of the tenant (gpu .. gpu+tp-1 with tensor parallelism)"},
    {"tp", EMA_PARAM_INT, TENANT_FIELD(tp), .default_value = "1", .min = 1, .max = 1024,
     .help = "tensor-parallel GPUs: a divisor of the server's GPUs and of the model's heads "
             "that divides its KV heads or is a multiple of them"},
    {"trace", EMA_PARAM_STRUCT, TENANT_FIELD(trace), .table = &trace_table,
     .flags = EMA_PARAM_REQUIRED, .help = "where the requests come from"},
    {"engine", EMA_PARAM_STRUCT, TENANT_FIELD(engine), .table = &engine_table,
     .help = "serving-engine settings"},
    {"sharing", EMA_PARAM_STRUCT, TENANT_FIELD(sharing), .table = &sharing_table,
     .help = "this tenant's part in memory sharing, within the experiment's policy (default: "
             "lends and borrows)"},
};

gboolean ema_engine_profile_costs(const EmaEngineProfile *profile, guint tp, guint layers,
                                  gboolean enforce_eager, EmaEngineCosts *costs, GError **error) {
  if (enforce_eager && profile->eager_layer_cpu_cost == 0) {
    g_set_error(error, EMA_CONFIG_ERROR, EMA_CONFIG_ERROR_INVALID,
                "engine profile '%s' has no eager_layer_cpu_cost: its eager steps are not modelled "
                "(profiles that have one: ema-sim list engines)",
                profile->name);
    return FALSE;
  }
  costs->step_cpu_cost = profile->step_cpu_cost + profile->step_cpu_cost_per_rank * (tp - 1);
  costs->step_cpu_cost_per_seq = profile->step_cpu_cost_per_seq;
  if (tp > 1) {
    costs->step_cpu_cost += profile->step_cpu_cost_group;
    costs->step_cpu_cost_per_seq += profile->step_cpu_cost_per_seq_group;
  }
  /* the driver alone processes the outputs: no term by TP degree */
  costs->output_cpu_cost = profile->output_cpu_cost;
  costs->output_cpu_cost_per_seq = profile->output_cpu_cost_per_seq;
  costs->cpu_overlap = profile->cpu_overlap;
  /* every rank's host launches its own layers side by side: a group's eager pass is one rank's */
  costs->eager_cpu_cost = profile->eager_layer_cpu_cost * (EmaTime) layers;
  costs->cuda_graph_max_batch = enforce_eager ? 0 : (guint64) profile->cuda_graph_max_batch;
  return TRUE;
}

/* TIME on a host FACTOR times slower (exact where FACTOR is 1). */
static EmaTime on_host(EmaTime time, double factor) {
  return factor == 1.0 ? time : (EmaTime) llround((double) time * factor);
}

void ema_engine_costs_on_host(EmaEngineCosts *costs, double factor) {
  costs->step_cpu_cost = on_host(costs->step_cpu_cost, factor);
  costs->step_cpu_cost_per_seq = on_host(costs->step_cpu_cost_per_seq, factor);
  costs->output_cpu_cost = on_host(costs->output_cpu_cost, factor);
  costs->output_cpu_cost_per_seq = on_host(costs->output_cpu_cost_per_seq, factor);
  costs->eager_cpu_cost = on_host(costs->eager_cpu_cost, factor);
}

void ema_tenant_put_on_host(EmaTenantSpec *tenant, double factor) {
  EmaEngineSpec *engine = &tenant->engine;
  engine->host_factor = factor;
  engine->costs = engine->profile_costs;
  ema_engine_costs_on_host(&engine->costs, factor);
  engine->request_cpu_cost = on_host(engine->profile_request_cpu_cost, factor);
}

/* ERROR (CODE, MESSAGE) at the tenant's engine.KEY: its value where the file gives it, else the
 * engine map or the tenant (NODE, at PATH). */
static void engine_key_error(GError **error, gint code, const EmaNode *node, const char *path,
                             const char *key, const char *message) {
  const EmaNode *engine_node = ema_node_get(node, "engine");
  const EmaNode *at = engine_node ? ema_node_get(engine_node, key) : NULL;
  g_autofree char *key_path =
      g_strdup_printf("%s%sengine.%s", path ? path : "", path ? "." : "", key);
  ema_node_error(error, code, at ? at : engine_node ? engine_node : node, key_path, "%s", message);
}

/* ENGINE's chunked prefill resolved (auto: PROFILE's default by max_model_len); a v0 profile
 * with it on schedules as V0's chunked-prefill scheduler does (the v1 scheduler here), its token
 * budget where the file leaves it out the profile's chunked default. */
static gboolean resolve_chunked_prefill(EmaEngineSpec *engine, const EmaEngineProfile *profile,
                                        const EmaNode *node, const char *path, GError **error) {
  if (engine->chunked_prefill == EMA_CHUNKED_PREFILL_AUTO)
    engine->chunked_prefill = profile->scheduler == EMA_SCHEDULER_V1 ||
                                      (profile->chunked_prefill_above_len > 0 &&
                                       engine->max_model_len > profile->chunked_prefill_above_len)
                                  ? EMA_CHUNKED_PREFILL_ON
                                  : EMA_CHUNKED_PREFILL_OFF;
  if (profile->scheduler == EMA_SCHEDULER_V1 &&
      engine->chunked_prefill == EMA_CHUNKED_PREFILL_OFF) {
    g_autofree char *message = g_strdup_printf(
        "engine profile '%s' schedules as vLLM V1, whose prompts are always chunked here (V1 "
        "without chunked prefill is not modelled)",
        profile->name);
    engine_key_error(error, EMA_CONFIG_ERROR_INVALID, node, path, "chunked_prefill", message);
    return FALSE;
  }
  if (profile->scheduler == EMA_SCHEDULER_V0 && engine->chunked_prefill == EMA_CHUNKED_PREFILL_ON) {
    engine->scheduler = EMA_SCHEDULER_V1;
    engine->default_limits.tokens = profile->chunked_max_num_batched_tokens;
  }
  return TRUE;
}

/* The engine profile's values go into the engine spec (a watermark or
 * prefix_caching not given is the profile's); max_model_len defaults to the model's context. */
static gboolean check_tenant(gpointer object, const EmaNode *node, const char *path,
                             GError **error) {
  EmaTenantSpec *tenant = object;
  EmaEngineSpec *engine = &tenant->engine;
  const EmaNode *engine_node = ema_node_get(node, "engine");
  GError *inner = NULL;
  g_autoptr(EmaEngineProfile) profile = ema_engine_profile_load(engine->profile, &inner);
  if (profile == NULL) {
    engine_key_error(error, EMA_CONFIG_ERROR_KEY, node, path, "profile", inner->message);
    g_error_free(inner);
    return FALSE;
  }
  engine->scheduler = profile->scheduler;
  engine->logits_every_request = profile->logits_every_request;
  if (!ema_engine_profile_costs(profile, (guint) MAX(tenant->tp, 1), (guint) tenant->model.layers,
                                engine->enforce_eager, &engine->profile_costs, &inner)) {
    engine_key_error(error, inner->code, node, path, "enforce_eager", inner->message);
    g_error_free(inner);
    return FALSE;
  }
  engine->profile_request_cpu_cost = profile->request_cpu_cost;
  /* on the profile's own host until the experiment puts it on its server's */
  ema_tenant_put_on_host(tenant, 1.0);
  engine->fixed_reserve = profile->fixed_reserve;
  engine->default_limits = profile->default_limits;
  engine->large_gpu_limits = profile->large_gpu_limits;
  if (engine_node == NULL || ema_node_get(engine_node, "watermark") == NULL)
    engine->watermark = profile->watermark;
  if (engine_node == NULL || ema_node_get(engine_node, "prefix_caching") == NULL)
    engine->prefix_caching = profile->default_prefix_caching;
  if (engine->max_model_len == 0)
    engine->max_model_len = tenant->model.max_context;
  if (tenant->model.max_context > 0 && engine->max_model_len > tenant->model.max_context) {
    /* vLLM refuses it (past the model's positions, unless VLLM_ALLOW_LONG_MAX_MODEL_LEN) */
    g_autofree char *message =
        g_strdup_printf("%" G_GINT64_FORMAT " is above %s's context of %" G_GINT64_FORMAT
                        " tokens (its max_context): vLLM refuses it",
                        engine->max_model_len, tenant->model.name, tenant->model.max_context);
    engine_key_error(error, EMA_CONFIG_ERROR_INVALID, node, path, "max_model_len", message);
    return FALSE;
  }
  if (!resolve_chunked_prefill(engine, profile, node, path, error))
    return FALSE;
  if (engine->scheduler == EMA_SCHEDULER_V0 && engine->max_num_batched_tokens > 0 &&
      engine->max_num_batched_tokens < engine->max_model_len) {
    /* without chunked prefill a prompt is one step: vLLM V0 refuses a budget below the
     * longest (its SchedulerConfig) */
    g_autofree char *message = g_strdup_printf(
        "%" G_GINT64_FORMAT " is below max_model_len (%" G_GINT64_FORMAT
        "): without chunked prefill a prompt is scheduled whole, and vLLM refuses a step budget "
        "below the longest (give chunked_prefill: true, or a larger budget)",
        engine->max_num_batched_tokens, engine->max_model_len);
    engine_key_error(error, EMA_CONFIG_ERROR_INVALID, node, path, "max_num_batched_tokens",
                     message);
    return FALSE;
  }
  return TRUE;
}

const EmaParamTable ema_tenant_params = {"tenant", sizeof(EmaTenantSpec), tenant_params,
                                         EMA_PARAMS_N(tenant_params), check_tenant};

/* ---- building the request source ------------------------------------------ */

static EmaTraceLengths *open_lengths(const EmaLengthSpec *spec, EmaTraceLengthColumn column,
                                     guint64 seed, GError **error) {
  EmaTraceLengths *lengths = NULL;
  switch (spec->dist) {
  case EMA_LENGTH_NONE:
    g_return_val_if_reached(NULL);
  case EMA_LENGTH_FIXED:
    return ema_trace_lengths_new_fixed((guint32) spec->tokens, error);
  case EMA_LENGTH_UNIFORM:
    return ema_trace_lengths_new_uniform((guint32) spec->min, (guint32) spec->max, seed, error);
  case EMA_LENGTH_LOGNORMAL:
    lengths = spec->median > 0
                  ? ema_trace_lengths_new_lognormal(spec->median, spec->sigma, seed, error)
                  : ema_trace_lengths_new_lognormal_mean(spec->mean, spec->sigma, seed, error);
    break;
  case EMA_LENGTH_RESAMPLE:
    lengths = ema_trace_lengths_new_resample(spec->file, column, seed, error);
    break;
  }
  if (lengths && (spec->min || spec->max))
    ema_trace_lengths_set_bounds(lengths, spec->min ? (guint32) spec->min : 1,
                                 spec->max ? (guint32) spec->max : G_MAXUINT32);
  return lengths;
}

static EmaTraceArrivals *open_arrivals(const EmaTraceSpec *spec, guint64 seed, GError **error) {
  switch (spec->arrivals) {
  case EMA_ARRIVALS_POISSON:
    return ema_trace_arrivals_new_poisson(spec->rate, seed, error);
  case EMA_ARRIVALS_GAMMA:
    return ema_trace_arrivals_new_gamma(spec->rate, spec->cv, seed, error);
  case EMA_ARRIVALS_ONOFF:
    return ema_trace_arrivals_new_onoff(spec->rate_on, spec->rate_off, spec->mean_on,
                                        spec->mean_off, seed, error);
  case EMA_ARRIVALS_DIURNAL:
    return ema_trace_arrivals_new_diurnal(spec->rate_min, spec->rate_max, spec->period, seed,
                                          error);
  case EMA_ARRIVALS_PHASES: {
    guint n = spec->phases->len;
    g_autofree double *rates = g_new(double, n);
    g_autofree EmaTime *durations = g_new(EmaTime, n);
    for (guint k = 0; k < n; k++) {
      rates[k] = g_array_index(spec->phases, EmaPhaseSpec, k).rate;
      durations[k] = g_array_index(spec->phases, EmaPhaseSpec, k).duration;
    }
    return ema_trace_arrivals_new_phases(rates, durations, n, seed, error);
  }
  case EMA_ARRIVALS_FILE: /* a closed loop, or vLLM's "inf": all at once */
    return ema_trace_arrivals_new_at_once();
  }
  g_return_val_if_reached(NULL);
}

/* The trace file of SPEC in its format (sniffed first when still auto, so
 * that what a format takes, arrivals for a lengths file or keep_failed for
 * BurstGPT, applies however it was named). */
static EmaTraceSource *open_file(const EmaTraceSpec *spec, guint64 seed, GError **error) {
  EmaTraceFormat format = spec->format;
  if (format == EMA_TRACE_FORMAT_AUTO && !ema_trace_format_sniff(spec->file, &format, error))
    return NULL;
  if (format == EMA_TRACE_FORMAT_LENGTHS) {
    EmaTraceArrivals *arrivals =
        open_arrivals(spec, ema_trace_seed_derive(seed, "arrivals"), error);
    return arrivals ? ema_trace_source_open_lengths(spec->file, arrivals, spec->cycle, error)
                    : NULL;
  }
  if (format == EMA_TRACE_FORMAT_VLLM_BENCH) {
    EmaTraceArrivals *arrivals =
        open_arrivals(spec, ema_trace_seed_derive(seed, "arrivals"), error);
    return arrivals ? ema_trace_source_open_vllm_bench(spec->file, arrivals, spec->cycle, error)
                    : NULL;
  }
  if (format == EMA_TRACE_FORMAT_BURSTGPT) {
    EmaTraceBurstGptOptions options = {.keep_failed = spec->keep_failed};
    return ema_trace_source_open_burstgpt(spec->file, &options, error);
  }
  return ema_trace_source_open(format, spec->file, error);
}

EmaTraceSource *ema_trace_spec_open(const EmaTraceSpec *spec, guint64 seed, GError **error) {
  EmaTraceSource *source;
  if (spec->file) {
    source = open_file(spec, seed, error);
    if (source && (spec->start || spec->duration))
      source = ema_trace_window(source, spec->start,
                                spec->duration ? spec->start + spec->duration : EMA_TIME_NEVER);
  } else {
    g_autoptr(EmaTraceArrivals) arrivals =
        open_arrivals(spec, ema_trace_seed_derive(seed, "arrivals"), error);
    g_autoptr(EmaTraceLengths) prompt = NULL;
    g_autoptr(EmaTraceLengths) output = NULL;
    if (arrivals == NULL)
      return NULL;
    prompt = open_lengths(&spec->prompt, EMA_TRACE_COLUMN_PROMPT,
                          ema_trace_seed_derive(seed, "prompt"), error);
    if (prompt == NULL)
      return NULL;
    output = open_lengths(&spec->output, EMA_TRACE_COLUMN_OUTPUT,
                          ema_trace_seed_derive(seed, "output"), error);
    if (output == NULL)
      return NULL;
    source = ema_trace_source_new_synthetic(g_steal_pointer(&arrivals), g_steal_pointer(&prompt),
                                            g_steal_pointer(&output), 0, spec->duration);
  }
  if (source == NULL)
    return NULL;
  if (spec->rate_scale != 1)
    source = ema_trace_scale_rate(source, spec->rate_scale);
  if (spec->split)
    source = ema_trace_split(source, (guint64) spec->split, (guint64) spec->split_index);
  if (spec->requests)
    source = ema_trace_limit(source, (guint64) spec->requests);
  if (spec->offset)
    source = ema_trace_offset(source, spec->offset);
  if (spec->shared_prefix_tokens)
    source = ema_trace_shared_prefix(source, (guint32) spec->shared_prefix_tokens,
                                     (guint32) spec->shared_prefix_groups);
  return source;
}

/* ---- how far a trace file goes ----------------------------------------------- */

/* What reading a file of its own arrival times (no seed draws them) found, per process: a sweep
 * loads each point's experiment more than once, each load checking its start against the file
 * (check_trace), and a late start of a week-long trace reads many rows before it. Keyed by the
 * file, its format, keep_failed, and its size and modification time (a file written anew is
 * read anew). */
typedef struct {
  EmaTime reached; /* the latest arrival read (-1: none) */
  gboolean ended;  /* read to its end: REACHED is its last arrival */
} FileReach;

static GMutex file_reaches_lock;
static GHashTable *file_reaches; /* key -> FileReach * */

static char *file_reach_key(const EmaTraceSpec *spec) {
  GStatBuf st;
  if (g_stat(spec->file, &st) != 0)
    return NULL;
  return g_strdup_printf("%s\n%d\n%d\n%" G_GINT64_FORMAT "\n%" G_GINT64_FORMAT, spec->file,
                         (int) spec->format, spec->keep_failed, (gint64) st.st_size,
                         (gint64) st.st_mtime);
}

gboolean ema_trace_format_counts_only(EmaTraceFormat format) {
  return format == EMA_TRACE_FORMAT_LENGTHS || format == EMA_TRACE_FORMAT_VLLM_BENCH;
}

gboolean ema_trace_spec_reaches(const EmaTraceSpec *spec, guint64 seed, EmaTime at,
                                gboolean *reaches, EmaTime *last, GError **error) {
  gboolean drawn = ema_trace_format_counts_only(spec->format);
  g_autofree char *key = NULL;
  g_autoptr(EmaTraceSource) source = NULL;
  FileReach found = {.reached = -1};
  EmaRequestRecord record;
  g_return_val_if_fail(spec->file != NULL, FALSE);
  *reaches = TRUE;
  *last = -1;
  if (drawn && spec->arrivals == EMA_ARRIVALS_FILE) {
    /* all at 0 (a closed loop, or vLLM's request_rate inf): said without reading it */
    *reaches = at <= 0;
    *last = 0;
    return TRUE;
  }
  if (drawn && spec->cycle)
    return TRUE; /* its arrivals go on, round and round */
  if (!drawn && (key = file_reach_key(spec)) != NULL) {
    const FileReach *known;
    g_mutex_lock(&file_reaches_lock);
    known = file_reaches ? g_hash_table_lookup(file_reaches, key) : NULL;
    if (known)
      found = *known;
    g_mutex_unlock(&file_reaches_lock);
    if (found.reached >= at || found.ended) {
      *reaches = found.reached >= at;
      *last = found.reached;
      return TRUE;
    }
    found.reached = -1;
  }
  if (!(source = open_file(spec, seed, error)))
    return FALSE;
  while (found.reached < at) {
    GError *inner = NULL;
    if (!ema_trace_source_next(source, &record, &inner)) {
      if (inner) {
        g_propagate_error(error, inner);
        return FALSE;
      }
      found.ended = TRUE;
      break;
    }
    found.reached = record.arrival;
  }
  *reaches = found.reached >= at;
  *last = found.reached;
  if (key) {
    g_mutex_lock(&file_reaches_lock);
    if (!file_reaches)
      file_reaches = g_hash_table_new_full(g_str_hash, g_str_equal, g_free, g_free);
    g_hash_table_replace(file_reaches, g_steal_pointer(&key), g_memdup2(&found, sizeof found));
    g_mutex_unlock(&file_reaches_lock);
  }
  return TRUE;
}

/* ---- memory sizing --------------------------------------------------------- */

guint64 ema_tenant_default_activation_reserve(const EmaTenantSpec *tenant) {
  EmaLlmDerived derived;
  const EmaLlmSpec *m = &tenant->model;
  double tp = (double) tenant->tp;
  double tokens = (double) tenant->engine.max_num_batched_tokens;
  double per_token;
  ema_llm_derive(m, &derived);
  /* live at the peak of one layer, per token: the residual stream and the
   * normed input (2 h), the q/k/v projections ((H + 2K) d / tp) and the FFN's
   * inner activations (2 F / tp, gate and up; the active and shared experts' for MoE) */
  per_token = 2.0 * (double) m->hidden +
              (double) ((m->heads + 2 * m->kv_heads) * m->head_dim) / tp +
              2.0 * (double) (m->ffn * m->active_experts + m->shared_ffn) / tp;
  /* plus fp32 logits over the vocabulary for every running sequence */
  return (guint64) ceil(tokens * per_token * derived.bytes_per_element +
                        (double) tenant->engine.max_num_seqs * (double) m->vocab * 4.0);
}

gboolean ema_tenant_model_fits(const EmaLlmSpec *model, const EmaServerSpec *server, guint tp,
                               GError **error) {
  EmaTenantSpec tenant = {
      .model = *model, .tp = tp, .engine = {.gpu_memory_utilization = 1, .block_size = 1}};
  EmaTenantPlan plan;
  return ema_tenant_plan(&tenant, server, &plan, error);
}

gboolean ema_tenant_plan(const EmaTenantSpec *tenant, const EmaServerSpec *server,
                         EmaTenantPlan *plan, GError **error) {
  g_autoptr(EmaStepModel) step =
      ema_step_model_new(&tenant->model, server, (guint) tenant->tp, error);
  double usable;
  if (step == NULL)
    return FALSE;
  memset(plan, 0, sizeof *plan);
  plan->weight_bytes = ema_step_model_weight_bytes_per_gpu(step);
  plan->activation_reserve = tenant->engine.activation_reserve
                                 ? tenant->engine.activation_reserve
                                 : ema_tenant_default_activation_reserve(tenant);
  plan->block_bytes = (guint64) llround(ema_step_model_kv_bytes_per_token_per_gpu(step) *
                                        (double) tenant->engine.block_size);
  usable = floor((double) ema_gpu_hbm_bytes(&server->gpu) * tenant->engine.gpu_memory_utilization);
  if (tenant->engine.num_gpu_blocks > 0) {
    plan->kv_bytes = (guint64) tenant->engine.num_gpu_blocks * plan->block_bytes;
    plan->slices = (plan->kv_bytes + EMA_SLICE_BYTES - 1) / EMA_SLICE_BYTES;
  } else {
    double taken = (double) (plan->weight_bytes + plan->activation_reserve) +
                   (double) tenant->engine.fixed_reserve;
    if (usable > taken)
      plan->kv_bytes = (guint64) (usable - taken);
    plan->slices = plan->kv_bytes / EMA_SLICE_BYTES;
  }
  plan->blocks = plan->slices * EMA_SLICE_BYTES / plan->block_bytes;
  if (plan->blocks == 0) {
    g_autofree char *hbm = ema_units_format_size_human((guint64) usable);
    g_autofree char *weights = ema_units_format_size_human(plan->weight_bytes);
    g_autofree char *reserve = ema_units_format_size_human(plan->activation_reserve);
    g_autofree char *fixed = ema_units_format_size_human(tenant->engine.fixed_reserve);
    g_autofree char *fixed_text =
        tenant->engine.fixed_reserve == 0
            ? g_strdup("")
            : g_strdup_printf(" and engine profile %s's fixed reserve of %s",
                              tenant->engine.profile ? tenant->engine.profile : "?", fixed);
    g_set_error(error, EMA_CONFIG_ERROR, EMA_CONFIG_ERROR_INVALID,
                "%s does not fit with tp %" G_GINT64_FORMAT " on %s: %s of HBM per GPU "
                "(gpu_memory_utilization %.3g%%) leaves no KV cache after %s of weights%s "
                "%s of activation reserve%s",
                tenant->model.name, tenant->tp, server->gpu.name, hbm,
                100 * tenant->engine.gpu_memory_utilization, weights,
                tenant->engine.fixed_reserve == 0 ? " and" : ",", reserve, fixed_text);
    return FALSE;
  }
  plan->watermark_blocks = (guint64) ceil(tenant->engine.watermark * (double) plan->blocks);
  return TRUE;
}

/* vLLM's EngineArgs batch defaults (0.9 and later): "GPUs like H100 and MI300x" (at least
 * 70 GiB of device memory, A100s excepted, where a larger budget lowered throughput) take the
 * larger limits. The GPU's own memory, before hbm_scale: the 2x oracle changes nothing but the
 * memory, so a 48 GB L40S given twice its HBM keeps its limits. */
static gboolean is_large_gpu(const EmaGpuSpec *gpu) {
  g_autofree char *name = g_ascii_strdown(gpu->name ? gpu->name : "", -1);
  return (double) gpu->hbm_capacity >= 70.0 * 1073741824.0 && strstr(name, "a100") == NULL;
}

void ema_tenant_resolve_batch_defaults(EmaTenantSpec *tenant, const EmaGpuSpec *gpu) {
  EmaEngineSpec *engine = &tenant->engine;
  const EmaBatchLimits *large = is_large_gpu(gpu) ? &engine->large_gpu_limits : NULL;
  if (engine->max_num_seqs == 0)
    engine->max_num_seqs = large && large->seqs ? large->seqs : engine->default_limits.seqs;
  if (engine->max_num_batched_tokens == 0) {
    engine->max_num_batched_tokens =
        large && large->tokens ? large->tokens : engine->default_limits.tokens;
    /* V0 without chunked prefill: a prompt is one step, so the budget holds the longest */
    if (engine->scheduler == EMA_SCHEDULER_V0)
      engine->max_num_batched_tokens = MAX(engine->max_num_batched_tokens, engine->max_model_len);
  }
}

void ema_tenant_engine_config(const EmaTenantSpec *tenant, const EmaTenantPlan *plan,
                              const EmaServerSpec *server, EmaEngineConfig *config) {
  memset(config, 0, sizeof *config);
  config->max_num_seqs = (guint64) tenant->engine.max_num_seqs;
  config->max_num_batched_tokens = (guint64) tenant->engine.max_num_batched_tokens;
  config->watermark_blocks = plan->watermark_blocks;
  config->preempt = tenant->engine.preempt;
  config->block_bytes = plan->block_bytes;
  /* a swap goes out and comes back; the slower direction bounds both */
  config->swap_bandwidth = MIN(server->host.h2d_bandwidth, server->host.d2h_bandwidth);
  config->swap_fixed_cost = server->host.copy_fixed_cost;
  config->block_tokens = (guint) tenant->engine.block_size;
  config->max_model_len = (guint64) tenant->engine.max_model_len;
  config->max_waiting = (guint64) tenant->engine.max_waiting;
  config->name = tenant->name;
  config->costs = tenant->engine.costs;
  config->request_cpu_cost = tenant->engine.request_cpu_cost;
  config->scheduler = tenant->engine.scheduler;
  config->logits_every_request = tenant->engine.logits_every_request;
  config->concurrency = (guint64) tenant->trace.concurrency;
  config->client_timeout = tenant->trace.timeout;
  config->prefix_caching = tenant->engine.prefix_caching;
}
