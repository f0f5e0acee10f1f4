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
without the attention term this is simply ``h c t_tok``
(:func:`ttft_saved_linear_s`).

The cache is not free: it holds ``c * kv`` bytes per distinct prefix, and if
it lives off the GPU (CPU memory, another server) it must be loaded back at
``beta``: reuse beats recomputation when ``kv / beta < f / (eta Pi)``
(:func:`reload_speedup`). SI units throughout.
"""
from __future__ import annotations

import numpy as np
import sympy as sp

from . import _check
from .symbols import P, Pi, beta, eta_F, twin

__all__ = [
    "prefill_flops_with_prefix",
    "ttft_saved_linear_s",
    "expected_ttft_saved_s",
    "prefix_cache_bytes",
    "reload_speedup",
    "model_prefill_coefficients",
]

c_tok = sp.Symbol("c", positive=True)          # cached prefix tokens
f_tok = sp.Symbol("f", positive=True)          # matrix FLOPs per token
a_pair = sp.Symbol("a", positive=True)         # attention FLOPs per (query, key) pair
h_hit = sp.Symbol("h", positive=True)          # hit rate
tau = sp.Symbol("tau", positive=True)          # prefill time per token
kv = sp.Symbol("kv", positive=True)            # KV bytes per token
n_pre = sp.Symbol("n_p", positive=True)        # distinct prefixes held

_H = (0.0, 1.0, "float")


def _out(x):
    arr = np.asarray(x, dtype=float)
    return float(arr) if arr.ndim == 0 else arr


def _tokens(prompt_tokens, cached_tokens):
    p = _check.non_negative("prompt_tokens", prompt_tokens)
    c = _check.non_negative("cached_tokens", cached_tokens)
    if np.any(np.asarray(c) > np.asarray(p)):
        raise ValueError(f"cached_tokens must be <= prompt_tokens, got {cached_tokens!r} > {prompt_tokens!r}")
    return np.asarray(p), np.asarray(c)


@twin(f_tok * (P - c_tok) + a_pair * (P * (P + 1) - c_tok * (c_tok + 1)) / 2,
      domains={"prompt_tokens": (500.0, 1000.0, "float"), "cached_tokens": (0.0, 500.0, "float")},
      prompt_tokens=P, cached_tokens=c_tok, flops_per_token=f_tok, attention_flops_per_pair=a_pair)
def prefill_flops_with_prefix(prompt_tokens, cached_tokens, flops_per_token, attention_flops_per_pair=0.0):
    """FLOPs to prefill a prompt whose first ``c`` tokens are cached.

    ``F = f (P - c) + a (P(P+1) - c(c+1)) / 2`` (causal attention, each
    position attends to itself and every earlier one). ``flops_per_token``
    is ``f`` (about ``2 N``, lm_head excluded), ``attention_flops_per_pair``
    is ``a = 4 L H d_head``; pass 0 to drop attention. ``cached_tokens=0``
    gives the full prefill. Chapter 7.
    """
    p, c = _tokens(prompt_tokens, cached_tokens)
    f = _check.positive("flops_per_token", flops_per_token)
    a = _check.non_negative("attention_flops_per_pair", attention_flops_per_pair)
    return _out(np.asarray(f) * (p - c) + np.asarray(a) * (p * (p + 1) - c * (c + 1)) / 2.0)


@twin(h_hit * c_tok * tau, domains={"hit_rate": _H},
      hit_rate=h_hit, cached_tokens=c_tok, prefill_time_per_token_s=tau)
def ttft_saved_linear_s(hit_rate, cached_tokens, prefill_time_per_token_s):
    """Expected TTFT saved, attention ignored: ``h c t_tok``.

    ``hit_rate`` in [0, 1] is the share of requests whose prefix is cached,
    ``cached_tokens`` the prefix length, ``prefill_time_per_token_s`` the
    prefill time of one token (``2N / (eta Pi)`` when compute-bound).
    Chapter 7.
    """
    h = _check.fraction("hit_rate", hit_rate, open_low=False)
    c = _check.non_negative("cached_tokens", cached_tokens)
    t = _check.positive("prefill_time_per_token_s", prefill_time_per_token_s)
    return _out(np.asarray(h) * np.asarray(c) * np.asarray(t))


def expected_ttft_saved_s(hit_rate, prompt_tokens, cached_tokens, flops_per_token,
                          flops_per_s, efficiency=1.0, attention_flops_per_pair=0.0):
    """Expected TTFT saved with the attention term: ``h (F(P,0) - F(P,c)) / (eta Pi)``.

    Uses :func:`prefill_flops_with_prefix`; assumes prefill is compute-bound
    at ``efficiency`` of the dense peak ``flops_per_s``. Accepts arrays for
    ``hit_rate`` and ``cached_tokens`` (figure sweeps). Chapter 7.
    """
    h = _check.fraction("hit_rate", hit_rate, open_low=False)
    pi = _check.positive("flops_per_s", flops_per_s)
    eta = _check.fraction("efficiency", efficiency)
    full = prefill_flops_with_prefix(prompt_tokens, 0.0, flops_per_token, attention_flops_per_pair)
    rest = prefill_flops_with_prefix(prompt_tokens, cached_tokens, flops_per_token, attention_flops_per_pair)
    return _out(np.asarray(h) * (np.asarray(full) - np.asarray(rest)) / (np.asarray(eta) * np.asarray(pi)))


@twin(n_pre * c_tok * kv, domains={"distinct_prefixes": (1, 1000, "int")},
      cached_tokens=c_tok, kv_bytes_per_token=kv, distinct_prefixes=n_pre)
def prefix_cache_bytes(cached_tokens, kv_bytes_per_token, distinct_prefixes=1):
    """Memory the cache holds: ``n_p c kv`` bytes for ``n_p`` distinct prefixes. Chapter 7."""
    c = _check.non_negative("cached_tokens", cached_tokens)
    k = _check.positive("kv_bytes_per_token", kv_bytes_per_token)
    n = _check.integers("distinct_prefixes", distinct_prefixes, minimum=1)
    return _out(np.asarray(n) * np.asarray(c) * np.asarray(k))


@twin(f_tok * beta / (eta_F * Pi * kv), domains={"efficiency": (0.05, 1.0, "float")},
      flops_per_token=f_tok, flops_per_s=Pi, kv_bytes_per_token=kv, bandwidth_bytes_per_s=beta, efficiency=eta_F)
def reload_speedup(flops_per_token, flops_per_s, kv_bytes_per_token, bandwidth_bytes_per_s, efficiency=1.0):
    """How many times faster loading a cached token's KV is than recomputing it.

    ``(f / (eta Pi)) / (kv / beta)``: recompute time per token over load time
    per token, attention ignored. Above 1, keeping the prefix in slower
    memory (CPU DRAM over PCIe, a KV server over the network) and loading it
    back beats prefilling it again. Chapter 7.
    """
    f = _check.positive("flops_per_token", flops_per_token)
    pi = _check.positive("flops_per_s", flops_per_s)
    k = _check.positive("kv_bytes_per_token", kv_bytes_per_token)
    b = _check.positive("bandwidth_bytes_per_s", bandwidth_bytes_per_s)
    eta = _check.fraction("efficiency", efficiency)
    return _out(np.asarray(f) * np.asarray(b) / (np.asarray(eta) * np.asarray(pi) * np.asarray(k)))


def model_prefill_coefficients(model):
    """The ``(f, a)`` of :func:`prefill_flops_with_prefix` for a :class:`aiinfra.models.ModelConfig`.

    ``f = 2 x`` the block linear parameters one token touches
    (:func:`aiinfra.compute.forward_flops_per_token`, lm_head excluded: prefill
    needs it only for the last token); ``a`` = attention FLOPs per query per
    earlier key, :func:`aiinfra.compute.attention_flops_per_token` at one
    context token. Chapter 7.
    """
    from . import compute, models

    m = models.load(model) if isinstance(model, str) else model
    f = compute.forward_flops_per_token(models.block_linear_params_per_token(m), 0)
    a = compute.attention_flops_per_token(m.n_layers, models.attention_qk_width(m), models.attention_v_width(m), 1)
    return float(f), float(a)
