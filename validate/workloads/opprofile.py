"""validate/workloads/opprofile.py: the operator profiling workload of `ema-validate profile`.

Run under the capture library (ema-validate profile runs it so); each measured point is an NVTX
point range (common.py) whose time validate/trace.c takes from the captured kernel durations
(median over the repeats). It measures on GPU0, for the shapes of the models named:

- gemm: y[m,n] = x[m,k] W[k,n] (+ bias[n]) through F.linear (cuBLAS; with a bias cuBLASLt's
  bias-epilogue kernels), for QKV, O, gate/up (or fc1), down (or fc2), the LM head and the MoE
  router, m on a log grid 1..8192 (ratio ~2^(1/4)), in the model's dtype and in bf16, bias=0;
  the model's biased linears (hwmodels/llms attention_bias: gated models q/k/v, plain models
  q/k/v/o, fc1, fc2) also with bias=1 in its dtype; weights rotated over copies >= 512 MB so
  repeats read HBM; with --gemm-shapes K:N,... those shapes instead of the models', in each dtype
  of --gemm-dtypes (bf16, fp16, fp8: FP8 E4M3 weights and activations, one scale each, through
  torch._scaled_mm into bf16, the per-tensor FP8 GEMM alone: the activation's quantisation an
  engine runs before it is not timed); with --tp, each degree's shapes on one GPU of the group as the step model
  (sim/hw/steptime.c) splits them: heads / tp query heads and max(1, kv_heads / tp) KV heads in
  QKV and O, ffn / tp in gate/up and down, vocab / tp in the LM head (the router whole);
- attn_decode: one query token per sequence against `context` cached tokens (contiguous KV,
  [batch, kv_heads, context, head_dim]), common.attend (the layout steps.py has), SDPA with the cuDNN, FlashAttention and memory-efficient
  backends (GQA natively, enable_gqa), each backend a row; the converter keeps the fastest; in
  bf16 and in the dtype of each model of that head shape (OPT-13B: fp16);
- attn_prefill: one sequence, `chunk` new tokens attending causally (lower-right aligned) to
  themselves and `prior_context` cached tokens, the same backends and dtypes; q, k, v rotated
  over copies >= 512 MB (at most 64) so repeats read HBM;
- moe: `experts` experts each with `tokens_per_expert` tokens, each expert's own weights,
  looped F.linear per expert (as an engine without a grouped kernel runs them), gate/up and down;
- elementwise: PyTorch eager kernels by tokens: rmsnorm (F.rms_norm, width hidden), layernorm
  (F.layer_norm with bias, hidden), silu_mul (silu(x[:, :f]) * x[:, f:], width 2 x ffn), gelu
  (width ffn, for the plain-MLP models: OPT's relu moves the same bytes), rope (rotate-half
  RoPE on q and on k, views of a QKV output, width (heads + kv_heads) x head_dim), kv_write (the
  new tokens' K and V copied into the caches, width kv_heads x head_dim), moe_route (MoE models:
  common.route without the experts' GEMMs, width hidden), add (residual add, hidden), embedding
  (row gather, hidden). Every operator is common.py's function, the one steps.py runs.

Every point runs its operator back to back, common.CHAIN runs or more per repeat from one CUDA
graph (common.point: as a step runs; the MoE table and moe_route eagerly, as Mixtral's steps)."""
import argparse
import sys

import torch
import torch.nn.functional as F
from torch.nn.attention.bias import causal_lower_right

import common

M_GRID = sorted({1, 2, 3, 4, 5, 6, 7} | {round(2 ** (e / 4)) for e in range(12, 53)})
M_QUICK = [1, 16, 128, 1024, 8192]
BATCHES = [1, 2, 4, 8, 16, 32, 64, 128, 256]
CONTEXTS = [128, 256, 512, 1024, 1536, 2048, 3072, 4096, 6144, 8192]
CHUNKS = [512, 1024, 2048, 4096, 8192]
PRIORS = [0, 512, 1024, 2048, 4096, 8192]
TOKENS = sorted({1, 2, 4, 8, 16, 32, 64, 128, 256, 512, 1024, 2048, 4096, 8192}
                | {3, 6, 12, 24, 48, 96, 192, 384, 768, 1536, 3072, 6144})
EXPERTS = [1, 2, 4, 8]
KV_FLOOR = 40 << 30  # the largest KV a decode point allocates (bytes)


def gemm_shapes(m, tp=1):
    """(k, n, what, biased) of the model's GEMMs on one GPU of a TP group of TP (as
    sim/hw/steptime.c's set_operator_shapes splits them): biased as sim/hw/llm.c counts the
    biases (attention_bias: a gated model's q/k/v, a plain model's q/k/v/o, fc1 and fc2)"""
    h, hd = m["hidden"], m["head_dim"]
    gated = m["ffn_kind"] == "gated"
    plain_bias = m["attention_bias"] and not gated
    q, kv = m["heads"] // tp, max(1, m["kv_heads"] // tp)
    shapes = [(h, (q + 2 * kv) * hd, "qkv", m["attention_bias"]),
              (q * hd, h, "o", plain_bias), (h, m["vocab"] // tp, "lm_head", False)]
    if m["experts"] > 1:
        shapes.append((h, m["experts"], "router", False))
    else:
        shapes += [(h, (2 if gated else 1) * m["ffn"] // tp, "gate_up", plain_bias),
                   (m["ffn"] // tp, h, "down", plain_bias)]
    return shapes


def tp_degrees(m, tps):
    """the degrees of TPS that split M as the step model accepts (heads divisible, KV heads
    divisible or a divisor of the degree)"""
    return [tp for tp in tps if m["heads"] % tp == 0 and
            (m["kv_heads"] % tp == 0 or tp % m["kv_heads"] == 0)]


def run_gemms(models, grid, repeats, log, tps=(1,)):
    done = set()
    for m in models:
        for dtype, tp in [(d, t) for d in sorted({m["dtype"], "bf16"}) for t in tp_degrees(m, tps)]:
            for k, n, what, biased in gemm_shapes(m, tp):
                for bias in (0, 1) if biased and dtype == m["dtype"] else (0,):
                    if (k, n, dtype, bias) in done:
                        continue
                    done.add((k, n, dtype, bias))
                    run_gemm(k, n, dtype, bias, grid, repeats)
                    log(f"gemm {what} k={k} n={n} {dtype} bias={bias}: {len(grid)} points")


def run_gemm(k, n, dtype, bias, grid, repeats):
    if dtype == "fp8":
        return run_gemm_fp8(k, n, grid, repeats)
    dt = common.DTYPES[dtype]
    copies = common.rotation(k * n * 2)
    ws = [torch.randn(n, k, device="cuda", dtype=dt) / k ** 0.5 for _ in range(copies)]
    bs = [torch.zeros(n, device="cuda", dtype=dt) if bias else None for _ in range(copies)]
    for mm in grid:
        x = torch.randn(mm, k, device="cuda", dtype=dt)
        it = iter(range(1 << 62))

        def fn():
            i = next(it) % copies
            return F.linear(x, ws[i], bs[i])
        common.point("gemm", {"m": mm, "k": k, "n": n, "dtype": dtype, "bias": bias}, fn,
                     repeats, copies)
    del ws, bs
    torch.cuda.empty_cache()


def run_gemm_fp8(k, n, grid, repeats):
    """y[m,n] (bf16) = x[m,k] W[k,n] with x and W in FP8 E4M3, one scale each (per tensor), by
    torch._scaled_mm (cuBLASLt's FP8 GEMM), weights rotated as run_gemm's; a size it refuses is
    logged and skipped"""
    fp8 = torch.float8_e4m3fn
    copies = common.rotation(k * n)
    one = torch.ones((), device="cuda", dtype=torch.float32)
    # W as [n, k] row-major, passed transposed: the column-major operand _scaled_mm takes
    ws = [(torch.randn(n, k, device="cuda") / k ** 0.5).to(fp8) for _ in range(copies)]
    for mm in grid:
        x = torch.randn(mm, k, device="cuda").to(fp8)
        it = iter(range(1 << 62))

        def fn():
            i = next(it) % copies
            return torch._scaled_mm(x, ws[i].t(), scale_a=one, scale_b=one,
                                    out_dtype=torch.bfloat16)
        try:
            fn()
        except RuntimeError as e:
            print(f"opprofile.py: gemm fp8 m={mm} k={k} n={n}: refused ({e})", flush=True)
            continue
        common.point("gemm", {"m": mm, "k": k, "n": n, "dtype": "fp8", "bias": 0}, fn,
                     repeats, copies)
    del ws
    torch.cuda.empty_cache()


def run_gemm_shapes(shapes, dtypes, grid, repeats, log):
    """each (k, n) of SHAPES in each of DTYPES, bias 0"""
    for k, n in shapes:
        for dtype in dtypes:
            run_gemm(k, n, dtype, 0, grid, repeats)
            log(f"gemm k={k} n={n} {dtype}: {len(grid)} points")


def attn_configs(models):
    """(q_heads, kv_heads, head_dim, dtype): bf16 and each model's dtype per head shape"""
    return sorted({(m["heads"], m["kv_heads"], m["head_dim"], dt) for m in models
                   for dt in {"bf16", m["dtype"]}})


def run_decode(models, batches, contexts, repeats, log, skipped):
    for hq, hkv, d, dtype in attn_configs(models):
        dt = common.DTYPES[dtype]
        for b in batches:
            for c in contexts:
                kv_bytes = 2 * b * hkv * c * d * 2
                if kv_bytes > KV_FLOOR:
                    skipped.append(f"attn_decode batch={b} context={c} kv_heads={hkv}: KV over "
                                   f"{KV_FLOOR >> 30} GiB")
                    continue
                copies = common.rotation(kv_bytes, most=8)
                q = torch.randn(b, 1, hq, d, device="cuda", dtype=dt)
                kvs = [(torch.randn(b, hkv, c, d, device="cuda", dtype=dt),
                        torch.randn(b, hkv, c, d, device="cuda", dtype=dt))
                       for _ in range(copies)]
                for backend in common.BACKENDS:
                    calls = [common.sdpa_call(backend, q, k, v) for k, v in kvs]
                    if calls[0] is None:
                        skipped.append(f"attn_decode {backend} batch={b} context={c} "
                                       f"q_heads={hq} kv_heads={hkv} {dtype}: backend refused")
                        continue
                    it = iter(range(1 << 62))
                    common.point("attn_decode",
                                 {"batch": b, "context": c, "q_heads": hq, "kv_heads": hkv,
                                  "head_dim": d, "dtype": dtype, "backend": backend},
                                 lambda: calls[next(it) % copies](), repeats, copies)
                del kvs
            torch.cuda.empty_cache()
        log(f"attn_decode q_heads={hq} kv_heads={hkv} head_dim={d} {dtype}")


def run_prefill(models, chunks, priors, repeats, log, skipped):
    for hq, hkv, d, dtype in attn_configs(models):
        dt = common.DTYPES[dtype]
        for chunk in chunks:
            for prior in priors:
                total = chunk + prior
                # rotated copies, so that a chain's runs read HBM as a step's do (the same
                # K and V again would be partly in L2)
                copies = common.rotation((chunk * hq + 2 * total * hkv) * d * 2, most=64)
                qkvs = [(torch.randn(1, chunk, hq, d, device="cuda", dtype=dt),
                         torch.randn(1, hkv, total, d, device="cuda", dtype=dt),
                         torch.randn(1, hkv, total, d, device="cuda", dtype=dt))
                        for _ in range(copies)]
                bias = causal_lower_right(chunk, total) if prior else None
                for backend in common.BACKENDS:
                    calls = [common.sdpa_call(backend, *qkvs[0], causal_bias=bias,
                                              is_causal=prior == 0)]
                    if calls[0] is None:
                        skipped.append(f"attn_prefill {backend} chunk={chunk} prior={prior} "
                                       f"q_heads={hq} kv_heads={hkv} {dtype}: backend refused")
                        continue
                    calls += [common.sdpa_call(backend, q, k, v, causal_bias=bias,
                                               is_causal=prior == 0) for q, k, v in qkvs[1:]]
                    it = iter(range(1 << 62))
                    common.point("attn_prefill",
                                 {"chunk": chunk, "prior_context": prior, "q_heads": hq,
                                  "kv_heads": hkv, "head_dim": d, "dtype": dtype,
                                  "backend": backend},
                                 lambda: calls[next(it) % copies](), repeats, copies)
                del qkvs
        log(f"attn_prefill q_heads={hq} kv_heads={hkv} head_dim={d} {dtype}")


def run_moe(models, tokens, repeats, log):
    for m in models:
        if m["experts"] <= 1:
            continue
        h, f, e_all = m["hidden"], m["ffn"], m["experts"]
        for k, n in ((h, 2 * f), (f, h)):
            ws = [torch.randn(n, k, device="cuda", dtype=torch.bfloat16) / k ** 0.5
                  for _ in range(e_all)]
            for experts in [e for e in EXPERTS if e <= e_all]:
                for t in tokens:
                    xs = [torch.randn(t, k, device="cuda", dtype=torch.bfloat16)
                          for _ in range(experts)]
                    common.point("moe", {"experts": experts, "tokens_per_expert": t, "k": k,
                                         "n": n, "dtype": "bf16"},
                                 lambda: [F.linear(xs[i], ws[i]) for i in range(experts)],
                                 repeats, graph=False)
            log(f"moe k={k} n={n}: {len(tokens)} token counts")
            del ws
            torch.cuda.empty_cache()


def run_elementwise(models, tokens, repeats, log):
    done = set()
    bf = torch.bfloat16
    for m in models:
        h, f, hd = m["hidden"], m["ffn"], m["head_dim"]
        gated = m["ffn_kind"] == "gated"
        hq, hkv = m["heads"], m["kv_heads"]
        ops = [("rmsnorm", h), ("layernorm", h), ("add", h), ("embedding", h),
               ("silu_mul" if gated else "gelu", 2 * f if gated else f),
               ("rope", (hq + hkv) * hd), ("kv_write", hkv * hd)]
        if m["experts"] > 1:
            ops.append(("moe_route", h))
        for op, width in ops:
            if (op, width) in done:
                continue
            done.add((op, width))
            qkv_width = (hq + 2 * hkv) * hd
            w = torch.randn(width, device="cuda", dtype=bf)
            bias = torch.randn(width, device="cuda", dtype=bf)
            table = torch.randn(m["vocab"], width, device="cuda", dtype=bf)
            for t in tokens:
                x_width = qkv_width if op in ("rope", "kv_write") else width
                copies = common.rotation(t * x_width * 2, most=16)
                xs = [torch.randn(t, x_width, device="cuda", dtype=bf) for _ in range(copies)]
                ys = [torch.randn(t, width, device="cuda", dtype=bf) for _ in range(copies)]
                ids = torch.randint(0, m["vocab"], (t,), device="cuda")
                cos = torch.randn(t, 1, 1, hd, device="cuda", dtype=bf)
                sin = torch.randn(t, 1, 1, hd, device="cuda", dtype=bf)
                cache = [torch.empty(t, hkv, 2, hd, device="cuda", dtype=bf) for _ in range(2)]
                logits = (torch.randn(t, m["experts"], device="cuda", dtype=bf)
                          if op == "moe_route" else None)
                it = iter(range(1 << 62))

                def fn(op=op, width=width):
                    i = next(it) % copies
                    x = xs[i]
                    if op == "rmsnorm":
                        return F.rms_norm(x, (width,), w, 1e-5)
                    if op == "layernorm":
                        return F.layer_norm(x, (width,), w, bias, 1e-5)
                    if op == "add":
                        return common.residual(x, ys[i])
                    if op == "embedding":
                        return F.embedding(ids, table)
                    if op == "silu_mul":
                        return common.silu_mul(x)
                    if op == "gelu":
                        return F.gelu(x)
                    if op == "moe_route":
                        return common.route(x, logits, m["active_experts"], lambda e, r: r)
                    q, k, v = common.split_qkv(x, t, hq, hkv, hd)
                    if op == "kv_write":
                        return common.kv_write(cache[0], cache[1], k, v, 1)
                    return common.rope_qk(q, k, cos, sin)
                common.point("elementwise", {"op": op, "tokens": t, "width": width,
                                             "dtype": "bf16"}, fn, repeats, copies,
                             graph=op != "moe_route")
                del xs, ys
            del table
            torch.cuda.empty_cache()
            log(f"elementwise {op} width={width}")


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--meta", required=True, help="where to write the provenance lines")
    ap.add_argument("--models", default=",".join(common.DEFAULT_MODELS))
    ap.add_argument("--quick", action="store_true", help="a coarse grid")
    ap.add_argument("--repeats", type=int, default=0)
    ap.add_argument("--only", default="gemm,attn_decode,attn_prefill,moe,elementwise")
    ap.add_argument("--tp", default="1", help="the GEMMs' tensor-parallel degrees, e.g. 1,2,4,8 "
                    "(each a GPU's share of the model's shapes; the other operators at 1)")
    ap.add_argument("--gemm-shapes", default="", help="K:N,... : these GEMM shapes instead of "
                    "the models' (bias 0, in each of --gemm-dtypes)")
    ap.add_argument("--gemm-dtypes", default="bf16", help="with --gemm-shapes: bf16, fp16, fp8")
    ap.add_argument("--gemm-m", default="", help="with --gemm-shapes: the m values (default "
                    "the grid)")
    a = ap.parse_args()
    try:
        shapes = [tuple(int(v) for v in s.split(":")) for s in a.gemm_shapes.split(",") if s]
        m_values = [int(v) for v in a.gemm_m.split(",") if v]
    except ValueError:
        raise SystemExit(f"opprofile.py: --gemm-shapes {a.gemm_shapes!r} / --gemm-m "
                         f"{a.gemm_m!r}: expected K:N,... and numbers")
    gemm_dtypes = [d for d in a.gemm_dtypes.split(",") if d]
    if any(len(s) != 2 or min(s) < 1 for s in shapes) or any(m < 1 for m in m_values):
        raise SystemExit(f"opprofile.py: --gemm-shapes {a.gemm_shapes!r}: expected K:N,... of "
                         "positive sizes, --gemm-m positive")
    if any(d not in ("bf16", "fp16", "fp8") for d in gemm_dtypes):
        raise SystemExit(f"opprofile.py: --gemm-dtypes {a.gemm_dtypes!r}: bf16, fp16 or fp8")
    try:
        tps = sorted({int(t) for t in a.tp.split(",")})
    except ValueError:
        raise SystemExit(f"opprofile.py: --tp {a.tp!r}: expected degrees such as 1,2,4")
    if not tps or tps[0] < 1:
        raise SystemExit(f"opprofile.py: --tp {a.tp!r}: expected degrees of at least 1")
    if not torch.cuda.is_available():
        raise SystemExit("opprofile.py: no CUDA device")
    models = [common.load_model(n) for n in a.models.split(",") if n]
    repeats = a.repeats or (3 if a.quick else 7)
    only = set(a.only.split(","))
    skipped = []

    def log(msg):
        print(f"opprofile.py: {msg}", flush=True)

    torch.manual_seed(0)
    g = M_QUICK if a.quick else M_GRID
    if "gemm" in only and shapes:
        run_gemm_shapes(shapes, gemm_dtypes, m_values or g, repeats, log)
    elif "gemm" in only:
        run_gemms(models, g, repeats, log, tps)
    if "attn_decode" in only:
        run_decode(models, [1, 16, 256] if a.quick else BATCHES,
                   [1024, 4096] if a.quick else CONTEXTS, repeats, log, skipped)
    if "attn_prefill" in only:
        run_prefill(models, [512, 2048] if a.quick else CHUNKS,
                    [0, 1024] if a.quick else PRIORS, repeats, log, skipped)
    if "moe" in only:
        run_moe(models, M_QUICK if a.quick else TOKENS, repeats, log)
    if "elementwise" in only:
        run_elementwise(models, M_QUICK if a.quick else TOKENS, repeats, log)
    meta = common.versions()
    meta["gpus_measured"] = 1
    if not (shapes and only == {"gemm"}):  # --gemm-shapes alone measures no model's shapes
        meta["models"] = "[" + ", ".join(m["name"] for m in models) + "]"
    if shapes:
        meta["gemm_shapes"] = "[" + ", ".join(f"{k}:{n}" for k, n in shapes) + "]"
        meta["gemm_dtypes"] = "[" + ", ".join(gemm_dtypes) + "]"
    lines = [
        "fastest-of: [cudnn, flash, efficient]  # SDPA backends tried per attention point; "
        "*-backends.csv has each",
        "kv_layout: \"contiguous [batch, kv_heads, context, head_dim], not paged\"",
        "time: \"median over repeats of the summed captured kernel durations (launch gaps "
        "excluded)\"",
        f"repeats: {repeats}",
        "gemm: \"F.linear (cuBLAS), weights rotated over >= 512 MB of copies (cold L2); bias 1: "
        "F.linear with a bias (cuBLASLt bias epilogue), the model's biased linears only; fp8: "
        "torch._scaled_mm (cuBLASLt) of E4M3 activations and weights, one scale each, into bf16, "
        "the GEMM alone (no activation quantisation)\"",
        f"chain: \"each repeat runs its operator max({common.CHAIN}, rotated copies) times back "
        f"to back, from one CUDA graph (the MoE table and moe_route eagerly); time per run\"",
        f"points_by_mode: {{graph: {common.MODES['graph']}, eager: {common.MODES['eager']}, "
        f"graph_refused_eager: {common.MODES['graph refused']}}}",
        "moe: \"looped F.linear per expert, each expert its own weights\"",
        "elementwise_kernels: \"PyTorch eager, common.py's operators (the kernels steps.py "
        "runs): rmsnorm F.rms_norm; layernorm F.layer_norm; silu_mul silu(x[:, :f]) * x[:, f:] "
        "(width 2 x ffn); gelu F.gelu (width ffn, for relu MLPs too); rope rotate-half on q "
        "and on k, views of the QKV output (width (heads + kv_heads) x head_dim); kv_write the "
        "new tokens' K and V into the caches (width kv_heads x head_dim; one token per "
        "sequence); moe_route the routing of a top-k MoE layer without its experts' GEMMs "
        "(softmax, top-k, per expert hit a gather, a weighted scatter-add; width hidden); add "
        "residual (hidden); embedding row gather (hidden)\"",
        "allreduce: \"not measured: one GPU was lent\"",
        "prefill_causal: \"lower-right aligned (chunk after prior_context)\"",
        f"skipped_points: {len(skipped)}",
    ]
    lines += [f"  # {s}" for s in skipped[:200]]
    common.write_meta(a.meta, meta, lines)
    log(f"done; {len(skipped)} points skipped")
    return 0


if __name__ == "__main__":
    sys.exit(main())
