"""validate/workloads/common.py: what the PyTorch workloads of `ema-validate profile` and the
captured steps share: model shapes read from hwmodels/llms/*.yaml (the keys a workload needs,
no YAML library), the NVTX point/repeat protocol that validate/trace.c reads, the choice of the
fastest SDPA backend, and the provenance lines (workload.yaml) that become profile.yaml.

Protocol (trace.h): a point is an NVTX range "ema.point TABLE KEY=VALUE ...", holding one
range "ema.rep" per repeat; the device is synchronised before each repeat range ends, so the
repeat owns exactly the kernels it launched; a repeat's time is the sum of its kernels' durations
(so launch gaps never count)."""
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


def point(table, keys, fn, repeats, warmups=2):
    """times FN as one profile point: warm-ups, then REPEATS repeats in their own ranges"""
    for _ in range(warmups):
        fn()
    torch.cuda.synchronize()
    repeat_in_ranges("ema.point " + table + " " + " ".join(f"{k}={v}" for k, v in keys.items()),
                     fn, repeats)


def repeat_in_ranges(name, fn, repeats):
    """the range NAME holding REPEATS "ema.rep" ranges of FN, each synchronised before it ends"""
    torch.cuda.nvtx.range_push(name)
    for _ in range(repeats):
        torch.cuda.nvtx.range_push("ema.rep")
        fn()
        torch.cuda.synchronize()
        torch.cuda.nvtx.range_pop()
    torch.cuda.nvtx.range_pop()


def rope(x, cos, sin):
    """rotate-half RoPE, as PyTorch eager runs it (cat, neg, two products, a sum)"""
    half = x.shape[-1] // 2
    return x * cos + torch.cat((-x[..., half:], x[..., :half]), dim=-1) * sin


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
    """a closure running SDPA with one backend (GQA natively: enable_gqa), or None where the
    backend refuses the shape"""
    gqa = q.shape[1] != k.shape[1]

    def run():
        with sdpa_kernel([BACKENDS[backend]]):
            if causal_bias is not None:
                return F.scaled_dot_product_attention(q, k, v, attn_mask=causal_bias,
                                                      enable_gqa=gqa)
            return F.scaled_dot_product_attention(q, k, v, is_causal=is_causal, enable_gqa=gqa)
    try:
        run()
        torch.cuda.synchronize()
    except (RuntimeError, NotImplementedError, ValueError):
        return None
    return run


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
