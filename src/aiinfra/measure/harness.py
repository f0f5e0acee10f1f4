"""The timing harness: warm up, repeat within a budget, report the median and the spread (chapter 8).

Timing rules (:func:`time_call`): warm-up calls first (page faults, lazy allocation,
thread-pool start-up and clock ramp-up land there), then repeats until a fixed time budget is
spent (at least ``min_repeats`` of them), and the **median** is reported, with the spread. No
result depends on a single run. :func:`time_interleaved` times several variants in rounds, so
that a machine's drift hits them all alike. A :class:`Measurement` is one timed piece of work
with the minimum FLOPs and bytes it had to do.
"""

from __future__ import annotations

import math
import os
import statistics
import time
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field

from aiinfra import roofline
from aiinfra.formula import check


@dataclass(frozen=True)
class Timing:
    """Wall-clock samples of one call (seconds each), after ``warmup`` untimed calls.

    ``first_s`` is the very first (cold) call, kept to show what warm-up
    removes. ``inner`` calls were made per sample; every sample is already
    divided by it.
    """

    samples_s: tuple
    warmup: int
    first_s: float
    inner: int = 1

    @property
    def median_s(self) -> float:
        return float(statistics.median(self.samples_s))

    @property
    def min_s(self) -> float:
        return float(min(self.samples_s))

    @property
    def max_s(self) -> float:
        return float(max(self.samples_s))

    @property
    def repeats(self) -> int:
        return len(self.samples_s)

    @property
    def spread(self) -> float:
        """(max - min) / median of the samples: 0 for a perfectly steady machine."""
        return (self.max_s - self.min_s) / self.median_s


#: Environment variable that multiplies every measured time (1 when unset). It exists for one
#: purpose: to prove that the build and the tests pass on a machine whose measurements differ
#: from the committer's (``AIINFRA_MEASURE_SCALE=3 make book``). Never set it to publish numbers.
SCALE_ENV = "AIINFRA_MEASURE_SCALE"


def _time_scale() -> float:
    """The factor of :data:`SCALE_ENV` (a positive finite number), 1.0 when it is unset."""
    text = os.environ.get(SCALE_ENV, "").strip()
    if not text:
        return 1.0
    try:
        value = float(text)
    except ValueError:
        value = math.nan
    if not (math.isfinite(value) and value > 0):
        raise ValueError(f"{SCALE_ENV} must be a positive finite number, got {text!r}")
    return value


def time_call(
    fn: Callable[[], object],
    *,
    budget_s: float = 0.5,
    warmup: int = 1,
    min_repeats: int = 3,
    max_repeats: int = 100,
    inner: int = 1,
    sync: Callable[[], object] | None = None,
    clock: Callable[[], float] = time.perf_counter,
) -> Timing:
    """Time ``fn()`` robustly: ``warmup`` (>= 1) untimed calls, then repeats until ``budget_s`` is spent.

    Each sample times ``inner`` back-to-back calls (use it for calls far
    shorter than the clock's resolution) followed by ``sync()`` (wait for an
    asynchronous device), and is divided by ``inner``. The number of repeats
    is at least ``min_repeats`` and at most ``max_repeats``; the budget stops
    the loop early, so the total time is about ``budget_s`` plus the warm-up,
    or ``min_repeats`` calls if one call is longer than the budget.
    """
    return time_interleaved(
        [fn],
        budget_s=budget_s,
        warmup=warmup,
        min_repeats=min_repeats,
        max_repeats=max_repeats,
        inner=inner,
        sync=sync,
        clock=clock,
    )[0]


def time_interleaved(
    fns: Sequence[Callable[[], object]],
    *,
    budget_s: float = 1.0,
    warmup: int = 1,
    min_repeats: int = 3,
    max_repeats: int = 100,
    inner: int = 1,
    sync: Callable[[], object] | None = None,
    clock: Callable[[], float] = time.perf_counter,
) -> list[Timing]:
    """Time several variants of one experiment in rounds, one call of each per round.

    A machine shared with other work speeds up and slows down over seconds.
    Timing variant A for a second and then variant B for a second lets that
    drift masquerade as a difference between A and B; interleaving spreads
    it over all variants alike. Rules as :func:`time_call`: ``warmup`` (>= 1)
    untimed rounds (the first one's times are kept as ``first_s``), then rounds until ``budget_s`` (total) is spent, at least
    ``min_repeats`` and at most ``max_repeats`` of them; medians per variant.
    """
    if isinstance(fns, (str, bytes)) or not isinstance(fns, Sequence) or len(fns) == 0:
        raise ValueError(f"fns must be a non-empty sequence of callables, got {fns!r}")
    for f in fns:
        if not callable(f):
            raise ValueError(f"fns must hold callables only, got {type(f).__name__}")
    budget = check("budget_s", budget_s, ">0")
    n_warm = check("warmup", warmup, "int>=1", scalar=True)
    lo = check("min_repeats", min_repeats, "int>=1", scalar=True)
    hi = check("max_repeats", max_repeats, "int>=1", scalar=True)
    if hi < lo:
        raise ValueError(f"max_repeats must be >= min_repeats ({lo}), got {max_repeats!r}")
    n_inner = check("inner", inner, "int>=1", scalar=True)
    if sync is not None and not callable(sync):
        raise ValueError(f"sync must be callable or None, got {type(sync).__name__}")
    wait = sync if sync is not None else (lambda: None)
    scale = _time_scale()

    def one(fn):
        t0 = clock()
        for _ in range(n_inner):
            fn()
        wait()
        # a clock can return 0 for a call shorter than its resolution; floor at 1 ns so rates stay finite
        return scale * max((clock() - t0) / n_inner, 1e-9)

    first = [one(f) for f in fns]
    for _ in range(max(n_warm - 1, 0)):
        for f in fns:
            one(f)
    samples: list[list[float]] = [[] for _ in fns]
    start = clock()
    rounds = 0
    while rounds < hi:
        for i, f in enumerate(fns):
            samples[i].append(one(f))
        rounds += 1
        if rounds >= lo and clock() - start >= budget:
            break
    return [
        Timing(samples_s=tuple(s), warmup=n_warm, first_s=f, inner=n_inner) for s, f in zip(samples, first)
    ]


@dataclass(frozen=True)
class Measurement:
    """One timed piece of work: what it had to do and how long it took (median).

    ``flops`` and ``bytes_moved`` are the work's *minimum* FLOPs and bytes per
    call (what the roofline charges), not counters read from the hardware.
    ``params`` records the sizes (``n_params``, ``batch``, ``dtype``...).
    """

    kind: str
    backend: str
    flops: float
    bytes_moved: float
    timing: Timing
    params: Mapping = field(default_factory=dict)

    @property
    def seconds(self) -> float:
        """Median time of one call."""
        return self.timing.median_s

    @property
    def flops_per_s(self) -> float:
        return self.flops / self.seconds

    @property
    def bytes_per_s(self) -> float:
        return self.bytes_moved / self.seconds

    @property
    def intensity_flops_per_byte(self) -> float:
        return roofline.arithmetic_intensity_flops_per_byte(self.flops, self.bytes_moved)
