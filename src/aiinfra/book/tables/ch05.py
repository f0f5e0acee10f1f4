"""Chapter 5's tables: KV configurations, traces and schedules, KV schemes and page sizes, memory tenants."""

from __future__ import annotations

from aiinfra import units
from aiinfra.book.tables import (
    _deployment,
    _predicted_tokens_per_s,
    _rate_text,
    _whole_numbers,
    markdown_table,
)
from aiinfra.formula import check


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
