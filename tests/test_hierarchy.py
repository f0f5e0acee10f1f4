"""Tests for aiinfra.cluster.hierarchy (chapter 6): the Llama 3 cluster levels and power boundaries."""

import pytest

from aiinfra.catalog import hardware
from aiinfra.cluster import hierarchy as h
from aiinfra.cluster import scale


def test_llama3_levels_nest():
    gpus = [lv.gpus for lv in h.LLAMA3_CLUSTER]
    assert gpus == [1, 8, 16, 3072, 24576]
    assert all(b % a == 0 for a, b in zip(gpus, gpus[1:]))


def test_bandwidth_per_gpu_falls_going_up():
    bw = [lv.bytes_per_s_per_gpu for lv in h.LLAMA3_CLUSTER]
    assert bw[1] == 450e9  # NVLink 4, one direction
    assert bw[2] == bw[3] == 50e9  # 400 Gbit/s
    assert bw[4] == pytest.approx(50e9 / 7)
    assert all(a >= b for a, b in zip(bw, bw[1:]))


def test_server_power_and_the_all_in_figure():
    per_gpu = h.watts_per_gpu_at_server(hardware.DGX_H100.max_power_watts, hardware.DGX_H100.n_gpus)
    assert per_gpu == pytest.approx(1275.0)
    # with PUE 1.1 the facility sees ~1.4 kW per GPU: the source's "all-in" figure
    assert scale.cluster_power_w(1, per_gpu, 1.1) == pytest.approx(1402.5)


def test_households():
    assert h.household_average_power_w() == pytest.approx(10_715 * 1000 / 8760)
    assert h.households_equivalent(h.household_average_power_w() * 1000) == pytest.approx(1000)


@pytest.mark.parametrize(
    "call,name",
    [
        (lambda: h.oversubscribed_bandwidth_bytes_per_s(50e9, 0.5), "oversubscription"),
        (lambda: h.oversubscribed_bandwidth_bytes_per_s(0, 2), "bandwidth_bytes_per_s"),
        (lambda: h.watts_per_gpu_at_server(10e3, 0), "gpus_per_server"),
        (lambda: h.household_average_power_w(-1), "household_kwh_per_year"),
        (lambda: h.households_equivalent(-5), "power_w"),
    ],
)
def test_rejections(call, name):
    with pytest.raises(ValueError, match=name):
        call()
