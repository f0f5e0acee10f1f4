"""The set-up cell that opens every generated notebook (chapters and exercises).

On Colab it installs this book's library from the repository and branch configured once in
``_config.yml`` (``repository:``); ``--no-deps`` keeps Colab's preinstalled numpy, sympy,
matplotlib and, above all, its own ipywidgets, whose front end a pip upgrade would break.
Anywhere else (Binder, a laptop, the book build) the cell does nothing. The environment
variable ``AIINFRA_PIP_SOURCE`` overrides the source, which is how the tests stand a local
checkout in for the remote.
"""

from __future__ import annotations

#: Notebook metadata as JupyterLab and Colab write it when they open a notebook with the book's
#: kernel, so that opening one changes nothing (no "save changes?" on close). JupyterLab takes
#: ``language_info`` from the kernel (all but ``version``, which is the reader's Python) and
#: names the kernel "Python 3 (ipykernel)".
NOTEBOOK_METADATA = {
    "kernelspec": {"display_name": "Python 3 (ipykernel)", "language": "python", "name": "python3"},
    "language_info": {
        "codemirror_mode": {"name": "ipython", "version": 3},
        "file_extension": ".py",
        "mimetype": "text/x-python",
        "name": "python",
        "nbconvert_exporter": "python",
        "pygments_lexer": "ipython3",
    },
}


def notebook_text(nb: dict) -> str:
    """A notebook's file text exactly as Jupyter saves it (the contents manager calls
    ``nbformat.write``): sorted keys, one-space indent, each source and text output split into
    lines, a trailing newline. Every generated notebook is written this way, so that saving one
    just after opening it (Ctrl+S in JupyterLab) rewrites the same bytes."""
    import nbformat

    return nbformat.writes(nbformat.from_dict(nb), version=4) + "\n"


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


#: The ``#@title`` of a chapter notebook's set-up cell (Colab shows it in place of the folded code).
SETUP_TITLE = "Set-up: installs the book's library on Colab; elsewhere it does nothing"


def glue_fallback_lines() -> list[str]:
    """Source lines that let the chapters' hidden cells run where myst-nb is not installed.

    Those cells call ``myst_nb.glue`` to hand numbers to the book's text. A notebook already
    shows the text with its numbers, so where myst-nb is missing (Colab, Binder) a stand-in
    that only displays what it is asked to display is all the cells need.
    """
    return [
        "# The hidden cells hand numbers to the text with myst_nb.glue; the text here already shows",
        "# them, so where myst-nb is not installed a stand-in that only displays is enough.",
        "try:",
        "    import myst_nb",
        "except ImportError:",
        "    import types",
        "    from IPython.display import display as _display",
        '    myst_nb = sys.modules["myst_nb"] = types.ModuleType("myst_nb")',
        "    myst_nb.glue = lambda name, value, display=True: _display(value) if display else None",
    ]


def chapter_setup_lines(source: str) -> list[str]:
    """The set-up cell of a chapter notebook: the Colab install, then the glue stand-in."""
    return install_cell_lines(source) + glue_fallback_lines()
