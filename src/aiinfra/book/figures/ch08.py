"""Figures of chapter 8, "Measuring against the limit": pure functions ``params -> (Figure, readouts)``.

* :func:`toy_decode_roofline`: the toy decode step measured at several batch
  sizes, against its roofline prediction on the same machine. Left: step
  time against batch (measured points, predicted ``max(F/Pi, R/beta)``
  curve, predicted knee). Right: the machine's empirical roofline with each
  batch placed at its arithmetic intensity and achieved FLOP/s. The slider
  picks one batch; the readouts give its prediction, measurement, MBU and MFU.
* :func:`calls_overhead`: the same work (a read, or a decode step) issued as
  ``k`` calls, time against ``k``, with the line ``T_base + k t_call``.
* :func:`model_vs_measured`: every stored published measurement against the
  bound or the calibrated prediction, log-log, with x1.25 and x2 bands; the
  controls pick the column and the engine shown in colour.

The measured numbers come in as plain tuples (the chapter measures, or reads
the stored sweep, then passes them through ``fixed=``; :func:`toy_decode_fixed`
unpacks a sweep), so the functions stay pure and testable with synthetic data. Every predicted number comes from :mod:`aiinfra.measure`,
which calls :mod:`aiinfra.roofline`.
"""

from __future__ import annotations

from collections.abc import Sequence

import numpy as np
from matplotlib.ticker import FuncFormatter, NullFormatter

from aiinfra import measure, roofline, units
from aiinfra.book import model_check
from aiinfra.book.interactive import Slider, View, redraws
from aiinfra.catalog import measurements
from aiinfra.formula import check, choice

from . import FONT, PALETTE, new_figure, panel_title

__all__ = [
    "toy_decode_roofline",
    "toy_decode_sliders",
    "toy_decode_fixed",
    "calls_overhead",
    "model_vs_measured",
    "model_vs_measured_sliders",
]


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


def toy_decode_fixed(sweep: measure.DecodeSweep, machine: str) -> dict:
    """The ``fixed=`` arguments of :func:`toy_decode_roofline` for one sweep and its machine's ceilings.

    ``sweep`` is a :class:`aiinfra.measure.DecodeSweep` (the stored one, or a reader's own);
    ``machine`` names it in the right panel's title.
    """
    first = sweep.sweep[0].params
    ceil = sweep.machine.ceilings
    return {
        "batches": sweep.batches,
        "times_s": sweep.times_s,
        "n_params": first["n_params"],
        "bytes_per_weight": first["bytes_per_weight"],
        "flops_per_s": ceil.flops_per_s,
        "bandwidth_bytes_per_s": ceil.bandwidth_bytes_per_s,
        "machine": machine,
    }


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


_COLUMNS = ("prediction", "bound")
#: The bands drawn around the diagonal: within these factors of the measurement.
BANDS = (1.25, 2.0)


def _engines(rows) -> list[str]:
    return sorted({r.engine for r in rows})


@redraws("column", "engine")
def model_vs_measured(column="prediction", engine="all", *, rows):
    """Measured against the model for every expressible stored point, log-log, with x1.25 and x2 bands.

    ``rows`` are :class:`aiinfra.book.model_check.ModelCheckRow` records (one per point, with its engine,
    split, measured value, bound and prediction, each in the metric's SI unit). ``column`` is
    ``"prediction"`` or ``"bound"``; ``engine`` is ``"all"`` or one engine, drawn in colour over the others
    in grey. Left panel: times (TTFT, TPOT, step, latency); right panel: rates (tokens/s). Filled markers
    are the training split, open ones the held-out split. Readouts: the median and worst factor
    ``exp|ln(measured/model)|`` of the points in colour and how many lie within x1.25 and x2.
    """
    rows = [r for r in rows if r.predicted is not None]
    if not rows:
        raise ValueError("rows must hold at least one expressible point with a bound and a prediction")
    engines = _engines(rows)
    colours = dict(zip(engines, [PALETTE[c] for c in ("orange", "green", "red", "purple", "sky")]))
    fig, axes = new_figure(7.2, 3.9, ncols=2, left=0.09, right=0.98, bottom=0.2, top=0.82, wspace=0.3)
    marks = []  # (row, marker) for every point, in both panels
    for ax, unit, label in zip(axes, ("s", "tokens/s"), ("time (s)", "rate (tokens/s)")):
        part = [r for r in rows if measurements.METRICS[r.metric] == unit]
        values = [v for r in part for v in (r.predicted, r.bound, r.measured)]
        lo, hi = min(values) / 2, max(values) * 2
        diag = np.array([lo, hi])
        for k, alpha in zip(BANDS[::-1], (0.12, 0.25)):
            ax.fill_between(diag, diag / k, diag * k, color=PALETTE["blue"], alpha=alpha, lw=0)
        ax.plot(diag, diag, color=PALETTE["blue"], lw=1)
        marks += [(r, ax.plot([r.predicted], [r.measured], "o", ms=6, mew=1.5)[0]) for r in part]
        ax.set_xscale("log")
        ax.set_yscale("log")
        ax.set_xlim(lo, hi)
        ax.set_ylim(lo, hi)
        ax.set_xlabel(f"aiinfra bound or prediction, {label}", fontsize=FONT["label"])
        ax.set_ylabel(f"published measurement, {label}", fontsize=FONT["label"])
        ax.grid(alpha=0.3, which="major")
    handles = [axes[0].plot([], [], "o", color=c, label=n)[0] for n, c in colours.items()]
    handles += [
        axes[0].fill_between([], [], color=PALETTE["blue"], alpha=a, lw=0, label=f"within x{k:g}")
        for k, a in zip(BANDS, (0.25, 0.12))
    ]
    fig.legend(handles=handles, loc="upper center", ncol=4, fontsize=FONT["small"], frameon=False)
    fig.text(
        0.5,
        0.005,
        "filled: training split; open: held-out split",
        ha="center",
        va="bottom",
        fontsize=FONT["small"],
    )

    def update(column, engine):
        choice("column", column, set(_COLUMNS))
        choice("engine", engine, {"all", *engines})
        factors = []
        for r, mark in marks:
            x = r.predicted if column == "prediction" else r.bound
            on = engine in ("all", r.engine)
            c = colours[r.engine] if on else PALETTE["light"]
            mark.set_xdata([x])
            mark.set(
                markeredgecolor=c,
                markerfacecolor="none" if r.split == "held-out" else c,
                zorder=3 if on else 2,
            )
            if on:
                factors.append(model_check.factor_off(r.measured, x))
        f = np.array(factors)
        return {
            "points in colour": f"{f.size}",
            "median factor off": f"x{np.median(f):.2f}",
            "worst factor off": f"x{f.max():.2f}",
            f"within x{BANDS[0]:g} / within x{BANDS[1]:g}": " / ".join(
                f"{int((f <= k).sum())}" for k in BANDS
            ),
        }

    return View(fig, update, moving=[m for _, m in marks])


def model_vs_measured_sliders(rows):
    """The two controls of :func:`model_vs_measured`: the model column, and the engine in colour."""
    engines = _engines([r for r in rows if r.predicted is not None])
    return [
        Slider("column", _COLUMNS, label="compare with", default="prediction"),
        Slider("engine", ["all", *engines], label="engine", default="all"),
    ]
