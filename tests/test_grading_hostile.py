"""The hostile-submission suite: the grader holds against submissions written to break it.

One run of the real CLI grades every case at once (two workers, short limits: 15 s per cell,
40 s per submission, 512 MiB and 64 MiB of /tmp per submission): the static notebooks of
tests/hostile/ (regenerate with tests/hostile/make_hostile.py) and the cases built here (folders,
odd file names, a spy that knows the host's paths). Each test asserts an outcome: exact points, a
row with a reason, nothing left behind, nothing read from outside the sandbox. Further tests run
the CLI again: a grader killed mid-run, two graders on one gradebook, the package inside a
private folder, and a machine without bubblewrap. The classes refer to issue 14.
"""

from __future__ import annotations

import csv
import json
import os
import re
import shutil
import signal
import sqlite3
import subprocess
import sys
import time
from pathlib import Path

import pytest

from aiinfra.course.grading import bounded
from aiinfra.course.grading.export import safe_name
from aiinfra.course.grading.gradebook import Gradebook

HERE = Path(__file__).resolve().parent
REPO = HERE.parent
sys.path.insert(0, str(HERE / "hostile"))
from grader_cli import processes_with, run_grader  # noqa: E402 -- a sibling module, importable only after the sys.path entry above
from make_hostile import GOOD_H, SETUP, notebook  # noqa: E402 - importable only after the sys.path insert above

STATIC = sorted(p.stem for p in (HERE / "hostile").glob("*.ipynb"))
LIMITS = [
    "--workers",
    "2",
    "--cell-timeout",
    "15",
    "--timeout",
    "40",
    "--memory-mb",
    "512",
    "--output-kb",
    "256",
    "--disk-mb",
    "64",
    "--quiet",
]
MEMORY_CAP = 512 * 2**20
SECRET = "VICTIM-SECRET-7731"
SHM_KEY = 0x41494E46
pytestmark = pytest.mark.slow


def _write_nb(path: Path, sources: list[str]) -> None:
    path.write_text(json.dumps(notebook(sources)), encoding="utf-8")


def _spy(subs: Path, out: Path) -> list[str]:
    """Looks everywhere a classmate's notebook, the gradebook or the answer key could be."""
    paths = {
        "submissions": str(subs),
        "victim": str(subs / "!victim.ipynb"),
        "out": str(out),
        "gradebook": str(out / "gradebook.sqlite"),
        "solutions": str(REPO / "solutions" / "ch01.ipynb"),
        "repository": str(REPO / "pyproject.toml"),
        "definitions": str(REPO / "src" / "aiinfra" / "exercises" / "ch01.py"),
    }
    code = f"""import json, os, sys, time
import aiinfra
from aiinfra.course.exercises import registry
PATHS = {paths!r}
time.sleep(2)
start = time.time()
secret = "VICTIM-" + "SECRET-7731"

def can(path):
    try:
        if os.path.isdir(path):
            return "listed"
        with open(path, "rb") as fh:
            return "read " + repr(fh.read(40))
    except OSError as exc:
        return type(exc).__name__

found = {{"paths": {{k: can(p) for k, p in PATHS.items()}}, "notebooks": [], "secret": [], "cmdline": []}}
for top in ["/tmp", "/run", "/var", "/home", "/srv", "/mnt", "/media", "/opt", os.path.dirname(PATHS["submissions"])]:
    for dirpath, dirs, files in os.walk(top):
        dirs[:] = [d for d in dirs if not os.path.ismount(os.path.join(dirpath, d))]  # read-only installs
        for f in files:
            p = os.path.join(dirpath, f)
            if f.endswith(".ipynb"):
                found["notebooks"].append(p)
            try:
                if os.path.getsize(p) < 2**20 and secret.encode() in open(p, "rb").read():
                    found["secret"].append(p)
            except OSError:
                pass
for pid in os.listdir("/proc"):
    if pid.isdigit():
        for name in ("cmdline", "environ"):
            try:
                text = open(f"/proc/{{pid}}/{{name}}", "rb").read().decode("latin-1")
            except OSError:
                continue
            if PATHS["submissions"] in text or PATHS["out"] in text:
                found["cmdline"].append(pid)
found["imports"] = {{}}
for mod in ("ch01", "variants", "render", "sheet", "notebooks"):
    try:
        __import__("aiinfra.course.exercises." + mod)
        found["imports"][mod] = "imported"
    except Exception as exc:
        found["imports"][mod] = type(exc).__name__
found["chapters"] = registry.chapters()
found["verdicts"] = len(check("1-2").results)
up, hits = os.path.dirname(aiinfra.__file__), []
while up != "/":
    up = os.path.dirname(up)
    try:
        hits += [os.path.join(up, n) for n in os.listdir(up) if n in ("solutions", "exercises", "grades", "tests")]
    except OSError:
        pass
found["walk_up"] = hits
found["window"] = [start, time.time()]
answer("1-1", "g", json.dumps(found))"""
    return [SETUP, code, GOOD_H]


SHADOW = (
    "import os\n"
    "for d in ({markers!r},):\n"
    "    try:\n"
    "        open(os.path.join(d, {name!r} + '-' + str(os.getuid())), 'w').write('ran')\n"
    "    except OSError:\n"
    "        pass\n"
    "try:\n"
    "    import sqlite3\n"
    "    db = sqlite3.connect({gradebook!r})\n"
    "    db.execute(\"INSERT INTO submissions VALUES ('ch01','intruder','x','x','x','ok','x',999,29,4,0,0,'{{}}','now')\")\n"
    "    db.commit()\n"
    "except Exception:\n"
    "    pass\n"
)


def _shadow_folder(folder: Path, markers: Path, gradebook: Path) -> None:
    """Class 1: a folder submission shipping modules named like what a launcher or kernel imports."""
    folder.mkdir()
    for rel in (
        "aiinfra/__init__.py",
        "aiinfra/course/grading/__init__.py",
        "aiinfra/course/grading/kernel.py",
        "aiinfra/course/grading/sandbox.py",
        "sitecustomize.py",
        "usercustomize.py",
        "ipykernel_launcher.py",
        "ipykernel/__init__.py",
        "jupyter_client/__init__.py",
        "nbformat.py",
        "zmq.py",
    ):
        path = folder / rel
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(
            SHADOW.format(markers=str(markers), name=rel.replace("/", "."), gradebook=str(gradebook))
        )
    (folder / "helper.py").write_text(
        "from aiinfra import units\n\n\ndef rate():\n"
        "    return units.bytes_per_s_from_gbit_per_s(400) / units.GB\n"
    )
    _write_nb(folder / "ch01.ipynb", [SETUP, 'from helper import rate\nanswer("1-2", "h", rate())'])


@pytest.fixture(scope="module")
def graded(tmp_path_factory):
    tmp = tmp_path_factory.mktemp("hostile")
    subs, out, markers = tmp / "subs", tmp / "out", tmp / "markers"
    for d in (subs, markers):
        d.mkdir()
    for name in STATIC:
        shutil.copy(HERE / "hostile" / f"{name}.ipynb", subs / f"{name}.ipynb")
    shutil.copy(REPO / "solutions" / "ch01.ipynb", subs / "good_student.ipynb")
    good_h = [SETUP, GOOD_H]
    # class 3: a spy and a victim, graded at the same time (their names sort first)
    _write_nb(subs / "!spy.ipynb", _spy(subs, out))
    _write_nb(
        subs / "!victim.ipynb",
        [
            SETUP,
            f"SECRET = {SECRET!r}\nimport json, time\nt0 = time.time()\n"
            "time.sleep(7)\nanswer('1-1', 'g', json.dumps([t0, time.time()]))",
            GOOD_H,
        ],
    )
    # class 1
    _shadow_folder(subs / "shadow_modules", markers, out / "gradebook.sqlite")
    # class 2: a folder nested 1,200 levels deep, a name that is not UTF-8
    (subs / "nested_folder").mkdir()
    _write_nb(subs / "nested_folder" / "ch01.ipynb", good_h)
    fd = os.open(subs / "nested_folder", os.O_RDONLY)
    for _ in range(1200):
        os.mkdir("dd", dir_fd=fd)
        fd, old = os.open("dd", os.O_RDONLY, dir_fd=fd), fd
        os.close(old)
    os.close(os.open("bottom.txt", os.O_CREAT | os.O_WRONLY, dir_fd=fd))
    os.close(fd)
    (subs / "fancy_files").mkdir()
    _write_nb(
        subs / "fancy_files" / "ch01.ipynb",
        [
            SETUP,
            "import os\nnames = sorted(os.listdir(b'.'))\nassert b'data\\xff.txt' in names, names",
            GOOD_H,
        ],
    )
    (subs / "fancy_files" / os.fsdecode(b"data\xff.txt")).write_text("bytes in the name")
    _write_nb(subs / os.fsdecode(b"caf\xe9.ipynb"), good_h)
    # class 6: ids that collide as slugs or start formulas, and entries that are not submissions
    for sid in ("学生一", "学生二", "=1+2", "@SUM(A1)", "-x", "+cmd"):
        _write_nb(subs / f"{sid}.ipynb", good_h)
    (subs / "linked.ipynb").symlink_to(subs / "good_student.ipynb")
    _write_nb(subs / "dup.ipynb", good_h)
    (subs / "dup").mkdir()
    _write_nb(subs / "dup" / "ch01.ipynb", good_h)
    os.mkfifo(subs / "pipe.ipynb")
    (subs / "notes.txt").write_text("not a notebook")
    (subs / "nobody").mkdir()
    (subs / "huge.ipynb").write_text(json.dumps({"cells": [], "padding": "x" * (21 * 2**20)}))
    (subs / ".DS_Store").write_bytes(b"\0\0\0\1Bud1")
    t0 = time.monotonic()
    done = run_grader(subs, "--assignment", "ch01", "--out", out, *LIMITS, timeout=400)
    elapsed = time.monotonic() - t0
    assert done.returncode == 0, done.stderr
    with Gradebook(out / "gradebook.sqlite") as gb:
        rows = {s: gb.submission("ch01", s) for s in gb.students("ch01")}
    yield {
        "rows": rows,
        "elapsed": elapsed,
        "stdout": done.stdout,
        "stderr": done.stderr,
        "out": out,
        "subs": subs,
        "markers": markers,
    }
    bounded.remove_tree(str(subs / "nested_folder"))  # deeper than pytest's own clean-up can recurse


def _part(row, exercise, part):
    return next(p for p in row["parts"] if p["exercise"] == exercise and p["part"] == part)


def _sandbox(row) -> dict:
    return json.loads(row["sandbox"])


def _row_by_name(rows, prefix):
    return next(r for s, r in rows.items() if s.startswith(prefix))


# --- every row, and the rows of the original hostile notebooks ------------------------------


def test_every_entry_has_exactly_one_row_with_a_reason(graded):
    rows = graded["rows"]
    named = set(STATIC) | {
        "good_student",
        "!spy",
        "!victim",
        "shadow_modules",
        "nested_folder",
        "fancy_files",
        "学生一",
        "学生二",
        "=1+2",
        "@SUM(A1)",
        "-x",
        "+cmd",
        "linked",
        "dup",
        "pipe",
        "notes.txt",
        "nobody",
        "huge",
    }
    assert named <= set(rows)
    odd = set(rows) - named
    assert (
        len(odd) == 2
        and any(re.fullmatch(r"caf_~[0-9a-f]{12}", s) for s in odd)
        and any(re.fullmatch(r"dup~[0-9a-f]{12}", s) for s in odd)
    )
    for name, row in rows.items():
        assert row["reason"] and row["max_score"] == 33, name
    assert "passed over '.DS_Store'" in graded["stderr"]


def test_the_good_submission_is_graded_normally(graded):
    row = graded["rows"]["good_student"]
    assert row["status"] == "ok" and row["auto_score"] == row["auto_max"] == 29


@pytest.mark.parametrize(
    "name,why",
    [
        ("malformed", "malformed"),
        ("not_a_notebook", "not UTF-8"),
        ("huge", "above the 20971520-byte limit"),
        ("linked", "symbolic link"),
        ("pipe", "not a regular file or folder"),
        ("notes.txt", "not an .ipynb file"),
        ("nobody", "no .ipynb file"),
    ],
)
def test_entries_that_cannot_be_graded_get_zero_and_a_reason(graded, name, why):
    row = graded["rows"][name]
    assert row["status"] == "invalid" and why in row["reason"] and row["score"] == 0


def test_empty_notebook(graded):
    row = graded["rows"]["empty"]
    assert row["status"] == "ok" and row["score"] == 0 and "0 of 31 parts answered" in row["reason"]


@pytest.mark.parametrize(
    "name,status,why",
    [
        ("raises_midway", "error", "ZeroDivisionError"),
        ("infinite_loop", "timeout", "cell time limit"),
        ("os_exit", "dead", "kernel died"),
        ("memory_bomb", "error", "MemoryError"),
    ],
)
def test_answers_before_the_stop_still_count(graded, name, status, why):
    """The rule: the first error, timeout or kernel death stops the run; earlier answers count."""
    row = graded["rows"][name]
    assert row["status"] == status and why in row["reason"]
    assert _part(row, "1-2", "h")["status"] == "correct"
    assert _part(row, "1-2", "i")["status"] == "missing"
    assert row["auto_score"] == 1


def test_always_equal_objects_are_rejected(graded):
    row = graded["rows"]["always_equal"]
    assert _part(row, "1-2", "h")["status"] == "rejected" and "Blob" in _part(row, "1-2", "h")["reason"]
    assert _part(row, "1-2", "i")["status"] == "rejected" and "subclass" in _part(row, "1-2", "i")["reason"]
    assert row["score"] == 0


@pytest.mark.parametrize(
    "part,why",
    [
        ("a", "NaN"),
        ("b", "infinity"),
        ("h", "string"),
        ("i", "numpy"),
        ("d", "True/False"),
        ("e", "not a list"),
    ],
)
def test_wrong_types_are_rejected_per_part_with_a_reason(graded, part, why):
    p = _part(graded["rows"]["wrong_types"], "1-2", part)
    assert p["status"] == "rejected" and why in p["reason"] and p["points"] == 0


@pytest.mark.parametrize("name", ["numpy_patch", "redefined_check"])
def test_patching_numpy_check_or_aiinfra_in_the_kernel_changes_nothing(graded, name):
    row = graded["rows"][name]
    assert row["status"] == "ok"
    assert _part(row, "1-2", "h")["points"] == 0 and _part(row, "1-2", "i")["points"] == 0
    assert row["score"] == 0


# --- class 1: no code of a submission outside its sandbox -----------------------------------


def test_modules_shipped_in_a_submission_never_run_outside_its_sandbox(graded):
    assert list(graded["markers"].iterdir()) == []  # no shadow module ran where it could write this
    rows = graded["rows"]
    assert "intruder" not in rows
    row = rows["shadow_modules"]
    assert row["status"] == "ok" and row["auto_score"] == 1  # its own helper.py works inside the sandbox


def test_the_gradebook_cannot_be_written_from_a_notebook(graded):
    rows = graded["rows"]
    assert "intruder" not in rows
    assert all(r["auto_score"] <= r["auto_max"] for r in rows.values())
    row = rows["writes_gradebook"]
    assert row["auto_score"] == 1 and row["status"] == "ok"


# --- class 2: nothing crashes the batch -------------------------------------------------------


def test_a_deeply_nested_answer_line_is_dropped_and_the_rest_counts(graded):
    row = graded["rows"]["nested_answer_line"]
    assert row["status"] == "ok" and row["auto_score"] == 2 and "1 unreadable answer line(s)" in row["reason"]


def test_a_deep_folder_tree_made_by_the_kernel_is_harmless(graded):
    row = graded["rows"]["deep_tree"]
    assert row["status"] == "ok" and row["auto_score"] == 2


def test_a_submission_folder_1200_levels_deep_is_graded_within_bounds(graded):
    row = graded["rows"]["nested_folder"]
    assert row["auto_score"] == 1 and "deeper than 16 levels were left out" in row["reason"]


def test_names_that_are_not_utf8(graded):
    row = _row_by_name(graded["rows"], "caf_~")
    assert row["status"] == "invalid" and "not a usable student id" in row["reason"] and row["score"] == 0
    row = graded["rows"]["fancy_files"]  # a non-UTF-8 name inside a folder is staged as is
    assert row["status"] == "ok" and row["auto_score"] == 1


def test_lone_surrogates_are_stored_and_exported_as_replacement_characters(graded):
    row = graded["rows"]["surrogate_answer"]
    assert _part(row, "1-1", "g")["answer"] == "caf\ufffd and \ufffd alone" and row["auto_score"] == 1
    md = (graded["out"] / "feedback" / "surrogate_answer.md").read_text(encoding="utf-8")
    assert "caf\ufffd and \ufffd alone" in md


def test_exports_cover_every_row_and_can_be_rewritten(graded):
    out, rows = graded["out"], graded["rows"]
    assert {p.stem for p in (out / "feedback").glob("*.md")} == {safe_name(s) for s in rows}
    assert {p.parent.name for p in (out / "gradescope").glob("*/results.json")} == {
        safe_name(s) for s in rows
    }
    for p in (out / "gradescope").glob("*/results.json"):
        json.loads(p.read_text(encoding="utf-8"))
    with open(out / "grades.csv", encoding="utf-8", newline="") as fh:
        assert len(list(csv.DictReader(fh))) == len(rows)
    again = run_grader(graded["subs"], "--assignment", "ch01", "--out", out, "--export-only")
    assert again.returncode == 0 and f"{len(rows)} submissions" in again.stdout


# --- class 3: no student reads another, the gradebook or the answer key --------------------------


def test_a_kernel_reads_nothing_outside_its_sandbox(graded):
    rows = graded["rows"]
    found = json.loads(_part(rows["!spy"], "1-1", "g")["answer"])
    victim = json.loads(_part(rows["!victim"], "1-1", "g")["answer"])
    assert found["window"][0] < victim[1] and victim[0] < found["window"][1]  # they ran at the same time
    assert found["paths"] == {k: "FileNotFoundError" for k in found["paths"]}
    assert found["secret"] == [] and found["cmdline"] == [] and found["walk_up"] == []
    assert all(p.startswith("/tmp/work/") for p in found["notebooks"])  # its own copy only
    assert found["imports"] == {
        m: "ModuleNotFoundError" for m in ("ch01", "variants", "render", "sheet", "notebooks")
    }
    assert found["chapters"] == [] and found["verdicts"] == 0
    assert rows["!spy"]["auto_score"] == 1 and rows["!victim"]["auto_score"] == 1


def test_the_sandbox_reports_what_it_enforced(graded):
    box = _sandbox(graded["rows"]["good_student"])
    assert box["mode"] == "bwrap" and box["network_isolated"] and box["answer_key_hidden"]
    assert box["memory_bytes"] == MEMORY_CAP and box["warnings"] == []
    assert box["kernel_uid"] == ("a uid of its own per worker" if os.geteuid() == 0 else "the grader's user")
    assert "cgroup" in box["cgroups"]


# --- class 4: nothing outlives the sandbox ---------------------------------------------------------


def _grader_cgroups() -> list[Path]:
    """The graders' control groups next to ours (v1 memory and pids, or v2)."""
    found = []
    for line in Path("/proc/self/cgroup").read_text().splitlines():
        _, controllers, path = line.split(":", 2)
        for c in controllers.split(",") if controllers else [""]:
            if c in ("memory", "pids", ""):
                root = Path("/sys/fs/cgroup", c) if c else Path("/sys/fs/cgroup")
                found += (root / path.lstrip("/")).glob("aiinfra-grade-*")
    return found


def test_nothing_outlives_the_sandbox(graded):
    row = graded["rows"]["litter"]
    assert row["auto_score"] == 1
    assert _part(row, "1-1", "g")["answer"].startswith("written ['/tmp']; shared memory id ")
    for d in ("/tmp", "/var/tmp", "/dev/shm", "/run/lock"):
        assert not Path(d, "aiinfra-hostile-litter").exists(), d
    keys = [int(line.split()[0]) for line in Path("/proc/sysvipc/shm").read_text().splitlines()[1:]]
    assert SHM_KEY not in keys
    assert processes_with("31415") == [] and processes_with("31416") == []
    assert not (graded["out"] / ".aiinfra-run").exists()
    assert processes_with(str(graded["subs"])) == []
    assert not [g for g in _grader_cgroups() if not Path("/proc", g.name.split("-")[2]).exists()]


def test_a_killed_grader_leaves_nothing_running_and_the_next_run_cleans_up(tmp_path):
    subs, out = tmp_path / "subs", tmp_path / "out"
    subs.mkdir()
    _write_nb(subs / "a_fast.ipynb", [SETUP, GOOD_H])
    _write_nb(
        subs / "b_slow.ipynb",
        [
            SETUP,
            GOOD_H,
            "import subprocess\nsubprocess.Popen(['sleep', '27182'], start_new_session=True)",
            "while True:\n    pass",
        ],
    )
    args = ["--assignment", "ch01", "--out", out, "--workers", "1", "--cell-timeout", "60", "--quiet"]
    grader = subprocess.Popen(
        [sys.executable, "-m", "aiinfra.course.grading.cli", str(subs), *map(str, args)],
        stdout=subprocess.DEVNULL,
        stderr=subprocess.DEVNULL,
    )
    deadline = time.monotonic() + 120
    while not processes_with("27182"):
        assert time.monotonic() < deadline and grader.poll() is None
        time.sleep(0.2)
    with sqlite3.connect(out / "gradebook.sqlite") as db:
        assert db.execute("SELECT count(*) FROM submissions WHERE student='a_fast'").fetchone() == (1,)
    grader.send_signal(signal.SIGKILL)
    grader.wait()
    deadline = time.monotonic() + 10
    while processes_with("27182") or processes_with(str(subs)):
        assert time.monotonic() < deadline, "processes of the killed grader are still running"
        time.sleep(0.1)
    assert (out / ".aiinfra-run").exists()  # left behind; the next run removes it
    again = run_grader(subs, *args[:6], "--cell-timeout", "5", "--quiet")
    assert again.returncode == 0, again.stderr
    assert "cleaned up after an earlier run" in again.stderr and "skipped 1 unchanged" in again.stdout
    with Gradebook(out / "gradebook.sqlite") as gb:
        fast, slow = gb.submission("ch01", "a_fast"), gb.submission("ch01", "b_slow")
    assert fast["auto_score"] == 1 and slow["auto_score"] == 1 and slow["status"] == "timeout"
    assert not (out / ".aiinfra-run").exists() and processes_with("27182") == []
    assert not [g for g in _grader_cgroups() if g.name.startswith(f"aiinfra-grade-{grader.pid}-")]


# --- class 5: limits that limit --------------------------------------------------------------------


def test_memory_is_capped_for_all_processes_together(graded):
    row = graded["rows"]["forked_memory"]
    box = _sandbox(row)
    assert row["auto_score"] == 1
    assert box["memory_peak_bytes"] <= MEMORY_CAP and box["oom_kills"] >= 1
    assert "reached its memory cap of 536870912 bytes" in row["reason"]


def test_processes_are_capped(graded):
    row = graded["rows"]["fork_bomb"]
    forked = int(_part(row, "1-1", "g")["answer"].split()[1])
    assert 0 < forked < 128 and row["status"] == "ok" and row["auto_score"] == 1


def test_disk_is_capped(graded):
    row = graded["rows"]["disk_hog"]
    assert row["status"] == "error" and "No space left on device" in row["reason"] and row["auto_score"] == 1


@pytest.mark.parametrize(
    "name,why",
    [
        ("huge_message", "output above 262144 bytes was discarded"),  # one 40 MB write, sent in pieces
        ("print_10mb", "output above 262144 bytes was discarded"),
    ],
)
def test_oversized_output_is_discarded_and_the_run_continues(graded, name, why):
    """A 40 MB write and 10 MB of prints reach the output cap, however they arrive (the kernel sends stream
    output in pieces far below the message cap; a 40 MB display message is refused unread: test_hostile_2)."""
    row = graded["rows"][name]
    assert row["status"] == "ok" and why in row["reason"]
    assert _part(row, "1-2", "h")["status"] == "correct" and row["auto_score"] == 1


@pytest.mark.parametrize("name,status", [("writer_after_death", "dead"), ("writer_after_error", "error")])
def test_answers_sent_after_the_run_stopped_do_not_count(graded, name, status):
    row = graded["rows"][name]
    assert row["status"] == status and row["auto_score"] == 1
    assert _part(row, "1-2", "i")["status"] == "missing"


# --- class 6: bookkeeping ------------------------------------------------------------------------------


def test_ids_that_share_a_slug_get_their_own_files(graded):
    out = graded["out"]
    names = {safe_name("学生一"), safe_name("学生二")}
    assert len(names) == 2 and all(re.fullmatch(r"_~[0-9a-f]{12}", n) for n in names)
    for sid in ("学生一", "学生二"):
        md = (out / "feedback" / f"{safe_name(sid)}.md").read_text(encoding="utf-8")
        assert md.startswith(f"# Feedback: ch01, ` {sid} `\n") and "**Score: 1 / 33**" in md


def test_csv_cells_never_start_a_formula(graded):
    with open(graded["out"] / "grades.csv", encoding="utf-8", newline="") as fh:
        students = [r["student"] for r in csv.DictReader(fh)]
    for sid in ("=1+2", "@SUM(A1)", "-x", "+cmd"):
        assert "'" + sid in students and sid not in students
    assert all(not s.startswith(("=", "+", "-", "@")) for s in students)


def test_a_duplicate_gets_its_own_row(graded):
    rows = graded["rows"]
    assert rows["dup"]["auto_score"] == 1 and rows["dup"]["status"] == "ok"  # the folder, first in order
    row = _row_by_name(rows, "dup~")
    assert row["status"] == "invalid" and "a second submission for student 'dup'" in row["reason"]


def _wait_for(path: Path, text: str, timeout_s: float = 300) -> None:
    deadline = time.monotonic() + timeout_s
    while not (path.exists() and text in path.read_text()):
        assert time.monotonic() < deadline, f"{path} never held {text!r}"
        time.sleep(0.05)


def test_a_second_grader_on_the_same_gradebook_refuses_or_waits(tmp_path):
    """The first grader is stopped (SIGSTOP) while it holds its locks, so the outcome needs no timing."""
    subs, out = tmp_path / "subs", tmp_path / "out"
    subs.mkdir()
    _write_nb(subs / "slow.ipynb", [SETUP, "import time\ntime.sleep(3)", GOOD_H])
    args = [sys.executable, "-m", "aiinfra.course.grading.cli", subs, "--assignment", "ch01", "--out", out]
    args = list(map(str, args + ["--quiet"]))
    first = subprocess.Popen(args, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    _wait_for(out / "gradebook.sqlite.lock", str(first.pid))
    os.kill(first.pid, signal.SIGSTOP)
    try:
        with open(tmp_path / "waiting.err", "w") as err:
            waiting = subprocess.Popen(args + ["--wait"], stdout=subprocess.PIPE, stderr=err, text=True)
        refused = subprocess.run(args, capture_output=True, text=True, timeout=300)
        # the holder's pid is read from the lock the second grader failed to take
        assert refused.returncode == 75 and f"another aiinfra-grade (pid {first.pid})" in refused.stderr
        _wait_for(tmp_path / "waiting.err", f"waiting for the aiinfra-grade (pid {first.pid})")
        assert waiting.poll() is None
    finally:
        os.kill(first.pid, signal.SIGCONT)
    assert first.wait(timeout=300) == 0
    out_w, _ = waiting.communicate(timeout=300)
    assert waiting.returncode == 0 and "graded 0, skipped 1 unchanged" in out_w


# --- class 7: wherever the project lives --------------------------------------------------------------


def test_a_package_inside_a_private_folder_still_grades(tmp_path):
    private = tmp_path / "private"
    shutil.copytree(
        REPO / "src" / "aiinfra", private / "src" / "aiinfra", ignore=shutil.ignore_patterns("__pycache__")
    )
    private.chmod(0o700)
    subs, out = tmp_path / "subs", tmp_path / "out"
    subs.mkdir()
    shutil.copy(REPO / "solutions" / "ch01.ipynb", subs / "alice.ipynb")
    _write_nb(subs / "bob.ipynb", [SETUP, "import aiinfra\nanswer('1-1', 'g', aiinfra.__file__)", GOOD_H])
    env = {**os.environ, "PYTHONPATH": str(private / "src")}
    done = run_grader(subs, "--assignment", "ch01", "--out", out, "--quiet", env=env)
    assert done.returncode == 0, done.stderr
    with Gradebook(out / "gradebook.sqlite") as gb:
        alice, bob = gb.submission("ch01", "alice"), gb.submission("ch01", "bob")
    assert alice["auto_score"] == alice["auto_max"] == 29 and alice["status"] == "ok"
    assert _part(bob, "1-1", "g")["answer"] == str(private / "src" / "aiinfra" / "__init__.py")
    assert _sandbox(alice)["warnings"] == []
    if os.geteuid() == 0:
        assert _sandbox(alice)["kernel_uid"] == "a uid of its own per worker"


# --- without namespaces, loudly ----------------------------------------------------------------------


def test_without_bubblewrap_the_grader_says_so_loudly(tmp_path):
    subs, out = tmp_path / "subs", tmp_path / "out"
    subs.mkdir()
    shutil.copy(REPO / "solutions" / "ch01.ipynb", subs / "alice.ipynb")
    missing = tmp_path / "no" / "bwrap"
    refused = run_grader(subs, "--assignment", "ch01", "--out", out, "--sandbox", "bwrap", "--bwrap", missing)
    assert refused.returncode == 2 and "bubblewrap not found" in refused.stderr
    done = run_grader(subs, "--assignment", "ch01", "--out", out, "--bwrap", missing, "--quiet")
    assert done.returncode == 0, done.stderr
    for stream in (done.stderr, done.stdout):
        assert "WARNING: NO SANDBOX NAMESPACES: bubblewrap not found" in stream
    with Gradebook(out / "gradebook.sqlite") as gb:
        row = gb.submission("ch01", "alice")
    box = _sandbox(row)
    assert row["auto_score"] == row["auto_max"] and box["mode"] == "none" and not box["answer_key_hidden"]
    assert any(w.startswith("NO SANDBOX NAMESPACES") for w in box["warnings"])
