"""Figures of chapter 2, "The hardware layers": pure functions ``params -> (Figure, readouts)``.

* :func:`bandwidth_ladder` draws the links inside one DGX H100 on a log
  scale, either per direction in bytes (the honest comparison) or as the
  spec sheets print them (both directions added, bits for the NIC), to show
  the 2x and 16x traps.
* :func:`request_explorer` reworks the 8B request of
  :data:`aiinfra.deployment.TEACHING_8B` for any batch, bandwidth and
  efficiencies: the parts of one decode step and the tokens per second.

Every number drawn comes from :mod:`aiinfra.catalog.hardware` or
:mod:`aiinfra.deployment`; the ``*_sliders()`` helpers give the slider grids for
:func:`aiinfra.book.interactive.interactive_figure`.
"""

from __future__ import annotations

import numpy as np
from matplotlib.ticker import FuncFormatter

from aiinfra import roofline, units
from aiinfra.book.figures import FONT, PALETTE, new_figure
from aiinfra.book.interactive import Slider, View, redraws
from aiinfra.catalog import hardware
from aiinfra.cluster import network
from aiinfra.deployment import TEACHING_8B, TEACHING_PROMPT_TOKENS
from aiinfra.formula import check, choice

__all__ = [
    "LADDER_VIEWS",
    "bandwidth_ladder",
    "bandwidth_ladder_sliders",
    "BATCH_VALUES",
    "BANDWIDTH_TB_S_VALUES",
    "ETA_VALUES",
    "request_explorer",
    "request_explorer_sliders",
]

#: The two ways :func:`bandwidth_ladder` reads the spec sheets.
LADDER_VIEWS = ("per direction, bytes", "as printed")

_KIND_COLOUR = {
    "memory": PALETTE["blue"],
    "scale-up": PALETTE["green"],
    "host": PALETTE["orange"],
    "network": PALETTE["red"],
}


def _printed_number(link) -> float:
    """The number on the spec sheet, in the unit it is printed in (GB/s or Gbit/s), as an SI-free float."""
    bits = link.kind == "network"
    per_dir = link.bytes_per_s_per_direction
    # undo the conversion: printed = per-direction bytes x (2 if summed) x (8 if bits), in giga units
    return per_dir * network.misread_factor(bits, link.bidirectional_in_spec) / units.GB


def _wrap(name: str, width: int = 30) -> str:
    """A long link name on two lines, broken before its parenthesis."""
    return name.replace(" (", "\n(", 1) if len(name) > width else name


def _gb_ticks(x, _pos):
    return f"{x:,.0f}" if x >= 1 else f"{x:g}"


@redraws("view")
def bandwidth_ladder(view: str = LADDER_VIEWS[0]):
    """The DGX H100's links on a log axis: per direction in GB/s, or the numbers as printed.

    ``view`` is ``"per direction, bytes"`` (every link converted to bytes per
    second in one direction) or ``"as printed"`` (the spec-sheet number taken
    at face value, as if it were GB/s: NVLink's both-directions 900, PCIe's
    128, the NIC's 400 Gbit/s). The links keep their order (slowest to fastest
    per direction), so switching views shows which bars the sheets inflate.
    Returns ``(Figure, readouts)``; readouts give the HBM-to-NIC and
    NVLink-to-NIC ratios in the chosen view.
    """
    links = hardware.server_links()
    honest_values = [x.bytes_per_s_per_direction / units.GB for x in links]
    printed_values = [_printed_number(x) for x in links]
    order = np.argsort(honest_values)
    fig, ax = new_figure(7.2, 3.8, left=0.35, right=0.95, bottom=0.13, top=0.91)
    y = np.arange(len(links))
    bars = ax.barh(y, np.ones(len(y)), color=[_KIND_COLOUR[links[i].kind] for i in order], height=0.62)
    ax.set_yticks(y, [_wrap(links[i].name) for i in order], fontsize=FONT["small"])
    ax.set_xscale("log")
    ax.set_xlim(10, 10_000)
    ax.xaxis.set_major_formatter(FuncFormatter(_gb_ticks))
    ax.minorticks_off()
    labels = [ax.text(1, yi, "", va="center", fontsize=FONT["small"]) for yi in y]
    # the axis label is drawn with the axis (still); a text of the Axes can move
    xlabel = ax.text(0.5, -0.1, "", transform=ax.transAxes, ha="center", va="top", fontsize=FONT["label"])
    # centred on the figure, not on the axes (which start a third of the way in): the long title fits
    title = fig.text(0.5, 0.985, " ", ha="center", va="top", fontsize=FONT["title"])

    nic = hardware.link("ConnectX-7 400 Gbit/s")
    hbm = hardware.link("HBM3 (H100 SXM)")
    nvl = hardware.link("NVLink 4 (per GPU, 18 links)")

    def update(view):
        choice("view", view, set(LADDER_VIEWS))
        honest = view == LADDER_VIEWS[0]
        values = honest_values if honest else printed_values
        for bar, text, _y, i in zip(bars.patches, labels, y, order):
            bar.set_width(values[i])
            text.set_x(values[i] * 1.08)
            text.set_text(f"{values[i]:,.0f}" if honest else links[i].raw_spec.split(",")[0])
        if honest:
            xlabel.set_text("GB/s in one direction (10^9 B/s), log scale")
            title.set_text("One DGX H100, per direction: each step outward loses bandwidth")
            r_hbm, r_nvl = hardware.ratio(hbm, nic), hardware.ratio(nvl, nic)
        else:
            xlabel.set_text("the printed number taken as GB/s (wrong for NVLink, PCIe and the NIC)")
            title.set_text("The same links as the spec sheets print them")
            r_hbm, r_nvl = (
                _printed_number(hbm) / _printed_number(nic),
                _printed_number(nvl) / _printed_number(nic),
            )
        return {
            "HBM / NIC": f"{r_hbm:,.1f}x",
            "NVLink / NIC": f"{r_nvl:,.2f}x",
            "NIC, one direction": (
                units.fmt_rate_bytes(nic.bytes_per_s_per_direction, "GB", 0)
                if honest
                else f"{_printed_number(nic):,.0f} (Gbit/s, read as GB/s)"
            ),
        }

    return View(fig, update, [*bars.patches, *labels, xlabel, title])


def bandwidth_ladder_sliders():
    """The one control of :func:`bandwidth_ladder`: which way to read the sheets."""
    return [Slider("view", LADDER_VIEWS, label="read the spec sheets", default=LADDER_VIEWS[0])]


#: Batch sizes offered by the request explorer.
BATCH_VALUES = (1, 2, 4, 8, 16, 32, 64, 128)
#: Peak memory bandwidths offered, in TB/s (the teaching GPU has 3.0, an H200 4.8, a B200 8).
BANDWIDTH_TB_S_VALUES = (2.0, 3.0, 4.8, 8.0)
#: Achieved fractions of peak offered for eta_B and eta_F.
ETA_VALUES = (0.3, 0.4, 0.5, 0.6, 0.7, 0.8, 0.9, 1.0)


def _tok_s(x: float) -> str:
    return f"{x:,.0f} tok/s"


def _explorer(bandwidth_tb_per_s, eta_b, eta_f):
    bw = check("bandwidth_tb_per_s", bandwidth_tb_per_s, ">0") * units.TB
    return TEACHING_8B.replace(
        gpu=hardware.custom_gpu(base=TEACHING_8B.gpu, memory_bandwidth_bytes_per_s=bw),
        eta_b=eta_b,
        eta_f=eta_f,
    )


def _requests(b: int) -> str:
    return f"{b} request" + ("s" if b != 1 else "")


@redraws("batch", "bandwidth_tb_per_s", "eta_b", "eta_f")
def request_explorer(
    batch: int = 32, bandwidth_tb_per_s: float = 3.0, eta_b: float = 0.7, eta_f: float = 0.5
):
    """The 8B request of chapter 2 at another batch, bandwidth or efficiency.

    Left: one decode step split into the shared weight read, the batch's KV
    reads and the arithmetic, against the step time. Right: per-user and
    aggregate tokens per second over every batch of :data:`BATCH_VALUES`,
    with the chosen one marked, on axes that hold every slider position.
    All other assumptions are :data:`aiinfra.deployment.TEACHING_8B`'s.
    Returns ``(Figure, readouts)``.
    """
    prompt = TEACHING_PROMPT_TOKENS
    xs = np.array(BATCH_VALUES, dtype=float)
    corners = [
        _explorer(bw, e, e).step(xs, prompt)
        for bw in (min(BANDWIDTH_TB_S_VALUES), max(BANDWIDTH_TB_S_VALUES))
        for e in (min(ETA_VALUES), max(ETA_VALUES))
    ]
    lo = min(float(np.min(c.tokens_per_s_per_user)) for c in corners)
    hi = max(float(np.max(c.tokens_per_s)) for c in corners)

    fig, (ax1, ax2) = new_figure(
        7.2, 3.6, ncols=2, left=0.09, right=0.97, bottom=0.14, top=0.85, wspace=0.3, width_ratios=(0.8, 1.0)
    )
    w_bar = ax1.bar([0], [0.0], color=PALETTE["blue"], width=0.55, label="weights, read once")[0]
    kv_bar = ax1.bar([0], [0.0], color=PALETTE["sky"], width=0.55, label="KV of the batch")[0]
    c_bar = ax1.bar([1], [0.0], color=PALETTE["orange"], width=0.55, label="arithmetic")[0]
    step_line = ax1.axhline(0.0, color="black", linewidth=1, linestyle="--")
    step_text = ax1.text(1.55, 0.0, "step", va="bottom", ha="right", fontsize=FONT["small"])
    ax1.set_xticks([0, 1], ["memory", "compute"])
    ax1.set_xlim(-0.6, 1.6)
    ax1.set_ylabel("ms per decode step (bound)")
    ax1.legend(fontsize=FONT["small"], loc="upper center", frameon=False, ncols=1)

    (every,) = ax2.plot([], [], color=PALETTE["green"], marker="o", markersize=3, label="all requests")
    (one,) = ax2.plot(
        [], [], color=PALETTE["grey"], linestyle="--", marker="o", markersize=3, label="one user"
    )
    (dot,) = ax2.plot([], [], "o", color=PALETTE["red"], markersize=7, zorder=5)
    ax2.set_xscale("log", base=2)
    ax2.set_yscale("log")
    ax2.set_xticks(list(BATCH_VALUES), [str(x) for x in BATCH_VALUES])
    # half a tick of room at each end, so the marked point is whole at the smallest and largest batch
    ax2.set_xlim(min(BATCH_VALUES) / 2**0.5, max(BATCH_VALUES) * 2**0.5)
    ax2.minorticks_off()
    ax2.set_ylim(lo / 1.5, hi * 1.5)
    ax2.yaxis.set_major_formatter(FuncFormatter(lambda v, _p: f"{v:,.0f}"))
    ax2.set_xlabel("batch size B (requests)")
    ax2.set_ylabel("tokens per second (bound)")
    ax2.legend(fontsize=FONT["legend"], loc="upper left", frameon=False)
    title = fig.text(0.5, 0.985, "", ha="center", va="top", fontsize=FONT["note"])

    def update(batch, bandwidth_tb_per_s, eta_b, eta_f):
        b = check("batch", batch, "int>=1", scalar=True)
        d = _explorer(bandwidth_tb_per_s, eta_b, eta_f)
        bw = d.gpu.memory_bandwidth_bytes_per_s
        one_step, step = d.step(1, prompt), d.step(b, prompt)
        curve = d.step(xs, prompt)
        w_ms = roofline.memory_time_s(step.weight_bytes, bw, d.eta_b) / units.ms
        kv_ms = roofline.memory_time_s(step.kv_bytes, bw, d.eta_b) / units.ms
        c_ms = step.compute_s / units.ms
        w_bar.set_height(w_ms)
        kv_bar.set_y(w_ms)
        kv_bar.set_height(kv_ms)
        c_bar.set_height(c_ms)
        t_ms = step.time_s / units.ms
        step_line.set_ydata([t_ms, t_ms])
        step_text.set_y(t_ms)
        ax1.set_ylim(0, max(w_ms + kv_ms, c_ms) * 1.8)
        every.set_data(xs, curve.tokens_per_s)
        one.set_data(xs, curve.tokens_per_s_per_user)
        dot.set_data([b], [step.tokens_per_s])
        title.set_text(
            f"8B model in BF16, batch of {_requests(b)}: {bandwidth_tb_per_s:g} TB/s at {d.eta_b:.0%}, "
            f"{units.fmt_flops_rate(d.peak_flops_per_s, 0)} at {d.eta_f:.0%}\n"
            "(teaching assumptions, not a measurement)"
        )
        return {
            f"prefill, {prompt:,} tokens": units.fmt_time(d.prefill(prompt).time_s, 1),
            "decode step, batch 1": units.fmt_time(one_step.time_s, 1),
            f"decode step, batch {b}": units.fmt_time(step.time_s, 1),
            "one user": _tok_s(step.tokens_per_s / b),
            "all requests": _tok_s(step.tokens_per_s),
            "gain over batch 1": f"{step.tokens_per_s / one_step.tokens_per_s:,.1f}x",
            "KV share of bytes read": f"{step.kv_share:.0%}",
        }

    return View(fig, update, [ax1.yaxis, w_bar, kv_bar, c_bar, step_line, step_text, every, one, dot, title])


def request_explorer_sliders():
    """All four controls move in the static book, on a coarser grid (24 frames, within the page-weight cap) than in a live kernel."""
    return [
        Slider("batch", BATCH_VALUES, label="batch B", default=32, static=(1, 32, 128)),
        Slider(
            "bandwidth_tb_per_s",
            BANDWIDTH_TB_S_VALUES,
            label="peak HBM bandwidth",
            default=3.0,
            fmt="{:g} TB/s",
            static=(3.0, 8.0),
        ),
        Slider(
            "eta_b",
            ETA_VALUES,
            label="eta_B (bandwidth achieved)",
            default=0.7,
            fmt="{:.0%}",
            static=(0.7, 1.0),
        ),
        Slider(
            "eta_f",
            ETA_VALUES,
            label="eta_F (compute achieved)",
            default=0.5,
            fmt="{:.0%}",
            static=(0.5, 1.0),
        ),
    ]
