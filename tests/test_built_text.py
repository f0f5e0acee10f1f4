"""What a reader sees in the built book: no leaked reprs, no raw sympy, units and plurals right,
and no "source" that the reader cannot look up.

These tests read the HTML that `make book` wrote (`_build/html`). Each one names the page and
quotes the offending text, so a failure says where to look.
"""

from __future__ import annotations

import html
import os
import re
from pathlib import Path

import pytest

from book_pages import html_path, sources

ROOT = Path(__file__).resolve().parents[1]
HTML = Path(os.environ.get("AIINFRA_BUILT_HTML", ROOT / "_build" / "html"))
PAGES = [html_path(md) for md in sources()]  # from the sources: a page missing from the build fails

ARTICLE = re.compile(r'<article class="bd-article".*?</article>', re.S)
SCRIPT = re.compile(r"<(script|style)\b.*?</\1>", re.S)
TAG = re.compile(r"<[^>]+>")
BLOCK = re.compile(r"<(p|li|td|th|dd|figcaption|caption|h[1-6])\b[^>]*>(.*?)</\1>", re.S)
CITATION = re.compile(r'href="[^"]*bibliography\.html#')


def _text(fragment: str) -> str:
    return " ".join(html.unescape(TAG.sub(" ", fragment)).split())


def _article(page: Path) -> str:
    if not page.is_file():
        pytest.fail(f"{page.relative_to(HTML)} missing: run `make book`")
    raw = page.read_text(encoding="utf-8")
    found = ARTICLE.search(raw)
    assert found, f"{page.relative_to(HTML)} has no article body"
    return SCRIPT.sub("", found.group(0))


def _id(page: Path) -> str:
    return str(page.relative_to(HTML))


def _hits(pattern: re.Pattern, text: str, width: int = 50) -> list[str]:
    return [text[max(0, m.start() - width) : m.end() + width] for m in pattern.finditer(text)]


def test_the_book_was_built():
    missing = [_id(p) for p in PAGES if not p.is_file()]
    assert not missing, (
        f"{len(missing)} of {len(PAGES)} pages not built under {HTML}: run `make book` ({missing[:5]})"
    )


@pytest.mark.parametrize("page", PAGES, ids=_id)
def test_no_leaked_object_repr(page):
    """A figure or widget that failed to render shows its Python repr instead."""
    text = _text(_article(page))
    leaked = re.compile(r"<(?:Figure size|matplotlib\.|ipywidgets\.|aiinfra\.)[^>]*>|\bobject at 0x[0-9a-f]+")
    assert not _hits(leaked, text), _hits(leaked, text)


@pytest.mark.parametrize("page", PAGES, ids=_id)
def test_no_raw_sympy_printed_as_text(page):
    """Formulas are typeset (LaTeX); a cell output that prints sympy's plain repr is a broken render."""
    outputs = re.findall(r'<div class="cell_output[^"]*">(.*?)</div>\s*</div>', _article(page), re.S)
    plain = [_text(o) for o in outputs if "<pre" in o]
    sympy_like = re.compile(r"\b(?:ceiling|floor|sqrt|Max|Min|log)\(|\w\*\*\d|\b[A-Za-z_]\w*\*[A-Za-z_(]")
    tuple_of_expressions = re.compile(r"^\(.*[A-Za-z]\w*\s*[-+*/]\s*[\w(].*,.*\)$")
    bad = [
        o[:120]
        for o in plain
        if sympy_like.search(o) or (tuple_of_expressions.match(o) and not re.search("['\"]", o))
    ]
    assert not bad, bad


@pytest.mark.parametrize("page", PAGES, ids=_id)
def test_microseconds_are_written_with_mu(page):
    text = _text(_article(page))
    us = re.compile(r"(?<![\w.])\d[\d,.]*\s?us\b")
    assert not _hits(us, text), _hits(us, text)


@pytest.mark.parametrize("page", PAGES, ids=_id)
def test_no_plural_after_one(page):
    """'1 tokens', '1 GPUs', '1 prompts/s': in the prose, in tables, and in the figures' labels and readouts."""
    raw = html.unescape(page.read_text(encoding="utf-8"))
    one = re.compile(
        r"(?<![\w.,/])1 (?:tokens|GPUs|cards|prompts|requests|users|steps|layers|servers|nodes|replicas|experts)\b"
        r"|(?<![\w.,])1 / cards\b"
    )
    assert not _hits(one, raw, 30), _hits(one, raw, 30)


@pytest.mark.parametrize("page", PAGES, ids=_id)
def test_no_myst_left_in_the_text(page):
    text = _text(_article(page))
    myst = re.compile(r"\{(?:glue|glue:text|glue:md|term|cite|doc|ref|eq|numref)\}`|^:::|\(\w[\w-]*\)=")
    assert not _hits(myst, text), _hits(myst, text)


# "the source", "the source texts", "the source's KV chapter", "MHA (source)", "source exercise 1-4":
# each names a text the reader never sees unless a citation sits in the same paragraph.
SOURCE = re.compile(
    r"\b(?:the|these|its|our|four|this book[’']s) sources?(?: (?:text|texts|blog|chapter|widget|exercise))?(?:[’']s?)?\b"
    r"|\bsources?[’']s?\b(?! code)|\(source\)|\bsource (?:text|texts|exercise)\b",
    re.I,
)


@pytest.mark.parametrize("page", [p for p in PAGES if p.name != "bibliography.html"], ids=_id)
def test_every_source_named_in_the_text_is_cited(page):
    uncited = []
    for _, inner in BLOCK.findall(_article(page)):
        text = _text(inner)
        if SOURCE.search(text) and not CITATION.search(inner):
            uncited += _hits(SOURCE, text, 60)
    raw = page.read_text(encoding="utf-8")  # figure frames, alt texts and slider labels live in scripts too
    for label in re.findall(r'alt=\\?"([^"\\]*)|"_options_labels": \[([^\]]*)\]', raw):
        text = html.unescape(" ".join(label))
        uncited += [f"figure text: {text[:80]}"] if SOURCE.search(text) else []
    assert not uncited, uncited
