"""Gemma 1 to 4: a tied head, head_dim set apart from the hidden size, four norms a layer from Gemma 2 on."""

from __future__ import annotations

from aiinfra.catalog.architectures.blocks import (
    _alternating_kinds,
    _check_topk,
    _common,
    _gated_mlp,
    _kv_heads,
    _linear,
    _moe,
    _norms,
    _refuse_bias,
    _t,
    _token_embeddings,
    _window,
)
from aiinfra.catalog.architectures.core import LayerAttention, _BadValue, _whole
from aiinfra.catalog.architectures.dense import _llama_like, _ship
from aiinfra.catalog.architectures.family import Family


def _gemma(f):
    _refuse_bias(f)
    return _llama_like(f, tied_default=True)


_GEMMA2_NORMS = (
    "input_layernorm",
    "post_attention_layernorm",
    "pre_feedforward_layernorm",
    "post_feedforward_layernorm",
)


def _gemma2(f):
    _refuse_bias(f)
    return _llama_like(
        f, norm_names=_GEMMA2_NORMS, tied_default=True, kinds_fn=lambda f, n: _alternating_kinds(f, n, 2)
    )


def _gemma3_text(f):
    _refuse_bias(f)
    pattern = f.cfg.get("sliding_window_pattern") or f.cfg.get("_sliding_window_pattern")
    pattern = (
        _whole("sliding_window_pattern", pattern, 1)
        if pattern is not None
        else f.int("sliding_window_pattern")
    )
    return _llama_like(
        f,
        norm_names=_GEMMA2_NORMS,
        qk_norm="head",
        tied_default=True,
        kinds_fn=lambda f, n: _alternating_kinds(f, n, pattern),
    )


def _gemma4_refusals(f):
    """The Gemma 4 variants this count does not cover yet: it refuses them rather than guess."""
    _refuse_bias(f)
    if f.int("hidden_size_per_layer_input", minimum=0):
        raise ValueError(
            f"cannot count model_type {f.model_type!r} exactly: per-layer embeddings "
            f"(hidden_size_per_layer_input, Gemma 4 E2B/E4B) are not counted yet"
        )
    if f.int("num_kv_shared_layers", minimum=0):
        raise ValueError(
            f"cannot count model_type {f.model_type!r} exactly: layers sharing another layer's KV "
            f"(num_kv_shared_layers) are not counted yet"
        )
    if f.cfg.get("per_layer_config") is not None or f.cfg.get("use_bidirectional_attention") == "all":
        raise ValueError(
            f"cannot count model_type {f.model_type!r} exactly: per_layer_config or "
            f"use_bidirectional_attention='all' is set"
        )


def _gemma4_layer(f, kind: str, heads: int) -> tuple[int, int, bool]:
    """``(kv_heads, head_dim, values)`` of one layer: full layers have their own width, and with
    ``attention_k_eq_v`` their own KV heads and no value projection (the keys are reused as values)."""
    if kind == "sliding":
        return _kv_heads(f, heads), f.int("head_dim"), True
    k_eq_v = f.bool("attention_k_eq_v", False)
    global_kv = f.opt_int("num_global_key_value_heads")
    kv = global_kv if k_eq_v and global_kv is not None else _kv_heads(f, heads)
    if heads % kv:
        raise _BadValue(f"config field 'num_global_key_value_heads' ({kv}) must divide num_attention_heads")
    return kv, f.int("global_head_dim"), not k_eq_v


def _gemma4_moe(f, p: str, hidden: int, layers) -> tuple[list, dict]:
    """The experts a Gemma 4 MoE layer runs beside its dense MLP: a router with a scale per channel and
    per expert, fused (experts, out, in) matrices, and three more norms."""
    experts, k = f.int("num_experts"), f.int("top_k_experts")
    width = f.int("moe_intermediate_size")
    _check_topk(experts, k)
    fused = "experts_out_in"
    rows = [
        _t(f"{p}router.proj.weight", "router", (experts, hidden), layers),
        _t(f"{p}router.scale", "router", (hidden,), layers),
        _t(f"{p}router.per_expert_scale", "router", (experts,), layers),
        _t(f"{p}experts.gate_up_proj", "expert", (experts, 2 * width, hidden), layers, layout=fused),
        _t(f"{p}experts.down_proj", "expert", (experts, hidden, width), layers, layout=fused),
    ]
    norms = ("post_feedforward_layernorm_1", "post_feedforward_layernorm_2", "pre_feedforward_layernorm_2")
    return rows + _norms(p, norms, hidden, layers), _moe(experts, k, width, layers)


def _gemma4_text(f):
    """Gemma 4: sliding layers of ``head_dim`` and full layers of ``global_head_dim`` (modeling_gemma4).

    Every layer has Gemma 3's four norms and q/k norms (the value norm holds no weight), a dense
    gated MLP and a persistent ``layer_scalar``; with ``enable_moe_block`` the same layer also runs
    ``num_experts`` fused experts beside the dense MLP, behind a router with its own scales.
    """
    _gemma4_refusals(f)
    hidden, n_layers, heads = f.int("hidden_size"), f.int("num_hidden_layers"), f.int("num_attention_heads")
    vocab, tied = f.int("vocab_size"), f.bool("tie_word_embeddings", True)
    kinds = _alternating_kinds(f, n_layers, 6)
    kinds[-1] = "full"  # transformers forces the last layer to full attention
    p = "model.layers.{layer}."
    rows = _token_embeddings(vocab, hidden, tied, "model.embed_tokens.weight")
    window = _window(f, kinds)
    attention, shapes = [], {}
    for i, kind in enumerate(kinds):
        kv, head_dim, values = _gemma4_layer(f, kind, heads)
        shapes.setdefault((kv, head_dim, values), []).append(i)
        qk = heads * head_dim  # the cache holds keys and values, also when the values are the keys
        attention.append(
            LayerAttention(i, kind, window if kind == "sliding" else None, 2 * kv * head_dim, qk, qk)
        )
    for (kv, head_dim, values), layers in shapes.items():
        a = f"{p}self_attn."
        rows += _linear(f"{a}q_proj", "attention", heads * head_dim, hidden, layers, False, "")
        rows += _linear(f"{a}k_proj", "attention", kv * head_dim, hidden, layers, False, "")
        if values:
            rows += _linear(f"{a}v_proj", "attention", kv * head_dim, hidden, layers, False, "")
        rows += _linear(f"{a}o_proj", "attention", hidden, heads * head_dim, layers, False, "")
        rows += _norms(a, ("q_norm", "k_norm"), head_dim, layers, group="qk_norm")
    every = range(n_layers)
    width = f.int("intermediate_size")
    rows += _gated_mlp(f"{p}mlp.", every, hidden, width)
    rows += _norms(p, _GEMMA2_NORMS, hidden, every)
    rows.append(_t(f"{p}layer_scalar", "norm", (1,), every))
    moe: dict = {}
    if f.bool("enable_moe_block", False):
        moe_rows, moe = _gemma4_moe(f, p, hidden, every)
        rows += moe_rows
    rows += _norms("model.", ("norm",), hidden, ())
    return dict(
        tensors=tuple(rows),
        intermediate_size=width,
        attention=tuple(attention),
        n_heads=heads,
        n_kv_heads=_kv_heads(f, heads),  # the sliding layers'; the full layers' cache is given apart
        head_dim=f.int("head_dim"),
        full_kv_elements_per_token=attention[-1].kv_elements_per_token,
        **moe,
        **_common(f, hidden, vocab, tied),
    )


FAMILIES = (
    Family(
        "gemma",
        _gemma,
        "head_dim set apart from the hidden size, a tied head",
        _ship(("gemma-2b", "google/gemma-2b", True)),
        tied=True,
        defaults={"num_key_value_heads": 16, "head_dim": 256},
        architectures=("GemmaForCausalLM",),
    ),
    Family(
        "gemma2",
        _gemma2,
        "four RMSNorms a layer; sliding and global layers alternate",
        _ship(("gemma-2-2b-it", "google/gemma-2-2b-it")),
        tied=True,
        defaults={"num_key_value_heads": 4, "head_dim": 256, "sliding_window": 4096},
        architectures=("Gemma2ForCausalLM",),
    ),
    Family(
        "gemma3_text",
        _gemma3_text,
        "Gemma 2's norms plus q/k norms; one global layer in every sliding_window_pattern",
        _ship(("gemma-3-1b-it", "google/gemma-3-1b-it", True), ("gemma-3-4b-it", "google/gemma-3-4b-it")),
        tied=True,
        defaults=dict(
            vocab_size=262_208,
            hidden_size=2304,
            intermediate_size=9216,
            num_hidden_layers=26,
            num_attention_heads=8,
            num_key_value_heads=4,
            head_dim=256,
            max_position_embeddings=131_072,
            sliding_window=4096,
            sliding_window_pattern=6,
        ),
        architectures=("Gemma3ForCausalLM",),
        wrappers=("gemma3",),
    ),
    Family(
        "gemma4_text",
        _gemma4_text,
        "sliding layers of head_dim and full layers of global_head_dim (with attention_k_eq_v: their own KV "
        "heads, keys reused as values); with enable_moe_block a dense MLP beside fused experts in every layer",
        # Byte for byte from a public copy of the MLX 4-bit conversion's config.json: Layr-Labs/
        # mlxfast-gemma4-26b-a4b-engine, fixtures/gemma4_26b_a4b_config.json at 0afae954; its text_config
        # is google/gemma-4-26B-A4B-it's (the quantization block changes how weights are stored, not a shape).
        # gemma-4-31B-it (dense) is written from a full printout of its loaded config in a public model
        # report (the "Gemma4Config {...}" of a transformers 5.7.0 session), not from the file itself.
        _ship(
            ("gemma-4-26b-a4b-it-4bit", "mlx-community/gemma-4-26b-a4b-it-4bit"),
            ("gemma-4-31B-it", "google/gemma-4-31B-it", True),
        ),
        tied=True,
        defaults=dict(
            vocab_size=262_144,
            hidden_size=2304,
            intermediate_size=9216,
            num_hidden_layers=30,
            num_attention_heads=8,
            num_key_value_heads=4,
            head_dim=256,
            global_head_dim=512,
            max_position_embeddings=131_072,
            sliding_window=512,
            hidden_size_per_layer_input=256,
            num_kv_shared_layers=0,
        ),
        allowed=frozenset({"num_experts", "top_k_experts"}),
        architectures=("Gemma4ForCausalLM",),
        wrappers=("gemma4",),
    ),
)
