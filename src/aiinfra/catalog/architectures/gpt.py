"""GPT-2 and GPT-NeoX (Pythia): LayerNorms with bias, biased projections, no gated MLP."""

from __future__ import annotations

from aiinfra.catalog.architectures.blocks import _all, _common, _heads, _linear, _norms, _t, _token_embeddings
from aiinfra.catalog.architectures.core import _BadValue, _whole
from aiinfra.catalog.architectures.dense import _ship
from aiinfra.catalog.architectures.family import Family


def _gpt2(f):
    hidden = f.int("n_embd")
    n_layers = f.int("n_layer")
    heads = f.int("n_head")
    if hidden % heads:
        raise _BadValue(f"config field 'n_embd' ({hidden}) must be a multiple of n_head ({heads})")
    inner = f.cfg.get("n_inner")
    inner = 4 * hidden if inner is None else _whole("n_inner", inner, 1)
    vocab = f.int("vocab_size")
    tied = f.bool("tie_word_embeddings", True)
    layers, p = range(n_layers), "transformer.h.{layer}."
    rows = _token_embeddings(vocab, hidden, tied, "transformer.wte.weight")
    rows.append(_t("transformer.wpe.weight", "position_embedding", (f.int("n_positions"), hidden)))
    for name, group, (n_in, n_out) in (
        ("attn.c_attn", "attention", (hidden, 3 * hidden)),
        ("attn.c_proj", "attention", (hidden, hidden)),
        ("mlp.c_fc", "mlp", (hidden, inner)),
        ("mlp.c_proj", "mlp", (inner, hidden)),
    ):
        # Conv1D stores its weight as (in, out), the transpose of nn.Linear.
        rows.append(_t(f"{p}{name}.weight", group, (n_in, n_out), layers, layout="in_out"))
        rows.append(_t(f"{p}{name}.bias", f"{group}_bias", (n_out,), layers))
    rows += _norms(p, ("ln_1", "ln_2"), hidden, layers, bias=True)
    rows += _norms("transformer.", ("ln_f",), hidden, (), bias=True)
    return dict(
        tensors=tuple(rows),
        intermediate_size=inner,
        **_heads(_all(n_layers), None, heads, heads, hidden // heads),
        **_common(f, hidden, vocab, tied, max_pos_key="n_positions"),
    )


def _gpt_neox(f):
    hidden = f.int("hidden_size")
    n_layers = f.int("num_hidden_layers")
    heads = f.int("num_attention_heads")
    if hidden % heads:
        raise _BadValue(
            f"config field 'hidden_size' ({hidden}) must be a multiple of num_attention_heads ({heads})"
        )
    vocab = f.int("vocab_size")
    tied = f.bool("tie_word_embeddings", False)
    bias = f.bool("attention_bias", True)
    width = f.int("intermediate_size")
    layers, p = range(n_layers), "gpt_neox.layers.{layer}."
    rows = _token_embeddings(vocab, hidden, tied, "gpt_neox.embed_in.weight", head="embed_out.weight")
    rows += (
        _linear(
            f"{p}attention.query_key_value", "attention", 3 * hidden, hidden, layers, bias, "attention_bias"
        )
        + _linear(f"{p}attention.dense", "attention", hidden, hidden, layers, bias, "attention_bias")
        + _linear(f"{p}mlp.dense_h_to_4h", "mlp", width, hidden, layers, True, "mlp_bias")
        + _linear(f"{p}mlp.dense_4h_to_h", "mlp", hidden, width, layers, True, "mlp_bias")
    )
    rows += _norms(p, ("input_layernorm", "post_attention_layernorm"), hidden, layers, bias=True)
    rows += _norms("gpt_neox.", ("final_layer_norm",), hidden, (), bias=True)
    notes = ()
    rotary = f.cfg.get("rotary_pct", 1.0)
    if rotary != 1.0:
        notes = (f"partial rotary: RoPE on {rotary:g} of each head's channels (no parameters, no KV change)",)
    return dict(
        tensors=tuple(rows),
        intermediate_size=width,
        notes=notes,
        **_heads(_all(n_layers), None, heads, heads, hidden // heads),
        **_common(f, hidden, vocab, tied),
    )


FAMILIES = (
    Family(
        "gpt2",
        _gpt2,
        "a learned position table, biases everywhere, LayerNorms with bias, Conv1D weights stored (in, out), "
        "a tied head",
        _ship(("gpt2", "openai-community/gpt2", True)),
        tied=True,
        defaults={"n_positions": 1024},
        architectures=("GPT2LMHeadModel",),
    ),
    Family(
        "gpt_neox",
        _gpt_neox,
        "one fused, biased QKV matrix, LayerNorms with bias, an untied embed_out; partial rotary adds nothing",
        _ship(("pythia-160m", "EleutherAI/pythia-160m", True)),
        defaults={"attention_bias": True},
        architectures=("GPTNeoXForCausalLM",),
    ),
)
