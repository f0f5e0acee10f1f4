"""Serving: speculative decoding, MoE reads, capacity planning and cost per token.

Speculative decoding (Leviathan, Kalman and Matias, ICML 2023, section 3):
a draft model proposes ``gamma`` tokens, the target model checks them in one
pass, and each drafted token is accepted with probability ``alpha``
(independently, the paper's simplifying assumption). One target pass then
yields on average

    E[tokens] = (1 - alpha^(gamma + 1)) / (1 - alpha)        (-> gamma + 1 as alpha -> 1)

tokens, and if a draft pass costs ``c`` target passes, the wall-clock
improvement is ``E[tokens] / (gamma c + 1)`` (their equation for the
walltime improvement factor).

Capacity planning (:func:`gpus_for_users`) is a bound, not a simulator:
users are served by identical replicas of ``g`` GPUs each; a replica holds
the weights once and one KV cache per user; its decode step must finish
within the target TPOT. The model ignores communication inside a replica
and queueing, so the answer is the fewest GPUs that could possibly work.

Serves: Chapter 7 (serving at scale).
"""
from __future__ import annotations

import math
from dataclasses import asdict, dataclass

import numpy as np
import sympy as sp

from . import _check
from .symbols import N_active, b_W, alpha, c_draft, gamma, twin

__all__ = [
    "expected_tokens_per_target_pass",
    "speculative_speedup",
    "moe_active_params",
    "moe_active_bytes_per_token",
    "max_users_per_replica",
    "CapacityPlan",
    "gpus_for_users_core",
    "gpus_for_users",
    "cost_per_million_tokens",
]

_ALPHA = (0.0, 0.999, "float")
_GAMMA = (1, 16, "int")

n_shared = sp.Symbol("N_shared", positive=True)
n_expert = sp.Symbol("N_expert", positive=True)
k_active = sp.Symbol("k", positive=True)
usd_hr = sp.Symbol("p_GPUh", positive=True)
tok_rate = sp.Symbol("r_tok", positive=True)


def _out(x):
    arr = np.asarray(x, dtype=float)
    return float(arr) if arr.ndim == 0 else arr


def _expected_tokens(a, g):
    a = np.asarray(a, dtype=float)
    g = np.asarray(g, dtype=float)
    one = np.isclose(a, 1.0, rtol=0.0, atol=1e-12)
    safe = np.where(one, 0.5, a)
    val = (1.0 - safe ** (g + 1.0)) / (1.0 - safe)
    return np.where(one, g + 1.0, val)


@twin((1 - alpha ** (gamma + 1)) / (1 - alpha), domains={"alpha": _ALPHA, "gamma": _GAMMA}, alpha=alpha, gamma=gamma)
def expected_tokens_per_target_pass(alpha, gamma):
    """Mean tokens produced per target-model pass: ``(1 - alpha^(gamma+1)) / (1 - alpha)``.

    ``alpha`` in [0, 1] is the per-token acceptance rate, ``gamma`` >= 1 the
    number of drafted tokens. At ``alpha = 1`` every draft is accepted and the
    value is its limit ``gamma + 1``; at ``alpha = 0`` it is 1 (the target's
    own token).
    """
    a = _check.fraction("alpha", alpha, open_low=False)
    g = _check.integers("gamma", gamma, minimum=1)
    return _out(_expected_tokens(a, g))


@twin((1 - alpha ** (gamma + 1)) / ((1 - alpha) * (gamma * c_draft + 1)),
      domains={"alpha": _ALPHA, "gamma": _GAMMA, "draft_cost_ratio": (0.0, 1.0, "float")},
      alpha=alpha, gamma=gamma, draft_cost_ratio=c_draft)
def speculative_speedup(alpha, gamma, draft_cost_ratio):
    """Expected wall-clock speedup of speculative decoding: ``E[tokens] / (gamma c + 1)``.

    ``draft_cost_ratio`` ``c`` >= 0 is the time of one draft pass divided by
    one target pass. A value below 1 means speculation loses time.
    """
    c = np.asarray(_check.non_negative("draft_cost_ratio", draft_cost_ratio))
    e = np.asarray(expected_tokens_per_target_pass(alpha, gamma))
    g = np.asarray(_check.integers("gamma", gamma, minimum=1), dtype=float)
    return _out(e / (g * c + 1.0))


@twin(n_shared + k_active * n_expert, domains={"experts_per_token": (1, 16, "int")},
      shared_params=n_shared, params_per_expert=n_expert, experts_per_token=k_active)
def moe_active_params(shared_params, params_per_expert, experts_per_token):
    """Parameters one token uses in a mixture-of-experts model: ``N_shared + k N_expert``.

    ``shared_params`` counts everything every token passes through
    (attention, norms, shared experts, router, embeddings row and lm_head as
    you choose to count them); ``params_per_expert`` one routed expert summed
    over all MoE layers; ``experts_per_token`` the routed experts chosen per
    token (top-k). For a ``ModelConfig`` use :func:`aiinfra.models.active_params`.
    """
    s = np.asarray(_check.non_negative("shared_params", shared_params))
    e = np.asarray(_check.non_negative("params_per_expert", params_per_expert))
    k = np.asarray(_check.integers("experts_per_token", experts_per_token, minimum=1), dtype=float)
    return _out(s + k * e)


@twin(N_active * b_W, active_params=N_active, bytes_per_param=b_W)
def moe_active_bytes_per_token(active_params, bytes_per_param):
    """Weight bytes one token's decode step reads in a MoE model at batch 1: ``N_a * b_W``.

    Only the routed experts are touched, so a model with a large total count
    can stream like a much smaller dense one. (At large batch, different
    tokens pick different experts and the union approaches all of them.)
    """
    n = np.asarray(_check.non_negative("active_params", active_params))
    b = np.asarray(_check.positive("bytes_per_param", bytes_per_param))
    return _out(n * b)


def _plain_scalar(name, value, check):
    v = check(name, value)
    if np.ndim(v):
        raise ValueError(f"{name} must be a scalar, got an array")
    return float(v)


def max_users_per_replica(gpus_per_replica, target_tpot_s, weight_bytes, kv_bytes_per_user, flops_per_token,
                          gpu_memory_bytes, gpu_bandwidth_bytes_per_s, gpu_flops_per_s,
                          eta_f=1.0, eta_b=1.0, memory_reserve_fraction=0.0, weight_read_bytes=None):
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
    """
    g = _check.integer("gpus_per_replica", gpus_per_replica, minimum=1)
    t = _plain_scalar("target_tpot_s", target_tpot_s, _check.positive)
    w = _plain_scalar("weight_bytes", weight_bytes, _check.positive)
    w_read = w if weight_read_bytes is None else _plain_scalar("weight_read_bytes", weight_read_bytes, _check.positive)
    kv = _plain_scalar("kv_bytes_per_user", kv_bytes_per_user, _check.positive)
    f1 = _plain_scalar("flops_per_token", flops_per_token, _check.positive)
    mem = _plain_scalar("gpu_memory_bytes", gpu_memory_bytes, _check.positive)
    bw = _plain_scalar("gpu_bandwidth_bytes_per_s", gpu_bandwidth_bytes_per_s, _check.positive)
    pi = _plain_scalar("gpu_flops_per_s", gpu_flops_per_s, _check.positive)
    ef = _plain_scalar("eta_f", eta_f, _check.fraction)
    eb = _plain_scalar("eta_b", eta_b, _check.fraction)
    r = _check.fraction("memory_reserve_fraction", memory_reserve_fraction, open_low=False, closed_high=False)
    limits = {
        "memory": (g * mem * (1.0 - r) - w) / kv,
        "bandwidth": (t * g * eb * bw - w_read) / kv,
        "compute": t * g * ef * pi / f1,
    }
    limiting = min(limits, key=limits.get)
    users = max(0, math.floor(limits[limiting] * (1 + 1e-12)))
    return users, limiting


@dataclass(frozen=True)
class CapacityPlan:
    """The answer of :func:`gpus_for_users`: replica size and count, users per replica, what binds."""

    gpus_total: int
    gpus_per_replica: int
    replicas: int
    users_per_replica: int
    max_users_per_replica: int
    limiting: str
    step_time_s: float

    def as_dict(self) -> dict:
        return asdict(self)


def gpus_for_users_core(concurrent_users, target_tpot_s, weight_bytes, kv_bytes_per_user, flops_per_token,
                        gpu_memory_bytes, gpu_bandwidth_bytes_per_s, gpu_flops_per_s,
                        eta_f=1.0, eta_b=1.0, memory_reserve_fraction=0.0, replica_sizes=(1, 2, 4, 8),
                        weight_read_bytes=None):
    """Fewest GPUs that serve ``concurrent_users`` at ``target_tpot_s``, from plain numbers.

    For each replica size ``g`` in ``replica_sizes`` (tensor-parallel group
    sizes), find the users one replica holds (:func:`max_users_per_replica`),
    the replicas needed, ``ceil(U / users)``, and the total ``g * replicas``.
    The smallest total wins (ties go to the size listed first). Users are
    spread evenly over replicas (``users_per_replica``, at most
    ``max_users_per_replica``, whose binding ceiling is ``limiting``);
    ``step_time_s`` is the predicted decode step of one replica at that load
    (<= ``target_tpot_s``). Raises ``ValueError``
    if no listed size can meet the target at all.
    """
    u = _check.integer("concurrent_users", concurrent_users, minimum=1)
    sizes = list(replica_sizes)
    if not sizes:
        raise ValueError("replica_sizes must list at least one replica size, got an empty sequence")
    best = None
    for g in sizes:
        g = _check.integer("replica_sizes", g, minimum=1)
        per, limiting = max_users_per_replica(g, target_tpot_s, weight_bytes, kv_bytes_per_user, flops_per_token,
                                              gpu_memory_bytes, gpu_bandwidth_bytes_per_s, gpu_flops_per_s,
                                              eta_f, eta_b, memory_reserve_fraction, weight_read_bytes)
        if per < 1:
            continue
        replicas = math.ceil(u / per)
        load = math.ceil(u / replicas)
        w_read = weight_bytes if weight_read_bytes is None else weight_read_bytes
        step = max(load * flops_per_token / (eta_f * g * gpu_flops_per_s),
                   (w_read + load * kv_bytes_per_user) / (eta_b * g * gpu_bandwidth_bytes_per_s))
        plan = CapacityPlan(g * replicas, g, replicas, load, per, limiting, float(step))
        if best is None or plan.gpus_total < best.gpus_total:
            best = plan
    if best is None:
        raise ValueError(
            f"target_tpot_s={target_tpot_s!r} cannot be met by any replica size in {sizes}: "
            "the weights do not fit or one step takes longer than the target"
        )
    return best


def gpus_for_users(concurrent_users, target_tpot_s, context_tokens, model, gpu, precision="bf16",
                   kv_bytes_per_element=2, eta_f=1.0, eta_b=1.0, memory_reserve_fraction=0.0,
                   replica_sizes=(1, 2, 4, 8), compute_precision="bf16"):
    """GPUs needed for ``concurrent_users`` decoding at ``target_tpot_s`` with ``context_tokens`` each.

    Builds the plain numbers from a ``ModelConfig`` and a ``GPU`` and calls
    :func:`gpus_for_users_core`. Resident: the whole checkpoint at
    ``precision`` (:func:`aiinfra.memory.weight_bytes`). Read per step: the
    decode-read weights (:func:`aiinfra.models.decode_read_params`; for MoE
    the active set, an optimistic batch-1 figure) plus each user's KV at the
    full ``context_tokens``. FLOPs per token: :func:`aiinfra.compute.decode_flops`.
    Communication inside a replica and queueing are ignored, so this is the
    fewest GPUs that could work, not a guarantee.
    """
    from . import compute, decode, memory, models, units

    ctx = _check.integer("context_tokens", context_tokens, minimum=1)
    resident = float(memory.weight_bytes(model, precision))
    read = float(models.decode_read_params(model) * units.bytes_per_param(precision))
    kv = float(memory.kv_bytes_per_request(model, ctx, kv_bytes_per_element))
    f1 = float(compute.decode_flops(model, ctx))
    return gpus_for_users_core(concurrent_users, target_tpot_s, resident, kv, f1, float(gpu.memory_bytes),
                               float(gpu.memory_bandwidth_bytes_per_s), decode.peak_flops_per_s(gpu, compute_precision),
                               eta_f, eta_b, memory_reserve_fraction, replica_sizes, weight_read_bytes=read)


@twin(usd_hr / 3600 / tok_rate * 10**6, usd_per_gpu_hour=usd_hr, tokens_per_s_per_gpu=tok_rate)
def cost_per_million_tokens(usd_per_gpu_hour, tokens_per_s_per_gpu):
    """US dollars per million generated tokens: ``price_per_GPU_hour / 3600 / (tokens/s per GPU) * 1e6``.

    ``tokens_per_s_per_gpu`` is the sustained aggregate rate of a replica
    divided by its GPU count; the price is whatever the GPU-hour costs
    (rental, or amortised capex plus power).
    """
    p = np.asarray(_check.non_negative("usd_per_gpu_hour", usd_per_gpu_hour))
    r = np.asarray(_check.positive("tokens_per_s_per_gpu", tokens_per_s_per_gpu))
    return _out(p / 3600.0 / r * 1e6)
