#!/usr/bin/env python3
"""offload-cost.py: what computing a borrower's attention costs a lender, on one GPU.

Attention offload (the simulator's third way to use remote KV, beside direct
loads and prefetch) has a lender run decode attention over the part of a
borrower's KV cache that it holds, beside its own decode steps. This measures
the lender's side of that on one real GPU:

  lender   a whole decode step of a dense model with engine-grade kernels
           (cuBLAS GEMMs, SDPA decode attention over a KV cache, RMSNorm,
           SiLU), random bf16 weights of the model's exact shapes, captured
           once as a CUDA graph and replayed back to back on stream A;
  offload  the borrower's partial attention: SDPA decode attention for
           Bb requests over `ctx` tokens of the borrower's KV each (one
           layer's worth per launch, as a borrower asks once per layer),
           captured as a graph and replayed on stream B, each replay
           followed by a sleep kernel so that it reads KV at a set share
           `rate` of the lender's HBM time.

Per rate, `--repeats` times in turn, it times a window of the lender's steps
alone and then one beside the offload (CUDA events around each replay; both
windows queued alike behind a gate), so that a drift of the GPU's clocks
falls on both; it records the offload launches that ran inside the
lender's window, and so the offloaded bytes actually read per second. The
slowdown of a repeat is the window's mean step against the alone window's
mean step; a rate's `slowdown` is the median of its repeats' (with their
range, `slowdown_lo`/`slowdown_hi`; at rate 0 two alone windows: the
noise floor). The mean, not the median step: at a low rate a launch comes
only every few lender steps, and the median step is one that none slowed.
`slowdown_median_step` is the median step's slowdown, the estimator of the
2026-12-01 results (one alone median per lender, measured first, against
each rate's median step), kept beside it for comparison. `--offload-requests`
sizes each launch (requests of `ctx` tokens): small launches, several per
lender step at every rate, spread the offload's reads as a borrower's
per-layer partials would. It fits the lender's cost as

  lender step = T0 * (1 + c * r),   r = offloaded KV bytes per second / B_hbm

where T0 is the step alone and B_hbm the HBM traffic rate a streaming kernel
reaches (measured here too: a large device-to-device copy, bytes read plus
bytes written per second), so r is the share of the lender's HBM time that
the offloaded reads take. The fit of c through
the origin over the rates, and c per rate, are printed and written.

What this leaves out: the queries and partial outputs crossing NVLink (one
GPU; the round trip is measured on two GPUs), and the merge on the
borrower. SDPA's public API does not return the log-sum-exp that a split-KV
merge needs; the cuDNN/flash kernels compute it internally, so the time is
the same to within the LSE write (Bb x heads x 4 bytes per launch).

With --latency-rates it also measures the borrower's side on the lender: how
long each offloaded partial takes while the lender's steps run beside it
(partial-latency.csv), which the cost model otherwise takes as its time alone.

Usage (on the GPU machine; writes CSV and JSON under --out):
  python3 validate/offload-cost.py --out DIR [--rates 0,0.01,0.02,0.05,0.1,0.2]
          [--repeats 5] [--offload-requests 16] [--steps N] [--latency-rates 0.05,0.1,0.2]
"""
import argparse
import json
import os
import platform
import statistics
import sys
import time

import torch
import torch.nn.functional as F

# Model shapes (hwmodels/llms/*.yaml): layers, hidden, heads, kv_heads, head_dim, ffn
SHAPES = {
    "llama-3.1-8b": (32, 4096, 32, 8, 128, 14336),
    "llama-2-13b": (40, 5120, 40, 40, 128, 13824),
    "opt-13b": (40, 5120, 40, 40, 128, 20480),
}

LENDER_CASES = [  # (model, batch, context)
    ("llama-3.1-8b", 8, 1000),
    ("llama-3.1-8b", 32, 2000),
    ("llama-3.1-8b", 64, 4000),
    ("llama-2-13b", 16, 2000),
]
# the borrower's offloaded attention: model heads, requests, tokens per request
OFFLOAD = ("opt-13b", 16, 2000)


def sdpa(q, k, v, gqa):
    return F.scaled_dot_product_attention(q, k, v, enable_gqa=gqa)


class DecodeStep:
    """One decode step of a dense model, all layers, over a KV cache."""

    def __init__(self, model, batch, context, dev):
        layers, hidden, heads, kv_heads, hd, ffn = SHAPES[model]
        self.model, self.batch, self.context = model, batch, context
        g = torch.Generator(device=dev).manual_seed(1)

        def rnd(*shape, scale=0.02):
            return (torch.randn(*shape, device=dev, generator=g, dtype=torch.bfloat16) * scale)

        self.layers = []
        for _ in range(layers):
            self.layers.append(dict(
                wqkv=rnd(hidden, (heads + 2 * kv_heads) * hd),
                wo=rnd(heads * hd, hidden),
                wgu=rnd(hidden, 2 * ffn),
                wd=rnd(ffn, hidden),
                k=rnd(batch, kv_heads, context, hd, scale=1.0),
                v=rnd(batch, kv_heads, context, hd, scale=1.0),
                n1=torch.ones(hidden, device=dev, dtype=torch.bfloat16),
                n2=torch.ones(hidden, device=dev, dtype=torch.bfloat16),
            ))
        self.x = rnd(batch, hidden, scale=1.0)
        self.shape = (heads, kv_heads, hd, ffn, hidden)
        bytes_w = sum(t.numel() * 2 for l in self.layers for n, t in l.items()
                      if n.startswith("w"))
        bytes_kv = sum(l["k"].numel() * 4 for l in self.layers)
        self.bytes = bytes_w + bytes_kv

    def __call__(self):
        heads, kv_heads, hd, ffn, hidden = self.shape
        x = self.x
        b = self.batch
        for l in self.layers:
            h = F.rms_norm(x, (hidden,), l["n1"])
            qkv = h @ l["wqkv"]
            q = qkv[:, : heads * hd].view(b, heads, 1, hd)
            a = sdpa(q, l["k"], l["v"], heads != kv_heads)
            x = x + a.reshape(b, heads * hd) @ l["wo"]
            h = F.rms_norm(x, (hidden,), l["n2"])
            gu = h @ l["wgu"]
            x = x + (F.silu(gu[:, :ffn]) * gu[:, ffn:]) @ l["wd"]
        return x


class OffloadAttention:
    """One layer of a borrower's partial decode attention over KV this GPU holds."""

    def __init__(self, model, requests, context, dev, copies=8):
        _, _, heads, kv_heads, hd, _ = SHAPES[model]
        g = torch.Generator(device=dev).manual_seed(2)
        # several KV sets, so successive launches do not hit in L2
        self.sets = []
        for _ in range(copies):
            self.sets.append((
                torch.randn(requests, heads, 1, hd, device=dev, generator=g, dtype=torch.bfloat16),
                torch.randn(requests, kv_heads, context, hd, device=dev, generator=g,
                            dtype=torch.bfloat16),
                torch.randn(requests, kv_heads, context, hd, device=dev, generator=g,
                            dtype=torch.bfloat16),
            ))
        self.gqa = heads != kv_heads
        self.bytes = 2 * requests * kv_heads * context * hd * 2  # K and V read once
        self.i = 0

    def __call__(self):
        q, k, v = self.sets[self.i % len(self.sets)]
        self.i += 1
        return sdpa(q, k, v, self.gqa)


def capture(fn, stream):
    """A CUDA graph of fn (warmed up on its stream first)."""
    with torch.cuda.stream(stream):
        for _ in range(3):
            fn()
    torch.cuda.synchronize()
    graph = torch.cuda.CUDAGraph()
    with torch.cuda.graph(graph, stream=stream):
        fn()
    torch.cuda.synchronize()
    return graph


def time_graph(graph, stream, n):
    """Median ms of n replays of graph on stream, alone."""
    ev = [torch.cuda.Event(enable_timing=True) for _ in range(n + 1)]
    with torch.cuda.stream(stream):
        ev[0].record()
        for i in range(n):
            graph.replay()
            ev[i + 1].record()
    torch.cuda.synchronize()
    return statistics.median(ev[i].elapsed_time(ev[i + 1]) for i in range(n))


def sleep_cycles_per_ms(stream):
    """Clock cycles per ms of torch.cuda._sleep, measured."""
    n = 2_000_000
    with torch.cuda.stream(stream):
        torch.cuda._sleep(n)
        torch.cuda.synchronize()
        a, b = torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)
        a.record()
        torch.cuda._sleep(n)
        b.record()
    torch.cuda.synchronize()
    return n / a.elapsed_time(b)


def copy_bandwidth(dev):
    """HBM traffic per second of a large device-to-device copy (bytes read plus
    bytes written)."""
    a = torch.empty(4 << 30, dtype=torch.uint8, device=dev)
    b = torch.empty_like(a)
    for _ in range(3):
        b.copy_(a)
    torch.cuda.synchronize()
    t = []
    for _ in range(10):
        s, e = torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)
        s.record()
        b.copy_(a)
        e.record()
        torch.cuda.synchronize()
        t.append(s.elapsed_time(e))
    ms = statistics.median(t)
    del a, b
    torch.cuda.empty_cache()
    return 2 * (4 << 30) / (ms / 1e3)


PERIODS_PER_GRAPH = 16


def open_gate(sa, sb, gate_ms, cyc_per_ms):
    """Make streams A and B wait for a gate that opens GATE_MS from now, so that the host can
    queue all of their work before either runs ahead of the other."""
    sg = torch.cuda.Stream()
    gate = torch.cuda.Event()
    torch.cuda.synchronize()
    with torch.cuda.stream(sg):
        torch.cuda._sleep(int(gate_ms * cyc_per_ms))
        gate.record()
    sb.wait_event(gate)
    sa.wait_event(gate)


def queue_lender_steps(sa, g_step, steps, cyc_per_ms):
    """STEPS replays of the lender's step graph on stream A, once B is running (0.3 ms after
    the gate); the events around them."""
    ev_a = [torch.cuda.Event(enable_timing=True) for _ in range(steps + 1)]
    with torch.cuda.stream(sa):
        torch.cuda._sleep(int(0.3 * cyc_per_ms))
        ev_a[0].record()
        for i in range(steps):
            g_step.replay()
            ev_a[i + 1].record()
    return ev_a


def step_times(ev_a):
    """The ms of each lender step between the events queue_lender_steps recorded."""
    return [ev_a[i].elapsed_time(ev_a[i + 1]) for i in range(len(ev_a) - 1)]


def alone_run(g_step, sa, sb, steps, cyc_per_ms):
    """The lender's step times (ms) alone, queued as overlapped_run queues them."""
    open_gate(sa, sb, 20 + 0.3 * steps, cyc_per_ms)
    ev_a = queue_lender_steps(sa, g_step, steps, cyc_per_ms)
    torch.cuda.synchronize()
    return step_times(ev_a)


def overlapped_run(off, g_step, sa, sb, rate, t0, t_off, b_hbm, cyc_per_ms, steps):
    """The lender's step times (ms) while stream B reads offloaded KV at `rate`, the share
    of HBM time achieved and the launches;
    retried (up to 4 times) until B's work covers the whole window of the
    lender's steps. B's work is a graph of PERIODS_PER_GRAPH periods (one
    offload launch and a sleep each), so that few launches are queued and
    the host never waits on a full launch queue while stream A is unqueued."""
    period_ms = (off.bytes / b_hbm * 1e3) / rate
    sleep_ms = max(period_ms - t_off, 0.0)

    def unit():
        for _ in range(PERIODS_PER_GRAPH):
            off()
            if sleep_ms > 0:
                torch.cuda._sleep(int(sleep_ms * cyc_per_ms))

    g_unit = capture(unit, sb)
    n_units = int(t0 * steps * 1.5 / (PERIODS_PER_GRAPH * max(period_ms, t_off))) + 2
    n_off = n_units * PERIODS_PER_GRAPH
    for attempt in range(4):
        eb0, eb1 = torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)
        open_gate(sa, sb, 20 + 0.5 * n_units + 0.3 * steps, cyc_per_ms)
        with torch.cuda.stream(sb):
            eb0.record()
            for _ in range(n_units):
                g_unit.replay()
            eb1.record()
        ev_a = queue_lender_steps(sa, g_step, steps, cyc_per_ms)
        torch.cuda.synchronize()
        lead = eb0.elapsed_time(ev_a[0])  # > 0: B started first
        tail = ev_a[steps].elapsed_time(eb1)  # > 0: B ended last
        t_b = eb0.elapsed_time(eb1)
        if lead >= 0 and tail >= 0:
            return step_times(ev_a), n_off * off.bytes / (t_b / 1e3) / b_hbm, n_off
        print(f"rate {rate}: offload did not cover the lender's window (lead {lead:.2f} ms, "
              f"tail {tail:.2f} ms); again", file=sys.stderr)
    raise SystemExit(f"rate {rate}: the two streams never overlapped")


def partial_latency(off, g_step, sa, sb, rate, t0, t_off, b_hbm, cyc_per_ms, steps):
    """The borrower's side: how long each offloaded partial takes (from its start on stream B
    to its end) while the lender's steps run on stream A, at `rate`. Eager launches between
    CUDA events (a graph's kernels cannot be timed one by one), one every period as in
    overlapped_run; only the partials that start and end inside the lender's window count.
    Returns (median ms, 90th percentile ms, partials counted, the lender's median step ms)."""
    period_ms = (off.bytes / b_hbm * 1e3) / rate
    sleep_ms = max(period_ms - t_off, 0.0)
    n_off = int(t0 * steps / period_ms) + 8
    starts = [torch.cuda.Event(enable_timing=True) for _ in range(n_off)]
    ends = [torch.cuda.Event(enable_timing=True) for _ in range(n_off)]
    open_gate(sa, sb, 50 + 0.05 * n_off, cyc_per_ms)
    with torch.cuda.stream(sb):
        for i in range(n_off):
            starts[i].record()
            off()
            ends[i].record()
            if sleep_ms > 0:
                torch.cuda._sleep(int(sleep_ms * cyc_per_ms))
    ev_a = queue_lender_steps(sa, g_step, steps, cyc_per_ms)
    torch.cuda.synchronize()
    inside = [starts[i].elapsed_time(ends[i]) for i in range(n_off)
              if ev_a[0].elapsed_time(starts[i]) >= 0 and ends[i].elapsed_time(ev_a[steps]) >= 0]
    if len(inside) < 4:
        raise SystemExit(f"rate {rate}: only {len(inside)} partials inside the lender's window")
    inside.sort()
    lender = statistics.median(ev_a[i].elapsed_time(ev_a[i + 1]) for i in range(steps))
    return (statistics.median(inside), inside[int(0.9 * (len(inside) - 1))], len(inside),
            lender)


def run_latency(case, off, rates, b_hbm, cyc_per_ms, steps):
    """partial_latency's rows for one lender step at each rate."""
    model, batch, context = case
    sa, sb, step, g_step, t0, t_off = setup_case(case, off, steps)
    rows = []
    for rate in rates:
        median, p90, n, lender = partial_latency(off, g_step, sa, sb, rate, t0, t_off, b_hbm,
                                                 cyc_per_ms, steps)
        rows.append(dict(model=model, batch=batch, context=context, target_rate=rate,
                         partial_alone_ms=t_off, partial_ms=median, partial_p90_ms=p90,
                         partials=n, lender_ms=lender, alone_ms=t0))
        print(f"{model} b={batch} ctx={context} rate {rate:5.3f}: partial {median:.3f} ms "
              f"(p90 {p90:.3f}, {n} partials) vs {t_off:.3f} alone, x{median / t_off:.2f}; "
              f"lender step {lender:.3f} vs {t0:.3f} ms", flush=True)
    del step, g_step
    torch.cuda.empty_cache()
    return rows


def write_csv(path, rows):
    with open(path, "w") as f:
        cols = list(rows[0])
        f.write(",".join(cols) + "\n")
        for r in rows:
            f.write(",".join(f"{r[c]:.6g}" if isinstance(r[c], float) else str(r[c])
                             for c in cols) + "\n")


def setup_case(case, off, steps):
    """A lender step of CASE as a graph on stream A and the partial's graph on stream B: the
    streams, the step, its graph, the step's median ms alone and the partial's."""
    model, batch, context = case
    sa, sb = torch.cuda.Stream(), torch.cuda.Stream()
    step = DecodeStep(model, batch, context, torch.device("cuda"))
    g_step = capture(step, sa)
    t0 = time_graph(g_step, sa, steps)
    t_off = time_graph(capture(off, sb), sb, 50)
    return sa, sb, step, g_step, t0, t_off


def run_case(case, off, rates, b_hbm, cyc_per_ms, steps, repeats):
    """Per rate, REPEATS alone windows each followed by an overlapped one (rate 0: a second
    alone window); one row per rate, the medians over the repeats."""
    model, batch, context = case
    sa, sb, step, g_step, t0, t_off = setup_case(case, off, steps)
    rows = []
    for rate in rates:
        runs = []  # (alone times, times, achieved rate, launches) per repeat
        for _ in range(repeats):
            alone = alone_run(g_step, sa, sb, steps, cyc_per_ms)
            if rate <= 0:
                runs.append((alone, alone_run(g_step, sa, sb, steps, cyc_per_ms), 0.0, 0))
            else:
                runs.append((alone,) + overlapped_run(off, g_step, sa, sb, rate, t0, t_off, b_hbm,
                                                      cyc_per_ms, steps))
        slows = sorted(statistics.mean(t) / statistics.mean(a) - 1 for a, t, _, _ in runs)
        slow = statistics.median(slows)
        got_rate = statistics.mean(r for _, _, r, _ in runs)
        c = slow / got_rate if got_rate > 0 else float("nan")
        rows.append(dict(model=model, batch=batch, context=context, target_rate=rate,
                         achieved_rate=got_rate,
                         lender_ms=statistics.median(statistics.mean(t) for _, t, _, _ in runs),
                         alone_ms=statistics.median(statistics.mean(a) for a, _, _, _ in runs),
                         slowdown=slow, coefficient=c, offload_ms=t_off,
                         offload_bytes=off.bytes, step_bytes=step.bytes,
                         offload_launches=statistics.mean(n for _, _, _, n in runs),
                         repeats=repeats, slowdown_lo=slows[0], slowdown_hi=slows[-1],
                         slowdown_median_step=statistics.median(
                             statistics.median(t) / statistics.median(a) - 1
                             for a, t, _, _ in runs)))
        print(f"{model} b={batch} ctx={context} rate {rate:6.4f} (got {got_rate:6.4f}): "
              f"step {rows[-1]['lender_ms']:8.3f} ms vs {rows[-1]['alone_ms']:8.3f} alone, "
              f"+{100 * slow:6.2f}% ({100 * slows[0]:+.2f} to {100 * slows[-1]:+.2f} over "
              f"{repeats}), c={c:6.3f}", flush=True)
    del step, g_step
    torch.cuda.empty_cache()
    return rows


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--out", required=True)
    ap.add_argument("--rates", default="0,0.01,0.02,0.05,0.1,0.2,0.3")
    ap.add_argument("--steps", type=int, default=60)
    ap.add_argument("--repeats", type=int, default=5,
                    help="alone and overlapped windows timed in turn per rate (default 5)")
    ap.add_argument("--offload-requests", type=int, default=OFFLOAD[1],
                    help=f"requests of {OFFLOAD[2]} tokens per offload launch "
                         f"(default {OFFLOAD[1]})")
    ap.add_argument("--latency-rates", default="",
                    help="also time each offloaded partial beside the lender's steps at these "
                         "rates (partial-latency.csv; default: not run)")
    args = ap.parse_args()
    if args.repeats < 1 or args.offload_requests < 1 or args.steps < 2:
        ap.error("--repeats and --offload-requests must be at least 1, --steps at least 2")
    rates = [float(r) for r in args.rates.split(",") if r]
    latency_rates = [float(r) for r in args.latency_rates.split(",") if r]
    os.makedirs(args.out, exist_ok=True)
    dev = torch.device("cuda")
    torch.backends.cuda.matmul.allow_tf32 = False
    b_hbm = copy_bandwidth(dev)
    cyc = sleep_cycles_per_ms(torch.cuda.Stream())
    offload = (OFFLOAD[0], args.offload_requests, OFFLOAD[2])
    off = OffloadAttention(*offload, dev)
    latency = []
    for case in LENDER_CASES:
        if latency_rates:
            latency += run_latency(case, off, latency_rates, b_hbm, cyc, args.steps)
    if latency:
        write_csv(os.path.join(args.out, "partial-latency.csv"), latency)
    if not rates:
        return
    rows = []
    for case in LENDER_CASES:
        rows += run_case(case, off, rates, b_hbm, cyc, args.steps, args.repeats)
    pts = [(r["achieved_rate"], r["slowdown"]) for r in rows if r["achieved_rate"] > 0]
    c_fit = sum(x * y for x, y in pts) / sum(x * x for x, _ in pts)
    meta = dict(
        command="python3 validate/offload-cost.py " + " ".join(sys.argv[1:]),
        date=time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime()),
        device=torch.cuda.get_device_name(0), torch=torch.__version__,
        cuda=torch.version.cuda, cudnn=torch.backends.cudnn.version(),
        driver=os.popen("nvidia-smi --query-gpu=driver_version --format=csv,noheader")
        .read().strip(), python=platform.python_version(),
        hbm_copy_traffic_Bps=b_hbm, offload=dict(model=offload[0], requests=offload[1],
                                              context=offload[2]),
        coefficient_fit=c_fit)
    write_csv(os.path.join(args.out, "offload-cost.csv"), rows)
    with open(os.path.join(args.out, "offload-cost.json"), "w") as f:
        # NaN (the coefficient at rate 0) is not JSON: null
        json.dump(dict(meta=meta, rows=[{k: None if isinstance(v, float) and v != v else v
                                         for k, v in r.items()} for r in rows]),
                  f, indent=1, allow_nan=False)
    print(f"HBM copy traffic {b_hbm / 1e12:.3f} TB/s; offload launch {rows[0]['offload_ms']:.3f} ms "
          f"for {off.bytes / 1e6:.1f} MB ({off.bytes / rows[0]['offload_ms'] / 1e9:.2f} TB/s); "
          f"fitted c = {c_fit:.3f}")


if __name__ == "__main__":
    main()
