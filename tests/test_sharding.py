"""Inference across many chips (chapter 6, page 4): all-to-all bytes and time, KV and weights per GPU,
load imbalance, and one EP decode step.

Hand-derived values: DeepSeek-V3 has hidden size 7,168, top-8 of 256 routed experts (2,048 wide, in 58
MoE layers) and one shared expert; DeepEP's low-latency benchmark sends 128 tokens per GPU.
"""

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from aiinfra import memory
from aiinfra.cluster import network, sharding


def test_all_to_all_bytes_deepseek_v3():
    # 128 tokens x 8 experts x 7,168 elements: FP8 dispatch 1 B each, BF16 combine 2 B each
    assert network.moe_all_to_all_bytes(128, 7168, 8, 1.0) == 7_340_032
    assert network.moe_all_to_all_bytes(128, 7168, 8, 2.0) == 14_680_064
    # with the per-128-element FP32 scales of block-scaled FP8: 56 scales x 4 B more per vector
    assert network.moe_all_to_all_bytes(1, 7168, 8, 1 + 4 / 128) == 8 * (7168 + 56 * 4)


def test_rdma_regime_reproduces_deepep():
    # DeepEP low-latency kernels at EP128 on 50 GB/s per GPU: dispatch 192 us, combine 369 us
    link = 50e9
    dispatch = network.all_to_all_time_s(7_340_032, link, "rdma")
    combine = network.all_to_all_time_s(14_680_064, link, "rdma")
    assert dispatch == pytest.approx(192e-6, rel=0.01)
    assert combine == pytest.approx(369e-6, rel=0.01)
    # at EP256 DeepEP measured 194 us and 360 us: the fit holds within 3 %
    assert dispatch == pytest.approx(194e-6, rel=0.03) and combine == pytest.approx(360e-6, rel=0.03)


def test_nvlink_regime_is_latency_bound_at_decode_sizes():
    # one token of DeepSeek-V3 over a 900 GB/s (per direction) NVL72 link: 57 KB, 5.9 us of latency + 0.09 us
    one = network.moe_all_to_all_bytes(1, 7168, 8, 1.0)
    t = network.all_to_all_time_s(one, 900e9, "nvlink")
    assert t == pytest.approx(5.9e-6 + 57_344 / (0.68 * 900e9))
    assert 5.9e-6 / t > 0.98


def test_kv_per_gpu_under_tp():
    # Llama-3.1-70B: 8 KV heads split over TP8; over TP16 each rank still holds one whole head
    assert memory.kv_bytes_per_gpu(8e9, 8, 8) == 1e9
    assert memory.kv_bytes_per_gpu(8e9, 16, 8) == 1e9
    # MLA's one latent: every rank of any TP group holds all of it
    assert memory.kv_bytes_per_gpu(8e9, 72, 1) == 8e9


def test_ep_weights_per_gpu_deepseek_v3_by_hand():
    # routed: 58 layers x 256 experts x 3 x 7,168 x 2,048 = 653.9 G params; the rest: 671.03 G - that
    routed = 58 * 256 * 3 * 7168 * 2048
    rest = 671_026_419_200 - routed
    assert sharding.ep_weight_bytes_per_gpu("DeepSeek-V3", 72) == pytest.approx(rest + routed / 72)
    assert sharding.ep_weight_bytes_per_gpu("DeepSeek-V3", 72, 1.0, 32) == pytest.approx(
        rest + routed * 288 / 256 / 72
    )
    assert 26.1e9 < sharding.ep_weight_bytes_per_gpu("DeepSeek-V3", 72) < 26.3e9


def test_ep_max_batch_by_hand():
    # 8 x H200: 0.9 x 141 GB - 98.86 GB of weights = 28.04 GB; 8K tokens of 61 x 576 x 2 B = 575.7 MB each
    kv = 61 * 576 * 2 * 8192
    free = 0.9 * 141e9 - sharding.ep_weight_bytes_per_gpu("DeepSeek-V3", 8)
    assert sharding.ep_max_batch_per_gpu("DeepSeek-V3", "H200 SXM", 8, 8192) == int(free // kv) == 48
    assert sharding.ep_max_batch_per_gpu("DeepSeek-V3", "H200 SXM", 1, 8192) == 0  # 671 GB on one GPU


def test_uniform_loads_balance_when_experts_divide():
    loads = sharding.zipf_expert_loads(256, 0.0)
    assert np.allclose(loads, 1 / 256)
    assert sharding.ep_load_imbalance(loads, 64) == pytest.approx(1.0)
    # 256 experts on 72 GPUs: some hold 4, some 3, the busiest 4 / (256 / 72) = 1.125; 32 copies of cold
    # experts cannot help (every split leaves some GPU with 4 whole experts)
    assert sharding.ep_load_imbalance(loads, 72) == pytest.approx(4 / (256 / 72))
    assert sharding.ep_load_imbalance(loads, 72, 32) == pytest.approx(1.125)


def test_one_hot_expert_and_its_copy():
    # one expert takes half the tokens, the other 7 share the rest, 8 GPUs: its GPU holds 0.5 of the load
    loads = np.array([0.5] + [0.5 / 7] * 7)
    assert sharding.ep_load_imbalance(loads, 8) == pytest.approx(0.5 / (1 / 8))
    # 8 copies (16 slots, 2 per GPU): the hot expert now sits on 2 GPUs at 0.25 each
    assert sharding.ep_load_imbalance(loads, 8, 8) < sharding.ep_load_imbalance(loads, 8)


@settings(derandomize=True, max_examples=40, deadline=None)
@given(st.floats(0, 1.5), st.sampled_from([8, 16, 32, 64]), st.integers(0, 64))
def test_imbalance_is_at_least_one(skew, n, r):
    assert sharding.ep_load_imbalance(sharding.zipf_expert_loads(256, skew), n, r) >= 1 - 1e-12


def test_decode_step_bound_below_prediction_and_network_in_both():
    for gpu, n, b in (("GB200", 72, 64), ("H200 SXM", 8, 32)):
        bound = sharding.ep_decode_step("DeepSeek-V3", gpu, n, b, 8192)
        pred = sharding.ep_decode_step("DeepSeek-V3", gpu, n, b, 8192, prediction=True)
        assert bound.time_s <= pred.time_s
        assert bound.network_s > 0 and pred.network_s > bound.network_s
        assert bound.time_s == max(bound.compute_s, bound.memory_s, bound.network_s)


def test_decode_step_network_by_hand():
    # 64 tokens on NVL72: 58 layers x (3,670,016 + 7,340,032) B over 900 GB/s per direction = 709.5 us (bound)
    step = sharding.ep_decode_step("DeepSeek-V3", "GB200", 72, 64, 8192)
    assert step.network_s == pytest.approx(58 * (64 * 8 * 7168 * 3) / 900e9)
    # one GPU sends nothing
    assert sharding.ep_decode_step("DeepSeek-V3", "GB200", 1, 64, 8192).network_s == 0.0


@pytest.mark.parametrize(
    "call, match",
    [
        (lambda: network.moe_all_to_all_bytes(0, 7168, 8), "tokens"),
        (lambda: network.moe_all_to_all_bytes(1, 0, 8), "hidden_size"),
        (lambda: network.moe_all_to_all_bytes(1, 7168, 0), "experts_per_token"),
        (lambda: network.moe_all_to_all_bytes(1, 7168, 8, 0), "bytes_per_element"),
        (lambda: network.all_to_all_time_s(-1, 50e9), "size_bytes"),
        (lambda: network.all_to_all_time_s(1, 0), "link_bytes_per_s"),
        (lambda: network.all_to_all_time_s(1, 50e9, "carrier_pigeon"), "regime"),
        (lambda: network.AllToAllRegime("x", -1, 0.5, "nvlink", "s"), "latency_s"),
        (lambda: network.AllToAllRegime("x", 0, 0, "nvlink", "s"), "link_fraction"),
        (lambda: network.AllToAllRegime("x", 0, 0.5, "smoke", "s"), "fabric"),
        (lambda: memory.kv_bytes_per_gpu(-1, 8, 8), "kv_bytes"),
        (lambda: memory.kv_bytes_per_gpu(1, 0, 8), "tensor_parallel"),
        (lambda: memory.kv_bytes_per_gpu(1, 8, 0), "kv_heads"),
        (lambda: sharding.ep_weight_bytes_per_gpu("DeepSeek-V3", 0), "ep"),
        (lambda: sharding.ep_weight_bytes_per_gpu("DeepSeek-V3", 8, 0), "bytes_per_weight"),
        (lambda: sharding.ep_weight_bytes_per_gpu("DeepSeek-V3", 8, 1, -1), "redundant_experts"),
        (lambda: sharding.ep_weight_bytes_per_gpu("Llama-3.1-70B", 8), "model"),
        (lambda: sharding.ep_max_batch_per_gpu("DeepSeek-V3", "GB200", 72, 0), "context_tokens"),
        (
            lambda: sharding.ep_max_batch_per_gpu("DeepSeek-V3", "GB200", 72, 8, memory_utilization=0),
            "memory_utilization",
        ),
        (lambda: sharding.zipf_expert_loads(0, 1), "n_experts"),
        (lambda: sharding.zipf_expert_loads(8, -1), "exponent"),
        (lambda: sharding.ep_load_imbalance([-1, 2], 2), "expert_loads"),
        (lambda: sharding.ep_load_imbalance([0, 0], 2), "expert_loads"),
        (lambda: sharding.ep_load_imbalance([1, 2], 0), "n_ranks"),
        (lambda: sharding.ep_load_imbalance([1, 2], 2, -1), "redundant_experts"),
        (lambda: sharding.ep_decode_step("DeepSeek-V3", "GB200", 0, 1, 8), "n_gpus"),
        (lambda: sharding.ep_decode_step("DeepSeek-V3", "GB200", 72, 0, 8), "batch_per_gpu"),
        (lambda: sharding.ep_decode_step("DeepSeek-V3", "GB200", 72, 1, 0), "context_tokens"),
        (lambda: sharding.ep_decode_step("DeepSeek-V3", "GB200", 72, 1, 8, prediction=1), "prediction"),
    ],
)
def test_bad_input_names_the_argument(call, match):
    with pytest.raises(ValueError, match=match):
        call()


def test_tp_max_batch_repeats_mla_cache_on_every_rank():
    # 8 x H200, TP8: 671.03 GB / 8 = 83.88 GB of weights per GPU, 0.9 x 141 GB - that = 43.02 GB for KV;
    # MLA's 575.7 MB per 8K request sits whole on every GPU: 74 requests for the group
    free = 0.9 * 141e9 - 671_026_419_200 / 8
    assert (
        sharding.tp_max_batch("DeepSeek-V3", "H200 SXM", 8, 8192) == int(free // (61 * 576 * 2 * 8192)) == 74
    )
    # Llama-3.1-70B in BF16 on TP8: its 8 KV heads split, 327,680 B / 8 per token per GPU
    free70 = 0.9 * 141e9 - 2 * 70_553_706_496 / 8
    assert sharding.tp_max_batch("Llama-3.1-70B", "H200 SXM", 8, 8192, 2.0) == int(
        free70 // (327_680 * 8192 / 8)
    )
    with pytest.raises(ValueError, match="tp"):
        sharding.tp_max_batch("DeepSeek-V3", "H200 SXM", 0, 8192)
