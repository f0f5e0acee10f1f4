"""Static vs continuous batching simulation (aiinfra.serving.batching, chapter 5)."""

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from aiinfra.serving import batching as sch


def _trace_strategy():
    return st.integers(1, 25).flatmap(
        lambda n: st.tuples(
            st.lists(st.integers(0, 30), min_size=n, max_size=n),
            st.lists(st.integers(0, 64), min_size=n, max_size=n),
            st.lists(st.integers(1, 40), min_size=n, max_size=n),
        )
    )


def _build(parts):
    gaps, prompts, outs = parts
    return sch._make_trace(np.cumsum(gaps) - gaps[0], prompts, outs)


# --- worked cases checked by hand ---------------------------------------------


def test_hand_worked_two_slots_all_at_zero():
    # four requests at step 0, lengths 1, 4, 2, 2, two slots
    tr = sch._make_trace([0, 0, 0, 0], [10, 10, 10, 10], [1, 4, 2, 2])
    st_ = sch._simulate(tr, 2, "static")
    # static: batch {0,1} runs steps 0-3 (4 steps), then {2,3} runs steps 4-5
    assert st_.active.tolist() == [2, 1, 1, 1, 2, 2]
    assert st_.start_step.tolist() == [0, 0, 4, 4]
    assert st_.finish_step.tolist() == [0, 3, 5, 5]
    assert st_.slot_utilization == pytest.approx(9 / 12)
    co = sch._simulate(tr, 2, "continuous")
    # continuous: request 2 takes request 0's slot at step 1, request 3 follows at step 3
    assert co.active.tolist() == [2, 2, 2, 2, 1]
    assert co.start_step.tolist() == [0, 0, 1, 3]
    assert co.finish_step.tolist() == [0, 3, 2, 4]
    assert co.slot_utilization == pytest.approx(9 / 10)
    assert co.latency_steps.tolist() == [1, 4, 3, 5]
    assert co.ttft_steps.tolist() == [1, 1, 2, 4]
    assert co.queue_steps.tolist() == [0, 0, 1, 3]


def test_idle_gap_is_not_busy():
    tr = sch._make_trace([0, 10], [0, 0], [3, 2])
    for policy in sch.POLICIES:
        r = sch._simulate(tr, 4, policy)
        assert r.total_steps == 12
        assert r.busy_steps == 5
        assert r.active.tolist() == [1, 1, 1] + [0] * 7 + [1, 1]
        assert r.latency_steps.tolist() == [3, 2]


def test_batch_of_one_policies_agree():
    tr = sch.synthetic_trace(30, seed=3, mean_output_tokens=20, mean_interarrival_steps=5)
    a, b = sch._simulate(tr, 1, "static"), sch._simulate(tr, 1, "continuous")
    assert np.array_equal(a.active, b.active)
    assert np.array_equal(a.finish_step, b.finish_step)
    assert a.slot_utilization == 1.0


# --- laws that hold for every trace -------------------------------------------


@settings(max_examples=150, deadline=None)
@given(_trace_strategy(), st.integers(1, 8))
def test_laws(parts, cap):
    tr = _build(parts)
    res = sch.compare_policies(tr, cap)
    for r in res.values():
        # conservation: every requested token is emitted exactly once
        assert r.generated_tokens == tr.total_output_tokens
        # each request runs for exactly its length, without pause
        assert np.array_equal(r.finish_step - r.start_step + 1, tr.output_tokens)
        # nobody starts before arriving; the batch never exceeds its slots
        assert np.all(r.start_step >= tr.arrival_step)
        assert r.active.max() <= cap
        assert 0 < r.slot_utilization <= 1
        # a request can never finish faster than its own length
        assert np.all(r.latency_steps >= tr.output_tokens)
        # the active count per step equals the requests whose [start, finish] covers it
        cover = np.zeros(r.total_steps, dtype=int)
        for s0, s1 in zip(r.start_step, r.finish_step):
            cover[s0 : s1 + 1] += 1
        assert np.array_equal(cover, r.active)
    stat, cont = res["static"], res["continuous"]
    # continuous batching never wastes more slots, nor takes longer, than static
    assert cont.slot_utilization >= stat.slot_utilization - 1e-12
    assert cont.busy_steps <= stat.busy_steps
    assert cont.total_steps <= stat.total_steps


@settings(max_examples=60, deadline=None)
@given(st.lists(st.integers(1, 50), min_size=1, max_size=30), st.integers(1, 8))
def test_static_runs_to_the_longest_member(outs, cap):
    tr = sch._make_trace([0] * len(outs), [0] * len(outs), outs)
    r = sch._simulate(tr, cap, "static")
    expected = sum(max(outs[i : i + cap]) for i in range(0, len(outs), cap))
    assert r.busy_steps == expected


def test_continuous_beats_static_on_a_skewed_trace():
    tr = sch.synthetic_trace(300, seed=7, mean_output_tokens=100, mean_interarrival_steps=8)
    res = sch.compare_policies(tr, 16)
    assert res["continuous"].slot_utilization > 1.5 * res["static"].slot_utilization
    assert res["continuous"].percentile_latency_steps(90) < res["static"].percentile_latency_steps(90)


# --- the synthetic trace --------------------------------------------------------


def test_synthetic_trace_is_deterministic_and_bounded():
    a = sch.synthetic_trace(
        500,
        seed=11,
        mean_output_tokens=64,
        max_output_tokens=300,
        mean_interarrival_steps=3,
        min_prompt_tokens=10,
        max_prompt_tokens=20,
    )
    b = sch.synthetic_trace(
        500,
        seed=11,
        mean_output_tokens=64,
        max_output_tokens=300,
        mean_interarrival_steps=3,
        min_prompt_tokens=10,
        max_prompt_tokens=20,
    )
    c = sch.synthetic_trace(
        500,
        seed=12,
        mean_output_tokens=64,
        max_output_tokens=300,
        mean_interarrival_steps=3,
        min_prompt_tokens=10,
        max_prompt_tokens=20,
    )
    assert np.array_equal(a.output_tokens, b.output_tokens) and np.array_equal(a.arrival_step, b.arrival_step)
    assert not np.array_equal(a.output_tokens, c.output_tokens)
    assert a.output_tokens.min() >= 1 and a.output_tokens.max() <= 300
    assert a.prompt_tokens.min() >= 10 and a.prompt_tokens.max() <= 20
    assert a.arrival_step[0] == 0 and np.all(np.diff(a.arrival_step) >= 0)
    # geometric lengths: the sample mean is near the asked mean (clipping at 300 barely matters)
    assert 55 < a.output_tokens.mean() < 73
    # Poisson arrivals: 500 requests span about 500 * 3 steps
    assert 1200 < a.arrival_step[-1] < 1800
    assert np.array_equal(a.final_context_tokens, a.prompt_tokens + a.output_tokens)


def test_all_at_zero_when_no_gap():
    tr = sch.synthetic_trace(10, seed=0)
    assert np.all(tr.arrival_step == 0)


def test_latency_seconds_and_summary():
    tr = sch._make_trace([0, 0], [0, 0], [2, 4])
    res = sch.compare_policies(tr, 1)
    assert res["static"].latency_s(0.02).tolist() == pytest.approx([0.04, 0.12])
    rows = sch.summary_rows(res, step_time_s=0.5, percentiles=(50, 100))
    assert [r["policy"] for r in rows] == ["static", "continuous"]
    assert rows[0]["p100_latency"] == pytest.approx(3.0)
    assert rows[0]["p50_latency"] == pytest.approx(2.0)
    assert rows[0]["slot_utilization"] == 1.0
    assert res["static"].stretch.tolist() == [1.0, 1.5]


# --- rejections -------------------------------------------------------------------


@pytest.mark.parametrize(
    "args, name",
    [
        (([0, 1], [1], [1, 1]), "same length"),
        (([1, 0], [1, 1], [1, 1]), "non-decreasing"),
        (([0, 0], [1, 1], [1, 0]), "output_tokens"),
        (([0, -1], [1, 1], [1, 1]), "arrival_step"),
        (([0, 0], [1, -3], [1, 1]), "prompt_tokens"),
        (([0.5], [1], [1]), "arrival_step"),
        (([], [], []), "at least one"),
        (([[0, 1]], [[1, 1]], [[1, 1]]), "one-dimensional"),
    ],
)
def test_make_trace_rejects(args, name):
    with pytest.raises(ValueError, match=name):
        sch._make_trace(*args)


@pytest.mark.parametrize(
    "kwargs, name",
    [
        ({"n_requests": 0}, "n_requests"),
        ({"n_requests": 5, "seed": -1}, "seed"),
        ({"n_requests": 5, "mean_output_tokens": 0.5}, "mean_output_tokens"),
        ({"n_requests": 5, "max_output_tokens": 0}, "max_output_tokens"),
        ({"n_requests": 5, "mean_interarrival_steps": -1}, "mean_interarrival_steps"),
        ({"n_requests": 5, "min_prompt_tokens": -2}, "min_prompt_tokens"),
        ({"n_requests": 5, "min_prompt_tokens": 9, "max_prompt_tokens": 3}, "max_prompt_tokens"),
    ],
)
def test_synthetic_trace_rejects(kwargs, name):
    with pytest.raises(ValueError, match=name):
        sch.synthetic_trace(**kwargs)


def test_simulate_rejects():
    tr = sch._make_trace([0], [0], [1])
    with pytest.raises(ValueError, match="max_batch"):
        sch._simulate(tr, 0)
    with pytest.raises(ValueError, match="policy"):
        sch._simulate(tr, 2, "greedy")
    with pytest.raises(ValueError, match="trace"):
        sch._simulate([(0, 1, 1)], 2)
    r = sch._simulate(tr, 1)
    with pytest.raises(ValueError, match="step_time_s"):
        r.latency_s(0)
    with pytest.raises(ValueError, match="q must"):
        r.percentile_latency_steps(101)
    with pytest.raises(ValueError, match="results"):
        sch.summary_rows({})
    with pytest.raises(ValueError, match="ScheduleResult"):
        sch.summary_rows({"x": 1})
    with pytest.raises(ValueError, match="step_time_s"):
        sch.summary_rows({"x": r}, step_time_s=-1)


# --- a KV budget limits admission -------------------------------------------------


def test_kv_budget_hand_case():
    # budget 10 token slots; reservations 6, 6, 4: the second must wait for the first
    tr = sch._make_trace([0, 0, 0], [2, 2, 1], [3, 2, 2])
    r = sch._simulate(tr, 8, "continuous", kv_budget_tokens=10, reserve_tokens=[6, 6, 4])
    assert r.start_step.tolist() == [0, 3, 3]  # strict FIFO: request 2 (4 slots) does not jump the queue
    assert r.reserved_tokens.tolist() == [6, 6, 6, 10, 10]
    assert r.active.tolist() == [1, 1, 1, 2, 2]
    assert r.kv_budget_tokens == 10


@settings(max_examples=120, deadline=None)
@given(_trace_strategy(), st.integers(1, 8), st.integers(0, 60), st.data())
def test_kv_budget_laws(parts, cap, extra, data):
    tr = _build(parts)
    final = tr.final_context_tokens
    reserve = final + np.array(data.draw(st.lists(st.integers(0, 20), min_size=len(tr), max_size=len(tr))))
    budget = int(reserve.max()) + extra
    free = sch.compare_policies(tr, cap)
    for policy, r in sch.compare_policies(tr, cap, budget, reserve).items():
        assert r.generated_tokens == tr.total_output_tokens
        assert r.reserved_tokens.max() <= budget
        # the reservations of the requests running in a step add up to the logged total
        held = np.zeros(r.total_steps, dtype=int)
        for s0, s1, res in zip(r.start_step, r.finish_step, reserve):
            held[s0 : s1 + 1] += res
        assert np.array_equal(held, r.reserved_tokens)
        # a memory limit can only delay requests relative to the slot limit alone
        assert np.all(r.start_step >= free[policy].start_step) or policy == "static"
        assert r.busy_steps >= free[policy].busy_steps or policy == "static"


def test_kv_budget_rejections():
    tr = sch._make_trace([0, 0], [2, 2], [3, 2])
    with pytest.raises(ValueError, match="together"):
        sch._simulate(tr, 2, kv_budget_tokens=10)
    with pytest.raises(ValueError, match="kv_budget_tokens"):
        sch._simulate(tr, 2, kv_budget_tokens=0, reserve_tokens=[5, 5])
    with pytest.raises(ValueError, match="one entry per request"):
        sch._simulate(tr, 2, kv_budget_tokens=10, reserve_tokens=[5])
    with pytest.raises(ValueError, match="prompt plus output"):
        sch._simulate(tr, 2, kv_budget_tokens=10, reserve_tokens=[4, 4])
    with pytest.raises(ValueError, match="could never run"):
        sch._simulate(tr, 2, kv_budget_tokens=10, reserve_tokens=[11, 5])
