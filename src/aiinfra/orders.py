"""Orders of magnitude: the 2009 latency table and back-of-envelope helpers built on it.

The table is the one Jeff Dean showed in his LADIS 2009 keynote (slide
"Numbers Everyone Should Know"). The values describe 2009 hardware; use
them for ratios and habits of estimation, not as current specs. Times are
stored in seconds (SI), converted from the slide's nanoseconds.

Serves: Chapter 1 (orders of magnitude).
"""
from __future__ import annotations

from typing import NamedTuple

import numpy as np
import sympy as sp

from . import _check
from .symbols import twin

__all__ = [
    "LatencyNumber",
    "LATENCY_NUMBERS_2009",
    "LATENCY_NUMBERS_SOURCE",
    "latency_s",
    "latency_ratio",
    "sequential_seeks_time_s",
    "latency_table_rows",
]

LATENCY_NUMBERS_SOURCE = (
    'Jeff Dean, "Designs, Lessons and Advice from Building Large Distributed Systems", '
    "keynote at LADIS 2009 (3rd ACM SIGOPS Workshop on Large-Scale Distributed Systems and "
    'Middleware), slide "Numbers Everyone Should Know". Values for 2009 hardware. '
    "http://www.cs.cornell.edu/projects/ladis2009/talks/dean-keynote-ladis2009.pdf"
)


class LatencyNumber(NamedTuple):
    """One row of the table: what happens, and how long it took in 2009 (seconds)."""

    operation: str
    seconds: float


_NS = 1e-9

#: The twelve rows of the 2009 slide, fastest first.
LATENCY_NUMBERS_2009: tuple[LatencyNumber, ...] = (
    LatencyNumber("L1 cache reference", 0.5 * _NS),
    LatencyNumber("Branch mispredict", 5 * _NS),
    LatencyNumber("L2 cache reference", 7 * _NS),
    LatencyNumber("Mutex lock/unlock", 25 * _NS),
    LatencyNumber("Main memory reference", 100 * _NS),
    LatencyNumber("Compress 1K bytes with Zippy", 3_000 * _NS),
    LatencyNumber("Send 2K bytes over 1 Gbps network", 20_000 * _NS),
    LatencyNumber("Read 1 MB sequentially from memory", 250_000 * _NS),
    LatencyNumber("Round trip within same datacenter", 500_000 * _NS),
    LatencyNumber("Disk seek", 10_000_000 * _NS),
    LatencyNumber("Read 1 MB sequentially from disk", 20_000_000 * _NS),
    LatencyNumber("Send packet CA->Netherlands->CA", 150_000_000 * _NS),
)

_BY_NAME = {row.operation.lower(): row for row in LATENCY_NUMBERS_2009}


def latency_s(operation: str) -> float:
    """Seconds the 2009 table gives for ``operation`` (case-insensitive exact name).

    Raises ``ValueError`` listing the valid names for an unknown operation.
    """
    if not isinstance(operation, str) or operation.lower() not in _BY_NAME:
        names = ", ".join(repr(r.operation) for r in LATENCY_NUMBERS_2009)
        raise ValueError(f"operation must be one of {names}; got {operation!r}")
    return _BY_NAME[operation.lower()].seconds


def latency_ratio(slower: str, faster: str) -> float:
    """How many times longer ``slower`` takes than ``faster`` (a disk seek is 1e5 memory references)."""
    return latency_s(slower) / latency_s(faster)


def latency_table_rows(unit: str = "ns") -> list[tuple[str, float]]:
    """The table as ``(operation, time)`` rows in ``unit`` ("s", "ms", "us" or "ns"), for display."""
    scale = {"s": 1.0, "ms": 1e3, "us": 1e6, "ns": 1e9}
    _check.choice("unit", unit, set(scale))
    return [(r.operation, r.seconds * scale[unit]) for r in LATENCY_NUMBERS_2009]


k_seek = sp.Symbol("k", positive=True)
t_seek = sp.Symbol("t_seek", positive=True)
t_cpu = sp.Symbol("t_cpu", nonnegative=True)


@twin(k_seek * t_seek + t_cpu, domains={"n_seeks": (0, 100, "int"), "compute_time_s": (0.0, 10.0, "float")},
      n_seeks=k_seek, seek_time_s=t_seek, compute_time_s=t_cpu)
def sequential_seeks_time_s(n_seeks, seek_time_s=10e-3, compute_time_s=0.0):
    """Time of ``n_seeks`` dependent disk seeks plus CPU work: ``k t_seek + t_cpu``.

    The seeks cannot overlap because each one's target depends on the data
    the previous one returned. With the 2009 seek of 10 ms, 20 seeks and 1 ms
    of CPU take 201 ms: halving the CPU time saves 0.5 ms, halving the seeks
    saves 100 ms.
    """
    k = np.asarray(_check.integers("n_seeks", n_seeks, minimum=0), dtype=float)
    t = np.asarray(_check.positive("seek_time_s", seek_time_s))
    c = np.asarray(_check.non_negative("compute_time_s", compute_time_s))
    out = k * t + c
    return float(out) if out.ndim == 0 else out
