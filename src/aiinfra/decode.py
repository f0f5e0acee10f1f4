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

The scalar cores take plain numbers or numpy arrays; the config wrappers
(:func:`decode_step_time_s`, :func:`prefill_time_s`) take a ``ModelConfig``
and a ``GPU``.

Serves: Chapters 1 (one model step, checking against measurement), 2 (one decode step)
and 4 (latency, throughput and tokens per second), and the KV-cache and batching pages.
"""
from __future__ import annotations

import math
from dataclasses import dataclass

import numpy as np
import sympy as sp

from . import _check, roofline
from .symbols import B, F, F_1, G_out, Pi, R, R_W, R_state, T, b_W, beta, eta_B, eta_F, twin

__all__ = [
    "batched_decode_step_time_s",
    "memory_bound_tokens_per_s",
    "tokens_per_s_per_user",
    "tokens_per_s_aggregate",
    "ttft_s",
    "tpot_s",
    "end_to_end_latency_s",
    "decode_time_s",
    "critical_batch_size",
    "crossover_batch_with_state",
    "max_batch_from_kv_budget",
    "ThroughputCurve",
    "throughput_vs_batch",
    "decode_step_time_s",
    "prefill_time_s",
    "peak_flops_per_s",
]

_EFF = (0.05, 1.0, "float")

T_ttft = sp.Symbol("T_TTFT", positive=True)
T_tpot = sp.Symbol("T_TPOT", positive=True)
T_e2e = sp.Symbol("T_E2E", positive=True)
T_queue = sp.Symbol("T_queue", nonnegative=True)
M_free = sp.Symbol("M_free", positive=True)
M_kv = sp.Symbol("M_KV1", positive=True)
k_pf = sp.Symbol("k_pf", integer=True, nonnegative=True)


def _out(x):
    arr = np.asarray(x, dtype=float)
    return float(arr) if arr.ndim == 0 else arr


@twin(
    sp.Max(B * F_1 / (eta_F * Pi), (R_W + B * R_state) / (eta_B * beta)),
    domains={"eta_f": _EFF, "eta_b": _EFF},
    batch=B, flops_per_request=F_1, weight_bytes=R_W, state_bytes_per_request=R_state,
    flops_per_s=Pi, bandwidth_bytes_per_s=beta, eta_f=eta_F, eta_b=eta_B,
)
def batched_decode_step_time_s(batch, flops_per_request, weight_bytes, state_bytes_per_request,
                               flops_per_s, bandwidth_bytes_per_s, eta_f=1.0, eta_b=1.0):
    """Time of one decode step for ``batch`` requests that share one weight read.

    ``max(B F_1 / (eta_F Pi), (R_W + B R_state) / (eta_B beta))``, with
    ``F_1`` the FLOPs of one request's token, ``R_W`` the weight bytes read
    per step and ``R_state`` the KV (state) bytes one request reads per step.
    Assumes reads and arithmetic overlap and ignores launch and host overhead,
    so it is a lower bound. ``batch`` may be a real number (for crossing
    points) or an array (for curves).
    """
    b = np.asarray(_check.positive("batch", batch))
    f1 = np.asarray(_check.non_negative("flops_per_request", flops_per_request))
    rw = np.asarray(_check.non_negative("weight_bytes", weight_bytes))
    rs = np.asarray(_check.non_negative("state_bytes_per_request", state_bytes_per_request))
    t = np.asarray(roofline.step_time_overlapped_s(b * f1, rw + b * rs, flops_per_s, bandwidth_bytes_per_s,
                                                   eta_f, eta_b))
    if np.any(t <= 0):
        raise ValueError("flops_per_request, weight_bytes and state_bytes_per_request are all 0: a step must do some work")
    return _out(t)


@twin((beta * eta_B) / (R_W + R_state), domains={"efficiency": _EFF},
      weight_bytes=R_W, bandwidth_bytes_per_s=beta, state_bytes=R_state, efficiency=eta_B)
def memory_bound_tokens_per_s(weight_bytes, bandwidth_bytes_per_s, state_bytes=0.0, efficiency=1.0):
    """Single-stream decode speed when every step streams the weights: ``eta_B beta / (R_W + R_state)``.

    The "tokens/s = bandwidth / model bytes" rule: each token needs one pass
    that reads all ``weight_bytes`` (plus ``state_bytes`` of KV) from memory.
    Compute is assumed to hide under the reads (true at batch 1).
    """
    rw = np.asarray(_check.positive("weight_bytes", weight_bytes))
    bw = np.asarray(_check.positive("bandwidth_bytes_per_s", bandwidth_bytes_per_s))
    rs = np.asarray(_check.non_negative("state_bytes", state_bytes))
    eta = np.asarray(_check.fraction("efficiency", efficiency))
    return _out(eta * bw / (rw + rs))


@twin(1 / T, step_time_s=T)
def tokens_per_s_per_user(step_time_s):
    """Tokens per second one user sees: ``1 / T_step`` (one token per request per step)."""
    t = np.asarray(_check.positive("step_time_s", step_time_s))
    return _out(1.0 / t)


@twin(B / T, batch=B, step_time_s=T)
def tokens_per_s_aggregate(batch, step_time_s):
    """Tokens per second the whole batch produces: ``B / T_step``."""
    b = np.asarray(_check.positive("batch", batch))
    t = np.asarray(_check.positive("step_time_s", step_time_s))
    return _out(b / t)


@twin(
    T_queue + sp.Max(F / (eta_F * Pi), R / (eta_B * beta)),
    domains={"eta_f": _EFF, "eta_b": _EFF, "queue_s": (0.0, 10.0, "float")},
    prefill_flops=F, prefill_bytes=R, flops_per_s=Pi, bandwidth_bytes_per_s=beta,
    eta_f=eta_F, eta_b=eta_B, queue_s=T_queue,
)
def ttft_s(prefill_flops, prefill_bytes, flops_per_s, bandwidth_bytes_per_s, eta_f=1.0, eta_b=1.0, queue_s=0.0):
    """Time to first token: queueing plus the roofline time of the prefill pass.

    ``queue_s + max(F_prefill / (eta_F Pi), R_prefill / (eta_B beta))``, where
    ``prefill_bytes`` is what the pass must read (at least the weights once).
    Prefill of a long prompt is normally compute-bound, so the first term wins.
    """
    q = np.asarray(_check.non_negative("queue_s", queue_s))
    f = np.asarray(_check.non_negative("prefill_flops", prefill_flops))
    r = np.asarray(_check.non_negative("prefill_bytes", prefill_bytes))
    return _out(q + roofline.step_time_overlapped_s(f, r, flops_per_s, bandwidth_bytes_per_s, eta_f, eta_b))


@twin((T_e2e - T_ttft) / (G_out - 1),
      domains={"end_to_end_s": (100.0, 1000.0, "float"), "ttft_s": (0.5, 99.0, "float"), "output_tokens": (2, 4096, "int")},
      end_to_end_s=T_e2e, ttft_s=T_ttft, output_tokens=G_out)
def tpot_s(end_to_end_s, ttft_s, output_tokens):
    """Time per output token as serving benchmarks measure it: ``(T_E2E - TTFT) / (G - 1)``.

    The ``G - 1`` intervals between the first and the last output token are
    averaged; ``output_tokens`` must therefore be at least 2. For a
    prediction, use :func:`batched_decode_step_time_s` (one step = one TPOT).
    """
    e2e = np.asarray(_check.positive("end_to_end_s", end_to_end_s))
    first = np.asarray(_check.non_negative("ttft_s", ttft_s))
    g = np.asarray(_check.integers("output_tokens", output_tokens, minimum=2))
    if np.any(first >= e2e):
        raise ValueError(f"ttft_s must be < end_to_end_s, got ttft_s={ttft_s!r}, end_to_end_s={end_to_end_s!r}")
    return _out((e2e - first) / (g - 1))


@twin(T_ttft + (G_out - k_pf) * T_tpot,
      domains={"output_tokens": (1, 4096, "int"), "first_token_from_prefill": (0, 1, "int")},
      ttft_s=T_ttft, tpot_s=T_tpot, output_tokens=G_out, first_token_from_prefill=k_pf)
def end_to_end_latency_s(ttft_s, tpot_s, output_tokens, first_token_from_prefill=True):
    """Latency of a whole reply of ``output_tokens`` tokens: ``TTFT + (G - k) TPOT``.

    ``k`` is the number of tokens the prefill pass emits. With
    ``first_token_from_prefill=True`` (``k = 1``, the serving-benchmark
    convention): ``TTFT + (G - 1) TPOT``. With ``False`` (``k = 0``: prefill
    emits nothing and every output token costs one decode step, as in The
    Catch's latency chapter): ``TTFT + G TPOT``. The two differ by one step;
    say which one a figure uses.
    """
    first = np.asarray(_check.non_negative("ttft_s", ttft_s))
    g = np.asarray(_check.integers("output_tokens", output_tokens, minimum=1))
    _check.choice("first_token_from_prefill", first_token_from_prefill, {True, False})
    steps = g - 1 if first_token_from_prefill else g
    return _out(first + np.asarray(decode_time_s(tpot_s, steps)))


@twin(G_out * T_tpot, domains={"decode_steps": (0, 4096, "int")}, tpot_s=T_tpot, decode_steps=G_out)
def decode_time_s(tpot_s, decode_steps):
    """Time of ``decode_steps`` sequential decode steps: ``n * TPOT``.

    The steps cannot overlap, since each one's input is the previous one's
    output. A 1,000-step reply at 41.8 ms per step takes 41.8 s.
    """
    step = np.asarray(_check.positive("tpot_s", tpot_s))
    n = np.asarray(_check.integers("decode_steps", decode_steps, minimum=0))
    return _out(n * step)


@twin(b_W * eta_F * Pi / (2 * eta_B * beta), domains={"eta_f": _EFF, "eta_b": _EFF},
      bytes_per_weight=b_W, flops_per_s=Pi, bandwidth_bytes_per_s=beta, eta_f=eta_F, eta_b=eta_B)
def critical_batch_size(bytes_per_weight, flops_per_s, bandwidth_bytes_per_s, eta_f=1.0, eta_b=1.0):
    """Critical batch ``B* = b_W eta_F Pi / (2 eta_B beta)``.

    Solves ``2 B N / (eta_F Pi) = b_W N / (eta_B beta)``: the batch at which
    the matrix work of ``B`` tokens (2 FLOPs per weight each) takes as long
    as one read of the weights. ``bytes_per_weight`` is the *weight* storage
    precision (1 for int8/fp8, 2 for BF16), not the activation or KV one.
    KV reads are ignored; see :func:`crossover_batch_with_state` for them.
    """
    bw_ = np.asarray(_check.positive("bytes_per_weight", bytes_per_weight))
    pi = np.asarray(_check.positive("flops_per_s", flops_per_s))
    bw = np.asarray(_check.positive("bandwidth_bytes_per_s", bandwidth_bytes_per_s))
    ef = np.asarray(_check.fraction("eta_f", eta_f))
    eb = np.asarray(_check.fraction("eta_b", eta_b))
    return _out(bw_ * ef * pi / (2 * eb * bw))


def crossover_batch_with_state(flops_per_request, weight_bytes, state_bytes_per_request,
                               flops_per_s, bandwidth_bytes_per_s, eta_f=1.0, eta_b=1.0):
    """Batch at which compute time equals memory time once KV reads are counted.

    Solves ``B F_1 / (eta_F Pi) = (R_W + B R_state) / (eta_B beta)``:
    ``B = R_W / (eta_B beta F_1 / (eta_F Pi) - R_state)``. If each request's
    KV read already takes longer than its arithmetic (the denominator is
    <= 0), the step stays memory-bound at every batch and ``math.inf`` is
    returned. Scalars only.
    """
    f1 = _check.positive("flops_per_request", flops_per_request)
    rw = _check.non_negative("weight_bytes", weight_bytes)
    rs = _check.non_negative("state_bytes_per_request", state_bytes_per_request)
    pi = _check.positive("flops_per_s", flops_per_s)
    bw = _check.positive("bandwidth_bytes_per_s", bandwidth_bytes_per_s)
    ef = _check.fraction("eta_f", eta_f)
    eb = _check.fraction("eta_b", eta_b)
    for name, v in (("flops_per_request", f1), ("weight_bytes", rw), ("flops_per_s", pi)):
        if np.ndim(v):
            raise ValueError(f"{name} must be a scalar here, got an array")
    denom = eb * bw * f1 / (ef * pi) - rs
    if denom <= 0:
        return math.inf
    return float(rw / denom)


# The closed form, derived rather than typed: solve compute time = memory time for B.
# Not registered as a twin because the numeric function returns inf where it has no root.
crossover_batch_with_state.sym = sp.solve(
    sp.Eq(B * F_1 / (eta_F * Pi), (R_W + B * R_state) / (eta_B * beta)), B
)[0]
crossover_batch_with_state.sym_args = dict(
    flops_per_request=F_1, weight_bytes=R_W, state_bytes_per_request=R_state,
    flops_per_s=Pi, bandwidth_bytes_per_s=beta, eta_f=eta_F, eta_b=eta_B,
)


@twin(sp.floor(M_free / M_kv), domains={"free_bytes": (0.0, 1e4, "float"), "kv_bytes_per_request": (0.5, 100.0, "float")},
      free_bytes=M_free, kv_bytes_per_request=M_kv)
def max_batch_from_kv_budget(free_bytes, kv_bytes_per_request):
    """Largest batch whose KV fits: ``floor(M_free / M_KV,1)``.

    ``free_bytes`` is memory left after weights and workspace (summed over
    the GPUs of one replica); ``kv_bytes_per_request`` is one request's KV at
    its full context. Returns an int (or an int array).
    """
    m = np.asarray(_check.non_negative("free_bytes", free_bytes))
    kv = np.asarray(_check.positive("kv_bytes_per_request", kv_bytes_per_request))
    # a relative nudge keeps exact ratios (e.g. 4.0 computed as 3.9999999) from losing one
    out = np.floor(m / kv * (1 + 1e-12)).astype(np.int64)
    return int(out) if out.ndim == 0 else out


@dataclass(frozen=True)
class ThroughputCurve:
    """Arrays over batch size, as returned by :func:`throughput_vs_batch`."""

    batch: np.ndarray
    step_time_s: np.ndarray
    tokens_per_s_per_user: np.ndarray
    tokens_per_s_aggregate: np.ndarray
    compute_time_s: np.ndarray
    memory_time_s: np.ndarray
    bound: np.ndarray


def throughput_vs_batch(batch, flops_per_request, weight_bytes, state_bytes_per_request,
                        flops_per_s, bandwidth_bytes_per_s, eta_f=1.0, eta_b=1.0):
    """Step time, per-user and aggregate tokens/s over an array of batch sizes.

    Evaluates :func:`batched_decode_step_time_s` at every ``batch`` and
    returns a :class:`ThroughputCurve` with the two component times and a
    bound label per point, ready to plot.
    """
    b = np.atleast_1d(np.asarray(_check.positive("batch", batch), dtype=float))
    step = batched_decode_step_time_s(b, flops_per_request, weight_bytes, state_bytes_per_request,
                                      flops_per_s, bandwidth_bytes_per_s, eta_f, eta_b)
    # the inputs are validated by the call above; the two terms, broadcast to the batch axis
    f1, rw, rs, pi, bw, ef, eb = (np.asarray(x, dtype=float) for x in (
        flops_per_request, weight_bytes, state_bytes_per_request, flops_per_s, bandwidth_bytes_per_s, eta_f, eta_b))
    tc = np.broadcast_to(b * f1 / (ef * pi), np.shape(step)).copy()
    tm = np.broadcast_to((rw + b * rs) / (eb * bw), np.shape(step)).copy()
    bound = np.where(tm > tc, "memory-bound", "compute-bound")
    return ThroughputCurve(b, step, 1.0 / step, b / step, tc, tm, bound)


# --- config-level wrappers ---------------------------------------------------

COMPUTE_PRECISIONS = ("bf16", "fp8")


def peak_flops_per_s(gpu, compute_precision="bf16"):
    """Dense peak of ``gpu`` for the matrix-input precision ``compute_precision`` ("bf16" or "fp8").

    Weight-only quantisation (int8/int4 weights, BF16 math) still runs at the
    BF16 peak, so the compute precision is chosen separately from the
    storage precision of the weights.
    """
    _check.choice("compute_precision", compute_precision, set(COMPUTE_PRECISIONS))
    rate = gpu.bf16_dense_flops_per_s if compute_precision == "bf16" else gpu.fp8_dense_flops_per_s
    if not rate:
        raise ValueError(f"compute_precision {compute_precision!r} has no dense peak listed for this GPU")
    return float(rate)


def decode_step_time_s(model, gpu, batch=1, context_tokens=2048, precision="bf16", kv_bytes_per_element=2,
                       eta_f=1.0, eta_b=1.0, n_gpus=1, compute_precision="bf16"):
    """Lower bound on one decode step of ``model`` on ``n_gpus`` x ``gpu``.

    Reads: the weights one token touches (:func:`aiinfra.models.decode_read_params`
    at storage ``precision``) plus each request's KV at ``context_tokens``
    (``kv_bytes_per_element`` bytes per stored element). FLOPs:
    :func:`aiinfra.compute.decode_flops` per request, at the dense peak of
    ``compute_precision``. The ``n_gpus`` share bandwidth and compute
    perfectly (no communication cost): a lower bound for a tensor-parallel
    replica. ``context_tokens`` (or ``batch``) may be an array, e.g. the
    growing context of every step of one reply.
    """
    from . import compute, memory, models, units

    g = _check.integer("n_gpus", n_gpus, minimum=1)
    ctx = _check.integers("context_tokens", context_tokens, minimum=0)
    weight_bytes = models.decode_read_params(model) * units.bytes_per_param(precision)
    kv = memory.kv_bytes_per_request(model, ctx, kv_bytes_per_element)
    return batched_decode_step_time_s(batch, compute.decode_flops(model, ctx), weight_bytes, kv,
                                      g * peak_flops_per_s(gpu, compute_precision),
                                      g * gpu.memory_bandwidth_bytes_per_s, eta_f, eta_b)


def prefill_time_s(model, gpu, prompt_tokens, precision="bf16", eta_f=1.0, eta_b=1.0, n_gpus=1,
                   compute_precision="bf16", queue_s=0.0):
    """Lower bound on TTFT: queueing plus the prefill pass of one prompt.

    ``queue_s + max(F_prefill / (eta_F Pi), W / (eta_B beta))`` with the causal
    FLOP count of :func:`aiinfra.compute.prefill_flops` (lm_head on the last
    prompt token only) and one read of the weights ``W`` at ``precision``.
    """
    from . import compute, models, units

    g = _check.integer("n_gpus", n_gpus, minimum=1)
    weight_bytes = models.decode_read_params(model) * units.bytes_per_param(precision)
    return ttft_s(compute.prefill_flops(model, prompt_tokens), weight_bytes,
                  g * peak_flops_per_s(gpu, compute_precision), g * gpu.memory_bandwidth_bytes_per_s,
                  eta_f, eta_b, queue_s)
