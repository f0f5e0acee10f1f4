"""Chapter 8 measures the build machine once per build and quotes that one record on every page.

`make book` keeps the record (``aiinfra.measure.machine_record``) in the execution cache, next
to the outputs that quote it. Each quantity below is formatted from the record independently
of the pages, and must read the same on every page that quotes it, so that a cross-reference
("the tiny call of page 1") is true.
"""

from __future__ import annotations

import html
import re

import pytest

from aiinfra import measure, units
from book_pages import BOOK, ROOT, built

RECORD = ROOT / "_build" / ".jupyter_cache" / "machine-record.json"


def record() -> measure.MachineRecord:
    if not RECORD.is_file():
        pytest.fail(f"{RECORD.relative_to(ROOT)} missing: run `make book` (chapter 8 writes it)")
    return measure.MachineRecord.from_json(RECORD.read_text(encoding="utf-8"))


def page_text(name: str) -> str:
    raw = built(BOOK / "ch08" / f"{name}.md").read_text(encoding="utf-8")
    return " ".join(html.unescape(re.sub(r"<[^>]+>", " ", raw)).split())


def measured(name: str) -> list[str]:
    """The values a volatile (measuring) cell glued into the page."""
    raw = built(BOOK / "ch08" / f"{name}.md").read_text(encoding="utf-8")
    return [html.unescape(v) for v in re.findall(r'<span class="pasted-text measured">(.*?)</span>', raw)]


def test_every_ch08_page_quotes_the_one_record():
    rec = record()
    ceil = rec.ceilings
    tiny = units.fmt_time(rec.tiny_call.seconds, digits=2)
    read = units.fmt_rate_bytes(rec.read.bytes_per_s, "GB", digits=1)
    ridge = f"{ceil.ridge_flops_per_byte:.1f}"
    knee = f"{measure.predicted_knee_batch(4, ceil):.1f}"
    assert tiny in measured("01-timing-honestly") and tiny in measured("04-model-gap-or-overhead")
    assert read in measured("index") and read in measured("02-ceilings")
    assert ridge in measured("02-ceilings") and knee in measured("02-ceilings")
    assert knee in measured("03-toy-decode")
    table = page_text("06-pitfalls-and-numbers")
    assert f"ridge point {ridge} FLOP/B" in table
    assert f"knee of a float32 decode step {knee}" in table
    assert f"one tiny call {tiny}" in table
    assert rec.backend in page_text("index") and rec.backend in table


def test_the_toy_decode_figure_at_rest_is_the_stored_sweep_not_this_build():
    # the stored sweep is a constant of the library: glued as text, never marked as measured
    stored = measure.stored_decode_sweep()
    quoted = "".join(page_text("03-toy-decode").split())  # the tags around a glued value leave spaces
    said = (
        f"measured by the same code on {stored.machine.backend}, on {stored.measured_on} ({stored.source})."
    )
    assert "".join(said.split()) in quoted
    assert stored.machine.backend not in measured("03-toy-decode")
    assert stored.measured_on not in measured("03-toy-decode")
