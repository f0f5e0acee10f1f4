"""Tests for aiinfra.serving.prefix_cache (chapter 7)."""

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from aiinfra.serving import prefix_cache as pc

# Qwen3-8B (NOTES.md): matrix FLOPs per token = 2 x (block linear weights);
# causal attention 4 * 36 layers * 32 heads * 128 = 589,824 FLOPs per pair.
VOCAB, D = 151_936, 4096
BLOCK_PARAMS = 8_190_735_360 - 2 * VOCAB * D
NORMS = 36 * (2 * 4096 + 2 * 128) + 4096
F_TOK = 2 * (BLOCK_PARAMS - NORMS)
A_PAIR = 4 * 36 * 32 * 128


def test_qwen3_8b_prefill_matches_notes():
    # a 2,048-token causal prefill with the lm_head on the last token is 29.69 TFLOPs
    total = pc.prefill_flops_with_prefix(2048, 0, F_TOK, A_PAIR) + 2 * VOCAB * D
    assert total / 1e12 == pytest.approx(29.69, abs=0.005)


def test_fully_cached_prompt_costs_nothing():
    assert pc.prefill_flops_with_prefix(2048, 2048, F_TOK, A_PAIR) == 0.0


@settings(deadline=None)
@given(st.integers(1, 20000), st.data())
def test_caching_c_tokens_saves_exactly_their_own_prefill(p, data):
    c = data.draw(st.integers(0, p))
    full = pc.prefill_flops_with_prefix(p, 0, F_TOK, A_PAIR)
    rest = pc.prefill_flops_with_prefix(p, c, F_TOK, A_PAIR)
    alone = pc.prefill_flops_with_prefix(c, 0, F_TOK, A_PAIR)
    assert full - rest == pytest.approx(alone, rel=1e-9, abs=1e-6)


def test_expected_saving_without_attention_is_linear():
    pi, eta = 989e12, 0.5
    tau = F_TOK / (eta * pi)
    got = pc.expected_ttft_saved_s(0.7, 4096, 1024, F_TOK, pi, eta)
    assert got == pytest.approx(0.7 * 1024 * tau)  # h c t_tok


def test_expected_saving_sweeps_arrays():
    h = np.linspace(0, 1, 5)
    out = pc.expected_ttft_saved_s(h, 4096, 1024, F_TOK, 989e12, 0.5, A_PAIR)
    assert out.shape == (5,)
    assert out[0] == 0 and np.all(np.diff(out) > 0)


def test_cache_bytes_and_reload():
    assert pc.prefix_cache_bytes(2048, 147_456, 10) == 10 * 288 * 2**20
    # PCIe Gen5 x16 at 64e9 B/s vs recompute at 50% of 989 TFLOP/s
    s = pc.reload_speedup(F_TOK, 989e12, 147_456, 64e9, 0.5)
    assert s == pytest.approx((F_TOK / (0.5 * 989e12)) / (147_456 / 64e9))
    assert s > 1


@pytest.mark.parametrize(
    "call,name",
    [
        (lambda: pc.prefill_flops_with_prefix(100, 200, F_TOK), "cached_tokens"),
        (lambda: pc.prefill_flops_with_prefix(-1, 0, F_TOK), "prompt_tokens"),
        (lambda: pc.prefill_flops_with_prefix(100, 0, 0), "flops_per_token"),
        (lambda: pc.prefill_flops_with_prefix(100, 0, 1, -1), "attention_flops_per_pair"),
        (lambda: pc.expected_ttft_saved_s(0.5, 10, 5, 1, 0), "flops_per_s"),
        (lambda: pc.expected_ttft_saved_s(0.5, 10, 5, 1, 1, efficiency=0), "efficiency"),
        (lambda: pc.prefix_cache_bytes(10, 1, 0), "distinct_prefixes"),
        (lambda: pc.reload_speedup(1, 1, 1, 0), "bandwidth_bytes_per_s"),
    ],
)
def test_rejections(call, name):
    with pytest.raises(ValueError, match=name):
        call()


def test_model_coefficients_match_qwen3_8b_notes():
    f, a = pc.model_prefill_coefficients("Qwen3-8B")
    assert f == F_TOK
    assert a == A_PAIR
    total = pc.prefill_flops_with_prefix(2048, 0, f, a) + 2 * VOCAB * D
    assert total / 1e12 == pytest.approx(29.69, abs=0.005)
