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
import sympy as sp

from . import _check
from .symbols import F_1, PUE, P_gpu, Pi, eta_F, n_gpu, twin

__all__ = [
    "peak_flops_per_s",
    "realized_flops_per_s",
    "mfu_log2_model",
    "mfu_comm_fraction_model",
    "comm_fraction_of_step",
    "cluster_power_w",
    "facility_power_w",
    "energy_per_token_j",
    "daily_compute_demand_flops",
    "devices_for_daily_demand",
    "POWER_CONVENTIONS",
    "SECONDS_PER_DAY",
]

POWER_CONVENTIONS = ("chip-only", "all-in")
SECONDS_PER_DAY = 86_400.0

m1 = sp.Symbol("m_1", positive=True)
d_drop = sp.Symbol("d", positive=True)
k_comm = sp.Symbol("k", positive=True)
P_tot = sp.Symbol("P_total", positive=True)
tok_rate = sp.Symbol("r_tok", positive=True)
Q = sp.Symbol("Q", positive=True)


def _out(x):
    arr = np.asarray(x, dtype=float)
    return float(arr) if arr.ndim == 0 else arr


@twin(n_gpu * Pi, n_gpus=n_gpu, flops_per_s_per_gpu=Pi)
def peak_flops_per_s(n_gpus, flops_per_s_per_gpu):
    """Peak compute of the cluster: ``G * Pi`` (use one precision, dense, for every GPU)."""
    g = np.asarray(_check.positive("n_gpus", n_gpus))
    pi = np.asarray(_check.positive("flops_per_s_per_gpu", flops_per_s_per_gpu))
    return _out(g * pi)


@twin(n_gpu * Pi * eta_F, domains={"mfu": (0.01, 1.0, "float")}, n_gpus=n_gpu, flops_per_s_per_gpu=Pi, mfu=eta_F)
def realized_flops_per_s(n_gpus, flops_per_s_per_gpu, mfu):
    """Useful compute the job gets: ``G * Pi * MFU`` (``mfu`` in (0, 1])."""
    u = np.asarray(_check.fraction("mfu", mfu))
    return _out(np.asarray(peak_flops_per_s(n_gpus, flops_per_s_per_gpu)) * u)


@twin(m1 - d_drop * sp.log(n_gpu, 2),
      domains={"n_gpus": (1, 32768, "float"), "mfu_at_one": (0.4, 1.0, "float"), "drop_per_doubling": (0.0, 0.02, "float")},
      n_gpus=n_gpu, mfu_at_one=m1, drop_per_doubling=d_drop)
def mfu_log2_model(n_gpus, mfu_at_one=0.62, drop_per_doubling=0.02):
    """The log2 MFU model ``MFU(G) = m_1 - d log2 G`` (The Catch's cluster chapter: 0.62, 0.02).

    Gives 62% at 1 GPU and 32% at 32,768 GPUs. Raises ``ValueError`` where
    the line would leave (0, 1], i.e. beyond ``G = 2^(m_1/d)`` (2^31 GPUs for
    the defaults).
    """
    g = np.asarray(_check.at_least("n_gpus", n_gpus, 1.0))
    m = np.asarray(_check.fraction("mfu_at_one", mfu_at_one))
    d = np.asarray(_check.non_negative("drop_per_doubling", drop_per_doubling))
    u = m - d * np.log2(g)
    if np.any(u <= 0):
        raise ValueError(f"n_gpus is beyond the log2 model's range (MFU would be <= 0); got n_gpus={n_gpus!r}")
    return _out(u)


@twin(k_comm * sp.log(n_gpu, 2) / (1 + k_comm * sp.log(n_gpu, 2)),
      domains={"n_gpus": (1, 1e6, "float"), "comm_per_doubling": (0.0, 1.0, "float")},
      n_gpus=n_gpu, comm_per_doubling=k_comm)
def comm_fraction_of_step(n_gpus, comm_per_doubling=0.0625):
    """Share of a step spent in exposed communication: ``k log2 G / (1 + k log2 G)``.

    ``comm_per_doubling`` ``k`` is the communication time, as a fraction of
    the (perfectly parallel) compute time, added by each doubling of the
    cluster. The default 0.0625 makes 32,768 GPUs spend 48% of a step on
    communication, which with 62% single-GPU MFU gives the same 32% as the
    log2 model.
    """
    g = np.asarray(_check.at_least("n_gpus", n_gpus, 1.0))
    k = np.asarray(_check.non_negative("comm_per_doubling", comm_per_doubling))
    x = k * np.log2(g)
    return _out(x / (1.0 + x))


@twin(m1 / (1 + k_comm * sp.log(n_gpu, 2)),
      domains={"n_gpus": (1, 1e6, "float"), "mfu_at_one": (0.05, 1.0, "float"), "comm_per_doubling": (0.0, 1.0, "float")},
      n_gpus=n_gpu, mfu_at_one=m1, comm_per_doubling=k_comm)
def mfu_comm_fraction_model(n_gpus, mfu_at_one=0.62, comm_per_doubling=0.0625):
    """Amdahl-style MFU model: ``MFU(G) = m_1 (1 - c(G)) = m_1 / (1 + k log2 G)``.

    ``c(G)`` is :func:`comm_fraction_of_step`. Compute per GPU stays at
    ``m_1`` of peak while it runs; communication that grows by ``k`` (relative
    to compute) per doubling and is not overlapped dilutes it. With the
    defaults MFU is 62% at 1 GPU and 32% at 32,768 GPUs.
    """
    m = np.asarray(_check.fraction("mfu_at_one", mfu_at_one))
    return _out(m * (1.0 - np.asarray(comm_fraction_of_step(n_gpus, comm_per_doubling))))


@twin(n_gpu * P_gpu * PUE, domains={"pue": (1.0, 3.0, "float")}, n_gpus=n_gpu, watts_per_gpu=P_gpu, pue=PUE)
def facility_power_w(n_gpus, watts_per_gpu, pue):
    """The bare formula ``G * P_GPU * PUE`` (``pue`` >= 1), for chip-only watts.

    Prefer :func:`cluster_power_w`, which makes the convention of
    ``watts_per_gpu`` explicit and refuses to apply PUE to all-in watts.
    """
    g = np.asarray(_check.non_negative("n_gpus", n_gpus))
    w = np.asarray(_check.positive("watts_per_gpu", watts_per_gpu))
    p = np.asarray(_check.at_least("pue", pue, 1.0))
    return _out(g * w * p)


def cluster_power_w(n_gpus, watts_per_gpu, pue, convention="chip-only"):
    """Facility power of ``n_gpus``: ``G * P_GPU * PUE``, with the convention of ``P_GPU`` explicit.

    ``convention="chip-only"``: ``watts_per_gpu`` is the accelerator's own
    draw and ``pue`` (>= 1) adds cooling and power conversion.
    ``convention="all-in"``: ``watts_per_gpu`` already includes the GPU's
    share of host, network and cooling, so ``pue`` must be 1; anything else
    raises ``ValueError`` (it would count the overhead twice).
    Example: 32,768 GPUs at 1.4 kW all-in draw 45.9 MW. The formula's twin
    is :func:`facility_power_w`.
    """
    _check.choice("convention", convention, set(POWER_CONVENTIONS))
    p = np.asarray(_check.at_least("pue", pue, 1.0))
    if convention == "all-in" and np.any(p != 1.0):
        raise ValueError(
            f"pue must be 1 when convention='all-in': all-in watts_per_gpu already include "
            f"facility overhead, so multiplying by PUE counts it twice; got pue={pue!r}"
        )
    return facility_power_w(n_gpus, watts_per_gpu, pue)


# The formula, for derivations in a chapter; not registered as a twin because
# ``convention`` is a label, not a number (the registered twin is facility_power_w's).
cluster_power_w.sym = facility_power_w.sym
cluster_power_w.sym_args = dict(facility_power_w.sym_args)
cluster_power_w.sym_domains = dict(facility_power_w.sym_domains)


@twin(P_tot / tok_rate, power_w=P_tot, tokens_per_s=tok_rate)
def energy_per_token_j(power_w, tokens_per_s):
    """Energy per generated token: ``P / (tokens/s)`` joules.

    Use the power and the token rate of the same boundary (one GPU, one
    node, or a facility with its PUE) and say which.
    """
    p = np.asarray(_check.non_negative("power_w", power_w))
    r = np.asarray(_check.positive("tokens_per_s", tokens_per_s))
    return _out(p / r)


@twin(Q * F_1, requests_per_day=Q, flops_per_request=F_1)
def daily_compute_demand_flops(requests_per_day, flops_per_request):
    """Total work a service must do each day: ``Q * F_1`` FLOPs.

    The sizing argument behind Google's first TPU (Jouppi et al. 2017, section
    2): once ``Q F_1`` approaches the spare capacity of the existing fleet, a
    dedicated processor that lowers the cost of each ``F_1`` pays for itself.
    """
    q = np.asarray(_check.non_negative("requests_per_day", requests_per_day))
    f1 = np.asarray(_check.non_negative("flops_per_request", flops_per_request))
    return _out(q * f1)


@twin(Q * F_1 / (86400 * eta_F * Pi), domains={"utilization": (0.01, 1.0, "float")},
      requests_per_day=Q, flops_per_request=F_1, flops_per_s_per_device=Pi, utilization=eta_F)
def devices_for_daily_demand(requests_per_day, flops_per_request, flops_per_s_per_device, utilization=1.0):
    """Devices needed to serve ``Q F_1`` FLOPs per day: ``Q F_1 / (86400 * eta * Pi)``.

    A fractional count (round up yourself when buying), assuming the load is
    spread evenly over the day; ``utilization`` is the achieved fraction of
    each device's peak ``flops_per_s_per_device``.
    """
    demand = np.asarray(daily_compute_demand_flops(requests_per_day, flops_per_request))
    pi = np.asarray(_check.positive("flops_per_s_per_device", flops_per_s_per_device))
    u = np.asarray(_check.fraction("utilization", utilization))
    return _out(demand / (SECONDS_PER_DAY * u * pi))
