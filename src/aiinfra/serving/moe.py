"""Mixture of experts: the parameters one token uses, and what a batch of tokens reads.

Chapter 7. A token uses the shared parameters plus ``k`` routed experts
(:func:`aiinfra.catalog.models.active_params`), so a model with a large total
count can stream like a much smaller dense one at batch 1. At batch 1 a MoE decode step reads only the experts the token's
router picked (:func:`aiinfra.catalog.models.decode_read_params`). A batch of ``B``
tokens picks its experts independently, so the *union* of experts touched
grows with ``B``. If each token picks ``k`` of ``E`` experts per layer, the
picks are uniform and the tokens independent, an expert escapes all ``B``
tokens with probability ``(1 - k/E)^B``, so the expected share of experts a
step must read is

    f(B) = 1 - (1 - k/E)^B

(:func:`expected_expert_fraction`). Real routers are trained to balance load,
which keeps this close to the uniform case; correlated tokens (one long
prompt) touch fewer. The weight bytes of one step are then the dense part
plus ``f(B)`` of all routed-expert weights (:func:`step_read_params`).
"""

from __future__ import annotations

import numpy as np

from aiinfra.catalog import models
from aiinfra.formula import formula

__all__ = ["expected_expert_fraction", "step_read_params"]


@formula(
    tokens="B int>=1",
    experts_per_token="k int>=1",
    n_experts="E int>=1",
)
def expected_expert_fraction(tokens, experts_per_token, n_experts):
    """Expected share of routed experts a step of ``tokens`` tokens touches: ``1 - (1 - k/E)^B``.

    Uniform, independent routing (see the module docstring). One token gives
    ``k/E``; the share tends to 1 as the batch grows. Chapter 7.
    """
    if np.any(experts_per_token > n_experts):
        raise ValueError(f"experts_per_token must be <= n_experts ({n_experts}), got {experts_per_token}")
    return 1.0 - (1.0 - experts_per_token / n_experts) ** tokens


@formula(None, model="label", tokens="int>=1")
def step_read_params(model, tokens):
    """Parameters one decode step of ``tokens`` tokens reads from a MoE (or dense) model.

    ``decode_read_params - (k/E) * routed + f(B) * routed``, where ``routed``
    is every routed-expert parameter and ``f`` is
    :func:`expected_expert_fraction`. For a dense model this is
    :func:`aiinfra.catalog.models.decode_read_params` at any batch. Chapter 7.
    """
    m = models.load(model)
    base = float(models.decode_read_params(m))
    if not m.is_moe:
        return np.full(np.shape(tokens), base)
    routed = float(models._routed_params(m))
    k, e = m.n_experts_per_token, m.n_routed_experts
    frac = expected_expert_fraction(tokens, k, e)
    return base - routed * k / e + routed * np.asarray(frac)
