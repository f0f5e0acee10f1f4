"""Reading untrusted input with bounds: JSON, text, names and folder trees.

Every function here either returns a bounded result or raises ``ValueError``
with a reason a student can read; none recurses on the input's structure, so a
deeply nested record, a deep folder tree or a path longer than ``PATH_MAX``
cannot exhaust the grader's stack.
"""

from __future__ import annotations

import hashlib
import itertools
import json
import os
import re
import stat
from dataclasses import dataclass, field

import numpy as np

_STRING = re.compile(r'"(?:[^"\\]|\\.)*"', re.S)
_SURROGATE = re.compile("[\ud800-\udfff\x00]")
# terminal escape sequences (7-bit and C1 forms: CSI, OSC/DCS/APC/PM/SOS strings, two-byte ESC codes), then
# every other control character but tab and newline
_ESCAPES = re.compile(
    r"(?:\x1b\[|\x9b)[\x30-\x3f]*[\x20-\x2f]*[\x40-\x7e]?"
    r"|(?:\x1b[\]PX^_]|[\x90\x98\x9d\x9e\x9f])[^\x07\x1b\x9c]*(?:\x07|\x1b\\|\x9c)?"
    r"|\x1b[\x20-\x7e]?"
)
_CONTROLS = re.compile("[\x01-\x08\x0b-\x1f\x7f-\x9f]")


def json_depth(text: str) -> int:
    """Deepest nesting of ``[``/``{`` in JSON text (strings skipped), computed without recursion."""
    skeleton = np.frombuffer(_STRING.sub("", text).encode("utf-8", "surrogatepass"), dtype=np.uint8)
    steps = np.isin(skeleton, (ord("["), ord("{"))).astype(np.int64) - np.isin(skeleton, (ord("]"), ord("}")))
    return int(np.cumsum(steps).max()) if steps.size else 0


def _reject_constant(name):
    raise ValueError(f"{name} is not valid JSON")


def loads(data: bytes | str, *, max_bytes: int, max_depth: int, what: str = "the JSON"):
    """``json.loads`` after checking size and depth; NaN and Infinity are refused. Raises ValueError."""
    if len(data) > max_bytes:
        raise ValueError(f"{what} is {len(data)} bytes, above the {max_bytes}-byte limit")
    if isinstance(data, bytes):
        try:
            data = data.decode("utf-8")
        except UnicodeDecodeError:
            raise ValueError(f"{what} is not UTF-8 text") from None
    if json_depth(data) > max_depth:
        raise ValueError(f"{what} is nested deeper than {max_depth} levels")
    try:
        return json.loads(data, parse_constant=_reject_constant)
    except ValueError as exc:  # json.JSONDecodeError is a ValueError
        raise ValueError(f"{what} is malformed ({str(exc)[:120]})") from None


def clean_text(text: str) -> str:
    """Text safe to store, show and export: lone surrogates and NUL become U+FFFD; terminal escape
    sequences and every other C0 or C1 control character except tab and newline are removed.

    The one gate for text from a kernel (answers, exception names and messages, stderr lines): the
    grader applies it where that text is parsed, and the gradebook again on everything it stores.
    """
    return _CONTROLS.sub("", _ESCAPES.sub("", _SURROGATE.sub("\ufffd", text)))


def terminal_text(text: str) -> str:
    """One line for a terminal: :func:`clean_text`, then every character that is not printable
    (newline, tab, bidirectional overrides, other format characters) becomes ``?``."""
    return "".join(c if c.isprintable() else "?" for c in clean_text(text))


def name_bytes(name: str) -> bytes:
    """The bytes of a file name as the OS gave it (``os.listdir`` decodes with surrogateescape)."""
    return os.fsencode(name)


def short_hash(data: bytes, n: int = 12) -> str:
    return hashlib.sha256(data).hexdigest()[:n]


@dataclass
class Tree:
    """The regular files of a folder, as name components, read without following links."""

    files: list = field(default_factory=list)  # (parts, size)
    total_bytes: int = 0
    notes: list = field(default_factory=list)


def _open_dir(name, dir_fd=None) -> int:
    return os.open(name, os.O_RDONLY | os.O_DIRECTORY | os.O_NOFOLLOW | os.O_CLOEXEC, dir_fd=dir_fd)


MAX_PATH_BYTES = 1024  # of a staged file's path inside the submission: far below PATH_MAX in any work folder
NAMES_PER_ENTRY = 64  # a folder lists at most this many names per entry allowed, or is left out


def _sorted_names(dfd: int, cap: int) -> list | None:
    """Every entry of an open folder, in byte order of its name; None if it has more than ``cap``."""
    with os.scandir(dfd) as it:
        entries = list(itertools.islice(it, cap + 1))
    return None if len(entries) > cap else sorted(entries, key=lambda e: name_bytes(e.name))


def walk(
    root: str, *, max_depth: int, max_entries: int, max_bytes: int, reader=None, skip=(), dir_fd=None
) -> Tree:
    """Regular files below ``root`` (iterative, fd-relative, no links), within the three limits.

    ``reader(parts, fd)``, if given, is called on an open descriptor of each
    file kept. Names are taken in byte order, folder by folder, so what is kept never
    depends on the order the file system lists them in; ``skip`` holds name tuples
    not to take (the notebook, read first). What lies beyond a limit is left out and
    said in ``notes``: beyond the first ``max_entries`` entries, ``max_bytes`` bytes
    or ``max_depth`` levels, a path longer than :data:`MAX_PATH_BYTES`, and a folder
    of more than ``NAMES_PER_ENTRY * max_entries`` names (never listed in full).
    """
    tree = Tree()
    seen = 0
    stack: list[tuple[tuple[str, ...], int]] = [((), _open_dir(root, dir_fd))]
    skipped = {"depth": 0, "entries": 0, "bytes": 0, "special": 0, "path": 0, "huge": 0}
    try:
        while stack:
            parts, dfd = stack.pop()
            try:
                entries = _sorted_names(dfd, NAMES_PER_ENTRY * max_entries)
                if entries is None:
                    skipped["huge"] += 1
                    continue
                for e in entries:
                    here = parts + (e.name,)
                    if here in skip:
                        continue
                    seen += 1
                    if seen > max_entries:
                        skipped["entries"] += 1
                        continue
                    if len(b"/".join(map(name_bytes, here))) > MAX_PATH_BYTES:
                        skipped["path"] += 1
                    elif e.is_dir(follow_symlinks=False):
                        if len(parts) + 1 >= max_depth:
                            skipped["depth"] += 1
                            continue
                        stack.append((here, _open_dir(e.name, dfd)))
                    elif e.is_file(follow_symlinks=False):
                        fd = os.open(
                            e.name, os.O_RDONLY | os.O_NOFOLLOW | os.O_NONBLOCK | os.O_CLOEXEC, dir_fd=dfd
                        )
                        try:
                            st = os.fstat(fd)
                            if not stat.S_ISREG(st.st_mode):
                                skipped["special"] += 1
                            elif tree.total_bytes + st.st_size > max_bytes:
                                skipped["bytes"] += 1
                            else:
                                tree.total_bytes += st.st_size
                                tree.files.append((here, st.st_size))
                                if reader:
                                    reader(here, fd)
                        finally:
                            os.close(fd)
                    else:
                        skipped["special"] += 1
            finally:
                os.close(dfd)
    finally:
        for _, dfd in stack:
            os.close(dfd)
    limits = {
        "depth": f"deeper than {max_depth} levels",
        "entries": f"beyond the first {max_entries} entries",
        "bytes": f"beyond {max_bytes} bytes in all",
        "special": "links, devices or pipes",
        "path": f"with a path longer than {MAX_PATH_BYTES} bytes",
        "huge": f"folders of more than {NAMES_PER_ENTRY * max_entries} entries",
    }
    for key, n in skipped.items():
        if n:
            tree.notes.append(f"{n} item(s) {limits[key]} were left out")
    return tree


def read_fd(fd: int, limit: int) -> bytes:
    """At most ``limit`` + 1 bytes from ``fd`` (the extra byte tells "too large")."""
    chunks, n = [], 0
    while n <= limit:
        chunk = os.read(fd, min(1 << 20, limit + 1 - n))
        if not chunk:
            break
        chunks.append(chunk)
        n += len(chunk)
    return b"".join(chunks)


def remove_tree(path: str) -> None:
    """``rm -rf`` without recursion, long paths or one open descriptor per level; a missing ``path`` is fine."""
    try:
        dfd = _open_dir(path)
    except FileNotFoundError:
        return
    except NotADirectoryError:
        os.unlink(path)
        return
    names: list[str] = []  # the folders entered below ``path``
    while True:
        subdir = None
        with os.scandir(dfd) as it:
            for e in it:
                if e.is_dir(follow_symlinks=False):
                    subdir = e.name
                    break
                try:
                    os.unlink(e.name, dir_fd=dfd)
                except FileNotFoundError:
                    pass
        if subdir is not None:
            try:
                os.chmod(subdir, 0o700, dir_fd=dfd, follow_symlinks=False)
            except (NotImplementedError, OSError):
                pass
            child = _open_dir(subdir, dfd)
            os.close(dfd)
            dfd = child
            names.append(subdir)
            continue
        if not names:
            os.close(dfd)
            break
        parent = _open_dir("..", dfd)
        os.close(dfd)
        os.rmdir(names.pop(), dir_fd=parent)
        dfd = parent
    os.rmdir(path)
