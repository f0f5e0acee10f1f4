"""Contiguous vs paged KV allocation (aiinfra.serving.paging, chapter 5)."""

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from aiinfra.serving import batching as sch
from aiinfra.serving import paging as pg


def test_pages_round_up():
    assert pg.paged_reserved_tokens(0, 16) == 0
    assert pg.paged_reserved_tokens(1, 16) == 16
    assert pg.paged_reserved_tokens(16, 16) == 16
    assert pg.paged_reserved_tokens(17, 16) == 32
    assert pg.paged_reserved_tokens(np.array([5, 33]), 16).tolist() == [16, 48]
    assert pg.paged_waste_tokens(17, 16) == 15
    assert pg._contiguous_waste_tokens(300, 8192) == 7892


@settings(max_examples=200, deadline=None)
@given(st.lists(st.integers(0, 9000), min_size=1, max_size=40), st.integers(1, 512))
def test_paging_waste_is_under_one_page_per_request(lengths, page):
    n = np.array(lengths)
    waste = pg.paged_waste_tokens(n, page)
    assert np.all(waste >= 0) and np.all(waste < page)
    fp = pg.kv_footprint(n, 9000, page, 2.0)
    assert fp.used_bytes <= fp.paged_bytes < fp.used_bytes + 2.0 * page * n.size + 1e-9
    # contiguous reservation is never smaller than what paging rounds up to, up to one page
    assert fp.paged_bytes <= fp.contiguous_bytes + 2.0 * (page - 1) * n.size
    assert 0 <= fp.paged_waste_fraction < 1 and 0 <= fp.contiguous_waste_fraction <= 1


def test_footprint_worked_example():
    # three requests of 100, 1000 and 4000 tokens, 8192-token reservation, 16-token pages,
    # 131072 B/token (the 320 KiB/token of a GQA 70B would scale it up, the shape is the same)
    fp = pg.kv_footprint([100, 1000, 4000], 8192, 16, 131072.0)
    assert fp.used_bytes == 5100 * 131072
    assert fp.contiguous_bytes == 3 * 8192 * 131072
    assert fp.paged_bytes == (112 + 1008 + 4000) * 131072
    assert fp.contiguous_waste_fraction == pytest.approx(1 - 5100 / 24576)
    assert fp.paged_waste_fraction == pytest.approx(1 - 5100 / 5120)
    assert fp.n_requests == 3


def test_max_batch_contiguous_matches_seed_shape():
    # 500 GB free, 8192-token contexts, MHA 70B at 2 * 80 * 8192 * 2 B per token -> 23 requests
    kv_per_token = 2 * 80 * 8192 * 2
    assert pg.max_batch_contiguous(500e9, 8192, kv_per_token) == 23
    # GQA (8 KV heads x 128) stores 8x less per token -> 8x the batch, within rounding
    assert pg.max_batch_contiguous(500e9, 8192, kv_per_token / 8) == 186
    # exact multiples are not lost to rounding
    assert pg.max_batch_contiguous(4 * 8192 * 10.0, 8192, 10.0) == 4
    assert pg.max_batch_contiguous(np.array([0.0, 1e6]), 100, 10.0).tolist() == [0, 1000]


@settings(max_examples=150, deadline=None)
@given(
    st.lists(st.integers(1, 4096), min_size=1, max_size=60),
    st.sampled_from([1, 8, 16, 64, 256]),
    st.floats(1e3, 1e7),
)
def test_paged_batch_bounds(lengths, page, budget):
    k = 10.0
    n = np.array(lengths)
    b_paged = pg.max_batch_paged(n, budget, page, k)
    # the first b_paged requests fit, one more does not
    need = np.cumsum(pg.paged_reserved_tokens(n, page) * k)
    assert b_paged == 0 or need[b_paged - 1] <= budget * (1 + 1e-12)
    assert b_paged == n.size or need[b_paged] > budget
    # with pages that divide the maximum, paging admits at least as many as max-length reservation
    b_contig = min(pg.max_batch_contiguous(budget, 4096, k), n.size)
    assert b_paged >= b_contig
    # and never more than a perfect allocator with no waste at all
    b_ideal = int(np.searchsorted(np.cumsum(n * k), budget * (1 + 1e-12), side="right"))
    assert b_paged <= b_ideal


def test_usage_over_time_hand_case():
    tr = sch._make_trace([0, 0], [3, 10], [2, 3])
    res = sch._simulate(tr, 2, "continuous")
    use = pg.kv_usage_over_time(res, page_tokens=4, max_context_tokens=16)
    # step 0: 3+1 and 10+1; step 1: 3+2 and 10+2; step 2: only 10+3
    assert use.used_tokens.tolist() == [15, 17, 13]
    assert use.paged_tokens.tolist() == [4 + 12, 8 + 12, 16]
    assert use.contiguous_tokens.tolist() == [32, 32, 16]
    assert use.peak_used_tokens == 17 and use.peak_paged_tokens == 20 and use.peak_contiguous_tokens == 32
    assert use.mean_waste_fraction("contiguous") == pytest.approx(
        np.mean([1 - 15 / 32, 1 - 17 / 32, 1 - 13 / 16])
    )


def test_usage_over_time_laws():
    tr = sch.synthetic_trace(
        120,
        seed=5,
        mean_output_tokens=80,
        mean_interarrival_steps=6,
        min_prompt_tokens=50,
        max_prompt_tokens=900,
    )
    res = sch._simulate(tr, 12, "continuous")
    use = pg.kv_usage_over_time(res, 16, int(tr.final_context_tokens.max()))
    assert np.all(use.used_tokens <= use.paged_tokens)
    assert np.all(use.paged_tokens - use.used_tokens < 16 * np.maximum(res.active, 1))
    assert np.all(use.paged_tokens <= use.contiguous_tokens + 15 * res.active)
    assert use.mean_waste_fraction("paged") < 0.05 < use.mean_waste_fraction("contiguous")
    empty = pg.KVUsage(np.zeros(3, int), np.zeros(3, int), np.zeros(3, int))
    assert empty.mean_waste_fraction("paged") == 0.0


@pytest.mark.parametrize(
    "call, name",
    [
        (lambda: pg.paged_reserved_tokens(-1, 16), "context_tokens"),
        (lambda: pg.paged_reserved_tokens(10, 0), "page_tokens"),
        (lambda: pg.paged_reserved_tokens(1.5, 16), "context_tokens"),
        (lambda: pg._contiguous_waste_tokens(9000, 8192), "context_tokens must be <="),
        (lambda: pg._contiguous_waste_tokens(10, 0), "max_context_tokens"),
        (lambda: pg.kv_footprint([10], 8192, 16, 0), "kv_bytes_per_token"),
        (lambda: pg.kv_footprint([], 8192, 16, 1.0), "at least one"),
        (lambda: pg.max_batch_contiguous(-1, 10, 1.0), "kv_budget_bytes"),
        (lambda: pg.max_batch_contiguous(1e9, 0, 1.0), "max_context_tokens"),
        (lambda: pg.max_batch_paged([10], -5, 16, 1.0), "kv_budget_bytes"),
        (lambda: pg.max_batch_paged([], 5, 16, 1.0), "at least one"),
        (lambda: pg.max_batch_paged([10], 5, 16, float("nan")), "kv_bytes_per_token"),
        (lambda: pg.kv_usage_over_time("x", 16, 10), "ScheduleResult"),
        (
            lambda: pg.kv_usage_over_time(sch._simulate(sch._make_trace([0], [5], [5]), 1), 16, 9),
            "max_context_tokens",
        ),
        (
            lambda: pg.kv_usage_over_time(sch._simulate(sch._make_trace([0], [5], [5]), 1), 0, 90),
            "page_tokens",
        ),
        (lambda: pg.KVUsage(np.zeros(1), np.ones(1), np.ones(1)).mean_waste_fraction("ring"), "scheme"),
    ],
)
def test_rejections(call, name):
    with pytest.raises(ValueError, match=name):
        call()


def test_reservations_per_scheme():
    assert pg._reservation_tokens([100, 5000], "contiguous", 16, 8192).tolist() == [8192, 8192]
    assert pg._reservation_tokens([100, 5000], "paged", 16, 8192).tolist() == [112, 5008]
    with pytest.raises(ValueError, match="scheme"):
        pg._reservation_tokens([100], "buddy", 16, 8192)
    with pytest.raises(ValueError, match="context_tokens must be <="):
        pg._reservation_tokens([9000], "paged", 16, 8192)
    with pytest.raises(ValueError, match="page_tokens"):
        pg._reservation_tokens([10], "contiguous", 0, 8192)


def test_paging_admits_a_bigger_batch_and_finishes_sooner():
    tr = sch.synthetic_trace(
        150,
        seed=9,
        mean_output_tokens=90,
        mean_interarrival_steps=2,
        min_prompt_tokens=100,
        max_prompt_tokens=1500,
    )
    k = 147456.0  # Qwen3-8B, BF16
    runs = {s: pg.simulate_with_kv_budget(tr, 64, 6e9, k, s, 16, 4096) for s in pg.SCHEMES}
    budget_tokens = int(6e9 // k)
    for r in runs.values():
        assert r.reserved_tokens.max() <= budget_tokens
        assert r.generated_tokens == tr.total_output_tokens
    # contiguous: never more than floor(budget / 4096) requests at once
    assert runs["contiguous"].active.max() <= pg.max_batch_contiguous(6e9, 4096, k)
    assert runs["paged"].mean_batch > 1.5 * runs["contiguous"].mean_batch
    assert runs["paged"].total_steps < runs["contiguous"].total_steps


def test_simulate_with_kv_budget_rejects():
    tr = sch._make_trace([0], [100], [10])
    with pytest.raises(ValueError, match="Trace"):
        pg.simulate_with_kv_budget("trace", 4, 1e9, 1.0, "paged")
    with pytest.raises(ValueError, match="kv_budget_bytes"):
        pg.simulate_with_kv_budget(tr, 4, 0.5, 1.0, "paged")
    with pytest.raises(ValueError, match="kv_budget_bytes must hold at least one request"):
        pg.simulate_with_kv_budget(tr, 4, 100.0, 1.0, "contiguous", 16, 8192)
    with pytest.raises(ValueError, match="kv_bytes_per_token"):
        pg.simulate_with_kv_budget(tr, 4, 1e9, -1.0, "paged")
