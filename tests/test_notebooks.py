"""The generated notebooks (notebooks/, exercises/, solutions/) read as the book reads.

Every check compares a notebook with something made independently of the generator: the
built HTML page (its glued values, equation numbers, figures), the MyST source of the page
(its code cells and their tags), or plain CommonMark rendering (no MyST survives).
Run after `make book` (which `make test` does): the stale check compares `notebooks/`
with the notebooks that build generated, byte for byte (nothing in them depends on the
machine). Every test is parametrised over the page sources, so a missing notebook or a
missing built page fails instead of vanishing.
"""

from __future__ import annotations

import html
import json
import re
import subprocess
import sys
from html.parser import HTMLParser
from pathlib import Path

import jupytext
import pytest
import yaml
from docutils import nodes
from markdown_it import MarkdownIt
from mdit_py_plugins.dollarmath import dollarmath_plugin

from aiinfra_build import doctree_markdown as dm
from aiinfra_build import notebooks as gen
from book_pages import HTML, built

ROOT = Path(__file__).resolve().parents[1]

PAGES = gen.pages()
NOTEBOOKS = [gen.target(md) for md in PAGES]  # from the sources: a missing notebook fails, never vanishes
EXERCISES = sorted((ROOT / "exercises").glob("*.ipynb")) + sorted((ROOT / "solutions").glob("*.ipynb"))
HIDE_SOURCE = {"remove-cell", "remove-input", "hide-input", "hide-cell"}
BASEURL = yaml.safe_load((ROOT / "_config.yml").read_text())["html"]["baseurl"]

# MyST that plain Markdown would show as raw text
MYST = {
    "role": re.compile(r"\{[a-zA-Z][\w:+.-]*\}`"),
    "directive fence": re.compile(r"^[ >]*(`{3,}|~{3,}|:{3,})\s*\{", re.M),
    "colon fence": re.compile(r"^[ >]*:{3,}", re.M),
    "directive option": re.compile(r"^[ >]*:[a-z][\w-]*:(\s|$)", re.M),
    "equation label": re.compile(r"\$\$\s*\([^)\s]+\)"),
    "target": re.compile(r"^[ >]*\([\w.:-]+\)=\s*$", re.M),
    "cell break": re.compile(r"^\+\+\+", re.M),
}
COMMONMARK = MarkdownIt("commonmark").enable("table").enable("strikethrough")
# Markdown as a notebook client reads it: $...$ is math. A $ left in the text is one that
# JupyterLab or Colab may pair with the next one into math (neither honours "\$" the same way).
WITH_MATH = (
    MarkdownIt("commonmark").enable("table").use(dollarmath_plugin, allow_space=True, allow_digits=True)
)


def rel(path: Path) -> str:
    return str(path.relative_to(ROOT))


def read(path: Path) -> dict:
    return json.loads(path.read_text(encoding="utf-8"))


def markdown_sources(nb: dict) -> list[str]:
    """The notebook's Markdown: its Markdown cells and the text/markdown outputs it shows."""
    out = []
    for cell in nb["cells"]:
        if cell["cell_type"] == "markdown":
            out.append(gen._text(cell["source"]))
        for o in cell.get("outputs", []):
            if "text/markdown" in o.get("data", {}):
                out.append(gen._text(o["data"]["text/markdown"]))
    return out


def without_code(markdown: str) -> str:
    """Markdown minus fenced code and code spans (which may quote MyST on purpose)."""
    text = re.sub(r"^(`{3,}|~{3,})(?!\s*\{)[^\n]*\n.*?^\1\s*$", "", markdown, flags=re.S | re.M)
    return re.sub(r"(?<![`}])(`+)(?!`)[^\n]+?(?<!`)\1(?!`)", "", text)


def rendered_text(markdown: str) -> str:
    """What a reader sees: CommonMark (with tables) rendered, tags stripped, entities decoded."""
    return html.unescape(re.sub(r"<[^>]+>", "", COMMONMARK.render(markdown)))


def myst_left(markdown: str) -> list[str]:
    """MyST syntax, and dollars a client would take for math, left in a notebook's Markdown."""
    text = without_code(markdown)
    found = [
        f"{kind}: {text[max(0, m.start() - 50) : m.end() + 30]!r}"
        for kind, pattern in MYST.items()
        for m in pattern.finditer(text)
    ]
    for token in WITH_MATH.parse(re.sub(r"&#36;|&dollar;", "", text)):  # an entity is no delimiter
        found += [
            f"literal dollar: {child.content[:80]!r}"
            for child in token.children or []
            if child.type == "text" and "$" in child.content
        ]
    return found


def built_page(notebook: Path) -> str:
    return built(source_page(notebook)).read_text(encoding="utf-8")


def glued_values(page_html: str, measured: bool = False) -> list[str]:
    """Every value myst-nb pasted into the built page ({glue:text}, {glue:} roles), computed
    ones, or (``measured``) those a volatile cell glued, which the page marks with a class."""
    found = re.findall(
        r'<span class="(pasted-text|pasted-inline|output text_plain)( measured)?">(.*?)</span>',
        page_html,
        re.S,
    )
    return [html.unescape(re.sub(r"<[^>]+>", "", s)) for _, m, s in found if bool(m) == measured]


class Cells(HTMLParser):
    """The code cells of a built page: their classes and the images and widgets their output shows."""

    def __init__(self):
        super().__init__()
        self.cells: list[dict] = []
        self.depth = 0
        self.open_at = None

    def handle_starttag(self, tag, attrs):
        attrs = dict(attrs)
        classes = (attrs.get("class") or "").split()
        if tag == "div":
            self.depth += 1
            if "cell" in classes and self.open_at is None:
                self.open_at = self.depth
                self.cells.append({"classes": classes, "images": 0, "widgets": 0})
        elif self.open_at is not None and tag == "img":
            self.cells[-1]["images"] += 1
        elif (
            self.open_at is not None
            and tag == "script"
            and attrs.get("type") == "application/vnd.jupyter.widget-view+json"
        ):
            self.cells[-1]["widgets"] += 1

    def handle_endtag(self, tag):
        if tag == "div":
            if self.open_at == self.depth:
                self.open_at = None
            self.depth -= 1


def page_cells(page_html: str) -> list[dict]:
    parser = Cells()
    parser.feed(page_html)
    return parser.cells


def source_page(notebook: Path) -> Path:
    return ROOT / "book" / notebook.relative_to(ROOT / "notebooks").with_suffix(".md")


def code_cells(nb: dict) -> list[dict]:
    return [
        c
        for c in nb["cells"]
        if c["cell_type"] == "code" and gen.SETUP_TAG not in c["metadata"].get("tags", [])
    ]


def without_title(source: str) -> str:
    return source.split("\n", 1)[1] if source.startswith("#@title ") else source


# --- stale, complete ---------------------------------------------------------------


def test_every_page_has_a_current_notebook():
    result = subprocess.run(
        [sys.executable, "-m", "aiinfra_build.notebooks", "--check"], cwd=ROOT, capture_output=True, text=True
    )
    assert result.returncode == 0, result.stderr


def test_there_is_a_notebook_for_every_chapter_page():
    assert sorted((ROOT / "notebooks").rglob("*.ipynb")) == sorted(NOTEBOOKS)
    chapters = {p.relative_to(ROOT / "notebooks").parts[0] for p in NOTEBOOKS}
    assert {f"ch0{i}" for i in range(1, 9)} <= chapters


GENERATED = sorted(
    [
        *(ROOT / "notebooks").rglob("*.ipynb"),
        *(ROOT / "exercises").glob("*.ipynb"),
        *(ROOT / "solutions").glob("*.ipynb"),
    ]
)


@pytest.mark.parametrize("path", GENERATED, ids=rel)
def test_a_notebook_is_saved_as_jupyter_saves_it(path, tmp_path):
    """Opening a notebook and saving it (JupyterLab's Ctrl+S: the contents manager's nbformat.write)
    rewrites the committed bytes, and the kernel metadata JupyterLab fills in on open is there,
    all but the reader's own Python version."""
    import nbformat

    nb = nbformat.read(path, as_version=nbformat.NO_CONVERT)
    saved = tmp_path / "saved.ipynb"
    nbformat.write(nb, saved, version=nbformat.NO_CONVERT)
    assert saved.read_bytes() == path.read_bytes(), f"{rel(path)}: saving it would rewrite the file"
    assert nb.metadata.kernelspec == {
        "display_name": "Python 3 (ipykernel)",
        "language": "python",
        "name": "python3",
    }
    assert nb.metadata.language_info.pygments_lexer == "ipython3"
    assert "version" not in nb.metadata.language_info, "the reader's Python version is not ours to write"


# --- code cells ----------------------------------------------------------------------


@pytest.mark.parametrize("path", NOTEBOOKS, ids=rel)
def test_setup_cell_comes_first_and_is_folded(path):
    nb = read(path)
    first = nb["cells"][0]
    url, branch = gen.repository()
    source = gen._text(first["source"])
    assert gen.SETUP_TAG in first["metadata"]["tags"]
    assert source.startswith("#@title ")
    assert first["metadata"]["cellView"] == "form" and first["metadata"]["jupyter"]["source_hidden"] is True
    assert '"google.colab" in sys.modules' in source and f"git+{url}@{branch}" in source
    assert "--no-deps" in source  # never upgrades Colab's ipywidgets
    assert "import myst_nb" in source  # the glue stand-in where myst-nb is missing
    assert nb["metadata"]["kernelspec"]["name"] == "python3"
    assert "widgets" not in nb["metadata"]


@pytest.mark.parametrize("path", NOTEBOOKS, ids=rel)
def test_code_cells_are_the_pages_cells_with_hidden_ones_folded(path):
    page = [c for c in jupytext.read(source_page(path)).cells if c.cell_type == "code"]
    mine = code_cells(read(path))
    assert [without_title(gen._text(c["source"])) for c in mine] == [c.source for c in page]
    for cell, original in zip(mine, page):
        tags = set(original.metadata.get("tags", []))
        assert tags <= set(cell["metadata"].get("tags", []))
        folded = bool(tags & HIDE_SOURCE)
        assert gen._text(cell["source"]).startswith("#@title ") == folded
        assert (cell["metadata"].get("cellView") == "form") == folded
        assert cell["metadata"].get("jupyter", {}).get("source_hidden", False) == folded
        if "remove-cell" in tags:
            assert cell["metadata"]["jupyter"]["outputs_hidden"] is True


@pytest.mark.parametrize("path", NOTEBOOKS, ids=rel)
def test_saved_outputs_glue_checked_measurements_dropped(path):
    """Measurements keep no output; glue cells keep their outputs, which `make nbval` compares with a fresh run (unless a fresh run cannot match them)."""
    page = {c.source: c for c in jupytext.read(source_page(path)).cells if c.cell_type == "code"}
    for cell in code_cells(read(path)):
        tags = cell["metadata"].get("tags", [])
        data = [k for o in cell["outputs"] for k in o.get("data", {})]
        if "volatile" in tags:
            assert cell["outputs"] == [] and gen.CHECK_TAG not in tags
        elif "glue(" in gen._text(cell["source"]):
            assert cell["outputs"], "glue outputs are what `make nbval` compares"
            preview = any(
                "Run this cell, or Run All" in gen._text(o.get("data", {}).get("text/plain", ""))
                for o in cell["outputs"]
            )
            if preview:  # a fresh run prints the live figure, not its saved preview
                assert gen.CHECK_TAG not in tags
            elif "text/markdown" not in data:  # (converted Markdown is checked only if unchanged)
                assert gen.CHECK_TAG in tags
        for key in data:
            assert key != "application/vnd.jupyter.widget-view+json"
        assert without_title(gen._text(cell["source"])) in page


def test_glued_numbers_are_checked_in_every_chapter():
    per_chapter = {}
    for path in NOTEBOOKS:
        n = sum(
            gen.CHECK_TAG in c["metadata"].get("tags", []) and bool(c["outputs"])
            for c in code_cells(read(path))
        )
        chapter = path.relative_to(ROOT / "notebooks").parts[0]
        per_chapter[chapter] = per_chapter.get(chapter, 0) + n
    missing = [ch for ch, n in per_chapter.items() if ch.startswith("ch") and n == 0]
    assert not missing, f"chapters with no glue output for `make nbval` to check: {missing}"


@pytest.mark.parametrize("path", NOTEBOOKS, ids=rel)
def test_every_figure_of_the_page_shows_before_anything_runs(path):
    """Static figures as saved images; interactive ones as a saved preview frame (image plus readouts)."""
    built = [c for c in page_cells(built_page(path)) if "tag_volatile" not in c["classes"]]
    mine = [c for c in code_cells(read(path)) if "volatile" not in c["metadata"].get("tags", [])]
    assert len(built) <= len(mine)
    page_images = sum(c["images"] for c in built)
    page_widgets = sum(c["widgets"] for c in built)
    images = sum(k.startswith("image/") for c in mine for o in c["outputs"] for k in o.get("data", {}))
    previews = sum(
        "Run this cell, or Run All" in gen._text(o.get("data", {}).get("text/plain", ""))
        for c in mine
        for o in c["outputs"]
    )
    assert previews == page_widgets
    assert images >= page_images + page_widgets


# --- Markdown ----------------------------------------------------------------------


@pytest.mark.parametrize("path", NOTEBOOKS, ids=rel)
def test_markdown_has_no_myst_and_every_glued_value(path):
    nb = read(path)
    sources = markdown_sources(nb)
    leftovers = [bad for s in sources for bad in myst_left(s)]
    assert not leftovers, leftovers
    assert not any(re.search(r"<(script|style)\b", without_code(s)) for s in sources), (
        "page machinery in the prose"
    )
    page = built_page(path)
    values = glued_values(page)
    text = " ".join(rendered_text(s) for s in sources)
    missing = [v for v in values if v not in text]
    assert not missing, f"{len(missing)} of {len(values)} glued values not readable: {missing[:8]}"
    # a value measured on the build machine (glued by a volatile cell) is a placeholder
    placeholders = sum(s.count(dm.measured_placeholder()) for s in sources)
    assert placeholders == len(glued_values(page, measured=True))


@pytest.mark.parametrize("path", NOTEBOOKS, ids=rel)
def test_equations_carry_the_books_numbers(path):
    page = built_page(path)
    sources = markdown_sources(read(path))
    tags = set(re.findall(r"\\tag\{([^}]*)\}", "\n".join(sources)))
    numbers = {n.strip("()") for n in re.findall(r'class="eqno">(\([^)<]*\))', page)}
    assert tags == numbers
    text = " ".join(rendered_text(s) for s in sources)
    refs = re.findall(r'<a class="reference internal" href="[^"]*#equation-[^"]*">(\([^)<]*\))</a>', page)
    assert all(r in text for r in refs), refs


@pytest.mark.parametrize("path", NOTEBOOKS, ids=rel)
def test_links_point_at_the_published_book(path):
    targets = [
        t for s in markdown_sources(read(path)) for t in re.findall(r"\]\(([^)\s]+)\)", without_code(s))
    ]
    for t in targets:
        assert t.startswith(("https://", "http://", "attachment:", "mailto:")), t
    book_links = [t for t in targets if t.startswith(BASEURL)]
    for t in book_links:
        page = HTML / t[len(BASEURL) :].split("#")[0]
        assert page.is_file(), f"{t}: no such page in the built book"


@pytest.mark.parametrize("path", EXERCISES, ids=rel)
def test_exercise_notebooks_have_plain_markdown(path):
    leftovers = [bad for s in markdown_sources(read(path)) for bad in myst_left(s)]
    assert not leftovers, leftovers


def test_the_check_catches_myst():
    """The patterns above are not vacuous: raw MyST trips every one of them."""
    raw = (
        "{glue:text}`x` and {term}`KV cache`\n\n```{admonition} A\n:class: note\nbody\n```\n\n"
        ":::{note}\nbody\n:::\n\n$$\nx\n$$ (eq-x)\n\n(sec-a)=\n+++\n\nIt costs \\$2.50.\n"
    )
    kinds = {bad.split(":")[0] for bad in myst_left(raw)}
    assert kinds == set(MYST) | {"literal dollar"}
    assert myst_left(f"It costs {dm.DOLLAR}2.50 for $N$ tokens.") == []
    assert myst_left("Quoted: ``{glue:}`x` ``\n\n```text\n{term}`y`\n```\n") == []


# --- the converter on hand-made doctrees ----------------------------------------------


def _ctx(**kw) -> dm.Context:
    warnings = []
    ctx = dm.Context(
        page_url="https://example.org/book/ch01/p.html",
        equation_number=lambda n: "1.7",
        warn=lambda msg, node: warnings.append(msg),
        **kw,
    )
    ctx.warnings = warnings
    return ctx


def _para(*children) -> nodes.paragraph:
    return nodes.paragraph("", "", *children)


def test_text_is_escaped_so_it_renders_as_itself():
    text = "costs $3.00 or $5 per *hour* [approx] <b>_x_ | ~y~ \\"
    md = dm.markdown(dm.blocks(_para(nodes.Text(text)), _ctx()))
    assert rendered_text(md).strip() == text


@pytest.mark.parametrize(
    "text",
    [
        "1. Not a list",
        "2024) was a year",
        "# not a heading",
        "- not an item",
        "+ not an item",
        "> not a quote",
        "= not a setext line",
    ],
)
def test_a_paragraph_never_turns_into_a_list_heading_or_quote(text):
    md = dm.markdown(dm.blocks(_para(nodes.Text(text)), _ctx()))
    html_ = COMMONMARK.render(md)
    assert html_.startswith("<p>") and rendered_text(md).strip() == text


def _pasted(text: str, key: str) -> nodes.inline:
    node = nodes.inline(text, text, classes=["pasted-text"])
    node[dm.GLUE_KEY] = key
    return node


def test_a_measured_value_is_known_by_its_glue_name_not_its_text():
    """A constant that prints like a measurement ("64 MiB") stays; the measurement becomes a placeholder."""
    ctx = _ctx(measured=frozenset({"ch08_p2_stream"}))
    para = _para(
        _pasted("64 MiB", "ch08_p2_min_stream"), nodes.Text(" and "), _pasted("64 MiB", "ch08_p2_stream")
    )
    md = dm.markdown(dm.blocks(para, ctx))
    assert md == f"64 MiB and {dm.measured_placeholder()}"
    assert rendered_text(md) == "64 MiB and [measured]\n"


def test_math_numbers_links_and_citations():
    ctx = _ctx(measured=frozenset({"ch01_p1_step"}))
    block = nodes.math_block("", "a = b\n\nc = d", number=2, ids=["equation-x"])
    para = _para(
        nodes.reference(
            "", "", nodes.inline("", "critical batch"), internal=True, refuri="../back/glossary.html#term-B"
        ),
        nodes.Text(" "),
        nodes.reference("", "(1.7)", internal=True, refid="equation-x"),
        nodes.Text(" "),
        nodes.inline(
            "",
            "",
            nodes.Text("["),
            nodes.reference("", "Williams, 2009", internal=True, refuri="../back/bibliography.html#id1"),
            nodes.Text("]"),
            classes=["bibtex-citation"],
        ),
        nodes.Text(" took "),
        _pasted("1.3 ms", "ch01_p1_step"),
        nodes.Text(" and "),
        nodes.math("", "|x|"),
    )
    md = dm.markdown(dm.blocks(block, ctx) + dm.blocks(para, ctx))
    assert md.startswith("$$\n\\begin{aligned}a = b \\\\ c = d\\end{aligned} \\tag{1.7}\n$$")
    assert "[critical batch](https://example.org/book/back/glossary.html#term-B) (1.7) " in md
    assert "([Williams, 2009](https://example.org/book/back/bibliography.html#id1))" in md
    assert f"{dm.measured_placeholder()} and $|x|$" in md
    assert ctx.warnings == []


def test_tables_admonitions_and_solutions():
    ctx = _ctx()

    def row(*texts):
        return nodes.row(
            "", *[nodes.entry("", _para(t if isinstance(t, nodes.Node) else nodes.Text(t))) for t in texts]
        )

    table = nodes.table(
        "",
        nodes.tgroup(
            "",
            nodes.colspec(),
            nodes.colspec(),
            nodes.thead("", row("a|b", "c")),
            nodes.tbody("", row(nodes.math("", "|x|"), "2")),
            cols=2,
        ),
    )
    md = dm.markdown(dm.blocks(table, ctx))
    assert md == "| a\\|b | c |\n|---|---|\n| $\\vert x\\vert $ | 2 |"
    assert "<table>" in COMMONMARK.render(md)
    note = nodes.admonition("", nodes.title("", "Example 1-1"), _para(nodes.Text("Body.")))
    assert dm.markdown(dm.blocks(note, ctx)) == "> **Example 1-1**\n>\n> Body."
    warning = nodes.warning("", _para(nodes.Text("Careful.")))
    assert dm.markdown(dm.blocks(warning, ctx)) == "> **Warning**\n>\n> Careful."

    class solution_node(nodes.Admonition, nodes.Element):
        pass

    sol = solution_node(
        "", nodes.title("", "Solution to Exercise 1-1"), nodes.section("", _para(nodes.Text("42 GB")))
    )
    md = dm.markdown(dm.blocks(sol, ctx))
    assert md == "<details>\n<summary>Solution to Exercise 1-1</summary>\n\n42 GB\n\n</details>"
    assert "<details>" in COMMONMARK.render(md) and "<p>42 GB</p>" in COMMONMARK.render(md)


def test_a_figure_is_an_attached_image_with_its_numbered_caption(tmp_path):
    png = tmp_path / "roofline.png"
    png.write_bytes(b"\x89PNG\r\n\x1a\n" + b"\0" * 16)
    ctx = _ctx(image_path=lambda uri: tmp_path / uri, figure_number=lambda node: "4.2")
    fig = nodes.figure(
        "",
        nodes.image(uri="roofline.png", alt="A roofline"),
        nodes.caption("", "", nodes.Text("The roofline of one "), nodes.math("", "H100")),
        ids=["fig-r"],
    )
    md = dm.markdown(dm.blocks(fig, ctx))
    assert md == "![A roofline](attachment:1-roofline.png)\n\n*Figure 4.2: The roofline of one $H100$*"
    assert list(ctx.attachments) == ["1-roofline.png"] and "image/png" in ctx.attachments["1-roofline.png"]
    assert ctx.warnings == []


def test_an_unknown_node_is_reported():
    class mystery(nodes.General, nodes.Element):
        pass

    ctx = _ctx()
    assert dm.blocks(mystery("", _para(nodes.Text("kept"))), ctx) == ["kept"]
    assert ctx.warnings and "mystery" in ctx.warnings[0]


# --- clients -------------------------------------------------------------------------


def test_no_jupyterlab_extension_is_incompatible():
    jupyter = Path(sys.executable).parent / "jupyter"
    result = subprocess.run(
        [str(jupyter), "labextension", "list"], capture_output=True, text=True, timeout=120
    )
    listing = result.stdout + result.stderr
    assert result.returncode == 0, listing
    assert "JupyterLab v" in listing and "@jupyter-widgets/jupyterlab-manager" in listing
    bad = [
        line
        for line in listing.splitlines()
        if re.search(r"(\sX\b|\x1b\[31m\s*X|not compatible|incompatible)", line)
    ]
    assert not bad, bad


def test_binder_files_follow_repo2docker_conventions():
    binder = ROOT / ".binder"
    assert not (ROOT / "binder").exists(), "repo2docker refuses a repository with both binder/ and .binder/"
    runtime = (binder / "runtime.txt").read_text().strip()
    match = re.fullmatch(r"python-(\d+)\.(\d+)", runtime)
    assert match, runtime
    import tomllib
    from packaging.specifiers import SpecifierSet

    project = tomllib.loads((ROOT / "pyproject.toml").read_text())["project"]
    assert f"{match[1]}.{match[2]}" in SpecifierSet(project["requires-python"])
    assert (int(match[1]), int(match[2])) >= (3, 11), (
        "numpy 2.4 needs Python 3.11; repo2docker's default is 3.10"
    )
    pins = {}
    for line in (ROOT / "requirements.txt").read_text().splitlines():
        if "==" in line and not line.startswith("#"):
            name, version = line.split("==")
            pins[name.strip().lower()] = version.strip()
    lines = [
        line.strip()
        for line in (binder / "requirements.txt").read_text().splitlines()
        if line.strip() and not line.startswith("#")
    ]
    assert lines, "no requirements"
    for line in lines:
        assert not line.startswith(("-e", ".", "-r")), (
            f"{line}: local references stage the whole repo before install"
        )
        name, _, version = line.partition("==")
        assert name.lower() not in {"jupyterlab-myst", "jupytext"}, f"{name}: not needed to open notebooks/"
        assert version == pins.get(name.lower(), version), (
            f"{name}: pinned {version}, requirements.txt says {pins[name.lower()]}"
        )
    for name in project["dependencies"]:
        base = re.split(r"[<>=!~ ]", name)[0].lower()
        assert any(line.lower().startswith(base + "==") for line in lines), f"{base} missing from .binder"
    post = binder / "postBuild"
    text = post.read_text()
    assert text.startswith("#!/bin/bash") and "set -e" in text and "pip install" in text and "-e ." in text
    mode = subprocess.run(
        ["git", "ls-files", "-s", str(post)], cwd=ROOT, capture_output=True, text=True
    ).stdout
    assert mode.startswith("100755"), f"postBuild must be executable in git: {mode!r}"
