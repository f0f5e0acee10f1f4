"""Decode attention from first principles (chapter 3, page 4): attention and whole-step intensity.

Values are derived by hand from the published configs: Llama-3.1-70B has 64 query heads over 8
KV heads of 128, 80 layers; Command R v01 64 heads over 64 (MHA), 40 layers; DeepSeek-V3 128
heads over one latent of 512 + 64 rotary elements.
"""

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from aiinfra import roofline


def test_step_intensity_by_hand():
    # one request, 140 GFLOPs over 140 GB of weights plus a 1 GB cache at 8 FLOP/B: (140 + 8) / 141
    got = roofline.decode_step_intensity_flops_per_byte(1, 140e9, 140e9, 8.0, 1e9)
    assert got == pytest.approx(148 / 141)


@settings(derandomize=True, max_examples=60)
@given(
    st.integers(1, 100_000),
    st.floats(1e8, 1e12),
    st.floats(1e8, 1e12),
    st.floats(0.5, 500),
    st.floats(1e6, 1e10),
)
def test_step_intensity_lies_between_its_limits(batch, f_w, w, i_attn, k):
    # a batch can never push the step past F_w / K + I_attn, however large
    got = roofline.decode_step_intensity_flops_per_byte(batch, f_w, w, i_attn, k)
    assert 0 < got <= (f_w / k + i_attn) * (1 + 1e-12)


def test_step_intensity_tends_to_attention_at_long_context():
    # a 1 PB cache per request: the weights' FLOPs vanish beside it, the step is attention alone
    got = roofline.decode_step_intensity_flops_per_byte(10_000, 140e9, 140e9, 8.0, 1e15)
    assert got == pytest.approx(8.0, rel=1e-3)


@pytest.mark.parametrize(
    "model, expected",
    [
        ("c4ai-command-r-v01", 1.0),  # MHA: g = 1, 2 x 1 / 2 B
        ("Llama-3.1-70B", 8.0),  # GQA: g = 64 / 8 = 8
        ("gemma-2b", 8.0),  # MQA: 8 query heads on one KV head
        ("DeepSeek-V3", 2 * 128 * (576 + 512) / (576 * 2)),  # absorbed MLA: 241.8
    ],
)
def test_model_attention_intensity(model, expected):
    assert roofline.model_decode_attention_intensity_flops_per_byte(model) == pytest.approx(expected)


def test_fp8_cache_and_two_query_tokens_scale_the_intensity():
    # an FP8 cache halves the bytes, an MTP draft token doubles the queries: 4x, 967 FLOP/B
    got = roofline.model_decode_attention_intensity_flops_per_byte("DeepSeek-V3", 2, 1.0)
    assert got == pytest.approx(4 * 2 * 128 * 1088 / 1152)


def test_model_step_intensity_llama70b_by_hand():
    # F_w = 2 x 69.50 G linear params per token (70.55 G less the 1.05 G embedding, 128,256 x 8,192);
    # W = the same weights in BF16 (plus norms and one embedding row); K = 327,680 B x 8,192 tokens
    f_w = 2 * (70_553_706_496 - 128_256 * 8192)
    k = 2 * 80 * 8 * 128 * 2 * 8192
    by_hand = 256 * (f_w + 8 * k) / (f_w + 256 * k)
    got = roofline.model_decode_step_intensity_flops_per_byte("Llama-3.1-70B", 256, 8192)
    assert got == pytest.approx(by_hand, rel=1e-4)
    assert 49 < got < 50.5


def test_gqa_step_never_reaches_an_h200_ridge_at_long_context():
    # 206 FLOP/B (989.4 TFLOP/s BF16 over 4.8 TB/s); GQA at 128K stays near 11, MLA near the ridge
    batches = np.array([1, 64, 1024, 65536])
    gqa = roofline.model_decode_step_intensity_flops_per_byte("Llama-3.1-70B", batches, 131072)
    mla = roofline.model_decode_step_intensity_flops_per_byte("DeepSeek-V3", batches, 131072, 1.0)
    assert np.all(gqa < 12) and np.all(np.diff(gqa) > 0)
    assert mla[-1] > 989.4e12 / 4.8e12 > mla[0]


@pytest.mark.parametrize(
    "call, match",
    [
        (lambda: roofline.decode_step_intensity_flops_per_byte(0, 1e9, 1e9, 8, 1e9), "batch"),
        (lambda: roofline.decode_step_intensity_flops_per_byte(1, -1, 1e9, 8, 1e9), "weight_flops_per_token"),
        (lambda: roofline.decode_step_intensity_flops_per_byte(1, 1e9, -1, 8, 1e9), "weight_bytes"),
        (lambda: roofline.decode_step_intensity_flops_per_byte(1, 1e9, 1e9, -8, 1e9), "attention_intensity"),
        (lambda: roofline.decode_step_intensity_flops_per_byte(1, 1e9, 1e9, 8, 0), "kv_bytes_per_request"),
        (
            lambda: roofline.model_decode_attention_intensity_flops_per_byte("Llama-3.1-70B", 0),
            "query_tokens",
        ),
        (
            lambda: roofline.model_decode_attention_intensity_flops_per_byte("DeepSeek-V3", 1, 0),
            "bytes_per_element",
        ),
        (
            lambda: roofline.model_decode_step_intensity_flops_per_byte("Llama-3.1-70B", 1, 0),
            "context_tokens",
        ),
        (lambda: roofline.model_decode_step_intensity_flops_per_byte("Llama-3.1-70B", 0, 8), "batch"),
        (
            lambda: roofline.model_decode_step_intensity_flops_per_byte("Llama-3.1-70B", 1, 8, 0),
            "bytes_per_weight",
        ),
        (
            lambda: roofline.model_decode_step_intensity_flops_per_byte("Llama-3.1-70B", 1, 8, 2, -1),
            "kv_bytes_per_element",
        ),
    ],
)
def test_bad_input_names_the_argument(call, match):
    with pytest.raises(ValueError, match=match):
        call()
