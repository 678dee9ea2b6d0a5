/* sweep.h: sweep files and the sweep runner behind `ema-sim sweep`.
 *
 * A sweep file is an experiment file with up to four more top-level keys,
 * which only `ema-sim sweep` accepts (ema_experiment_load refuses them):
 *
 *   variants:                    # named changes merged over the base
 *     static: {}                 #   (a map of dot-paths, or a partial tree:
 *     ema: {policy: ema}         #    maps merge key by key, the rest replaces)
 *   sweep:                       # the cartesian product, in file order
 *     tenants.0.trace.rate: [2, 4, 8]   # (the first path varies slowest)
 *   repeats: 3                   # runs of each point with derived seeds
 *   plot: {x: tenants.0.trace.rate, tenant: busy, title: "..."}  # for ema-sim plot
 *
 * Points are numbered 0..N-1: variant outermost (file order), then the
 * swept paths (the first slowest), then the repeat. A point is the base
 * tree, then its variant's entries in file order, then its swept values in
 * file order, each applied like --set (a path into maps and existing list
 * indices; names such as `policy: ema` are expanded after each, so that a
 * later path can reach inside them). The value nodes keep their place in
 * the sweep file, so an error about a swept value points at it there
 * ("sweep.yaml:12:35: tenants.0.trace.rate: ..."); a path that does not
 * lead anywhere is reported at the path's key. Repeat 0 keeps the point's
 * seed; repeat r > 0 runs with ema_trace_seed_derive(seed, "repeat r")
 * (its top 62 bits).
 *
 * Running: every point is checked before anything runs. Each point then
 * runs as its own process, `ema-sim run DIR/POINT/resolved.yaml -o
 * DIR/POINT --no-plot` (its output in DIR/POINT/run.out and run.err), so
 * that memory and crashes stay isolated; N at a time. A point whose summary.json exists and
 * whose resolved.yaml equals the one the sweep resolves now, whose search
 * paths (DIR/POINT/run.env) are the sweep's now, and whose
 * provenance.build_id is this build's (the same ema-sim binary and plugin
 * files, output.h), is not run again (resume); a point another build made
 * runs again unless reuse_other_builds (--reuse). Before any point runs
 * (again), DIR/sweep.csv, plot.yaml and plots/ are removed: they are
 * written when every point is done. DIR/sweep.csv has one row per point in point
 * order, whatever order they finished in: point, variant, one column per swept path, repeat, seed,
 * status (ok, missed: an ops expectation missed, failed, not-run: after --fail-fast), then the
 * metrics of summary.json (serving: per tenant throughput, TTFT/TPOT p50/p99, E2E p99, completed,
 * preemptions; the pool's borrows and reclaims; ops: per op seconds and
 * GB/s) as columns in the order they first appear. The file depends only
 * on the points' results, never on -j, the ranks or the timing. */
#pragma once

#include <glib.h>

#include "ema/run/experiment.h"

G_BEGIN_DECLS

typedef struct _EmaSweep EmaSweep;

/* Load and check the shape of a sweep file; OVERRIDES ("a.b=c", may be
 * NULL) are applied to the base experiment first, as --set, and where the
 * base loads as an experiment by itself, the base with them must load too
 * (a variant may replace what they set, and its points would not check
 * them). The points are not loaded yet: see ema_sweep_resolve. A variant's
 * name holds no control character; the points' names must fit the list of
 * the sweep's folder (its marker, at most EMA_FILE_MAX_TEXT). */
EmaSweep *ema_sweep_load(const char *path, const char *const *overrides, GError **error);
/* An experiment file with `compare:` (a map of named variants, the syntax
 * of a sweep's variants): one point per variant and repeat, in file order,
 * named by the variant. Of the sweep keys the file may have repeats only. */
EmaSweep *ema_sweep_load_compare(const char *path, const char *const *overrides, GError **error);
void ema_sweep_free(EmaSweep *sweep);
G_DEFINE_AUTOPTR_CLEANUP_FUNC(EmaSweep, ema_sweep_free)

/* Append the sweep keys (compare, variants, sweep, repeats, plot and its
 * keys) to OUT as `ema-sim describe experiment` lists keys. */
void ema_sweep_describe_keys(GString *out);

/* The repeat of POINT (0 .. n_repeats - 1), and the repeats of each point;
 * every variant's repeat r has the same seed (common random numbers). */
guint ema_sweep_point_repeat(const EmaSweep *sweep, guint point);
guint ema_sweep_n_repeats(const EmaSweep *sweep);

/* The base experiment's name. */
const char *ema_sweep_name(const EmaSweep *sweep);
guint ema_sweep_n_points(const EmaSweep *sweep);
/* "007-ema-rate=4-r1": the point's directory name (index, variant, swept
 * values, repeat) */
const char *ema_sweep_point_name(const EmaSweep *sweep, guint point);
/* The point's variant name; NULL without variants. */
const char *ema_sweep_variant_name(const EmaSweep *sweep, guint point);
/* The point's variant's key in its file (where an error about the variant points); NULL
 * without variants. */
const EmaNode *ema_sweep_variant_key(const EmaSweep *sweep, guint point);
/* "variant=ema tenants.0.trace.rate=4 repeat=1": what the point sets */
char *ema_sweep_point_describe(const EmaSweep *sweep, guint point);
/* Load POINT as an experiment (bound and checked, seed derived). */
EmaExperiment *ema_sweep_load_point(const EmaSweep *sweep, guint point, GError **error);

/* Load every point and keep its resolved.yaml's digest (SHA-256; the text
 * is made again when the point starts, and one that comes out otherwise, a
 * file it reads having changed since, fails the point) and seed; the first
 * error stops (located, and naming the point). Then the plot settings are
 * checked against the points: x and by must name a column sweep.csv will
 * have (by may be none), tenant one of their tenants (or all); an error
 * points at the setting in the sweep file. */
gboolean ema_sweep_resolve(EmaSweep *sweep, GError **error);
/* The checks of ema_sweep_resolve for the points i with i % RANKS == RANK
 * only, each loaded and freed (nothing kept: --list, --part). */
gboolean ema_sweep_check(const EmaSweep *sweep, guint rank, guint ranks, GError **error);

typedef enum {
  EMA_SWEEP_OK,      /* summary.json written, nothing missed */
  EMA_SWEEP_MISSED,  /* summary.json written, an ops expectation missed */
  EMA_SWEEP_FAILED,  /* the run failed: no summary.json */
  EMA_SWEEP_NOT_RUN, /* not started (--fail-fast after a failure) */
} EmaSweepStatus;

const char *ema_sweep_status_name(EmaSweepStatus status);

/* What a point gave: its status and its metrics (parallel arrays of
 * strings: the column name and the value as sweep.csv writes it). */
typedef struct {
  guint point;
  EmaSweepStatus status;
  gboolean resumed; /* found complete, not run again */
  GPtrArray *names;
  GPtrArray *values;
} EmaSweepRecord;

void ema_sweep_record_free(EmaSweepRecord *record);

typedef struct {
  const char *program;             /* the ema-sim that runs the points */
  const char *const *program_args; /* NULL-terminated, before "run" (--plugin-dir DIR) */
  guint jobs;                      /* processes at a time, at least 1 */
  gboolean fail_fast;              /* start nothing after the first failure */
  gboolean progress;               /* a progress line on stderr */
  guint rank, ranks;               /* run the points i with i % ranks == rank */
  gboolean reuse_other_builds;     /* resume points another build made (--reuse) */
  guint timeout_s;                 /* a point still running after this many seconds is
                                    * killed and failed (--timeout); 0: no limit */
  const GPtrArray *said_warnings;  /* the experiment warnings (texts) the sweep printed before
                                    * running: a point's run repeats them, and they name no point
                                    * again (NULL: none printed) */
} EmaSweepRunOptions;

/* The record of POINT of a resolved sweep when DIR holds it complete, as a
 * resume finds it done: DIR/summary.json reads with the shape `ema-sim run`
 * writes, BUILD_ID made it (unless REUSE_OTHER_BUILDS), DIR/run.env holds
 * RUN_ENV (the search paths the sweep gives its points now: EMA_HWMODEL_PATH,
 * EMA_LLM_PATH, EMA_ENGINE_PATH, EMA_PROFILE_PATH, EMA_SHARED_DIR,
 * EMA_FIDELITY_FILE, EMA_PLUGIN_PATH and --plugin-dir, each folder
 * absolute), DIR/resolved.yaml is the one the sweep resolves now, every
 * file the run read (provenance: plugins, traces, inputs) hashes as then,
 * and one of those files had DIR/resolved.yaml's SHA-256 (a summary.json
 * copied from another point, or without provenance, is not this point's
 * run; a copy of the whole sweep folder still is).
 * NULL otherwise; *STALE is then "" for another build's point, the path of
 * the first input that changed or the search path that differs
 * ("EMA_ENGINE_PATH is now /x, was none"; free it), else NULL. */
EmaSweepRecord *ema_sweep_point_done(const EmaSweep *sweep, guint point, const char *dir,
                                     const char *build_id, const char *run_env,
                                     gboolean reuse_other_builds, char **stale);

/* Run (or resume) this rank's points of a resolved sweep in DIR; with
 * RANKS > 1 (--part, MPI) DIR is shared with the other ranks for the
 * process's life, refused while a sweep without --part runs there or while
 * processes of another sweep (other points, or other shares) share it. Returns
 * their records (EmaSweepRecord *, in point order); NULL with an error only
 * when DIR cannot be used. Failures are reported on stderr as they happen. */
GPtrArray *ema_sweep_run(EmaSweep *sweep, const char *dir, const EmaSweepRunOptions *options,
                         GError **error);

/* Records as text and back, for gathering them from MPI ranks. */
char *ema_sweep_records_to_text(const GPtrArray *records);
GPtrArray *ema_sweep_records_from_text(const char *text, GError **error);

/* Write DIR/sweep.csv from the records of every point (any order) and
 * DIR/plot.yaml (the file's plot settings, for ema-sim plot). */
gboolean ema_sweep_write_results(const EmaSweep *sweep, const char *dir, GPtrArray *records,
                                 GError **error);

G_END_DECLS
