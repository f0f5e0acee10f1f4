"""The back matter's tables: the shipped model families (Count your model)."""

from __future__ import annotations

from aiinfra import units
from aiinfra.book.tables import markdown_table
from aiinfra.formula import check


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
