/* profile.h: a GPU's measured operator times (hwmodels/profiles/<gpu>/, the
 * format of hwmodels/profiles/README.md), loaded once per GPU into interpolation tables that
 * the step-time model (steptime.h) reads.
 *
 * A profile directory holds profile.yaml (provenance, `tables:` naming the
 * CSV files present, and optionally `import:` entries that convert a public
 * data set at load time; see hwmodels/README.md) and the CSV files. Every
 * table becomes a set of curves: rows with the same shape key (a GEMM's
 * k, n and dtype; an attention table's heads, head_dim and dtype; ...) form
 * one surface t(outer, x), x the operator's size (tokens, context, bytes)
 * and outer a second size where the table has one (decode batch, prefill
 * prior context, MoE experts), else a single outer value.
 *
 * Interpolation of a curve t(x), x_1 < ... < x_n (the same rule along outer
 * between the curves of the two bracketing outer values):
 *   x = x_i                 t_i (exact at grid points)
 *   x_i < x < x_i+1         linear between t_i and t_i+1
 *   x < x_1                 t_1 (a smaller operator is not slower; bounded
 *                           below by the smallest measured one)
 *   x > x_n                 t_n x / x_n: proportional to the work past the
 *                           grid, which is what a compute- or memory-bound
 *                           kernel does where its fixed cost is small at the
 *                           grid's end; 0 < x_n, so this never falls below t_n.
 *                           Decode attention (outer the batch, x the context)
 *                           instead: t_n + (x - x_n) s, s the last segment's
 *                           slope, at least outer / (2 R) and at most t_n / x_n,
 *                           R the median over the surface's curves of the
 *                           marginal rate of their last rising segment (outer
 *                           x context per us). Its tables stop at a budget of
 *                           tokens per step (AIConfigurator's: batch x context
 *                           about 65k), where a large batch's fixed part is
 *                           still most of the time and proportional would
 *                           scale it too (H200, batch 256 at context 1,023:
 *                           396 us a layer, 57% of HBM bandwidth). Held out
 *                           past a 16k-token budget in those tables (A100,
 *                           H100, H200, B200, GB200: experiments/fidelity/
 *                           decode-past-grid), the median error is 6-14%
 *                           (proportional: 73-103%, always long); the floor
 *                           keeps a flat last segment (noise, or the running
 *                           maximum below) from streaming for free. Past its
 *                           largest batch, the same along the last two curves
 *                           at x (floor x / (2 R)): held out, median 6-7%
 *                           against 46-64% (always long) for proportional
 * At load, each curve's times are made non-decreasing in x (running
 * maximum): a measured dip is noise, and the step-time model's
 * monotonicity rests on it. A GEMM curve imported from a public data set
 * (`import:`) keeps instead the points that no larger size beats, linear
 * between them (its lower monotone envelope): a slow kernel choice at
 * some sizes is the profiled library's, not the engine's, and a running
 * maximum would carry it to every larger size. Any other imported curve
 * (attention, MoE, all-reduce) first drops each point more than 1.5 times
 * a larger size's (a spike of its table, such as a warm-up first point),
 * then takes its running maximum. A shape key that a table does not hold is not
 * interpolated across, except five derived shapes: a GEMM on an AIConfigurator (k, n) grid
 * (bilinear in k and n between the grid's own rows, also where a data set of higher precedence
 * holds one of those four shapes); an elementwise operator at a width no table has, from the
 * nearest width's curve at the same elements (its point at T tokens of width W' is the one at T W'
 * / W of width W; a LayerNorm or GELU no table has from the RMSNorm or SiLU-and-multiply); decode
 * attention of Q and KV heads from a higher-precedence data set's Q/g and KV/g heads at g times the
 * batch, or m Q and m KV heads at B / m (the kernel's work is per sequence and KV head group),
 * else from the nearest query group held at KV heads (its time independent of the group);
 * prefill attention from the same group size at the nearest KV heads held, the work above each
 * curve's first point scaled by the heads, else from the nearest query group held at KV heads,
 * scaled by the query heads; and a
 * fused MoE from the nearest fused shape held (ema_profile_op_moe_fused_nearest), which the
 * step model carries to its own by the roofline. Elsewhere the caller falls back to the
 * roofline; nor is a surface whose only curve lies at outer 0 (a prefill table
 * measured without prior context) extrapolated to a larger outer. fp16
 * and bf16 rows answer for each other where a shape has rows of only one
 * (the same rates on every GPU modelled); a dtype's own rows come first.
 * GEMM rows carry `bias` (0 or 1: a bias added in the GEMM's epilogue,
 * cuBLASLt's bias kernels); a table without the column is bias 0; a biased
 * lookup takes the bias rows where the profile has them, else the
 * bias-free ones (the bias's extra read is n elements).
 *
 * Errors: bad CSV rows are EMA_CONFIG_ERROR with "file:line: ..."; a missing
 * or unreadable file EMA_CONFIG_ERROR_IO. */
#pragma once

#include <math.h>

#include <glib.h>

G_BEGIN_DECLS

typedef struct _EmaProfile EmaProfile;

/* Element types of hwmodels/profiles/README.md ("bf16", "fp16", "fp8"). */
typedef enum {
  EMA_PROFILE_BF16,
  EMA_PROFILE_FP16,
  EMA_PROFILE_FP8,       /* e4m3, one scale per tensor (vLLM --quantization fp8) */
  EMA_PROFILE_FP8_BLOCK, /* e4m3 with a scale per 128 x 128 block (block-quantized checkpoints) */
} EmaProfileDtype;

/* The implementation an all-reduce table timed (allreduce.csv's rows say none: ANY). vLLM runs
 * its custom all-reduce for messages below its buffer (8 MiB), replayed from a CUDA graph in
 * captured steps and launched eagerly in the others, and NCCL for larger ones. */
typedef enum {
  EMA_PROFILE_ALLREDUCE_ANY,
  EMA_PROFILE_ALLREDUCE_CUSTOM_GRAPH,
  EMA_PROFILE_ALLREDUCE_CUSTOM_EAGER,
  EMA_PROFILE_ALLREDUCE_NCCL,
  EMA_PROFILE_N_ALLREDUCE,
} EmaProfileAllreduce;

/* The operators a profile can hold (hwmodels/profiles/README.md's tables). */
typedef enum {
  EMA_PROFILE_GEMM,
  EMA_PROFILE_ATTN_DECODE,
  EMA_PROFILE_ATTN_PREFILL,
  EMA_PROFILE_MOE,
  EMA_PROFILE_ELEMENTWISE,
  EMA_PROFILE_ALLREDUCE,
  EMA_PROFILE_N_KINDS,
} EmaProfileKind;

/* Which kernels a lookup stands for, where profile.yaml's `workload_kernels:` names kinds of
 * its measured tables that time the measuring workload's own kernels (ema-validate's PyTorch
 * operators: unfused elementwise kernels, SDPA attention on contiguous KV, an MoE looped over
 * its experts) rather than a serving engine's. ENGINE (a serving step): those kinds from the
 * imports first (measured inside the engines), the workload's tables only where no import
 * holds the shape. WORKLOAD (`ema-sim compare-steps`, against the workload's own captured
 * steps): every measured table first, as the profile lists them. The views differ only for
 * those kinds. */
typedef enum {
  EMA_PROFILE_ENGINE,
  EMA_PROFILE_WORKLOAD,
} EmaProfileView;

/* Load the profile in directory DIR (DIR/profile.yaml and its tables).
 * Imports whose data set is absent are skipped and named in the warnings
 * (ema_profile_warnings); every other error in profile.yaml or its tables
 * fails the load. An import's data set is read on the first lookup of an
 * operator kind it feeds (a run reads only what its operators need); an
 * error in it is kept for ema_profile_check(), its rows left out. */
EmaProfile *ema_profile_load(const char *dir, GError **error);
/* ema_profile_load() in VIEW (ema_profile_load() is the engine view). */
EmaProfile *ema_profile_load_view(const char *dir, EmaProfileView view, GError **error);
/* FALSE with the first error of an import read so far (the caller of a
 * lookup that may have read one: the step model after resolving its
 * operators). */
gboolean ema_profile_check(const EmaProfile *profile, GError **error);
/* Read every import now (`describe hwmodel`, which counts the rows); its
 * first error as ema_profile_check(). */
gboolean ema_profile_read_all(const EmaProfile *profile, GError **error);
/* The profile NAME: the first DIR/NAME/profile.yaml over EMA_PROFILE_PATH (colon-separated),
 * then the built-in ema_data_dir("hwmodels")/profiles, each folder loaded once per process and
 * kept (never freed). Thread-safe. */
const EmaProfile *ema_profile_get(const char *name, GError **error);
/* Whether profile NAME is found (as ema_profile_get() looks it up), without loading it; FALSE
 * with ERROR where not. */
gboolean ema_profile_exists(const char *name, GError **error);
/* ema_profile_get() in VIEW (ema_profile_get() is the engine view); each view loaded once. */
const EmaProfile *ema_profile_get_view(const char *name, EmaProfileView view, GError **error);
void ema_profile_free(EmaProfile *profile);
G_DEFINE_AUTOPTR_CLEANUP_FUNC(EmaProfile, ema_profile_free)

/* The folder the public data sets are read from: EMA_SHARED_DIR, else
 * ema_data_dir("shared") (<prefix>/share/ema/shared installed, else
 * <source root>/../shared); newly allocated. */
char *ema_profile_shared_dir(void);

const char *ema_profile_name(const EmaProfile *profile);
/* profile.yaml's `source` ("measured" or the public data set). */
const char *ema_profile_source(const EmaProfile *profile);
/* One line per import whose data set is absent and that a lookup needed so
 * far (may be empty); ema_profile_get()'s profiles also print each on
 * stderr then, once. */
const GPtrArray *ema_profile_warnings(const EmaProfile *profile);
/* profile.yaml's `graph_gap` (ns, 0 where it says none): the time a CUDA graph adds per
 * kernel beyond the kernel durations that its measured tables (`tables:`) sum. The imports'
 * tables time operators as run (their launch included) and take none. */
gint64 ema_profile_graph_gap(const EmaProfile *profile);
/* profile.yaml's `collective_bandwidth` (B/s, 0 where it says none): each GPU's link
 * bandwidth to its peers on the server its all-reduce tables were measured on. A TP group
 * whose ranks reach each other at another bandwidth does not take those tables
 * (steptime.h). */
double ema_profile_collective_bandwidth(const EmaProfile *profile);
/* Number of rows loaded into KIND's tables. */
guint ema_profile_rows(const EmaProfile *profile, EmaProfileKind kind);

/* Append "# " lines to OUT: the profile's name, source, rows per table
 * and its warnings. */
void ema_profile_describe(const EmaProfile *profile, GString *out);

/* One operator shape resolved once (the step model's per-GPU shapes are
 * fixed): the surfaces of its lookup dtypes, best first (NULL where the
 * profile has none). Valid as long as the profile; ema_profile_op_at() then
 * interpolates with no key, hash or allocation. */
typedef struct _EmaProfileSurface EmaProfileSurface;
typedef struct {
  const EmaProfileSurface *surfaces[4];
  /* answered by the measuring workload's own tables, no engine's data set having the shape
   * (the engine view of a profile with `workload_kernels:`) */
  gboolean workload;
} EmaProfileOp;

/* BIAS: the GEMM adds a bias (its bias rows first, then the bias-free ones). */
void ema_profile_op_gemm(const EmaProfile *profile, EmaProfileDtype dtype, gboolean bias, guint64 k,
                         guint64 n, EmaProfileOp *op);
void ema_profile_op_attn_decode(const EmaProfile *profile, EmaProfileDtype dtype, guint q_heads,
                                guint kv_heads, guint head_dim, EmaProfileOp *op);
void ema_profile_op_attn_prefill(const EmaProfile *profile, EmaProfileDtype dtype, guint q_heads,
                                 guint kv_heads, guint head_dim, EmaProfileOp *op);
/* Prefill attention over fresh prompts run together in one kernel, as a serving engine runs a
 * step's prompts: outer the prompts, x the tokens of each (AIConfigurator's context attention
 * at every batch size; a shape the tables lack as ema_profile_op_attn_prefill's, from the same
 * group size at the nearest KV heads). None in the measuring workload's tables. */
void ema_profile_op_attn_prefill_prompts(const EmaProfile *profile, EmaProfileDtype dtype,
                                         guint q_heads, guint kv_heads, guint head_dim,
                                         EmaProfileOp *op);
void ema_profile_op_moe(const EmaProfile *profile, EmaProfileDtype dtype, guint experts, guint64 k,
                        guint64 n, EmaProfileOp *op);
/* A whole MoE layer's experts as one fused kernel (vLLM's fused_moe: both
 * projections and the activation) of HIDDEN and per-GPU FFN width FFN,
 * TOPK of EXPERTS experts per token; x the tokens. */
void ema_profile_op_moe_fused(const EmaProfile *profile, EmaProfileDtype dtype, guint64 hidden,
                              guint64 ffn, guint topk, guint experts, EmaProfileOp *op);
/* The work of a fused MoE layer (vLLM's fused_moe) of HIDDEN and per-GPU FFN width, TOPK of
 * EXPERTS experts per token, at TOKENS: *FLOPS of its three SwiGLU matrices on each routed row,
 * and *BYTES: the weights of the experts the tokens touch, E (1 - (1 - k/E)^T) of them, read
 * once at WEIGHT_BYTES an element, with the activations read and written. What the fused tables'
 * import carries a point by and the step model carries a nearest shape by (steptime.c). */
static inline void ema_profile_moe_fused_work(double hidden, double ffn, double topk,
                                              double experts, double tokens, double weight_bytes,
                                              double *flops, double *bytes) {
  double touched = experts * (1 - pow(1 - topk / experts, tokens));
  *flops = 2 * 3 * tokens * topk * hidden * ffn;
  *bytes = touched * 3 * hidden * ffn * weight_bytes + 4 * tokens * topk * (hidden + ffn);
}

/* A fused MoE's shape on one GPU (ema_profile_op_moe_fused's). */
typedef struct {
  guint64 hidden, ffn;
  guint topk, experts;
} EmaProfileMoeShape;
/* For a fused MoE whose shape the tables lack: the fused shape of DTYPE they hold nearest to
 * HIDDEN x FFN (one expert on this GPU), TOPK of EXPERTS, by the sum of the absolute logs of
 * the three ratios (expert size, experts, top-k; ties to the smaller shape), in OP with its
 * shape in *FROM; FALSE where they hold no fused MoE of DTYPE. The caller carries its times to
 * the wanted shape (steptime.c). */
gboolean ema_profile_op_moe_fused_nearest(const EmaProfile *profile, EmaProfileDtype dtype,
                                          guint64 hidden, guint64 ffn, guint topk, guint experts,
                                          EmaProfileOp *op, EmaProfileMoeShape *from);
void ema_profile_op_elementwise(const EmaProfile *profile, EmaProfileDtype dtype, const char *name,
                                guint64 width, EmaProfileOp *op);
void ema_profile_op_allreduce(const EmaProfile *profile, EmaProfileDtype dtype, guint gpus,
                              EmaProfileAllreduce backend, EmaProfileOp *op);
/* A prefill attention OP's best rate, in query-key pairs per second (a chunk of n tokens after p
 * cached ones: n p + n (n + 1) / 2 pairs, causal): the most any point of the surface that
 * answers at OUTER reaches, the kernel at its largest work; 0 where none answers or OP is not
 * prefill attention. What the step model times the part of a chunk's attention that no point
 * holds at (steptime.h). */
double ema_profile_op_pair_rate(const EmaProfileOp *op, double outer);
/* OP's best surface is from the profile's measured tables (`tables:`), not an import. */
gboolean ema_profile_op_measured(const EmaProfileOp *op);
/* Whether the surface that answers OP at OUTER was measured at X or below
 * (X is not below its smallest size, where ema_profile_op_at() gives the
 * smallest size's time). */
gboolean ema_profile_op_covers(const EmaProfileOp *op, double outer, double x);
/* Whether OP's best surface holds a curve at OUTER itself (not one it extends to OUTER). */
gboolean ema_profile_op_has_outer(const EmaProfileOp *op, double outer);
/* The label of the data set OP's first surface came from (profile.yaml's
 * `tables:` or an import's `label`), or NULL where the profile has none. */
const char *ema_profile_op_source(const EmaProfile *profile, const EmaProfileOp *op);
/* The time of OP at X on the curve of outer value OUTER (microseconds), as
 * the lookups below: X is m, context, chunk, tokens per expert, tokens or
 * bytes; OUTER the decode batch, the prefill prior context, else 0. FALSE
 * where neither surface answers. */
gboolean ema_profile_op_at(const EmaProfileOp *op, double outer, double x, double *time_us);

/* Where the last lookups of one operator landed: the brackets a lookup
 * tries first (a step's batch moves little from one step to the next), so
 * that a lookup near the last one does no search, and the last lookup's
 * place along outer, kept while the outer value and the operator are the
 * same (a decode batch keeps its size over many steps). Zeroed to start; it
 * only saves work: every answer is the one ema_profile_op_at() gives (a
 * bracket is unique, a hint that does not hold x is searched past, and a
 * place depends on the surfaces and outer alone), as long as an
 * EmaProfileOp's surfaces are not changed while a cursor has placed it (an
 * operator resolved anew into the same EmaProfileOp needs a zeroed cursor). */
typedef struct {
  struct {
    guint outer; /* the bracket of curves along outer */
    guint x[2];  /* the bracket of x on its lower and its upper curve */
  } surfaces[4]; /* as EmaProfileOp's */
  struct {
    const EmaProfileOp *op; /* the operator placed */
    double outer;
    guint slot; /* the surface that answers at outer; 4: none */
    guint lo;   /* its lower curve at outer */
    gboolean placed;
  } last;
} EmaProfileCursor;

/* ema_profile_op_at() starting from CURSOR's brackets, which it updates. */
gboolean ema_profile_op_at_cursor(const EmaProfileOp *op, EmaProfileCursor *cursor, double outer,
                                  double x, double *time_us);

/* Interpolated time in microseconds, TRUE; FALSE when the profile holds no
 * curve of that shape (the caller uses the roofline). Each resolves the
 * shape (ema_profile_op_*) and interpolates (ema_profile_op_at); the GEMM
 * without a bias. */
gboolean ema_profile_gemm(const EmaProfile *profile, EmaProfileDtype dtype, double m, guint64 k,
                          guint64 n, double *time_us);
gboolean ema_profile_attn_decode(const EmaProfile *profile, EmaProfileDtype dtype, guint q_heads,
                                 guint kv_heads, guint head_dim, double batch, double context,
                                 double *time_us);
gboolean ema_profile_attn_prefill(const EmaProfile *profile, EmaProfileDtype dtype, guint q_heads,
                                  guint kv_heads, guint head_dim, double chunk,
                                  double prior_context, double *time_us);
gboolean ema_profile_moe(const EmaProfile *profile, EmaProfileDtype dtype, guint experts,
                         double tokens_per_expert, guint64 k, guint64 n, double *time_us);
/* OP: rmsnorm, layernorm, silu_mul, gelu, rope, add, embedding. */
gboolean ema_profile_elementwise(const EmaProfile *profile, EmaProfileDtype dtype, const char *op,
                                 guint64 width, double tokens, double *time_us);
gboolean ema_profile_allreduce(const EmaProfile *profile, EmaProfileDtype dtype, guint gpus,
                               EmaProfileAllreduce backend, double bytes, double *time_us);

G_END_DECLS
