"""The deployment model: chapter 2's worked request, the one peak rule, memory, steps, requests, bounds."""

import math

import numpy as np
import pytest
from hypothesis import given
from hypothesis import strategies as st

from aiinfra import compute, decode
from aiinfra.catalog import hardware, models
from aiinfra.deployment import (
    TEACHING_8B,
    TEACHING_BATCH,
    TEACHING_PROMPT_TOKENS,
    Deployment,
    RoundModel,
)

P8, B8 = TEACHING_PROMPT_TOKENS, TEACHING_BATCH


def _teaching(**changes):
    gpu_fields = {k: changes.pop(k) for k in list(changes) if k == "memory_bandwidth_bytes_per_s"}
    d = TEACHING_8B.replace(**changes)
    return d.replace(gpu=hardware.custom_gpu(base=d.gpu, **gpu_fields)) if gpu_fields else d


# --- chapter 2's request, pinned to the source text's numbers (NOTES.md) ------------


def test_worked_request_pins_the_source_numbers():
    d = TEACHING_8B
    pre, one, batch = d.prefill(P8), d.step(1, P8), d.step(B8, P8)
    assert d.weight_bytes == pytest.approx(16e9)
    assert d.kv_bytes(P8) == pytest.approx(0.3e9)
    assert pre.flops == pytest.approx(3.2e13)  # 2 N P
    assert pre.time_s == pytest.approx(0.064)  # 3.2e13 / (0.5 x 1e15)
    assert pre.compute_s > pre.memory_s and pre.bound == "compute-bound"
    assert pre.memory_s * 1e3 == pytest.approx(7.6, abs=0.05)
    assert one.compute_s * 1e3 == pytest.approx(0.032)  # 2N / (0.5 x 1e15)
    assert one.time_s * 1e3 == pytest.approx(7.8, abs=0.05)
    assert batch.time_s * 1e3 == pytest.approx(12.2, abs=0.05)
    assert batch.bytes_moved == pytest.approx(25.6e9)
    assert batch.kv_share == pytest.approx(0.375)
    assert one.tokens_per_s == pytest.approx(129, abs=0.5)
    assert batch.tokens_per_s == pytest.approx(2625, rel=1e-6)
    assert batch.tokens_per_s / one.tokens_per_s == pytest.approx(20.4, abs=0.05)
    assert d.ridge_flops_per_byte == pytest.approx(1000 / 3)
    assert pre.intensity_flops_per_byte == pytest.approx(2000)
    assert one.intensity_flops_per_byte == pytest.approx(0.98, abs=0.01)
    # attention at the worked 2,000-token prompt, scores and values (eq. 3.2): 4 L n d = 1.05 GFLOPs, 6.6% of 2N
    attention = compute.attention_flops_per_token(d.model.n_layers, d.model.d_model, d.model.d_model, P8)
    assert attention == 4 * 32 * 2000 * 4096
    assert attention / one.flops == pytest.approx(0.0655, abs=0.0005)
    share = decode.decode_share_of_reply(pre.time_s, one.time_s, 500)
    # a step reads 16 GB + 0.3 GB at 2.1 TB/s: 7.7619 ms; 499 of them are 3.873190 s against the
    # 64 ms prefill: 3.873190 / 3.937190 = 98.37 % of the reply is decode
    assert share == pytest.approx(0.98374475, rel=1e-7)


def test_worked_request_variants():
    assert TEACHING_8B.step(1, P8).tokens_per_s == TEACHING_8B.step(1, P8).tokens_per_s_per_user
    fast = _teaching(eta_b=1.0, memory_bandwidth_bytes_per_s=3.35e12, model=RoundModel(8e9, 0.0))
    assert fast.step(1, P8).tokens_per_s == pytest.approx(3.35e12 / 16e9)
    # far past the ridge the step is compute-bound: B x 2N / (eta_F Pi)
    huge = _teaching(model=RoundModel(8e9, 0.0)).step(4096, P8)
    assert huge.time_s == pytest.approx(4096 * 16e9 / 0.5e15) and huge.bound == "compute-bound"


@given(st.integers(1, 512), st.floats(0.1, 1.0), st.floats(0.0, 1e6))
def test_batching_never_lowers_throughput(batch, eta_b, kv_per_token):
    d = _teaching(eta_b=eta_b, model=RoundModel(8e9, kv_per_token))
    one, many = d.step(1, P8), d.step(batch, P8)
    assert many.tokens_per_s >= one.tokens_per_s * (1 - 1e-9)
    assert many.time_s >= one.time_s * (1 - 1e-12)
    assert math.isfinite(many.tokens_per_s)


# --- one rule for the peak ---------------------------------------------------------


def test_the_compute_precision_decides_the_peak():
    h100 = hardware.gpu("H100 SXM")
    int8 = Deployment("Llama-3.1-8B", h100, weight_precision="int8")
    assert int8.peak_flops_per_s == 989.4e12  # int8 weights, BF16 arithmetic
    assert int8.replace(compute_precision="fp8").peak_flops_per_s == 1978.9e12
    assert int8.replace(n_gpus=4).peak_flops_per_s == 4 * 989.4e12
    with pytest.raises(ValueError, match="precision 'fp8'"):
        Deployment("Llama-3.1-8B", "A100 80GB SXM", compute_precision="fp8")  # no FP8 on Ampere


def test_request_phases_drift_fixed_int8_prefill_is_compute_bound():
    """Llama-3.1-8B in int8 on an H100, a 200-token prompt: BF16 arithmetic, so compute-bound.

    Independently: the causal prefill does 2 N_lin P + 2 N_head + attention ~ 2.80e12 FLOPs,
    2.83 ms at 989.4 TFLOP/s, while reading 7.50 GB of int8 weights at 3.35 TB/s takes 2.24 ms.
    At the FP8 peak the arithmetic would take 1.42 ms and the label would flip: the old bug.
    """
    d = Deployment("Llama-3.1-8B", "H100 SXM", weight_precision="int8")
    req = d.request(200, 50)
    pre = req.prefill
    assert pre.flops == pytest.approx(2.80e12, rel=0.01)
    assert pre.weight_bytes == models.decode_read_params(d.model)  # one byte per weight read
    assert pre.compute_s == pytest.approx(pre.flops / 989.4e12)
    assert pre.memory_s == pytest.approx(pre.weight_bytes / 3.35e12)
    assert pre.compute_s > pre.memory_s and pre.bound == "compute-bound"
    assert pre.flops / 1978.9e12 < pre.memory_s  # what the FP8 peak would have claimed


# --- memory -------------------------------------------------------------------------


def test_memory_pins_qwen3_8b_on_an_h100():
    d = Deployment("Qwen3-8B", "H100 SXM")
    weights = 8_190_735_360 * 2  # exact count (tests/test_models.py) x 2 B
    kv_2048 = 36 * 2 * 8 * 128 * 2 * 2048  # L x (K, V) x H_kv x d_head x 2 B x tokens
    assert d.weight_bytes == weights
    assert d.kv_bytes_per_token == 147_456 and d.kv_bytes(2048) == kv_2048
    assert d.reserve_bytes == pytest.approx(8e9)  # the default 10 % of 80 GB
    assert d.free_bytes == pytest.approx(80e9 - 8e9 - weights)
    assert d.max_batch(2048) == (72_000_000_000 - weights) // kv_2048 == 184
    assert d.replace(memory_reserve=0.0).max_batch(2048) == (80_000_000_000 - weights) // kv_2048
    assert Deployment("DeepSeek-R1-Distill-Llama-70B", "RTX 4090").max_batch(2048) == 0  # weights do not fit


def test_qwen3_8b_needs_pin_the_notes():
    """Chapter 1's quick-reference needs of Qwen3-8B (NOTES.md), and its bounds on the RTX PRO 6000."""
    d = Deployment("Qwen3-8B", "RTX PRO 6000 Blackwell Workstation")
    prefill, step = d.prefill(2048), d.step(1, 2048)
    assert d.weight_bytes == 2 * 8_190_735_360  # 16.38 GB
    assert d.kv_bytes_per_token == 147_456  # 144 KiB
    assert d.kv_bytes(2048) == 288 * 2**20  # 288 MiB at 2,048 tokens
    assert d.weight_bytes_read == 15_136_819_200  # 15.14 GB: one row of the embedding table
    assert round(prefill.flops / 1e12, 2) == 29.69  # causal prefill
    assert round(step.flops / 1e9, 2) == 16.34
    assert round(prefill.compute_s * 1e3, 1) == 58.9  # the chapter's lower bounds
    assert round(step.compute_s * 1e3, 4) == 0.0324
    assert round(step.memory_s * 1e3, 2) == 8.62


def test_kv_precision_and_mha_heads():
    d = Deployment("Llama-3.1-70B", "H100 SXM", n_gpus=8, memory_reserve=0.0)
    assert d.kv_bytes_per_token == 80 * 2 * 8 * 128 * 2
    assert d.replace(kv_precision="fp8").kv_bytes_per_token == d.kv_bytes_per_token / 2
    assert d.replace(kv_precision=1.0).kv_bytes_per_token == d.kv_bytes_per_token / 2
    mha = d.replace(kv_heads=64)
    assert mha.kv_bytes_per_token == 8 * d.kv_bytes_per_token and mha.weight_bytes == d.weight_bytes
    weights, kv_8k = 2 * 70_553_706_496, 80 * 2 * 8 * 128 * 2 * 8192
    assert d.max_batch(8192) == (640_000_000_000 - weights) // kv_8k == 185  # the real GQA cache
    assert mha.max_batch(8192) == (640_000_000_000 - weights) // (8 * kv_8k) == 23  # the source's full MHA
    with pytest.raises(ValueError, match="kv_heads"):
        Deployment("DeepSeek-V3", "H200 SXM", kv_heads=8)


# --- steps and requests --------------------------------------------------------------


def test_a_request_adds_up_to_the_exact_flops():
    d = Deployment("Qwen3-8B", "H100 SXM")
    req = d.request(500, 500)
    assert req.prefill.flops + req.decode.flops == pytest.approx(compute.request_flops("Qwen3-8B", 500, 500))
    assert req.decode_steps == 499 and req.ttft_s == req.prefill.time_s
    assert req.end_to_end_s == pytest.approx(req.ttft_s + 499 * req.tpot_s)
    assert req.decode.bound == "memory-bound" and req.prefill.bound == "compute-bound"
    single = d.request(500, 1)
    assert single.decode_steps == 0 and single.end_to_end_s == single.ttft_s and single.tpot_s == 0.0


def test_decode_without_cache_reruns_the_prefills():
    d = Deployment("Qwen3-8B", "H100 SXM")
    no_cache = d.decode_without_cache(2048, 256)
    cached = d.request(2048, 256).decode
    assert no_cache.flops == pytest.approx(
        sum(compute.prefill_flops("Qwen3-8B", 2048 + k) for k in range(1, 256))
    )
    # each rerun pushes P + k tokens where a cached step pushes one: a ratio a little under P + G/2
    # (the rerun charges the lm_head and the attention once per pass, not once per token)
    assert 0.9 * 2048 < no_cache.flops / cached.flops < 2048 + 256 / 2
    assert no_cache.time_s > cached.time_s
    assert d.decode_without_cache(2048, 1).passes == 0


def test_step_and_prefill_match_hand_assembly():
    d = Deployment("Qwen3-8B", "RTX PRO 6000 Blackwell Workstation")
    g, m = d.gpu, d.model
    reads = models.decode_read_params(m) * 2 + 36 * 2 * 8 * 128 * 2 * 2048
    assert d.step(1, 2048).time_s == pytest.approx(reads / g.memory_bandwidth_bytes_per_s, rel=1e-12)
    assert d.step(64, 2048).time_s > d.step(1, 2048).time_s
    pre = d.prefill(2048)
    assert pre.time_s == pytest.approx(compute.prefill_flops(m, 2048) / 503.8e12, rel=1e-12)
    assert d.replace(compute_precision="fp8").prefill(2048).time_s == pytest.approx(pre.time_s / 2, rel=1e-3)
    # two GPUs with perfect sharing halve a memory-bound step
    assert d.replace(n_gpus=2).step(1, 2048).time_s == pytest.approx(d.step(1, 2048).time_s / 2)
    assert d.ttft_s(2048, queue_s=0.5) == pytest.approx(pre.time_s + 0.5)


def test_steps_take_arrays():
    d = Deployment("Qwen3-8B", "H100 SXM")
    sweep = d.step(np.array([1, 8, 64]), 4096)
    assert sweep.time_s.shape == (3,) and list(sweep.bound) == ["memory-bound"] * 3
    assert sweep.tokens_per_s[2] == pytest.approx(64 / d.step(64, 4096).time_s)
    ctx = d.step(1, np.array([1024, 8192]))
    assert ctx.kv_bytes[1] == 8 * ctx.kv_bytes[0]


@pytest.mark.parametrize(
    "kwargs, name",
    [
        (dict(n_gpus=0), "n_gpus"),
        (dict(eta_f=0), "eta_f"),
        (dict(eta_b=1.5), "eta_b"),
        (dict(memory_reserve=1.0), "memory_reserve"),
        (dict(weight_precision="int3"), "precision"),
        (dict(kv_precision=0), "kv_precision"),
        (dict(compute_precision="int8"), "precision"),
        (dict(gpu="TPU9000"), "name must be one of"),
        (dict(model="GPT-9"), "model"),
    ],
)
def test_rejections(kwargs, name):
    with pytest.raises(ValueError, match=name):
        Deployment(**{"model": "Qwen3-8B", "gpu": "H100 SXM", **kwargs})


@pytest.mark.parametrize(
    "call, name",
    [
        (lambda d: d.step(0, 100), "batch"),
        (lambda d: d.step(1, -1), "context_tokens"),
        (lambda d: d.prefill(0), "prompt_tokens"),
        (lambda d: d.request(10, 0), "output_tokens"),
        (lambda d: d.max_users(0, 100), "target_tpot_s"),
        (lambda d: d.kv_bytes(float("nan")), "context_tokens"),
    ],
)
def test_method_rejections(call, name):
    with pytest.raises(ValueError, match=name):
        call(Deployment("Qwen3-8B", "H100 SXM"))


# --- the law every reported bound obeys -------------------------------------------------

_GPUS = [g.name for g in hardware.catalog("bf16")]
_MODELS = [
    "Qwen3-8B",
    "Llama-3.1-8B",
    "Mistral-7B-v0.1",
    "Mixtral-8x7B-v0.1",
    "Qwen3-30B-A3B",
    "Llama-3.1-70B",
]


@given(
    model=st.sampled_from(_MODELS),
    gpu=st.sampled_from(_GPUS),
    n=st.sampled_from([1, 2, 8]),
    weights=st.sampled_from(["bf16", "fp8", "int8", "int4"]),
    compute_fp8=st.booleans(),
    eta_f=st.floats(0.05, 1.0),
    eta_b=st.floats(0.05, 1.0),
    batch=st.integers(1, 4096),
    ctx=st.integers(0, 131_072),
    prompt=st.integers(1, 32_768),
    out=st.integers(2, 64),
)
def test_a_reported_bound_names_the_larger_time(
    model, gpu, n, weights, compute_fp8, eta_f, eta_b, batch, ctx, prompt, out
):
    g = hardware.gpu(gpu)
    precision = "fp8" if compute_fp8 and g.fp8_dense_flops_per_s else "bf16"
    d = Deployment(
        model, g, n_gpus=n, weight_precision=weights, compute_precision=precision, eta_f=eta_f, eta_b=eta_b
    )
    req = d.request(prompt, out, batch=min(batch, 8))
    for work in (d.step(batch, ctx), d.prefill(prompt), req.prefill, req.decode):
        larger = "memory-bound" if work.memory_s > work.compute_s else "compute-bound"
        assert work.bound == larger
        assert work.time_s >= max(work.compute_s, work.memory_s) * (1 - 1e-12)
    # and both times are taken at the one peak of the deployment
    step = d.step(batch, ctx)
    assert step.compute_s == pytest.approx(
        step.flops / (eta_f * n * g.dense_flops_per_s(precision)), rel=1e-12
    )
    assert step.memory_s == pytest.approx(
        step.bytes_moved / (eta_b * n * g.memory_bandwidth_bytes_per_s), rel=1e-12
    )


def test_tensor_parallel_keeps_copies_of_a_cache_it_cannot_split():
    # Llama-3.1-70B: 8 KV heads. TP8 gives each GPU one head (one copy in all); TP16 puts each head
    # on two GPUs (two copies), TP32 on four.
    llama = {n: Deployment("Llama-3.1-70B", "H100 SXM", n_gpus=n) for n in (1, 2, 8, 16, 32)}
    assert [llama[n].kv_copies for n in (1, 2, 8, 16, 32)] == [1.0, 1.0, 1.0, 2.0, 4.0]
    assert llama[8].held_bytes(8192) == llama[8].kv_bytes(8192)
    # DeepSeek-V3's MLA caches one latent of 512 + 64 BF16 elements per token and layer, 61 layers:
    # 70,272 bytes a token, 575,668,224 bytes at 8,192 tokens, and TP8 keeps it whole on each GPU.
    ds = Deployment("DeepSeek-V3", "H200 SXM", n_gpus=8, weight_precision="fp8")
    assert ds.kv_bytes(8192) == 575_668_224
    assert ds.kv_copies == 8.0 and ds.held_bytes(8192) == 8 * 575_668_224
    # so the group holds as many requests as one GPU's own free memory does, not eight times more
    # per GPU: 141 GB x 0.9 = 126.9 GB, less 671,026,419,200 B / 8 = 83,878,302,400 B of FP8 weights,
    # leaves 43,021,697,600 B: 74.7 caches of 575,668,224 B
    assert ds.max_batch(8192) == 74
    # and each GPU reads its own copy every step
    assert ds.step(16, 8192).kv_bytes == 16 * 8 * 575_668_224
