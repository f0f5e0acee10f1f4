"""Exercises 1-1 to 1-4: a first encounter with AI infrastructure.

Every reference answer below is a small function of the exercise namespace
``p`` (parameters plus ``given``) that calls :mod:`aiinfra`. The reference
notebook ``solutions/ch01.ipynb`` shows these functions' source as the worked
solution, so keep them short and readable.
"""

from __future__ import annotations

from aiinfra import decode, deployment, memory, roofline, units
from aiinfra.catalog import hardware, models
from aiinfra.cluster import network
from aiinfra.course.exercises import Choice, Exercise, Free, Numeric, Param, Slip

# ---------------------------------------------------------------------------
# 1-1  What is loaded once, what is read every step, what grows
# ---------------------------------------------------------------------------


def given_1_1(p):
    m = models.load(p["model"])
    return {
        "n_params": models.total_params(m),
        "layers": m.n_layers,
        "hidden": m.hidden_size,
        "vocab": m.vocab_size,
        "kv_heads": m.n_kv_heads,
        "head_dim": m.head_dim,
        "head": "shares the embedding table"
        if m.tie_word_embeddings
        else "is a matrix of its own, the same size as the embedding table",
    }


def _all_weights_per_step(p):
    """What a step would read if the embedding table were streamed in full (the slip of parts b and e)."""
    return memory.weight_bytes(models.load(p["model"]), "bf16")


EMBEDDING_SLIP = (
    "the embedding table counted in full? A decode step reads only the one row its token looks up."
)


def ref_1_1_a(p):
    m = models.load(p["model"])
    return memory.weight_bytes(m, "bf16") / units.GB


def ref_1_1_b(p):
    m = models.load(p["model"])
    return models.decode_read_params(m) * units.bytes_per_param("bf16") / units.GB


def ref_1_1_c(p):
    m = models.load(p["model"])
    return memory.kv_bytes_per_token(m) / units.KiB


def ref_1_1_d(p):
    m = models.load(p["model"])
    return memory.kv_bytes_per_request(m, p["prompt_tokens"] + p["long_tokens"]) / units.GB


def ref_1_1_e(p):
    m = models.load(p["model"])
    per_step = models.decode_read_params(m) * units.bytes_per_param("bf16")
    return p["long_tokens"] * per_step / units.TB


def _slip_1_1_b(p):
    return _all_weights_per_step(p) / units.GB


def _slip_1_1_e(p):
    return p["long_tokens"] * _all_weights_per_step(p) / units.TB


def ref_1_1_f(p):
    m = models.load(p["model"])
    return 2 * memory.weight_bytes(m, "bf16") / units.GB


EX_1_1 = Exercise(
    id="1-1",
    title="One request: loaded once, read every step, growing",
    level="extension",
    intro=(
        "A single inference instance serves {model} with BF16 weights and a BF16 KV cache on one GPU. "
        "The model has {n_params:,} parameters in {layers} layers of width {hidden:,}; its embedding "
        "table holds {vocab:,} rows of {hidden:,}, its LM head {head}, and each layer keeps "
        "{kv_heads} key/value heads of {head_dim} elements. A request arrives with a "
        "{prompt_tokens:,}-token prompt. Treat each generated token as one decode step that streams the "
        "weights the token touches from GPU memory, and follow the bytes as the answer grows from "
        "{short_tokens:,} to {long_tokens:,} tokens. Sizes are decimal (1 GB = $10^9$ B, 1 TB = $10^{{12}}$ B; "
        "1 KiB = 1,024 B)."
    ),
    params={
        "model": Param("Qwen3-8B", choices=("Qwen3-8B", "Llama-3.1-8B")),
        "prompt_tokens": Param(2000, choices=(1000, 2000, 4000)),
        "short_tokens": Param(100),
        "long_tokens": Param(1000, choices=(500, 1000, 2000)),
    },
    given=given_1_1,
    parts=(
        Numeric(
            "a",
            "How many bytes of weights does the instance load from storage into GPU memory once, "
            "when it starts?",
            ref_1_1_a,
            unit="GB",
            hint="every stored parameter, at 2 bytes each in BF16",
        ),
        Numeric(
            "b",
            "How many weight bytes does one decode step read from GPU memory? The embedding table "
            "is not streamed: a step looks up one row of it (`aiinfra.catalog.models.decode_read_params` "
            "counts the parameters read).",
            ref_1_1_b,
            unit="GB",
            hint="all parameters minus the embedding table plus one row of it, 2 bytes each",
            slips=(Slip("embedding-counted", EMBEDDING_SLIP, value=_slip_1_1_b),),
        ),
        Numeric(
            "c",
            "How many bytes of KV cache does each new token append, summed over all layers?",
            ref_1_1_c,
            unit="KiB",
            hint="K and V, for every layer and every KV head, head_dim elements each",
        ),
        Numeric(
            "d",
            "How large is the request's KV cache once the {long_tokens:,}-token answer is complete "
            "(prompt plus answer)?",
            ref_1_1_d,
            unit="GB",
            hint="KV bytes per token times the tokens held: prompt plus generated",
        ),
        Numeric(
            "e",
            "How many bytes of weights stream out of GPU memory over the whole {long_tokens:,}-token "
            "answer, one step per token at batch 1?",
            ref_1_1_e,
            unit="TB",
            hint="the per-step weight read of part (b), once per generated token",
            slips=(Slip("embedding-counted", EMBEDDING_SLIP, value=_slip_1_1_e),),
        ),
        Numeric(
            "f",
            "The operator replicates the instance so that two GPUs each hold a full copy. How many "
            "bytes of weights are resident across both replicas?",
            ref_1_1_f,
            unit="GB",
            hint="each replica holds its own copy of every weight",
        ),
        Free(
            "g",
            "Sort the data movements of this request into those that happen once and those that "
            "grow with the answer length: model file loading, per-step weight reads, KV appends, "
            "and (if the model were split over two cards) the per-step hand-off of activations. "
            "Then say what replication changes for capacity and for the router, and what it does not "
            "change for a single request's speed.",
            sample=(
                "Loading the {a:.2f} GB of weights happens once per instance. The per-step weight read "
                "({b:.2f} GB) repeats for every generated token, so the total traffic grows linearly with "
                "the answer ({e:.2f} TB for {long_tokens:,} tokens). The KV cache grows by {c:.0f} KiB per "
                "token and the attention of every step reads all of it, so both the resident state and the "
                "per-step reads grow. A split over two cards would add one activation hand-off per layer "
                "boundary per step, also growing with the answer. Replication doubles the resident weights "
                "({f:.1f} GB) and the request capacity; the router must now pick a replica per request and "
                "keep a conversation on the replica that holds its KV cache. One request's step time is "
                "unchanged, because it still runs on one replica."
            ),
        ),
    ),
    discussion=(
        "The weights are the same bytes read again and again; the KV cache is new bytes for every token. "
        "That difference is why batching helps with the first and not with the second."
    ),
)

# ---------------------------------------------------------------------------
# 1-2  Capacity, precision and cards of different sizes
# ---------------------------------------------------------------------------

MODEL_70B = "DeepSeek-R1-Distill-Llama-70B"


def given_1_2(p):
    h100 = hardware.gpu("H100 SXM")
    a6000 = hardware.gpu("RTX A6000")
    m = models.load(MODEL_70B)
    counts = models.param_breakdown(m)
    return {
        "model": MODEL_70B,
        "n_params": counts["total"],
        "n_block_linear": counts["block_linear"],
        "n_other": counts["total"] - counts["block_linear"],
        "h100_gb": h100.memory_bytes / units.GB,
        "a6000_gb": a6000.memory_bytes / units.GB,
        "nvlink_both_gb_s": network.bidirectional_from_per_direction(h100.scaleup_bytes_per_s_per_direction)
        / units.GB,
    }


def _bf16_bytes():
    return memory.weight_bytes(models.load(MODEL_70B), "bf16")


def _int8_bytes():
    return memory.grouped_quant_weight_bytes(models.load(MODEL_70B), bits=8, group_size=128, scale_bytes=2)


def ref_1_2_a(p):
    return _bf16_bytes() / units.GB


def ref_1_2_b(p):
    return _bf16_bytes() / units.GiB


def ref_1_2_c(p):
    h100 = hardware.gpu("H100 SXM")
    return memory.fits(_bf16_bytes(), p["reserve_gb"] * units.GB, 0, h100.memory_bytes)


def ref_1_2_d(p):
    h100 = hardware.gpu("H100 SXM")
    half = memory.split_even(_bf16_bytes(), 2)
    return memory.free_bytes(half, p["reserve_gb"] * units.GB, 0, h100.memory_bytes) / units.GB


def ref_1_2_e(p):
    h100 = hardware.gpu("H100 SXM")
    return memory.free_bytes(_int8_bytes(), p["reserve_gb"] * units.GB, 0, h100.memory_bytes) / units.GB


def _pair_caps():
    return [hardware.gpu("RTX A6000").memory_bytes, hardware.gpu("H100 SXM").memory_bytes]


def ref_1_2_f(p):
    split = memory.split_by_capacity(_bf16_bytes(), _pair_caps(), p["reserve_gb"] * units.GB)
    return split.all_fit


def ref_1_2_g(p):
    split = memory.split_by_capacity(_int8_bytes(), _pair_caps(), p["reserve_gb"] * units.GB)
    return split.shares_bytes[0] / units.GB


def ref_1_2_h(p):
    return units.bytes_per_s_from_gbit_per_s(p["link_gbit_per_s"]) / units.GB


def ref_1_2_i(p):
    rate = units.bytes_per_s_from_gbit_per_s(p["link_gbit_per_s"])
    return network.transfer_time_s(p["transfer_gb"] * units.GB, rate) / units.ms


def ref_1_2_j(p):
    h100 = hardware.gpu("H100 SXM")
    one_way = h100.scaleup_bytes_per_s_per_direction
    half = memory.split_even(_bf16_bytes(), 2)
    return network.transfer_time_s(half, one_way) / units.ms


EX_1_2 = Exercise(
    id="1-2",
    title="Does a 70B model fit, and on which cards?",
    level="core",
    intro=(
        "{model} has {n_params:,} parameters: {n_block_linear:,} linear weights inside the "
        "transformer blocks and {n_other:,} others (the embedding table, the LM head and the norms). "
        "Keep {reserve_gb} GB (decimal, $10^9$ B) free on every card for KV cache and workspace. The "
        "cards are the H100 SXM ({h100_gb:.0f} GB) and the RTX A6000 ({a6000_gb:.0f} GB). The 8-bit "
        "scheme stores every linear weight inside the blocks as int8 with one 2-byte scale per group "
        "of 128 weights (`aiinfra.memory.grouped_quant_weight_bytes`), and keeps the other parameters "
        "in BF16."
    ),
    params={
        "reserve_gb": Param(5, choices=(3, 4, 5, 6)),
        "link_gbit_per_s": Param(400, choices=(100, 200, 400, 800)),
        "transfer_gb": Param(1, choices=(1, 2, 4)),
    },
    given=given_1_2,
    parts=(
        Numeric(
            "a",
            "Size of the BF16 weights in decimal gigabytes.",
            ref_1_2_a,
            unit="GB",
            rel_tol=0.002,
            hint="parameters times 2 bytes, divided by 1e9",
        ),
        Numeric(
            "b",
            "The same weights in binary gibibytes.",
            ref_1_2_b,
            unit="GiB",
            rel_tol=0.002,
            hint="1 GiB is 2**30 bytes",
        ),
        Choice(
            "c",
            "Do the BF16 weights fit on one H100 SXM once the reserve is set aside?",
            ref_1_2_c,
            options=(True, False),
            hint="compare weights plus reserve with the card's capacity",
        ),
        Numeric(
            "d",
            "Split the BF16 weights evenly over two H100 SXM cards. How much memory is left on each "
            "card after its half of the weights and the reserve?",
            ref_1_2_d,
            unit="GB",
            hint="capacity minus half the weights minus the reserve; all in decimal GB",
        ),
        Numeric(
            "e",
            "How much memory is left on one H100 SXM holding the 8-bit weights and the reserve?",
            ref_1_2_e,
            unit="GB",
            hint="first size the 8-bit weights, scales included, then subtract",
        ),
        Choice(
            "f",
            "Can one RTX A6000 plus one H100 SXM hold the BF16 weights, each card keeping its reserve?",
            ref_1_2_f,
            options=(True, False),
            hint="add up what the two cards can hold after their reserves",
        ),
        Numeric(
            "g",
            "Put the 8-bit weights on the RTX A6000 plus H100 SXM pair, in proportion to what each "
            "card can hold after its reserve (both cards end up equally full). How many gigabytes go "
            "on the RTX A6000?",
            ref_1_2_g,
            unit="GB",
            hint="the A6000's share is its usable capacity over the pair's usable capacity",
        ),
        Numeric(
            "h",
            "A network card runs at {link_gbit_per_s} Gbit/s. What is that in gigabytes per second?",
            ref_1_2_h,
            unit="GB/s",
            hint="a byte is 8 bits",
            slips=("bits-vs-bytes",),
        ),
        Numeric(
            "i",
            "At that line rate, ignoring latency and protocol overhead, how long does moving "
            "{transfer_gb} GB take?",
            ref_1_2_i,
            unit="ms",
            hint="size over rate; mind bits and bytes",
            slips=("bits-vs-bytes",),
        ),
        Numeric(
            "j",
            "NVLink on an H100 SXM is quoted as {nvlink_both_gb_s:.0f} GB/s per GPU, counting both "
            "directions. How long does one card take to send its half of the BF16 weights to the other "
            "card, at the ideal one-way rate?",
            ref_1_2_j,
            unit="ms",
            hint="a transfer from one card to another uses one direction of the links",
            slips=("per-direction-vs-both",),
        ),
    ),
    discussion=(
        "One H100 SXM cannot hold the BF16 model, two can, and the 8-bit model fits on one with "
        "{e:.2f} GB to spare. Capacities must be compared in one unit: {a:.2f} GB and {b:.2f} GiB are "
        "the same bytes. A line rate in Gbit/s is 8 times the same number in GB/s, and a link quoted "
        "for both directions moves data one way at half that figure."
    ),
)

# ---------------------------------------------------------------------------
# 1-3  Batch size against the per-step deadline
# ---------------------------------------------------------------------------


def given_1_3(p):
    h100 = hardware.gpu("H100 SXM")
    return {
        "peak_tflops": h100.bf16_dense_flops_per_s / units.TERA,
        "hbm_tb_s": h100.memory_bandwidth_bytes_per_s / units.TB,
        "weight_gb": p["n_params"] * p["bytes_per_weight"] / units.GB,
    }


def _step_times_s(p, weight_fraction=1.0):
    h100 = hardware.gpu("H100 SXM")
    weight_bytes = p["n_params"] * p["bytes_per_weight"] * weight_fraction
    flops_per_request = 2 * p["n_params"]
    return [
        decode.batched_decode_step_time_s(
            b,
            flops_per_request,
            weight_bytes,
            0.0,
            h100.bf16_dense_flops_per_s,
            h100.memory_bandwidth_bytes_per_s,
            eta_f=p["eta_f"],
            eta_b=p["eta_b"],
        )
        for b in p["batches"]
    ]


def ref_1_3_a(p):
    return [t / units.ms for t in _step_times_s(p)]


def ref_1_3_b(p):
    return [t / b / units.ms for t, b in zip(_step_times_s(p), p["batches"])]


def ref_1_3_c(p):
    return [decode.tokens_per_s_aggregate(b, t) for t, b in zip(_step_times_s(p), p["batches"])]


def ref_1_3_d(p):
    return sum(1 for t in _step_times_s(p) if t <= p["target_ms"] * units.ms)


def ref_1_3_e(p):
    return [t / units.ms for t in _step_times_s(p, weight_fraction=0.5)]


def ref_1_3_f(p):
    h100 = hardware.gpu("H100 SXM")
    return decode.critical_batch_size(
        p["bytes_per_weight"],
        h100.bf16_dense_flops_per_s,
        h100.memory_bandwidth_bytes_per_s,
        eta_f=p["eta_f"],
        eta_b=p["eta_b"],
    )


def ref_1_3_g(p):
    h100 = hardware.gpu("H100 SXM")
    return decode.critical_batch_size(
        p["bytes_per_weight"] / 2,
        h100.bf16_dense_flops_per_s,
        h100.memory_bandwidth_bytes_per_s,
        eta_f=p["eta_f"],
        eta_b=p["eta_b"],
    )


EX_1_3 = Exercise(
    id="1-3",
    title="Find the flaw: batch size against a per-step deadline",
    level="core",
    intro=(
        "Round a 70B dense model to $N$ = {n_params:,.0f} parameters stored at {bytes_per_weight:g} byte each "
        "({weight_gb:.0f} GB; ignore the quantization scales), run on one H100 SXM ({peak_tflops:.1f} "
        "TFLOP/s dense BF16, {hbm_tb_s:.2f} TB/s HBM). The 8-bit weights are converted to BF16 as they "
        "arrive, so the arithmetic runs at the dense BF16 peak. Assume the kernels reach {eta_b:.0%} of the "
        "peak bandwidth and {eta_f:.0%} of the peak compute, that one decode step does $2N$ FLOPs per request "
        "and reads the weights once for the whole batch, and that reads and arithmetic overlap (ignore the KV "
        "cache). The batch sizes are $B$ = {batches}. The latency target is {target_ms} ms per step for every "
        "request. A colleague divides each step time by the batch size and concludes that the larger batches "
        "meet the target. Give list answers in the order of the batch sizes."
    ),
    params={
        "n_params": Param(70e9),
        "bytes_per_weight": Param(1.0),
        "eta_b": Param(0.7, choices=(0.6, 0.65, 0.7, 0.75, 0.8)),
        "eta_f": Param(0.5, choices=(0.4, 0.5, 0.6)),
        "batches": Param((1, 16, 64), choices=((1, 16, 64), (1, 8, 32), (2, 16, 128))),
        "target_ms": Param(10, choices=(10, 20, 40)),
    },
    given=given_1_3,
    parts=(
        Numeric(
            "a",
            "The lower bound on the time of one batched step, for each batch size.",
            ref_1_3_a,
            unit="ms",
            hint="the larger of compute time and weight-read time, at the reduced rates",
        ),
        Numeric(
            "b",
            "The step time shared out per generated token, for each batch size.",
            ref_1_3_b,
            unit="ms",
            hint="a step yields one token per request",
        ),
        Numeric(
            "c",
            "The ideal throughput of the whole batch, for each batch size.",
            ref_1_3_c,
            unit="tokens/s",
            hint="tokens per step over the step time",
        ),
        Numeric(
            "d",
            "On the lower bound alone, how many of the batch sizes meet the {target_ms} ms per-step target?",
            ref_1_3_d,
            unit="batch sizes",
            rel_tol=0.0,
            abs_tol=0.5,
            hint="every request waits for the whole step, not for its share of it",
        ),
        Numeric(
            "e",
            "Halve the bytes read for the weights, keeping the FLOPs as they are. The step time "
            "for each batch size again.",
            ref_1_3_e,
            unit="ms",
            hint="only the read term halves; check whether compute now dominates",
        ),
        Numeric(
            "f",
            "With the full weights, at which batch size $B_*$ does the compute time equal the "
            "weight-read time (at the reduced rates)?",
            ref_1_3_f,
            unit="requests",
            hint="set 2BN/(eta_F Pi) equal to b_W N/(eta_B beta) and solve for B",
        ),
        Numeric(
            "g",
            "The same crossing batch size with the halved weights.",
            ref_1_3_g,
            unit="requests",
            hint="B* is proportional to the bytes per weight",
        ),
    ),
    discussion=(
        "Below $B_*$ = {f:.0f} the step is set by the weight read, so a larger batch shares the same "
        "read among more tokens: the time per token falls from {b[0]:.2f} ms toward {b[2]:.2f} ms. "
        "That is a throughput gain, and the colleague's flaw is to read it as latency: every request in "
        "the batch still waits for the whole step ({a[2]:.1f} ms at the largest batch), so the per-request "
        "latency never drops below one weight read, however large the batch."
    ),
)

# ---------------------------------------------------------------------------
# 1-4  Checking the batching model against two measured points
# ---------------------------------------------------------------------------

GPU_1_4 = "RTX PRO 6000 Blackwell Workstation"


def given_1_4(p):
    gpu = hardware.gpu(GPU_1_4)
    m = models.load(p["model"])
    return {
        "gpu": GPU_1_4,
        "gpu_gb": gpu.memory_bytes / units.GB,
        "gpu_tb_s": gpu.memory_bandwidth_bytes_per_s / units.TB,
        "gpu_tflops": gpu.bf16_dense_flops_per_s / units.TERA,
        "n_params": models.total_params(m),
        "vocab": m.vocab_size,
        "hidden": m.hidden_size,
        "layers": m.n_layers,
        "kv_heads": m.n_kv_heads,
        "head_dim": m.head_dim,
    }


def ref_1_4_a(p):
    return decode.tokens_per_s_per_user(p["tpot_1_ms"] * units.ms) / decode.tokens_per_s_per_user(
        p["tpot_b_ms"] * units.ms
    )


def _weight_read_s(p):
    m = models.load(p["model"])
    gpu = hardware.gpu(GPU_1_4)
    return roofline.memory_time_s(
        models.decode_read_params(m) * units.bytes_per_param("bf16"), gpu.memory_bandwidth_bytes_per_s
    )


def ref_1_4_b(p):
    t = _weight_read_s(p)
    return decode.tokens_per_s_aggregate(p["batch"], t) / decode.tokens_per_s_aggregate(1, t)


def ref_1_4_c(p):
    return decode.tokens_per_s_aggregate(
        p["batch"], p["tpot_b_ms"] * units.ms
    ) / decode.tokens_per_s_aggregate(1, p["tpot_1_ms"] * units.ms)


def ref_1_4_d(p):
    return deployment.Deployment(p["model"], GPU_1_4).step(1, p["prompt_tokens"]).time_s / units.ms


def ref_1_4_e(p):
    return deployment.Deployment(p["model"], GPU_1_4).step(p["batch"], p["prompt_tokens"]).time_s / units.ms


def ref_1_4_f(p):
    d = deployment.Deployment(p["model"], GPU_1_4)
    return roofline.mbu(
        d.step(1, p["prompt_tokens"]).bytes_moved, d.bandwidth_bytes_per_s, p["tpot_1_ms"] * units.ms
    )


def _slip_1_4_d(p):
    """Part (d) with the embedding table streamed in full."""
    m = models.load(p["model"])
    read = memory.weight_bytes(m, "bf16") + memory.kv_bytes_per_request(m, p["prompt_tokens"])
    return roofline.memory_time_s(read, hardware.gpu(GPU_1_4).memory_bandwidth_bytes_per_s) / units.ms


EX_1_4 = Exercise(
    id="1-4",
    title="Does the batching model survive two measurements?",
    level="core",
    intro=(
        "{model} in BF16 was served by vLLM in eager mode on an {gpu} ({gpu_gb:.0f} GB, "
        "{gpu_tb_s:.3f} TB/s, {gpu_tflops:.1f} TFLOP/s dense BF16), with {prompt_tokens:,}-token prompts "
        "and {output_tokens:,}-token answers. The model has {n_params:,} parameters; a decode step reads "
        "all of them in BF16 except the embedding table ({vocab:,} rows of {hidden:,}), of which it reads one "
        "row, plus the BF16 keys and values of every cached token of each request ({layers} layers, each with "
        "{kv_heads} key/value heads of {head_dim} elements). Two points of the measurement survive: at batch 1 the time "
        "per output token (TPOT) was {tpot_1_ms} ms; at batch {batch} it was {tpot_b_ms} ms, and the "
        "throughput of the whole batch was about {thr_ratio_measured}x that of batch 1. Throughput "
        "counted the prefill time too; TPOT did not."
    ),
    params={
        "model": Param("Qwen3-8B"),
        "prompt_tokens": Param(2048),
        "output_tokens": Param(256),
        "batch": Param(64),
        "tpot_1_ms": Param(26.5),
        "tpot_b_ms": Param(40.5),
        "thr_ratio_measured": Param(31),
    },
    given=given_1_4,
    parts=(
        Numeric(
            "a",
            "By what factor did TPOT grow from batch 1 to batch {batch}?",
            ref_1_4_a,
            unit="x",
            hint="a ratio of two times; larger over smaller",
        ),
        Numeric(
            "b",
            "Suppose the step time were set only by the shared weight read, so that it did not "
            "change with the batch. By what factor would the throughput grow from batch 1 to batch "
            "{batch}?",
            ref_1_4_b,
            unit="x",
            hint="same step time, more tokens per step",
        ),
        Numeric(
            "c",
            "Ignoring prefill, what throughput factor do the two TPOT values alone imply?",
            ref_1_4_c,
            unit="x",
            hint="tokens per step over TPOT, batch against batch 1",
        ),
        Numeric(
            "d",
            "The lower bound on one decode step at batch 1: weights plus the KV of a "
            "{prompt_tokens:,}-token context, read at the peak bandwidth (compute overlapped).",
            ref_1_4_d,
            unit="ms",
            hint="bytes read per step over the memory bandwidth; the embedding table is not streamed",
            slips=(Slip("embedding-counted", EMBEDDING_SLIP, value=_slip_1_4_d),),
        ),
        Numeric(
            "e",
            "The same lower bound at batch {batch}, where every request reads its own KV.",
            ref_1_4_e,
            unit="ms",
            hint="the weights are read once, the KV once per request",
        ),
        Numeric(
            "f",
            "What memory-bandwidth utilisation (MBU) does the batch-1 TPOT correspond to? "
            "Give a fraction between 0 and 1.",
            ref_1_4_f,
            unit="",
            hint="bytes the step must read over (bandwidth times the measured time)",
        ),
        Free(
            "g",
            "Give two explanations of the gap between the weight-only prediction and the measurement "
            "that a measurement could tell apart, and design one that changes only the context "
            "length. Say what you would hold fixed: the model, the answer length, where the clock "
            "starts and stops, and anything else that matters.",
            sample=(
                "The weight-only model predicts {b:.0f}x, the TPOTs imply {c:.1f}x and the measured "
                "throughput is lower still because it includes prefill. Explanation 1: per-request KV "
                "reads (and attention work) grow with the batch; the bound rises from {d:.2f} ms to "
                "{e:.2f} ms. Explanation 2: fixed per-step host overhead (eager launches, logging), which "
                "the MBU of {f:.2f} at batch 1 points to. Sweep the prompt length (e.g. 512, 2048, 8192 "
                "tokens) at batch 1 and at batch {batch}, holding the model, precision, answer length, "
                "engine version and mode, GPU clocks, and the timing points (first to last output event) "
                "fixed. If TPOT grows with the context, and faster at the larger batch, KV reads explain "
                "it; if it stays flat, the overhead does."
            ),
        ),
    ),
    discussion=(
        "Only the two endpoints are measurements; any curve drawn between them is the model's prediction. "
        "The weight-only model is optimistic: each request also reads its own KV cache, and an eager "
        "engine adds host time to every step."
    ),
)

EXERCISES = (EX_1_1, EX_1_2, EX_1_3, EX_1_4)
