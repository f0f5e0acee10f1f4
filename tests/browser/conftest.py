"""Fixtures for the browser tests: the built book, a local server and chromium.

The tests run over ``_build/html`` (or ``$AIINFRA_BOOK_HTML``), served from a
localhost HTTP server thread, in Debian's ``/usr/bin/chromium`` driven by
Playwright. Every request that does not go to that server (or is not a
``data:``/``blob:`` URL) is recorded, and fails: chromium sends it to a proxy that is a
closed local port, so nothing reaches the network and a test fails if the book tries to. (A
Playwright route would pause every request for a round trip through Python: about a third of
a page load's CPU.) A missing book or browser is a failure, never a skip: ``make test`` builds
the book first.

The page checks read one visit of each page (:mod:`tests.browser.snapshots`), made in one tab
per worker: a fresh browser context costs chromium a new renderer, about a CPU second, more
than the rest of a load. Between two visits the tab goes to ``about:blank`` and forgets what the
last page recorded. A check that changes its page gets a context of its own (``visit``).
"""

from __future__ import annotations

import contextlib
import functools
import http.server
import json
import os
import re
import socket
import threading
from dataclasses import dataclass, field
from pathlib import Path
from urllib.parse import urlparse

import pytest

from book_pages import sources

from .snapshots import WIDE, Snapshot, gather

ROOT = Path(__file__).resolve().parents[2]
BUILD = Path(os.environ.get("AIINFRA_BOOK_HTML", ROOT / "_build" / "html"))
CHROMIUM = os.environ.get("AIINFRA_CHROMIUM", "/usr/bin/chromium")
ARTIFACTS = ROOT / "tests" / "artifacts"
CHROMIUM_ARGS = ["--headless", "--no-sandbox", "--disable-gpu", "--disable-background-networking"]
MISSING = "<no built book>"
# generous: the test machine may be shared; a healthy page settles in ~3 s
LOAD_TIMEOUT_MS = 90_000
# true once the page has settled: MathJax (when present) has typeset, web fonts are
# loaded, and the widget manager has made an area for every embedded widget view
SETTLED_JS = """() => {
  if (document.readyState !== 'complete' || document.fonts.status !== 'loaded') return false;
  const mj = window.MathJax;
  if (mj && mj.startup && mj.startup.promise && !window.__aiinfraTypeset) {
    window.__aiinfraTypeset = 'waiting';
    mj.startup.promise.then(() => { window.__aiinfraTypeset = 'done'; });
  }
  if (mj && mj.startup && window.__aiinfraTypeset !== 'done') return false;
  const views = document.querySelectorAll('script[type="application/vnd.jupyter.widget-view+json"]');
  return [...views].every(v => v.previousElementSibling
    && v.previousElementSibling.classList.contains('widget-subarea'));
}"""


def book_pages() -> list[str]:
    """Every HTML page of the book, relative to the build's root (posix): the root's redirect and
    one page per source (``book/**/*.md``), whether or not it was built (a missing one fails)."""
    return ["index.html"] + [md.relative_to(ROOT).with_suffix(".html").as_posix() for md in sources()]


_VIEW_RE = re.compile(r'<script type="application/vnd\.jupyter\.widget-view\+json">(.*?)</script>', re.S)
_STATE_RE = re.compile(r'<script type="application/vnd\.jupyter\.widget-state\+json">(.*?)</script>', re.S)


def expected_figures(html: str) -> int:
    """How many interactive figures a page displays, from its embedded widget state.

    A figure is a displayed widget view whose root model carries the CSS
    class ``aiinfra-figure`` (set by :mod:`aiinfra.book.interactive`).
    """
    m = _STATE_RE.search(html)
    if not m:
        return 0
    state = json.loads(m.group(1)).get("state", {})
    n = 0
    for view in _VIEW_RE.findall(html):
        model = state.get(json.loads(view).get("model_id"), {})
        if "aiinfra-figure" in model.get("state", {}).get("_dom_classes", []):
            n += 1
    return n


def has_math(html: str) -> bool:
    """True for a page with math for MathJax to typeset."""
    return 'class="math' in html


def pytest_generate_tests(metafunc):
    if "page_path" in metafunc.fixturenames:
        metafunc.parametrize("page_path", book_pages())
    built = [p for p in book_pages() if (BUILD / p).is_file()]
    if "math_page" in metafunc.fixturenames:
        pages = [p for p in built if has_math((BUILD / p).read_text(encoding="utf-8"))]
        metafunc.parametrize("math_page", pages or [MISSING])
    if "figure_page" in metafunc.fixturenames:
        with_figs = [p for p in built if expected_figures((BUILD / p).read_text(encoding="utf-8"))]
        metafunc.parametrize("figure_page", with_figs or [MISSING])


def pytest_collection_modifyitems(config, items):
    for item in items:
        if "tests/browser/" in item.nodeid.replace(os.sep, "/"):
            item.add_marker(pytest.mark.browser)


@pytest.fixture(scope="session")
def built_book() -> Path:
    if not (BUILD / "index.html").is_file():
        pytest.fail(f"no built book at {BUILD}: run `make book` (the browser tests never skip)")
    return BUILD


class _QuietHandler(http.server.SimpleHTTPRequestHandler):
    def log_message(self, *args):
        pass


@pytest.fixture(scope="session")
def server(built_book):
    handler = functools.partial(_QuietHandler, directory=str(built_book))
    httpd = http.server.ThreadingHTTPServer(("127.0.0.1", 0), handler)
    thread = threading.Thread(target=httpd.serve_forever, daemon=True)
    thread.start()
    yield f"http://127.0.0.1:{httpd.server_address[1]}"
    httpd.shutdown()
    httpd.server_close()


@pytest.fixture(scope="session")
def browser():
    if not Path(CHROMIUM).is_file():
        pytest.fail(
            f"chromium not found at {CHROMIUM}: apt-get install -y chromium (the browser tests never skip)"
        )
    from playwright.sync_api import sync_playwright

    with sync_playwright() as pw, socket.socket() as hole:
        hole.bind(("127.0.0.1", 0))  # bound and never listening: a connection to it is refused
        dead_end = {"server": f"http://127.0.0.1:{hole.getsockname()[1]}", "bypass": "127.0.0.1"}
        b = pw.chromium.launch(executable_path=CHROMIUM, args=CHROMIUM_ARGS, headless=True, proxy=dead_end)
        yield b
        b.close()


@dataclass
class Visit:
    """A browser page plus what it recorded: console errors, blocked and failed requests."""

    page: object
    base: str
    console_errors: list = field(default_factory=list)
    blocked: list = field(default_factory=list)
    failed: list = field(default_factory=list)

    def goto(self, rel: str):
        self.page.goto(f"{self.base}/{rel}", wait_until="load", timeout=LOAD_TIMEOUT_MS)
        # Wait for what the page itself does after "load" (MathJax's first typeset, web
        # fonts, one widget area per embedded view), not for "networkidle": that waits for
        # 500 ms without a request, which a loaded CI machine may never give (it timed out
        # once at 90 s on a page that settles in 2 s here).
        self.page.wait_for_function(SETTLED_JS, timeout=LOAD_TIMEOUT_MS, polling=100)
        return self.page

    def reset(self, width: int) -> None:
        """Leave the last page (its late events stay with it) and forget what it recorded."""
        self.page.goto("about:blank")
        self.page.set_viewport_size({"width": width, "height": 900})
        for record in (self.console_errors, self.blocked, self.failed):
            record.clear()


def _is_local(url: str, base: str) -> bool:
    if url.startswith(("data:", "blob:", "about:")):
        return True
    u, b = urlparse(url), urlparse(base)
    return (u.scheme, u.netloc) == (b.scheme, b.netloc)


@contextlib.contextmanager
def open_visit(browser, server):
    """A fresh browser context whose page records console errors, blocked and failed requests."""
    context = browser.new_context(viewport={"width": WIDE, "height": 900}, service_workers="block")
    page = context.new_page()
    v = Visit(page, server)

    page.on("request", lambda r: _is_local(r.url, server) or v.blocked.append(r.url))
    page.on("console", lambda m: m.type == "error" and v.console_errors.append(m.text))
    page.on("pageerror", lambda e: v.console_errors.append(f"uncaught: {e}"))
    page.on("response", lambda r: r.status >= 400 and v.failed.append(f"{r.status} {r.url}"))
    page.on("requestfailed", lambda r: _is_local(r.url, server) and v.failed.append(f"failed {r.url}"))
    try:
        yield v
    finally:
        context.close()


@pytest.fixture
def visit(browser, server):
    """A page of its own, for a check that changes the page (clicks, injected content)."""
    with open_visit(browser, server) as v:
        yield v


@pytest.fixture(scope="session")
def snapshots(browser, server, artifacts):
    """``snapshots(page, width)``: this worker's one visit of a built page at a window width.

    What the page checks read is gathered in that visit (:mod:`tests.browser.snapshots`); the
    first check of a page pays for it and the others read the record. Every visit of this
    worker is made in one tab (the module's docstring).
    """
    cache: dict[tuple[str, int], Snapshot] = {}
    with open_visit(browser, server) as tab:

        def snapshot(page_path: str, width: int = WIDE) -> Snapshot:
            if (page_path, width) not in cache:
                html = (BUILD / page_path).read_text(encoding="utf-8")
                tab.reset(width)
                cache[page_path, width] = gather(
                    tab,
                    page_path,
                    width,
                    math=has_math(html),
                    figures=expected_figures(html),
                    fit=has_math(html) or "<table" in html,
                    artifacts=artifacts,
                )
            return cache[page_path, width]

        yield snapshot


@pytest.fixture(scope="session")
def artifacts() -> Path:
    ARTIFACTS.mkdir(parents=True, exist_ok=True)
    return ARTIFACTS
