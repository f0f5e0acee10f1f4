"""Chapter 6's tables: the hierarchy, all-reduce regimes, the cluster at scale, power, reported runs."""

from __future__ import annotations

from aiinfra import units
from aiinfra.book.tables import markdown_table
from aiinfra.catalog import reference
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
