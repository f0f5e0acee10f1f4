"""Quick-reference tables, computed: GPU resources and a model's per-request needs (chapter 1).

Chapter 1 ends its metrics section with a table of GPU resources and closes
with a table of one model's needs; both are generated here from the
hardware catalog and a shipped model config, so the printed numbers cannot
drift from the code. :func:`markdown_table` is the small pandas-free
renderer the chapters use for any computed table.

Units: capacities in decimal GB (1e9 B) unless a column says GiB/KiB/MiB;
bandwidth in decimal TB/s; compute is the **dense** BF16 peak (FP32
accumulate), never the 2:4-sparse figure.
"""
from __future__ import annotations

from dataclasses import dataclass
from typing import Sequence

from . import _check

__all__ = [
    "markdown_table",
    "GpuRow",
    "gpu_row",
    "gpu_quick_reference_markdown",
    "ModelStepNeeds",
    "model_step_needs",
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
    from . import roofline, units

    for attr in ("name", "memory_bytes", "memory_bandwidth_bytes_per_s", "bf16_dense_flops_per_s"):
        if not hasattr(gpu, attr):
            raise ValueError(f"gpu must be an aiinfra.hardware.GPU (missing {attr!r}), got {gpu!r}")
    bw = _check.positive("gpu.memory_bandwidth_bytes_per_s", gpu.memory_bandwidth_bytes_per_s)
    pi = _check.positive("gpu.bf16_dense_flops_per_s", gpu.bf16_dense_flops_per_s)
    return GpuRow(
        name=gpu.name,
        memory_bytes=_check.positive("gpu.memory_bytes", gpu.memory_bytes),
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
    from . import units

    gpus = list(gpus)
    if not gpus:
        raise ValueError("gpus must list at least one GPU")
    rows = [gpu_row(g) for g in gpus]
    table = [
        [
            r.name,
            f"{r.memory_bytes / units.GB:g}",
            f"{r.bandwidth_bytes_per_s / units.TB:.3f}".rstrip("0").rstrip("."),
            f"{r.bf16_dense_flops_per_s / 1e12:.1f}",
            f"{r.time_to_read_1gb_s * 1e3:.2f}",
            f"{r.ridge_flops_per_byte:.0f}",
        ]
        for r in rows
    ]
    return markdown_table(
        ["GPU", "Memory (GB)", "Bandwidth (TB/s)", "Dense BF16 (TFLOP/s)", "Read 1 GB (ms)", "Ridge (FLOP/B)"], table
    )


@dataclass(frozen=True)
class ModelStepNeeds:
    """What one request of a model needs, in SI units (the chapter-1 closing table)."""

    model: str
    weight_bytes: float
    kv_bytes_per_token: float
    kv_bytes_context: float
    prefill_flops: float
    decode_flops: float
    decode_weight_bytes_read: float
    decode_kv_bytes_read: float
    prompt_tokens: int
    context_tokens: int


def model_step_needs(model, prompt_tokens=2048, context_tokens=2048, precision="bf16", kv_bytes_per_element=2):
    """Weights, KV, prefill and decode work of one request of ``model`` at batch 1.

    * ``weight_bytes``: every stored parameter at ``precision``;
    * ``kv_bytes_per_token`` and ``kv_bytes_context`` (at ``context_tokens``);
    * ``prefill_flops``: causal prefill of ``prompt_tokens``, lm_head on the last token only;
    * ``decode_flops``: one decode step with ``context_tokens`` already cached;
    * ``decode_weight_bytes_read``: weights one decode step reads (the embedding
      table replaced by the one row it needs);
    * ``decode_kv_bytes_read``: the cached KV read once by that step.
    """
    from . import compute, memory, models, units

    m = models.load(model) if isinstance(model, (str, dict)) else model
    p = _check.integer("prompt_tokens", prompt_tokens, minimum=1)
    ctx = _check.integer("context_tokens", context_tokens, minimum=0)
    kv_tok = memory.kv_bytes_per_token(m, kv_bytes_per_element)
    kv_ctx = memory.kv_bytes_per_request(m, ctx, kv_bytes_per_element)
    return ModelStepNeeds(
        model=m.name,
        weight_bytes=memory.weight_bytes(m, precision),
        kv_bytes_per_token=kv_tok,
        kv_bytes_context=kv_ctx,
        prefill_flops=compute.prefill_flops(m, p),
        decode_flops=compute.decode_flops(m, ctx),
        decode_weight_bytes_read=models.decode_read_params(m) * units.bytes_per_param(precision),
        decode_kv_bytes_read=kv_ctx,
        prompt_tokens=p,
        context_tokens=ctx,
    )
