"""A code cell the reader sees runs as shown: every module it names is imported in a visible cell.

A page's hidden set-up cell imports what its glue needs; a visible cell that uses one of those
names (``network.per_direction_bytes_per_s``, ``models.load``) fails for a reader who copies
the visible cells into a fresh notebook (issue 29, item 20). This reads the MyST sources:
for each visible cell, every name it loads that a hidden cell imported must be imported by
that cell or by a visible cell before it.
"""

from __future__ import annotations

import ast
import re
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]
PAGES = sorted((ROOT / "book").rglob("*.md"))
CELL = re.compile(r"^```\{code-cell\}[^\n]*\n(.*?)^```", re.DOTALL | re.MULTILINE)
HIDDEN = {"remove-cell", "remove-input"}


def cells(text: str):
    """``(tags, code)`` of every code cell of a MyST page, in order."""
    for m in CELL.finditer(text):
        body = m.group(1)
        tags = re.search(r"^:tags:\s*\[(.*?)\]", body, re.MULTILINE)
        tagset = {t.strip().strip("'\"") for t in tags.group(1).split(",")} if tags else set()
        yield tagset, "\n".join(line for line in body.splitlines() if not line.startswith(":"))


def imported(tree) -> set[str]:
    names = set()
    for node in ast.walk(tree):
        if isinstance(node, (ast.Import, ast.ImportFrom)):
            names |= {(a.asname or a.name).split(".")[0] for a in node.names}
    return names


def loaded(tree) -> set[str]:
    return {n.id for n in ast.walk(tree) if isinstance(n, ast.Name) and isinstance(n.ctx, ast.Load)}


def hidden_imports_used(text: str) -> list[tuple[str, list[str]]]:
    """``(first line, names)`` of each visible cell that uses a name only a hidden cell imported."""
    hidden, visible, bad = set(), set(), []
    for tags, code in cells(text):
        tree = ast.parse(code)
        if tags & HIDDEN:
            hidden |= imported(tree)
            continue
        visible |= imported(tree)
        missing = sorted((loaded(tree) & hidden) - visible)
        if missing:
            bad.append((code.strip().splitlines()[0] if code.strip() else "", missing))
    return bad


def test_the_check_finds_a_hidden_import():
    page = (
        "```{code-cell} ipython3\n:tags: [remove-cell]\nfrom aiinfra.cluster import network\n```\n\n"
        "```{code-cell} ipython3\nnetwork.per_direction_bytes_per_s(1.0)\n```\n"
    )
    assert hidden_imports_used(page) == [("network.per_direction_bytes_per_s(1.0)", ["network"])]
    shown = page.replace(
        "```{code-cell} ipython3\nnetwork",
        "```{code-cell} ipython3\nfrom aiinfra.cluster import network\nnetwork",
    )
    assert hidden_imports_used(shown) == []


def test_there_are_pages():
    assert len(PAGES) >= 58


@pytest.mark.parametrize("page", PAGES, ids=lambda p: str(p.relative_to(ROOT)))
def test_visible_cells_show_their_imports(page):
    bad = hidden_imports_used(page.read_text(encoding="utf-8"))
    assert not bad, f"{page.relative_to(ROOT)}: visible cells use names imported only in hidden cells: {bad}"
