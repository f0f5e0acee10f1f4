"""Chapter 4's tables: decode ceilings, the KV share, TTFT, the batch and cost sweeps, decode on every GPU."""

from __future__ import annotations

from aiinfra import units
from aiinfra.book.tables import (
    _deployment,
    _predicted_rate,
    _predicted_tokens_per_s,
    _rate_text,
    _whole_numbers,
    markdown_table,
)
from aiinfra.catalog import hardware
from aiinfra.formula import check


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
