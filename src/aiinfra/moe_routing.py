"""What a batch of tokens reads from a mixture-of-experts model.

Chapter 7. At batch 1 a MoE decode step reads only the experts the token's
router picked (:func:`aiinfra.models.decode_read_params`). A batch of ``B``
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
import sympy as sp

from . import _check
from .symbols import B, twin

__all__ = ["expected_expert_fraction", "step_read_params"]

k_sym = sp.Symbol("k", positive=True)
E_sym = sp.Symbol("E", positive=True)


def _out(x):
    arr = np.asarray(x, dtype=float)
    return float(arr) if arr.ndim == 0 else arr


@twin(1 - (1 - k_sym / E_sym) ** B,
      domains={"tokens": (1, 512, "int"), "experts_per_token": (1, 8, "int"), "n_experts": (8, 256, "int")},
      tokens=B, experts_per_token=k_sym, n_experts=E_sym)
def expected_expert_fraction(tokens, experts_per_token, n_experts):
    """Expected share of routed experts a step of ``tokens`` tokens touches: ``1 - (1 - k/E)^B``.

    Uniform, independent routing (see the module docstring). One token gives
    ``k/E``; the share tends to 1 as the batch grows. Chapter 7.
    """
    b = _check.integers("tokens", tokens, minimum=1)
    k = _check.integer("experts_per_token", experts_per_token, minimum=1)
    e = _check.integer("n_experts", n_experts, minimum=1)
    if k > e:
        raise ValueError(f"experts_per_token must be <= n_experts ({e}), got {k}")
    return _out(1.0 - (1.0 - k / e) ** np.asarray(b, dtype=float))


def step_read_params(model, tokens):
    """Parameters one decode step of ``tokens`` tokens reads from a MoE (or dense) model.

    ``decode_read_params - (k/E) * routed + f(B) * routed``, where ``routed``
    is every routed-expert parameter and ``f`` is
    :func:`expected_expert_fraction`. For a dense model this is
    :func:`aiinfra.models.decode_read_params` at any batch. Chapter 7.
    """
    from . import models

    m = models.load(model) if isinstance(model, str) else model
    base = float(models.decode_read_params(m))
    if not m.is_moe:
        _check.integers("tokens", tokens, minimum=1)
        return _out(np.full(np.shape(tokens), base)) if np.ndim(tokens) else base
    routed = float(models.params_by_role(m)["expert"])
    k, e = m.n_experts_per_token, m.n_routed_experts
    frac = expected_expert_fraction(tokens, k, e)
    return _out(base - routed * k / e + routed * np.asarray(frac))
