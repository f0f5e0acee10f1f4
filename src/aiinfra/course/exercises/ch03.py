"""Exercises 3-1 to 3-5: what inference is.

Every reference is a short function of the exercise namespace ``p`` that calls
:mod:`aiinfra`; the reference notebook shows their source as the worked
solution.
"""

from __future__ import annotations

from aiinfra import compute, deployment, memory, units
from aiinfra.catalog import hardware, models
from aiinfra.course.exercises import Choice, Exercise, Free, Numeric, Param
from aiinfra.serving import capacity

# ---------------------------------------------------------------------------
# 3-1  Prefill and decode FLOPs of a shipped model (per-student variants)
# ---------------------------------------------------------------------------


def _counts(model):
    """The counts the exact FLOPs need, for a statement: N, block matrices, LM head, layers, attention width."""
    m = models.load(model)
    c = models.param_breakdown(m)
    return {
        "n_params": c["total"],
        "n_linear": c["block_linear_per_token"],
        "n_head": c["lm_head"],
        "layers": m.n_layers,
        "heads": m.n_heads,
        "head_dim": m.head_dim,
        "vocab": m.vocab_size,
        "hidden": m.hidden_size,
        "w_qk": c["attention_qk_width"],
        "tied": " (tied to the embedding table, so $N$ counts it once)" if m.tie_word_embeddings else "",
    }


def given_3_1(p):
    return _counts(p["model"])


def ref_3_1_a(p):
    m = models.load(p["model"])
    return compute.approx_prefill_flops_2n(models.total_params(m), p["prompt_tokens"]) / units.TERA


def ref_3_1_b(p):
    return compute.prefill_flops(p["model"], p["prompt_tokens"]) / units.TERA


def ref_3_1_c(p):
    return compute.decode_flops(p["model"], p["prompt_tokens"]) / units.GIGA


def ref_3_1_d(p):
    return compute.request_flops(p["model"], p["prompt_tokens"], p["generated_tokens"]) / units.TERA


def ref_3_1_e(p):
    return compute.request_two_n_ratio(p["model"], p["prompt_tokens"], p["generated_tokens"])


EX_3_1 = Exercise(
    id="3-1",
    title="The FLOPs of one request, exactly",
    level="core",
    intro=(
        "{model} has $N$ = {n_params:,} parameters: {n_linear:,} weights in the matrices of its {layers} "
        "blocks, an LM head of {vocab:,} x {hidden:,} = {n_head:,} weights{tied}, and an embedding table "
        "of the same size. Each layer has {heads} query heads of {head_dim} elements, so "
        "$w_{{qk}} = w_v$ = {w_qk:,}. A request brings a {prompt_tokens:,}-token prompt and receives "
        "{generated_tokens:,} tokens. Count a multiply-add as 2 FLOPs, the embedding lookup as 0, attention "
        "as $2n(w_{{qk}}+w_v)$ per layer for a query that sees $n$ keys (causal in prefill: the $i$-th prompt "
        "token sees $i$ keys), and run the LM head only where a token is sampled (in prefill, on the last "
        "prompt token only). `aiinfra.compute.prefill_flops`, `decode_flops` and `request_flops` count "
        "exactly this way."
    ),
    params={
        "model": Param("Qwen3-8B", choices=("Qwen3-8B", "Llama-3.1-8B", "Llama-3.1-70B")),
        "prompt_tokens": Param(2048, choices=(1024, 2048, 4096)),
        "generated_tokens": Param(256, choices=(128, 256, 512)),
    },
    given=given_3_1,
    parts=(
        Numeric(
            "a",
            "Prefill FLOPs by the $2N$ rule.",
            ref_3_1_a,
            unit="TFLOPs",
            hint="2 x parameters x prompt tokens",
        ),
        Numeric(
            "b",
            "Prefill FLOPs, exactly.",
            ref_3_1_b,
            unit="TFLOPs",
            hint="block matrices for every prompt token, the LM head once, causal attention P(P+1)/2 pairs",
        ),
        Numeric(
            "c",
            "One decode step with {prompt_tokens:,} tokens in the cache, exactly.",
            ref_3_1_c,
            unit="GFLOPs",
            hint="2 x (block matrices + LM head) plus 4 n heads head_dim per layer",
        ),
        Numeric(
            "d",
            "The whole request, exactly (prefill emits the first token; {generated_tokens:,} - 1 "
            "decode steps follow).",
            ref_3_1_d,
            unit="TFLOPs",
            hint="add the prefill and the decode steps, each at its own context",
        ),
        Numeric(
            "e",
            "The exact total over $2N(P+G)$.",
            ref_3_1_e,
            unit="x",
            hint="divide (d) by the rule for the whole request",
        ),
    ),
    discussion=(
        "The rule gives {a:.2f} TFLOPs for the prefill against {b:.2f} exactly; the whole request is {e:.3f} "
        "of the rule. The embedding and the prompt-side LM head, which the rule charges, roughly offset the "
        "attention it leaves out at these lengths."
    ),
)

# ---------------------------------------------------------------------------
# 3-2  When is 2N off by more than a tolerance?
# ---------------------------------------------------------------------------

MODEL_3_2_BIG = "Llama-3.1-70B"


def given_3_2(p):
    mine = _counts(p["model"])
    big = _counts(MODEL_3_2_BIG)
    return {**mine, "big": MODEL_3_2_BIG, **{f"big_{k}": v for k, v in big.items()}}


def ref_3_2_a(p):
    return compute.two_n_ratio(p["model"], p["context_tokens"])


def ref_3_2_b(p):
    return compute.context_where_two_n_is_off(p["model"], p["tolerance"])


def ref_3_2_c(p):
    return compute.context_where_two_n_is_off(MODEL_3_2_BIG, p["tolerance"])


def ref_3_2_d(p):
    small = compute.context_where_two_n_is_off(p["model"], p["tolerance"])
    return "the larger model" if ref_3_2_c(p) > small else "the smaller model"


def ref_3_2_e(p):
    return compute.two_n_ratio(p["model"], 0)


EX_3_2 = Exercise(
    id="3-2",
    title="When is the 2N rule off by more than a tolerance?",
    level="core",
    intro=(
        "Compare the exact FLOPs of one decode step with $2N$ ($N$ = all parameters) for {model}, using the "
        "counting rules of exercise 3-1: a step with $n$ tokens in the cache costs "
        "$2(N_{{lin}} + N_{{head}}) + 2Ln(w_{{qk}} + w_v)$. {model}: $N$ = {n_params:,}, "
        "$N_{{lin}}$ = {n_linear:,}, $N_{{head}}$ = {n_head:,}{tied}, $L$ = {layers}, "
        "$w_{{qk}} = w_v$ = {w_qk:,}. {big}: $N$ = {big_n_params:,}, $N_{{lin}}$ = {big_n_linear:,}, "
        "$N_{{head}}$ = {big_n_head:,}, $L$ = {big_layers}, $w_{{qk}} = w_v$ = {big_w_qk:,}. The tolerance is "
        "{tolerance:.0%}. (`aiinfra.compute.two_n_ratio` and `context_where_two_n_is_off` compute these.)"
    ),
    params={
        "model": Param("Qwen3-8B", choices=("Qwen3-8B", "Llama-3.1-8B", "Llama-3.2-3B")),
        "context_tokens": Param(16384, choices=(8192, 16384, 32768)),
        "tolerance": Param(0.1, choices=(0.05, 0.1, 0.2)),
    },
    given=given_3_2,
    parts=(
        Numeric(
            "a",
            "Exact over $2N$ at a context of {context_tokens:,} tokens.",
            ref_3_2_a,
            unit="x",
            hint="exact step FLOPs at that context divided by 2N",
        ),
        Numeric(
            "b",
            "The smallest context at which the exact step exceeds $2N$ by more than the tolerance.",
            ref_3_2_b,
            unit="tokens",
            rel_tol=0.002,
            hint="solve 2(N_lin + N_head) + 2 L n (w_qk + w_v) = (1 + tol) 2N for n, then round up",
        ),
        Numeric(
            "c",
            "The same context for {big}.",
            ref_3_2_c,
            unit="tokens",
            rel_tol=0.002,
            hint="same equation with the 70B shape",
        ),
        Choice(
            "d",
            "Which model can use the rule to longer contexts?",
            ref_3_2_d,
            options=("the larger model", "the smaller model"),
            hint="matrix FLOPs grow with the square of the width, attention only linearly",
        ),
        Numeric(
            "e",
            "Exact over $2N$ at an empty context.",
            ref_3_2_e,
            unit="x",
            hint="no attention term: 2(N_lin + N_head) over 2N",
        ),
    ),
    discussion=(
        "At {context_tokens:,} tokens the step costs {a:.2f}x the rule. The rule is high at short contexts "
        "({e:.3f} at zero, the free embedding) and low at long ones; it passes the tolerance at {b:,.0f} tokens, "
        "against {c:,.0f} for the 70B model."
    ),
)

# ---------------------------------------------------------------------------
# 3-3  Two phases on one GPU
# ---------------------------------------------------------------------------


def _phases(p):
    return deployment.Deployment(p["model"], p["gpu"]).request(p["prompt_tokens"], p["generated_tokens"])


def given_3_3(p):
    g = hardware.gpu(p["gpu"])
    m = models.load(p["model"])
    return {
        "tflops": g.bf16_dense_flops_per_s / units.TERA,
        "tb_s": g.memory_bandwidth_bytes_per_s / units.TB,
        "read_gb": models.decode_read_params(m) * units.bytes_per_param("bf16") / units.GB,
        "kv_kib": memory.kv_bytes_per_token(m) / units.KiB,
    }


def ref_3_3_a(p):
    return _phases(p).prefill.time_s / units.ms


def ref_3_3_b(p):
    return _phases(p).prefill.bound


def ref_3_3_c(p):
    return _phases(p).tpot_s / units.ms


def ref_3_3_d(p):
    return _phases(p).decode.time_s


def ref_3_3_e(p):
    ph = _phases(p)
    return ph.decode.time_s / ph.end_to_end_s


EX_3_3 = Exercise(
    id="3-3",
    title="Two phases on one GPU",
    level="core",
    intro=(
        "{model} in BF16 serves one request alone on an {gpu} ({tflops:.1f} TFLOP/s dense BF16, {tb_s:.2f} TB/s): "
        "a {prompt_tokens:,}-token prompt and a {generated_tokens:,}-token answer. Use exact FLOPs (the counting "
        "rules of exercise 3-1), read the weights once per pass ({read_gb:.2f} GB: the embedding table is not "
        "streamed) plus the KV of the current context ({kv_kib:.0f} KiB per token), and let reads and "
        "arithmetic overlap at the peak rates. The prefill emits the first token; each later token is one "
        "decode step. `aiinfra.deployment.Deployment(model, gpu).request(P, G)` computes these bounds."
    ),
    params={
        "model": Param("Qwen3-8B"),
        "gpu": Param("H100 SXM", choices=("H100 SXM", "H200 SXM", "A100 80GB SXM")),
        "prompt_tokens": Param(2048),
        "generated_tokens": Param(256),
    },
    given=given_3_3,
    parts=(
        Numeric(
            "a",
            "Lower bound on the prefill pass.",
            ref_3_3_a,
            unit="ms",
            hint="the larger of prefill FLOPs over peak compute and weight bytes over bandwidth",
        ),
        Choice(
            "b",
            "Is the prefill compute-bound or memory-bound?",
            ref_3_3_b,
            options=("compute-bound", "memory-bound"),
            hint="compare the two times of (a)",
        ),
        Numeric(
            "c",
            "Average lower bound on one decode step.",
            ref_3_3_c,
            unit="ms",
            hint="weights plus the step's KV over the bandwidth; the KV grows by one token per step",
        ),
        Numeric(
            "d",
            "Lower bound on all decode steps together.",
            ref_3_3_d,
            unit="s",
            hint="one step per output token after the first",
        ),
        Numeric(
            "e",
            "Fraction of the request's time spent in decode.",
            ref_3_3_e,
            unit="",
            hint="decode over prefill plus decode",
        ),
    ),
    discussion=(
        "Prefill takes {a:.1f} ms and is {b}; each decode step about {c:.2f} ms, {d:.2f} s in all, so decode is "
        "{e:.0%} of the time although the answer is far shorter than the prompt."
    ),
)

# ---------------------------------------------------------------------------
# 3-4  Find the flaw: equal FLOPs, equal time
# ---------------------------------------------------------------------------


def given_3_4(p):
    h100 = hardware.gpu("H100 SXM")
    n = models.total_params(models.load(p["model"]))
    claim_s = compute.approx_flops_2n(n, p["tokens"], p["tokens"]) / h100.bf16_dense_flops_per_s
    return {
        "n_b": n / units.GIGA,
        "tflops": h100.bf16_dense_flops_per_s / units.TERA,
        "claim_ms": claim_s / units.ms,
        "hbm_tb_s": h100.memory_bandwidth_bytes_per_s / units.TB,
        "steps": p["tokens"] - 1,
    }


def ref_3_4_a(p):
    n = models.total_params(models.load(p["model"]))
    return compute.approx_prefill_flops_2n(n, p["tokens"]) / compute.approx_decode_flops_2n(n, p["tokens"])


def ref_3_4_b(p):
    return (
        deployment.Deployment(p["model"], "H100 SXM").request(p["tokens"], p["tokens"]).prefill.time_s
        / units.ms
    )


def ref_3_4_c(p):
    return (
        deployment.Deployment(p["model"], "H100 SXM").request(p["tokens"], p["tokens"]).decode.time_s
        / units.ms
    )


def ref_3_4_d(p):
    return ref_3_4_c(p) / ref_3_4_b(p)


EX_3_4 = Exercise(
    id="3-4",
    title="Find the flaw: equal FLOPs, equal time",
    level="core",
    intro=(
        'A planning note reads: "{model} ({n_b:.2f}B parameters) answering {tokens:,} tokens to a {tokens:,}-token '
        "prompt costs $2N(P+G)$ FLOPs, half in prefill and half in decode. At {tflops:.1f} TFLOP/s the request "
        'takes {claim_ms:.1f} ms on one H100, split evenly between the phases." Check it with the exact '
        "phase model of this chapter (BF16, batch 1, peak rates: {tflops:.1f} TFLOP/s and {hbm_tb_s:.2f} TB/s, "
        "reads and arithmetic overlapped; the prefill emits the first token, then {tokens:,} - 1 decode steps), "
        'as `aiinfra.deployment.Deployment(model, "H100 SXM").request(P, G)` computes it.'
    ),
    params={
        "model": Param("Qwen3-8B", choices=("Qwen3-8B", "Llama-3.1-8B")),
        "tokens": Param(500, choices=(250, 500, 1000)),
    },
    given=given_3_4,
    parts=(
        Numeric(
            "a",
            "By the rule, prefill FLOPs over decode FLOPs.",
            ref_3_4_a,
            unit="x",
            hint="2NP against 2NG with P = G",
        ),
        Numeric(
            "b", "Lower bound on the prefill.", ref_3_4_b, unit="ms", hint="compute-bound: FLOPs over peak"
        ),
        Numeric(
            "c",
            "Lower bound on the decode steps.",
            ref_3_4_c,
            unit="ms",
            hint="each step reads all weights; steps run one after another",
        ),
        Numeric(
            "d", "How many times longer is decode than prefill?", ref_3_4_d, unit="x", hint="(c) over (b)"
        ),
        Free(
            "e",
            "What is wrong with the note, and what should a plan use instead for decode time?",
            sample=(
                "The FLOP counts are indeed about equal ({a:.2f}), but time is not FLOPs over peak. Prefill is one "
                "parallel, compute-bound pass ({b:.1f} ms) that also emits the first token. Decode is the remaining "
                "{steps:,} sequential passes, each memory-bound: "
                "it must stream the weights every step, so it takes {c:.0f} ms, {d:.0f}x the prefill. A plan should "
                "bound decode by bytes per step over bandwidth, times the number of steps."
            ),
        ),
    ),
    discussion="FLOPs say how much work; bytes per pass and the number of sequential passes say how long.",
)

# ---------------------------------------------------------------------------
# 3-5  The KV cache and the recurring bill
# ---------------------------------------------------------------------------


def given_3_5(p):
    m = models.load(p["model"])
    return {"layers": m.n_layers, "kv_heads": m.n_kv_heads, "head_dim": m.head_dim}


def ref_3_5_a(p):
    return memory.kv_bytes_per_token(p["model"]) / units.KiB


def ref_3_5_b(p):
    return memory.kv_bytes_per_request(p["model"], p["prompt_tokens"] + p["generated_tokens"]) / units.MiB


def ref_3_5_c(p):
    d = deployment.Deployment(p["model"], "H100 SXM")
    cached = d.request(p["prompt_tokens"], p["generated_tokens"]).decode.flops
    return d.decode_without_cache(p["prompt_tokens"], p["generated_tokens"]).flops / cached


def ref_3_5_d(p):
    return compute.tokens_to_match_training(p["training_tokens_t"] * units.TERA) / units.TERA


def ref_3_5_e(p):
    return capacity.gpu_hours_for_tokens(ref_3_5_d(p) * units.TERA, p["tokens_per_s_per_gpu"]) / units.MEGA


EX_3_5 = Exercise(
    id="3-5",
    title="What the cache saves, and what serving costs",
    level="extension",
    intro=(
        "{model} in BF16 ({layers} layers, {kv_heads} key/value heads of {head_dim} elements per layer) answers "
        "{generated_tokens:,} tokens to a {prompt_tokens:,}-token prompt. Separately, a "
        "model trained on {training_tokens_t} trillion tokens is served at {tokens_per_s_per_gpu:,} tokens per "
        "second per GPU. Training costs about $6N$ FLOPs per training token, inference $2N$ per served token."
    ),
    params={
        "model": Param("Qwen3-8B"),
        "prompt_tokens": Param(2048, choices=(1024, 2048, 8192)),
        "generated_tokens": Param(256),
        "training_tokens_t": Param(15, choices=(2, 15, 36)),
        "tokens_per_s_per_gpu": Param(2500, choices=(1000, 2500, 5000)),
    },
    given=given_3_5,
    parts=(
        Numeric(
            "a",
            "KV cache added per token.",
            ref_3_5_a,
            unit="KiB",
            hint="keys and values, every layer, every KV head, head_dim elements of 2 bytes",
        ),
        Numeric(
            "b",
            "KV cache of the finished request (prompt plus answer).",
            ref_3_5_b,
            unit="MiB",
            hint="per-token bytes times the tokens held; 1 MiB = 2**20 B",
        ),
        Numeric(
            "c",
            "How many times more FLOPs would the decode steps cost if each recomputed the whole "
            "sequence (no cache: every decode step is a prefill of all the tokens so far, "
            "as `Deployment(model, gpu).decode_without_cache(P, G)` counts it)?",
            ref_3_5_c,
            unit="x",
            hint="sum the prefill of P+1, P+2, ... tokens, over the cached steps' FLOPs",
        ),
        Numeric(
            "d",
            "Served tokens at which inference FLOPs equal the training FLOPs.",
            ref_3_5_d,
            unit="trillion tokens",
            hint="6ND = 2N x tokens",
        ),
        Numeric(
            "e",
            "GPU-hours to serve that many tokens.",
            ref_3_5_e,
            unit="million GPU-hours",
            hint="tokens over tokens per second, over 3,600",
        ),
    ),
    discussion=(
        "Each token adds {a:.0f} KiB; the cache saves about {c:,.0f}x the arithmetic. Break-even with training "
        "comes at {d:.0f} trillion served tokens, {e:.1f} million GPU-hours at the stated rate."
    ),
)

EXERCISES = (EX_3_1, EX_3_2, EX_3_3, EX_3_4, EX_3_5)
