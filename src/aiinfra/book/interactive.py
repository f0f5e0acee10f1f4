"""One helper for every interactive figure in the book: figures drawn once, redrawn in place.

A figure of the book is a *view*: a matplotlib figure built once, with the
artists that a slider moves (lines, markers, texts) listed as its *moving*
artists, and an ``update(**params) -> readouts`` that sets their data
(``set_data``, ``set_ydata``, ``set_text``, ...). :func:`redraws` turns the
builder into a plain function ``fn(**params) -> (Figure, readouts)`` (tests
and chapters call it directly) that also carries the builder, so that
:func:`interactive_figure` can build the figure once and update it. Readouts
are a mapping ``label -> text`` (text carries its unit, e.g. ``"23.9
tok/s"``) or a single string.

Drawing in layers makes a slider step cheap: the still parts (axes, ticks,
labels, curves that do not move) are rasterised once into a *background*;
a step draws only the moving artists, in z-order, over it. The same update
and the same layers serve both modes:

**Live** (a Jupyter, Binder or Colab kernel; the default). A slider step
calls ``update``, restores the background and draws the moving artists on
top (blitting), and sends the PNG to the image widget.

**Static** (the book build; ``AIINFRA_BOOK_BUILD=1`` in the environment).
Every point of the slider grid is computed at build time through the same
``update``. The background is stored once, as a CSS class in a ``<style>``
block, and each frame stores only its moving layer (a transparent PNG drawn
over that background) plus its readout HTML. The frames sit in ipywidgets
``Stack`` widgets, nested one level per slider, whose ``selected_index``
follows each slider's ``index`` through a ``jsdlink``: a link that runs in
the browser, so the saved page still responds to dragging and arrow keys
with no kernel behind it. Should the grid exceed ``max_frames``, the last
sliders stay at their defaults and are labelled live-only (no figure of the
book does this).

Size and legibility: a figure is displayed at :data:`DISPLAY_DPI` CSS
pixels per inch of its matplotlib size (96, the CSS inch, which is also the
scale at which an inline SVG figure is shown), so a font of ``p`` points is
``p * 96 / 72`` pixels on screen. Static frames are rendered at a pixel
density of 2 (sharp on high-density screens) and step down through
:data:`STATIC_DENSITIES` only if the figure's page weight (400 KB by
default, the exact embedded widget state) would be exceeded; below density
1 the text would shrink, so the call fails and names the figure instead.

A plain function that builds a new figure on each call (no :func:`redraws`)
is accepted too: each step then redraws the whole figure, and each static
frame is a full image.

The browser tests find every figure by the CSS class ``aiinfra-figure``; its
slider carries ``aiinfra-slider``, the frame image ``aiinfra-frame`` and the
readout box ``aiinfra-readout``.
"""

from __future__ import annotations

import base64
import functools
import hashlib
import html
import inspect
import io
import itertools
import math
import os
import time
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

from aiinfra.formula import check, choice

#: Environment variable that the book build sets to ``1`` (see the Makefile).
BUILD_ENV_VAR = "AIINFRA_BOOK_BUILD"
#: Page-weight budget of one static figure, in bytes (decimal: 400 KB).
DEFAULT_MAX_BYTES = 400_000
#: At most this many precomputed frames per figure (whole grid).
DEFAULT_MAX_FRAMES = 96
#: CSS pixels per inch of figure size: the scale at which every figure is displayed.
DISPLAY_DPI = 96
#: Device pixels per CSS pixel tried for static frames, highest first (1 keeps the text at its size).
STATIC_DENSITIES = (2.0, 1.5, 1.25, 1.0)
#: Device pixels per CSS pixel of the live (kernel) image.
LIVE_DENSITY = 1.5
#: Colours kept in a quantised static layer.
PALETTE_COLORS = 96
#: Per-widget JSON overhead assumed by the payload estimate (bytes).
WIDGET_STATE_OVERHEAD_BYTES = 900

CSS_FIGURE = "aiinfra-figure"
CSS_SLIDER = "aiinfra-slider"
CSS_FRAME = "aiinfra-frame"
CSS_READOUT = "aiinfra-readout"
CSS_LIVE_ONLY = "aiinfra-live-only"
CSS_BACKGROUND = "aiinfra-bg"
#: The output type of a displayed widget (the same in ipywidgets 7 and 8).
WIDGET_VIEW_MIME = "application/vnd.jupyter.widget-view+json"

Readouts = Mapping[str, Any] | str
FigureFn = Callable[..., tuple[Any, Readouts]]


@dataclass(frozen=True)
class Slider:
    """One control of a figure: a parameter of ``fn`` and the grid it moves on.

    ``values`` is the full grid used in a live kernel. The static page
    precomputes ``static`` (an explicit subset of ``values``) when given, else
    at most ``max_static`` of them (evenly spaced indices, always keeping both
    ends and the default), else all. ``fmt`` turns a value into the label
    shown next to the slider (a format string such as ``"{:,} GPUs"`` or a
    callable).
    """

    name: str
    values: Sequence[Any]
    label: str | None = None
    default: Any = None
    fmt: str | Callable[[Any], str] = "{}"
    max_static: int | None = None
    static: Sequence[Any] | None = None
    _values: tuple = field(init=False, repr=False, compare=False)

    def __post_init__(self):
        if not isinstance(self.name, str) or not self.name.isidentifier():
            raise ValueError(f"name must be a Python identifier (a parameter of fn), got {self.name!r}")
        values = tuple(self.values)
        if len(values) < 2:
            raise ValueError(
                f"values of slider {self.name!r} must hold at least 2 entries, got {len(values)}"
            )
        if len(set(map(repr, values))) != len(values):
            raise ValueError(f"values of slider {self.name!r} must be distinct")
        if self.default is not None and self.default not in values:
            raise ValueError(
                f"default of slider {self.name!r} must be one of its values, got {self.default!r}"
            )
        if self.max_static is not None:
            check("max_static", self.max_static, "int>=2", scalar=True)
        if self.static is not None:
            chosen = tuple(self.static)
            if (
                len(chosen) < 2
                or any(v not in values for v in chosen)
                or len(set(map(repr, chosen))) != len(chosen)
            ):
                raise ValueError(
                    f"static of slider {self.name!r} must be at least 2 distinct entries of values"
                )
            if self.default is not None and self.default not in chosen:
                raise ValueError(f"static of slider {self.name!r} must contain the default {self.default!r}")
        if not (isinstance(self.fmt, str) or callable(self.fmt)):
            raise ValueError(f"fmt of slider {self.name!r} must be a format string or a callable")
        object.__setattr__(self, "_values", values)

    @property
    def default_value(self):
        return self._values[0] if self.default is None else self.default

    @property
    def default_index(self) -> int:
        return self._values.index(self.default_value)

    def text(self, value) -> str:
        return self.fmt(value) if callable(self.fmt) else self.fmt.format(value)

    @property
    def caption(self) -> str:
        return self.label if self.label is not None else self.name.replace("_", " ")

    def static_values(self, limit: int | None = None) -> tuple:
        """The values precomputed for the static page (ends and default kept)."""
        if self.static is not None:
            ordered = tuple(v for v in self._values if v in tuple(self.static))
            if limit is not None and len(ordered) > check("limit", limit, "int>=2", scalar=True):
                raise ValueError(
                    f"limit: slider {self.name!r} lists {len(ordered)} static values, over the {limit} allowed"
                )
            return ordered
        cap = self.max_static if self.max_static is not None else len(self._values)
        if limit is not None:
            cap = min(cap, check("limit", limit, "int>=2", scalar=True))
        n = len(self._values)
        if n <= cap:
            return self._values
        idx = {0, n - 1, self.default_index}
        slots = max(cap - len(idx), 0)
        for k in range(1, slots + 1):
            idx.add(round(k * (n - 1) / (slots + 1)))
        # rounding may collide; fill the largest gaps until the count is met
        while len(idx) < cap:
            s = sorted(idx)
            gaps = [(s[i + 1] - s[i], s[i]) for i in range(len(s) - 1)]
            width, start = max(gaps)
            if width < 2:
                break
            idx.add(start + width // 2)
        return tuple(self._values[i] for i in sorted(idx))


# ----- views: a figure built once, updated in place ------------------------------------


class View:
    """A figure built once: ``update(**params)`` moves its ``moving`` artists and returns the readouts.

    ``moving`` lists every artist that ``update`` may change; everything else
    in ``fig`` must stay as built (it is rasterised once, as the background).
    """

    def __init__(self, fig, update: Callable[..., Readouts], moving: Sequence[Any] = ()):
        if not hasattr(fig, "savefig"):
            raise ValueError(f"fig must be a matplotlib Figure, got {type(fig).__name__}")
        if not callable(update):
            raise ValueError(f"update must be callable, got {type(update).__name__}")
        moving = list(moving)
        if not all(hasattr(a, "set_animated") and hasattr(a, "draw") for a in moving):
            raise ValueError("moving must hold matplotlib artists")
        self.fig, self._update, self.moving = fig, update, moving

    def update(self, **params) -> Readouts:
        return self._update(**params)


def redraws(*moves: str):
    """Decorator: ``build(**params) -> View`` becomes ``fn(**params) -> (Figure, readouts)``.

    ``moves`` names the parameters that the view's ``update`` takes; a change
    of any other parameter builds the figure anew. The returned function has
    ``build``'s signature and defaults, calls ``build`` then ``update``, and
    returns an ordinary figure (nothing marked animated). ``fn.build`` and
    ``fn.moves`` let :func:`interactive_figure` keep one view and update it.
    """
    for m in moves:
        if not (isinstance(m, str) and m.isidentifier()):
            raise ValueError(f"moves must be parameter names, got {m!r}")

    def decorate(build):
        sig = inspect.signature(build)
        missing = [m for m in moves if m not in sig.parameters]
        if missing:
            raise ValueError(f"moves {missing} are not parameters of {build.__name__}")

        @functools.wraps(build)
        def fn(*args, **kwargs):
            bound = sig.bind(*args, **kwargs)
            bound.apply_defaults()
            params = dict(bound.arguments)
            view = _build_view(build, params)
            readouts = view.update(**{m: params[m] for m in moves})
            return view.fig, readouts

        fn.build = build
        fn.moves = tuple(moves)
        return fn

    return decorate


def _build_view(build, params: dict) -> View:
    view = build(**params)
    if not isinstance(view, View):
        raise ValueError(
            f"{getattr(build, '__name__', 'build')} must return a View, got {type(view).__name__}"
        )
    return view


def _same(a, b) -> bool:
    try:
        return bool(a == b)
    except (TypeError, ValueError):  # arrays compare element-wise
        return repr(a) == repr(b)


class _Redrawer:
    """Keeps one view of ``fn`` and brings it to new parameters: update in place, or rebuild."""

    def __init__(self, fn: FigureFn):
        self.fn = fn
        # a @redraws function carries its view builder and the parameters its view moves
        self.build: Callable[..., View] | None = getattr(fn, "build", None)
        self.moves: tuple[str, ...] | None = getattr(fn, "moves", None) if self.build is not None else None
        self._view: View | None = None
        self._key: dict = {}
        self.rebuilt = False

    @property
    def view(self) -> View:
        """The current view (after the first :meth:`update`)."""
        if self._view is None:
            raise RuntimeError("no view yet: call update() first")
        return self._view

    def can_move(self, names) -> bool:
        """Whether a change of these parameters only updates the view (no rebuild)."""
        return self.moves is not None and set(names) <= set(self.moves)

    def update(self, params: dict) -> Readouts:
        if self.build is None or self.moves is None:  # a plain function: a new figure on every call
            fig, readouts = _call(self.fn, params)
            if self._view is not None and self._view.fig is not fig:
                _close(self._view.fig)
            self._view, self.rebuilt = View(fig, lambda: readouts), True
            return readouts
        key = {k: v for k, v in params.items() if k not in self.moves}
        self.rebuilt = (
            self._view is None
            or key.keys() != self._key.keys()
            or not all(_same(v, self._key[k]) for k, v in key.items())
        )
        if self.rebuilt:
            self._view, self._key = _build_view(self.build, params), key
        return self.view.update(**{m: params[m] for m in self.moves if m in params})


class _TextCache:
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


class _Raster:
    """One view rasterised at one pixel density: the still background once, the moving artists per step.

    With ``cache_text`` (the live figure), :meth:`blit` reuses the pixels of
    texts drawn unchanged before (:class:`_TextCache`); the static frames
    draw every text afresh.
    """

    def __init__(self, view: View, density: float, cache_text: bool = False):
        from matplotlib.backends.backend_agg import FigureCanvasAgg

        self.density = check("density", density, ">0")
        self.cache_text = bool(cache_text)
        self._texts: _TextCache | None = None
        self.fig = view.fig
        self.moving = sorted(view.moving, key=lambda a: a.get_zorder())
        self.fig.set_dpi(DISPLAY_DPI * self.density)
        self.fig.patch.set_facecolor("white")
        canvas = self.fig.canvas
        self.canvas = canvas if isinstance(canvas, FigureCanvasAgg) else FigureCanvasAgg(self.fig)
        for a in self.moving:
            a.set_animated(True)
        self.canvas.draw()
        self.background = self._buffer()[..., :3].copy()
        self._region = self.canvas.copy_from_bbox(self.fig.bbox)

    def _buffer(self):
        import numpy as np

        return np.asarray(self.canvas.buffer_rgba())

    def _draw_moving(self):
        renderer = self.canvas.get_renderer()
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
            self._texts = _TextCache(renderer)
        renderer.draw_text = self._texts.draw_text
        try:
            self._draw_moving()
        finally:
            del renderer.draw_text
        return self._buffer()

    def composite(self):
        """The whole figure (RGB): the background with the moving artists drawn over it."""
        return self.blit()[..., :3].copy()


def _png(pixels, palette_colors: int | None = None, compress_level: int = 6) -> bytes:
    """Encode an RGB or RGBA array as PNG; ``palette_colors`` quantises it first (fast octree, no dither)."""
    import numpy as np
    from PIL import Image as PILImage

    pixels = np.ascontiguousarray(pixels)
    img = PILImage.fromarray(pixels)
    if palette_colors is not None:
        check("palette_colors", palette_colors, "int>=2", scalar=True)
        img = img.quantize(
            colors=palette_colors, method=PILImage.Quantize.FASTOCTREE, dither=PILImage.Dither.NONE
        )
        if pixels.shape[-1] == 3:  # the octree may shade the white page by a level or two: keep it white
            pal = img.getpalette() or []  # a quantized image always has a palette
            for i in range(0, len(pal), 3):
                if min(pal[i : i + 3]) >= 248:
                    pal[i : i + 3] = [255, 255, 255]
            img.putpalette(pal)
    out = io.BytesIO()
    img.save(out, format="PNG", compress_level=compress_level)
    return out.getvalue()


def _png_live(rgba) -> bytes:
    """Encode an opaque RGBA buffer as an RGB PNG for a live step: lossless, fast, no row filter.

    Pillow tries every PNG row filter on every row; for line art on white an
    unfiltered row compresses about as well, and zlib at level 1 then takes a
    third of Pillow's time (about 7 ms for a 1,180 x 504 figure at the live
    density) for the same bytes within a few percent.
    """
    import struct
    import zlib

    import numpy as np
    from PIL import Image as PILImage

    h, w = rgba.shape[:2]
    rgb = PILImage.frombuffer("RGBA", (w, h), rgba, "raw", "RGBA", 0, 1).convert("RGB")
    rows = np.empty((h, 1 + 3 * w), dtype=np.uint8)
    rows[:, 0] = 0  # filter type 0 (none) before every row
    rows[:, 1:] = np.frombuffer(rgb.tobytes(), dtype=np.uint8).reshape(h, 3 * w)

    def chunk(kind: bytes, data: bytes) -> bytes:
        return (
            struct.pack(">I", len(data)) + kind + data + struct.pack(">I", zlib.crc32(data, zlib.crc32(kind)))
        )

    header = struct.pack(">IIBBBBB", w, h, 8, 2, 0, 0, 0)  # 8-bit RGB, deflate, no interlace
    return (
        b"\x89PNG\r\n\x1a\n"
        + chunk(b"IHDR", header)
        # ndarray exports the buffer protocol; numpy's stubs declare __buffer__ for Python >= 3.12 only
        + chunk(b"IDAT", zlib.compress(rows, 1))  # type: ignore[arg-type]
        + chunk(b"IEND", b"")
    )


def _render_png(fig, density: float = 1.0, palette_colors: int | None = None) -> bytes:
    """Rasterise a whole figure to PNG bytes at ``density`` device pixels per CSS pixel."""
    check("density", density, ">0")
    png = _png(_Raster(View(fig, lambda: {}), density).composite(), palette_colors)
    _close(fig)
    return png


def _build_mode(mode: str | None = None) -> str:
    """``"static"`` when the book build runs (``AIINFRA_BOOK_BUILD=1``), else ``"live"``."""
    if mode is not None:
        return choice("mode", mode, {"static", "live"})
    flag = os.environ.get(BUILD_ENV_VAR, "").strip().lower()
    return "static" if flag in {"1", "true", "yes", "on"} else "live"


def _readouts_html(readouts: Readouts) -> str:
    """Render readouts (a mapping label -> text, or a string) as a small HTML block."""
    if isinstance(readouts, str):
        body = f'<div style="font-size:0.95em">{html.escape(readouts)}</div>'
    elif isinstance(readouts, Mapping):
        if not readouts:
            raise ValueError("readouts must not be empty")
        cards = []
        for label, value in readouts.items():
            text = value if isinstance(value, str) else f"{value:.3g}"
            cards.append(
                '<div style="display:inline-block;min-width:8.5em;margin:0 0.6em 0.3em 0;'
                'padding:0.2em 0.5em;border-left:3px solid #4c72b0;vertical-align:top">'
                f'<div style="font-size:1.15em;font-weight:600;font-variant-numeric:tabular-nums">{html.escape(text)}</div>'
                f'<div style="font-size:0.8em;color:#555">{html.escape(str(label))}</div></div>'
            )
        body = "".join(cards)
    else:
        raise ValueError(
            f"readouts must be a mapping label -> text or a string, got {type(readouts).__name__}"
        )
    return f'<div class="{CSS_READOUT}" style="line-height:1.25">{body}</div>'


def _data_url(png: bytes) -> str:
    import base64

    return "data:image/png;base64," + base64.b64encode(png).decode("ascii")


def _width_css(fig) -> int:
    """Width in CSS pixels at which a figure is displayed."""
    return round(fig.get_figwidth() * DISPLAY_DPI)


def _frame_html(
    png: bytes, readout_html: str, alt: str, width_px: int, background_class: str | None = None
) -> str:
    """One static frame: the readouts above the image (a moving layer over ``background_class``, or a whole image)."""
    cls = CSS_FRAME if background_class is None else f"{CSS_FRAME} {background_class}"
    return (
        f'{readout_html}<img class="{cls}" alt="{html.escape(alt)}" src="{_data_url(png)}" '
        f'style="width:{width_px}px;max-width:100%;height:auto;display:block">'
    )


def _background_style(png: bytes, css_class: str) -> str:
    return (
        f"<style>.{css_class}{{background-image:url({_data_url(png)});background-size:100% 100%;"
        "background-repeat:no-repeat;background-color:white}</style>"
    )


def _close(fig) -> None:
    manager = getattr(getattr(fig, "canvas", None), "manager", None)
    if manager is not None:  # created through pyplot: release it
        import matplotlib.pyplot as plt

        plt.close(fig)


def _call(fn: FigureFn, params: dict):
    result = fn(**params)
    if not (isinstance(result, tuple) and len(result) == 2):
        raise ValueError("fn must return a pair (matplotlib Figure, readouts)")
    fig, readouts = result
    if not hasattr(fig, "savefig"):
        raise ValueError(f"fn must return a matplotlib Figure first, got {type(fig).__name__}")
    return fig, readouts


def _b64_len(n_bytes: int) -> int:
    """Length of the base64 text of ``n_bytes`` bytes (how widget state stores images)."""
    return 4 * math.ceil(n_bytes / 3)


@dataclass
class Frame:
    """One precomputed grid point: its parameters, its image (moving layer or whole figure) and readouts."""

    params: dict
    png: bytes
    readout_html: str


class InteractiveFigure:
    """What :func:`interactive_figure` returns; displays as its widget.

    Attributes: ``widget`` (the ipywidgets root), ``mode``, ``sliders``,
    ``frames`` (static mode), ``background`` (the static background PNG, or
    ``None`` when frames are whole images), ``density`` and ``dpi`` of the
    static frames, ``width_px`` (display width in CSS pixels),
    ``payload_bytes`` (estimated embedded weight of the static figure),
    ``links`` (the client-side ``jsdlink`` widgets), ``live_only`` (names of
    the sliders that only a kernel can move) and ``last_update_s`` (wall
    time of the last live slider step: compute, redraw and encode).
    """

    def __init__(
        self,
        fn: FigureFn,
        sliders: Sequence[Slider],
        *,
        title: str | None,
        fixed: dict,
        mode: str,
        max_bytes: int,
        max_frames: int,
        live_density: float,
        palette_colors: int,
    ):
        self.fn = fn
        self.sliders = list(sliders)
        self.title = title
        self.fixed = dict(fixed)
        self.mode = mode
        self.max_bytes = max_bytes
        self.max_frames = max_frames
        self.live_density = live_density
        self.palette_colors = palette_colors
        self.frames: list[Frame] = []
        self.background: bytes | None = None
        self.density: float | None = None
        self.dpi: float | None = None
        self.width_px: int | None = None
        self.payload_bytes = 0
        self.live_only: list[str] = []
        self.links: list = []
        self.last_update_s: float | None = None
        self._redrawer = _Redrawer(fn)
        self._raster: _Raster | None = None
        self.widget = self._build_static() if mode == "static" else self._build_live()

    # ----- shared pieces -------------------------------------------------
    def params(self, **overrides) -> dict:
        p = {s.name: s.default_value for s in self.sliders}
        p.update(self.fixed)
        p.update(overrides)
        return p

    def _slider_widget(self, s: Slider, values: Sequence, disabled: bool = False):
        import ipywidgets as w

        options = [(s.text(v), i) for i, v in enumerate(values)]
        default = values.index(s.default_value) if s.default_value in values else 0
        sl = w.SelectionSlider(
            options=options,
            value=default,
            description=s.caption,
            continuous_update=True,
            disabled=disabled,
            style={"description_width": "initial"},
            layout=w.Layout(width="min(100%, 34em)"),
        )
        sl.add_class(CSS_SLIDER)
        if disabled:
            sl.add_class(CSS_LIVE_ONLY)
        return sl

    def _header(self, style: str = ""):
        import ipywidgets as w

        text = f"<b>{html.escape(self.title)}</b>" if self.title else ""
        return [w.HTML(style + text)] if (text or style) else []

    def _root(self, children):
        import ipywidgets as w

        root = w.VBox(children, layout=w.Layout(width="100%", max_width="52em"))
        root.add_class(CSS_FIGURE)
        root.add_class(f"{CSS_FIGURE}-{self.mode}")
        return root

    def render(self, density: float | None = None, **params) -> tuple[bytes, str]:
        """The whole figure at ``params`` (defaults filled in) as (PNG, readout HTML), through the same update."""
        readouts = self._redrawer.update(self.params(**params))
        raster = _Raster(self._redrawer.view, self.live_density if density is None else density)
        return _png(raster.composite()), _readouts_html(readouts)

    # ----- live ----------------------------------------------------------
    def _live_step(self, params: dict) -> tuple[bytes, str]:
        readouts = self._redrawer.update(params)
        if self._redrawer.rebuilt or self._raster is None:
            self._raster = _Raster(self._redrawer.view, self.live_density, cache_text=True)
        return _png_live(self._raster.blit()), _readouts_html(readouts)

    def _build_live(self):
        import ipywidgets as w

        self._raster = None
        sliders = [self._slider_widget(s, s._values) for s in self.sliders]
        png, rh = self._live_step(self.params())
        self.width_px = _width_css(self._redrawer.view.fig)
        img = w.Image(
            value=png,
            format="png",
            layout=w.Layout(width=f"{self.width_px}px", max_width="100%", height="auto"),
        )
        img.add_class(CSS_FRAME)
        readout = w.HTML(rh)

        def on_change(_change=None):
            t0 = time.perf_counter()
            chosen = {s.name: s._values[sl.value] for s, sl in zip(self.sliders, sliders)}
            img.value, readout.value = self._live_step(self.params(**chosen))
            self.last_update_s = time.perf_counter() - t0

        for sl in sliders:
            sl.observe(on_change, names="value")
        self._live_controls = sliders
        self._live_image = img
        self._live_readout = readout
        return self._root(self._header() + sliders + [readout, img])

    def set(self, **values) -> None:
        """Move live sliders to the given parameter values (tests and notebooks)."""
        if self.mode != "live":
            raise ValueError("set() moves the live controls; this figure is static (mode='static')")
        for s, sl in zip(self.sliders, self._live_controls):
            if s.name in values:
                if values[s.name] not in s._values:
                    raise ValueError(f"{s.name} must be one of the slider values, got {values[s.name]!r}")
                sl.value = s._values.index(values[s.name])

    # ----- static --------------------------------------------------------
    def _static_axes(self) -> list[tuple]:
        """Grid of the static page: each slider's static values, in order, while the grid
        fits ``max_frames``; the sliders after the first that does not fit are live-only."""
        axes, n = [], 1
        for k, s in enumerate(self.sliders):
            vals = s.static_values(self.max_frames if k == 0 else None)
            if self.live_only or (k > 0 and n * len(vals) > self.max_frames):
                self.live_only.append(s.name)
                continue
            axes.append(vals)
            n *= len(vals)
        return axes

    def _grid(self, axes) -> list[dict]:
        names = [s.name for s in self.sliders[: len(axes)]]
        return [dict(zip(names, point)) for point in itertools.product(*axes)]

    def _render_frames(self, grid, density) -> tuple[list[Frame], bytes | None]:
        """Every grid point at ``density``: moving layers over one background, or whole images."""
        layered = self._redrawer.can_move(grid[0])
        frames, raster, background = [], None, None
        for point in grid:
            readouts = self._redrawer.update(self.params(**point))
            if raster is None or self._redrawer.rebuilt:
                raster = _Raster(self._redrawer.view, density)
                if layered and background is None:
                    background = _png(raster.background, self.palette_colors)
            pixels = raster.overlay() if layered else raster.composite()
            frames.append(Frame(point, _png(pixels, self.palette_colors), _readouts_html(readouts)))
        self.width_px = _width_css(self._redrawer.view.fig)
        return frames, background

    def _estimate(self, frames: list[Frame], background: bytes | None, n_frames: int | None = None) -> int:
        """Embedded bytes of the static state: base64 images plus per-widget JSON.

        With ``n_frames``, extrapolate from the mean of ``frames`` to that many.
        """
        per_frame = sum(
            _b64_len(len(f.png)) + len(f.readout_html) + 250 + WIDGET_STATE_OVERHEAD_BYTES for f in frames
        ) / len(frames)
        n = len(frames) if n_frames is None else n_frames
        n_stacks = 1 + n // 2  # nested stacks and their links
        fixed = (_b64_len(len(background)) if background else 0) + WIDGET_STATE_OVERHEAD_BYTES * (
            12 + len(self.sliders)
        )
        return int(per_frame * n + fixed + n_stacks * 700)

    def _first_density(self, grid) -> int:
        """Index into :data:`STATIC_DENSITIES` to start from, sized from the default frame at the top density."""
        probe, background = self._render_frames([grid[0]], STATIC_DENSITIES[0])
        guess = self._estimate(probe, background, len(grid))
        for i, d in enumerate(STATIC_DENSITIES):  # PNG bytes of line art grow about linearly with density
            if guess * d / STATIC_DENSITIES[0] <= 0.9 * self.max_bytes:
                return i
        return len(STATIC_DENSITIES) - 1

    def _build_static(self):
        axes = self._static_axes()
        grid = self._grid(axes)
        # a probe frame sizes a large grid; a few frames are rendered at the top density straight away
        start = self._first_density(grid) if len(grid) > 4 else 0
        for density in STATIC_DENSITIES[start:]:
            frames, background = self._render_frames(grid, density)
            if self._estimate(frames, background) > self.max_bytes:
                continue
            self.frames, self.background, self.density = frames, background, density
            self.dpi = DISPLAY_DPI * density
            root = self._assemble(axes)
            self.widget = root
            self.payload_bytes = embedded_state_bytes(self)
            if self.payload_bytes <= self.max_bytes:
                return root
            _close_widgets(root, self.links)
            self.links = []
        name = self.title or getattr(self.fn, "__name__", "figure")
        raise ValueError(
            f"max_bytes: figure {name!r} does not fit {len(grid)} frames in the {self.max_bytes:,} B budget even at "
            f"density {STATIC_DENSITIES[-1]:g} ({DISPLAY_DPI * STATIC_DENSITIES[-1]:g} dpi); pass fewer values "
            "(Slider.static or Slider.max_static) or raise max_bytes"
        )

    def _assemble(self, axes):
        """Widgets of the static page: sliders, one Stack level per slider, jsdlinks, frames."""
        import ipywidgets as w
        from ipywidgets.widgets.widget_string import HTMLStyle

        # all frames share one Layout and one style model, which keeps the embedded state small
        shared_layout = w.Layout(width="100%")
        shared_style = HTMLStyle()
        caption = {s.name: s for s in self.sliders}
        bg_class = style = None
        if self.background is not None:
            bg_class = f"{CSS_BACKGROUND}-{hashlib.sha1(self.background).hexdigest()[:12]}"
            style = _background_style(self.background, bg_class)

        width_px = _width_css(self._redrawer.view.fig)

        def frame_box(f: Frame):
            alt = "; ".join(f"{caption[k].caption} = {caption[k].text(v)}" for k, v in f.params.items())
            return w.HTML(
                _frame_html(f.png, f.readout_html, alt, width_px, bg_class),
                layout=shared_layout,
                style=shared_style,
            )

        sliders = [self._slider_widget(s, list(a)) for s, a in zip(self.sliders, axes)]
        sizes = [len(a) for a in axes]

        def nest(level: int, offset: int):
            if level == len(axes):
                return frame_box(self.frames[offset])
            stride = math.prod(sizes[level + 1 :])
            children = [nest(level + 1, offset + i * stride) for i in range(sizes[level])]
            stack = w.Stack(children, selected_index=sliders[level].value, layout=shared_layout)
            self.links.append(w.jsdlink((sliders[level], "index"), (stack, "selected_index")))
            return stack

        stack = nest(0, 0)
        extra = [
            self._slider_widget(s, list(s._values), disabled=True)
            for s in self.sliders
            if s.name in self.live_only
        ]
        notes = []
        if self.live_only:
            names = ", ".join(caption[n].caption for n in self.live_only)
            notes.append(
                w.HTML(
                    f'<div class="{CSS_LIVE_ONLY}" style="font-size:0.85em;color:#7a4b00">'
                    f"Live only: {html.escape(names)} moves only when this page runs in a kernel "
                    "(Binder, Colab or Jupyter); this static page shows its default value.</div>"
                )
            )
        return self._root(self._header(style or "") + sliders + extra + notes + [stack])

    # ----- display -------------------------------------------------------
    def _repr_mimebundle_(self, **kwargs):
        """The widget-view output that ipywidgets 7 (Colab) and 8 (JupyterLab, Binder) both render.

        ipywidgets 8 widgets have a ``_repr_mimebundle_``; ipywidgets 7 widgets only an
        ``_ipython_display_`` that publishes this same bundle. Building it here, from the
        root widget's ``model_id``, is the path both versions and nbclient support.
        """
        bundle = {
            WIDGET_VIEW_MIME: {"version_major": 2, "version_minor": 0, "model_id": self.widget.model_id},
            "text/plain": self.__repr__(),
        }
        if self.mode == "static":  # what a client without widgets (the PDF, a notebook preview) shows
            bundle["image/png"] = base64.b64encode(self.default_frame_png()).decode("ascii")
            bundle["text/plain"] = self.caption()
        return bundle

    def default_point(self) -> dict:
        """The slider settings of the frame a static page shows on load (every slider at its default)."""
        return {s.name: s.default_value for s in self.sliders if s.name not in self.live_only}

    def caption(self) -> str:
        """One line naming the figure and the slider settings its default frame shows."""
        shown = "; ".join(f"{s.caption} = {s.text(s.default_value)}" for s in self.sliders)
        name = f"{self.title}. " if self.title else ""
        return f"{name}Interactive figure shown at {shown} (the sliders move in the HTML book and the notebooks)."

    def default_frame_png(self) -> bytes:
        """The static page's default frame as one opaque PNG: its moving layer drawn over the background."""
        from PIL import Image as PILImage

        if self.mode != "static":
            raise ValueError("default_frame_png() needs a static figure (mode='static')")
        point = self.default_point()
        frame = next(f for f in self.frames if all(_same(f.params[k], v) for k, v in point.items()))
        layer = PILImage.open(io.BytesIO(frame.png)).convert("RGBA")
        if self.background is not None:
            under = PILImage.open(io.BytesIO(self.background)).convert("RGBA")
            if under.size != layer.size:
                under = under.resize(layer.size, PILImage.Resampling.BILINEAR)
            layer = PILImage.alpha_composite(under, layer)
        import numpy as np

        return _png(np.asarray(layer.convert("RGB")), palette_colors=256)

    def __repr__(self) -> str:
        names = ", ".join(s.name for s in self.sliders)
        extra = f", {len(self.frames)} frames, {self.payload_bytes:,} B" if self.mode == "static" else ""
        return f"<InteractiveFigure {self.title or getattr(self.fn, '__name__', 'figure')!r} ({names}); {self.mode}{extra}>"


def _close_widgets(root, links) -> None:
    """Close a widget tree (and its links) so that a discarded attempt leaves nothing in the kernel's state."""
    seen = set()

    def walk(wd):
        if id(wd) in seen:
            return
        seen.add(id(wd))
        for name in ("children", "layout", "style"):
            sub = getattr(wd, name, None)
            for s in sub if isinstance(sub, (list, tuple)) else [sub]:
                if hasattr(s, "close") and hasattr(s, "model_id"):
                    walk(s)
        wd.close()

    walk(root)
    for link in links:
        link.close()


def interactive_figure(
    fn: FigureFn,
    sliders: Sequence[Slider],
    *,
    title: str | None = None,
    fixed: Mapping[str, Any] | None = None,
    mode: str | None = None,
    max_bytes: int = DEFAULT_MAX_BYTES,
    max_frames: int = DEFAULT_MAX_FRAMES,
    live_density: float = LIVE_DENSITY,
    palette_colors: int = PALETTE_COLORS,
) -> InteractiveFigure:
    """Make an interactive figure from ``fn(**params) -> (Figure, readouts)``.

    ``fn`` is best made with :func:`redraws` (the figure is built once and
    updated in place); a plain function works too, redrawn whole at every
    step. ``sliders`` name the parameters that move; all of them are
    precomputed in the static book while the grid fits ``max_frames``
    (default 96); ``fixed`` passes constant keyword arguments. ``mode``
    forces ``"live"`` or ``"static"``; by default it follows
    ``AIINFRA_BOOK_BUILD``. ``max_bytes`` (default 400,000 B) caps a static
    figure's embedded weight. Display the result (last expression of a
    cell) to show it.
    """
    if not callable(fn):
        raise ValueError(f"fn must be callable, got {type(fn).__name__}")
    sliders = list(sliders)
    if not sliders or not all(isinstance(s, Slider) for s in sliders):
        raise ValueError("sliders must be a non-empty sequence of Slider")
    names = [s.name for s in sliders]
    if len(set(names)) != len(names):
        raise ValueError(f"sliders must have distinct names, got {names}")
    fixed = dict(fixed or {})
    clash = set(fixed) & set(names)
    if clash:
        raise ValueError(f"fixed must not repeat a slider parameter, got {sorted(clash)}")
    check("max_bytes", max_bytes, "int>=10000", scalar=True)
    check("max_frames", max_frames, "int>=2", scalar=True)
    check("live_density", live_density, ">0")
    check("palette_colors", palette_colors, "int>=2", scalar=True)
    return InteractiveFigure(
        fn,
        sliders,
        title=title,
        fixed=fixed,
        mode=_build_mode(mode),
        max_bytes=int(max_bytes),
        max_frames=int(max_frames),
        live_density=float(live_density),
        palette_colors=int(palette_colors),
    )


def embedded_state_bytes(figure: InteractiveFigure) -> int:
    """Exact size in bytes of the widget state that the page embeds for ``figure``.

    Uses ipywidgets' own embedding serializer (buffers as base64), which is
    what nbclient stores in the notebook metadata and myst-nb copies into
    the HTML page.
    """
    import json

    from ipywidgets.embed import dependency_state

    # the client-side links point at the widgets but are not their children
    state = dependency_state([figure.widget, *figure.links])
    return len(json.dumps({"version_major": 2, "version_minor": 0, "state": state}))
