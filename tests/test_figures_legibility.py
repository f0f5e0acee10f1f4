"""Every figure of the book, as displayed: type >= 11 px, nothing clipped or colliding, layers that add up.

A figure is shown at 96 CSS pixels per inch (``interactive.DISPLAY_DPI``), so
a font of ``p`` points is ``p * 96 / 72`` pixels on screen; 11 px is 8.25 pt.
Each figure is drawn with the arguments its chapter passes (or values of the
same kind) and checked at its default and at both ends of every slider:

* no figure is wider than ``MAX_WIDTH_IN`` (it would be scaled down in the
  text column, and its type with it);
* every visible text (ticks, axis labels, titles, legends, annotations) is at
  least 11 px and lies inside the figure;
* no two texts overlap (colliding tick labels, a title over a tick label);
* drawn in layers (the still background once, the moving artists over it,
  as the live widget and the static frames are), a view at any slider point
  looks like the same figure built from scratch at that point: so nothing
  that ``update`` changes was left in the background, and nothing still was
  drawn over a moving artist.
"""

from __future__ import annotations

import importlib
import itertools
import pkgutil

import numpy as np
import pytest
from matplotlib.backends.backend_agg import FigureCanvasAgg
from matplotlib.text import Text

from aiinfra import memory
from aiinfra.book import figures, model_check, views
from aiinfra.book import interactive as ia
from aiinfra.book import raster as ia_raster
from aiinfra.book.figures import (
    MAX_WIDTH_IN,
    ch01,
    ch08,
)
from aiinfra.catalog import hardware, models, reference
from aiinfra.cluster import parallelism
from aiinfra.deployment import SERVING_70B, SERVING_CONTEXT_TOKENS, SERVING_TPOT_S, Deployment
from aiinfra.serving import prefix_cache

PX_PER_PT = ia_raster.DISPLAY_DPI / 72
MIN_PX = 11.0
#: Characters a slider's readout shows uncut: ipywidgets gives it 148 CSS px of 13 px type, which
#: cut ch05/02's "GQA, 8 KV heads (Llama-3.1-70B)" after its 21st character.
READOUT_CHARS = 21


def _llama70b():
    return models.load("Llama-3.1-70B")


def _tp_fixed():
    m = _llama70b()
    return dict(
        d_model=m.hidden_size,
        n_layers=m.n_layers,
        nvlink_bytes_per_s=hardware.gpu("H100 SXM").scaleup_bytes_per_s_per_direction,
        ib_bytes_per_s=hardware.link("ndr").bytes_per_s_per_direction,
        nvlink_latency_s=parallelism.ASSUMED_STEP_LATENCY_S["nvlink"],
        ib_latency_s=parallelism.ASSUMED_STEP_LATENCY_S["infiniband"],
        model_name="Llama-3.1-70B",
    )


def _disagg_fixed():
    m = _llama70b()
    server = Deployment(m, "H100 SXM", n_gpus=8, eta_f=0.5, eta_b=0.7)
    return dict(
        decode_step_time_s=server.step(32, 4096).time_s,
        prefill_time_per_token_s=server.prefill(4096).time_s / 4096,
        kv_bytes_per_token=memory.kv_bytes_per_token(m),
        link_bytes_per_s=hardware.DGX_H100.compute_nic.bytes_per_s_per_direction,
    )


def _prefix_fixed():
    f, a = prefix_cache.model_prefill_coefficients(_llama70b())
    return dict(
        prompt_tokens=8192,
        flops_per_token=f,
        attention_flops_per_pair=a,
        flops_per_s=8 * hardware.gpu("H100 SXM").bf16_dense_flops_per_s,
        efficiency=0.5,
    )


TOY = dict(
    batches=(1, 2, 4, 8, 16, 32, 64),
    times_s=(6.1e-3, 6.3e-3, 6.6e-3, 7.4e-3, 11e-3, 21e-3, 41e-3),
    n_params=2**24,
    bytes_per_weight=4,
    flops_per_s=50e9,
    bandwidth_bytes_per_s=11e9,
    machine="the build machine",
)

#: The sliders of an interactive figure whose module does not define ``<name>_sliders()`` (or ``sliders()``
#: beside a module's ``draw``) taking no argument: the page builds them from its own data.
SLIDERS = {
    "ch04.latency_timeline": lambda: [
        ia.Slider("output_tokens", (4, 8, 16, 32), default=16)
    ],  # page 2's slider
    "ch08.toy_decode_roofline": lambda: ch08.toy_decode_sliders(TOY["batches"]),
    "ch08.model_vs_measured": lambda: ch08.model_vs_measured_sliders(model_check.rows()),
}

#: The other arguments an interactive figure takes, as its chapter passes them (or values of the same kind).
FIXED = {
    "ch04.latency_timeline": lambda: dict(queue_s=0.04, ttft_s=0.08, tpot_s=0.0105),
    "ch06.tp_allreduce": _tp_fixed,
    "ch07.disaggregation": _disagg_fixed,
    "ch07.prefix_cache": _prefix_fixed,
    "ch07.chunked_prefill": lambda: dict(
        deployment=SERVING_70B,
        prompt_tokens=8192,
        decode_batch=64,
        context_tokens=SERVING_CONTEXT_TOKENS,
        ttft_slo_s=0.5,
        tpot_slo_s=SERVING_TPOT_S,
    ),
    "ch08.toy_decode_roofline": lambda: dict(TOY),
    "ch08.model_vs_measured": lambda: dict(rows=model_check.rows()),
}


def _collect_interactive():
    """Every interactive figure of ``aiinfra.book.figures``, collected, never listed: a function a slider
    moves carries ``moves`` (``interactive.redraws``). Named ``chNN.function``, or the module's name for
    a module's ``draw``; each with its sliders and its other arguments (:data:`SLIDERS`, :data:`FIXED`)."""
    found = {}
    for info in pkgutil.iter_modules(figures.__path__):
        mod = importlib.import_module(f"{figures.__name__}.{info.name}")
        for attr, fn in vars(mod).items():
            if callable(fn) and hasattr(fn, "moves") and fn.__module__ == mod.__name__:
                name = info.name if attr == "draw" else f"{info.name}.{attr}"
                default = getattr(mod, "sliders" if attr == "draw" else f"{attr}_sliders", None)
                found[name] = (fn, SLIDERS.get(name, default), FIXED.get(name, dict))
    return found


INTERACTIVE = _collect_interactive()


def test_the_collection_finds_every_interactive_figure_and_its_arguments():
    # the chapter figures of issue 26's hand-kept list, plus ch07's chunked prefill and the routing figure
    assert len(INTERACTIVE) >= 25 and {"ch07.chunked_prefill", "routing", "ch01.batch_explorer"} <= set(
        INTERACTIVE
    )
    assert set(SLIDERS) | set(FIXED) <= set(INTERACTIVE), "arguments given for a figure that no longer exists"
    assert all(sliders is not None for _, sliders, _ in INTERACTIVE.values()), [
        name for name, (_, sliders, _) in INTERACTIVE.items() if sliders is None
    ]


def _ladder():
    rows = reference.table("latency_2009")
    return dict(
        operations=[r.operation for r in rows], seconds=[reference.latency_s(r.operation) for r in rows]
    )


STILL = {
    "ch01.six_layers": (ch01.six_layers, dict),
    "ch01.request_path": (ch01.request_path, dict),
    "ch01.read_vs_compute": (
        ch01.read_vs_compute,
        lambda: dict(read_time_s=70e9 / 3.35e12, compute_time_s=140e9 / 989.4e12),
    ),
    "ch01.latency_ladder": (ch01.latency_ladder, _ladder),
    "ch01.measurement_check": (ch01.measurement_check, dict),
    "ch08.calls_overhead": (
        ch08.calls_overhead,
        lambda: dict(
            pieces=(1, 4, 16, 64, 256),
            times_s=(2.0e-3, 2.1e-3, 2.4e-3, 3.5e-3, 8.0e-3),
            base_s=1.9e-3,
            per_call_s=2.2e-5,
        ),
    ),
}


def corner_points(sliders) -> list[dict]:
    """The default of every slider, and each slider at both ends of its static values with the others at default."""
    default = {s.name: s.default_value for s in sliders}
    points = [default]
    for s in sliders:
        vals = s.static_values()
        for v in (vals[0], vals[-1]):
            p = dict(default, **{s.name: v})
            if p not in points:
                points.append(p)
    return points


def _texts(fig):
    """Every text a reader sees: tick labels in view, axis labels, titles, annotations, legends, figure texts."""
    out = []
    for ax in fig.axes:
        if not ax.get_visible():
            continue
        for axis in (ax.xaxis, ax.yaxis):
            if ax.axison and axis.get_visible():
                for tick in axis._update_ticks():  # the ticks drawn: those inside the view limits
                    out += [tick.label1, tick.label2]
                out.append(axis.label)
        out += [ax.title, ax._left_title, ax._right_title]
        out += list(ax.texts)
        leg = ax.get_legend()
        if leg is not None and leg.get_visible():
            out += list(leg.get_texts())
    out += list(fig.texts)
    if fig._suptitle is not None:
        out.append(fig._suptitle)
    return [t for t in out if isinstance(t, Text) and t.get_visible() and t.get_text().strip()]


def legibility_problems(fig) -> list[str]:
    """What a reader would trip over in ``fig`` drawn at its display size (an empty list when none)."""
    problems = []
    if fig.get_figwidth() > MAX_WIDTH_IN + 1e-9:
        problems.append(
            f"figure is {fig.get_figwidth():.2f} in wide, over {MAX_WIDTH_IN} in (it would be scaled down)"
        )
    fig.set_dpi(ia_raster.DISPLAY_DPI)
    canvas = fig.canvas if isinstance(fig.canvas, FigureCanvasAgg) else FigureCanvasAgg(fig)
    canvas.draw()
    renderer = canvas.get_renderer()
    width, height = fig.bbox.width, fig.bbox.height
    boxes = []
    for t in _texts(fig):
        px = t.get_fontsize() * PX_PER_PT
        label = repr(t.get_text()[:40])
        if px < MIN_PX - 1e-6:
            problems.append(f"{label} is {px:.1f} px, under {MIN_PX:.0f} px")
        bb = t.get_window_extent(renderer)
        if bb.x0 < -1 or bb.y0 < -1 or bb.x1 > width + 1 or bb.y1 > height + 1:
            problems.append(
                f"{label} is clipped by the figure edge ({bb.x0:.0f}..{bb.x1:.0f} of {width:.0f} px "
                f"wide, {bb.y0:.0f}..{bb.y1:.0f} of {height:.0f} px high)"
            )
        boxes.append((label, bb.padded(-1.0)))
    for (la, a), (lb, b) in itertools.combinations(boxes, 2):
        same_place = la == lb and np.allclose(
            a.extents, b.extents, atol=1.0
        )  # a lit copy over its unlit twin
        if a.overlaps(b) and not same_place:
            problems.append(f"{la} overlaps {lb}")
    return problems


def _instances():
    for name, (_fn, sliders, _fixed) in INTERACTIVE.items():
        if sliders is None:  # test_the_collection_finds_every_interactive_figure_and_its_arguments fails
            continue
        for point in corner_points(sliders()):
            yield pytest.param(name, point, id=f"{name}-" + "-".join(f"{v}" for v in point.values()))


@pytest.mark.parametrize("name, point", list(_instances()))
def test_interactive_figure_is_legible(name, point):
    fn, _, fixed = INTERACTIVE[name]
    fig, _ = fn(**point, **fixed())
    assert legibility_problems(fig) == []


@pytest.mark.parametrize("name", list(INTERACTIVE))
def test_every_slider_value_fits_the_readout(name):
    _, sliders, _ = INTERACTIVE[name]
    long = [s.text(v) for s in sliders() for v in s.values if len(s.text(v)) > READOUT_CHARS]
    assert not long, f"{name}: slider labels the readout would cut: {long}"


@pytest.mark.parametrize("name", list(STILL))
def test_still_figure_is_legible(name):
    fn, kwargs = STILL[name]
    fig, _ = fn(**kwargs())
    assert legibility_problems(fig) == []


def _difference(a: np.ndarray, b: np.ndarray) -> tuple[float, float]:
    """Share of pixels that differ by more than 48 levels in any channel, and the mean absolute difference."""
    d = np.abs(a.astype(int) - b.astype(int)).max(axis=-1)
    return float((d > 48).mean()), float(d.mean())


@pytest.mark.parametrize("name", list(INTERACTIVE))
def test_layers_of_a_view_add_up_to_the_figure_built_afresh(name):
    """The view built once and moved to each corner point (twice round, so the live figure's kept texts
    are drawn again), drawn as background plus moving layer, matches the same figure built from scratch
    at that point."""
    fn, sliders, fixed = INTERACTIVE[name]
    assert hasattr(fn, "build") and {s.name for s in sliders()} <= set(fn.moves), (
        f"{name}: every slider must move the view in place"
    )
    redrawer = views.Redrawer(fn)
    points = corner_points(sliders())
    raster = None
    for point in (points[1:] + points[:1]) * 2:
        params = dict(point, **fixed())
        redrawer.update(params)
        assert raster is None or not redrawer.rebuilt, f"{name}: moving to {point} rebuilt the figure"
        raster = raster or ia_raster.Raster(redrawer.view, 1.0, cache_text=True)
        fresh = ia_raster.Raster(views.View(fn(**params)[0], lambda: {}), 1.0).composite()
        live = raster.blit()[..., :3].copy()
        static = over(raster.overlay(), raster.background)
        for what, layered in (("live blit", live), ("static layers", static)):
            assert layered.shape == fresh.shape
            share, mean = _difference(layered, fresh)
            assert share < 0.002 and mean < 1.0, (
                f"{name} at {point}, {what}: {share:.2%} of pixels differ (mean {mean:.2f})"
            )


def over(rgba: np.ndarray, rgb: np.ndarray) -> np.ndarray:
    """Porter-Duff 'over': what the browser shows for a transparent layer on its background."""
    alpha = rgba[..., 3:4] / 255.0
    return np.rint(rgba[..., :3] * alpha + rgb * (1 - alpha)).astype(np.uint8)
