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

from collections.abc import Sequence
from dataclasses import dataclass

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
    "request_phases_markdown",
    "decode_flops_breakdown_markdown",
    "kv_cache_or_recompute_markdown",
    "decode_ceiling_markdown",
    "kv_share_markdown",
    "ttft_markdown",
    "batch_sweep_markdown",
    "cost_sweep_markdown",
    "gpu_decode_markdown",
    "kv_configs_markdown",
    "trace_markdown",
    "schedule_summary_markdown",
    "kv_schemes_markdown",
    "page_size_markdown",
    "memory_tenants_markdown",
    "context_cost_markdown",
    "hierarchy_table_markdown",
    "layer_table_markdown",
    "decode_walk_markdown",
    "scheduler_table_markdown",
    "propagation_table_markdown",
    "latency_table_rows",
    "model_families_markdown",
    "tp_allreduce_table_markdown",
    "allreduce_regimes_table_markdown",
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


#: A literal dollar sign that reads as text everywhere a table is shown: MyST and CommonMark
#: decode the entity, and JupyterLab's and Colab's MathJax skip elements of these classes
#: (they would otherwise pair it with the next dollar into mathematics). As
#: tools/aiinfra_build/doctree_markdown.py writes it into the saved notebooks.
DOLLAR = '<span class="tex2jax_ignore mathjax_ignore">&#36;</span>'


def _plain_dollars(text: str) -> str:
    """``text`` with each escaped dollar (``\\$``, a price) as :data:`DOLLAR`; ``$...$`` stays mathematics."""
    return text.replace("\\$", DOLLAR)


def markdown_table(headers: Sequence[str], rows: Sequence[Sequence], align: str | None = None) -> str:
    """Render ``rows`` under ``headers`` as a Markdown (MyST) table.

    ``align`` is one character per column: ``l``, ``r`` or ``c`` (default:
    first column left, the others right). Cells are converted with ``str``.
    A price is written ``\\$12.50``, as in MyST; it becomes :data:`DOLLAR`, so
    the fresh output of a notebook cell reads as the book does (``$...$``
    remains mathematics).
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
    lines = [
        "| " + " | ".join(map(_plain_dollars, headers)) + " |",
        "|" + "|".join(marks[a] for a in align) + "|",
    ]
    for i, row in enumerate(rows):
        cells = [str(c) for c in row]
        if len(cells) != n:
            raise ValueError(f"rows[{i}] must have {n} cells, got {len(cells)}")
        lines.append("| " + " | ".join(_plain_dollars(c.replace("|", "\\|")) for c in cells) + " |")
    return "\n".join(lines)


def _cell(text: str) -> str:
    """Plain text from the catalog as one table cell: every dollar in it is a price (:data:`DOLLAR`)."""
    return text.replace("|", "\\|").replace("\n", " ").replace("$", DOLLAR)


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
        [
            "GPU",
            "Memory (GB)",
            "Bandwidth (TB/s)",
            "Dense BF16 (TFLOP/s)",
            "Read 1 GB (ms)",
            "Ridge (FLOP/B)",
        ],
        table,
    )


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


# --------------------------------------------------------------------------------------
# Inference on one node (chapters 3 to 5): tables computed from a Deployment
# --------------------------------------------------------------------------------------


def _deployment(d, name: str = "deployment"):
    from aiinfra.deployment import Deployment

    if not isinstance(d, Deployment):
        raise ValueError(f"{name} must be an aiinfra.deployment.Deployment, got {type(d).__name__}")
    return d


def _whole_numbers(name: str, values, minimum: int = 1) -> list[int]:
    values = [check(f"{name}[{i}]", v, f"int>={minimum}", scalar=True) for i, v in enumerate(values)]
    if not values:
        raise ValueError(f"{name} must hold at least one value")
    return values


def request_phases_markdown(request) -> str:
    """Prefill against decode for one request (:meth:`aiinfra.deployment.Deployment.request`), chapter 3.

    Rows: forward passes (1 prefill pass, then ``G - 1`` decode steps: the
    prefill emits the first token), FLOPs, bytes read from HBM (decimal
    units), FLOPs per byte, the bound, and the time (a lower bound).
    """
    from aiinfra.deployment import Request

    if not isinstance(request, Request):
        raise ValueError(
            f"request must be an aiinfra.deployment.Request (Deployment.request), got {type(request).__name__}"
        )
    pre, dec = request.prefill, request.decode
    rows = [
        ["forward passes", f"{pre.passes:,}", f"{dec.passes:,}"],
        ["FLOPs", units.fmt_flops(pre.flops), units.fmt_flops(dec.flops)],
        ["bytes read from HBM", units.fmt_bytes(pre.bytes_moved), units.fmt_bytes(dec.bytes_moved)],
        ["FLOPs per byte", f"{pre.intensity_flops_per_byte:,.0f}", f"{dec.intensity_flops_per_byte:.2f}"],
        ["bound", pre.bound, dec.bound],
        ["time (lower bound)", units.fmt_time(pre.time_s, 1), units.fmt_time(dec.time_s, 2)],
    ]
    return markdown_table(["", "prefill", f"decode (all {dec.passes:,} steps)"], rows)


def decode_flops_breakdown_markdown(model, context_tokens) -> str:
    """One decode step by piece, exact against the ``2N`` rule (:func:`aiinfra.compute.decode_flops_breakdown`)."""
    from aiinfra import compute

    br = compute.decode_flops_breakdown(model, context_tokens)
    labels = {
        "blocks": "matrices in the blocks",
        "lm_head": "LM head",
        "embedding": "embedding table",
        "attention": "attention over the context",
        "total": "total",
    }
    rows = [
        [label, units.fmt_flops(br["exact"][k]), units.fmt_flops(br["two_n"][k])]
        for k, label in labels.items()
    ]
    return markdown_table(["piece", "exact", "2N rule"], rows)


def kv_cache_or_recompute_markdown(deployment, prompt_tokens, output_tokens) -> str:
    """The ``G - 1`` decode steps of one reply with the KV cache and without it (every step reruns a prefill)."""
    d = _deployment(deployment)
    cached = d.request(prompt_tokens, output_tokens).decode
    again = d.decode_without_cache(prompt_tokens, output_tokens)
    where = f"{d.n_gpus} x {d.gpu.name}" if d.n_gpus > 1 else f"one {d.gpu.name}"
    rows = [
        ["FLOPs of the decode steps", units.fmt_flops(cached.flops), units.fmt_flops(again.flops)],
        [f"time on {where} (lower bound)", units.fmt_time(cached.time_s, 2), units.fmt_time(again.time_s, 1)],
    ]
    return markdown_table(["", "with the KV cache", "recomputing everything"], rows)


def decode_ceiling_markdown(model_names, gpu="H100 SXM", precisions=("bf16", "int8", "int4")) -> str:
    """Single-stream decode ceilings, capacity first (chapter 4).

    One row per model (exact parameter count), one column per weight
    precision (scales of quantized formats ignored). A cell is the ceiling
    :meth:`~aiinfra.deployment.Deployment.ceiling_tokens_per_s` (weight bytes
    a step reads, KV left out) on the fewest GPUs whose memory, less the 10 %
    reserve, holds the weights: on one GPU the bare number, on more
    "does not fit: N GPUs, X" (the GPUs' bandwidths add; communication ignored).
    Each cell is "bound / prediction": the prediction
    (:func:`aiinfra.predict.calibrated_step_s`) adds the fitted efficiencies,
    the fixed cost per layer and, on several GPUs, the all-reduces.
    """
    from aiinfra.catalog import models
    from aiinfra.deployment import Deployment

    names = list(model_names)
    if not names:
        raise ValueError("model_names must list at least one model")
    precisions = list(precisions)
    if not precisions:
        raise ValueError("precisions must list at least one weight precision")
    rows = []
    for name in names:
        row = [name, f"{models.total_params(models.load(name)) / units.GIGA:,.2f}"]
        for p in precisions:
            d = Deployment(name, gpu, weight_precision=p)
            need = d.min_gpus
            on = d.replace(n_gpus=need)
            both = f"{on.ceiling_tokens_per_s():,.1f} / {_predicted_rate(on, 1, 0)}"
            row.append(both if need == 1 else f"does not fit: {need} GPUs, {both}")
        rows.append(row)
    return markdown_table(
        ["Model", "Parameters (billions)"] + [f"{p.upper()} (tok/s, bound / prediction)" for p in precisions],
        rows,
    )


def _predicted_tokens_per_s(d, batch, context_tokens) -> float | None:
    """Aggregate tokens/s of the calibrated prediction of ``d.step(batch, context_tokens)``; None where none applies."""
    from aiinfra import predict

    try:
        return batch / predict.calibrated_step_s(d, batch, context_tokens)
    except ValueError:  # a TPU, or a GPU count that does not divide the KV heads
        return None


def _rate_text(rate: float | None, fmt: str) -> str:
    return "-" if rate is None else format(rate, fmt)


def _predicted_rate(d, batch, context_tokens) -> str:
    return _rate_text(_predicted_tokens_per_s(d, batch, context_tokens), ",.1f")


def kv_share_markdown(cases) -> str:
    """What one decode step reads at batch 1: weights, KV and the KV share, for ``(label, deployment, context)`` cases.

    Weights and KV in decimal GB (one unit for the comparison). The share is
    ``R_state / (R_W + R_state)``, the fraction by which the KV lowers the
    single-stream ceiling of the weights alone.
    """
    rows = []
    for i, case in enumerate(cases):
        if not (isinstance(case, tuple) and len(case) == 3):
            raise ValueError(f"cases[{i}] must be a (label, deployment, context_tokens) tuple, got {case!r}")
        label, d, ctx = case
        step = _deployment(d, f"cases[{i}] deployment").step(
            1, check(f"cases[{i}] context_tokens", ctx, "int>=1", scalar=True)
        )
        rows.append(
            [
                label,
                f"{ctx:,}",
                units.fmt_bytes(step.weight_bytes, "GB"),
                units.fmt_bytes(step.kv_bytes, "GB"),
                f"{step.kv_share:.0%}",
            ]
        )
    if not rows:
        raise ValueError("cases must hold at least one (label, deployment, context_tokens) tuple")
    return markdown_table(
        ["Model", "Context (tokens)", "Weights read", "KV read", "KV share of the bytes"], rows
    )


def ttft_markdown(deployment, prompt_tokens) -> str:
    """Prefill FLOPs, the TTFT bound (idle GPU) and exact FLOPs over ``2NP``, one row per prompt length (chapter 4)."""
    from aiinfra import compute
    from aiinfra.catalog import models

    d = _deployment(deployment)
    n = models.total_params(d.model)
    rows = []
    for p in _whole_numbers("prompt_tokens", prompt_tokens):
        pre = d.prefill(p)
        rows.append(
            [
                f"{p:,}",
                units.fmt_flops(pre.flops),
                units.fmt_time(pre.time_s),
                f"{pre.flops / compute.approx_prefill_flops_2n(n, p):.2f}",
            ]
        )
    return markdown_table(["Prompt (tokens)", "Prefill FLOPs", "TTFT bound", "FLOPs / 2NP"], rows)


def batch_sweep_markdown(deployment, context_tokens, batches) -> str:
    """Decode step time, per-user and aggregate rate and the KV share of the bytes, one row per batch (chapter 4)."""
    d = _deployment(deployment)
    ctx = check("context_tokens", context_tokens, "int>=1", scalar=True)
    rows = []
    for b in _whole_numbers("batches", batches):
        s = d.step(b, ctx)
        rows.append(
            [
                f"{b:,}",
                units.fmt_time(s.time_s),
                f"{s.tokens_per_s_per_user:,.0f}",
                f"{s.tokens_per_s:,.0f}",
                f"{s.kv_share:.0%}",
            ]
        )
    return markdown_table(
        ["Batch B", "Step time (bound)", "Per user (tok/s)", "Aggregate (tok/s)", "KV share of bytes"], rows
    )


def cost_sweep_markdown(deployment, context_tokens, batches, usd_per_gpu_hour) -> str:
    """Per-user and per-GPU rate and the floor price per million output tokens, one row per batch (chapter 4).

    The price is :func:`aiinfra.serving.capacity.replica_cost_per_million_tokens`:
    the replica's aggregate bound divided by its GPU count; beside each bound
    the calibrated prediction (:func:`aiinfra.predict.calibrated_step_s`).
    """
    from aiinfra.serving import capacity

    d = _deployment(deployment)
    ctx = check("context_tokens", context_tokens, "int>=1", scalar=True)
    rows = []
    for b in _whole_numbers("batches", batches):
        s = d.step(b, ctx)
        pred = _predicted_tokens_per_s(d, b, ctx)
        pred_usd = (
            None if pred is None else capacity.cost_per_million_tokens(usd_per_gpu_hour, pred / d.n_gpus)
        )
        rows.append(
            [
                f"{b:,}",
                f"{s.tokens_per_s_per_user:,.0f} / {_rate_text(pred and pred / b, ',.0f')}",
                f"{s.tokens_per_s / d.n_gpus:,.0f} / {_rate_text(pred and pred / d.n_gpus, ',.0f')}",
                f"\\${capacity.replica_cost_per_million_tokens(d, usd_per_gpu_hour, b, ctx):,.2f} / "
                + ("-" if pred_usd is None else f"\\${pred_usd:,.2f}"),
            ]
        )
    return markdown_table(
        [
            "Batch",
            "Per user (tok/s, bound / prediction)",
            "Per GPU (tok/s, bound / prediction)",
            "\\$ per million output tokens (floor / prediction)",
        ],
        rows,
    )


def gpu_decode_markdown(deployment, context_tokens, gpus=None) -> str:
    """Decode at the largest batch that fits, on each GPU that holds the weights and one cache (chapter 4).

    ``gpus`` defaults to the catalog's GPUs with a dense BF16 peak; rows are
    sorted by memory bandwidth. Columns: HBM bandwidth (TB/s), ridge point,
    the batch whose caches fill the memory left after the weights and the
    reserve, the decode step's intensity at that batch, per-user and
    aggregate rate, each bound / calibrated prediction at the same batch
    ("-" for a TPU: no stored run calibrates one).
    """
    from aiinfra.catalog import hardware

    d = _deployment(deployment)
    ctx = check("context_tokens", context_tokens, "int>=1", scalar=True)
    gpus = hardware.catalog("bf16") if gpus is None else list(gpus)
    rows = []
    for g in sorted(gpus, key=lambda g: g.memory_bandwidth_bytes_per_s):
        at = d.replace(gpu=g)
        bmax = at.max_batch(ctx)
        if bmax < 1:
            continue
        full = at.step(bmax, ctx)
        pred = _predicted_tokens_per_s(at, bmax, ctx)
        rows.append(
            [
                g.name,
                f"{at.bandwidth_bytes_per_s / units.TB:.2f}",
                f"{at.ridge_flops_per_byte:,.0f}",
                f"{bmax:,}",
                f"{full.intensity_flops_per_byte:.1f}",
                f"{full.tokens_per_s_per_user:,.0f} / {_rate_text(pred and pred / bmax, ',.0f')}",
                f"{full.tokens_per_s:,.0f} / {_rate_text(pred, ',.0f')}",
            ]
        )
    if not rows:
        raise ValueError("gpus must include at least one GPU whose memory holds the weights and one cache")
    return markdown_table(
        [
            "GPU",
            "HBM (TB/s)",
            "Ridge (FLOP/B)",
            "Batch that fits",
            "Intensity (FLOP/B)",
            "Per user (tok/s, bound / prediction)",
            "Aggregate (tok/s, bound / prediction)",
        ],
        rows,
    )


def kv_configs_markdown(model_names, context_tokens=32768) -> str:
    """KV per token (KiB) of real configs, the same with full MHA, and one request of ``context_tokens`` (GB), chapter 5."""
    from aiinfra import memory
    from aiinfra.catalog import models

    ctx = check("context_tokens", context_tokens, "int>=1", scalar=True)
    rows = []
    for name in model_names:
        m = models.load(name)
        heads = (
            f"{m.n_heads} / {m.kv_lora_rank}+{m.qk_rope_head_dim} latent"
            if m.attention_kind == "mla"
            else f"{m.n_heads} / {m.n_kv_heads}"
        )
        rows.append(
            [
                name,
                m.attention_kind.upper(),
                f"{m.n_layers}",
                heads,
                units.fmt_bytes(memory.kv_bytes_per_token(m), "KiB", digits=1),
                units.fmt_bytes(memory.mha_equivalent_kv_bytes_per_token(m), "KiB", digits=0),
                units.fmt_bytes(memory.kv_bytes_per_request(m, ctx), "GB"),
            ]
        )
    if not rows:
        raise ValueError("model_names must list at least one model")
    return markdown_table(
        [
            "Model",
            "Attention",
            "Layers",
            "Query heads / KV heads",
            "KV per token (BF16)",
            "Same model with MHA",
            f"One {ctx:,}-token request",
        ],
        rows,
    )


def trace_markdown(trace) -> str:
    """Prompt, output and final context lengths of a request trace: mean, median, shortest, longest (chapter 5)."""
    import numpy as np

    from aiinfra.serving import batching

    if not isinstance(trace, batching.Trace):
        raise ValueError(f"trace must be an aiinfra.serving.batching.Trace, got {type(trace).__name__}")
    rows = []
    for name, x in (
        ("prompt", trace.prompt_tokens),
        ("answer (output)", trace.output_tokens),
        ("context at the end (prompt + answer)", trace.final_context_tokens),
    ):
        rows.append([name, f"{np.mean(x):,.0f}", f"{np.median(x):,.0f}", f"{np.min(x):,}", f"{np.max(x):,}"])
    return markdown_table(["Tokens per request", "Mean", "Median", "Shortest", "Longest"], rows)


def schedule_summary_markdown(results, percentiles=(50, 90, 99)) -> str:
    """Slot utilization, mean batch, busy steps and latency percentiles (steps) of each policy (chapter 5)."""
    from aiinfra.serving import batching

    rows = batching.summary_rows(results, percentiles=percentiles)
    keys = [f"p{q:g}_latency" for q in percentiles]
    body = [
        [r["policy"], f"{r['slot_utilization']:.0%}", f"{r['mean_batch']:.1f}", f"{r['busy_steps']:,}"]
        + [f"{r[k]:,.0f}" for k in keys]
        for r in rows
    ]
    return markdown_table(
        ["Policy", "Slot utilization", "Mean running batch", "Busy steps"]
        + [f"p{q:g} latency (steps)" for q in percentiles],
        body,
    )


def kv_schemes_markdown(runs) -> str:
    """Mean and largest batch, steps to finish and latency percentiles of each KV scheme's run (chapter 5).

    ``runs`` maps a scheme name to the result of
    :func:`aiinfra.serving.paging.simulate_with_kv_budget`.
    """
    from aiinfra.serving import batching

    if not isinstance(runs, dict) or not runs:
        raise ValueError("runs must be a non-empty dict of scheme name -> ScheduleResult")
    rows = []
    for name, r in runs.items():
        if not isinstance(r, batching.ScheduleResult):
            raise ValueError(f"runs[{name!r}] must be a ScheduleResult, got {type(r).__name__}")
        rows.append(
            [
                name,
                f"{r.mean_batch:.1f}",
                f"{int(r.active.max()):,}",
                f"{r.total_steps:,}",
                f"{r.percentile_latency_steps(50):,.0f}",
                f"{r.percentile_latency_steps(99):,.0f}",
            ]
        )
    return markdown_table(
        [
            "Scheme",
            "Mean running batch",
            "Largest batch",
            "Steps to finish the trace",
            "p50 latency (steps)",
            "p99 latency (steps)",
        ],
        rows,
    )


def page_size_markdown(context_tokens, max_context_tokens, kv_budget_bytes, kv_bytes_per_token, pages) -> str:
    """Paging waste and the requests that fit, one row per page size (chapter 5).

    ``context_tokens`` are the requests' final lengths; the waste is
    :attr:`~aiinfra.serving.paging.KVFootprint.paged_waste_fraction` and the
    count :func:`~aiinfra.serving.paging.max_batch_paged` (requests taken in order).
    """
    from aiinfra.serving import paging

    rows = []
    for p in _whole_numbers("pages", pages):
        fp = paging.kv_footprint(context_tokens, max_context_tokens, p, kv_bytes_per_token)
        rows.append(
            [
                f"{p:,}",
                f"{fp.paged_waste_fraction:.1%}",
                f"{paging.max_batch_paged(context_tokens, kv_budget_bytes, p, kv_bytes_per_token):,}",
            ]
        )
    return markdown_table(["Page (tokens)", "Waste at final length", "Requests that fit"], rows)


def memory_tenants_markdown(deployment, context_tokens) -> str:
    """Weights, the caches of the largest batch, the reserve and what is left, in GB and as shares of memory (chapter 5)."""
    from aiinfra import memory

    d = _deployment(deployment)
    ctx = check("context_tokens", context_tokens, "int>=1", scalar=True)
    bmax = d.max_batch(ctx)
    if bmax < 1:
        raise ValueError(
            f"context_tokens must leave room for one request's KV cache next to the weights, got {ctx:,}"
        )
    kv = d.step(bmax, ctx).kv_bytes
    left = memory.free_bytes(d.weight_bytes, kv, d.reserve_bytes, d.capacity_bytes)
    cap = d.capacity_bytes
    rows = [
        [
            "Weights (BF16)" if d.weight_precision == "bf16" else f"Weights ({d.weight_precision})",
            d.weight_bytes,
            "once per replica",
        ],
        [f"KV cache, {bmax:,} requests of {ctx:,} tokens", kv, "per request, grows with every token"],
        ["Runtime buffers (reserve)", d.reserve_bytes, "activations, kernel workspace, allocator slack"],
        ["Unusable remainder", left, "less than one more request"],
    ]
    return markdown_table(
        ["Tenant", "Bytes", "Share of memory", "Scales with"],
        [[name, units.fmt_bytes(b, "GB"), f"{b / cap:.1%}", what] for name, b, what in rows],
        align="lrrl",
    )


def context_cost_markdown(deployment, contexts, usd_per_gpu_hour) -> str:
    """The price of context (chapter 5): one row per context, every request holding it and the batch that fits.

    Columns: the batch (:meth:`~aiinfra.deployment.Deployment.max_batch`), the
    step time and its bound (:meth:`~aiinfra.deployment.Deployment.step`),
    tokens/s per GPU and the floor price per million output tokens
    (:func:`aiinfra.serving.capacity.replica_cost_per_million_tokens`), each
    followed by the calibrated prediction at the same batch
    (:func:`aiinfra.predict.calibrated_step_s`).
    """
    from aiinfra.serving import capacity

    d = _deployment(deployment)
    rows = []
    for c in _whole_numbers("contexts", contexts):
        b = d.max_batch(c)
        if b < 1:
            raise ValueError(f"contexts must each leave room for one request's KV cache, got {c:,} tokens")
        s = d.step(b, c)
        pred = _predicted_tokens_per_s(d, b, c)
        floor = capacity.replica_cost_per_million_tokens(d, usd_per_gpu_hour, b, c)
        rows.append(
            [
                f"{c:,}",
                f"{b:,}",
                f"{units.fmt_time(s.time_s)} ({s.bound})"
                + ("" if pred is None else f" / {units.fmt_time(b / pred)}"),
                f"{s.tokens_per_s / d.n_gpus:,.0f} / {_rate_text(pred and pred / d.n_gpus, ',.0f')}",
                f"\\${floor:,.2f} / " + ("-" if pred is None else f"\\${floor * s.tokens_per_s / pred:,.2f}"),
            ]
        )
    return markdown_table(
        [
            "Context (tokens)",
            "Batch that fits",
            "Step time (bound / prediction)",
            "Tokens/s per GPU (bound / prediction)",
            "\\$ per million output tokens (floor / prediction)",
        ],
        rows,
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
    return [
        (r.operation, reference.latency_s(r.operation) / scale[unit]) for r in reference.table("latency_2009")
    ]


def model_families_markdown(names, context_tokens: int = 8192) -> str:
    """One row per shipped model: its family, exact total and active counts, attention layout, KV of a request.

    KV is BF16 and window-aware (:func:`aiinfra.memory.kv_bytes_per_request`) at ``context_tokens``, or at
    the model's ``max_position_embeddings`` when that is shorter (the cell says so); the last column says
    what the family's count does differently (:data:`aiinfra.catalog.architectures.FAMILY_NOTES`).
    The "count your own model" page.
    """
    from aiinfra import memory
    from aiinfra.catalog import models
    from aiinfra.catalog.architectures import FAMILY_NOTES

    ctx = check("context_tokens", context_tokens, "int>=1", scalar=True)
    rows = []
    for name in names:
        m = models.load(name)
        layout = m.layer_summary()
        n = min(ctx, m.max_position_embeddings or ctx)
        kv = units.fmt_bytes(memory.kv_bytes_per_request(m, n)) + (f" (at {n:,})" if n < ctx else "")
        state = memory.state_bytes_per_request(m)
        kv += f" + {units.fmt_bytes(state)} state" if state else ""
        copy = " (reconstructed)" if name in models.RECONSTRUCTED else ""
        rows.append(
            [
                f"`{m.model_type}`",
                f"{name}{copy}",
                f"{models.total_params(m):,}",
                f"{models.active_params(m):,}",
                layout,
                kv,
                FAMILY_NOTES[m.model_type],
            ]
        )
    headers = [
        "family",
        "shipped config",
        "total",
        "active",
        "layers (window)",
        f"KV (+ fixed state) @ {ctx:,} tokens",
        "what the count does differently",
    ]
    return markdown_table(headers, rows, align="llrrlrl")


# --------------------------------------------------------------------------------------
# Chapters 6 and 7: clusters, power and serving
# --------------------------------------------------------------------------------------


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
            rows.append(
                [
                    units.fmt_time(tpot, digits=0),
                    f"{users:,}",
                    limiting,
                    units.fmt_time(step.time_s),
                    f"{step.tokens_per_s:,.0f}",
                ]
            )
        else:
            rows.append([units.fmt_time(tpot, digits=0), "0", limiting, "not reachable", "0"])
    return markdown_table(
        ["TPOT target", "users per replica", "what binds", "step time at that load", "tokens/s per replica"],
        rows,
        align="rrlrr",
    )


def model_bytes_table_markdown(rows) -> str:
    """Stored and active parameters and the bytes one decode step reads, one row per model.

    ``rows``: ``(model name, precision label, stored bytes, bytes read per token)``;
    the parameter counts come from :mod:`aiinfra.catalog.models`.
    """
    from aiinfra.catalog import models

    out = []
    for name, label, stored, read in rows:
        m = models.load(name)
        out.append(
            [
                name,
                label,
                f"{models.total_params(m) / units.GIGA:,.1f}B",
                f"{models.active_params(m) / units.GIGA:,.1f}B",
                units.fmt_bytes(stored),
                units.fmt_bytes(read),
            ]
        )
    return markdown_table(
        ["model", "weights as stored", "parameters", "active per token", "stored", "read per token, batch 1"],
        out,
        align="llrrrr",
    )


def speculation_table_markdown(alphas, gammas, draft_cost_ratio) -> str:
    """Speedup of speculative decoding for each acceptance rate (rows) and draft length (columns)."""
    from aiinfra.serving import speculation

    rows = [
        [f"{a:.1f}", *(f"{speculation.speculative_speedup(a, g, draft_cost_ratio):.2f}x" for g in gammas)]
        for a in alphas
    ]
    return markdown_table(["acceptance $\\alpha$", *(f"$\\gamma$ = {g}" for g in gammas)], rows)


def capacity_cases_table_markdown(cases, watts_per_gpu, pue, usd_per_gpu_hour) -> str:
    """One row per ``(label, CapacityPlan)``: GPUs, replica size and load, what binds, power and price.

    Power and price come from :func:`aiinfra.serving.capacity.fleet_economics`.
    """
    from aiinfra.serving import capacity

    rows = []
    for label, p in cases:
        e = capacity.fleet_economics(p, watts_per_gpu, pue, usd_per_gpu_hour)
        rows.append(
            [
                label,
                f"{p.gpus_total:,}",
                f"{p.gpus_per_replica}",
                f"{p.users_per_replica}",
                p.limiting,
                units.fmt_power(e.power_w, digits=2),
                f"\\${e.usd_per_million_tokens:.2f}",
            ]
        )
    return markdown_table(
        [
            "case",
            "GPUs",
            "GPUs per replica",
            "users per replica",
            "binds",
            "facility power",
            "\\$ per million tokens",
        ],
        rows,
        align="lrrrlrr",
    )


def routing_table_markdown(result, rate_index) -> str:
    """Each routing policy at one arrival rate of a :class:`aiinfra.serving.routing.RoutingResult`.

    Columns: KV-cache hit rate, mean queueing delay, median and 99th-percentile TTFT.
    """
    from aiinfra.serving import routing

    k = check("rate_index", rate_index, "int>=0", scalar=True)
    if k >= result.rates_per_s.size:
        raise ValueError(f"rate_index must be < {result.rates_per_s.size}, got {rate_index!r}")
    p50, p99 = result.ttft_percentile_s(50)[:, k], result.ttft_percentile_s(99)[:, k]
    rows = [
        [
            routing.POLICY_LABELS[p],
            f"{result.hit_rate[i, k]:.0%}",
            units.fmt_time(result.mean_queue_s[i, k]),
            units.fmt_time(p50[i]),
            units.fmt_time(p99[i]),
        ]
        for i, p in enumerate(result.policies)
    ]
    return markdown_table(["policy", "KV-cache hit rate", "mean queueing", "median TTFT", "p99 TTFT"], rows)


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


def ceilings_table_markdown(ceilings, gpus=("RTX PRO 6000 Blackwell Workstation", "H100 SXM", "B200")) -> str:
    """This machine's measured ceilings (a :class:`aiinfra.measure.Ceilings`) next to GPUs' dense BF16 datasheet peaks."""
    rows = [
        [
            "this machine (measured, float32)",
            units.fmt_rate_bytes(ceilings.bandwidth_bytes_per_s),
            units.fmt_flops_rate(ceilings.flops_per_s),
            f"{ceilings.ridge_flops_per_byte:,.1f}",
        ]
    ]
    for name in gpus:
        g = hardware.gpu(name)
        pi = g.dense_flops_per_s("bf16")
        rows.append(
            [
                f"{g.name} (datasheet, dense BF16)",
                units.fmt_rate_bytes(g.memory_bandwidth_bytes_per_s),
                units.fmt_flops_rate(pi),
                f"{roofline.ridge_point_flops_per_byte(pi, g.memory_bandwidth_bytes_per_s):,.0f}",
            ]
        )
    return markdown_table(["machine", "bandwidth", "compute", "ridge (FLOP/B)"], rows)


def build_machine_table_markdown(ceilings, call_s, description) -> str:
    """What chapter 8 measured on the machine that ran it: ceilings, ridge, knee and the cost of one call."""
    from aiinfra import measure

    rows = [
        (
            "memory bandwidth (best of copy and sum)",
            units.fmt_rate_bytes(ceilings.bandwidth_bytes_per_s, "GB", 1),
        ),
        ("float32 matrix-multiply rate", units.fmt_flops_rate(ceilings.flops_per_s)),
        ("ridge point", f"{ceilings.ridge_flops_per_byte:.1f} FLOP/B"),
        ("knee of a float32 decode step", f"{measure.predicted_knee_batch(4, ceilings):.1f}"),
        ("one tiny call", units.fmt_time(call_s)),
    ]
    return (
        f"**The build machine** ({description}), measured when this page was built; run the page to see yours:\n\n"
        + markdown_table(["quantity", "measured"], rows)
    )


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
    rows = [
        ("Weights loaded onto the card (once per instance)", "weights_loaded", "GB"),
        ("Weights streamed from HBM (once per step)", "weights_streamed", "TB"),
        ("KV cache written (prompt + output)", "kv_written", "GB"),
        ("KV cache read (all steps)", "kv_read", "GB"),
    ]
    body = [[name] + [units.fmt_bytes(t[key], unit) for t in traffics] for name, key, unit in rows]
    return markdown_table([label] + [f"{t['steps']:,} output tokens" for t in traffics], body)


def step_changes_markdown(cases: dict) -> str:
    """One decode step under several changes: name -> :class:`aiinfra.deployment.Step` (chapter 1).

    Columns: arithmetic and weight-read bounds, the step bound, the step per
    output token (ms) and the tokens per second of the whole batch.
    """
    rows = [
        [
            name,
            units.fmt_time(s.compute_s, digits=4, unit="ms"),
            units.fmt_time(s.memory_s, unit="ms"),
            units.fmt_time(s.time_s, unit="ms"),
            units.fmt_time(s.time_s / s.batch, unit="ms"),
            f"{s.tokens_per_s:,.1f}",
        ]
        for name, s in cases.items()
    ]
    return markdown_table(
        ["Change", "Arithmetic", "Weight read", "Step bound", "Per output token", "Tokens/s (all requests)"],
        rows,
        align="lrrrrr",
    )


def request_needs_markdown(d, prompt_tokens: int, context_tokens: int) -> str:
    """What one request of ``d``'s model needs: weights, KV, prefill and decode FLOPs, bytes read (chapter 1)."""
    pre, step = d.prefill(prompt_tokens), d.step(1, context_tokens)
    kv = d.kv_bytes(context_tokens)
    rows = [
        ["All weights", units.fmt_bytes(d.weight_bytes, "GB"), "memory to load the model"],
        [
            "KV per token of context",
            units.fmt_bytes(d.kv_bytes_per_token, "KiB", digits=0),
            "times context length gives one request's cache",
        ],
        [
            f"KV for a {context_tokens:,}-token context",
            f"{units.fmt_bytes(kv, 'MiB', digits=0)} ({units.fmt_bytes(kv, 'GB', digits=3)})",
            "grows with every concurrent request",
        ],
        [
            f"Prefill of {prompt_tokens:,} tokens (causal)",
            units.fmt_flops(pre.flops),
            "over peak FLOP/s gives the prefill bound",
        ],
        ["One decode step", units.fmt_flops(step.flops), "one token in, plus attention over the context"],
        [
            "Weights read per decode step",
            units.fmt_bytes(step.weight_bytes, "GB"),
            "all weights except the embedding table, of which one row is read",
        ],
        [
            "Old KV read per decode step",
            units.fmt_bytes(step.kv_bytes, "GB", digits=3),
            "every cached entry read once",
        ],
    ]
    return markdown_table(
        [f"What one request of {d.model.name} needs", "Value", "How to use it"], rows, align="lrl"
    )


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
