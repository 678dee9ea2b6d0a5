/* plot.h: figures with gnuplot (`ema-sim plot DIR`, and the end of `run`
 * and `sweep`). The C side reads the results (sweep.csv; requests.csv,
 * timeline.csv and summary.json of a run), writes the series gnuplot draws
 * as .dat files into DIR/plots/, and a driver DIR/plots/plots.gp that sets
 * each figure's variables (titles, series names) and loads its script;
 * gnuplot then draws every figure as PNG and SVG. The scripts are plain
 * files a user edits: the .gp files of plots/ in the source tree, or the
 * same names in a folder of EMA_PLOT_PATH (colon-separated, searched
 * first). `gnuplot plots.gp` in DIR/plots draws them again.
 *
 * Figures of a sweep (from sweep.csv): throughput and p99 TTFT/TPOT against
 * a swept number, one line per policy (or variant); ops sweeps: each op's
 * GB/s. Repeats are averaged; failed and not-run points are left out.
 * Figures of a serving run: TTFT and TPOT CDFs per tenant; per GPU, memory
 * over time stacked as local KV / staging / lent / borrowed with reclaims
 * marked; remote KV per GPU and the rate its steps read it over the links
 * (an estimate: the simulator records no per-link counters). */
#pragma once

#include <glib.h>

#include "ema/core/node.h"

G_BEGIN_DECLS

typedef struct {
  const char *x;      /* sweep: the column on the x axis (default: the first swept number) */
  const char *by;     /* sweep: the column that makes the lines (default: variant, or a
                         swept path with "policy" in it) */
  const char *tenant; /* sweep: whose metrics: a tenant, or "all" (throughput summed,
                         latency the worst tenant's; the default with several tenants); a run:
                         the tenants drawn (NAME or NAME,NAME,...; default all) */
  const char *title;
  const char *xlabel;
  /* the paper preset: figures a column wide (3.4 x 2.4 in), 7 pt type, as PDF (pdfcairo) and
   * SVG instead of PNG and SVG */
  gboolean paper;
} EmaPlotOptions;

/* SETTINGS (a sweep file's plot: map, PREFIX "plot"; DIR/plot.yaml, PREFIX NULL) is a map of
 * the settings EmaPlotOptions names by key (x, by, tenant, title, xlabel), one value each; else
 * an error at the node, naming its path. */
gboolean ema_plot_check_settings(const EmaNode *settings, const char *prefix, GError **error);
/* gnuplot's path on PATH (or EMA_GNUPLOT), NULL when there is none. */
char *ema_plot_find_gnuplot(void);
/* The variants' folders of the comparison in DIR (compare.csv's dir column, one a run: a
 * repeat's too), each once; NULL-terminated, empty without compare.csv. Free with g_strfreev. */
char **ema_plot_compare_variant_dirs(const char *dir);
/* "NAME: VARIANT", the title ema-sim run gives the figures of the comparison DIR's variant
 * folder VARIANT (NAME: the experiment its summary.json names, "run" where it cannot be read). */
char *ema_plot_variant_title(const char *dir, const char *variant);
/* Why ema_plot_find_gnuplot found none, for a message: EMA_GNUPLOT's program where that is
 * set ("EMA_GNUPLOT=PATH is not a program on PATH"), else "gnuplot is not on PATH". */
char *ema_plot_gnuplot_missing(void);

/* Draw the figures of DIR into DIR/plots/ with GNUPLOT. OPTIONS (may be
 * NULL) override DIR/plot.yaml (written by ema-sim sweep). FIGURES, when
 * not NULL, gets the file names drawn ("memory.png", ...). FALSE with an
 * error when DIR has nothing to plot, a table it reads is damaged (at the
 * cell's file:line:col) or gnuplot fails. */
gboolean ema_plot_dir(const char *dir, const char *gnuplot, const EmaPlotOptions *options,
                      GPtrArray *figures, GError **error);

/* A folder ema_plot_dirs draws: DIR, with OPTIONS; FIGURES (may be NULL) as ema_plot_dir's. */
typedef struct {
  const char *dir;
  EmaPlotOptions options;
  GPtrArray *figures;
} EmaPlotFolder;

/* ema_plot_dir for each of the N FOLDERS (no folder twice), in their order, as one: every
 * folder's figures are drawn (beside its plots/) before any is moved into its plots/, and then
 * all are moved in or none (a failed move undoes the others), so that a folder that cannot be
 * drawn or moved leaves every plots/ as it was (a comparison's and its variants': ema-sim plot);
 * the error is that folder's, and the folders after it are not read. */
gboolean ema_plot_dirs(const EmaPlotFolder *folders, guint n, const char *gnuplot, GError **error);

G_END_DECLS
