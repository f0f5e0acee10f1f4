"""The built book works offline: pages load cleanly, math is typeset, links resolve.

Pages are discovered from ``_build/html``; a missing build fails (see conftest). The checks in
chromium read what this worker's one visit of the page recorded (:mod:`tests.browser.snapshots`).
"""

from __future__ import annotations

import re
from html.parser import HTMLParser
from pathlib import Path, PurePosixPath
from urllib.parse import unquote, urlparse

import pytest

from .conftest import BUILD, MISSING

# <link rel=...> values that make the browser fetch the target
FETCHING_RELS = {
    "stylesheet",
    "preload",
    "modulepreload",
    "prefetch",
    "icon",
    "shortcut",
    "apple-touch-icon",
    "manifest",
    "preconnect",
    "dns-prefetch",
}


class _Refs(HTMLParser):
    """Collect ids, anchors and every fetched resource of one page."""

    def __init__(self):
        super().__init__(convert_charrefs=True)
        self.ids: set[str] = set()
        self.hrefs: list[str] = []  # navigations (<a href>)
        self.fetched: list[str] = []  # resources the browser loads

    def handle_starttag(self, tag, attrs):
        a = dict(attrs)
        for key in ("id", "name"):
            if a.get(key):
                self.ids.add(a[key])
        if tag == "a" and a.get("href"):
            self.hrefs.append(a["href"])
        elif tag == "link" and a.get("href"):
            rels = set((a.get("rel") or "").lower().split())
            if rels & FETCHING_RELS:
                self.fetched.append(a["href"])
            elif not rels & {"canonical", "alternate"}:
                self.hrefs.append(a["href"])
        elif tag in {"script", "img", "iframe", "source", "audio", "video", "embed", "track"} and a.get(
            "src"
        ):
            self.fetched.append(a["src"])
        elif tag == "object" and a.get("data"):
            self.fetched.append(a["data"])


_PARSED: dict[str, _Refs] = {}


def refs(rel: str) -> _Refs:
    if rel not in _PARSED:
        p = _Refs()
        p.feed((BUILD / rel).read_text(encoding="utf-8"))
        _PARSED[rel] = p
    return _PARSED[rel]


def _external(url: str) -> bool:
    u = urlparse(url)
    return u.scheme in {"http", "https"} or url.startswith("//")


def _resolve(page: str, url: str) -> tuple[Path, str]:
    u = urlparse(url)
    target = (PurePosixPath(page).parent / unquote(u.path)) if u.path else PurePosixPath(page)
    parts = []
    for part in target.parts:
        if part == "..":
            if parts:
                parts.pop()
        elif part not in {"", "."}:
            parts.append(part)
    path = BUILD.joinpath(*parts) if parts else BUILD
    if path.is_dir():
        path = path / "index.html"
    return path, u.fragment


def _need(page_path: str, built_book):
    assert page_path != MISSING, f"no pages found under {built_book}"
    assert (built_book / page_path).is_file(), f"{page_path} missing under {built_book}: run `make book`"


def test_book_has_pages(built_book):
    from .conftest import book_pages

    pages = book_pages()
    assert "index.html" in pages
    assert len(pages) >= 2, f"only {pages} under {built_book}"


def test_no_external_resource_in_html(page_path, built_book):
    """No <script src>, fetched <link>, <img> or other resource points outside the book."""
    _need(page_path, built_book)
    bad = [u for u in refs(page_path).fetched if _external(u)]
    assert not bad, f"{page_path} loads resources from outside the book: {bad}"


def test_no_external_url_in_static_css(built_book):
    """Stylesheets under _static fetch nothing remote (fonts, @import)."""
    bad = []
    for css in (built_book / "_static").rglob("*.css"):
        text = css.read_text(encoding="utf-8", errors="replace")
        for m in re.finditer(r"""(?:url\(\s*['"]?|@import\s+['"])(https?:)?//""", text):
            # comments in vendored CSS may mention URLs; only flag real rules
            start = text.rfind("/*", 0, m.start())
            end = text.rfind("*/", 0, m.start())
            if start != -1 and start > end:
                continue
            bad.append(f"{css.relative_to(built_book)}: {text[m.start() : m.start() + 80]!r}")
    assert not bad, "remote URLs in CSS:\n" + "\n".join(bad)


def test_internal_links_resolve(page_path, built_book):
    """Every local href/src points at a file of the build (and at an existing anchor)."""
    _need(page_path, built_book)
    p = refs(page_path)
    broken = []
    for url in p.hrefs + p.fetched:
        if _external(url) or url.startswith(("mailto:", "data:", "javascript:", "tel:", "blob:")):
            continue
        path, frag = _resolve(page_path, url)
        if not path.is_file():
            broken.append(
                f"{url} -> missing {path.relative_to(built_book) if path.is_relative_to(built_book) else path}"
            )
            continue
        if frag and path.suffix == ".html":
            target = refs(path.relative_to(built_book).as_posix())
            if frag not in target.ids:
                broken.append(f"{url} -> no id {frag!r} in {path.relative_to(built_book)}")
    assert not broken, f"{page_path}: broken internal links:\n" + "\n".join(broken)


def test_page_loads_clean(page_path, built_book, snapshots):
    """The page loads with no console error, no failed local request and nothing blocked."""
    _need(page_path, built_book)
    load = snapshots(page_path)["load"]
    assert not load["blocked"], f"{page_path} tried to reach outside the book: {load['blocked']}"
    assert not load["failed"], f"{page_path}: failed requests: {load['failed']}"
    assert not load["console_errors"], f"{page_path}: console errors: {load['console_errors']}"


OUTSIDE = ("http://example.invalid/pixel.png", "http://192.0.2.1/pixel.png", "https://example.com/data.json")


def test_a_request_outside_the_book_is_recorded_and_never_answered(built_book, visit):
    """The guard the page checks rely on: a page reaching for a host name, an IP literal or an
    https URL outside the local server has each request recorded as blocked, and none loads."""
    visit.goto("index.html")
    loaded = visit.page.evaluate(
        """async (urls) => {
          const image = (u) => new Promise(done => {
            const img = new Image(); img.onload = () => done(true); img.onerror = () => done(false); img.src = u;
          });
          const fetched = (u) => fetch(u).then(() => true, () => false);
          return [await image(urls[0]), await image(urls[1]), await fetched(urls[2])];
        }""",
        list(OUTSIDE),
    )
    assert loaded == [False, False, False]
    assert sorted(set(visit.blocked)) == sorted(OUTSIDE)


def test_math_is_typeset(math_page, built_book, snapshots):
    """Pages with math get MathJax output (no raw TeX left, no MathJax error nodes)."""
    assert math_page != MISSING, "no page of the book contains math to typeset"
    page_path = math_page
    math = snapshots(page_path)["math"]
    n_math, n_out = math["math"], math["typeset"]
    assert n_out > 0, f"{page_path}: {n_math} math elements but no MathJax output"
    assert n_out >= n_math, f"{page_path}: only {n_out} of {n_math} math elements typeset"
    assert math["errors"] == 0, f"{page_path}: MathJax reported a TeX error"
    src = math["sources"]
    assert src and all("/_static/vendor/mathjax/" in s for s in src), (
        f"MathJax not loaded from the vendored copy: {src}"
    )


@pytest.mark.parametrize(
    "asset",
    [
        "vendor/require.js",
        "vendor/aiinfra-widgets.js",
        "vendor/html-manager/embed-amd.js",
        "vendor/mathjax/tex-chtml.js",
    ],
)
def test_vendored_assets_in_build(built_book, asset):
    f = built_book / "_static" / asset
    assert f.is_file() and f.stat().st_size > 1000, f"{asset} missing from the build: run tools/vendor_js.py"
