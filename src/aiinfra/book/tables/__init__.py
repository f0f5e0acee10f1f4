"""The book's computed tables: the shared Markdown renderer and one module per chapter.

A page shows a table with ``Markdown(tables.some_table_markdown(...))``, imported as
``from aiinfra.book.tables import ch04 as tables``: chapter NN's tables live in
``aiinfra.book.tables.chNN``, beside its figures in ``aiinfra.book.figures.chNN``
(``back`` serves the back matter). The numbers come from :mod:`aiinfra` and the prose
cells from the JSON tables of :mod:`aiinfra.catalog.reference`, so nothing printed can
drift from the code. This module holds what the chapters share: :func:`markdown_table`
(the renderer every table goes through), the dollar escape and the argument checks.

Units: capacities in decimal GB (1e9 B) unless a column says GiB/KiB/MiB;
bandwidth in decimal TB/s or GB/s per direction; compute is the **dense** peak,
never the 2:4-sparse figure.
"""

from __future__ import annotations

from collections.abc import Sequence

from aiinfra.formula import check

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
