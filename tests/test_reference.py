"""Reference data: the prose tables shipped as JSON, the 2009 latency numbers, the measured decode points."""

import json
import re
from importlib import resources
from pathlib import Path

import pytest

from aiinfra import decode
from aiinfra.catalog import hardware, models, reference

REC = reference.QWEN3_8B_RTX_PRO_6000
BOOK_CHAPTERS = {int(p.name[2:]) for p in (Path(__file__).parents[1] / "book").glob("ch[0-9][0-9]")}


def test_every_shipped_table_loads_and_has_a_source():
    for name in reference.TABLES:
        raw = json.loads((resources.files("aiinfra.catalog") / "data" / f"{name}.json").read_text())
        rows = reference.table(name)
        assert len(rows) == len(raw["rows"]) >= 2
        assert reference.source(name).strip()
        assert rows[0]._fields == tuple(raw["rows"][0])
    with pytest.raises(ValueError, match="name"):
        reference.table("gossip")


# --- the layers of chapter 2 ------------------------------------------------------------


def test_nine_layers_bottom_up():
    assert [lay.name for lay in reference.table("layers")] == [
        "fab",
        "chip",
        "GPU",
        "server",
        "cluster and scheduler",
        "kernels and libraries",
        "framework",
        "serving engine",
        "product",
    ]


def test_every_layer_field_filled():
    for lay in reference.table("layers"):
        for field in ("name", "does", "check_first", "unit", "read_with", "in_decode_step"):
            assert getattr(lay, field).strip(), (lay.name, field)
        assert lay.software and all(s.strip() for s in lay.software)


def test_layers_name_the_real_libraries():
    kernels = reference.layer("kernels and libraries").software
    for lib in ("cuBLAS", "cuDNN", "NCCL", "Triton"):
        assert lib in kernels
    sched = " ".join(reference.layer("cluster and scheduler").software)
    assert "Slurm" in sched and "nvidia.com/gpu" in sched


def test_layer_lookup_is_case_insensitive():
    assert reference.layer("gpu") is reference.layer("GPU")
    assert reference.layer("Serving Engine").name == "serving engine"


@pytest.mark.parametrize("bad", ["network", "", 3, None])
def test_layer_lookup_rejects_unknown(bad):
    with pytest.raises(ValueError, match="name must be one of"):
        reference.layer(bad)


# --- the shifts of chapter 1 --------------------------------------------------------------


def test_every_shift_is_complete_and_points_at_real_chapters():
    rows = reference.table("shifts")
    assert len(rows) >= 8
    for r in rows:
        assert r.change and r.broken_assumption and r.example
        assert all(c in BOOK_CHAPTERS for c in r.chapters)
    assert any(not r.chapters for r in rows)  # some shifts lie beyond this book
    assert any(4 in r.chapters and "Peak FLOP/s" in r.broken_assumption for r in rows)


def test_shifts_carry_no_typed_numbers():
    # numbers in prose are glued; the table must not smuggle figures in
    for r in reference.table("shifts"):
        text = " ".join([r.change, r.broken_assumption])
        assert not re.search(r"\d+(\.\d+)?\s*(ms|GB|TB|%)", text), text


# --- Jeff Dean's 2009 numbers ------------------------------------------------------------


def test_latency_table_has_twelve_rows_in_increasing_order():
    rows = reference.table("latency_2009")
    assert len(rows) == 12
    assert [r.ns for r in rows] == sorted(r.ns for r in rows)
    assert "LADIS 2009" in reference.source("latency_2009")


def test_latency_lookups_in_seconds():
    assert reference.latency_s("Main memory reference") == pytest.approx(100e-9)
    assert reference.latency_s("disk seek") == pytest.approx(10e-3)
    assert reference.latency_s("Round trip within same datacenter") == pytest.approx(0.5e-3)
    assert reference.latency_ratio("Disk seek", "Main memory reference") == pytest.approx(1e5)
    for bad in ("Flux capacitor", 3):
        with pytest.raises(ValueError, match="operation"):
            reference.latency_s(bad)


# --- the measured Qwen3-8B points -----------------------------------------------------


def test_only_the_two_surviving_points_are_measurements():
    assert REC.measured_batches() == [1, 64]
    assert REC.tpot(1) == pytest.approx(26.5e-3)
    assert REC.tpot(64) == pytest.approx(40.5e-3)
    assert REC.throughput_ratio[64] == pytest.approx(31.0)
    assert REC.followups_s == {"tpot_logging_off": 12.1e-3, "gpu_step_time": 10.7e-3}


@pytest.mark.parametrize("bad", [2, 16, 0, -1, 1.5, True])
def test_unmeasured_batch_is_refused(bad):
    with pytest.raises(ValueError, match="batch"):
        REC.tpot(bad)


def test_throughput_ratio_if_tpot_only():
    # 64 requests, each slowed from 26.5 to 40.5 ms per token: 41.9x, above the measured 31x
    r = decode.throughput_ratio_if_tpot_only(64, 26.5e-3, 40.5e-3)
    assert r == pytest.approx(64 * 26.5 / 40.5)
    assert r > REC.throughput_ratio[64]
    for kw, name in [
        (dict(batch=0, tpot_1_s=1, tpot_b_s=1), "batch"),
        (dict(batch=2, tpot_1_s=-1, tpot_b_s=1), "tpot_1_s"),
        (dict(batch=2, tpot_1_s=1, tpot_b_s=float("inf")), "tpot_b_s"),
    ]:
        with pytest.raises(ValueError, match=name):
            decode.throughput_ratio_if_tpot_only(**kw)


def test_gpu_and_model_named_by_the_record_are_in_the_catalog():
    assert hardware.gpu(REC.gpu).memory_bandwidth_bytes_per_s == pytest.approx(1.792e12)
    assert models.load(REC.model).name == "Qwen3-8B"


def test_reported_runs_match_their_mfu():
    # MFU = achieved TFLOP/s per GPU over the dense BF16 peak (312 for the A100, 989.4 for the H100)
    peaks = {"A100 80GB": 312.0, "H100 SXM": 989.4}
    for run in reference.REPORTED_TRAINING_RUNS:
        assert run.tflops_per_gpu / peaks[run.gpu] == pytest.approx(run.mfu, abs=0.01)
