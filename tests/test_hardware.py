import copy
import dataclasses
import pickle

import pytest

from aiinfra.catalog import hardware
from aiinfra.units import GB, TB


def test_catalog_covers_volta_to_blackwell():
    names = {g.name for g in hardware.catalog()}
    assert {
        "RTX 4090",
        "RTX A6000",
        "A100 80GB SXM",
        "H100 SXM",
        "H200 SXM",
        "B200",
        "RTX PRO 6000 Blackwell Workstation",
        "L40S",
        "MI300X",
        "V100 SXM2 32GB",
    } <= names
    years = [g.year for g in hardware.catalog()]
    assert years == sorted(years)
    assert {g.architecture for g in hardware.catalog()} >= {"Volta", "Ampere", "Hopper", "Blackwell"}


@pytest.mark.parametrize(
    "name,mem_gb,bw_tb,bf16_tflops",
    [
        ("H100 SXM", 80, 3.35, 989.4),
        ("A100 80GB SXM", 80, 2.039, 312),
        ("RTX 4090", 24, 1.008, 165.2),
        ("RTX PRO 6000 Blackwell Workstation", 96, 1.792, 503.8),
    ],
)
def test_source_text_values(name, mem_gb, bw_tb, bf16_tflops):
    g = hardware.gpu(name)
    assert g.memory_bytes == mem_gb * GB
    assert g.memory_bandwidth_bytes_per_s == pytest.approx(bw_tb * TB)
    assert g.bf16_dense_flops_per_s == pytest.approx(bf16_tflops * 1e12)


def test_h100_is_dense_not_sparse_and_has_the_right_ridge():
    h = hardware.gpu("h100")
    assert h.bf16_dense_flops_per_s == 989.4e12  # 1,979 is the 2:4 sparse figure
    assert "1,979" in h.sources["bf16_dense_flops_per_s"]
    assert round(h.ridge_flops_per_byte) == 295
    assert h.scaleup_bytes_per_s_per_direction == 450e9


@pytest.mark.parametrize("g", hardware.catalog(), ids=lambda g: g.name)
def test_every_spec_is_sourced_and_sane(g):
    for f in (
        "memory_bytes",
        "memory_bandwidth_bytes_per_s",
        "scaleup_bytes_per_s_per_direction",
        "tdp_watts",
    ):
        assert g.sources.get(f), f"{g.name}: no source for {f}"
    peak = g.bf16_dense_flops_per_s or g.fp16_dense_flops_per_s
    assert 1e13 < peak < 1e16
    assert 1e10 < g.memory_bandwidth_bytes_per_s < 1e14
    if g.fp8_dense_flops_per_s is not None:
        # FP8 runs at twice the BF16 rate (the L40S datasheet's 733 vs 362.05 is 1.2% off exact 2x)
        assert g.fp8_dense_flops_per_s == pytest.approx(2 * g.bf16_dense_flops_per_s, rel=0.015)
    assert g.dense_flops_per_s("fp16") == peak
    with pytest.raises(TypeError):
        g.sources["memory_bytes"] = "edited"  # read-only


def test_unsupported_formats_are_none_and_refused():
    v100 = hardware.gpu("V100")
    assert v100.bf16_dense_flops_per_s is None and v100.fp8_dense_flops_per_s is None
    assert v100.dense_flops_per_s("fp16") == 125e12
    with pytest.raises(ValueError, match="bf16"):
        v100.dense_flops_per_s("bf16")
    with pytest.raises(ValueError, match="fp8"):
        hardware.gpu("a100").dense_flops_per_s("fp8")
    with pytest.raises(ValueError, match="precision"):
        hardware.gpu("h100").dense_flops_per_s("int4")


def test_pcie_cards_scale_up_over_pcie():
    assert hardware.gpu("rtx 4090").scaleup_link.startswith("PCIe")
    assert (
        hardware.gpu("RTX-PRO-6000").scaleup_bytes_per_s_per_direction
        == hardware.link("pcie5").bytes_per_s_per_direction
    )


@pytest.mark.parametrize("spelling", ["H100 SXM", "h100", "H100-SXM", "h100_sxm", "  H100sxm  "])
def test_lookup_spellings(spelling):
    assert hardware.gpu(spelling).name == "H100 SXM"


@pytest.mark.parametrize("bad", ["H101", ""])
def test_unknown_gpu_lists_the_catalog(bad):
    with pytest.raises(ValueError, match="H100 SXM"):
        hardware.gpu(bad)


@pytest.mark.parametrize("bad", [None, 100, ["h100"]])
def test_gpu_name_must_be_text(bad):
    with pytest.raises(ValueError, match="name"):
        hardware.gpu(bad)


def test_links_per_direction():
    assert hardware.link("nvlink4").bytes_per_s_per_direction == 450e9
    assert hardware.link("NVLink 4 (one link)").bytes_per_s_per_direction == 25e9
    assert hardware.link("pcie5").bytes_per_s_per_direction == 64e9
    assert "NOT removed" in hardware.link("pcie5").notes
    assert hardware.link("pcie4").bytes_per_s_per_direction == 32e9
    assert hardware.link("cx7").bytes_per_s_per_direction == 50e9
    assert hardware.link("ndr").bytes_per_s_per_direction == 50e9
    assert hardware.link("ddr5").bytes_per_s_per_direction == 307.2e9
    assert hardware.link("nvlink5").bytes_per_s_per_direction == 900e9
    for x in hardware.links():
        assert x.source and x.raw_spec
        if x.bidirectional_in_spec:
            assert x.full_duplex


def test_hbm_to_nic_is_about_67x():
    assert hardware.ratio("hbm3", "connectx7") == pytest.approx(67)
    assert hardware.ratio(hardware.gpu("h100"), "cx7") == pytest.approx(67)
    with pytest.raises(ValueError):
        hardware.ratio(3, "cx7")


@pytest.mark.parametrize("bad", ["nvlink9", ""])
def test_unknown_link(bad):
    with pytest.raises(ValueError, match="NVLink 4"):
        hardware.link(bad)
    with pytest.raises(ValueError, match="name"):
        hardware.link(None)


def test_dgx_h100():
    d = hardware.DGX_H100
    assert (d.n_gpus, d.n_compute_nics, d.n_cpu_sockets, d.cpu_cores_per_socket) == (8, 8, 2, 56)
    assert d.gpu is hardware.gpu("H100 SXM")
    assert d.gpu_memory_bytes == 640 * GB
    assert d.scaleout_bytes_per_s_per_direction == 400 * GB
    assert d.system_memory_bytes == 2 * TB
    assert "User Guide" in d.source
    rates = [x.bytes_per_s_per_direction for x in d.internal_links]
    assert rates == sorted(rates, reverse=True)
    assert rates == [3.35e12, 450e9, 307.2e9, 64e9, 50e9]
    assert rates[0] / rates[-1] == pytest.approx(67)


def test_custom_gpu():
    g = hardware.custom_gpu(
        name="Toy",
        vendor="Acme",
        architecture="Test",
        year=2030,
        memory_bytes=10 * GB,
        memory_bandwidth_bytes_per_s=1 * TB,
        bf16_dense_flops_per_s=1e14,
        fp8_dense_flops_per_s=None,
        scaleup_link="PCIe Gen5 x16",
        scaleup_bytes_per_s_per_direction=64e9,
        tdp_watts=100,
        form_factor="card",
    )
    assert g.sources["memory_bytes"] == "user-supplied"
    h = hardware.custom_gpu(base="h100", memory_bytes=94 * GB)
    assert h.memory_bytes == 94 * GB and h.memory_bandwidth_bytes_per_s == 3.35e12
    assert h.sources["memory_bytes"] == "user-supplied"
    assert "whitepaper" in h.sources["memory_bandwidth_bytes_per_s"]


@pytest.mark.parametrize(
    "change,name",
    [
        ({"memory_bytes": -1}, "memory_bytes"),
        ({"memory_bytes": 0}, "memory_bytes"),
        ({"memory_bandwidth_bytes_per_s": float("nan")}, "memory_bandwidth_bytes_per_s"),
        ({"tdp_watts": float("inf")}, "tdp_watts"),
        ({"tdp_watts": True}, "tdp_watts"),
        ({"bf16_dense_flops_per_s": "989"}, "bf16_dense_flops_per_s"),
        ({"year": 1800}, "year"),
        ({"year": 2022.5}, "year"),
        ({"name": ""}, "name"),
        ({"sources": {"colour": "x"}}, "sources"),
        ({"fp8_dense_flops_per_s": -1}, "fp8_dense_flops_per_s"),
    ],
)
def test_custom_gpu_validates(change, name):
    with pytest.raises(ValueError, match=name):
        hardware.custom_gpu(base="h100", **change)


def test_custom_gpu_refuses_unknown_and_missing_fields():
    with pytest.raises(ValueError, match="colour"):
        hardware.custom_gpu(base="h100", colour="green")
    with pytest.raises(ValueError, match="colour"):
        hardware.custom_gpu(name="x", colour="green")
    with pytest.raises(ValueError, match="memory_bytes"):
        hardware.custom_gpu(name="x")


def test_gpu_and_link_are_frozen():
    with pytest.raises(dataclasses.FrozenInstanceError):
        hardware.gpu("h100").memory_bytes = 1
    with pytest.raises(ValueError, match="bytes_per_s_per_direction"):
        dataclasses.replace(hardware.link("cx7"), bytes_per_s_per_direction=0)
    with pytest.raises(ValueError, match="kind"):
        dataclasses.replace(hardware.link("cx7"), kind="wireless")


def test_gpus_copy_and_pickle():
    h = hardware.gpu("h100")
    as_dict = dataclasses.asdict(h)
    assert as_dict["memory_bytes"] == 80e9 and as_dict["sources"]["memory_bytes"] == h.sources["memory_bytes"]
    assert pickle.loads(pickle.dumps(h)) == h
    assert copy.deepcopy(h).sources == h.sources
    assert hardware.gpu(h) is h
    with pytest.raises(TypeError):
        h.sources.update(memory_bytes="x")


def test_fp4_peaks_are_blackwell_only_and_sourced():
    # DGX B200: 144 PFLOP/s FP4 with sparsity over 8 GPUs -> 9 dense per GPU; twice the dense FP8 rate.
    b200 = hardware.gpu("B200")
    assert b200.dense_flops_per_s("fp4") == 9e15 == 2 * b200.dense_flops_per_s("fp8")
    pro = hardware.gpu("RTX PRO 6000 Blackwell Workstation")
    assert pro.dense_flops_per_s("fp4") == pytest.approx(2 * pro.dense_flops_per_s("fp8"))
    for g in hardware.catalog():
        assert "fp4_dense_flops_per_s" in g.sources
        if g.architecture != "Blackwell":
            assert g.fp4_dense_flops_per_s is None
            with pytest.raises(ValueError, match="precision"):
                g.dense_flops_per_s("fp4")


def test_an_fp4_peak_must_be_positive():
    with pytest.raises(ValueError, match="fp4_dense_flops_per_s"):
        hardware.custom_gpu(base="B200", fp4_dense_flops_per_s=-1.0)
