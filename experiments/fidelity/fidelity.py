"""The pure functions of the fidelity report (experiments/fidelity/run).

Reading inference-perf's run files (results/config.yaml and the per-stage
lifecycle metrics), synthesising the requests of a shared-prefix workload,
the E2E-based time per output token, relative errors and their median and
worst, the least-squares fit of the engine's CPU cost by coordinate search,
engine-profile rewriting, the machine-readable fidelity table
(hwmodels/fidelity.yaml), and the columns AIConfigurator's tables keep beside them. No simulator calls here: tests/groundtruth
(test-fidelity-unit) checks these on small fixtures.
"""
import math
import os
import random
import re
import statistics

# inference-perf's percentile keys and the quantile each stands for
QUANTILE_KEYS = [("min", 0.0), ("p0.1", 0.001), ("p1", 0.01), ("p5", 0.05), ("p10", 0.10),
                 ("p25", 0.25), ("median", 0.50), ("p75", 0.75), ("p90", 0.90),
                 ("p95", 0.95), ("p99", 0.99), ("p99.9", 0.999), ("max", 1.0)]


class FidelityError(Exception):
    """A run file lacks what the report needs (the message names the file and key)."""


# ---- inference-perf's files -------------------------------------------------

def _yaml_int(text, key, path):
    m = re.search(r"(?m)^\s*%s:\s*([0-9.]+)\s*$" % re.escape(key), text)
    if not m:
        raise FidelityError("%s: no '%s'" % (path, key))
    return int(float(m.group(1)))


def parse_config(text, path="config.yaml"):
    """The workload of inference-perf's resolved results/config.yaml: the
    shared_prefix numbers, ignore_eos and the constant-rate stages
    [(rate req/s, duration s)]. Only the keys the replay needs are read (the
    file is PyYAML's block style; PATH is for messages)."""
    if not re.search(r"(?m)^\s*type:\s*shared_prefix\s*$", text):
        raise FidelityError("%s: data.type is not shared_prefix" % path)
    if not re.search(r"(?m)^\s*type:\s*constant\s*$", text):
        raise FidelityError("%s: load.type is not constant" % path)
    cfg = {k: _yaml_int(text, k, path) for k in
           ("num_groups", "num_prompts_per_group", "system_prompt_len", "question_len",
            "output_len")}
    m = re.search(r"(?m)^\s*ignore_eos:\s*(\S+)\s*$", text)
    cfg["ignore_eos"] = bool(m) and m.group(1).lower() == "true"
    stages = re.findall(r"(?m)^\s*-\s*rate:\s*([0-9.]+)\s*\n\s*duration:\s*([0-9.]+)\s*$", text)
    if not stages:
        raise FidelityError("%s: no load.stages" % path)
    cfg["stages"] = [(float(r), float(d)) for r, d in stages]
    return cfg


def quantile_points(dist, path="metrics", key="?"):
    """[(q, value)] of an inference-perf percentile dict, q ascending."""
    try:
        return [(q, float(dist[k])) for k, q in QUANTILE_KEYS]
    except (KeyError, TypeError, ValueError):
        raise FidelityError("%s: %s lacks inference-perf's percentiles" % (path, key))


def inverse_cdf(points, u):
    """The value at quantile U of POINTS [(q, value)], linear between them."""
    u = min(max(u, points[0][0]), points[-1][0])
    for (q0, v0), (q1, v1) in zip(points, points[1:]):
        if u <= q1:
            return v0 if q1 == q0 else v0 + (v1 - v0) * (u - q0) / (q1 - q0)
    return points[-1][1]


def stratified_lengths(points, n, seed):
    """N integer lengths (at least 1) at the quantiles (i + 1/2)/N of POINTS,
    in an order shuffled with SEED: the measured distribution, reproducibly."""
    values = [max(1, round(inverse_cdf(points, (i + 0.5) / n))) for i in range(n)]
    random.Random(seed).shuffle(values)
    return values


def stage_measured(metrics, path="stage"):
    """The measured means of one stage_N_lifecycle_metrics.json (seconds), and
    its TTFT's median, p99 and maximum."""
    try:
        ok = metrics["successes"]
        lat = ok["latency"]
        ttft = lat["time_to_first_token"]
        return {"requests": int(ok["count"]), "failures": int(metrics["failures"]["count"]),
                "rate": float(metrics["load_summary"]["requested_rate"]),
                "ttft": float(ttft["mean"]), "ttft_median": float(ttft["median"]),
                "ttft_p99": float(ttft["p99"]), "ttft_max": float(ttft["max"]),
                "e2e": float(lat["request_latency"]["mean"]),
                "ip_tpot": float(lat["time_per_output_token"]["mean"]),
                "output_mean": float(ok["output_len"]["mean"]),
                "prompt": quantile_points(ok["prompt_len"], path, "prompt_len"),
                "output": quantile_points(ok["output_len"], path, "output_len")}
    except (KeyError, TypeError) as e:
        raise FidelityError("%s: no %s" % (path, e))


def e2e_tpot(e2e, ttft, output):
    """Time per output token from the request's ends: (E2E - TTFT)/(output - 1);
    None for a request of one token."""
    return (e2e - ttft) / (output - 1) if output > 1 else None


# ---- the requests of a run ---------------------------------------------------

def synthesize(cfg, prompt_points, seed, output_points=None, limit=0):
    """The requests of an inference-perf shared_prefix run, as
    [(arrival s, prompt tokens, output tokens, stage)].

    inference-perf makes num_groups x num_prompts_per_group prompts (a
    system prompt of each group + a question each), shuffles them once and
    sends them in that order, round and round; each constant-rate stage
    sends rate x duration requests evenly spaced. Prompt p's length is the
    p-th of stratified draws from the measured prompt_len quantiles (the
    same length every time it is sent). The output is output_len tokens
    (ignore_eos: the engine generates max_tokens), or, with OUTPUT_POINTS,
    stratified draws from those quantiles per stage. LIMIT > 0 keeps the
    first LIMIT requests of each stage (its arrivals unchanged)."""
    n_prompts = cfg["num_groups"] * cfg["num_prompts_per_group"]
    prompts = stratified_lengths(prompt_points, n_prompts, seed)
    out, start, k = [], 0.0, 0
    for s, (rate, duration) in enumerate(cfg["stages"]):
        n = int(round(rate * duration))
        outputs = (stratified_lengths(output_points, n, seed + 1 + s) if output_points
                   else [cfg["output_len"]] * n)
        for j in range(n):
            if not limit or j < limit:
                out.append((start + j / rate, prompts[k % n_prompts], outputs[j], s))
            k += 1
        start += duration
    return out


def stage_summary(rows):
    """Per stage, the means of simulated requests [(stage, ttft s, e2e s,
    output)]: ttft, e2e and the per-request E2E-based TPOT; and the TTFT's
    median."""
    by = {}
    for stage, ttft, e2e, output in rows:
        by.setdefault(stage, []).append((ttft, e2e, output))
    out = {}
    for stage, g in sorted(by.items()):
        tpots = [t for t in (e2e_tpot(e, f, o) for f, e, o in g) if t is not None]
        out[stage] = {"requests": len(g), "ttft": statistics.fmean(f for f, _, _ in g),
                      "ttft_median": statistics.median(f for f, _, _ in g),
                      "e2e": statistics.fmean(e for _, e, _ in g),
                      "tpot": statistics.fmean(tpots) if tpots else float("nan")}
    return out


# ---- errors and fits --------------------------------------------------------

def rel_error(sim, real):
    """(sim - real)/real."""
    return (sim - real) / real


def median_worst(errors):
    """(median, worst) of the absolute values of ERRORS; (None, None) if empty."""
    a = [abs(e) for e in errors]
    return (statistics.median(a), max(a)) if a else (None, None)


def coordinate_search(objective, start, steps, lower=None, min_step=None, max_evals=400):
    """Minimise OBJECTIVE(x) over vectors x >= LOWER (default 0) from START:
    try x +- step along each coordinate in turn, keep any improvement, halve
    a coordinate's step when neither direction improves, stop when every
    step is under MIN_STEP (default 1/1000 of the initial ones) or after
    MAX_EVALS evaluations. Returns (x, objective(x), evaluations)."""
    lower = lower or [0.0] * len(start)
    min_step = min_step or [s / 1000 for s in steps]
    x, steps = [max(a, b) for a, b in zip(start, lower)], list(steps)
    best, evals = objective(x), 1
    while evals < max_evals and any(s >= m for s, m in zip(steps, min_step)):
        for i in range(len(x)):
            if steps[i] < min_step[i]:
                continue
            moved = False
            for sign in (1, -1):
                y = list(x)
                y[i] = max(lower[i], x[i] + sign * steps[i])
                if y[i] == x[i]:
                    continue
                f = objective(y)
                evals += 1
                if f < best:
                    x, best, moved = y, f, True
                    break
            if not moved:
                steps[i] /= 2
    return x, best, evals


def line_fit(xs, ys):
    """(a, b) of the least-squares line y = a + b x; None with fewer than two distinct x."""
    n = len(xs)
    if n < 2:
        return None
    mx, my = sum(xs) / n, sum(ys) / n
    sxx = sum((x - mx) ** 2 for x in xs)
    if sxx == 0:
        return None
    b = sum((x - mx) * (y - my) for x, y in zip(xs, ys)) / sxx
    return my - b * mx, b


def squared_relative(pairs):
    """Sum of ((sim - real)/real)^2 over PAIRS [(sim, real)]."""
    return sum(rel_error(s, r) ** 2 for s, r in pairs)


def absolute_relative(pairs):
    """Sum of |sim - real|/real over PAIRS [(sim, real)]: a fit by it follows the median stage,
    not a stage far off (one near saturation, whose queueing a small error multiplies)."""
    return sum(abs(rel_error(s, r)) for s, r in pairs)


# ---- engine profiles --------------------------------------------------------

def set_profile_keys(text, values):
    """TEXT (an engine profile) with each key of VALUES set: a top-level
    `key: value` line replaced (a trailing comment dropped), or appended when
    absent. Strings are quoted."""
    for key, value in values.items():
        if isinstance(value, bool):
            v = "true" if value else "false"
        elif isinstance(value, str) and not re.fullmatch(r"[0-9.]+(us|ns|ms|MiB|GiB|%)", value):
            v = '"%s"' % value.replace('"', "'")
        else:
            v = str(value)
        line = "%s: %s" % (key, v)
        text, n = re.subn(r"(?m)^%s:.*$" % re.escape(key), lambda _: line, text, count=1)
        if not n:
            text = text.rstrip("\n") + "\n" + line + "\n"
    return text


def update_profile_file(path, values):
    """The engine profile at PATH with the keys of VALUES set (set_profile_keys), in place."""
    with open(path) as f:
        text = f.read()
    with open(path, "w") as f:
        f.write(set_profile_keys(text, values))


# ---- the fidelity table -------------------------------------------------------

FIDELITY_HEADER = """\
# hwmodels/fidelity.yaml: the measured error of each combination the simulator has been checked
# against real serving runs (sim/run/fidelity.c reads it; every serving summary.json and
# tenants.csv says, per tenant, its combination's row or "unvalidated").
#
# A combination is a GPU (its operator profile, gpu.profile), a tensor-parallel degree, the
# weight type (16-bit: bf16 or fp16; fp8: one scale per tensor; fp8-block), the KV-cache type
# (16-bit or fp8) and an engine profile (hwmodels/engines). Its errors are the worst
# |predicted / measured - 1| of the TTFT, TPOT and E2E means (per stage of a run with load
# stages) over the real runs the simulator predicted (not those a parameter was fitted on), with
# the runs' count and source. The medians, the fitted runs, the static batches and the whole-step
# checks are in experiments/fidelity/README.md.
# Written by experiments/fidelity/run --update; edit it only through that command.
"""

FIDELITY_KEYS = ("gpu", "tp", "weights", "kv_cache", "engine", "ttft_mean_error",
                 "tpot_mean_error", "e2e_mean_error", "runs", "source")


def fidelity_yaml(rows):
    """The text of hwmodels/fidelity.yaml for ROWS (dicts with FIDELITY_KEYS;
    errors as fractions, written as percentages)."""
    out = [FIDELITY_HEADER, "combinations:\n"]
    for row in rows:
        missing = [k for k in FIDELITY_KEYS if row.get(k) is None]
        if missing:
            raise FidelityError("fidelity row %s lacks %s" % (row, ", ".join(missing)))
        for n, key in enumerate(FIDELITY_KEYS):
            value = row[key]
            if key.endswith("_error"):
                v = "%.1f%%" % (100 * value)
            elif key == "source":
                v = '"%s"' % str(value).replace('"', "'")
            else:
                v = str(value)
            out.append("%s%s: %s\n" % ("    " if n else "  - ", key, v))
    return "".join(out)


def fmt_pct(e):
    """A relative error as a signed percentage, or '-'."""
    return "-" if e is None or (isinstance(e, float) and math.isnan(e)) else "%+.1f%%" % (100 * e)


# ---- AIConfigurator's tables ------------------------------------------------

def aic_constants(path):
    """The columns an AIConfigurator table's CSV leaves out for holding one value (its
    .constants.yaml beside it); {} without one."""
    out = {}
    side = path[:-len(".csv")] + ".constants.yaml"
    if os.path.isfile(side):
        with open(side) as f:
            for m in re.finditer(r'^(\w+):\s*"?([^"\n]*)"?\s*$', f.read(), re.M):
                out[m.group(1)] = m.group(2)
    return out
