"""Screenshots of every interactive figure in two builds of the book, side by side.

    .venv/bin/python tools/figure_shots.py BEFORE_HTML [AFTER_HTML] [--out tests/artifacts/legibility]

For each page of AFTER_HTML (default ``_build/html``) that shows an ``aiinfra-figure``, and
the page of the same path in BEFORE_HTML, chromium (Debian's, through Playwright, every
non-local request aborted) renders the page at a 1280 px wide window and saves each figure
element as ``<page>-fig<i>-before.png`` / ``-after.png``. ``shots.json`` records, per figure,
the frame image's natural width and its displayed width: the ratio is the pixel density a
reader gets (1.0 at 1:1; 2.0 for a frame drawn for high-density screens).
The output is for reviewing a figure change (issue 20's legibility item); it is not committed.
"""

from __future__ import annotations

import argparse
import functools
import http.server
import json
import re
import threading
from pathlib import Path

from playwright.sync_api import sync_playwright

ARGS = ["--headless", "--no-sandbox", "--disable-gpu", "--disable-background-networking"]


class _Quiet(http.server.SimpleHTTPRequestHandler):
    def log_message(self, *args):
        pass


def _serve(root: Path) -> str:
    handler = functools.partial(_Quiet, directory=str(root))
    server = http.server.ThreadingHTTPServer(("127.0.0.1", 0), handler)
    threading.Thread(target=server.serve_forever, daemon=True).start()
    return f"http://127.0.0.1:{server.server_address[1]}/"


def _figure_pages(root: Path) -> list[str]:
    return sorted(
        p.relative_to(root).as_posix()
        for p in (root / "book").rglob("*.html")
        if "aiinfra-figure" in p.read_text(encoding="utf-8", errors="replace")
    )


def _shoot(page, url: str, out: Path, stem: str, tag: str) -> list[dict]:
    page.goto(url, wait_until="load")
    figs = page.locator(".aiinfra-figure")
    try:
        page.wait_for_function(
            "() => document.querySelectorAll('.aiinfra-figure .aiinfra-frame').length > 0", timeout=20_000
        )
    except Exception:  # a page whose figures never render gets no shot, and says so
        return [{"figure": 0, "error": "no frame rendered"}]
    rows = []
    for i in range(figs.count()):
        fig = figs.nth(i)
        fig.scroll_into_view_if_needed()
        shot = out / f"{stem}-fig{i}-{tag}.png"
        fig.screenshot(path=str(shot))
        size = fig.locator(".aiinfra-frame:visible").first.evaluate(
            "img => [img.naturalWidth, img.getBoundingClientRect().width]"
        )
        rows.append(
            {
                "figure": i,
                "file": shot.name,
                "natural_px": size[0],
                "displayed_px": round(size[1]),
                "density": round(size[0] / size[1], 2) if size[1] else None,
            }
        )
    return rows


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("before", type=Path)
    ap.add_argument("after", type=Path, nargs="?", default=Path("_build/html"))
    ap.add_argument("--out", type=Path, default=Path("tests/artifacts/legibility"))
    args = ap.parse_args(argv)
    args.out.mkdir(parents=True, exist_ok=True)
    roots = {"before": args.before.resolve(), "after": args.after.resolve()}
    bases = {tag: _serve(root) for tag, root in roots.items()}
    report = {}
    with sync_playwright() as pw:
        browser = pw.chromium.launch(executable_path="/usr/bin/chromium", args=ARGS)
        page = browser.new_page(viewport={"width": 1280, "height": 900})
        local = tuple(bases.values()) + ("data:", "blob:")
        page.route("**/*", lambda r: r.continue_() if r.request.url.startswith(local) else r.abort())
        for rel in _figure_pages(roots["after"]):
            stem = re.sub(r"[^A-Za-z0-9]+", "-", rel.removesuffix(".html")).strip("-")
            report[rel] = {
                tag: _shoot(page, bases[tag] + rel, args.out, stem, tag)
                for tag in ("before", "after")
                if (roots[tag] / rel).is_file()
            }
            print(
                rel, {tag: [r.get("density") for r in rows] for tag, rows in report[rel].items()}, flush=True
            )
        browser.close()
    (args.out / "shots.json").write_text(json.dumps(report, indent=1), encoding="utf-8")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
