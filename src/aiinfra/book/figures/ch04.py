"""Figures of chapter 4, "Latency, throughput, tokens per second": pure functions ``params -> (Figure, readouts)``.

* :func:`throughput_latency`: the trade-off curve of batching. For every batch
  from 1 up to the largest whose KV cache fits, one point: per-user speed
  (``1 / T_step``) against the replica's aggregate rate (``B / T_step``), with
  ``T_step`` the roofline step of a :class:`aiinfra.deployment.Deployment`
  (default memory reserve). Sliders: the context each request holds, and the
  weight precision.
* :func:`latency_timeline`: one request's life on a time axis: queueing,
  prefill (TTFT), then one bar per decode step (TPOT), so the three latency
  metrics are seen as lengths.

Every number drawn comes from a library call. Figures are built with
:class:`matplotlib.figure.Figure` directly, never through pyplot.
"""

from __future__ import annotations

import numpy as np
from matplotlib.ticker import FuncFormatter, NullFormatter

from aiinfra import decode, units
from aiinfra.book.figures import FONT, PALETTE, new_figure
from aiinfra.book.interactive import Slider, View, redraws
from aiinfra.deployment import Deployment
from aiinfra.formula import check, choice

__all__ = [
    "CONTEXT_VALUES",
    "PRECISION_VALUES",
    "throughput_latency",
    "throughput_latency_sliders",
    "latency_timeline",
]

#: Context lengths on the slider (tokens held by every request), doublings from 1K to 32K.
CONTEXT_VALUES = (1024, 2048, 4096, 8192, 16384, 32768)
#: Weight precisions on the slider (names understood by :func:`aiinfra.units.bytes_per_param`).
PRECISION_VALUES = ("bf16", "fp8", "int4")
_MARKED = (1, 8, 32, 128, 512)
_PLAIN = FuncFormatter(lambda v, _pos: f"{v:,.0f}")


@redraws("context_tokens", "precision")
def throughput_latency(context_tokens=4096, precision="bf16", model="Qwen3-8B", gpu="H100 SXM", n_gpus=1):
    """Per-user vs aggregate decode rate as the batch grows, up to the KV limit.

    Each point is one batch size ``B``; its step time is the roofline bound
    ``max(B F_1 / Pi, (W + B S) / beta)``. The curve stops at
    ``B_max = floor(free / S)``, where the caches fill the memory left by the
    weights and the deployment's memory reserve. The dashed curve is the
    calibrated prediction of the same steps (:func:`aiinfra.predict.calibrated_step_s`).
    Readouts: ``B_max``, per-user speed at ``B = 1`` and at ``B_max``,
    aggregate rate at ``B_max`` (bounds), and the predicted aggregate at ``B_max``.
    """
    from aiinfra import predict

    Deployment(model, gpu, n_gpus=n_gpus)  # validates the model, GPU and count once
    fig, ax = new_figure(6.4, 3.5, left=0.12, right=0.96, bottom=0.14, top=0.91)
    (curve,) = ax.plot([], [], color=PALETTE["blue"], lw=2, label="bound (100% of peak)")
    (pred_curve,) = ax.plot([], [], color=PALETTE["blue"], lw=1.5, ls="--", label="calibrated prediction")
    ax.legend(fontsize=FONT["small"], loc="lower left", frameon=False)
    marks = [
        (
            b,
            ax.plot([], [], "o", color=PALETTE["blue"], ms=5)[0],
            ax.annotate(
                f"B={b}", (1, 1), xytext=(5, -12), textcoords="offset points", fontsize=FONT["small"]
            ),
        )
        for b in _MARKED
    ]
    (full,) = ax.plot([], [], "s", color=PALETTE["red"], ms=7, zorder=5)
    full_note = ax.annotate(
        "", (1, 1), xytext=(6, 4), textcoords="offset points", fontsize=FONT["small"], color=PALETTE["red"]
    )
    empty = ax.text(
        0.5,
        0.5,
        "one request's KV cache does not fit",
        ha="center",
        va="center",
        transform=ax.transAxes,
        fontsize=FONT["note"],
    )
    ax.set_xscale("log")
    ax.set_yscale("log")
    # fixed axes, so that moving a slider moves the curve, not the frame
    ax.set_xlim(10, 2000)
    ax.set_ylim(30, 60000)
    ax.set_xticks([10, 30, 100, 300, 1000])
    ax.set_yticks([30, 100, 300, 1000, 3000, 10000, 30000])
    for axis in (ax.xaxis, ax.yaxis):
        axis.set_major_formatter(_PLAIN)
        axis.set_minor_formatter(NullFormatter())
    ax.set_xlabel("per-user speed (tokens/s, one stream)")
    ax.set_ylabel("aggregate (tokens/s, whole batch)")
    ax.grid(alpha=0.3)
    title = ax.set_title("", fontsize=FONT["note"])
    moving = [
        curve,
        pred_curve,
        *(a for _, dot, note in marks for a in (dot, note)),
        full,
        full_note,
        empty,
        title,
    ]

    def update(context_tokens, precision):
        ctx = check("context_tokens", context_tokens, "int>=1", scalar=True)
        choice("precision", precision, set(PRECISION_VALUES))
        d = Deployment(model, gpu, n_gpus=n_gpus, weight_precision=precision)
        bmax = int(d.max_batch(ctx))
        title.set_text(f"{d.model.name}, {precision}, {d.n_gpus} x {d.gpu.name}, {ctx:,}-token context")
        for a in moving[:-2]:
            a.set_visible(bmax >= 1)
        empty.set_visible(bmax < 1)
        if bmax < 1:
            return {"largest batch that fits": "0", "per-user speed": "no room for one request"}
        batch = np.unique(np.round(np.geomspace(1, bmax, 80)).astype(int))
        step = d.step(batch, ctx)
        user, total = step.tokens_per_s_per_user, step.tokens_per_s
        curve.set_data(user, total)
        # predict.calibrated_step_s for every batch, its setup and fitted parameters found once per step
        predict.calibrated_step_s(d, 1, ctx)  # rejects what no stored run calibrates (a TPU)
        setup, fit = predict.setup_of_deployment(d), predict.fitted()
        pred_total = np.array([b / predict.decode_step_s(setup, fit, int(b), ctx) for b in batch])
        pred_curve.set_data(pred_total / batch, pred_total)
        for b, dot, note in marks:
            i = int(np.searchsorted(batch, b))
            dot.set_visible(b <= bmax)
            note.set_visible(b <= bmax)
            if b <= bmax:
                dot.set_data([user[i]], [total[i]])
                note.xy = (user[i], total[i])
        full.set_data([user[-1]], [total[-1]])
        full_note.xy = (user[-1], total[-1])
        full_note.set_text(f"KV full: B={bmax:,}")
        return {
            "largest batch that fits": f"{bmax:,}",
            "per-user speed, B = 1": f"{user[0]:,.0f} tok/s",
            "per-user speed, B max": f"{user[-1]:,.1f} tok/s",
            "aggregate, B max": f"{total[-1]:,.0f} tok/s",
            "aggregate, B max (prediction)": f"{pred_total[-1]:,.0f} tok/s",
        }

    return View(fig, update, moving)


def throughput_latency_sliders():
    """Slider definitions for :func:`throughput_latency` (context held per request, weight precision)."""
    return [
        Slider(
            "context_tokens", CONTEXT_VALUES, label="context per request", default=4096, fmt="{:,} tokens"
        ),
        Slider(
            "precision",
            PRECISION_VALUES,
            label="weights",
            default="bf16",
            fmt=lambda p: {"bf16": "BF16 (16-bit)", "fp8": "FP8 (8-bit)", "int4": "INT4 (4-bit)"}[p],
        ),
    ]


@redraws("output_tokens")
def latency_timeline(queue_s, ttft_s, tpot_s, output_tokens=12):
    """One request on a time axis: queueing, prefill (ends at the first token), then decode steps.

    ``ttft_s`` counts from arrival and includes ``queue_s``; each later token
    costs one ``tpot_s``. The first token comes from prefill, so the reply
    ends at ``TTFT + (G - 1) TPOT`` (:func:`aiinfra.decode.end_to_end_latency_s`).
    The time axis ends with the reply, so a change of ``output_tokens`` moves
    the axis and every bar and mark on it; the decode steps are one
    collection of bars, not a bar each.
    """
    q = check("queue_s", queue_s, ">=0")
    first = check("ttft_s", ttft_s, ">0")
    step = check("tpot_s", tpot_s, ">0")
    if q >= first:
        raise ValueError(
            f"queue_s must be < ttft_s (TTFT includes the queue), got queue_s={q}, ttft_s={first}"
        )
    fig, ax = new_figure(6.4, 2.1, left=0.03, right=0.97, bottom=0.3, top=0.86)
    ms = 1 / units.ms
    # the axis ends with the reply, so everything drawn in data units moves with output_tokens
    on_axis = [
        *ax.barh(0, q * ms, color=PALETTE["grey"], height=0.5),
        *ax.barh(0, (first - q) * ms, left=q * ms, color=PALETTE["orange"], height=0.5),
        ax.annotate("queue", (q * ms / 2, 0.38), ha="center", fontsize=FONT["small"]),
        ax.annotate("prefill", ((q + (first - q) / 2) * ms, 0.38), ha="center", fontsize=FONT["small"]),
        ax.axvline(first * ms, color="black", lw=0.8),
        ax.annotate(
            f"TTFT {units.fmt_time(first)}", (first * ms, -0.55), ha="center", fontsize=FONT["small"]
        ),
    ]
    steps = ax.broken_barh([], (-0.25, 0.5), facecolors=PALETTE["blue"], edgecolors="none")
    steps_note = ax.text(0, 0.38, "", ha="center", fontsize=FONT["small"])
    end_note = ax.text(0, -0.55, "", ha="right", fontsize=FONT["small"])
    ax.set_ylim(-0.75, 0.7)
    ax.set_yticks([])
    ax.spines[["left"]].set_visible(False)
    ax.set_xlabel("time since the request arrived (ms)")

    def update(output_tokens):
        g = check("output_tokens", output_tokens, "int>=2", scalar=True)
        e2e = decode.end_to_end_latency_s(first, step, g)
        steps.set_verts(
            [
                [(x0, -0.25), (x0, 0.25), (x0 + step * ms * 0.92, 0.25), (x0 + step * ms * 0.92, -0.25)]
                for x0 in ((first + k * step) * ms for k in range(g - 1))
            ]
        )
        steps_note.set_x((first + e2e) / 2 * ms)
        steps_note.set_text(f"{g - 1} decode steps")
        end_note.set_x(e2e * ms)
        end_note.set_text(f"end {units.fmt_time(e2e)}")
        ax.set_xlim(0, e2e * ms * 1.01)
        return {
            "TTFT": units.fmt_time(first),
            "TPOT": units.fmt_time(step),
            "end to end": units.fmt_time(e2e),
        }

    return View(fig, update, [ax.xaxis, *on_axis, steps, steps_note, end_note])
