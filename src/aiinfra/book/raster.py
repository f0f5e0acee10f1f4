"""A view rasterised in layers: the still background once, the moving artists per slider step.

:class:`Raster` draws a :class:`~aiinfra.book.views.View` with matplotlib's Agg
backend at a pixel density (device pixels per CSS pixel): the still parts
(axes, ticks, labels, curves that do not move) once into a *background*,
then at each step only the moving artists, in z-order, over it (blitting) or
alone on a transparent canvas (a static frame's layer). :class:`TextCache`
keeps the pixels of texts that a live step draws again unchanged.

A figure is displayed at :data:`DISPLAY_DPI` CSS pixels per inch of its
matplotlib size (96, the CSS inch, which is also the scale at which an
inline SVG figure is shown), so a font of ``p`` points is ``p * 96 / 72``
pixels on screen.
"""

from __future__ import annotations

from typing import Any

from aiinfra.book.views import View
from aiinfra.formula import check

#: CSS pixels per inch of figure size: the scale at which every figure is displayed.
DISPLAY_DPI = 96


class TextCache:
    """Texts that a live step draws again unchanged, kept as small RGBA patches and blended back.

    Matplotlib 3.11's Agg backend lays out and renders text glyph by glyph in
    Python (about 0.1 ms a glyph): tick labels, legends and titles were most
    of a slider step. :meth:`draw_text` stands in for the renderer's
    ``draw_text`` (same signature). A text is drawn once on a transparent
    scratch canvas of the same size and dpi; the pixels it covers are kept
    under a key of everything that decides them (string, font, angle,
    position, colour, clip rectangle, hinting) and blended over the canvas
    each time the same text is drawn again. A text clipped to a path is
    drawn directly. Blending differs from drawing straight onto the canvas
    by rounding only (a level or two on anti-aliased edges).
    """

    MAX_PATCHES = 512

    def __init__(self, renderer):
        from matplotlib.backends.backend_agg import RendererAgg

        self.target = renderer
        self.scratch = RendererAgg(int(renderer.width), int(renderer.height), renderer.dpi)
        self.patches: dict = {}

    @staticmethod
    def _key(gc, x, y, s, prop, angle, ismath, mtext):
        import matplotlib as mpl

        if gc.get_clip_path()[0] is not None:
            return None
        rect = gc.get_clip_rectangle()
        shaping = tuple(
            getattr(mtext, name)() for name in ("get_fontfeatures", "get_language") if hasattr(mtext, name)
        )
        return (
            s,
            hash(prop),
            float(angle),
            str(ismath),
            float(x),
            float(y),
            tuple(gc.get_rgb()),
            gc.get_alpha(),
            gc.get_forced_alpha(),
            gc.get_antialiased(),
            None if rect is None else tuple(rect.bounds),
            shaping,
            mpl.rcParams["text.hinting"],
            mpl.rcParams["text.hinting_factor"],
            mpl.rcParams["text.antialiased"],
        )

    def _render(self, *args):
        """The text drawn alone: (rows, columns, premultiplied colour, 1 - alpha) of the pixels it covers."""
        import numpy as np

        canvas = np.asarray(self.scratch.buffer_rgba())
        type(self.scratch).draw_text(self.scratch, *args)
        h, w = canvas.shape[:2]
        region = self._search_region(*args[1:6], h, w)
        box = self._ink_box(canvas, region)
        if box is not None and self._touches_edge(box, region, h, w):
            region = (0, h, 0, w)  # the text reaches the edge of where it was looked for: look everywhere
            box = self._ink_box(canvas, region)
        patch = None
        if box is not None:
            y0, y1, x0, x1 = box
            rgba = canvas[y0:y1, x0:x1].astype(np.float32) / 255.0
            alpha = rgba[..., 3:4]
            patch = slice(y0, y1), slice(x0, x1), rgba[..., :3] * alpha * 255.0, 1.0 - alpha
        canvas[region[0] : region[1], region[2] : region[3]] = 0  # the scratch canvas stays transparent
        return patch

    @staticmethod
    def _ink_box(canvas, region) -> tuple[int, int, int, int] | None:
        """Rows and columns (start, stop) of the drawn pixels (alpha > 0) inside ``region``, or None."""
        import numpy as np

        r0, r1, c0, c1 = region
        alpha = canvas[r0:r1, c0:c1, 3]
        rows = np.flatnonzero(alpha.any(axis=1))
        if rows.size == 0:
            return None
        cols = np.flatnonzero(alpha[rows[0] : rows[-1] + 1].any(axis=0))
        return r0 + int(rows[0]), r0 + int(rows[-1]) + 1, c0 + int(cols[0]), c0 + int(cols[-1]) + 1

    @staticmethod
    def _touches_edge(box, region, h, w) -> bool:
        """Whether ``box`` reaches a side of ``region`` that is not also a side of the canvas."""
        y0, y1, x0, x1 = box
        r0, r1, c0, c1 = region
        return (y0 == r0 > 0) or (y1 == r1 < h) or (x0 == c0 > 0) or (x1 == c1 < w)

    def _search_region(self, x, y, s, prop, angle, h, w) -> tuple[int, int, int, int]:
        """Rows and columns (start, stop) that a line of text drawn at ``(x, y)`` can touch, with a margin.

        ``y`` counts down from the top, at the baseline (Agg's convention). A
        rotated line, or mathtext, is looked for on the whole canvas.
        """
        if float(angle) % 360 or not isinstance(s, str) or "$" in s:
            return 0, h, 0, w
        size = prop.get_size_in_points() * self.target.dpi / 72
        return (
            max(int(y - 2 * size), 0),
            min(int(y + size) + 1, h),
            max(int(x - 2 * size), 0),
            min(int(x + size * (len(s) + 2)) + 1, w),
        )

    def draw_text(self, gc, x, y, s, prop, angle, ismath=False, mtext=None):
        import numpy as np

        args = (gc, x, y, s, prop, angle, ismath, mtext)
        key = self._key(*args)
        if key is None:
            return type(self.target).draw_text(self.target, *args)
        if key not in self.patches:
            if len(self.patches) >= self.MAX_PATCHES:
                self.patches.clear()
            self.patches[key] = self._render(*args)
        patch = self.patches[key]
        if patch is not None:
            rows, cols, colour, keep = patch
            canvas = np.asarray(self.target.buffer_rgba())[rows, cols, :3]
            canvas[...] = (canvas * keep + colour + 0.5).astype(np.uint8)


class Raster:
    """One view rasterised at one pixel density: the still background once, the moving artists per step.

    With ``cache_text`` (the live figure), :meth:`blit` reuses the pixels of
    texts drawn unchanged before (:class:`TextCache`); the static frames
    draw every text afresh.
    """

    def __init__(self, view: View, density: float, cache_text: bool = False):
        from matplotlib.backends.backend_agg import FigureCanvasAgg

        self.density = check("density", density, ">0")
        self.cache_text = bool(cache_text)
        self._texts: TextCache | None = None
        self.fig = view.fig
        self.moving = sorted(view.moving, key=lambda a: a.get_zorder())
        self.fig.set_dpi(DISPLAY_DPI * self.density)
        self.fig.patch.set_facecolor("white")
        canvas = self.fig.canvas
        self.canvas = canvas if isinstance(canvas, FigureCanvasAgg) else FigureCanvasAgg(self.fig)
        for a in self.moving:
            a.set_animated(True)
        _keep_font_metrics(self.canvas.get_renderer())
        self.canvas.draw()
        self.background = self._buffer()[..., :3].copy()
        self._region = self.canvas.copy_from_bbox(self.fig.bbox)

    def _buffer(self):
        import numpy as np

        return np.asarray(self.canvas.buffer_rgba())

    def _draw_moving(self):
        renderer = _keep_font_metrics(self.canvas.get_renderer())
        for a in self.moving:
            a.draw(renderer)

    def overlay(self):
        """The moving artists alone on a transparent canvas (RGBA): what a static frame stores."""
        self.canvas.get_renderer().clear()
        self._draw_moving()
        return self._buffer().copy()

    def blit(self):
        """The background with the moving artists drawn over it: the canvas's own RGBA buffer (not a copy)."""
        self.canvas.restore_region(self._region)
        if not self.cache_text:
            self._draw_moving()
            return self._buffer()
        renderer = self.canvas.get_renderer()
        if self._texts is None or self._texts.target is not renderer:
            self._texts = TextCache(renderer)
        renderer.draw_text = self._texts.draw_text
        try:
            self._draw_moving()
        finally:
            del renderer.draw_text
        return self._buffer()

    def composite(self):
        """The whole figure (RGB): the background with the moving artists drawn over it."""
        return self.blit()[..., :3].copy()


def _font_height_metrics(prop, dpi: float) -> tuple[float | None, float | None, float]:
    """A font's ascent, descent and line gap in pixels at ``dpi``, read from its tables as matplotlib reads them.

    The same lookup as :meth:`matplotlib.text.Text._get_layout` when the
    renderer offers no ``_get_font_height_metrics``: the OS/2 typographic
    metrics, else the hhea ones, scaled to the size in points; ``(None, None, 0)``
    when the font has neither (the caller then measures the text).
    """
    from matplotlib.font_manager import fontManager, get_font

    font = get_font(fontManager._find_fonts_by_props(prop))
    sfnt: Any = font.get_sfnt_table  # typed per table name by literal; the names below are matplotlib's own
    for table_name, gap_key, ascent_key, descent_key in (
        ("OS/2", "sTypoLineGap", "sTypoAscender", "sTypoDescender"),
        ("hhea", "lineGap", "ascent", "descent"),
    ):
        table = sfnt(table_name)
        if table is not None:
            # the same operations in the same order as matplotlib's, so the same floats
            scale = 1 / sfnt("head")["unitsPerEm"] * prop.get_size_in_points() * dpi / 72
            return table[ascent_key] * scale, -table[descent_key] * scale, table[gap_key] * scale
    return None, None, 0.0


def _keep_font_metrics(renderer):
    """Give an Agg renderer a kept ``_get_font_height_metrics``: matplotlib 3.11 otherwise finds the font and
    reads its tables again for every text it lays out (a tenth of a live step). Returns the renderer.

    Matplotlib calls this hook, where a backend has it, instead of reading the tables itself, so the text
    is laid out with the same numbers; older versions never call it.
    """
    if getattr(renderer, "_get_font_height_metrics", None) is None:
        kept: dict = {}

        def metrics(prop):
            key = (prop, renderer.dpi)
            if key not in kept:
                kept[(prop.copy(), renderer.dpi)] = _font_height_metrics(prop, renderer.dpi)
            return kept[key]

        renderer._get_font_height_metrics = metrics
    return renderer


def width_css(fig) -> int:
    """Width in CSS pixels at which a figure is displayed."""
    return round(fig.get_figwidth() * DISPLAY_DPI)
