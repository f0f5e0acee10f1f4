"""The KV budget and what it does to throughput and price (chapter 5).

Three results the chapter needs on top of :mod:`aiinfra.decode`:

* **The naive batching claim.** Multiplying a single-stream rate
  ``beta / W`` by the batch ``B`` (:func:`naive_batch_tokens_per_s`) assumes
  that a step of ``B`` requests costs the same as a step of one. It forgets
  that every request reads its own KV cache in every step.
* **The consistent memory bound.** One decode step of ``B`` requests on
  ``n`` GPUs that together hold the model reads the weights once and every
  request's cache once, over the aggregate bandwidth ``n eta beta``:

      tok/s = B n eta beta / (W + B S)            (S = KV bytes per request)

  (:func:`node_batch_tokens_per_s`). As ``B`` grows, ``B S`` overtakes ``W``
  and the rate flattens at ``n eta beta / S``, however large the batch;
  :func:`kv_read_share` says how much of the step is spent on KV.
* **Why long contexts cost more.** With a fixed KV budget, the batch that
  fits shrinks as ``1 / context`` while each request's reads grow with it, so
  the price per token rises with context (:func:`cost_vs_context`).

The bound ignores compute (check :func:`aiinfra.decode.crossover_batch_with_state`
when it might matter), communication between the GPUs and all overheads:
it is an upper bound on throughput. SI units throughout.
"""
from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from . import _check, decode, serving
from .symbols import B, R_W, R_state, beta, eta_B, n_gpu, twin

__all__ = [
    "naive_batch_tokens_per_s",
    "node_batch_tokens_per_s",
    "kv_read_share",
    "ContextCost",
    "cost_vs_context",
    "mha_equivalent_kv_bytes_per_token",
]

_EFF = (0.05, 1.0, "float")


def _out(x):
    arr = np.asarray(x, dtype=float)
    return float(arr) if arr.ndim == 0 else arr


@twin(B * beta / R_W, batch=B, weight_bytes=R_W, bandwidth_bytes_per_s=beta)
def naive_batch_tokens_per_s(batch, weight_bytes, bandwidth_bytes_per_s):
    """The naive claim ``B * beta / W``: batch size times a single stream's memory-bound rate.

    Kept to be corrected, not used: it holds only while the KV reads ``B S``
    are negligible next to the weights ``W`` and ``beta`` is the bandwidth
    of whatever holds the weights (the whole node, if the model spans it).
    """
    b = np.asarray(_check.positive("batch", batch))
    w = np.asarray(_check.positive("weight_bytes", weight_bytes))
    bw = np.asarray(_check.positive("bandwidth_bytes_per_s", bandwidth_bytes_per_s))
    return _out(b * bw / w)


@twin(B * n_gpu * eta_B * beta / (R_W + B * R_state), domains={"efficiency": _EFF, "n_gpus": (1, 64, "int")},
      batch=B, weight_bytes=R_W, kv_bytes_per_request=R_state, bandwidth_bytes_per_s=beta, n_gpus=n_gpu,
      efficiency=eta_B)
def node_batch_tokens_per_s(batch, weight_bytes, kv_bytes_per_request, bandwidth_bytes_per_s, n_gpus=1,
                            efficiency=1.0):
    """Memory-bound aggregate decode rate of ``batch`` requests on ``n_gpus``: ``B n eta beta / (W + B S)``.

    ``weight_bytes`` (``W``) is what one step reads of the weights, summed over
    the GPUs that hold them; ``kv_bytes_per_request`` (``S``) the KV one
    request reads per step (its whole cache); ``bandwidth_bytes_per_s`` the
    bandwidth of one GPU. Assumes the GPUs split weights and caches evenly and
    stream them in parallel with no communication cost. Accepts arrays.
    """
    b = np.asarray(_check.positive("batch", batch))
    w = np.asarray(_check.non_negative("weight_bytes", weight_bytes))
    s = np.asarray(_check.non_negative("kv_bytes_per_request", kv_bytes_per_request))
    bw = np.asarray(_check.positive("bandwidth_bytes_per_s", bandwidth_bytes_per_s))
    n = np.asarray(_check.integers("n_gpus", n_gpus, minimum=1), dtype=float)
    eta = np.asarray(_check.fraction("efficiency", efficiency))
    total = w + b * s
    if np.any(total <= 0):
        raise ValueError("weight_bytes and kv_bytes_per_request are both 0: a step must read something")
    return _out(b * n * eta * bw / total)


@twin(B * R_state / (R_W + B * R_state), batch=B, weight_bytes=R_W, kv_bytes_per_request=R_state)
def kv_read_share(batch, weight_bytes, kv_bytes_per_request):
    """Share of one decode step's bytes that are KV: ``B S / (W + B S)``."""
    b = np.asarray(_check.positive("batch", batch))
    w = np.asarray(_check.non_negative("weight_bytes", weight_bytes))
    s = np.asarray(_check.non_negative("kv_bytes_per_request", kv_bytes_per_request))
    total = w + b * s
    if np.any(total <= 0):
        raise ValueError("weight_bytes and kv_bytes_per_request are both 0: a step must read something")
    return _out(b * s / total)


@dataclass(frozen=True)
class ContextCost:
    """Arrays over context length, as returned by :func:`cost_vs_context` (SI units, dollars)."""

    context_tokens: np.ndarray
    max_batch: np.ndarray
    step_time_s: np.ndarray
    tokens_per_s_per_gpu: np.ndarray
    usd_per_million_tokens: np.ndarray


def cost_vs_context(context_tokens, weight_bytes, kv_bytes_per_token, kv_budget_bytes, flops_per_token,
                    flops_per_s, bandwidth_bytes_per_s, usd_per_gpu_hour, n_gpus=1, eta_f=1.0, eta_b=1.0,
                    batch_cap=None) -> ContextCost:
    """Price per million output tokens when every request holds ``context_tokens`` of KV.

    For each context ``n``: the batch is the most requests whose caches fit,
    ``B = floor(M_KV / (n k))`` (:func:`aiinfra.decode.max_batch_from_kv_budget`),
    capped at ``batch_cap`` if given; a step reads the weights plus ``B``
    caches of ``n k`` bytes and does ``B`` tokens of ``flops_per_token``
    (:func:`aiinfra.decode.batched_decode_step_time_s` over ``n_gpus`` GPUs);
    the replica then produces ``B / T_step`` tokens/s, and a GPU-hour at
    ``usd_per_gpu_hour`` buys :func:`aiinfra.serving.cost_per_million_tokens`.
    ``weight_bytes`` and ``kv_budget_bytes`` are totals over the replica,
    ``flops_per_s`` and ``bandwidth_bytes_per_s`` per GPU. Every context must
    leave room for at least one request.
    """
    ctx = np.atleast_1d(np.asarray(_check.positive("context_tokens", context_tokens), dtype=float))
    k = _check.positive("kv_bytes_per_token", kv_bytes_per_token)
    budget = _check.positive("kv_budget_bytes", kv_budget_bytes)
    n = _check.integer("n_gpus", n_gpus, minimum=1)
    per_request = ctx * k
    bmax = np.atleast_1d(decode.max_batch_from_kv_budget(budget, per_request))
    if np.any(bmax < 1):
        longest = int(budget // k)
        raise ValueError(
            f"context_tokens must be <= {longest:,} so that one request's KV fits in kv_budget_bytes, got {context_tokens!r}"
        )
    if batch_cap is not None:
        bmax = np.minimum(bmax, _check.integer("batch_cap", batch_cap, minimum=1))
    step = np.atleast_1d(decode.batched_decode_step_time_s(
        bmax, flops_per_token, weight_bytes, per_request, n * _check.positive("flops_per_s", flops_per_s),
        n * _check.positive("bandwidth_bytes_per_s", bandwidth_bytes_per_s), eta_f, eta_b))
    per_gpu = bmax / step / n
    usd = np.atleast_1d(serving.cost_per_million_tokens(usd_per_gpu_hour, per_gpu))
    return ContextCost(ctx, bmax.astype(np.int64), step, per_gpu, usd)


def mha_equivalent_kv_bytes_per_token(model, bytes_per_element=2):
    """KV bytes per token the model would cache if every query head kept its own keys and values.

    ``L * (qk_width + v_width) * b`` with the widths of
    :func:`aiinfra.models.attention_qk_width` and
    :func:`aiinfra.models.attention_v_width`: for an MHA/GQA model that is
    ``2 L H d_head b`` with all ``H`` query heads, for an MLA model the full
    per-head keys (no-RoPE plus RoPE part) and values that the latent
    replaces. Divide by :func:`aiinfra.memory.kv_bytes_per_token` for the
    saving of GQA or MLA (chapter 5).
    """
    from . import models

    m = models.load(model) if isinstance(model, str) else model
    b = _check.positive("bytes_per_element", bytes_per_element)
    return _out(m.n_layers * (models.attention_qk_width(m) + models.attention_v_width(m)) * np.asarray(b))
