"""Chapter 1: the propagation table as data (aiinfra.propagation)."""
import re

import pytest

from aiinfra import propagation


def test_every_row_is_complete_and_points_at_real_chapters():
    rows = propagation.shifts()
    assert len(rows) >= 8
    for r in rows:
        assert r.change and r.broken_assumption and r.example
        assert all(c in propagation.BOOK_CHAPTERS for c in r.chapters)


def test_rows_carry_no_typed_numbers():
    # numbers in prose are glued; the table must not smuggle figures in
    for r in propagation.shifts():
        text = " ".join([r.change, r.broken_assumption])
        assert not re.search(r"\d+(\.\d+)?\s*(ms|GB|TB|%)", text), text


def test_shifts_for_chapter():
    assert any("Peak FLOP/s" in s.broken_assumption for s in propagation.shifts_for_chapter(4))
    assert all(6 in s.chapters for s in propagation.shifts_for_chapter(6))
    assert propagation.shifts_for_chapter(1) == []


@pytest.mark.parametrize("bad", [0, 8, 2.5, True, "4"])
def test_shifts_for_chapter_rejects_bad_chapter(bad):
    with pytest.raises(ValueError, match="chapter"):
        propagation.shifts_for_chapter(bad)


def test_markdown_table_shape_and_links():
    md = propagation.propagation_table_markdown()
    lines = md.splitlines()
    assert len(lines) == 2 + len(propagation.SHIFTS)
    assert all(line.count("|") == 5 for line in lines)
    assert "beyond this book" in md
    md2 = propagation.propagation_table_markdown(link=lambda c: f"[{c}](ch{c})")
    assert "[6](ch6)" in md2


def test_markdown_rejects_non_callable_link():
    with pytest.raises(ValueError, match="link"):
        propagation.propagation_table_markdown(link="Ch.")
