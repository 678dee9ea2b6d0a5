/* node.c: loads YAML (libyaml's event API) into EmaNode trees that keep the
 * file, line and column of every node, resolves `!include` tags, and applies
 * `--set path=value` overrides.
 *
 * Invariants: every node has a location; a MAP's keys are unique scalars and
 * `keys` and `items` have the same length; an include never loops (the chain
 * of files being loaded is checked) and never nests deeper than
 * MAX_INCLUDE_DEPTH; a tree is never deeper than EMA_NODE_MAX_DEPTH levels,
 * counted across includes and `--set` paths, so that every recursive walk
 * of a tree (build, copy, free, bind) has a bounded stack; one load (a
 * file with its includes) builds at most EMA_NODE_MAX_NODES nodes and
 * expands at most EMA_NODE_MAX_INCLUDES includes, so that its time and
 * memory are bounded whatever the input; duplicate keys
 * are found through a hash of the map being built (linear in its size).
 * Only regular files are read, at most EMA_FILE_MAX_TEXT bytes each.
 * Anchors and aliases are rejected rather than half supported, and so are
 * documents with more than one YAML document. */
#include "ema/core/node.h"

#include "ema/core/file.h"
#include "ema/core/units.h"

#include <stdarg.h>
#include <string.h>
#include <yaml.h>

#define MAX_INCLUDE_DEPTH 16

/* YAML's core schema's tags (!!str is YAML_CORE_TAG "str") */
#define YAML_CORE_TAG "tag:yaml.org,2002:"

GQuark ema_config_error_quark(void) {
  return g_quark_from_static_string("ema-config-error-quark");
}

EmaNode *ema_node_new_scalar(const char *value, const char *file, guint line, guint col) {
  EmaNode *node = g_new0(EmaNode, 1);
  node->kind = EMA_NODE_SCALAR;
  node->value = g_strdup(value);
  node->file = g_ref_string_new_intern(file ? file : "<none>");
  node->line = line;
  node->col = col;
  return node;
}

static EmaNode *new_container(EmaNodeKind kind, const char *file, guint line, guint col) {
  EmaNode *node = ema_node_new_scalar(NULL, file, line, col);
  node->kind = kind;
  node->items = g_ptr_array_new_with_free_func((GDestroyNotify) ema_node_free);
  if (kind == EMA_NODE_MAP)
    node->keys = g_ptr_array_new_with_free_func((GDestroyNotify) ema_node_free);
  return node;
}

EmaNode *ema_node_new_map(const char *file, guint line, guint col) {
  return new_container(EMA_NODE_MAP, file, line, col);
}

EmaNode *ema_node_new_seq(const char *file, guint line, guint col) {
  return new_container(EMA_NODE_SEQ, file, line, col);
}

void ema_node_free(EmaNode *node) {
  if (node == NULL)
    return;
  g_free(node->value);
  if (node->keys)
    g_ptr_array_unref(node->keys);
  if (node->items)
    g_ptr_array_unref(node->items);
  g_ref_string_release(node->file);
  g_free(node);
}

EmaNode *ema_node_copy(const EmaNode *node) {
  EmaNode *copy;
  if (node->kind == EMA_NODE_SCALAR)
    return ema_node_new_scalar(node->value, node->file, node->line, node->col);
  copy = new_container(node->kind, node->file, node->line, node->col);
  for (guint i = 0; i < node->items->len; i++) {
    if (node->keys)
      g_ptr_array_add(copy->keys, ema_node_copy(node->keys->pdata[i]));
    g_ptr_array_add(copy->items, ema_node_copy(node->items->pdata[i]));
  }
  return copy;
}

void ema_node_error(GError **error, gint code, const EmaNode *node, const char *path,
                    const char *format, ...) {
  va_list args;
  g_autofree char *message = NULL;
  va_start(args, format);
  message = g_strdup_vprintf(format, args);
  va_end(args);
  if (path && *path)
    g_set_error(error, EMA_CONFIG_ERROR, code, "%s:%u:%u: %s: %s", node->file, node->line,
                node->col, path, message);
  else
    g_set_error(error, EMA_CONFIG_ERROR, code, "%s:%u:%u: %s", node->file, node->line, node->col,
                message);
}

static gint map_index(const EmaNode *map, const char *key) {
  g_return_val_if_fail(map != NULL && map->kind == EMA_NODE_MAP, -1);
  for (guint i = 0; i < map->keys->len; i++) {
    const EmaNode *k = map->keys->pdata[i];
    if (g_strcmp0(k->value, key) == 0)
      return (gint) i;
  }
  return -1;
}

EmaNode *ema_node_get(const EmaNode *map, const char *key) {
  gint i = map && map->kind == EMA_NODE_MAP ? map_index(map, key) : -1;
  return i < 0 ? NULL : map->items->pdata[i];
}

const EmaNode *ema_node_get_key(const EmaNode *map, const char *key) {
  gint i = map && map->kind == EMA_NODE_MAP ? map_index(map, key) : -1;
  return i < 0 ? NULL : map->keys->pdata[i];
}

void ema_node_set(EmaNode *map, const char *key, EmaNode *value) {
  gint i = map_index(map, key);
  if (i >= 0) {
    ema_node_free(map->items->pdata[i]);
    map->items->pdata[i] = value;
    return;
  }
  g_ptr_array_add(map->keys, ema_node_new_scalar(key, value->file, value->line, value->col));
  g_ptr_array_add(map->items, value);
}

/* ---- loading ---------------------------------------------------------- */

/* What one load (a file or a string, and every file it includes) has used so far. */
typedef struct {
  GPtrArray *chain; /* files being loaded, outermost first (cycle check) */
  guint nodes;      /* nodes built, keys included (at most EMA_NODE_MAX_NODES) */
  guint includes;   /* includes expanded (at most EMA_NODE_MAX_INCLUDES) */
} Load;

typedef struct {
  yaml_parser_t parser;
  const char *name; /* for locations */
  char *base_dir;   /* for includes */
  Load *load;       /* what the whole load has used, this file's includes with it */
  guint depth;      /* tree depth of this document's root (an include's place) */
} Loader;

static EmaNode *load_file_chained(const char *path, Load *load, guint depth, GError **error);

/* Failures of a file itself (unreadable, part of a cycle, too deep) carry no
 * location until the caller adds the place that named the file. */
static GQuark unlocated_quark(void) {
  return g_quark_from_static_string("ema-config-unlocated-quark");
}

static void set_parser_error(Loader *loader, GError **error) {
  yaml_parser_t *p = &loader->parser;
  const char *problem = p->error == YAML_MEMORY_ERROR ? "out of memory while parsing"
                        : p->problem                  ? p->problem
                                                      : "malformed YAML";
  if (p->context)
    g_set_error(error, EMA_CONFIG_ERROR, EMA_CONFIG_ERROR_SYNTAX, "%s:%zu:%zu: %s %s", loader->name,
                p->problem_mark.line + 1, p->problem_mark.column + 1, problem, p->context);
  else
    g_set_error(error, EMA_CONFIG_ERROR, EMA_CONFIG_ERROR_SYNTAX, "%s:%zu:%zu: %s", loader->name,
                p->problem_mark.line + 1, p->problem_mark.column + 1, problem);
}

static gboolean next_event(Loader *loader, yaml_event_t *event, GError **error) {
  if (!yaml_parser_parse(&loader->parser, event)) {
    set_parser_error(loader, error);
    return FALSE;
  }
  return TRUE;
}

static void location_error(Loader *loader, const yaml_mark_t *mark, GError **error, gint code,
                           const char *message) {
  g_set_error(error, EMA_CONFIG_ERROR, code, "%s:%zu:%zu: %s", loader->name, mark->line + 1,
              mark->column + 1, message);
}

/* Whether TEXT is one of YAML's ways to write a null. */
static gboolean null_text(const char *v) {
  return v[0] == '\0' || strcmp(v, "~") == 0 || strcmp(v, "null") == 0 || strcmp(v, "Null") == 0 ||
         strcmp(v, "NULL") == 0;
}

static gboolean is_null_scalar(const yaml_event_t *event) {
  const char *tag = (const char *) event->data.scalar.tag;
  if (tag && strcmp(tag, YAML_CORE_TAG "null") == 0) /* (its text checked: tag_mismatch()) */
    return TRUE;
  /* `!!str null` is the text "null", as a quoted one is */
  return (tag == NULL || strcmp(tag, YAML_CORE_TAG "str") != 0) &&
         event->data.scalar.style == YAML_PLAIN_SCALAR_STYLE &&
         null_text((const char *) event->data.scalar.value);
}

static EmaNode *include_file(Loader *loader, const yaml_event_t *event, guint depth,
                             GError **error) {
  const char *target = (const char *) event->data.scalar.value;
  g_autofree char *path = NULL;
  GError *inner = NULL;
  EmaNode *node;

  if (target[0] == '\0') {
    location_error(loader, &event->start_mark, error, EMA_CONFIG_ERROR_IO,
                   "!include needs a file name");
    return NULL;
  }
  if (++loader->load->includes > EMA_NODE_MAX_INCLUDES) {
    g_autofree char *message = g_strdup_printf(
        "!include %s: more than %d includes in one load (each counted where it is met: an "
        "included file that includes another several times multiplies them)",
        target, EMA_NODE_MAX_INCLUDES);
    location_error(loader, &event->start_mark, error, EMA_CONFIG_ERROR_SYNTAX, message);
    return NULL;
  }
  path = g_path_is_absolute(target) ? g_strdup(target)
                                    : g_build_filename(loader->base_dir, target, NULL);
  node = load_file_chained(path, loader->load, depth, &inner);
  if (node == NULL) {
    /* An include that cannot be read is reported where the include is;
     * errors inside the included file already carry their location. */
    if (inner->domain == unlocated_quark()) {
      g_autofree char *message = g_strdup_printf("!include %s: %s", target, inner->message);
      location_error(loader, &event->start_mark, error, EMA_CONFIG_ERROR_IO, message);
      g_error_free(inner);
    } else {
      g_propagate_error(error, inner);
    }
  }
  return node;
}

/* Build the node that starts with EVENT (already parsed) at tree depth
 * DEPTH (the root is 0); consumes the events up to and including its end. */

/* The tags of YAML's core schema that say what a plain value already is
 * (!!str, !!int, ...): harmless where the value is one (tag_mismatch()). Any
 * other (!!binary, a %TAG prefix's) would change what the value means, and
 * EMA would ignore it: an error. */
static gboolean is_plain_tag(const char *tag) {
  static const char *const plain[] = {"str", "int", "float", "bool", "null", "map", "seq"};
  const char *prefix = YAML_CORE_TAG;
  if (!g_str_has_prefix(tag, prefix))
    return FALSE;
  for (guint i = 0; i < G_N_ELEMENTS(plain); i++)
    if (strcmp(tag + strlen(prefix), plain[i]) == 0)
      return TRUE;
  return FALSE;
}

/* What is wrong with a node of KIND (a scalar's TEXT) under the core-schema tag TAG (is_plain_tag),
 * NULL when nothing: the tag says what the value is, and EMA would read the text as written
 * whatever the tag (`duration: !!int 5s` ran 5 s). !!int takes a whole number and !!float a
 * number as EMA's readers take them (ema_units_parse_int and _double: decimal, no 0x, .inf or
 * .nan; one past their range is still one, the key that reads it says how large it may be),
 * !!bool true or false (as a flag is read), !!null nothing, ~ or null, !!map a map and !!seq a
 * list; !!str anything. */
static char *tag_mismatch(const char *tag, EmaNodeKind kind, const char *text) {
  const char *type = tag + strlen(YAML_CORE_TAG);
  const char *hint = NULL; /* what the tag takes; a scalar under !!map or !!seq: none */
  g_autoptr(GError) inner = NULL;
  g_autofree char *quoted = NULL;
  gboolean ok = strcmp(type, "str") == 0;
  if (kind != EMA_NODE_SCALAR) {
    ok = strcmp(type, kind == EMA_NODE_MAP ? "map" : "seq") == 0;
  } else if (strcmp(type, "int") == 0) {
    ok = ema_units_parse_int(text, NULL, &inner) || inner->code == EMA_UNITS_ERROR_RANGE;
    hint = " (a whole number)";
  } else if (strcmp(type, "float") == 0) {
    ok = ema_units_parse_double(text, NULL, &inner) || inner->code == EMA_UNITS_ERROR_RANGE;
    hint = " (a number, such as 0.5 or 1e-3: no .inf or .nan)";
  } else if (strcmp(type, "bool") == 0) {
    ok = strcmp(text, "true") == 0 || strcmp(text, "false") == 0;
    hint = " (true or false)";
  } else if (strcmp(type, "null") == 0) {
    ok = null_text(text);
    hint = " (nothing, ~ or null)";
  }
  if (ok)
    return NULL;
  if (kind != EMA_NODE_SCALAR)
    return g_strdup_printf("a %s is not an !!%s", kind == EMA_NODE_MAP ? "map" : "list", type);
  quoted = ema_file_quote_cut(text, -1);
  if (hint == NULL)
    return g_strdup_printf("'%s' is a plain value, not an !!%s", quoted, type);
  return g_strdup_printf("'%s' is not an !!%s%s", quoted, type, hint);
}

static char *unknown_tag(const char *tag) {
  g_autofree char *quoted = ema_file_quote_cut(tag, -1);
  return g_strdup_printf("unknown tag '%s' (the only tag EMA knows is !include)", quoted);
}

/* What is wrong with the scalar of EVENT (a map key when KEY), NULL when
 * nothing: a tag EMA does not take (!include only on values), a core-schema
 * tag its text is not a value of, or a NUL character (the "\0" escape),
 * which would cut the string short. */
static char *scalar_problem(const yaml_event_t *event, gboolean key) {
  const char *tag = (const char *) event->data.scalar.tag;
  char *problem;
  if (tag && key) {
    g_autofree char *quoted = ema_file_quote_cut(tag, -1);
    return g_strdup_printf("a map key takes no tag ('%s')", quoted);
  }
  if (tag && strcmp(tag, "!include") != 0 && !is_plain_tag(tag))
    return unknown_tag(tag);
  if (tag && strcmp(tag, "!include") != 0 &&
      (problem = tag_mismatch(tag, EMA_NODE_SCALAR, (const char *) event->data.scalar.value)))
    return problem;
  if (memchr(event->data.scalar.value, '\0', event->data.scalar.length))
    return g_strdup("a NUL character (\\0) in a string: EMA's strings end at it");
  return NULL;
}

/* Count one more node of the load at MARK; FALSE (an error there) past EMA_NODE_MAX_NODES. */
static gboolean count_node(Loader *loader, const yaml_mark_t *mark, GError **error) {
  if (++loader->load->nodes <= EMA_NODE_MAX_NODES)
    return TRUE;
  g_autofree char *message =
      g_strdup_printf("more than %u keys and values in one load (this file and its includes): "
                      "a configuration is far smaller",
                      EMA_NODE_MAX_NODES);
  location_error(loader, mark, error, EMA_CONFIG_ERROR_SYNTAX, message);
  return FALSE;
}

static EmaNode *build_node(Loader *loader, yaml_event_t *event, guint depth, GError **error) {
  guint line = (guint) event->start_mark.line + 1, col = (guint) event->start_mark.column + 1;

  if (event->type != YAML_ALIAS_EVENT && !count_node(loader, &event->start_mark, error))
    return NULL;
  switch (event->type) {
  case YAML_ALIAS_EVENT:
    location_error(loader, &event->start_mark, error, EMA_CONFIG_ERROR_SYNTAX,
                   "YAML aliases (*name) are not supported; repeat the value or use !include");
    return NULL;
  case YAML_SCALAR_EVENT: {
    const char *tag = (const char *) event->data.scalar.tag;
    g_autofree char *problem = scalar_problem(event, FALSE);
    if (event->data.scalar.anchor) {
      location_error(loader, &event->start_mark, error, EMA_CONFIG_ERROR_SYNTAX,
                     "YAML anchors (&name) are not supported");
      return NULL;
    }
    if (tag && strcmp(tag, "!include") == 0)
      return include_file(loader, event, depth, error);
    if (problem) {
      location_error(loader, &event->start_mark, error, EMA_CONFIG_ERROR_SYNTAX, problem);
      return NULL;
    }
    return ema_node_new_scalar(is_null_scalar(event) ? NULL
                                                     : (const char *) event->data.scalar.value,
                               loader->name, line, col);
  }
  case YAML_SEQUENCE_START_EVENT:
  case YAML_MAPPING_START_EVENT: {
    gboolean is_map = event->type == YAML_MAPPING_START_EVENT;
    yaml_event_type_t end = is_map ? YAML_MAPPING_END_EVENT : YAML_SEQUENCE_END_EVENT;
    const yaml_char_t *anchor =
        is_map ? event->data.mapping_start.anchor : event->data.sequence_start.anchor;
    const char *tag =
        (const char *) (is_map ? event->data.mapping_start.tag : event->data.sequence_start.tag);
    g_autofree char *tag_problem =
        tag == NULL                    ? NULL
        : strcmp(tag, "!include") == 0 ? g_strdup("!include takes a file name, not a map or list")
        : !is_plain_tag(tag)           ? unknown_tag(tag)
                             : tag_mismatch(tag, is_map ? EMA_NODE_MAP : EMA_NODE_SEQ, NULL);
    if (tag_problem) {
      location_error(loader, &event->start_mark, error, EMA_CONFIG_ERROR_SYNTAX, tag_problem);
      return NULL;
    }
    g_autoptr(EmaNode) node = NULL;
    g_autoptr(GHashTable) seen = NULL; /* MAP: key text -> present */
    if (anchor) {
      location_error(loader, &event->start_mark, error, EMA_CONFIG_ERROR_SYNTAX,
                     "YAML anchors (&name) are not supported");
      return NULL;
    }
    if (depth >= EMA_NODE_MAX_DEPTH) {
      g_autofree char *message =
          g_strdup_printf("maps and lists nested deeper than %d levels", EMA_NODE_MAX_DEPTH);
      location_error(loader, &event->start_mark, error, EMA_CONFIG_ERROR_SYNTAX, message);
      return NULL;
    }
    node = new_container(is_map ? EMA_NODE_MAP : EMA_NODE_SEQ, loader->name, line, col);
    if (is_map)
      seen = g_hash_table_new(g_str_hash, g_str_equal);
    for (;;) {
      yaml_event_t child_event;
      EmaNode *key = NULL, *value;
      if (!next_event(loader, &child_event, error))
        return NULL;
      if (child_event.type == end) {
        yaml_event_delete(&child_event);
        break;
      }
      if (is_map) {
        g_autofree char *key_problem =
            child_event.type == YAML_SCALAR_EVENT ? scalar_problem(&child_event, TRUE) : NULL;
        if (child_event.type == YAML_SCALAR_EVENT &&
            (child_event.data.scalar.anchor || key_problem)) {
          g_autofree char *message = child_event.data.scalar.anchor
                                         ? g_strdup("YAML anchors (&name) are not supported")
                                         : g_steal_pointer(&key_problem);
          location_error(loader, &child_event.start_mark, error, EMA_CONFIG_ERROR_SYNTAX, message);
          yaml_event_delete(&child_event);
          return NULL;
        }
        if (child_event.type != YAML_SCALAR_EVENT) {
          location_error(loader, &child_event.start_mark, error, EMA_CONFIG_ERROR_SYNTAX,
                         "map keys must be plain names");
          yaml_event_delete(&child_event);
          return NULL;
        }
        if (!count_node(loader, &child_event.start_mark, error)) {
          yaml_event_delete(&child_event);
          return NULL;
        }
        key = ema_node_new_scalar((const char *) child_event.data.scalar.value, loader->name,
                                  (guint) child_event.start_mark.line + 1,
                                  (guint) child_event.start_mark.column + 1);
        if (!g_hash_table_add(seen, key->value)) {
          g_autofree char *quoted = ema_file_quote_cut(key->value, -1);
          g_autofree char *message = g_strdup_printf("duplicate key '%s'", quoted);
          location_error(loader, &child_event.start_mark, error, EMA_CONFIG_ERROR_KEY, message);
          yaml_event_delete(&child_event);
          ema_node_free(key);
          return NULL;
        }
        yaml_event_delete(&child_event);
        if (!next_event(loader, &child_event, error)) {
          ema_node_free(key);
          return NULL;
        }
      }
      value = build_node(loader, &child_event, depth + 1, error);
      yaml_event_delete(&child_event);
      if (value == NULL) {
        ema_node_free(key);
        return NULL;
      }
      if (is_map)
        g_ptr_array_add(node->keys, key);
      g_ptr_array_add(node->items, value);
    }
    return g_steal_pointer(&node);
  }
  default:
    location_error(loader, &event->start_mark, error, EMA_CONFIG_ERROR_SYNTAX,
                   "unexpected YAML structure");
    return NULL;
  }
}

/* Parse one document from the loader's input. An empty document is an empty
 * map. */
static EmaNode *parse_document(Loader *loader, GError **error) {
  yaml_event_t event;
  EmaNode *root = NULL;

  /* STREAM-START, then DOCUMENT-START or STREAM-END */
  if (!next_event(loader, &event, error))
    return NULL;
  yaml_event_delete(&event);
  if (!next_event(loader, &event, error))
    return NULL;
  if (event.type == YAML_STREAM_END_EVENT) {
    yaml_event_delete(&event);
    return ema_node_new_map(loader->name, 1, 1);
  }
  yaml_event_delete(&event);
  if (!next_event(loader, &event, error))
    return NULL;
  root = build_node(loader, &event, loader->depth, error);
  yaml_event_delete(&event);
  if (root == NULL)
    return NULL;
  /* DOCUMENT-END, then STREAM-END (a second document is an error) */
  if (!next_event(loader, &event, error))
    goto fail;
  yaml_event_delete(&event);
  if (!next_event(loader, &event, error))
    goto fail;
  if (event.type != YAML_STREAM_END_EVENT) {
    location_error(loader, &event.start_mark, error, EMA_CONFIG_ERROR_SYNTAX,
                   "only one YAML document per file is allowed");
    yaml_event_delete(&event);
    goto fail;
  }
  yaml_event_delete(&event);
  return root;
fail:
  ema_node_free(root);
  return NULL;
}

static EmaNode *load_text(const char *text, gsize length, const char *name, const char *base_dir,
                          Load *load, guint depth, GError **error) {
  Loader loader = {0};
  EmaNode *root;
  const char *bad = NULL;
  if (!g_utf8_validate(text, (gssize) length, &bad)) {
    /* where: the line and column (in characters) of the first byte that is not text */
    guint line = 1, col = 1;
    for (const char *p = text; p < bad; p = g_utf8_next_char(p)) {
      line += *p == '\n';
      col = *p == '\n' ? 1 : col + 1;
    }
    g_set_error(error, EMA_CONFIG_ERROR, EMA_CONFIG_ERROR_SYNTAX, "%s:%u:%u: not a text file (%s)",
                name, line, col, *bad == '\0' ? "a NUL byte" : "invalid UTF-8");
    return NULL;
  }
  loader.name = name;
  loader.base_dir = g_strdup(base_dir ? base_dir : ".");
  loader.load = load;
  loader.depth = depth;
  if (!yaml_parser_initialize(&loader.parser)) { /* its buffers could not be allocated */
    g_set_error(error, EMA_CONFIG_ERROR, EMA_CONFIG_ERROR_SYNTAX,
                "%s:1:1: out of memory while parsing", name);
    g_free(loader.base_dir);
    return NULL;
  }
  yaml_parser_set_input_string(&loader.parser, (const unsigned char *) text, length);
  root = parse_document(&loader, error);
  yaml_parser_delete(&loader.parser);
  g_free(loader.base_dir);
  return root;
}

static EmaNode *load_file_chained(const char *path, Load *load, guint depth, GError **error) {
  GPtrArray *chain = load->chain;
  g_autofree char *text = NULL;
  g_autofree char *canonical = g_canonicalize_filename(path, NULL);
  g_autofree char *dir = g_path_get_dirname(path);
  gsize length;
  GError *io_error = NULL;
  EmaNode *root;

  for (guint i = 0; i < chain->len; i++) {
    if (strcmp(chain->pdata[i], canonical) == 0) {
      g_set_error(error, unlocated_quark(), 0, "include cycle through %s", path);
      return NULL;
    }
  }
  if (chain->len >= MAX_INCLUDE_DEPTH) {
    g_set_error(error, unlocated_quark(), 0, "includes nested deeper than %d files",
                MAX_INCLUDE_DEPTH);
    return NULL;
  }
  if (!ema_file_read_regular(path, EMA_FILE_MAX_TEXT, &text, &length, &io_error)) {
    g_set_error(error, unlocated_quark(), 0, "%s", io_error->message);
    g_error_free(io_error);
    return NULL;
  }
  g_ptr_array_add(chain, g_steal_pointer(&canonical));
  root = load_text(text, length, path, dir, load, depth, error);
  g_ptr_array_remove_index(chain, chain->len - 1);
  return root;
}

EmaNode *ema_node_load_file(const char *path, GError **error) {
  g_autoptr(GPtrArray) chain = g_ptr_array_new_with_free_func(g_free);
  Load load = {chain, 0, 0};
  GError *inner = NULL;
  EmaNode *root = load_file_chained(path, &load, 0, &inner);
  if (root == NULL) {
    if (inner->domain == unlocated_quark()) {
      inner->domain = EMA_CONFIG_ERROR;
      inner->code = EMA_CONFIG_ERROR_IO;
    }
    g_propagate_error(error, inner);
  }
  return root;
}

EmaNode *ema_node_load_string(const char *text, const char *name, const char *base_dir,
                              GError **error) {
  g_autoptr(GPtrArray) chain = g_ptr_array_new_with_free_func(g_free);
  Load load = {chain, 0, 0};
  return load_text(text, strlen(text), name, base_dir, &load, 0, error);
}

/* ---- overrides -------------------------------------------------------- */

/* Give every node of TREE parsed from the --set value's text (named FILE) the location
 * FILE:ORDINAL:(COL + its column - 1). The nodes of a file the value includes (`--set
 * key=!include PATH`) keep their own: their errors point into that file, and the paths they hold
 * are relative to it, as where a file includes it. */
static void relocate(EmaNode *tree, const char *file, guint ordinal, guint col) {
  if (strcmp(tree->file, file) == 0) {
    tree->col = col + tree->col - 1;
    tree->line = ordinal;
  }
  if (tree->kind == EMA_NODE_SCALAR)
    return;
  for (guint i = 0; i < tree->items->len; i++) {
    if (tree->keys)
      relocate(tree->keys->pdata[i], file, ordinal, col);
    relocate(tree->items->pdata[i], file, ordinal, col);
  }
}

static gboolean parse_index(const char *text, guint *index) {
  guint64 value;
  if (!g_ascii_string_to_unsigned(text, 10, 0, G_MAXUINT, &value, NULL))
    return FALSE;
  *index = (guint) value;
  return TRUE;
}

/* OVERRIDE's key path (up to its '='), split at its dots. */
static GStrv override_path(const char *override) {
  const char *eq = strchr(override, '=');
  g_autofree char *path = g_strndup(override, eq ? (gsize) (eq - override) : strlen(override));
  return g_strsplit(path, ".", -1);
}

/* How many leading parts the key paths of overrides A and B share (list indices compared as
 * numbers), into *SHARED; their lengths into *LENGTH_A and *LENGTH_B. */
static void override_paths_common(const char *a, const char *b, guint *shared, guint *length_a,
                                  guint *length_b) {
  g_auto(GStrv) x = override_path(a);
  g_auto(GStrv) y = override_path(b);
  guint i = 0, m, n;
  for (; x[i] != NULL && y[i] != NULL; i++)
    if (parse_index(x[i], &m) && parse_index(y[i], &n) ? m != n : strcmp(x[i], y[i]) != 0)
      break;
  *shared = i;
  *length_a = g_strv_length(x);
  *length_b = g_strv_length(y);
}

gboolean ema_node_override_within(const char *inner, const char *outer) {
  guint shared, n_inner, n_outer;
  override_paths_common(inner, outer, &shared, &n_inner, &n_outer);
  return shared == n_outer && n_inner > n_outer;
}

gboolean ema_node_override_same(const char *a, const char *b) {
  guint shared, n_a, n_b;
  override_paths_common(a, b, &shared, &n_a, &n_b);
  return n_a > 0 && shared == n_a && n_a == n_b;
}

gboolean ema_node_override_repeated(const char *const *overrides, guint i, GError **error) {
  for (guint j = 0; j < i; j++) {
    if (!ema_node_override_same(overrides[j], overrides[i]))
      continue;
    g_autoptr(EmaNode) at = ema_node_new_scalar(NULL, "--set", i + 1, 1);
    g_autofree char *path = g_strndup(overrides[i], strcspn(overrides[i], "="));
    g_autofree char *earlier = g_strndup(overrides[j], strcspn(overrides[j], "="));
    g_autofree char *as =
        strcmp(path, earlier) != 0 ? g_strdup_printf(" (as %s)", earlier) : g_strdup("");
    ema_node_error(error, EMA_CONFIG_ERROR_KEY, at, path,
                   "--set %u sets it already%s: give each key once", j + 1, as);
    return TRUE;
  }
  return FALSE;
}

gboolean ema_node_apply_override(EmaNode *root, const char *assignment, guint ordinal,
                                 GError **error) {
  const char *eq = strchr(assignment, '=');
  g_autoptr(EmaNode) where = ema_node_new_scalar(NULL, "--set", ordinal, 1);
  g_autoptr(EmaNode) value = NULL;
  g_autofree char *path = NULL;
  g_auto(GStrv) parts = NULL;
  EmaNode *node = root;
  GError *inner = NULL;
  guint value_col;

  if (eq == NULL || eq == assignment) {
    ema_node_error(error, EMA_CONFIG_ERROR_SYNTAX, where, NULL, "'%s': expected key.path=value",
                   assignment);
    return FALSE;
  }
  path = g_strndup(assignment, (gsize) (eq - assignment));
  value_col = (guint) (eq - assignment) + 2;
  value = ema_node_load_string(eq + 1, "--set", NULL, &inner);
  if (value == NULL && !g_str_has_prefix(inner->message, "--set:")) {
    /* in a file the value includes: at its own place there, as from a file's include */
    g_propagate_error(error, inner);
    return FALSE;
  }
  if (value == NULL) {
    /* the parser's location is relative to the value text */
    where->col = value_col;
    ema_node_error(error, EMA_CONFIG_ERROR_SYNTAX, where, path, "bad value: %s",
                   strchr(inner->message, ' ') ? strchr(inner->message, ' ') + 1 : inner->message);
    g_error_free(inner);
    return FALSE;
  }
  /* an empty value text (or blanks only) is an empty document (a map): make it a null */
  if (eq[1 + strspn(eq + 1, " \t")] == '\0') {
    ema_node_free(value);
    value = ema_node_new_scalar(NULL, "--set", 1, 1);
  }
  relocate(value, "--set", ordinal, value_col);

  parts = g_strsplit(path, ".", -1);
  if (g_strv_length(parts) >= EMA_NODE_MAX_DEPTH) {
    ema_node_error(error, EMA_CONFIG_ERROR_SYNTAX, where, NULL,
                   "key path nested deeper than %d levels", EMA_NODE_MAX_DEPTH);
    return FALSE;
  }
  for (guint i = 0, part_col = 1; parts[i] != NULL; part_col += (guint) strlen(parts[i]) + 1, i++) {
    const char *part = parts[i];
    gboolean last = parts[i + 1] == NULL;
    if (part[0] == '\0') {
      ema_node_error(error, EMA_CONFIG_ERROR_SYNTAX, where, path, "empty key in path");
      return FALSE;
    }
    if (node->kind == EMA_NODE_MAP) {
      EmaNode *child = ema_node_get(node, part);
      guint index;
      if (child == NULL && !last && parse_index(parts[i + 1], &index)) {
        /* a new key makes a map, which no index can name an item of */
        ema_node_error(error, EMA_CONFIG_ERROR_KEY, where, path,
                       "'%s' is not in the file: there is no list to take item %s of", part,
                       parts[i + 1]);
        return FALSE;
      }
      if (child == NULL) /* a new key: errors about it point at it */
        g_ptr_array_add(node->keys, ema_node_new_scalar(part, "--set", ordinal, part_col));
      if (child == NULL && !last) {
        child = ema_node_new_map("--set", ordinal, part_col);
        g_ptr_array_add(node->items, child);
      } else if (child == NULL) {
        g_ptr_array_add(node->items, g_steal_pointer(&value));
        return TRUE;
      }
      if (last) {
        ema_node_set(node, part, g_steal_pointer(&value));
        return TRUE;
      }
      if (child != NULL && child->kind == EMA_NODE_SCALAR && child->value != NULL) {
        g_autofree char *quoted = ema_file_quote_cut(child->value, -1);
        ema_node_error(error, EMA_CONFIG_ERROR_TYPE, where, path,
                       "'%s' holds the plain value '%s', not a map or list", part, quoted);
        return FALSE;
      }
      if (child->kind == EMA_NODE_SCALAR) { /* a null value: make it a map */
        EmaNode *map = ema_node_new_map("--set", ordinal, part_col);
        ema_node_set(node, part, map);
        child = map;
      }
      node = child;
    } else if (node->kind == EMA_NODE_SEQ) {
      guint index;
      if (!parse_index(part, &index) || index >= node->items->len) {
        ema_node_error(error, EMA_CONFIG_ERROR_KEY, where, path,
                       "'%s' is not an index of this list (it has %u items)", part,
                       node->items->len);
        return FALSE;
      }
      if (last) {
        ema_node_free(node->items->pdata[index]);
        node->items->pdata[index] = g_steal_pointer(&value);
        return TRUE;
      }
      node = node->items->pdata[index];
    } else {
      ema_node_error(error, EMA_CONFIG_ERROR_TYPE, where, path,
                     "'%s' is inside a plain value, not a map or list", part);
      return FALSE;
    }
  }
  return TRUE;
}
