/* vllm.c: the vLLM benchmark result reader (format "vllm-bench"): the JSON
 * that vLLM's benchmarks/benchmark_serving.py writes with --save-result.
 *
 * What the format holds: one object; "input_lens"[i] is request i's prompt
 * length and "output_lens"[i] the tokens it generated, both in the
 * benchmark's tokenizer (the model's, "tokenizer_id"); "errors"[i], when
 * present, is "" for a request that succeeded and the error text otherwise
 * (a failed request's output_lens entry is 0, not what it asked for, so such
 * requests are skipped and counted as skipped). Other keys (ttfts, itls,
 * generated_texts, the summary figures) are measurements, not workload, and
 * are not workload: ema_trace_vllm_bench_read() reads the load the benchmark
 * ran with (request_rate, "inf" or a number; burstiness; max_concurrency) and
 * its summary figures, to replay it with that load and set the simulated
 * figures beside the measured ones. What it lacks: per-request send times
 * (the benchmark draws them from --request-rate / --burstiness and does not
 * save them), prefix identities and tenants; so the requests are replayed in
 * file order with arrivals drawn like the benchmark's.
 *
 * The ShareGPT dataset JSON (an array of {"id", "conversations": [{"from":
 * "human"|"gpt", "value": text}, ...]}), and Alpaca's (an array of
 * {"instruction", "input", "output"}), are recognised and refused: they hold
 * text, and vLLM's benchmark tokenizes the first human turn and the gpt reply
 * with the model's tokenizer, which EMA does not have. Its lengths,
 * tokenized for LLaMA and OPT, are length-only CSVs (format: lengths) in
 * ../shared/traces/lengths/; no token count is ever guessed from bytes.
 *
 * Invariants: the file is a regular file of at most EMA_FILE_MAX_TEXT bytes,
 * scanned (nesting depth, 64-bit integers, keys given twice) before
 * json-glib parses it; after the open only the two length arrays (8 bytes a
 * request) are held; input lengths are in [1, 2^32-1], output lengths in
 * [0, 2^32-1], each read from its text in the file as Mooncake's counts and
 * the CSV readers' are (ema_trace_parse_int: "1e3", "1.5" or "0x10" is no
 * integer, "12.0" is 12), not from json-glib's value, which takes 1e3 for
 * 1000 and 0x10 for 16; so is every number ema_trace_vllm_bench_read() reads
 * (max_concurrency and completed as integers; request_rate, burstiness and the
 * other figures by ema_csv_parse_decimal: decimal and finite, not "0x10" or
 * 1e400, which json-glib reads as infinity), each within its range
 * (request_rate in [1e-9, 1e9] req/s or the string "inf", which vLLM writes
 * for its default; burstiness in [1e-6, 1e6]; max_concurrency in [0, 1e7];
 * the figures >= 0); no object holds a key twice (the scan refuses it:
 * json-glib would keep the last value); errors name the file and the line:col
 * (syntax, a repeated key, a length item: "input_lens item 1: not an
 * integer: '1e3'", a number: "'burstiness': not a finite decimal number:
 * '0x1'", its text quoted by its first 40 bytes) or the key and index (other
 * values: errors[2]). */
#include <math.h>
#include <string.h>

#include "ema/core/file.h"
#include "private.h"

typedef struct {
  EmaTraceSource base;
  GArray *prompt, *output; /* guint32, one per kept request */
  guint next;
  EmaTraceArrivals *arrivals;
  gboolean cycle;
} VllmSource;

static void vllm_error(GError **error, EmaTraceError code, const char *path, const char *format,
                       ...) G_GNUC_PRINTF(4, 5);
static void vllm_error(GError **error, EmaTraceError code, const char *path, const char *format,
                       ...) {
  va_list args;
  va_start(args, format);
  g_autofree char *message = g_strdup_vprintf(format, args);
  va_end(args);
  g_set_error(error, EMA_TRACE_ERROR, code, "%s: %s", path, message);
}

/* The same located at byte AT of TEXT (the file's): "PATH:LINE:COL: message". */
static void vllm_error_at(GError **error, EmaTraceError code, const char *path, const char *text,
                          gsize at, const char *format, ...) G_GNUC_PRINTF(6, 7);
static void vllm_error_at(GError **error, EmaTraceError code, const char *path, const char *text,
                          gsize at, const char *format, ...) {
  va_list args;
  va_start(args, format);
  g_autofree char *message = g_strdup_vprintf(format, args);
  va_end(args);
  g_autofree char *where = ema_trace_json_line_col(text, at);
  g_set_error(error, EMA_TRACE_ERROR, code, "%s:%s: %s", path, where, message);
}

/* PATH read (its text into *TEXT and *LEN, kept for the places and the digits of values) and
 * parsed (its root is not NULL), or NULL with the error located at the file and LINE:COL. */
static JsonParser *parse_file(const char *path, char **text_out, gsize *len_out, GError **error) {
  g_autofree char *text = NULL;
  gsize len = 0, at = 0;
  GError *inner = NULL;
  if (!ema_file_read_regular(path, EMA_FILE_MAX_TEXT, &text, &len, &inner)) {
    g_set_error_literal(error, EMA_TRACE_ERROR, EMA_TRACE_ERROR_IO, inner->message);
    g_error_free(inner);
    return NULL;
  }
  const char *not_text = ema_trace_not_text(text, len);
  if (not_text != NULL) {
    g_set_error(error, EMA_TRACE_ERROR, EMA_TRACE_ERROR_PARSE, "%s:1: %s", path, not_text);
    return NULL;
  }
  g_autofree char *problem = ema_trace_json_scan(text, len, &at);
  if (problem != NULL) {
    g_autofree char *where = ema_trace_json_line_col(text, at);
    g_set_error(error, EMA_TRACE_ERROR, EMA_TRACE_ERROR_PARSE, "%s:%s: %s", path, where, problem);
    return NULL;
  }
  g_autoptr(JsonParser) parser = json_parser_new_immutable();
  g_autoptr(GError) jerr = NULL;
  if (!json_parser_load_from_data(parser, text, (gssize) len, &jerr)) {
    g_autofree char *message = ema_trace_json_error_message(path, jerr->message);
    g_set_error_literal(error, EMA_TRACE_ERROR, EMA_TRACE_ERROR_PARSE, message);
    return NULL;
  }
  if (json_parser_get_root(parser) == NULL) {
    vllm_error(error, EMA_TRACE_ERROR_EMPTY, path, "empty file: no JSON value");
    return NULL;
  }
  if (text_out != NULL) {
    *text_out = g_steal_pointer(&text);
    *len_out = len;
  }
  return g_steal_pointer(&parser);
}

static JsonArray *get_array(JsonObject *obj, const char *key, const char *path, GError **error) {
  JsonNode *node = json_object_get_member(obj, key);
  if (node == NULL || !JSON_NODE_HOLDS_ARRAY(node)) {
    vllm_error(error, EMA_TRACE_ERROR_PARSE, path,
               node == NULL ? "missing key '%s' (not a vLLM benchmark result: "
                              "benchmark_serving.py --save-result)"
                            : "'%s' is not an array",
               key);
    return NULL;
  }
  return json_node_get_array(node);
}

/* The items of a length array (input_lens or output_lens) as the file writes them: json-glib
 * keeps no places, and takes 1e3 for 1000 and 0x10 for 16. */
typedef struct {
  const char *key;
  gint64 min;
  const char *text;          /* the file's */
  gsize value_at, value_len; /* the array's text */
  gsize next;                /* ema_trace_json_item's place in it */
} Lengths;

/* Where the text of TEXT's (LEN bytes: the file's) top-level member KEY, a value json-glib has
 * read, is: *VALUE_AT (of TEXT) and *VALUE_LEN; else an error (json-glib read it where the walk
 * of the text finds none). */
static gboolean member_text(const char *key, const char *text, gsize len, const char *path,
                            gsize *value_at, gsize *value_len, GError **error) {
  gsize key_at;
  /* a byte-order mark before the object, which json-glib reads past */
  gsize bom = ema_file_bom_length(text, len);
  if (!ema_trace_json_member(text + bom, len - bom, key, &key_at, value_at, value_len)) {
    vllm_error(error, EMA_TRACE_ERROR_PARSE, path,
               "'%s': its value's text is not found in the file", key);
    return FALSE;
  }
  *value_at += bom;
  return TRUE;
}

/* The text of TEXT's (LEN bytes) top-level member KEY, an array json-glib has read, into *L, its
 * items at least MIN; else an error (member_text's). */
static gboolean lengths_open(Lengths *l, const char *key, gint64 min, const char *text, gsize len,
                             const char *path, GError **error) {
  *l = (Lengths){key, min, text, 0, 0, 0};
  return member_text(key, text, len, path, &l->value_at, &l->value_len, error);
}

/* Item I of L (the next one, its text at *ITEM_AT of the file, *ITEM_LEN bytes); else an error:
 * fewer items in the text than json-glib counted. */
static gboolean lengths_item(Lengths *l, guint i, const char *path, gsize *item_at, gsize *item_len,
                             GError **error) {
  if (!ema_trace_json_item(l->text + l->value_at, l->value_len, &l->next, item_at, item_len)) {
    vllm_error_at(error, EMA_TRACE_ERROR_PARSE, path, l->text, l->value_at,
                  "'%s': its item %u could not be read from the file's text", l->key, i);
    return FALSE;
  }
  *item_at += l->value_at;
  return TRUE;
}

/* The token count written at ITEM_AT (ITEM_LEN bytes) of L's text, item I, into *VALUE, read as
 * the CSV readers and Mooncake's read one (ema_trace_parse_int: digits, then a point and zeros
 * at most; not "1e3", "1.5", "0x10" or "\"5\""), at least L's min; else an error at the item,
 * in Mooncake's words ("input_lens item 1: not an integer: '1e3'"). */
static gboolean lengths_value(const Lengths *l, guint i, gsize item_at, gsize item_len,
                              const char *path, guint32 *value, GError **error) {
  gint64 v;
  const char *problem = ema_trace_parse_int(l->text + item_at, item_len, &v);
  if (problem != NULL) {
    g_autofree char *quoted = ema_trace_quote(l->text + item_at, item_len);
    vllm_error_at(error, EMA_TRACE_ERROR_PARSE, path, l->text, item_at, "%s item %u: %s: %s",
                  l->key, i, problem, quoted);
    return FALSE;
  }
  if (v < l->min) {
    vllm_error_at(error, EMA_TRACE_ERROR_PARSE, path, l->text, item_at,
                  "%s item %u must be %s, found %" G_GINT64_FORMAT, l->key, i,
                  l->min == 1 ? "> 0" : ">= 0", v);
    return FALSE;
  }
  if (v > G_MAXUINT32) {
    vllm_error_at(error, EMA_TRACE_ERROR_PARSE, path, l->text, item_at,
                  "%s item %u must be <= %u, found %" G_GINT64_FORMAT, l->key, i, G_MAXUINT32, v);
    return FALSE;
  }
  *value = (guint32) v;
  return TRUE;
}

/* TRUE if errors[I] marks request I as failed (a non-empty string; null and
 * "" mean success). */
static gboolean failed(JsonArray *errors, guint i, const char *path, gboolean *out,
                       GError **error) {
  JsonNode *node = json_array_get_element(errors, i);
  if (JSON_NODE_HOLDS_NULL(node)) {
    *out = FALSE;
    return TRUE;
  }
  if (!JSON_NODE_HOLDS_VALUE(node) || json_node_get_value_type(node) != G_TYPE_STRING) {
    vllm_error(error, EMA_TRACE_ERROR_PARSE, path, "errors[%u] is not a string", i);
    return FALSE;
  }
  *out = json_node_get_string(node)[0] != '\0';
  return TRUE;
}

const char *ema_trace_text_dataset_advice(const char *key) {
  if (strcmp(key, "conversations") == 0)
    return EMA_TRACE_TEXT_DATASET;
  if (strcmp(key, "instruction") == 0)
    return EMA_TRACE_ALPACA_DATASET;
  return NULL;
}

/* The advice for ROOT when it is a dataset of text (an array whose first record is ShareGPT's or
 * Alpaca's), else NULL. */
static const char *text_dataset(JsonNode *root) {
  if (!JSON_NODE_HOLDS_ARRAY(root) || json_array_get_length(json_node_get_array(root)) == 0)
    return NULL;
  JsonNode *first = json_array_get_element(json_node_get_array(root), 0);
  if (!JSON_NODE_HOLDS_OBJECT(first))
    return NULL;
  g_autoptr(GList) members = json_object_get_members(json_node_get_object(first));
  for (GList *m = members; m != NULL; m = m->next)
    if (ema_trace_text_dataset_advice(m->data) != NULL)
      return ema_trace_text_dataset_advice(m->data);
  return NULL;
}

/* Fills SELF's arrays from the parsed ROOT of TEXT (LEN bytes), the file's. */
static gboolean load(VllmSource *self, JsonNode *root, const char *text, gsize len,
                     const char *path, GError **error) {
  const char *advice = text_dataset(root);
  if (advice != NULL) {
    vllm_error(error, EMA_TRACE_ERROR_INVALID, path, "%s", advice);
    return FALSE;
  }
  if (!JSON_NODE_HOLDS_OBJECT(root)) {
    vllm_error(error, EMA_TRACE_ERROR_PARSE, path,
               "not a JSON object (a vLLM benchmark result: benchmark_serving.py --save-result)");
    return FALSE;
  }
  JsonObject *obj = json_node_get_object(root);
  JsonArray *inputs = get_array(obj, "input_lens", path, error);
  JsonArray *outputs = inputs ? get_array(obj, "output_lens", path, error) : NULL;
  if (outputs == NULL)
    return FALSE;
  guint n = json_array_get_length(inputs);
  if (json_array_get_length(outputs) != n) {
    vllm_error(error, EMA_TRACE_ERROR_PARSE, path, "input_lens has %u entries but output_lens %u",
               n, json_array_get_length(outputs));
    return FALSE;
  }
  JsonArray *errors = NULL;
  if (json_object_has_member(obj, "errors")) {
    errors = get_array(obj, "errors", path, error);
    if (errors == NULL)
      return FALSE;
    if (json_array_get_length(errors) != n) {
      vllm_error(error, EMA_TRACE_ERROR_PARSE, path, "input_lens has %u entries but errors %u", n,
                 json_array_get_length(errors));
      return FALSE;
    }
  }
  /* the lengths from their text, as Mooncake's counts are: json-glib's values are doubles */
  Lengths in, out;
  if (!lengths_open(&in, "input_lens", 1, text, len, path, error) ||
      !lengths_open(&out, "output_lens", 0, text, len, path, error))
    return FALSE;
  for (guint i = 0; i < n; i++) {
    guint32 prompt, output;
    gsize in_at, in_len, out_at, out_len;
    gboolean skip = FALSE;
    if (!lengths_item(&in, i, path, &in_at, &in_len, error) ||
        !lengths_item(&out, i, path, &out_at, &out_len, error))
      return FALSE;
    if (errors != NULL && !failed(errors, i, path, &skip, error))
      return FALSE;
    if (skip) {
      self->base.skipped++;
      continue;
    }
    if (!lengths_value(&in, i, in_at, in_len, path, &prompt, error) ||
        !lengths_value(&out, i, out_at, out_len, path, &output, error))
      return FALSE;
    g_array_append_val(self->prompt, prompt);
    g_array_append_val(self->output, output);
  }
  if (self->prompt->len == 0) {
    vllm_error(error, EMA_TRACE_ERROR_EMPTY, path, "no requests (input_lens is empty%s)",
               n > 0 ? " or every request failed" : "");
    return FALSE;
  }
  return TRUE;
}

static gboolean vllm_next(EmaTraceSource *src, EmaRequestRecord *out, GError **error) {
  VllmSource *self = (VllmSource *) src;
  (void) error;

  if (self->next == self->prompt->len) {
    if (!self->cycle)
      return FALSE;
    self->next = 0;
  }
  out->id = src->count;
  out->arrival = ema_trace_arrivals_next(self->arrivals);
  out->prompt_tokens = g_array_index(self->prompt, guint32, self->next);
  out->output_tokens = g_array_index(self->output, guint32, self->next);
  out->prefix_blocks = 0;
  out->prefix_unit_tokens = 0;
  out->prefix_ids = NULL;
  self->next++;
  return TRUE;
}

static void vllm_finalize(EmaTraceSource *src) {
  VllmSource *self = (VllmSource *) src;
  g_clear_pointer(&self->prompt, g_array_unref);
  g_clear_pointer(&self->output, g_array_unref);
  ema_trace_arrivals_free(self->arrivals);
}

static const EmaTraceSourceClass vllm_class = {"vllm-bench", vllm_next, vllm_finalize};

EmaTraceSource *ema_trace_source_open_vllm_bench(const char *path, EmaTraceArrivals *arrivals,
                                                 gboolean cycle, GError **error) {
  g_return_val_if_fail(path != NULL && arrivals != NULL, NULL);

  VllmSource *self = ema_trace_source_alloc(&vllm_class, sizeof *self);
  g_autoptr(EmaTraceSource) src = &self->base;
  self->arrivals = arrivals;
  self->cycle = cycle;
  self->prompt = g_array_new(FALSE, FALSE, sizeof(guint32));
  self->output = g_array_new(FALSE, FALSE, sizeof(guint32));

  g_autofree char *text = NULL;
  gsize len = 0;
  g_autoptr(JsonParser) parser = parse_file(path, &text, &len, error);
  if (parser == NULL)
    return NULL;
  if (!load(self, json_parser_get_root(parser), text, len, path, error))
    return NULL;
  return g_steal_pointer(&src);
}

const char *const ema_trace_vllm_metric_names[EMA_TRACE_VLLM_N_METRICS] = {
    "mean_ttft_ms", "median_ttft_ms", "p99_ttft_ms",        "mean_tpot_ms",      "median_tpot_ms",
    "p99_tpot_ms",  "mean_itl_ms",    "median_itl_ms",      "p99_itl_ms",        "mean_e2el_ms",
    "p99_e2el_ms",  "completed",      "request_throughput", "output_throughput",
};

/* What a number of the result may be: at least MIN and at most MAX (both finite), whole if
 * INTEGER; the string "inf" too (INFINITY) if INF_OK. */
typedef struct {
  double min, max;
  gboolean integer, inf_ok;
} NumberRule;

/* vLLM's load within the bounds a trace's own arrivals take (tenant.c: rate in [1e-9, 1e9]
 * req/s, cv in [1e-3, 1e3], so burstiness = 1 / cv^2 in [1e-6, 1e6]); max_concurrency a count
 * of clients (0, or null: no limit); a measured figure (ms, req/s, tok/s, a count) >= 0. */
static const NumberRule rate_rule = {1e-9, 1e9, FALSE, TRUE};
static const NumberRule burstiness_rule = {1e-6, 1e6, FALSE, FALSE};
static const NumberRule concurrency_rule = {0, 1e7, TRUE, FALSE};
static const NumberRule figure_rule = {0, G_MAXDOUBLE, FALSE, FALSE};
static const NumberRule count_rule = {0, 9007199254740992.0 /* 2^53: exact */, TRUE, FALSE};

/* OBJ's member KEY (its text in TEXT, LEN bytes, the file's) as RULE allows into *OUT: absent or
 * null leaves *OUT; a number is read from its text as the CSV readers read one, not from
 * json-glib's double (which takes 1e3 for an integer, 0x10 for 16 and 1e400 for infinity): an
 * integer by ema_trace_parse_int, any other by ema_csv_parse_decimal (decimal only: no
 * hexadecimal, inf or nan) and finite; else an error at the value's line:col quoting its text
 * (its first EMA_FILE_QUOTE_MAX bytes). */
static gboolean get_number(JsonObject *obj, const char *key, const NumberRule *rule,
                           const char *text, gsize len, const char *path, double *out,
                           GError **error) {
  JsonNode *node = json_object_get_member(obj, key);
  gsize at, value_len;
  double v;
  if (node == NULL || JSON_NODE_HOLDS_NULL(node))
    return TRUE;
  if (!member_text(key, text, len, path, &at, &value_len, error))
    return FALSE;
  g_autofree char *quoted = ema_trace_quote(text + at, value_len);
  GType type = JSON_NODE_HOLDS_VALUE(node) ? json_node_get_value_type(node) : G_TYPE_INVALID;
  if (rule->inf_ok && type == G_TYPE_STRING && strcmp(json_node_get_string(node), "inf") == 0) {
    *out = INFINITY;
    return TRUE;
  }
  if (type != G_TYPE_INT64 && type != G_TYPE_DOUBLE) {
    vllm_error_at(error, EMA_TRACE_ERROR_PARSE, path, text, at, "'%s' is not a number%s: %s", key,
                  rule->inf_ok ? " or \"inf\"" : "", quoted);
    return FALSE;
  }
  if (rule->integer) {
    gint64 n;
    const char *problem = ema_trace_parse_int(text + at, value_len, &n);
    if (problem != NULL) {
      vllm_error_at(error, EMA_TRACE_ERROR_PARSE, path, text, at, "'%s': %s: %s", key, problem,
                    quoted);
      return FALSE;
    }
    v = (double) n;
  } else {
    g_autofree char *digits = g_strndup(text + at, value_len); /* NUL-terminated */
    char *end;
    v = ema_csv_parse_decimal(digits, &end);
    if (end == digits || *end != '\0' || !isfinite(v)) {
      vllm_error_at(error, EMA_TRACE_ERROR_PARSE, path, text, at,
                    "'%s': not a finite decimal number: %s", key, quoted);
      return FALSE;
    }
  }
  if (v < rule->min || v > rule->max) {
    g_autofree char *range = rule->max == G_MAXDOUBLE
                                 ? g_strdup_printf(">= %g", rule->min)
                                 : g_strdup_printf("in [%g, %g]", rule->min, rule->max);
    vllm_error_at(error, EMA_TRACE_ERROR_PARSE, path, text, at, "'%s' must be %s%s, found %s", key,
                  range, rule->inf_ok ? " or \"inf\"" : "", quoted);
    return FALSE;
  }
  *out = v;
  return TRUE;
}

gboolean ema_trace_vllm_bench_read(const char *path, EmaTraceVllmBench *out, GError **error) {
  g_return_val_if_fail(path != NULL && out != NULL, FALSE);

  g_autofree char *text = NULL;
  gsize len = 0;
  g_autoptr(JsonParser) parser = parse_file(path, &text, &len, error);
  double concurrency = 0;
  if (parser == NULL)
    return FALSE;
  JsonNode *root = json_parser_get_root(parser);
  const char *advice = text_dataset(root);
  if (advice != NULL) {
    vllm_error(error, EMA_TRACE_ERROR_INVALID, path, "%s", advice);
    return FALSE;
  }
  if (!JSON_NODE_HOLDS_OBJECT(root)) {
    vllm_error(error, EMA_TRACE_ERROR_PARSE, path,
               "not a JSON object (a vLLM benchmark result: benchmark_serving.py --save-result)");
    return FALSE;
  }
  JsonObject *obj = json_node_get_object(root);
  out->request_rate = INFINITY; /* vLLM's default --request-rate */
  out->burstiness = 1;
  out->max_concurrency = 0;
  for (guint i = 0; i < EMA_TRACE_VLLM_N_METRICS; i++)
    out->measured[i] = NAN;
  if (!get_number(obj, "request_rate", &rate_rule, text, len, path, &out->request_rate, error) ||
      !get_number(obj, "burstiness", &burstiness_rule, text, len, path, &out->burstiness, error) ||
      !get_number(obj, "max_concurrency", &concurrency_rule, text, len, path, &concurrency, error))
    return FALSE;
  out->max_concurrency = (guint64) concurrency;
  for (guint i = 0; i < EMA_TRACE_VLLM_N_METRICS; i++) {
    const char *name = ema_trace_vllm_metric_names[i];
    const NumberRule *rule = strcmp(name, "completed") == 0 ? &count_rule : &figure_rule;
    if (!get_number(obj, name, rule, text, len, path, &out->measured[i], error))
      return FALSE;
  }
  return TRUE;
}
