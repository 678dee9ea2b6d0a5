/* main.c: the ema-sim command line. Subcommands:
 *   run FILE [-o DIR] [--seed N] [--set k=v]...   run an experiment
 *   check FILE [--set k=v]...                     load and check only
 *   list hwmodels                                 known server models
 *   describe hwmodel NAME                         one model, every value
 * Errors print one line (file:line:col: key: problem) on stderr and exit 1;
 * usage errors exit 2. */
#include <locale.h>
#include <stdio.h>
#include <string.h>
#include <unistd.h>

#include "ema/experiment.h"
#include "ema/ops.h"
#include "ema/output.h"
#include "ema/units.h"

#define EXIT_USAGE 2

static const char usage_text[] =
    "Usage: ema-sim COMMAND [OPTIONS]\n"
    "\n"
    "Discrete-event simulator of elastic memory sharing between the GPUs of a server.\n"
    "\n"
    "Commands:\n"
    "  run FILE [-o DIR] [--seed N] [--set key.path=value]...\n"
    "                         run an experiment; writes DIR/resolved.yaml and DIR/summary.json\n"
    "                         (serving runs also DIR/requests.csv and DIR/timeline.csv)\n"
    "  check FILE [--set key.path=value]...\n"
    "                         load and check an experiment without running it\n"
    "  list hwmodels          list the server models (EMA_HWMODEL_PATH, then built-in)\n"
    "  describe hwmodel NAME  print one server model with every value\n"
    "\n"
    "Options:\n"
    "  -h, --help             show help (also: ema-sim COMMAND --help)\n"
    "  --version              print the version\n";

static int fail(GError *error) {
  fprintf(stderr, "%s\n", error->message);
  g_error_free(error);
  return 1;
}

static int usage_error(const char *message) {
  fprintf(stderr, "ema-sim: %s\nTry 'ema-sim --help'.\n", message);
  return EXIT_USAGE;
}

/* Parse a subcommand's options; returns FALSE (and prints) on a usage error. */
static gboolean parse_options(const char *summary, GOptionEntry *entries, int *argc, char ***argv,
                              const char *parameter_string) {
  g_autoptr(GOptionContext) context = g_option_context_new(parameter_string);
  g_autoptr(GError) error = NULL;
  g_option_context_set_summary(context, summary);
  g_option_context_add_main_entries(context, entries, NULL);
  if (!g_option_context_parse(context, argc, argv, &error)) {
    usage_error(error->message);
    return FALSE;
  }
  return TRUE;
}

static int run_ops(const EmaExperiment *experiment, const char *out_dir) {
  GError *error = NULL;
  gint64 wall_start = g_get_monotonic_time();
  g_autoptr(EmaOpsReport) report = ema_ops_run(experiment, &error);
  double wall_s = (double) (g_get_monotonic_time() - wall_start) / 1e6;
  if (report == NULL)
    return fail(error);
  if (!ema_output_write_ops_summary(out_dir, experiment, report, wall_s, &error))
    return fail(error);
  ema_output_print_ops(stdout, report);
  printf("results in %s/\n", out_dir);
  if (report->failed) {
    fprintf(stderr, "%u of %u expectations missed\n", report->failed, report->ops->len);
    return 1;
  }
  return 0;
}

static int run_serving(const EmaExperiment *experiment, const char *out_dir) {
  GError *error = NULL;
  g_autoptr(EmaServingReport) report =
      ema_serving_run(experiment, out_dir, isatty(STDERR_FILENO), &error);
  if (report == NULL)
    return fail(error);
  if (!ema_output_write_serving_summary(out_dir, experiment, report, &error))
    return fail(error);
  ema_output_print_serving(stdout, report);
  printf("results in %s/ (summary.json, requests.csv, timeline.csv, resolved.yaml)\n", out_dir);
  return 0;
}

static int command_run(int argc, char **argv, gboolean check_only) {
  g_autofree char *out_dir = NULL;
  g_auto(GStrv) overrides = NULL;
  g_autofree char *seed_text = NULL;
  gint64 seed = 0;
  GError *error = NULL;
  g_autoptr(EmaExperiment) experiment = NULL;
  GOptionEntry run_entries[] = {{"output", 'o', 0, G_OPTION_ARG_FILENAME, &out_dir,
                                 "Directory for the results (default: results/NAME)", "DIR"},
                                {"seed", 0, 0, G_OPTION_ARG_STRING, &seed_text,
                                 "Seed of all random streams, 0 or more (overrides the file)", "N"},
                                {"set", 0, 0, G_OPTION_ARG_STRING_ARRAY, &overrides,
                                 "Override one value, e.g. --set server.gpus=4 (repeatable)",
                                 "KEY.PATH=VALUE"},
                                {NULL}};
  GOptionEntry check_entries[] = {run_entries[2], {NULL}};

  if (!parse_options(check_only ? "Load and check an experiment file." : "Run an experiment.",
                     check_only ? check_entries : run_entries, &argc, &argv, "FILE"))
    return EXIT_USAGE;
  if (argc != 2)
    return usage_error(argc < 2 ? "missing experiment FILE" : "too many arguments");
  if (seed_text && (!ema_units_parse_int(seed_text, &seed, NULL) || seed < 0)) {
    g_autofree char *message =
        g_strdup_printf("--seed: '%s' is not a whole number >= 0", seed_text);
    return usage_error(message);
  }

  experiment = ema_experiment_load(argv[1], (const char *const *) overrides, &error);
  if (experiment == NULL)
    return fail(error);
  if (seed_text)
    experiment->seed = seed;
  if (check_only) {
    if (ema_experiment_is_serving(experiment))
      printf("%s: ok (%s on %s, %u tenants)\n", argv[1], experiment->name, experiment->server.name,
             experiment->tenants->len);
    else
      printf("%s: ok (%s on %s, %u ops)\n", argv[1], experiment->name, experiment->server.name,
             experiment->ops->len);
    return 0;
  }
  if (out_dir == NULL)
    out_dir = g_build_filename("results", experiment->name, NULL);
  if (!ema_output_prepare_dir(out_dir, &error) ||
      !ema_output_write_resolved(out_dir, experiment, &error))
    return fail(error);
  printf("%s on %s (%" G_GINT64_FORMAT " GPUs)\n", experiment->name, experiment->server.name,
         experiment->server.gpus);
  return ema_experiment_is_serving(experiment) ? run_serving(experiment, out_dir)
                                               : run_ops(experiment, out_dir);
}

static int command_list(int argc, char **argv) {
  g_autoptr(GPtrArray) names = NULL;
  if (argc != 2 || strcmp(argv[1], "hwmodels") != 0)
    return usage_error("usage: ema-sim list hwmodels");
  names = ema_hwmodel_list();
  for (guint i = 0; i < names->len; i++) {
    GError *error = NULL;
    g_autoptr(EmaServerSpec) server = ema_server_load(names->pdata[i], &error);
    if (server)
      printf("%-16s %s\n", (char *) names->pdata[i], server->summary);
    else {
      printf("%-16s (does not load: %s)\n", (char *) names->pdata[i], error->message);
      g_error_free(error);
    }
  }
  return 0;
}

static int command_describe(int argc, char **argv) {
  GError *error = NULL;
  g_autoptr(EmaServerSpec) server = NULL;
  g_autoptr(GString) text = g_string_new(NULL);
  g_autofree char *hbm = NULL;
  if (argc != 3 || strcmp(argv[1], "hwmodel") != 0)
    return usage_error("usage: ema-sim describe hwmodel NAME");
  server = ema_server_load(argv[2], &error);
  if (server == NULL)
    return fail(error);
  ema_params_write_yaml(&ema_server_params, server, text, 0);
  hbm = ema_units_format_size(server->gpu.hbm_capacity * (guint64) server->gpus);
  g_string_append_printf(text,
                         "# derived: total HBM %s; a peer link streams %.1f%% of local HBM "
                         "bandwidth (%.1fx slower)\n",
                         hbm, 100 * server->link.bandwidth / server->gpu.hbm_bandwidth,
                         server->gpu.hbm_bandwidth / server->link.bandwidth);
  fputs(text->str, stdout);
  return 0;
}

int main(int argc, char **argv) {
  const char *command;
  setlocale(LC_ALL, "");
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
  /* the subcommand parsers see "ema-sim COMMAND" as their program name */
  argv[1] = g_strconcat("ema-sim ", command, NULL);
  if (strcmp(command, "run") == 0)
    return command_run(argc - 1, argv + 1, FALSE);
  if (strcmp(command, "check") == 0)
    return command_run(argc - 1, argv + 1, TRUE);
  if (strcmp(command, "list") == 0)
    return command_list(argc - 1, argv + 1);
  if (strcmp(command, "describe") == 0)
    return command_describe(argc - 1, argv + 1);
  {
    g_autofree char *message =
        g_strdup_printf("unknown command '%s' (commands: run, check, list, describe)", command);
    return usage_error(message);
  }
}
