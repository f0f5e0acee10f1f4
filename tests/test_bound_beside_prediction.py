"""Every glued prediction in chapters 1, 2, 4 and 5 sits beside its bound, is labelled, and is never faster.

A page that quotes a speed glues the bound under a key and the calibrated prediction under the same key
with ``_pred`` appended (the bound's key may also end in ``_bound``). The test runs each page's glue cell
with ``glue`` recording the raw values, then checks, for every pair: the bound exists; a time or price
(``s`` or ``$`` spec) predicted is above its bound, a rate below it; and every prose paragraph quoting a
prediction names it ("predict...") and every one quoting its bound says "bound", "floor" or "ceiling".
"""

from __future__ import annotations

import re
from pathlib import Path

import jupytext
import pytest

from aiinfra.book import glue as glue_module

ROOT = Path(__file__).resolve().parents[1]
PAGES = sorted(
    p
    for ch in ("ch01", "ch02", "ch04", "ch05")
    for p in (ROOT / "book" / ch).glob("*.md")
    if "exercises" not in p.name and "_pred=" in p.read_text(encoding="utf-8")
)
_BOUND_WORDS = re.compile(r"\b(bound|bounds|floor|floors|ceiling|ceilings)\b", re.I)


def _glued(page: Path, monkeypatch) -> dict[str, tuple[float, str]]:
    """Run the page's first code cell; return ``{key: (raw value, spec)}`` of its one glue call."""
    seen: dict[str, tuple[float, str]] = {}

    def record(prefix, **values):
        for key, value in values.items():
            if isinstance(value, tuple):
                seen[f"{prefix}_{key}"] = (float(value[0]), value[1]) if _is_number(value[0]) else (None, "")

    monkeypatch.setattr(glue_module, "glue", record)
    cell = next(c for c in jupytext.read(page).cells if c.cell_type == "code")
    monkeypatch.chdir(page.parent)
    exec(compile(cell.source, str(page), "exec"), {"__name__": "page"})
    return seen


def _is_number(x) -> bool:
    try:
        float(x)
    except (TypeError, ValueError):
        return False
    return True


def _pairs(seen):
    for key in seen:
        if key.endswith("_pred"):
            base = key.removesuffix("_pred")
            bound = next((k for k in (base, base + "_bound") if k in seen), None)
            yield key, bound


def test_the_pages_with_predictions_are_found():
    names = {p.relative_to(ROOT / "book").as_posix() for p in PAGES}
    assert {
        "ch04/01-decode-roofline.md",
        "ch04/02-latency-metrics.md",
        "ch04/04-roofline-and-cost.md",
    } <= names


@pytest.mark.parametrize("page", PAGES, ids=lambda p: p.relative_to(ROOT / "book").as_posix())
def test_every_prediction_has_its_bound_and_is_never_faster(page, monkeypatch):
    seen = _glued(page, monkeypatch)
    pairs = list(_pairs(seen))
    assert pairs, page
    for pred, bound in pairs:
        assert bound is not None, f"{pred} has no bound glued beside it"
        (p, spec), (b, _) = seen[pred], seen[bound]
        slower_is_bigger = spec.split()[0] in ("s", "$")
        assert (p > b) if slower_is_bigger else (0 < p < b), (pred, p, bound, b)


@pytest.mark.parametrize("page", PAGES, ids=lambda p: p.relative_to(ROOT / "book").as_posix())
def test_every_paragraph_quoting_a_pair_labels_it(page, monkeypatch):
    seen = _glued(page, monkeypatch)
    text = page.read_text(encoding="utf-8")
    prose = [para for para in text.split("\n\n") if "{glue:text}" in para]
    for pred, bound in _pairs(seen):
        for para in prose:
            if f"`{pred}`" in para:
                assert re.search(r"predict", para, re.I), (pred, para[:120])
            if f"`{bound}`" in para:
                assert _BOUND_WORDS.search(para), (bound, para[:120])
