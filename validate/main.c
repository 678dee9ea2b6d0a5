/* main.c: the ema-validate command line. Subcommands:
 *   calibrate   measure GPU0 and GPU1 and write a server model + raw CSVs
 *               (--from-results DIR: derive the model again, without a GPU)
 *   decode      time a synthetic decode step of a model on the GPUs
 *   devices     list the CUDA devices and their peer access
 *   run         measure an experiment's ops and decode scenarios on the GPUs
 *               and write them in ema-sim's output schema
 *   compare     the same experiment simulated against the GPUs (measured now,
 *               or read back from a run's summary.json: no GPU needed)
 *   pool        the elastic pool on real GPUs, run by the simulator's policies
 *   capture     run any CUDA program under the CUPTI capture library and write
 *               its trace (CSV per record kind, summaries, Chrome trace JSON)
 *   profile     the operator profiling workload (PyTorch) under capture, turned
 *               into the profile tables of hwmodels/profiles/README.md
 * Every argument is checked before the first CUDA call, so --help and
 * usage errors work on a machine without a GPU or driver; an option of one
 * value given twice is a usage error (parse_options), never its last value
 * taken unsaid. Usage errors
 * (anything wrong on the command line, found before CUDA starts) print
 * "ema-validate: MESSAGE" and "Try 'ema-validate --help'." and exit 2; any
 * other failure (no device, a CUDA error, a mismatch with the CPU reference,
 * a file that does not read) prints one line and exits 1: at its place
 * (file:line:col: ..., or an existing file or folder) where it has one, else
 * after "ema-validate: " (ema_message_located, ema-sim's rule too). */
#include <stdio.h>
#include <string.h>

#include "calderive.h"
#include "calibrate.h"
#include "capture.h"
#include "compare.h"
#include "cudacheck.h"
#include "decode.h"
#include "decodeplan.h"
#include "ema/run/experiment.h"
#include "ema/run/ops.h"
#include "ema/run/output.h"
#include "ema/core/file.h"
#include "ema/core/options.h"
#include "ema/core/units.h"
#include "poolmem.h"
#include "realpool.h"
#include "run.h"

#define EXIT_USAGE 2
#define MAX_REPEATS 10000
#define MAX_WARMUPS 1000
#define DEFAULT_REFERENCE "h200x2"

static const char usage_text[] =
    "Usage: ema-validate COMMAND [OPTIONS]\n"
    "\n"
    "Measures this machine's GPUs for EMA's models (CUDA; GPU0 borrows, GPU1 lends).\n"
    "\n"
    "Commands:\n"
    "  calibrate [-o FILE] [--name NAME] [--results DIR] [--quick] [--repeats N]\n"
    "            [--reference SERVER] [--topology direct|switch|pcie]\n"
    "                         measure GPU0 and GPU1 (copies, direct loads, latency, host\n"
    "                         copies, VMM costs, interference) and write a server model\n"
    "                         (default hwmodels/calibration/NAME.yaml) and raw CSV files\n"
    "  calibrate --from-results DIR [-o FILE] [--reference SERVER]\n"
    "                         derive the model again from a results directory (no GPU;\n"
    "                         rewrites DIR/derived.csv)\n"
    "  decode --model NAME --batch B --context C [--remote-fraction F]\n"
    "         [--mode local|direct|prefetch] [--prefetch-depth LAYERS] [--repeats N]\n"
    "         [--warmups N] [--csv FILE] [--server NAME] [--no-graph] [--no-verify]\n"
    "                         time a synthetic decode step of a model (hwmodels/llms) on\n"
    "                         GPU0 with a fraction F of its KV blocks on GPU1\n"
    "  devices                list the CUDA devices and their peer access\n"
    "  run FILE [-o DIR] [--set KEY=VALUE]... [--repeats N] [--warmups N] [--no-verify]\n"
    "                         measure an experiment's ops and decode scenarios on the GPUs;\n"
    "                         DIR (default results/NAME-measured) gets summary.json in\n"
    "                         ema-sim's schema, resolved.yaml, provenance.txt and CSV files\n"
    "  compare FILE [--measured DIR] [-o DIR] [--set KEY=VALUE]... [--repeats N] ...\n"
    "                         simulate FILE (libema) and compare with the GPUs, measured\n"
    "                         now (as run) or read from DIR/summary.json (no GPU needed):\n"
    "                         a table, DIR/compare.csv and DIR/compare.md\n"
    "  pool [--policy NAME|MAP] [--plugin-dir DIR] [--seconds S] [--tick T] [-o DIR]\n"
    "       [--model NAME] [--batch B] [--context C] [--borrower-region SIZE]\n"
    "       [--lender-region SIZE] [--server NAME] [--no-ballast] [--dry-run]\n"
    "                         GPU0 borrows from GPU1 through real CUDA VMM mappings under\n"
    "                         the simulator's policies; GPU1 decodes throughout and reclaims\n"
    "  capture -o DIR [--buffers N] [--buffer-mb MB] -- COMMAND [ARGS]...\n"
    "                         run any CUDA program under CUPTI: every kernel, copy, memset,\n"
    "                         allocation, VMM call and NVTX range into DIR (CSV files,\n"
    "                         ranges.csv, kernel-names.csv, trace.json for Perfetto)\n"
    "  profile -o DIR [--models LIST] [--quick] [--python PY] [--workload FILE]\n"
    "          [--from-capture CAPDIR]\n"
    "                         the operator profiling workload (PyTorch) under capture:\n"
    "                         DIR/*.csv tables (hwmodels/profiles/README.md) and DIR/profile.yaml\n"
    "\n"
    "Options:\n"
    "  -h, --help             show help (also: ema-validate COMMAND --help)\n"
    "  --version              print the version\n";

static int usage_error(const char *message) {
  fprintf(stderr, "ema-validate: %s\nTry 'ema-validate --help'.\n", message);
  return EXIT_USAGE;
}

static int usage_gerror(GError *error) {
  int status = usage_error(error->message);
  g_error_free(error);
  return status;
}

/* An error of exit status 1: one line, "ema-validate: " first where it has no place
 * (ema_message_located, as ema-sim prints its errors). */
static int fail(GError *error) {
  fprintf(stderr, "%s%s\n",
          ema_message_located(error->message) ? "" : "ema-validate: ", error->message);
  g_error_free(error);
  return 1;
}

/* Parse a subcommand's options (ema_options_parse: an option of one value given twice is a
 * usage error, never its last value taken unsaid); FALSE (after a usage message) on a usage
 * error. */
static gboolean parse_options(const char *summary, GOptionEntry *entries, int *argc, char ***argv,
                              const char *parameter_string) {
  g_autoptr(GOptionContext) context = g_option_context_new(parameter_string);
  g_autoptr(GError) error = NULL;
  g_autofree char *program = g_strconcat("ema-validate ", (*argv)[0], NULL);
  g_set_prgname(program);
  g_option_context_set_summary(context, summary);
  if (!ema_options_parse(context, entries, argc, argv, &error)) {
    usage_error(error->message);
    return FALSE;
  }
  return TRUE;
}

/* A whole number in MIN..MAX given to OPTION; FALSE with a usage message. */
static gboolean parse_count(const char *option, const char *text, gint64 min, gint64 max,
                            guint *out) {
  gint64 value = 0;
  if (!ema_units_parse_int(text, &value, NULL) || value < min || value > max) {
    g_autofree char *message =
        g_strdup_printf("%s: '%s' is not a whole number in %" G_GINT64_FORMAT "..%" G_GINT64_FORMAT,
                        option, text, min, max);
    usage_error(message);
    return FALSE;
  }
  *out = (guint) value;
  return TRUE;
}

/* FALSE after a usage message where VALUE, a folder given to OPTION, is the empty string: it
 * named the working directory, whose files were read as WHAT (or written there). */
static gboolean folder_named(const char *option, const char *value, const char *what) {
  if (value == NULL || *value != '\0')
    return TRUE;
  {
    g_autofree char *message =
        g_strdup_printf("%s: the folder's name is empty: give %s", option, what);
    usage_error(message);
  }
  return FALSE;
}

/* FALSE after a usage message where -o names no folder (''): found before a GPU is looked for,
 * not when the folder is claimed. */
static gboolean output_named(const char *output) {
  GError *error = NULL;
  if (output == NULL || ema_output_dir_named(output, &error))
    return TRUE;
  usage_gerror(error);
  return FALSE;
}

/* The command line, each argument quoted for the shell when it needs it. */
static char *command_line(int argc, char **argv) {
  GString *line = g_string_new(NULL);
  for (int i = 0; i < argc; i++) {
    /* $'...' for a control character: provenance.txt and a model's header keep one line
     * (calderive.c refuses a control character in a value) */
    g_autofree char *quoted = ema_shell_word(argv[i]);
    if (i > 0)
      g_string_append_c(line, ' ');
    g_string_append(line, quoted);
  }
  return g_string_free(line, FALSE);
}

/* Whether PATH names a file of the results folder DIR that calibrate reads or writes: the model
 * written there replaced the measurements it came from (or the folder's marker, its claim). */
static gboolean is_results_file(const char *path, const char *dir) {
  g_autofree char *base = g_path_get_basename(path);
  g_autofree char *parent = g_path_get_dirname(path);
  g_autofree char *canonical_parent = NULL, *canonical_dir = NULL;
  if (!g_strv_contains(ema_run_results_entries, base) && strcmp(base, EMA_OUTPUT_MARKER) != 0)
    return FALSE;
  if (ema_file_same(parent, dir))
    return TRUE;
  /* (one not there yet: the same name) */
  canonical_parent = g_canonicalize_filename(parent, NULL);
  canonical_dir = g_canonicalize_filename(dir, NULL);
  return strcmp(canonical_parent, canonical_dir) == 0;
}

static int command_calibrate(int argc, char **argv, const char *command) {
  g_autofree char *output = NULL, *name = NULL, *results = NULL, *reference = NULL;
  g_autofree char *topology = NULL, *repeats_text = NULL, *from_results = NULL;
  gboolean quick = FALSE;
  EmaCalibrateOptions options = {0};
  GError *error = NULL;
  GOptionEntry entries[] = {
      {"output", 'o', 0, G_OPTION_ARG_FILENAME, &output,
       "Server model to write (default: hwmodels/calibration/NAME.yaml)", "FILE"},
      {"name", 0, 0, G_OPTION_ARG_STRING, &name, "Model name (default: from the GPUs, e.g. h200x2)",
       "NAME"},
      {"results", 0, 0, G_OPTION_ARG_FILENAME, &results,
       "Directory for the CSV files (default: results/calibrate-NAME-DATE)", "DIR"},
      {"quick", 0, 0, G_OPTION_ARG_NONE, &quick,
       "Small sizes and few repeats: checks that every measurement runs", NULL},
      {"repeats", 0, 0, G_OPTION_ARG_STRING, &repeats_text,
       "Timed repeats of each measurement (default 20, quick 5)", "N"},
      {"reference", 0, 0, G_OPTION_ARG_STRING, &reference,
       "Server model for what is not measured, and to compare with (default h200x2)", "SERVER"},
      {"topology", 0, 0, G_OPTION_ARG_STRING, &topology,
       "The fabric between the GPUs: direct (default), switch or pcie", "KIND"},
      {"from-results", 0, 0, G_OPTION_ARG_FILENAME, &from_results,
       "Measure nothing: derive the model again from DIR (a calibrate results directory; no GPU "
       "needed), rewriting DIR/derived.csv",
       "DIR"},
      {NULL}};
  static const char *const topologies[] = {"direct", "switch", "pcie"};
  g_autoptr(EmaServerSpec) reference_model = NULL;

  if (!parse_options("Measure GPU0 and GPU1 and write a calibrated server model.", entries, &argc,
                     &argv, ""))
    return EXIT_USAGE;
  if (argc != 1)
    return usage_error("calibrate takes no arguments besides its options");
  if (!folder_named("--from-results", from_results, "the results directory calibrate wrote"))
    return EXIT_USAGE;
  if (from_results && (name || results || quick || repeats_text || topology))
    return usage_error("--from-results takes only -o and --reference (the rest comes from the "
                       "results directory)");
  if (output && !ema_file_output_ok(output, "the model", &error)) {
    g_prefix_error(&error, "-o: ");
    return usage_gerror(error);
  }
  if (output && !ema_output_file_free(output, "-o", &error))
    return usage_gerror(error);
  if (output && (from_results || results) &&
      is_results_file(output, from_results ? from_results : results)) {
    g_autofree char *message =
        g_strdup_printf("-o: '%s' is a file of the results directory %s: give the model's file",
                        output, from_results ? from_results : results);
    return usage_error(message);
  }
  /* found before the GPUs are measured, not when the measurements are written */
  if (results && (results[0] == '\0' || (g_file_test(results, G_FILE_TEST_EXISTS) &&
                                         !g_file_test(results, G_FILE_TEST_IS_DIR)))) {
    g_autofree char *message =
        g_strdup_printf("--results: '%s' is not a directory: give the directory for the CSV "
                        "files",
                        results);
    return usage_error(message);
  }
  options.topology = EMA_TOPOLOGY_DIRECT;
  if (topology) {
    guint i = 0;
    while (i < G_N_ELEMENTS(topologies) && strcmp(topology, topologies[i]) != 0)
      i++;
    if (i == G_N_ELEMENTS(topologies)) {
      g_autofree char *message = g_strdup_printf(
          "--topology: unknown topology '%s' (known: direct, switch, pcie)", topology);
      return usage_error(message);
    }
    options.topology = (EmaTopology) i;
  }
  if (repeats_text && !parse_count("--repeats", repeats_text, 1, MAX_REPEATS, &options.repeats))
    return EXIT_USAGE;
  if (name && (name[0] == '\0' || strpbrk(name, "/ \t\n") != NULL)) {
    g_autofree char *message =
        g_strdup_printf("--name: '%s' must be a non-empty file name without '/' or spaces", name);
    return usage_error(message);
  }
  options.reference = reference ? reference : DEFAULT_REFERENCE;
  reference_model = ema_server_load(options.reference, &error);
  if (reference_model == NULL) {
    g_prefix_error(&error, "--reference: ");
    return usage_gerror(error);
  }
  if (from_results) {
    if (!ema_calibration_from_results(from_results, output, command, reference_model, stdout,
                                      &error))
      return fail(error);
    return 0;
  }
  options.name = name;
  options.output = output;
  options.results_dir = results;
  options.quick = quick;
  options.command = command;
  if (!ema_calibrate_run(&options, &error))
    return fail(error);
  return 0;
}

static int command_decode(int argc, char **argv) {
  g_autofree char *model_name = NULL, *batch_text = NULL, *context_text = NULL;
  g_autofree char *fraction_text = NULL, *mode_text = NULL, *depth_text = NULL;
  g_autofree char *repeats_text = NULL, *warmups_text = NULL, *csv = NULL, *server_name = NULL;
  gboolean no_verify = FALSE, no_graph = FALSE;
  GOptionEntry entries[] = {
      {"model", 0, 0, G_OPTION_ARG_STRING, &model_name, "Model shape (hwmodels/llms/NAME.yaml)",
       "NAME"},
      {"batch", 0, 0, G_OPTION_ARG_STRING, &batch_text, "Sequences in the batch", "B"},
      {"context", 0, 0, G_OPTION_ARG_STRING, &context_text, "Context tokens of each sequence", "C"},
      {"remote-fraction", 0, 0, G_OPTION_ARG_STRING, &fraction_text,
       "Fraction of the KV blocks on GPU1, e.g. 0.25 or 25% (default 0)", "F"},
      {"mode", 0, 0, G_OPTION_ARG_STRING, &mode_text,
       "local (default), direct (read over the link) or prefetch (copy ahead)", "MODE"},
      {"prefetch-depth", 0, 0, G_OPTION_ARG_STRING, &depth_text,
       "Layers ahead the prefetch copies run (default 1)", "LAYERS"},
      {"repeats", 0, 0, G_OPTION_ARG_STRING, &repeats_text, "Timed steps (default 20)", "N"},
      {"warmups", 0, 0, G_OPTION_ARG_STRING, &warmups_text, "Untimed steps first (default 3)", "N"},
      {"csv", 0, 0, G_OPTION_ARG_FILENAME, &csv, "Append one row of results to FILE", "FILE"},
      {"server", 0, 0, G_OPTION_ARG_STRING, &server_name,
       "Server model for the step-time prediction (default h200x2)", "NAME"},
      {"no-graph", 0, 0, G_OPTION_ARG_NONE, &no_graph,
       "Enqueue every kernel of every step instead of replaying a CUDA graph", NULL},
      {"no-verify", 0, 0, G_OPTION_ARG_NONE, &no_verify,
       "Skip the check of the outputs against the CPU reference", NULL},
      {NULL}};
  EmaDecodeOptions options = {0};
  EmaDecodeRunOptions run = {20, 3, TRUE, TRUE, NULL, NULL, 0, FALSE};
  g_autoptr(EmaLlmSpec) model = NULL;
  g_autoptr(EmaServerSpec) server = NULL;
  g_autoptr(EmaDecodePlan) plan = NULL;
  GError *error = NULL;

  if (!parse_options("Time a synthetic decode step of a model on the GPUs.", entries, &argc, &argv,
                     ""))
    return EXIT_USAGE;
  if (argc != 1)
    return usage_error("decode takes no arguments besides its options");
  if (model_name == NULL || batch_text == NULL || context_text == NULL)
    return usage_error("decode needs --model, --batch and --context");
  if (!parse_count("--batch", batch_text, 1, G_MAXINT32, &options.batch) ||
      !parse_count("--context", context_text, 1, G_MAXINT32, &options.context))
    return EXIT_USAGE;
  if (fraction_text && !ema_units_parse_fraction(fraction_text, &options.remote_fraction, NULL)) {
    g_autofree char *message =
        g_strdup_printf("--remote-fraction: '%s' is not a fraction (0.25 or 25%%)", fraction_text);
    return usage_error(message);
  }
  options.mode = EMA_DECODE_LOCAL;
  if (mode_text && !ema_decode_mode_parse(mode_text, &options.mode, &error))
    return usage_gerror(error);
  options.prefetch_depth = 1;
  if (depth_text) {
    if (options.mode != EMA_DECODE_PREFETCH)
      return usage_error("--prefetch-depth applies to --mode prefetch only");
    if (!parse_count("--prefetch-depth", depth_text, 1, G_MAXINT32, &options.prefetch_depth))
      return EXIT_USAGE;
  }
  if ((repeats_text && !parse_count("--repeats", repeats_text, 1, MAX_REPEATS, &run.repeats)) ||
      (warmups_text && !parse_count("--warmups", warmups_text, 0, MAX_WARMUPS, &run.warmups)))
    return EXIT_USAGE;
  run.verify = !no_verify;
  run.graph = !no_graph;
  run.csv_path = csv;
  /* a file the row cannot go to is found before the GPU runs, not after */
  if (csv && (csv[0] == '\0' || g_file_test(csv, G_FILE_TEST_IS_DIR))) {
    g_autofree char *message = g_strdup_printf("--csv: '%s' is no file to append to", csv);
    return usage_error(message);
  }
  if (csv) {
    g_autofree char *parent = g_path_get_dirname(csv);
    if (!g_file_test(parent, G_FILE_TEST_IS_DIR)) {
      g_autofree char *message =
          g_strdup_printf("--csv: '%s': no folder %s to write it in", csv, parent);
      return usage_error(message);
    }
  }
  if (csv && !ema_csv_check_append(csv, EMA_DECODE_CSV_HEADER, &error)) {
    g_prefix_error(&error, "--csv: ");
    return usage_gerror(error);
  }

  model = ema_llm_load(model_name, &error);
  if (model == NULL) {
    g_prefix_error(&error, "--model: ");
    return usage_gerror(error);
  }
  server = ema_server_load(server_name ? server_name : DEFAULT_REFERENCE, &error);
  if (server == NULL) {
    g_prefix_error(&error, "--server: ");
    return usage_gerror(error);
  }
  run.server = server;
  plan = ema_decode_plan_new(model, &options, &error);
  if (plan == NULL)
    return usage_gerror(error);

  if (!ema_decode_run(plan, model, &run, NULL, &error))
    return fail(error);
  return 0;
}

/* The options run and compare share. */
typedef struct {
  char *output;
  char **overrides;
  char *repeats_text, *warmups_text;
  gboolean no_verify;
} RunArguments;

static void run_arguments_clear(RunArguments *a) {
  g_free(a->output);
  g_strfreev(a->overrides);
  g_free(a->repeats_text);
  g_free(a->warmups_text);
}

G_DEFINE_AUTO_CLEANUP_CLEAR_FUNC(RunArguments, run_arguments_clear)

/* Parse the counts of A into OPTIONS; FALSE after a usage message. */
static gboolean run_options(const RunArguments *a, EmaRunOptions *options) {
  options->repeats = 20;
  options->warmups = 3;
  options->verify = !a->no_verify;
  return (!a->repeats_text ||
          parse_count("--repeats", a->repeats_text, 1, MAX_REPEATS, &options->repeats)) &&
         (!a->warmups_text ||
          parse_count("--warmups", a->warmups_text, 0, MAX_WARMUPS, &options->warmups));
}

/* Load FILE with the --set overrides; NULL after printing the error. */
static EmaExperiment *load_experiment(const char *file, char **overrides) {
  GError *error = NULL;
  EmaExperiment *experiment = ema_experiment_load(file, (const char *const *) overrides, &error);
  if (experiment == NULL) {
    fail(error);
    return NULL;
  }
  if (!ema_run_check(experiment, &error)) {
    fail(error);
    ema_experiment_free(experiment);
    return NULL;
  }
  return experiment;
}

static char *default_output(const EmaExperiment *experiment) {
  return g_strdup_printf("results/%s-measured", experiment->name);
}

static int command_run(int argc, char **argv, const char *command) {
  g_auto(RunArguments) a = {0};
  GOptionEntry entries[] = {{"output", 'o', 0, G_OPTION_ARG_FILENAME, &a.output,
                             "Results directory (default: results/NAME-measured)", "DIR"},
                            {"set", 0, 0, G_OPTION_ARG_STRING_ARRAY, &a.overrides,
                             "Override a value of FILE, as ema-sim does (repeatable)", "KEY=VALUE"},
                            {"repeats", 0, 0, G_OPTION_ARG_STRING, &a.repeats_text,
                             "Timed repeats of each op and step (default 20)", "N"},
                            {"warmups", 0, 0, G_OPTION_ARG_STRING, &a.warmups_text,
                             "Untimed repeats first (default 3)", "N"},
                            {"no-verify", 0, 0, G_OPTION_ARG_NONE, &a.no_verify,
                             "Skip the decode steps' check against the CPU reference", NULL},
                            {NULL}};
  EmaRunOptions options = {0};
  g_autoptr(EmaExperiment) experiment = NULL;
  g_autoptr(EmaOpsReport) report = NULL;
  g_autofree char *dir = NULL;
  GError *error = NULL;

  if (!parse_options("Measure an experiment's ops and decode scenarios on the GPUs.", entries,
                     &argc, &argv, "FILE"))
    return EXIT_USAGE;
  if (argc != 2)
    return usage_error(argc < 2 ? "run needs an experiment FILE" : "run takes one experiment FILE");
  if (*argv[1] == '\0')
    return usage_error("run: the experiment FILE's name is empty");
  if (!output_named(a.output) || !run_options(&a, &options))
    return EXIT_USAGE;
  if ((experiment = load_experiment(argv[1], a.overrides)) == NULL)
    return 1;
  options.command = command;
  options.experiment_file = argv[1];
  dir = a.output ? g_strdup(a.output) : default_output(experiment);
  report = ema_run_experiment(experiment, &options, dir, &error);
  if (report == NULL)
    return fail(error);
  printf("\n");
  ema_output_print_ops(stdout, report);
  printf("results in %s/\n", dir);
  if (report->failed) {
    fprintf(stderr, "ema-validate: %u of %u expectations missed\n", report->failed,
            report->ops->len);
    return 1;
  }
  return 0;
}

/* What compare writes into its folder (kept beside the measurements). */
static const char *const compare_entries[] = {"compare.csv", "compare.md", "sim", NULL};

static int command_compare(int argc, char **argv, const char *command) {
  g_auto(RunArguments) a = {0};
  g_autofree char *measured_dir = NULL;
  GOptionEntry entries[] = {
      {"measured", 0, 0, G_OPTION_ARG_FILENAME, &measured_dir,
       "Compare with DIR/summary.json of an earlier run instead of measuring (no GPU needed)",
       "DIR"},
      {"output", 'o', 0, G_OPTION_ARG_FILENAME, &a.output,
       "Where compare.csv and compare.md go, and the measurements when measuring now (default: "
       "the --measured DIR, or results/NAME-measured)",
       "DIR"},
      {"set", 0, 0, G_OPTION_ARG_STRING_ARRAY, &a.overrides,
       "Override a value of FILE, as ema-sim does (repeatable)", "KEY=VALUE"},
      {"repeats", 0, 0, G_OPTION_ARG_STRING, &a.repeats_text,
       "Measuring now: timed repeats (default 20)", "N"},
      {"warmups", 0, 0, G_OPTION_ARG_STRING, &a.warmups_text,
       "Measuring now: untimed repeats first (default 3)", "N"},
      {"no-verify", 0, 0, G_OPTION_ARG_NONE, &a.no_verify,
       "Measuring now: skip the decode steps' check against the CPU reference", NULL},
      {NULL}};
  EmaRunOptions options = {0};
  g_autoptr(EmaExperiment) experiment = NULL;
  g_autoptr(EmaOpsReport) simulated = NULL, measured = NULL;
  g_autoptr(EmaComparison) comparison = NULL;
  g_autofree char *dir = NULL, *sim_dir = NULL, *simulated_with = NULL, *measured_server = NULL;
  EmaCompareInfo info = {0};
  gint64 wall_start;
  GError *error = NULL;

  if (!parse_options("Compare the simulator with the GPUs on one experiment.", entries, &argc,
                     &argv, "FILE"))
    return EXIT_USAGE;
  if (argc != 2)
    return usage_error(argc < 2 ? "compare needs an experiment FILE"
                                : "compare takes one experiment FILE");
  if (*argv[1] == '\0')
    return usage_error("compare: the experiment FILE's name is empty");
  /* (an empty name would read the working directory's summary.json as the measurements) */
  if (!folder_named("--measured", measured_dir, "the folder ema-validate run -o wrote") ||
      !output_named(a.output))
    return EXIT_USAGE;
  if (measured_dir && (a.repeats_text || a.warmups_text || a.no_verify))
    return usage_error("--repeats, --warmups and --no-verify are for measuring now, not with "
                       "--measured");
  if (!run_options(&a, &options))
    return EXIT_USAGE;
  if ((experiment = load_experiment(argv[1], a.overrides)) == NULL)
    return 1;
  dir = a.output       ? g_strdup(a.output)
        : measured_dir ? g_strdup(measured_dir)
                       : default_output(experiment);

  wall_start = g_get_monotonic_time();
  simulated = ema_ops_run(experiment, &error);
  if (simulated == NULL)
    return fail(error);
  if (measured_dir) {
    measured = ema_compare_read_summary(measured_dir, experiment, &error);
  } else {
    options.command = command;
    options.experiment_file = argv[1];
    measured = ema_run_experiment(experiment, &options, dir, &error);
  }
  if (measured == NULL)
    return fail(error);
  comparison = ema_comparison_new(measured, simulated, &error);
  if (comparison == NULL)
    return fail(error);

  /* the simulator's own outputs beside the comparison */
  sim_dir = g_build_filename(dir, "sim", NULL);
  /* a run's folder (the measurements': ema-validate run's, or one it now writes), never a
   * sweep's, a pool's or ema-sim run's: compare.csv in a sweep folder broke `ema-sim plot` of
   * it; sim/ is an ema-sim run's (the simulator's own outputs) */
  if (!ema_output_claim_dir_as(dir, &ema_run_output_claim, compare_entries, EMA_OUTPUT_CLAIM_KEEP,
                               &error) ||
      !ema_output_claim_dir(sim_dir, NULL, &error) ||
      !ema_output_write_resolved(sim_dir, experiment, &error) ||
      !ema_output_write_ops_summary(sim_dir, experiment, simulated,
                                    (double) (g_get_monotonic_time() - wall_start) / 1e6, &error))
    return fail(error);
  simulated_with = g_strdup_printf("ema-sim's models (libema %s, ema_ops_run) on the same file: "
                                   "`%s/sim/summary.json`",
                                   EMA_VERSION, dir);
  info.experiment_file = argv[1];
  info.experiment_name = experiment->name;
  info.server_name = experiment->server.name;
  info.measured_dir = measured_dir ? measured_dir : dir;
  info.simulated_with = simulated_with;
  if (measured_dir && (measured_server = ema_compare_measured_server(measured_dir)) != NULL &&
      strcmp(measured_server, experiment->server.name) != 0) {
    /* a --set or an edited file: a comparison of another model, said so, not refused */
    g_autofree char *quoted = ema_file_quote_cut(measured_server, -1);
    info.measured_server = measured_server;
    fprintf(stderr,
            "ema-validate: note: %s was measured under server '%s'; simulating with '%s': the "
            "table compares that model with those GPUs\n",
            measured_dir, quoted, experiment->server.name);
  }
  if (!ema_comparison_write(comparison, &info, dir, &error))
    return fail(error);
  printf("\n%s on %s: measured (%s) against simulated\n", experiment->name, experiment->server.name,
         info.measured_dir);
  ema_comparison_print(stdout, comparison);
  printf("wrote %s/compare.csv, %s/compare.md and %s/sim/\n", dir, dir, dir);
  return 0;
}

static int command_devices(int argc, char **argv) {
  GError *error = NULL;
  g_autofree char *driver = NULL, *cuda = NULL;
  int count = 0;
  if (argc == 2 && (strcmp(argv[1], "--help") == 0 || strcmp(argv[1], "-h") == 0)) {
    fputs("usage: ema-validate devices\n\nList the CUDA devices, the driver and CUDA versions, "
          "and which devices can\naccess which peers' memory. Takes no options.\n",
          stdout);
    return 0;
  }
  if (argc != 1)
    return usage_error("usage: ema-validate devices");
  if (!ema_cuda_device_count(&count, &error))
    return fail(error);
  driver = ema_nvidia_driver_version();
  cuda = ema_cuda_versions();
  printf("NVIDIA driver %s; CUDA %s; %d device%s\n", driver, cuda, count, count == 1 ? "" : "s");
  for (int d = 0; d < count; d++) {
    struct cudaDeviceProp prop;
    char bus[32] = "";
    if (!EMA_CUDA(d, &error, cudaGetDeviceProperties(&prop, d)) ||
        !EMA_CUDA(d, &error, cudaDeviceGetPCIBusId(bus, sizeof bus, d)))
      return fail(error);
    printf("GPU%d  %s  PCI %s  %d SMs  %.1f GiB  compute %d.%d  peer access:", d, prop.name, bus,
           prop.multiProcessorCount, prop.totalGlobalMem / 1073741824.0, prop.major, prop.minor);
    for (int p = 0; p < count; p++) {
      int can = 0;
      if (p == d)
        continue;
      if (!EMA_CUDA(d, &error, cudaDeviceCanAccessPeer(&can, d, p)))
        return fail(error);
      printf(" GPU%d %s", p, can ? "yes" : "no");
    }
    printf("\n");
  }
  return 0;
}

/* `pool`: the elastic pool on the GPUs (validate/realpool.c). */
static int command_pool(int argc, char **argv, const char *command) {
  g_autofree char *policy_text = NULL, *seconds_text = NULL, *tick_text = NULL, *output = NULL;
  g_autofree char *model_name = NULL, *batch_text = NULL, *context_text = NULL;
  g_autofree char *borrower_text = NULL, *lender_text = NULL, *server_name = NULL;
  g_auto(GStrv) plugin_dirs = NULL;
  gboolean dry_run = FALSE, no_ballast = FALSE;
  GOptionEntry entries[] = {
      {"policy", 0, 0, G_OPTION_ARG_STRING, &policy_text,
       "A composition (ema, remote-direct, static, ...; default ema) or a map of policies, "
       "e.g. '{borrow: neighbour, reclaim: migrate}'",
       "NAME|MAP"},
      {"plugin-dir", 0, 0, G_OPTION_ARG_FILENAME_ARRAY, &plugin_dirs,
       "Load the policy modules in DIR (repeatable; then EMA_PLUGIN_PATH)", "DIR"},
      {"seconds", 0, 0, G_OPTION_ARG_STRING, &seconds_text, "Length of the scenario (default 20s)",
       "S"},
      {"tick", 0, 0, G_OPTION_ARG_STRING, &tick_text, "Time between rounds (default 50ms)", "T"},
      {"output", 'o', 0, G_OPTION_ARG_FILENAME, &output,
       "Results directory (default: results/pool-POLICY)", "DIR"},
      {"model", 0, 0, G_OPTION_ARG_STRING, &model_name,
       "Model of both tenants' KV blocks and of the lender's decode (default llama-3.1-8b)",
       "NAME"},
      {"batch", 0, 0, G_OPTION_ARG_STRING, &batch_text, "The lender's decode batch (default 16)",
       "B"},
      {"context", 0, 0, G_OPTION_ARG_STRING, &context_text,
       "The lender's decode context, and tokens per sequence (default 2000)", "C"},
      {"borrower-region", 0, 0, G_OPTION_ARG_STRING, &borrower_text,
       "GPU0's KV region (default 2GiB)", "SIZE"},
      {"lender-region", 0, 0, G_OPTION_ARG_STRING, &lender_text, "GPU1's KV region (default 8GiB)",
       "SIZE"},
      {"server", 0, 0, G_OPTION_ARG_STRING, &server_name,
       "Server model the policies see (default h200x2)", "NAME"},
      {"no-ballast", 0, 0, G_OPTION_ARG_NONE, &no_ballast,
       "Leave the GPUs' other free memory alone (default: cut it to each region + 1 GiB)", NULL},
      {"dry-run", 0, 0, G_OPTION_ARG_NONE, &dry_run,
       "No GPU: the same ledger and policies over an emulated VMM, in simulated time", NULL},
      {NULL}};
  EmaRealPoolOptions options = {0};
  EmaPolicySpec spec;
  g_autoptr(EmaLlmSpec) model = NULL;
  g_autoptr(EmaServerSpec) server = NULL;
  g_autofree char *dir = NULL;
  gint64 seconds_ns = 20 * G_GINT64_CONSTANT(1000000000), tick_ns = 50 * 1000 * 1000;
  guint64 regions[2] = {(guint64) 2 << 30, (guint64) 8 << 30};
  const char *region_texts[2];
  GError *error = NULL;
  gboolean ok;

  if (!parse_options("Run the elastic pool on GPU0 (borrower) and GPU1 (lender) while GPU1 "
                     "decodes, and check that a reclaim gives all memory back.",
                     entries, &argc, &argv, ""))
    return EXIT_USAGE;
  if (argc != 1)
    return usage_error("pool takes no arguments besides its options");
  if (!output_named(output))
    return EXIT_USAGE;
  if (seconds_text) { /* a duration, or a bare number of seconds */
    double plain = 0;
    if (!ema_units_parse_duration(seconds_text, &seconds_ns, NULL))
      seconds_ns = ema_units_parse_double(seconds_text, &plain, NULL) && plain > 0 && plain < 1e6
                       ? (gint64) (plain * 1e9 + 0.5)
                       : 0;
  }
  if (seconds_text &&
      (seconds_ns < 1000000000 || seconds_ns > 3600 * G_GINT64_CONSTANT(1000000000))) {
    g_autofree char *message = g_strdup_printf(
        "--seconds: '%s' is not a duration of 1s..1h (a bare number is seconds: 20 or 20s)",
        seconds_text);
    return usage_error(message);
  }
  if (tick_text && (!ema_units_parse_duration(tick_text, &tick_ns, NULL) || tick_ns < 1000000 ||
                    tick_ns > seconds_ns / 10)) {
    g_autofree char *message =
        g_strdup_printf("--tick: '%s' is not a duration of 1ms..a tenth of --seconds (%g s here)",
                        tick_text, (double) (seconds_ns / 10) / 1e9);
    return usage_error(message);
  }
  options.batch = 16;
  options.context = 2000;
  if ((batch_text && !parse_count("--batch", batch_text, 1, 4096, &options.batch)) ||
      (context_text && !parse_count("--context", context_text, 16, 1 << 20, &options.context)))
    return EXIT_USAGE;
  region_texts[0] = borrower_text;
  region_texts[1] = lender_text;
  for (guint d = 0; d < 2; d++) {
    if (region_texts[d] &&
        (!ema_units_parse_size(region_texts[d], &regions[d], NULL) ||
         regions[d] < ((guint64) 64 << 20) || regions[d] > ((guint64) 1 << 40))) {
      g_autofree char *message = g_strdup_printf("--%s-region: '%s' is not a size of 64MiB..1TiB",
                                                 d == 0 ? "borrower" : "lender", region_texts[d]);
      return usage_error(message);
    }
  }
  if (!ema_policy_registry_load_dirs((const char *const *) plugin_dirs, &error))
    return fail(error);
  if (!ema_pool_mem_policy_parse(policy_text ? policy_text : "ema", &spec, &error))
    return usage_gerror(error);
  model = ema_llm_load(model_name ? model_name : "llama-3.1-8b", &error);
  if (model == NULL) {
    ema_params_clear(&ema_policy_spec_params, &spec);
    g_prefix_error(&error, "--model: ");
    return usage_gerror(error);
  }
  server = ema_server_load(server_name ? server_name : DEFAULT_REFERENCE, &error);
  if (server == NULL) {
    ema_params_clear(&ema_policy_spec_params, &spec);
    g_prefix_error(&error, "--server: ");
    return usage_gerror(error);
  }
  if (!dry_run) {
    /* the lender's decode (a context past the model's, a shape its kernels lack): found before
     * the GPUs are looked for and the folder claimed, not once an earlier run's results went */
    EmaDecodeOptions decode = {options.batch, options.context, 0, EMA_DECODE_LOCAL, 1};
    if (!ema_decode_plan_check(model, &decode, &error)) {
      ema_params_clear(&ema_policy_spec_params, &spec);
      return usage_gerror(error);
    }
  }
  dir = output ? g_strdup(output) : g_strdup_printf("results/pool-%s", spec.name);
  options.policy = &spec;
  options.seconds = (double) seconds_ns / 1e9;
  options.tick_seconds = (double) tick_ns / 1e9;
  options.out_dir = dir;
  options.model = model;
  options.server = server;
  options.region_bytes[0] = regions[0];
  options.region_bytes[1] = regions[1];
  options.ballast = !no_ballast;
  options.dry_run = dry_run;
  options.command = command;
  ok = ema_realpool_run(&options, &error);
  ema_params_clear(&ema_policy_spec_params, &spec);
  return ok ? 0 : fail(error);
}

/* splits ARGV at its first "--": *before gets the count before it; the index after it, or -1 */
static int split_at_dashes(int argc, char **argv, int *before) {
  for (int i = 1; i < argc; i++)
    if (strcmp(argv[i], "--") == 0) {
      *before = i;
      return i + 1 < argc ? i + 1 : -1;
    }
  *before = argc;
  return -1;
}

static int command_capture(int argc, char **argv) {
  g_autofree char *output = NULL, *buffers_text = NULL, *mb_text = NULL;
  GOptionEntry entries[] = {
      {"output", 'o', 0, G_OPTION_ARG_FILENAME, &output, "write the trace into DIR", "DIR"},
      {"buffers", 0, 0, G_OPTION_ARG_STRING, &buffers_text,
       "activity buffers in the fixed pool (default 32)", "N"},
      {"buffer-mb", 0, 0, G_OPTION_ARG_STRING, &mb_text, "MiB per activity buffer (default 8)",
       "MB"},
      {NULL}};
  int before = 0;
  int program = split_at_dashes(argc, argv, &before);
  int own_argc = before;
  if (!parse_options("Run a CUDA program under the CUPTI capture library.", entries, &own_argc,
                     &argv, "-- COMMAND [ARGS...]"))
    return EXIT_USAGE;
  if (own_argc != 1)
    return usage_error("capture: options first, then -- and the program");
  if (program < 0)
    return usage_error("capture: no program (-- COMMAND [ARGS...])");
  if (!output)
    return usage_error("capture: -o DIR is required");
  if (!output_named(output))
    return EXIT_USAGE;
  {
    /* found before the folder, an earlier capture's, is claimed and emptied (the spawn failed
     * after it) */
    g_autofree char *found = g_find_program_in_path(argv[program]);
    if (found == NULL) {
      g_autofree char *message = g_strdup_printf(
          "capture: '%s' is not a program (a path, or a name on PATH)", argv[program]);
      return usage_error(message);
    }
  }
  EmaCaptureOptions options = {.dir = output, .argv = argv + program};
  if ((buffers_text && !parse_count("--buffers", buffers_text, 2, 1024, &options.buffers)) ||
      (mb_text && !parse_count("--buffer-mb", mb_text, 1, 256, &options.buffer_mb)))
    return EXIT_USAGE;
  GError *error = NULL;
  g_autofree char *library = ema_capture_find_library(&error);
  if (!library)
    return fail(error);
  options.library = library;
  /* a program without a GPU records nothing: the folder, an earlier capture's, is claimed and
   * emptied only once there is one */
  int devices = 0;
  if (!ema_cuda_device_count(&devices, &error))
    return fail(error);
  int status = 0;
  if (!ema_capture_run(&options, &status, &error))
    return fail(error);
  return status;
}

static int command_profile(int argc, char **argv, const char *command) {
  g_autofree char *output = NULL, *models = NULL, *python = NULL, *workload = NULL;
  g_autofree char *from_capture = NULL;
  gboolean quick = FALSE;
  GOptionEntry entries[] = {
      {"output", 'o', 0, G_OPTION_ARG_FILENAME, &output, "write the tables into DIR", "DIR"},
      {"models", 0, 0, G_OPTION_ARG_STRING, &models,
       "comma-separated models of hwmodels/llms (default: the five of the profile)", "LIST"},
      {"quick", 0, 0, G_OPTION_ARG_NONE, &quick, "a coarse grid (a check that it runs)", NULL},
      {"python", 0, 0, G_OPTION_ARG_FILENAME, &python, "the Python with PyTorch (python3)", "PY"},
      {"workload", 0, 0, G_OPTION_ARG_FILENAME, &workload,
       "the workload script (validate/workloads/opprofile.py)", "FILE"},
      {"from-capture", 0, 0, G_OPTION_ARG_FILENAME, &from_capture,
       "convert an earlier capture directory again, running nothing", "CAPDIR"},
      {NULL}};
  if (!parse_options("Profile operators on GPU0 with PyTorch, through the capture library.",
                     entries, &argc, &argv, ""))
    return EXIT_USAGE;
  if (argc != 1)
    return usage_error("profile takes no arguments besides its options");
  if (!output)
    return usage_error("profile: -o DIR is required");
  if (!output_named(output) ||
      !folder_named("--from-capture", from_capture,
                    "the folder capture -o wrote (or DIR/capture of profile -o DIR)"))
    return EXIT_USAGE;
  if (from_capture && ema_file_same(from_capture, output)) {
    g_autofree char *message =
        g_strdup_printf("--from-capture: '%s' is the -o folder: the profile would replace the "
                        "capture it reads; give another -o",
                        from_capture);
    return usage_error(message);
  }
  GError *error = NULL;
  g_autofree char *capture_dir = g_build_filename(output, "capture", NULL);
  g_autofree char *library = NULL;
  if (!from_capture) {
    if (!workload) {
      const char *dir = g_getenv("EMA_VALIDATE_WORKLOADS");
      workload = g_build_filename(dir && *dir ? dir : EMA_VALIDATE_WORKLOADS, "opprofile.py", NULL);
    }
    if (!g_file_test(workload, G_FILE_TEST_IS_REGULAR)) {
      g_autofree char *message = g_strdup_printf("--workload: %s: no such file", workload);
      return usage_error(message);
    }
    /* before the folder is claimed, which removes an earlier profile */
    g_autofree char *interpreter = g_find_program_in_path(python ? python : "python3");
    if (interpreter == NULL) {
      g_autofree char *message =
          g_strdup_printf("--python: '%s' is not a program (a path, or a name on PATH)",
                          python ? python : "python3");
      return usage_error(message);
    }
    if ((library = ema_capture_find_library(&error)) == NULL)
      return fail(error);
    int devices = 0;
    if (!ema_cuda_device_count(&devices, &error))
      return fail(error);
  }
  /* the folder is claimed, an earlier profile's files going, before a capture runs into it;
   * from an earlier capture, ema_capture_write_profile claims it once the capture has been read
   * and its points checked (a mistyped CAPDIR, or a malformed capture, leaves the earlier
   * profile); capture/ (its own claim) stays */
  if (!from_capture &&
      !ema_output_claim_dir_kind(output, EMA_PROFILE_OUTPUT_KIND, ema_capture_profile_entries,
                                 EMA_OUTPUT_CLAIM_CLEAR, &error))
    return fail(error);
  if (!from_capture) {
    g_autofree char *meta = g_build_filename(capture_dir, "workload.yaml", NULL);
    g_autoptr(GPtrArray) args = g_ptr_array_new();
    g_ptr_array_add(args, python ? python : (char *) "python3");
    g_ptr_array_add(args, workload);
    g_ptr_array_add(args, (char *) "--meta");
    g_ptr_array_add(args, meta);
    if (models) {
      g_ptr_array_add(args, (char *) "--models");
      g_ptr_array_add(args, models);
    }
    if (quick)
      g_ptr_array_add(args, (char *) "--quick");
    g_ptr_array_add(args, NULL);
    EmaCaptureOptions options = {
        .dir = capture_dir, .library = library, .argv = (char **) args->pdata};
    int status = 0;
    if (!ema_capture_run(&options, &status, &error))
      return fail(error);
    if (status != 0) {
      fprintf(stderr,
              "ema-validate: profile: the workload exited with status %d (its trace is "
              "in %s)\n",
              status, capture_dir);
      return 1;
    }
  }
  if (!ema_capture_write_profile(from_capture ? from_capture : capture_dir, output, command,
                                 &error))
    return fail(error);
  return 0;
}

int main(int argc, char **argv) {
  g_autofree char *command = command_line(argc, argv);
  if (argc < 2)
    return usage_error("missing COMMAND");
  if (strcmp(argv[1], "-h") == 0 || strcmp(argv[1], "--help") == 0 ||
      strcmp(argv[1], "help") == 0) {
    fputs(usage_text, stdout);
    return 0;
  }
  if (strcmp(argv[1], "--version") == 0) {
    printf("ema-validate %s\n", EMA_VERSION);
    return 0;
  }
  if (strcmp(argv[1], "calibrate") == 0)
    return command_calibrate(argc - 1, argv + 1, command);
  if (strcmp(argv[1], "decode") == 0)
    return command_decode(argc - 1, argv + 1);
  if (strcmp(argv[1], "devices") == 0)
    return command_devices(argc - 1, argv + 1);
  if (strcmp(argv[1], "run") == 0)
    return command_run(argc - 1, argv + 1, command);
  if (strcmp(argv[1], "compare") == 0)
    return command_compare(argc - 1, argv + 1, command);
  if (strcmp(argv[1], "pool") == 0)
    return command_pool(argc - 1, argv + 1, command);
  if (strcmp(argv[1], "capture") == 0)
    return command_capture(argc - 1, argv + 1);
  if (strcmp(argv[1], "profile") == 0)
    return command_profile(argc - 1, argv + 1, command);
  {
    g_autofree char *message = g_strdup_printf("unknown command '%s' (known: calibrate, capture, "
                                               "compare, decode, devices, pool, profile, run)",
                                               argv[1]);
    return usage_error(message);
  }
}
