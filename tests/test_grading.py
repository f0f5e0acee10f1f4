"""The grader: pure scoring, the gradebook, exports, and the real CLI on the reference solutions."""
from __future__ import annotations

import csv
import json
import shutil
import sqlite3
import subprocess
import sys
from pathlib import Path

import pytest

from aiinfra.exercises import registry
from aiinfra.exercises.variants import namespace, params_for, references
from aiinfra.grading import cli, export
from aiinfra.grading.extract import Limits, read_answers
from aiinfra.grading.gradebook import Gradebook
from aiinfra.grading.score import Assignment, score_submission

REPO = Path(__file__).resolve().parent.parent
FAST = ["--cell-timeout", "20", "--timeout", "60", "--memory-mb", "1024", "--quiet"]


def _perfect_answers(chapter: str, student: str, variants: bool) -> list[dict]:
    out = []
    for ex in registry.chapter(chapter):
        ns = namespace(ex, params_for(ex, student, variants))
        refs = references(ex, ns)
        for p in ex.parts:
            value = refs[p.part] if p.kind != "free" else "my reasoning"
            out.append({"exercise": ex.id, "part": p.part, "value": value})
    return out


def test_score_submission_full_marks_and_stop_rule():
    a = Assignment("ch01", variants=True)
    answers = _perfect_answers("ch01", "alice", True)
    s = score_submission({"status": "ok", "errors": [], "answers": answers}, a, "alice")
    assert s.auto_score == s.auto_max > 0
    assert {p.status for p in s.parts if p.kind == "free"} == {"manual"}
    # the same answers scored for another student: variant parts no longer match
    other = score_submission({"status": "ok", "errors": [], "answers": answers, "reported_student": "alice"}, a, "bob")
    assert other.auto_score < other.auto_max
    assert "graded with the parameters of 'bob'" in other.reason
    # a run that stopped: the answers before the stop count, the rest are missing with a reason
    half = answers[:5]
    s = score_submission({"status": "error", "errors": ["code cell 3 raised ZeroDivisionError"], "answers": half},
                         a, "alice")
    assert s.auto_score == 5
    assert "ZeroDivisionError" in s.reason
    assert any(p.reason == "no answer recorded before the run stopped" for p in s.parts)


def test_assignment_and_limits_are_validated():
    with pytest.raises(ValueError, match="chapter"):
        Assignment("ch99")
    with pytest.raises(ValueError, match="variants"):
        Assignment("ch01", variants="yes")
    with pytest.raises(ValueError, match="cell_timeout_s"):
        Limits(cell_timeout_s=0)
    with pytest.raises(ValueError, match="memory_bytes"):
        Limits(memory_bytes=1000)
    assert Assignment("ch01").fingerprint() != Assignment("ch01", True).fingerprint()


def test_read_answers_is_strict(tmp_path):
    f = tmp_path / "answers.jsonl"
    f.write_text('{"exercise": "1-2", "part": "a", "value": 1.0}\n'
                 '{"exercise": "1-2", "part": "a", "value": NaN}\n'
                 'not json\n'
                 '{"student": "mallory"}\n'
                 '{"exercise": "1-2", "part": "b", "value": 2.0}\n')
    records, student, problems = read_answers(f)
    assert records[("1-2", "a")]["value"] == 1.0      # the NaN line was not accepted
    assert records[("1-2", "b")]["value"] == 2.0
    assert student == "mallory"
    assert "2 unreadable" in problems[0]


def _score(student="alice"):
    a = Assignment("ch01")
    return a, score_submission({"status": "ok", "errors": [], "answers": _perfect_answers("ch01", student, False)},
                               a, student)


def test_gradebook_skips_unchanged_and_survives_a_failed_transaction(tmp_path):
    path = tmp_path / "gb.sqlite"
    a, s = _score()
    with Gradebook(path) as gb:
        gb.record("ch01", "x.ipynb", "hash1", "fp", s, {"elapsed_s": 1.0})
        assert gb.is_current("ch01", "alice", "hash1", "fp")
        assert not gb.is_current("ch01", "alice", "hash2", "fp")
        assert not gb.is_current("ch01", "alice", "hash1", "other-fp")
        with pytest.raises(sqlite3.IntegrityError):      # a crash in the middle of the next submission
            with gb.db:
                gb.db.execute("DELETE FROM parts WHERE student='alice'")
                gb.db.execute("INSERT INTO submissions (assignment) VALUES ('ch01')")
    with Gradebook(path) as gb:                           # reopened: alice is intact
        sub = gb.submission("ch01", "alice")
        assert sub["score"] == sub["auto_max"] and len(sub["parts"]) == 31
        assert sub["manual_pending"] == 4
        gb.set_manual("ch01", "alice", "1-1", "g", 1.5)
        assert gb.submission("ch01", "alice")["score"] == sub["auto_max"] + 1.5
        with pytest.raises(ValueError, match="points must lie"):
            gb.set_manual("ch01", "alice", "1-1", "g", 9)
        with pytest.raises(ValueError, match="no free-response part"):
            gb.set_manual("ch01", "alice", "1-2", "a", 1)


def test_exports(tmp_path):
    a, s = _score()
    with Gradebook(tmp_path / "gb.sqlite") as gb:
        gb.record("ch01", "x.ipynb", "h", "fp", s, {})
        files = cli.export_all(gb, a, tmp_path)
        sub = gb.submission("ch01", "alice")
    rows = list(csv.DictReader(open(files["csv"], encoding="utf-8")))
    assert rows[0]["student"] == "alice" and rows[0]["auto_score"] == f"{sub['auto_max']:g}"
    assert rows[0]["1-2(a)"] == "1" and rows[0]["1-1(g)"] == ""
    res = json.loads((tmp_path / "gradescope" / "alice" / "results.json").read_text())
    assert res["stdout_visibility"] == "hidden"
    assert res["score"] == sub["auto_max"]
    for t in res["tests"]:
        assert set(t) == {"name", "score", "max_score", "output", "visibility"}
    md = (tmp_path / "feedback" / "alice.md").read_text()
    assert "needs manual grading" in md and "> my reasoning" in md
    assert export.safe_name("../../etc/passwd") == "_.._etc_passwd"


def _run_cli(*args):
    return subprocess.run([sys.executable, "-m", "aiinfra.grading.cli", *map(str, args)],
                          capture_output=True, text=True, timeout=300)


@pytest.mark.slow
@pytest.mark.parametrize("chapter", registry.chapters())
def test_reference_solutions_score_100_percent_with_the_real_cli(tmp_path, chapter):
    """Two students (one folder layout, one flat file), variants on: both must get every auto point."""
    subs = tmp_path / "subs"
    (subs / "alice").mkdir(parents=True)
    shutil.copy(REPO / "solutions" / f"{chapter}.ipynb", subs / "alice" / f"{chapter}.ipynb")
    shutil.copy(REPO / "solutions" / f"{chapter}.ipynb", subs / "bob.ipynb")
    out = tmp_path / "out"
    done = _run_cli(subs, "--assignment", chapter, "--variants", "--workers", "2", "--out", out, *FAST)
    assert done.returncode == 0, done.stderr
    with Gradebook(out / "gradebook.sqlite") as gb:
        for student in ("alice", "bob"):
            sub = gb.submission(chapter, student)
            assert sub["status"] == "ok", sub["reason"]
            wrong = [(p["exercise"], p["part"], p["reason"]) for p in sub["parts"]
                     if p["kind"] != "free" and p["points"] != p["max_points"]]
            assert not wrong
            assert sub["auto_score"] == sub["auto_max"] > 0
    again = _run_cli(subs, "--assignment", chapter, "--variants", "--out", out, *FAST)
    assert "graded 0, skipped 2 unchanged" in again.stdout


@pytest.mark.slow
def test_handout_metadata_sets_variants_and_a_changed_submission_is_regraded(tmp_path):
    handout = tmp_path / "handout"
    subprocess.run([sys.executable, str(REPO / "tools" / "build_exercises.py"), "--variants", "--out", handout],
                   check=True, capture_output=True)
    assert cli.load_assignment(str(handout / "exercises" / "ch01.ipynb"), None).variants is True
    # a student who answers with the default parameters' values gets variant parts wrong
    subs = tmp_path / "subs"
    subs.mkdir()
    nb = json.loads((REPO / "solutions" / "ch01.ipynb").read_text())
    setup = next(c for c in nb["cells"] if c["cell_type"] == "code")
    setup["source"] += '\nimport os\nos.environ["AIINFRA_VARIANTS"] = "0"  # ignore the variants'
    (subs / "carol.ipynb").write_text(json.dumps(nb))
    out = tmp_path / "out"
    done = _run_cli(subs, "--assignment", handout / "exercises" / "ch01.ipynb", "--out", out, *FAST)
    assert done.returncode == 0, done.stderr
    with Gradebook(out / "gradebook.sqlite") as gb:
        sub = gb.submission("ch01", "carol")
    ex_default = {ex.id: params_for(ex, None, False) for ex in registry.chapter("ch01")}
    ex_carol = {ex.id: params_for(ex, "carol", True) for ex in registry.chapter("ch01")}
    differs = [k for k in ex_default if ex_default[k] != ex_carol[k]]
    assert differs and sub["auto_score"] < sub["auto_max"]
    (subs / "carol.ipynb").write_text(json.dumps(json.loads((REPO / "solutions" / "ch01.ipynb").read_text())))
    done = _run_cli(subs, "--assignment", handout / "exercises" / "ch01.ipynb", "--out", out, *FAST)
    assert "graded 1, skipped 0" in done.stdout
    with Gradebook(out / "gradebook.sqlite") as gb:
        sub = gb.submission("ch01", "carol")
    assert sub["auto_score"] == sub["auto_max"]


def test_cli_rejects_bad_arguments(tmp_path):
    assert cli.main([str(tmp_path), "--assignment", "ch99"]) == 2
    assert cli.main([str(tmp_path / "missing"), "--assignment", "ch01"]) == 2
    assert cli.main([str(tmp_path), "--assignment", "ch01", "--workers", "0"]) == 2


def test_read_answers_refuses_fifos_and_symlinks(tmp_path):
    import os

    fifo = tmp_path / "fifo.jsonl"
    os.mkfifo(fifo)
    records, _, problems = read_answers(fifo)      # must not block
    assert records == {} and "not a regular file" in problems[0]
    secret = tmp_path / "secret.txt"
    secret.write_text('{"exercise": "1-2", "part": "a", "value": 1.0}\n')
    link = tmp_path / "link.jsonl"
    link.symlink_to(secret)
    records, _, problems = read_answers(link)
    assert records == {} and "could not be read safely" in problems[0]


def test_cli_manual_points_update_the_exports(tmp_path):
    a, s = _score("dana")
    gbpath = tmp_path / "out" / "gradebook.sqlite"
    with Gradebook(gbpath) as gb:
        gb.record("ch01", "x.ipynb", "h", "fp", s, {})
    args = [str(tmp_path), "--assignment", "ch01", "--out", str(tmp_path / "out"), "--quiet"]
    assert cli.main(args + ["--manual", "dana", "1-1", "g", "2"]) == 0
    row = next(csv.DictReader(open(tmp_path / "out" / "grades.csv", encoding="utf-8")))
    assert row["1-1(g)"] == "2" and row["manual_pending"] == "2"
    assert cli.main(args + ["--manual", "dana", "1-1", "g", "5"]) == 2


def test_discover_layouts_duplicates_and_empty_folders(tmp_path):
    (tmp_path / "alice").mkdir()
    (tmp_path / "alice" / "notes.ipynb").write_text("{}")
    (tmp_path / "alice" / "ch01.ipynb").write_text("{}")
    (tmp_path / "alice.ipynb").write_text("{}")
    (tmp_path / "bob.txt").write_text("hello")
    (tmp_path / "carol").mkdir()
    (tmp_path / ".hidden.ipynb").write_text("{}")
    subs, skipped = cli.discover(tmp_path, "ch01")
    by = {s["student"]: s for s in subs}
    assert set(by) == {"alice", "carol"}
    assert by["alice"]["notebook"].name == "ch01.ipynb" and by["alice"]["whole_folder"]
    assert by["carol"]["problem"] == "no .ipynb file in the submission folder"
    assert any("second submission" in s for s in skipped) and any("bob.txt" in s for s in skipped)
