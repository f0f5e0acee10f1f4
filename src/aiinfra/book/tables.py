"""The book's computed tables, rendered as Markdown (MyST) from the catalog and the formulas.

A chapter shows a table with ``Markdown(tables.some_table_markdown(...))``; the
numbers come from :mod:`aiinfra` and the prose cells from the JSON tables of
:mod:`aiinfra.catalog.reference`, so nothing printed can drift from the code.
:func:`markdown_table` is the small pandas-free renderer for any other table.

Units: capacities in decimal GB (1e9 B) unless a column says GiB/KiB/MiB;
bandwidth in decimal TB/s or GB/s per direction; compute is the **dense** peak,
never the 2:4-sparse figure.
"""
from __future__ import annotations

from dataclasses import dataclass
from typing import Sequence

from aiinfra import roofline, units
from aiinfra.catalog import hardware, reference
from aiinfra.formula import check

__all__ = [
    "markdown_table",
    "GpuRow",
    "gpu_row",
    "gpu_quick_reference_markdown",
    "server_link_table_markdown",
    "generations_table_markdown",
    "hierarchy_table_markdown",
    "layer_table_markdown",
    "decode_walk_markdown",
    "scheduler_table_markdown",
    "propagation_table_markdown",
    "latency_table_rows",
    "tp_allreduce_table_markdown",
    "cluster_scale_table_markdown",
    "system_power_table_markdown",
    "tpot_capacity_table_markdown",
    "model_bytes_table_markdown",
    "speculation_table_markdown",
    "capacity_cases_table_markdown",
    "routing_table_markdown",
    "reported_runs_table_markdown",
    "ceilings_table_markdown",
    "build_machine_table_markdown",
]


def markdown_table(headers: Sequence[str], rows: Sequence[Sequence], align: str | None = None) -> str:
    """Render ``rows`` under ``headers`` as a Markdown (MyST) table.

    ``align`` is one character per column: ``l``, ``r`` or ``c`` (default:
    first column left, the others right). Cells are converted with ``str``.
    """
    headers = [str(h) for h in headers]
    if not headers:
        raise ValueError("headers must name at least one column")
    n = len(headers)
    if align is None:
        align = "l" + "r" * (n - 1)
    if not isinstance(align, str) or len(align) != n or set(align) - set("lrc"):
        raise ValueError(f"align must be a string of {n} characters from 'l', 'r', 'c', got {align!r}")
    marks = {"l": ":--", "r": "--:", "c": ":-:"}
    lines = ["| " + " | ".join(headers) + " |", "|" + "|".join(marks[a] for a in align) + "|"]
    for i, row in enumerate(rows):
        cells = [str(c) for c in row]
        if len(cells) != n:
            raise ValueError(f"rows[{i}] must have {n} cells, got {len(cells)}")
        lines.append("| " + " | ".join(c.replace("|", "\\|") for c in cells) + " |")
    return "\n".join(lines)


def _cell(text: str) -> str:
    return text.replace("|", "\\|").replace("\n", " ")


# --------------------------------------------------------------------------------------
# GPUs and links (chapters 1 and 2)
# --------------------------------------------------------------------------------------

@dataclass(frozen=True)
class GpuRow:
    """One column of the GPU quick-reference table (SI units)."""

    name: str
    memory_bytes: float
    bandwidth_bytes_per_s: float
    bf16_dense_flops_per_s: float
    time_to_read_1gb_s: float
    ridge_flops_per_byte: float


def gpu_row(gpu) -> GpuRow:
    """Quick-reference numbers for one catalog GPU.

    ``time_to_read_1gb_s`` is 1 GB (1e9 B) over the peak memory bandwidth;
    ``ridge_flops_per_byte`` is the dense BF16 peak over that bandwidth
    (the arithmetic intensity at which a kernel stops being memory-bound).
    """
    for attr in ("name", "memory_bytes", "memory_bandwidth_bytes_per_s", "bf16_dense_flops_per_s"):
        if not hasattr(gpu, attr):
            raise ValueError(f"gpu must be an aiinfra.catalog.hardware.GPU (missing {attr!r}), got {gpu!r}")
    bw = check("gpu.memory_bandwidth_bytes_per_s", gpu.memory_bandwidth_bytes_per_s, ">0")
    pi = check("gpu.bf16_dense_flops_per_s", gpu.bf16_dense_flops_per_s, ">0")
    return GpuRow(
        name=gpu.name,
        memory_bytes=check("gpu.memory_bytes", gpu.memory_bytes, ">0"),
        bandwidth_bytes_per_s=bw,
        bf16_dense_flops_per_s=pi,
        time_to_read_1gb_s=roofline.memory_time_s(units.GB, bw),
        ridge_flops_per_byte=roofline.ridge_point_flops_per_byte(pi, bw),
    )


def gpu_quick_reference_markdown(gpus) -> str:
    """The chapter-1 GPU table: one row per GPU, one column per resource.

    Columns: memory (GB), memory bandwidth (TB/s), dense BF16 peak (TFLOP/s),
    time to read 1 GB at peak bandwidth (ms) and the ridge point (FLOP/B).
    A GPU without a dense BF16 peak in the catalog is rejected (ValueError).
    """
    gpus = list(gpus)
    if not gpus:
        raise ValueError("gpus must list at least one GPU")
    rows = [gpu_row(g) for g in gpus]
    table = [
        [
            r.name,
            f"{r.memory_bytes / units.GB:g}",
            f"{r.bandwidth_bytes_per_s / units.TB:.3f}".rstrip("0").rstrip("."),
            f"{r.bf16_dense_flops_per_s / units.TERA:.1f}",
            f"{r.time_to_read_1gb_s / units.ms:.2f}",
            f"{r.ridge_flops_per_byte:.0f}",
        ]
        for r in rows
    ]
    return markdown_table(
        ["GPU", "Memory (GB)", "Bandwidth (TB/s)", "Dense BF16 (TFLOP/s)", "Read 1 GB (ms)", "Ridge (FLOP/B)"], table
    )


def server_link_table_markdown(names=tuple(hardware.SERVER_LINK_ROLES), reference_link: str = "ConnectX-7 400 Gbit/s") -> str:
    """A Markdown table of links: as printed, what the print counted, per direction, x the ``reference_link``.

    Per-direction values are in decimal GB/s (1e9 B/s). The last column is
    each link's bandwidth divided by the reference link's (the NIC by
    default), so the HBM row reads 67x.
    """
    ref = hardware.link(reference_link)
    rows = []
    for x in hardware.server_links(names):
        if not x.full_duplex:
            counted = "shared by reads and writes"
        elif x.bidirectional_in_spec:
            counted = "both directions added"
        else:
            counted = "one direction"
        rows.append([
            x.name,
            hardware.SERVER_LINK_ROLES.get(x.name, x.kind),
            x.raw_spec,
            counted,
            f"{x.bytes_per_s_per_direction / units.GB:,.1f}",
            f"{hardware.ratio(x, ref):,.1f}",
        ])
    return markdown_table(
        ["link", "joins", "as printed", "the printed figure counts", "per direction (GB/s)",
         f"x {ref.name.split(' ')[0]}"],
        rows, align="llllrr",
    )


def generations_table_markdown(names=hardware.GENERATION_GPUS) -> str:
    """One row per generation, units aligned: GB, TB/s, dense TFLOP/s, per-direction NVLink GB/s, FLOP/B, W.

    The 16-bit column is the dense BF16 tensor peak (FP16 for Volta, which has
    no BF16); FP8 is dense too, and "none" before Hopper. The ridge point is
    the 16-bit peak over the memory bandwidth.
    """
    rows = []
    for g in hardware.generations(names):
        fp8 = g.fp8_dense_flops_per_s
        rows.append([
            g.name,
            f"{g.architecture} ({g.year})",
            f"{g.memory_bytes / units.GB:g} {g.memory_type}",
            f"{g.memory_bandwidth_bytes_per_s / units.TB:.2f}",
            f"{g.dense_flops_per_s('fp16') / units.TERA:,.1f}",
            "none" if fp8 is None else f"{fp8 / units.TERA:,.1f}",
            f"{g.scaleup_link}: {g.scaleup_bytes_per_s_per_direction / units.GB:,.0f}",
            f"{g.ridge_flops_per_byte:.0f}",
            f"{g.tdp_watts:,.0f}",
        ])
    return markdown_table(
        ["GPU", "architecture (year)", "memory (GB)", "HBM (TB/s)", "16-bit dense (TFLOP/s)",
         "FP8 dense (TFLOP/s)", "scale-up per direction (GB/s)", "ridge (FLOP/B)", "power (W)"],
        rows, align="llrrrrlrr",
    )


# --------------------------------------------------------------------------------------
# The cluster (chapter 6)
# --------------------------------------------------------------------------------------

def hierarchy_table_markdown(levels=None, watts_per_gpu=None, pue=1.0):
    """A Markdown table of the cluster's levels: GPUs, fabric, bandwidth per GPU and (optionally) power.

    ``levels`` defaults to :data:`aiinfra.cluster.hierarchy.LLAMA3_CLUSTER`.
    ``watts_per_gpu`` (IT power at the server boundary) and ``pue`` add a
    facility-power column, ``G * P * PUE`` via :func:`aiinfra.cluster.scale.cluster_power_w`.
    """
    from aiinfra.cluster import hierarchy, scale

    levels = hierarchy.LLAMA3_CLUSTER if levels is None else levels
    rows = ["| level | GPUs | joined by | bandwidth per GPU, one direction |"
            + (" facility power |" if watts_per_gpu is not None else ""),
            "|---|---:|---|---:|" + ("---:|" if watts_per_gpu is not None else "")]
    for lv in levels:
        row = f"| {lv.name} | {lv.gpus:,} | {lv.fabric} | {units.fmt_rate_bytes(lv.bytes_per_s_per_gpu)} |"
        if watts_per_gpu is not None:
            row += f" {units.fmt_power(scale.cluster_power_w(lv.gpus, watts_per_gpu, pue))} |"
        rows.append(row)
    return "\n".join(rows)


# --------------------------------------------------------------------------------------
# The prose tables of chapters 1 and 2 (data in aiinfra/catalog/data)
# --------------------------------------------------------------------------------------

def _layers_top_down():
    return tuple(reversed(reference.table("layers")))


def layer_table_markdown(top_down: bool = True) -> str:
    """A Markdown table of every layer: what it does, where to look, what to check first.

    ``top_down`` lists the product first (the reading order of chapter 2);
    ``False`` lists the fab first. The ``#`` column numbers the layers from the fab up.
    """
    check("top_down", top_down, "bool")
    layers = reference.table("layers")
    rows = _layers_top_down() if top_down else layers
    out = [
        "| # | layer | what it does | real hardware and software | number to check first | unit | read it with |",
        "|---|---|---|---|---|---|---|",
    ]
    for lay in rows:
        number = layers.index(lay) + 1
        out.append(
            f"| {number} | {_cell(lay.name)} | {_cell(lay.does)} | {_cell(', '.join(lay.software))} | "
            f"{_cell(lay.check_first)} | {_cell(lay.unit)} | {_cell(lay.read_with)} |"
        )
    return "\n".join(out)


def decode_walk_markdown() -> str:
    """A two-column Markdown table: what each layer does in one decode step, product first."""
    out = ["| layer | during one decode step |", "|---|---|"]
    for lay in _layers_top_down():
        out.append(f"| {_cell(lay.name)} | {_cell(lay.in_decode_step)} |")
    return "\n".join(out)


def scheduler_table_markdown() -> str:
    """A Markdown table comparing Slurm and Kubernetes for GPU work."""
    out = [
        "| scheduler | what it allocates | how a job asks for GPUs | all-or-nothing start | built for |",
        "|---|---|---|---|---|",
    ]
    for s in reference.table("schedulers"):
        out.append(
            f"| {s.name} | {_cell(s.unit_of_allocation)} | {_cell(s.how_gpus_are_requested)} | "
            f"{_cell(s.gang_scheduling)} | {_cell(s.built_for)} |"
        )
    return "\n".join(out)


def propagation_table_markdown(link=None) -> str:
    """The shifts table (chapter 1) as Markdown. ``link(n)`` formats a chapter reference (default ``"Ch. n"``)."""
    if link is None:
        def link(c):
            return f"Ch. {c}"
    elif not callable(link):
        raise ValueError(f"link must be a callable taking a chapter number, got {link!r}")
    rows = ["| What changed | Assumption that stops holding | Example | Where |", "|---|---|---|---|"]
    for s in reference.table("shifts"):
        where = ", ".join(link(c) for c in s.chapters) if s.chapters else "beyond this book"
        rows.append(f"| {s.change} | {s.broken_assumption} | {s.example} | {where} |")
    return "\n".join(rows)


def latency_table_rows(unit: str = "ns") -> list[tuple[str, float]]:
    """The 2009 latency table as ``(operation, time)`` rows in ``unit`` ("s", "ms", "us" or "ns"), for display."""
    scale = {"s": 1.0, "ms": units.ms, "us": units.us, "ns": units.ns}
    if unit not in scale:
        raise ValueError(f"unit must be one of {sorted(scale)}, got {unit!r}")
    return [(r.operation, reference.latency_s(r.operation) / scale[unit]) for r in reference.table("latency_2009")]


# --------------------------------------------------------------------------------------
# Chapters 6 and 7: clusters, power and serving
# --------------------------------------------------------------------------------------

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
    headers = ["tokens in flight", "message $S$"] + [f"one all-reduce, {name}" for name, _, _ in links] \
        + [f"whole pass, {name}" for name, _, _ in links]
    rows = []
    for n in tokens:
        size = parallelism.tp_allreduce_message_bytes(n, m.hidden_size)
        one = [network.ring_allreduce_time_s(size, t, bw, t0) for _, bw, t0 in links]
        rows.append([f"{n:,}", units.fmt_bytes(size, "MiB" if size >= units.MiB else "KiB"),
                     *(units.fmt_time(x) for x in one),
                     *(units.fmt_time(parallelism.tp_comm_time_per_step_s(m.n_layers, x)) for x in one)])
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
        rows.append([f"{g:,}", units.fmt_flops_rate(scale.peak_flops_per_s(g, a.flops_per_s_per_gpu)), f"{mfu:.0%}",
                     units.fmt_flops_rate(scale.realized_flops_per_s(g, a.flops_per_s_per_gpu, mfu)),
                     units.fmt_power(power), f"{hierarchy.households_equivalent(power):,.0f}"])
    return markdown_table(["GPUs", "peak compute", "MFU (log2 model)", "useful compute", "power (all-in)",
                           "average U.S. homes"], rows)


def system_power_table_markdown(systems=None) -> str:
    """Published power of GPU systems (:data:`aiinfra.catalog.reference.SYSTEM_POWER`) and its share per GPU."""
    from aiinfra.cluster import hierarchy

    systems = reference.SYSTEM_POWER if systems is None else systems
    rows = [[p.system, f"{p.gpus:,}", units.fmt_power(p.watts),
             units.fmt_power(hierarchy.watts_per_gpu_at_server(p.watts, p.gpus), digits=3), p.boundary,
             "vendor document" if p.confirmed else "press or analyst, unconfirmed"] for p in systems]
    return markdown_table(["system", "GPUs", "published power", "per GPU", "what it covers", "status"], rows,
                          align="lrrrll")


def tpot_capacity_table_markdown(deployment, targets_s, context_tokens) -> str:
    """Users one replica holds at each TPOT target, what binds, its step time and tokens/s there.

    :meth:`aiinfra.deployment.Deployment.max_users` and
    :meth:`~aiinfra.deployment.Deployment.step` at that many users.
    """
    rows = []
    for tpot in targets_s:
        users, limiting = deployment.max_users(tpot, context_tokens)
        if users:
            step = deployment.step(users, context_tokens)
            rows.append([units.fmt_time(tpot, digits=0), f"{users:,}", limiting, units.fmt_time(step.time_s),
                         f"{step.tokens_per_s:,.0f}"])
        else:
            rows.append([units.fmt_time(tpot, digits=0), "0", limiting, "not reachable", "0"])
    return markdown_table(["TPOT target", "users per replica", "what binds", "step time at that load",
                           "tokens/s per replica"], rows, align="rrlrr")


def model_bytes_table_markdown(rows) -> str:
    """Stored and active parameters and the bytes one decode step reads, one row per model.

    ``rows``: ``(model name, precision label, stored bytes, bytes read per token)``;
    the parameter counts come from :mod:`aiinfra.catalog.models`.
    """
    from aiinfra.catalog import models

    out = []
    for name, label, stored, read in rows:
        m = models.load(name)
        out.append([name, label, f"{models.total_params(m) / units.GIGA:,.1f}B",
                    f"{models.active_params(m) / units.GIGA:,.1f}B", units.fmt_bytes(stored), units.fmt_bytes(read)])
    return markdown_table(["model", "weights as stored", "parameters", "active per token", "stored",
                           "read per token, batch 1"], out, align="llrrrr")


def speculation_table_markdown(alphas, gammas, draft_cost_ratio) -> str:
    """Speedup of speculative decoding for each acceptance rate (rows) and draft length (columns)."""
    from aiinfra.serving import speculation

    rows = [[f"{a:.1f}", *(f"{speculation.speculative_speedup(a, g, draft_cost_ratio):.2f}x" for g in gammas)]
            for a in alphas]
    return markdown_table(["acceptance $\\alpha$", *(f"$\\gamma$ = {g}" for g in gammas)], rows)


def capacity_cases_table_markdown(cases, watts_per_gpu, pue, usd_per_gpu_hour) -> str:
    """One row per ``(label, CapacityPlan)``: GPUs, replica size and load, what binds, power and price.

    Power and price come from :func:`aiinfra.serving.capacity.fleet_economics`.
    """
    from aiinfra.serving import capacity

    rows = []
    for label, p in cases:
        e = capacity.fleet_economics(p, watts_per_gpu, pue, usd_per_gpu_hour)
        rows.append([label, f"{p.gpus_total:,}", f"{p.gpus_per_replica}", f"{p.users_per_replica}", p.limiting,
                     units.fmt_power(e.power_w, digits=2), f"${e.usd_per_million_tokens:.2f}"])
    return markdown_table(["case", "GPUs", "GPUs per replica", "users per replica", "binds", "facility power",
                           "$ per million tokens"], rows, align="lrrrlrr")


def routing_table_markdown(result, rate_index) -> str:
    """Each routing policy at one arrival rate of a :class:`aiinfra.serving.routing.RoutingResult`.

    Columns: KV-cache hit rate, mean queueing delay, median and 99th-percentile TTFT.
    """
    from aiinfra.serving import routing

    k = check("rate_index", rate_index, "int>=0", scalar=True)
    if k >= result.rates_per_s.size:
        raise ValueError(f"rate_index must be < {result.rates_per_s.size}, got {rate_index!r}")
    p50, p99 = result.ttft_percentile_s(50)[:, k], result.ttft_percentile_s(99)[:, k]
    rows = [[routing.POLICY_LABELS[p], f"{result.hit_rate[i, k]:.0%}", units.fmt_time(result.mean_queue_s[i, k]),
             units.fmt_time(p50[i]), units.fmt_time(p99[i])] for i, p in enumerate(result.policies)]
    return markdown_table(["policy", "KV-cache hit rate", "mean queueing", "median TTFT", "p99 TTFT"], rows)


def reported_runs_table_markdown(runs=None) -> str:
    """Published large training runs (:data:`aiinfra.catalog.reference.REPORTED_TRAINING_RUNS`): size, layout, MFU."""
    runs = reference.REPORTED_TRAINING_RUNS if runs is None else runs
    rows = [[r.name, f"{r.gpus:,}", r.layout, f"{r.tflops_per_gpu:.0f}", f"{r.mfu:.0%}", r.source] for r in runs]
    return markdown_table(["run", "GPUs", "layout", "TFLOP/s per GPU (dense BF16)", "MFU reported", "source"], rows,
                          align="lrlrrl")


def ceilings_table_markdown(ceilings, gpus=("RTX PRO 6000 Blackwell Workstation", "H100 SXM", "B200")) -> str:
    """This machine's measured ceilings (a :class:`aiinfra.measure.Ceilings`) next to GPUs' dense BF16 datasheet peaks."""
    rows = [["this machine (measured, float32)", units.fmt_rate_bytes(ceilings.bandwidth_bytes_per_s),
             units.fmt_flops_rate(ceilings.flops_per_s), f"{ceilings.ridge_flops_per_byte:,.1f}"]]
    for name in gpus:
        g = hardware.gpu(name)
        pi = g.dense_flops_per_s("bf16")
        rows.append([f"{g.name} (datasheet, dense BF16)", units.fmt_rate_bytes(g.memory_bandwidth_bytes_per_s),
                     units.fmt_flops_rate(pi), f"{roofline.ridge_point_flops_per_byte(pi, g.memory_bandwidth_bytes_per_s):,.0f}"])
    return markdown_table(["machine", "bandwidth", "compute", "ridge (FLOP/B)"], rows)


def build_machine_table_markdown(ceilings, call_s, description) -> str:
    """What chapter 8 measured on the machine that ran it: ceilings, ridge, knee and the cost of one call."""
    from aiinfra import measure

    rows = [("memory bandwidth (best of copy and sum)", units.fmt_rate_bytes(ceilings.bandwidth_bytes_per_s, "GB", 1)),
            ("float32 matrix-multiply rate", units.fmt_flops_rate(ceilings.flops_per_s)),
            ("ridge point", f"{ceilings.ridge_flops_per_byte:.1f} FLOP/B"),
            ("knee of a float32 decode step", f"{measure.predicted_knee_batch(4, ceilings):.1f}"),
            ("one tiny call", units.fmt_time(call_s))]
    return (f"**The build machine** ({description}), measured when this page was built; run the page to see yours:\n\n"
            + markdown_table(["quantity", "measured"], rows))
