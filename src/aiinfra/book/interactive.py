"""One helper for every interactive figure in the book: the sliders, the widget tree and its observer.

:func:`interactive_figure` takes a figure function (best made with
:func:`~aiinfra.book.views.redraws`, so the figure is built once and moved in
place; see :mod:`aiinfra.book.views`) and its :class:`Slider` grids, and
returns an :class:`InteractiveFigure` that displays as ipywidgets (7 in Colab,
8 in JupyterLab and Binder). The pixels come from :mod:`aiinfra.book.raster`
(the still background once, the moving artists per step), the PNG bytes from
:mod:`aiinfra.book.png`, the HTML and CSS from :mod:`aiinfra.book.frame_html`.
The same update and the same layers serve both modes:

**Live** (a Jupyter, Binder or Colab kernel; the default). A slider step
calls ``update``, restores the background and draws the moving artists on
top (blitting), and sets the new PNG and readouts on the widgets it built once.

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

Size and legibility: static frames are rendered at a pixel density of 2
(sharp on high-density screens) and step down through
:data:`STATIC_DENSITIES` only if the figure's page weight (400 KB by
default, the exact embedded widget state) would be exceeded; below density
1 the text would shrink, so the call fails and names the figure instead.
"""

from __future__ import annotations

import base64
import hashlib
import html
import io
import itertools
import math
import os
import time
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

from aiinfra.book import png as png_codec
from aiinfra.book.frame_html import (
    CSS_BACKGROUND,
    CSS_FIGURE,
    CSS_FRAME,
    CSS_LIVE_ONLY,
    CSS_SLIDER,
    background_style,
    frame_html,
    readouts_html,
)
from aiinfra.book.raster import DISPLAY_DPI, Raster, width_css
from aiinfra.book.views import FigureFn, Redrawer, View, redraws, same_value
from aiinfra.formula import check, choice

#: The public names; ``View`` and ``redraws`` (from :mod:`aiinfra.book.views`) are what figure modules import here.
__all__ = [
    "BUILD_ENV_VAR",
    "DEFAULT_MAX_BYTES",
    "DEFAULT_MAX_FRAMES",
    "STATIC_DENSITIES",
    "LIVE_DENSITY",
    "LIVE_FRAMES_KEPT",
    "PALETTE_COLORS",
    "Slider",
    "View",
    "redraws",
    "Frame",
    "InteractiveFigure",
    "interactive_figure",
    "embedded_state_bytes",
]

#: Environment variable that the book build sets to ``1`` (see the Makefile).
BUILD_ENV_VAR = "AIINFRA_BOOK_BUILD"
#: Page-weight budget of one static figure, in bytes (decimal: 400 KB).
DEFAULT_MAX_BYTES = 400_000
#: At most this many precomputed frames per figure (whole grid).
DEFAULT_MAX_FRAMES = 96
#: Device pixels per CSS pixel tried for static frames, highest first (1 keeps the text at its size).
STATIC_DENSITIES = (2.0, 1.5, 1.25, 1.0)
#: Device pixels per CSS pixel of the live (kernel) image.
LIVE_DENSITY = 1.5
#: Live images (and their readouts) kept per figure, by slider setting, for a return to a setting seen before.
LIVE_FRAMES_KEPT = 64
#: Colours kept in a quantised static layer.
PALETTE_COLORS = 96
#: Per-widget JSON overhead assumed by the payload estimate (bytes).
WIDGET_STATE_OVERHEAD_BYTES = 900
#: The output type of a displayed widget (the same in ipywidgets 7 and 8).
WIDGET_VIEW_MIME = "application/vnd.jupyter.widget-view+json"


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


def _build_mode(mode: str | None = None) -> str:
    """``"static"`` when the book build runs (``AIINFRA_BOOK_BUILD=1``), else ``"live"``."""
    if mode is not None:
        return choice("mode", mode, {"static", "live"})
    flag = os.environ.get(BUILD_ENV_VAR, "").strip().lower()
    return "static" if flag in {"1", "true", "yes", "on"} else "live"


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
        self._redrawer = Redrawer(fn)
        self._raster: Raster | None = None
        self._live_frames: dict[tuple[int, ...], tuple[bytes, str]] = {}
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
        raster = Raster(self._redrawer.view, self.live_density if density is None else density)
        return png_codec.encode(raster.composite()), readouts_html(readouts)

    # ----- live ----------------------------------------------------------
    def _live_step(self, point: tuple[int, ...]) -> tuple[bytes, str]:
        """PNG and readout HTML at the slider indices ``point``: kept from an earlier visit, else drawn.

        A figure is a pure function of its parameters, so a setting seen
        before (the default again, a slider dragged back) shows its kept image
        at once; the :data:`LIVE_FRAMES_KEPT` most recent are kept.
        """
        shown = self._live_frames.pop(point, None)
        if shown is None:
            chosen = {s.name: s._values[i] for s, i in zip(self.sliders, point)}
            readouts = self._redrawer.update(self.params(**chosen))
            if self._redrawer.rebuilt or self._raster is None:
                self._raster = Raster(self._redrawer.view, self.live_density, cache_text=True)
            shown = png_codec.encode_live(self._raster.blit()), readouts_html(readouts)
            if len(self._live_frames) >= LIVE_FRAMES_KEPT:
                del self._live_frames[next(iter(self._live_frames))]  # the least recently shown
        self._live_frames[point] = shown
        return shown

    def _build_live(self):
        import ipywidgets as w

        self._raster = None
        sliders = [self._slider_widget(s, s._values) for s in self.sliders]
        png, rh = self._live_step(tuple(sl.value for sl in sliders))
        self.width_px = width_css(self._redrawer.view.fig)
        img = w.Image(
            value=png,
            format="png",
            layout=w.Layout(width=f"{self.width_px}px", max_width="100%", height="auto"),
        )
        img.add_class(CSS_FRAME)
        readout = w.HTML(rh)

        def on_change(_change=None):
            t0 = time.perf_counter()
            img.value, readout.value = self._live_step(tuple(sl.value for sl in sliders))
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
                raster = Raster(self._redrawer.view, density)
                if layered and background is None:
                    background = png_codec.encode(raster.background, self.palette_colors)
            pixels = raster.overlay() if layered else raster.composite()
            frames.append(
                Frame(point, png_codec.encode(pixels, self.palette_colors), readouts_html(readouts))
            )
        self.width_px = width_css(self._redrawer.view.fig)
        return frames, background

    def _estimate(self, frames: list[Frame], background: bytes | None, n_frames: int | None = None) -> int:
        """Embedded bytes of the static state: base64 images plus per-widget JSON.

        With ``n_frames``, extrapolate from the mean of ``frames`` to that many.
        """
        per_frame = sum(
            png_codec.b64_len(len(f.png)) + len(f.readout_html) + 250 + WIDGET_STATE_OVERHEAD_BYTES
            for f in frames
        ) / len(frames)
        n = len(frames) if n_frames is None else n_frames
        n_stacks = 1 + n // 2  # nested stacks and their links
        fixed = (png_codec.b64_len(len(background)) if background else 0) + WIDGET_STATE_OVERHEAD_BYTES * (
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
            style = background_style(self.background, bg_class)

        width_px = width_css(self._redrawer.view.fig)

        def frame_box(f: Frame):
            alt = "; ".join(f"{caption[k].caption} = {caption[k].text(v)}" for k, v in f.params.items())
            return w.HTML(
                frame_html(f.png, f.readout_html, alt, width_px, bg_class),
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
        frame = next(f for f in self.frames if all(same_value(f.params[k], v) for k, v in point.items()))
        layer = PILImage.open(io.BytesIO(frame.png)).convert("RGBA")
        if self.background is not None:
            under = PILImage.open(io.BytesIO(self.background)).convert("RGBA")
            if under.size != layer.size:
                under = under.resize(layer.size, PILImage.Resampling.BILINEAR)
            layer = PILImage.alpha_composite(under, layer)
        import numpy as np

        return png_codec.encode(np.asarray(layer.convert("RGB")), palette_colors=256)

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
