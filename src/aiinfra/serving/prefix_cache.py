"""Prefix caching and KV reuse: how much time to first token a cache hit saves.

Chapter 7. Many prompts start with the same tokens: a system prompt, a
shared document, the earlier turns of a conversation. If the server kept the
KV cache of that prefix, a new request only has to prefill the rest.

Prefill of positions ``c+1 .. P`` (the first ``c`` already cached) costs

    F(P, c) = f (P - c) + a * sum_{i=c+1}^{P} i
            = f (P - c) + a (P(P+1) - c(c+1)) / 2

FLOPs, where ``f`` is the matrix work per token (about ``2 N``) and ``a`` the
attention work per (query, earlier key) pair, ``4 L H d_head`` for causal
attention (QK^T and AV, 2 FLOPs per multiply-add each). A cached prefix
removes the linear part of its tokens *and* the attention among them; the
new tokens still attend to the whole prefix.

With hit rate ``h`` (the share of requests that find their prefix cached),
the expected prefill time saved is ``h (F(P,0) - F(P,c)) / (eta Pi)``;
without the attention term this is simply ``h c t_tok``.

The cache is not free: it holds ``c * kv`` bytes per distinct prefix, and if
it lives off the GPU (CPU memory, another server) it must be loaded back at
``beta``: reuse beats recomputation when ``kv / beta < f / (eta Pi)``
(:func:`reload_speedup`). SI units throughout.
"""

from __future__ import annotations

import numpy as np

from aiinfra import compute
from aiinfra.catalog import models
from aiinfra.formula import formula

__all__ = [
    "prefill_flops_with_prefix",
    "expected_ttft_saved_s",
    "prefix_cache_bytes",
    "reload_speedup",
    "reload_breakeven_bandwidth_bytes_per_s",
    "model_prefill_coefficients",
]


def _cached_within_prompt(prompt_tokens, cached_tokens):
    if np.any(cached_tokens > prompt_tokens):
        raise ValueError(f"cached_tokens must be <= prompt_tokens, got {cached_tokens!r} > {prompt_tokens!r}")


@formula(
    prompt_tokens="P >=0",
    cached_tokens="c >=0",
    flops_per_token="f >0",
    attention_flops_per_pair="a >=0",
)
def prefill_flops_with_prefix(prompt_tokens, cached_tokens, flops_per_token, attention_flops_per_pair=0.0):
    """FLOPs to prefill a prompt whose first ``c`` tokens are cached.

    ``F = f (P - c) + a (P(P+1) - c(c+1)) / 2`` (causal attention, each
    position attends to itself and every earlier one). ``flops_per_token``
    is ``f`` (about ``2 N``, lm_head excluded), ``attention_flops_per_pair``
    is ``a = 4 L H d_head``; pass 0 to drop attention. ``cached_tokens=0``
    gives the full prefill. Chapter 7.
    """
    _cached_within_prompt(prompt_tokens, cached_tokens)
    p, c = prompt_tokens, cached_tokens
    return flops_per_token * (p - c) + attention_flops_per_pair * (p * (p + 1) - c * (c + 1)) / 2.0


@formula(
    None,
    hit_rate="[0,1]",
    prompt_tokens=">=0",
    cached_tokens=">=0",
    flops_per_token=">0",
    flops_per_s=">0",
    efficiency="(0,1]",
    attention_flops_per_pair=">=0",
)
def expected_ttft_saved_s(
    hit_rate,
    prompt_tokens,
    cached_tokens,
    flops_per_token,
    flops_per_s,
    efficiency=1.0,
    attention_flops_per_pair=0.0,
):
    """Expected TTFT saved with the attention term: ``h (F(P,0) - F(P,c)) / (eta Pi)``.

    Uses :func:`prefill_flops_with_prefix`; assumes prefill is compute-bound
    at ``efficiency`` of the dense peak ``flops_per_s``. Accepts arrays for
    ``hit_rate`` and ``cached_tokens`` (figure sweeps). Chapter 7.
    """
    full = prefill_flops_with_prefix(prompt_tokens, 0.0, flops_per_token, attention_flops_per_pair)
    rest = prefill_flops_with_prefix(prompt_tokens, cached_tokens, flops_per_token, attention_flops_per_pair)
    return hit_rate * (full - rest) / (efficiency * flops_per_s)


@formula(
    cached_tokens="c >=0",
    kv_bytes_per_token="kv >0",
    distinct_prefixes="n_p int>=1",
)
def prefix_cache_bytes(cached_tokens, kv_bytes_per_token, distinct_prefixes=1):
    """Memory the cache holds: ``n_p c kv`` bytes for ``n_p`` distinct prefixes. Chapter 7."""
    return distinct_prefixes * cached_tokens * kv_bytes_per_token


@formula(
    flops_per_token="f >0",
    flops_per_s="Pi >0",
    kv_bytes_per_token="kv >0",
    bandwidth_bytes_per_s="beta >0",
    efficiency="eta_F (0,1]",
)
def reload_speedup(flops_per_token, flops_per_s, kv_bytes_per_token, bandwidth_bytes_per_s, efficiency=1.0):
    """How many times faster loading a cached token's KV is than recomputing it.

    ``(f / (eta Pi)) / (kv / beta)``: recompute time per token over load time
    per token, attention ignored. Above 1, keeping the prefix in slower
    memory (CPU DRAM over PCIe, a KV server over the network) and loading it
    back beats prefilling it again. Chapter 7.
    """
    return flops_per_token * bandwidth_bytes_per_s / (efficiency * flops_per_s * kv_bytes_per_token)


@formula(
    flops_per_token="f >0",
    flops_per_s="Pi >0",
    kv_bytes_per_token="kv >0",
    efficiency="eta_F (0,1]",
)
def reload_breakeven_bandwidth_bytes_per_s(flops_per_token, flops_per_s, kv_bytes_per_token, efficiency=1.0):
    """The link bandwidth at which loading offloaded KV back is as fast as recomputing it: ``eta Pi kv / f``.

    A tier (CPU DRAM over PCIe, a local SSD, a remote KV store) whose read
    bandwidth per GPU group exceeds this returns a cached token faster than a
    prefill would recompute it (:func:`reload_speedup` = 1 here). Attention
    FLOPs are ignored, which favours recomputation; a long prefix only
    lowers the break-even. Chapter 7.
    """
    return efficiency * flops_per_s * kv_bytes_per_token / flops_per_token


def model_prefill_coefficients(model):
    """The ``(f, a)`` of :func:`prefill_flops_with_prefix` for a :class:`aiinfra.catalog.models.ModelConfig`.

    ``f = 2 x`` the block linear parameters one token touches
    (:func:`aiinfra.compute._forward_flops_per_token`, lm_head excluded: prefill
    needs it only for the last token); ``a`` = attention FLOPs per query per
    earlier key, :func:`aiinfra.compute.attention_flops_per_token` at one
    context token. Chapter 7.
    """
    m = models.load(model)
    f = compute._forward_flops_per_token(models.block_linear_params_per_token(m), 0)
    a = compute.attention_flops_per_token(
        m.n_layers, models.attention_qk_width(m), models.attention_v_width(m), 1
    )
    return float(f), float(a)
