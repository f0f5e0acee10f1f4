"""Speculative decoding: expected tokens per target pass, speedup, and the break-even points.

Chapter 7. A draft model proposes ``gamma`` tokens, the target model checks
them in one pass, and each drafted token is accepted with probability
``alpha`` (independently, the simplifying assumption of Leviathan, Kalman and
Matias, ICML 2023, section 3). One target pass then yields on average

    E(alpha, gamma) = (1 - alpha^(gamma + 1)) / (1 - alpha)        (-> gamma + 1 as alpha -> 1)

tokens, and if a draft pass costs ``c`` target passes, the wall-clock
improvement is ``E / (gamma c + 1)`` (their walltime improvement factor).
The inverse questions a deployment asks: how expensive may the draft be,
``c_max = (E - 1) / gamma`` (:func:`max_draft_cost_ratio`); how often must it
be right (:func:`breakeven_alpha`); how many tokens to draft (:func:`best_gamma`).

Drafts without a draft model. EAGLE (Li et al., 2024-2025) drafts from the
target's own hidden states with one light layer, and verifies a *tree* of
candidates; an MTP head (DeepSeek-V3) is an extra block trained to predict
the token after next. A tree that keeps ``k`` candidates at each of ``D``
depths accepts a depth if any candidate is right, ``a = 1 - (1 - alpha)^k``
(independent candidates, an optimistic assumption), and so yields
``E(a, D)`` tokens per pass (:func:`tree_expected_tokens_per_pass`) for
``1 + k D`` verified positions (:func:`tree_verified_tokens`). Verification
costs attention FLOPs for every verified position, accepted or not:
``2 L T n (w_qk + w_v)`` over an ``n``-token context
(:func:`verification_attention_flops`).
"""

from __future__ import annotations

import numpy as np

from aiinfra.formula import check, formula

__all__ = [
    "expected_tokens_per_target_pass",
    "speculative_speedup",
    "max_draft_cost_ratio",
    "breakeven_alpha",
    "best_gamma",
    "free_verification_batch",
    "tree_level_acceptance",
    "tree_expected_tokens_per_pass",
    "tree_verified_tokens",
    "verification_attention_flops",
]

_SAMPLE = {"alpha": (0.0, 0.999), "gamma": (1, 16)}


def _expected_tokens(a, g):
    one = np.isclose(a, 1.0, rtol=0.0, atol=1e-12)
    safe = np.where(one, 0.5, a)
    val = (1.0 - safe ** (g + 1.0)) / (1.0 - safe)
    return np.where(one, g + 1.0, val)


@formula("(1 - alpha**(gamma + 1))/(1 - alpha)", sample=_SAMPLE, alpha="alpha [0,1]", gamma="gamma int>=1")
def expected_tokens_per_target_pass(alpha, gamma):
    """Mean tokens produced per target-model pass: ``(1 - alpha^(gamma+1)) / (1 - alpha)``.

    ``alpha`` in [0, 1] is the per-token acceptance rate, ``gamma`` >= 1 the
    number of drafted tokens. At ``alpha = 1`` every draft is accepted and the
    value is its limit ``gamma + 1``; at ``alpha = 0`` it is 1 (the target's
    own token).
    """
    return _expected_tokens(alpha, gamma)


@formula(
    alpha="alpha [0,1]",
    gamma="gamma int>=1",
    draft_cost_ratio="c >=0",
)
def speculative_speedup(alpha, gamma, draft_cost_ratio):
    """Expected wall-clock speedup of speculative decoding: ``E[tokens] / (gamma c + 1)``.

    ``draft_cost_ratio`` ``c`` >= 0 is the time of one draft pass divided by
    one target pass. A value below 1 means speculation loses time.
    """
    return expected_tokens_per_target_pass(alpha, gamma) / (gamma * draft_cost_ratio + 1.0)


@formula(
    alpha="alpha [0,1]",
    gamma="gamma int>=1",
)
def max_draft_cost_ratio(alpha, gamma):
    """Largest draft cost ``c`` (in target passes) at which speculation still breaks even.

    Setting ``E / (gamma c + 1) = 1`` gives ``c_max = (E(alpha, gamma) - 1) / gamma``.
    A draft model slower than that makes decoding slower, not faster.
    At ``alpha = 0`` nothing is ever accepted and ``c_max = 0``. Chapter 7.
    """
    return (expected_tokens_per_target_pass(alpha, gamma) - 1.0) / gamma


@formula(None, gamma="int>=1", draft_cost_ratio="[0,1)")
def breakeven_alpha(gamma, draft_cost_ratio):
    """Acceptance rate at which speculative decoding neither wins nor loses.

    Solves ``E(alpha, gamma) = gamma c + 1`` for ``alpha`` in [0, 1] by
    bisection (``E`` rises monotonically from 1 to ``gamma + 1``). Needs
    ``0 <= draft_cost_ratio < 1``: a draft as slow as the target can never
    pay. Accepts arrays of ``draft_cost_ratio``. Chapter 7.
    """
    g = int(gamma)
    c = draft_cost_ratio
    target = g * c + 1.0
    lo = np.zeros_like(c, dtype=float)
    hi = np.ones_like(c, dtype=float)
    for _ in range(60):
        mid = 0.5 * (lo + hi)
        below = np.asarray(expected_tokens_per_target_pass(mid, g)) < target
        lo = np.where(below, mid, lo)
        hi = np.where(below, hi, mid)
    return 0.5 * (lo + hi)


def best_gamma(alpha, draft_cost_ratio, max_gamma=16):
    """The draft length ``gamma`` in 1..``max_gamma`` with the highest speedup.

    Returns ``(gamma, speedup)`` as an ``int`` and a ``float`` (scalars only).
    If even the best ``gamma`` gives a speedup below 1, speculation should
    be switched off. Chapter 7.
    """
    a = check("alpha", alpha, "[0,1]", scalar=True)
    c = check("draft_cost_ratio", draft_cost_ratio, ">=0", scalar=True)
    m = check("max_gamma", max_gamma, "int>=1", scalar=True)
    gammas = np.arange(1, m + 1)
    speed = np.array([speculative_speedup(a, int(g), c) for g in gammas])
    i = int(np.argmax(speed))
    return int(gammas[i]), float(speed[i])


@formula(critical_batch="B_star >0", gamma="gamma int>=1")
def free_verification_batch(critical_batch, gamma):
    """Largest batch whose verification pass is still memory-bound: ``B* / (gamma + 1)``.

    A target pass scores ``gamma + 1`` positions for every request, so its
    arithmetic reaches the critical batch ``B*`` (where compute and the weight
    read take equally long, :attr:`aiinfra.deployment.Deployment.critical_batch`)
    at ``B* / (gamma + 1)`` requests. Below it the extra positions are free;
    above it every rejected guess costs real compute. Chapter 7.
    """
    return critical_batch / (gamma + 1.0)


@formula(alpha="alpha [0,1]", width="k int>=1")
def tree_level_acceptance(alpha, width):
    """Probability that one depth of a draft tree is accepted: ``1 - (1 - alpha)^k`` for ``k`` candidates.

    Assumes each candidate is right with probability ``alpha``, independently
    of its siblings; real siblings are correlated, so this is an upper bound
    on what widening the tree buys. ``width = 1`` is a chain draft. Chapter 7.
    """
    return 1.0 - (1.0 - alpha) ** width


@formula(
    alpha="alpha [0,1]",
    depth="D int>=1",
    width="k int>=1",
)
def tree_expected_tokens_per_pass(alpha, depth, width):
    """Mean tokens per target pass from a draft tree ``depth`` deep with ``width`` candidates per depth.

    :func:`expected_tokens_per_target_pass` at the tree's per-depth acceptance
    :func:`tree_level_acceptance`. Chapter 7.
    """
    return _expected_tokens(1.0 - (1.0 - alpha) ** width, depth)


@formula(depth="D int>=1", width="k int>=1", out=int)
def tree_verified_tokens(depth, width):
    """Positions the target scores in one verification pass of a tree of ``depth`` x ``width``: ``1 + k D``.

    The last accepted token plus every drafted node. A chain draft of
    ``gamma`` tokens is ``width = 1``, ``depth = gamma``. Chapter 7.
    """
    return 1.0 + width * depth


@formula(
    n_layers="L int>=1",
    qk_width="w_qk >0",
    v_width="w_v >0",
    context_tokens="n_ctx int>=0",
    verified_tokens="T int>=1",
)
def verification_attention_flops(n_layers, qk_width, v_width, context_tokens, verified_tokens):
    """Attention FLOPs of one verification pass: ``2 L T n (w_qk + w_v)``.

    Each of the ``T`` verified positions attends to the ``n`` cached tokens
    (the few keys among the drafts themselves are left out, ``T << n``). The
    KV is read once for all ``T``, so the pass does ``T`` times the FLOPs of a
    decode step's attention for the same bytes. Chapter 7.
    """
    return 2.0 * n_layers * verified_tokens * context_tokens * (qk_width + v_width)
