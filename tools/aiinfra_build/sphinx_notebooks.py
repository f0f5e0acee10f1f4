"""One Jupyter notebook per book page, generated from the resolved doctree of the HTML build.

Each notebook page of the book (a MyST file with a ``kernelspec``) becomes
``_build/notebooks/<page>.ipynb`` while Sphinx writes its HTML (``doctree-resolved``), so
the notebook is made from exactly what the page shows. ``python -m aiinfra_build.notebooks --write``
copies these into ``notebooks/`` (Colab, Binder and the page's ``.ipynb`` download all
open that file), and ``--check`` fails when the committed copies differ.

A generated notebook is:

* the Colab set-up cell, first and collapsed (it installs ``aiinfra`` on Colab only);
* every code cell of the page, in order and runnable. Cells the book hides
  (``remove-cell``, ``remove-input``, ``hide-input``...) are collapsed in both clients: a
  ``#@title`` line with ``cellView: form`` for Colab, ``jupyter.source_hidden`` for JupyterLab;
* the outputs the page was built with (from the execution cache), so the numbers, tables
  and static figures show before anything runs; an interactive figure is saved as a
  preview of its default frame and becomes live when its cell runs. Cells tagged
  ``volatile`` (measurements of the build machine) keep no output, the values they glue read
  ``[measured]`` in the prose (known by their glue name), and the cells that glue
  numbers into the prose are tagged ``nbval-check-output`` so ``pytest --nbval-lax``
  proves that the code still computes the numbers the text quotes (unless the cell also
  shows a figure preview or converted Markdown, which a fresh run cannot reproduce);
* every Markdown cell of the page converted from the doctree by :mod:`doctree_markdown`
  (numbers as text, math with the book's equation numbers, links into the published book).

Nothing in a notebook depends on the machine that built it, so the committed copy is the same
file on every machine and ``python -m aiinfra_build.notebooks --check`` compares bytes.

Nothing here imports the book's library except :mod:`aiinfra.book.colab` (the set-up cell).
"""

from __future__ import annotations

import bisect
import hashlib
import html
import json
import re
from pathlib import Path

import nbformat
from docutils import nodes
from sphinx.util import logging

from aiinfra_build import doctree_markdown as dm

logger = logging.getLogger(__name__)

OUT_DIR = "notebooks"  # under the build folder (next to html/)
SETUP_TAG = "colab-setup"
CHECK_TAG = "nbval-check-output"
VOLATILE_TAG = "volatile"
GLUE_MIME_PREFIX = "application/papermill.record/"
WIDGET_VIEW = "application/vnd.jupyter.widget-view+json"
WIDGET_STATE = "application/vnd.jupyter.widget-state+json"
HIDE_SOURCE = ("remove-cell", "remove-input", "hide-input", "hide-cell")
HIDE_OUTPUT = ("remove-cell", "remove-output", "hide-output", "hide-cell")
PREVIEW_NOTE = "Preview ({settings}). Run this cell, or Run All, to move the sliders."


def notebook_rel(docname: str) -> str:
    """book/ch01/index -> ch01/index.ipynb (the path under notebooks/)."""
    rel = docname[len("book/") :] if docname.startswith("book/") else docname
    return f"{rel}.ipynb"


def out_dir(app) -> Path:
    return Path(app.outdir).parent / OUT_DIR


def generator_version() -> str:
    """Hash of the code that shapes a notebook: a change regenerates every notebook."""
    here = Path(__file__).resolve().parent
    digest = hashlib.sha256()
    for path in sorted(here.glob("*.py")):
        digest.update(path.read_bytes())
    from aiinfra.book import colab

    digest.update(Path(colab.__file__).read_bytes())
    return digest.hexdigest()[:16]


def is_notebook_page(env, docname: str) -> bool:
    return "kernelspec" in env.metadata.get(docname, {})


def page_url(app, docname: str) -> str:
    base = app.config.html_baseurl
    return base.rstrip("/") + "/" + app.builder.get_target_uri(docname)


# --- the executed page ---------------------------------------------------------------


def executed_notebook(app, docname: str) -> nbformat.NotebookNode:
    """The page as myst-nb read and executed it: from the execution cache, else from jupyter_execute/."""
    from myst_nb.core.read import create_nb_reader

    env = app.env
    path = env.doc2path(docname)
    text = Path(path).read_text(encoding="utf-8")
    page = create_nb_reader(str(path), env.myst_config, env.mystnb_config, text).read(text)
    cache_path = env.mystnb_config.execution_cache_path
    if env.mystnb_config.execution_mode == "cache" and cache_path:
        from jupyter_cache import get_cache

        try:
            return get_cache(cache_path).merge_match_into_notebook(page)[1]
        except KeyError:
            pass
    saved = Path(app.outdir).parent / "jupyter_execute" / f"{docname}.ipynb"
    if saved.is_file():
        return nbformat.read(saved, as_version=4)
    logger.warning(f"notebook: no executed copy of {docname}; its notebook has no outputs", location=docname)
    return page


def measured_keys(nb) -> frozenset:
    """The glue name of every value glued by a cell tagged ``volatile`` (it differs from run to run).

    A value is measured because of the cell that glued it, never because of its text: a
    constant that happens to print like a measurement ("64 MiB") is not one.
    """
    keys = set()
    for cell in nb.cells:
        if cell.cell_type != "code" or VOLATILE_TAG not in cell.metadata.get("tags", []):
            continue
        for out in cell.get("outputs", []):
            name = out.get("metadata", {}).get("scrapbook", {}).get("name")
            if name and any(k.startswith(GLUE_MIME_PREFIX) for k in out.get("data", {})):
                keys.add(name)
    return frozenset(keys)


def mark_measured(doctree: nodes.document, keys: frozenset) -> None:
    """Give every pasted value whose glue name is in ``keys`` the class ``measured`` (the HTML shows it)."""
    for node in doctree.findall(nodes.inline):
        if node.get(dm.GLUE_KEY) in keys and dm.MEASURED_CLASS not in node["classes"]:
            node["classes"].append(dm.MEASURED_CLASS)


def keep_glue_keys() -> None:
    """Make myst-nb's inline glue roles record the glue name on the nodes they paste (``glue_key``).

    myst-nb resolves ``{glue:text}`name``` and ``{glue}`name``` to bare text nodes; the
    name is what tells a measured value from a computed one, so it is kept as a node
    attribute (which Sphinx pickles with the doctree and the HTML writer ignores).
    """
    from myst_nb.ext.glue import roles

    for role, key_of in (
        (roles.PasteTextRole, lambda text: text.rsplit(":", 1)[0]),
        (roles.PasteRoleAny, lambda text: text),
    ):
        if getattr(role.run, "keeps_glue_key", False):
            continue
        original = role.run

        def run(self, original=original, key_of=key_of):
            found, messages = original(self)
            for node in found:
                if isinstance(node, nodes.Element):
                    node[dm.GLUE_KEY] = key_of(self.text)
            return found, messages

        vars(run)["keeps_glue_key"] = True  # marks the role as patched (read by getattr above)
        role.run = run


# --- code cells ----------------------------------------------------------------------


def is_glue_cell(cell) -> bool:
    return "glue(" in cell.source


def _title(cell, outputs) -> str:
    if is_glue_cell(cell) and not any(_visible(o) for o in outputs):
        return "Numbers quoted in the text (hidden in the book)"
    kinds = {k for o in outputs for k in o.get("data", {})}
    if any(k.startswith("image/") for k in kinds):
        return "Code for the figure below (hidden in the book)"
    if "text/markdown" in kinds:
        return "Code for the text or table below (hidden in the book)"
    return "Code hidden in the book"


def _visible(output) -> bool:
    data = output.get("data", {})
    return output.get("output_type") == "stream" or any(not k.startswith(GLUE_MIME_PREFIX) for k in data)


_STYLE = re.compile(r"<style>.*?</style>", re.S)
_IMG = re.compile(r"<img\b[^>]*>")


def widget_preview(output, state: dict) -> list:
    """Saved outputs for an interactive figure: its title and readouts, then its default frame.

    The book's static figure is a tree of ipywidgets whose Stacks select the frame of the
    default slider settings; following the selected child of each Stack gives the HTML the
    page shows on load: the title and readouts stay HTML. The frame itself is a moving layer
    over a background that the page's CSS stacks, which a client without that CSS (JupyterLab
    and Colab sanitise styles; nbconvert and GitHub drop them) would show as the layer alone;
    the figure's output carries the whole default frame as one ``image/png`` (every client
    shows it), which becomes the preview's image. Running the cell replaces both with the
    live figure.
    """
    root = output["data"][WIDGET_VIEW]["model_id"]
    pieces: list[str] = []

    def walk(model_id: str):
        model = state.get(model_id)
        if model is None:
            return
        s = model.get("state", {})
        if model.get("model_name") in ("HTMLModel", "HTMLMathModel", "LabelModel"):
            pieces.append(s.get("value", ""))
        kids = [k.replace("IPY_MODEL_", "") for k in s.get("children", [])]
        if "selected_index" in s and s["selected_index"] is not None and kids:
            kids = [kids[s["selected_index"]]]
        for kid in kids:
            walk(kid)

    walk(root)
    joined = "".join(pieces)
    settings = re.findall(r'<img[^>]*alt="([^"]*)"', joined)
    note = PREVIEW_NOTE.format(settings=html.unescape(settings[0]) if settings else "the default settings")
    text_html = _IMG.sub("", _STYLE.sub("", joined))
    outs = [
        nbformat.v4.new_output(
            "display_data",
            data={
                "text/html": f"{text_html}<p><em>{html.escape(note)}</em></p>",
                "text/plain": f"Interactive figure. {note}",
            },
        )
    ]
    if "image/png" not in output["data"]:
        logger.warning("notebook: an interactive figure's output has no image/png of its default frame")
        return outs
    png = gen_text(output["data"]["image/png"])
    return outs + [
        nbformat.v4.new_output("display_data", data={"image/png": png, "text/plain": "<figure frame>"})
    ]


def outputs_for(cell, container, nb, ctx: dm.Context) -> tuple[list, bool]:
    """The outputs a generated code cell keeps, and whether they are the ones a kernel prints.

    They are not where an interactive figure became its preview, or where a text/markdown
    output became plain Markdown: nbval cannot compare such a cell with a fresh run.
    """
    tags = cell.metadata.get("tags", [])
    if VOLATILE_TAG in tags:
        return [], False
    state = nb.metadata.get("widgets", {}).get(WIDGET_STATE, {}).get("state", {})
    kept, as_printed = [], True
    for out in cell.get("outputs", []):
        out = nbformat.from_dict(json.loads(json.dumps(out)))
        if out.get("output_type") == "stream" and is_glue_cell(cell):
            continue
        data = out.get("data", {})
        if WIDGET_VIEW in data:
            kept += widget_preview(out, state) if data[WIDGET_VIEW].get("model_id") in state else []
            as_printed = False
            continue
        if "text/markdown" in data:
            plain = output_markdown(cell, container, ctx)
            as_printed &= plain == gen_text(data["text/markdown"])
            data["text/markdown"] = plain
        if "image/svg+xml" in data:
            data["image/svg+xml"] = stable_svg(gen_text(data["image/svg+xml"]))
        if out.get("output_type") == "execute_result":
            out["execution_count"] = None
        kept.append(out)
    return kept, as_printed


def stable_svg(svg: str) -> str:
    """A matplotlib SVG without what changes from run to run: its date and its random ids.

    matplotlib stamps the creation time and salts its clip-path and marker ids with a
    random UUID (unless ``svg.hashsalt`` is set), so the same figure differs on every run;
    renumbering the ids in order of appearance makes equal figures equal files.
    """
    svg = re.sub(r"\s*<dc:date>[^<]*</dc:date>", "", svg)
    ids = dict.fromkeys(re.findall(r'id="([a-z]+[0-9a-f]{10})"', svg))
    for n, old in enumerate(ids):
        svg = re.sub(rf"\b{old}\b", f"{old[:-10]}{n:010d}", svg)
    return svg


def gen_text(value) -> str:
    return "".join(value) if isinstance(value, list) else value


def output_markdown(cell, container, ctx: dm.Context) -> str:
    """A ``text/markdown`` output as the page shows it: converted from its rendered nodes."""
    visible = [o for o in cell.get("outputs", []) if _visible(o)]
    if container is None or len(visible) != 1:
        ctx.warn("a text/markdown output must be the only output of its cell", container or cell)
        return "".join(o.get("data", {}).get("text/markdown", "") for o in visible)
    rendered = [c for c in container.findall(nodes.container) if c.get("nb_element") == "cell_code_output"]
    parts = dm.body(rendered[0].children, ctx) if rendered else []
    return dm.markdown(parts) + "\n"


def code_cell(cell, container, nb, ctx: dm.Context) -> nbformat.NotebookNode:
    tags = list(cell.metadata.get("tags", []))
    outputs, as_printed = outputs_for(cell, container, nb, ctx)
    if is_glue_cell(cell) and as_printed:
        tags.append(CHECK_TAG)
    source = cell.source
    new = nbformat.v4.new_code_cell(source)
    if tags:
        new.metadata["tags"] = tags
    if any(t in tags for t in HIDE_SOURCE):
        if not source.startswith("%%"):
            new.source = f"#@title {_title(cell, outputs)}\n{source}"
        new.metadata["cellView"] = "form"
        new.metadata["jupyter"] = {"source_hidden": True}
    if any(t in tags for t in HIDE_OUTPUT):
        new.metadata.setdefault("jupyter", {})["outputs_hidden"] = True
        new.metadata["collapsed"] = True  # what JupyterLab and Colab write for folded outputs
    new.outputs = outputs
    count = cell.get("execution_count") if outputs else None
    new.execution_count = count
    for out in outputs:
        if out.get("output_type") == "execute_result":
            out["execution_count"] = count
    return new


def setup_cell(app) -> nbformat.NotebookNode:
    from aiinfra.book import colab

    url, branch = (
        app.config.html_theme_options["repository_url"],
        app.config.html_theme_options["repository_branch"],
    )
    lines = [f"#@title {colab.SETUP_TITLE}"] + colab.chapter_setup_lines(colab.pip_source(url, branch))
    cell = nbformat.v4.new_code_cell("\n".join(lines))
    cell.metadata["tags"] = [SETUP_TAG]
    cell.metadata["cellView"] = "form"
    cell.metadata["jupyter"] = {"source_hidden": True}
    return cell


# --- assembling the notebook ---------------------------------------------------------


def _line(node: nodes.Node, source: str) -> int | None:
    for n in node.findall(include_self=True):
        if isinstance(n, nodes.Element) and n.line and n.source == source:
            return n.line
    return None


def events(node: nodes.Node, ctx: dm.Context, source: str):
    """Walk the page in order: ("md", blocks, line) for prose, ("code", cell_index, node) for cells."""
    for child in node.children:
        if isinstance(child, nodes.container) and child.get("nb_element") == "cell_code":
            yield "code", child["cell_index"], child
        elif isinstance(child, nodes.section):
            ctx.level += 1
            try:
                yield from events(child, ctx, source)
            finally:
                ctx.level -= 1
        elif (
            isinstance(child, nodes.title)
            and isinstance(node, nodes.section)
            or isinstance(child, nodes.Element)
        ):
            yield "md", dm.blocks(child, ctx), _line(child, source)


def build_notebook(app, doctree: nodes.document, docname: str) -> nbformat.NotebookNode:
    from aiinfra.book import colab

    env = app.env
    nb = executed_notebook(app, docname)
    measured = measured_keys(nb)
    mark_measured(doctree, measured)
    source = str(env.doc2path(docname))
    starts = nb.metadata.get("source_map") or env.metadata[docname].get("source_map") or []
    ctx = dm.Context(
        page_url=page_url(app, docname),
        equation_number=lambda node: equation_number(app, docname, node),
        figure_number=lambda node: figure_number(app, docname, node),
        measured=measured,
        image_path=lambda uri: Path(app.srcdir) / uri,
        warn=lambda msg, node: logger.warning(
            f"notebook: {msg}", location=node if isinstance(node, nodes.Node) else docname
        ),
    )
    code_index = [i for i, c in enumerate(nb.cells) if c.cell_type == "code"]
    cells = [setup_cell(app)]
    done: set[int] = set()
    pending: list[str] = []
    current = None

    def flush():
        nonlocal pending
        text = dm.markdown(pending)
        if text:
            cell = nbformat.v4.new_markdown_cell(text)
            used = {k: v for k, v in ctx.attachments.items() if f"attachment:{k}" in text}
            if used:
                cell["attachments"] = used
            cells.append(cell)
        pending = []
        ctx.attachments.clear()

    def code_before(limit: float):
        for i in code_index:
            if i < limit and i not in done:
                flush()
                cells.append(code_cell(nb.cells[i], None, nb, ctx))
                done.add(i)

    for kind, payload, where in events(doctree, ctx, source):
        if kind == "code":
            code_before(payload)
            flush()
            cells.append(code_cell(nb.cells[payload], where, nb, ctx))
            done.add(payload)
            current = None
            continue
        index = bisect.bisect_right(starts, where) - 1 if where and starts else current
        if index is not None and index >= 0:
            code_before(index)
            if current is not None and index != current:
                flush()
            current = index
        pending += payload
    code_before(float("inf"))
    flush()
    out = nbformat.v4.new_notebook(
        cells=cells,
        metadata={
            **json.loads(json.dumps(colab.NOTEBOOK_METADATA)),
            "colab": {"provenance": [], "toc_visible": True},
            "aiinfra": {"page": docname, "url": ctx.page_url},
        },
    )
    for n, cell in enumerate(out.cells):
        cell["id"] = hashlib.sha1(f"{docname}/{n}/{cell.cell_type}".encode()).hexdigest()[:12]
    return out


def equation_number(app, docname: str, node: nodes.math_block) -> str | None:
    """The number the HTML page prints next to the equation (mirrors sphinx.util.math)."""
    if not node.get("number"):
        return None
    if app.config.math_numfig and app.config.numfig and node.get("ids"):
        number = app.env.toc_fignumbers.get(docname, {}).get("displaymath", {}).get(node["ids"][0])
        if number:
            return ".".join(map(str, number))
    return str(node["number"])


def figure_number(app, docname: str, node: nodes.Element) -> str | None:
    kind = "table" if isinstance(node, nodes.table) else "figure"
    for ident in node.get("ids", []):
        number = app.env.toc_fignumbers.get(docname, {}).get(kind, {}).get(ident)
        if number:
            return ".".join(map(str, number))
    return None


# --- Sphinx events -------------------------------------------------------------------


def write_notebook(app, doctree, docname):
    if app.builder.format != "html" or not is_notebook_page(app.env, docname):
        return
    if not app.config.html_baseurl:
        logger.warning(
            "notebook: set html.baseurl in _config.yml (links in notebooks point at the published book)"
        )
        return
    nb = build_notebook(app, doctree, docname)
    try:
        nbformat.validate(nb)
    except nbformat.ValidationError as exc:
        logger.warning(f"notebook: {docname} is not a valid notebook: {exc.message}", location=docname)
    from aiinfra.book import colab

    path = out_dir(app) / notebook_rel(docname)
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(colab.notebook_text(nb), encoding="utf-8")


def outdated(app, env, added, changed, removed):
    """Re-read the pages whose notebook is missing or was made by older generator code."""
    if app.builder.format != "html":
        return []
    stamp = out_dir(app) / ".generator"
    current = stamp.read_text().strip() if stamp.is_file() else ""
    pages = [d for d in env.found_docs if d in env.metadata and is_notebook_page(env, d)]
    if current != generator_version():
        return pages
    return [d for d in pages if not (out_dir(app) / notebook_rel(d)).is_file()]


def finished(app, exception):
    if exception is None and app.builder.format == "html":
        out_dir(app).mkdir(parents=True, exist_ok=True)
        (out_dir(app) / ".generator").write_text(generator_version() + "\n")


def setup(app):
    keep_glue_keys()
    app.connect("env-get-outdated", outdated)
    app.connect("doctree-resolved", write_notebook)
    app.connect("build-finished", finished)
    return {"parallel_read_safe": True, "parallel_write_safe": True}
