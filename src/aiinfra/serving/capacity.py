"""Capacity and cost: how many GPUs a load needs, and what a token costs.

Capacity planning (:func:`plan`) is a bound, not a simulator: users are
served by identical replicas of ``g`` GPUs each, described by a
:class:`aiinfra.deployment.Deployment`; a replica holds the weights once and
one KV cache per user, and its decode step must finish within the target
TPOT (:meth:`~aiinfra.deployment.Deployment.max_users`). The model ignores
communication inside a replica and queueing, so the answer is the fewest GPUs
that could possibly work.

Cost: a GPU-hour buys ``3600 x tokens/s`` tokens (:func:`cost_per_million_tokens`);
with a fixed KV budget the batch shrinks as the context grows while each
request reads more, so the price of a token rises with its context
(:func:`cost_vs_context`).

Serves: Chapters 2, 4, 5 and 7 (cost per token, the price of context, capacity planning).
"""

from __future__ import annotations

import math
from dataclasses import asdict, dataclass

import numpy as np

from aiinfra import decode
from aiinfra.cluster import scale
from aiinfra.formula import check, formula

__all__ = [
    "REPLICA_SIZES",
    "CapacityPlan",
    "plan",
    "cost_per_million_tokens",
    "gpu_hours_for_tokens",
    "ContextCost",
    "cost_vs_context",
    "FleetEconomics",
    "fleet_economics",
]

#: Replica sizes (tensor-parallel group sizes) a plan considers by default.
REPLICA_SIZES = (1, 2, 4, 8)


@dataclass(frozen=True)
class CapacityPlan:
    """The answer of :func:`plan`: replica size and count, users per replica, what binds."""

    gpus_total: int
    gpus_per_replica: int
    replicas: int
    users_per_replica: int
    max_users_per_replica: int
    limiting: str
    step_time_s: float

    @property
    def capacity_users(self) -> int:
        """Users the plan's replicas can hold together: ``replicas x max_users_per_replica`` (>= the demand)."""
        return self.replicas * self.max_users_per_replica

    def as_dict(self) -> dict:
        return asdict(self)


def plan(
    deployment, concurrent_users, target_tpot_s, context_tokens, replica_sizes=REPLICA_SIZES
) -> CapacityPlan:
    """Fewest GPUs that serve ``concurrent_users`` decoding at ``target_tpot_s`` with ``context_tokens`` each.

    ``deployment`` describes one replica (model, GPU, precisions,
    efficiencies, memory reserve); its ``n_gpus`` is replaced by each size
    ``g`` in ``replica_sizes`` in turn. For each, the users one replica holds
    (:meth:`~aiinfra.deployment.Deployment.max_users`), the replicas needed,
    ``ceil(U / users)``, and the total ``g * replicas``. The smallest total
    wins (ties go to the size listed first). Users are spread evenly over
    replicas (``users_per_replica``, at most ``max_users_per_replica``, whose
    binding ceiling is ``limiting``); ``step_time_s`` is the predicted decode
    step of one replica at that load (<= ``target_tpot_s``). Raises
    ``ValueError`` if no listed size can meet the target at all.
    """
    u = check("concurrent_users", concurrent_users, "int>=1", scalar=True)
    ctx = check("context_tokens", context_tokens, "int>=1", scalar=True)
    sizes = list(replica_sizes)
    if not sizes:
        raise ValueError("replica_sizes must list at least one replica size, got an empty sequence")
    best = None
    for g in sizes:
        replica = deployment.replace(n_gpus=check("replica_sizes", g, "int>=1", scalar=True))
        per, limiting = replica.max_users(target_tpot_s, ctx)
        if per < 1:
            continue
        replicas = math.ceil(u / per)
        load = math.ceil(u / replicas)
        candidate = CapacityPlan(
            replica.n_gpus * replicas,
            replica.n_gpus,
            replicas,
            load,
            per,
            limiting,
            float(replica.step(load, ctx).time_s),
        )
        if best is None or candidate.gpus_total < best.gpus_total:
            best = candidate
    if best is None:
        raise ValueError(
            f"target_tpot_s={target_tpot_s!r} cannot be met by any replica size in {sizes}: "
            "the weights do not fit or one step takes longer than the target"
        )
    return best


@dataclass(frozen=True)
class FleetEconomics:
    """What a :class:`CapacityPlan` produces, draws and costs (SI units, US dollars)."""

    tokens_per_s: float
    power_w: float
    usd_per_million_tokens: float


def fleet_economics(plan: CapacityPlan, watts_per_gpu, pue, usd_per_gpu_hour) -> FleetEconomics:
    """Tokens per second, facility power and price per million tokens of ``plan``.

    Every replica decodes its ``users_per_replica`` users at ``step_time_s``
    (:func:`aiinfra.decode.tokens_per_s_aggregate`, times the replicas); the
    fleet draws ``G x watts_per_gpu x PUE`` (:func:`aiinfra.cluster.scale.cluster_power_w`,
    ``watts_per_gpu`` measured at the server, before PUE); a GPU-hour costs
    ``usd_per_gpu_hour`` (:func:`cost_per_million_tokens`). Chapter 7.
    """
    if not isinstance(plan, CapacityPlan):
        raise ValueError(f"plan must be a CapacityPlan (see plan()), got {type(plan).__name__}")
    tok_s = decode.tokens_per_s_aggregate(plan.users_per_replica, plan.step_time_s) * plan.replicas
    power = scale.cluster_power_w(plan.gpus_total, watts_per_gpu, pue)
    usd = cost_per_million_tokens(usd_per_gpu_hour, tok_s / plan.gpus_total)
    return FleetEconomics(float(tok_s), float(power), float(usd))


@formula("p_GPUh/3600/r_tok*10**6", usd_per_gpu_hour="p_GPUh >=0", tokens_per_s_per_gpu="r_tok >0")
def cost_per_million_tokens(usd_per_gpu_hour, tokens_per_s_per_gpu):
    """US dollars per million generated tokens: ``price_per_GPU_hour / 3600 / (tokens/s per GPU) * 1e6``.

    ``tokens_per_s_per_gpu`` is the sustained aggregate rate of a replica
    divided by its GPU count; the price is whatever the GPU-hour costs
    (rental, or amortised capex plus power).
    """
    return usd_per_gpu_hour / 3600.0 / tokens_per_s_per_gpu * 1e6


@formula("n_tok/r_tok/3600", tokens="n_tok >=0", tokens_per_s_per_gpu="r_tok >0")
def gpu_hours_for_tokens(tokens, tokens_per_s_per_gpu):
    """GPU-hours needed to generate ``tokens`` at ``tokens_per_s_per_gpu``: ``n / r / 3600``. Accepts arrays."""
    return tokens / tokens_per_s_per_gpu / 3600.0


@dataclass(frozen=True)
class ContextCost:
    """Arrays over context length, as returned by :func:`cost_vs_context` (SI units, dollars)."""

    context_tokens: np.ndarray
    max_batch: np.ndarray
    step_time_s: np.ndarray
    tokens_per_s_per_gpu: np.ndarray
    usd_per_million_tokens: np.ndarray


def cost_vs_context(
    context_tokens,
    weight_bytes,
    kv_bytes_per_token,
    kv_budget_bytes,
    flops_per_token,
    flops_per_s,
    bandwidth_bytes_per_s,
    usd_per_gpu_hour,
    n_gpus=1,
    eta_f=1.0,
    eta_b=1.0,
    batch_cap=None,
) -> ContextCost:
    """Price per million output tokens when every request holds ``context_tokens`` of KV.

    For each context ``n``: the batch is the most requests whose caches fit,
    ``B = floor(M_KV / (n k))`` (:func:`aiinfra.decode.max_batch_from_kv_budget`),
    capped at ``batch_cap`` if given; a step reads the weights plus ``B``
    caches of ``n k`` bytes and does ``B`` tokens of ``flops_per_token``
    (:func:`aiinfra.decode.batched_decode_step_time_s` over ``n_gpus`` GPUs);
    the replica then produces ``B / T_step`` tokens/s, and a GPU-hour at
    ``usd_per_gpu_hour`` buys :func:`cost_per_million_tokens`.
    ``weight_bytes`` and ``kv_budget_bytes`` are totals over the replica,
    ``flops_per_s`` and ``bandwidth_bytes_per_s`` per GPU. Every context must
    leave room for at least one request.
    """
    ctx = np.atleast_1d(check("context_tokens", context_tokens, ">0")).astype(float)
    k = check("kv_bytes_per_token", kv_bytes_per_token, ">0")
    budget = check("kv_budget_bytes", kv_budget_bytes, ">0")
    n = check("n_gpus", n_gpus, "int>=1", scalar=True)
    per_request = ctx * k
    bmax = np.atleast_1d(decode.max_batch_from_kv_budget(budget, per_request))
    if np.any(bmax < 1):
        longest = int(budget // k)
        raise ValueError(
            f"context_tokens must be <= {longest:,} so that one request's KV fits in kv_budget_bytes, got {context_tokens!r}"
        )
    if batch_cap is not None:
        bmax = np.minimum(bmax, check("batch_cap", batch_cap, "int>=1", scalar=True))
    step = np.atleast_1d(
        decode.batched_decode_step_time_s(
            bmax,
            flops_per_token,
            weight_bytes,
            per_request,
            n * check("flops_per_s", flops_per_s, ">0"),
            n * check("bandwidth_bytes_per_s", bandwidth_bytes_per_s, ">0"),
            eta_f,
            eta_b,
        )
    )
    per_gpu = bmax / step / n
    usd = np.atleast_1d(cost_per_million_tokens(usd_per_gpu_hour, per_gpu))
    return ContextCost(ctx, bmax.astype(np.int64), step, per_gpu, usd)
