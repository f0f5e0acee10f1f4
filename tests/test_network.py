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


# --- the all-reduce an engine runs, per regime, against the measurements it was read from ---------


def test_one_shot_all_reduce_matches_sglangs_small_message_measurements():
    # SGLang PR #2904, H100 TP=8 custom all-reduce: 5.9 us at 512 B and 7.8 us at 32 KiB.
    assert net.tp_allreduce_time_s(512, 8, 450e9) == pytest.approx(5.9e-6, rel=0.05)
    assert net.tp_allreduce_time_s(32 * 1024, 8, 450e9) == pytest.approx(7.8e-6, rel=0.25)
    assert net.fastest_allreduce_regime(32 * 1024, 8, 450e9) == "one_shot"


def test_large_all_reduces_go_to_the_nccl_ring_at_the_measured_bus_bandwidth():
    # vLLM PR #42324: pynccl 316 us for 64 MiB over 8 ranks (bus bandwidth 372 GB/s).
    size = 64 * 2**20
    assert net.fastest_allreduce_regime(size, 8, 450e9) == "nccl_ring"
    assert net.tp_allreduce_time_s(size, 8, 450e9) == pytest.approx(316e-6, rel=0.1)


def test_mid_sizes_use_nvls_at_tp6_as_measured():
    # vLLM PR #24111, H100 TP=6: symm_mem_multimem 31 us at 4 MB, the fastest of the five there.
    assert net.fastest_allreduce_regime(4e6, 6, 450e9) == "nvls"
    assert net.tp_allreduce_time_s(4e6, 6, 450e9) == pytest.approx(31e-6, rel=0.15)


def test_without_a_switch_only_the_ring_is_left_and_one_rank_costs_nothing():
    assert net.fastest_allreduce_regime(512, 2, 64e9, switched=False) == "nccl_ring"
    assert net.tp_allreduce_time_s(512, 1, 450e9) == 0.0
    assert net.fastest_allreduce_regime(512, 1, 450e9) == "none"


def test_each_regime_is_a_latency_plus_its_bytes_over_the_achieved_link():
    # two-shot over 4 ranks: t_AR + 2 (n-1)/n S / (eta beta) = 12 us + 1.5 x 1e6 / (0.59 x 450e9)
    expected = 12e-6 + 1.5 * 1e6 / (0.59 * 450e9)
    assert net.regime_allreduce_time_s(1e6, 4, 450e9, "two_shot") == pytest.approx(expected, rel=1e-12)
    # one-shot: every rank reads its n - 1 peers' whole buffers
    expected = 5.9e-6 + 3 * 1e6 / (0.68 * 450e9)
    assert net.regime_allreduce_time_s(1e6, 4, 450e9, "one_shot") == pytest.approx(expected, rel=1e-12)


def test_every_regime_cites_its_measurement():
    for r in net.ALLREDUCE_REGIMES.values():
        assert "PR #" in r.source and ("H100" in r.source or "SM 9.0" in r.source)


@pytest.mark.parametrize(
    "kw, name",
    [
        ({"regime": "butterfly"}, "regime"),
        ({"n_ranks": 0}, "n_ranks"),
        ({"size_bytes": -1}, "size_bytes"),
    ],
)
def test_regime_time_rejects_nonsense(kw, name):
    args = {"size_bytes": 1024, "n_ranks": 8, "link_bytes_per_s": 450e9, "regime": "one_shot", **kw}
    with pytest.raises(ValueError, match=name):
        net.regime_allreduce_time_s(**args)


@pytest.mark.parametrize(
    "kw, name",
    [
        ({"latency_s": -1e-6}, "latency_s"),
        ({"link_fraction": 0.0}, "link_fraction"),
        ({"bytes_factor": "x"}, "bytes_factor"),
    ],
)
def test_a_regime_record_rejects_nonsense(kw, name):
    args = dict(
        name="r", latency_s=1e-6, link_fraction=0.5, bytes_factor="ring", needs_switch=False, source="s"
    )
    with pytest.raises(ValueError, match=name):
        net.AllReduceRegime(**{**args, **kw})
