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
A figure that a slider moves is written as a *view* (see
:mod:`aiinfra.book.interactive`): ``@redraws("param", ...)`` on a builder
that draws the still parts once and returns ``View(fig, update, moving)``.

Size and type: every figure is at most :data:`MAX_WIDTH_IN` wide and is shown
at 96 CSS pixels per inch (one CSS inch), so the :data:`FONT` sizes in points
are 4/3 as many pixels; the smallest, 8.5 pt, is 11.3 px on screen.
:func:`new_figure` gives every figure fixed margins (constrained layout costs
~100 ms per redraw, too slow for a live slider) and the book's type sizes.
"""

from __future__ import annotations

import functools

from aiinfra.formula import check, choice

__all__ = [
    "new_figure",
    "panel_title",
    "style_axes",
    "SOURCE_FIGURES",
    "PALETTE",
    "FONT",
    "MAX_WIDTH_IN",
    "MIN_FONT_PT",
    "StaticFigure",
]

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

#: Type sizes in points (x 4/3 = CSS pixels as displayed). Nothing is set smaller than ``small``.
FONT = {"tick": 9.0, "label": 9.5, "legend": 9.0, "title": 10.0, "note": 9.0, "small": 8.5}
#: The smallest type allowed anywhere in a figure: 11 CSS pixels at 96 pixels per inch.
MIN_FONT_PT = 11 * 72 / 96
#: The widest figure, in inches: 691 CSS pixels, within the book's text column at a 1280-pixel window.
MAX_WIDTH_IN = 7.2

#: The figure modules that rebuild the widgets of the seed texts.
SOURCE_FIGURES = ("cluster_scale", "run_inference", "tokens_per_s", "batching_kv", "roofline_plot")


def new_figure(
    width_in: float = 6.4,
    height_in: float = 3.2,
    ncols: int = 1,
    nrows: int = 1,
    left: float = 0.11,
    right: float = 0.98,
    bottom: float = 0.16,
    top: float = 0.9,
    wspace: float = 0.35,
    hspace: float = 0.4,
    **grid,
):
    """A :class:`StaticFigure` with a grid of axes, fixed margins and the book's type sizes.

    Returns ``(fig, axes)``; ``axes`` is a single Axes for a 1x1 grid, else a
    flat list. Margins are fractions of the figure (0 < left < right <= 1);
    ``grid`` passes ``width_ratios``/``height_ratios``. Keep ``width_in`` at
    most :data:`MAX_WIDTH_IN`: a wider figure is scaled down in the text
    column, and its type with it (the legibility tests check the book's figures).
    """
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
    fig = _figure_class()(figsize=(w, h))
    fig.subplots_adjust(left=left, right=right, bottom=bottom, top=top, wspace=wspace, hspace=hspace)
    axes = fig.subplots(nr, nc, squeeze=False, gridspec_kw=grid or None).ravel().tolist()
    for ax in axes:
        style_axes(ax)
    return fig, (axes[0] if len(axes) == 1 else axes)


def style_axes(ax):
    """The book's look for one Axes: no top/right spines, type at :data:`FONT` sizes (also for ticks made later)."""
    ax.spines[["top", "right"]].set_visible(False)
    ax.tick_params(labelsize=FONT["tick"])
    ax.xaxis.label.set_fontsize(FONT["label"])
    ax.yaxis.label.set_fontsize(FONT["label"])
    return ax


@functools.cache
def _figure_class():
    from matplotlib.figure import Figure

    class StaticFigure(Figure):
        """A matplotlib Figure that shows itself as SVG in a notebook (no pyplot, no inline backend needed).

        Figures are built without pyplot, so a notebook that never imported it
        has no display formatter for them and would print their repr
        (``<Figure size 640x190 with 1 Axes>``) instead of the image.
        """

        def _repr_svg_(self):
            import io

            out = io.StringIO()
            self.savefig(out, format="svg", facecolor="white")
            return out.getvalue()

    return StaticFigure


def __getattr__(name):
    # the Figure subclass needs matplotlib: build it on first use, so importing this package stays cheap
    if name == "StaticFigure":
        return _figure_class()
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")


def panel_title(ax, text: str, fontsize: float = FONT["title"], loc: str = "center"):
    """Title above ``ax`` placed as plain text in axes coordinates.

    ``Axes.set_title`` makes every redraw measure the tick labels to dodge
    them (~30% of a redraw for a small two-panel figure); fixed margins make
    that unnecessary. ``loc`` is "left", "center" or "right".
    """
    choice("loc", loc, {"left", "center", "right"})
    check("fontsize", fontsize, ">0")
    x = {"left": 0.0, "center": 0.5, "right": 1.0}[loc]
    return ax.text(x, 1.03, text, transform=ax.transAxes, ha=loc, va="bottom", fontsize=fontsize)
