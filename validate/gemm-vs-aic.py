#!/usr/bin/env python3
"""gemm-vs-aic.py: GEMMs measured on a GPU (an `ema-validate profile` gemm.csv) against
AIConfigurator's table of the same GPU (gemm_perf.csv, measured inside vLLM), point by point.

For each measured point (m, k, n, dtype, bias 0) whose (m, n, k) AIConfigurator's table holds in
that dtype (bf16 -> bfloat16, fp8 -> fp8), the ratio and the difference of the two times;
printed per dtype and m band as the median and range of (AIConfigurator / measured - 1) and of
(AIConfigurator - measured) in us (a fixed difference at small m is a kernel one side runs and
the other does not: an engine's FP8 linear quantises its activation first), then the FP8
speed-up over BF16 (time bf16 / time fp8) that each side gives at the points both dtypes hold.

Usage: validate/gemm-vs-aic.py GEMM_CSV AIC_GEMM_PERF_CSV"""
import csv
import statistics
import sys

AIC_DTYPES = {"bf16": "bfloat16", "fp16": "float16", "fp8": "fp8"}
BANDS = [(1, 16, "m 1-16"), (17, 256, "m 17-256"), (257, 1 << 40, "m 257+")]


def read_table(path, columns, key, value):
    """{KEY(row): VALUE(row)} over PATH's rows (KEY None: the row left out); a missing column
    or a bad number stops with the file and line"""
    out = {}
    try:
        with open(path, newline="") as f:
            reader = csv.DictReader(f)
            missing = [c for c in columns if c not in (reader.fieldnames or [])]
            if missing:
                sys.exit(f"{path}:1: no column {', '.join(missing)} (expected {', '.join(columns)})")
            for row in reader:
                try:
                    k = key(row)
                    if k is not None:
                        out[k] = value(row)
                except ValueError as e:
                    sys.exit(f"{path}:{reader.line_num}: {e}")
    except OSError as e:
        sys.exit(f"{path}: {e.strerror}")
    return out


def read_measured(path):
    """{(dtype, m, k, n): time_us} of the bias-0 rows"""
    return read_table(path, ["m", "k", "n", "dtype", "bias", "time_us"],
                      lambda r: (r["dtype"], int(r["m"]), int(r["k"]), int(r["n"]))
                      if int(r["bias"]) == 0 else None, lambda r: float(r["time_us"]))


def read_aic(path):
    """{(gemm_dtype, m, k, n): latency_us} (AIConfigurator's latency is in ms)"""
    return read_table(path, ["gemm_dtype", "m", "n", "k", "latency"],
                      lambda r: (r["gemm_dtype"], int(r["m"]), int(r["k"]), int(r["n"])),
                      lambda r: float(r["latency"]) * 1e3)


def summary(points):
    """POINTS: (ratio - 1, difference in us) pairs"""
    ratios, diffs = [r for r, _ in points], [d for _, d in points]
    return (f"{statistics.median(ratios):+.1%} (range {min(ratios):+.1%} .. {max(ratios):+.1%}, "
            f"{len(points)} points); {statistics.median(diffs):+.1f} us ({min(diffs):+.1f} .. "
            f"{max(diffs):+.1f})")


def main():
    if len(sys.argv) != 3:
        sys.exit(__doc__.split("\n\n")[-1])
    measured, aic = read_measured(sys.argv[1]), read_aic(sys.argv[2])
    print("AIConfigurator / measured - 1, and AIConfigurator - measured, per dtype and m band:")
    for dtype in sorted({d for d, *_ in measured}):
        key = AIC_DTYPES.get(dtype)
        pairs = [(m, (aic[(key, m, k, n)] / t - 1, aic[(key, m, k, n)] - t))
                 for (d, m, k, n), t in measured.items() if d == dtype and (key, m, k, n) in aic]
        if not pairs:
            print(f"  {dtype}: no point of AIConfigurator's table")
            continue
        print(f"  {dtype}, all: {summary([r for _, r in pairs])}")
        for lo, hi, name in BANDS:
            band = [r for m, r in pairs if lo <= m <= hi]
            if band:
                print(f"  {dtype}, {name}: {summary(band)}")
    both = [(m, k, n) for (d, m, k, n) in measured if d == "bf16" and ("fp8", m, k, n) in measured
            and ("bfloat16", m, k, n) in aic and ("fp8", m, k, n) in aic]
    if both:
        print("FP8 speed-up over BF16 (time bf16 / time fp8), measured and AIConfigurator's:")
        for lo, hi, name in BANDS:
            band = [(m, k, n) for m, k, n in both if lo <= m <= hi]
            if not band:
                continue
            ours = [measured[("bf16", *p)] / measured[("fp8", *p)] for p in band]
            theirs = [aic[("bfloat16", *p)] / aic[("fp8", *p)] for p in band]
            print(f"  {name}: measured {statistics.median(ours):.2f}x ({min(ours):.2f}-"
                  f"{max(ours):.2f}), AIConfigurator {statistics.median(theirs):.2f}x "
                  f"({min(theirs):.2f}-{max(theirs):.2f}), {len(band)} points")


if __name__ == "__main__":
    main()
