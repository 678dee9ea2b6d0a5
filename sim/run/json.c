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
