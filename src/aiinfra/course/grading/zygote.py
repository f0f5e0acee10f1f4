"""A worker slot's template kernel: imported once per batch, forked once per submission.

Started by :mod:`~aiinfra.course.grading.template` as ``python -I -c <import this; serve()> STAGE FD``
in one bubblewrap sandbox built like the per-submission ones (same mounts, masks,
environment), as root with ``CAP_SYS_ADMIN``, ``CAP_NET_ADMIN`` and ``CAP_SETPCAP`` besides
the kernel's ``CAP_SETUID`` and ``CAP_SETGID``, but in the grader's PID namespace: each child
makes its own, so a submission runs on should its template die. It imports what every kernel imports (ipykernel,
IPython, zmq, traitlets, tornado, numpy, the recording side of the exercises) but starts no
thread, event loop or ZeroMQ context, then waits on the socket ``FD`` (the grader's).

For each request (a message naming the submission's socket folder, with four open files: a
socket to the worker, the submission's stage folder, the kernel's stderr and the answer
pipe) it forks a child that, in order:

1. sends the worker a pidfd of itself and waits for "go" (the worker moves it into the
   slot's control groups first, so everything below is capped and killed with them);
2. reads the stage through the folder it was sent (the sandbox never mounts it), then enters
   fresh mount, PID, IPC, UTS, network and cgroup namespaces; mounts a fresh tmpfs on ``/tmp``
   (the only place a kernel may write, as in a fresh sandbox), its own socket folder at ``/run/aiinfra/ipc`` (the folder of all of them
   is unmounted) and forks PID 1 of the new PID namespace;
3. PID 1 mounts a ``/proc`` of its own, brings up loopback, keeps only ``CAP_SETUID`` and
   ``CAP_SETGID`` (bounding set included), reseeds numpy's global generator should it be loaded
   (``random`` reseeds itself in a forked child),
   and runs :func:`aiinfra.course.grading.kernel.run` (limits, reaper, uid, kernel), as a
   fresh sandbox would;
4. the child itself waits for PID 1 to end (killing it should the worker go away) and
   sends the worker the CPU seconds of everything that ran (its children's rusage: the
   worker is not their ancestor).

A submission's changes stay in its own copy of the template's memory (copy-on-write).
Hash randomization is decided when the template's interpreter starts, so every submission
of one template shares its ``str`` hash seed; it learns nothing of another submission by it.
"""

from __future__ import annotations

import ctypes
import fcntl
import importlib
import json
import os
import resource
import select
import signal
import socket
import struct
import sys
import threading

from . import kernel
from .sandbox import INSIDE_HOLD, INSIDE_IPC, INSIDE_IPCS, INSIDE_STAGE

CLONE_NEWNS = 0x00020000
CLONE_NEWCGROUP = 0x02000000
CLONE_NEWUTS = 0x04000000
CLONE_NEWIPC = 0x08000000
CLONE_NEWPID = 0x20000000
CLONE_NEWNET = 0x40000000
MS_RDONLY, MS_NOSUID, MS_NODEV, MS_NOEXEC, MS_REMOUNT, MS_BIND, MS_REC = 1, 2, 4, 8, 32, 4096, 16384
MS_PRIVATE = 1 << 18
MNT_DETACH = 2
PR_CAPBSET_DROP = 24
CAP_SETGID, CAP_SETUID = 6, 7
SIOCGIFFLAGS, SIOCSIFFLAGS, IFF_UP = 0x8913, 0x8914, 0x1
PROC_MASKS = ("sys", "sysrq-trigger", "irq", "bus")  # read-only, as bubblewrap's --proc leaves them
ANSWERS_FD = 3
#: What every graded kernel imports (one that cannot be imported here is left to the kernel itself).
PRELOAD = (
    "ipykernel.ipkernel",
    "ipykernel.kernelapp",
    "IPython.core.compilerop",
    "traitlets",
    "zmq",
    "tornado.ioloop",
    "numpy",
    "aiinfra",
    "aiinfra.course.exercises",
)


def _mount(source: str | None, target: str, fstype: str | None, flags: int, data: str | None = None) -> None:
    libc = kernel._libc()
    kernel._fail(
        libc.mount(
            None if source is None else source.encode(),
            target.encode(),
            None if fstype is None else fstype.encode(),
            ctypes.c_ulong(flags),
            None if data is None else data.encode(),
        ),
        f"mount {target}",
    )


def _umount(target: str) -> None:
    kernel._fail(kernel._libc().umount2(target.encode(), MNT_DETACH), f"umount {target}")


def _enter_namespaces(ipc_name: str, tmp_bytes: int) -> None:
    """Step 2's namespaces and mounts (as root, before the fork of PID 1)."""
    if not ipc_name or "/" in ipc_name or ipc_name in (".", ".."):
        raise ValueError(f"bad socket folder name {ipc_name!r}")
    flags = CLONE_NEWNS | CLONE_NEWPID | CLONE_NEWIPC | CLONE_NEWUTS | CLONE_NEWNET | CLONE_NEWCGROUP
    kernel._fail(kernel._libc().unshare(flags), "unshare")
    _mount(None, "/", None, MS_REC | MS_PRIVATE)
    _fresh_tmp(tmp_bytes)
    _mount(os.path.join(INSIDE_IPCS, ipc_name), INSIDE_IPC, None, MS_BIND)
    _mount(None, INSIDE_IPC, None, MS_BIND | MS_REMOUNT | MS_RDONLY | MS_NOSUID | MS_NODEV)
    _umount(INSIDE_IPCS)
    _umount(INSIDE_STAGE)


def _mounts_below(folder: str) -> list[tuple[str, bool]]:
    """(mount point, read-only) of every mount below ``folder``, parents first (mountinfo's order)."""
    out = []
    with open("/proc/self/mountinfo", encoding="utf-8") as fh:
        for line in fh:
            fields = line.split()
            point = fields[4].encode().decode("unicode_escape")  # octal escapes: \040 is a space
            if point.startswith(folder + "/"):
                out.append((point, "ro" in fields[5].split(",")))
    return out


def _mount_point(path: str, folder: bool) -> None:
    """An empty folder (or file) to mount on, and the folders leading to it, mode 0755 whatever the umask."""
    parent = os.path.dirname(path)
    if not os.path.isdir(parent):
        _mount_point(parent, True)
    if folder:
        os.mkdir(path)
    else:
        os.close(os.open(path, os.O_CREAT | os.O_WRONLY))
    os.chmod(path, 0o755 if folder else 0o644)


def _fresh_tmp(size_bytes: int) -> None:
    """A new, empty tmpfs on /tmp, with what the sandbox mounts below /tmp (a package in a
    temporary folder, its masks) mounted again on it, as bubblewrap built them."""
    below = _mounts_below("/tmp")
    if below:
        _mount("/tmp", INSIDE_HOLD, None, MS_BIND | MS_REC)
    _mount("tmpfs", "/tmp", "tmpfs", MS_NOSUID | MS_NODEV, f"size={size_bytes},mode=1777")
    for point, read_only in below:
        held = INSIDE_HOLD + point[len("/tmp") :]
        if not os.path.lexists(point):
            _mount_point(point, os.path.isdir(held))
        _mount(held, point, None, MS_BIND)
        if read_only:
            _mount(None, point, None, MS_BIND | MS_REMOUNT | MS_RDONLY | MS_NOSUID | MS_NODEV)
    if below:
        _umount(INSIDE_HOLD)


def _loopback_up() -> None:
    with socket.socket(socket.AF_INET, socket.SOCK_DGRAM) as s:
        ifr = struct.pack("16sH14x", b"lo", 0)
        flags = struct.unpack("16sH", fcntl.ioctl(s, SIOCGIFFLAGS, ifr)[:18])[1]
        fcntl.ioctl(s, SIOCSIFFLAGS, struct.pack("16sH14x", b"lo", flags | IFF_UP))


def _keep_only_setid_caps() -> None:
    libc = kernel._libc()
    with open("/proc/sys/kernel/cap_last_cap", encoding="ascii") as fh:
        last = int(fh.read())
    for cap in range(last + 1):
        if cap not in (CAP_SETUID, CAP_SETGID):
            kernel._fail(libc.prctl(PR_CAPBSET_DROP, cap, 0, 0, 0), f"prctl(CAPBSET_DROP, {cap})")
    keep = (1 << CAP_SETUID) | (1 << CAP_SETGID)
    data = (kernel._CapData * 2)()
    data[0].effective = data[0].permitted = keep
    kernel._fail(libc.capset(ctypes.byref(kernel._CapHeader(kernel._CAP_VERSION_3, 0)), data), "capset")


def _reseed() -> None:
    """numpy's global generator, where a preload imported it (numpy 2 imports ``numpy.random`` on
    first use); ``random`` reseeds itself from ``os.urandom`` in every forked child (``os.register_at_fork``)."""
    np_random = sys.modules.get("numpy.random")
    if np_random is not None:
        np_random.seed()


def _pid1(spec: dict, files: list, err_fd: int, answers_fd: int) -> None:
    """Step 3: PID 1 of the submission's namespace, then :func:`kernel.run`; never returns."""
    libc = kernel._libc()
    kernel._fail(libc.prctl(kernel.PR_SET_PDEATHSIG, signal.SIGKILL, 0, 0, 0), "prctl(PDEATHSIG)")
    _umount("/proc")
    _mount("proc", "/proc", "proc", MS_NOSUID | MS_NODEV | MS_NOEXEC)
    for name in PROC_MASKS:
        path = os.path.join("/proc", name)
        if os.path.exists(path):
            _mount(path, path, None, MS_BIND | MS_REC)
            _mount(None, path, None, MS_BIND | MS_REMOUNT | MS_RDONLY | MS_NOSUID | MS_NODEV | MS_NOEXEC)
    _loopback_up()
    _keep_only_setid_caps()
    null = os.open("/dev/null", os.O_RDWR)
    os.dup2(null, 0)
    os.dup2(null, 1)
    os.dup2(err_fd, 2)
    os.dup2(answers_fd, ANSWERS_FD)
    os.closerange(ANSWERS_FD + 1, resource.getrlimit(resource.RLIMIT_NOFILE)[0])
    spec["env"]["AIINFRA_ANSWERS_FD"] = str(ANSWERS_FD)
    _reseed()
    kernel.run(spec, files)


def _send_pidfd(conn: socket.socket, pid: int, message: bytes) -> None:
    pidfd = os.pidfd_open(pid)
    try:
        socket.send_fds(conn, [message], [pidfd])
    finally:
        os.close(pidfd)


def _child(request: dict, fds: list[int]) -> None:
    """Steps 1, 2 and 4 of the module docstring; never returns."""
    conn_fd, stage_fd, err_fd, answers_fd = fds
    conn = socket.socket(fileno=conn_fd)
    _send_pidfd(conn, os.getpid(), b"forked")
    if conn.recv(16) != b"go":
        os._exit(1)
    spec, files = kernel._read_stage(".", dir_fd=stage_fd)
    os.close(stage_fd)
    _enter_namespaces(request["ipc"], spec["rlimits"]["fsize"])
    init = os.fork()
    if init == 0:
        try:
            conn.close()
            _pid1(spec, files, err_fd, answers_fd)
        except BaseException as exc:
            os.write(
                err_fd, f"the kernel could not start: {type(exc).__name__}: {exc}"[:300].encode() + b"\n"
            )
        os._exit(1)
    os.close(err_fd)
    os.close(answers_fd)
    init_fd = os.pidfd_open(init)
    while True:
        ready, _, _ = select.select([conn.fileno(), init_fd], [], [])
        if init_fd in ready:
            break
        if not conn.recv(16):  # the worker has gone: so does the submission
            signal.pidfd_send_signal(init_fd, signal.SIGKILL)
            break
    _, _, children = os.wait4(init, 0)
    own = resource.getrusage(resource.RUSAGE_SELF)
    cpu = children.ru_utime + children.ru_stime + own.ru_utime + own.ru_stime
    try:
        conn.send(json.dumps({"cpu_s": round(cpu, 3)}).encode())
    except OSError:
        pass
    os._exit(0)


def _reap() -> None:
    while True:
        try:
            pid, _ = os.waitpid(-1, os.WNOHANG)
        except ChildProcessError:
            return
        if pid == 0:
            return


def serve(argv: list[str] | None = None) -> None:
    """The template's life: import, tell the grader it is ready, fork a child per request."""
    argv = list(sys.argv[1:] if argv is None else argv)
    kernel._read_stage(argv[0])  # its spec names no files: only that the stage is there
    sock = socket.socket(fileno=int(argv[1]))
    kernel._lean_imports()
    for name in PRELOAD:
        try:
            importlib.import_module(name)
        except ImportError:
            pass
    tasks = len(os.listdir("/proc/self/task"))
    if threading.active_count() != 1 or tasks != 1:
        sock.send(f"the template runs {tasks} threads after its imports; it forks none".encode())
        os._exit(1)
    sock.send(b"ready")
    while True:
        try:
            msg, fds, _, _ = socket.recv_fds(sock, 4096, 4)
        except InterruptedError:
            continue
        if not msg:  # the grader has closed its end: the last child has ended
            _reap()
            os._exit(0)
        _reap()
        if len(fds) == 4 and os.fork() == 0:
            try:
                sock.close()
                _child(json.loads(msg), fds)
            finally:
                os._exit(1)
        for fd in fds:
            os.close(fd)
