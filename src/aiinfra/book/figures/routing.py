"""Routing requests over replicas: queueing, tail TTFT and KV-cache hits as the load rises (chapter 7).

The scenario (:func:`scenario`) is an agent-style service on chapter 7's
server (:data:`aiinfra.deployment.SERVING_70B`, one replica per 8 x H100
server): :data:`N_REPLICAS` replicas of :data:`SLOTS` running requests each,
:data:`N_PREFIXES` equally popular sessions whose requests all start with the
same :data:`PREFIX_TOKENS`-token prefix (instructions, tool descriptions and
the work so far), a new suffix and a reply (:func:`aiinfra.serving.routing.shared_prefix_trace`).
Each replica's KV cache keeps as many prefixes as fit beside a full batch
(:func:`aiinfra.serving.routing.cache_prefixes_that_fit`). The load is the
arrival rate over what the fleet sustains when no prefix is ever cached
(:attr:`aiinfra.serving.routing.Workload.capacity_per_s` times the
replicas). Every policy runs at every load of :data:`LOADS` in one
:func:`aiinfra.serving.routing.simulate` call; the slider only moves the
marker and the readouts, so every frame is precomputed.

:func:`draw` shows three panels against the load (mean queueing delay, 99th
percentile TTFT, KV-cache hit rate), one line per policy.
"""

from __future__ import annotations

from dataclasses import dataclass
from functools import lru_cache

import numpy as np

from aiinfra import units
from aiinfra.book.figures import PALETTE, new_figure, panel_title
from aiinfra.book.interactive import Slider, View, interactive_figure, redraws
from aiinfra.deployment import SERVING_70B, Deployment
from aiinfra.formula import check
from aiinfra.serving import routing

__all__ = [
    "N_REPLICAS",
    "SLOTS",
    "N_PREFIXES",
    "PREFIX_TOKENS",
    "SUFFIX_TOKENS",
    "MEAN_OUTPUT_TOKENS",
    "N_REQUESTS",
    "SEED",
    "LOADS",
    "STATIC_LOADS",
    "FONT_PT",
    "Scenario",
    "scenario",
    "draw",
    "sliders",
    "show",
]

N_REPLICAS = 8
SLOTS = 128
N_PREFIXES = 128
PREFIX_TOKENS = 8192
SUFFIX_TOKENS = (128, 1024)
MEAN_OUTPUT_TOKENS = 256
N_REQUESTS = 2000
SEED = 7
#: Offered loads simulated (arrival rate over the fleet's capacity with no cache hit).
LOADS = (0.25, 0.5, 0.75, 0.9, 1.0, 1.1, 1.25, 1.5, 2.0, 3.0)
#: Loads precomputed for the static page.
STATIC_LOADS = (0.25, 0.5, 0.75, 1.0, 1.25, 1.5, 2.0)
#: Smallest font of the figure, in points: 11 px or more at the 80 dpi of a static frame.
FONT_PT = 10.5
#: Queueing delays below this are drawn at it (a log axis has no zero).
_QUEUE_FLOOR_S = 1e-3
_COLORS = {
    "round_robin": PALETTE["blue"],
    "random": PALETTE["grey"],
    "least_loaded": PALETTE["orange"],
    "two_choices": PALETTE["purple"],
    "prefix_aware": PALETTE["green"],
}
_MARKERS = {"round_robin": "o", "random": "v", "least_loaded": "s", "two_choices": "D", "prefix_aware": "^"}


@dataclass(frozen=True)
class Scenario:
    """The simulated service: replica, trace, costs, cache size, loads and the result of every policy."""

    deployment: Deployment
    trace: routing.RoutingTrace
    workload: routing.Workload
    cache_prefixes: int
    loads: tuple
    fleet_capacity_per_s: float
    result: routing.RoutingResult

    def load_index(self, load) -> int:
        """Position of ``load`` in :attr:`loads` (it must be one of them)."""
        if load not in self.loads:
            raise ValueError(f"load must be one of {self.loads}, got {load!r}")
        return self.loads.index(load)


@lru_cache(maxsize=4)
def scenario(loads=LOADS, seed=SEED) -> Scenario:
    """Simulate the chapter's routing scenario at each offered load (cached: the page and the figure share it)."""
    loads = tuple(float(x) for x in check("loads", list(loads), ">0"))
    d = SERVING_70B
    trace = routing.shared_prefix_trace(
        N_REQUESTS,
        N_PREFIXES,
        seed=seed,
        prefix_tokens=PREFIX_TOKENS,
        min_suffix_tokens=SUFFIX_TOKENS[0],
        max_suffix_tokens=SUFFIX_TOKENS[1],
        mean_output_tokens=MEAN_OUTPUT_TOKENS,
        zipf_exponent=0.0,
    )
    cache = routing.cache_prefixes_that_fit(d, SLOTS, trace.mean_context_tokens, PREFIX_TOKENS)
    wl = routing.workload(trace, d, SLOTS)
    fleet = wl.capacity_per_s * N_REPLICAS
    result = routing.simulate(
        wl, np.asarray(loads) * fleet, n_replicas=N_REPLICAS, cache_prefixes=cache, seed=seed
    )
    return Scenario(d, trace, wl, cache, loads, fleet, result)


@redraws("load")
def draw(load=1.0, loads=LOADS):
    """Queueing, p99 TTFT and hit rate against the load, a marker at ``load``; returns ``(Figure, readouts)``.

    The curves are drawn once; a slider step moves only the marker lines and the readouts.
    """
    sc = scenario(tuple(loads))
    res = sc.result
    x = np.asarray(sc.loads)
    fig, axes = new_figure(7.2, 3.5, ncols=3, left=0.085, right=0.965, bottom=0.16, top=0.78, wspace=0.45)
    series = (
        ("mean_queue_s", "mean queueing delay (s)"),
        ("p99_ttft_s", "99th-percentile TTFT (s)"),
        ("hit_rate", "KV-cache hit rate"),
    )
    markers = []
    for ax, (metric, title) in zip(axes, series):
        for p in res.policies:
            y = res.of(p, metric)
            if metric == "mean_queue_s":
                y = np.maximum(y, _QUEUE_FLOOR_S)
            ax.plot(
                x, y, color=_COLORS[p], marker=_MARKERS[p], ms=4.5, lw=1.6, label=routing.POLICY_LABELS[p]
            )
        markers.append(ax.axvline(x[0], color="black", lw=1.0, ls="--"))
        ax.axvspan(1.0, x[-1], color=PALETTE["light"], alpha=0.45, lw=0)
        ax.set_xlim(0, x[-1] * 1.02)
        ax.set_xlabel("load (1 = capacity, no hits)", fontsize=FONT_PT)
        ax.tick_params(labelsize=FONT_PT)
        ax.grid(True, alpha=0.3)
        panel_title(ax, title, fontsize=FONT_PT + 0.5)
        if metric == "hit_rate":
            ax.set_ylim(0, 1)
            ax.yaxis.set_major_formatter(_percent)
        else:
            ax.set_yscale("log")
    axes[0].set_ylim(bottom=_QUEUE_FLOOR_S * 0.8)
    handles, labels = axes[0].get_legend_handles_labels()
    fig.legend(
        handles,
        labels,
        loc="upper center",
        ncols=5,
        fontsize=FONT_PT,
        frameon=False,
        bbox_to_anchor=(0.5, 1.0),
        handlelength=1.6,
        columnspacing=1.2,
    )

    p99_all = res.ttft_percentile_s(99)  # every policy at every load, once per figure
    pa = res.policies.index("prefix_aware")
    others = [i for i in range(len(res.policies)) if i != pa]

    def update(load):
        k = sc.load_index(load)
        for line in markers:
            line.set_xdata([load, load])
        rate = res.rates_per_s[k]
        p99 = p99_all[:, k]
        best = min(others, key=lambda i: p99[i])
        readouts = {
            "arrivals": f"{rate:,.1f} requests/s ({rate / N_REPLICAS:,.2f} per replica)",
            "p99 TTFT, prefix-aware": units.fmt_time(p99[pa]),
            "p99 TTFT, best other": f"{units.fmt_time(p99[best])} ({routing.POLICY_LABELS[res.policies[best]]})",
            "hit rate, prefix-aware / round-robin": f"{res.hit_rate[pa, k]:.0%} / "
            f"{res.hit_rate[res.policies.index('round_robin'), k]:.0%}",
        }
        return readouts

    return View(fig, update, markers)


def _percent(value, _pos):
    return f"{value:.0%}"


def sliders():
    """The offered load: every simulated load live, :data:`STATIC_LOADS` in the static page."""
    return [Slider("load", LOADS, label="offered load", default=1.0, static=STATIC_LOADS, fmt="{:g}")]


def show(mode=None):
    """The interactive routing figure."""
    return interactive_figure(
        draw, sliders(), title="Routing over 8 replicas: queueing, tail TTFT and cache hits", mode=mode
    )
