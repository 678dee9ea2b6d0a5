/* test-config.c: the configuration layer, library-level: YAML loading into
 * located nodes (node.c: locations, !include, cycles, syntax errors,
 * duplicate keys, anchors, tags, empty and non-UTF-8 input), parameter
 * tables (params.c: defaults, every type, exact error texts, the check hook,
 * write -> load -> bind round trips), --set overrides, default checks of
 * the built-in tables, the server models in hwmodels/servers/ and their
 * search path (hwmodel.c), experiment loading and resolved.yaml
 * (experiment.c), and the ops workload on the h200x2 baseline (ops.c).
 *
 * Fixtures: tests/fixtures/config/ and tests/fixtures/experiments/, found
 * through EMA_TEST_FIXTURES; the repository through EMA_SOURCE_ROOT. */
#include <math.h>
#include <string.h>

#include <glib/gstdio.h>

#include "ema/run/experiment.h"
#include "ema/hw/hwmodel.h"
#include "ema/core/node.h"
#include "ema/run/ops.h"
#include "ema/core/params.h"
#include "ema/core/units.h"

/* ---- helpers ------------------------------------------------------------ */

static char *fixture_path(const char *folder, const char *rel) {
  const char *dir = g_getenv("EMA_TEST_FIXTURES");
  g_assert_nonnull(dir);
  return g_build_filename(dir, folder, rel, NULL);
}

static char *config_fixture(const char *rel) {
  return fixture_path("config", rel);
}

static char *experiment_fixture(const char *rel) {
  return fixture_path("experiments", rel);
}

static char *source_path(const char *rel) {
  const char *root = g_getenv("EMA_SOURCE_ROOT");
  g_assert_nonnull(root);
  return g_build_filename(root, rel, NULL);
}

static char *baseline_path(void) {
  return source_path("experiments/calibration/h200x2-baseline.yaml");
}

/* ERROR is one line of EMA_CONFIG_ERROR CODE; MESSAGE (exact), PREFIX and
 * CONTAINS are each checked when not NULL. Frees ERROR. */
static void check_error(GError *error, gint code, const char *message, const char *prefix,
                        const char *contains) {
  g_assert_nonnull(error);
  if (g_test_verbose())
    g_test_message("error: %s", error->message);
  g_assert_error(error, EMA_CONFIG_ERROR, code);
  g_assert_null(strchr(error->message, '\n'));
  if (message)
    g_assert_cmpstr(error->message, ==, message);
  if (prefix && !g_str_has_prefix(error->message, prefix))
    g_error("error '%s' does not start with '%s'", error->message, prefix);
  if (contains && strstr(error->message, contains) == NULL)
    g_error("error '%s' does not contain '%s'", error->message, contains);
  g_error_free(error);
}

static EmaNode *load_ok(const char *text) {
  GError *error = NULL;
  EmaNode *node = ema_node_load_string(text, "t.yaml", NULL, &error);
  g_assert_no_error(error);
  g_assert_nonnull(node);
  return node;
}

static void load_fails(const char *text, gint code, const char *message) {
  GError *error = NULL;
  EmaNode *node = ema_node_load_string(text, "t.yaml", NULL, &error);
  if (node)
    g_error("'%s' loaded, expected: %s", text, message);
  check_error(error, code, message, NULL, NULL);
}

static void assert_node(const EmaNode *node, EmaNodeKind kind, const char *file, guint line,
                        guint col) {
  g_assert_nonnull(node);
  g_assert_cmpint(node->kind, ==, kind);
  g_assert_cmpstr(node->file, ==, file);
  g_assert_cmpuint(node->line, ==, line);
  g_assert_cmpuint(node->col, ==, col);
}

static void assert_scalar(const EmaNode *node, const char *value, const char *file, guint line,
                          guint col) {
  assert_node(node, EMA_NODE_SCALAR, file, line, col);
  g_assert_cmpstr(node->value, ==, value);
}

static const EmaNode *item(const EmaNode *node, guint i) {
  g_assert_nonnull(node->items);
  g_assert_cmpuint(i, <, node->items->len);
  return node->items->pdata[i];
}

/* ---- node loading ------------------------------------------------------- */

static void test_node_locations(void) {
  g_autoptr(EmaNode) root = load_ok("a: 1\n"
                                    "b:\n"
                                    "  c: [x, {d: 2}]\n"
                                    "  e:\n"
                                    "    - 5\n"
                                    "    - \"q r\"\n"
                                    "f: ~\n"
                                    "g: ''\n"
                                    "h:\n"
                                    "i: null\n");
  const EmaNode *b, *c, *e;

  assert_node(root, EMA_NODE_MAP, "t.yaml", 1, 1);
  g_assert_cmpuint(root->keys->len, ==, 6);
  g_assert_cmpuint(root->items->len, ==, 6);
  assert_scalar(ema_node_get_key(root, "a"), "a", "t.yaml", 1, 1);
  assert_scalar(ema_node_get(root, "a"), "1", "t.yaml", 1, 4);
  assert_scalar(ema_node_get_key(root, "b"), "b", "t.yaml", 2, 1);
  b = ema_node_get(root, "b");
  assert_node(b, EMA_NODE_MAP, "t.yaml", 3, 3);
  c = ema_node_get(b, "c");
  assert_node(c, EMA_NODE_SEQ, "t.yaml", 3, 6);
  g_assert_null(c->keys);
  g_assert_cmpuint(c->items->len, ==, 2);
  assert_scalar(item(c, 0), "x", "t.yaml", 3, 7);
  assert_node(item(c, 1), EMA_NODE_MAP, "t.yaml", 3, 10);
  assert_scalar(ema_node_get_key(item(c, 1), "d"), "d", "t.yaml", 3, 11);
  assert_scalar(ema_node_get(item(c, 1), "d"), "2", "t.yaml", 3, 14);
  e = ema_node_get(b, "e");
  assert_node(e, EMA_NODE_SEQ, "t.yaml", 5, 5);
  assert_scalar(item(e, 0), "5", "t.yaml", 5, 7);
  assert_scalar(item(e, 1), "q r", "t.yaml", 6, 7);
  /* nulls: ~, empty and null are NULL; a quoted empty string is not */
  assert_scalar(ema_node_get(root, "f"), NULL, "t.yaml", 7, 4);
  assert_scalar(ema_node_get(root, "g"), "", "t.yaml", 8, 4);
  g_assert_null(ema_node_get(root, "h")->value);
  g_assert_null(ema_node_get(root, "i")->value);
  g_assert_null(ema_node_get(root, "nope"));
  g_assert_null(ema_node_get_key(root, "nope"));
}

static void test_node_scalar_root(void) {
  g_autoptr(EmaNode) scalar = load_ok("  hello\n");
  g_autoptr(EmaNode) seq = load_ok("\n- 1\n- 2\n");
  assert_scalar(scalar, "hello", "t.yaml", 1, 3);
  assert_node(seq, EMA_NODE_SEQ, "t.yaml", 2, 1);
  assert_scalar(item(seq, 1), "2", "t.yaml", 3, 3);
}

static void test_node_include(void) {
  g_autofree char *main_path = config_fixture("include-main.yaml");
  g_autofree char *child_path = config_fixture("sub/child.yaml");
  g_autofree char *grand_path = config_fixture("sub/grand.yaml");
  g_autofree char *leaf_path = config_fixture("leaf.yaml");
  GError *error = NULL;
  g_autoptr(EmaNode) root = ema_node_load_file(main_path, &error);
  const EmaNode *child, *inner, *list;

  g_assert_no_error(error);
  assert_node(root, EMA_NODE_MAP, main_path, 2, 1);
  assert_scalar(ema_node_get(root, "top"), "1", main_path, 2, 6);
  /* an included tree keeps the locations of the file it came from */
  child = ema_node_get(root, "child");
  assert_node(child, EMA_NODE_MAP, child_path, 2, 1);
  assert_scalar(ema_node_get_key(root, "child"), "child", main_path, 3, 1);
  assert_scalar(ema_node_get(child, "value"), "child", child_path, 2, 8);
  /* sub/child.yaml includes grand.yaml: relative to sub/, not to the top */
  inner = ema_node_get(child, "inner");
  assert_node(inner, EMA_NODE_MAP, grand_path, 2, 1);
  assert_scalar(ema_node_get(inner, "deep"), "42", grand_path, 2, 7);
  list = ema_node_get(root, "list");
  assert_node(list, EMA_NODE_SEQ, main_path, 5, 3);
  assert_node(item(list, 0), EMA_NODE_MAP, leaf_path, 2, 1);
  assert_scalar(ema_node_get(item(list, 0), "name"), "leaf", leaf_path, 2, 7);
}

static void test_node_include_from_string(void) {
  g_autofree char *dir = config_fixture(".");
  g_autofree char *leaf_path = g_build_filename(dir, "leaf.yaml", NULL);
  GError *error = NULL;
  g_autoptr(EmaNode) root = ema_node_load_string("x: !include leaf.yaml\n", "s.yaml", dir, &error);
  g_assert_no_error(error);
  assert_node(ema_node_get(root, "x"), EMA_NODE_MAP, leaf_path, 2, 1);
}

static void test_node_include_cycle(void) {
  g_autofree char *a = config_fixture("cycle-a.yaml");
  g_autofree char *b = config_fixture("cycle-b.yaml");
  g_autofree char *self = config_fixture("self-include.yaml");
  g_autofree char *b_at = g_strdup_printf("%s:2:4: !include cycle-a.yaml: ", b);
  g_autofree char *self_at = g_strdup_printf("%s:2:5: !include self-include.yaml: ", self);
  GError *error = NULL;

  /* the error is reported where the include that closes the cycle is */
  g_assert_null(ema_node_load_file(a, &error));
  check_error(error, EMA_CONFIG_ERROR_IO, NULL, b_at, "include cycle");
  error = NULL;
  g_assert_null(ema_node_load_file(self, &error));
  check_error(error, EMA_CONFIG_ERROR_IO, NULL, self_at, "include cycle");
}

static void test_node_include_missing(void) {
  g_autofree char *path = config_fixture("missing-include.yaml");
  g_autofree char *missing = config_fixture("does-not-exist.yaml");
  g_autofree char *at = g_strdup_printf("%s:3:4: !include does-not-exist.yaml: ", path);
  GError *error = NULL;
  g_assert_null(ema_node_load_file(path, &error));
  check_error(error, EMA_CONFIG_ERROR_IO, NULL, at, missing);
}

/* A missing include two files down is reported at the include that names
 * it (file:line:col of sub/missing-inner.yaml), not at the outer include. */
static void test_node_include_missing_nested(void) {
  g_autofree char *path = config_fixture("nested-missing.yaml");
  g_autofree char *inner = config_fixture("sub/missing-inner.yaml");
  g_autofree char *missing = config_fixture("sub/nope.yaml");
  g_autofree char *at = g_strdup_printf("%s:4:8: !include nope.yaml: ", inner);
  GError *error = NULL;
  g_assert_null(ema_node_load_file(path, &error));
  check_error(error, EMA_CONFIG_ERROR_IO, NULL, at, missing);
}

static void test_node_include_syntax_error(void) {
  g_autofree char *path = config_fixture("include-malformed.yaml");
  g_autofree char *bad = config_fixture("sub/malformed.yaml");
  g_autofree char *message = g_strdup_printf(
      "%s:4:2: did not find expected ',' or ']' while parsing a flow sequence", bad);
  GError *error = NULL;
  g_assert_null(ema_node_load_file(path, &error));
  check_error(error, EMA_CONFIG_ERROR_SYNTAX, message, NULL, NULL);
}

static void test_node_include_empty_name(void) {
  load_fails("a: !include ''\n", EMA_CONFIG_ERROR_IO, "t.yaml:1:4: !include needs a file name");
}

static void test_node_missing_file(void) {
  g_autofree char *path = config_fixture("no-such-file.yaml");
  GError *error = NULL;
  g_assert_null(ema_node_load_file(path, &error));
  check_error(error, EMA_CONFIG_ERROR_IO, NULL, NULL, path);
}

static void test_node_malformed(void) {
  /* unclosed bracket: reported where the parser gives up */
  load_fails("a: [1, 2\n", EMA_CONFIG_ERROR_SYNTAX,
             "t.yaml:2:1: did not find expected ',' or ']' while parsing a flow sequence");
  load_fails("a: {b: 1\nc: 2\n", EMA_CONFIG_ERROR_SYNTAX,
             "t.yaml:2:2: did not find expected ',' or '}' while parsing a flow mapping");
  /* bad indentation */
  load_fails("a:\n  b: 1\n   c: 2\n", EMA_CONFIG_ERROR_SYNTAX,
             "t.yaml:3:5: mapping values are not allowed in this context");
  load_fails("a: 1\n b: 2\n", EMA_CONFIG_ERROR_SYNTAX,
             "t.yaml:2:3: mapping values are not allowed in this context");
  /* unclosed quote */
  load_fails("a: \"abc\n", EMA_CONFIG_ERROR_SYNTAX,
             "t.yaml:2:1: found unexpected end of stream while scanning a quoted scalar");
  /* a second document */
  load_fails("--- 1\n--- 2\n", EMA_CONFIG_ERROR_SYNTAX,
             "t.yaml:2:1: only one YAML document per file is allowed");
  /* a map as a key */
  load_fails("? {a: 1}\n: 2\n", EMA_CONFIG_ERROR_SYNTAX,
             "t.yaml:1:3: map keys must be plain names");
}

static void test_node_duplicate_key(void) {
  load_fails("a: 1\nb: 2\na: 3\n", EMA_CONFIG_ERROR_KEY, "t.yaml:3:1: duplicate key 'a'");
  load_fails("m: {x: 1, x: 2}\n", EMA_CONFIG_ERROR_KEY, "t.yaml:1:11: duplicate key 'x'");
  load_fails("s:\n  - k: 1\n    k: 1\n", EMA_CONFIG_ERROR_KEY, "t.yaml:3:5: duplicate key 'k'");
}

static void test_node_anchors(void) {
  load_fails("a: &x 1\nb: *x\n", EMA_CONFIG_ERROR_SYNTAX,
             "t.yaml:1:4: YAML anchors (&name) are not supported");
  load_fails("a: &m {b: 1}\n", EMA_CONFIG_ERROR_SYNTAX,
             "t.yaml:1:4: YAML anchors (&name) are not supported");
  load_fails("a: &s [1]\n", EMA_CONFIG_ERROR_SYNTAX,
             "t.yaml:1:4: YAML anchors (&name) are not supported");
  load_fails(
      "a: 1\nb: *x\n", EMA_CONFIG_ERROR_SYNTAX,
      "t.yaml:2:4: YAML aliases (*name) are not supported; repeat the value or use !include");
  load_fails("*x : 1\n", EMA_CONFIG_ERROR_SYNTAX, "t.yaml:1:1: map keys must be plain names");
}

/* node.c promises "anchors and aliases are rejected": on keys too. */
static void test_node_anchor_on_key(void) {
  load_fails("&k a: 1\n", EMA_CONFIG_ERROR_SYNTAX,
             "t.yaml:1:1: YAML anchors (&name) are not supported");
}

static void test_node_tags(void) {
  g_autoptr(EmaNode) std = NULL;
  load_fails("a: !foo 1\n", EMA_CONFIG_ERROR_SYNTAX,
             "t.yaml:1:4: unknown tag '!foo' (the only tag EMA knows is !include)");
  load_fails("a:\n  - !inklude x.yaml\n", EMA_CONFIG_ERROR_SYNTAX,
             "t.yaml:2:5: unknown tag '!inklude' (the only tag EMA knows is !include)");
  /* standard YAML tags (!!str) pass as plain scalars */
  std = load_ok("a: !!str 1\n");
  g_assert_cmpstr(ema_node_get(std, "a")->value, ==, "1");
}

/* An unknown tag on a map, a list or a key must not be silently dropped. */
static void test_node_tags_on_containers(void) {
  load_fails("a: !foo {b: 1}\n", EMA_CONFIG_ERROR_SYNTAX,
             "t.yaml:1:4: unknown tag '!foo' (the only tag EMA knows is !include)");
  load_fails("a: !foo [1]\n", EMA_CONFIG_ERROR_SYNTAX,
             "t.yaml:1:4: unknown tag '!foo' (the only tag EMA knows is !include)");
  /* !include on a map: a misuse, not a silent no-op */
  {
    GError *error = NULL;
    g_assert_null(ema_node_load_string("a: !include\n  b: 1\n", "t.yaml", NULL, &error));
    g_assert_nonnull(error);
    g_assert_true(error->domain == EMA_CONFIG_ERROR);
    g_assert_true(g_str_has_prefix(error->message, "t.yaml:1:4: "));
    g_assert_nonnull(strstr(error->message, "!include"));
    g_error_free(error);
  }
  load_fails("!foo a: 1\n", EMA_CONFIG_ERROR_SYNTAX, "t.yaml:1:1: a map key takes no tag ('!foo')");
}

/* A core-schema tag says what its value is, and EMA read the text as written whatever the tag
 * (`duration: !!int 5s` ran 5 s): a value that is not one is an error at it, as EMA's readers
 * take one (decimal, no 0x, .inf or .nan; true or false), a map or list under another type's tag
 * too; a value that is one loads as before (!!null as a null, however written). */
static void test_node_typed_tags(void) {
  static const struct {
    const char *text, *message;
  } bad[] = {
      {"duration: !!int 5s\n", "t.yaml:1:11: '5s' is not an !!int (a whole number)"},
      {"a: !!int 1.5\n", "t.yaml:1:4: '1.5' is not an !!int (a whole number)"},
      {"a: !!int 0x10\n", "t.yaml:1:4: '0x10' is not an !!int (a whole number)"},
      {"a: !!int\n", "t.yaml:1:4: '' is not an !!int (a whole number)"},
      {"a: !!float .inf\n",
       "t.yaml:1:4: '.inf' is not an !!float (a number, such as 0.5 or 1e-3: no .inf or .nan)"},
      {"a: !!float .nan\n",
       "t.yaml:1:4: '.nan' is not an !!float (a number, such as 0.5 or 1e-3: no .inf or .nan)"},
      {"a: !!float 2GB/s\n",
       "t.yaml:1:4: '2GB/s' is not an !!float (a number, such as 0.5 or 1e-3: no .inf or .nan)"},
      {"a: !!bool yes\n", "t.yaml:1:4: 'yes' is not an !!bool (true or false)"},
      {"a: !!bool True\n", "t.yaml:1:4: 'True' is not an !!bool (true or false)"},
      {"a: !!null x\n", "t.yaml:1:4: 'x' is not an !!null (nothing, ~ or null)"},
      {"a: !!map x\n", "t.yaml:1:4: 'x' is a plain value, not an !!map"},
      {"a: [!!seq 1]\n", "t.yaml:1:5: '1' is a plain value, not an !!seq"},
      {"a: !!int {b: 1}\n", "t.yaml:1:4: a map is not an !!int"},
      {"a: !!map [1]\n", "t.yaml:1:4: a list is not an !!map"},
      {"a: !!str {b: 1}\n", "t.yaml:1:4: a map is not an !!str"},
  };
  g_autoptr(EmaNode) good = NULL;
  for (guint i = 0; i < G_N_ELEMENTS(bad); i++)
    load_fails(bad[i].text, EMA_CONFIG_ERROR_SYNTAX, bad[i].message);
  /* (a whole number past an integer's range is one: the key that reads it says how large) */
  good = load_ok("a: !!int -42\nb: !!int 18446744073709551615\nc: !!float 1e-3\nd: !!float 2\n"
                 "e: !!bool false\nf: !!null\ng: !!null \"\"\nh: !!null ~\ni: !!str 5s\n"
                 "j: !!map {x: 1}\nk: !!seq [1]\nl: !!str null\nm: !!str ~\nn: !!str\n");
  g_assert_cmpstr(ema_node_get(good, "a")->value, ==, "-42");
  g_assert_cmpstr(ema_node_get(good, "b")->value, ==, "18446744073709551615");
  g_assert_cmpstr(ema_node_get(good, "c")->value, ==, "1e-3");
  g_assert_cmpstr(ema_node_get(good, "e")->value, ==, "false");
  g_assert_null(ema_node_get(good, "f")->value);
  g_assert_null(ema_node_get(good, "g")->value);
  g_assert_null(ema_node_get(good, "h")->value);
  g_assert_cmpstr(ema_node_get(good, "i")->value, ==, "5s");
  g_assert_cmpint(ema_node_get(good, "j")->kind, ==, EMA_NODE_MAP);
  g_assert_cmpint(ema_node_get(good, "k")->kind, ==, EMA_NODE_SEQ);
  /* a !!str is the text, never a null */
  g_assert_cmpstr(ema_node_get(good, "l")->value, ==, "null");
  g_assert_cmpstr(ema_node_get(good, "m")->value, ==, "~");
  g_assert_cmpstr(ema_node_get(good, "n")->value, ==, "");
}

static void test_node_empty(void) {
  g_autofree char *path = config_fixture("empty.yaml");
  GError *error = NULL;
  g_autoptr(EmaNode) file = ema_node_load_file(path, &error);
  g_autoptr(EmaNode) text = load_ok("");
  g_autoptr(EmaNode) comments = load_ok("# nothing here\n\n# at all\n");
  g_assert_no_error(error);
  assert_node(file, EMA_NODE_MAP, path, 1, 1);
  g_assert_cmpuint(file->items->len, ==, 0);
  g_assert_cmpuint(file->keys->len, ==, 0);
  assert_node(text, EMA_NODE_MAP, "t.yaml", 1, 1);
  g_assert_cmpuint(text->items->len, ==, 0);
  assert_node(comments, EMA_NODE_MAP, "t.yaml", 1, 1);
  g_assert_cmpuint(comments->items->len, ==, 0);
}

static void test_node_invalid_utf8(void) {
  g_autofree char *dir = g_dir_make_tmp("ema-config-XXXXXX", NULL);
  g_autofree char *path = g_build_filename(dir, "latin1.yaml", NULL);
  g_autofree char *message = g_strdup_printf("%s:1:10: not a text file (invalid UTF-8)", path);
  GError *error = NULL;
  /* located at the first byte that is not text (columns in characters), a NUL said as such */
  load_fails("a: \xff\xfe\n", EMA_CONFIG_ERROR_SYNTAX,
             "t.yaml:1:4: not a text file (invalid UTF-8)");
  load_fails("name: caf\xe9\n", EMA_CONFIG_ERROR_SYNTAX,
             "t.yaml:1:10: not a text file (invalid UTF-8)");
  load_fails("a: 1\nb: \xc3\xa9\xff\n", EMA_CONFIG_ERROR_SYNTAX,
             "t.yaml:2:5: not a text file (invalid UTF-8)");
  g_assert_true(g_file_set_contents(path, "name: caf\xe9\n", -1, NULL));
  g_assert_null(ema_node_load_file(path, &error));
  check_error(error, EMA_CONFIG_ERROR_SYNTAX, message, NULL, NULL);
  error = NULL; /* (check_error freed it) */
  {
    g_autofree char *nul = g_strdup_printf("%s:1:5: not a text file (a NUL byte)", path);
    g_assert_true(g_file_set_contents(path, "a: 1\0b\n", 7, NULL));
    g_assert_null(ema_node_load_file(path, &error));
    check_error(error, EMA_CONFIG_ERROR_SYNTAX, nul, NULL, NULL);
  }
  /* valid UTF-8 is fine */
  {
    g_autoptr(EmaNode) ok = load_ok("name: caf\xc3\xa9\n");
    g_assert_cmpstr(ema_node_get(ok, "name")->value, ==, "caf\xc3\xa9");
  }
  g_remove(path);
  g_rmdir(dir);
}

static void test_node_copy_set(void) {
  g_autoptr(EmaNode) root = load_ok("a: 1\nb: {c: [2, 3]}\n");
  g_autoptr(EmaNode) copy = ema_node_copy(root);
  const EmaNode *c;
  assert_node(copy, EMA_NODE_MAP, "t.yaml", 1, 1);
  c = ema_node_get(ema_node_get(copy, "b"), "c");
  assert_node(c, EMA_NODE_SEQ, "t.yaml", 2, 8);
  assert_scalar(item(c, 1), "3", "t.yaml", 2, 12);
  g_assert_true(c != ema_node_get(ema_node_get(root, "b"), "c"));
  /* replace an existing key, then add a new one */
  ema_node_set(copy, "a", ema_node_new_scalar("9", "x.yaml", 5, 6));
  ema_node_set(copy, "z", ema_node_new_scalar("new", "x.yaml", 7, 8));
  g_assert_cmpuint(copy->keys->len, ==, 3);
  assert_scalar(ema_node_get(copy, "a"), "9", "x.yaml", 5, 6);
  assert_scalar(ema_node_get(copy, "z"), "new", "x.yaml", 7, 8);
  g_assert_cmpstr(ema_node_get_key(copy, "z")->value, ==, "z");
  /* the original is untouched */
  assert_scalar(ema_node_get(root, "a"), "1", "t.yaml", 1, 4);
  g_assert_null(ema_node_get(root, "z"));
}

/* ---- a parameter table with every type ---------------------------------- */

typedef struct {
  gint64 a;
  char *s;
} Inner;

typedef struct {
  char *name;
  guint64 size;
} Item;

typedef enum { RED, GREEN, BLUE } Color;

typedef struct {
  gboolean flag;
  gint64 count;
  gint64 big;
  double ratio;
  guint64 size;
  double bw;
  gint64 dur;
  double flops;
  double frac;
  char *label;
  int color;
  Inner inner;
  GArray *items;
  gint64 opt_int;
  gboolean opt_flag;
  int opt_color;
  char *opt_str;
  double opt_bw;
  guint64 opt_size;
  gint64 opt_dur;
  char *req;
} Thing;

static const char *const color_names[] = {"red", "green", "blue", NULL};

static const EmaParam inner_params[] = {
    {"a", EMA_PARAM_INT, G_STRUCT_OFFSET(Inner, a), .default_value = "7", .min = 0, .max = 10,
     .help = "an int in [0, 10]"},
    {"s", EMA_PARAM_STRING, G_STRUCT_OFFSET(Inner, s), .default_value = "in", .help = "a string"},
};

static const EmaParamTable inner_table = {"inner", sizeof(Inner), inner_params,
                                          EMA_PARAMS_N(inner_params), NULL};

static gboolean check_item(gpointer object, const EmaNode *node, const char *path, GError **error) {
  const Item *it = object;
  if (g_strcmp0(it->name, "bad") == 0) {
    ema_node_error(error, EMA_CONFIG_ERROR_INVALID, node, path, "an item may not be called bad");
    return FALSE;
  }
  return TRUE;
}

static const EmaParam item_params[] = {
    {"name", EMA_PARAM_STRING, G_STRUCT_OFFSET(Item, name), .flags = EMA_PARAM_REQUIRED},
    {"size", EMA_PARAM_SIZE, G_STRUCT_OFFSET(Item, size), .default_value = "4KiB", .min = 1,
     .max = 1099511627776.0},
};

static const EmaParamTable item_table = {"item", sizeof(Item), item_params,
                                         EMA_PARAMS_N(item_params), check_item};

static gboolean check_thing(gpointer object, const EmaNode *node, const char *path,
                            GError **error) {
  const Thing *t = object;
  if (t->count > 50 && !t->flag) {
    const EmaNode *at = ema_node_get(node, "count");
    g_autofree char *count_path = path ? g_strconcat(path, ".count", NULL) : g_strdup("count");
    ema_node_error(error, EMA_CONFIG_ERROR_INVALID, at ? at : node, count_path,
                   "count above 50 needs flag");
    return FALSE;
  }
  return TRUE;
}

#define THING(f) G_STRUCT_OFFSET(Thing, f)

static const EmaParam thing_params[] = {
    {"flag", EMA_PARAM_BOOL, THING(flag), .default_value = "true"},
    {"count", EMA_PARAM_INT, THING(count), .default_value = "3", .min = 0, .max = 100},
    {"big", EMA_PARAM_INT, THING(big), .default_value = "-5"},
    {"ratio", EMA_PARAM_DOUBLE, THING(ratio), .default_value = "0.25"},
    {"size", EMA_PARAM_SIZE, THING(size), .default_value = "2MiB"},
    {"bw", EMA_PARAM_BANDWIDTH, THING(bw), .default_value = "397GB/s", .min = 1e6, .max = 1e14},
    {"dur", EMA_PARAM_DURATION, THING(dur), .default_value = "6.5us"},
    {"flops", EMA_PARAM_FLOPS, THING(flops), .default_value = "989TFLOP/s"},
    {"frac", EMA_PARAM_FRACTION, THING(frac), .default_value = "5%", .min = -1, .max = 1},
    {"label", EMA_PARAM_STRING, THING(label), .default_value = "hello"},
    {"color", EMA_PARAM_ENUM, THING(color), .default_value = "green", .choices = color_names},
    {"inner", EMA_PARAM_STRUCT, THING(inner), .table = &inner_table},
    {"items", EMA_PARAM_LIST, THING(items), .table = &item_table},
    {"opt_int", EMA_PARAM_INT, THING(opt_int), .flags = EMA_PARAM_OPTIONAL},
    {"opt_flag", EMA_PARAM_BOOL, THING(opt_flag), .flags = EMA_PARAM_OPTIONAL},
    {"opt_color", EMA_PARAM_ENUM, THING(opt_color), .choices = color_names,
     .flags = EMA_PARAM_OPTIONAL},
    {"opt_str", EMA_PARAM_STRING, THING(opt_str), .flags = EMA_PARAM_OPTIONAL},
    {"opt_bw", EMA_PARAM_BANDWIDTH, THING(opt_bw), .flags = EMA_PARAM_OPTIONAL},
    {"opt_size", EMA_PARAM_SIZE, THING(opt_size), .flags = EMA_PARAM_OPTIONAL},
    {"opt_dur", EMA_PARAM_DURATION, THING(opt_dur), .flags = EMA_PARAM_OPTIONAL},
    {"req", EMA_PARAM_STRING, THING(req), .flags = EMA_PARAM_REQUIRED},
};

static const EmaParamTable thing_table = {"thing", sizeof(Thing), thing_params,
                                          EMA_PARAMS_N(thing_params), check_thing};

#define THING_KEYS                                                                                 \
  "flag, count, big, ratio, size, bw, dur, flops, frac, label, color, inner, items, opt_int, "     \
  "opt_flag, opt_color, opt_str, opt_bw, opt_size, opt_dur, req"

static gboolean bind_text(const char *text, const char *path, Thing *thing, GError **error) {
  g_autoptr(EmaNode) node = load_ok(text);
  memset(thing, 0, sizeof *thing);
  return ema_params_bind(&thing_table, thing, node, path, error);
}

static void bind_ok(const char *text, Thing *thing) {
  GError *error = NULL;
  gboolean ok = bind_text(text, NULL, thing, &error);
  g_assert_no_error(error);
  g_assert_true(ok);
}

/* Binding TEXT (at PATH) fails with CODE and exactly MESSAGE (or, if MESSAGE
 * is NULL, a message containing CONTAINS). */
static void bind_fails_at(const char *text, const char *path, gint code, const char *message,
                          const char *contains) {
  Thing thing;
  GError *error = NULL;
  if (bind_text(text, path, &thing, &error))
    g_error("'%s' bound, expected an error", text);
  ema_params_clear(&thing_table, &thing);
  check_error(error, code, message, NULL, contains);
}

static void bind_fails(const char *text, gint code, const char *message) {
  bind_fails_at(text, NULL, code, message, NULL);
}

static void test_params_defaults(void) {
  Thing t;
  bind_ok("req: r\n", &t);
  g_assert_true(t.flag);
  g_assert_cmpint(t.count, ==, 3);
  g_assert_cmpint(t.big, ==, -5);
  g_assert_cmpfloat(t.ratio, ==, 0.25);
  g_assert_cmpuint(t.size, ==, 2 * 1024 * 1024);
  g_assert_cmpfloat(t.bw, ==, 397e9);
  g_assert_cmpint(t.dur, ==, 6500);
  g_assert_cmpfloat(t.flops, ==, 989e12);
  g_assert_cmpfloat(t.frac, ==, 0.05);
  g_assert_cmpstr(t.label, ==, "hello");
  g_assert_cmpint(t.color, ==, GREEN);
  g_assert_cmpint(t.inner.a, ==, 7);
  g_assert_cmpstr(t.inner.s, ==, "in");
  g_assert_nonnull(t.items);
  g_assert_cmpuint(t.items->len, ==, 0);
  /* optional fields stay zero */
  g_assert_cmpint(t.opt_int, ==, 0);
  g_assert_false(t.opt_flag);
  g_assert_cmpint(t.opt_color, ==, 0);
  g_assert_null(t.opt_str);
  g_assert_cmpfloat(t.opt_bw, ==, 0);
  g_assert_cmpuint(t.opt_size, ==, 0);
  g_assert_cmpint(t.opt_dur, ==, 0);
  g_assert_cmpstr(t.req, ==, "r");
  ema_params_clear(&thing_table, &t);
  g_assert_null(t.label);
  g_assert_null(t.items);

  /* a null is an error at its place, not the default (a scalar's would be
   * written back as a value no file accepts; a map's would put back its
   * defaults over a map given before it); `inner: {}` is all defaults; list
   * items get their own defaults */
  bind_fails("req: r\ncount: ~\n", EMA_CONFIG_ERROR_KEY,
             "t.yaml:2:8: count: needs a value (an integer); leave the key out for its default");
  bind_fails("req: r\nlabel:\n", EMA_CONFIG_ERROR_KEY,
             "t.yaml:2:7: label: needs a value (a string); leave the key out for its default");
  bind_fails("req: r\ninner:\n", EMA_CONFIG_ERROR_KEY,
             "t.yaml:2:7: inner: needs a value (a map); leave the key out, or give {}, for its "
             "defaults");
  bind_fails("req: r\ninner: ~\n", EMA_CONFIG_ERROR_KEY,
             "t.yaml:2:8: inner: needs a value (a map); leave the key out, or give {}, for its "
             "defaults");
  bind_ok("req: r\ninner: {}\nitems: [{name: a}, {name: b, size: 1MiB}]\n", &t);
  g_assert_cmpint(t.count, ==, 3);
  g_assert_cmpstr(t.label, ==, "hello");
  g_assert_cmpint(t.inner.a, ==, 7);
  g_assert_cmpuint(t.items->len, ==, 2);
  g_assert_cmpstr(g_array_index(t.items, Item, 0).name, ==, "a");
  g_assert_cmpuint(g_array_index(t.items, Item, 0).size, ==, 4096);
  g_assert_cmpstr(g_array_index(t.items, Item, 1).name, ==, "b");
  g_assert_cmpuint(g_array_index(t.items, Item, 1).size, ==, 1048576);
  ema_params_clear(&thing_table, &t);

  /* a quoted empty string is a value, not a null */
  bind_ok("req: r\nlabel: ''\n", &t);
  g_assert_cmpstr(t.label, ==, "");
  ema_params_clear(&thing_table, &t);
}

static void test_params_values(void) {
  Thing t;
  bind_ok("flag: false\n"
          "count: 50\n"
          "big: -9000000000\n"
          "ratio: -1.5e-3\n"
          "size: 139.8GiB\n"
          "bw: 55.4GB/s\n"
          "dur: 1.002us\n"
          "flops: 1.5PFLOP/s\n"
          "frac: -12.5%\n"
          "label: \"x y\"\n"
          "color: blue\n"
          "inner: {a: 10, s: deep}\n"
          "opt_int: -3\n"
          "opt_flag: true\n"
          "opt_color: red\n"
          "opt_str: s\n"
          "opt_bw: 1GiB/s\n"
          "opt_size: 1\n"
          "opt_dur: 2h\n"
          "req: yes\n",
          &t);
  g_assert_false(t.flag);
  g_assert_cmpint(t.count, ==, 50);
  g_assert_cmpint(t.big, ==, G_GINT64_CONSTANT(-9000000000));
  g_assert_cmpfloat(t.ratio, ==, -1.5e-3);
  g_assert_cmpuint(t.size, ==, (guint64) llround(139.8 * 1073741824.0));
  g_assert_cmpfloat(t.bw, ==, 55.4e9);
  g_assert_cmpint(t.dur, ==, 1002);
  g_assert_cmpfloat(t.flops, ==, 1.5e15);
  g_assert_cmpfloat(t.frac, ==, -0.125);
  g_assert_cmpstr(t.label, ==, "x y");
  g_assert_cmpint(t.color, ==, BLUE);
  g_assert_cmpint(t.inner.a, ==, 10);
  g_assert_cmpstr(t.inner.s, ==, "deep");
  g_assert_cmpint(t.opt_int, ==, -3);
  g_assert_true(t.opt_flag);
  g_assert_cmpint(t.opt_color, ==, RED);
  g_assert_cmpstr(t.opt_str, ==, "s");
  g_assert_cmpfloat(t.opt_bw, ==, 1073741824.0);
  g_assert_cmpuint(t.opt_size, ==, 1);
  g_assert_cmpint(t.opt_dur, ==, G_GINT64_CONSTANT(7200000000000));
  g_assert_cmpstr(t.req, ==, "yes"); /* a string: YAML 1.1 booleans are not special */
  ema_params_clear(&thing_table, &t);
}

static void test_params_unknown_key(void) {
  bind_fails("req: r\nzzz: 1\n", EMA_CONFIG_ERROR_KEY,
             "t.yaml:2:1: zzz: unknown key in thing (valid keys: " THING_KEYS ")");
  /* with a path, the key's full path */
  bind_fails_at("req: r\nzzz: 1\n", "top.mid", EMA_CONFIG_ERROR_KEY,
                "t.yaml:2:1: top.mid.zzz: unknown key in thing (valid keys: " THING_KEYS ")", NULL);
  bind_fails("req: r\ninner: {a: 1, q: 2}\n", EMA_CONFIG_ERROR_KEY,
             "t.yaml:2:15: inner.q: unknown key in inner (valid keys: a, s)");
  bind_fails("req: r\nitems:\n  - {name: x}\n  - {name: y, sise: 1}\n", EMA_CONFIG_ERROR_KEY,
             "t.yaml:4:15: items.1.sise: unknown key in item (valid keys: name, size)");
  /* keys are case-sensitive */
  bind_fails("req: r\nFlag: true\n", EMA_CONFIG_ERROR_KEY,
             "t.yaml:2:1: Flag: unknown key in thing (valid keys: " THING_KEYS ")");
}

static void test_params_wrong_type(void) {
  bind_fails("req: r\ncount: {x: 1}\n", EMA_CONFIG_ERROR_TYPE,
             "t.yaml:2:8: count: expected an integer, got a map");
  bind_fails("req: r\nsize: [1, 2]\n", EMA_CONFIG_ERROR_TYPE,
             "t.yaml:2:7: size: expected a size (e.g. 2MiB), got a list");
  bind_fails("req: r\nlabel: {a: b}\n", EMA_CONFIG_ERROR_TYPE,
             "t.yaml:2:8: label: expected a string, got a map");
  bind_fails("req: r\ninner: 5\n", EMA_CONFIG_ERROR_TYPE,
             "t.yaml:2:8: inner: expected a map, got a plain value");
  bind_fails("req: r\nitems: x\n", EMA_CONFIG_ERROR_TYPE,
             "t.yaml:2:8: items: expected a list, got a plain value");
  bind_fails("req: r\nitems: [1]\n", EMA_CONFIG_ERROR_TYPE,
             "t.yaml:2:9: items.0: expected a map of item settings, got a plain value");
  bind_fails("req: r\nflag: yes\n", EMA_CONFIG_ERROR_TYPE,
             "t.yaml:2:7: flag: 'yes' is not true or false");
  bind_fails_at("req: r\ncount: 3.5\n", NULL, EMA_CONFIG_ERROR_TYPE, NULL, "t.yaml:2:8: count: ");
  bind_fails_at("req: r\nratio: abc\n", NULL, EMA_CONFIG_ERROR_TYPE, NULL, "t.yaml:2:8: ratio: ");
  /* the root must be a map */
  {
    Thing t = {0};
    GError *error = NULL;
    g_autoptr(EmaNode) node = load_ok("[1, 2]\n");
    g_assert_false(ema_params_bind(&thing_table, &t, node, NULL, &error));
    ema_params_clear(&thing_table, &t);
    check_error(error, EMA_CONFIG_ERROR_TYPE,
                "t.yaml:1:1: expected a map of thing settings, got a list", NULL, NULL);
  }
}

static void test_params_range(void) {
  bind_fails("req: r\ncount: 101\n", EMA_CONFIG_ERROR_RANGE,
             "t.yaml:2:8: count: 101 is out of range [0, 100]");
  bind_fails("req: r\ncount: -1\n", EMA_CONFIG_ERROR_RANGE,
             "t.yaml:2:8: count: -1 is out of range [0, 100]");
  bind_fails("req: r\ninner: {a: 11}\n", EMA_CONFIG_ERROR_RANGE,
             "t.yaml:2:12: inner.a: 11 is out of range [0, 10]");
  bind_fails_at("req: r\nfrac: 150%\n", NULL, EMA_CONFIG_ERROR_RANGE, NULL, "out of range");
  bind_fails_at("req: r\nbw: 200TB/s\n", NULL, EMA_CONFIG_ERROR_RANGE, NULL,
                "t.yaml:2:5: bw: 200TB/s is out of range [1MB/s, 100TB/s]");
  bind_fails_at("req: r\nitems: [{name: x, size: 0}]\n", NULL, EMA_CONFIG_ERROR_RANGE, NULL,
                "t.yaml:2:25: items.0.size: 0 is out of range");
  /* the ends of a range are allowed */
  {
    Thing t;
    bind_ok("req: r\ncount: 0\nfrac: -100%\ninner: {a: 10}\n", &t);
    g_assert_cmpint(t.count, ==, 0);
    g_assert_cmpfloat(t.frac, ==, -1);
    ema_params_clear(&thing_table, &t);
  }
}

static void test_params_negative_size(void) {
  bind_fails("req: r\nsize: -1KiB\n", EMA_CONFIG_ERROR_RANGE,
             "t.yaml:2:7: size: negative size '-1KiB' is not allowed");
  bind_fails_at("req: r\ndur: -5us\n", NULL, EMA_CONFIG_ERROR_RANGE, NULL, "t.yaml:2:6: dur: ");
}

static void test_params_unknown_unit(void) {
  bind_fails("req: r\nsize: 4XiB\n", EMA_CONFIG_ERROR_TYPE,
             "t.yaml:2:7: size: unknown unit 'XiB' in '4XiB' (sizes use B, KB, MB, GB, TB, KiB, "
             "MiB, GiB, TiB)");
  /* a bandwidth needs a rate unit; the message lists them */
  bind_fails_at("req: r\nbw: 5GB\n", NULL, EMA_CONFIG_ERROR_TYPE, NULL, "t.yaml:2:5: bw: ");
  bind_fails_at("req: r\nbw: 5GB\n", NULL, EMA_CONFIG_ERROR_TYPE, NULL, "GiB/s");
  bind_fails_at("req: r\ndur: 5\n", NULL, EMA_CONFIG_ERROR_TYPE, NULL, "us");
  bind_fails_at("req: r\nflops: 5GB/s\n", NULL, EMA_CONFIG_ERROR_TYPE, NULL, "TFLOP/s");
}

static void test_params_required(void) {
  bind_fails("label: x\n", EMA_CONFIG_ERROR_KEY,
             "t.yaml:1:1: req: missing required key (a string)");
  bind_fails("req: ~\n", EMA_CONFIG_ERROR_KEY, "t.yaml:1:6: req: needs a value (a string)");
  bind_fails("req: r\nitems:\n  - {size: 1KiB}\n", EMA_CONFIG_ERROR_KEY,
             "t.yaml:3:5: items.0.name: missing required key (a string)");
  /* NULL means "all defaults": the required key is still missing */
  {
    Thing t = {0};
    GError *error = NULL;
    g_assert_false(ema_params_bind(&thing_table, &t, NULL, NULL, &error));
    ema_params_clear(&thing_table, &t);
    check_error(error, EMA_CONFIG_ERROR_KEY, NULL, NULL, "req: missing required key");
  }
}

static void test_params_enum(void) {
  bind_fails("req: r\ncolor: purple\n", EMA_CONFIG_ERROR_TYPE,
             "t.yaml:2:8: color: unknown value 'purple' (choose from: red, green, blue)");
  bind_fails("req: r\nopt_color: Red\n", EMA_CONFIG_ERROR_TYPE,
             "t.yaml:2:12: opt_color: unknown value 'Red' (choose from: red, green, blue)");
}

static void test_params_check_hook(void) {
  Thing t;
  bind_fails("req: r\nflag: false\ncount: 60\n", EMA_CONFIG_ERROR_INVALID,
             "t.yaml:3:8: count: count above 50 needs flag");
  bind_fails_at("req: r\nflag: false\ncount: 60\n", "deep", EMA_CONFIG_ERROR_INVALID,
                "t.yaml:3:8: deep.count: count above 50 needs flag", NULL);
  bind_fails("req: r\nitems: [{name: ok}, {name: bad}]\n", EMA_CONFIG_ERROR_INVALID,
             "t.yaml:2:21: items.1: an item may not be called bad");
  /* the hook passes when the values agree */
  bind_ok("req: r\nflag: true\ncount: 60\n", &t);
  ema_params_clear(&thing_table, &t);
}

static void assert_things_equal(const Thing *a, const Thing *b) {
  g_assert_cmpint(a->flag, ==, b->flag);
  g_assert_cmpint(a->count, ==, b->count);
  g_assert_cmpint(a->big, ==, b->big);
  g_assert_cmpfloat(a->ratio, ==, b->ratio);
  g_assert_cmpuint(a->size, ==, b->size);
  g_assert_cmpfloat(a->bw, ==, b->bw);
  g_assert_cmpint(a->dur, ==, b->dur);
  g_assert_cmpfloat(a->flops, ==, b->flops);
  g_assert_cmpfloat(a->frac, ==, b->frac);
  g_assert_cmpstr(a->label, ==, b->label);
  g_assert_cmpint(a->color, ==, b->color);
  g_assert_cmpint(a->inner.a, ==, b->inner.a);
  g_assert_cmpstr(a->inner.s, ==, b->inner.s);
  g_assert_cmpuint(a->items->len, ==, b->items->len);
  for (guint i = 0; i < a->items->len; i++) {
    g_assert_cmpstr(g_array_index(a->items, Item, i).name, ==,
                    g_array_index(b->items, Item, i).name);
    g_assert_cmpuint(g_array_index(a->items, Item, i).size, ==,
                     g_array_index(b->items, Item, i).size);
  }
  g_assert_cmpint(a->opt_int, ==, b->opt_int);
  g_assert_cmpint(a->opt_flag, ==, b->opt_flag);
  g_assert_cmpint(a->opt_color, ==, b->opt_color);
  g_assert_cmpstr(a->opt_str, ==, b->opt_str);
  g_assert_cmpfloat(a->opt_bw, ==, b->opt_bw);
  g_assert_cmpuint(a->opt_size, ==, b->opt_size);
  g_assert_cmpint(a->opt_dur, ==, b->opt_dur);
  g_assert_cmpstr(a->req, ==, b->req);
}

/* bind TEXT -> write -> load -> bind -> write: equal text, equal structs.
 * Returns the first written text. */
static char *round_trip(const char *text) {
  Thing first, second;
  g_autoptr(GString) out1 = g_string_new(NULL);
  g_autoptr(GString) out2 = g_string_new(NULL);
  bind_ok(text, &first);
  ema_params_write_yaml(&thing_table, &first, out1, 0);
  if (g_test_verbose())
    g_test_message("written:\n%s", out1->str);
  bind_ok(out1->str, &second);
  ema_params_write_yaml(&thing_table, &second, out2, 0);
  g_assert_cmpstr(out1->str, ==, out2->str);
  assert_things_equal(&first, &second);
  ema_params_clear(&thing_table, &first);
  ema_params_clear(&thing_table, &second);
  return g_string_free(g_steal_pointer(&out1), FALSE);
}

static void test_params_write_defaults(void) {
  g_autofree char *text = round_trip("req: r\n");
  g_assert_cmpstr(text, ==,
                  "flag: true\n"
                  "count: 3\n"
                  "big: -5\n"
                  "ratio: 0.25\n"
                  "size: 2MiB\n"
                  "bw: 397GB/s\n"
                  "dur: 6.5us\n"
                  "flops: 989TFLOP/s\n"
                  "frac: 5%\n"
                  "label: \"hello\"\n"
                  "color: green\n"
                  "inner:\n"
                  "  a: 7\n"
                  "  s: \"in\"\n"
                  "items: []\n"
                  "req: \"r\"\n");
}

static void test_params_write_indent(void) {
  Thing t;
  g_autoptr(GString) out = g_string_new("top:\n");
  bind_ok("req: r\nitems: [{name: a, size: 1KiB}, {name: b}]\nopt_int: 4\n", &t);
  ema_params_write_yaml(&thing_table, &t, out, 2);
  g_assert_cmpstr(out->str, ==,
                  "top:\n"
                  "  flag: true\n"
                  "  count: 3\n"
                  "  big: -5\n"
                  "  ratio: 0.25\n"
                  "  size: 2MiB\n"
                  "  bw: 397GB/s\n"
                  "  dur: 6.5us\n"
                  "  flops: 989TFLOP/s\n"
                  "  frac: 5%\n"
                  "  label: \"hello\"\n"
                  "  color: green\n"
                  "  inner:\n"
                  "    a: 7\n"
                  "    s: \"in\"\n"
                  "  items:\n"
                  "    - name: \"a\"\n"
                  "      size: 1KiB\n"
                  "    - name: \"b\"\n"
                  "      size: 4KiB\n"
                  "  opt_int: 4\n"
                  "  req: \"r\"\n");
  ema_params_clear(&thing_table, &t);
}

static void test_params_round_trip(void) {
  g_autofree char *a =
      round_trip("flag: false\n"
                 "count: 42\n"
                 "big: -9000000000\n"
                 "ratio: -1.5e-3\n"
                 "size: 139.8GiB\n"
                 "bw: 55.4GB/s\n"
                 "dur: 1.002us\n"
                 "flops: 1.5PFLOP/s\n"
                 "frac: -12.5%\n"
                 "label: \"quote \\\" back \\\\ nl \\n utf8 \xc3\xa9 # not a comment\"\n"
                 "color: blue\n"
                 "inner: {a: 9, s: 'inner: text'}\n"
                 "items:\n"
                 "  - {name: one, size: 1}\n"
                 "  - {name: two}\n"
                 "  - {name: '3', size: 1099511627776}\n"
                 "opt_int: -3\n"
                 "opt_str: \"\"\n"
                 "opt_bw: 1GiB/s\n"
                 "opt_size: 123456789\n"
                 "opt_dur: 2h\n"
                 "req: \"true\"\n");
  g_autofree char *b = round_trip("req: r\nratio: 0.1\nsize: 1000\nbw: 1.23456789e9B/s\n"
                                  "dur: 3ns\nflops: 1FLOP/s\nfrac: 0.000123\n"
                                  "items: []\n");
  g_autofree char *c = round_trip("req: \"\"\nratio: 1e300\nfrac: 1\nflops: 1e-3FLOP/s\n"
                                  "label: \"  spaces  \"\nbig: 0\n");
}

/* Strings with control characters (from YAML escapes) are written so that
 * they read back unchanged: a carriage return, a bell, an escape. */
static void test_params_round_trip_control_chars(void) {
  g_autofree char *a = round_trip("req: r\nlabel: \"cr\\rhere\"\n");
  g_autofree char *b = round_trip("req: r\nlabel: \"bell\\x07 esc\\e del\\x7f\"\n");
  g_autofree char *c = round_trip("req: \"tab\\there\"\n");
}

/* Optional booleans and enums are written when set and read back. */
static void test_params_round_trip_optional_bool_enum(void) {
  g_autofree char *text = round_trip("req: r\nopt_flag: true\nopt_color: blue\n");
  g_assert_nonnull(strstr(text, "opt_flag: true\n"));
  g_assert_nonnull(strstr(text, "opt_color: blue\n"));
}

/* 64-bit integers, sizes and durations survive the round trip exactly. */
static void test_params_round_trip_large_integers(void) {
  g_autofree char *a = round_trip("req: r\nbig: 9007199254740993\n");
  g_autofree char *b = round_trip("req: r\nbig: -9223372036854775807\n");
  g_autofree char *c = round_trip("req: r\nsize: 9007199254740993\n");
  g_autofree char *d = round_trip("req: r\ndur: 9007199254740993ns\n");
  g_assert_nonnull(strstr(a, "big: 9007199254740993\n"));
  g_assert_nonnull(strstr(b, "big: -9223372036854775807\n"));
}

static void test_params_describe(void) {
  g_autoptr(GString) out = g_string_new(NULL);
  ema_params_describe(&thing_table, out, 0);
  g_assert_nonnull(strstr(out->str, "count"));
  g_assert_nonnull(strstr(out->str, "default 3, range [0, 100]"));
  g_assert_nonnull(strstr(out->str, "one of: red, green, blue"));
  g_assert_nonnull(strstr(out->str, "required"));
  g_assert_nonnull(strstr(out->str, "optional"));
  g_assert_nonnull(strstr(out->str, "  a ")); /* the inner table, indented */
}

static void test_params_parse_value(void) {
  const EmaParam *count = &thing_params[1];
  gint64 v = -1;
  GError *error = NULL;
  g_assert_true(ema_params_parse_value(count, "42", &v, &error));
  g_assert_no_error(error);
  g_assert_cmpint(v, ==, 42);
  g_assert_false(ema_params_parse_value(count, "420", &v, &error));
  check_error(error, EMA_CONFIG_ERROR_RANGE, "420 is out of range [0, 100]", NULL, NULL);
}

/* A value of any length is quoted by its first 40 bytes and "..." (a value of 1 MB made a
 * message of 1 MB), whichever reader quotes it: a parameter's, the units', the YAML loader's. */
static void test_params_long_values_cut(void) {
  g_autofree char *t = g_strnfill(1 << 20, 't');
  g_autofree char *t_cut = g_strnfill(40, 't');
  g_autofree char *zero_digits = g_strnfill(1 << 20, '0');
  g_autofree char *zeros = g_strconcat(zero_digits, "420", NULL);
  g_autofree char *ones = g_strnfill(1 << 20, '1');
  g_autofree char *unit = g_strconcat("5", t, NULL);
  const struct {
    const EmaParam *param;
    const char *text;
    gint code;
    const char *want;
  } cases[] = {
      {&thing_params[0], t, EMA_CONFIG_ERROR_TYPE,
       "'tttttttttttttttttttttttttttttttttttttttt...' is not true or false"},
      {&thing_params[10], t, EMA_CONFIG_ERROR_TYPE,
       "unknown value 'tttttttttttttttttttttttttttttttttttttttt...' (choose from: red, green, "
       "blue)"},
      {&thing_params[11], t, EMA_CONFIG_ERROR_TYPE,
       "expected a map, got 'tttttttttttttttttttttttttttttttttttttttt...'"},
      {&thing_params[1], zeros, EMA_CONFIG_ERROR_RANGE,
       "0000000000000000000000000000000000000000... is out of range [0, 100]"},
      {&thing_params[2], ones, EMA_CONFIG_ERROR_RANGE,
       "'1111111111111111111111111111111111111111...' is out of range for an integer "
       "(-9223372036854775808 to 9223372036854775807)"},
      {&thing_params[4], unit, EMA_CONFIG_ERROR_TYPE,
       "unknown unit 'tttttttttttttttttttttttttttttttttttttttt...' in "
       "'5ttttttttttttttttttttttttttttttttttttttt...' (sizes use B, KB, MB, GB, TB, KiB, MiB, "
       "GiB, TiB)"},
  };
  for (guint i = 0; i < G_N_ELEMENTS(cases); i++) {
    GError *error = NULL;
    g_autofree Thing *scratch = g_new0(Thing, 1);
    gpointer field = (char *) scratch + cases[i].param->offset;
    g_assert_false(ema_params_parse_value(cases[i].param, cases[i].text, field, &error));
    check_error(error, cases[i].code, cases[i].want, NULL, NULL);
  }
  /* a key given twice (of 1000 bytes: YAML takes no longer plain key), and a tag EMA does not
   * know */
  g_autofree char *key = g_strnfill(1000, 't');
  g_autofree char *twice = g_strdup_printf("%s: 1\n%s: 2\n", key, key);
  g_autofree char *twice_want = g_strdup_printf("t.yaml:2:1: duplicate key '%s...'", t_cut);
  load_fails(twice, EMA_CONFIG_ERROR_KEY, twice_want);
  g_autofree char *tag = g_strdup_printf("a: !%s 1\n", t);
  GError *error = NULL;
  g_assert_null(ema_node_load_string(tag, "t.yaml", NULL, &error));
  check_error(error, EMA_CONFIG_ERROR_SYNTAX, NULL, "t.yaml:1:4: ",
              "unknown tag '!ttttttttttttttttttttttttttttttttttttttt...' (the only tag EMA knows "
              "is !include)");
}

/* ---- overrides ---------------------------------------------------------- */

static const char override_base[] = "req: base\n"
                                    "inner: {a: 1, s: x}\n"
                                    "items:\n"
                                    "  - {name: one, size: 1KiB}\n"
                                    "  - {name: two}\n"
                                    "opt_str: base\n";

static EmaNode *override_tree(void) {
  return load_ok(override_base);
}

static void override_ok(EmaNode *root, const char *assignment, guint ordinal) {
  GError *error = NULL;
  gboolean ok = ema_node_apply_override(root, assignment, ordinal, &error);
  g_assert_no_error(error);
  g_assert_true(ok);
}

static void override_fails(const char *assignment, guint ordinal, gint code, const char *message,
                           const char *prefix) {
  g_autoptr(EmaNode) root = override_tree();
  GError *error = NULL;
  if (ema_node_apply_override(root, assignment, ordinal, &error))
    g_error("override '%s' applied, expected an error", assignment);
  check_error(error, code, message, prefix, NULL);
}

static void bind_tree_ok(const EmaNode *root, Thing *t) {
  GError *error = NULL;
  memset(t, 0, sizeof *t);
  gboolean ok = ema_params_bind(&thing_table, t, root, NULL, &error);
  g_assert_no_error(error);
  g_assert_true(ok);
}

static void test_override_values(void) {
  g_autoptr(EmaNode) root = override_tree();
  Thing t;
  const EmaNode *v;
  override_ok(root, "inner.a=5", 1);
  override_ok(root, "items.1.size=8KiB", 2);
  override_ok(root, "req=changed", 3);
  override_ok(root, "count=42", 4); /* a known key not in the file */
  v = ema_node_get(ema_node_get(root, "inner"), "a");
  assert_scalar(v, "5", "--set", 1, 9);
  v = ema_node_get(item(ema_node_get(root, "items"), 1), "size");
  assert_scalar(v, "8KiB", "--set", 2, 14);
  assert_scalar(ema_node_get(root, "req"), "changed", "--set", 3, 5);
  assert_scalar(ema_node_get(root, "count"), "42", "--set", 4, 7);
  /* untouched nodes keep their place in the file */
  assert_scalar(ema_node_get(ema_node_get(root, "inner"), "s"), "x", "t.yaml", 2, 18);
  bind_tree_ok(root, &t);
  g_assert_cmpint(t.inner.a, ==, 5);
  g_assert_cmpuint(g_array_index(t.items, Item, 1).size, ==, 8192);
  g_assert_cmpuint(g_array_index(t.items, Item, 0).size, ==, 1024);
  g_assert_cmpstr(t.req, ==, "changed");
  g_assert_cmpint(t.count, ==, 42);
  ema_params_clear(&thing_table, &t);
}

static void test_override_structures(void) {
  g_autoptr(EmaNode) root = override_tree();
  const EmaNode *s, *items;
  Thing t;
  /* a whole list item replaced by a map */
  override_ok(root, "items.0={name: zero, size: 2KiB}", 1);
  items = ema_node_get(root, "items");
  assert_node(item(items, 0), EMA_NODE_MAP, "--set", 1, 9);
  assert_scalar(ema_node_get_key(item(items, 0), "name"), "name", "--set", 1, 10);
  assert_scalar(ema_node_get(item(items, 0), "name"), "zero", "--set", 1, 16);
  /* a list as the value: binding then rejects it for a string, at --set */
  override_ok(root, "inner.s=[1,2]", 2);
  s = ema_node_get(ema_node_get(root, "inner"), "s");
  assert_node(s, EMA_NODE_SEQ, "--set", 2, 9);
  assert_scalar(item(s, 0), "1", "--set", 2, 10);
  assert_scalar(item(s, 1), "2", "--set", 2, 12);
  {
    Thing bad = {0};
    GError *error = NULL;
    g_assert_false(ema_params_bind(&thing_table, &bad, root, NULL, &error));
    ema_params_clear(&thing_table, &bad);
    check_error(error, EMA_CONFIG_ERROR_TYPE, "--set:2:9: inner.s: expected a string, got a list",
                NULL, NULL);
  }
  override_ok(root, "inner.s=plain", 3);
  /* an empty value is a null: binding rejects it at its place */
  override_ok(root, "inner.a=", 4);
  assert_scalar(ema_node_get(ema_node_get(root, "inner"), "a"), NULL, "--set", 4, 9);
  {
    Thing bad = {0};
    GError *error = NULL;
    g_assert_false(ema_params_bind(&thing_table, &bad, root, NULL, &error));
    ema_params_clear(&thing_table, &bad);
    check_error(error, EMA_CONFIG_ERROR_KEY,
                "--set:4:9: inner.a: needs a value (an integer); leave the key out for its default",
                NULL, NULL);
  }
  /* so is one of blanks only (not an empty map) */
  override_ok(root, "inner.a=  ", 4);
  assert_scalar(ema_node_get(ema_node_get(root, "inner"), "a"), NULL, "--set", 4, 9);
  override_ok(root, "inner.a=8", 4);
  override_ok(root, "opt_str=hello", 5);
  bind_tree_ok(root, &t);
  g_assert_cmpstr(g_array_index(t.items, Item, 0).name, ==, "zero");
  g_assert_cmpuint(g_array_index(t.items, Item, 0).size, ==, 2048);
  g_assert_cmpstr(t.inner.s, ==, "plain");
  g_assert_cmpint(t.inner.a, ==, 8);
  g_assert_cmpstr(t.opt_str, ==, "hello");
  ema_params_clear(&thing_table, &t);
}

static void test_override_null_parent(void) {
  g_autoptr(EmaNode) root = load_ok("req: r\ninner:\n");
  Thing t;
  override_ok(root, "inner.a=2", 1);
  assert_node(ema_node_get(root, "inner"), EMA_NODE_MAP, "--set", 1, 1);
  bind_tree_ok(root, &t);
  g_assert_cmpint(t.inner.a, ==, 2);
  g_assert_cmpstr(t.inner.s, ==, "in");
  ema_params_clear(&thing_table, &t);
}

/* A key the override creates is rejected by binding, located at the key in
 * the --set text (column of the key's first character). */
static void test_override_new_key(void) {
  struct {
    const char *assignment;
    const char *message;
  } cases[] = {
      {"inner.zz=3", "--set:1:7: inner.zz: unknown key in inner (valid keys: a, s)"},
      {"zz=3", "--set:1:1: zz: unknown key in thing (valid keys: " THING_KEYS ")"},
      {"items.1.nmae=x", "--set:1:9: items.1.nmae: unknown key in item (valid keys: name, size)"},
      {"newmap.x=1", "--set:1:1: newmap: unknown key in thing (valid keys: " THING_KEYS ")"},
      {"inner.deep.x=1", "--set:1:7: inner.deep: unknown key in inner (valid keys: a, s)"},
  };
  for (guint i = 0; i < G_N_ELEMENTS(cases); i++) {
    g_autoptr(EmaNode) root = override_tree();
    Thing t = {0};
    GError *error = NULL;
    override_ok(root, cases[i].assignment, 1);
    g_assert_false(ema_params_bind(&thing_table, &t, root, NULL, &error));
    ema_params_clear(&thing_table, &t);
    check_error(error, EMA_CONFIG_ERROR_KEY, cases[i].message, NULL, NULL);
  }
}

static void test_override_errors(void) {
  override_fails("items.5.name=x", 1, EMA_CONFIG_ERROR_KEY,
                 "--set:1:1: items.5.name: '5' is not an index of this list (it has 2 items)",
                 NULL);
  override_fails("items.x=1", 2, EMA_CONFIG_ERROR_KEY,
                 "--set:2:1: items.x: 'x' is not an index of this list (it has 2 items)", NULL);
  override_fails("items.-1=1", 1, EMA_CONFIG_ERROR_KEY, NULL, "--set:1:1: items.-1: ");
  override_fails("absent.0.name=x", 1, EMA_CONFIG_ERROR_KEY,
                 "--set:1:1: absent.0.name: 'absent' is not in the file: there is no list to "
                 "take item 0 of",
                 NULL);
  override_fails("req.sub=1", 1, EMA_CONFIG_ERROR_TYPE,
                 "--set:1:1: req.sub: 'req' holds the plain value 'base', not a map or list", NULL);
  override_fails("inner.a.b.c=1", 3, EMA_CONFIG_ERROR_TYPE,
                 "--set:3:1: inner.a.b.c: 'a' holds the plain value '1', not a map or list", NULL);
  override_fails("inner.a=[1,", 1, EMA_CONFIG_ERROR_SYNTAX, NULL,
                 "--set:1:9: inner.a: bad value: ");
  override_fails("inner.a={x: 1", 1, EMA_CONFIG_ERROR_SYNTAX, NULL,
                 "--set:1:9: inner.a: bad value: ");
  override_fails("inner.a", 1, EMA_CONFIG_ERROR_SYNTAX,
                 "--set:1:1: 'inner.a': expected key.path=value", NULL);
  override_fails("=5", 4, EMA_CONFIG_ERROR_SYNTAX, "--set:4:1: '=5': expected key.path=value",
                 NULL);
  override_fails("inner..a=1", 1, EMA_CONFIG_ERROR_SYNTAX, "--set:1:1: inner..a: empty key in path",
                 NULL);
  override_fails("inner.a=&x 1", 1, EMA_CONFIG_ERROR_SYNTAX, NULL,
                 "--set:1:9: inner.a: bad value: ");
  /* descending into a plain value inside a list */
  {
    g_autoptr(EmaNode) root = load_ok("list: [1, 2]\n");
    GError *error = NULL;
    g_assert_false(ema_node_apply_override(root, "list.0.y=3", 1, &error));
    check_error(error, EMA_CONFIG_ERROR_TYPE,
                "--set:1:1: list.0.y: 'y' is inside a plain value, not a map or list", NULL, NULL);
  }
}

/* ---- defaults of tables ------------------------------------------------- */

static const EmaParam bad_default_params[] = {
    {"count", EMA_PARAM_INT, 0, .default_value = "abc"},
};
static const EmaParam bad_range_params[] = {
    {"count", EMA_PARAM_INT, 0, .default_value = "200", .min = 0, .max = 100},
};
static const EmaParam bad_enum_params[] = {
    {"color", EMA_PARAM_ENUM, 0, .default_value = "purple", .choices = color_names},
};
static const EmaParam no_default_params[] = {
    {"size", EMA_PARAM_SIZE, 0, .default_value = NULL},
};
static const EmaParam no_choices_params[] = {
    {"color", EMA_PARAM_ENUM, 0, .default_value = "red"},
};
static const EmaParam bad_unit_params[] = {
    {"bw", EMA_PARAM_BANDWIDTH, 0, .default_value = "5GB"},
};
static const EmaParam nested_bad_params[] = {
    {"a", EMA_PARAM_INT, 0, .default_value = "1"},
    {"sub", EMA_PARAM_STRUCT, 8, .table = NULL},
};

static void check_defaults_fails(const EmaParamTable *table, const char *prefix) {
  GError *error = NULL;
  g_assert_false(ema_params_check_defaults(table, &error));
  check_error(error, EMA_CONFIG_ERROR_INVALID, NULL, prefix, NULL);
}

static void test_check_defaults(void) {
  GError *error = NULL;
  static const EmaParamTable bad_default = {"bad", 8, bad_default_params, 1, NULL};
  static const EmaParamTable bad_range = {"bad", 8, bad_range_params, 1, NULL};
  static const EmaParamTable bad_enum = {"bad", 8, bad_enum_params, 1, NULL};
  static const EmaParamTable no_default = {"bad", 8, no_default_params, 1, NULL};
  static const EmaParamTable no_choices = {"bad", 8, no_choices_params, 1, NULL};
  static const EmaParamTable bad_unit = {"bad", 8, bad_unit_params, 1, NULL};
  static const EmaParamTable nested = {"outer", 16, nested_bad_params, 2, NULL};
  static const EmaParam holder_params[] = {
      {"ok", EMA_PARAM_INT, 0, .default_value = "1"},
      {"in", EMA_PARAM_STRUCT, 8, .table = &bad_range},
  };
  static const EmaParamTable holder = {"holder", 16, holder_params, 2, NULL};

  g_assert_true(ema_params_check_defaults(&ema_experiment_params, &error));
  g_assert_no_error(error);
  g_assert_true(ema_params_check_defaults(&ema_server_params, &error));
  g_assert_no_error(error);
  g_assert_true(ema_params_check_defaults(&ema_gpu_params, &error));
  g_assert_no_error(error);
  g_assert_true(ema_params_check_defaults(&thing_table, &error));
  g_assert_no_error(error);

  check_defaults_fails(&bad_default, "bad.count: bad default 'abc': ");
  check_defaults_fails(&bad_range, "bad.count: bad default '200': 200 is out of range [0, 100]");
  check_defaults_fails(&bad_enum, "bad.color: bad default 'purple': unknown value 'purple'");
  check_defaults_fails(&no_default, "bad.size: no default, yet neither required nor optional");
  check_defaults_fails(&no_choices, "bad.color: an enum parameter needs choices");
  check_defaults_fails(&bad_unit, "bad.bw: bad default '5GB': ");
  check_defaults_fails(&nested, "outer.sub: a map or list parameter needs a table");
  /* a bad default in a sub-table fails the outer table */
  check_defaults_fails(&holder, "bad.count: bad default '200'");
}

/* ---- hardware models ---------------------------------------------------- */

static const char *const builtin_models[] = {"a100x4-40gb", "a100x8-dgx", "gb200-nvl72",
                                             "h100x8-hgx",  "h200x2",     "h200x8-hgx",
                                             "l40sx8-pcie", "mi300x8"};

static gboolean has_name(GPtrArray *names, const char *name) {
  for (guint i = 0; i < names->len; i++)
    if (strcmp(names->pdata[i], name) == 0)
      return TRUE;
  return FALSE;
}

static void test_hwmodel_all_load(void) {
  g_autoptr(GPtrArray) names = ema_hwmodel_list();
  g_assert_cmpuint(names->len, >=, G_N_ELEMENTS(builtin_models));
  for (guint i = 0; i < G_N_ELEMENTS(builtin_models); i++)
    if (!has_name(names, builtin_models[i]))
      g_error("hwmodel %s not listed", builtin_models[i]);
  for (guint i = 1; i < names->len; i++)
    g_assert_cmpint(strcmp(names->pdata[i - 1], names->pdata[i]), <, 0); /* sorted, unique */

  for (guint i = 0; i < names->len; i++) {
    const char *name = names->pdata[i];
    GError *error = NULL;
    g_autoptr(EmaServerSpec) s = ema_server_load(name, &error);
    g_autoptr(GString) out1 = g_string_new(NULL);
    g_autoptr(GString) out2 = g_string_new(NULL);
    g_autoptr(EmaNode) node = NULL;
    EmaServerSpec again = {0};
    if (s == NULL)
      g_error("hwmodel %s does not load: %s", name, error->message);
    g_test_message("%s: %" G_GINT64_FORMAT " GPUs", name, s->gpus);
    g_assert_cmpstr(s->name, ==, name);
    g_assert_nonnull(s->summary);
    g_assert_cmpuint(strlen(s->summary), >, 0);
    g_assert_cmpint(s->gpus, >=, 1);
    g_assert_nonnull(s->gpu.name);
    g_assert_cmpuint(s->gpu.hbm_capacity, >, 0);
    g_assert_cmpfloat(s->gpu.hbm_bandwidth, >, 0);
    g_assert_cmpfloat(s->gpu.local_copy_bandwidth, >, 0);
    g_assert_cmpfloat(s->gpu.matrix_flops, >, 0);
    g_assert_cmpint(s->gpu.kernel_overhead, >=, 0);
    g_assert_cmpfloat(s->link.bandwidth, >, 0);
    g_assert_cmpfloat(s->link.duplex_bandwidth, >=, s->link.bandwidth);
    g_assert_cmpfloat(s->link.duplex_bandwidth, <=, 2 * s->link.bandwidth);
    g_assert_cmpfloat(s->link.direct_read_bandwidth, >, 0);
    g_assert_cmpfloat(s->link.direct_read_bandwidth, <=, s->link.bandwidth);
    g_assert_cmpuint(s->link.copy_ramp_bytes, >, 0);
    g_assert_cmpfloat(s->host.h2d_bandwidth, >, 0);
    g_assert_cmpfloat(s->host.d2h_bandwidth, >, 0);
    g_assert_cmpfloat(s->host.duplex_bandwidth, >, 0);
    g_assert_cmpint(s->topology, >=, EMA_TOPOLOGY_DIRECT);
    g_assert_cmpint(s->topology, <=, EMA_TOPOLOGY_PCIE);
    /* what `describe hwmodel` prints binds back to the same model */
    ema_params_write_yaml(&ema_server_params, s, out1, 0);
    node = ema_node_load_string(out1->str, name, NULL, &error);
    g_assert_no_error(error);
    g_assert_true(ema_params_bind(&ema_server_params, &again, node, NULL, &error));
    g_assert_no_error(error);
    ema_params_write_yaml(&ema_server_params, &again, out2, 0);
    g_assert_cmpstr(out1->str, ==, out2->str);
    g_assert_cmpuint(again.gpu.hbm_capacity, ==, s->gpu.hbm_capacity);
    g_assert_cmpfloat(again.link.bandwidth, ==, s->link.bandwidth);
    ema_params_clear(&ema_server_params, &again);
  }
}

static void test_hwmodel_h200x2(void) {
  GError *error = NULL;
  g_autoptr(EmaServerSpec) s = ema_server_load("h200x2", &error);
  g_assert_no_error(error);
  g_assert_cmpint(s->gpus, ==, 2);
  g_assert_cmpint(s->topology, ==, EMA_TOPOLOGY_DIRECT);
  g_assert_cmpstr(s->gpu.name, ==, "H200-SXM");
  g_assert_cmpfloat(s->link.bandwidth, ==, 397e9);
  g_assert_cmpfloat(s->link.duplex_bandwidth, ==, 784e9);
  g_assert_cmpint(s->link.latency, ==, 1002);
  g_assert_cmpint(s->link.copy_fixed_cost, ==, 6400);
  g_assert_cmpint(s->link.copy_ramp_time, ==, 4950);
  g_assert_cmpuint(s->link.copy_ramp_bytes, ==, 2768241); /* 2.64 MiB, rounded */
  g_assert_cmpint(s->gpu.kernel_overhead, ==, 7000);
  g_assert_cmpfloat(s->host.h2d_bandwidth, ==, 55.4e9);
}

static void test_hwmodel_unknown(void) {
  GError *error = NULL;
  g_autofree char *message = NULL;
  g_assert_null(ema_hwmodel_find("nope", &error));
  g_assert_nonnull(error);
  g_assert_true(g_str_has_prefix(error->message, "unknown hardware model 'nope' (known: "));
  for (guint i = 0; i < G_N_ELEMENTS(builtin_models); i++)
    g_assert_nonnull(strstr(error->message, builtin_models[i]));
  check_error(error, EMA_CONFIG_ERROR_KEY, NULL, NULL, "a100x4-40gb, a100x8-dgx, ");
  error = NULL;
  /* names are names, not paths */
  g_assert_null(ema_hwmodel_find("../servers/h200x2", &error));
  check_error(error, EMA_CONFIG_ERROR_KEY, NULL, "unknown hardware model '../servers/h200x2'",
              NULL);
  error = NULL;
  g_assert_null(ema_hwmodel_find("", &error));
  check_error(error, EMA_CONFIG_ERROR_KEY, NULL, "unknown hardware model ''", NULL);
  error = NULL;
  g_assert_null(ema_server_load("nope", &error));
  check_error(error, EMA_CONFIG_ERROR_KEY, NULL, "unknown hardware model 'nope'", NULL);
}

static const char custom_server[] = "name: custom-box\n"
                                    "summary: \"a test server\"\n"
                                    "gpus: 3\n"
                                    "gpu:\n"
                                    "  name: G\n"
                                    "  hbm_capacity: 16GiB\n"
                                    "  hbm_bandwidth: 1TB/s\n"
                                    "  local_copy_bandwidth: 900GB/s\n"
                                    "  matrix_flops: 100TFLOP/s\n"
                                    "  kernel_overhead: 5us\n"
                                    "topology: switch\n"
                                    "link:\n"
                                    "  bandwidth: 100GB/s\n"
                                    "  duplex_bandwidth: 200GB/s\n"
                                    "  direct_read_bandwidth: 90GB/s\n"
                                    "  latency: 1us\n"
                                    "  copy_fixed_cost: 5us\n"
                                    "host:\n"
                                    "  h2d_bandwidth: 25GB/s\n"
                                    "  d2h_bandwidth: 25GB/s\n"
                                    "  duplex_bandwidth: 50GB/s\n"
                                    "  copy_fixed_cost: 5us\n";

static void test_hwmodel_search_path(void) {
  g_autofree char *dir = g_dir_make_tmp("ema-hwmodels-XXXXXX", NULL);
  g_autofree char *custom = g_build_filename(dir, "custom-box.yaml", NULL);
  g_autofree char *shadow = g_build_filename(dir, "h200x2.yaml", NULL);
  g_autofree char *other = g_build_filename(dir, "README.md", NULL);
  g_autofree char *no_name = g_build_filename(dir, ".yaml", NULL); /* names no model */
  g_autofree char *shadow_text = NULL;
  g_autofree char *missing = g_build_filename(dir, "not-there", NULL);
  g_autofree char *env = NULL;
  g_autoptr(GPtrArray) path = NULL;
  g_autoptr(GPtrArray) names = NULL;
  g_autofree char *found = NULL;
  g_autoptr(EmaServerSpec) box = NULL;
  g_autoptr(EmaServerSpec) h200 = NULL;
  GError *error = NULL;
  guint count = 0;

  g_assert_nonnull(dir);
  shadow_text = g_strconcat("name: h200x2\n", strchr(custom_server, '\n') + 1, NULL);
  g_assert_true(g_file_set_contents(custom, custom_server, -1, NULL));
  g_assert_true(g_file_set_contents(shadow, shadow_text, -1, NULL));
  g_assert_true(g_file_set_contents(other, "not a model\n", -1, NULL));
  g_assert_true(g_file_set_contents(no_name, custom_server, -1, NULL));
  env = g_strconcat(missing, ":", dir, NULL);
  g_assert_true(g_setenv("EMA_HWMODEL_PATH", env, TRUE));

  path = ema_hwmodel_search_path();
  g_assert_cmpuint(path->len, ==, 3);
  g_assert_cmpstr(path->pdata[0], ==, missing);
  g_assert_cmpstr(path->pdata[1], ==, dir);
  g_assert_true(g_str_has_suffix(path->pdata[2], "servers"));

  names = ema_hwmodel_list();
  g_assert_true(has_name(names, "custom-box"));
  g_assert_false(has_name(names, "README"));
  g_assert_false(has_name(names, ""));
  for (guint i = 0; i < names->len; i++)
    count += strcmp(names->pdata[i], "h200x2") == 0;
  g_assert_cmpuint(count, ==, 1); /* listed once though it is in two places */

  found = ema_hwmodel_find("h200x2", &error);
  g_assert_no_error(error);
  g_assert_cmpstr(found, ==, shadow); /* EMA_HWMODEL_PATH comes first */
  box = ema_server_load("custom-box", &error);
  g_assert_no_error(error);
  g_assert_cmpint(box->gpus, ==, 3);
  g_assert_cmpint(box->topology, ==, EMA_TOPOLOGY_SWITCH);
  g_assert_cmpfloat(box->link.bandwidth, ==, 100e9);
  g_assert_cmpint(box->link.copy_ramp_time, ==, 0);         /* default */
  g_assert_cmpuint(box->link.copy_ramp_bytes, ==, 1048576); /* default */
  h200 = ema_server_load("h200x2", &error);
  g_assert_no_error(error);
  g_assert_cmpint(h200->gpus, ==, 3); /* the shadowing file */

  g_unsetenv("EMA_HWMODEL_PATH");
  {
    g_autoptr(GPtrArray) plain = ema_hwmodel_search_path();
    g_autofree char *builtin = ema_hwmodel_find("h200x2", &error);
    g_assert_no_error(error);
    g_assert_cmpuint(plain->len, ==, 1);
    g_assert_cmpstr(builtin, !=, shadow);
    g_assert_null(ema_hwmodel_find("custom-box", &error));
    g_clear_error(&error);
  }
  g_remove(custom);
  g_remove(shadow);
  g_remove(other);
  g_remove(no_name);
  g_rmdir(dir);
}

/* A server file that does not load, and one that calls itself by another name than its
 * file's, by which it is found (it was listed under the one and reported under the other):
 * errors at their place. */
static void test_hwmodel_bad_file(void) {
  g_autofree char *dir = g_dir_make_tmp("ema-hwmodels-XXXXXX", NULL);
  g_autofree char *path = g_build_filename(dir, "broken.yaml", NULL);
  g_autofree char *named = g_strconcat("name: broken\n", strchr(custom_server, '\n') + 1, NULL);
  g_autofree char *text = g_strconcat(named, "gpuz: 1\n", NULL);
  g_autofree char *prefix = g_strdup_printf("%s:23:1: gpuz: unknown key in server", path);
  g_autofree char *other = g_strdup_printf(
      "%s:1:7: name: 'custom-box' is not the name the file is found by ('broken', its file's "
      "name without .yaml): make them the same",
      path);
  GError *error = NULL;
  g_assert_true(g_file_set_contents(path, text, -1, NULL));
  g_assert_true(g_setenv("EMA_HWMODEL_PATH", dir, TRUE));
  g_assert_null(ema_server_load("broken", &error));
  check_error(error, EMA_CONFIG_ERROR_KEY, NULL, prefix, NULL); /* (frees it) */
  error = NULL;
  g_assert_true(g_file_set_contents(path, custom_server, -1, NULL));
  g_assert_null(ema_server_load("broken", &error));
  g_unsetenv("EMA_HWMODEL_PATH");
  check_error(error, EMA_CONFIG_ERROR_INVALID, other, NULL, NULL);
  g_remove(path);
  g_rmdir(dir);
}

/* ---- experiments -------------------------------------------------------- */

static EmaExperiment *load_experiment(const char *path, const char *const *overrides) {
  GError *error = NULL;
  EmaExperiment *e = ema_experiment_load(path, overrides, &error);
  g_assert_no_error(error);
  g_assert_nonnull(e);
  return e;
}

static const EmaOpSpec *op_at(const EmaExperiment *e, guint i) {
  g_assert_cmpuint(i, <, e->ops->len);
  return &g_array_index(e->ops, EmaOpSpec, i);
}

static const EmaOpFlowSpec *flow_at(const EmaOpSpec *op, guint j) {
  g_assert_cmpuint(j, <, op->flows->len);
  return &g_array_index(op->flows, EmaOpFlowSpec, j);
}

static void test_experiment_baseline(void) {
  g_autofree char *path = baseline_path();
  g_autoptr(EmaExperiment) e = load_experiment(path, NULL);
  const EmaOpSpec *op;
  g_assert_cmpstr(e->name, ==, "h200x2-baseline");
  g_assert_cmpstr(e->summary, ==, "The fabric model against the measured two-H200 baseline");
  g_assert_cmpint(e->seed, ==, 1);
  g_assert_cmpfloat(e->tolerance, ==, 0.05);
  g_assert_cmpstr(e->server.name, ==, "h200x2");
  g_assert_cmpint(e->server.gpus, ==, 2);
  g_assert_cmpfloat(e->server.link.bandwidth, ==, 397e9);
  g_assert_cmpuint(e->ops->len, ==, 13);

  op = op_at(e, 0);
  g_assert_cmpstr(op->name, ==, "local-read-4GiB");
  g_assert_cmpint(flow_at(op, 0)->kind, ==, EMA_FLOW_READ);
  g_assert_cmpint(flow_at(op, 0)->src_index, ==, 0);
  g_assert_cmpint(flow_at(op, 0)->dst_index, ==, 0);
  g_assert_cmpuint(flow_at(op, 0)->bytes, ==, G_GUINT64_CONSTANT(4) << 30);
  g_assert_cmpfloat(op->expect.bandwidth, ==, 4489e9);
  g_assert_cmpint(op->expect.time, ==, 0);
  g_assert_cmpuint(ema_op_bytes(op), ==, G_GUINT64_CONSTANT(4) << 30);
  /* a local copy counts its bytes twice */
  op = op_at(e, 1);
  g_assert_cmpstr(op->name, ==, "local-copy-4GiB");
  g_assert_cmpuint(ema_op_bytes(op), ==, G_GUINT64_CONSTANT(8) << 30);
  op = op_at(e, 2);
  g_assert_cmpstr(op->name, ==, "h2d-4GiB");
  g_assert_cmpint(flow_at(op, 0)->src_index, ==, EMA_ENDPOINT_HOST);
  g_assert_cmpint(flow_at(op, 0)->dst_index, ==, 0);
  op = op_at(e, 8);
  g_assert_cmpstr(op->name, ==, "peer-copy-bidirectional-4GiB");
  g_assert_cmpuint(op->flows->len, ==, 2);
  g_assert_cmpint(flow_at(op, 1)->src_index, ==, 1);
  g_assert_cmpuint(ema_op_bytes(op), ==, G_GUINT64_CONSTANT(8) << 30);
  op = op_at(e, 9);
  g_assert_cmpstr(op->name, ==, "peer-copy-4KiB");
  g_assert_cmpuint(flow_at(op, 0)->bytes, ==, 4096);
  g_assert_cmpint(flow_at(op, 0)->kind, ==, EMA_FLOW_COPY);
  g_assert_cmpstr(flow_at(op, 0)->src, ==, "gpu1");
  g_assert_cmpint(flow_at(op, 0)->src_index, ==, 1);
  g_assert_cmpint(op->expect.time, ==, 6530);
  g_assert_cmpfloat(op->expect.tolerance, ==, 0);
}

static void test_experiment_overrides(void) {
  g_autofree char *path = baseline_path();
  const char *const gpus[] = {"server.gpus=4", NULL};
  const char *const link[] = {"server.link.bandwidth=400GB/s", NULL};
  const char *const several[] = {"seed=99", "ops.9.flows.0.bytes=8KiB", "ops.0.expect.tolerance=1%",
                                 "server.gpu.kernel_overhead=3us", NULL};
  const char *const other_server[] = {"server=h200x8-hgx", NULL};
  g_autoptr(EmaExperiment) a = load_experiment(path, gpus);
  g_autoptr(EmaExperiment) b = load_experiment(path, link);
  g_autoptr(EmaExperiment) c = load_experiment(path, several);
  g_autoptr(EmaExperiment) d = load_experiment(path, other_server);
  g_assert_cmpint(a->server.gpus, ==, 4);
  g_assert_cmpfloat(a->server.link.bandwidth, ==, 397e9);
  g_assert_cmpfloat(b->server.link.bandwidth, ==, 400e9);
  g_assert_cmpint(b->server.gpus, ==, 2);
  g_assert_cmpint(c->seed, ==, 99);
  g_assert_cmpuint(flow_at(op_at(c, 9), 0)->bytes, ==, 8192);
  g_assert_cmpfloat(op_at(c, 0)->expect.tolerance, ==, 0.01);
  g_assert_cmpint(c->server.gpu.kernel_overhead, ==, 3000);
  g_assert_cmpstr(d->server.name, ==, "h200x8-hgx");
  g_assert_cmpint(d->server.gpus, ==, 8);
  g_assert_cmpint(d->server.topology, ==, EMA_TOPOLOGY_SWITCH);
}

static void experiment_fails(const char *path, const char *const *overrides, gint code,
                             const char *message, const char *prefix, const char *contains) {
  GError *error = NULL;
  g_autoptr(EmaExperiment) e = ema_experiment_load(path, overrides, &error);
  g_assert_null(e);
  check_error(error, code, message, prefix, contains);
}

static void test_experiment_override_errors(void) {
  g_autofree char *path = baseline_path();
  const char *const unknown[] = {"server.gpus=4", "ops.0.nme=x", NULL};
  const char *const slow_link[] = {"server.link.bandwidth=100GB/s", NULL};
  const char *const zero_gpus[] = {"server.gpus=0", NULL};
  const char *const bad_index[] = {"ops.13.name=x", NULL};
  const char *const bad_server[] = {"server=h900", NULL};
  /* 100 GB/s per direction is below half the file's duplex 784 GB/s: the
   * link table's check rejects it, at the --set that made the two disagree, naming both */
  experiment_fails(path, slow_link, EMA_CONFIG_ERROR_INVALID,
                   "--set:1:23: server.link.bandwidth: duplex_bandwidth 784GB/s must lie between "
                   "bandwidth (100GB/s) and twice it (200GB/s)",
                   NULL, NULL);
  experiment_fails(path, zero_gpus, EMA_CONFIG_ERROR_RANGE,
                   "--set:1:13: server.gpus: 0 is out of range [1, 1024]", NULL, NULL);
  experiment_fails(path, bad_index, EMA_CONFIG_ERROR_KEY,
                   "--set:1:1: ops.13.name: '13' is not an index of this list (it has 13 items)",
                   NULL, NULL);
  experiment_fails(path, bad_server, EMA_CONFIG_ERROR_KEY, NULL,
                   "--set:1:8: server: unknown hardware model 'h900' (known: ", NULL);
  /* the second override's key, at its column in the --set text */
  experiment_fails(path, unknown, EMA_CONFIG_ERROR_KEY,
                   "--set:2:7: ops.0.nme: unknown key in op (valid keys: name, flows, expect)",
                   NULL, NULL);
}

/* Overrides inside a composition the file names (`policy: ema`) stay set through the overrides
 * after them, at the top of the policy map and inside its parameter maps alike, and their bad
 * values are errors at their --set (they were dropped: each later override loaded the
 * composition again). */
static void test_experiment_policy_overrides(void) {
  static const char text[] =
      "name: policy-test\n"
      "server: h200x2\n"
      "policy: ema\n"
      "tenants:\n"
      "  - {name: a, model: llama-3.1-8b, gpu: 0, trace: {arrivals: poisson, rate: 1, requests: "
      "1,\n"
      "     prompt: {dist: fixed, tokens: 10}, output: {dist: fixed, tokens: 10}}}\n";
  g_autofree char *dir = g_dir_make_tmp("ema-policy-XXXXXX", NULL);
  g_autofree char *path = g_build_filename(dir, "policy.yaml", NULL);
  const char *const set[] = {"policy.borrow=on-demand", "policy.decision_period=1s", "duration=5s",
                             NULL};
  const char *const bad[] = {"policy.prefetch_params.allowance=x", "duration=5s", NULL};
  g_autoptr(EmaExperiment) e = NULL;
  g_assert_true(g_file_set_contents(path, text, -1, NULL));
  e = load_experiment(path, set);
  g_assert_cmpstr(e->policy.name, ==, "ema");
  g_assert_cmpstr(e->policy.borrow, ==, "on-demand");
  g_assert_cmpstr(e->policy.prefetch, ==, "offload");
  g_assert_cmpint(e->policy.decision_period, ==, EMA_S(1));
  experiment_fails(path, bad, EMA_CONFIG_ERROR_TYPE,
                   "--set:1:34: policy.prefetch_params.allowance: 'x' is not a number", NULL, NULL);
  {
    /* a map naming a composition is that composition with its keys over it (it ran as a
     * custom static composition labelled `ema`); a name no composition has labels the map */
    const char *const named[] = {"policy={name: ema, prefetch_params: {allowance: 2%}}",
                                 "duration=5s", NULL};
    const char *const custom[] = {"policy={name: mine, borrow: most-idle}", "duration=5s", NULL};
    /* a policy no module registered, with parameters: its name is the error, not its params */
    const char *const unknown[] = {"policy={borrow: neighbour, borrow_params: {reserve: 4}}", NULL};
    /* a policy of another kind: said so, at the same place */
    const char *const other_kind[] = {"policy={borrow: migrate}", NULL};
    /* a composition: said so, with what it stands for, at the same place */
    const char *const composition[] = {"policy={borrow: ema}", NULL};
    experiment_fails(path, unknown, EMA_CONFIG_ERROR_KEY, NULL,
                     "--set:1:17: policy.borrow: unknown borrow policy 'neighbour' (known: ", NULL);
    experiment_fails(path, other_kind, EMA_CONFIG_ERROR_KEY, NULL,
                     "--set:1:17: policy.borrow: unknown borrow policy 'migrate': it is a reclaim "
                     "policy (borrow policies: ",
                     NULL);
    experiment_fails(path, composition, EMA_CONFIG_ERROR_KEY, NULL,
                     "--set:1:17: policy.borrow: unknown borrow policy 'ema': it is a composition "
                     "of policies (`policy: ema` is {borrow: most-idle, ",
                     NULL);
    /* the reverse, one policy where a composition goes: said, with the map that names it, at
     * the same place, in a --set and in the file (it read as a name no composition has) */
    {
      const char *const one_policy[] = {"policy=most-idle", NULL};
      g_autofree char *file_path = g_build_filename(dir, "one-policy.yaml", NULL);
      g_autofree char *file_text = g_strdup(text);
      char *at = strstr(file_text, "policy: ema\n");
      g_autofree char *file_message = NULL;
      g_autofree char *file_yaml = NULL;
      *at = '\0';
      file_yaml = g_strconcat(file_text, "policy: most-idle\n", at + strlen("policy: ema\n"), NULL);
      file_message = g_strdup_printf("%s:3:9: policy: unknown policy 'most-idle': it is a borrow "
                                     "policy (write policy: {borrow: most-idle}, or a "
                                     "composition: ema, ",
                                     file_path);
      experiment_fails(path, one_policy, EMA_CONFIG_ERROR_KEY, NULL,
                       "--set:1:8: policy: unknown policy 'most-idle': it is a borrow policy "
                       "(write policy: {borrow: most-idle}, or a composition: ema, ",
                       NULL);
      g_assert_true(g_file_set_contents(file_path, file_yaml, -1, NULL));
      experiment_fails(file_path, NULL, EMA_CONFIG_ERROR_KEY, NULL, file_message, NULL);
      g_remove(file_path);
    }
    g_autoptr(EmaExperiment) ema = load_experiment(path, named);
    g_autoptr(EmaExperiment) mine = load_experiment(path, custom);
    g_assert_cmpstr(ema->policy.name, ==, "ema");
    g_assert_cmpstr(ema->policy.borrow, ==, "most-idle");
    g_assert_cmpstr(ema->policy.prefetch, ==, "offload");
    g_assert_cmpstr(mine->policy.name, ==, "mine");
    g_assert_cmpstr(mine->policy.borrow, ==, "most-idle");
    g_assert_cmpstr(mine->policy.prefetch, ==, "direct");
  }
  {
    /* an override that replaces a map an earlier one set a key inside would drop that key
     * silently: an error at it, naming both (list indices compared as numbers) */
    const char *const lost[] = {"policy.borrow_params.lender_reserve=50%", "policy=ema", NULL};
    const char *const lost_item[] = {"tenants.00.trace.rate=3", "tenants.0.trace={}", NULL};
    experiment_fails(path, lost, EMA_CONFIG_ERROR_INVALID,
                     "--set:2:1: policy: replaces what --set 1 set inside it "
                     "(policy.borrow_params.lender_reserve): give policy before the keys inside it",
                     NULL, NULL);
    experiment_fails(path, lost_item, EMA_CONFIG_ERROR_INVALID,
                     "--set:2:1: tenants.0.trace: replaces what --set 1 set inside it "
                     "(tenants.00.trace.rate): give tenants.0.trace before the keys inside it",
                     NULL, NULL);
  }
  g_remove(path);
  g_rmdir(dir);
}

/* A --set of the key path an earlier --set sets (list indices as numbers) kept the last value
 * silently: an error at the second, naming the first. A key inside a map an earlier one set is
 * another path, and loads (the map, then one of its keys, is an order that works). */
static void test_experiment_override_repeated(void) {
  g_autofree char *path = baseline_path();
  const char *const seed[] = {"seed=1", "seed=2", NULL};
  const char *const index[] = {"ops.0.name=a", "tolerance=1%", "ops.00.name=b", NULL};
  const char *const inside[] = {"server={name: h200x2, gpus: 2}", "server.gpus=4", NULL};
  g_autoptr(EmaExperiment) e = NULL;
  experiment_fails(path, seed, EMA_CONFIG_ERROR_KEY,
                   "--set:2:1: seed: --set 1 sets it already: give each key once", NULL, NULL);
  experiment_fails(path, index, EMA_CONFIG_ERROR_KEY,
                   "--set:3:1: ops.00.name: --set 1 sets it already (as ops.0.name): give each key "
                   "once",
                   NULL, NULL);
  e = load_experiment(path, inside);
  g_assert_cmpint(e->server.gpus, ==, 4);
}

/* A flow's end gpuN is written without leading zeros: gpu01 was read as gpu1 (and gpu00 as
 * gpu0). An error at it, naming the way to write it. */
static void test_experiment_endpoint_zeros(void) {
  g_autofree char *path = experiment_fixture("bad-endpoint.yaml");
  const char *const fine[] = {"ops.1.flows.0.dst=gpu0", NULL};
  /* each endpoint, and what its error says after "unknown endpoint 'X' (": the name to write
   * where it is one with leading zeros; names shorter than "gpu" too (the hint read past their
   * end: fuzz-params) */
  static const char *const refused[][2] = {
      {"gpu01", "write gpu1, without leading zeros: "},
      {"gpu00", "write gpu0, without leading zeros: "},
      {"gpu002", ""},
      {"0", ""},
      {"gp", ""},
  };
  g_autoptr(EmaExperiment) e = NULL;
  for (guint i = 0; i < G_N_ELEMENTS(refused); i++) {
    g_autofree char *assignment = g_strconcat("ops.1.flows.0.dst=", refused[i][0], NULL);
    const char *const set[] = {assignment, NULL};
    g_autofree char *message = g_strdup_printf(
        "--set:1:19: ops.1.flows.0.dst: unknown endpoint '%s' (%sthis server has host and "
        "gpu0..gpu1)",
        refused[i][0], refused[i][1]);
    experiment_fails(path, set, EMA_CONFIG_ERROR_INVALID, message, NULL, NULL);
  }
  e = load_experiment(path, fine);
  g_assert_cmpint(g_array_index(op_at(e, 1)->flows, EmaOpFlowSpec, 0).dst_index, ==, 0);
}

/* The experiment's name is its results folder's and its figures': one line (as a tenant's, a
 * variant's), and not empty, as an op's and a decode scenario's; each an error at the name. */
static void test_experiment_name_plain(void) {
  g_autofree char *dir = g_dir_make_tmp("ema-name-XXXXXX", NULL);
  g_autofree char *path = g_build_filename(dir, "name.yaml", NULL);
  g_autofree char *baseline = baseline_path();
  g_autofree char *empty = g_strconcat(path,
                                       ":1:7: name: an experiment's name is not empty (it "
                                       "names its results folder and figures)",
                                       NULL);
  const char *const set_line[] = {"name=\"a\\nb\"", NULL};
  const char *const set_odd[] = {"name=../odd name/", NULL};
  const char *const set_op[] = {"ops.0.name=\"\"", NULL};
  const char *const set_decode[] = {"decode.0.name=\"\"", NULL};
  g_autofree char *decodes = source_path("experiments/validate/h200x2-decode.yaml");
  g_autoptr(EmaExperiment) odd = NULL;
  g_assert_true(g_file_set_contents(path,
                                    "name: \"\"\nserver: h200x2\nops:\n  - {name: c, flows: "
                                    "[{kind: copy, src: gpu0, dst: gpu1, bytes: 4MiB}]}\n",
                                    -1, NULL));
  experiment_fails(path, NULL, EMA_CONFIG_ERROR_INVALID, empty, NULL, NULL);
  experiment_fails(baseline, set_line, EMA_CONFIG_ERROR_INVALID,
                   "--set:1:6: name: a name holds no control character (0x0a at byte 1)", NULL,
                   NULL);
  /* an op's and a decode scenario's too: their figures are keyed by them (an empty one was
   * taken, and only a second refused, as a duplicate) */
  experiment_fails(baseline, set_op, EMA_CONFIG_ERROR_INVALID,
                   "--set:1:12: ops.0.name: an op's name is not empty (its figures are keyed by "
                   "it)",
                   NULL, NULL);
  experiment_fails(decodes, set_decode, EMA_CONFIG_ERROR_INVALID,
                   "--set:1:15: decode.0.name: a decode scenario's name is not empty (its "
                   "figures are keyed by it)",
                   NULL, NULL);
  /* odd but printable: a name (results/NAME makes it one safe folder name) */
  odd = load_experiment(baseline, set_odd);
  g_assert_cmpstr(odd->name, ==, "../odd name/");
  g_remove(path);
  g_rmdir(dir);
}

/* More tenants than a server can have GPUs (1024) are refused at the list, before any is bound
 * (200,000 of them took half a minute and 1.5 GB to reach the first overlap). */
static void test_experiment_tenants_cap(void) {
  g_autofree char *dir = g_dir_make_tmp("ema-tenants-XXXXXX", NULL);
  g_autofree char *path = g_build_filename(dir, "many.yaml", NULL);
  g_autoptr(GString) text = g_string_new("name: many\nserver: h200x2\ntenants:\n");
  g_autofree char *prefix = g_strconcat(path, ":4:3: tenants: ", NULL);
  for (guint i = 0; i < 1025; i++)
    g_string_append_printf(text, "  - {name: t%u, model: llama-3.1-8b, gpu: 0}\n", i);
  g_assert_true(g_file_set_contents(path, text->str, -1, NULL));
  experiment_fails(path, NULL, EMA_CONFIG_ERROR_RANGE, NULL, prefix, "1025 items: at most 1024");
  g_remove(path);
  g_rmdir(dir);
}

static void test_experiment_errors(void) {
  struct {
    const char *file;
    gint code;
    const char *at; /* after the path */
    const char *contains;
  } cases[] = {
      {"bad-endpoint.yaml", EMA_CONFIG_ERROR_INVALID,
       ":9:38: ops.1.flows.0.dst: unknown endpoint 'gpu7' (this server has host and gpu0..gpu1)",
       NULL},
      {"read-from-host.yaml", EMA_CONFIG_ERROR_INVALID,
       ":8:9: ops.0.flows.1: a read flow needs a GPU on both ends", "host memory"},
      {"unknown-key-top.yaml", EMA_CONFIG_ERROR_KEY,
       ":2:1: nmae: unknown key in experiment (valid keys: name, summary, seed, tolerance, "
       "server, ops, decode, tenants, duration, sample_period, timeline_max_rows, policy, "
       "idle_gpu_memory, requests_csv, slo, steps_csv, steps_max_rows, events_csv, events, "
       "events_max_rows, "
       "events_tier)",
       NULL},
      {"unknown-key-nested.yaml", EMA_CONFIG_ERROR_KEY,
       ":6:48: ops.0.flows.0.byts: unknown key in flow (valid keys: kind, src, dst, bytes)", NULL},
      {"negative-size.yaml", EMA_CONFIG_ERROR_RANGE,
       ":6:55: ops.0.flows.0.bytes: negative size '-4KiB' is not allowed", NULL},
      {"unknown-unit.yaml", EMA_CONFIG_ERROR_TYPE,
       ":6:55: ops.0.flows.0.bytes: unknown unit 'XiB' in '4XiB' (sizes use B, KB, MB, GB, TB, "
       "KiB, MiB, GiB, TiB)",
       NULL},
      {"unknown-hwmodel.yaml", EMA_CONFIG_ERROR_KEY,
       ":3:9: server: unknown hardware model 'h900' (known: ", "h200x2"},
      {"decode-past-context.yaml", EMA_CONFIG_ERROR_RANGE,
       ":5:61: decode.0.context: 200000 tokens, above llama-3.1-8b's context of 131072 tokens "
       "(its max_context)",
       NULL},
      {"missing-include.yaml", EMA_CONFIG_ERROR_IO,
       ":3:9: !include nope.yaml: ", "experiments/nope.yaml"},
      {"wrong-type.yaml", EMA_CONFIG_ERROR_TYPE,
       ":8:16: ops.0.flows.0.bytes: expected a size (e.g. 2MiB), got a map", NULL},
      {"out-of-range.yaml", EMA_CONFIG_ERROR_RANGE,
       ":6:9: server.gpus: 0 is out of range [1, 1024]", NULL},
      {"comments-only.yaml", EMA_CONFIG_ERROR_KEY,
       ":1:1: no settings (the file is empty, or comments only): an experiment needs a name, a "
       "server and tenants, ops or decode scenarios",
       NULL},
      {"offload-curve-falls.yaml", EMA_CONFIG_ERROR_RANGE,
       ":17:9: server.gpu.offload_slowdown.1: share 0.1, slowdown 0.04 after share 0.05, "
       "slowdown 0.06: the points' shares must rise and their slowdowns must not fall",
       NULL},
      {"malformed.yaml", EMA_CONFIG_ERROR_SYNTAX,
       ":8:5: did not find expected ',' or ']' while parsing a flow sequence", NULL},
      {"bad-indent.yaml", EMA_CONFIG_ERROR_SYNTAX,
       ":4:7: mapping values are not allowed in this context", NULL},
  };
  for (guint i = 0; i < G_N_ELEMENTS(cases); i++) {
    g_autofree char *path = experiment_fixture(cases[i].file);
    g_autofree char *prefix = g_strconcat(path, cases[i].at, NULL);
    experiment_fails(path, NULL, cases[i].code, NULL, prefix, cases[i].contains);
  }
}

static void test_experiment_not_a_map(void) {
  g_autofree char *dir = g_dir_make_tmp("ema-experiment-XXXXXX", NULL);
  g_autofree char *path = g_build_filename(dir, "list.yaml", NULL);
  g_autofree char *message =
      g_strdup_printf("%s:1:1: an experiment file must be a map of settings", path);
  g_autofree char *missing = g_build_filename(dir, "missing.yaml", NULL);
  GError *error = NULL;
  g_assert_true(g_file_set_contents(path, "- 1\n- 2\n", -1, NULL));
  experiment_fails(path, NULL, EMA_CONFIG_ERROR_TYPE, message, NULL, NULL);
  experiment_fails(missing, NULL, EMA_CONFIG_ERROR_IO, NULL, NULL, missing);
  /* an empty file: said to be empty, not a missing name */
  g_assert_true(g_file_set_contents(path, "", -1, NULL));
  g_assert_null(ema_experiment_load(path, NULL, &error));
  check_error(error, EMA_CONFIG_ERROR_KEY, NULL, NULL,
              "no settings (the file is empty, or comments only)");
  g_remove(path);
  g_rmdir(dir);
}

/* An op of more flows than OP_FLOWS_MAX (8,192) is an error at its flows: the fabric's shares
 * grow faster than the square of the flows (50,000 ran past 100 s); 8,192 loads. */
static void test_experiment_op_flows_max(void) {
  g_autofree char *dir = g_dir_make_tmp("ema-experiment-XXXXXX", NULL);
  g_autofree char *path = g_build_filename(dir, "flows.yaml", NULL);
  GError *error = NULL;
  for (guint flows = 8192; flows <= 8193; flows++) {
    g_autoptr(GString) text = g_string_new("name: x\nserver: h200x2\nops:\n  - name: all\n"
                                           "    flows:\n");
    g_autoptr(EmaExperiment) e = NULL;
    for (guint i = 0; i < flows; i++)
      g_string_append(text, "      - {kind: copy, src: gpu0, dst: gpu1, bytes: 1MiB}\n");
    g_assert_true(g_file_set_contents(path, text->str, -1, NULL));
    e = ema_experiment_load(path, NULL, &error);
    if (flows == 8192) {
      g_assert_no_error(error);
      continue;
    }
    g_assert_null(e);
    check_error(error, EMA_CONFIG_ERROR_RANGE, NULL, NULL,
                ":6:7: ops.0.flows: 8193 flows: an op holds at most 8192 ("); /* (frees it) */
    error = NULL;
  }
  g_remove(path);
  g_rmdir(dir);
}

/* A tenant's empty `engine:` (a null, not a map) is an error at the null, as any null is (it
 * was taken for every default: `--set tenants.0.engine=` over a file's engine map put back the
 * defaults with no word), and `engine: {}` is every default; nothing looks keys up in the null
 * first (found by fuzz-params: such a lookup was a critical). */
static void test_experiment_empty_engine(void) {
  g_autofree char *dir = g_dir_make_tmp("ema-experiment-XXXXXX", NULL);
  g_autofree char *path = g_build_filename(dir, "engine.yaml", NULL);
  g_autofree char *want = g_strdup_printf("%s:9:12: tenants.0.engine: needs a value (a map); "
                                          "leave the key out, or give {}, for its defaults",
                                          path);
  const char *tenant = "name: x\nserver: h200x8-hgx\nduration: 1s\ntenants:\n  - name: a\n    "
                       "model: llama-3.1-8b\n    gpu: 0\n    trace: {arrivals: poisson, rate: 1, "
                       "duration: 1s, prompt: {dist: fixed, tokens: 10}, output: {dist: fixed, "
                       "tokens: 10}}\n    engine:";
  g_autofree char *null_engine = g_strconcat(tenant, "\n", NULL);
  g_autofree char *empty_engine = g_strconcat(tenant, " {}\n", NULL);
  g_autoptr(EmaExperiment) e = NULL;
  const EmaTenantSpec *t;
  GError *error = NULL;
  g_assert_true(g_file_set_contents(path, null_engine, -1, NULL));
  g_assert_null(ema_experiment_load(path, NULL, &error));
  check_error(error, EMA_CONFIG_ERROR_KEY, want, NULL, NULL); /* (frees it) */
  error = NULL;
  g_assert_true(g_file_set_contents(path, empty_engine, -1, NULL));
  e = load_experiment(path, NULL);
  t = &g_array_index(e->tenants, EmaTenantSpec, 0);
  g_assert_cmpstr(t->engine.profile, ==, "vllm-v1");
  g_assert_cmpuint(t->engine.max_model_len, ==, t->model.max_context);
  g_remove(path);
  g_rmdir(dir);
}

/* The batch limits a tenant leaves out are vLLM's for its GPU's own memory: the 2x oracle
 * (server.gpu.hbm_scale: 2) changes nothing but the memory, so a 48 GB L40S given twice its HBM
 * keeps the 256 requests and 2048 tokens of a GPU under 70 GiB (it took an H100's 1024 and
 * 8192), and an H100 keeps its own at any scale. */
static void test_experiment_batch_defaults_scaled(void) {
  g_autofree char *dir = g_dir_make_tmp("ema-experiment-XXXXXX", NULL);
  g_autofree char *path = g_build_filename(dir, "scaled.yaml", NULL);
  const struct {
    const char *server, *scale;
    gint64 seqs, tokens;
  } cases[] = {
      {"server=l40sx8-pcie", "server.gpu.hbm_scale=1", 256, 2048},
      {"server=l40sx8-pcie", "server.gpu.hbm_scale=2", 256, 2048},
      {"server=h100x8-hgx", "server.gpu.hbm_scale=0.5", 1024, 8192},
  };
  g_assert_true(g_file_set_contents(
      path,
      "name: x\nserver: h100x8-hgx\ntenants:\n  - name: a\n    model: llama-3.1-8b\n    gpu: "
      "0\n    engine: {profile: vllm-v1}\n    trace: {arrivals: poisson, rate: 1, duration: 1s, "
      "prompt: {dist: fixed, tokens: 10}, output: {dist: fixed, tokens: 10}}\n",
      -1, NULL));
  for (guint i = 0; i < G_N_ELEMENTS(cases); i++) {
    const char *overrides[] = {cases[i].server, cases[i].scale, NULL};
    g_autoptr(EmaExperiment) e = load_experiment(path, overrides);
    const EmaTenantSpec *t = &g_array_index(e->tenants, EmaTenantSpec, 0);
    g_assert_cmpint(t->engine.max_num_seqs, ==, cases[i].seqs);
    g_assert_cmpint(t->engine.max_num_batched_tokens, ==, cases[i].tokens);
  }
  g_remove(path);
  g_rmdir(dir);
}

/* to_yaml -> file -> load -> to_yaml gives the same text. */
static void assert_fixed_point(const EmaExperiment *e) {
  g_autofree char *dir = g_dir_make_tmp("ema-resolved-XXXXXX", NULL);
  g_autofree char *path = g_build_filename(dir, "resolved.yaml", NULL);
  g_autofree char *text1 = ema_experiment_to_yaml(e);
  g_autofree char *text2 = NULL;
  g_autoptr(EmaExperiment) again = NULL;
  g_assert_true(g_file_set_contents(path, text1, -1, NULL));
  again = load_experiment(path, NULL);
  text2 = ema_experiment_to_yaml(again);
  g_assert_cmpstr(text1, ==, text2);
  g_assert_cmpuint(again->ops ? again->ops->len : 0, ==, e->ops ? e->ops->len : 0);
  g_assert_cmpint(again->seed, ==, e->seed);
  g_assert_cmpfloat(again->server.link.bandwidth, ==, e->server.link.bandwidth);
  g_assert_cmpuint(again->server.gpu.hbm_capacity, ==, e->server.gpu.hbm_capacity);
  g_remove(path);
  g_rmdir(dir);
}

static void test_experiment_resolved(void) {
  g_autofree char *path = baseline_path();
  const char *const overrides[] = {"seed=7", "server.link.bandwidth=400GB/s",
                                   "ops.3.expect.tolerance=2.5%", NULL};
  g_autoptr(EmaExperiment) e = load_experiment(path, NULL);
  g_autoptr(EmaExperiment) o = load_experiment(path, overrides);
  g_autofree char *text = ema_experiment_to_yaml(e);
  g_autofree char *otext = ema_experiment_to_yaml(o);

  g_assert_true(g_str_has_prefix(text, "# Resolved by ema-sim "));
  g_assert_nonnull(strstr(text, "\nname: \"h200x2-baseline\"\n"));
  g_assert_nonnull(strstr(text, "\nseed: 1\n"));
  g_assert_nonnull(strstr(text, "\ntolerance: 5%\n"));
  g_assert_nonnull(strstr(text, "\nserver:\n  name: \"h200x2\"\n"));
  g_assert_nonnull(strstr(text, "\n    bandwidth: 397GB/s\n"));
  g_assert_nonnull(strstr(text, "\n    copy_ramp_bytes: 2768241B  # 2.64 MiB\n"));
  g_assert_nonnull(strstr(text, "\n  - name: \"peer-copy-4KiB\"\n"
                                "    flows:\n"
                                "      - kind: copy\n"
                                "        src: \"gpu1\"\n"
                                "        dst: \"gpu0\"\n"
                                "        bytes: 4KiB\n"
                                "    expect:\n"
                                "      time: 6.53us\n"));
  g_assert_nonnull(strstr(otext, "\nseed: 7\n"));
  g_assert_nonnull(strstr(otext, "\n    bandwidth: 400GB/s\n"));
  g_assert_nonnull(strstr(otext, "      tolerance: 2.5%\n"));
  assert_fixed_point(e);
  assert_fixed_point(o);
}

/* An op without `expect` is written as `expect: {}`; that must load again. */
static void test_experiment_resolved_no_expect(void) {
  g_autofree char *path = experiment_fixture("inline-server.yaml");
  g_autoptr(EmaExperiment) e = load_experiment(path, NULL);
  g_assert_cmpstr(e->server.name, ==, "inline-h200x4");
  g_assert_cmpint(e->server.gpus, ==, 4);
  g_assert_cmpint(op_at(e, 0)->expect.time, ==, 0);
  g_assert_cmpfloat(op_at(e, 0)->expect.bandwidth, ==, 0);
  g_assert_cmpint(flow_at(op_at(e, 0), 0)->src_index, ==, 3);
  assert_fixed_point(e);
}

/* An experiment with neither ops nor tenants has nothing to run: an error
 * at the top of the file, not an empty result; or at the empty list given
 * (tenants: [], or a --set that empties it), the place that says so. */
static void test_experiment_no_ops(void) {
  static const struct {
    const char *text, *set, *at;
  } cases[] = {
      {"name: idle\nserver: l40sx8-pcie\n", NULL, ":1:1: "},
      {"name: idle\nserver: l40sx8-pcie\ntenants: []\n", NULL, ":3:10: tenants: "},
      {"name: idle\nserver: l40sx8-pcie\nops: []\n", NULL, ":3:6: ops: "},
      {"name: idle\nserver: l40sx8-pcie\n", "tenants=[]", "--set:1:9: tenants: "},
  };
  g_autofree char *dir = g_dir_make_tmp("ema-experiment-XXXXXX", NULL);
  g_autofree char *path = g_build_filename(dir, "no-ops.yaml", NULL);
  for (guint i = 0; i < G_N_ELEMENTS(cases); i++) {
    const char *set[] = {cases[i].set, NULL};
    g_autofree char *expected = NULL;
    g_autoptr(EmaExperiment) e = NULL;
    GError *error = NULL;
    g_assert_true(g_file_set_contents(path, cases[i].text, -1, NULL));
    e = ema_experiment_load(path, cases[i].set ? set : NULL, &error);
    g_assert_null(e);
    g_assert_error(error, EMA_CONFIG_ERROR, EMA_CONFIG_ERROR_KEY);
    expected = g_strconcat(cases[i].set ? "" : path, cases[i].at,
                           "nothing to run: give ops (data movements), decode scenarios or "
                           "tenants (serving)",
                           NULL);
    g_assert_cmpstr(error->message, ==, expected);
    g_error_free(error);
  }
  g_remove(path);
  g_rmdir(dir);
}

/* ---- ops ---------------------------------------------------------------- */

/* The 4 KiB peer copy alone on h200x2, as fabric.c computes it: fixed cost,
 * plus the ramp rounded up, plus the transfer at the link's 397 GB/s
 * rounded up. */
static EmaTime peer_copy_4k_ns(const EmaServerSpec *s) {
  double bytes = 4096;
  EmaTime ramp = (EmaTime) ceil((double) s->link.copy_ramp_time *
                                -expm1(-bytes / (double) s->link.copy_ramp_bytes));
  EmaTime transfer = (EmaTime) ceil(bytes * 1e9 / s->link.bandwidth);
  return s->link.copy_fixed_cost + ramp + transfer;
}

static void test_ops_baseline(void) {
  g_autofree char *path = baseline_path();
  g_autoptr(EmaExperiment) e = load_experiment(path, NULL);
  GError *error = NULL;
  g_autoptr(EmaOpsReport) report = ema_ops_run(e, &error);
  const EmaOpResult *r;
  EmaTime total = 0;
  EmaTime expected;

  g_assert_no_error(error);
  g_assert_cmpuint(report->ops->len, ==, 13);
  g_assert_cmpuint(report->failed, ==, 0);
  g_assert_cmpuint(report->events, >, 0);
  for (guint i = 0; i < report->ops->len; i++) {
    r = &g_array_index(report->ops, EmaOpResult, i);
    g_test_message("%s: %" G_GINT64_FORMAT " ns, error %+.3f%%", r->spec->name, r->seconds_ns,
                   r->error * 100);
    g_assert_true(r->spec == op_at(e, i));
    g_assert_true(r->has_expect);
    g_assert_true(r->pass);
    g_assert_cmpfloat(fabs(r->error), <=, r->tolerance);
    g_assert_cmpfloat(r->tolerance, ==, 0.05);
    g_assert_cmpint(r->seconds_ns, >, 0);
    g_assert_cmpfloat(r->bandwidth, ==, (double) ema_op_bytes(r->spec) / (r->seconds_ns / 1e9));
    total += r->seconds_ns;
  }
  /* ops run back to back from time 0 */
  g_assert_cmpint(report->simulated, ==, total);

  /* the 4 KiB peer copy, exactly: 6400 + 8 + 11 ns */
  r = &g_array_index(report->ops, EmaOpResult, 9);
  g_assert_cmpstr(r->spec->name, ==, "peer-copy-4KiB");
  expected = peer_copy_4k_ns(&e->server);
  g_assert_cmpint(expected, ==, 6400 + 8 + 11);
  g_assert_cmpint(r->seconds_ns, ==, expected);
  g_assert_true(r->expect_is_time);
  g_assert_cmpfloat(r->expected, ==, 6530 / 1e9);
  g_assert_cmpfloat(r->measured, ==, expected / 1e9);
  g_assert_cmpfloat(r->error, ==, (expected / 1e9 - 6530 / 1e9) / (6530 / 1e9));
  /* a bandwidth expectation */
  r = &g_array_index(report->ops, EmaOpResult, 6);
  g_assert_cmpstr(r->spec->name, ==, "peer-copy-1to0-4GiB");
  g_assert_false(r->expect_is_time);
  g_assert_cmpfloat(r->expected, ==, 397e9);
  g_assert_cmpfloat(r->measured, ==, r->bandwidth);
}

/* Decode scenarios through the pool's step formula on h200x2: 5% of the KV
 * read directly hides under the attention (exactly the all-local step),
 * 50% does not; a peer's pull slows the step, by copies or by loads alike
 * (the model charges both with interference_outgoing); a peer_pull_mode
 * without a pull, and an MoE's FP8 weights on a GPU without an FP8 rate, are located errors. */
static void test_decode_scenarios(void) {
  static const char text[] =
      "name: decode-test\n"
      "server: h200x2\n"
      "decode:\n"
      "  - {name: local, model: llama-3.1-8b, batch: 32, context: 2000}\n"
      "  - {name: direct-5, model: llama-3.1-8b, batch: 32, context: 2000, mode: direct,\n"
      "     remote_fraction: 5%}\n"
      "  - {name: direct-50, model: llama-3.1-8b, batch: 32, context: 2000, mode: direct,\n"
      "     remote_fraction: 50%}\n"
      "  - {name: pull-copy, model: llama-3.1-8b, batch: 32, context: 2000, peer_pull: 100GB/s}\n"
      "  - {name: pull-direct, model: llama-3.1-8b, batch: 32, context: 2000, peer_pull: 100GB/s,\n"
      "     peer_pull_mode: direct}\n";
  g_autofree char *dir = g_dir_make_tmp("ema-decode-XXXXXX", NULL);
  g_autofree char *path = g_build_filename(dir, "decode.yaml", NULL);
  g_autofree char *prefix = g_strconcat(path, ":11:22: decode.4.peer_pull_mode: ", NULL);
  const char *const no_pull[] = {"decode.4.peer_pull=0B/s", NULL};
  g_autoptr(EmaExperiment) e = NULL;
  g_autoptr(EmaOpsReport) report = NULL;
  const EmaOpResult *r;
  GError *error = NULL;
  g_assert_true(g_file_set_contents(path, text, -1, NULL));
  e = load_experiment(path, NULL);
  report = ema_ops_run(e, &error);
  g_assert_no_error(error);
  g_assert_cmpuint(report->ops->len, ==, 5);
  r = (const EmaOpResult *) report->ops->data;
  g_assert_cmpint(r[1].seconds_ns, ==, r[0].seconds_ns);
  g_assert_cmpint(r[2].seconds_ns, >, r[0].seconds_ns);
  g_assert_cmpint(r[3].seconds_ns, >, r[0].seconds_ns);
  g_assert_cmpint(r[4].seconds_ns, ==, r[3].seconds_ns);
  g_assert_null(ema_experiment_load(path, no_pull, &error));
  check_error(error, EMA_CONFIG_ERROR_INVALID, NULL, prefix,
              "a peer_pull_mode needs a peer_pull above 0");
  {
    /* a name given twice (an op's or a scenario's): its figures would overwrite each other */
    const char *const twice[] = {"decode.1.name=local", NULL};
    GError *twice_error = NULL;
    g_assert_null(ema_experiment_load(path, twice, &twice_error));
    check_error(twice_error, EMA_CONFIG_ERROR_INVALID, NULL, "--set:1:15: decode.1: ",
                "name 'local' is used twice (each op and decode scenario needs its own)");
  }
  {
    /* a depth other than the default on a scenario that does not prefetch: ignored before */
    const char *const deep[] = {"decode.0.depth=5", NULL};
    GError *deep_error = NULL;
    g_assert_null(ema_experiment_load(path, deep, &deep_error));
    check_error(deep_error, EMA_CONFIG_ERROR_INVALID, NULL, "--set:1:16: decode.0.depth: ",
                "depth is prefetch's (layers fetched ahead): give mode prefetch, or leave depth "
                "out");
  }
  {
    /* remote KV, or a peer's pulls, on a server of one GPU: nothing to hold them (the step was
     * timed at the clock's end) */
    const char *const one_gpu[] = {"server.gpus=1", NULL};
    const char *const one_gpu_pull[] = {
        "server.gpus=1",       "decode.1.mode=local",         "decode.1.remote_fraction=0%",
        "decode.2.mode=local", "decode.2.remote_fraction=0%", NULL};
    g_autofree char *at = g_strconcat(path, ":6:23: decode.1.remote_fraction: ", NULL);
    g_autofree char *pull_at = g_strconcat(path, ":9:81: decode.3.peer_pull: ", NULL);
    GError *one_error = NULL;
    g_assert_null(ema_experiment_load(path, one_gpu, &one_error));
    check_error(one_error, EMA_CONFIG_ERROR_INVALID, NULL, at,
                "remote_fraction needs a gpu1, and server h200x2 has one GPU");
    one_error = NULL; /* (check_error freed it) */
    g_assert_null(ema_experiment_load(path, one_gpu_pull, &one_error));
    check_error(one_error, EMA_CONFIG_ERROR_INVALID, NULL, pull_at,
                "peer_pull needs a gpu1, and server h200x2 has one GPU");
  }
  {
    /* a scenario whose step model cannot be built is refused at load, at the scenario: an MoE
     * model's FP8 weights on a GPU without an FP8 rate (dense ones run weight-only there) */
    const char *const no_fp8[] = {"server=a100x8-dgx", "decode.0.model=mixtral-8x7b",
                                  "decode.0.model.weights=fp8", NULL};
    g_autofree char *at = g_strconcat(path, ":4:5: decode.0: ", NULL);
    GError *fp8_error = NULL;
    g_assert_null(ema_experiment_load(path, no_fp8, &fp8_error));
    check_error(fp8_error, EMA_CONFIG_ERROR_INVALID, NULL, at,
                "A100-SXM4-80GB: FP8 weights of an MoE model need a GPU with an FP8 matrix rate "
                "(gpu.matrix_flops_fp8): without one vLLM runs FP8 weight-only (FP8 Marlin) in "
                "dense layers, and its fused MoE has no such kernel");
  }
  {
    /* a model's name set over a model a name expanded: that model (overrides of other keys
     * given before it kept), not the old shape relabelled; a name no model has is an error at
     * its place */
    const char *const renamed[] = {"decode.0.model.weights=fp8", "decode.0.model.name=mixtral-8x7b",
                                   NULL};
    const char *const unknown[] = {"decode.0.model.name=nope", NULL};
    g_autoptr(EmaExperiment) moe = load_experiment(path, renamed);
    const EmaDecodeScenarioSpec *d = &g_array_index(moe->decode, EmaDecodeScenarioSpec, 0);
    GError *name_error = NULL;
    g_assert_cmpstr(d->model.name, ==, "mixtral-8x7b");
    g_assert_cmpint(d->model.experts, ==, 8);
    g_assert_cmpint(d->model.vocab, ==, 32000);
    g_assert_cmpint(d->model.weights, ==, EMA_PRECISION_FP8);
    g_assert_null(ema_experiment_load(path, unknown, &name_error));
    check_error(name_error, EMA_CONFIG_ERROR_KEY, NULL,
                "--set:1:21: decode.0.model: ", "unknown model 'nope' (known: ");
  }
  g_remove(path);
  g_rmdir(dir);
}

/* A GPU's operator profile is one there is, even in an experiment of data movements alone (which
 * never times a step): an unknown one is an error at its key, not accepted unread. */
static void test_ops_unknown_profile(void) {
  g_autofree char *path = baseline_path();
  const char *const unknown[] = {"server.gpu.profile=nope", NULL};
  const char *const known[] = {"server.gpu.profile=h100-sxm", NULL};
  g_autoptr(EmaExperiment) ok = load_experiment(path, known);
  GError *error = NULL;
  g_assert_null(ema_experiment_load(path, unknown, &error));
  check_error(error, EMA_CONFIG_ERROR_KEY, NULL,
              "--set:1:20: server.gpu.profile: unknown profile 'nope' (no nope/profile.yaml "
              "under EMA_PROFILE_PATH or ",
              "/hwmodels/profiles)");
}

static void test_ops_missed(void) {
  g_autofree char *path = baseline_path();
  const char *const too_fast[] = {"ops.9.expect.time=1us", NULL};
  const char *const tight[] = {"ops.0.expect.tolerance=0.1%", "ops.12.expect.time=60us", NULL};
  g_autoptr(EmaExperiment) a = load_experiment(path, too_fast);
  g_autoptr(EmaExperiment) b = load_experiment(path, tight);
  GError *error = NULL;
  g_autoptr(EmaOpsReport) ra = ema_ops_run(a, &error);
  g_autoptr(EmaOpsReport) rb = NULL;
  const EmaOpResult *r;
  g_assert_no_error(error);
  g_assert_cmpuint(ra->failed, ==, 1);
  r = &g_array_index(ra->ops, EmaOpResult, 9);
  g_assert_false(r->pass);
  g_assert_cmpfloat(r->expected, ==, 1e-6);
  g_assert_cmpfloat(r->error, ==, (6419e-9 - 1e-6) / 1e-6);
  for (guint i = 0; i < ra->ops->len; i++)
    if (i != 9)
      g_assert_true(g_array_index(ra->ops, EmaOpResult, i).pass);

  /* local-read misses by 0.73%: within 5%, not within 0.1%; 16 MiB takes
   * 53.6 us, 10.7% below 60 us */
  rb = ema_ops_run(b, &error);
  g_assert_no_error(error);
  g_assert_cmpuint(rb->failed, ==, 2);
  r = &g_array_index(rb->ops, EmaOpResult, 0);
  g_assert_false(r->pass);
  g_assert_cmpfloat(r->tolerance, ==, 0.001);
  g_assert_false(g_array_index(rb->ops, EmaOpResult, 12).pass);
}

static void test_ops_deterministic(void) {
  g_autofree char *path = baseline_path();
  g_autoptr(EmaExperiment) e = load_experiment(path, NULL);
  GError *error = NULL;
  g_autoptr(EmaOpsReport) a = ema_ops_run(e, &error);
  g_autoptr(EmaOpsReport) b = ema_ops_run(e, &error);
  g_assert_no_error(error);
  g_assert_cmpuint(a->events, ==, b->events);
  g_assert_cmpint(a->simulated, ==, b->simulated);
  for (guint i = 0; i < a->ops->len; i++)
    g_assert_cmpint(g_array_index(a->ops, EmaOpResult, i).seconds_ns, ==,
                    g_array_index(b->ops, EmaOpResult, i).seconds_ns);
}

int main(int argc, char **argv) {
  g_test_init(&argc, &argv, NULL);
  g_unsetenv("EMA_HWMODEL_PATH");

  g_test_add_func("/config/node/locations", test_node_locations);
  g_test_add_func("/config/node/scalar-root", test_node_scalar_root);
  g_test_add_func("/config/node/include", test_node_include);
  g_test_add_func("/config/node/include-from-string", test_node_include_from_string);
  g_test_add_func("/config/node/include-cycle", test_node_include_cycle);
  g_test_add_func("/config/node/include-missing", test_node_include_missing);
  g_test_add_func("/config/node/include-missing-nested", test_node_include_missing_nested);
  g_test_add_func("/config/node/include-syntax-error", test_node_include_syntax_error);
  g_test_add_func("/config/node/include-empty-name", test_node_include_empty_name);
  g_test_add_func("/config/node/missing-file", test_node_missing_file);
  g_test_add_func("/config/node/malformed", test_node_malformed);
  g_test_add_func("/config/node/duplicate-key", test_node_duplicate_key);
  g_test_add_func("/config/node/anchors", test_node_anchors);
  g_test_add_func("/config/node/anchor-on-key", test_node_anchor_on_key);
  g_test_add_func("/config/node/tags", test_node_tags);
  g_test_add_func("/config/node/tags-on-containers", test_node_tags_on_containers);
  g_test_add_func("/config/node/typed-tags", test_node_typed_tags);
  g_test_add_func("/config/node/empty", test_node_empty);
  g_test_add_func("/config/node/invalid-utf8", test_node_invalid_utf8);
  g_test_add_func("/config/node/copy-set", test_node_copy_set);

  g_test_add_func("/config/params/defaults", test_params_defaults);
  g_test_add_func("/config/params/values", test_params_values);
  g_test_add_func("/config/params/unknown-key", test_params_unknown_key);
  g_test_add_func("/config/params/wrong-type", test_params_wrong_type);
  g_test_add_func("/config/params/range", test_params_range);
  g_test_add_func("/config/params/negative-size", test_params_negative_size);
  g_test_add_func("/config/params/unknown-unit", test_params_unknown_unit);
  g_test_add_func("/config/params/required", test_params_required);
  g_test_add_func("/config/params/enum", test_params_enum);
  g_test_add_func("/config/params/check-hook", test_params_check_hook);
  g_test_add_func("/config/params/write-defaults", test_params_write_defaults);
  g_test_add_func("/config/params/write-indent", test_params_write_indent);
  g_test_add_func("/config/params/round-trip", test_params_round_trip);
  g_test_add_func("/config/params/round-trip-control-chars", test_params_round_trip_control_chars);
  g_test_add_func("/config/params/round-trip-optional-bool-enum",
                  test_params_round_trip_optional_bool_enum);
  g_test_add_func("/config/params/round-trip-large-integers",
                  test_params_round_trip_large_integers);
  g_test_add_func("/config/params/describe", test_params_describe);
  g_test_add_func("/config/params/parse-value", test_params_parse_value);
  g_test_add_func("/config/params/long-values-cut", test_params_long_values_cut);

  g_test_add_func("/config/override/values", test_override_values);
  g_test_add_func("/config/override/structures", test_override_structures);
  g_test_add_func("/config/override/null-parent", test_override_null_parent);
  g_test_add_func("/config/override/new-key", test_override_new_key);
  g_test_add_func("/config/override/errors", test_override_errors);

  g_test_add_func("/config/check-defaults", test_check_defaults);

  g_test_add_func("/config/hwmodel/all-load", test_hwmodel_all_load);
  g_test_add_func("/config/hwmodel/h200x2", test_hwmodel_h200x2);
  g_test_add_func("/config/hwmodel/unknown", test_hwmodel_unknown);
  g_test_add_func("/config/hwmodel/search-path", test_hwmodel_search_path);
  g_test_add_func("/config/hwmodel/bad-file", test_hwmodel_bad_file);

  g_test_add_func("/config/experiment/baseline", test_experiment_baseline);
  g_test_add_func("/config/experiment/overrides", test_experiment_overrides);
  g_test_add_func("/config/experiment/override-errors", test_experiment_override_errors);
  g_test_add_func("/config/experiment/policy-overrides", test_experiment_policy_overrides);
  g_test_add_func("/config/experiment/override-repeated", test_experiment_override_repeated);
  g_test_add_func("/config/experiment/endpoint-zeros", test_experiment_endpoint_zeros);
  g_test_add_func("/config/experiment/name-plain", test_experiment_name_plain);
  g_test_add_func("/config/experiment/tenants-cap", test_experiment_tenants_cap);
  g_test_add_func("/config/experiment/errors", test_experiment_errors);
  g_test_add_func("/config/experiment/not-a-map", test_experiment_not_a_map);
  g_test_add_func("/config/experiment/empty-engine", test_experiment_empty_engine);
  g_test_add_func("/config/experiment/op-flows-max", test_experiment_op_flows_max);
  g_test_add_func("/config/experiment/batch-defaults-scaled",
                  test_experiment_batch_defaults_scaled);
  g_test_add_func("/config/experiment/resolved", test_experiment_resolved);
  g_test_add_func("/config/experiment/resolved-no-expect", test_experiment_resolved_no_expect);
  g_test_add_func("/config/experiment/no-ops", test_experiment_no_ops);

  g_test_add_func("/config/ops/baseline", test_ops_baseline);
  g_test_add_func("/config/ops/missed", test_ops_missed);
  g_test_add_func("/config/ops/unknown-profile", test_ops_unknown_profile);
  g_test_add_func("/config/ops/decode-scenarios", test_decode_scenarios);
  g_test_add_func("/config/ops/deterministic", test_ops_deterministic);
  return g_test_run();
}
