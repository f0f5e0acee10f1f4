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
from aiinfra.book.figures import PALETTE
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
    ("Applications and tasks", "what must be done, how fast, at what cost",
     "latency target, $ per task", "Ch. 1, 4"),
    ("Models and workloads", "which computations and which state",
     "parameters N, context, KV per token", "Ch. 3, 5"),
    ("Training and inference systems", "batches, queues, placement of state",
     "batch B, KV budget", "Ch. 5, 7"),
    ("Operators, compilers, runtime", "tiling, fusion, when work is launched",
     "achieved fraction of peak", "Ch. 2, 4"),
    ("Processors and memory", "arithmetic and the bytes that feed it",
     "capacity, FLOP/s, bytes/s", "Ch. 2, 4"),
    ("Interconnect and data center", "links, switches, power and cooling",
     "link bytes/s, watts", "Ch. 2, 6"),
)


def _new_figure(width_in: float, height_in: float, fast: bool = False) -> Figure:
    """A bare Figure; ``fast`` skips constrained layout (interactive frames are redrawn often)."""
    return Figure(figsize=(width_in, height_in), layout=None if fast else "constrained")


def six_layers():
    """The six layers from task to hardware, with the number to check first at each.

    Returns ``(Figure, readouts)``; readouts map each layer to its number.
    """
    fig = _new_figure(8.0, 4.6)
    ax = fig.add_subplot()
    ax.set_xlim(0, 10)
    ax.set_ylim(0, len(SIX_LAYERS))
    ax.axis("off")
    shades = ["#dbe5f1", "#cfdcec", "#c3d3e7", "#b7cae2", "#abc1dd", "#9fb8d8"]
    n = len(SIX_LAYERS)
    for i, (name, decides, number, where) in enumerate(SIX_LAYERS):
        y = n - 1 - i
        ax.add_patch(FancyBboxPatch((0.15, y + 0.08), 8.0, 0.84, boxstyle="round,pad=0.0,rounding_size=0.08",
                                    facecolor=shades[i], edgecolor="#34495e", linewidth=0.8))
        ax.text(0.3, y + 0.62, name, fontsize=10.5, fontweight="bold", va="center")
        ax.text(0.3, y + 0.3, decides, fontsize=8.5, va="center", color="#333333")
        ax.text(5.2, y + 0.62, "check first:", fontsize=8, va="center", color="#555555")
        ax.text(5.2, y + 0.3, number, fontsize=8.5, va="center", style="italic")
        ax.text(7.95, y + 0.78, where, fontsize=7.5, va="center", ha="right", color="#34495e")
    ax.add_patch(FancyArrowPatch((8.75, n - 0.2), (8.75, 0.2), arrowstyle="-|>", mutation_scale=14,
                                 color=_BLUE, linewidth=1.6))
    ax.text(8.95, n / 2, "a task becomes\nFLOPs and bytes", rotation=90, va="center", ha="center",
            fontsize=8.5, color=_BLUE)
    ax.add_patch(FancyArrowPatch((9.55, 0.2), (9.55, n - 0.2), arrowstyle="-|>", mutation_scale=14,
                                 color=_ORANGE, linewidth=1.6))
    ax.text(9.8, n / 2, "capacity and bandwidth\nlimit what runs", rotation=90, va="center", ha="center",
            fontsize=8.5, color=_ORANGE)
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
    fig = _new_figure(9.0, 3.6)
    ax = fig.add_subplot()
    ax.set_xlim(0, 12.8)
    ax.set_ylim(-0.5, 4.3)
    ax.axis("off")
    w, h = 1.55, 0.8
    # top row: the service path; bottom row: inside one inference instance
    pos = {
        0: (0.1, 2.7), 1: (2.0, 2.7), 2: (3.9, 2.7),
        3: (3.9, 1.0), 4: (5.7, 1.0), 5: (7.5, 1.0), 6: (9.3, 1.0),
        7: (11.1, 2.7),
    }
    for k, (label, where, _row) in enumerate(_REQUEST_STAGES):
        x, y = pos[k]
        face = "#dbe5f1" if where == "GPU" else "#eeeeee"
        edge = _BLUE if where == "GPU" else _GREY
        ax.add_patch(FancyBboxPatch((x, y), w, h, boxstyle="round,pad=0.02,rounding_size=0.08",
                                    facecolor=face, edgecolor=edge, linewidth=1.1))
        ax.text(x + w / 2, y + h / 2, label, ha="center", va="center", fontsize=7.5)

    def arrow(a, b, **kw):
        ax.add_patch(FancyArrowPatch(a, b, arrowstyle="-|>", mutation_scale=11, linewidth=1.0,
                                     color=kw.pop("color", "#333333"), **kw))

    arrow((1.65, 3.1), (2.0, 3.1))
    arrow((3.55, 3.1), (3.9, 3.1))
    arrow((4.675, 2.7), (4.675, 1.8))
    arrow((5.45, 1.4), (5.7, 1.4))
    arrow((7.25, 1.4), (7.5, 1.4))
    arrow((9.05, 1.4), (9.3, 1.4))
    arrow((10.2, 1.8), (11.6, 2.7))
    # the KV cache: prefill writes it, every decode step reads it and appends one entry
    ax.add_patch(FancyBboxPatch((7.9, -0.35), 2.6, 0.55, boxstyle="round,pad=0.02,rounding_size=0.08",
                                facecolor="#fbe3d4", edgecolor=_ORANGE, linewidth=1.1))
    ax.text(9.2, -0.08, "KV cache in HBM", ha="center", va="center", fontsize=8)
    arrow((8.3, 1.0), (8.5, 0.2), color=_ORANGE)
    arrow((9.9, 0.2), (10.05, 1.0), color=_ORANGE)
    # the decode loop: one step's token is the next step's input
    ax.plot([10.85, 11.2, 11.2], [1.2, 1.2, 1.6], color=_BLUE, linewidth=1.0)
    arrow((11.2, 1.6), (10.85, 1.6), color=_BLUE)
    ax.text(11.3, 1.3, "repeat once per\noutput token", fontsize=7, color=_BLUE, va="center")
    # a tool call goes back to the application
    ax.plot([11.875, 11.875, 0.875, 0.875], [3.5, 4.0, 4.0, 3.55], color=_GREEN, linewidth=1.0)
    arrow((0.875, 3.75), (0.875, 3.5), color=_GREEN)
    ax.text(6.4, 4.08, "tool call: the application runs the tool, appends its result and calls the model again",
            ha="center", fontsize=7.5, color=_GREEN)
    ax.text(0.1, 1.3, "inside one\ninference instance", fontsize=8, color="#555555")
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
        raise ValueError(f"seconds must be a 1-D array with one entry per operation ({len(ops)}), got {secs.shape}")
    fig = _new_figure(7.5, 0.32 * len(ops) + 0.9)
    ax = fig.add_subplot()
    y = np.arange(len(ops))[::-1]
    colors = [_ORANGE if o in highlight else _BLUE for o in ops]
    ax.barh(y, secs / units.ns, color=colors, height=0.65)
    ax.set_yticks(y, ops, fontsize=8)
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
#: Batch sizes the explorer offers (powers of two from 1 to 256).
BATCH_VALUES = (1, 2, 4, 8, 16, 32, 64, 128, 256)
#: GPUs the batch explorer offers: three generations of data-center parts.
EXPLORER_GPUS = ("A100 80GB SXM", "H100 SXM", "B200")
#: Context length and workspace used for the KV readout of the explorers.
EXPLORER_CONTEXT_TOKENS = 8192
EXPLORER_WORKSPACE_BYTES = 2 * units.GiB
_CAPACITY_MODEL = "DeepSeek-R1-Distill-Llama-70B"


_SUPERSCRIPT = str.maketrans("-0123456789", "\u207b\u2070\u00b9\u00b2\u00b3\u2074\u2075\u2076\u2077\u2078\u2079")


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


def batch_explorer(batch=1, gpu="H100 SXM", n_params=EXAMPLE_N_PARAMS, weight_precision=EXAMPLE_WEIGHT_PRECISION):
    """Decode step time and throughput against batch size for Example 1-1's model.

    The model of chapter 1, a :class:`~aiinfra.deployment.RoundModel` on one
    GPU: ``B`` requests share one read of ``b_W N`` weight bytes and each
    costs ``2N`` FLOPs, so ``T = max(2BN/Pi, b_W N/beta)`` at the GPU's BF16
    peak (KV reads ignored, as in the example). Marks the chosen ``batch`` and
    the critical batch ``B* = b_W Pi / (2 beta)``. The readouts also check
    whether the KV of ``batch`` requests at 8,192 tokens (the real 70B model's
    GQA cache, BF16) fits beside the 8-bit weights and a 2 GiB workspace.
    Returns ``(Figure, readouts)``.
    """
    b = check("batch", batch, "int>=1", scalar=True)
    d = Deployment(RoundModel(n_params, kv_bytes_per_token=0.0), gpu, weight_precision=weight_precision)
    g, n, bw_ = d.gpu, d.model.n_params, d.bytes_per_weight
    b_star = d.critical_batch
    grid = np.unique(np.concatenate([np.geomspace(1, 256, 33), [b_star] if 1 < b_star < 256 else [], [b]]))
    curve = d.step(grid)
    here = d.step(b)

    fig = _new_figure(8.4, 3.3, fast=True)
    fig.subplots_adjust(left=0.08, right=0.985, bottom=0.15, top=0.9, wspace=0.28)
    ax1, ax2 = fig.subplots(1, 2)
    ax1.plot(curve.batch, np.broadcast_to(curve.memory_s, grid.shape) / units.ms, color=_ORANGE, label="read the weights")
    ax1.plot(curve.batch, curve.compute_s / units.ms, color=_BLUE, label="arithmetic, 2BN FLOPs")
    ax1.plot(curve.batch, curve.time_s / units.ms, color="black", linewidth=2.2, alpha=0.35, label="step bound (max)")
    ax1.plot([b], [here.time_s / units.ms], "o", color="black", markersize=7, zorder=5)
    ax1.set_xscale("log", base=2)
    ax1.set_yscale("log")
    ax1.set_xlabel("batch size B (requests)")
    ax1.set_ylabel("time per decode step (ms)")
    ax1.legend(fontsize=7, loc="lower right")
    ax2.plot(curve.batch, curve.tokens_per_s, color=_GREEN, label="all requests")
    ax2.plot(curve.batch, curve.tokens_per_s_per_user, color=_GREY, linestyle="--", label="one request")
    ax2.plot([b], [here.tokens_per_s], "o", color="black", markersize=7, zorder=5)
    ax2.set_xscale("log", base=2)
    ax2.set_yscale("log")
    ax2.set_xlabel("batch size B (requests)")
    ax2.set_ylabel("tokens per second (bound)")
    ax2.legend(fontsize=7, loc="upper left")
    for ax in (ax1, ax2):
        if b_star <= 256:
            ax.axvline(b_star, color=_GREY, linewidth=0.8, linestyle=":")
        ax.spines[["top", "right"]].set_visible(False)
        ax.set_xlim(1, 256)
        ax.set_xticks([1, 4, 16, 64, 256], ["1", "4", "16", "64", "256"])
        ax.minorticks_off()
        ax.yaxis.set_major_formatter(FuncFormatter(_plain_ticks_fn))
    ax1.text(min(b_star, 256) * 0.93, ax1.get_ylim()[1] * 0.7, f"B* = {b_star:.0f}", fontsize=7.5, ha="right",
             color="#555555")
    fig.suptitle(f"{g.name}: {n / units.GIGA:.0f}B parameters at {bw_:g} byte each (model, not measurement)", fontsize=9)

    m = _shipped_model(_CAPACITY_MODEL)
    kv_need = b * memory.kv_bytes_per_request(m, EXPLORER_CONTEXT_TOKENS)
    free = memory.free_bytes(memory.grouped_quant_weight_bytes(m, bits=8), 0.0, EXPLORER_WORKSPACE_BYTES, g.memory_bytes)
    step = here.time_s
    readouts = {
        "step time (bound)": _fmt_time(step),
        "time per output token": _fmt_time(step / b),
        "throughput, all requests": _fmt_rate_tokens(b / step),
        "speed one user sees": _fmt_rate_tokens(1 / step),
        "B* on this GPU": f"{b_star:.1f}",
        "bound": here.bound,
        f"KV of B requests at {EXPLORER_CONTEXT_TOKENS:,} tokens": (f"{units.fmt_bytes(kv_need, 'GB', 1)} vs "
                                        f"{units.fmt_bytes(max(free, 0.0), 'GB', 1)} free"),
    }
    return fig, readouts


def batch_explorer_sliders():
    """The two sliders of :func:`batch_explorer`: batch size, then GPU."""
    from aiinfra.book.interactive import Slider

    return [
        Slider("batch", BATCH_VALUES, label="batch size B", default=1, fmt="{}", max_static=5),
        Slider("gpu", EXPLORER_GPUS, label="GPU", default="H100 SXM", fmt="{}"),
    ]


# ---------------------------------------------------------------------------
# Interactive: capacity explorer (what fits, by precision, card kind and count)
# ---------------------------------------------------------------------------

#: Card kinds offered by the capacity explorer (consumer, workstation, data center).
CAPACITY_GPUS = ("RTX 4090", "H100 SXM", "H200 SXM")
#: Card counts offered by the capacity explorer.
CARD_COUNTS = (1, 2, 3, 4, 8)
#: The three weight formats compared: (label, how to size them)
_PRECISIONS = (("BF16", None), ("8-bit, groups of 128", 8), ("4-bit, groups of 128", 4))


def _weights_by_precision(m):
    out = []
    for label, bits in _PRECISIONS:
        w = memory.weight_bytes(m, "bf16") if bits is None else memory.grouped_quant_weight_bytes(m, bits=bits)
        out.append((label, w))
    return out


@lru_cache(maxsize=8)
def _shipped_model(name: str):
    """A shipped config, loaded once per process (figures redraw many frames)."""
    return models.load(name)


def capacity_explorer(gpu="H100 SXM", n_cards=1, model=_CAPACITY_MODEL, context_tokens=EXPLORER_CONTEXT_TOKENS,
                      workspace_bytes_per_card=EXPLORER_WORKSPACE_BYTES):
    """Per-card memory of the 70B model in three weight formats on ``n_cards`` x ``gpu``.

    Weights and one request's KV (BF16, ``context_tokens``) are split evenly
    over the cards; each card also reserves ``workspace_bytes_per_card``.
    A bar per format stacks weights, KV and workspace against the card's
    capacity. Readouts say, per format, whether it fits and how many such
    requests the leftover memory could hold. Returns ``(Figure, readouts)``.
    """
    g = hardware.gpu(gpu)
    n = check("n_cards", n_cards, "int>=1", scalar=True)
    m = _shipped_model(model) if isinstance(model, str) else models.load(model)
    ws = check("workspace_bytes_per_card", workspace_bytes_per_card, ">=0")
    kv = memory.kv_bytes_per_request(m, check("context_tokens", context_tokens, "int>=1", scalar=True))
    cap = g.memory_bytes

    fig = _new_figure(6.4, 3.3, fast=True)
    fig.subplots_adjust(left=0.1, right=0.98, bottom=0.1, top=0.9)
    ax = fig.add_subplot()
    readouts = {}
    x = np.arange(len(_PRECISIONS))
    weights = _weights_by_precision(m)
    w_card = np.array([memory.split_even(w, n) for _, w in weights])
    kv_card = memory.split_even(kv, n)
    stacks = [(w_card, _BLUE, "weights"), (np.full(len(x), kv_card), _ORANGE, "KV, one request"),
              (np.full(len(x), float(ws)), _GREY, "workspace")]
    bottom = np.zeros(len(x))
    for values, color, name in stacks:       # one bar() call per layer of the stack
        ax.bar(x, values / units.GB, bottom=bottom / units.GB, color=color, width=0.6, label=name)
        bottom = bottom + values
    top = float(bottom.max())
    for i, (label, _) in enumerate(weights):
        left = memory.free_bytes(w_card[i], kv_card, ws, cap)
        if left >= 0:
            total = 1 + decode.max_batch_from_kv_budget(n * left, kv)
            verdict = f"fits; room for {total} request{'s' if total > 1 else ''}"
            ax.text(i, bottom[i] / units.GB + 1, "fits", ha="center", fontsize=8, color=_GREEN)
        else:
            verdict = f"over by {units.fmt_bytes(-left, 'GB', 1)} per card"
            ax.text(i, bottom[i] / units.GB + 1, "does not fit", ha="center", fontsize=8, color=_RED)
        readouts[label] = verdict
    ax.axhline(cap / units.GB, color=_RED, linewidth=1.2, linestyle="--",
               label=f"capacity of one card: {cap / units.GB:g} GB")
    ax.set_xticks(x, [label for label, _ in _PRECISIONS], fontsize=8)
    ax.set_ylabel("GB per card (decimal)")
    ax.set_ylim(0, max(top, cap) / units.GB * 1.4)
    ax.legend(fontsize=7, loc="upper center", ncol=2, frameon=False)
    ax.spines[["top", "right"]].set_visible(False)
    ax.set_title(f"{m.name} on {n} x {g.name}, {context_tokens:,}-token request", fontsize=8.5)
    readouts["cards of this kind needed for 8-bit weights alone"] = str(memory.min_cards(weights[1][1], cap))
    return fig, readouts


def capacity_explorer_sliders():
    """The two sliders of :func:`capacity_explorer`: card kind, then card count."""
    from aiinfra.book.interactive import Slider

    return [
        Slider("gpu", CAPACITY_GPUS, label="card", default="H100 SXM", fmt="{}"),
        Slider("n_cards", CARD_COUNTS, label="number of cards", default=1, fmt="{}"),
    ]


# ---------------------------------------------------------------------------
# Static: the step model against the two measured Qwen3-8B points
# ---------------------------------------------------------------------------

def measurement_check(record=None, context_tokens=None, max_batch=128):
    """Predicted TPOT and throughput of the step model, with the measured points on top.

    Lines are the model ``max(B F_1/Pi, (R_W + B R_state)/beta)`` at the GPU's
    peaks for the record's model (weights read once per step, each request's
    KV at ``context_tokens``, default the prompt length): a **prediction**,
    drawn as lines and labelled so. Markers are the record's measured points
    only. Returns ``(Figure, readouts)`` with the predicted and measured
    values at each measured batch.
    """
    rec = QWEN3_8B_RTX_PRO_6000 if record is None else record
    d = Deployment(rec.model, rec.gpu, weight_precision=rec.precision)
    g = d.gpu
    ctx = rec.prompt_tokens if context_tokens is None else check("context_tokens", context_tokens, "int>=0", scalar=True)
    top = check("max_batch", max_batch, "int>=2", scalar=True)
    grid = np.unique(np.concatenate([np.geomspace(1, top, 40), rec.measured_batches()]))
    curve = d.step(grid, ctx)
    t1 = d.step(1, ctx).time_s

    fig = _new_figure(8.4, 3.2)
    ax1, ax2 = fig.subplots(1, 2)
    ax1.plot(curve.batch, curve.time_s / units.ms, color=_BLUE, label="model (prediction, lower bound)")
    mb = rec.measured_batches()
    ax1.plot(mb, [rec.tpot(b) / units.ms for b in mb], "s", color=_RED, markersize=7, label="measured TPOT")
    ax1.set_xscale("log", base=2)
    ax1.set_xlabel("concurrent requests B")
    ax1.set_ylabel("time per output token (ms)")
    ax1.set_ylim(0, max(rec.tpot(b) for b in mb) / units.ms * 1.25)
    ax1.legend(fontsize=7, loc="upper left")
    ax2.plot(curve.batch, curve.tokens_per_s / (1.0 / t1), color=_BLUE, label="model (prediction)")
    ax2.plot(curve.batch, curve.batch, color=_GREY, linestyle=":", label="weight reads only (ideal)")
    ax2.plot(mb, [rec.throughput_ratio[b] for b in mb], "s", color=_RED, markersize=7, label="measured")
    ax2.set_xscale("log", base=2)
    ax2.set_yscale("log", base=2)
    ax2.set_xlabel("concurrent requests B")
    ax2.set_ylabel("throughput relative to B = 1")
    ax2.legend(fontsize=7, loc="upper left")
    for ax in (ax1, ax2):
        ax.spines[["top", "right"]].set_visible(False)
        ax.set_xticks([1, 4, 16, 64], ["1", "4", "16", "64"])
        ax.minorticks_off()
    ax2.yaxis.set_major_formatter(FuncFormatter(_plain_ticks_fn))
    fig.suptitle(f"{rec.model} ({rec.precision.upper()}) on {g.name}: lines are the model, squares are measurements",
                 fontsize=8.5)
    readouts = {}
    for b in mb:
        readouts[f"B={b} predicted"] = units.fmt_time(d.step(b, ctx).time_s)
        readouts[f"B={b} measured"] = units.fmt_time(rec.tpot(b))
    return fig, readouts
