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

/* OBJECT's MEMBER into *OUT: FALLBACK where it is absent; a string where it is there (*OUT is
 * OBJECT's); else FALSE with ERROR "PATH: WHERE.MEMBER: not a string" (WHERE names OBJECT in
 * the file, e.g. "tenants.0"; NULL: the root). json-glib's own getters answer NULL for a number
 * there, and a critical for a list. */
gboolean ema_json_member_string(JsonObject *object, const char *member, const char *fallback,
                                const char *path, const char *where, const char **out,
                                GError **error);
/* OBJECT's MEMBER into *OUT, a finite number from MIN to MAX: FALLBACK where it is absent; else
 * FALSE with ERROR "PATH: WHERE.MEMBER: ..." saying what it is instead. */
gboolean ema_json_member_number(JsonObject *object, const char *member, double fallback, double min,
                                double max, const char *path, const char *where, double *out,
                                GError **error);

G_END_DECLS
