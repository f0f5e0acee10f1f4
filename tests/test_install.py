"""`pip install aiinfra` alone: the library and the calculator on numpy, nothing of the book,
the course or the grader (CONTRIBUTING.md, "What `pip install aiinfra` brings").

The distribution is installed, with its dependencies resolved by pip, into a fresh virtual
environment whose only other package is numpy (linked from this venv, so pip finds it already
installed and needs nothing else). There, every core module imports, the CLI answers, and none
of matplotlib, ipywidgets, sympy, Jupyter or the book's and course's packages is ever loaded;
a figure module of the book asks for its extra (matplotlib).
"""

from __future__ import annotations

import json
import subprocess
import sysconfig
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]
SRC = ROOT / "src" / "aiinfra"
EXTRA_PARTS = ("book", "course")
FORBIDDEN = ("matplotlib", "ipywidgets", "sympy", "IPython", "nbformat", "nbclient", "jupyter_client", "zmq")

PROBE = """
import importlib, importlib.metadata as md, json, sys
mods = json.loads(sys.argv[1])
for name in mods:
    importlib.import_module(name)
loaded = sorted(m for m in sys.modules if m.split(".")[0] in {forbidden} or m.startswith(("aiinfra.book", "aiinfra.course")))
try:
    importlib.import_module("aiinfra.book.figures.ch01")
    book = "imported"
except ModuleNotFoundError as exc:
    book = exc.name
print(json.dumps({{"loaded": loaded, "requires": md.requires("aiinfra"), "book": book,
                  "file": sys.modules["aiinfra"].__file__}}))
"""


def core_modules() -> list[str]:
    """Every module of the package outside the book and the course (from the files, not an import walk)."""
    names = []
    for path in sorted(SRC.rglob("*.py")):
        parts = path.relative_to(SRC.parent).with_suffix("").parts
        if parts[1:2] and parts[1] in EXTRA_PARTS or parts[-1] == "__main__":
            continue
        names.append(".".join(parts[:-1] if parts[-1] == "__init__" else parts))
    return names


@pytest.fixture(scope="module")
def core_env(fresh_venv):
    fresh = fresh_venv("core-install")
    python, env_dir, env, source = fresh.python, fresh.env_dir, fresh.env, fresh.source
    ours = Path(sysconfig.get_paths()["purelib"])
    for entry in ours.iterdir():
        if entry.name == "numpy" or entry.name.startswith(("numpy-", "numpy.libs")):
            (fresh.site / entry.name).symlink_to(entry)
    out = subprocess.run(
        [str(python), "-m", "pip", "install", "-q", str(source)],
        env=env,
        capture_output=True,
        text=True,
        timeout=600,
    )
    assert out.returncode == 0, out.stderr[-3000:]
    listed = subprocess.run(
        [str(python), "-m", "pip", "list", "--format=json"],
        env=env,
        capture_output=True,
        text=True,
        check=True,
    )
    return python, env_dir, env, {p["name"].lower() for p in json.loads(listed.stdout)}


def test_core_install_brings_numpy_and_nothing_else(core_env):
    python, env_dir, env, installed = core_env
    assert installed - {"pip", "setuptools"} == {"aiinfra", "numpy"}


def test_every_core_module_imports_without_the_book_course_or_grader(core_env):
    python, env_dir, env, _ = core_env
    modules = core_modules()
    assert {"aiinfra.deployment", "aiinfra.predict", "aiinfra.cli", "aiinfra.serving.capacity"} <= set(
        modules
    )
    out = subprocess.run(
        [str(python), "-c", PROBE.format(forbidden=set(FORBIDDEN)), json.dumps(modules)],
        env=env,
        cwd=env_dir,
        capture_output=True,
        text=True,
        timeout=300,
    )
    assert out.returncode == 0, out.stderr[-3000:]
    seen = json.loads(out.stdout)
    assert seen["file"].startswith(str(env_dir)), f"aiinfra came from {seen['file']}"
    assert seen["loaded"] == [], f"the core loaded {seen['loaded']}"
    core_requires = [r for r in seen["requires"] if "extra ==" not in r]
    assert [r.split(">")[0].split("=")[0].strip() for r in core_requires] == ["numpy"]
    assert seen["book"] == "matplotlib", "the book's figures must ask for their extra"


def test_the_calculator_runs_on_the_core_install(core_env):
    python, env_dir, env, _ = core_env
    cli = env_dir / "bin" / "aiinfra"
    out = subprocess.run(
        [str(cli), "params", "--model", "Qwen3-8B", "--json"],
        env=env,
        cwd=env_dir,
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert out.returncode == 0, out.stderr[-3000:]
    # Qwen3-8B: 8,190,735,360 parameters with its untied 151,936 x 4,096 output head (the model card's 8.2B)
    assert json.loads(out.stdout)["total_params"] == 8_190_735_360
