"""Shared fixtures: the shipped model configs the tests pin numbers on; the hypothesis profiles.

Property tests run derandomized (the same examples every run, no example
database) under CI and in ``make test``: profile ``ci``, chosen by
``HYPOTHESIS_PROFILE=ci`` or by the ``CI`` environment variable. Plain
``pytest`` uses profile ``dev`` (random examples) unless told otherwise.

``pytest -n N --dist loadgroup`` (``make test``) hands tests to the workers one at a time, so
that neither idles at the end, except where tests share what a process set up: the tests of a
file that defines (or whose ``conftest.py`` defines) a module-, class- or package-scoped fixture
(one grader run, one JupyterLab server, one Colab-like venv) and the cells of a notebook (nbval)
go to one worker together, as under ``--dist loadfile`` (:class:`SharedFileScheduling`); so do
the browser checks of one built page, whatever their file, which read one visit of the page
(``tests/browser/snapshots.py``).
xdist's own loadgroup reads ``xdist_group`` marks from suffixed node ids, which xdist 3.8 can no
longer write under pytest 9; the groups are therefore decided here, from the files.
"""

import os
import re
import shutil
import subprocess
import venv
from dataclasses import dataclass
from functools import cache
from pathlib import Path

import pytest
from hypothesis import settings

from aiinfra.catalog import models

settings.register_profile("ci", derandomize=True, database=None, print_blob=True)
settings.register_profile("dev")
settings.load_profile(os.environ.get("HYPOTHESIS_PROFILE") or ("ci" if os.environ.get("CI") else "dev"))


@pytest.fixture(scope="session")
def r1_70b():
    return models.load("DeepSeek-R1-Distill-Llama-70B")


@pytest.fixture(scope="session")
def qwen3_8b():
    return models.load("Qwen3-8B")


@pytest.fixture(scope="session")
def mixtral():
    return models.load("Mixtral-8x7B-v0.1")


@pytest.fixture(scope="session")
def deepseek_v3():
    return models.load("DeepSeek-V3")


ROOT = Path(__file__).resolve().parents[1]


@dataclass(frozen=True)
class FreshVenv:
    """A new virtual environment with pip and nothing else, and a copy of the package's sources."""

    python: Path
    env_dir: Path
    site: Path  # its site-packages (purelib)
    source: Path  # pyproject.toml, README.md and src/, as a remote repository would hold them
    env: dict  # the environment to run it in: none of this venv's PYTHONPATH or VIRTUAL_ENV


@pytest.fixture(scope="session")
def fresh_venv(tmp_path_factory):
    """``fresh_venv(name)``: a :class:`FreshVenv` under a new temporary folder (tests/test_install.py,
    tests/test_colab_path.py: a clean machine's ``pip install`` and a Colab-like runtime)."""

    def make(name: str) -> FreshVenv:
        base = tmp_path_factory.mktemp(name)
        env_dir = base / "venv"
        venv.EnvBuilder(with_pip=True, system_site_packages=False).create(env_dir)
        python = env_dir / "bin" / "python"
        site = Path(
            subprocess.check_output(
                [str(python), "-c", "import sysconfig; print(sysconfig.get_paths()['purelib'])"], text=True
            ).strip()
        )
        source = base / "source"
        source.mkdir()
        for file in ("pyproject.toml", "README.md"):
            shutil.copy2(ROOT / file, source / file)
        shutil.copytree(
            ROOT / "src", source / "src", ignore=shutil.ignore_patterns("__pycache__", "*.egg-info")
        )
        env = {k: v for k, v in os.environ.items() if k not in ("PYTHONPATH", "VIRTUAL_ENV")}
        env["PIP_DISABLE_PIP_VERSION_CHECK"] = "1"
        return FreshVenv(python, env_dir, site, source, env)

    return make


_SHARED_FIXTURE = re.compile(r"""scope\s*=\s*["'](?:module|class|package)["']""")
# a browser test of one built page (its id names the page, with or without a window width)
_BROWSER_PAGE = re.compile(
    r"^tests/browser/[^:]+::[^\[]+\[(?:\d+-)?((?:index|book/[^\]]+)\.html)(?:-\d+)?\]$"
)


@cache
def _shares_a_process(file: str, rootdir: str) -> bool:
    """True for a notebook, and for a test file whose own or inherited fixtures live per file or class."""
    path = Path(rootdir, file)
    if path.suffix == ".ipynb":
        return True
    chain = [path, *(d / "conftest.py" for d in path.parents if d.is_relative_to(rootdir))]
    return any(p.is_file() and _SHARED_FIXTURE.search(p.read_text(encoding="utf-8")) for p in chain)


def pytest_xdist_make_scheduler(config, log):
    if config.getoption("dist") != "loadgroup":
        return None
    from xdist.scheduler import LoadScopeScheduling

    class SharedFileScheduling(LoadScopeScheduling):
        """One work unit per test, per built page for the browser, per file for a file whose tests share a process."""

        def _split_scope(self, nodeid: str) -> str:
            page = _BROWSER_PAGE.match(nodeid)
            if page:
                return f"browser page {page.group(1)}"
            file = nodeid.split("::", 1)[0]
            return file if _shares_a_process(file, str(config.rootpath)) else nodeid

    return SharedFileScheduling(config, log)
