"""Speculative decoding, MoE reads, capacity planning, cost per token."""

import math

import numpy as np
import pytest

from aiinfra import decode, deployment, memory
from aiinfra.catalog import models
from aiinfra.deployment import Deployment
from aiinfra.serving import capacity, speculation


def test_expected_tokens_limits_and_sum_form():
    assert speculation.expected_tokens_per_target_pass(0.0, 4) == pytest.approx(1.0)
    assert speculation.expected_tokens_per_target_pass(1.0, 4) == pytest.approx(5.0)
    a, g = 0.7, 5
    assert speculation.expected_tokens_per_target_pass(a, g) == pytest.approx(sum(a**i for i in range(g + 1)))
    # continuous at alpha -> 1
    assert speculation.expected_tokens_per_target_pass(1 - 1e-9, 4) == pytest.approx(5.0, rel=1e-6)
    np.testing.assert_allclose(
        speculation.expected_tokens_per_target_pass(np.array([0.0, 1.0]), 3), [1.0, 4.0]
    )


def test_speculative_speedup():
    # free drafts: speedup equals the expected tokens
    assert speculation.speculative_speedup(0.8, 4, 0.0) == pytest.approx(
        speculation.expected_tokens_per_target_pass(0.8, 4)
    )
    # Leviathan et al. 2023, e.g. alpha 0.8, gamma 4, c 0.05 -> 3.3616 / 1.2
    assert speculation.speculative_speedup(0.8, 4, 0.05) == pytest.approx(3.3616 / 1.2)
    # bad drafts with expensive drafting lose time
    assert speculation.speculative_speedup(0.1, 8, 0.5) < 1.0


def test_moe_reads_fewer_bytes_than_it_stores():
    m = models.load("Mixtral-8x7B-v0.1")
    assert models.active_params(m) * 2 < memory.weight_bytes(m, "bf16")


def test_max_users_per_replica_ceilings():
    users, lim = decode.max_users_per_replica(1, 0.01, 16e9, 1e9, 1.6e10, 80e9, 3.35e12, 989.4e12)
    assert lim == "bandwidth" and users == math.floor((0.01 * 3.35e12 - 16e9) / 1e9) == 17
    users, lim = decode.max_users_per_replica(1, 1.0, 16e9, 1e9, 1.6e10, 80e9, 3.35e12, 989.4e12)
    assert lim == "memory" and users == 64
    users, _ = decode.max_users_per_replica(1, 1.0, 90e9, 1e9, 1.6e10, 80e9, 3.35e12, 989.4e12)
    assert users == 0


def test_capacity_plan_meets_the_target_and_is_minimal():
    replica = Deployment("Llama-3.1-70B", "H100 SXM", memory_reserve=0.0)
    plan = capacity.plan(replica, 1000, 0.05, 32768)
    assert plan.step_time_s <= 0.05
    assert plan.replicas * plan.users_per_replica >= 1000
    assert plan.users_per_replica <= plan.max_users_per_replica
    # one replica fewer could not hold everyone
    assert (plan.replicas - 1) * plan.max_users_per_replica < 1000
    assert plan.gpus_total == plan.gpus_per_replica * plan.replicas
    # a 70B model in BF16 (141 GB) cannot live on one 80 GB card
    assert plan.gpus_per_replica >= 2
    # fewer users never need more GPUs
    assert capacity.plan(replica, 100, 0.05, 32768).gpus_total <= plan.gpus_total
    with pytest.raises(ValueError, match="target_tpot_s"):
        capacity.plan(replica, 10, 1e-4, 32768)


def test_capacity_plan_of_one_replica_size_by_hand():
    """Llama-3.1-8B on 1 H100, 4,096 tokens each, 30 ms, 10 % reserve: the three ceilings by hand."""
    replica = Deployment("Llama-3.1-8B", "H100 SXM")
    plan = capacity.plan(replica, 256, 0.03, 4096, replica_sizes=(1,))
    weights = 2 * 8_030_261_248  # stored BF16 (exact count, tests/test_models.py)
    read = 2 * models.decode_read_params("Llama-3.1-8B")
    kv = 32 * 2 * 8 * 128 * 2 * 4096  # 512 MiB per user
    memory_ceiling = (72e9 - weights) / kv
    bandwidth_ceiling = (0.03 * 3.35e12 - read) / kv
    assert plan.max_users_per_replica == math.floor(min(memory_ceiling, bandwidth_ceiling))
    assert plan.limiting == ("memory" if memory_ceiling < bandwidth_ceiling else "bandwidth")
    assert plan.replicas == math.ceil(256 / plan.max_users_per_replica)
    assert plan.as_dict()["gpus_total"] == plan.gpus_total == plan.replicas
    assert plan.step_time_s == pytest.approx(replica.step(plan.users_per_replica, 4096).time_s)
    assert plan.step_time_s <= 0.03


def test_cost_per_million_tokens():
    assert capacity.cost_per_million_tokens(3.6, 1000.0) == pytest.approx(1.0)
    assert capacity.cost_per_million_tokens(2.0, 2000.0) == pytest.approx(2.0 / 3600 / 2000 * 1e6)


@pytest.mark.parametrize(
    "call, name",
    [
        (lambda: speculation.expected_tokens_per_target_pass(1.2, 3), "alpha"),
        (lambda: speculation.expected_tokens_per_target_pass(0.5, 0), "gamma"),
        (lambda: speculation.expected_tokens_per_target_pass(0.5, 2.5), "gamma"),
        (lambda: speculation.speculative_speedup(0.5, 3, -0.1), "draft_cost_ratio"),
        (lambda: decode.max_users_per_replica(0, 1, 1, 1, 1, 1, 1, 1), "gpus_per_replica"),
        (lambda: decode.max_users_per_replica(1, [1, 2], 1, 1, 1, 1, 1, 1), "target_tpot_s"),
        (lambda: decode.max_users_per_replica(1, 1, 1, 0, 1, 1, 1, 1), "kv_bytes_per_user"),
        (
            lambda: decode.max_users_per_replica(1, 1, 1, 1, 1, 1, 1, 1, memory_reserve_fraction=1.0),
            "memory_reserve_fraction",
        ),
        (lambda: capacity.plan(Deployment("Qwen3-8B", "H100 SXM"), 0, 0.1, 100), "concurrent_users"),
        (
            lambda: capacity.plan(Deployment("Qwen3-8B", "H100 SXM"), 1, 0.1, 100, replica_sizes=()),
            "replica_sizes",
        ),
        (
            lambda: capacity.plan(Deployment("Qwen3-8B", "H100 SXM"), 1, 0.1, 100, replica_sizes=(0,)),
            "replica_sizes",
        ),
        (lambda: capacity.plan(Deployment("Qwen3-8B", "H100 SXM"), 1, 0.1, 0), "context_tokens"),
        (lambda: capacity.cost_per_million_tokens(-1, 1), "usd_per_gpu_hour"),
        (lambda: capacity.cost_per_million_tokens(1, 0), "tokens_per_s_per_gpu"),
    ],
)
def test_rejections(call, name):
    with pytest.raises(ValueError, match=name):
        call()


# --- the capacity plan with prefill ------------------------------------------------------------


def test_tpot_with_prefill_adds_each_users_share_of_a_prefill():
    # 162 users, 305.6 ms per prefill, 256-token answers: 162 x 0.3056 / 256 = 193.4 ms per token on top
    assert capacity.tpot_with_prefill_s(0.03, 162, 0.3056, 256) == pytest.approx(0.03 + 162 * 0.3056 / 256)


def test_prefill_time_is_the_new_tokens_arithmetic():
    d = deployment.SERVING_70B
    full = capacity.prefill_time_per_request_s(d, 8192)
    assert full == pytest.approx(float(d.prefill(8192).flops) / (0.5 * 8 * 989.4e12))
    # 90 % cached: only the last 820 tokens are computed, attending to the whole 8,192
    part = capacity.prefill_time_per_request_s(d, 8192, prefix_reuse=0.9)
    assert part == pytest.approx(full - float(d.prefill(7372).flops) / (0.5 * 8 * 989.4e12))


def test_the_plan_with_prefill_needs_more_gpus_and_still_meets_the_target():
    d = deployment.SERVING_70B
    decode_only = capacity.plan(d, 10_000, 0.05, 8192)
    with_prefill = capacity.plan(d, 10_000, 0.05, 8192, prompt_tokens=8192, output_tokens=256)
    reused = capacity.plan(d, 10_000, 0.05, 8192, prompt_tokens=8192, output_tokens=256, prefix_reuse=0.9)
    assert decode_only.gpus_total < reused.gpus_total < with_prefill.gpus_total
    assert with_prefill.limiting == "prefill" and with_prefill.tpot_s <= 0.05
    t = capacity.tpot_with_prefill_s(
        with_prefill.step_time_s, with_prefill.users_per_replica, with_prefill.prefill_s, 256
    )
    assert with_prefill.tpot_s == pytest.approx(t)
    # one more user per replica would miss the target
    replica = d.replace(n_gpus=with_prefill.gpus_per_replica)
    one_more = with_prefill.max_users_per_replica + 1
    step = float(replica.step(one_more, 8192).time_s)
    assert capacity.tpot_with_prefill_s(step, one_more, with_prefill.prefill_s, 256) > 0.05
    assert decode_only.output_tokens == 0 and decode_only.prefill_s == 0.0


def test_the_predicted_plan_needs_at_least_the_bounds_gpus():
    from aiinfra import predict

    d = deployment.SERVING_70B
    kw = dict(prompt_tokens=8192, output_tokens=256)
    assert (
        predict.bound_plan(d, 10_000, 0.05, 8192, **kw).gpus_total
        <= predict.plan(d, 10_000, 0.05, 8192, **kw).gpus_total
    )


@pytest.mark.parametrize(
    "kw, name",
    [
        ({"output_tokens": 0}, "output_tokens"),
        ({"output_tokens": 10, "prompt_tokens": 0}, "prompt_tokens"),
        ({"output_tokens": 10, "prefix_reuse": 1.0}, "prefix_reuse"),
        ({"output_tokens": 10, "prefill_eta_f": 0.0}, "eta_f"),
    ],
)
def test_plan_rejects_nonsense_prefill_workloads(kw, name):
    with pytest.raises(ValueError, match=name):
        capacity.plan(Deployment("Qwen3-8B", "H100 SXM"), 10, 0.1, 100, **kw)
