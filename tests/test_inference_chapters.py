"""What chapters 3 to 5 compute beyond the formulas: capacity first, the single-stream ceiling,
the price of a token, trace statistics, and the tables the pages show.

Expected values come from the public model configs and the spec sheets (the exact counts in
``../shared/seeds/NOTES.md``), or are worked by hand below; none is read back from the code under test.
"""

import math

import numpy as np
import pytest

from aiinfra import predict
from aiinfra.book import tables
from aiinfra.book.glue import equation_md
from aiinfra.book.tables import ch03, ch04, ch05
from aiinfra.catalog import hardware, reference
from aiinfra.deployment import TEACHING_8B, Deployment, RoundModel
from aiinfra.serving import batching, capacity, paging

H100_BW, H100_MEM, H100_BF16 = 3.35e12, 80e9, 989.4e12
# Llama-3.1-70B (NOTES): 70,553,706,496 parameters, vocab 128,256, hidden 8,192, untied, BF16
N70, V70, D70 = 70_553_706_496, 128_256, 8_192
READ70 = (N70 - V70 * D70 + D70) * 2  # a step reads one row of the embedding table
KV70 = 2 * 80 * 8 * 128 * 2  # 320 KiB per token


@pytest.fixture(scope="module")
def d70():
    return Deployment("Llama-3.1-70B", "H100 SXM")


@pytest.fixture(scope="module")
def qwen():
    return Deployment("Qwen3-8B", "H100 SXM")


# --- capacity first ------------------------------------------------------------------------


def test_the_70b_needs_two_h100s_in_bf16_and_one_in_8_bit(d70):
    assert d70.weight_bytes == pytest.approx(N70 * 2)
    assert d70.usable_bytes == pytest.approx(0.9 * H100_MEM)
    assert d70.min_gpus == 2  # 141.11 GB > 72 GB, < 144 GB
    assert d70.replace(weight_precision="int8").min_gpus == 1  # 70.55 GB <= 72 GB
    assert d70.replace(n_gpus=8).min_gpus == 2  # a property of the model and the GPU, not of n_gpus
    assert Deployment(RoundModel(405e9, 0), "H100 SXM").min_gpus == math.ceil(810e9 / 72e9)
    assert Deployment(RoundModel(405e9, 0), "H100 SXM", memory_reserve=0.0).min_gpus == math.ceil(
        810e9 / 80e9
    )


def test_the_ceiling_divides_by_the_bytes_a_step_reads(d70):
    assert d70.weight_bytes_read == pytest.approx(READ70)
    assert d70.ceiling_tokens_per_s() == pytest.approx(H100_BW / READ70)
    assert round(d70.ceiling_tokens_per_s(), 1) == 24.1
    assert d70.replace(n_gpus=2).ceiling_tokens_per_s() == pytest.approx(2 * H100_BW / READ70)
    assert d70.replace(eta_b=0.5).ceiling_tokens_per_s() == pytest.approx(0.5 * H100_BW / READ70)
    # the KV of the context joins the weights
    assert d70.ceiling_tokens_per_s(8192) == pytest.approx(H100_BW / (READ70 + 8192 * KV70))
    np.testing.assert_allclose(
        d70.ceiling_tokens_per_s(np.array([0, 8192])), [H100_BW / READ70, H100_BW / (READ70 + 8192 * KV70)]
    )
    # the two other conventions the chapter explains once
    assert round(H100_BW / (N70 * 2), 1) == 23.7
    assert round(Deployment(RoundModel(70e9, 0), "H100 SXM").ceiling_tokens_per_s(), 1) == 23.9


def test_crossover_batch_is_infinite_when_one_cache_outlasts_its_arithmetic(qwen):
    assert math.isinf(qwen.crossover_batch(4096))
    b = qwen.crossover_batch(64)
    assert 0 < b < math.inf
    step = qwen.step(b, 64)  # at the crossover both times agree
    assert step.compute_s == pytest.approx(step.memory_s, rel=1e-9)


def test_replica_cost_per_million_tokens_prices_chapter_2s_batch():
    # chapter 2's worked batch: 32 requests at 2,000 tokens read 16 GB of weights + 32 x 0.3 GB of KV
    # = 25.6 GB at 0.7 x 3 TB/s per step (memory-bound: 32 x 16 GFLOP at 0.5 PFLOP/s is 1.0 ms), so
    # 32 x 2.1e12 / 25.6e9 = 2,625 tokens/s; $2.50 an hour buys 9,000 s x 2,625 = 9.45e6 tokens/$,
    # a million tokens cost 1e6 / (3,600 x 2,625 / 2.5) = $0.2645502...
    d = TEACHING_8B
    usd = 1e6 * 2.5 / (3600 * 2625)
    assert capacity.replica_cost_per_million_tokens(d, 2.5, 32, 2000) == pytest.approx(usd, rel=1e-12)
    # two GPUs double the bandwidth and the rate, and the price per GPU-hour: the same price per token
    assert capacity.replica_cost_per_million_tokens(d.replace(n_gpus=2), 2.5, 32, 2000) == pytest.approx(usd)
    with pytest.raises(ValueError, match="usd_per_gpu_hour"):
        capacity.replica_cost_per_million_tokens(d, -1.0, 32, 2000)


# --- traces and the load a policy can carry ----------------------------------------------------


def _trace(arrivals, prompts, outputs):
    return batching.Trace(np.array(arrivals), np.array(prompts), np.array(outputs))


def test_trace_statistics_by_hand():
    tr = _trace([0, 4, 8], [100, 200, 300], [10, 20, 30])
    assert tr.mid_reply_context_tokens == 210  # mean of 105, 210, 315
    assert tr.arrival_rate_per_step == pytest.approx(2 / 8)
    assert math.isinf(_trace([3, 3], [1, 1], [1, 1]).arrival_rate_per_step)


def test_saturated_rate_by_hand():
    # two slots, answers of 1, 4, 1, 1 tokens, all queued.
    # static: {1, 4} runs 4 steps, then {1, 1} one step -> 4 requests in 5 steps;
    # continuous: the short ones take the freed slot at once -> 4 requests in 4 steps.
    tr = _trace([0, 0, 5, 9], [1, 1, 1, 1], [1, 4, 1, 1])
    assert batching.saturated_requests_per_step(tr, 2, "static") == pytest.approx(4 / 5)
    assert batching.saturated_requests_per_step(tr, 2, "continuous") == pytest.approx(1.0)
    with pytest.raises(ValueError, match="trace"):
        batching.saturated_requests_per_step([1, 2], 2)
    with pytest.raises(ValueError, match="policy"):
        batching.saturated_requests_per_step(tr, 2, "greedy")


def test_mid_reply_context_of_the_measurement():
    assert reference.QWEN3_8B_RTX_PRO_6000.mid_reply_context_tokens == 2048 + 128


# --- the tables of the pages ---------------------------------------------------------------------


def _rows(md):
    return [[c.strip() for c in line.strip("|").split("|")] for line in md.splitlines()[2:]]


def test_request_phases_pin_the_notes(qwen):
    md = ch03.request_phases_markdown(qwen.request(2048, 256))
    rows = {r[0]: r[1:] for r in _rows(md)}
    assert rows["forward passes"] == ["1", "255"]  # the prefill emits the first of the 256 tokens
    assert rows["FLOPs"][0] == "29.69 TFLOPs"
    assert rows["bytes read from HBM"][0] == "15.14 GB"
    assert rows["bound"] == ["compute-bound", "memory-bound"]
    with pytest.raises(ValueError, match="request"):
        ch03.request_phases_markdown(qwen)


def test_flops_breakdown_and_recompute_tables(qwen):
    rows = {r[0]: r[1:] for r in _rows(ch03.decode_flops_breakdown_markdown("Qwen3-8B", 2048))}
    assert rows["total"][0] == "16.34 GFLOPs"
    assert rows["embedding table"][0] == "0.00 FLOPs"
    recompute = _rows(ch03.kv_cache_or_recompute_markdown(qwen, 2048, 256))
    assert recompute[0][1] == "4.19 TFLOPs" and recompute[1][0] == "time on one H100 SXM (lower bound)"
    with pytest.raises(ValueError, match="deployment"):
        ch03.kv_cache_or_recompute_markdown("Qwen3-8B", 2048, 256)


def test_decode_ceiling_table_checks_capacity_first():
    rows = {r[0]: r[1:] for r in _rows(ch04.decode_ceiling_markdown(("Llama-3.1-8B", "Llama-3.1-70B")))}
    assert rows["Llama-3.1-70B"][0] == "70.55"
    bound70, pred70 = rows["Llama-3.1-70B"][1].removeprefix("does not fit: 2 GPUs, ").split(" / ")
    assert bound70 == f"{2 * H100_BW / READ70:,.1f}" and rows["Llama-3.1-70B"][1].startswith("does not fit")
    assert rows["Llama-3.1-70B"][2].split(" / ")[0] == f"{H100_BW / (READ70 / 2):,.1f}"  # 8-bit fits on one
    # every cell: bound / calibrated prediction, the prediction below the bound
    for cells in rows.values():
        for cell in cells[1:]:
            bound, pred = (float(x.replace(",", "")) for x in cell.split(", ")[-1].split(" / "))
            assert 0 < pred < bound
    assert "does not fit" not in " ".join(rows["Llama-3.1-8B"])
    with pytest.raises(ValueError, match="model_names"):
        ch04.decode_ceiling_markdown(())
    with pytest.raises(ValueError, match="precisions"):
        ch04.decode_ceiling_markdown(("Llama-3.1-8B",), precisions=())


def test_kv_share_table_uses_one_unit(qwen, d70):
    rows = _rows(ch04.kv_share_markdown([("Qwen3-8B", qwen, 2048), ("70B", d70, 131072)]))
    assert rows[0][2:] == ["15.14 GB", "0.30 GB", "2%"]  # 288 MiB = 0.30 GB
    assert rows[1][3] == f"{131072 * KV70 / 1e9:.2f} GB"
    with pytest.raises(ValueError, match="cases"):
        ch04.kv_share_markdown([("70B", d70)])
    with pytest.raises(ValueError, match="deployment"):
        ch04.kv_share_markdown([("70B", "Llama-3.1-70B", 2048)])
    with pytest.raises(ValueError, match="cases"):
        ch04.kv_share_markdown([])


def test_ttft_and_batch_tables(qwen):
    rows = _rows(ch04.ttft_markdown(qwen, (2048,)))
    assert rows[0][:2] == ["2,048", "29.69 TFLOPs"]
    sweep = _rows(ch04.batch_sweep_markdown(qwen, 4096, (1, qwen.max_batch(4096))))
    assert sweep[1][0] == f"{qwen.max_batch(4096):,}"
    cost = _rows(ch04.cost_sweep_markdown(qwen, 4096, (1,), 2.5))
    t1 = qwen.step(1, 4096).time_s
    # a price is a dollar no notebook client pairs into mathematics, then the amount
    floor, pred = cost[0][3].split(" / ")
    assert floor == f"{tables.DOLLAR}{2.5 / 3600 * t1 * 1e6:,.2f}"
    # the predicted price is the floor times predicted over bound step time
    t_pred = predict.calibrated_step_s(qwen, 1, 4096)
    assert pred == f"{tables.DOLLAR}{2.5 / 3600 * t_pred * 1e6:,.2f}" and t_pred > t1
    with pytest.raises(ValueError, match="prompt_tokens"):
        ch04.ttft_markdown(qwen, ())
    with pytest.raises(ValueError, match="batches"):
        ch04.batch_sweep_markdown(qwen, 4096, (0,))


def test_gpu_table_sorted_by_bandwidth_and_narrow(qwen):
    md = ch04.gpu_decode_markdown(qwen, 4096)
    rows = _rows(md)
    bandwidths = [float(r[1]) for r in rows]
    assert bandwidths == sorted(bandwidths)
    assert len(rows[0]) == 7
    h100 = next(r for r in rows if r[0] == "H100 SXM")
    assert h100[2] == f"{H100_BF16 / H100_BW:.0f}"
    for r in rows:  # bound / prediction; no prediction for a TPU, which no stored run calibrates
        bound, pred = r[6].split(" / ")
        assert (
            pred == "-"
            if r[0].startswith("TPU")
            else 0 < float(pred.replace(",", "")) < float(bound.replace(",", ""))
        )
    with pytest.raises(ValueError, match="gpus"):
        ch04.gpu_decode_markdown(Deployment("Llama-3.1-70B", "H100 SXM"), 4096, [hardware.gpu("H100 SXM")])


def test_chapter_5_tables():
    node = Deployment("Llama-3.1-70B", "H100 SXM", n_gpus=8)
    kv = {r[0]: r[4:] for r in _rows(ch05.kv_configs_markdown(("Llama-3.1-70B", "Qwen3-8B"), 2048))}
    assert kv["Llama-3.1-70B"][:2] == ["320.0 KiB", "2560 KiB"]
    assert kv["Qwen3-8B"][2] == "0.30 GB"
    tenants = _rows(ch05.memory_tenants_markdown(node, 8192))
    assert tenants[0][1:3] == ["141.11 GB", f"{N70 * 2 / 640e9:.1%}"]
    assert tenants[1][0].startswith(f"KV cache, {node.max_batch(8192):,} requests")
    cost = _rows(ch05.context_cost_markdown(node, (8192,), 2.5))
    assert cost[0][1] == f"{node.max_batch(8192):,}" and "(memory-bound) / " in cost[0][2]
    # the predicted price is the floor scaled by predicted over bound step time
    b = node.max_batch(8192)
    pred = float(cost[0][4].split(" / ")[1].removeprefix(tables.DOLLAR))
    ratio = predict.calibrated_step_s(node, b, 8192) / node.step(b, 8192).time_s
    assert (
        pred == pytest.approx(capacity.replica_cost_per_million_tokens(node, 2.5, b, 8192) * ratio, abs=0.005)
        and ratio > 1
    )
    with pytest.raises(ValueError, match="contexts"):
        ch05.context_cost_markdown(node, (10**9,), 2.5)
    with pytest.raises(ValueError, match="context_tokens"):
        ch05.memory_tenants_markdown(node, 10**9)
    with pytest.raises(ValueError, match="model_names"):
        ch05.kv_configs_markdown(())


def test_trace_and_scheduling_tables():
    tr = _trace([0, 0, 5, 9], [10, 20, 30, 40], [1, 4, 1, 1])
    rows = {r[0]: r[1:] for r in _rows(ch05.trace_markdown(tr))}
    assert rows["prompt"] == ["25", "25", "10", "40"]
    assert rows["context at the end (prompt + answer)"][2:] == ["11", "41"]
    res = batching.compare_policies(tr, 2)
    summary = _rows(ch05.schedule_summary_markdown(res, percentiles=(50,)))
    assert [r[0] for r in summary] == ["static", "continuous"]
    runs = {s: paging.simulate_with_kv_budget(tr, 2, 1e6, 1.0, s, 16, 64) for s in paging.SCHEMES}
    assert [r[0] for r in _rows(ch05.kv_schemes_markdown(runs))] == list(paging.SCHEMES)
    pages = _rows(ch05.page_size_markdown(tr.final_context_tokens, 64, 64.0, 1.0, (1, 16)))
    assert pages[0] == ["1", "0.0%", "2"]  # 11 + 24 = 35 tokens fit in 64; with the third (31) they would not
    with pytest.raises(ValueError, match="trace"):
        ch05.trace_markdown([1, 2, 3])
    with pytest.raises(ValueError, match="runs"):
        ch05.kv_schemes_markdown({})


def test_equation_md_uses_the_book_notation():
    import sympy as sp

    from aiinfra.formula import N

    md = equation_md(2 * N * sp.Symbol("R_W") / sp.Symbol("eta_B"), "X").data
    assert md.startswith("$$\nX = ") and r"\eta_B" in md and "R_W" in md
    with pytest.raises(ValueError, match="sympy"):
        equation_md("2*N", "X")
