"""The book's PDF (``make pdf``), read back as text with pdftotext (poppler-utils).

Run by ``make test-pdf`` after ``make pdf`` (``.ci/run`` does both after ``make test``); a missing
PDF fails every test here. The checks compare the PDF with the HTML build of the same sources:

* it exists and holds every chapter;
* a sample of the values glued into the HTML pages (the longest few numbers of each page)
  appears in its text;
* nothing of MyST survives (roles, directive fences, glue), no reference printed as ``??``,
  and XeLaTeX reported no missing glyph;
* each interactive figure of the HTML shows its default frame with a caption naming its
  slider settings;
* the exercises' solutions sit in an appendix after the last chapter;
* the bibliography lists the works the HTML bibliography lists.
"""

from __future__ import annotations

import html
import os
import re
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]
PDF = Path(os.environ.get("AIINFRA_PDF", ROOT / "_build" / "latex" / "book.pdf"))
LOG = PDF.with_suffix(".log")
HTML = ROOT / "_build" / "html"
sys.path.insert(0, str(ROOT / "tests"))
from browser.conftest import book_pages, expected_figures  # noqa: E402 -- tests/ joins sys.path just above

#: Glued values sampled per page: the longest ones with a digit (short ones such as "8" prove nothing).
PER_PAGE = 3
MYST = {
    "role": re.compile(r"\{[a-z][\w:+.-]*\}`"),
    "glue": re.compile(r"\{glue"),
    "directive fence": re.compile(r"(```|:::)\s*\{"),
    "colon fence": re.compile(r"^:::", re.MULTILINE),
}


def squash(text: str) -> str:
    """Text with hyphenation at line ends undone and every run of whitespace one space."""
    text = re.sub(r"(\w)-\n(\w)", r"\1\2", text)
    return re.sub(r"\s+", " ", text).strip()


@pytest.fixture(scope="module")
def pdf_text() -> str:
    assert PDF.is_file() and PDF.stat().st_size > 100_000, f"{PDF} missing: run `make pdf`"
    out = subprocess.run(
        ["pdftotext", "-enc", "UTF-8", str(PDF), "-"], capture_output=True, text=True, check=True
    )
    return out.stdout


def pasted_values(page: str) -> list[str]:
    spans = re.findall(r'<span class="(?:pasted-text|pasted-inline)">(.*?)</span>', page, re.DOTALL)
    return [html.unescape(re.sub(r"<[^>]+>", "", s)).strip() for s in spans]


def test_every_chapter_is_in_the_pdf(pdf_text):
    text = squash(pdf_text)
    for n in range(1, 9):
        source = (ROOT / "book" / f"ch{n:02d}" / "index.md").read_text(encoding="utf-8")
        title = re.search(r"^# (.+)$", source, re.MULTILINE).group(1).strip()
        assert f"Chapter {n}. {title}" in text, f"chapter {n} ({title!r}) not in the PDF as chapter {n}"


def test_glued_numbers_appear_in_the_pdf(pdf_text):
    text = squash(pdf_text)
    sample = {}
    for rel in book_pages():
        values = [
            v for v in set(pasted_values((HTML / rel).read_text(encoding="utf-8"))) if re.search(r"\d", v)
        ]
        sample[rel] = sorted(values, key=lambda v: (-len(v), v))[:PER_PAGE]
    flat = [v for vs in sample.values() for v in vs]
    assert len(flat) > 100, f"only {len(flat)} glued values found in {HTML}: run `make book`"
    # pdftotext breaks long values (URLs) across lines, at a hyphen of their own too
    # pdftotext breaks long values (URLs) across lines, and drops a hyphen it finds at a line's end
    bare = re.sub(r"[\s-]+", "", text)
    missing = [v for v in flat if re.sub(r"[\s-]+", "", v) not in bare]
    assert not missing, f"{len(missing)} of {len(flat)} glued values not in the PDF: {missing[:10]}"


def test_no_myst_no_unresolved_reference_no_missing_glyph(pdf_text):
    text = squash(pdf_text)
    found = [
        f"{k}: {text[max(0, m.start() - 40) : m.end() + 40]!r}"
        for k, p in MYST.items()
        for m in p.finditer(pdf_text)
    ]
    found += [
        f"unresolved: {text[max(0, m.start() - 60) : m.end() + 20]!r}" for m in re.finditer(r"\?\?", text)
    ]
    assert not found, found[:10]
    assert LOG.is_file(), f"{LOG} missing: the LaTeX log of `make pdf`"
    missing = re.findall(
        r"Missing character: There is no (.*?)!", LOG.read_text(encoding="utf-8", errors="replace")
    )
    assert not missing, f"glyphs missing from the fonts: {sorted(set(missing))[:20]}"


def test_each_interactive_figure_shows_its_default_frame_and_settings(pdf_text):
    text = squash(pdf_text)
    figures = sum(expected_figures((HTML / rel).read_text(encoding="utf-8")) for rel in book_pages())
    assert figures >= 20
    captions = re.findall(r"Interactive figure shown at (.*?) \(the sliders move", text)
    assert len(captions) == figures, (
        f"{len(captions)} figure captions in the PDF, {figures} figures in the HTML"
    )
    assert all(" = " in c for c in captions), captions


def test_solutions_sit_in_an_appendix_after_the_chapters(pdf_text):
    text = squash(pdf_text)
    start = text.find("Solution to Exercise (")
    assert start > text.rfind("Chapter 8."), "a solution before the end of the last chapter"
    assert "Appendix A. Solutions to the exercises" in text[start:], "the solutions are not in appendix A"
    solutions = re.findall(r"Solution to Exercise \((\d+-\d+)", text)
    exercises = set(re.findall(r"(?<!Solution to )Exercise \((\d+-\d+)", text[:start]))
    assert len(exercises) > 30 and sorted(solutions) == sorted(exercises), (solutions, sorted(exercises))


def test_the_bibliography_is_that_of_the_html(pdf_text):
    text = squash(pdf_text)
    page = (HTML / "book" / "back" / "bibliography.html").read_text(encoding="utf-8")
    titles = [
        squash(html.unescape(re.sub(r"<[^>]+>", "", t)))
        for t in re.findall(r"<em>(.*?)</em>", page, re.DOTALL)
    ]
    assert len(titles) > 20
    missing = [t for t in titles if t[:40] not in text]
    assert not missing, f"{len(missing)} of {len(titles)} works missing: {missing[:5]}"


def test_equation_numbers_are_those_of_the_html(pdf_text):
    text = squash(pdf_text)
    numbers = {
        n
        for rel in book_pages()
        for n in re.findall(r'class="eqno">(\([^)<]*\))', (HTML / rel).read_text(encoding="utf-8"))
    }
    assert len(numbers) > 20
    missing = sorted(n for n in numbers if n not in text)
    assert not missing, (
        f"{len(missing)} of {len(numbers)} equation numbers of the HTML not in the PDF: {missing[:10]}"
    )
    chapters = re.findall(r"Chapter (\d+)\.", text)
    assert chapters and max(map(int, chapters)) == 8, "the PDF numbers chapters other than the HTML's 1 to 8"
