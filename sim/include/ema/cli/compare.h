/* compare.h: `ema-sim run` of an experiment with `compare:`, the same
 * serving experiment under several named variants side by side (for
 * example static, ema and the 2x oracle):
 *
 *   compare:                      # the syntax of a sweep's variants (sweep.h)
 *     static: {policy: static}
 *     ema: {policy: ema}
 *     2x: {policy: static, server.gpu.hbm_scale: 2}
 *
 * Each variant runs in this process, one after another, into DIR/VARIANT/
 * (a complete run folder: resolved.yaml, summary.json, tenants.csv,
 * requests.csv, timeline.csv), then DIR/compare.csv gets one row per
 * variant and the comparison is printed. With `repeats: N` each variant
 * runs N times (repeat r > 0 into DIR/VARIANT-rR/), repeat r of every
 * variant with the same seed (common random numbers); the table shows the
 * means, and each variant's change vs the baseline (the variant named
 * static, else the first) is paired by repeat: the mean of the per-repeat
 * relative changes with its 95% interval (Student's t, N - 1 degrees of
 * freedom), printed, per run in compare.csv (*_vs_baseline_pct) and per
 * variant in compare-paired.csv (drawn by ema-sim plot as compare-change). The borrower is the
 * tenant whose GPUs borrowed the most (at one timeline sample, in any variant); with no borrowing
 * anywhere, the tenant with the most preemptions in the first variant (the table says so). The
 * lenders are the other tenants that lent in some variant; where none did (idle GPUs lent, or
 * nothing was), every other tenant. GPUs without a tenant that lent in some run are named after
 * them ("gpu5..gpu7 (no tenant) lent up to 12.0 GiB at one sample": the most they lent together
 * at one timeline sample of any run; summary.json's idle_gpus has each one's peak). "lenders'
 * p99" is the worst lender's. "borrowed peak" is the most the borrower held at one timeline
 * sample; "lent in all" the pool's slices_borrowed (every slice lent over the run, cumulative),
 * "reclaimed" its slices_reclaimed. */
#pragma once

#include <stdio.h>

#include <glib.h>

#include "ema/cli/sweep.h"

G_BEGIN_DECLS

/* What ema_compare_run checks before it touches DIR: every variant loads and is a serving
 * experiment, and the variants' folders are distinct and none is one of the comparison's own
 * files. `ema-sim check` of a comparison runs it. */
gboolean ema_compare_check(EmaSweep *comparison, GError **error);

/* Each variant's warnings before a run (ema_output_warn_before, named by its folder), to stderr:
 * what `ema-sim check` of a comparison prints (ema_compare_run prints them as it runs each). */
void ema_compare_warn_before(EmaSweep *comparison);

/* Run every variant of COMPARISON (ema_sweep_load_compare) into DIR,
 * printing each variant's table and then the comparison on OUT. FALSE with
 * an error when a variant cannot be loaded or run, or DIR cannot be used. */
gboolean ema_compare_run(EmaSweep *comparison, const char *dir, gboolean progress, FILE *out,
                         GError **error);

/* The variants' folder names under DIR, in order (as ema_compare_run
 * writes them); NULL-terminated, free with g_strfreev. */
char **ema_compare_variant_dirs(const EmaSweep *comparison);

G_END_DECLS
