"""Figures of chapter 1, "A first encounter": pure functions ``params -> (Figure, readouts)``.

Static figures (the six layers, the path of one request, read vs compute,
the 2009 latency ladder, the Qwen3-8B check) return ``(Figure, readouts)``
too, so every figure of the chapter can be tested the same way. The two
interactive ones, :func:`batch_explorer` and :func:`capacity_explorer`, are
wrapped by :func:`aiinfra.book.interactive.interactive_figure` in the book; the
``*_sliders()`` helpers give their slider definitions.

Every number drawn comes from a library call (hardware catalog, model
configs, roofline and decode formulas); nothing here types a result.
Figures are built with :class:`matplotlib.figure.Figure` directly, never
through pyplot, so nothing is drawn twice in a notebook.
"""

from __future__ import annotations

from functools import lru_cache

import numpy as np
from matplotlib.figure import Figure
from matplotlib.patches import FancyArrowPatch, FancyBboxPatch
from matplotlib.ticker import FuncFormatter

from aiinfra import decode, memory, units
from aiinfra.book.figures import FONT, PALETTE, _figure_class, new_figure, style_axes
from aiinfra.book.interactive import Slider, View, redraws
from aiinfra.catalog import hardware, models
from aiinfra.catalog.reference import QWEN3_8B_RTX_PRO_6000
from aiinfra.deployment import Deployment, RoundModel
from aiinfra.formula import check

__all__ = [
    "SIX_LAYERS",
    "six_layers",
    "request_path",
    "read_vs_compute",
    "latency_ladder",
    "EXAMPLE_N_PARAMS",
    "EXAMPLE_WEIGHT_PRECISION",
    "BATCH_VALUES",
    "STATIC_BATCHES",
    "EXPLORER_GPUS",
    "batch_explorer",
    "batch_explorer_sliders",
    "CAPACITY_GPUS",
    "CARD_COUNTS",
    "capacity_explorer",
    "capacity_explorer_sliders",
    "measurement_check",
]

# the book's shared colour-blind-safe palette (Okabe-Ito)
_BLUE, _ORANGE, _GREEN, _GREY, _RED = (PALETTE[k] for k in ("blue", "orange", "green", "grey", "red"))

#: The six layers of chapter 1, top (task) to bottom (hardware):
#: (name, what it decides, the number to check first, where this book treats it)
SIX_LAYERS = (
    (
        "Applications and tasks",
        "what must be done, how fast, at what cost",
        "latency target, $ per task",
        "Ch. 1, 4",
    ),
    (
        "Models and workloads",
        "which computations and which state",
        "parameters N, context, KV per token",
        "Ch. 3, 5",
    ),
    (
        "Training and inference systems",
        "batches, queues, placement of state",
        "batch B, KV budget",
        "Ch. 5, 7",
    ),
    (
        "Operators, compilers, runtime",
        "tiling, fusion, when work is launched",
        "achieved fraction of peak",
        "Ch. 2, 4",
    ),
    (
        "Processors and memory",
        "arithmetic and the bytes that feed it",
        "capacity, FLOP/s, bytes/s",
        "Ch. 2, 4",
    ),
    ("Interconnect and data center", "links, switches, power and cooling", "link bytes/s, watts", "Ch. 2, 6"),
)


def _new_figure(width_in: float, height_in: float) -> Figure:
    """A still figure with constrained layout, shown as SVG in a notebook."""
    return _figure_class()(figsize=(width_in, height_in), layout="constrained")


def six_layers():
    """The six layers from task to hardware, with the number to check first at each.

    Returns ``(Figure, readouts)``; readouts map each layer to its number.
    """
    fig = _new_figure(7.2, 4.6)
    ax = fig.add_subplot()
    ax.set_xlim(0, 10)
    ax.set_ylim(0, len(SIX_LAYERS))
    ax.axis("off")
    shades = ["#dbe5f1", "#cfdcec", "#c3d3e7", "#b7cae2", "#abc1dd", "#9fb8d8"]
    n = len(SIX_LAYERS)
    for i, (name, decides, number, where) in enumerate(SIX_LAYERS):
        y = n - 1 - i
        ax.add_patch(
            FancyBboxPatch(
                (0.1, y + 0.06),
                8.2,
                0.88,
                boxstyle="round,pad=0.0,rounding_size=0.08",
                facecolor=shades[i],
                edgecolor="#34495e",
                linewidth=0.8,
            )
        )
        ax.text(0.25, y + 0.66, name, fontsize=FONT["title"], fontweight="bold", va="center")
        ax.text(0.25, y + 0.3, decides, fontsize=FONT["small"], va="center", color="#333333")
        ax.text(8.15, y + 0.66, where, fontsize=FONT["small"], va="center", ha="right", color="#34495e")
        ax.text(4.65, y + 0.66, "check first:", fontsize=FONT["small"], va="center", color="#555555")
        ax.text(4.65, y + 0.3, number, fontsize=FONT["small"], va="center", style="italic")
    ax.add_patch(
        FancyArrowPatch(
            (8.7, n - 0.2), (8.7, 0.2), arrowstyle="-|>", mutation_scale=14, color=_BLUE, linewidth=1.6
        )
    )
    ax.text(
        8.95,
        n / 2,
        "a task becomes\nFLOPs and bytes",
        rotation=90,
        va="center",
        ha="center",
        fontsize=FONT["small"],
        color=_BLUE,
    )
    ax.add_patch(
        FancyArrowPatch(
            (9.5, 0.2), (9.5, n - 0.2), arrowstyle="-|>", mutation_scale=14, color=_ORANGE, linewidth=1.6
        )
    )
    ax.text(
        9.75,
        n / 2,
        "capacity and bandwidth\nlimit what runs",
        rotation=90,
        va="center",
        ha="center",
        fontsize=FONT["small"],
        color=_ORANGE,
    )
    return fig, {name: number for name, _, number, _ in SIX_LAYERS}


#: Stages of one generation request: (label, where it runs, row)
_REQUEST_STAGES = (
    ("client /\napplication", "CPU", 0),
    ("entry point:\nauth, quota", "CPU", 0),
    ("router:\npick instance", "CPU", 0),
    ("tokenizer", "CPU", 1),
    ("scheduler:\nqueue, batch", "CPU", 1),
    ("prefill: all\nprompt tokens", "GPU", 1),
    ("decode step:\none token", "GPU", 1),
    ("detokenize,\nstream out", "CPU", 0),
)


def request_path():
    """The path of one generation request through a serving system.

    Boxes are stages (CPU-side in grey, accelerator-side in blue); the
    decode step loops on itself through the KV cache, and a tool call loops
    back to the application. Returns ``(Figure, readouts)`` with the stage
    count and which stages run on the accelerator.
    """
    fig = _new_figure(7.2, 3.6)
    ax = fig.add_subplot()
    ax.set_xlim(0, 12.8)
    ax.set_ylim(-0.5, 4.3)
    ax.axis("off")
    w, h = 1.55, 0.8
    # top row: the service path; bottom row: inside one inference instance
    pos = {
        0: (0.1, 2.7),
        1: (2.0, 2.7),
        2: (3.9, 2.7),
        3: (3.9, 1.0),
        4: (5.7, 1.0),
        5: (7.5, 1.0),
        6: (9.3, 1.0),
        7: (11.1, 2.7),
    }
    for k, (label, where, _row) in enumerate(_REQUEST_STAGES):
        x, y = pos[k]
        face = "#dbe5f1" if where == "GPU" else "#eeeeee"
        edge = _BLUE if where == "GPU" else _GREY
        ax.add_patch(
            FancyBboxPatch(
                (x, y),
                w,
                h,
                boxstyle="round,pad=0.02,rounding_size=0.08",
                facecolor=face,
                edgecolor=edge,
                linewidth=1.1,
            )
        )
        ax.text(x + w / 2, y + h / 2, label, ha="center", va="center", fontsize=FONT["small"])

    def arrow(a, b, **kw):
        ax.add_patch(
            FancyArrowPatch(
                a,
                b,
                arrowstyle="-|>",
                mutation_scale=11,
                linewidth=1.0,
                color=kw.pop("color", "#333333"),
                **kw,
            )
        )

    arrow((1.65, 3.1), (2.0, 3.1))
    arrow((3.55, 3.1), (3.9, 3.1))
    arrow((4.675, 2.7), (4.675, 1.8))
    arrow((5.45, 1.4), (5.7, 1.4))
    arrow((7.25, 1.4), (7.5, 1.4))
    arrow((9.05, 1.4), (9.3, 1.4))
    arrow((10.2, 1.8), (11.6, 2.7))
    # the KV cache: prefill writes it, every decode step reads it and appends one entry
    ax.add_patch(
        FancyBboxPatch(
            (7.9, -0.35),
            2.6,
            0.55,
            boxstyle="round,pad=0.02,rounding_size=0.08",
            facecolor="#fbe3d4",
            edgecolor=_ORANGE,
            linewidth=1.1,
        )
    )
    ax.text(9.2, -0.08, "KV cache in HBM", ha="center", va="center", fontsize=FONT["small"])
    arrow((8.3, 1.0), (8.5, 0.2), color=_ORANGE)
    arrow((9.9, 0.2), (10.05, 1.0), color=_ORANGE)
    # the decode loop: one step's token is the next step's input
    ax.plot([10.85, 11.2, 11.2], [1.2, 1.2, 1.6], color=_BLUE, linewidth=1.0)
    arrow((11.2, 1.6), (10.85, 1.6), color=_BLUE)
    ax.text(11.3, 1.1, "once per\noutput\ntoken", fontsize=FONT["small"], color=_BLUE, va="center")
    # a tool call goes back to the application
    ax.plot([11.875, 11.875, 0.875, 0.875], [3.5, 4.0, 4.0, 3.55], color=_GREEN, linewidth=1.0)
    arrow((0.875, 3.75), (0.875, 3.5), color=_GREEN)
    ax.text(
        6.4,
        4.08,
        "tool call: the application runs the tool, appends its result and calls the model again",
        ha="center",
        fontsize=FONT["small"],
        color=_GREEN,
    )
    ax.text(0.1, 1.3, "inside one\ninference\ninstance", fontsize=FONT["small"], color="#555555", va="center")
    gpu = [lab.replace("\n", " ") for lab, where, _ in _REQUEST_STAGES if where == "GPU"]
    return fig, {"stages": str(len(_REQUEST_STAGES)), "on the accelerator": ", ".join(gpu)}


def read_vs_compute(read_time_s, compute_time_s, read_label="read the weights", compute_label="multiply-add"):
    """Two horizontal bars on a log axis: the time to read vs the time to compute.

    Used at the opening of chapter 1 for one decode step of a 70B model on an
    H100 (Example 1-1). Returns ``(Figure, readouts)`` with the ratio.
    """
    tr = check("read_time_s", read_time_s, ">0")
    tc = check("compute_time_s", compute_time_s, ">0")
    fig = _new_figure(7.0, 1.9)
    ax = fig.add_subplot()
    vals_ms = [tr / units.ms, tc / units.ms]
    ax.barh([1, 0], vals_ms, color=[_ORANGE, _BLUE], height=0.6)
    ax.set_yticks([1, 0], [read_label, compute_label])
    ax.set_xscale("log")
    ax.set_xlim(min(vals_ms) / 3, max(vals_ms) * 4)
    ax.set_xlabel("time per decode step (ms, log scale)")
    ax.xaxis.set_major_formatter(FuncFormatter(_plain_ticks_fn))
    ax.minorticks_off()
    for y, v in zip([1, 0], vals_ms):
        ax.text(v * 1.1, y, f"{v:.2f} ms" if v >= 1 else f"{v:.4f} ms", va="center", fontsize=9)
    ax.spines[["top", "right"]].set_visible(False)
    ratio = tr / tc
    return fig, {"read / compute": f"{ratio:.0f}x"}


def latency_ladder(operations, seconds, highlight=()):
    """The 2009 latency table as a log-scale ladder (one bar per operation).

    ``operations`` and ``seconds`` come from :mod:`aiinfra.catalog.reference`;
    ``highlight`` names operations drawn in orange. Returns ``(Figure, readouts)``
    with the span in orders of magnitude.
    """
    ops = list(operations)
    secs = np.asarray(check("seconds", seconds, ">0"), dtype=float)
    if secs.ndim != 1 or len(ops) != secs.size:
        raise ValueError(
            f"seconds must be a 1-D array with one entry per operation ({len(ops)}), got {secs.shape}"
        )
    fig = _new_figure(7.2, 0.3 * len(ops) + 0.9)
    ax = fig.add_subplot()
    y = np.arange(len(ops))[::-1]
    colors = [_ORANGE if o in highlight else _BLUE for o in ops]
    ax.barh(y, secs / units.ns, color=colors, height=0.65)
    ax.set_yticks(y, ops, fontsize=FONT["small"])
    ax.set_xscale("log")
    ax.set_xlabel("time (ns, log scale; 2009 hardware)")
    ax.xaxis.set_major_formatter(FuncFormatter(_plain_ticks_fn))
    ax.minorticks_off()
    ax.spines[["top", "right"]].set_visible(False)
    span = np.log10(secs.max() / secs.min())
    return fig, {"span": f"{span:.1f} orders of magnitude"}


# ---------------------------------------------------------------------------
# Interactive: batch-size explorer (Example 1-1's model on a choice of GPUs)
# ---------------------------------------------------------------------------

#: Example 1-1 rounds the 70B model to N = 70e9 parameters, read at 1 byte each (8-bit weights).
EXAMPLE_N_PARAMS = 70e9
EXAMPLE_WEIGHT_PRECISION = "int8"
#: Batch sizes the explorer offers: doublings, plus 148 next to the H100's critical batch B* = 147.7.
BATCH_VALUES = (1, 2, 4, 8, 16, 32, 64, 96, 128, 148, 192, 256)
#: Batches precomputed for the static page (148 sits at B* of the H100; every GPU at each of them).
STATIC_BATCHES = (1, 4, 16, 64, 128, 148, 192, 256)
#: GPUs the batch explorer offers: three generations of data-center parts.
EXPLORER_GPUS = ("A100 80GB SXM", "H100 SXM", "B200")
#: Context length and workspace used for the KV readout of the explorers.
EXPLORER_CONTEXT_TOKENS = 8192
EXPLORER_WORKSPACE_BYTES = 2 * units.GiB
_CAPACITY_MODEL = "DeepSeek-R1-Distill-Llama-70B"


_SUPERSCRIPT = str.maketrans(
    "-0123456789", "\u207b\u2070\u00b9\u00b2\u00b3\u2074\u2075\u2076\u2077\u2078\u2079"
)


def _plain_ticks_fn(v, _pos=None):
    """Tick labels as plain text (1, 100, 10\u2074), avoiding matplotlib's slow mathtext parser."""
    if v > 0:
        exp = np.log10(v)
        if abs(exp - round(exp)) < 1e-9 and (v >= 1e4 or v < 1e-2):
            return "10" + str(int(round(exp))).translate(_SUPERSCRIPT)
    return f"{v:g}"


def _fmt_time(seconds: float) -> str:
    return units.fmt_time(seconds)


def _fmt_rate_tokens(x: float) -> str:
    return f"{x:,.0f} tok/s" if x >= 100 else f"{x:.1f} tok/s"


def _explorer_deployment(gpu, n_params, weight_precision) -> Deployment:
    return Deployment(RoundModel(n_params, kv_bytes_per_token=0.0), gpu, weight_precision=weight_precision)


@redraws("batch", "gpu")
def batch_explorer(
    batch=1, gpu="H100 SXM", n_params=EXAMPLE_N_PARAMS, weight_precision=EXAMPLE_WEIGHT_PRECISION
):
    """Decode step time and throughput against batch size for Example 1-1's model.

    The model of chapter 1, a :class:`~aiinfra.deployment.RoundModel` on one
    GPU: ``B`` requests share one read of ``b_W N`` weight bytes and each
    costs ``2N`` FLOPs, so ``T = max(2BN/Pi, b_W N/beta)`` at the GPU's BF16
    peak (KV reads ignored, as in the example). Marks the chosen ``batch`` and
    the critical batch ``B* = b_W Pi / (2 beta)``. The readouts also check
    whether the KV of ``batch`` requests at 8,192 tokens (the real 70B model's
    GQA cache, BF16) fits beside the 8-bit weights and a 2 GiB workspace.
    Returns ``(Figure, readouts)``. The axes cover every GPU of
    :data:`EXPLORER_GPUS`, so moving a slider moves the curves, not the frame.
    """
    grid = np.geomspace(1, 256, 41)
    fixed = [_explorer_deployment(g, n_params, weight_precision).step(grid) for g in EXPLORER_GPUS]
    t_lo = min(float(np.min(c.compute_s)) for c in fixed) / units.ms
    t_hi = max(float(np.max(c.time_s)) for c in fixed) / units.ms
    r_lo = min(float(np.min(c.tokens_per_s_per_user)) for c in fixed)
    r_hi = max(float(np.max(c.tokens_per_s)) for c in fixed)

    fig, (ax1, ax2) = new_figure(7.2, 3.5, ncols=2, left=0.09, right=0.975, bottom=0.14, top=0.9, wspace=0.3)
    # the bound is a wide grey band under the two dashed terms, so all three stay visible where they meet
    (bound,) = ax1.plot(
        [], [], color="black", lw=7, alpha=0.2, solid_capstyle="butt", zorder=1, label="step bound (max)"
    )
    (mem,) = ax1.plot([], [], color=_ORANGE, lw=1.6, ls="--", zorder=2, label="read the weights")
    (arith,) = ax1.plot([], [], color=_BLUE, lw=1.6, ls="--", zorder=2, label="arithmetic, 2BN FLOPs")
    (dot1,) = ax1.plot([], [], "o", color="black", markersize=7, zorder=5)
    ax1.set_ylabel("time per decode step (ms)")
    ax1.set_ylim(t_lo / 1.5, t_hi * 4)
    ax1.legend(fontsize=FONT["legend"], loc="upper left", frameon=False)
    (every,) = ax2.plot([], [], color=_GREEN, lw=2.0, label="all requests")
    (one,) = ax2.plot([], [], color=_GREY, ls="--", lw=1.6, label="one request")
    (dot2,) = ax2.plot([], [], "o", color="black", markersize=7, zorder=5)
    ax2.set_ylabel("tokens per second (bound)")
    ax2.set_ylim(r_lo / 2, r_hi * 3)
    ax2.legend(fontsize=FONT["legend"], loc="upper left", frameon=False)
    stars = []
    for ax in (ax1, ax2):
        ax.set_xscale("log", base=2)
        ax.set_yscale("log")
        ax.set_xlabel("batch size B (requests)")
        ax.set_xlim(1, 256)
        ax.set_xticks([1, 4, 16, 64, 256], ["1", "4", "16", "64", "256"])
        ax.minorticks_off()
        ax.yaxis.set_major_formatter(FuncFormatter(lambda v, _p: f"{v:,.0f}" if v >= 1 else f"{v:g}"))
        stars.append(ax.axvline(1, color=_GREY, linewidth=0.9, linestyle=":"))
    star_text = ax1.text(
        1, 0.02, "", transform=ax1.get_xaxis_transform(), fontsize=FONT["note"], ha="right", color="#555555"
    )
    title = fig.suptitle("", fontsize=FONT["title"])
    m = _shipped_model(_CAPACITY_MODEL)
    kv_one = memory.kv_bytes_per_request(m, EXPLORER_CONTEXT_TOKENS)
    weights_8bit = memory.grouped_quant_weight_bytes(m, bits=8)

    def update(batch, gpu):
        b = check("batch", batch, "int>=1", scalar=True)
        d = _explorer_deployment(gpu, n_params, weight_precision)
        g, n, bw_ = d.gpu, d.model.n_params, d.bytes_per_weight
        b_star = d.critical_batch
        x = np.unique(np.concatenate([grid, [b_star] if 1 < b_star < 256 else []]))
        curve, here = d.step(x), d.step(b)
        mem.set_data(x, np.broadcast_to(curve.memory_s, x.shape) / units.ms)
        arith.set_data(x, curve.compute_s / units.ms)
        bound.set_data(x, curve.time_s / units.ms)
        dot1.set_data([b], [here.time_s / units.ms])
        every.set_data(x, curve.tokens_per_s)
        one.set_data(x, curve.tokens_per_s_per_user)
        dot2.set_data([b], [here.tokens_per_s])
        for line in stars:
            line.set_xdata([b_star, b_star])
            line.set_visible(b_star <= 256)
        star_text.set_position((min(b_star, 256) * 0.93, 0.03))
        star_text.set_text(f"B* = {b_star:.0f}")
        title.set_text(
            f"{g.name}: {n / units.GIGA:.0f}B parameters at {bw_:g} byte each (model, not measurement)"
        )
        free = memory.free_bytes(weights_8bit, 0.0, EXPLORER_WORKSPACE_BYTES, g.memory_bytes)
        step = here.time_s
        return {
            "step time (bound)": _fmt_time(step),
            "time per output token": _fmt_time(step / b),
            "throughput, all requests": _fmt_rate_tokens(b / step),
            "speed one user sees": _fmt_rate_tokens(1 / step),
            "B* on this GPU": f"{b_star:.1f}",
            "bound": here.bound,
            f"KV of B requests at {EXPLORER_CONTEXT_TOKENS:,} tokens": (
                f"{units.fmt_bytes(b * kv_one, 'GB', 1)} vs {units.fmt_bytes(max(free, 0.0), 'GB', 1)} free"
            ),
        }

    return View(fig, update, [bound, mem, arith, dot1, every, one, dot2, *stars, star_text, title])


def batch_explorer_sliders():
    """The two sliders of :func:`batch_explorer`: batch size, then GPU (every position precomputed)."""
    return [
        Slider("batch", BATCH_VALUES, label="batch size B", default=1, fmt="{}", static=STATIC_BATCHES),
        Slider("gpu", EXPLORER_GPUS, label="GPU", default="H100 SXM", fmt="{}"),
    ]


# ---------------------------------------------------------------------------
# Interactive: capacity explorer (what fits, by precision, card kind and count)
# ---------------------------------------------------------------------------

#: Card kinds offered by the capacity explorer (consumer, workstation, data center).
CAPACITY_GPUS = ("RTX 4090", "H100 SXM", "H200 SXM")
#: Card counts offered by the capacity explorer (every count: 7 RTX 4090s is the fewest that hold BF16 weights).
CARD_COUNTS = (1, 2, 3, 4, 5, 6, 7, 8)
#: The three weight formats compared: (label, how to size them)
_PRECISIONS = (("BF16", None), ("8-bit, groups of 128", 8), ("4-bit, groups of 128", 4))


def _weights_by_precision(m):
    out = []
    for label, bits in _PRECISIONS:
        w = (
            memory.weight_bytes(m, "bf16")
            if bits is None
            else memory.grouped_quant_weight_bytes(m, bits=bits)
        )
        out.append((label, w))
    return out


@lru_cache(maxsize=8)
def _shipped_model(name: str):
    """A shipped config, loaded once per process (figures redraw many frames)."""
    return models.load(name)


def _cards(n: int) -> str:
    return f"{n} card" + ("s" if n != 1 else "")


@redraws("gpu", "n_cards")
def capacity_explorer(
    gpu="H100 SXM",
    n_cards=1,
    model=_CAPACITY_MODEL,
    context_tokens=EXPLORER_CONTEXT_TOKENS,
    workspace_bytes_per_card=EXPLORER_WORKSPACE_BYTES,
):
    """Per-card memory of the 70B model in three weight formats on ``n_cards`` x ``gpu``.

    Weights and one request's KV (BF16, ``context_tokens``) are split evenly
    over the cards; each card also reserves ``workspace_bytes_per_card``.
    A bar per format stacks weights, KV and workspace against the card's
    capacity, on an axis up to 1.6 times that capacity (a taller bar is cut
    there and labelled with its height). Readouts say, per format, whether it
    fits and how many such requests the leftover memory could hold. Returns
    ``(Figure, readouts)``.
    """
    m = _shipped_model(model) if isinstance(model, str) else models.load(model)
    ws = check("workspace_bytes_per_card", workspace_bytes_per_card, ">=0")
    kv = memory.kv_bytes_per_request(m, check("context_tokens", context_tokens, "int>=1", scalar=True))
    weights = _weights_by_precision(m)
    x = np.arange(len(_PRECISIONS))

    fig, ax = new_figure(7.2, 3.4, left=0.09, right=0.7, bottom=0.14, top=0.9)
    layers = [
        ax.bar(x, np.zeros(len(x)), color=color, width=0.6, label=name)
        for color, name in ((_BLUE, "weights"), (_ORANGE, "KV, one request"), (_GREY, "workspace"))
    ]
    cap_line = ax.axhline(1.0, color=_RED, linewidth=1.2, linestyle="--", label="capacity of one card")
    verdicts = [ax.text(i, 0.0, "", ha="center", va="bottom", fontsize=FONT["note"]) for i in x]
    ax.set_xticks(x, [label.replace(", ", ",\n") for label, _ in _PRECISIONS], fontsize=FONT["tick"])
    ax.set_ylabel("GB per card (decimal)")
    ax.legend(
        [*layers, cap_line],
        ["weights", "KV, one request", "workspace", "capacity of\none card"],
        fontsize=FONT["legend"],
        loc="upper left",
        bbox_to_anchor=(1.02, 1.0),
        frameon=False,
    )
    title = fig.text(0.01, 0.97, "", fontsize=FONT["title"], va="top")
    bars = [r for layer in layers for r in layer.patches]

    def update(gpu, n_cards):
        g = hardware.gpu(gpu)
        n = check("n_cards", n_cards, "int>=1", scalar=True)
        cap = g.memory_bytes
        top = 1.6 * cap / units.GB
        w_card = np.array([memory.split_even(w, n) for _, w in weights])
        kv_card = memory.split_even(kv, n)
        bottom = np.zeros(len(x))
        for layer, values in zip(layers, (w_card, np.full(len(x), kv_card), np.full(len(x), float(ws)))):
            for rect, lo, v in zip(layer.patches, bottom, values):
                rect.set_y(lo / units.GB)
                rect.set_height(v / units.GB)
            bottom = bottom + values
        readouts = {}
        for i, (label, _) in enumerate(weights):
            left = memory.free_bytes(w_card[i], kv_card, ws, cap)
            need = bottom[i] / units.GB
            tall = need > 0.86 * top  # no room above the bar: say it inside, with the bar's height
            if left >= 0:
                total = 1 + decode.max_batch_from_kv_budget(n * left, kv)
                readouts[label] = f"fits; room for {total} request{'s' if total > 1 else ''}"
                verdicts[i].set_text("fits")
            else:
                readouts[label] = f"over by {units.fmt_bytes(-left, 'GB', 1)} per card"
                verdicts[i].set_text(f"{need:,.0f} GB:\ndoes not fit" if tall else "does not fit")
            verdicts[i].set_color("white" if tall else (_GREEN if left >= 0 else _RED))
            verdicts[i].set_fontweight("bold" if tall else "normal")
            verdicts[i].set_y(0.72 * top if tall else need + 0.02 * top)
        cap_line.set_ydata([cap / units.GB] * 2)
        ax.set_ylim(0, top)
        title.set_text(
            f"{m.name} on {n} x {g.name} ({cap / units.GB:g} GB each), one {context_tokens:,}-token request"
        )
        readouts["cards of this kind needed for 8-bit weights alone"] = str(
            memory.min_cards(weights[1][1], cap)
        )
        return readouts

    # the legend stays still (the card's capacity is in the title): drawing it is a third of a step
    return View(fig, update, [ax.yaxis, *bars, cap_line, *verdicts, title])


def capacity_explorer_sliders():
    """The two sliders of :func:`capacity_explorer`: card kind, then card count (every position precomputed)."""
    return [
        Slider("gpu", CAPACITY_GPUS, label="card", default="H100 SXM", fmt="{}"),
        Slider("n_cards", CARD_COUNTS, label="number of cards", default=1, fmt=_cards),
    ]


# ---------------------------------------------------------------------------
# Static: the step model against the two measured Qwen3-8B points
# ---------------------------------------------------------------------------


def measurement_check(record=None, context_tokens=None, max_batch=128):
    """Predicted TPOT and throughput of the step model, with the measured points on top.

    Solid lines are the **bound** ``max(B F_1/Pi, (R_W + B R_state)/beta)`` at
    the GPU's peaks for the record's model (weights read once per step, each
    request's KV at ``context_tokens``, default the prompt length); dashed
    lines the calibrated **prediction** of the same step for an eager engine,
    as the record ran (:func:`aiinfra.predict.calibrated_step_s`). Markers are
    the record's measured points only. Returns ``(Figure, readouts)`` with the
    bound, the prediction and the measurement at each measured batch.
    """
    from aiinfra import predict

    rec = QWEN3_8B_RTX_PRO_6000 if record is None else record
    d = Deployment(rec.model, rec.gpu, weight_precision=rec.precision)
    g = d.gpu
    ctx = (
        rec.prompt_tokens
        if context_tokens is None
        else check("context_tokens", context_tokens, "int>=0", scalar=True)
    )
    top = check("max_batch", max_batch, "int>=2", scalar=True)
    grid = np.unique(np.concatenate([np.geomspace(1, top, 40), rec.measured_batches()]))
    curve = d.step(grid, ctx)
    t1 = d.step(1, ctx).time_s
    ints = np.unique(np.round(grid).astype(int))

    def pred(b):
        return predict.calibrated_step_s(d, int(b), ctx, graph_capture=False)

    pred_s = np.array([pred(b) for b in ints])

    fig = _new_figure(7.2, 3.6)
    ax1, ax2 = fig.subplots(1, 2)
    ax1.plot(curve.batch, curve.time_s / units.ms, color=_BLUE, label="bound (100% of peak)")
    ax1.plot(ints, pred_s / units.ms, color=_BLUE, linestyle="--", label="calibrated prediction")
    mb = rec.measured_batches()
    ax1.plot(mb, [rec.tpot(b) / units.ms for b in mb], "s", color=_RED, markersize=7, label="measured TPOT")
    ax1.set_xscale("log", base=2)
    ax1.set_xlabel("concurrent requests B")
    ax1.set_ylabel("time per output token (ms)")
    ax1.set_ylim(0, max(rec.tpot(b) for b in mb) / units.ms * 1.3)
    ax1.legend(fontsize=FONT["legend"], loc="upper left", frameon=False)
    ax2.plot(curve.batch, curve.tokens_per_s / (1.0 / t1), color=_BLUE, label="bound")
    ax2.plot(ints, ints * pred_s[0] / pred_s, color=_BLUE, linestyle="--", label="prediction")
    ax2.plot(curve.batch, curve.batch, color=_GREY, linestyle=":", label="weight reads only")
    ax2.plot(mb, [rec.throughput_ratio[b] for b in mb], "s", color=_RED, markersize=7, label="measured")
    ax2.set_xscale("log", base=2)
    ax2.set_yscale("log", base=2)
    ax2.set_xlabel("concurrent requests B")
    ax2.set_ylabel("throughput relative to B = 1")
    ax2.legend(fontsize=FONT["legend"], loc="upper left", frameon=False)
    for ax in (ax1, ax2):
        style_axes(ax)
        ax.set_xticks([1, 4, 16, 64], ["1", "4", "16", "64"])
        ax.minorticks_off()
    ax2.yaxis.set_major_formatter(FuncFormatter(_plain_ticks_fn))
    fig.suptitle(
        f"{rec.model} ({rec.precision.upper()}) on {g.name}:\nsolid lines bound, dashed prediction, squares measured",
        fontsize=FONT["title"],
    )
    readouts = {}
    for b in mb:
        readouts[f"B={b} bound"] = units.fmt_time(d.step(b, ctx).time_s)
        readouts[f"B={b} prediction"] = units.fmt_time(pred(b))
        readouts[f"B={b} measured"] = units.fmt_time(rec.tpot(b))
    return fig, readouts
