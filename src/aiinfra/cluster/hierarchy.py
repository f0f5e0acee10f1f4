"""The physical hierarchy of a GPU cluster: GPU, server, rack, pod, building (and, below the GPU, its die).

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

Below the GPU sits the wafer its die is cut from (chapter 2): how many dies of
area ``A`` fit on a round wafer (:func:`gross_dies_per_wafer`) and what share
of them a defect density ``D_0`` leaves working (:func:`poisson_die_yield`,
:func:`murphy_die_yield`, :func:`good_dies_per_wafer`). Areas are in square
metres (``units.mm2``, ``units.cm2``), defect densities per square metre.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

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
    "WAFER_DIAMETER_M",
    "gross_dies_per_wafer",
    "expected_defects_per_die",
    "poisson_die_yield",
    "murphy_die_yield",
    "good_dies_per_wafer",
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


@formula(
    bandwidth_bytes_per_s="beta >0",
    oversubscription="k_over >=1",
)
def oversubscribed_bandwidth_bytes_per_s(bandwidth_bytes_per_s, oversubscription=1.0):
    """Bandwidth per GPU left across an oversubscribed switch layer: ``beta / k``.

    A layer oversubscribed ``k``:1 has ``k`` times less capacity upward than
    the links below it can offer, so when every GPU sends across it at once
    each gets ``1/k`` of its own link. ``k = 1`` is full bisection. Chapter 6.
    """
    return bandwidth_bytes_per_s / oversubscription


@formula(
    server_power_w="P_server >0",
    gpus_per_server="n_server int>=1",
)
def watts_per_gpu_at_server(server_power_w, gpus_per_server):
    """IT power per GPU at the server boundary: ``P_server / n``.

    Includes each GPU's share of CPUs, memory, NICs, NVSwitches and fans, but
    not the facility's cooling and conversion losses (multiply by PUE for
    those). DGX H100: 10.2 kW / 8 = 1,275 W per GPU. Chapter 6.
    """
    return server_power_w / gpus_per_server


@formula(household_kwh_per_year="E_home >0")
def household_average_power_w(household_kwh_per_year=HOUSEHOLD_KWH_PER_YEAR):
    """Average power of a household using ``E`` kWh per year: ``1000 E / 8760`` W. Chapter 6."""
    return household_kwh_per_year * 1000.0 / HOURS_PER_YEAR


@formula(power_w="P_W >=0", household_kwh_per_year="E_home >0")
def households_equivalent(power_w, household_kwh_per_year=HOUSEHOLD_KWH_PER_YEAR):
    """How many average households draw ``power_w`` between them. Chapter 6."""
    return power_w / household_average_power_w(household_kwh_per_year)


# --------------------------------------------------------------------------------------
# Below the GPU: dies on a wafer (chapter 2)
# --------------------------------------------------------------------------------------

#: Diameter of the wafers leading-edge logic is made on, metres (300 mm).
WAFER_DIAMETER_M = 0.3


@formula(
    die_area_m2="A_die >0",
    wafer_diameter_m="d_w >0",
)
def gross_dies_per_wafer(die_area_m2, wafer_diameter_m=WAFER_DIAMETER_M):
    """Whole dies of area ``A`` on a round wafer of diameter ``d``: ``pi (d/2)^2 / A - pi d / sqrt(2 A)``.

    The first term is the wafer's area over the die's; the second removes the
    partial dies cut off along the edge (the textbook form, Hennessy and
    Patterson 2019, section 1.6; de Vries 2005 compares it with exact counts).
    No edge exclusion or scribe lines; a real mask layout fits a few fewer.
    GH100 (814 mm^2) on a 300 mm wafer: 63.5. A die too large for the formula
    gives 0. Chapter 2.
    """
    return np.maximum(
        0.0,
        np.pi * (wafer_diameter_m / 2) ** 2 / die_area_m2
        - np.pi * wafer_diameter_m / np.sqrt(2 * die_area_m2),
    )


@formula(
    die_area_m2="A_die >0",
    defects_per_m2="D_0 >=0",
)
def expected_defects_per_die(die_area_m2, defects_per_m2):
    """Defects a die of area ``A`` expects at density ``D_0``: ``A D_0``. GH100 at 0.1/cm^2: 0.814. Chapter 2."""
    return die_area_m2 * defects_per_m2


@formula(
    die_area_m2="A_die >0",
    defects_per_m2="D_0 >=0",
)
def poisson_die_yield(die_area_m2, defects_per_m2):
    """Share of dies with no killer defect when defects land independently: ``exp(-A D_0)``.

    ``A D_0`` is the expected number of defects per die. The Poisson model
    is the pessimistic limit of the clustered-defect models. GH100 (8.14 cm^2)
    at 0.1 defects/cm^2: 0.443. Chapter 2.
    """
    return np.exp(-expected_defects_per_die(die_area_m2, defects_per_m2))


@formula(
    "((1 - exp(-A_die*D_0))/(A_die*D_0))**2",
    sample={"die_area_m2": (1e-5, 1e-3), "defects_per_m2": (10.0, 5000.0)},
    die_area_m2="A_die >0",
    defects_per_m2="D_0 >0",
)
def murphy_die_yield(die_area_m2, defects_per_m2):
    """Murphy's yield (Proc. IEEE 1964): ``((1 - exp(-A D_0)) / (A D_0))^2``.

    Defect density varies across wafers, which leaves more dies working than
    Poisson predicts for the same mean ``D_0``. GH100 (8.14 cm^2) at 0.1
    defects/cm^2: 0.468. ``defects_per_m2`` must be positive (at zero the
    yield is 1). Chapter 2.
    """
    x = expected_defects_per_die(die_area_m2, defects_per_m2)
    return (-np.expm1(-x) / x) ** 2  # 1 - exp(-x), accurate for small x


@formula(
    die_area_m2="A_die >0",
    defects_per_m2="D_0 >0",
    wafer_diameter_m="d_w >0",
)
def good_dies_per_wafer(die_area_m2, defects_per_m2, wafer_diameter_m=WAFER_DIAMETER_M):
    """Working dies per wafer: :func:`gross_dies_per_wafer` x :func:`murphy_die_yield`. Chapter 2."""
    return gross_dies_per_wafer(die_area_m2, wafer_diameter_m) * murphy_die_yield(die_area_m2, defects_per_m2)


@dataclass(frozen=True)
class Level:
    """One level of the hierarchy: how many GPUs it holds and how fast each talks within it."""

    name: str
    gpus: int  # GPUs in one unit of this level
    fabric: str  # what joins the parts of this level
    bytes_per_s_per_gpu: float  # per direction, one GPU to the rest of its level, all sending at once
    source: str


def _llama3_levels() -> tuple[Level, ...]:
    h100 = hardware.gpu("H100 SXM")
    nic = units.bytes_per_s_from_gbit_per_s(400)
    return (
        Level(
            "GPU",
            1,
            "HBM3 (its own memory; reads and writes share it)",
            h100.memory_bandwidth_bytes_per_s,
            h100.sources.get("memory_bandwidth_bytes_per_s", "H100 SXM datasheet"),
        ),
        Level(
            "server",
            8,
            "NVLink 4 through NVSwitch",
            h100.scaleup_bytes_per_s_per_direction,
            _LLAMA3 + "; NVLink per H100 from the H100 whitepaper",
        ),
        Level("rack", 16, "400 Gbit/s RoCE to one top-of-rack switch", nic, _LLAMA3),
        Level(
            "pod",
            3072,
            "cluster switches, full bisection (192 racks)",
            oversubscribed_bandwidth_bytes_per_s(nic, 1),
            _LLAMA3,
        ),
        Level(
            "building",
            24576,
            "aggregation switches, 1:7 oversubscribed (8 pods)",
            oversubscribed_bandwidth_bytes_per_s(nic, LLAMA3_AGGREGATION_OVERSUBSCRIPTION),
            _LLAMA3,
        ),
    )


#: Meta's 24K-GPU RoCE cluster, the reference hierarchy of chapter 6.
LLAMA3_CLUSTER: tuple[Level, ...] = _llama3_levels()
