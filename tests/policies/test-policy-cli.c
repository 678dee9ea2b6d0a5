/* test-policy-cli.c: the policy commands of ema-sim, run as a real program
 * (its path in EMA_SIM): `list policies` with the built-ins, with the
 * example module from --plugin-dir (after the command or before it) and
 * from EMA_PLUGIN_PATH; `describe-policy` of a plugin policy, a built-in
 * and a composition; and the errors: an unknown name (exit 1, one line, the
 * known names), a missing plugin folder, a folder with a broken module, and
 * usage errors (exit 2); `try-policy` on hand-made views (a reclaim plan's
 * data with no place said to be dropped), and its errors: views no pool
 * could be, settings the policy's kind does not read, a server whose file
 * does not load, a --gpu the pool never calls the policy's kind for. */
#include <string.h>

#include <glib/gstdio.h>
#include <gmodule.h>

#include "testutil.h"

#define BASELINE "experiments/calibration/h200x2-baseline.yaml"

/* Environment edits that set EMA_PLUGIN_PATH to PATH, for ema_test_cli_env
 * (main unsets it for every other run). */
static GStrv plugin_path(const char *path) {
  GStrv edits = g_new0(char *, 2);
  edits[0] = g_strconcat("EMA_PLUGIN_PATH=", path, NULL);
  return edits;
}

static void assert_lacks(const char *text, const char *part) {
  if (strstr(text, part) != NULL) {
    g_autofree char *e = ema_test_escaped(text);
    g_error("'%s' contains '%s'", e, part);
  }
}

/* A temporary folder with a link named ema-policy-neighbour.so to the
 * example module; *LINK is that link's path. */
static char *plugin_dir(char **link) {
  char *dir = ema_test_temp_dir();
  const char *target = g_getenv("EMA_TEST_POLICY_NEIGHBOUR");
  if (target == NULL || !g_file_test(target, G_FILE_TEST_IS_REGULAR))
    g_error("EMA_TEST_POLICY_NEIGHBOUR must name the example module");
  ema_test_link_into(dir, "ema-policy-neighbour." G_MODULE_SUFFIX, target);
  *link = g_build_filename(dir, "ema-policy-neighbour." G_MODULE_SUFFIX, NULL);
  return dir;
}

/* The groups in order, and one built-in of each (the names in a group are
 * sorted, so which one comes first depends on the table). */
static void assert_builtins_listed(const char *out) {
  const char *borrow = strstr(out, "borrow policies:\n");
  const char *prefetch = strstr(out, "\nprefetch policies:\n");
  const char *reclaim = strstr(out, "\nreclaim policies:\n");
  const char *compositions = strstr(out, "\ncompositions (policy: NAME):\n");
  g_assert_true(borrow == out);
  g_assert_true(prefetch && reclaim && compositions);
  g_assert_true(borrow < prefetch && prefetch < reclaim && reclaim < compositions);
  ema_test_assert_contains(out, "\n  none ");
  ema_test_assert_contains(out, "\n  direct ");
  ema_test_assert_contains(out, "reclaim policies:\n");
  ema_test_assert_contains(out, "\n  drop ");
  ema_test_assert_contains(out, "compositions (policy: NAME):\n");
  ema_test_assert_contains(out, "\n  static ");
}

static void test_list_builtins(void) {
  g_autoptr(EmaTestRun) run = ema_test_cli("list", "policies", NULL);
  ema_test_assert_ok(run);
  assert_builtins_listed(run->out);
  assert_lacks(run->out, "(from ");
  assert_lacks(run->out, "neighbour");
}

static void test_list_plugin_dir(void) {
  g_autofree char *link = NULL;
  g_autofree char *dir = plugin_dir(&link);
  g_autofree char *from = g_strdup_printf("(from %s)\n", link);
  /* after the command, before it, and as --plugin-dir=DIR */
  g_autofree char *equals = g_strconcat("--plugin-dir=", dir, NULL);
  g_autoptr(EmaTestRun) after = ema_test_cli("list", "policies", "--plugin-dir", dir, NULL);
  g_autoptr(EmaTestRun) before = ema_test_cli("--plugin-dir", dir, "list", "policies", NULL);
  g_autoptr(EmaTestRun) with_equals = ema_test_cli(equals, "list", "policies", NULL);

  ema_test_assert_ok(after);
  assert_builtins_listed(after->out);
  ema_test_assert_contains(after->out, "\n  neighbour ");
  ema_test_assert_contains(after->out, from);
  ema_test_assert_ok(before);
  g_assert_cmpstr(before->out, ==, after->out);
  ema_test_assert_ok(with_equals);
  g_assert_cmpstr(with_equals->out, ==, after->out);
  ema_test_remove_tree(dir);
}

static void test_list_plugin_path(void) {
  g_autofree char *link = NULL;
  g_autofree char *dir = plugin_dir(&link);
  g_autofree char *from = g_strdup_printf("(from %s)\n", link);
  g_autofree char *path = g_strconcat("/nonexistent/ema-plugins:", dir, NULL);
  g_auto(GStrv) edits = plugin_path(path);
  g_autoptr(EmaTestRun) run =
      ema_test_cli_env((const char *const *) edits, "list", "policies", NULL);
  ema_test_assert_ok(run);
  ema_test_assert_contains(run->out, from);
  ema_test_remove_tree(dir);
}

static void test_describe_plugin(void) {
  g_autofree char *link = NULL;
  g_autofree char *dir = plugin_dir(&link);
  g_autofree char *head = g_strdup_printf("neighbour: borrow policy (from %s)\n", link);
  g_autoptr(EmaTestRun) run =
      ema_test_cli("describe-policy", "neighbour", "--plugin-dir", dir, NULL);
  ema_test_assert_ok(run);
  g_assert_true(g_str_has_prefix(run->out, head));
  ema_test_assert_contains(run->out, "  parameters:\n    reserve ");
  ema_test_assert_contains(run->out, "default 0");
  ema_test_assert_contains(run->out, "\n    min_borrow ");
  ema_test_assert_contains(run->out, "\n    hold ");
  /* `describe policy`, the option before the subject as after it */
  {
    g_autoptr(EmaTestRun) before =
        ema_test_cli("describe", "--plugin-dir", dir, "policy", "neighbour", NULL);
    ema_test_assert_ok(before);
    g_assert_cmpstr(before->out, ==, run->out);
  }
  ema_test_remove_tree(dir);
}

/* a policy author's harness: one call on a hand-made view, its plan and debug lines */
#define VIEW "tests/fixtures/policies/view-short.yaml"

/* A lender's lend limit in the view (lend_keep): most-idle takes GPU 2's 50 slices, all its
 * limit leaves, after GPU 1's 60 (view-lend-keep.yaml by hand), where without the limit GPU 2,
 * the most idle by far, would give all 110; the pool's view carries the limit the same way
 * (/pool/lend-limit-view). */
/* most-idle's spread: GPU 1 is the most idle (860 slices) but GPU 2 reads KV from it, so the
 * borrow of 110 goes to GPU 3 (450, read by none), where without spread it goes to GPU 1
 * (view-spread.yaml by hand). */
static void test_try_policy_spread(void) {
  g_autofree char *dir = ema_test_temp_dir();
  g_autofree char *off = g_build_filename(dir, "off.yaml", NULL);
  g_autofree char *fixture = ema_test_fixture("policies", "view-spread.yaml");
  g_autofree char *text = NULL;
  g_autoptr(EmaTestRun) on = ema_test_cli("try-policy", "borrow", "most-idle",
                                          "tests/fixtures/policies/view-spread.yaml", NULL);
  g_autoptr(EmaTestRun) plain = NULL;
  g_assert_true(g_file_get_contents(fixture, &text, NULL, NULL));
  *strstr(text, "params: {spread: true}") = '\0';
  g_assert_true(g_file_set_contents(off, text, -1, NULL));
  plain = ema_test_cli("try-policy", "borrow", "most-idle", off, NULL);
  ema_test_assert_ok(on);
  ema_test_assert_ok(plain);
  ema_test_assert_contains(on->out, "\n  borrow 110 slices from gpu3\n");
  ema_test_assert_contains(plain->out, "\n  borrow 110 slices from gpu1\n");
  ema_test_remove_tree(dir);
}

static void test_try_policy_lend_keep(void) {
  g_autoptr(EmaTestRun) run = ema_test_cli("try-policy", "borrow", "most-idle",
                                           "tests/fixtures/policies/view-lend-keep.yaml", NULL);
  ema_test_assert_ok(run);
  ema_test_assert_contains(run->out,
                           "\n  borrow 60 slices from gpu1\n  borrow 50 slices from gpu2\n");
}

static void test_try_policy(void) {
  g_autofree char *link = NULL;
  g_autofree char *dir = plugin_dir(&link);
  g_autoptr(EmaTestRun) plugin =
      ema_test_cli("try-policy", "borrow", "neighbour", VIEW, "--plugin-dir", dir, NULL);
  g_autoptr(EmaTestRun) reclaim =
      ema_test_cli("try-policy", "reclaim", "migrate", VIEW, "--gpu", "1", "--needed", "20", NULL);
  g_autoptr(EmaTestRun) prefetch = ema_test_cli("try-policy", "prefetch", "direct", VIEW, NULL);
  g_autoptr(EmaTestRun) bad_gpu =
      ema_test_cli("try-policy", "borrow", "most-idle", VIEW, "--gpu", "5", NULL);
  g_autoptr(EmaTestRun) bad_param = NULL;
  g_autofree char *tmp = ema_test_temp_dir();
  g_autofree char *bad_view = g_build_filename(tmp, "bad.yaml", NULL);
  ema_test_assert_ok(plugin);
  ema_test_assert_contains(plugin->out, "neighbour (borrow policy, /");
  ema_test_assert_contains(plugin->out, "\n  borrow 120 slices from gpu1\n");
  ema_test_assert_contains(plugin->out, "\n  debug gpu0: neighbour: short 120 blocks, want 120 "
                                        "slices (0 pending), gpu1 can lend 860\n");
  /* a lender that lacks slices takes back what it lent; prefetch keeps the pool's start */
  g_assert_true(reclaim->status == 0 && prefetch->status == 0);
  ema_test_assert_contains(reclaim->out, "migrate (reclaim policy, built-in) on gpu1 of ");
  ema_test_assert_contains(reclaim->out, "take back ");
  ema_test_assert_contains(prefetch->out, "\n  mode direct, depth 1, ");
  ema_test_assert_failed(bad_gpu, 1, VIEW ": --gpu 5: the view has 3 GPUs (0 to 2)");
  /* a parameter the policy does not have is located in the view's file */
  g_assert_true(
      g_file_set_contents(bad_view, "gpus: [{slices: 10}]\nparams: {nope: 1}\n", -1, NULL));
  bad_param = ema_test_cli("try-policy", "borrow", "most-idle", bad_view, NULL);
  ema_test_assert_failed(bad_param, 1, bad_view);
  ema_test_assert_contains(bad_param->err, ":2:10: params.nope: unknown key in most-idle");
  /* views no pool could be: each refused at the key that says it (the GPU's or the loan's map
   * where that key is left out), the whole line */
  {
    static const struct {
      const char *text, *message;
    } views[] = {
        {"gpus: []\n", ":2:7: gpus: the view has no GPUs"},
        {"gpus: [{has_tenant: true, slices: 10, slices_used: 20}]\n",
         ":2:39: gpus.0.slices_used: slices_used, slices_lent and slices_staging add up to 20, "
         "above slices (10)"},
        {"gpus: [{slices: 10, slices_used: 8, slices_lent: 5}]\n",
         ":2:21: gpus.0.slices_used: 8 on a GPU without a tenant (has_tenant: false): a tenant's "
         "counts are 0 there"},
        {"gpus: [{has_tenant: true, slices: 10, slices_used: 8, slices_lent: 1, slices_staging: "
         "2}]\n",
         ":2:71: gpus.0.slices_staging: slices_used, slices_lent and slices_staging add up to 11, "
         "above slices (10)"},
        {"gpus: [{slices: 10, blocks_used: 3}]\n",
         ":2:21: gpus.0.blocks_used: 3 on a GPU without a tenant (has_tenant: false): a tenant's "
         "counts are 0 there"},
        {"gpus: [{has_tenant: true, slices: 10, slices_borrowed: 4, slices_borrowed_used: 5}]\n",
         ":2:59: gpus.0.slices_borrowed_used: 5 is above slices_borrowed (4)"},
        {"gpus: [{slices: 10, lend_keep: 11}]\n",
         ":2:21: gpus.0.lend_keep: 11 is above slices (10): it keeps slices of its own region"},
        {"gpus: [{has_tenant: true, slices: 10, slices_used: 10, blocks_total: 2, blocks_used: "
         "3}]\n",
         ":2:73: gpus.0.blocks_used: 3 is above blocks_total (2)"},
        {"gpus: [{has_tenant: true, slices: 10, blocks_total: 10, blocks_used: 2, blocks_remote: "
         "3}]\n",
         ":2:73: gpus.0.blocks_remote: 3 is above blocks_used (2): the blocks on peers are of "
         "those in use"},
        {"gpus: [{has_tenant: true, slices: 10, slices_used: 2, blocks_total: 10, blocks_used: "
         "3}]\n",
         ":2:39: gpus.0.slices_used: 2 slices cannot hold the 3 local blocks (blocks_used - "
         "blocks_remote) of 2097152 bytes: they fill 3"},
        {"gpus: [{has_tenant: true, slices: 10, blocks_total: 10, blocks_used: 3}]\n",
         ":2:8: gpus.0: 0 slices cannot hold the 3 local blocks (blocks_used - blocks_remote) of "
         "2097152 bytes: they fill 3"},
        {"gpus: [{slices: 10}, {slices: 10}]\nlent: [{lender: 1, borrower: 1, slices: 1}]\n",
         ":3:8: lent.0: a GPU does not lend to itself"},
        {"gpus: [{has_tenant: true, slices: 10, slices_borrowed: 3}, {slices: 10, slices_lent: "
         "3}]\nlent: [{lender: 1, borrower: 0, slices: 1}, {lender: 1, borrower: 0, slices: 2}]\n",
         ":3:45: lent.1: a loan from this lender to this borrower is given twice: give one"},
        {"gpus: [{slices: 10}, {slices: 10}]\nlent: [{lender: 0, borrower: 2, slices: 1}]\n",
         ":3:20: lent.0.borrower: must be below 2 (the view's GPUs)"},
        {"gpus: [{has_tenant: true, slices: 10, slices_borrowed: 1}, {slices: 10, shares: false, "
         "slices_lent: 1}]\nlent: [{lender: 1, borrower: 0, slices: 1}]\n",
         ":3:9: lent.0.lender: gpu1 does not share (shares: false): it lends nothing"},
        {"gpus: [{has_tenant: true, slices: 10, slices_borrowed: 1, blocks_total: 2, blocks_used: "
         "2, blocks_remote: 2}, {slices: 10, slices_lent: 1}]\nlent: [{lender: 1, borrower: 0, "
         "slices: 1, blocks: 2}]\n",
         ":3:44: lent.0.blocks: 2 blocks of gpu0's 2097152 bytes fill 2 slices, above the loan's "
         "1"},
        {"gpus: [{has_tenant: true, slices: 10, slices_borrowed: 4}, {slices: 10}]\nlent: "
         "[{lender: 1, borrower: 0, slices: 4}]\n",
         ":3:33: lent.0.slices: gpu1's loans come to 4 slices, above its slices_lent (0)"},
        {"gpus: [{has_tenant: true, slices: 10, slices_borrowed: 2}, {slices: 10, slices_lent: "
         "4}]\nlent: [{lender: 1, borrower: 0, slices: 4}]\n",
         ":3:33: lent.0.slices: the loans to gpu0 come to 4 slices, above its slices_borrowed "
         "(2)"},
        /* blocks lent that the borrower does not count as its own on peers */
        {"gpus: [{has_tenant: true, slices: 10, slices_borrowed: 4}, {slices: 10, slices_lent: "
         "4}]\nlent: [{lender: 1, borrower: 0, slices: 4, blocks: 3}]\n",
         ":3:44: lent.0.blocks: the loans to gpu0 hold 3 of its blocks, above its blocks_remote "
         "(0)"},
        {"gpus: [{has_tenant: true, slices: 10, slices_borrowed: 4}, {slices: 10}]\n",
         ":2:39: gpus.0.slices_borrowed: 4, but the loans to gpu0 (lent) come to 0 slices"},
        {"gpus: [{has_tenant: true, slices: 10, slices_borrowed: 4, blocks_total: 3, blocks_used: "
         "3, blocks_remote: 3}, {slices: 10, slices_lent: 4}]\nlent: [{lender: 1, borrower: 0, "
         "slices: 4}]\n",
         ":2:92: gpus.0.blocks_remote: 3, but the loans to gpu0 (lent) hold 0 of its blocks"},
        {"gpus: [{slices: 10}, {slices: 10}, {slices: 10}]\n",
         ":2:7: gpus: the view has 3 GPUs, more than h200x2's 2"},
        /* a trend no pool has, whose projection a policy could not count */
        {"gpus: [{has_tenant: true, slices: 10, demand_blocks_per_s: 1e20}]\n",
         ":2:60: gpus.0.demand_blocks_per_s: 1e20 is out of range [-1e+15, 1e+15]"},
    };
    for (guint i = 0; i < G_N_ELEMENTS(views); i++) {
      g_autoptr(EmaTestRun) run = NULL;
      g_autofree char *text = g_strconcat("server: h200x2\n", views[i].text, NULL);
      g_autofree char *want = g_strconcat(bad_view, views[i].message, "\n", NULL);
      g_assert_true(g_file_set_contents(bad_view, text, -1, NULL));
      run = ema_test_cli("try-policy", "borrow", "most-idle", bad_view, NULL);
      g_assert_cmpint(run->status, ==, 1);
      g_assert_cmpstr(run->err, ==, want);
    }
  }
  /* a server the view names that is no hardware model: an error at its key, as an
   * experiment's server: is (it had no place) */
  {
    g_autoptr(EmaTestRun) run = NULL;
    g_autofree char *want =
        g_strconcat(bad_view, ":1:9: server: unknown hardware model 'nope' (", NULL);
    g_assert_true(g_file_set_contents(bad_view, "server: nope\ngpus: [{slices: 10}]\n", -1, NULL));
    run = ema_test_cli("try-policy", "borrow", "most-idle", bad_view, NULL);
    g_assert_cmpint(run->status, ==, 1);
    g_assert_true(g_str_has_prefix(run->err, want));
  }
  /* the same view with its counts made to agree is one */
  {
    g_autoptr(EmaTestRun) run = NULL;
    g_assert_true(g_file_set_contents(
        bad_view,
        "server: h200x2\ngpus: [{has_tenant: true, slices: 10, slices_borrowed: 4, "
        "slices_borrowed_used: 2, blocks_total: 3, blocks_used: 3, blocks_remote: 3}, {slices: "
        "10, slices_lent: 4}]\nlent: [{lender: 1, borrower: 0, slices: 4, blocks: 3}]\n",
        -1, NULL));
    run = ema_test_cli("try-policy", "borrow", "most-idle", bad_view, NULL);
    ema_test_assert_ok(run);
  }
  ema_test_remove_tree(tmp);
  ema_test_remove_tree(dir);
}

/* A reclaim plan whose data has no place (good/far-peer.c: a peer past the view's 3 GPUs, a
 * target outside EmaVacateTarget): try-policy says a run drops it, in the pool's words (its
 * reclaim row's reason, /pool/reclaim/fallback), where it said `data to peer gpu9` and `data to
 * ?`; a peer the view has stays as it was. */
static void test_try_policy_no_place(void) {
  g_autofree char *dir = ema_test_temp_dir();
  g_autofree char *target =
      g_build_filename(g_getenv("EMA_TEST_POLICY_MODULES"), "far-peer." G_MODULE_SUFFIX, NULL);
  g_autoptr(EmaTestRun) run = NULL;
  ema_test_link_into(dir, "far-peer." G_MODULE_SUFFIX, target);
  run = ema_test_cli("try-policy", "reclaim", "far-peer", VIEW, "--gpu", "1", "--needed", "20",
                     "--plugin-dir", dir, NULL);
  ema_test_assert_ok(run);
  ema_test_assert_contains(run->out,
                           "\n  take back 1 slices from gpu0, data dropped: target_gpu 9 is not a "
                           "GPU of this server (gpu0..gpu2)\n"
                           "  take back 1 slices from gpu0, data dropped: target 7 is not a "
                           "reclaim target\n"
                           "  take back 1 slices from gpu0, data to peer gpu2\n");
  ema_test_remove_tree(dir);
}

/* The view TEXT (after "server: h200x2\n") written to PATH and tried with the policy NAME of
 * KIND: exit 1, stderr exactly PATH then MESSAGE (its line, column, key and text). */
static void assert_view_error(const char *path, const char *kind, const char *name,
                              const char *text, const char *message) {
  g_autofree char *all = g_strconcat("server: h200x2\n", text, NULL);
  g_autofree char *want = g_strconcat(path, message, "\n", NULL);
  g_autoptr(EmaTestRun) run = NULL;
  g_assert_true(g_file_set_contents(path, all, -1, NULL));
  run = ema_test_cli("try-policy", kind, name, path, NULL);
  g_assert_cmpint(run->status, ==, 1);
  g_assert_cmpstr(run->err, ==, want);
}

/* Numbers no pool's view holds (they were taken silently): a last step longer than the time
 * so far, a link of no bandwidth, a loan of no slices, a step whose parts exceed their whole;
 * each at its value. */
static void test_try_policy_inconsistent(void) {
  static const struct {
    const char *kind, *name, *text, *message;
  } views[] = {
      {"borrow", "most-idle", "now: 1s\ngpus: [{has_tenant: true, slices: 10, last_step: 2s}]\n",
       ":3:39: gpus.0.last_step: 2s is longer than the view's now (1s): a step that ended by now "
       "lasted at most that"},
      {"borrow", "most-idle",
       "gpus: [{slices: 10}, {slices: 10}]\nlent: [{lender: 1, borrower: 0, slices: 0}]\n",
       ":3:41: lent.0.slices: 0 is out of range [1, 1000000000000000]"},
      {"prefetch", "direct",
       "gpus: [{has_tenant: true, slices: 10}]\nstep: {link_bandwidth: 0GB/s}\n",
       ":3:24: step.link_bandwidth: 0GB/s is out of range [1MB/s, 100TB/s]"},
      {"prefetch", "direct",
       "gpus: [{has_tenant: true, slices: 10}]\nstep: {direct_bandwidth: 0B/s}\n",
       ":3:26: step.direct_bandwidth: 0B/s is out of range [1MB/s, 100TB/s]"},
      {"prefetch", "direct",
       "gpus: [{has_tenant: true, slices: 10}]\nstep: {kv_bytes: 10, remote_bytes: 20}\n",
       ":3:22: step.remote_bytes: 20 is above kv_bytes (10): the remote bytes are of those a layer "
       "reads"},
      {"prefetch", "direct",
       "gpus: [{has_tenant: true, slices: 10}]\nstep: {layer_compute_s: 1, layer_memory_s: 2}\n",
       ":3:28: step.layer_memory_s: 2 is above layer_compute_s (1): a layer takes at least its "
       "memory side's time"},
      {"prefetch", "direct",
       "gpus: [{has_tenant: true, slices: 10}]\nstep: {layer_compute_s: 1, layer_memory_s: 0.5, "
       "layer_kv_s: 0.75}\n",
       ":3:49: step.layer_kv_s: 0.75 is above layer_memory_s (0.5): reading the KV is of the "
       "memory side"},
  };
  g_autofree char *dir = ema_test_temp_dir();
  g_autofree char *path = g_build_filename(dir, "view.yaml", NULL);
  for (guint i = 0; i < G_N_ELEMENTS(views); i++)
    assert_view_error(path, views[i].kind, views[i].name, views[i].text, views[i].message);
  /* each part at its whole, and a last step as long as the time so far, is one */
  {
    g_autoptr(EmaTestRun) run = NULL;
    g_assert_true(g_file_set_contents(
        path,
        "server: h200x2\nnow: 1s\ngpus: [{has_tenant: true, slices: 10, slices_used: 2, "
        "last_step: 1s, slices_borrowed: 2, slices_borrowed_used: 2, blocks_total: 10, "
        "blocks_used: 4, blocks_remote: 2}, {slices: 10, slices_lent: 2}]\n"
        "lent: [{lender: 1, borrower: 0, slices: 2, blocks: 2}]\n"
        "step: {kv_bytes: 10, remote_bytes: 10, layer_compute_s: 1, layer_memory_s: 1, "
        "layer_kv_s: 1, link_bandwidth: 1MB/s, direct_bandwidth: 1MB/s}\n",
        -1, NULL));
    run = ema_test_cli("try-policy", "prefetch", "direct", path, NULL);
    ema_test_assert_ok(run);
  }
  ema_test_remove_tree(dir);
}

/* Settings the chosen policy's kind does not read (they were ignored): a step (prefetch's)
 * for a borrow or reclaim policy, at its key; --needed (reclaim's) for a borrow or prefetch
 * policy, a usage error. */
static void test_try_policy_unread(void) {
  g_autofree char *dir = ema_test_temp_dir();
  g_autofree char *path = g_build_filename(dir, "view.yaml", NULL);
  assert_view_error(path, "borrow", "most-idle", "gpus: [{slices: 10}]\nstep: {layers: 4}\n",
                    ":3:1: step: the coming step's costs are read by prefetch policies only, not "
                    "by a borrow policy: leave it out");
  assert_view_error(path, "reclaim", "drop", "gpus: [{slices: 10}]\nstep: {layers: 4}\n",
                    ":3:1: step: the coming step's costs are read by prefetch policies only, not "
                    "by a reclaim policy: leave it out");
  {
    g_autoptr(EmaTestRun) borrow =
        ema_test_cli("try-policy", "borrow", "most-idle", VIEW, "--needed", "20", NULL);
    g_autoptr(EmaTestRun) prefetch =
        ema_test_cli("try-policy", "prefetch", "direct", VIEW, "--needed", "0", NULL);
    ema_test_assert_failed(borrow, 2,
                           "ema-sim: try-policy: --needed (the slices the lender lacks) is read "
                           "by reclaim policies only, not by a borrow policy\n");
    ema_test_assert_failed(prefetch, 2,
                           "ema-sim: try-policy: --needed (the slices the lender lacks) is read "
                           "by reclaim policies only, not by a prefetch policy\n");
  }
  ema_test_remove_tree(dir);
}

/* A --gpu the pool never calls the policy's kind for (a plan for it answered a call no run
 * makes): a borrow or prefetch policy for a GPU without a tenant (the pool calls them for a
 * tenant's GPU, before or after its tenant's step), at its has_tenant (its entry where that is
 * left out); a prefetch policy for a tenant none of whose KV is on a lender (the pool asks for a
 * plan only before a step that reads remote KV), at its blocks_remote; a reclaim policy for a GPU
 * that lends nothing (no loan from it in lent:), at its entry. The same GPUs with a tenant, remote
 * KV or a loan are called. */
static void test_try_policy_uncalled_gpu(void) {
  g_autofree char *dir = ema_test_temp_dir();
  g_autofree char *path = g_build_filename(dir, "view.yaml", NULL);
  const char *idle = "gpus: [{has_tenant: true, slices: 10}, {has_tenant: false, slices: 10}]\n";
  const char *bare = "gpus: [{has_tenant: true, slices: 10}, {slices: 10}]\n";
  const char *lent = "gpus: [{has_tenant: true, slices: 10, slices_borrowed: 2}, {slices: 10, "
                     "slices_lent: 2}]\nlent: [{lender: 1, borrower: 0, slices: 2}]\n";
  const char *remote = "gpus: [{has_tenant: true, slices: 10, slices_used: 2, slices_borrowed: 2, "
                       "slices_borrowed_used: 2, blocks_total: 10, blocks_used: 4, "
                       "blocks_remote: 2}, {slices: 10, slices_lent: 2}]\n"
                       "lent: [{lender: 1, borrower: 0, slices: 2, blocks: 2}]\n";
  const struct {
    const char *kind, *name, *text, *gpu, *message;
  } cases[] = {
      {"borrow", "most-idle", idle, "1",
       ":2:41: gpus.1.has_tenant: --gpu 1 has no tenant (has_tenant: false): the pool calls a "
       "borrow policy only for a GPU with a tenant (after its tenant's step, or when it lacks "
       "blocks)"},
      {"prefetch", "direct", bare, "1",
       ":2:40: gpus.1: --gpu 1 has no tenant (has_tenant: false): the pool calls a prefetch "
       "policy only for a GPU with a tenant (before its tenant's step)"},
      {"prefetch", "direct", lent, "0",
       ":2:8: gpus.0: --gpu 0 holds no remote KV (blocks_remote: 0): the pool calls a prefetch "
       "policy only before a step of a tenant whose KV is partly on lenders"},
      {"reclaim", "drop", bare, "0",
       ":2:8: gpus.0: --gpu 0 lends nothing (no loan in lent: is from it): the pool calls a "
       "reclaim policy only for a GPU with slices lent"},
      /* slices lent but none of them in a loan (mapping, coming back or holding parked KV) */
      {"reclaim", "drop", lent, "0",
       ":2:8: gpus.0: --gpu 0 lends nothing (no loan in lent: is from it): the pool calls a "
       "reclaim policy only for a GPU with slices lent"},
  };
  for (guint i = 0; i < G_N_ELEMENTS(cases); i++) {
    g_autofree char *text = g_strconcat("server: h200x2\n", cases[i].text, NULL);
    g_autofree char *want = g_strconcat(path, cases[i].message, "\n", NULL);
    g_autoptr(EmaTestRun) run = NULL;
    g_assert_true(g_file_set_contents(path, text, -1, NULL));
    run =
        ema_test_cli("try-policy", cases[i].kind, cases[i].name, path, "--gpu", cases[i].gpu, NULL);
    g_assert_cmpint(run->status, ==, 1);
    g_assert_cmpstr(run->err, ==, want);
  }
  /* each kind on a GPU it is called for: a tenant's, a lender without a tenant */
  {
    g_autofree char *text = g_strconcat("server: h200x2\n", remote, NULL);
    g_autoptr(EmaTestRun) borrow = NULL, prefetch = NULL, reclaim = NULL;
    g_assert_true(g_file_set_contents(path, text, -1, NULL));
    borrow = ema_test_cli("try-policy", "borrow", "most-idle", path, "--gpu", "0", NULL);
    prefetch = ema_test_cli("try-policy", "prefetch", "direct", path, "--gpu", "0", NULL);
    reclaim = ema_test_cli("try-policy", "reclaim", "drop", path, "--gpu", "1", NULL);
    ema_test_assert_ok(borrow);
    ema_test_assert_ok(prefetch);
    ema_test_assert_ok(reclaim);
    ema_test_assert_contains(reclaim->out, "drop (reclaim policy, built-in) on gpu1 of ");
  }
  ema_test_remove_tree(dir);
}

/* A server the view names whose file does not load (ema_server_load's error): at the view's
 * server key, then the file's own place. */
static void test_try_policy_server_file(void) {
  g_autofree char *dir = ema_test_temp_dir();
  g_autofree char *model = g_build_filename(dir, "broken.yaml", NULL);
  g_autofree char *path = g_build_filename(dir, "view.yaml", NULL);
  g_autofree char *edit = g_strconcat("EMA_HWMODEL_PATH=", dir, NULL);
  const char *edits[] = {edit, NULL};
  g_autofree char *want =
      g_strdup_printf("%s:1:9: server: %s:1:1: gpu: missing required key\n", path, model);
  g_autoptr(EmaTestRun) run = NULL;
  g_assert_true(g_file_set_contents(model, "name: broken\ngpus: 2\n", -1, NULL));
  g_assert_true(g_file_set_contents(path, "server: broken\ngpus: [{slices: 10}]\n", -1, NULL));
  run = ema_test_cli_env(edits, "try-policy", "borrow", "most-idle", path, NULL);
  g_assert_cmpint(run->status, ==, 1);
  g_assert_cmpstr(run->err, ==, want);
  ema_test_remove_tree(dir);
}

static void test_describe_builtin(void) {
  g_autoptr(EmaTestRun) none = ema_test_cli("describe-policy", "none", NULL);
  g_autoptr(EmaTestRun) composition = ema_test_cli("describe-policy", "static", NULL);
  g_autoptr(EmaTestRun) alias = ema_test_cli("describe", "policy", "none", NULL);
  ema_test_assert_ok(alias);
  ema_test_assert_ok(none);
  g_assert_cmpstr(alias->out, ==, none->out);
  g_assert_true(g_str_has_prefix(none->out, "none: borrow policy (built-in)\n  never borrow"));
  ema_test_assert_ok(composition);
  g_assert_true(g_str_has_prefix(composition->out, "static: composition (built-in)\n"));
  ema_test_assert_contains(composition->out, "\n  policy: {borrow: none");
}

static void test_describe_unknown(void) {
  g_autoptr(EmaTestRun) run = ema_test_cli("describe-policy", "nope", NULL);
  ema_test_assert_failed(run, 1, "ema-sim: unknown policy 'nope' (borrow: ");
  ema_test_assert_contains(run->err, "none");
  ema_test_assert_contains(run->err, "; prefetch: ");
  ema_test_assert_contains(run->err, "direct");
  ema_test_assert_contains(run->err, "; reclaim: ");
  ema_test_assert_contains(run->err, "drop");
  ema_test_assert_contains(run->err, "; compositions: ");
  ema_test_assert_contains(run->err, "static");
  g_assert_true(g_str_has_suffix(run->err, ")\n"));
  g_assert_cmpstr(run->out, ==, "");
}

static void test_missing_plugin_dir(void) {
  g_autoptr(EmaTestRun) list =
      ema_test_cli("list", "policies", "--plugin-dir", "/nonexistent/ema", NULL);
  g_autoptr(EmaTestRun) check =
      ema_test_cli("check", BASELINE, "--plugin-dir", "/nonexistent/ema", NULL);
  g_autoptr(EmaTestRun) run =
      ema_test_cli("--plugin-dir", "/nonexistent/ema", "run", BASELINE, NULL);
  ema_test_assert_failed(list, 1,
                         "ema-sim: plugin directory /nonexistent/ema: no such directory\n");
  ema_test_assert_failed(check, 1,
                         "ema-sim: plugin directory /nonexistent/ema: no such directory\n");
  ema_test_assert_failed(run, 1, "ema-sim: plugin directory /nonexistent/ema: no such directory\n");
  /* a missing folder on EMA_PLUGIN_PATH is skipped */
  {
    g_auto(GStrv) edits = plugin_path("/nonexistent/ema");
    g_autoptr(EmaTestRun) skipped =
        ema_test_cli_env((const char *const *) edits, "list", "policies", NULL);
    ema_test_assert_ok(skipped);
  }
}

static void test_check_with_plugins(void) {
  g_autofree char *link = NULL;
  g_autofree char *dir = plugin_dir(&link);
  g_autoptr(EmaTestRun) run = ema_test_cli("check", BASELINE, "--plugin-dir", dir, NULL);
  ema_test_assert_ok(run);
  ema_test_assert_contains(run->out, ": ok (");
  ema_test_remove_tree(dir);
}

/* A folder holding a broken module: the command stops with its error. */
static void test_broken_plugin(void) {
  g_autofree char *dir = ema_test_temp_dir();
  g_autofree char *target =
      g_build_filename(g_getenv("EMA_TEST_POLICY_MODULES"), "no-decide." G_MODULE_SUFFIX, NULL);
  g_autofree char *link = g_build_filename(dir, "no-decide." G_MODULE_SUFFIX, NULL);
  g_autofree char *expected =
      g_strdup_printf("%s: borrow policy 'no-decide': no decide hook\n", link);
  ema_test_link_into(dir, "no-decide." G_MODULE_SUFFIX, target);
  {
    g_autoptr(EmaTestRun) list = ema_test_cli("list", "policies", "--plugin-dir", dir, NULL);
    g_auto(GStrv) edits = plugin_path(dir);
    g_autoptr(EmaTestRun) describe =
        ema_test_cli_env((const char *const *) edits, "describe-policy", "none", NULL);
    ema_test_assert_failed(list, 1, link);
    g_assert_cmpstr(list->err, ==, expected);
    ema_test_assert_failed(describe, 1, link);
    g_assert_cmpstr(describe->err, ==, expected);
  }
  ema_test_remove_tree(dir);
}

static void test_usage_errors(void) {
  g_autoptr(EmaTestRun) no_name = ema_test_cli("describe-policy", NULL);
  g_autoptr(EmaTestRun) two_names = ema_test_cli("describe-policy", "a", "b", NULL);
  g_autoptr(EmaTestRun) list_what = ema_test_cli("list", "everything", NULL);
  g_autoptr(EmaTestRun) no_dir = ema_test_cli("list", "policies", "--plugin-dir", NULL);
  g_autoptr(EmaTestRun) global_no_dir = ema_test_cli("--plugin-dir", NULL);
  g_autoptr(EmaTestRun) not_here =
      ema_test_cli("--plugin-dir", "/tmp", "describe", "hwmodel", "h200x2", NULL);
  /* describe's forms other than `describe policy`, the option after them or before */
  g_autoptr(EmaTestRun) describe_llm =
      ema_test_cli("describe", "llm", "opt-13b", "--plugin-dir", "/tmp", NULL);
  g_autoptr(EmaTestRun) before_llm =
      ema_test_cli("--plugin-dir", "/tmp", "describe", "llm", "opt-13b", NULL);
  g_autoptr(EmaTestRun) describe_experiment =
      ema_test_cli("describe", "experiment", "--plugin-dir=/tmp", NULL);
  g_autoptr(EmaTestRun) describe_engine =
      ema_test_cli("describe", "--plugin-dir", "/tmp", "engine", "--keys", NULL);
  g_autoptr(EmaTestRun) not_at_all = ema_test_cli("--plugin-dir", "/tmp", "frobnicate", NULL);
  g_autoptr(EmaTestRun) after_other = ema_test_cli("frontier", "--plugin-dir", "/tmp", NULL);
  g_autoptr(EmaTestRun) after_equals = ema_test_cli("plot", "x", "--plugin-dir=/tmp", NULL);
  g_autoptr(EmaTestRun) help = ema_test_cli("--help", NULL);
  ema_test_assert_failed(no_name, 2, "ema-sim: usage: ema-sim describe-policy NAME");
  ema_test_assert_failed(two_names, 2, "ema-sim: usage: ema-sim describe-policy NAME");
  ema_test_assert_failed(list_what, 2,
                         "ema-sim: usage: ema-sim list hwmodels|llms|engines|policies");
  ema_test_assert_failed(no_dir, 2, "ema-sim: ");
  ema_test_assert_failed(global_no_dir, 2, "ema-sim: --plugin-dir: missing DIR");
  ema_test_assert_failed(not_here, 2,
                         "ema-sim: --plugin-dir is not an option of 'describe hwmodel'");
  ema_test_assert_failed(not_at_all, 2, "ema-sim: --plugin-dir is not an option of 'frobnicate'");
  /* (the first two said "Unknown option --plugin-dir" and took it silently) */
  ema_test_assert_failed(describe_llm, 2,
                         "ema-sim: --plugin-dir is not an option of 'describe llm' (only of run, "
                         "check, list, describe policy, describe-policy, try-policy, sweep)");
  ema_test_assert_failed(before_llm, 2,
                         "ema-sim: --plugin-dir is not an option of 'describe llm' (only of ");
  ema_test_assert_failed(describe_experiment, 2,
                         "ema-sim: --plugin-dir is not an option of 'describe experiment' (only "
                         "of ");
  ema_test_assert_failed(describe_engine, 2,
                         "ema-sim: --plugin-dir is not an option of 'describe engine' (only of ");
  /* after a command that takes none: the same words, where its parser said "Unknown option";
   * the list names describe's one form that loads policies */
  ema_test_assert_failed(after_other, 2,
                         "ema-sim: --plugin-dir is not an option of 'frontier' (only of run, "
                         "check, list, describe policy, describe-policy, try-policy, sweep)");
  ema_test_assert_failed(after_equals, 2, "ema-sim: --plugin-dir is not an option of 'plot'");
  ema_test_assert_ok(help);
  ema_test_assert_contains(help->out, "list policies");
  ema_test_assert_contains(help->out, "describe-policy NAME");
  ema_test_assert_contains(help->out, "--plugin-dir DIR");
}

int main(int argc, char **argv) {
  g_test_init(&argc, &argv, NULL);
  /* the runs see no plugin folders but those a test gives (plugin_path) */
  g_unsetenv("EMA_PLUGIN_PATH");
  g_test_add_func("/policy-cli/list/builtins", test_list_builtins);
  g_test_add_func("/policy-cli/list/plugin-dir", test_list_plugin_dir);
  g_test_add_func("/policy-cli/list/plugin-path", test_list_plugin_path);
  g_test_add_func("/policy-cli/describe/plugin", test_describe_plugin);
  g_test_add_func("/policy-cli/describe/builtin", test_describe_builtin);
  g_test_add_func("/policy-cli/try-policy", test_try_policy);
  g_test_add_func("/policy-cli/try-policy/lend-keep", test_try_policy_lend_keep);
  g_test_add_func("/policy-cli/try-policy/spread", test_try_policy_spread);
  g_test_add_func("/policy-cli/try-policy/inconsistent", test_try_policy_inconsistent);
  g_test_add_func("/policy-cli/try-policy/unread", test_try_policy_unread);
  g_test_add_func("/policy-cli/try-policy/server-file", test_try_policy_server_file);
  g_test_add_func("/policy-cli/try-policy/uncalled-gpu", test_try_policy_uncalled_gpu);
  g_test_add_func("/policy-cli/try-policy/no-place", test_try_policy_no_place);
  g_test_add_func("/policy-cli/describe/unknown", test_describe_unknown);
  g_test_add_func("/policy-cli/errors/missing-plugin-dir", test_missing_plugin_dir);
  g_test_add_func("/policy-cli/errors/broken-plugin", test_broken_plugin);
  g_test_add_func("/policy-cli/errors/usage", test_usage_errors);
  g_test_add_func("/policy-cli/check-with-plugins", test_check_with_plugins);
  return g_test_run();
}
