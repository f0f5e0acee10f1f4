"""Run inference: one prefill pass over the whole prompt emits the first answer token, then one decode pass per token.

The slider steps through forward passes. Pass 1 is the prefill: every
prompt token is processed together, in parallel, and the pass ends with the
first answer token. Each later pass is a decode step that produces exactly
one more answer token and must wait for the one before it. An answer of
``G`` tokens therefore takes ``G`` passes: 1 prefill and ``G - 1`` decode
steps, the book's convention (:func:`aiinfra.decode.end_to_end_latency_s`,
chapter 4). Counters show prefill passes, decode passes and the total. The
FLOP readout uses the ``2N`` rule per token
(:func:`aiinfra.compute.approx_prefill_flops_2n` over the prompt,
:func:`aiinfra.compute.approx_decode_flops_2n` per decode step). Serves
chapter 3 (TheCatch "What is inference?"; Pope et al. 2022).
"""

from __future__ import annotations

from dataclasses import dataclass

from matplotlib.patches import Rectangle

from aiinfra import compute, units
from aiinfra.book.interactive import Slider, View, interactive_figure, redraws
from aiinfra.formula import check

from . import FONT, PALETTE, new_figure, panel_title

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


def _total_passes(answer_tokens: int) -> int:
    """Forward passes an answer of ``answer_tokens`` tokens needs: 1 prefill + (G - 1) decode steps = ``G``."""
    return check("answer_tokens", answer_tokens, "int>=1", scalar=True)


def _pass_count(step: int, answer_tokens: int) -> PassCount:
    """Counters after ``step`` forward passes (0 = not started) of an answer of ``answer_tokens`` tokens."""
    last = _total_passes(answer_tokens)
    k = check("step", step, "int>=0", scalar=True)
    if k > last:
        raise ValueError(f"step must lie in [0, {last}] for {last} answer tokens, got {step!r}")
    return PassCount(prefill=min(k, 1), decode=max(k - 1, 0), answer_tokens=k)


def _token_boxes(ax, tokens, y, color, label):
    """Outlined (unlit) boxes, drawn once, and the filled (lit) boxes that a step switches on."""
    x, lit = 0.0, []
    for tok in tokens:
        w = 0.35 + 0.11 * len(tok.strip())
        ax.add_patch(Rectangle((x, y), w, 0.8, facecolor="white", edgecolor=PALETTE["light"], lw=1.2))
        ax.text(
            x + w / 2, y + 0.4, tok.strip(), ha="center", va="center", fontsize=FONT["note"], color="#9a9a9a"
        )
        box = ax.add_patch(Rectangle((x, y), w, 0.8, facecolor=color, edgecolor=color, lw=1.2, zorder=3))
        text = ax.text(
            x + w / 2,
            y + 0.4,
            tok.strip(),
            ha="center",
            va="center",
            fontsize=FONT["note"],
            color="white",
            zorder=4,
        )
        lit.append((box, text))
        x += w + 0.12
    ax.text(-0.15, y + 0.4, label, ha="right", va="center", fontsize=FONT["label"])
    return x, lit


@redraws("step")
def draw(step=0, prompt=PROMPT, answer=ANSWER, n_params=70e9):
    """Draw the request after ``step`` forward passes; return ``(Figure, readouts)``."""
    if not prompt or not answer:
        raise ValueError("prompt and answer must each hold at least one token")
    n = check("n_params", n_params, ">0")
    last = _total_passes(len(answer))

    fig, (ax, tl) = new_figure(7.2, 2.7, nrows=2, left=0.1, right=0.98, bottom=0.03, top=0.97, hspace=0.35)
    w1, prompt_lit = _token_boxes(ax, prompt, 1.2, PALETTE["blue"], "prompt")
    w2, answer_lit = _token_boxes(ax, answer, 0.0, PALETTE["orange"], "answer")
    ax.set_xlim(-0.1, max(w1, w2))
    ax.set_ylim(-0.2, 2.2)
    ax.axis("off")

    # timeline: one slot per forward pass; the first is the prefill (it also emits answer token 1)
    tl.set_xlim(0, last + 0.2)
    tl.set_ylim(0, 1)
    slots = []
    for k in range(1, last + 1):
        color = PALETTE["blue"] if k == 1 else PALETTE["orange"]
        name = "prefill" if k == 1 else f"D{k - 1}"
        tl.add_patch(Rectangle((k - 1 + 0.05, 0.15), 0.9, 0.7, facecolor="white", edgecolor=color, lw=1.0))
        tl.text(k - 0.5, 0.5, name, ha="center", va="center", fontsize=FONT["note"], color=color)
        box = tl.add_patch(
            Rectangle((k - 1 + 0.05, 0.15), 0.9, 0.7, facecolor=color, edgecolor=color, lw=1.0, zorder=3)
        )
        text = tl.text(
            k - 0.5, 0.5, name, ha="center", va="center", fontsize=FONT["note"], color="white", zorder=4
        )
        slots.append((box, text))
    tl.set_yticks([])
    tl.set_xticks([])
    tl.spines[["left", "bottom"]].set_visible(False)
    panel_title(
        tl,
        f"forward passes, in order: {last} for {last} answer tokens (each waits for the one before)",
        fontsize=FONT["note"],
        loc="left",
    )
    moving = [a for pair in prompt_lit + answer_lit + slots for a in pair]

    def update(step):
        c = _pass_count(step, len(answer))
        for pair in prompt_lit:
            for a in pair:
                a.set_visible(c.prefill == 1)
        for i, pair in enumerate(answer_lit):
            for a in pair:
                a.set_visible(i < c.answer_tokens)
        for k, pair in enumerate(slots, start=1):
            for a in pair:
                a.set_visible(k <= c.total)
        flops = 0.0
        if c.prefill:
            flops += compute.approx_prefill_flops_2n(n, len(prompt))
        if c.decode:
            flops += compute.approx_decode_flops_2n(n, c.decode)
        return {
            "prefill passes": f"{c.prefill}",
            "decode passes": f"{c.decode}",
            "answer tokens": f"{c.answer_tokens} of {last}",
            f"FLOPs so far (2N rule, {n / units.GIGA:g}B model)": units.fmt_flops(flops) if flops else "0",
        }

    return View(fig, update, moving)


def sliders(answer_tokens: int = len(ANSWER)):
    """The pass counter: 0 (not started), the prefill (emits token 1), then one decode step per further token."""
    last = _total_passes(answer_tokens)

    def fmt(k):
        return "not started" if k == 0 else ("prefill: token 1" if k == 1 else f"decode {k - 1}: token {k}")

    return [Slider("step", tuple(range(last + 1)), label="forward pass", default=0, fmt=fmt)]


def show(mode=None, **fixed):
    """The interactive prefill-then-decode figure."""
    answer = fixed.get("answer", ANSWER)
    return interactive_figure(
        draw, sliders(len(answer)), title="Run inference: prefill, then decode", fixed=fixed, mode=mode
    )
