/* test-offload.c: the attention-offload cost model (sim/hw/offload.c).
 * Small cases worked out by hand from the equations of offload.h (the
 * numbers in the comments are rounded; the assertions use the exact
 * expressions), its invariants (nothing remote costs nothing; more remote
 * work never costs less; the allowance bound and the lender share are
 * inverse), its errors, and the lender slowdown it predicts against the
 * measurements committed in validate/results/ (2026-12-03-h200-offload-interleaved/,
 * and the earlier 2026-12-01-h200-offload/ and -check/). */
#include <json-glib/json-glib.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "ema/hw/hwmodel.h"
#include "ema/hw/llm.h"
#include "ema/hw/offload.h"
#include "ema/hw/steptime.h"
#include "ema/run/experiment.h"

/* OPT-13B on one GPU: H = 40 heads of d = 128, fp16, kv_l = 2 x 40 x 128 x 2 B */
#define H 40.0
#define D 128.0
#define KV_L 20480.0
/* A100-SXM4-40GB (hwmodels/gpus/a100-sxm-40gb.yaml: 1454 GB/s at hbm_efficiency
 * 95%, kv_efficiency 100%) and its a100x4-40gb link */
#define A100_BW (1454e9 * 0.95)
#define A100_FLOPS (312e12 * 0.797)
#define A100_COPY 1393e9
#define KERNEL 7e-6
#define NVLINK3 90.6e9 /* a pair's 4 NVLink 3 links at their measured 90.6% */
#define LATENCY 1002e-9
/* H200 (4489 GB/s at hbm_efficiency 95%, kv_efficiency 100%) and h200x8-hgx's
 * switch port */
#define H200_BW (4489e9 * 0.95)
#define NVLINK4 397e9

/* SPEC, after checking that the call that made it set no ERROR. */
static gpointer loaded(gpointer spec, GError *error) {
  g_assert_no_error(error);
  g_assert_nonnull(spec);
  return spec;
}

static EmaLlmSpec *load_model(const char *name) {
  GError *error = NULL;
  EmaLlmSpec *spec = ema_llm_load(name, &error);
  return loaded(spec, error);
}

static EmaServerSpec *load_server(const char *name) {
  GError *error = NULL;
  EmaServerSpec *server = ema_server_load(name, &error);
  return loaded(server, error);
}

static EmaOffloadModel *offload_model(const char *model, const EmaServerSpec *server, guint tp) {
  GError *error = NULL;
  g_autoptr(EmaLlmSpec) llm = load_model(model);
  EmaOffloadModel *m = ema_offload_model_new(llm, server, tp, &error);
  return loaded(m, error);
}

static void assert_close(double got, double want, double rel) {
  if (fabs(got - want) > rel * fabs(want))
    g_error("got %.12g, want %.12g (relative tolerance %g)", got, want, rel);
}

/* A local step of 20 ms whose layers read their local KV for 20 us each. */
static const EmaStepBreakdown local_step = {.layer_kv_read_s = 20e-6, .time = 20000000};

/* ---- hand-computed cases --------------------------------------------------- */

/* One lender of a100x4-40gb (direct links) holds 4,000 tokens of 4 requests.
 *   sent     4 x 40 x 128 x 2 = 40,960 B: 1.002 us + 0.452 us = 1.454 us
 *   returned 4 x 40 x 129 x 4 = 82,560 B: 1.002 us + 0.911 us = 1.913 us
 *   attend   7 us + max(4000 x 20480 / 1381.3 GB/s = 59.31 us,
 *                       4 x 40 x 128 x 4000 / 248.66 TFLOP/s = 0.33 us) = 66.31 us
 *   remote   69.67 us; the layer waits 69.67 - 20 = 49.67 us
 *   merge    40 x ((4 + 4) x 129 x 4 + 4 x 128 x 2) / 1381.3 GB/s = 206,080 B: 0.149 us
 *   step     20 ms + 40 x (49.67 + 0.149) us = 21.993 ms */
static void test_one_lender_direct(void) {
  g_autoptr(EmaServerSpec) server = load_server("a100x4-40gb");
  g_autoptr(EmaOffloadModel) m = offload_model("opt-13b", server, 1);
  EmaOffloadShare share = {.seqs = 4, .context = 4000, .new_kv = 0};
  EmaOffloadBreakdown b;
  double send = LATENCY + 4 * H * D * 2 / NVLINK3;
  double back = LATENCY + 4 * H * (D + 1) * 4 / NVLINK3;
  double attend = KERNEL + MAX(4000 * KV_L / A100_BW, 4 * H * D * 4000 / A100_FLOPS);
  double merge = H * (8 * (D + 1) * 4 + 4 * D * 2) / A100_BW;
  double wait = send + attend + back - 20e-6;
  EmaTime t = ema_offload_step_time(m, &local_step, &share, 1, 4, &b);

  g_assert_cmpfloat(ema_offload_kv_bytes_per_token(m), ==, 40 * KV_L);
  assert_close(b.layer_send_s, send, 1e-12);
  assert_close(b.layer_send_s, 1.4541e-6, 1e-4);
  assert_close(b.layer_return_s, back, 1e-12);
  assert_close(b.layer_attend_s, attend, 1e-12);
  assert_close(b.layer_attend_s, 66.306e-6, 1e-4);
  assert_close(b.layer_remote_s, send + attend + back, 1e-12);
  assert_close(b.layer_wait_s, wait, 1e-12);
  assert_close(b.layer_merge_s, merge, 1e-12);
  assert_close(b.layer_merge_s, 0.14919e-6, 1e-4);
  g_assert_cmpfloat(b.bytes_sent, ==, 40 * 40960.0);
  g_assert_cmpfloat(b.bytes_returned, ==, 40 * 82560.0);
  g_assert_cmpint(b.added, ==, llround(40 * (wait + merge) * 1e9));
  g_assert_cmpint(t, ==, 20000000 + b.added);
  g_assert_cmpint(b.time, ==, t);
  assert_close((double) t, 21.993e6, 1e-4);
  /* a lender serving its own requests: its partial takes 16.6% longer,
   * 66.31 x 1.166 = 77.31 us; remote 80.68 us, the layer waits 60.68 us:
   * 20 ms + 40 x (60.68 + 0.149) us = 22.433 ms */
  g_assert_cmpfloat(server->gpu.offload_partial_slowdown, ==, 0.166);
  share.lender_busy = TRUE;
  t = ema_offload_step_time(m, &local_step, &share, 1, 4, &b);
  assert_close(b.layer_attend_s, attend * 1.166, 1e-12);
  assert_close(b.layer_wait_s, send + attend * 1.166 + back - 20e-6, 1e-12);
  assert_close((double) t, 22.433e6, 1e-4);
}

/* When the local attention is the slower, the layer does not wait: only the
 * merge is added. One request, 100 tokens on the lender: remote = (1.002 +
 * 0.113) + (7 + 1.483) + (1.002 + 0.228) = 10.83 us < 20 us local; two partials:
 * 40 x (2 x 129 x 4 + 128 x 2) / 1381.3 GB/s per layer. */
static void test_hidden_by_local(void) {
  g_autoptr(EmaServerSpec) server = load_server("a100x4-40gb");
  g_autoptr(EmaOffloadModel) m = offload_model("opt-13b", server, 1);
  EmaOffloadShare share = {.seqs = 1, .context = 100, .new_kv = 0};
  EmaOffloadBreakdown b;
  double merge = H * (2 * (D + 1) * 4 + D * 2) / A100_BW;
  ema_offload_step_time(m, &local_step, &share, 1, 1, &b);
  g_assert_cmpfloat(b.layer_remote_s, <, 20e-6);
  g_assert_cmpfloat(b.layer_wait_s, ==, 0);
  assert_close(b.layer_merge_s, merge, 1e-12);
  g_assert_cmpint(b.added, ==, llround(40 * merge * 1e9));
}

/* Two lenders behind h200x8-hgx's switch: the borrower's port carries both
 * messages, so each send and return is charged both lenders' bytes; the
 * lender with more KV sets the remote time. Lender A: 2 requests, 3,000
 * tokens, their new K/V stored there; lender B: 6 requests, 1,000 tokens.
 *   sent   A 2 x 40 x 128 x 2 + 2 x 20480 = 61,440 B, B 6 x 10,240 = 61,440 B
 *          together 122,880 B: 1.002 us + 0.310 us
 *   back   (2 + 6) x 40 x 129 x 4 = 165,120 B: 1.002 us + 0.416 us
 *   attend A 7 us + 3000 x 20480 / 4264.55 GB/s (14.41 us) + 2 x 20480 / 4264.55 GB/s
 *   merge  7 requests (one spans both): 40 x ((8 + 7) x 129 x 4 + 7 x 128 x 2) / 4264.55 GB/s */
static void test_switch_two_lenders(void) {
  g_autoptr(EmaServerSpec) server = load_server("h200x8-hgx");
  g_autoptr(EmaOffloadModel) m = offload_model("opt-13b", server, 1);
  EmaOffloadShare shares[] = {{.seqs = 2, .context = 3000, .new_kv = 2},
                              {.seqs = 6, .context = 1000, .new_kv = 0}};
  EmaOffloadBreakdown b;
  double send = LATENCY + 122880.0 / NVLINK4;
  double back = LATENCY + 165120.0 / NVLINK4;
  double attend = KERNEL + 3000 * KV_L / H200_BW + 2 * KV_L / H200_BW;
  double merge = H * (15 * (D + 1) * 4 + 7 * D * 2) / H200_BW;

  ema_offload_step_time(m, &local_step, shares, 2, 7, &b);
  assert_close(b.layer_send_s, send, 1e-12);
  assert_close(b.layer_return_s, back, 1e-12);
  assert_close(b.layer_attend_s, attend, 1e-12);
  assert_close(b.layer_wait_s, send + attend + back - 20e-6, 1e-12);
  assert_close(b.layer_merge_s, merge, 1e-12);
  g_assert_cmpfloat(b.bytes_sent, ==, 40 * 122880.0);
}

/* The same two lenders on direct links: each send carries its own bytes only. */
static void test_direct_two_lenders(void) {
  g_autoptr(EmaServerSpec) server = load_server("a100x4-40gb");
  g_autoptr(EmaOffloadModel) m = offload_model("opt-13b", server, 1);
  EmaOffloadShare shares[] = {{.seqs = 2, .context = 3000, .new_kv = 2},
                              {.seqs = 6, .context = 1000, .new_kv = 0}};
  EmaOffloadBreakdown b;
  ema_offload_step_time(m, &local_step, shares, 2, 7, &b);
  assert_close(b.layer_send_s, LATENCY + 61440.0 / NVLINK3, 1e-12);
  assert_close(b.layer_return_s, LATENCY + 2 * H * (D + 1) * 4 / NVLINK3, 1e-12);
}

/* Nothing remote: the step is the local step. TP = 2 halves the heads and
 * the KV per token of each rank. */
static void test_nothing_remote_and_tp(void) {
  g_autoptr(EmaServerSpec) server = load_server("a100x4-40gb");
  g_autoptr(EmaOffloadModel) m = offload_model("opt-13b", server, 1);
  g_autoptr(EmaOffloadModel) tp2 = offload_model("opt-13b", server, 2);
  EmaOffloadShare none = {0};
  EmaOffloadShare share = {.seqs = 4, .context = 4000, .new_kv = 0};
  EmaOffloadBreakdown b1, b2;
  g_assert_cmpint(ema_offload_step_time(m, &local_step, NULL, 0, 0, &b1), ==, local_step.time);
  g_assert_cmpint(b1.added, ==, 0);
  g_assert_cmpint(ema_offload_step_time(m, &local_step, &none, 1, 0, NULL), ==, local_step.time);
  g_assert_cmpfloat(ema_offload_kv_bytes_per_token(tp2), ==, 20 * KV_L);
  ema_offload_step_time(m, &local_step, &share, 1, 4, &b1);
  ema_offload_step_time(tp2, &local_step, &share, 1, 4, &b2);
  g_assert_cmpfloat(b2.bytes_sent, ==, b1.bytes_sent / 2);
  assert_close(b2.layer_attend_s - KERNEL, (b1.layer_attend_s - KERNEL) / 2, 1e-12);
}

/* A TP group of 2 offloading as a group (ema_offload_model_new_group):
 * OPT-13B, each rank H = 20 heads and kv_l = 10,240 B; one lender holds
 * 4,000 tokens of 4 requests (both shards).
 *   sent     a rank's queries, 4 x 20 x 128 x 2 = 20,480 B: over its own
 *            link on a100x4-40gb; on h200x8-hgx the lender's port carries
 *            both ranks', 40,960 B
 *   returned 4 x 20 x 129 x 4 = 41,280 B per rank, likewise
 *   attend   7 us + max(2 x 4000 x 10240 / rate_kv, 2 x 4 x 20 x 128 x 4000 / rate_c):
 *            the lender reads both shards, what the tp 1 tenant's whole KV is
 *   merge    a rank's heads: 20 x ((4 + 4) x 129 x 4 + 4 x 128 x 2) / rate_m
 * and the lender's share and c_max count both shards: the tp 1 tenant's. */
static void test_group(void) {
  g_autoptr(EmaServerSpec) direct = load_server("a100x4-40gb");
  g_autoptr(EmaServerSpec) sw = load_server("h200x8-hgx");
  g_autoptr(EmaLlmSpec) llm = load_model("opt-13b");
  GError *error = NULL;
  g_autoptr(EmaOffloadModel) g = loaded(ema_offload_model_new_group(llm, direct, 2, &error), error);
  g_autoptr(EmaOffloadModel) gs = loaded(ema_offload_model_new_group(llm, sw, 2, &error), error);
  g_autoptr(EmaOffloadModel) one = offload_model("opt-13b", direct, 1);
  g_autoptr(EmaOffloadModel) rank = offload_model("opt-13b", direct, 2);
  EmaOffloadShare share = {.seqs = 4, .context = 4000, .new_kv = 0};
  EmaOffloadBreakdown b, bs, b1, br;
  double sent = 4 * 20 * D * 2, back = 4 * 20 * (D + 1) * 4;
  double attend = KERNEL + MAX(2 * 4000 * KV_L / 2 / A100_BW, 2 * 4 * 20 * D * 4000 / A100_FLOPS);
  double merge = 20 * (8 * (D + 1) * 4 + 4 * D * 2) / A100_BW;

  ema_offload_step_time(g, &local_step, &share, 1, 4, &b);
  assert_close(b.layer_send_s, LATENCY + sent / NVLINK3, 1e-12);
  assert_close(b.layer_return_s, LATENCY + back / NVLINK3, 1e-12);
  assert_close(b.layer_attend_s, attend, 1e-12);
  assert_close(b.layer_merge_s, merge, 1e-12);
  assert_close(b.layer_wait_s, b.layer_send_s + attend + b.layer_return_s - 20e-6, 1e-12);
  g_assert_cmpfloat(b.bytes_sent, ==, 40 * sent);
  /* the lender's work is the tp 1 tenant's; one rank alone (no group) does half of it */
  ema_offload_step_time(one, &local_step, &share, 1, 4, &b1);
  ema_offload_step_time(rank, &local_step, &share, 1, 4, &br);
  assert_close(b.layer_attend_s, b1.layer_attend_s, 1e-12);
  assert_close(br.layer_attend_s - KERNEL, (b.layer_attend_s - KERNEL) / 2, 1e-12);
  assert_close(ema_offload_lender_share(g, &share, 20000000),
               ema_offload_lender_share(one, &share, 20000000), 1e-12);
  assert_close(ema_offload_lender_share(g, &share, 20000000),
               2 * ema_offload_lender_share(rank, &share, 20000000), 1e-12);
  assert_close(ema_offload_max_context(g, 0.05, 20000000),
               ema_offload_max_context(one, 0.05, 20000000), 1e-12);

  /* on a switch: the lender's one port carries both ranks' messages */
  ema_offload_step_time(gs, &local_step, &share, 1, 4, &bs);
  assert_close(bs.layer_send_s, LATENCY + 2 * sent / NVLINK4, 1e-12);
  assert_close(bs.layer_return_s, LATENCY + 2 * back / NVLINK4, 1e-12);
  g_assert_cmpfloat(bs.bytes_sent, ==, 40 * sent);
}

/* More remote work never costs less, for every field of a share. */
static void test_monotonic(void) {
  g_autoptr(EmaServerSpec) server = load_server("h200x8-hgx");
  g_autoptr(EmaOffloadModel) m = offload_model("llama-2-13b", server, 1);
  EmaOffloadShare base = {.seqs = 3, .context = 2000, .new_kv = 1};
  EmaTime t0 = ema_offload_step_time(m, &local_step, &base, 1, 3, NULL);
  EmaOffloadShare more_seqs = base, more_context = base, more_new = base;
  more_seqs.seqs = 6;
  more_context.context = 8000;
  more_new.new_kv = 3;
  g_assert_cmpint(ema_offload_step_time(m, &local_step, &more_seqs, 1, 6, NULL), >=, t0);
  g_assert_cmpint(ema_offload_step_time(m, &local_step, &more_context, 1, 3, NULL), >, t0);
  g_assert_cmpint(ema_offload_step_time(m, &local_step, &more_new, 1, 3, NULL), >=, t0);
  g_assert_cmpfloat(ema_offload_lender_share(m, &more_context, 20000000), >,
                    ema_offload_lender_share(m, &base, 20000000));
  for (double r = 0; r < 0.6; r += 0.001)
    g_assert_cmpfloat(ema_gpu_offload_slowdown(&server->gpu, r + 0.001), >=,
                      ema_gpu_offload_slowdown(&server->gpu, r));
}

/* The lender's slowdown curve by hand, on points (10%, 5%), (20%, 25%):
 * 2.5% at 5% (the line from the origin), 5% at the first point, 15% half
 * way, 25% at the last, 45% at 30% (the last segment continued); and
 * nothing without points. */
static void test_slowdown_curve(void) {
  EmaOffloadPoint points[] = {{0.10, 0.05}, {0.20, 0.25}};
  EmaGpuSpec gpu = {.offload_slowdown = g_array_new(FALSE, FALSE, sizeof(EmaOffloadPoint))};
  g_assert_cmpfloat(ema_gpu_offload_slowdown(&gpu, 0.3), ==, 0);
  g_array_append_vals(gpu.offload_slowdown, points, G_N_ELEMENTS(points));
  assert_close(ema_gpu_offload_slowdown(&gpu, 0), 0, 1e-12);
  assert_close(ema_gpu_offload_slowdown(&gpu, 0.05), 0.025, 1e-12);
  assert_close(ema_gpu_offload_slowdown(&gpu, 0.10), 0.05, 1e-12);
  assert_close(ema_gpu_offload_slowdown(&gpu, 0.15), 0.15, 1e-12);
  assert_close(ema_gpu_offload_slowdown(&gpu, 0.20), 0.25, 1e-12);
  assert_close(ema_gpu_offload_slowdown(&gpu, 0.30), 0.45, 1e-12);
  g_array_set_size(gpu.offload_slowdown, 1);
  assert_close(ema_gpu_offload_slowdown(&gpu, 0.30), 0.15, 1e-12); /* one point: a line */
  g_array_free(gpu.offload_slowdown, TRUE);
}

/* The lender's side on a100x4-40gb: 1,000 tokens read once per 20 ms
 * borrower step are 40 x 1000 x 20480 B / 20 ms = 40.96 GB/s, r = 40.96 /
 * 1393 = 2.94% of its HBM time; on the measured curve between (1.94%,
 * 1.82%) and (3.37%, 3.15%) its steps slow by 1.82% + 1.33% x (2.94% -
 * 1.94%) / 1.43% = 2.75%. Within a 5% allowance it takes 0.05 x 1393 GB/s
 * x 20 ms / 819,200 B = 1,700.4 tokens, which read exactly 5%. */
static void test_lender(void) {
  g_autoptr(EmaServerSpec) server = load_server("a100x4-40gb");
  g_autoptr(EmaOffloadModel) m = offload_model("opt-13b", server, 1);
  EmaOffloadShare share = {.seqs = 2, .context = 1000, .new_kv = 0};
  double r = 40 * 1000 * KV_L / (0.02 * A100_COPY);
  double max;
  EmaOffloadShare at_max = {.seqs = 2};

  assert_close(ema_offload_lender_share(m, &share, 20000000), r, 1e-12);
  assert_close(r, 0.029404, 1e-4);
  assert_close(ema_gpu_offload_slowdown(&server->gpu, r),
               0.0182 + (0.0315 - 0.0182) * (r - 0.0194) / (0.0337 - 0.0194), 1e-12);
  assert_close(ema_gpu_offload_slowdown(&server->gpu, r), 0.02750, 1e-3);
  max = ema_offload_max_context(m, 0.05, 20000000);
  assert_close(max, 0.05 * A100_COPY * 0.02 / (40 * KV_L), 1e-12);
  assert_close(max, 1700.44, 1e-5);
  at_max.context = max;
  assert_close(ema_offload_lender_share(m, &at_max, 20000000), 0.05, 1e-12);
  g_assert_cmpfloat(ema_offload_max_context(m, 0, 20000000), ==, 0);
}

/* Every GPU file states the slowdown curve: measured on H200, the same
 * points assumed on the others. */
static void test_every_server_has_curve(void) {
  static const EmaOffloadPoint h200[] = {{0.0049, 0.0043}, {0.0098, 0.0088}, {0.0194, 0.0182},
                                         {0.0337, 0.0315}, {0.0480, 0.0458}, {0.0949, 0.0929},
                                         {0.1383, 0.1380}, {0.1852, 0.1985}, {0.2424, 0.2756}};
  g_autoptr(GPtrArray) names = ema_hwmodel_list();
  g_assert_cmpuint(names->len, >, 0);
  for (guint i = 0; i < names->len; i++) {
    g_autoptr(EmaServerSpec) server = load_server(names->pdata[i]);
    const GArray *points = server->gpu.offload_slowdown;
    g_assert_nonnull(points);
    g_assert_cmpuint(points->len, ==, G_N_ELEMENTS(h200));
    for (guint j = 0; j < points->len; j++) {
      assert_close(g_array_index(points, EmaOffloadPoint, j).share, h200[j].share, 1e-12);
      assert_close(g_array_index(points, EmaOffloadPoint, j).slowdown, h200[j].slowdown, 1e-12);
    }
  }
}

static void test_errors(void) {
  g_autoptr(EmaServerSpec) server = load_server("a100x4-40gb");
  g_autoptr(EmaLlmSpec) llm = load_model("opt-13b");
  GError *error = NULL;
  g_assert_null(ema_offload_model_new(llm, server, 3, &error));
  g_assert_error(error, EMA_CONFIG_ERROR, EMA_CONFIG_ERROR_INVALID);
  g_assert_cmpstr(error->message, ==, "tensor-parallel size 3 must divide the server's 4 GPUs");
  g_clear_error(&error);
  server->link.bandwidth = 0;
  g_assert_null(ema_offload_model_new(llm, server, 1, &error));
  g_assert_error(error, EMA_CONFIG_ERROR, EMA_CONFIG_ERROR_INVALID);
  g_assert_cmpstr(error->message, ==,
                  "server a100x4-40gb: attention offload needs a positive link bandwidth and "
                  "local copy bandwidth");
  g_clear_error(&error);
  server->link.bandwidth = 1e9;
  g_array_set_size(server->gpu.offload_slowdown, 0);
  g_assert_null(ema_offload_model_new(llm, server, 1, &error));
  g_assert_error(error, EMA_CONFIG_ERROR, EMA_CONFIG_ERROR_INVALID);
  g_assert_cmpstr(error->message, ==,
                  "GPU A100-SXM4-40GB: attention offload needs gpu.offload_slowdown (a lender's "
                  "measured slowdown against the share of its HBM time that offloaded attention "
                  "reads)");
  g_clear_error(&error);
}

/* ---- against the measurement ---------------------------------------------- */

/* One row of a validate/offload-cost.py CSV (the alone rows left out). */
typedef struct {
  char *model;
  int batch;
  double target, rate, slowdown;
} Measured;

static void measured_clear(gpointer row) {
  g_free(((Measured *) row)->model);
}

static int column(char **header, const char *name) {
  for (int i = 0; header[i]; i++)
    if (strcmp(header[i], name) == 0)
      return i;
  g_error("offload-cost.csv has no column %s", name);
  return -1;
}

/* The rows of validate/results/RUN/offload-cost.csv at a target rate, and
 * the run's copy rate (*COPY_RATE: offload-cost.json's
 * meta.hbm_copy_traffic_Bps, the rate its shares are of). */
static GArray *load_measured(const char *run, double *copy_rate) {
  const char *root = g_getenv("EMA_SOURCE_ROOT");
  g_autofree char *path = NULL, *text = NULL, *json = NULL;
  g_auto(GStrv) lines = NULL, header = NULL;
  g_autoptr(JsonParser) parser = json_parser_new();
  GArray *rows = g_array_new(FALSE, FALSE, sizeof(Measured));
  GError *error = NULL;
  JsonObject *meta;
  int c_model, c_batch, c_target, c_rate, c_slow;
  g_array_set_clear_func(rows, measured_clear);
  g_assert_nonnull(root);
  json = g_build_filename(root, "validate", "results", run, "offload-cost.json", NULL);
  g_assert_true(json_parser_load_from_file(parser, json, &error));
  g_assert_no_error(error);
  meta = json_object_get_object_member(json_node_get_object(json_parser_get_root(parser)), "meta");
  g_assert_nonnull(meta);
  *copy_rate = json_object_get_double_member(meta, "hbm_copy_traffic_Bps");
  g_assert_cmpfloat(*copy_rate, >, 0);
  path = g_build_filename(root, "validate", "results", run, "offload-cost.csv", NULL);
  g_assert_true(g_file_get_contents(path, &text, NULL, &error));
  g_assert_no_error(error);
  lines = g_strsplit(text, "\n", -1);
  header = g_strsplit(lines[0], ",", -1);
  c_model = column(header, "model");
  c_batch = column(header, "batch");
  c_target = column(header, "target_rate");
  c_rate = column(header, "achieved_rate");
  c_slow = column(header, "slowdown");
  for (guint i = 1; lines[i] && lines[i][0]; i++) {
    g_auto(GStrv) f = g_strsplit(lines[i], ",", -1);
    Measured row = {g_strdup(f[c_model]), atoi(f[c_batch]), g_ascii_strtod(f[c_target], NULL),
                    g_ascii_strtod(f[c_rate], NULL), g_ascii_strtod(f[c_slow], NULL)};
    if (row.target > 0)
      g_array_append_val(rows, row);
    else
      g_free(row.model);
  }
  return rows;
}

/* The slowdown the model predicts for a measured row of a run whose copy
 * rate was COPY_RATE (offload-cost.json, meta.hbm_copy_traffic_Bps): a
 * borrower whose 20 ms steps read rate x COPY_RATE x 20 ms of OPT-13B KV
 * (the offload of that run) on an H200 lender, its share of the lender's
 * HBM time through the model, the curve's slowdown at it. */
static double predicted_slowdown(const Measured *row, double copy_rate) {
  g_autoptr(EmaServerSpec) server = load_server("h200x2");
  g_autoptr(EmaOffloadModel) m = NULL;
  EmaOffloadShare share = {.seqs = 16};
  server->gpu.local_copy_bandwidth = copy_rate;
  m = offload_model("opt-13b", server, 1);
  share.context = row->rate * copy_rate * 0.02 / ema_offload_kv_bytes_per_token(m);
  assert_close(ema_offload_lender_share(m, &share, 20000000), row->rate, 1e-9);
  return ema_gpu_offload_slowdown(&server->gpu, ema_offload_lender_share(m, &share, 20000000));
}

/* Per target rate from MIN_RATE, the summed predicted slowdowns of ROWS
 * against the summed measured ones: within TOLERANCE of them. */
static void assert_rate_means(const GArray *rows, double copy_rate, double min_rate,
                              double tolerance) {
  g_autoptr(GHashTable) seen = g_hash_table_new(g_double_hash, g_double_equal);
  for (guint i = 0; i < rows->len; i++) {
    const Measured *a = &g_array_index(rows, Measured, i);
    double predicted = 0, measured = 0;
    if (a->target < min_rate || g_hash_table_contains(seen, &a->target))
      continue;
    g_hash_table_add(seen, (gpointer) &a->target);
    for (guint j = 0; j < rows->len; j++) {
      const Measured *b = &g_array_index(rows, Measured, j);
      if (fabs(b->target - a->target) < 1e-9) {
        predicted += predicted_slowdown(b, copy_rate);
        measured += b->slowdown;
      }
    }
    if (fabs(predicted / measured - 1) > tolerance)
      g_error("at r = %g the mean predicted slowdown is %+.1f%% off the measured", a->target,
              100 * (predicted / measured - 1));
  }
}

/* The curve's error on ROW of a run whose copy rate was COPY_RATE:
 * predicted / measured - 1. */
static double row_error(const Measured *row, double copy_rate) {
  return predicted_slowdown(row, copy_rate) / row->slowdown - 1;
}

/* The rows of ROWS at a target rate of at least MIN_RATE: their count. */
static guint rows_from(const GArray *rows, double min_rate) {
  guint n = 0;
  for (guint i = 0; i < rows->len; i++)
    n += g_array_index(rows, Measured, i).target >= min_rate;
  return n;
}

/* Every row of ROWS from MIN_RATE within TOLERANCE of the curve. */
static void assert_points(const GArray *rows, double copy_rate, double min_rate, double tolerance) {
  for (guint i = 0; i < rows->len; i++) {
    const Measured *row = &g_array_index(rows, Measured, i);
    if (row->target >= min_rate && fabs(row_error(row, copy_rate)) > tolerance)
      g_error("%s batch %d at r = %g: predicted %+.4f, measured %+.4f (%+.1f%%)", row->model,
              row->batch, row->target, predicted_slowdown(row, copy_rate), row->slowdown,
              100 * row_error(row, copy_rate));
  }
}

/* The runs the curve was built from
 * (validate/results/2026-12-03-h200-offload-interleaved/low and high/, each
 * rate timed five times in turn with the step alone; copy rates 4280.6 and
 * 4278.4 GB/s): the per-rate means are the curve's points (within 1%: the
 * files round them). From 5% every lender step is within 13% of it (12.3%
 * at worst); below 5% the lenders differ more than the curve's error
 * (Llama-2-13B 16 x 2000 slows up to twice as much as the Llama-3.1-8B
 * steps at 0.5%), and the curve, their mean, lies between them. */
static void test_measurement(void) {
  double low_rate, high_rate;
  g_autoptr(GArray) low = load_measured("2026-12-03-h200-offload-interleaved/low", &low_rate);
  g_autoptr(GArray) high = load_measured("2026-12-03-h200-offload-interleaved/high", &high_rate);
  g_assert_cmpuint(low->len, ==, 24);
  g_assert_cmpuint(high->len, ==, 12);
  assert_rate_means(low, low_rate, 0.005, 0.01);
  assert_rate_means(high, high_rate, 0.15, 0.01);
  assert_points(low, low_rate, 0.05, 0.13);
  assert_points(high, high_rate, 0.15, 0.13);
  for (guint i = 0; i < low->len; i++) {
    const Measured *a = &g_array_index(low, Measured, i);
    double under = 0, over = 0;
    if (a->target >= 0.05)
      continue;
    for (guint j = 0; j < low->len; j++) {
      const Measured *b = &g_array_index(low, Measured, j);
      if (fabs(b->target - a->target) < 1e-9) {
        under = MIN(under, row_error(b, low_rate));
        over = MAX(over, row_error(b, low_rate));
      }
    }
    g_assert_cmpfloat(under, <, -0.10);
    g_assert_cmpfloat(over, >, 0.10);
  }
}

/* A second run at rates between the curve's
 * (validate/results/2026-12-03-h200-offload-interleaved/check/, copy rate
 * 4277.1 GB/s), nothing fitted on it: its per-rate means within 7% of the
 * predicted (0.75%: +6.4%, 1.5%: -0.2%, 2.5%: +1.3%, 7.5%: +3.1%), every
 * lender step at 7.5% within 6%. */
static void test_measurement_check(void) {
  double copy_rate;
  g_autoptr(GArray) rows = load_measured("2026-12-03-h200-offload-interleaved/check", &copy_rate);
  g_assert_cmpuint(rows->len, ==, 16);
  assert_rate_means(rows, copy_rate, 0.0075, 0.07);
  g_assert_cmpuint(rows_from(rows, 0.075), ==, 4);
  assert_points(rows, copy_rate, 0.075, 0.06);
}

/* The earlier runs, on other lent H200s with the earlier estimator (the
 * median step against one median alone per lender, measured first:
 * validate/results/2026-12-01-h200-offload/ and -check/, copy rates 4245.8
 * and 4265.4 GB/s): from 5%, where their run-to-run spread is small beside
 * the slowdown, their per-rate means are within 7% of the curve (5.8% and
 * 6.8% at worst). */
static void test_measurement_earlier(void) {
  double first_rate, check_rate;
  g_autoptr(GArray) first = load_measured("2026-12-01-h200-offload", &first_rate);
  g_autoptr(GArray) check = load_measured("2026-12-01-h200-offload-check", &check_rate);
  g_assert_cmpuint(rows_from(first, 0.05), ==, 16);
  g_assert_cmpuint(rows_from(check, 0.05), ==, 24);
  assert_rate_means(first, first_rate, 0.05, 0.07);
  assert_rate_means(check, check_rate, 0.05, 0.07);
}

int main(int argc, char **argv) {
  g_test_init(&argc, &argv, NULL);
  g_test_add_func("/offload/one-lender-direct", test_one_lender_direct);
  g_test_add_func("/offload/hidden-by-local", test_hidden_by_local);
  g_test_add_func("/offload/switch-two-lenders", test_switch_two_lenders);
  g_test_add_func("/offload/direct-two-lenders", test_direct_two_lenders);
  g_test_add_func("/offload/nothing-remote-and-tp", test_nothing_remote_and_tp);
  g_test_add_func("/offload/group", test_group);
  g_test_add_func("/offload/monotonic", test_monotonic);
  g_test_add_func("/offload/lender", test_lender);
  g_test_add_func("/offload/slowdown-curve", test_slowdown_curve);
  g_test_add_func("/offload/curve-in-every-server", test_every_server_has_curve);
  g_test_add_func("/offload/errors", test_errors);
  g_test_add_func("/offload/measurement", test_measurement);
  g_test_add_func("/offload/measurement-check", test_measurement_check);
  g_test_add_func("/offload/measurement-earlier", test_measurement_earlier);
  return g_test_run();
}
