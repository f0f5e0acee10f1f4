"""Chapter 2's hardware arithmetic: spec-sheet conversions, one server's links, the memory bus, generations, domains."""

import numpy as np
import pytest
from hypothesis import given
from hypothesis import strategies as st

from aiinfra import memory, units
from aiinfra.book.tables import ch02
from aiinfra.catalog import hardware
from aiinfra.cluster import network

# --- spec sheets ---------------------------------------------------------------


def test_per_direction_pins_the_dgx_links():
    assert network.per_direction_bytes_per_s(900, "GB/s", True) == pytest.approx(450e9)
    assert network.per_direction_bytes_per_s(400, "Gbit/s", False) == pytest.approx(50e9)
    assert network.per_direction_bytes_per_s(128, "GB/s", True) == pytest.approx(64e9)
    assert network.per_direction_bytes_per_s(1.8, "TB/s", True) == pytest.approx(900e9)
    assert network.per_direction_bytes_per_s(800, "Gbit/s", True) == pytest.approx(50e9)


def test_per_direction_matches_the_catalog():
    for name, value, unit, both in (
        ("nvlink4", 900, "GB/s", True),
        ("cx7", 400, "Gbit/s", False),
        ("pcie5", 128, "GB/s", True),
        ("nvlink5", 1.8, "TB/s", True),
    ):
        assert network.per_direction_bytes_per_s(value, unit, both) == pytest.approx(
            hardware.link(name).bytes_per_s_per_direction
        )


def test_per_direction_arrays():
    out = network.per_direction_bytes_per_s(np.array([100, 200, 400]), "Gbit/s", False)
    assert out == pytest.approx([12.5e9, 25e9, 50e9])


@pytest.mark.parametrize(
    "kwargs, match",
    [
        (dict(value=0, unit="GB/s", both_directions=True), "value"),
        (dict(value=-1, unit="GB/s", both_directions=True), "value"),
        (dict(value=1, unit="Gb/s", both_directions=True), "unit"),
        (dict(value=1, unit="GB/s", both_directions="yes"), "both_directions"),
    ],
)
def test_per_direction_rejects(kwargs, match):
    with pytest.raises(ValueError, match=match):
        network.per_direction_bytes_per_s(**kwargs)


def test_misread_factors():
    assert network.misread_factor(False, False) == 1
    assert network.misread_factor(False, True) == 2
    assert network.misread_factor(True, False) == 8
    assert network.misread_factor(True, True) == 16
    with pytest.raises(ValueError, match="printed_in_bits"):
        network.misread_factor(1, True)
    with pytest.raises(ValueError, match="printed_both_directions"):
        network.misread_factor(True, None)


@given(st.floats(1, 1e4), st.booleans(), st.booleans())
def test_misread_factor_is_the_conversion_error(value, bits, both):
    unit = "Gbit/s" if bits else "GB/s"
    naive = value * units.GB  # the printed number read as GB/s per direction
    right = network.per_direction_bytes_per_s(value, unit, both)
    assert naive / right == pytest.approx(network.misread_factor(bits, both))


# --- one server ----------------------------------------------------------------


def test_server_links_fastest_first_and_hbm_to_nic():
    links = hardware.server_links()
    rates = [x.bytes_per_s_per_direction for x in links]
    assert rates == sorted(rates, reverse=True)
    assert links[0].name.startswith("HBM3")
    assert hardware.ratio(links[0], "cx7") == pytest.approx(67.0)


def test_server_link_table():
    md = ch02.server_link_table_markdown()
    lines = md.splitlines()
    assert len(lines) == 2 + len(hardware.server_links())
    assert "3,350.0" in lines[2] and "67.0" in lines[2]
    assert "450.0" in md and "50.0" in md and "307.2" in md
    with pytest.raises(ValueError, match="names"):
        ch02.server_link_table_markdown(names="HBM3")
    with pytest.raises(ValueError, match="name must be one of"):
        ch02.server_link_table_markdown(reference_link="token ring")


def test_bottleneck_and_path_time():
    path = ["hbm3", "pcie5", "cx7", "nvlink4"]
    assert network.bottleneck(path).name == "ConnectX-7 400 Gbit/s"
    # 1 GB through a 50 GB/s bottleneck: 20 ms, plus 4 hops of 2 us
    assert network.path_transfer_time_s(1e9, path) == pytest.approx(0.02)
    assert network.path_transfer_time_s(1e9, path, 2e-6) == pytest.approx(0.02 + 8e-6)
    assert network.bottleneck([hardware.link("nvlink4link"), "pcie5"]).name == "NVLink 4 (one link)"
    with pytest.raises(ValueError, match="path"):
        network.bottleneck([])
    with pytest.raises(ValueError, match="path"):
        network.bottleneck("cx7")
    with pytest.raises(ValueError, match="latency_s_per_hop"):
        network.path_transfer_time_s(1e9, path, -1)


def test_hbm_bus_arithmetic():
    bus = 5 * memory.HBM_BITS_PER_STACK
    assert bus == 5120
    rate = memory.bus_transfer_rate_per_s(hardware.gpu("h100").memory_bandwidth_bytes_per_s, bus)
    assert rate == pytest.approx(5.234375e9)
    assert memory.bus_bandwidth_bytes_per_s(bus, rate) == pytest.approx(3.35e12)
    assert memory.bus_bandwidth_bytes_per_s(np.array([1024, 2048]), 8e9) == pytest.approx(
        [1.024e12, 2.048e12]
    )
    with pytest.raises(ValueError, match="bus_width_bits"):
        memory.bus_bandwidth_bytes_per_s(5120.5, 5e9)
    with pytest.raises(ValueError, match="transfers_per_s"):
        memory.bus_bandwidth_bytes_per_s(5120, 0)
    with pytest.raises(ValueError, match="bandwidth_bytes_per_s"):
        memory.bus_transfer_rate_per_s(-1, 5120)


# --- generations ---------------------------------------------------------------


def test_generations_table():
    gens = hardware.generations()
    assert [g.name for g in gens][:3] == ["V100 SXM2 32GB", "A100 80GB SXM", "H100 SXM"]  # by year
    assert [g.year for g in gens] == sorted(g.year for g in gens)
    md = ch02.generations_table_markdown()
    assert "989.4" in md and "| none |" in md and "NVLink 4: 450" in md
    assert len(md.splitlines()) == 2 + len(hardware.generations())
    with pytest.raises(ValueError, match="names"):
        hardware.generations([])
    with pytest.raises(ValueError, match="name must be one of"):
        hardware.generations(["Z9000"])


def test_scale_up_domains():
    assert network.domain_bandwidth_bytes_per_s(hardware.GB200_NVL72, both_directions=True) == pytest.approx(
        129.6e12
    )
    assert network.domain_bandwidth_bytes_per_s(hardware.GB200_NVL72) == pytest.approx(64.8e12)
    assert network.domain_bandwidth_bytes_per_s(hardware.DGX_H100_DOMAIN) == pytest.approx(8 * 450e9)
    assert hardware.DGX_H100_DOMAIN.n_gpus == hardware.DGX_H100.n_gpus
    with pytest.raises(ValueError, match="domain"):
        network.domain_bandwidth_bytes_per_s("NVL72")
    with pytest.raises(ValueError, match="both_directions"):
        network.domain_bandwidth_bytes_per_s(hardware.GB200_NVL72, 1)
    with pytest.raises(ValueError, match="n_gpus"):
        hardware.ScaleUpDomain("x", 0, "nvlink4", 0, "s")
    with pytest.raises(ValueError, match="name must be one of"):
        hardware.ScaleUpDomain("x", 2, "warp drive", 0, "s")


def test_ddr_channels_on_the_same_bus_formula():
    # DDR5-4800: 64 bits x 4.8e9 transfers/s = 38.4 GB/s per channel, 307.2 GB/s for a Xeon 8480C's eight
    assert memory.bus_bandwidth_bytes_per_s(memory.DDR_BITS_PER_CHANNEL, 4.8e9) == pytest.approx(38.4e9)
    assert memory.bus_bandwidth_bytes_per_s(8 * memory.DDR_BITS_PER_CHANNEL, 4.8e9) == pytest.approx(
        hardware.link("ddr5").bytes_per_s_per_direction
    )
