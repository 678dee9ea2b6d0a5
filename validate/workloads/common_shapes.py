"""validate/workloads/common_shapes.py: model shapes read from hwmodels/llms/NAME.yaml (the keys
the workloads need; no YAML library, no torch, so the CPU-side check predict.py reads them too)."""
import os
import re

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))


def load_model(name):
    """the shape keys of hwmodels/llms/NAME.yaml (EMA_LLM_PATH first) as a dict"""
    dirs = [d for d in os.environ.get("EMA_LLM_PATH", "").split(":") if d]
    dirs.append(os.path.join(ROOT, "hwmodels", "llms"))
    for d in dirs:
        path = os.path.join(d, name + ".yaml")
        if os.path.exists(path):
            break
    else:
        raise SystemExit(f"model {name}: no {name}.yaml in {dirs}")
    m = {}
    with open(path) as f:
        for line in f:
            hit = re.match(r"^([a-z_]+):\s*([^#\s]+)", line)
            if hit:
                m[hit.group(1)] = hit.group(2)
    for key in ("layers", "hidden", "ffn", "heads", "kv_heads", "head_dim", "vocab", "experts",
                "active_experts"):
        m[key] = int(m[key])
    m["tied_embeddings"] = m.get("tied_embeddings") == "true"
    m["attention_bias"] = m.get("attention_bias") == "true"
    return m
