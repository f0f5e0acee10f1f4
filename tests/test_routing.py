"""Routing over replicas (chapter 7): hand-worked queues, cache hits, balls into bins, and the laws they obey."""

import math

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from aiinfra.deployment import SERVING_70B
from aiinfra.serving import prefix_cache, routing


def _workload(arrival, prefix_id, prefill_miss, decode, slots=1, prefill_hit=None):
    """A hand-made workload: the numbers of each test are worked out next to it."""
    n = len(arrival)
    arrival = np.asarray(arrival, dtype=float)
    ones = np.ones(n, dtype=np.int64)
    trace = routing.RoutingTrace(arrival, np.asarray(prefix_id, dtype=np.int64), ones, 2 * ones, ones)
    miss = np.full(n, float(prefill_miss))
    hit = miss if prefill_hit is None else np.full(n, float(prefill_hit))
    return routing.Workload(trace, slots, miss, hit, np.full(n, float(decode)), 1.0)


def _run(wl, rate=1.0, **kw):
    kw.setdefault("n_replicas", 1)
    kw.setdefault("cache_prefixes", 1)
    return routing.simulate(wl, [rate], **kw)


def test_one_slot_is_a_queue_worked_by_hand():
    # arrivals 0, 1, 2; each request holds the slot 0.5 s of prefill + 2 s of decode = 2.5 s.
    # request 0 starts at 0; request 1 waits for the slot until 2.5 (queue 1.5, first token at 3.0, TTFT 2.0);
    # request 2 waits until 5.0 (queue 3.0, TTFT 3.5)
    res = _run(_workload([0, 1, 2], [0, 1, 2], 0.5, 2.0))
    np.testing.assert_allclose(res.queue_s[0, 0], [0.0, 1.5, 3.0])
    np.testing.assert_allclose(res.ttft_s[0, 0], [0.5, 2.0, 3.5])


def test_the_prefill_engine_serialises_prompts():
    # two slots, two requests at t = 0, 1 s of prefill each: the second has a slot at once but
    # waits for the first prefill to end (queue 1, TTFT 2)
    res = _run(_workload([0, 0], [0, 1], 1.0, 1.0, slots=2))
    np.testing.assert_allclose(res.queue_s[0, 0], [0.0, 1.0])
    np.testing.assert_allclose(res.ttft_s[0, 0], [1.0, 2.0])


def test_the_rate_scales_the_arrival_clock():
    # the same three requests at rate 2: arrivals at 0, 0.5, 1.0; queues 0, 2.0, 4.0 (service 2.5 s each)
    res = _run(_workload([0, 1, 2], [0, 1, 2], 0.5, 2.0), rate=2.0)
    np.testing.assert_allclose(res.queue_s[0, 0], [0.0, 2.0, 4.0])


@pytest.mark.parametrize("policy", ["round_robin", "least_loaded"])
def test_two_replicas_split_a_burst(policy):
    # four requests at t = 0, one slot per replica, 1 s each: two start at once, two wait 1 s
    res = _run(_workload([0, 0, 0, 0], [0, 1, 2, 3], 0.25, 0.75), n_replicas=2, policies=[policy])
    np.testing.assert_allclose(res.queue_s[0, 0], [0.0, 0.0, 1.0, 1.0])
    assert sorted(res.replica[0, 0, :2]) == [0, 1]


def test_least_recently_used_prefix_is_evicted():
    # one replica caching one prefix: A A B B A -> miss hit miss hit miss
    res = _run(_workload([0, 10, 20, 30, 40], [0, 0, 1, 1, 0], 1.0, 1.0, prefill_hit=0.25))
    assert res.hit[0, 0].tolist() == [False, True, False, True, False]
    # a hit prefills only the suffix: TTFT 0.25 s instead of 1 s (nobody waits at this spacing)
    np.testing.assert_allclose(res.ttft_s[0, 0], [1.0, 0.25, 1.0, 0.25, 1.0])
    # with room for both prefixes the last request hits too
    res2 = _run(_workload([0, 10, 20, 30, 40], [0, 0, 1, 1, 0], 1.0, 1.0, prefill_hit=0.25), cache_prefixes=2)
    assert res2.hit[0, 0].tolist() == [False, True, False, True, True]


def test_a_cache_that_holds_every_prefix_misses_once_per_prefix():
    tr = routing.shared_prefix_trace(400, 12, seed=3)
    wl = routing.Workload(tr, 8, np.ones(len(tr)), np.ones(len(tr)) / 4, np.ones(len(tr)), 0.01)
    res = routing.simulate(wl, [0.5], n_replicas=1, cache_prefixes=12)
    assert res.hit.sum(axis=-1).ravel().tolist() == [len(tr) - np.unique(tr.prefix_id).size] * len(
        res.policies
    )


def test_replica_capacity_worked_by_hand():
    # 4 slots held 0.5 + 1.5 = 2 s each: 2 requests/s; one prefill engine at 0.5 s: 2 requests/s
    assert routing.replica_capacity_per_s(4, 0.5, 1.5) == pytest.approx(2.0)
    # 1 s prefills: the prefill engine binds at 1 request/s, the slots would allow 2
    assert routing.replica_capacity_per_s(4, 1.0, 1.0) == pytest.approx(1.0)
    np.testing.assert_allclose(routing.replica_capacity_per_s(4, np.array([0.5, 1.0]), 1.0), [2.0, 1.0])


def test_cache_prefixes_that_fit_chapter_server():
    # 8 x 80 GB at a 10 % reserve, minus 70,553,706,496 BF16 weights = 434,892,587,008 B free;
    # KV is 2 x 80 layers x 8 heads x 128 x 2 B = 327,680 B per token. 10 requests of 8,192 tokens
    # take 26,843,545,600 B; one 8,192-token prefix 2,684,354,560 B: (434,892,587,008 - 26,843,545,600)
    # // 2,684,354,560 = 152
    assert routing.cache_prefixes_that_fit(SERVING_70B, 10, 8192, 8192) == 152
    with pytest.raises(ValueError, match="slots"):
        routing.cache_prefixes_that_fit(SERVING_70B, 200, 8192, 8192)


def test_workload_costs_follow_the_prefix_identity():
    tr = routing.shared_prefix_trace(
        50, 4, seed=1, prefix_tokens=4096, min_suffix_tokens=1024, max_suffix_tokens=2048
    )
    wl = routing.workload(tr, SERVING_70B, 64)
    # decode: G - 1 steps at the step time of a full batch
    np.testing.assert_allclose(wl.decode_s, (tr.output_tokens - 1) * wl.step_s)
    # a suffix of 1,024+ tokens keeps even a hit's prefill compute-bound (its FLOPs take longer than
    # the 141 GB weight read at 0.7 x 26.8 TB/s, 7.5 ms), so miss - hit is the prefix alone:
    # F(P, 0) - F(P, c) = F(c, 0), at eta_F x 8 x 989.4 TFLOP/s
    f, a = prefix_cache.model_prefill_coefficients(SERVING_70B.model)
    saved = prefix_cache.prefill_flops_with_prefix(4096, 0, f, a) / (0.5 * 8 * 989.4e12)
    np.testing.assert_allclose(wl.prefill_miss_s - wl.prefill_hit_s, saved, rtol=1e-9)
    assert wl.capacity_per_s == pytest.approx(
        min(64 / (wl.prefill_miss_s.mean() + wl.decode_s.mean()), 1 / wl.prefill_miss_s.mean())
    )


def test_shared_prefix_trace_is_reproducible_and_shaped():
    a = routing.shared_prefix_trace(
        300, 16, seed=5, prefix_tokens=1000, min_suffix_tokens=10, max_suffix_tokens=20
    )
    b = routing.shared_prefix_trace(
        300, 16, seed=5, prefix_tokens=1000, min_suffix_tokens=10, max_suffix_tokens=20
    )
    np.testing.assert_array_equal(a.arrival, b.arrival)
    np.testing.assert_array_equal(a.prefix_id, b.prefix_id)
    assert a.arrival[0] == 0 and np.all(np.diff(a.arrival) >= 0)
    assert np.all((a.prompt_tokens - a.prefix_tokens >= 10) & (a.prompt_tokens - a.prefix_tokens <= 20))
    assert a.n_prefixes <= 16 and np.all(a.output_tokens >= 1)
    # Poisson arrivals of rate 1: mean gap near 1 (299 gaps, standard error ~0.06)
    assert np.mean(np.diff(a.arrival)) == pytest.approx(1.0, abs=0.25)
    # Zipf exponent 1: prefix 0 is the most popular
    assert np.bincount(a.prefix_id).argmax() == 0


# --- balls into bins --------------------------------------------------------------------


def test_max_load_small_cases_by_hand():
    # 2 balls in 2 bins. One choice: same bin with probability 1/2, so E[max] = 1.5. Two distinct
    # choices: the second ball always sees both bins and takes the empty one, so max = 1 exactly.
    assert routing.max_load(2, 2, 1, trials=200_000, seed=1).mean() == pytest.approx(1.5, abs=0.01)
    assert set(routing.max_load(2, 2, 2, trials=1000, seed=1)) == {1}
    # 3 balls in 3 bins, one choice: P(max 3) = 3/27, P(max 1) = 6/27, else 2: E = 17/9.
    # Two distinct choices: ball 2 always finds an empty bin; ball 3 picks two of three bins and
    # lands on a loaded one only if both are loaded (1/3): E = 1 + 1/3 = 4/3.
    assert routing.max_load(3, 3, 1, trials=200_000, seed=2).mean() == pytest.approx(17 / 9, abs=0.01)
    assert routing.max_load(3, 3, 2, trials=200_000, seed=2).mean() == pytest.approx(4 / 3, abs=0.01)
    # one bin takes every ball, whatever the rule
    assert set(routing.max_load(5, 1, 2, trials=10)) == {5}


@settings(max_examples=25, deadline=None)
@given(n=st.integers(8, 64), seed=st.integers(0, 10_000))
def test_two_choices_never_worse_than_random_in_expected_max_load(n, seed):
    one = routing.max_load(n, n, 1, trials=300, seed=seed).mean()
    two = routing.max_load(n, n, 2, trials=300, seed=seed).mean()
    assert two <= one


# --- laws of the simulation ----------------------------------------------------------------


def _small(seed, n_prefixes=24, n=300):
    tr = routing.shared_prefix_trace(n, n_prefixes, seed=seed, prefix_tokens=2048, zipf_exponent=0.0)
    return routing.workload(tr, SERVING_70B, 16)


@settings(max_examples=12, deadline=None)
@given(seed=st.integers(0, 10_000))
def test_prefix_aware_raises_the_hit_rate_on_a_shared_prefix_trace(seed):
    wl = _small(seed)
    res = routing.simulate(wl, [2.0 * wl.capacity_per_s], n_replicas=4, cache_prefixes=4, seed=seed)
    hits = dict(zip(res.policies, res.hit_rate[:, 0]))
    assert hits["prefix_aware"] > hits["round_robin"]
    assert hits["prefix_aware"] > hits["random"]


@settings(max_examples=10, deadline=None)
@given(seed=st.integers(0, 10_000))
def test_with_one_replica_every_policy_is_the_same(seed):
    wl = _small(seed, n=120)
    res = routing.simulate(
        wl, [0.5 * wl.capacity_per_s, 1.5 * wl.capacity_per_s], n_replicas=1, cache_prefixes=3, seed=seed
    )
    for k in range(1, len(res.policies)):
        np.testing.assert_array_equal(res.queue_s[k], res.queue_s[0])
        np.testing.assert_array_equal(res.hit[k], res.hit[0])


@settings(max_examples=10, deadline=None)
@given(seed=st.integers(0, 10_000))
def test_queueing_grows_with_the_rate_when_routing_ignores_time(seed):
    # round-robin and random place request i on the same replica at every rate, and each replica is
    # a first-come-first-served max-plus system: compressing the arrivals can only lengthen each wait
    wl = _small(seed, n=200)
    rates = wl.capacity_per_s * np.array([1.0, 2.0, 4.0, 8.0])
    res = routing.simulate(
        wl, rates, n_replicas=3, cache_prefixes=4, policies=["round_robin", "random"], seed=seed
    )
    assert np.all(np.diff(res.queue_s, axis=1) >= -1e-12)
    assert np.all(res.queue_s >= 0)
    # TTFT is the queue plus the prefill of a hit or a miss
    pre = res.ttft_s - res.queue_s
    assert np.allclose(np.where(res.hit, wl.prefill_hit_s, wl.prefill_miss_s), pre)


def test_result_summaries():
    wl = _small(1, n=200)
    res = routing.simulate(wl, [wl.capacity_per_s, 2 * wl.capacity_per_s], n_replicas=2, cache_prefixes=2)
    assert res.mean_queue_s.shape == res.hit_rate.shape == (len(routing.POLICIES), 2)
    np.testing.assert_allclose(res.of("random", "p99_ttft_s"), np.percentile(res.ttft_s[1], 99, axis=-1))
    np.testing.assert_allclose(res.of("prefix_aware", "hit_rate"), res.hit[4].mean(axis=-1))
    assert math.isclose(res.ttft_percentile_s(100)[0, 0], res.ttft_s[0, 0].max())


# --- bad input ---------------------------------------------------------------------------


def test_bad_input_raises_value_error_naming_the_argument():
    wl = _small(1, n=20)
    with pytest.raises(ValueError, match="n_replicas"):
        routing.simulate(wl, [1.0], n_replicas=0, cache_prefixes=1)
    with pytest.raises(ValueError, match="cache_prefixes"):
        routing.simulate(wl, [1.0], n_replicas=2, cache_prefixes=0)
    with pytest.raises(ValueError, match="rates_per_s"):
        routing.simulate(wl, [0.0], n_replicas=2, cache_prefixes=1)
    with pytest.raises(ValueError, match="policies"):
        routing.simulate(wl, [1.0], n_replicas=2, cache_prefixes=1, policies=["fastest"])
    with pytest.raises(ValueError, match="policies"):
        routing.simulate(wl, [1.0], n_replicas=2, cache_prefixes=1, policies=[])
    with pytest.raises(ValueError, match="wl"):
        routing.simulate("trace", [1.0], n_replicas=2, cache_prefixes=1)
    with pytest.raises(ValueError, match="trace"):
        routing.workload("trace", SERVING_70B, 8)
    with pytest.raises(ValueError, match="slots"):
        routing.workload(wl.trace, SERVING_70B, 0)
    with pytest.raises(ValueError, match="n_prefixes"):
        routing.shared_prefix_trace(10, 0)
    with pytest.raises(ValueError, match="max_suffix_tokens"):
        routing.shared_prefix_trace(10, 2, min_suffix_tokens=20, max_suffix_tokens=10)
    with pytest.raises(ValueError, match="zipf_exponent"):
        routing.shared_prefix_trace(10, 2, zipf_exponent=-1)
    with pytest.raises(ValueError, match="choices"):
        routing.max_load(4, 4, 3)
    with pytest.raises(ValueError, match="n_bins"):
        routing.max_load(4, 0)
    with pytest.raises(ValueError, match="prefill_s"):
        routing.replica_capacity_per_s(4, 0.0, 1.0)
    res = routing.simulate(wl, [1.0], n_replicas=2, cache_prefixes=1)
    with pytest.raises(ValueError, match="policy"):
        res.of("fastest", "hit_rate")
    with pytest.raises(ValueError, match="metric"):
        res.of("random", "speed")
    with pytest.raises(ValueError, match="q"):
        res.ttft_percentile_s(101)
