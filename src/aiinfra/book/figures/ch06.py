"""Figures of chapter 6, "The data-center cluster": pure functions ``params -> (Figure, readouts)``.

* :func:`tp_allreduce`: ring all-reduce time against message size over an
  NVLink domain and over InfiniBand, with the tensor-parallel message of a
  real model marked for a chosen number of tokens in flight.
* :func:`mfu_scaling`: the two MFU-versus-scale models of
  :mod:`aiinfra.cluster` (log2 line, communication fraction) beside the
  published runs in :data:`aiinfra.catalog.reference.REPORTED_TRAINING_RUNS`, and
  what the next doubling of the cluster buys.

The ``*_sliders()`` helpers give the slider grids. Every number drawn comes
from a library call.
"""

from __future__ import annotations

import numpy as np
from matplotlib.ticker import FuncFormatter, NullFormatter

from aiinfra import units
from aiinfra.book.interactive import Slider, View, redraws
from aiinfra.catalog import hardware, reference
from aiinfra.cluster import network, parallelism, scale
from aiinfra.formula import check

from . import FONT, PALETTE, new_figure, panel_title

__all__ = [
    "TOKENS_VALUES",
    "RANKS_VALUES",
    "tp_allreduce",
    "tp_allreduce_sliders",
    "GPU_VALUES",
    "mfu_scaling",
    "mfu_scaling_sliders",
]

#: Slider grids of :func:`tp_allreduce` (64 and 4,096 tokens are the rows of the chapter's table).
TOKENS_VALUES = (1, 16, 64, 256, 1024, 4096, 16384)
RANKS_VALUES = (2, 4, 8, 16, 32, 64)
#: The grid precomputed for the static page (20 frames fit the page-weight cap; a kernel moves through all).
STATIC_TOKENS = (1, 64, 1024, 4096, 16384)
STATIC_RANKS = (2, 8, 16, 64)


def _binary_bytes(n: float) -> str:
    """A message size in KiB, MiB or GiB (the units the chapter's prose uses for messages)."""
    unit = "KiB" if n < units.MiB else ("MiB" if n < units.GiB else "GiB")
    return units.fmt_bytes(n, unit)


def _gpus(n: int) -> str:
    return f"{n} GPU" + ("s" if n != 1 else "")


_TIME_TICKS = FuncFormatter(lambda v, _p: units.fmt_time(v, digits=0))
_BYTE_TICKS = FuncFormatter(lambda v, _p: units.fmt_bytes(v, digits=0))


@redraws("tokens", "n_ranks")
def tp_allreduce(
    tokens=1,
    n_ranks=8,
    *,
    d_model,
    n_layers,
    nvlink_bytes_per_s,
    ib_bytes_per_s,
    nvlink_latency_s,
    ib_latency_s,
    bytes_per_element=2.0,
    model_name="model",
    nvlink_domain_gpus=hardware.DGX_H100_DOMAIN.n_gpus,
):
    """Ring all-reduce time vs message size, NVLink against InfiniBand.

    Both curves use :func:`aiinfra.cluster.network.ring_allreduce_time_s` over
    ``n_ranks`` GPUs with each link's per-direction bandwidth and per-step
    latency. The NVLink curve is drawn only while the ring fits one NVLink
    domain (``nvlink_domain_gpus``, 8 for an HGX or DGX H100); a larger ring
    crosses servers over InfiniBand. The dot marks the tensor-parallel
    message of ``tokens`` tokens
    (:func:`aiinfra.cluster.parallelism.tp_allreduce_message_bytes`).
    Readouts: that message, one all-reduce on each link, and the whole
    forward pass's ``2 L`` all-reduces on each link.
    """
    domain = check("nvlink_domain_gpus", nvlink_domain_gpus, "int>=2", scalar=True)
    sizes = np.logspace(3, 10, 50)
    links = {
        "NVLink (scale-up)": (nvlink_bytes_per_s, nvlink_latency_s, PALETTE["blue"]),
        "InfiniBand (scale-out)": (ib_bytes_per_s, ib_latency_s, PALETTE["orange"]),
    }
    everything = [
        network.ring_allreduce_time_s(sizes, r, bw, lat)
        for r in RANKS_VALUES
        for bw, lat, _ in links.values()
    ]
    fig, ax = new_figure(6.8, 3.5, left=0.12, right=0.96, bottom=0.14, top=0.91)
    lines = {
        label: (ax.plot([], [], color=color, label=label)[0], ax.plot([], [], "o", color=color)[0])
        for label, (_, _, color) in links.items()
    }
    msg_line = ax.axvline(1.0, color=PALETTE["grey"], linewidth=0.8, linestyle=":")
    note = ax.text(
        0.98,
        0.04,
        "",
        transform=ax.transAxes,
        ha="right",
        va="bottom",
        fontsize=FONT["small"],
        color=PALETTE["blue"],
    )
    ax.set_xscale("log")
    ax.set_yscale("log")
    ax.set_xlim(sizes[0], sizes[-1])
    ax.set_ylim(min(float(t.min()) for t in everything) / 2, max(float(t.max()) for t in everything) * 2)
    ax.xaxis.set_major_formatter(_BYTE_TICKS)
    ax.yaxis.set_major_formatter(_TIME_TICKS)
    for axis in (ax.xaxis, ax.yaxis):
        axis.set_minor_formatter(NullFormatter())
    ax.set_xlabel("all-reduce message (log)")
    ax.set_ylabel("time (log)")
    title = panel_title(ax, "", fontsize=FONT["note"], loc="left")
    ax.grid(alpha=0.3)
    ax.legend(fontsize=FONT["legend"], loc="upper left", frameon=False)
    count = parallelism.tp_allreduce_count(n_layers)

    def update(tokens, n_ranks):
        n = check("tokens", tokens, "int>=1", scalar=True)
        r = check("n_ranks", n_ranks, "int>=2", scalar=True)
        msg = parallelism.tp_allreduce_message_bytes(n, d_model, bytes_per_element)
        msg_line.set_xdata([msg, msg])
        readouts = {"message per all-reduce": _binary_bytes(msg)}
        for label, (bw, lat, _) in links.items():
            short = label.split(" ")[0]
            curve, dot = lines[label]
            fits = short != "NVLink" or r <= domain
            curve.set_visible(fits)
            dot.set_visible(fits)
            if not fits:
                readouts[f"{short}: one all-reduce"] = f"no: the NVLink domain is {_gpus(domain)}"
                continue
            t = network.ring_allreduce_time_s(msg, r, bw, lat)
            curve.set_data(sizes, network.ring_allreduce_time_s(sizes, r, bw, lat))
            dot.set_data([msg], [t])
            readouts[f"{short}: one all-reduce"] = units.fmt_time(t)
            readouts[f"{short}: {int(count)} per forward pass"] = units.fmt_time(
                parallelism.tp_comm_time_per_step_s(n_layers, t)
            )
        note.set_text(
            ""
            if r <= domain
            else f"no NVLink curve: one NVLink domain holds {_gpus(domain)}; this ring crosses servers"
        )
        title.set_text(
            f"ring all-reduce over {_gpus(r)}; dot = {model_name} TP message, "
            f"{n:,} token{'s' if n != 1 else ''}"
        )
        return readouts

    return View(fig, update, [*(a for pair in lines.values() for a in pair), msg_line, note, title])


def tp_allreduce_sliders():
    """Slider definitions for :func:`tp_allreduce` (tokens in flight, ranks in the ring)."""
    return [
        Slider(
            "tokens",
            TOKENS_VALUES,
            label="tokens in flight",
            default=1,
            fmt=lambda n: f"{n:,} token" + ("s" if n != 1 else ""),
            static=STATIC_TOKENS,
        ),
        Slider("n_ranks", RANKS_VALUES, label="GPUs in the ring", default=8, fmt=_gpus, static=STATIC_RANKS),
    ]


#: Slider grid of :func:`mfu_scaling` (powers of two, 1 to 32,768 GPUs).
GPU_VALUES = tuple(2**k for k in range(0, 16))


@redraws("n_gpus")
def mfu_scaling(n_gpus=1024, mfu_at_one=0.62, drop_per_doubling=0.02, comm_per_doubling=0.0625):
    """MFU vs cluster size: the log2 line, the communication-fraction curve and published runs.

    Left: MFU of both models of :mod:`aiinfra.cluster` from 1 to 65,536 GPUs,
    with the runs of :data:`aiinfra.catalog.reference.REPORTED_TRAINING_RUNS` as
    points (measured, different models and GPUs, so compare shapes, not
    values). Right: the useful compute a doubling from ``n`` GPUs buys,
    ``2 MFU(2n) / MFU(n)``, for both models. Readouts: both MFUs at
    ``n_gpus`` and the gain of the next doubling.
    """
    grid = 2.0 ** np.arange(0, 17)
    log2 = scale.mfu_log2_model(grid, mfu_at_one, drop_per_doubling)
    comm = scale.mfu_comm_fraction_model(grid, mfu_at_one, comm_per_doubling)
    fig, (ax, bx) = new_figure(7.2, 3.4, ncols=2, left=0.09, right=0.97, bottom=0.15, top=0.9, wspace=0.3)
    ax.plot(grid, log2, color=PALETTE["blue"], label="log2 model")
    ax.plot(grid, comm, color=PALETTE["green"], label="comm-fraction model")
    for run in reference.REPORTED_TRAINING_RUNS:
        ax.plot([run.gpus], [run.mfu], "s", color=PALETTE["red"], markersize=5)
    ax.plot([], [], "s", color=PALETTE["red"], label="published runs")
    dots = [
        ax.plot([], [], "o", color=c, mec="black", ms=7, zorder=5)[0]
        for c in (PALETTE["blue"], PALETTE["green"])
    ]
    ticks = [1, 16, 256, 4096, 65536]
    for a in (ax, bx):
        a.set_xscale("log", base=2)
        a.set_xticks(ticks, [f"{t // 1024}K" if t >= 1024 else str(t) for t in ticks])
        a.minorticks_off()
        a.grid(alpha=0.3)
    ax.set_ylim(0, 0.7)
    ax.yaxis.set_major_formatter(FuncFormatter(lambda v, _p: f"{v:.0%}"))
    ax.set_xlabel("GPUs (log2)")
    ax.set_ylabel("MFU")
    ax.legend(fontsize=FONT["legend"], loc="lower left", frameon=False)
    gain_log = parallelism.useful_compute_ratio(log2[:-1], log2[1:])
    gain_comm = parallelism.useful_compute_ratio(comm[:-1], comm[1:])
    bx.plot(grid[:-1], gain_log, color=PALETTE["blue"])
    bx.plot(grid[:-1], gain_comm, color=PALETTE["green"])
    bx.axhline(2.0, color=PALETTE["grey"], linewidth=0.8, linestyle="--")
    marks = [
        ax.axvline(1, color=PALETTE["grey"], linewidth=0.8, linestyle=":"),
        bx.axvline(1, color=PALETTE["grey"], linewidth=0.8, linestyle=":"),
    ]
    bx.set_ylim(1.5, 2.05)
    bx.yaxis.set_major_formatter(FuncFormatter(lambda v, _p: f"{v:.1f}x"))
    bx.set_xlabel("GPUs before doubling (log2)")
    bx.set_ylabel("useful compute")
    panel_title(bx, "what doubling buys (dashed: 2x)", fontsize=FONT["note"], loc="left")

    def update(n_gpus):
        g = check("n_gpus", n_gpus, "int>=1", scalar=True)
        m_log = scale.mfu_log2_model(g, mfu_at_one, drop_per_doubling)
        m_comm = scale.mfu_comm_fraction_model(g, mfu_at_one, comm_per_doubling)
        dots[0].set_data([g], [m_log])
        dots[1].set_data([g], [m_comm])
        for line in marks:
            line.set_xdata([g, g])
        next_log = parallelism.useful_compute_ratio(
            m_log, scale.mfu_log2_model(2 * g, mfu_at_one, drop_per_doubling)
        )
        next_comm = parallelism.useful_compute_ratio(
            m_comm, scale.mfu_comm_fraction_model(2 * g, mfu_at_one, comm_per_doubling)
        )
        return {
            "MFU, log2 model": f"{m_log:.1%}",
            "MFU, comm-fraction model": f"{m_comm:.1%}",
            "next doubling, log2 model": f"{next_log:.2f}x useful compute",
            "next doubling, comm-fraction model": f"{next_comm:.2f}x useful compute",
        }

    return View(fig, update, [*dots, *marks])


def mfu_scaling_sliders():
    """Slider definition for :func:`mfu_scaling` (cluster size, every doubling precomputed)."""
    return [Slider("n_gpus", GPU_VALUES, label="cluster size", default=1024, fmt=_gpus)]
