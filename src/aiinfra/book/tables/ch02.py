"""Chapter 2's tables: the layers, the server's links, GPU generations, one decode step, MIG, the die and the TPU."""

from __future__ import annotations

from collections.abc import Sequence

from aiinfra import roofline, units
from aiinfra.book.tables import _cell, markdown_table
from aiinfra.catalog import hardware, reference
from aiinfra.formula import check


def server_link_table_markdown(names=None, reference_link: str = "ConnectX-7 400 Gbit/s") -> str:
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
        rows.append(
            [
                x.name,
                x.joins or x.kind,
                x.raw_spec,
                counted,
                f"{x.bytes_per_s_per_direction / units.GB:,.1f}",
                f"{hardware.ratio(x, ref):,.1f}",
            ]
        )
    return markdown_table(
        [
            "link",
            "joins",
            "as printed",
            "the printed figure counts",
            "per direction (GB/s)",
            f"x {ref.name.split(' ')[0]}",
        ],
        rows,
        align="llllrr",
    )


def generations_table_markdown(names=None) -> str:
    """One row per data-center flagship (all vendors, TPUs included), units aligned: GB, TB/s, dense TFLOP/s,
    per-direction scale-up GB/s, chips per scale-up domain, FLOP/B, W.

    The 16-bit column is the dense BF16 tensor peak (FP16 for Volta, which has
    no BF16); FP8 and FP4 (block-scaled: NVFP4 on NVIDIA, MXFP4 on AMD) are
    dense too, "none" where the chip has no such peak. The ridge point is the
    16-bit peak over the memory bandwidth. Power reads "not published" where
    the vendor gives none.
    """
    rows = []
    for g in hardware.generations(names):
        fp8, fp4 = g.fp8_dense_flops_per_s, g.fp4_dense_flops_per_s
        rows.append(
            [
                g.name,
                f"{g.architecture} ({g.year})",
                f"{g.memory_bytes / units.GB:g} {g.memory_type}",
                f"{g.memory_bandwidth_bytes_per_s / units.TB:.2f}",
                f"{g.dense_flops_per_s('fp16') / units.TERA:,.1f}",
                "none" if fp8 is None else f"{fp8 / units.TERA:,.1f}",
                "none" if fp4 is None else f"{fp4 / units.TERA:,.1f}",
                f"{g.scaleup_link}: {g.scaleup_bytes_per_s_per_direction / units.GB:,.0f}",
                "" if g.scaleup_domain_chips is None else f"{g.scaleup_domain_chips:,}",
                f"{g.ridge_flops_per_byte:.0f}",
                "not published" if g.tdp_watts is None else f"{g.tdp_watts:,.0f}",
            ]
        )
    return markdown_table(
        [
            "chip",
            "architecture (year)",
            "memory (GB)",
            "HBM (TB/s)",
            "16-bit dense (TFLOP/s)",
            "FP8 dense (TFLOP/s)",
            "FP4 dense (TFLOP/s)",
            "scale-up per direction (GB/s)",
            "scale-up domain (chips)",
            "ridge (FLOP/B)",
            "power (W)",
        ],
        rows,
        align="llrrrrrlrrr",
    )


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


def batch_comparison_markdown(one, batched) -> str:
    """One decode step alone against a batch of them (two :class:`aiinfra.deployment.Step`; chapter 2)."""
    rows = [
        ["batch", f"{one.batch:,.0f}", f"{batched.batch:,.0f}"],
        [
            "bytes read per step",
            units.fmt_bytes(one.bytes_moved, "GB", 1),
            units.fmt_bytes(batched.bytes_moved, "GB", 1),
        ],
        [
            "step time = time per output token",
            units.fmt_time(one.time_s, digits=1),
            units.fmt_time(batched.time_s, digits=1),
        ],
        [
            "tokens/s one user sees",
            f"{one.tokens_per_s_per_user:,.0f}",
            f"{batched.tokens_per_s_per_user:,.0f}",
        ],
        ["tokens/s, all requests", f"{one.tokens_per_s:,.0f}", f"{batched.tokens_per_s:,.0f}"],
        ["KV share of bytes read", f"{one.kv_share:.0%}", f"{batched.kv_share:.0%}"],
    ]
    return markdown_table(["", "alone", "batched"], rows)


def decode_floor_markdown(options: Sequence[tuple]) -> str:
    """``(option, weight bytes per GPU, bandwidth)`` rows: the read floor per step and the one-user ceiling (chapter 2)."""
    from aiinfra import decode

    rows = [
        [
            name,
            units.fmt_bytes(w, "GB", 0),
            units.fmt_rate_bytes(bw),
            units.fmt_time(roofline.memory_time_s(w, bw), digits=2),
            f"{decode.memory_bound_tokens_per_s(w, bw):,.0f}",
        ]
        for name, w, bw in options
    ]
    return markdown_table(
        [
            "option",
            "bytes per GPU per step",
            "HBM bandwidth",
            "floor per step",
            "tokens/s for one user (ceiling)",
        ],
        rows,
    )


def link_transfer_markdown(size_bytes: float, links=None) -> str:
    """The time to move ``size_bytes`` one way over each of ``links`` (default: a DGX H100's), as a bound (chapter 2)."""
    from aiinfra.cluster import network

    size = check("size_bytes", size_bytes, ">0", scalar=True)
    rows = [
        [x.name, units.fmt_time(network.transfer_time_s(size, x.bytes_per_s_per_direction))]
        for x in (links if links is not None else hardware.server_links())
    ]
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
            rows.append(
                [
                    name,
                    f"{n_calls:,}",
                    mode,
                    units.fmt_time(step.time_s),
                    units.fmt_time(t),
                    f"{roofline.mbu(step.bytes_moved, d.bandwidth_bytes_per_s, t):.0%}",
                ]
            )
    return markdown_table(
        ["model (batch 1)", "kernels per step", "launch", "bound", "bound + launches", "MBU"],
        rows,
        align="lrlrrr",
    )


def mig_profiles_markdown(gpu_name: str = "H100 SXM") -> str:
    """The MIG profiles of ``gpu_name``: nominal memory, bandwidth and dense BF16 peak per instance, and how many fit."""
    rows = []
    for p in hardware.gpu(gpu_name).mig_profiles:
        g = hardware.mig_instance(gpu_name, p.name)
        rows.append(
            [
                p.name,
                f"{p.compute_slices} of {hardware.MIG_COMPUTE_SLICES}",
                f"{p.memory_slices} of {hardware.MIG_MEMORY_SLICES}",
                units.fmt_bytes(g.memory_bytes, "GB", 0),
                units.fmt_rate_bytes(g.memory_bandwidth_bytes_per_s, "TB"),
                units.fmt_flops_rate(g.bf16_dense_flops_per_s),
                str(p.max_instances),
            ]
        )
    return markdown_table(
        [
            "profile",
            "compute slices",
            "memory slices",
            "memory",
            "bandwidth",
            "dense BF16",
            "instances per GPU",
        ],
        rows,
        align="lccrrrr",
    )


def die_yield_markdown(die, defect_densities: dict, wafer_diameter_m=None) -> str:
    """Dies of ``die`` per wafer and their yield at each defect density (name -> defects per m^2; chapter 2)."""
    from aiinfra.cluster import hierarchy

    d = hierarchy.WAFER_DIAMETER_M if wafer_diameter_m is None else wafer_diameter_m
    rows = [
        [
            name,
            f"{d0 * units.cm2:.2f}",
            f"{hierarchy.poisson_die_yield(die.area_m2, d0):.0%}",
            f"{hierarchy.murphy_die_yield(die.area_m2, d0):.0%}",
            f"{hierarchy.good_dies_per_wafer(die.area_m2, d0, d):.0f}",
        ]
        for name, d0 in defect_densities.items()
    ]
    return markdown_table(
        [
            "defect density from",
            "defects per cm²",
            "yield (Poisson)",
            "yield (Murphy)",
            f"good {die.name} dies per wafer (Murphy)",
        ],
        rows,
        align="lrrrr",
    )


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
        t = decode.batched_decode_step_time_s(
            b,
            compute.approx_decode_flops_2n(chip.macs, 1),
            w,
            0.0,
            chip.peak_flops_per_s,
            chip.weight_memory_bandwidth_bytes_per_s,
        )
        rows.append(
            [
                f"{b:,}",
                f"{roofline.arithmetic_intensity_flops_per_byte(flops, w) / units.FLOPS_PER_MAC:,.0f}",
                units.fmt_time(t),
                f"{roofline.mfu(flops, chip.peak_flops_per_s, t):.1%}",
            ]
        )
    return markdown_table(
        ["batch B", "MACs per weight byte", "time per weight tile (bound)", "array busy (bound)"],
        rows,
        align="rrrr",
    )
