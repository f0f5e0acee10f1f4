"""Hybrid token mixers with a fixed-size state: Qwen3-Next and Qwen3.5, dense and MoE (Gated DeltaNet linear
attention beside gated full attention) and Nemotron-H (Mamba-2 beside attention, MLP and MoE blocks).

A linear-attention or Mamba layer caches no tokens. Per request it keeps a convolution state
(``conv_dim`` channels x ``kernel`` taps, as ``transformers``' cache classes hold it) and a
recurrent state (Gated DeltaNet: ``value_heads x key_dim x value_dim``; Mamba-2:
``heads x head_dim x ssm_state_size``), whatever the context
(:func:`aiinfra.memory.state_bytes_per_request`).
"""

from __future__ import annotations

from aiinfra.catalog.architectures.blocks import (
    _check_topk,
    _common,
    _gated_mlp,
    _gqa_dims,
    _linear,
    _moe,
    _norms,
    _t,
    _token_embeddings,
)
from aiinfra.catalog.architectures.core import LayerAttention, _BadValue
from aiinfra.catalog.architectures.dense import _ship
from aiinfra.catalog.architectures.family import Family


def _interval_kinds(f, n_layers: int) -> list[str]:
    """``layer_types`` (full/linear), else one full-attention layer every ``full_attention_interval``."""
    types = f.list("layer_types")
    if types is None:
        interval = f.int("full_attention_interval", default=4)
        return ["full" if (i + 1) % interval == 0 else "linear" for i in range(n_layers)]
    if len(types) != n_layers or set(types) - {"full_attention", "linear_attention"}:
        raise _BadValue(f"config field 'layer_types' must list {n_layers} full/linear_attention entries")
    return ["full" if t == "full_attention" else "linear" for t in types]


def _gated_deltanet(f, p, layers, hidden, fused: bool):
    """Gated DeltaNet rows and ``(conv state, recurrent state)`` elements of one layer."""
    nk, nv = f.int("linear_num_key_heads"), f.int("linear_num_value_heads")
    dk, dv = f.int("linear_key_head_dim"), f.int("linear_value_head_dim")
    kernel = f.int("linear_conv_kernel_dim", default=4)
    key, value = nk * dk, nv * dv
    conv = 2 * key + value
    a = f"{p}linear_attn."
    if fused:  # Qwen3-Next: one qkvz and one ba projection
        rows = [
            _t(f"{a}in_proj_qkvz.weight", "attention", (2 * key + 2 * value, hidden), layers),
            _t(f"{a}in_proj_ba.weight", "attention", (2 * nv, hidden), layers),
        ]
    else:  # Qwen3.5: the same matrices stored apart
        rows = [
            _t(f"{a}in_proj_qkv.weight", "attention", (conv, hidden), layers),
            _t(f"{a}in_proj_z.weight", "attention", (value, hidden), layers),
            _t(f"{a}in_proj_b.weight", "attention", (nv, hidden), layers),
            _t(f"{a}in_proj_a.weight", "attention", (nv, hidden), layers),
        ]
    rows += [
        _t(f"{a}conv1d.weight", "ssm", (conv, 1, kernel), layers),
        _t(f"{a}dt_bias", "ssm", (nv,), layers),
        _t(f"{a}A_log", "ssm", (nv,), layers),
        _t(f"{a}norm.weight", "norm", (dv,), layers),
        _t(f"{a}out_proj.weight", "attention", (hidden, value), layers),
    ]
    return rows, (conv * kernel, nv * dk * dv)


def _qwen_hybrid(f, *, fused: bool, fused_experts: bool = False):
    hidden, n_layers, heads, kv, head_dim, vocab, tied = _gqa_dims(f, False)
    kinds = _interval_kinds(f, n_layers)
    full = tuple(i for i, k in enumerate(kinds) if k == "full")
    linear = tuple(i for i, k in enumerate(kinds) if k == "linear")
    bias = f.bool("attention_bias", False)
    p = "model.layers.{layer}."
    s = f"{p}self_attn."
    rows = _token_embeddings(vocab, hidden, tied, "model.embed_tokens.weight")
    rows += (  # gated attention: q_proj also emits one output gate per query channel
        _linear(f"{s}q_proj", "attention", 2 * heads * head_dim, hidden, full, bias, "attention_bias")
        + _linear(f"{s}k_proj", "attention", kv * head_dim, hidden, full, bias, "attention_bias")
        + _linear(f"{s}v_proj", "attention", kv * head_dim, hidden, full, bias, "attention_bias")
        + _linear(f"{s}o_proj", "attention", hidden, heads * head_dim, full, bias, "attention_bias")
    )
    rows += _norms(s, ("q_norm", "k_norm"), head_dim, full, group="qk_norm")
    gdn, (conv, recurrent) = _gated_deltanet(f, p, linear, hidden, fused)
    rows += gdn
    experts = f.int("num_experts", minimum=0, default=0)
    m, spec = f"{p}mlp.", {}
    moe_layers: tuple[int, ...] = ()
    if experts:
        k = f.int("num_experts_per_tok")
        _check_topk(experts, k)
        step = f.int("decoder_sparse_step", default=1)
        dense_only = set(f.cfg.get("mlp_only_layers") or [])
        moe_layers = tuple(i for i in range(n_layers) if i not in dense_only and (i + 1) % step == 0)
        width, shared = (
            f.int("moe_intermediate_size"),
            f.int("shared_expert_intermediate_size", minimum=0, default=0),
        )
        if fused_experts:  # Qwen3.5-MoE: (experts, 2 x width, hidden) and (experts, hidden, width) tensors
            e = f"{m}experts."
            rows += [
                _t(
                    f"{e}gate_up_proj",
                    "expert",
                    (experts, 2 * width, hidden),
                    moe_layers,
                    layout="experts_out_in",
                ),
                _t(f"{e}down_proj", "expert", (experts, hidden, width), moe_layers, layout="experts_out_in"),
            ]
        else:
            rows += _gated_mlp(
                f"{m}experts.{{expert}}.", moe_layers, hidden, width, group="expert", experts=experts
            )
        rows.append(_t(f"{m}gate.weight", "router", (experts, hidden), moe_layers))
        if shared:
            rows += _gated_mlp(f"{m}shared_expert.", moe_layers, hidden, shared, group="shared_expert")
            rows.append(_t(f"{m}shared_expert_gate.weight", "router", (1, hidden), moe_layers))
        spec = _moe(experts, k, width, moe_layers, 1 if shared else 0)
    dense = tuple(i for i in range(n_layers) if i not in moe_layers)
    dense_width = f.int("intermediate_size") if dense else 0  # Qwen3.5-MoE has no dense layer, nor the field
    rows += _gated_mlp(m, dense, hidden, dense_width)
    rows += _norms(p, ("input_layernorm", "post_attention_layernorm"), hidden, range(n_layers))
    rows += _norms("model.", ("norm",), hidden, ())
    width = heads * head_dim
    attention = tuple(
        LayerAttention(i, "full", None, 2 * kv * head_dim, width, width)
        if kind == "full"
        else LayerAttention(
            i, "linear", None, 0, 0, 0, conv_state_elements=conv, recurrent_state_elements=recurrent
        )
        for i, kind in enumerate(kinds)
    )
    mtp = f.int("mtp_num_hidden_layers", minimum=0, default=0)
    return dict(
        tensors=tuple(rows),
        attention=attention,
        n_heads=heads,
        n_kv_heads=kv,
        head_dim=head_dim,
        intermediate_size=dense_width,
        n_mtp_layers=mtp,
        notes=(f"{mtp} multi-token-prediction layer(s) stored in the checkpoint are not counted",)
        if mtp
        else (),
        **spec,
        **_common(f, hidden, vocab, tied),
    )


def _qwen3_next(f):
    return _qwen_hybrid(f, fused=True)


def _qwen3_5_text(f):
    return _qwen_hybrid(f, fused=False)


def _qwen3_5_moe_text(f):
    return _qwen_hybrid(f, fused=False, fused_experts=True)


_NEMOTRON_BLOCKS = {"M": "mamba", "*": "full", "-": "mlp", "E": "moe"}
_NEMOTRON_TYPES = {"linear_attention": "mamba", "full_attention": "full", "mlp": "mlp", "moe": "moe"}


def _nemotron_blocks(f) -> list[str]:
    types = f.list("layers_block_type") or f.list("layer_types")
    if types is not None:
        if set(types) - set(_NEMOTRON_TYPES):
            raise _BadValue(
                f"config field 'layers_block_type' must hold {sorted(_NEMOTRON_TYPES)}, got {types!r}"
            )
        return [_NEMOTRON_TYPES[t] for t in types]
    pattern = f.cfg.get("hybrid_override_pattern")
    if not isinstance(pattern, str) or not pattern or set(pattern) - set(_NEMOTRON_BLOCKS):
        raise _BadValue(
            f"config field 'hybrid_override_pattern' must be made of M, *, - and E, got {pattern!r}"
        )
    return [_NEMOTRON_BLOCKS[c] for c in pattern]


def _nemotron_h(f):
    """Nemotron-H: each block is one norm and one mixer: Mamba-2, attention, a squared-ReLU MLP or a MoE."""
    blocks = _nemotron_blocks(f)
    hidden, vocab = f.int("hidden_size"), f.int("vocab_size")
    tied = f.bool("tie_word_embeddings", False)
    heads, kv, head_dim = f.int("num_attention_heads"), f.int("num_key_value_heads"), f.int("head_dim")
    if f.cfg.get("moe_latent_size"):
        raise ValueError("cannot count model_type 'nemotron_h' exactly: moe_latent_size is set")
    of = {kind: tuple(i for i, b in enumerate(blocks) if b == kind) for kind in _NEMOTRON_BLOCKS.values()}
    p = "model.layers.{layer}."
    x = f"{p}mixer."
    rows = _token_embeddings(vocab, hidden, tied, "model.embeddings.weight")
    rows += _norms(p, ("norm",), hidden, range(len(blocks)))
    rows += _norms("model.", ("norm_f",), hidden, ())
    # Mamba-2
    n, d, state = f.int("mamba_num_heads"), f.int("mamba_head_dim"), f.int("ssm_state_size")
    groups, kernel = f.int("n_groups"), f.int("conv_kernel")
    inner = n * d
    conv = inner + 2 * groups * state
    m = of["mamba"]
    use_bias, conv_bias = f.bool("use_bias", False), f.bool("use_conv_bias", True)
    rows += _linear(f"{x}in_proj", "attention", inner + conv + n, hidden, m, use_bias, "attention_bias")
    rows += [_t(f"{x}conv1d.weight", "ssm", (conv, 1, kernel), m)]
    rows += [_t(f"{x}conv1d.bias", "ssm", (conv,), m)] if conv_bias else []
    rows += [_t(f"{x}{name}", "ssm", (n,), m) for name in ("dt_bias", "A_log", "D")]
    rows += [_t(f"{x}norm.weight", "norm", (inner,), m)]
    rows += _linear(f"{x}out_proj", "attention", hidden, inner, m, use_bias, "attention_bias")
    # attention
    a = of["full"]
    rows += [
        _t(f"{x}q_proj.weight", "attention", (heads * head_dim, hidden), a),
        _t(f"{x}k_proj.weight", "attention", (kv * head_dim, hidden), a),
        _t(f"{x}v_proj.weight", "attention", (kv * head_dim, hidden), a),
        _t(f"{x}o_proj.weight", "attention", (hidden, heads * head_dim), a),
    ]
    # MLP (up, down; squared ReLU)
    width, mlp_bias = f.int("intermediate_size"), f.bool("mlp_bias", False)
    rows += _linear(f"{x}up_proj", "mlp", width, hidden, of["mlp"], mlp_bias, "mlp_bias")
    rows += _linear(f"{x}down_proj", "mlp", hidden, width, of["mlp"], mlp_bias, "mlp_bias")
    spec = {}
    if of["moe"]:
        e, k = f.int("n_routed_experts"), f.int("num_experts_per_tok")
        _check_topk(e, k)
        ew, sw = (
            f.int("moe_intermediate_size"),
            f.int("moe_shared_expert_intermediate_size", minimum=0, default=0),
        )
        me = of["moe"]
        rows += [
            _t(f"{x}experts.{{expert}}.up_proj.weight", "expert", (ew, hidden), me, experts=e),
            _t(f"{x}experts.{{expert}}.down_proj.weight", "expert", (hidden, ew), me, experts=e),
            _t(f"{x}gate.weight", "router", (e, hidden), me),
            _t(f"{x}gate.e_score_correction_bias", "router_bias", (e,), me),
        ]
        if sw:
            rows += [
                _t(f"{x}shared_experts.up_proj.weight", "shared_expert", (sw, hidden), me),
                _t(f"{x}shared_experts.down_proj.weight", "shared_expert", (hidden, sw), me),
            ]
        spec = _moe(e, k, ew, me, 1 if sw else 0)
    width_qk = heads * head_dim

    def layer(i, kind):
        if kind == "full":
            return LayerAttention(i, "full", None, 2 * kv * head_dim, width_qk, width_qk)
        if kind == "mamba":
            return LayerAttention(
                i,
                "mamba",
                None,
                0,
                0,
                0,
                conv_state_elements=conv * kernel,
                recurrent_state_elements=n * d * state,
            )
        return LayerAttention(i, "none", None, 0, 0, 0)

    mtp = f.int("num_nextn_predict_layers", minimum=0, default=0)
    return dict(
        tensors=tuple(rows),
        attention=tuple(layer(i, b) for i, b in enumerate(blocks)),
        n_heads=heads,
        n_kv_heads=kv,
        head_dim=head_dim,
        intermediate_size=width,
        n_mtp_layers=mtp,
        notes=(
            f"{len(blocks)} blocks: {len(m)} Mamba-2, {len(a)} attention, {len(of['mlp'])} MLP, "
            f"{len(of['moe'])} MoE",
        ),
        **spec,
        **_common(f, hidden, vocab, tied),
    )


_GDN = frozenset({"linear_num_value_heads"})

FAMILIES = (
    Family(
        "qwen3_next",
        _qwen3_next,
        "Gated DeltaNet linear attention in three layers of four (a fixed state per request), gated full "
        "attention with q/k norms in the fourth; 512 experts plus a gated shared expert",
        _ship(("Qwen3-Next-80B-A3B-Instruct", "Qwen/Qwen3-Next-80B-A3B-Instruct", True)),
        allowed=_GDN | {"num_experts", "shared_expert_intermediate_size"},
        defaults={
            "num_key_value_heads": 2,
            "head_dim": 256,
            "num_experts": 512,
            "shared_expert_intermediate_size": 512,
        },
        architectures=("Qwen3NextForCausalLM",),
    ),
    Family(
        "qwen3_5_text",
        _qwen3_5_text,
        "Qwen3-Next's hybrid of Gated DeltaNet and gated attention with its projections stored apart; "
        "a dense MLP (the release wraps it in a vision-language model)",
        _ship(("Qwen3.5-27B", "Qwen/Qwen3.5-27B", True)),
        allowed=_GDN,
        defaults={"num_key_value_heads": 4, "head_dim": 256},
        architectures=("Qwen3_5ForCausalLM",),
        wrappers=("qwen3_5",),
    ),
    Family(
        "qwen3_5_moe_text",
        _qwen3_5_moe_text,
        "Qwen3.5's hybrid layers with Qwen3-Next's experts and gated shared expert in every layer, the routed "
        "experts stored as two fused tensors (the release wraps it in a vision-language model)",
        # Written from the full printout of the loaded config (transformers 5.7.0) in a public model report,
        # not from the file; the report's checkpoint listing shows the fused expert tensors.
        _ship(("Qwen3.5-35B-A3B", "Qwen/Qwen3.5-35B-A3B", True)),
        allowed=_GDN | {"num_experts", "shared_expert_intermediate_size"},
        defaults={
            "num_key_value_heads": 2,
            "head_dim": 256,
            "num_experts": 256,
            "shared_expert_intermediate_size": 512,
        },
        architectures=("Qwen3_5MoeForCausalLM",),
    ),
    Family(
        "nemotron_h",
        _nemotron_h,
        "one mixer per block: Mamba-2 (a fixed conv + SSM state per request), GQA attention, a squared-ReLU "
        "MLP or a MoE, in the order of hybrid_override_pattern",
        _ship(("Nemotron-H-8B-Base-8K", "nvidia/Nemotron-H-8B-Base-8K", True)),
        allowed=frozenset({"mamba_num_heads", "n_routed_experts", "n_shared_experts"}),
        defaults={"num_key_value_heads": 8, "head_dim": 128, "moe_shared_expert_intermediate_size": 7688},
        architectures=("NemotronHForCausalLM",),
    ),
)
