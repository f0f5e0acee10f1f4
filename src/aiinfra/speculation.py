"""Break-even points of speculative decoding.

Chapter 7. :mod:`aiinfra.serving` gives the expected tokens per target pass,
``E(alpha, gamma) = (1 - alpha^(gamma+1)) / (1 - alpha)``, and the speedup
``E / (gamma c + 1)`` when one draft pass costs ``c`` target passes
(Leviathan, Kalman and Matias 2023). This module answers the inverse
questions a deployment asks:

* how expensive may the draft model be before speculation stops paying,
  ``c_max = (E - 1) / gamma`` (:func:`max_draft_cost_ratio`);
* how often must the draft be right, the ``alpha`` at which the speedup is
  exactly 1 (:func:`breakeven_alpha`);
* how many tokens to draft, the ``gamma`` that maximises the speedup
  (:func:`best_gamma`).
"""
from __future__ import annotations

import numpy as np

from . import _check
from .serving import expected_tokens_per_target_pass, speculative_speedup
from .symbols import alpha, gamma, twin

__all__ = ["max_draft_cost_ratio", "breakeven_alpha", "best_gamma"]


def _out(x):
    arr = np.asarray(x, dtype=float)
    return float(arr) if arr.ndim == 0 else arr


@twin(((1 - alpha ** (gamma + 1)) / (1 - alpha) - 1) / gamma,
      domains={"alpha": (0.0, 0.999, "float"), "gamma": (1, 16, "int")}, alpha=alpha, gamma=gamma)
def max_draft_cost_ratio(alpha, gamma):
    """Largest draft cost ``c`` (in target passes) at which speculation still breaks even.

    Setting ``E / (gamma c + 1) = 1`` gives ``c_max = (E(alpha, gamma) - 1) / gamma``.
    A draft model slower than that makes decoding slower, not faster.
    At ``alpha = 0`` nothing is ever accepted and ``c_max = 0``. Chapter 7.
    """
    g = np.asarray(_check.integers("gamma", gamma, minimum=1), dtype=float)
    e = np.asarray(expected_tokens_per_target_pass(alpha, gamma))
    return _out((e - 1.0) / g)


def breakeven_alpha(gamma, draft_cost_ratio):
    """Acceptance rate at which speculative decoding neither wins nor loses.

    Solves ``E(alpha, gamma) = gamma c + 1`` for ``alpha`` in [0, 1] by
    bisection (``E`` rises monotonically from 1 to ``gamma + 1``). Needs
    ``0 <= draft_cost_ratio < 1``: a draft as slow as the target can never
    pay. Accepts arrays of ``draft_cost_ratio``. Chapter 7.
    """
    g = _check.integer("gamma", gamma, minimum=1)
    c = np.asarray(_check.fraction("draft_cost_ratio", draft_cost_ratio, open_low=False, closed_high=False))
    target = g * c + 1.0
    lo = np.zeros_like(c, dtype=float)
    hi = np.ones_like(c, dtype=float)
    for _ in range(60):
        mid = 0.5 * (lo + hi)
        below = np.asarray(expected_tokens_per_target_pass(mid, g)) < target
        lo = np.where(below, mid, lo)
        hi = np.where(below, hi, mid)
    return _out(0.5 * (lo + hi))


def best_gamma(alpha, draft_cost_ratio, max_gamma=16):
    """The draft length ``gamma`` in 1..``max_gamma`` with the highest speedup.

    Returns ``(gamma, speedup)`` as an ``int`` and a ``float`` (scalars only).
    If even the best ``gamma`` gives a speedup below 1, speculation should
    be switched off. Chapter 7.
    """
    a = _check.fraction("alpha", alpha, open_low=False)
    c = _check.non_negative("draft_cost_ratio", draft_cost_ratio)
    m = _check.integer("max_gamma", max_gamma, minimum=1)
    if np.ndim(a) or np.ndim(c):
        raise ValueError("alpha and draft_cost_ratio must be scalars for best_gamma")
    gammas = np.arange(1, m + 1)
    speed = np.array([speculative_speedup(a, int(g), c) for g in gammas])
    i = int(np.argmax(speed))
    return int(gammas[i]), float(speed[i])
