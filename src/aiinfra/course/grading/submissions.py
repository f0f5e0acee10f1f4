"""Find the submissions in a folder: one gradebook row per entry, whatever the entry is.

SUBMISSIONS holds one notebook per student (``alice.ipynb``) or one folder per
student (``alice/ch01.ipynb`` plus any files it reads). The name is the student
id. Every entry becomes a submission, including the ones that cannot be graded
(a symbolic link, a name that is not UTF-8 or not printable, a second entry for
the same student, a file that is not a notebook, a folder without one); those
carry a ``problem`` and are recorded with a score of 0 and the reason. Only the
operating system's own litter (``.DS_Store``, ``__MACOSX``, AppleDouble ``._*``
files, ``Thumbs.db``, ``desktop.ini``) is passed over, and listed.

Gradebook keys are the student ids themselves when valid; an entry whose name
is not a valid id, or a duplicate, gets ``<readable part>~<hash of the raw name>``,
which no valid id can collide with in practice.
"""

from __future__ import annotations

import hashlib
import os
import stat
from pathlib import Path
from typing import Any

from ..exercises.record import student_id
from . import bounded

OS_LITTER = {".DS_Store", "__MACOSX", "Thumbs.db", "desktop.ini"}


def _key_for_bad_name(raw: bytes, hint: str) -> str:
    readable = bounded.clean_text(hint).encode("ascii", "replace").decode()
    readable = "".join(c if c.isalnum() or c in "._-" else "_" for c in readable)[:40] or "_"
    return f"{readable}~{bounded.short_hash(b'aiinfra-name/' + raw)}"


def _entry(folder: Path, name: str, chapter: str) -> dict:
    raw = bounded.name_bytes(name)
    shown = bounded.clean_text(name.encode("utf-8", "surrogateescape").decode("utf-8", "replace"))
    path = folder / name
    sub: dict[str, Any] = {
        "name": shown,
        "raw_name": raw,
        "path": bounded.clean_text(str(path).encode("utf-8", "surrogateescape").decode("utf-8", "replace")),
        "notebook": None,
        "folder": None,
        "whole_folder": False,
        "problem": None,
    }
    st = os.lstat(path)
    stem = (
        name[: -len(".ipynb")] if name.lower().endswith(".ipynb") and not stat.S_ISDIR(st.st_mode) else name
    )
    try:
        if shown != name:
            raise ValueError("not UTF-8")
        sub["student"] = student_id(stem)
        if sub["student"] != stem:
            raise ValueError("surrounding spaces")
    except ValueError:
        sub["student"] = _key_for_bad_name(
            raw, stem.encode("utf-8", "surrogateescape").decode("utf-8", "replace")
        )
        sub["problem"] = (
            f"the name {shown!r} is not a usable student id (1 to 128 printable UTF-8 characters)"
        )
        return sub
    if stat.S_ISLNK(st.st_mode):
        sub["problem"] = "a symbolic link; links are not followed"
    elif stat.S_ISREG(st.st_mode):
        if name.lower().endswith(".ipynb"):
            sub["notebook"] = path
        else:
            sub["problem"] = f"not an .ipynb file ({shown})"
    elif stat.S_ISDIR(st.st_mode):
        sub.update(folder=path, whole_folder=True)
        try:
            with os.scandir(path) as it:
                nbs = sorted(
                    e.name
                    for e in it
                    if e.name.endswith(".ipynb")
                    and not e.name.startswith(".")
                    and e.is_file(follow_symlinks=False)
                )
        except OSError as exc:
            sub["problem"] = f"the folder cannot be read ({exc.strerror})"
            return sub
        chosen = next((n for n in nbs if n == f"{chapter}.ipynb"), nbs[0] if nbs else None)
        if chosen is None:
            sub["problem"] = "no .ipynb file in the submission folder"
        else:
            sub["notebook"] = path / chosen
    else:
        sub["problem"] = "not a regular file or folder"
    return sub


def discover(folder: Path, chapter: str) -> tuple[list[dict], list[str]]:
    """(submissions, names passed over). Every other entry of ``folder`` is a submission."""
    subs, passed = [], []
    with os.scandir(folder) as it:
        names = sorted((e.name for e in it), key=bounded.name_bytes)
    seen: dict[str, str] = {}
    for name in names:
        if name in OS_LITTER or name.startswith("._"):
            passed.append(bounded.clean_text(name))
            continue
        try:
            sub = _entry(folder, name, chapter)
        except OSError as exc:
            raw = bounded.name_bytes(name)
            sub = {
                "student": _key_for_bad_name(raw, name),
                "name": bounded.clean_text(name),
                "raw_name": raw,
                "path": bounded.clean_text(name),
                "notebook": None,
                "folder": None,
                "whole_folder": False,
                "problem": f"cannot be read ({exc.strerror})",
            }
        if sub["student"] in seen:
            first = seen[sub["student"]]
            sub["problem"] = f"a second submission for student {sub['student']!r} ({first} is graded)"
            sub["student"] = _key_for_bad_name(sub["raw_name"], sub["student"])
        seen.setdefault(sub["student"], sub["name"])
        subs.append(sub)
    return subs, passed


def content_hash(sub: dict, limits) -> str:
    """What decides "unchanged since the last run": the bytes that would be graded (bounded)."""
    h = hashlib.sha256(
        b"aiinfra-submission/" + sub["raw_name"] + b"\0" + (sub["problem"] or "").encode() + b"\0"
    )
    if sub["problem"]:
        return h.hexdigest()

    def add(parts, fd):
        h.update(b"/".join(bounded.name_bytes(p) for p in parts) + b"\0")
        h.update(hashlib.sha256(bounded.read_fd(fd, limits.max_folder_bytes)).digest())

    if sub["whole_folder"]:
        bounded.walk(
            str(sub["folder"]),
            max_depth=limits.max_folder_depth,
            max_entries=limits.max_folder_entries,
            max_bytes=limits.max_folder_bytes,
            reader=add,
        )
    else:
        fd = os.open(sub["notebook"], os.O_RDONLY | os.O_NOFOLLOW | os.O_NONBLOCK | os.O_CLOEXEC)
        try:
            add((), fd) if stat.S_ISREG(os.fstat(fd).st_mode) else h.update(b"not a file")
        finally:
            os.close(fd)
    return h.hexdigest()
