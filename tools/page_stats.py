"""Code lines per content page: how thin the chapters are.

A content page is a numbered page of a chapter, ``book/chNN/[0-9]*.md`` (the
chapter index pages are left out). A code line is a line inside a
``{code-cell}`` that is not blank, not a ``#`` comment and not cell metadata
(``:tags:``). Prints the median and the spread, the share of code lines that
publish numbers (``glue(``), and the pages with the most code::

    python tools/page_stats.py              # the working tree
    python tools/page_stats.py --ref main   # a commit, read with git (compare before/after)
    python tools/page_stats.py --json       # one JSON object
"""

from __future__ import annotations

import argparse
import json
import re
import statistics
import subprocess
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
PAGE = re.compile(r"^book/ch\d\d/\d[^/]*\.md$")
META = re.compile(r"^:[a-z_-]+:")


def count(text: str) -> tuple[int, int]:
    """``(code lines, glue lines)`` of one page."""
    lines = glue = 0
    inside = False
    for raw in text.splitlines():
        if raw.startswith("```{code-cell}"):
            inside = True
            continue
        if inside and raw.startswith("```"):
            inside = False
            continue
        if not inside:
            continue
        s = raw.strip()
        if not s or s.startswith("#") or META.match(s):
            continue
        lines += 1
        glue += "glue(" in s
    return lines, glue


def pages(ref: str | None) -> dict[str, str]:
    """Page path -> text, from the working tree or from commit ``ref``."""
    if ref is None:
        return {
            str(p.relative_to(ROOT)): p.read_text()
            for p in sorted(ROOT.glob("book/ch*/*.md"))
            if PAGE.match(str(p.relative_to(ROOT)))
        }
    names = subprocess.run(
        ["git", "ls-tree", "-r", "--name-only", ref, "book"],
        cwd=ROOT,
        check=True,
        capture_output=True,
        text=True,
    ).stdout.split()
    return {
        n: subprocess.run(
            ["git", "show", f"{ref}:{n}"], cwd=ROOT, check=True, capture_output=True, text=True
        ).stdout
        for n in names
        if PAGE.match(n)
    }


def stats(texts: dict[str, str]) -> dict:
    counts = {name: count(text) for name, text in texts.items()}
    code = [c for c, _ in counts.values()]
    total = sum(code)
    return {
        "pages": len(code),
        "median_code_lines": statistics.median(code) if code else 0,
        "mean_code_lines": round(total / len(code), 1) if code else 0,
        "max_code_lines": max(code, default=0),
        "total_code_lines": total,
        "glue_line_share": round(sum(g for _, g in counts.values()) / total, 3) if total else 0.0,
        "heaviest": sorted(((c, n) for n, (c, _) in counts.items()), reverse=True)[:5],
    }


def main(argv=None) -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--ref", help="a git commit to measure instead of the working tree")
    ap.add_argument("--json", action="store_true", help="print one JSON object")
    args = ap.parse_args(argv)
    s = stats(pages(args.ref))
    if args.json:
        print(json.dumps(s))
        return
    print(
        f"{s['pages']} content pages: median {s['median_code_lines']} code lines per page "
        f"(mean {s['mean_code_lines']}, max {s['max_code_lines']}, total {s['total_code_lines']}); "
        f"{s['glue_line_share']:.0%} of code lines are glue calls"
    )
    for n, name in s["heaviest"]:
        print(f"  {n:4d}  {name}")


if __name__ == "__main__":
    main()
