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
        # FP8 runs at twice the BF16 rate (the L40S datasheet's 733 vs 362.05 is 1.2% off exact 2x) or, where
        # the vendor prints them equal (TPU v5p and v6e), at the same rate
        ratio = g.fp8_dense_flops_per_s / g.bf16_dense_flops_per_s
        assert ratio == pytest.approx(1, rel=0.015) or ratio == pytest.approx(2, rel=0.015)
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
    with pytest.raises(ValueError, match="ratio takes Link, GPU or link names, got 3"):
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


def test_fp4_peaks_are_blackwell_and_cdna4_only_and_sourced():
    # DGX B200: 144 PFLOP/s FP4 with sparsity over 8 GPUs -> 9 dense per GPU; twice the dense FP8 rate.
    b200 = hardware.gpu("B200")
    assert b200.dense_flops_per_s("fp4") == 9e15 == 2 * b200.dense_flops_per_s("fp8")
    pro = hardware.gpu("RTX PRO 6000 Blackwell Workstation")
    assert pro.dense_flops_per_s("fp4") == pytest.approx(2 * pro.dense_flops_per_s("fp8"))
    for g in hardware.catalog():
        assert "fp4_dense_flops_per_s" in g.sources
        if g.architecture not in ("Blackwell", "Blackwell Ultra", "CDNA 4"):
            assert g.fp4_dense_flops_per_s is None
            with pytest.raises(ValueError, match="precision"):
                g.dense_flops_per_s("fp4")


def test_an_fp4_peak_must_be_positive():
    with pytest.raises(ValueError, match="fp4_dense_flops_per_s"):
        hardware.custom_gpu(base="B200", fp4_dense_flops_per_s=-1.0)


# --- the frontier records (issue 30): each headline value from its printed source ------------------------

TERA, PETA = 1e12, 1e15


@pytest.mark.parametrize(
    "name,mem_gb,bw_tb,bf16_tf,fp8_tf,fp4_tf,up_gb,domain",
    [
        # HGX B300 per 8 GPUs: 2.3 TB, BF16 36 PF sparse (/8/2 = 2.25 PF dense), FP8 72 PF sparse (4.5 dense),
        # FP4 105 PF dense (/8 = 13.125), NVLink 1.8 TB/s per GPU both ways (900 each way); 288 GB per GPU
        ("B300", 288, 8, 2250, 4500, 13125, 900, 8),
        # GB300 NVL72 per 72 GPUs: 576 TB/s (8 each), BF16 360 PF sparse (2.5 dense each), FP8 720 PF sparse
        # (5 dense), FP4 1,080 PF dense (15 each), NVLink 130 TB/s (1.8 TB/s per GPU both ways)
        ("GB300", 288, 8, 2500, 5000, 15000, 900, 72),
        # GB200 NVL72: FP4 1,440 PF sparse per rack -> 20 sparse, 10 dense per GPU
        ("GB200", 186, 8, 2500, 5000, 10000, 900, 72),
        # MI325X data sheet: 256 GB, 6 TB/s, BF16 2,614.9 sparse / 1,307.4 dense, 7 x 128 GB/s bidirectional
        ("MI325X", 256, 6, 1307.4, 2614.9, None, 448, 8),
        # MI355X data sheet: 288 GB, 8 TB/s, BF16 5.0 PF sparse, FP8 10.1 sparse, MXFP4 20.1 sparse;
        # 7 links x 153.6 GB/s bidirectional = 1,075.2 -> 537.6 each way
        ("MI355X", 288, 8, 2516.6, 5033.2, 10066.3, 537.6, 8),
        # Cloud TPU pages: v5e 197 TFLOP/s, 16 GB, 819 GBps, ICI 400 GBps bidirectional, 256 chips
        ("TPU v5e", 16, 0.819, 197, None, None, 200, 256),
        # v5p: 459 BF16 and 459 FP8, 95 GB, 2,765 GBps, ICI 1,200 GBps bidirectional, 8,960 chips
        ("TPU v5p", 95, 2.765, 459, 459, None, 600, 8960),
        # v6e: 918 BF16 (and FP8), 32 GB, 1,638 GBps, ICI 800 GBps bidirectional, 256 chips
        ("TPU v6e (Trillium)", 32, 1.638, 918, 918, None, 400, 256),
        # TPU7x: 2,307 BF16, 4,614 FP8, 192 GB, 7.37 TB/s, ICI 1.2 TB/s bidirectional, 9,216 chips
        ("TPU v7 (Ironwood)", 192, 7.37, 2307, 4614, None, 600, 9216),
    ],
)
def test_frontier_records_match_their_sources(name, mem_gb, bw_tb, bf16_tf, fp8_tf, fp4_tf, up_gb, domain):
    g = hardware.gpu(name)
    assert g.memory_bytes == pytest.approx(mem_gb * GB)
    assert g.memory_bandwidth_bytes_per_s == pytest.approx(bw_tb * TB)
    assert g.bf16_dense_flops_per_s == pytest.approx(bf16_tf * TERA)
    for precision, tf in (("fp8", fp8_tf), ("fp4", fp4_tf)):
        if tf is None:
            assert not g.has_peak(precision)
            with pytest.raises(ValueError, match="precision"):
                g.dense_flops_per_s(precision)
        else:
            assert g.dense_flops_per_s(precision) == pytest.approx(tf * TERA)
    assert g.scaleup_bytes_per_s_per_direction == pytest.approx(up_gb * GB)
    assert g.scaleup_domain_chips == domain
    for f in (
        "bf16_dense_flops_per_s",
        "scaleup_bytes_per_s_per_direction",
        "tdp_watts",
        "fp4_dense_flops_per_s",
    ):
        assert g.sources.get(f), f"{name}: no source for {f}"


def test_mi355x_peaks_follow_from_its_compute_units():
    # 256 CUs (ROCm GPU specifications) x 2.4 GHz peak clock x 4,096 / 8,192 / 16,384 FLOPs per CU per clock
    g = hardware.gpu("MI355X")
    rate = 256 * 2.4e9
    assert g.dense_flops_per_s("bf16") == pytest.approx(rate * 4096, rel=1e-4)
    assert g.dense_flops_per_s("fp8") == pytest.approx(rate * 8192, rel=1e-4)
    assert g.dense_flops_per_s("fp4") == pytest.approx(rate * 16384, rel=1e-4)


def test_unpublished_figures_are_none_and_say_so():
    for name in ("B300", "TPU v5e", "TPU v5p", "TPU v6e (Trillium)", "TPU v7 (Ironwood)"):
        g = hardware.gpu(name)
        assert g.tdp_watts is None and "not published" in g.sources["tdp_watts"]
    for g in hardware.catalog():
        if g.vendor == "Google":
            assert g.fp4_dense_flops_per_s is None and "no FP4" in g.sources["fp4_dense_flops_per_s"]


@pytest.mark.parametrize(
    "alias,name",
    [
        ("ironwood", "TPU v7 (Ironwood)"),
        ("TPU7x", "TPU v7 (Ironwood)"),
        ("trillium", "TPU v6e (Trillium)"),
        ("v5e", "TPU v5e"),
        ("HGX B300", "B300"),
        ("GB300 NVL72", "GB300"),
        ("Instinct MI355X", "MI355X"),
        ("h100", "H100 SXM"),
        ("a100 80gb", "A100 80GB SXM"),
        ("V100 32GB", "V100 SXM2 32GB"),
        ("hgx-b200", "B200"),
        ("RTX PRO 6000", "RTX PRO 6000 Blackwell Workstation"),
    ],
)
def test_aliases_are_fields_of_the_records(alias, name):
    assert hardware.gpu(alias).name == name
    assert hardware.gpu(alias) is hardware.gpu(name)


def test_aliases_must_be_unique_and_textual():
    with pytest.raises(ValueError, match="aliases"):
        hardware._index([hardware.gpu("H100 SXM"), hardware.custom_gpu(base="B200", aliases=("H100",))])
    with pytest.raises(ValueError, match="aliases"):
        hardware.custom_gpu(base="B200", aliases=["b2"])
    with pytest.raises(ValueError, match="hbm_stacks"):
        hardware.custom_gpu(base="B200", hbm_stacks=0)
    with pytest.raises(ValueError, match="scaleup_domain_chips"):
        hardware.custom_gpu(base="B200", scaleup_domain_chips=0.5)
    with pytest.raises(ValueError, match="datacenter_flagship"):
        hardware.custom_gpu(base="B200", datacenter_flagship="yes")
    with pytest.raises(ValueError, match="mig_profiles"):
        hardware.custom_gpu(base="B200", mig_profiles=("1g.10gb",))


def test_catalog_filters_by_precision():
    # Volta has FP16 tensor cores but no BF16; before Ada/Hopper no FP8
    bf16 = {g.name for g in hardware.catalog("bf16")}
    assert "V100 SXM2 32GB" not in bf16 and {"A100 80GB SXM", "H100 SXM", "TPU v7 (Ironwood)"} <= bf16
    assert "V100 SXM2 32GB" in {g.name for g in hardware.catalog("fp16")}
    fp4 = {g.name for g in hardware.catalog("fp4")}
    assert fp4 == {"B200", "GB200", "RTX PRO 6000 Blackwell Workstation", "B300", "GB300", "MI355X"}
    with pytest.raises(ValueError, match="precision"):
        hardware.catalog("fp6")


def test_chapter2_generations_table_lists_every_flagship():
    """Every record marked as a data-center flagship is a row of chapter 2's table, whoever adds it."""
    from aiinfra.book.tables import ch02

    rows = ch02.generations_table_markdown().splitlines()[2:]
    listed = [r.split("|")[1].strip() for r in rows]
    flagships = [g.name for g in hardware.catalog() if g.datacenter_flagship]
    assert sorted(listed) == sorted(flagships)
    # the brief's frontier chips, named here so that losing the flag fails too
    assert {"B300", "MI325X", "MI355X", "TPU v5p", "TPU v6e (Trillium)", "TPU v7 (Ironwood)"} <= set(listed)
    assert {"V100 SXM2 32GB", "A100 80GB SXM", "H100 SXM", "H200 SXM", "B200", "MI300X"} <= set(listed)
    by_name = dict(zip(listed, rows))
    assert "| not published |" in by_name["TPU v7 (Ironwood)"] and "| 9,216 |" in by_name["TPU v7 (Ironwood)"]
    assert "| 13,125.0 |" in by_name["B300"]


def test_chapter1_and_chapter4_gpu_tables_cover_the_catalog():
    """Chapter 1's table lists every record with a BF16 peak; chapter 4's every one the 8B model fits."""
    from aiinfra.book.tables import ch01, ch04
    from aiinfra.deployment import Deployment

    every = [g for g in hardware.catalog() if g.bf16_dense_flops_per_s is not None]
    md = ch01.gpu_quick_reference_markdown(hardware.catalog("bf16"))
    assert [r.split("|")[1].strip() for r in md.splitlines()[2:]] == [g.name for g in every]
    d = Deployment("Qwen3-8B", "H100 SXM")
    fits = {g.name for g in every if d.replace(gpu=g).max_batch(4096) >= 1}
    decode = ch04.gpu_decode_markdown(d, 4096)
    assert {r.split("|")[1].strip() for r in decode.splitlines()[2:]} == fits
    assert {
        "B300",
        "MI355X",
        "TPU v7 (Ironwood)",
    } <= fits and "TPU v5e" not in fits  # 16 GB < 16.4 GB of weights
