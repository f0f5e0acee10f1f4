"""Cluster compute, MFU models, power conventions, energy, the Q*F1 sizing argument."""

import numpy as np
import pytest

from aiinfra.cluster import scale


def test_peak_and_realized():
    assert scale.peak_flops_per_s(8, 1e15) == pytest.approx(8e15)
    assert scale.realized_flops_per_s(8, 1e15, 0.5) == pytest.approx(4e15)
    np.testing.assert_allclose(scale.peak_flops_per_s(np.array([1, 2]), 1e15), [1e15, 2e15])


def test_log2_model():
    assert scale.mfu_log2_model(1) == pytest.approx(0.62)
    assert scale.mfu_log2_model(1024) == pytest.approx(0.42)
    g = 2.0 ** np.arange(0, 16)
    assert np.all(np.diff(scale.mfu_log2_model(g)) < 0)


def test_comm_fraction_model_agrees_at_the_ends_and_bends_between():
    assert scale.mfu_comm_fraction_model(1) == pytest.approx(0.62)
    assert scale.mfu_comm_fraction_model(32768) == pytest.approx(0.32)
    assert scale.comm_fraction_of_step(1) == 0.0
    assert scale.comm_fraction_of_step(32768) == pytest.approx(15 * 0.0625 / (1 + 15 * 0.0625))
    # the Amdahl form is convex in log2 G, so between the ends it lies below the straight line
    assert scale.mfu_comm_fraction_model(256) < scale.mfu_log2_model(256)
    # and it never reaches zero where the log2 line would
    assert scale.mfu_comm_fraction_model(2.0**40) > 0


def test_power_conventions():
    assert scale.cluster_power_w(32768, 1400, 1.0, convention="all-in") == pytest.approx(45.8752e6)
    assert scale.cluster_power_w(1000, 700, 1.3) == pytest.approx(910e3)
    with pytest.raises(ValueError, match="twice"):
        scale.cluster_power_w(32768, 1400, 1.3, convention="all-in")


def test_energy_per_token():
    assert scale.energy_per_token_j(700.0, 1000.0) == pytest.approx(0.7)


def test_daily_demand_and_devices():
    assert scale.daily_compute_demand_flops(1e9, 1e12) == pytest.approx(1e21)
    n = scale.devices_for_daily_demand(1e9, 1e12, 1e14, utilization=0.5)
    assert n == pytest.approx(1e21 / (86400 * 0.5e14))


@pytest.mark.parametrize(
    "call, name",
    [
        (lambda: scale.peak_flops_per_s(0, 1), "n_gpus"),
        (lambda: scale.peak_flops_per_s(1, -1), "flops_per_s_per_gpu"),
        (lambda: scale.realized_flops_per_s(1, 1, 1.5), "mfu"),
        (lambda: scale.mfu_log2_model(0.5), "n_gpus"),
        (lambda: scale.mfu_log2_model(2.0**32), "n_gpus"),
        (lambda: scale.mfu_log2_model(8, mfu_at_one=0), "mfu_at_one"),
        (lambda: scale.mfu_log2_model(8, drop_per_doubling=-0.1), "drop_per_doubling"),
        (lambda: scale.mfu_comm_fraction_model(8, mfu_at_one=2), "mfu_at_one"),
        (lambda: scale.mfu_comm_fraction_model(8, comm_per_doubling=-1), "comm_per_doubling"),
        (lambda: scale.comm_fraction_of_step(0), "n_gpus"),
        (lambda: scale.cluster_power_w(1, 0, 1), "watts_per_gpu"),
        (lambda: scale.cluster_power_w(1, 1, 0.9), "pue"),
        (lambda: scale.cluster_power_w(1, 1, 1.2, convention="all-in"), "pue"),
        (lambda: scale.cluster_power_w(1, 1, 1.0, convention="wall"), "convention"),
        (lambda: scale.energy_per_token_j(1, 0), "tokens_per_s"),
        (lambda: scale.cluster_power_w(-1, 1, 1), "n_gpus"),
        (lambda: scale.daily_compute_demand_flops(-1, 1), "requests_per_day"),
        (lambda: scale.devices_for_daily_demand(1, 1, 1, utilization=0), "utilization"),
        (lambda: scale.devices_for_daily_demand(1, 1, 0), "flops_per_s_per_device"),
    ],
)
def test_rejections(call, name):
    with pytest.raises(ValueError, match=name):
        call()
