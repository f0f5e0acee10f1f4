"""Every interactive figure of the static book responds to its sliders with no kernel.

Figures are found generically: the page's embedded widget state says how many
views carry the ``aiinfra-figure`` class (see :mod:`aiinfra.book.interactive`), and
all of them must render. For every enabled slider of every figure, pressing
an arrow key on its handle must change both the readout text and the image.
Screenshots of each figure before and after the first key press go to
``tests/artifacts/`` (PNG, git-ignored) and their sizes to
``tests/artifacts/figures-<page>.json``.
"""

from __future__ import annotations

import json
import re

from .conftest import BUILD, MISSING, expected_figures

RENDER_WAIT_MS = 20_000


def _frame_state(fig):
    """Text of the visible readout and source of the visible image of one figure."""
    readout = fig.locator(".aiinfra-readout:visible")
    image = fig.locator(".aiinfra-frame:visible")
    assert readout.count() == 1, f"expected one visible readout, found {readout.count()}"
    assert image.count() == 1, f"expected one visible image, found {image.count()}"
    return readout.first.inner_text().strip(), image.first.get_attribute("src") or ""


def _press(page, handle) -> str:
    """Press the arrow key that moves this handle (right unless it is at its end)."""
    now = float(handle.get_attribute("aria-valuenow"))
    top = float(handle.get_attribute("aria-valuemax"))
    key = "ArrowRight" if now < top else "ArrowLeft"
    handle.focus()
    page.keyboard.press(key)
    return key


def test_figures_move_without_kernel(figure_page, built_book, visit, artifacts):
    assert figure_page != MISSING, "no page of the built book shows an interactive figure"
    expected = expected_figures((BUILD / figure_page).read_text(encoding="utf-8"))
    page = visit.goto(figure_page)
    figs = page.locator(".aiinfra-figure")
    page.wait_for_function(
        f"() => document.querySelectorAll('.aiinfra-figure .aiinfra-frame').length >= {expected}",
        timeout=RENDER_WAIT_MS,
    )
    assert figs.count() == expected, f"{figure_page}: {figs.count()} figures rendered, {expected} embedded"
    live = page.locator(".aiinfra-figure-live").count()
    assert live == 0, (
        f"{figure_page}: {live} figure(s) were saved in live mode (no precomputed frames, so they cannot move "
        "without a kernel): the page was executed without AIINFRA_BOOK_BUILD=1, or a stale jupyter-cache "
        "entry from such a run was reused; clear _build/.jupyter_cache and run `make book`"
    )

    stem = re.sub(r"[^A-Za-z0-9]+", "-", figure_page.removesuffix(".html")).strip("-")
    report = []
    for i in range(expected):
        fig = figs.nth(i)
        fig.scroll_into_view_if_needed()
        assert fig.is_visible(), f"{figure_page}: figure {i} is not visible"
        handles = fig.locator(".aiinfra-slider:not(.aiinfra-live-only) .noUi-handle")
        assert handles.count() >= 1, f"{figure_page}: figure {i} has no enabled slider"
        entry = {"figure": i, "sliders": handles.count(), "screenshots": {}}
        for j in range(handles.count()):
            before_text, before_src = _frame_state(fig)
            if j == 0:
                shot = artifacts / f"{stem}-fig{i}-before.png"
                fig.screenshot(path=str(shot))
                entry["screenshots"]["before"] = {"file": shot.name, "bytes": shot.stat().st_size}
            key = _press(page, handles.nth(j))
            page.wait_for_function(
                "([el, src]) => { const img = [...el.querySelectorAll('.aiinfra-frame')]"
                ".find(x => x.offsetParent !== null); return img && img.getAttribute('src') !== src; }",
                arg=[fig.element_handle(), before_src],
                timeout=5_000,
            )
            after_text, after_src = _frame_state(fig)
            assert after_src != before_src, (
                f"{figure_page}: figure {i} slider {j} {key}: image did not change"
            )
            assert after_text != before_text, (
                f"{figure_page}: figure {i} slider {j} {key}: readout stayed {before_text!r}"
            )
            if j == 0:
                shot = artifacts / f"{stem}-fig{i}-after.png"
                fig.screenshot(path=str(shot))
                entry["screenshots"]["after"] = {"file": shot.name, "bytes": shot.stat().st_size}
        report.append(entry)
    (artifacts / f"figures-{stem}.json").write_text(json.dumps(report, indent=2) + "\n")
    for e in report:
        shots = ", ".join(f"{k} {v['file']} ({v['bytes']:,} B)" for k, v in e["screenshots"].items())
        print(f"{figure_page} figure {e['figure']}: {e['sliders']} slider(s); {shots}")
    assert not visit.blocked, f"{figure_page} tried to reach outside the book: {visit.blocked}"
    assert not visit.console_errors, f"{figure_page}: console errors: {visit.console_errors}"
