#!/usr/bin/env python3
"""Generate exercises/chNN.ipynb (student) and solutions/chNN.ipynb (reference) for every chapter module.

    python tools/build_exercises.py                    # write the repo's copies (variants off)
    python tools/build_exercises.py --check            # exit 1 if a committed file is stale
    python tools/build_exercises.py --variants --out handout/   # an instructor's per-student hand-out

The output is deterministic (sorted keys, fixed cell ids, no outputs), so the
check mode compares bytes. Never edit the generated files by hand: edit
src/aiinfra/course/exercises/chNN.py and rerun.

The exercise texts are written in the book's MyST; their Markdown cells go through the
same converter as the chapter notebooks (book/_ext/doctree_markdown.py), so Colab and
JupyterLab show them as the book does (a dollar sign is math only where the book
typesets math).
"""

from __future__ import annotations

import argparse
import sys
from pathlib import Path

import yaml

REPO = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(REPO / "tools"))
sys.path.insert(0, str(REPO / "book" / "_ext"))
from doctree_markdown import from_myst  # noqa: E402 - importable only after the sys.path insert above
from notebooks import pip_source  # noqa: E402 - importable only after the sys.path insert above


def plain(nb: dict) -> dict:
    """The notebook with every Markdown cell converted from MyST to plain Markdown."""
    extensions = yaml.safe_load((REPO / "_config.yml").read_text())["parse"]["myst_enable_extensions"]
    for cell in nb["cells"]:
        if cell["cell_type"] == "markdown":
            cell["source"] = from_myst(cell["source"], extensions)
    return nb


def build(out: Path, variants: bool, chapters: list[str] | None = None) -> dict[Path, str]:
    """Path -> text of every file to generate."""
    from aiinfra.course.exercises import notebooks, registry

    source = pip_source()  # repository.url and .branch from _config.yml, typed once
    files = {}
    for ch in chapters or registry.chapters():
        files[out / "exercises" / f"{ch}.ipynb"] = notebooks.dumps(
            plain(notebooks.student_notebook(ch, variants, source))
        )
        files[out / "solutions" / f"{ch}.ipynb"] = notebooks.dumps(
            plain(notebooks.solution_notebook(ch, variants, source))
        )
    return files


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument(
        "--out",
        type=Path,
        default=REPO,
        help="folder that receives exercises/ and solutions/ (default: repo)",
    )
    ap.add_argument(
        "--variants", action="store_true", help="per-student parameters, drawn from each student's id"
    )
    ap.add_argument(
        "--check", action="store_true", help="write nothing; exit 1 if any generated file is missing or stale"
    )
    ap.add_argument("--chapter", action="append", help="only this chapter (repeatable), e.g. --chapter ch01")
    args = ap.parse_args(argv)
    files = build(args.out, args.variants, args.chapter)
    stale = []
    for path, text in sorted(files.items()):
        current = path.read_text(encoding="utf-8") if path.exists() else None
        if current == text:
            continue
        if args.check:
            stale.append(path)
            continue
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(text, encoding="utf-8")
        print(f"wrote {path}")
    if args.check:
        for path in stale:
            print(f"stale: {path} (run: python tools/build_exercises.py)", file=sys.stderr)
        if not stale:
            print(f"{len(files)} generated notebooks are up to date")
        return 1 if stale else 0
    return 0


if __name__ == "__main__":
    sys.exit(main())
