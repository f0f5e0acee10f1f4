"""Links and collectives."""

import numpy as np
import pytest

from aiinfra import units
from aiinfra.cluster import network as net


def test_transfer_time():
    assert net.transfer_time_s(1e9, 50e9) == pytest.approx(0.02)
    assert net.transfer_time_s(1e9, 50e9, latency_s=5e-6) == pytest.approx(0.020005)
    assert net.transfer_time_s(0, 50e9, latency_s=5e-6) == pytest.approx(5e-6)


def test_direction_conversions_round_trip():
    assert net.per_direction_bytes_per_s(900, "GB/s", both_directions=True) == pytest.approx(450e9)
    assert net.per_direction_bytes_per_s(128, "GB/s", both_directions=True) == pytest.approx(64e9)
    assert net.bidirectional_from_per_direction(
        net.per_direction_bytes_per_s(7.0, "GB/s", True)
    ) == pytest.approx(7e9)
    assert units.bytes_from_bits(400e9) == pytest.approx(50e9)


def test_ring_allreduce():
    assert net.ring_allreduce_time_s(1e9, 1, 100e9, 1e-5) == 0.0
    # 2 ranks: each sends half the message twice -> S / BW
    assert net.ring_allreduce_time_s(1e9, 2, 100e9) == pytest.approx(0.01)
    t = net.ring_allreduce_time_s(8e9, 8, 450e9, latency_s=3e-6)
    assert t == pytest.approx(2 * 7 / 8 * 8e9 / 450e9 + 14 * 3e-6)
    # large N: approaches 2 S / BW
    assert net.ring_allreduce_time_s(1e9, 10_000, 1e9) == pytest.approx(2.0, rel=1e-3)


def test_bus_and_algorithm_bandwidth():
    t = net.ring_allreduce_time_s(1e9, 8, 100e9)
    algbw = net.algorithm_bandwidth_bytes_per_s(1e9, t)
    # an ideal ring's bus bandwidth equals the link rate
    assert net.bus_bandwidth_bytes_per_s(algbw, 8) == pytest.approx(100e9)
    assert net.bus_bandwidth_factor(8, "all_gather") == pytest.approx(7 / 8)
    assert net.bus_bandwidth_factor(8, "broadcast") == 1.0
    np.testing.assert_allclose(net.bus_bandwidth_factor(np.array([2, 4]), "all_reduce"), [1.0, 1.5])


def test_packets_and_cores():
    pps = net.packets_per_s(40e9)
    assert pps == pytest.approx(40e9 / (84 * 8))
    assert net.cores_needed(pps, 20e6) == 3
    assert net.cores_needed(pps, 10e6) == 6
    assert net.cores_needed(30e6, 10e6) == 3  # exact ratio does not round up
    assert net.packets_per_s(40e9, frame_bytes_on_wire=1538) < pps


@pytest.mark.parametrize(
    "call, name",
    [
        (lambda: net.transfer_time_s(-1, 1), "size_bytes"),
        (lambda: net.transfer_time_s(1, 0), "bandwidth_bytes_per_s"),
        (lambda: net.transfer_time_s(1, 1, latency_s=-1), "latency_s"),
        (lambda: net.bidirectional_from_per_direction(-2), "per_direction_bytes_per_s"),
        (lambda: units.bytes_from_bits(float("inf")), "bits"),
        (lambda: net.ring_allreduce_time_s(1, 0, 1), "n_ranks"),
        (lambda: net.ring_allreduce_time_s(1, 2.5, 1), "n_ranks"),
        (lambda: net.ring_allreduce_time_s(1, 2, 1, latency_s=-1), "latency_s"),
        (lambda: net.algorithm_bandwidth_bytes_per_s(1, 0), "elapsed_s"),
        (lambda: net.bus_bandwidth_bytes_per_s(1, 4, collective="all_sum"), "collective"),
        (lambda: net.bus_bandwidth_bytes_per_s(-1, 4), "algorithm_bytes_per_s"),
        (lambda: net.bus_bandwidth_bytes_per_s(1, 0), "n_ranks"),
        (lambda: net.bus_bandwidth_factor(-2), "n_ranks"),
        (lambda: net.packets_per_s(0), "link_bits_per_s"),
        (lambda: net.packets_per_s(1e9, frame_bytes_on_wire=0), "frame_bytes_on_wire"),
        (lambda: net.cores_needed(1, 0), "packets_per_s_per_core"),
        (lambda: net.cores_needed(-1, 1), "packets_per_s"),
    ],
)
def test_rejections(call, name):
    with pytest.raises(ValueError, match=name):
        call()
