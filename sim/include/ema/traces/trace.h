/* trace.h: request sources for the serving engines. A source is pulled one
 * request at a time (ema_trace_source_next), so a week-long trace runs in
 * constant memory: file readers keep one line buffer, synthetic sources keep
 * a GSL generator and a few numbers.
 *
 * Three kinds of sources, all returning EmaTraceSource:
 * - file readers for the public LLM traces (Azure LLM inference CSV 2023 and
 *   2024, Vidur/Splitwise CSV, BurstGPT CSV, Mooncake JSONL) and length-only
 *   CSV files paired with a synthetic arrival process (see
 *   ../shared/traces/SOURCES.md for the files and their formats);
 * - synthetic sources: an arrival process (Poisson, Gamma, on/off, diurnal)
 *   plus a prompt-length and an output-length distribution;
 * - transformations that wrap any source: time window, rate scaling, request
 *   limit, time offset, round-robin split. They compose.
 *
 * Invariants every source keeps: arrivals never decrease from one record to
 * the next; prompt_tokens >= 1; once next() has returned FALSE it keeps
 * returning FALSE (with a copy of the same error if it failed). File sources
 * re-base time so that the first data row arrives at 0.
 *
 * Errors from the files are GErrors in EMA_TRACE_ERROR whose message reads
 * "FILE:LINE: problem" (the path as the caller gave it, lines from 1).
 * Randomness: each synthetic component owns a gsl_rng_mt19937 seeded from the
 * caller's 64-bit seed (mixed down to mt19937's 32-bit seed by splitmix64);
 * ema_trace_seed_derive() gives independent per-stream seeds, so the same
 * seed always gives the same requests. */
#pragma once

#include <glib.h>

#include "ema/core/event.h"

G_BEGIN_DECLS

#define EMA_TRACE_ERROR (ema_trace_error_quark())
GQuark ema_trace_error_quark(void);

typedef enum {
  EMA_TRACE_ERROR_IO,      /* cannot open or read the file */
  EMA_TRACE_ERROR_EMPTY,   /* the file has no header (or no data where data is needed) */
  EMA_TRACE_ERROR_HEADER,  /* the header lacks a column, or names one twice */
  EMA_TRACE_ERROR_PARSE,   /* a row is malformed (field count, number, range) */
  EMA_TRACE_ERROR_ORDER,   /* timestamps go backwards */
  EMA_TRACE_ERROR_INVALID, /* a parameter is out of range (rate <= 0, ...) */
} EmaTraceError;

/* One request. ARRIVAL is in ns from the source's time origin; ID is the
 * 0-based data-row index for file readers (skipped rows keep their index) and
 * the draw index for synthetic sources. The prompt's content identity, for
 * prefix caching: its first PREFIX_BLOCKS x PREFIX_UNIT_TOKENS tokens are
 * units of PREFIX_UNIT_TOKENS tokens whose ids are PREFIX_IDS (two requests
 * whose first k ids agree share the first k units: Mooncake hash_ids, 512
 * tokens each; ema_trace_shared_prefix); PREFIX_IDS stays valid until the
 * next call of ema_trace_source_next on the source; 0 and NULL: no identity
 * (the prompt shares nothing). */
typedef struct {
  EmaTime arrival;
  guint32 prompt_tokens;
  guint32 output_tokens;
  guint64 id;
  guint32 prefix_blocks;
  guint32 prefix_unit_tokens;
  const guint64 *prefix_ids;
} EmaRequestRecord;

/* The latest arrival a source may hand out: 2^62 ns, about 146 years,
 * half the simulator's clock (2^63 ns), so that every request can still
 * be served after it. A later one ends the source with an error
 * (EMA_TRACE_ERROR_PARSE), never a silent stop or an overflow. */
#define EMA_TRACE_MAX_ARRIVAL (G_GINT64_CONSTANT(1) << 62)

/* The unit of Mooncake's hash_ids. */
#define EMA_TRACE_MOONCAKE_HASH_TOKENS 512

typedef struct _EmaTraceSource EmaTraceSource;
typedef struct _EmaTraceArrivals EmaTraceArrivals;
typedef struct _EmaTraceLengths EmaTraceLengths;

/* ---- pulling requests ---------------------------------------------------- */

/* Returns TRUE and fills OUT, or FALSE at the end (ERROR unset) or on error
 * (ERROR set). Never allocates on the success path. */
gboolean ema_trace_source_next(EmaTraceSource *src, EmaRequestRecord *out, GError **error);
void ema_trace_source_free(EmaTraceSource *src);
G_DEFINE_AUTOPTR_CLEANUP_FUNC(EmaTraceSource, ema_trace_source_free)

/* Records returned so far by this source. */
guint64 ema_trace_source_get_count(const EmaTraceSource *src);
/* Rows the innermost reader skipped (BurstGPT failed requests). */
guint64 ema_trace_source_get_skipped(const EmaTraceSource *src);

/* ---- file readers --------------------------------------------------------- */

typedef enum {
  EMA_TRACE_FORMAT_AUTO,       /* sniffed from the first line */
  EMA_TRACE_FORMAT_AZURE,      /* TIMESTAMP,ContextTokens,GeneratedTokens */
  EMA_TRACE_FORMAT_VIDUR,      /* arrived_at,num_prefill_tokens,num_decode_tokens */
  EMA_TRACE_FORMAT_BURSTGPT,   /* Timestamp,...,Request tokens,Response tokens,... */
  EMA_TRACE_FORMAT_MOONCAKE,   /* JSONL {"timestamp","input_length","output_length","hash_ids"} */
  EMA_TRACE_FORMAT_LENGTHS,    /* num_prefill_tokens,num_decode_tokens,... (needs arrivals) */
  EMA_TRACE_FORMAT_VLLM_BENCH, /* vLLM benchmark --save-result JSON (needs arrivals) */
} EmaTraceFormat;

/* "auto", "azure", "vidur", "burstgpt", "mooncake", "lengths", "vllm-bench". */
const char *ema_trace_format_name(EmaTraceFormat format);
/* Error (EMA_TRACE_ERROR_INVALID) lists the valid names. */
gboolean ema_trace_format_from_name(const char *name, EmaTraceFormat *format, GError **error);
/* The format of the trace file PATH, from its first line (what
 * EMA_TRACE_FORMAT_AUTO opens it as). */
gboolean ema_trace_format_sniff(const char *path, EmaTraceFormat *format, GError **error);

/* Opens PATH in FORMAT with default options. LENGTHS needs an arrival
 * process, so it is refused here: use ema_trace_source_open_lengths(). */
EmaTraceSource *ema_trace_source_open(EmaTraceFormat format, const char *path, GError **error);

/* Azure LLM inference CSV, 2023 and 2024: TIMESTAMP is wall-clock text
 * "YYYY-MM-DD HH:MM:SS[.f…]" with up to 9 fractional digits and an optional
 * "+HH:MM"/"-HH:MM"/"Z" suffix (2024 files); arrival is exact to the ns. */
EmaTraceSource *ema_trace_source_open_azure(const char *path, GError **error);
/* Vidur/Splitwise CSV: arrived_at is decimal seconds, rounded to the
 * nearest ns from its decimal text (never through a double). */
EmaTraceSource *ema_trace_source_open_vidur(const char *path, GError **error);

typedef struct {
  gboolean keep_failed; /* keep rows with 0 response tokens (failed requests) */
} EmaTraceBurstGptOptions;
/* BurstGPT CSV (columns found by name; Timestamp in seconds). Failed requests
 * (0 response tokens) are skipped and counted unless OPTIONS->keep_failed.
 * OPTIONS may be NULL (defaults). */
EmaTraceSource *ema_trace_source_open_burstgpt(const char *path,
                                               const EmaTraceBurstGptOptions *options,
                                               GError **error);
/* Mooncake JSONL: one object per line; timestamp in ms (integer or real),
 * input_length, output_length, optional hash_ids (512-token blocks). */
EmaTraceSource *ema_trace_source_open_mooncake(const char *path, GError **error);
/* Length-only CSV (num_prefill_tokens, num_decode_tokens; ContextTokens and
 * GeneratedTokens are accepted too; other columns are ignored) read in order,
 * with arrivals drawn from ARRIVALS (taken over, even on error). At the end of the file,
 * CYCLE starts again from the first row; otherwise the source ends. */
EmaTraceSource *ema_trace_source_open_lengths(const char *path, EmaTraceArrivals *arrivals,
                                              gboolean cycle, GError **error);
/* The result JSON of vLLM's benchmark_serving.py --save-result (an object
 * with arrays input_lens and output_lens; requests with a non-empty entry in
 * errors are skipped). It holds no send times, so arrivals are drawn from
 * ARRIVALS (taken over, even on error); CYCLE as for lengths. A ShareGPT
 * dataset JSON (text, no token counts) is refused with a pointer to
 * pre-tokenized length CSVs. The file is read whole (at most
 * EMA_FILE_MAX_TEXT bytes) and then only its lengths are kept. */
EmaTraceSource *ema_trace_source_open_vllm_bench(const char *path, EmaTraceArrivals *arrivals,
                                                 gboolean cycle, GError **error);

/* What a vLLM benchmark result holds beyond its lengths: the load it ran
 * with and its measured summary figures (ema_trace_vllm_metric_names: vLLM's
 * own key names, times in ms; NAN where the file lacks one). */
#define EMA_TRACE_VLLM_N_METRICS 14
extern const char *const ema_trace_vllm_metric_names[EMA_TRACE_VLLM_N_METRICS];
typedef struct {
  double request_rate;     /* req/s; INFINITY: "inf", every request sent at once */
  double burstiness;       /* the gamma shape of inter-arrival times (1: Poisson) */
  guint64 max_concurrency; /* at most this many requests in flight; 0: null (no limit) */
  double measured[EMA_TRACE_VLLM_N_METRICS];
} EmaTraceVllmBench;
/* Reads those of the result JSON at PATH (absent or null keys: vLLM's
 * defaults, inf, 1 and no limit; an absent figure NAN), each number from its
 * text in the file, decimal only (not "0x10", nor 1e400, which json-glib reads
 * as infinity), max_concurrency and completed whole: request_rate in
 * [1e-9, 1e9] or "inf", burstiness in [1e-6, 1e6], max_concurrency in
 * [0, 1e7], the figures >= 0; else an error at the value's PATH:LINE:COL. */
gboolean ema_trace_vllm_bench_read(const char *path, EmaTraceVllmBench *out, GError **error);
/* The format of the trace file PATH from its first bytes: a JSON object
 * with vLLM's benchmark keys is vllm-bench, other JSON lines Mooncake, a
 * CSV header by its column names. */
gboolean ema_trace_format_sniff(const char *path, EmaTraceFormat *format, GError **error);

/* A source over a copy of N records (arrivals must not decrease); for tests
 * and hand-written workloads. */
EmaTraceSource *ema_trace_source_new_array(const EmaRequestRecord *records, gsize n);

/* ---- synthetic arrival processes ------------------------------------------ */

/* A seed for the named stream of SEED (splitmix64 of SEED and a hash of
 * STREAM): "arrivals", "prompt", "output", "tenant0", ... */
guint64 ema_trace_seed_derive(guint64 seed, const char *stream);

/* Rates are requests per second; durations are EmaTime. Each process starts
 * at time 0 and returns increasing arrival times. */
EmaTraceArrivals *ema_trace_arrivals_new_poisson(double rate, guint64 seed, GError **error);
/* Every arrival at time 0: a load sent at once (vLLM's --request-rate inf),
 * or the unused times of a closed loop. */
EmaTraceArrivals *ema_trace_arrivals_new_at_once(void);
/* Gamma inter-arrival times with mean 1/RATE and coefficient of variation CV
 * (shape 1/CV^2, scale CV^2/RATE); CV = 1 is Poisson, CV > 1 is bursty. */
EmaTraceArrivals *ema_trace_arrivals_new_gamma(double rate, double cv, guint64 seed,
                                               GError **error);
/* Alternating on and off periods with exponential durations of means MEAN_ON
 * and MEAN_OFF, Poisson arrivals at RATE_ON (> 0) and RATE_OFF (>= 0) inside
 * them; starts in an on period. A burst must hold at least 0.001 requests on
 * average (RATE_ON x MEAN_ON): the periods are drawn one by one. */
EmaTraceArrivals *ema_trace_arrivals_new_onoff(double rate_on, double rate_off, EmaTime mean_on,
                                               EmaTime mean_off, guint64 seed, GError **error);
/* Non-homogeneous Poisson with rate(t) = MIN + (MAX - MIN) * (1 - cos(2 pi t /
 * PERIOD)) / 2: MIN at t = 0, MAX at PERIOD/2 (Lewis-Shedler thinning). */
EmaTraceArrivals *ema_trace_arrivals_new_diurnal(double rate_min, double rate_max, EmaTime period,
                                                 guint64 seed, GError **error);
/* Piecewise-constant Poisson: RATES[k] (>= 0) requests per second for
 * DURATIONS[k]; the last phase lasts on (its rate must be > 0). Load that
 * shifts between tenants is phases with swapped rates. */
EmaTraceArrivals *ema_trace_arrivals_new_phases(const double *rates, const EmaTime *durations,
                                                guint n, guint64 seed, GError **error);
EmaTime ema_trace_arrivals_next(EmaTraceArrivals *arrivals);
void ema_trace_arrivals_free(EmaTraceArrivals *arrivals);
G_DEFINE_AUTOPTR_CLEANUP_FUNC(EmaTraceArrivals, ema_trace_arrivals_free)

/* ---- JSON ----------------------------------------------------------------- */

/* The deepest JSON nesting a text may have (json-glib's parser recurses once per level; a trace
 * record needs 2, summary.json 5). */
#define EMA_TRACE_JSON_MAX_DEPTH 32
/* The problem with TEXT that json-glib would not report safely (newly allocated), or NULL:
 * nesting deeper than EMA_TRACE_JSON_MAX_DEPTH, an integer outside gint64, a NUL byte, bytes
 * that are not UTF-8 (of which json-glib names no place), text after a first value that is an
 * object or array (json-glib keeps the first and drops the rest), a key given twice in one
 * object (json-glib keeps the last value; compared decoded, "\u0061" is "a"; objects side by
 * side or one in another may share keys). Strings are skipped (brackets and digits in them are
 * text). On a problem, *AT (may be NULL) is its byte offset: a repeated key's, its second
 * opening quote. */
char *ema_trace_json_scan(const char *text, gsize len, gsize *at) G_GNUC_WARN_UNUSED_RESULT;
/* "LINE:COLUMN" (both from 1) of byte AT of TEXT, for messages. */
char *ema_trace_json_line_col(const char *text, gsize at);
/* json-glib's MESSAGE about the text of PATH as "PATH:LINE:COL: what" (json-glib words it
 * "<data>:LINE:COL: what", the place in the text it was given), or "PATH: invalid JSON: MESSAGE"
 * where it names no place. */
char *ema_trace_json_error_message(const char *path, const char *message);

/* ---- length distributions ------------------------------------------------- */

/* Draws are rounded to the nearest integer and clamped to [1, 2^32-1] (or to
 * the bounds set by ema_trace_lengths_set_bounds()). */
EmaTraceLengths *ema_trace_lengths_new_fixed(guint32 tokens, GError **error);
/* Uniform integers in [MIN, MAX], both included. */
EmaTraceLengths *ema_trace_lengths_new_uniform(guint32 min, guint32 max, guint64 seed,
                                               GError **error);
/* Lognormal given the MEDIAN and the SIGMA of the log: mu = ln(MEDIAN). */
EmaTraceLengths *ema_trace_lengths_new_lognormal(double median, double sigma, guint64 seed,
                                                 GError **error);
/* Lognormal given the MEAN and the SIGMA of the log: mu = ln(MEAN) - SIGMA^2/2. */
EmaTraceLengths *ema_trace_lengths_new_lognormal_mean(double mean, double sigma, guint64 seed,
                                                      GError **error);

typedef enum {
  EMA_TRACE_COLUMN_PROMPT, /* num_prefill_tokens (or ContextTokens) */
  EMA_TRACE_COLUMN_OUTPUT, /* num_decode_tokens (or GeneratedTokens) */
} EmaTraceLengthColumn;
/* Resamples (uniformly, with replacement) one COLUMN of a length-only CSV,
 * which is loaded into memory (4 bytes a row); rows are checked as in
 * ema_trace_source_open_lengths(). */
EmaTraceLengths *ema_trace_lengths_new_resample(const char *path, EmaTraceLengthColumn column,
                                                guint64 seed, GError **error);
/* Clamp later draws to [MIN, MAX] (1 <= MIN <= MAX). */
void ema_trace_lengths_set_bounds(EmaTraceLengths *lengths, guint32 min, guint32 max);
guint32 ema_trace_lengths_draw(EmaTraceLengths *lengths);
void ema_trace_lengths_free(EmaTraceLengths *lengths);
G_DEFINE_AUTOPTR_CLEANUP_FUNC(EmaTraceLengths, ema_trace_lengths_free)

/* ---- synthetic sources ---------------------------------------------------- */

/* ARRIVALS + PROMPT and OUTPUT length distributions (all taken over). The
 * source ends after MAX_REQUESTS records (0: no limit) or at the first
 * arrival >= DURATION (0: no limit); with neither it never ends. */
EmaTraceSource *ema_trace_source_new_synthetic(EmaTraceArrivals *arrivals, EmaTraceLengths *prompt,
                                               EmaTraceLengths *output, guint64 max_requests,
                                               EmaTime duration);
/* Shortcut: Poisson arrivals at RATE seeded with
 * ema_trace_seed_derive(SEED, "arrivals"); PROMPT and OUTPUT are taken over,
 * even on error. */
EmaTraceSource *ema_trace_source_new_poisson(double rate, EmaTraceLengths *prompt,
                                             EmaTraceLengths *output, guint64 max_requests,
                                             EmaTime duration, guint64 seed, GError **error);

/* ---- transformations (each takes SRC over and returns the wrapper) ---------- */

/* Keeps the records with START <= arrival < END (EMA_TIME_NEVER: no end),
 * re-based so that START becomes 0. Stops reading at the first arrival >= END. */
EmaTraceSource *ema_trace_window(EmaTraceSource *src, EmaTime start, EmaTime end);
/* Divides every arrival (hence every inter-arrival time) by FACTOR > 0,
 * rounding to the nearest ns: FACTOR = 8 replays the trace 8x faster. */
EmaTraceSource *ema_trace_scale_rate(EmaTraceSource *src, double factor);
/* Ends after MAX_REQUESTS records. */
EmaTraceSource *ema_trace_limit(EmaTraceSource *src, guint64 max_requests);
/* Keeps the records whose position in SRC is INDEX modulo WAYS (0 <= INDEX <
 * WAYS): what replica INDEX of WAYS receives from a round-robin router. */
EmaTraceSource *ema_trace_split(EmaTraceSource *src, guint64 ways, guint64 index);
/* Adds OFFSET >= 0 to every arrival (per-tenant shift). */
EmaTraceSource *ema_trace_offset(EmaTraceSource *src, EmaTime offset);
/* Gives every record a shared prefix of TOKENS > 0 tokens (or its whole
 * prompt, if shorter), one of GROUPS > 0 distinct prefixes, round robin
 * over the records (record k gets prefix k mod GROUPS): a system prompt or
 * few-shot header that GuideLLM-style benchmarks prepend. It replaces any
 * identity the records had. */
EmaTraceSource *ema_trace_shared_prefix(EmaTraceSource *src, guint32 tokens, guint32 groups);

G_END_DECLS
