#!/usr/bin/env python3
"""Generate exercises/chNN.ipynb (student) and solutions/chNN.ipynb (reference) for every chapter module.

    python -m aiinfra_build.build_exercises                    # write the repo's copies (variants off)
    python -m aiinfra_build.build_exercises --check            # exit 1 if a committed file is stale
    python -m aiinfra_build.build_exercises --variants --key ~/course/variant.key --roster roster.txt --out handout/

The last form is an instructor's per-student hand-out: ``handout/exercises/chNN.ipynb`` (the
assignment, for ``aiinfra-grade --assignment``), ``handout/solutions/chNN.ipynb`` and one
personal notebook per roster line, ``handout/students/<id>/chNN.ipynb``, whose first cell
carries that student's own parameters. The parameters are drawn with the secret key in
``--key`` (made there, mode 0600, if the file does not exist): keep it outside the hand-out,
and give the same file to ``aiinfra-grade --variant-key``. Without it nobody can compute a
classmate's parameters.

The output is deterministic (sorted keys, fixed cell ids, no outputs), so the
check mode compares bytes. Never edit the generated files by hand: edit
src/aiinfra/course/exercises/chNN.py and rerun.

The exercise texts are written in the book's MyST; their Markdown cells go through the
same converter as the chapter notebooks (tools/aiinfra_build/doctree_markdown.py), so Colab and
JupyterLab show them as the book does (a dollar sign is math only where the book
typesets math).
"""

from __future__ import annotations

import argparse
import os
import sys
from collections.abc import Sequence
from pathlib import Path

import yaml

from aiinfra_build import ROOT as REPO
from aiinfra_build.doctree_markdown import from_myst
from aiinfra_build.notebooks import pip_source


def plain(nb: dict) -> dict:
    """The notebook with every Markdown cell converted from MyST to plain Markdown."""
    extensions = yaml.safe_load((REPO / "_config.yml").read_text())["parse"]["myst_enable_extensions"]
    for cell in nb["cells"]:
        if cell["cell_type"] == "markdown":
            cell["source"] = from_myst(cell["source"], extensions)
    return nb


def build(
    out: Path,
    variants: bool,
    chapters: list[str] | None = None,
    key: bytes | None = None,
    roster: Sequence[str] = (),
) -> dict[Path, str]:
    """Path -> text of every file to generate (with variants: one personal notebook per roster id)."""
    from aiinfra.book import colab
    from aiinfra.course.exercises import notebooks, registry
    from aiinfra.course.grading.export import safe_name

    source = pip_source()  # repository.url and .branch from _config.yml, typed once
    files = {}
    for ch in chapters or registry.chapters():
        files[out / "exercises" / f"{ch}.ipynb"] = colab.notebook_text(
            plain(notebooks.student_notebook(ch, variants, source))
        )
        files[out / "solutions" / f"{ch}.ipynb"] = colab.notebook_text(
            plain(notebooks.solution_notebook(ch, variants, source))
        )
        for sid in roster:
            files[out / "students" / safe_name(sid) / f"{ch}.ipynb"] = colab.notebook_text(
                plain(notebooks.student_notebook(ch, True, source, student=sid, key=key))
            )
    return files


def read_roster(path: Path) -> list[str]:
    """Student ids, one a line (blank lines and ``#`` comments skipped), each valid and listed once."""
    from aiinfra.course.exercises.record import student_id

    ids = [
        student_id(line)
        for line in path.read_text(encoding="utf-8").splitlines()
        if line.strip() and not line.lstrip().startswith("#")
    ]
    twice = sorted({i for i in ids if ids.count(i) > 1})
    if twice or not ids:
        raise ValueError(f"roster {path} must list each student once, at least one: {twice or 'empty'}")
    return ids


def variant_key(path: Path, out: Path) -> bytes:
    """The key in ``path``, made there (mode 0600) if the file does not exist; never inside ``out``."""
    from aiinfra.course.exercises.variants import new_key, read_key

    if path.resolve().is_relative_to(out.resolve()):
        raise ValueError(f"key {path} lies inside the hand-out folder {out}: keep it outside")
    if not path.exists():
        path.parent.mkdir(parents=True, exist_ok=True)
        fd = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o600)
        with os.fdopen(fd, "w", encoding="ascii") as fh:
            fh.write(new_key())
        print(f"wrote a new variant key to {path}: keep it secret, and outside the hand-out", file=sys.stderr)
    return read_key(path)


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument(
        "--out",
        type=Path,
        default=REPO,
        help="folder that receives exercises/ and solutions/ (default: repo)",
    )
    ap.add_argument(
        "--variants",
        action="store_true",
        help="per-student parameters, drawn from each student's id with the instructor's --key",
    )
    ap.add_argument(
        "--key", type=Path, help="the secret variant key file (made if missing); needed with --variants"
    )
    ap.add_argument(
        "--roster", type=Path, help="student ids, one a line: one personal notebook each (with --variants)"
    )
    ap.add_argument(
        "--check", action="store_true", help="write nothing; exit 1 if any generated file is missing or stale"
    )
    ap.add_argument("--chapter", action="append", help="only this chapter (repeatable), e.g. --chapter ch01")
    args = ap.parse_args(argv)
    if args.variants != bool(args.key and args.roster) or (args.key or args.roster) and not args.variants:
        ap.error("--variants needs --key FILE and --roster FILE (and they need --variants)")
    try:
        key = variant_key(args.key, args.out) if args.variants else None
        roster = read_roster(args.roster) if args.variants else []
    except ValueError as exc:
        ap.error(str(exc))
    files = build(args.out, args.variants, args.chapter, key, roster)
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
            print(f"stale: {path} (run: python -m aiinfra_build.build_exercises)", file=sys.stderr)
        if not stale:
            print(f"{len(files)} generated notebooks are up to date")
        return 1 if stale else 0
    return 0


if __name__ == "__main__":
    sys.exit(main())
