#!/usr/bin/env python3
"""offload-curve.py: a GPU's measured offload slowdown curve, and how well it predicts.

Reads the CSVs that offload-cost.py writes (one or more runs, their rows
together; one row per lender step and target rate: achieved_rate r, the share of the lender's HBM time that offloaded
attention read, and the lender's slowdown) and prints:

- the curve for a GPU file's `offload_slowdown` (hwmodels/README.md): at each
  target rate of at least --min-rate, the mean achieved share and the mean
  slowdown over the lender steps measured there. The simulator interpolates
  linearly between these points and (0, 0) (ema_gpu_offload_slowdown,
  sim/include/ema/hw/hwmodel.h). Rates below --min-rate (default 2%) are left
  out: their slowdown is within the run-to-run spread of about +-1% (the
  result's README), and the line from the origin to the next point stands
  for them.
- how well a curve predicts a lender it was not built from: for each lender
  step, the curve of the other lender steps' means, interpolated at that
  step's achieved shares, against its measured slowdowns (error per rate,
  predicted / measured - 1); and the curve's own points against the
  per-rate means (0 by construction: the points are the means).
- for comparison, the one-coefficient line through the origin
  (slowdown = c r, least squares over every point above --min-rate) against
  the per-rate means.
- with --check OTHER.CSV (another run of offload-cost.py, at other rates or
  on another machine): the curve of the first CSV against every point of
  OTHER and against its per-rate means, nothing fitted on OTHER.

Usage: validate/offload-curve.py OFFLOAD-COST.CSV [MORE.CSV ...] [--min-rate 0.02]
       [--check OTHER.CSV]
"""
import argparse
import csv
import sys


def interpolate(points, share):
    """The simulator's interpolation: linear from (0, 0) through POINTS, the
    last segment continued past the last point."""
    previous = (0.0, 0.0)
    for i, point in enumerate(points):
        if share <= point[0] or i + 1 == len(points):
            break
        previous = point
    (s0, y0), (s1, y1) = previous, point
    return y0 + (y1 - y0) * (share - s0) / (s1 - s0)


def curve(rows, rates):
    """(mean share, mean slowdown) per target rate of ROWS."""
    out = []
    for rate in rates:
        at = [r for r in rows if r["target"] == rate]
        if at:
            out.append((sum(r["share"] for r in at) / len(at),
                        sum(r["slowdown"] for r in at) / len(at)))
    return out


def load(path):
    try:
        with open(path, newline="") as f:
            reader = csv.DictReader(f)
            need = {"model", "batch", "context", "target_rate", "achieved_rate", "slowdown"}
            missing = need - set(reader.fieldnames or [])
            if missing:
                sys.exit(f"{path}:1: missing columns: {', '.join(sorted(missing))}")
            rows = []
            for line, r in enumerate(reader, start=2):
                try:
                    rows.append({"lender": f"{r['model']} {r['batch']}x{r['context']}",
                                 "target": float(r["target_rate"]),
                                 "share": float(r["achieved_rate"]),
                                 "slowdown": float(r["slowdown"])})
                except ValueError as e:
                    sys.exit(f"{path}:{line}: {e}")
            return rows
    except OSError as e:
        sys.exit(f"offload-curve: {e}")


def main():
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("csv", nargs="+")
    parser.add_argument("--min-rate", type=float, default=0.02)
    parser.add_argument("--check", help="another offload-cost.csv to predict with the curve")
    args = parser.parse_args()
    rows = [r for path in args.csv for r in load(path)
            if r["target"] >= args.min_rate and r["share"] > 0]
    if not rows:
        sys.exit(f"{', '.join(args.csv)}: no rows at a target rate of at least {args.min_rate:g}")
    rates = sorted({r["target"] for r in rows})
    lenders = sorted({r["lender"] for r in rows})
    points = curve(rows, rates)

    print("offload_slowdown:   # mean over %d lender steps per rate (validate/offload-curve.py)"
          % len(lenders))
    for share, slowdown in points:
        print(f"  - {{share: {100 * share:.2f}%, slowdown: {100 * slowdown:.2f}%}}")

    print("\nleave one lender out: predicted / measured - 1, per target rate")
    errors = lender_table(rows, rates, lenders,
                          lambda lender: curve([r for r in rows if r["lender"] != lender], rates))
    print("| mean | " + " | ".join(f"{100 * sum(errors[t]) / len(errors[t]):+.1f}%"
                                   for t in rates) + " |")
    print("| worst | " + " | ".join(f"{100 * max(abs(e) for e in errors[t]):.1f}%"
                                    for t in rates) + " |")

    c = sum(r["share"] * r["slowdown"] for r in rows) / sum(r["share"] ** 2 for r in rows)
    print(f"\none coefficient, slowdown = c r through the origin: c = {c:.3f}; "
          "against the per-rate means:")
    for (share, slowdown), t in zip(points, rates):
        print(f"  {100 * t:g}%: c r = {100 * c * share:.2f}% against {100 * slowdown:.2f}% "
              f"({100 * (c * share / slowdown - 1):+.1f}%); the curve: "
              f"{100 * (interpolate(points, share) / slowdown - 1):+.1f}%")
    if args.check:
        check(points, args.check, args.min_rate)


def lender_table(rows, rates, lenders, curve_for):
    """A markdown table of each lender's predicted / measured - 1 per rate, the prediction
    from curve_for(lender); returns the errors per rate."""
    errors = {t: [] for t in rates}
    print("| lender | " + " | ".join(f"{100 * t:g}%" for t in rates) + " |")
    print("|---|" + "---|" * len(rates))
    for lender in lenders:
        points, cells = curve_for(lender), []
        for t in rates:
            mine = [r for r in rows if r["lender"] == lender and r["target"] == t]
            if not mine:
                cells.append("")
                continue
            e = interpolate(points, mine[0]["share"]) / mine[0]["slowdown"] - 1
            errors[t].append(e)
            cells.append(f"{100 * e:+.1f}%")
        print(f"| {lender} | " + " | ".join(cells) + " |")
    return errors


def check(points, path, min_rate):
    """POINTS (a curve) against every row of PATH from MIN_RATE and its per-rate means."""
    rows = [r for r in load(path) if r["target"] >= min_rate and r["share"] > 0]
    if not rows:
        sys.exit(f"{path}: no rows at a target rate of at least {min_rate:g}")
    rates = sorted({r["target"] for r in rows})
    lenders = sorted({r["lender"] for r in rows})
    print(f"\nthe curve against {path}: predicted / measured - 1")
    lender_table(rows, rates, lenders, lambda lender: points)
    cells = []
    for t in rates:
        at = [r for r in rows if r["target"] == t]
        predicted = sum(interpolate(points, r["share"]) for r in at)
        cells.append(f"{100 * (predicted / sum(r['slowdown'] for r in at) - 1):+.1f}%")
    print("| the means | " + " | ".join(cells) + " |")


if __name__ == "__main__":
    main()
