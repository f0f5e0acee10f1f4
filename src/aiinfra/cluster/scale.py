"""Clusters: peak and realized compute, how utilisation falls with scale, power and energy.

Peak compute is a count times a per-GPU rate; realized compute multiplies by
the model FLOPs utilisation (MFU) the job reaches at that scale. Two named
MFU models are offered, both calibrated so that 1 GPU reaches 62% and 32,768
GPUs reach 32% (the illustrative magnitudes of The Catch's cluster chapter):

* :func:`mfu_log2_model`: ``MFU(G) = m_1 - d log2 G``, a straight line in the
  number of doublings. Simple, but it reaches zero at ``G = 2^(m_1/d)``.
* :func:`mfu_comm_fraction_model`: an Amdahl-style model. Each step spends a
  compute time that parallelises perfectly and a communication time that
  does not; their ratio grows by ``k`` per doubling, ``k log2 G``. The
  communication fraction of a step is ``k log2 G / (1 + k log2 G)`` and
  ``MFU(G) = m_1 / (1 + k log2 G)``. It never reaches zero; it bends.

Neither is a measurement: they are named, documented shapes for figures.
Measured points (Narayanan et al. 2021; Llama 3, 2024) belong next to them,
labelled as such.

Power: ``P = G * P_GPU * PUE``. State the convention of ``P_GPU``:
"chip-only" (the accelerator's own draw, e.g. its TDP), which the facility
overhead PUE then multiplies, or "all-in" (chip plus its share of host,
network and cooling), which already contains the overhead, so PUE must be 1.
Multiplying an all-in figure by PUE counts cooling twice.

Serves: Chapters 1 (the TPU sizing argument) and 6 (the data-center cluster).
"""

from __future__ import annotations

import numpy as np

from aiinfra.formula import choice, formula

__all__ = [
    "peak_flops_per_s",
    "realized_flops_per_s",
    "mfu_log2_model",
    "mfu_log2_zero_gpus",
    "mfu_comm_fraction_model",
    "comm_fraction_of_step",
    "cluster_power_w",
    "energy_per_token_j",
    "daily_compute_demand_flops",
    "devices_for_daily_demand",
    "POWER_CONVENTIONS",
    "SECONDS_PER_DAY",
    "MFU_AT_ONE_GPU",
    "MFU_DROP_PER_DOUBLING",
    "COMM_PER_DOUBLING",
]

POWER_CONVENTIONS = ("chip-only", "all-in")
SECONDS_PER_DAY = 86_400.0

#: The calibration of both MFU models (The Catch's cluster chapter): 62 % on one GPU, 2 points
#: lost per doubling in the log2 model, and communication growing by 0.0625 of the compute time
#: per doubling in the Amdahl-style model; both give 32 % at 32,768 GPUs.
MFU_AT_ONE_GPU = 0.62
MFU_DROP_PER_DOUBLING = 0.02
COMM_PER_DOUBLING = 0.0625


@formula(n_gpus="n_G >0", flops_per_s_per_gpu="Pi >0")
def peak_flops_per_s(n_gpus, flops_per_s_per_gpu):
    """Peak compute of the cluster: ``G * Pi`` (use one precision, dense, for every GPU)."""
    return n_gpus * flops_per_s_per_gpu


@formula(
    n_gpus="n_G >0",
    flops_per_s_per_gpu="Pi >0",
    mfu="eta_F (0,1]",
)
def realized_flops_per_s(n_gpus, flops_per_s_per_gpu, mfu):
    """Useful compute the job gets: ``G * Pi * MFU`` (``mfu`` in (0, 1])."""
    return peak_flops_per_s(n_gpus, flops_per_s_per_gpu) * mfu


@formula(
    "m_1 - d*log(n_G, 2)",
    sample={"n_gpus": (1, 32768), "mfu_at_one": (0.4, 1.0), "drop_per_doubling": (0.0, 0.02)},
    n_gpus="n_G >=1",
    mfu_at_one="m_1 (0,1]",
    drop_per_doubling="d >=0",
)
def mfu_log2_model(n_gpus, mfu_at_one=MFU_AT_ONE_GPU, drop_per_doubling=MFU_DROP_PER_DOUBLING):
    """The log2 MFU model ``MFU(G) = m_1 - d log2 G`` (The Catch's cluster chapter: 0.62, 0.02).

    Gives 62% at 1 GPU and 32% at 32,768 GPUs. Raises ``ValueError`` where
    the line would leave (0, 1], i.e. beyond ``G = 2^(m_1/d)`` (2^31 GPUs for
    the defaults).
    """
    u = mfu_at_one - drop_per_doubling * np.log2(n_gpus)
    if np.any(u <= 0):
        raise ValueError(
            f"n_gpus is beyond the log2 model's range (MFU would be <= 0); got n_gpus={n_gpus!r}"
        )
    return u


@formula(
    mfu_at_one="m_1 (0,1]",
    drop_per_doubling="d >0",
)
def mfu_log2_zero_gpus(mfu_at_one=MFU_AT_ONE_GPU, drop_per_doubling=MFU_DROP_PER_DOUBLING):
    """Where the log2 model's line reaches zero: ``G = 2^(m_1/d)`` GPUs (2^31 for 62 % and 2 points).

    :func:`mfu_log2_model` is a straight line in the number of doublings, so
    it must hit zero somewhere; beyond this size it raises. Chapter 6.
    """
    return 2.0 ** (mfu_at_one / drop_per_doubling)


@formula(
    n_gpus="n_G >=1",
    comm_per_doubling="k >=0",
)
def comm_fraction_of_step(n_gpus, comm_per_doubling=COMM_PER_DOUBLING):
    """Share of a step spent in exposed communication: ``k log2 G / (1 + k log2 G)``.

    ``comm_per_doubling`` ``k`` is the communication time, as a fraction of
    the (perfectly parallel) compute time, added by each doubling of the
    cluster. The default 0.0625 makes 32,768 GPUs spend 48% of a step on
    communication, which with 62% single-GPU MFU gives the same 32% as the
    log2 model.
    """
    x = comm_per_doubling * np.log2(n_gpus)
    return x / (1.0 + x)


@formula(
    "m_1/(1 + k*log(n_G, 2))",
    sample={"n_gpus": (1, 1e6), "mfu_at_one": (0.05, 1.0), "comm_per_doubling": (0.0, 1.0)},
    n_gpus="n_G >=1",
    mfu_at_one="m_1 (0,1]",
    comm_per_doubling="k >=0",
)
def mfu_comm_fraction_model(n_gpus, mfu_at_one=MFU_AT_ONE_GPU, comm_per_doubling=COMM_PER_DOUBLING):
    """Amdahl-style MFU model: ``MFU(G) = m_1 (1 - c(G)) = m_1 / (1 + k log2 G)``.

    ``c(G)`` is :func:`comm_fraction_of_step`. Compute per GPU stays at
    ``m_1`` of peak while it runs; communication that grows by ``k`` (relative
    to compute) per doubling and is not overlapped dilutes it. With the
    defaults MFU is 62% at 1 GPU and 32% at 32,768 GPUs.
    """
    return mfu_at_one * (1.0 - comm_fraction_of_step(n_gpus, comm_per_doubling))


@formula(
    n_gpus="n_G >=0",
    watts_per_gpu="P_GPU >0",
    pue="PUE >=1",
    convention="label",
)
def cluster_power_w(n_gpus, watts_per_gpu, pue, convention="chip-only"):
    """Facility power of ``n_gpus``: ``G * P_GPU * PUE``, with the convention of ``P_GPU`` explicit.

    ``convention="chip-only"``: ``watts_per_gpu`` is the accelerator's own
    draw and ``pue`` (>= 1) adds cooling and power conversion.
    ``convention="all-in"``: ``watts_per_gpu`` already includes the GPU's
    share of host, network and cooling, so ``pue`` must be 1; anything else
    raises ``ValueError`` (it would count the overhead twice).
    Example: 32,768 GPUs at 1.4 kW all-in draw 45.9 MW.
    """
    choice("convention", convention, set(POWER_CONVENTIONS))
    if convention == "all-in" and np.any(pue != 1.0):
        raise ValueError(
            f"pue must be 1 when convention='all-in': all-in watts_per_gpu already include "
            f"facility overhead, so multiplying by PUE counts it twice; got pue={pue!r}"
        )
    return n_gpus * watts_per_gpu * pue


@formula(power_w="P_total >=0", tokens_per_s="r_tok >0")
def energy_per_token_j(power_w, tokens_per_s):
    """Energy per generated token: ``P / (tokens/s)`` joules.

    Use the power and the token rate of the same boundary (one GPU, one
    node, or a facility with its PUE) and say which.
    """
    return power_w / tokens_per_s


@formula("Q*F_1", requests_per_day="Q >=0", flops_per_request="F_1 >=0")
def daily_compute_demand_flops(requests_per_day, flops_per_request):
    """Total work a service must do each day: ``Q * F_1`` FLOPs.

    The sizing argument behind Google's first TPU (Jouppi et al. 2017, section
    2): once ``Q F_1`` approaches the spare capacity of the existing fleet, a
    dedicated processor that lowers the cost of each ``F_1`` pays for itself.
    """
    return requests_per_day * flops_per_request


@formula(
    "Q*F_1/(86400*eta_F*Pi)",
    sample={"utilization": (0.01, 1.0)},
    requests_per_day="Q >=0",
    flops_per_request="F_1 >=0",
    flops_per_s_per_device="Pi >0",
    utilization="eta_F (0,1]",
)
def devices_for_daily_demand(requests_per_day, flops_per_request, flops_per_s_per_device, utilization=1.0):
    """Devices needed to serve ``Q F_1`` FLOPs per day: ``Q F_1 / (86400 * eta * Pi)``.

    A fractional count (round up yourself when buying), assuming the load is
    spread evenly over the day; ``utilization`` is the achieved fraction of
    each device's peak ``flops_per_s_per_device``.
    """
    demand = daily_compute_demand_flops(requests_per_day, flops_per_request)
    return demand / (SECONDS_PER_DAY * utilization * flops_per_s_per_device)
