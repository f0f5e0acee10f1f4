"""The generated Colab notebooks (notebooks/) stay in step with the book's sources."""
import subprocess
import sys
from pathlib import Path

import nbformat
import pytest

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT / "tools"))
import notebooks as gen  # noqa: E402

NOTEBOOKS = sorted((ROOT / "notebooks").rglob("*.ipynb"))


def test_every_page_has_a_current_notebook():
    result = subprocess.run([sys.executable, "tools/notebooks.py", "--check"], cwd=ROOT,
                            capture_output=True, text=True)
    assert result.returncode == 0, result.stderr


def test_there_is_a_notebook_for_every_chapter():
    chapters = {p.relative_to(ROOT / "notebooks").parts[0] for p in NOTEBOOKS}
    assert {f"ch0{i}" for i in range(1, 9)} <= chapters


@pytest.mark.parametrize("path", NOTEBOOKS, ids=lambda p: str(p.relative_to(ROOT)))
def test_notebook_is_colab_ready(path):
    nb = nbformat.read(path, as_version=4)
    url, branch = gen.repository()
    first = nb.cells[0]
    assert gen.SETUP_TAG in first.metadata.get("tags", [])
    assert '"google.colab" in sys.modules' in first.source
    assert f"git+{url}@{branch}" in first.source
    assert "--no-deps" in first.source  # never upgrades Colab's ipywidgets
    assert "widgets" not in nb.metadata
    assert nb.metadata["kernelspec"]["name"] == "python3"
    for cell in nb.cells:
        if cell.cell_type != "code":
            continue
        checked = gen.CHECK_TAG in cell.metadata.get("tags", [])
        assert checked == gen.keeps_output(cell)
        if not checked:
            assert cell.outputs == [], "volatile or unchecked outputs must be stripped"
        for out in cell.outputs:
            assert "application/vnd.jupyter.widget-view+json" not in out.get("data", {})


def test_glued_numbers_are_checked_in_every_chapter():
    per_chapter = {}
    for path in NOTEBOOKS:
        nb = nbformat.read(path, as_version=4)
        n = sum(gen.CHECK_TAG in c.metadata.get("tags", []) and bool(c.outputs) for c in nb.cells)
        chapter = path.relative_to(ROOT / "notebooks").parts[0]
        per_chapter[chapter] = per_chapter.get(chapter, 0) + n
    missing = [ch for ch, n in per_chapter.items() if ch.startswith("ch") and n == 0]
    assert not missing, f"chapters with no nbval-checked glue output: {missing}"
