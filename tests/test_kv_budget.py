"""The KV budget: naive vs consistent batching bounds, cost vs context (chapter 5)."""

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from aiinfra import decode, memory
from aiinfra.catalog import models
from aiinfra.serving import capacity

# the seed's 70B example: 80 layers, d = 8192, full MHA, BF16, 8,192-token context, 140 GB of weights
MHA_PER_TOKEN = memory.kv_bytes_per_token_formula(80, 64, 128, 2)
S_8K = MHA_PER_TOKEN * 8192
W_SEED = 140e9
H100_BW = 3.35e12


def test_naive_claim_reproduces_the_seed():
    # 23 requests x (3.35 TB/s / 140 GB) = 550 tok/s
    assert decode.naive_batch_tokens_per_s(23, W_SEED, H100_BW) == pytest.approx(550.36, abs=0.01)
    assert MHA_PER_TOKEN == 2_621_440
    assert pytest.approx(21.47e9, rel=1e-3) == S_8K


def test_consistent_bound_on_the_node():
    # batch 1 on 8 GPUs: 26.8 TB/s over 140 GB + 21.5 GB
    one = decode.node_batch_tokens_per_s(1, W_SEED, S_8K, H100_BW, n_gpus=8)
    assert one == pytest.approx(8 * H100_BW / (W_SEED + S_8K))
    b23 = decode.node_batch_tokens_per_s(23, W_SEED, S_8K, H100_BW, n_gpus=8)
    assert b23 == pytest.approx(23 * 8 * H100_BW / (W_SEED + 23 * S_8K))
    # 23 caches are 494 GB, about 3.5x the weights: 78 % of every step is KV
    assert decode.kv_read_share(23, W_SEED, S_8K) == pytest.approx(23 * S_8K / (W_SEED + 23 * S_8K))
    assert 0.77 < decode.kv_read_share(23, W_SEED, S_8K) < 0.79
    # the real gain of batching 23 on the node is far below 23x
    assert 5 < b23 / one < 7
    # and it agrees with decode's general step-time model when compute is free
    step = decode.batched_decode_step_time_s(23, 0.0, W_SEED, S_8K, 1e30, 8 * H100_BW)
    assert b23 == pytest.approx(23 / step)


@settings(max_examples=100, deadline=None)
@given(st.floats(1, 1e4), st.floats(1e6, 1e12), st.floats(1e3, 1e10), st.integers(1, 16))
def test_bound_laws(b, w, s, n):
    rate = decode.node_batch_tokens_per_s(b, w, s, 1e12, n)
    # never above the naive claim scaled to n GPUs, never above the KV-only ceiling n beta / S
    assert rate <= decode.naive_batch_tokens_per_s(b, w, n * 1e12) * (1 + 1e-12)
    assert rate < n * 1e12 / s
    # more requests never lower the aggregate rate
    assert decode.node_batch_tokens_per_s(2 * b, w, s, 1e12, n) >= rate * (1 - 1e-12)
    share = decode.kv_read_share(b, w, s)
    assert 0 < share < 1


def test_cost_rises_with_context():
    k = 327_680.0  # GQA 70B, BF16
    c = capacity.cost_vs_context(
        [1024, 8192, 65536], 139e9, k, 450e9, 2 * 70e9, 989.4e12, 3.35e12, 2.0, n_gpus=8
    )
    assert c.max_batch.tolist() == [
        int(450e9 // (1024 * k)),
        int(450e9 // (8192 * k)),
        int(450e9 // (65536 * k)),
    ]
    assert np.all(np.diff(c.usd_per_million_tokens) > 0)
    assert np.all(np.diff(c.tokens_per_s_per_gpu) < 0)
    # price = $/s divided by tokens/s per GPU
    assert c.usd_per_million_tokens[1] == pytest.approx(2.0 / 3600 / c.tokens_per_s_per_gpu[1] * 1e6)
    capped = capacity.cost_vs_context(
        [1024], 139e9, k, 450e9, 2 * 70e9, 989.4e12, 3.35e12, 2.0, n_gpus=8, batch_cap=64
    )
    assert capped.max_batch.tolist() == [64]


def test_rejections():
    with pytest.raises(ValueError, match="batch"):
        decode.naive_batch_tokens_per_s(0, 1.0, 1.0)
    with pytest.raises(ValueError, match="weight_bytes"):
        decode.naive_batch_tokens_per_s(1, 0.0, 1.0)
    with pytest.raises(ValueError, match="n_gpus"):
        decode.node_batch_tokens_per_s(1, 1.0, 1.0, 1.0, n_gpus=0)
    with pytest.raises(ValueError, match="efficiency"):
        decode.node_batch_tokens_per_s(1, 1.0, 1.0, 1.0, efficiency=1.5)
    with pytest.raises(ValueError, match="read something"):
        decode.node_batch_tokens_per_s(1, 0.0, 0.0, 1.0)
    with pytest.raises(ValueError, match="read something"):
        decode.kv_read_share(1, 0.0, 0.0)
    with pytest.raises(ValueError, match="kv_bytes_per_request"):
        decode.kv_read_share(1, 1.0, -1.0)
    with pytest.raises(ValueError, match="context_tokens must be <="):
        capacity.cost_vs_context([1e9], 1e9, 1e3, 1e9, 1e9, 1e15, 1e12, 1.0)
    with pytest.raises(ValueError, match="batch_cap"):
        capacity.cost_vs_context([10], 1e9, 1e3, 1e9, 1e9, 1e15, 1e12, 1.0, batch_cap=0)
    with pytest.raises(ValueError, match="usd_per_gpu_hour"):
        capacity.cost_vs_context([10], 1e9, 1e3, 1e9, 1e9, 1e15, 1e12, -1.0)


def test_mha_equivalent_and_savings():

    # the 70B with full MHA is the source's 2.62 MB/token, 8x its GQA cache
    m70 = models.load("DeepSeek-R1-Distill-Llama-70B")
    assert memory.mha_equivalent_kv_bytes_per_token(m70) == MHA_PER_TOKEN
    assert memory.mha_equivalent_kv_bytes_per_token(m70) / memory.kv_bytes_per_token(m70) == 8
    # Qwen3-8B: 32 query heads share 8 KV heads -> 4x
    q = models.load("Qwen3-8B")
    assert memory.mha_equivalent_kv_bytes_per_token(q) == 4 * memory.kv_bytes_per_token(q) == 4 * 147456
    # DeepSeek-V3: 128 heads x (192 + 128) x 61 layers x 2 B against a 576-wide latent
    v3 = models.load("DeepSeek-V3")
    assert memory.mha_equivalent_kv_bytes_per_token(v3) == 61 * 128 * (192 + 128) * 2
    assert memory.kv_bytes_per_token(v3) == 70272
    assert memory.mha_equivalent_kv_bytes_per_token("Qwen3-8B", 1) == 2 * 36 * 32 * 128
    with pytest.raises(ValueError, match="bytes_per_element"):
        memory.mha_equivalent_kv_bytes_per_token(q, 0)
