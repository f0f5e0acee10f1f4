"""Chapter 1: the measured Qwen3-8B points (aiinfra.measurements)."""
import math

import pytest

from aiinfra import measurements as ms

REC = ms.QWEN3_8B_RTX_PRO_6000


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
    r = ms.throughput_ratio_if_tpot_only(64, 26.5e-3, 40.5e-3)
    assert r == pytest.approx(64 * 26.5 / 40.5)
    assert r > REC.throughput_ratio[64]
    assert ms.throughput_ratio_if_tpot_only(1, 1.0, 1.0) == 1.0


@pytest.mark.parametrize("kw,name", [
    (dict(batch=0, tpot_1_s=1, tpot_b_s=1), "batch"),
    (dict(batch=2, tpot_1_s=-1, tpot_b_s=1), "tpot_1_s"),
    (dict(batch=2, tpot_1_s=1, tpot_b_s=math.inf), "tpot_b_s"),
])
def test_bad_input(kw, name):
    with pytest.raises(ValueError, match=name):
        ms.throughput_ratio_if_tpot_only(**kw)


def test_gpu_named_by_the_record_is_in_the_catalog():
    from aiinfra import hardware, models

    g = hardware.gpu(REC.gpu)
    assert g.memory_bandwidth_bytes_per_s == pytest.approx(1.792e12)
    assert models.load(REC.model).name == "Qwen3-8B"
