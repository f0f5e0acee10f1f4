"""The second hostile suite (issue 24): inert text, bounded workers, one id per student, folder
reads, fast start-up failures, one read per submission, keyed variants, hand grades kept, one
grader per output folder, Ctrl-C, /proc/net/unix and stdout floods.

One module-scoped run of the real CLI grades the kernel cases at once (two workers, bubblewrap
where it works); the other tests call the grader's functions on real files, or run the CLI
again. Each test is named after the item of issue 24's "Deliver" list it closes.
"""

from __future__ import annotations

import ast
import hashlib
import json
import os
import re
import shutil
import signal
import subprocess
import sys
import tempfile
import threading
import time
import unicodedata
from pathlib import Path

import pytest
from markdown_it import MarkdownIt

from aiinfra.course.exercises import registry, runtime
from aiinfra.course.exercises.variants import namespace, params_for, read_key, references
from aiinfra.course.grading import bounded, export
from aiinfra.course.grading.gradebook import Gradebook
from aiinfra.course.grading.sandbox import Limits
from aiinfra.course.grading.score import Assignment, score_submission
from aiinfra.course.grading.submissions import content_hash, discover, read_submission

HERE = Path(__file__).resolve().parent
REPO = HERE.parent.parent
sys.path.insert(0, str(HERE))
from grader_cli import run_grader  # noqa: E402 -- a sibling module, importable only after the sys.path entry above
from make_hostile import GOOD_H, SETUP, notebook  # noqa: E402 -- a sibling module, importable only after the sys.path entry above

pytestmark = pytest.mark.slow
LIMITS = ["--workers", "2", "--cell-timeout", "15", "--timeout", "40", "--memory-mb", "768"]
LIMITS += ["--output-kb", "256", "--disk-mb", "32", "--quiet"]
OUTPUT_CAP = 256 * 1024
ESC_NAME = "\x1b[2J\x1b[H"
ESC_MESSAGE = "\x1b]0;pwned\x07\x1b[31mmallory   33   33   0  ok  ran to the end\x1b[0m\x9b2J\x85"
EVIL_ANSWER = (
    "![pixel](https://evil.example/p.png)\n# Fake heading\n| fake | row |\n|---|---|\n"
    '<img src="https://evil.example/i.png"> [click](javascript:alert(1)) <https://evil.example/a>\n'
    "```\nfenced\n```\n\x1b[2J\x07\x85 end"
)
JOSE_NFC = unicodedata.normalize("NFC", "José")
JOSE_NFD = unicodedata.normalize("NFD", "José")


def _write_nb(path: Path, sources: list[str]) -> None:
    path.write_text(json.dumps(notebook(sources)), encoding="utf-8")


def _key_of(raw: bytes, readable: str) -> str:
    """The key the grader gives a bad name, derived here from its documented rule (salt 0)."""
    return f"{readable}~{hashlib.sha256(b'aiinfra-name/' + raw).hexdigest()[:12]}"


WIDGET_FLOOD = (
    "from comm import create_comm\n"
    "c = create_comm(target_name='jupyter.widget', data={'state': {}})\n"
    "for i in range(600):\n"
    "    c.send({'method': 'update', 'state': {f'k{i}': 'x' * 250_000}})"
)
STDOUT_FLOOD = "import sys\nfor _ in range(12_000):\n    sys.stdout.write('y' * 999 + '\\n')"
HUGE_DISPLAY = (
    "from IPython.display import publish_display_data\npublish_display_data({'text/plain': 'y' * 40 * 2**20})"
)
NET_UNIX = "answer('1-1', 'g', open('/proc/net/unix').read()[-3000:])"


@pytest.fixture(scope="module")
def run(tmp_path_factory):
    tmp = tmp_path_factory.mktemp("hostile2")
    subs, out = tmp / "subs", tmp / "out"
    subs.mkdir()
    good = [SETUP, GOOD_H]
    _write_nb(subs / "good.ipynb", good)
    # 1: escapes in an exception and in a free-text answer
    _write_nb(
        subs / "escapes.ipynb",
        [
            SETUP,
            GOOD_H,
            f"answer('1-1', 'g', {EVIL_ANSWER!r})",
            f"raise type({ESC_NAME!r}, (Exception,), {{}})({ESC_MESSAGE!r})",
        ],
    )
    # 2: widget state and a stdout flood
    _write_nb(subs / "widget_flood.ipynb", [SETUP, WIDGET_FLOOD, GOOD_H])
    _write_nb(subs / "stdout_flood.ipynb", [SETUP, STDOUT_FLOOD, GOOD_H])
    _write_nb(subs / "huge_display.ipynb", [SETUP, HUGE_DISPLAY, GOOD_H])
    # 3: NFC and NFD twins, a bad name, and a valid entry named like the bad name's key
    _write_nb(subs / f"{JOSE_NFD}.ipynb", good)  # first in byte order ("e" < "é"): graded as José
    _write_nb(subs / f"{JOSE_NFC}.ipynb", [SETUP])
    _write_nb(subs / "a\tb.ipynb", [SETUP])
    _write_nb(subs / f"{_key_of(b'a' + bytes([9]) + b'b.ipynb', 'a_b')}.ipynb", good)
    # 4: a folder of 1,500 files whose notebook sorts last, and a path longer than 1024 bytes
    crowd = subs / "crowd"
    crowd.mkdir()
    for i in range(1500):
        (crowd / f"a{i:04d}.txt").write_text("x")
    _write_nb(crowd / "ch01.ipynb", good)
    deep = subs / "deep_path"
    (deep / ("d" * 200) / ("e" * 200) / ("f" * 200) / ("g" * 200) / ("h" * 200)).mkdir(parents=True)
    (deep / ("d" * 200) / ("e" * 200) / ("f" * 200) / ("g" * 200) / ("h" * 200) / ("i" * 200)).write_text("x")
    _write_nb(deep / "ch01.ipynb", good)
    # 5: a start-up failure: a data file above the sandbox's disk (32 MiB)
    big = subs / "big_data"
    big.mkdir()
    (big / "data.bin").write_bytes(b"\0" * (40 * 2**20))
    _write_nb(big / "ch01.ipynb", good)
    # 13: what a kernel sees of the grader's sockets
    _write_nb(subs / "net_unix.ipynb", [SETUP, NET_UNIX])
    done = run_grader(subs, "--assignment", "ch01", "--out", out, *LIMITS)
    assert done.returncode == 0, done.stderr
    with Gradebook(out / "gradebook.sqlite") as gb:
        rows = {s: gb.submission("ch01", s) for s in gb.students("ch01")}
    return {"rows": rows, "stdout": done.stdout, "stderr": done.stderr, "out": out, "subs": subs}


def _part(row, exercise, part):
    return next(p for p in row["parts"] if p["exercise"] == exercise and p["part"] == part)


# --- 1. everything a submission controls is inert ---------------------------------------------


def test_1_control_characters_and_escapes_are_removed_at_the_gate():
    assert bounded.clean_text("a\x1b[2J\x1b[Hb") == "ab"
    assert bounded.clean_text("x\x1b]0;title\x07y\x1b]8;;http://e\x1b\\z") == "xyz"
    assert bounded.clean_text("a\x07\x08\x9b31mb\x85c\x7f") == "abc"
    assert bounded.clean_text("tab\tnew\nline\r") == "tab\tnew\nline"
    assert bounded.clean_text("nul\x00 \udcff") == "nul\ufffd \ufffd"
    assert bounded.terminal_text("a\u202eb\nc") == "a?b?c"
    assert export.csv_cell("\x1b[2J=1+2") == "'=1+2"


def test_1_an_escape_laden_exception_never_reaches_the_terminal_or_an_export(run):
    row = run["rows"]["escapes"]
    assert row["status"] == "error"
    assert (
        "code cell 4 raised : mallory   33   33   0  ok  ran to the end; the run stopped there"
        in row["reason"]
    )
    assert _part(row, "1-2", "h")["points"] == 1  # recorded before the stop
    for text in [run["stdout"], run["stderr"]] + [
        p.read_text() for p in run["out"].rglob("*.*") if p.suffix in (".csv", ".md", ".json")
    ]:
        assert not re.search("[\x00-\x08\x0b-\x1f\x7f-\x9f]", text)
    summary = next(line for line in run["stdout"].splitlines() if line.startswith("escapes "))
    assert summary.split()[1:5] == ["1", "33", "4", "error"]  # its own row, no forged one
    assert sum(line.startswith("mallory") for line in run["stdout"].splitlines()) == 0
    results = json.loads((run["out"] / "gradescope" / "escapes" / "results.json").read_text())
    assert results["output_format"] == results["test_output_format"] == "text"


def _tokens(md: str) -> list:
    flat = []
    for tok in MarkdownIt("commonmark").enable("table").parse(md):
        flat.append(tok)
        flat.extend(tok.children or [])
    return flat


def test_1_free_text_in_markdown_feedback_renders_as_literal_text(run):
    row = run["rows"]["escapes"]
    md = (run["out"] / "feedback" / "escapes.md").read_text()
    tokens = _tokens(md)
    kinds = {t.type for t in tokens}
    assert not kinds & {"image", "link_open", "html_inline", "html_block"}
    heads = [t.tag for t in tokens if t.type == "heading_open"]
    assert heads == ["h1"] + ["h2"] * 4  # the title and one per exercise
    assert sum(t.type == "tr_open" for t in tokens) == 4 * 1 + len(row["parts"])  # a head row per table
    fences = [t for t in tokens if t.type == "fence"]
    assert len(fences) == 1 and fences[0].content == bounded.clean_text(EVIL_ANSWER) + "\n"


def test_1_markdown_quoting_holds_for_any_text():
    evil = "a | b ` `` ![i](http://e/p.png) <b>x</b> [l](javascript:x) &amp; # h\n| r |"
    tokens = _tokens(f"| h |\n|---|\n| {export.md_inline(evil)} |\n\n{export.md_block(evil)}\n")
    assert not {t.type for t in tokens} & {"image", "link_open", "html_inline", "html_block", "heading_open"}
    codes = [t.content for t in tokens if t.type == "code_inline"]
    assert codes == ["a | b ` `` ![i](http://e/p.png) <b>x</b> [l](javascript:x) &amp; # h | r |"]
    assert sum(t.type == "tr_open" for t in tokens) == 2


# --- 2. every limit covers the grader's own handling ------------------------------------------


def test_2_a_widget_flood_does_not_grow_the_worker(run):
    flood, good = run["rows"]["widget_flood"], run["rows"]["good"]
    assert flood["status"] == "ok" and _part(flood, "1-2", "h")["points"] == 1
    grew = (
        json.loads(flood["sandbox"])["worker_max_rss_bytes"]
        - json.loads(good["sandbox"])["worker_max_rss_bytes"]
    )
    # 150 MB of widget state went by: stored, it would grow the worker by at least that much. What a
    # worker grows by without storing it (message buffers under load) was measured at up to 78 MB.
    assert grew < 110 * 2**20


def test_2_each_worker_has_a_memory_cap(tmp_path):
    code = (
        "import resource\nfrom aiinfra.course.grading import extract\n"
        "cap = extract.limit_worker_memory(256 * 2**20)\n"
        "assert resource.getrlimit(resource.RLIMIT_AS)[0] == cap\n"
        "try:\n    hog = bytearray(512 * 2**20)\nexcept MemoryError:\n    print('capped')\n"
    )
    done = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=60)
    assert done.stdout.strip() == "capped", done.stderr


# --- 3. one student, one id ---------------------------------------------------------------------


def test_3_nfc_and_nfd_twins_are_one_student(run):
    rows = run["rows"]
    assert rows[JOSE_NFC]["auto_score"] == 1 and rows[JOSE_NFC]["status"] == "ok"  # the NFD file
    twins = [r for s, r in rows.items() if s.startswith("Jos") and s != JOSE_NFC]
    assert len(twins) == 1 and twins[0]["score"] == 0
    assert f"a second submission for student 'José' ({JOSE_NFD}.ipynb is graded)" in twins[0]["reason"]
    assert JOSE_NFD not in rows


def test_3_a_key_for_a_bad_name_never_takes_a_real_id(run):
    rows = run["rows"]
    named_like_a_key = _key_of(b"a\tb.ipynb", "a_b")
    assert rows[named_like_a_key]["status"] == "ok" and rows[named_like_a_key]["auto_score"] == 1
    bad = [r for s, r in rows.items() if s.startswith("a_b~") and s != named_like_a_key]
    assert len(bad) == 1 and "is not a usable student id" in bad[0]["reason"]


def test_3_the_outcome_never_depends_on_directory_order(tmp_path):
    names = [
        f"{JOSE_NFD}.ipynb",
        f"{JOSE_NFC}.ipynb",
        "a\tb.ipynb",
        f"{_key_of(b'a' + bytes([9]) + b'b.ipynb', 'a_b')}.ipynb",
    ]
    names += [f"s{i:03d}.ipynb" for i in range(40)]
    found = []
    for order in (names, names[::-1]):
        folder = tmp_path / f"subs{len(found)}"
        folder.mkdir()
        for n in order:
            _write_nb(folder / n, [SETUP])
        subs, _ = discover(folder, "ch01")
        found.append([(s["student"], s["problem"]) for s in subs])
    assert found[0] == found[1]
    assert len({s for s, _ in found[0]}) == len(names)


# --- 4. a folder submission's notebook is always read ---------------------------------------------


def test_4_a_crowded_folder_is_graded_with_a_note(run):
    row = run["rows"]["crowd"]
    assert row["status"] == "ok" and row["auto_score"] == 1
    assert "in the submission folder: 501 item(s) beyond the first 999 entries were left out" in row["reason"]


def test_4_a_path_longer_than_1024_bytes_is_left_out(run):
    row = run["rows"]["deep_path"]
    assert row["status"] == "ok" and row["auto_score"] == 1
    assert "1 item(s) with a path longer than 1024 bytes were left out" in row["reason"]


def test_4_what_is_kept_is_the_same_in_any_creation_order(tmp_path):
    kept = []
    for order in (range(300), reversed(range(300))):
        folder = tmp_path / f"f{len(kept)}"
        folder.mkdir()
        for i in order:
            (folder / f"n{i:03d}").write_text("x")
        tree = bounded.walk(str(folder), max_depth=4, max_entries=100, max_bytes=10**6)
        kept.append([parts for parts, _ in tree.files])
    assert kept[0] == kept[1] == [(f"n{i:03d}",) for i in range(100)]


# --- 5. start-up failures are fast and named ----------------------------------------------------


def test_5_a_start_up_failure_is_named_within_the_start_up_timeout(run):
    row = run["rows"]["big_data"]
    assert row["status"] == "error"
    assert re.search(
        r"the kernel could not be run: the kernel could not start: OSError: \[Errno 2[78]\]", row["reason"]
    )
    assert "overran its deadline" not in row["reason"]
    assert row["elapsed_s"] < Limits().startup_timeout_s


# --- 6. the content graded is the content hashed ------------------------------------------------


def test_6_a_file_swapped_during_grading_is_recorded_with_the_hash_of_what_was_graded(tmp_path):
    subs, out, versions = tmp_path / "subs", tmp_path / "out", tmp_path / "versions"
    for d in (subs, versions):
        d.mkdir()
    _write_nb(versions / "v1", [SETUP, GOOD_H])
    _write_nb(versions / "v2", [SETUP, "answer('1-2', 'h', 1.0)"])
    hashes = {}
    for v in ("v1", "v2"):
        probe = tmp_path / f"probe_{v}"
        probe.mkdir()
        shutil.copy(versions / v, probe / "swap.ipynb")
        sub = discover(probe, "ch01")[0][0]
        hashes[v] = content_hash(sub, read_submission(sub, Limits())[1])
    shutil.copy(versions / "v1", subs / "swap.ipynb")
    stop = threading.Event()

    def swap():
        n = 0
        while not stop.is_set():
            n += 1
            shutil.copy(versions / ("v2" if n % 2 else "v1"), versions / ".next")
            os.replace(versions / ".next", subs / "swap.ipynb")
            time.sleep(0.002)

    seen = []
    for _ in range(3):
        worker = threading.Thread(target=swap)
        stop.clear()
        worker.start()
        try:
            done = run_grader(
                subs, "--assignment", "ch01", "--out", out, "--force", "--quiet", "--workers", "1"
            )
        finally:
            stop.set()
            worker.join()
        assert done.returncode == 0, done.stderr
        with Gradebook(out / "gradebook.sqlite") as gb:
            row = gb.submission("ch01", "swap")
        graded = "v1" if _part(row, "1-2", "h")["points"] == 1 else "v2"
        assert row["content_sha256"] == hashes[graded]
        seen.append(graded)
    assert set(seen) <= {"v1", "v2"}


# --- 7. variants an instructor can trust ---------------------------------------------------------


def test_7_without_the_key_a_classmates_parameters_cannot_be_computed(tmp_path):
    key, other = bytes(range(32)), bytes(range(1, 33))
    exercises = registry.chapter("ch01")
    with pytest.raises(ValueError, match="key"):
        params_for(exercises[0], "alice", True)
    keyed = {ex.id: params_for(ex, "alice", True, key) for ex in exercises}
    assert keyed == {ex.id: params_for(ex, "alice", True, key) for ex in exercises}  # the grader's recompute
    students = [f"s{i}" for i in range(30)]

    def public(sid):  # the first version's rule (sha256 of id, exercise and name): what a kernel computed
        out = {}
        for ex in exercises:
            out[ex.id] = {}
            for name, prm in ex.params.items():
                h = hashlib.sha256(f"aiinfra-variant/{sid}/{ex.id}/{name}".encode()).digest()
                out[ex.id][name] = (
                    prm.choices[int.from_bytes(h[:8], "big") % len(prm.choices)]
                    if prm.choices
                    else prm.default
                )
        return out

    def drawn(sid, k):
        return {ex.id: params_for(ex, sid, True, k) for ex in exercises}

    assert [drawn(s, key) for s in students] != [drawn(s, other) for s in students]  # another key, others
    predicted = sum(drawn(s, key) == public(s) for s in students)
    assert predicted < 10  # the public rule predicted all 30; now it is a guess
    sheet = json.dumps(Assignment("ch01", True, key).sheet("alice"))
    assert key.hex() not in sheet and "key" not in json.loads(sheet)


def test_7_the_personal_notebook_checks_at_home_and_grades_in_full(tmp_path):
    handout, key_file, roster = (
        tmp_path / "handout",
        tmp_path / "secret" / "variant.key",
        tmp_path / "roster.txt",
    )
    roster.write_text("alice\nbob\n")
    tool = [sys.executable, "-m", "aiinfra_build.build_exercises", "--variants", "--chapter", "ch01"]
    done = subprocess.run(
        tool + ["--key", key_file, "--roster", roster, "--out", handout], capture_output=True, text=True
    )
    assert done.returncode == 0, done.stderr
    assert oct(key_file.stat().st_mode & 0o777) == "0o600"
    key = read_key(key_file)
    inside = subprocess.run(
        tool + ["--key", handout / "k", "--roster", roster, "--out", handout], capture_output=True, text=True
    )
    assert inside.returncode == 2 and "inside the hand-out" in inside.stderr
    personal = json.loads((handout / "students" / "alice" / "ch01.ipynb").read_text())
    assert key.hex() not in json.dumps(personal)
    setup = "".join(next(c for c in personal["cells"] if c["cell_type"] == "code")["source"])
    call = next(
        n
        for n in ast.walk(ast.parse(setup))
        if isinstance(n, ast.Call) and getattr(n.func, "id", "") == "configure"
    )
    mine = ast.literal_eval(next(k.value for k in call.keywords if k.arg == "params"))
    # self-check at home: the notebook's own parameters, and check() scores right answers as right
    runtime.reset()
    try:
        exec(compile(setup, "setup", "exec"), {})
        for ex in registry.chapter("ch01"):
            assert runtime.params(ex.id) == namespace(ex, params_for(ex, "alice", True, key))
            refs = references(ex, runtime.params(ex.id))
            for part in ex.parts:
                runtime.answer(ex.id, part.part, refs.get(part.part, "my reasoning"))
        report = runtime.check("ch01")
        assert {r.status for r in report.results} == {"correct", "manual"}
    finally:
        runtime.reset()
    assert set(mine) == {ex.id for ex in registry.chapter("ch01")}
    # graded: the reference solution under each student's id scores every auto point with the key
    subs, out = tmp_path / "subs", tmp_path / "out"
    subs.mkdir()
    for sid in ("alice", "bob"):
        shutil.copy(REPO / "solutions" / "ch01.ipynb", subs / f"{sid}.ipynb")
    args = [subs, "--assignment", handout / "exercises" / "ch01.ipynb", "--out", out, "--quiet"]
    assert run_grader(*args).returncode == 2  # variants without the key: refused
    done = run_grader(*args, "--variant-key", key_file)
    assert done.returncode == 0, done.stderr
    with Gradebook(out / "gradebook.sqlite") as gb:
        for sid in ("alice", "bob"):
            row = gb.submission("ch01", sid)
            assert row["auto_score"] == row["auto_max"] > 0, row["reason"]


def test_7_a_kernel_finds_no_trace_of_the_key(tmp_path):
    subs, out, secret = tmp_path / "subs", tmp_path / "out", tmp_path / "secret"
    for d in (subs, secret):
        d.mkdir()
    key_file = secret / "variant.key"
    key_file.write_text(bytes(range(32)).hex())
    key_file.chmod(0o600)
    hunt = (
        "import os, glob\nhits = []\n"
        f"for path in [{str(key_file)!r}, '/proc/self/environ', '/proc/1/environ', '/proc/self/cmdline']:\n"
        "    try:\n        hits.append(open(path, 'rb').read().hex())\n    except OSError as e:\n        hits.append(type(e).__name__)\n"
        "for path in glob.glob('/run/aiinfra/**', recursive=True) + glob.glob(os.path.expanduser('~') + '/**', recursive=True):\n"
        "    try:\n        hits.append(open(path, 'rb').read().hex())\n    except OSError:\n        pass\n"
        "answer('1-1', 'g', ' '.join(hits)[:200_000])"
    )
    _write_nb(subs / "alice.ipynb", [SETUP, hunt])
    done = run_grader(
        subs, "--assignment", "ch01", "--variants", "--variant-key", key_file, "--out", out, "--quiet"
    )
    assert done.returncode == 0, done.stderr
    with Gradebook(out / "gradebook.sqlite") as gb:
        found = _part(gb.submission("ch01", "alice"), "1-1", "g")["answer"]
    assert found.split()[0] in ("FileNotFoundError", "PermissionError")
    assert bytes(range(32)).hex() not in found and bytes(range(32)).hex().encode().hex() not in found


# --- 8. hand grading survives -------------------------------------------------------------------


def _answers(student: str) -> list[dict]:
    out = []
    for ex in registry.chapter("ch01"):
        refs = references(ex, namespace(ex, params_for(ex, student, False)))
        out += [
            {"exercise": ex.id, "part": p.part, "value": refs.get(p.part, f"reasoning {ex.id}")}
            for p in ex.parts
        ]
    return out


def test_8_hand_grades_survive_a_re_grade_and_the_lost_ones_are_reported(tmp_path):
    a = Assignment("ch01")
    with Gradebook(tmp_path / "gb.sqlite") as gb:
        first = score_submission({"status": "ok", "answers": _answers("alice")}, a, "alice")
        assert gb.record("ch01", "alice.ipynb", "h1", "fp1", first, {}) == []
        gb.set_manual("ch01", "alice", "1-1", "g", 1.5)
        gb.set_manual("ch01", "alice", "1-4", "g", 1.0)
        again = score_submission({"status": "ok", "answers": _answers("alice")}, a, "alice")
        assert gb.record("ch01", "alice.ipynb", "h1", "fp2", again, {}) == []  # --force, a new fingerprint
        row = gb.submission("ch01", "alice")
        assert (
            _part(row, "1-1", "g")["manual_points"] == 1.5 and _part(row, "1-4", "g")["manual_points"] == 1.0
        )
        assert row["score"] == row["auto_max"] + 2.5
        changed = [
            r if (r["exercise"], r["part"]) != ("1-4", "g") else {**r, "value": "new text"}
            for r in _answers("alice")
        ]
        lost = gb.record(
            "ch01",
            "alice.ipynb",
            "h2",
            "fp2",
            score_submission({"status": "ok", "answers": changed}, a, "alice"),
            {},
        )
        assert lost == ["1-4(g): 1 point(s) by hand, the answer changed"]
        row = gb.submission("ch01", "alice")
        assert (
            _part(row, "1-1", "g")["manual_points"] == 1.5 and _part(row, "1-4", "g")["manual_points"] is None
        )
        assert _part(row, "1-4", "g")["status"] == "manual"


# --- 9. one run folder per lock; Ctrl-C leaves nothing behind --------------------------------------


def _slow_subs(folder: Path, n: int, seconds: float) -> None:
    folder.mkdir()
    for i in range(n):
        _write_nb(folder / f"s{i}.ipynb", [SETUP, f"import time\ntime.sleep({seconds})", GOOD_H])


def _wait_for(path: Path, text: str, timeout_s: float = 300) -> None:
    deadline = time.monotonic() + timeout_s
    while not (path.exists() and text in path.read_text()):
        assert time.monotonic() < deadline, f"{path} never held {text!r}"
        time.sleep(0.05)


def test_9_two_graders_on_one_output_folder_refuse_or_wait_whatever_their_gradebooks(tmp_path):
    """The first grader is stopped (SIGSTOP) once it has its run folder, so the outcome needs no timing."""
    subs, out = tmp_path / "subs", tmp_path / "out"
    _slow_subs(subs, 2, 2)
    cmd = [sys.executable, "-m", "aiinfra.course.grading.cli", str(subs), "--assignment", "ch01"]
    cmd += ["--out", str(out), "--quiet"]
    first = subprocess.Popen(
        cmd + ["--gradebook", str(tmp_path / "a.sqlite")],
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
    )
    _wait_for(out / ".aiinfra-run" / "owner.json", str(first.pid))
    os.kill(first.pid, signal.SIGSTOP)
    try:
        with open(tmp_path / "queued.err", "w") as err:
            queued = subprocess.Popen(
                cmd + ["--gradebook", str(tmp_path / "b.sqlite"), "--wait"],
                stdout=subprocess.PIPE,
                stderr=err,
                text=True,
            )
        second = run_grader(
            subs, "--assignment", "ch01", "--out", out, "--gradebook", tmp_path / "b.sqlite", "--quiet"
        )
        assert second.returncode == 75  # refused: another gradebook, the same output folder
        assert f"another aiinfra-grade (pid {first.pid}) is using the output folder {out}" in second.stderr
        _wait_for(
            tmp_path / "queued.err",
            f"waiting for the aiinfra-grade (pid {first.pid}) that is using the output folder",
        )
        assert (
            queued.poll() is None and (out / ".aiinfra-run" / "owner.json").exists()
        )  # A's run folder intact
    finally:
        os.kill(first.pid, signal.SIGCONT)
    _, stderr = first.communicate(timeout=400)
    assert first.returncode == 0, stderr
    queued.communicate(timeout=400)
    assert queued.returncode == 0
    for gb_file in ("a.sqlite", "b.sqlite"):
        with Gradebook(tmp_path / gb_file) as gb:
            assert [gb.submission("ch01", s)["auto_score"] for s in gb.students("ch01")] == [1, 1]


def test_9_ctrl_c_at_any_moment_leaves_nothing_behind_and_the_re_run_completes(tmp_path):
    subs, out = tmp_path / "subs", tmp_path / "out"
    _slow_subs(subs, 4, 1)
    private_tmp = Path(tempfile.mkdtemp(prefix="g24-", dir="/tmp"))  # short: socket paths live below it
    env = {**os.environ, "TMPDIR": str(private_tmp)}
    cmd = [
        sys.executable,
        "-m",
        "aiinfra.course.grading.cli",
        str(subs),
        "--assignment",
        "ch01",
        "--out",
        str(out),
        "--quiet",
    ]
    for delay in (0.3, 1.0, 2.0, 3.0, 4.5, 6.0):
        proc = subprocess.Popen(cmd, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, env=env)
        time.sleep(delay)
        proc.send_signal(signal.SIGINT)
        _, stderr = proc.communicate(timeout=120)
        # done, stopped, or stopped while starting; on a loaded machine the signal can even come before the
        # interpreter has loaded runpy, which CPython reports with exit status 1 (no grader code ran yet)
        unstarted = proc.returncode == 1 and stderr.startswith("Could not import runpy module")
        assert proc.returncode in (0, 130, -signal.SIGINT) or unstarted, stderr
        assert not (out / ".aiinfra-run").exists(), (delay, stderr)
        assert os.listdir(private_tmp) == [], delay
        left = subprocess.run(["pgrep", "-f", str(subs)], capture_output=True, text=True).stdout.split()
        assert left == [], (delay, left)
    done = run_grader(subs, "--assignment", "ch01", "--out", out, "--quiet")
    assert done.returncode == 0 and "cleaned up" not in done.stderr
    with Gradebook(out / "gradebook.sqlite") as gb:
        assert [gb.submission("ch01", s)["auto_score"] for s in gb.students("ch01")] == [1, 1, 1, 1]
    private_tmp.rmdir()


# --- 13. outside the cases -------------------------------------------------------------------------


def test_13_exercise_1_4_does_not_state_the_answer_to_1_1c():
    ex_1_1, ex_1_4 = registry.get("1-1"), registry.get("1-4")
    kv_kib = references(ex_1_1, namespace(ex_1_1, params_for(ex_1_1, None, False)))["c"]
    assert kv_kib == 144
    ns = namespace(ex_1_4, params_for(ex_1_4, None, False))
    assert kv_kib not in ns.values()
    from aiinfra.course.exercises import render

    text = render.statement_markdown(ex_1_4, ns)
    assert "144 KiB" not in text and "(36 layers, each with 8 key/value heads of 128 elements)" in text


def test_13_the_grader_s_sockets_do_not_reveal_the_output_folder(run):
    seen = _part(run["rows"]["net_unix"], "1-1", "g")["answer"]
    assert isinstance(seen, str)
    assert (
        str(run["out"]) not in seen and str(run["out"].resolve()) not in seen and str(run["subs"]) not in seen
    )


def test_13_a_stdout_flood_is_reported_as_the_output_cap(run):
    row = run["rows"]["stdout_flood"]
    assert row["status"] == "ok" and _part(row, "1-2", "h")["points"] == 1
    assert f"output above {OUTPUT_CAP} bytes was discarded" in row["reason"]
    assert "discarded unread" not in row["reason"]


def test_13_one_message_above_the_cap_is_refused_unread(run):
    row = run["rows"]["huge_display"]
    assert row["status"] == "ok" and _part(row, "1-2", "h")["points"] == 1
    assert f"kernel message(s) above {OUTPUT_CAP + 64 * 1024} bytes were discarded unread" in row["reason"]
