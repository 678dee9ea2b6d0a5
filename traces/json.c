/* json.c: what the JSON trace readers (mooncake.c, vllm.c) share, and summary.json's readers
 * too: a scan of the text before json-glib sees it, the place of a problem in the text's lines,
 * and the text of a member's value or of an array's items (json-glib keeps neither places nor the
 * digits as written: 1e3 and 1000.0 are one double to it, 0x10 is 16), from which the readers
 * read their numbers as the CSV readers do (ema_trace_parse_int, ema_trace_parse_decimal).
 *
 * Invariants: the scan reads each byte once (a key holding an escape is decoded again to be
 * compared) and refuses what json-glib would not handle safely (nesting deeper than
 * EMA_TRACE_JSON_MAX_DEPTH, since its parser recurses once per level; integers outside gint64,
 * which it would wrap; NUL bytes, binary data, and bytes that are not UTF-8, of which json-glib
 * names no place; an object or array after the first value has closed, which it would drop
 * without a word; a key given twice in one object, of which it would keep the last value
 * without a word), and says at which byte.
 *
 * Keys: a string is a key where it opens an object's member (after '{' or ',' in an object) and
 * ':' follows it; each open object has its own keys (objects side by side in an array, or one
 * inside another, may share names). Keys are compared as json-glib names members: decoded (a
 * key spelled "\u0061" is the key "a"), as C strings (up to a first \u0000); a key holding an
 * escape JSON does not have (json-glib reads "\q" as "q" and "\101" as "A", its own way) or a
 * lone surrogate is not counted, a corner nobody writes. The message names the key as written
 * (its first 40 bytes, ema_file_quote_length) and the place is the second one's opening quote.
 *
 * What it allocates: the message, and for keys only. An object's first SCAN_SMALL_KEYS keys are
 * places in the text, kept on the stack (one array per depth, at most EMA_TRACE_JSON_MAX_DEPTH),
 * compared byte for byte where neither holds a backslash and decoded into copies where one does,
 * so a record of a few plain keys (a Mooncake line) costs no allocation. An object with more keys
 * moves them, decoded, into a hash set of its depth (made the first time, emptied when its object
 * closes and kept for the next object at that depth, freed when the scan ends), so the scan stays
 * linear in the text however many keys an object has. */
#include <string.h>

#include "ema/core/file.h"
#include "private.h"

/* The keys of an object compared one by one, before a hash set is worth its allocation. */
#define SCAN_SMALL_KEYS 8

/* A key's place in the text: its bytes between the quotes. */
typedef struct {
  gsize start, len;
  gboolean escaped; /* it holds a backslash: compared decoded */
} ScanKey;

/* An open object or array, at one depth of the scan. */
typedef struct {
  gboolean object;
  guint n; /* keys in small[]; SCAN_SMALL_KEYS + 1 once they are in the depth's hash set */
  ScanKey small[SCAN_SMALL_KEYS];
} ScanLevel;

/* The bytes of the UTF-8 character TEXT starts with (LEFT bytes on), 0 where none does. */
static gsize utf8_char_bytes(const char *text, gsize left) {
  gunichar c = g_utf8_get_char_validated(text, (gssize) MIN(left, 6));
  return c == (gunichar) -1 || c == (gunichar) -2 ? 0 : (gsize) g_utf8_skip[(guchar) *text];
}

/* The four hex digits at P (before END) as a number, -1 where they are not. */
static int hex4(const char *p, const char *end) {
  int value = 0;
  if (end - p < 4)
    return -1;
  for (int k = 0; k < 4; k++) {
    int digit = g_ascii_xdigit_value(p[k]);
    if (digit < 0)
      return -1;
    value = value * 16 + digit;
  }
  return value;
}

/* KEY of TEXT as json-glib names the member (escapes decoded; a C string, so it ends at a
 * first \u0000), newly allocated; NULL where an escape is not one of JSON's. */
static char *key_decode(const char *text, const ScanKey *key) {
  const char *p = text + key->start, *end = p + key->len;
  GString *s = g_string_sized_new(key->len);
  while (p < end) {
    int unit, low;
    if (*p != '\\') {
      g_string_append_c(s, *p++);
      continue;
    }
    if (end - p < 2)
      goto bad;
    p += 2;
    switch (p[-1]) {
    case '"':
    case '\\':
    case '/':
      g_string_append_c(s, p[-1]);
      break;
    case 'b':
      g_string_append_c(s, '\b');
      break;
    case 'f':
      g_string_append_c(s, '\f');
      break;
    case 'n':
      g_string_append_c(s, '\n');
      break;
    case 'r':
      g_string_append_c(s, '\r');
      break;
    case 't':
      g_string_append_c(s, '\t');
      break;
    case 'u':
      if ((unit = hex4(p, end)) < 0 || (unit >= 0xdc00 && unit < 0xe000))
        goto bad;
      p += 4;
      if (unit >= 0xd800 && unit < 0xdc00) { /* a surrogate pair's first half: the second next */
        if (end - p < 6 || p[0] != '\\' || p[1] != 'u' || (low = hex4(p + 2, end)) < 0xdc00 ||
            low >= 0xe000)
          goto bad;
        unit = 0x10000 + ((unit - 0xd800) << 10) + (low - 0xdc00);
        p += 6;
      }
      g_string_append_unichar(s, (gunichar) unit);
      break;
    default:
      goto bad;
    }
  }
  return g_string_free(s, FALSE);
bad:
  g_string_free(s, TRUE);
  return NULL;
}

/* Whether keys A and B of TEXT (both decodable) name one member. */
static gboolean keys_equal(const char *text, const ScanKey *a, const ScanKey *b) {
  if (!a->escaped && !b->escaped)
    return a->len == b->len && memcmp(text + a->start, text + b->start, a->len) == 0;
  g_autofree char *x = key_decode(text, a);
  g_autofree char *y = key_decode(text, b);
  return strcmp(x, y) == 0;
}

/* KEY of TEXT counted among LEVEL's keys (*SET: its depth's hash set, made when first needed);
 * FALSE where it is one of them already. */
static gboolean level_add_key(ScanLevel *level, GHashTable **set, const char *text,
                              const ScanKey *key) {
  if (key->escaped) { /* one json-glib refuses is not counted */
    g_autofree char *decoded = key_decode(text, key);
    if (decoded == NULL)
      return TRUE;
  }
  if (level->n < SCAN_SMALL_KEYS) {
    for (guint k = 0; k < level->n; k++)
      if (keys_equal(text, &level->small[k], key))
        return FALSE;
    level->small[level->n++] = *key;
    return TRUE;
  }
  if (level->n == SCAN_SMALL_KEYS) {
    if (*set == NULL)
      *set = g_hash_table_new_full(g_str_hash, g_str_equal, g_free, NULL);
    for (guint k = 0; k < SCAN_SMALL_KEYS; k++)
      g_hash_table_add(*set, key_decode(text, &level->small[k]));
    level->n++;
  }
  return g_hash_table_add(*set, key_decode(text, key));
}

/* The message for KEY of TEXT given twice: the key as written, cut as every quoted input is
 * (ema_file_quote_length), its control characters escaped. */
static char *duplicate_message(const char *text, const ScanKey *key) {
  GString *s = g_string_new("key \"");
  const char *p = text + key->start;
  gsize shown = ema_file_quote_length(p, key->len);
  for (gsize i = 0; i < shown; i++) {
    guchar c = (guchar) p[i];
    if (c < 0x20 || c == 0x7f)
      g_string_append_printf(s, "\\u%04x", c);
    else
      g_string_append_c(s, (char) c);
  }
  if (shown < key->len)
    g_string_append(s, "...");
  g_string_append(s, "\" given twice in one object");
  return g_string_free(s, FALSE);
}

static const char scan_duplicate[] = "a key given twice"; /* scan_text's word for one: *KEY */

/* ema_trace_json_scan's work, with LEVELS and SETS (both indexed by depth, from 1) for the keys
 * of each open object: its problem (static text, or scan_duplicate with the key in *KEY) or
 * NULL. */
static const char *scan_text(const char *text, gsize len, gsize *at, ScanLevel *levels,
                             GHashTable **sets, ScanKey *key) {
  int depth = 0;
  gboolean closed = FALSE;     /* the first value, an object or array, has ended */
  gboolean key_next = FALSE;   /* a string here would be a key: after '{' or ',' in an object */
  gboolean colon_next = FALSE; /* the string just read, *KEY, is a key if ':' is next */
  for (gsize i = 0; i < len; i++) {
    char c = text[i];
    gboolean may_be_key = key_next, is_key = colon_next;
    if (at != NULL)
      *at = i;
    if (c == ' ' || c == '\t' || c == '\n' || c == '\r')
      continue;
    key_next = colon_next = FALSE;
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
      gsize start = i + 1;
      gboolean escaped = FALSE;
      for (i++; i < len && text[i] != '"'; i++) {
        gsize bytes = 1;
        if (text[i] == '\0' ||
            ((guchar) text[i] >= 0x80 && (bytes = utf8_char_bytes(text + i, len - i)) == 0)) {
          if (at != NULL)
            *at = i;
          return text[i] == '\0' ? "binary data (NUL byte)" : "not UTF-8 text";
        }
        i += bytes - 1;
        if (text[i] == '\\') {
          escaped = TRUE;
          i++;
        }
      }
      if (may_be_key && i < len) {
        *key = (ScanKey){start, i - start, escaped};
        colon_next = TRUE;
      }
    } else if (c == ':') {
      if (is_key && !level_add_key(&levels[depth], &sets[depth], text, key)) {
        if (at != NULL)
          *at = key->start - 1; /* the second one's opening quote */
        return scan_duplicate;
      }
    } else if (c == ',') {
      key_next = depth >= 1 && levels[depth].object;
    } else if (c == '[' || c == '{') {
      if (++depth > EMA_TRACE_JSON_MAX_DEPTH)
        return "JSON nested deeper than " G_STRINGIFY(EMA_TRACE_JSON_MAX_DEPTH) " levels";
      if (depth >= 1) { /* (not after a stray ']' or '}', which json-glib refuses) */
        levels[depth].object = c == '{';
        levels[depth].n = 0;
        key_next = c == '{';
      }
    } else if (c == ']' || c == '}') {
      if (depth >= 1 && levels[depth].n > SCAN_SMALL_KEYS)
        g_hash_table_remove_all(sets[depth]);
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

char *ema_trace_json_scan(const char *text, gsize len, gsize *at) {
  ScanLevel levels[EMA_TRACE_JSON_MAX_DEPTH + 1]; /* each set when its depth opens */
  GHashTable *sets[EMA_TRACE_JSON_MAX_DEPTH + 1] = {NULL};
  ScanKey key;
  const char *problem = scan_text(text, len, at, levels, sets, &key);
  for (guint d = 0; d < G_N_ELEMENTS(sets); d++)
    if (sets[d] != NULL)
      g_hash_table_destroy(sets[d]);
  if (problem == scan_duplicate)
    return duplicate_message(text, &key);
  return g_strdup(problem);
}

char *ema_trace_json_line_col(const char *text, gsize at) {
  guint line, column;
  ema_file_position(text, text + at, &line, &column);
  return g_strdup_printf("%u:%u", line, column);
}

char *ema_trace_json_error_message(const char *path, const char *message) {
  if (g_str_has_prefix(message, "<data>:"))
    return g_strdup_printf("%s:%s", path, message + strlen("<data>:"));
  return g_strdup_printf("%s: invalid JSON: %s", path, message);
}

/* ---- the places of values ----------------------------------------------------------------
 * In a text json-glib has read: its grammar is JSON's with what its scanner adds (strings in
 * single quotes, which hold no escapes, and comments between slash-star and star-slash), so
 * these walks accept those too. */

/* I, or past the white space and comments from I of TEXT. */
static gsize skip_space(const char *text, gsize len, gsize i) {
  while (i < len) {
    if (text[i] == ' ' || text[i] == '\t' || text[i] == '\n' || text[i] == '\r') {
      i++;
    } else if (text[i] == '/' && i + 1 < len && text[i + 1] == '*') {
      const char *close = g_strstr_len(text + i + 2, (gssize) (len - i - 2), "*/");
      i = close ? (gsize) (close - text) + 2 : len;
    } else {
      break;
    }
  }
  return i;
}

/* Past the string whose opening quote is at I of TEXT (its closing quote), or LEN. */
static gsize string_end(const char *text, gsize len, gsize i) {
  char quote = text[i];
  for (i++; i < len && text[i] != quote; i++)
    if (quote == '"' && text[i] == '\\')
      i++;
  return MIN(i + 1, len);
}

/* Past the value that starts at I of TEXT. */
static gsize value_end(const char *text, gsize len, gsize i) {
  int depth = 0;
  while (i < len) {
    char c = text[i];
    if (c == '"' || c == '\'') {
      i = string_end(text, len, i);
      if (depth == 0)
        return i;
      continue;
    }
    if (c == '/' && i + 1 < len && text[i + 1] == '*') {
      if (depth == 0)
        return i;
      i = skip_space(text, len, i);
      continue;
    }
    if (c == '[' || c == '{') {
      depth++;
    } else if (c == ']' || c == '}') {
      if (depth == 0)
        return i;
      if (--depth == 0)
        return i + 1;
    } else if (depth == 0 &&
               (c == ',' || c == ':' || c == ' ' || c == '\t' || c == '\n' || c == '\r')) {
      return i;
    }
    i++;
  }
  return len;
}

/* Whether the string at [START, END) of TEXT (its quotes included) names the member KEY. */
static gboolean names_key(const char *text, gsize start, gsize end, const char *key) {
  ScanKey name = {start + 1, end - start - 2, FALSE};
  if (end < start + 2 || text[end - 1] != text[start])
    return FALSE;
  name.escaped = text[start] == '"' && memchr(text + name.start, '\\', name.len) != NULL;
  if (!name.escaped)
    return name.len == strlen(key) && memcmp(text + name.start, key, name.len) == 0;
  g_autofree char *decoded = key_decode(text, &name);
  return decoded != NULL && strcmp(decoded, key) == 0;
}

gboolean ema_trace_json_member(const char *text, gsize len, const char *key, gsize *key_at,
                               gsize *value_at, gsize *value_len) {
  gsize i = skip_space(text, len, 0);
  if (i >= len || text[i] != '{')
    return FALSE;
  for (i = skip_space(text, len, i + 1); i < len && (text[i] == '"' || text[i] == '\'');) {
    gsize name = i, name_end = string_end(text, len, i), value, end;
    i = skip_space(text, len, name_end);
    if (i >= len || text[i] != ':')
      return FALSE;
    value = skip_space(text, len, i + 1);
    end = value_end(text, len, value);
    if (names_key(text, name, name_end, key)) {
      *key_at = name;
      *value_at = value;
      *value_len = end - value;
      return TRUE;
    }
    i = skip_space(text, len, end);
    if (i >= len || text[i] != ',')
      return FALSE;
    i = skip_space(text, len, i + 1);
  }
  return FALSE;
}

gboolean ema_trace_json_item(const char *array, gsize len, gsize *at, gsize *item_at,
                             gsize *item_len) {
  gsize i = *at;
  if (i == 0) { /* the opening bracket */
    i = skip_space(array, len, 0);
    if (i >= len || array[i] != '[')
      return FALSE;
    i = skip_space(array, len, i + 1);
  } else { /* after an item: a comma, or the end */
    i = skip_space(array, len, i);
    if (i >= len || array[i] != ',')
      return FALSE;
    i = skip_space(array, len, i + 1);
  }
  if (i >= len || array[i] == ']')
    return FALSE;
  *item_at = i;
  *at = value_end(array, len, i);
  *item_len = *at - i;
  return *item_len > 0;
}
