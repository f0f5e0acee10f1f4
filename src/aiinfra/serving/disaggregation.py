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

from aiinfra.formula import formula

__all__ = [
    "prefill_busy_fraction",
    "colocated_tpot_s",
    "colocated_worst_gap_s",
    "kv_handoff_time_s",
    "kv_handoff_bandwidth_bytes_per_s",
    "disaggregation_gain_s",
    "breakeven_output_tokens",
    "layerwise_kv_exposed_s",
]


@formula(
    prefill_rate_per_s="lambda_ >=0",
    prefill_time_s="t_p >0",
)
def prefill_busy_fraction(prefill_rate_per_s, prefill_time_s):
    """Share of a colocated GPU's time taken by prefill: ``u = lam * t_p``.

    ``prefill_rate_per_s`` new requests per second reach the server and each
    prefill takes ``prefill_time_s``. A value of 1 or more means the server
    cannot even keep up with prefill; the caller must add servers. Chapter 7.
    """
    return prefill_rate_per_s * prefill_time_s


@formula(decode_step_time_s="t_d >0", prefill_busy_fraction="u [0,1)")
def colocated_tpot_s(decode_step_time_s, prefill_busy_fraction):
    """Mean time per output token when prefills preempt decode: ``t_d / (1 - u)``.

    ``decode_step_time_s`` is the step time of the decode batch alone;
    ``prefill_busy_fraction`` in [0, 1) is ``u`` from
    :func:`prefill_busy_fraction`. Chapter 7.
    """
    return decode_step_time_s / (1.0 - prefill_busy_fraction)


@formula(decode_step_time_s="t_d >0", prefill_time_s="t_p >=0")
def colocated_worst_gap_s(decode_step_time_s, prefill_time_s):
    """Longest gap between two output tokens on a colocated server: ``t_d + t_p``.

    A decode step that lands behind a whole (unchunked) prefill waits for it.
    This is the stall a streaming user sees as a pause. Chapter 7.
    """
    return decode_step_time_s + prefill_time_s


@formula(
    prompt_tokens="P >=0",
    kv_bytes_per_token="kv >0",
    bandwidth_bytes_per_s="beta >0",
    latency_s="t_0 >=0",
)
def kv_handoff_time_s(prompt_tokens, kv_bytes_per_token, bandwidth_bytes_per_s, latency_s=0.0):
    """Time to ship one request's KV cache from prefill to decode: ``t_0 + P kv / beta``.

    ``kv_bytes_per_token`` is the whole model's KV per token (all layers);
    ``bandwidth_bytes_per_s`` is the bandwidth the transfer really gets (for
    a 400 Gbit/s NIC, 50e9 B/s at most; several NICs in parallel add up);
    ``latency_s`` is the fixed set-up cost. Chapter 7.
    """
    return latency_s + prompt_tokens * kv_bytes_per_token / bandwidth_bytes_per_s


@formula(prefill_rate_per_s="lambda_ >=0", prompt_tokens="P >=0", kv_bytes_per_token="kv >0")
def kv_handoff_bandwidth_bytes_per_s(prefill_rate_per_s, prompt_tokens, kv_bytes_per_token):
    """Network bandwidth the KV hand-off needs: ``lam P kv`` bytes per second.

    If this exceeds what the links between the pools carry, the transfers
    queue and disaggregation loses. Chapter 7.
    """
    return prefill_rate_per_s * prompt_tokens * kv_bytes_per_token


@formula(
    decode_step_time_s="t_d >0",
    prefill_busy_fraction="u [0,1)",
    output_tokens="G >=0",
    kv_handoff_time_s="t_kv >=0",
)
def disaggregation_gain_s(decode_step_time_s, prefill_busy_fraction, output_tokens, kv_handoff_time_s):
    """End-to-end time one request saves by disaggregating: ``G t_d u/(1-u) - t_kv``.

    The first term is the decode time lost to prefill interference over
    ``output_tokens`` steps on a colocated server; the second is the one-time
    KV hand-off. Positive means disaggregation is faster for this request.
    Chapter 7.
    """
    u = prefill_busy_fraction
    return output_tokens * decode_step_time_s * u / (1.0 - u) - kv_handoff_time_s


@formula(
    decode_step_time_s="t_d >0",
    prefill_busy_fraction="u (0,1)",
    kv_handoff_time_s="t_kv >=0",
)
def breakeven_output_tokens(decode_step_time_s, prefill_busy_fraction, kv_handoff_time_s):
    """Answer length above which disaggregation wins: ``t_kv (1-u) / (t_d u)`` tokens.

    Needs ``prefill_busy_fraction`` in (0, 1): with no prefill interference
    there is nothing to win and the break-even is infinite. Chapter 7.
    """
    u = prefill_busy_fraction
    return kv_handoff_time_s * (1.0 - u) / (decode_step_time_s * u)


@formula(
    prefill_time_s="t_p >0",
    kv_transfer_time_s="t_kv >=0",
    n_layers="L int>=1",
)
def layerwise_kv_exposed_s(prefill_time_s, kv_transfer_time_s, n_layers):
    """KV hand-off time left after prefill ends when each layer's KV is sent as soon as it is computed.

    Layers take ``t_p / L`` each to compute and ``t_kv / L`` each to send, one
    send at a time. The last send ends at ``max(t_p + t_kv/L, t_p/L + t_kv)``,
    so the exposed time is ``max(t_kv/L, t_kv - t_p + t_p/L)``: one layer's
    transfer when the link keeps up, the excess of the transfer over the
    compute when it does not. Sending after the whole prefill exposes all of
    ``t_kv`` (:func:`kv_handoff_time_s`). Equal layers assumed. Chapter 7
    (DistServe, Mooncake and Dynamo overlap the transfer this way).
    """
    per_layer = prefill_time_s / n_layers
    return np.maximum(kv_transfer_time_s / n_layers, kv_transfer_time_s - prefill_time_s + per_layer)
