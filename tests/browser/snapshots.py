"""One chromium visit per built page (and per window width) gathers what every page check asserts.

Loading a page costs chromium about a second of CPU, and five files check each page (it loads
clean, its math is typeset, its equations and tables fit, its figures move, its previews match),
so each page is visited once per worker and the visit records, in this order, what each check
needs: the requests and console errors of the load, the visible search controls, MathJax's
output, a screenshot of every figure's first frame, the widths of equations and tables at each
of :data:`FIT_WIDTHS`, and last (it moves the sliders) the figures' response to the keyboard.
Each check stays its own test and asserts on its part; a part whose gathering raised fails
the tests that read it, with the error, and no other. ``tests/conftest.py`` sends the tests of
one page to one worker, so the visit is not repeated there either.
"""

from __future__ import annotations

import re
import traceback
from dataclasses import dataclass, field

import pytest

#: The window of a visit, unless a check asks for another width (the search box at 700 px).
WIDE = 1280
#: The widths at which equations and tables must fit: a laptop and a phone.
FIT_WIDTHS = (1280, 390)
MATH_WAIT_MS = 20_000
RENDER_WAIT_MS = 20_000
# sub-pixel rounding of the layout engine
SLACK_PX = 1.5
SEARCH = ".search-button-field, .search-button, form.bd-search, input[type=search]"

MEASURE_FIT_JS = """
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
_SETTLE_LAYOUT_JS = "() => new Promise(r => requestAnimationFrame(() => requestAnimationFrame(r)))"
_IMAGE_CHANGED_JS = (
    "([el, src]) => { const img = [...el.querySelectorAll('.aiinfra-frame')]"
    ".find(x => x.offsetParent !== null); return img && img.getAttribute('src') !== src; }"
)


@dataclass
class Snapshot:
    """What one visit of one page saw, part by part (a part that failed to gather holds its error)."""

    page: str
    width: int
    parts: dict = field(default_factory=dict)

    def __getitem__(self, name: str):
        if name not in self.parts:
            pytest.fail(
                f"{self.page} at {self.width} px: the visit gathered no {name!r} (see its earlier parts)"
            )
        value = self.parts[name]
        if isinstance(value, _Failed):
            pytest.fail(f"{self.page} at {self.width} px: gathering {name!r} failed:\n{value.text}")
        return value


@dataclass
class _Failed:
    text: str


def settle_layout(page) -> None:
    """Let the page's resize handler run and the layout settle: two frames, then a moment."""
    page.evaluate(_SETTLE_LAYOUT_JS)
    page.wait_for_timeout(200)


def _load(visit, page_path: str) -> dict:
    visit.goto(page_path)
    return {
        "blocked": list(visit.blocked),
        "failed": list(visit.failed),
        "console_errors": list(visit.console_errors),
    }


def _search(visit) -> list[str]:
    return [
        el.get_attribute("class") or el.evaluate("e => e.tagName")
        for el in visit.page.query_selector_all(SEARCH)
        if el.is_visible()
    ]


def _math(page) -> dict:
    """MathJax's output once its first typeset is done (for a page with math)."""
    page.wait_for_function(
        "() => window.MathJax && window.MathJax.startup && window.MathJax.startup.promise",
        timeout=MATH_WAIT_MS,
    )
    page.evaluate("() => window.MathJax.startup.promise")
    return {
        "math": page.locator(".math").count(),
        "typeset": page.locator("mjx-container").count(),
        "errors": page.locator("mjx-merror").count(),
        "sources": page.evaluate(
            "() => [...document.scripts].map(s => s.src).filter(s => s.includes('tex-chtml'))"
        ),
    }


def _wait_for_frames(page, expected: int) -> None:
    page.wait_for_function(
        f"() => document.querySelectorAll('.aiinfra-figure .aiinfra-frame').length >= {expected}",
        timeout=RENDER_WAIT_MS,
    )


def _first_frames(page, expected: int) -> list[bytes]:
    """A PNG of the visible frame of each figure as the page loaded (before any slider moved)."""
    _wait_for_frames(page, expected)
    figs = page.locator(".aiinfra-figure")
    shots = []
    for i in range(min(expected, figs.count())):
        frame = figs.nth(i).locator(".aiinfra-frame:visible").first
        frame.scroll_into_view_if_needed()
        shots.append(frame.screenshot())
    return shots


def _fit(page) -> dict[int, list]:
    """Equations and tables wider than the text column, at each width of :data:`FIT_WIDTHS`."""
    out = {}
    for width in FIT_WIDTHS:
        page.set_viewport_size({"width": width, "height": 900})
        settle_layout(page)
        out[width] = page.evaluate(MEASURE_FIT_JS, SLACK_PX)
    page.set_viewport_size({"width": WIDE, "height": 900})
    settle_layout(page)
    return out


def _frame_state(fig) -> dict:
    readout = fig.locator(".aiinfra-readout:visible")
    image = fig.locator(".aiinfra-frame:visible")
    return {
        "readouts": readout.count(),
        "images": image.count(),
        "text": readout.first.inner_text().strip() if readout.count() == 1 else None,
        "src": (image.first.get_attribute("src") or "") if image.count() == 1 else None,
    }


def _press(page, handle) -> str:
    """Press the arrow key that moves this handle (right unless it is at its end)."""
    now = float(handle.get_attribute("aria-valuenow"))
    top = float(handle.get_attribute("aria-valuemax"))
    key = "ArrowRight" if now < top else "ArrowLeft"
    handle.focus()
    page.keyboard.press(key)
    return key


def _figures(visit, page_path: str, expected: int, artifacts) -> dict:
    """Every enabled slider of every figure, moved by one key press: the frame before and after.

    Screenshots of each figure before and after its first slider moves go to ``artifacts``.
    """
    page = visit.page
    _wait_for_frames(page, expected)
    figs = page.locator(".aiinfra-figure")
    stem = re.sub(r"[^A-Za-z0-9]+", "-", page_path.removesuffix(".html")).strip("-")
    seen = {"rendered": figs.count(), "live": page.locator(".aiinfra-figure-live").count(), "figures": []}
    for i in range(min(expected, figs.count())):
        fig = figs.nth(i)
        fig.scroll_into_view_if_needed()
        handles = fig.locator(".aiinfra-slider:not(.aiinfra-live-only) .noUi-handle")
        entry = {
            "figure": i,
            "visible": fig.is_visible(),
            "sliders": handles.count(),
            "moves": [],
            "screenshots": {},
        }
        for j in range(handles.count()):
            before = _frame_state(fig)
            if j == 0:
                shot = artifacts / f"{stem}-fig{i}-before.png"
                fig.screenshot(path=str(shot))
                entry["screenshots"]["before"] = {"file": shot.name, "bytes": shot.stat().st_size}
            key = _press(page, handles.nth(j))
            try:
                page.wait_for_function(
                    _IMAGE_CHANGED_JS, arg=[fig.element_handle(), before["src"]], timeout=5_000
                )
            except Exception:  # the test asserts on the frames; an unchanged one fails it there
                pass
            after = _frame_state(fig)
            entry["moves"].append({"slider": j, "key": key, "before": before, "after": after})
            if j == 0:
                shot = artifacts / f"{stem}-fig{i}-after.png"
                fig.screenshot(path=str(shot))
                entry["screenshots"]["after"] = {"file": shot.name, "bytes": shot.stat().st_size}
        seen["figures"].append(entry)
    seen["blocked"] = list(visit.blocked)
    seen["console_errors"] = list(visit.console_errors)
    return seen


def gather(visit, page_path: str, width: int, *, math: bool, figures: int, fit: bool, artifacts) -> Snapshot:
    """Visit ``page_path`` once at ``width`` and record every part its checks read (see the top).

    At a width other than :data:`WIDE`, only what the page shows on load (its requests, console
    and search controls) is recorded.
    """
    snap = Snapshot(page_path, width)
    steps = [("load", lambda: _load(visit, page_path)), ("search", lambda: _search(visit))]
    if width == WIDE:
        if math:
            steps.append(("math", lambda: _math(visit.page)))
        if figures:
            steps.append(("first_frames", lambda: _first_frames(visit.page, figures)))
        if fit:
            steps.append(("fit", lambda: _fit(visit.page)))
        if figures:
            steps.append(("figures", lambda: _figures(visit, page_path, figures, artifacts)))
    for name, step in steps:
        try:
            snap.parts[name] = step()
        except Exception:  # recorded: the checks that read this part fail with it
            snap.parts[name] = _Failed(traceback.format_exc())
            if name == "load":
                break
    return snap
