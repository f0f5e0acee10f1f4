"""Chapter 2's chain module: spec conversions, server links, HBM, generations, the 8B request."""
import math

import numpy as np
import pytest
from hypothesis import given
from hypothesis import strategies as st

from aiinfra import chain, hardware, units


# --- spec sheets ---------------------------------------------------------------

def test_per_direction_pins_the_dgx_links():
    assert chain.per_direction_bytes_per_s(900, "GB/s", True) == pytest.approx(450e9)
    assert chain.per_direction_bytes_per_s(400, "Gbit/s", False) == pytest.approx(50e9)
    assert chain.per_direction_bytes_per_s(128, "GB/s", True) == pytest.approx(64e9)
    assert chain.per_direction_bytes_per_s(1.8, "TB/s", True) == pytest.approx(900e9)
    assert chain.per_direction_bytes_per_s(800, "Gbit/s", True) == pytest.approx(50e9)


def test_per_direction_matches_the_catalog():
    for name, value, unit, both in (("nvlink4", 900, "GB/s", True), ("cx7", 400, "Gbit/s", False),
                                     ("pcie5", 128, "GB/s", True), ("nvlink5", 1.8, "TB/s", True)):
        assert chain.per_direction_bytes_per_s(value, unit, both) == pytest.approx(
            hardware.link(name).bytes_per_s_per_direction)


def test_per_direction_arrays():
    out = chain.per_direction_bytes_per_s(np.array([100, 200, 400]), "Gbit/s", False)
    assert out == pytest.approx([12.5e9, 25e9, 50e9])


@pytest.mark.parametrize("kwargs, match", [
    (dict(value=0, unit="GB/s", both_directions=True), "value"),
    (dict(value=-1, unit="GB/s", both_directions=True), "value"),
    (dict(value=1, unit="Gb/s", both_directions=True), "unit"),
    (dict(value=1, unit="GB/s", both_directions="yes"), "both_directions"),
])
def test_per_direction_rejects(kwargs, match):
    with pytest.raises(ValueError, match=match):
        chain.per_direction_bytes_per_s(**kwargs)


def test_misread_factors():
    assert chain.misread_factor(False, False) == 1
    assert chain.misread_factor(False, True) == 2
    assert chain.misread_factor(True, False) == 8
    assert chain.misread_factor(True, True) == 16
    with pytest.raises(ValueError, match="printed_in_bits"):
        chain.misread_factor(1, True)
    with pytest.raises(ValueError, match="printed_both_directions"):
        chain.misread_factor(True, None)


@given(st.floats(1, 1e4), st.booleans(), st.booleans())
def test_misread_factor_is_the_conversion_error(value, bits, both):
    unit = "Gbit/s" if bits else "GB/s"
    naive = value * units.GB  # the printed number read as GB/s per direction
    right = chain.per_direction_bytes_per_s(value, unit, both)
    assert naive / right == pytest.approx(chain.misread_factor(bits, both))


# --- one server ----------------------------------------------------------------

def test_server_links_fastest_first_and_hbm_to_nic():
    links = chain.server_links()
    rates = [x.bytes_per_s_per_direction for x in links]
    assert rates == sorted(rates, reverse=True)
    assert links[0].name.startswith("HBM3")
    assert hardware.ratio(links[0], "cx7") == pytest.approx(67.0)


def test_server_link_table():
    md = chain.server_link_table_markdown()
    lines = md.splitlines()
    assert len(lines) == 2 + len(chain.SERVER_LINK_NAMES)
    assert "3,350.0" in lines[2] and "67.0" in lines[2]
    assert "450.0" in md and "50.0" in md and "307.2" in md
    with pytest.raises(ValueError, match="names"):
        chain.server_link_table_markdown(names="HBM3")
    with pytest.raises(ValueError, match="name must be one of"):
        chain.server_link_table_markdown(reference="token ring")


def test_bottleneck_and_path_time():
    path = ["hbm3", "pcie5", "cx7", "nvlink4"]
    assert chain.bottleneck(path).name == "ConnectX-7 400 Gbit/s"
    # 1 GB through a 50 GB/s bottleneck: 20 ms, plus 4 hops of 2 us
    assert chain.path_transfer_time_s(1e9, path) == pytest.approx(0.02)
    assert chain.path_transfer_time_s(1e9, path, 2e-6) == pytest.approx(0.02 + 8e-6)
    assert chain.bottleneck([hardware.link("nvlink4link"), "pcie5"]).name == "NVLink 4 (one link)"
    with pytest.raises(ValueError, match="path"):
        chain.bottleneck([])
    with pytest.raises(ValueError, match="path"):
        chain.bottleneck("cx7")
    with pytest.raises(ValueError, match="latency_s_per_hop"):
        chain.path_transfer_time_s(1e9, path, -1)


def test_hbm_bus_arithmetic():
    bus = 5 * chain.HBM_BITS_PER_STACK
    assert bus == 5120
    rate = chain.hbm_pin_rate_bits_per_s(hardware.gpu("h100").memory_bandwidth_bytes_per_s, bus)
    assert rate == pytest.approx(5.234375e9)
    assert chain.hbm_bandwidth_bytes_per_s(bus, rate) == pytest.approx(3.35e12)
    assert chain.hbm_bandwidth_bytes_per_s(np.array([1024, 2048]), 8e9) == pytest.approx([1.024e12, 2.048e12])
    with pytest.raises(ValueError, match="bus_width_bits"):
        chain.hbm_bandwidth_bytes_per_s(5120.5, 5e9)
    with pytest.raises(ValueError, match="pin_rate_bits_per_s"):
        chain.hbm_bandwidth_bytes_per_s(5120, 0)
    with pytest.raises(ValueError, match="bandwidth_bytes_per_s"):
        chain.hbm_pin_rate_bits_per_s(-1, 5120)


# --- generations ---------------------------------------------------------------

def test_generations_table():
    gens = chain.generations()
    assert [g.architecture for g in gens] == ["Volta", "Ampere", "Hopper", "Hopper", "Blackwell"]
    md = chain.generations_table_markdown()
    assert "989.4" in md and "| none |" in md and "NVLink 4: 450" in md
    assert len(md.splitlines()) == 2 + len(chain.GENERATION_GPUS)
    with pytest.raises(ValueError, match="names"):
        chain.generations([])
    with pytest.raises(ValueError, match="name must be one of"):
        chain.generations(["Z9000"])


# --- the 8B request, pinned to the source text's numbers (NOTES.md) -----------

def test_worked_request_pins_the_source_numbers():
    r = chain.worked_request()
    assert chain.TEACHING_8B.weight_bytes == pytest.approx(16e9)
    assert r.prefill_flops == pytest.approx(3.2e13)
    assert r.prefill_time_s == pytest.approx(0.064)
    assert r.prefill_compute_s > r.prefill_weight_read_s
    assert r.weight_read_s * 1e3 == pytest.approx(7.6, abs=0.05)
    assert r.decode_compute_s * 1e3 == pytest.approx(0.032)
    assert r.step_time_s * 1e3 == pytest.approx(7.8, abs=0.05)
    assert r.batched_step_time_s * 1e3 == pytest.approx(12.2, abs=0.05)
    assert r.batched_bytes_per_step == pytest.approx(25.6e9)
    assert r.batched_kv_share == pytest.approx(0.375)
    assert r.tokens_per_s_single == pytest.approx(129, abs=0.5)
    assert r.tokens_per_s_batched == pytest.approx(2625, rel=1e-6)
    assert r.throughput_gain == pytest.approx(20.4, abs=0.05)
    assert r.ridge_flops_per_byte == pytest.approx(1000 / 3)
    assert r.prefill_intensity_flops_per_byte == pytest.approx(2000)
    assert r.decode_intensity_flops_per_byte == pytest.approx(0.98, abs=0.01)
    assert r.attention_share_of_2n == pytest.approx(0.016, abs=0.0005)


def test_worked_request_overrides_and_limits():
    one = chain.worked_request(batch=1)
    assert one.throughput_gain == pytest.approx(1.0)
    fast = chain.worked_request(eta_b=1.0, bandwidth_bytes_per_s=3.35e12, kv_bytes_per_request=0.0)
    assert fast.tokens_per_s_single == pytest.approx(3.35e12 / 16e9)
    huge = chain.worked_request(batch=4096, kv_bytes_per_request=0.0)
    # far past the ridge the step is compute-bound: B * 2N / (eta Pi)
    assert huge.batched_step_time_s == pytest.approx(4096 * 16e9 / 0.5e15)
    with pytest.raises(ValueError, match="overrides"):
        chain.worked_request(gpu="h100")
    with pytest.raises(ValueError, match="eta_b"):
        chain.worked_request(eta_b=1.5)
    with pytest.raises(ValueError, match="batch"):
        chain.worked_request(batch=0)
    with pytest.raises(ValueError, match="assumptions"):
        chain.worked_request({"batch": 3})


@given(st.integers(1, 512), st.floats(0.1, 1.0), st.floats(0.0, 1e9))
def test_batching_never_lowers_throughput(batch, eta_b, kv):
    r = chain.worked_request(batch=batch, eta_b=eta_b, kv_bytes_per_request=kv)
    assert r.throughput_gain >= 1 - 1e-9
    assert r.batched_step_time_s >= r.step_time_s - 1e-15
    assert math.isfinite(r.tokens_per_s_batched)


def test_decode_share_of_reply():
    r = chain.worked_request()
    share = chain.decode_share_of_reply(r.prefill_time_s, r.step_time_s, 500)
    assert share == pytest.approx(499 * r.step_time_s / (0.064 + 499 * r.step_time_s))
    assert share > 0.9
    assert chain.decode_share_of_reply(1.0, 1.0, 2) == pytest.approx(0.5)
    assert chain.decode_share_of_reply(1.0, 1.0, np.array([2, 3])) == pytest.approx([0.5, 2 / 3])
    with pytest.raises(ValueError, match="ttft_s"):
        chain.decode_share_of_reply(0.0, 1.0, 10)
    with pytest.raises(ValueError, match="output_tokens"):
        chain.decode_share_of_reply(1.0, 1.0, 0)


def test_scale_up_domains():
    assert chain.domain_bandwidth_bytes_per_s(chain.GB200_NVL72, both_directions=True) == pytest.approx(129.6e12)
    assert chain.domain_bandwidth_bytes_per_s(chain.GB200_NVL72) == pytest.approx(64.8e12)
    assert chain.domain_bandwidth_bytes_per_s(chain.DGX_H100_DOMAIN) == pytest.approx(8 * 450e9)
    assert chain.DGX_H100_DOMAIN.n_gpus == hardware.DGX_H100.n_gpus
    with pytest.raises(ValueError, match="domain"):
        chain.domain_bandwidth_bytes_per_s("NVL72")
    with pytest.raises(ValueError, match="both_directions"):
        chain.domain_bandwidth_bytes_per_s(chain.GB200_NVL72, 1)
    with pytest.raises(ValueError, match="n_gpus"):
        chain.ScaleUpDomain("x", 0, "nvlink4", 0, "s")
    with pytest.raises(ValueError, match="name must be one of"):
        chain.ScaleUpDomain("x", 2, "warp drive", 0, "s")
