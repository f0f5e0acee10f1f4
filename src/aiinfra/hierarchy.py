"""The physical hierarchy of a GPU cluster: GPU, server, rack, pod, building.

Chapter 6. Each level packs more GPUs together and joins them with a
slower fabric, so the bandwidth one GPU has to the rest of its level falls as
the level grows. The reference cluster is the one Meta describes for Llama 3
(Llama Team 2024, section 3.3.1): 8 H100s per server joined by NVLink; two
servers (16 GPUs) per rack under one top-of-rack switch; 192 racks per pod
(3,072 GPUs) with full bisection bandwidth; eight pods (24,576 GPUs) in one
building, joined by aggregation switches oversubscribed 1:7; 400 Gbit/s of
network per GPU.

Power comes in three boundaries, and mixing them is the classic mistake
(see :func:`aiinfra.cluster.cluster_power_w`):

* **chip**: the GPU's own board power (H100 SXM: 700 W TDP);
* **server (IT)**: the chip plus its share of CPUs, NICs, switches, fans
  (:func:`watts_per_gpu_at_server`; DGX H100: 10.2 kW / 8 GPUs);
* **facility**: IT power times PUE (cooling, power conversion).

All bandwidths are bytes per second per direction; powers in watts.
"""
from __future__ import annotations

from dataclasses import dataclass

import numpy as np
import sympy as sp

from . import _check, hardware, network, units
from .symbols import beta, twin

__all__ = [
    "Level",
    "LLAMA3_CLUSTER",
    "HOUSEHOLD_KWH_PER_YEAR",
    "HOURS_PER_YEAR",
    "LLAMA3_AGGREGATION_OVERSUBSCRIPTION",
    "DENSE_RACK_POWER_RANGE_W",
    "oversubscribed_bandwidth_bytes_per_s",
    "watts_per_gpu_at_server",
    "household_average_power_w",
    "households_equivalent",
    "hierarchy_table_markdown",
]

k_over = sp.Symbol("k_over", positive=True)     # oversubscription ratio (k:1)
P_srv = sp.Symbol("P_server", positive=True)    # server power
n_srv = sp.Symbol("n_server", positive=True)    # GPUs per server
E_home = sp.Symbol("E_home", positive=True)     # household energy per year, kWh
P_any = sp.Symbol("P_W", positive=True)         # a power in watts

#: Average annual electricity use of a U.S. residential utility customer,
#: kWh (EIA, "How much electricity does an American home use?", 2020 data).
HOUSEHOLD_KWH_PER_YEAR = 10_715.0
HOURS_PER_YEAR = 8_760.0

_LLAMA3 = "Llama 3 Herd of Models (2024), section 3.3.1"

#: Oversubscription of the aggregation layer of Meta's Llama 3 cluster (k:1).
LLAMA3_AGGREGATION_OVERSUBSCRIPTION = 7.0

#: Power per rack quoted for current dense AI racks, watts (low, high), as
#: given in the serving blog among the source texts; the reason such racks
#: are liquid-cooled.
DENSE_RACK_POWER_RANGE_W = (40e3, 100e3)


def _out(x):
    arr = np.asarray(x, dtype=float)
    return float(arr) if arr.ndim == 0 else arr


@twin(beta / k_over, domains={"oversubscription": (1.0, 16.0, "float")},
      bandwidth_bytes_per_s=beta, oversubscription=k_over)
def oversubscribed_bandwidth_bytes_per_s(bandwidth_bytes_per_s, oversubscription=1.0):
    """Bandwidth per GPU left across an oversubscribed switch layer: ``beta / k``.

    A layer oversubscribed ``k``:1 has ``k`` times less capacity upward than
    the links below it can offer, so when every GPU sends across it at once
    each gets ``1/k`` of its own link. ``k = 1`` is full bisection. Chapter 6.
    """
    b = _check.positive("bandwidth_bytes_per_s", bandwidth_bytes_per_s)
    k = _check.at_least("oversubscription", oversubscription, 1.0)
    return _out(np.asarray(b) / np.asarray(k))


@twin(P_srv / n_srv, domains={"gpus_per_server": (1, 16, "int")},
      server_power_w=P_srv, gpus_per_server=n_srv)
def watts_per_gpu_at_server(server_power_w, gpus_per_server):
    """IT power per GPU at the server boundary: ``P_server / n``.

    Includes each GPU's share of CPUs, memory, NICs, NVSwitches and fans, but
    not the facility's cooling and conversion losses (multiply by PUE for
    those). DGX H100: 10.2 kW / 8 = 1,275 W per GPU. Chapter 6.
    """
    p = _check.positive("server_power_w", server_power_w)
    n = _check.integers("gpus_per_server", gpus_per_server, minimum=1)
    return _out(np.asarray(p) / np.asarray(n, dtype=float))


@twin(E_home * 1000 / 8760, household_kwh_per_year=E_home)
def household_average_power_w(household_kwh_per_year=HOUSEHOLD_KWH_PER_YEAR):
    """Average power of a household using ``E`` kWh per year: ``1000 E / 8760`` W. Chapter 6."""
    e = _check.positive("household_kwh_per_year", household_kwh_per_year)
    return _out(np.asarray(e) * 1000.0 / HOURS_PER_YEAR)


@twin(P_any * 8760 / (1000 * E_home), power_w=P_any, household_kwh_per_year=E_home)
def households_equivalent(power_w, household_kwh_per_year=HOUSEHOLD_KWH_PER_YEAR):
    """How many average households draw ``power_w`` between them. Chapter 6."""
    p = _check.non_negative("power_w", power_w)
    return _out(np.asarray(p) / np.asarray(household_average_power_w(household_kwh_per_year)))


@dataclass(frozen=True)
class Level:
    """One level of the hierarchy: how many GPUs it holds and how fast each talks within it."""

    name: str
    gpus: int                       # GPUs in one unit of this level
    fabric: str                     # what joins the parts of this level
    bytes_per_s_per_gpu: float      # per direction, one GPU to the rest of its level, all sending at once
    source: str


def _llama3_levels() -> tuple[Level, ...]:
    h100 = hardware.gpu("H100 SXM")
    nic = network.bytes_per_s_from_bits_per_s(400e9)
    return (
        Level("GPU", 1, "HBM3 (its own memory; reads and writes share it)", h100.memory_bandwidth_bytes_per_s, h100.sources.get(
            "memory_bandwidth_bytes_per_s", "H100 SXM datasheet")),
        Level("server", 8, "NVLink 4 through NVSwitch", h100.scaleup_bytes_per_s_per_direction,
              _LLAMA3 + "; NVLink per H100 from the H100 whitepaper"),
        Level("rack", 16, "400 Gbit/s RoCE to one top-of-rack switch", nic, _LLAMA3),
        Level("pod", 3072, "cluster switches, full bisection (192 racks)", oversubscribed_bandwidth_bytes_per_s(nic, 1),
              _LLAMA3),
        Level("building", 24576, "aggregation switches, 1:7 oversubscribed (8 pods)",
              oversubscribed_bandwidth_bytes_per_s(nic, LLAMA3_AGGREGATION_OVERSUBSCRIPTION), _LLAMA3),
    )


#: Meta's 24K-GPU RoCE cluster, the reference hierarchy of chapter 6.
LLAMA3_CLUSTER: tuple[Level, ...] = _llama3_levels()


def hierarchy_table_markdown(levels=LLAMA3_CLUSTER, watts_per_gpu=None, pue=1.0):
    """A Markdown table of the levels: GPUs, fabric, bandwidth per GPU and (optionally) power.

    ``watts_per_gpu`` (IT power at the server boundary) and ``pue`` add a
    facility-power column, ``G * P * PUE`` via :func:`aiinfra.cluster.cluster_power_w`.
    """
    from . import cluster

    rows = ["| level | GPUs | joined by | bandwidth per GPU, one direction |"
            + (" facility power |" if watts_per_gpu is not None else ""),
            "|---|---:|---|---:|" + ("---:|" if watts_per_gpu is not None else "")]
    for lv in levels:
        row = f"| {lv.name} | {lv.gpus:,} | {lv.fabric} | {units.fmt_rate_bytes(lv.bytes_per_s_per_gpu)} |"
        if watts_per_gpu is not None:
            power = cluster.cluster_power_w(lv.gpus, watts_per_gpu, pue)
            row += f" {_fmt_power(power)} |"
        rows.append(row)
    return "\n".join(rows)


def _fmt_power(watts: float) -> str:
    if watts >= 1e6:
        return f"{watts / 1e6:.1f} MW"
    if watts >= 1e3:
        return f"{watts / 1e3:.1f} kW"
    return f"{watts:.0f} W"
