"""FLOP counts: scalar cores, config wrappers, causal prefill, windows, MoE, the 2N rule."""

import numpy as np
import pytest

from aiinfra import compute
from aiinfra.catalog import models

QWEN_LINEAR = 36 * (2 * 4096 * 4096 + 2 * 4096 * 1024 + 3 * 4096 * 12288)
QWEN_HEAD = 151936 * 4096


def test_qwen3_8b_exact_integers():
    m = models.load("Qwen3-8B")
    assert models.block_linear_params_per_token(m) == QWEN_LINEAR
    assert compute.flops_per_token(m) == 2 * (QWEN_LINEAR + QWEN_HEAD) == 15_136_194_560
    assert compute.decode_flops(m, 2048) == 15_136_194_560 + 36 * 4 * 2048 * 4096
    attn = 36 * 2 * 8192 * (2048 * 2049 // 2)
    assert compute.prefill_flops(m, 2048) == 2 * QWEN_LINEAR * 2048 + 2 * QWEN_HEAD + attn


def test_embedding_lookup_is_free_and_tied_head_still_counts():
    m = models.load("Llama-3.2-3B")  # tied embeddings
    assert m.tie_word_embeddings
    assert compute.flops_per_token(m) == 2 * (
        models.block_linear_params_per_token(m) + models.lm_head_params(m)
    )


def test_causal_flag_and_lm_head_flag():
    m = models.load("Qwen3-8B")
    causal = compute.prefill_flops(m, 1000)
    full = compute.prefill_flops(m, 1000, causal=False)
    assert full - causal == pytest.approx(36 * 2 * 8192 * (1000 * 1000 - 1000 * 1001 / 2))
    every = compute.prefill_flops(m, 1000, lm_head_last_token_only=False)
    assert every - causal == pytest.approx(2 * QWEN_HEAD * 999)


def test_scalar_cores_compose():
    p = 512
    assert compute._prefill_step_flops(QWEN_LINEAR, QWEN_HEAD, 36, 4096, 4096, p) == (
        compute._prefill_matmul_flops(QWEN_LINEAR, QWEN_HEAD, p, 1)
        + compute._causal_prefill_attention_flops(36, 4096, 4096, p)
    )
    assert compute._prefill_attention_flops(
        36, 4096, 4096, p, causal=False
    ) == compute._full_prefill_attention_flops(36, 4096, 4096, p)
    assert compute._prefill_matmul_flops(1.0, 1.0, p, p) - compute._prefill_matmul_flops(
        1.0, 1.0, p, 1
    ) == 2 * (p - 1)


def test_one_token_prefill_equals_decode_at_context_one():
    m = models.load("Llama-3.1-8B")
    assert compute.prefill_flops(m, 1) == pytest.approx(compute.decode_flops(m, 1))


def test_request_is_prefill_plus_decode_steps():
    m = models.load("Qwen3-8B")
    p, g = 300, 6
    steps = sum(compute.decode_flops(m, p + j) for j in range(1, g))
    assert compute.request_flops(m, p, g) == pytest.approx(compute.prefill_flops(m, p) + steps)
    assert compute.request_flops(m, p, 1) == pytest.approx(compute.prefill_flops(m, p))


def test_sliding_window_caps_attention():
    m = models.load("Mistral-7B-v0.1")
    w = m.sliding_window
    assert compute.decode_flops(m, 2 * w) == compute.decode_flops(m, w)
    assert compute.decode_flops(m, w - 1) < compute.decode_flops(m, w)
    # prefill beyond the window grows linearly in attention
    a = compute.prefill_flops(m, w + 100) - compute.prefill_flops(m, w + 99)
    b = compute.prefill_flops(m, w + 200) - compute.prefill_flops(m, w + 199)
    assert a == pytest.approx(b)
    steps = sum(compute.decode_flops(m, w + j) for j in range(1, 4))
    assert compute.request_flops(m, w, 4) == pytest.approx(compute.prefill_flops(m, w) + steps)


def test_moe_counts_active_experts_only():
    m = models.load("Mixtral-8x7B-v0.1")
    per_tok = compute.flops_per_token(m)
    assert per_tok == 2 * (models.block_linear_params_per_token(m) + models.lm_head_params(m))
    assert per_tok < 2 * models.total_params(m) / 2


def test_arrays_of_context():
    m = models.load("Qwen3-8B")
    out = compute.decode_flops(m, np.array([0, 1024, 2048]))
    assert out.shape == (3,)
    assert out[0] == compute.flops_per_token(m)
    np.testing.assert_allclose(np.diff(out), 36 * 4 * 4096 * 1024)


def test_approx_rule_and_parts():
    assert compute.approx_flops_2n(70e9, 500, 500) == pytest.approx(1.4e14)
    assert compute.approx_prefill_flops_2n(70e9, 500) == pytest.approx(7e13)
    assert compute.approx_decode_flops_2n(70e9, 500) == pytest.approx(7e13)


def test_exact_vs_approx_2n():
    m = models.load("Llama-3.1-8B")
    n = models.total_params(m)
    # short context: the rule over-counts (the embedding lookup is free, the lm_head runs only on sampled tokens)
    short = compute.request_flops(m, 200, 200) / compute.approx_flops_2n(n, 200, 200)
    assert 0.85 < short < 1.0
    # long context: attention, which the rule ignores, dominates the difference
    long = compute.request_flops(m, 32_000, 200) / compute.approx_flops_2n(n, 32_000, 200)
    assert long > 1.1


def test_kaplan_term():
    assert compute.kaplan_attention_flops_per_token(32, 1000, 4096) == 2 * 32 * 1000 * 4096
    assert compute.attention_flops_per_token(
        32, 4096, 4096, 1000
    ) == 2 * compute.kaplan_attention_flops_per_token(32, 1000, 4096)


@pytest.mark.parametrize(
    "call, name",
    [
        (lambda: compute._forward_flops_per_token(-1, 1), "_block_linear_params"),
        (lambda: compute._forward_flops_per_token(1, "x"), "lm_head_params"),
        (lambda: compute.attention_flops_per_token(0, 1, 1, 1), "n_layers"),
        (lambda: compute.attention_flops_per_token(1, 0, 1, 1), "qk_width"),
        (lambda: compute.attention_flops_per_token(1, 1, 0, 1), "v_width"),
        (lambda: compute.attention_flops_per_token(1, 1, 1, 1.5), "context_tokens"),
        (lambda: compute._prefill_attention_flops(1, 1, 1, 0), "prompt_tokens"),
        (lambda: compute._prefill_attention_flops(1, 1, 1, 4, causal="yes"), "causal"),
        (lambda: compute._prefill_matmul_flops(1, 1, 4, lm_head_tokens=5), "lm_head_tokens"),
        (lambda: compute._prefill_matmul_flops(1, 1, 4, lm_head_tokens=0), "lm_head_tokens"),
        (lambda: compute._full_prefill_attention_flops(1, 1, 1, 0), "prompt_tokens"),
        (
            lambda: compute.prefill_flops("Qwen3-8B", 8, lm_head_last_token_only=None),
            "lm_head_last_token_only",
        ),
        (lambda: compute.request_step_flops(1, 1, 1, 1, 1, 4, 0), "generated_tokens"),
        (lambda: compute.approx_flops_2n(-1, 1, 1), "n_params"),
        (lambda: compute.approx_flops_2n(1, -1, 1), "prompt_tokens"),
        (lambda: compute.kaplan_attention_flops_per_token(1, 1, 0), "d_attn"),
        (lambda: compute.decode_flops("Qwen3-8B", -1), "context_tokens"),
        (lambda: compute.prefill_flops("Qwen3-8B", 0), "prompt_tokens"),
        (lambda: compute.prefill_flops("Qwen3-8B", 8, causal=1.5), "causal"),
        (lambda: compute.request_flops("Qwen3-8B", 8, 0), "generated_tokens"),
        (lambda: compute.flops_per_token("no-such-model"), "model"),
    ],
)
def test_rejections(call, name):
    with pytest.raises(ValueError, match=name):
        call()
