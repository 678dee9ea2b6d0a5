/* calyaml.c: the calibration YAML (calyaml.h). The layout follows
 * hwmodels/servers/h200x2.yaml: a provenance header, the keys of the server
 * schema with a comment each, then the measured figures that have no key
 * yet, as comments. Every number is rounded to 4 significant digits and
 * printed with libema's unit formatters (or, for sizes, in the largest
 * binary unit), so the file reads like the hand-written models. */
#include "calyaml.h"

#include <errno.h>
#include <math.h>
#include <string.h>

#include <glib/gstdio.h>
#include <sys/stat.h>

#include "ema/core/file.h"
#include "ema/core/node.h"
#include "ema/core/params.h"
#include "ema/core/units.h"
#include "errors.h"

#define COMMENT_COLUMN 34
#define SIGNIFICANT_DIGITS 4
#define INTERFERENCE_MAX 10.0
#define POOR_FIT 0.10 /* a fit whose largest relative error exceeds this says so */

static const char *const topology_names[] = {"direct", "switch", "pcie"};

/* VALUE rounded to 4 significant digits, as the double nearest to that
 * decimal: the scaling uses an exact power of ten in whichever direction
 * keeps it exact (4264.33e9 -> 4264 x 1e9, not 4264 / 1e-9). */
static double round_significant(double value) {
  int exponent;
  if (value == 0 || !isfinite(value))
    return value;
  exponent = (int) floor(log10(fabs(value))) - (SIGNIFICANT_DIGITS - 1);
  if (exponent >= 0) {
    double scale = pow(10.0, exponent);
    return round(value / scale) * scale;
  }
  return round(value * pow(10.0, -exponent)) / pow(10.0, -exponent);
}

/* VALUE with at most 4 significant digits, no exponent, no trailing
 * zeros ("139.8", "2.637", "4489"). */
static char *format_number(double value) {
  int decimals = 0;
  char *text, *end;
  if (!isfinite(value))
    return g_strdup_printf("%g", value); /* "nan", "inf": only ever in comments */
  value = round_significant(value);
  if (value != 0)
    decimals = MAX(0, SIGNIFICANT_DIGITS - 1 - (int) floor(log10(fabs(value))));
  text = g_strdup_printf("%.*f", decimals, value);
  if (strchr(text, '.')) {
    end = text + strlen(text) - 1;
    while (*end == '0')
      *end-- = '\0';
    if (*end == '.')
      *end = '\0';
  }
  return text;
}

double ema_calibration_round(double value) {
  return round_significant(value);
}

static char *format_bandwidth(double bytes_per_s) {
  return ema_units_format_bandwidth(round_significant(bytes_per_s));
}

static char *format_duration(double seconds) {
  return ema_units_format_duration((gint64) llround(round_significant(seconds * 1e9)));
}

/* Bytes in the largest binary unit that keeps the value >= 1. */
static char *format_size(double bytes) {
  static const char *const names[] = {"B", "KiB", "MiB", "GiB", "TiB"};
  guint unit = 0;
  g_autofree char *number = NULL;
  while (unit + 1 < G_N_ELEMENTS(names) && bytes >= 1024.0) {
    bytes /= 1024.0;
    unit++;
  }
  number = format_number(bytes);
  return g_strconcat(number, names[unit], NULL);
}

static char *format_ratio(double ratio) {
  return g_strdup_printf("%.3f", ratio);
}

/* The value a formatted bandwidth parses back to, so that bounds are
 * checked on what the file will say; a value that does not parse back (not
 * finite, not positive: degenerate measurements) as it is, for the check
 * of the written file to name. */
static double rounded_bandwidth(double bytes_per_s) {
  g_autofree char *text = format_bandwidth(bytes_per_s);
  double value = 0;
  return ema_units_parse_bandwidth(text, &value, NULL) ? value : bytes_per_s;
}

/* "  key: value" padded to the comment column, then "# comment". PREFIX is
 * "" for a key or "# " for a key that is still a comment. */
static void append_line(GString *out, const char *prefix, guint indent, const char *key,
                        const char *value, const char *comment) {
  gsize start = out->len;
  g_string_append(out, prefix);
  for (guint i = 0; i < indent; i++)
    g_string_append_c(out, ' ');
  g_string_append_printf(out, "%s:", key);
  if (value)
    g_string_append_printf(out, " %s", value);
  if (comment && *comment) {
    do
      g_string_append_c(out, ' ');
    while (out->len - start < COMMENT_COLUMN);
    g_string_append_printf(out, "# %s", comment);
  }
  g_string_append_c(out, '\n');
}

/* Helpers that format, append and free. */
static void key_bandwidth(GString *out, guint indent, const char *key, double value,
                          const char *comment) {
  g_autofree char *text = ema_units_format_bandwidth(value);
  append_line(out, "", indent, key, text, comment);
}

static void key_duration(GString *out, const char *prefix, guint indent, const char *key,
                         double seconds, const char *comment) {
  g_autofree char *text = format_duration(seconds);
  append_line(out, prefix, indent, key, text, comment);
}

static void key_size(GString *out, const char *prefix, guint indent, const char *key, double bytes,
                     const char *comment) {
  g_autofree char *text = format_size(bytes);
  append_line(out, prefix, indent, key, text, comment);
}

static void note_bandwidth(GString *out, guint indent, const char *key, double value,
                           const char *comment) {
  g_autofree char *text = format_bandwidth(value);
  append_line(out, "# ", indent, key, text, comment);
}

static void note_ratio(GString *out, guint indent, const char *key, double value,
                       const char *comment) {
  g_autofree char *text = format_ratio(value);
  append_line(out, "# ", indent, key, text, comment);
}

static void note_number(GString *out, guint indent, const char *key, double value,
                        const char *comment) {
  g_autofree char *text = format_number(value);
  append_line(out, "# ", indent, key, text, comment);
}

/* TEXT with what YAML cannot hold as it is written as escapes ("\x0A",
 * "\u2028"): the characters YAML does not print or reads as line breaks,
 * bytes that are not UTF-8 (as U+FFFD), and with QUOTED also '"' and '\\',
 * so that inside double quotes it reads back as TEXT and in a comment it
 * stays one line. */
static char *yaml_escaped(const char *text, gboolean quoted) {
  GString *out = g_string_new(NULL);
  for (const char *c = text; *c != '\0';) {
    gunichar u = g_utf8_get_char_validated(c, -1);
    gsize length = (gint32) u < 0 ? 1 : (gsize) (g_utf8_next_char(c) - c);
    gboolean printable =
        ((u >= 0x20 && u <= 0x7e) || (u >= 0xa0 && u <= 0xd7ff) ||
         (u >= 0xe000 && u <= 0xfffd && u != 0xfeff) || (u >= 0x10000 && u <= 0x10ffff)) &&
        u != 0x2028 && u != 0x2029;
    if ((gint32) u < 0)
      g_string_append(out, "\\uFFFD");
    else if (quoted && (u == '"' || u == '\\'))
      g_string_append_printf(out, "\\%c", (char) u);
    else if (!printable)
      g_string_append_printf(out, u < 0x100 ? "\\x%02X" : "\\u%04X", (guint) u);
    else
      g_string_append_len(out, c, (gssize) length);
    c += length;
  }
  return g_string_free(out, FALSE);
}

/* TEXT as a YAML double-quoted scalar that reads back as TEXT. */
static char *yaml_quoted(const char *text) {
  g_autofree char *escaped = yaml_escaped(text, TRUE);
  return g_strdup_printf("\"%s\"", escaped);
}

static void append_header(GString *out, const EmaCalibrationFigures *f) {
  g_autofree char *name = yaml_escaped(f->name, FALSE);
  g_autofree char *gpu_name = yaml_escaped(f->gpu_name, FALSE);
  g_autofree char *date = yaml_escaped(f->date, FALSE);
  g_autofree char *gpu_list = yaml_escaped(f->gpu_list, FALSE);
  g_autofree char *driver = yaml_escaped(f->driver_version, FALSE);
  g_autofree char *cuda = yaml_escaped(f->cuda_versions, FALSE);
  g_autofree char *command = yaml_escaped(f->command, FALSE);
  g_autofree char *results_dir = yaml_escaped(f->results_dir, FALSE);
  g_string_append_printf(out,
                         "# %s: %" G_GINT64_FORMAT " x %s, MEASURED by `ema-validate calibrate`.\n",
                         name, f->gpus, gpu_name);
  g_string_append_printf(out, "# Date: %s\n", date);
  g_string_append_printf(out, "# GPUs: %s\n", gpu_list);
  g_string_append_printf(out, "# Driver: %s; CUDA %s\n", driver, cuda);
  g_string_append_printf(out, "# Command: %s\n", command);
  if (f->rederived_command) {
    g_autofree char *rederived = yaml_escaped(f->rederived_command, FALSE);
    g_string_append_printf(out, "# Derived again from these measurements (no GPU): %s\n",
                           rederived);
  }
  g_string_append_printf(out,
                         "# Raw measurements: %s (measurements.csv: median of %u event-timed "
                         "repeats after %u warm-ups,\n"
                         "# with quartiles and extremes; samples.csv: every repeat; derived.csv: "
                         "fits and ratios).\n",
                         results_dir, f->repeats, f->warmups);
}

/* One of the schema's gpu.interference_* keys (0..10): HBM bytes of a
 * GPU's own work lost per byte moved by a peer's load. */
static void append_loss_key(GString *out, const char *key, double value, const char *what) {
  g_autofree char *text = NULL;
  g_autofree char *note = NULL;
  if (!(value >= 0 && value <= INTERFERENCE_MAX)) {
    double measured = value;
    value = isfinite(value) ? CLAMP(value, 0, INTERFERENCE_MAX) : 1;
    note = g_strdup_printf("%s: measured %.4g, outside the schema's 0..10, written %g", what,
                           measured, value);
  } else {
    note = g_strdup(what);
  }
  text = format_number(value);
  append_line(out, "", 2, key, text, note);
}

/* gpu.interference_outgoing: the lender's loss per byte a peer pulls with
 * its copy engine (direct loads, measured too, are in a comment);
 * gpu.interference_incoming: the borrower's loss per byte copied into it. */
static void append_interference_keys(GString *out, const EmaCalibrationFigures *f) {
  const EmaInterferenceFigures *x = &f->interference;
  g_autofree char *direct = format_number(x->lender_loss_per_direct_read_byte);
  g_autofree char *outgoing = g_strdup_printf(
      "HBM bytes of GPU1's own streaming lost per byte GPU0 pulls with its copy engine (per byte "
      "a GPU0 kernel reads directly: %s; interference below)",
      direct);
  append_loss_key(out, "interference_outgoing", x->lender_loss_per_pulled_byte, outgoing);
  append_loss_key(out, "interference_incoming", x->borrower_loss_per_incoming_byte,
                  "HBM bytes of GPU0's own streaming lost per byte copied into it from GPU1");
}

/* A fraction key (the schema's 0.01..1) as a percentage with 4 significant
 * digits; outside the bounds it is clamped and the comment says so. */
static void key_fraction(GString *out, const char *key, double value, const char *comment) {
  g_autofree char *number = NULL, *text = NULL;
  g_autofree char *note = NULL;
  double written = isfinite(value) ? CLAMP(ema_calibration_round(value), 0.01, 1) : 1;
  if (written != ema_calibration_round(value))
    note = g_strdup_printf("%s; measured %.4g, clamped to the schema's 0.01..1", comment, value);
  number = format_number(100 * written);
  text = g_strconcat(number, "%", NULL);
  append_line(out, "", 2, key, text, note ? note : comment);
}

/* The step-time model's keys fitted to the decode runs (decodefit.h), or a
 * comment saying why they keep their defaults. */
static void append_step_keys(GString *out, const EmaCalibrationFigures *f) {
  const EmaStepFigures *s = &f->step;
  g_autofree char *weight_rate = NULL, *kv_rate = NULL, *intercept = NULL, *magnitude = NULL;
  g_autofree char *hbm_note = NULL, *kv_note = NULL, *layer_note = NULL, *step_note = NULL;
  g_autofree char *model = NULL;
  if (!s->fitted) {
    g_autofree char *results_dir = yaml_escaped(f->results_dir, FALSE);
    g_string_append_printf(out,
                           "  # hbm_efficiency, kv_efficiency, layer_overhead, step_overhead: not "
                           "fitted (no decode.csv in %s;\n"
                           "  # `ema-validate decode ... --csv %s/decode.csv`, then `calibrate "
                           "--from-results`): defaults\n",
                           results_dir, results_dir);
    return;
  }
  model = yaml_escaped(s->model, FALSE);
  weight_rate = format_bandwidth(s->weight_rate);
  kv_rate = format_bandwidth(s->kv_rate);
  intercept = format_duration(s->line_intercept_s);
  magnitude = format_duration(fabs(s->step_residual_s));
  hbm_note = g_strdup_printf("decode weight GEMVs alone: %s (median of %u runs, decode.csv) / "
                             "hbm_bandwidth",
                             weight_rate, s->weight_runs);
  kv_note = g_strdup_printf("paged attention alone, %u all-local runs of %s: attention = %u x "
                            "layer_overhead + KV bytes / %s (least squares, largest error "
                            "%.1f%%); / the weight rate",
                            s->kv_runs, model, s->layers, kv_rate, 100 * s->kv_max_rel_error);
  layer_note = s->intercept_clamped
                   ? g_strdup_printf("that line crossed below 0: refitted through the origin")
                   : g_strdup_printf("that line's intercept %s / %u layers", intercept, s->layers);
  step_note = g_strdup_printf("median over those runs of step - (weights + attention as fitted): "
                              "%s%s%s",
                              s->step_residual_s < 0 ? "-" : "", magnitude,
                              s->step_residual_s < 0 ? ", clamped at 0" : "");
  key_fraction(out, "hbm_efficiency", f->step.hbm_efficiency, hbm_note);
  key_fraction(out, "kv_efficiency", f->step.kv_efficiency, kv_note);
  key_duration(out, "", 2, "layer_overhead", s->layer_overhead_s, layer_note);
  key_duration(out, "", 2, "step_overhead", s->step_overhead_s, step_note);
  if (s->p_fitted) {
    g_autofree char *p = format_number(ema_calibration_round(s->roofline_p));
    g_autofree char *p_note = g_strdup_printf(
        "the weight GEMVs' time against batch, %u runs up to %u sequences: (c^p + m^p)^(1/p), c "
        "at matrix_flops x matrix_efficiency, least squares on the relative error (largest "
        "%.2f%%)",
        s->p_runs, s->p_max_batch, 100 * s->p_max_rel_error);
    append_line(out, "", 2, "roofline_p", p, p_note);
  }
}

static void append_gpu(GString *out, const EmaCalibrationFigures *f) {
  g_autofree char *total = format_size((double) f->hbm_total);
  g_autofree char *local = format_size((double) f->local_bytes);
  g_autofree char *capacity_note =
      g_strdup_printf("free HBM of GPU0 before the run (cudaMemGetInfo; total %s)", total);
  g_autofree char *read_note =
      g_strdup_printf("streaming-read kernel, 16-byte loads, %s buffer", local);
  g_autofree char *copy_note =
      g_strdup_printf("cudaMemcpyAsync device to device, %s, bytes read + written", local);
  g_autofree char *empty = format_duration(f->empty_kernel_s);
  g_autofree char *overhead_note =
      g_strdup_printf("median of event-timed read kernels of 4KiB-1MiB (empty kernel: %s)", empty);
  g_autofree char *flops = ema_units_format_flops(f->matrix_flops);
  g_autofree char *flops_note =
      g_strdup_printf("NOT measured: from the server model %s", f->reference_name);
  g_autofree char *name = yaml_quoted(f->gpu_name);

  g_string_append(out, "gpu:\n");
  append_line(out, "", 2, "name", name, NULL);
  key_size(out, "", 2, "hbm_capacity", (double) f->hbm_capacity, capacity_note);
  key_bandwidth(out, 2, "hbm_bandwidth", rounded_bandwidth(f->hbm_bandwidth), read_note);
  key_bandwidth(out, 2, "local_copy_bandwidth", rounded_bandwidth(f->local_copy_bandwidth),
                copy_note);
  append_line(out, "", 2, "matrix_flops", flops, flops_note);
  if (f->matrix_efficiency > 0) /* what the step keys below were fitted with */
    key_fraction(out, "matrix_efficiency", f->matrix_efficiency, flops_note);
  key_duration(out, "", 2, "kernel_overhead", f->kernel_overhead_s, overhead_note);
  append_step_keys(out, f);
  append_interference_keys(out, f);
}

static void append_link(GString *out, const EmaCalibrationFigures *f) {
  double bandwidth = rounded_bandwidth(f->peer_push.bandwidth);
  double duplex = rounded_bandwidth(f->duplex_bandwidth);
  double direct = rounded_bandwidth(f->direct_read_bandwidth);
  g_autofree char *largest = format_size((double) f->peer_max_bytes);
  g_autofree char *smallest = format_size((double) f->peer_min_bytes);
  g_autofree char *rate_0to1 = format_bandwidth(f->peer_copy_0to1);
  g_autofree char *rate_1to0 = format_bandwidth(f->peer_copy_1to0);
  g_autofree char *bandwidth_note = g_strdup_printf(
      "fitted (below); %s copies alone: 0->1 %s, 1->0 %s", largest, rate_0to1, rate_1to0);
  g_autofree char *duplex_note = NULL;
  g_autofree char *direct_note = NULL;

  if (duplex < bandwidth || duplex > 2 * bandwidth) {
    g_autofree char *measured = ema_units_format_bandwidth(duplex);
    duplex = CLAMP(duplex, bandwidth, 2 * bandwidth);
    duplex_note = g_strdup_printf("both directions at once, %s each, sum: measured %s, clamped "
                                  "to the schema's bounds (bandwidth..2 x bandwidth)",
                                  largest, measured);
  } else {
    duplex_note = g_strdup_printf("both directions at once, %s each, sum", largest);
  }
  if (direct > bandwidth) {
    g_autofree char *measured = ema_units_format_bandwidth(direct);
    direct = bandwidth;
    direct_note = g_strdup_printf("kernel on GPU0 reading GPU1 (peer access), %s: measured %s, "
                                  "clamped to bandwidth (the schema's bound)",
                                  largest, measured);
  } else {
    direct_note = g_strdup_printf(
        "kernel on GPU0 reading GPU1 memory (cudaMalloc, peer access), %s", largest);
  }

  append_line(out, "", 0, "topology", topology_names[f->topology],
              "from the command line (--topology); GPU0 and GPU1 have peer access");
  g_string_append(out, "link:\n");
  key_bandwidth(out, 2, "bandwidth", bandwidth, bandwidth_note);
  key_bandwidth(out, 2, "duplex_bandwidth", duplex, duplex_note);
  key_bandwidth(out, 2, "direct_read_bandwidth", direct, direct_note);
  key_duration(out, "", 2, "latency", f->link_latency_s,
               "dependent loads from GPU0 into GPU1 memory (pointer chase, 1 thread)");
  g_string_append_printf(
      out,
      "  # A peer copy of n bytes alone takes fixed + ramp * (1 - exp(-n / ramp_bytes)) + n / "
      "bandwidth.\n"
      "  # Least squares on the relative error over %u sizes %s..%s, both directions, each "
      "copy issued\n"
      "  # on the SOURCE GPU's stream (push): largest error %.1f%%, rms %.1f%%.\n",
      f->peer_push.points / 2, smallest, largest, 100 * f->peer_push.max_rel_error,
      100 * f->peer_push.rms_rel_error);
  if (f->peer_push.max_rel_error > POOR_FIT)
    g_string_append(out, "  # (a poor fit: the copy times do not follow the model; see "
                         "measurements.csv)\n");
  key_duration(out, "", 2, "copy_fixed_cost", f->peer_push.fixed_s, NULL);
  if (f->peer_push.ramp_s > 0) {
    key_duration(out, "", 2, "copy_ramp_time", f->peer_push.ramp_s, NULL);
    key_size(out, "", 2, "copy_ramp_bytes", f->peer_push.ramp_bytes, NULL);
  } else {
    key_duration(out, "", 2, "copy_ramp_time", 0, "the fit needs no ramp");
    key_size(out, "", 2, "copy_ramp_bytes", 1048576, "unused while the ramp time is 0");
  }
}

static void append_host(GString *out, const EmaCalibrationFigures *f) {
  double h2d = rounded_bandwidth(f->h2d.bandwidth);
  double d2h = rounded_bandwidth(f->d2h.bandwidth);
  double duplex = rounded_bandwidth(f->host_duplex_bandwidth);
  double one_way = MAX(h2d, d2h);
  g_autofree char *largest = format_size((double) f->host_max_bytes);
  g_autofree char *smallest = format_size((double) f->host_min_bytes);
  g_autofree char *h2d_alone = format_bandwidth(f->h2d_largest);
  g_autofree char *d2h_alone = format_bandwidth(f->d2h_largest);
  g_autofree char *h2d_fixed = format_duration(f->h2d.fixed_s);
  g_autofree char *d2h_fixed = format_duration(f->d2h.fixed_s);
  g_autofree char *h2d_note = g_strdup_printf(
      "pinned, fitted fixed + n/bandwidth over %s..%s (%.1f%% max error); %s alone: %s", smallest,
      largest, 100 * f->h2d.max_rel_error, largest, h2d_alone);
  g_autofree char *d2h_note = g_strdup_printf(
      "pinned, fitted fixed + n/bandwidth over %s..%s (%.1f%% max error); %s alone: %s", smallest,
      largest, 100 * f->d2h.max_rel_error, largest, d2h_alone);
  g_autofree char *duplex_note = NULL;
  g_autofree char *fixed_note =
      g_strdup_printf("mean of the fitted fixed costs (H2D %s, D2H %s)", h2d_fixed, d2h_fixed);

  if (duplex < one_way || duplex > h2d + d2h) {
    g_autofree char *measured = ema_units_format_bandwidth(duplex);
    duplex = CLAMP(duplex, one_way, h2d + d2h);
    duplex_note = g_strdup_printf("both directions at once, %s each, sum: measured %s, clamped "
                                  "to the schema's bounds",
                                  largest, measured);
  } else {
    duplex_note = g_strdup_printf("both directions at once, %s each, sum", largest);
  }

  g_string_append(out, "host:\n");
  key_bandwidth(out, 2, "h2d_bandwidth", h2d, h2d_note);
  key_bandwidth(out, 2, "d2h_bandwidth", d2h, d2h_note);
  key_bandwidth(out, 2, "duplex_bandwidth", duplex, duplex_note);
  key_duration(out, "", 2, "copy_fixed_cost", (f->h2d.fixed_s + f->d2h.fixed_s) / 2, fixed_note);
}

/* The schema's vmm keys: per slice, from the batch (lending many slices at
 * once is what the pool does). */
static void append_vmm(GString *out, const EmaCalibrationFigures *f) {
  const EmaVmmFigures *v = &f->vmm;
  double slices = MAX(1, v->batch_slices);
  double create = v->batch_create_s / slices;
  double map = v->batch_map_s / slices, access = v->batch_set_access_s / slices;
  double unmap = v->batch_unmap_s / slices, release = v->batch_release_s / slices;
  g_autofree char *slice = format_size((double) v->slice_bytes);
  g_autofree char *map_text = format_duration(map);
  g_autofree char *access_text = format_duration(access);
  g_autofree char *unmap_text = format_duration(unmap);
  g_autofree char *release_text = format_duration(release);
  g_autofree char *create_note = g_strdup_printf("cuMemCreate of one slice on the lender (GPU1)");
  g_autofree char *map_note = g_strdup_printf(
      "cuMemMap %s + cuMemSetAccess %s (one call over the batch, per slice) on the borrower",
      map_text, access_text);
  g_autofree char *unmap_note =
      g_strdup_printf("cuMemUnmap %s + cuMemRelease %s", unmap_text, release_text);
  g_string_append_printf(out,
                         "vmm:                              # one %s slice; per slice of a batch "
                         "of %u, median of %u batches\n",
                         slice, v->batch_slices, v->batch_repeats);
  key_duration(out, "", 2, "create_cost", create, create_note);
  key_duration(out, "", 2, "map_cost", map + access, map_note);
  key_duration(out, "", 2, "unmap_cost", unmap + release, unmap_note);
}

static void append_extras(GString *out, const EmaCalibrationFigures *f) {
  const EmaVmmFigures *v = &f->vmm;
  const EmaInterferenceFigures *x = &f->interference;
  double slices = MAX(1, v->batch_slices);
  g_autofree char *granularity = NULL;
  g_autofree char *single = g_strdup_printf("one slice, median of %u", v->single_repeats);
  g_autofree char *batch =
      g_strdup_printf("%u slices, median of %u batches", v->batch_slices, v->batch_repeats);
  g_autofree char *batch_per_slice = g_strdup_printf("%s, per slice", batch);
  g_autofree char *chunk = format_size((double) x->overlap_chunk_bytes);
  g_autofree char *overlap_note = g_strdup_printf(
      "%u chunks of %s copied GPU1->GPU0 on their own stream, each then read by a kernel that "
      "also streams local HBM",
      x->overlap_chunks, chunk);
  g_autofree char *gran_min = format_size((double) v->granularity_min);
  g_autofree char *gran_rec = format_size((double) v->granularity_rec);

  g_string_append(out, "\n# Measured, but not yet keys of the server schema (names ready to "
                       "become keys):\n");
  g_string_append(out, "# gpu_extra:\n");
  key_duration(out, "# ", 2, "local_latency", f->local_latency_s,
               "dependent loads from local HBM (pointer chase, 1 thread)");
  key_duration(out, "# ", 2, "empty_kernel_time", f->empty_kernel_s,
               "one empty kernel, event-timed");

  g_string_append(out, "# link_pull:                       # peer copies issued on the "
                       "DESTINATION GPU's stream (pull)\n");
  if (f->peer_pull.max_rel_error > POOR_FIT)
    g_string_append_printf(out,
                           "#   (a poor fit: largest error %.0f%%; the small pulls' times vary "
                           "between repeats, see their spread in measurements.csv)\n",
                           100 * f->peer_pull.max_rel_error);
  key_duration(out, "# ", 2, "copy_fixed_cost", f->peer_pull.fixed_s, NULL);
  key_duration(out, "# ", 2, "copy_ramp_time", f->peer_pull.ramp_s, NULL);
  key_size(out, "# ", 2, "copy_ramp_bytes", f->peer_pull.ramp_bytes, NULL);
  {
    g_autofree char *note =
        g_strdup_printf("largest fit error %.1f%%, rms %.1f%%", 100 * f->peer_pull.max_rel_error,
                        100 * f->peer_pull.rms_rel_error);
    note_bandwidth(out, 2, "bandwidth", f->peer_pull.bandwidth, note);
  }

  granularity = g_strdup_printf("cuMemGetAllocationGranularity: minimum %s, recommended %s",
                                gran_min, gran_rec);
  g_string_append(out, "# vmm_detail:                      # CUDA VMM, memory created on GPU1 "
                       "(lender), mapped for GPU0 (borrower)\n");
  key_size(out, "# ", 2, "slice_bytes", (double) v->slice_bytes, granularity);
  key_duration(out, "# ", 2, "create_cost", v->create_s, single);
  key_duration(out, "# ", 2, "reserve_cost", v->reserve_s, single);
  key_duration(out, "# ", 2, "map_cost", v->map_s, single);
  key_duration(out, "# ", 2, "set_access_cost", v->set_access_s, single);
  key_duration(out, "# ", 2, "unmap_cost", v->unmap_s, single);
  key_duration(out, "# ", 2, "release_cost", v->release_s, single);
  key_duration(out, "# ", 2, "address_free_cost", v->address_free_s, single);
  {
    g_autofree char *batch_text = g_strdup_printf("%u", v->batch_slices);
    append_line(out, "# ", 2, "batch_slices", batch_text, NULL);
  }
  key_duration(out, "# ", 2, "batch_create_cost", v->batch_create_s / slices, batch_per_slice);
  key_duration(out, "# ", 2, "batch_map_cost", v->batch_map_s / slices, batch_per_slice);
  key_duration(out, "# ", 2, "batch_set_access_cost", v->batch_set_access_s,
               "one call over the whole batch range (total)");
  key_duration(out, "# ", 2, "batch_unmap_cost", v->batch_unmap_s / slices, batch_per_slice);
  key_duration(out, "# ", 2, "batch_release_cost", v->batch_release_s / slices, batch_per_slice);
  note_bandwidth(out, 2, "direct_read_bandwidth", v->direct_read_bandwidth,
                 "kernel on GPU0 reading the batch's slices (created on GPU1)");

  g_string_append(out, "# interference:                    # ratios of median times, with / "
                       "without the other load\n");
  note_ratio(out, 2, "lender_kernel_slowdown_by_peer_copy", x->lender_kernel_by_peer_copy,
             "GPU1 HBM-streaming kernel while GPU0 pulls from GPU1 (copy engine)");
  note_ratio(out, 2, "peer_copy_slowdown_by_lender_kernel", x->peer_copy_by_lender_kernel,
             "that pull while GPU1's kernel runs");
  note_ratio(out, 2, "lender_kernel_slowdown_by_direct_read", x->lender_kernel_by_direct_read,
             "GPU1 kernel while a GPU0 kernel reads GPU1 memory");
  note_ratio(out, 2, "direct_read_slowdown_by_lender_kernel", x->direct_read_by_lender_kernel,
             "that direct read while GPU1's kernel runs");
  note_ratio(out, 2, "borrower_kernel_slowdown_by_incoming_copy",
             x->borrower_kernel_by_incoming_copy,
             "GPU0 HBM-streaming kernel while copies land in GPU0");
  note_ratio(out, 2, "incoming_copy_slowdown_by_borrower_kernel",
             x->incoming_copy_by_borrower_kernel, "those copies while GPU0's kernel runs");
  note_number(out, 2, "lender_loss_per_pulled_byte", x->lender_loss_per_pulled_byte,
              "kernel rate alone x (1 - 1 / slowdown) / pull rate while both run");
  note_number(out, 2, "lender_loss_per_direct_read_byte", x->lender_loss_per_direct_read_byte,
              "the same for a GPU0 kernel's direct loads");
  note_number(out, 2, "borrower_loss_per_incoming_byte", x->borrower_loss_per_incoming_byte,
              "the same for copies landing in the borrower's HBM");

  g_string_append_printf(out, "# prefetch_overlap:                # %s\n", overlap_note);
  key_duration(out, "# ", 2, "copy_time", x->overlap_copy_s, "copies alone");
  key_duration(out, "# ", 2, "compute_time", x->overlap_compute_s, "compute stages alone");
  key_duration(out, "# ", 2, "pipelined_time", x->overlap_pipelined_s,
               "both, copy i+1 during compute i");
  note_ratio(out, 2, "hidden_fraction", x->overlap_hidden_fraction,
             "(copy + compute - pipelined) / min(copy, compute); 1 = fully hidden");
}

char *ema_calibration_default_name(const char *device_name, int count) {
  g_autofree char *lower = g_ascii_strdown(device_name, -1);
  const char *rest = g_str_has_prefix(lower, "nvidia ") ? lower + 7 : lower;
  GString *name = g_string_new(NULL);
  for (const char *c = rest; *c; c++) {
    if (g_ascii_isalnum(*c))
      g_string_append_c(name, *c);
    else if (name->len > 0 && name->str[name->len - 1] != '-')
      g_string_append_c(name, '-');
  }
  while (name->len > 0 && name->str[name->len - 1] == '-')
    g_string_truncate(name, name->len - 1);
  if (name->len == 0)
    g_string_append(name, "gpu");
  g_string_append_printf(name, "x%d", count);
  return g_string_free(name, FALSE);
}

/* NAME as a YAML scalar: plain where it is letters, digits, '.', '_',
 * '+' and '-' (every name ema-validate makes), else double-quoted. */
static char *yaml_name(const char *name) {
  if (name[0] != '\0' && g_ascii_isalnum(name[0]) &&
      strspn(name, "abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789._+-") ==
          strlen(name))
    return g_strdup(name);
  return yaml_quoted(name);
}

char *ema_calibration_yaml(const EmaCalibrationFigures *f) {
  GString *out = g_string_new(NULL);
  /* the day of the date: its first 10 characters, never half of one */
  g_autofree char *day = g_utf8_validate(f->date, -1, NULL) ? g_utf8_substring(f->date, 0, 10)
                                                            : g_strndup(f->date, 10);
  g_autofree char *summary = g_strdup_printf("%" G_GINT64_FORMAT "x %s, calibrated by "
                                             "ema-validate on %s (measured)",
                                             f->gpus, f->gpu_name, day);
  g_autofree char *summary_text = yaml_quoted(summary);
  g_autofree char *name = yaml_name(f->name);
  append_header(out, f);
  append_line(out, "", 0, "name", name, NULL);
  g_string_append_printf(out, "summary: %s\n", summary_text);
  g_string_append_printf(out, "gpus: %" G_GINT64_FORMAT "\n", f->gpus);
  append_gpu(out, f);
  append_link(out, f);
  append_host(out, f);
  append_vmm(out, f);
  append_extras(out, f);
  return g_string_free(out, FALSE);
}

gboolean ema_calibration_write(const EmaCalibrationFigures *figures, const char *path,
                               GError **error) {
  g_autofree char *text = ema_calibration_yaml(figures);
  g_autofree char *dir = g_path_get_dirname(path);
  g_autoptr(EmaNode) root = NULL;
  GError *local = NULL;
  gpointer server;
  gboolean loads;

  if (!ema_file_output_ok(path, "the model", &local)) {
    g_set_error_literal(error, EMA_VALIDATE_ERROR, EMA_VALIDATE_ERROR_ARGUMENT, local->message);
    g_error_free(local);
    return FALSE;
  }
  /* a model that does not load as a server is not written: an earlier model at PATH stays */
  root = ema_node_load_string(text, path, dir, error);
  server = root ? g_malloc0(ema_server_params.size) : NULL;
  loads = server && ema_params_bind(&ema_server_params, server, root, NULL, error);
  ema_params_free(&ema_server_params, server);
  if (!loads) {
    g_prefix_error(error, "the derived model does not load as a server (%s not written): ", path);
    return FALSE;
  }
  if (g_mkdir_with_parents(dir, 0755) != 0) {
    g_set_error(error, EMA_VALIDATE_ERROR, EMA_VALIDATE_ERROR_IO, "cannot create %s: %s", dir,
                g_strerror(errno));
    return FALSE;
  }
  if (!g_file_set_contents(path, text, -1, &local)) {
    g_set_error(error, EMA_VALIDATE_ERROR, EMA_VALIDATE_ERROR_IO, "cannot write %s: %s", path,
                local->message);
    g_error_free(local);
    return FALSE;
  }
  return TRUE;
}
