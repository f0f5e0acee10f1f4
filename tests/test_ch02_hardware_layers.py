"""Chapter 2's hardware layers: the TPU's matrix unit, dies on a wafer, MIG instances, launch overhead,
the NVLink domains' quoted figures and the labelled formula display.

Pinned values come from the cited documents or are worked by hand in the comments (never copied
from the code's output): Jouppi et al. 2017 for TPU v1, the H100 whitepaper V1.04 for GH100 and
NVLink 4, the Blackwell technical brief for NVL72, the MIG user guide, Gray 2019 for CUDA graphs,
and the research notes' independent dies-per-wafer and yield table (research-18, section 4b).
"""

from __future__ import annotations

import math

import pytest
from hypothesis import given
from hypothesis import strategies as st

from aiinfra import decode, measure, roofline, units
from aiinfra.book.glue import formula_md
from aiinfra.catalog import hardware, reference
from aiinfra.cluster import hierarchy
from aiinfra.cluster.network import domain_bandwidth_bytes_per_s
from aiinfra.deployment import Deployment

# --- units ---------------------------------------------------------------------------


def test_area_units_and_flops_per_mac():
    assert 814 * units.mm2 == pytest.approx(8.14 * units.cm2)  # 814 mm^2 = 8.14 cm^2
    assert units.cm2 == pytest.approx(100 * units.mm2)
    assert units.FLOPS_PER_MAC == 2  # one multiply + one add


# --- TPU v1: the systolic array -------------------------------------------------------


def test_tpu_v1_peak_is_the_papers_92_tops():
    # 256 x 256 cells x 2 FLOPs x 700e6 /s = 65,536 x 1.4e9 = 9.17504e13 (Jouppi 2017 rounds to 92 TOPS)
    tpu = reference.TPU_V1
    assert tpu.peak_flops_per_s == pytest.approx(9.17504e13, rel=1e-12)
    assert tpu.peak_flops_per_s == pytest.approx(tpu.reported_peak_ops_per_s, rel=0.005)
    assert tpu.macs == 65_536


def test_tpu_ridge_in_macs_is_the_critical_batch_of_8_bit_weights():
    # The paper's ridge (~1,350) counts MACs per weight byte: 65,536 x 700e6 / 34e9 = 1,349.27.
    # With 1-byte weights it is the batch at which a fully connected layer turns compute-bound,
    # b_W Pi / (2 beta); the FLOP ridge Pi / beta is twice as large (2,698.5).
    tpu = reference.TPU_V1
    bw = tpu.weight_memory_bandwidth_bytes_per_s
    b_star = decode.critical_batch_size(units.bytes_from_bits(tpu.bits_per_weight), tpu.peak_flops_per_s, bw)
    assert b_star == pytest.approx(65_536 * 700e6 / 34e9, rel=1e-12)
    assert b_star == pytest.approx(tpu.reported_ridge_macs_per_byte, rel=0.001)
    assert roofline.ridge_point_flops_per_byte(tpu.peak_flops_per_s, bw) == pytest.approx(
        units.FLOPS_PER_MAC * tpu.reported_ridge_macs_per_byte, rel=0.001
    )


@pytest.mark.parametrize(
    "kwargs",
    [
        dict(rows=0, cols=256, clock_hz=7e8),
        dict(rows=256, cols=2.5, clock_hz=7e8),
        dict(rows=256, cols=256, clock_hz=0.0),
        dict(rows=256, cols=256, clock_hz=-1.0),
    ],
)
def test_mac_array_peak_rejects_bad_input(kwargs):
    with pytest.raises(ValueError, match=next(k for k, v in kwargs.items() if v in (0, 2.5, 0.0, -1.0))):
        roofline.mac_array_peak_flops_per_s(**kwargs)


# --- the die and the wafer --------------------------------------------------------------


@pytest.mark.parametrize("area_mm2, expected", [(814, 63.5), (858, 59.6), (400, 143.4), (100, 640.2)])
def test_gross_dies_per_300mm_wafer(area_mm2, expected):
    # research-18 section 4b: pi 150^2 / A - pi 300 / sqrt(2 A), in mm, computed independently
    assert hierarchy.gross_dies_per_wafer(area_mm2 * units.mm2) == pytest.approx(expected, abs=0.05)


@pytest.mark.parametrize(
    "d0_per_cm2, poisson, murphy", [(0.07, 0.566, 0.581), (0.10, 0.443, 0.468), (0.11, 0.408, 0.437)]
)
def test_gh100_yield_models(d0_per_cm2, poisson, murphy):
    # research-18 section 4b, GH100 (A = 8.14 cm^2): exp(-A D0) and ((1 - exp(-A D0)) / (A D0))^2
    area, d0 = reference.GH100.area_m2, d0_per_cm2 / units.cm2
    assert hierarchy.poisson_die_yield(area, d0) == pytest.approx(poisson, abs=0.0006)
    assert hierarchy.murphy_die_yield(area, d0) == pytest.approx(murphy, abs=0.0006)
    assert hierarchy.good_dies_per_wafer(area, d0) == pytest.approx(
        hierarchy.gross_dies_per_wafer(area) * murphy, rel=0.002
    )


def test_gh100_is_the_whitepaper_die():
    die = reference.GH100
    assert die.area_m2 == pytest.approx(814e-6)
    assert die.enabled_of_built["SMs"] == (132, 144)
    assert die.enabled_of_built["HBM3 stack sites"] == (hardware.gpu("H100 SXM").hbm_stacks, 6)


def test_a_die_larger_than_the_wafer_formula_allows_gives_no_dies():
    assert hierarchy.gross_dies_per_wafer(0.05) == 0.0  # a 500 cm^2 "die" on a 300 mm wafer


@pytest.mark.parametrize(
    "call, arg",
    [
        (lambda: hierarchy.gross_dies_per_wafer(0.0), "die_area_m2"),
        (lambda: hierarchy.gross_dies_per_wafer(1e-4, wafer_diameter_m=-0.3), "wafer_diameter_m"),
        (lambda: hierarchy.poisson_die_yield(1e-4, -1.0), "defects_per_m2"),
        (lambda: hierarchy.murphy_die_yield(1e-4, 0.0), "defects_per_m2"),
        (lambda: hierarchy.good_dies_per_wafer(float("nan"), 1e3), "die_area_m2"),
    ],
)
def test_wafer_formulas_reject_bad_input(call, arg):
    with pytest.raises(ValueError, match=arg):
        call()


@given(area=st.floats(1e-6, 1e-3), d0=st.floats(1.0, 1e4))
def test_murphy_is_never_below_poisson_and_both_are_shares(area, d0):
    p, m = hierarchy.poisson_die_yield(area, d0), hierarchy.murphy_die_yield(area, d0)
    assert 0.0 < p <= m <= 1.0 + 1e-12


@given(area=st.floats(1e-5, 5e-4), d0=st.floats(10.0, 5e3))
def test_splitting_a_die_in_two_raises_the_share_of_good_silicon(area, d0):
    assert hierarchy.murphy_die_yield(area / 2, d0) > hierarchy.murphy_die_yield(area, d0)


# --- MIG ----------------------------------------------------------------------------------


def test_mig_1g_10gb_slice_of_an_h100():
    # 1/8 of 80 GB and of 3.35 TB/s, 1/7 of 989.4 TFLOP/s dense BF16 (nominal shares, MIG user guide)
    s = hardware.mig_instance("H100 SXM", "1g.10gb")
    assert s.memory_bytes == pytest.approx(10e9)
    assert s.memory_bandwidth_bytes_per_s == pytest.approx(3.35e12 / 8)
    assert s.bf16_dense_flops_per_s == pytest.approx(989.4e12 / 7, rel=1e-3)
    assert hardware.gpu("H100 SXM").mig_profile("1g.10gb").max_instances == 7
    assert "Multi-Instance GPU" in s.sources["memory_bytes"]


def test_mig_full_profile_is_the_whole_gpu():
    whole, full = hardware.gpu("H100 SXM"), hardware.mig_instance("H100 SXM", "7g.80gb")
    assert full.memory_bytes == pytest.approx(whole.memory_bytes)
    assert full.bf16_dense_flops_per_s == pytest.approx(whole.bf16_dense_flops_per_s)


@pytest.mark.parametrize(
    "gpu, profile, arg", [("B200", "1g.10gb", "base"), ("H100 SXM", "1g.5gb", "profile")]
)
def test_mig_instance_rejects_unknown_gpu_or_profile(gpu, profile, arg):
    with pytest.raises(ValueError, match=arg):
        hardware.mig_instance(gpu, profile)


def test_seven_mig_slices_serve_fewer_tokens_than_one_batch_of_seven():
    # Each slice reads its own copy of the weights at 1/8 of the bandwidth; one engine reads one copy for all.
    ctx = 4096
    full = Deployment("Llama-3.2-3B", "H100 SXM")
    piece = Deployment("Llama-3.2-3B", hardware.mig_instance("H100 SXM", "1g.10gb"))
    n = hardware.gpu("H100 SXM").mig_profile("1g.10gb").max_instances
    sliced = decode.tokens_per_s_aggregate(n, piece.step(1, ctx).time_s)
    assert sliced < full.step(1, ctx).tokens_per_s < full.step(n, ctx).tokens_per_s


# --- launch overhead ----------------------------------------------------------------------


@pytest.mark.parametrize("mode, extra_us", [("synchronized", 6.7), ("stream", 0.9), ("graph", 0.5)])
def test_launch_overhead_per_kernel(mode, extra_us):
    # Gray 2019: a 2.9 us kernel costs 9.6, 3.8 and 3.4 us per kernel; the excess is 6.7, 0.9 and 0.5 us
    assert reference.CUDA_GRAPHS_V100.overhead_s(mode) == pytest.approx(extra_us * units.us)


def test_launch_overhead_rejects_an_unknown_mode():
    with pytest.raises(ValueError, match="mode"):
        reference.CUDA_GRAPHS_V100.overhead_s("eager")


def test_mps_client_limits():
    assert reference.MPS_MAX_CLIENTS["Volta and later (CUDA 13.0 and earlier)"] == 48


# --- NVLink domains -------------------------------------------------------------------------


def test_nvl72_quote_is_a_rounding_of_our_product():
    # NVIDIA quotes 130 TB/s; 72 GPUs x 1.8 TB/s (both directions) = 129.6 TB/s is the product
    nvl72 = hardware.GB200_NVL72
    ours = domain_bandwidth_bytes_per_s(nvl72, both_directions=True)
    assert ours == pytest.approx(129.6e12)
    assert nvl72.quoted_bytes_per_s == 130e12
    assert hardware.DGX_H100_DOMAIN.quoted_bytes_per_s == pytest.approx(
        domain_bandwidth_bytes_per_s(hardware.DGX_H100_DOMAIN, both_directions=True)
    )  # 8 x 900 GB/s = 7.2 TB/s


def test_nvlink4_is_18_links_of_25_gb_s_per_direction():
    per_gpu, one = hardware.link("nvlink4"), hardware.link("nvlink4link")
    assert one.bytes_per_s_per_direction == 25e9
    assert per_gpu.bytes_per_s_per_direction / one.bytes_per_s_per_direction == pytest.approx(18)
    assert "lane" not in hardware.link("NVLink 4 (one link)").joins.split("(")[0]


def test_scale_up_domain_rejects_a_negative_quote():
    with pytest.raises(ValueError, match="quoted_bytes_per_s"):
        hardware.ScaleUpDomain("x", 8, "nvlink4", 0, "a source", quoted_bytes_per_s=-1.0)


# --- the labelled formula display -------------------------------------------------------------


def test_formula_md_labels_the_twin_in_the_books_notation():
    text = formula_md(decode.critical_batch_size, "B^*", "the critical batch").data
    assert text.startswith(
        "The library's formula for the critical batch (`aiinfra.decode.critical_batch_size`)"
    )
    assert "$$\nB^* = " in text
    assert r"\eta_F" in text and r"\eta_{F}" not in text  # the notation table's LaTeX, not sympy's default


def test_formula_md_rejects_a_plain_function():
    with pytest.raises(ValueError, match="formula"):
        formula_md(math.sqrt, "x", "a square root")


# --- small formulas the chapter-1 and chapter-2 pages call ---------------------------------------


def test_latency_share_of_a_transfer():
    # 10 us fixed cost: 4 KiB at 50 GB/s takes 10 + 0.08192 us (share 0.9919); 1 GB takes 10 us + 20 ms (share 0.0005)
    from aiinfra.cluster import network

    assert network.latency_share_of_transfer(4096, 50e9, 10e-6) == pytest.approx(10 / 10.08192, rel=1e-9)
    assert network.latency_share_of_transfer(1e9, 50e9, 10e-6) == pytest.approx(10e-6 / 0.02001, rel=1e-9)
    with pytest.raises(ValueError, match="latency_s"):
        network.latency_share_of_transfer(1e9, 50e9, 0.0)


def test_sparse_peak_is_the_h100_headline():
    # H100 SXM BF16: 989.4 dense, 1,979 (rounded) sparse TFLOP/s (NOTES, the H100 datasheet)
    assert roofline.sparse_peak_flops_per_s(989.4e12) == pytest.approx(1979e12, rel=1e-3)
    with pytest.raises(ValueError, match="flops_per_s"):
        roofline.sparse_peak_flops_per_s(0.0)


def test_hbm_bus_width_of_the_h100():
    from aiinfra import memory

    assert memory.hbm_bus_width_bits(hardware.gpu("H100 SXM").hbm_stacks) == 5120  # 10 x 512-bit controllers
    with pytest.raises(ValueError, match="stacks"):
        memory.hbm_bus_width_bits(0)


def test_expected_defects_per_gh100():
    assert hierarchy.expected_defects_per_die(reference.GH100.area_m2, 0.10 / units.cm2) == pytest.approx(
        0.814
    )


def test_host_share_of_the_chapter1_gap():
    # (26.5 - 10.7) / (26.5 - 8.62) = 15.8 / 17.88 = 0.8837
    rec = reference.QWEN3_8B_RTX_PRO_6000
    gpu = rec.followups_s["gpu_step_time"]
    assert measure.host_share_of_gap(rec.tpot(1), gpu, 8.62e-3) == pytest.approx(15.8 / 17.88, rel=1e-9)
    with pytest.raises(ValueError, match="bound_s"):
        measure.host_share_of_gap(rec.tpot(1), gpu, 30e-3)


# --- the chapter tables ------------------------------------------------------------------------------


def test_request_needs_and_traffic_tables():
    from aiinfra import memory
    from aiinfra.book.tables import ch01

    d = Deployment("Qwen3-8B", "H100 SXM")
    text = ch01.request_needs_markdown(d, 2048, 2048)
    assert "16.38 GB" in text and "144 KiB" in text and "15.14 GB" in text and "29.69 TFLOPs" in text  # NOTES
    t = memory.request_traffic(d.weight_bytes, d.weight_bytes_read, d.kv_bytes_per_token, 4096, 2048, 100)
    assert "100 output tokens" in ch01.request_traffic_markdown("x", [t])
    with pytest.raises(ValueError, match="traffics"):
        ch01.request_traffic_markdown("x", [])


def test_step_batch_and_floor_tables_show_the_worked_request():
    from aiinfra.book.tables import ch01, ch02
    from aiinfra.deployment import TEACHING_8B as t8
    from aiinfra.deployment import TEACHING_BATCH as b
    from aiinfra.deployment import TEACHING_PROMPT_TOKENS as p

    text = ch02.batch_comparison_markdown(t8.step(1, p), t8.step(b, p))
    assert "7.8 ms" in text and "12.2 ms" in text and "129" in text  # NOTES: the worked 8B request
    changes = ch01.step_changes_markdown({"Baseline": t8.step(1, p)})
    assert "7.76 ms" in changes  # 16.3 GB / 2.1 TB/s
    floor = ch02.decode_floor_markdown([("H100", 16e9, 3.35e12)])
    assert "4.78 ms" in floor and "209" in floor  # 16 GB / 3.35 TB/s
    assert "20.00 ms" in ch02.link_transfer_markdown(1e9, [hardware.link("cx7")])  # 1 GB at 50 GB/s
    with pytest.raises(ValueError, match="size_bytes"):
        ch02.link_transfer_markdown(0.0)


def test_new_chapter2_tables():
    from aiinfra.book.tables import ch02

    launch = ch02.launch_overhead_markdown(
        {"Qwen3-8B": Deployment("Qwen3-8B", "H100 SXM")}, 12, reference.CUDA_GRAPHS_V100, 2048
    )
    assert launch.count("Qwen3-8B") == 3 and "432" in launch  # 12 kernels x 36 layers
    with pytest.raises(ValueError, match="kernels_per_layer"):
        ch02.launch_overhead_markdown({}, 0, reference.CUDA_GRAPHS_V100, 2048)
    mig = ch02.mig_profiles_markdown()
    assert "| 1g.10gb | 1 of 7 | 1 of 8 | 10 GB |" in mig
    dies = ch02.die_yield_markdown(reference.GH100, {"N5": 0.10 / units.cm2})
    assert "44%" in dies and "47%" in dies  # research-18 section 4b
    tpu = ch02.systolic_batch_markdown(reference.TPU_V1, [1, 2048])
    assert "| 1 | 1 |" in tpu and "100.0%" in tpu
