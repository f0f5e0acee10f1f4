"""Cluster scale: from 1 GPU to 32,768, peak and realized compute, MFU and power.

Peak compute grows with the count, ``G * Pi``; realized compute multiplies
by the MFU reached at that scale, which falls as communication grows; power
is ``G * P_GPU * PUE`` (:mod:`aiinfra.cluster`). The defaults are the
illustrative magnitudes of TheCatch's "The data-center cluster":
1 PFLOP/s dense per GPU, 1.4 kW *all-in* per GPU (so PUE = 1: the overhead is
already inside), and the log2 MFU model, 62% at 1 GPU falling 2 points per
doubling to 32% at 32,768. ``mfu_model="comm-fraction"`` swaps in the
Amdahl-style model with the same end points. Neither model is a measurement.
"""

from __future__ import annotations

import numpy as np

from aiinfra import units
from aiinfra.book.interactive import Slider, View, interactive_figure, redraws
from aiinfra.cluster import scale
from aiinfra.formula import check, choice

from . import FONT, PALETTE, new_figure, panel_title

__all__ = ["GPU_COUNTS", "MFU_MODELS", "mfu", "draw", "sliders", "show"]

#: Powers of two from 1 to 32,768 GPUs.
GPU_COUNTS = tuple(2**k for k in range(16))
MFU_MODELS = ("log2", "comm-fraction")


def mfu(n_gpus, mfu_model="log2"):
    """MFU at ``n_gpus`` under one of the named models of :mod:`aiinfra.cluster`."""
    choice("mfu_model", mfu_model, set(MFU_MODELS))
    if mfu_model == "log2":
        return scale.mfu_log2_model(n_gpus)
    return scale.mfu_comm_fraction_model(n_gpus)


def _eflops(x):
    return f"{x / units.EXA:,.2f} EFLOP/s" if x >= 0.1 * units.EXA else units.fmt_flops_rate(x)


def _power(w):
    return units.fmt_power(w)


def _tick(g: int) -> str:
    return f"{g // 1024}K" if g >= 1024 else f"{g}"


@redraws("n_gpus")
def draw(
    n_gpus=1, flops_per_s_per_gpu=1e15, watts_per_gpu=1400.0, pue=1.0, convention="all-in", mfu_model="log2"
):
    """Draw compute and MFU against cluster size, marking ``n_gpus``; return ``(Figure, readouts)``."""
    pi = check("flops_per_s_per_gpu", flops_per_s_per_gpu, ">0")
    choice("mfu_model", mfu_model, set(MFU_MODELS))
    scale.cluster_power_w(1, watts_per_gpu, pue, convention)  # validates the power convention once

    counts = np.asarray(GPU_COUNTS, dtype=float)
    peak_all = scale.peak_flops_per_s(counts, pi)
    mfu_all = mfu(counts, mfu_model)
    real_all = scale.realized_flops_per_s(counts, pi, mfu_all)

    # log axes drawn as linear axes of log2(G) and log10(PFLOP/s): same picture,
    # but no per-vertex log transform on every redraw
    lx = np.log2(counts)
    fig, (ax, ax2) = new_figure(7.2, 3.3, ncols=2, left=0.11, right=0.98, bottom=0.15, top=0.9, wspace=0.3)
    ax.plot(lx, np.log10(peak_all / units.PETA), "--", color=PALETTE["grey"], lw=1.4, label="peak")
    ax.plot(lx, np.log10(real_all / units.PETA), color=PALETTE["blue"], lw=2.2, label="realized (peak x MFU)")
    ax.fill_between(
        lx,
        np.log10(real_all / units.PETA),
        np.log10(peak_all / units.PETA),
        color=PALETTE["red"],
        alpha=0.12,
        lw=0,
        label="lost to the scaling tax",
    )
    (peak_dot,) = ax.plot([], [], "o", color=PALETTE["grey"], ms=6, zorder=5)
    (real_dot,) = ax.plot([], [], "o", color=PALETTE["blue"], mec="black", ms=8, zorder=5)
    ticks = [1, 8, 64, 512, 4096, 32768]
    yt = [1, 10, 100, 1000, 10000]
    ax.set_xticks(np.log2(ticks), [_tick(t) for t in ticks])
    ax.set_yticks(np.log10(yt), [f"{t:,}" for t in yt])
    ax.set_xlabel("GPUs")
    ax.set_ylabel("PFLOP/s (dense)")
    ax.legend(loc="upper left", fontsize=FONT["legend"], frameon=False)
    ax.grid(True, alpha=0.3)
    panel_title(ax, "compute grows; useful compute lags")

    ax2.plot(lx, mfu_all * 100, color=PALETTE["orange"], lw=2.2)
    (mfu_dot,) = ax2.plot([], [], "o", color=PALETTE["orange"], mec="black", ms=8, zorder=5)
    ax2.set_xticks(np.log2(ticks), [_tick(t) for t in ticks])
    ax2.set_ylim(0, 70)
    ax2.set_xlabel("GPUs")
    ax2.set_ylabel("MFU (%)")
    ax2.grid(True, alpha=0.3)
    panel_title(ax2, f"MFU falls ({mfu_model} model)")
    power_note = ax2.text(
        0.97, 0.05, "", transform=ax2.transAxes, ha="right", va="bottom", fontsize=FONT["note"]
    )

    def update(n_gpus):
        g = check("n_gpus", n_gpus, ">=1.0")
        if g > GPU_COUNTS[-1]:
            raise ValueError(f"n_gpus must lie in [1, {GPU_COUNTS[-1]}], got {n_gpus!r}")
        peak = scale.peak_flops_per_s(g, pi)
        u = mfu(g, mfu_model)
        real = scale.realized_flops_per_s(g, pi, u)
        power = scale.cluster_power_w(g, watts_per_gpu, pue, convention)
        lg = float(np.log2(g))
        peak_dot.set_data([lg], [np.log10(peak / units.PETA)])
        real_dot.set_data([lg], [np.log10(real / units.PETA)])
        mfu_dot.set_data([lg], [u * 100])
        power_note.set_text(f"{_gpus(g)} draw {_power(power)}\n({convention} watts, PUE {pue:g})")
        return {
            "peak compute": _eflops(peak),
            "efficiency (MFU)": f"{u * 100:.1f}%",
            "realized compute": _eflops(real),
            f"power draw ({convention})": _power(power),
        }

    return View(fig, update, [peak_dot, real_dot, mfu_dot, power_note])


def _gpus(g) -> str:
    return f"{g:,.0f} GPU" + ("s" if g != 1 else "")


def sliders():
    """Cluster size, 1 to 32,768 GPUs in doublings (16 frames)."""
    return [Slider("n_gpus", GPU_COUNTS, label="cluster size", default=1, fmt=_gpus)]


def show(mode=None, **fixed):
    """The interactive cluster-scale figure."""
    return interactive_figure(
        draw, sliders(), title="Scale a cluster: compute, efficiency and power", fixed=fixed, mode=mode
    )
