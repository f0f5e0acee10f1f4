"""Tokens/s calculator: the memory-bound speed limit of single-stream decode.

One request, batch 1, on one GPU. Each generated token needs one forward
pass that streams every weight from HBM, so

    tok/s ~ eta_B * beta / (N * b / 8)          (N parameters, b bits each)

(:func:`aiinfra.decode.memory_bound_tokens_per_s`). KV reads are left out:
at batch 1 and short context they are small next to the weights. The
figure plots the bound over model size for 16-, 8- and 4-bit weights and
marks the chosen point; the readouts give decode tok/s, the time for a
reply of ``reply_tokens`` tokens and the bytes streamed per token.
Serves the latency chapter (source: TheCatch "Latency, throughput,
tokens/sec"; Pope et al. 2022).
"""
from __future__ import annotations

from aiinfra.formula import check, choice

import numpy as np

from aiinfra import decode, memory, units
from aiinfra.book.interactive import Slider, interactive_figure
from aiinfra.catalog import hardware
from . import PALETTE, new_figure, panel_title

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


def draw(n_params=70e9, bits_per_param=16, bandwidth_bytes_per_s=None, gpu_name="H100 SXM",
         reply_tokens=1000, efficiency=1.0):
    """Draw the decode speed limit; return ``(Figure, readouts)``.

    ``bandwidth_bytes_per_s`` defaults to the HBM bandwidth of ``gpu_name``
    in the hardware catalog. ``efficiency`` is the achieved fraction of that
    bandwidth (1 = the bound).
    """
    n = check("n_params", n_params, ">0")
    bits = choice("bits_per_param", bits_per_param, set(BITS))
    reply = check("reply_tokens", reply_tokens, "int>=1", scalar=True)
    eta = check("efficiency", efficiency, "(0,1]")
    bw = _default_bandwidth(gpu_name) if bandwidth_bytes_per_s is None else check("bandwidth_bytes_per_s", bandwidth_bytes_per_s, ">0")

    sizes = np.geomspace(min(MODEL_SIZES) / 1.5, max(MODEL_SIZES) * 1.5, 60)
    fig, ax = new_figure(6.4, 3.1, left=0.13, bottom=0.17, top=0.9)
    for b in BITS:
        rate = decode.memory_bound_tokens_per_s(_weight_bytes(sizes, b), bw, efficiency=eta)
        ax.loglog(sizes / units.GIGA, rate, color=_BITS_COLOR[b], lw=2.2 if b == bits else 1.1,
                  alpha=1.0 if b == bits else 0.55, label=f"{b}-bit weights")
    per_token = _weight_bytes(n, bits)
    tok_s = decode.memory_bound_tokens_per_s(per_token, bw, efficiency=eta)
    ax.plot([n / units.GIGA], [tok_s], "o", ms=9, color=_BITS_COLOR[bits], mec="black", zorder=5)
    ax.annotate(f"{tok_s:,.1f} tok/s", (n / units.GIGA, tok_s), xytext=(10, 8), textcoords="offset points",
                fontsize=10, fontweight="bold")
    ax.set_xlabel("model size (billions of parameters)")
    ax.set_ylabel("decode tokens/s (one stream)")
    ax.set_xticks([s / units.GIGA for s in MODEL_SIZES], [f"{s / units.GIGA:g}B" for s in MODEL_SIZES])
    ax.minorticks_off()
    ax.set_ylim(1, 3000)
    ax.set_yticks([1, 10, 100, 1000], ["1", "10", "100", "1,000"])  # plain labels: mathtext is slow
    ax.grid(True, which="major", alpha=0.3)
    ax.legend(loc="upper right", fontsize=8, frameon=False)
    panel_title(ax, f"memory-bound limit at {units.fmt_rate_bytes(bw)} HBM, batch 1", fontsize=10)

    reply_s = reply / tok_s
    readouts = {
        "decode tokens/s": f"{tok_s:,.1f} tok/s",
        f"time for a {reply:,}-token reply": units.fmt_time(reply_s, digits=1),
        "bytes streamed per token": units.fmt_bytes(per_token, unit="GB", digits=1),
    }
    return fig, readouts


def sliders():
    """Model size (6 values) and weight precision (16/8/4 bit): an 18-frame grid."""
    return [
        Slider("n_params", MODEL_SIZES, label="model size", default=70e9, fmt=lambda v: f"{v / units.GIGA:g}B"),
        Slider("bits_per_param", BITS, label="precision", default=16, fmt="{}-bit"),
    ]


def show(mode=None, **fixed):
    """The interactive calculator (both sliders precomputed in the static book)."""
    return interactive_figure(draw, sliders(), title="Tokens/s calculator: the memory-bound speed limit",
                              fixed=fixed, mode=mode)
