"""Decode and batching: step time, tokens per second, latency and batch limits.

The model of one decode step (Pope et al. 2022, "Efficiently Scaling
Transformer Inference", section 2): a batch of ``B`` requests shares one read
of the weights ``R_W`` while each request adds its own state (KV) read
``R_state`` and its own arithmetic ``F_1``. With overlap of reads and math,

    T_step = max(B F_1 / (eta_F Pi), (R_W + B R_state) / (eta_B beta)).

Per-user speed is ``1 / T_step`` tokens/s; the batch as a whole produces
``B / T_step``. Ignoring state, the two terms cross at the critical batch
``B* = b_W Pi / (2 beta)`` (``b_W`` = bytes per *weight*): below it adding
requests is nearly free, above it step time grows with ``B``.

Latency follows the convention of serving benchmarks (vLLM's
``benchmark_serving``): prefill emits the first token, so a reply of ``G``
tokens takes ``TTFT + (G - 1) TPOT``; a flag selects the other convention,
in which every output token costs a decode step. :func:`decode_time_s`
gives the time of any number of steps.

The formulas take plain numbers or numpy arrays. For a real model on a real
GPU, :class:`aiinfra.deployment.Deployment` gathers the bytes, FLOPs and peaks
and calls them.

The KV budget (chapter 5): multiplying a single-stream rate ``beta / W`` by the
batch (:func:`naive_batch_tokens_per_s`) forgets that every request reads its
own KV cache in every step; one step of ``B`` requests on ``n`` GPUs reads the
weights once and every cache once, so ``tok/s = B n eta beta / (W + B S)``
(:func:`node_batch_tokens_per_s`), which flattens at ``n eta beta / S``.

Serves: Chapters 1 (one model step, checking against measurement), 2 (one decode step)
and 4 (latency, throughput and tokens per second), and the KV-cache and batching pages.
"""

from __future__ import annotations

import math
from typing import Any

import numpy as np

from aiinfra import roofline
from aiinfra.formula import check, formula

__all__ = [
    "batched_decode_step_time_s",
    "memory_bound_tokens_per_s",
    "tokens_per_s_per_user",
    "tokens_per_s_aggregate",
    "ttft_s",
    "tpot_s",
    "end_to_end_latency_s",
    "decode_time_s",
    "decode_share_of_reply",
    "critical_batch_size",
    "crossover_batch_with_state",
    "max_context_with_crossover_tokens",
    "max_batch_from_kv_budget",
    "max_users_per_replica",
    "naive_batch_tokens_per_s",
    "node_batch_tokens_per_s",
    "kv_read_share",
    "throughput_ratio_if_tpot_only",
]

_STEP: dict[str, Any] = dict(
    flops_per_request="F_1 >=0",
    weight_bytes="R_W >=0",
    state_bytes_per_request="R_state >=0",
    flops_per_s="Pi >0",
    bandwidth_bytes_per_s="beta >0",
    eta_f="eta_F (0,1]",
    eta_b="eta_B (0,1]",
)


@formula(
    "Max(B*F_1/(eta_F*Pi), (R_W + B*R_state)/(eta_B*beta))",  # the plain step, C = 0, as chapters 2 and 4 show it
    sample={"prefill_tokens": (0, 0, "int")},
    batch="B >=0",
    prefill_tokens="C int>=0",
    **_STEP,
)
def batched_decode_step_time_s(
    batch,
    flops_per_request,
    weight_bytes,
    state_bytes_per_request,
    flops_per_s,
    bandwidth_bytes_per_s,
    eta_f=1.0,
    eta_b=1.0,
    prefill_tokens=0,
):
    """Time of one decode step for ``batch`` requests that share one weight read.

    ``max((B + C) F_1 / (eta_F Pi), (R_W + B R_state) / (eta_B beta))``, with
    ``F_1`` the FLOPs of one request's token, ``R_W`` the weight bytes read
    per step and ``R_state`` the KV (state) bytes one request reads per step.
    ``C`` (``prefill_tokens``, 0 by default) are prompt tokens that ride in
    the same step, a prefill chunk (chapter 7): each adds ``F_1`` FLOPs and
    no state read of its own. Assumes reads and arithmetic overlap and
    ignores launch and host overhead, so it is a lower bound. ``batch`` may
    be a real number (for crossing points) or an array (for curves); a step
    must carry at least one token (``B + C > 0``).
    """
    b = batch
    if np.any(np.asarray(b) + prefill_tokens <= 0):
        raise ValueError("batch must be > 0 when prefill_tokens is 0: a step must carry a token")
    t = np.asarray(
        roofline.step_time_overlapped_s(
            (b + prefill_tokens) * flops_per_request,
            weight_bytes + b * state_bytes_per_request,
            flops_per_s,
            bandwidth_bytes_per_s,
            eta_f,
            eta_b,
        )
    )
    if np.any(t <= 0):
        raise ValueError(
            "flops_per_request, weight_bytes and state_bytes_per_request are all 0: a step must do some work"
        )
    return t


@formula(
    "(beta*eta_B)/(R_W + R_state)",
    weight_bytes="R_W >0",
    bandwidth_bytes_per_s="beta >0",
    state_bytes="R_state >=0",
    efficiency="eta_B (0,1]",
)
def memory_bound_tokens_per_s(weight_bytes, bandwidth_bytes_per_s, state_bytes=0.0, efficiency=1.0):
    """Single-stream decode speed when every step streams the weights: ``eta_B beta / (R_W + R_state)``.

    The "tokens/s = bandwidth / model bytes" rule: each token needs one pass
    that reads all ``weight_bytes`` (plus ``state_bytes`` of KV) from memory.
    Compute is assumed to hide under the reads (true at batch 1).
    """
    return efficiency * bandwidth_bytes_per_s / (weight_bytes + state_bytes)


@formula(step_time_s="T >0")
def tokens_per_s_per_user(step_time_s):
    """Tokens per second one user sees: ``1 / T_step`` (one token per request per step)."""
    return 1.0 / step_time_s


@formula(batch="B >0", step_time_s="T >0")
def tokens_per_s_aggregate(batch, step_time_s):
    """Tokens per second the whole batch produces: ``B / T_step``."""
    return batch / step_time_s


@formula(
    prefill_flops="F >=0",
    prefill_bytes="R >=0",
    flops_per_s="Pi >0",
    bandwidth_bytes_per_s="beta >0",
    eta_f="eta_F (0,1]",
    eta_b="eta_B (0,1]",
    queue_s="T_queue >=0",
)
def ttft_s(
    prefill_flops, prefill_bytes, flops_per_s, bandwidth_bytes_per_s, eta_f=1.0, eta_b=1.0, queue_s=0.0
):
    """Time to first token: queueing plus the roofline time of the prefill pass.

    ``queue_s + max(F_prefill / (eta_F Pi), R_prefill / (eta_B beta))``, where
    ``prefill_bytes`` is what the pass must read (at least the weights once).
    Prefill of a long prompt is normally compute-bound, so the first term wins.
    """
    return queue_s + roofline.step_time_overlapped_s(
        prefill_flops, prefill_bytes, flops_per_s, bandwidth_bytes_per_s, eta_f, eta_b
    )


@formula(
    end_to_end_s="T_E2E >0",
    ttft_s="T_TTFT >=0",
    output_tokens="G int>=2",
)
def tpot_s(end_to_end_s, ttft_s, output_tokens):
    """Time per output token as serving benchmarks measure it: ``(T_E2E - TTFT) / (G - 1)``.

    The ``G - 1`` intervals between the first and the last output token are
    averaged; ``output_tokens`` must therefore be at least 2. For a
    prediction, use :func:`batched_decode_step_time_s` (one step = one TPOT).
    """
    if np.any(ttft_s >= end_to_end_s):
        raise ValueError(
            f"ttft_s must be < end_to_end_s, got ttft_s={ttft_s!r}, end_to_end_s={end_to_end_s!r}"
        )
    return (end_to_end_s - ttft_s) / (output_tokens - 1)


@formula(
    ttft_s="T_TTFT >=0",
    tpot_s="T_TPOT >0",
    output_tokens="G int>=1",
    first_token_from_prefill="k_pf bool",
)
def end_to_end_latency_s(ttft_s, tpot_s, output_tokens, first_token_from_prefill=True):
    """Latency of a whole reply of ``output_tokens`` tokens: ``TTFT + (G - k) TPOT``.

    ``k`` is the number of tokens the prefill pass emits. With
    ``first_token_from_prefill=True`` (``k = 1``, the serving-benchmark
    convention): ``TTFT + (G - 1) TPOT``. With ``False`` (``k = 0``: prefill
    emits nothing and every output token costs one decode step, as in The
    Catch's latency chapter): ``TTFT + G TPOT``. The two differ by one step;
    say which one a figure uses.
    """
    steps = output_tokens - 1 if first_token_from_prefill else output_tokens
    return ttft_s + decode_time_s(tpot_s, steps)


@formula(tpot_s="T_TPOT >0", decode_steps="G int>=0")
def decode_time_s(tpot_s, decode_steps):
    """Time of ``decode_steps`` sequential decode steps: ``n * TPOT``.

    The steps cannot overlap, since each one's input is the previous one's
    output. A 1,000-step reply at 41.8 ms per step takes 41.8 s.
    """
    return decode_steps * tpot_s


@formula(
    "b_W*eta_F*Pi/(2*eta_B*beta)",
    bytes_per_weight="b_W >0",
    flops_per_s="Pi >0",
    bandwidth_bytes_per_s="beta >0",
    eta_f="eta_F (0,1]",
    eta_b="eta_B (0,1]",
)
def critical_batch_size(bytes_per_weight, flops_per_s, bandwidth_bytes_per_s, eta_f=1.0, eta_b=1.0):
    """Critical batch ``B* = b_W eta_F Pi / (2 eta_B beta)``.

    Solves ``2 B N / (eta_F Pi) = b_W N / (eta_B beta)``: the batch at which
    the matrix work of ``B`` tokens (2 FLOPs per weight each) takes as long
    as one read of the weights. ``bytes_per_weight`` is the *weight* storage
    precision (1 for int8/fp8, 2 for BF16), not the activation or KV one.
    KV reads are ignored; see :func:`crossover_batch_with_state` for them.
    """
    return bytes_per_weight * eta_f * flops_per_s / (2 * eta_b * bandwidth_bytes_per_s)


@formula(
    flops_per_request="F_1 >0",
    **{k: v for k, v in _STEP.items() if k != "flops_per_request"},
)
def crossover_batch_with_state(
    flops_per_request,
    weight_bytes,
    state_bytes_per_request,
    flops_per_s,
    bandwidth_bytes_per_s,
    eta_f=1.0,
    eta_b=1.0,
):
    """Batch at which compute time equals memory time once KV reads are counted.

    Solves ``B F_1 / (eta_F Pi) = (R_W + B R_state) / (eta_B beta)``:
    ``B = R_W / (eta_B beta F_1 / (eta_F Pi) - R_state)``. If each request's
    KV read already takes longer than its arithmetic (the denominator is
    <= 0), the step stays memory-bound at every batch and ``math.inf`` is
    returned.
    """
    denom = (
        eta_b * bandwidth_bytes_per_s * flops_per_request / (eta_f * flops_per_s) - state_bytes_per_request
    )
    with np.errstate(divide="ignore"):
        return np.where(denom <= 0, math.inf, weight_bytes / np.where(denom <= 0, 1.0, denom))


@formula(
    "F_0/(eta_F*Pi*k/(eta_B*beta) - a)",
    sample={"kv_bytes_per_context_token": (0.5, 1.0), "attention_flops_per_context_token": (0.0, 1e-7)},
    flops_fixed_per_token="F_0 >0",
    attention_flops_per_context_token="a >=0",
    kv_bytes_per_context_token="k >0",
    flops_per_s="Pi >0",
    bandwidth_bytes_per_s="beta >0",
    eta_f="eta_F (0,1]",
    eta_b="eta_B (0,1]",
)
def max_context_with_crossover_tokens(
    flops_fixed_per_token,
    attention_flops_per_context_token,
    kv_bytes_per_context_token,
    flops_per_s,
    bandwidth_bytes_per_s,
    eta_f=1.0,
    eta_b=1.0,
):
    """Longest context ``n*`` below which a critical batch that counts KV reads exists.

    One request at context ``n`` does ``F_1 = F_0 + a n`` FLOPs (``F_0`` the
    matrices, ``a`` the attention per cached token) and reads ``R_state = k n``
    bytes of cache. :func:`crossover_batch_with_state` is finite exactly when
    ``F_1 / R_state`` exceeds the effective ridge ``r = eta_F Pi / (eta_B beta)``,
    i.e. when ``n < n* = F_0 / (r k - a)``. If ``r k <= a`` (attention alone
    out-computes the cache read) the crossover exists at every context and
    ``math.inf`` is returned. Full-attention layers assumed (chapters 1, 4, 5):
    Llama-3.1-70B on an H100 in BF16 gives about 1,480 tokens, Qwen3-8B about 350.
    """
    ridge = eta_f * flops_per_s / (eta_b * bandwidth_bytes_per_s)
    denom = ridge * kv_bytes_per_context_token - attention_flops_per_context_token
    with np.errstate(divide="ignore"):
        return np.where(denom <= 0, math.inf, flops_fixed_per_token / np.where(denom <= 0, 1.0, denom))


@formula(
    "floor(M_free/M_KV1)",
    out=int,
    sample={"free_bytes": (0.0, 1e4), "kv_bytes_per_request": (0.5, 100.0)},
    free_bytes="M_free >=0",
    kv_bytes_per_request="M_KV1 >0",
)
def max_batch_from_kv_budget(free_bytes, kv_bytes_per_request):
    """Largest batch whose KV fits: ``floor(M_free / M_KV,1)``.

    ``free_bytes`` is memory left after weights and workspace (summed over
    the GPUs of one replica); ``kv_bytes_per_request`` is one request's KV at
    its full context. Returns an int (or an int array).
    """
    # a relative nudge keeps exact ratios (e.g. 4.0 computed as 3.9999999) from losing one
    return np.floor(free_bytes / kv_bytes_per_request * (1 + 1e-12))


def max_users_per_replica(
    gpus_per_replica,
    target_tpot_s,
    weight_bytes,
    kv_bytes_per_user,
    flops_per_token,
    gpu_memory_bytes,
    gpu_bandwidth_bytes_per_s,
    gpu_flops_per_s,
    eta_f=1.0,
    eta_b=1.0,
    memory_reserve_fraction=0.0,
    weight_read_bytes=None,
):
    """Most concurrent users one replica of ``g`` GPUs can hold and still meet ``target_tpot_s``.

    Three ceilings, each floored to a whole user:

    * memory:    ``(g M_GPU (1 - r) - W) / KV``
    * bandwidth: ``(t g eta_B beta - W_read) / KV``   (a step reads W_read + B KV)
    * compute:   ``t g eta_F Pi / F_1``

    ``weight_bytes`` ``W`` is what must be resident; ``weight_read_bytes``
    ``W_read`` what one step reads (defaults to ``W``; smaller for MoE, or
    when the embedding table is skipped). ``r`` is the share of memory held
    back for workspace. Returns ``(users, limiting)`` with ``limiting`` one of
    ``"memory"``, ``"bandwidth"``, ``"compute"``; ``users`` is 0 when the
    weights alone do not fit or one user's step already misses the target.
    :meth:`aiinfra.deployment.Deployment.max_users` fills it in for a model.
    """
    g = check("gpus_per_replica", gpus_per_replica, "int>=1", scalar=True)
    t = check("target_tpot_s", target_tpot_s, ">0", scalar=True)
    w = check("weight_bytes", weight_bytes, ">0", scalar=True)
    w_read = (
        w if weight_read_bytes is None else check("weight_read_bytes", weight_read_bytes, ">0", scalar=True)
    )
    kv = check("kv_bytes_per_user", kv_bytes_per_user, ">0", scalar=True)
    f1 = check("flops_per_token", flops_per_token, ">0", scalar=True)
    mem = check("gpu_memory_bytes", gpu_memory_bytes, ">0", scalar=True)
    bw = check("gpu_bandwidth_bytes_per_s", gpu_bandwidth_bytes_per_s, ">0", scalar=True)
    pi = check("gpu_flops_per_s", gpu_flops_per_s, ">0", scalar=True)
    ef = check("eta_f", eta_f, "(0,1]", scalar=True)
    eb = check("eta_b", eta_b, "(0,1]", scalar=True)
    r = check("memory_reserve_fraction", memory_reserve_fraction, "[0,1)", scalar=True)
    limits = {
        "memory": (g * mem * (1.0 - r) - w) / kv,
        "bandwidth": (t * g * eb * bw - w_read) / kv,
        "compute": t * g * ef * pi / f1,
    }
    limiting = min(limits, key=limits.get)
    users = max(0, math.floor(limits[limiting] * (1 + 1e-12)))
    return users, limiting


@formula(
    ttft_s="T_TTFT >0",
    tpot_s="T_TPOT >0",
    output_tokens="G int>=1",
)
def decode_share_of_reply(ttft_s, tpot_s, output_tokens):
    """Fraction of a reply's latency spent in decode: ``(G - 1) T_TPOT / (TTFT + (G - 1) T_TPOT)``.

    Uses the serving-benchmark convention of :func:`end_to_end_latency_s`
    (prefill emits the first token, each later token costs one step).
    The 8B request with a 500-token reply: 64 ms of prefill against
    499 x 7.8 ms of decode, 98 % decode. Accepts arrays.
    """
    total = end_to_end_latency_s(ttft_s, tpot_s, output_tokens)
    return (total - ttft_s) / total


# --- the KV budget and what it does to throughput (chapter 5) -----------------


@formula(batch="B >0", weight_bytes="R_W >0", bandwidth_bytes_per_s="beta >0")
def naive_batch_tokens_per_s(batch, weight_bytes, bandwidth_bytes_per_s):
    """The naive claim ``B * beta / W``: batch size times a single stream's memory-bound rate.

    Kept to be corrected, not used: it holds only while the KV reads ``B S``
    are negligible next to the weights ``W`` and ``beta`` is the bandwidth
    of whatever holds the weights (the whole node, if the model spans it).
    """
    return batch * bandwidth_bytes_per_s / weight_bytes


@formula(
    batch="B >0",
    weight_bytes="R_W >=0",
    kv_bytes_per_request="R_state >=0",
    bandwidth_bytes_per_s="beta >0",
    n_gpus="n_G int>=1",
    efficiency="eta_B (0,1]",
)
def node_batch_tokens_per_s(
    batch, weight_bytes, kv_bytes_per_request, bandwidth_bytes_per_s, n_gpus=1, efficiency=1.0
):
    """Memory-bound aggregate decode rate of ``batch`` requests on ``n_gpus``: ``B n eta beta / (W + B S)``.

    ``weight_bytes`` (``W``) is what one step reads of the weights, summed over
    the GPUs that hold them; ``kv_bytes_per_request`` (``S``) the KV one
    request reads per step (its whole cache); ``bandwidth_bytes_per_s`` the
    bandwidth of one GPU. As ``B`` grows, ``B S`` overtakes ``W`` and the rate
    flattens at ``n eta beta / S``, however large the batch. Assumes the GPUs
    split weights and caches evenly and stream them in parallel with no
    communication cost. Accepts arrays.
    """
    total = weight_bytes + batch * kv_bytes_per_request
    if np.any(total <= 0):
        raise ValueError("weight_bytes and kv_bytes_per_request are both 0: a step must read something")
    return batch * n_gpus * efficiency * bandwidth_bytes_per_s / total


@formula(batch="B >0", weight_bytes="R_W >=0", kv_bytes_per_request="R_state >=0")
def kv_read_share(batch, weight_bytes, kv_bytes_per_request):
    """Share of one decode step's bytes that are KV: ``B S / (W + B S)``."""
    total = weight_bytes + batch * kv_bytes_per_request
    if np.any(total <= 0):
        raise ValueError("weight_bytes and kv_bytes_per_request are both 0: a step must read something")
    return batch * kv_bytes_per_request / total


@formula(batch="B >0", tpot_1_s="T_1 >0", tpot_b_s="T_B >0")
def throughput_ratio_if_tpot_only(batch, tpot_1_s, tpot_b_s):
    """Throughput at ``batch`` relative to batch 1 if tokens came out at TPOT pace only: ``B T_1 / T_B``.

    Ignores prefill and queueing, which a measured end-to-end throughput
    includes; the gap between this and the measured ratio is time spent
    outside the decode steps. Chapter 1.
    """
    return batch * tpot_1_s / tpot_b_s
