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
    # one 8K cache: 2,621,440 B x 8,192 = 21,474,836,480 B (20 GiB). Batch 1 on 8 GPUs reads
    # 140 GB + 21.474836480 GB = 161.474836480 GB per step at 8 x 3.35 = 26.8 TB/s:
    # 26.8e12 / 161.47483648e9 = 165.970 tokens/s
    assert S_8K == 21_474_836_480
    one = decode.node_batch_tokens_per_s(1, W_SEED, S_8K, H100_BW, n_gpus=8)
    assert one == pytest.approx(165.97013, rel=1e-6)
    # batch 23: 23 x 21.47483648 GB = 493.92123904 GB of caches, 633.92123904 GB a step, 23 tokens:
    # 23 x 26.8e12 / 633.92123904e9 = 972.361 tokens/s
    b23 = decode.node_batch_tokens_per_s(23, W_SEED, S_8K, H100_BW, n_gpus=8)
    assert b23 == pytest.approx(972.36054, rel=1e-6)
    # 23 caches are about 3.5x the weights: 493.92123904 / 633.92123904 = 77.9 % of every step is KV
    assert decode.kv_read_share(23, W_SEED, S_8K) == pytest.approx(0.7791524, rel=1e-6)
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
    # 450 GB over 1,024 / 8,192 / 65,536 x 327,680 B = 335,544,320 / 2,684,354,560 / 21,474,836,480 B
    # per request: 1,341.1, 167.6 and 20.95 requests, floored
    assert c.max_batch.tolist() == [1341, 167, 20]
    assert np.all(np.diff(c.usd_per_million_tokens) > 0)
    assert np.all(np.diff(c.tokens_per_s_per_gpu) < 0)
    # at 8,192 tokens: 139 GB + 167 x 2,684,354,560 B = 587,287,211,520 B a step at 26.8 TB/s is
    # 21.9137 ms (the 167 x 140 GFLOP at 7.9152 PFLOP/s take 2.95 ms: memory-bound), so
    # 167 / 0.0219137 / 8 = 952.600 tokens/s per GPU, and $2/h buys a million in 1e6 / 952.600 s:
    # 2 / 3600 x 1,049.76 = $0.583199
    assert c.tokens_per_s_per_gpu[1] == pytest.approx(952.60034, rel=1e-6)
    assert c.usd_per_million_tokens[1] == pytest.approx(0.58319899, rel=1e-6)
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
