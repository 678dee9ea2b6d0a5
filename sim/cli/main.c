/* main.c: the ema-sim command line. Subcommands:
 *   run FILE [-o DIR] [--seed N] [--set k=v]...   run an experiment
 *   check FILE [--set k=v]...                     load and check only
 *   list hwmodels                                 known server models
 *   list llms | engines                           LLM shapes; engine profiles (vLLM versions)
 *   list policies                                 registered policies and compositions
 *   describe hwmodel|llm|engine NAME              one model or profile, every value
 *   describe-policy NAME (or describe policy NAME) one policy and its parameters
 *   sweep FILE [-o DIR] [-j N] [--fail-fast] ...  run every point of a sweep file
 *   plot DIR [--x PATH] [--by COLUMN] ...         gnuplot figures of a run or sweep
 *   try-policy KIND NAME VIEW.yaml                one policy call on a hand-made view
 *   frontier [SERVER...]                          how much of a decode step's KV can be remote
 *   step-time SERVER MODEL TP [FILE]              the step model's time of each batch
 *   compare-steps STEPS.csv, compare-static       the step model against measured steps
 * The table `commands` (main) lists them; those it marks take --plugin-dir DIR (repeatable;
 * also before the command; of describe, `describe policy` alone) and load the policy modules
 * found there and in EMA_PLUGIN_PATH before anything else.
 * Errors print one line on stderr and exit 1: at their place (file:line:col: key: problem), else
 * after "ema-sim: " (print_error); usage errors exit 2, an option of one value given twice
 * among them (parse_options). */
#include <errno.h>
#include <locale.h>
#include <math.h>
#include <stdio.h>
#include <string.h>
#include <unistd.h>

#include "ema/core/csv.h"
#include "ema/core/file.h"
#include "ema/run/experiment.h"
#include "ema/pool/frontier.h"
#include "ema/run/ops.h"
#include "ema/run/output.h"
#include "ema/cli/compare.h"
#include "ema/run/stepcheck.h"
#include "ema/traces/trace.h"
#include "ema/cli/plot.h"
#include "ema/pool/registry.h"
#include "ema/cli/sweep.h"
#include "ema/cli/trypolicy.h"
#include "ema/core/modelpath.h"
#include "ema/core/options.h"
#include "ema/core/units.h"
#include "ema/hw/profile.h"
#include "sweepmpi.h"

#define EXIT_USAGE 2
#define STEP_TIME_COLUMNS                                                                          \
  "prefill_tokens,prefill_context,prefill_kv_read,decode_seqs,decode_context,logits"
/* step-time's optional seventh column: the prefill chunks (prompts) of the step */
#define STEP_TIME_CHUNKS_COLUMN "prefill_chunks"

static const char usage_text[] =
    "Usage: ema-sim COMMAND [OPTIONS]\n"
    "\n"
    "Discrete-event simulator of elastic memory sharing between the GPUs of a server.\n"
    "\n"
    "Commands:\n"
    "  run FILE [-o DIR] [--seed N] [--set key.path=value]... [--no-plot]\n"
    "                         run an experiment; writes DIR/resolved.yaml and DIR/summary.json\n"
    "                         (serving runs also DIR/requests.csv, DIR/timeline.csv and, when\n"
    "                         gnuplot is on PATH, figures in DIR/plots/)\n"
    "  check FILE [--set key.path=value]...\n"
    "                         load and check an experiment without running it\n"
    "  list hwmodels          list the server models (EMA_HWMODEL_PATH, then built-in)\n"
    "  list llms              list the LLM shapes with their parameter counts, weights and KV\n"
    "                         per token (EMA_LLM_PATH, then built-in)\n"
    "  list policies          list the borrow, prefetch and reclaim policies and the named\n"
    "                         compositions\n"
    "  list engines           list the engine profiles (vLLM versions) with what each was\n"
    "                         fitted on (EMA_ENGINE_PATH, then built-in)\n"
    "  describe hwmodel NAME  print one server model with every value\n"
    "  describe llm NAME      print one LLM shape with every value and its derived sizes\n"
    "  describe engine NAME   print one engine profile with every value\n"
    "  describe llm|engine --keys\n"
    "                         every key of such a file (type, default, range, meaning)\n"
    "  describe experiment    every key of experiment files: type, default, range, meaning\n"
    "  describe-policy NAME   print a policy or composition: kind, summary, origin, parameters\n"
    "                         (also: describe policy NAME)\n"
    "  try-policy borrow|prefetch|reclaim NAME VIEW.yaml [--gpu N] [--needed N]\n"
    "                         call a policy once on a pool view written by hand; print its\n"
    "                         plan and its ema_policy_debug() lines (a policy author's harness)\n"
    "  frontier [--model M] [--tolerance F] [-o DIR] [--no-plot] [SERVER...]\n"
    "                         the largest share of a decode step's KV that can be remote\n"
    "                         while the step stays within F (default 5%) of all-local; writes\n"
    "                         DIR/frontier.csv and the figure DIR/plots/frontier.png\n"
    "  sweep FILE [-o DIR] [-j N] [--fail-fast] [--timeout S] [--list] [--part R/K]\n"
    "        [--reuse] [--set key.path=value]... [--no-plot]\n"
    "                         run every point of a sweep file (variants, sweep, repeats), N at\n"
    "                         a time, each in DIR/POINT/; resumes (--reuse: also points of\n"
    "                         another build); writes DIR/sweep.csv (under\n"
    "                         mpirun the points are spread over the ranks; --part R/K runs one\n"
    "                         share, e.g. of a job array)\n"
    "  compare-steps STEPS.csv [--server NAME] [--summary] [-o FILE]\n"
    "                         predict each captured step of STEPS.csv "
    "(hwmodels/profiles/README.md's format)\n"
    "                         with the server model (default h200x8-hgx); the table to FILE or\n"
    "                         stdout, then the median and worst error\n"
    "  compare-static [PERF.csv] [--points N] [--server NAME] [--engine PROFILE\n"
    "                 [--enforce-eager]] [-o FILE]\n"
    "                         static batches (splitwise-perf's format; default\n"
    "                         <shared>/groundtruth/splitwise-perf/perf_model.csv) against\n"
    "                         the step model, per hardware and phase; --points N keeps the\n"
    "                         first N points, --engine adds that engine's host costs a step\n"
    "  plot DIR [--x PATH] [--by COLUMN] [--tenant NAME] [--title TEXT] [--xlabel TEXT]\n"
    "        [--paper]        gnuplot figures (PNG, SVG; --paper: a column wide, PDF) of a run,\n"
    "                         a comparison or a sweep in DIR/plots/\n"
    "  step-time SERVER MODEL TP [FILE] [--weights W] [--kv-cache K] [--breakdown]\n"
    "                         read batches (CSV in FILE, or on stdin without FILE or with -:\n"
    "                         " STEP_TIME_COLUMNS "\n"
    "                         [," STEP_TIME_CHUNKS_COLUMN "]; each sum 0 without its tokens, else\n"
    "                         at least their count) and print the step model's GPU time of\n"
    "                         each, in us\n"
    "\n"
    "Options:\n"
    "  --plugin-dir DIR       load the policy modules in DIR (repeatable; before the command or\n"
    "                         after it, for run, check, list, describe policy,\n"
    "                         describe-policy, try-policy and sweep); the folders of\n"
    "                         EMA_PLUGIN_PATH (colon-separated) are always searched too\n"
    "  -h, --help             show help (also: ema-sim COMMAND --help)\n"
    "  --version              print the version\n"
    "\n"
    "Environment (folders colon-separated, searched before the built-in one; the built-in\n"
    "folders of an installed ema-sim are under <prefix>/share/ema/, wherever it was moved):\n"
    "  EMA_HWMODEL_PATH       server models (built-in: hwmodels/servers)\n"
    "  EMA_LLM_PATH           LLM shapes (hwmodels/llms)\n"
    "  EMA_ENGINE_PATH        engine profiles (hwmodels/engines)\n"
    "  EMA_PROFILE_PATH       operator profiles, NAME/profile.yaml (hwmodels/profiles)\n"
    "  EMA_SHARED_DIR         the public data sets profiles import (one folder; default\n"
    "                         <prefix>/share/ema/shared installed, ../shared beside the source)\n"
    "  EMA_PLOT_PATH          gnuplot scripts (plots)\n"
    "  EMA_PLUGIN_PATH        policy modules (after --plugin-dir and <libdir>/ema/policies)\n"
    "  EMA_GNUPLOT            the gnuplot program (default: gnuplot on PATH)\n"
    "  EMA_POOL_CHECKS        the pool's invariant checks: sample (default), all or off\n"
    "  EMA_FIDELITY_FILE      the table of measured errors per combination (default:\n"
    "                         hwmodels/fidelity.yaml)\n";

/* --plugin-dir options given before the command. */
static GPtrArray *global_plugin_dirs;

/* An error's one line on stderr, "ema-sim: " first where it has no place (ema_message_located,
 * the rule ema-validate follows too). */
static void print_error(const char *message) {
  fprintf(stderr, "%s%s\n", ema_message_located(message) ? "" : "ema-sim: ", message);
}

static int fail(GError *error) {
  print_error(error->message);
  g_error_free(error);
  return 1;
}

static int usage_error(const char *message) {
  fprintf(stderr, "ema-sim: %s\nTry 'ema-sim --help'.\n", message);
  return EXIT_USAGE;
}

/* Parse a subcommand's options (ema_options_parse: an option of one value given twice is a
 * usage error, never its last value taken unsaid); FALSE (after a usage message) on a usage
 * error. */
static gboolean parse_options(const char *summary, GOptionEntry *entries, int *argc, char ***argv,
                              const char *parameter_string) {
  g_autoptr(GOptionContext) context = g_option_context_new(parameter_string);
  g_autoptr(GError) error = NULL;
  g_option_context_set_summary(context, summary);
  if (!ema_options_parse(context, entries, argc, argv, &error)) {
    usage_error(error->message);
    return FALSE;
  }
  return TRUE;
}

/* the options of a command that has none but --help */
static GOptionEntry no_entries[] = {{NULL}};

#define PLUGIN_DIR_ENTRY(dirs)                                                                     \
  {                                                                                                \
    "plugin-dir", 0, 0, G_OPTION_ARG_FILENAME_ARRAY, &(dirs),                                      \
        "Load the policy modules in DIR (repeatable)", "DIR"                                       \
  }

/* Load the policy modules of the global --plugin-dir options, then of the
 * command's (OPTION_DIRS, may be NULL), then of an installed ema-sim's
 * plugin folder (ema_installed_plugin_dir), then of EMA_PLUGIN_PATH. */
static gboolean load_plugins(char **option_dirs, GError **error) {
  g_autoptr(GPtrArray) dirs = g_ptr_array_new();
  for (guint i = 0; global_plugin_dirs && i < global_plugin_dirs->len; i++)
    g_ptr_array_add(dirs, global_plugin_dirs->pdata[i]);
  g_autofree char *installed = ema_installed_plugin_dir();
  for (guint i = 0; option_dirs && option_dirs[i]; i++)
    g_ptr_array_add(dirs, option_dirs[i]);
  if (installed)
    g_ptr_array_add(dirs, installed);
  g_ptr_array_add(dirs, NULL);
  return ema_policy_registry_load_dirs((const char *const *) dirs->pdata, error);
}

static int run_ops(const EmaExperiment *experiment, const char *out_dir) {
  GError *error = NULL;
  gint64 wall_start = g_get_monotonic_time();
  g_autoptr(EmaOpsReport) report = ema_ops_run(experiment, &error);
  double wall_s = (double) (g_get_monotonic_time() - wall_start) / 1e6;
  /* (summary.json, its one result, is written whole or not at all) */
  if (report == NULL ||
      !ema_output_write_ops_summary(out_dir, experiment, report, wall_s, &error)) {
    ema_output_run_failed(out_dir, NULL, &error);
    return fail(error);
  }
  ema_output_print_ops(stdout, report);
  printf("results in %s/\n", out_dir);
  if (report->failed) {
    fprintf(stderr, "ema-sim: %u of %u expectations missed\n", report->failed, report->ops->len);
    return 1;
  }
  return 0;
}

/* The tables are written into OUT_DIR/.ema-partial and go into place only when the run ends
 * well (ema_output_partial_dir): a run that fails leaves none. */
static int run_serving(const EmaExperiment *experiment, const char *out_dir) {
  GError *error = NULL;
  g_autofree char *partial = ema_output_partial_dir(out_dir, &error);
  g_autoptr(EmaServingReport) report = NULL;
  if (partial == NULL) /* (before the run, as a claim's refusal) */
    return fail(error);
  report = ema_serving_run(experiment, partial, isatty(STDERR_FILENO), &error);
  if (report == NULL || !ema_output_write_serving_summary(partial, experiment, report, &error) ||
      !ema_output_publish_run(out_dir, &error)) {
    ema_output_run_failed(out_dir, partial, &error);
    return fail(error);
  }
  ema_output_print_serving(stdout, experiment, report);
  g_autofree char *files = ema_output_run_files(out_dir);
  printf("results in %s/ (%s)\n", out_dir, files);
  ema_output_warn_serving(stderr, NULL, experiment, report);
  return 0;
}

static void plot_after_run(const char *dir, const char *title);
static void plot_at_end(const char *dir, gboolean quiet_without_gnuplot, const char *title);

/* check: open every tenant's trace as the run will and read each trace
 * file through (a file that cycles is read once around; a synthetic stream
 * is only opened: its parameters are checked then), so that a bad row
 * fails check, not run. */
static gboolean check_traces(const EmaExperiment *experiment, GError **error) {
  for (guint i = 0; experiment->tenants && i < experiment->tenants->len; i++) {
    const EmaTenantSpec *spec = &g_array_index(experiment->tenants, EmaTenantSpec, i);
    g_autofree char *stream = g_strconcat("tenant/", spec->name, NULL);
    g_autoptr(EmaTraceSource) source = ema_trace_spec_open(
        &spec->trace, ema_trace_seed_derive((guint64) experiment->seed, stream), error);
    EmaRequestRecord record;
    guint64 first_id = G_MAXUINT64;
    if (source == NULL) {
      ema_message_prefix_error(error, "tenant %s: ", spec->name);
      return FALSE;
    }
    if (spec->trace.file == NULL || *spec->trace.file == '\0')
      continue;
    while (ema_trace_source_next(source, &record, error)) {
      if (experiment->duration > 0 && record.arrival > experiment->duration)
        break;
      if (first_id == G_MAXUINT64)
        first_id = record.id;
      else if (spec->trace.cycle && record.id == first_id)
        break; /* around once */
    }
    if (error && *error) {
      ema_message_prefix_error(error, "tenant %s: ", spec->name);
      return FALSE;
    }
  }
  return TRUE;
}

/* results/NAME, NAME made safe as one folder name. */
static char *default_output_dir(const char *name) {
  g_autofree char *safe = ema_output_safe_name(name);
  return g_build_filename("results", safe, NULL);
}

/* TRUE when PATH is an experiment file with `compare:` (errors in the file
 * are reported by the loader that runs next). */
static gboolean file_compares(const char *path) {
  g_autoptr(EmaNode) root = ema_node_load_file(path, NULL);
  return root && root->kind == EMA_NODE_MAP &&
         ema_node_get_key(root, EMA_EXPERIMENT_COMPARE_KEY) != NULL;
}

/* run or check of an experiment with compare: (compare.h). */
static int run_comparison(const char *path, char **overrides, const char *seed_text,
                          const char *out_dir, gboolean check_only, gboolean no_plot) {
  g_autoptr(GPtrArray) sets = g_ptr_array_new_with_free_func(g_free);
  g_autoptr(EmaSweep) comparison = NULL;
  g_autofree char *dir = NULL;
  g_auto(GStrv) dirs = NULL;
  g_autofree char *names = NULL;
  GError *error = NULL;
  for (guint i = 0; overrides && overrides[i]; i++)
    g_ptr_array_add(sets, g_strdup(overrides[i]));
  if (seed_text)
    g_ptr_array_add(sets, g_strconcat("seed=", seed_text, NULL));
  g_ptr_array_add(sets, NULL);
  comparison = ema_sweep_load_compare(path, (const char *const *) sets->pdata, &error);
  if (comparison == NULL || !ema_sweep_resolve(comparison, &error) ||
      (check_only && !ema_compare_check(comparison, &error)))
    return fail(error);
  dirs = ema_compare_variant_dirs(comparison);
  {
    /* the variants (a repeat's runs are the variant's) */
    g_autoptr(GPtrArray) variants = g_ptr_array_new();
    for (guint p = 0; dirs[p]; p++)
      if (ema_sweep_point_repeat(comparison, p) == 0)
        g_ptr_array_add(variants, (gpointer) ema_sweep_variant_name(comparison, p));
    g_ptr_array_add(variants, NULL);
    names = g_strjoinv(", ", (char **) variants->pdata);
  }
  if (check_only) {
    g_autoptr(EmaExperiment) first = ema_sweep_load_point(comparison, 0, &error);
    ema_compare_warn_before(comparison);
    guint repeats = ema_sweep_n_repeats(comparison);
    g_autofree char *each =
        repeats > 1 ? g_strdup_printf(", %u runs of each", repeats) : g_strdup("");
    if (first == NULL || !check_traces(first, &error))
      return fail(error);
    printf("%s: ok (%s on %s, %u tenant%s, compares %s%s)\n", path, first->name, first->server.name,
           first->tenants ? first->tenants->len : 0,
           first->tenants && first->tenants->len == 1 ? "" : "s", names, each);
    return 0;
  }
  dir = out_dir ? g_strdup(out_dir) : default_output_dir(ema_sweep_name(comparison));
  printf("%s: %s side by side\n", ema_sweep_name(comparison), names);
  if (!ema_compare_run(comparison, dir, isatty(STDERR_FILENO), stdout, &error))
    return fail(error);
  printf("results in %s/ (compare.csv; each variant in %s/VARIANT/)\n", dir, dir);
  if (!no_plot) {
    /* each figure names the run and its variant */
    for (guint i = 0; dirs[i]; i++) {
      g_autofree char *sub = g_build_filename(dir, dirs[i], NULL);
      g_autofree char *title = ema_plot_variant_title(dir, dirs[i]);
      plot_after_run(sub, title);
    }
    {
      g_autofree char *title = g_strdup_printf("%s: %s", ema_sweep_name(comparison), names);
      plot_after_run(dir, title);
    }
  }
  return 0;
}

static void string_free(gpointer string) {
  g_string_free(string, TRUE);
}

/* The warnings of SWEEP's points (ema_experiment_warnings), each text once
 * on stderr with the points that give it, as a single run prints them;
 * returns their texts. */
static GPtrArray *print_sweep_warnings(const EmaSweep *sweep) {
  GPtrArray *texts = g_ptr_array_new_with_free_func(g_free);
  g_autoptr(GPtrArray) points = g_ptr_array_new_with_free_func(string_free);
  g_autoptr(GArray) counts = g_array_new(FALSE, TRUE, sizeof(guint));
  for (guint p = 0; p < ema_sweep_n_points(sweep); p++) {
    g_autoptr(EmaExperiment) experiment = ema_sweep_load_point(sweep, p, NULL);
    g_autoptr(GPtrArray) warnings = experiment ? ema_experiment_warnings(experiment) : NULL;
    for (guint w = 0; warnings && w < warnings->len; w++) {
      guint i;
      if (!g_ptr_array_find_with_equal_func(texts, warnings->pdata[w], g_str_equal, &i)) {
        i = texts->len;
        g_ptr_array_add(texts, g_strdup(warnings->pdata[w]));
        g_ptr_array_add(points, g_string_new(NULL));
        g_array_set_size(counts, texts->len);
      }
      g_array_index(counts, guint, i)++;
      if (g_array_index(counts, guint, i) <= 3)
        g_string_append_printf(points->pdata[i], "%s%s",
                               g_array_index(counts, guint, i) > 1 ? ", " : "",
                               ema_sweep_point_name(sweep, p));
    }
  }
  for (guint i = 0; i < texts->len; i++)
    fprintf(stderr, "ema-sim: warning: %s (%u of the %u points: %s%s)\n",
            (const char *) texts->pdata[i], g_array_index(counts, guint, i),
            ema_sweep_n_points(sweep), ((GString *) points->pdata[i])->str,
            g_array_index(counts, guint, i) > 3 ? ", ..." : "");
  return texts;
}

/* The width of a list's name column: its longest name, at least 16. */
static int name_width(const GPtrArray *names) {
  int width = 16;
  for (guint i = 0; i < names->len; i++)
    width = MAX(width, (int) strlen(names->pdata[i]));
  return width;
}

/* The experiment's warnings (ema_experiment_warnings) on stderr. */
static int command_run(int argc, char **argv, gboolean check_only) {
  g_autofree char *out_dir = NULL;
  gboolean no_plot = FALSE;
  int status;
  g_auto(GStrv) overrides = NULL;
  g_autofree char *seed_text = NULL;
  g_auto(GStrv) plugin_dirs = NULL;
  gint64 seed = 0;
  GError *error = NULL;
  g_autoptr(EmaExperiment) experiment = NULL;
  GOptionEntry run_entries[] = {
      {"output", 'o', 0, G_OPTION_ARG_FILENAME, &out_dir,
       "Directory for the results (default: results/NAME)", "DIR"},
      {"seed", 0, 0, G_OPTION_ARG_STRING, &seed_text,
       "Seed of all random streams, 0 or more (overrides the file)", "N"},
      {"set", 0, 0, G_OPTION_ARG_STRING_ARRAY, &overrides,
       "Override one value, e.g. --set server.gpus=4 (repeatable)", "KEY.PATH=VALUE"},
      PLUGIN_DIR_ENTRY(plugin_dirs),
      {"no-plot", 0, 0, G_OPTION_ARG_NONE, &no_plot,
       "Draw no figures (by default: DIR/plots/ when gnuplot is on PATH)", NULL},
      {NULL}};
  GOptionEntry check_entries[] = {run_entries[2], run_entries[3], {NULL}};

  if (!parse_options(check_only ? "Load and check an experiment file." : "Run an experiment.",
                     check_only ? check_entries : run_entries, &argc, &argv, "FILE"))
    return EXIT_USAGE;
  if (argc != 2)
    return usage_error(argc < 2 ? "missing experiment FILE" : "too many arguments");
  /* the file's range, whose resolved.yaml must run again */
  if (seed_text && (!ema_units_parse_int(seed_text, &seed, NULL) || seed < 0 ||
                    seed > EMA_EXPERIMENT_SEED_MAX)) {
    g_autofree char *message =
        g_strdup_printf("--seed: '%s' is not a whole number in [0, %" G_GINT64_FORMAT "]",
                        seed_text, EMA_EXPERIMENT_SEED_MAX);
    return usage_error(message);
  }
  /* one of the two would be dropped unsaid (as a --set given twice, ema_node_override_repeated) */
  for (guint i = 0; seed_text && overrides && overrides[i]; i++)
    if (ema_node_override_same(overrides[i], "seed"))
      return usage_error("--seed and --set seed= both give the seed: give one of them");

  if (!load_plugins(plugin_dirs, &error))
    return fail(error);
  if (file_compares(argv[1]))
    return run_comparison(argv[1], overrides, seed_text, out_dir, check_only, no_plot);
  experiment = ema_experiment_load(argv[1], (const char *const *) overrides, &error);
  if (experiment == NULL)
    return fail(error);
  if (seed_text)
    experiment->seed = seed;
  ema_output_warn_before(stderr, NULL, experiment);
  if (check_only && !check_traces(experiment, &error))
    return fail(error);
  if (check_only) {
    if (ema_experiment_is_serving(experiment))
      printf("%s: ok (%s on %s, %u tenant%s)\n", argv[1], experiment->name, experiment->server.name,
             experiment->tenants->len, experiment->tenants->len == 1 ? "" : "s");
    else
      printf("%s: ok (%s on %s, %u op%s)\n", argv[1], experiment->name, experiment->server.name,
             experiment->ops->len, experiment->ops->len == 1 ? "" : "s");
    return 0;
  }
  if (out_dir == NULL)
    out_dir = default_output_dir(experiment->name);
  if (!ema_output_claim_dir(out_dir, NULL, &error) ||
      !ema_output_write_resolved(out_dir, experiment, &error))
    return fail(error);
  printf("%s on %s (%" G_GINT64_FORMAT " GPUs)\n", experiment->name, experiment->server.name,
         experiment->server.gpus);
  status = ema_experiment_is_serving(experiment) ? run_serving(experiment, out_dir)
                                                 : run_ops(experiment, out_dir);
  if (status == 0 && !no_plot && ema_experiment_is_serving(experiment))
    plot_after_run(out_dir, NULL);
  return status;
}

static int list_hwmodels(void) {
  g_autoptr(GPtrArray) names = ema_hwmodel_list();
  if (names->len == 0) {
    g_autoptr(GPtrArray) dirs = ema_hwmodel_search_path();
    g_autofree char *where = NULL;
    g_ptr_array_add(dirs, NULL);
    where = g_strjoinv(", ", (char **) dirs->pdata);
    fprintf(stderr, "ema-sim: no server models found (searched %s)\n", where);
    return 1;
  }
  int width = name_width(names);
  for (guint i = 0; i < names->len; i++) {
    GError *error = NULL;
    g_autoptr(EmaServerSpec) server = ema_server_load(names->pdata[i], &error);
    if (server)
      printf("%-*s %s\n", width, (char *) names->pdata[i], server->summary);
    else {
      printf("%-*s (does not load: %s)\n", width, (char *) names->pdata[i], error->message);
      g_error_free(error);
    }
  }
  return 0;
}

/* One line per policy, grouped by kind, then the compositions; all sorted
 * by name (the registry's order). */
static int list_policies(void) {
  g_autoptr(GPtrArray) compositions = ema_policy_registry_list_compositions();
  for (EmaPolicyKind kind = EMA_POLICY_BORROW; kind <= EMA_POLICY_RECLAIM; kind++) {
    g_autoptr(GPtrArray) infos = ema_policy_registry_list(kind);
    printf("%s%s policies:\n", kind == EMA_POLICY_BORROW ? "" : "\n", ema_policy_kind_name(kind));
    for (guint i = 0; i < infos->len; i++) {
      const EmaPolicyInfo *info = infos->pdata[i];
      printf("  %-16s %s", info->name, info->summary);
      if (strcmp(info->origin, "built-in") != 0)
        printf(" (from %s)", info->origin);
      printf("\n");
    }
  }
  printf("\ncompositions (policy: NAME):\n");
  for (guint i = 0; i < compositions->len; i++) {
    const EmaPolicyComposition *composition = compositions->pdata[i];
    printf("  %-16s %s\n", composition->name, composition->summary);
  }
  return 0;
}

/* The derived lines of MODEL (describe llm, list llms). */
static void append_llm_derived(GString *text, const EmaLlmSpec *model) {
  EmaLlmDerived d;
  g_autofree char *weights = NULL, *kv = NULL;
  ema_llm_derive(model, &d);
  weights = ema_units_format_size_human(d.weight_bytes);
  kv = ema_units_format_size_human(d.kv_bytes_per_token);
  g_string_append_printf(text,
                         "# derived: %.3g B parameters (%.3g B active per token), weights %s, KV "
                         "%s per token (%" G_GUINT64_FORMAT " B)",
                         (double) d.total_parameters / 1e9, (double) d.active_parameters / 1e9,
                         weights, kv, d.kv_bytes_per_token);
  if (model->reference_parameters > 0)
    g_string_append_printf(text, "; published %.3g B: %+.2f%%", model->reference_parameters / 1e9,
                           100 * ((double) d.total_parameters / model->reference_parameters - 1));
  g_string_append_c(text, '\n');
}

static int list_llms(void) {
  g_autoptr(GPtrArray) names = ema_llm_list();
  int width = name_width(names);
  for (guint i = 0; i < names->len; i++) {
    GError *error = NULL;
    g_autoptr(EmaLlmSpec) model = ema_llm_load(names->pdata[i], &error);
    g_autoptr(GString) derived = g_string_new(NULL);
    if (model == NULL) {
      printf("%-*s (does not load: %s)\n", width, (char *) names->pdata[i], error->message);
      g_error_free(error);
      continue;
    }
    append_llm_derived(derived, model);
    printf("%-*s %s", width, (char *) names->pdata[i], derived->str + strlen("# derived: "));
  }
  return names->len ? 0 : 1;
}

/* One line per engine profile: the vLLM versions it stands for and what its CPU costs were
 * fitted on. */
static int list_engines(void) {
  g_autoptr(GPtrArray) names = ema_engine_profile_list();
  int width = name_width(names);
  for (guint i = 0; i < names->len; i++) {
    GError *error = NULL;
    g_autoptr(EmaEngineProfile) profile = ema_engine_profile_load(names->pdata[i], &error);
    if (profile == NULL) {
      printf("%-*s (does not load: %s)\n", width, (char *) names->pdata[i], error->message);
      g_error_free(error);
      continue;
    }
    printf("%-*s vLLM %s; fitted on: %s%s%s\n", width, profile->name, profile->versions,
           profile->fitted_on, profile->fitted_host ? "; CPU costs of the host of " : "",
           profile->fitted_host ? profile->fitted_host : "");
  }
  return names->len ? 0 : 1;
}

static int command_list(int argc, char **argv) {
  g_auto(GStrv) plugin_dirs = NULL;
  GError *error = NULL;
  GOptionEntry entries[] = {PLUGIN_DIR_ENTRY(plugin_dirs), {NULL}};
  if (!parse_options("List server models, LLM shapes, engine profiles or policies.", entries, &argc,
                     &argv, "hwmodels|llms|engines|policies"))
    return EXIT_USAGE;
  if (argc != 2 || (strcmp(argv[1], "hwmodels") != 0 && strcmp(argv[1], "policies") != 0 &&
                    strcmp(argv[1], "llms") != 0 && strcmp(argv[1], "engines") != 0))
    return usage_error("usage: ema-sim list hwmodels|llms|engines|policies");
  if (!load_plugins(plugin_dirs, &error))
    return fail(error);
  if (strcmp(argv[1], "llms") == 0)
    return list_llms();
  if (strcmp(argv[1], "engines") == 0)
    return list_engines();
  return strcmp(argv[1], "hwmodels") == 0 ? list_hwmodels() : list_policies();
}

static int command_describe_policy(int argc, char **argv);

/* frontier [--model M] [--tolerance F] [SERVER...]: a table per server. */
static int command_frontier(int argc, char **argv) {
  static const guint batches[] = {1, 8, 32, 128};
  static const guint contexts[] = {1024, 4096, 16384};
  static const char *const frontier_entries[] = {"frontier.csv", "plots", NULL};
  g_auto(GStrv) model_names = NULL;
  g_autofree char *tolerance_text = NULL, *out_dir = NULL;
  const char *model_name;
  gboolean no_plot = FALSE;
  double tolerance = 0.05;
  GError *error = NULL;
  g_autoptr(EmaLlmSpec) model = NULL;
  g_autoptr(GPtrArray) names = NULL;
  g_autoptr(GPtrArray) servers = NULL;
  g_autoptr(GString) csv = g_string_new("server,batch,context,local_step_ms,prefetch_share,"
                                        "direct_share,prefetch_landed_share,offload_share\n");
  g_autofree char *csv_path = NULL;
  GError *last_unfit = NULL; /* the last server the model did not fit (none fitting) */
  guint fitted = 0;
  GOptionEntry entries[] = {
      /* (an array, given once: ema_option_once says why) */
      {"model", 0, 0, G_OPTION_ARG_STRING_ARRAY, &model_names, "LLM shape (default llama-3.1-8b)",
       "M"},
      {"tolerance", 0, 0, G_OPTION_ARG_STRING, &tolerance_text,
       "Allowed slowdown over all-local (default 5%)", "F"},
      {"output", 'o', 0, G_OPTION_ARG_FILENAME, &out_dir,
       "Directory for frontier.csv and the figure (default: results/frontier)", "DIR"},
      {"no-plot", 0, 0, G_OPTION_ARG_NONE, &no_plot,
       "Draw no figure (by default: DIR/plots/frontier.png when gnuplot is on PATH)", NULL},
      {NULL}};
  if (!parse_options("The transparency frontier of remote KV, per server.", entries, &argc, &argv,
                     "[SERVER...]"))
    return EXIT_USAGE;
  /* one model a run: frontier.csv has no model column, and its table and figure are of the one
   * model its header names */
  if (!ema_option_once("--model", model_names,
                       "frontier computes one model a run: run it once per model, each with its "
                       "own -o",
                       &model_name, &error)) {
    usage_error(error->message);
    g_clear_error(&error);
    return EXIT_USAGE;
  }
  if (tolerance_text && (!ema_units_parse_fraction(tolerance_text, &tolerance, NULL) ||
                         tolerance <= 0 || tolerance >= 1))
    return usage_error("--tolerance: give a fraction between 0 and 1, e.g. 5%");
  model = ema_llm_load(model_name ? model_name : "llama-3.1-8b", &error);
  if (model == NULL)
    return fail(error);
  names = argc > 1 ? g_ptr_array_new_with_free_func(g_free) : ema_hwmodel_list();
  for (int i = 1; i < argc; i++) {
    /* (a server named twice wrote each of its rows twice) */
    if (g_ptr_array_find_with_equal_func(names, argv[i], g_str_equal, NULL)) {
      g_autofree char *message = g_strdup_printf("server %s is named twice: name it once", argv[i]);
      return usage_error(message);
    }
    g_ptr_array_add(names, g_strdup(argv[i]));
  }
  /* every server loaded first: a name that is not one fails before any table is printed */
  servers = g_ptr_array_new_with_free_func((GDestroyNotify) ema_server_free);
  for (guint s = 0; s < names->len; s++) {
    EmaServerSpec *server = ema_server_load(names->pdata[s], &error);
    if (server == NULL)
      return fail(error);
    g_ptr_array_add(servers, server);
  }
  /* a model that fits no server's GPU: nothing to compute, nothing claimed or written */
  for (guint s = 0; s < servers->len && fitted == 0; s++) {
    GError *unfit = NULL;
    if (ema_frontier_fits(model, servers->pdata[s], &unfit))
      fitted++;
    else if (!g_error_matches(unfit, EMA_CONFIG_ERROR, EMA_CONFIG_ERROR_INVALID))
      return fail(unfit);
    else {
      g_clear_error(&last_unfit);
      last_unfit = unfit;
    }
  }
  if (fitted == 0)
    return fail(g_steal_pointer(&last_unfit));
  g_clear_error(&last_unfit);
  if (out_dir == NULL)
    out_dir = g_strdup("results/frontier");
  csv_path = g_build_filename(out_dir, "frontier.csv", NULL);
  /* a folder of frontier's own, claimed before the table (another command's, a run's or a
   * sweep's, is refused before any work; an earlier frontier.csv goes, as a run's results do) */
  if (!ema_output_claim_dir_kind(out_dir, "frontier", frontier_entries, EMA_OUTPUT_CLAIM_CLEAR,
                                 &error))
    return fail(error);
  printf("remote share of KV within %.1f%% of all-local, %s, one lender; prefetch and direct "
         "without interference, landed: prefetch with its copies' HBM interference, offload: "
         "attention computed on the lender, its reads within %.1f%% of its HBM time\n",
         100 * tolerance, model->name, 100 * tolerance);
  for (guint s = 0; s < servers->len; s++) {
    const EmaServerSpec *server = servers->pdata[s];
    GError *unfit = NULL;
    printf("\n%s (HBM %.0f GB/s, link %.0f GB/s, k_in %.2f)\n", server->name,
           server->gpu.hbm_bandwidth / 1e9, server->link.bandwidth / 1e9,
           server->gpu.interference_incoming);
    /* a server whose GPU the model does not fit: said in its place, no rows */
    if (!ema_frontier_fits(model, server, &unfit)) {
      if (!g_error_matches(unfit, EMA_CONFIG_ERROR, EMA_CONFIG_ERROR_INVALID))
        return fail(unfit);
      printf("  not computed: %s\n", unfit->message);
      g_error_free(unfit);
      continue;
    }
    printf("%8s %8s %12s %10s %10s %10s %10s\n", "batch", "context", "local step", "prefetch",
           "direct", "landed", "offload");
    for (guint b = 0; b < G_N_ELEMENTS(batches); b++)
      for (guint c = 0; c < G_N_ELEMENTS(contexts); c++) {
        EmaFrontierPoint point;
        if (!ema_frontier_point(model, server, batches[b], contexts[c], tolerance, &point, &error))
          return fail(error);
        printf("%8u %8u %9.3f ms %9.1f%% %9.1f%% %9.1f%% %9.1f%%\n", point.batch, point.context,
               point.local_step_s * 1e3, 100 * point.prefetch_share, 100 * point.direct_share,
               100 * point.prefetch_landed_share, 100 * point.offload_share);
        ema_file_csv_field(csv, server->name);
        g_string_append_printf(csv, ",%u,%u,%.6f,%.6f,%.6f,%.6f,%.6f\n", point.batch, point.context,
                               point.local_step_s * 1e3, point.prefetch_share, point.direct_share,
                               point.prefetch_landed_share, point.offload_share);
      }
  }
  if (!g_file_set_contents(csv_path, csv->str, (gssize) csv->len, &error))
    return fail(error);
  printf("\nresults in %s/frontier.csv\n", out_dir);
  if (!no_plot)
    plot_at_end(out_dir, FALSE, NULL);
  return 0;
}

/* describe experiment: every key of an experiment file, from the tables. */
static int describe_experiment(int argc, char **argv) {
  g_autoptr(GString) text = g_string_new(NULL);
  argv[0] = (char *) "ema-sim describe experiment";
  if (!parse_options("Print every key of experiment files (from the parameter tables): type, "
                     "default or required, range, and what it means.",
                     no_entries, &argc, &argv, ""))
    return EXIT_USAGE;
  if (argc != 1)
    return usage_error("describe experiment takes no arguments");
  g_string_append(
      text,
      "Experiment file keys (indented: the keys inside a map or inside each list item).\n"
      "Types: size in bytes with B, KB, MB, GB, KiB, MiB, GiB ... (2MiB); bandwidth in B/s\n"
      "(397GB/s); duration with ns, us, ms, s, min, h (6.5us); flops in FLOP/s (989TFLOP/s);\n"
      "fraction as 0.9 or 90%; int, number, bool, string; enum: one of the names listed.\n"
      "A map key with a name instead of a map (server: h200x8-hgx, model: llama-3.1-8b,\n"
      "policy: ema) loads that model or composition. Policy parameters: ema-sim\n"
      "describe-policy NAME. Sweep files add variants, sweep, repeats and plot (ema-sim\n"
      "sweep); an experiment with compare (a map of named variants, like a sweep's\n"
      "variants) runs them side by side (ema-sim run).\n"
      "\n"
      "\n");
  ema_params_describe(&ema_experiment_params, text, 0);
  ema_sweep_describe_keys(text);
  fputs(text->str, stdout);
  return 0;
}

/* describe_named's typed ends for engine profiles and LLM shapes */
static gpointer load_engine(const char *name, GError **error) {
  return ema_engine_profile_load(name, error);
}
static gpointer load_llm(const char *name, GError **error) {
  return ema_llm_load(name, error);
}
static void append_llm_derived_cb(GString *text, gconstpointer model) {
  append_llm_derived(text, model);
}

/* describe KIND NAME: the object LOAD gives for NAME (TABLE's, freed through it), every value
 * of it as TABLE writes it, then what DERIVED (if any) adds; describe KIND --keys: every key
 * of such a file (TABLE's: type, default, range, meaning), for a file of one's own. KIND names
 * it in the usage line, LIST is the command that lists the names. */
static int describe_named(int argc, char **argv, const char *kind, const char *summary,
                          const char *list, gpointer (*load)(const char *, GError **),
                          const EmaParamTable *table, void (*derived)(GString *, gconstpointer)) {
  g_autoptr(GString) text = g_string_new(NULL);
  g_autofree char *command = g_strconcat("ema-sim describe ", kind, NULL);
  gboolean keys = FALSE;
  GOptionEntry entries[] = {{"keys", 0, 0, G_OPTION_ARG_NONE, &keys,
                             "Every key of such a file instead (type, default or required, "
                             "range, meaning), for writing one",
                             NULL},
                            {NULL}};
  gpointer object;
  GError *error = NULL;
  argv[0] = command;
  if (!parse_options(summary, entries, &argc, &argv, "NAME | --keys"))
    return EXIT_USAGE;
  if (keys && argc == 1) {
    ema_params_describe(table, text, 0);
    fputs(text->str, stdout);
    return 0;
  }
  if (argc != 2 || keys) {
    g_autofree char *usage =
        g_strdup_printf("usage: ema-sim describe %s NAME (ema-sim list %s), or describe %s --keys",
                        kind, list, kind);
    return usage_error(usage);
  }
  if ((object = load(argv[1], &error)) == NULL)
    return fail(error);
  ema_params_write_yaml(table, object, text, 0);
  if (derived)
    derived(text, object);
  ema_params_free(table, object);
  fputs(text->str, stdout);
  return 0;
}

/* describe engine NAME: the profile, every value. */
static int describe_engine(int argc, char **argv) {
  return describe_named(argc, argv, "engine", "Print one engine profile with every value.",
                        "engines", load_engine, &ema_engine_profile_params, NULL);
}

/* describe llm NAME: the shape and what follows from it. */
static int describe_llm(int argc, char **argv) {
  return describe_named(argc, argv, "llm",
                        "Print one LLM shape with every value, and its derived sizes.", "llms",
                        load_llm, &ema_llm_params, append_llm_derived_cb);
}

/* step-time SERVER MODEL TP [FILE]: one line of time_us per batch line of
 * FILE or stdin (the columns of STEP_TIME_COLUMNS, a header line first),
 * for comparing the step model with measured steps (experiments/groundtruth). */
static int step_time_lines(FILE *in, const char *name, const EmaLlmSpec *model,
                           const EmaStepModel *step, gboolean breakdown);

static int command_step_time(int argc, char **argv) {
  GError *error = NULL;
  gboolean breakdown = FALSE;
  g_autofree char *weights = NULL, *kv_cache = NULL;
  GOptionEntry entries[] = {
      {"breakdown", 0, 0, G_OPTION_ARG_NONE, &breakdown,
       "Also print where each step's time goes: the layers, the LM head, the all-reduces, the "
       "step overhead, and the share timed from the profile's tables",
       NULL},
      {"weights", 0, 0, G_OPTION_ARG_STRING, &weights,
       "The decoder layers' weights as an experiment's model.weights: auto (the checkpoint's "
       "type), fp8 or fp8-block",
       "W"},
      {"kv-cache", 0, 0, G_OPTION_ARG_STRING, &kv_cache,
       "The KV cache as an experiment's model.kv_cache: auto or fp8", "K"},
      {NULL}};
  g_autoptr(EmaServerSpec) server = NULL;
  g_autoptr(EmaLlmSpec) model = NULL;
  g_autoptr(EmaStepModel) step = NULL;
  guint64 tp;
  FILE *in = stdin;
  int status;
  if (!parse_options("The step-time model's time of each batch line of FILE (stdin without FILE "
                     "or with -): the columns of a step log, a header line first.",
                     entries, &argc, &argv, "SERVER MODEL TP [FILE]"))
    return EXIT_USAGE;
  if ((argc != 4 && argc != 5) || !g_ascii_string_to_unsigned(argv[3], 10, 1, 1024, &tp, NULL))
    return usage_error("usage: ema-sim step-time SERVER MODEL TP [FILE] (TP from 1 to 1024)");
  server = ema_server_load(argv[1], &error);
  if (server == NULL)
    return fail(error);
  model = ema_llm_load(argv[2], &error);
  if (model == NULL || !ema_llm_set_precision(model, weights, kv_cache, &error))
    return fail(error);
  step = ema_step_model_new(model, server, (guint) tp, &error);
  if (step == NULL || !ema_tenant_model_fits(model, server, (guint) tp, &error))
    return fail(error);
  /* FILE "-" is stdin, as no FILE; anything but a regular file is refused, never waited on */
  if (argc == 5 && strcmp(argv[4], "-") != 0 &&
      (in = ema_file_open_regular(argv[4], &error)) == NULL)
    return fail(error);
  status = step_time_lines(in, in != stdin ? argv[4] : "stdin", model, step, breakdown);
  if (in != stdin)
    fclose(in);
  return status;
}

/* The next line of IN into LINE (SIZE bytes, NUL-terminated, without its newline): its length in
 * bytes (NUL bytes included), or -1 at the end of IN or on a read error. A line of SIZE bytes or
 * more is cut at SIZE - 1 with *TOO_LONG set. */
static gssize step_time_read_line(FILE *in, char *line, gsize size, gboolean *too_long) {
  gsize length = 0;
  int c;
  *too_long = FALSE;
  while ((c = getc(in)) != EOF && c != '\n') {
    if (length == size - 1) {
      *too_long = TRUE;
      break;
    }
    line[length++] = (char) c;
  }
  line[length] = '\0';
  return c == EOF && (length == 0 || ferror(in)) ? -1 : (gssize) length;
}

/* A step-time line's prefill chunks (VALUES, N of them): the seventh column's, else 1 with
 * prefill tokens and 0 without. */
static double step_time_chunks(const double *values, int n) {
  return n > 6 ? values[6] : values[0] > 0 ? 1 : 0;
}

/* A step-time line's sums (VALUES, from FIELDS; N of them) within MODEL's context: what a prefill
 * token attends to, the KV a prefill chunk reads (its prompt so far) and a decoding sequence's
 * context are each at most max_context tokens, and so is each sum's average over its count; one
 * past it is an error at its field (FALSE, printed). */
static gboolean step_time_context_ok(const char *name, guint64 line_no, const EmaCsvField *fields,
                                     const double *values, int n, const EmaLlmSpec *model) {
  static const struct {
    guint sum;
    const char *count, *per;
  } sums[] = {{1, "prefill_tokens", "attended per prefill token"},
              {2, STEP_TIME_CHUNKS_COLUMN, "read per prefill chunk"},
              {4, "decode_seqs", "per decoding sequence"}};
  g_auto(GStrv) columns = g_strsplit(STEP_TIME_COLUMNS, ",", -1);
  double counts[] = {values[0], step_time_chunks(values, n), values[3]};
  for (guint i = 0; i < G_N_ELEMENTS(sums); i++) {
    double mean = counts[i] > 0 ? values[sums[i].sum] / counts[i] : 0;
    if (mean <= (double) model->max_context)
      continue;
    fprintf(stderr,
            "%s:%" G_GUINT64_FORMAT ":%" G_GSIZE_FORMAT ": %s %s: %.15g tokens %s on average "
            "(%s %.15g), above %s's context of %" G_GINT64_FORMAT " tokens (its max_context)\n",
            name, line_no, fields[sums[i].sum].at + 1, columns[sums[i].sum], fields[sums[i].sum].p,
            mean, sums[i].per, sums[i].count, counts[i], model->name, model->max_context);
    return FALSE;
  }
  return TRUE;
}

/* A step-time line's sums (VALUES, from FIELDS; N of them, the seventh the prefill chunks),
 * each over the prefill tokens or decode sequences: 0 without any, else at least their count
 * (each token attends to itself); a sum the step model would ignore or clamp is an error at its
 * field (FALSE, printed). The prefill chunks (1 without the column) are 0 without prefill tokens,
 * else from 1 to their count, and the prefill sums must be of such chunks: one chunk of n tokens
 * after p cached ones reads p + n tokens' KV and its tokens attend to n p + n (n + 1) / 2 in all;
 * c chunks of n tokens reading R tokens' KV attend to at least n (n / c + 1) / 2 + R - n and at
 * most n R. */
static gboolean step_time_sums_ok(const char *name, guint64 line_no, const EmaCsvField *fields,
                                  const double *values, int n) {
  static const guint sums[][2] = {{1, 0}, {2, 0}, {4, 3}}; /* a sum's field, its count's */
  g_auto(GStrv) columns = g_strsplit(STEP_TIME_COLUMNS "," STEP_TIME_CHUNKS_COLUMN, ",", -1);
  double tokens = values[0], context = values[1], read = values[2];
  double chunks = step_time_chunks(values, n);
  for (guint i = 0; i < G_N_ELEMENTS(sums); i++) {
    guint sum = sums[i][0], count = sums[i][1];
    if (values[count] == 0 ? values[sum] == 0 : values[sum] >= values[count])
      continue;
    fprintf(stderr, "%s:%" G_GUINT64_FORMAT ":%" G_GSIZE_FORMAT ": %s %s ", name, line_no,
            fields[sum].at + 1, columns[sum], fields[sum].p);
    if (values[count] == 0)
      fprintf(stderr, "without %s (it sums over them: 0 when there are none)\n", columns[count]);
    else
      fprintf(stderr, "is below %s %s (each token attends to itself at least)\n", columns[count],
              fields[count].p);
    return FALSE;
  }
  if (n > 6 && (chunks != floor(chunks) || (tokens == 0) != (chunks == 0) || chunks > tokens)) {
    fprintf(stderr,
            "%s:%" G_GUINT64_FORMAT ":%" G_GSIZE_FORMAT ": %s %s: a whole number, 0 without "
            "prefill_tokens, else from 1 to prefill_tokens %s\n",
            name, line_no, fields[6].at + 1, columns[6], fields[6].p, fields[0].p);
    return FALSE;
  }
  if (chunks == 1) {
    double cached = read - tokens, want = tokens * cached + tokens * (tokens + 1) / 2;
    if (fabs(context - want) > 1e-9 * want + 0.5) {
      fprintf(stderr,
              "%s:%" G_GUINT64_FORMAT ":%" G_GSIZE_FORMAT ": prefill_context %s is not what one "
              "chunk of %s tokens after %.15g cached ones attends to (%.15g; several prompts or "
              "chunks: give their count in a %s column)\n",
              name, line_no, fields[1].at + 1, fields[1].p, fields[0].p, cached, want, columns[6]);
      return FALSE;
    }
  } else if (chunks > 1) {
    /* least: equal fresh chunks, every cached token read by a chunk of one token; most: every
     * token attending to all the KV read */
    double least = tokens * (tokens / chunks + 1) / 2 + (read - tokens), most = tokens * read;
    if (context < least * (1 - 1e-9) - 0.5 || context > most * (1 + 1e-9) + 0.5) {
      fprintf(stderr,
              "%s:%" G_GUINT64_FORMAT ":%" G_GSIZE_FORMAT ": prefill_context %s is outside what "
              "%s chunks of %s tokens reading %s tokens' KV attend to (%.15g to %.15g)\n",
              name, line_no, fields[1].at + 1, fields[1].p, fields[6].p, fields[0].p, fields[2].p,
              least, most);
      return FALSE;
    }
  }
  return TRUE;
}

static int step_time_lines(FILE *in, const char *name, const EmaLlmSpec *model,
                           const EmaStepModel *step, gboolean breakdown) {
  static const guint counts[] = {0, 3, 5}; /* prefill_tokens, decode_seqs, logits */
  g_auto(GStrv) column_names = g_strsplit(STEP_TIME_COLUMNS "," STEP_TIME_CHUNKS_COLUMN, ",", -1);
  char buffer[1024];
  char *line;
  gssize length;
  gboolean too_long;
  guint64 line_no = 0;
  int columns = 6; /* the header's: 6, or 7 with prefill_chunks */
  while ((length = step_time_read_line(in, buffer, sizeof buffer, &too_long)) >= 0) {
    EmaStepBatch batch = {0};
    EmaStepBreakdown parts;
    EmaTime time;
    EmaCsvField fields[EMA_CSV_MAX_FIELDS];
    const char *problem = NULL;
    const char *nul;
    gsize at = 0;
    double values[7];
    int n;
    line = buffer;
    line_no++;
    /* a spreadsheet's UTF-8 byte-order mark before the header: skipped, columns counted after it */
    if (line_no == 1) {
      gsize bom = ema_file_bom_length(line, (gsize) length);
      line += bom;
      length -= (gssize) bom;
    }
    if ((nul = memchr(line, '\0', (gsize) length)) != NULL) {
      fprintf(stderr, "%s:%" G_GUINT64_FORMAT ":%" G_GSIZE_FORMAT ": a NUL byte\n", name, line_no,
              (gsize) (nul - line) + 1);
      return 1;
    }
    if (too_long) {
      fprintf(stderr, "%s:%" G_GUINT64_FORMAT ":1: the line is longer than %zu characters\n", name,
              line_no, sizeof buffer - 1);
      return 1;
    }
    g_strchomp(line);
    if (line_no > 1 && *line == '\0') {
      fprintf(stderr,
              "%s:%" G_GUINT64_FORMAT ":1: an empty line (every line after the header is a "
              "step)\n",
              name, line_no);
      return 1;
    }
    if (line_no == 1) {
      if (strcmp(line, STEP_TIME_COLUMNS) == 0)
        columns = 6;
      else if (strcmp(line, STEP_TIME_COLUMNS "," STEP_TIME_CHUNKS_COLUMN) == 0)
        columns = 7;
      else {
        fprintf(stderr, "%s:1:1: the header must be %s[,%s]\n", name, STEP_TIME_COLUMNS,
                STEP_TIME_CHUNKS_COLUMN);
        return 1;
      }
      /* the output's header once the input's is known good */
      puts(breakdown
               ? "time_us,layers_us,lm_head_us,allreduce_us,overhead_us,profiled_us,roofline_us"
               : "time_us");
      continue;
    }
    n = ema_csv_split(line, strlen(line), fields, &problem, &at);
    if (n < 0) {
      fprintf(stderr, "%s:%" G_GUINT64_FORMAT ":%" G_GSIZE_FORMAT ": %s\n", name, line_no, at + 1,
              problem);
      return 1;
    }
    if (n != columns) {
      fprintf(stderr, "%s:%" G_GUINT64_FORMAT ":1: expected %d fields, not %d\n", name, line_no,
              columns, n);
      return 1;
    }
    for (int i = 0; i < n; i++) {
      char *end;
      /* decimal only (ema_csv_parse_decimal): strtod's hex ("0x10"), "inf" and leading blanks
       * are no step log's */
      values[i] = ema_csv_parse_decimal(fields[i].p, &end);
      if (*fields[i].p == '\0' || *end != '\0' || !(values[i] >= 0) || values[i] > 1e15) {
        g_autofree char *quoted = ema_file_quote_cut(fields[i].p, -1);
        if (values[i] > 1e15 && *end == '\0')
          fprintf(stderr,
                  "%s:%" G_GUINT64_FORMAT ":%" G_GSIZE_FORMAT
                  ": %s: %s is above 10^15, more than any step holds\n",
                  name, line_no, fields[i].at + 1, column_names[i], quoted);
        else
          fprintf(stderr,
                  "%s:%" G_GUINT64_FORMAT ":%" G_GSIZE_FORMAT ": %s: not a number >= 0: '%s'\n",
                  name, line_no, fields[i].at + 1, column_names[i], quoted);
        return 1;
      }
    }
    /* the counts (the chunks: step_time_sums_ok) are whole: the model would truncate them */
    for (guint i = 0; i < G_N_ELEMENTS(counts); i++)
      if (values[counts[i]] != floor(values[counts[i]])) {
        fprintf(stderr,
                "%s:%" G_GUINT64_FORMAT ":%" G_GSIZE_FORMAT ": %s %s: a count, a whole number\n",
                name, line_no, fields[counts[i]].at + 1, column_names[counts[i]],
                fields[counts[i]].p);
        return 1;
      }
    if (!step_time_sums_ok(name, line_no, fields, values, n) ||
        !step_time_context_ok(name, line_no, fields, values, n, model))
      return 1;
    batch.prefill_tokens = (guint64) values[0];
    batch.prefill_context = values[1];
    batch.prefill_kv_read = values[2];
    batch.decode_seqs = (guint64) values[3];
    batch.decode_context = values[4];
    batch.logits = (guint64) values[5];
    batch.prefill_chunks = n > 6 ? (guint64) values[6] : 0; /* 0: one chunk (steptime.h) */
    if (batch.logits > batch.prefill_tokens + batch.decode_seqs) {
      fprintf(stderr,
              "%s:%" G_GUINT64_FORMAT ":%" G_GSIZE_FORMAT ": logits %s: more than the tokens, "
              "prefill_tokens %s and decode_seqs %s\n",
              name, line_no, fields[5].at + 1, fields[5].p, fields[0].p, fields[3].p);
      return 1;
    }
    time = ema_step_time(step, &batch, &parts);
    if (time == EMA_TIME_NEVER) {
      fprintf(stderr,
              "%s:%" G_GUINT64_FORMAT ": the step takes longer than the simulator's clock "
              "counts (2^63 ns, about 292 years)\n",
              name, line_no);
      return 1;
    }
    if (breakdown)
      printf("%.3f,%.3f,%.3f,%.3f,%.3f,%.3f,%.3f\n", (double) time / 1e3, parts.layers_s * 1e6,
             parts.lm_head_s * 1e6, parts.allreduce_s * 1e6, parts.overhead_s * 1e6,
             parts.profiled_s * 1e6, parts.roofline_s * 1e6);
    else
      printf("%.3f\n", (double) time / 1e3);
  }
  if (ferror(in)) {
    fprintf(stderr, "%s: %s\n", name, g_strerror(errno));
    return 1;
  }
  if (line_no == 0) {
    fprintf(stderr, "%s:1:1: empty: the header must be %s[,%s]\n", name, STEP_TIME_COLUMNS,
            STEP_TIME_CHUNKS_COLUMN);
    return 1;
  }
  return 0;
}

/* OUTPUT (-o FILE, may be NULL) a file the table may replace (ema_file_output_ok: no directory,
 * device, FIFO or link), no output folder's own (ema_output_file_free) and not the table INPUT
 * that the command reads; else a usage error (printed), before any work. */
static gboolean output_file_ok(const char *output, const char *input) {
  g_autofree char *message = NULL;
  g_autoptr(GError) error = NULL;
  if (!output)
    return TRUE;
  if (!ema_file_output_ok(output, "the table", &error))
    message = g_strdup_printf("-o: %s", error->message);
  else if (!ema_output_file_free(output, "-o", &error))
    message = g_strdup(error->message);
  else if (input && ema_file_same(output, input))
    message =
        g_strdup_printf("-o: '%s' is the table this command reads: give another file", output);
  else
    return TRUE;
  usage_error(message);
  return FALSE;
}

/* Write TABLE to OUTPUT (NULL: stdout); the summary lines follow on stdout. */
static int write_table(const GString *table, const char *output) {
  GError *error = NULL;
  if (!output) {
    fputs(table->str, stdout);
    return 0;
  }
  if (!g_file_set_contents(output, table->str, (gssize) table->len, &error))
    return fail(error);
  return 0;
}

static int command_compare_steps(int argc, char **argv) {
  g_autofree char *server = NULL;
  g_autofree char *output = NULL;
  g_autoptr(GString) table = g_string_new(NULL);
  g_autofree char *summary = NULL;
  gboolean by_model = FALSE;
  EmaStepCheckStats stats;
  GError *error = NULL;
  GOptionEntry entries[] = {
      {"server", 0, 0, G_OPTION_ARG_STRING, &server, "Server model (default h200x8-hgx)", "NAME"},
      {"output", 'o', 0, G_OPTION_ARG_FILENAME, &output, "Write the table to FILE", "FILE"},
      {"summary", 0, 0, G_OPTION_ARG_NONE, &by_model,
       "The table is markdown: median and worst error per model and phase", NULL},
      {NULL}};
  if (!parse_options("Captured steps against the step-time model.", entries, &argc, &argv,
                     "STEPS.csv"))
    return EXIT_USAGE;
  if (argc != 2)
    return usage_error(
        "usage: ema-sim compare-steps STEPS.csv [--server NAME] [--summary] [-o FILE]");
  if (!output_file_ok(output, argv[1]))
    return EXIT_USAGE;
  if (!(by_model ? ema_stepcheck_steps_summary : ema_stepcheck_steps)(
          argv[1], server ? server : "h200x8-hgx", table, &stats, &error))
    return fail(error);
  if (write_table(table, output) != 0)
    return 1;
  summary = ema_stepcheck_stats_format(&stats);
  printf("steps on %s: %s\n", server ? server : "h200x8-hgx", summary);
  return 0;
}

static int command_compare_static(int argc, char **argv) {
  g_autofree char *output = NULL;
  g_autofree char *points_text = NULL;
  g_autofree char *path = NULL;
  g_autofree char *engine_name = NULL;
  g_autofree char *server = NULL;
  g_autofree char *skipped = NULL;
  g_autoptr(EmaEngineProfile) engine = NULL;
  g_autoptr(GString) table = g_string_new(NULL);
  g_autoptr(GPtrArray) groups = ema_static_groups_new();
  guint64 points = 0;
  gboolean enforce_eager = FALSE;
  GError *error = NULL;
  EmaStaticCheckOptions options = {0};
  GOptionEntry entries[] = {
      {"points", 0, 0, G_OPTION_ARG_STRING, &points_text, "Keep the first N points", "N"},
      {"output", 'o', 0, G_OPTION_ARG_FILENAME, &output, "Write the table to FILE", "FILE"},
      {"server", 0, 0, G_OPTION_ARG_STRING, &server,
       "Time every row on this server (default: by the hardware column: a100-80gb, h100-80gb, "
       "a100-40gb or a server name)",
       "NAME"},
      {"engine", 0, 0, G_OPTION_ARG_STRING, &engine_name,
       "Time each step as this engine profile's host runs it (its CPU costs, its eager launch "
       "floor) rather than the GPU's time alone",
       "PROFILE"},
      {"enforce-eager", 0, 0, G_OPTION_ARG_NONE, &enforce_eager,
       "With --engine: every step eager, no CUDA graphs (vLLM's --enforce-eager)", NULL},
      {NULL}};
  if (!parse_options("Static-batch times (splitwise-perf's format) against the step-time model.",
                     entries, &argc, &argv, "[PERF.csv]"))
    return EXIT_USAGE;
  if (argc > 2)
    return usage_error("usage: ema-sim compare-static [PERF.csv] [--points N] [--server NAME] "
                       "[--engine PROFILE [--enforce-eager]] [-o FILE]");
  if (enforce_eager && !engine_name)
    return usage_error("--enforce-eager: give the engine profile (--engine PROFILE)");
  if (argc == 2) {
    path = g_strdup(argv[1]);
  } else {
    g_autofree char *shared = ema_profile_shared_dir();
    path = g_build_filename(shared, "groundtruth", "splitwise-perf", "perf_model.csv", NULL);
  }
  if (!output_file_ok(output, path))
    return EXIT_USAGE;
  if (engine_name && !(engine = ema_engine_profile_load(engine_name, &error)))
    return fail(error);
  if (points_text && (!g_ascii_string_to_unsigned(points_text, 10, 1, G_MAXUINT, &points, NULL)))
    return usage_error("--points: give a positive integer");
  options = (EmaStaticCheckOptions){(guint) points, server, engine, enforce_eager};
  if (!ema_stepcheck_static(path, &options, table, groups, &skipped, &error))
    return fail(error);
  if (write_table(table, output) != 0)
    return 1;
  for (guint i = 0; i < groups->len; i++) {
    const EmaStaticGroup *g = groups->pdata[i];
    g_autofree char *summary = ema_stepcheck_stats_format(&g->stats);
    printf("%s: %s\n", g->name, summary);
  }
  if (skipped)
    printf("%s\n", skipped);
  return 0;
}

/* The index in ARGV (ARGC, ARGV[0] `describe`) of `describe`'s subject (hwmodel, llm, engine,
 * experiment, policy), 0 without one: the first argument that is neither an option nor
 * --plugin-dir's value (the only option of a describe that takes one). */
static int describe_subject(int argc, char **argv) {
  for (int i = 1; i < argc; i++) {
    if (strcmp(argv[i], "--plugin-dir") == 0) {
      i++;
      continue;
    }
    if (argv[i][0] != '-')
      return i;
  }
  return 0;
}

/* `describe`'s subject moved to ARGV[1] where options come before it (`describe --plugin-dir
 * DIR policy NAME`). */
static void describe_subject_first(int argc, char **argv) {
  int i = describe_subject(argc, argv);
  char *subject = argv[i];
  if (i == 0)
    return;
  memmove(&argv[2], &argv[1], (gsize) (i - 1) * sizeof *argv);
  argv[1] = subject;
}

static int command_describe(int argc, char **argv) {
  GError *error = NULL;
  g_autoptr(EmaServerSpec) server = NULL;
  g_autoptr(GString) text = g_string_new(NULL);
  g_autofree char *hbm = NULL;
  describe_subject_first(argc, argv);
  if (argc >= 2 && strcmp(argv[1], "policy") == 0) {
    /* `describe policy NAME` is `describe-policy NAME` */
    argv[1] = (char *) "ema-sim describe policy";
    return command_describe_policy(argc - 1, argv + 1);
  }
  if (argc >= 2 && (strcmp(argv[1], "--help") == 0 || strcmp(argv[1], "-h") == 0)) {
    fputs("Usage:\n  ema-sim describe hwmodel NAME | llm NAME | engine NAME | experiment | policy "
          "NAME\n  ema-sim describe llm --keys | engine --keys\n\n"
          "Print one server model, one LLM shape, one engine profile, every key of experiment\n"
          "files, or one policy or composition (also: ema-sim describe-policy NAME); with --keys,\n"
          "every key of an LLM shape's or an engine profile's file. Each answers --help.\n\n"
          "Options:\n"
          "  --keys             with llm or engine: every key of such a file, for writing one\n"
          "  --plugin-dir DIR   with policy: load the policy modules in DIR (repeatable)\n",
          stdout);
    return 0;
  }
  if (argc >= 2 && strcmp(argv[1], "experiment") == 0)
    return describe_experiment(argc - 1, argv + 1);
  if (argc >= 2 && strcmp(argv[1], "llm") == 0)
    return describe_llm(argc - 1, argv + 1);
  if (argc >= 2 && strcmp(argv[1], "engine") == 0)
    return describe_engine(argc - 1, argv + 1);
  if (argc < 2 || strcmp(argv[1], "hwmodel") != 0)
    return usage_error("usage: ema-sim describe hwmodel|llm|engine NAME, describe experiment, or "
                       "describe policy NAME");
  argc--;
  argv++;
  argv[0] = (char *) "ema-sim describe hwmodel";
  if (!parse_options("Print one server model with every value, and a derived line.", no_entries,
                     &argc, &argv, "NAME"))
    return EXIT_USAGE;
  if (argc != 2)
    return usage_error("usage: ema-sim describe hwmodel NAME (ema-sim list hwmodels)");
  server = ema_server_load(argv[1], &error);
  if (server == NULL)
    return fail(error);
  ema_params_write_yaml(&ema_server_params, server, text, 0);
  hbm = ema_units_format_size_human(ema_gpu_hbm_bytes(&server->gpu) * (guint64) server->gpus);
  if (server->link.bandwidth > 0)
    g_string_append_printf(text,
                           "# derived: total HBM %s; a peer link streams %.1f%% of local HBM "
                           "bandwidth (%.1fx slower)\n",
                           hbm, 100 * server->link.bandwidth / server->gpu.hbm_bandwidth,
                           server->gpu.hbm_bandwidth / server->link.bandwidth);
  else
    g_string_append_printf(text, "# derived: total HBM %s; no peer link (one GPU)\n", hbm);
  if (server->gpu.profile && *server->gpu.profile) {
    const EmaProfile *profile = ema_profile_get(server->gpu.profile, &error);
    if (!profile || !ema_profile_read_all(profile, &error))
      return fail(error);
    g_string_append(text, "# step time: the operators this profile holds; the per-operator "
                          "roofline (gpu.roofline_p) for the rest\n");
    ema_profile_describe(profile, text);
  } else {
    g_string_append(text, "# step time: the per-operator roofline (gpu.roofline_p); no profile\n");
  }
  fputs(text->str, stdout);
  return 0;
}

static void describe_origin(GString *text, const char *origin) {
  if (strcmp(origin, "built-in") == 0)
    g_string_append(text, " (built-in)\n");
  else
    g_string_append_printf(text, " (from %s)\n", origin);
}

/* "unknown policy 'NAME' (borrow: a, b; prefetch: c; reclaim: d;
 * compositions: e)" */
static GError *unknown_policy_error(const char *name) {
  g_autoptr(GString) known = g_string_new(NULL);
  g_autoptr(GPtrArray) compositions = ema_policy_registry_list_compositions();
  for (EmaPolicyKind kind = EMA_POLICY_BORROW; kind <= EMA_POLICY_RECLAIM; kind++) {
    g_autoptr(GPtrArray) infos = ema_policy_registry_list(kind);
    g_string_append_printf(known, "%s: ", ema_policy_kind_name(kind));
    for (guint i = 0; i < infos->len; i++)
      g_string_append_printf(known, "%s%s", i ? ", " : "",
                             ((const EmaPolicyInfo *) infos->pdata[i])->name);
    g_string_append(known, "; ");
  }
  g_string_append(known, "compositions: ");
  for (guint i = 0; i < compositions->len; i++)
    g_string_append_printf(known, "%s%s", i ? ", " : "",
                           ((const EmaPolicyComposition *) compositions->pdata[i])->name);
  g_autofree char *quoted = ema_file_quote_cut(name, -1);
  return g_error_new(EMA_POLICY_ERROR, EMA_POLICY_ERROR_UNKNOWN, "unknown policy '%s' (%s)", quoted,
                     known->str);
}

/* Every policy and composition called NAME: a composition first, then one
 * policy per kind that has one, separated by blank lines. */
/* try-policy KIND NAME VIEW.yaml: one decision against a hand-made view. */
static int command_try_policy(int argc, char **argv) {
  g_auto(GStrv) plugin_dirs = NULL;
  g_autofree char *gpu_text = NULL, *needed_text = NULL;
  guint64 gpu = 0, needed = 0;
  GError *error = NULL;
  EmaPolicyKind kind;
  GOptionEntry entries[] = {
      PLUGIN_DIR_ENTRY(plugin_dirs),
      {"gpu", 0, 0, G_OPTION_ARG_STRING, &gpu_text, "The GPU decided for (default 0)", "N"},
      {"needed", 0, 0, G_OPTION_ARG_STRING, &needed_text,
       "reclaim: the slices the lender lacks (default 0: a proactive call)", "N"},
      {NULL}};
  gboolean parsed = parse_options("Call a policy once on a pool view written by hand (a YAML "
                                  "file: sim/include/ema/cli/trypolicy.h), print its plan and "
                                  "its debug lines.",
                                  entries, &argc, &argv, "borrow|prefetch|reclaim NAME VIEW.yaml");
  if (parsed && argc != 4)
    return usage_error("usage: ema-sim try-policy borrow|prefetch|reclaim NAME VIEW.yaml "
                       "[--gpu N] [--needed N]");
  if (!parsed)
    return EXIT_USAGE;
  if (strcmp(argv[1], "borrow") == 0)
    kind = EMA_POLICY_BORROW;
  else if (strcmp(argv[1], "prefetch") == 0)
    kind = EMA_POLICY_PREFETCH;
  else if (strcmp(argv[1], "reclaim") == 0)
    kind = EMA_POLICY_RECLAIM;
  else
    return usage_error("try-policy: the kind is borrow, prefetch or reclaim");
  if ((gpu_text && !g_ascii_string_to_unsigned(gpu_text, 10, 0, 1023, &gpu, NULL)) ||
      (needed_text && !g_ascii_string_to_unsigned(needed_text, 10, 0, G_MAXINT64, &needed, NULL)))
    return usage_error("--gpu and --needed take a non-negative integer");
  if (needed_text && kind != EMA_POLICY_RECLAIM) {
    g_autofree char *message =
        g_strdup_printf("try-policy: --needed (the slices the lender lacks) is read by reclaim "
                        "policies only, not by a %s policy",
                        argv[1]);
    return usage_error(message);
  }
  if (!load_plugins(plugin_dirs, &error) ||
      !ema_trypolicy_run(kind, argv[2], argv[3], (guint) gpu, needed, stdout, &error))
    return fail(error);
  return 0;
}

static int command_describe_policy(int argc, char **argv) {
  g_auto(GStrv) plugin_dirs = NULL;
  g_autoptr(GString) text = g_string_new(NULL);
  GError *error = NULL;
  GOptionEntry entries[] = {PLUGIN_DIR_ENTRY(plugin_dirs), {NULL}};
  const EmaPolicyComposition *composition;
  const char *name;

  if (!parse_options("Describe a policy or a named composition.", entries, &argc, &argv, "NAME"))
    return EXIT_USAGE;
  if (argc != 2)
    return usage_error("usage: ema-sim describe-policy NAME");
  if (!load_plugins(plugin_dirs, &error))
    return fail(error);
  name = argv[1];

  composition = ema_policy_registry_find_composition(name, NULL);
  if (composition) {
    g_auto(GStrv) lines = g_strsplit(composition->yaml, "\n", -1);
    g_string_append_printf(text, "%s: composition", composition->name);
    describe_origin(text, "built-in");
    g_string_append_printf(text, "  %s\n", composition->summary);
    if (g_strv_length(lines) == 1)
      g_string_append_printf(text, "  policy: %s\n", composition->yaml);
    else {
      g_string_append(text, "  policy:\n");
      for (guint i = 0; lines[i]; i++)
        if (*lines[i])
          g_string_append_printf(text, "    %s\n", lines[i]);
    }
  }
  for (EmaPolicyKind kind = EMA_POLICY_BORROW; kind <= EMA_POLICY_RECLAIM; kind++) {
    const EmaPolicyInfo *info = ema_policy_registry_find(kind, name, NULL);
    if (info == NULL)
      continue;
    if (text->len)
      g_string_append(text, "\n");
    g_string_append_printf(text, "%s: %s policy", info->name, ema_policy_kind_name(kind));
    describe_origin(text, info->origin);
    g_string_append_printf(text, "  %s\n", info->summary);
    if (info->params && info->params->n_params > 0) {
      g_string_append(text, "  parameters:\n");
      ema_params_describe(info->params, text, 4);
    } else
      g_string_append(text, "  parameters: none\n");
  }
  if (text->len == 0)
    return fail(unknown_policy_error(name));
  fputs(text->str, stdout);
  return 0;
}

/* ---- figures, sweeps ------------------------------------------------------ */

/* The figure names of FIGURES ("memory.png", "memory.svg", ...) once each,
 * without their extension: "memory, remote". */
static char *figure_names(GPtrArray *figures) {
  g_autoptr(GString) names = g_string_new(NULL);
  for (guint i = 0; i < figures->len; i++) {
    const char *figure = figures->pdata[i];
    const char *dot = strrchr(figure, '.');
    g_autofree char *name = g_strndup(figure, dot ? (gsize) (dot - figure) : strlen(figure));
    g_autofree char *listed = g_strconcat(", ", names->str, ", ", NULL);
    g_autofree char *needle = g_strconcat(", ", name, ", ", NULL);
    if (strstr(listed, needle) == NULL)
      g_string_append_printf(names, "%s%s", names->len ? ", " : "", name);
  }
  return g_string_free(g_steal_pointer(&names), FALSE);
}

/* The figures of a finished run or sweep in DIR/plots/. Never a failure of
 * the command: without gnuplot it says so once (for run only on a
 * terminal, like the progress line), and a figure that cannot be drawn is
 * a warning. */
/* TITLE: the figures' title (NULL: the run's name) */
static void plot_at_end(const char *dir, gboolean quiet_without_gnuplot, const char *title) {
  EmaPlotOptions options = {.title = title};
  g_autofree char *gnuplot = ema_plot_find_gnuplot();
  g_autoptr(GPtrArray) figures = g_ptr_array_new_with_free_func(g_free);
  GError *error = NULL;
  if (gnuplot == NULL) {
    g_autofree char *why = ema_plot_gnuplot_missing();
    if (!quiet_without_gnuplot || isatty(STDERR_FILENO))
      fprintf(stderr, "ema-sim: %s: no figures (install gnuplot-nox, then ema-sim plot DIR)\n",
              why);
    return;
  }
  if (!ema_plot_dir(dir, gnuplot, &options, figures, &error)) {
    fprintf(stderr, "ema-sim: no figures: %s\n", error->message);
    g_error_free(error);
    return;
  }
  if (!quiet_without_gnuplot || isatty(STDOUT_FILENO)) {
    g_autofree char *names = figure_names(figures);
    printf("figures in %s/plots/ (%s; PNG and SVG)\n", dir, names);
  }
}

static void plot_after_run(const char *dir, const char *title) {
  plot_at_end(dir, TRUE, title);
}

/* plot DIR [--x PATH] [--by COLUMN] [--tenant NAME] [--title T] [--xlabel T] */
static int command_plot(int argc, char **argv) {
  g_autofree char *x = NULL, *by = NULL, *tenant = NULL, *title = NULL, *xlabel = NULL;
  gboolean paper = FALSE;
  g_autofree char *gnuplot = NULL;
  g_auto(GStrv) variants = NULL;
  g_autofree EmaPlotFolder *folders = NULL;
  g_autoptr(GPtrArray) strings = g_ptr_array_new_with_free_func(g_free); /* folders' */
  g_autoptr(GPtrArray) figures =
      g_ptr_array_new_with_free_func((GDestroyNotify) g_ptr_array_unref); /* each folder's */
  guint n;
  GError *error = NULL;
  GOptionEntry entries[] = {
      {"x", 0, 0, G_OPTION_ARG_STRING, &x,
       "Sweep: the column on the x axis (default: the first swept number)", "PATH"},
      {"by", 0, 0, G_OPTION_ARG_STRING, &by,
       "Sweep: the column that makes the lines (default: variant or a policy path; none: one)",
       "COLUMN"},
      {"tenant", 0, 0, G_OPTION_ARG_STRING, &tenant,
       "Sweep: whose throughput and latency (default: the only tenant, or all); a run: the "
       "tenants drawn (NAME or NAME,NAME,...; default all)",
       "NAME"},
      {"title", 0, 0, G_OPTION_ARG_STRING, &title, "Title of the figures", "TEXT"},
      {"xlabel", 0, 0, G_OPTION_ARG_STRING, &xlabel, "Sweep: label of the x axis", "TEXT"},
      {"paper", 0, 0, G_OPTION_ARG_NONE, &paper,
       "Paper preset: a column wide (3.4 in), 7 pt type, PDF and SVG", NULL},
      {NULL}};
  if (!parse_options("Draw the figures of a run or sweep directory with gnuplot (PNG and SVG in "
                     "DIR/plots/).",
                     entries, &argc, &argv, "DIR"))
    return EXIT_USAGE;
  if (argc != 2)
    return usage_error(argc < 2 ? "missing DIR (a run's or a sweep's output)"
                                : "too many arguments");
  gnuplot = ema_plot_find_gnuplot();
  if (gnuplot == NULL) {
    g_autofree char *why = ema_plot_gnuplot_missing();
    fprintf(stderr, "ema-sim plot: %s (install gnuplot-nox)\n", why);
    return 1;
  }
  /* a comparison's variants too, each in its folder, as ema-sim run draws them; no folder's
   * plots/ changes unless every folder's figures are drawn */
  variants = ema_plot_compare_variant_dirs(argv[1]);
  n = g_strv_length(variants) + 1;
  folders = g_new0(EmaPlotFolder, n);
  for (guint i = 0; i < n; i++)
    g_ptr_array_add(figures, g_ptr_array_new_with_free_func(g_free));
  folders[0] = (EmaPlotFolder){argv[1], {x, by, tenant, title, xlabel, paper}, figures->pdata[0]};
  for (guint i = 1; i < n; i++) {
    char *sub = g_build_filename(argv[1], variants[i - 1], NULL);
    /* titled as ema-sim run titles them unless a title is given */
    char *each_title = title ? g_strdup(title) : ema_plot_variant_title(argv[1], variants[i - 1]);
    g_ptr_array_add(strings, sub);
    g_ptr_array_add(strings, each_title);
    folders[i] =
        (EmaPlotFolder){sub, {NULL, NULL, tenant, each_title, NULL, paper}, figures->pdata[i]};
  }
  if (!ema_plot_dirs(folders, n, gnuplot, &error))
    return fail(error);
  for (guint i = 0; i < n; i++) {
    g_autofree char *names = figure_names(folders[i].figures);
    if (i == 0)
      printf("figures in %s/plots/ (%s; %s and SVG)\n", argv[1], names, paper ? "PDF" : "PNG");
    else
      printf("figures in %s/plots/ (%s)\n", folders[i].dir, names);
  }
  return 0;
}

/* The path of this program, to run the points with. */
static char *self_program(void) {
  char *path = g_file_read_link("/proc/self/exe", NULL);
  if (path == NULL)
    path = g_find_program_in_path("ema-sim");
  return path ? path : g_strdup("ema-sim");
}

/* Counts of a sweep's records; the exit status (0: every point ok). */
static int sweep_report(GPtrArray *records, const char *out_dir) {
  guint counts[EMA_SWEEP_NOT_RUN + 1] = {0}, resumed = 0;
  for (guint i = 0; i < records->len; i++) {
    const EmaSweepRecord *record = records->pdata[i];
    counts[record->status]++;
    resumed += record->resumed;
  }
  printf("%u points: %u ok", records->len, counts[EMA_SWEEP_OK]);
  if (resumed)
    printf(" (%u found done)", resumed);
  if (counts[EMA_SWEEP_MISSED])
    printf(", %u missed an expectation", counts[EMA_SWEEP_MISSED]);
  printf(", %u failed", counts[EMA_SWEEP_FAILED]);
  if (counts[EMA_SWEEP_NOT_RUN])
    printf(", %u not run (--fail-fast)", counts[EMA_SWEEP_NOT_RUN]);
  printf("\n");
  return counts[EMA_SWEEP_OK] == records->len ? 0 : 1;
}

/* --part R/K: R and K, 0 <= R < K; FALSE if TEXT is not that. */
static gboolean parse_part(const char *text, guint *rank, guint *ranks) {
  g_auto(GStrv) parts = g_strsplit(text, "/", -1);
  guint64 r, k;
  if (g_strv_length(parts) != 2 ||
      !g_ascii_string_to_unsigned(parts[1], 10, 1, 1000000, &k, NULL) ||
      !g_ascii_string_to_unsigned(parts[0], 10, 0, k - 1, &r, NULL))
    return FALSE;
  *rank = (guint) r;
  *ranks = (guint) k;
  return TRUE;
}

/* sweep FILE [-o DIR] [-j N] [--fail-fast] [--list] [--part R/K] [--set k=v]...
 * [--no-plot]: every point of a sweep file; over MPI ranks when mpirun
 * started it; only a share of them with --part (a job array's task). */
/* --timeout TEXT into *SECONDS: whole seconds, or a duration with its unit (rounded up to a
 * second), at most a year; 0 is no limit. FALSE where TEXT is neither. */
static gboolean parse_timeout(const char *text, guint *seconds) {
  const gint64 year_s = 365 * 24 * 3600;
  gint64 value;
  if (ema_units_parse_int(text, &value, NULL)) {
    if (value < 0 || value > year_s)
      return FALSE;
    *seconds = (guint) value;
    return TRUE;
  }
  if (!ema_units_parse_duration(text, &value, NULL) || value > year_s * EMA_S(1))
    return FALSE;
  *seconds = (guint) ((value + EMA_S(1) - 1) / EMA_S(1));
  return TRUE;
}

/* " OPTION WORD" onto COMMAND, WORD quoted for a shell. */
static void append_word(GString *command, const char *option, const char *word) {
  g_autofree char *quoted = ema_shell_word(word);
  g_string_append_printf(command, " %s %s", option, quoted);
}

/* The command that gathers a --part sweep's parts into sweep.csv: FILE into DIR with the part's
 * own --set OVERRIDES and plugin folders (before and after the command), each argument quoted
 * for a shell. Without them the gathering run's points would be another sweep's, which it
 * would run again. */
static char *sweep_gather_command(const char *file, const char *dir, char **overrides,
                                  char **plugin_dirs) {
  GString *command = g_string_new("ema-sim sweep");
  g_autofree char *quoted_file = ema_shell_word(file);
  g_string_append_printf(command, " %s", quoted_file);
  append_word(command, "-o", dir);
  for (guint i = 0; i < global_plugin_dirs->len; i++)
    append_word(command, "--plugin-dir", global_plugin_dirs->pdata[i]);
  for (guint i = 0; plugin_dirs && plugin_dirs[i]; i++)
    append_word(command, "--plugin-dir", plugin_dirs[i]);
  for (guint i = 0; overrides && overrides[i]; i++)
    append_word(command, "--set", overrides[i]);
  return g_string_free(command, FALSE);
}

static int command_sweep(int argc, char **argv) {
  g_autofree char *out_dir = NULL;
  g_autofree char *part = NULL;
  g_autofree char *program = NULL;
  g_auto(GStrv) overrides = NULL;
  g_auto(GStrv) plugin_dirs = NULL;
  g_autofree char *jobs_text = NULL; /* not given: one per CPU */
  guint64 jobs = 0;
  g_autofree char *timeout_text = NULL;
  guint timeout_s = 0;
  gboolean fail_fast = FALSE, list = FALSE, no_plot = FALSE, reuse = FALSE;
  g_autoptr(EmaSweep) sweep = NULL;
  g_autoptr(GPtrArray) records = NULL;
  g_autoptr(GPtrArray) program_args = g_ptr_array_new_with_free_func(g_free);
  g_autoptr(GPtrArray) said = NULL; /* the experiment warnings printed before the run */
  EmaSweepRunOptions options = {0};
  GError *error = NULL;
  guint rank = 0, ranks = 1;
  int status = 0;
  GOptionEntry entries[] = {
      {"output", 'o', 0, G_OPTION_ARG_FILENAME, &out_dir,
       "Directory for the results (default: results/NAME)", "DIR"},
      {"jobs", 'j', 0, G_OPTION_ARG_STRING, &jobs_text,
       "Points run at a time (default: the number of CPUs; 1 per MPI rank)", "N"},
      {"fail-fast", 0, 0, G_OPTION_ARG_NONE, &fail_fast, "Start no more points after one fails",
       NULL},
      {"list", 0, 0, G_OPTION_ARG_NONE, &list, "Check every point and list them; run nothing",
       NULL},
      {"set", 0, 0, G_OPTION_ARG_STRING_ARRAY, &overrides,
       "Override one value of the base experiment (repeatable)", "KEY.PATH=VALUE"},
      {"part", 0, 0, G_OPTION_ARG_STRING, &part,
       "Run only the points i with i % K == R, write no sweep.csv (a job array's share; a "
       "run without --part then gathers)",
       "R/K"},
      {"no-plot", 0, 0, G_OPTION_ARG_NONE, &no_plot, "Draw no figures at the end", NULL},
      {"timeout", 0, 0, G_OPTION_ARG_STRING, &timeout_text,
       "Kill and fail a point still running after S seconds, or a duration such as 90s or 5min "
       "(default: no limit)",
       "S"},
      {"reuse", 0, 0, G_OPTION_ARG_NONE, &reuse,
       "Resume points made by another build of ema-sim or its plugins (default: run them again)",
       NULL},
      PLUGIN_DIR_ENTRY(plugin_dirs),
      {NULL}};

  if (!parse_options("Run every point of a sweep file: the base experiment under each variant, "
                     "each combination of the swept values and each repeat.",
                     entries, &argc, &argv, "FILE"))
    return EXIT_USAGE;
  if (argc != 2)
    return usage_error(argc < 2 ? "missing sweep FILE" : "too many arguments");
  if (jobs_text && !g_ascii_string_to_unsigned(jobs_text, 10, 1, 4096, &jobs, NULL))
    return usage_error("--jobs: give a number of processes from 1 to 4096 (leave -j out for one "
                       "per CPU)");
  if (timeout_text && !parse_timeout(timeout_text, &timeout_s))
    return usage_error("--timeout: give whole seconds (e.g. 90) or a duration (e.g. 90s, 5min), "
                       "up to a year; 0: no limit");
  if (part && !parse_part(part, &rank, &ranks))
    return usage_error("--part: give R/K with 0 <= R < K, e.g. --part 3/16");
  if (part && ema_sweep_mpi_launched_size() != 1)
    return usage_error("--part: not under an MPI launcher (the ranks share the points)");
  if (!part && !ema_sweep_mpi_init(&rank, &ranks, &error))
    return fail(error);
  /* every rank loads and checks every point; rank 0 speaks */
  if (!load_plugins(plugin_dirs, &error) ||
      (sweep = ema_sweep_load(argv[1], (const char *const *) overrides, &error)) == NULL ||
      (!list && !ema_sweep_resolve(sweep, &error))) {
    if (rank == 0)
      print_error(error->message);
    g_error_free(error);
    ema_sweep_mpi_finalize();
    return 1;
  }
  if (list) {
    /* the points listed (with --part the part's own; under MPI rank 0 lists them all) are
     * checked first, one at a time (each loaded and freed: no resolved text of every point held
     * at once), then listed */
    guint first = part ? rank : 0, step = part ? ranks : 1;
    if ((part || rank == 0) && !ema_sweep_check(sweep, first, step, &error)) {
      print_error(error->message);
      g_error_free(error);
      ema_sweep_mpi_finalize();
      return 1;
    }
    for (guint p = first; (part || rank == 0) && p < ema_sweep_n_points(sweep); p += step) {
      g_autofree char *what = ema_sweep_point_describe(sweep, p);
      printf("%s  %s\n", ema_sweep_point_name(sweep, p), what);
    }
    ema_sweep_mpi_finalize();
    return 0;
  }
  if (out_dir == NULL)
    out_dir = default_output_dir(ema_sweep_name(sweep));
  if (!ema_output_dir_named(out_dir, &error)) { /* before it says where the points go */
    print_error(error->message);
    g_error_free(error);
    ema_sweep_mpi_finalize();
    return 1;
  }
  program = self_program();
  /* the plugin folders made absolute: each point's run.env records them, and a resume from
   * another working directory must find the same ones */
  for (guint i = 0; global_plugin_dirs && i < global_plugin_dirs->len; i++) {
    g_ptr_array_add(program_args, g_strdup("--plugin-dir"));
    g_ptr_array_add(program_args, g_canonicalize_filename(global_plugin_dirs->pdata[i], NULL));
  }
  for (guint i = 0; plugin_dirs && plugin_dirs[i]; i++) {
    g_ptr_array_add(program_args, g_strdup("--plugin-dir"));
    g_ptr_array_add(program_args, g_canonicalize_filename(plugin_dirs[i], NULL));
  }
  g_ptr_array_add(program_args, NULL);
  options.program = program;
  options.program_args = (const char *const *) program_args->pdata;
  options.jobs = jobs_text ? (guint) jobs : ranks > 1 ? 1 : MAX(1, g_get_num_processors());
  options.fail_fast = fail_fast;
  options.reuse_other_builds = reuse;
  options.timeout_s = timeout_s;
  options.progress = rank == 0 && isatty(STDERR_FILENO);
  options.rank = rank;
  options.ranks = ranks;
  if (part)
    printf("sweep %s: part %u/%u of %u points in %s/, %u at a time\n", ema_sweep_name(sweep), rank,
           ranks, ema_sweep_n_points(sweep), out_dir, options.jobs);
  else if (rank == 0) {
    if (ranks > 1)
      printf("sweep %s: %u points in %s/ over %u MPI ranks, %u at a time each\n",
             ema_sweep_name(sweep), ema_sweep_n_points(sweep), out_dir, ranks, options.jobs);
    else
      printf("sweep %s: %u points in %s/, %u at a time\n", ema_sweep_name(sweep),
             ema_sweep_n_points(sweep), out_dir, options.jobs);
    fflush(stdout);
  }
  if (rank == 0 && !part)
    said = print_sweep_warnings(sweep);
  options.said_warnings = said;
  records = ema_sweep_run(sweep, out_dir, &options, &error);
  if (records == NULL) {
    print_error(error->message);
    g_clear_error(&error);
    if (part)
      return 1; /* it ran nothing: no count of points, no next step */
    records = g_ptr_array_new_with_free_func((GDestroyNotify) ema_sweep_record_free);
    status = 1;
  }
  if (part) {
    g_autofree char *gather = sweep_gather_command(argv[1], out_dir, overrides, plugin_dirs);
    status = sweep_report(records, out_dir) || status;
    printf("sweep.csv: run `%s` (without --part) when every part is done\n", gather);
    return status;
  }
  if (ranks > 1) { /* rank 0 gathers every rank's records */
    g_autofree char *mine = ema_sweep_records_to_text(records);
    g_autofree char *all = ema_sweep_mpi_gather(mine);
    g_clear_pointer(&records, g_ptr_array_unref);
    if (rank == 0 && (records = ema_sweep_records_from_text(all, &error)) == NULL) {
      fprintf(stderr, "ema-sim sweep: %s\n", error->message);
      g_clear_error(&error);
      status = 1;
    }
  }
  if (rank == 0 && records && records->len == ema_sweep_n_points(sweep)) {
    if (!ema_sweep_write_results(sweep, out_dir, records, &error)) {
      print_error(error->message);
      g_clear_error(&error);
      status = 1;
    } else {
      status = sweep_report(records, out_dir) || status;
      printf("results in %s/sweep.csv (each point in %s/POINT/)\n", out_dir, out_dir);
      if (!no_plot)
        plot_at_end(out_dir, FALSE, NULL);
    }
  } else if (rank == 0)
    status = 1;
  status = ema_sweep_mpi_broadcast(status);
  ema_sweep_mpi_finalize();
  return status;
}

static int command_run_only(int argc, char **argv) {
  return command_run(argc, argv, FALSE);
}

static int command_check(int argc, char **argv) {
  return command_run(argc, argv, TRUE);
}

/* The commands, in the order the usage lists them; PLUGINS: takes --plugin-dir. */
static const struct {
  const char *name;
  int (*run)(int argc, char **argv);
  gboolean plugins;
} commands[] = {
    {"run", command_run_only, TRUE},
    {"check", command_check, TRUE},
    {"list", command_list, TRUE},
    {"describe", command_describe, TRUE},
    {"describe-policy", command_describe_policy, TRUE},
    {"try-policy", command_try_policy, TRUE},
    {"frontier", command_frontier, FALSE},
    {"sweep", command_sweep, TRUE},
    {"compare-steps", command_compare_steps, FALSE},
    {"compare-static", command_compare_static, FALSE},
    {"plot", command_plot, FALSE},
    {"step-time", command_step_time, FALSE},
};

/* The names of the commands (those that take --plugin-dir if PLUGINS: describe as `describe
 * policy`, its one form that loads policies), ", "-separated. */
static char *command_names(gboolean plugins) {
  GString *names = g_string_new(NULL);
  for (guint i = 0; i < G_N_ELEMENTS(commands); i++)
    if (!plugins || commands[i].plugins)
      g_string_append_printf(names, "%s%s%s", names->len ? ", " : "", commands[i].name,
                             plugins && commands[i].run == command_describe ? " policy" : "");
  return g_string_free(names, FALSE);
}

/* Whether ARGV (ARGC) holds --plugin-dir among a command's own arguments, before any `--`. */
static gboolean plugin_dir_given(int argc, char **argv) {
  for (int i = 0; i < argc && strcmp(argv[i], "--") != 0; i++)
    if (strcmp(argv[i], "--plugin-dir") == 0 || g_str_has_prefix(argv[i], "--plugin-dir="))
      return TRUE;
  return FALSE;
}

/* Take the --plugin-dir options before the command off ARGV (ARGV[0] stays
 * the program). FALSE on a usage error (already printed). */
static gboolean take_global_options(int *argc, char ***argv) {
  int first = 1;
  global_plugin_dirs = g_ptr_array_new();
  while (first < *argc) {
    const char *arg = (*argv)[first];
    if (strcmp(arg, "--plugin-dir") == 0) {
      if (first + 1 >= *argc) {
        usage_error("--plugin-dir: missing DIR");
        return FALSE;
      }
      g_ptr_array_add(global_plugin_dirs, (*argv)[first + 1]);
      first += 2;
    } else if (g_str_has_prefix(arg, "--plugin-dir=")) {
      g_ptr_array_add(global_plugin_dirs, (gpointer) (arg + strlen("--plugin-dir=")));
      first++;
    } else
      break;
  }
  (*argv)[first - 1] = (*argv)[0];
  *argv += first - 1;
  *argc -= first - 1;
  return TRUE;
}

/* STATUS, or 1 where what went to standard output was not all written (a full disk, a closed
 * pipe): a table lost is a failure, not a success said on stderr alone. */
static int stdout_flushed(int status) {
  if (fflush(stdout) != 0 || ferror(stdout)) {
    int saved = errno;
    fprintf(stderr, "ema-sim: writing to standard output: %s\n",
            saved ? g_strerror(saved) : "failed");
    return status == 0 ? 1 : status;
  }
  return status;
}

int main(int argc, char **argv) {
  const char *command;
  guint c = 0;
  setlocale(LC_ALL, "");
  if (!take_global_options(&argc, &argv))
    return EXIT_USAGE;
  if (argc < 2)
    return usage_error("missing COMMAND");
  command = argv[1];
  if (strcmp(command, "--help") == 0 || strcmp(command, "-h") == 0 ||
      strcmp(command, "help") == 0) {
    fputs(usage_text, stdout);
    return 0;
  }
  if (strcmp(command, "--version") == 0) {
    printf("ema-sim %s\n", EMA_VERSION);
    return 0;
  }
  while (c < G_N_ELEMENTS(commands) && strcmp(command, commands[c].name) != 0)
    c++;
  /* given before a command that takes none, or after it (its own parser would say only
   * "Unknown option"); of describe, only `describe policy` takes it (a describe without a
   * subject says its usage, or its help) */
  if (global_plugin_dirs->len > 0 || plugin_dir_given(argc - 2, argv + 2)) {
    int subject = c < G_N_ELEMENTS(commands) && commands[c].run == command_describe
                      ? describe_subject(argc - 1, argv + 1)
                      : 0;
    if (c == G_N_ELEMENTS(commands) || !commands[c].plugins ||
        (subject > 0 && strcmp(argv[subject + 1], "policy") != 0)) {
      g_autofree char *names = command_names(TRUE);
      g_autofree char *message =
          g_strdup_printf("--plugin-dir is not an option of '%s%s%s' (only of %s)", command,
                          subject > 0 ? " " : "", subject > 0 ? argv[subject + 1] : "", names);
      return usage_error(message);
    }
  }
  if (c == G_N_ELEMENTS(commands)) {
    g_autofree char *names = command_names(FALSE);
    g_autofree char *message =
        g_strdup_printf("unknown command '%s' (commands: %s)", command, names);
    return usage_error(message);
  }
  /* the subcommand parsers see "ema-sim COMMAND" as their program name */
  argv[1] = g_strconcat("ema-sim ", command, NULL);
  return stdout_flushed(commands[c].run(argc - 1, argv + 1));
}
