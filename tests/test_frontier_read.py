"""The inference engineer's read of the frontier pages: the library fixes it asked for, with hand-derived values.

Every expected value below is worked out on paper from the model's config or from small made-up
numbers, not by calling the function under test a second way.
"""

from __future__ import annotations

import pytest

from aiinfra import compute, decode, predict, roofline
from aiinfra.deployment import SERVING_70B, Deployment
from aiinfra.serving import chunked_prefill as cp

# DeepSeek-V3 (config.json): 61 layers, 128 query heads, kv_lora_rank 512, rope 64, nope 128, v 128.
L_V3, H_V3, R_V3, ROPE_V3 = 61, 128, 512, 64


def test_mla_decode_counts_the_absorbed_form():
    # absorbed: every head scores a 576-wide key and sums a 512-wide value over each cached token
    assert compute.decode_attention_widths("DeepSeek-V3") == (128 * 576, 128 * 512)
    per_key = 2 * H_V3 * ((R_V3 + ROPE_V3) + R_V3)  # 278,528 FLOPs per cached token and layer
    assert per_key == 278_528
    extra = compute.decode_flops("DeepSeek-V3", 1000) - compute.decode_flops("DeepSeek-V3", 0)
    assert extra == pytest.approx(L_V3 * per_key * 1000, rel=1e-12)
    # a GQA model keeps its per-head widths: Llama-3.1-70B, 64 heads of 128
    assert compute.decode_attention_widths("Llama-3.1-70B") == (8192.0, 8192.0)


def test_mla_step_flops_agree_with_the_intensity_page_3_4_quotes():
    """Deployment.step's attention FLOPs = the absorbed intensity x the KV bytes it reads."""
    d = Deployment("DeepSeek-V3", "H200 SXM", n_gpus=8, weight_precision="fp8")
    n = 4096
    attn = float(d.step(1, n).flops) - float(d.step(1, 0).flops)
    kv_bytes = L_V3 * (R_V3 + ROPE_V3) * 2 * n  # BF16 latent + rotary key, every layer
    intensity = 2 * H_V3 * (2 * R_V3 + ROPE_V3) / ((R_V3 + ROPE_V3) * 2)  # 241.78 FLOP/B
    assert roofline.model_decode_attention_intensity_flops_per_byte("DeepSeek-V3") == pytest.approx(intensity)
    assert attn == pytest.approx(intensity * kv_bytes, rel=1e-12)


def test_request_flops_are_prefill_expanded_plus_decode_absorbed():
    p, g = 300, 6
    decode_part = sum(float(compute.decode_flops("DeepSeek-V3", p + j)) for j in range(1, g))
    total = float(compute.prefill_flops("DeepSeek-V3", p)) + decode_part
    assert float(compute.request_flops("DeepSeek-V3", p, g)) == pytest.approx(total, rel=1e-12)


def test_a_decode_step_carries_a_prefill_chunk_in_its_arithmetic_only():
    # 2 decodes + 3 chunk tokens x 1e12 FLOPs at 1e15 FLOP/s: 5 ms; 1 GB of weights at 1 TB/s: 1 ms
    t = decode.batched_decode_step_time_s(2, 1e12, 1e9, 0.0, 1e15, 1e12, prefill_tokens=3)
    assert t == pytest.approx(5e-3)
    # the chunk reads no cache: 2 decodes x 1 GB of KV + 1 GB of weights = 3 ms, with or without it
    assert decode.batched_decode_step_time_s(2, 1e9, 1e9, 1e9, 1e15, 1e12, prefill_tokens=3) == pytest.approx(
        3e-3
    )
    with pytest.raises(ValueError, match="batch"):
        decode.batched_decode_step_time_s(0, 1, 1, 1, 1, 1)
    with pytest.raises(ValueError, match="prefill_tokens"):
        decode.batched_decode_step_time_s(1, 1, 1, 1, 1, 1, prefill_tokens=-1)


def test_a_chunk_step_reads_weights_and_kv_at_their_own_shares():
    # 10 GB of weights at 0.5 x 1 GB/s = 20 s; 10 decodes x 1 GB of KV at 0.25 x 1 GB/s = 40 s; + 1 s fixed
    t = cp.chunk_step_time_s(0, 10, 1.0, 10e9, 1e9, 1e15, 1e9, eta_b=0.5, overhead_s=1.0, eta_kv=0.25)
    assert t == pytest.approx(61.0)
    with pytest.raises(ValueError, match="eta_kv"):
        cp.chunk_step_time_s(0, 10, 1.0, 10e9, 1e9, 1e15, 1e9, eta_kv=0.0)
    with pytest.raises(ValueError, match="batch"):
        cp.chunk_step_time_s(0, 0, 1.0, 1.0, 0.0, 1.0, 1.0)


def test_a_step_without_a_chunk_is_the_calibrated_decode_step():
    """Page 7-7's plain decode step (prediction) is chapter 8's prediction of the same step."""
    _, pred = cp.chunk_step_times_s(SERVING_70B, 0, 64, 8192)
    assert float(pred) == pytest.approx(predict.calibrated_step_s(SERVING_70B, 64, 8192), rel=1e-9)


def test_step_overhead_is_the_fitted_cost_of_every_layer_and_its_all_reduces():
    p = predict.fitted()
    one = Deployment("Llama-3.1-70B", "H100 SXM", n_gpus=1)
    assert predict.step_overhead_s(one, p, 64) == pytest.approx(80 * p.layer_overhead_graph_s)
    eight = one.replace(n_gpus=8)
    assert predict.step_overhead_s(eight, p, 64) > predict.step_overhead_s(one, p, 64)
    assert predict.step_overhead_s(eight, p, 64, n_gpus=1) == pytest.approx(80 * p.layer_overhead_graph_s)
    with pytest.raises(ValueError, match="tokens"):
        predict.step_overhead_s(eight, p, 0)
    with pytest.raises(ValueError, match="n_gpus"):
        predict.step_overhead_s(eight, p, 1, n_gpus=0)


def test_block_scaled_formats_count_their_scales():
    from aiinfra.catalog import hardware

    # FP8 with one 4-byte scale per 128 x 128 tile: 1 + 4 / 16,384 bytes per weight
    assert hardware.weight_format("FP8 (128 x 128 blocks)").bytes_per_weight == pytest.approx(1.000244140625)
    # NVFP4: half a byte plus one 1-byte scale per 16 = 0.5625; MXFP4: one 1-byte scale per 32 = 0.53125
    assert hardware.weight_format("nvfp4").bytes_per_weight == 0.5625
    assert hardware.weight_format("MXFP4").bytes_per_weight == 0.53125
    # each runs at the rate its peak names: B300's dense FP4 is 105 PFLOP/s per 8 GPUs
    fmt = hardware.weight_format("NVFP4")
    assert hardware.gpu("B300").dense_flops_per_s(fmt.peak) == pytest.approx(105e15 / 8)
    with pytest.raises(ValueError, match="name"):
        hardware.weight_format("int3")
