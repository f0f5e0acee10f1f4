"""Tests for aiinfra.parallelism (chapter 6): TP/PP/DP traffic and layout."""

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from aiinfra.catalog import reference
from aiinfra.cluster import parallelism as par

# Llama-3.x-70B shape (DeepSeek-R1-Distill-Llama-70B): 80 layers, d = 8192, 64 heads.
LLAMA70 = {"name": "llama-70b-shape", "num_hidden_layers": 80, "hidden_size": 8192, "num_attention_heads": 64}


def test_tp_message_is_one_activation():
    # one decode token in BF16: 8192 * 2 bytes = 16 KiB
    assert par.tp_allreduce_message_bytes(1, 8192, 2) == 16384
    # a 2,048-token prefill: 32 MiB per all-reduce
    assert par.tp_allreduce_message_bytes(2048, 8192, 2) == 2048 * 8192 * 2 == 32 * 2**20


def test_tp_counts_forward_and_training():
    assert par.tp_allreduce_count(80) == 160
    assert par.tp_allreduce_count(80, par.ALLREDUCES_PER_LAYER["training"]) == 320


def test_tp_bytes_per_token_llama70():
    # 2 all-reduces x 80 layers x 8192 x 2 B = 2,621,440 B per token
    assert par.tp_allreduce_bytes_per_token(80, 8192, 2) == 2_621_440


def test_tp_plan_from_config():
    plan = par.tp_plan(LLAMA70, tokens=64, tensor_parallel=8)
    assert plan.allreduces == 160
    assert plan.message_bytes == 64 * 8192 * 2
    assert plan.bytes_per_pass == pytest.approx(160 * 64 * 8192 * 2)
    assert plan.bytes_per_token == 2_621_440
    assert plan.model == "llama-70b-shape"
    train = par.tp_plan(LLAMA70, tokens=64, phase="training")
    assert train.allreduces == 320


def test_tp_plan_rejects_bad_degree_and_config():
    with pytest.raises(ValueError, match="tensor_parallel"):
        par.tp_plan(LLAMA70, tokens=1, tensor_parallel=3)
    with pytest.raises(ValueError, match="config"):
        par.tp_plan({"hidden_size": 8192}, tokens=1)
    with pytest.raises(ValueError, match="phase"):
        par.tp_plan(LLAMA70, tokens=1, phase="backward")


def test_tp_comm_time():
    assert par.tp_comm_time_per_step_s(80, 10e-6) == pytest.approx(160 * 10e-6)


def test_pp_boundary_bytes():
    assert par.pp_boundary_bytes(2048, 8192, 1) == 0
    assert par.pp_boundary_bytes(2048, 8192, 4) == 3 * 2048 * 8192 * 2


@pytest.mark.parametrize("p,m,expected", [(1, 8, 0.0), (4, 12, 0.2), (8, 8, 7 / 15), (16, 64, 15 / 79)])
def test_pipeline_bubble(p, m, expected):
    assert par.pipeline_bubble_fraction(p, m) == pytest.approx(expected)


@settings(deadline=None)
@given(st.integers(1, 64), st.integers(1, 512))
def test_bubble_is_share_of_time_and_matches_narayanan_ratio(p, m):
    frac = par.pipeline_bubble_fraction(p, m)
    assert 0 <= frac < 1
    # Narayanan et al. 2021: bubble / ideal time = (p-1)/m
    assert frac / (1 - frac) == pytest.approx((p - 1) / m)


def test_bubble_shrinks_with_more_microbatches():
    m = np.arange(1, 100)
    frac = par.pipeline_bubble_fraction(8, m)
    assert np.all(np.diff(frac) < 0)


def test_dp_gradient_bytes_r1_distill_70b():
    assert par.dp_gradient_bytes(70_553_706_496, 2) == 141_107_412_992


def test_weight_bytes_per_gpu_and_layout():
    assert par.weight_bytes_per_gpu(141.1e9, 8, 1) == pytest.approx(141.1e9 / 8)
    assert par.weight_bytes_per_gpu(141.1e9, 4, 2) == pytest.approx(141.1e9 / 8)
    assert par.gpus_in_layout(8, 16, 128) == 16384


def test_reported_runs_are_consistent():
    for run in reference.REPORTED_TRAINING_RUNS:
        assert 0 < run.mfu < 1
        assert run.source
    llama = [r for r in reference.REPORTED_TRAINING_RUNS if r.gpu == "H100 SXM"]
    # H100 SXM dense BF16 peak ~989 TFLOP/s: the reported MFU matches TFLOPs/GPU / peak
    for r in llama:
        assert r.tflops_per_gpu / 989.0 == pytest.approx(r.mfu, abs=0.01)
    mega = reference.REPORTED_TRAINING_RUNS[0]
    assert mega.tflops_per_gpu / 312.0 == pytest.approx(mega.mfu, abs=0.01)
    assert mega.gpus * mega.tflops_per_gpu / 1e3 == pytest.approx(502, rel=0.01)


@pytest.mark.parametrize(
    "call, name",
    [
        (lambda: par.tp_allreduce_message_bytes(0, 8192), "tokens"),
        (lambda: par.tp_allreduce_message_bytes(1, -1), "d_model"),
        (lambda: par.tp_allreduce_message_bytes(1, 8192, 0), "bytes_per_element"),
        (lambda: par.tp_allreduce_count(0), "n_layers"),
        (lambda: par.tp_allreduce_count(80, 1.5), "allreduces_per_layer"),
        (lambda: par.tp_allreduce_bytes_per_token(80.5, 8192), "n_layers"),
        (lambda: par.tp_comm_time_per_step_s(80, -1e-6), "allreduce_time_s"),
        (lambda: par.pp_boundary_bytes(1, 8192, 0), "stages"),
        (lambda: par.pipeline_bubble_fraction(0, 4), "stages"),
        (lambda: par.pipeline_bubble_fraction(4, 0), "microbatches"),
        (lambda: par.dp_gradient_bytes(-1), "params"),
        (lambda: par.weight_bytes_per_gpu(1e9, 0), "tensor_parallel"),
        (lambda: par.gpus_in_layout(8, 1, 0), "data_parallel"),
        (lambda: par.tp_plan(LLAMA70, tokens=0), "tokens"),
    ],
)
def test_rejections(call, name):
    with pytest.raises(ValueError, match=name):
        call()


def test_rejection_names_argument():
    with pytest.raises(ValueError, match="microbatches"):
        par.pipeline_bubble_fraction(4, 0)
    with pytest.raises(ValueError, match="d_model"):
        par.tp_allreduce_message_bytes(1, float("nan"))


@settings(deadline=None)
@given(st.integers(1, 64), st.floats(0.01, 0.9))
def test_microbatches_for_bubble_is_the_smallest(p, f):
    m = par.microbatches_for_bubble(p, f)
    assert par.pipeline_bubble_fraction(p, m) <= f + 1e-12
    if m > 1:
        assert par.pipeline_bubble_fraction(p, m - 1) > f


def test_microbatches_known_value_and_rejections():
    assert par.microbatches_for_bubble(8, 0.05) == 133  # 7 * 0.95 / 0.05 = 133
    with pytest.raises(ValueError, match="max_bubble_fraction"):
        par.microbatches_for_bubble(8, 0)
    with pytest.raises(ValueError, match="stages"):
        par.microbatches_for_bubble(0, 0.1)


def test_useful_compute_ratio():
    assert par.useful_compute_ratio(0.43, 0.41, 2) == pytest.approx(2 * 0.41 / 0.43)
    with pytest.raises(ValueError, match="mfu_after"):
        par.useful_compute_ratio(0.4, 1.5)
