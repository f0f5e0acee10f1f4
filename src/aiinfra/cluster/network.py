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
* What engines actually run for a tensor-parallel all-reduce depends on the
  message: at decode sizes (KiB to a few MiB) custom one-shot and two-shot
  kernels or NVLink SHARP (NVLS), at large sizes the NCCL ring. Each regime
  is a latency and an achieved bus bandwidth, read off published benchmarks
  (:data:`ALLREDUCE_REGIMES`, :func:`regime_allreduce_time_s`); an engine picks
  the fastest one for the size (:func:`tp_allreduce_time_s`).
* Expert parallelism moves tokens, not sums: a dispatch all-to-all sends
  each token's hidden vector to the ranks of its ``k`` experts, a combine
  all-to-all brings the ``k`` expert outputs back, ``T k d b`` bytes per rank
  each way (:func:`moe_all_to_all_bytes`). Each is timed as one latency plus
  its bytes over an achieved share of the link (:data:`ALL_TO_ALL_REGIMES`,
  :func:`all_to_all_time_s`): over NVLink the one-shot all-reduce's numbers
  (both are direct stores into every peer's buffer), over RDMA a fit to
  DeepEP's published low-latency kernels.

Serves: Chapters 1 (links, SmartNIC), 2 (inside one server) and 6 (collectives in a cluster).
"""

from __future__ import annotations

from dataclasses import dataclass

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
    "AllReduceRegime",
    "ALLREDUCE_REGIMES",
    "regime_allreduce_time_s",
    "allreduce_alpha_beta_time_s",
    "tp_allreduce_time_s",
    "fastest_allreduce_regime",
    "moe_all_to_all_bytes",
    "AllToAllRegime",
    "ALL_TO_ALL_REGIMES",
    "all_to_all_time_s",
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


@formula(per_direction_bytes_per_s="beta >0")
def bidirectional_from_per_direction(per_direction_bytes_per_s):
    """Both-directions total from a per-direction figure: ``2 beta`` (what a vendor prints)."""
    return per_direction_bytes_per_s * 2.0


# --------------------------------------------------------------------------------------
# Transfers and paths
# --------------------------------------------------------------------------------------


@formula(
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


@formula(size_bytes="S >=0", elapsed_s="T >0")
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
# The all-reduce an inference engine runs: one latency and one bus bandwidth per regime
# --------------------------------------------------------------------------------------

_SGL_2904 = (
    "SGLang PR #2904 (optimize custom allreduce), H100, TP=8, no CUDA graph: "
    "5.9 us at 512 B, 7.8 us at 32 KiB, 16.7 us at 256 KiB, 33.8 us at 1 MiB"
)
_VLLM_24111 = (
    "vLLM PR #24111 (torch symmetric-memory all-reduce), H100, TP=6, BF16 rows of 8,192: "
    "ca_1stage 13/21/70 us, ca_2stage 15/17/37 us, pynccl 23/25/53 us, "
    "symm_mem_multimem 13/16/31 us at 0.5/1/4 MB"
)
_VLLM_42324 = (
    "vLLM PR #42324 (symmetric-memory two-shot tuning), SM 9.0: pynccl 316 us at 64 MiB over 8 ranks "
    "(algbw 212 GB/s, busbw 372 GB/s)"
)


@dataclass(frozen=True)
class AllReduceRegime:
    """One all-reduce algorithm as engines run it: ``T = t_AR + k(n) S / (eta_AR beta_link)``.

    ``latency_s`` (``t_AR``) is the fixed cost of one call at small sizes
    (launch, flags, barrier); ``link_fraction`` (``eta_AR``) the share of the
    link's per-direction peak it sustains as bus bandwidth; ``bytes_factor``
    names ``k(n)``, the bytes each rank moves per message byte: ``"one_shot"``
    ``n - 1`` (every rank reads every peer's whole buffer), ``"two_shot"`` and
    ``"ring"`` ``2 (n - 1) / n`` (reduce-scatter then all-gather), ``"nvls"``
    ``2 (n - 1) / n`` (the NCCL bus-bandwidth convention for the
    switch-reduced all-reduce). ``needs_switch``: only over an NVSwitch
    fabric (NVLS's in-switch reduction; the custom kernels' all-to-all
    loads). ``source`` is the measurement the two numbers are read from.
    """

    name: str
    latency_s: float
    link_fraction: float
    bytes_factor: str
    needs_switch: bool
    source: str

    def __post_init__(self):
        check("latency_s", self.latency_s, ">=0", scalar=True)
        check("link_fraction", self.link_fraction, "(0,1]", scalar=True)
        choice("bytes_factor", self.bytes_factor, set(_BYTES_FACTORS))


_BYTES_FACTORS = {
    "one_shot": lambda n: n - 1.0,
    "two_shot": lambda n: 2.0 * (n - 1.0) / n,
    "ring": lambda n: 2.0 * (n - 1.0) / n,
    "nvls": lambda n: 2.0 * (n - 1.0) / n,
}

#: The regimes of a tensor-parallel all-reduce, each from a published H100 benchmark (450 GB/s
#: NVLink 4 per direction); fractions are the measured bus bandwidth over that peak.
ALLREDUCE_REGIMES = {
    r.name: r
    for r in (
        # small sizes: 5.9 us at 512 B, TP=8; slope 16.3 us/MB at TP=6 over 5 peers' buffers
        # -> 5 x 1e6 B / 16.3 us = 307 GB/s per rank, 0.68 of 450
        AllReduceRegime("one_shot", 5.9e-6, 0.68, "one_shot", True, _SGL_2904 + "; " + _VLLM_24111),
        # 15 us at 0.5 MB, 37 us at 4 MB (TP=6): 265 GB/s of bus bandwidth, 0.59; t_AR = 12 us
        AllReduceRegime("two_shot", 12e-6, 0.59, "two_shot", True, _VLLM_24111),
        # 13 us at 0.5 MB, 31 us at 4 MB (TP=6): 326 GB/s of bus bandwidth, 0.72; t_AR = 10 us
        AllReduceRegime("nvls", 10e-6, 0.72, "nvls", True, _VLLM_24111),
        # 23 us at 0.5 MB (TP=6) and 372 GB/s of bus bandwidth at 64 MiB (TP=8), 0.83
        AllReduceRegime("nccl_ring", 20e-6, 0.83, "ring", False, _VLLM_24111 + "; " + _VLLM_42324),
    )
}


@formula(
    size_bytes="S >=0",
    bytes_per_rank_factor="k >=0",
    link_bytes_per_s="beta >0",
    link_fraction="eta_AR (0,1]",
    latency_s="t_AR >=0",
)
def allreduce_alpha_beta_time_s(
    size_bytes, bytes_per_rank_factor, link_bytes_per_s, link_fraction, latency_s
):
    """Latency plus bandwidth time of one all-reduce: ``t_AR + k S / (eta_AR beta)``.

    ``k`` is the bytes each rank sends per byte of message, ``beta`` the
    rank's per-direction link peak and ``eta_AR`` the share of it the
    algorithm sustains. Accepts arrays.
    """
    return latency_s + bytes_per_rank_factor * size_bytes / (link_fraction * link_bytes_per_s)


def regime_allreduce_time_s(size_bytes, n_ranks, link_bytes_per_s, regime):
    """Time of one all-reduce of ``size_bytes`` over ``n_ranks`` in one regime (a name or an :class:`AllReduceRegime`).

    :func:`allreduce_alpha_beta_time_s` with the regime's latency, link
    fraction and ``k(n)``; 0 on one rank. ``link_bytes_per_s`` is each rank's
    per-direction scale-up peak. Accepts an array of sizes.
    """
    r = (
        regime
        if isinstance(regime, AllReduceRegime)
        else ALLREDUCE_REGIMES[choice("regime", regime, set(ALLREDUCE_REGIMES))]
    )
    n = check("n_ranks", n_ranks, "int>=1", scalar=True)
    s = check("size_bytes", size_bytes, ">=0")
    if n == 1:
        return np.zeros_like(np.asarray(s, dtype=float)) if np.ndim(s) else 0.0
    k = _BYTES_FACTORS[r.bytes_factor](float(n))
    return allreduce_alpha_beta_time_s(s, k, link_bytes_per_s, r.link_fraction, r.latency_s)


def _available(switched: bool):
    return [r for r in ALLREDUCE_REGIMES.values() if switched or not r.needs_switch]


def tp_allreduce_time_s(size_bytes, n_ranks, link_bytes_per_s, switched=True):
    """Time of one tensor-parallel all-reduce as an engine runs it: the fastest available regime for the size.

    Engines dispatch on message size (vLLM's and SGLang's custom all-reduce
    below a few MiB, NVLS or the NCCL ring above), so the time is the minimum
    of :func:`regime_allreduce_time_s` over :data:`ALLREDUCE_REGIMES`;
    ``switched=False`` (GPUs on PCIe or a bridge, no NVSwitch) leaves only
    the NCCL ring. 0 on one rank. Accepts an array of sizes. Chapters 6 and 7.
    """
    check("switched", switched, "bool")
    times = [regime_allreduce_time_s(size_bytes, n_ranks, link_bytes_per_s, r) for r in _available(switched)]
    return np.min(np.asarray(times, dtype=float), axis=0) if np.ndim(size_bytes) else float(min(times))


def fastest_allreduce_regime(size_bytes, n_ranks, link_bytes_per_s, switched=True) -> str:
    """Name of the regime :func:`tp_allreduce_time_s` picks for one message size (``"none"`` on one rank)."""
    if check("n_ranks", n_ranks, "int>=1", scalar=True) == 1:
        return "none"
    regs = _available(check("switched", switched, "bool"))
    return min(regs, key=lambda r: regime_allreduce_time_s(size_bytes, n_ranks, link_bytes_per_s, r)).name


# --------------------------------------------------------------------------------------
# Expert parallelism: the dispatch and combine all-to-alls of a MoE layer
# --------------------------------------------------------------------------------------


@formula(
    "T*k*d*b",
    sample={"tokens": (1, 8192), "hidden_size": (1024, 16384), "experts_per_token": (1, 16)},
    tokens="T int>=1",
    hidden_size="d int>=1",
    experts_per_token="k int>=1",
    bytes_per_element="b >0",
)
def moe_all_to_all_bytes(tokens, hidden_size, experts_per_token, bytes_per_element=1.0):
    """Bytes one rank sends in one MoE all-to-all (a dispatch or a combine): ``T k d b``.

    Each of the rank's ``T`` tokens goes to the ranks of its ``k`` routed
    experts as a ``d``-element vector of ``b`` bytes (dispatch), and ``k``
    expert outputs come back (combine). Every routed copy is counted, as
    DeepEP's benchmarks count it; copies that stay on the rank (about ``1/n``
    of them on ``n`` ranks) or that a kernel merges per node make the real
    traffic somewhat smaller. DeepSeek-V3 dispatches in FP8 (``b = 1``; its
    per-128-element scales add 4/128) and combines in BF16 (``b = 2``): 128
    tokens, ``k = 8``, ``d = 7,168`` give 7.34 MB and 14.68 MB. Chapter 6.
    """
    return tokens * experts_per_token * hidden_size * bytes_per_element


_DEEPEP_LL = (
    "DeepEP README (deepseek-ai/DeepEP), low-latency kernels, H800 with one 400 Gbit/s CX7 per GPU "
    "(~50 GB/s), 128 tokens, hidden 7,168, top-8, FP8 dispatch, BF16 combine: EP128 dispatch 192 us, "
    "combine 369 us; EP256 194 us and 360 us"
)


@dataclass(frozen=True)
class AllToAllRegime:
    """One way to run a MoE all-to-all: ``T = t_A2A + S / (eta_A2A beta_link)``.

    ``latency_s`` (``t_A2A``) is the fixed cost of one call; ``link_fraction``
    (``eta_A2A``) the share of the link's per-direction peak the kernel
    sustains; ``fabric`` the links it crosses (``"nvlink"`` inside one
    scale-up domain, ``"rdma"`` through each GPU's NIC). ``source``: what the
    two numbers are read from.
    """

    name: str
    latency_s: float
    link_fraction: float
    fabric: str
    source: str

    def __post_init__(self):
        check("latency_s", self.latency_s, ">=0", scalar=True)
        check("link_fraction", self.link_fraction, "(0,1]", scalar=True)
        choice("fabric", self.fabric, {"nvlink", "rdma"})


#: The all-to-all regimes: inside an NVLink domain and across nodes over RDMA.
ALL_TO_ALL_REGIMES = {
    r.name: r
    for r in (
        # every rank stores its vectors straight into its peers' buffers, as the one-shot all-reduce does;
        # its 5.9 us and 0.68 of the link are taken over (an assumption: no published decode-size
        # all-to-all over NVSwitch separates latency from bandwidth)
        AllToAllRegime(
            "nvlink", 5.9e-6, 0.68, "nvlink", "the one-shot all-reduce regime (ALLREDUCE_REGIMES['one_shot'])"
        ),
        # two sizes through the same ranks at EP128: 7.34 MB in 192 us and 14.68 MB in 369 us give a slope of
        # 177 us per 7.34 MB (41.5 GB/s, 0.83 of 50 GB/s) and t_A2A = 192 - 177 = 15 us
        AllToAllRegime("rdma", 15e-6, 0.83, "rdma", _DEEPEP_LL),
    )
}


@formula(
    size_bytes="S >=0",
    link_bytes_per_s="beta >0",
    link_fraction="eta_A2A (0,1]",
    latency_s="t_A2A >=0",
)
def _all_to_all_alpha_beta_s(size_bytes, link_bytes_per_s, link_fraction, latency_s):
    return latency_s + size_bytes / (link_fraction * link_bytes_per_s)


def all_to_all_time_s(size_bytes, link_bytes_per_s, regime="nvlink"):
    """Time of one MoE all-to-all of ``size_bytes`` per rank: ``t_A2A + S / (eta_A2A beta)``.

    ``link_bytes_per_s`` is each rank's per-direction peak on the fabric it
    crosses (NVLink for ``"nvlink"``, the NIC for ``"rdma"``); ``regime`` a
    name in :data:`ALL_TO_ALL_REGIMES` or an :class:`AllToAllRegime`. With
    the ``"rdma"`` regime, DeepSeek-V3's 7.34 MB dispatch over a 50 GB/s NIC
    takes 15 us + 177 us = 192 us, DeepEP's measurement. Accepts an array of
    sizes. Chapter 6.
    """
    r = (
        regime
        if isinstance(regime, AllToAllRegime)
        else ALL_TO_ALL_REGIMES[choice("regime", regime, set(ALL_TO_ALL_REGIMES))]
    )
    return _all_to_all_alpha_beta_s(size_bytes, link_bytes_per_s, r.link_fraction, r.latency_s)


# --------------------------------------------------------------------------------------
# Packets (chapter 1's SmartNIC)
# --------------------------------------------------------------------------------------


@formula(
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
    out=int,
    packets_per_s="lambda_packet >=0",
    packets_per_s_per_core="mu_core >0",
)
def cores_needed(packets_per_s, packets_per_s_per_core):
    """Whole CPU cores needed to sustain a packet rate: ``ceil(lambda / mu)``.

    ``packets_per_s_per_core`` is what one core's forwarding loop handles
    (10 to 20 million/s for a simple software baseline); the result is an int.
    """
    return np.ceil(packets_per_s / packets_per_s_per_core * (1 - 1e-12))
