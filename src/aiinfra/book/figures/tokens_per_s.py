"""Tokens/s calculator: the memory-bound speed limit of single-stream decode.

One request, batch 1, on one GPU. Each generated token needs one forward
pass that streams every weight from HBM, so

    tok/s ~ eta_B * beta / (N * b / 8)          (N parameters, b bits each)

(:func:`aiinfra.decode.memory_bound_tokens_per_s`). KV reads are left out:
at batch 1 and short context they are small next to the weights. The
figure plots the bound over model size for 16-, 8- and 4-bit weights and
marks the chosen point; the readouts first check capacity (do the weights
fit in the GPU's memory less the book's 10 % reserve? if not, how many GPUs
they need at least, as :attr:`aiinfra.deployment.Deployment.min_gpus` counts),
then give decode tok/s, the time for a reply of ``reply_tokens`` tokens and
the bytes streamed per token. A point whose weights do not fit is drawn
hollow and labelled "does not fit": its speed is the bound the bandwidth
would allow, on hardware that cannot hold the model.
Serves the latency chapter (source: TheCatch "Latency, throughput,
tokens/sec"; Pope et al. 2022).
"""

from __future__ import annotations

import numpy as np

from aiinfra import decode, memory, units
from aiinfra.book.interactive import Slider, View, interactive_figure, redraws
from aiinfra.catalog import hardware
from aiinfra.deployment import DEFAULT_MEMORY_RESERVE
from aiinfra.formula import check, choice

from . import FONT, PALETTE, new_figure, panel_title

__all__ = ["MODEL_SIZES", "BITS", "draw", "sliders", "show"]

#: Model sizes on the slider (parameters). 7B, 70B and 175B are the source's.
MODEL_SIZES = (7e9, 13e9, 34e9, 70e9, 175e9, 405e9)
#: Weight precisions on the slider, in bits per parameter.
BITS = (16, 8, 4)
_BITS_COLOR = {16: PALETTE["blue"], 8: PALETTE["orange"], 4: PALETTE["green"]}


def _weight_bytes(n_params, bits_per_param):
    """Bytes streamed per decode step when all ``n_params`` weights are read: ``N * b / 8``."""
    return memory.weight_bytes_formula(n_params, units.bytes_from_bits(bits_per_param))


def _default_bandwidth(gpu_name: str) -> float:
    return float(hardware.gpu(gpu_name).memory_bandwidth_bytes_per_s)


@redraws("n_params", "bits_per_param")
def draw(
    n_params=70e9,
    bits_per_param=16,
    bandwidth_bytes_per_s=None,
    gpu_name="H100 SXM",
    reply_tokens=1000,
    efficiency=1.0,
):
    """Draw the decode speed limit; return ``(Figure, readouts)``.

    ``bandwidth_bytes_per_s`` defaults to the HBM bandwidth of ``gpu_name``
    in the hardware catalog. ``efficiency`` is the achieved fraction of that
    bandwidth (1 = the bound). The three precision curves are drawn once;
    the chosen precision's curve, the marked point and its label move.
    """
    reply = check("reply_tokens", reply_tokens, "int>=1", scalar=True)
    eta = check("efficiency", efficiency, "(0,1]")
    bw = (
        _default_bandwidth(gpu_name)
        if bandwidth_bytes_per_s is None
        else check("bandwidth_bytes_per_s", bandwidth_bytes_per_s, ">0")
    )
    capacity = float(hardware.gpu(gpu_name).memory_bytes)

    sizes = np.geomspace(min(MODEL_SIZES) / 1.5, max(MODEL_SIZES) * 1.5, 60)
    curves = {b: decode.memory_bound_tokens_per_s(_weight_bytes(sizes, b), bw, efficiency=eta) for b in BITS}
    fig, ax = new_figure(6.4, 3.3, left=0.12, right=0.97, bottom=0.16, top=0.9)
    for b in BITS:
        ax.loglog(
            sizes / units.GIGA, curves[b], color=_BITS_COLOR[b], lw=1.1, alpha=0.55, label=f"{b}-bit weights"
        )
    (chosen,) = ax.plot([], [], lw=2.6, zorder=4)
    (dot,) = ax.plot([], [], "o", ms=9, mec="black", zorder=5)
    note = ax.annotate(
        "",
        (1, 1),
        xytext=(10, 8),
        textcoords="offset points",
        fontsize=FONT["title"],
        fontweight="bold",
        zorder=6,
    )
    ax.set_xlabel("model size (billions of parameters)")
    ax.set_ylabel("decode tokens/s (one stream)")
    ax.set_xticks([s / units.GIGA for s in MODEL_SIZES], [f"{s / units.GIGA:g}B" for s in MODEL_SIZES])
    ax.minorticks_off()
    ax.set_xlim(sizes[0] / units.GIGA, sizes[-1] / units.GIGA)
    ax.set_ylim(1, 3000)
    ax.set_yticks([1, 10, 100, 1000], ["1", "10", "100", "1,000"])  # plain labels: mathtext is slow
    ax.grid(True, which="major", alpha=0.3)
    ax.legend(loc="upper right", fontsize=FONT["legend"], frameon=False)
    panel_title(ax, f"memory-bound limit at {units.fmt_rate_bytes(bw)} HBM, batch 1")

    def update(n_params, bits_per_param):
        n = check("n_params", n_params, ">0")
        bits = choice("bits_per_param", bits_per_param, set(BITS))
        per_token = _weight_bytes(n, bits)
        tok_s = decode.memory_bound_tokens_per_s(per_token, bw, efficiency=eta)
        chosen.set_data(sizes / units.GIGA, curves[bits])
        chosen.set_color(_BITS_COLOR[bits])
        usable = capacity * (1 - DEFAULT_MEMORY_RESERVE)  # the book's reserve for activations and workspace
        fits = per_token <= usable
        dot.set_data([n / units.GIGA], [tok_s])
        dot.set_color(_BITS_COLOR[bits])
        dot.set_markerfacecolor(_BITS_COLOR[bits] if fits else "white")
        note.set_text(f"{tok_s:,.1f} tok/s" + ("" if fits else ", does not fit"))
        note.xy = (n / units.GIGA, tok_s)
        # label to the left of points in the right third, so it never leaves the axes
        right_side = n > MODEL_SIZES[len(MODEL_SIZES) // 2]
        note.set_position((-10, 8) if right_side else (10, 8))
        note.set_horizontalalignment("right" if right_side else "left")
        gpus = int(memory.min_cards(per_token, capacity, capacity - usable))

        def gb(x, d=1):
            return units.fmt_bytes(x, unit="GB", digits=d)

        return {
            f"weights in one {gpu_name}": f"fit ({gb(per_token)} of {gb(usable)} usable)"
            if fits
            else f"do not fit: {gb(per_token)} > {gb(usable)} usable; at least {gpus} GPUs",
            "decode tokens/s": f"{tok_s:,.1f} tok/s" + ("" if fits else " (the bound, if it fit)"),
            f"time for a {reply:,}-token reply": units.fmt_time(reply / tok_s, digits=1),
            "bytes streamed per token": units.fmt_bytes(per_token, unit="GB", digits=1),
        }

    return View(fig, update, [chosen, dot, note])


def sliders():
    """Model size (6 values) and weight precision (16/8/4 bit): an 18-frame grid."""
    return [
        Slider(
            "n_params", MODEL_SIZES, label="model size", default=70e9, fmt=lambda v: f"{v / units.GIGA:g}B"
        ),
        Slider("bits_per_param", BITS, label="precision", default=16, fmt="{}-bit"),
    ]


def show(mode=None, **fixed):
    """The interactive calculator (both sliders precomputed in the static book)."""
    return interactive_figure(
        draw, sliders(), title="Tokens/s calculator: the memory-bound speed limit", fixed=fixed, mode=mode
    )
