"""The book as one PDF (``make pdf``: Jupyter Book's LaTeX builder, latexmk and XeLaTeX).

Paper shows what the HTML shows, except what only a screen can do. Three things change,
in the LaTeX build only:

* an interactive figure shows its default frame, the ``image/png`` its output carries next
  to the widget (:mod:`aiinfra.book.interactive`), with a caption naming the slider settings
  of that frame (the output's ``text/plain``);
* a literal dollar, which a table written for notebook clients too carries as a raw HTML
  span (``aiinfra.book.tables.DOLLAR``), prints as a dollar; the LaTeX writer drops every
  other raw HTML node, as in any Sphinx LaTeX build;
* the solutions of the exercises move to an appendix at the end of the book, where each
  keeps its number and its label (so the exercise's reference to it still resolves);
* the pages the HTML leaves unnumbered (the opening page, "Before you start", the
  reference pages) are unnumbered chapters, so Chapter 1 is chapter 1 and the section and
  equation numbers are those of the HTML;
* the book's still figures are SVG, which LaTeX cannot include: myst-nb picks the SVG for
  LaTeX too (``nb_mime_priority_overrides`` in ``_config.yml``) and ``rsvg-convert``
  (Debian's librsvg2-bin) turns each into a PDF, vector art kept vector.
"""

from __future__ import annotations

import shutil
import subprocess

from docutils import nodes
from sphinx.transforms.post_transforms import SphinxPostTransform
from sphinx.transforms.post_transforms.images import ImageConverter

WIDGET_VIEW = "application/vnd.jupyter.widget-view+json"
DOLLAR = '<span class="tex2jax_ignore mathjax_ignore">&#36;</span>'
APPENDIX_TITLE = "Solutions to the exercises"


def _mime_bundles(document):
    return [n for n in document.findall(nodes.container) if n.get("nb_element") == "mime_bundle"]


class FigureFrames(SphinxPostTransform):
    """An interactive figure's widget becomes its default frame and a caption (before myst-nb picks a mime type)."""

    default_priority = 3  # myst-nb's SelectMimeType runs at 4
    builders = ("latex",)

    def run(self, **kwargs) -> None:
        for bundle in _mime_bundles(self.document):
            kinds = {c.get("mime_type"): c for c in bundle.children}
            if WIDGET_VIEW not in kinds or "image/png" not in kinds:
                continue
            caption = kinds["text/plain"].astext().strip() if "text/plain" in kinds else ""
            shown = list(kinds["image/png"].children)
            for child in shown:
                child.parent.remove(child)
            if caption:
                shown.append(nodes.paragraph("", "", nodes.emphasis(caption, caption), classes=["caption"]))
            bundle.replace_self(shown)


class Dollars(SphinxPostTransform):
    """The raw HTML dollar of a notebook-safe table is a plain dollar on paper."""

    default_priority = 3
    builders = ("latex",)

    def run(self, **kwargs) -> None:
        for raw in list(self.document.findall(nodes.raw)):
            if "html" in raw.get("format", "").split() and raw.astext() == DOLLAR:
                raw.replace_self(nodes.Text("$"))


SAVE_NUMBERING = "\\newcounter{aiinfrasecnumdepth}\\setcounter{aiinfrasecnumdepth}{\\value{secnumdepth}}\n"
NUMBERED = "\\setcounter{secnumdepth}{\\value{aiinfrasecnumdepth}}\n"
UNNUMBERED = "\\setcounter{secnumdepth}{-1}\n"


class Numbering(SphinxPostTransform):
    """Chapters numbered where the HTML numbers them (its numbered toctree), unnumbered elsewhere."""

    default_priority = 900
    builders = ("latex",)

    def run(self, **kwargs) -> None:
        from sphinx import addnodes

        if self.document.get("docname") != self.app.config.root_doc:
            return
        numbered = self.env.toc_secnumbers
        state = False
        for start in list(self.document.findall(addnodes.start_of_file)):
            now = bool(numbered.get(start["docname"]))
            if now != state:
                start.parent.insert(start.parent.index(start), _latex(NUMBERED if now else UNNUMBERED))
                state = now
        self.document.insert(0, _latex(SAVE_NUMBERING + UNNUMBERED))


def _latex(text: str) -> nodes.raw:
    return nodes.raw("", text, format="latex")


class SolutionsAppendix(SphinxPostTransform):
    """Every solution, in the book's order, moved to an appendix after the last chapter."""

    default_priority = 900  # after the references are resolved
    builders = ("latex",)

    def run(self, **kwargs) -> None:
        from sphinx_exercise.nodes import solution_node

        solutions = list(self.document.findall(solution_node))
        if not solutions or self.document.get("docname") != self.app.config.root_doc:
            return
        appendix = nodes.section("", nodes.title(APPENDIX_TITLE, APPENDIX_TITLE), ids=["solutions-appendix"])
        for sol in solutions:
            sol.parent.remove(sol)
            appendix += sol
        self.document += _latex("\\appendix\n\\setcounter{secnumdepth}{0}\n")
        self.document += appendix


class SvgToPdf(ImageConverter):
    """SVG figures as PDF for LaTeX, through ``rsvg-convert``."""

    conversion_rules = [("image/svg+xml", "application/pdf")]

    def is_available(self) -> bool:
        return shutil.which("rsvg-convert") is not None

    def convert(self, _from: str, _to: str) -> bool:
        subprocess.run(["rsvg-convert", "--format=pdf", f"--output={_to}", _from], check=True)
        return True


def setup(app):
    app.add_post_transform(SvgToPdf)
    app.add_post_transform(FigureFrames)
    app.add_post_transform(Dollars)
    app.add_post_transform(SolutionsAppendix)
    app.add_post_transform(Numbering)
    return {"parallel_read_safe": True, "parallel_write_safe": True}
