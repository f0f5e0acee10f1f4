"""Roofline bounds: how long work must take on a device, and how close a run came.

A piece of work does ``F`` floating-point operations and moves ``R`` bytes
through one interface. A device offers a peak compute rate ``Pi`` (FLOP/s,
dense) and a peak bandwidth ``beta`` (B/s). Dividing each demand by the rate
that serves it gives two lower bounds on time (Williams, Waterman and
Patterson, "Roofline", CACM 2009):

    T_compute = F / (eta_F * Pi)        T_memory = R / (eta_B * beta)

``eta_F`` and ``eta_B`` are the achieved fractions of peak; at 1 (the default)
the bounds are the hardware's physical limits. When the two streams overlap
(data for the next tile arrives while this one is computed), the slower one
sets the step time, ``max(T_compute, T_memory)``; when they run one after the
other, the times add. Arithmetic intensity ``I = F / R`` compared with the
ridge point ``Pi / beta`` says which bound wins.

Utilisation compares a measured time ``T`` with the peak-rate bound:
MFU = F / (Pi T) and MBU = R / (beta T). Both are at most 1 when ``F`` and
``R`` are work the run really had to do.

All quantities are SI: FLOP, bytes, seconds, FLOP/s and B/s. Every function
takes numpy arrays as well as scalars, so a figure can sweep any argument.

Serves: Chapters 1 (four metrics, one model step), 2 (one request by hand) and 4 (the decode roofline).
"""
from __future__ import annotations

import numpy as np
import sympy as sp

from . import _check
from .symbols import F, Pi, R, T, beta, eta_B, eta_F, twin

__all__ = [
    "compute_time_s",
    "memory_time_s",
    "step_time_overlapped_s",
    "step_time_serial_s",
    "arithmetic_intensity_flops_per_byte",
    "ridge_point_flops_per_byte",
    "attainable_flops_per_s",
    "bound_label",
    "mfu",
    "mbu",
    "MEMORY_BOUND",
    "COMPUTE_BOUND",
]

MEMORY_BOUND = "memory-bound"
COMPUTE_BOUND = "compute-bound"

I_sym = sp.Symbol("I", positive=True)

_EFF = (0.05, 1.0, "float")


def _out(x):
    arr = np.asarray(x, dtype=float)
    return float(arr) if arr.ndim == 0 else arr


@twin(F / (eta_F * Pi), domains={"efficiency": _EFF}, flops=F, flops_per_s=Pi, efficiency=eta_F)
def compute_time_s(flops, flops_per_s, efficiency=1.0):
    """Lower bound on the time to execute ``flops``: ``F / (eta_F * Pi)``.

    ``flops_per_s`` is the dense peak for the precision used; ``efficiency``
    (0, 1] is the achieved fraction of that peak (1 gives the physical limit).
    """
    f = _check.non_negative("flops", flops)
    pi = _check.positive("flops_per_s", flops_per_s)
    eta = _check.fraction("efficiency", efficiency)
    return _out(np.asarray(f) / (np.asarray(eta) * np.asarray(pi)))


@twin(R / (eta_B * beta), domains={"efficiency": _EFF}, bytes_moved=R, bandwidth_bytes_per_s=beta, efficiency=eta_B)
def memory_time_s(bytes_moved, bandwidth_bytes_per_s, efficiency=1.0):
    """Lower bound on the time to move ``bytes_moved`` bytes: ``R / (eta_B * beta)``.

    ``bandwidth_bytes_per_s`` is the peak of the interface the bytes cross
    (HBM for weights and KV, a link for a transfer); ``efficiency`` (0, 1] is
    the achieved fraction of it.
    """
    r = _check.non_negative("bytes_moved", bytes_moved)
    bw = _check.positive("bandwidth_bytes_per_s", bandwidth_bytes_per_s)
    eta = _check.fraction("efficiency", efficiency)
    return _out(np.asarray(r) / (np.asarray(eta) * np.asarray(bw)))


def _two_times(flops, bytes_moved, flops_per_s, bandwidth_bytes_per_s, eta_f, eta_b):
    """Validated compute and memory times as arrays, the efficiencies named as the caller names them."""
    ef = _check.fraction("eta_f", eta_f)
    eb = _check.fraction("eta_b", eta_b)
    tc = np.asarray(compute_time_s(flops, flops_per_s, ef))
    tm = np.asarray(memory_time_s(bytes_moved, bandwidth_bytes_per_s, eb))
    return tc, tm


@twin(
    sp.Max(F / (eta_F * Pi), R / (eta_B * beta)),
    domains={"eta_f": _EFF, "eta_b": _EFF},
    flops=F, bytes_moved=R, flops_per_s=Pi, bandwidth_bytes_per_s=beta, eta_f=eta_F, eta_b=eta_B,
)
def step_time_overlapped_s(flops, bytes_moved, flops_per_s, bandwidth_bytes_per_s, eta_f=1.0, eta_b=1.0):
    """Step time when reads and arithmetic overlap: ``max(F/(eta_F Pi), R/(eta_B beta))``.

    Assumes a steady pipeline in which every chunk is both read and computed,
    so the slower stream sets the pace. This is the usual roofline bound.
    """
    tc, tm = _two_times(flops, bytes_moved, flops_per_s, bandwidth_bytes_per_s, eta_f, eta_b)
    return _out(np.maximum(tc, tm))


@twin(
    F / (eta_F * Pi) + R / (eta_B * beta),
    domains={"eta_f": _EFF, "eta_b": _EFF},
    flops=F, bytes_moved=R, flops_per_s=Pi, bandwidth_bytes_per_s=beta, eta_f=eta_F, eta_b=eta_B,
)
def step_time_serial_s(flops, bytes_moved, flops_per_s, bandwidth_bytes_per_s, eta_f=1.0, eta_b=1.0):
    """Step time when reads and arithmetic cannot overlap: ``F/(eta_F Pi) + R/(eta_B beta)``.

    An upper companion to :func:`step_time_overlapped_s`; a real kernel lies
    between the two (at most a factor of 2 apart).
    """
    tc, tm = _two_times(flops, bytes_moved, flops_per_s, bandwidth_bytes_per_s, eta_f, eta_b)
    return _out(np.asarray(tc) + np.asarray(tm))


@twin(F / R, flops=F, bytes_moved=R)
def arithmetic_intensity_flops_per_byte(flops, bytes_moved):
    """Arithmetic intensity ``I = F / R``: FLOPs performed per byte moved."""
    f = _check.non_negative("flops", flops)
    r = _check.positive("bytes_moved", bytes_moved)
    return _out(np.asarray(f) / np.asarray(r))


@twin(Pi / beta, flops_per_s=Pi, bandwidth_bytes_per_s=beta)
def ridge_point_flops_per_byte(flops_per_s, bandwidth_bytes_per_s):
    """Ridge point ``Pi / beta``: the intensity where compute and memory time are equal.

    Work with ``I`` below it is memory-bound, above it compute-bound. Use the
    dense peak of the precision in question and the bandwidth of the
    interface the bytes cross (e.g. 989.4e12 / 3.352e12 = 295 FLOP/B for an
    H100 SXM with BF16 and HBM3).
    """
    pi = _check.positive("flops_per_s", flops_per_s)
    bw = _check.positive("bandwidth_bytes_per_s", bandwidth_bytes_per_s)
    return _out(np.asarray(pi) / np.asarray(bw))


@twin(sp.Min(Pi, I_sym * beta), intensity_flops_per_byte=I_sym, flops_per_s=Pi, bandwidth_bytes_per_s=beta)
def attainable_flops_per_s(intensity_flops_per_byte, flops_per_s, bandwidth_bytes_per_s):
    """The roofline itself: ``min(Pi, I * beta)``, the best rate work of intensity ``I`` can reach."""
    i = _check.non_negative("intensity_flops_per_byte", intensity_flops_per_byte)
    pi = _check.positive("flops_per_s", flops_per_s)
    bw = _check.positive("bandwidth_bytes_per_s", bandwidth_bytes_per_s)
    return _out(np.minimum(pi, np.asarray(i) * bw))


def bound_label(flops, bytes_moved, flops_per_s, bandwidth_bytes_per_s, eta_f=1.0, eta_b=1.0):
    """``"memory-bound"`` when the memory time exceeds the compute time, else ``"compute-bound"``.

    A tie (intensity exactly at the ridge point) is labelled compute-bound:
    from there on more reuse no longer shortens the step. Arrays give an
    array of labels.
    """
    tc, tm = _two_times(flops, bytes_moved, flops_per_s, bandwidth_bytes_per_s, eta_f, eta_b)
    labels = np.where(tm > tc, MEMORY_BOUND, COMPUTE_BOUND)
    return str(labels) if labels.ndim == 0 else labels


def _utilisation(name_work, work, name_rate, rate, elapsed_s):
    w = np.asarray(_check.non_negative(name_work, work))
    r = np.asarray(_check.positive(name_rate, rate))
    t = np.asarray(_check.positive("elapsed_s", elapsed_s))
    u = w / (r * t)
    if np.any(u > 1 + 1e-12):
        raise ValueError(
            f"elapsed_s is shorter than the peak-rate bound {name_work}/{name_rate}, "
            f"so the utilisation would exceed 1; got elapsed_s={elapsed_s!r}"
        )
    return _out(np.minimum(u, 1.0))


@twin(F / (Pi * T), domains={"flops": (0.5, 10, "float"), "flops_per_s": (10, 100, "float"), "elapsed_s": (1, 100, "float")},
      flops=F, flops_per_s=Pi, elapsed_s=T)
def mfu(flops, flops_per_s, elapsed_s):
    """Model FLOPs utilisation ``F / (Pi * T)``, in [0, 1].

    ``flops`` is the work the model requires (not what a kernel happened to
    execute), ``flops_per_s`` the dense peak, ``elapsed_s`` the measured time.
    Raises ``ValueError`` if ``elapsed_s`` is below ``F / Pi``: that would mean
    the peak or the FLOP count is wrong.
    """
    return _utilisation("flops", flops, "flops_per_s", flops_per_s, elapsed_s)


@twin(R / (beta * T), domains={"bytes_moved": (0.5, 10, "float"), "bandwidth_bytes_per_s": (10, 100, "float"), "elapsed_s": (1, 100, "float")},
      bytes_moved=R, bandwidth_bytes_per_s=beta, elapsed_s=T)
def mbu(bytes_moved, bandwidth_bytes_per_s, elapsed_s):
    """Memory bandwidth utilisation ``R / (beta * T)``, in [0, 1].

    ``bytes_moved`` is what the work must read or write at least once (e.g.
    weights plus KV for a decode step). Raises ``ValueError`` if ``elapsed_s``
    is below ``R / beta``.
    """
    return _utilisation("bytes_moved", bytes_moved, "bandwidth_bytes_per_s", bandwidth_bytes_per_s, elapsed_s)
