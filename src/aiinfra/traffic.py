"""How often each kind of data moves while one request is generated (chapter 1).

A generation request touches four kinds of data, at four very different rates:

* the **weights** are copied onto the accelerator once, when the instance starts,
  and then streamed from device memory to the compute units once per decode step;
* the **KV cache** grows by one entry per token (prompt tokens during prefill,
  one more per generated token) and the whole of it is read at every step;
* **intermediate tensors** (activations) cross a card boundary only when the
  model is split over several accelerators: one hidden vector per token per cut;
* the **text** that enters and leaves the service is tiny next to all of these.

The functions below count the bytes. Conventions: batch 1 (no sharing of the
weight read); decode step ``i`` (``i = 0 .. G-1``) attends to the ``P + i``
tokens already in the cache, reads all of their keys and values once, and
appends its own; prefill writes the prompt's ``P`` entries. All sizes are
bytes (SI floats); arrays are accepted wherever a figure sweeps an argument.
"""
from __future__ import annotations

import numpy as np
import sympy as sp

from . import _check
from .symbols import G_out, P, R_W, d, twin

__all__ = [
    "kv_bytes_written",
    "kv_bytes_read",
    "weight_bytes_streamed",
    "activation_bytes_per_token",
    "request_traffic",
]

#: bytes of keys and values stored per token (all layers), the ``k`` of this module
k_tok = sp.Symbol("k_tok", positive=True)
#: bytes per stored activation element
b_act = sp.Symbol("b_act", positive=True)

_TOKENS = (1, 5000, "int")
_KV = (1e3, 1e6, "float")


def _out(x):
    arr = np.asarray(x, dtype=float)
    return float(arr) if arr.ndim == 0 else arr


@twin(k_tok * (P + G_out), domains={"prompt_tokens": _TOKENS, "output_tokens": _TOKENS, "kv_bytes_per_token": _KV},
      kv_bytes_per_token=k_tok, prompt_tokens=P, output_tokens=G_out)
def kv_bytes_written(kv_bytes_per_token, prompt_tokens, output_tokens):
    """Bytes appended to the KV cache over a whole request: ``k (P + G)``.

    Prefill stores one entry per prompt token, each decode step one more, so
    the cache ends at ``P + G`` entries of ``k`` bytes. This is also the cache
    size the request holds when it finishes. Chapter 1.
    """
    k = _check.positive("kv_bytes_per_token", kv_bytes_per_token)
    p = _check.integers("prompt_tokens", prompt_tokens, minimum=0)
    g = _check.integers("output_tokens", output_tokens, minimum=0)
    return _out(np.asarray(k) * (np.asarray(p) + np.asarray(g)))


@twin(k_tok * (G_out * P + G_out * (G_out - 1) / 2),
      domains={"prompt_tokens": _TOKENS, "output_tokens": _TOKENS, "kv_bytes_per_token": _KV},
      kv_bytes_per_token=k_tok, prompt_tokens=P, output_tokens=G_out)
def kv_bytes_read(kv_bytes_per_token, prompt_tokens, output_tokens):
    """Bytes of KV cache read over all decode steps: ``k (G P + G (G - 1) / 2)``.

    Step ``i`` (0-based) reads the ``P + i`` entries already cached, so the
    total is ``k * sum_{i=0}^{G-1} (P + i)``. It grows with the *square* of
    the answer length, while the weight reads grow linearly. Prefill's own
    attention reads are not counted (they stay on chip in a fused kernel).
    Chapter 1.
    """
    k = _check.positive("kv_bytes_per_token", kv_bytes_per_token)
    p = np.asarray(_check.integers("prompt_tokens", prompt_tokens, minimum=0), dtype=float)
    g = np.asarray(_check.integers("output_tokens", output_tokens, minimum=0), dtype=float)
    return _out(np.asarray(k) * (g * p + g * (g - 1) / 2))


@twin(G_out * R_W, domains={"output_tokens": _TOKENS}, weight_bytes_per_step=R_W, output_tokens=G_out)
def weight_bytes_streamed(weight_bytes_per_step, output_tokens):
    """Weight bytes streamed from device memory over a request at batch 1: ``G R_W``.

    Each decode step reads every weight it multiplies once (``R_W`` bytes),
    however many times the weights were loaded (once, at start-up). With a
    batch of ``B`` requests sharing a step, divide by ``B`` for one request's
    share. Chapter 1.
    """
    r = _check.positive("weight_bytes_per_step", weight_bytes_per_step)
    g = _check.integers("output_tokens", output_tokens, minimum=0)
    return _out(np.asarray(r) * np.asarray(g))


@twin(d * b_act, domains={"hidden_size": (64, 16384, "int"), "bytes_per_element": (1, 4, "int")},
      hidden_size=d, bytes_per_element=b_act)
def activation_bytes_per_token(hidden_size, bytes_per_element=2):
    """Bytes of one token's hidden vector, ``d b``: what crosses a pipeline cut.

    When a model's layers are split between two cards, each token's hidden
    state (``hidden_size`` elements, 2 bytes each in BF16) is handed from one
    card to the next once per step. Tensor parallelism moves more (two
    all-reduces per layer; see chapter 6). Chapter 1.
    """
    h = _check.integers("hidden_size", hidden_size, minimum=1)
    b = _check.positive("bytes_per_element", bytes_per_element)
    return _out(np.asarray(h) * np.asarray(b))


def request_traffic(weight_bytes_resident, weight_bytes_per_step, kv_bytes_per_token, hidden_size,
                    prompt_tokens, output_tokens, bytes_per_element=2):
    """Every movement of one batch-1 request, as a dict of bytes (chapter 1's table).

    Keys: ``weights_loaded`` (once, at start-up), ``weights_streamed`` (over all
    decode steps), ``kv_written`` and ``kv_read`` (whole request),
    ``kv_per_token`` (appended per token), ``activation_per_token_per_cut``
    (hidden vector handed across a pipeline cut), ``steps`` (decode steps).
    """
    loaded = _check.positive("weight_bytes_resident", weight_bytes_resident)
    g = _check.integer("output_tokens", output_tokens, minimum=0)
    p = _check.integer("prompt_tokens", prompt_tokens, minimum=0)
    return {
        "weights_loaded": float(loaded),
        "weights_streamed": weight_bytes_streamed(weight_bytes_per_step, g),
        "kv_per_token": _check.positive("kv_bytes_per_token", kv_bytes_per_token),
        "kv_written": kv_bytes_written(kv_bytes_per_token, p, g),
        "kv_read": kv_bytes_read(kv_bytes_per_token, p, g),
        "activation_per_token_per_cut": activation_bytes_per_token(hidden_size, bytes_per_element),
        "steps": g,
    }
