/* json.c: the members of EMA's JSON outputs (json.h). */
#include "ema/run/json.h"

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
