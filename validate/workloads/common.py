"""validate/workloads/common.py: what the PyTorch workloads of `ema-validate profile` and the
captured steps share: model shapes read from hwmodels/llms/*.yaml (the keys a workload needs,
no YAML library), the NVTX point/repeat protocol that validate/trace.c reads, the choice of the
fastest SDPA backend, the operators both run (one function each, so that a profile row times the
kernels a step runs), and the provenance lines (workload.yaml) that become profile.yaml.

Protocol (trace.h): a point is an NVTX range "ema.point TABLE KEY=VALUE ...", holding one
range "ema.rep" (or "ema.rep xN": N runs of the operator back to back) per repeat; the device is
synchronised before each repeat range ends, so the repeat owns exactly the kernels it launched; a
repeat's time is the sum of its kernels' durations over N (so launch gaps never count).

A profile point runs its operator as a step runs its operators: back to back, CHAIN runs (or one
full turn of its rotated inputs, if longer) per repeat, replayed from one CUDA graph (the dense
models' decode steps are graph replays; prefill steps and MoE run eagerly, back to back too),
not one run between two synchronisations: an isolated kernel after an idle GPU runs slower
(a batch-1 GEMV streamed its weights at ~3.6 TB/s alone, ~4.1 TB/s inside a step)."""
import ctypes
import datetime
import os
import subprocess

from common_shapes import ROOT, load_model  # noqa: F401 (re-exported)
import torch
import torch.nn.functional as F
from torch.nn.attention import SDPBackend, sdpa_kernel

DEFAULT_MODELS = ["llama-3.1-8b", "llama-2-13b", "opt-13b", "qwen2.5-32b", "mixtral-8x7b"]
BACKENDS = {"cudnn": SDPBackend.CUDNN_ATTENTION, "flash": SDPBackend.FLASH_ATTENTION,
            "efficient": SDPBackend.EFFICIENT_ATTENTION}
DTYPES = {"bf16": torch.bfloat16, "fp16": torch.float16}


CHAIN = 8  # runs of a profile point's operator back to back in one repeat (at least)
MODES = {"graph": 0, "eager": 0, "graph refused": 0}  # how the points ran (profile.yaml)


def point(table, keys, fn, repeats, copies=1, graph=True, warmups=2):
    """times FN as one profile point: warm-ups, then REPEATS repeats in their own ranges, each
    max(CHAIN, COPIES) runs of FN back to back (FN rotating over COPIES distinct inputs, so one
    repeat reads each once and the next finds none in L2), replayed from a CUDA graph where GRAPH
    and the capture succeeds (eagerly otherwise: data-dependent operators such as MoE routing)"""
    chain = max(CHAIN, copies)
    for _ in range(warmups):
        fn()
    torch.cuda.synchronize()

    def run():
        for _ in range(chain):
            fn()
    g = graph_of(run) if graph else None
    MODES["graph" if g is not None else "graph refused" if graph else "eager"] += 1
    repeat_in_ranges("ema.point " + table + " " + " ".join(f"{k}={v}" for k, v in keys.items()),
                     g.replay if g is not None else run, repeats, chain)
    del g


def graph_of(fn):
    """FN captured as a CUDA graph (warmed up on a side stream, as torch.cuda.graphs asks), or
    None where the capture fails"""
    try:
        side = torch.cuda.Stream()
        side.wait_stream(torch.cuda.current_stream())
        with torch.cuda.stream(side):
            fn()
        torch.cuda.current_stream().wait_stream(side)
        g = torch.cuda.CUDAGraph()
        with torch.cuda.graph(g):
            fn()
        g.replay()
        torch.cuda.synchronize()
        return g
    except RuntimeError:
        torch.cuda.synchronize()
        return None


def repeat_in_ranges(name, fn, repeats, runs=1):
    """the range NAME holding REPEATS "ema.rep" ranges of FN (which runs the operator RUNS times:
    "ema.rep xRUNS" then), each synchronised before it ends"""
    rep = "ema.rep" if runs == 1 else f"ema.rep x{runs}"
    torch.cuda.nvtx.range_push(name)
    for _ in range(repeats):
        torch.cuda.nvtx.range_push(rep)
        fn()
        torch.cuda.synchronize()
        torch.cuda.nvtx.range_pop()
    torch.cuda.nvtx.range_pop()


# ---- the operators: steps.py runs these and opprofile.py times these, so that a profile row
# and a step run the same kernels for the same operator

def rope(x, cos, sin):
    """rotate-half RoPE, as PyTorch eager runs it (cat, neg, two products, a sum)"""
    half = x.shape[-1] // 2
    return x * cos + torch.cat((-x[..., half:], x[..., :half]), dim=-1) * sin


def split_qkv(qkv, seqs, hq, hkv, hd):
    """the fused QKV GEMM's output [T, (hq + 2 hkv) hd] as q, k, v [seqs, T / seqs, heads, hd]
    (views)"""
    return qkv.view(seqs, -1, hq + 2 * hkv, hd).split([hq, hkv, hkv], dim=2)


def rope_qk(q, k, cos, sin):
    """RoPE on q and on k (two rope calls; profile op `rope`, width (hq + hkv) hd)"""
    return rope(q, cos, sin), rope(k, cos, sin)


def kv_write(kc, vc, k, v, start):
    """the new tokens' K and V [S, L, hkv, hd] into the caches [S, hkv, cap, hd] at START
    (two strided copies; profile op `kv_write`, width hkv hd)"""
    kc[:, :, start:start + k.shape[1]] = k.transpose(1, 2)
    vc[:, :, start:start + v.shape[1]] = v.transpose(1, 2)


def residual(r, y):
    """the residual add (profile op `add`, width hidden)"""
    return r + y


def silu_mul(gu):
    """SwiGLU's activation on the gate/up GEMM's output [T, 2 f] (profile op `silu_mul`)"""
    f = gu.shape[-1] // 2
    return F.silu(gu[:, :f]) * gu[:, f:]


def attend(backend, q, k, v, bias, is_causal):
    """SDPA through BACKEND: q [S, Lq, hq, hd] (the QKV split's layout), k, v [S, hkv, L, hd];
    the output as [S Lq, hq hd] for the O GEMM (profile tables attn_decode, attn_prefill)"""
    s, lq, hq, hd = q.shape
    gqa = hq != k.shape[1]
    with sdpa_kernel([BACKENDS[backend]]):
        if bias is not None:
            out = F.scaled_dot_product_attention(q.transpose(1, 2), k, v, attn_mask=bias,
                                                 enable_gqa=gqa)
        else:
            out = F.scaled_dot_product_attention(q.transpose(1, 2), k, v, is_causal=is_causal,
                                                 enable_gqa=gqa)
    return out.transpose(1, 2).reshape(s * lq, hq * hd)


def route(x, logits, top, expert_fn):
    """a MoE layer's routing around its experts: softmax over LOGITS [T, E] (fp32), top-TOP,
    renormalised weights, then per expert that got tokens (data-dependent: eager only) the
    gather of its rows, EXPERT_FN(e, rows_x) and the weighted scatter-add into the output.
    Profile op `moe_route` (width hidden) times it with EXPERT_FN returning its input: the
    routing's own kernels; the experts' GEMMs are the moe table's, their silu_mul rows the
    elementwise table's."""
    weights, ids = torch.topk(torch.softmax(logits.float(), dim=-1), top, dim=-1)
    weights = (weights / weights.sum(-1, keepdim=True)).to(x.dtype)
    out = torch.zeros_like(x)
    for e in torch.unique(ids).tolist():
        rows, slot = (ids == e).nonzero(as_tuple=True)
        y = expert_fn(e, x[rows])
        out.index_add_(0, rows, y * weights[rows, slot].unsqueeze(-1))
    return out


def rotation(bytes_each, floor=512 << 20, most=64):
    """how many copies of an input of BYTES_EACH make repeats read HBM, not the 50 MB L2"""
    return max(1, min(most, -(-floor // max(1, bytes_each))))


def event_time(fn, runs=3):
    """milliseconds of one FN, the least of RUNS (for choosing a backend only)"""
    fn()
    best = float("inf")
    for _ in range(runs):
        a, b = torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)
        a.record()
        fn()
        b.record()
        b.synchronize()
        best = min(best, a.elapsed_time(b))
    return best


def sdpa_call(backend, q, k, v, causal_bias=None, is_causal=False):
    """a closure running attend() with one backend (q [S, Lq, hq, hd]; GQA natively:
    enable_gqa), or None where the backend refuses the shape"""
    def run():
        return attend(backend, q, k, v, causal_bias, is_causal)
    try:
        run()
        torch.cuda.synchronize()
    except (RuntimeError, NotImplementedError, ValueError):
        return None
    return run


def profile_backends(profile_dir):
    """the backend of each attention row of a profile's attn_decode.csv and attn_prefill.csv (the
    fastest measured there): {(table, q_heads, kv_heads, head_dim, dtype): {(a, b): backend}}
    with (a, b) = (batch, context) or (chunk, prior_context)"""
    import csv
    out = {}
    for table, a, b in (("attn_decode", "batch", "context"),
                        ("attn_prefill", "chunk", "prior_context")):
        with open(os.path.join(profile_dir, table + ".csv")) as f:
            for r in csv.DictReader(f):
                key = (table, int(r["q_heads"]), int(r["kv_heads"]), int(r["head_dim"]),
                       r["dtype"])
                out.setdefault(key, {})[(int(r[a]), int(r[b]))] = r["backend"]
    return out


def nearest_backend(rows, a, b):
    """the backend of the row of ROWS nearest to (A, B) in log2 distance (0 counts as 1)"""
    import math

    def dist(p):
        return sum(abs(math.log2(max(x, 1)) - math.log2(max(y, 1))) for x, y in zip(p, (a, b)))
    return rows[min(rows, key=dist)]


def versions():
    """provenance lines: device, driver, CUDA, torch, cuDNN, cuBLAS"""
    out = {"device": torch.cuda.get_device_name(0)}
    try:
        out["driver"] = subprocess.run(
            ["nvidia-smi", "--query-gpu=driver_version", "--format=csv,noheader"],
            capture_output=True, text=True, timeout=30).stdout.split("\n")[0].strip()
    except (OSError, subprocess.SubprocessError):
        out["driver"] = "unknown"
    out["cuda"] = torch.version.cuda
    out["torch"] = torch.__version__
    out["cudnn"] = str(torch.backends.cudnn.version())
    out["cublas"] = "unknown"
    for lib in ("libcublas.so.13", "libcublas.so.12", "libcublas.so"):
        try:
            cublas = ctypes.CDLL(lib)
        except OSError:
            continue
        parts = []
        for prop in range(3):  # MAJOR_VERSION, MINOR_VERSION, PATCH_LEVEL
            v = ctypes.c_int(0)
            cublas.cublasGetProperty(prop, ctypes.byref(v))
            parts.append(str(v.value))
        out["cublas"] = ".".join(parts)
        break
    out["workload_date"] = datetime.datetime.now(datetime.timezone.utc).isoformat(
        timespec="seconds")
    return out


def write_meta(path, pairs, extra_lines=()):
    os.makedirs(os.path.dirname(os.path.abspath(path)), exist_ok=True)
    with open(path, "w") as f:
        for k, v in pairs.items():
            f.write(f"{k}: \"{v}\"\n" if isinstance(v, str) else f"{k}: {v}\n")
        for line in extra_lines:
            f.write(line + "\n")
