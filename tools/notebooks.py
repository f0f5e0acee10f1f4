"""Colab/Binder copies of the chapters: one `.ipynb` per book page, generated from its MyST source.

    python tools/notebooks.py --write   # regenerate notebooks/ (outputs from the build's execution cache)
    python tools/notebooks.py --check   # exit 1 if any notebook is missing, stale or orphaned

A generated notebook is the page's cells, preceded by one set-up cell that installs
`aiinfra` when it runs on Colab (pinned to `repository:` in `_config.yml`). Outputs are
stripped, except for the cells that glue numbers into the prose: those keep their output
and carry the `nbval-check-output` tag, so `pytest --nbval-lax notebooks` proves that the
numbers the book prints are the numbers the code computes today. Cells tagged `volatile`
(machine measurements) never keep output.
"""
from __future__ import annotations

import argparse
import os
import sys
from pathlib import Path

import jupytext
import nbformat
import yaml

from aiinfra import colab

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT / "tools"))
BOOK = ROOT / "book"
OUT = ROOT / "notebooks"
CHECK_TAG = "nbval-check-output"
SETUP_TAG = "colab-setup"
STRIP_METADATA = ("widgets", "jupytext", "execution")


def repository() -> tuple[str, str]:
    """(url, branch) from `_config.yml`: the single place the repository is configured."""
    cfg = yaml.safe_load((ROOT / "_config.yml").read_text())
    repo = cfg["repository"]
    return repo["url"].rstrip("/"), repo["branch"]


def pip_source() -> str:
    return colab.pip_source(*repository())


def setup_cell_source() -> str:
    return "\n".join(colab.install_cell_lines(pip_source()))


def setup_cell() -> nbformat.NotebookNode:
    cell = nbformat.v4.new_code_cell(setup_cell_source())
    cell.metadata["tags"] = [SETUP_TAG]
    return cell


def pages() -> list[Path]:
    """Every book page that is a notebook (has a jupytext header)."""
    found = []
    for md in sorted(BOOK.rglob("*.md")):
        if "_build" in md.parts or "glossary" in md.parent.name:
            continue
        head = md.read_text().split("\n", 12)[:12]
        if any(line.startswith("jupytext:") for line in head):
            found.append(md)
    return found


def target(md: Path) -> Path:
    return OUT / md.relative_to(BOOK).with_suffix(".ipynb")


def _tags(cell) -> list[str]:
    return list(cell.get("metadata", {}).get("tags", []))


def keeps_output(cell) -> bool:
    tags = _tags(cell)
    return cell.cell_type == "code" and "glue(" in cell.source and "volatile" not in tags


def skeleton(md: Path) -> nbformat.NotebookNode:
    """The notebook for `md` without outputs, tags settled."""
    nb = jupytext.read(md)
    for key in STRIP_METADATA:
        nb.metadata.pop(key, None)
    nb.metadata["kernelspec"] = {"display_name": "Python 3", "language": "python", "name": "python3"}
    nb.metadata["colab"] = {"provenance": []}
    for cell in nb.cells:
        cell.metadata.pop("execution", None)
        if cell.cell_type == "code":
            cell.outputs, cell.execution_count = [], None
            tags = [t for t in _tags(cell) if t != CHECK_TAG]
            if keeps_output(cell):
                tags.append(CHECK_TAG)
            if tags:
                cell.metadata["tags"] = tags
    nb.cells.insert(0, setup_cell())
    nbformat.validator.normalize(nb)
    return nb


def ran(md: Path) -> nbformat.NotebookNode:
    """The page executed: from the book's execution cache when it holds the page, else run now."""
    from jupyter_cache import get_cache
    from preexecute import read_page

    cfg = yaml.safe_load((ROOT / "_config.yml").read_text())["execute"]
    page = read_page(md)
    try:
        return get_cache(str(ROOT / cfg["cache"])).merge_match_into_notebook(page)[1]
    except KeyError:
        from nbclient import NotebookClient

        os.environ["AIINFRA_BOOK_BUILD"] = "1"
        NotebookClient(page, timeout=cfg["timeout"], kernel_name="python3",
                       resources={"metadata": {"path": str(md.parent)}}).execute()
        return page


def executed(md: Path, nb: nbformat.NotebookNode) -> nbformat.NotebookNode:
    """Copy the outputs of the glue cells (nbval-check-output) from an executed run of the page."""
    run_cells = [c for c in ran(md).cells if c.cell_type == "code"]
    mine_cells = [c for c in nb.cells if c.cell_type == "code" and SETUP_TAG not in _tags(c)]
    assert [c.source for c in mine_cells] == [c.source for c in run_cells], md
    for count, (mine, run) in enumerate(zip(mine_cells, run_cells), start=1):
        if CHECK_TAG in _tags(mine):
            mine.outputs = [o for o in run.outputs if o.get("output_type") != "stream"]
            mine.execution_count = count  # nbval compares only cells that ran
            for out in mine.outputs:
                out.get("data", {}).pop("application/vnd.jupyter.widget-view+json", None)
                if "execution_count" in out:
                    out["execution_count"] = count
    return nb


def comparable(nb) -> list[tuple]:
    return [(c.cell_type, c.source, tuple(_tags(c))) for c in nb.cells]


def write() -> None:
    wanted = {target(md): md for md in pages()}
    for path in OUT.rglob("*.ipynb"):
        if path not in wanted:
            path.unlink()
    for path, md in wanted.items():
        nb = executed(md, skeleton(md))
        path.parent.mkdir(parents=True, exist_ok=True)
        nbformat.write(nb, path)
        print(f"wrote {path.relative_to(ROOT)}")


def check() -> int:
    problems = []
    wanted = {target(md): md for md in pages()}
    for path in sorted(OUT.rglob("*.ipynb")):
        if path not in wanted:
            problems.append(f"{path.relative_to(ROOT)}: no source page (delete it or run --write)")
    for path, md in wanted.items():
        if not path.exists():
            problems.append(f"{path.relative_to(ROOT)}: missing (run tools/notebooks.py --write)")
            continue
        if comparable(nbformat.read(path, as_version=4)) != comparable(skeleton(md)):
            problems.append(f"{path.relative_to(ROOT)}: stale, {md.relative_to(ROOT)} changed (run tools/notebooks.py --write)")
    for line in problems:
        print(line, file=sys.stderr)
    return 1 if problems else 0


def main(argv=None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    mode = parser.add_mutually_exclusive_group(required=True)
    mode.add_argument("--write", action="store_true")
    mode.add_argument("--check", action="store_true")
    args = parser.parse_args(argv)
    os.chdir(ROOT)
    if args.write:
        write()
        return 0
    return check()


if __name__ == "__main__":
    sys.exit(main())
