"""Chunked prefill: a long prompt split into chunks that share engine steps with running decodes.

Chapter 7. An engine that prefills a whole prompt in one step stalls every
running decode for that step. With chunked prefill each step carries at most
``C`` prompt tokens beside the ``B`` decoding requests, so one step does the
matrix work of ``C + B`` tokens while it reads the weights once:

    T_step(C) = max((C + B) F_1 / (eta_F Pi), R_W / (eta_B beta) + B R_state / (eta_KV beta)) + t_fix

(:func:`chunk_step_time_s`), and a prompt of ``P`` tokens reaches its first
token after ``ceil(P / C)`` such steps (:func:`chunked_ttft_s`). The running
decodes see ``T_step(C)`` as their TPOT while the prompt is in the engine.
Below the critical batch the chunk rides on the weight read for free; above
it, each extra prompt token in the step lengthens every user's token
interval. Assumptions: the prompt's FLOPs per token are those of one decode
token at the decodes' context, and the chunk's own KV writes are left out.
:func:`chunk_step_times_s` gives the bound and the calibrated prediction of a
step for a :class:`aiinfra.deployment.Deployment`.
"""

from __future__ import annotations

import numpy as np

from aiinfra import decode, predict
from aiinfra.formula import check, formula

__all__ = ["chunk_step_time_s", "chunked_ttft_s", "chunk_step_times_s"]


@formula(
    chunk_tokens="C int>=0",
    decode_batch="B int>=0",
    flops_per_token="F_1 >0",
    weight_bytes="R_W >0",
    state_bytes_per_request="R_state >=0",
    flops_per_s="Pi >0",
    bandwidth_bytes_per_s="beta >0",
    eta_f="eta_F (0,1]",
    eta_b="eta_B (0,1]",
    overhead_s="t_fix >=0",
    eta_kv="eta_KV (0,1]",
)
def chunk_step_time_s(
    chunk_tokens,
    decode_batch,
    flops_per_token,
    weight_bytes,
    state_bytes_per_request,
    flops_per_s,
    bandwidth_bytes_per_s,
    eta_f=1.0,
    eta_b=1.0,
    overhead_s=0.0,
    eta_kv=1.0,
):
    """One engine step carrying ``chunk_tokens`` prompt tokens and ``decode_batch`` decodes, in seconds.

    ``max((C + B) F_1 / (eta_F Pi), R_W / (eta_B beta) + B R_state / (eta_KV beta)) + t_fix``:
    the tokens' matrix work against one read of the weights and of the
    decodes' KV (``state_bytes_per_request`` each, read at ``eta_kv`` of the
    bandwidth), plus a fixed cost per step
    (``overhead_s``: launches, all-reduces; 0 for the bound). ``C = 0`` is a
    plain decode step (:func:`aiinfra.decode.batched_decode_step_time_s` with
    the chunk as its ``prefill_tokens``, plus ``t_fix``). Chapter 7.
    """
    kv_at_eta_b = state_bytes_per_request * eta_b / eta_kv  # the same read time at eta_b
    step = decode.batched_decode_step_time_s(
        decode_batch,
        flops_per_token,
        weight_bytes,
        kv_at_eta_b,
        flops_per_s,
        bandwidth_bytes_per_s,
        eta_f,
        eta_b,
        prefill_tokens=chunk_tokens,
    )
    return step + overhead_s


@formula(
    prompt_tokens="P int>=1",
    chunk_tokens="C int>=1",
    step_time_s="T >0",
)
def chunked_ttft_s(prompt_tokens, chunk_tokens, step_time_s):
    """Time to first token of a ``prompt_tokens`` prompt prefilled ``chunk_tokens`` at a time: ``ceil(P / C) T``.

    ``step_time_s`` is the step with a full chunk (:func:`chunk_step_time_s`);
    the last, partial chunk is charged a full step, so the result is an upper
    bound by at most one step's difference. Queueing before the first chunk is
    not counted. Chapter 7.
    """
    return np.ceil(prompt_tokens / chunk_tokens) * step_time_s


def chunk_step_times_s(deployment, chunk_tokens, decode_batch, context_tokens, calibration=None):
    """``(bound, prediction)`` of one step of ``deployment`` with a chunk beside ``decode_batch`` decodes, in seconds.

    The bound is :func:`chunk_step_time_s` at 100% of the dense peak and of
    the bandwidth, with no fixed cost. The prediction uses the stored
    calibration (:func:`aiinfra.calibration.load`): its prefill share of the
    peak, its decode shares of the bandwidth for the weights and for the KV
    (as :func:`aiinfra.predict.decode_step_s` reads them, so that a step
    without a chunk is that function's memory-bound step), and its fixed cost and tensor-
    parallel all-reduces per layer for ``chunk_tokens + decode_batch`` rows
    (:func:`aiinfra.predict.step_overhead_s`).
    ``context_tokens`` sets the decodes' KV and FLOPs per token. Arrays of
    ``chunk_tokens`` give arrays. Chapter 7.
    """
    from aiinfra import calibration as cal

    d = deployment
    ctx = check("context_tokens", context_tokens, "int>=1", scalar=True)
    b = check("decode_batch", decode_batch, "int>=0", scalar=True)
    chunks = check("chunk_tokens", chunk_tokens, "int>=0")
    one = d.step(1, ctx)
    args = (one.flops, one.weight_bytes, one.kv_bytes, d.peak_flops_per_s, d.bandwidth_bytes_per_s)
    bound = chunk_step_time_s(chunks, b, *args)
    p = (cal.load() if calibration is None else calibration).parameters
    overhead = np.vectorize(lambda c: predict.step_overhead_s(d, p, int(c) + b))(chunks)
    pred = chunk_step_time_s(chunks, b, *args, p.eta_f_prefill, p.eta_b_decode, overhead, eta_kv=p.eta_b_kv)
    return bound, pred
