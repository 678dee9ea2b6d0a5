/* compare.c: an experiment run under each of its `compare:` variants side
 * by side (compare.h).
 *
 * Invariants: the variants run in file order, each into its own claimed
 * folder, each exactly as `ema-sim run DIR/VARIANT/resolved.yaml` would run
 * it (same seed, same outputs); compare.csv and the printed table depend
 * only on the variants' results. */
#include "ema/cli/compare.h"

#include <string.h>

#include "ema/core/file.h"
#include "ema/core/units.h"
#include "ema/run/output.h"
#include "ema/run/serving.h"

#define GIB (1024.0 * 1024.0 * 1024.0)

typedef struct {
  char *dir; /* the variant's folder name */
  const char *name;
  EmaExperiment *experiment;
  EmaServingReport *report;
} Arm;

static void arm_clear(gpointer data) {
  Arm *arm = data;
  g_free(arm->dir);
  ema_serving_report_free(arm->report);
  ema_experiment_free(arm->experiment);
}

char **ema_compare_variant_dirs(const EmaSweep *comparison) {
  guint n = ema_sweep_n_points(comparison);
  char **dirs = g_new0(char *, n + 1);
  for (guint p = 0; p < n; p++)
    dirs[p] = ema_output_safe_name(ema_sweep_variant_name(comparison, p));
  return dirs;
}

/* The borrower's index (compare.h says how it is chosen). */
static guint find_borrower(GArray *arms) {
  guint best = 0;
  guint64 most = 0;
  const EmaServingReport *first = g_array_index(arms, Arm, 0).report;
  for (guint a = 0; a < arms->len; a++) {
    const EmaServingReport *report = g_array_index(arms, Arm, a).report;
    for (guint t = 0; t < report->tenants->len; t++) {
      const EmaTenantResult *r = report->tenants->pdata[t];
      if (r->peak_slices_borrowed > most) {
        most = r->peak_slices_borrowed;
        best = t;
      }
    }
  }
  if (most > 0)
    return best;
  for (guint t = 1; t < first->tenants->len; t++)
    if (((const EmaTenantResult *) first->tenants->pdata[t])->preemptions >
        ((const EmaTenantResult *) first->tenants->pdata[best])->preemptions)
      best = t;
  return best;
}

typedef struct {
  double tok_s, ttft50, ttft99, tpot50, tpot99;
  guint64 preemptions;
  double borrowed_peak_gib;
  double lenders_tok_s, lenders_ttft99, lenders_tpot99; /* p99: the worst lender's */
  guint64 borrows, reclaims;
  double lent_gib, reclaimed_gib, reclaim_wait_max_ms;
} Row;

/* The lenders of the comparison into LENDERS[t]: the tenants other than
 * BORROWER that lent in some variant; where none did (the borrower's
 * lenders were idle GPUs, or nothing was lent), every other tenant.
 * Returns how many. */
static guint find_lenders(GArray *arms, guint borrower, gboolean *lenders) {
  const EmaServingReport *first = g_array_index(arms, Arm, 0).report;
  guint n = 0;
  for (guint t = 0; t < first->tenants->len; t++) {
    lenders[t] = FALSE;
    for (guint a = 0; a < arms->len && t != borrower; a++) {
      const EmaTenantResult *r = g_array_index(arms, Arm, a).report->tenants->pdata[t];
      lenders[t] = lenders[t] || r->peak_slices_lent > 0;
    }
    n += lenders[t];
  }
  for (guint t = 0; n == 0 && t < first->tenants->len; t++)
    lenders[t] = t != borrower;
  return n;
}

/* A tenant as the table names it: "NAME (gpuG)", a TP group "NAME
 * (gpuG..gpuH)". */
static char *tenant_label(const EmaTenantSpec *spec) {
  if (spec->tp > 1)
    return g_strdup_printf("%s (gpu%" G_GINT64_FORMAT "..gpu%" G_GINT64_FORMAT ")", spec->name,
                           spec->gpu, spec->gpu + spec->tp - 1);
  return g_strdup_printf("%s (gpu%" G_GINT64_FORMAT ")", spec->name, spec->gpu);
}

static Row row_of(const EmaServingReport *report, guint borrower, const gboolean *lenders) {
  Row row = {0};
  for (guint t = 0; t < report->tenants->len; t++) {
    const EmaTenantResult *r = report->tenants->pdata[t];
    const EmaTenantMetrics *m = r->metrics;
    if (t == borrower) {
      row.tok_s = ema_tenant_metrics_throughput_tok_s(m);
      row.ttft50 = ema_histogram_quantile(m->ttft, 0.5) / 1e6;
      row.ttft99 = ema_histogram_quantile(m->ttft, 0.99) / 1e6;
      row.tpot50 = ema_histogram_quantile(m->tpot, 0.5) / 1e6;
      row.tpot99 = ema_histogram_quantile(m->tpot, 0.99) / 1e6;
      row.preemptions = r->preemptions;
      row.borrowed_peak_gib = (double) (r->peak_slices_borrowed * EMA_SLICE_BYTES) / GIB;
      continue;
    }
    if (!lenders[t])
      continue;
    row.lenders_tok_s += ema_tenant_metrics_throughput_tok_s(m);
    row.lenders_ttft99 = MAX(row.lenders_ttft99, ema_histogram_quantile(m->ttft, 0.99) / 1e6);
    row.lenders_tpot99 = MAX(row.lenders_tpot99, ema_histogram_quantile(m->tpot, 0.99) / 1e6);
  }
  row.borrows = report->pool.borrows;
  row.reclaims = report->pool.reclaims;
  row.lent_gib = (double) (report->pool.slices_borrowed * EMA_SLICE_BYTES) / GIB;
  row.reclaimed_gib = (double) (report->pool.slices_reclaimed * EMA_SLICE_BYTES) / GIB;
  row.reclaim_wait_max_ms = (double) report->pool.reclaim_wait_max / 1e6;
  return row;
}

static void print_comparison(FILE *out, GArray *arms, guint borrower, const gboolean *lenders,
                             guint n_lent) {
  const EmaServingReport *first = g_array_index(arms, Arm, 0).report;
  const EmaTenantResult *b = first->tenants->pdata[borrower];
  g_autofree char *label = tenant_label(b->spec);
  g_autoptr(GString) names = g_string_new(NULL);
  guint width = 7;
  for (guint t = 0; t < first->tenants->len; t++)
    if (lenders[t]) {
      g_autofree char *name =
          tenant_label(((const EmaTenantResult *) first->tenants->pdata[t])->spec);
      g_string_append_printf(names, "%s%s", names->len ? ", " : "", name);
    }
  fprintf(out, "\ncomparison: borrower %s, lenders %s%s\n", label,
          n_lent > 0 ? "the tenants that lent: " : "(no tenant lent) the other tenants: ",
          names->len ? names->str : "none");
  for (guint a = 0; a < arms->len; a++)
    width = MAX(width, (guint) strlen(g_array_index(arms, Arm, a).dir));
  fprintf(out, "%-*s %8s %17s %13s %7s %9s | %9s %9s | %7s %8s %8s %9s %8s\n", (int) width,
          "variant", "tok/s", "TTFT p50/p99 ms", "TPOT p50/p99", "preempt", "borrowed", "TTFT p99",
          "TPOT p99", "borrows", "lent", "reclaims", "reclaimed", "wait max");
  fprintf(out, "%-*s %8s %17s %13s %7s %9s | %9s %9s | %7s %8s %8s %9s %8s\n", (int) width, "",
          "borrower", "", "ms", "", "peak", "lenders", "lenders", "", "", "", "", "ms");
  for (guint a = 0; a < arms->len; a++) {
    const Arm *arm = &g_array_index(arms, Arm, a);
    Row row = row_of(arm->report, borrower, lenders);
    g_autofree char *ttft = g_strdup_printf("%.1f/%.1f", row.ttft50, row.ttft99);
    g_autofree char *tpot = g_strdup_printf("%.2f/%.2f", row.tpot50, row.tpot99);
    g_autofree char *borrowed =
        ema_units_format_size_human((guint64) (row.borrowed_peak_gib * GIB));
    g_autofree char *lent = ema_units_format_size_human((guint64) (row.lent_gib * GIB));
    g_autofree char *reclaimed = ema_units_format_size_human((guint64) (row.reclaimed_gib * GIB));
    fprintf(out,
            "%-*s %8.0f %17s %13s %7" G_GUINT64_FORMAT " %9s | %9.1f %9.2f | %7" G_GUINT64_FORMAT
            " %8s %8" G_GUINT64_FORMAT " %9s %8.2f\n",
            (int) width, arm->dir, row.tok_s, ttft, tpot, row.preemptions, borrowed,
            row.lenders_ttft99, row.lenders_tpot99, row.borrows, lent, row.reclaims, reclaimed,
            row.reclaim_wait_max_ms);
  }
}

static gboolean write_compare_csv(const char *dir, GArray *arms, guint borrower,
                                  const gboolean *lenders, GError **error) {
  g_autoptr(GString) csv = g_string_new(
      "variant,dir,borrower,borrower_tok_s,borrower_ttft_p50_ms,borrower_ttft_p99_ms,"
      "borrower_tpot_p50_ms,borrower_tpot_p99_ms,borrower_preemptions,borrower_borrowed_peak_gib,"
      "lenders_tok_s,lenders_ttft_p99_ms_max,lenders_tpot_p99_ms_max,borrows,lent_gib,reclaims,"
      "reclaimed_gib,reclaim_wait_max_ms\n");
  g_autofree char *path = g_build_filename(dir, "compare.csv", NULL);
  for (guint a = 0; a < arms->len; a++) {
    const Arm *arm = &g_array_index(arms, Arm, a);
    const EmaTenantResult *b = arm->report->tenants->pdata[borrower];
    Row row = row_of(arm->report, borrower, lenders);
    double numbers[] = {row.tok_s,
                        row.ttft50,
                        row.ttft99,
                        row.tpot50,
                        row.tpot99,
                        (double) row.preemptions,
                        row.borrowed_peak_gib,
                        row.lenders_tok_s,
                        row.lenders_ttft99,
                        row.lenders_tpot99,
                        (double) row.borrows,
                        row.lent_gib,
                        (double) row.reclaims,
                        row.reclaimed_gib,
                        row.reclaim_wait_max_ms};
    ema_file_csv_field(csv, arm->name);
    g_string_append_c(csv, ',');
    ema_file_csv_field(csv, arm->dir);
    g_string_append_c(csv, ',');
    ema_file_csv_field(csv, b->spec->name);
    for (guint i = 0; i < G_N_ELEMENTS(numbers); i++)
      g_string_append_printf(csv, ",%.6g", numbers[i]);
    g_string_append_c(csv, '\n');
  }
  return g_file_set_contents(path, csv->str, (gssize) csv->len, error);
}

gboolean ema_compare_run(EmaSweep *comparison, const char *dir, gboolean progress, FILE *out,
                         GError **error) {
  g_auto(GStrv) dirs = ema_compare_variant_dirs(comparison);
  g_autoptr(GArray) arms = g_array_new(FALSE, TRUE, sizeof(Arm));
  g_autofree gboolean *lenders = NULL;
  guint borrower, lent;
  g_array_set_clear_func(arms, arm_clear);
  if (!ema_sweep_resolve(comparison, error))
    return FALSE;
  for (guint p = 0; dirs[p]; p++)
    if (ema_output_is_run_entry(dirs[p])) {
      g_set_error(error, G_FILE_ERROR, G_FILE_ERROR_EXIST,
                  "compare: variant '%s' would write its folder over the comparison's own %s: "
                  "rename it",
                  ema_sweep_variant_name(comparison, p), dirs[p]);
      return FALSE;
    }
  for (guint p = 0; dirs[p]; p++)
    for (guint q = 0; q < p; q++)
      if (strcmp(dirs[p], dirs[q]) == 0) {
        g_set_error(error, G_FILE_ERROR, G_FILE_ERROR_EXIST,
                    "compare: variants '%s' and '%s' would share the folder %s",
                    ema_sweep_variant_name(comparison, q), ema_sweep_variant_name(comparison, p),
                    dirs[p]);
        return FALSE;
      }
  if (!ema_output_claim_dir(dir, (const char *const *) dirs, error))
    return FALSE;
  for (guint p = 0; dirs[p]; p++) {
    Arm arm = {g_strdup(dirs[p]), ema_sweep_variant_name(comparison, p), NULL, NULL};
    g_autofree char *arm_dir = g_build_filename(dir, dirs[p], NULL);
    g_array_append_val(arms, arm);
    Arm *added = &g_array_index(arms, Arm, arms->len - 1);
    if ((added->experiment = ema_sweep_load_point(comparison, p, error)) == NULL)
      return FALSE;
    if (!ema_experiment_is_serving(added->experiment)) {
      g_set_error(error, G_FILE_ERROR, G_FILE_ERROR_INVAL,
                  "compare: variant %s is not a serving experiment (compare needs tenants)",
                  dirs[p]);
      return FALSE;
    }
    {
      /* as a single run prints them (main.c), named by the variant */
      g_autoptr(GPtrArray) warnings = ema_experiment_warnings(added->experiment);
      for (guint i = 0; i < warnings->len; i++)
        fprintf(stderr, "ema-sim: warning: %s: %s\n", dirs[p], (const char *) warnings->pdata[i]);
    }
    if (!ema_output_claim_dir(arm_dir, NULL, error) ||
        !ema_output_write_resolved(arm_dir, added->experiment, error) ||
        (added->report = ema_serving_run(added->experiment, arm_dir, progress, error)) == NULL ||
        !ema_output_write_serving_summary(arm_dir, added->experiment, added->report, error)) {
      g_prefix_error(error, "compare: variant %s: ", dirs[p]);
      return FALSE;
    }
    fprintf(out, "\n%s (%s/):\n", dirs[p], arm_dir);
    ema_output_print_serving(out, added->experiment, added->report);
  }
  borrower = find_borrower(arms);
  lenders = g_new0(gboolean, g_array_index(arms, Arm, 0).report->tenants->len);
  lent = find_lenders(arms, borrower, lenders);
  print_comparison(out, arms, borrower, lenders, lent);
  fflush(out);
  return write_compare_csv(dir, arms, borrower, lenders, error);
}
