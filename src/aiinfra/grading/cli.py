"""``aiinfra-grade``: grade a folder of submitted notebooks into a gradebook and export it.

    aiinfra-grade SUBMISSIONS --assignment ch01 [--variants] [--workers 2] [--cell-timeout 30] [--timeout 120]
    aiinfra-grade SUBMISSIONS --assignment handout/exercises/ch01.ipynb   # chapter + variants from the hand-out
    aiinfra-grade SUBMISSIONS --assignment ch01 --export-only              # re-export, grade nothing
    aiinfra-grade SUBMISSIONS --assignment ch01 --manual alice 1-1 g 1.5   # hand-graded points, then re-export

SUBMISSIONS holds either one notebook per student (``alice.ipynb``) or one
folder per student (``alice/ch01.ipynb`` plus any files it reads). The name
is the student id: it picks the variant parameters, whatever id the notebook
itself sets. Output (``--out``, default ``./grades``): ``gradebook.sqlite``,
``grades.csv``, ``feedback/<student>.md``, ``gradescope/<student>/results.json``.
"""
from __future__ import annotations

import argparse
import hashlib
import json
import multiprocessing.connection
import sys
import time
from collections import deque
from pathlib import Path

from aiinfra.exercises.variants import student_id as _valid_student_id
from aiinfra.grading import export
from aiinfra.grading.extract import Extraction, Limits
from aiinfra.grading.gradebook import Gradebook
from aiinfra.grading.score import Assignment, score_submission

IGNORED = ("__MACOSX",)


def discover(folder: Path, chapter: str) -> tuple[list[dict], list[str]]:
    """Submissions in ``folder``: dicts with student, notebook (or None), whole_folder, problem."""
    subs, skipped = [], []
    for entry in sorted(folder.iterdir()):
        if entry.name.startswith(".") or entry.name in IGNORED:
            continue
        student = entry.stem if entry.is_file() else entry.name
        try:
            student = _valid_student_id(student)
        except ValueError:
            skipped.append(f"{entry.name}: not a usable student id")
            continue
        if entry.is_symlink():
            skipped.append(f"{entry.name}: a symbolic link")
            continue
        if entry.is_file() and entry.suffix != ".ipynb":
            skipped.append(f"{entry.name}: not an .ipynb file")
            continue
        if any(s["student"] == student for s in subs):
            skipped.append(f"{entry.name}: a second submission for student {student!r}")
            continue
        if entry.is_file():
            subs.append({"student": student, "notebook": entry, "whole_folder": False, "problem": None})
        elif entry.is_dir():
            nbs = sorted(p for p in entry.iterdir() if p.suffix == ".ipynb" and p.is_file()
                         and not p.is_symlink() and not p.name.startswith("."))
            preferred = [p for p in nbs if p.stem == chapter]
            nb = (preferred or nbs or [None])[0]
            problem = None if nb else "no .ipynb file in the submission folder"
            subs.append({"student": student, "notebook": nb, "whole_folder": True, "problem": problem,
                         "folder": entry})
    return subs, skipped


def content_hash(sub: dict) -> str:
    h = hashlib.sha256()
    if sub["whole_folder"]:
        for p in sorted(sub["folder"].rglob("*")):
            if p.is_file() and not p.is_symlink():
                h.update(str(p.relative_to(sub["folder"])).encode() + b"\0")
                with open(p, "rb") as fh:
                    h.update(hashlib.sha256(fh.read(64 * 2**20)).digest())
    elif sub["notebook"] is not None:
        h.update(sub["notebook"].read_bytes())
    return h.hexdigest()


def load_assignment(spec: str, variants: bool | None) -> Assignment:
    """``ch01`` or the path of the instructor's hand-out notebook (its metadata names chapter and variants)."""
    path = Path(spec)
    if spec.endswith(".ipynb"):
        if not path.is_file():
            raise ValueError(f"assignment notebook {spec!r} does not exist")
        meta = json.loads(path.read_text(encoding="utf-8")).get("metadata", {}).get("aiinfra", {})
        if not isinstance(meta, dict) or "chapter" not in meta:
            raise ValueError(f"{spec} has no metadata.aiinfra.chapter: build it with tools/build_exercises.py")
        return Assignment(meta["chapter"], bool(meta.get("variants")) if variants is None else variants)
    return Assignment(spec, bool(variants))


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
        line = f"[{'#' * filled}{'.' * (width - filled)}] {self.done}/{self.total} {rate:5.1f}/min  {label[:50]}"
        self.stream.write(("\r" + line.ljust(110)) if self.tty else line + "\n")
        if self.tty and self.done == self.total:
            self.stream.write("\n")
        self.stream.flush()


def _limits(args) -> Limits:
    return Limits(cell_timeout_s=args.cell_timeout, total_timeout_s=args.timeout,
                  memory_bytes=int(args.memory_mb * 2**20), output_bytes=int(args.output_kb * 1024),
                  isolate_network=not args.allow_network)


def grade(subs: list[dict], assignment: Assignment, gb: Gradebook, limits: Limits, workers: int,
          progress: Progress, force: bool = False) -> dict:
    """Grade every submission that is new or changed; returns counts."""
    fp = assignment.fingerprint()
    todo = deque()
    skipped = 0
    for sub in subs:
        sub["sha256"] = content_hash(sub)
        if not force and gb.is_current(assignment.chapter, sub["student"], sub["sha256"], fp):
            skipped += 1
            progress.step(f"{sub['student']}: unchanged, skipped")
            continue
        todo.append(sub)

    def finish(sub, extracted):
        score = score_submission(extracted, assignment, sub["student"])
        path = str(sub["notebook"] or sub.get("folder"))
        gb.record(assignment.chapter, path, sub["sha256"], fp, score, extracted)
        progress.step(f"{sub['student']}: {score.auto_score:g}/{score.auto_max:g} ({score.status})")

    running: dict[int, tuple[dict, Extraction]] = {}
    free = list(range(workers))
    graded = 0
    while todo or running:
        while todo and free:
            sub = todo.popleft()
            if sub["problem"]:
                finish(sub, {"status": "invalid", "errors": [sub["problem"]]})
                graded += 1
                continue
            slot = free.pop(0)
            job = Extraction(sub["notebook"], sub["student"], assignment.variants, limits, slot, sub["whole_folder"])
            try:
                job.start()
            except OSError as exc:
                free.append(slot)
                finish(sub, {"status": "invalid", "errors": [f"the submission could not be copied: {exc}"]})
                graded += 1
                continue
            running[slot] = (sub, job)
        if not running:
            continue
        waitables = [w for _, job in running.values() for w in job.waitables]
        soonest = min(job.deadline for _, job in running.values())
        multiprocessing.connection.wait(waitables, timeout=max(0.05, soonest - time.monotonic()))
        for slot in list(running):
            sub, job = running[slot]
            if job.poll():
                del running[slot]
                free.append(slot)
                finish(sub, job.finish())
                graded += 1
    return {"graded": graded, "skipped": skipped}


def export_all(gb: Gradebook, assignment: Assignment, out: Path) -> dict:
    return {"csv": export.write_csv(gb, assignment.chapter, out / "grades.csv"),
            "feedback": export.write_feedback(gb, assignment.chapter, out / "feedback"),
            "gradescope": export.write_gradescope(gb, assignment.chapter, out / "gradescope")}


def summary_table(gb: Gradebook, assignment: Assignment) -> str:
    rows = [gb.submission(assignment.chapter, s) for s in gb.students(assignment.chapter)]
    head = f"{'student':<20} {'score':>7} {'max':>5} {'manual':>6}  {'status':<8} note"
    lines = [head, "-" * len(head)]
    for r in rows:
        note = r["reason"].split("; ", 1)[-1] if r["status"] != "ok" else r["reason"]
        lines.append(f"{r['student'][:20]:<20} {r['score']:>7.4g} {r['max_score']:>5g} {r['manual_pending']:>6g}  "
                     f"{r['status']:<8} {note[:70]}")
    if rows:
        mean = sum(r["score"] for r in rows) / len(rows)
        lines.append("-" * len(head))
        lines.append(f"{len(rows)} submissions, mean score {mean:.3g}")
    return "\n".join(lines)


def build_parser() -> argparse.ArgumentParser:
    ap = argparse.ArgumentParser(prog="aiinfra-grade", description=__doc__.splitlines()[0])
    ap.add_argument("submissions", type=Path, help="folder of student notebooks or student folders")
    ap.add_argument("--assignment", required=True, help="chapter id (ch01) or the hand-out notebook")
    v = ap.add_mutually_exclusive_group()
    v.add_argument("--variants", dest="variants", action="store_true", default=None,
                   help="per-student parameters on (default: from the hand-out notebook, else off)")
    v.add_argument("--no-variants", dest="variants", action="store_false")
    ap.add_argument("--workers", type=int, default=2, help="submissions run at once (default 2)")
    ap.add_argument("--cell-timeout", type=float, default=30.0, help="seconds per cell (default 30)")
    ap.add_argument("--timeout", type=float, default=120.0, help="seconds per submission (default 120)")
    ap.add_argument("--memory-mb", type=float, default=2048.0, help="kernel address-space limit in MiB (default 2048)")
    ap.add_argument("--output-kb", type=float, default=1024.0, help="cell output kept per submission, KiB")
    ap.add_argument("--allow-network", action="store_true", help="do not isolate the kernel from the network")
    ap.add_argument("--out", type=Path, default=Path("grades"), help="output folder (default ./grades)")
    ap.add_argument("--gradebook", type=Path, help="SQLite file (default OUT/gradebook.sqlite)")
    ap.add_argument("--force", action="store_true", help="re-grade unchanged submissions too")
    ap.add_argument("--export-only", action="store_true", help="only rewrite the exports from the gradebook")
    ap.add_argument("--manual", nargs=4, action="append", metavar=("STUDENT", "EXERCISE", "PART", "POINTS"),
                    help="record hand-graded points of a free-response part (implies --export-only)")
    ap.add_argument("--quiet", action="store_true", help="no progress bar")
    return ap


def main(argv=None) -> int:
    args = build_parser().parse_args(argv)
    try:
        assignment = load_assignment(args.assignment, args.variants)
        if args.workers < 1 or args.workers > 64:
            raise ValueError(f"--workers must lie in [1, 64], got {args.workers}")
        limits = _limits(args)
        if not args.submissions.is_dir():
            raise ValueError(f"SUBMISSIONS must be a folder, got {str(args.submissions)!r}")
    except ValueError as exc:
        print(f"aiinfra-grade: {exc}", file=sys.stderr)
        return 2
    out = args.out
    t0 = time.monotonic()
    with Gradebook(args.gradebook or out / "gradebook.sqlite") as gb:
        counts = {"graded": 0, "skipped": 0}
        for student, exercise, part, points in args.manual or []:
            try:
                gb.set_manual(assignment.chapter, student, exercise, part, float(points))
            except ValueError as exc:
                print(f"aiinfra-grade: {exc}", file=sys.stderr)
                return 2
        if not args.export_only and not args.manual:
            subs, skipped = discover(args.submissions, assignment.chapter)
            for s in skipped:
                print(f"ignored {s}", file=sys.stderr)
            progress = Progress(len(subs), enabled=not args.quiet)
            counts = grade(subs, assignment, gb, limits, args.workers, progress, force=args.force)
        files = export_all(gb, assignment, out)
        print(summary_table(gb, assignment))
    elapsed = time.monotonic() - t0
    print(f"graded {counts['graded']}, skipped {counts['skipped']} unchanged, in {elapsed:.1f} s; "
          f"wrote {files['csv']}, {len(files['feedback'])} feedback files, "
          f"{len(files['gradescope'])} Gradescope results")
    return 0


if __name__ == "__main__":
    sys.exit(main())
