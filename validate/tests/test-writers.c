/* test-writers.c: the files ema-validate writes, without a GPU: the
 * measurement CSVs (validate/report.c) and the calibrated server model
 * (validate/calyaml.c). A written model must load through libema's server
 * table, by path and by name (as `ema-sim` finds models), with the values
 * it was given to within the 4 significant digits it keeps; values outside
 * the schema's bounds are clamped with a comment; the provenance header and
 * the figures that have no key yet are there as comments; every model in
 * hwmodels/calibration/ loads. Write errors are GErrors. */
#include <math.h>
#include <string.h>

#include <glib/gstdio.h>
#include <sys/stat.h>

#include "calyaml.h"
#include "ema/run/experiment.h"
#include "ema/hw/hwmodel.h"
#include "errors.h"
#include "report.h"
#include "testutil.h"

#define MIB 1048576.0

static void assert_close(double actual, double expected, double relative, const char *what) {
  if (!(fabs(actual - expected) <= relative * fabs(expected)))
    g_error("%s: %.9g, expected %.9g (relative tolerance %g)", what, actual, expected, relative);
}

/* ---- CSV ------------------------------------------------------------------ */

static void test_csv_field(void) {
  g_autofree char *plain = ema_csv_field("peer-copy-push-gpu0-gpu1-4KiB");
  g_autofree char *comma = ema_csv_field("a, b");
  g_autofree char *quote = ema_csv_field("say \"hi\"");
  g_autofree char *newline = ema_csv_field("two\nlines");
  g_assert_cmpstr(plain, ==, "peer-copy-push-gpu0-gpu1-4KiB");
  g_assert_cmpstr(comma, ==, "\"a, b\"");
  g_assert_cmpstr(quote, ==, "\"say \"\"hi\"\"\"");
  g_assert_cmpstr(newline, ==, "\"two\nlines\"");
}

static void test_report_csv(void) {
  g_autoptr(EmaReport) report = ema_report_new();
  g_autofree char *dir = ema_test_temp_dir();
  g_autofree char *measurements = NULL, *samples = NULL, *derived = NULL;
  const double copy[] = {10e-6, 12e-6, 11e-6, 13e-6};
  const double kernel[] = {7e-6};
  const EmaMeasurement *m;
  GError *error = NULL;

  m = ema_report_add(report, "peer-copy", "copy-4MiB", "gpu0", "gpu1", 4194304, 4194304.0, copy, 4);
  g_assert_cmpfloat(m->stats.median, ==, 11.5e-6);
  ema_report_add(report, "local", "empty-kernel", NULL, NULL, 0, 0, kernel, 1);
  ema_report_add_derived(report, "fit-bandwidth", 397e9, "B/s", "least squares, relative");
  ema_report_add_derived(report, "ratio", 1.5, "ratio", "first, replaced below");
  ema_report_add_derived(report, "ratio", 1.25, "ratio", "with / without");
  g_assert_cmpuint(ema_report_count(report), ==, 2);
  g_assert_cmpuint(ema_report_derived_count(report), ==, 2);
  g_assert_true(ema_report_find(report, "copy-4MiB") == ema_report_get(report, 0));
  g_assert_null(ema_report_find(report, "missing"));
  g_assert_cmpfloat(ema_report_find_derived(report, "ratio")->value, ==, 1.25);
  g_assert_cmpstr(ema_report_get_derived(report, 1)->description, ==, "with / without");
  g_assert_null(ema_report_find_derived(report, "missing"));

  g_assert_true(ema_report_write_csv(report, dir, &error));
  g_assert_no_error(error);
  measurements = ema_test_read_file(dir, "measurements.csv");
  samples = ema_test_read_file(dir, "samples.csv");
  derived = ema_test_read_file(dir, "derived.csv");
  /* median 11.5 us, quartiles 10.75 and 12.25 us: spread 1.5 / 11.5 = 13.04%;
   * 4 MiB / 11.5 us = 364.72 GB/s */
  g_assert_cmpstr(measurements, ==,
                  "group,name,src,dst,bytes,repeats,median_us,min_us,q1_us,q3_us,max_us,spread_"
                  "pct,gb_per_s\n"
                  "peer-copy,copy-4MiB,gpu0,gpu1,4194304,4,11.500,10.000,10.750,12.250,13.000,"
                  "13.04,364.72\n"
                  "local,empty-kernel,-,-,0,1,7.000,7.000,7.000,7.000,7.000,0.00,\n");
  g_assert_cmpstr(samples, ==,
                  "name,repeat,us\ncopy-4MiB,0,10.000\ncopy-4MiB,1,12.000\ncopy-4MiB,2,11.000\n"
                  "copy-4MiB,3,13.000\nempty-kernel,0,7.000\n");
  g_assert_cmpstr(derived, ==,
                  "name,value,unit,description\n"
                  "fit-bandwidth,3.97e+11,B/s,\"least squares, relative\"\n"
                  "ratio,1.25,ratio,with / without\n");
  ema_test_remove_tree(dir);
}

static void test_report_csv_error(void) {
  g_autoptr(EmaReport) report = ema_report_new();
  g_autofree char *dir = ema_test_temp_dir();
  g_autofree char *file = g_build_filename(dir, "a-file", NULL);
  g_autofree char *below = g_build_filename(file, "results", NULL);
  g_autofree char *in_the_way = g_build_filename(dir, "measurements.csv", NULL);
  GError *error = NULL;
  g_assert_true(g_file_set_contents(file, "x", -1, NULL));
  g_assert_false(ema_report_write_csv(report, below, &error));
  g_assert_error(error, EMA_VALIDATE_ERROR, EMA_VALIDATE_ERROR_IO);
  ema_test_assert_contains(error->message, "cannot create");
  g_clear_error(&error);
  /* a directory where measurements.csv should be */
  g_assert_cmpint(g_mkdir(in_the_way, 0755), ==, 0);
  g_assert_false(ema_report_write_csv(report, dir, &error));
  g_assert_error(error, EMA_VALIDATE_ERROR, EMA_VALIDATE_ERROR_IO);
  ema_test_assert_contains(error->message, "cannot write");
  g_clear_error(&error);
  ema_test_remove_tree(dir);
}

static void test_csv_append(void) {
  g_autofree char *dir = ema_test_temp_dir();
  g_autofree char *path = g_build_filename(dir, "decode.csv", NULL);
  g_autofree char *text = NULL;
  GError *error = NULL;
  g_assert_true(ema_csv_append_row(path, "a,b", "1,2", &error));
  g_assert_true(ema_csv_append_row(path, "a,b", "3,4", &error));
  g_assert_no_error(error);
  text = ema_test_read_file(dir, "decode.csv");
  g_assert_cmpstr(text, ==, "a,b\n1,2\n3,4\n");
  /* a directory cannot be appended to */
  g_assert_false(ema_csv_append_row(dir, "a,b", "5,6", &error));
  g_assert_error(error, EMA_VALIDATE_ERROR, EMA_VALIDATE_ERROR_IO);
  ema_test_assert_contains(error->message, "not a regular file (a directory)");
  g_clear_error(&error);
  /* nor a table of another header (its rows were added under it), or a FIFO (waited on) */
  {
    g_autofree char *other = g_build_filename(dir, "measurements.csv", NULL);
    g_autofree char *fifo = g_build_filename(dir, "fifo.csv", NULL);
    g_autofree char *want = g_strdup_printf(
        "%s:1:1: the header is not 'a,b': rows of another table, or of another version of this "
        "one (give a new file)",
        other);
    g_autofree char *kept = NULL;
    g_assert_true(g_file_set_contents(other, "a,b,c\r\n1,2,3\r\n", -1, NULL));
    g_assert_false(ema_csv_append_row(other, "a,b", "5,6", &error));
    g_assert_error(error, EMA_VALIDATE_ERROR, EMA_VALIDATE_ERROR_DATA);
    g_assert_cmpstr(error->message, ==, want);
    g_clear_error(&error);
    kept = ema_test_read_file(dir, "measurements.csv");
    g_assert_cmpstr(kept, ==, "a,b,c\r\n1,2,3\r\n");
    g_assert_cmpint(mkfifo(fifo, 0600), ==, 0);
    g_assert_false(ema_csv_append_row(fifo, "a,b", "5,6", &error));
    ema_test_assert_contains(error->message, "not a regular file (a FIFO)");
    g_clear_error(&error);
    /* the same header ended by "\r\n" takes rows */
    g_assert_true(g_file_set_contents(other, "a,b\r\n1,2\r\n", -1, NULL));
    g_assert_true(ema_csv_append_row(other, "a,b", "5,6", &error));
  }
  ema_test_remove_tree(dir);
}

/* ---- the calibrated server model ------------------------------------------ */

/* Figures like those of a two-H200 run (validate/results/). */
static void figures_h200(EmaCalibrationFigures *f) {
  memset(f, 0, sizeof *f);
  f->name = "test-h200x2";
  f->date = "2026-11-29T22:32:24Z";
  f->command = "ema-validate calibrate --name test-h200x2";
  f->gpu_name = "NVIDIA H200";
  f->gpu_list = "GPU0 NVIDIA H200 (PCI 0000:00:06.0); GPU1 NVIDIA H200 (PCI 0000:00:07.0)";
  f->driver_version = "580.159.04";
  f->cuda_versions = "driver API 13.0, runtime 13.0";
  f->results_dir = "validate/results/test";
  f->reference_name = "h200x2";
  f->repeats = 20;
  f->warmups = 3;
  f->gpus = 2;
  f->topology = EMA_TOPOLOGY_DIRECT;
  f->hbm_capacity = (guint64) (139.3 * 1073741824.0);
  f->hbm_total = (guint64) (139.8 * 1073741824.0);
  f->hbm_bandwidth = 4619.914e9;
  f->local_copy_bandwidth = 4264.366e9;
  f->local_bytes = (guint64) 4 << 30;
  f->kernel_overhead_s = 7.28e-6;
  f->empty_kernel_s = 6.432e-6;
  f->matrix_flops = 989e12;
  f->local_latency_s = 341e-9;
  f->peer_push = (EmaCopyFit){4.973e-6, 3.45e-6, 67.95 * MIB, 397.685e9, 0.033, 0.012, 22};
  f->peer_pull = (EmaCopyFit){7.496e-6, 7.496e-6, 113.1, 407e9, 0.114, 0.048, 22};
  f->peer_min_bytes = 4096;
  f->peer_max_bytes = (guint64) 4 << 30;
  f->peer_copy_0to1 = 396.9e9;
  f->peer_copy_1to0 = 397.0e9;
  f->duplex_bandwidth = 784.32e9;
  f->direct_read_bandwidth = 376.188e9;
  f->link_latency_s = 958.16e-9;
  f->h2d = (EmaCopyFit){5.519e-6, 0, 0, 55.216e9, 0.028, 0.01, 10};
  f->d2h = (EmaCopyFit){5.177e-6, 0, 0, 55.357e9, 0.011, 0.005, 10};
  f->host_min_bytes = 4096;
  f->host_max_bytes = (guint64) 1 << 30;
  f->h2d_largest = 55.44e9;
  f->d2h_largest = 55.32e9;
  f->host_duplex_bandwidth = 101.555e9;
  f->vmm = (EmaVmmFigures){.slice_bytes = 2097152,
                           .granularity_min = 2097152,
                           .granularity_rec = 2097152,
                           .single_repeats = 50,
                           .create_s = 9.493e-6,
                           .release_s = 11.9e-6,
                           .reserve_s = 0.69e-6,
                           .address_free_s = 0.489e-6,
                           .map_s = 0.67e-6,
                           .set_access_s = 24.91e-6,
                           .unmap_s = 16.73e-6,
                           .batch_slices = 512,
                           .batch_repeats = 5,
                           .batch_create_s = 512 * 9.729e-6,
                           .batch_map_s = 512 * 0.601e-6,
                           .batch_set_access_s = 14.53e-3,
                           .batch_unmap_s = 512 * 18.92e-6,
                           .batch_release_s = 512 * 11.95e-6,
                           .direct_read_bandwidth = 375e9};
  f->interference = (EmaInterferenceFigures){.lender_kernel_by_peer_copy = 1.086,
                                             .peer_copy_by_lender_kernel = 1.028,
                                             .lender_kernel_by_direct_read = 1.083,
                                             .direct_read_by_lender_kernel = 1.032,
                                             .borrower_kernel_by_incoming_copy = 1.199,
                                             .incoming_copy_by_borrower_kernel = 1.001,
                                             .lender_loss_per_pulled_byte = 0.9561,
                                             .lender_loss_per_direct_read_byte = 0.9707,
                                             .borrower_loss_per_incoming_byte = 1.942,
                                             .overlap_chunk_bytes = 64 << 20,
                                             .overlap_chunks = 16,
                                             .overlap_copy_s = 2.876e-3,
                                             .overlap_compute_s = 2.624e-3,
                                             .overlap_pipelined_s = 3.3e-3,
                                             .overlap_hidden_fraction = 0.839};
}

/* Write F into a new temporary directory (*DIR_OUT) as NAME.yaml and load
 * it back through libema's server table (free with ema_params_free). */
static EmaServerSpec *write_and_load(const EmaCalibrationFigures *f, char **dir_out) {
  char *dir = ema_test_temp_dir();
  g_autofree char *file = g_strconcat(f->name, ".yaml", NULL);
  g_autofree char *path = g_build_filename(dir, file, NULL);
  GError *error = NULL;
  EmaServerSpec *server;
  g_assert_true(ema_calibration_write(f, path, &error));
  g_assert_no_error(error);
  server = ema_params_load_file(&ema_server_params, path, &error);
  g_assert_no_error(error);
  *dir_out = dir;
  return server;
}

static void test_calibration_loads(void) {
  EmaCalibrationFigures f;
  g_autofree char *text = NULL;
  g_autofree char *dir = NULL;
  EmaServerSpec *server;
  g_autoptr(EmaServerSpec) by_name = NULL;
  GError *error = NULL;

  figures_h200(&f);
  server = write_and_load(&f, &dir);
  g_assert_cmpstr(server->name, ==, "test-h200x2");
  g_assert_cmpstr(server->summary, ==,
                  "2x NVIDIA H200, calibrated by ema-validate on 2026-11-29 (measured)");
  g_assert_cmpint(server->gpus, ==, 2);
  g_assert_cmpstr(server->gpu.name, ==, "NVIDIA H200");
  g_assert_cmpint(server->topology, ==, EMA_TOPOLOGY_DIRECT);
  assert_close((double) server->gpu.hbm_capacity, (double) f.hbm_capacity, 5e-4, "hbm_capacity");
  assert_close(server->gpu.hbm_bandwidth, f.hbm_bandwidth, 5e-4, "hbm_bandwidth");
  assert_close(server->gpu.local_copy_bandwidth, f.local_copy_bandwidth, 5e-4, "local copy");
  assert_close(server->gpu.matrix_flops, 989e12, 1e-12, "matrix_flops");
  assert_close((double) server->gpu.kernel_overhead, 7280, 1e-12, "kernel_overhead");
  assert_close(server->link.bandwidth, f.peer_push.bandwidth, 5e-4, "link.bandwidth");
  assert_close(server->link.duplex_bandwidth, f.duplex_bandwidth, 5e-4, "duplex");
  assert_close(server->link.direct_read_bandwidth, f.direct_read_bandwidth, 5e-4, "direct read");
  assert_close((double) server->link.latency, 958, 1e-12, "latency");
  assert_close((double) server->link.copy_fixed_cost, 4973, 1e-12, "copy_fixed_cost");
  assert_close((double) server->link.copy_ramp_time, 3450, 1e-12, "copy_ramp_time");
  assert_close((double) server->link.copy_ramp_bytes, 67.95 * MIB, 5e-4, "copy_ramp_bytes");
  assert_close(server->host.h2d_bandwidth, 55.22e9, 1e-12, "h2d");
  assert_close(server->host.d2h_bandwidth, 55.36e9, 1e-12, "d2h");
  assert_close(server->host.duplex_bandwidth, 101.6e9, 1e-12, "host duplex");
  assert_close((double) server->host.copy_fixed_cost, 5348, 1e-12, "host fixed cost");
  assert_close(server->gpu.interference_outgoing, 0.9561, 1e-12, "interference_outgoing");
  assert_close(server->gpu.interference_incoming, 1.942, 1e-12, "interference_incoming");
  /* per slice of the batch: 9.729us; 0.601 + 14.53ms / 512 = 28.98us; 18.92 + 11.95 us */
  assert_close((double) server->vmm.create_cost, 9729, 1e-12, "vmm.create_cost");
  assert_close((double) server->vmm.map_cost, 28980, 1e-12, "vmm.map_cost");
  assert_close((double) server->vmm.unmap_cost, 30870, 1e-12, "vmm.unmap_cost");
  ema_params_free(&ema_server_params, server);

  /* by name, as ema-sim finds a model on EMA_HWMODEL_PATH */
  g_setenv("EMA_HWMODEL_PATH", dir, TRUE);
  by_name = ema_server_load("test-h200x2", &error);
  g_unsetenv("EMA_HWMODEL_PATH");
  g_assert_no_error(error);
  g_assert_nonnull(by_name);

  text = ema_calibration_yaml(&f);
  ema_test_assert_contains(text, "# Date: 2026-11-29T22:32:24Z\n");
  ema_test_assert_contains(text, "# GPUs: GPU0 NVIDIA H200 (PCI 0000:00:06.0)");
  ema_test_assert_contains(text, "# Driver: 580.159.04; CUDA driver API 13.0, runtime 13.0\n");
  ema_test_assert_contains(text, "# Command: ema-validate calibrate --name test-h200x2\n");
  ema_test_assert_contains(text, "median of 20 event-timed repeats after 3 warm-ups");
  ema_test_assert_contains(text, "  hbm_bandwidth: 4.62TB/s ");
  ema_test_assert_contains(text, "  local_copy_bandwidth: 4.264TB/s ");
  ema_test_assert_contains(text, "  copy_ramp_bytes: 67.95MiB\n");
  ema_test_assert_contains(text, "NOT measured: from the server model h200x2");
  ema_test_assert_contains(text, "# vmm_detail:");
  ema_test_assert_contains(text, "\nvmm:  ");
  ema_test_assert_contains(text, "#   borrower_loss_per_incoming_byte: 1.942 ");
  g_assert_null(strstr(text, "Derived again"));
  ema_test_assert_contains(text, "#   create_cost: 9.493us ");
  ema_test_assert_contains(text, "#   batch_set_access_cost: 14.53ms ");
  ema_test_assert_contains(text, "#   batch_create_cost: 9.729us ");
  ema_test_assert_contains(text, "#   lender_kernel_slowdown_by_peer_copy: 1.086 ");
  ema_test_assert_contains(text, "#   borrower_kernel_slowdown_by_incoming_copy: 1.199 ");
  ema_test_assert_contains(text, "#   hidden_fraction: 0.839 ");
  ema_test_assert_contains(text, "# link_pull:");
  ema_test_assert_contains(text, "(a poor fit: largest error 11%");
  /* no binary-to-decimal residue such as 4.2639999999999995TB/s */
  g_assert_null(strstr(text, "99999"));
  g_assert_null(strstr(text, "00000"));
  ema_test_remove_tree(dir);
}

static void test_calibration_clamps(void) {
  EmaCalibrationFigures f;
  g_autofree char *text = NULL;
  g_autofree char *dir = NULL;
  EmaServerSpec *server;

  figures_h200(&f);
  f.duplex_bandwidth = 1000e9;     /* above 2 x 397.7 GB/s */
  f.direct_read_bandwidth = 420e9; /* faster than the copies */
  f.host_duplex_bandwidth = 50e9;  /* below one direction */
  f.interference.lender_loss_per_pulled_byte = 12;
  f.interference.borrower_loss_per_incoming_byte = NAN;
  server = write_and_load(&f, &dir);
  assert_close(server->link.duplex_bandwidth, 2 * 397.7e9, 1e-12, "clamped duplex");
  assert_close(server->link.direct_read_bandwidth, 397.7e9, 1e-12, "clamped direct read");
  assert_close(server->host.duplex_bandwidth, 55.36e9, 1e-12, "clamped host duplex");
  g_assert_cmpfloat(server->gpu.interference_outgoing, ==, 10);
  g_assert_cmpfloat(server->gpu.interference_incoming, ==, 1);
  ema_params_free(&ema_server_params, server);
  text = ema_calibration_yaml(&f);
  ema_test_assert_contains(
      text, "measured 1TB/s, clamped to the schema's bounds (bandwidth..2 x bandwidth)");
  ema_test_assert_contains(text, "measured 420GB/s, clamped to bandwidth");
  ema_test_assert_contains(text, "measured 50GB/s, clamped to the schema's bounds");
  ema_test_assert_contains(text, "measured 12, outside the schema's 0..10, written 10");
  ema_test_assert_contains(text, "measured nan, outside the schema's 0..10, written 1");
  ema_test_remove_tree(dir);
}

static void test_calibration_without_ramp(void) {
  EmaCalibrationFigures f;
  g_autofree char *text = NULL;
  g_autofree char *dir = NULL;
  EmaServerSpec *server;

  figures_h200(&f);
  f.peer_push.ramp_s = 0;
  f.peer_push.max_rel_error = 0.2; /* and a poor fit */
  f.rederived_command = "ema-validate calibrate --from-results DIR";
  server = write_and_load(&f, &dir);
  g_assert_cmpint(server->link.copy_ramp_time, ==, 0);
  g_assert_cmpuint(server->link.copy_ramp_bytes, ==, 1048576);
  ema_params_free(&ema_server_params, server);
  text = ema_calibration_yaml(&f);
  ema_test_assert_contains(text, "  copy_ramp_time: 0ns ");
  ema_test_assert_contains(text, "the fit needs no ramp");
  ema_test_assert_contains(text, "  # (a poor fit: the copy times do not follow the model");
  ema_test_assert_contains(
      text, "# Derived again from these measurements (no GPU): ema-validate calibrate "
            "--from-results DIR\n");
  ema_test_remove_tree(dir);
}

static void test_calibration_write_error(void) {
  EmaCalibrationFigures f;
  g_autofree char *dir = ema_test_temp_dir();
  g_autofree char *file = g_build_filename(dir, "a-file", NULL);
  g_autofree char *below = g_build_filename(file, "calibration", "model.yaml", NULL);
  g_autofree char *as_dir = g_build_filename(dir, "model.yaml", NULL);
  GError *error = NULL;

  figures_h200(&f);
  g_assert_true(g_file_set_contents(file, "x", -1, NULL));
  g_assert_false(ema_calibration_write(&f, below, &error));
  g_assert_error(error, EMA_VALIDATE_ERROR, EMA_VALIDATE_ERROR_IO);
  ema_test_assert_contains(error->message, "cannot create");
  g_clear_error(&error);
  /* what is no regular file is not replaced (a directory, a FIFO, a link: the model was
   * renamed over what it could) */
  g_assert_cmpint(g_mkdir(as_dir, 0755), ==, 0);
  g_assert_false(ema_calibration_write(&f, as_dir, &error));
  g_assert_error(error, EMA_VALIDATE_ERROR, EMA_VALIDATE_ERROR_ARGUMENT);
  ema_test_assert_contains(error->message, "model.yaml' is a directory: give the model's file");
  g_clear_error(&error);
  ema_test_remove_tree(dir);
}

static void test_default_name(void) {
  const struct {
    const char *device;
    int count;
    const char *name;
  } cases[] = {
      {"NVIDIA H200", 2, "h200x2"},
      {"NVIDIA H100 80GB HBM3", 8, "h100-80gb-hbm3x8"},
      {"Tesla V100-SXM2-16GB", 4, "tesla-v100-sxm2-16gbx4"},
      {"NVIDIA  A100 --", 1, "a100x1"},
      {"", 2, "gpux2"},
  };
  for (guint i = 0; i < G_N_ELEMENTS(cases); i++) {
    g_autofree char *name = ema_calibration_default_name(cases[i].device, cases[i].count);
    g_assert_cmpstr(name, ==, cases[i].name);
  }
}

/* Every calibrated model in hwmodels/calibration/ loads as a server. */
static void test_committed_models(void) {
  g_autofree char *dir =
      g_build_filename(g_getenv("EMA_SOURCE_ROOT"), "hwmodels", "calibration", NULL);
  g_autoptr(GDir) d = g_dir_open(dir, 0, NULL);
  const char *name;
  guint loaded = 0;
  g_assert_nonnull(d);
  while ((name = g_dir_read_name(d)) != NULL) {
    g_autofree char *path = NULL;
    GError *error = NULL;
    EmaServerSpec *server;
    if (!g_str_has_suffix(name, ".yaml"))
      continue;
    path = g_build_filename(dir, name, NULL);
    server = ema_params_load_file(&ema_server_params, path, &error);
    g_assert_no_error(error);
    g_assert_cmpint(server->gpus, >=, 1);
    ema_params_free(&ema_server_params, server);
    loaded++;
  }
  g_assert_cmpuint(loaded, >=, 1);
}

int main(int argc, char **argv) {
  g_test_init(&argc, &argv, NULL);
  g_test_add_func("/validate/csv/field", test_csv_field);
  g_test_add_func("/validate/csv/report", test_report_csv);
  g_test_add_func("/validate/csv/report-error", test_report_csv_error);
  g_test_add_func("/validate/csv/append", test_csv_append);
  g_test_add_func("/validate/calibration/loads", test_calibration_loads);
  g_test_add_func("/validate/calibration/clamps", test_calibration_clamps);
  g_test_add_func("/validate/calibration/without-ramp", test_calibration_without_ramp);
  g_test_add_func("/validate/calibration/write-error", test_calibration_write_error);
  g_test_add_func("/validate/calibration/default-name", test_default_name);
  g_test_add_func("/validate/calibration/committed-models", test_committed_models);
  return g_test_run();
}
