"""Figures of chapter 7, "Serving at scale": pure functions ``params -> (Figure, readouts)``.

* :func:`speculative`: expected tokens per target pass and wall-clock
  speedup of speculative decoding over the acceptance rate ``alpha`` for
  draft lengths ``gamma`` = 1..8 (:mod:`aiinfra.serving`,
  :mod:`aiinfra.serving.speculation`).
* :func:`disaggregation`: generation time of one request on a colocated
  server (prefill interferes with decode) and on a disaggregated pair (KV
  hand-off once), against the answer length (:mod:`aiinfra.serving.disaggregation`).
* :func:`prefix_cache`: expected TTFT saved against the hit rate, and the
  expected TTFT against the cached prefix length, for a chosen prefix and
  hit rate (:mod:`aiinfra.serving.prefix_cache`).
* :func:`chunked_prefill`: TTFT of one prompt and TPOT of the running
  decodes against the prefill chunk size, bound and calibrated prediction,
  with the SLOs drawn (:mod:`aiinfra.serving.chunked_prefill`).

The ``*_sliders()`` helpers give the slider grids. Every number drawn comes
from a library call.
"""

from __future__ import annotations

import numpy as np
from matplotlib.ticker import FuncFormatter, NullFormatter

from aiinfra import roofline, units
from aiinfra.book.interactive import Slider, View, redraws
from aiinfra.formula import check, choice
from aiinfra.serving import chunked_prefill as chunked
from aiinfra.serving import disaggregation as disagg
from aiinfra.serving import prefix_cache as pcache
from aiinfra.serving import speculation

from . import FONT, PALETTE, new_figure, panel_title

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
    "CHUNK_VALUES",
    "chunked_prefill",
    "chunked_prefill_sliders",
]

GAMMA_VALUES = (1, 2, 4, 8)
DRAFT_COST_VALUES = (0.0, 0.05, 0.2)
_GAMMA_CURVES = (1, 2, 4, 8)
_COLORS = (PALETTE["sky"], PALETTE["blue"], PALETTE["green"], PALETTE["purple"])


@redraws("gamma", "draft_cost_ratio")
def speculative(gamma=4, draft_cost_ratio=0.05, alpha_mark=0.8):
    """Speculative decoding over ``alpha`` and ``gamma``.

    Left: ``E[tokens]`` per target pass against ``alpha`` for gamma 1, 2, 4,
    8, the chosen ``gamma`` drawn thick. Right: speedup ``E / (gamma c + 1)``
    at draft cost ``c`` for the same gammas, the chosen ``gamma`` drawn
    thick, with the break-even line at 1 and the break-even ``alpha`` marked.
    Readouts: break-even alpha, the speedup at ``alpha_mark``, the best gamma
    there, and the largest draft cost that still pays at ``alpha_mark``.
    """
    a_mark = check("alpha_mark", alpha_mark, "[0,1]")
    a = np.linspace(0.0, 0.99, 100)
    fig, (ax, bx) = new_figure(7.2, 3.4, ncols=2, left=0.08, right=0.98, bottom=0.15, top=0.9, wspace=0.25)
    for gg, color in zip(_GAMMA_CURVES, _COLORS):
        ax.plot(a, speculation.expected_tokens_per_target_pass(a, gg), color=color, label=f"γ = {gg}")
    (chosen_e,) = ax.plot([], [], color=PALETTE["red"], linewidth=2.4, zorder=3)
    thin = [bx.plot([], [], color=color, linewidth=0.9)[0] for color in _COLORS]
    (chosen_s,) = bx.plot([], [], color=PALETTE["red"], linewidth=2.4, zorder=3, label="chosen γ")
    bx.axhline(1.0, color=PALETTE["grey"], linestyle="--", linewidth=0.8)
    (even,) = bx.plot([], [], "o", color=PALETTE["red"], zorder=4)
    curves = [speculation.speculative_speedup(a, gg, c) for gg in _GAMMA_CURVES for c in DRAFT_COST_VALUES]
    bx.set_ylim(0, 1.08 * max(float(np.max(x)) for x in curves))
    ax.set_xlabel("acceptance rate α")
    ax.set_ylabel("tokens per target pass")
    ax.grid(alpha=0.3)
    ax.legend(fontsize=FONT["legend"], loc="upper left", frameon=False)
    bx.set_xlabel("acceptance rate α")
    bx.set_ylabel("speedup")
    title = panel_title(bx, "", fontsize=FONT["note"], loc="left")
    bx.grid(alpha=0.3)
    bx.legend(fontsize=FONT["legend"], loc="upper left", frameon=False)

    def update(gamma, draft_cost_ratio):
        g = check("gamma", gamma, "int>=1", scalar=True)
        c = check("draft_cost_ratio", draft_cost_ratio, "[0,1)")
        chosen_e.set_data(a, speculation.expected_tokens_per_target_pass(a, g))
        for line, gg in zip(thin, _GAMMA_CURVES):
            line.set_data(a, speculation.speculative_speedup(a, gg, c))
        chosen_s.set_data(a, speculation.speculative_speedup(a, g, c))
        a_even = speculation.breakeven_alpha(g, c)
        even.set_data([a_even], [1.0])
        title.set_text(f"γ = {g}, draft cost c = {c:g} target passes")
        best_g, best_s = speculation.best_gamma(a_mark, c, max_gamma=max(GAMMA_VALUES))
        return {
            f"break-even alpha (gamma {g})": f"{a_even:.2f}",
            f"speedup at alpha {a_mark:g}": f"{speculation.speculative_speedup(a_mark, g, c):.2f}x",
            f"best gamma at alpha {a_mark:g}": f"{best_g} ({best_s:.2f}x)",
            f"max draft cost at alpha {a_mark:g}": f"{speculation.max_draft_cost_ratio(a_mark, g):.2f} target passes",
        }

    return View(fig, update, [chosen_e, *thin, chosen_s, even, title])


def speculative_sliders():
    """Slider definitions for :func:`speculative` (draft length, draft cost)."""
    return [
        Slider("gamma", GAMMA_VALUES, label="drafted tokens gamma", default=4, fmt="{}"),
        Slider(
            "draft_cost_ratio",
            DRAFT_COST_VALUES,
            label="draft cost c",
            default=0.05,
            fmt=lambda c: f"{c:g} target pass" + ("es" if c != 1 else ""),
        ),
    ]


RATE_VALUES = (0.5, 1.0, 2.0, 4.0)
PROMPT_VALUES = (1024, 4096, 16384)


def _prompts_per_s(rate: float) -> str:
    return f"{rate:g} prompt{'s' if rate != 1 else ''}/s"


@redraws("prefill_rate_per_s", "prompt_tokens")
def disaggregation(
    prefill_rate_per_s=1.0,
    prompt_tokens=4096,
    *,
    decode_step_time_s,
    prefill_time_per_token_s,
    kv_bytes_per_token,
    link_bytes_per_s,
    link_latency_s=0.0,
    max_output_tokens=2000,
):
    """Colocated vs disaggregated generation time of one request against its answer length.

    A colocated server receives ``prefill_rate_per_s`` prompts of
    ``prompt_tokens`` each; each prefill takes ``prompt_tokens *
    prefill_time_per_token_s`` and preempts decode. Colocated: ``G t_d /
    (1 - u)``. Disaggregated: ``G t_d + t_kv``. Both axes are logarithmic,
    so the break-even answer length (tens of tokens) and the long answers
    (thousands) are both readable. If prefill alone fills the server
    (``u >= 1``) only the disaggregated line is drawn. Readouts: ``u``, both
    TPOTs, the worst colocated gap, the KV hand-off and the break-even answer
    length.
    """
    m = check("max_output_tokens", max_output_tokens, "int>=10", scalar=True)
    check("prefill_time_per_token_s", prefill_time_per_token_s, ">0")
    g = np.geomspace(1, m, 120)
    fig, ax = new_figure(6.8, 3.4, left=0.13, right=0.96, bottom=0.15, top=0.91)
    (disagg_line,) = ax.plot([], [], color=PALETTE["green"], label="disaggregated (KV shipped once)")
    (colo_line,) = ax.plot([], [], color=PALETTE["orange"], label="colocated (prefill preempts decode)")
    even = ax.axvline(1, color=PALETTE["grey"], linestyle=":", linewidth=1.0)
    even_text = ax.text(
        1, 0.04, "", transform=ax.get_xaxis_transform(), fontsize=FONT["small"], color="#555555", ha="left"
    )
    full = ax.text(
        0.97,
        0.06,
        "prefill alone fills the colocated server",
        transform=ax.transAxes,
        fontsize=FONT["note"],
        color=PALETTE["red"],
        ha="right",
    )
    ax.set_xscale("log")
    ax.set_yscale("log")
    ax.set_xlim(1, m)
    t_kv_max = disagg.kv_handoff_time_s(
        max(PROMPT_VALUES), kv_bytes_per_token, link_bytes_per_s, link_latency_s
    )
    ax.set_ylim(decode_step_time_s / 2, (m * decode_step_time_s + t_kv_max) * 4)
    ax.xaxis.set_major_formatter(FuncFormatter(lambda v, _p: f"{v:,.0f}"))
    ax.yaxis.set_major_formatter(FuncFormatter(lambda v, _p: units.fmt_time(v, digits=0)))
    for axis in (ax.xaxis, ax.yaxis):
        axis.set_minor_formatter(NullFormatter())
    ax.set_xlabel("output tokens G (log)")
    ax.set_ylabel("decode phase time (log)")
    title = panel_title(ax, "", fontsize=FONT["note"], loc="left")
    ax.grid(alpha=0.3)
    ax.legend(fontsize=FONT["legend"], loc="upper left", frameon=False)

    def update(prefill_rate_per_s, prompt_tokens):
        rate = check("prefill_rate_per_s", prefill_rate_per_s, ">=0")
        p = check("prompt_tokens", prompt_tokens, "int>=1", scalar=True)
        t_p = p * prefill_time_per_token_s
        u = disagg.prefill_busy_fraction(rate, t_p)
        t_kv = disagg.kv_handoff_time_s(p, kv_bytes_per_token, link_bytes_per_s, link_latency_s)
        disagg_line.set_data(g, g * decode_step_time_s + t_kv)
        readouts = {"prefill share of GPU time u": f"{u:.0%}"}
        colo_line.set_visible(u < 1)
        full.set_visible(u >= 1)
        even.set_visible(False)
        even_text.set_visible(False)
        if u < 1:
            tpot_co = disagg.colocated_tpot_s(decode_step_time_s, u)
            colo_line.set_data(g, g * tpot_co)
            readouts["TPOT colocated / disaggregated"] = (
                f"{units.fmt_time(tpot_co)} / {units.fmt_time(decode_step_time_s)}"
            )
            readouts["worst colocated gap"] = units.fmt_time(
                disagg.colocated_worst_gap_s(decode_step_time_s, t_p)
            )
            if u > 0:
                g_star = disagg.breakeven_output_tokens(decode_step_time_s, u, t_kv)
                readouts["disaggregation wins beyond"] = f"{g_star:,.0f} output tokens"
                if 1 <= g_star <= m:
                    even.set_xdata([g_star, g_star])
                    even_text.set_x(g_star * 1.08)
                    even_text.set_text(f"break-even: {g_star:,.0f} tokens")
                    even.set_visible(True)
                    even_text.set_visible(True)
        else:
            readouts["TPOT colocated / disaggregated"] = f"unbounded / {units.fmt_time(decode_step_time_s)}"
        readouts["KV hand-off per request"] = units.fmt_time(t_kv)
        title.set_text(f"{_prompts_per_s(rate)} of {p:,} tokens per server")
        return readouts

    return View(fig, update, [disagg_line, colo_line, even, even_text, full, title])


def disaggregation_sliders():
    """Slider definitions for :func:`disaggregation` (prompt arrival rate, prompt length)."""
    return [
        Slider(
            "prefill_rate_per_s",
            RATE_VALUES,
            label="prompts per second per server",
            default=1.0,
            fmt=_prompts_per_s,
        ),
        Slider("prompt_tokens", PROMPT_VALUES, label="prompt length", default=4096, fmt="{:,} tokens"),
    ]


#: Cached prefix lengths on the slider (tokens; none beyond the chapter's 8,192-token prompt).
PREFIX_VALUES = (0, 512, 1024, 2048, 4096, 6144, 7680)
#: Hit rates on the slider.
HIT_VALUES = (0.0, 0.25, 0.5, 0.75, 0.9, 1.0)
_FAINT = (512, 2048, 4096, 7680)


@redraws("cached_tokens", "hit_rate")
def prefix_cache(
    cached_tokens=2048,
    hit_rate=0.5,
    *,
    prompt_tokens,
    flops_per_token,
    attention_flops_per_pair,
    flops_per_s,
    efficiency=1.0,
):
    """Prefix caching: what a cached prefix saves, by hit rate and by prefix length.

    Left: expected TTFT saved against the hit rate
    (:func:`aiinfra.serving.prefix_cache.expected_ttft_saved_s`) for the chosen
    ``cached_tokens`` (thick, with the chosen ``hit_rate`` marked) and, faint,
    for a few other prefix lengths. Right: the expected TTFT at the chosen
    hit rate against the cached prefix length, from none to the whole
    prompt, with the chosen prefix marked; the dashed line is the whole
    prefill. Readouts: the whole prefill, the expected TTFT and the saving at
    the chosen point, and the saving at 50% and 90% hits for the prefix.
    """
    p = check("prompt_tokens", prompt_tokens, "int>=1", scalar=True)
    h = np.linspace(0.0, 1.0, 51)
    lengths = np.linspace(0, p, 65).round()

    def saved_s(rate, cached):
        return pcache.expected_ttft_saved_s(
            rate, p, cached, flops_per_token, flops_per_s, efficiency, attention_flops_per_pair
        )

    full = pcache.prefill_flops_with_prefix(p, 0, flops_per_token, attention_flops_per_pair)
    t_full = roofline.compute_time_s(full, flops_per_s, efficiency)
    fig, (ax, bx) = new_figure(7.2, 3.4, ncols=2, left=0.09, right=0.975, bottom=0.15, top=0.9, wspace=0.3)
    for length in _FAINT:
        if length <= p:
            ax.plot(h, saved_s(h, length) / units.ms, color=PALETTE["blue"], linewidth=0.8, alpha=0.5)
            ax.text(
                1.01,
                saved_s(1.0, length) / units.ms,
                f"{length:,}",
                fontsize=FONT["small"],
                va="center",
                color=PALETTE["blue"],
            )
    (chosen,) = ax.plot([], [], color=PALETTE["red"], linewidth=2.4, zorder=3)
    (dot_a,) = ax.plot([], [], "o", color=PALETTE["red"], mec="black", ms=7, zorder=4)
    for a in (ax, bx):
        a.axhline(t_full / units.ms, color=PALETTE["grey"], linestyle="--", linewidth=0.8)
        a.set_ylim(0, t_full / units.ms * 1.1)
        a.grid(alpha=0.3)
        a.set_ylabel("ms")
    ax.set_xlim(0, 1.16)
    ax.set_xticks([0, 0.25, 0.5, 0.75, 1.0], ["0%", "25%", "50%", "75%", "100%"])
    ax.set_xlabel("hit rate h")
    panel_title(ax, f"TTFT saved, {p:,}-token prompts", fontsize=FONT["note"], loc="left")
    (ttft_line,) = bx.plot([], [], color=PALETTE["green"], linewidth=2.0, zorder=3)
    (dot_b,) = bx.plot([], [], "o", color=PALETTE["red"], mec="black", ms=7, zorder=4)
    bx.set_xlim(0, p)
    bx.set_xlabel("cached prefix (tokens)")
    bx.xaxis.set_major_formatter(FuncFormatter(lambda v, _p: f"{v:,.0f}"))
    title_b = panel_title(bx, "", fontsize=FONT["note"], loc="left")

    def update(cached_tokens, hit_rate):
        c = check("cached_tokens", cached_tokens, "int>=0", scalar=True)
        if c > p:
            raise ValueError(f"cached_tokens must be <= prompt_tokens ({p}), got {c}")
        rate = check("hit_rate", hit_rate, "[0,1]")
        saved = saved_s(rate, c)
        chosen.set_data(h, saved_s(h, c) / units.ms)
        dot_a.set_data([rate], [saved / units.ms])
        ttft_line.set_data(lengths, (t_full - saved_s(rate, lengths)) / units.ms)
        dot_b.set_data([c], [(t_full - saved) / units.ms])
        title_b.set_text(f"expected TTFT at {rate:.0%} hits")
        readouts = {
            "whole prefill (no hit)": units.fmt_time(t_full),
            f"expected TTFT, {c:,}-token prefix at {rate:.0%} hits": units.fmt_time(t_full - saved),
            "saved": units.fmt_time(saved),
        }
        for r in (0.5, 0.9):
            readouts[f"saved at {r:.0%} hits, {c:,}-token prefix"] = units.fmt_time(saved_s(r, c))
        return readouts

    return View(fig, update, [chosen, dot_a, ttft_line, dot_b, title_b])


def prefix_cache_sliders():
    """Slider definitions for :func:`prefix_cache` (cached prefix length, hit rate)."""
    return [
        Slider(
            "cached_tokens",
            PREFIX_VALUES,
            label="cached prefix",
            default=2048,
            fmt=lambda n: f"{n:,} token" + ("s" if n != 1 else ""),
        ),
        Slider("hit_rate", HIT_VALUES, label="hit rate", default=0.5, fmt="{:.0%}"),
    ]


#: Prefill chunk sizes on the slider (tokens per step).
CHUNK_VALUES = (256, 512, 1024, 2048, 4096, 8192)


@redraws("chunk_tokens")
def chunked_prefill(
    chunk_tokens=512, *, deployment, prompt_tokens, decode_batch, context_tokens, ttft_slo_s, tpot_slo_s
):
    """TTFT and TPOT against the prefill chunk size on ``deployment``, bound and calibrated prediction.

    Left: time to first token of one ``prompt_tokens`` prompt prefilled in
    chunks (:func:`aiinfra.serving.chunked_prefill.chunked_ttft_s`). Right:
    the step time the ``decode_batch`` running decodes see as their TPOT
    while the chunk shares their step. Dashed lines are the SLOs; the
    chosen chunk is marked. Readouts: both times, bound and prediction, and
    whether the prediction meets both SLOs.
    """
    c = np.array(CHUNK_VALUES)
    bound, pred = chunked.chunk_step_times_s(deployment, c, decode_batch, context_tokens)
    ttft_b, ttft_p = (chunked.chunked_ttft_s(prompt_tokens, c, t) for t in (bound, pred))
    fig, (ax, bx) = new_figure(7.2, 3.4, ncols=2, left=0.1, right=0.98, bottom=0.16, top=0.88, wspace=0.32)
    marks = []
    for axis, (b_curve, p_curve), slo_s, label in (
        (ax, (ttft_b, ttft_p), ttft_slo_s, "TTFT"),
        (bx, (bound, pred), tpot_slo_s, "TPOT of running decodes"),
    ):
        axis.plot(c, b_curve, color=PALETTE["blue"], marker="o", markersize=3, label="bound")
        axis.plot(
            c, p_curve, color=PALETTE["orange"], marker="o", markersize=3, label="calibrated prediction"
        )
        axis.axhline(slo_s, color=PALETTE["red"], linestyle="--", linewidth=0.9, label="SLO")
        axis.set_xscale("log", base=2)
        axis.set_yscale("log")
        axis.xaxis.set_major_formatter(FuncFormatter(lambda v, _p: f"{v:,.0f}"))
        axis.yaxis.set_major_formatter(FuncFormatter(lambda v, _p: units.fmt_time(v, digits=0)))
        axis.yaxis.set_minor_formatter(NullFormatter())
        axis.set_xlabel("prefill chunk (tokens per step)")
        axis.set_ylabel(label)
        axis.grid(alpha=0.3)
        marks.append(axis.plot([], [], "o", color=PALETTE["red"], markersize=8, zorder=4)[0])
    ax.legend(fontsize=FONT["legend"], loc="upper right", frameon=False)
    title = panel_title(ax, "", fontsize=FONT["note"], loc="left")

    def update(chunk_tokens):
        k = CHUNK_VALUES.index(choice("chunk_tokens", chunk_tokens, set(CHUNK_VALUES)))
        marks[0].set_data([c[k]], [ttft_p[k]])
        marks[1].set_data([c[k]], [pred[k]])
        title.set_text(f"{prompt_tokens:,}-token prompt beside {decode_batch} decodes")
        meets = ttft_p[k] <= ttft_slo_s and pred[k] <= tpot_slo_s
        return {
            "TTFT bound / prediction": f"{units.fmt_time(ttft_b[k])} / {units.fmt_time(ttft_p[k])}",
            "TPOT bound / prediction": f"{units.fmt_time(bound[k])} / {units.fmt_time(pred[k])}",
            "prediction meets both SLOs": "yes" if meets else "no",
        }

    return View(fig, update, [*marks, title])


def chunked_prefill_sliders():
    """Slider definition for :func:`chunked_prefill` (the chunk size)."""
    return [Slider("chunk_tokens", CHUNK_VALUES, label="prefill chunk", default=512, fmt="{:,} tokens")]
