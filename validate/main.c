/* main.c: the ema-validate command line. Subcommands:
 *   calibrate   measure GPU0 and GPU1 and write a server model + raw CSVs
 *               (--from-results DIR: derive the model again, without a GPU)
 *   decode      time a synthetic decode step of a model on the GPUs
 *   devices     list the CUDA devices and their peer access
 * Every argument is checked before the first CUDA call, so --help and
 * usage errors work on a machine without a GPU or driver. Usage errors
 * (anything wrong on the command line, found before CUDA starts) print
 * "ema-validate: MESSAGE" and "Try 'ema-validate --help'." and exit 2; a
 * failure on the GPU (no device, a CUDA error, a mismatch with the CPU
 * reference) prints one line and exits 1. */
#include <stdio.h>
#include <string.h>

#include "calderive.h"
#include "calibrate.h"
#include "cudacheck.h"
#include "decode.h"
#include "decodeplan.h"
#include "ema/experiment.h"
#include "ema/units.h"

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
    "                         derive the model again from a results directory (no GPU)\n"
    "  decode --model NAME --batch B --context C [--remote-fraction F]\n"
    "         [--mode local|direct|prefetch] [--prefetch-depth LAYERS] [--repeats N]\n"
    "         [--warmups N] [--csv FILE] [--server NAME] [--no-graph] [--no-verify]\n"
    "                         time a synthetic decode step of a model (hwmodels/llms) on\n"
    "                         GPU0 with a fraction F of its KV blocks on GPU1\n"
    "  devices                list the CUDA devices and their peer access\n"
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

static int fail(GError *error) {
  fprintf(stderr, "ema-validate: %s\n", error->message);
  g_error_free(error);
  return 1;
}

static gboolean parse_options(const char *summary, GOptionEntry *entries, int *argc, char ***argv,
                              const char *parameter_string) {
  g_autoptr(GOptionContext) context = g_option_context_new(parameter_string);
  g_autoptr(GError) error = NULL;
  g_autofree char *program = g_strconcat("ema-validate ", (*argv)[0], NULL);
  g_set_prgname(program);
  g_option_context_set_summary(context, summary);
  g_option_context_add_main_entries(context, entries, NULL);
  if (!g_option_context_parse(context, argc, argv, &error)) {
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

/* The command line, each argument quoted for the shell when it needs it. */
static char *command_line(int argc, char **argv) {
  GString *line = g_string_new(NULL);
  for (int i = 0; i < argc; i++) {
    gboolean plain =
        argv[i][0] != '\0' && strspn(argv[i], "abcdefghijklmnopqrstuvwxyz"
                                              "ABCDEFGHIJKLMNOPQRSTUVWXYZ"
                                              "0123456789-_./=:,%+") == strlen(argv[i]);
    g_autofree char *quoted = plain ? g_strdup(argv[i]) : g_shell_quote(argv[i]);
    if (i > 0)
      g_string_append_c(line, ' ');
    g_string_append(line, quoted);
  }
  return g_string_free(line, FALSE);
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
       "needed)",
       "DIR"},
      {NULL}};
  static const char *const topologies[] = {"direct", "switch", "pcie"};
  g_autoptr(EmaServerSpec) reference_model = NULL;

  if (!parse_options("Measure GPU0 and GPU1 and write a calibrated server model.", entries, &argc,
                     &argv, ""))
    return EXIT_USAGE;
  if (argc != 1)
    return usage_error("calibrate takes no arguments besides its options");
  if (from_results && (name || results || quick || repeats_text || topology))
    return usage_error("--from-results takes only -o and --reference (the rest comes from the "
                       "results directory)");
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
  EmaDecodeRunOptions run = {20, 3, TRUE, TRUE, NULL, NULL};
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

  if (!ema_decode_run(plan, model, &run, &error))
    return fail(error);
  return 0;
}

static int command_devices(int argc, char **argv) {
  GError *error = NULL;
  g_autofree char *driver = NULL, *cuda = NULL;
  int count = 0;
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
  {
    g_autofree char *message =
        g_strdup_printf("unknown command '%s' (known: calibrate, decode, devices)", argv[1]);
    return usage_error(message);
  }
}
