/* output.h: what a run leaves behind: DIR/resolved.yaml (the experiment with
 * every value explicit), DIR/summary.json (machine-readable results; serving runs also
 * requests.csv and timeline.csv, written by serving.c as they run into DIR/.ema-partial and
 * moved into DIR when the run ends well) and a short human-readable table on the terminal.
 * Outputs depend only on the inputs, except summary.json's sim.wall_s (the run's wall-clock
 * time). */
#pragma once

#include <stdio.h>

#include <glib.h>

#include "ema/run/experiment.h"
#include "ema/run/ops.h"
#include "ema/run/serving.h"

G_BEGIN_DECLS

/* The marker file of a folder ema-sim run writes into. */
#define EMA_OUTPUT_MARKER ".ema-output"
/* The folder inside a run's folder that its tables are written into while it runs
 * (ema_output_partial_dir): moved into place when the run ends well, removed when it fails, and
 * left hidden by a run that is killed (a run's entry: the next claim removes it). So a folder
 * holds a run's tables only beside their summary.json. */
#define EMA_OUTPUT_PARTIAL ".ema-partial"
/* The environment variable through which a process that claimed a folder
 * hands the claim (the descriptor its lock is on) to a program it starts
 * (a sweep to a point's run): that program's claim of the same folder
 * takes it as it is. */
#define EMA_OUTPUT_CLAIMED_ENV "EMA_OUTPUT_CLAIMED"

typedef enum {
  EMA_OUTPUT_CLAIM_CLEAR = 0,       /* remove what the marker lists (a run) */
  EMA_OUTPUT_CLAIM_KEEP = 1 << 0,   /* keep it (a sweep resuming its points) */
  EMA_OUTPUT_CLAIM_SHARED = 1 << 1, /* no lock: processes sharing the folder by
                                     * design (MPI ranks, --part) */
  EMA_OUTPUT_CLAIM_PRUNE = 1 << 2,  /* with KEEP: keep only what ENTRIES name, remove the rest
                                     * the marker lists (a sweep's points of another
                                     * definition of it) */
} EmaOutputClaimFlags;

/* Claim DIR, the one rule of every folder EMA writes (run, compare, sweep,
 * ema-validate -o): DIR is created when absent; an empty DIR is taken; a
 * DIR with a marker (an earlier claim's) has every entry the marker lists
 * removed (files; plots/; a claimed sub-folder loses what its own marker
 * lists and goes when that empties it); any other non-empty DIR is refused
 * (a folder ema-sim did not create). With KEEP nothing is removed: the
 * marker lists what it did and ENTRIES, and an entry of ENTRIES already in
 * DIR that no marker lists is refused (never overwritten). DIR is locked
 * for this process's life (another process's claim of it fails: "in use")
 * unless FLAGS has SHARED. Then the marker is written listing ENTRIES
 * (NULL-terminated), what this claim may write there. */
gboolean ema_output_claim_dir_full(const char *dir, const char *const *entries,
                                   EmaOutputClaimFlags flags, GError **error);
/* FALSE with an error where DIR cannot name an output folder (-o ''): what a claim refuses
 * first, for a command to check before it says where its output goes. */
gboolean ema_output_dir_named(const char *dir, GError **error);
/* ema_output_claim_dir_full by a command of KIND ("run", "sweep",
 * "frontier": the ema-sim command's name; "ema-validate pool": another
 * program's command, named whole), which the marker records: a
 * folder whose marker records another kind is refused, its every entry
 * left (one kind of command never takes over another's folder: a run
 * would remove a sweep's points, a sweep would leave a run's files among
 * its own); a folder without a kind (claimed by ema-sim before kinds were
 * recorded, or by ema_output_claim_dir_full) is taken as before. */
gboolean ema_output_claim_dir_kind(const char *dir, const char *kind, const char *const *entries,
                                   EmaOutputClaimFlags flags, GError **error);
/* Who claims a folder, for ema_output_claim_dir_as and ema_output_hold_dir. */
typedef struct {
  /* The kind of command the marker records (as ema_output_claim_dir_kind's KIND; NULL: none). */
  const char *kind;
  /* The kind this command's folders recorded before they recorded KIND (NULL: none), and
   * entries only this command listed (NULL-terminated): a marker recording FORMER that lists one
   * of them is this command's, taken (a claim then records KIND); one that lists none is another
   * command's of that kind, refused. ("run" and "provenance.txt" for ema-validate run, whose
   * folders recorded ema-sim run's kind.) */
  const char *former;
  const char *const *former_entries;
  /* The option that named the folder, which a refusal asks for another of (NULL: "-o"). */
  const char *option;
} EmaOutputClaimAs;
/* ema_output_claim_dir_kind by the command AS describes: its kind (and former kind), and the
 * option its refusals name ("give another --results"). */
gboolean ema_output_claim_dir_as(const char *dir, const EmaOutputClaimAs *as,
                                 const char *const *entries, EmaOutputClaimFlags flags,
                                 GError **error);
/* Hold DIR, an existing folder that a command rewrites a file of without claiming it (calibrate
 * --from-results: derived.csv), as a claim would, nothing written or removed: refused (FALSE,
 * ERROR naming DIR and AS's option) where another's marker lists DIR, where another process
 * holds it ("in use") and where its marker records a kind that is not AS's; else locked for this
 * process's life. A folder without a marker (one committed by hand) is held as it is; a DIR that
 * is no folder is not held (TRUE: its reader says what is missing). */
gboolean ema_output_hold_dir(const char *dir, const EmaOutputClaimAs *as, GError **error);
/* FALSE with an error (naming OPTION, which gave PATH) where the file PATH, or a folder on the
 * way to it, is an entry an output folder's marker lists (another calibration's derived.csv, a
 * run's summary.json, a sweep's point): a later run of that folder's command replaces or
 * removes it, and a file written there now passes for that command's output meanwhile. */
gboolean ema_output_file_free(const char *path, const char *option, GError **error);
/* Remove those of NAMES (NULL-terminated) that DIR's marker lists, as a
 * claim would (a sweep that runs points again drops the sweep.csv and
 * figures of the earlier results); the others are left alone. */
gboolean ema_output_remove_entries(const char *dir, const char *const *names, GError **error);
/* Remove PATH, a file or folder of ema-sim's own (a folder built and abandoned); absent is
 * fine. */
gboolean ema_output_remove_own(const char *path, GError **error);
/* Claim DIR for a run (ema_output_claim_dir_kind, "run", CLEAR): the entries are
 * those a run writes (summary.json, resolved.yaml, the CSVs, plots/) and
 * EXTRA (may be NULL: the compare variants' folders). So a failed run
 * leaves no earlier summary.json behind, and a file this run does not
 * write (requests.csv with requests_csv: false) is gone. */
gboolean ema_output_claim_dir(const char *dir, const char *const *extra, GError **error);
/* ema_output_claim_dir by the command AS describes (ema-validate run: a run's entries in its
 * own kind of folder). */
gboolean ema_output_claim_run_dir_as(const char *dir, const EmaOutputClaimAs *as,
                                     const char *const *extra, GError **error);
/* DIR/.ema-partial (EMA_OUTPUT_PARTIAL), made empty, for the tables of a run into DIR (claimed);
 * NULL with ERROR set when it cannot be made. */
char *ema_output_partial_dir(const char *dir, GError **error);
/* The run into DIR ended well: every file of DIR/.ema-partial goes into DIR (summary.json last,
 * so a folder with a summary.json holds all its tables), and the folder goes. */
gboolean ema_output_publish_run(const char *dir, GError **error);
/* The run into DIR failed with *ERROR (set): PARTIAL (ema_output_partial_dir's, NULL for a run
 * that writes none: an ops run's one result is its summary.json) and what the run wrote into it
 * go (DIR keeps the claim's marker and the run's resolved.yaml), and *ERROR says that no results
 * were written. */
void ema_output_run_failed(const char *dir, const char *partial, GError **error);
/* NAME is an entry a run writes into its folder (or the marker): no
 * sub-folder of a run's may take it. */
gboolean ema_output_is_run_entry(const char *name);
/* The files among a run's entries in DIR, comma-separated in the order a
 * reader takes them up (summary.json first): only those there (the claim
 * cleared the others), so a run without requests.csv or events.csv does
 * not name them. */
char *ema_output_run_files(const char *dir);
/* The descriptor DIR's lock is held on (to hand on to a program this
 * process starts, under EMA_OUTPUT_CLAIMED_ENV), -1 when not held. */
int ema_output_lock_fd(const char *dir);
/* Give up the claim of DIR (its lock), if held. */
void ema_output_release_dir(const char *dir);
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
/* Warnings about what a serving run's table does not show, to ERR: a CSV
 * file cut at its row cap (timeline_max_rows, events_max_rows), a tenant
 * to whom no request arrived, one whose every request was rejected, one
 * that left more than a quarter of its requests (its latencies are of
 * completed requests only), and one whose borrow policy held room its
 * prefetch plan could not use. Each line names VARIANT after "warning:"
 * (a compare: variant's; NULL: a single run, none). */
/* How each of those lines begins (a sweep names the points whose run.err has them). */
#define EMA_OUTPUT_WARNING "ema-sim: warning: "
void ema_output_warn_serving(FILE *err, const char *variant, const EmaExperiment *experiment,
                             const EmaServingReport *report);
/* The warnings known before a run, to ERR (as ema_output_warn_serving, VARIANT after
 * "warning:"): the experiment's (ema_experiment_warnings) and, for a serving run, a timeline
 * that may reach its row cap (ema_serving_timeline_warning). run and check print them for a
 * plain file, and for each variant of a compare: file. */
void ema_output_warn_before(FILE *err, const char *variant, const EmaExperiment *experiment);

G_END_DECLS
