"""Gemma 1, 2 and 3: a tied head, head_dim set apart from the hidden size, four norms a layer from Gemma 2 on."""

from __future__ import annotations

from aiinfra.catalog.architectures.blocks import _alternating_kinds, _refuse_bias
from aiinfra.catalog.architectures.core import _whole
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


FAMILIES = (
    Family(
        "gemma",
        _gemma,
        "head_dim set apart from the hidden size, a tied head",
        _ship(("gemma-2b", "google/gemma-2b", True)),
        tied=True,
        defaults={"head_dim": 256},
        architectures=("GemmaForCausalLM",),
    ),
    Family(
        "gemma2",
        _gemma2,
        "four RMSNorms a layer; sliding and global layers alternate",
        _ship(("gemma-2-2b-it", "google/gemma-2-2b-it")),
        tied=True,
        defaults={"head_dim": 256, "sliding_window": 4096},
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
    ),
)
