/* json.c: the members of EMA's JSON outputs, and the one way they are read back (json.h). */
#include "ema/run/json.h"

#include "ema/core/file.h"
#include "ema/traces/trace.h"

gboolean ema_json_parse_text(JsonParser *parser, const char *path, const char *text, gsize length,
                             GError **error) {
  gsize at = 0;
  g_autofree char *problem = NULL;
  GError *inner = NULL;
  /* every syntax problem at PATH:LINE:COL, as the trace readers give it (trace.h) */
  if ((problem = ema_trace_json_scan(text, length, &at)) != NULL) {
    g_autofree char *where = ema_trace_json_line_col(text, at);
    g_set_error(error, G_FILE_ERROR, G_FILE_ERROR_INVAL, "%s:%s: %s", path, where, problem);
    return FALSE;
  }
  if (!json_parser_load_from_data(parser, text, (gssize) length, &inner)) {
    g_autofree char *message = ema_trace_json_error_message(path, inner->message);
    g_set_error_literal(error, G_FILE_ERROR, G_FILE_ERROR_INVAL, message);
    g_error_free(inner);
    return FALSE;
  }
  return TRUE;
}

JsonObject *ema_json_load_object(JsonParser *parser, const char *path, GError **error) {
  g_autofree char *text = NULL;
  gsize length;
  JsonNode *root;
  if (!ema_file_read_regular(path, EMA_FILE_MAX_TEXT, &text, &length, error) ||
      !ema_json_parse_text(parser, path, text, length, error))
    return NULL;
  root = json_parser_get_root(parser);
  if (root == NULL || !JSON_NODE_HOLDS_OBJECT(root)) {
    g_set_error(error, G_FILE_ERROR, G_FILE_ERROR_INVAL, "%s: not a JSON object", path);
    return NULL;
  }
  return json_node_get_object(root);
}

/* "WHERE.MEMBER", or MEMBER at the root. */
static char *member_path(const char *where, const char *member) {
  return where ? g_strconcat(where, ".", member, NULL) : g_strdup(member);
}

gboolean ema_json_member_string(JsonObject *object, const char *member, const char *fallback,
                                const char *path, const char *where, const char **out,
                                GError **error) {
  JsonNode *node = json_object_get_member(object, member);
  g_autofree char *at = NULL;
  if (node == NULL) {
    *out = fallback;
    return TRUE;
  }
  if (JSON_NODE_HOLDS_VALUE(node) && json_node_get_value_type(node) == G_TYPE_STRING) {
    *out = json_node_get_string(node);
    return TRUE;
  }
  at = member_path(where, member);
  g_set_error(error, G_FILE_ERROR, G_FILE_ERROR_INVAL, "%s: %s: not a string", path, at);
  return FALSE;
}

gboolean ema_json_member_number(JsonObject *object, const char *member, double fallback, double min,
                                double max, const char *path, const char *where, double *out,
                                GError **error) {
  JsonNode *node = json_object_get_member(object, member);
  g_autofree char *at = NULL;
  GType type;
  if (node == NULL) {
    *out = fallback;
    return TRUE;
  }
  at = member_path(where, member);
  type = JSON_NODE_HOLDS_VALUE(node) ? json_node_get_value_type(node) : G_TYPE_INVALID;
  if (type != G_TYPE_DOUBLE && type != G_TYPE_INT64) {
    g_set_error(error, G_FILE_ERROR, G_FILE_ERROR_INVAL, "%s: %s: not a number", path, at);
    return FALSE;
  }
  *out = json_node_get_double(node);
  if (!(*out >= min && *out <= max)) {
    g_set_error(error, G_FILE_ERROR, G_FILE_ERROR_INVAL, "%s: %s: %.17g is outside %.17g..%.17g",
                path, at, *out, min, max);
    return FALSE;
  }
  return TRUE;
}

void ema_json_add_string(JsonBuilder *builder, const char *name, const char *value) {
  json_builder_set_member_name(builder, name);
  json_builder_add_string_value(builder, value);
}

void ema_json_add_number(JsonBuilder *builder, const char *name, double value) {
  json_builder_set_member_name(builder, name);
  json_builder_add_double_value(builder, value);
}

void ema_json_add_count(JsonBuilder *builder, const char *name, guint64 value) {
  json_builder_set_member_name(builder, name);
  json_builder_add_int_value(builder, (gint64) value);
}

void ema_json_add_bool(JsonBuilder *builder, const char *name, gboolean value) {
  json_builder_set_member_name(builder, name);
  json_builder_add_boolean_value(builder, value);
}
