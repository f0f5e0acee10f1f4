"""Compare the text of two builds of the book, page by page: did any number move?

myst-nb renders ``{glue:text}`` as plain text, so the glued numbers are in
the page text. This reads the main article of every HTML page of two builds,
splits it into sentences-ish lines and prints, for each page whose text
differs, the lines that changed (a number that moved shows up as one line
out, one line in)::

    python tools/compare_pages.py OLD_HTML_DIR [NEW_HTML_DIR]   # NEW defaults to _build/html
    python tools/compare_pages.py OLD NEW --numbers             # only lines whose numbers differ

Exit status 0 either way; it reports, it does not judge.
"""

from __future__ import annotations

import argparse
import difflib
import re
import sys
from html.parser import HTMLParser
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
NUMBER = re.compile(r"[-+]?\d[\d,]*(?:\.\d+)?(?:e[-+]?\d+)?")


class _Text(HTMLParser):
    """The visible text inside ``<article>``, minus scripts, styles and the embedded figure state."""

    SKIP = {"script", "style", "noscript", "svg"}

    def __init__(self):
        super().__init__()
        self.depth_article = 0
        self.skip = 0
        self.parts: list[str] = []

    def handle_starttag(self, tag, attrs):
        if tag == "article":
            self.depth_article += 1
        if tag in self.SKIP:
            self.skip += 1
        if tag in ("p", "li", "tr", "h1", "h2", "h3", "h4", "div", "br", "td", "th", "dt", "dd"):
            self.parts.append("\n")

    def handle_endtag(self, tag):
        if tag == "article":
            self.depth_article -= 1
        if tag in self.SKIP and self.skip:
            self.skip -= 1

    def handle_data(self, data):
        if self.depth_article and not self.skip:
            self.parts.append(data)


def page_lines(path: Path) -> list[str]:
    p = _Text()
    p.feed(path.read_text(errors="replace"))
    text = "".join(p.parts)
    lines: list[str] = []
    for block in text.split("\n"):
        block = " ".join(block.split())
        if not block:
            continue
        # one sentence per line, so a changed number shows the sentence around it
        lines.extend(s for s in re.split(r"(?<=[.;:])\s+(?=[A-Z(])", block) if s)
    return lines


def compare(old: Path, new: Path, numbers_only: bool = False) -> int:
    changed = 0
    pages = sorted(p.relative_to(old) for p in old.rglob("*.html") if "_static" not in p.parts)
    for rel in pages:
        a_path, b_path = old / rel, new / rel
        if not b_path.exists():
            print(f"== {rel}: missing from the new build")
            changed += 1
            continue
        a, b = page_lines(a_path), page_lines(b_path)
        if a == b:
            continue
        out = []
        for line in difflib.unified_diff(a, b, lineterm="", n=0):
            if line.startswith(("---", "+++", "@@")):
                continue
            out.append(line)
        if numbers_only:
            minus = [NUMBER.findall(x[1:]) for x in out if x.startswith("-")]
            plus = [NUMBER.findall(x[1:]) for x in out if x.startswith("+")]
            if sorted(map(tuple, minus)) == sorted(map(tuple, plus)):
                continue
        changed += 1
        print(f"== {rel}")
        for line in out:
            print("  " + line[:400])
    print(f"{changed} page(s) differ out of {len(pages)}")
    return changed


def main(argv=None) -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("old", type=Path)
    ap.add_argument("new", type=Path, nargs="?", default=ROOT / "_build" / "html")
    ap.add_argument(
        "--numbers", action="store_true", help="show a page only if the numbers in its changed lines differ"
    )
    args = ap.parse_args(argv)
    compare(args.old, args.new, args.numbers)
    sys.exit(0)


if __name__ == "__main__":
    main()
