"""A chapter's index lists its pages from the toc: every page in order, its title linked, its summary after.

``_toc.yml`` is the only list of pages (``tools/aiinfra_build/sphinx_book.py``, the ``{chapter-pages}``
directive): the numbered pages of ``book/chNN/`` in name order, then ``exercises.md``. The test
derives that order from the files, not from the toc or the extension, and reads the built HTML.
"""

from __future__ import annotations

import re

import pytest
import yaml

from book_pages import BOOK, built

CHAPTERS = sorted(BOOK.glob("ch[0-9][0-9]/index.md"))
ITEM = re.compile(r'<li><p><a class="reference internal" href="([^"#]+)">(.*?)</a>(.*?)</p>\s*</li>', re.S)


def _front_matter(md) -> dict:
    return yaml.safe_load(md.read_text(encoding="utf-8").split("---\n")[1])


def _text(fragment: str) -> str:
    return re.sub(r"<[^>]+>", "", fragment).replace("&quot;", '"').replace("&#8217;", "’").strip()


@pytest.mark.parametrize("index", CHAPTERS, ids=lambda p: p.parent.name)
def test_a_chapter_index_lists_every_page_with_its_summary(index):
    pages = [*sorted(index.parent.glob("[0-9]*.md")), index.parent / "exercises.md"]
    html = built(index).read_text(encoding="utf-8")
    items = ITEM.findall(html)
    assert [href for href, _, _ in items] == [f"{p.stem}.html" for p in pages]
    for (_, title, rest), page in zip(items, pages):
        heading = next(
            line for line in page.read_text(encoding="utf-8").splitlines() if line.startswith("# ")
        )
        assert _text(title) == heading[2:].strip()
        assert _text(rest) == f": {_front_matter(page)['description']}."
