"""Laws the compute/systems formulas must obey (hypothesis), and agreement with their symbolic twins."""

import math

import pytest
from hypothesis import assume, given, settings
from hypothesis import strategies as st

from aiinfra import decode, roofline
from aiinfra.cluster import network
from aiinfra.deployment import Deployment
from aiinfra.serving import capacity, speculation

pos = st.floats(min_value=1e-3, max_value=1e6, allow_nan=False, allow_infinity=False)
eff = st.floats(min_value=0.05, max_value=1.0)
batch = st.integers(min_value=1, max_value=4096)
factor = st.floats(min_value=1.0, max_value=1e3)


@settings(max_examples=200, deadline=None)
@given(b=batch, f1=pos, rw=pos, rs=pos, pi=pos, bw=pos, k=factor, ef=eff, eb=eff)
def test_more_bandwidth_never_slows_a_step(b, f1, rw, rs, pi, bw, k, ef, eb):
    slow = decode.batched_decode_step_time_s(b, f1, rw, rs, pi, bw, ef, eb)
    fast = decode.batched_decode_step_time_s(b, f1, rw, rs, pi, bw * k, ef, eb)
    assert fast <= slow * (1 + 1e-12)
    assert roofline.step_time_overlapped_s(f1, rw, pi, bw * k) <= roofline.step_time_overlapped_s(
        f1, rw, pi, bw
    ) * (1 + 1e-12)


@settings(max_examples=200, deadline=None)
@given(
    b=batch,
    extra=st.integers(min_value=1, max_value=4096),
    f1=pos,
    rw=pos,
    rs=pos,
    pi=pos,
    bw=pos,
    ef=eff,
    eb=eff,
)
def test_bigger_batch_never_lowers_aggregate_throughput(b, extra, f1, rw, rs, pi, bw, ef, eb):
    t_small = decode.batched_decode_step_time_s(b, f1, rw, rs, pi, bw, ef, eb)
    t_big = decode.batched_decode_step_time_s(b + extra, f1, rw, rs, pi, bw, ef, eb)
    agg_small = decode.tokens_per_s_aggregate(b, t_small)
    agg_big = decode.tokens_per_s_aggregate(b + extra, t_big)
    assert agg_big >= agg_small * (1 - 1e-12)
    # and never above either roof: the compute roof eta_F Pi / F_1, the KV-only roof eta_B beta / R_state
    assert agg_big <= ef * pi / f1 * (1 + 1e-12)
    assert agg_big <= eb * bw / rs * (1 + 1e-12)
    # a user never gets faster as the batch grows
    assert decode.tokens_per_s_per_user(t_big) <= decode.tokens_per_s_per_user(t_small) * (1 + 1e-12)


@settings(max_examples=200, deadline=None)
@given(
    n=st.floats(min_value=1e6, max_value=1e12),
    b_w=st.sampled_from([0.5, 1.0, 2.0, 4.0]),
    pi=pos,
    bw=pos,
    ef=eff,
    eb=eff,
)
def test_critical_batch_is_where_the_two_times_cross(n, b_w, pi, bw, ef, eb):
    b_star = decode.critical_batch_size(b_w, pi, bw, ef, eb)
    t_math = roofline.compute_time_s(b_star * 2 * n, pi, ef)
    t_read = roofline.memory_time_s(b_w * n, bw, eb)
    assert t_math == pytest.approx(t_read, rel=1e-9)
    assert roofline.bound_label(0.5 * b_star * 2 * n, b_w * n, pi, bw, ef, eb) == "memory-bound"
    assert roofline.bound_label(2.0 * b_star * 2 * n, b_w * n, pi, bw, ef, eb) == "compute-bound"
    # the step time is flat (one weight read) up to B* and then grows linearly
    below = decode.batched_decode_step_time_s(0.5 * b_star, 2 * n, b_w * n, 0.0, pi, bw, ef, eb)
    assert below == pytest.approx(t_read, rel=1e-9)


@settings(max_examples=200, deadline=None)
@given(f1=pos, rw=pos, rs=pos, pi=pos, bw=pos, ef=eff, eb=eff)
def test_crossover_with_state_crosses_or_never(f1, rw, rs, pi, bw, ef, eb):
    b = decode.crossover_batch_with_state(f1, rw, rs, pi, bw, ef, eb)
    if math.isinf(b):
        # memory time grows at least as fast as compute time per request
        assert rs / (eb * bw) >= f1 / (ef * pi) * (1 - 1e-12)
    else:
        # away from the knife edge where the per-request terms nearly cancel (b -> inf), the times agree
        per_req_compute, per_req_memory = f1 / (ef * pi), rs / (eb * bw)
        assume(per_req_compute - per_req_memory > 1e-6 * per_req_compute)
        assert b * per_req_compute == pytest.approx(rw / (eb * bw) + b * per_req_memory, rel=1e-6)


@settings(max_examples=200, deadline=None)
@given(f=st.floats(min_value=0.0, max_value=0.999), s=st.floats(min_value=1.0, max_value=1e6))
def test_amdahl_never_exceeds_its_limit_or_the_part_speedup(f, s):
    sp_ = roofline.amdahl_speedup(f, s)
    assert 1.0 - 1e-12 <= sp_ <= roofline.amdahl_limit(f) * (1 + 1e-12)
    assert sp_ <= s * (1 + 1e-12)


@settings(max_examples=200, deadline=None)
@given(
    size=pos, bw=pos, lat=st.floats(min_value=0, max_value=1e-3), n=st.integers(min_value=2, max_value=4096)
)
def test_ring_allreduce_grows_with_ranks_toward_two_s_over_bw(size, bw, lat, n):
    t_n = network.ring_allreduce_time_s(size, n, bw, lat)
    t_n1 = network.ring_allreduce_time_s(size, n + 1, bw, lat)
    assert t_n1 >= t_n
    assert network.ring_allreduce_time_s(size, n, bw) < 2 * size / bw


@settings(max_examples=200, deadline=None)
@given(
    a1=st.floats(min_value=0, max_value=1),
    a2=st.floats(min_value=0, max_value=1),
    g=st.integers(min_value=1, max_value=16),
    c=st.floats(min_value=0, max_value=1),
)
def test_speculative_gain_rises_with_acceptance(a1, a2, g, c):
    lo, hi = sorted((a1, a2))
    assert (
        speculation.expected_tokens_per_target_pass(hi, g)
        >= speculation.expected_tokens_per_target_pass(lo, g) - 1e-9
    )
    e = speculation.expected_tokens_per_target_pass(hi, g)
    assert 1.0 - 1e-12 <= e <= g + 1 + 1e-9
    assert speculation.speculative_speedup(hi, g, c) <= e + 1e-12


@settings(max_examples=100, deadline=None)
@given(f=pos, r=pos, pi=pos, bw=pos, slack=st.floats(min_value=1.0, max_value=100.0))
def test_utilisation_is_at_most_one_at_or_above_the_bound(f, r, pi, bw, slack):
    t = roofline.step_time_overlapped_s(f, r, pi, bw) * slack
    assert 0 < roofline.mfu(f, pi, t) <= 1
    assert 0 < roofline.mbu(r, bw, t) <= 1
    # at the bound itself, the binding side is exactly 1
    t0 = roofline.step_time_overlapped_s(f, r, pi, bw)
    assert max(roofline.mfu(f, pi, t0), roofline.mbu(r, bw, t0)) == pytest.approx(1.0)


@settings(max_examples=100, deadline=None)
@given(
    u1=st.integers(1, 5000),
    u2=st.integers(1, 5000),
    t1=st.floats(0.02, 0.2),
    t2=st.floats(0.02, 0.2),
    ctx=st.integers(128, 32768),
)
def test_capacity_plan_is_monotone(u1, u2, t1, t2, ctx):
    replica = Deployment("Llama-3.1-8B", "H100 SXM")
    lo_u, hi_u = sorted((u1, u2))
    strict, loose = sorted((t1, t2))
    # more users never need fewer GPUs; a looser TPOT target never needs more
    assert (
        capacity.plan(replica, hi_u, loose, ctx).gpus_total
        >= capacity.plan(replica, lo_u, loose, ctx).gpus_total
    )
    assert (
        capacity.plan(replica, hi_u, strict, ctx).gpus_total
        >= capacity.plan(replica, hi_u, loose, ctx).gpus_total
    )
