/* test-config-input.c: configuration written by hand, at its limits (the 2026-12-07 audit of
 * configuration loading): includes that multiply, a tree past the node limit, a --set value that
 * includes a file, a trace's arrival keys its process does not read, and link and host
 * bandwidths that disagree. Each error is checked whole: its place (file:line:col or
 * --set:N:col), its key path and its words. */
#include <glib.h>
#include <glib/gstdio.h>
#include <string.h>

#include "ema/core/node.h"
#include "ema/run/experiment.h"
#include "testutil.h"

/* ---- helpers ------------------------------------------------------------ */

/* DIR/NAME holds TEXT; returns its path (free with g_free). */
static char *write_file(const char *dir, const char *name, const char *text) {
  char *path = g_build_filename(dir, name, NULL);
  GError *error = NULL;
  g_autofree char *parent = g_path_get_dirname(path);
  g_assert_cmpint(g_mkdir_with_parents(parent, 0755), ==, 0);
  g_file_set_contents(path, text, -1, &error);
  g_assert_no_error(error);
  return path;
}

/* *ERROR is one EMA_CONFIG_ERROR of CODE whose message is MESSAGE; clears it. */
static void assert_error(GError **error, gint code, const char *message) {
  g_assert_nonnull(*error);
  if (g_test_verbose())
    g_test_message("error: %s", (*error)->message);
  g_assert_cmpstr((*error)->message, ==, message);
  g_assert_error(*error, EMA_CONFIG_ERROR, code);
  g_clear_error(error);
}

/* Loading PATH with OVERRIDES (NULL-terminated, or NULL) fails with CODE and MESSAGE. */
static void experiment_fails(const char *path, const char *const *overrides, gint code,
                             const char *message) {
  GError *error = NULL;
  g_autoptr(EmaExperiment) experiment = ema_experiment_load(path, overrides, &error);
  g_assert_null(experiment);
  assert_error(&error, code, message);
}

/* A serving experiment on h200x2 whose one tenant's trace is TRACE (a YAML flow map). */
static char *serving_experiment(const char *dir, const char *trace) {
  g_autofree char *text = g_strdup_printf("name: input\n"
                                          "server: h200x2\n"
                                          "tenants:\n"
                                          "  - name: a\n"
                                          "    model: llama-3.1-8b\n"
                                          "    gpu: 0\n"
                                          "    trace: %s\n",
                                          trace);
  return write_file(dir, "experiment.yaml", text);
}

#define LENGTHS "prompt: {dist: fixed, tokens: 100}, output: {dist: fixed, tokens: 10}"

/* ---- includes and nodes --------------------------------------------------- */

/* A file that includes another 32 times, which includes a third 32 times: 1,056 includes, past
 * the 1,024 one load expands (ten such files, ten times each, were 10^10 includes: a hang).
 * The error is at the include past the limit, in the file that holds it. */
static void test_include_fan_out(void) {
  g_autofree char *dir = ema_test_temp_dir();
  g_autoptr(GString) a = g_string_new(NULL);
  g_autoptr(GString) b = g_string_new(NULL);
  g_autofree char *a_path = NULL, *b_path = NULL, *c_path = NULL, *message = NULL;
  GError *error = NULL;
  for (guint i = 0; i < 32; i++) {
    g_string_append(a, "- !include b.yaml\n");
    g_string_append(b, "- !include c.yaml\n");
  }
  a_path = write_file(dir, "a.yaml", a->str);
  b_path = write_file(dir, "b.yaml", b->str);
  c_path = write_file(dir, "c.yaml", "1\n");
  /* a's first 31 items expand 31 x 33 includes, its 32nd one more: b's first include is the
   * 1,025th */
  g_assert_null(ema_node_load_file(a_path, &error));
  message = g_strdup_printf("%s:1:3: !include c.yaml: more than 1024 includes in one load (each "
                            "counted where it is met: an included file that includes another "
                            "several times multiplies them)",
                            b_path);
  assert_error(&error, EMA_CONFIG_ERROR_SYNTAX, message);
  {
    /* 31 of a's items load: 1,023 includes */
    g_autoptr(GString) fewer = g_string_new(NULL);
    g_autofree char *fewer_path = NULL;
    g_autoptr(EmaNode) root = NULL;
    for (guint i = 0; i < 31; i++)
      g_string_append(fewer, "- !include b.yaml\n");
    fewer_path = write_file(dir, "fewer.yaml", fewer->str);
    root = ema_node_load_file(fewer_path, &error);
    g_assert_no_error(error);
    g_assert_cmpuint(root->items->len, ==, 31);
  }
  ema_test_remove_tree(dir);
}

/* A list of N zeros as flow YAML: "[0,0,...,0]". */
static char *zeros(guint n) {
  GString *text = g_string_sized_new(2 * (gsize) n + 2);
  g_string_append_c(text, '[');
  for (guint i = 0; i < n; i++)
    g_string_append(text, i ? ",0" : "0");
  g_string_append_c(text, ']');
  return g_string_free(text, FALSE);
}

/* A list of 2^20 items is 2^20 + 1 nodes: the error is at its last item, the list and the items
 * before it being 2^20 (a 60 MB list took 62 s and 3.3 GB to load). */
static void test_nodes_max(void) {
  g_autofree char *over = zeros(EMA_NODE_MAX_NODES);
  g_autofree char *message = NULL;
  GError *error = NULL;
  g_assert_null(ema_node_load_string(over, "big.yaml", NULL, &error));
  /* item k (from 0) is at column 2 + 2k */
  message = g_strdup_printf("big.yaml:1:%u: more than 1048576 keys and values in one load (this "
                            "file and its includes): a configuration is far smaller",
                            2 + 2 * (EMA_NODE_MAX_NODES - 1));
  assert_error(&error, EMA_CONFIG_ERROR_SYNTAX, message);
}

/* Keys count too: a map of 2^19 keys, each on a line, is 2^20 + 1 nodes with its values and
 * itself, the last value the one past the limit. */
static void test_nodes_max_keys(void) {
  g_autoptr(GString) text = g_string_new(NULL);
  g_autofree char *message = NULL;
  GError *error = NULL;
  for (guint i = 0; i < EMA_NODE_MAX_NODES / 2; i++)
    g_string_append_printf(text, "k%u: 0\n", i);
  g_assert_null(ema_node_load_string(text->str, "keys.yaml", NULL, &error));
  /* line 2^19, "k524287: 0": the value at column 10 */
  message = g_strdup_printf("keys.yaml:%u:10: more than 1048576 keys and values in one load "
                            "(this file and its includes): a configuration is far smaller",
                            EMA_NODE_MAX_NODES / 2);
  assert_error(&error, EMA_CONFIG_ERROR_SYNTAX, message);
}

/* ---- --set key=!include PATH ---------------------------------------------- */

/* The included file's nodes keep their place: an error in it is at its line and column there
 * (it was --set:1:27, a column of no text), and a trace file it names is found beside it (it was
 * looked for in the working directory). */
static void test_set_include_places(void) {
  g_autofree char *dir = ema_test_temp_dir();
  g_autofree char *experiment = serving_experiment(dir, "{arrivals: poisson, rate: 1, "
                                                        "duration: 5s, " LENGTHS "}");
  const char *csv = "TIMESTAMP,ContextTokens,GeneratedTokens\n"
                    "2023-11-16 18:15:46.6805900,374,44\n"
                    "2023-11-16 18:15:50.9951690,396,109\n";
  g_autofree char *data = write_file(dir, "sub/data.csv", csv);
  g_autofree char *good = write_file(dir, "sub/trace.yaml", "file: data.csv\nrate_scale: 1\n");
  g_autofree char *bad = write_file(dir, "sub/bad.yaml", "file: data.csv\n\n\nduration: -5s\n");
  g_autofree char *broken = write_file(dir, "sub/broken.yaml", "{gpus: 2,\n");
  g_autofree char *set_good = g_strdup_printf("tenants.0.trace=!include %s", good);
  g_autofree char *set_bad = g_strdup_printf("tenants.0.trace=!include %s", bad);
  g_autofree char *set_broken = g_strdup_printf("server=!include %s", broken);
  g_autofree char *bad_message = g_strdup_printf(
      "%s:4:11: tenants.0.trace.duration: negative duration '-5s' is not allowed", bad);
  g_autofree char *broken_message = g_strdup_printf(
      "%s:2:1: did not find expected node content while parsing a flow node", broken);
  const char *const with_good[] = {set_good, NULL};
  const char *const with_bad[] = {set_bad, NULL};
  const char *const with_broken[] = {set_broken, NULL};
  GError *error = NULL;
  g_autoptr(EmaExperiment) loaded = ema_experiment_load(experiment, with_good, &error);
  const EmaTenantSpec *tenant;

  g_assert_no_error(error);
  tenant = &g_array_index(loaded->tenants, EmaTenantSpec, 0);
  g_assert_cmpstr(tenant->trace.file, ==, data);
  experiment_fails(experiment, with_bad, EMA_CONFIG_ERROR_RANGE, bad_message);
  /* a syntax error in the included file is at its place there, not a --set's "bad value" */
  experiment_fails(experiment, with_broken, EMA_CONFIG_ERROR_SYNTAX, broken_message);
  ema_test_remove_tree(dir);
}

/* The value's own text keeps its --set:N:col places, around an include too. */
static void test_set_include_own_text(void) {
  g_autofree char *dir = ema_test_temp_dir();
  g_autofree char *experiment = serving_experiment(dir, "{arrivals: poisson, rate: 1, "
                                                        "duration: 5s, " LENGTHS "}");
  g_autofree char *prompt = write_file(dir, "prompt.yaml", "{dist: fixed, tokens: 100}\n");
  g_autofree char *set = g_strdup_printf(
      "tenants.0.trace={arrivals: poisson, rate: -1, duration: 5s, prompt: !include %s, "
      "output: {dist: fixed, tokens: 10}}",
      prompt);
  g_autofree char *missing = g_build_filename(dir, "missing.yaml", NULL);
  g_autofree char *set_missing = g_strdup_printf("server=!include %s", missing);
  g_autofree char *missing_message = g_strdup_printf(
      "--set:1:8: server: bad value: !include %s: %s: cannot open: No such file or directory",
      missing, missing);
  const char *const overrides[] = {set, NULL};
  const char *const with_missing[] = {set_missing, NULL};
  experiment_fails(experiment, overrides, EMA_CONFIG_ERROR_RANGE,
                   "--set:1:43: tenants.0.trace.rate: -1 is out of range [1e-09, 1000000000]");
  experiment_fails(experiment, with_missing, EMA_CONFIG_ERROR_SYNTAX, missing_message);
  ema_test_remove_tree(dir);
}

/* ---- a trace's keys ------------------------------------------------------- */

/* phases beside another arrival process, or beside a closed loop, is an error at the key, as
 * rate or cv beside a process that does not read them is: the run used the other process and
 * dropped the phases without a word. */
static void test_phases_unused(void) {
  g_autofree char *dir = ema_test_temp_dir();
  g_autofree char *poisson =
      serving_experiment(dir, "{arrivals: poisson, rate: 1, duration: 5s,\n"
                              "      phases: [{duration: 1s, rate: 8}], " LENGTHS "}");
  g_autofree char *poisson_message =
      g_strdup_printf("%s:8:7: tenants.0.trace.phases: not used by arrivals: poisson", poisson);
  experiment_fails(poisson, NULL, EMA_CONFIG_ERROR_KEY, poisson_message);
  {
    g_autofree char *closed = serving_experiment(
        dir, "{concurrency: 2, requests: 10, phases: [{duration: 1s, rate: 8}], " LENGTHS "}");
    g_autofree char *closed_message =
        g_strdup_printf("%s:7:43: tenants.0.trace.phases: not used by arrivals: file", closed);
    experiment_fails(closed, NULL, EMA_CONFIG_ERROR_KEY, closed_message);
  }
  {
    /* the --set's key is where the error is */
    g_autofree char *phases = serving_experiment(
        dir, "{arrivals: phases, phases: [{duration: 1s, rate: 8}], duration: 5s, " LENGTHS "}");
    const char *const overrides[] = {"tenants.0.trace.arrivals=gamma", "tenants.0.trace.rate=2",
                                     "tenants.0.trace.cv=2", NULL};
    g_autofree char *message =
        g_strdup_printf("%s:7:31: tenants.0.trace.phases: not used by arrivals: gamma", phases);
    experiment_fails(phases, overrides, EMA_CONFIG_ERROR_KEY, message);
  }
  ema_test_remove_tree(dir);
}

/* ---- bandwidths that disagree ------------------------------------------- */

/* The error names both values and is at the one a --set gave, not at the model file's value it
 * contradicts (a user who set server.link.bandwidth was sent to h200x2.yaml's
 * duplex_bandwidth, told "must lie between bandwidth and twice bandwidth"). */
static void test_bandwidths_disagree(void) {
  g_autofree char *dir = ema_test_temp_dir();
  g_autofree char *experiment = serving_experiment(dir, "{arrivals: poisson, rate: 1, "
                                                        "duration: 5s, " LENGTHS "}");
  const char *const link_slow[] = {"server.link.bandwidth=100GB/s", NULL};
  const char *const duplex_slow[] = {"server.link.duplex_bandwidth=100GB/s", NULL};
  const char *const direct_fast[] = {"server.link.direct_read_bandwidth=500GB/s", NULL};
  const char *const h2d_fast[] = {"server.host.h2d_bandwidth=200GB/s", NULL};
  const char *const d2h_slow[] = {"server.host.d2h_bandwidth=20GB/s", NULL};
  experiment_fails(experiment, link_slow, EMA_CONFIG_ERROR_INVALID,
                   "--set:1:23: server.link.bandwidth: duplex_bandwidth 784GB/s must lie "
                   "between bandwidth (100GB/s) and twice it (200GB/s)");
  experiment_fails(experiment, duplex_slow, EMA_CONFIG_ERROR_INVALID,
                   "--set:1:30: server.link.duplex_bandwidth: duplex_bandwidth 100GB/s must lie "
                   "between bandwidth (397GB/s) and twice it (794GB/s)");
  experiment_fails(experiment, direct_fast, EMA_CONFIG_ERROR_INVALID,
                   "--set:1:35: server.link.direct_read_bandwidth: direct_read_bandwidth "
                   "500GB/s cannot exceed the link bandwidth (397GB/s)");
  experiment_fails(experiment, h2d_fast, EMA_CONFIG_ERROR_INVALID,
                   "--set:1:27: server.host.h2d_bandwidth: duplex_bandwidth 110.7GB/s must lie "
                   "between the faster direction (200GB/s) and the sum of both (255.3GB/s)");
  experiment_fails(experiment, d2h_slow, EMA_CONFIG_ERROR_INVALID,
                   "--set:1:27: server.host.d2h_bandwidth: duplex_bandwidth 110.7GB/s must lie "
                   "between the faster direction (55.4GB/s) and the sum of both (75.4GB/s)");
  ema_test_remove_tree(dir);
}

/* A server file of its own whose link disagrees with itself: at its duplex_bandwidth there. */
static void test_bandwidths_disagree_in_file(void) {
  g_autofree char *dir = ema_test_temp_dir();
  g_autofree char *source = g_strdup(g_getenv("EMA_SOURCE_ROOT"));
  g_autofree char *gpu = g_build_filename(source, "hwmodels", "gpus", "h200-sxm.yaml", NULL);
  g_autofree char *server_text =
      g_strdup_printf("name: two\n"
                      "gpus: 2\n"
                      "gpu: !include %s\n"
                      "topology: direct\n"
                      "link: {bandwidth: 100GB/s, duplex_bandwidth: 300GB/s,\n"
                      "       direct_read_bandwidth: 90GB/s, latency: 1us, copy_fixed_cost: 6us}\n"
                      "host: {h2d_bandwidth: 50GB/s, d2h_bandwidth: 50GB/s,\n"
                      "       duplex_bandwidth: 100GB/s, copy_fixed_cost: 5us}\n",
                      gpu);
  g_autofree char *server = write_file(dir, "two.yaml", server_text);
  g_autofree char *experiment_text = g_strdup_printf(
      "name: own-server\n"
      "server: !include %s\n"
      "ops:\n"
      "  - {name: copy, flows: [{kind: copy, src: gpu0, dst: gpu1, bytes: 1GiB}]}\n",
      server);
  g_autofree char *experiment = write_file(dir, "own.yaml", experiment_text);
  g_autofree char *message =
      g_strdup_printf("%s:5:46: server.link.duplex_bandwidth: duplex_bandwidth 300GB/s must lie "
                      "between bandwidth (100GB/s) and twice it (200GB/s)",
                      server);
  experiment_fails(experiment, NULL, EMA_CONFIG_ERROR_INVALID, message);
  ema_test_remove_tree(dir);
}

int main(int argc, char **argv) {
  g_test_init(&argc, &argv, NULL);
  g_test_add_func("/config-input/include/fan-out", test_include_fan_out);
  g_test_add_func("/config-input/nodes/max", test_nodes_max);
  g_test_add_func("/config-input/nodes/max-keys", test_nodes_max_keys);
  g_test_add_func("/config-input/set-include/places", test_set_include_places);
  g_test_add_func("/config-input/set-include/own-text", test_set_include_own_text);
  g_test_add_func("/config-input/trace/phases-unused", test_phases_unused);
  g_test_add_func("/config-input/hwmodel/bandwidths-disagree", test_bandwidths_disagree);
  g_test_add_func("/config-input/hwmodel/bandwidths-disagree-in-file",
                  test_bandwidths_disagree_in_file);
  return g_test_run();
}
