"""The empirical roofline: a machine's measured ceilings, the predictions made with them, utilisation (chapter 8).

Predictions call :mod:`aiinfra.roofline` (``step_time_overlapped_s``,
``ridge_point_flops_per_byte``, ``mbu``, ``mfu``) and
:func:`aiinfra.decode.critical_batch_size`, with the machine's *measured* ceilings
(:class:`Ceilings`) in place of datasheet peaks. The formulas that read a measurement
(an achieved rate, the cost per call, the host's share of a gap) live here too.

Everything is SI: bytes, FLOPs, seconds, B/s, FLOP/s. No function asserts or assumes a
particular speed.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from aiinfra import decode, roofline
from aiinfra.formula import check, formula

from .harness import Measurement
from .kernels import matmul_flops, matmul_min_bytes, toy_decode_shape


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


@formula(amount="Q >=0", elapsed_s="T >0")
def achieved_rate_per_s(amount, elapsed_s):
    """What a timing implies: ``amount / elapsed_s`` (bytes -> B/s, FLOPs -> FLOP/s).

    The first sanity check of any measurement: a rate above the datasheet
    peak means the timing is wrong (an asynchronous call not waited for, a
    cached result, a miscounted size), not that the machine is fast.
    Chapter 8.
    """
    return amount / elapsed_s


@formula(
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
