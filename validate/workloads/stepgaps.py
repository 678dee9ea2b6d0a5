"""validate/workloads/stepgaps.py: what a whole step costs beyond the sum of its kernels.

The step model sums kernel durations (the profiles' tables time kernels, launch gaps excluded).
A serving engine's step is a CUDA-graph replay (decode) or an eager launch sequence (prefill and
mixed steps outside a graph), so its wall time on the GPU also holds the gaps between kernels.
For each model and decode batch of steps.py (random weights, one GPU), this measures:

- `kernels_us`: the summed durations of one step's kernels and `kernels` their count (the
  PyTorch profiler's CUPTI kernel records of one replay);
- `graph_us`: the wall time of one CUDA-graph replay of the step (CUDA events around 20
  back-to-back replays, divided by 20; the median of 5 such runs);
- `eager_us`: the same for the step launched eagerly (every kernel launched from Python);

then `gap_graph_us` = (graph_us - kernels_us) / kernels and `gap_eager_us` likewise: the cost of
one kernel beyond its duration in each mode. A last row per mode times a chain of N empty
kernels (N = 1000) the same way: a kernel's floor in a graph and eagerly.

Usage: python3 stepgaps.py -o OUT.csv [--models a,b] [--batches 1,16,64] [--context 1024]"""
import argparse
import statistics
import sys

import torch

import common
import steps


def wall_us(fn, inner=20, outer=5):
    """microseconds of one FN: CUDA events around INNER back-to-back runs, median of OUTER"""
    fn()
    torch.cuda.synchronize()
    times = []
    for _ in range(outer):
        a, b = torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)
        a.record()
        for _ in range(inner):
            fn()
        b.record()
        b.synchronize()
        times.append(a.elapsed_time(b) * 1e3 / inner)
    return statistics.median(times)


def kernel_sum(fn):
    """(summed kernel microseconds, kernel count) of one FN, from the profiler's CUPTI records"""
    fn()
    torch.cuda.synchronize()
    with torch.profiler.profile(activities=[torch.profiler.ProfilerActivity.CUDA]) as prof:
        fn()
        torch.cuda.synchronize()
    total, count = 0.0, 0
    for e in prof.events():
        if e.device_type == torch.autograd.DeviceType.CUDA and e.device_time > 0:
            total += e.device_time
            count += 1
    return total, count


def row(out, name, batch, context, fn):
    g = common.graph_of(fn)
    if g is None:
        raise SystemExit(f"stepgaps.py: {name} batch={batch}: the CUDA graph capture failed")
    k_us, k_n = kernel_sum(g.replay)
    g_us = wall_us(g.replay)
    e_us = wall_us(fn)
    out.write(f"{name},{batch},{context},{k_n},{k_us:.3f},{g_us:.3f},{e_us:.3f},"
              f"{(g_us - k_us) / k_n:.4f},{(e_us - k_us) / k_n:.4f}\n")
    out.flush()
    print(f"stepgaps.py: {name} batch={batch}: {k_n} kernels, sum {k_us:.1f} us, "
          f"graph {g_us:.1f} us, eager {e_us:.1f} us", flush=True)
    del g


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("-o", "--out", required=True)
    ap.add_argument("--models", default="llama-3.1-8b,llama-2-13b,qwen2.5-32b")
    ap.add_argument("--batches", default="1,16,64")
    ap.add_argument("--context", type=int, default=1024)
    a = ap.parse_args()
    with open(a.out, "w") as out:
        out.write("model,batch,context,kernels,kernels_us,graph_us,eager_us,gap_graph_us,"
                  "gap_eager_us\n")
        with torch.inference_mode():
            empty = torch.empty(1, device="cuda")
            row(out, "empty-kernels", 1000, 0, lambda: [empty.zero_() for _ in range(1000)])
            for name in [n for n in a.models.split(",") if n]:
                m = common.load_model(name)
                torch.manual_seed(0)
                model = steps.Model(m)
                for b in [int(v) for v in a.batches.split(",")]:
                    parts = [steps.Part(m, model.dt, b, a.context, 1)]
                    positions = parts[0].positions()
                    tokens = torch.randint(0, m["vocab"], (b,), device="cuda")
                    row(out, name, b, a.context, lambda: model.step(tokens, positions, parts))
                    del parts
                    torch.cuda.empty_cache()
                del model
                torch.cuda.empty_cache()
    return 0


if __name__ == "__main__":
    sys.exit(main())
