"""FLOP counts of a transformer forward pass: per token, per decode step, per prefill, per request.

Counting rules (a multiply-add is 2 FLOPs; Kaplan et al. 2020, section 2.1):

* every matrix weight a token passes through costs 2 FLOPs: the linear
  layers inside the blocks (for MoE only the routed experts it uses) and the
  lm_head (vocab x hidden, counted even when tied to the embedding);
* the embedding lookup is a memory read, 0 FLOPs;
* attention for one query over ``n`` keys costs ``2 n w_qk`` for the scores
  ``QK^T`` plus ``2 n w_v`` for the weighted sum of values, per layer, where
  ``w_qk`` and ``w_v`` are the query-head widths (heads x head_dim). With
  ``w_qk = w_v = heads x head_dim`` that is ``4 n heads head_dim``; grouped
  KV heads (GQA) do not reduce it, since every query head still attends;
* norms, activations, softmax and rotary embeddings are left out (they are
  O(hidden) per token, well under 1% here).

Prefill of ``P`` tokens is **causal** by default: position ``i`` attends to
``i`` keys (itself and the ``i - 1`` before it), so attention sums to
``P (P + 1) / 2`` query-key pairs instead of ``P^2``. Only the last prompt
token needs logits to pick the first output token, so by default the lm_head
runs once, not ``P`` times.

The scalar cores take plain numbers; :func:`flops_per_token`,
:func:`decode_flops`, :func:`prefill_flops` and :func:`request_flops` take a
``ModelConfig`` from :mod:`aiinfra.models`.

Serves: Chapters 1 (quick-reference numbers), 2 (one request by hand) and 3 (the 2N rule against the exact count).
"""
from __future__ import annotations

import numpy as np
import sympy as sp

from . import _check
from .symbols import G_out, L, N, P, d, n_ctx, twin

__all__ = [
    "forward_flops_per_token",
    "attention_flops_per_token",
    "decode_step_flops",
    "prefill_attention_flops",
    "causal_prefill_attention_flops",
    "full_prefill_attention_flops",
    "prefill_matmul_flops",
    "prefill_step_flops",
    "request_step_flops",
    "approx_flops_2n",
    "approx_prefill_flops_2n",
    "approx_decode_flops_2n",
    "kaplan_attention_flops_per_token",
    "flops_per_token",
    "decode_flops",
    "prefill_flops",
    "request_flops",
]

N_lin = sp.Symbol("N_lin", positive=True)
N_head = sp.Symbol("N_head", positive=True)
w_qk = sp.Symbol("w_qk", positive=True)
w_v = sp.Symbol("w_v", positive=True)
P_head = sp.Symbol("P_head", positive=True)

_INT_L = (1, 128, "int")
_INT_N = (0, 100_000, "int")
_INT_P = (1, 100_000, "int")


def _out(x):
    arr = np.asarray(x, dtype=float)
    return float(arr) if arr.ndim == 0 else arr


@twin(2 * (N_lin + N_head), block_linear_params=N_lin, lm_head_params=N_head)
def forward_flops_per_token(block_linear_params, lm_head_params):
    """Matrix FLOPs of one token through the model, attention scores excluded: ``2 (N_lin + N_head)``.

    ``block_linear_params``: matmul weights the token touches inside the
    blocks (active experts only); ``lm_head_params``: vocab x hidden.
    """
    n_lin = np.asarray(_check.non_negative("block_linear_params", block_linear_params))
    n_head = np.asarray(_check.non_negative("lm_head_params", lm_head_params))
    return _out(2.0 * (n_lin + n_head))


@twin(2 * L * n_ctx * (w_qk + w_v), domains={"n_layers": _INT_L, "context_tokens": _INT_N},
      n_layers=L, qk_width=w_qk, v_width=w_v, context_tokens=n_ctx)
def attention_flops_per_token(n_layers, qk_width, v_width, context_tokens):
    """Attention FLOPs of one query token over ``context_tokens`` keys: ``2 L n (w_qk + w_v)``.

    ``qk_width`` and ``v_width`` are per-layer query widths (e.g. heads x
    head_dim); for standard attention this is ``4 L n heads head_dim``.
    """
    n_l = np.asarray(_check.integers("n_layers", n_layers, minimum=1), dtype=float)
    wq = np.asarray(_check.positive("qk_width", qk_width))
    wv = np.asarray(_check.positive("v_width", v_width))
    n = np.asarray(_check.integers("context_tokens", context_tokens, minimum=0), dtype=float)
    return _out(2.0 * n_l * n * (wq + wv))


@twin(2 * (N_lin + N_head) + 2 * L * n_ctx * (w_qk + w_v), domains={"n_layers": _INT_L, "context_tokens": _INT_N},
      block_linear_params=N_lin, lm_head_params=N_head, n_layers=L, qk_width=w_qk, v_width=w_v,
      context_tokens=n_ctx)
def decode_step_flops(block_linear_params, lm_head_params, n_layers, qk_width, v_width, context_tokens):
    """FLOPs of one decode step for one request: ``2 (N_lin + N_head) + 2 L n (w_qk + w_v)``.

    ``context_tokens`` is the number of keys the new token attends to.
    """
    return _out(np.asarray(forward_flops_per_token(block_linear_params, lm_head_params))
                + np.asarray(attention_flops_per_token(n_layers, qk_width, v_width, context_tokens)))


@twin(L * (w_qk + w_v) * P * (P + 1), domains={"n_layers": _INT_L, "prompt_tokens": _INT_P},
      n_layers=L, qk_width=w_qk, v_width=w_v, prompt_tokens=P)
def causal_prefill_attention_flops(n_layers, qk_width, v_width, prompt_tokens):
    """Attention FLOPs of a causal prefill over ``P`` tokens: ``L (w_qk + w_v) P (P + 1)``.

    Position ``i`` attends to ``i`` keys, so there are ``P (P + 1) / 2``
    query-key pairs per layer, each costing ``2 (w_qk + w_v)``.
    """
    n_l = np.asarray(_check.integers("n_layers", n_layers, minimum=1), dtype=float)
    wq = np.asarray(_check.positive("qk_width", qk_width))
    wv = np.asarray(_check.positive("v_width", v_width))
    p = np.asarray(_check.integers("prompt_tokens", prompt_tokens, minimum=1), dtype=float)
    return _out(n_l * (wq + wv) * p * (p + 1.0))


@twin(2 * L * (w_qk + w_v) * P**2, domains={"n_layers": _INT_L, "prompt_tokens": _INT_P},
      n_layers=L, qk_width=w_qk, v_width=w_v, prompt_tokens=P)
def full_prefill_attention_flops(n_layers, qk_width, v_width, prompt_tokens):
    """Attention FLOPs of a non-causal (bidirectional) prefill: ``2 L (w_qk + w_v) P^2``.

    Every token sees all ``P``; this is also what a kernel that computes the
    whole square score matrix and then masks it executes.
    """
    n_l = np.asarray(_check.integers("n_layers", n_layers, minimum=1), dtype=float)
    wq = np.asarray(_check.positive("qk_width", qk_width))
    wv = np.asarray(_check.positive("v_width", v_width))
    p = np.asarray(_check.integers("prompt_tokens", prompt_tokens, minimum=1), dtype=float)
    return _out(2.0 * n_l * (wq + wv) * p * p)


def prefill_attention_flops(n_layers, qk_width, v_width, prompt_tokens, causal=True):
    """Attention FLOPs of a prefill: :func:`causal_prefill_attention_flops` or, with
    ``causal=False``, :func:`full_prefill_attention_flops`."""
    _check.choice("causal", causal, {True, False})
    fn = causal_prefill_attention_flops if causal else full_prefill_attention_flops
    return fn(n_layers, qk_width, v_width, prompt_tokens)


@twin(2 * N_lin * P + 2 * N_head * P_head, domains={"prompt_tokens": (100, 100_000, "int"), "lm_head_tokens": (1, 100, "int")},
      block_linear_params=N_lin, lm_head_params=N_head, prompt_tokens=P, lm_head_tokens=P_head)
def prefill_matmul_flops(block_linear_params, lm_head_params, prompt_tokens, lm_head_tokens=1):
    """Matrix FLOPs of a prefill: ``2 N_lin P + 2 N_head P_head``.

    Every prompt token passes through the blocks; only ``lm_head_tokens``
    positions need logits: 1 for generation (the last one picks the first
    output token), ``P`` for scoring every position. ``lm_head_tokens`` must
    lie in [1, P].
    """
    n_lin = np.asarray(_check.non_negative("block_linear_params", block_linear_params))
    n_head = np.asarray(_check.non_negative("lm_head_params", lm_head_params))
    p = np.asarray(_check.integers("prompt_tokens", prompt_tokens, minimum=1), dtype=float)
    ph = np.asarray(_check.integers("lm_head_tokens", lm_head_tokens, minimum=1), dtype=float)
    if np.any(ph > p):
        raise ValueError(f"lm_head_tokens must be <= prompt_tokens, got {lm_head_tokens!r} > {prompt_tokens!r}")
    return _out(2.0 * n_lin * p + 2.0 * n_head * ph)


@twin(2 * N_lin * P + 2 * N_head + L * (w_qk + w_v) * P * (P + 1),
      domains={"n_layers": _INT_L, "prompt_tokens": _INT_P},
      block_linear_params=N_lin, lm_head_params=N_head, n_layers=L, qk_width=w_qk, v_width=w_v,
      prompt_tokens=P)
def prefill_step_flops(block_linear_params, lm_head_params, n_layers, qk_width, v_width, prompt_tokens):
    """FLOPs of prefilling ``P`` prompt tokens for generation: ``2 N_lin P + 2 N_head + L (w_qk + w_v) P (P+1)``.

    Causal attention and the lm_head on the last prompt token only, the
    case of serving. For the other cases combine :func:`prefill_matmul_flops`
    with :func:`full_prefill_attention_flops`, or use
    :func:`prefill_flops` with its flags on a model config.
    """
    return _out(np.asarray(prefill_matmul_flops(block_linear_params, lm_head_params, prompt_tokens, 1))
                + np.asarray(causal_prefill_attention_flops(n_layers, qk_width, v_width, prompt_tokens)))


@twin(2 * N_lin * (P + G_out - 1) + 2 * N_head * G_out
      + L * (w_qk + w_v) * (P + G_out - 1) * (P + G_out),
      domains={"n_layers": _INT_L, "prompt_tokens": _INT_P, "generated_tokens": (1, 10_000, "int")},
      block_linear_params=N_lin, lm_head_params=N_head, n_layers=L, qk_width=w_qk, v_width=w_v,
      prompt_tokens=P, generated_tokens=G_out)
def request_step_flops(block_linear_params, lm_head_params, n_layers, qk_width, v_width, prompt_tokens,
                       generated_tokens):
    """Exact FLOPs of a whole request: a causal prefill of ``P`` tokens, then ``G - 1`` decode steps.

    The prefill's last position yields output token 1; output tokens 2..G
    each need one decode step, in which the previous token (at position
    ``P + j``) attends to ``P + j`` keys. The last output token is never fed
    back. In total the blocks see ``P + G - 1`` tokens, the lm_head runs
    ``G`` times and causal attention covers ``(P+G-1)(P+G)/2`` query-key
    pairs. Compare with :func:`approx_flops_2n`, which charges ``2N`` for each
    of ``P + G`` tokens and no attention.
    """
    n_lin = np.asarray(_check.non_negative("block_linear_params", block_linear_params))
    n_head = np.asarray(_check.non_negative("lm_head_params", lm_head_params))
    n_l = np.asarray(_check.integers("n_layers", n_layers, minimum=1), dtype=float)
    wq = np.asarray(_check.positive("qk_width", qk_width))
    wv = np.asarray(_check.positive("v_width", v_width))
    p = np.asarray(_check.integers("prompt_tokens", prompt_tokens, minimum=1), dtype=float)
    g = np.asarray(_check.integers("generated_tokens", generated_tokens, minimum=1), dtype=float)
    seen = p + g - 1.0
    return _out(2.0 * n_lin * seen + 2.0 * n_head * g + n_l * (wq + wv) * seen * (seen + 1.0))


@twin(2 * N * (P + G_out), domains={"prompt_tokens": (0, 100_000, "int"), "generated_tokens": (0, 100_000, "int")},
      n_params=N, prompt_tokens=P, generated_tokens=G_out)
def approx_flops_2n(n_params, prompt_tokens, generated_tokens):
    """The ``2N (P + G)`` rule of thumb for a request: 2 FLOPs per parameter per token, no attention.

    A 70e9-parameter model with 500 prompt and 500 generated tokens:
    7e13 + 7e13 = 1.4e14 FLOPs. Use :func:`request_flops` for the exact count.
    """
    n = np.asarray(_check.non_negative("n_params", n_params))
    p = np.asarray(_check.integers("prompt_tokens", prompt_tokens, minimum=0), dtype=float)
    g = np.asarray(_check.integers("generated_tokens", generated_tokens, minimum=0), dtype=float)
    return _out(2.0 * n * (p + g))


@twin(2 * N * P, domains={"prompt_tokens": (0, 100_000, "int")}, n_params=N, prompt_tokens=P)
def approx_prefill_flops_2n(n_params, prompt_tokens):
    """Prefill share of the rule of thumb: ``2 N P`` (one parallel pass over ``P`` tokens)."""
    return approx_flops_2n(n_params, prompt_tokens, 0)


@twin(2 * N * G_out, domains={"generated_tokens": (0, 100_000, "int")}, n_params=N, generated_tokens=G_out)
def approx_decode_flops_2n(n_params, generated_tokens):
    """Decode share of the rule of thumb: ``2 N G`` (``G`` sequential passes)."""
    return approx_flops_2n(n_params, 0, generated_tokens)


@twin(2 * L * n_ctx * d, domains={"n_layers": _INT_L, "context_tokens": _INT_N},
      n_layers=L, context_tokens=n_ctx, d_attn=d)
def kaplan_attention_flops_per_token(n_layers, context_tokens, d_attn):
    """Kaplan et al.'s (2020, Table 1) context term ``2 n_layer n_ctx d_attn`` per token.

    It counts the score product ``QK^T`` only; :func:`attention_flops_per_token`
    also counts the value product and is twice as large for ``w_qk = w_v``.
    The rule of thumb compares it with ``2N`` to decide whether attention can
    be dropped (1.6% for an 8B model at 1,000 tokens of context).
    """
    n_l = np.asarray(_check.integers("n_layers", n_layers, minimum=1), dtype=float)
    n = np.asarray(_check.integers("context_tokens", context_tokens, minimum=0), dtype=float)
    w = np.asarray(_check.positive("d_attn", d_attn))
    return _out(2.0 * n_l * n * w)


# --- config-level wrappers ---------------------------------------------------
#
# Sliding-window layers (e.g. Mistral-7B-v0.1, window 4096) attend to at most
# ``window`` keys, so the wrappers split the layers into full-attention and
# windowed groups and cap the context of the second.

def _shape(model):
    from . import models

    m = models.load(model)
    n_win = len(m.sliding_window_layers) if m.sliding_window else 0
    return (
        m,
        float(models.block_linear_params_per_token(m)),
        float(models.lm_head_params(m)),
        m.n_layers - n_win,
        n_win,
        float(models.attention_qk_width(m)),
        float(models.attention_v_width(m)),
    )


def _causal_pairs(tokens, window=None):
    """Query-key pairs of causal attention over ``tokens`` positions: ``sum_i min(i, window)``."""
    n = np.asarray(tokens, dtype=float)
    if window is None:
        return n * (n + 1.0) / 2.0
    w = float(window)
    inside = np.minimum(n, w)
    return inside * (inside + 1.0) / 2.0 + np.maximum(n - w, 0.0) * w


def flops_per_token(model):
    """Matrix FLOPs per token of ``model`` (no attention scores): ``2 (block linear + lm_head)``.

    The embedding lookup costs 0 FLOPs; for MoE only the active experts count.
    Qwen3-8B: 15.14e9.
    """
    _, n_lin, n_head, _, _, _, _ = _shape(model)
    return forward_flops_per_token(n_lin, n_head)


def decode_flops(model, context_tokens):
    """FLOPs of one decode step of ``model`` with ``context_tokens`` keys in the cache.

    :func:`flops_per_token` plus attention ``2 n (w_qk + w_v)`` per layer
    (``n`` capped at the window in sliding-window layers).
    Qwen3-8B at 2,048 tokens: 16.34e9. Accepts an array of contexts.
    """
    m, n_lin, n_head, n_full, n_win, wq, wv = _shape(model)
    ctx = _check.integers("context_tokens", context_tokens, minimum=0)
    total = np.asarray(forward_flops_per_token(n_lin, n_head)) + np.zeros_like(np.asarray(ctx, dtype=float))
    if n_full:
        total = total + attention_flops_per_token(n_full, wq, wv, ctx)
    if n_win:
        total = total + attention_flops_per_token(n_win, wq, wv, np.minimum(ctx, m.sliding_window))
    return _out(total)


def prefill_flops(model, prompt_tokens, causal=True, lm_head_last_token_only=True):
    """FLOPs of prefilling ``prompt_tokens`` through ``model`` (causal, lm_head on the last token by default).

    Qwen3-8B at 2,048 tokens: 29.69e12. ``causal=False`` counts every token
    attending to all ``P``; ``lm_head_last_token_only=False`` computes logits
    at every position. Sliding-window layers count ``sum_i min(i, window)``
    pairs when causal, ``P min(P, window)`` when not.
    """
    m, n_lin, n_head, n_full, n_win, wq, wv = _shape(model)
    p = _check.integers("prompt_tokens", prompt_tokens, minimum=1)
    _check.choice("causal", causal, {True, False})
    _check.choice("lm_head_last_token_only", lm_head_last_token_only, {True, False})
    pf = np.asarray(p, dtype=float)
    total = np.asarray(prefill_matmul_flops(n_lin, n_head, p, 1 if lm_head_last_token_only else p))
    if n_full:
        total = total + np.asarray(prefill_attention_flops(n_full, wq, wv, p, causal))
    if n_win:
        pairs = _causal_pairs(pf, m.sliding_window) if causal else pf * np.minimum(pf, m.sliding_window)
        total = total + 2.0 * n_win * (wq + wv) * pairs
    return _out(total)


def request_flops(model, prompt_tokens, generated_tokens):
    """Exact FLOPs of one request on ``model``: causal prefill plus ``G - 1`` decode steps.

    See :func:`request_step_flops`; set it beside
    ``approx_flops_2n(models.total_params(model), P, G)``.
    """
    m, n_lin, n_head, n_full, n_win, wq, wv = _shape(model)
    p = _check.integers("prompt_tokens", prompt_tokens, minimum=1)
    g = _check.integers("generated_tokens", generated_tokens, minimum=1)
    if n_full:
        total = np.asarray(request_step_flops(n_lin, n_head, n_full, wq, wv, p, g))
    else:
        seen = np.asarray(p, dtype=float) + np.asarray(g, dtype=float) - 1.0
        total = 2.0 * n_lin * seen + 2.0 * n_head * np.asarray(g, dtype=float)
    if n_win:
        seen = np.asarray(p, dtype=float) + np.asarray(g, dtype=float) - 1.0
        total = total + 2.0 * n_win * (wq + wv) * _causal_pairs(seen, m.sliding_window)
    return _out(total)
