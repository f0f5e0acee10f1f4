"""Shared fixtures: the shipped model configs the tests pin numbers on; the hypothesis profiles.

Property tests run derandomized (the same examples every run, no example
database) under CI and in ``make test``: profile ``ci``, chosen by
``HYPOTHESIS_PROFILE=ci`` or by the ``CI`` environment variable. Plain
``pytest`` uses profile ``dev`` (random examples) unless told otherwise.

``pytest -n N --dist loadgroup`` (``make test``) hands tests to the workers one at a time, so
that neither idles at the end, except where tests share what a process set up: the tests of a
file that defines (or whose ``conftest.py`` defines) a module-, class- or package-scoped fixture
(one grader run, one JupyterLab server, one Colab-like venv) and the cells of a notebook (nbval)
go to one worker together, as under ``--dist loadfile`` (:class:`SharedFileScheduling`).
xdist's own loadgroup reads ``xdist_group`` marks from suffixed node ids, which xdist 3.8 can no
longer write under pytest 9; the groups are therefore decided here, from the files.
"""

import os
import re
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


_SHARED_FIXTURE = re.compile(r"""scope\s*=\s*["'](?:module|class|package)["']""")


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
        """One work unit per test, or per file for a file whose tests share a process (see the top)."""

        def _split_scope(self, nodeid: str) -> str:
            file = nodeid.split("::", 1)[0]
            return file if _shares_a_process(file, str(config.rootpath)) else nodeid

    return SharedFileScheduling(config, log)
