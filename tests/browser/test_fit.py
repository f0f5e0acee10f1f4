"""Every display equation and every table fits within the text column, on a laptop and on a phone.

A display equation or a table wider than the article column is either clipped or hidden
behind a horizontal scroll bar, and a reader on a phone never sees its right-hand part
(issue 29, items 16 and 17). Each page is loaded once in chromium at a 1280 px window and
once at 390 px (a phone); every MathJax display equation (its typeset width, not the width
of the box around it) and every table of the article must end inside the column.
"""

from __future__ import annotations

import pytest

from .conftest import BUILD, MISSING, book_pages

WIDTHS = (1280, 390)
MATH_WAIT_MS = 20_000
# sub-pixel rounding of the layout engine
SLACK_PX = 1.5

_MEASURE = """
(slack) => {
  const col = document.querySelector('article.bd-article');
  if (!col) return [['page', 'no article column', 0, 0]];
  // the text column is the article's content box: its border box less its padding
  const box = col.getBoundingClientRect(), css = getComputedStyle(col);
  const padL = parseFloat(css.paddingLeft) || 0, padR = parseFloat(css.paddingRight) || 0;
  const edge = {left: box.left + padL, right: box.right - padR, width: box.width - padL - padR};
  const items = window.MathJax && MathJax.startup && MathJax.startup.document
    ? MathJax.startup.document.math : [];
  const tex = new Map();
  for (const item of items) {
    if (item.display && item.typesetRoot) tex.set(item.typesetRoot, item.math);
  }
  const shown = (el) => el.getClientRects().length > 0;
  const bad = [];
  const over = (r) => r.right > edge.right + slack || r.left < edge.left - slack || r.width > edge.width + slack;
  for (const el of col.querySelectorAll('mjx-container[display="true"]')) {
    const body = el.querySelector('mjx-math') || el;
    if (!shown(body)) continue;
    const r = body.getBoundingClientRect();
    if (over(r)) bad.push(['equation', (tex.get(el) || '').trim().slice(0, 70), Math.round(r.width), Math.round(edge.width)]);
  }
  for (const t of col.querySelectorAll('table')) {
    if (!shown(t)) continue;
    const r = t.getBoundingClientRect();
    const wide = Math.max(r.width, t.scrollWidth);
    if (over(r) || wide > edge.width + slack) {
      const head = (t.querySelector('tr') || t).innerText.replace(/\\s+/g, ' ').trim().slice(0, 70);
      bad.push(['table', head, Math.round(wide), Math.round(edge.width)]);
    }
  }
  return bad;
}
"""


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


def test_equations_and_tables_fit_the_column(fit_page, built_book, visit):
    assert fit_page != MISSING, "no page of the book has an equation or a table"
    page = visit.goto(fit_page)
    if page.locator(".math").count():
        page.wait_for_function(
            "() => window.MathJax && window.MathJax.startup && window.MathJax.startup.promise",
            timeout=MATH_WAIT_MS,
        )
        page.evaluate("() => window.MathJax.startup.promise")
    problems = []
    for width in WIDTHS:
        page.set_viewport_size({"width": width, "height": 900})
        # let the page's resize handler run and the layout settle: two frames, then a moment
        page.evaluate("() => new Promise(r => requestAnimationFrame(() => requestAnimationFrame(r)))")
        page.wait_for_timeout(200)
        for kind, what, got, column in page.evaluate(_MEASURE, SLACK_PX):
            problems.append(f"{width} px: {kind} {got} px wide in a {column} px column: {what!r}")
    assert not problems, f"{fit_page}:\n" + "\n".join(problems)


@pytest.mark.parametrize("width", WIDTHS)
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
    kinds = {kind for kind, *_ in page.evaluate(_MEASURE, SLACK_PX)}
    assert kinds >= {"equation", "table"}, kinds
