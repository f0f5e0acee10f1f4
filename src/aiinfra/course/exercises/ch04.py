"""Exercises 4-1 to 4-5: latency, throughput and tokens per second, and a first deployment design.

Every reference answer is a short function of the exercise namespace ``p``
(parameters plus ``given``) that calls :mod:`aiinfra`; the reference notebook
shows these functions as the worked solutions.
"""

from __future__ import annotations

import functools

from aiinfra import decode, deployment, memory, predict, units
from aiinfra.catalog import hardware, models, reference
from aiinfra.course.exercises import Choice, Exercise, Free, Numeric, Param, Slip
from aiinfra.serving import capacity

# ---------------------------------------------------------------------------
# 4-1  The single-stream speed limit
# ---------------------------------------------------------------------------


def _read_bytes(model, precision):
    return models.decode_read_params(models.load(model)) * units.bytes_per_param(precision)


def _all_bytes(model, precision):
    """Every stored weight: what a step would read if the embedding table were streamed in full."""
    return memory.weight_bytes(models.load(model), precision)


EMBEDDING = "the embedding table counted in full? A decode step reads only the row of its token."


def _model_text(model):
    m = models.load(model)
    return {"n_params": models.total_params(m), "vocab": m.vocab_size, "hidden": m.hidden_size}


def given_4_1(p):
    g = hardware.gpu(p["gpu"])
    return {"bw_tb_s": g.memory_bandwidth_bytes_per_s / units.TB, **_model_text(p["model"])}


def _slip_4_1_a(p):
    return _all_bytes(p["model"], "bf16") / units.GB


def _slip_4_1_b(p):
    return decode.memory_bound_tokens_per_s(
        _all_bytes(p["model"], "bf16"), hardware.gpu(p["gpu"]).memory_bandwidth_bytes_per_s
    )


def _slip_4_1_c(p):
    return p["reply_tokens"] / _slip_4_1_b(p)


def _slip_4_1_d(p):
    return decode.memory_bound_tokens_per_s(
        _all_bytes(p["model"], "int4"), hardware.gpu(p["gpu"]).memory_bandwidth_bytes_per_s
    )


def ref_4_1_a(p):
    return _read_bytes(p["model"], "bf16") / units.GB


def ref_4_1_b(p):
    bw = hardware.gpu(p["gpu"]).memory_bandwidth_bytes_per_s
    return decode.memory_bound_tokens_per_s(_read_bytes(p["model"], "bf16"), bw)


def ref_4_1_c(p):
    return decode.end_to_end_latency_s(
        0.0, 1.0 / ref_4_1_b(p), p["reply_tokens"], first_token_from_prefill=False
    )


def ref_4_1_d(p):
    bw = hardware.gpu(p["gpu"]).memory_bandwidth_bytes_per_s
    return decode.memory_bound_tokens_per_s(_read_bytes(p["model"], "int4"), bw)


#: The GPUs of the FP8 generation (Hopper and CDNA 3), read from the catalog: a new one joins the variants.
GPU_CHOICES_4_1 = tuple(g.name for g in hardware.catalog() if g.architecture in ("Hopper", "CDNA 3"))

EX_4_1 = Exercise(
    id="4-1",
    title="The single-stream speed limit",
    level="core",
    intro=(
        "{model} ({n_params:,} parameters) decodes one request at a time on one {gpu} "
        "({bw_tb_s:.2f} TB/s of memory bandwidth). Each decode step streams every weight it multiplies: all "
        "parameters except the embedding table ({vocab:,} rows of the hidden width {hidden:,}), of which it "
        "needs one row. (The LM head is a separate matrix of the same shape and is read in full.) Ignore the "
        "KV cache and all overheads."
    ),
    params={
        "model": Param("Qwen3-8B", choices=("Qwen3-8B", "Llama-3.1-8B")),
        "gpu": Param("H100 SXM", choices=GPU_CHOICES_4_1),
        "reply_tokens": Param(1000, choices=(500, 1000, 2000)),
    },
    given=given_4_1,
    parts=(
        Numeric(
            "a",
            "How many bytes of weights does one step read in BF16?",
            ref_4_1_a,
            unit="GB",
            hint="(parameters - vocabulary x hidden + hidden) x 2 bytes",
            slips=(Slip("embedding-counted", EMBEDDING, value=_slip_4_1_a),),
        ),
        Numeric(
            "b",
            "What is the upper bound on decode speed, in tokens per second?",
            ref_4_1_b,
            unit="tok/s",
            hint="bandwidth divided by the bytes one step must read",
            slips=(Slip("embedding-counted", EMBEDDING, value=_slip_4_1_b),),
        ),
        Numeric(
            "c",
            "At that speed, how long do the {reply_tokens:,} decode steps of a {reply_tokens:,}-token reply "
            "take at least?",
            ref_4_1_c,
            unit="s",
            hint="one step per token, each at least bytes / bandwidth",
            slips=(Slip("embedding-counted", EMBEDDING, value=_slip_4_1_c),),
        ),
        Numeric(
            "d",
            "With 4-bit weights (half a byte each, scales ignored), what does the bound become?",
            ref_4_1_d,
            unit="tok/s",
            hint="the bytes per step shrink four-fold, so the bound grows four-fold",
            slips=(Slip("embedding-counted", EMBEDDING, value=_slip_4_1_d),),
        ),
        Free(
            "e",
            "Name two reasons a real deployment lands below the bound of part (b) even at batch 1.",
            sample=(
                "The bound of {b:.0f} tok/s assumes the full peak bandwidth and nothing but weight reads. Real "
                "kernels reach only part of peak, attention also reads the KV cache, and each step pays host-side "
                "costs (kernel launches, sampling, detokenization, logging) that chapter 4 showed can triple the "
                "step time in eager mode."
            ),
        ),
    ),
    discussion="The speed limit scales with bandwidth over bytes: changing the GPU moves it by the bandwidth ratio, "
    "changing the bits by the byte ratio, and nothing else in the formula matters.",
)

# ---------------------------------------------------------------------------
# 4-2  When the KV cache dominates
# ---------------------------------------------------------------------------

MODEL_4_2 = "Llama-3.1-8B"
GPU_4_2 = "H100 SXM"


def given_4_2(p):
    m = models.load(MODEL_4_2)
    return {
        "model": MODEL_4_2,
        "gpu": GPU_4_2,
        "kv_kib": memory.kv_bytes_per_token(m) / units.KiB,
        "bw_tb_s": hardware.gpu(GPU_4_2).memory_bandwidth_bytes_per_s / units.TB,
        **_model_text(MODEL_4_2),
    }


def _kv(p):
    return memory.kv_bytes_per_request(models.load(MODEL_4_2), p["context_tokens"])


def _bw():
    return hardware.gpu(GPU_4_2).memory_bandwidth_bytes_per_s


def ref_4_2_a(p):
    return _kv(p) / units.GB


def ref_4_2_b(p):
    return decode.memory_bound_tokens_per_s(_read_bytes(MODEL_4_2, "bf16"), _bw(), state_bytes=_kv(p))


def ref_4_2_c(p):
    return decode.memory_bound_tokens_per_s(_read_bytes(MODEL_4_2, "bf16"), _bw()) / ref_4_2_b(p)


def ref_4_2_d(p):
    return _read_bytes(MODEL_4_2, "bf16") / memory.kv_bytes_per_token(models.load(MODEL_4_2))


def ref_4_2_e(p):
    faster = decode.memory_bound_tokens_per_s(_read_bytes(MODEL_4_2, "int4"), _bw(), state_bytes=_kv(p))
    return faster / ref_4_2_b(p)


def _slip_4_2_b(p):
    return decode.memory_bound_tokens_per_s(_all_bytes(MODEL_4_2, "bf16"), _bw(), state_bytes=_kv(p))


def _slip_4_2_d(p):
    return _all_bytes(MODEL_4_2, "bf16") / memory.kv_bytes_per_token(models.load(MODEL_4_2))


EX_4_2 = Exercise(
    id="4-2",
    title="A tokens/s estimate that fails at long context",
    level="core",
    intro=(
        "{model} in BF16 ({n_params:,} parameters) serves one user on one {gpu} ({bw_tb_s:.2f} TB/s). A decode "
        "step reads every weight except the embedding table ({vocab:,} rows of {hidden:,}), of which it reads "
        "the one row its token needs, and it reads the whole KV cache besides. The user's conversation has grown "
        "to {context_tokens:,} tokens; each cached token holds {kv_kib:.0f} KiB of keys and values (1 KiB = "
        "1,024 B; 1 GB = $10^9$ B)."
    ),
    params={"context_tokens": Param(65536, choices=(32768, 65536, 131072))},
    given=given_4_2,
    parts=(
        Numeric(
            "a",
            "How large is the request's KV cache?",
            ref_4_2_a,
            unit="GB",
            hint="KV bytes per token times the tokens held",
        ),
        Numeric(
            "b",
            "What is the decode speed bound once the cache reads are counted?",
            ref_4_2_b,
            unit="tok/s",
            hint="bandwidth over (weight bytes read per step + KV bytes)",
            slips=(Slip("embedding-counted", EMBEDDING, value=_slip_4_2_b),),
        ),
        Numeric(
            "c",
            "By what factor does the weights-only estimate overstate that speed?",
            ref_4_2_c,
            unit="x",
            hint="weights-only bound divided by the bound of part (b)",
        ),
        Numeric(
            "d",
            "At what context length do the cache reads equal the weight reads?",
            ref_4_2_d,
            unit="tokens",
            hint="weight bytes read per step divided by KV bytes per token",
            slips=(Slip("embedding-counted", EMBEDDING, value=_slip_4_2_d),),
        ),
        Numeric(
            "e",
            "The weights are quantized to 4 bits (half a byte each, scales ignored), the cache stays "
            "BF16. By what factor does the speed bound improve over part (b)?",
            ref_4_2_e,
            unit="x",
            hint="only the weight term shrinks, four-fold; the KV term stays",
        ),
    ),
    discussion="At long context a single request's cache is a sizeable share of the bytes per step, so the "
    "weights-only rule overstates speed by {c:.2f}x and weight quantization alone buys only {e:.2f}x. "
    "Quantizing the cache (FP8 KV) or shrinking it (GQA, MLA; chapter 5) attacks the other term.",
)

# ---------------------------------------------------------------------------
# 4-3  TTFT, TPOT and the end-to-end time
# ---------------------------------------------------------------------------


def _meas():
    return reference.QWEN3_8B_RTX_PRO_6000


def given_4_3(p):
    g = hardware.gpu(_meas().gpu)
    m = models.load(_meas().model)
    return {
        "model": _meas().model,
        "gpu": _meas().gpu,
        "peak_tflops": g.bf16_dense_flops_per_s / units.TERA,
        "bw_tb_s": g.memory_bandwidth_bytes_per_s / units.TB,
        "tpot_meas_ms": _meas().tpot(1) / units.ms,
        "kv_kib": memory.kv_bytes_per_token(m) / units.KiB,
        **_model_text(_meas().model),
    }


def _d43():
    return deployment.Deployment(_meas().model, _meas().gpu)


def ref_4_3_a(p):
    return _d43().prefill(p["prompt_tokens"]).time_s / units.ms


def ref_4_3_b(p):
    return _d43().step(1, p["prompt_tokens"]).time_s / units.ms


def ref_4_3_c(p):
    return decode.end_to_end_latency_s(ref_4_3_a(p) * units.ms, ref_4_3_b(p) * units.ms, p["output_tokens"])


def ref_4_3_d(p):
    return decode.end_to_end_latency_s(ref_4_3_a(p) * units.ms, _meas().tpot(1), p["output_tokens"])


def ref_4_3_e(p):
    ttft_s = ref_4_3_a(p) * units.ms
    return "decode" if ref_4_3_c(p) - ttft_s > ttft_s else "prefill"


EX_4_3 = Exercise(
    id="4-3",
    title="TTFT, TPOT and the end-to-end time",
    level="core",
    intro=(
        "{model} in BF16 runs alone on one {gpu} ({peak_tflops:.1f} dense BF16 TFLOP/s, {bw_tb_s:.3f} TB/s). "
        "A request brings a {prompt_tokens:,}-token prompt and receives {output_tokens:,} tokens. Use the library's "
        'roofline bounds, `aiinfra.deployment.Deployment("{model}", "{gpu}")`: the prefill '
        "(`.prefill(P)`) is limited by its causal FLOPs (exact counts, the LM head on the last prompt token "
        "only), a decode step (`.step(1, context)`) by the bytes it reads: every one of the {n_params:,} "
        "parameters except the embedding table ({vocab:,} rows of {hidden:,}), of which it reads one row, "
        "plus {kv_kib:.0f} KiB of KV per cached token. Take every decode "
        "step's context at the prompt length. The prefill pass emits the first token."
    ),
    params={
        "prompt_tokens": Param(2048, choices=(1024, 2048, 8192)),
        "output_tokens": Param(256, choices=(64, 256, 1024)),
    },
    given=given_4_3,
    parts=(
        Numeric(
            "a",
            "Lower bound on TTFT (empty queue)?",
            ref_4_3_a,
            unit="ms",
            hint="prefill FLOPs divided by the dense BF16 peak",
        ),
        Numeric(
            "b",
            "Lower bound on TPOT?",
            ref_4_3_b,
            unit="ms",
            hint="(weights read per step + the request's KV) / bandwidth",
        ),
        Numeric(
            "c", "Lower bound on the end-to-end latency?", ref_4_3_c, unit="s", hint="TTFT + (G - 1) TPOT"
        ),
        Numeric(
            "d",
            "The measured TPOT on this card at batch 1 was {tpot_meas_ms:.1f} ms. Using it instead of "
            "part (b), what end-to-end latency does the user see?",
            ref_4_3_d,
            unit="s",
            hint="keep the TTFT of part (a), replace the TPOT",
        ),
        Choice(
            "e",
            "In the bound of part (c), which phase takes longer?",
            ref_4_3_e,
            options=("prefill", "decode"),
            hint="compare TTFT with (G - 1) TPOT",
        ),
    ),
    discussion="Prefill handles the prompt in one compute-bound pass; decode pays one memory-bound step per "
    "token. Long prompts with short answers are dominated by TTFT, chat answers by TPOT.",
)

# ---------------------------------------------------------------------------
# 4-4  Find the flaw: aggregate speed read as per-user speed
# ---------------------------------------------------------------------------

MODEL_4_4 = "Qwen3-8B"
GPU_4_4 = "H100 SXM"
CTX_4_4 = 4096


def _step_4_4(batch):
    return deployment.Deployment(MODEL_4_4, GPU_4_4).step(batch, CTX_4_4).time_s


def given_4_4(p):
    return {
        "model": MODEL_4_4,
        "gpu": GPU_4_4,
        "ctx": CTX_4_4,
        "claimed": decode.tokens_per_s_aggregate(p["batch"], _step_4_4(p["batch"])),
    }


def ref_4_4_a(p):
    return p["reply_tokens"] / p["claimed"]


def ref_4_4_b(p):
    return decode.tokens_per_s_per_user(_step_4_4(p["batch"]))


def ref_4_4_c(p):
    return decode.end_to_end_latency_s(
        0.0, _step_4_4(p["batch"]), p["reply_tokens"], first_token_from_prefill=False
    )


def ref_4_4_d(p):
    return ref_4_4_c(p) / ref_4_4_a(p)


EX_4_4 = Exercise(
    id="4-4",
    title="What is wrong with this estimate? Aggregate speed read as per-user speed",
    level="core",
    intro=(
        'A benchmark reports that {model} on one {gpu} "runs at {claimed:,.0f} tokens/s". It was measured with '
        "{batch} concurrent requests of {ctx:,} tokens of context each (the number above is the roofline bound of "
        "that setup). An engineer concludes: \"so one user's {reply_tokens:,}-token answer takes "
        '{reply_tokens:,} / {claimed:,.0f} seconds".'
    ),
    params={
        "batch": Param(16, choices=(8, 16, 32)),
        "reply_tokens": Param(1000, choices=(500, 1000)),
    },
    given=given_4_4,
    parts=(
        Numeric(
            "a",
            "What answer time does the engineer's estimate give?",
            ref_4_4_a,
            unit="s",
            hint="reply tokens divided by the reported rate",
        ),
        Numeric(
            "b",
            "In that benchmark setup, how many tokens per second does each user actually receive?",
            ref_4_4_b,
            unit="tok/s",
            hint="one token per request per step: 1 / step time",
        ),
        Numeric(
            "c",
            "How long do the {reply_tokens:,} decode steps of the answer really take at that batch?",
            ref_4_4_c,
            unit="s",
            hint="reply tokens times the step time of the batched step",
        ),
        Numeric(
            "d",
            "By what factor was the engineer's estimate too optimistic?",
            ref_4_4_d,
            unit="x",
            hint="divide part (c) by part (a)",
        ),
        Free(
            "e",
            "State the flaw in one sentence, and say which metric each party should have quoted.",
            sample=(
                "The reported {claimed:,.0f} tok/s is aggregate throughput, shared by {batch} streams; each user "
                "gets 1/TPOT = {b:.0f} tok/s, so the answer takes {c:.1f} s, not {a:.2f} s. A benchmark should "
                "state per-user speed (or TPOT) and aggregate throughput separately, with the batch and context."
            ),
        ),
    ),
    discussion="The error factor is exactly the batch size: the aggregate rate is B / T_step and the per-user rate "
    "1 / T_step, whatever the step time.",
)

# ---------------------------------------------------------------------------
# 4-5  Design: the cheaper GPU for a TPOT target
# ---------------------------------------------------------------------------

MODEL_4_5 = "Llama-3.1-8B"
OFFERS_4_5 = ("H100 SXM", "H200 SXM")


@functools.cache
def _plan_4_5(gpu, users, tpot_ms, context, calibrated):
    """One-GPU replicas for the users at the target: the calibrated prediction, or the roofline bound."""
    d = deployment.Deployment(MODEL_4_5, gpu)
    make = predict.plan if calibrated else predict.bound_plan
    return make(d, users, tpot_ms * units.ms, context, replica_sizes=(1,))


def _usd_per_million_4_5(p, gpu, usd_per_gpu_hour):
    plan = _plan_4_5(gpu, p["users"], p["tpot_ms"], p["context"], True)
    tok_s = decode.tokens_per_s_aggregate(plan.users_per_replica, plan.step_time_s) * plan.replicas
    return capacity.cost_per_million_tokens(usd_per_gpu_hour, tok_s / plan.gpus_total)


def given_4_5(p):
    h100, h200 = (hardware.gpu(g) for g in OFFERS_4_5)
    return {
        "model": MODEL_4_5,
        "gpu_a": h100.name,
        "gpu_b": h200.name,
        "mem_a": h100.memory_bytes / units.GB,
        "mem_b": h200.memory_bytes / units.GB,
        "bw_a": h100.memory_bandwidth_bytes_per_s / units.TB,
        "bw_b": h200.memory_bandwidth_bytes_per_s / units.TB,
    }


def ref_4_5_a(p):
    return float(_plan_4_5(p["gpu_a"], p["users"], p["tpot_ms"], p["context"], False).gpus_total)


def ref_4_5_b(p):
    return float(_plan_4_5(p["gpu_a"], p["users"], p["tpot_ms"], p["context"], True).gpus_total)


def ref_4_5_c(p):
    return float(_plan_4_5(p["gpu_b"], p["users"], p["tpot_ms"], p["context"], True).gpus_total)


def ref_4_5_d(p):
    return _usd_per_million_4_5(p, p["gpu_a"], p["usd_a"])


def ref_4_5_e(p):
    cheaper_b = _usd_per_million_4_5(p, p["gpu_b"], p["usd_b"]) < ref_4_5_d(p)
    return p["gpu_b"] if cheaper_b else p["gpu_a"]


EX_4_5 = Exercise(
    id="4-5",
    title="Design: the cheaper GPU for a TPOT target",
    level="core",
    intro=(
        "A chat service must hold {users:,} concurrent users of {model} (BF16), each with {context:,} tokens of "
        "context, at a TPOT of at most {tpot_ms} ms. Two clouds offer GPUs: the {gpu_a} ({mem_a:.0f} GB, "
        "{bw_a:.2f} TB/s) at \\${usd_a:.2f} per GPU-hour and the {gpu_b} ({mem_b:.0f} GB, {bw_b:.2f} TB/s) at "
        "\\${usd_b:.2f} (assumed rental prices). Every replica is one GPU. Size the fleet with the library's "
        "capacity plan for one-GPU replicas: `aiinfra.predict.bound_plan` gives the roofline bound (every "
        "efficiency 1, no fixed cost, no memory reserve) and `aiinfra.predict.plan` the calibrated prediction "
        "(fitted efficiencies, a fixed cost per layer, 90 % of memory); both check memory first, then the "
        "TPOT, and leave prefill out. Decide with the prediction: a bound promises a TPOT no real engine "
        "reaches."
    ),
    params={
        "users": Param(2000),
        "context": Param(4096, choices=(4096, 8192)),
        "tpot_ms": Param(25, choices=(25, 50)),
        "usd_a": Param(2.0),
        "usd_b": Param(2.9, choices=(2.9, 3.6)),
    },
    given=given_4_5,
    parts=(
        Numeric(
            "a",
            "By the roofline bound, how many {gpu_a} GPUs does the service need?",
            ref_4_5_a,
            unit="GPUs",
            rel_tol=0.0,
            abs_tol=0.5,
            hint="users per GPU: the fewest of the memory, bandwidth and compute ceilings; GPUs = ceil(users / that)",
        ),
        Numeric(
            "b",
            "By the calibrated prediction, how many {gpu_a} GPUs?",
            ref_4_5_b,
            unit="GPUs",
            rel_tol=0.0,
            abs_tol=1.0,
            hint="the same plan with the fitted efficiencies, the fixed cost per layer and 90 % of memory",
        ),
        Numeric(
            "c",
            "By the calibrated prediction, how many {gpu_b} GPUs?",
            ref_4_5_c,
            unit="GPUs",
            rel_tol=0.0,
            abs_tol=1.0,
            hint="more memory holds more caches per GPU, more bandwidth reads them faster",
        ),
        Numeric(
            "d",
            "What does a million output tokens cost on the predicted {gpu_a} fleet?",
            ref_4_5_d,
            unit="$",
            rel_tol=0.02,
            hint="fleet tokens per second = replicas x users per replica / predicted step time; then price per "
            "GPU-second over tokens per second per GPU, times a million",
        ),
        Choice(
            "e",
            "Which offer gives the lower cost per million output tokens, by the prediction?",
            ref_4_5_e,
            options=OFFERS_4_5,
            hint="price each fleet the way part (d) prices the first",
        ),
        Free(
            "f",
            "The bound of part (a) is cheaper than the prediction of part (b). Why would a fleet sized by the "
            "bound miss the target? Name two costs that neither plan counts.",
            sample=(
                "The bound needs {a:.0f} GPUs and the prediction {b:.0f}: the bound reads memory at 100 % of its "
                "peak, pays no fixed cost per layer and fills all of memory with caches, so each GPU would carry "
                "more users than it can serve within {tpot_ms} ms and every user would see a slower TPOT than "
                "promised. Neither plan counts the prefills that share the GPUs with decode (each new prompt "
                "stalls the batch), nor the headroom for bursts and queueing, nor failed or draining GPUs."
            ),
            rubric=(
                (
                    1,
                    "Says that the bound assumes peak bandwidth, no fixed cost and all memory, so it packs too "
                    "many users per GPU and the real TPOT exceeds the target; sizing uses the prediction.",
                ),
                (
                    1,
                    "Names two real costs outside both plans, such as prefill interference, bursts and "
                    "queueing headroom, failures or maintenance, or tensor-parallel communication.",
                ),
            ),
        ),
    ),
    discussion=(
        "With the prediction, {gpu_a} needs {b:.0f} GPUs and {gpu_b} {c:.0f}. The dearer GPU can win: its larger "
        "memory holds more caches and its bandwidth reads them faster, so each GPU-hour carries more users. "
        "Price per million tokens, not per GPU-hour, decides."
    ),
)

EXERCISES = (EX_4_1, EX_4_2, EX_4_3, EX_4_4, EX_4_5)
