#!/usr/bin/env python3
"""offload-exec.py: offloaded attention as it would really run, on one and two GPUs, against
the simulator's execution models (sim/include/ema/hw/offexec.h).

GPU workloads (torch; each one command on the GPU machine; they write samples.csv and
meta.json under --out):

  lender     one GPU: a lender's decode steps (validate/offload-cost.py's DecodeStep, one CUDA
             graph) back to back, and a borrower's partial attention (its OffloadAttention, one
             layer per launch) launched every period so that it reads KV at a share r of the
             lender's HBM time, with the lender busy (stepping) and idle (alive, not stepping).
             --mode streams:   one process, two streams of equal priority (offload-cost.py's
                               setting, the reference);
                    priority:  one process, the lender's stream at high priority, the
                               partial's at low (lender-first);
                    processes: two processes, no MPS (the GPU time-slices their contexts);
                    mps:       two processes under MPS (the daemon started with a private
                               pipe directory and stopped after); --sm-share P caps the
                               partial's process at P% of the SMs.
             Per lender step its time (CUDA events); per partial the host's submit-to-done
             wall time and its run (events around it): wall - run is its wait (launch and
             queueing; derive subtracts the idle lender's median as the launch cost).
  roundtrip  two GPUs: GPU 0 (borrower) holds a share of each request's KV, GPU 1 (lender)
             the rest; per layer the query goes to GPU 1 (a copy-engine copy: --path copy),
             GPU 1 computes the partial output and its log-sum-exp, they come back (the round
             trip, timed on its own stream of GPU 0 while GPU 0's local partial runs on
             another), GPU 0 merges them with its local partial (the layer: both and the
             merge) and the result is checked against attention over all of the KV on GPU 0
             (its largest absolute difference, max_err; BF16 inputs, FP32 math). Lender idle and busy (its own
             decode graph on another stream). Offloaded shares --offloaded (0 is all-local).

CPU side (tested on fixtures by validate/tests/test-offload-exec):

  derive DIR   samples.csv -> summary.csv: per (mode, state, share) the lender's step mean
               and p99 and their slowdown against its steps alone, the partial's run and
               wait (p50, p90, p99); per (path, state, offloaded) the round trip's.
  compare DIR  summary.csv against the execution model of the mode's name (streams and mps:
               mps; processes: timeslice; priority: lender-first) with offexec.h's
               equations and the GPU file's measured curve: compare.md, the error of each
               row's prediction (predicted / measured - 1) and their median.

Usage:
  python3 validate/offload-exec.py lender --mode MODE --out DIR [--model llama-3.1-8b]
          [--batch 32] [--context 2000] [--shares 0.02,0.05,0.2] [--seconds 2]
  python3 validate/offload-exec.py roundtrip --out DIR [--offloaded 0,0.25,0.5] [--layers 40]
  python3 validate/offload-exec.py derive DIR
  python3 validate/offload-exec.py compare DIR [--gpu-file hwmodels/gpus/h200-sxm.yaml]
"""
import argparse
import csv
import importlib.util
import json
import math
import os
import platform
import re
import statistics
import subprocess
import sys
import tempfile
import threading
import time

HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.dirname(HERE)

# the execution model of each measured mode (offexec.h's names; lender-first: priority lender)
MODE_MODEL = {"streams": "mps", "mps": "mps", "processes": "timeslice", "priority": "lender-first"}

# offexec.c's defaults (the server's `offload` keys): Q, c, the lender-first residual
DEFAULTS_SPEC = {"timeslice_ms": 2.0, "switch_us": 25.0, "residual": 0.01}

SAMPLE_COLS = ["mode", "state", "share", "kind", "index", "step_ms", "wall_ms", "run_ms"]
ROUNDTRIP_COLS = ["path", "state", "offloaded", "layer", "roundtrip_ms", "partial_ms",
                  "local_ms", "merge_ms", "layer_ms", "max_err"]


# ---- statistics and files (CPU) ---------------------------------------------------------------

def percentile(values, q):
    """The q-th percentile (0-100) of VALUES, linear between closest ranks."""
    v = sorted(values)
    if not v:
        raise ValueError("no values")
    x = (len(v) - 1) * q / 100
    lo = int(math.floor(x))
    hi = min(lo + 1, len(v) - 1)
    return v[lo] + (v[hi] - v[lo]) * (x - lo)


def read_csv(path, needed):
    """Rows of PATH as dicts; a missing column or a bad number stops with PATH:LINE."""
    with open(path) as f:
        rows = list(csv.DictReader(f))
        f.seek(0)
        header = f.readline().strip().split(",")
    missing = [c for c in needed if c not in header]
    if missing:
        raise SystemExit(f"{path}:1: missing columns: {', '.join(missing)}")
    out = []
    for line, row in enumerate(rows, start=2):
        r = dict(row)
        for c in needed:
            if c in ("mode", "state", "kind", "path"):
                continue
            try:
                r[c] = float(row[c]) if row[c] != "" else None
            except ValueError:
                raise SystemExit(f"{path}:{line}: {c} is not a number: {row[c]!r}")
        out.append(r)
    return out


def write_csv(path, cols, rows):
    with open(path, "w", newline="") as f:
        w = csv.writer(f)
        w.writerow(cols)
        for r in rows:
            w.writerow([f"{r[c]:.6g}" if isinstance(r[c], float) else r[c] for c in cols])


def gpu_curve(path):
    """gpu.offload_slowdown of a GPU file (following its !include): [(share, slowdown)]."""
    text = open(path).read()
    inc = re.search(r"offload_slowdown:\s*!include\s+(\S+)", text)
    if inc:
        text = open(os.path.join(os.path.dirname(path), inc.group(1))).read()
    points = [(float(a) / 100, float(b) / 100) for a, b in
              re.findall(r"share:\s*([\d.]+)%,\s*slowdown:\s*([\d.]+)%", text)]
    partial = re.search(r"^offload_partial_slowdown:\s*([\d.]+)%", open(path).read(), re.M)
    return points, float(partial.group(1)) / 100 if partial else 0.0


def curve_at(points, share):
    """ema_gpu_offload_slowdown (hwmodel.c): linear through (0, 0) and the points, the last
    segment continued."""
    if not points or share <= 0:
        return 0.0
    a = (0.0, 0.0)
    for i, b in enumerate(points):
        if share <= b[0] or i + 1 == len(points):
            break
        a = b
    return a[1] + (b[1] - a[1]) * (share - a[0]) / (b[0] - a[0])


# ---- derive -----------------------------------------------------------------------------------

def derive_lender(rows, meta):
    """summary rows of the lender workload's samples (see the module's doc)."""
    alone = [r["step_ms"] for r in rows if r["kind"] == "lender" and r["share"] == 0]
    if not alone:
        raise SystemExit("samples: no lender steps alone (share 0)")
    alone_mean = statistics.mean(alone)
    # the launch cost: the idle lender's median wall - run at every share
    idle = [r["wall_ms"] - r["run_ms"] for r in rows
            if r["kind"] == "partial" and r["state"] == "idle"]
    launch = statistics.median(idle) if idle else 0.0
    out = []
    keys = sorted({(r["mode"], r["state"], r["share"]) for r in rows if r["share"] > 0})
    for mode, state, share in keys:
        sel = [r for r in rows if (r["mode"], r["state"], r["share"]) == (mode, state, share)]
        steps = [r["step_ms"] for r in sel if r["kind"] == "lender"]
        runs = [r["run_ms"] for r in sel if r["kind"] == "partial"]
        waits = [max(0.0, r["wall_ms"] - r["run_ms"] - launch) for r in sel
                 if r["kind"] == "partial"]
        if not runs:
            continue
        row = dict(mode=mode, state=state, share=share, partials=len(runs),
                   partial_alone_ms=float(meta["partial_alone_ms"]),
                   run_p50_ms=percentile(runs, 50), run_p90_ms=percentile(runs, 90),
                   wait_p50_ms=percentile(waits, 50), wait_p90_ms=percentile(waits, 90),
                   wait_p99_ms=percentile(waits, 99), lender_alone_ms=alone_mean,
                   lender_mean_ms="", lender_p99_ms="", slowdown_mean="", slowdown_p99="")
        if steps:
            row.update(lender_mean_ms=statistics.mean(steps),
                       lender_p99_ms=percentile(steps, 99),
                       slowdown_mean=statistics.mean(steps) / alone_mean - 1,
                       slowdown_p99=percentile(steps, 99) / percentile(alone, 99) - 1)
        out.append(row)
    return out


LENDER_SUMMARY = ["mode", "state", "share", "partials", "partial_alone_ms", "run_p50_ms",
                  "run_p90_ms", "wait_p50_ms", "wait_p90_ms", "wait_p99_ms", "lender_alone_ms",
                  "lender_mean_ms", "lender_p99_ms", "slowdown_mean", "slowdown_p99"]
ROUNDTRIP_SUMMARY = ["path", "state", "offloaded", "layers", "roundtrip_p50_ms",
                     "roundtrip_p90_ms", "partial_p50_ms", "local_p50_ms", "merge_p50_ms",
                     "layer_p50_ms", "max_err"]


def derive_roundtrip(rows):
    out = []
    for key in sorted({(r["path"], r["state"], r["offloaded"]) for r in rows}):
        sel = [r for r in rows if (r["path"], r["state"], r["offloaded"]) == key]
        rt = [r["roundtrip_ms"] for r in sel]
        out.append(dict(path=key[0], state=key[1], offloaded=key[2], layers=len(sel),
                        roundtrip_p50_ms=percentile(rt, 50), roundtrip_p90_ms=percentile(rt, 90),
                        partial_p50_ms=percentile([r["partial_ms"] for r in sel], 50),
                        local_p50_ms=percentile([r["local_ms"] for r in sel], 50),
                        merge_p50_ms=percentile([r["merge_ms"] for r in sel], 50),
                        layer_p50_ms=percentile([r["layer_ms"] for r in sel], 50),
                        max_err=max(r["max_err"] for r in sel)))
    return out


def derive(out_dir):
    meta = json.load(open(os.path.join(out_dir, "meta.json")))
    if meta["workload"] == "lender":
        rows = read_csv(os.path.join(out_dir, "samples.csv"), SAMPLE_COLS)
        for r in rows:  # lender rows carry no partial times, partial rows no step
            for c in ("step_ms", "wall_ms", "run_ms"):
                r[c] = r[c] if r[c] is not None else 0.0
        write_csv(os.path.join(out_dir, "summary.csv"), LENDER_SUMMARY, derive_lender(rows, meta))
    else:
        rows = read_csv(os.path.join(out_dir, "samples.csv"), ROUNDTRIP_COLS)
        write_csv(os.path.join(out_dir, "summary.csv"), ROUNDTRIP_SUMMARY, derive_roundtrip(rows))
    print(f"wrote {os.path.join(out_dir, 'summary.csv')}")


# ---- the simulator's execution models (offexec.h) ---------------------------------------------

def predict_lender(row, meta, points, partial_slowdown, spec):
    """offexec.h's prediction for one summary row: (lender slowdown, partial wait ms, partial
    run ms) under the execution model of the row's mode."""
    model = MODE_MODEL[row["mode"]]
    share, busy = row["share"], row["state"] == "busy"
    alone = row["partial_alone_ms"]
    rate = share * meta["b_hbm"] / meta["partial_bytes"]  # partials per second
    rho = rate * alone / 1e3
    curve = curve_at(points, share)
    q_ms, c_ms = spec["timeslice_ms"], spec["switch_us"] / 1e3
    if model == "mps":
        slowdown, wait, run = curve, 0.0, alone * (1 + partial_slowdown if busy else 1)
    elif model == "timeslice":
        f = min(rho + 2 * c_ms / 1e3 * rate, 0.95)
        slowdown, wait, run = f / (1 - f), (q_ms / 2 + c_ms) if busy else 0.0, alone
    else:  # lender-first
        slowdown = min(spec["residual"], curve)
        wait, run = (row["lender_alone_ms"] / 2 if busy else 0.0), alone
    return slowdown, wait, run


def rel_error(pred, meas):
    return pred / meas - 1 if meas else float("nan")


def compare(out_dir, gpu_file, spec):
    meta = json.load(open(os.path.join(out_dir, "meta.json")))
    points, partial_slowdown = gpu_curve(gpu_file)
    rows = read_csv(os.path.join(out_dir, "summary.csv"), ["mode", "state", "share",
                                                          "partial_alone_ms", "run_p50_ms",
                                                          "wait_p50_ms", "lender_alone_ms"])
    lines = [f"# offload execution: measured against offexec.h ({out_dir})", "",
             "| mode (model) | lender | share | lender slowdown meas / pred | "
             "partial wait+run p50 ms meas / pred | step error | partial error |",
             "|---|---|---|---|---|---|---|"]
    step_err, part_err = [], []
    for r in rows:
        slow, wait, run = predict_lender(r, meta, points, partial_slowdown, spec)
        meas_total = r["wait_p50_ms"] + r["run_p50_ms"]
        e_part = rel_error(wait + run, meas_total)
        part_err.append(abs(e_part))
        cell, e_cell = "-", "-"
        if r.get("slowdown_mean") not in (None, ""):
            meas_slow = float(r["slowdown_mean"])
            e_step = rel_error(1 + slow, 1 + meas_slow)
            step_err.append(abs(e_step))
            cell, e_cell = f"{meas_slow:+.2%} / {slow:+.2%}", f"{e_step:+.1%}"
        lines.append(f"| {r['mode']} ({MODE_MODEL[r['mode']]}) | {r['state']} | "
                     f"{r['share']:.1%} | {cell} | {meas_total:.3f} / {wait + run:.3f} | "
                     f"{e_cell} | {e_part:+.1%} |")
    lines += ["", f"median |error|: lender step {statistics.median(step_err):.1%}"
              if step_err else "median |error|: lender step -",
              f"median |error|: partial wait+run {statistics.median(part_err):.1%}", ""]
    text = "\n".join(lines)
    with open(os.path.join(out_dir, "compare.md"), "w") as f:
        f.write(text)
    print(text)


def compare_roundtrip(out_dir, server):
    """The round trip against offload.h's t_send + t_att + t_back over the copy path (offexec.h:
    link.latency + link.copy_fixed_cost each way) and the partial alone."""
    meta = json.load(open(os.path.join(out_dir, "meta.json")))
    rows = read_csv(os.path.join(out_dir, "summary.csv"),
                    ["path", "state", "offloaded", "roundtrip_p50_ms", "partial_p50_ms"])
    lines = ["| path | lender | offloaded | round trip p50 ms meas / pred | error |",
             "|---|---|---|---|---|"]
    errs = []
    for r in rows:
        if r["offloaded"] <= 0:
            continue
        fixed = server["latency_s"] + (server["copy_fixed_s"] if r["path"] == "copy" else 0)
        sent = meta["query_bytes"]
        back = meta["partial_bytes_back"]
        pred = (2 * fixed + (sent + back) / server["bandwidth"]) * 1e3 + r["partial_p50_ms"]
        e = rel_error(pred, r["roundtrip_p50_ms"])
        errs.append(abs(e))
        lines.append(f"| {r['path']} | {r['state']} | {r['offloaded']:.0%} | "
                     f"{r['roundtrip_p50_ms']:.4f} / {pred:.4f} | {e:+.1%} |")
    lines += ["", f"median |error|: round trip {statistics.median(errs):.1%}" if errs else "", ""]
    text = "\n".join(lines)
    with open(os.path.join(out_dir, "compare.md"), "w") as f:
        f.write(text)
    print(text)


def server_link(path):
    """link.latency, copy_fixed_cost and bandwidth of a server file (s, s, B/s)."""
    text = open(path).read()
    link = text[text.index("link:"):]
    num = lambda key: re.search(key + r":\s*([\d.]+)\s*([a-zA-Z/]+)", link).groups()
    scale = {"ns": 1e-9, "us": 1e-6, "ms": 1e-3, "GB/s": 1e9, "TB/s": 1e12}
    get = lambda key: float(num(key)[0]) * scale[num(key)[1]]
    return dict(latency_s=get("latency"), copy_fixed_s=get("copy_fixed_cost"),
                bandwidth=get("bandwidth"))


# ---- GPU workloads ----------------------------------------------------------------------------

def load_offload_cost():
    """validate/offload-cost.py as a module (its decode step and partial; needs torch)."""
    spec = importlib.util.spec_from_file_location("offload_cost",
                                                  os.path.join(HERE, "offload-cost.py"))
    mod = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(mod)
    return mod


def device_meta(torch):
    smi = subprocess.run(["nvidia-smi", "--query-gpu=name,driver_version", "--format=csv,noheader"],
                         capture_output=True, text=True).stdout.strip()
    return dict(device=smi, torch=torch.__version__, cuda=torch.version.cuda,
                python=platform.python_version(), command=" ".join(sys.argv))


def lender_proc(args, conn, high_priority):
    """The lender: warm, then per request from CONN ('step', seconds) its step times (ms) over
    that window, back to back; ('idle', seconds) sleeps; ('quit',) ends."""
    import torch
    oc = load_offload_cost()
    dev = torch.device("cuda", 0)
    stream = torch.cuda.Stream(device=dev, priority=-1 if high_priority else 0)
    step = oc.DecodeStep(args.model, args.batch, args.context, dev)
    graph = oc.capture(step, stream)
    conn.send(("ready", step.layers.__len__()))
    while True:
        msg = conn.recv()
        if msg[0] == "quit":
            return
        if msg[0] == "idle":
            time.sleep(msg[1])
            conn.send(("times", []))
            continue
        times, end = [], time.perf_counter() + msg[1]
        while time.perf_counter() < end:
            a, b = torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)
            with torch.cuda.stream(stream):
                a.record()
                graph.replay()
                b.record()
            b.synchronize()
            times.append(a.elapsed_time(b))
        conn.send(("times", times))


class ThreadConn:
    """A pair of queues standing in for a pipe between the partial loop and a lender thread."""

    def __init__(self, inbox, outbox):
        self.inbox, self.outbox = inbox, outbox

    def send(self, msg):
        self.outbox.put(msg)

    def recv(self):
        return self.inbox.get()


def partial_loop(torch, off, stream, period_s, seconds):
    """Partials launched every PERIOD_S for SECONDS: (wall ms, run ms) of each."""
    out, end = [], time.perf_counter() + seconds
    while time.perf_counter() < end:
        t0 = time.perf_counter()
        a, b = torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)
        with torch.cuda.stream(stream):
            a.record()
            off()
            b.record()
        b.synchronize()
        t1 = time.perf_counter()
        out.append(((t1 - t0) * 1e3, a.elapsed_time(b)))
        time.sleep(max(0.0, period_s - (t1 - t0)))
    return out


def run_lender(args):
    import queue

    import torch
    import torch.multiprocessing as mp
    oc = load_offload_cost()
    os.makedirs(args.out, exist_ok=True)
    mps_dir = None
    if args.mode == "mps":
        mps_dir = tempfile.mkdtemp(prefix="ema-mps-")
        os.environ["CUDA_MPS_PIPE_DIRECTORY"] = mps_dir
        os.environ["CUDA_MPS_LOG_DIRECTORY"] = mps_dir
        subprocess.run(["nvidia-cuda-mps-control", "-d"], check=True)
    try:
        dev = torch.device("cuda", 0)
        two = args.mode in ("processes", "mps")
        if two:
            ctx = mp.get_context("spawn")
            conn, child = ctx.Pipe()
            proc = ctx.Process(target=lender_proc, args=(args, child, False))
            proc.start()
            if args.sm_share:
                # the partial's process only (the lender's has started): MPS caps its SMs
                os.environ["CUDA_MPS_ACTIVE_THREAD_PERCENTAGE"] = f"{args.sm_share:g}"
        else:
            inbox, outbox = queue.Queue(), queue.Queue()
            conn = ThreadConn(outbox, inbox)
            proc = threading.Thread(target=lender_proc,
                                    args=(args, ThreadConn(inbox, outbox), args.mode == "priority"))
            proc.start()
        _, layers = conn.recv()
        off = oc.OffloadAttention(args.model, args.partial_requests, args.partial_context, dev)
        stream = torch.cuda.Stream(device=dev, priority=0)
        b_hbm = oc.copy_bandwidth(dev)
        alone = [run for _, run in partial_loop(torch, off, stream, 0.002, 0.5)]
        rows = []
        conn.send(("step", args.seconds))  # the lender's steps alone
        for i, t in enumerate(conn.recv()[1]):
            rows.append(dict(mode=args.mode, state="busy", share=0.0, kind="lender", index=i,
                             step_ms=t, wall_ms="", run_ms=""))
        for share in args.shares:
            period = off.bytes / b_hbm / share
            for state in ("idle", "busy"):
                conn.send(("step" if state == "busy" else "idle", args.seconds))
                parts = partial_loop(torch, off, stream, period, args.seconds)
                steps = conn.recv()[1]
                for i, t in enumerate(steps):
                    rows.append(dict(mode=args.mode, state=state, share=share, kind="lender",
                                     index=i, step_ms=t, wall_ms="", run_ms=""))
                for i, (wall, run) in enumerate(parts):
                    rows.append(dict(mode=args.mode, state=state, share=share, kind="partial",
                                     index=i, step_ms="", wall_ms=wall, run_ms=run))
                print(f"{args.mode} {state} r={share:.3f}: {len(parts)} partials, "
                      f"{len(steps)} lender steps", flush=True)
        conn.send(("quit",))
        proc.join()
        write_csv(os.path.join(args.out, "samples.csv"), SAMPLE_COLS, rows)
        meta = dict(workload="lender", mode=args.mode, model=args.model, batch=args.batch,
                    context=args.context, layers=layers, partial_requests=args.partial_requests,
                    partial_context=args.partial_context, partial_bytes=off.bytes, b_hbm=b_hbm,
                    sm_share=args.sm_share,
                    partial_alone_ms=statistics.median(alone), **device_meta(torch))
        json.dump(meta, open(os.path.join(args.out, "meta.json"), "w"), indent=1)
    finally:
        if mps_dir:
            subprocess.run(["nvidia-cuda-mps-control"], input="quit\n", text=True)
    derive(args.out)


def attend_lse(torch, q, k, v):
    """Attention of Q over K, V in fp32 with its log-sum-exp per head (the split-KV partial)."""
    s = (q.float() @ k.float().transpose(-1, -2)) / math.sqrt(q.shape[-1])
    lse = torch.logsumexp(s, dim=-1, keepdim=True)
    return torch.exp(s - lse) @ v.float(), lse


def merge(torch, parts):
    """Split-KV merge of [(out, lse)] (all on one device)."""
    lse = torch.stack([p[1] for p in parts])
    w = torch.softmax(lse, dim=0)
    return sum(w[i] * parts[i][0] for i in range(len(parts)))


def run_roundtrip(args):
    import torch
    oc = load_offload_cost()
    os.makedirs(args.out, exist_ok=True)
    d0, d1 = torch.device("cuda", 0), torch.device("cuda", 1)
    _, _, heads, kv_heads, hd, _ = oc.SHAPES[args.model]
    s0, sr = torch.cuda.Stream(d0), torch.cuda.Stream(d0)
    s1, sl = torch.cuda.Stream(d1), torch.cuda.Stream(d1)
    g = torch.Generator(device=d0).manual_seed(3)
    b, ctx = args.partial_requests, args.partial_context
    k_all = torch.randn(b, heads, ctx, hd, device=d0, generator=g, dtype=torch.bfloat16)
    v_all = torch.randn_like(k_all)
    q = torch.randn(b, heads, 1, hd, device=d0, generator=g, dtype=torch.bfloat16)
    reference, _ = attend_lse(torch, q, k_all, v_all)
    with torch.cuda.device(d1):  # a graph is captured and replayed on its own GPU
        lender_step = oc.DecodeStep(args.model, args.batch, args.context, d1)
        lender_graph = oc.capture(lender_step, sl)
    rows = []
    for frac in args.offloaded:
        cut = int(round(ctx * (1 - frac)))
        k0, v0 = k_all[:, :, :cut], v_all[:, :, :cut]
        k1, v1 = k_all[:, :, cut:].to(d1), v_all[:, :, cut:].to(d1)
        q1 = torch.empty(q.shape, dtype=q.dtype, device=d1)
        for state in ("idle", "busy"):
            stop = threading.Event()

            def lender_loop():
                with torch.cuda.device(d1), torch.cuda.stream(sl):
                    while not stop.is_set():
                        lender_graph.replay()
                        torch.cuda.current_stream(d1).synchronize()

            busy = threading.Thread(target=lender_loop) if state == "busy" else None
            if busy:
                busy.start()
            for layer in range(args.layers):
                ev = {n: torch.cuda.Event(enable_timing=True) for n in ("a", "l", "r0", "r1", "m", "z")}
                p0, p1 = torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)
                torch.cuda.synchronize(d0)
                with torch.cuda.stream(s0):
                    ev["a"].record()
                    local = attend_lse(torch, q, k0, v0) if cut > 0 else None
                    ev["l"].record()
                parts = [local] if local else []
                if frac > 0:
                    # the remote path on its own stream of GPU 0 (sr), timed there alone: the
                    # query out, the partial and its LSE on GPU 1, both back; a copy between
                    # GPUs runs on the source GPU's current stream and waits for both GPUs'
                    sr.wait_event(ev["a"])
                    with torch.cuda.stream(sr), torch.cuda.stream(s1):
                        ev["r0"].record(sr)
                        q1.copy_(q, non_blocking=True)
                        p0.record(s1)
                        out1, lse1 = attend_lse(torch, q1, k1, v1)
                        p1.record(s1)
                        back = (out1.to(d0, non_blocking=True), lse1.to(d0, non_blocking=True))
                        done = torch.cuda.Event()
                        done.record(s1)
                    sr.wait_event(done)
                    ev["r1"].record(sr)
                    s0.wait_event(ev["r1"])
                    parts.append(back)
                with torch.cuda.stream(s0):
                    ev["m"].record()
                    out = merge(torch, parts) if len(parts) > 1 else parts[0][0]
                    ev["z"].record()
                torch.cuda.synchronize(d0)
                torch.cuda.synchronize(d1)
                err = (out - reference).abs().max().item()
                rows.append(dict(path=args.path, state=state, offloaded=frac, layer=layer,
                                 roundtrip_ms=ev["r0"].elapsed_time(ev["r1"]) if frac > 0 else 0.0,
                                 partial_ms=p0.elapsed_time(p1) if frac > 0 else 0.0,
                                 local_ms=ev["a"].elapsed_time(ev["l"]),
                                 merge_ms=ev["m"].elapsed_time(ev["z"]),
                                 layer_ms=ev["a"].elapsed_time(ev["z"]), max_err=err))
            stop.set()
            if busy:
                busy.join()
            print(f"offloaded {frac:.0%} lender {state}: round trip p50 "
                  f"{statistics.median(r['roundtrip_ms'] for r in rows[-args.layers:]):.4f} ms",
                  flush=True)
    write_csv(os.path.join(args.out, "samples.csv"), ROUNDTRIP_COLS, rows)
    meta = dict(workload="roundtrip", model=args.model, requests=b, context=ctx,
                query_bytes=b * heads * hd * 2, partial_bytes_back=b * heads * (hd + 1) * 4,
                **device_meta(torch))
    json.dump(meta, open(os.path.join(args.out, "meta.json"), "w"), indent=1)
    derive(args.out)


def floats(text):
    return [float(x) for x in text.split(",") if x]


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    sub = ap.add_subparsers(dest="cmd", required=True)
    for name in ("lender", "roundtrip"):
        p = sub.add_parser(name)
        p.add_argument("--out", required=True)
        p.add_argument("--model", default="llama-3.1-8b")
        p.add_argument("--batch", type=int, default=32)
        p.add_argument("--context", type=int, default=2000)
        p.add_argument("--partial-requests", type=int, default=16)
        p.add_argument("--partial-context", type=int, default=2000)
        if name == "lender":
            p.add_argument("--mode", required=True, choices=sorted(MODE_MODEL))
            p.add_argument("--shares", type=floats, default=floats("0.02,0.05,0.2"))
            p.add_argument("--seconds", type=float, default=2.0)
            p.add_argument("--sm-share", type=float, default=0,
                           help="--mode mps: the partial's process gets this %% of the SMs")
        else:
            p.add_argument("--path", default="copy", choices=["copy"])
            p.add_argument("--offloaded", type=floats, default=floats("0,0.25,0.5"))
            p.add_argument("--layers", type=int, default=40)
    p = sub.add_parser("derive")
    p.add_argument("dir")
    p = sub.add_parser("compare")
    p.add_argument("dir")
    p.add_argument("--gpu-file", default=os.path.join(ROOT, "hwmodels/gpus/h200-sxm.yaml"))
    p.add_argument("--server-file", default=os.path.join(ROOT, "hwmodels/servers/h200x2.yaml"))
    p.add_argument("--timeslice-ms", type=float, default=DEFAULTS_SPEC["timeslice_ms"])
    p.add_argument("--switch-us", type=float, default=DEFAULTS_SPEC["switch_us"])
    p.add_argument("--residual", type=float, default=DEFAULTS_SPEC["residual"])
    args = ap.parse_args()
    if args.cmd == "lender":
        run_lender(args)
    elif args.cmd == "roundtrip":
        run_roundtrip(args)
    elif args.cmd == "derive":
        derive(args.dir)
    else:
        meta = json.load(open(os.path.join(args.dir, "meta.json")))
        if meta["workload"] == "lender":
            compare(args.dir, args.gpu_file, dict(timeslice_ms=args.timeslice_ms,
                                                  switch_us=args.switch_us,
                                                  residual=args.residual))
        else:
            compare_roundtrip(args.dir, server_link(args.server_file))


if __name__ == "__main__":
    main()
