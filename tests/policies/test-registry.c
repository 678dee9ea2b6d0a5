/* test-registry.c: the policy registry and the plugin loader (registry.h).
 * The built-ins are registered and listed sorted; an unknown name answers
 * with the sorted list of known ones; the example module
 * (policies/examples/borrow-neighbour.c, its path in
 * EMA_TEST_POLICY_NEIGHBOUR) loads by path and by directory; each module
 * of tests/policies/broken/ (built into EMA_TEST_POLICY_MODULES) is refused
 * with its exact message and leaves nothing registered; directories load in
 * sorted order; EMA_PLUGIN_PATH is honoured.
 *
 * The registry is process-wide and only grows, so no test depends on
 * another having run (or not) before it: modules loaded twice register
 * once, and each test asserts only about names it owns. Directories are
 * temporary ones holding symbolic links to the built modules (a link is the
 * same file to the dynamic loader, a copy would not be). */
#include <string.h>

#include <glib/gstdio.h>
#include <gmodule.h>

#include "ema/pool/registry.h"

#include "testutil.h"

static const char *neighbour_path(void) {
  const char *path = g_getenv("EMA_TEST_POLICY_NEIGHBOUR");
  if (path == NULL || !g_file_test(path, G_FILE_TEST_IS_REGULAR))
    g_error("EMA_TEST_POLICY_NEIGHBOUR must name the example module (got %s)",
            path ? path : "nothing");
  return path;
}

/* The path of the test module NAME (without the suffix). */
static char *module_path(const char *name) {
  const char *dir = g_getenv("EMA_TEST_POLICY_MODULES");
  g_autofree char *file = g_strconcat(name, ".", G_MODULE_SUFFIX, NULL);
  char *path;
  if (dir == NULL)
    g_error("EMA_TEST_POLICY_MODULES must name the folder of the test modules");
  path = g_build_filename(dir, file, NULL);
  if (!g_file_test(path, G_FILE_TEST_IS_REGULAR))
    g_error("test module %s was not built", path);
  return path;
}

/* "a, b, c" from a list of EmaPolicyInfo *. */
static char *joined(GPtrArray *infos) {
  g_autoptr(GString) text = g_string_new(NULL);
  for (guint i = 0; i < infos->len; i++)
    g_string_append_printf(text, "%s%s", i ? ", " : "",
                           ((const EmaPolicyInfo *) infos->pdata[i])->name);
  return g_string_free(g_steal_pointer(&text), FALSE);
}

static void assert_sorted(GPtrArray *infos) {
  for (guint i = 1; i < infos->len; i++)
    g_assert_cmpint(strcmp(((const EmaPolicyInfo *) infos->pdata[i - 1])->name,
                           ((const EmaPolicyInfo *) infos->pdata[i])->name),
                    <, 0);
}

static void assert_unknown(EmaPolicyKind kind, const char *name) {
  GError *error = NULL;
  g_assert_null(ema_policy_registry_find(kind, name, &error));
  g_assert_error(error, EMA_POLICY_ERROR, EMA_POLICY_ERROR_UNKNOWN);
  g_error_free(error);
}

/* ---- built-ins ---------------------------------------------------------------- */

static void test_kind_names(void) {
  g_assert_cmpstr(ema_policy_kind_name(EMA_POLICY_BORROW), ==, "borrow");
  g_assert_cmpstr(ema_policy_kind_name(EMA_POLICY_PREFETCH), ==, "prefetch");
  g_assert_cmpstr(ema_policy_kind_name(EMA_POLICY_RECLAIM), ==, "reclaim");
}

/* The name of the built-in policy of KIND at INDEX of the table, or NULL. */
static const char *builtin_name(EmaPolicyKind kind, guint index) {
  const EmaPolicyModule *m = &ema_builtin_policies;
  switch (kind) {
  case EMA_POLICY_BORROW:
    return m->borrow[index] ? m->borrow[index]->name : NULL;
  case EMA_POLICY_PREFETCH:
    return m->prefetch[index] ? m->prefetch[index]->name : NULL;
  case EMA_POLICY_RECLAIM:
    return m->reclaim[index] ? m->reclaim[index]->name : NULL;
  }
  return NULL;
}

static void test_builtins(void) {
  struct {
    EmaPolicyKind kind;
    const char *name;
  } builtins[] = {
      {EMA_POLICY_BORROW, "none"},
      {EMA_POLICY_PREFETCH, "direct"},
      {EMA_POLICY_RECLAIM, "drop"},
  };
  for (guint i = 0; i < G_N_ELEMENTS(builtins); i++) {
    GError *error = NULL;
    const EmaPolicyInfo *info =
        ema_policy_registry_find(builtins[i].kind, builtins[i].name, &error);
    g_assert_no_error(error);
    g_assert_nonnull(info);
    g_assert_cmpint(info->kind, ==, builtins[i].kind);
    g_assert_cmpstr(info->name, ==, builtins[i].name);
    g_assert_cmpstr(info->origin, ==, "built-in");
    g_assert_nonnull(info->summary);
    g_assert_nonnull(info->ops);
  }
  /* every built-in of the table is found and listed, with origin built-in */
  for (guint k = EMA_POLICY_BORROW; k <= EMA_POLICY_RECLAIM; k++) {
    g_autoptr(GPtrArray) list = ema_policy_registry_list(k);
    guint listed = 0, n = 0;
    assert_sorted(list);
    for (guint i = 0; i < list->len; i++)
      if (strcmp(((const EmaPolicyInfo *) list->pdata[i])->origin, "built-in") == 0)
        listed++;
    for (;; n++) {
      const char *name = builtin_name(k, n);
      const EmaPolicyInfo *info;
      if (name == NULL)
        break;
      info = ema_policy_registry_find(k, name, NULL);
      g_assert_nonnull(info);
      g_assert_cmpstr(info->origin, ==, "built-in");
    }
    g_assert_cmpuint(listed, ==, n);
  }
}

static void test_builtin_compositions(void) {
  g_autoptr(GPtrArray) list = ema_policy_registry_list_compositions();
  GError *error = NULL;
  const EmaPolicyComposition *c = ema_policy_registry_find_composition("static", &error);
  g_assert_no_error(error);
  g_assert_nonnull(c);
  g_assert_cmpstr(c->name, ==, "static");
  g_assert_nonnull(strstr(c->yaml, "borrow: none"));
  g_assert_cmpuint(list->len, >=, 1);
  for (guint i = 1; i < list->len; i++)
    g_assert_cmpint(strcmp(((const EmaPolicyComposition *) list->pdata[i - 1])->name,
                           ((const EmaPolicyComposition *) list->pdata[i])->name),
                    <, 0);
  for (guint i = 0; ema_builtin_compositions[i].name; i++)
    g_assert_true(ema_policy_registry_find_composition(ema_builtin_compositions[i].name, NULL) ==
                  &ema_builtin_compositions[i]);
}

/* ---- unknown names --------------------------------------------------------------- */

static void test_find_unknown(void) {
  for (guint k = EMA_POLICY_BORROW; k <= EMA_POLICY_RECLAIM; k++) {
    g_autoptr(GPtrArray) list = ema_policy_registry_list(k);
    g_autofree char *names = joined(list);
    g_autofree char *expected =
        g_strdup_printf("unknown %s policy 'nope' (known: %s)", ema_policy_kind_name(k), names);
    GError *error = NULL;
    g_assert_null(ema_policy_registry_find(k, "nope", &error));
    g_assert_error(error, EMA_POLICY_ERROR, EMA_POLICY_ERROR_UNKNOWN);
    g_assert_cmpstr(error->message, ==, expected);
    g_error_free(error);
  }
  {
    /* a policy of another kind: said so (it read as a name no kind has) */
    g_autoptr(GPtrArray) list = ema_policy_registry_list(EMA_POLICY_BORROW);
    g_autofree char *names = joined(list);
    g_autofree char *expected = g_strdup_printf(
        "unknown borrow policy 'migrate': it is a reclaim policy (borrow policies: %s)", names);
    GError *error = NULL;
    g_assert_null(ema_policy_registry_find(EMA_POLICY_BORROW, "migrate", &error));
    g_assert_error(error, EMA_POLICY_ERROR, EMA_POLICY_ERROR_UNKNOWN);
    g_assert_cmpstr(error->message, ==, expected);
    g_error_free(error);
  }
  {
    /* a composition: said so, with what `policy: NAME` is, from the composition's own table (it
     * read as a name no kind has); offload is a prefetch policy too */
    g_autoptr(GPtrArray) list = ema_policy_registry_list(EMA_POLICY_BORROW);
    g_autofree char *names = joined(list);
    const EmaPolicyComposition *ema = ema_policy_registry_find_composition("ema", NULL);
    const EmaPolicyComposition *offload = ema_policy_registry_find_composition("offload", NULL);
    g_autofree char *expected =
        g_strdup_printf("unknown borrow policy 'ema': it is a composition of policies (`policy: "
                        "ema` is %s; borrow policies: %s)",
                        ema->yaml, names);
    g_autofree char *expected_offload =
        g_strdup_printf("unknown borrow policy 'offload': it is a prefetch policy and a "
                        "composition of policies (`policy: offload` is %s; borrow policies: %s)",
                        offload->yaml, names);
    GError *error = NULL;
    g_assert_true(g_str_has_prefix(ema->yaml, "{borrow: most-idle, "));
    g_assert_null(ema_policy_registry_find(EMA_POLICY_BORROW, "ema", &error));
    g_assert_error(error, EMA_POLICY_ERROR, EMA_POLICY_ERROR_UNKNOWN);
    g_assert_cmpstr(error->message, ==, expected);
    g_clear_error(&error);
    g_assert_null(ema_policy_registry_find(EMA_POLICY_BORROW, "offload", &error));
    g_assert_cmpstr(error->message, ==, expected_offload);
    g_error_free(error);
  }
}

static void test_find_unknown_composition(void) {
  g_autoptr(GPtrArray) list = ema_policy_registry_list_compositions();
  g_autoptr(GString) names = g_string_new(NULL);
  g_autofree char *expected = NULL;
  g_autofree char *expected_policy = NULL;
  GError *error = NULL;
  for (guint i = 0; i < list->len; i++)
    g_string_append_printf(names, "%s%s", i ? ", " : "",
                           ((const EmaPolicyComposition *) list->pdata[i])->name);
  expected = g_strdup_printf("unknown policy 'nope' (known compositions: %s)", names->str);
  g_assert_null(ema_policy_registry_find_composition("nope", &error));
  g_assert_error(error, EMA_POLICY_ERROR, EMA_POLICY_ERROR_UNKNOWN);
  g_assert_cmpstr(error->message, ==, expected);
  g_clear_error(&error);
  /* one policy named where a composition goes: said, with the map that names it and the
   * compositions (it read as a name no composition has); `offload`, a prefetch policy too, is
   * the composition */
  expected_policy = g_strdup_printf("unknown policy 'most-idle': it is a borrow policy (write "
                                    "policy: {borrow: most-idle}, or a composition: %s)",
                                    names->str);
  g_assert_null(ema_policy_registry_find_composition("most-idle", &error));
  g_assert_error(error, EMA_POLICY_ERROR, EMA_POLICY_ERROR_UNKNOWN);
  g_assert_cmpstr(error->message, ==, expected_policy);
  g_clear_error(&error);
  g_assert_nonnull(ema_policy_registry_find_composition("offload", &error));
  g_assert_no_error(error);
}

/* ---- modules added in-process ------------------------------------------------------ */

static void noop_borrow(gpointer state, gconstpointer params, const EmaPoolView *view,
                        guint borrower, EmaBorrowPlan *plan) {}

static void noop_reclaim(gpointer state, gconstpointer params, const EmaPoolView *view,
                         guint lender, guint64 needed, EmaReclaimPlan *plan) {}

static void test_add_module(void) {
  static const EmaBorrowPolicyOps b = {.abi_version = EMA_POLICY_ABI_VERSION,
                                       .name = "inproc-b",
                                       .summary = "added in-process",
                                       .decide = noop_borrow};
  static const EmaBorrowPolicyOps a = {.abi_version = EMA_POLICY_ABI_VERSION,
                                       .name = "inproc-a",
                                       .summary = "added in-process",
                                       .decide = noop_borrow};
  static const EmaBorrowPolicyOps *const borrow[] = {&b, &a, NULL};
  static const EmaPolicyModule module = {EMA_POLICY_ABI_VERSION, borrow, NULL, NULL};
  g_autoptr(GPtrArray) list = NULL;
  GError *error = NULL;
  const EmaPolicyInfo *info;

  g_assert_true(ema_policy_registry_add_module(&module, "test-add-module", &error));
  g_assert_no_error(error);
  info = ema_policy_registry_find(EMA_POLICY_BORROW, "inproc-a", &error);
  g_assert_no_error(error);
  g_assert_cmpstr(info->origin, ==, "test-add-module");
  g_assert_true(info->ops == &a);
  list = ema_policy_registry_list(EMA_POLICY_BORROW);
  assert_sorted(list);

  /* a second time, every name is taken */
  g_assert_false(ema_policy_registry_add_module(&module, "again", &error));
  g_assert_error(error, EMA_POLICY_ERROR, EMA_POLICY_ERROR_DUPLICATE);
  g_assert_cmpstr(error->message, ==,
                  "again: borrow policy 'inproc-b': already registered (test-add-module)");
  g_clear_error(&error);

  {
    /* a name two kinds have, named where a composition goes: both kinds, both maps */
    static const EmaBorrowPolicyOps twice_b = {.abi_version = EMA_POLICY_ABI_VERSION,
                                               .name = "inproc-twice",
                                               .summary = "added in-process",
                                               .decide = noop_borrow};
    static const EmaReclaimPolicyOps twice_r = {.abi_version = EMA_POLICY_ABI_VERSION,
                                                .name = "inproc-twice",
                                                .summary = "added in-process",
                                                .decide = noop_reclaim};
    static const EmaBorrowPolicyOps *const borrow_twice[] = {&twice_b, NULL};
    static const EmaReclaimPolicyOps *const reclaim_twice[] = {&twice_r, NULL};
    static const EmaPolicyModule twice = {EMA_POLICY_ABI_VERSION, borrow_twice, NULL,
                                          reclaim_twice};
    g_assert_true(ema_policy_registry_add_module(&twice, "test-twice", &error));
    g_assert_no_error(error);
    g_assert_null(ema_policy_registry_find_composition("inproc-twice", &error));
    g_assert_error(error, EMA_POLICY_ERROR, EMA_POLICY_ERROR_UNKNOWN);
    g_assert_true(g_str_has_prefix(error->message,
                                   "unknown policy 'inproc-twice': it is a borrow and a reclaim "
                                   "policy (write policy: {borrow: inproc-twice} or policy: "
                                   "{reclaim: inproc-twice}, or a composition: ema, "));
    g_clear_error(&error);
  }
}

static void test_add_module_all_or_nothing(void) {
  /* valid policies first, the broken one last, in another kind */
  static const EmaBorrowPolicyOps good = {.abi_version = EMA_POLICY_ABI_VERSION,
                                          .name = "atomic-good",
                                          .summary = "valid",
                                          .decide = noop_borrow};
  static const EmaReclaimPolicyOps big = {.abi_version = EMA_POLICY_ABI_VERSION,
                                          .name = "atomic-big",
                                          .summary = "too much private state",
                                          .state_size = 1 << 20,
                                          .decide = noop_reclaim};
  static const EmaReclaimPolicyOps nameless = {
      .abi_version = EMA_POLICY_ABI_VERSION, .summary = "no name", .decide = noop_reclaim};
  static const EmaBorrowPolicyOps *const borrow[] = {&good, NULL};
  static const EmaReclaimPolicyOps *const reclaim_big[] = {&big, NULL};
  static const EmaReclaimPolicyOps *const reclaim_nameless[] = {&nameless, NULL};
  static const EmaPolicyModule module_big = {EMA_POLICY_ABI_VERSION, borrow, NULL, reclaim_big};
  static const EmaPolicyModule module_nameless = {EMA_POLICY_ABI_VERSION, borrow, NULL,
                                                  reclaim_nameless};
  GError *error = NULL;

  g_assert_false(ema_policy_registry_add_module(&module_big, "atomic", &error));
  g_assert_error(error, EMA_POLICY_ERROR, EMA_POLICY_ERROR_INVALID);
  g_assert_cmpstr(
      error->message, ==,
      "atomic: reclaim policy 'atomic-big': state_size 1048576 bytes is not below 1 MiB");
  g_clear_error(&error);
  assert_unknown(EMA_POLICY_BORROW, "atomic-good");
  assert_unknown(EMA_POLICY_RECLAIM, "atomic-big");

  g_assert_false(ema_policy_registry_add_module(&module_nameless, "atomic", &error));
  g_assert_error(error, EMA_POLICY_ERROR, EMA_POLICY_ERROR_INVALID);
  g_assert_cmpstr(error->message, ==, "atomic: reclaim policy #1: no name");
  g_clear_error(&error);
  assert_unknown(EMA_POLICY_BORROW, "atomic-good");
}

/* ---- the example module -------------------------------------------------------------- */

static void assert_neighbour_loaded(void) {
  GError *error = NULL;
  const EmaPolicyInfo *info = ema_policy_registry_find(EMA_POLICY_BORROW, "neighbour", &error);
  g_autoptr(GString) text = g_string_new(NULL);
  g_assert_no_error(error);
  g_assert_nonnull(info);
  /* the path it was first loaded from: directly, or a link in a folder */
  g_assert_true(g_str_has_suffix(info->origin, "ema-policy-neighbour." G_MODULE_SUFFIX));
  g_assert_nonnull(info->params);
  ema_params_describe(info->params, text, 2);
  g_assert_nonnull(strstr(text->str, "reserve"));
  g_assert_nonnull(strstr(text->str, "min_borrow"));
  g_assert_nonnull(strstr(text->str, "default 0"));
  g_assert_true(ema_params_check_defaults(info->params, NULL));
}

static void test_example_by_path(void) {
  GError *error = NULL;
  g_assert_true(ema_policy_registry_load_file(neighbour_path(), &error));
  g_assert_no_error(error);
  assert_neighbour_loaded();
  /* loading it again registers nothing new and is no error */
  g_assert_true(ema_policy_registry_load_file(neighbour_path(), &error));
  g_assert_no_error(error);
}

static void test_example_by_dir(void) {
  g_autofree char *dir = ema_test_temp_dir();
  g_autofree char *readme = g_build_filename(dir, "README", NULL);
  g_autofree char *name = g_strconcat("ema-policy-neighbour.", G_MODULE_SUFFIX, NULL);
  const char *dirs[] = {dir, NULL};
  GError *error = NULL;

  ema_test_link_into(dir, name, neighbour_path());
  /* files without the module suffix are ignored */
  g_assert_true(g_file_set_contents(readme, "not a module\n", -1, NULL));
  g_assert_true(ema_policy_registry_load_dirs(dirs, &error));
  g_assert_no_error(error);
  assert_neighbour_loaded();
  ema_test_remove_tree(dir);
}

/* The example decides as documented on a two-GPU view. */
static void test_example_decides(void) {
  const EmaPolicyInfo *info;
  const EmaBorrowPolicyOps *ops;
  g_autofree gpointer params = NULL;
  gpointer states[2];
  EmaGpuView gpus[2] = {{0}};
  guint64 lent[4] = {0}, remote_blocks[4] = {0};
  EmaPoolView view = {
      .now = 0, .n_gpus = 2, .gpus = gpus, .lent = lent, .remote_blocks = remote_blocks};
  EmaBorrowPlan plan = {0};
  GError *error = NULL;

  g_assert_true(ema_policy_registry_load_file(neighbour_path(), &error));
  info = ema_policy_registry_find(EMA_POLICY_BORROW, "neighbour", &error);
  g_assert_no_error(error);
  ops = info->ops;
  params = g_malloc0(info->params->size);
  g_assert_true(ema_params_bind(info->params, params, NULL, NULL, &error));
  g_assert_no_error(error);
  /* a server of one GPU has no neighbour */
  if (ops->init) {
    EmaPoolView alone = {.n_gpus = 1, .gpus = gpus, .lent = lent, .remote_blocks = remote_blocks};
    gpointer state = g_malloc0(MAX(ops->state_size, 1));
    g_assert_false(ops->init(state, params, &alone, &error));
    g_assert_nonnull(error);
    g_clear_error(&error);
    g_free(state);
  }
  /* one private state per GPU, as the simulator keeps them */
  for (guint g = 0; g < 2; g++) {
    states[g] = g_malloc0(MAX(ops->state_size, 1));
    g_assert_true(ops->init == NULL || ops->init(states[g], params, &view, &error));
    g_assert_no_error(error);
  }

  for (guint g = 0; g < 2; g++)
    gpus[g] = (EmaGpuView){.index = g,
                           .shares = TRUE,
                           .has_tenant = TRUE,
                           .slices = 1000,
                           .slices_used = 400,
                           .block_bytes = 1 << 19, /* 4 blocks a slice */
                           .blocks_total = 1600,
                           .blocks_used = 1600};
  /* GPU 0 lacked 10 blocks: 10 x 512 KiB = 2.5 slices, rounded up to 3 */
  gpus[0].blocks_short = 10;
  ops->decide(states[0], params, &view, 0, &plan);
  g_assert_cmpuint(plan.n, ==, 1);
  g_assert_cmpuint(plan.actions[0].lender, ==, 1);
  g_assert_cmpint(plan.actions[0].slices, ==, 3);

  /* GPU 1 lacked blocks too: its neighbour is GPU 0, which cannot lend
   * more than it has free */
  gpus[0].blocks_short = 0;
  gpus[0].slices_used = 999;
  gpus[1].blocks_short = 40;
  plan = (EmaBorrowPlan){0};
  ops->decide(states[1], params, &view, 1, &plan);
  g_assert_cmpuint(plan.n, ==, 1);
  g_assert_cmpuint(plan.actions[0].lender, ==, 0);
  g_assert_cmpint(plan.actions[0].slices, ==, 1);

  /* later GPU 0 has plenty of free blocks and 3 empty borrowed slices:
   * after the hold time it returns them to GPU 1 */
  gpus[0] = (EmaGpuView){.index = 0,
                         .shares = TRUE,
                         .has_tenant = TRUE,
                         .slices = 1000,
                         .slices_used = 100,
                         .slices_borrowed = 3,
                         .block_bytes = 1 << 19,
                         .blocks_total = 1612,
                         .blocks_used = 400};
  lent[1 * 2 + 0] = 3; /* GPU 1 lends GPU 0 three slices, none of them in use */
  view.now = 5000000;  /* 5 ms: within the default hold of 10 ms */
  plan = (EmaBorrowPlan){0};
  ops->decide(states[0], params, &view, 0, &plan);
  g_assert_cmpuint(plan.n, ==, 0);
  view.now = 20000000;
  /* nearly full: the empty slices are all its free room, so it keeps them */
  gpus[0].blocks_used = 1600;
  ops->decide(states[0], params, &view, 0, &plan);
  g_assert_cmpuint(plan.n, ==, 0);
  gpus[0].blocks_used = 400;
  ops->decide(states[0], params, &view, 0, &plan);
  g_assert_cmpuint(plan.n, ==, 1);
  g_assert_cmpuint(plan.actions[0].lender, ==, 1);
  g_assert_cmpint(plan.actions[0].slices, ==, -3);

  /* a block larger than a slice (12.5 MiB, as OPT-13B's 13 MB): of 20 borrowed slices, its one
   * remote block fills 7, and the 13 empty ones (2 blocks of room) go back */
  gpus[0].block_bytes = 25 << 19;
  gpus[0].slices_borrowed = 20;
  gpus[0].blocks_total = 200;
  gpus[0].blocks_used = 10;
  gpus[0].blocks_remote = 1;
  lent[1 * 2 + 0] = 20;
  remote_blocks[0 * 2 + 1] = 1;
  plan = (EmaBorrowPlan){0};
  ops->decide(states[0], params, &view, 0, &plan);
  g_assert_cmpuint(plan.n, ==, 1);
  g_assert_cmpuint(plan.actions[0].lender, ==, 1);
  g_assert_cmpint(plan.actions[0].slices, ==, -13);
  ema_params_clear(info->params, params);
  g_free(states[0]);
  g_free(states[1]);
}

/* policies/README.md lists the example in full, as it is. */
static void test_example_in_readme(void) {
  g_autofree char *readme_path =
      g_build_filename(g_getenv("EMA_SOURCE_ROOT"), "policies", "README.md", NULL);
  g_autofree char *example_path = g_build_filename(g_getenv("EMA_SOURCE_ROOT"), "policies",
                                                   "examples", "borrow-neighbour.c", NULL);
  g_autofree char *readme = NULL;
  g_autofree char *example = NULL;
  g_autofree char *block = NULL;
  GError *error = NULL;
  g_assert_true(g_file_get_contents(readme_path, &readme, NULL, &error));
  g_assert_true(g_file_get_contents(example_path, &example, NULL, &error));
  g_assert_no_error(error);
  block = g_strconcat("```c\n", example, "```\n", NULL);
  if (strstr(readme, block) == NULL)
    g_error("policies/README.md does not list policies/examples/borrow-neighbour.c as it is now");
}

/* ---- broken modules ---------------------------------------------------------------- */

/* Each broken module also lists a valid borrow policy MODULE-ok before the
 * broken one: neither may be registered after the refusal. */
typedef struct {
  const char *module;      /* file name without the suffix */
  gint code;               /* the error expected (EmaPolicyError) */
  const char *message;     /* after "PATH: " */
  EmaPolicyKind kind;      /* the kind of the broken policy */
  const char *broken_name; /* its name, when it could be registered at all (or NULL) */
} BrokenCase;

static const BrokenCase broken_cases[] = {
    {"no-symbol", EMA_POLICY_ERROR_SYMBOL,
     "not an EMA policy module (no symbol 'ema_policy_module')", EMA_POLICY_BORROW, NULL},
    {"module-abi", EMA_POLICY_ERROR_ABI, "module ABI version 99, expected 1", EMA_POLICY_BORROW,
     NULL},
    {"ops-abi", EMA_POLICY_ERROR_ABI, "borrow policy #2: ABI version 2, expected 1",
     EMA_POLICY_BORROW, "ops-abi"},
    {"no-decide", EMA_POLICY_ERROR_INVALID, "borrow policy 'no-decide': no decide hook",
     EMA_POLICY_BORROW, "no-decide"},
    {"bad-name-upper", EMA_POLICY_ERROR_INVALID,
     "borrow policy 'Neighbour': bad name (a-z or 0-9 first, then only a-z, 0-9 and '-')",
     EMA_POLICY_BORROW, NULL},
    {"bad-name-space", EMA_POLICY_ERROR_INVALID,
     "reclaim policy 'two words': bad name (a-z or 0-9 first, then only a-z, 0-9 and '-')",
     EMA_POLICY_RECLAIM, NULL},
    {"no-summary", EMA_POLICY_ERROR_INVALID, "borrow policy 'no-summary': no summary",
     EMA_POLICY_BORROW, "no-summary"},
    {"bad-name-dash", EMA_POLICY_ERROR_INVALID,
     "borrow policy '-': bad name (a-z or 0-9 first, then only a-z, 0-9 and '-')",
     EMA_POLICY_BORROW, NULL},
    {"summary-newline", EMA_POLICY_ERROR_INVALID,
     "borrow policy 'two-lines': the summary holds a control character (it is one line)",
     EMA_POLICY_BORROW, NULL},
    {"empty-module", EMA_POLICY_ERROR_INVALID,
     "the module registers no policy (its borrow, prefetch and reclaim lists are empty)",
     EMA_POLICY_BORROW, NULL},
    {"builtin-dup", EMA_POLICY_ERROR_DUPLICATE,
     "prefetch policy 'direct': already registered (built-in)", EMA_POLICY_PREFETCH, NULL},
    {"module-dup", EMA_POLICY_ERROR_DUPLICATE, "reclaim policy 'twice': listed twice in the module",
     EMA_POLICY_RECLAIM, "twice"},
    {"bad-default", EMA_POLICY_ERROR_INVALID,
     "borrow policy 'bad-default': bad-default.count: bad default 'abc': 'abc' is not a number",
     EMA_POLICY_BORROW, "bad-default"},
    {"reserved", EMA_POLICY_ERROR_INVALID, "borrow policy 'reserved': reserved slot 2 is not NULL",
     EMA_POLICY_BORROW, "reserved"},
};

static void test_broken(gconstpointer data) {
  const BrokenCase *c = data;
  g_autofree char *path = module_path(c->module);
  g_autofree char *expected = g_strdup_printf("%s: %s", path, c->message);
  g_autofree char *valid_name = g_strconcat(c->module, "-ok", NULL);
  GError *error = NULL;

  g_assert_false(ema_policy_registry_load_file(path, &error));
  g_assert_error(error, EMA_POLICY_ERROR, c->code);
  g_assert_cmpstr(error->message, ==, expected);
  g_clear_error(&error);
  assert_unknown(EMA_POLICY_BORROW, valid_name);
  if (c->broken_name)
    assert_unknown(c->kind, c->broken_name);
  /* a plugin never shadows a built-in */
  g_assert_cmpstr(ema_policy_registry_find(EMA_POLICY_PREFETCH, "direct", NULL)->origin, ==,
                  "built-in");
  /* refused again, the same way (nothing half-registered the first time) */
  g_assert_false(ema_policy_registry_load_file(path, &error));
  g_assert_cmpstr(error->message, ==, expected);
  g_clear_error(&error);
}

static void test_not_a_module(void) {
  g_autofree char *path =
      g_build_filename(g_getenv("EMA_TEST_FIXTURES"), "policies", "not-a-module.so", NULL);
  g_autofree char *prefix = g_strdup_printf("%s: cannot load: ", path);
  GError *error = NULL;
  g_assert_false(ema_policy_registry_load_file(path, &error));
  g_assert_error(error, EMA_POLICY_ERROR, EMA_POLICY_ERROR_LOAD);
  g_assert_true(g_str_has_prefix(error->message, prefix));
  g_assert_cmpuint(strlen(error->message), >, strlen(prefix));
  g_assert_null(strchr(error->message, '\n'));
  g_clear_error(&error);
}

static void test_missing_file(void) {
  GError *error = NULL;
  g_assert_false(ema_policy_registry_load_file("/nonexistent/ema-policy-x.so", &error));
  g_assert_error(error, EMA_POLICY_ERROR, EMA_POLICY_ERROR_LOAD);
  g_assert_cmpstr(error->message, ==, "/nonexistent/ema-policy-x.so: no such file");
  g_clear_error(&error);
}

/* ---- directories ------------------------------------------------------------------ */

static void test_missing_dir(void) {
  const char *dirs[] = {"/nonexistent/ema-plugins", NULL};
  GError *error = NULL;
  g_assert_false(ema_policy_registry_load_dirs(dirs, &error));
  g_assert_error(error, EMA_POLICY_ERROR, EMA_POLICY_ERROR_LOAD);
  g_assert_cmpstr(error->message, ==,
                  "plugin directory /nonexistent/ema-plugins: no such directory");
  g_clear_error(&error);
}

/* A folder is loaded in sorted file-name order and stops at the first
 * refused module. */
static void test_dir_order(void) {
  g_autofree char *dir = ema_test_temp_dir();
  g_autofree char *no_symbol = module_path("no-symbol");
  g_autofree char *no_decide = module_path("no-decide");
  g_autofree char *first = g_build_filename(dir, "a-first." G_MODULE_SUFFIX, NULL);
  g_autofree char *expected =
      g_strdup_printf("%s: not an EMA policy module (no symbol 'ema_policy_module')", first);
  const char *dirs[] = {dir, NULL};
  GError *error = NULL;

  /* created in the other order, so that directory order is unlikely to be
   * sorted by accident */
  ema_test_link_into(dir, "b-second." G_MODULE_SUFFIX, no_decide);
  ema_test_link_into(dir, "a-first." G_MODULE_SUFFIX, no_symbol);
  g_assert_false(ema_policy_registry_load_dirs(dirs, &error));
  g_assert_error(error, EMA_POLICY_ERROR, EMA_POLICY_ERROR_SYMBOL);
  g_assert_cmpstr(error->message, ==, expected);
  g_clear_error(&error);
  assert_unknown(EMA_POLICY_BORROW, "no-decide-ok");
  ema_test_remove_tree(dir);
}

static void test_plugin_path(void) {
  g_autofree char *dir = ema_test_temp_dir();
  g_autofree char *probe = module_path("path-probe");
  g_autofree char *linked = g_build_filename(dir, "path-probe." G_MODULE_SUFFIX, NULL);
  g_autofree char *env =
      g_strjoin(G_SEARCHPATH_SEPARATOR_S, "/nonexistent/ema-plugins", "", dir, NULL);
  GError *error = NULL;
  const EmaPolicyInfo *info;

  ema_test_link_into(dir, "path-probe." G_MODULE_SUFFIX, probe);
  g_assert_true(g_setenv("EMA_PLUGIN_PATH", env, TRUE));
  /* missing and empty entries of the search path are skipped */
  g_assert_true(ema_policy_registry_load_dirs(NULL, &error));
  g_assert_no_error(error);
  g_unsetenv("EMA_PLUGIN_PATH");
  info = ema_policy_registry_find(EMA_POLICY_PREFETCH, "path-probe", &error);
  g_assert_no_error(error);
  g_assert_cmpstr(info->origin, ==, linked);
  ema_test_remove_tree(dir);
}

int main(int argc, char **argv) {
  g_test_init(&argc, &argv, NULL);
  g_unsetenv("EMA_PLUGIN_PATH");
  g_test_add_func("/registry/kind-names", test_kind_names);
  g_test_add_func("/registry/builtins", test_builtins);
  g_test_add_func("/registry/builtin-compositions", test_builtin_compositions);
  g_test_add_func("/registry/find-unknown", test_find_unknown);
  g_test_add_func("/registry/find-unknown-composition", test_find_unknown_composition);
  g_test_add_func("/registry/add-module", test_add_module);
  g_test_add_func("/registry/add-module-all-or-nothing", test_add_module_all_or_nothing);
  g_test_add_func("/registry/example/by-path", test_example_by_path);
  g_test_add_func("/registry/example/by-dir", test_example_by_dir);
  g_test_add_func("/registry/example/decides", test_example_decides);
  g_test_add_func("/registry/example/in-readme", test_example_in_readme);
  for (guint i = 0; i < G_N_ELEMENTS(broken_cases); i++) {
    g_autofree char *name = g_strdup_printf("/registry/broken/%s", broken_cases[i].module);
    g_test_add_data_func(name, &broken_cases[i], test_broken);
  }
  g_test_add_func("/registry/broken/not-a-module", test_not_a_module);
  g_test_add_func("/registry/broken/missing-file", test_missing_file);
  g_test_add_func("/registry/dirs/missing", test_missing_dir);
  g_test_add_func("/registry/dirs/order", test_dir_order);
  g_test_add_func("/registry/dirs/plugin-path", test_plugin_path);
  return g_test_run();
}
