/* json.h: the members of EMA's JSON outputs (summary.json and its parts), one
 * call each: a name and its value, written through json-glib's builder. */
#pragma once

#include <glib.h>
#include <json-glib/json-glib.h>

G_BEGIN_DECLS

void ema_json_add_string(JsonBuilder *builder, const char *name, const char *value);
void ema_json_add_number(JsonBuilder *builder, const char *name, double value);
void ema_json_add_count(JsonBuilder *builder, const char *name, guint64 value);
void ema_json_add_bool(JsonBuilder *builder, const char *name, gboolean value);

/* PATH (a regular file, at most EMA_FILE_MAX_TEXT bytes) parsed into PARSER, its root, which
 * must be an object, returned. The text is scanned first as the trace readers scan theirs
 * (ema_trace_json_scan: nesting json-glib's recursive parser cannot take, integers it would
 * wrap, a key given twice in one object). NULL with ERROR naming PATH, and a syntax problem's place
 * as "PATH:LINE:COL: ..." (json-glib's own messages too: ema_trace_json_error_message). */
JsonObject *ema_json_load_object(JsonParser *parser, const char *path, GError **error);
/* TEXT (LENGTH bytes, read from PATH) scanned and parsed into PARSER as ema_json_load_object
 * does (its root may be of any kind, or none); FALSE with ERROR (G_FILE_ERROR_INVAL) naming
 * PATH and the problem's place. */
gboolean ema_json_parse_text(JsonParser *parser, const char *path, const char *text, gsize length,
                             GError **error);

G_END_DECLS
