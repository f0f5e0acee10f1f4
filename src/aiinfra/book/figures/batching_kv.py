"""Batching vs the KV budget: a 70B model on an 8 x 80 GB node, every request at 8K context.

Batching shares one read of the weights among ``B`` requests, so aggregate
tokens/s climbs with ``B``; but each request streams its own KV cache every
step and keeps it resident, so the cache eats the HBM left after the
weights. The figure redoes the source's widget (TheCatch "KV cache &
batching") consistently, with the library:

* the node is one :class:`aiinfra.deployment.Deployment` (8 GPUs, no memory
  reserve, as in the source); step time is its
  :meth:`~aiinfra.deployment.Deployment.step` over the node's aggregate
  bandwidth and compute: weights read once, plus every request's KV, or the
  FLOPs if those take longer;
* the source's naive claim, ``B x`` one GPU's single-stream rate
  (:func:`aiinfra.decode.naive_batch_tokens_per_s`), is drawn dashed for
  comparison; it ignores the KV reads and the other seven GPUs;
* the largest batch whose KV fits is the deployment's
  :meth:`~aiinfra.deployment.Deployment.max_batch`.

Two KV layouts: the real grouped-query attention of Llama-3.1-70B (8 KV
heads of 128: 320 KiB per token) and the source's full multi-head
assumption (64 KV heads: 2.62 MB per token, 8x more), which is why the
source's node fits only 23 requests. Weights in BF16; decimal GB.
"""
from __future__ import annotations

from aiinfra.formula import check, choice

from functools import lru_cache

import numpy as np

from aiinfra import decode, units
from aiinfra.book.figures import PALETTE, new_figure, panel_title
from aiinfra.book.interactive import Slider, interactive_figure
from aiinfra.deployment import Deployment
from aiinfra.formula import check, choice

__all__ = ["BATCHES", "STATIC_BATCHES", "KV_LAYOUTS", "node", "draw", "sliders", "show"]

BATCHES = tuple(range(1, 141))
#: Batches precomputed for the static page (23/24 bracket the full-MHA limit).
STATIC_BATCHES = (1, 2, 4, 8, 16, 23, 24, 32, 64, 96, 128, 140)
KV_LAYOUTS = ("gqa", "mha")
_KV_LABEL = {"gqa": "GQA, 8 KV heads (Llama-3.1-70B)", "mha": "full MHA, 64 KV heads (source)"}
_KV_SHORT = {"gqa": "GQA (real)", "mha": "MHA (source)"}


@lru_cache(maxsize=16)
def node(model_name="Llama-3.1-70B", gpu_name="H100 SXM", n_gpus=8, context_tokens=8192, kv_layout="gqa") -> Deployment:
    """The (cached) node of a case, as a :class:`~aiinfra.deployment.Deployment`: BF16 weights, no reserve.

    ``kv_layout="mha"`` caches all query heads (the source's assumption) instead of the model's KV heads.
    The figure's defaults are the source's node.
    """
    choice("kv_layout", kv_layout, set(KV_LAYOUTS))
    check("context_tokens", context_tokens, "int>=1", scalar=True)
    d = Deployment(model_name, gpu_name, n_gpus=n_gpus, memory_reserve=0.0)
    return d if kv_layout == "gqa" else d.replace(kv_heads=d.model.n_heads)


def _gb(x):
    return units.fmt_bytes(x, unit="GB", digits=1)


def draw(batch=1, kv_layout="gqa", model_name="Llama-3.1-70B", gpu_name="H100 SXM", n_gpus=8,
         context_tokens=8192):
    """Draw throughput against batch and the HBM budget at ``batch``; return ``(Figure, readouts)``."""
    b = check("batch", batch, "int>=1", scalar=True)
    if b > BATCHES[-1]:
        raise ValueError(f"batch must lie in [1, {BATCHES[-1]}], got {batch!r}")
    nd = node(model_name, gpu_name, n_gpus, context_tokens, kv_layout)
    max_batch = nd.max_batch(context_tokens)
    kv_per_request = nd.kv_bytes(context_tokens)

    bs = np.asarray(BATCHES, dtype=float)
    agg = nd.step(bs, context_tokens).tokens_per_s
    naive = decode.naive_batch_tokens_per_s(bs, nd.weight_bytes, nd.gpu.memory_bandwidth_bytes_per_s)
    fits = bs <= max_batch

    fig, (ax, hb) = new_figure(6.8, 3.2, ncols=2, left=0.1, right=0.98, bottom=0.17, top=0.87, wspace=0.3)
    ax.plot(bs, naive, "--", color=PALETTE["grey"], lw=1.2, label="naive: B x one-GPU rate")
    ax.plot(bs[fits], agg[fits], color=PALETTE["blue"], lw=2.2, label="weights + KV over node HBM")
    if not fits.all():
        ax.plot(bs[~fits], agg[~fits], color=PALETTE["blue"], lw=1.2, alpha=0.35)
        ax.axvspan(max_batch + 0.5, bs[-1], color=PALETTE["red"], alpha=0.1, lw=0)
        ax.text(bs[-1] - 2, 0.04 * max(naive.max(), agg.max()), "KV does not fit", color=PALETTE["red"],
                ha="right", fontsize=8)
    step = nd.step(b, context_tokens)
    agg_b = step.tokens_per_s
    ax.plot([b], [agg_b], "o", color=PALETTE["blue"] if b <= max_batch else PALETTE["red"], mec="black",
            ms=8, zorder=5)
    ax.set_xlim(0, bs[-1] + 2)
    ax.set_ylim(0, 1.05 * max(naive.max(), agg.max()))
    ax.set_xlabel("batch size (concurrent requests)")
    ax.set_ylabel("aggregate tokens/s")
    ax.legend(loc="upper left", fontsize=7.5, frameon=False)
    ax.grid(True, alpha=0.3)
    panel_title(ax, f"{context_tokens:,}-token context, {_KV_LABEL[kv_layout].split(' (')[0]}", fontsize=9)

    kv_used = b * kv_per_request
    gb = units.GB
    hb.barh([0], [nd.weight_bytes / gb], color=PALETTE["grey"], height=0.5, label="weights")
    hb.barh([0], [min(kv_used, nd.free_bytes) / gb], left=nd.weight_bytes / gb, height=0.5,
            color=PALETTE["orange"], label="KV cache")
    if kv_used > nd.free_bytes:
        hb.barh([0], [(kv_used - nd.free_bytes) / gb], left=nd.capacity_bytes / gb, height=0.5,
                color=PALETTE["red"], hatch="//", label="KV beyond HBM")
    hb.axvline(nd.capacity_bytes / gb, color="black", lw=1.2)
    hb.text(nd.capacity_bytes / gb, 0.42, f" {nd.n_gpus} x {nd.gpu.memory_bytes / gb:g} GB", fontsize=8,
            va="bottom", ha="right")
    hb.set_xlim(0, max(nd.capacity_bytes, nd.weight_bytes + kv_used) / gb * 1.05)
    hb.set_ylim(-0.6, 0.8)
    hb.set_yticks([])
    hb.set_xlabel("HBM on the node (GB)")
    hb.legend(loc="lower right", fontsize=7.5, frameon=False, ncols=2)
    panel_title(hb, f"KV vs {_gb(nd.free_bytes)} free HBM: {kv_used / nd.free_bytes:.0%}", fontsize=9)

    if b <= max_batch:
        per_user = f"{step.tokens_per_s_per_user:,.1f} tok/s"
        aggregate = f"{agg_b:,.0f} tok/s"
    else:
        per_user = aggregate = f"does not fit (max batch {max_batch})"
    readouts = {
        "aggregate throughput": aggregate,
        "per-user tok/s": per_user,
        "KV cache used": f"{_gb(kv_used)} of {_gb(nd.free_bytes)} free",
    }
    return fig, readouts


def sliders():
    """Batch 1 to 140 (12 precomputed) x KV layout (2): a 24-frame static grid."""
    return [
        Slider("batch", BATCHES, label="batch size", default=1, static=STATIC_BATCHES),
        Slider("kv_layout", KV_LAYOUTS, label="KV layout", default="gqa", fmt=lambda v: _KV_SHORT[v]),
    ]


def show(mode=None, **fixed):
    """The interactive batching-vs-KV figure."""
    return interactive_figure(draw, sliders(), title="Batching: throughput vs the KV cache budget",
                              fixed=fixed, mode=mode)
