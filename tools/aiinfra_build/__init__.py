"""aiinfra_build: the book's build tools, one importable package (the dev environment's, not the students').

* :mod:`.sphinx_book` is the Sphinx extension ``_config.yml`` loads; it loads
  :mod:`.sphinx_notebooks` (one notebook per page, written while Sphinx writes the page, its
  Markdown from :mod:`.doctree_markdown`) and :mod:`.sphinx_pdf` (the still figures in the PDF);
* :mod:`.preexecute` runs the pages in parallel into the execution cache before Sphinx, its
  kernels forked from a warm process by :mod:`.forkkernel` (plain nbclient kernels where the
  fork is unavailable);
* :mod:`.notebooks` copies the built notebooks to ``notebooks/`` and checks them;
  :mod:`.build_exercises` writes ``exercises/`` and ``solutions/``.

``make venv`` installs it in editable mode (``pip install -e tools``); it works on a checkout
of the repository, whose root is :data:`ROOT`. CONTRIBUTING.md ("Build tools") says why it is
not part of the ``aiinfra`` distribution.
"""

from pathlib import Path

#: The repository checkout the tools build (this package lives in its ``tools/``).
ROOT = Path(__file__).resolve().parents[2]
