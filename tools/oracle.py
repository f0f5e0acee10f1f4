"""The independent oracle for the exact counter: transformers builds every shipped config on the meta device.

Run by ``make oracle`` in its own virtual environment (torch and transformers, never part of
``make test``). For each shipped config it

* builds ``AutoModelForCausalLM.from_config`` under ``torch.device("meta")`` (no weights are
  allocated) and counts its parameters plus persistent buffers, tensor group by tensor group,
  with a name classifier of its own (nothing from ``aiinfra``'s inventory);
* derives the active count from the model's own router settings;
* runs one forward pass on the meta device at a few contexts with the MLPs bypassed (a cache holds
  only what the token mixers write) and sums the bytes of the model's own cache object: key/value
  layers, sliding and chunked layers, convolution and recurrent states.

It writes ``src/aiinfra/catalog/data/oracle.json``, which ``tests/test_oracle.py`` holds the
calculator to, config by config, so the pinned totals cannot drift from the oracle's.
"""

from __future__ import annotations

import argparse
import json
import re
from pathlib import Path

import torch
import transformers
from transformers import AutoConfig, AutoModelForCausalLM

from aiinfra.catalog import models  # installed in the oracle's venv by `make oracle`

ROOT = Path(__file__).resolve().parents[1]
OUT = ROOT / "src" / "aiinfra" / "catalog" / "data" / "oracle.json"
CONTEXTS = (1, 100, 5000)
#: model_types transformers does not know, and the class their checkpoint runs as
#: (Kimi K2 is DeepseekV3ForCausalLM with its own model_type, see its model card).
TRANSFORMERS_TYPE = {"kimi_k2": "deepseek_v3"}

_RULES = (  # (regex on the parameter name, group); first match wins
    (r"(^|\.)(embed_tokens|wte|embed_in|word_embeddings|embeddings)\.", "embedding"),
    (r"(^|\.)wpe\.", "position_embedding"),
    (r"(^|\.)(lm_head|embed_out)\.", "lm_head"),
    (r"\.sinks$", "attention_sink"),
    (r"(e_score_correction_bias|router\.bias|gate\.bias)$", "router_bias"),
    (r"\.shared_experts?\.", "shared_expert"),
    (r"\.experts\..*(bias)", "expert_bias"),
    (r"\.experts\.", "expert"),
    (
        r"(\.router\.|mlp\.gate\.|block_sparse_moe\.gate\.|feed_forward\.router\.|shared_expert_gate\.|moe\.gate\.|mixer\.gate\.)",
        "router",
    ),
    (r"\.(q_norm|k_norm|q_layernorm|k_layernorm)\.", "qk_norm"),
    (r"(norm|ln_\d|ln_f|layernorm)[^.]*\.(weight|bias)$", "norm"),
    (r"\.layer_scalar$", "norm"),  # Gemma 4's per-layer output scale, a persistent buffer
    (r"\.(A_log|dt_bias|D|conv1d\.weight|conv1d\.bias)$", "ssm"),
    (r"mixer\.(up_proj|down_proj)\.", "mlp"),  # Nemotron-H's MLP blocks
    (r"(self_attn|attn|attention|mixer|linear_attn)\..*bias$", "attention_bias"),
    (r"(self_attn|attn|attention|mixer|linear_attn)\.", "attention"),
    (r"(mlp|feed_forward)\..*bias$", "mlp_bias"),
    (r"(mlp|feed_forward)\.", "mlp"),
)


def group_of(name: str) -> str:
    for pattern, group in _RULES:
        if re.search(pattern, name):
            return group
    raise ValueError(f"oracle: no group for tensor {name!r}")


def hf_config(cfg: dict):
    """The transformers config of the language model a shipped config describes."""
    text = cfg.get("text_config")
    if isinstance(text, dict):
        cfg = dict(text, model_type=text.get("model_type") or models.load(cfg).model_type)
    kind = TRANSFORMERS_TYPE.get(cfg["model_type"], cfg["model_type"])
    fields = {k: v for k, v in cfg.items() if k not in ("model_type", "auto_map", "architectures")}
    return AutoConfig.for_model(kind, **fields)


def count(model) -> dict[str, int]:
    groups: dict[str, int] = {}
    state = model.state_dict()
    seen = set()
    for name, p in model.named_parameters():  # tied tensors appear once
        groups[group_of(name)] = groups.get(group_of(name), 0) + p.numel()
        seen.add(id(p))
    for name, b in model.named_buffers():
        if name in state and id(b) not in seen:  # persistent buffers only
            groups[group_of(name)] = groups.get(group_of(name), 0) + b.numel()
    return groups


def active(config, groups: dict[str, int]) -> int:
    """Total less the routed experts a token skips and the lookup tables (an untied input embedding, positions)."""
    lookups = groups.get("position_embedding", 0) + (groups.get("embedding", 0) if "lm_head" in groups else 0)
    return _used(config, groups) - lookups


def _used(config, groups: dict[str, int]) -> int:
    routed = groups.get("expert", 0) + groups.get("expert_bias", 0)
    if not routed:
        return sum(groups.values())
    n = next(
        getattr(config, a)
        for a in ("n_routed_experts", "num_local_experts", "num_experts")
        if getattr(config, a, None)
    )
    k = next(
        getattr(config, a)
        for a in ("num_experts_per_tok", "top_k_experts", "moe_topk")
        if getattr(config, a, None)
    )
    return sum(groups.values()) - routed + routed // n * k


#: Feed-forward classes whose forward returns (output, router scores).
_PAIRED = {"GptOssMLP", "Llama4TextMoe"}


def _bypass_mlps(model) -> None:
    """The cache depends on the token mixers only: feed-forward blocks return zeros (no data-dependent routing)."""
    for name, module in model.named_modules():
        if re.search(r"layers\.\d+\.(mlp|feed_forward|block_sparse_moe|experts)$", name):
            if type(module).__name__ in _PAIRED:
                module.forward = lambda x, *a, **k: (torch.zeros_like(x), None)
            else:
                module.forward = lambda x, *a, **k: torch.zeros_like(x)


def cache_bytes(model, tokens: int) -> int | dict[str, str]:
    ids = torch.zeros((1, tokens), dtype=torch.long, device="meta")
    try:
        out = model(input_ids=ids, use_cache=True)
    except Exception as exc:
        return {"error": f"{type(exc).__name__}: {exc}"[:300]}
    cache = out.past_key_values
    total = 0
    for t in _tensors(cache):
        total += t.numel() * t.element_size()
    return total


def _tensors(obj, seen=None):
    seen = set() if seen is None else seen
    if id(obj) in seen:
        return
    seen.add(id(obj))
    if isinstance(obj, torch.Tensor):
        if obj.numel() and obj.is_floating_point():  # states, not the int64 position counters
            yield obj
    elif isinstance(obj, dict):
        for v in obj.values():
            yield from _tensors(v, seen)
    elif isinstance(obj, (list, tuple)):
        for v in obj:
            yield from _tensors(v, seen)
    elif hasattr(obj, "__dict__") and type(obj).__module__.startswith("transformers"):
        for v in vars(obj).values():
            yield from _tensors(v, seen)


def check(name: str) -> dict:
    cfg = models.shipped_config(name)
    config = hf_config(cfg)
    config.torch_dtype = None
    with torch.device("meta"):
        model = AutoModelForCausalLM.from_config(config, dtype=torch.bfloat16)
    groups = count(model)
    ours = models.load(name)
    mine = models.params_by_group(ours)
    diff = {
        g: mine.get(g, 0) - groups.get(g, 0)
        for g in set(mine) | set(groups)
        if mine.get(g, 0) != groups.get(g, 0)
    }
    row = {
        "model_type": ours.model_type,
        "transformers_class": type(model).__name__,
        "total": sum(groups.values()),
        "active": active(config, groups),
        "groups": dict(sorted(groups.items())),
        "group_differences": dict(sorted(diff.items())),
    }
    model.eval()
    _bypass_mlps(model)
    with torch.no_grad():
        row["cache_bytes_bf16"] = {str(n): cache_bytes(model, n) for n in CONTEXTS}
    return row


def main(argv=None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("names", nargs="*", help="shipped configs (default: all)")
    parser.add_argument("--write", action="store_true", help=f"write {OUT.relative_to(ROOT)}")
    args = parser.parse_args(argv)
    names = args.names or models.shipped_names()
    rows = {}
    for name in names:
        rows[name] = check(name)
        r = rows[name]
        print(
            f"{name:32} {r['model_type']:14} total {r['total']:>17,} active {r['active']:>17,} "
            f"diff {r['group_differences'] or 0} cache {r['cache_bytes_bf16']}",
            flush=True,
        )
    if args.write:
        if args.names and OUT.exists():  # a partial run updates those configs only
            rows = {**json.loads(OUT.read_text(encoding="utf-8"))["configs"], **rows}
        data = {
            "transformers": transformers.__version__,
            "torch": torch.__version__.split("+")[0],
            "contexts": list(CONTEXTS),
            "configs": rows,
        }
        OUT.write_text(json.dumps(data, indent=1, sort_keys=True) + "\n", encoding="utf-8")
    bad = [n for n, r in rows.items() if r["group_differences"]]
    print(f"{len(rows)} configs, {len(bad)} with differences {bad}")
    return 1 if bad else 0


if __name__ == "__main__":
    raise SystemExit(main())
