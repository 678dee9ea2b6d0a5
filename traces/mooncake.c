/* mooncake.c: the Mooncake JSONL reader: one JSON object per line,
 * {"timestamp": ms, "input_length": N, "output_length": N, "hash_ids": [...]}
 * (kvcache-ai/Mooncake traces; each hash id stands for a 512-token block).
 *
 * Invariants: one JsonParser is reused for every line (json-glib builds the
 * line's tree and frees it on the next load), the reader holds one line;
 * timestamp is an integer or decimal number of ms, never decreasing, read from its
 * text as the CSV readers read a decimal (ema_trace_parse_decimal: exact to the ns,
 * "0x10" is no number); input_length
 * is in [1, 2^32-1], output_length in [0, 2^32-1]; hash_ids, when present, is
 * an array of non-negative integers, at most one per 512-token block of the
 * prompt, its length is the record's prefix_blocks and its ids (kept in hash_ids until the next
 * line is read) the record's prefix_ids; every integer (the two lengths, each id) is read from
 * its text on the line as the CSV readers read one (ema_trace_parse_int: "1e3", "1.5" or "0x10"
 * is no integer, "12.0" is 12), not from json-glib's value, which takes 1e3 for 1000 and 0x10
 * for 16; other keys are ignored; blank lines (white space only)
 * are skipped. The first record is read when the file is opened, so an empty file or a bad first
 * line fails the open. A line is scanned before json-glib sees it (ema_trace_json_scan): nesting
 * deeper than EMA_TRACE_JSON_MAX_DEPTH (json-glib recurses per level), integers outside 64 bits
 * (json-glib would wrap them), a second value after the record (json-glib would drop it: two
 * records run together) and a key given twice in one object (json-glib would keep the last
 * value) are errors, so a line costs at most max_line bytes and a bounded stack. Errors name the
 * line and, where they can, the column. */
#include <string.h>

#include <json-glib/json-glib.h>

#include "private.h"

typedef struct {
  EmaTraceSource base;
  EmaTraceReader reader;
  JsonParser *parser;
  GArray *hash_ids; /* guint64: the last line's hash_ids */
  guint64 row;
  gboolean have_first;
  gint64 first_time;
  gint64 prev_time;
  guint64 prev_line;
  gboolean have_pending;
  EmaRequestRecord pending;
  const char *line; /* the current line and its length, for the columns of errors */
  gsize len;
} MooncakeSource;

/* The column of the record's member KEY's name on the current line, 0 where it is not there
 * (json-glib keeps no positions: the name is what an error about the value points at). */
static guint key_column(const MooncakeSource *self, const char *key) {
  gsize key_at, value_at, value_len;
  if (!ema_trace_json_member(self->line, self->len, key, &key_at, &value_at, &value_len))
    return 0;
  return (guint) key_at + 1;
}

/* The integer written at TEXT (LEN bytes: a value's text as the line holds it) into *V, read as
 * the CSV readers read one (ema_trace_parse_int: digits, then a point and zeros at most; not "1e3",
 * "1.5", "0x10" or "\"5\"", which json-glib would have taken as numbers or a string); else an error
 * at COLUMN, "WHAT: not an integer: 'TEXT'" as theirs. */
static gboolean parse_integer(MooncakeSource *self, guint column, const char *what,
                              const char *text, gsize len, gint64 *v, GError **error) {
  const char *problem = ema_trace_parse_int(text, len, v);
  if (problem == NULL)
    return TRUE;
  g_autofree char *quoted = ema_trace_quote(text, len);
  ema_trace_reader_error_col(&self->reader, column, error, EMA_TRACE_ERROR_PARSE, "%s: %s: %s",
                             what, problem, quoted);
  return FALSE;
}

/* The token count KEY of the record (JSON object OBJ) into *VALUE, at least MIN. */
static gboolean get_count(MooncakeSource *self, JsonObject *obj, const char *key, gint64 min,
                          guint32 *value, GError **error) {
  gsize key_at, value_at, value_len;
  gint64 v;

  if (!json_object_has_member(obj, key)) {
    ema_trace_reader_error(&self->reader, error, EMA_TRACE_ERROR_PARSE, "missing key '%s'", key);
    return FALSE;
  }
  /* its text, not json-glib's value: json-glib reads 1e3 and 1000.5 as reals and 0x10 as 16 */
  if (!ema_trace_json_member(self->line, self->len, key, &key_at, &value_at, &value_len)) {
    ema_trace_reader_error(&self->reader, error, EMA_TRACE_ERROR_PARSE,
                           "'%s': its value's text is not found on the line", key);
    return FALSE;
  }
  if (!parse_integer(self, (guint) key_at + 1, key, self->line + value_at, value_len, &v, error))
    return FALSE;
  if (v < min) {
    ema_trace_reader_error_col(&self->reader, (guint) key_at + 1, error, EMA_TRACE_ERROR_PARSE,
                               "%s must be %s, found %" G_GINT64_FORMAT, key,
                               min == 1 ? "> 0" : ">= 0", v);
    return FALSE;
  }
  if (v > G_MAXUINT32) {
    ema_trace_reader_error_col(&self->reader, (guint) key_at + 1, error, EMA_TRACE_ERROR_PARSE,
                               "%s must be <= %u, found %" G_GINT64_FORMAT, key, G_MAXUINT32, v);
    return FALSE;
  }
  *value = (guint32) v;
  return TRUE;
}

/* The timestamp, in ms (an integer or a decimal), to ns: read from its text on the line as the
 * counts are, by the CSV readers' decimal parser (ema_trace_parse_decimal: exact, rounded half
 * away from zero at the ns; not "0x10", which json-glib takes for 16, nor "\"5\""); else an error
 * at the key, "timestamp: not a number: '0x10'" as theirs. */
static gboolean get_time(MooncakeSource *self, JsonObject *obj, gint64 *ns, GError **error) {
  gsize key_at, value_at, value_len;

  if (!json_object_has_member(obj, "timestamp")) {
    ema_trace_reader_error(&self->reader, error, EMA_TRACE_ERROR_PARSE, "missing key 'timestamp'");
    return FALSE;
  }
  if (!ema_trace_json_member(self->line, self->len, "timestamp", &key_at, &value_at, &value_len)) {
    ema_trace_reader_error(&self->reader, error, EMA_TRACE_ERROR_PARSE,
                           "'timestamp': its value's text is not found on the line");
    return FALSE;
  }
  const char *problem = ema_trace_parse_decimal(self->line + value_at, value_len, 6, ns);
  if (problem == NULL)
    return TRUE;
  g_autofree char *quoted = ema_trace_quote(self->line + value_at, value_len);
  ema_trace_reader_error_col(&self->reader, (guint) key_at + 1, error, EMA_TRACE_ERROR_PARSE,
                             "timestamp: %s: %s", problem, quoted);
  return FALSE;
}

/* json-glib's MESSAGE about the current line, at the line's column: json-glib words it
 * "<data>:1:COLUMN: Parse error: ...", the position in the text it was given. */
static void json_error(const MooncakeSource *self, const char *message, GError **error) {
  guint64 column = 0;
  char *end = NULL;
  if (g_str_has_prefix(message, "<data>:1:")) {
    column = g_ascii_strtoull(message + strlen("<data>:1:"), &end, 10);
    if (end == NULL || end[0] != ':' || end[1] != ' ' || column == 0 || column > G_MAXUINT)
      column = 0;
  }
  if (column > 0)
    ema_trace_reader_error_col(&self->reader, (guint) column, error, EMA_TRACE_ERROR_PARSE,
                               "invalid JSON: %s", end + 2);
  else
    ema_trace_reader_error(&self->reader, error, EMA_TRACE_ERROR_PARSE, "invalid JSON: %s",
                           message);
}

/* Reads one record. Returns 1, 0 at the end, -1 on error. */
static int mooncake_read(MooncakeSource *self, EmaRequestRecord *out, GError **error) {
  char *line;
  gsize len;
  int got;

  do {
    got = ema_trace_reader_next(&self->reader, &line, &len, error);
  } while (got > 0 && ema_trace_line_is_blank(line, len));
  if (got <= 0)
    return got;
  self->line = line;
  self->len = len;

  g_autoptr(GError) jerr = NULL;
  gsize at = 0;
  g_autofree char *problem = ema_trace_json_scan(line, len, &at);
  if (problem != NULL) {
    ema_trace_reader_error_col(&self->reader, (guint) at + 1, error, EMA_TRACE_ERROR_PARSE, "%s",
                               problem);
    return -1;
  }
  if (!json_parser_load_from_data(self->parser, line, (gssize) len, &jerr)) {
    json_error(self, jerr->message, error);
    return -1;
  }
  JsonNode *root = json_parser_get_root(self->parser);
  if (root == NULL || !JSON_NODE_HOLDS_OBJECT(root)) {
    ema_trace_reader_error(&self->reader, error, EMA_TRACE_ERROR_PARSE, "not a JSON object");
    return -1;
  }
  JsonObject *obj = json_node_get_object(root);
  gint64 t;
  if (!get_time(self, obj, &t, error) ||
      !get_count(self, obj, "input_length", 1, &out->prompt_tokens, error) ||
      !get_count(self, obj, "output_length", 0, &out->output_tokens, error))
    return -1;
  out->prefix_blocks = 0;
  out->prefix_unit_tokens = EMA_TRACE_MOONCAKE_HASH_TOKENS;
  out->prefix_ids = NULL;
  g_array_set_size(self->hash_ids, 0);
  JsonNode *hashes = json_object_get_member(obj, "hash_ids");
  if (hashes != NULL) {
    gsize key_at = 0, value_at = 0, value_len = 0, next = 0, item_at, item_len;
    guint column;
    if (!ema_trace_json_member(line, len, "hash_ids", &key_at, &value_at, &value_len)) {
      ema_trace_reader_error(&self->reader, error, EMA_TRACE_ERROR_PARSE,
                             "'hash_ids': its value's text is not found on the line");
      return -1;
    }
    column = (guint) key_at + 1;
    if (!JSON_NODE_HOLDS_ARRAY(hashes)) {
      ema_trace_reader_error_col(&self->reader, column, error, EMA_TRACE_ERROR_PARSE,
                                 "'hash_ids' is not an array");
      return -1;
    }
    /* each id read from its text, as the token counts are (an id is no real either) */
    for (guint i = 0; ema_trace_json_item(line + value_at, value_len, &next, &item_at, &item_len);
         i++) {
      const char *item = line + value_at + item_at;
      gint64 id;
      if (ema_trace_parse_int(item, item_len, &id) != NULL || id < 0) {
        char what[32];
        g_snprintf(what, sizeof what, "hash_ids item %u", i);
        if (parse_integer(self, column, what, item, item_len, &id, error))
          ema_trace_reader_error_col(&self->reader, column, error, EMA_TRACE_ERROR_PARSE,
                                     "%s must be >= 0, found %" G_GINT64_FORMAT, what, id);
        return -1;
      }
      guint64 unsigned_id = (guint64) id;
      g_array_append_val(self->hash_ids, unsigned_id);
    }
    if (self->hash_ids->len != json_array_get_length(json_node_get_array(hashes))) {
      ema_trace_reader_error_col(&self->reader, column, error, EMA_TRACE_ERROR_PARSE,
                                 "'hash_ids': its items could not be read from the line's text");
      return -1;
    }
    /* each id names one block of the prompt: more ids than blocks are ids of another block
     * size (they would be read as 512-token blocks), not this prompt's */
    guint64 blocks = ((guint64) out->prompt_tokens + EMA_TRACE_MOONCAKE_HASH_TOKENS - 1) /
                     EMA_TRACE_MOONCAKE_HASH_TOKENS;
    if (self->hash_ids->len > blocks) {
      ema_trace_reader_error_col(
          &self->reader, column, error, EMA_TRACE_ERROR_PARSE,
          "'hash_ids' has %u ids, but input_length %u fills %" G_GUINT64_FORMAT
          " blocks of %d tokens (ids of another block size?)",
          self->hash_ids->len, out->prompt_tokens, blocks, EMA_TRACE_MOONCAKE_HASH_TOKENS);
      return -1;
    }
    out->prefix_blocks = self->hash_ids->len;
    out->prefix_ids = (const guint64 *) self->hash_ids->data;
  }
  if (!self->have_first) {
    self->have_first = TRUE;
    self->first_time = self->prev_time = t;
  }
  if (t < self->prev_time) {
    char buf[32];
    ema_trace_reader_error_col(
        &self->reader, key_column(self, "timestamp"), error, EMA_TRACE_ERROR_ORDER,
        "timestamp goes backwards: %s is earlier than line %" G_GUINT64_FORMAT,
        ema_trace_format_time(t, buf), self->prev_line);
    return -1;
  }
  if (!ema_trace_arrival_in_range(self->first_time, t)) {
    char buf[32];
    ema_trace_reader_error_col(&self->reader, key_column(self, "timestamp"), error,
                               EMA_TRACE_ERROR_PARSE,
                               "timestamp %s is more than %.0f s (about 146 years) after the first "
                               "request: past the last time the simulator can serve it",
                               ema_trace_format_time(t, buf), (double) EMA_TRACE_MAX_ARRIVAL / 1e9);
    return -1;
  }
  self->prev_time = t;
  self->prev_line = self->reader.line_no;
  out->arrival = t - self->first_time;
  out->id = self->row++;
  return 1;
}

static gboolean mooncake_next(EmaTraceSource *src, EmaRequestRecord *out, GError **error) {
  MooncakeSource *self = (MooncakeSource *) src;

  if (self->have_pending) {
    self->have_pending = FALSE;
    *out = self->pending;
    return TRUE;
  }
  return mooncake_read(self, out, error) > 0;
}

static void mooncake_finalize(EmaTraceSource *src) {
  MooncakeSource *self = (MooncakeSource *) src;

  ema_trace_reader_close(&self->reader);
  g_clear_object(&self->parser);
  g_clear_pointer(&self->hash_ids, g_array_unref);
}

static const EmaTraceSourceClass mooncake_class = {"mooncake", mooncake_next, mooncake_finalize};

EmaTraceSource *ema_trace_source_open_mooncake(const char *path, GError **error) {
  g_return_val_if_fail(path != NULL, NULL);

  MooncakeSource *self = ema_trace_source_alloc(&mooncake_class, sizeof *self);
  g_autoptr(EmaTraceSource) src = &self->base;
  if (!ema_trace_reader_open(&self->reader, path, EMA_TRACE_JSON_MAX_LINE, error))
    return NULL;
  self->parser = json_parser_new_immutable();
  self->hash_ids = g_array_new(FALSE, FALSE, sizeof(guint64));
  int got = mooncake_read(self, &self->pending, error);
  if (got < 0)
    return NULL;
  if (got == 0) {
    ema_trace_reader_error_at(&self->reader, 1, error, EMA_TRACE_ERROR_EMPTY,
                              "empty file: no records");
    return NULL;
  }
  self->have_pending = TRUE;
  return g_steal_pointer(&src);
}
