"""A notebook's saved preview of each interactive figure is the figure the book shows on load.

For every figure of every page, chromium renders the book's default frame (the moving layer
over its CSS background: what a reader of the HTML sees before touching a slider) and the
test compares those pixels with the preview image that the page's notebook (this build's,
``_build/notebooks/``) carries for clients without a kernel. Both are brought to the frame's
CSS size; a pixel counts as a mismatch when it is ink (dark) in one and paper (near white) in
the other, which is what a missing axis, tick label or still curve produces, while
resampling only shifts grey levels at the edges. The frames are shot before any slider moves,
in this worker's one visit of the page (:mod:`tests.browser.snapshots`).
"""

from __future__ import annotations

import base64
import io
import json

import numpy as np
from PIL import Image

from .conftest import BUILD, MISSING, ROOT, expected_figures

NOTEBOOKS = ROOT / "_build" / "notebooks"
INK, PAPER = 128, 235
#: Share of pixels allowed to be ink in one image and paper in the other (anti-aliased edges).
MAX_MISMATCH = 0.01


def previews(figure_page: str) -> list[Image.Image]:
    rel = figure_page.removeprefix("book/").removesuffix(".html") + ".ipynb"
    nb = json.loads((NOTEBOOKS / rel).read_text(encoding="utf-8"))
    out = []
    for cell in nb["cells"]:
        for o in cell.get("outputs", []):
            data = o.get("data", {})
            if "".join(data.get("text/plain", "")) == "<figure frame>":  # saved as a list of lines
                png = "".join(data["image/png"]) if isinstance(data["image/png"], list) else data["image/png"]
                out.append(Image.open(io.BytesIO(base64.b64decode(png))).convert("RGB"))
    return out


def measured_figures(figure_page: str) -> int:
    rel = figure_page.removeprefix("book/").removesuffix(".html") + ".ipynb"
    nb = json.loads((NOTEBOOKS / rel).read_text(encoding="utf-8"))
    return sum(
        1
        for cell in nb["cells"]
        if "volatile" in cell.get("metadata", {}).get("tags", [])
        and "interactive_figure(" in "".join(cell.get("source", ""))
    )


def grey(img: Image.Image, size) -> np.ndarray:
    return np.asarray(img.convert("L").resize(size, Image.Resampling.LANCZOS), dtype=int)


def mismatch(a: np.ndarray, b: np.ndarray) -> float:
    return float((((a < INK) & (b > PAPER)) | ((b < INK) & (a > PAPER))).mean())


def test_preview_is_the_books_first_frame(figure_page, built_book, snapshots, artifacts):
    assert figure_page != MISSING, "no page of the built book shows an interactive figure"
    # a figure drawn from this machine's measurements (a volatile cell) keeps no output in the committed
    # notebook, so that the notebook is the same on every machine: it has no preview to compare
    expected = expected_figures((BUILD / figure_page).read_text(encoding="utf-8")) - measured_figures(
        figure_page
    )
    saved = previews(figure_page)
    assert len(saved) == expected, f"{figure_page}: {len(saved)} previews in its notebook, {expected} figures"
    frames = snapshots(figure_page)["first_frames"]
    for i, preview in enumerate(saved):
        shown = Image.open(io.BytesIO(frames[i])).convert("RGB")
        size = shown.size
        book, notebook = grey(shown, size), grey(preview, size)
        share = mismatch(book, notebook)
        if share > MAX_MISMATCH:
            stem = figure_page.replace("/", "-").removesuffix(".html")
            shown.save(artifacts / f"preview-{stem}-{i}-book.png")
            preview.save(artifacts / f"preview-{stem}-{i}-notebook.png")
        assert share <= MAX_MISMATCH, (
            f"{figure_page}: figure {i}'s preview differs from the book's first frame in {share:.1%} of its pixels"
        )
        assert (notebook < INK).mean() > 0.005, f"{figure_page}: figure {i}'s preview is blank"
