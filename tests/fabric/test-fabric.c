/* test-fabric.c: the fabric model (sim/hw/fabric.c): max-min sharing of link
 * directions, duplex limits, switch ports, HBM and host links, per-flow caps,
 * re-rating when flows start, finish or are aborted, the copy ramp, and
 * ema_fabric_solo_time() against the event loop. Every expected number is
 * worked out by hand in the comment next to it. Times are in ns. */
#include <math.h>

#include "ema/hw/fabric.h"

#define GiB (G_GUINT64_CONSTANT(1) << 30)
#define MiB (G_GUINT64_CONSTANT(1) << 20)
#define KiB (G_GUINT64_CONSTANT(1) << 10)

/* A plain server with round numbers: no fixed costs, no ramp, HBM and
 * local copies so fast that they never limit a test unless it says so. */
static EmaServerSpec server_plain(EmaTopology topology, gint64 gpus) {
  EmaServerSpec s = {0};
  s.gpus = gpus;
  s.gpu.hbm_capacity = 80 * GiB;
  s.gpu.hbm_bandwidth = 1e15;
  s.gpu.local_copy_bandwidth = 1e15;
  s.gpu.matrix_flops = 1e15;
  s.gpu.kernel_overhead = 0;
  s.topology = topology;
  s.link.bandwidth = 100e9;
  s.link.duplex_bandwidth = 200e9;
  s.link.direct_read_bandwidth = 100e9;
  s.link.latency = 0;
  s.link.copy_fixed_cost = 0;
  s.link.copy_ramp_time = 0;
  s.link.copy_ramp_bytes = 0;
  s.host.h2d_bandwidth = 50e9;
  s.host.d2h_bandwidth = 50e9;
  s.host.duplex_bandwidth = 100e9;
  s.host.copy_fixed_cost = 0;
  return s;
}

/* Two H200s over NVLink 4 with the figures measured in
 * shared/calibration/h200x2-baseline.md. Marked values are test choices,
 * not measurements. */
static EmaServerSpec server_h200x2(void) {
  EmaServerSpec s = {0};
  s.gpus = 2;
  s.gpu.hbm_capacity = G_GUINT64_CONSTANT(150109106995); /* 139.8 GiB */
  s.gpu.hbm_bandwidth = 4489e9;
  s.gpu.local_copy_bandwidth = 4301e9;
  s.gpu.matrix_flops = 989e12;  /* test value */
  s.gpu.kernel_overhead = 5000; /* test value */
  s.topology = EMA_TOPOLOGY_DIRECT;
  s.link.bandwidth = 397e9;
  s.link.duplex_bandwidth = 784e9;
  s.link.direct_read_bandwidth = 375e9;
  s.link.latency = 1002;
  s.link.copy_fixed_cost = 6500;    /* ~ the 4 KiB copy time */
  s.link.copy_ramp_time = 4200;     /* test fit */
  s.link.copy_ramp_bytes = 2 * MiB; /* test fit */
  s.host.h2d_bandwidth = 55.4e9;
  s.host.d2h_bandwidth = 55.3e9;
  s.host.duplex_bandwidth = 100e9; /* test value */
  s.host.copy_fixed_cost = 10000;  /* test value */
  return s;
}

/* One flow under test and what its done callback saw. */
typedef struct {
  EmaFlow flow;
  guint done_count;
  EmaTime done_at;
} Rec;

static void on_done(EmaFabric *fabric, EmaFlow *flow, gpointer user_data) {
  Rec *rec = user_data;
  g_assert_true(flow == &rec->flow);
  g_assert_cmpint(flow->active_index, ==, -1);
  rec->done_count++;
  rec->done_at = flow->finished;
}

static void start(EmaFabric *fabric, Rec *rec, EmaFlowKind kind, gint src, gint dst,
                  guint64 bytes) {
  g_autoptr(GError) error = NULL;
  g_assert_true(ema_fabric_check_flow(fabric, kind, src, dst, &error));
  g_assert_no_error(error);
  memset(rec, 0, sizeof *rec);
  ema_fabric_start(fabric, &rec->flow, kind, src, dst, bytes, on_done, rec);
}

static void run_all(EmaSim *sim) {
  g_autoptr(GError) error = NULL;
  g_assert_true(ema_sim_run_until(sim, EMA_TIME_NEVER, &error));
  g_assert_no_error(error);
}

static void run_until(EmaSim *sim, EmaTime t) {
  g_autoptr(GError) error = NULL;
  g_assert_true(ema_sim_run_until(sim, t, &error));
  g_assert_no_error(error);
}

/* Two 1 GB copies 0->1 share DIRECT link direction 0->1 (100e9 B/s):
 * 50e9 each (duplex 200e9 and HBM are not binding); 1e9 / 50e9 s = 20 ms. */
static void test_direct_half(void) {
  EmaServerSpec spec = server_plain(EMA_TOPOLOGY_DIRECT, 2);
  g_autoptr(EmaSim) sim = ema_sim_new();
  g_autoptr(EmaFabric) fabric = ema_fabric_new(sim, &spec);
  Rec a, b;

  start(fabric, &a, EMA_FLOW_COPY, 0, 1, 1000000000);
  start(fabric, &b, EMA_FLOW_COPY, 0, 1, 1000000000);
  g_assert_cmpuint(ema_fabric_active_flows(fabric), ==, 2);
  run_until(sim, 0); /* both setups (0 ns) end at t = 0 */
  g_assert_cmpfloat(a.flow.rate, ==, 50e9);
  g_assert_cmpfloat(b.flow.rate, ==, 50e9);
  run_all(sim);
  g_assert_cmpuint(a.done_count, ==, 1);
  g_assert_cmpuint(b.done_count, ==, 1);
  g_assert_cmpint(a.done_at, ==, EMA_MS(20));
  g_assert_cmpint(b.done_at, ==, EMA_MS(20));
  g_assert_cmpuint(ema_fabric_active_flows(fabric), ==, 0);
}

/* SWITCH, 4 GPUs, ports 300e9 per direction and 600e9 duplex. Copies 1->0,
 * 2->0, 3->0 share ingress(0): 300e9 / 3 = 100e9 each (port duplex(0):
 * 600e9 / 3 = 200e9, not binding); 1e9 B / 100e9 = 10 ms. A fourth copy
 * 0->1 runs the other way: in progressive filling all four reach 100e9,
 * ingress(0) saturates and freezes the three; 0->1 goes on until its cap
 * 300e9 (egress(0) left 200e9, ingress(1) left 200e9, duplex(0) left
 * 600 - 4 x 100 = 200e9, duplex(1) left 600 - 2 x 100 = 400e9: all allow
 * +200e9). 1.5e9 B / 300e9 = 5 ms. */
static void test_switch_third(void) {
  EmaServerSpec spec = server_plain(EMA_TOPOLOGY_SWITCH, 4);
  g_autoptr(EmaSim) sim = ema_sim_new();
  g_autoptr(EmaFabric) fabric = NULL;
  Rec in[3], out;

  spec.link.bandwidth = 300e9;
  spec.link.duplex_bandwidth = 600e9;
  fabric = ema_fabric_new(sim, &spec);
  for (gint k = 0; k < 3; k++)
    start(fabric, &in[k], EMA_FLOW_COPY, k + 1, 0, 1000000000);
  start(fabric, &out, EMA_FLOW_COPY, 0, 1, 1500000000);
  run_until(sim, 0);
  for (gint k = 0; k < 3; k++)
    g_assert_cmpfloat(in[k].flow.rate, ==, 100e9);
  g_assert_cmpfloat(out.flow.rate, ==, 300e9);
  run_all(sim);
  for (gint k = 0; k < 3; k++)
    g_assert_cmpint(in[k].done_at, ==, EMA_MS(10));
  g_assert_cmpint(out.done_at, ==, EMA_MS(5));
}

/* Three copies out of GPU 0 on a SWITCH share its egress port (300e9):
 * 100e9 each, 1e9 B in 10 ms. A copy 1 -> 2 at the same time is untouched. */
static void test_switch_egress_third(void) {
  EmaServerSpec spec = server_plain(EMA_TOPOLOGY_SWITCH, 4);
  g_autoptr(EmaSim) sim = ema_sim_new();
  g_autoptr(EmaFabric) fabric = NULL;
  Rec out[3], other;

  spec.link.bandwidth = 300e9;
  spec.link.duplex_bandwidth = 600e9;
  fabric = ema_fabric_new(sim, &spec);
  for (gint k = 0; k < 3; k++)
    start(fabric, &out[k], EMA_FLOW_COPY, 0, k + 1, 1000000000);
  start(fabric, &other, EMA_FLOW_COPY, 1, 2, 3000000000);
  run_until(sim, 0);
  for (gint k = 0; k < 3; k++)
    g_assert_cmpfloat(out[k].flow.rate, ==, 100e9);
  /* 1 -> 2 shares GPU 2's ingress with 0 -> 2 (100e9): it gets the other 200e9 */
  g_assert_cmpfloat(other.flow.rate, ==, 200e9);
  run_all(sim);
  for (gint k = 0; k < 3; k++)
    g_assert_cmpint(out[k].done_at, ==, EMA_MS(10));
  /* 2e9 B moved by 10 ms, then alone at 300e9: 1e9 / 300e9 = 3.333... ms, rounded up */
  g_assert_cmpint(other.done_at, ==, EMA_MS(10) + 3333334);
}

/* A 1 GB and a 2 GB copy on link 0->1 (100e9): 50e9 each until the first
 * has moved 1e9 B at 20 ms; the second then has 2e9 - 50e9 x 0.02 = 1e9 B
 * left and gets the whole 100e9: 1e9 / 100e9 = 10 ms more, done at 30 ms. */
static void rerate_done(EmaFabric *fabric, EmaFlow *flow, gpointer user_data) {
  Rec *other = user_data;
  /* the others are re-rated before done runs */
  g_assert_cmpfloat(other->flow.rate, ==, 100e9);
  g_assert_cmpint(flow->finished, ==, EMA_MS(20));
  other->done_count += 100;
}

static void test_rerate_on_finish(void) {
  EmaServerSpec spec = server_plain(EMA_TOPOLOGY_DIRECT, 2);
  g_autoptr(EmaSim) sim = ema_sim_new();
  g_autoptr(EmaFabric) fabric = ema_fabric_new(sim, &spec);
  EmaFlow a;
  Rec b;

  start(fabric, &b, EMA_FLOW_COPY, 0, 1, 2000000000);
  ema_fabric_start(fabric, &a, EMA_FLOW_COPY, 0, 1, 1000000000, rerate_done, &b);
  run_until(sim, 0);
  g_assert_cmpfloat(a.rate, ==, 50e9);
  g_assert_cmpfloat(b.flow.rate, ==, 50e9);
  run_all(sim);
  g_assert_cmpint(a.finished, ==, EMA_MS(20));
  g_assert_cmpuint(b.done_count, ==, 101);
  g_assert_cmpint(b.done_at, ==, EMA_MS(30));
}

/* h200x2: copies 0->1 and 1->0 at once. Each direction allows 397e9, the
 * pair's duplex 784e9 / 2 = 392e9 binds: 392e9 each. 3.92e9 B / 392e9 =
 * 10 ms. Setup: copy_fixed_cost 6500 + ramp 4200 x (1 - exp(-3.92e9 / 2 MiB))
 * = 4200 (exp underflows to 0) -> 10700. Done at 10 ms + 10700 ns. */
static void test_duplex(void) {
  EmaServerSpec spec = server_h200x2();
  g_autoptr(EmaSim) sim = ema_sim_new();
  g_autoptr(EmaFabric) fabric = ema_fabric_new(sim, &spec);
  Rec fwd, back;

  start(fabric, &fwd, EMA_FLOW_COPY, 0, 1, 3920000000);
  start(fabric, &back, EMA_FLOW_COPY, 1, 0, 3920000000);
  run_until(sim, 10700);
  g_assert_cmpfloat(fwd.flow.rate, ==, 392e9);
  g_assert_cmpfloat(back.flow.rate, ==, 392e9);
  run_all(sim);
  g_assert_cmpint(fwd.done_at, ==, EMA_MS(10) + 10700);
  g_assert_cmpint(back.done_at, ==, EMA_MS(10) + 10700);

  /* alone: 3.97e9 B at the full direction 397e9 = 10 ms */
  start(fabric, &fwd, EMA_FLOW_COPY, 0, 1, 3970000000);
  run_all(sim);
  g_assert_cmpint(fwd.done_at - fwd.flow.started, ==, EMA_MS(10) + 10700);
}

/* h200x2 direct reads (kernel on GPU 0 loads GPU 1's memory). Alone: capped
 * at direct_read_bandwidth 375e9 (link direction 397e9 would allow more):
 * 3.75e9 B / 375e9 = 10 ms; setup kernel_overhead 5000 + latency 1002 =
 * 6002. Two at once: direction 1->0 397e9 / 2 = 198.5e9 each, under the
 * 375e9 cap (HBM(1) 4489e9 / 2, duplex 784e9 / 2 not binding); 1.985e9 B /
 * 198.5e9 = 10 ms. */
static void test_read_cap(void) {
  EmaServerSpec spec = server_h200x2();
  g_autoptr(EmaSim) sim = ema_sim_new();
  g_autoptr(EmaFabric) fabric = ema_fabric_new(sim, &spec);
  Rec a, b;

  start(fabric, &a, EMA_FLOW_READ, 1, 0, 3750000000);
  run_until(sim, 6002);
  g_assert_cmpfloat(a.flow.rate, ==, 375e9);
  run_all(sim);
  g_assert_cmpint(a.done_at, ==, EMA_MS(10) + 6002);
  g_assert_cmpint(ema_fabric_solo_time(fabric, EMA_FLOW_READ, 1, 0, 3750000000), ==,
                  EMA_MS(10) + 6002);

  start(fabric, &a, EMA_FLOW_READ, 1, 0, 1985000000);
  start(fabric, &b, EMA_FLOW_READ, 1, 0, 1985000000);
  run_until(sim, a.flow.started + 6002);
  g_assert_cmpfloat(a.flow.rate, ==, 198.5e9);
  g_assert_cmpfloat(b.flow.rate, ==, 198.5e9);
  run_all(sim);
  g_assert_cmpint(a.done_at - a.flow.started, ==, EMA_MS(10) + 6002);
  g_assert_cmpint(b.done_at - b.flow.started, ==, EMA_MS(10) + 6002);

  /* a local read streams at the full HBM 4489e9: 4.489e9 B in 1 ms */
  start(fabric, &a, EMA_FLOW_READ, 0, 0, 4489000000);
  run_all(sim);
  g_assert_cmpint(a.done_at - a.flow.started, ==, EMA_MS(1) + 5000);
}

/* A local copy uses its GPU's HBM with weight 2 (read + write).
 * Plain server with HBM 3000e9, local_copy_bandwidth 4000e9 (cap 2000e9):
 * alone min(2000e9, 3000e9 / 2) = 1500e9, so 1.5e9 B takes 1 ms. With a
 * local read on the same GPU: weights 2 + 1 = 3 on HBM, 3000e9 / 3 =
 * 1000e9 each; 1e9 B each, both done at 1 ms.
 * h200x2: alone min(4301e9 / 2, 4489e9 / 2) = 2150.5e9 (the copy cap
 * binds); 2.1505e9 B in 1 ms, plus kernel_overhead 5000. */
static void test_local_copy_weight(void) {
  EmaServerSpec spec = server_plain(EMA_TOPOLOGY_DIRECT, 2);
  EmaServerSpec h200 = server_h200x2();
  g_autoptr(EmaSim) sim = ema_sim_new();
  g_autoptr(EmaFabric) fabric = NULL;
  g_autoptr(EmaFabric) fabric2 = NULL;
  Rec copy, read;

  spec.gpu.hbm_bandwidth = 3000e9;
  spec.gpu.local_copy_bandwidth = 4000e9;
  fabric = ema_fabric_new(sim, &spec);

  start(fabric, &copy, EMA_FLOW_COPY, 1, 1, 1500000000);
  run_until(sim, 0);
  g_assert_cmpfloat(copy.flow.rate, ==, 1500e9);
  run_all(sim);
  g_assert_cmpint(copy.done_at, ==, EMA_MS(1));

  start(fabric, &copy, EMA_FLOW_COPY, 1, 1, 1000000000);
  start(fabric, &read, EMA_FLOW_READ, 1, 1, 1000000000);
  run_until(sim, EMA_MS(1));
  g_assert_cmpfloat(copy.flow.rate, ==, 1000e9);
  g_assert_cmpfloat(read.flow.rate, ==, 1000e9);
  run_all(sim);
  g_assert_cmpint(copy.done_at, ==, EMA_MS(2));
  g_assert_cmpint(read.done_at, ==, EMA_MS(2));

  fabric2 = ema_fabric_new(sim, &h200);
  start(fabric2, &copy, EMA_FLOW_COPY, 0, 0, 2150500000);
  run_until(sim, ema_sim_now(sim) + 5000);
  g_assert_cmpfloat(copy.flow.rate, ==, 2150.5e9);
  run_all(sim);
  g_assert_cmpint(copy.done_at - copy.flow.started, ==, EMA_MS(1) + 5000);
}

/* Peer copy alone on h200x2 = fixed + ramp(n) + n / 397e9, each phase
 * rounded up to whole ns; fixed 6500, ramp 4200 x (1 - exp(-n / 2 MiB)):
 *   4 KiB:  ramp  8.195 -> 9,    4096 / 397 =     10.317 -> 11:    6520
 *   64 KiB: ramp  129.22 -> 130, 65536 / 397 =   165.08 -> 166:    6796
 *   1 MiB:  ramp 1652.57 -> 1653, 1048576 / 397 = 2641.25 -> 2642: 10795
 *   16 MiB: ramp 4198.59 -> 4199, 16777216 / 397 = 42259.99 -> 42260: 52959
 * (measured: 6.53, 6.56, 10.80, 53.01 us). Without the ramp (copy_ramp_time
 * 0) 16 MiB takes 6500 + 42260 = 48760. */
static void test_copy_ramp(void) {
  static const guint64 sizes[] = {4 * KiB, 64 * KiB, 1 * MiB, 16 * MiB};
  static const EmaTime expect[] = {6520, 6796, 10795, 52959};
  EmaServerSpec spec = server_h200x2();
  g_autoptr(EmaSim) sim = ema_sim_new();
  g_autoptr(EmaFabric) fabric = ema_fabric_new(sim, &spec);
  g_autoptr(EmaFabric) noramp = NULL;
  Rec rec;

  for (guint k = 0; k < G_N_ELEMENTS(sizes); k++) {
    start(fabric, &rec, EMA_FLOW_COPY, 0, 1, sizes[k]);
    run_all(sim);
    g_assert_cmpint(rec.done_at - rec.flow.started, ==, expect[k]);
    g_assert_cmpint(ema_fabric_solo_time(fabric, EMA_FLOW_COPY, 0, 1, sizes[k]), ==, expect[k]);
    g_assert_cmpint(ema_fabric_solo_time(fabric, EMA_FLOW_COPY, 1, 0, sizes[k]), ==, expect[k]);
  }

  spec.link.copy_ramp_time = 0;
  noramp = ema_fabric_new(sim, &spec);
  start(noramp, &rec, EMA_FLOW_COPY, 1, 0, 16 * MiB);
  run_all(sim);
  g_assert_cmpint(rec.done_at - rec.flow.started, ==, 48760);
  g_assert_cmpint(ema_fabric_solo_time(noramp, EMA_FLOW_COPY, 1, 0, 16 * MiB), ==, 48760);
}

/* ema_fabric_solo_time() equals the event loop for one flow alone, for every
 * valid kind and endpoint pair on DIRECT, SWITCH and PCIE servers. */
static void test_solo_matches_loop(void) {
  static const guint64 sizes[] = {0, 1, 4096, 1000007, 3 * MiB + 5, 3000000000};
  EmaServerSpec specs[3];
  g_autoptr(EmaSim) sim = ema_sim_new();
  guint checked = 0;

  specs[0] = server_h200x2();
  specs[1] = server_h200x2();
  specs[1].topology = EMA_TOPOLOGY_SWITCH;
  specs[1].gpus = 4;
  specs[2] = server_h200x2();
  specs[2].topology = EMA_TOPOLOGY_PCIE;
  specs[2].gpus = 3;
  specs[2].link.bandwidth = 40e9;
  specs[2].link.direct_read_bandwidth = 30e9;

  for (guint s = 0; s < G_N_ELEMENTS(specs); s++) {
    g_autoptr(EmaFabric) fabric = ema_fabric_new(sim, &specs[s]);
    for (gint kind = EMA_FLOW_COPY; kind <= EMA_FLOW_READ; kind++)
      for (gint src = -1; src < specs[s].gpus; src++)
        for (gint dst = -1; dst < specs[s].gpus; dst++) {
          if (!ema_fabric_check_flow(fabric, kind, src, dst, NULL))
            continue;
          for (guint k = 0; k < G_N_ELEMENTS(sizes); k++) {
            Rec rec;
            EmaTime solo = ema_fabric_solo_time(fabric, kind, src, dst, sizes[k]);
            start(fabric, &rec, kind, src, dst, sizes[k]);
            run_all(sim);
            g_assert_cmpuint(rec.done_count, ==, 1);
            g_assert_cmpint(rec.done_at - rec.flow.started, ==, solo);
            checked++;
          }
        }
  }
  /* DIRECT 2 GPUs: copies 4 (GPU pairs) + 2 + 2 (host), reads 4 = 12;
   * SWITCH 4 GPUs: 16 + 8 + 16 = 40; PCIE 3 GPUs: 9 + 6 + 9 = 24;
   * 76 pairs x 6 sizes */
  g_assert_cmpuint(checked, ==, 76 * 6);
}

/* h200x2 host copies use the host link, not the peer link. host->0 alone:
 * min(h2d 55.4e9, duplex 100e9) = 55.4e9; 554e6 B / 55.4e9 = 10 ms, plus
 * host.copy_fixed_cost 10000. host->0 and 0->host together share GPU 0's
 * host duplex 100e9: 50e9 each; a peer copy 1->0 at the same time keeps
 * its 397e9. */
static void test_host_copy(void) {
  EmaServerSpec spec = server_h200x2();
  g_autoptr(EmaSim) sim = ema_sim_new();
  g_autoptr(EmaFabric) fabric = ema_fabric_new(sim, &spec);
  Rec h2d, d2h, peer;

  start(fabric, &h2d, EMA_FLOW_COPY, EMA_ENDPOINT_HOST, 0, 554000000);
  run_until(sim, 10000);
  g_assert_cmpfloat(h2d.flow.rate, ==, 55.4e9);
  run_all(sim);
  g_assert_cmpint(h2d.done_at, ==, EMA_MS(10) + 10000);
  g_assert_cmpint(ema_fabric_solo_time(fabric, EMA_FLOW_COPY, EMA_ENDPOINT_HOST, 0, 554000000), ==,
                  EMA_MS(10) + 10000);

  /* 0->host alone: 553e6 B / 55.3e9 = 10 ms */
  g_assert_cmpint(ema_fabric_solo_time(fabric, EMA_FLOW_COPY, 0, EMA_ENDPOINT_HOST, 553000000), ==,
                  EMA_MS(10) + 10000);

  start(fabric, &h2d, EMA_FLOW_COPY, EMA_ENDPOINT_HOST, 0, 500000000);
  start(fabric, &d2h, EMA_FLOW_COPY, 0, EMA_ENDPOINT_HOST, 500000000);
  start(fabric, &peer, EMA_FLOW_COPY, 1, 0, 3970000000);
  run_until(sim, h2d.flow.started + 10700); /* after all setups (10000, 10700) */
  g_assert_cmpfloat(h2d.flow.rate, ==, 50e9);
  g_assert_cmpfloat(d2h.flow.rate, ==, 50e9);
  g_assert_cmpfloat(peer.flow.rate, ==, 397e9);
  run_all(sim);
  /* 500e6 B / 50e9 = 10 ms after their 10000 ns setup */
  g_assert_cmpint(h2d.done_at - h2d.flow.started, ==, EMA_MS(10) + 10000);
  g_assert_cmpint(d2h.done_at - d2h.flow.started, ==, EMA_MS(10) + 10000);
  g_assert_cmpint(peer.done_at - peer.flow.started, ==, EMA_MS(10) + 10700);
}

/* PCIE, 3 GPUs: h2d = d2h = 50e9, host duplex 80e9, peer cap
 * link.bandwidth 45e9. A peer copy 1->0 uses D2H(1), HDUP(1), H2D(0),
 * HDUP(0): alone min(45e9 cap, 50e9, 80e9) = 45e9; 0.9e9 B / 45e9 = 20 ms.
 * Copies 1->0 and 2->0 share H2D(0): 50e9 / 2 = 25e9 each (HDUP(0)
 * 80e9 / 2 = 40e9); 1e9 B / 25e9 = 40 ms. A host copy host->0 also shares
 * H2D(0) with a peer copy 1->0: 25e9 each. */
static void test_pcie(void) {
  EmaServerSpec spec = server_plain(EMA_TOPOLOGY_PCIE, 3);
  g_autoptr(EmaSim) sim = ema_sim_new();
  g_autoptr(EmaFabric) fabric = NULL;
  Rec a, b;

  spec.host.duplex_bandwidth = 80e9;
  spec.link.bandwidth = 45e9;
  fabric = ema_fabric_new(sim, &spec);

  g_assert_cmpint(ema_fabric_solo_time(fabric, EMA_FLOW_COPY, 1, 0, 900000000), ==, EMA_MS(20));
  start(fabric, &a, EMA_FLOW_COPY, 1, 0, 900000000);
  run_until(sim, 0);
  g_assert_cmpfloat(a.flow.rate, ==, 45e9);
  run_all(sim);
  g_assert_cmpint(a.done_at, ==, EMA_MS(20));

  start(fabric, &a, EMA_FLOW_COPY, 1, 0, 1000000000);
  start(fabric, &b, EMA_FLOW_COPY, 2, 0, 1000000000);
  run_until(sim, EMA_MS(20));
  g_assert_cmpfloat(a.flow.rate, ==, 25e9);
  g_assert_cmpfloat(b.flow.rate, ==, 25e9);
  run_all(sim);
  g_assert_cmpint(a.done_at, ==, EMA_MS(60));
  g_assert_cmpint(b.done_at, ==, EMA_MS(60));

  start(fabric, &a, EMA_FLOW_COPY, 1, 0, 1000000000);
  start(fabric, &b, EMA_FLOW_COPY, EMA_ENDPOINT_HOST, 0, 1000000000);
  run_until(sim, EMA_MS(60));
  g_assert_cmpfloat(a.flow.rate, ==, 25e9);
  g_assert_cmpfloat(b.flow.rate, ==, 25e9);
  run_all(sim);
  g_assert_cmpint(a.done_at, ==, EMA_MS(100));
  g_assert_cmpint(b.done_at, ==, EMA_MS(100));
}

static void expect_invalid(EmaFabric *fabric, EmaFlowKind kind, gint src, gint dst,
                           const char *needle) {
  g_autoptr(GError) error = NULL;
  g_assert_false(ema_fabric_check_flow(fabric, kind, src, dst, &error));
  g_assert_error(error, EMA_FABRIC_ERROR, EMA_FABRIC_ERROR_INVALID_FLOW);
  if (g_test_verbose())
    g_printerr("%s\n", error->message);
  g_assert_nonnull(strstr(error->message, needle));
}

static void test_invalid(void) {
  EmaServerSpec spec = server_h200x2();
  EmaServerSpec broken = server_plain(EMA_TOPOLOGY_DIRECT, 2);
  g_autoptr(EmaSim) sim = ema_sim_new();
  g_autoptr(EmaFabric) fabric = ema_fabric_new(sim, &spec);
  g_autoptr(EmaFabric) fabric2 = NULL;

  expect_invalid(fabric, EMA_FLOW_COPY, EMA_ENDPOINT_HOST, EMA_ENDPOINT_HOST, "host -> host");
  expect_invalid(fabric, EMA_FLOW_COPY, 0, 2, "GPU 2 does not exist");
  expect_invalid(fabric, EMA_FLOW_COPY, 7, 0, "GPU 7 does not exist");
  expect_invalid(fabric, EMA_FLOW_COPY, -2, 0, "GPU -2 does not exist");
  expect_invalid(fabric, EMA_FLOW_READ, EMA_ENDPOINT_HOST, 0, "GPU on both ends");
  expect_invalid(fabric, EMA_FLOW_READ, 0, EMA_ENDPOINT_HOST, "GPU on both ends");
  expect_invalid(fabric, EMA_FLOW_READ, 0, 5, "does not exist");
  expect_invalid(fabric, (EmaFlowKind) 7, 0, 1, "unknown flow kind");

  g_assert_true(ema_fabric_check_flow(fabric, EMA_FLOW_COPY, EMA_ENDPOINT_HOST, 1, NULL));
  g_assert_true(ema_fabric_check_flow(fabric, EMA_FLOW_COPY, 1, EMA_ENDPOINT_HOST, NULL));
  g_assert_true(ema_fabric_check_flow(fabric, EMA_FLOW_COPY, 1, 1, NULL));
  g_assert_true(ema_fabric_check_flow(fabric, EMA_FLOW_READ, 1, 1, NULL));
  g_assert_true(ema_fabric_check_flow(fabric, EMA_FLOW_READ, 0, 1, NULL));

  /* a model that gives a needed resource no bandwidth */
  broken.link.duplex_bandwidth = 0;
  fabric2 = ema_fabric_new(sim, &broken);
  expect_invalid(fabric2, EMA_FLOW_COPY, 0, 1, "link GPU 0 <-> GPU 1 (duplex)");
  g_assert_true(ema_fabric_check_flow(fabric2, EMA_FLOW_COPY, 0, 0, NULL));
}

/* Abort. Two 1 GB copies on link 0->1 (100e9) at 50e9 each; at 10 ms A
 * is aborted with 0.5e9 B moved; B has 1e9 - 50e9 x 0.01 = 0.5e9 B left and
 * now gets 100e9: 5 ms more, done at 15 ms. A's done never runs. A flow
 * aborted in its setup phase (C, fixed cost 1 ms) leaves no trace. */
typedef struct {
  EmaEvent event;
  EmaFabric *fabric;
  EmaFlow *victim;
  Rec *other;
} Aborter;

static void abort_now(EmaSim *sim, EmaEvent *event, gpointer user_data) {
  Aborter *ab = user_data;
  g_assert_cmpfloat(ab->other->flow.rate, ==, 50e9);
  ema_fabric_abort(ab->fabric, ab->victim);
  g_assert_cmpint(ab->victim->active_index, ==, -1);
  g_assert_cmpfloat(ab->victim->rate, ==, 0);
  g_assert_cmpfloat(ab->other->flow.rate, ==, 100e9);
}

static void test_abort(void) {
  EmaServerSpec spec = server_plain(EMA_TOPOLOGY_DIRECT, 2);
  g_autoptr(EmaSim) sim = ema_sim_new();
  g_autoptr(EmaFabric) fabric = ema_fabric_new(sim, &spec);
  g_autoptr(EmaFabric) slow = NULL;
  Rec a, b, c;
  Aborter ab = {.fabric = fabric, .victim = &a.flow, .other = &b};

  start(fabric, &a, EMA_FLOW_COPY, 0, 1, 1000000000);
  start(fabric, &b, EMA_FLOW_COPY, 0, 1, 1000000000);
  ema_event_init(&ab.event, abort_now, &ab);
  ema_sim_schedule(sim, &ab.event, EMA_MS(10), 0);
  run_all(sim);
  g_assert_cmpuint(a.done_count, ==, 0);
  g_assert_cmpuint(b.done_count, ==, 1);
  g_assert_cmpint(b.done_at, ==, EMA_MS(15));
  g_assert_cmpuint(ema_fabric_active_flows(fabric), ==, 0);
  ema_fabric_abort(fabric, &a.flow); /* not active: no-op */

  spec.link.copy_fixed_cost = EMA_MS(1);
  slow = ema_fabric_new(sim, &spec);
  start(slow, &c, EMA_FLOW_COPY, 0, 1, 1000000000);
  g_assert_cmpuint(ema_fabric_active_flows(slow), ==, 1);
  ema_fabric_abort(slow, &c.flow);
  g_assert_cmpuint(ema_fabric_active_flows(slow), ==, 0);
  g_assert_cmpuint(ema_sim_pending(sim), ==, 0);
  run_all(sim);
  g_assert_cmpuint(c.done_count, ==, 0);
}

/* A done callback may start the next flow; a 0-byte flow completes at the
 * end of its setup. On h200x2: a 0-byte peer copy takes copy_fixed_cost
 * 6500 (ramp(0) = 0); then a 16 MiB copy 52959 (see test_copy_ramp); then
 * a 0-byte local read takes kernel_overhead 5000. Total 64459. */
typedef struct {
  EmaFlow flow;
  guint step;
  EmaTime done_at;
} Chain;

static void chain_done(EmaFabric *fabric, EmaFlow *flow, gpointer user_data) {
  Chain *ch = user_data;
  ch->step++;
  ch->done_at = flow->finished;
  if (ch->step == 1)
    ema_fabric_start(fabric, &ch->flow, EMA_FLOW_COPY, 0, 1, 16 * MiB, chain_done, ch);
  else if (ch->step == 2)
    ema_fabric_start(fabric, &ch->flow, EMA_FLOW_READ, 1, 1, 0, chain_done, ch);
}

static void test_chain(void) {
  EmaServerSpec spec = server_h200x2();
  g_autoptr(EmaSim) sim = ema_sim_new();
  g_autoptr(EmaFabric) fabric = ema_fabric_new(sim, &spec);
  Chain ch = {0};

  ema_fabric_start(fabric, &ch.flow, EMA_FLOW_COPY, 1, 0, 0, chain_done, &ch);
  run_all(sim);
  g_assert_cmpuint(ch.step, ==, 3);
  g_assert_cmpint(ch.done_at, ==, 6500 + 52959 + 5000);
}

/* Random flows on a SWITCH server: every flow finishes exactly once, never
 * faster than alone, and the fabric ends empty. */
#define N_RANDOM 300

static void test_random(void) {
  EmaServerSpec spec = server_h200x2();
  g_autoptr(EmaSim) sim = ema_sim_new();
  g_autoptr(EmaFabric) fabric = NULL;
  g_autoptr(GRand) rand = g_rand_new_with_seed(42);
  Rec *recs = g_new0(Rec, N_RANDOM);
  EmaTime *solo = g_new0(EmaTime, N_RANDOM);

  spec.topology = EMA_TOPOLOGY_SWITCH;
  spec.gpus = 8;
  fabric = ema_fabric_new(sim, &spec);
  for (guint k = 0; k < N_RANDOM; k++) {
    EmaFlowKind kind;
    gint src, dst;
    guint64 bytes;
    do {
      kind = g_rand_boolean(rand) ? EMA_FLOW_COPY : EMA_FLOW_READ;
      src = g_rand_int_range(rand, -1, 8);
      dst = g_rand_int_range(rand, -1, 8);
    } while (!ema_fabric_check_flow(fabric, kind, src, dst, NULL));
    bytes = g_rand_int_range(rand, 0, 64) * MiB + g_rand_int_range(rand, 0, 4096);
    solo[k] = ema_fabric_solo_time(fabric, kind, src, dst, bytes);
    start(fabric, &recs[k], kind, src, dst, bytes);
    run_until(sim, ema_sim_now(sim) + g_rand_int_range(rand, 0, 20000));
  }
  run_all(sim);
  for (guint k = 0; k < N_RANDOM; k++) {
    g_assert_cmpuint(recs[k].done_count, ==, 1);
    g_assert_cmpint(recs[k].done_at - recs[k].flow.started, >=, solo[k]);
  }
  g_assert_cmpuint(ema_fabric_active_flows(fabric), ==, 0);
  g_free(recs);
  g_free(solo);
}

int main(int argc, char **argv) {
  g_test_init(&argc, &argv, NULL);
  g_test_add_func("/fabric/direct/half-share", test_direct_half);
  g_test_add_func("/fabric/switch/ingress-third", test_switch_third);
  g_test_add_func("/fabric/switch/egress-third", test_switch_egress_third);
  g_test_add_func("/fabric/rerate-on-finish", test_rerate_on_finish);
  g_test_add_func("/fabric/direct/duplex", test_duplex);
  g_test_add_func("/fabric/read/cap", test_read_cap);
  g_test_add_func("/fabric/local-copy/weight", test_local_copy_weight);
  g_test_add_func("/fabric/copy/ramp", test_copy_ramp);
  g_test_add_func("/fabric/solo-time/matches-loop", test_solo_matches_loop);
  g_test_add_func("/fabric/host/copy", test_host_copy);
  g_test_add_func("/fabric/pcie/host-links", test_pcie);
  g_test_add_func("/fabric/invalid", test_invalid);
  g_test_add_func("/fabric/abort", test_abort);
  g_test_add_func("/fabric/chain", test_chain);
  g_test_add_func("/fabric/random", test_random);
  return g_test_run();
}
