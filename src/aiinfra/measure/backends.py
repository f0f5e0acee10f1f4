"""Backends: the array library a measurement runs on, numpy on the CPU or PyTorch on a CUDA GPU (chapter 8).

:func:`get_backend` uses PyTorch on a CUDA GPU when ``torch`` is importable and a GPU is
present, and numpy on the CPU otherwise; every result carries the backend's description, and
chapters print it. Nothing is ever installed.
"""

from __future__ import annotations

import importlib.util
import os
import platform

import numpy as np

from aiinfra.formula import choice

#: Bytes per element of the dtypes the measurements use.
DTYPE_BYTES = {"float64": 8, "float32": 4, "float16": 2, "bfloat16": 2}


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


def resolve(backend) -> Backend:
    """``backend``, or :func:`get_backend`'s default when it is None; anything else is a ``ValueError``."""
    if backend is None:
        return get_backend()
    if not isinstance(backend, Backend):
        raise ValueError(f"backend must be a Backend from get_backend(), got {type(backend).__name__}")
    return backend
