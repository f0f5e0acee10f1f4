"""The hostile-submission suite: every bad notebook gets a gradebook row with a score and a reason,
and a good submission in the same run is graded normally.

The notebooks live in tests/hostile/ (regenerate with tests/hostile/make_hostile.py). One run of the
real CLI grades all of them with short limits (15 s per cell, 40 s per submission, 512 MiB): the
cell limit must leave room for importing aiinfra on a loaded machine.
"""
from __future__ import annotations

import shutil
import subprocess
import sys
import time
from pathlib import Path

import pytest

from aiinfra.grading.gradebook import Gradebook

HERE = Path(__file__).resolve().parent
REPO = HERE.parent
CASES = sorted(p.stem for p in (HERE / "hostile").glob("*.ipynb"))


@pytest.fixture(scope="module")
def graded(tmp_path_factory):
    tmp = tmp_path_factory.mktemp("hostile")
    subs = tmp / "subs"
    subs.mkdir()
    for name in CASES:
        shutil.copy(HERE / "hostile" / f"{name}.ipynb", subs / f"{name}.ipynb")
    shutil.copy(REPO / "solutions" / "ch01.ipynb", subs / "good_student.ipynb")
    out = tmp / "out"
    t0 = time.monotonic()
    done = subprocess.run([sys.executable, "-m", "aiinfra.grading.cli", str(subs), "--assignment", "ch01",
                           "--workers", "2", "--cell-timeout", "15", "--timeout", "40", "--memory-mb", "512",
                           "--output-kb", "256", "--out", str(out), "--quiet"],
                          capture_output=True, text=True, timeout=180)
    elapsed = time.monotonic() - t0
    assert done.returncode == 0, done.stderr
    gb = Gradebook(out / "gradebook.sqlite")
    rows = {s: gb.submission("ch01", s) for s in gb.students("ch01")}
    gb.close()
    return {"rows": rows, "elapsed": elapsed, "stdout": done.stdout, "out": out}


def _part(row, exercise, part):
    return next(p for p in row["parts"] if p["exercise"] == exercise and p["part"] == part)


def test_every_submission_has_a_row_with_a_reason(graded):
    rows = graded["rows"]
    assert set(rows) == set(CASES) | {"good_student"}
    for name, row in rows.items():
        assert row["reason"], name
        assert row["max_score"] > 0
    assert len(CASES) == 13


def test_the_good_submission_is_graded_normally(graded):
    row = graded["rows"]["good_student"]
    assert row["status"] == "ok" and row["auto_score"] == row["auto_max"]


@pytest.mark.parametrize("name,why", [
    ("malformed", "malformed JSON"),
    ("not_a_notebook", "not a notebook"),
])
def test_files_that_are_not_notebooks(graded, name, why):
    row = graded["rows"][name]
    assert row["status"] == "invalid" and why in row["reason"] and row["score"] == 0


def test_empty_notebook(graded):
    row = graded["rows"]["empty"]
    assert row["status"] == "ok" and row["score"] == 0 and "0 of 31 parts answered" in row["reason"]


@pytest.mark.parametrize("name,status,why", [
    ("raises_midway", "error", "ZeroDivisionError"),
    ("infinite_loop", "timeout", "cell time limit"),
    ("os_exit", "dead", "kernel died"),
    ("memory_bomb", "error", "MemoryError"),
])
def test_answers_before_the_stop_still_count(graded, name, status, why):
    """The rule: the first error, timeout or kernel death stops the run; earlier answers count."""
    row = graded["rows"][name]
    assert row["status"] == status and why in row["reason"]
    assert _part(row, "1-2", "h")["status"] == "correct"
    assert _part(row, "1-2", "i")["status"] == "missing"
    assert row["auto_score"] == 1


def test_ten_megabytes_of_printing_is_capped_and_the_run_continues(graded):
    row = graded["rows"]["print_10mb"]
    assert row["status"] == "ok" and "discarded" in row["reason"]
    assert _part(row, "1-2", "h")["status"] == "correct"


def test_always_equal_objects_are_rejected(graded):
    row = graded["rows"]["always_equal"]
    assert _part(row, "1-2", "h")["status"] == "rejected" and "Blob" in _part(row, "1-2", "h")["reason"]
    assert _part(row, "1-2", "i")["status"] == "rejected" and "subclass" in _part(row, "1-2", "i")["reason"]
    assert row["score"] == 0


@pytest.mark.parametrize("part,why", [
    ("a", "NaN"), ("b", "infinity"), ("h", "string"), ("i", "numpy"), ("d", "True/False"), ("e", "not a list"),
])
def test_wrong_types_are_rejected_per_part_with_a_reason(graded, part, why):
    p = _part(graded["rows"]["wrong_types"], "1-2", part)
    assert p["status"] == "rejected" and why in p["reason"] and p["points"] == 0


@pytest.mark.parametrize("name", ["numpy_patch", "redefined_check"])
def test_patching_numpy_check_or_aiinfra_in_the_kernel_changes_nothing(graded, name):
    row = graded["rows"][name]
    assert row["status"] == "ok"
    assert _part(row, "1-2", "h")["points"] == 0 and _part(row, "1-2", "i")["points"] == 0
    assert row["score"] == 0


def test_the_gradebook_cannot_be_written_from_a_notebook(graded):
    rows = graded["rows"]
    assert "intruder" not in rows
    assert all(r["auto_score"] <= r["auto_max"] for r in rows.values())
    row = rows["writes_gradebook"]
    assert row["auto_score"] == 1 and row["status"] == "ok"
    assert '"privileges_dropped": true' in row["sandbox"] or "grader's uid" in row["sandbox"]


def test_the_sandbox_reports_what_it_enforced(graded):
    row = graded["rows"]["good_student"]
    assert '"memory_bytes": 536870912' in row["sandbox"]
    assert '"network_isolated": true' in row["sandbox"] or "network left on" in row["sandbox"]


def test_exports_cover_every_submission(graded):
    out = graded["out"]
    names = set(graded["rows"])
    assert {p.stem for p in (out / "feedback").glob("*.md")} == names
    assert {p.parent.name for p in (out / "gradescope").glob("*/results.json")} == names
    assert "good_student" in graded["stdout"] and "mean score" in graded["stdout"]
