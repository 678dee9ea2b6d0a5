/* output.h: what a run leaves behind: DIR/resolved.yaml (the experiment with
 * every value explicit), DIR/summary.json (machine-readable results; serving runs also
 * requests.csv and timeline.csv, written by serving.c as they run) and a
 * short human-readable table on the terminal. Outputs depend only on the
 * inputs, except summary.json's sim.wall_s (the run's wall-clock time). */
#pragma once

#include <stdio.h>

#include <glib.h>

#include "ema/run/experiment.h"
#include "ema/run/ops.h"
#include "ema/run/serving.h"

G_BEGIN_DECLS

/* Create DIR (and its parents) if needed. */
gboolean ema_output_prepare_dir(const char *dir, GError **error);
/* Write DIR/resolved.yaml. */
gboolean ema_output_write_resolved(const char *dir, const EmaExperiment *experiment,
                                   GError **error);
/* Write DIR/summary.json for an ops run. */
gboolean ema_output_write_ops_summary(const char *dir, const EmaExperiment *experiment,
                                      const EmaOpsReport *report, double wall_s, GError **error);
/* Print the ops results as a table. */
void ema_output_print_ops(FILE *out, const EmaOpsReport *report);
/* Write DIR/summary.json for a serving run. */
gboolean ema_output_write_serving_summary(const char *dir, const EmaExperiment *experiment,
                                          const EmaServingReport *report, GError **error);
/* Print the per-tenant results as a table. */
void ema_output_print_serving(FILE *out, const EmaServingReport *report);

G_END_DECLS
