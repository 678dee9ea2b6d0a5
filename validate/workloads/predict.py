"""validate/workloads/predict.py: the check that a profile reproduces captured steps. No GPU.

Reads a profile directory (hwmodels/profiles/README.md tables: gemm, attn_decode, attn_prefill, moe, elementwise)
and a steps.csv of captured steps, predicts each step as the sum of the interpolated operator
times of the ops validate/workloads/steps.py runs (per layer: norm, QKV GEMM, RoPE, attention,
O GEMM, residual add, norm, MLP or MoE, residual add; then embedding, final norm and LM head),
(a mixed step: its decodes' and its chunk's attention, every other operator over all their
tokens) and writes MODEL,PHASE,...,measured_us,predicted_us,error_pct per step with the median and worst
absolute error per phase.

Interpolation: linear in m between the two measured m of a GEMM shape (k, n, dtype) around it;
bilinear in (batch, context) for decode attention and in (chunk, prior_context) for prefill
attention; linear in tokens for elementwise ops and MoE. A point outside a table's range is
extrapolated from its last two points (said in the output). What the tables lack is not
predicted and is stated as such: the KV-cache writes (two copies per layer), Mixtral's routing
(softmax, top-k, gather/scatter: the experts' GEMMs are the moe table's), OPT's learned-position
add. Mixtral's experts hit per step: top-2 of 8 uniform, the expected number of distinct experts
E = 8 (1 - (6/8)^T) for T tokens, each with 2T/E tokens; E is interpolated between the measured
expert counts (1, 2, 4, 8)."""
import argparse
import bisect
import csv
import os
import statistics
import sys

import common_shapes


def read(path):
    with open(path) as f:
        return list(csv.DictReader(f))


def lerp(xs, ys, x):
    """piecewise-linear through (xs, ys) sorted by x; extrapolated from the end segments"""
    if len(xs) == 1:
        return ys[0]
    i = min(max(bisect.bisect_left(xs, x), 1), len(xs) - 1)
    x0, x1, y0, y1 = xs[i - 1], xs[i], ys[i - 1], ys[i]
    return y0 + (y1 - y0) * (x - x0) / (x1 - x0)


class Profile:
    def __init__(self, d):
        self.gemm = {}
        for r in read(os.path.join(d, "gemm.csv")):
            self.gemm.setdefault((int(r["k"]), int(r["n"]), r["dtype"]), []).append(
                (int(r["m"]), float(r["time_us"])))
        self.dec = {}
        for r in read(os.path.join(d, "attn_decode.csv")):
            key = (int(r["q_heads"]), int(r["kv_heads"]), int(r["head_dim"]))
            self.dec.setdefault(key, {})[(int(r["batch"]), int(r["context"]))] = \
                float(r["time_us"])
        self.pre = {}
        for r in read(os.path.join(d, "attn_prefill.csv")):
            key = (int(r["q_heads"]), int(r["kv_heads"]), int(r["head_dim"]))
            self.pre.setdefault(key, {})[(int(r["chunk"]), int(r["prior_context"]))] = \
                float(r["time_us"])
        self.moe = {}
        for r in read(os.path.join(d, "moe.csv")):
            self.moe.setdefault((int(r["k"]), int(r["n"]), int(r["experts"])), []).append(
                (int(r["tokens_per_expert"]), float(r["time_us"])))
        self.elem = {}
        for r in read(os.path.join(d, "elementwise.csv")):
            self.elem.setdefault((r["op"], int(r["width"])), []).append(
                (int(r["tokens"]), float(r["time_us"])))
        for table in (self.gemm, self.moe, self.elem):
            for v in table.values():
                v.sort()

    @staticmethod
    def curve(points, x):
        return lerp([p[0] for p in points], [p[1] for p in points], x)

    def g(self, m, k, n, dtype):
        key = (k, n, dtype) if (k, n, dtype) in self.gemm else (k, n, "bf16")
        return self.curve(self.gemm[key], m)

    def e(self, op, tokens, width):
        return self.curve(self.elem[(op, width)], tokens)

    def grid2(self, table, a, b):
        xs = sorted({p[0] for p in table})
        ys = sorted({p[1] for p in table})
        def at(x):
            return lerp(ys, [table[(x, y)] for y in ys], b) if all((x, y) in table for y in ys) \
                else None
        rows = [(x, at(x)) for x in xs if at(x) is not None]
        return lerp([r[0] for r in rows], [r[1] for r in rows], a)

    def experts(self, k, n, hit, tpe):
        counts = sorted({e for (kk, nn, e) in self.moe if (kk, nn) == (k, n)})
        vals = [self.curve(self.moe[(k, n, e)], tpe) for e in counts]
        return lerp(counts, vals, hit)


def predict(p, m, phase, batch, context, chunk, prior):
    h, hd, hq, hkv, f = m["hidden"], m["head_dim"], m["heads"], m["kv_heads"], m["ffn"]
    dt = m["dtype"]
    T = {"decode": batch, "prefill": chunk, "mixed": batch + chunk}[phase]
    opt = m["ffn_kind"] == "plain"
    norm = "layernorm" if opt else "rmsnorm"
    cfg = (hq, hkv, hd)
    layer = p.e(norm, T, h) * 2 + p.e("add", T, h) * 2
    layer += p.g(T, h, (hq + 2 * hkv) * hd, dt) + p.g(T, hq * hd, h, dt)
    if not opt:
        layer += p.e("rope", T, (hq + hkv) * hd)
    if phase != "prefill":
        layer += p.grid2(p.dec[cfg], batch, context + 1)
    if phase != "decode":
        layer += p.grid2(p.pre[cfg], chunk, prior)
    if m["experts"] > 1:
        layer += p.g(T, h, m["experts"], dt)
        hit = m["experts"] * (1 - (1 - m["active_experts"] / m["experts"]) ** T)
        tpe = m["active_experts"] * T / hit
        layer += p.experts(h, 2 * f, hit, tpe) + p.experts(f, h, hit, tpe)
        layer += p.e("silu_mul", T * m["active_experts"], 2 * f)
    elif opt:
        layer += p.g(T, h, f, dt) + p.g(T, f, h, dt) + p.e("gelu", T, f)
    else:
        layer += p.g(T, h, 2 * f, dt) + p.g(T, f, h, dt) + p.e("silu_mul", T, 2 * f)
    rows = {"decode": batch, "prefill": 1, "mixed": batch + 1}[phase]
    return (m["layers"] * layer + p.e("embedding", T, h) + p.e(norm, rows, h)
            + p.g(rows, h, m["vocab"], dt))


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--profile", required=True)
    ap.add_argument("--steps", required=True)
    ap.add_argument("-o", "--output", help="CSV of the comparison (default: stdout only)")
    a = ap.parse_args()
    p = Profile(a.profile)
    models = {}
    out = []
    for r in read(a.steps):
        name = r["model"]
        m = models.setdefault(name, common_shapes.load_model(name))
        pred = predict(p, m, r["phase"], int(r["batch"]), int(r["context"]), int(r["chunk"]),
                       int(r["prior_context"]))
        meas = float(r["time_us"])
        out.append({**{k: r[k] for k in ("model", "phase", "batch", "context", "chunk",
                                         "prior_context")},
                    "measured_us": f"{meas:.1f}", "predicted_us": f"{pred:.1f}",
                    "error_pct": f"{100 * (pred - meas) / meas:+.2f}"})
    if a.output:
        with open(a.output, "w", newline="") as f:
            w = csv.DictWriter(f, fieldnames=list(out[0]))
            w.writeheader()
            w.writerows(out)
    print("| model | phase | steps | median abs error | worst |")
    print("|---|---|---|---|---|")
    for name in models:
        for phase in ("decode", "prefill", "mixed"):
            errs = [abs(float(o["error_pct"])) for o in out
                    if o["model"] == name and o["phase"] == phase]
            if errs:
                print(f"| {name} | {phase} | {len(errs)} | {statistics.median(errs):.1f}% | "
                      f"{max(errs):.1f}% |")
    errs = [abs(float(o["error_pct"])) for o in out]
    print(f"| all | all | {len(errs)} | {statistics.median(errs):.1f}% | {max(errs):.1f}% |")
    return 0


if __name__ == "__main__":
    sys.exit(main())
