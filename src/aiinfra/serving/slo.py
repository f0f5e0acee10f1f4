"""Service-level objectives and goodput: the requests that meet their latency targets, per second.

Chapter 7. A serving system promises each request a time to first token
(TTFT) and a time per output token (TPOT). Throughput counts every finished
request; *goodput* (DistServe, Zhong et al., OSDI 2024) counts only those
that met both targets:

    attainment = share of requests with TTFT <= TTFT_SLO and TPOT <= TPOT_SLO
    goodput    = lambda * attainment

A configuration that raises throughput by stretching TPOT past its target can
lower goodput.
"""

from __future__ import annotations

import numpy as np

from aiinfra.formula import check, formula

__all__ = ["slo_attainment", "goodput_per_s"]


def slo_attainment(ttft_s, tpot_s, ttft_slo_s, tpot_slo_s) -> float:
    """Share of requests whose TTFT and TPOT both meet their targets, in [0, 1].

    ``ttft_s`` and ``tpot_s`` are per-request arrays of equal length (or
    scalars, broadcast); the targets are scalars. A request exactly at its
    target meets it. Chapter 7.
    """
    ttft = np.atleast_1d(check("ttft_s", ttft_s, ">=0"))
    tpot = np.atleast_1d(check("tpot_s", tpot_s, ">=0"))
    if ttft.shape != tpot.shape and ttft.size != 1 and tpot.size != 1:
        raise ValueError(f"ttft_s and tpot_s must have the same length, got {ttft.size} and {tpot.size}")
    ok = (ttft <= check("ttft_slo_s", ttft_slo_s, ">0", scalar=True)) & (
        tpot <= check("tpot_slo_s", tpot_slo_s, ">0", scalar=True)
    )
    return float(np.mean(ok))


@formula(requests_per_s="lambda_ >=0", attainment="a [0,1]")
def goodput_per_s(requests_per_s, attainment):
    """Requests per second that meet their SLOs: ``lambda a``. Chapter 7."""
    return requests_per_s * attainment
