#!/usr/bin/env python3
"""``make bench``: run every ``benchmarks/bench_*.py``, then print the rows of issue 17's table.

    python benchmarks/run_all.py [--quick] [NAME ...]

Each script runs in its own interpreter, its output shown as it comes, between two lines
giving the machine's load average. At the end, the summary: every ``row:`` line the
scripts printed (what, measured, goal, load), and the whole output of a script that prints
none (its own table). ``--quick`` leaves out the build benchmark (it copies the checkout and
runs ``make book`` twice and ``make test``, then ``.ci/run`` in a fresh clone: many minutes). Asserts nothing.
"""

from __future__ import annotations

import argparse
import os
import subprocess
import sys
import time
from pathlib import Path

HERE = Path(__file__).resolve().parent
ARGS = {"bench_grader.py": ["--count", "20"]}  # the row: 20 copies of solutions/ch01.ipynb
LAST = "bench_build.py"  # longest; and it needs the CPUs to itself


def load() -> str:
    return " ".join(f"{x:.2f}" for x in os.getloadavg())


def run(script: Path) -> tuple[int, list[str]]:
    print(f"== {script.name}  (load average {load()})", flush=True)
    t0 = time.perf_counter()
    proc = subprocess.Popen(
        [sys.executable, str(script), *ARGS.get(script.name, [])],
        stdout=subprocess.PIPE,
        stderr=subprocess.STDOUT,
        text=True,
    )
    lines = []
    for line in proc.stdout:
        print(line, end="", flush=True)
        lines.append(line.rstrip("\n"))
    rc = proc.wait()
    print(
        f"== {script.name}: exit {rc} in {time.perf_counter() - t0:.0f} s  (load average {load()})\n",
        flush=True,
    )
    return rc, lines


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--quick", action="store_true", help=f"leave out {LAST}")
    ap.add_argument("names", nargs="*", help="run only these scripts (e.g. bench_grader)")
    args = ap.parse_args(argv)
    scripts = sorted(HERE.glob("bench_*.py"), key=lambda p: (p.name == LAST, p.name))
    if args.names:
        scripts = [p for p in scripts if p.stem in args.names or p.name in args.names]
    if args.quick:
        scripts = [p for p in scripts if p.name != LAST]
    print(f"{os.cpu_count()} cores; load average {load()}; {time.strftime('%Y-%m-%d %H:%M:%S %Z')}\n")
    summary, failed = [], []
    for script in scripts:
        rc, lines = run(script)
        rows = [line for line in lines if line.startswith("row:")]
        summary += rows or [f"{script.name}:"] + [f"  {line}" for line in lines]
        if rc:
            failed.append(script.name)
    print("=" * 100)
    print("issue 17's table, as measured now")
    print("=" * 100)
    for line in summary:
        print(line)
    print(f"load average at the end: {load()}")
    if failed:
        print(f"FAILED: {', '.join(failed)}")
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main())
