"""Chapter 3's tables: prefill against decode, the FLOPs of a decode step, cache or recompute."""

from __future__ import annotations

from aiinfra import units
from aiinfra.book.tables import _deployment, markdown_table


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
