"""The set-up cell that opens every generated notebook (chapters and exercises).

On Colab it installs this book's library from the repository and branch configured once in
``_config.yml`` (``repository:``); ``--no-deps`` keeps Colab's preinstalled numpy, sympy,
matplotlib and, above all, its own ipywidgets, whose front end a pip upgrade would break.
Anywhere else (Binder, a laptop, the book build) the cell does nothing. The environment
variable ``AIINFRA_PIP_SOURCE`` overrides the source, which is how the tests stand a local
checkout in for the remote.
"""
from __future__ import annotations


def pip_source(repo_url: str, branch: str) -> str:
    """pip requirement for the library at ``branch`` of ``repo_url`` (a GitHub URL)."""
    if not repo_url.startswith("https://") or not branch:
        raise ValueError(f"repo_url must be an https URL and branch non-empty, got {repo_url!r}, {branch!r}")
    return f"aiinfra @ git+{repo_url.rstrip('/')}@{branch}"


def install_cell_lines(source: str) -> list[str]:
    """Source lines of the set-up cell that installs ``source`` when running on Colab."""
    return [
        "# On Colab, install this book's library (numpy, sympy, matplotlib and ipywidgets are",
        "# preinstalled there; --no-deps keeps Colab's own ipywidgets). Elsewhere, nothing to do.",
        "import os, subprocess, sys",
        'if "google.colab" in sys.modules:',
        f'    source = os.environ.get("AIINFRA_PIP_SOURCE", {source!r})',
        '    subprocess.run([sys.executable, "-m", "pip", "install", "-q", "--no-deps", source], check=True)',
    ]
