"""Pure figure functions: ``draw(**params) -> (matplotlib Figure, readouts)``.

Each module draws one figure of the book and holds no state. The five that
rebuild the source texts' widgets follow one pattern:

* ``draw(**params)`` returns a :class:`matplotlib.figure.Figure` (built
  directly, never through pyplot) and a readouts mapping ``label -> text``;
  every number comes from a library call;
* ``sliders()`` returns the :class:`aiinfra.book.interactive.Slider` list;
* ``show(mode=None, **fixed)`` wraps the two with
  :func:`aiinfra.book.interactive.interactive_figure` (display its result).

=================  ===========================================================
module             figure
=================  ===========================================================
``cluster_scale``  GPUs 1 to 32,768: peak and realized compute, MFU, power
``run_inference``  one prefill pass over the prompt, then one decode pass per token
``tokens_per_s``   model size x weight precision: decode tok/s, reply time, bytes/token
``batching_kv``    batch 1 to 140 on an 8x80 GB node at 8K context: tok/s and KV vs HBM
``roofline_plot``  the GPU catalog's rooflines with operations placed by intensity
=================  ===========================================================

Chapter modules (``chNN.py``) add their own figures with the same helper.
:func:`new_figure` gives every figure the same size and fixed margins
(constrained layout costs ~100 ms per redraw, too slow for a live slider).
"""
from __future__ import annotations

from aiinfra.formula import check, choice

__all__ = ["new_figure", "panel_title", "SOURCE_FIGURES", "PALETTE"]

#: Colours shared by the figures (colour-blind safe, from the Okabe-Ito set).
PALETTE = {
    "blue": "#0072B2",
    "orange": "#E69F00",
    "green": "#009E73",
    "red": "#D55E00",
    "purple": "#CC79A7",
    "sky": "#56B4E9",
    "grey": "#7f7f7f",
    "light": "#d9d9d9",
}

#: The figure modules that rebuild the source texts' widgets.
SOURCE_FIGURES = ("cluster_scale", "run_inference", "tokens_per_s", "batching_kv", "roofline_plot")


def new_figure(width_in: float = 6.4, height_in: float = 3.2, ncols: int = 1, nrows: int = 1,
               left: float = 0.11, right: float = 0.98, bottom: float = 0.16, top: float = 0.9,
               wspace: float = 0.35, hspace: float = 0.4):
    """A :class:`~matplotlib.figure.Figure` with a grid of axes and fixed margins.

    Returns ``(fig, axes)``; ``axes`` is a single Axes for a 1x1 grid, else a
    flat list. Margins are fractions of the figure (0 < left < right <= 1).
    """
    from matplotlib.figure import Figure

    w = check("width_in", width_in, ">0")
    h = check("height_in", height_in, ">0")
    nc = check("ncols", ncols, "int>=1", scalar=True)
    nr = check("nrows", nrows, "int>=1", scalar=True)
    for name, v in (("left", left), ("right", right), ("bottom", bottom), ("top", top)):
        check(name, v, "(0,1]")
    if left >= right:
        raise ValueError(f"left must be < right (fractions of the width), got left={left}, right={right}")
    if bottom >= top:
        raise ValueError(f"bottom must be < top (fractions of the height), got bottom={bottom}, top={top}")
    check("wspace", wspace, ">=0")
    check("hspace", hspace, ">=0")
    fig = Figure(figsize=(w, h))
    fig.subplots_adjust(left=left, right=right, bottom=bottom, top=top, wspace=wspace, hspace=hspace)
    axes = fig.subplots(nr, nc, squeeze=False).ravel().tolist()
    for ax in axes:
        ax.spines[["top", "right"]].set_visible(False)
    return fig, (axes[0] if len(axes) == 1 else axes)


def panel_title(ax, text: str, fontsize: float = 9.0, loc: str = "center"):
    """Title above ``ax`` placed as plain text in axes coordinates.

    ``Axes.set_title`` makes every redraw measure the tick labels to dodge
    them (~30% of a redraw for a small two-panel figure); fixed margins make
    that unnecessary. ``loc`` is "left", "center" or "right".
    """
    choice("loc", loc, {"left", "center", "right"})
    check("fontsize", fontsize, ">0")
    x = {"left": 0.0, "center": 0.5, "right": 1.0}[loc]
    return ax.text(x, 1.03, text, transform=ax.transAxes, ha=loc, va="bottom", fontsize=fontsize)
