"""Chapter 6's tables: the hierarchy, all-reduce regimes, the cluster at scale, power, reported runs."""

from __future__ import annotations

from aiinfra import calibration, compute, memory, roofline, units
from aiinfra.book.tables import markdown_table
from aiinfra.catalog import hardware, models, reference
from aiinfra.cluster import network as net
from aiinfra.cluster import parallelism as par
from aiinfra.cluster import sharding as sh
from aiinfra.formula import check


def hierarchy_table_markdown(levels=None, watts_per_gpu=None, pue=1.0):
    """A Markdown table of the cluster's levels: GPUs, fabric, bandwidth per GPU and (optionally) power.

    ``levels`` defaults to :data:`aiinfra.cluster.hierarchy.LLAMA3_CLUSTER`.
    ``watts_per_gpu`` (IT power at the server boundary) and ``pue`` add a
    facility-power column, ``G * P * PUE`` via :func:`aiinfra.cluster.scale.cluster_power_w`.
    """
    from aiinfra.cluster import hierarchy, scale

    levels = hierarchy.LLAMA3_CLUSTER if levels is None else levels
    rows = [
        "| level | GPUs | joined by | bandwidth per GPU, one direction |"
        + (" facility power |" if watts_per_gpu is not None else ""),
        "|---|---:|---|---:|" + ("---:|" if watts_per_gpu is not None else ""),
    ]
    for lv in levels:
        row = f"| {lv.name} | {lv.gpus:,} | {lv.fabric} | {units.fmt_rate_bytes(lv.bytes_per_s_per_gpu)} |"
        if watts_per_gpu is not None:
            row += f" {units.fmt_power(scale.cluster_power_w(lv.gpus, watts_per_gpu, pue))} |"
        rows.append(row)
    return "\n".join(rows)


def allreduce_regimes_table_markdown(n_ranks, link_bytes_per_s, sizes_bytes) -> str:
    """One row per measured all-reduce regime: latency, bus bandwidth and its time at each message size.

    :data:`aiinfra.cluster.network.ALLREDUCE_REGIMES` over ``n_ranks`` GPUs
    whose scale-up link carries ``link_bytes_per_s`` per direction; the
    fastest regime at each size is in bold (chapter 6).
    """
    from aiinfra.cluster import network

    regs = network.ALLREDUCE_REGIMES.values()
    best = [network.fastest_allreduce_regime(s, n_ranks, link_bytes_per_s) for s in sizes_bytes]
    rows = []
    for r in regs:
        times = [network.regime_allreduce_time_s(s, n_ranks, link_bytes_per_s, r) for s in sizes_bytes]
        cells = [
            f"**{units.fmt_time(t)}**" if r.name == b else units.fmt_time(t) for t, b in zip(times, best)
        ]
        rows.append(
            [
                r.name.replace("_", " "),
                units.fmt_time(r.latency_s),
                units.fmt_rate_bytes(r.link_fraction * link_bytes_per_s),
                *cells,
            ]
        )
    heads = [
        "regime",
        "latency",
        "link bandwidth sustained",
        *(f"{units.fmt_bytes(s, 'KiB' if s < 2**20 else 'MiB', 0)}" for s in sizes_bytes),
    ]
    return markdown_table(heads, rows)


def tp_allreduce_table_markdown(model, tensor_parallel, links, tokens=(1, 64, 4096)) -> str:
    """Tensor-parallel all-reduces of ``model`` over ``tensor_parallel`` GPUs, one row per token count.

    ``links`` is a sequence of ``(name, bytes_per_s_per_direction, step_latency_s)``;
    each link gets two columns: one ring all-reduce of the BF16 message
    (:func:`aiinfra.cluster.network.ring_allreduce_time_s`) and the ``2L`` of
    a whole forward pass (:func:`aiinfra.cluster.parallelism.tp_comm_time_per_step_s`).
    """
    from aiinfra.catalog import models
    from aiinfra.cluster import network, parallelism

    m = models.load(model)
    t = check("tensor_parallel", tensor_parallel, "int>=1", scalar=True)
    links = list(links)
    headers = (
        ["tokens in flight", "message $S$"]
        + [f"one all-reduce, {name}" for name, _, _ in links]
        + [f"whole pass, {name}" for name, _, _ in links]
    )
    rows = []
    for n in tokens:
        size = parallelism.tp_allreduce_message_bytes(n, m.hidden_size)
        one = [network.ring_allreduce_time_s(size, t, bw, t0) for _, bw, t0 in links]
        rows.append(
            [
                f"{n:,}",
                units.fmt_bytes(size, "MiB" if size >= units.MiB else "KiB"),
                *(units.fmt_time(x) for x in one),
                *(units.fmt_time(parallelism.tp_comm_time_per_step_s(m.n_layers, x)) for x in one),
            ]
        )
    return markdown_table(headers, rows)


def cluster_scale_table_markdown(sizes=(1, 8, 512, 8192, 32768), assumption=None) -> str:
    """Peak compute, MFU (log2 model), realized compute and all-in power of a cluster at each size.

    ``assumption`` defaults to :data:`aiinfra.catalog.reference.THECATCH_CLUSTER`
    (1 PFLOP/s dense and 1.4 kW all-in per GPU); the MFU is
    :func:`aiinfra.cluster.scale.mfu_log2_model` with its default calibration.
    """
    from aiinfra.cluster import hierarchy, scale

    a = reference.THECATCH_CLUSTER if assumption is None else assumption
    rows = []
    for g in sizes:
        mfu = scale.mfu_log2_model(g)
        power = scale.cluster_power_w(g, a.watts_per_gpu, 1.0, convention=a.power_convention)
        rows.append(
            [
                f"{g:,}",
                units.fmt_flops_rate(scale.peak_flops_per_s(g, a.flops_per_s_per_gpu)),
                f"{mfu:.0%}",
                units.fmt_flops_rate(scale.realized_flops_per_s(g, a.flops_per_s_per_gpu, mfu)),
                units.fmt_power(power),
                f"{hierarchy.households_equivalent(power):,.0f}",
            ]
        )
    return markdown_table(
        [
            "GPUs",
            "peak compute",
            "MFU (log2 model)",
            "useful compute",
            "power (all-in)",
            "average U.S. homes",
        ],
        rows,
    )


def system_power_table_markdown(systems=None) -> str:
    """Published power of GPU systems (:data:`aiinfra.catalog.reference.SYSTEM_POWER`) and its share per GPU."""
    from aiinfra.cluster import hierarchy

    systems = reference.SYSTEM_POWER if systems is None else systems
    rows = [
        [
            p.system,
            f"{p.gpus:,}",
            units.fmt_power(p.watts),
            units.fmt_power(hierarchy.watts_per_gpu_at_server(p.watts, p.gpus), digits=3),
            p.boundary,
            "vendor document" if p.confirmed else "press or analyst, unconfirmed",
        ]
        for p in systems
    ]
    return markdown_table(
        ["system", "GPUs", "published power", "per GPU", "what it covers", "status"], rows, align="lrrrll"
    )


def reported_runs_table_markdown(runs=None) -> str:
    """Published large training runs (:data:`aiinfra.catalog.reference.REPORTED_TRAINING_RUNS`): size, layout, MFU."""
    runs = reference.REPORTED_TRAINING_RUNS if runs is None else runs
    rows = [
        [r.name, f"{r.gpus:,}", r.layout, f"{r.tflops_per_gpu:.0f}", f"{r.mfu:.0%}", r.source] for r in runs
    ]
    return markdown_table(
        ["run", "GPUs", "layout", "TFLOP/s per GPU (dense BF16)", "MFU reported", "source"],
        rows,
        align="lrlrrl",
    )


def inference_across_chips_values(
    model_name: str = "DeepSeek-V3",
    context_tokens: int = 8192,
    batch: int = 64,
    nvl_gpus: int = 72,
    prefill_tokens: int = 4096,
    skew: float = 0.5,
    redundant_experts: int = 32,
    pipeline_stages: int = 2,
) -> dict:
    """Every number chapter 6's page 4 ("Inference across many chips") glues, as ``name: (value, spec)``.

    ``model_name`` decoding at ``context_tokens`` over an NVL72 of ``nvl_gpus`` GB200s (and over an
    8-GPU H200 HGX board), messages worked for ``batch`` tokens, a prefill of ``prefill_tokens``, Zipf
    expert loads of exponent ``skew`` with ``redundant_experts`` extra slots, and ``pipeline_stages``
    stages. The page calls ``glue("ch06_x", **values)``.
    """
    M, CTX, B, N, PRE, SKEW, RED, PP = (
        models.load(model_name),
        context_tokens,
        batch,
        nvl_gpus,
        prefill_tokens,
        skew,
        redundant_experts,
        pipeline_stages,
    )
    gb, h2, ib = (
        hardware.gpu("GB200"),
        hardware.gpu("H200 SXM"),
        hardware.link("ndr").bytes_per_s_per_direction,
    )
    nv, nvh = gb.scaleup_bytes_per_s_per_direction, h2.scaleup_bytes_per_s_per_direction
    U, E, K, D = (
        calibration.load().parameters.memory_utilization,
        M.n_routed_experts,
        M.n_experts_per_token,
        M.hidden_size,
    )

    def a2a(t, b, g, r="nvlink"):
        return net.all_to_all_time_s(net.moe_all_to_all_bytes(t, D, K, b), g, r)

    def layer(t, g, r="nvlink"):  # dispatch (FP8) + combine (BF16)
        return a2a(t, 1.0, g, r) + a2a(t, 2.0, g, r)

    ar, loads, kv = (
        par.tp_allreduce_message_bytes(N * B, D),
        sh.zipf_expert_loads(E, SKEW),
        memory.kv_bytes_per_request(M, CTX),
    )
    run = {}  # the NVL72 and the HGX board: GPUs, batch per GPU, the bound step and the predicted one
    for k, g, n in (("nvl", "GB200", N), ("hgx", "H200 SXM", 8)):
        b = sh.ep_max_batch_per_gpu(M, g, n, CTX, memory_utilization=U)
        run[k] = (
            n,
            b,
            sh.ep_decode_step(M, g, n, b, CTX),
            sh.ep_decode_step(M, g, n, b, CTX, prediction=True),
        )
    cases = {
        f"{k}_{name}": v
        for k, (n, b, bd, pr) in run.items()
        for name, v in (
            ("w", (sh.ep_weight_bytes_per_gpu(M, n), "B GB 1")),
            ("b", b),
            ("all", (b * n, ",")),
            ("bound", (bd.time_s, "s ms 1")),
            ("pred", (pr.time_s, "s ms 1")),
            ("user", (1 / pr.time_s, ".0f")),
            ("gpu", (b / pr.time_s, ",.0f")),
            ("bw", bd.waits),
            ("pw", pr.waits),
            ("net", (pr.network_s, "s ms 1")),
            ("net_share", (pr.network_s / pr.time_s, ".0%")),
        )
    }
    rate = {k: b / pr.time_s for k, (n, b, bd, pr) in run.items()}
    return dict(
        E=E,
        k=K,
        d=(D, ","),
        L=M.n_layers,
        moe=len(M.moe_layers),
        nv=(nv, "B/s GB 0"),
        nv2=(2 * nv, "B/s TB 1"),
        nvh=(nvh, "B/s GB 0"),
        ib=(ib, "B/s GB 0"),
        b=B,
        n=N,
        ctx=(CTX, ","),
        one=(net.moe_all_to_all_bytes(1, D, K, 1.0), "B KB 0"),
        one_t=(a2a(1, 1.0, nv), "s us 1"),
        lat=(net.ALL_TO_ALL_REGIMES["nvlink"].latency_s, "s us 1"),
        ep_bytes=(net.moe_all_to_all_bytes(B, D, K, 3.0), "B MB 1"),
        ep_t=(layer(B, nv), "s us 0"),
        ep_bound=(net.moe_all_to_all_bytes(B, D, K, 3.0) / nv, "s us 0"),
        ep_rdma=(layer(B, ib, "rdma"), "s us 0"),
        rdma_x=(layer(B, ib, "rdma") / layer(B, nv), ".0f"),
        ar=(ar, "B MB 0"),
        ar_n=(par.tp_allreduce_count(M.n_layers), ".0f"),
        ar_t=(net.tp_allreduce_time_s(ar, N, nv), "s us 0"),
        ar_step=(par.tp_comm_time_per_step_s(M.n_layers, net.tp_allreduce_time_s(ar, N, nv)), "s ms 1"),
        pp=(par.pp_boundary_bytes(B, D, PP), "B KB 0"),
        stages=PP,
        pre=(PRE, ","),
        u=(U, ".0%"),
        calls=2 * len(M.moe_layers),
        slots=E + RED,
        per=(E + RED) // N,
        lo=E // N,
        w_e=(M.moe_intermediate_size, ","),
        pre_nv=(layer(PRE, nv), "s ms 2"),
        pre_ib=(layer(PRE, ib, "rdma"), "s ms 1"),
        pre_fl=(
            roofline.compute_time_s(compute.prefill_flops(M, PRE) / M.n_layers, gb.dense_flops_per_s("fp8")),
            "s ms 2",
        ),
        kv=(kv, "B MB 0"),
        tp_kv=(memory.kv_bytes_per_gpu(kv, N, 1), "B MB 0"),
        tp_cap=(sh.tp_max_batch(M, "GB200", N, CTX, memory_utilization=U), ","),
        tp8_cap=sh.tp_max_batch(M, "H200 SXM", 8, CTX, memory_utilization=U),
        skew=SKEW,
        red=RED,
        hot=(loads[0] * K, ".0%"),
        imb0=(sh.ep_load_imbalance(loads, N), ".2f"),
        imb=(sh.ep_load_imbalance(loads, N, RED), ".2f"),
        flat=(sh.ep_load_imbalance(sh.zipf_expert_loads(E, 0), N), ".3f"),
        ratio=(rate["nvl"] / rate["hgx"], ".1f"),
        **cases,
    )
