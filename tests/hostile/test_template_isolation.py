"""Kernels forked from a worker's template (zygote.py, template.py) keep every submission apart.

One batch is graded twice by the real CLI with one worker, so every submission is forked from
the same template one after the other: once with templates (the default as root with
bubblewrap) and once with ``--no-templates``. The first submission leaves what it can behind
(a file in /tmp and in its home, a module in ``sys.modules``, a patched numpy, a detached
process); the second reports what it finds. Both runs must give the same scores.
"""

from __future__ import annotations

import json
import os
import shutil
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest

from aiinfra.course.grading.gradebook import Gradebook

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE))
from grader_cli import processes_with, run_grader  # noqa: E402 -- a sibling module, importable only after the sys.path entry above
from make_hostile import GOOD_H, SETUP, notebook  # noqa: E402 -- a sibling module, importable only after the sys.path entry above

pytestmark = pytest.mark.slow
MEMORY_MB = 512
LIMITS = ["--workers", "1", "--cell-timeout", "5", "--timeout", "40", "--memory-mb", str(MEMORY_MB)]
LIMITS += ["--disk-mb", "32", "--quiet"]
# the detached process's argument, this pytest process's own: xdist may run this module's fixture in two
# workers at once, and one run's sleeper must not be taken for the other's
SLEEPER = str(27_000_000 + os.getpid())

LEAVE_BEHIND = (
    "import os, random, subprocess, sys, types\nimport numpy\n"
    "open('/tmp/left-by-a', 'w').write('a')\n"
    "open(os.path.expanduser('~/left-by-a'), 'w').write('a')\n"
    "sys.modules['left_by_a'] = types.ModuleType('left_by_a')\n"
    "numpy.left_by_a = True\n"
    "random.random = lambda: 0.5\n"
    f"subprocess.Popen(['sleep', '{SLEEPER}'], start_new_session=True)\n"
)
DRAW = "import random, json\nanswer('1-1', 'g', json.dumps({'random': random.random(), 'numpy': float(__import__('numpy').random.random())}))"
LOOK = (
    "import json, os, sys\nimport numpy\n"
    "sleepers = [p for p in os.listdir('/proc') if p.isdigit() "
    f"and b'{SLEEPER}' in open(f'/proc/{{p}}/cmdline', 'rb').read()]\n"
    "seen = {'tmp': os.path.exists('/tmp/left-by-a'), 'home': os.path.exists(os.path.expanduser('~/left-by-a')),\n"
    "        'module': 'left_by_a' in sys.modules, 'numpy': hasattr(numpy, 'left_by_a'), 'sleepers': sleepers}\n"
    "answer('1-2', 'i', 0.0)\n"  # a wrong answer: the row's score is that of (h) alone
)
REPORT = "import random\nseen['random'] = random.random()\nanswer('1-1', 'g', json.dumps(seen))"


def _parent(pid: int) -> int:
    try:
        return int(Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()[1])
    except (OSError, IndexError, ValueError):
        return 0


def _answer(row, exercise: str, part: str):
    return next(p for p in row["parts"] if p["exercise"] == exercise and p["part"] == part)["answer"]


@pytest.fixture(scope="module")
def runs(tmp_path_factory):
    tmp = tmp_path_factory.mktemp("templates")
    subs = tmp / "subs"
    subs.mkdir()
    cases = {
        "a_leaves": [SETUP, GOOD_H, DRAW, LEAVE_BEHIND],
        "b_looks": [SETUP, GOOD_H, LOOK, REPORT],
        "c_draws": [SETUP, GOOD_H, DRAW],
    }
    for name, cells in cases.items():
        (subs / f"{name}.ipynb").write_text(json.dumps(notebook(cells)), encoding="utf-8")
    for name in ("forked_memory", "infinite_loop"):
        shutil.copy(HERE / f"{name}.ipynb", subs / f"{name}.ipynb")
    out = {}
    for mode, extra in (("templates", []), ("fresh", ["--no-templates"])):
        done = run_grader(subs, "--assignment", "ch01", "--out", tmp / mode, *LIMITS, *extra)
        assert done.returncode == 0, done.stderr
        with Gradebook(tmp / mode / "gradebook.sqlite") as gb:
            rows = {s: gb.submission("ch01", s) for s in gb.students("ch01")}
        out[mode] = {"rows": rows, "stdout": done.stdout}
    return out


def test_the_summary_says_whether_kernels_are_forked_from_a_template(runs):
    assert "kernels: forked from a template per worker" in runs["templates"]["stdout"].splitlines()
    assert "kernels: one fresh sandbox each" in runs["fresh"]["stdout"].splitlines()
    for mode, origin in (("templates", "forked from the worker's template"), ("fresh", "a fresh sandbox")):
        for row in runs[mode]["rows"].values():
            assert json.loads(row["sandbox"])["kernel"] == origin


@pytest.mark.parametrize("mode", ["templates", "fresh"])
def test_nothing_of_one_submission_reaches_the_next(runs, mode):
    seen = json.loads(_answer(runs[mode]["rows"]["b_looks"], "1-1", "g"))
    assert seen["tmp"] is False and seen["home"] is False
    assert seen["module"] is False and seen["numpy"] is False
    assert seen["sleepers"] == []
    assert seen["random"] != 0.5  # a's patched random.random stayed in a's kernel
    assert processes_with(SLEEPER) == []


@pytest.mark.parametrize("mode", ["templates", "fresh"])
def test_every_kernel_draws_its_own_random_numbers(runs, mode):
    rows = runs[mode]["rows"]
    a, c = (json.loads(_answer(rows[name], "1-1", "g")) for name in ("a_leaves", "c_draws"))
    assert a["random"] != c["random"] and a["numpy"] != c["numpy"]


@pytest.mark.parametrize("mode", ["templates", "fresh"])
def test_the_memory_cap_and_the_time_limit_still_apply(runs, mode):
    rows = runs[mode]["rows"]
    box = json.loads(rows["forked_memory"]["sandbox"])
    assert box["oom_kills"] >= 1 and box["memory_peak_bytes"] <= MEMORY_MB * 2**20
    assert f"reached its memory cap of {MEMORY_MB * 2**20} bytes" in rows["forked_memory"]["reason"]
    loop = rows["infinite_loop"]
    assert loop["status"] == "timeout" and "cell time limit of 5 s" in loop["reason"]


def test_the_kernels_cpu_seconds_are_counted(runs):
    for mode in ("templates", "fresh"):
        for row in runs[mode]["rows"].values():
            box = json.loads(row["sandbox"])
            assert row["cpu_s"] > box["worker_cpu_s"]
            assert (box.get("kernel_cpu_s") is not None) == (mode == "templates")


def test_templates_change_no_score(runs):
    def scores(mode):
        return {s: (r["auto_score"], r["status"]) for s, r in runs[mode]["rows"].items()}

    assert scores("templates") == scores("fresh")
    assert scores("templates")["a_leaves"] == (1, "ok") and scores("templates")["b_looks"] == (1, "ok")


def test_a_template_that_cannot_start_leaves_fresh_sandboxes_and_the_same_scores(tmp_path):
    """bubblewrap refuses the template's sandbox alone (a wrapper that sees the template's module):
    every kernel then starts in a fresh sandbox, and the row says nothing wrong about the student."""
    wrapper = tmp_path / "bwrap"
    wrapper.write_text(
        f'#!/bin/sh\ncase "$*" in *"zygote import serve"*) echo refused >&2; exit 3;; esac\nexec {shutil.which("bwrap")} "$@"\n'
    )
    wrapper.chmod(0o755)
    subs = tmp_path / "subs"
    subs.mkdir()
    shutil.copy(HERE.parent.parent / "solutions" / "ch01.ipynb", subs / "alice.ipynb")
    (subs / "bob.ipynb").write_text(json.dumps(notebook([SETUP, GOOD_H])), encoding="utf-8")
    done = run_grader(subs, "--assignment", "ch01", "--out", tmp_path / "out", "--bwrap", wrapper, *LIMITS)
    assert done.returncode == 0, done.stderr
    assert "worker 0 starts a fresh sandbox per kernel: its template did not start (refused)" in done.stderr
    with Gradebook(tmp_path / "out" / "gradebook.sqlite") as gb:
        alice, bob = gb.submission("ch01", "alice"), gb.submission("ch01", "bob")
    assert alice["auto_score"] == alice["auto_max"] == 29 and alice["status"] == "ok"
    assert bob["auto_score"] == 1 and bob["status"] == "ok"
    for row in (alice, bob):
        assert json.loads(row["sandbox"])["kernel"] == "a fresh sandbox"


def test_a_template_killed_mid_batch_harms_no_submission_and_is_started_again(tmp_path):
    """The template is killed while a submission forked from it runs: that run goes on (its
    namespaces are its own), and the slot's next submission is forked from a new template."""
    subs = tmp_path / "subs"
    subs.mkdir()
    marker = "31417"
    waits = f"import subprocess\ntry:\n    subprocess.run(['sleep', '{marker}'], timeout=3)\nexcept subprocess.TimeoutExpired:\n    pass"
    cases = {"a_waits": [SETUP, waits, GOOD_H], "b_after": [SETUP, GOOD_H]}
    for name, cells in cases.items():
        (subs / f"{name}.ipynb").write_text(json.dumps(notebook(cells)), encoding="utf-8")
    grader = subprocess.Popen(
        [sys.executable, "-m", "aiinfra.course.grading.cli", subs, "--assignment", "ch01"]
        + ["--out", str(tmp_path / "out"), *LIMITS],
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
    )
    while not processes_with(marker) and grader.poll() is None:
        time.sleep(0.05)  # until a's kernel has started its sleep, forked from the template
    # the template's bubblewrap (the grader's child; the template dies with it), not the template's
    # children, whose command line is the template's too
    killed = [p for p in processes_with("zygote import serve") if _parent(p) == grader.pid]
    for pid in killed:
        os.kill(pid, signal.SIGKILL)
    stdout, stderr = grader.communicate(timeout=300)
    assert grader.returncode == 0, stderr
    assert killed
    with Gradebook(tmp_path / "out" / "gradebook.sqlite") as gb:
        a, b = gb.submission("ch01", "a_waits"), gb.submission("ch01", "b_after")
    for row in (a, b):
        assert row["auto_score"] == 1 and row["status"] == "ok", row["reason"]
        assert json.loads(row["sandbox"])["kernel"] == "forked from the worker's template"
