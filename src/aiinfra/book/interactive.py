"""One helper for every interactive figure in the book.

A figure is a *pure function* ``fn(**params) -> (matplotlib Figure, readouts)``
plus a list of :class:`Slider` definitions. :func:`interactive_figure` turns
the pair into an ipywidgets control panel that behaves in two ways:

**Live** (a Jupyter, Binder or Colab kernel; the default). Moving a slider
calls ``fn`` again and redraws the image and the readouts.

**Static** (the book build; ``AIINFRA_BOOK_BUILD=1`` in the environment).
Every point of the slider grid is rendered once, at build time, into a small
PNG plus its readout HTML. The frames sit in an ipywidgets ``Stack`` whose
``selected_index`` follows the slider's ``index`` through a ``jsdlink``: a
link that runs in the browser, so the saved HTML page still responds to
dragging and arrow keys with no kernel behind it. With two sliders the frames
form a nested Stack (outer index = first slider, inner index = second). A
slider that would make the grid too large, and every slider after the second,
stays fixed at its default in the static page and is labelled as live-only.

Each static figure must fit a page-weight budget (400 KB by default): frames
are palette-quantised PNGs, and the resolution steps down until the encoded
payload fits; if even the lowest resolution does not fit, the call fails and
names the figure, so an author thins the grid instead of shipping a heavy page.

Readouts are a mapping ``label -> text`` (text carries its unit, e.g.
``"23.9 tok/s"``) or a single string. Figures should build their
``matplotlib.figure.Figure`` directly (not through ``pyplot``) so nothing is
drawn twice in a notebook; pyplot figures are closed after rendering anyway.

The browser tests find every figure by the CSS class ``aiinfra-figure``; its
slider carries ``aiinfra-slider``, the frame image ``aiinfra-frame`` and the
readout box ``aiinfra-readout``.
"""
from __future__ import annotations

import html
import io
import math
import os
import time
from dataclasses import dataclass, field
from typing import Any, Callable, Mapping, Sequence

from aiinfra.formula import check, choice

#: Environment variable that the book build sets to ``1`` (see the Makefile).
BUILD_ENV_VAR = "AIINFRA_BOOK_BUILD"
#: Page-weight budget of one static figure, in bytes (decimal: 400 KB).
DEFAULT_MAX_BYTES = 400_000
#: At most this many precomputed frames per figure (whole grid).
DEFAULT_MAX_FRAMES = 24
#: Resolutions tried for static frames, highest first (dots per inch).
STATIC_DPI_STEPS = (80, 72, 64, 56, 48)
#: Resolution of the live (kernel) image.
LIVE_DPI = 96
#: Colours kept in a quantised static frame.
PALETTE_COLORS = 96
#: Per-widget JSON overhead assumed by the payload estimate (bytes).
WIDGET_STATE_OVERHEAD_BYTES = 900

CSS_FIGURE = "aiinfra-figure"
CSS_SLIDER = "aiinfra-slider"
CSS_FRAME = "aiinfra-frame"
CSS_READOUT = "aiinfra-readout"
CSS_LIVE_ONLY = "aiinfra-live-only"

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
            raise ValueError(f"values of slider {self.name!r} must hold at least 2 entries, got {len(values)}")
        if len(set(map(repr, values))) != len(values):
            raise ValueError(f"values of slider {self.name!r} must be distinct")
        if self.default is not None and self.default not in values:
            raise ValueError(f"default of slider {self.name!r} must be one of its values, got {self.default!r}")
        if self.max_static is not None:
            check("max_static", self.max_static, "int>=2", scalar=True)
        if self.static is not None:
            chosen = tuple(self.static)
            if len(chosen) < 2 or any(v not in values for v in chosen) or len(set(map(repr, chosen))) != len(chosen):
                raise ValueError(f"static of slider {self.name!r} must be at least 2 distinct entries of values")
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
                raise ValueError(f"limit: slider {self.name!r} lists {len(ordered)} static values, over the {limit} allowed")
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
        raise ValueError(f"readouts must be a mapping label -> text or a string, got {type(readouts).__name__}")
    return f'<div class="{CSS_READOUT}" style="line-height:1.25">{body}</div>'


def _render_png(fig, dpi: float, palette_colors: int | None = None) -> bytes:
    """Rasterise a matplotlib figure to PNG bytes at ``dpi``.

    With ``palette_colors`` the image is quantised to that many colours (fast
    octree, no dithering): line plots lose nothing visible and shrink 2-3x.
    """
    check("dpi", dpi, ">0")
    if palette_colors is not None:
        check("palette_colors", palette_colors, "int>=2", scalar=True)
    import numpy as np
    from matplotlib.backends.backend_agg import FigureCanvasAgg
    from PIL import Image as PILImage

    fig.set_dpi(dpi)
    fig.patch.set_facecolor("white")
    canvas = FigureCanvasAgg(fig)
    canvas.draw()
    img = PILImage.fromarray(np.asarray(canvas.buffer_rgba())[..., :3])
    _close(fig)
    if palette_colors is not None:
        img = img.quantize(colors=palette_colors, method=PILImage.Quantize.FASTOCTREE, dither=PILImage.Dither.NONE)
    out = io.BytesIO()
    img.save(out, format="PNG", compress_level=9 if palette_colors is not None else 6)
    return out.getvalue()


def _frame_html(png: bytes, readout_html: str, alt: str) -> str:
    """One static frame: the readouts above the image, the PNG inlined as a data URL."""
    import base64

    src = "data:image/png;base64," + base64.b64encode(png).decode("ascii")
    return (
        f"{readout_html}<img class=\"{CSS_FRAME}\" alt=\"{html.escape(alt)}\" src=\"{src}\" "
        'style="max-width:100%;height:auto;display:block">'
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
    params: dict
    png: bytes
    readout_html: str


class InteractiveFigure:
    """What :func:`interactive_figure` returns; displays as its widget.

    Attributes: ``widget`` (the ipywidgets root), ``mode``, ``sliders``,
    ``frames`` (static mode), ``dpi`` used, ``payload_bytes`` (estimated
    embedded weight of the static frames), ``links`` (the client-side
    ``jsdlink`` widgets) and ``live_only`` (names of the sliders that only a
    kernel can move).
    """

    def __init__(self, fn: FigureFn, sliders: Sequence[Slider], *, title: str | None, fixed: dict,
                 mode: str, max_bytes: int, max_frames: int, live_dpi: float, palette_colors: int):
        self.fn = fn
        self.sliders = list(sliders)
        self.title = title
        self.fixed = dict(fixed)
        self.mode = mode
        self.max_bytes = max_bytes
        self.max_frames = max_frames
        self.live_dpi = live_dpi
        self.palette_colors = palette_colors
        self.frames: list[Frame] = []
        self.dpi: float | None = None
        self.payload_bytes = 0
        self.live_only: list[str] = []
        self.links: list = []
        self.last_update_s: float | None = None
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

    def _header(self):
        import ipywidgets as w

        parts = []
        if self.title:
            parts.append(w.HTML(f"<b>{html.escape(self.title)}</b>"))
        return parts

    def _root(self, children):
        import ipywidgets as w

        root = w.VBox(children, layout=w.Layout(width="100%", max_width="52em"))
        root.add_class(CSS_FIGURE)
        root.add_class(f"{CSS_FIGURE}-{self.mode}")
        return root

    def _image(self, png: bytes):
        import ipywidgets as w

        img = w.Image(value=png, format="png", layout=w.Layout(max_width="100%", height="auto"))
        img.add_class(CSS_FRAME)
        return img

    # ----- live ----------------------------------------------------------
    def render(self, dpi: float | None = None, **params) -> tuple[bytes, str]:
        """Call ``fn`` with ``params`` (defaults filled in) and return (PNG, readout HTML)."""
        fig, readouts = _call(self.fn, self.params(**params))
        png = _render_png(fig, self.live_dpi if dpi is None else dpi)
        return png, _readouts_html(readouts)

    def _build_live(self):
        import ipywidgets as w

        sliders = [self._slider_widget(s, s._values) for s in self.sliders]
        png, rh = self.render()
        img = self._image(png)
        readout = w.HTML(rh)

        def on_change(_change=None):
            t0 = time.perf_counter()
            chosen = {s.name: s._values[sl.value] for s, sl in zip(self.sliders, sliders)}
            new_png, new_rh = self.render(**chosen)
            img.value = new_png
            readout.value = new_rh
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
    def _static_axes(self):
        """Grid of the static page: the first slider always; the second only if
        the whole two-way grid fits ``max_frames``; every other slider is live-only."""
        axes = []
        for k, s in enumerate(self.sliders):
            if k == 0:
                axes.append(s.static_values(self.max_frames))
            elif k == 1 and len(axes[0]) * len(s.static_values()) <= self.max_frames:
                axes.append(s.static_values())
            else:
                self.live_only.append(s.name)
        return axes

    def _render_frames(self, axes, dpi, reuse: tuple[float, Frame] | None = None) -> list[Frame]:
        """Render every grid point at ``dpi``; ``reuse`` = (dpi, frame) already drawn at the defaults."""
        frames = []
        if len(axes) == 1:
            grid = [{self.sliders[0].name: a} for a in axes[0]]
        else:
            grid = [{self.sliders[0].name: a, self.sliders[1].name: b} for a in axes[0] for b in axes[1]]
        for point in grid:
            if reuse is not None and reuse[0] == dpi and self.params(**point) == reuse[1].params:
                frames.append(Frame(point, reuse[1].png, reuse[1].readout_html))
                continue
            fig, readouts = _call(self.fn, self.params(**point))
            frames.append(Frame(point, _render_png(fig, dpi, self.palette_colors), _readouts_html(readouts)))
        return frames

    def _estimate(self, frames: list[Frame], n_frames: int | None = None) -> int:
        """Embedded bytes of the static state: base64 frames plus per-widget JSON.

        With ``n_frames``, extrapolate from the mean of ``frames`` to that many.
        """
        per_frame = sum(_b64_len(len(f.png)) + len(f.readout_html) + 150 + WIDGET_STATE_OVERHEAD_BYTES
                        for f in frames) / len(frames)
        n = len(frames) if n_frames is None else n_frames
        n_stacks = 1 + (len(frames) if n_frames is None else n)  # generous: nested stacks
        return int(per_frame * n + WIDGET_STATE_OVERHEAD_BYTES * (12 + min(n_stacks, 2 * len(self.sliders) + 24)))

    def _build_static(self):
        import ipywidgets as w

        axes = self._static_axes()
        n_frames = math.prod(len(a) for a in axes)
        # size one frame at the highest resolution, guess the resolution at which
        # the whole grid fits (PNG bytes grow roughly with the pixel count), then
        # render the grid, stepping down if the guess was too optimistic
        fig, readouts = _call(self.fn, self.params())
        probe = Frame(self.params(), _render_png(fig, STATIC_DPI_STEPS[0], self.palette_colors),
                      _readouts_html(readouts))
        guess = self._estimate([probe], n_frames)
        start = 0
        for i, d in enumerate(STATIC_DPI_STEPS):
            if guess * (d / STATIC_DPI_STEPS[0]) ** 2 <= 0.85 * self.max_bytes:
                start = i
                break
        else:
            start = len(STATIC_DPI_STEPS) - 1
        tried = STATIC_DPI_STEPS[start:]
        for dpi in tried:
            frames = self._render_frames(axes, dpi, reuse=(STATIC_DPI_STEPS[0], probe))
            size = self._estimate(frames)
            if size <= self.max_bytes:
                break
        else:
            name = self.title or getattr(self.fn, "__name__", "figure")
            raise ValueError(
                f"max_bytes: figure {name!r} needs {size:,} B for {n_frames} frames even at "
                f"{tried[-1]} dpi, over the {self.max_bytes:,} B budget; pass fewer values "
                "(Slider.max_static) or raise max_bytes"
            )
        self.frames, self.dpi, self.payload_bytes = frames, dpi, size

        # one HTML widget per frame; all frames share one Layout and one style
        # model, which keeps the embedded state small
        shared_layout = w.Layout(width="100%")
        from ipywidgets.widgets.widget_string import HTMLStyle

        shared_style = HTMLStyle()
        caption = {s.name: s for s in self.sliders}

        def frame_box(f: Frame):
            alt = "; ".join(f"{caption[k].caption} = {caption[k].text(v)}" for k, v in f.params.items())
            return w.HTML(_frame_html(f.png, f.readout_html, alt), layout=shared_layout, style=shared_style)

        sliders = [self._slider_widget(s, list(a)) for s, a in zip(self.sliders, axes)]
        if len(axes) == 1:
            stack = w.Stack([frame_box(f) for f in frames], selected_index=sliders[0].value, layout=shared_layout)
            self.links.append(w.jsdlink((sliders[0], "index"), (stack, "selected_index")))
        else:
            n_b = len(axes[1])
            inner = []
            for i in range(len(axes[0])):
                st = w.Stack([frame_box(f) for f in frames[i * n_b:(i + 1) * n_b]],
                             selected_index=sliders[1].value, layout=shared_layout)
                self.links.append(w.jsdlink((sliders[1], "index"), (st, "selected_index")))
                inner.append(st)
            stack = w.Stack(inner, selected_index=sliders[0].value, layout=shared_layout)
            self.links.append(w.jsdlink((sliders[0], "index"), (stack, "selected_index")))

        extra = []
        for s in self.sliders:
            if s.name in self.live_only:
                extra.append(self._slider_widget(s, list(s._values), disabled=True))
        notes = []
        if self.live_only:
            names = ", ".join(self.sliders[[x.name for x in self.sliders].index(n)].caption for n in self.live_only)
            notes.append(w.HTML(
                f'<div class="{CSS_LIVE_ONLY}" style="font-size:0.85em;color:#7a4b00">'
                f"Live only: {html.escape(names)} moves only when this page runs in a kernel "
                "(Binder, Colab or Jupyter); this static page shows its default value.</div>"
            ))
        return self._root(self._header() + sliders + extra + notes + [stack])

    # ----- display -------------------------------------------------------
    def _repr_mimebundle_(self, **kwargs):
        bundle = self.widget._repr_mimebundle_(**kwargs)
        data = bundle[0] if isinstance(bundle, tuple) else bundle
        data["text/plain"] = self.__repr__()
        return bundle

    def __repr__(self) -> str:
        names = ", ".join(s.name for s in self.sliders)
        extra = f", {len(self.frames)} frames, {self.payload_bytes:,} B" if self.mode == "static" else ""
        return f"<InteractiveFigure {self.title or getattr(self.fn, '__name__', 'figure')!r} ({names}); {self.mode}{extra}>"


def interactive_figure(
    fn: FigureFn,
    sliders: Sequence[Slider],
    *,
    title: str | None = None,
    fixed: Mapping[str, Any] | None = None,
    mode: str | None = None,
    max_bytes: int = DEFAULT_MAX_BYTES,
    max_frames: int = DEFAULT_MAX_FRAMES,
    live_dpi: float = LIVE_DPI,
    palette_colors: int = PALETTE_COLORS,
) -> InteractiveFigure:
    """Make an interactive figure from ``fn(**params) -> (Figure, readouts)``.

    ``sliders`` name the parameters that move (one or two are precomputed in
    the static book; further ones are live-only there); ``fixed`` passes
    constant keyword arguments. ``mode`` forces ``"live"`` or ``"static"``;
    by default it follows ``AIINFRA_BOOK_BUILD``. ``max_bytes`` (default
    400,000 B) caps a static figure's embedded weight and ``max_frames``
    (default 24) the size of its precomputed grid. Display the result (last
    expression of a cell) to show it.
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
    check("live_dpi", live_dpi, ">0")
    check("palette_colors", palette_colors, "int>=2", scalar=True)
    return InteractiveFigure(fn, sliders, title=title, fixed=fixed, mode=_build_mode(mode),
                             max_bytes=int(max_bytes), max_frames=int(max_frames),
                             live_dpi=float(live_dpi), palette_colors=int(palette_colors))


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
