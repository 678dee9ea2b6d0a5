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

/* The marker file of a folder ema-sim run writes into. */
#define EMA_OUTPUT_MARKER ".ema-output"
/* Claim DIR for a run: a run owns its output folder. DIR is created when
 * absent; an empty DIR is taken; a DIR with a marker (an earlier run's) has
 * every entry the marker lists removed (files; plots/ and claimed
 * sub-folders with all in them); any other non-empty DIR is refused (a
 * folder ema-sim did not create). Then the marker is written listing the
 * entries a run writes (summary.json, resolved.yaml, the CSVs, plots/) and
 * EXTRA (NULL-terminated names, may be NULL: the compare variants'
 * folders). So a failed run leaves no earlier summary.json behind, and a
 * file this run does not write (requests.csv with requests_csv: false) is
 * gone. */
gboolean ema_output_claim_dir(const char *dir, const char *const *extra, GError **error);
/* NAME made safe as one path component: letters, digits and ._+- kept, any
 * other byte '_' (no '/', no newline), a leading '.' or an empty name
 * prefixed with '_' (so never "." or ".."). The default output folder is
 * results/<this>. */
char *ema_output_safe_name(const char *name);
/* The SHA-256 of the file at PATH (hex), NULL when it cannot be read. */
char *ema_output_file_sha256(const char *path);
/* What summary.json records as provenance.build_id: one SHA-256 over the
 * hash of PROGRAM (the ema-sim binary) and those of the loaded policy
 * modules. A sweep resumes a point only when its build_id is this one. */
char *ema_output_build_id(const char *program);
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
/* Print the per-tenant results as a table, then each tenant's fidelity
 * (fidelity.h: validated with its measured error, or unvalidated and why),
 * tenants of one status on one line. */
void ema_output_print_serving(FILE *out, const EmaExperiment *experiment,
                              const EmaServingReport *report);

G_END_DECLS
