"""The work that is timed: bandwidth (copy, sum), GEMM, the toy decode step, tiny calls (chapter 8).

* achieved memory bandwidth, two ways: an array copy (STREAM convention: the bytes read plus
  the bytes written, ``2 n``; the cache line a CPU reads before overwriting it is not counted)
  and a reduction (a sum, which reads ``n`` bytes and writes almost nothing);
* achieved matrix-multiply rate (GEMM, ``2 m k n`` FLOPs);
* a toy decode step: one weight matrix of ``N`` parameters times one activation vector (a
  GEMV), the memory-bound core of generating a token; and the same step batched: the matrix
  times ``B`` columns (a skinny GEMM);
* the cost of one call: many tiny calls timed in a loop, the CPU analogue of the per-kernel
  launch cost of an eager framework; and the same read cut into ``k`` calls, which adds ``k``
  such costs to the same bytes.

Each kernel's work is counted by a formula (:func:`matmul_flops`, :func:`matmul_min_bytes`):
the minimum FLOPs and bytes, what the roofline charges, not hardware counters.
"""

from __future__ import annotations

import math
import os
from collections.abc import Sequence

from aiinfra.formula import check, choice, formula

from .backends import DTYPE_BYTES, Backend, resolve
from .harness import Measurement, time_call, time_interleaved


@formula(m="m int>=1", k="k int>=1", n="n int>=1")
def matmul_flops(m, k, n):
    """FLOPs of an ``(m x k) @ (k x n)`` product: ``2 m k n`` (one multiply and one add per term).

    With ``m k = N`` weights and ``n = B`` columns this is the ``2 N B`` of a
    batched decode step. Chapter 8.
    """
    return 2.0 * m * k * n


@formula(
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
    be = resolve(backend)
    if be.device == "cuda":
        return 2**30
    llc = _last_level_cache_bytes() or 0
    return int(max(MIN_STREAM_BYTES, 2 * llc))


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
    be = resolve(backend)
    be.check_dtype(dtype)
    n_bytes = default_stream_bytes(be) if n_bytes is None else n_bytes
    n = _elements("n_bytes", n_bytes, dtype)
    src = be.full(n, 1.0, dtype)
    dst = be.empty_like(src)
    t = time_call(lambda: be.copy(dst, src), budget_s=budget_s, sync=be.sync)
    nbytes = n * DTYPE_BYTES[dtype]
    return Measurement("copy", be.description, 0.0, 2.0 * nbytes, t, {"n_bytes": nbytes, "dtype": dtype})


@formula(counted_bytes_per_s="beta_copy >=0")
def copy_rate_with_write_allocate_bytes_per_s(counted_bytes_per_s):
    """A copy's real memory traffic rate when its destination is read before it is written: ``3/2`` of the counted rate.

    STREAM charges a copy of ``n`` bytes ``2n`` (one read, one write), but a
    CPU without non-temporal stores first reads each destination cache line
    it is about to overwrite ("write allocate"), so ``3n`` bytes really
    cross the memory bus. Chapter 8.
    """
    return 1.5 * counted_bytes_per_s


def measure_read_bandwidth(n_bytes=None, *, dtype="float32", budget_s=0.4, backend=None) -> Measurement:
    """Achieved bandwidth of summing an ``n_bytes`` array: ``bytes_moved = n`` (one read, no write).

    The second, independent estimate of memory bandwidth: a reduction only
    reads, so it avoids the write traffic that makes a copy's figure
    conservative. ``flops`` is one add per element.
    """
    be = resolve(backend)
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
    be = resolve(backend)
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
    be = resolve(backend)
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
    be = resolve(backend)
    be.check_dtype(dtype)
    total = check("budget_s", budget_s, ">0")
    n = (
        _default_decode_params(be, dtype)
        if n_params is None
        else check("n_params", n_params, "int>=4", scalar=True)
    )
    return _DecodeSetup(be, n, dtype).run(plan, total)


def _measure_decode_sweep(
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
    be = resolve(backend)
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
    be = resolve(backend)
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
