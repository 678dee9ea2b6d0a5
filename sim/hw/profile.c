/* profile.c: loading a GPU's operator profiles (profile.h, hwmodels/profiles/README.md) into
 * curves, converting the public data sets named by `import:` entries, and
 * interpolating.
 *
 * Invariants: after ema_profile_load() every curve's x are strictly
 * increasing and its times positive and non-decreasing (an imported GEMM
 * curve keeps the points that no larger size beats, any other imported curve
 * those that no larger size beats by half; then every curve its running
 * maximum: finalize_curve); every surface's
 * curves are sorted by their outer value, each outer value once. A duplicate
 * point of a `tables:` CSV is an error at its line, except in the attention
 * tables, where rows of several backends for one shape keep the fastest (as
 * engines pick it); duplicates within or across imports keep the fastest
 * too. Lookups never allocate. */
#include "ema/hw/profile.h"

#include <math.h>
#include <stdio.h>
#include <string.h>

#include "ema/core/csv.h"
#include "ema/core/file.h"
#include "ema/core/modelpath.h"
#include "ema/core/node.h"
#include "ema/core/units.h"

typedef struct {
  double x, t;
  const char *file; /* interned */
  guint line;
  gboolean keep_fastest;
  gboolean imported; /* from an `import:` data set (keep_fastest too) */
  guint source;      /* its data set's precedence: 0 the `tables:`, then the imports' (profile.h) */
} Point;

typedef struct {
  double outer;
  GArray *points; /* Point, sorted by x after finalize */
  /* after finalize: the points' x and t packed, n of each */
  double *x, *t;
  guint n;
  double past; /* after finalize: time per unit of x past x_n (profile.h) */
} Curve;

/* EmaProfileSurface of profile.h */
struct _EmaProfileSurface {
  GPtrArray *curves; /* Curve *, sorted by outer after finalize */
  double *outers;    /* after finalize: the curves' outer values, in order */
  guint source;      /* after finalize: the data set whose points it kept */
  double rate; /* after finalize, decode attention: its median marginal rate (profile.h), else 0 */
  /* after finalize, prefill attention: the most query-key pairs per us a point reaches (chunk x
   * prior + chunk (chunk + 1) / 2 pairs, causal), else 0 */
  double pair_rate;
  /* prompts run together (attn_prompts_key): at each x, no curve below the one before it */
  gboolean rising;
};
typedef struct _EmaProfileSurface Surface;

/* the end of attn_prompts_key's keys */
#define ATTN_PROMPTS_SUFFIX " prompts"

/* The (k, n) grid of one data set's GEMM rows of one dtype (an `aic-gemm` import): the
 * shapes it does not hold are interpolated from it (profile.h), from its own rows: in the
 * profile's table where the shape is the grid's, else in CORNERS (a data set of higher
 * precedence, or the measured tables, holds the shape: its rows are the table's, and the
 * grid's would be lost to the interpolation between its shapes). */
typedef struct {
  guint source;
  EmaProfileDtype dtype;
  GArray *ks, *ns;     /* guint64, sorted and distinct after finalize */
  GHashTable *corners; /* shape key -> Surface of this data set's rows the table lacks */
  gboolean finalized;  /* sizes and corners (finalize_grids) */
} GemmGrid;

struct _EmaProfile {
  char *name;
  char *source;
  gint64 graph_gap;            /* ns per kernel of the measured tables (profile.yaml's graph_gap) */
  double collective_bandwidth; /* B/s (profile.yaml's collective_bandwidth; 0: not stated) */
  GHashTable *tables[EMA_PROFILE_N_KINDS]; /* shape key -> Surface */
  guint rows[EMA_PROFILE_N_KINDS];
  GPtrArray *warnings;
  GPtrArray *labels; /* char *: each data set's label, by its source (precedence) number */
  GArray *grids;     /* GemmGrid, by source */
  /* GEMM surfaces interpolated from a grid, by shape key, made on first lookup (under lock:
   * a profile is shared by the threads of a process) */
  GHashTable *derived;
  GMutex lock;
  /* The imports, read on the first lookup of a kind they feed (lazy_load): a run reads
   * only the data sets its operators need. staging[kind] collects their points while
   * they are read; loaded is the mask of kinds read; load_error the first read's error. */
  GArray *imports; /* Import */
  GHashTable *staging[EMA_PROFILE_N_KINDS];
  guint loaded;
  GError *load_error;
  gboolean say_warnings; /* print an absent data set's warning when it is needed (the cache's) */
  /* profile.yaml's `workload_kernels:`, the kinds whose measured tables time the measuring
   * workload's own kernels rather than an engine's; in the engine view (EMA_PROFILE_ENGINE)
   * their surfaces sit in fallback[kind], which answers only where no import does (NULL for
   * the other kinds, and in the workload view, where they are tables[kind]'s as any other) */
  guint workload_kinds;
  EmaProfileView view;
  GHashTable *fallback[EMA_PROFILE_N_KINDS];
};

static const char *const dtype_names[] = {"bf16", "fp16", "fp8", "fp8_block", NULL};
static const char *const kind_names[EMA_PROFILE_N_KINDS] = {"gemm", "attn_decode", "attn_prefill",
                                                            "moe",  "elementwise", "allreduce"};
static const char *const table_files[EMA_PROFILE_N_KINDS] = {"gemm.csv",         "attn_decode.csv",
                                                             "attn_prefill.csv", "moe.csv",
                                                             "elementwise.csv",  "allreduce.csv"};

/* ---- surfaces ------------------------------------------------------------ */

static void curve_free(gpointer data) {
  Curve *c = data;
  g_array_unref(c->points);
  g_free(c->x);
  g_free(c->t);
  g_free(c);
}

static void surface_free(gpointer data) {
  Surface *s = data;
  if (!s)
    return;
  g_ptr_array_unref(s->curves);
  g_free(s->outers);
  g_free(s);
}

/* POINT into the surface KEY of INTO (a table of KIND), on its curve OUTER. */
static void add_point_into(GHashTable *into, EmaProfileKind kind, const char *key, double outer,
                           const Point *point) {
  Surface *s = g_hash_table_lookup(into, key);
  Curve *c = NULL;
  if (!s) {
    s = g_new0(Surface, 1);
    s->curves = g_ptr_array_new_with_free_func(curve_free);
    s->rising = kind == EMA_PROFILE_ATTN_PREFILL && g_str_has_suffix(key, ATTN_PROMPTS_SUFFIX);
    g_hash_table_insert(into, g_strdup(key), s);
  }
  for (guint i = 0; i < s->curves->len && !c; i++)
    if (((Curve *) s->curves->pdata[i])->outer == outer)
      c = s->curves->pdata[i];
  if (!c) {
    c = g_new0(Curve, 1);
    c->outer = outer;
    c->points = g_array_new(FALSE, FALSE, sizeof(Point));
    g_ptr_array_add(s->curves, c);
  }
  g_array_append_val(c->points, *point);
}

static void add_point(EmaProfile *p, EmaProfileKind kind, const char *key, double outer,
                      const Point *point) {
  add_point_into(p->staging[kind] ? p->staging[kind] : p->tables[kind], kind, key, outer, point);
  p->rows[kind]++;
}

static gint compare_points(gconstpointer a, gconstpointer b) {
  const Point *pa = a, *pb = b;
  return (pa->x > pb->x) - (pa->x < pb->x);
}

static gint compare_curves(gconstpointer a, gconstpointer b) {
  const Curve *ca = *(Curve *const *) a, *cb = *(Curve *const *) b;
  return (ca->outer > cb->outer) - (ca->outer < cb->outer);
}

/* An imported point other than a GEMM's slower than this share over a larger size's is a
 * spike of its table, dropped (finalize_curve): AIConfigurator's A100 decode attention of 4
 * query heads over 1 holds 44.6 us at one sequence of 7 tokens between points of 12.3 us, a
 * warm-up its running maximum would charge to every larger size. A curve's smaller steps (a
 * kernel's tile or wave boundary) stay, and its running maximum smooths them. */
#define IMPORT_SPIKE 0.5

/* Keep C's first KEPT points that no larger size beats by more than SLACK
 * (t <= (1 + SLACK) x every later t); with SLACK 0 the lower monotone envelope
 * of the measured points, linear between those kept. A cuBLAS heuristic's slow
 * kernel at some sizes (Vidur's CodeLlama-34B gate/up projection: 0.73 ms at
 * 328-384 tokens, 0.57 ms at 392) is the kernel choice of the library that was
 * profiled, not of the engine the profile times; a running maximum would carry
 * it up to every larger size. Returns the count kept. */
static guint lower_envelope(Curve *c, guint kept, double slack) {
  double best = INFINITY;
  guint n = 0;
  g_autofree gboolean *keep = g_new(gboolean, MAX(kept, 1));
  for (guint i = kept; i-- > 0;) {
    double t = g_array_index(c->points, Point, i).t;
    keep[i] = t <= best * (1.0 + slack);
    best = MIN(best, t);
  }
  for (guint i = 0; i < kept; i++)
    if (keep[i])
      g_array_index(c->points, Point, n++) = g_array_index(c->points, Point, i);
  return n;
}

/* Sort, merge duplicates (or fail on them), make times non-decreasing: a
 * curve whose points are all imported from a public data set of another
 * software stack first drops its points that a larger size beats (a GEMM
 * curve's: any, its lower envelope; any other's: by more than IMPORT_SPIKE),
 * then every curve takes its running maximum (a measured profile's points are
 * the stack its captured steps run, kept whole, and the step's monotonicity in
 * its sizes rests on them: steptime.h). */
static gboolean finalize_curve(Curve *c, gboolean gemm, GError **error) {
  gboolean imported = TRUE;
  guint kept = 0;
  double running = 0;
  g_array_sort(c->points, compare_points);
  for (guint i = 0; i < c->points->len; i++) {
    Point *pt = &g_array_index(c->points, Point, i);
    imported = imported && pt->imported;
    if (kept > 0 && g_array_index(c->points, Point, kept - 1).x == pt->x) {
      Point *prev = &g_array_index(c->points, Point, kept - 1);
      if (!pt->keep_fastest || !prev->keep_fastest) {
        g_set_error(error, EMA_CONFIG_ERROR, EMA_CONFIG_ERROR_INVALID,
                    "%s:%u: duplicate row (the same point as %s:%u)", pt->file, pt->line,
                    prev->file, prev->line);
        return FALSE;
      }
      prev->t = MIN(prev->t, pt->t);
      continue;
    }
    g_array_index(c->points, Point, kept++) = *pt;
  }
  if (imported)
    kept = lower_envelope(c, kept, gemm ? 0.0 : IMPORT_SPIKE);
  g_array_set_size(c->points, kept);
  c->x = g_new(double, kept);
  c->t = g_new(double, kept);
  c->n = kept;
  for (guint i = 0; i < kept; i++) {
    Point *pt = &g_array_index(c->points, Point, i);
    running = MAX(running, pt->t);
    pt->t = running;
    c->x[i] = pt->x;
    c->t[i] = pt->t;
  }
  c->past = kept > 0 && c->x[kept - 1] > 0 ? c->t[kept - 1] / c->x[kept - 1] : 0;
  return TRUE;
}

/* Keep, of surface S, only the points of the data set of highest
 * precedence (the lowest source number) that has any: a shape comes whole
 * from one data set, never a blend of two (profile.h). */
static void keep_first_source(Surface *s) {
  guint best = G_MAXUINT;
  for (guint i = 0; i < s->curves->len; i++) {
    const Curve *c = s->curves->pdata[i];
    for (guint j = 0; j < c->points->len; j++)
      best = MIN(best, g_array_index(c->points, Point, j).source);
  }
  s->source = best;
  for (guint i = s->curves->len; i-- > 0;) {
    Curve *c = s->curves->pdata[i];
    guint kept = 0;
    for (guint j = 0; j < c->points->len; j++)
      if (g_array_index(c->points, Point, j).source == best)
        g_array_index(c->points, Point, kept++) = g_array_index(c->points, Point, j);
    g_array_set_size(c->points, kept);
    if (kept == 0)
      g_ptr_array_remove_index(s->curves, i);
  }
}

static gint compare_rates(gconstpointer a, gconstpointer b) {
  double x = *(const double *) a, y = *(const double *) b;
  return (x > y) - (x < y);
}

/* The slope past (X1, T1) after (X0, T0) of a decode attention surface (profile.h): the last
 * segment's, at least FLOOR, at most proportional (T1 / X1; X1 > X0 > 0). */
static double past_slope(double x0, double t0, double x1, double t1, double floor) {
  return MIN(t1 / x1, MAX((t1 - t0) / (x1 - x0), floor));
}

/* A decode attention surface's median marginal rate (s->rate) and its curves' slopes past
 * their ends (profile.h): past_slope() of each curve's last segment, FLOOR the time of half
 * that rate at the curve's batch. */
static void decode_past_slopes(Surface *s) {
  g_autoptr(GArray) rates = g_array_new(FALSE, FALSE, sizeof(double));
  for (guint i = 0; i < s->curves->len; i++) {
    const Curve *c = s->curves->pdata[i];
    guint n = c->n;
    if (n >= 2 && c->t[n - 1] > c->t[n - 2] && c->outer > 0) {
      double rate = c->outer * (c->x[n - 1] - c->x[n - 2]) / (c->t[n - 1] - c->t[n - 2]);
      g_array_append_val(rates, rate);
    }
  }
  if (rates->len == 0)
    return; /* no curve says how fast context streams: proportional */
  g_array_sort(rates, compare_rates);
  s->rate = rates->len % 2 ? g_array_index(rates, double, rates->len / 2)
                           : (g_array_index(rates, double, rates->len / 2 - 1) +
                              g_array_index(rates, double, rates->len / 2)) /
                                 2;
  for (guint i = 0; i < s->curves->len; i++) {
    Curve *c = s->curves->pdata[i];
    guint n = c->n;
    if (n >= 2)
      c->past =
          past_slope(c->x[n - 2], c->t[n - 2], c->x[n - 1], c->t[n - 1], c->outer / (2 * s->rate));
  }
}

static void lift_curve(Curve *c, const Curve *below);
static inline double curve_at(const Curve *c, double x, guint *hint);

/* The union of curves C's and OTHER's points within [FROM, TO], ascending (*N of them; free it). */
static double *union_points(const Curve *c, const Curve *other, double from, double to, guint *n) {
  double *x = g_new(double, c->n + other->n);
  guint a = 0, b = 0;
  *n = 0;
  while (a < c->n || b < other->n) {
    double next = b >= other->n || (a < c->n && c->x[a] <= other->x[b]) ? c->x[a] : other->x[b];
    if (a < c->n && c->x[a] == next)
      a++;
    if (b < other->n && other->x[b] == next)
      b++;
    if (next >= from && next <= to)
      x[(*n)++] = next;
  }
  return x;
}

/* Lower decode attention surface S's curves, from the largest batch down, to the curve of the
 * batch above: a batch never takes longer than one of more sequences at the same context.
 * AIConfigurator's tables have isolated slow points along the batch, as a timing glitch gives
 * (GB200, 16 query over 4 KV heads at 16,383 tokens: 23.06 us for one sequence, 15.26 for two;
 * H100, 1 over 1 head in FP8 at 127 tokens: 676 us for one, 8.3 for two); the faster
 * measurement of the larger batch bounds them, as a GEMM curve keeps its lower envelope.
 * (Raising each batch to the one below instead carries such a glitch to every larger batch.)
 * Each curve is taken at the union of both curves' points up to the end of the one above,
 * below its own first point too (where a lookup holds its first time): the minimum of two
 * piecewise-linear curves is concave between those points, so its chord stays under the
 * curve above. */
static void decode_fall_along_batch(Surface *s) {
  for (guint i = s->curves->len; i-- > 1;) {
    Curve *c = s->curves->pdata[i - 1];
    const Curve *above = s->curves->pdata[i];
    double hi = above->x[above->n - 1];
    guint n;
    double *x = union_points(c, above, -G_MAXDOUBLE, c->x[c->n - 1], &n), *t = g_new(double, n);
    for (guint k = 0; k < n; k++)
      t[k] = x[k] <= hi ? MIN(curve_at(c, x[k], NULL), curve_at(above, x[k], NULL))
                        : curve_at(c, x[k], NULL);
    g_free(c->x);
    g_free(c->t);
    c->x = x;
    c->t = t;
    c->n = n;
  }
}

/* Sort a surface's curves of KIND along outer and finalize each (finalize_curve), and for
 * decode attention its fall along the batch (decode_fall_along_batch) and its slopes past the
 * curves' ends (decode_past_slopes); a surface of prompts
 * run together rising along outer (lift_curve): more prompts never take less time than fewer,
 * where AIConfigurator's tables have 2 prompts of 1,024 tokens (H100, 12 heads of 128) in 26 us
 * and one in 32 us. */
static gboolean finalize_surface(Surface *s, EmaProfileKind kind, GError **error) {
  keep_first_source(s);
  g_ptr_array_sort(s->curves, compare_curves);
  s->outers = g_new(double, s->curves->len);
  for (guint i = 0; i < s->curves->len; i++) {
    s->outers[i] = ((Curve *) s->curves->pdata[i])->outer;
    if (!finalize_curve(s->curves->pdata[i], kind == EMA_PROFILE_GEMM, error))
      return FALSE;
  }
  if (kind == EMA_PROFILE_ATTN_DECODE) {
    decode_fall_along_batch(s);
    decode_past_slopes(s);
  }
  for (guint i = 1; s->rising && i < s->curves->len; i++)
    lift_curve(s->curves->pdata[i], s->curves->pdata[i - 1]);
  if (kind == EMA_PROFILE_ATTN_PREFILL)
    for (guint i = 0; i < s->curves->len; i++) {
      const Curve *c = s->curves->pdata[i];
      for (guint j = 0; j < c->n; j++)
        if (c->t[j] > 0)
          s->pair_rate =
              MAX(s->pair_rate, (c->x[j] * c->outer + c->x[j] * (c->x[j] + 1) / 2) / c->t[j]);
    }
  return TRUE;
}

static gint compare_sizes(gconstpointer a, gconstpointer b) {
  guint64 x = *(const guint64 *) a, y = *(const guint64 *) b;
  return (x > y) - (x < y);
}

/* Sort a grid's sizes and drop repeats. */
static void finalize_sizes(GArray *sizes) {
  guint kept = 0;
  g_array_sort(sizes, compare_sizes);
  for (guint i = 0; i < sizes->len; i++)
    if (kept == 0 || g_array_index(sizes, guint64, kept - 1) != g_array_index(sizes, guint64, i))
      g_array_index(sizes, guint64, kept++) = g_array_index(sizes, guint64, i);
  g_array_set_size(sizes, kept);
}

static gboolean finalize_table(GHashTable *table, EmaProfileKind kind, GError **error) {
  GHashTableIter it;
  gpointer value;
  g_hash_table_iter_init(&it, table);
  while (g_hash_table_iter_next(&it, NULL, &value))
    if (!finalize_surface(value, kind, error))
      return FALSE;
  return TRUE;
}

/* The grids read since the last call: their sizes and their own rows. */
static gboolean finalize_grids(EmaProfile *p, GError **error) {
  for (guint i = 0; i < p->grids->len; i++) {
    GemmGrid *grid = &g_array_index(p->grids, GemmGrid, i);
    if (grid->finalized)
      continue;
    grid->finalized = TRUE;
    finalize_sizes(grid->ks);
    finalize_sizes(grid->ns);
    if (!finalize_table(grid->corners, EMA_PROFILE_GEMM, error))
      return FALSE;
  }
  return TRUE;
}

static gboolean finalize(EmaProfile *p, GError **error) {
  for (int k = 0; k < EMA_PROFILE_N_KINDS; k++)
    if (!finalize_table(p->tables[k], (EmaProfileKind) k, error) ||
        (p->fallback[k] && !finalize_table(p->fallback[k], (EmaProfileKind) k, error)))
      return FALSE;
  return finalize_grids(p, error);
}

/* The interpolation rule of profile.h over N sorted (xs[i], vs[i]). */
/* The i with xs[i] <= x < xs[i + 1], for xs[0] <= x < xs[n - 1] (xs
 * strictly increasing): halving without a branch on the data. */
static guint bracket(const double *xs, guint n, double x) {
  const double *base = xs;
  guint len = n - 1; /* the answer lies in [base, base + len) */
  while (len > 1) {
    guint half = len / 2;
    base = base[half] <= x ? base + half : base;
    len -= half;
  }
  return (guint) (base - xs);
}

/* bracket() tried first at *HINT and the bracket after it (the answer is
 * unique: a hint that does not hold x is searched past); *HINT is then the
 * answer. HINT NULL: bracket(). */
G_ALWAYS_INLINE static inline guint bracket_from(const double *xs, guint n, double x, guint *hint) {
  guint h;
  if (hint == NULL)
    return bracket(xs, n, x);
  h = *hint;
  if (h + 1 < n && xs[h] <= x) {
    if (x < xs[h + 1])
      return h;
    if (h + 2 < n && x < xs[h + 2])
      return *hint = h + 1;
  }
  return *hint = bracket(xs, n, x);
}

/* Linear between (xs[lo], vs[lo]) and the point after it. */
static double between(const double *xs, const double *vs, guint lo, double x) {
  guint hi = lo + 1;
  return vs[lo] + (vs[hi] - vs[lo]) * (x - xs[lo]) / (xs[hi] - xs[lo]);
}

static double extend(const double *xs, const double *vs, guint n, double x) {
  if (x <= xs[0])
    return vs[0];
  if (n < 2 || x >= xs[n - 1]) /* n == 1: past its one point */
    return xs[n - 1] > 0 ? vs[n - 1] * x / xs[n - 1] : vs[n - 1];
  return between(xs, vs, bracket(xs, n, x), x);
}

/* extend() over the curve's points (its x_n > 0: sizes are positive), its
 * bracket searched from HINT (bracket_from()). */
G_ALWAYS_INLINE static inline double curve_at(const Curve *c, double x, guint *hint) {
  if (x >= c->x[c->n - 1])
    return c->t[c->n - 1] + (x - c->x[c->n - 1]) * c->past;
  if (x <= c->x[0])
    return c->t[0];
  return between(c->x, c->t, bracket_from(c->x, c->n, x, hint), x);
}

/* Raise finalized curve C to at least BELOW (the curve at the outer before it) at every x from
 * C's first: both taken at the union of their points from there on, linear between, each past
 * its last point proportional (prefill attention's curves), so that C is nowhere below. */
static void lift_curve(Curve *c, const Curve *below) {
  guint n;
  double *x = union_points(c, below, c->x[0], G_MAXDOUBLE, &n), *t;
  t = g_new(double, n);
  for (guint k = 0; k < n; k++)
    t[k] = MAX(curve_at(c, x[k], NULL), curve_at(below, x[k], NULL));
  g_free(c->x);
  g_free(c->t);
  c->x = x;
  c->t = t;
  c->n = n;
  c->past = x[n - 1] > 0 ? t[n - 1] / x[n - 1] : 0;
}

/* Where OUTER falls among surface S's curves: *LO, its lower curve (the
 * upper one is LO + 1 where S has more than one), TRUE; FALSE where S says
 * nothing (no surface, or one curve at outer 0 asked about a larger
 * outer). OUTER_HINT (NULL: none) starts the bracket's search along outer
 * (bracket_from()). */
static gboolean surface_place(const Surface *s, double outer, guint *outer_hint, guint *lo) {
  const Curve *const *cs;
  guint n;
  if (!s || s->curves->len == 0)
    return FALSE;
  cs = (const Curve *const *) s->curves->pdata;
  n = s->curves->len;
  if (n == 1) {
    /* one curve at outer 0 (a prefill table at prior context 0 only) says
     * nothing about a larger outer: no time, the caller's roofline */
    if (cs[0]->outer <= 0 && outer > 0)
      return FALSE;
    *lo = 0;
  } else if (outer <= cs[0]->outer) {
    *lo = 0;
  } else if (outer >= cs[n - 1]->outer) {
    *lo = n - 2;
  } else {
    *lo = bracket_from(s->outers, n, outer, outer_hint);
  }
  return TRUE;
}

/* The time of surface S at (OUTER, X) from OUTER's place LO
 * (surface_place()). X_HINT[2] (NULL: none) starts the brackets' searches
 * on the lower and upper curve. */
G_ALWAYS_INLINE static inline double surface_eval(const Surface *s, guint lo, double outer,
                                                  double x, guint *x_hint) {
  const Curve *const *cs = (const Curve *const *) s->curves->pdata;
  guint n = MIN(s->curves->len, 2);
  double xs[2], vs[2];
  xs[0] = cs[lo]->outer;
  vs[0] = curve_at(cs[lo], x, x_hint);
  if (n == 2) {
    xs[1] = cs[lo + 1]->outer;
    vs[1] = curve_at(cs[lo + 1], x, x_hint ? x_hint + 1 : NULL);
    /* decode attention past its largest batch: along the last two curves (profile.h) */
    if (s->rate > 0 && outer > xs[1] && xs[0] > 0)
      return vs[1] + (outer - xs[1]) * past_slope(xs[0], vs[0], xs[1], vs[1], x / (2 * s->rate));
  }
  return extend(xs, vs, n, outer);
}

/* The time of surface S at (OUTER, X), TRUE; FALSE where S says nothing
 * (surface_place()). */
static gboolean surface_at(const Surface *s, double outer, double x, double *time_us) {
  guint lo;
  if (!surface_place(s, outer, NULL, &lo))
    return FALSE;
  *time_us = surface_eval(s, lo, outer, x, NULL);
  return TRUE;
}

/* ---- shape keys ---------------------------------------------------------- */

/* Rows are kept per dtype. A lookup in fp16 that a table holds only in bf16
 * (or the other way round) takes the other's rows: the two have the same
 * tensor-core and memory rates on every GPU of hwmodels/gpus. */
static const char *rate_class(EmaProfileDtype dtype) {
  return dtype_names[dtype];
}

/* The dtypes whose rows may answer a lookup in DTYPE, best first; returns how many. */
static guint lookup_dtypes(EmaProfileDtype dtype, EmaProfileDtype out[2]) {
  out[0] = dtype;
  if (dtype == EMA_PROFILE_FP8 || dtype == EMA_PROFILE_FP8_BLOCK)
    return 1;
  out[1] = dtype == EMA_PROFILE_FP16 ? EMA_PROFILE_BF16 : EMA_PROFILE_FP16;
  return 2;
}

/* A shape key written into BUF of SIZE bytes, truncated as g_snprintf would: the keys are made
 * for every row of the public tables (about 150,000 on a GB200), where g_snprintf's format
 * parsing took a fifth of a run's start. */
typedef struct {
  char *at, *end; /* end: the last byte, kept for the terminating 0 */
} Key;

static Key key_start(char *buf, gsize size) {
  Key key = {buf, buf + size - 1};
  *buf = 0;
  return key;
}

static void key_text(Key *key, const char *text) {
  while (*text && key->at < key->end)
    *key->at++ = *text++;
  *key->at = 0;
}

static void key_number(Key *key, guint64 v) {
  char digits[20];
  guint n = 0;
  do
    digits[n++] = (char) ('0' + v % 10);
  while ((v /= 10) > 0);
  while (n > 0 && key->at < key->end)
    *key->at++ = digits[--n];
  *key->at = 0;
}

/* KEY's text, then for each of the N labels its text and number ("k=", 64 -> "k=64") */
static void key_fields(Key *key, guint n, const char *const *labels, const guint64 *values) {
  for (guint i = 0; i < n; i++) {
    key_text(key, labels[i]);
    key_number(key, values[i]);
  }
}

static void gemm_key(char *buf, gsize size, EmaProfileDtype dtype, gboolean bias, guint64 k,
                     guint64 n) {
  Key key = key_start(buf, size);
  key_text(&key, rate_class(dtype));
  key_text(&key, bias ? " bias" : "");
  key_fields(&key, 2, (const char *const[]){" k=", " n="}, (const guint64[]){k, n});
}

/* Whether KEY is a GEMM shape key (gemm_key) of DTYPE: its first word. */
static gboolean gemm_key_of(const char *key, EmaProfileDtype dtype) {
  const char *name = rate_class(dtype);
  gsize chars = strlen(name);
  return strncmp(key, name, chars) == 0 && key[chars] == ' ';
}

static void attn_key(char *buf, gsize size, EmaProfileDtype dtype, guint q, guint kv, guint d) {
  Key key = key_start(buf, size);
  key_text(&key, rate_class(dtype));
  key_fields(&key, 3, (const char *const[]){" q=", " kv=", " d="}, (const guint64[]){q, kv, d});
}

/* The shape of prefill attention over prompts run together (outer: the prompts), apart from
 * attn_key's one-prompt rows (outer: the cached context). */
static void attn_prompts_key(char *buf, gsize size, EmaProfileDtype dtype, guint q, guint kv,
                             guint d) {
  Key key = key_start(buf, size);
  key_text(&key, rate_class(dtype));
  key_fields(&key, 3, (const char *const[]){" q=", " kv=", " d="}, (const guint64[]){q, kv, d});
  key_text(&key, ATTN_PROMPTS_SUFFIX);
}

static void moe_key(char *buf, gsize size, EmaProfileDtype dtype, guint experts, guint64 k,
                    guint64 n) {
  Key key = key_start(buf, size);
  key_text(&key, rate_class(dtype));
  key_fields(&key, 3, (const char *const[]){" e=", " k=", " n="}, (const guint64[]){experts, k, n});
}

/* a whole fused MoE layer's experts (both projections and the activation): per-GPU shape (the
 * format ema_profile_op_moe_fused_nearest reads back) */
static void moe_fused_key(char *buf, gsize size, EmaProfileDtype dtype, guint64 hidden, guint64 ffn,
                          guint topk, guint experts) {
  Key key = key_start(buf, size);
  key_text(&key, rate_class(dtype));
  key_fields(&key, 4, (const char *const[]){" fused h=", " f=", " k=", " e="},
             (const guint64[]){hidden, ffn, topk, experts});
}

static void elementwise_key(char *buf, gsize size, EmaProfileDtype dtype, const char *op,
                            guint64 width) {
  Key key = key_start(buf, size);
  key_text(&key, rate_class(dtype));
  key_text(&key, " ");
  key_text(&key, op);
  key_fields(&key, 1, (const char *const[]){" w="}, (const guint64[]){width});
}

/* BACKEND: EMA_PROFILE_ALLREDUCE_ANY (a table that does not say) or the implementation */
static const char *const allreduce_backends[EMA_PROFILE_N_ALLREDUCE] = {"", " custom-graph",
                                                                        " custom-eager", " nccl"};

static void allreduce_key(char *buf, gsize size, EmaProfileDtype dtype, guint gpus,
                          EmaProfileAllreduce backend) {
  g_snprintf(buf, size, "%s g=%u%s", rate_class(dtype), gpus, allreduce_backends[backend]);
}

/* ---- lookups ------------------------------------------------------------- */

static void lazy_load(EmaProfile *p, guint kinds);

/* KEY's surface of KIND: the measured tables' (which come first), else the
 * imports' (read now if not yet). */
static const Surface *find_surface(const EmaProfile *p, EmaProfileKind kind, const char *key) {
  const Surface *s = g_hash_table_lookup(p->tables[kind], key);
  if (s && s->source == 0)
    return s;
  lazy_load((EmaProfile *) p, 1u << kind);
  return g_hash_table_lookup(p->tables[kind], key);
}

gboolean ema_profile_op_at(const EmaProfileOp *op, double outer, double x, double *time_us) {
  g_return_val_if_fail(op != NULL && time_us != NULL, FALSE);
  for (guint i = 0; i < G_N_ELEMENTS(op->surfaces); i++)
    if (surface_at(op->surfaces[i], outer, x, time_us))
      return TRUE;
  return FALSE;
}

gboolean ema_profile_op_at_cursor(const EmaProfileOp *op, EmaProfileCursor *cursor, double outer,
                                  double x, double *time_us) {
  G_STATIC_ASSERT(G_N_ELEMENTS(cursor->surfaces) == G_N_ELEMENTS(op->surfaces));
  g_return_val_if_fail(op != NULL && cursor != NULL && time_us != NULL, FALSE);
  if (!cursor->last.placed || cursor->last.outer != outer || cursor->last.op != op) {
    /* a new place: the first surface that answers at OUTER (the ones before
     * it say nothing there, whatever the x) */
    guint i = 0;
    while (i < G_N_ELEMENTS(op->surfaces) &&
           !surface_place(op->surfaces[i], outer, &cursor->surfaces[i].outer, &cursor->last.lo))
      i++;
    cursor->last.op = op;
    cursor->last.outer = outer;
    cursor->last.slot = i;
    cursor->last.placed = TRUE;
  }
  if (cursor->last.slot == G_N_ELEMENTS(op->surfaces))
    return FALSE;
  *time_us = surface_eval(op->surfaces[cursor->last.slot], cursor->last.lo, outer, x,
                          cursor->surfaces[cursor->last.slot].x);
  return TRUE;
}

/* Whether slot FIRST of OP holds a measured surface and the lookup is past
 * it (slot FIRST + I): the other dtype's rows are then not looked up, so
 * that no public data set is read for them. */
static gboolean measured_first(const EmaProfileOp *op, guint first, guint i) {
  return i > 0 && op->surfaces[first] && op->surfaces[first]->source == 0;
}

/* OP's surfaces from slot FIRST on for the shape that KEY_OF writes for each
 * lookup dtype. */
#define RESOLVE_FROM(op, first, profile, kind, dtype, key_of, ...)                                 \
  do {                                                                                             \
    char key_[128];                                                                                \
    EmaProfileDtype dtypes_[2];                                                                    \
    guint count_ = lookup_dtypes(dtype, dtypes_);                                                  \
    for (guint i_ = 0; i_ < count_ && !measured_first(op, first, i_); i_++) {                      \
      key_of(key_, sizeof key_, dtypes_[i_], __VA_ARGS__);                                         \
      op->surfaces[(first) + i_] = find_surface(profile, kind, key_);                              \
    }                                                                                              \
  } while (0)

/* OP's surfaces for the shape that KEY_OF writes for each lookup dtype. */
#define RESOLVE(op, profile, kind, dtype, key_of, ...)                                             \
  do {                                                                                             \
    g_return_if_fail(profile != NULL && op != NULL);                                               \
    *op = (EmaProfileOp){{NULL}, FALSE};                                                           \
    RESOLVE_FROM(op, 0, profile, kind, dtype, key_of, __VA_ARGS__);                                \
  } while (0)

static gboolean op_found(const EmaProfileOp *op) {
  for (guint i = 0; i < G_N_ELEMENTS(op->surfaces); i++)
    if (op->surfaces[i])
      return TRUE;
  return FALSE;
}

/* In the engine view, OP's surfaces from slot FIRST on from the measuring workload's own
 * tables of KIND (the profile's fallback), where no data set of the engine's kernels answered
 * OP at all. */
#define FALLBACK_FROM(op, first, profile, kind, dtype, key_of, ...)                                \
  do {                                                                                             \
    char key_[128];                                                                                \
    EmaProfileDtype dtypes_[2];                                                                    \
    guint count_ = lookup_dtypes(dtype, dtypes_);                                                  \
    for (guint i_ = 0; i_ < count_; i_++) {                                                        \
      key_of(key_, sizeof key_, dtypes_[i_], __VA_ARGS__);                                         \
      (op)->surfaces[(first) + i_] = g_hash_table_lookup((profile)->fallback[kind], key_);         \
      (op)->workload = (op)->workload || (op)->surfaces[(first) + i_];                             \
    }                                                                                              \
  } while (0)

#define FALLBACK(op, profile, kind, dtype, key_of, ...)                                            \
  do {                                                                                             \
    if ((profile)->fallback[kind] && !op_found(op))                                                \
      FALLBACK_FROM(op, 0, profile, kind, dtype, key_of, __VA_ARGS__);                             \
  } while (0)

/* Where V falls in the sorted SIZES of a grid: the bracketing sizes *LO <=
 * V <= *HI and V's weight *W toward *HI; below the grid its first size (a
 * smaller operator is not slower), past it its last with *SCALE = V / last
 * (the time proportional to k or n past the grid, profile.h). */
static void grid_place(const GArray *sizes, guint64 v, guint64 *lo, guint64 *hi, double *w,
                       double *scale) {
  const guint64 *at = (const guint64 *) sizes->data;
  guint n = sizes->len, i = 0;
  *w = 0;
  *scale = 1;
  if (v <= at[0]) {
    *lo = *hi = at[0];
    return;
  }
  if (v >= at[n - 1]) {
    *lo = *hi = at[n - 1];
    *scale = (double) v / (double) at[n - 1];
    return;
  }
  while (at[i + 1] < v)
    i++;
  *lo = at[i];
  *hi = at[i + 1];
  *w = (double) (v - *lo) / (double) (*hi - *lo);
}

static gint compare_doubles(gconstpointer a, gconstpointer b) {
  double x = *(const double *) a, y = *(const double *) b;
  return (x > y) - (x < y);
}

/* The GEMM surface of (K, N) interpolated from GRID's four bracketing
 * shapes, bilinear in k and n at every m any of them has (exact where the
 * time is a + b k + c n + d k n, as a GEMM's memory and compute times are);
 * NULL where one of the four is missing. */
static Surface *grid_surface(const EmaProfile *p, const GemmGrid *grid, guint64 k, guint64 n) {
  guint64 ks[2], ns[2];
  double wk, wn, sk, sn, w[4];
  const Curve *corner[4];
  g_autoptr(GArray) xs = g_array_new(FALSE, FALSE, sizeof(double));
  Surface *s;
  Curve *c;
  grid_place(grid->ks, k, &ks[0], &ks[1], &wk, &sk);
  grid_place(grid->ns, n, &ns[0], &ns[1], &wn, &sn);
  for (guint i = 0; i < 4; i++) {
    char key[128];
    const Surface *at;
    gemm_key(key, sizeof key, grid->dtype, FALSE, ks[i / 2], ns[i % 2]);
    at = g_hash_table_lookup(grid->corners, key);
    if (!at)
      at = g_hash_table_lookup(p->tables[EMA_PROFILE_GEMM], key);
    if (!at || at->source != grid->source || at->curves->len != 1)
      return NULL;
    corner[i] = at->curves->pdata[0];
    w[i] = (i / 2 ? wk : 1 - wk) * (i % 2 ? wn : 1 - wn) * sk * sn;
    g_array_append_vals(xs, corner[i]->x, corner[i]->n);
  }
  g_array_sort(xs, compare_doubles);
  s = g_new0(Surface, 1);
  s->curves = g_ptr_array_new_with_free_func(curve_free);
  c = g_new0(Curve, 1);
  c->points = g_array_new(FALSE, FALSE, sizeof(Point));
  g_ptr_array_add(s->curves, c);
  for (guint i = 0; i < xs->len; i++) {
    double x = g_array_index(xs, double, i), t = 0;
    Point pt = {x, 0, g_intern_string(p->labels->pdata[grid->source]), 0, TRUE, TRUE, grid->source};
    if (i > 0 && x == g_array_index(xs, double, i - 1))
      continue;
    for (guint j = 0; j < 4; j++)
      t += w[j] * curve_at(corner[j], x, NULL);
    pt.t = t;
    g_array_append_val(c->points, pt);
  }
  /* distinct x, all imported: cannot fail */
  if (!finalize_surface(s, EMA_PROFILE_GEMM, NULL))
    g_assert_not_reached();
  return s;
}

/* The profile's derived surface KEY: made by MAKE(p, ARGS) on its first lookup (NULL: none can
 * be made) and kept in the derived table, the lookups' own cache, under the profile's lock. */
typedef Surface *(*MakeDerived)(const EmaProfile *p, gconstpointer args);

static const Surface *derived_surface(const EmaProfile *profile, const char *key, MakeDerived make,
                                      gconstpointer args) {
  EmaProfile *p = (EmaProfile *) profile;
  gpointer found;
  g_mutex_lock(&p->lock);
  if (!g_hash_table_lookup_extended(p->derived, key, NULL, &found)) {
    found = make(p, args);
    g_hash_table_insert(p->derived, g_strdup(key), found);
  }
  g_mutex_unlock(&p->lock);
  return found;
}

/* grid_surface's arguments, for derived_surface */
typedef struct {
  const GemmGrid *grid;
  guint64 k, n;
} GridArgs;

static Surface *make_grid_surface(const EmaProfile *p, gconstpointer args) {
  const GridArgs *a = args;
  return grid_surface(p, a->grid, a->k, a->n);
}

/* The GEMM surface of one shape: the shape's own rows, unless a GEMM grid
 * of higher precedence (an `aic-gemm` import) holds the shape in its range,
 * whose interpolation then answers (made once, kept in the profile). */
static const Surface *gemm_surface(const EmaProfile *profile, EmaProfileDtype dtype, gboolean bias,
                                   guint64 k, guint64 n) {
  EmaProfile *p = (EmaProfile *) profile; /* the imports are read on first need */
  char key[128];
  const Surface *exact, *made;
  const GemmGrid *grid = NULL;
  gemm_key(key, sizeof key, dtype, bias, k, n);
  exact = find_surface(p, EMA_PROFILE_GEMM, key); /* the GEMM imports read, unless measured */
  if (exact && exact->source == 0)
    return exact;
  lazy_load(p, 1u << EMA_PROFILE_GEMM);
  for (guint i = 0; i < p->grids->len && !bias && !grid; i++)
    if (g_array_index(p->grids, GemmGrid, i).dtype == dtype)
      grid = &g_array_index(p->grids, GemmGrid, i);
  if (!grid || (exact && exact->source <= grid->source))
    return exact;
  made = derived_surface(p, key, make_grid_surface, &(GridArgs){grid, k, n});
  return made ? made : exact;
}

void ema_profile_op_gemm(const EmaProfile *profile, EmaProfileDtype dtype, gboolean bias, guint64 k,
                         guint64 n, EmaProfileOp *op) {
  EmaProfileDtype dtypes[2];
  guint count;
  g_return_if_fail(profile != NULL && op != NULL);
  *op = (EmaProfileOp){{NULL}, FALSE};
  count = lookup_dtypes(dtype, dtypes);
  /* a biased GEMM: its bias rows (dtypes in slots 0-1), then the bias-free rows (2-3) */
  for (guint i = 0; i < count && !measured_first(op, 0, i); i++)
    op->surfaces[i] = gemm_surface(profile, dtypes[i], bias, k, n);
  for (guint i = 0; i < count && bias && !measured_first(op, 2, i); i++)
    op->surfaces[2 + i] = gemm_surface(profile, dtypes[i], FALSE, k, n);
  if (profile->fallback[EMA_PROFILE_GEMM] && !op_found(op)) {
    FALLBACK_FROM(op, 0, profile, EMA_PROFILE_GEMM, dtype, gemm_key, bias, k, n);
    if (bias)
      FALLBACK_FROM(op, 2, profile, EMA_PROFILE_GEMM, dtype, gemm_key, FALSE, k, n);
  }
}

/* A copy of FROM (finalized, of KIND) with every curve's outer times OUTER_SCALE, every
 * point's x times X_SCALE and its time above the curve's first point's times WORK_SCALE (t0 +
 * (t - t0) WORK_SCALE: the kernel's fixed part kept, its work scaled), its points FROM's data
 * set's: a derived surface (the caller keeps it in the profile's derived table). */
static Surface *scaled_surface(const EmaProfile *p, const Surface *from, EmaProfileKind kind,
                               double outer_scale, double x_scale, double work_scale) {
  Surface *s = g_new0(Surface, 1);
  s->curves = g_ptr_array_new_with_free_func(curve_free);
  s->rising = from->rising;
  for (guint i = 0; i < from->curves->len; i++) {
    const Curve *c = from->curves->pdata[i];
    Curve *copy = g_new0(Curve, 1);
    copy->outer = c->outer * outer_scale;
    copy->points = g_array_new(FALSE, FALSE, sizeof(Point));
    for (guint j = 0; j < c->n; j++) {
      Point pt = {c->x[j] * x_scale,
                  c->t[0] + (c->t[j] - c->t[0]) * work_scale,
                  g_intern_string(p->labels->pdata[from->source]),
                  0,
                  TRUE,
                  TRUE,
                  from->source};
      g_array_append_val(copy->points, pt);
    }
    g_ptr_array_add(s->curves, copy);
  }
  /* distinct x and outers in order, all from one finalized surface: cannot fail */
  if (!finalize_surface(s, kind, NULL))
    g_assert_not_reached();
  return s;
}

/* attn_folded's arguments, for derived_surface */
typedef struct {
  EmaProfileDtype dtype;
  guint q, kv, d, before;
  gboolean batched; /* prefill over prompts run together (attn_prompts_key) */
} FoldArgs;

/* the most KV heads a shape is multiplied by to find it in a table (make_attn_decode_folded) */
#define ATTN_UNFOLD_MAX 8

/* the largest query group (query heads per KV head) nearest_group() looks for */
#define ATTN_GROUP_MAX 64

/* KIND's attention of A's KV heads at the query group size nearest A's (Q / KV, whole; by
 * ratio, ties to the larger) that a data set of precedence below A->before holds, and that
 * group size (*FROM_GROUP); NULL where none is held. */
static const Surface *nearest_group(const EmaProfile *p, EmaProfileKind kind, const FoldArgs *a,
                                    guint *from_group) {
  const Surface *from = NULL;
  guint group = a->q / a->kv;
  double best = G_MAXDOUBLE;
  *from_group = 0;
  for (guint g = 1; g <= ATTN_GROUP_MAX; g++) {
    char key[128];
    const Surface *s;
    double distance;
    if (g == group)
      continue;
    (a->batched ? attn_prompts_key : attn_key)(key, sizeof key, a->dtype, g * a->kv, a->kv, a->d);
    s = g_hash_table_lookup(p->tables[kind], key);
    if (!s || s->source >= a->before)
      continue;
    distance = fabs(log((double) g / (double) group));
    if (distance < best || (distance == best && g > *from_group)) {
      best = distance;
      from = s;
      *from_group = g;
    }
  }
  return from;
}

/* Decode attention of Q query and KV key-value heads of D from the shape of Q/g and KV/g
 * heads at g times the batch (the smallest g dividing both whose shape a data set of
 * precedence below BEFORE holds): a decode kernel's work is independent per sequence and KV
 * head group, so B sequences of KV groups are g B sequences of KV/g, for any whole g. How a
 * table without multi-head shapes (AIConfigurator's, 1-8 KV heads) times Llama-2-7B's 32 (g 4)
 * and Llama-2-13B's and OPT-13B's 40 (g 5); what it leaves out: one launch where the table's
 * shape had its own. Where no such g answers, the shape of m Q and m KV heads at B / m
 * sequences (the smallest m up to ATTN_UNFOLD_MAX held), by the same argument: a group size
 * the table has only at more heads, such as Qwen2.5-32B's or Llama-4-Scout's 20 over 4 at TP 2
 * as 40 over 8 (below the table's first batch, B / m < 1, its first batch's time: a lone
 * sequence's kernel is no faster with fewer groups). Where neither answers and no data set
 * holds the shape itself (BEFORE G_MAXUINT; a group size no table holds at any heads, such as
 * Qwen2.5-7B's 7), the nearest group size held at the same KV heads (by ratio, ties to the
 * larger): the kernel streams each KV head's cache once for all the queries of its group, and
 * AIConfigurator's tables time groups of 1 to 16 alike (H200, 4 KV heads, 64 sequences of 2,048
 * tokens: 73.6-75.0 us); an approximation, so a table's own rows of the shape come first
 * whatever their precedence. NULL where no such shape is held. */
static Surface *make_attn_decode_folded(const EmaProfile *p, gconstpointer args) {
  const FoldArgs *a = args;
  char key[128];
  const Surface *from;
  guint group;
  for (guint g = 2; g <= a->kv; g++) {
    if (a->q % g != 0 || a->kv % g != 0)
      continue;
    attn_key(key, sizeof key, a->dtype, a->q / g, a->kv / g, a->d);
    from = g_hash_table_lookup(p->tables[EMA_PROFILE_ATTN_DECODE], key);
    if (from && from->source < a->before)
      return scaled_surface(p, from, EMA_PROFILE_ATTN_DECODE, 1.0 / g, 1, 1);
  }
  for (guint m = 2; m <= ATTN_UNFOLD_MAX; m++) {
    attn_key(key, sizeof key, a->dtype, a->q * m, a->kv * m, a->d);
    from = g_hash_table_lookup(p->tables[EMA_PROFILE_ATTN_DECODE], key);
    if (from && from->source < a->before)
      return scaled_surface(p, from, EMA_PROFILE_ATTN_DECODE, (double) m, 1, 1);
  }
  if (a->before == G_MAXUINT && a->q % a->kv == 0 &&
      (from = nearest_group(p, EMA_PROFILE_ATTN_DECODE, a, &group)) != NULL)
    return scaled_surface(p, from, EMA_PROFILE_ATTN_DECODE, 1, 1, 1);
  return NULL;
}

/* the most KV heads a prefill shape of the same group size is looked for at
 * (make_attn_prefill_folded) */
#define ATTN_PREFILL_KV_MAX 64

/* Prefill attention of Q query and KV key-value heads of D from the shape of the same group
 * size Q/KV that a data set of precedence below BEFORE holds at the nearest KV heads KV' (by
 * ratio; ties to more), its work carried by KV / KV' over each curve's first point: a prefill
 * kernel's work is per query head, its first point (a short prompt) its fixed cost, which the
 * heads leave as it is. AIConfigurator's H100 table: 40 heads over 8 take 293 us for a 4,096-
 * token prompt, 16 over 4 116 us (0.40x for 0.4x the heads) and 14 us both at 256 tokens.
 * How 20 over 4 (Qwen2.5-32B, Llama-4-Scout at TP 2) and 20 multi-head (Llama-2-13B at TP 2)
 * are timed where no table has them. Where no table holds the group size at any KV heads (Qwen2.5-
 * 7B's 7) nor the shape itself, the nearest group size held at the same KV heads (nearest_group),
 * its work carried by the query heads, by the same argument. NULL where none is held. */
static Surface *make_attn_prefill_folded(const EmaProfile *p, gconstpointer args) {
  const FoldArgs *a = args;
  const Surface *from = NULL;
  guint from_kv = 0, from_group;
  double best = G_MAXDOUBLE;
  if (a->q % a->kv != 0)
    return NULL;
  for (guint kv = 1; kv <= ATTN_PREFILL_KV_MAX; kv++) {
    char key[128];
    const Surface *s;
    double distance;
    if (kv == a->kv)
      continue;
    (a->batched ? attn_prompts_key : attn_key)(key, sizeof key, a->dtype, a->q / a->kv * kv, kv,
                                               a->d);
    s = g_hash_table_lookup(p->tables[EMA_PROFILE_ATTN_PREFILL], key);
    if (!s || s->source >= a->before)
      continue;
    distance = fabs(log((double) kv / (double) a->kv));
    if (distance < best || (distance == best && kv > from_kv)) {
      best = distance;
      from = s;
      from_kv = kv;
    }
  }
  if (from)
    return scaled_surface(p, from, EMA_PROFILE_ATTN_PREFILL, 1, 1,
                          (double) a->kv / (double) from_kv);
  if (a->before == G_MAXUINT &&
      (from = nearest_group(p, EMA_PROFILE_ATTN_PREFILL, a, &from_group)) != NULL)
    return scaled_surface(p, from, EMA_PROFILE_ATTN_PREFILL, 1, 1,
                          (double) a->q / (double) (from_group * a->kv));
  return NULL;
}

/* KIND's attention of Q query and KV key-value heads of D from another shape a data set of
 * precedence below BEFORE holds (make_attn_decode_folded, make_attn_prefill_folded), made once
 * and kept in the profile's derived table; NULL where none is held. */
static const Surface *attn_folded(const EmaProfile *profile, EmaProfileKind kind,
                                  EmaProfileDtype dtype, guint q, guint kv, guint d, guint before,
                                  gboolean batched) {
  gboolean decode = kind == EMA_PROFILE_ATTN_DECODE;
  char key[160], shape[128];
  (batched ? attn_prompts_key : attn_key)(shape, sizeof shape, dtype, q, kv, d);
  g_snprintf(key, sizeof key, "%s folded %s before %u", decode ? "decode" : "prefill", shape,
             before);
  return derived_surface(profile, key, decode ? make_attn_decode_folded : make_attn_prefill_folded,
                         &(FoldArgs){dtype, q, kv, d, before, batched});
}

/* OP's surfaces for KIND's attention of Q and KV heads of D (BATCHED: prefill over prompts run
 * together, attn_prompts_key): the shape's own, unless a data set of higher precedence holds it
 * as another shape (attn_folded), then the measuring workload's (FALLBACK; none is batched). */
static void resolve_attention(const EmaProfile *profile, EmaProfileKind kind, EmaProfileDtype dtype,
                              guint q, guint kv, guint d, gboolean batched, EmaProfileOp *op) {
  EmaProfileDtype dtypes[2];
  guint count;
  if (batched)
    RESOLVE(op, profile, kind, dtype, attn_prompts_key, q, kv, d);
  else
    RESOLVE(op, profile, kind, dtype, attn_key, q, kv, d);
  count = lookup_dtypes(dtype, dtypes);
  for (guint i = 0; i < count && !measured_first(op, 0, i); i++) {
    const Surface *exact = op->surfaces[i], *folded;
    if (exact && exact->source == 0)
      continue;
    folded =
        attn_folded(profile, kind, dtypes[i], q, kv, d, exact ? exact->source : G_MAXUINT, batched);
    if (folded)
      op->surfaces[i] = folded;
  }
  if (!batched)
    FALLBACK(op, profile, kind, dtype, attn_key, q, kv, d);
}

void ema_profile_op_attn_decode(const EmaProfile *profile, EmaProfileDtype dtype, guint q_heads,
                                guint kv_heads, guint head_dim, EmaProfileOp *op) {
  resolve_attention(profile, EMA_PROFILE_ATTN_DECODE, dtype, q_heads, kv_heads, head_dim, FALSE,
                    op);
}

void ema_profile_op_attn_prefill(const EmaProfile *profile, EmaProfileDtype dtype, guint q_heads,
                                 guint kv_heads, guint head_dim, EmaProfileOp *op) {
  resolve_attention(profile, EMA_PROFILE_ATTN_PREFILL, dtype, q_heads, kv_heads, head_dim, FALSE,
                    op);
}

void ema_profile_op_attn_prefill_prompts(const EmaProfile *profile, EmaProfileDtype dtype,
                                         guint q_heads, guint kv_heads, guint head_dim,
                                         EmaProfileOp *op) {
  resolve_attention(profile, EMA_PROFILE_ATTN_PREFILL, dtype, q_heads, kv_heads, head_dim, TRUE,
                    op);
}

void ema_profile_op_moe(const EmaProfile *profile, EmaProfileDtype dtype, guint experts, guint64 k,
                        guint64 n, EmaProfileOp *op) {
  RESOLVE(op, profile, EMA_PROFILE_MOE, dtype, moe_key, experts, k, n);
  FALLBACK(op, profile, EMA_PROFILE_MOE, dtype, moe_key, experts, k, n);
}

void ema_profile_op_moe_fused(const EmaProfile *profile, EmaProfileDtype dtype, guint64 hidden,
                              guint64 ffn, guint topk, guint experts, EmaProfileOp *op) {
  RESOLVE(op, profile, EMA_PROFILE_MOE, dtype, moe_fused_key, hidden, ffn, topk, experts);
  FALLBACK(op, profile, EMA_PROFILE_MOE, dtype, moe_fused_key, hidden, ffn, topk, experts);
}

gboolean ema_profile_op_moe_fused_nearest(const EmaProfile *profile, EmaProfileDtype dtype,
                                          guint64 hidden, guint64 ffn, guint topk, guint experts,
                                          EmaProfileOp *op, EmaProfileMoeShape *from) {
  char prefix[64];
  GHashTableIter it;
  gpointer key, value;
  double best = G_MAXDOUBLE, size = (double) hidden * (double) ffn;
  const Surface *found = NULL;
  g_return_val_if_fail(profile != NULL && op != NULL && from != NULL, FALSE);
  *op = (EmaProfileOp){{NULL}, FALSE};
  lazy_load((EmaProfile *) profile, 1u << EMA_PROFILE_MOE);
  g_snprintf(prefix, sizeof prefix, "%s fused ", rate_class(dtype));
  g_hash_table_iter_init(&it, profile->tables[EMA_PROFILE_MOE]);
  while (g_hash_table_iter_next(&it, &key, &value)) {
    EmaProfileMoeShape shape;
    double distance;
    if (!g_str_has_prefix(key, prefix) ||
        sscanf((const char *) key + strlen(prefix),
               "h=%" G_GUINT64_FORMAT " f=%" G_GUINT64_FORMAT " k=%u e=%u", &shape.hidden,
               &shape.ffn, &shape.topk, &shape.experts) != 4)
      continue;
    distance = fabs(log((double) shape.hidden * (double) shape.ffn / size)) +
               fabs(log((double) shape.experts / (double) experts)) +
               fabs(log((double) shape.topk / (double) topk));
    /* ties (the hash table's order is not the run's to choose): the smaller shape, then the
     * fewer experts and the fewer per token */
    if (distance < best ||
        (distance == best &&
         (shape.hidden < from->hidden || (shape.hidden == from->hidden && shape.ffn < from->ffn) ||
          (shape.hidden == from->hidden && shape.ffn == from->ffn &&
           (shape.experts < from->experts ||
            (shape.experts == from->experts && shape.topk < from->topk)))))) {
      best = distance;
      *from = shape;
      found = value;
    }
  }
  op->surfaces[0] = found;
  return found != NULL;
}

/* The operator whose kernel stands in for NAME where the tables hold NAME at no width: a
 * LayerNorm for an RMSNorm (one more reduction), GELU for SiLU-and-multiply (one input, not
 * two); NULL for the others. */
static const char *elementwise_kin(const char *name) {
  return strcmp(name, "layernorm") == 0 ? "rmsnorm" : strcmp(name, "gelu") == 0 ? "silu_mul" : NULL;
}

/* elementwise_by_elements' arguments, for derived_surface */
typedef struct {
  EmaProfileDtype dtype;
  const char *name;
  guint64 width;
  GHashTable *table; /* the surfaces to take the nearest width from */
} WidthArgs;

static Surface *make_elementwise_by_elements(const EmaProfile *p, gconstpointer args) {
  const WidthArgs *a = args;
  const Surface *from = NULL;
  guint64 from_width = 0;
  double best = G_MAXDOUBLE;
  for (const char *op = a->name; op && !from; op = op == a->name ? elementwise_kin(op) : NULL) {
    char prefix[128];
    GHashTableIter it;
    gpointer k, v;
    elementwise_key(prefix, sizeof prefix, a->dtype, op, 0);
    prefix[strlen(prefix) - 1] = '\0'; /* "<class> <op> w=" */
    g_hash_table_iter_init(&it, a->table);
    while (g_hash_table_iter_next(&it, &k, &v)) {
      guint64 w;
      double distance;
      if (!g_str_has_prefix(k, prefix) ||
          !g_ascii_string_to_unsigned((const char *) k + strlen(prefix), 10, 1, G_MAXUINT64, &w,
                                      NULL))
        continue;
      distance = fabs(log((double) w / (double) a->width));
      if (distance < best || (distance == best && w > from_width)) {
        best = distance;
        from = v;
        from_width = w;
      }
    }
  }
  return from ? scaled_surface(p, from, EMA_PROFILE_ELEMENTWISE, 1,
                               (double) from_width / (double) a->width, 1)
              : NULL;
}

/* Operator NAME's elementwise surface at WIDTH made from its nearest width W' in the tables (of
 * DTYPE's rate class, the nearest by ratio, ties to the wider), or where they hold NAME at no
 * width, its kin's (elementwise_kin): its point at T tokens is one at T W' / W tokens here, as
 * an elementwise kernel's time follows the elements it reads and writes, tokens x width (at few
 * elements, its launch-bound floor). Made once and kept in the profile's derived table; NULL
 * where the tables hold neither at any width. */
static const Surface *elementwise_by_elements(const EmaProfile *profile, EmaProfileDtype dtype,
                                              const char *name, guint64 width, gboolean workload) {
  char key[160];
  elementwise_key(key, sizeof key, dtype, name, width);
  if (workload)
    g_strlcat(key, " of the workload's tables", sizeof key);
  lazy_load((EmaProfile *) profile, 1u << EMA_PROFILE_ELEMENTWISE);
  return derived_surface(profile, key, make_elementwise_by_elements,
                         &(WidthArgs){dtype, name, width,
                                      workload ? profile->fallback[EMA_PROFILE_ELEMENTWISE]
                                               : profile->tables[EMA_PROFILE_ELEMENTWISE]});
}

void ema_profile_op_elementwise(const EmaProfile *profile, EmaProfileDtype dtype, const char *name,
                                guint64 width, EmaProfileOp *op) {
  EmaProfileDtype dtypes[2];
  guint count;
  g_return_if_fail(name != NULL);
  RESOLVE(op, profile, EMA_PROFILE_ELEMENTWISE, dtype, elementwise_key, name, width);
  if (op_found(op))
    return; /* the width measured */
  count = lookup_dtypes(dtype, dtypes);
  for (guint i = 0; i < count; i++)
    op->surfaces[i] = elementwise_by_elements(profile, dtypes[i], name, width, FALSE);
  if (!profile->fallback[EMA_PROFILE_ELEMENTWISE] || op_found(op))
    return;
  /* the workload's own: the width, else the nearest */
  FALLBACK_FROM(op, 0, profile, EMA_PROFILE_ELEMENTWISE, dtype, elementwise_key, name, width);
  for (guint i = 0; i < count && !op_found(op); i++) {
    op->surfaces[i] = elementwise_by_elements(profile, dtypes[i], name, width, TRUE);
    op->workload = op->surfaces[i] != NULL;
  }
}

void ema_profile_op_allreduce(const EmaProfile *profile, EmaProfileDtype dtype, guint gpus,
                              EmaProfileAllreduce backend, EmaProfileOp *op) {
  g_return_if_fail(backend < EMA_PROFILE_N_ALLREDUCE);
  RESOLVE(op, profile, EMA_PROFILE_ALLREDUCE, dtype, allreduce_key, gpus, backend);
  FALLBACK(op, profile, EMA_PROFILE_ALLREDUCE, dtype, allreduce_key, gpus, backend);
}

gboolean ema_profile_op_measured(const EmaProfileOp *op) {
  g_return_val_if_fail(op != NULL, FALSE);
  for (guint i = 0; i < G_N_ELEMENTS(op->surfaces); i++)
    if (op->surfaces[i])
      return op->surfaces[i]->source == 0;
  return FALSE;
}

double ema_profile_op_pair_rate(const EmaProfileOp *op, double outer) {
  guint lo;
  g_return_val_if_fail(op != NULL, 0);
  for (guint i = 0; i < G_N_ELEMENTS(op->surfaces); i++)
    if (surface_place(op->surfaces[i], outer, NULL, &lo))
      return op->surfaces[i]->pair_rate * 1e6;
  return 0;
}

gboolean ema_profile_op_covers(const EmaProfileOp *op, double outer, double x) {
  guint lo;
  g_return_val_if_fail(op != NULL, FALSE);
  for (guint i = 0; i < G_N_ELEMENTS(op->surfaces); i++)
    if (surface_place(op->surfaces[i], outer, NULL, &lo)) {
      const Curve *c = op->surfaces[i]->curves->pdata[lo];
      return x >= c->x[0];
    }
  return FALSE;
}

gboolean ema_profile_op_has_outer(const EmaProfileOp *op, double outer) {
  g_return_val_if_fail(op != NULL, FALSE);
  for (guint i = 0; i < G_N_ELEMENTS(op->surfaces); i++)
    if (op->surfaces[i] && op->surfaces[i]->curves->len > 0) {
      const Surface *s = op->surfaces[i];
      for (guint j = 0; j < s->curves->len; j++)
        if (((const Curve *) s->curves->pdata[j])->outer == outer)
          return TRUE;
      return FALSE;
    }
  return FALSE;
}

const char *ema_profile_op_source(const EmaProfile *profile, const EmaProfileOp *op) {
  g_return_val_if_fail(profile != NULL && op != NULL, NULL);
  for (guint i = 0; i < G_N_ELEMENTS(op->surfaces); i++)
    if (op->surfaces[i])
      return profile->labels->pdata[op->surfaces[i]->source];
  return NULL;
}

gboolean ema_profile_gemm(const EmaProfile *profile, EmaProfileDtype dtype, double m, guint64 k,
                          guint64 n, double *time_us) {
  EmaProfileOp op;
  g_return_val_if_fail(profile != NULL && time_us != NULL, FALSE);
  ema_profile_op_gemm(profile, dtype, FALSE, k, n, &op);
  return ema_profile_op_at(&op, 0, m, time_us);
}

gboolean ema_profile_attn_decode(const EmaProfile *profile, EmaProfileDtype dtype, guint q_heads,
                                 guint kv_heads, guint head_dim, double batch, double context,
                                 double *time_us) {
  EmaProfileOp op;
  g_return_val_if_fail(profile != NULL && time_us != NULL, FALSE);
  ema_profile_op_attn_decode(profile, dtype, q_heads, kv_heads, head_dim, &op);
  return ema_profile_op_at(&op, batch, context, time_us);
}

gboolean ema_profile_attn_prefill(const EmaProfile *profile, EmaProfileDtype dtype, guint q_heads,
                                  guint kv_heads, guint head_dim, double chunk,
                                  double prior_context, double *time_us) {
  EmaProfileOp op;
  g_return_val_if_fail(profile != NULL && time_us != NULL, FALSE);
  ema_profile_op_attn_prefill(profile, dtype, q_heads, kv_heads, head_dim, &op);
  return ema_profile_op_at(&op, prior_context, chunk, time_us);
}

gboolean ema_profile_moe(const EmaProfile *profile, EmaProfileDtype dtype, guint experts,
                         double tokens_per_expert, guint64 k, guint64 n, double *time_us) {
  EmaProfileOp op;
  g_return_val_if_fail(profile != NULL && time_us != NULL, FALSE);
  ema_profile_op_moe(profile, dtype, experts, k, n, &op);
  return ema_profile_op_at(&op, 0, tokens_per_expert, time_us);
}

gboolean ema_profile_elementwise(const EmaProfile *profile, EmaProfileDtype dtype, const char *op,
                                 guint64 width, double tokens, double *time_us) {
  EmaProfileOp resolved;
  g_return_val_if_fail(profile != NULL && op != NULL && time_us != NULL, FALSE);
  ema_profile_op_elementwise(profile, dtype, op, width, &resolved);
  return ema_profile_op_at(&resolved, 0, tokens, time_us);
}

gboolean ema_profile_allreduce(const EmaProfile *profile, EmaProfileDtype dtype, guint gpus,
                               EmaProfileAllreduce backend, double bytes, double *time_us) {
  EmaProfileOp op;
  g_return_val_if_fail(profile != NULL && time_us != NULL, FALSE);
  ema_profile_op_allreduce(profile, dtype, gpus, backend, &op);
  return ema_profile_op_at(&op, 0, bytes, time_us);
}

/* ---- tables --------------------------------------------------------------- */

static gboolean csv_dtype(const EmaCsv *csv, guint index, EmaProfileDtype *dtype, GError **error) {
  for (int i = 0; dtype_names[i]; i++)
    if (strcmp(csv->fields[index], dtype_names[i]) == 0) {
      *dtype = (EmaProfileDtype) i;
      return TRUE;
    }
  g_autofree char *quoted = ema_file_quote_cut(csv->fields[index], -1);
  g_set_error(error, EMA_CONFIG_ERROR, EMA_CONFIG_ERROR_TYPE,
              "%s:%u:%u: column 'dtype': '%s' is not bf16, fp16 or fp8", csv->file, csv->line,
              ema_csv_field_column(csv, index), quoted);
  return FALSE;
}

/* V, the number of field INDEX, as a count a shape key holds (a guint: heads, head_dim, experts,
 * GPUs); FALSE with an error at its place where it is larger. */
static gboolean csv_count(const EmaCsv *csv, guint index, double v, GError **error) {
  if (v <= G_MAXUINT)
    return TRUE;
  g_autofree char *quoted = ema_file_quote_cut(csv->fields[index], -1);
  g_set_error(error, EMA_CONFIG_ERROR, EMA_CONFIG_ERROR_TYPE,
              "%s:%u:%u: column '%s': '%s' is above %u", csv->file, csv->line,
              ema_csv_field_column(csv, index), csv->header[index], quoted, G_MAXUINT);
  return FALSE;
}

static Point point_here(const EmaCsv *csv, double x, double t, gboolean keep_fastest) {
  Point pt = {x, t, csv->file, csv->line, keep_fastest, FALSE, 0};
  return pt;
}

/* A point of an imported data set: duplicates keep the fastest. */
static Point import_point(const EmaCsv *csv, double x, double t, guint source) {
  Point pt = {x, t, csv->file, csv->line, TRUE, TRUE, source};
  return pt;
}

static const char *const elementwise_ops[] = {"rmsnorm",   "layernorm", "silu_mul",  "gelu",
                                              "rope",      "add",       "embedding", "kv_write",
                                              "moe_route", NULL};

/* The columns of each table of hwmodels/profiles/README.md: the numbers (all whole but
 * the time, the last of them), then dtype, then op for elementwise. */
static const char *const table_columns[EMA_PROFILE_N_KINDS][8] = {
    {"m", "k", "n", "time_us", "dtype", NULL},
    {"batch", "context", "q_heads", "kv_heads", "head_dim", "time_us", "dtype", NULL},
    {"chunk", "prior_context", "q_heads", "kv_heads", "head_dim", "time_us", "dtype", NULL},
    {"experts", "tokens_per_expert", "k", "n", "time_us", "dtype", NULL},
    {"tokens", "width", "time_us", "dtype", "op", NULL},
    {"gpus", "bytes", "time_us", "dtype", NULL},
};
/* The numbers of each table (bits, in table_columns' order) that its key holds as a guint. */
static const guint table_counts[EMA_PROFILE_N_KINDS] = {0, 0x1c, 0x1c, 0x1, 0, 0x1};

typedef struct {
  EmaProfile *p;
  EmaProfileKind kind;
  gboolean has_bias; /* gemm.csv has the optional `bias` column (its index after the others) */
} TableLoad;

static gboolean table_row(const EmaCsv *csv, const guint *index, gpointer data, GError **error) {
  const TableLoad *load = data;
  EmaProfileKind kind = load->kind;
  const char *const *names = table_columns[kind];
  guint numeric = 0;
  double v[8];
  EmaProfileDtype dtype;
  char key[128];
  Point pt;
  gboolean attention = kind == EMA_PROFILE_ATTN_DECODE || kind == EMA_PROFILE_ATTN_PREFILL;
  while (strcmp(names[numeric], "dtype") != 0)
    numeric++;
  /* a prefill chunk's prior_context may be 0 */
  if (!ema_csv_numbers(csv, index, numeric, kind == EMA_PROFILE_ATTN_PREFILL ? 2u : 0u, v, error) ||
      !csv_dtype(csv, index[numeric], &dtype, error))
    return FALSE;
  for (guint i = 0; i < numeric; i++)
    if (((table_counts[kind] >> i) & 1) && !csv_count(csv, index[i], v[i], error))
      return FALSE;
  switch (kind) {
  case EMA_PROFILE_GEMM: {
    gboolean bias = FALSE;
    if (load->has_bias) {
      const char *field = csv->fields[index[numeric + 1]];
      if (strcmp(field, "0") != 0 && strcmp(field, "1") != 0) {
        g_autofree char *quoted = ema_file_quote_cut(field, -1);
        g_set_error(error, EMA_CONFIG_ERROR, EMA_CONFIG_ERROR_TYPE,
                    "%s:%u:%u: column 'bias': '%s' is not 0 or 1", csv->file, csv->line,
                    ema_csv_field_column(csv, index[numeric + 1]), quoted);
        return FALSE;
      }
      bias = field[0] == '1';
    }
    gemm_key(key, sizeof key, dtype, bias, (guint64) v[1], (guint64) v[2]);
    pt = point_here(csv, v[0], v[3], FALSE);
    add_point(load->p, kind, key, 0, &pt);
    break;
  }
  case EMA_PROFILE_ATTN_DECODE:
  case EMA_PROFILE_ATTN_PREFILL:
    attn_key(key, sizeof key, dtype, (guint) v[2], (guint) v[3], (guint) v[4]);
    pt = point_here(csv, kind == EMA_PROFILE_ATTN_DECODE ? v[1] : v[0], v[5], attention);
    add_point(load->p, kind, key, kind == EMA_PROFILE_ATTN_DECODE ? v[0] : v[1], &pt);
    break;
  case EMA_PROFILE_MOE:
    moe_key(key, sizeof key, dtype, (guint) v[0], (guint64) v[2], (guint64) v[3]);
    pt = point_here(csv, v[1], v[4], FALSE);
    add_point(load->p, kind, key, 0, &pt);
    break;
  case EMA_PROFILE_ELEMENTWISE: {
    const char *op = csv->fields[index[4]];
    if (!g_strv_contains(elementwise_ops, op)) {
      g_autofree char *quoted = ema_file_quote_cut(op, -1);
      g_set_error(error, EMA_CONFIG_ERROR, EMA_CONFIG_ERROR_TYPE,
                  "%s:%u:%u: column 'op': unknown operator '%s'", csv->file, csv->line,
                  ema_csv_field_column(csv, index[4]), quoted);
      return FALSE;
    }
    elementwise_key(key, sizeof key, dtype, op, (guint64) v[1]);
    pt = point_here(csv, v[0], v[2], FALSE);
    add_point(load->p, kind, key, 0, &pt);
    break;
  }
  case EMA_PROFILE_ALLREDUCE:
    allreduce_key(key, sizeof key, dtype, (guint) v[0], EMA_PROFILE_ALLREDUCE_ANY);
    pt = point_here(csv, v[1], v[2], FALSE);
    add_point(load->p, kind, key, 0, &pt);
    break;
  default:
    g_assert_not_reached();
  }
  return TRUE;
}

/* gemm.csv's columns with the optional `bias` last */
static const char *const gemm_bias_columns[] = {"m", "k", "n", "time_us", "dtype", "bias", NULL};

/* One table of hwmodels/profiles/README.md's format. */
static gboolean load_table(EmaProfile *p, EmaProfileKind kind, const char *path, GError **error) {
  TableLoad load = {p, kind, FALSE};
  if (kind == EMA_PROFILE_GEMM) {
    EmaCsv csv;
    if (!ema_csv_open(&csv, path, error)) {
      ema_csv_clear(&csv); /* what a failed open read is the caller's to free */
      return FALSE;
    }
    load.has_bias = g_strv_contains((const char *const *) csv.header, "bias");
    ema_csv_clear(&csv);
  }
  return ema_csv_read(path, load.has_bias ? gemm_bias_columns : table_columns[kind], table_row,
                      &load, error);
}

/* ---- imports of public data sets ----------------------------------------- */

/* Shape of a Vidur mlp.csv row on one GPU of its TP group. */
typedef struct {
  double heads, kv_heads, hidden, ffn, tp, tokens;
  gboolean gated;
} VidurShape;

/* Heads of one GPU in a TP group: kv heads are replicated when fewer than tp. */
static guint heads_per_gpu(double heads, double tp) {
  return (guint) MAX(1.0, heads / tp);
}

/* Vidur's mlp.csv: the shape columns, use_gated_mlp, then the operators'
 * medians (ms), in the order of vidur_ops. */
static const char *const vidur_columns[] = {"n_head",
                                            "n_kv_head",
                                            "n_embd",
                                            "n_expanded_embd",
                                            "num_tensor_parallel_workers",
                                            "num_tokens",
                                            "use_gated_mlp",
                                            "time_stats.attn_pre_proj.median",
                                            "time_stats.attn_post_proj.median",
                                            "time_stats.mlp_up_proj.median",
                                            "time_stats.mlp_down_proj.median",
                                            "time_stats.input_layernorm.median",
                                            "time_stats.attn_rope.median",
                                            "time_stats.mlp_act.median",
                                            "time_stats.add.median",
                                            "time_stats.emb.median",
                                            NULL};

/* An import measured on another GPU of the same compute and a different
 * memory bandwidth (an import's `transfer:`): each GEMM and attention point's
 * time t becomes t R(c, m r) / R(c, m), R the per-operator roofline (c^p +
 * m^p)^(1/p) (steptime.h) of its compute time c = FLOPs / flops and memory
 * time m = bytes / bandwidth on the measured GPU (flops, bandwidth: its
 * peaks), r = bandwidth / this GPU's bandwidth: a memory-bound kernel slows
 * by r, a compute-bound one keeps its time. An operator with no FLOPs (the
 * elementwise ones, launch-bound at few tokens) becomes t - m + m r: only
 * its ideal memory time moves, its fixed part (launch, ramp, tail) stays.
 * What it leaves out: a GEMM's or attention's fixed launch cost scales with
 * the memory side, and the L2 cache is the measured GPU's. */
typedef struct {
  double ratio;     /* r; 0: no transfer */
  double flops;     /* FLOP/s of the measured GPU */
  double bandwidth; /* B/s of the measured GPU */
} Transfer;

/* p of the roofline in the transfer (hwmodels/gpus' roofline_p, fitted on Vidur's GEMMs) */
#define TRANSFER_ROOFLINE_P 1.25

typedef struct {
  EmaProfile *p;
  EmaProfileDtype dtype;
  guint source;             /* the data set's precedence number */
  const Transfer *transfer; /* NULL: the points as measured */
  guint kinds;              /* the kinds it adds points to (an import's `kinds:`) */
  /* an import's `at_most:` (profile.h): COLLECT (non-NULL while its data set is read) gathers
   * each point's time, the least of duplicates, by point_id(); BOUND (non-NULL while the
   * import itself is read) caps each point at the collected one */
  GHashTable *collect;
  GHashTable *bound;
} ImportLoad;

/* A point's identity across two data sets of one format: kind, shape key, outer and x. */
static void point_id(char *buf, gsize size, EmaProfileKind kind, const char *key, double outer,
                     double x) {
  g_snprintf(buf, size, "%d %s %.17g %.17g", (int) kind, key, outer, x);
}

/* add_point for an import: a point of a kind the import leaves out is dropped; with `at_most:`
 * collected (BOUND), a point is no slower than the same point there */
static void import_point_add(const ImportLoad *load, EmaProfileKind kind, const char *key,
                             double outer, const Point *point) {
  char id[256];
  if (!(load->kinds & (1u << kind)))
    return;
  if (load->collect || load->bound)
    point_id(id, sizeof id, kind, key, outer, point->x);
  if (load->collect) {
    double *t = g_hash_table_lookup(load->collect, id);
    if (t)
      *t = MIN(*t, point->t);
    else
      g_hash_table_insert(load->collect, g_strdup(id), g_memdup2(&point->t, sizeof point->t));
    return;
  }
  if (load->bound) {
    const double *t = g_hash_table_lookup(load->bound, id);
    if (t && *t < point->t) {
      Point capped = *point;
      capped.t = *t;
      add_point(load->p, kind, key, outer, &capped);
      return;
    }
  }
  add_point(load->p, kind, key, outer, point);
}

static double transfer_roofline(double c, double m) {
  double big = MAX(c, m), small = MIN(c, m);
  return big <= 0
             ? 0
             : big * pow(1.0 + pow(small / big, TRANSFER_ROOFLINE_P), 1.0 / TRANSFER_ROOFLINE_P);
}

/* T microseconds of an operator of FLOPS and BYTES on the measured GPU, on
 * this one (Transfer), in microseconds. */
static double transferred(const ImportLoad *load, double t, double flops, double bytes) {
  const Transfer *x = load->transfer;
  double c, m, before;
  if (!x || x->ratio == 0)
    return t;
  c = flops / x->flops;
  m = bytes / x->bandwidth;
  if (flops <= 0 && t > m * 1e6)
    return t - m * 1e6 * (1 - x->ratio); /* no FLOPs (elementwise): its fixed part stays */
  before = transfer_roofline(c, m);
  return before > 0 ? t * transfer_roofline(c, m * x->ratio) / before : t;
}

/* The bytes per element of a profile dtype. */
static double dtype_bytes(EmaProfileDtype dtype) {
  return dtype == EMA_PROFILE_FP8 || dtype == EMA_PROFILE_FP8_BLOCK ? 1 : 2;
}

static gboolean vidur_mlp_row(const EmaCsv *csv, const guint *index, gpointer data,
                              GError **error) {
  const ImportLoad *load = data;
  const char *elementwise[5] = {"rmsnorm", "rope", "silu_mul", "add", "embedding"};
  double v[6], t[9];
  VidurShape s;
  guint q, kv, d;
  guint64 gemm_k[4], gemm_n[4], widths[5];
  char key[128];
  if (!ema_csv_numbers(csv, index, 6, 0, v, error))
    return FALSE;
  /* the heads and the head size (hidden / heads) are counts */
  for (guint i = 0; i < 3; i++)
    if (!csv_count(csv, index[i], v[i], error))
      return FALSE;
  for (guint i = 0; i < 9; i++)
    if (!ema_csv_number(csv, index[7 + i], FALSE, FALSE, &t[i], error))
      return FALSE;
  s = (VidurShape){
      v[0], v[1], v[2], v[3], v[4], v[5], g_ascii_strcasecmp(csv->fields[index[6]], "true") == 0};
  d = (guint) (s.hidden / s.heads);
  q = heads_per_gpu(s.heads, s.tp);
  kv = heads_per_gpu(s.kv_heads, s.tp);
  /* the four projections as (k, n) GEMMs; must match steptime.c's shapes */
  gemm_k[0] = (guint64) s.hidden;
  gemm_n[0] = (guint64) (q + 2 * kv) * d;
  gemm_k[1] = (guint64) q * d;
  gemm_n[1] = (guint64) s.hidden;
  gemm_k[2] = (guint64) s.hidden;
  gemm_n[2] = (guint64) ((s.gated ? 2 : 1) * s.ffn / s.tp);
  gemm_k[3] = (guint64) (s.ffn / s.tp);
  gemm_n[3] = (guint64) s.hidden;
  for (guint i = 0; i < 4; i++) {
    double kd = (double) gemm_k[i], nd = (double) gemm_n[i];
    Point pt = import_point(
        csv, s.tokens,
        transferred(load, t[i] * 1e3, 2 * s.tokens * kd * nd, 2 * (kd * nd + s.tokens * (kd + nd))),
        load->source);
    gemm_key(key, sizeof key, load->dtype, FALSE, gemm_k[i], gemm_n[i]);
    import_point_add(load, EMA_PROFILE_GEMM, key, 0, &pt);
  }
  widths[0] = (guint64) s.hidden;
  widths[1] = (guint64) (q + kv) * d;
  widths[2] = (guint64) (2 * s.ffn / s.tp);
  widths[3] = (guint64) s.hidden;
  widths[4] = (guint64) s.hidden;
  for (guint i = 0; i < 5; i++) {
    /* elementwise: read and write WIDTH per token */
    Point pt = import_point(csv, s.tokens,
                            transferred(load, t[4 + i] * 1e3, 0, 4 * s.tokens * (double) widths[i]),
                            load->source);
    if (!s.gated && i == 2)
      continue; /* a plain MLP's activation is not silu_mul */
    elementwise_key(key, sizeof key, load->dtype, elementwise[i], widths[i]);
    import_point_add(load, EMA_PROFILE_ELEMENTWISE, key, 0, &pt);
  }
  return TRUE;
}

/* Vidur's all_reduce.csv (size in bytes, median in ms) and the kernel
 * tables' gemm data.csv (latency in us): one row, one point. */
static const char *const vidur_allreduce_columns[] = {"num_workers", "size",
                                                      "time_stats.all_reduce.median", NULL};
static const char *const kernels_gemm_columns[] = {"m", "k", "n", "latency_us", NULL};

static gboolean vidur_allreduce_row(const EmaCsv *csv, const guint *index, gpointer data,
                                    GError **error) {
  const ImportLoad *load = data;
  double v[3];
  char key[64];
  Point pt;
  if (!ema_csv_numbers(csv, index, 3, 0, v, error) || !csv_count(csv, index[0], v[0], error))
    return FALSE;
  allreduce_key(key, sizeof key, load->dtype, (guint) v[0], EMA_PROFILE_ALLREDUCE_ANY);
  pt = import_point(csv, v[1], v[2] * 1e3, load->source);
  import_point_add(load, EMA_PROFILE_ALLREDUCE, key, 0, &pt);
  return TRUE;
}

static gboolean kernels_gemm_row(const EmaCsv *csv, const guint *index, gpointer data,
                                 GError **error) {
  const ImportLoad *load = data;
  double v[4];
  char key[96];
  Point pt;
  if (!ema_csv_numbers(csv, index, 4, 0, v, error))
    return FALSE;
  gemm_key(key, sizeof key, load->dtype, FALSE, (guint64) v[1], (guint64) v[2]);
  pt = import_point(csv, v[0], v[3], load->source);
  import_point_add(load, EMA_PROFILE_GEMM, key, 0, &pt);
  return TRUE;
}

typedef struct {
  EmaProfile *p;
  EmaProfileDtype dtype;
  gboolean decode;
  const char *key;
  guint source;
} AttnLoad;

static const char *const kernels_decode_columns[] = {"batch_size", "kv_len", "latency_us", "dtype",
                                                     NULL};
static const char *const kernels_prefill_columns[] = {"seq_len", "latency_us", "dtype", NULL};

static gboolean kernels_attn_row(const EmaCsv *csv, const guint *index, gpointer data,
                                 GError **error) {
  const AttnLoad *load = data;
  guint count = load->decode ? 3 : 2;
  double v[3];
  Point pt;
  if (strcmp(csv->fields[index[count]], dtype_names[load->dtype]) != 0)
    return TRUE; /* another dtype's row */
  if (!ema_csv_numbers(csv, index, count, 0, v, error))
    return FALSE;
  pt = import_point(csv, load->decode ? v[1] : v[0], v[count - 1], load->source);
  add_point(load->p, load->decode ? EMA_PROFILE_ATTN_DECODE : EMA_PROFILE_ATTN_PREFILL, load->key,
            load->decode ? v[0] : 0, &pt);
  return TRUE;
}

/* One kernel-table attention file, named HEADS-KVHEADS-DIM[-tpN].csv (heads
 * of the whole model; the per-GPU heads are those over N, 1 without -tp):
 * decode rows (batch_size, kv_len) or prefill rows (seq_len: one sequence,
 * no prior context). Rows of another dtype than DTYPE are skipped. */
static gboolean import_kernels_attn_file(const ImportLoad *import, const char *path,
                                         const char *base, gboolean decode, GError **error) {
  guint heads, kv_heads, dim, tp = 1;
  char key[96];
  AttnLoad load = {import->p, import->dtype, decode, key, import->source};
  int parsed = sscanf(base, "%u-%u-%u-tp%u.csv", &heads, &kv_heads, &dim, &tp);
  if (parsed < 3 || heads == 0 || kv_heads == 0 || dim == 0 || tp == 0) {
    g_set_error(error, EMA_CONFIG_ERROR, EMA_CONFIG_ERROR_INVALID,
                "%s: the name is not HEADS-KVHEADS-DIM[-tpN].csv", path);
    return FALSE;
  }
  attn_key(key, sizeof key, import->dtype, heads_per_gpu(heads, tp), heads_per_gpu(kv_heads, tp),
           dim);
  return ema_csv_read(path, decode ? kernels_decode_columns : kernels_prefill_columns,
                      kernels_attn_row, &load, error);
}

static gboolean import_kernels_attn(const ImportLoad *import, const char *dir_path, gboolean decode,
                                    GError **error) {
  g_autoptr(GDir) dir = g_dir_open(dir_path, 0, NULL);
  g_autoptr(GPtrArray) names = g_ptr_array_new_with_free_func(g_free);
  const char *entry;
  if (!dir) {
    g_set_error(error, EMA_CONFIG_ERROR, EMA_CONFIG_ERROR_IO, "%s: not a readable folder",
                dir_path);
    return FALSE;
  }
  while ((entry = g_dir_read_name(dir)) != NULL)
    if (g_str_has_suffix(entry, ".csv"))
      g_ptr_array_add(names, g_strdup(entry));
  /* the order of a folder's entries must not change the result */
  g_ptr_array_sort(names, (GCompareFunc) g_strcmp0);
  for (guint i = 0; i < names->len; i++) {
    g_autofree char *path = g_build_filename(dir_path, names->pdata[i], NULL);
    if (!import_kernels_attn_file(import, path, names->pdata[i], decode, error))
      return FALSE;
  }
  return TRUE;
}

/* ---- AIConfigurator's kernel tables -------------------------------------- */

/* A table of NVIDIA AIConfigurator's databases (../shared/groundtruth/
 * aiconfigurator): X.csv, the columns that hold one value for every row
 * moved to X.constants.yaml beside it. A column is read from the row, else
 * from the constants; an optional one (NULL name in the request) may be in
 * neither. Latencies are milliseconds. */
#define AIC_MAX_COLUMNS 12

typedef struct {
  EmaCsv csv;
  EmaNode *constants;                 /* NULL: no constants file */
  gint index[AIC_MAX_COLUMNS];        /* the row's field, or -1 */
  const char *fixed[AIC_MAX_COLUMNS]; /* the constant's value where index is -1 (NULL: absent) */
} AicTable;

static void aic_clear(AicTable *t) {
  ema_csv_clear(&t->csv);
  g_clear_pointer(&t->constants, ema_node_free);
}

/* Open PATH and find NAMES (NULL-terminated; a name starting with '?' is
 * optional). */
static gboolean aic_open(AicTable *t, const char *path, const char *const *names, GError **error) {
  g_autofree char *base = g_strndup(path, strlen(path) - (g_str_has_suffix(path, ".csv") ? 4 : 0));
  g_autofree char *constants = g_strconcat(base, ".constants.yaml", NULL);
  memset(t, 0, sizeof *t);
  if (!ema_csv_open(&t->csv, path, error))
    return FALSE;
  if (g_file_test(constants, G_FILE_TEST_EXISTS) &&
      !(t->constants = ema_node_load_file(constants, error)))
    return FALSE;
  for (guint i = 0; names[i]; i++) {
    gboolean optional = names[i][0] == '?';
    const char *name = names[i] + optional;
    const EmaNode *fixed = t->constants ? ema_node_get(t->constants, name) : NULL;
    g_assert(i < AIC_MAX_COLUMNS);
    t->index[i] = -1;
    for (guint c = 0; t->csv.header[c]; c++)
      if (strcmp(t->csv.header[c], name) == 0)
        t->index[i] = (gint) c;
    if (t->index[i] < 0 && fixed && fixed->kind == EMA_NODE_SCALAR)
      t->fixed[i] = fixed->value;
    if (t->index[i] < 0 && !t->fixed[i] && !optional) {
      g_set_error(error, EMA_CONFIG_ERROR, EMA_CONFIG_ERROR_KEY,
                  "%s:1:1: no column '%s' (nor a constant of that name in %s)", t->csv.file, name,
                  constants);
      return FALSE;
    }
  }
  return TRUE;
}

/* Field I of the current row (the constant where the table has one; NULL
 * for an optional column in neither). */
static const char *aic_text(const AicTable *t, guint i) {
  return t->index[i] >= 0 ? t->csv.fields[t->index[i]] : t->fixed[i];
}

/* Field I as a number >= 0 (an absent optional one: 0). */
static gboolean aic_number(const AicTable *t, guint i, double *v, GError **error) {
  const char *text = aic_text(t, i);
  char *end = NULL;
  if (!text) {
    *v = 0;
    return TRUE;
  }
  *v = ema_csv_parse_decimal(text, &end);
  if (end == text || *end != '\0' || !isfinite(*v) || *v < 0) {
    g_autofree char *quoted = ema_file_quote_cut(text, -1);
    g_set_error(error, EMA_CONFIG_ERROR, EMA_CONFIG_ERROR_TYPE,
                "%s:%u:%u: '%s' is not a number >= 0", t->csv.file, t->csv.line,
                t->index[i] >= 0 ? ema_csv_field_column(&t->csv, (guint) t->index[i]) : 1, quoted);
    return FALSE;
  }
  return TRUE;
}

/* Field I (V, read by aic_number) at least LEAST (a count: 1) or, LEAST 0, above 0 (a
 * latency); else an error at its place naming NAME, its column. */
static gboolean aic_least(const AicTable *t, guint i, const char *name, double v, double least,
                          GError **error) {
  if (least > 0 ? v >= least : v > 0)
    return TRUE;
  g_autofree char *quoted = ema_file_quote_cut(aic_text(t, i), -1);
  g_set_error(error, EMA_CONFIG_ERROR, EMA_CONFIG_ERROR_TYPE, "%s:%u:%u: column '%s': '%s' is %s",
              t->csv.file, t->csv.line,
              t->index[i] >= 0 ? ema_csv_field_column(&t->csv, (guint) t->index[i]) : 1, name,
              quoted, least > 0 ? "below 1" : "not a positive time");
  return FALSE;
}

/* Field I (V, read by aic_number) of the shape columns FIRST..LAST that a key holds as a count
 * (heads, sizes, experts, GPUs): at most G_MAXUINT; else an error at its place. */
static gboolean aic_counts(const AicTable *t, guint first, guint last, const double *v,
                           GError **error) {
  for (guint i = first; i <= last; i++)
    if (v[i] > G_MAXUINT) {
      g_autofree char *quoted = ema_file_quote_cut(aic_text(t, i), -1);
      gboolean field = t->index[i] >= 0;
      g_set_error(error, EMA_CONFIG_ERROR, EMA_CONFIG_ERROR_TYPE,
                  "%s:%u:%u: column '%s': '%s' is above %u", t->csv.file, t->csv.line,
                  field ? ema_csv_field_column(&t->csv, (guint) t->index[i]) : 1,
                  field ? t->csv.header[t->index[i]] : "(its constant)", quoted, G_MAXUINT);
      return FALSE;
    }
  return TRUE;
}

/* The first COUNT fields as numbers into V. */
static gboolean aic_numbers(const AicTable *t, guint count, double *v, GError **error) {
  for (guint i = 0; i < count; i++)
    if (!aic_number(t, i, &v[i], error))
      return FALSE;
  return TRUE;
}

/* An AIConfigurator dtype name as a profile dtype; FALSE for the ones the
 * step model has no use for (int8, int4, nvfp4, ...). */
static gboolean aic_dtype(const char *name, EmaProfileDtype *dtype) {
  static const struct {
    const char *name;
    EmaProfileDtype dtype;
  } names[] = {{"bfloat16", EMA_PROFILE_BF16},
               {"float16", EMA_PROFILE_FP16},
               {"half", EMA_PROFILE_FP16},
               {"fp8", EMA_PROFILE_FP8},
               {"fp8_block", EMA_PROFILE_FP8_BLOCK}};
  for (guint i = 0; name && i < G_N_ELEMENTS(names); i++)
    if (strcmp(name, names[i].name) == 0) {
      *dtype = names[i].dtype;
      return TRUE;
    }
  return FALSE;
}

/* The grid of the data set SOURCE for DTYPE, made on first use. */
static GemmGrid *grid_of(EmaProfile *p, guint source, EmaProfileDtype dtype) {
  GemmGrid grid = {source, dtype, NULL, NULL, NULL, FALSE};
  for (guint i = 0; i < p->grids->len; i++) {
    GemmGrid *at = &g_array_index(p->grids, GemmGrid, i);
    if (at->source == source && at->dtype == dtype)
      return at;
  }
  grid.ks = g_array_new(FALSE, FALSE, sizeof(guint64));
  grid.ns = g_array_new(FALSE, FALSE, sizeof(guint64));
  grid.corners = g_hash_table_new_full(g_str_hash, g_str_equal, g_free, surface_free);
  g_array_append_val(p->grids, grid);
  return &g_array_index(p->grids, GemmGrid, p->grids->len - 1);
}

/* One row of an AIConfigurator table into the profile (AicLoad.row). */
typedef gboolean (*AicRowFunc)(const ImportLoad *load, const AicTable *t, GError **error);

static gboolean aic_gemm_row(const ImportLoad *load, const AicTable *t, GError **error) {
  double v[4]; /* m, n, k, latency */
  EmaProfileDtype dtype;
  char key[128];
  Point pt;
  GemmGrid *grid;
  guint64 k, n;
  if (!aic_dtype(aic_text(t, 4), &dtype))
    return TRUE;
  if (!aic_numbers(t, 4, v, error) || !aic_counts(t, 1, 2, v, error))
    return FALSE;
  k = (guint64) v[2];
  n = (guint64) v[1];
  gemm_key(key, sizeof key, dtype, FALSE, k, n);
  pt = import_point(&t->csv, v[0],
                    transferred(load, v[3] * 1e3, 2 * v[0] * v[1] * v[2],
                                v[1] * v[2] * dtype_bytes(dtype) + 2 * v[0] * (v[1] + v[2])),
                    load->source);
  import_point_add(load, EMA_PROFILE_GEMM, key, 0, &pt);
  grid = grid_of(load->p, load->source, dtype);
  g_assert(!grid->finalized); /* a data set's rows are read together (lazy_load) */
  g_array_append_val(grid->ks, k);
  g_array_append_val(grid->ns, n);
  return TRUE;
}

/* generation_attention: BATCH sequences decode one token each after STEP
 * cached tokens (the table's context is STEP + 1); context_attention: the
 * prompts of BATCH sequences of ISL tokens, no cached prefix, in one kernel:
 * batch 1 as one prompt's rows (outer 0, the cached context), every batch
 * as the prompts-run-together rows (attn_prompts_key, outer the prompts),
 * which the step model takes what running a step's prompts together saves
 * from. Sliding-window rows are left out. */
static gboolean aic_attention_row(const ImportLoad *load, const AicTable *t, gboolean decode,
                                  GError **error) {
  double v[7]; /* batch, step or isl, heads, kv heads, head dim, window, latency */
  EmaProfileDtype dtype;
  char key[96];
  Point pt;
  if (!aic_dtype(aic_text(t, 7), &dtype))
    return TRUE;
  if (!aic_numbers(t, 7, v, error) || !aic_counts(t, 2, 4, v, error))
    return FALSE;
  if (v[5] != 0 || v[2] < 1 || v[3] < 1 || v[4] < 1)
    return TRUE;
  /* no sequences, an empty prompt or a kernel of no time would time every batch near it as
   * nothing (c prompts run together at T(c, n) / (c T(1, n)) of their runs alone) */
  if (!aic_least(t, 0, "batch_size", v[0], 1, error) ||
      (!decode && !aic_least(t, 1, "isl", v[1], 1, error)) ||
      !aic_least(t, 6, "latency", v[6], 0, error))
    return FALSE;
  {
    /* decode: every sequence reads its context's K and V; a prompt attends causally */
    double context = decode ? v[1] + 1 : v[1];
    double flops = decode ? 4 * v[2] * v[4] * context : 2 * v[2] * v[4] * context * context;
    double bytes = 2 * v[0] * v[3] * v[4] * context * dtype_bytes(dtype);
    pt = import_point(&t->csv, context, transferred(load, v[6] * 1e3, v[0] * flops, bytes),
                      load->source);
  }
  if (!decode) {
    attn_prompts_key(key, sizeof key, dtype, (guint) v[2], (guint) v[3], (guint) v[4]);
    import_point_add(load, EMA_PROFILE_ATTN_PREFILL, key, v[0], &pt);
    if (v[0] != 1)
      return TRUE;
  }
  attn_key(key, sizeof key, dtype, (guint) v[2], (guint) v[3], (guint) v[4]);
  import_point_add(load, decode ? EMA_PROFILE_ATTN_DECODE : EMA_PROFILE_ATTN_PREFILL, key,
                   decode ? v[0] : 0, &pt);
  return TRUE;
}

static gboolean aic_decode_row(const ImportLoad *load, const AicTable *t, GError **error) {
  return aic_attention_row(load, t, TRUE, error);
}

static gboolean aic_prefill_row(const ImportLoad *load, const AicTable *t, GError **error) {
  return aic_attention_row(load, t, FALSE, error);
}

/* An all-reduce of message_size elements of its dtype (2 bytes: the tables'
 * bfloat16 and half) among num_gpus GPUs. */
static gboolean aic_allreduce_point(const ImportLoad *load, const AicTable *t,
                                    const char *dtype_name, EmaProfileAllreduce backend,
                                    double gpus, double elements, double ms) {
  EmaProfileDtype dtype;
  char key[64];
  Point pt;
  if (!aic_dtype(dtype_name, &dtype) || dtype == EMA_PROFILE_FP8 ||
      dtype == EMA_PROFILE_FP8_BLOCK || gpus < 2)
    return TRUE;
  allreduce_key(key, sizeof key, dtype, (guint) gpus, backend);
  pt = import_point(&t->csv, elements * 2, ms * 1e3, load->source);
  import_point_add(load, EMA_PROFILE_ALLREDUCE, key, 0, &pt);
  return TRUE;
}

/* vLLM's custom all-reduce: backend vllm_graph (replayed from a CUDA graph)
 * or vllm_eager. */
static gboolean aic_custom_allreduce_row(const ImportLoad *load, const AicTable *t,
                                         GError **error) {
  double v[3]; /* gpus, message size, latency */
  const char *backend = aic_text(t, 3);
  if (!aic_numbers(t, 3, v, error) || !aic_counts(t, 0, 0, v, error))
    return FALSE;
  if (strcmp(backend, "vllm_graph") != 0 && strcmp(backend, "vllm_eager") != 0)
    return TRUE;
  return aic_allreduce_point(load, t, aic_text(t, 4),
                             backend[5] == 'g' ? EMA_PROFILE_ALLREDUCE_CUSTOM_GRAPH
                                               : EMA_PROFILE_ALLREDUCE_CUSTOM_EAGER,
                             v[0], v[1], v[2]);
}

/* NCCL's collectives: the all_reduce rows. */
static gboolean aic_nccl_row(const ImportLoad *load, const AicTable *t, GError **error) {
  double v[3]; /* gpus, message size, latency */
  if (strcmp(aic_text(t, 3), "all_reduce") != 0)
    return TRUE;
  if (!aic_numbers(t, 3, v, error) || !aic_counts(t, 0, 0, v, error))
    return FALSE;
  return aic_allreduce_point(load, t, aic_text(t, 4), EMA_PROFILE_ALLREDUCE_NCCL, v[0], v[1], v[2]);
}

/* vLLM's fused MoE (vllm_fused_moe): num_tokens tokens through a layer's
 * experts (both projections and the activation), each of inter_size /
 * moe_tp_size on this GPU; the rows of uniform routing (`balanced`, as the
 * step model's expert count assumes) and no expert parallelism. */
static gboolean aic_moe_row(const ImportLoad *load, const AicTable *t, GError **error) {
  double v[7]; /* tokens, hidden, inter, topk, experts, tp, ep, then latency */
  double ms;
  EmaProfileDtype dtype;
  char key[128];
  Point pt;
  if (strcmp(aic_text(t, 8), "vllm_fused_moe") != 0 || strcmp(aic_text(t, 9), "balanced") != 0 ||
      !aic_dtype(aic_text(t, 10), &dtype))
    return TRUE;
  if (!aic_numbers(t, 7, v, error) || !aic_number(t, 7, &ms, error) ||
      !aic_counts(t, 1, 4, v, error))
    return FALSE;
  if (v[6] != 1 || v[5] < 1 || v[0] < 1)
    return TRUE;
  moe_fused_key(key, sizeof key, dtype, (guint64) v[1], (guint64) (v[2] / v[5]), (guint) v[3],
                (guint) v[4]);
  {
    double flops, bytes;
    ema_profile_moe_fused_work(v[1], v[2] / v[5], v[3], v[4], v[0], dtype_bytes(dtype), &flops,
                               &bytes);
    pt = import_point(&t->csv, v[0], transferred(load, ms * 1e3, flops, bytes), load->source);
  }
  import_point_add(load, EMA_PROFILE_MOE, key, 0, &pt);
  return TRUE;
}

/* The numeric columns first (in the order the row functions read them),
 * then the text ones. */
static const char *const aic_gemm_columns[] = {"m", "n", "k", "latency", "gemm_dtype", NULL};
static const char *const aic_decode_columns[] = {
    "batch_size", "step",           "num_heads", "num_key_value_heads", "head_dim", "?window_size",
    "latency",    "kv_cache_dtype", NULL};
static const char *const aic_prefill_columns[] = {
    "batch_size", "isl",          "num_heads", "num_key_value_heads",
    "head_dim",   "?window_size", "latency",   "kv_cache_dtype",
    NULL};
static const char *const aic_moe_columns[] = {
    "num_tokens",  "hidden_size", "inter_size",    "topk",         "num_experts", "moe_tp_size",
    "moe_ep_size", "latency",     "kernel_source", "distribution", "moe_dtype",   NULL};
static const char *const aic_custom_columns[] = {"num_gpus", "message_size",    "latency",
                                                 "backend",  "allreduce_dtype", NULL};
static const char *const aic_nccl_columns[] = {"num_gpus", "message_size", "latency",
                                               "op_name",  "nccl_dtype",   NULL};

static gboolean import_aic(const ImportLoad *load, const char *path, const char *const *columns,
                           AicRowFunc row, GError **error) {
  AicTable t;
  GError *inner = NULL;
  gboolean ok = aic_open(&t, path, columns, &inner);
  while (ok && ema_csv_next(&t.csv, &inner))
    ok = row(load, &t, &inner);
  aic_clear(&t);
  if (inner) {
    g_propagate_error(error, inner);
    return FALSE;
  }
  return TRUE;
}

char *ema_profile_shared_dir(void) {
  const char *env = g_getenv("EMA_SHARED_DIR");
  g_autofree char *shared = NULL;
  if (env && *env)
    return g_strdup(env);
  shared = ema_data_dir("shared");
  return g_steal_pointer(&shared);
}

/* ---- the import formats ---------------------------------------------------- */

/* One `import:` format: its reader of the file or folder PATH. */
typedef gboolean (*ImportFunc)(const ImportLoad *load, const char *path, GError **error);

static gboolean import_vidur_mlp(const ImportLoad *load, const char *path, GError **error) {
  return ema_csv_read(path, vidur_columns, vidur_mlp_row, (gpointer) load, error);
}

static gboolean import_vidur_allreduce(const ImportLoad *load, const char *path, GError **error) {
  return ema_csv_read(path, vidur_allreduce_columns, vidur_allreduce_row, (gpointer) load, error);
}

static gboolean import_kernels_gemm(const ImportLoad *load, const char *path, GError **error) {
  return ema_csv_read(path, kernels_gemm_columns, kernels_gemm_row, (gpointer) load, error);
}

static gboolean import_kernels_decode(const ImportLoad *load, const char *path, GError **error) {
  return import_kernels_attn(load, path, TRUE, error);
}

static gboolean import_kernels_prefill(const ImportLoad *load, const char *path, GError **error) {
  return import_kernels_attn(load, path, FALSE, error);
}

static gboolean import_aic_gemm(const ImportLoad *load, const char *path, GError **error) {
  return import_aic(load, path, aic_gemm_columns, aic_gemm_row, error);
}

static gboolean import_aic_decode(const ImportLoad *load, const char *path, GError **error) {
  return import_aic(load, path, aic_decode_columns, aic_decode_row, error);
}

static gboolean import_aic_prefill(const ImportLoad *load, const char *path, GError **error) {
  return import_aic(load, path, aic_prefill_columns, aic_prefill_row, error);
}

static gboolean import_aic_moe(const ImportLoad *load, const char *path, GError **error) {
  return import_aic(load, path, aic_moe_columns, aic_moe_row, error);
}

static gboolean import_aic_allreduce(const ImportLoad *load, const char *path, GError **error) {
  return import_aic(load, path, aic_custom_columns, aic_custom_allreduce_row, error);
}

static gboolean import_aic_nccl(const ImportLoad *load, const char *path, GError **error) {
  return import_aic(load, path, aic_nccl_columns, aic_nccl_row, error);
}

/* Every format an `import:` entry may name (hwmodels/README.md). */
#define KIND(k) (1u << EMA_PROFILE_##k)

static const struct {
  const char *name;
  ImportFunc load;
  guint kinds; /* the tables it feeds */
} import_formats[] = {
    {"vidur-mlp", import_vidur_mlp, KIND(GEMM) | KIND(ELEMENTWISE)},
    {"vidur-allreduce", import_vidur_allreduce, KIND(ALLREDUCE)},
    {"kernels-gemm", import_kernels_gemm, KIND(GEMM)},
    {"kernels-decode", import_kernels_decode, KIND(ATTN_DECODE)},
    {"kernels-prefill", import_kernels_prefill, KIND(ATTN_PREFILL)},
    {"aic-gemm", import_aic_gemm, KIND(GEMM)},
    {"aic-decode", import_aic_decode, KIND(ATTN_DECODE)},
    {"aic-prefill", import_aic_prefill, KIND(ATTN_PREFILL)},
    {"aic-moe", import_aic_moe, KIND(MOE)},
    {"aic-allreduce", import_aic_allreduce, KIND(ALLREDUCE)},
    {"aic-nccl", import_aic_nccl, KIND(ALLREDUCE)},
};

/* An import entry of profile.yaml, checked at load, read on first need. */
typedef struct {
  guint format; /* index into import_formats */
  guint kinds;  /* the tables it feeds: its format's, or those its `kinds:` names */
  char *path;   /* NULL: absent (a warning) */
  EmaProfileDtype dtype;
  guint source;
  gboolean has_transfer;
  Transfer transfer;
  gboolean read;
  char *absent;  /* the warning of an absent data set (NULL: present), said on first need */
  char *at_most; /* `at_most:`'s data set (NULL: none, or absent: at_most_absent) */
  char *at_most_absent;
} Import;

static void import_clear(gpointer data) {
  g_free(((Import *) data)->path);
  g_free(((Import *) data)->absent);
  g_free(((Import *) data)->at_most);
  g_free(((Import *) data)->at_most_absent);
}

/* Say W, a warning of a data set a lookup needed and did not find, once (lazy_load). */
static void say_absent(EmaProfile *p, const char *w) {
  g_ptr_array_add(p->warnings, g_strdup(w));
  if (p->say_warnings)
    g_printerr("ema: warning: %s\n", w);
}

/* Read import IN into the staging tables, its `at_most:` data set first where it has one;
 * FALSE with the first error. */
static gboolean read_import(EmaProfile *p, const Import *in, GError **error) {
  ImportLoad load = {p,         in->dtype, in->source, in->has_transfer ? &in->transfer : NULL,
                     in->kinds, NULL,      NULL};
  g_autoptr(GHashTable) bound = NULL;
  if (in->at_most_absent)
    say_absent(p, in->at_most_absent);
  if (in->at_most) {
    ImportLoad collect = {p, in->dtype, in->source, NULL, in->kinds, NULL, NULL};
    bound = g_hash_table_new_full(g_str_hash, g_str_equal, g_free, g_free);
    collect.collect = bound;
    if (!import_formats[in->format].load(&collect, in->at_most, error))
      return FALSE;
    load.bound = bound;
  }
  return import_formats[in->format].load(&load, in->path, error);
}

/* ERROR (taken) as P's load error (ema_profile_check), unless an earlier one is kept. */
static void keep_load_error(EmaProfile *p, GError *error) {
  if (!p->load_error)
    p->load_error = error;
  else
    g_error_free(error);
}

/* Of the staged GEMM surface KEY (S, before finalize_surface keeps one data set's rows), the
 * rows of a grid's data set that the table will not hold (an earlier data set has the shape, or
 * the measured tables: MEASURED), copied into that grid's own rows (GemmGrid.corners). */
static void keep_grid_rows(EmaProfile *p, const char *key, const Surface *s, gboolean measured) {
  guint best = G_MAXUINT;
  for (guint i = 0; i < s->curves->len; i++) {
    const Curve *c = s->curves->pdata[i];
    for (guint j = 0; j < c->points->len; j++)
      best = MIN(best, g_array_index(c->points, Point, j).source);
  }
  for (guint g = 0; g < p->grids->len; g++) {
    GemmGrid *grid = &g_array_index(p->grids, GemmGrid, g);
    /* a grid of this read, whose data set loses this shape of its dtype */
    if (grid->finalized || (grid->source == best && !measured) || !gemm_key_of(key, grid->dtype))
      continue;
    for (guint i = 0; i < s->curves->len; i++) {
      const Curve *c = s->curves->pdata[i];
      for (guint j = 0; j < c->points->len; j++) {
        const Point *pt = &g_array_index(c->points, Point, j);
        if (pt->source == grid->source)
          add_point_into(grid->corners, EMA_PROFILE_GEMM, key, c->outer, pt);
      }
    }
  }
}

/* Read the imports that feed KINDS, and those that feed the other kinds
 * they feed (so that a kind's imports are read together: the precedence
 * among them is kept by finalize_surface), into staging tables; finalize
 * them and add each shape the measured tables lack. A read's error is kept
 * (ema_profile_check) and its kinds stay without imported rows. Under the
 * profile's lock: a profile is shared by a process's threads, and a kind's
 * table is not changed once read. */
static void lazy_load(EmaProfile *p, guint kinds) {
  guint closure = kinds & ~(guint) g_atomic_int_get(&p->loaded), grown = 1;
  if (closure == 0)
    return; /* read before (a kind's table never changes afterwards) */
  g_mutex_lock(&p->lock);
  closure = kinds & ~p->loaded;
  while (grown) {
    grown = 0;
    for (guint i = 0; i < p->imports->len; i++) {
      guint k = g_array_index(p->imports, Import, i).kinds;
      if ((k & closure) && (k & ~closure & ~p->loaded)) {
        closure |= k & ~p->loaded;
        grown = 1;
      }
    }
  }
  for (int k = 0; k < EMA_PROFILE_N_KINDS; k++)
    if (closure & (1u << k))
      p->staging[k] = g_hash_table_new_full(g_str_hash, g_str_equal, g_free, surface_free);
  for (guint i = 0; i < p->imports->len; i++) {
    Import *in = &g_array_index(p->imports, Import, i);
    GError *error = NULL;
    if (in->read || !(in->kinds & closure))
      continue;
    in->read = TRUE;
    if (!in->path) {
      /* needed and absent: said once, kept for the outputs (ema_profile_warnings) */
      say_absent(p, in->absent);
      continue;
    }
    if (!read_import(p, in, &error))
      keep_load_error(p, error);
  }
  for (int k = 0; k < EMA_PROFILE_N_KINDS; k++) {
    GHashTableIter it;
    gpointer key, value;
    if (!p->staging[k])
      continue;
    g_hash_table_iter_init(&it, p->staging[k]);
    while (g_hash_table_iter_next(&it, &key, &value)) {
      GError *error = NULL;
      if (k == EMA_PROFILE_GEMM)
        keep_grid_rows(p, key, value, g_hash_table_contains(p->tables[k], key));
      if (!p->load_error && !finalize_surface(value, (EmaProfileKind) k, &error))
        p->load_error = error;
      /* a shape of the measured tables keeps theirs (they come first) */
      if (!p->load_error && !g_hash_table_contains(p->tables[k], key)) {
        g_hash_table_iter_steal(&it);
        g_hash_table_insert(p->tables[k], key, value);
      }
    }
    g_clear_pointer(&p->staging[k], g_hash_table_unref);
  }
  {
    GError *error = NULL;
    if (!finalize_grids(p, &error))
      keep_load_error(p, error);
  }
  /* published last: a thread that sees a kind loaded finds its table complete */
  g_atomic_int_or(&p->loaded, closure);
  g_mutex_unlock(&p->lock);
}

gboolean ema_profile_read_all(const EmaProfile *profile, GError **error) {
  g_return_val_if_fail(profile != NULL, FALSE);
  lazy_load((EmaProfile *) profile, (1u << EMA_PROFILE_N_KINDS) - 1);
  return ema_profile_check(profile, error);
}

gboolean ema_profile_check(const EmaProfile *profile, GError **error) {
  EmaProfile *p = (EmaProfile *) profile;
  gboolean ok;
  g_return_val_if_fail(profile != NULL, FALSE);
  g_mutex_lock(&p->lock);
  ok = p->load_error == NULL;
  if (!ok)
    g_set_error_literal(error, p->load_error->domain, p->load_error->code, p->load_error->message);
  g_mutex_unlock(&p->lock);
  return ok;
}

/* An import's `transfer: {flops: F, bandwidth: B, to_bandwidth: B'}`: the
 * measured GPU's peaks and this GPU's bandwidth (Transfer). */
static gboolean parse_transfer(const EmaNode *node, const char *path_key, Transfer *out,
                               GError **error) {
  const EmaNode *flops = ema_node_get(node, "flops");
  const EmaNode *from = ema_node_get(node, "bandwidth");
  const EmaNode *to = ema_node_get(node, "to_bandwidth");
  double to_bandwidth = 0;
  GError *inner = NULL;
  if (node->kind != EMA_NODE_MAP || !flops || !from || !to || !flops->value || !from->value ||
      !to->value) {
    ema_node_error(error, EMA_CONFIG_ERROR_KEY, node, path_key,
                   "transfer needs flops and bandwidth (the measured GPU's peaks) and "
                   "to_bandwidth (this GPU's)");
    return FALSE;
  }
  if (!ema_units_parse_flops(flops->value, &out->flops, &inner) ||
      !ema_units_parse_bandwidth(from->value, &out->bandwidth, &inner) ||
      !ema_units_parse_bandwidth(to->value, &to_bandwidth, &inner) || out->flops <= 0 ||
      out->bandwidth <= 0 || to_bandwidth <= 0) {
    ema_node_error(error, EMA_CONFIG_ERROR_TYPE, node, path_key, "transfer: %s",
                   inner ? inner->message : "rates must be positive");
    g_clear_error(&inner);
    return FALSE;
  }
  out->ratio = out->bandwidth / to_bandwidth;
  return TRUE;
}

/* The precedence number of the data set LABEL: its first import's (equal
 * labels share one). */
static guint source_of(EmaProfile *p, const char *label) {
  for (guint i = 1; i < p->labels->len; i++)
    if (strcmp(p->labels->pdata[i], label) == 0)
      return i;
  g_ptr_array_add(p->labels, g_strdup(label));
  return p->labels->len - 1;
}

/* An import's `kinds: [KIND, ...]` (IMPORT): the tables of its format (FORMAT_KINDS) that it
 * feeds, into *OUT (e.g. only a data set's elementwise operators, beside another's GEMMs); else
 * profile.yaml's `workload_kernels:` (PATH_KEY), of any kinds in FORMAT_KINDS. */
static gboolean parse_kinds(const EmaNode *node, const char *path_key, guint format_kinds,
                            gboolean import, guint *out, GError **error) {
  *out = 0;
  if (node->kind != EMA_NODE_SEQ || node->items->len == 0) {
    ema_node_error(error, EMA_CONFIG_ERROR_TYPE, node, path_key,
                   import
                       ? "kinds must be a list of the tables the import feeds (e.g. [elementwise])"
                       : "must be a list of table kinds (e.g. [elementwise])");
    return FALSE;
  }
  for (guint i = 0; i < node->items->len; i++) {
    const EmaNode *item = node->items->pdata[i];
    int k = -1;
    for (int j = 0; j < EMA_PROFILE_N_KINDS && item->kind == EMA_NODE_SCALAR && item->value; j++)
      if (strcmp(item->value, kind_names[j]) == 0)
        k = j;
    if (k < 0 || !(format_kinds & (1u << k))) {
      g_autoptr(GString) list = g_string_new(NULL);
      for (int j = 0; j < EMA_PROFILE_N_KINDS; j++)
        if (format_kinds & (1u << j))
          g_string_append_printf(list, "%s%s", list->len ? ", " : "", kind_names[j]);
      g_autofree char *quoted =
          ema_file_quote_cut(item->kind == EMA_NODE_SCALAR && item->value ? item->value : "?", -1);
      ema_node_error(error, EMA_CONFIG_ERROR_KEY, item, path_key,
                     import ? "kinds: '%s' is not a table this format feeds (it feeds: %s)"
                            : "'%s' is not a table kind (one of: %s)",
                     quoted, list->str);
      return FALSE;
    }
    *out |= 1u << k;
  }
  return TRUE;
}

static gboolean load_import(EmaProfile *p, const EmaNode *entry, const char *path_key,
                            GError **error) {
  EmaNode *format = ema_node_get(entry, "format");
  EmaNode *rel = ema_node_get(entry, "path");
  EmaNode *dtype_node = ema_node_get(entry, "dtype");
  EmaNode *label = ema_node_get(entry, "label");
  EmaNode *transfer_node = ema_node_get(entry, "transfer");
  EmaNode *kinds_node = ema_node_get(entry, "kinds");
  EmaNode *at_most_node = ema_node_get(entry, "at_most");
  Transfer transfer = {0, 0, 0};
  guint kinds;
  EmaProfileDtype dtype = EMA_PROFILE_BF16;
  g_autofree char *shared = ema_profile_shared_dir();
  g_autofree char *path = NULL;
  gint which = -1;
  static const char *const keys[] = {"format",   "path",  "dtype",   "label",
                                     "transfer", "kinds", "at_most", NULL};
  g_autofree char *at_most = NULL;
  if (entry->kind != EMA_NODE_MAP || !format || !format->value || !rel || !rel->value) {
    ema_node_error(error, EMA_CONFIG_ERROR_KEY, entry, path_key,
                   "an import needs `format` and `path` (relative to the shared folder)");
    return FALSE;
  }
  for (guint i = 0; i < entry->keys->len; i++) {
    const EmaNode *key = entry->keys->pdata[i];
    if (!g_strv_contains(keys, key->value)) {
      g_autofree char *quoted = ema_file_quote_cut(key->value, -1);
      ema_node_error(error, EMA_CONFIG_ERROR_KEY, key, path_key,
                     "unknown key '%s' in an import (valid keys: format, path, dtype, label, "
                     "transfer, kinds, at_most)",
                     quoted);
      return FALSE;
    }
  }
  for (guint i = 0; i < G_N_ELEMENTS(import_formats); i++)
    if (strcmp(format->value, import_formats[i].name) == 0)
      which = (gint) i;
  if (which < 0) {
    g_autoptr(GString) list = g_string_new(NULL);
    for (guint i = 0; i < G_N_ELEMENTS(import_formats); i++)
      g_string_append_printf(list, "%s%s", i ? ", " : "", import_formats[i].name);
    g_autofree char *quoted = ema_file_quote_cut(format->value, -1);
    ema_node_error(error, EMA_CONFIG_ERROR_KEY, format, path_key,
                   "unknown import format '%s' (known: %s)", quoted, list->str);
    return FALSE;
  }
  kinds = import_formats[which].kinds;
  if (dtype_node) {
    gboolean found = FALSE;
    for (int i = 0; dtype_names[i] && dtype_node->value; i++)
      if (strcmp(dtype_node->value, dtype_names[i]) == 0) {
        dtype = (EmaProfileDtype) i;
        found = TRUE;
      }
    if (!found) {
      ema_node_error(error, EMA_CONFIG_ERROR_TYPE, dtype_node, path_key,
                     "dtype must be bf16, fp16, fp8 or fp8_block");
      return FALSE;
    }
  }
  if (transfer_node && !parse_transfer(transfer_node, path_key, &transfer, error))
    return FALSE;
  if (kinds_node &&
      !parse_kinds(kinds_node, path_key, import_formats[which].kinds, TRUE, &kinds, error))
    return FALSE;
  if (label && (label->kind != EMA_NODE_SCALAR || !label->value || !*label->value)) {
    ema_node_error(error, EMA_CONFIG_ERROR_TYPE, label, path_key,
                   "label must name the data set (imports of one label share a precedence)");
    return FALSE;
  }
  if (at_most_node) {
    if (at_most_node->kind != EMA_NODE_SCALAR || !at_most_node->value || !*at_most_node->value) {
      ema_node_error(error, EMA_CONFIG_ERROR_TYPE, at_most_node, path_key,
                     "at_most must be a data set's path (relative to the shared folder)");
      return FALSE;
    }
    if (import_formats[which].load != import_aic_decode &&
        import_formats[which].load != import_aic_prefill) {
      ema_node_error(error, EMA_CONFIG_ERROR_KEY, at_most_node, path_key,
                     "at_most applies to aic-decode and aic-prefill imports only");
      return FALSE;
    }
    at_most = g_build_filename(shared, at_most_node->value, NULL);
  }
  path = g_build_filename(shared, rel->value, NULL);
  {
    /* an absent data set is said when a lookup needs it (lazy_load): a run whose operators
     * the present data time loses nothing */
    gboolean present = g_file_test(path, G_FILE_TEST_EXISTS);
    Import in = {(guint) which,
                 kinds,
                 present ? g_strdup(path) : NULL,
                 dtype,
                 source_of(p, label ? label->value : format->value),
                 transfer_node != NULL,
                 transfer,
                 FALSE,
                 present ? NULL
                         : g_strdup_printf("profile %s: %s absent (%s): its operators fall back "
                                           "to the roofline",
                                           p->name, rel->value, path),
                 NULL,
                 NULL};
    if (at_most && g_file_test(at_most, G_FILE_TEST_EXISTS))
      in.at_most = g_steal_pointer(&at_most);
    else if (at_most)
      in.at_most_absent = g_strdup_printf("profile %s: %s's bound %s absent (%s): its points "
                                          "as measured",
                                          p->name, rel->value, at_most_node->value, at_most);
    g_array_append_val(p->imports, in);
  }
  return TRUE;
}

/* ---- profile.yaml -------------------------------------------------------- */

static void grid_clear(gpointer data) {
  GemmGrid *grid = data;
  g_array_unref(grid->ks);
  g_array_unref(grid->ns);
  g_hash_table_unref(grid->corners);
}

static EmaProfile *profile_new(const char *name) {
  EmaProfile *p = g_new0(EmaProfile, 1);
  p->name = g_strdup(name);
  p->warnings = g_ptr_array_new_with_free_func(g_free);
  p->labels = g_ptr_array_new_with_free_func(g_free);
  g_ptr_array_add(p->labels, g_strdup_printf("%s measured tables", name));
  p->grids = g_array_new(FALSE, FALSE, sizeof(GemmGrid));
  g_array_set_clear_func(p->grids, grid_clear);
  p->derived = g_hash_table_new_full(g_str_hash, g_str_equal, g_free, surface_free);
  g_mutex_init(&p->lock);
  p->imports = g_array_new(FALSE, FALSE, sizeof(Import));
  g_array_set_clear_func(p->imports, import_clear);
  for (int k = 0; k < EMA_PROFILE_N_KINDS; k++)
    p->tables[k] = g_hash_table_new_full(g_str_hash, g_str_equal, g_free, surface_free);
  return p;
}

void ema_profile_free(EmaProfile *profile) {
  if (!profile)
    return;
  for (int k = 0; k < EMA_PROFILE_N_KINDS; k++) {
    g_hash_table_unref(profile->tables[k]);
    if (profile->fallback[k])
      g_hash_table_unref(profile->fallback[k]);
  }
  g_ptr_array_unref(profile->warnings);
  g_ptr_array_unref(profile->labels);
  g_array_unref(profile->grids);
  g_hash_table_unref(profile->derived);
  g_mutex_clear(&profile->lock);
  g_array_unref(profile->imports);
  g_clear_error(&profile->load_error);
  g_free(profile->name);
  g_free(profile->source);
  g_free(profile);
}

static gboolean load_tables(EmaProfile *p, const char *dir, const EmaNode *tables, GError **error) {
  if (tables->kind == EMA_NODE_SCALAR && (!tables->value || !*tables->value))
    return TRUE; /* `tables:` with nothing: none */
  if (tables->kind != EMA_NODE_SEQ) {
    ema_node_error(error, EMA_CONFIG_ERROR_TYPE, tables, "tables", "must be a list of CSV files");
    return FALSE;
  }
  for (guint i = 0; i < tables->items->len; i++) {
    const EmaNode *item = tables->items->pdata[i];
    int kind = -1;
    g_autofree char *path = NULL;
    for (int k = 0; k < EMA_PROFILE_N_KINDS && item->value; k++)
      if (strcmp(item->value, table_files[k]) == 0)
        kind = k;
    if (kind < 0) {
      g_autofree char *quoted = ema_file_quote_cut(item->value ? item->value : "~", -1);
      ema_node_error(error, EMA_CONFIG_ERROR_KEY, item, "tables",
                     "unknown table '%s' (known: gemm.csv, attn_decode.csv, attn_prefill.csv, "
                     "moe.csv, elementwise.csv, allreduce.csv)",
                     quoted);
      return FALSE;
    }
    path = g_build_filename(dir, item->value, NULL);
    if (!load_table(p, (EmaProfileKind) kind, path, error))
      return FALSE;
  }
  return TRUE;
}

/* The kinds of `workload_kernels:` into P. */
static gboolean load_workload_kinds(EmaProfile *p, const EmaNode *node, GError **error) {
  if (node->kind == EMA_NODE_SCALAR && (!node->value || !*node->value))
    return TRUE; /* `workload_kernels:` with nothing: none */
  return parse_kinds(node, "workload_kernels", (1u << EMA_PROFILE_N_KINDS) - 1, FALSE,
                     &p->workload_kinds, error);
}

/* In the engine view, the measured tables of the workload's kinds set aside as the
 * fallback (before the imports fill tables[] with the engines' data sets). */
static void set_aside_workload_tables(EmaProfile *p) {
  if (p->view != EMA_PROFILE_ENGINE)
    return;
  for (int k = 0; k < EMA_PROFILE_N_KINDS; k++)
    if (p->workload_kinds & (1u << k)) {
      p->fallback[k] = p->tables[k];
      p->tables[k] = g_hash_table_new_full(g_str_hash, g_str_equal, g_free, surface_free);
    }
}

EmaProfile *ema_profile_load(const char *dir, GError **error) {
  return ema_profile_load_view(dir, EMA_PROFILE_ENGINE, error);
}

EmaProfile *ema_profile_load_view(const char *dir, EmaProfileView view, GError **error) {
  g_autofree char *yaml = g_build_filename(dir, "profile.yaml", NULL);
  g_autofree char *name = g_path_get_basename(dir);
  g_autoptr(EmaNode) root = ema_node_load_file(yaml, error);
  g_autoptr(EmaProfile) p = NULL;
  EmaNode *source, *tables, *imports, *gap, *bandwidth, *workload;
  if (!root)
    return NULL;
  if (root->kind != EMA_NODE_MAP) {
    ema_node_error(error, EMA_CONFIG_ERROR_TYPE, root, NULL, "a profile.yaml is a map");
    return NULL;
  }
  p = profile_new(name);
  p->view = view;
  source = ema_node_get(root, "source");
  if (!source || !source->value) {
    ema_node_error(error, EMA_CONFIG_ERROR_KEY, root, "source",
                   "missing (measured, or the public data set imported)");
    return NULL;
  }
  p->source = g_strdup(source->value);
  gap = ema_node_get(root, "graph_gap");
  if (gap) {
    GError *local = NULL;
    if (!gap->value || !ema_units_parse_duration(gap->value, &p->graph_gap, &local) ||
        p->graph_gap < 0) {
      ema_node_error(error, EMA_CONFIG_ERROR_TYPE, gap, "graph_gap",
                     "a duration >= 0 (e.g. 350ns): %s",
                     local        ? local->message
                     : gap->value ? "negative"
                                  : "empty");
      g_clear_error(&local);
      return NULL;
    }
  }
  bandwidth = ema_node_get(root, "collective_bandwidth");
  if (bandwidth) {
    GError *local = NULL;
    if (!bandwidth->value ||
        !ema_units_parse_bandwidth(bandwidth->value, &p->collective_bandwidth, &local) ||
        !(p->collective_bandwidth > 0)) {
      ema_node_error(error, EMA_CONFIG_ERROR_TYPE, bandwidth, "collective_bandwidth",
                     "a bandwidth > 0 (e.g. 397GB/s): %s",
                     local              ? local->message
                     : bandwidth->value ? "not positive"
                                        : "empty");
      g_clear_error(&local);
      return NULL;
    }
  }
  workload = ema_node_get(root, "workload_kernels");
  if (workload && !load_workload_kinds(p, workload, error))
    return NULL;
  tables = ema_node_get(root, "tables");
  if (tables && !load_tables(p, dir, tables, error))
    return NULL;
  set_aside_workload_tables(p);
  imports = ema_node_get(root, "import");
  if (imports) {
    if (imports->kind != EMA_NODE_SEQ) {
      ema_node_error(error, EMA_CONFIG_ERROR_TYPE, imports, "import", "must be a list");
      return NULL;
    }
    for (guint i = 0; i < imports->items->len; i++)
      if (!load_import(p, imports->items->pdata[i], "import", error))
        return NULL;
  }
  if (!finalize(p, error))
    return NULL;
  return g_steal_pointer(&p);
}

/* ---- the per-process cache ----------------------------------------------- */

static GMutex cache_lock;
static GHashTable *cache; /* "folder\nview" -> EmaProfile *, never freed */

const EmaProfile *ema_profile_get(const char *name, GError **error) {
  return ema_profile_get_view(name, EMA_PROFILE_ENGINE, error);
}

/* The folders profiles are looked up in: EMA_PROFILE_PATH's, then the built-in one. */
static GPtrArray *profile_dirs(void) {
  GPtrArray *dirs = g_ptr_array_new_with_free_func(g_free);
  const char *env = g_getenv("EMA_PROFILE_PATH");
  if (env && *env) {
    g_auto(GStrv) parts = g_strsplit(env, G_SEARCHPATH_SEPARATOR_S, -1);
    for (guint i = 0; parts[i]; i++)
      if (*parts[i])
        g_ptr_array_add(dirs, g_strdup(parts[i]));
  }
  {
    g_autofree char *builtin = ema_data_dir("hwmodels");
    g_ptr_array_add(dirs, g_build_filename(builtin, "profiles", NULL));
  }
  return dirs;
}

/* The folder of profile NAME (newly allocated), or NULL with ERROR. */
static char *find_profile(const char *name, GError **error) {
  g_autoptr(GPtrArray) dirs = profile_dirs();
  for (guint i = 0; i < dirs->len && !strchr(name, '/'); i++) {
    g_autofree char *dir = g_build_filename(dirs->pdata[i], name, NULL);
    g_autofree char *yaml = g_build_filename(dir, "profile.yaml", NULL);
    if (g_file_test(yaml, G_FILE_TEST_EXISTS))
      return g_steal_pointer(&dir);
  }
  g_autofree char *quoted = ema_file_quote_cut(name, -1);
  g_set_error(error, EMA_CONFIG_ERROR, EMA_CONFIG_ERROR_KEY,
              "unknown profile '%s' (no %s/profile.yaml under EMA_PROFILE_PATH or %s)", quoted,
              quoted, (const char *) dirs->pdata[dirs->len - 1]);
  return NULL;
}

gboolean ema_profile_exists(const char *name, GError **error) {
  g_autofree char *dir = NULL;
  g_return_val_if_fail(name != NULL, FALSE);
  dir = find_profile(name, error);
  return dir != NULL;
}

const EmaProfile *ema_profile_get_view(const char *name, EmaProfileView view, GError **error) {
  g_autofree char *dir = NULL, *cache_key = NULL;
  EmaProfile *loaded;
  g_return_val_if_fail(name != NULL, NULL);
  if (!(dir = find_profile(name, error)))
    return NULL;
  /* the folder found, and the view: a search path changed within the process (the tests) finds
   * the profile it names */
  cache_key = g_strdup_printf("%s\n%s", dir, view == EMA_PROFILE_ENGINE ? "engine" : "workload");
  g_mutex_lock(&cache_lock);
  if (!cache)
    cache = g_hash_table_new_full(g_str_hash, g_str_equal, g_free, NULL);
  loaded = g_hash_table_lookup(cache, cache_key);
  if (!loaded) {
    loaded = ema_profile_load_view(dir, view, error);
    if (!loaded) {
      g_mutex_unlock(&cache_lock);
      return NULL;
    }
    /* an absent data set is said once per process, when a lookup first needs it */
    loaded->say_warnings = TRUE;
    g_hash_table_insert(cache, g_steal_pointer(&cache_key), loaded);
  }
  g_mutex_unlock(&cache_lock);
  return loaded;
}

gint64 ema_profile_graph_gap(const EmaProfile *profile) {
  g_return_val_if_fail(profile != NULL, 0);
  return profile->graph_gap;
}

double ema_profile_collective_bandwidth(const EmaProfile *profile) {
  g_return_val_if_fail(profile != NULL, 0);
  return profile->collective_bandwidth;
}

const char *ema_profile_name(const EmaProfile *profile) {
  g_return_val_if_fail(profile != NULL, NULL);
  return profile->name;
}

const char *ema_profile_source(const EmaProfile *profile) {
  g_return_val_if_fail(profile != NULL, NULL);
  return profile->source;
}

const GPtrArray *ema_profile_warnings(const EmaProfile *profile) {
  g_return_val_if_fail(profile != NULL, NULL);
  return profile->warnings;
}

guint ema_profile_rows(const EmaProfile *profile, EmaProfileKind kind) {
  g_return_val_if_fail(profile != NULL && kind < EMA_PROFILE_N_KINDS, 0);
  lazy_load((EmaProfile *) profile, 1u << kind);
  return profile->rows[kind];
}

void ema_profile_describe(const EmaProfile *profile, GString *out) {
  guint read = 0, present = 0;
  g_return_if_fail(profile != NULL && out != NULL);
  g_mutex_lock((GMutex *) &profile->lock);
  for (guint i = 0; i < profile->imports->len; i++) {
    const Import *in = &g_array_index(profile->imports, Import, i);
    present += in->path != NULL;
    read += in->read && in->path != NULL;
  }
  g_string_append_printf(out, "# profile %s (source: %s), rows:", profile->name, profile->source);
  for (int k = 0; k < EMA_PROFILE_N_KINDS; k++)
    g_string_append_printf(out, " %s %u", kind_names[k], profile->rows[k]);
  if (profile->imports->len > 0)
    g_string_append_printf(out,
                           " (of its %u imports present, the %u this run's operators needed "
                           "read)",
                           present, read);
  g_mutex_unlock((GMutex *) &profile->lock);
  g_string_append(out, "\n");
  if (profile->workload_kinds) {
    g_string_append(out, "# the measuring workload's own kernels, which a serving step takes from "
                         "the imports first:");
    for (int k = 0; k < EMA_PROFILE_N_KINDS; k++)
      if (profile->workload_kinds & (1u << k))
        g_string_append_printf(out, " %s", kind_names[k]);
    g_string_append(out, "\n");
  }
  for (guint i = 0; i < profile->warnings->len; i++)
    g_string_append_printf(out, "# warning: %s\n", (const char *) profile->warnings->pdata[i]);
}
