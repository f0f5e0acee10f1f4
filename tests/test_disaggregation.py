"""Tests for aiinfra.serving.disaggregation (chapter 7)."""

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from aiinfra.serving import disaggregation as dis

# Qwen3-8B: 147,456 B of KV per token (NOTES.md); a 2,048-token prompt holds 288 MiB.
KV_QWEN3_8B = 147_456


def test_busy_fraction():
    assert dis.prefill_busy_fraction(2.0, 0.1) == pytest.approx(0.2)
    assert dis.prefill_busy_fraction(0.0, 0.1) == 0.0


def test_colocated_tpot():
    assert dis.colocated_tpot_s(0.020, 0.2) == pytest.approx(0.025)
    assert dis.colocated_tpot_s(0.020, 0.0) == pytest.approx(0.020)
    assert dis.colocated_worst_gap_s(0.020, 0.150) == pytest.approx(0.170)


def test_kv_handoff_qwen3_8b():
    assert 2048 * KV_QWEN3_8B == 288 * 2**20
    # one 400 Gbit/s NIC = 50e9 B/s: 301,989,888 B take 6.04 ms
    t = dis.kv_handoff_time_s(2048, KV_QWEN3_8B, 50e9)
    assert t == pytest.approx(301_989_888 / 50e9)
    assert dis.kv_handoff_time_s(2048, KV_QWEN3_8B, 50e9, latency_s=1e-4) == pytest.approx(t + 1e-4)


def test_handoff_bandwidth():
    assert dis.kv_handoff_bandwidth_bytes_per_s(10, 2048, KV_QWEN3_8B) == pytest.approx(10 * 288 * 2**20)


def test_gain_and_breakeven_agree():
    td, u, tkv = 0.02, 0.2, 0.006
    g_star = dis.breakeven_output_tokens(td, u, tkv)
    assert g_star == pytest.approx(tkv * 0.8 / (td * 0.2))
    assert dis.disaggregation_gain_s(td, u, g_star, tkv) == pytest.approx(0.0, abs=1e-12)
    assert dis.disaggregation_gain_s(td, u, 2 * g_star, tkv) > 0
    assert dis.disaggregation_gain_s(td, u, g_star / 2, tkv) < 0


@settings(deadline=None)
@given(st.floats(1e-3, 0.1), st.floats(0.0, 0.9), st.integers(0, 4000), st.floats(0, 0.1))
def test_gain_equals_colocated_minus_disaggregated_latency(td, u, g, tkv):
    colocated = g * dis.colocated_tpot_s(td, u)
    disaggregated = g * td + tkv
    assert dis.disaggregation_gain_s(td, u, g, tkv) == pytest.approx(colocated - disaggregated, abs=1e-9)


def test_arrays():
    u = np.linspace(0, 0.9, 10)
    out = dis.colocated_tpot_s(0.02, u)
    assert out.shape == (10,)
    assert np.all(np.diff(out) > 0)


@pytest.mark.parametrize(
    "call,name",
    [
        (lambda: dis.prefill_busy_fraction(-1, 0.1), "prefill_rate_per_s"),
        (lambda: dis.prefill_busy_fraction(1, 0), "prefill_time_s"),
        (lambda: dis.colocated_tpot_s(0.02, 1.0), "prefill_busy_fraction"),
        (lambda: dis.colocated_tpot_s(0, 0.2), "decode_step_time_s"),
        (lambda: dis.colocated_worst_gap_s(0.02, -1), "prefill_time_s"),
        (lambda: dis.kv_handoff_time_s(2048, 0, 50e9), "kv_bytes_per_token"),
        (lambda: dis.kv_handoff_time_s(2048, 1, 0), "bandwidth_bytes_per_s"),
        (lambda: dis.kv_handoff_time_s(2048, 1, 1, latency_s=-1), "latency_s"),
        (lambda: dis.kv_handoff_bandwidth_bytes_per_s(1, -5, 1), "prompt_tokens"),
        (lambda: dis.disaggregation_gain_s(0.02, 0.2, -1, 0), "output_tokens"),
        (lambda: dis.breakeven_output_tokens(0.02, 0.0, 0.01), "prefill_busy_fraction"),
    ],
)
def test_rejections(call, name):
    with pytest.raises(ValueError, match=name):
        call()
