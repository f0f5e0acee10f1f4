"""Figures of chapter 3, "What inference is": pure functions ``params -> (Figure, readouts)``.

:func:`two_n_drift` sets the exact FLOPs of one decode step beside the
``2N`` rule: on the left, the pieces of both counts for one model at the
chosen context (blocks, lm_head, embedding, attention); on the right, the
ratio exact / 2N against the context for several shipped models, with the
+-10 % band in which the rule is good enough. Every number comes from
:mod:`aiinfra.compute`.

:func:`decode_intensity` draws the arithmetic intensity of a whole decode
step against the batch for an MHA, a GQA and an MLA model at the chosen
context, beside each one's attention intensity (the level the step falls to
as the cache grows) and a GPU's ridge point; every number comes from
:mod:`aiinfra.roofline`.
"""

from __future__ import annotations

import numpy as np
from matplotlib.ticker import FuncFormatter

from aiinfra import compute, roofline, units
from aiinfra.book.figures import FONT, PALETTE, new_figure
from aiinfra.book.interactive import Slider, View, redraws
from aiinfra.catalog import hardware
from aiinfra.formula import check

__all__ = [
    "CONTEXT_VALUES",
    "DRIFT_MODELS",
    "two_n_drift",
    "two_n_drift_sliders",
    "INTENSITY_MODELS",
    "INTENSITY_CONTEXTS",
    "decode_intensity",
    "decode_intensity_sliders",
]

#: Contexts offered by the slider (tokens already in the KV cache).
CONTEXT_VALUES = (256, 2048, 4096, 16384, 32768, 131072)
#: Models drawn on the right panel (the first one is broken down on the left).
DRIFT_MODELS = ("Qwen3-8B", "Llama-3.1-70B", "Llama-3.2-3B")

_PIECES = (
    ("blocks", "block matrices", PALETTE["blue"]),
    ("lm_head", "lm_head", PALETTE["green"]),
    ("embedding", "embedding table", PALETTE["grey"]),
    ("attention", "attention over the context", PALETTE["orange"]),
)
_LINE_COLOURS = (PALETTE["blue"], PALETTE["purple"], PALETTE["red"])


def _ctx_label(n: int) -> str:
    return f"{n // 1024}K" if n >= 1024 else str(n)


@redraws("context_tokens")
def two_n_drift(context_tokens: int = 2048, model: str = DRIFT_MODELS[0], tolerance: float = 0.1):
    """Exact decode-step FLOPs against ``2N`` at ``context_tokens``, broken down and swept over context.

    ``model`` is broken down on the left; the right panel always shows
    :data:`DRIFT_MODELS`. ``tolerance`` sets the shaded band (0.1 = +-10 %).
    Returns ``(Figure, readouts)``: the two totals, their ratio and the
    context beyond which the rule is short by more than ``tolerance``.
    """
    tol = check("tolerance", tolerance, "(0,1)")
    top = max(compute.decode_flops_breakdown(model, c)["exact"]["total"] for c in CONTEXT_VALUES) / units.GIGA
    fig, (ax1, ax2) = new_figure(
        7.2, 3.7, ncols=2, left=0.1, right=0.97, bottom=0.14, top=0.86, wspace=0.32, width_ratios=(0.85, 1.0)
    )
    bars = {}
    for x, key in ((0, "exact"), (1, "two_n")):
        for piece, label, colour in _PIECES:
            bars[key, piece] = ax1.bar([x], [0.0], color=colour, width=0.55, label=label if x == 0 else None)[
                0
            ]
    totals = [ax1.text(x, 0.0, "", ha="center", va="bottom", fontsize=FONT["small"]) for x in (0, 1)]
    ax1.set_xticks([0, 1], ["exact", "2N rule"])
    ax1.set_xlim(-0.6, 1.6)
    ax1.set_ylim(0, top * 1.6)
    ax1.set_ylabel("GFLOPs per decode step")
    ax1.legend(fontsize=FONT["small"], loc="upper left", frameon=False)
    title1 = ax1.set_title("", fontsize=FONT["note"], loc="left")

    grid = np.unique(np.geomspace(64, 262144, 60).astype(int))
    ax2.axhspan(1 - tol, 1 + tol, color=PALETTE["light"], alpha=0.6, lw=0)
    ax2.axhline(1.0, color="black", linewidth=0.6)
    dots = []
    for name, colour in zip(DRIFT_MODELS, _LINE_COLOURS):
        ax2.plot(grid, compute.two_n_ratio(name, grid), color=colour, label=name)
        dots.append((name, ax2.plot([], [], "o", color=colour, markersize=6, zorder=5)[0]))
    here = ax2.axvline(64, color=PALETTE["grey"], linewidth=0.8, linestyle=":")
    ax2.set_xscale("log", base=2)
    ax2.set_yscale("log")
    ticks = [256, 1024, 4096, 16384, 65536, 262144]
    ax2.set_xticks(ticks, [_ctx_label(t) for t in ticks])
    ax2.minorticks_off()
    yt = [1.0, 1.5, 2, 4, 8]
    ax2.set_yticks(yt)
    ax2.yaxis.set_major_formatter(FuncFormatter(lambda v, _p: f"{v:g}x"))
    ax2.set_ylim(0.85, 10)
    ax2.set_xlabel("context n (tokens in the KV cache)")
    ax2.set_ylabel("exact / 2N, per decode step")
    ax2.legend(fontsize=FONT["legend"], loc="upper left", frameon=False)
    ax2.set_title(f"shaded: within {tol:.0%} of the rule", fontsize=FONT["note"], loc="left")
    off = compute.context_where_two_n_is_off(model, tol)

    def update(context_tokens):
        ctx = check("context_tokens", context_tokens, "int>=0", scalar=True)
        parts = compute.decode_flops_breakdown(model, ctx)
        for x, key in enumerate(("exact", "two_n")):
            bottom = 0.0
            for piece, _, _ in _PIECES:
                v = parts[key][piece] / units.GIGA
                bars[key, piece].set_y(bottom)
                bars[key, piece].set_height(v)
                bottom += v
            totals[x].set_position((x, bottom))
            totals[x].set_text(f"{bottom:,.1f}")
        title1.set_text(f"{model}: one token\nat {ctx:,} tokens of context")
        x = max(ctx, 64)
        for name, dot in dots:
            dot.set_data([x], [compute.two_n_ratio(name, x)])
        here.set_xdata([x, x])
        return {
            "exact, one step": units.fmt_flops(parts["exact"]["total"]),
            "2N rule": units.fmt_flops(parts["two_n"]["total"]),
            "exact / 2N": f"{compute.two_n_ratio(model, ctx):.3f}",
            "attention share of exact": f"{parts['exact']['attention'] / parts['exact']['total']:.1%}",
            f"2N is > {tol:.0%} short beyond": f"{off:,.0f} tokens",
        }

    return View(fig, update, [*bars.values(), *totals, title1, *(d for _, d in dots), here])


def two_n_drift_sliders():
    """The context slider of :func:`two_n_drift`."""
    return [
        Slider("context_tokens", CONTEXT_VALUES, label="context", default=2048, fmt=lambda n: f"{n:,} tokens")
    ]


#: (model, its attention, bytes per weight as served): one model per kind of attention, weights as shipped.
INTENSITY_MODELS = (
    ("c4ai-command-r-v01", "MHA", 2.0),
    ("Llama-3.1-70B", "GQA", 2.0),
    ("DeepSeek-V3", "MLA", 1.0),
)
#: Contexts offered by the intensity slider (tokens in each request's cache).
INTENSITY_CONTEXTS = (1024, 4096, 8192, 32768, 131072)
_BATCHES = np.unique(np.geomspace(1, 1024, 41).astype(int))
_KIND_COLOURS = (PALETTE["red"], PALETTE["blue"], PALETTE["green"])


@redraws("context_tokens")
def decode_intensity(context_tokens: int = 8192, gpu: str = "H200 SXM", read_batch: int = 256):
    """Decode-step intensity against the batch for MHA, GQA and MLA models at ``context_tokens``.

    Solid: :func:`aiinfra.roofline.model_decode_step_intensity_flops_per_byte`
    for each of :data:`INTENSITY_MODELS` (BF16 cache) over batches 1 to 1,024;
    dashed: the attention intensity it tends to as the cache grows; black: the
    BF16 ridge point of ``gpu``. Returns ``(Figure, readouts)``: the step
    intensity of each model at ``read_batch`` and the ridge.
    """
    g = hardware.gpu(gpu)
    rb = check("read_batch", read_batch, "int>=1", scalar=True)
    ridge = roofline.ridge_point_flops_per_byte(g.bf16_dense_flops_per_s, g.memory_bandwidth_bytes_per_s)
    fig, ax = new_figure(7.2, 3.8, left=0.1, right=0.97, bottom=0.14, top=0.9)
    lines = []
    for (name, kind, bw), colour in zip(INTENSITY_MODELS, _KIND_COLOURS):
        attn = roofline.model_decode_attention_intensity_flops_per_byte(name)
        ax.axhline(attn, color=colour, linewidth=1.0, linestyle="--")
        lines.append(
            (name, bw, ax.plot(_BATCHES, np.ones_like(_BATCHES), color=colour, label=f"{kind}: {name}")[0])
        )
    ax.axhline(ridge, color="black", linewidth=1.2)
    ax.text(
        1000,
        ridge * 0.8,
        f"{g.name} BF16 ridge, {ridge:.0f} FLOP/B",
        fontsize=FONT["small"],
        ha="right",
        va="top",
    )
    ax.set_xscale("log", base=2)
    ax.set_yscale("log")
    ax.set_xticks([1, 4, 16, 64, 256, 1024], ["1", "4", "16", "64", "256", "1,024"])
    ax.minorticks_off()
    ax.set_yticks([1, 10, 100, 1000], ["1", "10", "100", "1,000"])
    ax.set_xlim(1, 1024)
    ax.set_ylim(0.5, 2000)
    ax.set_xlabel("batch (requests in one decode step)")
    ax.set_ylabel("FLOP per byte read")
    ax.legend(fontsize=FONT["legend"], loc="upper left", frameon=False)
    title = ax.set_title("", fontsize=FONT["note"], loc="left")

    def update(context_tokens):
        ctx = check("context_tokens", context_tokens, "int>=1", scalar=True)
        out = {}
        for name, bw, line in lines:
            y = roofline.model_decode_step_intensity_flops_per_byte(name, _BATCHES, ctx, bw)
            line.set_ydata(y)
            at = roofline.model_decode_step_intensity_flops_per_byte(name, rb, ctx, bw)
            out[f"{name}, batch {rb}"] = f"{at:,.0f} FLOP/B"
        out["ridge"] = f"{ridge:.0f} FLOP/B"
        title.set_text(f"solid: whole step at {ctx:,} tokens per request; dashed: attention alone")
        return out

    return View(fig, update, [*(line for _, _, line in lines), title])


def decode_intensity_sliders():
    """The context slider of :func:`decode_intensity`."""
    return [
        Slider(
            "context_tokens", INTENSITY_CONTEXTS, label="context", default=8192, fmt=lambda n: f"{n:,} tokens"
        )
    ]
