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

from aiinfra.formula import check

from dataclasses import dataclass


from aiinfra import units
from aiinfra.catalog import hardware
from aiinfra.formula import formula

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
]

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


@formula("beta/k_over", sample={"oversubscription": (1.0, 16.0)},
         bandwidth_bytes_per_s="beta >0", oversubscription="k_over >=1")
def oversubscribed_bandwidth_bytes_per_s(bandwidth_bytes_per_s, oversubscription=1.0):
    """Bandwidth per GPU left across an oversubscribed switch layer: ``beta / k``.

    A layer oversubscribed ``k``:1 has ``k`` times less capacity upward than
    the links below it can offer, so when every GPU sends across it at once
    each gets ``1/k`` of its own link. ``k = 1`` is full bisection. Chapter 6.
    """
    return bandwidth_bytes_per_s / oversubscription


@formula("P_server/n_server", sample={"gpus_per_server": (1, 16)},
         server_power_w="P_server >0", gpus_per_server="n_server int>=1")
def watts_per_gpu_at_server(server_power_w, gpus_per_server):
    """IT power per GPU at the server boundary: ``P_server / n``.

    Includes each GPU's share of CPUs, memory, NICs, NVSwitches and fans, but
    not the facility's cooling and conversion losses (multiply by PUE for
    those). DGX H100: 10.2 kW / 8 = 1,275 W per GPU. Chapter 6.
    """
    return server_power_w / gpus_per_server


@formula("E_home*1000/8760", household_kwh_per_year="E_home >0")
def household_average_power_w(household_kwh_per_year=HOUSEHOLD_KWH_PER_YEAR):
    """Average power of a household using ``E`` kWh per year: ``1000 E / 8760`` W. Chapter 6."""
    return household_kwh_per_year * 1000.0 / HOURS_PER_YEAR


@formula("P_W*8760/(1000*E_home)", power_w="P_W >=0", household_kwh_per_year="E_home >0")
def households_equivalent(power_w, household_kwh_per_year=HOUSEHOLD_KWH_PER_YEAR):
    """How many average households draw ``power_w`` between them. Chapter 6."""
    return power_w / household_average_power_w(household_kwh_per_year)


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
    nic = units.bytes_per_s_from_gbit_per_s(400)
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
