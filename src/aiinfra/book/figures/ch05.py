"""Figures of chapter 5, "The KV cache and batching": pure functions ``params -> (Figure, readouts)``.

* :func:`batching_policies`: the same request trace under static and under
  continuous batching (:mod:`aiinfra.serving.batching`): busy slots per step and the
  latency distribution of each policy, and whether the load overwhelms it.
* :func:`kv_reservation`: KV tokens in use versus reserved, step by step, when
  each request reserves its maximum context contiguously or takes pages as it
  grows (:mod:`aiinfra.serving.paging`), and the batch each scheme admits in a budget.

Both are wrapped by :func:`aiinfra.book.interactive.interactive_figure` in the
book; the ``*_sliders()`` helpers give their slider definitions. Every number
drawn comes from a library call; figures are built with
:class:`matplotlib.figure.Figure` directly, never through pyplot.
"""

from __future__ import annotations

from functools import cache, lru_cache

import numpy as np
from matplotlib.ticker import NullFormatter

from aiinfra import units
from aiinfra.book.interactive import Slider, View, redraws
from aiinfra.formula import check
from aiinfra.serving import batching as scheduling
from aiinfra.serving import paging

from . import FONT, PALETTE, _figure_class, new_figure, panel_title, style_axes

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
    "hybrid_request_bytes",
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
#: Slider grids of :func:`batching_policies`; the default gap (24 steps) is a load both policies keep up with.
MAX_BATCH_VALUES = (4, 8, 16, 32)
GAP_VALUES = (4, 8, 12, 16, 24, 32, 48)


def demo_trace(mean_interarrival_steps=8, n_requests=TRACE_REQUESTS, seed=TRACE_SEED):
    """The chapter's request trace: geometric output lengths (mean 96 tokens), prompts of 128-2048 tokens."""
    return scheduling.synthetic_trace(
        n_requests,
        seed=seed,
        mean_output_tokens=TRACE_MEAN_OUTPUT,
        max_output_tokens=TRACE_MAX_OUTPUT,
        mean_interarrival_steps=mean_interarrival_steps,
        min_prompt_tokens=128,
        max_prompt_tokens=2048,
    )


def _steps(n) -> str:
    return f"{n:,.0f} step" + ("s" if n != 1 else "")


def _tokens(n) -> str:
    return f"{n:,} token" + ("s" if n != 1 else "")


@lru_cache(maxsize=8)
def _policy_horizon(n_requests: int, seed: int) -> int:
    """The longest run over the whole slider grid: the fixed time axis of :func:`batching_policies`."""
    return max(
        r.total_steps
        for gap in GAP_VALUES
        for cap in MAX_BATCH_VALUES
        for r in scheduling.compare_policies(demo_trace(gap, n_requests, seed), cap).values()
    )


@lru_cache(maxsize=128)
def _falls_behind(policy: str, max_batch: int, mean_interarrival_steps, n_requests: int, seed: int) -> bool:
    """Whether ``policy`` serves fewer requests per step than the trace brings: an overloaded queue.

    Compares :func:`aiinfra.serving.batching.saturated_requests_per_step` with
    :attr:`~aiinfra.serving.batching.Trace.arrival_rate_per_step`, the test the chapter's text uses.
    """
    trace = demo_trace(mean_interarrival_steps, n_requests, seed)
    return scheduling.saturated_requests_per_step(trace, max_batch, policy) < trace.arrival_rate_per_step


@redraws("max_batch", "mean_interarrival_steps")
def batching_policies(max_batch=16, mean_interarrival_steps=24, n_requests=TRACE_REQUESTS, seed=TRACE_SEED):
    """Static vs continuous batching on one trace.

    Left: the share of the ``max_batch`` slots running a request in each
    step (the gap under 100% is idle slots), on a time axis long enough for
    every slider position; a panel says so when its policy is overloaded
    (requests arrive faster than it finishes them, so the queue and every
    latency grow with the trace's length). Right: the distribution of
    end-to-end latency in steps, one curve per policy. Readouts: slot
    utilization, p50/p99 latency and whether the queue stays steady, for
    each policy.
    """
    horizon = _policy_horizon(n_requests, seed)
    fig = _figure_class()(figsize=(7.2, 4.0))
    grid = fig.add_gridspec(
        2, 2, width_ratios=(1.6, 1.0), left=0.1, right=0.975, bottom=0.12, top=0.92, wspace=0.27, hspace=0.55
    )
    colors = {"static": _ORANGE, "continuous": _BLUE}
    panels = {}
    for row, name in enumerate(colors):
        ax = style_axes(fig.add_subplot(grid[row, 0]))
        area = ax.stairs([0.0], [0.0, 1.0], fill=True, color=colors[name], alpha=0.75, linewidth=0)
        ax.axhline(100, color=_GREY, linewidth=1.0)
        ax.set_xlim(0, horizon)
        ax.set_ylim(0, 115)
        ax.set_yticks([0, 50, 100])
        ax.set_ylabel("slots busy (%)")
        if row == 1:
            ax.set_xlabel("decode step")
        panels[name] = (area, panel_title(ax, "", fontsize=FONT["small"], loc="left"))
    cdf = style_axes(fig.add_subplot(grid[:, 1]))
    curves = {name: cdf.step([], [], where="post", color=colors[name], label=name)[0] for name in colors}
    cdf.set_xscale("log")
    cdf.set_xlim(1, 30000)
    cdf.set_xticks([1, 10, 100, 1000, 10000], ["1", "10", "100", "1k", "10k"])
    cdf.xaxis.set_minor_formatter(NullFormatter())
    cdf.set_xlabel("latency (steps, log)")
    cdf.set_ylabel("share of requests")
    cdf.set_ylim(0, 1.02)
    cdf.grid(alpha=0.3)
    cdf.legend(fontsize=FONT["legend"], loc="lower right")

    @cache
    def runs(cap, gap):
        """Both policies on the trace at one slider point, with what the panels draw (kept per point)."""
        res = scheduling.compare_policies(demo_trace(gap, n_requests, seed), cap)
        return {
            name: (
                r,
                _series(r.active),
                np.sort(r.latency_steps),
                _falls_behind(name, cap, gap, n_requests, seed),
            )
            for name, r in res.items()
        }

    def update(max_batch, mean_interarrival_steps):
        cap = check("max_batch", max_batch, "int>=1", scalar=True)
        readouts = {}
        for name, (r, (x, y), lat, overloaded) in runs(cap, mean_interarrival_steps).items():
            area, title = panels[name]
            area.set_data(100 * y[:-1] / cap, x)
            state = "overloaded" if overloaded else f"done at step {r.total_steps:,}"
            title.set_text(f"{name}, {cap} slots: {r.slot_utilization:.0%} in use, {state}")
            title.set_color(_RED if overloaded else "black")
            curves[name].set_data(lat, np.arange(1, lat.size + 1) / lat.size)
            readouts[f"{name}: slot use"] = f"{r.slot_utilization:.0%}"
            readouts[f"{name}: p50 / p99 latency"] = (
                f"{r.percentile_latency_steps(50):,.0f} / {r.percentile_latency_steps(99):,.0f} steps"
            )
            readouts[f"{name}: queue"] = "grows (overloaded)" if overloaded else "steady"
        return readouts

    return View(fig, update, [*(a for pair in panels.values() for a in pair), *curves.values()])


def batching_policies_sliders():
    """Slider definitions for :func:`batching_policies` (slots, and the mean gap between arrivals)."""
    return [
        Slider("max_batch", MAX_BATCH_VALUES, label="batch slots", default=16, fmt="{} slots"),
        Slider(
            "mean_interarrival_steps", GAP_VALUES, label="mean gap between arrivals", default=24, fmt=_steps
        ),
    ]


#: Slider grids of :func:`kv_reservation`.
PAGE_VALUES = (1, 16, 64, 256, 1024)
MAX_CONTEXT_VALUES = (4096, 8192, 16384, 32768)


@lru_cache(maxsize=8)
def _paged_horizon(
    kv_bytes_per_token, kv_budget_bytes, max_batch, mean_interarrival_steps, n_requests, seed
) -> int:
    """The longest paged run over :data:`PAGE_VALUES`: the time window of :func:`kv_reservation`."""
    tr = demo_trace(mean_interarrival_steps, n_requests, seed)
    return max(
        paging.simulate_with_kv_budget(
            tr, max_batch, kv_budget_bytes, kv_bytes_per_token, "paged", p, int(tr.final_context_tokens.max())
        ).total_steps
        for p in PAGE_VALUES
    )


@redraws("page_tokens", "max_context_tokens")
def kv_reservation(
    page_tokens=16,
    max_context_tokens=4096,
    kv_bytes_per_token=147456.0,
    kv_budget_bytes=6e9,
    max_batch=64,
    mean_interarrival_steps=2,
    n_requests=TRACE_REQUESTS,
    seed=TRACE_SEED,
):
    """The same trace when the KV cache limits the batch: contiguous reservation vs pages.

    Each panel runs the demonstration trace under continuous batching with
    ``max_batch`` slots and a KV budget of ``kv_budget_bytes``
    (:func:`aiinfra.serving.paging.simulate_with_kv_budget`): on top every request
    reserves ``max_context_tokens``; below it reserves whole pages of
    ``page_tokens``. Green is the KV actually stored, the line what is
    reserved, the dashed line the budget. Both panels show the same window:
    as many steps as the slowest paged run takes (a contiguous run may go on
    much longer; its title says when it ends). Readouts: mean running batch,
    the step at which the trace is done, and the mean share of the
    reservation that holds nothing. Defaults: Qwen3-8B in BF16 (147,456 B of
    KV per token) with 6 GB left for KV, as on a 24 GB card.
    """
    k = check("kv_bytes_per_token", kv_bytes_per_token, ">0")
    budget = check("kv_budget_bytes", kv_budget_bytes, ">0")
    tr = demo_trace(mean_interarrival_steps, n_requests, seed)
    window = _paged_horizon(k, budget, max_batch, mean_interarrival_steps, n_requests, seed)
    gb = k / units.GB
    fig, axes = new_figure(7.2, 4.0, nrows=2, left=0.09, right=0.975, bottom=0.11, top=0.92, hspace=0.55)
    rows = {}
    for row, (scheme, ax) in enumerate(zip(paging.SCHEMES, axes)):
        stored = ax.stairs(
            [0.0], [0.0, 1.0], fill=True, color=_GREEN, alpha=0.8, linewidth=0, label="KV stored"
        )
        (reserved,) = ax.plot(
            [],
            [],
            drawstyle="steps-post",
            color=_BLUE if scheme == "paged" else _ORANGE,
            linewidth=1.2,
            label="KV reserved",
        )
        ax.axhline(budget / units.GB, color=_RED, linestyle="--", linewidth=1.0, label="budget")
        ax.set_xlim(0, window)
        ax.set_ylim(0, budget / units.GB * 1.25)
        ax.set_ylabel("KV (GB)")
        ax.grid(alpha=0.3)
        if row == 0:
            ax.legend(
                fontsize=FONT["small"], loc="upper right", ncol=3, frameon=False, bbox_to_anchor=(1.0, 1.02)
            )
        else:
            ax.set_xlabel("decode step")
        rows[scheme] = (stored, reserved, panel_title(ax, "", fontsize=FONT["small"], loc="left"))

    @cache
    def run(scheme, p, m):
        """One scheme's run at one slider point, its KV over time and the two series drawn (kept per point)."""
        r = paging.simulate_with_kv_budget(tr, max_batch, budget, k, scheme, p, m)
        use = paging.kv_usage_over_time(r, p, m)
        held = use.contiguous_tokens if scheme == "contiguous" else use.paged_tokens
        return r, use, _series(use.used_tokens * gb), _series(held * gb)

    def update(page_tokens, max_context_tokens):
        p = check("page_tokens", page_tokens, "int>=1", scalar=True)
        m = check("max_context_tokens", max_context_tokens, "int>=1", scalar=True)
        if int(tr.final_context_tokens.max()) > m:
            raise ValueError(
                f"max_context_tokens must cover the trace's longest request "
                f"({int(tr.final_context_tokens.max())} tokens), got {m}"
            )
        readouts = {}
        for scheme in paging.SCHEMES:
            r, use, stored_xy, reserved_xy = run(scheme, p, m)
            stored, reserved, title = rows[scheme]
            stored.set_data(stored_xy[1][:-1], stored_xy[0])
            reserved.set_data(*reserved_xy)
            what = (
                f"{m:,} tokens reserved per request" if scheme == "contiguous" else f"pages of {_tokens(p)}"
            )
            title.set_text(
                f"{scheme} ({what}): mean batch {r.mean_batch:.1f}, done at step {r.total_steps:,}"
            )
            readouts[f"{scheme}: mean batch"] = f"{r.mean_batch:.1f}"
            readouts[f"{scheme}: trace done at"] = f"step {r.total_steps:,}"
            readouts[f"{scheme}: reserved but empty"] = f"{use.mean_waste_fraction(scheme):.1%}"
        return readouts

    return View(fig, update, [a for trio in rows.values() for a in trio])


def kv_reservation_sliders():
    """Slider definitions for :func:`kv_reservation` (page size and the maximum context reserved)."""
    return [
        Slider("page_tokens", PAGE_VALUES, label="page size", default=16, fmt=_tokens),
        Slider(
            "max_context_tokens", MAX_CONTEXT_VALUES, label="max context reserved", default=4096, fmt=_tokens
        ),
    ]


def hybrid_request_bytes(hybrid="Qwen3-Next-80B-A3B-Instruct", attention="Qwen3-30B-A3B", max_tokens=None):
    """One request's cache against its context: a hybrid model (KV in a few layers plus a fixed state) and a
    pure-attention one (chapter 5, the KV formula page).

    Each curve is :func:`aiinfra.memory.request_state_bytes` (BF16 KV and conv state, FP32 recurrent
    state); the hybrid's fixed state is drawn as its own dashed line. The context axis ends at
    ``max_tokens``, by default the longest context both models are configured for. Returns the figure.
    """
    from aiinfra import memory
    from aiinfra.catalog import models

    longest = min(models.load(hybrid).max_position_embeddings, models.load(attention).max_position_embeddings)
    top = check("max_tokens", longest if max_tokens is None else max_tokens, "int>=2", scalar=True)
    n = np.unique(np.geomspace(1, top, 200).astype(int))
    fig, ax = new_figure(6.4, 3.0, left=0.12, bottom=0.2)
    for name, colour in ((attention, PALETTE["orange"]), (hybrid, PALETTE["blue"])):
        m = models.load(name)
        ax.plot(
            n,
            memory.request_state_bytes(m, n) / units.GIGA,
            color=colour,
            lw=2,
            label=f"{name}: {m.layer_summary()}",
        )
    state = memory.state_bytes_per_request(models.load(hybrid)) / units.GIGA
    ax.axhline(state, color=PALETTE["blue"], lw=1, ls="--", label=f"{hybrid}: fixed state alone")
    ax.set_xscale("log")
    ax.set_yscale("log")
    ax.set_xlabel("tokens held by the request")
    ax.set_ylabel("cache of one request (GB)")
    ax.legend(fontsize=FONT["legend"], frameon=False, loc="upper left")
    panel_title(ax, "KV that grows with the context, plus state that does not")
    return fig
