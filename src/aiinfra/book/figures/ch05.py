"""Figures of chapter 5, "The KV cache and batching": pure functions ``params -> (Figure, readouts)``.

* :func:`batching_policies`: the same request trace under static and under
  continuous batching (:mod:`aiinfra.serving.batching`): busy slots per step and the
  latency distribution of each policy.
* :func:`kv_reservation`: KV tokens in use versus reserved, step by step, when
  each request reserves its maximum context contiguously or takes pages as it
  grows (:mod:`aiinfra.serving.paging`), and the batch each scheme admits in a budget.

Both are wrapped by :func:`aiinfra.book.interactive.interactive_figure` in the
book; the ``*_sliders()`` helpers give their slider definitions. Every number
drawn comes from a library call; figures are built with
:class:`matplotlib.figure.Figure` directly, never through pyplot.
"""
from __future__ import annotations

from aiinfra.formula import check

import numpy as np
from matplotlib.figure import Figure
from matplotlib.ticker import FuncFormatter, NullFormatter

from aiinfra import units
from aiinfra.serving import batching as scheduling, paging
from . import PALETTE

__all__ = [
    "TRACE_REQUESTS",
    "TRACE_SEED",
    "MAX_BATCH_VALUES",
    "GAP_VALUES",
    "demo_trace",
    "batching_policies",
    "batching_policies_sliders",
    "PAGE_VALUES",
    "MAX_CONTEXT_VALUES",
    "kv_reservation",
    "kv_reservation_sliders",
]

_BLUE, _ORANGE, _GREEN, _GREY, _RED = (PALETTE[c] for c in ("blue", "orange", "green", "grey", "red"))


def _series(values, max_points=600):
    """A per-step series thinned for drawing: (step, value) with at most ``max_points`` buckets (bucket means)."""
    v = np.asarray(values, dtype=float)
    if v.size <= max_points:
        return np.arange(v.size + 1), np.append(v, v[-1])
    width = int(np.ceil(v.size / max_points))
    pad = (-v.size) % width
    vv = np.concatenate((v, np.full(pad, v[-1])))
    means = vv.reshape(-1, width).mean(axis=1)
    x = np.arange(means.size + 1) * width
    return x, np.append(means, means[-1])


#: The demonstration trace: how many requests, and its seed (fixed, so the book is reproducible).
TRACE_REQUESTS = 160
TRACE_SEED = 2024
#: Mean output length of the demonstration trace (tokens) and its cap.
TRACE_MEAN_OUTPUT = 96
TRACE_MAX_OUTPUT = 768
#: Slider grids of :func:`batching_policies`.
MAX_BATCH_VALUES = (4, 8, 16, 32)
GAP_VALUES = (4, 8)


def demo_trace(mean_interarrival_steps=8, n_requests=TRACE_REQUESTS, seed=TRACE_SEED):
    """The chapter's request trace: geometric output lengths (mean 96 tokens), prompts of 128-2048 tokens."""
    return scheduling.synthetic_trace(
        n_requests, seed=seed, mean_output_tokens=TRACE_MEAN_OUTPUT, max_output_tokens=TRACE_MAX_OUTPUT,
        mean_interarrival_steps=mean_interarrival_steps, min_prompt_tokens=128, max_prompt_tokens=2048,
    )


def batching_policies(max_batch=16, mean_interarrival_steps=8, n_requests=TRACE_REQUESTS, seed=TRACE_SEED):
    """Static vs continuous batching on one trace.

    Left: requests running in each step (the grey line is the slot count
    ``max_batch``; the gap under it is idle slots). Right: the distribution of
    end-to-end latency in steps, one curve per policy. Readouts: slot
    utilization and p50/p99 latency of each policy.
    """
    cap = check("max_batch", max_batch, "int>=1", scalar=True)
    tr = demo_trace(mean_interarrival_steps, n_requests, seed)
    res = scheduling.compare_policies(tr, cap)
    fig = Figure(figsize=(8.4, 3.8))
    grid = fig.add_gridspec(2, 2, width_ratios=(1.7, 1.0), left=0.07, right=0.985, bottom=0.13, top=0.93,
                            wspace=0.25, hspace=0.45)
    horizon = max(r.total_steps for r in res.values())
    colors = {"static": _ORANGE, "continuous": _BLUE}
    for row, (name, r) in enumerate(res.items()):
        ax = fig.add_subplot(grid[row, 0])
        x, y = _series(r.active)
        ax.fill_between(x, y, step="post", color=colors[name], alpha=0.75, linewidth=0)
        ax.axhline(cap, color=_GREY, linewidth=1.0)
        ax.set_xlim(0, horizon)
        ax.set_ylim(0, cap * 1.15)
        ax.set_ylabel("running")
        ax.set_title(f"{name}: {r.slot_utilization:.0%} of busy slots used, done at step {r.total_steps:,}",
                     fontsize=9, loc="left")
        if row == 1:
            ax.set_xlabel("decode step")
    ax = fig.add_subplot(grid[:, 1])
    for name, r in res.items():
        lat = np.sort(r.latency_steps)
        ax.step(lat, np.arange(1, lat.size + 1) / lat.size, where="post", color=colors[name], label=name)
    ax.set_xscale("log")
    ax.xaxis.set_major_formatter(FuncFormatter(lambda v, _pos: f"{v:,.0f}"))  # plain labels, no mathtext
    ax.xaxis.set_minor_formatter(NullFormatter())
    ax.set_xlabel("latency (steps, log)")
    ax.set_ylabel("share of requests")
    ax.set_ylim(0, 1.02)
    ax.grid(alpha=0.3)
    ax.legend(fontsize=8, loc="lower right")
    readouts = {}
    for name, r in res.items():
        readouts[f"{name}: slot use"] = f"{r.slot_utilization:.0%}"
        readouts[f"{name}: p50 / p99 latency"] = (
            f"{r.percentile_latency_steps(50):,.0f} / {r.percentile_latency_steps(99):,.0f} steps"
        )
    return fig, readouts


def batching_policies_sliders():
    """Slider definitions for :func:`batching_policies` (slots, and the mean gap between arrivals)."""
    from aiinfra.book.interactive import Slider

    return [
        Slider("max_batch", MAX_BATCH_VALUES, label="batch slots", default=16, fmt="{} slots"),
        Slider("mean_interarrival_steps", GAP_VALUES, label="mean gap between arrivals", default=8,
               fmt="{} steps"),
    ]


#: Slider grids of :func:`kv_reservation`.
PAGE_VALUES = (1, 16, 128, 1024)
MAX_CONTEXT_VALUES = (4096, 32768)


def kv_reservation(page_tokens=16, max_context_tokens=4096, kv_bytes_per_token=147456.0, kv_budget_bytes=6e9,
                   max_batch=64, mean_interarrival_steps=2, n_requests=TRACE_REQUESTS, seed=TRACE_SEED):
    """The same trace when the KV cache limits the batch: contiguous reservation vs pages.

    Each panel runs the demonstration trace under continuous batching with
    ``max_batch`` slots and a KV budget of ``kv_budget_bytes``
    (:func:`aiinfra.serving.paging.simulate_with_kv_budget`): on top every request
    reserves ``max_context_tokens``; below it reserves whole pages of
    ``page_tokens``. Green is the KV actually stored, the line what is
    reserved, the dashed line the budget. Readouts: mean running batch, the
    step at which the trace is done, and the mean share of the reservation
    that holds nothing. Defaults: Qwen3-8B in BF16 (147,456 B of KV per
    token) with 6 GB left for KV, as on a 24 GB card.
    """
    p = check("page_tokens", page_tokens, "int>=1", scalar=True)
    m = check("max_context_tokens", max_context_tokens, "int>=1", scalar=True)
    k = check("kv_bytes_per_token", kv_bytes_per_token, ">0")
    budget = check("kv_budget_bytes", kv_budget_bytes, ">0")
    tr = demo_trace(mean_interarrival_steps, n_requests, seed)
    if int(tr.final_context_tokens.max()) > m:
        raise ValueError(
            f"max_context_tokens must cover the trace's longest request ({int(tr.final_context_tokens.max())} tokens), got {m}"
        )
    runs = {scheme: paging.simulate_with_kv_budget(tr, max_batch, budget, k, scheme, p, m) for scheme in paging.SCHEMES}
    horizon = max(r.total_steps for r in runs.values())
    gb = k / units.GB
    fig = Figure(figsize=(8.4, 4.0))
    fig.subplots_adjust(left=0.08, right=0.985, bottom=0.12, top=0.93, hspace=0.5)
    readouts = {}
    for row, (scheme, r) in enumerate(runs.items()):
        use = paging.kv_usage_over_time(r, p, m)
        reserved = use.contiguous_tokens if scheme == "contiguous" else use.paged_tokens
        ax = fig.add_subplot(2, 1, row + 1)
        x, y = _series(use.used_tokens * gb)
        ax.fill_between(x, y, step="post", color=_GREEN, alpha=0.8, linewidth=0, label="KV stored")
        x, y = _series(reserved * gb)
        ax.plot(x, y, drawstyle="steps-post", color=_BLUE if scheme == "paged" else _ORANGE, linewidth=1.2,
                label="KV reserved")
        ax.axhline(budget / units.GB, color=_RED, linestyle="--", linewidth=1.0, label="budget")
        ax.set_xlim(0, horizon)
        ax.set_ylim(0, budget / units.GB * 1.2)
        ax.set_ylabel("KV (GB)")
        what = f"{m:,} tokens reserved per request" if scheme == "contiguous" else f"{p}-token pages"
        ax.set_title(f"{scheme} ({what}): mean batch {r.mean_batch:.1f}, done at step {r.total_steps:,}",
                     fontsize=9, loc="left")
        ax.grid(alpha=0.3)
        if row == 0:
            ax.legend(fontsize=8, loc="upper right", ncol=3)
        else:
            ax.set_xlabel("decode step")
        readouts[f"{scheme}: mean batch"] = f"{r.mean_batch:.1f}"
        readouts[f"{scheme}: trace done at"] = f"step {r.total_steps:,}"
        readouts[f"{scheme}: reserved but empty"] = f"{use.mean_waste_fraction(scheme):.1%}"
    return fig, readouts


def kv_reservation_sliders():
    """Slider definitions for :func:`kv_reservation` (page size and the maximum context reserved)."""
    from aiinfra.book.interactive import Slider

    return [
        Slider("page_tokens", PAGE_VALUES, label="page size", default=16, fmt="{} tokens"),
        Slider("max_context_tokens", MAX_CONTEXT_VALUES, label="max context reserved", default=4096,
               fmt="{:,} tokens"),
    ]
