"""Serving techniques of chapter 7, page 7: chunked prefill, tree drafts, layer-wise KV transfer,
KV offload, multi-LoRA, sparse attention and goodput. Values derived by hand in the comments."""

import pytest

from aiinfra import compute
from aiinfra.serving import chunked_prefill as cp
from aiinfra.serving import disaggregation as dis
from aiinfra.serving import lora, slo
from aiinfra.serving import prefix_cache as pc
from aiinfra.serving import sparse_attention as sa
from aiinfra.serving import speculation as spec


def test_chunk_step_rides_on_the_weight_read_until_the_critical_batch():
    # F_1 = 1.4e11 FLOP, Pi = 1e15: 0.14 ms per token; R_W = 1.4e11 B at 1e13 B/s: 14 ms, so 100 tokens fill it
    args = dict(
        flops_per_token=1.4e11,
        weight_bytes=1.4e11,
        state_bytes_per_request=0.0,
        flops_per_s=1e15,
        bandwidth_bytes_per_s=1e13,
    )
    assert cp.chunk_step_time_s(0, 64, **args) == pytest.approx(14e-3)
    assert cp.chunk_step_time_s(36, 64, **args) == pytest.approx(14e-3)
    assert cp.chunk_step_time_s(436, 64, **args) == pytest.approx(70e-3)  # 500 tokens x 0.14 ms
    assert cp.chunk_step_time_s(436, 64, **args, eta_f=0.5, overhead_s=1e-3) == pytest.approx(141e-3)
    # 64 decodes each reading 1e9 B of KV add 64e9 B: 204e9 B at 1e13 B/s = 20.4 ms, above 100 tokens' 14 ms
    kv = {**args, "state_bytes_per_request": 1e9}
    assert cp.chunk_step_time_s(36, 64, **kv) == pytest.approx(20.4e-3)


def test_chunk_step_of_a_deployment_bound_below_prediction():
    from aiinfra.deployment import SERVING_70B as d

    # 2,048 prompt tokens + 64 decodes on 8 H100s: compute 2,112 x F_1 / Pi against weights + 64 KV reads
    one = d.step(1, 8192)
    bound, pred = cp.chunk_step_times_s(d, 2048, 64, 8192)
    compute_s = 2112 * one.flops / d.peak_flops_per_s
    memory_s = (one.weight_bytes + 64 * one.kv_bytes) / d.bandwidth_bytes_per_s
    assert bound == pytest.approx(max(compute_s, memory_s))
    assert pred > bound


def test_chunked_ttft_counts_whole_steps():
    assert cp.chunked_ttft_s(8192, 512, 0.07) == pytest.approx(16 * 0.07)
    assert cp.chunked_ttft_s(8193, 512, 0.07) == pytest.approx(17 * 0.07)
    assert cp.chunked_ttft_s(100, 512, 0.07) == pytest.approx(0.07)


def test_tree_draft_widens_each_depth():
    # alpha 0.6, two candidates: 1 - 0.4^2 = 0.84 per depth; depth 3: 1 + .84 + .7056 + .592704
    assert spec.tree_level_acceptance(0.6, 2) == pytest.approx(0.84)
    assert spec.tree_expected_tokens_per_pass(0.6, 3, 2) == pytest.approx(3.138304)
    assert spec.tree_verified_tokens(3, 2) == 7
    # a chain is a tree of width 1: 1 + .8 + .64 + .512 + .4096
    assert spec.tree_expected_tokens_per_pass(0.8, 4, 1) == pytest.approx(3.3616)
    assert spec.tree_verified_tokens(4, 1) == 5


def test_verification_attention_is_t_decode_steps_of_attention():
    # 2 x 80 x 5 x 8192 x 16384 = 107,374,182,400
    assert spec.verification_attention_flops(80, 8192, 8192, 8192, 5) == pytest.approx(107_374_182_400)
    one = compute.attention_flops_per_token(80, 8192, 8192, 8192)
    assert spec.verification_attention_flops(80, 8192, 8192, 8192, 5) == pytest.approx(5 * one)


def _simulated_exposed_s(t_p, t_kv, n):
    """Layer i is computed by (i + 1) t_p / n; its send starts then or when the link frees up."""
    link_free = 0.0
    for i in range(n):
        link_free = max(link_free, (i + 1) * t_p / n) + t_kv / n
    return link_free - t_p


@pytest.mark.parametrize(
    "t_p, t_kv, n", [(0.16, 0.0537, 80), (0.16, 0.32, 80), (1.0, 1.0, 4), (0.1, 0.0, 10)]
)
def test_layerwise_exposure_matches_a_layer_by_layer_schedule(t_p, t_kv, n):
    assert dis.layerwise_kv_exposed_s(t_p, t_kv, n) == pytest.approx(_simulated_exposed_s(t_p, t_kv, n))


def test_layerwise_exposure_values():
    assert dis.layerwise_kv_exposed_s(0.16, 0.0537, 80) == pytest.approx(0.0537 / 80)  # the link keeps up
    assert dis.layerwise_kv_exposed_s(0.16, 0.32, 80) == pytest.approx(0.162)  # 0.32 - 0.16 + 0.002


def test_reload_breakeven_bandwidth():
    # 0.5 x 1e15 x 327,680 / 1.4e11 = 1.1702857e9 B/s, where reloading and recomputing take equally long
    bw = pc.reload_breakeven_bandwidth_bytes_per_s(1.4e11, 1e15, 327_680, efficiency=0.5)
    assert bw == pytest.approx(1.1702857e9, rel=1e-6)
    assert pc.reload_speedup(1.4e11, 1e15, 327_680, bw, efficiency=0.5) == pytest.approx(1.0)


def test_lora_adapter_of_llama_70b():
    # per layer: q 16,384 + k 9,216 + v 9,216 + o 16,384 + gate, up, down 3 x 36,864 = 161,792; x 80 layers
    assert lora.adapted_width_sum("Llama-3.1-70B") == 12_943_360
    assert lora.adapted_width_sum("Llama-3.1-70B", groups=("attention",)) == 80 * 51_200
    assert lora.lora_adapter_bytes(16, 12_943_360) == 414_187_520  # rank 16, BF16
    assert lora.lora_flops_per_token(16, 12_943_360) == 414_187_520  # 2 r w
    assert lora.multi_lora_step_bytes(1.4e11, 8, 4e8) == pytest.approx(1.432e11)


def test_sparse_attention_counts():
    # L 2, widths 4 + 2, n 10, top-4, indexer 3 heads x 2: 2 x 2 x (4 x 6 + 10 x 3 x 2) = 336
    assert sa.sparse_attention_flops_per_token(2, 4, 2, 10, 4, 3, 2) == pytest.approx(336)
    assert sa.sparse_attention_flops_per_token(2, 4, 2, 10, 16, 0, 0) == pytest.approx(
        compute.attention_flops_per_token(2, 4, 2, 10)
    )
    assert sa.sparse_attention_read_bytes_per_token(2, 10, 4, 8, 2) == pytest.approx(104)  # 2 x (32 + 20)


def test_slo_attainment_and_goodput():
    ttft, tpot = [0.5, 1.0, 2.0, 0.2], [0.04, 0.06, 0.03, 0.05]
    assert slo.slo_attainment(ttft, tpot, 1.0, 0.05) == pytest.approx(0.5)  # the first and the last
    assert slo.slo_attainment(ttft, 0.01, 1.0, 0.05) == pytest.approx(0.75)
    assert slo.goodput_per_s(10.0, 0.5) == pytest.approx(5.0)


@pytest.mark.parametrize(
    "call, name",
    [
        (lambda: cp.chunk_step_time_s(-1, 1, 1, 1, 0, 1, 1), "chunk_tokens"),
        (lambda: cp.chunk_step_time_s(1, 1, 1, 1, 0, 1, 1, eta_b=0), "eta_b"),
        (lambda: cp.chunk_step_time_s(1, 1, 1, 1, -1, 1, 1), "state_bytes_per_request"),
        (lambda: cp.chunked_ttft_s(100, 0, 1), "chunk_tokens"),
        (lambda: spec.tree_level_acceptance(1.2, 2), "alpha"),
        (lambda: spec.tree_expected_tokens_per_pass(0.5, 0, 2), "depth"),
        (lambda: spec.tree_verified_tokens(2, 0), "width"),
        (lambda: spec.verification_attention_flops(80, 1, 1, 10, 0), "verified_tokens"),
        (lambda: dis.layerwise_kv_exposed_s(0, 1, 1), "prefill_time_s"),
        (lambda: dis.layerwise_kv_exposed_s(1, 1, 0), "n_layers"),
        (lambda: pc.reload_breakeven_bandwidth_bytes_per_s(0, 1, 1), "flops_per_token"),
        (lambda: lora.adapted_width_sum("Llama-3.1-70B", groups=("nope",)), "groups"),
        (lambda: lora.lora_adapter_bytes(0, 1), "rank"),
        (lambda: lora.multi_lora_step_bytes(1, -1, 1), "distinct_adapters"),
        (lambda: sa.sparse_attention_flops_per_token(1, 1, 1, 10, 0, 1, 1), "topk_tokens"),
        (lambda: sa.sparse_attention_read_bytes_per_token(1, 10, 4, 0, 1), "kv_bytes_per_token_per_layer"),
        (lambda: slo.slo_attainment([1, 2], [1, 2, 3], 1, 1), "ttft_s and tpot_s"),
        (lambda: slo.slo_attainment([1], [1], 0, 1), "ttft_slo_s"),
        (lambda: slo.slo_attainment([float("nan")], [1], 1, 1), "ttft_s"),
        (lambda: slo.goodput_per_s(1, 1.5), "attainment"),
    ],
)
def test_rejections_name_the_argument(call, name):
    with pytest.raises(ValueError, match=name):
        call()


def test_hybrid_attention_flops_count_only_the_full_attention_layers():
    # Qwen3-Next-80B-A3B: 12 of 48 layers attend, each with 16 heads x 256 for q.k and for v:
    # 12 x 2 x 1,000 x (4,096 + 4,096) = 196,608,000 FLOPs at 1,000 cached tokens
    at = compute.decode_flops_breakdown("Qwen3-Next-80B-A3B-Instruct", 1000)["exact"]["attention"]
    assert at == pytest.approx(196_608_000)
    assert compute.decode_flops("Qwen3-Next-80B-A3B-Instruct", 1000) > compute.decode_flops(
        "Qwen3-Next-80B-A3B-Instruct", 0
    )
