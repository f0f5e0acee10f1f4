"""Links and collectives: reading a spec sheet, transfer time, paths, ring all-reduce, packet rates.

Conventions, stated once:

* Bandwidth is bytes per second **per direction** unless a name says
  otherwise. Vendors often add both directions (NVLink 4: 900 GB/s per GPU
  = 450 GB/s each way; PCIe Gen5 x16: 128 GB/s = 64 GB/s each way);
  :func:`per_direction_bytes_per_s` reads a printed figure into bytes per
  second per direction, and :func:`misread_factor` says how far off a reader
  is who skips that step.
* Network rates come in bits per second; :func:`aiinfra.units.bytes_from_bits`
  divides by 8 (400 Gbit/s = 50 GB/s).
* A transfer costs a fixed latency plus size over bandwidth (the
  alpha-beta or Hockney model); through a path of links, pipelined, the
  slowest link sets the rate (:func:`path_transfer_time_s`).
* Ring all-reduce (Patarasuk and Yuan 2009; the NCCL ring) sends
  ``2 (N - 1) / N`` of the message over each rank's link, in ``2 (N - 1)``
  latency-bearing steps. NCCL's "bus bandwidth" rescales the measured
  algorithm bandwidth ``S / t`` by that factor so that it can be compared
  with the link's peak (NCCL tests, PERFORMANCE.md).

Serves: Chapters 1 (links, SmartNIC), 2 (inside one server) and 6 (collectives in a cluster).
"""

from __future__ import annotations

import numpy as np

from aiinfra import units
from aiinfra.catalog import hardware
from aiinfra.formula import check, choice, formula

__all__ = [
    "per_direction_bytes_per_s",
    "misread_factor",
    "transfer_time_s",
    "latency_share_of_transfer",
    "bottleneck",
    "path_transfer_time_s",
    "bidirectional_from_per_direction",
    "domain_bandwidth_bytes_per_s",
    "ring_allreduce_time_s",
    "algorithm_bandwidth_bytes_per_s",
    "bus_bandwidth_bytes_per_s",
    "bus_bandwidth_factor",
    "packets_per_s",
    "cores_needed",
    "MIN_ETHERNET_FRAME_BYTES_ON_WIRE",
]

#: A minimum Ethernet frame (64 B) plus preamble and start delimiter (8 B) and
#: the inter-frame gap (12 B): the 84 bytes of line time each packet occupies.
MIN_ETHERNET_FRAME_BYTES_ON_WIRE = 84

#: Printed units of a link figure, in bytes per second (bits divided by 8, decimal prefixes).
_SPEC_UNITS = {
    "Gbit/s": units.bytes_from_bits(units.Gbit),
    "GB/s": units.GB,
    "Tbit/s": units.bytes_from_bits(1e3 * units.Gbit),
    "TB/s": units.TB,
}

_COLLECTIVE_FACTORS = {
    # NCCL tests' busbw factors, as functions of the rank count n
    "all_reduce": lambda n: 2.0 * (n - 1) / n,
    "all_gather": lambda n: (n - 1) / n,
    "reduce_scatter": lambda n: (n - 1) / n,
    "all_to_all": lambda n: (n - 1) / n,
    "broadcast": lambda n: 1.0 + 0.0 * n,
    "reduce": lambda n: 1.0 + 0.0 * n,
}


# --------------------------------------------------------------------------------------
# Reading a spec sheet
# --------------------------------------------------------------------------------------


@formula(None, value=">0", unit="label", both_directions="bool")
def per_direction_bytes_per_s(value, unit: str, both_directions: bool):
    """Bytes per second in one direction from a printed link figure.

    ``value`` in ``unit`` (``"Gbit/s"``, ``"GB/s"``, ``"Tbit/s"`` or
    ``"TB/s"``, decimal prefixes); ``both_directions`` says whether the sheet
    added the two directions of a full-duplex link (then the result is half).
    NVLink 4's "900 GB/s" with ``both_directions=True`` gives 4.5e11 B/s; a
    ConnectX-7's "400 Gbit/s" (per direction) gives 5e10 B/s. Accepts arrays.
    """
    choice("unit", unit, set(_SPEC_UNITS))
    return value * _SPEC_UNITS[unit] / (2.0 if both_directions else 1.0)


def misread_factor(printed_in_bits: bool, printed_both_directions: bool) -> int:
    """How many times too large a printed figure becomes when it is taken as bytes/s per direction.

    A sum of both directions taken as one direction is 2x too large; a line
    rate in Gbit/s taken as GB/s is 8x too large; a both-directions figure in
    bits taken as per-direction bytes is 16x too large. Returns
    ``8 ** printed_in_bits * 2 ** printed_both_directions``.
    """
    bits = check("printed_in_bits", printed_in_bits, "bool")
    both = check("printed_both_directions", printed_both_directions, "bool")
    return (units.BITS_PER_BYTE if bits else 1) * (2 if both else 1)


@formula("2*beta", per_direction_bytes_per_s="beta >0")
def bidirectional_from_per_direction(per_direction_bytes_per_s):
    """Both-directions total from a per-direction figure: ``2 beta`` (what a vendor prints)."""
    return per_direction_bytes_per_s * 2.0


# --------------------------------------------------------------------------------------
# Transfers and paths
# --------------------------------------------------------------------------------------


@formula(
    "t_0 + S/beta",
    sample={"latency_s": (0.0, 10.0)},
    size_bytes="S >=0",
    bandwidth_bytes_per_s="beta >0",
    latency_s="t_0 >=0",
)
def transfer_time_s(size_bytes, bandwidth_bytes_per_s, latency_s=0.0):
    """Time to send ``size_bytes`` over one link: ``t_0 + S / beta``.

    ``bandwidth_bytes_per_s`` is the per-direction rate in *bytes*/s;
    ``latency_s`` the fixed start-up or round-trip cost. Small messages are
    latency-bound, large ones bandwidth-bound (1 GB at 50 GB/s is 20 ms).
    """
    return latency_s + size_bytes / bandwidth_bytes_per_s


@formula(
    "t_0/(t_0 + S/beta)",
    sample={"latency_s": (1e-6, 10.0)},
    size_bytes="S >=0",
    bandwidth_bytes_per_s="beta >0",
    latency_s="t_0 >0",
)
def latency_share_of_transfer(size_bytes, bandwidth_bytes_per_s, latency_s):
    """Share of a transfer's time that is the fixed cost: ``t_0 / (t_0 + S / beta)``.

    Near 1 the transfer is latency-bound (a faster link barely helps), near 0
    bandwidth-bound. 4 KiB over 50 GB/s with 10 us of fixed cost: 0.99;
    1 GB: 0.0005. Chapter 1.
    """
    return latency_s / transfer_time_s(size_bytes, bandwidth_bytes_per_s, latency_s)


def bottleneck(path):
    """The slowest link of ``path`` (a sequence of link names or Link objects), per direction.

    Returns the :class:`~aiinfra.catalog.hardware.Link`; ties go to the first one.
    """
    if isinstance(path, str) or not path:
        raise ValueError(f"path must be a non-empty sequence of links or link names, got {path!r}")
    resolved = [x if isinstance(x, hardware.Link) else hardware.link(x) for x in path]
    return min(resolved, key=lambda x: x.bytes_per_s_per_direction)


def path_transfer_time_s(size_bytes, path, latency_s_per_hop=0.0):
    """Time to stream ``size_bytes`` through every link of ``path``, pipelined.

    ``hops * t_0 + S / min(beta_i)``: in a pipelined transfer (chunks
    forwarded as they arrive) the slowest link sets the rate and every hop
    adds its fixed latency once. Accepts an array of sizes.
    """
    link = bottleneck(path)
    lat = check("latency_s_per_hop", latency_s_per_hop, ">=0")
    return transfer_time_s(size_bytes, link.bytes_per_s_per_direction, len(path) * lat)


def domain_bandwidth_bytes_per_s(domain, both_directions: bool = False) -> float:
    """Sum of every GPU's scale-up bandwidth in ``domain``: ``n_GPUs x beta_GPU``.

    Per direction by default; ``both_directions=True`` doubles it, the way
    vendors quote the domain (GB200 NVL72: 72 x 1.8 TB/s = 129.6 TB/s, "130 TB/s").
    ``domain`` is a :class:`aiinfra.catalog.hardware.ScaleUpDomain`.
    """
    if not isinstance(domain, hardware.ScaleUpDomain):
        raise ValueError(
            f"domain must be an aiinfra.catalog.hardware.ScaleUpDomain, got {type(domain).__name__}"
        )
    per_dir = domain.n_gpus * domain.link_bytes_per_s_per_direction
    both = check("both_directions", both_directions, "bool")
    return bidirectional_from_per_direction(per_dir) if both else per_dir


# --------------------------------------------------------------------------------------
# Collectives
# --------------------------------------------------------------------------------------


@formula(
    "2*(n_G - 1)/n_G*S/beta + 2*(n_G - 1)*t_0",
    sample={"n_ranks": (1, 1024), "latency_s": (0.0, 1.0)},
    size_bytes="S >=0",
    n_ranks="n_G int>=1",
    bandwidth_bytes_per_s="beta >0",
    latency_s="t_0 >=0",
)
def ring_allreduce_time_s(size_bytes, n_ranks, bandwidth_bytes_per_s, latency_s=0.0):
    """Ring all-reduce of ``size_bytes`` over ``n_ranks``: ``2(N-1)/N * S/beta + 2(N-1) t_0``.

    A reduce-scatter then an all-gather, each of ``N - 1`` steps moving
    ``S / N`` bytes over every rank's outgoing link. ``bandwidth_bytes_per_s``
    is each rank's per-direction link rate; ``latency_s`` the cost of one
    step. Assumes a ring with no contention; one rank takes no time.
    """
    n = n_ranks
    return 2.0 * (n - 1.0) / n * size_bytes / bandwidth_bytes_per_s + 2.0 * (n - 1.0) * latency_s


@formula("S/T", size_bytes="S >=0", elapsed_s="T >0")
def algorithm_bandwidth_bytes_per_s(size_bytes, elapsed_s):
    """NCCL's algorithm bandwidth ``algbw = S / t``: message size over measured time."""
    return size_bytes / elapsed_s


@formula(None, n_ranks="int>=1", collective="label")
def bus_bandwidth_factor(n_ranks, collective="all_reduce"):
    """The factor NCCL multiplies algbw by to get busbw for ``collective`` on ``n_ranks`` ranks.

    all_reduce: ``2(n-1)/n``; all_gather, reduce_scatter, all_to_all:
    ``(n-1)/n``; broadcast, reduce: 1.
    """
    choice("collective", collective, set(_COLLECTIVE_FACTORS))
    return _COLLECTIVE_FACTORS[collective](n_ranks)


@formula(
    "b_algo*2*(n_G - 1)/n_G",
    sample={"n_ranks": (1, 1024)},
    algorithm_bytes_per_s="b_algo >=0",
    n_ranks="n_G int>=1",
    collective="label",
)
def bus_bandwidth_bytes_per_s(algorithm_bytes_per_s, n_ranks, collective="all_reduce"):
    """NCCL's bus bandwidth: ``busbw = algbw * factor(collective, n)`` (all-reduce: ``2(n-1)/n``).

    It is the per-link rate the collective actually sustained; compare it with
    the link's per-direction peak, never algbw. Factors from
    :func:`bus_bandwidth_factor`; the twin is the all-reduce case.
    """
    return algorithm_bytes_per_s * bus_bandwidth_factor(n_ranks, collective)


# --------------------------------------------------------------------------------------
# Packets (chapter 1's SmartNIC)
# --------------------------------------------------------------------------------------


@formula(
    "r_bits/(8*s_frame)",
    sample={"frame_bytes_on_wire": (64, 1600)},
    link_bits_per_s="r_bits >0",
    frame_bytes_on_wire="s_frame >0",
)
def packets_per_s(link_bits_per_s, frame_bytes_on_wire=MIN_ETHERNET_FRAME_BYTES_ON_WIRE):
    """Packets per second a link carries when every packet occupies ``frame_bytes_on_wire``.

    ``r / (8 s)``: at 40 Gbit/s and minimum-size frames (84 B of line time
    each) that is about 59.5 million packets/s, the worst case a software
    switch must keep up with.
    """
    return units.bytes_from_bits(link_bits_per_s) / frame_bytes_on_wire


@formula(
    "ceiling(lambda_packet/mu_core)",
    out=int,
    sample={"packets_per_s": (1.0, 1000.0), "packets_per_s_per_core": (0.5, 50.0)},
    packets_per_s="lambda_packet >=0",
    packets_per_s_per_core="mu_core >0",
)
def cores_needed(packets_per_s, packets_per_s_per_core):
    """Whole CPU cores needed to sustain a packet rate: ``ceil(lambda / mu)``.

    ``packets_per_s_per_core`` is what one core's forwarding loop handles
    (10 to 20 million/s for a simple software baseline); the result is an int.
    """
    return np.ceil(packets_per_s / packets_per_s_per_core * (1 - 1e-12))
