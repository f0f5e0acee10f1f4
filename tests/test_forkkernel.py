"""tools/forkkernel.py: the build's kernels, forked from a warm process, behave as fresh kernels."""

from __future__ import annotations

import sys
from pathlib import Path

import nbformat
import pytest
from nbclient import NotebookClient

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT / "tools"))
import forkkernel  # noqa: E402 - importable only after the sys.path insert above

pytestmark = pytest.mark.slow


@pytest.fixture(scope="module")
def zygote():
    z = forkkernel.use(["import json", "import no_such_module_here"])
    yield z
    z.close()
    forkkernel.ForkProvisioner.zygote = None


def run(cells: list[str], cwd: Path) -> list[str]:
    nb = nbformat.v4.new_notebook(cells=[nbformat.v4.new_code_cell(c) for c in cells])
    client = NotebookClient(
        nb,
        timeout=60,
        kernel_name="python3",
        resources={"metadata": {"path": str(cwd)}},
        kernel_manager_class=forkkernel.ForkKernelManager,
    )
    client.execute()
    return ["".join(o.get("text", "") for o in c.outputs).strip() for c in nb.cells]


def test_page_imports_are_the_top_level_imports_once_each_magics_skipped():
    cells = [
        "import numpy as np\nx = 1\nimport numpy as np",
        "%matplotlib inline",
        "from a.b import c\nimport os",
        "def f():\n    import json",
        "from . import rel",
        "from matplotlib_inline import backend_inline",
    ]
    assert forkkernel.page_imports(cells) == ["import numpy as np", "from a.b import c", "import os"]


def test_a_forked_kernel_is_a_new_process_in_the_notebooks_folder_with_no_earlier_state(zygote, tmp_path):
    (tmp_path / "a").mkdir()
    (tmp_path / "b").mkdir()
    (tmp_path / "a" / "mine.py").write_text("VALUE = 'from a'\n")
    first = run(
        [
            "import os, sys; print(os.getpid(), os.getppid())",
            "print(os.getcwd())",
            "import mine; print(mine.VALUE)",
            "secret = 42; print('json' in sys.modules)",
        ],
        tmp_path / "a",
    )
    pid, parent = first[0].split()
    assert int(parent) == zygote.pid and int(pid) != zygote.pid
    assert first[1] == str(tmp_path / "a")
    assert first[2] == "from a"  # the notebook's folder is on the import path, as in a fresh kernel
    assert first[3] == "True"  # imported ahead, in the zygote
    second = run(
        [
            "import os; print(os.getpid())",
            "print('secret' in globals())",
            "try:\n    import mine\nexcept ImportError:\n    print('no mine')",
        ],
        tmp_path / "b",
    )
    assert second[0] != pid and second[1] == "False" and second[2] == "no mine"


def test_the_zygote_reports_imports_it_could_not_make_and_the_kernel_raises_them(zygote, tmp_path):
    assert zygote.failed == ["import no_such_module_here"]
    out = run(["try:\n    import no_such_module_here\nexcept ImportError:\n    print('raised')"], tmp_path)
    assert out == ["raised"]
