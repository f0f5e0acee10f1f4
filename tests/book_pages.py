"""The book's pages, known from their sources, and the HTML page `make book` built from each.

Tests over the built book are parametrised over the sources (``book/**/*.md``), never over
whatever ``_build/`` happens to hold: without a build they fail ("run make book") instead of
vanishing from the collection.
"""

from __future__ import annotations

import os
import re
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]
BOOK = ROOT / "book"
HTML = Path(os.environ.get("AIINFRA_BUILT_HTML", ROOT / "_build" / "html"))
_INCLUDE = re.compile(r"^[`:]{3,}\{include\}\s+(\S+)", re.M)


def included() -> set[Path]:
    """Markdown files that a page pulls in with ``{include}`` (parts of a page, not pages)."""
    return {
        (md.parent / name).resolve()
        for md in BOOK.rglob("*.md")
        for name in _INCLUDE.findall(md.read_text(encoding="utf-8"))
    }


def sources() -> list[Path]:
    """Every page of the book: each Markdown file under book/ that no other page includes."""
    parts = included()
    return sorted(md for md in BOOK.rglob("*.md") if md.resolve() not in parts)


def rel(md: Path) -> str:
    return md.relative_to(ROOT).as_posix()


def html_path(md: Path) -> Path:
    return HTML / md.relative_to(ROOT).with_suffix(".html")


def built(md: Path) -> Path:
    """The built HTML page of source ``md``; a test fails (never skips) when it is missing."""
    page = html_path(md)
    if not page.is_file():
        pytest.fail(f"{page.relative_to(HTML.parent)} missing: run `make book` (it builds every page)")
    return page
