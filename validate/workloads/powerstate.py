"""validate/workloads/powerstate.py: is a kernel's time inside a step set by its neighbours (the
GPU's power and clock state)? A diagnostic for the lent GPU (`python3 powerstate.py`), no capture.
OPT-13B's layer shapes at a 1024-token chunk after 4096 cached (fp16): flash attention and the
fc1/fc2 GEMMs, each (A) in a chain of itself, (B) interleaved as in a layer; CUDA graphs, kernel
durations from torch.profiler (CUPTI); SM clock sampled by nvidia-smi meanwhile."""
import statistics
import subprocess
import time

import torch
import torch.nn.functional as F
from torch.nn.attention import SDPBackend, sdpa_kernel
from torch.nn.attention.bias import causal_lower_right
from torch.profiler import profile, ProfilerActivity
dt = torch.float16
q = torch.randn(1, 40, 1024, 128, device="cuda", dtype=dt)
k = torch.randn(1, 40, 5120, 128, device="cuda", dtype=dt)
v = torch.randn(1, 40, 5120, 128, device="cuda", dtype=dt)
bias = causal_lower_right(1024, 5120)
x = torch.randn(1024, 5120, device="cuda", dtype=dt)
ws1 = [torch.randn(20480, 5120, device="cuda", dtype=dt) * 0.01 for _ in range(4)]
ws2 = [torch.randn(5120, 20480, device="cuda", dtype=dt) * 0.01 for _ in range(4)]
h = torch.randn(1024, 20480, device="cuda", dtype=dt)
def attn():
    with sdpa_kernel([SDPBackend.FLASH_ATTENTION]):
        return F.scaled_dot_product_attention(q, k, v, attn_mask=bias)
def fc(i):
    F.linear(x, ws1[i % 4]); F.linear(h, ws2[i % 4])
modes = {"attention alone": lambda: [attn() for i in range(16)],
         "gemms alone": lambda: [fc(i) for i in range(16)],
         "interleaved": lambda: [(fc(i), attn()) for i in range(16)]}
def graph(fn):
    s = torch.cuda.Stream(); s.wait_stream(torch.cuda.current_stream())
    with torch.cuda.stream(s):
        fn()
    torch.cuda.current_stream().wait_stream(s)
    g = torch.cuda.CUDAGraph()
    with torch.cuda.graph(g):
        fn()
    return g
for name, fn in modes.items():
    g = graph(fn)
    for _ in range(20): g.replay()
    torch.cuda.synchronize()
    smi = subprocess.Popen(["nvidia-smi", "--query-gpu=clocks.sm,power.draw", "--format=csv,noheader,nounits", "-lms", "50"], stdout=subprocess.PIPE, text=True)
    t0 = time.time()
    while time.time() - t0 < 1.5:
        g.replay()
    torch.cuda.synchronize()
    with profile(activities=[ProfilerActivity.CUDA]) as prof:
        for _ in range(10): g.replay()
        torch.cuda.synchronize()
    smi.terminate(); out = smi.communicate()[0].split("\n")
    clocks = [float(l.split(",")[0]) for l in out if l.strip()]
    power = [float(l.split(",")[1]) for l in out if l.strip()]
    by = {}
    for e in prof.events():
        if e.device_type == torch.autograd.DeviceType.CUDA:
            key = "flash" if "flash" in e.name else ("gemm" if ("nvjet" in e.name or "gemm" in e.name or "cutlass" in e.name) else e.name[:30])
            by.setdefault(key, []).append(e.time_range.elapsed_us())
    print(f"{name}: SM clock median {statistics.median(clocks):.0f} MHz, power median {statistics.median(power):.0f} W; " +
          ", ".join(f"{kk} {statistics.median(vv):.1f} us x{len(vv)}" for kk, vv in by.items()), flush=True)
    del g
