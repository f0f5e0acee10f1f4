#!/usr/bin/env python3
"""Grader throughput: N copies of a solution notebook, with 1 and 2 workers, against bare nbconvert.

    python benchmarks/bench_grader.py [--count 40] [--chapter ch01] [--bare-runs 3] [--no-profile]

Prints submissions per minute for each worker count, CPU seconds per submission, the
ratio of the grader's time and CPU per submission (1 worker) to one bare
``jupyter nbconvert --to notebook --execute`` of the same notebook, and the
sandbox the grader ran with. The profile (on by default) says where a submission's CPU
seconds go: it grades three probes, each a prefix of the one after (a kernel that runs
``pass``, one that imports the exercise API, the whole solution), and reads each row's
``cpu_s`` (its worker, its sandbox and its kernel); the grader's own share is the total
less the rows' sum; each row also says how much of it the worker spent itself (nbclient,
the messages, staging), the rest being its sandbox (bubblewrap and the kernel). Targets:
>= 120 submissions/min with 2 workers on 2 cores, at <= 1.3x bare, and <= 0.5 CPU s per
submission. Not a test: timings depend on the machine and its load (the load
average is printed). CPU seconds include the sandboxed kernels (each level of
the sandbox reaps the one below it). To compare two versions, run them back to
back, the other one through ``PYTHONPATH=<its checkout>/src``.
"""

from __future__ import annotations

import argparse
import json
import os
import resource
import shutil
import sqlite3
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

REPO = Path(__file__).resolve().parent.parent
GOAL_PER_MIN = 120


def _child_cpu_s() -> float:
    ru = resource.getrusage(resource.RUSAGE_CHILDREN)
    return ru.ru_utime + ru.ru_stime


def bare_seconds(nb: Path, runs: int) -> tuple[float, float]:
    """(median wall seconds, mean CPU seconds) of one bare nbconvert execution."""
    jupyter = Path(sys.executable).with_name("jupyter")
    times = []
    cpu0 = _child_cpu_s()
    for _ in range(runs):
        with tempfile.TemporaryDirectory() as tmp:
            copy = Path(tmp) / nb.name
            shutil.copy(nb, copy)
            t0 = time.perf_counter()
            subprocess.run(
                [
                    str(jupyter),
                    "nbconvert",
                    "--to",
                    "notebook",
                    "--execute",
                    str(copy),
                    "--output",
                    str(Path(tmp) / "out.ipynb"),
                ],
                check=True,
                capture_output=True,
            )
            times.append(time.perf_counter() - t0)
    return statistics.median(times), (_child_cpu_s() - cpu0) / runs


def grader_seconds(nb: Path, count: int, workers: int, chapter: str) -> tuple[float, float]:
    """(wall seconds, CPU seconds of the grader, its workers and their kernels) for ``count`` submissions.

    Every level waits for its children (the workers reap their kernels), so this process's
    RUSAGE_CHILDREN covers them all.
    """
    with tempfile.TemporaryDirectory() as tmp:
        subs = Path(tmp) / "subs"
        subs.mkdir()
        for i in range(count):
            shutil.copy(nb, subs / f"student{i:03d}.ipynb")
        t0 = time.perf_counter()
        cpu0 = _child_cpu_s()
        done = subprocess.run(
            [
                sys.executable,
                "-m",
                "aiinfra.course.grading.cli",
                str(subs),
                "--assignment",
                chapter,
                "--workers",
                str(workers),
                "--out",
                str(Path(tmp) / "out"),
                "--quiet",
            ],
            capture_output=True,
            text=True,
        )
        elapsed = time.perf_counter() - t0
        grader_cpu = _child_cpu_s() - cpu0
        if done.returncode != 0 or f"graded {count}," not in done.stdout:
            raise SystemExit(f"grader failed:\n{done.stdout}\n{done.stderr}")
        sandbox = [line for line in done.stdout.splitlines() if line.startswith(("sandbox:", "WARNING:"))]
        if sandbox:
            print("  " + "\n  ".join(sandbox))
        return elapsed, grader_cpu


PROBES = {
    "kernel start and worker": ["pass"],
    "+ imports in the sandbox": [
        "from aiinfra.course.exercises import answer, check, configure, params, prompt"
    ],
}


def profile(nb: Path, chapter: str, copies: int = 3) -> None:
    """CPU seconds per stage of one submission, from the gradebook rows of three probes."""
    with tempfile.TemporaryDirectory() as tmp:
        subs = Path(tmp) / "subs"
        subs.mkdir()
        for i in range(copies):
            for n, sources in enumerate(PROBES.values()):
                cells = [
                    {"cell_type": "code", "source": src, "metadata": {}, "outputs": []} for src in sources
                ]
                body = {"cells": cells, "metadata": {}, "nbformat": 4, "nbformat_minor": 4}
                (subs / f"p{n}_{i}.ipynb").write_text(json.dumps(body))
            shutil.copy(nb, subs / f"p9_{i}.ipynb")
        cpu0 = _child_cpu_s()
        subprocess.run(
            [
                sys.executable,
                "-m",
                "aiinfra.course.grading.cli",
                str(subs),
                "--assignment",
                chapter,
                "--workers",
                "1",
                "--out",
                str(Path(tmp) / "out"),
                "--quiet",
            ],
            capture_output=True,
            check=True,
        )
        total = (_child_cpu_s() - cpu0) / (copies * (len(PROBES) + 1))
        db = sqlite3.connect(Path(tmp) / "out" / "gradebook.sqlite")
        rows = {
            student: (cpu, json.loads(facts)["worker_cpu_s"])
            for student, cpu, facts in db.execute("SELECT student, cpu_s, sandbox FROM submissions")
        }

    def mean(probe: str, worker: bool) -> float:  # the worker's own CPU, or its sandbox's (the rest)
        return statistics.mean(w if worker else c - w for s, (c, w) in rows.items() if s.startswith(probe))

    stages = [
        ("sandbox: bubblewrap, kernel start (a kernel that runs pass)", mean("p0", False)),
        ("worker: read, stage, start, connect, stop (for that kernel)", mean("p0", True)),
        ("sandbox: imports (the exercise API, aiinfra, numpy)", mean("p1", False) - mean("p0", False)),
        ("sandbox: the solution's cells and their messages", mean("p9", False) - mean("p1", False)),
        ("worker: the solution's cells (nbclient, messages)", mean("p9", True) - mean("p0", True)),
        (
            "grader: discovery, reads, scoring, gradebook, exports",
            total - statistics.mean(c for c, _ in rows.values()),
        ),
    ]
    print(f"profile (CPU s per submission of {nb.name}, mean of {copies}):")
    for label, cpu in stages:
        print(f"  {label:<62} {cpu:6.3f}")
    print(f"  {'sum':<62} {sum(cpu for _, cpu in stages):6.3f}")


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--count", type=int, default=40)
    ap.add_argument("--chapter", default="ch01")
    ap.add_argument("--bare-runs", type=int, default=3)
    ap.add_argument("--workers", type=int, nargs="+", default=[1, 2])
    ap.add_argument("--no-profile", action="store_true", help="leave out the CPU profile per stage")
    args = ap.parse_args()
    nb = REPO / "solutions" / f"{args.chapter}.ipynb"
    print(f"cores: {os.cpu_count()}, load average before: {os.getloadavg()[0]:.2f}")
    bare, bare_cpu = bare_seconds(nb, args.bare_runs)
    print(
        f"bare nbconvert --execute: {bare:.2f} s per notebook (median of {args.bare_runs}), "
        f"{60 / bare:.1f} per minute; {bare_cpu:.2f} CPU s each"
    )
    per_sub_1 = cpu_1 = None
    for w in args.workers:
        before = os.getloadavg()[0]
        total, cpu = grader_seconds(nb, args.count, w, args.chapter)
        per_min = args.count / total * 60
        per_sub = total / args.count
        if w == 1:
            per_sub_1, cpu_1 = per_sub, cpu / args.count
        print(
            f"aiinfra-grade, {w} worker(s): {args.count} submissions in {total:.1f} s = {per_min:.1f} per minute "
            f"({per_sub:.2f} s each; {per_sub * w / bare:.2f}x bare per worker); {cpu / args.count:.2f} CPU s each, "
            f"so {60 * (os.cpu_count() or 1) * args.count / cpu:.0f} per minute on idle cores"
        )
        print(
            f"row: {f'grader, {args.count} x {args.chapter}, {w} worker(s)':<44} {per_min:7.1f} /min "
            f"goal >= {GOAL_PER_MIN} /min (2 workers); load {before:.2f} -> {os.getloadavg()[0]:.2f}"
        )
    if per_sub_1 is not None:
        print(
            f"ratio, 1 worker vs bare: {per_sub_1 / bare:.2f}x wall (target <= 1.3x), "
            f"{cpu_1 / bare_cpu:.2f}x CPU ({cpu_1:.2f} against {bare_cpu:.2f} CPU s; goal <= 0.5 CPU s)"
        )
    if not args.no_profile:
        profile(nb, args.chapter)
    print(f"load average after: {os.getloadavg()[0]:.2f}")


if __name__ == "__main__":
    main()
