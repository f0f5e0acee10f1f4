"""Tests for aiinfra.serving.speculation (chapter 7): break-even points of speculative decoding."""

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from aiinfra.serving import speculation


def test_max_draft_cost_makes_speedup_one():
    for a, g in [(0.6, 2), (0.8, 4), (0.9, 8)]:
        c = speculation.max_draft_cost_ratio(a, g)
        assert speculation.speculative_speedup(a, g, c) == pytest.approx(1.0)


def test_max_draft_cost_known_value():
    # alpha 0.8, gamma 4: E = (1 - 0.8^5)/0.2 = 3.3616, c_max = 2.3616/4
    assert speculation.max_draft_cost_ratio(0.8, 4) == pytest.approx(2.3616 / 4)
    assert speculation.max_draft_cost_ratio(0.0, 3) == 0.0


@settings(deadline=None)
@given(st.integers(1, 12), st.floats(0.0, 0.9))
def test_breakeven_alpha_is_a_root(g, c):
    a = speculation.breakeven_alpha(g, c)
    assert 0.0 <= a <= 1.0
    assert speculation.speculative_speedup(a, g, c) == pytest.approx(1.0, abs=1e-6)


def test_breakeven_alpha_free_draft_is_zero_and_rises_with_cost():
    assert speculation.breakeven_alpha(4, 0.0) == pytest.approx(0.0, abs=1e-9)
    costs = np.array([0.05, 0.1, 0.2, 0.4])
    a = speculation.breakeven_alpha(4, costs)
    assert a.shape == (4,) and np.all(np.diff(a) > 0)


def test_best_gamma():
    g, s = speculation.best_gamma(0.8, 0.05, max_gamma=16)
    speeds = [speculation.speculative_speedup(0.8, k, 0.05) for k in range(1, 17)]
    assert s == pytest.approx(max(speeds))
    assert g == int(np.argmax(speeds)) + 1
    # a poor draft: the best gamma is short
    g_bad, _ = speculation.best_gamma(0.3, 0.2)
    assert g_bad == 1


@pytest.mark.parametrize(
    "call,name",
    [
        (lambda: speculation.max_draft_cost_ratio(1.2, 4), "alpha"),
        (lambda: speculation.max_draft_cost_ratio(0.5, 0), "gamma"),
        (lambda: speculation.breakeven_alpha(4, 1.0), "draft_cost_ratio"),
        (lambda: speculation.breakeven_alpha(0, 0.1), "gamma"),
        (lambda: speculation.best_gamma(0.5, -0.1), "draft_cost_ratio"),
        (lambda: speculation.best_gamma(0.5, 0.1, max_gamma=0), "max_gamma"),
        (lambda: speculation.best_gamma(np.array([0.5, 0.6]), 0.1), "single number"),
    ],
)
def test_rejections(call, name):
    with pytest.raises(ValueError, match=name):
        call()
