"""Exercises 5-1 to 5-6: the KV cache and batching, and a precision chosen to fit.

Every reference answer is a short function of the exercise namespace ``p``
(parameters plus ``given``) that calls :mod:`aiinfra`; the reference notebook
shows these functions as the worked solutions.
"""

from __future__ import annotations

from aiinfra import compute, decode, memory, units
from aiinfra.catalog import hardware, models
from aiinfra.course.exercises import Choice, Exercise, Free, Numeric, Param, node_slip
from aiinfra.serving import batching, capacity, paging

MODEL_70B = "Llama-3.1-70B"

# ---------------------------------------------------------------------------
# 5-1  B_max with GQA and with MHA
# ---------------------------------------------------------------------------


def given_5_1(p):
    m = models.load(MODEL_70B)
    g = hardware.gpu(p["gpu"])
    return {
        "model": MODEL_70B,
        "layers": m.n_layers,
        "heads": m.n_heads,
        "kv_heads": m.n_kv_heads,
        "head_dim": m.head_dim,
        "gpu_gb": g.memory_bytes / units.GB,
        "weights_gb": memory.weight_bytes(m, "bf16") / units.GB,
    }


def _free_5_1(p):
    m = models.load(MODEL_70B)
    cap = p["n_gpus"] * hardware.gpu(p["gpu"]).memory_bytes
    return memory.free_bytes(memory.weight_bytes(m, "bf16"), 0.0, 0.0, cap)


def ref_5_1_a(p):
    return memory.kv_bytes_per_token(models.load(MODEL_70B)) / units.KiB


def ref_5_1_b(p):
    return memory.mha_equivalent_kv_bytes_per_token(models.load(MODEL_70B)) / units.KiB


def ref_5_1_c(p):
    return _free_5_1(p) / units.GB


def ref_5_1_d(p):
    s = memory.kv_bytes_per_request(models.load(MODEL_70B), p["context_tokens"])
    return float(decode.max_batch_from_kv_budget(_free_5_1(p), s))


def ref_5_1_e(p):
    s = memory.mha_equivalent_kv_bytes_per_token(models.load(MODEL_70B)) * p["context_tokens"]
    return float(decode.max_batch_from_kv_budget(_free_5_1(p), s))


EX_5_1 = Exercise(
    id="5-1",
    title="The largest batch, with GQA and with MHA",
    level="core",
    intro=(
        "{model} has {layers} layers and {heads} query heads of width {head_dim}, of which {kv_heads} are key/value "
        "heads (grouped-query attention). It runs in BF16 ({weights_gb:.2f} GB of weights) on {n_gpus} x {gpu} "
        "({gpu_gb:.0f} GB each). Every request holds {context_tokens:,} tokens of context. Reserve no workspace."
    ),
    params={
        "gpu": Param("H100 SXM", choices=("H100 SXM", "H200 SXM")),
        "n_gpus": Param(8, choices=(4, 8)),
        "context_tokens": Param(8192, choices=(4096, 8192, 16384)),
    },
    given=given_5_1,
    parts=(
        Numeric(
            "a",
            "How many bytes of KV cache does one token add, in BF16?",
            ref_5_1_a,
            unit="KiB",
            hint="2 x layers x KV heads x head width x 2 bytes",
        ),
        Numeric(
            "b",
            "How many would it add if every query head kept its own keys and values (MHA)?",
            ref_5_1_b,
            unit="KiB",
            hint="replace the KV heads by all query heads",
        ),
        Numeric(
            "c",
            "How much memory is left for caches after the weights?",
            ref_5_1_c,
            unit="GB",
            hint="GPUs x capacity - weights",
        ),
        Numeric(
            "d",
            "How many requests fit with the model's GQA cache?",
            ref_5_1_d,
            unit="requests",
            hint="floor(free memory / (KV per token x context))",
            rel_tol=0.0,
            abs_tol=0.5,
        ),
        Numeric(
            "e",
            "How many would fit with MHA?",
            ref_5_1_e,
            unit="requests",
            hint="the same division with the MHA per-token size",
            rel_tol=0.0,
            abs_tol=0.5,
        ),
    ),
    discussion="The ratio of the two batches is about the group size, {heads} / {kv_heads}: sharing key/value "
    "heads is the single largest lever on how many users a node can hold.",
)

# ---------------------------------------------------------------------------
# 5-2  Find the flaw: "batching multiplies throughput for free"
# ---------------------------------------------------------------------------

GPU_5_2 = "H100 SXM"
NODE_5_2 = 8


def given_5_2(p):
    m = models.load(MODEL_70B)
    g = hardware.gpu(GPU_5_2)
    w = memory.weight_bytes(m, "bf16")
    return {
        "model": MODEL_70B,
        "gpu": GPU_5_2,
        "n_gpus": NODE_5_2,
        "weights_gb": w / units.GB,
        "bw_tb_s": g.memory_bandwidth_bytes_per_s / units.TB,
        "kv_kib": memory.kv_bytes_per_token(m) / units.KiB,
        "single": decode.memory_bound_tokens_per_s(w, g.memory_bandwidth_bytes_per_s),
    }


def _s_5_2(p):
    return memory.kv_bytes_per_request(models.load(MODEL_70B), p["context_tokens"])


def _w_5_2():
    return memory.weight_bytes(models.load(MODEL_70B), "bf16")


def ref_5_2_a(p):
    return decode.naive_batch_tokens_per_s(
        p["batch"], _w_5_2(), hardware.gpu(GPU_5_2).memory_bandwidth_bytes_per_s
    )


def ref_5_2_b(p):
    return p["batch"] * _s_5_2(p) / units.GB


def ref_5_2_c(p):
    bw = hardware.gpu(GPU_5_2).memory_bandwidth_bytes_per_s
    return decode.node_batch_tokens_per_s(p["batch"], _w_5_2(), _s_5_2(p), bw, n_gpus=NODE_5_2)


def ref_5_2_d(p):
    return ref_5_2_c(p) / p["batch"]


def ref_5_2_e(p):
    bw = hardware.gpu(GPU_5_2).memory_bandwidth_bytes_per_s
    one = decode.node_batch_tokens_per_s(1, _w_5_2(), _s_5_2(p), bw, n_gpus=NODE_5_2)
    return ref_5_2_c(p) / one


EX_5_2 = Exercise(
    id="5-2",
    title='What is wrong with this estimate? Batching "for free"',
    level="core",
    intro=(
        'A post about serving {model} on a node of {n_gpus} x {gpu} argues: "One stream runs at '
        "{bw_tb_s:.2f} TB/s / {weights_gb:.1f} GB = {single:.1f} tokens/s. Batching reuses the weight read, so "
        '{batch} requests give {batch} x {single:.1f} tokens/s, and every user still gets {single:.1f}." '
        "Each request holds {context_tokens:,} tokens of context in the model's real GQA cache: {kv_kib:.0f} KiB "
        "per token in BF16 (1 KiB = 1,024 B). Take the weights as read once per step, in full "
        "({weights_gb:.1f} GB), spread evenly over the {n_gpus} GPUs of the node, each with {bw_tb_s:.2f} TB/s; "
        "ignore compute and communication."
    ),
    params={
        "batch": Param(64, choices=(32, 64, 128)),
        "context_tokens": Param(8192, choices=(4096, 8192, 16384)),
    },
    given=given_5_2,
    parts=(
        Numeric(
            "a",
            "What aggregate rate does the post claim?",
            ref_5_2_a,
            unit="tok/s",
            hint="batch x the single-stream rate it quotes",
        ),
        Numeric(
            "b",
            "How many bytes of KV cache does one decode step of the batch read?",
            ref_5_2_b,
            unit="GB",
            hint="every request reads its whole cache every step",
        ),
        Numeric(
            "c",
            "What is the consistent aggregate bound: weights once plus all caches, over the node's "
            "aggregate bandwidth?",
            ref_5_2_c,
            unit="tok/s",
            hint="B x n x bandwidth / (weights + B x cache)",
            slips=(node_slip(NODE_5_2),),
        ),
        Numeric(
            "d",
            "What per-user speed does that bound give?",
            ref_5_2_d,
            unit="tok/s",
            hint="aggregate divided by the batch",
            slips=(node_slip(NODE_5_2),),
        ),
        Numeric(
            "e",
            "By what factor does batching really raise throughput over one request on the same node?",
            ref_5_2_e,
            unit="x",
            hint="the bound of part (c) over the same bound at batch 1",
        ),
        Free(
            "f",
            "List the two errors in the post and say which way each one biases its numbers.",
            sample=(
                "First, it divides by one GPU's bandwidth although the weights are spread over {n_gpus} GPUs that "
                "stream in parallel; that understates both the single-stream and the batched rate. Second, it "
                "ignores the caches: {batch} requests read {b:.0f} GB of KV per step besides the weights, so each "
                "step is longer than a weights-only step and each user gets {d:.0f} tok/s, well below the node's "
                "batch-1 rate. Batching gains {e:.1f}x, not {batch}x, and every user's speed pays for it."
            ),
        ),
    ),
    discussion="Batching shares the weight read, never the cache reads. The correct claim is the consistent bound "
    "of part (c), and it must state the per-user speed beside the aggregate.",
)

# ---------------------------------------------------------------------------
# 5-3  Static vs continuous batching, simulated
# ---------------------------------------------------------------------------


def _trace_5_3(p):
    return batching.synthetic_trace(
        p["n_requests"],
        seed=p["seed"],
        mean_output_tokens=p["mean_output"],
        max_output_tokens=1024,
        mean_interarrival_steps=p["gap"],
    )


def _res_5_3(p):
    return batching.compare_policies(_trace_5_3(p), p["slots"])


def ref_5_3_a(p):
    return _res_5_3(p)["static"].slot_utilization * 100


def ref_5_3_b(p):
    return _res_5_3(p)["continuous"].slot_utilization * 100


def ref_5_3_c(p):
    return _res_5_3(p)["static"].percentile_latency_steps(50)


def ref_5_3_d(p):
    return _res_5_3(p)["continuous"].percentile_latency_steps(50)


def ref_5_3_e(p):
    r = _res_5_3(p)
    return r["static"].busy_steps / r["continuous"].busy_steps


EX_5_3 = Exercise(
    id="5-3",
    title="Static versus continuous batching on one trace",
    level="core",
    intro=(
        "Use `aiinfra.serving.batching`. Build the trace with "
        "`batching.synthetic_trace({n_requests}, seed={seed}, mean_output_tokens={mean_output}, "
        "max_output_tokens=1024, mean_interarrival_steps={gap})` and run it on an engine with {slots} batch slots "
        "under both policies (`batching.compare_policies`)."
    ),
    params={
        "n_requests": Param(200),
        "seed": Param(1, choices=(1, 2, 3, 4)),
        "mean_output": Param(100, choices=(64, 100, 160)),
        "gap": Param(8.0, choices=(4.0, 8.0, 12.0)),
        "slots": Param(16, choices=(8, 16, 32)),
    },
    given=None,
    parts=(
        Numeric(
            "a",
            "Slot utilization of static batching (busy slots over all slots of the busy steps)?",
            ref_5_3_a,
            unit="%",
            hint="ScheduleResult.slot_utilization, as a percentage",
        ),
        Numeric(
            "b",
            "Slot utilization of continuous batching?",
            ref_5_3_b,
            unit="%",
            hint="the same property for the continuous run",
        ),
        Numeric(
            "c",
            "Median end-to-end latency under static batching?",
            ref_5_3_c,
            unit="steps",
            hint="percentile_latency_steps(50)",
        ),
        Numeric(
            "d",
            "Median end-to-end latency under continuous batching?",
            ref_5_3_d,
            unit="steps",
            hint="percentile_latency_steps(50) of the continuous run",
        ),
        Numeric(
            "e",
            "Both runs emit the same tokens. How many times as many busy steps does static batching need?",
            ref_5_3_e,
            unit="x",
            hint="busy_steps of the static run over busy_steps of the continuous run",
        ),
        Free(
            "f",
            "Explain, from the definition of each policy, where static batching loses its slots, and why "
            "the median request gains more from continuous batching than the slowest one does.",
            sample=(
                "Static batching ({a:.0f}% of slots busy) keeps every slot of a batch until its longest member "
                "ends, and makes newcomers wait for the whole batch; continuous batching ({b:.0f}%) refills a slot "
                "at the next step, so the same tokens take {e:.1f}x as many busy steps under static batching. The median request is "
                "short, so under static batching it mostly waits for long ones; its latency falls from {c:.0f} "
                "to {d:.0f} steps. The longest requests are bounded by their own length under both policies."
            ),
        ),
    ),
    discussion="Continuous batching does the same work in fewer busy steps: the gain is slots that static "
    "batching paid for and left idle.",
)

# ---------------------------------------------------------------------------
# 5-4  Contiguous reservation vs pages
# ---------------------------------------------------------------------------

MODEL_5_4 = "Qwen3-8B"


def given_5_4(p):
    kv = memory.kv_bytes_per_token(models.load(MODEL_5_4))
    return {"model": MODEL_5_4, "kv_kib": kv / units.KiB, "kv_bytes": kv}


def _k_5_4():
    return memory.kv_bytes_per_token(models.load(MODEL_5_4))


def ref_5_4_a(p):
    return p["max_context"] * _k_5_4() / units.MB


def ref_5_4_b(p):
    return float(paging.max_batch_contiguous(p["budget_gb"] * units.GB, p["max_context"], _k_5_4()))


def ref_5_4_c(p):
    return float(paging.paged_waste_tokens(p["request_tokens"], p["page_tokens"]))


def ref_5_4_d(p):
    lengths = [p["request_tokens"]] * 10_000
    return float(paging.max_batch_paged(lengths, p["budget_gb"] * units.GB, p["page_tokens"], _k_5_4()))


def ref_5_4_e(p):
    fp = paging.kv_footprint([p["request_tokens"]], p["max_context"], p["page_tokens"], _k_5_4())
    return fp.contiguous_waste_fraction * 100


EX_5_4 = Exercise(
    id="5-4",
    title="Reserving the KV cache: contiguous blocks or pages",
    level="core",
    intro=(
        "A server runs {model} in BF16 ({kv_kib:.0f} KiB, that is {kv_bytes:,.0f} bytes, of KV per token) with "
        "{budget_gb} GB (decimal, $10^9$ B) of memory left for caches. It accepts contexts up to {max_context:,} tokens. Every request in this workload ends "
        "with {request_tokens:,} tokens of context (prompt plus answer)."
    ),
    params={
        "budget_gb": Param(6, choices=(6, 20, 60)),
        "max_context": Param(8192, choices=(4096, 8192, 32768)),
        "request_tokens": Param(1000, choices=(300, 1000, 2500)),
        "page_tokens": Param(16, choices=(16, 32)),
    },
    given=given_5_4,
    parts=(
        Numeric(
            "a",
            "With contiguous max-length reservation, how many bytes does each request reserve? Give "
            "decimal megabytes ($10^6$ B), to compare with the budget in GB.",
            ref_5_4_a,
            unit="MB",
            hint="max context x KV bytes per token",
        ),
        Numeric(
            "b",
            "How many requests fit that way?",
            ref_5_4_b,
            unit="requests",
            hint="floor(budget / reservation)",
            rel_tol=0.0,
            abs_tol=0.5,
        ),
        Numeric(
            "c",
            "With {page_tokens}-token pages, how many token slots does one request leave empty at its end?",
            ref_5_4_c,
            unit="tokens",
            hint="ceil(n / p) x p - n",
            rel_tol=0.0,
            abs_tol=0.5,
        ),
        Numeric(
            "d",
            "How many such requests fit with pages?",
            ref_5_4_d,
            unit="requests",
            hint="budget / (pages per request x page bytes), rounded down",
            rel_tol=0.0,
            abs_tol=0.5,
        ),
        Numeric(
            "e",
            "What share of a contiguous reservation holds no token at the request's end?",
            ref_5_4_e,
            unit="%",
            hint="1 - n / n_max, as a percentage",
        ),
    ),
    discussion="Paging bounds the waste at less than one page per request, so the batch follows the real "
    "lengths instead of the worst case.",
)

# ---------------------------------------------------------------------------
# 5-5  The price of a long context
# ---------------------------------------------------------------------------

GPU_5_5 = "H100 SXM"
NODE_5_5 = 8
RESERVE_5_5 = 0.1  # share of memory kept for runtime buffers


def given_5_5(p):
    m = models.load(MODEL_70B)
    g = hardware.gpu(GPU_5_5)
    return {
        "model": MODEL_70B,
        "gpu": GPU_5_5,
        "n_gpus": NODE_5_5,
        "reserve": RESERVE_5_5,
        "weights_gb": memory.weight_bytes(m, "bf16") / units.GB,
        "read_gb": models.decode_read_params(m) * units.bytes_per_param("bf16") / units.GB,
        "kv_kib": memory.kv_bytes_per_token(m) / units.KiB,
        "gflops": compute.flops_per_token(m) / units.GIGA,
        "gpu_gb": g.memory_bytes / units.GB,
        "tb_s": g.memory_bandwidth_bytes_per_s / units.TB,
        "tflops": g.bf16_dense_flops_per_s / units.TERA,
    }


def _cost_5_5(p, context):
    m = models.load(MODEL_70B)
    g = hardware.gpu(GPU_5_5)
    cap = NODE_5_5 * g.memory_bytes
    free = memory.free_bytes(memory.weight_bytes(m, "bf16"), 0.0, RESERVE_5_5 * cap, cap)
    w_read = models.decode_read_params(m) * units.bytes_per_param("bf16")
    return capacity.cost_vs_context(
        [context],
        w_read,
        memory.kv_bytes_per_token(m),
        free,
        compute.flops_per_token(m),
        g.bf16_dense_flops_per_s,
        g.memory_bandwidth_bytes_per_s,
        p["usd_per_gpu_hour"],
        n_gpus=NODE_5_5,
    )


def ref_5_5_a(p):
    return float(_cost_5_5(p, p["short_context"]).max_batch[0])


def ref_5_5_b(p):
    return float(_cost_5_5(p, p["short_context"]).usd_per_million_tokens[0])


def ref_5_5_c(p):
    return float(_cost_5_5(p, p["long_context"]).max_batch[0])


def ref_5_5_d(p):
    return float(_cost_5_5(p, p["long_context"]).usd_per_million_tokens[0])


def ref_5_5_e(p):
    return ref_5_5_d(p) / ref_5_5_b(p)


EX_5_5 = Exercise(
    id="5-5",
    title="The price of a long context",
    level="extension",
    intro=(
        "{model} in BF16 is served on {n_gpus} x {gpu} ({gpu_gb:.0f} GB, {tb_s:.2f} TB/s and {tflops:.1f} "
        "TFLOP/s dense BF16 each), with {reserve:.0%} of the memory reserved for runtime buffers and the rest, after "
        "the {weights_gb:.2f} GB of weights, for caches. A GPU-hour costs \\${usd_per_gpu_hour:.2f}. All requests "
        "in a deployment hold the same context ({kv_kib:.0f} KiB of KV per token); the batch is the largest that "
        "fits. A decode step reads {read_gb:.2f} GB of weights (not the embedding table) plus every request's "
        "cache, and does {gflops:.1f} GFLOPs per request (attention left out); reads and arithmetic overlap at the "
        "full peaks, with no overheads. `aiinfra.serving.capacity.cost_vs_context` computes this."
    ),
    params={
        "usd_per_gpu_hour": Param(2.5, choices=(2.0, 2.5, 4.0)),
        "short_context": Param(4096, choices=(2048, 4096)),
        "long_context": Param(65536, choices=(32768, 65536, 131072)),
    },
    given=given_5_5,
    parts=(
        Numeric(
            "a",
            "How many {short_context:,}-token requests fit?",
            ref_5_5_a,
            unit="requests",
            hint="free memory / (KV per token x context), rounded down",
            rel_tol=0.0,
            abs_tol=0.5,
        ),
        Numeric(
            "b",
            "What is the floor price per million output tokens at that context?",
            ref_5_5_b,
            unit="$",
            hint="price per GPU-second / tokens per second per GPU, times a million",
        ),
        Numeric(
            "c",
            "How many {long_context:,}-token requests fit?",
            ref_5_5_c,
            unit="requests",
            hint="the same division at the long context",
            rel_tol=0.0,
            abs_tol=0.5,
        ),
        Numeric(
            "d",
            "What is the floor price per million output tokens at the long context?",
            ref_5_5_d,
            unit="$",
            hint="fewer requests share each step, and each step reads about the same bytes",
        ),
        Numeric(
            "e",
            "By what factor is the long-context token more expensive?",
            ref_5_5_e,
            unit="x",
            hint="divide part (d) by part (b)",
        ),
    ),
    discussion="Once caches fill memory, each step reads about the whole memory, so its time is nearly fixed while "
    "the batch shrinks as 1 / context: the price per token grows about in proportion to the context.",
)

# ---------------------------------------------------------------------------
# 5-6  Design: a precision that fits, and what it risks
# ---------------------------------------------------------------------------

#: NVFP4: E2M1 values with one FP8 (E4M3) scale per 16 consecutive weights (NVIDIA's format; its single
#: FP32 scale per tensor is negligible and left out). Pass as ``**NVFP4_16`` to the memory functions.
NVFP4_16 = {"bits": 4, "group_size": 16, "scale_bytes": 1}
#: The options, from least to most accuracy risk (the statement's policy): label, weight format, KV format.
OPTIONS_5_6 = (
    ("BF16 weights, BF16 KV", "BF16", "bf16"),
    ("FP8 weights, BF16 KV", "FP8", "bf16"),
    ("FP8 weights, FP8 KV", "FP8", "fp8"),
    ("NVFP4 weights, FP8 KV", "NVFP4", "fp8"),
)
NONE_FITS_5_6 = "none fits: add a GPU"


def _weights_5_6(fmt):
    m = models.load(MODEL_70B)
    if fmt == "BF16":
        return memory.weight_bytes(m, "bf16")
    scheme = memory.FP8_BLOCK_128 if fmt == "FP8" else NVFP4_16
    return memory.grouped_quant_weight_bytes(m, **scheme)


def _kv_5_6(p, kv_bytes_per_element):
    return p["users"] * memory.kv_bytes_per_request(
        models.load(MODEL_70B), p["context"], kv_bytes_per_element
    )


def _cap_5_6(p):
    return hardware.gpu(p["gpu"]).memory_bytes


def given_5_6(p):
    return {
        "model": MODEL_70B,
        "n_params": models.total_params(models.load(MODEL_70B)),
        "mem_gb": _cap_5_6(p) / units.GB,
        "kv_kib": memory.kv_bytes_per_token(models.load(MODEL_70B)) / units.KiB,
        "ladder": "; ".join(label for label, _, _ in OPTIONS_5_6),
    }


def ref_5_6_a(p):
    return _weights_5_6("FP8") / units.GB


def ref_5_6_b(p):
    return _weights_5_6("NVFP4") / units.GB


def ref_5_6_c(p):
    return _kv_5_6(p, units.PRECISION_BYTES["bf16"]) / units.GB


def ref_5_6_d(p):
    for label, weights, kv in OPTIONS_5_6:
        kv_bytes = _kv_5_6(p, units.PRECISION_BYTES[kv])
        if memory.fits(_weights_5_6(weights), kv_bytes, p["reserve"] * _cap_5_6(p), _cap_5_6(p)):
            return label
    return NONE_FITS_5_6


def ref_5_6_e(p):
    free = memory.free_bytes(_weights_5_6("FP8"), 0.0, p["reserve"] * _cap_5_6(p), _cap_5_6(p))
    one = memory.kv_bytes_per_request(models.load(MODEL_70B), p["context"], units.PRECISION_BYTES["fp8"])
    return float(decode.max_batch_from_kv_budget(max(free, 0.0), one))


EX_5_6 = Exercise(
    id="5-6",
    title="Design: a precision that fits, and what it risks",
    level="core",
    intro=(
        "One {gpu} ({mem_gb:.0f} GB) must serve {model} ({n_params:,} parameters) to {users} concurrent users, "
        "each holding {context:,} tokens of context; {reserve:.0%} of memory stays reserved for activations "
        "and workspace. A token's KV cache takes {kv_kib:.0f} KiB in BF16 and half that in FP8. The formats: "
        "FP8 weights are e4m3 with one 4-byte scale per 128 x 128 block (DeepSeek-V3's layout, "
        "`aiinfra.memory.FP8_BLOCK_128`); NVFP4 weights are 4-bit with one 1-byte scale per 16 consecutive "
        "weights. Only the matrices inside the blocks are quantized; the embedding table, the LM head and "
        "the norms stay BF16 (`aiinfra.memory.grouped_quant_weight_bytes`). Your team ranks the options from "
        "least to most accuracy risk as: {ladder}."
    ),
    params={
        "gpu": Param("B200", choices=("B200", "B300")),
        "users": Param(40, choices=(24, 40, 64)),
        "context": Param(8192, choices=(8192, 16384)),
        "reserve": Param(0.1),
    },
    given=given_5_6,
    parts=(
        Numeric(
            "a",
            "How many bytes do the FP8 weights take, scales included?",
            ref_5_6_a,
            unit="GB",
            hint="quantized matrices at 1 byte a weight plus 4 bytes per 128 x 128 tile; the rest at 2 bytes",
        ),
        Numeric(
            "b",
            "And the NVFP4 weights, scales included?",
            ref_5_6_b,
            unit="GB",
            hint="half a byte a weight plus one byte per 16 weights; the embedding, LM head and norms in BF16",
        ),
        Numeric(
            "c",
            "How large are the users' KV caches together in BF16?",
            ref_5_6_c,
            unit="GB",
            hint="users x context x KV bytes per token",
        ),
        Choice(
            "d",
            "Which option carries the least accuracy risk and still fits (weights + caches + reserve within "
            "the GPU's memory)?",
            ref_5_6_d,
            options=tuple(label for label, _, _ in OPTIONS_5_6) + (NONE_FITS_5_6,),
            hint="walk down the ranking and check capacity at each step: weights + users x KV + reserve",
        ),
        Numeric(
            "e",
            "With FP8 weights and FP8 KV, how many users of this context could the GPU hold at most?",
            ref_5_6_e,
            unit="users",
            rel_tol=0.0,
            abs_tol=0.5,
            hint="(memory - reserve - FP8 weights) / one user's FP8 cache, rounded down",
        ),
        Free(
            "f",
            "Say what your choice of part (d) risks in accuracy, and how you would check it before it serves "
            "users.",
            sample=(
                "The choice is {d}. FP8 weights with fine-grained (block) scales are usually close to BF16 on "
                "standard benchmarks, but a model's own tasks may still shift; an FP8 cache rounds every key "
                "and value and its error adds up over long contexts; 4-bit weights carry the most risk "
                "(outlier channels, long reasoning, code and maths). Before serving, run the task's own "
                "evaluation and a long-context test against the BF16 model, with a pass threshold agreed in "
                "advance; if it fails, spend memory instead (a second GPU, fewer users, a shorter context)."
            ),
            rubric=(
                (
                    1,
                    "Names the accuracy risk of the chosen formats specifically: small but real for block-scaled "
                    "FP8 weights, accumulating with context for an FP8 cache, largest for 4-bit weights (or, "
                    "if nothing fits, what adding a GPU costs instead).",
                ),
                (
                    1,
                    "Gives a check before launch: the workload's own evaluation (and a long-context test) "
                    "against the BF16 reference with a threshold, and a fallback that spends memory instead.",
                ),
            ),
        ),
    ),
    discussion=(
        "Capacity comes first: at {c:.1f} GB of BF16 caches, the weights' format is the lever with the largest "
        "effect ({a:.1f} GB in FP8, {b:.1f} GB in NVFP4), and the cache's format halves the other tenant. Take "
        "the least risky option that fits, and treat each step down the ranking as a change to test."
    ),
)

EXERCISES = (EX_5_1, EX_5_2, EX_5_3, EX_5_4, EX_5_5, EX_5_6)
