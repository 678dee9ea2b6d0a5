/* params.c: binds YAML node trees to C structs through parameter tables,
 * writes structs back as YAML, and describes tables for the CLI.
 *
 * Invariants: a bound struct has every field either from the file, from its
 * table default, or zero for OPTIONAL fields that were absent; every error
 * names file:line:col and the dotted key path; unknown keys are always
 * errors and list the valid keys; numbers outside [min, max] are errors. */
#include "ema/core/params.h"

#include <math.h>
#include <string.h>

#include "ema/core/file.h"
#include "ema/core/units.h"

static gpointer field_ptr(gpointer object, const EmaParam *param) {
  return (char *) object + param->offset;
}

static gconstpointer field_cptr(gconstpointer object, const EmaParam *param) {
  return (const char *) object + param->offset;
}

static const char *type_name(EmaParamType type) {
  switch (type) {
  case EMA_PARAM_BOOL:
    return "true or false";
  case EMA_PARAM_INT:
    return "an integer";
  case EMA_PARAM_DOUBLE:
    return "a number";
  case EMA_PARAM_SIZE:
    return "a size (e.g. 2MiB)";
  case EMA_PARAM_BANDWIDTH:
    return "a bandwidth (e.g. 397GB/s)";
  case EMA_PARAM_DURATION:
    return "a duration (e.g. 6.5us)";
  case EMA_PARAM_FLOPS:
    return "a FLOP rate (e.g. 989TFLOP/s)";
  case EMA_PARAM_FRACTION:
    return "a fraction (e.g. 5% or 0.05)";
  case EMA_PARAM_STRING:
    return "a string";
  case EMA_PARAM_ENUM:
    return "one of a list of names";
  case EMA_PARAM_STRUCT:
    return "a map";
  case EMA_PARAM_LIST:
    return "a list";
  case EMA_PARAM_OBJECT:
    return "a map";
  }
  return "?";
}

static const char *short_type_name(EmaParamType type) {
  static const char *const names[] = {"bool",     "int",   "number",   "size",   "bandwidth",
                                      "duration", "flops", "fraction", "string", "enum",
                                      "map",      "list",  "map"};
  return names[type];
}

static char *join_choices(const char *const *choices) {
  return g_strjoinv(", ", (char **) choices);
}

static char *valid_keys(const EmaParamTable *table) {
  GString *keys = g_string_new(NULL);
  for (guint i = 0; i < table->n_params; i++)
    g_string_append_printf(keys, "%s%s", i ? ", " : "", table->params[i].key);
  return g_string_free(keys, FALSE);
}

static char *child_path(const char *path, const char *key) {
  return path && *path ? g_strconcat(path, ".", key, NULL) : g_strdup(key);
}

/* Numeric value of a scalar field, for range checks. */
static double numeric_value(const EmaParam *param, gconstpointer field) {
  switch (param->type) {
  case EMA_PARAM_BOOL:
    return *(const gboolean *) field ? 1 : 0;
  case EMA_PARAM_ENUM:
    return *(const int *) field;
  case EMA_PARAM_INT:
  case EMA_PARAM_DURATION:
    return (double) *(const gint64 *) field;
  case EMA_PARAM_SIZE:
    return (double) *(const guint64 *) field;
  case EMA_PARAM_DOUBLE:
  case EMA_PARAM_BANDWIDTH:
  case EMA_PARAM_FLOPS:
  case EMA_PARAM_FRACTION:
    return *(const double *) field;
  default:
    return 0;
  }
}

static gboolean has_range(const EmaParam *param) {
  return param->min < param->max;
}

/* VALUE as an integer of [LO, HI], saturating (a cast of a double outside
 * the target's range is undefined behaviour). */
static gint64 saturate_i64(double value) {
  if (!(value > -9223372036854775808.0))
    return G_MININT64;
  return value >= 9223372036854775808.0 ? G_MAXINT64 : (gint64) value;
}

static guint64 saturate_u64(double value) {
  if (!(value > 0))
    return 0;
  return value >= 18446744073709551616.0 ? G_MAXUINT64 : (guint64) value;
}

/* A table bound (a double) in the parameter's units. */
static char *format_number(EmaParamType type, double value) {
  switch (type) {
  case EMA_PARAM_SIZE:
    return ema_units_format_size(saturate_u64(value));
  case EMA_PARAM_DURATION:
    return ema_units_format_duration(saturate_i64(value));
  case EMA_PARAM_BANDWIDTH:
    return ema_units_format_bandwidth(value);
  case EMA_PARAM_FLOPS:
    return ema_units_format_flops(value);
  case EMA_PARAM_FRACTION:
    return ema_units_format_fraction(value);
  case EMA_PARAM_INT:
    return g_strdup_printf("%" G_GINT64_FORMAT, saturate_i64(value));
  default:
    return ema_units_format_double(value);
  }
}

/* FIELD as YAML, exactly as bound (integers not through a double). */
static char *format_value(const EmaParam *param, gconstpointer field);

/* FIELD within PARAM's range, else an error naming TEXT, the value as written (the bound value
 * is rounded: 1.5B is 2 bytes, which the message would have said). */
static gboolean check_range(const EmaParam *param, gconstpointer field, const char *text,
                            GError **error) {
  double value;
  if (!has_range(param))
    return TRUE;
  value = numeric_value(param, field);
  if (value < param->min || value > param->max) {
    g_autofree char *lo = format_number(param->type, param->min);
    g_autofree char *hi = format_number(param->type, param->max);
    g_autofree char *quoted = ema_file_quote_cut(text, -1);
    g_set_error(error, EMA_CONFIG_ERROR, EMA_CONFIG_ERROR_RANGE, "%s is out of range [%s, %s]",
                quoted, lo, hi);
    return FALSE;
  }
  return TRUE;
}

gboolean ema_params_parse_value(const EmaParam *param, const char *text, gpointer field,
                                GError **error) {
  GError *inner = NULL;
  gboolean ok = TRUE;

  switch (param->type) {
  case EMA_PARAM_BOOL:
    if (strcmp(text, "true") == 0)
      *(gboolean *) field = TRUE;
    else if (strcmp(text, "false") == 0)
      *(gboolean *) field = FALSE;
    else {
      g_autofree char *quoted = ema_file_quote_cut(text, -1);
      g_set_error(error, EMA_CONFIG_ERROR, EMA_CONFIG_ERROR_TYPE, "'%s' is not true or false",
                  quoted);
      return FALSE;
    }
    return TRUE;
  case EMA_PARAM_INT:
    ok = ema_units_parse_int(text, field, &inner);
    break;
  case EMA_PARAM_DOUBLE:
    ok = ema_units_parse_double(text, field, &inner);
    break;
  case EMA_PARAM_SIZE:
    ok = ema_units_parse_size(text, field, &inner);
    break;
  case EMA_PARAM_BANDWIDTH:
    ok = ema_units_parse_bandwidth(text, field, &inner);
    break;
  case EMA_PARAM_DURATION:
    ok = ema_units_parse_duration(text, field, &inner);
    break;
  case EMA_PARAM_FLOPS:
    ok = ema_units_parse_flops(text, field, &inner);
    break;
  case EMA_PARAM_FRACTION:
    ok = ema_units_parse_fraction(text, field, &inner);
    break;
  case EMA_PARAM_STRING:
    g_free(*(char **) field);
    *(char **) field = g_strdup(text);
    return TRUE;
  case EMA_PARAM_ENUM:
    for (guint i = 0; param->choices[i] != NULL; i++) {
      if (strcmp(param->choices[i], text) == 0) {
        *(int *) field = (int) i;
        return TRUE;
      }
    }
    {
      g_autofree char *list = join_choices(param->choices);
      g_autofree char *quoted = ema_file_quote_cut(text, -1);
      g_set_error(error, EMA_CONFIG_ERROR, EMA_CONFIG_ERROR_TYPE,
                  "unknown value '%s' (choose from: %s)", quoted, list);
    }
    return FALSE;
  case EMA_PARAM_STRUCT:
  case EMA_PARAM_LIST:
  case EMA_PARAM_OBJECT: {
    g_autofree char *quoted = ema_file_quote_cut(text, -1);
    g_set_error(error, EMA_CONFIG_ERROR, EMA_CONFIG_ERROR_TYPE, "expected %s, got '%s'",
                type_name(param->type), quoted);
    return FALSE;
  }
  }
  if (!ok) {
    g_set_error(error, EMA_CONFIG_ERROR,
                g_error_matches(inner, EMA_UNITS_ERROR, EMA_UNITS_ERROR_RANGE)
                    ? EMA_CONFIG_ERROR_RANGE
                    : EMA_CONFIG_ERROR_TYPE,
                "%s", inner->message);
    g_error_free(inner);
    return FALSE;
  }
  return check_range(param, field, text, error);
}

/* Rewrap a location-free ERROR from parse_value with NODE's location. */
static gboolean fail_at(GError **error, GError *inner, const EmaNode *node, const char *path) {
  ema_node_error(error, inner->code, node, path, "%s", inner->message);
  g_error_free(inner);
  return FALSE;
}

static const char *node_kind_name(const EmaNode *node) {
  if (node->kind == EMA_NODE_MAP)
    return "a map";
  if (node->kind == EMA_NODE_SEQ)
    return "a list";
  return node->value ? "a plain value" : "nothing";
}

static gboolean bind_object(const EmaParam *param, gpointer object, const EmaNode *value,
                            const EmaNode *map, const char *path, GError **error) {
  const EmaParamTable *table = param->table_for(object);
  gpointer *field = field_ptr(object, param);
  if (value && value->kind == EMA_NODE_SCALAR && value->value == NULL)
    value = NULL;
  if (table == NULL) {
    if (value && !(value->kind == EMA_NODE_MAP && value->keys->len == 0)) {
      ema_node_error(error, EMA_CONFIG_ERROR_KEY, value, path, "takes no parameters here");
      return FALSE;
    }
    return TRUE;
  }
  *field = g_malloc0(table->size);
  return ema_params_bind(table, *field, value, path, error);
}

static gboolean bind_param(const EmaParam *param, gpointer object, const EmaNode *value,
                           const EmaNode *map, const char *path, GError **error);

static GArray *new_list(const EmaParamTable *table) {
  return g_array_new(FALSE, TRUE, (guint) table->size);
}

static gboolean bind_list(const EmaParam *param, gpointer object, const EmaNode *value,
                          const char *path, GError **error) {
  GArray **list = field_ptr(object, param);
  *list = new_list(param->table);
  if (value == NULL)
    return TRUE;
  if (value->kind != EMA_NODE_SEQ) {
    ema_node_error(error, EMA_CONFIG_ERROR_TYPE, value, path, "expected a list, got %s",
                   node_kind_name(value));
    return FALSE;
  }
  /* a list's .max (0: none) caps its items, told before any is bound */
  if (param->max > 0 && value->items->len > param->max) {
    ema_node_error(error, EMA_CONFIG_ERROR_RANGE, value, path, "%u items: at most %.0f",
                   value->items->len, param->max);
    return FALSE;
  }
  g_array_set_size(*list, value->items->len);
  for (guint i = 0; i < value->items->len; i++) {
    g_autofree char *index = g_strdup_printf("%u", i);
    g_autofree char *item_path = child_path(path, index);
    gpointer item = (*list)->data + (gsize) i * param->table->size;
    if (!ema_params_bind(param->table, item, value->items->pdata[i], item_path, error))
      return FALSE;
  }
  return TRUE;
}

static gboolean bind_param(const EmaParam *param, gpointer object, const EmaNode *value,
                           const EmaNode *map, const char *path, GError **error) {
  gpointer field = field_ptr(object, param);
  GError *inner = NULL;

  if (param->type == EMA_PARAM_LIST)
    return bind_list(param, object, value, path, error);
  if (param->type == EMA_PARAM_OBJECT)
    return bind_object(param, object, value, map, path, error);
  if (param->type == EMA_PARAM_STRUCT) {
    g_autoptr(EmaNode) resolved = NULL;
    if (value && value->kind == EMA_NODE_SCALAR && value->value && param->resolve) {
      resolved = param->resolve(value, path, error);
      if (resolved == NULL)
        return FALSE;
      value = resolved;
    }
    if (value && value->kind == EMA_NODE_SCALAR && value->value == NULL) {
      /* `key:` or `key: ~` (`--set key=`) is no way to ask for every default either: over a
       * map given before it (a --set over the file's), it would put back the defaults with no
       * word; leaving the key out, or `{}`, gives them */
      ema_node_error(error, EMA_CONFIG_ERROR_KEY, value, path, "needs a value (%s)%s",
                     param->resolve ? "a name or a map" : "a map",
                     param->flags & EMA_PARAM_REQUIRED
                         ? ""
                         : "; leave the key out, or give {}, for its defaults");
      return FALSE;
    }
    if (value && value->kind != EMA_NODE_MAP) {
      ema_node_error(error, EMA_CONFIG_ERROR_TYPE, value, path, "expected %s, got %s",
                     param->resolve ? "a name or a map" : "a map", node_kind_name(value));
      return FALSE;
    }
    if (value == NULL && (param->flags & EMA_PARAM_REQUIRED)) {
      ema_node_error(error, EMA_CONFIG_ERROR_KEY, map, path, "missing required key");
      return FALSE;
    }
    if (value == NULL && (param->flags & EMA_PARAM_OPTIONAL))
      return TRUE; /* an optional map that is absent stays all zero */
    return ema_params_bind(param->table, field, value, path, error);
  }

  /* A null (`key: ~`, `key:`) is not a way to ask for the default: it would
   * bind as "absent" here yet be written back as a value (resolved.yaml),
   * so it is an error; leaving the key out gives the default. */
  if (value && value->kind == EMA_NODE_SCALAR && value->value == NULL) {
    gboolean may_omit = param->default_value || (param->flags & EMA_PARAM_OPTIONAL);
    ema_node_error(error, EMA_CONFIG_ERROR_KEY, value, path, "needs a value (%s)%s",
                   type_name(param->type), may_omit ? "; leave the key out for its default" : "");
    return FALSE;
  }
  if (value == NULL) {
    if (param->flags & EMA_PARAM_OPTIONAL)
      return TRUE;
    if (param->default_value == NULL) {
      ema_node_error(error, EMA_CONFIG_ERROR_KEY, map, path, "missing required key (%s)",
                     type_name(param->type));
      return FALSE;
    }
    if (!ema_params_parse_value(param, param->default_value, field, &inner))
      g_error("parameter %s: bad default '%s': %s", param->key, param->default_value,
              inner->message);
    return TRUE;
  }
  if (value->kind != EMA_NODE_SCALAR) {
    ema_node_error(error, EMA_CONFIG_ERROR_TYPE, value, path, "expected %s, got %s",
                   type_name(param->type), node_kind_name(value));
    return FALSE;
  }
  if (!ema_params_parse_value(param, value->value, field, &inner))
    return fail_at(error, inner, value, path);
  return TRUE;
}

gboolean ema_params_bind(const EmaParamTable *table, gpointer object, const EmaNode *node,
                         const char *path, GError **error) {
  if (node && node->kind != EMA_NODE_MAP) {
    ema_node_error(error, EMA_CONFIG_ERROR_TYPE, node, path,
                   "expected a map of %s settings, got %s", table->name, node_kind_name(node));
    return FALSE;
  }
  if (node) {
    for (guint k = 0; k < node->keys->len; k++) {
      const EmaNode *key = node->keys->pdata[k];
      gboolean known = FALSE;
      for (guint i = 0; i < table->n_params && !known; i++)
        known = strcmp(table->params[i].key, key->value) == 0;
      if (!known) {
        g_autofree char *keys = valid_keys(table);
        g_autofree char *quoted = ema_file_quote_cut(key->value, -1);
        g_autofree char *key_path = child_path(path, quoted);
        ema_node_error(error, EMA_CONFIG_ERROR_KEY, key, key_path,
                       "unknown key in %s (valid keys: %s)", table->name, keys);
        return FALSE;
      }
    }
  }
  /* the OBJECT parameters last, after the table's check: their tables follow the values bound
   * before them (a policy's parameters its name, which the check says is unknown first) */
  for (guint pass = 0; pass < 2; pass++) {
    for (guint i = 0; i < table->n_params; i++) {
      const EmaParam *param = &table->params[i];
      g_autofree char *key_path = child_path(path, param->key);
      const EmaNode *value = node ? ema_node_get(node, param->key) : NULL;
      const EmaNode *where = node;
      g_autoptr(EmaNode) nowhere = NULL;
      if ((param->type == EMA_PARAM_OBJECT) != (pass == 1))
        continue;
      if (where == NULL)
        where = nowhere = ema_node_new_scalar(NULL, "<defaults>", 0, 0);
      if (!bind_param(param, object, value, where, key_path, error))
        return FALSE;
    }
    if (pass == 0 && table->check && node && !table->check(object, node, path, error))
      return FALSE;
  }
  return TRUE;
}

gpointer ema_params_load_file(const EmaParamTable *table, const char *path, GError **error) {
  return ema_params_load_tree(table, ema_node_load_file(path, error), error);
}

gpointer ema_params_load_tree(const EmaParamTable *table, EmaNode *root_taken, GError **error) {
  g_autoptr(EmaNode) root = root_taken;
  gpointer object;
  if (root == NULL)
    return NULL;
  object = g_malloc0(table->size);
  if (!ema_params_bind(table, object, root, NULL, error)) {
    ema_params_free(table, object);
    return NULL;
  }
  return object;
}

void ema_params_free(const EmaParamTable *table, gpointer object) {
  if (object == NULL)
    return;
  ema_params_clear(table, object);
  g_free(object);
}

/* ema_params_expand at NODE, whose dotted key path is PATH (NULL: the root). */
/* How many of TABLE's required keys MAP gives. */
static guint required_keys_given(const EmaParamTable *table, const EmaNode *map) {
  guint given = 0;
  for (guint i = 0; i < table->n_params; i++)
    if ((table->params[i].flags & EMA_PARAM_REQUIRED) && ema_node_get(map, table->params[i].key))
      given++;
  return given;
}

/* How many keys of TABLE are required. */
static guint required_keys(const EmaParamTable *table) {
  guint required = 0;
  for (guint i = 0; i < table->n_params; i++)
    required += (table->params[i].flags & EMA_PARAM_REQUIRED) != 0;
  return required;
}

/* Whether MAP holds every required key of TABLE. */
static gboolean has_required_keys(const EmaParamTable *table, const EmaNode *map) {
  return required_keys_given(table, map) == required_keys(table);
}

/* MAP's `name` where it came from elsewhere than MAP itself (an override or a sweep's value
 * renaming a map a name had expanded, or one written inline), else NULL. */
static const EmaNode *renamed(const EmaNode *map) {
  const EmaNode *name = ema_node_get(map, "name");
  if (!name || name->kind != EMA_NODE_SCALAR || !name->value || !name->file || !map->file)
    return NULL;
  return strcmp(name->file, map->file) != 0 ? name : NULL;
}

/* The map NAME resolves to, with the keys of OLD that came from where NAME did (overrides given
 * before it, such as `weights`) over it; NULL where NAME resolves to nothing: with ERROR set
 * where OLD came from another file than its parent PARENT_FILE (a name or an include expanded
 * it: a new name must be one), else not (a map written inline, relabelled). */
static EmaNode *resolve_renamed(const EmaParam *param, const EmaNode *old, const EmaNode *name,
                                const char *parent_file, const char *key_path, GError **error) {
  GError *unknown = NULL;
  EmaNode *resolved = param->resolve(name, key_path, &unknown);
  if (!resolved) {
    if (parent_file && strcmp(old->file, parent_file) != 0)
      g_propagate_error(error, unknown);
    else
      g_clear_error(&unknown);
    return NULL;
  }
  for (guint k = 0; k < old->keys->len; k++) {
    const char *key = ((EmaNode *) old->keys->pdata[k])->value;
    const EmaNode *value = old->items->pdata[k];
    if (strcmp(key, "name") != 0 && value->file && strcmp(value->file, name->file) == 0)
      ema_node_set(resolved, key, ema_node_copy(value));
  }
  return resolved;
}

static gboolean expand_at(const EmaParamTable *table, EmaNode *node, const char *path,
                          GError **error) {
  if (node == NULL || node->kind != EMA_NODE_MAP)
    return TRUE;
  for (guint i = 0; i < table->n_params; i++) {
    const EmaParam *param = &table->params[i];
    gint index = -1;
    EmaNode *child;
    const EmaNode *name;
    g_autofree char *key_path = NULL;
    if (param->type != EMA_PARAM_STRUCT && param->type != EMA_PARAM_LIST)
      continue;
    for (guint k = 0; k < node->keys->len; k++)
      if (strcmp(((EmaNode *) node->keys->pdata[k])->value, param->key) == 0)
        index = (gint) k;
    if (index < 0)
      continue;
    child = node->items->pdata[index];
    key_path = child_path(path, param->key);
    if (param->type == EMA_PARAM_STRUCT && param->resolve && child->kind == EMA_NODE_SCALAR &&
        child->value) {
      EmaNode *resolved = param->resolve(child, key_path, error);
      if (resolved == NULL)
        return FALSE;
      ema_node_free(child);
      node->items->pdata[index] = child = resolved;
    } else if (param->type == EMA_PARAM_STRUCT && param->resolve && child->kind == EMA_NODE_MAP &&
               (!has_required_keys(param->table, child) ||
                (required_keys(param->table) == 0 && !renamed(child)))) {
      /* a name and some of its keys (`model: {name: llama-3.1-70b, weights: fp8}`): the named
       * file's map with the given keys over it (no name: the load reports the missing keys). A
       * table whose keys all have defaults (a policy composition) is complete whatever a map of
       * it holds: there a name that resolves expands (`policy: {name: ema}` is ema), and one
       * that does not labels the map as written (a custom composition's own name) */
      name = ema_node_get(child, "name");
      if (name && name->kind == EMA_NODE_SCALAR && name->value) {
        GError *unknown = NULL;
        EmaNode *resolved = param->resolve(name, key_path, &unknown);
        if (resolved == NULL && required_keys(param->table) > 0 &&
            required_keys_given(param->table, child) <= 1) {
          g_propagate_error(error, unknown);
          return FALSE;
        }
        /* not found with more of its keys given: an inline map that names itself, whose own
         * missing keys the load reports */
        g_clear_error(&unknown);
        if (resolved) {
          for (guint k = 0; k < child->keys->len; k++) {
            const char *key = ((EmaNode *) child->keys->pdata[k])->value;
            if (strcmp(key, "name") != 0)
              ema_node_set(resolved, key, ema_node_copy(child->items->pdata[k]));
          }
          ema_node_free(child);
          node->items->pdata[index] = child = resolved;
        }
      }
    } else if (param->type == EMA_PARAM_STRUCT && param->resolve && child->kind == EMA_NODE_MAP &&
               (name = renamed(child)) != NULL) {
      /* `--set model.name=mixtral-8x7b` on a model a name expanded: that model, not the old
       * one's shape under the new name; a name nothing resolves relabels the map */
      GError *unknown = NULL;
      EmaNode *resolved = resolve_renamed(param, child, name, node->file, key_path, &unknown);
      if (unknown) {
        g_propagate_error(error, unknown);
        return FALSE;
      }
      if (resolved) {
        ema_node_free(child);
        node->items->pdata[index] = child = resolved;
      }
    }
    if (param->type == EMA_PARAM_STRUCT) {
      if (!expand_at(param->table, child, key_path, error))
        return FALSE;
    } else if (child->kind == EMA_NODE_SEQ) {
      for (guint j = 0; j < child->items->len; j++) {
        g_autofree char *index_text = g_strdup_printf("%u", j);
        g_autofree char *item_path = child_path(key_path, index_text);
        if (!expand_at(param->table, child->items->pdata[j], item_path, error))
          return FALSE;
      }
    }
  }
  return TRUE;
}

gboolean ema_params_expand(const EmaParamTable *table, EmaNode *node, GError **error) {
  return expand_at(table, node, NULL, error);
}

void ema_params_clear(const EmaParamTable *table, gpointer object) {
  for (guint i = table->n_params; i-- > 0;) {
    const EmaParam *param = &table->params[i];
    gpointer field = field_ptr(object, param);
    if (param->type == EMA_PARAM_OBJECT) {
      gpointer *inner = field;
      const EmaParamTable *inner_table = *inner ? param->table_for(object) : NULL;
      if (inner_table)
        ema_params_clear(inner_table, *inner);
      g_clear_pointer(inner, g_free);
    } else if (param->type == EMA_PARAM_STRING) {
      g_clear_pointer((char **) field, g_free);
    } else if (param->type == EMA_PARAM_STRUCT) {
      ema_params_clear(param->table, field);
    } else if (param->type == EMA_PARAM_LIST) {
      GArray *list = *(GArray **) field;
      if (list == NULL)
        continue;
      for (guint j = 0; j < list->len; j++)
        ema_params_clear(param->table, list->data + (gsize) j * param->table->size);
      g_array_unref(list);
      *(GArray **) field = NULL;
    }
  }
  memset(object, 0, table->size);
}

/* ---- writing ------------------------------------------------------------ */

static gboolean is_zero(const EmaParam *param, gconstpointer field) {
  if (param->type == EMA_PARAM_STRING)
    return *(char *const *) field == NULL;
  return numeric_value(param, field) == 0;
}

void ema_params_append_quoted(GString *out, const char *text) {
  g_string_append_c(out, '"');
  for (const char *p = text; *p; p++) {
    if (*p == '"' || *p == '\\')
      g_string_append_c(out, '\\');
    if (*p == '\n')
      g_string_append(out, "\\n");
    else if ((unsigned char) *p < 0x20 || *p == 0x7f)
      g_string_append_printf(out, "\\x%02x", (unsigned char) *p);
    else
      g_string_append_c(out, *p);
  }
  g_string_append_c(out, '"');
}

static char *format_value(const EmaParam *param, gconstpointer field) {
  switch (param->type) {
  case EMA_PARAM_BOOL:
    return g_strdup(*(const gboolean *) field ? "true" : "false");
  case EMA_PARAM_ENUM:
    return g_strdup(param->choices[*(const int *) field]);
  case EMA_PARAM_STRING: {
    GString *quoted = g_string_new(NULL);
    ema_params_append_quoted(quoted, *(char *const *) field);
    return g_string_free(quoted, FALSE);
  }
  /* integers are printed from their own type: a double would round above 2^53 */
  case EMA_PARAM_INT:
    return g_strdup_printf("%" G_GINT64_FORMAT, *(const gint64 *) field);
  case EMA_PARAM_SIZE:
    return ema_units_format_size(*(const guint64 *) field);
  case EMA_PARAM_DURATION:
    return ema_units_format_duration(*(const gint64 *) field);
  default:
    return format_number(param->type, numeric_value(param, field));
  }
}

/* TRUE when the SIZE bytes at FIELD are all zero (an absent optional map). */
static gboolean is_all_zero(gconstpointer field, gsize size) {
  const guchar *bytes = field;
  for (gsize i = 0; i < size; i++)
    if (bytes[i])
      return FALSE;
  return TRUE;
}

/* Write TABLE's fields of OBJECT; the first line starts with FIRST_PREFIX
 * (e.g. "  - " for a list item), the others with INDENT spaces. */
static void write_struct(const EmaParamTable *table, gconstpointer object, GString *out,
                         guint indent, const char *first_prefix) {
  gboolean first = TRUE;
  for (guint i = 0; i < table->n_params; i++) {
    const EmaParam *param = &table->params[i];
    gconstpointer field = field_cptr(object, param);
    if ((param->flags & EMA_PARAM_OPTIONAL) && !(param->flags & EMA_PARAM_KEEP_ZERO) &&
        param->type < EMA_PARAM_STRUCT && is_zero(param, field))
      continue;
    if ((param->flags & EMA_PARAM_OPTIONAL) && param->type == EMA_PARAM_STRUCT &&
        is_all_zero(field, param->table->size))
      continue;
    if ((param->flags & EMA_PARAM_OPTIONAL) && param->type == EMA_PARAM_LIST &&
        (*(GArray *const *) field == NULL || (*(GArray *const *) field)->len == 0))
      continue;
    if (first && first_prefix)
      g_string_append(out, first_prefix);
    else
      g_string_append_printf(out, "%*s", (int) indent, "");
    first = FALSE;
    if (param->type == EMA_PARAM_STRUCT || param->type == EMA_PARAM_OBJECT) {
      g_autoptr(GString) inner = g_string_new(NULL);
      if (param->type == EMA_PARAM_STRUCT)
        write_struct(param->table, field, inner, indent + 2, NULL);
      else if (*(gconstpointer const *) field)
        write_struct(param->table_for(object), *(gconstpointer const *) field, inner, indent + 2,
                     NULL);
      if (inner->len == 0)
        g_string_append_printf(out, "%s: {}\n", param->key);
      else
        g_string_append_printf(out, "%s:\n%s", param->key, inner->str);
    } else if (param->type == EMA_PARAM_LIST) {
      const GArray *list = *(GArray *const *) field;
      if (list == NULL || list->len == 0) {
        g_string_append_printf(out, "%s: []\n", param->key);
        continue;
      }
      g_string_append_printf(out, "%s:\n", param->key);
      for (guint j = 0; j < list->len; j++) {
        g_autofree char *prefix = g_strdup_printf("%*s- ", (int) indent + 2, "");
        write_struct(param->table, list->data + (gsize) j * param->table->size, out, indent + 4,
                     prefix);
      }
    } else {
      g_autofree char *text = format_value(param, field);
      g_string_append_printf(out, "%s: %s", param->key, text);
      /* an exact byte count of a measured size (85040352461B) is read by
       * people in GiB: said in a comment, the value stays exact */
      if (param->type == EMA_PARAM_SIZE && *(const guint64 *) field >= 1024 &&
          g_ascii_isdigit(text[strlen(text) - 2])) {
        g_autofree char *human = ema_units_format_size_human(*(const guint64 *) field);
        g_string_append_printf(out, "  # %s", human);
      }
      g_string_append_c(out, '\n');
    }
  }
  if (first && first_prefix)
    g_string_append_printf(out, "%s{}\n", first_prefix);
}

void ema_params_write_yaml(const EmaParamTable *table, gconstpointer object, GString *out,
                           guint indent) {
  write_struct(table, object, out, indent, NULL);
}

void ema_params_describe(const EmaParamTable *table, GString *out, guint indent) {
  for (guint i = 0; i < table->n_params; i++) {
    const EmaParam *param = &table->params[i];
    g_string_append_printf(out, "%*s%-24s %-9s ", (int) indent, "", param->key,
                           short_type_name(param->type));
    if (param->flags & EMA_PARAM_REQUIRED)
      g_string_append(out, "required");
    else if (param->flags & EMA_PARAM_OPTIONAL)
      g_string_append(out, "optional");
    else if (param->default_value)
      g_string_append_printf(out, "default %s", param->default_value);
    if (param->type == EMA_PARAM_LIST && param->max > 0) {
      g_string_append_printf(out, "at most %.0f items", param->max);
    } else if (has_range(param)) {
      g_autofree char *lo = format_number(param->type, param->min);
      g_autofree char *hi = format_number(param->type, param->max);
      g_string_append_printf(out, ", range [%s, %s]", lo, hi);
    }
    if (param->type == EMA_PARAM_ENUM) {
      g_autofree char *list = join_choices(param->choices);
      g_string_append_printf(out, ", one of: %s", list);
    }
    g_string_append_printf(out, "\n%*s    %s\n", (int) indent, "", param->help ? param->help : "");
    if (param->type == EMA_PARAM_STRUCT || param->type == EMA_PARAM_LIST)
      ema_params_describe(param->table, out, indent + 2);
  }
}

gboolean ema_params_check_defaults(const EmaParamTable *table, GError **error) {
  g_autofree gpointer scratch = g_malloc0(table->size);
  for (guint i = 0; i < table->n_params; i++) {
    const EmaParam *param = &table->params[i];
    GError *inner = NULL;
    if (param->type == EMA_PARAM_OBJECT)
      continue; /* its table depends on the values bound */
    if (param->type == EMA_PARAM_STRUCT || param->type == EMA_PARAM_LIST) {
      if (param->table == NULL) {
        g_set_error(error, EMA_CONFIG_ERROR, EMA_CONFIG_ERROR_INVALID,
                    "%s.%s: a map or list parameter needs a table", table->name, param->key);
        return FALSE;
      }
      if (!ema_params_check_defaults(param->table, error))
        return FALSE;
      continue;
    }
    if (param->type == EMA_PARAM_ENUM && param->choices == NULL) {
      g_set_error(error, EMA_CONFIG_ERROR, EMA_CONFIG_ERROR_INVALID,
                  "%s.%s: an enum parameter needs choices", table->name, param->key);
      return FALSE;
    }
    if (param->default_value == NULL) {
      if (!(param->flags & (EMA_PARAM_REQUIRED | EMA_PARAM_OPTIONAL))) {
        g_set_error(error, EMA_CONFIG_ERROR, EMA_CONFIG_ERROR_INVALID,
                    "%s.%s: no default, yet neither required nor optional", table->name,
                    param->key);
        return FALSE;
      }
      continue;
    }
    if (!ema_params_parse_value(param, param->default_value, field_ptr(scratch, param), &inner)) {
      g_set_error(error, EMA_CONFIG_ERROR, EMA_CONFIG_ERROR_INVALID, "%s.%s: bad default '%s': %s",
                  table->name, param->key, param->default_value, inner->message);
      g_error_free(inner);
      ema_params_clear(table, scratch);
      return FALSE;
    }
  }
  ema_params_clear(table, scratch);
  return TRUE;
}

gsize ema_params_field_size(const EmaParam *param) {
  switch (param->type) {
  case EMA_PARAM_BOOL:
    return sizeof(gboolean);
  case EMA_PARAM_ENUM:
    return sizeof(int);
  case EMA_PARAM_INT:
  case EMA_PARAM_DURATION:
    return sizeof(gint64);
  case EMA_PARAM_SIZE:
    return sizeof(guint64);
  case EMA_PARAM_DOUBLE:
  case EMA_PARAM_BANDWIDTH:
  case EMA_PARAM_FLOPS:
  case EMA_PARAM_FRACTION:
    return sizeof(double);
  case EMA_PARAM_STRING:
    return sizeof(char *);
  case EMA_PARAM_LIST:
    return sizeof(GArray *);
  case EMA_PARAM_OBJECT:
    return sizeof(gpointer);
  case EMA_PARAM_STRUCT:
    return param->table ? param->table->size : 0;
  }
  return 0;
}
