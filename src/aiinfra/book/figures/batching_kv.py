"""Batching vs the KV budget: a 70B model on an 8 x 80 GB node, every request at 8K context.

Batching shares one read of the weights among ``B`` requests, so aggregate
tokens/s climbs with ``B``; but each request streams its own KV cache every
step and keeps it resident, so the cache eats the HBM left after the
weights. The figure redoes TheCatch's "KV cache & batching" widget
consistently, with the library:

* the node is one :class:`aiinfra.deployment.Deployment` (8 GPUs, no memory
  reserve, as in that widget); step time is its
  :meth:`~aiinfra.deployment.Deployment.step` over the node's aggregate
  bandwidth and compute: weights read once, plus every request's KV, or the
  FLOPs if those take longer;
* the widget's naive claim, ``B x`` one GPU's single-stream rate
  (:func:`aiinfra.decode.naive_batch_tokens_per_s`), is drawn dashed for
  comparison; it ignores the KV reads and the other seven GPUs;
* the largest batch whose KV fits is the deployment's
  :meth:`~aiinfra.deployment.Deployment.max_batch`: 185 requests with the
  real cache, so the batch slider runs to 200 and shows the memory filling.

Two KV layouts: the real grouped-query attention of Llama-3.1-70B (8 KV
heads of 128: 320 KiB per token) and full multi-head attention (64 KV
heads: 2.5 MiB per token, 8x more, the back-of-envelope assumption that
fits only 23 requests). Weights in BF16; decimal GB.
"""

from __future__ import annotations

from functools import lru_cache

import numpy as np

from aiinfra import decode, units
from aiinfra.book.figures import FONT, PALETTE, new_figure, panel_title
from aiinfra.book.interactive import Slider, View, interactive_figure, redraws
from aiinfra.deployment import Deployment
from aiinfra.formula import check, choice

__all__ = ["BATCHES", "STATIC_BATCHES", "KV_LAYOUTS", "node", "draw", "sliders", "show"]

BATCHES = tuple(range(1, 201))
#: Batches precomputed for the static page (23/24 bracket the full-MHA limit, 185/186 the real one).
STATIC_BATCHES = (1, 2, 4, 8, 16, 23, 24, 32, 48, 64, 96, 128, 160, 185, 186, 200)
KV_LAYOUTS = ("gqa", "mha")
_KV_LABEL = {"gqa": "GQA, 8 KV heads", "mha": "full MHA, 64 KV heads"}
#: The slider's labels: short enough for the slider's readout, which cuts longer ones.
_KV_SHORT = {"gqa": "GQA, 8 KV heads", "mha": "MHA, 64 KV heads"}


@lru_cache(maxsize=16)
def node(
    model_name="Llama-3.1-70B", gpu_name="H100 SXM", n_gpus=8, context_tokens=8192, kv_layout="gqa"
) -> Deployment:
    """The (cached) node of a case, as a :class:`~aiinfra.deployment.Deployment`: BF16 weights, no reserve.

    ``kv_layout="mha"`` caches all query heads (full multi-head attention) instead of the model's KV heads.
    The figure's defaults are the node of TheCatch's widget.
    """
    choice("kv_layout", kv_layout, set(KV_LAYOUTS))
    check("context_tokens", context_tokens, "int>=1", scalar=True)
    d = Deployment(model_name, gpu_name, n_gpus=n_gpus, memory_reserve=0.0)
    return d if kv_layout == "gqa" else d.replace(kv_heads=d.model.n_heads)


def _gb(x):
    """Decimal GB with thousands separated: ``3,371.5 GB``."""
    return f"{x / units.GB:,.1f} GB"


@redraws("batch", "kv_layout")
def draw(
    batch=1, kv_layout="gqa", model_name="Llama-3.1-70B", gpu_name="H100 SXM", n_gpus=8, context_tokens=8192
):
    """Draw throughput against batch and the HBM budget at ``batch``; return ``(Figure, readouts)``."""
    nodes = {k: node(model_name, gpu_name, n_gpus, context_tokens, k) for k in KV_LAYOUTS}
    bs = np.asarray(BATCHES, dtype=float)
    curves = {k: nd.step(bs, context_tokens).tokens_per_s for k, nd in nodes.items()}
    nd0 = nodes["gqa"]
    naive = decode.naive_batch_tokens_per_s(bs, nd0.weight_bytes, nd0.gpu.memory_bandwidth_bytes_per_s)
    top = 1.05 * max(naive.max(), *(c.max() for c in curves.values()))
    gb = units.GB

    fig, (ax, hb) = new_figure(
        7.2, 3.4, ncols=2, left=0.1, right=0.98, bottom=0.27, top=0.9, wspace=0.22, width_ratios=(1.25, 1.0)
    )
    ax.plot(bs, naive, "--", color=PALETTE["grey"], lw=1.2, label="naive: B x one-GPU rate")
    (fit_line,) = ax.plot([], [], color=PALETTE["blue"], lw=2.2, label="weights + KV over node HBM")
    (over_line,) = ax.plot([], [], color=PALETTE["blue"], lw=1.2, alpha=0.35)
    over_span = ax.axvspan(0, 1, color=PALETTE["red"], alpha=0.1, lw=0)
    over_text = ax.text(
        bs[-1] - 2, 0.04 * top, "KV does not fit", color=PALETTE["red"], ha="right", fontsize=FONT["note"]
    )
    (dot,) = ax.plot([], [], "o", mec="black", ms=8, zorder=5)
    ax.set_xlim(0, bs[-1] + 2)
    ax.set_ylim(0, top)
    ax.set_xlabel("batch size (concurrent requests)")
    ax.set_ylabel("aggregate tokens/s")
    ax.legend(
        loc="upper center", bbox_to_anchor=(0.6, -0.17), fontsize=FONT["legend"], frameon=False, ncols=1
    )
    ax.grid(True, alpha=0.3)
    title = panel_title(ax, "", loc="left")

    # the HBM bar: fixed axis up to 1.3x the node's HBM; KV beyond it is drawn to the edge and labelled
    cap = nd0.capacity_bytes / gb
    hb.barh([0], [nd0.weight_bytes / gb], color=PALETTE["grey"], height=0.5, label="weights")
    kv_bar = hb.barh(
        [0], [0.0], left=nd0.weight_bytes / gb, height=0.5, color=PALETTE["orange"], label="KV cache"
    )[0]
    beyond = hb.barh(
        [0], [0.0], left=cap, height=0.5, color=PALETTE["red"], hatch="//", label="KV beyond HBM"
    )[0]
    hb.axvline(cap, color="black", lw=1.2)
    hb.text(
        cap,
        0.42,
        f"{nd0.n_gpus} x {nd0.gpu.memory_bytes / gb:g} GB ",
        fontsize=FONT["note"],
        va="bottom",
        ha="right",
    )
    xmax = 1.3 * cap
    hb.set_xlim(0, xmax)
    hb.set_ylim(-0.6, 0.8)
    hb.set_yticks([])
    hb.set_xlabel("HBM on the node (GB)")
    hb.legend(
        loc="upper center", bbox_to_anchor=(0.5, -0.17), fontsize=FONT["legend"], frameon=False, ncols=2
    )
    share = panel_title(hb, "", loc="left")

    def update(batch, kv_layout):
        b = check("batch", batch, "int>=1", scalar=True)
        if b > BATCHES[-1]:
            raise ValueError(f"batch must lie in [1, {BATCHES[-1]}], got {batch!r}")
        nd = nodes[choice("kv_layout", kv_layout, set(KV_LAYOUTS))]
        max_batch = nd.max_batch(context_tokens)
        fits = bs <= max_batch
        agg = curves[kv_layout]
        fit_line.set_data(bs[fits], agg[fits])
        over_line.set_data(bs[~fits], agg[~fits])
        over_span.set_x(max_batch + 0.5)
        over_span.set_width(bs[-1] + 2 - (max_batch + 0.5))
        for a in (over_line, over_span, over_text):
            a.set_visible(not fits.all())
        step = nd.step(b, context_tokens)
        dot.set_data([b], [step.tokens_per_s])
        dot.set_color(PALETTE["blue"] if b <= max_batch else PALETTE["red"])
        dot.set_markeredgecolor("black")
        title.set_text(f"{context_tokens:,}-token context, {_KV_LABEL[kv_layout]}")

        kv_used = b * nd.kv_copies * nd.kv_bytes(context_tokens)
        kv_bar.set_width(min(kv_used, nd.free_bytes) / gb)
        beyond.set_width(min(max(kv_used - nd.free_bytes, 0.0) / gb, xmax - cap))
        share.set_text(
            f"KV: {kv_used / nd.free_bytes:.0%} of {_gb(nd.free_bytes)} free"
            if b <= max_batch
            else f"KV {_gb(kv_used - nd.free_bytes)} over {_gb(nd.free_bytes)} free"
        )
        if b <= max_batch:
            per_user = f"{step.tokens_per_s_per_user:,.1f} tok/s"
            aggregate = f"{step.tokens_per_s:,.0f} tok/s"
        else:
            per_user = aggregate = f"does not fit (max batch {max_batch})"
        return {
            "aggregate throughput": aggregate,
            "per-user tok/s": per_user,
            "KV cache used": f"{_gb(kv_used)} of {_gb(nd.free_bytes)} free",
        }

    return View(fig, update, [fit_line, over_line, over_span, over_text, dot, title, kv_bar, beyond, share])


def sliders():
    """Batch 1 to 200 (16 precomputed) x KV layout (2): a 32-frame static grid."""
    return [
        Slider("batch", BATCHES, label="batch size", default=1, static=STATIC_BATCHES),
        Slider("kv_layout", KV_LAYOUTS, label="KV layout", default="gqa", fmt=lambda v: _KV_SHORT[v]),
    ]


def show(mode=None, **fixed):
    """The interactive batching-vs-KV figure."""
    return interactive_figure(
        draw, sliders(), title="Batching: throughput vs the KV cache budget", fixed=fixed, mode=mode
    )
