/* test-pool-contract.c: the contract every policy keeps, checked over every
 * policy in the registry, of every kind: the built-ins, the test policies
 * of testpolicies.h, and the example plugin (policies/examples/, its path
 * in EMA_TEST_POLICY_NEIGHBOUR; skipped, and said so, without it). A policy
 * registered tomorrow is covered with no change here.
 *
 * Each policy runs composed with the default partners of the other two
 * kinds (borrow most-idle, prefetch layer-ahead, reclaim migrate: `ema`'s
 * before it offloaded) on tests/fixtures/pool/tiny.yaml (4x A100-40GB, OPT-13B: a burst
 * on GPU 0, a later burst on GPU 1, a light GPU 2, an idle GPU 3 that lends
 * 5%), and must:
 *   defaults   - have valid defaults (ema_params_check_defaults), and bind
 *                from an experiment that gives none;
 *   determinism- give byte-identical requests.csv, timeline.csv and
 *                summary.json (but wall_s) in two runs;
 *   ledger     - never break the ledger (ema_pool_check every simulated
 *                millisecond and at the end), and finish every request of
 *                the tiny trace (none rejected, none left);
 *   fault      - survive every GPU suddenly reclaiming everything it lends
 *                (ema_pool_reclaim_everything at 0.5, 1, 2 and 3 s): the
 *                ledger holds and every request still finishes; again with
 *                preempted requests parked on peers (preempt: swap-peer),
 *                and parked or recomputed by their price (cheaper).
 * Then the named compositions (every one registered) each load with
 * `policy: NAME` and run the tiny scenario, and `static` gives the same
 * outputs as an experiment with no policy key; `offload`'s borrow policy
 * gives back room its remote limit does not admit, and says so; `ema` with
 * placement on (most-idle's place) moves KV, logs each move and keeps the
 * ledger through the faults; and every composition keeps the ledger
 * through the faults on tests/fixtures/pool/tiny-tp.yaml, where the
 * lenders are the ranks of a TP group (/pool/composition/NAME/tp-group). */
#include <string.h>

#include <glib/gstdio.h>

#include "ema/run/experiment.h"
#include "ema/run/output.h"
#include "ema/pool/registry.h"
#include "ema/run/serving.h"

#include "rig.h"
#include "testpolicies.h"
#include "testutil.h"

static const char *const default_partner[] = {"most-idle", "layer-ahead", "migrate"};

typedef struct {
  EmaPolicyKind kind;
  char *name;
} Case;

/* ---- helpers ------------------------------------------------------------------ */

static EmaExperiment *load_with(const char *const *overrides) {
  g_autofree char *path = ema_test_fixture("pool", "tiny.yaml");
  GError *error = NULL;
  EmaExperiment *experiment = ema_experiment_load(path, overrides, &error);
  g_assert_no_error(error);
  g_assert_nonnull(experiment);
  return experiment;
}

/* The tiny scenario with the case's policy and the default partners, and
 * PREEMPT as the policy's preemption choice (NULL: the default). */
static EmaExperiment *load_case_preempt(const Case *c, const char *preempt) {
  const char *names[3];
  g_autofree char *policy = NULL;
  for (guint k = 0; k < 3; k++)
    names[k] = k == c->kind ? c->name : default_partner[k];
  policy = g_strdup_printf("policy={borrow: %s, prefetch: %s, reclaim: %s}", names[0], names[1],
                           names[2]);
  {
    g_autofree char *choice = preempt ? g_strconcat("policy.preempt=", preempt, NULL) : NULL;
    const char *overrides[] = {policy, choice, NULL};
    EmaExperiment *experiment = load_with(overrides);
    g_assert_cmpstr(experiment->policy.borrow, ==, names[0]);
    g_assert_cmpstr(experiment->policy.prefetch, ==, names[1]);
    g_assert_cmpstr(experiment->policy.reclaim, ==, names[2]);
    return experiment;
  }
}

static EmaExperiment *load_case(const Case *c) {
  return load_case_preempt(c, NULL);
}

/* DIR's summary.json without the wall-clock time. */
static char *summary_text(const char *dir) {
  g_autofree char *text = ema_test_read_file(dir, "summary.json");
  return ema_test_summary_without_wall(text);
}

/* Run EXPERIMENT into a new temporary directory (returned): requests.csv,
 * timeline.csv, summary.json. */
static char *run_into_dir(const EmaExperiment *experiment, EmaServingReport **report_out) {
  char *dir = ema_test_temp_dir();
  GError *error = NULL;
  EmaServingReport *report = ema_serving_run(experiment, dir, FALSE, &error);
  g_assert_no_error(error);
  g_assert_nonnull(report);
  g_assert_true(ema_output_write_serving_summary(dir, experiment, report, &error));
  g_assert_no_error(error);
  if (report_out)
    *report_out = report;
  else
    ema_serving_report_free(report);
  return dir;
}

static void assert_same_outputs(const char *a, const char *b) {
  const char *files[] = {"requests.csv", "timeline.csv"};
  for (guint i = 0; i < G_N_ELEMENTS(files); i++) {
    g_autofree char *ta = ema_test_read_file(a, files[i]);
    g_autofree char *tb = ema_test_read_file(b, files[i]);
    g_assert_cmpuint(strlen(ta), >, 0);
    if (strcmp(ta, tb) != 0)
      g_error("%s differs between %s and %s", files[i], a, b);
  }
  {
    g_autofree char *sa = summary_text(a);
    g_autofree char *sb = summary_text(b);
    g_assert_cmpstr(sa, ==, sb);
  }
}

static void assert_all_finished(const EmaServingReport *report, guint64 expected) {
  guint64 completed = 0;
  for (guint i = 0; i < report->tenants->len; i++) {
    const EmaTenantResult *result = report->tenants->pdata[i];
    g_assert_cmpuint(result->rejected, ==, 0);
    g_assert_cmpuint(result->unfinished, ==, 0);
    completed += result->metrics->completed;
  }
  g_assert_cmpuint(completed, ==, expected);
}

/* ---- the contract ---------------------------------------------------------------- */

static void test_defaults(gconstpointer data) {
  const Case *c = data;
  GError *error = NULL;
  const EmaPolicyInfo *info = ema_policy_registry_find(c->kind, c->name, &error);
  g_autoptr(EmaExperiment) experiment = NULL;
  g_assert_no_error(error);
  g_assert_nonnull(info);
  g_assert_nonnull(info->summary);
  g_assert_cmpstr(info->summary, !=, "");
  if (info->params) {
    g_assert_true(ema_params_check_defaults(info->params, &error));
    g_assert_no_error(error);
  }
  /* an experiment that names it with no parameters binds its defaults */
  experiment = load_case(c);
  {
    gconstpointer bound[] = {experiment->policy.borrow_params, experiment->policy.prefetch_params,
                             experiment->policy.reclaim_params};
    if (info->params)
      g_assert_nonnull(bound[c->kind]);
    else
      g_assert_null(bound[c->kind]);
  }
}

static void test_deterministic(gconstpointer data) {
  const Case *c = data;
  g_autoptr(EmaExperiment) first = load_case(c);
  g_autoptr(EmaExperiment) second = load_case(c);
  g_autofree char *a = run_into_dir(first, NULL);
  g_autofree char *b = run_into_dir(second, NULL);
  assert_same_outputs(a, b);
  ema_test_remove_tree(a);
  ema_test_remove_tree(b);
}

static void test_ledger(gconstpointer data) {
  const Case *c = data;
  g_autoptr(EmaExperiment) experiment = load_case(c);
  g_autoptr(Rig) rig = NULL;
  GError *error = NULL;
  rig = rig_new(experiment, &error);
  g_assert_no_error(error);
  rig_check_every(rig, EMA_MS(1));
  g_assert_true(rig_run(rig, &error));
  g_assert_no_error(error);
  g_assert_cmpuint(rig->checks, >, 1000);
  g_assert_cmpuint(rig_rejected(rig), ==, 0);
  g_assert_cmpuint(rig_unfinished(rig), ==, 0);
  g_assert_cmpuint(rig_completed(rig), ==, rig_expected_requests(rig));
  g_test_message("%s %s: %" G_GUINT64_FORMAT " borrows, %" G_GUINT64_FORMAT
                 " reclaims, %" G_GUINT64_FORMAT " remote steps, %" G_GUINT64_FORMAT
                 " plan actions adjusted",
                 ema_policy_kind_name(c->kind), c->name, ema_pool_stats(rig->pool)->borrows,
                 ema_pool_stats(rig->pool)->reclaims, ema_pool_stats(rig->pool)->remote_steps,
                 ema_pool_stats(rig->pool)->plans_adjusted);
}

/* When every GPU takes back all it lends (run_with_faults). */
static const EmaTime fault_times[] = {EMA_MS(500), EMA_S(1), EMA_S(2), EMA_S(3)};

/* EXPERIMENT's run through the rig, the ledger checked every millisecond
 * and every GPU taking back all it lends at each of fault_times; sets
 * *CAUGHT to the slices they found lent. */
static Rig *run_with_faults(const EmaExperiment *experiment, guint64 *caught) {
  Rig *rig;
  GError *error = NULL;
  RigFault *faults[G_N_ELEMENTS(fault_times)];
  rig = rig_new(experiment, &error);
  g_assert_no_error(error);
  rig_check_every(rig, EMA_MS(1));
  for (guint i = 0; i < G_N_ELEMENTS(fault_times); i++)
    faults[i] = rig_fault_at(rig, fault_times[i]);
  g_assert_true(rig_run(rig, &error));
  g_assert_no_error(error);
  *caught = 0;
  for (guint i = 0; i < G_N_ELEMENTS(fault_times); i++) {
    g_assert_true(faults[i]->fired);
    *caught += faults[i]->lent_before;
  }
  return rig;
}

static void run_faults(const Case *c, const char *preempt) {
  g_autoptr(EmaExperiment) experiment = load_case_preempt(c, preempt);
  guint64 caught;
  g_autoptr(Rig) rig = run_with_faults(experiment, &caught);
  g_assert_cmpuint(rig_rejected(rig), ==, 0);
  g_assert_cmpuint(rig_unfinished(rig), ==, 0);
  g_assert_cmpuint(rig_completed(rig), ==, rig_expected_requests(rig));
  g_test_message("%s %s (preempt %s): the faults took back %" G_GUINT64_FORMAT
                 " lent slices; %" G_GUINT64_FORMAT " preemptions",
                 ema_policy_kind_name(c->kind), c->name, preempt ? preempt : "engine", caught,
                 rig_preemptions(rig));
  /* with most-idle borrowing (every case but the borrow policies') the
   * faults do find memory lent: the scenario exercises them */
  if (c->kind != EMA_POLICY_BORROW)
    g_assert_cmpuint(caught, >, 0);
}

static void test_fault(gconstpointer data) {
  run_faults(data, NULL);
}

/* The same with preempted requests parked on peers (policy preempt:
 * swap-peer), whose parked KV the faults and the lenders' own demand evict. */
static void test_fault_swap_peer(gconstpointer data) {
  run_faults(data, "swap-peer");
}

/* The same with each preempted request parked or recomputed by its price
 * (policy preempt: cheaper). */
static void test_fault_cheaper(gconstpointer data) {
  run_faults(data, "cheaper");
}

/* ---- compositions ------------------------------------------------------------------ */

/* Composition DATA on tiny-tp.yaml through the faults: the ledger holds
 * every millisecond, every request finishes, and under a composition that
 * borrows the bursts borrow from the group, whose slices the faults take
 * back. */
static void test_composition_group(gconstpointer data) {
  const char *name = data;
  g_autofree char *path = ema_test_fixture("pool", "tiny-tp.yaml");
  g_autofree char *policy = g_strconcat("policy=", name, NULL);
  const char *overrides[] = {policy, NULL};
  GError *error = NULL;
  g_autoptr(EmaExperiment) experiment = ema_experiment_load(path, overrides, &error);
  guint64 caught;
  g_autoptr(Rig) rig = NULL;
  g_assert_no_error(error);
  rig = run_with_faults(experiment, &caught);
  g_assert_cmpuint(rig_rejected(rig), ==, 0);
  g_assert_cmpuint(rig_unfinished(rig), ==, 0);
  g_assert_cmpuint(rig_completed(rig), ==, rig_expected_requests(rig));
  g_test_message("%s on a TP group: the faults took back %" G_GUINT64_FORMAT
                 " lent slices; %" G_GUINT64_FORMAT " borrows",
                 name, caught, ema_pool_stats(rig->pool)->borrows);
  if (strcmp(name, "ema") == 0 || strcmp(name, "offload") == 0)
    g_assert_cmpuint(caught, >, 0);
}

static void test_composition(gconstpointer data) {
  const char *name = data;
  g_autofree char *policy = g_strconcat("policy=", name, NULL);
  const char *overrides[] = {policy, "sample_period=1ms", NULL};
  g_autoptr(EmaExperiment) experiment = load_with(overrides);
  g_autoptr(EmaServingReport) report = NULL;
  GError *error = NULL;
  g_assert_cmpstr(experiment->policy.name, ==, name);
  /* the serving sampler checks the ledger every sample_period */
  report = ema_serving_run(experiment, NULL, FALSE, &error);
  g_assert_no_error(error);
  g_assert_nonnull(report);
  assert_all_finished(report, 216);
  if (strcmp(experiment->policy.borrow, "none") == 0) {
    g_assert_cmpuint(report->pool.borrows, ==, 0);
    g_assert_cmpuint(report->pool.remote_steps, ==, 0);
  } else {
    g_assert_cmpuint(report->pool.borrows, >, 0);
    g_assert_cmpuint(report->pool.remote_steps, >, 0);
  }
}

static void test_static_is_default(void) {
  const char *overrides[] = {"policy=static", NULL};
  g_autoptr(EmaExperiment) plain = load_with(NULL);
  g_autoptr(EmaExperiment) named = load_with(overrides);
  g_autofree char *a = NULL, *b = NULL;
  g_assert_cmpstr(plain->policy.name, ==, "static");
  g_assert_cmpstr(plain->policy.borrow, ==, named->policy.borrow);
  g_assert_cmpstr(plain->policy.prefetch, ==, named->policy.prefetch);
  g_assert_cmpstr(plain->policy.reclaim, ==, named->policy.reclaim);
  g_assert_cmpint(plain->policy.preempt, ==, named->policy.preempt);
  a = run_into_dir(plain, NULL);
  b = run_into_dir(named, NULL);
  assert_same_outputs(a, b);
  ema_test_remove_tree(a);
  ema_test_remove_tree(b);
}

/* `offload` with allowance 0 is layer-ahead: byte-identical outputs and
 * pool events; at its default (5%) the tiny scenario offloads, its events
 * say so with their reasons, and the outputs differ. */
static char *run_policy(const char *policy) {
  const char *overrides[] = {policy, NULL};
  g_autoptr(EmaExperiment) experiment = load_with(overrides);
  return run_into_dir(experiment, NULL);
}

static void test_offload_allowance_zero(void) {
  const char *base = "policy={borrow: most-idle, reclaim: migrate, preempt: swap-peer, ";
  g_autofree char *plain = g_strconcat(base, "prefetch: layer-ahead}", NULL);
  g_autofree char *zero =
      g_strconcat(base, "prefetch: offload, prefetch_params: {allowance: 0}}", NULL);
  g_autofree char *five = g_strconcat(base, "prefetch: offload}", NULL);
  g_autofree char *a = run_policy(plain), *b = run_policy(zero), *c = run_policy(five);
  g_autofree char *events_a = ema_test_read_file(a, "events.csv");
  g_autofree char *events_b = ema_test_read_file(b, "events.csv");
  g_autofree char *events_c = ema_test_read_file(c, "events.csv");
  g_autofree char *timeline_a = ema_test_read_file(a, "timeline.csv");
  g_autofree char *timeline_c = ema_test_read_file(c, "timeline.csv");
  assert_same_outputs(a, b);
  g_assert_cmpstr(events_a, ==, events_b);
  g_assert_null(strstr(events_a, ",offload"));
  g_assert_nonnull(strstr(events_c, ",offload,"));
  g_assert_nonnull(strstr(events_c, "offload: attention over remote blocks on gpu"));
  g_assert_nonnull(strstr(events_c, "remote limit: lender gpu"));
  g_assert_nonnull(strstr(events_c, " at its allowance 5%; "));
  g_assert_cmpstr(timeline_a, !=, timeline_c);
  ema_test_remove_tree(a);
  ema_test_remove_tree(b);
  ema_test_remove_tree(c);
}

/* pool.returns of the summary.json in DIR. */
static gint64 summary_returns(const char *dir) {
  g_autofree char *text = ema_test_read_file(dir, "summary.json");
  JsonNode *root = ema_test_parse_json(text);
  JsonObject *pool = json_object_get_object_member(json_node_get_object(root), "pool");
  gint64 returns = json_object_get_int_member(pool, "returns");
  json_node_unref(root);
  return returns;
}

/* The offload composition's borrow policy holds its room to what the plan
 * admits (most-idle's within_limit): on the tiny scenario it gives empty
 * slices back while the remote limit binds, each return saying so, where
 * the same composition without it returns less. */
static void test_offload_within_limit(void) {
  g_autofree char *on = run_policy("policy=offload");
  g_autofree char *off = run_policy("policy={borrow: most-idle, prefetch: offload, reclaim: "
                                    "migrate, preempt: swap-peer}");
  g_autofree char *events_on = ema_test_read_file(on, "events.csv");
  g_autofree char *events_off = ema_test_read_file(off, "events.csv");
  const char *row = strstr(events_on, "\"most-idle: asked to return ");
  g_assert_nonnull(row);
  g_assert_nonnull(strstr(row, "; remote limit "));
  g_assert_nonnull(strstr(row, " blocks borrowed, "));
  g_assert_cmpint(summary_returns(on), >, summary_returns(off));
  g_assert_cmpstr(events_on, !=, events_off);
  ema_test_remove_tree(on);
  ema_test_remove_tree(off);
}

/* `ema` with most-idle's place hook on (place: true): the tiny scenario's
 * borrowers move remote KV home, each move a `place` event saying whose
 * blocks, how much output is still to come and from where to where, and
 * counted in summary.json, where `ema` as it is has neither; with the
 * ledger and every request's blocks checked every simulated millisecond
 * (EMA_POOL_CHECKS=all), and again through every GPU taking back all it
 * lends at 0.5, 1, 2 and 3 s, every request finishes. */
static void test_ema_place(void) {
  const char *overrides[] = {"policy=ema", "policy.borrow_params.place=true", NULL};
  g_autoptr(EmaExperiment) experiment = load_with(overrides);
  g_autoptr(Rig) rig = NULL;
  g_autofree char *on = run_into_dir(experiment, NULL);
  g_autofree char *off = run_policy("policy=ema");
  g_autofree char *events_on = ema_test_read_file(on, "events.csv");
  g_autofree char *events_off = ema_test_read_file(off, "events.csv");
  g_autofree char *summary_on = ema_test_read_file(on, "summary.json");
  g_autofree char *summary_off = ema_test_read_file(off, "summary.json");
  const char *row = strstr(events_on, ",place,");
  GError *error = NULL;
  guint64 caught;
  g_assert_nonnull(row);
  g_assert_nonnull(strstr(row, "\"most-idle: request "));
  g_assert_nonnull(strstr(events_on, " tokens to come), "));
  g_assert_nonnull(strstr(events_on, "\"most-idle: the prefix cache, "));
  g_assert_nonnull(strstr(events_on, " -> gpu0\""));
  g_assert_null(strstr(events_off, ",place,"));
  g_assert_nonnull(strstr(summary_on, "\"blocks_placed\""));
  g_assert_null(strstr(summary_off, "\"placements\""));
  ema_test_remove_tree(on);
  ema_test_remove_tree(off);

  rig = rig_new(experiment, &error);
  g_assert_no_error(error);
  rig_check_every(rig, EMA_MS(1));
  g_assert_true(rig_run(rig, &error));
  g_assert_no_error(error);
  g_assert_cmpuint(ema_pool_stats(rig->pool)->placements, >, 0);
  g_assert_cmpuint(rig_completed(rig), ==, rig_expected_requests(rig));
  g_clear_pointer(&rig, rig_free);
  rig = run_with_faults(experiment, &caught);
  g_assert_cmpuint(caught, >, 0);
  g_assert_cmpuint(ema_pool_stats(rig->pool)->placements, >, 0);
  g_assert_cmpuint(rig_unfinished(rig), ==, 0);
  g_assert_cmpuint(rig_completed(rig), ==, rig_expected_requests(rig));
}

/* ---- the example plugin ----------------------------------------------------------- */

static gboolean plugin_loaded;

static void test_plugin(void) {
  if (!plugin_loaded) {
    g_test_skip("EMA_TEST_POLICY_NEIGHBOUR is not set: the example plugin is not covered");
    return;
  }
  g_assert_nonnull(ema_policy_registry_find(EMA_POLICY_BORROW, "neighbour", NULL));
}

int main(int argc, char **argv) {
  const char *plugin = g_getenv("EMA_TEST_POLICY_NEIGHBOUR");
  GPtrArray *cases = g_ptr_array_new();
  g_autoptr(GPtrArray) compositions = NULL;
  g_test_init(&argc, &argv, NULL);
  test_policies_register();
  if (plugin && *plugin) {
    GError *error = NULL;
    if (!ema_policy_registry_load_file(plugin, &error))
      g_error("loading the example plugin %s: %s", plugin, error->message);
    plugin_loaded = TRUE;
  }
  g_test_add_func("/pool/contract/plugin", test_plugin);
  for (guint k = 0; k < 3; k++) {
    g_autoptr(GPtrArray) infos = ema_policy_registry_list((EmaPolicyKind) k);
    for (guint i = 0; i < infos->len; i++) {
      const EmaPolicyInfo *info = infos->pdata[i];
      Case *c = g_new0(Case, 1);
      const char *kind = ema_policy_kind_name(info->kind);
      g_autofree char *defaults = NULL, *deterministic = NULL, *ledger = NULL, *fault = NULL,
                      *fault_peer = NULL, *fault_cheaper = NULL;
      c->kind = info->kind;
      c->name = g_strdup(info->name);
      g_ptr_array_add(cases, c);
      defaults = g_strdup_printf("/pool/contract/%s/%s/defaults", kind, info->name);
      deterministic = g_strdup_printf("/pool/contract/%s/%s/deterministic", kind, info->name);
      ledger = g_strdup_printf("/pool/contract/%s/%s/ledger", kind, info->name);
      fault = g_strdup_printf("/pool/contract/%s/%s/reclaim-everything", kind, info->name);
      fault_peer =
          g_strdup_printf("/pool/contract/%s/%s/reclaim-everything-swap-peer", kind, info->name);
      g_test_add_data_func(defaults, c, test_defaults);
      g_test_add_data_func(deterministic, c, test_deterministic);
      g_test_add_data_func(ledger, c, test_ledger);
      g_test_add_data_func(fault, c, test_fault);
      fault_cheaper =
          g_strdup_printf("/pool/contract/%s/%s/reclaim-everything-cheaper", kind, info->name);
      g_test_add_data_func(fault_peer, c, test_fault_swap_peer);
      g_test_add_data_func(fault_cheaper, c, test_fault_cheaper);
    }
  }
  compositions = ema_policy_registry_list_compositions();
  for (guint i = 0; i < compositions->len; i++) {
    const EmaPolicyComposition *composition = compositions->pdata[i];
    g_autofree char *path = g_strdup_printf("/pool/composition/%s", composition->name);
    g_test_add_data_func(path, composition->name, test_composition);
    {
      g_autofree char *group = g_strconcat(path, "/tp-group", NULL);
      g_test_add_data_func(group, composition->name, test_composition_group);
    }
  }
  g_test_add_func("/pool/composition/static-is-default", test_static_is_default);
  g_test_add_func("/pool/composition/offload-allowance-zero", test_offload_allowance_zero);
  g_test_add_func("/pool/composition/offload-within-limit", test_offload_within_limit);
  g_test_add_func("/pool/composition/ema-place", test_ema_place);
  {
    int status = g_test_run();
    for (guint i = 0; i < cases->len; i++) {
      Case *c = cases->pdata[i];
      g_free(c->name);
      g_free(c);
    }
    g_ptr_array_unref(cases);
    return status;
  }
}
