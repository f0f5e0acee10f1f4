"""aiinfra_build.forkkernel: the build's kernels, forked from a warm process, behave as fresh kernels.

And where the fork is unavailable (jupyter_client's internals changed, the zygote died) the build
falls back to nbclient's own kernels, which run the same notebook.
"""

from __future__ import annotations

import os
from pathlib import Path

import nbformat
import pytest
from jupyter_client.manager import AsyncKernelManager
from nbclient import NotebookClient

from aiinfra_build import forkkernel

pytestmark = pytest.mark.slow


@pytest.fixture(scope="module")
def zygote():
    z = forkkernel.start(["import json", "import no_such_module_here"])
    assert z is not None, "the pinned jupyter_client must support the forked kernels"
    yield z
    z.close()
    forkkernel.ForkProvisioner.zygote = None


def run(cells: list[str], cwd: Path, manager=forkkernel.ForkKernelManager) -> list[str]:
    nb = nbformat.v4.new_notebook(cells=[nbformat.v4.new_code_cell(c) for c in cells])
    extra = {} if manager is None else {"kernel_manager_class": manager}
    client = NotebookClient(
        nb, timeout=60, kernel_name="python3", resources={"metadata": {"path": str(cwd)}}, **extra
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


# --- the fallback: plain nbclient kernels ------------------------------------------------------


def test_the_pinned_jupyter_client_has_the_internals_the_fork_uses():
    assert forkkernel.missing_private_api() is None


def test_without_the_private_api_the_build_runs_plain_kernels(monkeypatch, tmp_path):
    monkeypatch.setattr(AsyncKernelManager, "_async_pre_start_kernel", None)  # as if it were gone
    assert forkkernel.missing_private_api() == "AsyncKernelManager._async_pre_start_kernel"
    monkeypatch.setattr(forkkernel.ForkProvisioner, "zygote", None)
    with pytest.warns(UserWarning, match="plain kernels"):
        assert forkkernel.start(["import json"]) is None
    assert forkkernel.kernel_manager_class() is None  # nbclient's own manager
    monkeypatch.undo()  # nbclient's manager needs the method back to start its kernel
    out = run(["import os; print(os.getppid())"], tmp_path, manager=None)
    assert out == [str(os.getpid())]  # a kernel jupyter_client launched itself, a child of this process


def test_when_the_zygote_does_not_start_the_build_runs_plain_kernels(monkeypatch):
    def broken(*args, **kwargs):
        raise RuntimeError("the kernel zygote exited (status 1)")

    monkeypatch.setattr(forkkernel, "Zygote", broken)
    monkeypatch.setattr(forkkernel.ForkProvisioner, "zygote", None)
    with pytest.warns(UserWarning, match="did not start"):
        assert forkkernel.start(["import json"]) is None
    assert forkkernel.kernel_manager_class() is None


def test_a_failed_fork_launches_that_kernel_the_ordinary_way(monkeypatch, tmp_path):
    monkeypatch.setattr(forkkernel.ForkProvisioner, "zygote", None)  # restored afterwards
    z = forkkernel.start(["import json"])
    assert z is not None
    z.close()  # the zygote is gone: the next spawn fails
    with pytest.warns(UserWarning, match="starting a plain kernel"):
        out = run(["import os; print(os.getppid())"], tmp_path)
    assert out == [str(os.getpid())]  # launched by jupyter_client, not forked by the (dead) zygote
