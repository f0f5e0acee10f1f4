"""Mixtures of experts with GQA attention: Mixtral, Qwen3-MoE, gpt-oss, GLM-4.5 (glm4_moe), MiniMax-M2, Llama 4."""

from __future__ import annotations

from aiinfra.catalog.architectures.blocks import (
    _all,
    _alternating_kinds,
    _check_topk,
    _common,
    _gated_mlp,
    _gqa,
    _gqa_dims,
    _heads,
    _kinds_from_layer_types,
    _kv_heads,
    _moe,
    _norms,
    _refuse_bias,
    _sliding_everywhere,
    _t,
    _token_embeddings,
    _window,
)
from aiinfra.catalog.architectures.dense import _llama_like, _qwen3, _ship
from aiinfra.catalog.architectures.family import Family


def _mixtral(f):
    _refuse_bias(f)
    spec = _llama_like(f, kinds_fn=_sliding_everywhere)
    n_layers, hidden = f.int("num_hidden_layers"), f.int("hidden_size")
    experts, k = f.int("num_local_experts"), f.int("num_experts_per_tok")
    _check_topk(experts, k)
    width = f.int("intermediate_size")
    layers, p = range(n_layers), "model.layers.{layer}.block_sparse_moe."
    dense = tuple(t for t in spec["tensors"] if t.group != "mlp")
    moe = _gated_mlp(
        f"{p}experts.{{expert}}.",
        layers,
        hidden,
        width,
        group="expert",
        names=("w1", "w3", "w2"),
        experts=experts,
    )
    moe += [_t(f"{p}gate.weight", "router", (experts, hidden), layers)]
    return dict(spec, tensors=dense + tuple(moe), **_moe(experts, k, width, layers))


def _qwen3_moe(f):
    spec = _qwen3(f)
    n_layers, hidden = f.int("num_hidden_layers"), f.int("hidden_size")
    experts, k = f.int("num_experts"), f.int("num_experts_per_tok")
    _check_topk(experts, k)
    step = f.int("decoder_sparse_step", default=1)
    dense_only = set(f.cfg.get("mlp_only_layers") or [])
    moe_layers = tuple(i for i in range(n_layers) if i not in dense_only and (i + 1) % step == 0)
    dense_layers = tuple(i for i in range(n_layers) if i not in moe_layers)
    width = f.int("moe_intermediate_size")
    rows = [t for t in spec["tensors"] if t.group != "mlp"]
    p = "model.layers.{layer}.mlp."
    if dense_layers:
        rows += _gated_mlp(p, dense_layers, hidden, f.int("intermediate_size"))
    rows += _gated_mlp(f"{p}experts.{{expert}}.", moe_layers, hidden, width, group="expert", experts=experts)
    rows += [_t(f"{p}gate.weight", "router", (experts, hidden), moe_layers)]
    return dict(spec, tensors=tuple(rows), **_moe(experts, k, width, moe_layers))


def _gpt_oss(f):
    hidden = f.int("hidden_size")
    n_layers = f.int("num_hidden_layers")
    heads = f.int("num_attention_heads")
    kv = _kv_heads(f, heads)
    head_dim = f.int("head_dim")
    vocab = f.int("vocab_size")
    tied = f.bool("tie_word_embeddings", False)
    bias = f.bool("attention_bias", True)
    experts = f.int("num_local_experts")
    k = f.int("num_experts_per_tok", default=f.cfg.get("experts_per_token"))
    _check_topk(experts, k)
    width = f.int("intermediate_size")
    layers, p = range(n_layers), "model.layers.{layer}."
    rows = _token_embeddings(vocab, hidden, tied, "model.embed_tokens.weight")
    rows += _gqa(p, layers, hidden, heads, kv, head_dim, qkv_bias=bias, o_bias=bias)
    rows.append(_t(f"{p}self_attn.sinks", "attention_sink", (heads,), layers))
    fused = "experts_in_out"  # fused experts: (experts, in, out) weights and (experts, out) biases
    rows += [
        _t(f"{p}mlp.router.weight", "router", (experts, hidden), layers),
        _t(f"{p}mlp.router.bias", "router_bias", (experts,), layers),
        _t(f"{p}mlp.experts.gate_up_proj", "expert", (experts, hidden, 2 * width), layers, layout=fused),
        _t(f"{p}mlp.experts.gate_up_proj_bias", "expert_bias", (experts, 2 * width), layers),
        _t(f"{p}mlp.experts.down_proj", "expert", (experts, width, hidden), layers, layout=fused),
        _t(f"{p}mlp.experts.down_proj_bias", "expert_bias", (experts, hidden), layers),
    ]
    rows += _norms(p, ("input_layernorm", "post_attention_layernorm"), hidden, layers)
    rows += _norms("model.", ("norm",), hidden, ())
    kinds = _alternating_kinds(f, n_layers, 2)
    return dict(
        tensors=tuple(rows),
        intermediate_size=width,
        **_heads(kinds, _window(f, kinds), heads, kv, head_dim),
        **_moe(experts, k, width, layers),
        **_common(f, hidden, vocab, tied),
    )


def _routed(f, p, layers, hidden, experts, width, *, shared=0, shared_name="shared_experts", bias=False):
    """Routed experts, a linear router, optional shared experts and DeepSeek-style score-correction bias."""
    rows = _gated_mlp(f"{p}experts.{{expert}}.", layers, hidden, width, group="expert", experts=experts)
    if shared:
        rows += _gated_mlp(f"{p}{shared_name}.", layers, hidden, shared, group="shared_expert")
    rows.append(_t(f"{p}gate.weight", "router", (experts, hidden), layers))
    if bias:
        rows.append(_t(f"{p}gate.e_score_correction_bias", "router_bias", (experts,), layers))
    return rows


def _glm4_moe(f):
    """GLM-4.5: biased q/k/v, optional q/k norms, shared + routed experts after first_k_dense_replace dense layers."""
    hidden, n_layers, heads, kv, head_dim, vocab, tied = _gqa_dims(f, False)
    bias = f.bool("attention_bias", False)
    layers, p = range(n_layers), "model.layers.{layer}."
    rows = _token_embeddings(vocab, hidden, tied, "model.embed_tokens.weight")
    rows += _gqa(p, layers, hidden, heads, kv, head_dim, qkv_bias=bias)
    if f.bool("use_qk_norm", False):
        rows += _norms(f"{p}self_attn.", ("q_norm", "k_norm"), head_dim, layers, group="qk_norm")
    experts, k = f.int("n_routed_experts"), f.int("num_experts_per_tok")
    _check_topk(experts, k)
    first_dense = f.int("first_k_dense_replace", minimum=0, default=0)
    moe_layers = tuple(i for i in layers if i >= first_dense)
    dense_layers = tuple(i for i in layers if i < first_dense)
    width, dense_width = f.int("moe_intermediate_size"), f.int("intermediate_size")
    shared = f.int("n_shared_experts", minimum=0, default=0)
    rows += _gated_mlp(f"{p}mlp.", dense_layers, hidden, dense_width)
    rows += _routed(f, f"{p}mlp.", moe_layers, hidden, experts, width, shared=width * shared, bias=True)
    rows += _norms(p, ("input_layernorm", "post_attention_layernorm"), hidden, layers)
    rows += _norms("model.", ("norm",), hidden, ())
    mtp = f.int("num_nextn_predict_layers", minimum=0, default=0)
    kinds = _all(n_layers)
    return dict(
        tensors=tuple(rows),
        intermediate_size=dense_width,
        n_mtp_layers=mtp,
        notes=_mtp_note(mtp),
        **_heads(kinds, None, heads, kv, head_dim),
        **_moe(experts, k, width, moe_layers, shared),
        **_common(f, hidden, vocab, tied),
    )


def _mtp_note(n: int) -> tuple[str, ...]:
    return (f"{n} multi-token-prediction layer(s) stored in the checkpoint are not counted",) if n else ()


def _minimax_m2(f):
    """MiniMax-M2: q/k norms over the whole projection, every layer a sigmoid-routed MoE with a correction bias."""
    hidden, n_layers, heads, kv, head_dim, vocab, tied = _gqa_dims(f, False)
    layers, p = range(n_layers), "model.layers.{layer}."
    rows = _token_embeddings(vocab, hidden, tied, "model.embed_tokens.weight")
    rows += _gqa(p, layers, hidden, heads, kv, head_dim)
    rows += [
        _t(f"{p}self_attn.q_norm.weight", "qk_norm", (heads * head_dim,), layers),
        _t(f"{p}self_attn.k_norm.weight", "qk_norm", (kv * head_dim,), layers),
    ]
    experts, k = f.int("num_local_experts"), f.int("num_experts_per_tok")
    _check_topk(experts, k)
    width = f.int("intermediate_size")
    rows += _routed(f, f"{p}block_sparse_moe.", layers, hidden, experts, width, bias=True)
    rows += _norms(p, ("input_layernorm", "post_attention_layernorm"), hidden, layers)
    rows += _norms("model.", ("norm",), hidden, ())
    mtp = f.int("num_mtp_modules", minimum=0, default=0)
    return dict(
        tensors=tuple(rows),
        intermediate_size=width,
        n_mtp_layers=mtp,
        notes=_mtp_note(mtp),
        **_heads(_all(n_layers), None, heads, kv, head_dim),
        **_moe(experts, k, width, layers),
        **_common(f, hidden, vocab, tied),
    )


def _llama4_text(f):
    """Llama 4: MoE layers (a shared expert plus top-k routed ones) every interleave step, chunked RoPE layers."""
    hidden, n_layers, heads, kv, head_dim, vocab, tied = _gqa_dims(f, False)
    bias = f.bool("attention_bias", False)
    layers, p = range(n_layers), "model.layers.{layer}."
    rows = _token_embeddings(vocab, hidden, tied, "model.embed_tokens.weight")
    rows += _gqa(p, layers, hidden, heads, kv, head_dim, qkv_bias=bias, o_bias=bias)
    experts, k = f.int("num_local_experts"), f.int("num_experts_per_tok")
    _check_topk(experts, k)
    step = f.int("interleave_moe_layer_step", default=1)
    moe_layers = tuple(f.cfg.get("moe_layers") or range(step - 1, n_layers, step))
    dense_layers = tuple(i for i in layers if i not in moe_layers)
    width, dense_width = f.int("intermediate_size"), f.int("intermediate_size_mlp")
    m = f"{p}feed_forward."
    rows += _gated_mlp(m, dense_layers, hidden, dense_width)
    rows += _gated_mlp(f"{m}experts.{{expert}}.", moe_layers, hidden, width, group="expert", experts=experts)
    rows += _gated_mlp(f"{m}shared_expert.", moe_layers, hidden, width, group="shared_expert")
    rows.append(_t(f"{m}router.weight", "router", (experts, hidden), moe_layers))
    rows += _norms(p, ("input_layernorm", "post_attention_layernorm"), hidden, layers)
    rows += _norms("model.", ("norm",), hidden, ())
    kinds = _kinds_from_layer_types(f, n_layers, extra={"chunked_attention": "chunked"})
    if kinds is None:
        interval = f.int("no_rope_layer_interval", default=4)
        rope = f.cfg.get("no_rope_layers") or [int((i + 1) % interval != 0) for i in layers]
        chunk = f.opt_int("attention_chunk_size")
        kinds = ["chunked" if r and chunk is not None else "full" for r in rope]
    window = f.int("attention_chunk_size") if "chunked" in kinds else None
    return dict(
        tensors=tuple(rows),
        intermediate_size=dense_width,
        **_heads(kinds, window, heads, kv, head_dim),
        **_moe(experts, k, width, moe_layers, 1),
        **_common(f, hidden, vocab, tied),
    )


FAMILIES = (
    Family(
        "mixtral",
        _mixtral,
        "Mistral attention; every layer holds 8 gated experts (w1, w3, w2) and a linear router",
        _ship(("Mixtral-8x7B-v0.1", "mistralai/Mixtral-8x7B-v0.1")),
        allowed=frozenset({"num_local_experts"}),
        defaults={"num_key_value_heads": 8},
        architectures=("MixtralForCausalLM",),
    ),
    Family(
        "qwen3_moe",
        _qwen3_moe,
        "Qwen3 attention; expert layers chosen by decoder_sparse_step and mlp_only_layers",
        _ship(("Qwen3-30B-A3B", "Qwen/Qwen3-30B-A3B")),
        allowed=frozenset({"num_experts"}),
        defaults={"num_key_value_heads": 4, "num_experts": 128},
        architectures=("Qwen3MoeForCausalLM",),
    ),
    Family(
        "gpt_oss",
        _gpt_oss,
        "biased attention with a learned sink per head, fused biased experts stored (E, in, out), a biased "
        "router; a 128-token window on every other layer",
        _ship(("gpt-oss-20b", "openai/gpt-oss-20b")),
        defaults={"num_key_value_heads": 8, "head_dim": 64, "sliding_window": 128},
        allowed=frozenset({"num_local_experts"}),
        architectures=("GptOssForCausalLM",),
    ),
    Family(
        "glm4_moe",
        _glm4_moe,
        "biased q/k/v, a shared expert beside sigmoid-routed ones with a score-correction bias after "
        "first_k_dense_replace dense layers; the MTP layer is not counted",
        _ship(("GLM-4.5-Air", "zai-org/GLM-4.5-Air", True)),
        allowed=frozenset({"n_routed_experts", "n_shared_experts"}),
        defaults={"num_key_value_heads": 8, "first_k_dense_replace": 1, "n_shared_experts": 1},
        architectures=("Glm4MoeForCausalLM",),
    ),
    Family(
        "minimax_m2",
        _minimax_m2,
        "q/k norms as wide as the whole projection, every layer a routed MoE with a score-correction bias; "
        "the MTP modules are not counted",
        _ship(("MiniMax-M2", "MiniMaxAI/MiniMax-M2", True)),
        allowed=frozenset({"num_local_experts"}),
        defaults={"num_key_value_heads": 8, "head_dim": 128},
        architectures=("MiniMaxM2ForCausalLM",),
    ),
    Family(
        "llama4_text",
        _llama4_text,
        "MoE layers with one shared expert beside the routed ones, every interleave_moe_layer_step; "
        "RoPE layers attend within chunks, every fourth (NoPE) layer to the whole context; weightless q/k norms",
        _ship(("Llama-4-Scout-17B-16E", "meta-llama/Llama-4-Scout-17B-16E", True)),
        allowed=frozenset({"num_local_experts"}),
        defaults={"num_key_value_heads": 8, "head_dim": 128, "attention_chunk_size": 8192},
        architectures=("Llama4ForCausalLM",),
        wrappers=("llama4",),
    ),
)
