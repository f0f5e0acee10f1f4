"""Speculative decoding, MoE reads, capacity planning, cost per token."""
import math

import numpy as np
import pytest

from aiinfra import decode, hardware, memory, models, serving


def test_expected_tokens_limits_and_sum_form():
    assert serving.expected_tokens_per_target_pass(0.0, 4) == pytest.approx(1.0)
    assert serving.expected_tokens_per_target_pass(1.0, 4) == pytest.approx(5.0)
    a, g = 0.7, 5
    assert serving.expected_tokens_per_target_pass(a, g) == pytest.approx(sum(a ** i for i in range(g + 1)))
    # continuous at alpha -> 1
    assert serving.expected_tokens_per_target_pass(1 - 1e-9, 4) == pytest.approx(5.0, rel=1e-6)
    np.testing.assert_allclose(serving.expected_tokens_per_target_pass(np.array([0.0, 1.0]), 3), [1.0, 4.0])


def test_speculative_speedup():
    # free drafts: speedup equals the expected tokens
    assert serving.speculative_speedup(0.8, 4, 0.0) == pytest.approx(serving.expected_tokens_per_target_pass(0.8, 4))
    # Leviathan et al. 2023, e.g. alpha 0.8, gamma 4, c 0.05 -> 3.3616 / 1.2
    assert serving.speculative_speedup(0.8, 4, 0.05) == pytest.approx(3.3616 / 1.2)
    # bad drafts with expensive drafting lose time
    assert serving.speculative_speedup(0.1, 8, 0.5) < 1.0


def test_moe_counts():
    assert serving.moe_active_params(1e9, 0.5e9, 2) == pytest.approx(2e9)
    assert serving.moe_active_bytes_per_token(2e9, 2) == pytest.approx(4e9)
    m = models.load("Mixtral-8x7B-v0.1")
    assert serving.moe_active_bytes_per_token(models.active_params(m), 2) < memory.weight_bytes(m, "bf16")


def test_max_users_per_replica_ceilings():
    users, lim = serving.max_users_per_replica(1, 0.01, 16e9, 1e9, 1.6e10, 80e9, 3.35e12, 989.4e12)
    assert lim == "bandwidth" and users == math.floor((0.01 * 3.35e12 - 16e9) / 1e9) == 17
    users, lim = serving.max_users_per_replica(1, 1.0, 16e9, 1e9, 1.6e10, 80e9, 3.35e12, 989.4e12)
    assert lim == "memory" and users == 64
    users, _ = serving.max_users_per_replica(1, 1.0, 90e9, 1e9, 1.6e10, 80e9, 3.35e12, 989.4e12)
    assert users == 0


def test_capacity_plan_meets_the_target_and_is_minimal():
    kw = dict(weight_bytes=141e9, kv_bytes_per_user=0.33e9 * 4, flops_per_token=1.5e11,
              gpu_memory_bytes=80e9, gpu_bandwidth_bytes_per_s=3.35e12, gpu_flops_per_s=989.4e12)
    plan = serving.gpus_for_users_core(1000, 0.05, **kw)
    assert plan.step_time_s <= 0.05
    assert plan.replicas * plan.users_per_replica >= 1000
    assert plan.users_per_replica <= plan.max_users_per_replica
    # one replica fewer could not hold everyone
    assert (plan.replicas - 1) * plan.max_users_per_replica < 1000
    assert plan.gpus_total == plan.gpus_per_replica * plan.replicas
    # a 70B model in BF16 cannot live on one or two 80 GB cards
    assert plan.gpus_per_replica >= 4
    # fewer users never need more GPUs
    assert serving.gpus_for_users_core(100, 0.05, **kw).gpus_total <= plan.gpus_total
    with pytest.raises(ValueError, match="target_tpot_s"):
        serving.gpus_for_users_core(10, 1e-4, **kw)


def test_capacity_plan_from_configs():
    m = models.load("Llama-3.1-8B")
    g = hardware.gpu("H100 SXM")
    plan = serving.gpus_for_users(256, 0.03, 4096, m, g)
    assert plan.as_dict()["gpus_total"] == plan.gpus_total
    step = decode.decode_step_time_s(m, g, batch=plan.users_per_replica, context_tokens=4096,
                                     n_gpus=plan.gpus_per_replica)
    assert step == pytest.approx(plan.step_time_s)
    assert step <= 0.03


def test_cost_per_million_tokens():
    assert serving.cost_per_million_tokens(3.6, 1000.0) == pytest.approx(1.0)
    assert serving.cost_per_million_tokens(2.0, 2000.0) == pytest.approx(2.0 / 3600 / 2000 * 1e6)


@pytest.mark.parametrize("call, name", [
    (lambda: serving.expected_tokens_per_target_pass(1.2, 3), "alpha"),
    (lambda: serving.expected_tokens_per_target_pass(0.5, 0), "gamma"),
    (lambda: serving.expected_tokens_per_target_pass(0.5, 2.5), "gamma"),
    (lambda: serving.speculative_speedup(0.5, 3, -0.1), "draft_cost_ratio"),
    (lambda: serving.moe_active_params(-1, 1, 1), "shared_params"),
    (lambda: serving.moe_active_params(1, 1, 0), "experts_per_token"),
    (lambda: serving.moe_active_bytes_per_token(1, 0), "bytes_per_param"),
    (lambda: serving.max_users_per_replica(0, 1, 1, 1, 1, 1, 1, 1), "gpus_per_replica"),
    (lambda: serving.max_users_per_replica(1, [1, 2], 1, 1, 1, 1, 1, 1), "target_tpot_s"),
    (lambda: serving.max_users_per_replica(1, 1, 1, 0, 1, 1, 1, 1), "kv_bytes_per_user"),
    (lambda: serving.max_users_per_replica(1, 1, 1, 1, 1, 1, 1, 1, memory_reserve_fraction=1.0), "memory_reserve_fraction"),
    (lambda: serving.gpus_for_users_core(0, 1, 1, 1, 1, 1, 1, 1), "concurrent_users"),
    (lambda: serving.gpus_for_users_core(1, 1, 1, 1, 1, 1, 1, 1, replica_sizes=()), "replica_sizes"),
    (lambda: serving.gpus_for_users_core(1, 1, 1, 1, 1, 1, 1, 1, replica_sizes=(0,)), "replica_sizes"),
    (lambda: serving.gpus_for_users(1, 0.1, 0, "Qwen3-8B", hardware.gpu("h100")), "context_tokens"),
    (lambda: serving.cost_per_million_tokens(-1, 1), "usd_per_gpu_hour"),
    (lambda: serving.cost_per_million_tokens(1, 0), "tokens_per_s_per_gpu"),
])
def test_rejections(call, name):
    with pytest.raises(ValueError, match=name):
        call()
