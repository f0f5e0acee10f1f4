"""Exercises 8-1 to 8-6: measuring a machine against its limits, and admitting users by them.

Every reference answer is a short function of the exercise namespace ``p``
(parameters plus ``given``) that calls :mod:`aiinfra`; the "measured" times
in the statements are parameters or are derived by the library from the
parameters, never typed results.
"""

from __future__ import annotations

import functools

from aiinfra import decode, deployment, measure, memory, predict, roofline, units
from aiinfra.catalog import hardware, models, reference
from aiinfra.course.exercises import Choice, Exercise, Free, Numeric, Param

# ---------------------------------------------------------------------------
# 8-1  Predict, then measure: the toy decode step on a workstation CPU
# ---------------------------------------------------------------------------


def _ceil_8_1(p):
    return measure.Ceilings(
        p["gemm_gflops"] * units.GIGA,
        p["read_gb_s"] * units.GB,
        "float32",
        "exercise",
        "given in the statement",
    )


def _pred_8_1(p, batch):
    return measure.predict_decode_step_s(p["n_params"], batch, 4, _ceil_8_1(p))


def given_8_1(p):
    rows, cols = measure.toy_decode_shape(p["n_params"])
    return {
        "rows": rows,
        "cols": cols,
        "weight_mb": memory.weight_bytes_formula(p["n_params"], 4) / units.MB,
        "measured_ms": _pred_8_1(p, 1) * p["slowdown"] / units.ms,
    }


def ref_8_1_a(p):
    return _ceil_8_1(p).ridge_flops_per_byte


def ref_8_1_b(p):
    return _pred_8_1(p, 1) / units.ms


def ref_8_1_c(p):
    return measure.predicted_knee_batch(4, _ceil_8_1(p))


def ref_8_1_d(p):
    return _pred_8_1(p, p["big_batch"]) / units.ms


def ref_8_1_e(p):
    rows, cols = measure.toy_decode_shape(p["n_params"])
    return roofline.mbu(
        measure.matmul_min_bytes(rows, cols, 1, 4), p["read_gb_s"] * units.GB, p["measured_ms"] * units.ms
    )


def ref_8_1_f(p):
    rows, cols = measure.toy_decode_shape(p["n_params"])
    b = p["big_batch"]
    return roofline.bound_label(
        measure.matmul_flops(rows, cols, b),
        measure.matmul_min_bytes(rows, cols, b, 4),
        p["gemm_gflops"] * units.GIGA,
        p["read_gb_s"] * units.GB,
    )


EX_8_1 = Exercise(
    id="8-1",
    title="Predict, then measure: a toy decode step",
    level="core",
    intro=(
        "On a workstation, a reduction over a large array reads {read_gb_s} GB/s and a large float32 "
        "matrix product reaches {gemm_gflops} GFLOP/s: take these as the machine's ceilings. The toy decode "
        "step multiplies a float32 weight matrix of {rows:,} x {cols:,} ({n_params:,} weights, "
        "{weight_mb:.1f} MB) by $B$ activation columns; it does $2NB$ FLOPs and moves the weights once "
        "plus the activations in and out. Assume reads and arithmetic overlap."
    ),
    params={
        "read_gb_s": Param(40, choices=(20, 40, 60, 90)),
        "gemm_gflops": Param(800, choices=(300, 800, 1500)),
        "n_params": Param(67_108_864),
        "big_batch": Param(64, choices=(32, 64, 128)),
        "slowdown": Param(1.4, choices=(1.2, 1.4, 1.8)),
    },
    given=given_8_1,
    parts=(
        Numeric(
            "a",
            "What is the ridge point of this machine?",
            ref_8_1_a,
            unit="FLOP/B",
            hint="peak FLOP/s over bandwidth in B/s",
        ),
        Numeric(
            "b",
            "Predict the step time at $B = 1$.",
            ref_8_1_b,
            unit="ms",
            hint="the larger of FLOPs over the GEMM rate and bytes over the bandwidth",
        ),
        Numeric(
            "c",
            "Predict the batch $B_*$ at which the step turns compute-bound (ignore the activations).",
            ref_8_1_c,
            unit="requests",
            hint="set 2NB/Pi equal to 4N/beta",
        ),
        Numeric(
            "d",
            "Predict the step time at $B$ = {big_batch}.",
            ref_8_1_d,
            unit="ms",
            hint="check which side of the knee this batch is on first",
        ),
        Numeric(
            "e",
            "The median of the measured $B = 1$ steps was {measured_ms:.2f} ms. What MBU is that, "
            "against the measured bandwidth? Give a fraction.",
            ref_8_1_e,
            unit="",
            hint="bytes the step must move over (bandwidth times measured time)",
        ),
        Choice(
            "f",
            "At $B$ = {big_batch}, which bound does the prediction say sets the step time?",
            ref_8_1_f,
            options=(roofline.MEMORY_BOUND, roofline.COMPUTE_BOUND),
            hint="compare the batch with the knee of part (c)",
        ),
    ),
    discussion=(
        "The ridge point of {a:.1f} FLOP/B is far below a GPU's few hundred, so this machine turns "
        "compute-bound at a batch of about {c:.1f}: batching pays off for far fewer requests than on an "
        "accelerator. A measured MBU of {e:.2f} says how much of the prediction the implementation "
        "achieved; the next question is whether the missing part is the model or the code."
    ),
)

# ---------------------------------------------------------------------------
# 8-2  A datasheet roof for your own CPU
# ---------------------------------------------------------------------------


def ref_8_2_a(p):
    return roofline.cpu_flops_per_cycle(2, p["simd_bits"], 32)


def ref_8_2_b(p):
    return (
        roofline.cpu_peak_flops_per_s(p["cores"], p["ghz"] * units.GIGA, 2, p["simd_bits"], 32) / units.GIGA
    )


def ref_8_2_c(p):
    width_bits = p["channels"] * memory.DDR_BITS_PER_CHANNEL
    return memory.bus_bandwidth_bytes_per_s(width_bits, p["mts"] * units.MEGA) / units.GB


def ref_8_2_d(p):
    return roofline.ridge_point_flops_per_byte(ref_8_2_b(p) * units.GIGA, ref_8_2_c(p) * units.GB)


def ref_8_2_e(p):
    peak = ref_8_2_b(p) * units.GIGA
    n = p["gemm_n"]
    flops = measure.matmul_flops(n, n, n)
    return roofline.mfu(flops, peak, p["gemm_ms"] * units.ms)


def ref_8_2_f(p):
    return roofline.mbu(p["read_gb"] * units.GB, ref_8_2_c(p) * units.GB, p["read_ms"] * units.ms)


EX_8_2 = Exercise(
    id="8-2",
    title="A datasheet roof for your own CPU",
    level="core",
    intro=(
        "A desktop CPU has {cores} cores at an all-core clock of {ghz} GHz. Each core has two fused "
        "multiply-add (FMA) units, each {simd_bits} bits wide; an FMA counts as 2 FLOPs. Memory is "
        "{channels} channels of DDR5-{mts} (64 bits, 8 bytes, per transfer). On this machine a float32 "
        "matrix product of two {gemm_n:,} x {gemm_n:,} matrices takes {gemm_ms} ms, and summing a "
        "{read_gb} GB array takes {read_ms} ms."
    ),
    params={
        "cores": Param(8, choices=(6, 8, 16)),
        "ghz": Param(3.5, choices=(3.0, 3.5, 4.0)),
        "simd_bits": Param(256, choices=(256, 512)),
        "channels": Param(2, choices=(2, 4)),
        "mts": Param(5600, choices=(4800, 5600)),
        "gemm_n": Param(4096),
        "gemm_ms": Param(450, choices=(300, 450, 600)),
        "read_gb": Param(1),
        "read_ms": Param(18, choices=(18, 25, 40)),
    },
    parts=(
        Numeric(
            "a",
            "How many float32 FLOPs can one core finish per cycle?",
            ref_8_2_a,
            unit="FLOP/cycle",
            hint="2 units x (vector width / 32 bits) lanes x 2 FLOPs per FMA",
        ),
        Numeric(
            "b",
            "What is the CPU's peak float32 rate?",
            ref_8_2_b,
            unit="GFLOP/s",
            hint="cores x clock x FLOPs per cycle",
        ),
        Numeric(
            "c",
            "What is the peak DRAM bandwidth?",
            ref_8_2_c,
            unit="GB/s",
            hint="channels x transfers per second x 8 bytes",
        ),
        Numeric(
            "d",
            "Where is the datasheet ridge point?",
            ref_8_2_d,
            unit="FLOP/B",
            hint="peak FLOP/s over peak B/s",
        ),
        Numeric(
            "e",
            "What MFU does the measured matrix product reach? Give a fraction.",
            ref_8_2_e,
            unit="",
            hint="2 n^3 FLOPs over (peak x measured time)",
        ),
        Numeric(
            "f",
            "What MBU does the measured sum reach? Give a fraction.",
            ref_8_2_f,
            unit="",
            hint="bytes read over (peak bandwidth x measured time)",
        ),
    ),
    discussion=(
        "The datasheet roof ({b:.0f} GFLOP/s, {c:.1f} GB/s) is the physical limit; the measured rates "
        "are what the software reached. A GEMM at MFU {e:.2f} and a sum at MBU {f:.2f} are typical: the "
        "roofline drawn from measured ceilings is lower than the datasheet one, and both are worth drawing."
    ),
)

# ---------------------------------------------------------------------------
# 8-3  A model gap or overhead? (exercise 1-4 with the follow-up measurements)
# ---------------------------------------------------------------------------


def _rec():
    """The measured Qwen3-8B record (aiinfra.catalog.reference), with its conditions and citation."""
    return reference.QWEN3_8B_RTX_PRO_6000


def _bound_s(batch):
    rec = _rec()
    return deployment.Deployment(rec.model, rec.gpu).step(batch, rec.prompt_tokens).time_s


def given_8_3(p):
    rec = _rec()
    gpu = hardware.gpu(rec.gpu)
    return {
        "model": rec.model,
        "gpu": rec.gpu,
        "engine": rec.engine,
        "prompt_tokens": rec.prompt_tokens,
        "output_tokens": rec.output_tokens,
        "gpu_tb_s": gpu.memory_bandwidth_bytes_per_s / units.TB,
        "read_gb": models.decode_read_params(models.load(rec.model))
        * units.bytes_per_param("bf16")
        / units.GB,
        "kv_kib": memory.kv_bytes_per_token(models.load(rec.model)) / units.KiB,
        "tpot_1_ms": rec.tpot(1) / units.ms,
        "tpot_b_ms": rec.tpot(p["batch"]) / units.ms,
        "thr_ratio": rec.throughput_ratio[p["batch"]],
        "t_log_ms": rec.followups_s["tpot_logging_off"] / units.ms,
        "t_gpu_ms": rec.followups_s["gpu_step_time"] / units.ms,
    }


def ref_8_3_a(p):
    rec = _rec()
    return rec.tpot(p["batch"]) / rec.tpot(1)


def ref_8_3_b(p):
    t = _bound_s(1)  # weights-only thinking: the same step time at any batch
    return decode.tokens_per_s_aggregate(p["batch"], t) / decode.tokens_per_s_aggregate(1, t)


def ref_8_3_c(p):
    rec = _rec()
    return decode.throughput_ratio_if_tpot_only(p["batch"], rec.tpot(1), rec.tpot(p["batch"]))


def ref_8_3_d(p):
    return _bound_s(1) / units.ms


def ref_8_3_e(p):
    rec = _rec()
    bw = hardware.gpu(rec.gpu).memory_bandwidth_bytes_per_s
    read = _bound_s(1) * bw  # the bytes one step must read (bound x bandwidth)
    times = (rec.tpot(1), rec.followups_s["tpot_logging_off"], rec.followups_s["gpu_step_time"])
    return [roofline.mbu(read, bw, t) for t in times]


def ref_8_3_f(p):
    rec = _rec()
    t1, t_gpu, bound = rec.tpot(1), rec.followups_s["gpu_step_time"], _bound_s(1)
    return (t1 - t_gpu) / (t1 - bound)


EX_8_3 = Exercise(
    id="8-3",
    title="A model gap, or overhead? Exercise 1-4 with the follow-ups",
    level="core",
    intro=(
        "{model} in BF16 was served by {engine} on an {gpu} ({gpu_tb_s:.3f} TB/s), each request with a "
        "{prompt_tokens:,}-token prompt and {output_tokens:,} output tokens. Measured: TPOT {tpot_1_ms:.1f} ms at "
        "one request and {tpot_b_ms:.1f} ms at {batch}, with the batch's throughput about {thr_ratio:.0f}x "
        "that of one request (throughput includes prefill). Follow-ups at one request: {t_log_ms:.1f} ms "
        "with per-step logging off, and {t_gpu_ms:.1f} ms of GPU time per model step. A step at one request "
        "reads {read_gb:.3f} GB of weights (the embedding table is not streamed) plus {kv_kib:.0f} KiB of KV "
        "per cached token. Parts (g) and (h) are graded by hand."
    ),
    params={"batch": Param(64)},
    given=given_8_3,
    parts=(
        Numeric(
            "a",
            "By what factor did TPOT grow from one request to {batch}?",
            ref_8_3_a,
            unit="x",
            hint="the larger TPOT over the smaller",
        ),
        Numeric(
            "b",
            "If the step time were set by the shared weight read alone, and so did not change with "
            "the batch, by what factor would throughput grow?",
            ref_8_3_b,
            unit="x",
            hint="the same step time, batch-size times the tokens",
        ),
        Numeric(
            "c",
            "What throughput factor do the two TPOTs imply, ignoring prefill?",
            ref_8_3_c,
            unit="x",
            hint="tokens per step over TPOT, compared between the two batches",
        ),
        Numeric(
            "d",
            "The lower bound on one step at one request: weights plus the KV of a "
            "{prompt_tokens:,}-token context, read at peak bandwidth.",
            ref_8_3_d,
            unit="ms",
            hint="bytes a step must read over the bandwidth; the embedding table is not streamed",
        ),
        Numeric(
            "e",
            "The MBU of the three one-request times (TPOT, TPOT with logging off, GPU time), "
            "as a list of fractions.",
            ref_8_3_e,
            unit="",
            hint="the bytes of part (d) over (bandwidth x each time)",
        ),
        Numeric(
            "f",
            "What fraction of the distance between the first TPOT and the bound lies outside "
            "the GPU's own step time?",
            ref_8_3_f,
            unit="",
            hint="(TPOT - GPU time) over (TPOT - bound)",
        ),
        Free(
            "g",
            "Compare the throughput factor that weight-only reasoning predicts (part b) with the factor "
            "the two measured TPOTs imply (part c). Give two explanations of the difference that a "
            "measurement could tell apart.",
            sample=(
                "Weight-only reasoning predicts {b:.0f}x; the TPOTs imply {c:.1f}x and the measured "
                "throughput is lower still because it includes prefill. (1) Each request reads its own "
                "KV cache and does its own attention, so the step grows with the batch: a gap in the "
                "model, which ignored state. (2) Each step pays fixed host costs (eager kernel launches, "
                "per-step logging): overhead in the implementation, visible as an MBU of only "
                "{e[0]:.2f} at one request."
            ),
        ),
        Free(
            "h",
            "Design a measurement that changes only the context length and decides between your two "
            "explanations. List what you hold fixed and what result supports each explanation.",
            sample=(
                "Run batch 1 and batch {batch} at prompt lengths of 512, 2,048 and 8,192 tokens. Hold fixed: "
                "model and precision, output length, engine version and mode, logging setting, GPU and its "
                "clocks, and the timing points (first to last output token, divided by the intervals). "
                "If TPOT grows with the context, and faster at batch {batch} than at batch 1, per-request "
                "state explains the growth. If TPOT stays flat as the context grows, the per-step overhead "
                "does; then switch off logging or capture the launches to confirm."
            ),
        ),
    ),
    discussion=(
        "The order of questions matters: first whether the model is missing a term, then whether the "
        "implementation carries overhead. Here {f:.0%} of the gap lay outside the GPU's work, so the code "
        "around the model, not the hardware, was the first thing to fix."
    ),
)

# ---------------------------------------------------------------------------
# 8-4  One condition at a time
# ---------------------------------------------------------------------------


def _runs():
    """The four runs of exercise 8-4, as the student sees them."""
    return (
        "A: 1 call per step, logging on",
        "B: 1 call per step, logging off",
        "C: 1,024 calls per step, logging off",
        "D: 1,024 calls per step, logging on, larger weights",
    )


def given_8_4(p):
    bound = p["bound_ms"] * units.ms
    per_call_s = p["per_call_us"] * units.us
    return {
        "t_one_ms": measure.step_time_with_calls_s(bound, 1, per_call_s) / units.ms,
        "t_many_ms": measure.step_time_with_calls_s(bound, p["calls"], per_call_s) / units.ms,
        "runs": "; ".join(_runs()),
        "gpu_ms": _rec().followups_s["gpu_step_time"] / units.ms,
        "t_log_ms": _rec().followups_s["tpot_logging_off"] / units.ms,
    }


def ref_8_4_a(p):
    times_s = [p["t_one_ms"] * units.ms, p["t_many_ms"] * units.ms]
    return measure.fit_per_call_s([1, p["calls"]], times_s) / units.us


def ref_8_4_b(p):
    per_call_s = ref_8_4_a(p) * units.us
    return measure.step_time_with_calls_s(p["gpu_ms"] * units.ms, p["launches"], per_call_s) / units.ms


def ref_8_4_c(p):
    return ref_8_4_b(p) - p["gpu_ms"]


def ref_8_4_d(p):
    runs = _runs()
    return runs[0] + " vs " + runs[1]  # they differ in the logging setting only


EX_8_4 = Exercise(
    id="8-4",
    title="Design a measurement that changes one condition at a time",
    level="core",
    intro=(
        "You time the toy decode step on your machine. Issued as one call, its median is {t_one_ms:.3f} ms, "
        "close to the roofline prediction of {bound_ms} ms. Cut into {calls:,} calls over row blocks (the same bytes, the same "
        "FLOPs), it takes {t_many_ms:.2f} ms. Your runs so far: {runs}. Part (e) is graded by hand."
    ),
    params={
        "bound_ms": Param(12.0, choices=(8.0, 12.0, 20.0)),
        "calls": Param(1024, choices=(256, 1024, 4096)),
        "per_call_us": Param(4.0, choices=(2.0, 4.0, 8.0)),
        "launches": Param(600, choices=(400, 600, 900)),
    },
    given=given_8_4,
    parts=(
        Numeric(
            "a",
            "What does one extra call cost, from the two timings?",
            ref_8_4_a,
            unit="µs",
            hint="the extra time over the extra calls, which number one fewer than the calls: the one-call run pays one",
        ),
        Numeric(
            "b",
            "An eager engine issues {launches} kernel launches per decode step and the GPU's own work "
            "takes {gpu_ms:.1f} ms (the Qwen3-8B follow-up). If every launch adds the per-call cost of part (a) and none of it is "
            "hidden, how long is the step?",
            ref_8_4_b,
            unit="ms",
            hint="GPU time plus launches x cost per launch",
        ),
        Numeric(
            "c",
            "How much of that step is launch overhead?",
            ref_8_4_c,
            unit="ms",
            hint="the step of part (b) minus the GPU time",
        ),
        Choice(
            "d",
            "Which pair of your runs isolates the effect of logging, and nothing else?",
            ref_8_4_d,
            options=(
                _runs()[0] + " vs " + _runs()[1],
                _runs()[1] + " vs " + _runs()[2],
                _runs()[0] + " vs " + _runs()[3],
            ),
            hint="the two runs must differ in exactly one condition",
        ),
        Free(
            "e",
            "Design a series of runs that tells a gap in the model (bytes or FLOPs the bound did not "
            "count) apart from per-call overhead. Change one condition per run, say what you hold "
            "fixed, and what result points to which cause.",
            sample=(
                "Series 1 varies only the number of calls k (1, 16, 256, {calls}) at fixed weights, batch, "
                "dtype and logging: the time rises by about {a:.1f} µs per call if overhead matters, and "
                "stays flat otherwise. Series 2 varies only the weight size (e.g. 64, 128, 256 MiB) at one "
                "call: time proportional to the bytes means the bound counted the right bytes, and a "
                "constant offset at zero size is fixed overhead. Series 3 varies only the batch at one "
                "call: growth beyond the prediction is work the model missed. Hold the machine quiet, the "
                "thread count, the timer (median after warm-up) and the data fixed, and interleave the "
                "variants so drift hits them equally."
            ),
        ),
    ),
    discussion=(
        "At {a:.1f} µs per call, {launches} launches add {c:.2f} ms to every step: the same order as the "
        "gap between {gpu_ms:.1f} ms of GPU time and {t_log_ms:.1f} ms of TPOT in the Qwen3-8B follow-up. Capturing the "
        "launches in a graph, or fusing kernels, removes it without touching the hardware."
    ),
)

# ---------------------------------------------------------------------------
# 8-5  Find the flaw in two plausible estimates
# ---------------------------------------------------------------------------


def _timer_flaws():
    """The options of exercise 8-5 (b)."""
    return (
        "the timer stopped before the GPU finished: the launch is asynchronous and nothing waited for it",
        "the GPU really streams that fast; the datasheet is conservative",
        "the weights were counted in GiB instead of GB",
    )


def given_8_5(p):
    m = models.load("Qwen3-8B")
    h = hardware.gpu("H100 SXM")
    return {
        "read_gb": models.decode_read_params(m) * units.bytes_per_param("bf16") / units.GB,
        "h100_tb_s": h.memory_bandwidth_bytes_per_s / units.TB,
        "n_params": models.total_params(m),
    }


def ref_8_5_a(p):
    return measure.achieved_rate_per_s(p["read_gb"] * units.GB, p["timed_ms"] * units.ms) / units.TB


def ref_8_5_b(p):
    implied = measure.achieved_rate_per_s(p["read_gb"] * units.GB, p["timed_ms"] * units.ms)
    flaws = _timer_flaws()
    return flaws[0] if implied > hardware.gpu("H100 SXM").memory_bandwidth_bytes_per_s else flaws[1]


def ref_8_5_c(p):
    return p["laptop_gflops"] * units.GIGA / measure.matmul_flops(1, p["n_params"], 1)


def ref_8_5_d(p):
    m = models.load("Qwen3-8B")
    return decode.memory_bound_tokens_per_s(
        models.decode_read_params(m) * units.bytes_per_param("bf16"), p["laptop_gb_s"] * units.GB
    )


def ref_8_5_e(p):
    return ref_8_5_c(p) / ref_8_5_d(p)


EX_8_5 = Exercise(
    id="8-5",
    title="Find the flaw: two plausible measurements",
    level="extension",
    intro=(
        "Qwen3-8B ({n_params:,} parameters) reads {read_gb:.2f} GB of BF16 weights per decode step. "
        "(1) A colleague wraps one decode step on an H100 SXM ({h100_tb_s:.2f} TB/s) in two "
        "`time.perf_counter()` calls and reports {timed_ms} ms. (2) Another measures {laptop_gflops} GFLOP/s "
        "for a large BF16 matrix product on a laptop with {laptop_gb_s} GB/s of memory bandwidth, and "
        "concludes that Qwen3-8B will decode one stream at (GEMM rate) / (2 x parameters) tokens/s."
    ),
    params={
        "timed_ms": Param(0.08, choices=(0.05, 0.08, 0.12)),
        "laptop_gflops": Param(2000, choices=(1000, 2000, 4000)),
        "laptop_gb_s": Param(100, choices=(60, 100, 120)),
    },
    given=given_8_5,
    parts=(
        Numeric(
            "a",
            "What bandwidth does the colleague's timing imply?",
            ref_8_5_a,
            unit="TB/s",
            hint="bytes read over the timed interval",
        ),
        Choice(
            "b",
            "What is the most likely flaw?",
            ref_8_5_b,
            options=_timer_flaws(),
            hint="compare the implied rate with the datasheet peak",
        ),
        Numeric(
            "c",
            "What decode rate does the second estimate claim?",
            ref_8_5_c,
            unit="tokens/s",
            hint="GEMM rate over 2N FLOPs per token",
        ),
        Numeric(
            "d",
            "What is the real upper bound for one stream on that laptop (weights only)?",
            ref_8_5_d,
            unit="tokens/s",
            hint="bandwidth over the weight bytes read per step",
        ),
        Numeric(
            "e",
            "By what factor is the second estimate too optimistic?",
            ref_8_5_e,
            unit="x",
            hint="part (c) over part (d)",
        ),
    ),
    discussion=(
        "A timing that implies {a:.0f} TB/s on a card that streams {h100_tb_s:.2f} TB/s is a broken "
        "timer, not a fast card: GPU calls return at once, and the clock must wait for the device "
        "(synchronise, or use device events). The second estimate charges decode to the compute roof, "
        "but at one stream each weight byte is used for one multiply-add: bandwidth sets the pace, "
        "{d:.1f} tokens/s, and the compute-based figure is {e:.0f}x too high."
    ),
)

# ---------------------------------------------------------------------------
# 8-6  Design: admission on a GPU that nvidia-smi calls full
# ---------------------------------------------------------------------------

GPU_8_6 = "H100 SXM"
CONTEXT_8_6 = 4096


def _deployment_8_6(p):
    return deployment.Deployment(p["model"], GPU_8_6)


@functools.cache
def _plan_8_6(model, batch, tpot_ms):
    """The calibrated plan of one GPU at the target: its step at ``batch`` users and the most it admits."""
    d = deployment.Deployment(model, GPU_8_6)
    return predict.plan(d, batch, tpot_ms * units.ms, CONTEXT_8_6, replica_sizes=(1,))


def given_8_6(p):
    g = hardware.gpu(GPU_8_6)
    return {
        "gpu": GPU_8_6,
        "context": CONTEXT_8_6,
        "peak_tflops": g.bf16_dense_flops_per_s / units.TERA,
        "bw_tb_s": g.memory_bandwidth_bytes_per_s / units.TB,
        "step_ms": _plan_8_6(p["model"], p["batch"], p["tpot_ms"]).step_time_s / units.ms,
    }


def ref_8_6_a(p):
    d = _deployment_8_6(p)
    step = d.step(p["batch"], p["context"])
    return roofline.mbu(step.bytes_moved, d.bandwidth_bytes_per_s, p["step_ms"] * units.ms)


def ref_8_6_b(p):
    d = _deployment_8_6(p)
    step = d.step(p["batch"], p["context"])
    return roofline.mfu(step.flops, d.peak_flops_per_s, p["step_ms"] * units.ms)


def ref_8_6_c(p):
    return float(_plan_8_6(p["model"], p["batch"], p["tpot_ms"]).max_users_per_replica)


def ref_8_6_d(p):
    return _plan_8_6(p["model"], p["batch"], p["tpot_ms"]).limiting


EX_8_6 = Exercise(
    id="8-6",
    title="Design: admission on a GPU that nvidia-smi calls full",
    level="core",
    intro=(
        "One {gpu} ({peak_tflops:.1f} TFLOP/s dense BF16, {bw_tb_s:.2f} TB/s) serves {model} in BF16 to "
        "{batch} users, each holding {context:,} tokens of context. The profile shows a decode step of "
        "{step_ms:.2f} ms, which is what the calibrated prediction gives (take it as measured), and "
        "`nvidia-smi` reports 100 % GPU utilization. A colleague wants to stop admitting users. The service "
        "promises a TPOT of at most {tpot_ms} ms. A step reads every weight except the embedding table (one "
        "row of it) plus every user's KV cache, and does the batch's FLOPs "
        '(`aiinfra.deployment.Deployment("{model}", "{gpu}").step(batch, context)`).'
    ),
    params={
        "model": Param("Llama-3.1-8B", choices=("Llama-3.1-8B", "Qwen3-8B")),
        "batch": Param(8, choices=(8, 32)),
        "tpot_ms": Param(25, choices=(25, 40)),
    },
    given=given_8_6,
    parts=(
        Numeric(
            "a",
            "What memory-bandwidth utilization (MBU) does the measured step reach?",
            ref_8_6_a,
            unit="",
            hint="bytes the step must read / (peak bandwidth x step time)",
        ),
        Numeric(
            "b",
            "And what model FLOPs utilization (MFU)?",
            ref_8_6_b,
            unit="",
            hint="the batch's FLOPs / (dense BF16 peak x step time)",
        ),
        Numeric(
            "c",
            "By the calibrated capacity plan for one GPU (`aiinfra.predict.plan` with `replica_sizes=(1,)`), "
            "how many users could it hold within the TPOT target?",
            ref_8_6_c,
            unit="users",
            rel_tol=0.0,
            abs_tol=1.0,
            hint="memory, bandwidth and compute ceilings, then the fixed cost per layer against the target",
        ),
        Choice(
            "d",
            "What would stop admission at that point?",
            ref_8_6_d,
            options=("memory", "bandwidth", "compute", "fixed cost"),
            hint="the plan names what binds first; 'fixed cost' means the step's fixed cost per layer meets the "
            "TPOT target before memory or the roofline ceilings do",
        ),
        Free(
            "e",
            "Answer the colleague: what does 100 % in `nvidia-smi` measure, and what should admission be "
            "based on instead?",
            sample=(
                "`nvidia-smi`'s utilization is the share of time at least one kernel was running, not the share "
                "of the GPU's bandwidth or arithmetic in use: a memory-bound decode step keeps a kernel running "
                "all the time while it uses {a:.0%} of the bandwidth and {b:.1%} of the dense peak. The GPU "
                "can hold {c:.0f} users within {tpot_ms} ms, not {batch}, and the plan names what binds first "
                "({d}). Admission should follow the TPOT target and the memory left for caches, watched as "
                "measured TPOT percentiles and cache use."
            ),
            rubric=(
                (
                    1,
                    "Explains that the metric counts time with any kernel active, so a bandwidth-bound step "
                    "reads 100 % while MBU and MFU are far lower.",
                ),
                (
                    1,
                    "Bases admission on the TPOT target and the memory for caches (the plan's users and its "
                    "binding ceiling, checked against measured TPOT percentiles), not on that metric.",
                ),
            ),
        ),
    ),
    discussion=(
        "A busy GPU is not a full one: at {batch} users the step reaches an MBU of {a:.2f} and an MFU of {b:.3f}, "
        "and the plan admits {c:.0f} users before {d} binds. Utilization as `nvidia-smi` reports it can read "
        "100 % from the first few users on, so it says nothing about the room left."
    ),
)

EXERCISES = (EX_8_1, EX_8_2, EX_8_3, EX_8_4, EX_8_5, EX_8_6)
