"""``aiinfra-grade``: grade a folder of submitted notebooks into a gradebook and export it.

    aiinfra-grade SUBMISSIONS --assignment ch01 [--variants --variant-key KEY] [--workers 2] [--timeout 120]
    aiinfra-grade SUBMISSIONS --assignment handout/exercises/ch01.ipynb   # chapter + variants from the hand-out
    aiinfra-grade SUBMISSIONS --assignment ch01 --export-only              # re-export, grade nothing
    aiinfra-grade SUBMISSIONS --assignment ch01 --manual alice 1-1 g 1.5   # hand-graded points, then re-export

SUBMISSIONS holds either one notebook per student (``alice.ipynb``) or one
folder per student (``alice/ch01.ipynb`` plus any files it reads). The name
is the student id: it picks the variant parameters, whatever id the notebook
itself sets. Every entry gets exactly one gradebook row, with a reason when it
cannot be graded. Output (``--out``, default ``./grades``): ``gradebook.sqlite``,
``grades.csv``, ``feedback/<student>.md``, ``gradescope/<student>/results.json``.
Each kernel runs in the sandbox of :mod:`aiinfra.course.grading.sandbox`; the first
lines on stderr and the last lines of the summary say what it guarantees.
"""

from __future__ import annotations

import argparse
import contextlib
import hashlib
import json
import multiprocessing.connection
import os
import signal
import sys
import time
from collections import deque
from pathlib import Path
from typing import TypedDict

from ..exercises.variants import read_key
from . import bounded, export
from .extract import Extraction, kill_uid, new_fallback_root
from .gradebook import Gradebook, Lock
from .sandbox import SYSTEM_DIRS, UID_BASE, Limits, make_plan
from .score import Assignment, score_submission
from .submissions import content_hash, discover, read_submission
from .template import Template


class _Counts(TypedDict):
    graded: int
    skipped: int
    failed: int


class Counts(_Counts, total=False):
    """What a grading run did: submissions graded, skipped unchanged, failed; hand grades it dropped."""

    hand_grades_lost: list[str]


RUN_DIR = ".aiinfra-run"


def load_assignment(spec: str, variants: bool | None, key_file: Path | None = None) -> Assignment:
    """``ch01`` or the path of the instructor's hand-out notebook (its metadata names chapter and variants).

    With variants on, ``key_file`` is the instructor's variant key (outside the hand-out and the
    submissions); the grader recomputes every student's parameters from it.
    """
    chapter, on = spec, bool(variants)
    if spec.endswith(".ipynb"):
        path = Path(spec)
        if not path.is_file():
            raise ValueError(f"assignment notebook {spec!r} does not exist")
        nb = bounded.loads(path.read_bytes(), max_bytes=50 * 2**20, max_depth=64, what=spec)
        meta = nb.get("metadata", {}).get("aiinfra", {}) if isinstance(nb, dict) else {}
        if not isinstance(meta, dict) or "chapter" not in meta:
            raise ValueError(
                f"{spec} has no metadata.aiinfra.chapter: build it with python -m aiinfra_build.build_exercises"
            )
        chapter, on = meta["chapter"], bool(meta.get("variants")) if variants is None else variants
    if not on:
        return Assignment(chapter, False)
    if key_file is None:
        raise ValueError(
            "per-student variants need the instructor's key: --variant-key FILE "
            "(the file given to python -m aiinfra_build.build_exercises --variants --key FILE)"
        )
    if str(Path(key_file).resolve().parent) in SYSTEM_DIRS:
        raise ValueError(f"--variant-key {key_file}: keep the key outside {', '.join(SYSTEM_DIRS)}")
    return Assignment(chapter, True, read_key(key_file))


class Progress:
    def __init__(self, total: int, enabled: bool = True, stream=sys.stderr):
        self.total, self.done, self.enabled, self.stream = total, 0, enabled, stream
        self.tty = getattr(stream, "isatty", lambda: False)()
        self.t0 = time.monotonic()

    def step(self, label: str) -> None:
        self.done += 1
        if not self.enabled:
            return
        width = 30
        filled = int(width * self.done / max(self.total, 1))
        rate = self.done / max(time.monotonic() - self.t0, 1e-9) * 60
        line = (
            f"[{'#' * filled}{'.' * (width - filled)}] {self.done}/{self.total} {rate:5.1f}/min  {label[:50]}"
        )
        line = bounded.terminal_text(line)
        self.stream.write(("\r" + line.ljust(110)) if self.tty else line + "\n")
        if self.tty and self.done == self.total:
            self.stream.write("\n")
        self.stream.flush()


def _limits(args) -> Limits:
    return Limits(
        cell_timeout_s=args.cell_timeout,
        total_timeout_s=args.timeout,
        memory_bytes=int(args.memory_mb * 2**20),
        output_bytes=int(args.output_kb * 1024),
        disk_bytes=int(args.disk_mb * 2**20),
        max_processes=args.max_processes,
        isolate_network=not args.allow_network,
    )


# --- leftovers of a grader that was killed -----------------------------------------------------


def prepare_run_dir(run_dir: Path) -> list[str]:
    """Clean what a killed grader left in ``run_dir`` (we hold its lock), then start afresh."""
    cleaned = []
    owner = run_dir / "owner.json"
    if run_dir.exists():
        try:
            info = bounded.loads(owner.read_bytes(), max_bytes=2**20, max_depth=4, what="owner.json")
        except (OSError, ValueError):
            info = {}
        if os.geteuid() == 0:
            for uid in info.get("uids", []):
                if isinstance(uid, int) and UID_BASE <= uid < UID_BASE + 64 * 100_000:
                    kill_uid(uid)
        fallback = info.get("fallback_root")
        if isinstance(fallback, str) and Path(fallback).name.startswith("aiinfra-grade-"):
            bounded.remove_tree(fallback)
            cleaned.append(fallback)
        bounded.remove_tree(str(run_dir))
        cleaned.append(str(run_dir))
    run_dir.mkdir(mode=0o700, parents=True)
    return cleaned


def _write_owner(run_dir: Path, plan, fallback_root: str | None, workers: int) -> None:
    uids = [plan.uid(s) for s in range(workers)] if plan.drop_uid else []
    (run_dir / "owner.json").write_text(
        json.dumps({"pid": os.getpid(), "uids": uids, "fallback_root": fallback_root})
    )


# --- grading -------------------------------------------------------------------------------------


def _problem_hash(sub: dict) -> str:
    return hashlib.sha256(b"aiinfra-problem/" + sub["raw_name"] + (sub["problem"] or "").encode()).hexdigest()


def grade(
    subs: list[dict],
    assignment: Assignment,
    gb: Gradebook,
    plan,
    run_dir: Path,
    workers: int,
    progress: Progress,
    force: bool = False,
    fallback_root: str | None = None,
) -> Counts:
    """Grade every submission that is new or changed; returns counts. One submission's failure is its own."""
    fp = assignment.fingerprint()
    todo: deque = deque()
    skipped = 0
    for sub in subs:
        try:  # a first read, for "unchanged?" only: the worker reads, hashes and grades its own copy
            sub["sha256"] = content_hash(
                sub, None if sub["problem"] else read_submission(sub, plan.limits)[1]
            )
        except (OSError, ValueError) as exc:
            why = exc.strerror if isinstance(exc, OSError) and exc.strerror else str(exc)
            sub["problem"] = f"the submission cannot be read ({bounded.clean_text(why)})"
            sub["sha256"] = _problem_hash(sub)
        if not force and gb.is_current(assignment.chapter, sub["student"], sub["sha256"], fp):
            skipped += 1
            progress.step(f"{sub['student']}: unchanged, skipped")
            continue
        todo.append(sub)

    counts: Counts = {"graded": 0, "skipped": skipped, "failed": 0, "hand_grades_lost": []}

    def finish(sub, extracted):
        try:
            score = score_submission(extracted, assignment, sub["student"])
            sha256 = extracted.get("sha256") if isinstance(extracted.get("sha256"), str) else sub["sha256"]
            for line in gb.record(assignment.chapter, sub["path"], sha256, fp, score, extracted):
                counts["hand_grades_lost"].append(f"{sub['student']} {line}")
            label = f"{score.auto_score:g}/{score.auto_max:g} ({score.status})"
        except Exception as exc:  # this submission's error, never the batch's
            counts["failed"] += 1
            why = f"the grader failed on this submission: {type(exc).__name__}: {bounded.clean_text(str(exc))[:200]}"
            try:
                score = score_submission({"status": "error", "errors": [why]}, assignment, sub["student"])
                counts["hand_grades_lost"] += [
                    f"{sub['student']} {line}"
                    for line in gb.record(assignment.chapter, sub["path"], "", fp, score, {})
                ]
            except Exception as exc2:
                print(f"aiinfra-grade: could not record {sub['student']!r}: {exc2}", file=sys.stderr)
            label = why
        counts["graded"] += 1
        progress.step(f"{sub['student']}: {label}")

    running: dict[int, tuple[dict, Extraction]] = {}
    free = list(range(workers))
    seq = 0
    templates: dict[int, Template | None] = {}

    def template(slot: int) -> Template | None:
        """The slot's template, started (again, should it have died) before its next submission."""
        if not plan.templates or fallback_root is None or templates.get(slot, ...) is None:
            return None
        tpl = templates[slot] = templates.get(slot) or Template(plan, slot, str(run_dir), fallback_root)
        if not tpl.alive():
            why = tpl.start()
            if why is not None:
                templates[slot] = None
                print(
                    f"aiinfra-grade: worker {slot} starts a fresh sandbox per kernel: its template "
                    f"did not start ({bounded.terminal_text(why)})",
                    file=sys.stderr,
                )
                return None
        return tpl

    try:
        while todo or running:
            while todo and free:
                sub = todo.popleft()
                if sub["problem"]:
                    finish(sub, {"status": "invalid", "errors": [sub["problem"]]})
                    continue
                slot = free.pop(0)
                seq += 1
                job = None
                try:
                    job = Extraction(
                        sub,
                        sub["student"],
                        assignment.variants,
                        assignment.sheet(sub["student"]),
                        plan,
                        str(run_dir),
                        slot,
                        seq,
                        fallback_root,
                        template(slot),
                    )
                    with signals_held():  # registered before it exists, so an interrupt always finds it
                        running[slot] = (sub, job)
                        job.start()
                except Exception as exc:
                    running.pop(slot, None)
                    if job is not None:
                        job.abort()
                    free.append(slot)
                    finish(
                        sub, {"status": "error", "errors": [f"the submission could not be started: {exc}"]}
                    )
                    continue
            if not running:
                continue
            waitables = [w for _, job in running.values() for w in job.waitables]
            soonest = min(job.deadline for _, job in running.values())
            multiprocessing.connection.wait(waitables, timeout=max(0.05, soonest - time.monotonic()))
            for slot in list(running):
                sub, job = running[slot]
                if job.poll():
                    try:
                        extracted = job.finish()
                    except Exception as exc:
                        extracted = {
                            "status": "error",
                            "errors": [f"the grader worker could not be collected: {exc}"],
                        }
                    del running[slot]
                    free.append(slot)
                    finish(sub, extracted)
    finally:  # an interrupt, or any error: no worker (and no template) outlives this call
        with signals_held():
            for _, job in running.values():
                job.abort()
            for tpl in templates.values():
                if tpl is not None:
                    tpl.close()
    return counts


@contextlib.contextmanager
def signals_held():
    """Ctrl-C and SIGTERM wait until the block ends (then raise there), so no step is left half done."""
    held = {signal.SIGINT, signal.SIGTERM}
    old = signal.pthread_sigmask(signal.SIG_BLOCK, held)
    try:
        yield
    finally:
        signal.pthread_sigmask(signal.SIG_SETMASK, old)


def _interrupt(signum, frame):
    raise KeyboardInterrupt(f"signal {signum}")


def export_all(gb: Gradebook, assignment: Assignment, out: Path) -> dict:
    return {
        "csv": export.write_csv(gb, assignment.chapter, out / "grades.csv"),
        "feedback": export.write_feedback(gb, assignment.chapter, out / "feedback"),
        "gradescope": export.write_gradescope(gb, assignment.chapter, out / "gradescope"),
    }


def summary_table(gb: Gradebook, assignment: Assignment) -> str:
    rows = [gb.submission(assignment.chapter, s) for s in gb.students(assignment.chapter)]
    head = f"{'student':<20} {'score':>7} {'max':>5} {'manual':>6}  {'status':<8} note"
    lines = [head, "-" * len(head)]
    for r in rows:
        note = r["reason"].split("; ", 1)[-1] if r["status"] != "ok" else r["reason"]
        name, status, note = (bounded.terminal_text(t) for t in (r["student"], r["status"], note))
        lines.append(
            f"{name[:20]:<20} {r['score']:>7.4g} {r['max_score']:>5g} {r['manual_pending']:>6g}  "
            f"{status:<8} {note[:70]}"
        )
    if rows:
        mean = sum(r["score"] for r in rows) / len(rows)
        lines.append("-" * len(head))
        lines.append(f"{len(rows)} submissions, mean score {mean:.3g}")
    return "\n".join(lines)


def _banner(lines: list[str]) -> str:
    bar = "=" * 78
    return "\n".join([bar, *lines, bar])


def build_parser() -> argparse.ArgumentParser:
    ap = argparse.ArgumentParser(prog="aiinfra-grade", description=__doc__.splitlines()[0])
    ap.add_argument("submissions", type=Path, help="folder of student notebooks or student folders")
    ap.add_argument("--assignment", required=True, help="chapter id (ch01) or the hand-out notebook")
    v = ap.add_mutually_exclusive_group()
    v.add_argument(
        "--variants",
        dest="variants",
        action="store_true",
        default=None,
        help="per-student parameters on (default: from the hand-out notebook, else off)",
    )
    v.add_argument("--no-variants", dest="variants", action="store_false")
    ap.add_argument(
        "--variant-key",
        type=Path,
        help="the instructor's secret variant key file (needed with variants; never shown to a kernel)",
    )
    ap.add_argument("--workers", type=int, default=2, help="submissions run at once (default 2)")
    ap.add_argument("--cell-timeout", type=float, default=30.0, help="seconds per cell (default 30)")
    ap.add_argument("--timeout", type=float, default=120.0, help="seconds per submission (default 120)")
    ap.add_argument(
        "--memory-mb",
        type=float,
        default=2048.0,
        help="memory of a submission, all its processes together, in MiB (default 2048)",
    )
    ap.add_argument("--disk-mb", type=float, default=256.0, help="its writable /tmp, in MiB (default 256)")
    ap.add_argument("--max-processes", type=int, default=128, help="its processes and threads (default 128)")
    ap.add_argument("--output-kb", type=float, default=1024.0, help="cell output kept per submission, KiB")
    ap.add_argument("--allow-network", action="store_true", help="do not isolate the kernel from the network")
    ap.add_argument(
        "--sandbox",
        choices=("auto", "bwrap", "none"),
        default="auto",
        help="auto: bubblewrap where it works, else a loud fallback; bwrap: refuse without it; "
        "none: no namespaces (loudly)",
    )
    ap.add_argument("--bwrap", help="path of the bwrap program (default: found on PATH)")
    ap.add_argument(
        "--no-templates",
        dest="templates",
        action="store_false",
        help="start every kernel in a fresh sandbox (default, as root with bubblewrap: fork each "
        "from a template per worker, imported once)",
    )
    ap.add_argument("--out", type=Path, default=Path("grades"), help="output folder (default ./grades)")
    ap.add_argument("--gradebook", type=Path, help="SQLite file (default OUT/gradebook.sqlite)")
    ap.add_argument("--force", action="store_true", help="re-grade unchanged submissions too")
    ap.add_argument("--wait", action="store_true", help="if another grader uses the gradebook, wait for it")
    ap.add_argument("--export-only", action="store_true", help="only rewrite the exports from the gradebook")
    ap.add_argument(
        "--manual",
        nargs=4,
        action="append",
        metavar=("STUDENT", "EXERCISE", "PART", "POINTS"),
        help="record hand-graded points of a free-response part (implies --export-only)",
    )
    ap.add_argument("--quiet", action="store_true", help="no progress bar")
    return ap


def main(argv=None) -> int:
    args = build_parser().parse_args(argv)
    try:
        assignment = load_assignment(args.assignment, args.variants, args.variant_key)
        if args.workers < 1 or args.workers > 64:
            raise ValueError(f"--workers must lie in [1, 64], got {args.workers}")
        limits = _limits(args)
        if not args.submissions.is_dir():
            raise ValueError(f"SUBMISSIONS must be a folder, got {str(args.submissions)!r}")
    except ValueError as exc:
        print(f"aiinfra-grade: {exc}", file=sys.stderr)
        return 2
    out = args.out
    gb_path = args.gradebook or out / "gradebook.sqlite"
    signal.signal(signal.SIGTERM, _interrupt)
    locks = contextlib.ExitStack()
    try:  # the output folder's run folder first, then the gradebook: one order, so two graders never deadlock
        locks.enter_context(Lock(out / RUN_DIR, wait=args.wait, what=f"the output folder {out}"))
        locks.enter_context(Lock(gb_path, wait=args.wait, what=f"the gradebook {gb_path}"))
    except RuntimeError as exc:
        locks.close()
        print(f"aiinfra-grade: {exc}", file=sys.stderr)
        return 75
    try:
        with locks:
            return _run(args, assignment, limits, out, gb_path)
    except KeyboardInterrupt:
        print("aiinfra-grade: interrupted; nothing of this run is left behind", file=sys.stderr)
        return 130


def _run(args, assignment: Assignment, limits: Limits, out: Path, gb_path: Path) -> int:
    t0 = time.monotonic()
    counts: Counts = {"graded": 0, "skipped": 0, "failed": 0}
    plan = None
    grading = not args.export_only and not args.manual
    with Gradebook(gb_path) as gb:
        for student, exercise, part, points in args.manual or []:
            try:
                gb.set_manual(assignment.chapter, student, exercise, part, float(points))
            except ValueError as exc:
                print(f"aiinfra-grade: {exc}", file=sys.stderr)
                return 2
        if grading:
            run_dir = out.resolve() / RUN_DIR
            fallback_root = None
            try:
                with signals_held():
                    cleaned = prepare_run_dir(run_dir)
                for c in cleaned:
                    print(
                        f"aiinfra-grade: cleaned up after an earlier run that did not finish: {c}",
                        file=sys.stderr,
                    )
                with signals_held():  # it makes control groups: an interrupt waits for ``plan`` to hold them
                    plan = make_plan(
                        limits,
                        [str(args.submissions), str(out), str(gb_path.parent), str(run_dir)]
                        + ([str(args.variant_key.resolve().parent)] if assignment.variants else []),
                        str(run_dir),
                        args.workers,
                        args.sandbox,
                        args.bwrap,
                        args.templates,
                    )
                for stale in plan.cgroups.cleaned if plan.cgroups else []:
                    print(
                        f"aiinfra-grade: removed the control group of a grader that did not finish: {stale}",
                        file=sys.stderr,
                    )
                with signals_held():  # sockets (their paths show in /proc/net/unix), and more without bwrap
                    fallback_root = new_fallback_root()
                    _write_owner(run_dir, plan, fallback_root, args.workers)
                print(
                    _banner(plan.summary_lines()) if plan.warnings else plan.summary_lines()[0],
                    file=sys.stderr,
                )
                subs, passed = discover(args.submissions, assignment.chapter)
                for name in passed:
                    print(f"passed over {name!r} (operating-system litter)", file=sys.stderr)
                progress = Progress(len(subs), enabled=not args.quiet)
                counts = grade(
                    subs,
                    assignment,
                    gb,
                    plan,
                    run_dir,
                    args.workers,
                    progress,
                    force=args.force,
                    fallback_root=fallback_root,
                )
            except ValueError as exc:
                print(f"aiinfra-grade: {exc}", file=sys.stderr)
                return 2
            finally:
                with signals_held():
                    if plan is not None and plan.cgroups:
                        plan.cgroups.close()
                    if fallback_root:
                        bounded.remove_tree(fallback_root)
                    bounded.remove_tree(str(run_dir))
        files = export_all(gb, assignment, out)
        print(summary_table(gb, assignment))
        for line in counts.get("hand_grades_lost", []):
            print(f"hand grade no longer applies (dropped): {bounded.terminal_text(line)}")
    elapsed = time.monotonic() - t0
    print(
        f"graded {counts['graded']}, skipped {counts['skipped']} unchanged, in {elapsed:.1f} s; "
        f"wrote {files['csv']}, {len(files['feedback'])} feedback files, "
        f"{len(files['gradescope'])} Gradescope results"
    )
    if plan is not None:
        print("\n".join(plan.summary_lines()))
    return 0


if __name__ == "__main__":
    sys.exit(main())
