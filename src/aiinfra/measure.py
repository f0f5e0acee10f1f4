"""Measure the machine the book is running on, and predict the same numbers with the roofline (chapter 8).

Every other module of :mod:`aiinfra` computes bounds from datasheet numbers.
This one times real work on the reader's own hardware, so that a chapter can
predict a measurement first and then check it:

* achieved memory bandwidth, two ways: an array copy (STREAM convention: the
  bytes read plus the bytes written, ``2 n``; the cache line a CPU reads
  before overwriting it is not counted) and a reduction (a sum, which reads
  ``n`` bytes and writes almost nothing);
* achieved matrix-multiply rate (GEMM, ``2 m k n`` FLOPs);
* a toy decode step: one weight matrix of ``N`` parameters times one
  activation vector (a GEMV), the memory-bound core of generating a token;
* the same step batched: the matrix times ``B`` columns (a skinny GEMM);
* the cost of one call: many tiny calls timed in a loop, the CPU analogue of
  the per-kernel launch cost of an eager framework; and the same decode step
  cut into ``k`` calls, which adds ``k`` such costs to the same bytes.

Timing rules (:func:`time_call`): warm-up calls first (page faults, lazy
allocation, thread-pool start-up and clock ramp-up land there), then repeats
until a fixed time budget is spent (at least ``min_repeats`` of them), and the
**median** is reported, with the spread. No result depends on a single run.

Backends. :func:`get_backend` uses PyTorch on a CUDA GPU when ``torch`` is
importable and a GPU is present, and numpy on the CPU otherwise; every result
carries the backend's description, and chapters print it. Nothing is ever
installed.

Predictions call :mod:`aiinfra.roofline` (``step_time_overlapped_s``,
``ridge_point_flops_per_byte``, ``mbu``, ``mfu``) and
:func:`aiinfra.decode.critical_batch_size`, with the machine's *measured*
ceilings (:class:`Ceilings`) in place of datasheet peaks: an empirical
roofline.

Everything is SI: bytes, FLOPs, seconds, B/s, FLOP/s. No function asserts or
assumes a particular speed; tests check only that results are positive,
finite and consistent with each other.
"""

from __future__ import annotations

import importlib.util
import json
import math
import os
import platform
import statistics
import time
from collections.abc import Callable, Mapping, Sequence
from dataclasses import asdict, dataclass, field

import numpy as np

from aiinfra import decode, roofline
from aiinfra.formula import check, choice, formula

__all__ = [
    "Backend",
    "NumpyBackend",
    "TorchBackend",
    "get_backend",
    "DTYPE_BYTES",
    "Timing",
    "time_call",
    "time_interleaved",
    "Measurement",
    "matmul_flops",
    "matmul_min_bytes",
    "toy_decode_shape",
    "default_stream_bytes",
    "measure_copy_bandwidth",
    "copy_rate_with_write_allocate_bytes_per_s",
    "host_share_of_gap",
    "measure_read_bandwidth",
    "measure_gemm",
    "measure_decode_step",
    "measure_decode_sweep",
    "measure_call_overhead",
    "measure_split_read",
    "Ceilings",
    "measure_ceilings",
    "MachineRecord",
    "machine_record",
    "SCALE_ENV",
    "RECORD_ENV",
    "predict_time_s",
    "predict_decode_step_s",
    "predicted_knee_batch",
    "measured_knee_batch",
    "throughput_gain",
    "mbu_against",
    "mfu_against",
    "step_time_with_calls_s",
    "fit_per_call_s",
    "achieved_rate_per_s",
    "cpu_flops_per_cycle",
    "cpu_peak_flops_per_s",
]

#: Bytes per element of the dtypes the measurements use.
DTYPE_BYTES = {"float64": 8, "float32": 4, "float16": 2, "bfloat16": 2}


# ---------------------------------------------------------------------------
# backends
# ---------------------------------------------------------------------------


class Backend:
    """What a measurement needs from an array library: allocate, copy, reduce, multiply, wait.

    ``name`` is ``"numpy"`` or ``"torch"``; ``device`` is ``"cpu"`` or
    ``"cuda"``; ``description`` is one line for the reader (library, device,
    threads). ``fast_dtypes`` are the dtypes with a native matrix kernel.
    """

    name = "abstract"
    device = "none"
    dtypes: tuple = ()
    fast_dtypes: tuple = ()

    @property
    def description(self) -> str:  # pragma: no cover - overridden
        raise NotImplementedError

    def check_dtype(self, dtype: str) -> str:
        return choice("dtype", dtype, set(self.dtypes))

    # the operations every backend implements (the measurements call nothing else)
    def full(self, shape, value, dtype):  # pragma: no cover - overridden
        raise NotImplementedError

    def empty_like(self, a):  # pragma: no cover - overridden
        raise NotImplementedError

    def copy(self, dst, src):  # pragma: no cover - overridden
        raise NotImplementedError

    def reduce(self, a):  # pragma: no cover - overridden
        raise NotImplementedError

    def matmul(self, a, b, out=None):  # pragma: no cover - overridden
        raise NotImplementedError

    def rows(self, a, start, stop):  # pragma: no cover - overridden
        raise NotImplementedError

    def sync(self):  # pragma: no cover - overridden
        raise NotImplementedError


class NumpyBackend(Backend):
    """numpy on the CPU; matrix products go to the BLAS numpy was built with.

    float16 is supported but has no BLAS kernel: numpy multiplies it in a
    generic loop, far below the float32 rate (a point chapter 8 makes).
    """

    name = "numpy"
    device = "cpu"
    dtypes = ("float64", "float32", "float16")
    fast_dtypes = ("float64", "float32")

    def __init__(self):
        self.np = np

    @property
    def description(self) -> str:
        return f"numpy {np.__version__} on the CPU ({_cpu_name()}, {os.cpu_count()} logical cores, {_blas_name()})"

    def full(self, shape, value, dtype):
        return np.full(shape, value, dtype=self.check_dtype(dtype))

    def empty_like(self, a):
        out = np.empty_like(a)
        out.fill(0)  # touch every page now, not inside the timed region
        return out

    def copy(self, dst, src):
        np.copyto(dst, src)

    def reduce(self, a):
        return a.sum()

    def matmul(self, a, b, out=None):
        return np.matmul(a, b, out=out)

    def rows(self, a, start, stop):
        return a[start:stop]

    def sync(self):
        return None


class TorchBackend(Backend):
    """PyTorch on a CUDA GPU; every timed call ends with ``torch.cuda.synchronize()``.

    Only built by :func:`get_backend` when ``torch`` imports and
    ``torch.cuda.is_available()``; the book build (no GPU) never uses it.
    """

    name = "torch"
    device = "cuda"
    dtypes = ("float32", "float16", "bfloat16")
    fast_dtypes = ("float32", "float16", "bfloat16")

    def __init__(self, torch_module):
        self.torch = torch_module

    @property
    def description(self) -> str:
        t = self.torch
        return f"PyTorch {t.__version__} on {t.cuda.get_device_name(0)} (CUDA {t.version.cuda})"

    def _dt(self, dtype):
        return getattr(self.torch, self.check_dtype(dtype))

    def full(self, shape, value, dtype):
        return self.torch.full(
            tuple(np.atleast_1d(shape).tolist()), value, dtype=self._dt(dtype), device="cuda"
        )

    def empty_like(self, a):
        return self.torch.zeros_like(a)

    def copy(self, dst, src):
        dst.copy_(src)

    def reduce(self, a):
        return a.sum()

    def matmul(self, a, b, out=None):
        return self.torch.matmul(a, b, out=out)

    def rows(self, a, start, stop):
        return a[start:stop]

    def sync(self):
        self.torch.cuda.synchronize()


def _cpu_name() -> str:
    """The CPU model from ``/proc/cpuinfo`` (Linux), else ``platform.processor()``, else "unknown CPU"."""
    try:
        with open("/proc/cpuinfo", encoding="utf-8", errors="replace") as fh:
            for line in fh:
                if line.lower().startswith("model name"):
                    return line.split(":", 1)[1].strip()
    except OSError:
        pass
    return platform.processor() or "unknown CPU"


def _blas_name() -> str:
    """The BLAS library numpy was built against, e.g. "scipy-openblas 0.3.31", or "unknown BLAS"."""
    try:
        cfg = np.show_config(mode="dicts")
        blas = cfg["Build Dependencies"]["blas"]
        return f"{blas.get('name', 'BLAS')} {blas.get('version', '')}".strip()
    except Exception:  # numpy < 1.26 or an unusual build
        return "unknown BLAS"


def get_backend(prefer: str = "auto") -> Backend:
    """The backend the measurements run on.

    ``prefer="auto"``: PyTorch on CUDA if ``torch`` is importable and a GPU is
    present, else numpy on the CPU. ``"numpy"`` forces the CPU. ``"torch"``
    requires the GPU path and raises ``ValueError`` when it is unavailable.
    """
    choice("prefer", prefer, {"auto", "numpy", "torch"})
    if prefer in ("auto", "torch") and importlib.util.find_spec("torch") is not None:
        import torch  # optional, only when installed

        if torch.cuda.is_available():
            return TorchBackend(torch)
    if prefer == "torch":
        raise ValueError(
            "prefer='torch' needs PyTorch installed and a CUDA GPU present; use 'auto' or 'numpy'"
        )
    return NumpyBackend()


def _backend(backend) -> Backend:
    if backend is None:
        return get_backend()
    if not isinstance(backend, Backend):
        raise ValueError(f"backend must be a Backend from get_backend(), got {type(backend).__name__}")
    return backend


# ---------------------------------------------------------------------------
# timing
# ---------------------------------------------------------------------------


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


# ---------------------------------------------------------------------------
# work counts (formulas)
# ---------------------------------------------------------------------------


_MATMUL = {"m": (1, 4096), "k": (1, 4096), "n": (1, 4096)}


@formula("2*m*k*n", sample=_MATMUL, m="m int>=1", k="k int>=1", n="n int>=1")
def matmul_flops(m, k, n):
    """FLOPs of an ``(m x k) @ (k x n)`` product: ``2 m k n`` (one multiply and one add per term).

    With ``m k = N`` weights and ``n = B`` columns this is the ``2 N B`` of a
    batched decode step. Chapter 8.
    """
    return 2.0 * m * k * n


@formula(
    "(m*k + k*n + m*n)*b",
    sample={**_MATMUL, "bytes_per_element": (1, 8, "int")},
    m="m int>=1",
    k="k int>=1",
    n="n int>=1",
    bytes_per_element="b >0",
)
def matmul_min_bytes(m, k, n, bytes_per_element):
    """Least bytes an ``(m x k) @ (k x n)`` product moves to and from memory: ``(m k + k n + m n) b``.

    Each input is read once and the output written once (perfect reuse on
    chip). For a decode step the ``m k`` weight term dominates: with
    ``n = B`` small, ``(k + m) B`` activation elements are a rounding error.
    Chapter 8.
    """
    return (m * k + k * n + m * n) * bytes_per_element


def toy_decode_shape(n_params) -> tuple[int, int]:
    """The square-ish ``(rows, cols)`` weight matrix holding about ``n_params`` weights.

    ``cols = round(sqrt(N))`` and ``rows = round(N / cols)``; the product is
    within one row of ``N``. Chapter 8 uses it for the toy decode step.
    """
    n = check("n_params", n_params, "int>=4", scalar=True)
    cols = max(2, int(round(math.sqrt(n))))
    rows = max(2, int(round(n / cols)))
    return rows, cols


def _last_level_cache_bytes() -> int | None:
    """Size of the CPU's largest cache in bytes (Linux sysfs), or None when it cannot be read."""
    best = None
    base = "/sys/devices/system/cpu/cpu0/cache"
    try:
        entries = os.listdir(base)
    except OSError:
        return None
    for entry in entries:
        path = os.path.join(base, entry, "size")
        try:
            with open(path, encoding="ascii") as fh:
                text = fh.read().strip()
        except OSError:
            continue
        scale = {"K": 2**10, "M": 2**20, "G": 2**30}.get(text[-1:].upper(), 1)
        digits = text[:-1] if scale != 1 else text
        if digits.isdigit():
            size = int(digits) * scale
            best = size if best is None else max(best, size)
    return best


#: Smallest array the bandwidth and decode measurements stream (64 MiB).
MIN_STREAM_BYTES = 64 * 2**20


def default_stream_bytes(backend=None) -> int:
    """Bytes to stream so that caches cannot hold the data: ``max(64 MiB, 2 x last-level cache)`` on a CPU.

    Streaming an array twice the cache size in a loop leaves (with LRU
    replacement) nothing useful in the cache. On a GPU, 1 GiB (several times
    any L2).
    """
    be = _backend(backend)
    if be.device == "cuda":
        return 2**30
    llc = _last_level_cache_bytes() or 0
    return int(max(MIN_STREAM_BYTES, 2 * llc))


# ---------------------------------------------------------------------------
# measurements
# ---------------------------------------------------------------------------


def _elements(name, n_bytes, dtype):
    nb = check(name, n_bytes, "int>=1024", scalar=True)
    return max(1, nb // DTYPE_BYTES[dtype])


def measure_copy_bandwidth(n_bytes=None, *, dtype="float32", budget_s=0.4, backend=None) -> Measurement:
    """Achieved bandwidth of copying an ``n_bytes`` array into another one.

    ``bytes_moved = 2 n`` (read the source, write the destination), the
    STREAM convention. A CPU also reads each destination line before it
    overwrites it, so the true traffic is nearer ``3 n``: this figure is a
    conservative (low) estimate of the bandwidth.
    """
    be = _backend(backend)
    be.check_dtype(dtype)
    n_bytes = default_stream_bytes(be) if n_bytes is None else n_bytes
    n = _elements("n_bytes", n_bytes, dtype)
    src = be.full(n, 1.0, dtype)
    dst = be.empty_like(src)
    t = time_call(lambda: be.copy(dst, src), budget_s=budget_s, sync=be.sync)
    nbytes = n * DTYPE_BYTES[dtype]
    return Measurement("copy", be.description, 0.0, 2.0 * nbytes, t, {"n_bytes": nbytes, "dtype": dtype})


@formula("3*beta_copy/2", counted_bytes_per_s="beta_copy >=0")
def copy_rate_with_write_allocate_bytes_per_s(counted_bytes_per_s):
    """A copy's real memory traffic rate when its destination is read before it is written: ``3/2`` of the counted rate.

    STREAM charges a copy of ``n`` bytes ``2n`` (one read, one write), but a
    CPU without non-temporal stores first reads each destination cache line
    it is about to overwrite ("write allocate"), so ``3n`` bytes really
    cross the memory bus. Chapter 8.
    """
    return 1.5 * counted_bytes_per_s


@formula(
    "(T_meas - T_dev)/(T_meas - T_bound)",
    sample={"measured_s": (2.0, 3.0), "device_s": (1.0, 2.0), "bound_s": (0.1, 0.9)},
    measured_s="T_meas >0",
    device_s="T_dev >0",
    bound_s="T_bound >0",
)
def host_share_of_gap(measured_s, device_s, bound_s):
    """Share of the distance from a bound to a measurement that lies outside the device's own work.

    ``(T_meas - T_dev) / (T_meas - T_bound)``: the measured time per step
    ``T_meas``, the device-side time of the step ``T_dev`` (its own events)
    and the roofline bound ``T_bound``. Requires ``T_meas > T_bound``. The
    Qwen3-8B run: (26.5 - 10.7) / (26.5 - 8.62) = 88 %. Chapter 8.
    """
    if np.any(measured_s <= bound_s):
        raise ValueError(
            f"measured_s must exceed bound_s (there is no gap to share), got {measured_s!r} <= {bound_s!r}"
        )
    return (measured_s - device_s) / (measured_s - bound_s)


def measure_read_bandwidth(n_bytes=None, *, dtype="float32", budget_s=0.4, backend=None) -> Measurement:
    """Achieved bandwidth of summing an ``n_bytes`` array: ``bytes_moved = n`` (one read, no write).

    The second, independent estimate of memory bandwidth: a reduction only
    reads, so it avoids the write traffic that makes a copy's figure
    conservative. ``flops`` is one add per element.
    """
    be = _backend(backend)
    be.check_dtype(dtype)
    n_bytes = default_stream_bytes(be) if n_bytes is None else n_bytes
    n = _elements("n_bytes", n_bytes, dtype)
    a = be.full(n, 1.0, dtype)
    t = time_call(lambda: be.reduce(a), budget_s=budget_s, sync=be.sync)
    nbytes = n * DTYPE_BYTES[dtype]
    return Measurement(
        "read", be.description, float(n), float(nbytes), t, {"n_bytes": nbytes, "dtype": dtype}
    )


def measure_gemm(n=None, *, dtype="float32", budget_s=0.6, backend=None) -> Measurement:
    """Achieved rate of one square ``(n x n) @ (n x n)`` matrix product: ``flops = 2 n^3``.

    Default ``n``: 1024 on a CPU (a tenth of a second on a slow laptop core),
    8192 on a GPU. A square product has intensity ``2 n / (3 b)`` FLOP/B
    (341 FLOP/B for float32 at ``n = 2048``), above the ridge point of most
    machines, so it measures the compute ceiling.
    """
    be = _backend(backend)
    be.check_dtype(dtype)
    size = (8192 if be.device == "cuda" else 1024) if n is None else check("n", n, "int>=2", scalar=True)
    a = be.full((size, size), 0.5, dtype)
    b = be.full((size, size), 0.5, dtype)
    out = be.full((size, size), 0.0, dtype)
    t = time_call(lambda: be.matmul(a, b, out=out), budget_s=budget_s, sync=be.sync)
    return Measurement(
        "gemm",
        be.description,
        matmul_flops(size, size, size),
        matmul_min_bytes(size, size, size, DTYPE_BYTES[dtype]),
        t,
        {"n": size, "dtype": dtype},
    )


class _DecodeSetup:
    """The weight matrix of a toy decode step, allocated once, and the timed step built on it."""

    def __init__(self, be: Backend, n_params, dtype):
        self.be = be
        self.dtype = be.check_dtype(dtype)
        self.rows, self.cols = toy_decode_shape(n_params)
        self.w = be.full((self.rows, self.cols), 0.5, dtype)

    def step(self, batch, pieces=1):
        """``(fn, params)``: one step at ``batch`` columns, issued as ``pieces`` calls on row blocks."""
        be, rows, cols = self.be, self.rows, self.cols
        bsz = check("batch", batch, "int>=1", scalar=True)
        k = check("pieces", pieces, "int>=1", scalar=True)
        if k > rows:
            raise ValueError(f"pieces must be <= the weight matrix's {rows} rows, got {pieces!r}")
        x = be.full((cols, bsz), 0.5, self.dtype) if bsz > 1 else be.full(cols, 0.5, self.dtype)
        y = be.full((rows, bsz), 0.0, self.dtype) if bsz > 1 else be.full(rows, 0.0, self.dtype)
        if k == 1:

            def fn():
                be.matmul(self.w, x, out=y)
        else:
            edges = [round(i * rows / k) for i in range(k + 1)]
            blocks = [(be.rows(self.w, a, b_), be.rows(y, a, b_)) for a, b_ in zip(edges[:-1], edges[1:])]

            def fn():
                for wb, yb in blocks:
                    be.matmul(wb, x, out=yb)

        params = {
            "n_params": rows * cols,
            "rows": rows,
            "cols": cols,
            "batch": bsz,
            "dtype": self.dtype,
            "pieces": k,
            "bytes_per_weight": DTYPE_BYTES[self.dtype],
        }
        return fn, params

    def measurement(self, timing, params):
        rows, cols, bsz = self.rows, self.cols, params["batch"]
        return Measurement(
            "decode",
            self.be.description,
            matmul_flops(rows, cols, bsz),
            matmul_min_bytes(rows, cols, bsz, DTYPE_BYTES[self.dtype]),
            timing,
            params,
        )

    def run(self, variants, budget_s):
        """Time every ``(batch, pieces)`` variant, interleaved, within ``budget_s`` in total."""
        built = [self.step(b_, k) for b_, k in variants]
        timings = time_interleaved([fn for fn, _ in built], budget_s=budget_s, sync=self.be.sync)
        return [self.measurement(t, prm) for t, (_, prm) in zip(timings, built)]


def _default_decode_params(be: Backend, dtype: str) -> int:
    return max(1024, default_stream_bytes(be) // DTYPE_BYTES[dtype])


def measure_decode_step(
    n_params=None, batch=1, *, dtype="float32", budget_s=0.4, backend=None
) -> Measurement:
    """Time a toy decode step: a ``rows x cols`` weight matrix (``~n_params`` weights) times ``batch`` columns.

    ``batch = 1`` is a matrix-vector product (GEMV): every weight is read
    once and used for one multiply-add, like one token of a dense model at
    batch 1. ``flops = 2 N B``; ``bytes_moved`` = weights plus activations
    (:func:`matmul_min_bytes`). Default ``n_params``: enough weights to fill
    :func:`default_stream_bytes`, so the weights cannot sit in a cache.
    """
    be = _backend(backend)
    be.check_dtype(dtype)
    n = (
        _default_decode_params(be, dtype)
        if n_params is None
        else check("n_params", n_params, "int>=4", scalar=True)
    )
    return _DecodeSetup(be, n, dtype).run([(batch, 1)], check("budget_s", budget_s, ">0"))[0]


def _counts(name: str, values) -> list[int]:
    """A non-empty sequence of whole numbers >= 1 (batch sizes, numbers of calls)."""
    if isinstance(values, (str, bytes)) or not isinstance(values, Sequence) or len(values) == 0:
        raise ValueError(f"{name} must be a non-empty sequence of whole numbers >= 1, got {values!r}")
    return [check(name, v, "int>=1", scalar=True) for v in values]


def _decode_runs(plan, n_params, dtype, budget_s, backend) -> list[Measurement]:
    """Time the toy decode step for each (batch, calls) in ``plan`` in interleaved rounds."""
    be = _backend(backend)
    be.check_dtype(dtype)
    total = check("budget_s", budget_s, ">0")
    n = (
        _default_decode_params(be, dtype)
        if n_params is None
        else check("n_params", n_params, "int>=4", scalar=True)
    )
    return _DecodeSetup(be, n, dtype).run(plan, total)


def measure_decode_sweep(
    batches: Sequence[int], n_params=None, *, dtype="float32", budget_s=2.0, backend=None
) -> list[Measurement]:
    """The toy decode step at every batch size in ``batches``, sharing one weight matrix.

    ``budget_s`` is the total; the batches are timed in interleaved rounds
    (:func:`time_interleaved`), so a slow spell of the machine hits them all.
    """
    return _decode_runs([(b_, 1) for b_ in _counts("batches", batches)], n_params, dtype, budget_s, backend)


def measure_call_overhead(*, size=8, calls=2000, op="sum", budget_s=0.3, backend=None) -> Measurement:
    """Cost of one tiny call, timed ``calls`` times in a loop: a sum of ``size`` numbers, or (``op="matmul"``)
    a ``size x size`` matrix times a vector.

    The work is negligible, so the per-call time is what the Python
    interpreter, the library's dispatch and (on a GPU) the kernel launch
    cost: the analogue of the per-kernel launch overhead of an eager
    framework. Use the same ``op`` as the experiment it explains
    (:func:`measure_split_read` uses sums).
    """
    be = _backend(backend)
    s = check("size", size, "int>=1", scalar=True)
    c = check("calls", calls, "int>=1", scalar=True)
    choice("op", op, {"sum", "matmul"})
    if op == "sum":
        a = be.full(s, 0.5, "float32")
        fn, flops, nbytes = (lambda: be.reduce(a)), float(s), float(4 * s)
    else:
        m = be.full((s, s), 0.5, "float32")
        x = be.full(s, 0.5, "float32")
        y = be.full(s, 0.0, "float32")
        fn, flops, nbytes = (
            (lambda: be.matmul(m, x, out=y)),
            matmul_flops(s, s, 1),
            matmul_min_bytes(s, s, 1, 4),
        )
    t = time_call(fn, budget_s=budget_s, inner=c, sync=be.sync)
    return Measurement("call", be.description, flops, nbytes, t, {"size": s, "calls": c, "op": op})


def measure_split_read(
    pieces: Sequence[int], n_bytes=None, *, dtype="float32", budget_s=1.0, backend=None
) -> list[Measurement]:
    """Sum one ``n_bytes`` array as ``k`` sums over ``k`` equal chunks, for each ``k`` in ``pieces``.

    The bytes read never change; only the number of calls does, so the
    extra time over the smallest ``k`` is the per-call cost times the extra
    calls. On a CPU numpy's sums run on one thread at every chunk size, so
    no other condition (such as a BLAS library switching its thread count
    with the problem size) changes with ``k``. Variants are timed in
    interleaved rounds within ``budget_s`` in total.
    """
    be = _backend(backend)
    be.check_dtype(dtype)
    ks = _counts("pieces", pieces)
    total = check("budget_s", budget_s, ">0")
    n_bytes = default_stream_bytes(be) if n_bytes is None else n_bytes
    n = _elements("n_bytes", n_bytes, dtype)
    if max(ks) > n:
        raise ValueError(f"pieces must be <= the array's {n} elements, got {max(ks)}")
    a = be.full(n, 1.0, dtype)
    fns = []
    for k in ks:
        edges = [round(i * n / k) for i in range(k + 1)]
        chunks = [be.rows(a, lo, hi) for lo, hi in zip(edges[:-1], edges[1:])]

        def fn(chunks=chunks):
            for c in chunks:
                be.reduce(c)

        fns.append(fn)
    timings = time_interleaved(fns, budget_s=total, sync=be.sync)
    nbytes = n * DTYPE_BYTES[dtype]
    return [
        Measurement(
            "split-read",
            be.description,
            float(n),
            float(nbytes),
            t,
            {"n_bytes": nbytes, "dtype": dtype, "pieces": k},
        )
        for k, t in zip(ks, timings)
    ]


# ---------------------------------------------------------------------------
# the empirical roofline: ceilings, predictions, utilisation
# ---------------------------------------------------------------------------


@dataclass(frozen=True)
class Ceilings:
    """A machine's achieved ceilings: best matrix rate (FLOP/s) and best memory bandwidth (B/s).

    ``source`` says how they were obtained. Used in place of datasheet peaks
    in the roofline functions.
    """

    flops_per_s: float
    bandwidth_bytes_per_s: float
    dtype: str
    backend: str
    source: str

    def __post_init__(self):
        object.__setattr__(self, "flops_per_s", check("flops_per_s", self.flops_per_s, ">0"))
        object.__setattr__(
            self, "bandwidth_bytes_per_s", check("bandwidth_bytes_per_s", self.bandwidth_bytes_per_s, ">0")
        )

    @property
    def ridge_flops_per_byte(self) -> float:
        """Ridge point of this machine: :func:`aiinfra.roofline.ridge_point_flops_per_byte`."""
        return roofline.ridge_point_flops_per_byte(self.flops_per_s, self.bandwidth_bytes_per_s)

    @classmethod
    def from_measurements(cls, gemm: Measurement, *bandwidth: Measurement, source: str = "") -> Ceilings:
        """The GEMM's rate and the best of the bandwidth measurements (copy, read...)."""
        if not isinstance(gemm, Measurement) or gemm.kind != "gemm":
            raise ValueError("gemm must be a Measurement of kind 'gemm' (from measure_gemm)")
        if not bandwidth or not all(isinstance(m, Measurement) and m.bytes_moved > 0 for m in bandwidth):
            raise ValueError("bandwidth must be one or more Measurements that move bytes (copy, read)")
        best = max(bandwidth, key=lambda m: m.bytes_per_s)
        text = source or (
            f"measured: {gemm.params['dtype']} GEMM n={gemm.params['n']}; best of "
            + ", ".join(m.kind for m in bandwidth)
            + f" (best: {best.kind})"
        )
        return cls(gemm.flops_per_s, best.bytes_per_s, gemm.params["dtype"], gemm.backend, text)


def measure_ceilings(*, dtype="float32", budget_s=1.2, backend=None):
    """Measure copy and read bandwidth and a GEMM, and return ``(Ceilings, [copy, read, gemm])``.

    ``budget_s`` is split 1:1:2 between copy, read and GEMM.
    """
    be = _backend(backend)
    be.check_dtype(dtype)
    total = check("budget_s", budget_s, ">0")
    copy = measure_copy_bandwidth(dtype=dtype, budget_s=total / 4, backend=be)
    read = measure_read_bandwidth(dtype=dtype, budget_s=total / 4, backend=be)
    gemm = measure_gemm(dtype=dtype, budget_s=total / 2, backend=be)
    return Ceilings.from_measurements(gemm, copy, read), [copy, read, gemm]


@dataclass(frozen=True)
class MachineRecord:
    """The build machine's measurements, taken once and quoted by every page of chapter 8.

    Each page used to measure for itself, so the same quantity (one tiny call, the bandwidth,
    the ridge point) came out different from page to page. A page now reads this one record
    (:func:`machine_record`) and computes what it quotes from it.
    """

    backend: str  # the backend's description (library, device, threads)
    device: str  # "cpu" or "cuda"
    copy: Measurement
    read: Measurement
    gemms: tuple  # Measurements of kind "gemm", in growing size
    tiny_call: Measurement

    @property
    def best_gemm(self) -> Measurement:
        return max(self.gemms, key=lambda g: g.flops_per_s)

    @property
    def ceilings(self) -> Ceilings:
        """Best GEMM rate and the better of the copy and read bandwidths."""
        return Ceilings.from_measurements(self.best_gemm, self.copy, self.read)

    def to_json(self) -> str:
        return json.dumps(asdict(self), sort_keys=True, indent=1)

    @classmethod
    def from_json(cls, text: str) -> MachineRecord:
        data = json.loads(text)

        def m(d: dict) -> Measurement:
            t = d["timing"]
            timing = Timing(tuple(t["samples_s"]), t["warmup"], t["first_s"], t["inner"])
            return Measurement(d["kind"], d["backend"], d["flops"], d["bytes_moved"], timing, d["params"])

        return cls(
            data["backend"],
            data["device"],
            m(data["copy"]),
            m(data["read"]),
            tuple(m(g) for g in data["gemms"]),
            m(data["tiny_call"]),
        )


def _measure_machine(*, backend=None) -> MachineRecord:
    """Measure the record of chapter 8: copy and read bandwidth, GEMMs at growing sizes, one tiny call.

    About 2 s: 0.3 s per bandwidth, 0.25 s per GEMM size (256, 512, 1024 on a CPU; 1024, 4096,
    8192 on a GPU), 0.3 s for the tiny call (a sum of 8 numbers, 2,000 calls per sample).
    """
    be = _backend(backend)
    sizes = (1024, 4096, 8192) if be.device == "cuda" else (256, 512, 1024)
    return MachineRecord(
        be.description,
        be.device,
        measure_copy_bandwidth(budget_s=0.3, backend=be),
        measure_read_bandwidth(budget_s=0.3, backend=be),
        tuple(measure_gemm(n, budget_s=0.25, backend=be) for n in sizes),
        measure_call_overhead(size=8, calls=2000, op="sum", budget_s=0.3, backend=be),
    )


#: Environment variable naming the file that holds the build's :class:`MachineRecord`.
RECORD_ENV = "AIINFRA_MACHINE_RECORD"
_RECORD: dict = {}


def machine_record(backend=None) -> MachineRecord:
    """The build machine's record: measured on the first call, then the same record every time.

    With :data:`RECORD_ENV` set (``make book`` sets it to a file inside the execution cache, so
    the record lives and dies with the cached outputs that quote it), the first page of a build
    to ask measures and writes the file under a lock, and every other page, in any process,
    reads it. Without it (a reader's own kernel), the record is kept for the process.
    """
    path = os.environ.get(RECORD_ENV, "").strip()
    if not path:
        if "record" not in _RECORD:
            _RECORD["record"] = _measure_machine(backend=backend)
        return _RECORD["record"]
    import fcntl  # POSIX only, and needed only by the book build

    file = os.path.abspath(path)
    os.makedirs(os.path.dirname(file), exist_ok=True)
    with open(file + ".lock", "w") as lock:
        fcntl.flock(lock, fcntl.LOCK_EX)
        if os.path.isfile(file):
            with open(file, encoding="utf-8") as f:
                return MachineRecord.from_json(f.read())
        record = _measure_machine(backend=backend)
        with open(file + ".tmp", "w", encoding="utf-8") as f:
            f.write(record.to_json())
        os.replace(file + ".tmp", file)
        return record


def _ceilings(c) -> Ceilings:
    if not isinstance(c, Ceilings):
        raise ValueError(f"ceilings must be a Ceilings, got {type(c).__name__}")
    return c


def predict_time_s(flops, bytes_moved, ceilings: Ceilings):
    """Roofline prediction of a piece of work on a measured machine.

    :func:`aiinfra.roofline.step_time_overlapped_s` with the measured
    ceilings as ``Pi`` and ``beta``: ``max(F / Pi, R / beta)``.
    """
    c = _ceilings(ceilings)
    return roofline.step_time_overlapped_s(flops, bytes_moved, c.flops_per_s, c.bandwidth_bytes_per_s)


def predict_decode_step_s(n_params, batch, bytes_per_weight, ceilings: Ceilings):
    """Predicted time of the toy decode step with ``n_params`` weights and ``batch`` columns.

    Shapes from :func:`toy_decode_shape`; FLOPs and bytes from
    :func:`matmul_flops` and :func:`matmul_min_bytes`; time from
    :func:`predict_time_s`. ``batch`` may be an array (a sweep).
    """
    rows, cols = toy_decode_shape(n_params)
    bsz = check("batch", batch, "int>=1")
    bpw = check("bytes_per_weight", bytes_per_weight, ">0")
    return predict_time_s(matmul_flops(rows, cols, bsz), matmul_min_bytes(rows, cols, bsz, bpw), ceilings)


def predicted_knee_batch(bytes_per_weight, ceilings: Ceilings) -> float:
    """Batch at which the toy decode step turns compute-bound: ``B* = b_W Pi / (2 beta)``.

    :func:`aiinfra.decode.critical_batch_size` with the measured ceilings
    (activations ignored, as there).
    """
    c = _ceilings(ceilings)
    return decode.critical_batch_size(bytes_per_weight, c.flops_per_s, c.bandwidth_bytes_per_s)


def _sweep(batches, times_s):
    bs = np.asarray(check("batches", batches, "int>=1"), dtype=float).ravel()
    ts = np.asarray(check("times_s", times_s, ">0"), dtype=float).ravel()
    if bs.size < 2 or bs.size != ts.size:
        raise ValueError(f"batches and times_s must have the same length >= 2, got {bs.size} and {ts.size}")
    if np.any(np.diff(bs) <= 0):
        raise ValueError(f"batches must be strictly increasing, got {batches!r}")
    return bs, ts


def throughput_gain(batches, times_s):
    """Tokens per second at each batch relative to the first: ``(B / T_B) / (B_0 / T_0)`` (array)."""
    bs, ts = _sweep(batches, times_s)
    return (bs / ts) / (bs[0] / ts[0])


def measured_knee_batch(batches, times_s) -> float:
    """Batch at which a measured sweep turns compute-bound, read off as ``T_0 max_B(B / T_B)``.

    In the two-regime model ``T(B) = max(a, c B)`` the throughput ``B / T``
    rises until the knee ``B* = a / c`` and then stays at ``1 / c``; so the
    knee equals the first point's time ``a = T_0`` (at ``B_0 <= B*``) times
    the saturated throughput. Needs a sweep that starts below the knee and
    reaches well past it; the result is never below ``B_0``.
    """
    bs, ts = _sweep(batches, times_s)
    return float(max(bs[0], ts[0] * np.max(bs / ts)))


def _clamp_peak(achieved, ceiling):
    return max(float(ceiling), float(achieved))


def mbu_against(m: Measurement, ceilings: Ceilings) -> float:
    """MBU of a measurement against the machine's measured bandwidth: :func:`aiinfra.roofline.mbu`.

    A measured ceiling is an achieved rate, not a physical limit; when a
    workload beats it, the ceiling was too low and is raised to that
    workload's rate (so the result is 1).
    """
    c = _ceilings(ceilings)
    if not isinstance(m, Measurement):
        raise ValueError(f"m must be a Measurement, got {type(m).__name__}")
    return roofline.mbu(m.bytes_moved, _clamp_peak(m.bytes_per_s, c.bandwidth_bytes_per_s), m.seconds)


def mfu_against(m: Measurement, ceilings: Ceilings) -> float:
    """MFU of a measurement against the machine's measured GEMM rate: :func:`aiinfra.roofline.mfu`.

    Raised to the workload's own rate if it beats the ceiling, as in :func:`mbu_against`.
    """
    c = _ceilings(ceilings)
    if not isinstance(m, Measurement):
        raise ValueError(f"m must be a Measurement, got {type(m).__name__}")
    return roofline.mfu(m.flops, _clamp_peak(m.flops_per_s, c.flops_per_s), m.seconds)


@formula(
    "T_bound + k_calls*t_call",
    sample={"n_calls": (1, 5000)},
    bound_s="T_bound >=0",
    n_calls="k_calls int>=0",
    per_call_s="t_call >=0",
)
def step_time_with_calls_s(bound_s, n_calls, per_call_s):
    """Step time when each of ``k`` calls adds a fixed cost the device cannot hide: ``T_bound + k t_call``.

    A model of eager execution on a host-bound step: the roofline time of the
    work plus one launch (dispatch, driver, logging) cost per call. It holds
    when the host is the bottleneck; a fast GPU running behind a queue of
    launches can hide part of it. Chapter 8.
    """
    return bound_s + n_calls * per_call_s


def fit_per_call_s(n_calls, times_s) -> float:
    """Least-squares slope of time against number of calls: the extra seconds each call adds.

    Fits ``T = T_1 + k t_call`` to a split-step sweep
    (:func:`measure_split_read`); floored at 0 (noise can tilt a flat
    sweep downwards).
    """
    ks, ts = _sweep(n_calls, times_s)
    slope = np.polyfit(ks, ts, 1)[0]
    return float(max(slope, 0.0))


@formula("Q/T", amount="Q >=0", elapsed_s="T >0")
def achieved_rate_per_s(amount, elapsed_s):
    """What a timing implies: ``amount / elapsed_s`` (bytes -> B/s, FLOPs -> FLOP/s).

    The first sanity check of any measurement: a rate above the datasheet
    peak means the timing is wrong (an asynchronous call not waited for, a
    cached result, a miscounted size), not that the machine is fast.
    Chapter 8.
    """
    return amount / elapsed_s


_CPU = {"fma_units": (1, 4), "simd_bits": (128, 512), "bits_per_element": (16, 64)}


@formula(
    "2*n_FMA*w_SIMD/w_elem",
    sample=_CPU,
    fma_units="n_FMA int>=1",
    simd_bits="w_SIMD int>=1",
    bits_per_element="w_elem int>=1",
)
def cpu_flops_per_cycle(fma_units, simd_bits, bits_per_element):
    """Peak FLOPs one CPU core can finish per clock cycle: ``2 n_FMA w_SIMD / w_elem``.

    Each fused multiply-add (FMA) unit takes one ``simd_bits``-wide vector
    per cycle, i.e. ``simd_bits / bits_per_element`` lanes, and an FMA counts
    as 2 FLOPs. Two 256-bit FMA units in float32: ``2 x 2 x 8 = 32``.
    Chapter 8.
    """
    return 2.0 * fma_units * simd_bits / bits_per_element


@formula(
    "n_cores*f_clk*2*n_FMA*w_SIMD/w_elem",
    sample={**_CPU, "cores": (1, 128)},
    cores="n_cores int>=1",
    clock_hz="f_clk >0",
    fma_units="n_FMA int>=1",
    simd_bits="w_SIMD int>=1",
    bits_per_element="w_elem int>=1",
)
def cpu_peak_flops_per_s(cores, clock_hz, fma_units, simd_bits, bits_per_element):
    """Datasheet-style peak of a CPU: ``cores x clock x`` :func:`cpu_flops_per_cycle`.

    Assumes every core runs its FMA units every cycle at ``clock_hz`` (real
    all-core clocks under wide vector load are often lower). Chapter 8.
    """
    return cores * clock_hz * cpu_flops_per_cycle(fma_units, simd_bits, bits_per_element)
