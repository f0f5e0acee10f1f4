"""Amdahl's law: speedup, limit, new time, rejections."""

import numpy as np
import pytest

from aiinfra import roofline


def test_speedup_values():
    assert roofline.amdahl_speedup(0.0, 10) == 1.0
    assert roofline.amdahl_speedup(1.0, 10) == pytest.approx(10.0)
    assert roofline.amdahl_speedup(0.5, 2) == pytest.approx(4 / 3)
    assert roofline.amdahl_speedup(0.5, 0.5) == pytest.approx(2 / 3)  # a slowdown


def test_speedup_approaches_limit():
    f = 0.9
    big = roofline.amdahl_speedup(f, 1e12)
    assert big == pytest.approx(roofline.amdahl_limit(f), rel=1e-9)
    assert roofline.amdahl_speedup(f, 100) < roofline.amdahl_limit(f)


def test_arrays():
    out = roofline.amdahl_speedup(np.array([0.2, 0.8]), 5)
    np.testing.assert_allclose(out, [1 / 0.84, 1 / 0.36])


def test_time_after_speedup():
    assert roofline.time_after_speedup_s(100.0, 0.2, 5) == pytest.approx(84.0)
    assert roofline.time_after_speedup_s(100.0, 0.8, 5) == pytest.approx(36.0)


@pytest.mark.parametrize(
    "call, name",
    [
        (lambda: roofline.amdahl_speedup(-0.1, 2), "fraction"),
        (lambda: roofline.amdahl_speedup(1.1, 2), "fraction"),
        (lambda: roofline.amdahl_speedup(0.5, 0), "speedup"),
        (lambda: roofline.amdahl_limit(1.0), "fraction"),
        (lambda: roofline.amdahl_limit(-0.5), "fraction"),
        (lambda: roofline.time_after_speedup_s(-1, 0.5, 2), "original_time_s"),
        (lambda: roofline.time_after_speedup_s(1, 0.5, float("nan")), "speedup"),
    ],
)
def test_rejections(call, name):
    with pytest.raises(ValueError, match=name):
        call()
