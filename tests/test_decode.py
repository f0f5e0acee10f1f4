"""Batched decode: step time, throughput, latency, critical batch, KV budget, curves, wrappers."""

import math

import numpy as np
import pytest

from aiinfra import decode


def test_step_time_is_the_larger_of_two_terms():
    # memory side: (16e9 + 2 * 0.3e9) / 2e12 = 8.3 ms ; compute side: 2 * 1.6e10 / 1e15 = 0.032 ms
    t = decode.batched_decode_step_time_s(2, 1.6e10, 16e9, 0.3e9, 1e15, 2e12)
    assert t == pytest.approx(8.3e-3)
    # compute side wins at a huge batch
    t = decode.batched_decode_step_time_s(10_000, 1.6e10, 16e9, 0.0, 1e15, 2e12)
    assert t == pytest.approx(10_000 * 1.6e10 / 1e15)


def test_step_time_efficiencies():
    base = decode.batched_decode_step_time_s(1, 1.0, 10.0, 0.0, 1.0, 1.0)
    assert decode.batched_decode_step_time_s(1, 1.0, 10.0, 0.0, 1.0, 1.0, eta_b=0.5) == pytest.approx(
        2 * base
    )


def test_tokens_per_s():
    assert decode.tokens_per_s_per_user(0.02) == pytest.approx(50.0)
    assert decode.tokens_per_s_aggregate(8, 0.02) == pytest.approx(400.0)
    assert decode.memory_bound_tokens_per_s(14e9, 3.35e12) == pytest.approx(239.2857, rel=1e-6)
    assert decode.memory_bound_tokens_per_s(14e9, 3.35e12, state_bytes=14e9) == pytest.approx(
        119.642857, rel=1e-6
    )


def test_latency_conventions():
    assert decode.end_to_end_latency_s(0.1, 0.01, 11) == pytest.approx(0.2)
    # the other convention: every output token costs a step
    assert decode.end_to_end_latency_s(0.1, 0.01, 11, first_token_from_prefill=False) == pytest.approx(0.21)
    assert 0.1 + decode.decode_time_s(0.01, 11) == pytest.approx(0.21)
    assert decode.decode_time_s(0.01, 0) == 0.0
    assert decode.tpot_s(0.2, 0.1, 11) == pytest.approx(0.01)
    # tpot_s inverts end_to_end_latency_s
    e2e = decode.end_to_end_latency_s(0.35, 0.0265, 256)
    assert decode.tpot_s(e2e, 0.35, 256) == pytest.approx(0.0265)


def test_ttft_adds_queue_to_the_prefill_roofline():
    assert decode.ttft_s(3.2e13, 16e9, 1e15, 3e12, eta_f=0.5, eta_b=0.7) == pytest.approx(0.064)
    assert decode.ttft_s(3.2e13, 16e9, 1e15, 3e12, eta_f=0.5, eta_b=0.7, queue_s=0.1) == pytest.approx(0.164)
    assert decode.ttft_s(1.0, 16e9, 1e15, 2e12) == pytest.approx(8e-3)  # memory-bound short prompt


def test_critical_batch_uses_weight_bytes():
    assert decode.critical_batch_size(1, 989.4e12, 3.35e12) == pytest.approx(147.67, rel=1e-4)
    assert decode.critical_batch_size(2, 989.4e12, 3.35e12) == pytest.approx(2 * 147.67, rel=1e-4)
    assert decode.critical_batch_size(1, 1e15, 3e12, eta_f=0.5, eta_b=0.7) == pytest.approx(
        0.5e15 / (2 * 2.1e12)
    )


def test_crossover_with_state():
    b = decode.crossover_batch_with_state(2e9, 1e9, 1e6, 1e15, 1e12)
    tc = b * 2e9 / 1e15
    tm = (1e9 + b * 1e6) / 1e12
    assert tc == pytest.approx(tm)
    assert decode.crossover_batch_with_state(2e9, 1e9, 0.0, 1e15, 1e12) == pytest.approx(
        decode.critical_batch_size(1e9 / (2e9 / 2), 1e15, 1e12)
    )  # b_W = R_W / N, N = F_1 / 2
    # KV read slower than the per-request math: never compute-bound
    assert decode.crossover_batch_with_state(2e9, 1e9, 1e7, 1e15, 1e12) == math.inf


def test_max_batch_floor_and_exact_ratio():
    assert decode.max_batch_from_kv_budget(500e9, 21.47e9) == 23
    assert decode.max_batch_from_kv_budget(4.0, 1.0) == 4
    assert decode.max_batch_from_kv_budget(0.0, 1.0) == 0
    assert isinstance(decode.max_batch_from_kv_budget(10.0, 3.0), int)
    np.testing.assert_array_equal(decode.max_batch_from_kv_budget(np.array([1.0, 7.0]), 2.0), [0, 3])


@pytest.mark.parametrize(
    "call, name",
    [
        (lambda: decode.batched_decode_step_time_s(0, 1, 1, 1, 1, 1), "batch"),
        (lambda: decode.batched_decode_step_time_s(1, -1, 1, 1, 1, 1), "flops_per_request"),
        (lambda: decode.batched_decode_step_time_s(1, 1, -1, 1, 1, 1), "weight_bytes"),
        (lambda: decode.batched_decode_step_time_s(1, 1, 1, -1, 1, 1), "state_bytes_per_request"),
        (lambda: decode.batched_decode_step_time_s(1, 1, 1, 1, 0, 1), "flops_per_s"),
        (lambda: decode.batched_decode_step_time_s(1, 1, 1, 1, 1, 0), "bandwidth_bytes_per_s"),
        (lambda: decode.batched_decode_step_time_s(1, 1, 1, 1, 1, 1, eta_f=0), "eta_f"),
        (lambda: decode.batched_decode_step_time_s(1, 1, 1, 1, 1, 1, eta_b=1.2), "eta_b"),
        (lambda: decode.batched_decode_step_time_s(1, 0, 0, 0, 1, 1), "flops_per_request"),
        (lambda: decode.memory_bound_tokens_per_s(0, 1), "weight_bytes"),
        (lambda: decode.memory_bound_tokens_per_s(1, 1, efficiency=0), "efficiency"),
        (lambda: decode.tokens_per_s_per_user(0), "step_time_s"),
        (lambda: decode.tokens_per_s_aggregate(-1, 1), "batch"),
        (lambda: decode.ttft_s(1, 1, 1, 1, queue_s=-1), "queue_s"),
        (lambda: decode.ttft_s(-1, 1, 1, 1), "prefill_flops"),
        (lambda: decode.tpot_s(1.0, 0.5, 1), "output_tokens"),
        (lambda: decode.tpot_s(1.0, 2.0, 5), "ttft_s"),
        (lambda: decode.tpot_s(0, 0, 5), "end_to_end_s"),
        (lambda: decode.end_to_end_latency_s(0.1, 0.01, 0), "output_tokens"),
        (lambda: decode.end_to_end_latency_s(0.1, 0.0, 3), "tpot_s"),
        (
            lambda: decode.end_to_end_latency_s(0.1, 0.01, 3, first_token_from_prefill="yes"),
            "first_token_from_prefill",
        ),
        (lambda: decode.decode_time_s(0.01, -1), "decode_steps"),
        (lambda: decode.decode_time_s(0.0, 3), "tpot_s"),
        (lambda: decode.critical_batch_size(0, 1, 1), "bytes_per_weight"),
        (lambda: decode.critical_batch_size(1, 1, 1, eta_b=0), "eta_b"),
        (lambda: decode.crossover_batch_with_state(0, 1, 1, 1, 1), "flops_per_request"),
        (lambda: decode.max_batch_from_kv_budget(-1, 1), "free_bytes"),
        (lambda: decode.max_batch_from_kv_budget(1, 0), "kv_bytes_per_request"),
    ],
)
def test_rejections(call, name):
    with pytest.raises(ValueError, match=name):
        call()
