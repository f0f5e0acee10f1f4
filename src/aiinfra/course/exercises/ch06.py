"""Exercises 6-1 to 6-5: the data-center cluster, and a tensor-parallel deployment designed for a TPOT target.

Every reference answer is a small function of the exercise namespace ``p``
(parameters plus ``given``) that calls :mod:`aiinfra`; the reference notebook
shows these functions as the worked solution.
"""

from __future__ import annotations

import functools
import inspect

from aiinfra import decode, deployment, predict, roofline, units
from aiinfra.catalog import hardware, models
from aiinfra.cluster import hierarchy, network, parallelism
from aiinfra.cluster import scale as cluster
from aiinfra.course.exercises import Choice, Exercise, Free, Numeric, Param, Slip, node_slip
from aiinfra.serving import capacity

# ---------------------------------------------------------------------------
# 6-1  One tensor-parallel all-reduce, over NVLink and over InfiniBand
# ---------------------------------------------------------------------------


def _links():
    h100 = hardware.gpu("H100 SXM")
    return h100.scaleup_bytes_per_s_per_direction, hardware.link("ndr").bytes_per_s_per_direction


def given_6_1(p):
    m = models.load(p["model"])
    nv, ib = _links()
    return {
        "d_model": m.hidden_size,
        "n_layers": m.n_layers,
        "nvlink_gb_s": nv / units.GB,
        "ib_gb_s": ib / units.GB,
        "t0_nv_us": parallelism.ASSUMED_STEP_LATENCY_S["nvlink"] / units.us,
        "t0_ib_us": parallelism.ASSUMED_STEP_LATENCY_S["infiniband"] / units.us,
    }


def _msg_6_1(p):
    return parallelism.tp_allreduce_message_bytes(p["tokens"], p["d_model"], 2)


def _t_nv(p):
    nv, _ = _links()
    return network.ring_allreduce_time_s(
        _msg_6_1(p), p["ranks"], nv, parallelism.ASSUMED_STEP_LATENCY_S["nvlink"]
    )


def ref_6_1_a(p):
    return _msg_6_1(p) / units.MiB


def ref_6_1_b(p):
    return _t_nv(p) / units.us


def ref_6_1_c(p):
    _, ib = _links()
    t = network.ring_allreduce_time_s(
        _msg_6_1(p), p["ranks"], ib, parallelism.ASSUMED_STEP_LATENCY_S["infiniband"]
    )
    return t / units.us


def ref_6_1_d(p):
    return network.algorithm_bandwidth_bytes_per_s(_msg_6_1(p), _t_nv(p)) / units.GB


def ref_6_1_e(p):
    algbw = network.algorithm_bandwidth_bytes_per_s(_msg_6_1(p), _t_nv(p))
    return network.bus_bandwidth_bytes_per_s(algbw, p["ranks"]) / units.GB


def ref_6_1_f(p):
    nv, _ = _links()
    bandwidth_part = network.ring_allreduce_time_s(_msg_6_1(p), p["ranks"], nv, 0.0)
    return "latency" if _t_nv(p) - bandwidth_part > bandwidth_part else "bandwidth"


def ref_6_1_g(p):
    return parallelism.tp_comm_time_per_step_s(p["n_layers"], _t_nv(p)) / units.ms


EX_6_1 = Exercise(
    id="6-1",
    title="A tensor-parallel all-reduce",
    level="core",
    intro=(
        "{model} (hidden width {d_model:,}, {n_layers} layers) runs with tensor parallelism over {ranks} H100s. "
        "A step carries {tokens:,} tokens in flight, with BF16 activations. Use the ring all-reduce model with "
        "NVLink at {nvlink_gb_s:.0f} GB/s per direction and a step latency of {t0_nv_us:.0f} µs, or InfiniBand at "
        "{ib_gb_s:.0f} GB/s per direction and {t0_ib_us:.0f} µs: an all-reduce of $S$ bytes over $n$ ranks takes "
        "$2(n-1)/n \\cdot S/\\beta + 2(n-1)\\,t_0$ (`aiinfra.cluster.network.ring_allreduce_time_s`). Each "
        "transformer layer does two such all-reduces in a forward pass."
    ),
    params={
        "model": Param("Llama-3.1-70B", choices=("Llama-3.1-70B", "Llama-3.1-8B", "Qwen3-8B")),
        "tokens": Param(256, choices=(32, 256, 2048)),
        "ranks": Param(8, choices=(4, 8)),
    },
    given=given_6_1,
    parts=(
        Numeric(
            "a",
            "How large is one all-reduce message (the BF16 activation vector of every token in flight)?",
            ref_6_1_a,
            unit="MiB",
            hint="tokens x hidden width x 2 bytes; the message does not shrink with the TP degree",
        ),
        Numeric(
            "b",
            "How long does one all-reduce take over NVLink?",
            ref_6_1_b,
            unit="µs",
            hint="2(n-1)/n x S / beta plus 2(n-1) step latencies",
            slips=("per-direction-vs-both",),
        ),
        Numeric(
            "c",
            "And over InfiniBand, if the same group spanned servers?",
            ref_6_1_c,
            unit="µs",
            hint="same ring formula, the InfiniBand bandwidth and latency",
            slips=("per-direction-vs-both",),
        ),
        Numeric(
            "d",
            "What algorithm bandwidth does the NVLink all-reduce of (b) achieve (message size over time)?",
            ref_6_1_d,
            unit="GB/s",
            hint="message size divided by the time",
            slips=("per-direction-vs-both",),
        ),
        Numeric(
            "e",
            "What bus bandwidth is that (algorithm bandwidth x 2(n-1)/n)?",
            ref_6_1_e,
            unit="GB/s",
            hint="algorithm bandwidth x 2(n-1)/n",
            slips=("per-direction-vs-both",),
        ),
        Choice(
            "f",
            "Over NVLink, is this all-reduce dominated by the latency term or by the bandwidth term?",
            ref_6_1_f,
            options=("latency", "bandwidth"),
            hint="compare 2(n-1) t_0 with 2(n-1)/n x S / beta",
        ),
        Numeric(
            "g",
            "How much time does one forward pass spend in TP all-reduces over NVLink, if none overlaps "
            "compute?",
            ref_6_1_g,
            unit="ms",
            hint="two all-reduces per layer",
        ),
    ),
    discussion=(
        "The NVLink all-reduce takes {b:.1f} µs and the InfiniBand one {c:.1f} µs. A bus bandwidth of {e:.0f} GB/s "
        "is the number to compare with the link's per-direction peak; the algorithm bandwidth {d:.0f} GB/s never "
        "reaches it for more than one rank."
    ),
)

# ---------------------------------------------------------------------------
# 6-2  Power of a cluster, and the PUE double count
# ---------------------------------------------------------------------------


def given_6_2(p):
    dgx = hardware.DGX_H100
    return {
        "tdp_w": hardware.gpu("H100 SXM").tdp_watts,
        "server_kw": dgx.max_power_watts / units.KILO,
        "server_gpus": dgx.n_gpus,
        "home_kwh": hierarchy.HOUSEHOLD_KWH_PER_YEAR,
        "home_w": hierarchy.household_average_power_w(),
    }


def _server_w(p):
    return hierarchy.watts_per_gpu_at_server(p["server_kw"] * units.KILO, p["server_gpus"])


def ref_6_2_a(p):
    return cluster.cluster_power_w(p["gpus"], p["tdp_w"], 1.0) / units.MEGA


def ref_6_2_b(p):
    return cluster.cluster_power_w(p["gpus"], _server_w(p), p["pue"]) / units.MEGA


def ref_6_2_c(p):
    return cluster.cluster_power_w(1, _server_w(p), p["pue"]) / units.KILO


def ref_6_2_d(p):
    all_in = cluster.cluster_power_w(1, _server_w(p), p["pue"])
    double = cluster.cluster_power_w(p["gpus"], all_in, p["pue"])
    right = cluster.cluster_power_w(p["gpus"], all_in, 1.0, convention="all-in")
    return (double - right) / units.MEGA


def ref_6_2_e(p):
    return (
        hierarchy.households_equivalent(cluster.cluster_power_w(p["gpus"], _server_w(p), p["pue"]))
        / units.KILO
    )


EX_6_2 = Exercise(
    id="6-2",
    title="Cluster power, and the PUE trap",
    level="core",
    intro=(
        "A cluster has {gpus:,} H100 GPUs ({tdp_w:.0f} W each). They sit in DGX H100 servers that draw up to "
        "{server_kw:.1f} kW for {server_gpus} GPUs. The facility's PUE is {pue}. An average U.S. home uses "
        "{home_kwh:,.0f} kWh a year, {home_w:,.0f} W on average."
    ),
    params={
        "gpus": Param(16384, choices=(8192, 16384, 24576)),
        "pue": Param(1.2, choices=(1.1, 1.2, 1.4)),
    },
    given=given_6_2,
    parts=(
        Numeric(
            "a",
            "What do the GPU chips alone draw, at their rated power?",
            ref_6_2_a,
            unit="MW",
            hint="GPUs x TDP, no PUE: this is neither IT nor facility power",
        ),
        Numeric(
            "b",
            "What does the facility draw, starting from the server power?",
            ref_6_2_b,
            unit="MW",
            hint="GPUs x (server power / GPUs per server) x PUE",
            slips=(node_slip("server_gpus"),),
        ),
        Numeric(
            "c",
            "What is the 'all-in' power per GPU (its share of the server's power, at the facility)?",
            ref_6_2_c,
            unit="kW",
            hint="server power per GPU x PUE",
        ),
        Numeric(
            "d",
            "Find the flaw: a planning sheet takes the all-in figure of (c) and multiplies the cluster "
            "total by PUE again. By how much does it overstate the facility power?",
            ref_6_2_d,
            unit="MW",
            hint="all-in already contains the PUE; the error is the extra factor",
        ),
        Numeric(
            "e",
            "How many average U.S. homes draw as much as the facility of (b)?",
            ref_6_2_e,
            unit="thousand homes",
            hint="divide the facility power by one home's average power",
        ),
        Free(
            "f",
            "Name the three boundaries at which per-GPU power can be quoted, and say which of them PUE "
            "multiplies.",
            sample=(
                "The chip ({tdp_w:.0f} W, its rated board power), the server (IT power: the server's draw "
                "shared among its GPUs, including CPUs, NICs, switches and fans) and the facility (IT power x PUE). PUE "
                "multiplies IT power only; a figure already quoted at the facility boundary must not be "
                "multiplied again, which is the {d:.1f} MW error of part (d)."
            ),
        ),
    ),
    discussion="The chips are {a:.1f} MW of a {b:.1f} MW facility: the rest is servers, network and cooling.",
)

# ---------------------------------------------------------------------------
# 6-3  Find the flaw: stretching tensor parallelism across servers
# ---------------------------------------------------------------------------

MODEL_6_3 = "Llama-3.1-70B"


def given_6_3(p):
    nv, ib = _links()
    m = models.load(MODEL_6_3)
    d = deployment.Deployment(m, "H100 SXM")
    return {
        "model": MODEL_6_3,
        "nvlink_gb_s": nv / units.GB,
        "ib_gb_s": ib / units.GB,
        "kv_heads": m.n_kv_heads,
        "weights_gb": d.weight_bytes_read / units.GB,
        "kv_kib": d.kv_bytes_per_token / units.KiB,
        "hbm_tb_s": d.gpu.memory_bandwidth_bytes_per_s / units.TB,
        "d_model": m.hidden_size,
        "layers": m.n_layers,
        "t0_nv_us": parallelism.ASSUMED_STEP_LATENCY_S["nvlink"] / units.us,
        "t0_ib_us": parallelism.ASSUMED_STEP_LATENCY_S["infiniband"] / units.us,
    }


def _read(p, tp):
    """Memory-bound read time of one decode step with tensor parallelism ``tp``.

    The weights split ``tp`` ways. The KV cache splits by key/value head, and a
    head cannot be cut: beyond ``n_kv_heads`` ranks each head (and its cache)
    is replicated, so every GPU still reads 1 / n_kv_heads of the cache.
    """
    d = deployment.Deployment(MODEL_6_3, "H100 SXM")
    kv_shards = min(tp, d.model.n_kv_heads)
    per_gpu = d.weight_bytes_read / tp + p["batch"] * d.kv_bytes(p["context"]) / kv_shards
    return roofline.memory_time_s(per_gpu, d.gpu.memory_bandwidth_bytes_per_s)


def _comm(p, n, bw, t0):
    m = models.load(MODEL_6_3)
    msg = parallelism.tp_allreduce_message_bytes(p["batch"], m.hidden_size, 2)
    return parallelism.tp_comm_time_per_step_s(m.n_layers, network.ring_allreduce_time_s(msg, n, bw, t0))


def ref_6_3_a(p):
    return _read(p, 8) / units.ms


def ref_6_3_b(p):
    return _read(p, 16) / units.ms


def ref_6_3_c(p):
    nv, _ = _links()
    return _comm(p, 8, nv, parallelism.ASSUMED_STEP_LATENCY_S["nvlink"]) / units.ms


def ref_6_3_d(p):
    _, ib = _links()
    return _comm(p, 16, ib, parallelism.ASSUMED_STEP_LATENCY_S["infiniband"]) / units.ms


def _slip_6_3_b(p):
    """Part (b) with the KV cache split 16 ways, as if a KV head could be cut in two."""
    d = deployment.Deployment(MODEL_6_3, "H100 SXM")
    per_gpu = (d.weight_bytes_read + p["batch"] * d.kv_bytes(p["context"])) / 16
    return roofline.memory_time_s(per_gpu, d.gpu.memory_bandwidth_bytes_per_s) / units.ms


def ref_6_3_e(p):
    t8 = ref_6_3_a(p) + ref_6_3_c(p)
    t16 = ref_6_3_b(p) + ref_6_3_d(p)
    return "TP 8 in one server" if t8 <= t16 else "TP 16 across two servers"


EX_6_3 = Exercise(
    id="6-3",
    title="Find the flaw: twice the GPUs, half the step?",
    level="core",
    intro=(
        "A team serves {model} in BF16 at batch {batch} with {context:,}-token contexts on one 8-GPU H100 server "
        "(TP 8 over NVLink, {nvlink_gb_s:.0f} GB/s per direction, {t0_nv_us:.0f} µs per ring step). They propose TP 16 across two servers: "
        "'each GPU then streams half as many bytes, so each decode step takes half as long.' The second "
        "server is reached over InfiniBand ({ib_gb_s:.0f} GB/s per direction, {t0_ib_us:.0f} µs per ring step). A step reads {weights_gb:.2f} GB "
        "of weights and {kv_kib:.0f} KiB of KV per cached token of each request, at {hbm_tb_s:.2f} TB/s per GPU. "
        "Tensor parallelism splits the KV cache by key/value head, and the model has {kv_heads} of them per "
        "layer: a head cannot be cut, so beyond {kv_heads} ranks each head and its cache are replicated. Use the "
        "memory-bound decode bound for the reads (each GPU reads its share at its own bandwidth), the ring "
        "all-reduce model of exercise 6-1 for the communication (two "
        "all-reduces per layer, {layers} layers, messages of batch x {d_model:,} x 2 bytes), and assume nothing "
        "overlaps."
    ),
    params={
        "batch": Param(16, choices=(1, 16, 64)),
        "context": Param(4096, choices=(2048, 4096)),
    },
    given=given_6_3,
    parts=(
        Numeric(
            "a",
            "Lower bound on the read time of one decode step with TP 8?",
            ref_6_3_a,
            unit="ms",
            hint="weights plus every request's KV, over 8 GPUs' HBM bandwidth",
            slips=(node_slip(8),),
        ),
        Numeric(
            "b",
            "And with TP 16?",
            ref_6_3_b,
            unit="ms",
            hint="the weights split 16 ways, the KV cache only as many ways as there are KV heads",
            slips=(
                Slip(
                    "kv-heads-split",
                    "the KV cache split 16 ways? A key/value head cannot be cut, so the "
                    "cache splits at most as many ways as the model has KV heads per layer.",
                    value=_slip_6_3_b,
                ),
            ),
        ),
        Numeric(
            "c",
            "TP all-reduce time per step with TP 8 over NVLink?",
            ref_6_3_c,
            unit="ms",
            hint="2L all-reduces of batch x d x 2 bytes over an 8-rank ring",
        ),
        Numeric(
            "d",
            "TP all-reduce time per step with TP 16, the ring crossing InfiniBand?",
            ref_6_3_d,
            unit="ms",
            hint="a 16-rank ring runs at the speed of its slowest link, InfiniBand",
        ),
        Choice(
            "e",
            "Which layout gives the shorter decode step?",
            ref_6_3_e,
            options=("TP 8 in one server", "TP 16 across two servers"),
            hint="add read time and communication time for each",
        ),
        Free(
            "f",
            "What is wrong with the team's estimate, and what would you do with the second server instead?",
            sample=(
                "The estimate assumes every byte splits 16 ways. The weights do, but the KV cache cannot "
                "split beyond the model's {kv_heads} KV heads, so the read time falls only from {a:.2f} to "
                "{b:.2f} ms. Worse, every layer's all-reduce now crosses InfiniBand: {d:.2f} ms per step "
                "instead of {c:.2f} ms. Use the second "
                "server as a data-parallel replica: it doubles the users served at the same step time, "
                "with no traffic between the servers."
            ),
        ),
    ),
)

# ---------------------------------------------------------------------------
# 6-4  Pipeline bubbles and what the next doubling buys
# ---------------------------------------------------------------------------


def _default(fn, name):
    """The library's default calibration of an MFU model (stated in the exercise, never retyped)."""
    return inspect.signature(fn).parameters[name].default


def given_6_4(p):
    big = 32768
    return {
        "mfu_one": cluster.mfu_log2_model(1) * 100,
        "mfu_big": cluster.mfu_log2_model(big) * 100,
        "big": big,
        "m1": _default(cluster.mfu_log2_model, "mfu_at_one"),
        "d_drop": _default(cluster.mfu_log2_model, "drop_per_doubling"),
        "k_comm": _default(cluster.mfu_comm_fraction_model, "comm_per_doubling"),
    }


def ref_6_4_a(p):
    return parallelism.pipeline_bubble_fraction(p["stages"], p["microbatches"]) * 100


def ref_6_4_b(p):
    return float(parallelism.microbatches_for_bubble(p["stages"], p["target_bubble_pct"] / 100))


def ref_6_4_c(p):
    return cluster.mfu_log2_model(p["gpus"]) * 100


def ref_6_4_d(p):
    before = cluster.mfu_log2_model(p["gpus"])
    after = cluster.mfu_log2_model(2 * p["gpus"])
    return parallelism.useful_compute_ratio(before, after, 2.0)


def ref_6_4_e(p):
    before = cluster.mfu_comm_fraction_model(p["gpus"])
    after = cluster.mfu_comm_fraction_model(2 * p["gpus"])
    return parallelism.useful_compute_ratio(before, after, 2.0)


EX_6_4 = Exercise(
    id="6-4",
    title="Pipeline bubbles and the next doubling",
    level="extension",
    intro=(
        "A training job uses {stages} pipeline stages and {microbatches} micro-batches per step, on a cluster "
        "of {gpus:,} GPUs. Use the chapter's two MFU models with their default calibration, both {mfu_one:.0f}% "
        "on one GPU and {mfu_big:.0f}% at {big:,} GPUs: the log2 model $\\mathrm{{MFU}}(G) = m_1 - d\\log_2 G$ "
        "and the communication-fraction model $\\mathrm{{MFU}}(G) = m_1 / (1 + k\\log_2 G)$, with "
        "$m_1$ = {m1}, $d$ = {d_drop} and $k$ = {k_comm} (`aiinfra.cluster.scale.mfu_log2_model` and "
        "`mfu_comm_fraction_model`)."
    ),
    params={
        "stages": Param(8, choices=(4, 8, 16)),
        "microbatches": Param(16, choices=(8, 16, 32)),
        "target_bubble_pct": Param(5.0),
        "gpus": Param(4096, choices=(1024, 4096, 8192)),
    },
    given=given_6_4,
    parts=(
        Numeric(
            "a",
            "What share of each step does a stage sit idle in the bubble?",
            ref_6_4_a,
            unit="%",
            hint="(p-1)/(m+p-1)",
        ),
        Numeric(
            "b",
            "How many micro-batches bring the bubble to {target_bubble_pct}% or less?",
            ref_6_4_b,
            unit="micro-batches",
            rel_tol=0.0,
            abs_tol=0.5,
            hint="solve (p-1)/(m+p-1) <= f for m and round up",
        ),
        Numeric(
            "c",
            "What MFU does the log2 model give at {gpus:,} GPUs?",
            ref_6_4_c,
            unit="%",
            hint="MFU falls by a fixed number of points per doubling of the cluster",
        ),
        Numeric(
            "d",
            "Doubling the cluster doubles the bill. How many times the useful compute does it buy under "
            "the log2 model?",
            ref_6_4_d,
            unit="x",
            hint="2 x MFU(2G) / MFU(G)",
        ),
        Numeric(
            "e",
            "And under the communication-fraction model?",
            ref_6_4_e,
            unit="x",
            hint="2 x MFU(2G) / MFU(G) with MFU(G) = m_1 / (1 + k log2 G)",
        ),
    ),
    discussion=(
        "More micro-batches shrink the bubble but need a larger global batch. The doubling buys {d:.2f}x "
        "(log2) or {e:.2f}x (communication fraction): less than 2x either way."
    ),
)

# ---------------------------------------------------------------------------
# 6-5  Design: a tensor-parallel degree and a batch for a TPOT target
# ---------------------------------------------------------------------------

MODEL_6_5 = "Llama-3.1-70B"
TP_SIZES_6_5 = (1, 2, 4, 8)


@functools.cache
def _plan_6_5(gpu, users, tpot_ms, context):
    """The calibrated capacity plan over the TP sizes: FP8 weights and arithmetic, all-reduces included."""
    d = deployment.Deployment(MODEL_6_5, gpu, weight_precision="fp8", compute_precision="fp8")
    return predict.plan(d, users, tpot_ms * units.ms, context, replica_sizes=TP_SIZES_6_5)


def _p65(p):
    return _plan_6_5(p["gpu"], p["users"], p["tpot_ms"], p["context"])


def given_6_5(p):
    g = hardware.gpu(p["gpu"])
    m = models.load(MODEL_6_5)
    return {
        "model": MODEL_6_5,
        "mem_gb": g.memory_bytes / units.GB,
        "link": g.scaleup_link,
        "link_gb_s": g.scaleup_bytes_per_s_per_direction / units.GB,
        "kv_heads": m.n_kv_heads,
        "sizes": ", ".join(str(t) for t in TP_SIZES_6_5),
    }


def ref_6_5_a(p):
    return str(_p65(p).gpus_per_replica)


def ref_6_5_b(p):
    return float(_p65(p).users_per_replica)


def ref_6_5_c(p):
    return float(_p65(p).gpus_total)


def ref_6_5_d(p):
    plan = _p65(p)
    tok_s = decode.tokens_per_s_aggregate(plan.users_per_replica, plan.step_time_s) * plan.replicas
    return capacity.cost_per_million_tokens(p["usd_per_gpu_hour"], tok_s / plan.gpus_total)


EX_6_5 = Exercise(
    id="6-5",
    title="Design: a tensor-parallel degree and a batch for a TPOT target",
    level="core",
    intro=(
        "You serve {model} with FP8 weights and FP8 arithmetic on {gpu} GPUs ({mem_gb:.0f} GB each, joined by "
        "{link} at {link_gb_s:.0f} GB/s per direction) to {users:,} concurrent users, each holding "
        "{context:,} tokens of context, at a TPOT of at most {tpot_ms} ms. A GPU-hour costs "
        "\\${usd_per_gpu_hour:.2f} (an assumed price). Each replica is one tensor-parallel group of {sizes} "
        "GPUs (the model has {kv_heads} KV heads); the replicas share the users evenly. Use the calibrated "
        "capacity plan, `aiinfra.predict.plan`, over those sizes: it checks memory first (90 % of it for "
        "weights and caches), then adds to every decode step a fixed cost per layer and the two all-reduces "
        "per layer of the group, timed as engines run them, and keeps the fewest GPUs. It leaves prefill "
        "out. This is the prediction, not the roofline bound, because the decision is whether users get "
        "their TPOT."
    ),
    params={
        "gpu": Param("H100 SXM", choices=("H100 SXM", "H200 SXM")),
        "users": Param(1000),
        "context": Param(8192),
        "tpot_ms": Param(30, choices=(30, 50)),
        "usd_per_gpu_hour": Param(2.5, choices=(2.5, 3.5)),
    },
    given=given_6_5,
    parts=(
        Choice(
            "a",
            "Which tensor-parallel degree gives the cheapest fleet?",
            ref_6_5_a,
            options=tuple(str(t) for t in TP_SIZES_6_5),
            hint="for each size: users per replica (memory, bandwidth, compute, fixed cost and all-reduces), "
            "then replicas = ceil(users / that); compare GPUs in total",
        ),
        Numeric(
            "b",
            "How many users (the decode batch) does each replica of that size carry?",
            ref_6_5_b,
            unit="users",
            rel_tol=0.0,
            abs_tol=1.0,
            hint="the users spread evenly over the replicas the plan needs",
        ),
        Numeric(
            "c",
            "How many GPUs does the fleet need?",
            ref_6_5_c,
            unit="GPUs",
            rel_tol=0.0,
            abs_tol=1.0,
            hint="replicas times the group size",
        ),
        Numeric(
            "d",
            "What does a million output tokens cost on that fleet?",
            ref_6_5_d,
            unit="$",
            rel_tol=0.02,
            hint="fleet tokens per second = replicas x users per replica / predicted step time; price per "
            "GPU-second over tokens per second per GPU, times a million",
        ),
        Free(
            "e",
            "Explain the choice: why does the plan not take one GPU per replica, and what stops ever wider "
            "groups from always winning?",
            sample=(
                "Every replica holds a full copy of the weights, so narrow replicas spend most of their memory "
                "on weights and keep little room for caches: few users fit, and many replicas are needed. "
                "A wider group divides the weights, so more memory holds caches and its summed bandwidth reads "
                "them faster. Against that, every layer pays two all-reduces whose time grows with the group "
                "and does not shrink with the step, and the KV heads ({kv_heads}) cap useful tensor "
                "parallelism. Here TP {a} with {b:.0f} users per replica needs {c:.0f} GPUs."
            ),
            rubric=(
                (
                    1,
                    "Memory: each replica stores the weights once, so a wider group frees memory for caches "
                    "and holds more users per GPU; narrow groups are capacity-bound.",
                ),
                (
                    1,
                    "Communication: two all-reduces per layer per step add latency that does not shrink with "
                    "the group, and the KV heads cap the degree, so past some width the TPOT target bites "
                    "(or the gain per GPU vanishes).",
                ),
            ),
        ),
    ),
    discussion=(
        "The cost of a token is the price of a GPU-hour over the tokens it produces, so the cheapest degree is "
        "the one that puts the most users on each GPU within the target. Wider groups buy cache memory; their "
        "all-reduces spend part of the TPOT budget."
    ),
)

EXERCISES = (EX_6_1, EX_6_2, EX_6_3, EX_6_4, EX_6_5)
