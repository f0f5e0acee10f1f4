"""The grader: pure scoring, the gradebook, exports, and the real CLI on the reference solutions."""

from __future__ import annotations

import csv
import json
import os
import re
import shutil
import sqlite3
import subprocess
import sys
from pathlib import Path

import nbformat
import pytest

from aiinfra.course.exercises import registry
from aiinfra.course.exercises.variants import namespace, params_for, references
from aiinfra.course.grading import bounded, cli, export
from aiinfra.course.grading.extract import _CappedClient, parse_answers, parse_notebook
from aiinfra.course.grading.gradebook import Gradebook, Lock
from aiinfra.course.grading.sandbox import Limits, Plan, compile_package, make_plan
from aiinfra.course.grading.score import Assignment, score_submission

REPO = Path(__file__).resolve().parent.parent
KEY = bytes(range(32))  # a variant key for the tests (an instructor's is secret and random)
FAST = ["--cell-timeout", "20", "--timeout", "60", "--memory-mb", "1024", "--quiet"]


def _perfect_answers(chapter: str, student: str, variants: bool) -> list[dict]:
    out = []
    for ex in registry.chapter(chapter):
        ns = namespace(ex, params_for(ex, student, variants, KEY))
        refs = references(ex, ns)
        for p in ex.parts:
            value = refs[p.part] if p.kind != "free" else "my reasoning"
            out.append({"exercise": ex.id, "part": p.part, "value": value})
    return out


def test_score_submission_full_marks_and_stop_rule():
    a = Assignment("ch01", variants=True, key=KEY)
    answers = _perfect_answers("ch01", "alice", True)
    s = score_submission({"status": "ok", "errors": [], "answers": answers}, a, "alice")
    assert s.auto_score == s.auto_max > 0
    assert {p.status for p in s.parts if p.kind == "free"} == {"manual"}
    # the same answers scored for another student: variant parts no longer match
    other = score_submission(
        {"status": "ok", "errors": [], "answers": answers, "reported_student": "alice"}, a, "bob"
    )
    assert other.auto_score < other.auto_max
    assert "graded with the parameters of 'bob'" in other.reason
    # a run that stopped: the answers before the stop count, the rest are missing with a reason
    half = answers[:5]
    s = score_submission(
        {"status": "error", "errors": ["code cell 3 raised ZeroDivisionError"], "answers": half}, a, "alice"
    )
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
    with pytest.raises(ValueError, match="key"):
        Assignment("ch01", variants=True)  # per-student parameters need the instructor's key
    with pytest.raises(ValueError, match="key"):
        Assignment("ch01", variants=True, key=b"short")
    keyed = Assignment("ch01", True, KEY)
    assert Assignment("ch01").fingerprint() != keyed.fingerprint()
    assert keyed.fingerprint() != Assignment("ch01", True, bytes(32)).fingerprint()  # a new key re-grades


def test_parse_answers_is_strict():
    raw = (
        b'{"exercise": "1-2", "part": "a", "value": 1.0}\n'
        b'{"exercise": "1-2", "part": "a", "value": NaN}\n'
        b"not json\n"
        b'{"student": "mallory"}\n'
        b'{"exercise": "1-2", "part": "c", "value": ' + b"[" * 5000 + b"]" * 5000 + b"}\n"
        b'{"exercise": "1-2", "part": "d", "value": "' + b"x" * 300_000 + b'"}\n'
        b"\xff\xfe\n"
        b'{"exercise": "1-1", "part": "g", "value": "caf\\udce9"}\n'
        b'{"exercise": "1-2", "part": "b", "value": 2.0}\n'
    )
    records, student, problems = parse_answers(raw)
    assert records[("1-2", "a")]["value"] == 1.0  # the NaN line was not accepted
    assert records[("1-2", "b")]["value"] == 2.0
    assert records[("1-1", "g")]["value"] == "caf\ufffd"  # a lone surrogate is replaced
    assert ("1-2", "c") not in records and ("1-2", "d") not in records
    assert student == "mallory"
    assert problems == ["5 unreadable answer line(s) were ignored"]
    assert parse_answers(b"", truncated=True)[2] == ["answers beyond the first 2097152 bytes were ignored"]


def test_bounded_json_depth_and_size():
    assert bounded.json_depth('{"a": "[[[[", "b": [[1], {"c": []}]}') == 4
    with pytest.raises(ValueError, match="nested deeper than 64"):
        bounded.loads("[" * 65 + "]" * 65, max_bytes=1000, max_depth=64)
    assert bounded.loads("[" * 64 + "]" * 64, max_bytes=1000, max_depth=64) is not None
    with pytest.raises(ValueError, match="above the 10-byte limit"):
        bounded.loads(b"[1, 2, 3, 4]", max_bytes=10, max_depth=4)
    with pytest.raises(ValueError, match="not valid JSON"):
        bounded.loads("[Infinity]", max_bytes=100, max_depth=4)


def test_parse_notebook_keeps_code_cells_only(tmp_path):
    lim = Limits()
    nb = {
        "nbformat": 4,
        "nbformat_minor": 5,
        "metadata": {"kernelspec": {"name": "evil"}},
        "cells": [
            {"cell_type": "markdown", "source": "# hi"},
            {"cell_type": "code", "source": ["x = 1\n", "y = 2"], "outputs": [{"junk": 1}]},
        ],
    }
    parsed, why = parse_notebook(json.dumps(nb).encode(), lim)
    assert (
        why is None and [c.source for c in parsed.cells] == ["x = 1\ny = 2"] and parsed.cells[0].outputs == []
    )
    nbformat.validate(parsed)  # built without validating, so checked here against the real schema
    assert "format 4" in parse_notebook(b'{"cells": [], "nbformat": 3}', lim)[1]
    assert (
        "no source text"
        in parse_notebook(b'{"nbformat": 4, "cells": [{"cell_type": "code", "source": 7}]}', lim)[1]
    )
    assert (
        "nested deeper"
        in parse_notebook(b'{"nbformat": 4, "cells": ' + b"[" * 100 + b"]" * 100 + b"}", lim)[1]
    )


def test_the_worker_counts_cell_output_against_its_cap_and_keeps_none(tmp_path):
    parsed, _ = parse_notebook(b'{"nbformat": 4, "cells": [{"cell_type": "code", "source": "1"}]}', Limits())
    client = _CappedClient(parsed)
    client.output_cap = 10
    outs: list = []
    stream = {"msg_type": "stream", "parent_header": {}, "content": {"name": "stdout", "text": "123456"}}
    assert client.output(outs, stream, None, 0) is None and outs == [] and not client.output_truncated
    assert client.output(outs, stream, None, 0) is None and outs == [] and client.output_truncated
    assert client._output_bytes == 12


def test_the_package_is_compiled_once_for_the_read_only_kernels(tmp_path):
    import importlib.util

    pkg = tmp_path / "pkg"
    (pkg / "sub").mkdir(parents=True)
    for rel in ("__init__.py", "a.py", "sub/__init__.py", "sub/b.py"):
        (pkg / rel).write_text("X = 1\n")
    assert compile_package(str(pkg)) is True
    for rel in ("__init__.py", "a.py", "sub/__init__.py", "sub/b.py"):
        assert Path(importlib.util.cache_from_source(str(pkg / rel))).is_file()


def test_iterative_walk_and_remove_handle_deep_trees(tmp_path):
    root = tmp_path / "deep"
    root.mkdir()
    fd = os.open(root, os.O_RDONLY)
    for _ in range(1500):  # deeper than pathlib's own recursion allows
        os.mkdir("d", dir_fd=fd)
        fd, old = os.open("d", os.O_RDONLY, dir_fd=fd), fd
        os.close(old)
    os.close(os.open("f.txt", os.O_CREAT | os.O_WRONLY, dir_fd=fd))
    os.close(fd)
    (root / "top.txt").write_text("y")
    (root / "link").symlink_to("/etc/passwd")
    tree = bounded.walk(str(root), max_depth=8, max_entries=100, max_bytes=10)
    assert [parts for parts, _ in tree.files] == [("top.txt",)]
    assert tree.notes == [
        "1 item(s) deeper than 8 levels were left out",
        "1 item(s) links, devices or pipes were left out",
    ]
    bounded.remove_tree(str(root))
    assert not root.exists()


def _score(student="alice"):
    a = Assignment("ch01")
    return a, score_submission(
        {"status": "ok", "errors": [], "answers": _perfect_answers("ch01", student, False)}, a, student
    )


def test_gradebook_skips_unchanged_and_survives_a_failed_transaction(tmp_path):
    path = tmp_path / "gb.sqlite"
    a, s = _score()
    with Gradebook(path) as gb:
        gb.record("ch01", "x.ipynb", "hash1", "fp", s, {"elapsed_s": 1.0})
        assert gb.is_current("ch01", "alice", "hash1", "fp")
        assert not gb.is_current("ch01", "alice", "hash2", "fp")
        assert not gb.is_current("ch01", "alice", "hash1", "other-fp")
        with pytest.raises(sqlite3.IntegrityError), gb.db:  # a crash in the middle of the next submission
            gb.db.execute("DELETE FROM parts WHERE student='alice'")
            gb.db.execute("INSERT INTO submissions (assignment) VALUES ('ch01')")
    with Gradebook(path) as gb:  # reopened: alice is intact
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
    rows = list(csv.DictReader(files["csv"].read_text(encoding="utf-8").splitlines(keepends=True)))
    assert rows[0]["student"] == "alice" and rows[0]["auto_score"] == f"{sub['auto_max']:g}"
    assert rows[0]["1-2(a)"] == "1" and rows[0]["1-1(g)"] == ""
    res = json.loads((tmp_path / "gradescope" / "alice" / "results.json").read_text())
    assert res["stdout_visibility"] == "hidden"
    assert res["output_format"] == res["test_output_format"] == "text"
    assert res["score"] == sub["auto_max"]
    for t in res["tests"]:
        assert set(t) == {"name", "score", "max_score", "output", "visibility"}
    md = (tmp_path / "feedback" / "alice.md").read_text()
    assert "| (g) | ? / 2 | ` needs manual grading ` |" in md and "\n```text\nmy reasoning\n```\n" in md


def test_file_names_and_cells_are_safe_and_unique():
    assert export.safe_name("alice") == "alice" and export.safe_name("s-1.2_b") == "s-1.2_b"
    names = {
        export.safe_name(s)
        for s in (
            "Alice",
            "alice",
            "ALICE",
            "../../etc/passwd",
            "学生一",
            "学生二",
            "con",
            ".hidden",
            "a" * 200,
            "x~deadbeef0000",
        )
    }
    assert len(names) == 10
    for n in names:
        assert re.fullmatch(r"[a-z0-9._-]+(~[0-9a-f]{12})?", n) and not n.startswith(".") and len(n) <= 64
    assert export.safe_name("../../etc/passwd").startswith("etc_passwd~")
    assert export.safe_name("Alice") == export.safe_name("Alice")  # stable
    for bad in ("=1+2", "+1", "-1", "@SUM(A1)", "\t=x"):
        assert export.csv_cell(bad) == "'" + bad
    assert export.csv_cell("\r=x") == "'=x"  # the carriage return is removed, the formula still quoted
    assert export.csv_cell("fine") == "fine" and export.csv_cell("a\udcffb") == "a\ufffdb"


def _run_cli(*args):
    return subprocess.run(
        [sys.executable, "-m", "aiinfra.course.grading.cli", *map(str, args)],
        capture_output=True,
        text=True,
        timeout=300,
    )


@pytest.mark.slow
@pytest.mark.parametrize("chapter", registry.chapters())
def test_reference_solutions_score_100_percent_with_the_real_cli(tmp_path, chapter):
    """Two students (one folder layout, one flat file), variants on: both must get every auto point."""
    subs = tmp_path / "subs"
    (subs / "alice").mkdir(parents=True)
    shutil.copy(REPO / "solutions" / f"{chapter}.ipynb", subs / "alice" / f"{chapter}.ipynb")
    shutil.copy(REPO / "solutions" / f"{chapter}.ipynb", subs / "bob.ipynb")
    out = tmp_path / "out"
    key = tmp_path / "variant.key"
    key.write_text(KEY.hex())
    done = _run_cli(
        subs,
        "--assignment",
        chapter,
        "--variants",
        "--variant-key",
        key,
        "--workers",
        "2",
        "--out",
        out,
        *FAST,
    )
    assert done.returncode == 0, done.stderr
    assert "kernel message(s)" not in done.stdout  # the stop's own disconnections are no dropped messages
    with Gradebook(out / "gradebook.sqlite") as gb:
        for student in ("alice", "bob"):
            sub = gb.submission(chapter, student)
            assert sub["status"] == "ok", sub["reason"]
            wrong = [
                (p["exercise"], p["part"], p["reason"])
                for p in sub["parts"]
                if p["kind"] != "free" and p["points"] != p["max_points"]
            ]
            assert not wrong
            assert sub["auto_score"] == sub["auto_max"] > 0
    again = _run_cli(subs, "--assignment", chapter, "--variants", "--variant-key", key, "--out", out, *FAST)
    assert "graded 0, skipped 2 unchanged" in again.stdout


@pytest.mark.slow
def test_handout_metadata_sets_variants_and_a_changed_submission_is_regraded(tmp_path):
    handout, key = tmp_path / "handout", tmp_path / "variant.key"
    (tmp_path / "roster.txt").write_text("carol\n")
    subprocess.run(
        [sys.executable, "-m", "aiinfra_build.build_exercises", "--variants", "--key", key, "--roster"]
        + [tmp_path / "roster.txt", "--out", handout, "--chapter", "ch01"],
        check=True,
        capture_output=True,
    )
    assert cli.load_assignment(str(handout / "exercises" / "ch01.ipynb"), None, key).variants is True
    carol_key = bytes.fromhex(key.read_text())
    # a student who answers with the default parameters' values gets variant parts wrong
    subs = tmp_path / "subs"
    subs.mkdir()
    nb = json.loads((REPO / "solutions" / "ch01.ipynb").read_text())
    defaults = {ex.id: repr(namespace(ex, params_for(ex, None, False))) for ex in registry.chapter("ch01")}
    for cell in nb["cells"]:  # the worked solution, computed with everyone's default parameters
        source = "".join(cell["source"])
        cell["source"] = re.sub(r'params\("(\d+-\d+)"\)', lambda m: defaults[m.group(1)], source)
    (subs / "carol.ipynb").write_text(json.dumps(nb))
    out = tmp_path / "out"
    done = _run_cli(
        subs, "--assignment", handout / "exercises" / "ch01.ipynb", "--variant-key", key, "--out", out, *FAST
    )
    assert done.returncode == 0, done.stderr
    with Gradebook(out / "gradebook.sqlite") as gb:
        sub = gb.submission("ch01", "carol")
    ex_default = {ex.id: params_for(ex, None, False) for ex in registry.chapter("ch01")}
    ex_carol = {ex.id: params_for(ex, "carol", True, carol_key) for ex in registry.chapter("ch01")}
    differs = [k for k in ex_default if ex_default[k] != ex_carol[k]]
    assert differs and sub["auto_score"] < sub["auto_max"]
    (subs / "carol.ipynb").write_text(json.dumps(json.loads((REPO / "solutions" / "ch01.ipynb").read_text())))
    done = _run_cli(
        subs, "--assignment", handout / "exercises" / "ch01.ipynb", "--variant-key", key, "--out", out, *FAST
    )
    assert "graded 1, skipped 0" in done.stdout
    with Gradebook(out / "gradebook.sqlite") as gb:
        sub = gb.submission("ch01", "carol")
    assert sub["auto_score"] == sub["auto_max"]


def test_cli_rejects_bad_arguments(tmp_path):
    assert cli.main([str(tmp_path), "--assignment", "ch99"]) == 2
    assert cli.main([str(tmp_path / "missing"), "--assignment", "ch01"]) == 2
    assert cli.main([str(tmp_path), "--assignment", "ch01", "--workers", "0"]) == 2
    assert cli.main([str(tmp_path), "--assignment", "ch01", "--variants"]) == 2  # no key


def test_the_gradebook_lock_refuses_a_second_holder(tmp_path):
    path = tmp_path / "gb.sqlite"
    with (
        Lock(path),
        pytest.raises(RuntimeError, match=rf"another aiinfra-grade \(pid {os.getpid()}\) is using"),
    ):
        Lock(path)
    with Lock(path):  # released with the first
        pass


def test_the_gradebook_stores_lone_surrogates_as_replacement_characters(tmp_path):
    a, s = _score("zoe")
    s.parts[0] = s.parts[0].__class__(**{**s.parts[0].as_dict(), "answer": "x\udcff", "reason": "r\ud800"})
    with Gradebook(tmp_path / "gb.sqlite") as gb:
        gb.record("ch01", "bad\udce9.ipynb", "h", "fp", s, {"errors": ["e\udcff"]})
        sub = gb.submission("ch01", "zoe")
        files = cli.export_all(gb, a, tmp_path)
    assert sub["path"] == "bad\ufffd.ipynb" and sub["parts"][0]["answer"] == "x\ufffd"
    assert sub["parts"][0]["reason"] == "r\ufffd"
    assert files["csv"].read_text(encoding="utf-8").count("\n") == 2


def test_cli_manual_points_update_the_exports(tmp_path):
    a, s = _score("dana")
    gbpath = tmp_path / "out" / "gradebook.sqlite"
    with Gradebook(gbpath) as gb:
        gb.record("ch01", "x.ipynb", "h", "fp", s, {})
    args = [str(tmp_path), "--assignment", "ch01", "--out", str(tmp_path / "out"), "--quiet"]
    assert cli.main(args + ["--manual", "dana", "1-1", "g", "2"]) == 0
    row = next(
        csv.DictReader(
            (tmp_path / "out" / "grades.csv").read_text(encoding="utf-8").splitlines(keepends=True)
        )
    )
    assert row["1-1(g)"] == "2" and row["manual_pending"] == "2"
    assert cli.main(args + ["--manual", "dana", "1-1", "g", "5"]) == 2


def test_discover_gives_every_entry_a_row(tmp_path):
    (tmp_path / "alice").mkdir()
    (tmp_path / "alice" / "notes.ipynb").write_text("{}")
    (tmp_path / "alice" / "ch01.ipynb").write_text("{}")
    (tmp_path / "alice.ipynb").write_text("{}")
    (tmp_path / "bob.txt").write_text("hello")
    (tmp_path / "carol").mkdir()
    (tmp_path / ".hidden.ipynb").write_text("{}")
    (tmp_path / "._alice.ipynb").write_text("{}")
    (tmp_path / ".DS_Store").write_text("x")
    (tmp_path / " dan.ipynb").write_text("{}")
    subs, passed = cli.discover(tmp_path, "ch01")
    by = {s["student"]: s for s in subs}
    assert set(passed) == {"._alice.ipynb", ".DS_Store"}
    assert len(subs) == 6
    assert (
        by["alice"]["notebook"].name == "ch01.ipynb"
        and by["alice"]["whole_folder"]
        and not by["alice"]["problem"]
    )
    assert by["carol"]["problem"] == "no .ipynb file in the submission folder"
    assert by["bob.txt"]["problem"] == "not an .ipynb file (bob.txt)"
    assert by[".hidden"]["problem"] is None  # a valid id, graded like any other
    dup = next(s for k, s in by.items() if k.startswith("alice~"))
    assert dup["problem"] == "a second submission for student 'alice' (alice is graded)"
    spaced = next(s for k, s in by.items() if k.startswith("_dan~"))
    assert "not a usable student id" in spaced["problem"]


def test_sandbox_mounts_come_in_an_order_that_covers_what_is_forbidden():
    plan = Plan(
        mode="bwrap",
        bwrap="bwrap",
        python=sys.executable,
        package="aiinfra",
        package_dir="/opt/x/aiinfra",
        kernel_module="aiinfra.course.grading.kernel",
        root=True,
        drop_uid=True,
        userns=True,
        limits=Limits(),
        binds=["/opt/x", "/opt/x/repo/deep/pkg"],
        masks=["/opt/x/repo"],
    )
    a = plan.bwrap_args("/stage", "/ipc", {"A": "1"})
    at = {
        op: a.index(op[1], a.index(op[0]))
        for op in [
            ("--ro-bind", "/opt/x"),
            ("--tmpfs", "/opt/x/repo"),
            ("--dir", "/opt/x/repo/deep"),
            ("--ro-bind", "/opt/x/repo/deep/pkg"),
            ("--remount-ro", "/opt/x/repo"),
        ]
    }
    assert list(at.values()) == sorted(at.values())
    assert a.index("/tmp", a.index("--tmpfs")) < a.index("/opt/x")  # /tmp first: binds may lie below it
    assert a[-4:] == ["--remount-ro", "/", "--chdir", "/"]
    assert a[a.index("--cap-drop") : a.index("--cap-drop") + 2] == ["--cap-drop", "ALL"]


@pytest.mark.slow
def test_a_forbidden_folder_inside_a_mounted_tree_is_covered_and_checked(tmp_path):
    inside = Path(sys.prefix) / f"aiinfra-forbidden-{os.getpid()}"
    (inside / "deeper").mkdir(parents=True)
    (inside / "secret.txt").write_text("the answer key")
    run = tmp_path / "run"
    run.mkdir(mode=0o700)
    plan = None
    try:
        plan = make_plan(Limits(), [str(inside)], str(run), 1)  # raises if the kernel could see secret.txt
        assert plan.mode == "bwrap" and plan.masks == [str(inside)]
    finally:
        shutil.rmtree(inside)
        if plan is not None and plan.cgroups:
            plan.cgroups.close()


@pytest.mark.parametrize("version", [1, 2])
def test_cgroup_files_written_and_read_and_stale_groups_removed(tmp_path, version):
    """The cgroupfs protocol on a plain folder tree (no kernel behind it): what is written, what is read."""
    from aiinfra.course.grading.cgroups import Cgroups

    bases = {"": tmp_path / "v2"} if version == 2 else {"memory": tmp_path / "mem", "pids": tmp_path / "pids"}
    for base in bases.values():
        (base / "aiinfra-grade-999999999-5" / "slot-0").mkdir(parents=True)  # left by a grader that is gone
    cg = Cgroups(bases, version, workers=2)
    assert sorted(cg.cleaned) == sorted(str(b / "aiinfra-grade-999999999-5") for b in bases.values())
    slot = cg.slots[1]
    slot.prepare(512 * 2**20, 64)
    start = Path("/proc/self/stat").read_text().rsplit(")", 1)[1].split()[19]
    d = {c: b / f"aiinfra-grade-{os.getpid()}-{start}" / "slot-1" for c, b in bases.items()}
    if version == 2:
        assert (d[""].parent / "cgroup.subtree_control").read_text() == "+memory +pids"
        assert (d[""] / "memory.max").read_text() == str(512 * 2**20) and (
            d[""] / "pids.max"
        ).read_text() == "64"
        (d[""] / "memory.peak").write_text("1234\n")
        (d[""] / "memory.events").write_text("low 0\noom_kill 2\n")
        (d[""] / "pids.events").write_text("max 3\n")
    else:
        assert (d["memory"] / "memory.limit_in_bytes").read_text() == str(512 * 2**20)
        assert (d["pids"] / "pids.max").read_text() == "64"
        (d["memory"] / "memory.max_usage_in_bytes").write_text("1234\n")
        (d["memory"] / "memory.oom_control").write_text("oom_kill_disable 0\nunder_oom 0\noom_kill 2\n")
        (d["pids"] / "pids.events").write_text("max 3\n")
    assert slot.procs_files == [str(x / "cgroup.procs") for x in d.values()]
    assert slot.usage() == {"memory_peak_bytes": 1234, "oom_kills": 2, "fork_refusals": 3}


def test_a_group_is_stale_when_its_pid_and_start_time_no_longer_name_a_process(tmp_path):
    """A reused PID (same number, other start time) is not the grader; a grader run under a command
    line that never says "aiinfra" (a wrapper script: here ``sleep``) still is."""
    from aiinfra.course.grading.cgroups import Cgroups

    other = subprocess.Popen(["sleep", "60"])
    try:
        start = Path(f"/proc/{other.pid}/stat").read_text().rsplit(")", 1)[1].split()[19]
        live, reused, old = (
            f"aiinfra-grade-{other.pid}-{start}",
            f"aiinfra-grade-{other.pid}-{int(start) + 1}",
            "aiinfra-grade-12345",  # not a name this version writes: left alone
        )
        for name in (live, reused, old):
            (tmp_path / name / "slot-0").mkdir(parents=True)
        cg = Cgroups({"": tmp_path}, 2, workers=1)
        assert cg.cleaned == [str(tmp_path / reused)]
        assert (tmp_path / live / "slot-0").is_dir() and (tmp_path / old / "slot-0").is_dir()
        cg.close()
    finally:
        other.kill()
        other.wait()


def test_the_recording_side_may_not_import_what_the_sandbox_hides(tmp_path):
    from aiinfra.course import exercises
    from aiinfra.course.grading.sandbox import _hidden_imports

    src = Path(exercises.__file__).parent
    assert _hidden_imports(str(src)) == []
    for f in src.glob("*.py"):
        shutil.copy(f, tmp_path / f.name)
    with open(tmp_path / "runtime.py", "a", encoding="utf-8") as fh:
        fh.write(
            "\nfrom aiinfra.course.exercises.variants import references\nfrom . import render\n"
            "import aiinfra.course.exercises.sheet\n\n\ndef later():\n    from aiinfra.course.exercises import ch01\n"
        )
    assert _hidden_imports(str(tmp_path)) == [
        "runtime.py imports variants",
        "runtime.py imports render",
        "runtime.py imports sheet",
    ]


def test_the_kernel_loads_jupyter_client_lean_and_a_notebook_still_sees_all_of_it():
    """The sandboxed kernel registers jupyter_client without its package body (its managers,
    provisioners and their entry points) before ipykernel starts, and its kernel application
    does not load it either; a notebook's own ``from jupyter_client import KernelManager``
    then runs that body and gets the real class."""
    code = (
        "import sys\n"
        "from aiinfra.course.grading import kernel\n"
        "app = kernel._kernel_app_class(1024).instance()\n"
        "before = sorted(m for m in ('jupyter_client.manager', 'jupyter_client.provisioning',"
        " 'jupyter_client.kernelspec', 'debugpy') if sys.modules.get(m) is not None)\n"
        "from jupyter_client import KernelManager\n"
        "import jupyter_client.manager\n"
        "print(before, KernelManager is jupyter_client.manager.KernelManager)\n"
    )
    done = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, cwd="/", check=True)
    assert done.stdout.split("\n")[-2] == "[] True"
