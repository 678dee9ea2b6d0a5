/* json.c: what the JSON trace readers (mooncake.c, vllm.c) share: a scan of
 * the text before json-glib sees it, the place of a problem in the text's
 * lines, and the integer value of a node.
 *
 * Invariants: the scan reads each byte once and allocates nothing; it
 * refuses what json-glib would not handle safely (nesting deeper than
 * EMA_TRACE_JSON_MAX_DEPTH, since its parser recurses once per level;
 * integers outside gint64, which it would wrap; NUL bytes, binary data, and
 * bytes that are not UTF-8, of which json-glib names no place; an
 * object or array after the first value has closed, which it would drop
 * without a word), and says at which byte. */
#include <math.h>
#include <string.h>

#include "private.h"

/* The bytes of the UTF-8 character TEXT starts with (LEFT bytes on), 0 where none does. */
static gsize utf8_char_bytes(const char *text, gsize left) {
  gunichar c = g_utf8_get_char_validated(text, (gssize) MIN(left, 6));
  return c == (gunichar) -1 || c == (gunichar) -2 ? 0 : (gsize) g_utf8_skip[(guchar) *text];
}

const char *ema_trace_json_scan(const char *text, gsize len, gsize *at) {
  int depth = 0;
  gboolean closed = FALSE; /* the first value, an object or array, has ended */
  for (gsize i = 0; i < len; i++) {
    char c = text[i];
    if (at != NULL)
      *at = i;
    if (c == ' ' || c == '\t' || c == '\n' || c == '\r')
      continue;
    if (c == '\0')
      return "binary data (NUL byte)";
    if (closed)
      return "text after the end of the JSON value (two values run together?)";
    if ((guchar) c >= 0x80) { /* json-glib names no place for bytes that are not UTF-8 */
      gsize bytes = utf8_char_bytes(text + i, len - i);
      if (bytes == 0)
        return "not UTF-8 text";
      i += bytes - 1;
      continue;
    }
    if (c == '"') {
      for (i++; i < len && text[i] != '"'; i++) {
        gsize bytes = 1;
        if (text[i] == '\0' ||
            ((guchar) text[i] >= 0x80 && (bytes = utf8_char_bytes(text + i, len - i)) == 0)) {
          if (at != NULL)
            *at = i;
          return text[i] == '\0' ? "binary data (NUL byte)" : "not UTF-8 text";
        }
        i += bytes - 1;
        if (text[i] == '\\')
          i++;
      }
    } else if (c == '[' || c == '{') {
      if (++depth > EMA_TRACE_JSON_MAX_DEPTH)
        return "JSON nested deeper than " G_STRINGIFY(EMA_TRACE_JSON_MAX_DEPTH) " levels";
    } else if (c == ']' || c == '}') {
      closed = --depth == 0;
    } else if (c == '-' || (c >= '0' && c <= '9')) {
      gsize end = i;
      gboolean integer = TRUE;
      gint64 ignored;
      while (end < len && text[end] != '\0' && strchr("0123456789+-.eE", text[end]) != NULL) {
        integer = integer && strchr(".eE", text[end]) == NULL;
        end++;
      }
      if (integer &&
          g_strcmp0(ema_trace_parse_int(text + i, end - i, &ignored), "out of range") == 0)
        return "integer out of range (beyond 64 bits)";
      i = end - 1;
    }
  }
  return NULL;
}

char *ema_trace_json_line_col(const char *text, gsize at) {
  guint64 line = 1, column = 1;
  for (gsize i = 0; i < at; i++) {
    if (text[i] == '\n') {
      line++;
      column = 1;
    } else {
      column++;
    }
  }
  return g_strdup_printf("%" G_GUINT64_FORMAT ":%" G_GUINT64_FORMAT, line, column);
}

char *ema_trace_json_error_message(const char *path, const char *message) {
  if (g_str_has_prefix(message, "<data>:"))
    return g_strdup_printf("%s:%s", path, message + strlen("<data>:"));
  return g_strdup_printf("%s: invalid JSON: %s", path, message);
}

gboolean ema_trace_json_int(JsonNode *node, gint64 *value) {
  GType type = JSON_NODE_HOLDS_VALUE(node) ? json_node_get_value_type(node) : G_TYPE_INVALID;
  if (type == G_TYPE_INT64) {
    *value = json_node_get_int(node);
    return TRUE;
  }
  if (type == G_TYPE_DOUBLE && json_node_get_double(node) == floor(json_node_get_double(node)) &&
      fabs(json_node_get_double(node)) < 9e15) {
    *value = (gint64) json_node_get_double(node);
    return TRUE;
  }
  return FALSE;
}
