"""Book-build plumbing: static figures, Colab and .ipynb links to the generated notebooks, no Thebe.

Every kernel that executes a page inherits this Sphinx process's environment. Setting
``AIINFRA_BOOK_BUILD=1`` here makes the interactive figures precompute their frames for
the static HTML in *any* build of this book (``make book`` or a bare ``jupyter-book
build``), so the execution cache can never hold live-kernel widgets.

sphinx-book-theme builds the Colab link from the page's source file (`.md`), which Colab
cannot open. Every notebook page has a generated copy under `notebooks/` (see
`tools/notebooks.py`); this extension rewrites the Colab URL to that copy and serves the
same file as the page's `.ipynb` download.

The book launches live kernels on Binder or Colab, never in-page with Thebe, so the
sphinx-thebe scripts (registered twice by Jupyter Book, which redeclares a `const` and
names a CDN URL) are dropped from every page.
"""
from __future__ import annotations

import os
import shutil
from pathlib import Path

NOTEBOOKS = "notebooks"


def notebook_path(pagename: str) -> str:
    """Repository path of the Colab notebook for a page: book/ch01/index -> notebooks/ch01/index.ipynb."""
    rel = pagename[len("book/"):] if pagename.startswith("book/") else pagename
    return f"{NOTEBOOKS}/{rel}.ipynb"


def colab_url(app, pagename: str) -> str:
    opts = app.config.html_theme_options
    repo = opts["repository_url"].rstrip("/")
    org_repo = repo.split("github.com/", 1)[1]
    base = opts["launch_buttons"]["colab_url"].rstrip("/")
    return f"{base}/github/{org_repo}/blob/{opts['repository_branch']}/{notebook_path(pagename)}"


def _walk(buttons):
    for button in buttons:
        yield button
        yield from _walk(button.get("buttons", []))


def rewrite(app, pagename, templatename, context, doctree):
    source = Path(app.srcdir) / notebook_path(pagename)
    if not source.exists():
        return
    for button in _walk(context.get("header_buttons", [])):
        if button.get("text") == "Colab":
            button["url"] = colab_url(app, pagename)
    if context.get("ipynb_source"):
        dest = Path(app.outdir) / "_sources" / (pagename + ".ipynb")
        dest.parent.mkdir(parents=True, exist_ok=True)
        shutil.copy2(source, dest)


def _is_thebe(script) -> bool:
    body = getattr(script, "attributes", {}).get("body", "") or ""
    return "thebe" in (getattr(script, "filename", None) or "") or "THEBE_JS_URL" in body


def drop_thebe(app, pagename, templatename, context, doctree):
    for key in ("script_files", "css_files"):
        if key in context:
            context[key] = [s for s in context[key] if not _is_thebe(s)]


def setup(app):
    os.environ["AIINFRA_BOOK_BUILD"] = "1"
    app.connect("html-page-context", rewrite, priority=900)
    app.connect("html-page-context", drop_thebe, priority=900)
    return {"parallel_read_safe": True, "parallel_write_safe": True}
