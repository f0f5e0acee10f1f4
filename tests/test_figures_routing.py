"""The routing figure of chapter 7: readouts from the simulation, every static frame, size and legibility."""

import pytest
from matplotlib.backends.backend_agg import FigureCanvasAgg
from matplotlib.figure import Figure
from matplotlib.text import Text

from aiinfra import units
from aiinfra.book.figures import routing as fig
from aiinfra.book.interactive import embedded_state_bytes, interactive_figure

#: The book's column shows a frame at 1:1 up to this width (CSS px); text must be at least 11 px there.
COLUMN_PX = 700
MIN_TEXT_PX = 11


def test_readouts_come_from_the_simulation():
    sc = fig.scenario()
    k = sc.load_index(1.0)
    f, r = fig.draw(1.0)
    assert isinstance(f, Figure)
    res = sc.result
    pa, rr = res.policies.index("prefix_aware"), res.policies.index("round_robin")
    assert r["p99 TTFT, prefix-aware"] == units.fmt_time(res.ttft_percentile_s(99)[pa, k])
    assert (
        r["hit rate, prefix-aware / round-robin"] == f"{res.hit_rate[pa, k]:.0%} / {res.hit_rate[rr, k]:.0%}"
    )
    # the load is the arrival rate over the fleet's no-hit capacity
    assert res.rates_per_s[k] == pytest.approx(sc.fleet_capacity_per_s)
    assert r["arrivals"].startswith(f"{sc.fleet_capacity_per_s:,.1f} requests/s")


def test_the_scenario_shows_what_the_page_claims():
    sc = fig.scenario()
    res = sc.result
    # cache affinity: prefix-aware routing finds the prefix far more often than any other policy
    hits = dict(zip(res.policies, res.hit_rate.min(axis=1)))
    assert hits["prefix_aware"] > 0.8 > 0.3 > max(v for p, v in hits.items() if p != "prefix_aware")
    # at full load its tail TTFT is the lowest, and random placement has the worst
    p99 = dict(zip(res.policies, res.ttft_percentile_s(99)[:, sc.load_index(1.0)]))
    assert min(p99, key=p99.get) == "prefix_aware" and max(p99, key=p99.get) == "random"
    # counting requests does not see the prefill queue: round-robin beats least-loaded and two choices here
    assert p99["round_robin"] < min(p99["least_loaded"], p99["two_choices"])
    queue = dict(zip(res.policies, res.mean_queue_s[:, sc.load_index(1.0)]))
    assert queue["round_robin"] < queue["least_loaded"]
    # at twice the no-hit capacity, only prefix-aware routing keeps its tail near a second
    p99_2 = dict(zip(res.policies, res.ttft_percentile_s(99)[:, sc.load_index(2.0)]))
    assert p99_2["prefix_aware"] < 5 < min(v for p, v in p99_2.items() if p != "prefix_aware")


def test_every_static_frame_draws_and_bad_loads_raise():
    for load in fig.STATIC_LOADS:
        f, r = fig.draw(load)
        assert len(r) == 4
    with pytest.raises(ValueError, match="load"):
        fig.draw(0.33)


def test_static_figure_fits_the_budget_and_is_legible():
    f = interactive_figure(fig.draw, fig.sliders(), title="routing", mode="static")
    assert len(f.frames) == len(fig.STATIC_LOADS)
    assert embedded_state_bytes(f) <= 400_000
    probe, _ = fig.draw(1.0)
    FigureCanvasAgg(probe).draw()  # tick labels get their text when drawn
    # the page shows a frame at f.width_px CSS pixels (96 per inch of figure), scaled down to fit the column
    shown_px = min(f.width_px, COLUMN_PX)
    px_per_pt = shown_px / probe.get_figwidth() / 72
    sizes = [t.get_fontsize() for t in probe.findobj(Text) if t.get_visible() and t.get_text().strip()]
    assert len(sizes) > 20 and min(sizes) * px_per_pt >= MIN_TEXT_PX
