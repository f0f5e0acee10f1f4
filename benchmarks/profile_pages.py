#!/usr/bin/env python3
"""Where a page's execution time goes: kernel start-up, imports, figures, the rest.

    python benchmarks/profile_pages.py [PAGE ...] [--top 25] [--out _build/profile]

Runs each book page (all of them by default) the way the build does
(``python -m aiinfra_build.preexecute``: the notebook myst-nb reads, a fresh kernel, ``AIINFRA_BOOK_BUILD=1``),
one page at a time, with cProfile running inside the kernel for the whole page. Prints,
per page, the wall time of the kernel start, of the cells and of the shutdown, and the
kernel's CPU seconds split into

* ``imports``: time under ``importlib`` (the first import of every module);
* ``figures``: time under matplotlib's drawing and PNG encoding (Agg ``draw``, ``print_figure``,
  the frames' PNG encoding in :mod:`aiinfra.book.png`);
* ``sympy``: time under sympy outside imports;
* ``other``: everything else the cells ran;

then the functions with the most cumulative time over all pages. Not a test; the numbers
depend on the machine and its load (printed).
"""

from __future__ import annotations

import argparse
import os
import pstats
import resource
import sys
import time
from pathlib import Path

from aiinfra_build.notebooks import pages
from aiinfra_build.preexecute import read_page

ROOT = Path(__file__).resolve().parents[1]

START = """\
import cProfile as _aiinfra_cp, resource as _aiinfra_rs
_aiinfra_prof = _aiinfra_cp.Profile()
_aiinfra_prof.enable()
"""
STOP = """\
_aiinfra_prof.disable()
_aiinfra_prof.dump_stats({path!r})
_r = _aiinfra_rs.getrusage(_aiinfra_rs.RUSAGE_SELF)
print(_r.ru_utime + _r.ru_stime)
"""

# (category, predicate on a pstats function key (file, line, name)); the first match wins.
CATEGORIES = [
    ("imports", lambda f: f[0].startswith("<frozen importlib._bootstrap") and f[2] == "_find_and_load"),
    (
        "figures",
        lambda f: (
            (f[2] in ("print_figure", "savefig") and ("matplotlib" in f[0] or "aiinfra" in f[0]))
            or (f[2] in ("encode", "encode_live") and f[0].endswith("aiinfra/book/png.py"))
            or (f[2] == "draw" and f[0].endswith("backend_agg.py"))
        ),
    ),
    ("sympy", lambda f: "/sympy/" in f[0] and f[2] in ("sympify", "simplify", "solve", "lambdify", "latex")),
]


def _children_cpu() -> float:
    r = resource.getrusage(resource.RUSAGE_CHILDREN)
    return r.ru_utime + r.ru_stime


def profile_page(path: Path, out: Path) -> dict:
    import nbformat
    from nbclient import NotebookClient

    os.environ["AIINFRA_BOOK_BUILD"] = "1"
    nb = read_page(path)
    stats = out / (str(path.relative_to(ROOT)).replace("/", "__") + ".prof")
    nb.cells.insert(0, nbformat.v4.new_code_cell(START))
    nb.cells.append(nbformat.v4.new_code_cell(STOP.format(path=str(stats))))
    client = NotebookClient(
        nb, timeout=300, resources={"metadata": {"path": str(path.parent)}}, kernel_name="python3"
    )
    t0 = time.perf_counter()
    cpu0 = _children_cpu()
    with client.setup_kernel():
        t1 = time.perf_counter()
        for index, cell in enumerate(nb.cells):
            client.execute_cell(cell, index)
        t2 = time.perf_counter()
    t3 = time.perf_counter()
    kernel_cpu = _children_cpu() - cpu0
    in_cells_cpu = float(nb.cells[-1].outputs[0]["text"].split()[-1])
    return {
        "page": str(path.relative_to(ROOT)),
        "start_s": t1 - t0,
        "cells_s": t2 - t1,
        "stop_s": t3 - t2,
        "kernel_cpu_s": kernel_cpu,
        "cpu_at_end_s": in_cells_cpu,
        "stats": stats,
    }


def split(stats_path: Path) -> dict:
    st = pstats.Stats(str(stats_path))
    total = max((v[3] for v in st.stats.values()), default=0.0)  # the outermost cumulative time
    out = {"profiled": total}
    for name, pred in CATEGORIES:
        # cumulative time of the outermost matching frames only (callers that do not match themselves)
        cum = 0.0
        for func, (_cc, _nc, _tt, ct, callers) in st.stats.items():
            if pred(func) and not any(pred(c) for c in callers):
                cum += ct
        out[name] = cum
    out["other"] = max(0.0, total - sum(out[n] for n, _ in CATEGORIES))
    return out


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("pages", nargs="*", help="pages to profile (default: every notebook page)")
    ap.add_argument("--top", type=int, default=25)
    ap.add_argument("--out", type=Path, default=ROOT / "_build" / "profile")
    args = ap.parse_args(argv)
    args.out.mkdir(parents=True, exist_ok=True)
    todo = [Path(p).resolve() for p in args.pages] or pages()
    print(f"cores: {os.cpu_count()}, load average before: {' '.join(f'{x:.2f}' for x in os.getloadavg())}")
    head = f"{'page':<44} {'start':>6} {'cells':>6} {'stop':>5} {'kCPU':>6} | {'import':>6} {'figs':>6} {'sympy':>6} {'other':>6}"
    print(head)
    print("-" * len(head))
    totals: dict = {}
    all_stats = None
    for path in todo:
        r = profile_page(path, args.out)
        s = split(r["stats"])
        for k, v in list(r.items()) + list(s.items()):
            if isinstance(v, float):
                totals[k] = totals.get(k, 0.0) + v
        print(
            f"{r['page'][5:][:44]:<44} {r['start_s']:6.2f} {r['cells_s']:6.2f} {r['stop_s']:5.2f} "
            f"{r['kernel_cpu_s']:6.2f} | {s['imports']:6.2f} {s['figures']:6.2f} {s['sympy']:6.2f} {s['other']:6.2f}"
        )
        if all_stats is None:
            all_stats = pstats.Stats(str(r["stats"]))
        else:
            all_stats.add(str(r["stats"]))
    t = totals
    print("-" * len(head))
    print(
        f"{'all ' + str(len(todo)) + ' pages':<44} {t['start_s']:6.1f} {t['cells_s']:6.1f} {t['stop_s']:5.1f} "
        f"{t['kernel_cpu_s']:6.1f} | {t['imports']:6.1f} {t['figures']:6.1f} {t['sympy']:6.1f} {t['other']:6.1f}"
    )
    print(
        "start/cells/stop: wall s; kCPU: the kernel's CPU s (start-up included); "
        "import/figs/sympy/other: profiled s inside the cells"
    )
    print(f"load average after: {' '.join(f'{x:.2f}' for x in os.getloadavg())}\n")
    if all_stats is not None:
        all_stats.sort_stats("cumulative").print_stats(args.top)
    return 0


if __name__ == "__main__":
    sys.exit(main())
