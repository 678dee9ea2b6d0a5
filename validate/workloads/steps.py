"""validate/workloads/steps.py: whole model steps with engine-grade kernels, for capture.

For each model (random weights of the exact shapes, in its dtype): embedding, per layer the
pre-attention norm (RMSNorm, or LayerNorm with bias for OPT), the fused QKV GEMM (+bias), RoPE
on q and k (rotate-half; OPT has learned positions: a gathered row added to the embedding), the
new token's K/V written into a contiguous KV cache, attention through SDPA with the fastest of
the cuDNN, FlashAttention and memory-efficient backends for that shape (timed once, as an engine
picks), the O GEMM (+bias for OPT; Qwen2 has q/k/v biases only), the residual add, the post-attention norm, the MLP (gate/up GEMM, silu*mul,
down GEMM; OPT fc1, relu, fc2) or, for Mixtral, the router GEMM, top-2 routing and the two
chosen experts' MLPs per token (looped over the experts that got tokens, weighted sum), the
residual add. Each operator is common.py's function, the one opprofile.py times; then the final norm and the LM head (every sequence's token in decode, the last
token of the chunk in prefill).

A step is a decode batch (B sequences, every one `context` cached tokens), a prefill chunk (one
sequence, `chunk` new tokens after `prior_context`) or a mixed step (both: the decodes' rows
then the chunk's, every GEMM and elementwise operator over all of them, attention one call per
part, where vLLM's FlashAttention backend makes one varlen call). Decode steps of dense models
are captured as one CUDA graph and replayed; Mixtral's routing is data-dependent, so its steps run eagerly. Each
step is a point of common.py's protocol, table `steps` with the keys of steps.csv (hwmodels/profiles/README.md):
`ema-validate profile --from-capture DIR -o OUT` turns the capture into OUT/steps.csv (a step's
time: the summed durations of its kernels, median over the repeats). Points whose KV cache does not fit in the memory left are skipped and listed.
`--prefill CHUNK:PRIOR,...` replaces the prefill points (e.g. the sizes of measured engine steps)."""
import argparse
import sys

import torch
import torch.nn.functional as F
from torch.nn.attention.bias import causal_lower_right

import common

DECODE_BATCHES = [1, 4, 16, 64, 256]
DECODE_CONTEXTS = [1024, 2048, 4096]
PREFILL = [(512, 0), (1024, 0), (2048, 0), (4096, 0), (8192, 0), (1024, 4096), (2048, 2048)]
# mixed steps (batch, context, chunk, prior_context): decodes beside one prefill chunk, as a
# chunked-prefill scheduler fills a token budget of 512, 2048 or 4096 around its running decodes
MIXED = [(16, 2048, 496, 0), (64, 2048, 1984, 0), (32, 1024, 4064, 0), (128, 1024, 1920, 2048),
         (8, 4096, 2040, 1024), (256, 1024, 256, 0)]


class Part:
    """the rows of a step that attend alike: SEQS sequences of Q_LEN new tokens each after
    CACHED tokens, with their KV caches per layer (one tensor pair each)"""

    def __init__(self, m, dt, seqs, cached, q_len):
        self.seqs, self.cached, self.q_len = seqs, cached, q_len
        self.caches = [(torch.randn(seqs, m["kv_heads"], cached + q_len, m["head_dim"],
                                    device="cuda", dtype=dt),
                        torch.randn(seqs, m["kv_heads"], cached + q_len, m["head_dim"],
                                    device="cuda", dtype=dt)) for _ in range(m["layers"])]
        self.bias = causal_lower_right(q_len, cached + q_len) if q_len > 1 and cached else None

    def positions(self):
        if self.q_len == 1:
            return torch.full((self.seqs,), self.cached, device="cuda")
        return torch.arange(self.cached, self.cached + self.q_len, device="cuda")


class Model:
    def __init__(self, m, profile=None):
        self.m = m
        self.profile = profile
        dt = common.DTYPES[m["dtype"]]
        self.dt = dt
        h, hd = m["hidden"], m["head_dim"]
        self.hq, self.hkv, self.hd = m["heads"], m["kv_heads"], hd
        qkv = (self.hq + 2 * self.hkv) * hd
        self.opt = m["ffn_kind"] == "plain"
        self.moe = m["experts"] > 1

        def w(*shape):
            return (torch.randn(*shape, device="cuda", dtype=dt) * shape[-1] ** -0.5)
        self.embed = torch.randn(m["vocab"], h, device="cuda", dtype=dt) * 0.02
        self.pos = torch.randn(m.get("max_context_rows", 8192 + 2), h, device="cuda",
                               dtype=dt) * 0.02 if self.opt else None
        self.lm = self.embed if m["tied_embeddings"] else w(m["vocab"], h)
        self.layers = []
        for _ in range(m["layers"]):
            L = {"norm1": torch.ones(h, device="cuda", dtype=dt),
                 "norm2": torch.ones(h, device="cuda", dtype=dt),
                 "qkv": w(qkv, h), "o": w(h, self.hq * hd)}
            if m["attention_bias"]:  # sim/hw/llm.c's biases: gated q/k/v; plain q/k/v/o
                L["qkv_b"] = torch.zeros(qkv, device="cuda", dtype=dt)
            if m["attention_bias"] and self.opt:
                L["o_b"] = torch.zeros(h, device="cuda", dtype=dt)
                L["norm1_b"] = torch.zeros(h, device="cuda", dtype=dt)
                L["norm2_b"] = torch.zeros(h, device="cuda", dtype=dt)
            if self.moe:
                L["router"] = w(m["experts"], h)
                L["experts"] = [(w(2 * m["ffn"], h), w(h, m["ffn"]))
                                for _ in range(m["experts"])]
            elif self.opt:
                L["fc1"], L["fc2"] = w(m["ffn"], h), w(h, m["ffn"])
                L["fc1_b"] = torch.zeros(m["ffn"], device="cuda", dtype=dt)
                L["fc2_b"] = torch.zeros(h, device="cuda", dtype=dt)
            else:
                L["gate_up"], L["down"] = w(2 * m["ffn"], h), w(h, m["ffn"])
            self.layers.append(L)
        self.final = torch.ones(h, device="cuda", dtype=dt)
        self.final_b = torch.zeros(h, device="cuda", dtype=dt)
        self.backend = {}

    def norm(self, x, w, b):
        if self.opt:
            return F.layer_norm(x, (x.shape[-1],), w, b, 1e-5)
        return F.rms_norm(x, (x.shape[-1],), w, 1e-5)

    def mlp(self, L, x):
        if self.opt:
            return F.linear(F.relu(F.linear(x, L["fc1"], L["fc1_b"])), L["fc2"], L["fc2_b"])
        if not self.moe:
            return F.linear(common.silu_mul(F.linear(x, L["gate_up"])), L["down"])

        def expert(e, rows_x):
            return F.linear(common.silu_mul(F.linear(rows_x, L["experts"][e][0])),
                            L["experts"][e][1])
        return common.route(x, F.linear(x, L["router"]), self.m["active_experts"], expert)

    def step(self, tokens, positions, parts):
        """one step over TOKENS [T] at POSITIONS [T], the rows of PARTS in order: each Part a
        decode batch (seqs sequences, one new token each) or a prefill chunk (one sequence,
        q_len new tokens) with its KV caches per layer [seqs, hkv, cached + q_len, hd]. The
        GEMMs, norms and elementwise operators run once over all T rows, attention once per
        part (a mixed step is a decode part and a prefill part)."""
        x = F.embedding(tokens, self.embed)
        if self.opt:
            x = x + F.embedding(positions, self.pos)
        rows = [p.seqs * p.q_len for p in parts]
        starts = [sum(rows[:i]) for i in range(len(parts))]
        trig = []
        for p, start, n in zip(parts, starts, rows):
            pos = positions[start:start + n].to(self.dt).view(p.seqs, p.q_len, 1, 1)
            trig.append((torch.cos(pos).expand(p.seqs, p.q_len, 1, self.hd),
                         torch.sin(pos).expand(p.seqs, p.q_len, 1, self.hd)))
        for li, L in enumerate(self.layers):
            r = x
            y = F.linear(self.norm(x, L["norm1"], L.get("norm1_b")), L["qkv"], L.get("qkv_b"))
            outs = []
            for p, start, n, (cos, sin) in zip(parts, starts, rows, trig):
                q, k, v = common.split_qkv(y[start:start + n] if len(parts) > 1 else y, p.seqs,
                                           self.hq, self.hkv, self.hd)
                if not self.opt:
                    q, k = common.rope_qk(q, k, cos, sin)
                kc, vc = p.caches[li]
                common.kv_write(kc, vc, k, v, p.cached)
                total = p.cached + p.q_len
                outs.append(self.attend(q, kc[:, :, :total], vc[:, :, :total], p.bias,
                                        p.q_len > 1 and p.cached == 0))
            attn = outs[0] if len(outs) == 1 else torch.cat(outs)
            x = common.residual(r, F.linear(attn, L["o"], L.get("o_b")))
            r = x
            x = common.residual(r, self.mlp(L, self.norm(x, L["norm2"], L.get("norm2_b"))))
        # the LM head: every decode sequence's token, the last token of each prefill chunk
        last = [x[start:start + n] if p.q_len == 1 else x[start + n - 1:start + n]
                for p, start, n in zip(parts, starts, rows)]
        last = last[0] if len(last) == 1 else torch.cat(last)
        return F.linear(self.norm(last, self.final, self.final_b), self.lm)

    def attend(self, q, k, v, bias, is_causal):
        key = (tuple(q.shape), tuple(k.shape), bias is not None, is_causal)
        if key not in self.backend and self.profile is not None:
            # the profile's backend for the nearest row: the kernel its row timed
            decode = q.shape[1] == 1
            table = "attn_decode" if decode else "attn_prefill"
            rows = self.profile.get((table, self.hq, self.hkv, self.hd, self.m["dtype"]),
                                    self.profile.get((table, self.hq, self.hkv, self.hd, "bf16")))
            if rows is None:
                raise SystemExit(f"steps.py: the profile has no attention rows for {key}")
            at = (q.shape[0], k.shape[2] - 1) if decode else (q.shape[1],
                                                              k.shape[2] - q.shape[1])
            self.backend[key] = common.nearest_backend(rows, *at)
        if key not in self.backend:
            best = None
            for name in common.BACKENDS:
                call = common.sdpa_call(name, q, k, v, causal_bias=bias, is_causal=is_causal)
                if call is None:
                    continue
                t = common.event_time(call)
                if best is None or t < best[0]:
                    best = (t, name)
            if best is None:
                raise SystemExit(f"steps.py: no SDPA backend runs {key}")
            self.backend[key] = best[1]
        return common.attend(self.backend[key], q, k, v, bias, is_causal)


def run_point(model, name, fn, repeats, graph):
    """warm-ups (which also choose the attention backends), then REPEATS repeats in ranges"""
    fn()
    torch.cuda.synchronize()
    run = fn
    if graph:
        g = torch.cuda.CUDAGraph()
        stream = torch.cuda.Stream()
        stream.wait_stream(torch.cuda.current_stream())
        with torch.cuda.stream(stream):
            fn()
        torch.cuda.current_stream().wait_stream(stream)
        with torch.cuda.graph(g):
            fn()
        run = g.replay
    run()
    torch.cuda.synchronize()
    common.repeat_in_ranges(name, run, repeats)


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--meta", required=True)
    ap.add_argument("--models", default=",".join(common.DEFAULT_MODELS))
    ap.add_argument("--repeats", type=int, default=5)
    ap.add_argument("--quick", action="store_true")
    ap.add_argument("--phases", default="decode,prefill,mixed")
    ap.add_argument("--prefill", help="the prefill points as CHUNK:PRIOR,... (new tokens after "
                    "PRIOR cached ones; default: the PREFILL list)")
    ap.add_argument("--profile", help="a profile directory: each attention call uses the "
                    "backend of the nearest row of its attn_decode.csv / attn_prefill.csv "
                    "(default: the fastest by CUDA-event timing, once per shape)")
    a = ap.parse_args()
    profile = common.profile_backends(a.profile) if a.profile else None
    skipped, backends = [], []
    phases = set(a.phases.split(","))
    try:
        prefill = ([tuple(int(v) for v in p.split(":")) for p in a.prefill.split(",")]
                   if a.prefill else PREFILL)
    except ValueError:
        raise SystemExit(f"steps.py: --prefill {a.prefill!r}: expected CHUNK:PRIOR,...")
    if any(len(p) != 2 or p[0] < 1 or p[1] < 0 for p in prefill):
        raise SystemExit(f"steps.py: --prefill {a.prefill!r}: expected CHUNK:PRIOR,... with "
                         "CHUNK >= 1 and PRIOR >= 0")
    for name in [n for n in a.models.split(",") if n]:
        m = common.load_model(name)
        torch.manual_seed(0)
        model = Model(m, profile)
        kv_token = 2 * m["kv_heads"] * m["head_dim"] * 2  # bytes per token and layer
        free = torch.cuda.mem_get_info()[0] - (6 << 30)  # headroom for activations
        print(f"steps.py: {name} loaded; {free / 2**30:.1f} GiB left for KV", flush=True)
        points = []
        if "decode" in phases:
            for b in ([1, 64] if a.quick else DECODE_BATCHES):
                for c in ([1024] if a.quick else DECODE_CONTEXTS):
                    points.append(("decode", b, c, 1, 0))
        if "prefill" in phases:
            for chunk, prior in ([(1024, 0)] if a.quick else prefill):
                points.append(("prefill", 1, 0, chunk, prior))
        if "mixed" in phases:
            for b, c, chunk, prior in (MIXED[:1] if a.quick else MIXED):
                points.append(("mixed", b, c, chunk, prior))
        for phase, b, c, chunk, prior in points:
            # (seqs, cached, new tokens) of each part: decodes first, then the prefill chunk
            shape = {"decode": [(b, c, 1)], "prefill": [(1, prior, chunk)],
                     "mixed": [(b, c, 1), (1, prior, chunk)]}[phase]
            need = m["layers"] * sum(n * (cached + new) for n, cached, new in shape) * kv_token
            if need > free:
                skipped.append(f"{name} {phase} batch={b} context={c} chunk={chunk} "
                               f"prior={prior}: KV {need / 2**30:.1f} GiB does not fit")
                continue
            parts = [Part(m, model.dt, n, cached, new) for n, cached, new in shape]
            positions = torch.cat([p.positions() for p in parts])
            tokens = torch.randint(0, m["vocab"], (positions.shape[0],), device="cuda")
            if model.opt:
                positions = positions.clamp(max=model.pos.shape[0] - 1)
            label = (f"ema.point steps model={name} tp=1 phase={phase} batch={b} context={c} "
                     f"chunk={chunk} prior_context={prior}")
            graph = phase == "decode" and not model.moe
            with torch.inference_mode():
                step = lambda: model.step(tokens, positions, parts)
                try:
                    run_point(model, label, step, a.repeats, graph=graph)
                except RuntimeError as e:  # a graph capture the backend refuses: eager
                    if not graph:
                        raise
                    torch.cuda.synchronize()
                    skipped.append(f"{label}: CUDA graph capture failed ({e}); eager")
                    run_point(model, label, step, a.repeats, graph=False)
            print(f"steps.py: {label}", flush=True)
            del parts
            torch.cuda.empty_cache()
        backends += [f"  # {name} {k}: {v}" for k, v in model.backend.items()]
        del model
        torch.cuda.empty_cache()
    meta = common.versions()
    common.write_meta(a.meta, meta, [f"skipped_points: {len(skipped)}"] +
                      [f"  # {s}" for s in skipped] + ["attention_backends:"] + backends)
    print(f"steps.py: done; {len(skipped)} skipped", flush=True)
    return 0


if __name__ == "__main__":
    sys.exit(main())
