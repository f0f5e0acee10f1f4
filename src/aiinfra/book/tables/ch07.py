"""Chapter 7's tables: users per TPOT target, model bytes, speculation, capacity cases, routing."""

from __future__ import annotations

from aiinfra import units
from aiinfra.book.tables import markdown_table
from aiinfra.formula import check


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
