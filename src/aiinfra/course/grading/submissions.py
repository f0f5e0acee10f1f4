"""Find the submissions in a folder: one gradebook row per entry, whatever the entry is.

SUBMISSIONS holds one notebook per student (``alice.ipynb``) or one folder per
student (``alice/ch01.ipynb`` plus any files it reads). The name is the student
id. Every entry becomes a submission, including the ones that cannot be graded
(a symbolic link, a name that is not UTF-8 or not printable, a second entry for
the same student, a file that is not a notebook, a folder without one); those
carry a ``problem`` and are recorded with a score of 0 and the reason. Only the
operating system's own litter (``.DS_Store``, ``__MACOSX``, AppleDouble ``._*``
files, ``Thumbs.db``, ``desktop.ini``) is passed over, and listed.

The student id is the name in Unicode NFC (:func:`~aiinfra.course.exercises.record.student_id`),
so ``José.ipynb`` spelt in NFC and in NFD is one student: the entry first in byte order is
graded, the other is a duplicate. Gradebook keys are the student ids themselves when valid;
an entry whose name is not a valid id, or a duplicate, gets
``<readable part>~<hash of the raw name>``, checked against every id and key of the folder
(a valid entry may be named like a key): on a clash the hash is salted again. Entries are
taken in byte order of their names, so the outcome never depends on the order the file
system lists them in.
"""

from __future__ import annotations

import hashlib
import os
import stat
import unicodedata
from pathlib import Path
from typing import Any

from ..exercises.record import student_id
from . import bounded

OS_LITTER = {".DS_Store", "__MACOSX", "Thumbs.db", "desktop.ini"}


def _key_for_bad_name(raw: bytes, hint: str, taken: set[str]) -> str:
    """A gradebook key for an entry without an id of its own: not in ``taken`` (every id of the folder)."""
    readable = bounded.clean_text(hint).encode("ascii", "replace").decode()
    readable = "".join(c if c.isalnum() or c in "._-" else "_" for c in readable)[:40] or "_"
    salt = 0
    while True:
        salted = b"aiinfra-name/" + (f"{salt}/".encode() if salt else b"") + raw
        key = f"{readable}~{bounded.short_hash(salted)}"
        if key not in taken:
            return key
        salt += 1


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
        if sub["student"] != unicodedata.normalize("NFC", stem):
            raise ValueError("surrounding spaces")
    except ValueError:
        sub["student"] = None  # a key is given once every id of the folder is known
        sub["hint"] = stem.encode("utf-8", "surrogateescape").decode("utf-8", "replace")
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
                "student": None,
                "hint": name,
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
            sub["hint"], sub["student"] = sub["student"], None
        if sub["student"] is not None:
            seen[sub["student"]] = sub["name"]
        subs.append(sub)
    taken = set(seen)
    for sub in subs:
        if sub["student"] is None:
            key = _key_for_bad_name(sub["raw_name"], sub.pop("hint"), taken)
            sub["student"] = key
            taken.add(key)
        sub.pop("hint", None)
    return subs, passed


def _read_regular(name, limit: int, dir_fd=None) -> bytes:
    fd = os.open(name, os.O_RDONLY | os.O_NOFOLLOW | os.O_NONBLOCK | os.O_CLOEXEC, dir_fd=dir_fd)
    try:
        if not stat.S_ISREG(os.fstat(fd).st_mode):
            raise ValueError("the notebook is not a regular file")
        return bounded.read_fd(fd, limit)
    finally:
        os.close(fd)


def read_submission(sub: dict, limits) -> tuple[bytes, list, list[str]]:
    """(notebook bytes, [(parts, bytes)] of the files to stage, notes): each file read once.

    The chosen notebook is always read, first; the folder limits then bound what else of a
    folder submission is staged (what is left out is said in the notes). Raises ValueError or OSError.
    """
    if not sub["whole_folder"]:
        raw = _read_regular(sub["notebook"], limits.max_notebook_bytes)
        return raw, [((Path(sub["notebook"]).name,), raw)], []
    name = Path(sub["notebook"]).name
    dfd = os.open(sub["folder"], os.O_RDONLY | os.O_DIRECTORY | os.O_NOFOLLOW | os.O_CLOEXEC)
    try:
        raw = _read_regular(name, limits.max_notebook_bytes, dir_fd=dfd)
        files = [((name,), raw)]

        def keep(parts, fd):
            files.append((parts, bounded.read_fd(fd, limits.max_folder_bytes)))

        tree = bounded.walk(
            ".",
            dir_fd=dfd,
            skip={(name,)},
            max_depth=limits.max_folder_depth,
            max_entries=max(limits.max_folder_entries - 1, 0),
            max_bytes=max(limits.max_folder_bytes - len(raw), 0),
            reader=keep,
        )
    finally:
        os.close(dfd)
    return raw, files, [f"in the submission folder: {n}" for n in tree.notes]


def content_hash(sub: dict, files: list | None) -> str:
    """What decides "unchanged since the last run": the name, its problem and the bytes staged (``files``)."""
    h = hashlib.sha256(
        b"aiinfra-submission/" + sub["raw_name"] + b"\0" + (sub["problem"] or "").encode() + b"\0"
    )
    for parts, data in files or []:
        h.update(b"/".join(bounded.name_bytes(p) for p in parts) + b"\0")
        h.update(hashlib.sha256(data).digest())
    return h.hexdigest()
