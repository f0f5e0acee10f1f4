#!/usr/bin/env python3
"""Build and test times: ``make book`` from a clean ``_build/``, the no-change rebuild, ``make test``.

    python benchmarks/bench_build.py [--no-test] [--no-ci] [--jobs N]

Runs in a scratch copy of this checkout (in the temporary folder; the files git tracks or would track, with their
modification times, plus the vendored JavaScript and its npm cache, which a checkout fetches
once), never in the checkout itself, with the checkout's virtual environment
(``make VENV=...``) and the copy's ``src`` and ``tools`` first on the import path. Printed, each with the
load average before and after: ``make book`` with no ``_build/`` (goal <= 90 s), ``make book``
again with nothing changed, and ``make test`` after the first build (goal: book + test <= 6
min), with its 15 slowest tests (pytest's ``--durations=15``); then ``bash .ci/run`` in a fresh
``git clone`` of the checkout's HEAD (its own venv and ``_build/``: goal <= 10 min), phase by phase
with the CPU seconds ``.ci/run`` prints. Wall and CPU seconds (user + system of make and its
children) for each. Not a test: the machine may be shared.
"""

from __future__ import annotations

import argparse
import os
import resource
import shutil
import subprocess
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
EXTRA = ("book/_static/vendor", ".vendor-cache")  # ignored by git, made once per checkout
BOOK_GOAL_S, BOTH_GOAL_S, CI_GOAL_S = 90.0, 360.0, 600.0


def load() -> str:
    return " ".join(f"{x:.2f}" for x in os.getloadavg())


def copy_checkout(dest: Path) -> None:
    listed = (
        subprocess.run(
            ["git", "ls-files", "-co", "--exclude-standard", "-z"], cwd=ROOT, check=True, capture_output=True
        )
        .stdout.decode()
        .split("\0")
    )
    for rel in filter(None, listed):
        src = ROOT / rel
        if src.is_file():
            (dest / rel).parent.mkdir(parents=True, exist_ok=True)
            shutil.copy2(src, dest / rel)
    # a git index, so the copy answers what tests ask git (file modes), as a clone would
    subprocess.run(["git", "init", "-q"], cwd=dest, check=True)
    subprocess.run(["git", "add", "-A"], cwd=dest, check=True)
    for rel in EXTRA:
        if (ROOT / rel).is_dir():
            shutil.copytree(ROOT / rel, dest / rel, copy_function=shutil.copy2)


def timed(cmd: list[str], cwd: Path, env: dict) -> tuple[float, float, int, str]:
    """Wall and CPU seconds (user + system of the command and its children), exit status, output."""
    t0, cpu0 = time.perf_counter(), _children_cpu_s()
    done = subprocess.run(cmd, cwd=cwd, env=env, capture_output=True, text=True)
    return time.perf_counter() - t0, _children_cpu_s() - cpu0, done.returncode, done.stdout + done.stderr


def timed_make(target: str, copy: Path, jobs: int | None) -> tuple[float, int, str]:
    venv = ROOT / ".venv"
    # the copy's library and build tools, not the checkout's (the venv installs both editable from it:
    # tools/ missing here once made the pre-executor fill the checkout's cache, and the copy's build run every page itself)
    env = {**os.environ, "PYTHONPATH": os.pathsep.join(str(copy / d) for d in ("src", "tools"))}
    cmd = ["make", target, f"VENV={venv}"] + ([f"JOBS={jobs}"] if jobs else [])
    wall, cpu, rc, output = timed(cmd, copy, env)
    steps = [line for line in output.splitlines() if line.startswith("preexecute: done")]
    print(f"  make {target}: {wall:.1f} s wall, {cpu:.1f} CPU s; " + "; ".join(steps), flush=True)
    if target == "test":
        print("\n".join(slowest(output)), flush=True)
    return wall, rc, output[-3000:]


def slowest(output: str) -> list[str]:
    """pytest's ``slowest N durations`` block (``--durations=15`` in ``make test``), as printed."""
    lines = output.splitlines()
    start = next((i for i, line in enumerate(lines) if "slowest" in line and "durations" in line), None)
    if start is None:
        return ["  (no durations block in the output)"]
    block = []
    for line in lines[start:]:
        if block and (not line.strip() or line.startswith("=")):
            break
        block.append("  " + line)
    return block


def ci_run(jobs: int | None) -> int:
    """``bash .ci/run`` in a fresh clone of HEAD: its phases as it prints them, and the whole."""
    with tempfile.TemporaryDirectory(prefix="aiinfra-bench-ci-") as tmp:
        clone = Path(tmp) / "c"
        subprocess.run(["git", "clone", "-q", str(ROOT), str(clone)], check=True)
        env = {k: v for k, v in os.environ.items() if k not in ("PYTHONPATH", "VIRTUAL_ENV")}
        env.update({"JOBS": str(jobs)} if jobs else {})
        before = load()
        wall, cpu, rc, output = timed(["bash", ".ci/run"], clone, env)
        for line in output.splitlines():
            if line.startswith("ci: "):
                print(f"  {line}")
        print("\n".join(slowest(output)), flush=True)
        row(f".ci/run, fresh clone ({cpu:.0f} CPU s)", wall, rc, f"<= {CI_GOAL_S:.0f} s", before)
        if rc:
            print(output[-3000:], file=sys.stderr)
        return rc


def _children_cpu_s() -> float:
    r = resource.getrusage(resource.RUSAGE_CHILDREN)
    return r.ru_utime + r.ru_stime


def row(what: str, seconds: float, rc: int, goal: str, before: str) -> None:
    status = "ok" if rc == 0 else f"FAILED (exit {rc})"
    print(
        f"row: {what:<44} {seconds:7.1f} s  goal {goal:<12} {status}; load {before} -> {load()}", flush=True
    )


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--no-test", action="store_true", help="time the builds only")
    ap.add_argument("--no-ci", action="store_true", help="leave out .ci/run in a fresh clone")
    ap.add_argument("--jobs", type=int, help="JOBS for make (default: the Makefile's, nproc)")
    args = ap.parse_args(argv)
    if not (ROOT / ".venv" / ".installed").is_file():
        raise SystemExit("bench_build: run `make venv` first (the benchmark reuses the checkout's venv)")
    print(f"cores: {os.cpu_count()}; a scratch copy of {ROOT}, its venv, JOBS={args.jobs or 'nproc'}")
    # not inside the checkout: the build skips every page under a folder named _build
    with tempfile.TemporaryDirectory(prefix="aiinfra-bench-build-") as tmp:
        copy = Path(tmp)
        copy_checkout(copy)
        before = load()
        book_s, rc, tail = timed_make("book", copy, args.jobs)
        row("make book, clean _build/", book_s, rc, f"<= {BOOK_GOAL_S:.0f} s", before)
        if rc:
            print(tail, file=sys.stderr)
            return 1
        before = load()
        again_s, rc, tail = timed_make("book", copy, args.jobs)
        row("make book again, nothing changed", again_s, rc, "(6 s before)", before)
        if not args.no_test:
            before = load()
            test_s, rc, tail = timed_make("test", copy, args.jobs)
            row("make test after it (its book step: no-op)", test_s, rc, "", before)
            print(f"row: {'make book + make test':<44} {book_s + test_s:7.1f} s  goal <= {BOTH_GOAL_S:.0f} s")
            if rc:
                print(tail, file=sys.stderr)
                return 1
    return ci_run(args.jobs) if not (args.no_test or args.no_ci) else 0


if __name__ == "__main__":
    sys.exit(main())
