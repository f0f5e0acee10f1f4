"""Inference across many chips: what each GPU holds, what a decode step sends, and who waits.

A model served on ``n`` GPUs is split in one or more of four ways:

* **tensor parallelism** (TP) splits every matrix; each layer then sums
  partial results with two all-reduces of the tokens' hidden vectors
  (:func:`aiinfra.cluster.parallelism.tp_allreduce_message_bytes`). It splits
  the KV cache by KV heads only, so a TP group wider than the model's KV
  heads repeats them, and MLA's single shared latent is repeated on every
  rank (:func:`aiinfra.memory.kv_bytes_per_gpu`);
* **expert parallelism** (EP) places whole experts on different GPUs; each
  MoE layer sends every token to its experts' GPUs and back, a dispatch and a
  combine all-to-all (:func:`aiinfra.cluster.network.moe_all_to_all_bytes`).
  The layers outside the experts (attention, shared expert) are then run
  **data parallel**: every GPU holds them whole and serves its own requests,
  whose KV cache lives on that GPU alone (DP attention);
* **pipeline parallelism** splits the layers into stages, which pass one
  hidden vector per token across each boundary
  (:func:`aiinfra.cluster.parallelism.pp_boundary_bytes`);
* **data parallelism** copies the whole model; replicas send nothing to one
  another during inference.

Routing is uneven, and the busiest GPU sets the time of every MoE layer.
:func:`ep_load_imbalance` measures that as the busiest GPU's share of tokens
over the mean, and shows what duplicating the hottest experts (DeepSeek's
redundant experts, placed by its EPLB) buys back; :func:`zipf_expert_loads`
makes a skewed load to try it on.

:func:`ep_decode_step` times one decode step of a MoE model run with DP
attention and EP over ``n`` GPUs, as a bound (every rate at its peak, no
latency, everything overlapped) and as a prediction (the calibrated
efficiencies and per-layer cost of :mod:`aiinfra.predict`, the all-to-all
regimes of :mod:`aiinfra.cluster.network`, communication not overlapped).

Serves: chapter 6, "Inference across many chips".
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from aiinfra import compute, memory, roofline
from aiinfra.catalog import hardware, models
from aiinfra.cluster import network
from aiinfra.formula import check, formula
from aiinfra.serving import moe

__all__ = [
    "ep_weight_bytes_per_gpu",
    "ep_max_batch_per_gpu",
    "tp_max_batch",
    "zipf_expert_loads",
    "ep_load_imbalance",
    "EPStep",
    "ep_decode_step",
]


def _routed_and_rest_params(m) -> tuple[float, float]:
    groups = models.params_by_group(m)
    routed = float(groups.get("expert", 0))
    return routed, float(models.total_params(m)) - routed


@formula(None, model="label", ep="int>=1", bytes_per_weight=">0", redundant_experts="int>=0")
def ep_weight_bytes_per_gpu(model, ep, bytes_per_weight=1.0, redundant_experts=0):
    """Weight bytes one GPU holds under EP over ``ep`` GPUs with everything else replicated.

    ``W_rest + W_routed (E + r) / (E n)``: the routed experts, ``E`` of them
    plus ``r`` redundant copies, spread evenly over the ``n`` GPUs; the rest
    (attention, shared expert, dense layers, embeddings, router) whole on
    every GPU, as DP attention needs. ``bytes_per_weight``: 1 for FP8
    (DeepSeek-V3 as shipped; block scales not counted). Chapter 6.
    """
    m = models.load(model)
    if not m.is_moe:
        raise ValueError(f"model must be a mixture of experts for expert parallelism, got {m.name}")
    routed, rest = _routed_and_rest_params(m)
    e = m.n_routed_experts
    return bytes_per_weight * (rest + routed * (e + redundant_experts) / (e * ep))


def ep_max_batch_per_gpu(
    model, gpu, ep, context_tokens, bytes_per_weight=1.0, kv_bytes_per_element=2.0, memory_utilization=0.9
) -> int:
    """Most requests of ``context_tokens`` one GPU holds under DP attention and EP over ``ep`` GPUs.

    ``floor((u C - W_gpu) / K)``: the usable share ``u`` of the GPU's memory
    ``C`` less its weights (:func:`ep_weight_bytes_per_gpu`), over one
    request's KV cache ``K``, which with DP attention lives on that GPU
    alone. 0 when the weights do not fit. ``memory_utilization`` 1 gives the
    bound; 0.9 is vLLM's default and the calibrated value. Chapter 6.
    """
    m, g = models.load(model), hardware.gpu(gpu)
    u = check("memory_utilization", memory_utilization, "(0,1]", scalar=True)
    ctx = check("context_tokens", context_tokens, "int>=1", scalar=True)
    free = u * g.memory_bytes - ep_weight_bytes_per_gpu(m, ep, bytes_per_weight)
    kv = memory.kv_bytes_per_token(m, kv_bytes_per_element) * ctx
    return max(int(free // kv), 0)


def tp_max_batch(
    model, gpu, tp, context_tokens, bytes_per_weight=1.0, kv_bytes_per_element=2.0, memory_utilization=0.9
) -> int:
    """Most requests of ``context_tokens`` a ``tp``-way tensor-parallel group holds.

    ``floor((u C - W / t) / K_gpu)``: each GPU holds ``1/t`` of the weights
    and :func:`aiinfra.memory.kv_bytes_per_gpu` of every request's cache, which for MLA
    (one shared latent, ``kv_heads = 1``) is the whole cache on every rank;
    the group serves the same requests on all its GPUs. Chapter 6.
    """
    m, g = models.load(model), hardware.gpu(gpu)
    t = check("tp", tp, "int>=1", scalar=True)
    u = check("memory_utilization", memory_utilization, "(0,1]", scalar=True)
    ctx = check("context_tokens", context_tokens, "int>=1", scalar=True)
    kv_heads = 1 if m.attention_kind == "mla" else m.n_kv_heads
    kv = memory.kv_bytes_per_gpu(memory.kv_bytes_per_token(m, kv_bytes_per_element) * ctx, t, kv_heads)
    free = u * g.memory_bytes - bytes_per_weight * models.total_params(m) / t
    return max(int(free // kv), 0)


def zipf_expert_loads(n_experts, exponent):
    """A skewed routing load: expert ``i`` (1-based) gets a share proportional to ``1 / i^s``.

    ``exponent`` ``s = 0`` is uniform routing; larger values concentrate the
    tokens on a few hot experts. Returns the shares (they sum to 1), hottest
    first. A stand-in for measured per-expert counts, which DeepSeek's EPLB
    takes as its input. Chapter 6.
    """
    e = check("n_experts", n_experts, "int>=1", scalar=True)
    s = check("exponent", exponent, ">=0", scalar=True)
    w = 1.0 / np.arange(1, e + 1, dtype=float) ** s
    return w / w.sum()


def ep_load_imbalance(expert_loads, n_ranks, redundant_experts=0) -> float:
    """Busiest GPU's load over the mean when experts with ``expert_loads`` are spread over ``n_ranks`` GPUs.

    Placement in the manner of DeepSeek's EPLB: first the ``r`` redundant
    copies go one at a time to the expert with the largest load per copy
    (its tokens are split evenly over its copies); then the copies, heaviest
    first, each go to the least-loaded GPU that still has a free slot, every
    GPU taking at most ``ceil((E + r) / n)`` of them. 1 is perfect balance;
    the MoE layer runs at the pace of the busiest GPU, so its time grows by
    this factor. Chapter 6.
    """
    loads = check("expert_loads", np.asarray(expert_loads, dtype=float), ">=0")
    if np.ndim(loads) != 1 or loads.size < 1 or loads.sum() <= 0:
        raise ValueError("expert_loads must be a non-empty 1-D sequence of loads >= 0 with a positive sum")
    n = check("n_ranks", n_ranks, "int>=1", scalar=True)
    r = check("redundant_experts", redundant_experts, "int>=0", scalar=True)
    slots = -(-(loads.size + r) // n)
    copies = np.ones(loads.size)
    for _ in range(r):
        copies[np.argmax(loads / copies)] += 1
    pieces = np.repeat(loads / copies, copies.astype(int))
    gpu_load, gpu_used = np.zeros(n), np.zeros(n, dtype=int)
    for piece in np.sort(pieces)[::-1]:
        open_gpus = np.flatnonzero(gpu_used < slots)
        g = open_gpus[np.argmin(gpu_load[open_gpus])]
        gpu_load[g] += piece
        gpu_used[g] += 1
    return float(gpu_load.max() / gpu_load.mean())


@dataclass(frozen=True)
class EPStep:
    """One decode step on one GPU of an EP deployment: its three demands in seconds, and what they add up to.

    ``compute_s``: the GPU's FLOPs at its (achieved) dense peak;
    ``memory_s``: its weight and KV reads at its (achieved) bandwidth;
    ``network_s``: the dispatch and combine all-to-alls of every MoE layer;
    ``overhead_s``: the fixed per-layer cost (0 in the bound). ``time_s``:
    the bound overlaps all three (the largest); the prediction overlaps
    compute with memory and adds the network and the overhead.
    ``waits``: which of compute, memory and network is largest.
    """

    compute_s: float
    memory_s: float
    network_s: float
    overhead_s: float
    time_s: float
    waits: str


def ep_decode_step(
    model,
    gpu,
    n_gpus,
    batch_per_gpu,
    context_tokens,
    bytes_per_weight=1.0,
    kv_bytes_per_element=2.0,
    compute_precision="fp8",
    prediction=False,
) -> EPStep:
    """One decode step of ``model`` with DP attention and EP over ``n_gpus`` GPUs, each serving ``batch_per_gpu`` requests.

    Per GPU: FLOPs ``b F_w`` of matrices at the ``compute_precision`` peak
    and ``b I_attn K`` of attention (absorbed for MLA) at the BF16 peak; reads ``W_rest + f W_routed / n +
    b K``, with ``f`` the share of experts the whole batch of ``n b`` tokens
    touches (:func:`aiinfra.serving.moe.expected_expert_fraction`) and
    ``W_rest`` the non-routed weights one token reads; network: per MoE
    layer, a dispatch (``b k d`` bytes at ``bytes_per_weight``, FP8) and a
    combine (BF16) all-to-all, over NVLink inside the GPU's scale-up domain
    and through its NIC beyond (400 Gbit/s per GPU assumed). ``prediction``
    uses the stored calibration (:func:`aiinfra.calibration.load`) and the
    regimes of :data:`aiinfra.cluster.network.ALL_TO_ALL_REGIMES`, with
    attention's arithmetic at ``eta_f_prefill`` (a large fused kernel, as
    FlashMLA is) and the matrices at ``eta_f_decode``; else the bound. Routing is assumed even (see :func:`ep_load_imbalance`).
    """
    from aiinfra import calibration

    m, g = models.load(model), hardware.gpu(gpu)
    n = check("n_gpus", n_gpus, "int>=1", scalar=True)
    b = check("batch_per_gpu", batch_per_gpu, "int>=1", scalar=True)
    ctx = check("context_tokens", context_tokens, "int>=1", scalar=True)
    check("prediction", prediction, "bool")
    p = calibration.load().parameters if prediction else None
    kv = memory.kv_bytes_per_token(m, kv_bytes_per_element) * ctx
    i_attn = roofline.model_decode_attention_intensity_flops_per_byte(m, 1, kv_bytes_per_element)
    matrix_flops, attention_flops = b * compute.flops_per_token(m), b * i_attn * kv
    routed, _ = _routed_and_rest_params(m)
    k, e = m.n_experts_per_token, m.n_routed_experts
    rest_read = float(models.decode_read_params(m)) - routed * k / e
    touched = float(moe.expected_expert_fraction(n * b, k, e))
    weights = bytes_per_weight * (rest_read + touched * routed / n)
    peak, peak_attn = g.dense_flops_per_s(compute_precision), g.dense_flops_per_s("bf16")
    dispatch = network.moe_all_to_all_bytes(b, m.hidden_size, k, bytes_per_weight)
    combine = network.moe_all_to_all_bytes(b, m.hidden_size, k, 2.0)
    inside = n <= g.scaleup_domain_chips
    link = g.scaleup_bytes_per_s_per_direction if inside else hardware.link("ndr").bytes_per_s_per_direction
    n_moe = len(m.moe_layers) if n > 1 else 0
    if p is None:
        comp = matrix_flops / peak + attention_flops / peak_attn
        mem = (weights + b * kv) / g.memory_bandwidth_bytes_per_s
        net, over = n_moe * (dispatch + combine) / link, 0.0
        total = max(comp, mem, net)
    else:
        comp = matrix_flops / (p.eta_f_decode * peak) + attention_flops / (p.eta_f_prefill * peak_attn)
        bw = g.memory_bandwidth_bytes_per_s
        mem = weights / (p.eta_b_decode * bw) + b * kv / (p.eta_b_kv * bw)
        regime = "nvlink" if inside else "rdma"
        net = n_moe * sum(network.all_to_all_time_s(s, link, regime) for s in (dispatch, combine))
        over = m.n_layers * p.layer_overhead_graph_s
        total = max(comp, mem) + net + over
    waits = max((("compute", comp), ("memory", mem), ("network", net)), key=lambda x: x[1])[0]
    return EPStep(float(comp), float(mem), float(net), float(over), float(total), waits)
