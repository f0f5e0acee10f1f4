"""Exercises 7-1 to 7-6: serving at scale, and a prefill/decode split sized for a traffic mix.

Every reference answer is a small function of the exercise namespace ``p``
(parameters plus ``given``) that calls :mod:`aiinfra`; the reference notebook
shows these functions as the worked solution.
"""

from __future__ import annotations

import functools
import math

from aiinfra import decode, deployment, memory, predict, roofline, units
from aiinfra.catalog import hardware, models
from aiinfra.cluster import hierarchy
from aiinfra.cluster import scale as cluster
from aiinfra.course.exercises import Choice, Exercise, Free, Numeric, Param, Slip, node_slip
from aiinfra.serving import capacity, disaggregation, prefix_cache, speculation

# ---------------------------------------------------------------------------
# 7-1  Speculative decoding: yield, speedup and break-even
# ---------------------------------------------------------------------------


def ref_7_1_a(p):
    return speculation.expected_tokens_per_target_pass(p["alpha"], p["gamma"])


def ref_7_1_b(p):
    return speculation.speculative_speedup(p["alpha"], p["gamma"], p["draft_cost"])


def ref_7_1_c(p):
    return speculation.max_draft_cost_ratio(p["alpha"], p["gamma"])


def ref_7_1_d(p):
    return speculation.breakeven_alpha(p["gamma"], p["draft_cost"])


def ref_7_1_e(p):
    return float(speculation.best_gamma(p["alpha"], p["draft_cost"], max_gamma=p["max_gamma"])[0])


def ref_7_1_f(p):
    return speculation.speculative_speedup(p["alpha"], p["gamma"], p["slow_draft_cost"]) > 1.0


EX_7_1 = Exercise(
    id="7-1",
    title="Speculative decoding: yield, speedup and break-even",
    level="core",
    intro=(
        "A draft model proposes {gamma} tokens per round; the target accepts each with probability {alpha}, "
        "independently, and stops at the first rejection. One draft pass costs {draft_cost} of a target pass."
    ),
    params={
        "alpha": Param(0.8, choices=(0.6, 0.7, 0.8, 0.9)),
        "gamma": Param(4, choices=(3, 4, 5)),
        "draft_cost": Param(0.05, choices=(0.02, 0.05, 0.1)),
        "max_gamma": Param(8),
        "slow_draft_cost": Param(0.5),
    },
    parts=(
        Numeric(
            "a",
            "Expected tokens produced per target pass?",
            ref_7_1_a,
            unit="tokens",
            hint="a geometric sum: 1 + alpha + alpha^2 + ... up to alpha^gamma",
        ),
        Numeric(
            "b",
            "Expected speedup over plain decoding?",
            ref_7_1_b,
            unit="x",
            hint="tokens per pass divided by the cost of a round, gamma c + 1 target passes",
        ),
        Numeric(
            "c",
            "Largest draft cost (in target passes) at which speculation still breaks even?",
            ref_7_1_c,
            unit="target passes",
            hint="set the speedup to 1 and solve for c",
        ),
        Numeric(
            "d",
            "Below which acceptance rate does speculation lose time, at this gamma and draft cost?",
            ref_7_1_d,
            unit="",
            rel_tol=0.02,
            hint="solve E(alpha, gamma) = gamma c + 1 for alpha",
        ),
        Numeric(
            "e",
            "Which draft length gamma from 1 to {max_gamma} maximises the speedup at this alpha and draft "
            "cost?",
            ref_7_1_e,
            unit="tokens",
            rel_tol=0.0,
            abs_tol=0.5,
            hint="evaluate the speedup for every gamma and keep the largest",
        ),
        Choice(
            "f",
            "Find the flaw: a colleague proposes a draft model that costs {slow_draft_cost} of a target pass, "
            "arguing that 'any draft that is right most of the time pays'. Does speculation still give a "
            "speedup above 1 at this alpha and gamma?",
            ref_7_1_f,
            options=(True, False),
            hint="compare the draft cost with the break-even cost of part (c)",
        ),
    ),
    discussion=(
        "A round yields {a:.2f} tokens, for a {b:.2f}x speedup. The draft may cost up to {c:.2f} target passes "
        "before speculation stops paying; accuracy alone does not decide it."
    ),
)

# ---------------------------------------------------------------------------
# 7-2  A capacity plan: users to GPUs, megawatts and dollars
# ---------------------------------------------------------------------------

MODEL_7_2 = "Llama-3.1-70B"


def given_7_2(p):
    dgx = hardware.DGX_H100
    sizes = capacity.REPLICA_SIZES
    return {
        "model": MODEL_7_2,
        "server_kw": dgx.max_power_watts / units.KILO,
        "server_gpus": dgx.n_gpus,
        "sizes": ", ".join(str(x) for x in sizes),
    }


def _plan(p):
    replica = deployment.Deployment(
        MODEL_7_2, "H100 SXM", eta_f=p["eta_f"], eta_b=p["eta_b"], memory_reserve=p["reserve"]
    )
    return capacity.plan(replica, p["users"], p["tpot_ms"] * units.ms, p["context"])


def ref_7_2_a(p):
    return float(_plan(p).gpus_total)


def ref_7_2_b(p):
    return float(_plan(p).users_per_replica)


def ref_7_2_c(p):
    return _plan(p).limiting


def ref_7_2_d(p):
    per_gpu = hierarchy.watts_per_gpu_at_server(p["server_kw"] * units.KILO, p["server_gpus"])
    return cluster.cluster_power_w(_plan(p).gpus_total, per_gpu, p["pue"]) / units.MEGA


def ref_7_2_e(p):
    plan = _plan(p)
    tok_s = decode.tokens_per_s_aggregate(plan.users_per_replica, plan.step_time_s) * plan.replicas
    return capacity.cost_per_million_tokens(p["usd_per_gpu_hour"], tok_s / plan.gpus_total)


EX_7_2 = Exercise(
    id="7-2",
    title="A capacity plan",
    level="core",
    intro=(
        "A service runs {model} in BF16 on H100 SXM GPUs for {users:,} concurrent users, each holding {context:,} "
        "tokens of context, with a target TPOT of {tpot_ms} ms. Assume {eta_f:.0%} of peak FLOP/s and "
        "{eta_b:.0%} of peak bandwidth, and hold back {reserve:.0%} of memory for workspace. Replicas are "
        "tensor-parallel groups of {sizes} GPUs; use `aiinfra.serving.capacity.plan`. Servers draw "
        "{server_kw:.1f} kW per {server_gpus} GPUs, the PUE is {pue} and a GPU-hour costs \\${usd_per_gpu_hour:.2f}. "
        "These are chapter 7's server assumptions; like the chapter's plan, ignore tensor-parallel "
        "communication and prefill work."
    ),
    params={
        "users": Param(10000, choices=(2000, 10000, 50000)),
        "context": Param(8192, choices=(4096, 8192, 16384)),
        "tpot_ms": Param(50, choices=(30, 50, 80)),
        "eta_f": Param(0.5),
        "eta_b": Param(0.7),
        "reserve": Param(0.1),
        "pue": Param(1.2),
        "usd_per_gpu_hour": Param(2.0),
    },
    given=given_7_2,
    parts=(
        Numeric(
            "a",
            "How many GPUs does the plan need in total?",
            ref_7_2_a,
            unit="GPUs",
            rel_tol=0.0,
            abs_tol=0.5,
            hint="users per replica from the memory, bandwidth and compute ceilings; replicas = ceil(users / that)",
            slips=(
                Slip(
                    "servers-vs-gpus",
                    "servers counted instead of GPUs, or the reverse?",
                    factor=lambda p: float(p["server_gpus"]),
                ),
            ),
        ),
        Numeric(
            "b",
            "How many users does each replica serve?",
            ref_7_2_b,
            unit="users",
            rel_tol=0.0,
            abs_tol=0.5,
            hint="users spread evenly over the replicas",
        ),
        Choice(
            "c",
            "Which ceiling binds?",
            ref_7_2_c,
            options=("memory", "bandwidth", "compute"),
            hint="compare the three ceilings for the chosen replica size",
        ),
        Numeric(
            "d",
            "What does the fleet draw at the facility?",
            ref_7_2_d,
            unit="MW",
            hint="GPUs x server power per GPU x PUE, applied once",
            slips=(node_slip("server_gpus"),),
        ),
        Numeric(
            "e",
            "What does a million generated tokens cost?",
            ref_7_2_e,
            unit="$",
            hint="price per GPU-second divided by tokens per second per GPU, times a million",
        ),
    ),
    discussion="The plan is a lower bound: add communication, prefill work, bursts and spare capacity.",
)

# ---------------------------------------------------------------------------
# 7-3  When does disaggregated serving pay?
# ---------------------------------------------------------------------------

MODEL_7_3 = "Llama-3.1-70B"


def given_7_3(p):
    nic = hardware.DGX_H100.compute_nic.bytes_per_s_per_direction
    return {
        "model": MODEL_7_3,
        "nic_gb_s": nic / units.GB,
        "kv_kib": memory.kv_bytes_per_token(models.load(MODEL_7_3)) / units.KiB,
        "tflops": _h100().bf16_dense_flops_per_s / units.TERA,
        "hbm_tb_s": _h100().memory_bandwidth_bytes_per_s / units.TB,
    }


def _h100():
    return hardware.gpu("H100 SXM")


def _server(p):
    return deployment.Deployment(MODEL_7_3, _h100(), n_gpus=p["n_gpus"], eta_f=p["eta_f"], eta_b=p["eta_b"])


def _t_pre(p):
    return _server(p).prefill(p["prompt"]).time_s


def _t_dec(p):
    return _server(p).step(p["batch"], p["context"]).time_s


def _u(p):
    return disaggregation.prefill_busy_fraction(p["rate"], _t_pre(p))


def _t_kv(p):
    nic = hardware.DGX_H100.compute_nic.bytes_per_s_per_direction
    return disaggregation.kv_handoff_time_s(
        p["prompt"], memory.kv_bytes_per_token(models.load(MODEL_7_3)), nic
    )


def ref_7_3_a(p):
    return _t_pre(p) / units.ms


def ref_7_3_b(p):
    return _u(p) * 100


def ref_7_3_c(p):
    return disaggregation.colocated_tpot_s(_t_dec(p), _u(p)) / units.ms


def ref_7_3_d(p):
    return _t_kv(p) / units.ms


def ref_7_3_e(p):
    return disaggregation.breakeven_output_tokens(_t_dec(p), _u(p), _t_kv(p))


def ref_7_3_f(p):
    gain = disaggregation.disaggregation_gain_s(_t_dec(p), _u(p), p["answer"], _t_kv(p))
    return "disaggregated" if gain > 0 else "colocated"


EX_7_3 = Exercise(
    id="7-3",
    title="When does disaggregated serving pay?",
    level="core",
    intro=(
        "{model} runs on {n_gpus}-GPU H100 servers (BF16; {tflops:.1f} TFLOP/s dense and {hbm_tb_s:.2f} TB/s "
        "per GPU, of which kernels reach {eta_f:.0%} and {eta_b:.0%}; no communication between the GPUs). "
        "Prompts of {prompt:,} tokens reach each decode server at {rate} per second. The decode batch is "
        "{batch} requests, each holding {context:,} tokens of context, as in chapter 7. On a colocated server "
        "a prefill runs whole and preempts decode. Disaggregated, the prompt's KV cache ({kv_kib:.0f} KiB per "
        "token) crosses one {nic_gb_s:.0f} GB/s network port (per direction) once. Count FLOPs exactly as in "
        "exercise 3-1: the block matrices for every prompt token, causal attention, and the LM head for the "
        "last prompt token only. `aiinfra.deployment.Deployment(model, gpu, n_gpus, eta_f=..., eta_b=...)` "
        "gives `.prefill(P)` and `.step(batch, context)`."
    ),
    params={
        "prompt": Param(4096, choices=(2048, 4096, 8192)),
        "rate": Param(1.0, choices=(0.5, 1.0, 2.0)),
        "batch": Param(32, choices=(16, 32, 64)),
        "answer": Param(300),
        "context": Param(8192),
        "n_gpus": Param(8),
        "eta_f": Param(0.5),
        "eta_b": Param(0.7),
    },
    given=given_7_3,
    parts=(
        Numeric(
            "a",
            "How long does one prefill take (lower bound, on the whole server)?",
            ref_7_3_a,
            unit="ms",
            hint="exact prefill FLOPs over the server's achieved compute rate",
            slips=(node_slip("n_gpus"),),
        ),
        Numeric(
            "b",
            "What share of a colocated server's time goes to prefill?",
            ref_7_3_b,
            unit="%",
            hint="u = arrival rate x prefill time",
        ),
        Numeric(
            "c",
            "Mean time per output token on the colocated server, for a decode step of the batch at "
            "{context:,} tokens of context?",
            ref_7_3_c,
            unit="ms",
            hint="decode step time / (1 - u)",
        ),
        Numeric(
            "d",
            "How long does the KV hand-off take?",
            ref_7_3_d,
            unit="ms",
            hint="prompt tokens x KV bytes per token / port bandwidth",
            slips=("per-direction-vs-both",),
        ),
        Numeric(
            "e",
            "Above how many output tokens is the disaggregated request faster?",
            ref_7_3_e,
            unit="tokens",
            hint="G* = t_kv (1 - u) / (t_d u)",
        ),
        Choice(
            "f",
            "For a {answer}-token answer, which deployment finishes the request sooner?",
            ref_7_3_f,
            options=("colocated", "disaggregated"),
            hint="compare the answer length with part (e)",
        ),
    ),
    discussion="The hand-off is paid once; the interference is paid on every one of the answer's tokens.",
)

# ---------------------------------------------------------------------------
# 7-4  Find the flaw: "550 tokens per second for free"
# ---------------------------------------------------------------------------


def given_7_4(p):
    h100 = hardware.gpu("H100 SXM")
    return {
        "gqa_kib": memory.kv_bytes_per_token(models.load("Llama-3.1-70B")) / units.KiB,
        "hbm_gb": h100.memory_bytes / units.GB,
        "hbm_tb_s": h100.memory_bandwidth_bytes_per_s / units.TB,
        "single_rate": decode.memory_bound_tokens_per_s(
            p["weights_gb"] * units.GB, h100.memory_bandwidth_bytes_per_s
        ),
    }


def _kv_mha(p):
    # full multi-head attention: K and V of width d per layer (one "head" of width d is the same count)
    return memory.kv_bytes_per_token_formula(p["layers"], 1, p["d_model"], 2) * p["context"]


def _step(p, kv_per_request):
    h100 = hardware.gpu("H100 SXM")
    return roofline.memory_time_s(
        p["weights_gb"] * units.GB + p["batch"] * kv_per_request,
        p["n_gpus"] * h100.memory_bandwidth_bytes_per_s,
    )


def ref_7_4_a(p):
    return p["batch"] * p["single_rate"]


def ref_7_4_b(p):
    return _kv_mha(p) / units.GB


def ref_7_4_c(p):
    return p["batch"] * _kv_mha(p) / units.GB


def ref_7_4_d(p):
    return decode.tokens_per_s_aggregate(p["batch"], _step(p, _kv_mha(p)))


def ref_7_4_e(p):
    kv = memory.kv_bytes_per_request(models.load("Llama-3.1-70B"), p["context"])
    return decode.tokens_per_s_aggregate(p["batch"], _step(p, kv))


EX_7_4 = Exercise(
    id="7-4",
    title="Find the flaw: batching for free",
    level="core",
    intro=(
        "A tutorial serves a 70B model ({layers} layers, width {d_model:,}, {weights_gb:.0f} GB of BF16 weights) on "
        "a node of {n_gpus} GPUs with {hbm_gb:.0f} GB and {hbm_tb_s:.2f} TB/s each. It computes a single-stream rate of "
        "{single_rate:.1f} tok/s (one GPU's bandwidth over the weights), fits a batch of {batch} requests of "
        "{context:,} tokens with full multi-head attention in BF16, and multiplies: 'batching gives "
        "{batch} x {single_rate:.1f} tok/s for free.' Treat decode as memory-bound: a step reads the weights once "
        "plus every request's KV cache, over the node's total bandwidth."
    ),
    params={
        "layers": Param(80),
        "d_model": Param(8192),
        "weights_gb": Param(140.0),
        "batch": Param(23, choices=(16, 23)),
        "context": Param(8192, choices=(4096, 8192)),
        "n_gpus": Param(8),
    },
    given=given_7_4,
    parts=(
        Numeric(
            "a",
            "What aggregate rate does the tutorial claim?",
            ref_7_4_a,
            unit="tok/s",
            hint="batch x single-stream rate",
        ),
        Numeric(
            "b",
            "How large is one request's KV cache under the tutorial's full multi-head assumption "
            "(keys and values of the full width in every layer)?",
            ref_7_4_b,
            unit="GB",
            hint="2 (K and V) x layers x width x 2 bytes x context tokens",
        ),
        Numeric(
            "c",
            "How many KV bytes does one decode step of the whole batch read?",
            ref_7_4_c,
            unit="GB",
            hint="every request's cache is read at every step",
        ),
        Numeric(
            "d",
            "What aggregate rate does the memory-bound bound give, weights plus KV, over the whole node?",
            ref_7_4_d,
            unit="tok/s",
            hint="batch / ((weights + batch x KV) / (GPUs x bandwidth))",
            slips=(node_slip("n_gpus"),),
        ),
        Numeric(
            "e",
            "Redo (d) with the real Llama-3.1-70B KV cache (grouped-query attention, {gqa_kib:.0f} KiB per "
            "token in BF16).",
            ref_7_4_e,
            unit="tok/s",
            hint="the same bound with the grouped-query cache per request",
            slips=(node_slip("n_gpus"),),
        ),
        Free(
            "f",
            "Name the two errors in the tutorial's estimate.",
            sample=(
                "It uses one GPU's bandwidth for a model spread over {n_gpus}, which undercounts the node's bandwidth, "
                "and it ignores the KV reads: {c:.0f} GB per step against {weights_gb:.0f} GB of weights. "
                "The consistent bound is {d:.0f} tok/s with multi-head KV, {e:.0f} tok/s with the real "
                "grouped-query KV, not {a:.0f}."
            ),
        ),
    ),
)

# ---------------------------------------------------------------------------
# 7-5  Prefix caching: what a hit saves and what the cache costs
# ---------------------------------------------------------------------------

MODEL_7_5 = "Llama-3.1-70B"


def given_7_5(p):
    f, a = _coeffs()
    return {
        "model": MODEL_7_5,
        "pcie_gb_s": hardware.link("pcie5").bytes_per_s_per_direction / units.GB,
        "f": f,
        "a": a,
        "tflops": hardware.gpu("H100 SXM").bf16_dense_flops_per_s / units.TERA,
        "kv_kib": memory.kv_bytes_per_token(models.load(MODEL_7_5)) / units.KiB,
    }


def _pi(p):
    return p["n_gpus"] * hardware.gpu("H100 SXM").bf16_dense_flops_per_s


def _coeffs():
    return prefix_cache.model_prefill_coefficients(MODEL_7_5)


def ref_7_5_a(p):
    f, a = _coeffs()
    full = prefix_cache.prefill_flops_with_prefix(p["prompt"], 0, f, a)
    return roofline.compute_time_s(full, _pi(p), p["eta_f"]) / units.ms


def ref_7_5_b(p):
    f, a = _coeffs()
    rest = prefix_cache.prefill_flops_with_prefix(p["prompt"], p["prefix"], f, a)
    return roofline.compute_time_s(rest, _pi(p), p["eta_f"]) / units.ms


def ref_7_5_c(p):
    f, a = _coeffs()
    saved_s = prefix_cache.expected_ttft_saved_s(
        p["hit_rate"], p["prompt"], p["prefix"], f, _pi(p), p["eta_f"], a
    )
    return saved_s / units.ms


def ref_7_5_d(p):
    kv = memory.kv_bytes_per_token(models.load(MODEL_7_5))
    return prefix_cache.prefix_cache_bytes(p["prefix"], kv, p["distinct"]) / units.GB


def ref_7_5_e(p):
    f, _ = _coeffs()
    kv = memory.kv_bytes_per_token(models.load(MODEL_7_5))
    return prefix_cache.reload_speedup(
        f, _pi(p), kv, p["n_gpus"] * hardware.link("pcie5").bytes_per_s_per_direction, p["eta_f"]
    )


EX_7_5 = Exercise(
    id="7-5",
    title="Prefix caching",
    level="extension",
    intro=(
        "{model} serves prompts of {prompt:,} tokens on {n_gpus} H100s ({tflops:.1f} TFLOP/s dense BF16 each; "
        "prefill is compute-bound at {eta_f:.0%} of peak). The first {prefix:,} tokens are a shared system prompt, "
        "found in the cache by {hit_rate:.0%} of requests. Leave out the LM head (it runs on the last prompt "
        "token only) and count causal attention, each position attending to itself and every earlier one: a "
        "prompt of $P$ tokens whose first $c$ are cached costs $f(P-c) + a\\,[P(P+1) - c(c+1)]/2$ FLOPs, with "
        "$f$ = {f:,.0f} FLOPs per token (the block matrices) and $a$ = {a:,.0f} FLOPs per query-key pair "
        "(`aiinfra.serving.prefix_cache.model_prefill_coefficients` and `prefill_flops_with_prefix`). The KV "
        "cache holds {kv_kib:.0f} KiB per token."
    ),
    params={
        "prompt": Param(8192, choices=(4096, 8192, 16384)),
        "prefix": Param(2048, choices=(1024, 2048, 3072)),
        "hit_rate": Param(0.8, choices=(0.5, 0.8, 0.95)),
        "distinct": Param(200),
        "n_gpus": Param(8),
        "eta_f": Param(0.5),
    },
    given=given_7_5,
    parts=(
        Numeric(
            "a",
            "Prefill time of a prompt without a hit?",
            ref_7_5_a,
            unit="ms",
            hint="FLOPs with c = 0 over the achieved compute rate of all the GPUs",
            slips=(node_slip("n_gpus"),),
        ),
        Numeric(
            "b",
            "Prefill time with the prefix cached?",
            ref_7_5_b,
            unit="ms",
            hint="only positions after the prefix are computed, but they attend to the whole prompt",
            slips=(node_slip("n_gpus"),),
        ),
        Numeric(
            "c",
            "Expected TTFT saved per request?",
            ref_7_5_c,
            unit="ms",
            hint="hit rate x (a - b)",
            slips=(node_slip("n_gpus"),),
        ),
        Numeric(
            "d",
            "KV memory for {distinct} distinct cached prefixes of this length?",
            ref_7_5_d,
            unit="GB",
            hint="prefixes x tokens x KV bytes per token",
        ),
        Numeric(
            "e",
            "How many times faster is loading a cached token's KV over the {n_gpus} GPUs' PCIe Gen5 links "
            "({pcie_gb_s:.0f} GB/s each, per direction) than recomputing it (block matrices only, attention "
            "left out)?",
            ref_7_5_e,
            unit="x",
            hint="recompute time per token (f over the achieved compute rate) over load time per token",
            slips=("per-direction-vs-both",),
        ),
    ),
    discussion="A hit saves {c:.1f} ms on average; parking the prefix in CPU memory and loading it back is "
    "{e:.0f} times faster than recomputing it.",
)

# ---------------------------------------------------------------------------
# 7-6  Design: a prefill/decode split for a traffic mix
# ---------------------------------------------------------------------------

MODEL_7_6 = "Llama-3.1-70B"
GPU_7_6 = "H100 SXM"
SERVER_GPUS_7_6 = 8
#: Traffic mixes: (prompt tokens, output tokens) of the typical request.
MIXES_7_6 = {"chat": (1024, 512), "retrieval": (8192, 256), "agent": (4096, 1024)}


def _deployment_7_6():
    return deployment.Deployment(MODEL_7_6, GPU_7_6, weight_precision="fp8", compute_precision="fp8")


def given_7_6(p):
    prompt, output = MIXES_7_6[p["mix"]]
    return {
        "model": MODEL_7_6,
        "gpu": GPU_7_6,
        "server_gpus": SERVER_GPUS_7_6,
        "prompt": prompt,
        "output": output,
        "kv_kib": _deployment_7_6().kv_bytes_per_token / units.KiB,
    }


@functools.cache
def _prefill_estimate_7_6(prompt):
    setup = predict.Setup(
        MODEL_7_6, GPU_7_6, tp=SERVER_GPUS_7_6, weight_precision="fp8", compute_precision="fp8"
    )
    return predict.estimate(setup, 1, prompt, 1)


@functools.cache
def _decode_plan_7_6(users, tpot_ms, context):
    return predict.plan(
        _deployment_7_6(), users, tpot_ms * units.ms, context, replica_sizes=(SERVER_GPUS_7_6,)
    )


def ref_7_6_a(p):
    return _prefill_estimate_7_6(p["prompt"]).prediction.ttft_s / units.ms


def ref_7_6_b(p):
    busy = disaggregation.prefill_busy_fraction(p["rate"], ref_7_6_a(p) * units.ms)
    return float(math.ceil(busy / p["max_busy"]) * SERVER_GPUS_7_6)


def ref_7_6_c(p):
    return float(math.ceil(p["rate"] * decode.decode_time_s(p["tpot_ms"] * units.ms, p["output"] - 1)))


def ref_7_6_d(p):
    return float(_decode_plan_7_6(int(ref_7_6_c(p)), p["tpot_ms"], p["prompt"] + p["output"]).gpus_total)


def ref_7_6_e(p):
    kv = _deployment_7_6().kv_bytes_per_token
    return disaggregation.kv_handoff_bandwidth_bytes_per_s(p["rate"], p["prompt"], kv) / units.GB


EX_7_6 = Exercise(
    id="7-6",
    title="Design: a prefill/decode split for a traffic mix",
    level="core",
    intro=(
        "A disaggregated service runs {model} with FP8 weights and FP8 arithmetic (BF16 KV cache, {kv_kib:.0f} "
        "KiB per token) on {server_gpus}-GPU {gpu} servers, each server one tensor-parallel replica. The "
        "traffic is the *{mix}* mix: {rate} requests per second, each a {prompt:,}-token prompt and a "
        "{output:,}-token answer. The prefill pool runs one prompt at a time per server and is kept at most "
        "{max_busy:.0%} busy so that prompts rarely queue; the decode pool must meet a TPOT of {tpot_ms} ms. "
        "Use the calibrated prediction throughout: `aiinfra.predict.estimate` (batch 1, one output token) "
        "for a prompt's prefill on one server, and `aiinfra.predict.plan` with replicas of {server_gpus} GPUs "
        "for the decode pool, each user holding the full {prompt:,} + {output:,} tokens of context."
    ),
    params={
        "mix": Param("chat", choices=tuple(MIXES_7_6)),
        "rate": Param(10, choices=(10, 20)),
        "max_busy": Param(0.7),
        "tpot_ms": Param(50),
    },
    given=given_7_6,
    parts=(
        Numeric(
            "a",
            "What is the predicted prefill time of one prompt on one server?",
            ref_7_6_a,
            unit="ms",
            rel_tol=0.02,
            hint="the TTFT of a batch of one on a TP-8 setup: prefill arithmetic at the fitted efficiency, "
            "plus the fixed cost and the two all-reduces of every layer",
        ),
        Numeric(
            "b",
            "How many GPUs does the prefill pool need?",
            ref_7_6_b,
            unit="GPUs",
            rel_tol=0.0,
            abs_tol=0.5,
            hint="busy servers = rate x prefill time; servers = ceil(busy / the allowed share); GPUs = 8 x servers",
            slips=(node_slip("server_gpus"),),
        ),
        Numeric(
            "c",
            "How many requests are decoding at once? Each spends its answer's decode steps in the pool at the "
            "target TPOT (the slowest the target allows, so the count is an upper bound); round up.",
            ref_7_6_c,
            unit="users",
            rel_tol=0.0,
            abs_tol=1.0,
            hint="Little's law: concurrency = arrival rate x time in the system, here (output - 1) x TPOT",
        ),
        Numeric(
            "d",
            "How many GPUs does the decode pool need?",
            ref_7_6_d,
            unit="GPUs",
            rel_tol=0.0,
            abs_tol=0.5,
            hint="the calibrated plan for that many users at the TPOT target, context = prompt + answer",
            slips=(node_slip("server_gpus"),),
        ),
        Numeric(
            "e",
            "How much KV cache per second must cross from the prefill pool to the decode pool?",
            ref_7_6_e,
            unit="GB/s",
            hint="rate x prompt tokens x KV bytes per token",
        ),
        Free(
            "f",
            "Which pool dominates for this mix, and how would the split change if the traffic moved to the "
            "other mixes? Name one thing this sizing leaves out.",
            sample=(
                "For the {mix} mix the prefill pool needs {b:.0f} GPUs and the decode pool {d:.0f}. Prefill "
                "work grows with the prompt (faster than linearly, through attention) and decode occupancy "
                "with the answer length, so long-prompt, short-answer traffic (retrieval) shifts GPUs to "
                "prefill and long answers (agents, chat) shift them to decode; a fixed ratio fits only one "
                "mix, which is why disaggregated fleets resize their pools. Left out: queueing and bursts "
                "beyond the busy cap, the TTFT target itself, the KV transfer's own latency and NIC limits "
                "({e:.1f} GB/s here), and batching several prompts per prefill pass."
            ),
            rubric=(
                (
                    1,
                    "Reads the two pool sizes correctly and explains the dependence: prefill scales with prompt "
                    "length and rate, decode with answer length, rate and TPOT, so the ratio moves with the mix.",
                ),
                (
                    1,
                    "Names a real omission: bursts and queueing (TTFT), the KV transfer's latency or network "
                    "limit, prefill batching, or failures and headroom.",
                ),
            ),
        ),
    ),
    discussion=(
        "The split is two different sizings: the prefill pool by work (rate x prefill time, with headroom), the "
        "decode pool by occupancy (Little's law) under a latency target. The KV stream of {e:.1f} GB/s is the "
        "price of separating them."
    ),
)

EXERCISES = (EX_7_1, EX_7_2, EX_7_3, EX_7_4, EX_7_5, EX_7_6)
