/* compare.c: an experiment run under each of its `compare:` variants side
 * by side (compare.h).
 *
 * Invariants: the variants run in file order, each into its own claimed
 * folder, each exactly as `ema-sim run DIR/VARIANT/resolved.yaml` would run
 * it (same seed, same outputs); compare.csv and the printed table depend
 * only on the variants' results. */
#include "ema/cli/compare.h"

#include <math.h>
#include <string.h>

#include <gsl/gsl_cdf.h>

#include "ema/core/file.h"
#include "ema/core/options.h"
#include "ema/core/units.h"
#include "ema/run/output.h"
#include "ema/run/serving.h"

#define GIB (1024.0 * 1024.0 * 1024.0)

typedef struct {
  char *dir; /* the run's folder name: the variant's, -rN for repeat N > 0 */
  const char *name;
  guint repeat;
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
  for (guint p = 0; p < n; p++) {
    g_autofree char *safe = ema_output_safe_name(ema_sweep_variant_name(comparison, p));
    guint repeat = ema_sweep_point_repeat(comparison, p);
    dirs[p] = repeat ? g_strdup_printf("%s-r%u", safe, repeat) : g_steal_pointer(&safe);
  }
  return dirs;
}

/* The borrower's index (compare.h says how it is chosen); *BORROWED: whether any tenant did. */
static guint find_borrower(GArray *arms, gboolean *borrowed) {
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
  *borrowed = most > 0;
  if (most > 0)
    return best;
  for (guint t = 1; t < first->tenants->len; t++)
    if (((const EmaTenantResult *) first->tenants->pdata[t])->preemptions >
        ((const EmaTenantResult *) first->tenants->pdata[best])->preemptions)
      best = t;
  return best;
}

/* One run's figures, all as doubles (counts too), so that runs average and
 * pair alike; compare.csv's columns in this order. */
typedef struct {
  double tok_s, ttft50, ttft99, tpot50, tpot99, preemptions;
  double borrowed_peak_gib;
  double lenders_tok_s, lenders_ttft99, lenders_tpot99; /* p99: the worst lender's */
  double borrows, lent_gib, reclaims, reclaimed_gib, reclaim_wait_max_ms;
  /* the lenders' side and the borrower's load */
  double lenders_lent_peak_gib, returns, kv_blocks, arrived, rejected, timed_out, offload_steps;
  double idle_lent_peak_gib; /* the GPUs without a tenant, together at one sample */
} Row;

#define ROW_FIELDS (sizeof(Row) / sizeof(double))

static const char *const row_columns[ROW_FIELDS] = {
    "borrower_tok_s",
    "borrower_ttft_p50_ms",
    "borrower_ttft_p99_ms",
    "borrower_tpot_p50_ms",
    "borrower_tpot_p99_ms",
    "borrower_preemptions",
    "borrower_borrowed_peak_gib",
    "lenders_tok_s",
    "lenders_ttft_p99_ms_max",
    "lenders_tpot_p99_ms_max",
    "borrows",
    "lent_gib",
    "reclaims",
    "reclaimed_gib",
    "reclaim_wait_max_ms",
    "lenders_lent_peak_gib",
    "returns",
    "borrower_kv_blocks",
    "borrower_arrived",
    "borrower_rejected",
    "borrower_timed_out",
    "offload_steps",
    "idle_gpus_lent_peak_gib",
};

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

/* The GPUs without a tenant that lent in some run, as the comparison names them ("gpu5",
 * "gpu5..gpu7, gpu9"), and *PEAK, the most they lent together at one sample of any run (bytes);
 * NULL where none lent. */
static char *idle_lenders(GArray *arms, guint64 *peak) {
  g_autoptr(GArray) lent = g_array_new(FALSE, TRUE, sizeof(gboolean));
  g_autoptr(GString) names = g_string_new(NULL);
  *peak = 0;
  for (guint a = 0; a < arms->len; a++) {
    const EmaServingReport *report = g_array_index(arms, Arm, a).report;
    for (guint i = 0; report->idle_gpus && i < report->idle_gpus->len; i++) {
      const EmaIdleGpuResult *idle = &g_array_index(report->idle_gpus, EmaIdleGpuResult, i);
      if (idle->peak_slices_lent == 0)
        continue;
      if (idle->gpu >= lent->len)
        g_array_set_size(lent, idle->gpu + 1);
      g_array_index(lent, gboolean, idle->gpu) = TRUE;
    }
    *peak = MAX(*peak, report->idle_peak_slices_lent * EMA_SLICE_BYTES);
  }
  /* runs of consecutive GPUs as FIRST..LAST */
  for (guint g = 0; g < lent->len; g++) {
    guint last = g;
    if (!g_array_index(lent, gboolean, g))
      continue;
    while (last + 1 < lent->len && g_array_index(lent, gboolean, last + 1))
      last++;
    g_string_append_printf(names, "%sgpu%u", names->len ? ", " : "", g);
    if (last > g)
      g_string_append_printf(names, "..gpu%u", last);
    g = last;
  }
  return names->len ? g_string_free(g_steal_pointer(&names), FALSE) : NULL;
}

/* A tenant as the table names it: "NAME (gpuG)", a TP group "NAME
 * (gpuG..gpuH)". */
static char *tenant_label(const EmaTenantSpec *spec) {
  if (spec->tp > 1)
    return g_strdup_printf("%s (gpu%" G_GINT64_FORMAT "..gpu%" G_GINT64_FORMAT ")", spec->name,
                           spec->gpu, spec->gpu + spec->tp - 1);
  return g_strdup_printf("%s (gpu%" G_GINT64_FORMAT ")", spec->name, spec->gpu);
}

/* A run's figures; the lenders' are NAN where the comparison has no lender
 * tenant (the borrower alone beside GPUs without a tenant): shown as "-" and
 * empty CSV fields, not as a lender that served nothing. */
static Row row_of(const EmaServingReport *report, guint borrower, const gboolean *lenders) {
  Row row = {0};
  gboolean any_lender = FALSE;
  for (guint t = 0; t < report->tenants->len; t++) {
    const EmaTenantResult *r = report->tenants->pdata[t];
    const EmaTenantMetrics *m = r->metrics;
    if (t == borrower) {
      row.tok_s = ema_tenant_metrics_throughput_tok_s(m);
      row.ttft50 = ema_histogram_quantile(m->ttft, 0.5) / 1e6;
      row.ttft99 = ema_histogram_quantile(m->ttft, 0.99) / 1e6;
      row.tpot50 = ema_histogram_quantile(m->tpot, 0.5) / 1e6;
      row.tpot99 = ema_histogram_quantile(m->tpot, 0.99) / 1e6;
      row.preemptions = (double) r->preemptions;
      row.borrowed_peak_gib = (double) (r->peak_slices_borrowed * EMA_SLICE_BYTES) / GIB;
      row.kv_blocks = (double) r->plan.blocks;
      row.arrived = (double) r->arrived;
      row.rejected = (double) r->rejected;
      row.timed_out = (double) r->timed_out;
      continue;
    }
    if (!lenders[t])
      continue;
    any_lender = TRUE;
    row.lenders_tok_s += ema_tenant_metrics_throughput_tok_s(m);
    row.lenders_ttft99 = MAX(row.lenders_ttft99, ema_histogram_quantile(m->ttft, 0.99) / 1e6);
    row.lenders_tpot99 = MAX(row.lenders_tpot99, ema_histogram_quantile(m->tpot, 0.99) / 1e6);
    row.lenders_lent_peak_gib += (double) (r->peak_slices_lent * EMA_SLICE_BYTES) / GIB;
  }
  row.borrows = (double) report->pool.borrows;
  row.reclaims = (double) report->pool.reclaims;
  row.lent_gib = (double) (report->pool.slices_borrowed * EMA_SLICE_BYTES) / GIB;
  row.reclaimed_gib = (double) (report->pool.slices_reclaimed * EMA_SLICE_BYTES) / GIB;
  row.reclaim_wait_max_ms = (double) report->pool.reclaim_wait_max / 1e6;
  row.returns = (double) report->pool.returns;
  row.offload_steps = (double) report->pool.offload_steps;
  row.idle_lent_peak_gib = (double) (report->idle_peak_slices_lent * EMA_SLICE_BYTES) / GIB;
  if (!any_lender)
    row.lenders_tok_s = row.lenders_ttft99 = row.lenders_tpot99 = row.lenders_lent_peak_gib = NAN;
  return row;
}

static double row_field(const Row *row, guint i) {
  return ((const double *) row)[i];
}

/* The metrics compared with the baseline, paired by repeat (Row fields). */
static const struct {
  const char *label;
  gsize offset;
} paired[] = {
    {"borrower tok/s", G_STRUCT_OFFSET(Row, tok_s)},
    {"borrower TTFT p50", G_STRUCT_OFFSET(Row, ttft50)},
    {"borrower TTFT p99", G_STRUCT_OFFSET(Row, ttft99)},
    {"borrower TPOT p99", G_STRUCT_OFFSET(Row, tpot99)},
    {"lenders tok/s", G_STRUCT_OFFSET(Row, lenders_tok_s)},
    {"lenders TTFT p99", G_STRUCT_OFFSET(Row, lenders_ttft99)},
    {"lenders TPOT p99", G_STRUCT_OFFSET(Row, lenders_tpot99)},
};

/* A variant's runs: the index of its first arm (repeat 0) and its name. */
typedef struct {
  guint first;
  const char *name, *dir;
} Variant;

/* The variants of ARMS in file order (arms are variant-major, repeat-minor). */
static GArray *variants_of(GArray *arms, guint repeats) {
  GArray *variants = g_array_new(FALSE, FALSE, sizeof(Variant));
  for (guint a = 0; a < arms->len; a += repeats) {
    const Arm *arm = &g_array_index(arms, Arm, a);
    Variant v = {a, arm->name, arm->dir};
    g_array_append_val(variants, v);
  }
  return variants;
}

/* The baseline: the variant named static where there is one, else the first. */
static guint find_baseline(GArray *variants) {
  for (guint v = 0; v < variants->len; v++)
    if (strcmp(g_array_index(variants, Variant, v).name, "static") == 0)
      return v;
  return 0;
}

/* The change of FIELD of variant V over the baseline B, paired by repeat:
 * the mean of (v_r / b_r - 1) over the repeats with b_r > 0 (*N of them)
 * and the half width of its 95% interval (Student's t; NAN below 2). */
static double paired_change(GArray *arms, guint repeats, guint borrower, const gboolean *lenders,
                            const Variant *v, const Variant *b, gsize offset, guint *n,
                            double *half) {
  g_autofree double *changes = g_new(double, repeats);
  double mean = 0, ss = 0;
  *n = 0;
  for (guint r = 0; r < repeats; r++) {
    Row x = row_of(g_array_index(arms, Arm, v->first + r).report, borrower, lenders);
    Row y = row_of(g_array_index(arms, Arm, b->first + r).report, borrower, lenders);
    double base = G_STRUCT_MEMBER(double, &y, offset);
    if (base > 0)
      changes[(*n)++] = G_STRUCT_MEMBER(double, &x, offset) / base - 1;
  }
  for (guint i = 0; i < *n; i++)
    mean += changes[i] / *n;
  for (guint i = 0; i < *n; i++)
    ss += (changes[i] - mean) * (changes[i] - mean);
  *half = *n >= 2 ? gsl_cdf_tdist_Pinv(0.975, *n - 1) * sqrt(ss / (*n - 1)) / sqrt(*n) : NAN;
  return *n ? mean : NAN;
}

/* VALUE with DECIMALS as the table prints it, "-" where it is NAN (row_of). */
static char *figure_or_dash(double value, int decimals) {
  return isnan(value) ? g_strdup("-") : g_strdup_printf("%.*f", decimals, value);
}

static void print_comparison(FILE *out, GArray *arms, guint repeats, guint borrower,
                             gboolean any_borrowed, const gboolean *lenders, guint n_lent) {
  const EmaServingReport *first = g_array_index(arms, Arm, 0).report;
  const EmaTenantResult *b = first->tenants->pdata[borrower];
  g_autoptr(GArray) variants = variants_of(arms, repeats);
  const Variant *base = &g_array_index(variants, Variant, find_baseline(variants));
  g_autofree char *label = tenant_label(b->spec);
  g_autoptr(GString) names = g_string_new(NULL);
  guint64 idle_peak;
  g_autofree char *idle = idle_lenders(arms, &idle_peak);
  guint width = 7;
  for (guint t = 0; t < first->tenants->len; t++)
    if (lenders[t]) {
      g_autofree char *name =
          tenant_label(((const EmaTenantResult *) first->tenants->pdata[t])->spec);
      g_string_append_printf(names, "%s%s", names->len ? ", " : "", name);
    }
  if (names->len)
    g_string_prepend(names, n_lent > 0 ? "the tenants that lent: "
                                       : "(no tenant lent) the other tenants: ");
  if (idle) {
    /* after the tenants; alone where the borrower has no other tenant beside it */
    g_autofree char *size = ema_units_format_size_human(idle_peak);
    g_string_append_printf(names, "%s%s (no tenant)%s lent up to %s at one sample",
                           names->len ? "; " : "", idle, names->len ? "" : ":", size);
  }
  fprintf(out, "\ncomparison: borrower %s%s, lenders %s%s\n", label,
          any_borrowed ? "" : " (no tenant borrowed: the one preempted most)",
          names->len ? names->str : "(no tenant lent) the other tenants: none",
          repeats > 1 ? "; each figure the mean of the repeats" : "");
  for (guint v = 0; v < variants->len; v++)
    width = MAX(width, (guint) strlen(g_array_index(variants, Variant, v).dir));
  fprintf(out, "%-*s %8s %17s %13s %7s %9s | %9s %9s | %7s %9s %8s %9s %8s\n", (int) width,
          "variant", "tok/s", "TTFT p50/p99 ms", "TPOT p50/p99", "preempt", "borrowed", "TTFT p99",
          "TPOT p99", "borrows", "lent", "reclaims", "reclaimed", "wait max");
  fprintf(out, "%-*s %8s %17s %13s %7s %9s | %9s %9s | %7s %9s %8s %9s %8s\n", (int) width, "",
          "borrower", "", "ms", "", "peak", "lenders", "lenders", "", "in all", "", "", "ms");
  for (guint v = 0; v < variants->len; v++) {
    const Variant *variant = &g_array_index(variants, Variant, v);
    Row row = {0};
    for (guint r = 0; r < repeats; r++) {
      Row one = row_of(g_array_index(arms, Arm, variant->first + r).report, borrower, lenders);
      for (guint i = 0; i < ROW_FIELDS; i++)
        ((double *) &row)[i] += row_field(&one, i) / repeats;
    }
    g_autofree char *ttft = g_strdup_printf("%.1f/%.1f", row.ttft50, row.ttft99);
    g_autofree char *tpot = g_strdup_printf("%.2f/%.2f", row.tpot50, row.tpot99);
    g_autofree char *borrowed =
        ema_units_format_size_human((guint64) (row.borrowed_peak_gib * GIB));
    g_autofree char *lent = ema_units_format_size_human((guint64) (row.lent_gib * GIB));
    g_autofree char *reclaimed = ema_units_format_size_human((guint64) (row.reclaimed_gib * GIB));
    g_autofree char *lenders_ttft = figure_or_dash(row.lenders_ttft99, 1);
    g_autofree char *lenders_tpot = figure_or_dash(row.lenders_tpot99, 2);
    fprintf(out, "%-*s %8.0f %17s %13s %7.0f %9s | %9s %9s | %7.0f %9s %8.0f %9s %8.2f\n",
            (int) width, variant->dir, row.tok_s, ttft, tpot, row.preemptions, borrowed,
            lenders_ttft, lenders_tpot, row.borrows, lent, row.reclaims, reclaimed,
            row.reclaim_wait_max_ms);
  }
  fprintf(out, "(borrowed peak: the most the borrower held at one sample; lent in all: every slice "
               "lent over the run, cumulative)\n");
  if (variants->len < 2)
    return;
  fprintf(out, "\nvs %s, paired by repeat (%u repeat%s, common random numbers): mean change",
          base->name, repeats, repeats == 1 ? "" : "s");
  fprintf(out, repeats > 1 ? " [95%% interval, Student's t]\n" : " (one repeat: no interval)\n");
  fprintf(out, "%-18s", "metric");
  for (guint v = 0; v < variants->len; v++)
    if (&g_array_index(variants, Variant, v) != base)
      fprintf(out, " %24s", g_array_index(variants, Variant, v).dir);
  fputc('\n', out);
  for (guint m = 0; m < G_N_ELEMENTS(paired); m++) {
    fprintf(out, "%-18s", paired[m].label);
    for (guint v = 0; v < variants->len; v++) {
      const Variant *variant = &g_array_index(variants, Variant, v);
      guint n;
      double half, mean;
      g_autofree char *cell = NULL;
      if (variant == base)
        continue;
      mean = paired_change(arms, repeats, borrower, lenders, variant, base, paired[m].offset, &n,
                           &half);
      cell = isnan(mean)   ? g_strdup("-")
             : isnan(half) ? g_strdup_printf("%+.1f%%", 100 * mean)
                           : g_strdup_printf("%+.1f%% [%+.1f, %+.1f]", 100 * mean,
                                             100 * (mean - half), 100 * (mean + half));
      fprintf(out, " %24s", cell);
    }
    fputc('\n', out);
  }
}

/* DIR/compare.csv: one row per run (variant and repeat), its figures and
 * each paired metric's change over the baseline's run of the same repeat;
 * DIR/compare-paired.csv: per variant and paired metric, the mean change
 * and its 95% interval. */
static gboolean write_compare_csv(const char *dir, GArray *arms, guint repeats, guint borrower,
                                  const gboolean *lenders, GError **error) {
  g_autoptr(GString) csv = g_string_new("variant,dir,borrower");
  g_autoptr(GString) pairs =
      g_string_new("variant,baseline,metric,repeats,change_mean_pct,ci95_low_pct,ci95_high_pct\n");
  g_autoptr(GArray) variants = variants_of(arms, repeats);
  const Variant *base = &g_array_index(variants, Variant, find_baseline(variants));
  g_autofree char *path = g_build_filename(dir, "compare.csv", NULL);
  g_autofree char *pairs_path = g_build_filename(dir, "compare-paired.csv", NULL);
  for (guint i = 0; i < ROW_FIELDS; i++)
    g_string_append_printf(csv, ",%s", row_columns[i]);
  g_string_append(csv, ",repeat");
  for (guint m = 0; m < G_N_ELEMENTS(paired); m++)
    g_string_append_printf(csv, ",%s_vs_baseline_pct",
                           row_columns[paired[m].offset / sizeof(double)]);
  g_string_append_c(csv, '\n');
  for (guint a = 0; a < arms->len; a++) {
    const Arm *arm = &g_array_index(arms, Arm, a);
    const EmaTenantResult *b = arm->report->tenants->pdata[borrower];
    Row row = row_of(arm->report, borrower, lenders);
    Row baseline =
        row_of(g_array_index(arms, Arm, base->first + arm->repeat).report, borrower, lenders);
    ema_file_csv_field(csv, arm->name);
    g_string_append_c(csv, ',');
    ema_file_csv_field(csv, arm->dir);
    g_string_append_c(csv, ',');
    ema_file_csv_field(csv, b->spec->name);
    for (guint i = 0; i < ROW_FIELDS; i++)
      if (isnan(row_field(&row, i)))
        g_string_append_c(csv, ','); /* no such figure (row_of) */
      else
        g_string_append_printf(csv, ",%.6g", row_field(&row, i));
    g_string_append_printf(csv, ",%u", arm->repeat);
    for (guint m = 0; m < G_N_ELEMENTS(paired); m++) {
      double y = G_STRUCT_MEMBER(double, &baseline, paired[m].offset);
      if (y > 0)
        g_string_append_printf(csv, ",%.6g",
                               100 * (G_STRUCT_MEMBER(double, &row, paired[m].offset) / y - 1));
      else
        g_string_append_c(csv, ',');
    }
    g_string_append_c(csv, '\n');
  }
  for (guint v = 0; v < variants->len; v++) {
    const Variant *variant = &g_array_index(variants, Variant, v);
    for (guint m = 0; variant != base && m < G_N_ELEMENTS(paired); m++) {
      guint n;
      double half;
      double mean = paired_change(arms, repeats, borrower, lenders, variant, base, paired[m].offset,
                                  &n, &half);
      ema_file_csv_field(pairs, variant->name);
      g_string_append_c(pairs, ',');
      ema_file_csv_field(pairs, base->name);
      g_string_append_printf(pairs, ",%s,%u,", row_columns[paired[m].offset / sizeof(double)], n);
      if (!isnan(mean))
        g_string_append_printf(pairs, "%.6g", 100 * mean);
      if (!isnan(half))
        g_string_append_printf(pairs, ",%.6g,%.6g\n", 100 * (mean - half), 100 * (mean + half));
      else
        g_string_append(pairs, ",,\n");
    }
  }
  return g_file_set_contents(path, csv->str, (gssize) csv->len, error) &&
         g_file_set_contents(pairs_path, pairs->str, (gssize) pairs->len, error);
}

gboolean ema_compare_check(EmaSweep *comparison, GError **error) {
  g_auto(GStrv) dirs = ema_compare_variant_dirs(comparison);
  if (!ema_sweep_resolve(comparison, error))
    return FALSE;
  for (guint p = 0; dirs[p]; p++)
    if (ema_output_is_run_entry(dirs[p])) { /* (a name as short as a run's own file's) */
      ema_node_error(error, EMA_CONFIG_ERROR_KEY, ema_sweep_variant_key(comparison, p), "compare",
                     "variant '%s' would write its folder over the comparison's own %s: "
                     "rename it",
                     ema_sweep_variant_name(comparison, p), dirs[p]);
      return FALSE;
    }
  for (guint p = 0; dirs[p]; p++)
    for (guint q = 0; q < p; q++)
      if (strcmp(dirs[p], dirs[q]) == 0) {
        g_autofree char *first = ema_file_quote_cut(ema_sweep_variant_name(comparison, q), -1);
        g_autofree char *second = ema_file_quote_cut(ema_sweep_variant_name(comparison, p), -1);
        g_autofree char *folder = ema_file_quote_cut(dirs[p], -1);
        ema_node_error(error, EMA_CONFIG_ERROR_KEY, ema_sweep_variant_key(comparison, p), "compare",
                       "variants '%s' and '%s' would share the folder %s", first, second, folder);
        return FALSE;
      }
  for (guint p = 0; dirs[p]; p++) {
    g_autoptr(EmaExperiment) experiment = NULL;
    if (ema_sweep_point_repeat(comparison, p) != 0)
      continue; /* a repeat is its variant with another seed */
    if ((experiment = ema_sweep_load_point(comparison, p, error)) == NULL)
      return FALSE;
    if (!ema_experiment_is_serving(experiment)) {
      ema_node_error(error, EMA_CONFIG_ERROR_INVALID, ema_sweep_variant_key(comparison, p),
                     "compare", "variant %s is not a serving experiment (compare needs tenants)",
                     ema_sweep_variant_name(comparison, p));
      return FALSE;
    }
  }
  return TRUE;
}

void ema_compare_warn_before(EmaSweep *comparison) {
  g_auto(GStrv) dirs = ema_compare_variant_dirs(comparison);
  for (guint p = 0; dirs[p]; p++) {
    g_autoptr(EmaExperiment) experiment = NULL;
    if (ema_sweep_point_repeat(comparison, p) == 0 &&
        (experiment = ema_sweep_load_point(comparison, p, NULL)) != NULL)
      ema_output_warn_before(stderr, dirs[p], experiment);
  }
}

gboolean ema_compare_run(EmaSweep *comparison, const char *dir, gboolean progress, FILE *out,
                         GError **error) {
  g_auto(GStrv) dirs = ema_compare_variant_dirs(comparison);
  g_autoptr(GArray) arms = g_array_new(FALSE, TRUE, sizeof(Arm));
  guint repeats = ema_sweep_n_repeats(comparison);
  g_autofree gboolean *lenders = NULL;
  guint borrower, lent;
  gboolean borrowed;
  g_array_set_clear_func(arms, arm_clear);
  /* before the folder is claimed (and emptied of an earlier run's) */
  if (!ema_compare_check(comparison, error) ||
      !ema_output_claim_dir(dir, (const char *const *) dirs, error))
    return FALSE;
  for (guint p = 0; dirs[p]; p++) {
    Arm arm = {g_strdup(dirs[p]), ema_sweep_variant_name(comparison, p),
               ema_sweep_point_repeat(comparison, p), NULL, NULL};
    g_autofree char *arm_dir = g_build_filename(dir, dirs[p], NULL);
    g_autofree char *partial = NULL;
    g_array_append_val(arms, arm);
    Arm *added = &g_array_index(arms, Arm, arms->len - 1);
    if ((added->experiment = ema_sweep_load_point(comparison, p, error)) == NULL)
      return FALSE;
    if (added->repeat == 0) /* as a single run prints them, named by the variant */
      ema_output_warn_before(stderr, dirs[p], added->experiment);
    if (!ema_output_claim_dir(arm_dir, NULL, error) ||
        !ema_output_write_resolved(arm_dir, added->experiment, error) ||
        (partial = ema_output_partial_dir(arm_dir, error)) == NULL) {
      ema_message_prefix_error(error, "compare: variant %s: ", dirs[p]);
      return FALSE;
    }
    /* its tables go into place only when it ends well, as a single run's (run_serving) */
    if ((added->report = ema_serving_run(added->experiment, partial, progress, error)) == NULL ||
        !ema_output_write_serving_summary(partial, added->experiment, added->report, error) ||
        !ema_output_publish_run(arm_dir, error)) {
      ema_output_run_failed(arm_dir, partial, error);
      ema_message_prefix_error(error, "compare: variant %s: ", dirs[p]);
      return FALSE;
    }
    /* with repeats, the first repeat's tables stand for the others */
    if (added->repeat == 0) {
      fprintf(out, "\n%s (%s/):\n", dirs[p], arm_dir);
      ema_output_print_serving(out, added->experiment, added->report);
      ema_output_warn_serving(stderr, dirs[p], added->experiment, added->report);
    }
  }
  borrower = find_borrower(arms, &borrowed);
  lenders = g_new0(gboolean, g_array_index(arms, Arm, 0).report->tenants->len);
  lent = find_lenders(arms, borrower, lenders);
  print_comparison(out, arms, repeats, borrower, borrowed, lenders, lent);
  fflush(out);
  return write_compare_csv(dir, arms, repeats, borrower, lenders, error);
}
