"""Figures of chapter 6, "The data-center cluster": pure functions ``params -> (Figure, readouts)``.

* :func:`tp_allreduce`: ring all-reduce time against message size over an
  NVLink domain and over InfiniBand, with the tensor-parallel message of a
  real model marked for a chosen number of tokens in flight.
* :func:`mfu_scaling`: the two MFU-versus-scale models of
  :mod:`aiinfra.cluster` (log2 line, communication fraction) beside the
  published runs in :data:`aiinfra.catalog.reference.REPORTED_TRAINING_RUNS`, and
  what the next doubling of the cluster buys.
* :func:`ep_collectives`: the dispatch and combine all-to-alls of one MoE
  layer against the tokens each GPU sends, inside an NVL72, inside an HGX
  H200 and across nodes over RDMA, each as bound and as prediction; beside it
  the busiest GPU's load against the redundant experts added, for skewed
  routing (:mod:`aiinfra.cluster.sharding`).

The ``*_sliders()`` helpers give the slider grids. Every number drawn comes
from a library call.
"""

from __future__ import annotations

import numpy as np
from matplotlib.ticker import FuncFormatter, NullFormatter

from aiinfra import units
from aiinfra.book.interactive import Slider, View, redraws
from aiinfra.catalog import hardware, reference
from aiinfra.cluster import network, parallelism, scale, sharding
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
    "EP_TOKENS",
    "EP_SKEWS",
    "ep_collectives",
    "ep_collectives_sliders",
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


#: Tokens each GPU sends in one MoE layer (the slider of :func:`ep_collectives`).
EP_TOKENS = (1, 4, 16, 64, 256, 1024, 4096)
#: Routing skews drawn on the right of :func:`ep_collectives` (Zipf exponents; 0 is uniform).
EP_SKEWS = (0.0, 0.3, 0.5)
_EP_FABRICS = (
    ("GB200 NVL72, NVLink", "GB200", "nvlink", PALETTE["green"]),
    ("HGX H200, NVLink", "H200 SXM", "nvlink", PALETTE["blue"]),
    ("across nodes, 400G RDMA", None, "rdma", PALETTE["red"]),
)


def _fabric_link(gpu):
    return (
        hardware.gpu(gpu).scaleup_bytes_per_s_per_direction
        if gpu
        else hardware.link("ndr").bytes_per_s_per_direction
    )


def _a2a_layer_s(tokens, gpu, regime, hidden, k, bound):
    """Dispatch (FP8) plus combine (BF16) of one MoE layer: prediction by regime, or bytes over the peak."""
    link = _fabric_link(gpu)
    sizes = [network.moe_all_to_all_bytes(tokens, hidden, k, b) for b in (1.0, 2.0)]
    if bound:
        return sum(s / link for s in sizes)
    return sum(network.all_to_all_time_s(s, link, regime) for s in sizes)


@redraws("tokens_per_gpu")
def ep_collectives(tokens_per_gpu=64, model_name="DeepSeek-V3", n_gpus=72):
    """One MoE layer's all-to-alls against the tokens per GPU (left); EP load imbalance against redundant experts (right).

    Left: dispatch (FP8) plus combine (BF16) for ``model_name``'s hidden size
    and top-k, per fabric of :data:`_EP_FABRICS`, solid the prediction
    (:func:`aiinfra.cluster.network.all_to_all_time_s`), dotted the bound
    (bytes over the per-direction peak). Right: :func:`aiinfra.cluster.sharding.ep_load_imbalance`
    of Zipf loads (:data:`EP_SKEWS`) over ``n_gpus`` GPUs. Returns
    ``(Figure, readouts)``: each fabric's predicted time at ``tokens_per_gpu``
    and the bytes sent.
    """
    from aiinfra.catalog import models

    m = models.load(model_name)
    hidden, k, e = m.hidden_size, m.n_experts_per_token, m.n_routed_experts
    n = check("n_gpus", n_gpus, "int>=1", scalar=True)
    fig, (ax1, ax2) = new_figure(7.2, 3.6, ncols=2, left=0.12, right=0.98, bottom=0.15, top=0.83, wspace=0.32)
    grid = np.unique(np.geomspace(1, 4096, 49).astype(int))
    dots = []
    for label, gpu, regime, colour in _EP_FABRICS:
        ax1.plot(
            grid,
            [_a2a_layer_s(t, gpu, regime, hidden, k, False) * 1e6 for t in grid],
            color=colour,
            label=label,
        )
        ax1.plot(
            grid,
            [_a2a_layer_s(t, gpu, regime, hidden, k, True) * 1e6 for t in grid],
            color=colour,
            linestyle=":",
        )
        dots.append((label, gpu, regime, ax1.plot([], [], "o", color=colour, markersize=6, zorder=5)[0]))
    ax1.set_xscale("log", base=2)
    ax1.set_yscale("log")
    ax1.set_xticks([1, 16, 256, 4096], ["1", "16", "256", "4,096"])
    ax1.minorticks_off()
    ax1.set_yticks([1, 10, 100, 1000, 10000], ["1", "10", "100", "1,000", "10,000"])
    ax1.set_xlabel("tokens per GPU in the layer")
    ax1.set_ylabel("dispatch + combine (\u00b5s)")
    ax1.legend(fontsize=FONT["small"], loc="upper left", frameon=False)
    panel_title(ax1, "one MoE layer; dotted: bound")
    copies = np.array([0, 8, 16, 32, 64, 104])
    for skew, colour in zip(EP_SKEWS, (PALETTE["grey"], PALETTE["orange"], PALETTE["purple"])):
        loads = sharding.zipf_expert_loads(e, skew)
        ax2.plot(
            copies,
            [sharding.ep_load_imbalance(loads, n, int(r)) for r in copies],
            "o-",
            color=colour,
            markersize=4,
            label=f"Zipf skew {skew:g}",
        )
    ax2.set_xlabel("redundant expert copies")
    ax2.set_ylabel("busiest GPU / mean")
    ax2.legend(fontsize=FONT["small"], loc="upper right", frameon=False)
    panel_title(ax2, f"{e} experts on {n} GPUs")
    title = fig.suptitle("", fontsize=FONT["note"], x=0.02, ha="left")

    def update(tokens_per_gpu):
        t = check("tokens_per_gpu", tokens_per_gpu, "int>=1", scalar=True)
        out = {}
        for label, gpu, regime, dot in dots:
            v = _a2a_layer_s(t, gpu, regime, hidden, k, False)
            dot.set_data([t], [v * 1e6])
            out[label] = units.fmt_time(v)
        sent = network.moe_all_to_all_bytes(t, hidden, k, 1.0) + network.moe_all_to_all_bytes(
            t, hidden, k, 2.0
        )
        out["bytes sent per GPU"] = units.fmt_bytes(sent)
        title.set_text(f"{model_name}: {_tokens(t)} per GPU, top-{k}, hidden {hidden:,}")
        return out

    return View(fig, update, [*(d for *_, d in dots), title])


def ep_collectives_sliders():
    """The tokens-per-GPU slider of :func:`ep_collectives`."""
    return [Slider("tokens_per_gpu", EP_TOKENS, label="tokens/GPU", default=64, fmt=_tokens)]


def _tokens(n: int) -> str:
    return f"{n:,} token" + ("" if n == 1 else "s")
