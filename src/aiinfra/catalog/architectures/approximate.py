"""The labelled estimate for a config no family record counts exactly (``approximate=True``, ``--approximate``).

The estimate reads every field that changes a count or a cache by much, and lists each guess in
:attr:`ModelConfig.assumptions` (the JSON's ``"assumptions"``):

* a layout that fields reveal is built with the known family's layout: a Mamba hybrid
  (``hybrid_override_pattern`` or ``layers_block_type``), Gated DeltaNet linear attention
  (``linear_num_value_heads``, ``full_attention_interval``), latent attention (``kv_lora_rank``, a
  sparse-attention indexer when ``index_head_dim`` is set), Gemma 4's full layers of their own width
  (``global_head_dim``);
* otherwise the Llama block, with the layer pattern (``layer_types``, ``sliding_window_pattern``),
  experts with their shared experts, dense first layers (``first_k_dense_replace``) and interleaving
  (``interleave_moe_layer_step``, ``decoder_sparse_step``, ``mlp_only_layers``);
* an absent ``tie_word_embeddings`` takes the tying default of the family the config's
  ``architectures`` names, else ``transformers``' own default (untied); the other fields that family's
  record holds class defaults for (KV heads, head_dim, windows, dense first layers...) take them too.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from aiinfra.catalog.architectures.blocks import (
    _all,
    _alternating_kinds,
    _check_topk,
    _drop_empty,
    _gated_mlp,
    _kinds_from_layer_types,
    _moe,
    _t,
)
from aiinfra.catalog.architectures.core import ModelConfig, _whole
from aiinfra.catalog.architectures.dense import _llama_like
from aiinfra.catalog.architectures.fields import _Fields
from aiinfra.catalog.architectures.gemma import _gemma4_text
from aiinfra.catalog.architectures.hybrid import _nemotron_h, _qwen3_next
from aiinfra.catalog.architectures.latent import _deepseek, _glm_moe_dsa
from aiinfra.catalog.architectures.registry import BY_ARCHITECTURE

_ALIASES = {
    "hidden_size": ("hidden_size", "n_embd", "d_model", "dim"),
    "num_hidden_layers": ("num_hidden_layers", "n_layer", "num_layers", "n_layers"),
    "num_attention_heads": ("num_attention_heads", "n_head", "num_heads", "n_heads"),
    "vocab_size": ("vocab_size", "padded_vocab_size"),
}
#: Layouts a field gives away: (field, builder, what the estimate then assumes).
_REVEALED = (
    (
        ("hybrid_override_pattern", "layers_block_type"),
        _nemotron_h,
        "hybrid blocks as in Nemotron-H: one mixer per block (Mamba-2, attention, MLP or MoE) in the order of "
        "the pattern, a fixed Mamba-2 conv + SSM state per request",
    ),
    (
        ("linear_num_value_heads",),
        _qwen3_next,
        "hybrid layers as in Qwen3-Next: Gated DeltaNet linear attention (a fixed conv + recurrent state per "
        "request) and gated full attention by layer_types or full_attention_interval; shared expert if sized",
    ),
    (
        ("index_head_dim",),
        _glm_moe_dsa,
        "latent attention with a DeepSeek sparse-attention indexer as in GLM-5: the latent plus one "
        "index_head_dim key per token in each indexer layer; shared and routed experts after dense layers",
    ),
    (
        ("global_head_dim",),
        _gemma4_text,
        "layers as in Gemma 4: sliding layers of head_dim, full layers of global_head_dim (their own KV heads "
        "and keys reused as values when attention_k_eq_v), a dense MLP beside the experts when enable_moe_block",
    ),
    (
        ("kv_lora_rank",),
        _deepseek,
        "latent attention (MLA) as in DeepSeek-V3: a cached latent of kv_lora_rank + qk_rope_head_dim per token "
        "and layer; shared experts beside routed ones after first_k_dense_replace dense layers",
    ),
)


def _approximate(cfg: Mapping[str, Any], label: str, reason: str) -> ModelConfig:
    """A labelled estimate of a config no family counts exactly (see the module docstring)."""
    assumptions = [f"not an exact family: {reason}"]
    family = _named_family(cfg)
    lent = {k: v for k, v in (family.defaults if family else {}).items() if k not in cfg}
    if lent:
        cfg = {**cfg, **lent}
        assumptions.append(
            f"absent fields take {family.model_type}'s class defaults: "
            + ", ".join(f"{k}={v!r}" for k, v in lent.items())
        )
    base = dict(cfg)
    for key, aliases in _ALIASES.items():
        value = next((cfg[a] for a in aliases if cfg.get(a) is not None), None)
        if value is None and not (key == "num_hidden_layers" and _revealed(cfg) is _nemotron_h):
            raise ValueError(
                f"approximate count needs config field {key!r} (or one of {list(aliases[1:])}) "
                f"for model_type {cfg.get('model_type')!r}"
            )
        if value is not None:
            base[key] = _whole(key, value, 1)
    tied = _tying(cfg, assumptions)
    f = _Fields(base, {"tie_word_embeddings": tied})
    builder = _revealed(cfg)
    spec = None
    if builder is not None:
        try:
            spec = builder(f)
            assumptions.append(next(text for keys, b, text in _REVEALED if b is builder))
        except ValueError as exc:
            assumptions.append(f"the fields of its layout are incomplete ({exc}); estimated as Llama blocks")
    if spec is None:
        spec = _llama_estimate(f, cfg, assumptions)
    assumptions.append("no extra tensors (positional tables, adapters, vision towers) are counted")
    spec["tensors"] = _drop_empty(spec["tensors"])
    return ModelConfig(
        name=label,
        model_type=str(cfg.get("model_type")),
        exact=False,
        torch_dtype=cfg.get("torch_dtype") or cfg.get("dtype"),
        assumptions=tuple(assumptions),
        **spec,
    )


def _revealed(cfg: Mapping[str, Any]):
    return next((b for keys, b, _ in _REVEALED if any(cfg.get(k) is not None for k in keys)), None)


def _named_family(cfg: Mapping[str, Any]):
    """The family record of the first ``transformers`` class the config's ``architectures`` names, if any."""
    return next((BY_ARCHITECTURE[a] for a in cfg.get("architectures") or () if a in BY_ARCHITECTURE), None)


def _tying(cfg: Mapping[str, Any], assumptions: list) -> bool:
    if cfg.get("tie_word_embeddings") is not None:
        return bool(cfg["tie_word_embeddings"])
    family = _named_family(cfg)
    if family is not None:
        assumptions.append(
            f"tie_word_embeddings absent: {family.model_type}'s default ({family.tied}) is taken"
        )
        return family.tied
    assumptions.append("tie_word_embeddings absent: an untied LM head is counted (transformers' default)")
    return False


def _layer_kinds(f: _Fields, n_layers: int, assumptions: list) -> list[str]:
    kinds = None
    try:
        kinds = _kinds_from_layer_types(f, n_layers, extra={"chunked_attention": "chunked"})
    except ValueError as exc:
        assumptions.append(f"layer_types not understood ({exc}): every layer is taken as full attention")
    if kinds is not None:
        return kinds
    chunk = f.cfg.get("attention_chunk_size")
    if chunk is not None:  # Llama 4: RoPE layers attend within chunks, NoPE layers to everything
        interval = f.cfg.get("no_rope_layer_interval") or 4
        rope = f.cfg.get("no_rope_layers") or [int((i + 1) % interval != 0) for i in range(n_layers)]
        assumptions.append(
            f"attention_chunk_size {chunk:,}: RoPE layers attend within chunks, the others globally"
        )
        return ["chunked" if r else "full" for r in rope]
    pattern = f.cfg.get("sliding_window_pattern") or f.cfg.get("_sliding_window_pattern")
    if f.cfg.get("sliding_window") is None:
        return _all(n_layers)
    if isinstance(pattern, str) and pattern and not set(pattern) - {"L", "G"}:
        assumptions.append(f"sliding_window_pattern {pattern!r}: L layers slide, G layers attend globally")
        return ["sliding" if pattern[i % len(pattern)] == "L" else "full" for i in range(n_layers)]
    if isinstance(pattern, int) and pattern >= 1:
        assumptions.append(
            f"sliding_window_pattern {pattern}: one global layer in every {pattern}, the rest slide"
        )
        return _alternating_kinds(f, n_layers, pattern)
    if f.cfg.get("use_sliding_window") is False:
        return _all(n_layers)
    if f.cfg.get("cache_implementation") == "hybrid":  # Gemma 2's cache: windowed and global layers alternate
        assumptions.append(
            "cache_implementation 'hybrid' without a pattern: sliding and global layers alternate"
        )
        return _alternating_kinds(f, n_layers, 2)
    assumptions.append(
        "sliding_window given without a layer pattern: every layer is taken to slide, as in Mistral (the KV "
        "is understated if some layers attend globally)"
    )
    return _all(n_layers, "sliding")


def _llama_estimate(f: _Fields, cfg: Mapping[str, Any], assumptions: list) -> dict:
    """Llama blocks with the config's layer pattern, q/k norms and experts."""
    assumptions.append(
        "Llama-shaped blocks: q/k/v/o projections without biases, a gated (3-matrix) MLP, two RMSNorms per "
        "layer and a final one"
    )
    hidden = f.int("hidden_size")
    if cfg.get("intermediate_size") is None:
        f.cfg["intermediate_size"] = 4 * hidden
        assumptions.append("intermediate_size absent: taken as 4 * hidden_size")
    n_layers = f.int("num_hidden_layers")
    kinds = _layer_kinds(f, n_layers, assumptions)
    qk = "head" if cfg.get("use_qk_norm") else None
    if qk:
        assumptions.append("use_qk_norm: one RMSNorm of head_dim on queries and one on keys per layer")
    spec = _llama_like(f, qk_norm=qk, kinds_fn=lambda f, n: kinds)
    if "chunked" in kinds:
        window = _whole("attention_chunk_size", cfg.get("attention_chunk_size") or 8192, 1)
        spec["attention"] = tuple(
            a if a.kind != "chunked" else _windowed(a, window) for a in spec["attention"]
        )
        assumptions.append(f"chunked layers keep at most attention_chunk_size ({window:,}) tokens")
    n_experts = next(
        (cfg[a] for a in ("num_local_experts", "num_experts", "n_routed_experts") if cfg.get(a)), 0
    )
    if n_experts:
        spec = _experts(f, spec, cfg, _whole("experts", n_experts, 1), assumptions)
    return spec


def _windowed(a, window: int):
    from dataclasses import replace

    return replace(a, window=window)


def _moe_layers(cfg: Mapping[str, Any], n_layers: int, assumptions: list) -> tuple[int, ...]:
    first = cfg.get("first_k_dense_replace") or 0
    if cfg.get("moe_layers") is not None:
        return tuple(cfg["moe_layers"])
    step = (
        cfg.get("interleave_moe_layer_step")
        or cfg.get("decoder_sparse_step")
        or cfg.get("moe_layer_freq")
        or 1
    )
    dense_only = set(cfg.get("mlp_only_layers") or [])
    start = step - 1 if cfg.get("interleave_moe_layer_step") else 0
    layers = tuple(i for i in range(start, n_layers, step) if i >= first and i not in dense_only)
    if len(layers) < n_layers:
        assumptions.append(
            f"{n_layers - len(layers)} of {n_layers} layers keep a dense MLP (first_k_dense_replace, "
            "interleave or sparse step, mlp_only_layers)"
        )
    return layers


def _experts(f: _Fields, spec: dict, cfg: Mapping[str, Any], experts: int, assumptions: list) -> dict:
    k = next(
        (
            cfg[a]
            for a in ("num_experts_per_tok", "experts_per_token", "top_k_experts", "moe_topk")
            if cfg.get(a)
        ),
        None,
    )
    if k is None:
        raise ValueError("approximate count of a mixture of experts needs config field 'num_experts_per_tok'")
    k = _whole("num_experts_per_tok", k, 1)
    _check_topk(experts, k)
    hidden, n_layers = f.int("hidden_size"), f.int("num_hidden_layers")
    llama4 = cfg.get("intermediate_size_mlp") is not None  # Llama 4: experts of intermediate_size
    width = _whole("moe_intermediate_size", cfg.get("moe_intermediate_size") or f.int("intermediate_size"), 1)
    dense_width = (
        _whole("intermediate_size_mlp", cfg["intermediate_size_mlp"], 1)
        if llama4
        else f.int("intermediate_size")
    )
    moe_layers = _moe_layers(cfg, n_layers, assumptions)
    dense_layers = tuple(i for i in range(n_layers) if i not in moe_layers)
    p = "model.layers.{layer}.mlp."
    rows = [t for t in spec["tensors"] if t.group != "mlp"]
    rows += _gated_mlp(p, dense_layers, hidden, dense_width)
    rows += _gated_mlp(f"{p}experts.{{expert}}.", moe_layers, hidden, width, group="expert", experts=experts)
    rows.append(_t(f"{p}gate.weight", "router", (experts, hidden), moe_layers))
    shared = (
        (cfg.get("n_shared_experts") or 0) * width
        or cfg.get("shared_expert_intermediate_size")
        or cfg.get("moe_shared_expert_intermediate_size")
        or (width if llama4 else 0)
    )
    if shared:
        rows += _gated_mlp(
            f"{p}shared_experts.",
            moe_layers,
            hidden,
            _whole("shared experts", shared, 1),
            group="shared_expert",
        )
    assumptions.append(
        f"{len(moe_layers)} layers hold {experts} gated experts of width {width} ({k} per token) with a linear "
        f"router" + (f" and shared experts of total width {shared}" if shared else "; no shared experts")
    )
    return dict(spec, tensors=tuple(rows), **_moe(experts, k, width, moe_layers, 1 if shared else 0))


__all__ = ["_approximate"]
