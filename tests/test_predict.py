"""The bound and the calibrated prediction: the bound is the roofline, the prediction never beats it."""

import math

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from aiinfra import calibration, compute, deployment, memory, predict
from aiinfra.catalog import hardware, models

H100 = hardware.gpu("H100 SXM")


def _setup(**kw):
    return predict.Setup(**{"model": "Llama-3.1-8B", "gpu": "H100 SXM", **kw})


def test_bound_decode_step_is_the_roofline_by_hand():
    # Llama-3.1-8B, BF16, batch 1: the step reads every weight but the embedding table (one row) and the KV
    # of its context: 32 layers x 8 KV heads x 128 x (K and V) x 2 bytes = 131,072 B per token.
    m = models.load("Llama-3.1-8B")
    ctx = 2048 + 1  # prompt 2048, output 2: one step at the mean context P + G/2
    weights = 2.0 * models.decode_read_params(m)
    kv = 32 * 8 * 128 * 2 * 2 * ctx
    expected = max(compute.decode_flops(m, ctx) / H100.bf16_dense_flops_per_s, (weights + kv) / 3.35e12)
    got = predict.speeds(_setup(), predict.IDEAL, 1, 2048, 2)
    assert got.step_s == pytest.approx(expected, rel=1e-12)
    assert got.tpot_s == got.step_s and got.user_tok_s == pytest.approx(1 / expected)


def test_bound_max_batch_fills_the_whole_memory_with_kv():
    # IDEAL: all 80 GB for weights and KV, no activations: floor((M - W) / KV(P + G)).
    m = models.load("Llama-3.1-8B")
    kv_one = 32 * 8 * 128 * 2 * 2 * (1000 + 1000)
    expected = math.floor((80e9 - memory.weight_bytes(m, "bf16")) / kv_one)
    assert predict.max_batch(_setup(), predict.IDEAL, 1000, 1000) == expected


def test_activations_shrink_the_largest_batch():
    p = calibration.load().parameters
    without = predict.Parameters(**{**p.as_dict(), "activation_copies": 0.0})
    assert predict.max_batch(_setup(), p, 2048, 256) < predict.max_batch(_setup(), without, 2048, 256)


def test_batched_prefill_in_one_pass_costs_the_sum_of_its_prompts():
    # 4 prompts of 2,048 tokens fit one 8,192-token pass; compute-bound, so the pass takes 4x one prompt's
    # arithmetic and every request gets its first token at its end.
    one = predict.speeds(_setup(), predict.IDEAL, 1, 2048, 1).ttft_s
    four = predict.speeds(_setup(), predict.IDEAL, 4, 2048, 1).ttft_s
    assert one == pytest.approx(float(compute.prefill_flops(models.load("Llama-3.1-8B"), 2048)) / 989.4e12)
    assert four == pytest.approx(4 * one, rel=1e-12)


def test_chunked_prefill_gives_early_prompts_their_first_token_early():
    # 8 prompts of 2,048 tokens: two passes of 8,192; half the requests finish with the first pass.
    eight = predict.speeds(_setup(), predict.IDEAL, 8, 2048, 1)
    one_pass = predict.speeds(_setup(), predict.IDEAL, 4, 2048, 1).ttft_s
    assert eight.ttft_s == pytest.approx((one_pass + 2 * one_pass) / 2, rel=1e-12)
    assert eight.latency_s == pytest.approx(2 * one_pass, rel=1e-12)


def test_fp4_math_halves_a_compute_bound_prefill_on_b200():
    # B200: 9 PFLOP/s dense FP4 against 4.5 dense FP8 (HGX/DGX B200 datasheets).
    kw = dict(model="Llama-3.1-70B", gpu="B200", weight_precision="fp4", kv_bytes_per_element=1.0)
    fp8 = predict.speeds(predict.Setup(compute_precision="fp8", **kw), predict.IDEAL, 1, 4096, 1).ttft_s
    fp4 = predict.speeds(predict.Setup(compute_precision="fp4", **kw), predict.IDEAL, 1, 4096, 1).ttft_s
    assert fp4 == pytest.approx(fp8 / 2, rel=1e-12)


def test_replicas_multiply_throughput_and_leave_each_request_alone():
    p = calibration.load().parameters
    one = predict.speeds(_setup(), p, 16, 1024, 128)
    four = predict.speeds(_setup(replicas=4), p, 64, 1024, 128)
    assert four.throughput_tok_s == pytest.approx(4 * one.throughput_tok_s, rel=1e-12)
    assert (four.ttft_s, four.tpot_s, four.latency_s) == (one.ttft_s, one.tpot_s, one.latency_s)
    assert four.max_batch == 4 * one.max_batch


def test_tensor_parallel_prediction_pays_all_reduces_the_bound_does_not():
    p = calibration.load().parameters
    tp1 = predict.speeds(_setup(), p, 1, 128, 64)
    tp8 = predict.speeds(_setup(tp=8), p, 1, 128, 64)
    bound8 = predict.speeds(_setup(tp=8), predict.IDEAL, 1, 128, 64)
    bound1 = predict.speeds(_setup(), predict.IDEAL, 1, 128, 64)
    assert bound8.step_s < bound1.step_s / 7.9  # ideal sharding of the reads
    assert tp8.step_s > tp1.step_s / 4  # the fixed costs and the 64 all-reduces eat most of it


def test_batch_zero_means_the_largest_batch_that_fits():
    e = predict.estimate(_setup(), 0, 2048, 256)
    assert e.batch == e.prediction.max_batch > 1 and e.prediction.fits
    assert e.bound.max_batch >= e.prediction.max_batch


def test_a_model_that_does_not_fit_is_an_error():
    with pytest.raises(ValueError, match="does not fit"):
        predict.estimate(predict.Setup("Llama-3.1-70B", "H100 SXM"), 1, 2048, 256)


def test_a_batch_past_memory_is_flagged():
    e = predict.estimate(_setup(), 100_000, 2048, 256)
    assert not e.prediction.fits and not e.bound.fits


@pytest.mark.parametrize(
    "name, bad",
    [
        ("eta_b_decode", 0.0),
        ("eta_f_decode", 1.5),
        ("eta_b_prefill", -0.1),
        ("eta_f_prefill", float("nan")),
        ("eta_b_kv", 0.0),
        ("layer_overhead_graph_s", -1e-6),
        ("layer_overhead_eager_s", 0.01),
        ("memory_utilization", 0.0),
        ("activation_copies", -1.0),
        ("prefill_chunk_tokens", 0),
    ],
)
def test_each_parameter_rejects_nonsense(name, bad):
    good = calibration.load().parameters.as_dict()
    with pytest.raises(ValueError, match=name):
        predict.Parameters(**{**good, name: bad})


@pytest.mark.parametrize(
    "kw, name",
    [
        ({"tp": 3}, "tp"),  # Llama-3.1-8B has 8 KV heads
        ({"tp": 16}, "tp"),
        ({"tp": 0}, "tp"),
        ({"replicas": 0}, "replicas"),
        ({"weight_precision": "fp2"}, "weight_precision"),
        ({"compute_precision": "fp4"}, "compute_precision"),  # Hopper has no FP4 peak
        ({"compute_precision": "int8"}, "compute_precision"),
        ({"kv_bytes_per_element": 0}, "kv_bytes_per_element"),
        ({"graph_capture": "yes"}, "graph_capture"),
    ],
)
def test_setup_rejects_nonsense(kw, name):
    with pytest.raises(ValueError, match=name):
        _setup(**kw)


@pytest.mark.parametrize("arg, bad", [("batch", 0), ("prompt_tokens", 0), ("output_tokens", 0)])
def test_speeds_reject_nonsense(arg, bad):
    kw = {"batch": 1, "prompt_tokens": 10, "output_tokens": 10, arg: bad}
    with pytest.raises(ValueError, match=arg):
        predict.speeds(_setup(), predict.IDEAL, **kw)


_CASES = [
    ("Llama-3.1-8B", "H100 SXM", "bf16", "bf16", (1, 2, 4, 8)),
    ("Llama-3.1-70B", "H200 SXM", "fp8", "fp8", (2, 4, 8)),
    ("Qwen3-30B-A3B", "B200", "fp4", "fp4", (1, 2, 4)),
    ("Qwen3-8B", "RTX PRO 6000 Blackwell Workstation", "int4", "bf16", (1, 2)),
    ("Mixtral-8x7B-v0.1", "A100 80GB SXM", "int8", "bf16", (2, 8)),
]


@settings(max_examples=60, deadline=None)
@given(
    case=st.sampled_from(_CASES),
    tp_index=st.integers(0, 3),
    replicas=st.integers(1, 4),
    batch=st.integers(1, 300),
    prompt=st.integers(1, 20_000),
    output=st.integers(1, 2_000),
    graph=st.booleans(),
    etas=st.tuples(*[st.floats(0.05, 1.0)] * 5),
    overheads=st.tuples(st.floats(0.0, 1e-3), st.floats(0.0, 1e-3)),
    utilization=st.floats(0.5, 1.0),
    copies=st.floats(0.0, 64.0),
    chunk=st.integers(256, 16_384),
)
def test_prediction_is_never_faster_than_the_bound(
    case, tp_index, replicas, batch, prompt, output, graph, etas, overheads, utilization, copies, chunk
):
    model, gpu, w, c, tps = case
    setup = predict.Setup(
        model,
        gpu,
        tp=tps[tp_index % len(tps)],
        replicas=replicas,
        weight_precision=w,
        compute_precision=c,
        graph_capture=graph,
    )
    p = predict.Parameters(*etas[:4], *overheads, utilization, copies, chunk, etas[4])
    ideal = predict.Parameters(1.0, 1.0, 1.0, 1.0, 0.0, 0.0, 1.0, 0.0, chunk)  # the same schedule at peak
    pred = predict.speeds(setup, p, batch, prompt, output)
    bound = predict.speeds(setup, ideal, batch, prompt, output)
    for t in ("ttft_s", "tpot_s", "step_s", "latency_s"):
        assert getattr(pred, t) >= getattr(bound, t) * (1 - 1e-12)
    for rate in ("throughput_tok_s", "user_tok_s"):
        assert getattr(pred, rate) <= getattr(bound, rate) * (1 + 1e-12)
    assert pred.max_batch <= bound.max_batch


# --- the helpers the book's pages and the CLI use to set a prediction beside a Deployment's bound ---


def test_setup_of_deployment_carries_model_gpu_and_precisions():
    d = deployment.Deployment(
        "Llama-3.1-70B", "H200 SXM", n_gpus=4, weight_precision="fp8", kv_precision="fp8"
    )
    s = predict.setup_of_deployment(d, graph_capture=False)
    assert (s.model.name, s.gpu.name, s.tp, s.replicas) == ("Llama-3.1-70B", "H200 SXM", 4, 1)
    assert (s.weight_precision, s.kv_bytes_per_element, s.graph_capture) == ("fp8", 1.0, False)
    with pytest.raises(ValueError, match="tp"):  # 8 KV heads
        predict.setup_of_deployment(d.replace(n_gpus=3))
    with pytest.raises(ValueError, match="kv_heads"):  # chapter 5's hypothetical full-MHA cache
        predict.setup_of_deployment(d.replace(kv_heads=64))


def test_decode_step_bound_is_the_roofline_by_hand():
    # Llama-3.1-8B, BF16, batch 1 at 4,096 cached tokens: weights read plus 131,072 B of KV per token, at 3.35 TB/s.
    m = models.load("Llama-3.1-8B")
    by_hand = (2.0 * models.decode_read_params(m) + 32 * 8 * 128 * 2 * 2 * 4096) / 3.35e12
    assert predict.decode_step_s(_setup(), predict.IDEAL, 1, 4096) == pytest.approx(by_hand, rel=1e-12)


@pytest.mark.parametrize("model, gpu, n", [("Qwen3-8B", "H100 SXM", 1), ("Llama-3.1-70B", "H100 SXM", 2)])
@pytest.mark.parametrize("batch, ctx", [(1, 2048), (64, 8192), (256, 0)])
def test_decode_step_and_prefill_bounds_agree_with_deployment(model, gpu, n, batch, ctx):
    d = deployment.Deployment(model, gpu, n_gpus=n)
    s = predict.setup_of_deployment(d)
    assert predict.decode_step_s(s, predict.IDEAL, batch, ctx) == pytest.approx(
        d.step(batch, ctx).time_s, rel=1e-12
    )
    assert predict.prefill_s(s, predict.IDEAL, 2048) == pytest.approx(d.prefill(2048).time_s, rel=1e-12)
    assert predict.decode_step_s(s, predict.fitted(), batch, ctx) > d.step(batch, ctx).time_s
    assert predict.prefill_s(s, predict.fitted(), 2048) > d.prefill(2048).time_s
    r = d.request(2048, 300, batch)
    bound = predict.reply_s(s, predict.IDEAL, batch, 2048, 300)
    assert bound == pytest.approx((r.ttft_s, r.tpot_s, r.end_to_end_s), rel=1e-12)
    assert all(pred > b for pred, b in zip(predict.reply_s(s, predict.fitted(), batch, 2048, 300), bound))


def test_fitted_is_the_stored_calibration():
    assert predict.fitted() == calibration.load().parameters


def test_min_gpus_bound_counts_all_memory_and_prediction_less():
    # Llama-3.1-70B in BF16 is 141.1 GB: 2 x 80 GB hold it at the bound; at 90 % usable plus one request's
    # KV and activations, 2 x 72 GB = 144 GB leaves 2.9 GB, short of 64 requests of 2,304 tokens at 320 KiB
    # per token (47 GB); 3 does not divide the 8 KV heads, so the prediction needs 4.
    d = deployment.Deployment("Llama-3.1-70B", "H100 SXM")
    assert predict.min_gpus(d, predict.IDEAL, 1, 2048, 256) == 2
    assert predict.min_gpus(d, predict.fitted(), 64, 2048, 256) == 4
    assert predict.min_gpus(d, predict.fitted(), 64, 2048, 256) >= predict.min_gpus(
        d, predict.IDEAL, 64, 2048, 256
    )
    with pytest.raises(ValueError, match="limit"):
        predict.min_gpus(d, predict.IDEAL, 10**7, 2048, 256, limit=8)


@pytest.mark.parametrize(
    "call, name",
    [
        (lambda s: predict.decode_step_s(s, predict.IDEAL, 0, 10), "batch"),
        (lambda s: predict.decode_step_s(s, predict.IDEAL, 1, -1), "context_tokens"),
        (lambda s: predict.prefill_s(s, predict.IDEAL, 0), "prompt_tokens"),
        (lambda s: predict.prefill_s(s, predict.IDEAL, 10, batch=0), "batch"),
        (lambda s: predict.reply_s(s, predict.IDEAL, 1, 10, 0), "output_tokens"),
    ],
)
def test_helpers_reject_nonsense(call, name):
    with pytest.raises(ValueError, match=name):
        call(_setup())
