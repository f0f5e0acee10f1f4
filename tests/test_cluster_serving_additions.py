"""Chapters 6 and 7: tensor-parallel time on a deployment, fleet economics, published power and the tables."""

import pytest

from aiinfra.book.tables import ch06, ch07
from aiinfra.catalog import reference
from aiinfra.deployment import SERVING_70B, Deployment
from aiinfra.serving import capacity


def test_tp_comm_of_a_70b_decode_token_by_hand():
    # Llama-3.1-70B: 80 layers, d = 8,192. One token in BF16 is a 16,384-byte message. As engines run it
    # (one-shot custom all-reduce, 5.9 us measured at TP=8 plus 7 x 16,384 B at 0.68 x 450 GB/s):
    # 6.2748 us, x 160 all-reduces = 1.00397 ms (chapter 6, "who waits in a decode step")
    d = Deployment("Llama-3.1-70B", "H100 SXM", n_gpus=8)
    assert d.tp_comm_s(1) == pytest.approx(160 * (5.9e-6 + 7 * 16_384 / (0.68 * 450e9)))
    # the textbook ring at 450 GB/s and an assumed 1 us per step: 2 x 7/8 x 16,384 / 450e9 + 14e-6 = 14.0637 us
    assert d.tp_comm_s(1, 450e9, 1e-6) == pytest.approx(160 * (2 * 7 / 8 * 16_384 / 450e9 + 14e-6))
    # over InfiniBand NDR (50 GB/s, 3 us): 160 x (2 x 7/8 x 16,384 / 50e9 + 42e-6) = 6.8118 ms
    assert d.tp_comm_s(1, 50e9, 3e-6) == pytest.approx(160 * (2 * 7 / 8 * 16_384 / 50e9 + 42e-6))
    assert d.replace(n_gpus=1).tp_comm_s(64) == 0.0
    assert d.replace(n_gpus=1).tp_comm_share(64, 4096) == 0.0
    assert 0 < d.tp_comm_share(1, 4096) < 1
    with pytest.raises(ValueError, match="tokens"):
        d.tp_comm_s(0)


def test_chapter_7_server_is_one_assumption_set():
    # 8 x 80 GB x 0.9 - 141.107 GB of weights leaves 434.89 GB; at 8,192 tokens x 327,680 B = 2.684 GB per
    # user that is 162 users, the memory ceiling (chapter 7's capacity plan)
    assert SERVING_70B.max_users(0.05, 8192) == (162, "memory")
    assert SERVING_70B.memory_reserve == 0.1


def test_fleet_economics_by_hand():
    p = capacity.CapacityPlan(
        gpus_total=16,
        gpus_per_replica=8,
        replicas=2,
        users_per_replica=100,
        max_users_per_replica=101,
        limiting="memory",
        step_time_s=0.05,
        tpot_s=0.05,
        prefill_s=0.0,
        prefill_share=0.0,
        prompt_tokens=8192,
        output_tokens=0,
        prefix_reuse=0.0,
    )
    assert p.capacity_users == 202 and p.requests_per_s == 0.0
    e = capacity.fleet_economics(p, 1000.0, 1.2, 2.0)
    # 2 replicas x 100 users / 0.05 s = 4,000 tok/s; 16 x 1 kW x 1.2 = 19.2 kW;
    # $32 per hour buys 4,000 x 3,600 = 14.4 M tokens: $2.22 per million
    assert e.tokens_per_s == pytest.approx(4000)
    assert e.power_w == pytest.approx(19_200)
    assert e.usd_per_million_tokens == pytest.approx(32 / 14.4)
    with pytest.raises(ValueError, match="plan"):
        capacity.fleet_economics("plan", 1000.0, 1.2, 2.0)
    with pytest.raises(ValueError, match="pue"):
        capacity.fleet_economics(p, 1000.0, 0.9, 2.0)


def test_published_power():
    b200 = reference.system_power("DGX B200")
    assert b200.watts / b200.gpus == pytest.approx(1787.5)  # 14.3 kW over 8 GPUs
    assert reference.system_power("DGX SuperPOD GB200 scalable unit").gpus == 8 * 72
    assert not reference.system_power("GB200 NVL72").confirmed
    with pytest.raises(ValueError, match="name"):
        reference.system_power("DGX Z100")
    assert reference.THECATCH_CLUSTER.power_convention == "all-in"
    assert reference.NVIDIA_FY2024_INFERENCE_SHARE.share == 0.40


def test_cluster_scale_table_worked_numbers():
    md = ch06.cluster_scale_table_markdown()
    # NOTES.md: 32,768 GPUs x 1.4 kW all-in = 45.9 MW; MFU 62 % - 2 points x 15 doublings = 32 %
    assert "| 32,768 | 32.8 EFLOP/s | 32% | 10.5 EFLOP/s | 45.9 MW |" in md
    # 1 GPU: 62 % of 1 PFLOP/s; 8 GPUs: 62 - 6 = 56 %
    assert "| 1 | 1.0 PFLOP/s | 62% | 620.0 TFLOP/s | 1.4 kW |" in md
    assert "| 8 | 8.0 PFLOP/s | 56% |" in md


def test_serving_tables():
    md = ch07.tpot_capacity_table_markdown(SERVING_70B, (0.05,), 8192)
    assert "| 50 ms | 162 | memory |" in md
    spec = ch07.speculation_table_markdown((0.8,), (4,), 0.05)
    assert "2.80x" in spec  # (1 - 0.8^5) / 0.2 / 1.2 = 2.801
    plan = capacity.plan(SERVING_70B, 10_000, 0.05, 8192)
    rows = ch07.capacity_cases_table_markdown([("as above", plan)], 1275.0, 1.2, 2.0)
    assert "| as above | 496 | 8 | 162 | memory |" in rows
    with pytest.raises(ValueError, match="rate_index"):
        from aiinfra.book.figures import routing as fig

        ch07.routing_table_markdown(fig.scenario().result, 99)
