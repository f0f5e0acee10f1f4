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

from aiinfra.formula import check

import numpy as np

from aiinfra import units
from aiinfra.catalog import reference
from aiinfra.cluster import network, parallelism, scale
from . import PALETTE, new_figure

__all__ = [
    "TOKENS_VALUES",
    "RANKS_VALUES",
    "tp_allreduce",
    "tp_allreduce_sliders",
    "GPU_VALUES",
    "mfu_scaling",
    "mfu_scaling_sliders",
]

#: Slider grids of :func:`tp_allreduce`.
TOKENS_VALUES = (1, 256, 16384)
RANKS_VALUES = (4, 8, 16)


def tp_allreduce(tokens=1, n_ranks=8, *, d_model, n_layers, nvlink_bytes_per_s, ib_bytes_per_s,
                 nvlink_latency_s, ib_latency_s, bytes_per_element=2.0, model_name="model"):
    """Ring all-reduce time vs message size, NVLink against InfiniBand.

    Both curves use :func:`aiinfra.cluster.network.ring_allreduce_time_s` over
    ``n_ranks`` GPUs with each link's per-direction bandwidth and per-step
    latency. The dot marks the tensor-parallel message of ``tokens`` tokens
    (:func:`aiinfra.cluster.parallelism.tp_allreduce_message_bytes`). Readouts: that
    message, one all-reduce on each link, and the whole forward pass's
    ``2 L`` all-reduces on each link.
    """
    n = check("tokens", tokens, "int>=1", scalar=True)
    r = check("n_ranks", n_ranks, "int>=2", scalar=True)
    sizes = np.logspace(3, 10, 50)
    msg = parallelism.tp_allreduce_message_bytes(n, d_model, bytes_per_element)
    links = {
        "NVLink (scale-up)": (nvlink_bytes_per_s, nvlink_latency_s, PALETTE["blue"]),
        "InfiniBand (scale-out)": (ib_bytes_per_s, ib_latency_s, PALETTE["orange"]),
    }
    fig, ax = new_figure(6.4, 3.3, left=0.12, bottom=0.16)
    times = {}
    for label, (bw, lat, color) in links.items():
        t = network.ring_allreduce_time_s(sizes, r, bw, lat)
        ax.plot(sizes, t, color=color, label=label)
        times[label] = network.ring_allreduce_time_s(msg, r, bw, lat)
        ax.plot([msg], [times[label]], "o", color=color)
    ax.axvline(msg, color=PALETTE["grey"], linewidth=0.8, linestyle=":")
    ax.set_xscale("log")
    ax.set_yscale("log")
    ax.set_xlabel("all-reduce message (bytes, log)")
    ax.set_ylabel("time (s, log)")
    ax.set_title(f"ring all-reduce over {r} GPUs; dot = {model_name} TP message, {n:,} tokens",
                 fontsize=9, loc="left")
    ax.grid(alpha=0.3)
    ax.legend(fontsize=8, loc="upper left")
    count = parallelism.tp_allreduce_count(n_layers)
    readouts = {"message per all-reduce": units.fmt_bytes(msg)}
    for label, t in times.items():
        short = label.split(" ")[0]
        readouts[f"{short}: one all-reduce"] = units.fmt_time(t)
        readouts[f"{short}: {int(count)} per forward pass"] = units.fmt_time(
            parallelism.tp_comm_time_per_step_s(n_layers, t))
    return fig, readouts


def tp_allreduce_sliders():
    """Slider definitions for :func:`tp_allreduce` (tokens in flight, ranks in the ring)."""
    from aiinfra.book.interactive import Slider

    return [
        Slider("tokens", TOKENS_VALUES, label="tokens in flight", default=1, fmt="{:,} tokens"),
        Slider("n_ranks", RANKS_VALUES, label="GPUs in the ring", default=8, fmt="{} GPUs"),
    ]


#: Slider grid of :func:`mfu_scaling` (powers of two, 1 to 32,768 GPUs).
GPU_VALUES = tuple(2 ** k for k in range(0, 16))


def mfu_scaling(n_gpus=1024, mfu_at_one=0.62, drop_per_doubling=0.02, comm_per_doubling=0.0625):
    """MFU vs cluster size: the log2 line, the communication-fraction curve and published runs.

    Left: MFU of both models of :mod:`aiinfra.cluster` from 1 to 65,536 GPUs,
    with the runs of :data:`aiinfra.catalog.reference.REPORTED_TRAINING_RUNS` as
    points (measured, different models and GPUs, so compare shapes, not
    values). Right: the useful compute a doubling from ``n`` GPUs buys,
    ``2 MFU(2n) / MFU(n)``, for both models. Readouts: both MFUs at
    ``n_gpus`` and the gain of the next doubling.
    """
    g = check("n_gpus", n_gpus, "int>=1", scalar=True)
    grid = 2.0 ** np.arange(0, 17)
    log2 = scale.mfu_log2_model(grid, mfu_at_one, drop_per_doubling)
    comm = scale.mfu_comm_fraction_model(grid, mfu_at_one, comm_per_doubling)
    fig, (ax, bx) = new_figure(7.6, 3.2, ncols=2, left=0.08, wspace=0.3)
    ax.plot(grid, log2, color=PALETTE["blue"], label="log2 model")
    ax.plot(grid, comm, color=PALETTE["green"], label="comm-fraction model")
    for run in reference.REPORTED_TRAINING_RUNS:
        ax.plot([run.gpus], [run.mfu], "s", color=PALETTE["red"], markersize=5)
    ax.plot([], [], "s", color=PALETTE["red"], label="published runs")
    m_log = scale.mfu_log2_model(g, mfu_at_one, drop_per_doubling)
    m_comm = scale.mfu_comm_fraction_model(g, mfu_at_one, comm_per_doubling)
    ax.axvline(g, color=PALETTE["grey"], linewidth=0.8, linestyle=":")
    ax.set_xscale("log", base=2)
    ax.set_ylim(0, 0.7)
    ax.set_xlabel("GPUs (log2)")
    ax.set_ylabel("MFU")
    ax.grid(alpha=0.3)
    ax.legend(fontsize=7, loc="lower left")
    gain_log = parallelism.useful_compute_ratio(log2[:-1], log2[1:])
    gain_comm = parallelism.useful_compute_ratio(comm[:-1], comm[1:])
    bx.plot(grid[:-1], gain_log, color=PALETTE["blue"])
    bx.plot(grid[:-1], gain_comm, color=PALETTE["green"])
    bx.axhline(2.0, color=PALETTE["grey"], linewidth=0.8, linestyle="--")
    bx.axvline(g, color=PALETTE["grey"], linewidth=0.8, linestyle=":")
    bx.set_xscale("log", base=2)
    bx.set_ylim(1.5, 2.05)
    bx.set_xlabel("GPUs before doubling (log2)")
    bx.set_ylabel("useful compute x")
    bx.set_title("what doubling buys (dashed: 2x)", fontsize=9, loc="left")
    bx.grid(alpha=0.3)
    next_log = parallelism.useful_compute_ratio(m_log, scale.mfu_log2_model(2 * g, mfu_at_one, drop_per_doubling))
    next_comm = parallelism.useful_compute_ratio(
        m_comm, scale.mfu_comm_fraction_model(2 * g, mfu_at_one, comm_per_doubling))
    readouts = {
        "MFU, log2 model": f"{m_log:.1%}",
        "MFU, comm-fraction model": f"{m_comm:.1%}",
        "next doubling, log2 model": f"{next_log:.2f}x useful compute",
        "next doubling, comm-fraction model": f"{next_comm:.2f}x useful compute",
    }
    return fig, readouts


def mfu_scaling_sliders():
    """Slider definition for :func:`mfu_scaling` (cluster size)."""
    from aiinfra.book.interactive import Slider

    return [Slider("n_gpus", GPU_VALUES, label="cluster size", default=1024, fmt="{:,} GPUs", max_static=5)]
