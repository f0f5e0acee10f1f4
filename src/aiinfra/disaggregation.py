"""When disaggregated prefill/decode pays: interference against KV transfer.

Chapter 7. On a *colocated* server the same GPUs run both phases. A prefill
of ``P`` tokens is a long, compute-bound job (tens to hundreds of
milliseconds); while it runs, the decode batch waits. A *disaggregated*
deployment (DistServe, Splitwise) runs prefill on one pool and decode on
another, so decode never waits for a prefill, but every request's KV cache
must cross the network from the prefill node to the decode node once.

The model here is deliberately small:

* Prefills arrive at a decode server at ``lam`` per second and each takes
  ``t_p`` seconds, so prefill occupies a share ``u = lam * t_p`` of the GPU
  (:func:`prefill_busy_fraction`). It must stay below 1.
* Prefill preempts decode (no chunking). Averaged over a long answer, decode
  gets the remaining ``1 - u`` of the time, so the mean time per output token
  grows from ``t_d`` to ``t_d / (1 - u)`` (:func:`colocated_tpot_s`); the worst
  single gap is ``t_d + t_p`` (:func:`colocated_worst_gap_s`).
* Disaggregated, the decode step stays ``t_d``, but the KV of the prompt,
  ``P * kv`` bytes, is shipped once at ``beta`` B/s with a fixed latency
  ``t_0`` (:func:`kv_handoff_time_s`).

For one request generating ``G`` tokens, disaggregation saves
``G t_d u / (1 - u) - t_kv`` seconds of end-to-end time
(:func:`disaggregation_gain_s`); it pays when that is positive, i.e. when the
answer is longer than :func:`breakeven_output_tokens`. The network must also
carry ``lam * P * kv`` bytes per second (:func:`kv_handoff_bandwidth_bytes_per_s`).

Ignored on purpose: chunked prefill (which caps the worst gap at the chunk
time and is colocation's main counter-measure), queueing delay, the
different GPU counts the two pools need, and overlap of the KV transfer with
the first decode steps. SI units throughout.
"""
from __future__ import annotations

import numpy as np
import sympy as sp

from . import _check
from .symbols import P, G_out, beta, t_lat, twin

__all__ = [
    "prefill_busy_fraction",
    "colocated_tpot_s",
    "colocated_worst_gap_s",
    "kv_handoff_time_s",
    "kv_handoff_bandwidth_bytes_per_s",
    "disaggregation_gain_s",
    "breakeven_output_tokens",
]

lam = sp.Symbol("lambda", positive=True)      # prefill arrivals per second at one server
t_p = sp.Symbol("t_p", positive=True)         # time of one prefill
t_d = sp.Symbol("t_d", positive=True)         # decode step time without interference
u = sp.Symbol("u", positive=True)             # share of GPU time spent in prefill
kv = sp.Symbol("kv", positive=True)           # KV bytes per token (whole model)
t_kv = sp.Symbol("t_kv", positive=True)       # KV hand-off time per request

_U = (0.0, 0.95, "float")


def _out(x):
    arr = np.asarray(x, dtype=float)
    return float(arr) if arr.ndim == 0 else arr


def _busy(value):
    return _check.fraction("prefill_busy_fraction", value, open_low=False, closed_high=False)


@twin(lam * t_p, domains={"prefill_rate_per_s": (0.01, 10.0, "float"), "prefill_time_s": (0.001, 0.09, "float")},
      prefill_rate_per_s=lam, prefill_time_s=t_p)
def prefill_busy_fraction(prefill_rate_per_s, prefill_time_s):
    """Share of a colocated GPU's time taken by prefill: ``u = lam * t_p``.

    ``prefill_rate_per_s`` new requests per second reach the server and each
    prefill takes ``prefill_time_s``. A value of 1 or more means the server
    cannot even keep up with prefill; the caller must add servers. Chapter 7.
    """
    rate = _check.non_negative("prefill_rate_per_s", prefill_rate_per_s)
    t = _check.positive("prefill_time_s", prefill_time_s)
    return _out(np.asarray(rate) * np.asarray(t))


@twin(t_d / (1 - u), domains={"prefill_busy_fraction": _U},
      decode_step_time_s=t_d, prefill_busy_fraction=u)
def colocated_tpot_s(decode_step_time_s, prefill_busy_fraction):
    """Mean time per output token when prefills preempt decode: ``t_d / (1 - u)``.

    ``decode_step_time_s`` is the step time of the decode batch alone;
    ``prefill_busy_fraction`` in [0, 1) is ``u`` from
    :func:`prefill_busy_fraction`. Chapter 7.
    """
    td = _check.positive("decode_step_time_s", decode_step_time_s)
    uu = _busy(prefill_busy_fraction)
    return _out(np.asarray(td) / (1.0 - np.asarray(uu)))


@twin(t_d + t_p, decode_step_time_s=t_d, prefill_time_s=t_p)
def colocated_worst_gap_s(decode_step_time_s, prefill_time_s):
    """Longest gap between two output tokens on a colocated server: ``t_d + t_p``.

    A decode step that lands behind a whole (unchunked) prefill waits for it.
    This is the stall a streaming user sees as a pause. Chapter 7.
    """
    td = _check.positive("decode_step_time_s", decode_step_time_s)
    tp = _check.non_negative("prefill_time_s", prefill_time_s)
    return _out(np.asarray(td) + np.asarray(tp))


@twin(t_lat + P * kv / beta, domains={"latency_s": (0.0, 1e-3, "float")},
      prompt_tokens=P, kv_bytes_per_token=kv, bandwidth_bytes_per_s=beta, latency_s=t_lat)
def kv_handoff_time_s(prompt_tokens, kv_bytes_per_token, bandwidth_bytes_per_s, latency_s=0.0):
    """Time to ship one request's KV cache from prefill to decode: ``t_0 + P kv / beta``.

    ``kv_bytes_per_token`` is the whole model's KV per token (all layers);
    ``bandwidth_bytes_per_s`` is the bandwidth the transfer really gets (for
    a 400 Gbit/s NIC, 50e9 B/s at most; several NICs in parallel add up);
    ``latency_s`` is the fixed set-up cost. Chapter 7.
    """
    p = _check.non_negative("prompt_tokens", prompt_tokens)
    k = _check.positive("kv_bytes_per_token", kv_bytes_per_token)
    b = _check.positive("bandwidth_bytes_per_s", bandwidth_bytes_per_s)
    t0 = _check.non_negative("latency_s", latency_s)
    return _out(np.asarray(t0) + np.asarray(p) * np.asarray(k) / np.asarray(b))


@twin(lam * P * kv, prefill_rate_per_s=lam, prompt_tokens=P, kv_bytes_per_token=kv)
def kv_handoff_bandwidth_bytes_per_s(prefill_rate_per_s, prompt_tokens, kv_bytes_per_token):
    """Network bandwidth the KV hand-off needs: ``lam P kv`` bytes per second.

    If this exceeds what the links between the pools carry, the transfers
    queue and disaggregation loses. Chapter 7.
    """
    rate = _check.non_negative("prefill_rate_per_s", prefill_rate_per_s)
    p = _check.non_negative("prompt_tokens", prompt_tokens)
    k = _check.positive("kv_bytes_per_token", kv_bytes_per_token)
    return _out(np.asarray(rate) * np.asarray(p) * np.asarray(k))


@twin(G_out * t_d * u / (1 - u) - t_kv, domains={"prefill_busy_fraction": _U},
      decode_step_time_s=t_d, prefill_busy_fraction=u, output_tokens=G_out, kv_handoff_time_s=t_kv)
def disaggregation_gain_s(decode_step_time_s, prefill_busy_fraction, output_tokens, kv_handoff_time_s):
    """End-to-end time one request saves by disaggregating: ``G t_d u/(1-u) - t_kv``.

    The first term is the decode time lost to prefill interference over
    ``output_tokens`` steps on a colocated server; the second is the one-time
    KV hand-off. Positive means disaggregation is faster for this request.
    Chapter 7.
    """
    td = _check.positive("decode_step_time_s", decode_step_time_s)
    uu = _busy(prefill_busy_fraction)
    g = _check.non_negative("output_tokens", output_tokens)
    tk = _check.non_negative("kv_handoff_time_s", kv_handoff_time_s)
    uu = np.asarray(uu)
    return _out(np.asarray(g) * np.asarray(td) * uu / (1.0 - uu) - np.asarray(tk))


@twin(t_kv * (1 - u) / (t_d * u), domains={"prefill_busy_fraction": (0.01, 0.95, "float")},
      decode_step_time_s=t_d, prefill_busy_fraction=u, kv_handoff_time_s=t_kv)
def breakeven_output_tokens(decode_step_time_s, prefill_busy_fraction, kv_handoff_time_s):
    """Answer length above which disaggregation wins: ``t_kv (1-u) / (t_d u)`` tokens.

    Needs ``prefill_busy_fraction`` in (0, 1): with no prefill interference
    there is nothing to win and the break-even is infinite. Chapter 7.
    """
    td = _check.positive("decode_step_time_s", decode_step_time_s)
    uu = _check.fraction("prefill_busy_fraction", prefill_busy_fraction, closed_high=False)
    tk = _check.non_negative("kv_handoff_time_s", kv_handoff_time_s)
    uu = np.asarray(uu)
    return _out(np.asarray(tk) * (1.0 - uu) / (np.asarray(td) * uu))
