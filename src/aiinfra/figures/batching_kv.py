"""Batching vs the KV budget: a 70B model on an 8 x 80 GB node, every request at 8K context.

Batching shares one read of the weights among ``B`` requests, so aggregate
tokens/s climbs with ``B``; but each request streams its own KV cache every
step and keeps it resident, so the cache eats the HBM left after the
weights. The figure redoes the source's widget (TheCatch "KV cache &
batching") consistently, with the library:

* step time is :func:`aiinfra.decode.batched_decode_step_time_s` over the
  node's aggregate bandwidth and compute: weights read once, plus every
  request's KV, or the FLOPs if those take longer;
* the source's naive claim, ``B x`` one GPU's single-stream rate
  (:func:`aiinfra.kvbudget.naive_batch_tokens_per_s`), is drawn dashed for
  comparison; it ignores the KV reads and the other seven GPUs;
* the largest batch whose KV fits is
  :func:`aiinfra.decode.max_batch_from_kv_budget` of the free HBM.

Two KV layouts: the real grouped-query attention of Llama-3.1-70B (8 KV
heads of 128: 320 KiB per token) and the source's full multi-head
assumption (64 KV heads: 2.62 MB per token, 8x more), which is why the
source's node fits only 23 requests. Weights in BF16; decimal GB.
"""
from __future__ import annotations

from functools import lru_cache

import numpy as np

from .. import _check, compute, decode, hardware, kvbudget, memory, models, units
from ..interactive import Slider, interactive_figure
from . import PALETTE, new_figure, panel_title

__all__ = ["BATCHES", "STATIC_BATCHES", "KV_LAYOUTS", "Node", "node", "draw", "sliders", "show"]

BATCHES = tuple(range(1, 141))
#: Batches precomputed for the static page (23/24 bracket the full-MHA limit).
STATIC_BATCHES = (1, 2, 4, 8, 16, 23, 24, 32, 64, 96, 128, 140)
KV_LAYOUTS = ("gqa", "mha")
_KV_LABEL = {"gqa": "GQA, 8 KV heads (Llama-3.1-70B)", "mha": "full MHA, 64 KV heads (source)"}
_KV_SHORT = {"gqa": "GQA (real)", "mha": "MHA (source)"}


class Node:
    """The numbers of one (model, GPU, node size, context, KV layout) case, all from the library."""

    def __init__(self, model_name, gpu_name, n_gpus, context_tokens, kv_layout):
        _check.choice("kv_layout", kv_layout, set(KV_LAYOUTS))
        self.n_gpus = _check.integer("n_gpus", n_gpus, minimum=1)
        self.context_tokens = _check.integer("context_tokens", context_tokens, minimum=1)
        self.model = models.load(model_name)
        self.gpu = hardware.gpu(gpu_name)
        m = self.model
        self.capacity_bytes = self.n_gpus * self.gpu.memory_bytes
        self.weight_bytes = memory.weight_bytes(m, "bf16")
        self.weight_read_bytes = models.decode_read_params(m) * units.bytes_per_param("bf16")
        if kv_layout == "gqa":
            self.kv_bytes_per_request = float(memory.kv_bytes_per_request(m, self.context_tokens))
        else:
            self.kv_bytes_per_request = float(memory.kv_bytes_for_context_formula(
                m.n_layers, m.n_heads, m.head_dim, self.context_tokens, 2))
        self.free_bytes = memory.free_bytes(self.weight_bytes, 0.0, 0.0, self.capacity_bytes)
        self.max_batch = decode.max_batch_from_kv_budget(self.free_bytes, self.kv_bytes_per_request)
        self.flops_per_request = compute.decode_flops(m, self.context_tokens)
        self.flops_per_s = self.n_gpus * decode.peak_flops_per_s(self.gpu)
        self.bandwidth_bytes_per_s = self.n_gpus * self.gpu.memory_bandwidth_bytes_per_s

    def step_time_s(self, batch):
        return decode.batched_decode_step_time_s(batch, self.flops_per_request, self.weight_read_bytes,
                                                 self.kv_bytes_per_request, self.flops_per_s,
                                                 self.bandwidth_bytes_per_s)

    def naive_tokens_per_s(self, batch):
        return kvbudget.naive_batch_tokens_per_s(batch, self.weight_bytes, self.gpu.memory_bandwidth_bytes_per_s)


@lru_cache(maxsize=16)
def node(model_name="Llama-3.1-70B", gpu_name="H100 SXM", n_gpus=8, context_tokens=8192, kv_layout="gqa") -> Node:
    """The (cached) :class:`Node` of a case; the figure's defaults are the source's node."""
    return Node(model_name, gpu_name, n_gpus, context_tokens, kv_layout)


def _gb(x):
    return units.fmt_bytes(x, unit="GB", digits=1)


def draw(batch=1, kv_layout="gqa", model_name="Llama-3.1-70B", gpu_name="H100 SXM", n_gpus=8,
         context_tokens=8192):
    """Draw throughput against batch and the HBM budget at ``batch``; return ``(Figure, readouts)``."""
    b = _check.integer("batch", batch, minimum=1)
    if b > BATCHES[-1]:
        raise ValueError(f"batch must lie in [1, {BATCHES[-1]}], got {batch!r}")
    nd = node(model_name, gpu_name, n_gpus, context_tokens, kv_layout)

    bs = np.asarray(BATCHES, dtype=float)
    agg = decode.tokens_per_s_aggregate(bs, nd.step_time_s(bs))
    naive = nd.naive_tokens_per_s(bs)
    fits = bs <= nd.max_batch

    fig, (ax, hb) = new_figure(6.8, 3.2, ncols=2, left=0.1, right=0.98, bottom=0.17, top=0.87, wspace=0.3)
    ax.plot(bs, naive, "--", color=PALETTE["grey"], lw=1.2, label="naive: B x one-GPU rate")
    ax.plot(bs[fits], agg[fits], color=PALETTE["blue"], lw=2.2, label="weights + KV over node HBM")
    if not fits.all():
        ax.plot(bs[~fits], agg[~fits], color=PALETTE["blue"], lw=1.2, alpha=0.35)
        ax.axvspan(nd.max_batch + 0.5, bs[-1], color=PALETTE["red"], alpha=0.1, lw=0)
        ax.text(bs[-1] - 2, 0.04 * max(naive.max(), agg.max()), "KV does not fit", color=PALETTE["red"],
                ha="right", fontsize=8)
    step = nd.step_time_s(b)
    agg_b = decode.tokens_per_s_aggregate(b, step)
    ax.plot([b], [agg_b], "o", color=PALETTE["blue"] if b <= nd.max_batch else PALETTE["red"], mec="black",
            ms=8, zorder=5)
    ax.set_xlim(0, bs[-1] + 2)
    ax.set_ylim(0, 1.05 * max(naive.max(), agg.max()))
    ax.set_xlabel("batch size (concurrent requests)")
    ax.set_ylabel("aggregate tokens/s")
    ax.legend(loc="upper left", fontsize=7.5, frameon=False)
    ax.grid(True, alpha=0.3)
    panel_title(ax, f"{context_tokens:,}-token context, {_KV_LABEL[kv_layout].split(' (')[0]}", fontsize=9)

    kv_used = b * nd.kv_bytes_per_request
    gb = 1e9
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

    if b <= nd.max_batch:
        per_user = f"{decode.tokens_per_s_per_user(step):,.1f} tok/s"
        aggregate = f"{agg_b:,.0f} tok/s"
    else:
        per_user = aggregate = f"does not fit (max batch {nd.max_batch})"
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
