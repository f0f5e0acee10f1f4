"""Chapter 3: the 2N rule against the exact count, and the training break-even."""

import math

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from aiinfra import compute
from aiinfra.catalog import models
from aiinfra.serving import capacity


def test_two_n_uses_every_parameter_of_a_dense_model(qwen3_8b):
    assert compute._two_n_flops_per_token(qwen3_8b) == 2 * 8_190_735_360


def test_two_n_uses_active_parameters_of_moe(mixtral):
    # N of the rule: the active experts and, as the headline count has it, the embedding table
    n = models.active_params(mixtral) + models.embedding_params(mixtral)
    assert compute._two_n_flops_per_token(mixtral) == 2 * n == 2 * (12_879_925_248)
    assert models.active_params(mixtral) < models.total_params(mixtral)


def test_breakdown_pins_qwen3_8b_at_2048(qwen3_8b):
    b = compute.decode_flops_breakdown(qwen3_8b, 2048)
    exact, two = b["exact"], b["two_n"]
    assert exact["total"] == pytest.approx(16.34e9, rel=5e-4)
    assert exact["blocks"] + exact["lm_head"] == pytest.approx(15.14e9, rel=5e-4)
    # attention: 4 n heads head_dim per layer = 4 * 2048 * 32 * 128 * 36
    assert exact["attention"] == 4 * 2048 * 32 * 128 * 36
    assert exact["lm_head"] == 2 * 151936 * 4096
    assert exact["embedding"] == 0
    assert two["embedding"] == 2 * 151936 * 4096
    assert two["attention"] == 0
    assert two["total"] == pytest.approx(sum(v for k, v in two.items() if k != "total"))
    assert exact["total"] == pytest.approx(sum(v for k, v in exact.items() if k != "total"))
    # what 2N charges for the blocks differs from the exact matrices only by the norm vectors
    assert two["blocks"] - exact["blocks"] == 2 * models._norm_params(qwen3_8b)


def test_ratio_near_one_at_2048_and_growing(qwen3_8b):
    assert compute.two_n_ratio(qwen3_8b, 2048) == pytest.approx(1.0, abs=0.005)
    curve = compute.two_n_ratio(qwen3_8b, np.array([0, 1024, 8192, 32768]))
    assert np.all(np.diff(curve) > 0)
    assert curve[0] == pytest.approx(15.14e9 / 16.38e9, rel=1e-3)


def test_context_where_off_by_ten_percent(qwen3_8b):
    n = compute.context_where_two_n_is_off(qwen3_8b, 0.1)
    assert compute.two_n_ratio(qwen3_8b, int(n)) > 1.1
    assert compute.two_n_ratio(qwen3_8b, int(n) - 1) <= 1.1
    # closed form for a dense full-attention model: solve 2(N_lin+N_head) + 4 L n w = 1.1 * 2N
    m = qwen3_8b
    slope = 2 * m.n_layers * (models.attention_qk_width(m) + models.attention_v_width(m))
    n_exact = (1.1 * compute._two_n_flops_per_token(m) - compute.flops_per_token(m)) / slope
    assert n == math.floor(n_exact) + 1


def test_context_edge_cases(qwen3_8b):
    assert compute.context_where_two_n_is_off(qwen3_8b, 0.01) < compute.context_where_two_n_is_off(
        qwen3_8b, 0.5
    )
    with pytest.raises(ValueError, match="tolerance"):
        compute.context_where_two_n_is_off(qwen3_8b, 0)
    with pytest.raises(ValueError, match="context_tokens"):
        compute.decode_flops_breakdown(qwen3_8b, -1)
    with pytest.raises(ValueError, match="context_tokens"):
        compute.two_n_ratio(qwen3_8b, 1.5)


def test_request_ratio(qwen3_8b):
    r = compute.request_two_n_ratio(qwen3_8b, 2000, 500)
    exact = compute.request_flops(qwen3_8b, 2000, 500)
    assert r == pytest.approx(exact / (2 * 8_190_735_360 * 2500))
    with pytest.raises(ValueError, match="generated_tokens"):
        compute.request_two_n_ratio(qwen3_8b, 2000, 0)


def test_tokens_to_match_training():
    assert compute.tokens_to_match_training(15e12) == pytest.approx(45e12)
    assert compute.tokens_to_match_training(np.array([1.0, 2.0])) == pytest.approx([3.0, 6.0])
    with pytest.raises(ValueError, match="training_tokens"):
        compute.tokens_to_match_training(0)


@settings(max_examples=25, deadline=None)
@given(st.integers(0, 200_000))
def test_ratio_is_the_exact_count_over_2n(ctx):
    m = "Llama-3.1-8B"
    assert compute.two_n_ratio(m, ctx) * compute._two_n_flops_per_token(m) == pytest.approx(
        compute.decode_flops(m, ctx)
    )


def test_gpu_hours_for_tokens():
    assert capacity.gpu_hours_for_tokens(3600 * 1000, 1000) == pytest.approx(1.0)
    with pytest.raises(ValueError, match="tokens_per_s_per_gpu"):
        capacity.gpu_hours_for_tokens(1, 0)
