"""Building blocks shared by the family builders: tensor rows, attention and MLP layouts, layer patterns."""

from __future__ import annotations

from dataclasses import replace

from aiinfra.catalog.architectures.core import LayerAttention, Tensor, _BadValue
from aiinfra.catalog.architectures.fields import _Fields


def _drop_empty(rows) -> tuple[Tensor, ...]:
    """Per-layer rows that apply to no layer (a model with no dense or no MoE layer) hold nothing."""
    return tuple(r for r in rows if r.layers or "{layer}" not in r.name)


def _t(name, group, shape, layers=(), experts=0, layout="out_in") -> Tensor:
    return Tensor(name, group, tuple(int(s) for s in shape), tuple(layers), experts, layout)


def _token_embeddings(vocab: int, hidden: int, tied: bool, embed: str, head: str = "lm_head.weight"):
    out = [_t(embed, "embedding", (vocab, hidden))]
    if not tied:
        out.append(_t(head, "lm_head", (vocab, hidden)))
    return out


def _norms(prefix: str, names, width: int, layers, bias: bool = False, group: str = "norm"):
    out = []
    for n in names:
        out.append(_t(f"{prefix}{n}.weight", group, (width,), layers))
        if bias:
            out.append(_t(f"{prefix}{n}.bias", group, (width,), layers))
    return out


def _linear(name: str, group: str, out_f: int, in_f: int, layers, bias: bool, bias_group: str):
    rows = [_t(f"{name}.weight", group, (out_f, in_f), layers)]
    if bias:
        rows.append(_t(f"{name}.bias", bias_group, (out_f,), layers))
    return rows


def _gqa(
    prefix: str,
    layers,
    hidden: int,
    heads: int,
    kv: int,
    head_dim: int,
    *,
    qkv_bias: bool = False,
    o_bias: bool = False,
    fused: bool = False,
):
    q, k = heads * head_dim, kv * head_dim
    p = f"{prefix}self_attn."
    if fused:
        rows = _linear(f"{p}qkv_proj", "attention", q + 2 * k, hidden, layers, qkv_bias, "attention_bias")
    else:
        rows = (
            _linear(f"{p}q_proj", "attention", q, hidden, layers, qkv_bias, "attention_bias")
            + _linear(f"{p}k_proj", "attention", k, hidden, layers, qkv_bias, "attention_bias")
            + _linear(f"{p}v_proj", "attention", k, hidden, layers, qkv_bias, "attention_bias")
        )
    return rows + _linear(f"{p}o_proj", "attention", hidden, q, layers, o_bias, "attention_bias")


def _gated_mlp(
    prefix: str,
    layers,
    hidden: int,
    width: int,
    *,
    bias: bool = False,
    fused: bool = False,
    group: str = "mlp",
    names=("gate_proj", "up_proj", "down_proj"),
    experts: int = 0,
):
    bias_group = "expert_bias" if group == "expert" else "mlp_bias"
    if fused:
        return _linear(f"{prefix}gate_up_proj", group, 2 * width, hidden, layers, bias, bias_group) + _linear(
            f"{prefix}down_proj", group, hidden, width, layers, bias, bias_group
        )
    gate, up, down = names
    rows = (
        _linear(f"{prefix}{gate}", group, width, hidden, layers, bias, bias_group)
        + _linear(f"{prefix}{up}", group, width, hidden, layers, bias, bias_group)
        + _linear(f"{prefix}{down}", group, hidden, width, layers, bias, bias_group)
    )
    if experts:
        rows = [replace(r, experts=experts) for r in rows]
    return rows


def _head_dim(f: _Fields, hidden: int, heads: int) -> int:
    explicit = f.opt_int("head_dim")
    if explicit is not None:
        return explicit
    if hidden % heads:
        raise _BadValue(
            f"config field 'hidden_size' ({hidden}) must be a multiple of "
            f"num_attention_heads ({heads}) when head_dim is absent"
        )
    return hidden // heads


def _kv_heads(f: _Fields, heads: int) -> int:
    kv = f.int("num_key_value_heads", default=heads)
    if heads % kv:
        raise _BadValue(
            f"config field 'num_key_value_heads' ({kv}) must divide num_attention_heads ({heads})"
        )
    return kv


def _gqa_dims(f: _Fields, tied_default: bool):
    """``(hidden, n_layers, heads, kv_heads, head_dim, vocab, tied)`` of a GQA decoder's config."""
    hidden = f.int("hidden_size")
    n_layers = f.int("num_hidden_layers")
    heads = f.int("num_attention_heads")
    return (
        hidden,
        n_layers,
        heads,
        _kv_heads(f, heads),
        _head_dim(f, hidden, heads),
        f.int("vocab_size"),
        f.bool("tie_word_embeddings", tied_default),
    )


def _heads(kinds, window: int | None, heads: int, kv: int, head_dim: int) -> dict:
    """The per-layer attention and head shape of an MHA/GQA model."""
    width = heads * head_dim
    layers = tuple(
        LayerAttention(
            i, kind, window if kind in ("sliding", "chunked") else None, 2 * kv * head_dim, width, width
        )
        for i, kind in enumerate(kinds)
    )
    return dict(attention=layers, n_heads=heads, n_kv_heads=kv, head_dim=head_dim)


def _all(n: int, kind: str = "full") -> list[str]:
    return [kind] * n


_LAYER_TYPES = {"full_attention": "full", "sliding_attention": "sliding"}


def _kinds_from_layer_types(f: _Fields, n_layers: int, extra=None) -> list[str] | None:
    """``layer_types`` read as kinds; ``extra`` maps the further types a family has (``chunked_attention``...)."""
    layer_types = f.cfg.get("layer_types")
    if layer_types is None:
        return None
    if not isinstance(layer_types, list) or len(layer_types) != n_layers:
        raise _BadValue(f"config field 'layer_types' must list {n_layers} entries, got {layer_types!r}")
    known = {**_LAYER_TYPES, **(extra or {})}
    unknown = set(layer_types) - set(known)
    if unknown:
        raise ValueError(f"cannot count model_type {f.model_type!r} exactly: layer_types {sorted(unknown)}")
    return [known[t] for t in layer_types]


def _window(f: _Fields, kinds) -> int | None:
    if "sliding" not in kinds:
        return None
    window = f.opt_int("sliding_window")
    if window is None:
        raise _BadValue("config field 'sliding_window' must be set when layers are sliding, got null")
    return window


def _sliding_everywhere(f: _Fields, n_layers: int) -> list[str]:
    """Mistral, Mixtral, Phi-3 and StarCoder2: a non-null ``sliding_window`` windows every layer."""
    kinds = _kinds_from_layer_types(f, n_layers)
    if kinds is not None:
        return kinds
    return _all(n_layers, "sliding" if f.opt_int("sliding_window") is not None else "full")


def _qwen_kinds(f: _Fields, n_layers: int) -> list[str]:
    """Qwen2/Qwen3: ``layer_types``, else layers from ``max_window_layers`` on slide if ``use_sliding_window``."""
    kinds = _kinds_from_layer_types(f, n_layers)
    if kinds is not None:
        return kinds
    if f.cfg.get("use_sliding_window") and f.cfg.get("sliding_window") is not None:
        start = f.cfg.get("max_window_layers") or 0
        return ["sliding" if i >= start else "full" for i in range(n_layers)]
    return _all(n_layers)


def _alternating_kinds(f: _Fields, n_layers: int, pattern: int) -> list[str]:
    """Gemma 2 / gpt-oss (pattern 2) and Gemma 3 (pattern 6): layer ``i`` is global when ``(i+1) % pattern == 0``."""
    kinds = _kinds_from_layer_types(f, n_layers)
    if kinds is not None:
        return kinds
    return ["full" if (i + 1) % pattern == 0 else "sliding" for i in range(n_layers)]


def _common(f: _Fields, hidden: int, vocab: int, tied: bool, max_pos_key: str = "max_position_embeddings"):
    return dict(
        hidden_size=hidden,
        vocab_size=vocab,
        tie_word_embeddings=tied,
        max_position_embeddings=f.opt_int(max_pos_key),
    )


def _check_topk(experts: int, k: int):
    if k > experts:
        raise _BadValue(
            f"config field 'num_experts_per_tok' ({k}) must lie in [1, {experts}] (the expert count)"
        )


def _moe(experts: int, k: int, width: int, moe_layers, shared: int = 0) -> dict:
    return dict(
        n_routed_experts=experts,
        n_experts_per_token=k,
        moe_intermediate_size=width,
        moe_layers=tuple(moe_layers),
        n_shared_experts=shared,
    )


def _refuse_bias(f: _Fields):
    for key in ("attention_bias", "mlp_bias"):
        if f.cfg.get(key):
            raise ValueError(f"cannot count model_type {f.model_type!r} exactly: {key} is set")
