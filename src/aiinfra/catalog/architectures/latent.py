"""Latent attention (MLA): DeepSeek-V2/V3, Kimi K2 (a DeepSeek-V3 checkpoint), GLM-5 and DeepSeek-V3.2 (sparse
attention, DSA)."""

from __future__ import annotations

from aiinfra.catalog.architectures.blocks import (
    _check_topk,
    _common,
    _gated_mlp,
    _moe,
    _norms,
    _t,
    _token_embeddings,
)
from aiinfra.catalog.architectures.core import LayerAttention, _BadValue
from aiinfra.catalog.architectures.dense import _ship
from aiinfra.catalog.architectures.family import Family


def _deepseek(f, indexer=False):
    """DeepSeek-V2/V3: multi-head latent attention, shared + routed experts, the first k layers dense.

    ``indexer``: GLM-5's DeepSeek sparse attention, whose indexer layers add a small query/key
    projection (and cache one ``index_head_dim`` key per token) to pick the tokens attention reads.
    """
    if f.cfg.get("attention_bias"):
        raise ValueError(
            f"cannot count model_type {f.model_type!r} exactly: attention_bias on MLA projections"
        )
    hidden = f.int("hidden_size")
    n_layers = f.int("num_hidden_layers")
    heads = f.int("num_attention_heads")
    vocab = f.int("vocab_size")
    tied = f.bool("tie_word_embeddings", False)
    q_rank = f.opt_int("q_lora_rank")
    kv_rank = f.int("kv_lora_rank")
    nope, rope, v_dim = f.int("qk_nope_head_dim"), f.int("qk_rope_head_dim"), f.int("v_head_dim")
    layers, p = range(n_layers), "model.layers.{layer}."
    a = f"{p}self_attn."
    rows = _token_embeddings(vocab, hidden, tied, "model.embed_tokens.weight")
    if q_rank is None:
        rows.append(_t(f"{a}q_proj.weight", "attention", (heads * (nope + rope), hidden), layers))
    else:
        rows += [
            _t(f"{a}q_a_proj.weight", "attention", (q_rank, hidden), layers),
            _t(f"{a}q_a_layernorm.weight", "norm", (q_rank,), layers),
            _t(f"{a}q_b_proj.weight", "attention", (heads * (nope + rope), q_rank), layers),
        ]
    rows += [
        _t(f"{a}kv_a_proj_with_mqa.weight", "attention", (kv_rank + rope, hidden), layers),
        _t(f"{a}kv_a_layernorm.weight", "norm", (kv_rank,), layers),
        _t(f"{a}kv_b_proj.weight", "attention", (heads * (nope + v_dim), kv_rank), layers),
        _t(f"{a}o_proj.weight", "attention", (hidden, heads * v_dim), layers),
    ]
    experts, k = f.int("n_routed_experts"), f.int("num_experts_per_tok")
    _check_topk(experts, k)
    first_dense = f.int("first_k_dense_replace", minimum=0, default=0)
    freq = f.int("moe_layer_freq", default=1)
    kinds = f.list("mlp_layer_types")
    if kinds is not None:
        moe_layers = tuple(i for i in layers if kinds[i] == "sparse")
    else:
        moe_layers = tuple(i for i in layers if i >= first_dense and i % freq == 0)
    dense_layers = tuple(i for i in layers if i not in moe_layers)
    m = f"{p}mlp."
    dense_width = f.int("intermediate_size")
    if dense_layers:
        rows += _gated_mlp(m, dense_layers, hidden, dense_width)
    width = f.int("moe_intermediate_size")
    rows += _gated_mlp(f"{m}experts.{{expert}}.", moe_layers, hidden, width, group="expert", experts=experts)
    shared = f.int("n_shared_experts", minimum=0, default=0)
    if shared:
        rows += _gated_mlp(f"{m}shared_experts.", moe_layers, hidden, width * shared, group="shared_expert")
    rows.append(_t(f"{m}gate.weight", "router", (experts, hidden), moe_layers))
    if indexer or f.cfg.get("topk_method") == "noaux_tc":  # DeepSeek-V3's per-expert score correction
        rows.append(_t(f"{m}gate.e_score_correction_bias", "router_bias", (experts,), moe_layers))
    rows += _norms(p, ("input_layernorm", "post_attention_layernorm"), hidden, layers)
    rows += _norms("model.", ("norm",), hidden, ())
    mtp = f.int("num_nextn_predict_layers", minimum=0, default=0)
    notes = (
        (f"{mtp} multi-token-prediction layer(s) stored in the checkpoint are not counted",) if mtp else ()
    )
    index_layers, index_dim = _indexer(f, layers, hidden, q_rank) if indexer else ((), 0)
    if indexer:
        i = f"{a}indexer."
        n_idx = f.int("index_n_heads")
        rows += [
            _t(f"{i}wq_b.weight", "attention", (n_idx * index_dim, q_rank), index_layers),
            _t(f"{i}wk.weight", "attention", (index_dim, hidden), index_layers),
            _t(f"{i}k_norm.weight", "qk_norm", (index_dim,), index_layers),
            _t(f"{i}k_norm.bias", "qk_norm", (index_dim,), index_layers),
            _t(f"{i}weights_proj.weight", "attention", (n_idx, hidden), index_layers),
        ]
    attention = tuple(
        LayerAttention(
            i,
            "full",
            None,
            kv_rank + rope + (index_dim if i in index_layers else 0),
            heads * (nope + rope),
            heads * v_dim,
        )
        for i in layers
    )
    return dict(
        tensors=tuple(rows),
        attention=attention,
        n_heads=heads,
        n_kv_heads=heads,
        head_dim=nope + rope,
        intermediate_size=dense_width,
        q_lora_rank=q_rank,
        kv_lora_rank=kv_rank,
        qk_nope_head_dim=nope,
        qk_rope_head_dim=rope,
        v_head_dim=v_dim,
        n_mtp_layers=mtp,
        index_head_dim=index_dim,
        notes=notes,
        **_moe(experts, k, width, moe_layers, shared),
        **_common(f, hidden, vocab, tied),
    )


def _indexer(f, layers, hidden, q_rank) -> tuple[tuple[int, ...], int]:
    """The layers that run their own DSA indexer (``indexer_types``: ``full``, not ``shared``) and its key width."""
    if q_rank is None:
        raise _BadValue("config field 'q_lora_rank' must be set for a sparse-attention indexer, got null")
    types = f.list("indexer_types")
    if types is None:
        pattern = f.cfg.get("index_topk_pattern")
        if isinstance(pattern, str):
            types = [{"F": "full", "S": "shared"}[c] for c in pattern]
        else:
            freq = max(f.cfg.get("index_topk_freq", 1), 1)
            offset = f.cfg.get("index_skip_topk_offset", 2)
            types = ["full" if max(i - offset + 1, 0) % freq == 0 else "shared" for i in layers]
    if len(types) != len(layers):
        raise _BadValue(f"config field 'indexer_types' must list {len(layers)} entries, got {types!r}")
    return tuple(i for i in layers if types[i] == "full"), f.int("index_head_dim")


def _glm_moe_dsa(f):
    return _deepseek(f, indexer=True)


_DEEPSEEK_FIELDS = frozenset({"n_routed_experts", "n_shared_experts", "kv_lora_rank", "q_lora_rank"})

FAMILIES = (
    Family(
        "deepseek_v2",
        _deepseek,
        "latent attention (MLA), with or without a query down-projection; shared and routed experts "
        "after first_k_dense_replace dense layers",
        _ship(
            ("DeepSeek-V2-Lite", "deepseek-ai/DeepSeek-V2-Lite", True),
            ("DeepSeek-V2", "deepseek-ai/DeepSeek-V2", True),
        ),
        allowed=_DEEPSEEK_FIELDS,
        defaults={"n_shared_experts": 2, "q_lora_rank": 1536},
        architectures=("DeepseekV2ForCausalLM",),
    ),
    Family(
        "deepseek_v3",
        _deepseek,
        "the DeepSeek-V2 layout plus a score-correction bias per expert; the stored MTP layer is not counted",
        _ship(("DeepSeek-V3", "deepseek-ai/DeepSeek-V3")),
        allowed=_DEEPSEEK_FIELDS,
        defaults={"first_k_dense_replace": 3, "n_shared_experts": 1, "q_lora_rank": 1536},
        architectures=("DeepseekV3ForCausalLM",),
    ),
    Family(
        "kimi_k2",
        _deepseek,
        "a DeepSeek-V3 checkpoint (DeepseekV3ForCausalLM) under its own model_type: 384 experts, 64 heads",
        _ship(("Kimi-K2-Instruct", "moonshotai/Kimi-K2-Instruct", True)),
        allowed=_DEEPSEEK_FIELDS,
        defaults={"first_k_dense_replace": 3, "n_shared_experts": 1, "q_lora_rank": 1536},
    ),
    Family(
        "glm_moe_dsa",
        _glm_moe_dsa,
        "DeepSeek-V3's latent attention and experts plus a sparse-attention indexer (a query/key projection, "
        "one cached key per token) in its indexer layers",
        _ship(("GLM-5", "zai-org/GLM-5", True)),
        allowed=_DEEPSEEK_FIELDS | {"index_head_dim"},
        defaults={"first_k_dense_replace": 3, "n_shared_experts": 1, "q_lora_rank": 2048},
        architectures=("GlmMoeDsaForCausalLM",),
    ),
    Family(
        "deepseek_v32",
        _glm_moe_dsa,
        "DeepSeek-V3 with the sparse-attention indexer (GLM-5's layout): a query/key projection and one "
        "cached index_head_dim key per token in every layer; the stored MTP layer is not counted",
        # Written from the raw config.json a public model report prints (its repository could not be
        # cited), so labelled reconstructed; the oracle counts the same file.
        _ship(("DeepSeek-V3.2", "deepseek-ai/DeepSeek-V3.2", True)),
        allowed=_DEEPSEEK_FIELDS | {"index_head_dim"},
        defaults={"first_k_dense_replace": 3, "n_shared_experts": 1, "q_lora_rank": 1536},
        architectures=("DeepseekV32ForCausalLM",),
    ),
)
