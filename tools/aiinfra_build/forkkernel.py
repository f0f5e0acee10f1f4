"""Fresh IPython kernels forked from a process that has already imported what the pages import.

A kernel that starts from nothing spends most of a short page importing: ipykernel and
IPython, numpy, matplotlib, sympy, jsonschema (through myst-nb's ``glue``) and ``aiinfra``
(about 1.5 CPU seconds of a 2-second page). A :class:`Zygote` is a Python process that
imports all of that once, runs nothing else, and forks one kernel per notebook: every kernel
is a new process with its own memory (copy-on-write), its own working folder, environment and
process group, exactly one notebook's lifetime, and no state of any other notebook (the
zygote never executes a cell). :class:`ForkKernelManager` plugs it into nbclient (and so into
jupyter-cache and myst-nb) through ``kernel_manager_class``.

It leans on jupyter_client internals (pinned in requirements.txt): the manager's
``_async_pre_start_kernel`` and the ``process``/``pid``/``pgid`` fields of its
``LocalProvisioner``. :func:`missing_private_api` is the one place that checks them; where it
finds one missing, or the zygote does not start, or a fork fails, the build falls back to
nbclient's own kernels (:func:`start` returns None, :func:`kernel_manager_class` None, a failed
spawn launches the kernel the ordinary way).

The kernel is launched as ``python -m ipykernel_launcher`` would launch it: the current
folder out of ``sys.path`` until IPython puts it back, ``sys.argv`` of the launcher, a new
session, the environment of the request (plus what the imports set, e.g. ipykernel's
``PYDEVD_*``), fresh random seeds. Modules whose import depends on the IPython shell that is
running (``matplotlib_inline``'s integration) are not imported ahead.
"""

from __future__ import annotations

import ast
import json
import os
import select
import signal
import socket
import subprocess
import sys
import time
import warnings
from pathlib import Path

from jupyter_client.manager import AsyncKernelManager
from jupyter_client.provisioning import LocalProvisioner

PR_SET_PDEATHSIG = 1
#: Imported ahead besides the pages' own imports: the kernel itself and what the library
#: imports lazily (figures, widgets, sympy twins, myst-nb's glue).
KERNEL_MODULES = (
    "ipykernel.kernelapp",
    "ipykernel.ipkernel",
    "ipykernel.zmqshell",
    "ipykernel.comm",
    "IPython.core.interactiveshell",
    "IPython.display",
    "jupyter_client.session",
)
LAZY_MODULES = (
    "myst_nb.ext.glue",
    "matplotlib.pyplot",
    "matplotlib.backends.backend_agg",
    "PIL.Image",
    "PIL.PngImagePlugin",
    "ipywidgets",
    "sympy",
)
#: Never ahead: these configure themselves for the shell that imports them.
NEVER = ("matplotlib_inline",)


def page_imports(sources: list[str]) -> list[str]:
    """The import statements at the top level of the cells (as source lines), in order, once each."""
    seen, out = set(), []
    for src in sources:
        try:
            tree = ast.parse(src)
        except SyntaxError:  # IPython magics: the kernel will say so when it runs the cell
            continue
        for node in tree.body:
            if isinstance(node, (ast.Import, ast.ImportFrom)) and getattr(node, "level", 0) == 0:
                line = ast.unparse(node)
                if line not in seen and not any(n in line for n in NEVER):
                    seen.add(line)
                    out.append(line)
    return out


# --- the zygote process -----------------------------------------------------------------------


def _preload(statements: list[str]) -> list[str]:
    """Run the import statements in a scratch namespace; returns those that failed (left to the kernel)."""
    failed = []
    scratch: dict = {}
    for line in [f"import {m}" for m in KERNEL_MODULES + LAZY_MODULES] + statements:
        try:
            exec(compile(line, "<preload>", "exec"), scratch)  # import statements only
        except Exception:  # an import that fails here fails in the page too, with its own traceback
            failed.append(line)
    return failed


def _reap() -> list[tuple[int, int]]:
    done: list[tuple[int, int]] = []
    while True:
        try:
            pid, status = os.waitpid(-1, os.WNOHANG)
        except ChildProcessError:
            return done
        if pid == 0:
            return done
        done.append((pid, os.waitstatus_to_exitcode(status)))


def _become_kernel(request: dict, env_delta: dict, removed: list[str], sock: socket.socket) -> None:
    """In the forked child: turn into ``python -m ipykernel_launcher ARGS`` run in ``cwd`` with ``env``."""
    code = 1
    try:
        sock.close()
        os.setsid()
        import ctypes

        ctypes.CDLL(None).prctl(PR_SET_PDEATHSIG, signal.SIGKILL, 0, 0, 0)  # dies with the zygote
        if os.getppid() != request["zygote"]:
            os._exit(1)
        devnull = os.open(os.devnull, os.O_RDONLY)
        os.dup2(devnull, 0)
        os.close(devnull)
        os.chdir(request["cwd"])
        env = dict(request["env"])
        for key in removed:
            env.pop(key, None)
        env.update(env_delta)
        os.environ.clear()
        os.environ.update(env)
        import random

        random.seed()
        if "numpy" in sys.modules:
            sys.modules["numpy"].random.seed()
        import ipykernel_launcher
        from ipykernel import kernelapp

        sys.argv = [ipykernel_launcher.__file__, *request["args"]]
        # the trait's default reads $JPY_PARENT_PID when ipykernel is imported: in the zygote
        parent = [f"--IPKernelApp.parent_handle={env['JPY_PARENT_PID']}"] if env.get("JPY_PARENT_PID") else []
        kernelapp.launch_new_instance([*request["args"], *parent])
        code = 0
    except SystemExit as exc:
        code = exc.code if isinstance(exc.code, int) else (0 if exc.code is None else 1)
    except BaseException:
        import traceback

        traceback.print_exc()
    finally:
        try:
            sys.stdout.flush()
            sys.stderr.flush()
        finally:
            os._exit(code)


def zygote_main(fd: int, statements_json: str) -> None:
    """Import ahead, then fork a kernel per request read from the socket ``fd`` (JSON lines)."""
    if sys.path and sys.path[0] in ("", os.getcwd()):
        del sys.path[0]  # as ipykernel_launcher does; IPython puts the kernel's cwd back
    before = dict(os.environ)
    failed = _preload(json.loads(statements_json))
    env_delta = {k: v for k, v in os.environ.items() if before.get(k) != v}
    removed = [k for k in before if k not in os.environ]
    sock = socket.socket(fileno=fd)
    sock.sendall((json.dumps({"ready": os.getpid(), "failed": failed}) + "\n").encode())
    buf = b""
    while True:
        ready, _, _ = select.select([sock], [], [], 0.5)
        _reap()
        if not ready:
            continue
        chunk = sock.recv(1 << 20)
        if not chunk:
            break  # the client has gone: the kernels die with this process
        buf += chunk
        while b"\n" in buf:
            line, buf = buf.split(b"\n", 1)
            request = json.loads(line)
            request["zygote"] = os.getpid()
            pid = os.fork()
            if pid == 0:
                _become_kernel(request, env_delta, removed, sock)
            sock.sendall((json.dumps({"pid": pid}) + "\n").encode())
    os._exit(0)


# --- the client side ----------------------------------------------------------------------------


class Zygote:
    """A running zygote (one per client process): ``spawn()`` forks a kernel from it."""

    def __init__(self, statements: list[str], env: dict | None = None, python: str = sys.executable):
        mine, theirs = socket.socketpair()
        code = f"import sys; from aiinfra_build import forkkernel; forkkernel.zygote_main({theirs.fileno()}, sys.argv[1])"
        t0 = time.perf_counter()
        self.proc = subprocess.Popen(
            [python, "-c", code, json.dumps(statements)],
            pass_fds=[theirs.fileno()],
            stdin=subprocess.DEVNULL,
            env=env,
            cwd="/",
        )
        theirs.close()
        self.sock = mine
        self.file = mine.makefile("rb")
        hello = self._read()
        self.pid, self.failed = hello["ready"], hello["failed"]
        self.startup_s = time.perf_counter() - t0

    def _read(self) -> dict:
        line = self.file.readline()
        if not line:
            raise RuntimeError(f"the kernel zygote exited (status {self.proc.wait()})")
        return json.loads(line)

    def spawn(self, args: list[str], cwd: str, env: dict) -> int:
        self.sock.sendall((json.dumps({"args": args, "cwd": cwd, "env": env}) + "\n").encode())
        return self._read()["pid"]

    def close(self) -> None:
        """End the zygote (and any kernel still running): it exits when it reads the end of the socket."""
        self.file.close()  # the socket's file holds the descriptor open too
        self.sock.close()
        try:
            self.proc.wait(timeout=10)
        except subprocess.TimeoutExpired:
            self.proc.kill()
            self.proc.wait()


class _Forked:
    """The part of ``subprocess.Popen`` that jupyter_client uses, for a kernel the zygote forked."""

    stdin = stdout = stderr = None

    def __init__(self, pid: int):
        self.pid, self.returncode = pid, None
        self._fd = os.pidfd_open(pid)

    def poll(self):
        if self.returncode is None and select.select([self._fd], [], [], 0)[0]:
            self._done()
        return self.returncode

    def wait(self, timeout=None):
        if self.returncode is None:
            if not select.select([self._fd], [], [], timeout)[0]:
                raise subprocess.TimeoutExpired(f"kernel {self.pid}", timeout)
            self._done()
        return self.returncode

    def _done(self):
        self.returncode = 0  # the zygote, its parent, reaps it; the status is not needed here
        os.close(self._fd)

    def send_signal(self, signum: int) -> None:
        if self.returncode is None:
            signal.pidfd_send_signal(self._fd, signum)

    def kill(self) -> None:
        self.send_signal(signal.SIGKILL)

    def terminate(self) -> None:
        self.send_signal(signal.SIGTERM)


class ForkProvisioner(LocalProvisioner):
    """LocalProvisioner that forks ``python -m ipykernel_launcher`` kernels from :attr:`zygote`."""

    zygote: Zygote | None = None

    async def launch_kernel(self, cmd, **kwargs):
        if self.zygote is None or "ipykernel_launcher" not in cmd:
            return await super().launch_kernel(cmd, **kwargs)
        args = cmd[cmd.index("ipykernel_launcher") + 1 :]
        env = dict(kwargs.get("env") or os.environ)
        env["JPY_PARENT_PID"] = str(os.getpid())
        try:
            pid = self.zygote.spawn(args, str(kwargs.get("cwd") or os.getcwd()), env)
            process = _Forked(pid)
        except (OSError, RuntimeError, ValueError) as exc:  # the zygote died, or fork/pidfd failed
            warnings.warn(f"forked kernel unavailable ({exc!r}): starting a plain kernel", stacklevel=1)
            return await super().launch_kernel(cmd, **kwargs)
        self.process = process
        self.pid = self.pgid = pid
        self.cwd = kwargs.get("cwd", Path.cwd())
        return self.connection_info


class ForkKernelManager(AsyncKernelManager):
    """nbclient's kernel manager with its kernels forked from the zygote of this process."""

    async def _async_pre_start_kernel(self, **kw):
        if self.provisioner is None:
            self.kernel_id = self.kernel_id or kw.pop("kernel_id", None) or __import__("uuid").uuid4().hex
            self.provisioner = ForkProvisioner(
                kernel_id=self.kernel_id, kernel_spec=self.kernel_spec, parent=self
            )
        return await super()._async_pre_start_kernel(**kw)

    pre_start_kernel = _async_pre_start_kernel


def missing_private_api() -> str | None:
    """What of jupyter_client's internals :class:`ForkKernelManager` relies on is missing (None: all there).

    The manager overrides ``_async_pre_start_kernel`` (to install :class:`ForkProvisioner`), and
    the provisioner sets the ``process``, ``pid`` and ``pgid`` that ``LocalProvisioner`` keeps.
    """
    if not callable(getattr(AsyncKernelManager, "_async_pre_start_kernel", None)):
        return "AsyncKernelManager._async_pre_start_kernel"
    for name in ("process", "pid", "pgid", "launch_kernel", "connection_info"):
        if not hasattr(LocalProvisioner, name):
            return f"LocalProvisioner.{name}"
    if not hasattr(os, "pidfd_open") or not hasattr(signal, "pidfd_send_signal"):
        return "os.pidfd_open (Linux 5.3 or later, Python 3.9 or later)"
    return None


def start(statements: list[str], env: dict | None = None) -> Zygote | None:
    """Start this process's zygote, every :class:`ForkKernelManager` then forks from it; None: plain kernels.

    None (with a warning) when :func:`missing_private_api` names something or the zygote does
    not start; :func:`kernel_manager_class` then gives nbclient's own manager.
    """
    missing = missing_private_api()
    if missing is not None:
        warnings.warn(f"jupyter_client has no {missing}: plain kernels, not forked", stacklevel=2)
        return None
    try:
        ForkProvisioner.zygote = Zygote(statements, env=env)
    except (OSError, RuntimeError, ValueError) as exc:
        warnings.warn(f"the kernel zygote did not start ({exc!r}): plain kernels", stacklevel=2)
        return None
    return ForkProvisioner.zygote


def kernel_manager_class() -> type[AsyncKernelManager] | None:
    """The kernel manager for nbclient: :class:`ForkKernelManager` while a zygote runs, else None (nbclient's)."""
    return ForkKernelManager if ForkProvisioner.zygote is not None else None
