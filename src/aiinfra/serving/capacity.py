"""Capacity and cost: how many GPUs a load needs, and what a token costs.

Capacity planning (:func:`plan`) is a steady-state model, not a simulator:
users are served by identical replicas of ``g`` GPUs each, described by a
:class:`aiinfra.deployment.Deployment`; a replica holds the weights once and
one KV cache per user, and the time per output token must stay within the
target TPOT (:meth:`~aiinfra.deployment.Deployment.max_users`). Each user asks
again as soon as an answer of ``G`` tokens ends, so a replica of ``u`` users
also prefills ``u / (G t)`` prompts a second; with prefill sharing the GPUs,
the time per token becomes ``t = T_step(u) + u T_prefill / G``
(:func:`tpot_with_prefill_s`), and prefix reuse shortens ``T_prefill``. With the
deployment's efficiencies at 1 and no fixed cost per step it is a bound (the
fewest GPUs that could possibly work); with calibrated ones a prediction
(``aiinfra plan`` prints both). Queueing and failures are left out.

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
    "tpot_with_prefill_s",
    "prefill_time_per_request_s",
    "cost_per_million_tokens",
    "replica_cost_per_million_tokens",
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
    """The answer of :func:`plan`: replica size and count, users per replica, what binds, the times.

    ``step_time_s`` is one decode step of a replica at its load (fixed cost
    included); ``tpot_s`` the time per output token once prefill shares the
    GPUs (``<=`` the target); ``prefill_s`` one request's prefill on a replica
    (0 when the plan leaves prefill out) and ``prefill_share`` the share of a
    replica's time it takes. ``prompt_tokens``, ``output_tokens`` and
    ``prefix_reuse`` are the workload the plan was made for (``output_tokens``
    0: prefill left out).
    """

    gpus_total: int
    gpus_per_replica: int
    replicas: int
    users_per_replica: int
    max_users_per_replica: int
    limiting: str
    step_time_s: float
    tpot_s: float
    prefill_s: float
    prefill_share: float
    prompt_tokens: int
    output_tokens: int
    prefix_reuse: float

    @property
    def capacity_users(self) -> int:
        """Users the plan's replicas can hold together: ``replicas x max_users_per_replica`` (>= the demand)."""
        return self.replicas * self.max_users_per_replica

    @property
    def requests_per_s(self) -> float:
        """Requests the whole fleet starts per second: ``replicas x u / (G t)`` (0 when prefill is left out)."""
        if not self.output_tokens:
            return 0.0
        return self.replicas * self.users_per_replica / (self.output_tokens * self.tpot_s)

    def as_dict(self) -> dict:
        return {**asdict(self), "requests_per_s": self.requests_per_s}


@formula(
    step_time_s="T_step >0",
    users="u >=0",
    prefill_s="T_prefill >=0",
    output_tokens="G int>=1",
)
def tpot_with_prefill_s(step_time_s, users, prefill_s, output_tokens):
    """Time per output token when a replica's ``u`` users each need a prefill every ``G`` tokens: ``T_step + u T_prefill / G``.

    In steady state a replica runs one decode step per output token and, per
    token, ``u / G`` of a prefill (every user starts a new request when an
    answer of ``G`` tokens ends): the two share the GPUs, so their times add.
    Chapter 7.
    """
    return step_time_s + users * prefill_s / output_tokens


def prefill_time_per_request_s(deployment, prompt_tokens, prefix_reuse=0.0, eta_f=None) -> float:
    """One request's prefill on a replica: the FLOPs of its new tokens at ``eta_f`` of the dense peak.

    With a share ``prefix_reuse`` of the prompt already cached, only the last
    ``P - floor(r P)`` tokens are computed (they still attend to the cached
    prefix): ``F(P) - F(floor(r P))`` with ``F`` the causal prefill FLOPs.
    Prefill is batched, so its weight reads are shared and the time is the
    arithmetic alone. ``eta_f`` defaults to the deployment's. Chapter 7.
    """
    p = check("prompt_tokens", prompt_tokens, "int>=1", scalar=True)
    r = check("prefix_reuse", prefix_reuse, "[0,1)", scalar=True)
    ef = deployment.eta_f if eta_f is None else check("eta_f", eta_f, "(0,1]", scalar=True)
    cached = math.floor(r * p)
    flops = float(deployment.prefill(p).flops) - (float(deployment.prefill(cached).flops) if cached else 0.0)
    return flops / (ef * deployment.peak_flops_per_s)


def _users_with_prefill(replica, most, target, ctx, prefill_s, g_out, overhead):
    """Most users (<= ``most``) whose time per token, prefill included, meets ``target``."""

    def tpot(u):
        return tpot_with_prefill_s(
            float(replica.step(u, ctx).time_s) + overhead(replica.n_gpus, u), u, prefill_s, g_out
        )

    lo, hi = 0, most
    while lo < hi:
        mid = (lo + hi + 1) // 2
        lo, hi = (mid, hi) if tpot(mid) <= target else (lo, mid - 1)
    return lo


def plan(
    deployment,
    concurrent_users,
    target_tpot_s,
    context_tokens,
    replica_sizes=REPLICA_SIZES,
    prompt_tokens=None,
    output_tokens=None,
    prefix_reuse=0.0,
    prefill_eta_f=None,
    step_overhead_s=None,
) -> CapacityPlan:
    """Fewest GPUs that serve ``concurrent_users`` at ``target_tpot_s`` with ``context_tokens`` each, prefill included.

    ``deployment`` describes one replica (model, GPU, precisions,
    efficiencies, memory reserve); its ``n_gpus`` is replaced by each size
    ``g`` in ``replica_sizes`` in turn. For each: the users one replica holds
    (:meth:`~aiinfra.deployment.Deployment.max_users`: memory, bandwidth,
    compute), then, when ``output_tokens`` is given, the most of those whose
    time per token with prefill (:func:`tpot_with_prefill_s`, prompts of
    ``prompt_tokens`` (default ``context_tokens``) with ``prefix_reuse`` of
    each cached, :func:`prefill_time_per_request_s` at ``prefill_eta_f``) meets
    the target; ``limiting`` is then ``"prefill"`` when that cut binds. The
    replicas needed are ``ceil(U / users)``; the smallest total wins (ties go
    to the size listed first); users are spread evenly. ``step_overhead_s``
    (a function of ``(n_gpus, users)``, default none) adds a fixed time to
    every decode step: a prediction's per-layer cost and all-reduces. Without
    ``output_tokens`` the plan leaves prefill out (a looser bound). Raises
    ``ValueError`` if no listed size can meet the target at all.
    """
    u = check("concurrent_users", concurrent_users, "int>=1", scalar=True)
    ctx = check("context_tokens", context_tokens, "int>=1", scalar=True)
    target = check("target_tpot_s", target_tpot_s, ">0", scalar=True)
    g_out = 0 if output_tokens is None else check("output_tokens", output_tokens, "int>=1", scalar=True)
    prompt = ctx if prompt_tokens is None else check("prompt_tokens", prompt_tokens, "int>=1", scalar=True)
    reuse = check("prefix_reuse", prefix_reuse, "[0,1)", scalar=True)
    overhead = step_overhead_s or (lambda n_gpus, users: 0.0)
    sizes = list(replica_sizes)
    if not sizes:
        raise ValueError("replica_sizes must list at least one replica size, got an empty sequence")
    best = None
    for g in sizes:
        replica = deployment.replace(n_gpus=check("replica_sizes", g, "int>=1", scalar=True))
        per, limiting = replica.max_users(target, ctx)
        pf = prefill_time_per_request_s(replica, prompt, reuse, prefill_eta_f) if g_out else 0.0
        fitted = _users_with_prefill(replica, per, target, ctx, pf, max(g_out, 1), overhead) if per else 0
        if g_out == 0 and fitted < per:
            limiting = "fixed cost"
        elif fitted < per:
            limiting = "prefill"
        if fitted < 1:
            continue
        replicas = math.ceil(u / fitted)
        load = math.ceil(u / replicas)
        step = float(replica.step(load, ctx).time_s) + overhead(replica.n_gpus, load)
        tpot = tpot_with_prefill_s(step, load, pf, max(g_out, 1))
        candidate = CapacityPlan(
            replica.n_gpus * replicas,
            replica.n_gpus,
            replicas,
            load,
            fitted,
            limiting,
            step,
            float(tpot),
            pf,
            float((tpot - step) / tpot),
            prompt,
            g_out,
            reuse,
        )
        if best is None or candidate.gpus_total < best.gpus_total:
            best = candidate
    if best is None:
        raise ValueError(
            f"target_tpot_s={target_tpot_s!r} cannot be met by any replica size in {sizes}: "
            "the weights do not fit or one step (with its prefill) takes longer than the target"
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

    Every replica decodes its ``users_per_replica`` users at one token each
    per ``tpot_s`` (:func:`aiinfra.decode.tokens_per_s_aggregate`, times the replicas); the
    fleet draws ``G x watts_per_gpu x PUE`` (:func:`aiinfra.cluster.scale.cluster_power_w`,
    ``watts_per_gpu`` measured at the server, before PUE); a GPU-hour costs
    ``usd_per_gpu_hour`` (:func:`cost_per_million_tokens`). Chapter 7.
    """
    if not isinstance(plan, CapacityPlan):
        raise ValueError(f"plan must be a CapacityPlan (see plan()), got {type(plan).__name__}")
    tok_s = decode.tokens_per_s_aggregate(plan.users_per_replica, plan.tpot_s) * plan.replicas
    power = scale.cluster_power_w(plan.gpus_total, watts_per_gpu, pue)
    usd = cost_per_million_tokens(usd_per_gpu_hour, tok_s / plan.gpus_total)
    return FleetEconomics(float(tok_s), float(power), float(usd))


@formula(usd_per_gpu_hour="p_GPUh >=0", tokens_per_s_per_gpu="r_tok >0")
def cost_per_million_tokens(usd_per_gpu_hour, tokens_per_s_per_gpu):
    """US dollars per million generated tokens: ``price_per_GPU_hour / 3600 / (tokens/s per GPU) * 1e6``.

    ``tokens_per_s_per_gpu`` is the sustained aggregate rate of a replica
    divided by its GPU count; the price is whatever the GPU-hour costs
    (rental, or amortised capex plus power).
    """
    return usd_per_gpu_hour / 3600.0 / tokens_per_s_per_gpu * 1e6


def replica_cost_per_million_tokens(deployment, usd_per_gpu_hour, batch, context_tokens):
    """Floor price of a million output tokens on ``deployment`` at ``batch`` requests of ``context_tokens`` each.

    The replica's aggregate rate (:meth:`~aiinfra.deployment.Deployment.step`)
    divided by its GPU count, priced by :func:`cost_per_million_tokens`.
    Accepts arrays. Chapters 4 and 5.
    """
    per_gpu = deployment.step(batch, context_tokens).tokens_per_s / deployment.n_gpus
    return cost_per_million_tokens(usd_per_gpu_hour, per_gpu)


@formula(tokens="n_tok >=0", tokens_per_s_per_gpu="r_tok >0")
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
