"""Plain Markdown from a resolved Sphinx doctree: what Colab and JupyterLab render with no extension.

The book's pages are MyST; a notebook's Markdown cells must be CommonMark plus GitHub
tables and ``$``/``$$`` math, because neither Colab nor a plain JupyterLab understands
roles or directives. Converting the *resolved* doctree (after execution, glue
resolution and cross-referencing) rather than the source text means every number,
equation number, citation and link is already what the HTML page shows:

* glued values are text, except values measured on the build machine (glued by a cell
  tagged ``volatile``, known by their glue name): they read ``[measured]``, in a
  ``<span title="measured ...">``, so the notebook is the same file on every machine;
* math is ``$...$`` and ``$$...$$``; numbered equations carry the page's number as
  ``\\tag{1.7}``, and references to them read ``(1.7)``;
* glossary terms, ``{doc}``/``{ref}``/``{numref}`` targets and citations link to the
  published book (``page_url``); citations read ``(Author, Year)``;
* admonitions become block quotes with a bold title, exercises become text with the
  solution folded in ``<details>``, figures become images with their captions, tables
  become Markdown tables.

A node this module does not know is reported through ``warn`` (the book builds with
``-W``, so a new construct fails the build instead of leaking into the notebooks).
"""

from __future__ import annotations

import base64
import mimetypes
import re
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from urllib.parse import quote, urljoin

from docutils import nodes

#: Node attribute holding the glue name of a pasted value (set by ``aiinfra_notebooks``).
GLUE_KEY = "glue_key"
#: Class of a pasted value measured on the build machine (in the HTML page too).
MEASURED_CLASS = "measured"
#: Title of the placeholder that stands for a measured value in a notebook.
MEASURED_TITLE = "measured on the machine that runs this page: run the code cells to see it"
MEASURED_OPEN = f'<span title="{MEASURED_TITLE}">'
MEASURED_TEXT = r"\[measured\]"

_ESCAPE = re.compile(r"([\\`*_\[\]<~|])")
# A literal dollar that no client takes for math: JupyterLab and Colab look for $ in the
# Markdown source (an entity is not one) and MathJax then scans the rendered text, skipping
# elements of these classes. (JupyterLab needs "\\$" and CommonMark "\$"; neither works in both.)
DOLLAR = '<span class="tex2jax_ignore mathjax_ignore">&#36;</span>'
_MACHINERY = re.compile(r"^\s*<(script|style|link|meta)\b", re.I)
_LINE_START = re.compile(r"^(#|>|[+=-](\s|$))")
_NUMBERED = re.compile(r"^(\d+)([.)])(\s|$)")
_ADMONITIONS = {
    "attention",
    "caution",
    "danger",
    "error",
    "hint",
    "important",
    "note",
    "tip",
    "warning",
    "seealso",
}
_SKIP = {
    "comment",
    "target",
    "index",
    "substitution_definition",
    "system_message",
    "raw_latex",
    "meta",
    "pending_xref_condition",
    "toctree",
    "desc_signature_line",
    "HideCodeCellNode",
}


@dataclass
class Context:
    """What the conversion of one page needs to know."""

    page_url: str  # published URL of this page (links resolve against it)
    equation_number: Callable[[nodes.math_block], str | None]
    figure_number: Callable[[nodes.Element], str | None] = lambda node: None
    measured: frozenset = frozenset()  # glue names of the values a volatile (measured) cell glued
    image_path: Callable[[str], Path | None] = lambda uri: None
    warn: Callable[[str, nodes.Node], None] = lambda msg, node: None
    attachments: dict = field(default_factory=dict)
    in_table: bool = False
    level: int = 0

    def url(self, refuri: str) -> str:
        return urljoin(self.page_url, refuri)


# --- inline --------------------------------------------------------------------------


def escape(text: str) -> str:
    """Text as Markdown that renders as exactly this text (no emphasis, math, HTML or links)."""
    return _ESCAPE.sub(r"\\\1", text.replace("\n", " ")).replace("$", DOLLAR)


def line_start_escaped(text: str) -> str:
    """A paragraph that would start a heading, quote or list if left as is ("1. ", "# ", "- ")."""
    if _LINE_START.match(text):
        return "\\" + text
    return _NUMBERED.sub(r"\1\\\2\3", text, count=1)


def measured_placeholder() -> str:
    """What a notebook shows for a measured value: the same on every machine."""
    return f"{MEASURED_OPEN}{MEASURED_TEXT}</span>"


def code_span(text: str, ctx: Context) -> str:
    text = text.replace("\n", " ")
    if ctx.in_table:
        text = text.replace("|", "\\|")
    longest = max((len(m) for m in re.findall(r"`+", text)), default=0)
    fence = "`" * (longest + 1)
    pad = " " if text.startswith("`") or text.endswith("`") else ""
    return f"{fence}{pad}{text}{pad}{fence}"


def inline_math(latex: str, ctx: Context) -> str:
    latex = " ".join(latex.split())
    if ctx.in_table:  # a bare | would split the table row in some renderers
        latex = latex.replace("\\|", "\\Vert ").replace("|", "\\vert ")
    return f"${latex}$"


def link(text: str, url: str) -> str:
    url = quote(url, safe=":/#?&=%~+@!,;'*")
    return f"[{text}]({url})" if text else f"<{url}>"


def inline(node: nodes.Node, ctx: Context) -> str:
    """Markdown for an inline node (and for the inline content of a text element)."""
    if isinstance(node, nodes.Text):
        return escape(node.astext())
    name = type(node).__name__
    if name in _SKIP or isinstance(node, nodes.comment):
        return ""
    if isinstance(node, nodes.target):
        return children(node, ctx)
    if isinstance(node, nodes.math):
        return inline_math(node.astext(), ctx)
    if isinstance(node, nodes.literal):
        return code_span(node.astext(), ctx)
    if isinstance(node, nodes.emphasis):
        return _wrap("*", children(node, ctx))
    if isinstance(node, nodes.strong):
        return _wrap("**", children(node, ctx))
    if isinstance(node, nodes.subscript):
        return f"<sub>{children(node, ctx)}</sub>"
    if isinstance(node, nodes.superscript):
        return f"<sup>{children(node, ctx)}</sup>"
    if isinstance(node, nodes.reference):
        return reference(node, ctx)
    if isinstance(node, nodes.image):
        return image(node, ctx)
    if isinstance(node, nodes.footnote_reference):
        return f"<sup>{escape(node.astext())}</sup>"
    if isinstance(node, nodes.raw):
        return raw_html(node)
    if isinstance(node, nodes.inline):
        classes = node.get("classes", [])
        if "bibtex-citation" in classes:
            return citation(node, ctx)
        if "pasted-text" in classes or "pasted-inline" in classes or "output" in classes:
            if node.get(GLUE_KEY) in ctx.measured:
                return measured_placeholder()
            return children(node, ctx)
        return children(node, ctx)
    if isinstance(
        node,
        (
            nodes.abbreviation,
            nodes.acronym,
            nodes.title_reference,
            nodes.generated,
            nodes.problematic,
            nodes.term,
            nodes.classifier,
        ),
    ):
        return children(node, ctx)
    if isinstance(node, (nodes.TextElement, nodes.Inline)):
        ctx.warn(f"no Markdown rule for inline node <{name}>; its text is kept", node)
        return children(node, ctx)
    ctx.warn(f"block node <{name}> inside inline content; its text is kept", node)
    return escape(node.astext())


def children(node: nodes.Node, ctx: Context) -> str:
    return "".join(inline(child, ctx) for child in node.children)


def raw_html(node: nodes.raw) -> str:
    """Raw HTML is Markdown too, except page machinery (scripts, styles) that a notebook would show as text."""
    text = node.astext()
    if "html" not in node.get("format", "").split() or _MACHINERY.match(text):
        return ""
    return text


def _wrap(mark: str, text: str) -> str:
    """``*text*`` with the delimiters hugging the text (CommonMark needs no inner spaces)."""
    if not text.strip():
        return text
    lead = text[: len(text) - len(text.lstrip())]
    trail = text[len(text.rstrip()) :]
    return f"{lead}{mark}{text.strip()}{mark}{trail}"


def reference(node: nodes.reference, ctx: Context) -> str:
    text = children(node, ctx)
    if "refuri" in node:
        uri = node["refuri"]
        if uri.startswith("#"):  # an anchor on this page: the text says where (e.g. "(1.7)")
            return text
        if node.get("internal") or not re.match(r"^[a-z][a-z0-9+.-]*:", uri):
            uri = ctx.url(uri)
        return link(text, uri)
    return text  # refid: a target on this page (equation, exercise, section)


def citation(node: nodes.inline, ctx: Context) -> str:
    """sphinxcontrib-bibtex's ``[Author et al., 2009]`` as ``(Author et al., 2009)``, linked."""
    text = children(node, ctx).strip()
    if text.startswith("\\["):
        text = "(" + text[2:]
    if text.endswith("\\]"):
        text = text[:-2] + ")"
    return text


def image(node: nodes.image, ctx: Context) -> str:
    uri = node.get("uri", "")
    alt = escape(node.get("alt", "") or Path(uri).stem)
    if re.match(r"^(https?:|data:)", uri):
        return f"![{alt}]({uri})"
    path = ctx.image_path(uri)
    if path is None or not path.is_file():
        ctx.warn(f"image {uri!r} not found for the notebook", node)
        return alt
    name = f"{len(ctx.attachments) + 1}-{path.name}"
    mime = mimetypes.guess_type(path.name)[0] or "application/octet-stream"
    ctx.attachments[name] = {mime: base64.b64encode(path.read_bytes()).decode("ascii")}
    return f"![{alt}](attachment:{quote(name)})"


# --- blocks --------------------------------------------------------------------------


def blocks(node: nodes.Node, ctx: Context) -> list[str]:
    """Markdown blocks (each without surrounding blank lines) for a body-level node."""
    name = type(node).__name__
    if name in _SKIP or isinstance(node, (nodes.target, nodes.comment, nodes.substitution_definition)):
        return []
    if isinstance(node, nodes.paragraph):
        text = children(node, ctx).strip()
        return [line_start_escaped(text)] if text else []
    if isinstance(node, nodes.section):
        return section(node, ctx)
    if isinstance(node, nodes.title):
        return [f"{'#' * min(max(ctx.level, 1), 6)} {children(node, ctx).strip()}"]
    if isinstance(node, nodes.math_block):
        return [display_math(node, ctx)]
    if isinstance(node, nodes.literal_block):
        return [fenced(node)]
    if isinstance(node, nodes.table):
        return table(node, ctx)
    if isinstance(node, (nodes.bullet_list, nodes.enumerated_list)):
        return [listing(node, ctx)]
    if isinstance(node, nodes.definition_list):
        return definitions(node, ctx)
    if isinstance(node, nodes.block_quote):
        return [quote_block(body(node.children, ctx))]
    if name.startswith("exercise"):
        return exercise(node, ctx)
    if name == "solution_node":
        return solution(node, ctx)
    if isinstance(node, nodes.Admonition) or name in _ADMONITIONS:
        return [admonition(node, ctx)]
    if isinstance(node, nodes.figure):
        return figure(node, ctx)
    if isinstance(node, nodes.image):
        return [image(node, ctx)]
    if isinstance(node, (nodes.topic, nodes.sidebar)):
        return [admonition(node, ctx)]
    if isinstance(node, nodes.rubric):
        return [f"**{children(node, ctx).strip()}**"]
    if isinstance(node, nodes.transition):
        return ["---"]
    if isinstance(node, nodes.line_block):
        return ["<br>\n".join(children(line, ctx) for line in node.findall(nodes.line))]
    if isinstance(node, nodes.raw):
        return [raw_html(node)] if raw_html(node) else []
    if isinstance(node, nodes.footnote):
        label = node.next_node(nodes.label)
        rest = [c for c in node.children if not isinstance(c, nodes.label)]
        return [f"<sup>{escape(label.astext() if label else '')}</sup> " + "\n\n".join(body(rest, ctx))]
    if isinstance(node, (nodes.container, nodes.compound)) or name in ("glossary", "only"):
        return body(node.children, ctx)
    if isinstance(node, (nodes.caption, nodes.legend)):
        return (
            body(node.children, ctx)
            if isinstance(node, nodes.legend)
            else [f"*{children(node, ctx).strip()}*"]
        )
    ctx.warn(f"no Markdown rule for block node <{name}>; its text is kept", node)
    return [escape(node.astext())] if node.astext().strip() else []


def body(children_: list, ctx: Context) -> list[str]:
    out = []
    for child in children_:
        if isinstance(child, nodes.Text):
            if child.astext().strip():
                out.append(escape(child.astext()))
            continue
        out += blocks(child, ctx)
    return out


def section(node: nodes.section, ctx: Context) -> list[str]:
    ctx.level += 1
    try:
        return body(node.children, ctx)
    finally:
        ctx.level -= 1


def display_math(node: nodes.math_block, ctx: Context) -> str:
    latex = node.astext().strip()
    if not node.get("nowrap"):
        parts = [p.strip() for p in re.split(r"\n\s*\n", latex) if p.strip()]
        latex = parts[0] if len(parts) == 1 else "\\begin{aligned}" + " \\\\ ".join(parts) + "\\end{aligned}"
    latex = "\n".join(line for line in latex.splitlines() if line.strip())
    number = ctx.equation_number(node)
    tag = f" \\tag{{{number}}}" if number else ""
    return f"$$\n{latex}{tag}\n$$"


def fenced(node: nodes.literal_block) -> str:
    text = node.astext().rstrip("\n")
    lang = node.get("language", "")
    lang = {"ipython3": "python", "ipython": "python", "default": "", "none": "", "myst-ansi": "text"}.get(
        lang, lang
    )
    longest = max((len(m) for m in re.findall(r"`{3,}", text)), default=2)
    fence = "`" * (longest + 1)
    return f"{fence}{lang}\n{text}\n{fence}"


def quote_block(parts: list[str]) -> str:
    text = "\n\n".join(parts)
    return "\n".join(("> " + line) if line else ">" for line in text.split("\n"))


def admonition(node: nodes.Element, ctx: Context) -> str:
    title_node = (
        node.next_node(nodes.title)
        if isinstance(node.children[0] if node.children else None, nodes.title)
        else None
    )
    if title_node is not None:
        title = children(title_node, ctx).strip()
        rest = node.children[1:]
    else:
        title = type(node).__name__.replace("seealso", "see also").capitalize()
        rest = node.children
    return quote_block([f"**{title}**"] + body(rest, ctx))


def listing(node: nodes.Element, ctx: Context) -> str:
    enumerated = isinstance(node, nodes.enumerated_list)
    start = node.get("start", 1)
    items = []
    for k, item in enumerate(node.children):
        marker = f"{start + k}." if enumerated else "-"
        parts = body(item.children, ctx)
        text = "\n\n".join(parts) if parts else ""
        pad = " " * (len(marker) + 1)
        lines = text.split("\n")
        items.append(
            f"{marker} {lines[0]}" + "".join(f"\n{pad}{line}" if line else "\n" for line in lines[1:])
        )
    loose = any(len(item.children) > 1 for item in node.children)
    return ("\n\n" if loose else "\n").join(items)


def definitions(node: nodes.definition_list, ctx: Context) -> list[str]:
    """Each term in bold, its definition after it (plain Markdown has no definition lists)."""
    out = []
    for item in node.children:
        terms = [children(t, ctx).strip() for t in item.children if isinstance(t, nodes.term)]
        definition = item.next_node(nodes.definition)
        parts = body(definition.children, ctx) if definition is not None else []
        head = "**" + "**, **".join(terms) + "**"
        if parts and not parts[0].startswith(("$$", "```", ">", "|", "-", "<")):
            out.append(f"{head}: {parts[0]}")
            out += parts[1:]
        else:
            out.append(head)
            out += parts
    return out


def figure(node: nodes.figure, ctx: Context) -> list[str]:
    out = []
    for child in node.children:
        if isinstance(child, nodes.caption):
            number = ctx.figure_number(node)
            label = f"Figure {number}: " if number else ""
            out.append(f"*{label}{children(child, ctx).strip()}*")
        else:
            out += blocks(child, ctx)
    return out


def table(node: nodes.table, ctx: Context) -> list[str]:
    """A GitHub-flavoured Markdown table (the first row is the header if there is no thead)."""
    out = []
    title = node.next_node(nodes.title)
    if title is not None and title.parent is node:
        number = ctx.figure_number(node)
        out.append(f"*{'Table ' + number + ': ' if number else ''}{children(title, ctx).strip()}*")
    group = node.next_node(nodes.tgroup)
    head = [row for part in group.findall(nodes.thead) for row in part.children]
    rows = [row for part in group.findall(nodes.tbody) for row in part.children]
    ncols = int(group.get("cols", 0)) or max(len(r.children) for r in head + rows)
    if not head and rows:
        head, rows = rows[:1], rows[1:]
    saved, ctx.in_table = ctx.in_table, True
    try:
        header = _row(head[0], ncols, ctx) if head else [""] * ncols
        extra = [_row(r, ncols, ctx) for r in head[1:]]
        body_rows = extra + [_row(r, ncols, ctx) for r in rows]
    finally:
        ctx.in_table = saved
    align = _alignment(rows[0] if rows else None, ncols)
    lines = ["| " + " | ".join(header) + " |", "|" + "|".join(align) + "|"]
    lines += ["| " + " | ".join(r) + " |" for r in body_rows]
    out.append("\n".join(lines))
    return out


def _row(row: nodes.row, ncols: int, ctx: Context) -> list[str]:
    cells = []
    for entry in row.children:
        parts = []
        for child in entry.children:
            if isinstance(child, nodes.paragraph):
                parts.append(children(child, ctx).strip())
            elif isinstance(child, (nodes.bullet_list, nodes.enumerated_list)):
                parts += ["• " + children(p, ctx).strip() for p in child.findall(nodes.paragraph)]
            else:
                parts += [b.replace("\n", " ") for b in blocks(child, ctx)]
        cells.append("<br>".join(p for p in parts if p))
        cells += [""] * entry.get("morecols", 0)
    return (cells + [""] * ncols)[:ncols]


def _alignment(row: nodes.row | None, ncols: int) -> list[str]:
    marks = []
    for entry in row.children if row is not None else []:
        classes = entry.get("classes", [])
        marks.append("---:" if "text-right" in classes else ":---:" if "text-center" in classes else "---")
        marks += ["---"] * entry.get("morecols", 0)
    return (marks + ["---"] * ncols)[:ncols]


# --- sphinx-exercise -------------------------------------------------------------------


def _content(node: nodes.Element) -> list:
    """The body of an exercise or solution (sphinx-exercise wraps it in an untitled section)."""
    rest = [c for c in node.children if not isinstance(c, nodes.title)]
    if (
        len(rest) == 1
        and isinstance(rest[0], nodes.section)
        and not any(isinstance(c, nodes.title) for c in rest[0].children)
    ):
        return list(rest[0].children)
    return rest


def _title_text(node: nodes.Element, ctx: Context) -> str:
    title = node.next_node(nodes.title)
    return " ".join(children(title, ctx).split()) if title is not None else ""


def exercise(node: nodes.Element, ctx: Context) -> list[str]:
    """An exercise as text: its title in bold, then its statement."""
    return [f"**{_title_text(node, ctx)}**"] + body(_content(node), ctx)


def solution(node: nodes.Element, ctx: Context) -> list[str]:
    """A solution folded away: ``<details>`` with the title as summary (blank lines keep Markdown inside)."""
    title = node.next_node(nodes.title)
    summary = " ".join(title.astext().split()) if title is not None else "Solution"
    inner = body(_content(node), ctx)
    return [f"<details>\n<summary>{_html_escape(summary)}</summary>"] + inner + ["</details>"]


def _html_escape(text: str) -> str:
    return text.replace("&", "&amp;").replace("<", "&lt;").replace(">", "&gt;").replace("$", DOLLAR)


def markdown(parts: list[str]) -> str:
    """Blocks joined as one Markdown cell."""
    return "\n\n".join(p for p in parts if p.strip())


def from_myst(text: str, extensions: list[str]) -> str:
    """Plain Markdown for a snippet of MyST (an exercise statement), parsed as the book parses it.

    The snippet goes through myst-parser (with the book's ``extensions``) into a docutils
    tree and back out through the converter above, so a dollar sign is math exactly where
    the book typesets math and text everywhere else. Headings keep their level. MyST that
    needs Sphinx (roles such as ``{term}``) has nothing to resolve it here and is an error.
    """
    import io

    from docutils.core import publish_doctree
    from myst_parser.parsers.docutils_ import Parser

    doctree = publish_doctree(
        text,
        parser=Parser(),
        settings_overrides={
            "myst_enable_extensions": list(extensions),
            "doctitle_xform": False,
            "report_level": 5,
            "halt_level": 5,
            "warning_stream": io.StringIO(),
        },
    )
    problems = [m.astext() for m in doctree.findall(nodes.system_message) if m["level"] >= 3]
    problems += [p.astext() for p in doctree.findall(nodes.problematic)]
    warnings: list[str] = []
    heading = re.match(r"^(#+)\s", text)
    ctx = Context(page_url="", equation_number=lambda node: None, warn=lambda msg, node: warnings.append(msg))
    ctx.level = len(heading[1]) - 1 if heading else 0
    out = markdown(body(doctree.children, ctx))
    if problems or warnings:
        raise ValueError(
            f"text must be plain MyST (no roles or directives that need Sphinx): {problems + warnings}"
        )
    return out
