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
from aiinfra.book.figures import PALETTE, new_figure
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

_KIND_COLOUR = {"memory": PALETTE["blue"], "scale-up": PALETTE["green"], "host": PALETTE["orange"],
                "network": PALETTE["red"]}


def _printed_number(link) -> float:
    """The number on the spec sheet, in the unit it is printed in (GB/s or Gbit/s), as an SI-free float."""
    bits = link.kind == "network"
    per_dir = link.bytes_per_s_per_direction
    # undo the conversion: printed = per-direction bytes x (2 if summed) x (8 if bits), in giga units
    return per_dir * network.misread_factor(bits, link.bidirectional_in_spec) / units.GB


def _gb_ticks(x, _pos):
    return f"{x:,.0f}" if x >= 1 else f"{x:g}"


def bandwidth_ladder(view: str = LADDER_VIEWS[0]):
    """The DGX H100's links on a log axis: per direction in GB/s, or the numbers as printed.

    ``view`` is ``"per direction, bytes"`` (every link converted to bytes per
    second in one direction) or ``"as printed"`` (the spec-sheet number taken
    at face value, as if it were GB/s: NVLink's both-directions 900, PCIe's
    128, the NIC's 400 Gbit/s). Returns ``(Figure, readouts)``; readouts give
    the HBM-to-NIC and NVLink-to-NIC ratios in the chosen view.
    """
    choice("view", view, set(LADDER_VIEWS))
    honest = view == LADDER_VIEWS[0]
    links = hardware.server_links()
    if honest:
        values = [x.bytes_per_s_per_direction / units.GB for x in links]
    else:
        values = [_printed_number(x) for x in links]
    order = np.argsort(values)
    fig, ax = new_figure(7.6, 3.3, left=0.42, right=0.93, bottom=0.17, top=0.88)
    y = np.arange(len(links))
    ax.barh(y, [values[i] for i in order], color=[_KIND_COLOUR[links[i].kind] for i in order], height=0.62)
    ax.set_yticks(y, [links[i].name for i in order], fontsize=7)
    ax.set_xscale("log")
    ax.set_xlim(10, 10_000)
    ax.xaxis.set_major_formatter(FuncFormatter(_gb_ticks))
    ax.minorticks_off()
    for yi, i in zip(y, order):
        label = f"{values[i]:,.0f}" if honest else links[i].raw_spec.split(",")[0]
        ax.text(values[i] * 1.08, yi, label, va="center", fontsize=7)
    if honest:
        ax.set_xlabel("GB/s in one direction (10^9 B/s), log scale")
        ax.set_title("Inside one DGX H100, per direction: each step outward loses bandwidth", fontsize=9)
    else:
        ax.set_xlabel("the printed number taken as GB/s (wrong for NVLink, PCIe and the NIC)", fontsize=8)
        ax.set_title("The same links as the spec sheets print them", fontsize=9)

    nic = hardware.link("ConnectX-7 400 Gbit/s")
    hbm = hardware.link("HBM3 (H100 SXM)")
    nvl = hardware.link("NVLink 4 (per GPU, 18 links)")
    if honest:
        r_hbm, r_nvl = hardware.ratio(hbm, nic), hardware.ratio(nvl, nic)
    else:
        r_hbm, r_nvl = _printed_number(hbm) / _printed_number(nic), _printed_number(nvl) / _printed_number(nic)
    readouts = {
        "HBM / NIC": f"{r_hbm:,.1f}x",
        "NVLink / NIC": f"{r_nvl:,.2f}x",
        "NIC, one direction": (units.fmt_rate_bytes(nic.bytes_per_s_per_direction, "GB", 0) if honest
                               else f"{_printed_number(nic):,.0f} (Gbit/s, read as GB/s)"),
    }
    return fig, readouts


def bandwidth_ladder_sliders():
    """The one control of :func:`bandwidth_ladder`: which way to read the sheets."""
    from aiinfra.book.interactive import Slider

    return [Slider("view", LADDER_VIEWS, label="read the spec sheets", default=LADDER_VIEWS[0])]


#: Batch sizes offered by the request explorer.
BATCH_VALUES = (1, 2, 4, 8, 16, 32, 64, 128)
#: Peak memory bandwidths offered, in TB/s (the teaching GPU has 3.0, an H200 4.8, a B200 8).
BANDWIDTH_TB_S_VALUES = (2.0, 3.0, 4.8, 8.0)
#: Achieved fractions of peak offered for eta_B and eta_F (live only in the static book).
ETA_VALUES = (0.3, 0.4, 0.5, 0.6, 0.7, 0.8, 0.9, 1.0)


def _tok_s(x: float) -> str:
    return f"{x:,.0f} tok/s"


def request_explorer(batch: int = 32, bandwidth_tb_per_s: float = 3.0, eta_b: float = 0.7, eta_f: float = 0.5):
    """The 8B request of chapter 2 at another batch, bandwidth or efficiency.

    Left: one decode step split into the shared weight read, the batch's KV
    reads and the arithmetic, against the step time. Right: per-user and
    aggregate tokens per second over every batch of :data:`BATCH_VALUES`,
    with the chosen one marked. All other assumptions are
    :data:`aiinfra.deployment.TEACHING_8B`'s. Returns ``(Figure, readouts)``.
    """
    b = check("batch", batch, "int>=1", scalar=True)
    bw = check("bandwidth_tb_per_s", bandwidth_tb_per_s, ">0") * units.TB
    d = TEACHING_8B.replace(gpu=hardware.custom_gpu(base=TEACHING_8B.gpu, memory_bandwidth_bytes_per_s=bw),
                            eta_b=eta_b, eta_f=eta_f)
    prompt = TEACHING_PROMPT_TOKENS
    one, step = d.step(1, prompt), d.step(b, prompt)
    curve = d.step(np.array(BATCH_VALUES), prompt)

    fig, (ax1, ax2) = new_figure(8.4, 3.3, ncols=2, left=0.08, right=0.985, bottom=0.17, top=0.86, wspace=0.32)
    w_ms = roofline.memory_time_s(step.weight_bytes, bw, d.eta_b) / units.ms
    kv_ms = roofline.memory_time_s(step.kv_bytes, bw, d.eta_b) / units.ms
    c_ms = step.compute_s / units.ms
    ax1.bar([0], [w_ms], color=PALETTE["blue"], width=0.55, label="weights, read once")
    ax1.bar([0], [kv_ms], bottom=[w_ms], color=PALETTE["sky"], width=0.55, label=f"KV of {b} request(s)")
    ax1.bar([1], [c_ms], color=PALETTE["orange"], width=0.55, label="arithmetic, 2N per request")
    ax1.axhline(step.time_s / units.ms, color="black", linewidth=1, linestyle="--")
    ax1.text(1.45, step.time_s / units.ms, "step", va="bottom", ha="right", fontsize=7)
    ax1.set_xticks([0, 1], ["memory", "compute"])
    ax1.set_xlim(-0.6, 1.6)
    ax1.set_ylabel("ms per decode step (bound)")
    ax1.legend(fontsize=6.5, loc="upper right", frameon=False)
    top = max(w_ms + kv_ms, c_ms)
    ax1.set_ylim(0, top * 1.45)

    xs = np.array(BATCH_VALUES, dtype=float)
    ax2.plot(xs, curve.tokens_per_s, color=PALETTE["green"], marker="o", markersize=3, label="all requests")
    ax2.plot(xs, curve.tokens_per_s_per_user, color=PALETTE["grey"], linestyle="--", marker="o", markersize=3,
             label="one user")
    ax2.plot([b], [step.tokens_per_s], "o", color=PALETTE["red"], markersize=7, zorder=5)
    ax2.set_xscale("log", base=2)
    ax2.set_yscale("log")
    ax2.set_xticks(list(BATCH_VALUES), [str(x) for x in BATCH_VALUES])
    ax2.minorticks_off()
    ax2.yaxis.set_major_formatter(FuncFormatter(lambda v, _p: f"{v:,.0f}"))
    ax2.set_xlabel("batch size B (requests)")
    ax2.set_ylabel("tokens per second (bound)")
    ax2.legend(fontsize=7, loc="center right", frameon=False)
    fig.suptitle(f"8B model in BF16, {bandwidth_tb_per_s:g} TB/s at {d.eta_b:.0%}, "
                 f"{units.fmt_flops_rate(d.peak_flops_per_s, 0)} at {d.eta_f:.0%} "
                 "(teaching assumptions, not a measurement)", fontsize=8.5)
    readouts = {
        f"prefill, {prompt:,} tokens": units.fmt_time(d.prefill(prompt).time_s, 1),
        "decode step, batch 1": units.fmt_time(one.time_s, 1),
        f"decode step, batch {b}": units.fmt_time(step.time_s, 1),
        "one user": _tok_s(step.tokens_per_s / b),
        "all requests": _tok_s(step.tokens_per_s),
        "gain over batch 1": f"{step.tokens_per_s / one.tokens_per_s:,.1f}x",
        "KV share of bytes read": f"{step.kv_share:.0%}",
    }
    return fig, readouts


def request_explorer_sliders():
    """Batch and bandwidth move in the static book; the two efficiencies move in a live kernel."""
    from aiinfra.book.interactive import Slider

    return [
        Slider("batch", BATCH_VALUES, label="batch B", default=32, max_static=4),
        Slider("bandwidth_tb_per_s", BANDWIDTH_TB_S_VALUES, label="peak HBM bandwidth", default=3.0,
               fmt="{:g} TB/s", max_static=3),
        Slider("eta_b", ETA_VALUES, label="eta_B (bandwidth achieved)", default=0.7, fmt="{:.0%}"),
        Slider("eta_f", ETA_VALUES, label="eta_F (compute achieved)", default=0.5, fmt="{:.0%}"),
    ]
