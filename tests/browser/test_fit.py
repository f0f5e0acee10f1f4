"""Every display equation and every table fits within the text column, on a laptop and on a phone.

A display equation or a table wider than the article column is either clipped or hidden
behind a horizontal scroll bar, and a reader on a phone never sees its right-hand part
(issue 29, items 16 and 17). Each page is measured in chromium in a 1280 px window and in a
390 px one (a phone), in this worker's one visit of the page (:mod:`tests.browser.snapshots`);
every MathJax display equation (its typeset width, not the width of the box around it) and
every table of the article must end inside the column.
"""

from __future__ import annotations

import pytest

from .conftest import BUILD, MISSING, book_pages
from .snapshots import FIT_WIDTHS, MATH_WAIT_MS, MEASURE_FIT_JS, SLACK_PX


def _pages_with_equations_or_tables() -> list[str]:
    out = []
    for rel in book_pages():
        html = (BUILD / rel).read_text(encoding="utf-8")
        if "<table" in html or 'class="math' in html:
            out.append(rel)
    return out


def pytest_generate_tests(metafunc):
    if "fit_page" in metafunc.fixturenames:
        metafunc.parametrize("fit_page", _pages_with_equations_or_tables() or [MISSING])


def test_the_fit_test_sees_pages(built_book):
    assert len(_pages_with_equations_or_tables()) >= 40, "too few pages with equations or tables"


def test_equations_and_tables_fit_the_column(fit_page, built_book, snapshots):
    assert fit_page != MISSING, "no page of the book has an equation or a table"
    snap = snapshots(fit_page)
    if "math" in snap.parts:
        # measured once MathJax had typeset: a page whose typesetting failed fails here too
        _ = snap["math"]
    problems = []
    for width, bad in snap["fit"].items():
        for kind, what, got, column in bad:
            problems.append(f"{width} px: {kind} {got} px wide in a {column} px column: {what!r}")
    assert not problems, f"{fit_page}:\n" + "\n".join(problems)


@pytest.mark.parametrize("width", FIT_WIDTHS)
def test_the_measure_catches_an_overflowing_equation_and_table(width, built_book, visit):
    """The check itself fails on content wider than the column (so a pass means something)."""
    page = visit.goto("book/front/notation.html")
    page.wait_for_function(
        "() => window.MathJax && window.MathJax.startup && window.MathJax.startup.promise",
        timeout=MATH_WAIT_MS,
    )
    page.evaluate("() => window.MathJax.startup.promise")
    page.set_viewport_size({"width": width, "height": 900})
    page.evaluate(
        """async () => {
          const col = document.querySelector('article.bd-article');
          const div = document.createElement('div');
          div.innerHTML = '\\\\[' + Array(80).fill('x_{i} + y_{j}').join(' + ') + '\\\\]';
          const t = document.createElement('table');
          t.innerHTML = '<tr>' + Array(40).fill('<td style="white-space: nowrap">one cell</td>').join('') + '</tr>';
          t.style.width = 'max-content';
          t.style.maxWidth = 'none';
          col.prepend(t);
          col.prepend(div);
          await MathJax.typesetPromise([div]);
        }"""
    )
    kinds = {kind for kind, *_ in page.evaluate(MEASURE_FIT_JS, SLACK_PX)}
    assert kinds >= {"equation", "table"}, kinds
