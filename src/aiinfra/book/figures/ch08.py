"""Figures of chapter 8, "Measuring against the limit": pure functions ``params -> (Figure, readouts)``.

* :func:`toy_decode_roofline`: the toy decode step measured at several batch
  sizes, against its roofline prediction on the same machine. Left: step
  time against batch (measured points, predicted ``max(F/Pi, R/beta)``
  curve, predicted knee). Right: the machine's empirical roofline with each
  batch placed at its arithmetic intensity and achieved FLOP/s. The slider
  picks one batch; the readouts give its prediction, measurement, MBU and MFU.
* :func:`calls_overhead`: the same work (a read, or a decode step) issued as
  ``k`` calls, time against ``k``, with the line ``T_base + k t_call``.

The measured numbers come in as plain tuples (the chapter measures, then
passes them through ``fixed=``), so the functions stay pure and testable with
synthetic data. Every predicted number comes from :mod:`aiinfra.measure`,
which calls :mod:`aiinfra.roofline`.
"""

from __future__ import annotations

from aiinfra.formula import check

from typing import Sequence

import numpy as np
from matplotlib.ticker import FuncFormatter, NullFormatter

from aiinfra import measure, roofline, units
from aiinfra.book.interactive import Slider, View, redraws
from . import FONT, PALETTE, new_figure, panel_title

__all__ = ["toy_decode_roofline", "toy_decode_sliders", "calls_overhead"]


def _series(name, values, minimum=None):
    if isinstance(values, (str, bytes)) or not isinstance(values, Sequence) or len(values) < 2:
        raise ValueError(f"{name} must be a sequence of at least 2 numbers, got {values!r}")
    arr = np.asarray(check(name, values, ">0"), dtype=float)
    if minimum is not None:
        check(name, values, f"int>={minimum}")
    return arr


def _sweep(batches, times_s, name="batches"):
    bs = _series(name, batches, minimum=1)
    ts = _series("times_s", times_s)
    if bs.size != ts.size:
        raise ValueError(f"times_s must have one time per entry of {name} ({bs.size}), got {ts.size}")
    if np.any(np.diff(bs) <= 0):
        raise ValueError(f"{name} must be strictly increasing, got {batches!r}")
    return bs, ts


_PLAIN = FuncFormatter(lambda v, _pos: f"{v:,.0f}" if v >= 1 else f"{v:.2g}")


def _ms(t):
    return units.fmt_time(t, digits=2, unit="ms")


@redraws("batch")
def toy_decode_roofline(
    batch=1,
    *,
    batches=(1, 2, 4, 8, 16, 32, 64),
    times_s=None,
    n_params=2**24,
    bytes_per_weight=4,
    flops_per_s=20e9,
    bandwidth_bytes_per_s=5e9,
    machine="this machine",
):
    """Measured toy decode sweep against its empirical roofline; ``batch`` is the highlighted point.

    ``times_s`` holds the measured median step time at each of ``batches``;
    ``flops_per_s`` and ``bandwidth_bytes_per_s`` are the machine's measured
    ceilings; ``n_params`` and ``bytes_per_weight`` describe the weight
    matrix. Readouts: predicted and measured time at ``batch``, their ratio,
    which bound the prediction says applies, MBU and MFU against the
    ceilings, and the predicted and measured knee batches.
    """
    if times_s is None:
        raise ValueError("times_s must be given: one measured step time per batch")
    bs, ts = _sweep(batches, times_s)
    n = check("n_params", n_params, "int>=4", scalar=True)
    bpw = check("bytes_per_weight", bytes_per_weight, ">0")
    ceil = measure.Ceilings(
        flops_per_s, bandwidth_bytes_per_s, dtype=f"{bpw:g}-byte", backend=machine, source="measured ceilings"
    )
    rows, cols = measure.toy_decode_shape(n)
    flops = measure.matmul_flops(rows, cols, bs.astype(int))
    nbytes = measure.matmul_min_bytes(rows, cols, bs.astype(int), bpw)
    grid = np.unique(np.round(np.geomspace(1, bs[-1] * 2, 60)).astype(int))
    pred_grid = measure.predict_decode_step_s(n, grid, bpw, ceil)
    pred = np.atleast_1d(measure.predict_decode_step_s(n, bs.astype(int), bpw, ceil))
    knee_pred = measure.predicted_knee_batch(bpw, ceil)
    knee_meas = measure.measured_knee_batch(bs, ts)

    fig, (ax, ax2) = new_figure(7.2, 3.5, ncols=2, left=0.09, right=0.98, bottom=0.15, top=0.9, wspace=0.32)
    ax.plot(grid, pred_grid / units.ms, color=PALETTE["blue"], lw=2, label="roofline prediction")
    ax.plot(bs, ts / units.ms, "o", color=PALETTE["orange"], ms=5, label="measured (median)")
    (ring1,) = ax.plot([], [], "o", mfc="none", mec=PALETTE["red"], ms=13, mew=2)
    ax.axvline(knee_pred, color=PALETTE["grey"], ls="--", lw=1)
    ax.annotate(
        f"predicted knee\nB*={knee_pred:.1f}",
        (knee_pred, 0.97),
        xycoords=("data", "axes fraction"),
        xytext=(4, -2),
        textcoords="offset points",
        fontsize=FONT["small"],
        color="#555555",
        va="top",
    )
    ax.set_xscale("log", base=2)
    ax.xaxis.set_major_formatter(_PLAIN)
    ax.set_yscale("log")
    lo = min(ts.min(), pred_grid.min()) / units.ms
    hi = max(ts.max(), pred_grid.max()) / units.ms
    ax.set_ylim(lo / 1.5, hi * 1.5)
    ax.yaxis.set_major_formatter(_PLAIN)
    ax.yaxis.set_minor_formatter(NullFormatter())
    ax.set_xlabel("batch B (columns per weight read)")
    ax.set_ylabel("step time (ms)")
    # a framed key, so its markers read as a key and not as two more measurements
    ax.legend(fontsize=FONT["legend"], loc="lower right", frameon=True, framealpha=1.0, edgecolor="#999999")
    ax.grid(alpha=0.3, which="both")
    panel_title(ax, f"toy decode, {units.fmt_bytes(n * bpw)} of weights", fontsize=FONT["note"])

    intensity = flops / nbytes
    x = np.geomspace(min(intensity.min(), 0.1) / 2, max(intensity.max(), ceil.ridge_flops_per_byte) * 8, 100)
    roof = roofline.attainable_flops_per_s(x, ceil.flops_per_s, ceil.bandwidth_bytes_per_s)
    achieved = flops / ts
    ax2.plot(x, roof / units.GIGA, color=PALETTE["blue"], lw=2)
    ax2.plot(intensity, achieved / units.GIGA, "o", color=PALETTE["orange"], ms=5)
    (ring2,) = ax2.plot([], [], "o", mfc="none", mec=PALETTE["red"], ms=13, mew=2)
    ax2.axvline(ceil.ridge_flops_per_byte, color=PALETTE["grey"], ls="--", lw=1)
    ax2.set_xscale("log")
    ax2.set_yscale("log")
    ax2.set_ylim(
        min(achieved.min(), roof.min()) / units.GIGA / 2,
        max(ceil.flops_per_s, achieved.max()) / units.GIGA * 2,
    )
    ax2.xaxis.set_major_formatter(_PLAIN)
    ax2.xaxis.set_minor_formatter(NullFormatter())
    ax2.yaxis.set_major_formatter(_PLAIN)
    ax2.yaxis.set_minor_formatter(NullFormatter())
    ax2.set_xlabel("arithmetic intensity (FLOP/byte)")
    ax2.set_ylabel("GFLOP/s")
    ax2.grid(alpha=0.3, which="both")
    panel_title(ax2, f"roofline of {machine}", fontsize=FONT["note"])

    def update(batch):
        b_sel = check("batch", batch, "int>=1", scalar=True)
        if b_sel not in set(bs.astype(int).tolist()):
            raise ValueError(
                f"batch must be one of the measured batches {bs.astype(int).tolist()}, got {batch!r}"
            )
        i = int(np.nonzero(bs == b_sel)[0][0])
        ms_i = measure.Measurement(
            "decode",
            machine,
            float(flops[i]),
            float(nbytes[i]),
            measure.Timing((float(ts[i]),), 1, float(ts[i])),
        )
        ring1.set_data([b_sel], [ts[i] / units.ms])
        ring2.set_data([intensity[i]], [achieved[i] / units.GIGA])
        bound = roofline.bound_label(
            float(flops[i]), float(nbytes[i]), ceil.flops_per_s, ceil.bandwidth_bytes_per_s
        )
        return {
            "batch": f"{b_sel}",
            "predicted": _ms(pred[i]),
            "measured": _ms(ts[i]),
            "measured / predicted": f"{ts[i] / pred[i]:.2f}x",
            "prediction says": str(bound),
            "MBU": f"{measure.mbu_against(ms_i, ceil):.0%}",
            "MFU": f"{measure.mfu_against(ms_i, ceil):.0%}",
            "knee: predicted / measured": f"{knee_pred:.1f} / {knee_meas:.1f}",
        }

    return View(fig, update, [ring1, ring2])


def toy_decode_sliders(batches):
    """The one slider of :func:`toy_decode_roofline`: the measured batch sizes."""
    bs = [int(b) for b in _series("batches", batches, minimum=1)]
    return [Slider("batch", bs, label="batch B", default=bs[0], fmt="B = {}")]


def calls_overhead(pieces, times_s, base_s, per_call_s, machine="this machine"):
    """Time of one fixed piece of work issued as ``k`` calls, against ``k``, with the model ``T_base + k t_call``.

    ``pieces`` are the call counts, ``times_s`` the measured medians,
    ``base_s`` the time of the work without call costs (the roofline
    bound, or the step measured as one call) and ``per_call_s`` the
    separately measured cost of one tiny call. Readouts: the fitted slope,
    the tiny-call cost, and the share of the largest ``k``'s time spent on
    calls.
    """
    ks, ts = _sweep(pieces, times_s, "pieces")
    tb = check("base_s", base_s, ">0")
    tc = check("per_call_s", per_call_s, ">0")
    fitted = measure.fit_per_call_s(ks, ts)
    grid = np.geomspace(ks[0], ks[-1], 50)
    fig, ax = new_figure(6.4, 3.2, left=0.12, right=0.96, bottom=0.16, top=0.9)
    ax.plot(ks, ts / units.ms, "o", color=PALETTE["orange"], ms=6, label="measured (median)")
    ax.plot(
        grid,
        measure.step_time_with_calls_s(tb, grid.round(), tc) / units.ms,
        color=PALETTE["blue"],
        lw=2,
        label="base + k x (one tiny call)",
    )
    ax.axhline(tb / units.ms, color=PALETTE["grey"], ls="--", lw=1, label="base: the work alone")
    ax.set_xscale("log")
    ax.set_ylim(0, max(ts.max(), tb + ks[-1] * tc) / units.ms * 1.15)
    ax.xaxis.set_major_formatter(_PLAIN)
    ax.xaxis.set_minor_formatter(NullFormatter())
    ax.set_xlabel("calls per step, k (same bytes, same FLOPs)")
    ax.set_ylabel("time (ms)")
    ax.grid(alpha=0.3, which="both")
    ax.legend(fontsize=FONT["legend"], loc="upper left", frameon=True, framealpha=1.0, edgecolor="#999999")
    panel_title(ax, f"the same work cut into k calls, {machine}", fontsize=FONT["note"])
    call_share = min(1.0, ks[-1] * tc / ts[-1])
    readouts = {
        "fitted cost per extra call": units.fmt_time(fitted, digits=2),
        "one tiny call, measured alone": units.fmt_time(tc, digits=2),
        f"share of the k={int(ks[-1]):,} time spent on calls": f"{call_share:.0%}",
    }
    return fig, readouts
