"""Every chapter notebook and every handout, run top to bottom as a student runs them.

Twice: in an environment pinned to Colab's published package versions (Python 3.12,
ipywidgets 7.7.1, ipykernel 6.17, IPython 7.34, jupyter_client 7.4, traitlets 5.7, numpy 2.0,
sympy 1.13), and on the project's own pins (this venv: ipywidgets 8). In the Colab one a stub
``google.colab`` module is imported at start-up, so the notebook's first cell installs the
library its own way, from a wheel of this checkout (``AIINFRA_PIP_SOURCE``), each notebook
into a folder of its own (``PIP_TARGET``, on the kernel's path), so that parallel kernels never
share an install and nothing is left from an earlier run. The venv of the pins is built once
and kept under ``_build/``, keyed on the pins.

For each notebook the test checks that no cell errors; that every interactive figure it
displays redraws when its first slider takes one step (the image widget gets new bytes);
and that every table and text a cell displays reads as Markdown with mathematics (the way
JupyterLab and Colab read ``text/markdown`` and typeset ``text/html``): no MyST role or
directive, no bare dollar that a client would pair into mathematics.

The notebooks run in parallel, one kernel each (``AIINFRA_NOTEBOOK_JOBS``, default: the
CPU count).
"""

from __future__ import annotations

import concurrent.futures
import glob
import hashlib
import html
import json
import os
import re
import shutil
import subprocess
import sys
import textwrap
from pathlib import Path

import pytest

from test_notebooks import myst_left

ROOT = Path(__file__).resolve().parents[1]
BUILD = ROOT / "_build"
pytestmark = pytest.mark.slow

#: Colab's published versions (the runtime's package list); matplotlib and Pillow as Colab ships them.
COLAB_PINS = (
    "ipywidgets==7.7.1",
    "ipykernel==6.17.1",
    "ipython==7.34.0",
    "jupyter_client==7.4.9",
    "traitlets==5.7.1",
    "numpy==2.0.2",
    "sympy==1.13.1",
    "matplotlib==3.10.0",
    "pillow==11.1.0",
)
COLAB_PYTHON = "3.12"
#: Builds the library's wheel in that venv (the set-up cell then installs it with --no-deps).
BUILD_BACKEND = "setuptools>=77"
COLAB_KERNEL = "colab-pinned"
WIDGET_VIEW = "application/vnd.jupyter.widget-view+json"
JOBS = int(os.environ.get("AIINFRA_NOTEBOOK_JOBS", os.cpu_count() or 2))
CELL_TIMEOUT_S = 300
#: A notebook whose kernel died or hangs fails after this long, instead of stalling the suite.
NOTEBOOK_TIMEOUT_S = 900

# Colab at start-up: google.colab can be imported (the set-up cell then installs the library).
COLAB_SITE = 'import sys, types\nsys.modules["google.colab"] = types.ModuleType("google.colab")\n'

# Appended to each notebook: step the first slider of every live figure displayed, report the redraws.
PROBE = textwrap.dedent(
    """
    import gc as _gc, json as _json
    from aiinfra.book.interactive import InteractiveFigure as _IF
    _steps = {}
    for _f in [o for o in _gc.get_objects() if isinstance(o, _IF) and o.mode == "live"]:
        _slider, _before = _f._live_controls[0], _f._live_image.value
        _slider.index = (_slider.index + 1) % len(_slider.options)
        _steps[_f.widget.model_id] = _f._live_image.value != _before
    _versions = {m: __import__(m).__version__ for m in ("ipywidgets", "IPython", "numpy", "sympy", "traitlets")}
    _versions["python"] = __import__("platform").python_version()
    print("AIINFRA-PROBE " + _json.dumps({"steps": _steps, "file": __import__("aiinfra").__file__, "versions": _versions}))
    """
)

RUNNER = textwrap.dedent(
    """
    import json, os, sys, nbformat
    from nbclient import NotebookClient
    path, probe, out, kernel = sys.argv[1:5]
    nb = nbformat.read(path, as_version=4)
    for cell in nb.cells:
        if cell.cell_type == "code":
            cell.outputs = []
    nb.cells.append(nbformat.v4.new_code_cell(open(probe).read()))
    env = dict(os.environ, **json.loads(os.environ.pop("AIINFRA_KERNEL_ENV")))
    client = NotebookClient(nb, timeout=int(os.environ["CELL_TIMEOUT_S"]), kernel_name=kernel, shutdown_kernel="immediate",
                            allow_errors=True, resources={"metadata": {"path": os.path.dirname(path)}})
    client.execute(env=env)
    nbformat.write(nb, out)
    os._exit(0)  # skip the interpreter's teardown (a ZeroMQ context can linger for a minute)
    """
)


def notebooks() -> list[Path]:
    """The chapter notebooks (this build's, else the committed copies) and the student handouts."""
    built = BUILD / "notebooks"
    chapters = sorted(built.rglob("*.ipynb")) or sorted((ROOT / "notebooks").rglob("*.ipynb"))
    found = chapters + sorted((ROOT / "exercises").glob("*.ipynb"))
    # AIINFRA_NOTEBOOK_GLOB reruns some of them (e.g. "*ch08/03*"); the default, and CI, is all
    only = os.environ.get("AIINFRA_NOTEBOOK_GLOB")
    return [p for p in found if p.match(only)] if only else found


def pins_key() -> str:
    return hashlib.sha256("\n".join((COLAB_PYTHON, *COLAB_PINS, BUILD_BACKEND)).encode()).hexdigest()[:12]


def find_python(version: str) -> str:
    """An interpreter of ``version``: on PATH, or one that pyenv installed."""
    candidates = [shutil.which(f"python{version}")]
    candidates += sorted(glob.glob(os.path.expanduser(f"~/.pyenv/versions/{version}.*/bin/python")))
    found = [c for c in candidates if c]
    assert found, f"no Python {version} (on PATH as python{version}, or under ~/.pyenv/versions)"
    return found[-1]


def colab_env() -> Path:
    """The venv of Colab's pins under _build/, built once per set of pins (a .ready stamp)."""
    env = BUILD / f"colab-env-{pins_key()}"
    if (env / ".ready").is_file():
        return env
    for stale in [*BUILD.glob("colab-env-*"), env]:  # venvs of earlier pins, or a half-built one
        shutil.rmtree(stale, ignore_errors=True)
    subprocess.run([find_python(COLAB_PYTHON), "-m", "venv", str(env)], check=True)
    python = env / "bin" / "python"
    pip = [str(python), "-m", "pip", "install", "-q", "--disable-pip-version-check"]
    subprocess.run([*pip, *COLAB_PINS, BUILD_BACKEND], check=True, capture_output=True, text=True)
    site = subprocess.check_output(
        [str(python), "-c", "import sysconfig; print(sysconfig.get_paths()['purelib'])"], text=True
    ).strip()
    Path(site, "sitecustomize.py").write_text(COLAB_SITE)
    spec = env / "share" / "jupyter" / "kernels" / COLAB_KERNEL
    spec.mkdir(parents=True, exist_ok=True)
    argv = [str(python), "-m", "ipykernel_launcher", "-f", "{connection_file}"]
    (spec / "kernel.json").write_text(
        json.dumps({"argv": argv, "display_name": "Colab", "language": "python"})
    )
    (env / ".ready").write_text("\n".join(COLAB_PINS) + "\n")
    return env


@pytest.fixture(scope="module")
def scratch(tmp_path_factory):
    base = tmp_path_factory.mktemp("every-notebook")
    (base / "runner.py").write_text(RUNNER)
    (base / "probe.py").write_text(PROBE)
    return base


def build_wheel(python: Path, out: Path) -> Path:
    """A wheel of this checkout's library (what the set-up cell installs in place of the repository).

    Built from a copy, so that the build leaves nothing in the checkout, by ``python`` without
    build isolation (its venv holds the build backend), which takes seconds instead of minutes.
    """
    source = out / "source"
    source.mkdir(parents=True)
    for name in ("pyproject.toml", "README.md"):
        shutil.copy2(ROOT / name, source / name)
    shutil.copytree(ROOT / "src", source / "src", ignore=shutil.ignore_patterns("__pycache__", "*.egg-info"))
    pip = [str(python), "-m", "pip", "wheel", "-q", "--no-deps", "--no-build-isolation"]
    subprocess.run([*pip, "-w", str(out), str(source)], check=True, capture_output=True)
    (found,) = out.glob("aiinfra-*.whl")
    return found


def run_all(scratch: Path, kernel: str, kernel_env, jupyter_path: str | None) -> dict[str, dict]:
    """Run every notebook in parallel; for each, its executed copy."""
    paths = notebooks()
    least = 1 if os.environ.get("AIINFRA_NOTEBOOK_GLOB") else 60
    assert len(paths) >= least, f"only {len(paths)} notebooks found: run `make book` first"

    def one(path: Path) -> tuple[str, dict]:
        name = str(path.relative_to(ROOT)).replace("/", "__")
        out = scratch / kernel / f"{name}"
        out.parent.mkdir(parents=True, exist_ok=True)
        env = {k: v for k, v in os.environ.items() if k not in ("AIINFRA_BOOK_BUILD", "PYTHONPATH")}
        env.update(
            CELL_TIMEOUT_S=str(CELL_TIMEOUT_S),
            AIINFRA_KERNEL_ENV=json.dumps(kernel_env(scratch / kernel / f"{name}.site")),
            MPLBACKEND="agg",
            PYDEVD_DISABLE_FILE_VALIDATION="1",
        )
        if jupyter_path:
            env["JUPYTER_PATH"] = jupyter_path
        log = out.with_suffix(".log")
        with log.open("w") as sink:  # a file, not a pipe: a kernel's leftover child cannot hold it open
            proc = subprocess.run(
                [
                    sys.executable,
                    str(scratch / "runner.py"),
                    str(path),
                    str(scratch / "probe.py"),
                    str(out),
                    kernel,
                ],
                env=env,
                stdout=sink,
                stderr=subprocess.STDOUT,
                check=False,
                timeout=NOTEBOOK_TIMEOUT_S,
            )
        assert proc.returncode == 0, f"{path}: {log.read_text()[-3000:]}"
        return str(path.relative_to(ROOT)), json.loads(out.read_text(encoding="utf-8"))

    with concurrent.futures.ThreadPoolExecutor(JOBS) as pool:
        return dict(pool.map(one, paths))


def probe_report(ran: dict) -> dict | None:
    """What the appended probe cell printed: the figures' redraws, where aiinfra came from, the versions."""
    for cell in ran["cells"]:
        for out in cell.get("outputs", []):
            text = "".join(out.get("text", ""))
            if text.startswith("AIINFRA-PROBE "):
                return json.loads(text.split(" ", 1)[1])
    return None


def problems(saved: dict, ran: dict) -> list[str]:
    """What went wrong in one executed notebook (``saved``: the notebook as opened)."""
    found, displayed, shown = [], [], 0
    for n, cell in enumerate(c for c in ran["cells"] if c["cell_type"] == "code"):
        for out in cell.get("outputs", []):
            if out["output_type"] == "error":
                found.append(f"code cell {n}: {out['ename']}: {out['evalue'][:300]}")
            text = "".join(out.get("text", ""))
            if out.get("name") == "stderr" and "Traceback" in text:
                found.append(f"code cell {n} printed a traceback: {text[-300:]}")
            data = out.get("data", {})
            if WIDGET_VIEW in data:
                displayed.append(data[WIDGET_VIEW]["model_id"])
                # a figure drawn from this machine's measurements (a volatile cell) keeps no saved
                # output, hence no preview, so that the notebook is the same on every machine; it
                # must still redraw like every other figure (the slider probe below)
                shown += "volatile" not in cell["metadata"].get("tags", [])
            markdown, page = "".join(data.get("text/markdown", "")), "".join(data.get("text/html", ""))
            found += [f"code cell {n}, text/markdown: {bad}" for bad in myst_left(markdown)]
            found += [f"code cell {n}, text/html: {bad}" for bad in html_left(page)]
    probe = probe_report(ran)
    if probe is None:
        return found + ["the probe cell did not run"]
    previews = sum(
        "Run this cell, or Run All" in "".join(o.get("data", {}).get("text/plain", ""))
        for c in saved["cells"]
        for o in c.get("outputs", [])
    )
    if shown != previews:
        found.append(f"{shown} figures displayed outside volatile cells, {previews} previews saved")
    steps = probe["steps"]
    found += [f"figure {m} is not an interactive figure" for m in displayed if m not in steps]
    return found + [
        f"figure {m} did not redraw after a slider step" for m in displayed if steps.get(m) is False
    ]


def html_left(text: str) -> list[str]:
    """MyST, or a dollar that MathJax would pair into mathematics, in an HTML output's text."""
    if not text:
        return []
    text = re.sub(r"<(script|style)\b.*?</\1>", "", text, flags=re.DOTALL | re.IGNORECASE)
    text = re.sub(r'<span class="tex2jax_ignore mathjax_ignore">&#36;</span>', "", text)
    words = html.unescape(re.sub(r"<[^>]+>", " ", text))
    found = [f"role: {m.group(0)!r}" for m in re.finditer(r"\{[a-zA-Z][\w:+.-]*\}`", words)]
    return found + [
        f"dollar: {words[max(0, m.start() - 40) : m.end() + 40]!r}" for m in re.finditer(r"\$", words)
    ]


def check_all(ran: dict[str, dict], versions: dict, aiinfra_under: Path) -> None:
    failed = {}
    for rel, nb in ran.items():
        bad = problems(json.loads((ROOT / rel).read_text(encoding="utf-8")), nb)
        probe = probe_report(nb) or {}
        if probe and not probe["file"].startswith(str(aiinfra_under)):
            bad.append(f"aiinfra imported from {probe['file']}, not from {aiinfra_under}")
        wrong = {
            k: v
            for k, v in probe.get("versions", {}).items()
            if k in versions and not v.startswith(versions[k])
        }
        if wrong:
            bad.append(f"ran with {wrong}, not {versions}")
        if bad:
            failed[rel] = bad[:5]
    chapters = sum(not r.startswith("exercises/") for r in ran)
    print(f"{len(ran) - len(failed)} of {len(ran)} notebooks ran clean ({chapters} chapter notebooks)")
    assert not failed, json.dumps(failed, indent=1)[:12000]


def test_every_notebook_runs_in_colabs_environment(scratch):
    env = colab_env()
    wheel = build_wheel(env / "bin" / "python", scratch / "wheel")

    def kernel_env(site: Path) -> dict:
        site.mkdir(parents=True, exist_ok=True)
        return {"AIINFRA_PIP_SOURCE": str(wheel), "PIP_TARGET": str(site), "PYTHONPATH": str(site)}

    ran = run_all(scratch, COLAB_KERNEL, kernel_env, str(env / "share" / "jupyter"))
    pinned = dict(p.split("==") for p in COLAB_PINS)
    versions = {
        "python": COLAB_PYTHON,
        "ipywidgets": pinned["ipywidgets"],
        "IPython": pinned["ipython"],
        "numpy": pinned["numpy"],
        "sympy": pinned["sympy"],
        "traitlets": pinned["traitlets"],
    }
    check_all(ran, versions, scratch / COLAB_KERNEL)  # each notebook's own install


def test_every_notebook_runs_on_the_project_pins(scratch):
    import ipywidgets
    import numpy

    ran = run_all(scratch, "python3", lambda site: {}, None)
    versions = {"ipywidgets": ipywidgets.__version__, "numpy": numpy.__version__}
    check_all(ran, versions, ROOT / "src")  # the editable install of this checkout
