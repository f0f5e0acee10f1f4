"""Roofline bounds: values, array behaviour, labels, utilisation and every rejection."""

import numpy as np
import pytest

from aiinfra import roofline as rl


def test_compute_and_memory_time_scale_with_efficiency():
    assert rl.compute_time_s(1e12, 1e15) == pytest.approx(1e-3)
    assert rl.compute_time_s(1e12, 1e15, efficiency=0.5) == pytest.approx(2e-3)
    assert rl.memory_time_s(3e9, 3e12) == pytest.approx(1e-3)
    assert rl.memory_time_s(3e9, 3e12, efficiency=0.25) == pytest.approx(4e-3)
    assert rl.compute_time_s(0, 1e15) == 0.0


def test_overlapped_is_max_and_serial_is_sum():
    f, r, pi, bw = 2e12, 6e9, 1e15, 3e12  # 2 ms of compute, 2 ms of memory
    assert rl.step_time_overlapped_s(f, r, pi, bw) == pytest.approx(2e-3)
    assert rl.step_time_serial_s(f, r, pi, bw) == pytest.approx(4e-3)
    assert rl.step_time_overlapped_s(f, 3e9, pi, bw) == pytest.approx(2e-3)
    assert rl.step_time_overlapped_s(1e12, r, pi, bw, eta_f=1.0, eta_b=0.5) == pytest.approx(4e-3)


def test_arrays_broadcast():
    r = np.array([1e9, 3e9, 9e9])
    t = rl.step_time_overlapped_s(1e12, r, 1e15, 3e12)
    assert isinstance(t, np.ndarray) and t.shape == (3,)
    np.testing.assert_allclose(t, [1e-3, 1e-3, 3e-3])
    labels = rl.bound_label(1e12, r, 1e15, 3e12)
    assert list(labels) == ["compute-bound", "compute-bound", "memory-bound"]


def test_intensity_ridge_and_roofline():
    assert rl.arithmetic_intensity_flops_per_byte(2e9, 1e9) == 2.0
    assert rl.ridge_point_flops_per_byte(1e15, 3e12) == pytest.approx(333.33, rel=1e-4)
    assert rl.attainable_flops_per_s(1.0, 1e15, 3e12) == pytest.approx(3e12)
    assert rl.attainable_flops_per_s(1e4, 1e15, 3e12) == pytest.approx(1e15)


def test_bound_label_tie_and_sides():
    assert rl.bound_label(1.0, 1.0, 1.0, 1.0) == rl.COMPUTE_BOUND
    assert rl.bound_label(1.0, 2.0, 1.0, 1.0) == rl.MEMORY_BOUND
    assert rl.bound_label(3.0, 2.0, 1.0, 1.0) == rl.COMPUTE_BOUND
    assert isinstance(rl.bound_label(1.0, 2.0, 1.0, 1.0), str)


def test_mfu_mbu():
    assert rl.mfu(5e11, 1e15, 1e-3) == pytest.approx(0.5)
    assert rl.mbu(15.442e9, 1.792e12, 26.5e-3) == pytest.approx(0.3252, abs=1e-4)
    assert rl.mfu(1e12, 1e15, 1e-3) == pytest.approx(1.0)


@pytest.mark.parametrize(
    "call, name",
    [
        (lambda: rl.compute_time_s(-1, 1e15), "flops"),
        (lambda: rl.compute_time_s(1, 0), "flops_per_s"),
        (lambda: rl.compute_time_s(1, 1, efficiency=1.5), "efficiency"),
        (lambda: rl.compute_time_s(1, 1, efficiency=0), "efficiency"),
        (lambda: rl.memory_time_s(float("nan"), 1), "bytes_moved"),
        (lambda: rl.memory_time_s(1, -3), "bandwidth_bytes_per_s"),
        (lambda: rl.memory_time_s(1, 1, efficiency=-0.1), "efficiency"),
        (lambda: rl.step_time_overlapped_s(1, 1, 1, 1, eta_f=2), "eta_f"),
        (lambda: rl.step_time_serial_s(1, 1, 1, 1, eta_b=0), "eta_b"),
        (lambda: rl.arithmetic_intensity_flops_per_byte(1, 0), "bytes_moved"),
        (lambda: rl.ridge_point_flops_per_byte(0, 1), "flops_per_s"),
        (lambda: rl.ridge_point_flops_per_byte(1, float("inf")), "bandwidth_bytes_per_s"),
        (lambda: rl.attainable_flops_per_s(-1, 1, 1), "intensity_flops_per_byte"),
        (lambda: rl.bound_label("x", 1, 1, 1), "flops"),
        (lambda: rl.mfu(1, 1, 0), "elapsed_s"),
        (lambda: rl.mfu(2e12, 1e15, 1e-3), "elapsed_s"),
        (lambda: rl.mbu(10, 1, 1), "elapsed_s"),
        (lambda: rl.mbu(True, 1, 1), "bytes_moved"),
        (lambda: rl.reported_gpu_utilisation([(0, 1)], 0), "window_s"),
        (lambda: rl.reported_gpu_utilisation([(2, 1)], 3), "kernel_intervals_s"),
        (lambda: rl.reported_gpu_utilisation([(0, float("nan"))], 3), "kernel_intervals_s"),
        (lambda: rl.reported_gpu_utilisation([0, 1, 2], 3), "kernel_intervals_s"),
        (lambda: rl.steady_step_timeline_s(2, 1, 10), "busy_s"),
        (lambda: rl.steady_step_timeline_s(0.5, 0, 10), "step_interval_s"),
        (lambda: rl.steady_step_timeline_s(0.5, 1, -1), "window_s"),
    ],
)
def test_rejections_name_the_argument(call, name):
    with pytest.raises(ValueError, match=name):
        call()


def test_reported_utilisation_counts_busy_time_once_and_only_inside_the_window():
    # union of [0, 1] and [0.5, 2] is 2 s, plus [3, 4]: 3 s busy of a 5 s window
    assert rl.reported_gpu_utilisation([(3, 4), (0, 1), (0.5, 2)], 5) == pytest.approx(0.6)
    assert rl.reported_gpu_utilisation([(-1, 1), (1.5, 9)], 2) == pytest.approx(0.75)  # 1 s + 0.5 s of 2 s
    assert rl.reported_gpu_utilisation([], 1) == 0.0
    # one kernel resident all window reads 100%, however little of the chip it uses
    assert rl.reported_gpu_utilisation([(0, 1 / 6)], 1 / 6) == pytest.approx(1.0)


def test_steady_timeline_of_the_chapter_8_run():
    # 10.7 ms of GPU time every 12.1 ms; a 1 s window holds 83 step starts (the last at 0.9922 s),
    # the 83rd cut off at the window's end: 82 * 10.7 ms + 7.8 ms = 885.2 ms busy
    steps = rl.steady_step_timeline_s(10.7e-3, 12.1e-3, 1.0)
    assert len(steps) == 83
    assert rl.reported_gpu_utilisation(steps, 1.0) == pytest.approx(0.8852)
    assert rl.reported_gpu_utilisation(rl.steady_step_timeline_s(5e-3, 5e-3, 1.0), 1.0) == pytest.approx(1.0)
