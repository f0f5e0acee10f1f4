"""Follow the Colab path end to end, without Colab.

A fresh virtual environment that does not have the repository on sys.path stands in for a
Colab runtime: the scientific stack is "preinstalled" (this environment's site-packages are
visible through a plain path entry, which does not activate the editable install of
aiinfra), a stub `google.colab` module is imported at start-up, and myst-nb (which
Colab does not ship, but the chapters' hidden cells import for `glue`) cannot be
imported. The library is then
installed exactly as a generated notebook's first cell installs it, from the local checkout
standing in for the remote (AIINFRA_PIP_SOURCE), and a chapter notebook and an exercise
notebook with check() calls are executed in a kernel of that environment.
"""

import json
import subprocess
import sysconfig
import textwrap
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]
pytestmark = pytest.mark.slow

RUNNER = textwrap.dedent(
    """
    import json, sys, nbformat
    from nbclient import NotebookClient
    path, probe = sys.argv[1], sys.argv[2]
    nb = nbformat.read(path, as_version=4)
    nb.cells.append(nbformat.v4.new_code_cell(
        "import aiinfra, json\\n"
        "glue_from = getattr(sys.modules.get('myst_nb'), '__file__', None)\\n"
        f"open({probe!r}, 'w').write(json.dumps({{'file': aiinfra.__file__, 'path': sys.path, 'glue_from': glue_from}}))"))
    NotebookClient(nb, timeout=120, kernel_name="python3").execute()
    texts = []
    for cell in nb.cells:
        for out in cell.get("outputs", []):
            texts.append(out.get("text", ""))
            texts += [out.get("data", {}).get(k, "") for k in ("text/plain", "text/markdown", "text/html")]
    print(json.dumps(texts))
    """
)


# Colab at start-up: google.colab is there, myst-nb is not.
COLAB_SITE = textwrap.dedent(
    """
    import sys, types
    sys.modules["google.colab"] = types.ModuleType("google.colab")

    class NoMystNB:
        def find_spec(self, name, path=None, target=None):
            if name == "myst_nb" or name.startswith("myst_nb."):
                raise ModuleNotFoundError(f"No module named {name!r}", name=name)
            return None

    sys.meta_path.insert(0, NoMystNB())
    """
)


@pytest.fixture(scope="module")
def colab_like(fresh_venv):
    fresh = fresh_venv("colab")
    # "Preinstalled" stack: a plain path entry, so .venv's own .pth files (the editable aiinfra) stay inactive.
    (fresh.site / "colab_stack.pth").write_text(sysconfig.get_paths()["purelib"] + "\n")
    (fresh.site / "sitecustomize.py").write_text(COLAB_SITE)
    # The remote repository, stood in for by the copy of the checkout's package sources.
    env = {**fresh.env, "AIINFRA_PIP_SOURCE": str(fresh.source)}
    return fresh.python, fresh.env_dir, env, fresh.env_dir.parent


def run_notebook(colab_like, notebook):
    python, env_dir, env, base = colab_like
    probe = base / f"probe-{notebook.stem}.json"
    (base / "runner.py").write_text(RUNNER)
    out = subprocess.run(
        [str(python), str(base / "runner.py"), str(notebook), str(probe)],
        cwd=base,
        env=env,
        capture_output=True,
        text=True,
        timeout=300,
    )
    assert out.returncode == 0, out.stderr[-3000:]
    seen = json.loads(probe.read_text())
    assert seen["file"].startswith(str(env_dir)), f"aiinfra came from {seen['file']}, not the Colab-like env"
    assert not any(p.rstrip("/").endswith("/src") and Path(p, "aiinfra").exists() for p in seen["path"])
    return json.loads(out.stdout.strip().splitlines()[-1])


@pytest.mark.parametrize("page", ["ch01/index", "ch01/05-one-model-step"])
def test_chapter_notebook_runs_after_the_setup_cell_installs_the_library(colab_like, page):
    notebook = ROOT / "notebooks" / f"{page}.ipynb"
    python, env_dir, env, base = colab_like
    shown = run_notebook(colab_like, notebook)
    seen = json.loads((base / f"probe-{notebook.stem}.json").read_text())
    assert seen["glue_from"] is None, f"myst_nb came from {seen['glue_from']}, not the set-up cell's stand-in"
    assert shown


def test_exercise_notebook_self_checks_after_install(colab_like):
    notebook = ROOT / "solutions" / "ch01.ipynb"
    shown = "".join(run_notebook(colab_like, notebook))
    assert "1-2" in shown and "correct" in shown.lower()
    assert "wrong" not in shown.lower()
