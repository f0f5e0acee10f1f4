"""Time every interactive figure of the book as a reader drives it: one slider step, end to end.

The figures are found by walking the pages: every page of ``book/`` that is a notebook is
read as myst-nb reads it, and the pages whose code uses the figure helpers
(:mod:`aiinfra.book.interactive`, :mod:`aiinfra.book.figures`) are executed here, in this
process, cell by cell, in their own folder. Every :class:`~aiinfra.book.interactive.InteractiveFigure`
a page builds is collected, in live mode (what a Jupyter, Binder or Colab kernel shows),
with the arguments the page passes. Nothing is listed by hand.

* **live step**: each slider in turn is moved as a reader moves it: two arrow steps from its
  default (towards the far end), to its last value, to its first, to the middle, and back to
  the default. One step is timed from the slider's value change to the return of its
  observer: compute, redraw or blit, PNG encoding, and the new image and readouts set on the
  widgets (their state serialised for the front end; with no kernel here the message goes to
  ipywidgets' stand-in comm, which drops it, so the socket is not timed). Printed per figure: the median and the worst wall time, and the median CPU time of
  this process per step (the machine may be shared: CPU time above the goal is not load).
  Goal: median <= 50 ms and worst <= 100 ms for every figure; the table says whether the wall
  times meet it and whether the CPU times do (on a loaded machine only the second says much).
* **static frames** (unless ``--no-static``): the same figure built as the book build builds
  it (``mode="static"``). Printed: wall time per precomputed frame (goal <= 0.1 s), frames,
  pixel density and the exact embedded widget state (the page weight, cap 400 KB).

The machine's load average is printed before and after; the script lowers its own priority
(``nice`` 10: CPU times do not depend on it, and it leaves the CPUs to others who share the
machine). Prints a table and asserts nothing (``make bench``); ``--json PATH`` also writes the
numbers, ``--only TEXT`` (repeatable) keeps the figures whose name contains TEXT, and
``--profile`` builds each figure over the goal (in CPU time) again and prints where its steps
spend their CPU time (cProfile, the functions with the most time of their own).
"""

from __future__ import annotations

import argparse
import contextlib
import cProfile
import io
import json
import os
import platform
import pstats
import statistics
import time
from pathlib import Path

from aiinfra.book import interactive

ROOT = Path(__file__).resolve().parents[1]
LIVE_MEDIAN_GOAL_S = 0.050
LIVE_WORST_GOAL_S = 0.100
FRAME_GOAL_S = 0.100
USES_FIGURES = ("aiinfra.book.interactive", "aiinfra.book.figures")


def pages() -> list[Path]:
    from aiinfra_build.notebooks import pages as book_pages

    return book_pages()


def code_cells(page: Path) -> list[str]:
    """The page's code cells, as myst-nb reads them (what the book build executes)."""
    from myst_nb.core.config import NbParserConfig
    from myst_nb.core.read import create_nb_reader
    from myst_parser.config.main import MdParserConfig

    text = page.read_text()
    nb = create_nb_reader(str(page), MdParserConfig(), NbParserConfig(), text).read(text)
    return [c.source for c in nb.cells if c.cell_type == "code"]


@contextlib.contextmanager
def collecting(into: list):
    """Every InteractiveFigure built meanwhile is appended to ``into``."""
    init = interactive.InteractiveFigure.__init__

    def recording(self, *args, **kwargs):
        init(self, *args, **kwargs)
        into.append(self)

    interactive.InteractiveFigure.__init__ = recording
    try:
        yield
    finally:
        interactive.InteractiveFigure.__init__ = init


def page_figures(page: Path) -> list:
    """The interactive figures ``page`` builds, in live mode, in the order it builds them."""
    cells = code_cells(page)
    if not any(u in c for c in cells for u in USES_FIGURES):
        return []
    found: list = []
    namespace = {"__name__": "__main__"}
    cwd = os.getcwd()
    os.environ.pop(interactive.BUILD_ENV_VAR, None)  # live mode, as in a kernel
    try:
        os.chdir(page.parent)
        with collecting(found), contextlib.redirect_stdout(io.StringIO()):
            for source in cells:
                exec(compile(source, str(page), "exec"), namespace)
    finally:
        os.chdir(cwd)
    return [f for f in found if f.mode == "live"]


def figure_name(page: Path, figure) -> str:
    """``ch04/02 latency_timeline``: the page (chapter folder, page number) and the figure function."""
    number = page.stem.split("-", 1)[0]
    where = f"{page.parent.name}/{number if number.isdigit() else page.stem}"
    fn = getattr(figure.fn, "__name__", "figure")
    module = getattr(figure.fn, "__module__", "").rsplit(".", 1)[-1]
    return f"{where} {module if fn == 'draw' else fn}"


def moves(slider) -> list[int]:
    """Slider indices a reader visits: two arrow steps from the default, both ends, the middle, back."""
    n, d = len(slider.values), slider.default_index
    way = 1 if d + 2 < n else -1
    path = [d + way, d + 2 * way, n - 1, 0, n // 2, d]
    return [i for i in path if 0 <= i < n]


def live_times(figure) -> tuple[list[float], list[float]]:
    """Wall and CPU seconds of each slider step that changed a value (the whole observer)."""
    wall, cpu = [], []
    for s, control in zip(figure.sliders, figure._live_controls):
        for i in moves(s):
            if control.value == i:
                continue
            t0, c0 = time.perf_counter(), time.process_time()
            control.value = i  # the observer runs now, synchronously, as a kernel runs it
            wall.append(time.perf_counter() - t0)
            cpu.append(time.process_time() - c0)
    return wall, cpu


def profile_steps(page: Path, index: int, top: int = 15) -> str:
    """cProfile of the same slider steps on the page's ``index``-th figure built afresh (nothing kept from the timed run)."""
    figure = page_figures(page)[index]
    prof = cProfile.Profile()
    prof.runcall(live_times, figure)
    out = io.StringIO()
    pstats.Stats(prof, stream=out).sort_stats("tottime").print_stats(top)
    return "\n".join(line for line in out.getvalue().splitlines() if line.strip())


def static_build(figure) -> dict:
    t0 = time.perf_counter()
    f = interactive.interactive_figure(
        figure.fn,
        figure.sliders,
        title=figure.title,
        fixed=figure.fixed,
        mode="static",
        max_bytes=figure.max_bytes,
        max_frames=figure.max_frames,
        palette_colors=figure.palette_colors,
    )
    build_s = time.perf_counter() - t0
    return {
        "frames": len(f.frames),
        "density": f.density,
        "embedded_bytes": interactive.embedded_state_bytes(f),
        "live_only": list(f.live_only),
        "per_frame_s": build_s / max(len(f.frames), 1),
    }


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--json", help="also write the results to this file")
    ap.add_argument("--only", action="append", help="keep the figures whose name contains this (repeatable)")
    ap.add_argument("--no-static", action="store_true", help="time the live steps only")
    ap.add_argument("--profile", action="store_true", help="profile the steps of each figure over the goal")
    args = ap.parse_args(argv)
    os.nice(10)

    load0 = os.getloadavg()
    print(
        f"python {platform.python_version()} on {platform.machine()}, {os.cpu_count()} CPUs; "
        f"load average {load0[0]:.2f} {load0[1]:.2f} {load0[2]:.2f} (1, 5, 15 min)"
    )
    print(
        f"goals per figure: live step median <= {LIVE_MEDIAN_GOAL_S * 1e3:.0f} ms, worst <= "
        f"{LIVE_WORST_GOAL_S * 1e3:.0f} ms; static <= {FRAME_GOAL_S:.1f} s per frame, "
        f"<= {interactive.DEFAULT_MAX_BYTES / 1e3:.0f} KB per figure"
    )
    header = (
        f"{'figure':40s} {'steps':>5s} {'median':>8s} {'worst':>8s} {'cpu med':>8s} {'cpu max':>8s}  "
        f"{'wall':4s} {'cpu':4s} | {'s/frame':>7s} {'frames':>6s} {'dens':>5s} {'weight':>9s}"
    )
    print(header)
    print("-" * len(header))
    results = {}
    over_goal = []  # (name, page, index on the page) of the figures over the goal in CPU time
    for page in pages():
        for index, figure in enumerate(page_figures(page)):
            name = figure_name(page, figure)
            while name in results:
                name += "'"
            if args.only and not any(o in name for o in args.only):
                continue
            wall, cpu = live_times(figure)
            row = {
                "page": page.relative_to(ROOT).as_posix(),
                "steps": len(wall),
                "median_s": statistics.median(wall),
                "worst_s": max(wall),
                "cpu_median_s": statistics.median(cpu),
                "cpu_worst_s": max(cpu),
                "all_s": wall,
            }
            row["met"] = row["median_s"] <= LIVE_MEDIAN_GOAL_S and row["worst_s"] <= LIVE_WORST_GOAL_S
            row["cpu_met"] = (
                row["cpu_median_s"] <= LIVE_MEDIAN_GOAL_S and row["cpu_worst_s"] <= LIVE_WORST_GOAL_S
            )
            line = (
                f"{name:40s} {len(wall):5d} {row['median_s'] * 1e3:5.0f} ms {row['worst_s'] * 1e3:5.0f} ms "
                f"{row['cpu_median_s'] * 1e3:5.0f} ms {row['cpu_worst_s'] * 1e3:5.0f} ms  "
                f"{'met' if row['met'] else 'OVER':4s} {'met' if row['cpu_met'] else 'OVER':4s} | "
            )
            if not args.no_static:
                st = static_build(figure)
                row.update(st)
                line += (
                    f"{st['per_frame_s']:7.3f} {st['frames']:6d} {st['density']:5.2f} "
                    f"{st['embedded_bytes'] / 1e3:6.1f} KB{'  live-only: ' + ', '.join(st['live_only']) if st['live_only'] else ''}"
                )
            results[name] = row
            print(line, flush=True)
            if not row["cpu_met"]:
                over_goal.append((name, page, index))
    print("-" * len(header))
    meds = [r["median_s"] for r in results.values()]
    worst = max(r["worst_s"] for r in results.values())
    over = [n for n, r in results.items() if not r["met"]]
    cpu_over = [n for n, r in results.items() if not r["cpu_met"]]
    print(
        f"{len(results)} figures: median of the medians {statistics.median(meds) * 1e3:.0f} ms, largest median "
        f"{max(meds) * 1e3:.0f} ms, worst step {worst * 1e3:.0f} ms; over the goal: {', '.join(over) or 'none'}"
    )
    print(f"in CPU time (what a quiet machine would wait): over the goal: {', '.join(cpu_over) or 'none'}")
    load1 = os.getloadavg()
    print(f"load average at the end {load1[0]:.2f} {load1[1]:.2f} {load1[2]:.2f}")
    # the rows of issue 17's table (benchmarks/run_all.py collects the lines that start with "row:")
    print(
        f"row: {f'live figure step, {len(results)} figures':<44} largest median {max(meds) * 1e3:.0f} ms, "
        f"worst {worst * 1e3:.0f} ms  goal per figure median <= {LIVE_MEDIAN_GOAL_S * 1e3:.0f} ms, worst <= "
        f"{LIVE_WORST_GOAL_S * 1e3:.0f} ms {'met' if not over else f'NOT met ({len(over)} over)'} "
        f"(CPU time: {'met' if not cpu_over else f'{len(cpu_over)} over'}); load {load0[0]:.2f} -> {load1[0]:.2f}"
    )
    if not args.no_static:
        frames = [r["per_frame_s"] for r in results.values()]
        weights = [r["embedded_bytes"] for r in results.values()]
        ok = max(frames) <= FRAME_GOAL_S and max(weights) <= interactive.DEFAULT_MAX_BYTES
        print(
            f"row: {'static frame rendering':<44} {max(frames):7.3f} s per frame (worst), heaviest figure "
            f"{max(weights) / 1e3:.0f} KB  goal <= {FRAME_GOAL_S:.1f} s, <= {interactive.DEFAULT_MAX_BYTES / 1e3:.0f} KB "
            f"{'met' if ok else 'NOT met'}"
        )
    if args.profile:
        for name, page, index in over_goal:
            print(f"\n== where the steps of {name} spend their CPU time\n{profile_steps(page, index)}")
    if args.json:
        with open(args.json, "w") as fh:
            json.dump({"load_before": load0, "load_after": load1, "figures": results}, fh, indent=2)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
