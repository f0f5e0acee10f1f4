"""Every interactive figure of the static book responds to its sliders with no kernel.

Figures are found generically: the page's embedded widget state says how many
views carry the ``aiinfra-figure`` class (see :mod:`aiinfra.book.interactive`), and
all of them must render. For every enabled slider of every figure, pressing
an arrow key on its handle must change both the readout text and the image.
Screenshots of each figure before and after the first key press go to
``tests/artifacts/`` (PNG, git-ignored) and their sizes to
``tests/artifacts/figures-<page>.json``. The key presses are the last part of this worker's one
visit of the page (:mod:`tests.browser.snapshots`), after everything the other checks read.
"""

from __future__ import annotations

import json
import re

from .conftest import BUILD, MISSING, expected_figures


def _one_visible(state: dict, where: str) -> None:
    assert state["readouts"] == 1, f"{where}: expected one visible readout, found {state['readouts']}"
    assert state["images"] == 1, f"{where}: expected one visible image, found {state['images']}"


def test_figures_move_without_kernel(figure_page, built_book, snapshots, artifacts):
    assert figure_page != MISSING, "no page of the built book shows an interactive figure"
    expected = expected_figures((BUILD / figure_page).read_text(encoding="utf-8"))
    seen = snapshots(figure_page)["figures"]
    assert seen["rendered"] == expected, (
        f"{figure_page}: {seen['rendered']} figures rendered, {expected} embedded"
    )
    live = seen["live"]
    assert live == 0, (
        f"{figure_page}: {live} figure(s) were saved in live mode (no precomputed frames, so they cannot move "
        "without a kernel): the page was executed without AIINFRA_BOOK_BUILD=1, or a stale jupyter-cache "
        "entry from such a run was reused; clear _build/.jupyter_cache and run `make book`"
    )

    stem = re.sub(r"[^A-Za-z0-9]+", "-", figure_page.removesuffix(".html")).strip("-")
    report = []
    for fig in seen["figures"]:
        i = fig["figure"]
        assert fig["visible"], f"{figure_page}: figure {i} is not visible"
        assert fig["sliders"] >= 1, f"{figure_page}: figure {i} has no enabled slider"
        for move in fig["moves"]:
            j, key, before, after = move["slider"], move["key"], move["before"], move["after"]
            _one_visible(before, f"{figure_page}: figure {i} slider {j} before {key}")
            _one_visible(after, f"{figure_page}: figure {i} slider {j} after {key}")
            assert after["src"] != before["src"], (
                f"{figure_page}: figure {i} slider {j} {key}: image did not change"
            )
            assert after["text"] != before["text"], (
                f"{figure_page}: figure {i} slider {j} {key}: readout stayed {before['text']!r}"
            )
        report.append({"figure": i, "sliders": fig["sliders"], "screenshots": fig["screenshots"]})
    (artifacts / f"figures-{stem}.json").write_text(json.dumps(report, indent=2) + "\n")
    for e in report:
        shots = ", ".join(f"{k} {v['file']} ({v['bytes']:,} B)" for k, v in e["screenshots"].items())
        print(f"{figure_page} figure {e['figure']}: {e['sliders']} slider(s); {shots}")
    assert not seen["blocked"], f"{figure_page} tried to reach outside the book: {seen['blocked']}"
    assert not seen["console_errors"], f"{figure_page}: console errors: {seen['console_errors']}"
