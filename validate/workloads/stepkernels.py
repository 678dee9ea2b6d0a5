"""validate/workloads/stepkernels.py: the kernels of each captured step, by kernel name. No GPU.

Reads a capture directory of steps.py (kernels.csv, nvtx.csv: validate/capturelib.c's files) and
writes POINT,kernel,count,time_us per "ema.point steps ..." range: the kernels whose start lies
inside the point's range, count and summed duration divided by the repeats (--repeats, steps.py's
default 5), so a row is one step's share. This is what a step runs that the profile's operator
sums must cover."""
import argparse
import bisect
import csv
import sys


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("capture")
    ap.add_argument("-o", "--output", required=True)
    ap.add_argument("--repeats", type=int, default=5)
    a = ap.parse_args()
    opened, points = {}, []
    with open(f"{a.capture}/nvtx.csv", newline="") as f:
        for r in csv.DictReader(f):
            if r["flags"] == "start" and r["name"].startswith("ema.point steps "):
                opened[r["id"]] = (int(r["timestamp_ns"]), r["name"][len("ema.point steps "):])
            elif r["flags"] == "end" and r["id"] in opened:
                start, name = opened.pop(r["id"])
                points.append((start, int(r["timestamp_ns"]), name))
    points.sort()
    starts = [p[0] for p in points]
    sums = {}
    with open(f"{a.capture}/kernels.csv", newline="") as f:
        for r in csv.DictReader(f):
            t = int(r["start_ns"])
            i = bisect.bisect_right(starts, t) - 1
            if i < 0 or t > points[i][1]:
                continue
            key = (points[i][2], r["name"])
            c, us = sums.get(key, (0, 0.0))
            sums[key] = (c + 1, us + (int(r["end_ns"]) - t) / 1e3)
    with open(a.output, "w", newline="") as f:
        w = csv.writer(f)
        w.writerow(["point", "kernel", "count", "time_us"])
        for (p, k), (c, us) in sorted(sums.items()):
            w.writerow([p, k, f"{c / a.repeats:g}", f"{us / a.repeats:.3f}"])
    print(f"stepkernels.py: {len(points)} points, {len(sums)} rows", flush=True)
    return 0


if __name__ == "__main__":
    sys.exit(main())
