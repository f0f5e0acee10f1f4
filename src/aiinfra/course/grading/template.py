"""A worker slot's template kernel, seen from the grader (start, stop) and from its workers (fork).

The grader starts one :class:`Template` per worker slot and batch, where the plan says so
(:attr:`~aiinfra.course.grading.sandbox.Plan.templates`: root with bubblewrap): one bubblewrap
sandbox built like the per-submission ones, running :mod:`~aiinfra.course.grading.zygote`, which
dies with the grader (``--die-with-parent``). A submission's worker asks it for a kernel with
:meth:`Template.fork`, moves the child into the slot's control groups before it runs anything,
and gets a :class:`ForkedKernel` that jupyter_client keeps as the kernel's process. A template
that has died (or cannot fork) raises ``OSError``: the worker then starts the kernel in a fresh
sandbox, as without templates, and the grader starts the template again before the slot's next
submission. A template's death leaves the kernels it forked running: they have namespaces of their
own, and end with their worker.
"""

from __future__ import annotations

import json
import os
import secrets
import select
import signal
import socket
import subprocess
from pathlib import Path

from .bounded import remove_tree
from .sandbox import START_ENV, Plan, write_identity_files

READY_TIMEOUT_S = 60.0
CLOSE_TIMEOUT_S = 5.0


def _children(pid: int) -> list[int]:
    try:
        return [int(c) for c in Path(f"/proc/{pid}/task/{pid}/children").read_text().split()]
    except OSError:
        return []


class ForkedKernel:
    """What jupyter_client's provisioner keeps of a kernel's process, for a child of a template.

    ``pid`` is the child's (the template's child that waits for the submission's PID 1, as
    bubblewrap does for a fresh sandbox); signals go to that PID 1, so the child lives on to
    report the CPU seconds of everything that ran (:attr:`cpu_s`, None where it could not).
    The exit status of a process that is not this worker's child is unknown: 0 once it ended.
    """

    stdin = stdout = stderr = None

    def __init__(self, pidfd: int, conn: socket.socket):
        self.pidfd, self.conn = pidfd, conn
        self.returncode: int | None = None
        self.cpu_s: float | None = None
        with open(f"/proc/self/fdinfo/{pidfd}", encoding="ascii") as fh:
            self.pid = next(int(line.split()[1]) for line in fh if line.startswith("Pid:"))

    def poll(self) -> int | None:
        if self.returncode is None and select.select([self.pidfd], [], [], 0)[0]:
            self.returncode = 0
            self.conn.setblocking(False)
            try:
                self.cpu_s = float(json.loads(self.conn.recv(256))["cpu_s"])
            except (OSError, ValueError, KeyError, TypeError):
                pass
        return self.returncode

    def wait(self, timeout: float | None = None) -> int:
        if not select.select([self.pidfd], [], [], timeout)[0]:
            raise subprocess.TimeoutExpired("the forked kernel", timeout or 0)
        return self.poll() or 0

    def send_signal(self, signum: int) -> None:
        if self.returncode is None:
            try:
                os.kill((_children(self.pid) or [self.pid])[0], signum)
            except ProcessLookupError:
                pass

    def kill(self) -> None:
        self.send_signal(signal.SIGKILL)

    def close(self) -> None:
        self.conn.close()
        os.close(self.pidfd)


class Template:
    """One worker slot's template: ``start()`` once, ``fork()`` per submission, ``close()`` at the end."""

    def __init__(self, plan: Plan, slot: int, run_dir: str, fallback_root: str):
        self.plan, self.slot = plan, slot
        self.stage = os.path.join(run_dir, f"template-{slot}")
        # the socket folders of this slot's submissions, each under a name nobody can guess (mode 0711)
        self.ipcs = os.path.join(fallback_root, f"template-{slot}-{secrets.token_hex(8)}")
        self.proc: subprocess.Popen | None = None
        self.sock: socket.socket | None = None

    def start(self) -> str | None:
        """Start it and wait until it has imported what kernels need: None, or why it did not start."""
        self.close()
        os.mkdir(self.stage, 0o700)
        os.mkdir(self.ipcs, 0o711)
        write_identity_files(self.stage, self.plan.uid(self.slot))
        Path(self.stage, "spec.json").write_text(json.dumps({"files": []}))
        env = dict(START_ENV)
        mine, theirs = socket.socketpair(socket.AF_UNIX, socket.SOCK_SEQPACKET)
        err_path = self.stage + ".err"
        with open(err_path, "wb") as err:
            self.proc = subprocess.Popen(
                self.plan.template_command(self.stage, self.ipcs, env, theirs.fileno()),
                stdin=subprocess.DEVNULL,
                stdout=subprocess.DEVNULL,
                stderr=err,
                pass_fds=(theirs.fileno(),),
                cwd=self.stage,
                env=env,
            )
        theirs.close()
        self.sock = mine
        mine.settimeout(READY_TIMEOUT_S)
        try:
            said = mine.recv(4096)
        except OSError as exc:
            said = str(exc).encode()
        mine.settimeout(None)
        if said == b"ready":
            return None
        lines = Path(err_path).read_text(errors="replace").strip().splitlines()
        self.close()
        return (said.decode(errors="replace") or (lines[-1] if lines else "it exited"))[:300]

    def alive(self) -> bool:
        return self.proc is not None and self.proc.poll() is None

    def close(self) -> None:
        if self.sock is not None:
            self.sock.close()
            self.sock = None
        if self.proc is not None:  # it ends at the socket's end: reaped, its CPU seconds reach the grader
            try:
                self.proc.wait(timeout=CLOSE_TIMEOUT_S)
            except subprocess.TimeoutExpired:
                self.proc.kill()
                self.proc.wait()
            self.proc = None
        for path in (self.stage, self.ipcs, self.stage + ".err"):
            remove_tree(path)

    def fork(
        self, stage: str, ipc: str, stderr_fd: int, answers_fd: int, procs_files: list[str]
    ) -> ForkedKernel:
        """(In a worker) a kernel for the submission staged in ``stage``, its sockets in ``ipc``
        (a folder of :attr:`ipcs`), in the slot's control groups; OSError if the template cannot."""
        if self.sock is None or os.path.dirname(ipc) != self.ipcs:
            raise OSError("no template runs for this slot")
        mine, theirs = socket.socketpair(socket.AF_UNIX, socket.SOCK_SEQPACKET)
        folder = os.open(stage, os.O_RDONLY | os.O_DIRECTORY)
        try:
            request = json.dumps({"ipc": os.path.basename(ipc)}).encode()
            socket.send_fds(self.sock, [request], [theirs.fileno(), folder, stderr_fd, answers_fd])
        finally:
            theirs.close()
            os.close(folder)
        mine.settimeout(self.plan.limits.startup_timeout_s)
        try:
            msg, fds, _, _ = socket.recv_fds(mine, 64, 1)
        except OSError:
            mine.close()
            raise
        if msg != b"forked" or len(fds) != 1:
            for fd in fds:
                os.close(fd)
            mine.close()
            raise OSError("the template did not fork")
        proc = ForkedKernel(fds[0], mine)
        try:
            for procs in procs_files:
                with open(procs, "w", encoding="ascii") as fh:
                    fh.write(str(proc.pid))
            mine.send(b"go")
        except OSError:
            signal.pidfd_send_signal(proc.pidfd, signal.SIGKILL)
            proc.close()
            raise
        mine.settimeout(None)
        return proc
