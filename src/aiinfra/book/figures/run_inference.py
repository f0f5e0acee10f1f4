"""Run inference: one prefill pass lights up the whole prompt, then one decode pass per answer token.

The slider steps through forward passes. Pass 1 is the prefill: every
prompt token is processed together, in parallel. Each later pass is a
decode step that produces exactly one answer token and must wait for the
one before it. Counters show prefill passes, decode passes and the total.

Two conventions exist for the first answer token (see
:mod:`aiinfra.decode`): in the source text's accounting (the default here),
prefill only reads the prompt and each of the ``G`` answer tokens costs its
own decode pass, ``1 + G`` passes in all; in serving engines such as vLLM
the prefill pass already emits the first token, ``G`` passes in all. Set
``prefill_emits_first_token=True`` for the second. The FLOP readout uses the
``2N`` rule per token (:func:`aiinfra.compute.approx_prefill_flops_2n`,
:func:`aiinfra.compute.approx_decode_flops_2n`). Serves the chapter on what
inference is (source: TheCatch "What is inference?"; Pope et al. 2022).
"""
from __future__ import annotations

from aiinfra.formula import check

from dataclasses import dataclass

from matplotlib.patches import Rectangle

from aiinfra import compute, units
from aiinfra.book.interactive import Slider, interactive_figure
from . import PALETTE, new_figure, panel_title

__all__ = ["PROMPT", "ANSWER", "PassCount", "draw", "sliders", "show"]

#: The example request, already split into tokens (illustrative tokenisation).
PROMPT = ("Why", " is", " the", " sky", " blue", "?")
ANSWER = ("Sun", "light", " scatters", " off", " air", " molecules", ".")


@dataclass(frozen=True)
class PassCount:
    """Forward passes run so far and answer tokens shown after ``step`` passes."""

    prefill: int
    decode: int
    answer_tokens: int

    @property
    def total(self) -> int:
        return self.prefill + self.decode


def _total_passes(answer_tokens: int, prefill_emits_first_token: bool = False) -> int:
    """Forward passes a request of ``answer_tokens`` output tokens needs: ``1 + G`` or ``G``."""
    g = check("answer_tokens", answer_tokens, "int>=1", scalar=True)
    return g if prefill_emits_first_token else 1 + g


def _pass_count(step: int, answer_tokens: int, prefill_emits_first_token: bool = False) -> PassCount:
    """Counters after ``step`` forward passes (0 = not started) of a request of ``answer_tokens`` tokens."""
    g = check("answer_tokens", answer_tokens, "int>=1", scalar=True)
    last = _total_passes(g, prefill_emits_first_token)
    k = check("step", step, "int>=0", scalar=True)
    if k > last:
        raise ValueError(f"step must lie in [0, {last}] for {g} answer tokens, got {step!r}")
    prefill = min(k, 1)
    decode = max(k - 1, 0)
    shown = min(decode + (prefill if prefill_emits_first_token else 0), g)
    return PassCount(prefill, decode, shown)


def _token_boxes(ax, tokens, y, lit, color, label):
    x = 0.0
    for i, tok in enumerate(tokens):
        w = 0.35 + 0.11 * len(tok.strip())
        on = i < lit
        ax.add_patch(Rectangle((x, y), w, 0.8, facecolor=color if on else "white",
                               edgecolor=color if on else PALETTE["light"], lw=1.2))
        ax.text(x + w / 2, y + 0.4, tok.strip(), ha="center", va="center", fontsize=9,
                color="white" if on else PALETTE["light"])
        x += w + 0.12
    ax.text(-0.15, y + 0.4, label, ha="right", va="center", fontsize=9)
    return x


def draw(step=0, prompt=PROMPT, answer=ANSWER, n_params=70e9, prefill_emits_first_token=False):
    """Draw the request after ``step`` forward passes; return ``(Figure, readouts)``."""
    if not prompt or not answer:
        raise ValueError("prompt and answer must each hold at least one token")
    n = check("n_params", n_params, ">0")
    c = _pass_count(step, len(answer), prefill_emits_first_token)
    last = _total_passes(len(answer), prefill_emits_first_token)

    fig, (ax, tl) = new_figure(6.8, 2.5, nrows=2, left=0.1, right=0.98, bottom=0.03, top=0.97, hspace=0.3)
    width = max(_token_boxes(ax, prompt, 1.2, len(prompt) if c.prefill else 0, PALETTE["blue"], "prompt"),
                _token_boxes(ax, answer, 0.0, c.answer_tokens, PALETTE["orange"], "answer"))
    ax.set_xlim(-0.1, width)
    ax.set_ylim(-0.2, 2.2)
    ax.axis("off")

    # timeline: one wide block for prefill (all prompt tokens at once), one slot per decode pass
    tl.set_xlim(0, last + 0.2)
    tl.set_ylim(0, 1)
    for k in range(1, last + 1):
        done = k <= c.total
        is_prefill = k == 1
        color = PALETTE["blue"] if is_prefill else PALETTE["orange"]
        tl.add_patch(Rectangle((k - 1 + 0.05, 0.15), 0.9, 0.7, facecolor=color if done else "white",
                               edgecolor=color, lw=1.0, alpha=1.0 if done else 0.5))
        tl.text(k - 0.5, 0.5, f"prefill\n{len(prompt)} tok" if is_prefill else f"D{k - 1}", ha="center", va="center",
                fontsize=8, color="white" if done else color)
    tl.set_yticks([])
    tl.set_xticks([])
    tl.spines[["left", "bottom"]].set_visible(False)
    panel_title(tl, "forward passes, in order (each waits for the one before)", fontsize=8.5, loc="left")

    flops = 0.0
    if c.prefill:
        flops += compute.approx_prefill_flops_2n(n, len(prompt))
    if c.decode:
        flops += compute.approx_decode_flops_2n(n, c.decode)
    readouts = {
        "prefill passes": f"{c.prefill}",
        "decode passes": f"{c.decode}",
        "total forward passes": f"{c.total} of {last}",
        f"FLOPs so far (2N rule, {n / units.GIGA:g}B model)": units.fmt_flops(flops) if flops else "0",
    }
    return fig, readouts


def sliders(answer_tokens: int = len(ANSWER), prefill_emits_first_token: bool = False):
    """The pass counter: 0 (not started) to the last pass."""
    last = _total_passes(answer_tokens, prefill_emits_first_token)

    def fmt(k):
        return "not started" if k == 0 else ("prefill" if k == 1 else f"decode {k - 1}")

    return [Slider("step", tuple(range(last + 1)), label="forward pass", default=0, fmt=fmt)]


def show(mode=None, **fixed):
    """The interactive prefill-then-decode figure."""
    answer = fixed.get("answer", ANSWER)
    emits = fixed.get("prefill_emits_first_token", False)
    return interactive_figure(draw, sliders(len(answer), emits), title="Run inference: prefill, then decode",
                              fixed=fixed, mode=mode)
