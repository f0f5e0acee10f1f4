"""One search box per page: a reader saw two on every page (issue 20).

sphinx-book-theme puts a search field in the primary sidebar; pydata-sphinx-theme adds a second,
"persistent" one to the header unless ``navbar_persistent`` is set (``tools/aiinfra_build/sphinx_book.py``
sets it empty). Counted as the reader sees them: visible search controls, on a wide screen where
the sidebar is open and on a narrow one where it is folded away.
"""

from __future__ import annotations

import pytest

from .snapshots import SEARCH

PAGES = (
    "index.html",
    "book/ch01/index.html",
    "book/ch02/02-inside-one-server.html",
    "book/front/notation.html",
)


@pytest.mark.parametrize("rel", PAGES)
@pytest.mark.parametrize("width", [1280, 700])
def test_exactly_one_search_box_is_visible(rel, width, built_book, snapshots):
    controls = snapshots(rel, width)["search"]
    assert len(controls) == 1, f"{rel} at {width} px shows {len(controls)} search controls: {controls}"


def test_the_one_search_box_opens_the_search_dialog(built_book, visit):
    page = visit.goto("book/ch01/index.html")
    box = next(el for el in page.query_selector_all(SEARCH) if el.is_visible())
    box.click()
    page.wait_for_selector("input[type=search]", state="visible", timeout=10_000)
