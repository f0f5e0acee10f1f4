"""Kernel launcher: apply the limits, then ``exec`` the real kernel.

Run as ``python -m aiinfra.grading.sandbox [options] -- KERNEL ARGV...``. In order:

1. ``RLIMIT_AS`` (the memory limit), ``RLIMIT_FSIZE`` (largest file the
   kernel may write), ``RLIMIT_CORE`` = 0 and ``RLIMIT_NPROC``;
2. a new, empty network namespace (``unshare(CLONE_NEWNET)``; the kernel
   talks to the grader over Unix-domain sockets, which still work) when the
   platform allows it, else a note saying it did not;
3. when running as root, hand the connection file to ``--uid`` and drop to
   that uid/gid (so the kernel cannot write the gradebook or other students'
   folders), else a note. If the Python installation sits below a folder
   that uid cannot enter (e.g. ``/root/.pyenv``), a private mount namespace
   hides that folder behind an empty tmpfs and binds back only the
   installation (``--reach``), so the kernel can start without seeing the
   rest; if that is impossible the kernel keeps the grader's uid, with a note;
4. ``PR_SET_PDEATHSIG`` = SIGKILL, so the kernel dies with its grader worker;
5. write what was achieved to ``--status`` (JSON) and ``exec`` the kernel.
"""
from __future__ import annotations

import argparse
import ctypes
import ctypes.util
import json
import os
import resource
import signal
import sys

CLONE_NEWNET = 0x40000000
CLONE_NEWNS = 0x00020000
MS_BIND = 4096
MS_REC = 16384
MS_PRIVATE = 1 << 18
MNT_DETACH = 2
PR_SET_PDEATHSIG = 1


def _libc():
    return ctypes.CDLL(ctypes.util.find_library("c") or "libc.so.6", use_errno=True)


def _set_limit(which: int, value: int, notes: list[str], name: str) -> None:
    try:
        soft, hard = resource.getrlimit(which)
        new = value if hard == resource.RLIM_INFINITY else min(value, hard)
        resource.setrlimit(which, (new, new))
    except (ValueError, OSError) as exc:
        notes.append(f"{name} not set: {exc}")


def _blocked_ancestor(path: str) -> str | None:
    """The highest folder above ``path`` that others may not enter (no o+x), or None."""
    parts = os.path.realpath(path).split(os.sep)
    for i in range(2, len(parts)):
        folder = os.sep.join(parts[:i]) or os.sep
        if not os.stat(folder).st_mode & 0o001:
            return folder
    return None


def _make_reachable(libc, paths: list[str], scratch: str) -> str | None:
    """Make ``paths`` reachable for an unprivileged uid; returns a reason on failure."""
    def mount(src, dst, fstype, flags, data):
        if libc.mount(src, dst, fstype, flags, data) != 0:
            raise OSError(ctypes.get_errno(), f"mount {dst}: {os.strerror(ctypes.get_errno())}")

    by_ancestor: dict[str, list[str]] = {}
    for p in paths:
        anc = _blocked_ancestor(p)
        if anc:
            by_ancestor.setdefault(anc, []).append(os.path.realpath(p))
    if not by_ancestor:
        return None
    try:
        if libc.unshare(CLONE_NEWNS) != 0:
            return f"no private mount namespace ({os.strerror(ctypes.get_errno())})"
        mount(None, b"/", None, MS_REC | MS_PRIVATE, None)
        for n, (anc, targets) in enumerate(sorted(by_ancestor.items())):
            stashes = []
            for k, target in enumerate(targets):
                stash = os.path.join(scratch, f"reach-{n}-{k}")
                os.mkdir(stash)
                mount(target.encode(), stash.encode(), None, MS_BIND | MS_REC, None)
                stashes.append((stash, target))
            mount(b"tmpfs", anc.encode(), b"tmpfs", 0, b"mode=0755,size=1m")
            for stash, target in stashes:
                os.makedirs(target, exist_ok=True)
                mount(stash.encode(), target.encode(), None, MS_BIND | MS_REC, None)
                libc.umount2(stash.encode(), MNT_DETACH)
    except OSError as exc:
        return f"could not expose {sorted(by_ancestor)} to the kernel uid ({exc})"
    return None


def main(argv: list[str] | None = None) -> None:
    argv = list(sys.argv[1:] if argv is None else argv)
    if "--" not in argv:
        raise SystemExit("usage: python -m aiinfra.grading.sandbox [options] -- kernel argv")
    cut = argv.index("--")
    ap = argparse.ArgumentParser(prog="aiinfra.grading.sandbox")
    ap.add_argument("--memory-bytes", type=int, required=True)
    ap.add_argument("--file-bytes", type=int, default=256 * 2**20)
    ap.add_argument("--nproc", type=int, default=64)
    ap.add_argument("--uid", type=int, default=-1)
    ap.add_argument("--gid", type=int, default=-1)
    ap.add_argument("--no-network", action="store_true")
    ap.add_argument("--connection-file", required=True)
    ap.add_argument("--status", required=True)
    ap.add_argument("--reach", action="append", default=[], help="a path the kernel uid must be able to read")
    args = ap.parse_args(argv[:cut])
    kernel = argv[cut + 1:]
    if not kernel:
        raise SystemExit("no kernel command after --")
    notes: list[str] = []
    status = {"pid": os.getpid(), "memory_bytes": args.memory_bytes, "network_isolated": False,
              "uid": os.getuid(), "privileges_dropped": False}

    _set_limit(resource.RLIMIT_AS, args.memory_bytes, notes, "memory limit")
    _set_limit(resource.RLIMIT_FSIZE, args.file_bytes, notes, "file size limit")
    _set_limit(resource.RLIMIT_CORE, 0, notes, "core limit")

    libc = _libc()
    if args.no_network:
        if libc.unshare(CLONE_NEWNET) == 0:
            status["network_isolated"] = True
        else:
            notes.append(f"network left on: unshare(CLONE_NEWNET) failed ({os.strerror(ctypes.get_errno())})")

    if args.uid >= 0 and os.geteuid() == 0:
        why = _make_reachable(libc, args.reach, os.path.dirname(os.path.abspath(args.status)))
        if why:
            notes.append(f"kernel runs as the grader's uid: {why}")
            args.uid = -1
    if args.uid >= 0:
        if os.geteuid() == 0:
            os.chown(args.connection_file, args.uid, args.gid)
            with open(args.status, "w", encoding="utf-8") as fh:  # written while still root: the kernel cannot edit it
                json.dump({**status, "uid": args.uid, "privileges_dropped": True, "notes": notes}, fh)
            os.setgroups([])
            os.setgid(args.gid)
            os.setuid(args.uid)
            status.update(uid=args.uid, privileges_dropped=True)
            _set_limit(resource.RLIMIT_NPROC, args.nproc, notes, "process limit")
        else:
            notes.append("kernel runs as the grader's user (not root, so no uid switch)")
    if not status["privileges_dropped"]:
        with open(args.status, "w", encoding="utf-8") as fh:
            json.dump({**status, "notes": notes}, fh)

    libc.prctl(PR_SET_PDEATHSIG, signal.SIGKILL, 0, 0, 0)
    os.execv(kernel[0], kernel)


if __name__ == "__main__":
    main()
