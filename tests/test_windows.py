"""Window-aware attention in memory, compute and Deployment: values derived by hand from the configs.

Gemma 2 2B: 26 layers alternating sliding (window 4,096) and global, 8 query heads and 4 KV heads of
256. gpt-oss-20b: 24 layers alternating a 128-token window and full attention, 64 query heads and 8 KV
heads of 64. Gemma 3 1B: one global layer in six, window 512, 4 query heads and 1 KV head of 256.
"""

import warnings

import numpy as np
import pytest

from aiinfra import compute, memory
from aiinfra.catalog import models
from aiinfra.catalog.models import ContextLengthWarning
from aiinfra.deployment import Deployment

GEMMA2_KV_PER_LAYER_TOKEN = 2 * 4 * 256 * 2  # K and V, 4 heads of 256, BF16: 4,096 B
GPT_OSS_WIDTH = 64 * 64  # query heads x head_dim (= value width)


def test_gpt_oss_decode_attention_caps_the_sliding_layers():
    m = models.load("gpt-oss-20b")
    matmuls = compute.flops_per_token(m)
    for ctx in (100, 1000, 131_072):
        full = 12 * 2 * ctx * (GPT_OSS_WIDTH + GPT_OSS_WIDTH)
        sliding = 12 * 2 * min(ctx, 128) * (GPT_OSS_WIDTH + GPT_OSS_WIDTH)
        assert compute.decode_flops(m, ctx) == matmuls + full + sliding
    # matmuls: attention and router and 4 of 32 experts per layer, and the 201,088 x 2,880 head
    g = models.params_by_group(m)
    assert matmuls == 2 * (g["attention"] + g["router"] + g["expert"] // 8 + 201_088 * 2880)


def test_gemma3_prefill_counts_window_pairs_by_hand():
    m = models.load("gemma-3-1b-it")
    width = 4 * 256
    p = 1000
    full_pairs = p * (p + 1) // 2
    sliding_pairs = 512 * 513 // 2 + (p - 512) * 512  # positions past the window see exactly 512 keys
    attention = 2 * (width + width) * (4 * full_pairs + 22 * sliding_pairs)
    matmuls = 2 * models.block_linear_params_per_token(m) * p + 2 * models.lm_head_params(m)
    assert compute.prefill_flops(m, p) == matmuls + attention
    bidirectional = 2 * (width + width) * (4 * p * p + 22 * p * 512)
    assert compute.prefill_flops(m, p, causal=False) == matmuls + bidirectional


@pytest.mark.parametrize("name", ["gemma-2-2b-it", "gpt-oss-20b", "gemma-3-1b-it", "Qwen3-8B"])
def test_a_request_is_its_prefill_plus_its_decode_steps(name):
    m = models.load(name)
    p, g = 600, 5
    steps = sum(compute.decode_flops(m, p + j) for j in range(1, g))
    assert compute.request_flops(m, p, g) == pytest.approx(compute.prefill_flops(m, p) + steps, rel=1e-12)


def test_deployment_kv_and_max_batch_honour_the_window():
    d = Deployment("gemma-2-2b-it", "H100 SXM", memory_reserve=0.0)
    kv = GEMMA2_KV_PER_LAYER_TOKEN * (13 * 4096 + 13 * 8192)
    assert d.kv_bytes(8192) == kv == 654_311_424
    assert d.kv_bytes_per_token == 26 * GEMMA2_KV_PER_LAYER_TOKEN
    weights = 2 * 2_614_341_888
    assert d.max_batch(8192) == (80_000_000_000 - weights) // kv
    # without the window every layer would hold 8,192 tokens: fewer requests fit
    assert d.max_batch(8192) > (80_000_000_000 - weights) // (26 * GEMMA2_KV_PER_LAYER_TOKEN * 8192)
    step = d.step(4, 8192)
    assert step.kv_bytes == 4 * kv


def test_kv_heads_override_keeps_the_layout():
    d = Deployment("gemma-2-2b-it", "H100 SXM", kv_heads=8)
    per_layer = 2 * 8 * 256 * 2
    assert d.kv_bytes_per_token == 26 * per_layer
    assert d.kv_bytes(8192) == per_layer * (13 * 4096 + 13 * 8192)
    with pytest.raises(ValueError, match="kv_heads applies to MHA/GQA"):
        Deployment("DeepSeek-V2-Lite", "H100 SXM", kv_heads=8)


def test_mla_requests_store_the_latent_and_the_rope_key():
    m = models.load("DeepSeek-V2-Lite")
    assert memory.kv_bytes_per_request(m, 4096) == 27 * (512 + 64) * 2 * 4096
    assert memory.mha_equivalent_kv_bytes_per_token(m) == 27 * (16 * 192 + 16 * 128) * 2


def test_a_context_past_the_positions_warns_once_per_call():
    m = models.load("gemma-2-2b-it")
    with pytest.warns(
        ContextLengthWarning, match="9,000 exceeds max_position_embeddings 8,192 of gemma-2-2b-it"
    ):
        memory.kv_bytes_per_request(m, np.array([1000, 9000]))
    with pytest.warns(ContextLengthWarning):
        Deployment(m, "H100 SXM").max_batch(9000)
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        memory.kv_bytes_per_request(m, 8192)  # exactly the limit
        compute.decode_flops(m, 100_000)  # FLOPs curves may run past it without a word
        compute.context_where_two_n_is_off(m)
