"""Figures of chapter 7, "Serving at scale": pure functions ``params -> (Figure, readouts)``.

* :func:`speculative`: expected tokens per target pass and wall-clock
  speedup of speculative decoding over the acceptance rate ``alpha`` for
  draft lengths ``gamma`` = 1..8 (:mod:`aiinfra.serving`,
  :mod:`aiinfra.serving.speculation`).
* :func:`disaggregation`: generation time of one request on a colocated
  server (prefill interferes with decode) and on a disaggregated pair (KV
  hand-off once), against the answer length (:mod:`aiinfra.serving.disaggregation`).
* :func:`prefix_cache`: expected TTFT saved against the hit rate for
  several cached prefix lengths (:mod:`aiinfra.serving.prefix_cache`).

The ``*_sliders()`` helpers give the slider grids. Every number drawn comes
from a library call.
"""
from __future__ import annotations

from aiinfra.formula import check

import numpy as np

from aiinfra import roofline, units
from aiinfra.serving import disaggregation as disagg
from aiinfra.serving import prefix_cache as pcache
from aiinfra.serving import speculation
from . import PALETTE, new_figure

__all__ = [
    "GAMMA_VALUES",
    "DRAFT_COST_VALUES",
    "speculative",
    "speculative_sliders",
    "RATE_VALUES",
    "PROMPT_VALUES",
    "disaggregation",
    "disaggregation_sliders",
    "PREFIX_VALUES",
    "prefix_cache",
    "prefix_cache_sliders",
]

GAMMA_VALUES = (1, 2, 4, 8)
DRAFT_COST_VALUES = (0.0, 0.05, 0.2)
_GAMMA_CURVES = (1, 2, 4, 8)
_COLORS = (PALETTE["sky"], PALETTE["blue"], PALETTE["green"], PALETTE["purple"])


def speculative(gamma=4, draft_cost_ratio=0.05, alpha_mark=0.8):
    """Speculative decoding over ``alpha`` and ``gamma``.

    Left: ``E[tokens]`` per target pass against ``alpha`` for gamma 1, 2, 4,
    8. Right: speedup ``E / (gamma c + 1)`` at draft cost ``c`` for the same
    gammas, the chosen ``gamma`` drawn thick, with the break-even line at 1
    and the break-even ``alpha`` marked. Readouts: break-even alpha, the
    speedup at ``alpha_mark``, the best gamma there, and the largest draft
    cost that still pays at ``alpha_mark``.
    """
    g = check("gamma", gamma, "int>=1", scalar=True)
    c = check("draft_cost_ratio", draft_cost_ratio, "[0,1)")
    a_mark = check("alpha_mark", alpha_mark, "[0,1]")
    a = np.linspace(0.0, 0.99, 100)
    fig, (ax, bx) = new_figure(7.6, 3.2, ncols=2, left=0.08, wspace=0.3)
    for gg, color in zip(_GAMMA_CURVES, _COLORS):
        ax.plot(a, speculation.expected_tokens_per_target_pass(a, gg), color=color, label=f"gamma = {gg}")
        bx.plot(a, speculation.speculative_speedup(a, gg, c), color=color, linewidth=0.9)
    if g not in _GAMMA_CURVES:
        ax.plot(a, speculation.expected_tokens_per_target_pass(a, g), color=PALETTE["red"], label=f"gamma = {g}")
    bx.plot(a, speculation.speculative_speedup(a, g, c), color=PALETTE["red"], linewidth=2.2, label=f"gamma = {g}")
    a_even = speculation.breakeven_alpha(g, c)
    bx.axhline(1.0, color=PALETTE["grey"], linestyle="--", linewidth=0.8)
    bx.plot([a_even], [1.0], "o", color=PALETTE["red"])
    ax.set_xlabel("acceptance rate alpha")
    ax.set_ylabel("tokens per target pass")
    ax.grid(alpha=0.3)
    ax.legend(fontsize=7, loc="upper left")
    bx.set_xlabel("acceptance rate alpha")
    bx.set_ylabel("speedup")
    bx.set_title(f"draft cost c = {c:g} target passes", fontsize=9, loc="left")
    bx.grid(alpha=0.3)
    bx.legend(fontsize=7, loc="upper left")
    best_g, best_s = speculation.best_gamma(a_mark, c, max_gamma=max(GAMMA_VALUES))
    readouts = {
        f"break-even alpha (gamma {g})": f"{a_even:.2f}",
        f"speedup at alpha {a_mark:g}": f"{speculation.speculative_speedup(a_mark, g, c):.2f}x",
        f"best gamma at alpha {a_mark:g}": f"{best_g} ({best_s:.2f}x)",
        f"max draft cost at alpha {a_mark:g}": f"{speculation.max_draft_cost_ratio(a_mark, g):.2f} target passes",
    }
    return fig, readouts


def speculative_sliders():
    """Slider definitions for :func:`speculative` (draft length, draft cost)."""
    from aiinfra.book.interactive import Slider

    return [
        Slider("gamma", GAMMA_VALUES, label="drafted tokens gamma", default=4, fmt="{}"),
        Slider("draft_cost_ratio", DRAFT_COST_VALUES, label="draft cost c", default=0.05,
               fmt="{:g} target passes"),
    ]


RATE_VALUES = (0.5, 1.0, 2.0, 4.0)
PROMPT_VALUES = (1024, 4096, 16384)


def disaggregation(prefill_rate_per_s=2.0, prompt_tokens=4096, *, decode_step_time_s, prefill_time_per_token_s,
                   kv_bytes_per_token, link_bytes_per_s, link_latency_s=0.0, max_output_tokens=2000):
    """Colocated vs disaggregated generation time of one request against its answer length.

    A colocated server receives ``prefill_rate_per_s`` prompts of
    ``prompt_tokens`` each; each prefill takes ``prompt_tokens *
    prefill_time_per_token_s`` and preempts decode. Colocated: ``G t_d /
    (1 - u)``. Disaggregated: ``G t_d + t_kv``. If prefill alone fills the
    server (``u >= 1``) only the disaggregated line is drawn. Readouts:
    ``u``, both TPOTs, the worst colocated gap, the KV hand-off and the
    break-even answer length.
    """
    rate = check("prefill_rate_per_s", prefill_rate_per_s, ">=0")
    p = check("prompt_tokens", prompt_tokens, "int>=1", scalar=True)
    m = check("max_output_tokens", max_output_tokens, "int>=10", scalar=True)
    t_p = p * check("prefill_time_per_token_s", prefill_time_per_token_s, ">0")
    u = disagg.prefill_busy_fraction(rate, t_p)
    t_kv = disagg.kv_handoff_time_s(p, kv_bytes_per_token, link_bytes_per_s, link_latency_s)
    g = np.linspace(0, m, 101)
    fig, ax = new_figure(6.4, 3.2, left=0.11)
    ax.plot(g, g * decode_step_time_s + t_kv, color=PALETTE["green"], label="disaggregated (KV shipped once)")
    readouts = {"prefill share of GPU time u": f"{u:.0%}"}
    if u < 1:
        ax.plot(g, g * disagg.colocated_tpot_s(decode_step_time_s, u), color=PALETTE["orange"],
                label="colocated (prefill preempts decode)")
        tpot_co = disagg.colocated_tpot_s(decode_step_time_s, u)
        readouts["TPOT colocated / disaggregated"] = f"{units.fmt_time(tpot_co)} / {units.fmt_time(decode_step_time_s)}"
        readouts["worst colocated gap"] = units.fmt_time(disagg.colocated_worst_gap_s(decode_step_time_s, t_p))
        if u > 0:
            g_star = disagg.breakeven_output_tokens(decode_step_time_s, u, t_kv)
            readouts["disaggregation wins beyond"] = f"{g_star:,.0f} output tokens"
            if g_star <= m:
                ax.axvline(g_star, color=PALETTE["grey"], linestyle=":", linewidth=0.8)
    else:
        readouts["TPOT colocated / disaggregated"] = f"unbounded / {units.fmt_time(decode_step_time_s)}"
        ax.text(0.35, 0.55, "prefill alone fills the colocated server", transform=ax.transAxes, fontsize=8,
                color=PALETTE["red"])
    readouts["KV hand-off per request"] = units.fmt_time(t_kv)
    ax.set_xlabel("output tokens G")
    ax.set_ylabel("decode phase time (s)")
    ax.set_xlim(0, m)
    ax.set_title(f"{rate:g} prompts/s of {p:,} tokens per server", fontsize=9, loc="left")
    ax.grid(alpha=0.3)
    ax.legend(fontsize=7, loc="upper left")
    return fig, readouts


def disaggregation_sliders():
    """Slider definitions for :func:`disaggregation` (prompt arrival rate, prompt length)."""
    from aiinfra.book.interactive import Slider

    return [
        Slider("prefill_rate_per_s", RATE_VALUES, label="prompts per second per server", default=2.0, fmt="{:g}/s"),
        Slider("prompt_tokens", PROMPT_VALUES, label="prompt length", default=4096, fmt="{:,} tokens"),
    ]


PREFIX_VALUES = (512, 2048, 4096, 7680)


def prefix_cache(cached_tokens=2048, *, prompt_tokens, flops_per_token, attention_flops_per_pair, flops_per_s,
                 efficiency=1.0):
    """Expected TTFT saved against hit rate, for several cached prefix lengths.

    Lines: :func:`aiinfra.serving.prefix_cache.expected_ttft_saved_s` for each prefix
    length in :data:`PREFIX_VALUES` that fits in ``prompt_tokens``; the
    chosen ``cached_tokens`` drawn thick. Readouts: full prefill time, and the
    saving at hit rates 50% and 90% for the chosen prefix.
    """
    p = check("prompt_tokens", prompt_tokens, "int>=1", scalar=True)
    c = check("cached_tokens", cached_tokens, "int>=0", scalar=True)
    if c > p:
        raise ValueError(f"cached_tokens must be <= prompt_tokens ({p}), got {c}")
    h = np.linspace(0.0, 1.0, 51)
    fig, ax = new_figure(6.4, 3.2, left=0.11)
    for length in PREFIX_VALUES:
        if length > p:
            continue
        saved = pcache.expected_ttft_saved_s(h, p, length, flops_per_token, flops_per_s, efficiency,
                                                   attention_flops_per_pair)
        ax.plot(h, saved / units.ms, color=PALETTE["blue"] if length != c else PALETTE["red"],
                linewidth=0.8 if length != c else 2.2, alpha=0.6 if length != c else 1.0)
        ax.text(1.01, saved[-1] / units.ms, f"{length:,}", fontsize=7, va="center")
    full = pcache.prefill_flops_with_prefix(p, 0, flops_per_token, attention_flops_per_pair)
    t_full = roofline.compute_time_s(full, flops_per_s, efficiency)
    ax.axhline(t_full / units.ms, color=PALETTE["grey"], linestyle="--", linewidth=0.8)
    ax.set_xlabel("hit rate h")
    ax.set_ylabel("expected TTFT saved (ms)")
    ax.set_xlim(0, 1.08)
    ax.set_title(f"{p:,}-token prompts; labels = cached prefix tokens; dashed = whole prefill",
                 fontsize=9, loc="left")
    ax.grid(alpha=0.3)
    readouts = {"whole prefill (no hit)": units.fmt_time(t_full)}
    for rate in (0.5, 0.9):
        saved = pcache.expected_ttft_saved_s(rate, p, c, flops_per_token, flops_per_s, efficiency,
                                                   attention_flops_per_pair)
        readouts[f"saved at {rate:.0%} hits, {c:,}-token prefix"] = units.fmt_time(saved)
    return fig, readouts


def prefix_cache_sliders():
    """Slider definition for :func:`prefix_cache` (cached prefix length)."""
    from aiinfra.book.interactive import Slider

    return [Slider("cached_tokens", PREFIX_VALUES, label="cached prefix", default=2048, fmt="{:,} tokens")]
