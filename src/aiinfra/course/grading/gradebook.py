"""The gradebook: one SQLite file (standard library), written only by the grader process.

Each graded submission is committed in its own transaction (WAL journal), so
a crash mid-run loses at most the submission being graded. A submission is
skipped on the next run when its content hash and the assignment fingerprint
are unchanged. Manual points for free-response parts are kept in
``parts.manual_points`` (NULL = "needs manual grading"); a re-grade (``--force``, a
new fingerprint, a new submission) keeps them for every part that still exists, is
still free-response, holds the same answer and allows the points, and reports the rest. Every text that goes
in is cleaned first (a lone surrogate or NUL becomes U+FFFD), so whatever a
submission managed to record can always be exported. :class:`Lock` keeps a
second grader away from a gradebook in use.
"""

from __future__ import annotations

import fcntl
import json
import os
import sqlite3
import sys
import time
from pathlib import Path

from .bounded import clean_text


def _clean(value):
    """Text, recursively, as it may be stored: see :func:`aiinfra.course.grading.bounded.clean_text`."""
    if isinstance(value, str):
        return clean_text(value)
    if isinstance(value, list):
        return [_clean(v) for v in value]
    if isinstance(value, dict):
        return {_clean(k): _clean(v) for k, v in value.items()}
    return value


class Lock:
    """An exclusive lock on ``<path>.lock`` for the whole run (released by the kernel if we die).

    The grader takes one on its output folder's run folder and one on its gradebook. A second
    grader on either refuses with a message naming the holder, or waits for it with ``wait=True``.
    """

    def __init__(self, gradebook: Path, wait: bool = False, stream=sys.stderr, what: str | None = None):
        what = what or str(gradebook)
        self.path = Path(str(gradebook) + ".lock")
        self.path.parent.mkdir(parents=True, exist_ok=True)
        self.fd = os.open(self.path, os.O_RDWR | os.O_CREAT | os.O_CLOEXEC, 0o600)
        try:
            fcntl.flock(self.fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
        except BlockingIOError:
            holder = os.pread(self.fd, 64, 0).decode("ascii", "replace").strip() or "?"
            if not wait:
                os.close(self.fd)
                raise RuntimeError(
                    f"another aiinfra-grade (pid {holder}) is using {what}; "
                    "let it finish, or pass --wait to queue behind it"
                ) from None
            print(
                f"aiinfra-grade: waiting for the aiinfra-grade (pid {holder}) that is using {what}",
                file=stream,
                flush=True,
            )
            fcntl.flock(self.fd, fcntl.LOCK_EX)
        os.ftruncate(self.fd, 0)
        os.pwrite(self.fd, f"{os.getpid()}\n".encode(), 0)

    def __enter__(self):
        return self

    def __exit__(self, *exc):
        self.release()

    def release(self) -> None:
        if self.fd >= 0:
            os.close(self.fd)
            self.fd = -1


SCHEMA = """
CREATE TABLE IF NOT EXISTS submissions (
    assignment TEXT NOT NULL,
    student TEXT NOT NULL,
    path TEXT NOT NULL,
    content_sha256 TEXT NOT NULL,
    fingerprint TEXT NOT NULL,
    status TEXT NOT NULL,
    reason TEXT NOT NULL,
    auto_score REAL NOT NULL,
    auto_max REAL NOT NULL,
    manual_max REAL NOT NULL,
    elapsed_s REAL,
    cpu_s REAL,
    sandbox TEXT,
    graded_at TEXT NOT NULL,
    PRIMARY KEY (assignment, student)
);
CREATE TABLE IF NOT EXISTS parts (
    assignment TEXT NOT NULL,
    student TEXT NOT NULL,
    exercise TEXT NOT NULL,
    part TEXT NOT NULL,
    kind TEXT NOT NULL,
    points REAL NOT NULL,
    max_points REAL NOT NULL,
    status TEXT NOT NULL,
    reason TEXT NOT NULL,
    answer TEXT,
    manual_points REAL,
    PRIMARY KEY (assignment, student, exercise, part)
);
"""


class Gradebook:
    """``Gradebook(path)``; use as a context manager or call :meth:`close`."""

    def __init__(self, path: Path):
        self.path = Path(path)
        self.path.parent.mkdir(parents=True, exist_ok=True)
        self.db = sqlite3.connect(str(self.path), timeout=30)
        self.db.execute("PRAGMA journal_mode=WAL")
        self.db.execute("PRAGMA synchronous=NORMAL")
        self.db.executescript(SCHEMA)
        self.db.commit()

    def __enter__(self):
        return self

    def __exit__(self, *exc):
        self.close()

    def close(self) -> None:
        self.db.close()

    def is_current(self, assignment: str, student: str, content_sha256: str, fingerprint: str) -> bool:
        row = self.db.execute(
            "SELECT content_sha256, fingerprint FROM submissions WHERE assignment=? AND student=?",
            (assignment, student),
        ).fetchone()
        return row == (content_sha256, fingerprint)

    def _hand_grades(self, assignment: str, student: str) -> dict:
        rows = self.db.execute(
            "SELECT exercise, part, answer, manual_points FROM parts "
            "WHERE assignment=? AND student=? AND manual_points IS NOT NULL",
            (assignment, student),
        )
        return {(e, p): (answer, points) for e, p, answer, points in rows}

    def record(
        self, assignment: str, path: str, content_sha256: str, fingerprint: str, score, extracted: dict
    ) -> list[str]:
        """Replace the rows of one submission, in one transaction, keeping its hand grades.

        A hand grade stays with its part when the part is still free-response, its answer is
        unchanged and the points are within its maximum. Returns one line per hand grade that
        no longer applies (and is dropped), saying why.
        """
        now = time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime())
        path, reason, extracted = clean_text(path), clean_text(score.reason), _clean(extracted)
        rows, lost = [], []
        with self.db:
            hand = self._hand_grades(assignment, score.student)
            for r in score.parts:
                answer = None if r.answer is None else json.dumps(_clean(r.answer))
                status, why, manual = r.status, clean_text(r.reason), None
                if (r.exercise, r.part) in hand:
                    old_answer, points = hand.pop((r.exercise, r.part))
                    problem = (
                        "the part is no longer free-response"
                        if r.kind != "free"
                        else "the answer changed"
                        if old_answer != answer
                        else f"its maximum is now {r.max_points:g}"
                        if points > r.max_points
                        else None
                    )
                    if problem:
                        lost.append(f"{r.exercise}({r.part}): {points:g} point(s) by hand, {problem}")
                    else:
                        status, why, manual = "manual-graded", "graded by hand", points
                rows.append(
                    (
                        assignment,
                        score.student,
                        r.exercise,
                        r.part,
                        r.kind,
                        r.points,
                        r.max_points,
                        status,
                        why,
                        answer,
                        manual,
                    )
                )
            lost += [
                f"{e}({p}): {pts:g} point(s) by hand, the part no longer exists"
                for (e, p), (_, pts) in sorted(hand.items())
            ]
            self.db.execute("DELETE FROM parts WHERE assignment=? AND student=?", (assignment, score.student))
            self.db.executemany("INSERT INTO parts VALUES (?,?,?,?,?,?,?,?,?,?,?)", rows)
            self.db.execute(
                "INSERT OR REPLACE INTO submissions VALUES (?,?,?,?,?,?,?,?,?,?,?,?,?,?)",
                (
                    assignment,
                    score.student,
                    path,
                    content_sha256,
                    fingerprint,
                    score.status,
                    reason,
                    score.auto_score,
                    score.auto_max,
                    score.manual_max,
                    extracted.get("elapsed_s"),
                    extracted.get("cpu_s"),
                    json.dumps(extracted.get("sandbox", {})),
                    now,
                ),
            )
        return lost

    def set_manual(self, assignment: str, student: str, exercise: str, part: str, points: float) -> None:
        """Record the hand-graded points of a free-response part (0 <= points <= its maximum)."""
        row = self.db.execute(
            "SELECT max_points FROM parts WHERE assignment=? AND student=? AND exercise=? AND part=? AND kind='free'",
            (assignment, student, exercise, part),
        ).fetchone()
        if row is None:
            raise ValueError(
                f"no free-response part {exercise}({part}) for student {student!r} in {assignment}"
            )
        if not isinstance(points, (int, float)) or not 0 <= points <= row[0]:
            raise ValueError(f"points must lie in [0, {row[0]}], got {points!r}")
        with self.db:
            self.db.execute(
                "UPDATE parts SET manual_points=?, status='manual-graded', reason='graded by hand' "
                "WHERE assignment=? AND student=? AND exercise=? AND part=?",
                (float(points), assignment, student, exercise, part),
            )

    def students(self, assignment: str) -> list[str]:
        return [
            r[0]
            for r in self.db.execute(
                "SELECT student FROM submissions WHERE assignment=? ORDER BY student", (assignment,)
            )
        ]

    def submission(self, assignment: str, student: str) -> dict:
        cur = self.db.execute(
            "SELECT * FROM submissions WHERE assignment=? AND student=?", (assignment, student)
        )
        row = cur.fetchone()
        if row is None:
            raise ValueError(f"no submission of {student!r} for {assignment}")
        sub = dict(zip([d[0] for d in cur.description], row))
        cur = self.db.execute(
            "SELECT * FROM parts WHERE assignment=? AND student=? ORDER BY exercise, part",
            (assignment, student),
        )
        cols = [d[0] for d in cur.description]
        parts = [dict(zip(cols, r)) for r in cur.fetchall()]
        for p in parts:
            p["answer"] = None if p["answer"] is None else _clean(json.loads(p["answer"]))
        manual = sum(p["manual_points"] or 0.0 for p in parts if p["kind"] == "free")
        pending = sum(p["max_points"] for p in parts if p["kind"] == "free" and p["manual_points"] is None)
        sub.update(
            parts=parts,
            score=sub["auto_score"] + manual,
            max_score=sub["auto_max"] + sub["manual_max"],
            manual_pending=pending,
        )
        return sub
