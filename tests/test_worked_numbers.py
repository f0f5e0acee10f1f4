"""The source texts' worked numbers, reproduced through library calls.

Every assertion names the section of the source it pins. The assumptions
behind each number are in ../shared/seeds/NOTES.md. Values are compared at
the precision the source prints them.
"""

import pytest

from aiinfra import compute, decode, memory, roofline, units
from aiinfra.catalog import hardware, models, reference
from aiinfra.cluster import network, scale
from aiinfra.deployment import Deployment

MS = 1e-3

# --- first-encounter text, Example 1-1 (sections 1.3.1 and 1.3.2): 70B at 1 byte/param on one H100 SXM ---
N70 = 70e9
H100_BF16 = 989.4e12  # dense BF16, FP32 accumulate
H100_HBM = 3.35e12  # B/s


def test_fe_1_3_2_weight_read_and_matmul_bounds():
    # section 1.3.2: 70 GB / 3,350 GB/s ~ 20.90 ms; 140 GFLOPs / 989.4 TFLOP/s ~ 0.1415 ms; ratio ~148x
    t_read = roofline.memory_time_s(N70 * units.bytes_per_param("int8"), H100_HBM)
    t_math = roofline.compute_time_s(compute.approx_decode_flops_2n(N70, 1), H100_BF16)
    assert round(t_read / MS, 2) == 20.90
    assert round(t_math / MS, 4) == 0.1415
    assert round(t_read / t_math) == 148
    assert roofline.bound_label(2 * N70, N70, H100_BF16, H100_HBM) == "memory-bound"


def test_fe_1_3_2_doubling_compute_bandwidth_or_halving_weights():
    # section 1.3.2 discussion: 2x compute -> 0.0707 ms of math, read unchanged; 2x bandwidth or half the bytes -> 10.45 ms
    assert round(roofline.compute_time_s(2 * N70, 2 * H100_BF16) / MS, 4) == 0.0707
    assert round(roofline.memory_time_s(N70, 2 * H100_HBM) / MS, 2) == 10.45
    assert round(roofline.memory_time_s(N70 / 2, H100_HBM) / MS, 2) == 10.45
    assert roofline.step_time_overlapped_s(2 * N70, N70, 2 * H100_BF16, H100_HBM) == pytest.approx(
        roofline.memory_time_s(N70, H100_HBM)
    )


def test_fe_1_3_2_batch_of_eight():
    # section 1.3.2: 8 requests share one read -> math 1.13 ms, 2.61 ms per output, 47.9 -> 383 tok/s
    t1 = decode.batched_decode_step_time_s(1, 2 * N70, N70, 0.0, H100_BF16, H100_HBM)
    t8 = decode.batched_decode_step_time_s(8, 2 * N70, N70, 0.0, H100_BF16, H100_HBM)
    assert round(roofline.compute_time_s(8 * 2 * N70, H100_BF16) / MS, 2) == 1.13
    assert round(t8 / 8 / MS, 2) == 2.61
    assert round(decode.tokens_per_s_aggregate(1, t1), 1) == 47.9
    assert round(decode.tokens_per_s_aggregate(8, t8)) == 383


def test_fe_1_3_2_critical_batch():
    # section 1.3.2: B* = b_W Pi / (2 beta) with b_W = 1 -> 147.7
    b_star = decode.critical_batch_size(units.bytes_per_param("int8"), H100_BF16, H100_HBM)
    assert round(b_star, 1) == 147.7
    # and it is where the two times cross
    assert roofline.compute_time_s(b_star * 2 * N70, H100_BF16) == pytest.approx(
        roofline.memory_time_s(N70, H100_HBM)
    )


def test_fe_1_2_1_amdahl_two_teams():
    # section 1.2.1 example: coding 5x faster; 20-30% of the time -> 1.19-1.32x; 70-80% -> 2.27-2.78x
    assert round(roofline.amdahl_speedup(0.2, 5), 2) == 1.19
    assert round(roofline.amdahl_speedup(0.3, 5), 2) == 1.32
    assert round(roofline.amdahl_speedup(0.7, 5), 2) == 2.27
    assert round(roofline.amdahl_speedup(0.8, 5), 2) == 2.78
    assert roofline.time_after_speedup_s(100, 0.2, 5) == pytest.approx(84)
    assert roofline.time_after_speedup_s(100, 0.8, 5) == pytest.approx(36)


def test_fe_1_2_1_seek_example():
    # section 1.2.1: 20 dependent 10 ms seeks + 1 ms CPU = 201 ms; 2x CPU saves 0.5 ms, 10 fewer seeks save 100 ms
    seek = reference.latency_s("Disk seek")
    base = roofline.sequential_seeks_time_s(20, seek, 1 * MS)
    assert round(base / MS) == 201
    assert round((base - roofline.sequential_seeks_time_s(20, seek, 0.5 * MS)) / MS, 1) == 0.5
    assert round((base - roofline.sequential_seeks_time_s(10, seek, 1 * MS)) / MS) == 100
    # CPU share 1/201, so removing it entirely gains about 0.5%
    assert round(100 * (1 - 1 / roofline.amdahl_speedup(1 * MS / base, 1e12)), 1) == 0.5
    # a seek is ~1e5 main-memory references (section 1.2.1)
    assert reference.latency_ratio("Disk seek", "Main memory reference") == pytest.approx(1e5)


def test_fe_1_2_3_network_units():
    # section 1.2.3: 400 Gbit/s = 50 GB/s, 1 GB in 20 ms
    bw = units.bytes_from_bits(400e9)
    assert bw == pytest.approx(50e9)
    assert round(network.transfer_time_s(units.GB, bw) / MS) == 20


def test_fe_1_4_2_smartnic_cores():
    # section 1.4.2 and note 9: 40 Gbit/s at 84 B per minimum frame ~ 60 Mpps; 10-20 Mpps per core -> 3 to 6 cores
    pps = network.packets_per_s(40e9, frame_bytes_on_wire=84)
    assert round(pps / 1e6, 1) == 59.5
    assert network.cores_needed(pps, 20e6) == 3
    assert network.cores_needed(pps, 10e6) == 6


# --- first-encounter text, Chapter Numbers Quick Reference and section 1.3.4: Qwen3-8B BF16 on an RTX PRO 6000 ---


def _qwen_and_card():
    return models.load("Qwen3-8B"), hardware.gpu("RTX PRO 6000 Blackwell Workstation")


def test_fe_quick_reference_counts():
    m, _ = _qwen_and_card()
    assert round(memory.weight_bytes(m, "bf16") / units.GB, 2) == 16.38
    assert memory.kv_bytes_per_token(m) == 144 * units.KiB
    assert memory.kv_bytes_per_request(m, 2048) == 288 * units.MiB
    assert round(memory.kv_bytes_per_request(m, 2048) / units.GB, 3) == 0.302
    assert round(compute.prefill_flops(m, 2048) / 1e12, 2) == 29.69  # causal, lm_head on the last token
    assert round(compute.decode_flops(m, 2048) / 1e9, 2) == 16.34
    assert round(models.decode_read_params(m) * units.bytes_per_param("bf16") / units.GB, 2) == 15.14


def test_fe_quick_reference_times_and_mbu():
    m, card = _qwen_and_card()
    assert card.bf16_dense_flops_per_s == 503.8e12 and card.memory_bandwidth_bytes_per_s == 1.792e12
    t_prefill = roofline.compute_time_s(compute.prefill_flops(m, 2048), card.bf16_dense_flops_per_s)
    t_decode_math = roofline.compute_time_s(compute.decode_flops(m, 2048), card.bf16_dense_flops_per_s)
    reads = models.decode_read_params(m) * units.bytes_per_param("bf16") + memory.kv_bytes_per_request(
        m, 2048
    )
    t_reads = roofline.memory_time_s(reads, card.memory_bandwidth_bytes_per_s)
    assert round(t_prefill / MS, 1) == 58.9
    assert round(t_decode_math / MS, 4) == 0.0324
    assert round(t_reads / MS, 2) == 8.62
    assert Deployment(m, card).step(batch=1, context_tokens=2048).time_s == pytest.approx(t_reads)
    # section 1.3.4: measured TPOT 26.5 ms -> MBU about 33%; GPU-only 10.7 ms is within 20% of the bound
    assert round(100 * roofline.mbu(reads, card.memory_bandwidth_bytes_per_s, 26.5 * MS)) == 33
    assert roofline.mbu(reads, card.memory_bandwidth_bytes_per_s, 10.7 * MS) > 0.8


# --- whole-chain text, "Work out one chat request by hand": 8B, BF16, 1e15 FLOP/s at 50%, 3e12 B/s at 70% ---
N8 = 8e9
W8 = N8 * 2  # 16 GB of BF16 weights
PI, ETA_F = 1e15, 0.5
BW, ETA_B = 3e12, 0.7
KV_STEP = 0.3e9  # at most 0.3 GB of KV read per request per step
P_PROMPT = 2000


def test_wc_prefill_64_ms():
    f = compute.approx_prefill_flops_2n(N8, P_PROMPT)
    assert f == pytest.approx(3.2e13)
    t = decode.ttft_s(f, W8, PI, BW, eta_f=ETA_F, eta_b=ETA_B)
    assert round(t / MS) == 64
    assert round(roofline.memory_time_s(W8, BW, ETA_B) / MS, 1) == 7.6  # the one weight read inside prefill
    assert roofline.bound_label(f, W8, PI, BW, ETA_F, ETA_B) == "compute-bound"
    assert round(roofline.arithmetic_intensity_flops_per_byte(f, W8)) == 2000


def test_wc_decode_step_and_batch_32():
    f1 = compute.approx_decode_flops_2n(N8, 1)
    assert round(roofline.compute_time_s(f1, PI, ETA_F) / MS, 3) == 0.032
    t1 = decode.batched_decode_step_time_s(1, f1, W8, KV_STEP, PI, BW, ETA_F, ETA_B)
    t32 = decode.batched_decode_step_time_s(32, f1, W8, KV_STEP, PI, BW, ETA_F, ETA_B)
    assert round(t1 / MS, 1) == 7.8
    assert round(t32 / MS, 1) == 12.2
    assert round(decode.tokens_per_s_per_user(t1)) == 129
    agg = decode.tokens_per_s_aggregate(32, t32)
    assert round(agg, -2) == 2600
    assert round(agg / decode.tokens_per_s_per_user(t1)) == 20
    assert round(roofline.arithmetic_intensity_flops_per_byte(f1, W8 + KV_STEP)) == 1
    # KV is 38% of the bytes read at batch 32
    assert round(100 * 32 * KV_STEP / (W8 + 32 * KV_STEP)) == 38


def test_wc_ridge_points_and_attention_share():
    assert round(roofline.ridge_point_flops_per_byte(1e15, 3e12)) == 333
    assert round(roofline.ridge_point_flops_per_byte(989.4e12, 3.352e12)) == 295
    h100 = hardware.gpu("H100 SXM")
    assert (
        round(
            roofline.ridge_point_flops_per_byte(
                h100.bf16_dense_flops_per_s, h100.memory_bandwidth_bytes_per_s
            )
        )
        == 295
    )
    # the context term 2 n_layer n_ctx d_model at n_ctx = 1,000 is about 1.6% of 2N (Kaplan et al. 2020)
    share = compute.kaplan_attention_flops_per_token(32, 1000, 4096) / compute.approx_decode_flops_2n(N8, 1)
    assert round(100 * share, 1) == 1.6


def test_wc_one_h100_ceiling():
    # "Follow one decode step down, then back up": 16 GB / 3.352 TB/s ~ 4.8 ms, at most ~210 tok/s
    t = roofline.memory_time_s(W8, 3.352e12)
    assert round(t / MS, 1) == 4.8
    assert round(decode.memory_bound_tokens_per_s(W8, 3.352e12), -1) == 210


# --- TheCatch, "Latency, throughput, tokens/sec" (05 The code): single stream on 3.35 TB/s ---


@pytest.mark.parametrize(
    "n_params, rates",
    [
        (7e9, (239.3, 478.6, 957.1)),
        (70e9, (23.9, 47.9, 95.7)),
        (175e9, (9.6, 19.1, 38.3)),
    ],
)
def test_tc_latency_tokens_per_s(n_params, rates):
    for precision, expected in zip(("bf16", "int8", "int4"), rates):
        rate = decode.memory_bound_tokens_per_s(n_params * units.bytes_per_param(precision), 3.35e12)
        assert round(rate, 1) == expected


def test_tc_latency_1000_token_reply():
    # 70B at 16 bit, 1,000 tokens, every token one decode pass, prefill not counted: 41.8 s
    step = 1 / decode.memory_bound_tokens_per_s(70e9 * 2, 3.35e12)
    t = decode.decode_time_s(step, 1000)
    assert round(t, 1) == 41.8


# --- TheCatch, "What is inference?" (05 The code): 70B, 500-token prompt, 500-token reply ---


def test_tc_inference_flops():
    assert compute.approx_prefill_flops_2n(70e9, 500) == pytest.approx(7e13)
    assert compute.approx_decode_flops_2n(70e9, 500) == pytest.approx(7e13)
    assert compute.approx_flops_2n(70e9, 500, 500) == pytest.approx(1.4e14)


# --- TheCatch, "KV cache & batching" (04 The math, 05 The code): full MHA at d = 8192, 80 layers, 16 bit ---


def test_tc_kv_and_batch_limit():
    per_token = memory.kv_bytes_per_token_formula(80, 64, 128, 2)  # 64 heads x 128 = d 8192, no GQA
    assert round(per_token / units.MB, 2) == 2.62
    per_request = per_token * 8192
    assert round(per_request / units.GB, 1) == 21.5
    free = 8 * 80e9 - 140e9
    assert round(free / units.GB) == 500
    assert decode.max_batch_from_kv_budget(free, per_request) == 23
    # erratum (NOTES.md): 23 requests read ~494 GB of KV per step, several times the 140 GB of weights
    assert round(23 * per_request / units.GB) == 494
    # the real 70B uses GQA with 8 KV heads: 8x less, 320 KiB/token, 2.5 GiB at 8,192 tokens (first-encounter 1.2.3)
    m = models.load("DeepSeek-R1-Distill-Llama-70B")
    assert memory.kv_bytes_per_token(m) * 8 == per_token
    assert memory.kv_bytes_per_request(m, 8192) == 2.5 * units.GiB


# --- TheCatch, "The data-center cluster" (04 The math, 05 The code): 32,768 GPUs ---


def test_tc_cluster_32768():
    g = 32768
    peak = scale.peak_flops_per_s(g, 1e15)
    mfu = scale.mfu_log2_model(g)
    assert round(peak / 1e18, 2) == 32.77
    assert round(100 * mfu) == 32
    assert round(scale.realized_flops_per_s(g, 1e15, mfu) / 1e18, 2) == 10.49
    # 1.4 kW all-in already includes cooling, so PUE is 1 here
    assert round(scale.cluster_power_w(g, 1400, 1.0, convention="all-in") / 1e6, 1) == 45.9
    # the Amdahl-style model is calibrated to the same end point
    assert round(100 * scale.mfu_comm_fraction_model(g)) == 32
