"""What inference is (chapter 3): the 2N rule against the exact FLOP count, and the recurring bill.

The rule of thumb charges ``2N`` FLOPs per token, ``N`` being every stored
parameter (Kaplan et al. 2020). The exact count of :mod:`aiinfra.compute`
differs in three places:

* the **embedding table** is a lookup, 0 FLOPs, although its parameters are
  part of ``N`` (the rule over-counts them);
* the **lm_head** multiplies every output position by a vocab x hidden
  matrix; untied models store it (so ``N`` includes it), tied ones reuse the
  embedding (so ``N`` counts the table once, and the lookup is free);
* **attention** over the context costs ``2 n (w_qk + w_v)`` per layer for a
  query that sees ``n`` keys, a term ``N`` does not contain at all.

At short contexts the over-counted embedding and the missing attention
roughly cancel; as the context grows attention wins and the rule falls
behind. :func:`two_n_ratio` gives exact / 2N per decode step,
:func:`context_where_two_n_is_off` the context at which the gap passes a
tolerance, and :func:`decode_flops_breakdown` the pieces. For the economics,
:func:`tokens_to_match_training` says how many tokens a model must serve
before its inference FLOPs equal its training FLOPs (``6 N D`` against
``2 N`` per token: ``3 D``).
"""
from __future__ import annotations

import math
from dataclasses import dataclass

import numpy as np
import sympy as sp

from . import _check
from .symbols import twin

__all__ = [
    "two_n_flops_per_token",
    "decode_flops_breakdown",
    "two_n_ratio",
    "context_where_two_n_is_off",
    "request_two_n_ratio",
    "tokens_to_match_training",
    "gpu_hours_for_tokens",
    "PhaseTimes",
    "request_phases",
    "decode_flops_without_cache",
    "decode_time_without_cache_s",
]

_MAX_CONTEXT = 1 << 40


def two_n_flops_per_token(model) -> float:
    """The rule of thumb for one token: ``2 N``, ``N`` = the parameters a token uses.

    For a dense model that is every stored parameter; for a mixture of
    experts, the active ones (:func:`aiinfra.models.active_params`).
    """
    from . import compute, models

    return compute.approx_flops_2n(models.active_params(models.load(model)), 1, 0)


def decode_flops_breakdown(model, context_tokens) -> dict:
    """The exact FLOPs of one decode step, by piece, next to what ``2N`` charges for the same pieces.

    Returns a dict with ``exact`` (``blocks``, ``lm_head``, ``attention``,
    ``embedding`` = 0, ``total``) and ``two_n`` (``blocks`` incl. norms,
    ``lm_head`` (0 when tied), ``embedding``, ``attention`` = 0, ``total``),
    each a dict of FLOPs. ``context_tokens`` is the number of keys the new
    token attends to. Scalars only.
    """
    from . import compute, models

    m = models.load(model)
    ctx = _check.integer("context_tokens", context_tokens, minimum=0)
    matrices = compute.flops_per_token(m)
    head = compute.forward_flops_per_token(0, models.lm_head_params(m))
    total = compute.decode_flops(m, ctx)
    exact = {"blocks": matrices - head, "lm_head": head, "attention": total - matrices, "embedding": 0.0,
             "total": total}
    n_embed = models.embedding_params(m)
    n_head_stored = models.stored_lm_head_params(m)
    n_total = models.active_params(m)
    two = {
        "blocks": compute.approx_flops_2n(n_total - n_embed - n_head_stored, 1, 0),
        "lm_head": compute.approx_flops_2n(n_head_stored, 1, 0),
        "attention": 0.0,
        "embedding": compute.approx_flops_2n(n_embed, 1, 0),
        "total": compute.approx_flops_2n(n_total, 1, 0),
    }
    return {"exact": exact, "two_n": two}


def two_n_ratio(model, context_tokens):
    """Exact decode-step FLOPs over ``2N``: 1 means the rule is exact, 1.1 means 10 % short.

    ``context_tokens`` may be an integer array (for a curve). Qwen3-8B: about
    1.0 at 2,048 tokens, where the free embedding and the attention cancel.
    """
    from . import compute

    exact = np.asarray(compute.decode_flops(model, context_tokens))
    out = exact / two_n_flops_per_token(model)
    return float(out) if out.ndim == 0 else out


def context_where_two_n_is_off(model, tolerance=0.1) -> float:
    """The smallest context (tokens) at which the exact decode step exceeds ``2N`` by more than ``tolerance``.

    Exact FLOPs grow with the context (attention), so the answer is found by
    bisection on :func:`two_n_ratio`. Returns ``math.inf`` if the ratio
    never passes ``1 + tolerance`` (e.g. every layer has a short sliding
    window), and 0 if it is already past at an empty context. The rule can
    also be off on the *low* side at short contexts (a large embedding
    table counted in ``N`` but free at run time); check ``two_n_ratio(model, 0)``.
    """
    tol = _check.positive("tolerance", tolerance)
    target = 1.0 + tol
    if two_n_ratio(model, 0) > target:
        return 0.0
    if two_n_ratio(model, _MAX_CONTEXT) <= target:
        return math.inf
    lo, hi = 0, _MAX_CONTEXT  # ratio(lo) <= target < ratio(hi)
    while hi - lo > 1:
        mid = (lo + hi) // 2
        if two_n_ratio(model, mid) > target:
            hi = mid
        else:
            lo = mid
    return float(hi)


def request_two_n_ratio(model, prompt_tokens, generated_tokens) -> float:
    """Exact FLOPs of a whole request (causal prefill + ``G - 1`` decode steps) over ``2N (P + G)``.

    ``N`` as in :func:`two_n_flops_per_token` (active parameters).
    """
    from . import compute, models

    m = models.load(model)
    exact = compute.request_flops(m, prompt_tokens, generated_tokens)
    return exact / compute.approx_flops_2n(models.active_params(m), prompt_tokens, generated_tokens)


_D = sp.Symbol("D", positive=True)


@twin(3 * _D, training_tokens=_D)
def tokens_to_match_training(training_tokens):
    """Tokens served whose forward FLOPs equal the training run's: ``6 N D / (2 N) = 3 D``.

    Training costs about ``6N`` FLOPs per training token (forward 2N plus
    backward 4N, Kaplan et al. 2020); inference about ``2N`` per token, so
    ``N`` cancels. Llama 3 (about 15e12 training tokens) matches its training
    compute after about 45e12 served tokens. Accepts arrays.
    """
    d = np.asarray(_check.positive("training_tokens", training_tokens))
    out = 3.0 * d
    return float(out) if out.ndim == 0 else out


_tok, _rate = sp.symbols("n_tok r_tok", positive=True)


@twin(_tok / _rate / 3600, tokens=_tok, tokens_per_s_per_gpu=_rate)
def gpu_hours_for_tokens(tokens, tokens_per_s_per_gpu):
    """GPU-hours needed to generate ``tokens`` at ``tokens_per_s_per_gpu``: ``n / r / 3600``. Accepts arrays."""
    n = np.asarray(_check.non_negative("tokens", tokens))
    r = np.asarray(_check.positive("tokens_per_s_per_gpu", tokens_per_s_per_gpu))
    out = n / r / 3600.0
    return float(out) if out.ndim == 0 else out


@dataclass(frozen=True)
class PhaseTimes:
    """One request's two phases on one GPU at batch 1 (SI units; times are lower bounds)."""

    prefill_flops: float
    prefill_bytes: float
    prefill_s: float
    prefill_bound: str
    decode_steps: int
    decode_flops: float
    decode_bytes: float
    decode_s: float
    decode_bound: str

    @property
    def total_s(self) -> float:
        return self.prefill_s + self.decode_s


def request_phases(model, gpu, prompt_tokens, generated_tokens, precision="bf16", eta_f=1.0, eta_b=1.0) -> PhaseTimes:
    """Prefill and decode of one request, alone on ``gpu``: FLOPs, bytes, roofline time and bound.

    The prefill pass (causal, :func:`aiinfra.compute.prefill_flops`) reads
    the weights once and emits output token 1; each of the ``G - 1`` decode
    steps that follow reads the weights plus the KV of its context (``P + 1``
    up to ``P + G - 1`` tokens) and does :func:`aiinfra.compute.decode_flops`.
    Times come from :func:`aiinfra.decode.prefill_time_s` and
    :func:`aiinfra.decode.decode_step_time_s` (reads and arithmetic overlap,
    no overheads). ``prefill_flops + decode_flops`` equals
    :func:`aiinfra.compute.request_flops`.
    """
    from . import compute, decode, memory, models, roofline, units

    m = models.load(model)
    p = _check.integer("prompt_tokens", prompt_tokens, minimum=1)
    g = _check.integer("generated_tokens", generated_tokens, minimum=1)
    ef = _check.fraction("eta_f", eta_f)
    eb = _check.fraction("eta_b", eta_b)
    weights = models.decode_read_params(m) * units.bytes_per_param(precision)
    pi = gpu.dense_flops_per_s("fp8" if units.bytes_per_param(precision) <= 1 and gpu.fp8_dense_flops_per_s
                               else "bf16")
    f_pre = compute.prefill_flops(m, p)
    t_pre = decode.prefill_time_s(m, gpu, p, precision, ef, eb)
    pre_bound = roofline.bound_label(f_pre, weights, pi, gpu.memory_bandwidth_bytes_per_s, ef, eb)
    if g == 1:
        return PhaseTimes(f_pre, weights, t_pre, pre_bound, 0, 0.0, 0.0, 0.0, "none")
    ctx = np.arange(p + 1, p + g)
    f_dec = float(np.sum(compute.decode_flops(m, ctx)))
    b_dec = float(weights * (g - 1) + np.sum(memory.kv_bytes_per_request(m, ctx)))
    t_dec = float(np.sum(decode.decode_step_time_s(m, gpu, 1, ctx, precision, eta_f=ef, eta_b=eb)))
    dec_bound = roofline.bound_label(f_dec, b_dec, pi, gpu.memory_bandwidth_bytes_per_s, ef, eb)
    return PhaseTimes(f_pre, weights, t_pre, pre_bound, g - 1, f_dec, b_dec, t_dec, dec_bound)


def decode_flops_without_cache(model, prompt_tokens, generated_tokens) -> float:
    """FLOPs of the ``G - 1`` decode steps if nothing were cached: each step reruns a full prefill.

    Without a KV cache, producing output token ``k + 1`` means pushing all
    ``P + k`` tokens through the model again (causal, logits for the last
    position only): ``sum_{k=1}^{G-1} F_prefill(P + k)``. Compare with the
    cached steps of :func:`request_phases` (about ``P + G/2`` times fewer).
    """
    from . import compute

    p = _check.integer("prompt_tokens", prompt_tokens, minimum=1)
    g = _check.integer("generated_tokens", generated_tokens, minimum=1)
    if g == 1:
        return 0.0
    return float(np.sum(compute.prefill_flops(model, np.arange(p + 1, p + g))))


def decode_time_without_cache_s(model, gpu, prompt_tokens, generated_tokens, precision="bf16", eta_f=1.0,
                                eta_b=1.0) -> float:
    """Lower bound on the ``G - 1`` decode steps if each reran a full prefill (no KV cache).

    ``sum_{k=1}^{G-1} T_prefill(P + k)`` with :func:`aiinfra.decode.prefill_time_s`.
    At batch 1 the cached steps are memory-bound and waste most of the
    arithmetic, so the time gap is far smaller than the FLOP gap of
    :func:`decode_flops_without_cache`; it grows with the prompt.
    """
    from . import decode, models

    m = models.load(model)
    p = _check.integer("prompt_tokens", prompt_tokens, minimum=1)
    g = _check.integer("generated_tokens", generated_tokens, minimum=1)
    if g == 1:
        return 0.0
    return float(np.sum(decode.prefill_time_s(m, gpu, np.arange(p + 1, p + g), precision, eta_f, eta_b)))
