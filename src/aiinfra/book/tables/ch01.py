"""Chapter 1's tables: the GPU quick reference, the shifts and latency tables, one request, one step."""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

from aiinfra import roofline, units
from aiinfra.book.tables import markdown_table
from aiinfra.catalog import reference
from aiinfra.formula import check


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
