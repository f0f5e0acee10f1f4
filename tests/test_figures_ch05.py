"""Figures of chapter 5 (aiinfra.book.figures.ch05): pure functions returning (Figure, readouts)."""

import pytest
from matplotlib.figure import Figure

from aiinfra.book.figures import ch05
from aiinfra.book.interactive import interactive_figure
from aiinfra.serving import batching, paging


def test_demo_trace_is_reproducible():
    a, b = ch05.demo_trace(8), ch05.demo_trace(8)
    assert (a.output_tokens == b.output_tokens).all() and len(a) == ch05.TRACE_REQUESTS


def test_batching_policies_readouts_match_the_simulation():
    fig, r = ch05.batching_policies(16, 8)
    assert isinstance(fig, Figure)
    res = batching.compare_policies(ch05.demo_trace(8), 16)
    assert r["static: slot use"] == f"{res['static'].slot_utilization:.0%}"
    assert r["continuous: slot use"] == f"{res['continuous'].slot_utilization:.0%}"
    p50 = res["continuous"].percentile_latency_steps(50)
    assert r["continuous: p50 / p99 latency"].startswith(f"{p50:,.0f} / ")


def test_overload_follows_service_capacity_and_default_is_stable():
    # the default frame is a load both policies keep up with (the chapter's text describes it as such)
    (slots, gap) = (s.default for s in ch05.batching_policies_sliders())
    _, r = ch05.batching_policies(slots, gap)
    assert r["static: queue"] == r["continuous: queue"] == "steady"
    # 4 slots, a request every 4 steps: static batching serves fewer requests per step than arrive
    trace = ch05.demo_trace(4)
    assert batching.saturated_requests_per_step(trace, 4, "static") < trace.arrival_rate_per_step
    fig, r = ch05.batching_policies(4, 4)
    assert r["static: queue"] == "grows (overloaded)"
    assert any("overloaded" in t.get_text() for t in fig.texts + [t for ax in fig.axes for t in ax.texts])


@pytest.mark.parametrize("slots", ch05.MAX_BATCH_VALUES)
def test_continuous_wins_at_every_slider_point(slots):
    for gap in ch05.GAP_VALUES:
        res = batching.compare_policies(ch05.demo_trace(gap), slots)
        assert res["continuous"].slot_utilization >= res["static"].slot_utilization
        assert res["continuous"].percentile_latency_steps(50) <= res["static"].percentile_latency_steps(50)


def test_kv_reservation_readouts_and_paging_wins():
    fig, r = ch05.kv_reservation(16, 4096)
    assert isinstance(fig, Figure)
    tr = ch05.demo_trace(2)
    runs = {s: paging.simulate_with_kv_budget(tr, 64, 6e9, 147456.0, s, 16, 4096) for s in paging.SCHEMES}
    assert r["paged: mean batch"] == f"{runs['paged'].mean_batch:.1f}"
    assert r["contiguous: trace done at"] == f"step {runs['contiguous'].total_steps:,}"
    assert runs["paged"].mean_batch > runs["contiguous"].mean_batch
    waste = float(r["paged: reserved but empty"].rstrip("%"))
    assert waste < 5.0 < float(r["contiguous: reserved but empty"].rstrip("%"))


def test_series_thinning_keeps_the_mean():
    import numpy as np

    v = np.arange(10_000) % 7
    x, y = ch05._series(v, max_points=100)
    assert x[-1] >= v.size and len(y) <= 101
    assert y[:-1].mean() == pytest.approx(v.mean(), rel=0.01)


@pytest.mark.parametrize(
    "call, name",
    [
        (lambda: ch05.batching_policies(0), "max_batch"),
        (lambda: ch05.kv_reservation(0), "page_tokens"),
        (lambda: ch05.kv_reservation(16, 100), "max_context_tokens"),
        (lambda: ch05.kv_reservation(16, 4096, kv_bytes_per_token=0), "kv_bytes_per_token"),
        (lambda: ch05.kv_reservation(16, 4096, kv_budget_bytes=-1), "kv_budget_bytes"),
    ],
)
def test_rejections(call, name):
    with pytest.raises(ValueError, match=name):
        call()


@pytest.mark.parametrize(
    "fn, sliders",
    [
        (ch05.batching_policies, ch05.batching_policies_sliders),
        (ch05.kv_reservation, ch05.kv_reservation_sliders),
    ],
)
def test_static_figures_fit_the_budget(fn, sliders):
    fig = interactive_figure(fn, sliders(), mode="static")
    assert fig.payload_bytes <= 400_000
    assert len(fig.frames) >= 6
