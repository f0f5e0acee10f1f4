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
    "request_traffic_markdown",
    "step_changes_markdown",
    "request_needs_markdown",
    "batch_comparison_markdown",
    "decode_floor_markdown",
    "link_transfer_markdown",
    "launch_overhead_markdown",
    "mig_profiles_markdown",
    "die_yield_markdown",
    "systolic_batch_markdown",
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
# Chapters 1 and 2: tables of one request, one step and one server
# --------------------------------------------------------------------------------------

def request_traffic_markdown(label: str, traffics: Sequence[dict]) -> str:
    """What one batch-1 request moves, one column per :func:`aiinfra.memory.request_traffic` result.

    Columns are headed by each result's output tokens; weights loaded and KV
    in GB, weights streamed in TB (chapter 1).
    """
    if not traffics:
        raise ValueError("traffics must hold at least one request_traffic result")
    rows = [("Weights loaded onto the card (once per instance)", "weights_loaded", "GB"),
            ("Weights streamed from HBM (once per step)", "weights_streamed", "TB"),
            ("KV cache written (prompt + output)", "kv_written", "GB"),
            ("KV cache read (all steps)", "kv_read", "GB")]
    body = [[name] + [units.fmt_bytes(t[key], unit) for t in traffics] for name, key, unit in rows]
    return markdown_table([label] + [f"{t['steps']:,} output tokens" for t in traffics], body)


def step_changes_markdown(cases: dict) -> str:
    """One decode step under several changes: name -> :class:`aiinfra.deployment.Step` (chapter 1).

    Columns: arithmetic and weight-read bounds, the step bound, the step per
    output token (ms) and the tokens per second of the whole batch.
    """
    rows = [[name, units.fmt_time(s.compute_s, digits=4, unit="ms"), units.fmt_time(s.memory_s, unit="ms"),
             units.fmt_time(s.time_s, unit="ms"), units.fmt_time(s.time_s / s.batch, unit="ms"), f"{s.tokens_per_s:,.1f}"]
            for name, s in cases.items()]
    return markdown_table(["Change", "Arithmetic", "Weight read", "Step bound", "Per output token",
                           "Tokens/s (all requests)"], rows, align="lrrrrr")


def request_needs_markdown(d, prompt_tokens: int, context_tokens: int) -> str:
    """What one request of ``d``'s model needs: weights, KV, prefill and decode FLOPs, bytes read (chapter 1)."""
    pre, step = d.prefill(prompt_tokens), d.step(1, context_tokens)
    kv = d.kv_bytes(context_tokens)
    rows = [
        ["All weights", units.fmt_bytes(d.weight_bytes, "GB"), "memory to load the model"],
        ["KV per token of context", units.fmt_bytes(d.kv_bytes_per_token, "KiB", digits=0),
         "times context length gives one request's cache"],
        [f"KV for a {context_tokens:,}-token context",
         f"{units.fmt_bytes(kv, 'MiB', digits=0)} ({units.fmt_bytes(kv, 'GB', digits=3)})",
         "grows with every concurrent request"],
        [f"Prefill of {prompt_tokens:,} tokens (causal)", units.fmt_flops(pre.flops),
         "over peak FLOP/s gives the prefill bound"],
        ["One decode step", units.fmt_flops(step.flops), "one token in, plus attention over the context"],
        ["Weights read per decode step", units.fmt_bytes(step.weight_bytes, "GB"),
         "all weights except the embedding table, of which one row is read"],
        ["Old KV read per decode step", units.fmt_bytes(step.kv_bytes, "GB", digits=3), "every cached entry read once"],
    ]
    return markdown_table([f"What one request of {d.model.name} needs", "Value", "How to use it"], rows, align="lrl")


def batch_comparison_markdown(one, batched) -> str:
    """One decode step alone against a batch of them (two :class:`aiinfra.deployment.Step`; chapter 2)."""
    rows = [
        ["batch", f"{one.batch:,.0f}", f"{batched.batch:,.0f}"],
        ["bytes read per step", units.fmt_bytes(one.bytes_moved, "GB", 1), units.fmt_bytes(batched.bytes_moved, "GB", 1)],
        ["step time = time per output token", units.fmt_time(one.time_s, digits=1), units.fmt_time(batched.time_s, digits=1)],
        ["tokens/s one user sees", f"{one.tokens_per_s_per_user:,.0f}", f"{batched.tokens_per_s_per_user:,.0f}"],
        ["tokens/s, all requests", f"{one.tokens_per_s:,.0f}", f"{batched.tokens_per_s:,.0f}"],
        ["KV share of bytes read", f"{one.kv_share:.0%}", f"{batched.kv_share:.0%}"],
    ]
    return markdown_table(["", "alone", "batched"], rows)


def decode_floor_markdown(options: Sequence[tuple]) -> str:
    """``(option, weight bytes per GPU, bandwidth)`` rows: the read floor per step and the one-user ceiling (chapter 2)."""
    from aiinfra import decode

    rows = [[name, units.fmt_bytes(w, "GB", 0), units.fmt_rate_bytes(bw), units.fmt_time(roofline.memory_time_s(w, bw), digits=2),
             f"{decode.memory_bound_tokens_per_s(w, bw):,.0f}"] for name, w, bw in options]
    return markdown_table(["option", "bytes per GPU per step", "HBM bandwidth", "floor per step",
                           "tokens/s for one user (ceiling)"], rows)


def link_transfer_markdown(size_bytes: float, links=None) -> str:
    """The time to move ``size_bytes`` one way over each of ``links`` (default: a DGX H100's), as a bound (chapter 2)."""
    from aiinfra.cluster import network

    size = check("size_bytes", size_bytes, ">0", scalar=True)
    rows = [[x.name, units.fmt_time(network.transfer_time_s(size, x.bytes_per_s_per_direction))]
            for x in (links if links is not None else hardware.server_links())]
    return markdown_table(["link", f"time to move {units.fmt_bytes(size, digits=0)} one way (bound)"], rows)


def launch_overhead_markdown(deployments: dict, kernels_per_layer: int, timing, context_tokens: int) -> str:
    """Batch-1 decode step of each deployment with one launch cost per kernel, for each launch mode (chapter 2).

    Each step launches ``kernels_per_layer`` kernels per layer; each kernel
    adds ``timing.overhead_s(mode)`` (:class:`aiinfra.catalog.reference.LaunchTiming`)
    to the roofline bound of the step (:func:`aiinfra.measure.step_time_with_calls_s`).
    The MBU column is the bound's share of the resulting time.
    """
    from aiinfra import measure

    k = check("kernels_per_layer", kernels_per_layer, "int>=1", scalar=True)
    rows = []
    for name, d in deployments.items():
        step, n_calls = d.step(1, context_tokens), k * d.model.n_layers
        for mode in timing.per_kernel_s:
            t = measure.step_time_with_calls_s(step.time_s, n_calls, timing.overhead_s(mode))
            rows.append([name, f"{n_calls:,}", mode, units.fmt_time(step.time_s), units.fmt_time(t),
                         f"{roofline.mbu(step.bytes_moved, d.bandwidth_bytes_per_s, t):.0%}"])
    return markdown_table(["model (batch 1)", "kernels per step", "launch", "bound", "bound + launches", "MBU"],
                          rows, align="lrlrrr")


def mig_profiles_markdown(gpu_name: str = "H100 SXM") -> str:
    """The MIG profiles of ``gpu_name``: nominal memory, bandwidth and dense BF16 peak per instance, and how many fit."""
    rows = []
    for name, p in hardware.MIG_PROFILES.items():
        g = hardware.mig_instance(gpu_name, name)
        rows.append([name, f"{p.compute_slices} of {hardware.MIG_COMPUTE_SLICES}",
                     f"{p.memory_slices} of {hardware.MIG_MEMORY_SLICES}", units.fmt_bytes(g.memory_bytes, "GB", 0),
                     units.fmt_rate_bytes(g.memory_bandwidth_bytes_per_s, "TB"),
                     units.fmt_flops_rate(g.bf16_dense_flops_per_s), str(p.max_instances)])
    return markdown_table(["profile", "compute slices", "memory slices", "memory", "bandwidth", "dense BF16",
                           "instances per GPU"], rows, align="lccrrrr")


def die_yield_markdown(die, defect_densities: dict, wafer_diameter_m=None) -> str:
    """Dies of ``die`` per wafer and their yield at each defect density (name -> defects per m^2; chapter 2)."""
    from aiinfra.cluster import hierarchy

    d = hierarchy.WAFER_DIAMETER_M if wafer_diameter_m is None else wafer_diameter_m
    rows = [[name, f"{d0 * units.cm2:.2f}", f"{hierarchy.poisson_die_yield(die.area_m2, d0):.0%}",
             f"{hierarchy.murphy_die_yield(die.area_m2, d0):.0%}",
             f"{hierarchy.good_dies_per_wafer(die.area_m2, d0, d):.0f}"] for name, d0 in defect_densities.items()]
    return markdown_table(["defect density from", "defects per cm²", "yield (Poisson)", "yield (Murphy)",
                           f"good {die.name} dies per wafer (Murphy)"], rows, align="lrrrr")


def systolic_batch_markdown(chip, batches: Sequence[int]) -> str:
    """One weight tile of a matrix-unit chip applied to a batch: intensity, bound per tile and the array's busy share.

    A tile of ``chip.macs`` weights at ``chip.bits_per_weight`` bits is read
    once and multiplied by ``B`` input vectors: ``2 B`` FLOPs per weight,
    ``B`` MACs per weight byte at 8 bits. The step is the roofline bound
    (:func:`aiinfra.decode.batched_decode_step_time_s`) and the busy share its MFU (chapter 2).
    """
    from aiinfra import compute, decode, memory

    w = memory.weight_bytes_formula(chip.macs, units.bytes_from_bits(chip.bits_per_weight))
    rows = []
    for b in batches:
        flops = compute.approx_decode_flops_2n(chip.macs, b)
        t = decode.batched_decode_step_time_s(b, compute.approx_decode_flops_2n(chip.macs, 1), w, 0.0,
                                              chip.peak_flops_per_s, chip.weight_memory_bandwidth_bytes_per_s)
        rows.append([f"{b:,}", f"{roofline.arithmetic_intensity_flops_per_byte(flops, w) / units.FLOPS_PER_MAC:,.0f}",
                     units.fmt_time(t), f"{roofline.mfu(flops, chip.peak_flops_per_s, t):.1%}"])
    return markdown_table(["batch B", "MACs per weight byte", "time per weight tile (bound)", "array busy (bound)"],
                          rows, align="rrrr")
