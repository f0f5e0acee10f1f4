"""Amdahl's law: what speeding up part of a job does to the whole job.

If a fraction ``f`` of the original time is made ``s`` times faster and the
rest is untouched, the job takes ``(1 - f) + f / s`` of its old time, so

    speedup = 1 / ((1 - f) + f / s),        limit (s -> inf) = 1 / (1 - f).

(G. Amdahl, "Validity of the single processor approach to achieving large
scale computing capabilities", AFIPS 1967.) The same arithmetic covers a CPU
kernel, a serving pipeline and a team's workflow: it only needs the share of
time the improved part used to take.

Serves: Chapter 1 (orders of magnitude, pitfalls) and every later chapter that speeds up part of a pipeline.
"""
from __future__ import annotations

import numpy as np

from . import _check
from .symbols import T, f_par, s_speed, twin

__all__ = ["amdahl_speedup", "amdahl_limit", "time_after_speedup_s"]

_F = (0.0, 1.0, "float")
_F_OPEN = (0.0, 0.99, "float")


def _out(x):
    arr = np.asarray(x, dtype=float)
    return float(arr) if arr.ndim == 0 else arr


@twin(1 / ((1 - f_par) + f_par / s_speed), domains={"fraction": _F}, fraction=f_par, speedup=s_speed)
def amdahl_speedup(fraction, speedup):
    """Overall speedup ``1 / ((1 - f) + f / s)``.

    ``fraction`` is the share ``f`` in [0, 1] of the *original* time that is
    sped up, ``speedup`` the factor ``s > 0`` applied to it (``s < 1`` is a
    slowdown). Example: coding is 20% of a task and becomes 5x faster, so the
    task as a whole gets 1 / (0.8 + 0.04) = 1.19x faster.
    """
    f = np.asarray(_check.fraction("fraction", fraction, open_low=False))
    s = np.asarray(_check.positive("speedup", speedup))
    return _out(1.0 / ((1.0 - f) + f / s))


@twin(1 / (1 - f_par), domains={"fraction": _F_OPEN}, fraction=f_par)
def amdahl_limit(fraction):
    """Ceiling on the overall speedup as the part's own speedup grows without bound: ``1 / (1 - f)``.

    ``fraction`` must lie in [0, 1); at ``f = 1`` there is no ceiling and the
    function raises rather than return infinity.
    """
    f = np.asarray(_check.fraction("fraction", fraction, open_low=False, closed_high=False))
    return _out(1.0 / (1.0 - f))


@twin(T * ((1 - f_par) + f_par / s_speed), domains={"fraction": _F},
      original_time_s=T, fraction=f_par, speedup=s_speed)
def time_after_speedup_s(original_time_s, fraction, speedup):
    """New duration ``T ((1 - f) + f / s)`` of a job of ``original_time_s`` seconds.

    E.g. 100 hours with 20% coding made 5x faster: 80 + 20/5 = 84 hours.
    """
    t = np.asarray(_check.non_negative("original_time_s", original_time_s))
    return _out(t / np.asarray(amdahl_speedup(fraction, speedup)))

