"""The interactive-figure helper: sliders, static frames and links, live redraw, budgets."""

from __future__ import annotations

import base64
import io

import numpy as np
import pytest
from matplotlib.figure import Figure
from PIL import Image

from aiinfra.book import frame_html, png, views
from aiinfra.book import interactive as ia
from aiinfra.book.interactive import Slider, interactive_figure
from aiinfra.book.raster import DISPLAY_DPI, Raster


def wave(freq=1, amp=1.0, noise=0):
    """A small pure figure function: a sine of ``freq`` with optional pixel noise."""
    fig = Figure(figsize=(4, 2.5))
    ax = fig.add_subplot()
    x = np.linspace(0, 6.3, 120)
    ax.plot(x, amp * np.sin(freq * x))
    ax.set_title(f"f={freq}")
    if noise:
        rng = np.random.default_rng(noise)
        ax.imshow(rng.random((200, 200)), extent=(0, 6.3, -1, 1), aspect="auto")
    return fig, {"frequency": f"{freq} Hz", "amplitude": f"{amp:g}"}


def _png_size(png: bytes):
    return Image.open(io.BytesIO(png)).size


# ----- Slider ---------------------------------------------------------------


@pytest.mark.parametrize(
    "kwargs, match",
    [
        ({"name": "not an id", "values": [1, 2]}, "name"),
        ({"name": "x", "values": [1]}, "at least 2"),
        ({"name": "x", "values": [1, 1, 2]}, "distinct"),
        ({"name": "x", "values": [1, 2], "default": 3}, "default"),
        ({"name": "x", "values": [1, 2, 3], "max_static": 1}, "max_static"),
        ({"name": "x", "values": [1, 2, 3], "static": [1, 4]}, "static"),
        ({"name": "x", "values": [1, 2, 3], "static": [1]}, "static"),
        ({"name": "x", "values": [1, 2, 3], "static": [1, 3], "default": 2}, "default"),
        ({"name": "x", "values": [1, 2], "fmt": 5}, "fmt"),
    ],
)
def test_slider_rejects_bad_definitions(kwargs, match):
    with pytest.raises(ValueError, match=match):
        Slider(**kwargs)


def test_static_values_keep_ends_and_default_within_cap():
    s = Slider("b", tuple(range(1, 141)), default=23, max_static=10)
    vals = s.static_values()
    assert len(vals) == 10
    assert vals[0] == 1 and vals[-1] == 140 and 23 in vals
    assert list(vals) == sorted(vals)
    assert s.static_values(4)[0] == 1 and len(s.static_values(4)) == 4


def test_static_values_explicit_subset_in_value_order():
    s = Slider("b", tuple(range(1, 11)), static=(10, 1, 5))
    assert s.static_values() == (1, 5, 10)
    with pytest.raises(ValueError, match="limit"):
        s.static_values(2)


def test_short_slider_is_precomputed_whole():
    s = Slider("k", ("a", "b", "c"))
    assert s.static_values() == ("a", "b", "c")
    assert s.default_value == "a" and s.default_index == 0


def test_slider_text_uses_format_string_or_callable():
    assert Slider("n", [1, 2048], fmt="{:,} GPUs").text(2048) == "2,048 GPUs"
    assert Slider("n", [1, 2], fmt=lambda v: f"<{v}>").text(2) == "<2>"
    assert Slider("n_gpus", [1, 2]).caption == "n gpus"


# ----- mode, readouts, rendering ---------------------------------------------


def test_build_mode_follows_environment(monkeypatch):
    monkeypatch.delenv(ia.BUILD_ENV_VAR, raising=False)
    assert ia._build_mode() == "live"
    monkeypatch.setenv(ia.BUILD_ENV_VAR, "1")
    assert ia._build_mode() == "static"
    monkeypatch.setenv(ia.BUILD_ENV_VAR, "0")
    assert ia._build_mode() == "live"
    assert ia._build_mode("static") == "static"
    with pytest.raises(ValueError, match="mode"):
        ia._build_mode("pdf")


def test_readouts_html_escapes_and_labels():
    html = frame_html.readouts_html({"a<b": "1 < 2 tok/s", "n": 3.14159})
    assert "a&lt;b" in html and "1 &lt; 2 tok/s" in html and "3.14" in html
    assert f'class="{frame_html.CSS_READOUT}"' in html
    assert "plain &amp; simple" in frame_html.readouts_html("plain & simple")
    with pytest.raises(ValueError, match="readouts"):
        frame_html.readouts_html({})
    with pytest.raises(ValueError, match="readouts"):
        frame_html.readouts_html([("a", "b")])


def _render_png(fig, density, palette_colors=None) -> bytes:
    """A whole figure as PNG bytes at ``density``, as a static frame without layers is encoded."""
    return png.encode(Raster(views.View(fig, lambda: {}), density).composite(), palette_colors)


def test_render_png_size_follows_density_and_palette_shrinks():
    full = _render_png(wave(3)[0], 1.0)
    assert full[:8] == b"\x89PNG\r\n\x1a\n"
    assert _png_size(full) == (4 * DISPLAY_DPI, round(2.5 * DISPLAY_DPI))
    assert _png_size(_render_png(wave(3)[0], 2.0)) == (8 * DISPLAY_DPI, 5 * DISPLAY_DPI)
    pal = _render_png(wave(3)[0], 1.0, palette_colors=32)
    assert Image.open(io.BytesIO(pal)).mode == "P"
    assert len(pal) < len(full)
    with pytest.raises(ValueError, match="density"):
        _render_png(wave(3)[0], 0)
    with pytest.raises(ValueError, match="palette_colors"):
        _render_png(wave(3)[0], 1.0, palette_colors=1)


def test_b64_len():
    import base64

    for n in (0, 1, 2, 3, 4, 1000, 1001):
        assert png.b64_len(n) == len(base64.b64encode(b"x" * n))


# ----- interactive_figure: validation ----------------------------------------


@pytest.mark.parametrize(
    "args, kwargs, match",
    [
        (("nope", [Slider("freq", [1, 2])]), {}, "fn"),
        ((wave, []), {}, "sliders"),
        ((wave, [("freq", [1, 2])]), {}, "sliders"),
        ((wave, [Slider("freq", [1, 2]), Slider("freq", [3, 4])]), {}, "distinct"),
        ((wave, [Slider("freq", [1, 2])]), {"fixed": {"freq": 3}}, "fixed"),
        ((wave, [Slider("freq", [1, 2])]), {"max_bytes": 100}, "max_bytes"),
        ((wave, [Slider("freq", [1, 2])]), {"max_frames": 1}, "max_frames"),
        ((wave, [Slider("freq", [1, 2])]), {"live_density": -1}, "live_density"),
        ((wave, [Slider("freq", [1, 2])]), {"mode": "movie"}, "mode"),
    ],
)
def test_interactive_figure_rejects_bad_input(args, kwargs, match):
    with pytest.raises(ValueError, match=match):
        interactive_figure(*args, **kwargs)


def test_fn_must_return_figure_and_readouts():
    with pytest.raises(ValueError, match="pair"):
        interactive_figure(lambda freq: Figure(), [Slider("freq", [1, 2])], mode="live")
    with pytest.raises(ValueError, match="Figure"):
        interactive_figure(lambda freq: ("fig", {}), [Slider("freq", [1, 2])], mode="live")


# ----- static mode -----------------------------------------------------------


def test_static_one_slider_frames_follow_grid_and_link_index():
    import ipywidgets as w

    calls = []

    def fn(freq, amp):
        calls.append((freq, amp))
        return wave(freq, amp)

    f = interactive_figure(fn, [Slider("freq", [1, 2, 3, 4], default=2)], fixed={"amp": 0.5}, mode="static")
    assert f.mode == "static" and f.live_only == []
    assert [fr.params for fr in f.frames] == [{"freq": v} for v in (1, 2, 3, 4)]
    assert {(v, 0.5) for v in (1, 2, 3, 4)} <= set(calls)
    assert len({fr.png for fr in f.frames}) == 4, "every frame must differ"
    assert all("Hz" in fr.readout_html for fr in f.frames)

    root = f.widget
    assert frame_html.CSS_FIGURE in root._dom_classes
    sliders = [c for c in root.children if isinstance(c, w.SelectionSlider)]
    stacks = [c for c in root.children if isinstance(c, w.Stack)]
    assert len(sliders) == 1 and len(stacks) == 1
    assert frame_html.CSS_SLIDER in sliders[0]._dom_classes
    assert sliders[0].index == 1 and stacks[0].selected_index == 1  # default freq=2
    assert len(stacks[0].children) == 4
    assert all(
        frame_html.CSS_FRAME in c.value and "data:image/png;base64," in c.value for c in stacks[0].children
    )
    assert [(x.source, x.target) for x in f.links] == [((sliders[0], "index"), (stacks[0], "selected_index"))]
    assert all(type(x).__name__ == "DirectionalLink" for x in f.links)


def test_static_two_small_sliders_nest_stacks():
    import ipywidgets as w

    f = interactive_figure(wave, [Slider("freq", [1, 2, 3]), Slider("amp", [0.5, 1.0])], mode="static")
    assert len(f.frames) == 6 and f.live_only == []
    assert [fr.params for fr in f.frames][:2] == [{"freq": 1, "amp": 0.5}, {"freq": 1, "amp": 1.0}]
    outer = next(c for c in f.widget.children if isinstance(c, w.Stack))
    assert len(outer.children) == 3 and all(
        isinstance(c, w.Stack) and len(c.children) == 2 for c in outer.children
    )
    s1, s2 = [c for c in f.widget.children if isinstance(c, w.SelectionSlider)]
    assert sorted(id(x.target[0]) for x in f.links if x.source == (s2, "index")) == sorted(
        map(id, outer.children)
    )
    assert sum(x.source == (s1, "index") and x.target == (outer, "selected_index") for x in f.links) == 1
    assert len(f.links) == 4


def test_static_large_grid_makes_second_slider_live_only():
    import ipywidgets as w

    f = interactive_figure(
        wave,
        [Slider("freq", list(range(1, 11))), Slider("amp", [0.5, 1.0, 2.0])],
        mode="static",
        max_frames=12,
    )
    assert f.live_only == ["amp"]
    assert len(f.frames) == 10
    disabled = [c for c in f.widget.children if isinstance(c, w.SelectionSlider) and c.disabled]
    assert len(disabled) == 1 and frame_html.CSS_LIVE_ONLY in disabled[0]._dom_classes
    notes = [c for c in f.widget.children if isinstance(c, w.HTML) and frame_html.CSS_LIVE_ONLY in c.value]
    assert notes and "kernel" in notes[0].value


def test_static_payload_within_budget_and_estimate_close():
    f = interactive_figure(wave, [Slider("freq", list(range(1, 13)))], mode="static")
    exact = ia.embedded_state_bytes(f)
    assert exact <= ia.DEFAULT_MAX_BYTES
    assert f.payload_bytes <= ia.DEFAULT_MAX_BYTES
    assert abs(f.payload_bytes - exact) / exact < 0.3, (f.payload_bytes, exact)
    assert f.density in ia.STATIC_DENSITIES and f.dpi == DISPLAY_DPI * f.density


def test_static_budget_steps_dpi_down_then_refuses():
    slider = [Slider("noise", list(range(1, 9)))]
    roomy = interactive_figure(wave, slider, mode="static", max_bytes=4_000_000)
    tight = interactive_figure(wave, slider, mode="static", max_bytes=max(roomy.payload_bytes // 2, 10_000))
    assert tight.density < roomy.density
    assert tight.payload_bytes <= tight.max_bytes
    with pytest.raises(ValueError, match="max_bytes"):
        interactive_figure(wave, slider, mode="static", max_bytes=10_000)


# ----- live mode -------------------------------------------------------------


def test_live_mode_redraws_on_change():
    import ipywidgets as w

    calls = []

    def fn(freq, amp=1.0):
        calls.append(freq)
        return wave(freq, amp)

    f = interactive_figure(fn, [Slider("freq", [1, 2, 3])], mode="live")
    img = next(c for c in f.widget.children if isinstance(c, w.Image))
    readout = next(
        c for c in f.widget.children if isinstance(c, w.HTML) and frame_html.CSS_READOUT in c.value
    )
    first_png, first_text = img.value, readout.value
    assert calls == [1]
    f.set(freq=3)
    assert calls == [1, 3]
    assert img.value != first_png and readout.value != first_text and "3 Hz" in readout.value
    assert f.last_update_s is not None and f.last_update_s > 0
    with pytest.raises(ValueError, match="freq"):
        f.set(freq=7)
    static = interactive_figure(fn, [Slider("freq", [1, 2])], mode="static")
    with pytest.raises(ValueError, match="static"):
        static.set(freq=2)


def test_display_bundle_is_the_widget_view():
    f = interactive_figure(wave, [Slider("freq", [1, 2])], mode="live")
    data = f._repr_mimebundle_()
    assert data["application/vnd.jupyter.widget-view+json"] == {
        "version_major": 2,
        "version_minor": 0,
        "model_id": f.widget.model_id,
    }
    assert "InteractiveFigure" in data["text/plain"]


def test_display_works_with_widgets_that_lack_a_mimebundle(monkeypatch):
    """ipywidgets 7 (Colab's 7.7.1) widgets have no ``_repr_mimebundle_``: the figure displays all the same."""
    import ipywidgets as w

    monkeypatch.delattr(w.Widget, "_repr_mimebundle_", raising=False)
    monkeypatch.delattr(w.DOMWidget, "_repr_mimebundle_", raising=False)
    f = interactive_figure(wave, [Slider("freq", [1, 2])], mode="live")
    assert not hasattr(f.widget, "_repr_mimebundle_")
    data = f._repr_mimebundle_()
    assert data["application/vnd.jupyter.widget-view+json"]["model_id"] == f.widget.model_id


def test_static_bundle_carries_the_whole_default_frame_and_its_settings():
    """Clients without widgets (a notebook preview, the PDF) get the default frame, background included."""
    f = interactive_figure(
        wave_view, [Slider("freq", [1, 2, 3], default=2, fmt="{} Hz", label="frequency")], mode="static"
    )
    data = f._repr_mimebundle_()
    assert f.background is not None  # drawn in layers: the stored frame alone lacks the axes
    shown = np.asarray(Image.open(io.BytesIO(base64.b64decode(data["image/png"]))).convert("RGB"))
    whole = np.asarray(Image.open(io.BytesIO(f.render(density=f.density, freq=2)[0])).convert("RGB"))
    layer = Image.open(io.BytesIO(f.frames[1].png)).convert("RGBA")
    layer_on_white = np.asarray(
        Image.alpha_composite(Image.new("RGBA", layer.size, "white"), layer).convert("RGB")
    )

    def mean_difference(a):
        return np.abs(a.astype(int) - whole.astype(int)).max(axis=-1).mean()

    assert shown.shape == whole.shape
    assert mean_difference(shown) < 1.0
    assert mean_difference(layer_on_white) > 5 * mean_difference(shown)
    assert "frequency = 2 Hz" in data["text/plain"]


# ----- views: built once, moved in place -------------------------------------

builds = []


@ia.redraws("freq")
def wave_view(freq=1, amp=1.0):
    """The sine of ``wave`` as a view: the line and the title move, the axes stay."""
    builds.append(amp)
    fig = Figure(figsize=(4, 2.5))
    ax = fig.add_subplot()
    x = np.linspace(0, 6.3, 120)
    ax.set_ylim(-2, 2)
    (line,) = ax.plot(x, 0 * x)
    title = ax.text(0.5, 1.02, "", transform=ax.transAxes, ha="center")

    def update(freq):
        line.set_ydata(amp * np.sin(freq * x))
        title.set_text(f"f={freq}")
        return {"frequency": f"{freq} Hz"}

    return views.View(fig, update, [line, title])


def test_redraws_keeps_signature_and_returns_a_plain_figure():
    import inspect

    fig, r = wave_view(3, amp=0.5)
    assert r == {"frequency": "3 Hz"}
    assert list(inspect.signature(wave_view).parameters) == ["freq", "amp"]
    line = fig.axes[0].lines[0]
    assert np.allclose(line.get_ydata(), 0.5 * np.sin(3 * line.get_xdata()))
    assert not line.get_animated()
    with pytest.raises(ValueError, match="moves"):
        ia.redraws("nope")(lambda freq: None)
    with pytest.raises(ValueError, match="View"):
        ia.redraws("freq")(lambda freq=1: Figure())()
    with pytest.raises(ValueError, match="artists"):
        views.View(Figure(), lambda: {}, ["not an artist"])


def test_live_step_reuses_the_figure_and_its_artists():
    import ipywidgets as w

    builds.clear()
    f = interactive_figure(wave_view, [Slider("freq", [1, 2, 3])], fixed={"amp": 1.5}, mode="live")
    view = f._redrawer.view
    line = view.fig.axes[0].lines[0]
    img = next(c for c in f.widget.children if isinstance(c, w.Image))
    first = img.value
    f.set(freq=3)
    assert builds == [1.5], "a slider step must not build the figure again"
    assert f._redrawer.view is view and view.fig.axes[0].lines[0] is line
    assert np.allclose(line.get_ydata(), 1.5 * np.sin(3 * line.get_xdata()))
    assert img.value != first
    # the live image is the figure drawn afresh at the same parameters
    live = np.asarray(Image.open(io.BytesIO(img.value)).convert("RGB")).astype(int)
    fresh = np.asarray(
        Image.open(io.BytesIO(_render_png(wave_view(3, amp=1.5)[0], ia.LIVE_DENSITY))).convert("RGB")
    )
    assert live.shape == fresh.shape
    assert (np.abs(live - fresh.astype(int)).max(axis=-1) > 48).mean() < 0.002


def test_static_view_stores_one_background_and_transparent_layers():
    builds.clear()
    f = interactive_figure(wave_view, [Slider("freq", [1, 2, 3, 4])], mode="static")
    assert builds == [1.0] * len(builds) and len(builds) <= 2, "the grid must reuse the view"
    assert f.background is not None
    bg = Image.open(io.BytesIO(f.background))
    assert bg.size == _png_size(f.frames[0].png)
    layers = [np.asarray(Image.open(io.BytesIO(fr.png)).convert("RGBA")) for fr in f.frames]
    assert all((layer[..., 3] == 0).mean() > 0.8 for layer in layers), "a moving layer is mostly transparent"
    assert len({fr.png for fr in f.frames}) == 4
    box = f.widget.children[0]
    assert "<style>" in box.value and frame_html.CSS_BACKGROUND in box.value


# ----- the live step's encoder and kept texts ---------------------------------


def test_live_png_is_lossless_rgb():
    rng = np.random.default_rng(0)
    rgba = rng.integers(0, 256, size=(37, 53, 4), dtype=np.uint8)
    rgba[..., 3] = 255
    img = Image.open(io.BytesIO(png.encode_live(rgba)))
    assert img.mode == "RGB" and img.size == (53, 37)
    assert np.array_equal(np.asarray(img), rgba[..., :3])


@ia.redraws("label")
def labelled(label="a"):
    """A view whose only moving artist is a title text (drawn through the live figure's text cache)."""
    fig = Figure(figsize=(3, 1.5))
    ax = fig.add_subplot()
    ax.plot([0, 1], [0, 1])
    title = ax.text(0.5, 0.5, "", transform=ax.transAxes, ha="center", color="#D55E00", fontsize=14)

    def update(label):
        title.set_text(f"label {label}")
        return {"label": label}

    return views.View(fig, update, [title])


def test_kept_texts_match_texts_drawn_afresh_and_follow_each_change():
    redrawer = views.Redrawer(labelled)
    raster = None
    for label in ("a", "bb", "a", "bb", "ccc"):
        redrawer.update({"label": label})
        raster = raster or Raster(redrawer.view, 1.5, cache_text=True)
        live = raster.blit()[..., :3].astype(int)
        fresh = Raster(views.View(labelled(label)[0], lambda: {}), 1.5).composite().astype(int)
        assert np.abs(live - fresh).max() <= 3, (
            f"label {label!r}: kept text differs from the text drawn afresh"
        )
    assert (
        len(raster._texts.patches) == 3
    )  # one per distinct text: "a" and "bb" were drawn again from the cache


def test_live_return_to_a_setting_shows_its_kept_image_without_drawing_again(monkeypatch):
    calls = []

    def fn(freq, amp=1.0):
        calls.append(freq)
        return wave(freq, amp)

    monkeypatch.setattr(ia, "LIVE_FRAMES_KEPT", 2)
    f = interactive_figure(fn, [Slider("freq", [1, 2, 3, 4])], mode="live")
    img, readout = f._live_image, f._live_readout
    first = img.value, readout.value
    f.set(freq=3)
    f.set(freq=1)  # seen before: its image and readouts come back, fn is not called
    assert calls == [1, 3] and (img.value, readout.value) == first
    f.set(freq=2)  # a third setting: the least recently shown (3) is dropped, 1 and 2 are kept
    f.set(freq=1)
    f.set(freq=3)
    assert calls == [1, 3, 2, 3]
    assert "3 Hz" in readout.value


def test_kept_font_metrics_lay_out_every_text_as_matplotlib_does():
    """Texts laid out through the kept metrics sit exactly where matplotlib's own table lookup puts them."""
    from matplotlib.backends.backend_agg import FigureCanvasAgg

    from aiinfra.book import raster as rasters

    fig = Figure(figsize=(4, 2), dpi=144)
    canvas = FigureCanvasAgg(fig)
    texts = [
        fig.text(0.1, 0.2, "tokens/s", fontsize=9),
        fig.text(0.5, 0.5, "two\nlines", fontsize=12, ha="center", va="center", weight="bold"),
        fig.text(0.9, 0.8, "rotated", fontsize=8.5, rotation=90, family="monospace"),
    ]
    renderer = canvas.get_renderer()
    assert getattr(renderer, "_get_font_height_metrics", None) is None

    def layouts():
        out = []
        for t in texts:
            bbox, lines, descent = t._get_layout(renderer)
            out.append((tuple(bbox.bounds), lines, descent))
        return out

    expected = layouts()
    assert rasters._keep_font_metrics(renderer) is renderer
    assert renderer._get_font_height_metrics is not None
    assert layouts() == expected
