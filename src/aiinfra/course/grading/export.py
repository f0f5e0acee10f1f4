"""Exports read from the gradebook: ``grades.csv``, Markdown feedback, Gradescope ``results.json``.

Whatever a student id or an answer holds, the exports stay well formed: file
names are unique per student (:func:`safe_name`), CSV cells cannot start a
spreadsheet formula (:func:`csv_cell`), text from a submission is quoted in Markdown
as code (:func:`md_inline`, :func:`md_block`) that no renderer turns into links, images,
HTML, headings or table rows, Gradescope shows every output as plain text, and no
control character or terminal escape reaches any of them (:func:`~.bounded.clean_text`).
"""

from __future__ import annotations

import csv
import hashlib
import json
import re
import unicodedata
from pathlib import Path
from typing import TypedDict

from .bounded import clean_text
from .gradebook import Gradebook

_PLAIN = re.compile(r"^[a-z0-9][a-z0-9._-]{0,63}$")
_RESERVED = {"con", "prn", "aux", "nul", *(f"com{i}" for i in range(10)), *(f"lpt{i}" for i in range(10))}
FORMULA_START = ("=", "+", "-", "@", "\t")  # a carriage return never gets here (clean_text)


def safe_name(student: str) -> str:
    """A file name for a student id: unique per id, ASCII, never hidden, the same on every run.

    A lower-case id made of ``a-z0-9._-`` is its own name; any other id becomes
    an ASCII slug plus ``~`` and 12 hex digits of its SHA-256, so two ids never
    share a file, even on a case-insensitive disk.
    """
    if _PLAIN.match(student) and student.split(".")[0] not in _RESERVED and not student.endswith("."):
        return student
    slug = unicodedata.normalize("NFKD", clean_text(student)).encode("ascii", "ignore").decode().lower()
    slug = re.sub(r"[^a-z0-9._-]+", "_", slug).strip("._-")[:40] or "_"
    digest = hashlib.sha256(student.encode("utf-8", "surrogatepass")).hexdigest()[:12]
    return f"{slug}~{digest}"


def csv_cell(value) -> str:
    """A text cell a spreadsheet shows as text: without control characters, and a leading ``= + - @`` (or tab)
    gets a ``'`` in front."""
    text = clean_text(str(value))
    return "'" + text if text.startswith(FORMULA_START) else text


def _part_label(p: dict) -> str:
    return f"{p['exercise']}({p['part']})"


def write_csv(gb: Gradebook, assignment: str, path: Path) -> Path:
    """One row per student: totals, status, reason and the points of every part."""
    students = gb.students(assignment)
    subs = [gb.submission(assignment, s) for s in students]
    labels = []
    for sub in subs:
        for p in sub["parts"]:
            if _part_label(p) not in labels:
                labels.append(_part_label(p))
    path.parent.mkdir(parents=True, exist_ok=True)
    with open(path, "w", newline="", encoding="utf-8", errors="replace") as fh:
        w = csv.writer(fh)
        w.writerow(
            ["student", "score", "max_score", "auto_score", "auto_max", "manual_pending", "status", "reason"]
            + labels
        )
        for sub in subs:
            pts = {
                _part_label(p): (p["manual_points"] if p["kind"] == "free" else p["points"])
                for p in sub["parts"]
            }
            w.writerow(
                [
                    csv_cell(sub["student"]),
                    f"{sub['score']:g}",
                    f"{sub['max_score']:g}",
                    f"{sub['auto_score']:g}",
                    f"{sub['auto_max']:g}",
                    f"{sub['manual_pending']:g}",
                    csv_cell(sub["status"]),
                    csv_cell(sub["reason"]),
                ]
                + ["" if pts.get(lb) is None else f"{pts[lb]:g}" for lb in labels]
            )
    return path


def _longest_run(text: str, char: str) -> int:
    return max((len(m) for m in re.findall(f"{re.escape(char)}+", text)), default=0)


def md_inline(text) -> str:
    """Untrusted text as one inline Markdown code span: literal in every CommonMark renderer.

    Inside a code span nothing is a link, image, HTML, entity or emphasis; the text is one line,
    its pipes are escaped for tables (GFM takes ``\\|`` in a cell as a pipe), and the backtick
    fence is longer than any backtick run inside.
    """
    text = clean_text(str(text)).replace("\n", " ").replace("\t", " ").replace("|", "\\|")
    fence = "`" * (_longest_run(text, "`") + 1)
    return f"{fence} {text} {fence}"


def md_block(text) -> str:
    """Untrusted multi-line text as a fenced code block: literal, whatever lines it holds."""
    text = clean_text(str(text))
    fence = "`" * max(3, _longest_run(text, "`") + 1)
    return f"{fence}text\n{text.rstrip(chr(10))}\n{fence}"


def feedback_markdown(sub: dict, assignment: str) -> str:
    lines = [
        f"# Feedback: {assignment}, {md_inline(sub['student'])}",
        "",
        f"**Score: {sub['score']:g} / {sub['max_score']:g}**"
        + (
            f" ({sub['manual_pending']:g} points still to be graded by hand)" if sub["manual_pending"] else ""
        ),
        "",
        f"Run: {md_inline(sub['reason'])}",
        "",
    ]
    current = None
    for p in sub["parts"]:
        if p["exercise"] != current:
            current = p["exercise"]
            lines += ["", f"## Exercise {current}", "", "| part | points | verdict |", "|---|---|---|"]
        if p["kind"] == "free":
            pts = "?" if p["manual_points"] is None else f"{p['manual_points']:g}"
        else:
            pts = f"{p['points']:g}"
        lines.append(f"| ({p['part']}) | {pts} / {p['max_points']:g} | {md_inline(p['reason'])} |")
        if p["kind"] == "free" and isinstance(p["answer"], str):
            lines += ["", f"Your answer to ({p['part']}):", "", md_block(p["answer"][:4000]), ""]
    return "\n".join(lines).rstrip() + "\n"


def write_feedback(gb: Gradebook, assignment: str, folder: Path) -> list[Path]:
    folder.mkdir(parents=True, exist_ok=True)
    out = []
    for s in gb.students(assignment):
        path = folder / f"{safe_name(s)}.md"
        path.write_text(
            feedback_markdown(gb.submission(assignment, s), assignment), encoding="utf-8", errors="replace"
        )
        out.append(path)
    return out


class GradescopeTest(TypedDict):
    """One entry of the ``tests`` list of Gradescope's ``results.json``."""

    name: str
    score: float
    max_score: float
    output: str
    visibility: str


def gradescope_results(sub: dict) -> dict:
    """Gradescope autograder ``results.json``: one test per part; free-response parts carry 0 points here
    (they are graded by hand in Gradescope)."""
    tests: list[GradescopeTest] = []
    for p in sub["parts"]:
        if p["kind"] == "free":
            text = p["answer"] if isinstance(p["answer"], str) else ""
            tests.append(
                {
                    "name": f"{_part_label(p)} free response",
                    "score": 0.0,
                    "max_score": 0.0,
                    "output": "needs manual grading" + (f"; answer: {text[:2000]}" if text else ""),
                    "visibility": "visible",
                }
            )
        else:
            tests.append(
                {
                    "name": _part_label(p),
                    "score": float(p["points"]),
                    "max_score": float(p["max_points"]),
                    "output": p["reason"],
                    "visibility": "visible",
                }
            )
    return {
        "score": float(sub["auto_score"]),
        "output": clean_text(sub["reason"]),
        "output_format": "text",
        "test_output_format": "text",
        "tests": [{**t, "output": clean_text(t["output"])} for t in tests],
        "stdout_visibility": "hidden",
    }


def write_gradescope(gb: Gradebook, assignment: str, folder: Path) -> list[Path]:
    out = []
    for s in gb.students(assignment):
        path = folder / safe_name(s) / "results.json"
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(
            json.dumps(gradescope_results(gb.submission(assignment, s)), indent=1, ensure_ascii=False) + "\n",
            encoding="utf-8",
            errors="replace",
        )
        out.append(path)
    return out
