"""Links and collectives: transfer time, per-direction figures, ring all-reduce, packet rates.

Conventions, stated once:

* Bandwidth is bytes per second **per direction** unless a name says
  otherwise. Vendors often add both directions (NVLink 4: 900 GB/s per GPU
  = 450 GB/s each way; PCIe Gen5 x16: 128 GB/s = 64 GB/s each way); convert
  with :func:`per_direction_from_bidirectional` before comparing links.
* Network rates come in bits per second; :func:`bytes_per_s_from_bits_per_s`
  divides by 8 (400 Gbit/s = 50 GB/s).
* A transfer costs a fixed latency plus size over bandwidth (the
  alpha-beta or Hockney model).
* Ring all-reduce (Patarasuk and Yuan 2009; the NCCL ring) sends
  ``2 (N - 1) / N`` of the message over each rank's link, in ``2 (N - 1)``
  latency-bearing steps. NCCL's "bus bandwidth" rescales the measured
  algorithm bandwidth ``S / t`` by that factor so that it can be compared
  with the link's peak (NCCL tests, PERFORMANCE.md).

Serves: Chapters 1 (links, SmartNIC), 2 (inside one server) and 6 (collectives in a cluster).
"""
from __future__ import annotations

import numpy as np
import sympy as sp

from . import _check
from .symbols import S_msg, T, beta, n_gpu, t_lat, twin

__all__ = [
    "transfer_time_s",
    "per_direction_from_bidirectional",
    "bidirectional_from_per_direction",
    "bytes_per_s_from_bits_per_s",
    "ring_allreduce_time_s",
    "algorithm_bandwidth_bytes_per_s",
    "bus_bandwidth_bytes_per_s",
    "allreduce_bus_bandwidth_bytes_per_s",
    "bus_bandwidth_factor",
    "packets_per_s",
    "cores_needed",
    "MIN_ETHERNET_FRAME_BYTES_ON_WIRE",
]

#: A minimum Ethernet frame (64 B) plus preamble and start delimiter (8 B) and
#: the inter-frame gap (12 B): the 84 bytes of line time each packet occupies.
MIN_ETHERNET_FRAME_BYTES_ON_WIRE = 84

beta_both = sp.Symbol("beta_both", positive=True)
r_bits = sp.Symbol("r_bits", positive=True)
b_algo = sp.Symbol("b_algo", positive=True)
frame = sp.Symbol("s_frame", positive=True)
lam = sp.Symbol("lambda_packet", positive=True)
mu = sp.Symbol("mu_core", positive=True)

_COLLECTIVE_FACTORS = {
    # NCCL tests' busbw factors, as functions of the rank count n
    "all_reduce": lambda n: 2.0 * (n - 1) / n,
    "all_gather": lambda n: (n - 1) / n,
    "reduce_scatter": lambda n: (n - 1) / n,
    "all_to_all": lambda n: (n - 1) / n,
    "broadcast": lambda n: 1.0 + 0.0 * n,
    "reduce": lambda n: 1.0 + 0.0 * n,
}


def _out(x):
    arr = np.asarray(x, dtype=float)
    return float(arr) if arr.ndim == 0 else arr


@twin(t_lat + S_msg / beta, domains={"latency_s": (0.0, 10.0, "float")},
      size_bytes=S_msg, bandwidth_bytes_per_s=beta, latency_s=t_lat)
def transfer_time_s(size_bytes, bandwidth_bytes_per_s, latency_s=0.0):
    """Time to send ``size_bytes`` over one link: ``t_0 + S / beta``.

    ``bandwidth_bytes_per_s`` is the per-direction rate in *bytes*/s;
    ``latency_s`` the fixed start-up or round-trip cost. Small messages are
    latency-bound, large ones bandwidth-bound (1 GB at 50 GB/s is 20 ms).
    """
    s = np.asarray(_check.non_negative("size_bytes", size_bytes))
    bw = np.asarray(_check.positive("bandwidth_bytes_per_s", bandwidth_bytes_per_s))
    lat = np.asarray(_check.non_negative("latency_s", latency_s))
    return _out(lat + s / bw)


@twin(beta_both / 2, bidirectional_bytes_per_s=beta_both)
def per_direction_from_bidirectional(bidirectional_bytes_per_s):
    """Per-direction bandwidth from a both-directions total: ``beta_both / 2`` (900 GB/s NVLink 4 -> 450)."""
    return _out(np.asarray(_check.positive("bidirectional_bytes_per_s", bidirectional_bytes_per_s)) / 2.0)


@twin(2 * beta, per_direction_bytes_per_s=beta)
def bidirectional_from_per_direction(per_direction_bytes_per_s):
    """Both-directions total from a per-direction figure: ``2 beta``."""
    return _out(np.asarray(_check.positive("per_direction_bytes_per_s", per_direction_bytes_per_s)) * 2.0)


@twin(r_bits / 8, bits_per_s=r_bits)
def bytes_per_s_from_bits_per_s(bits_per_s):
    """Bytes per second from a line rate in bits per second: ``r / 8`` (400e9 bit/s -> 50e9 B/s)."""
    return _out(np.asarray(_check.positive("bits_per_s", bits_per_s)) / 8.0)


@twin(2 * (n_gpu - 1) / n_gpu * S_msg / beta + 2 * (n_gpu - 1) * t_lat,
      domains={"n_ranks": (1, 1024, "int"), "latency_s": (0.0, 1.0, "float")},
      size_bytes=S_msg, n_ranks=n_gpu, bandwidth_bytes_per_s=beta, latency_s=t_lat)
def ring_allreduce_time_s(size_bytes, n_ranks, bandwidth_bytes_per_s, latency_s=0.0):
    """Ring all-reduce of ``size_bytes`` over ``n_ranks``: ``2(N-1)/N * S/beta + 2(N-1) t_0``.

    A reduce-scatter then an all-gather, each of ``N - 1`` steps moving
    ``S / N`` bytes over every rank's outgoing link. ``bandwidth_bytes_per_s``
    is each rank's per-direction link rate; ``latency_s`` the cost of one
    step. Assumes a ring with no contention; one rank takes no time.
    """
    s = np.asarray(_check.non_negative("size_bytes", size_bytes))
    n = np.asarray(_check.integers("n_ranks", n_ranks, minimum=1), dtype=float)
    bw = np.asarray(_check.positive("bandwidth_bytes_per_s", bandwidth_bytes_per_s))
    lat = np.asarray(_check.non_negative("latency_s", latency_s))
    return _out(2.0 * (n - 1.0) / n * s / bw + 2.0 * (n - 1.0) * lat)


@twin(S_msg / T, size_bytes=S_msg, elapsed_s=T)
def algorithm_bandwidth_bytes_per_s(size_bytes, elapsed_s):
    """NCCL's algorithm bandwidth ``algbw = S / t``: message size over measured time."""
    s = np.asarray(_check.non_negative("size_bytes", size_bytes))
    t = np.asarray(_check.positive("elapsed_s", elapsed_s))
    return _out(s / t)


def bus_bandwidth_factor(n_ranks, collective="all_reduce"):
    """The factor NCCL multiplies algbw by to get busbw for ``collective`` on ``n_ranks`` ranks.

    all_reduce: ``2(n-1)/n``; all_gather, reduce_scatter, all_to_all:
    ``(n-1)/n``; broadcast, reduce: 1.
    """
    n = np.asarray(_check.integers("n_ranks", n_ranks, minimum=1), dtype=float)
    _check.choice("collective", collective, set(_COLLECTIVE_FACTORS))
    return _out(_COLLECTIVE_FACTORS[collective](n))


@twin(b_algo * 2 * (n_gpu - 1) / n_gpu, domains={"n_ranks": (1, 1024, "int")},
      algorithm_bytes_per_s=b_algo, n_ranks=n_gpu)
def allreduce_bus_bandwidth_bytes_per_s(algorithm_bytes_per_s, n_ranks):
    """NCCL's bus bandwidth of an all-reduce: ``busbw = algbw * 2(n-1)/n``.

    It is the per-link rate the ring actually sustained; compare it with
    the link's per-direction peak, never algbw.
    """
    return bus_bandwidth_bytes_per_s(algorithm_bytes_per_s, n_ranks, "all_reduce")


def bus_bandwidth_bytes_per_s(algorithm_bytes_per_s, n_ranks, collective="all_reduce"):
    """NCCL's bus bandwidth for any collective: ``busbw = algbw * factor(collective, n)``.

    Factors from :func:`bus_bandwidth_factor`; the all-reduce case has its
    own twin in :func:`allreduce_bus_bandwidth_bytes_per_s`.
    """
    a = np.asarray(_check.non_negative("algorithm_bytes_per_s", algorithm_bytes_per_s))
    return _out(a * np.asarray(bus_bandwidth_factor(n_ranks, collective)))


# The all-reduce formula, for derivations; not registered as a twin because
# ``collective`` is a label (the registered twin is allreduce_bus_bandwidth_bytes_per_s's).
bus_bandwidth_bytes_per_s.sym = b_algo * 2 * (n_gpu - 1) / n_gpu
bus_bandwidth_bytes_per_s.sym_args = {"algorithm_bytes_per_s": b_algo, "n_ranks": n_gpu}
bus_bandwidth_bytes_per_s.sym_domains = {"n_ranks": (1, 1024, "int")}


@twin(r_bits / (8 * frame), domains={"frame_bytes_on_wire": (64, 1600, "float")},
      link_bits_per_s=r_bits, frame_bytes_on_wire=frame)
def packets_per_s(link_bits_per_s, frame_bytes_on_wire=MIN_ETHERNET_FRAME_BYTES_ON_WIRE):
    """Packets per second a link carries when every packet occupies ``frame_bytes_on_wire``.

    ``r / (8 s)``: at 40 Gbit/s and minimum-size frames (84 B of line time
    each) that is about 59.5 million packets/s, the worst case a software
    switch must keep up with.
    """
    r = np.asarray(_check.positive("link_bits_per_s", link_bits_per_s))
    s = np.asarray(_check.positive("frame_bytes_on_wire", frame_bytes_on_wire))
    return _out(r / (8.0 * s))


@twin(sp.ceiling(lam / mu), domains={"packets_per_s": (1.0, 1e3, "float"), "packets_per_s_per_core": (0.5, 50.0, "float")},
      packets_per_s=lam, packets_per_s_per_core=mu)
def cores_needed(packets_per_s, packets_per_s_per_core):
    """Whole CPU cores needed to sustain a packet rate: ``ceil(lambda / mu)``.

    ``packets_per_s_per_core`` is what one core's forwarding loop handles
    (10 to 20 million/s for a simple software baseline); the result is an int.
    """
    lam_ = np.asarray(_check.non_negative("packets_per_s", packets_per_s))
    mu_ = np.asarray(_check.positive("packets_per_s_per_core", packets_per_s_per_core))
    out = np.ceil(lam_ / mu_ * (1 - 1e-12)).astype(np.int64)
    return int(out) if out.ndim == 0 else out

