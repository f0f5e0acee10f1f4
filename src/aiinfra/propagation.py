"""How a shift in one ratio breaks an assumption further down the stack (chapter 1).

Chapter 1 closes with three histories (the TPU, the Azure SmartNIC, Huawei's
Unified Bus) in which a change in demand or in hardware moved a ratio far
enough that an old division of labour stopped paying. The table below lists
the shifts that shape AI systems today, the assumption each one breaks, and
where this book treats it. Rows whose topic lies beyond the book say so
(``chapters == ()``) instead of pointing at a chapter that does not cover it.

The wording is the book's own; the list of shifts follows the first-encounter
source text, with one row added for disaggregated serving (DistServe,
Splitwise).
"""
from __future__ import annotations

from dataclasses import dataclass

from . import _check

__all__ = ["Shift", "SHIFTS", "shifts", "shifts_for_chapter", "propagation_table_markdown", "BOOK_CHAPTERS"]

#: the chapters of this book, by number (used to label and validate the table)
BOOK_CHAPTERS = {
    1: "A first encounter",
    2: "The hardware layers",
    3: "What inference is",
    4: "Latency, throughput, tokens per second",
    5: "The KV cache and batching",
    6: "The data-center cluster",
    7: "Serving at scale",
}


@dataclass(frozen=True)
class Shift:
    """One row: what changed, which assumption stopped holding, where the book treats it."""

    change: str
    broken_assumption: str
    chapters: tuple[int, ...]
    example: str


SHIFTS: tuple[Shift, ...] = (
    Shift(
        change="Neural-network time piles up in dense matrix products",
        broken_assumption="General-purpose cores can carry the main arithmetic at acceptable area and power",
        chapters=(2, 4),
        example="TPU v1's systolic matrix unit",
    ),
    Shift(
        change="A model's weights outgrow one card's memory",
        broken_assumption="One model instance fits on one accelerator",
        chapters=(6,),
        example="a 70B model in BF16 spans two H100s",
    ),
    Shift(
        change="Each decode step reads all weights yet does about 2 FLOPs per weight read",
        broken_assumption="Peak FLOP/s sets how fast tokens come out",
        chapters=(3, 4),
        example="decode steps that wait on HBM, not on the tensor cores",
    ),
    Shift(
        change="Contexts grow until the KV cache rivals or exceeds the weights",
        broken_assumption="Per-request state is small and cheap to recompute",
        chapters=(5, 7),
        example="KV budget, not FLOPs, caps the batch",
    ),
    Shift(
        change="Prefill is compute-bound while decode is bandwidth-bound",
        broken_assumption="One pool of identical machines serves both phases well",
        chapters=(7,),
        example="disaggregated prefill and decode",
    ),
    Shift(
        change="Training and inference move data between servers in lock-step",
        broken_assumption="Network traffic is many independent flows that statistical multiplexing smooths out",
        chapters=(6,),
        example="all-reduce waits for its slowest link",
    ),
    Shift(
        change="Training jobs span thousands of accelerators",
        broken_assumption="Component failures are rare events a job can ignore",
        chapters=(),
        example="checkpoint and restart as routine",
    ),
    Shift(
        change="Agent and RL workloads start tool sandboxes by the batch",
        broken_assumption="Containerised programs are independent and set their own pace",
        chapters=(),
        example="sandboxes paced by the GPU side",
    ),
    Shift(
        change="Edge devices can run useful models",
        broken_assumption="Running everything centrally in the cloud always finishes first",
        chapters=(),
        example="on-device decoding without a network round trip",
    ),
)


def shifts() -> list[Shift]:
    """All rows, in the order of the book."""
    return list(SHIFTS)


def shifts_for_chapter(chapter: int) -> list[Shift]:
    """The rows a given chapter of this book treats (1..7)."""
    ch = _check.integer("chapter", chapter, minimum=1)
    if ch not in BOOK_CHAPTERS:
        raise ValueError(f"chapter must be one of {sorted(BOOK_CHAPTERS)}, got {chapter!r}")
    return [s for s in SHIFTS if ch in s.chapters]


def _chapter_cell(chapters: tuple[int, ...], link) -> str:
    if not chapters:
        return "beyond this book"
    return ", ".join(link(c) for c in chapters)


def propagation_table_markdown(link=None) -> str:
    """The table as Markdown. ``link(n)`` formats a chapter reference (default ``"Ch. n"``)."""
    if link is None:
        def link(c):
            return f"Ch. {c}"
    elif not callable(link):
        raise ValueError(f"link must be a callable taking a chapter number, got {link!r}")
    rows = ["| What changed | Assumption that stops holding | Example | Where |", "|---|---|---|---|"]
    for s in SHIFTS:
        rows.append(f"| {s.change} | {s.broken_assumption} | {s.example} | {_chapter_cell(s.chapters, link)} |")
    return "\n".join(rows)
