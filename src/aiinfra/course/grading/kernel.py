"""The first code that runs inside a sandbox: set the limits, drop privileges, start the kernel.

Started by :mod:`~aiinfra.course.grading.sandbox` as ``python -I -c <import this; main()> STAGE``
with ``/`` as working directory, so nothing of the submission is on the import
path while the interpreter starts (or, forked from a worker's template, by
:mod:`~aiinfra.course.grading.zygote`, which reads the stage and calls :func:`run`). In order:

1. read the stage the grader prepared (``spec.json``, the submission's files,
   the connection file) while still allowed to;
2. set the hard resource limits (address space, file size, open files, no core
   dumps, and processes per uid where the uid is the sandbox's own), then fork:
   this process stays behind as PID 1 of the sandbox (:func:`_init`), with its
   uid and without capabilities, reaping orphans. When the kernel ends, it ends
   too, and the PID namespace goes with it: every process the notebook started
   dies at that moment. Because it keeps bubblewrap's uid, bubblewrap's death
   signal reaches it (a signal from a capability-less root to the sandbox uid
   would be refused), so the chain grader -> worker -> bubblewrap -> sandbox
   holds when the grader is killed;
3. in the child, as root: drop to the sandbox uid and gid, no supplementary
   groups; then set ``no_new_privs`` and, where asked, enter a fresh user
   namespace (owning nothing) and clear the capabilities it granted; last, ask
   for SIGKILL when PID 1 dies (what matters without namespaces);
4. write the submission into the work folder, chdir there and start an IPython
   kernel whose sockets *connect* to the grader (the grader binds them in a
   folder it owns and the sandbox sees read-only), without a heartbeat thread.

``answer()`` reaches the grader through the inherited pipe named in
``$AIINFRA_ANSWERS_FD`` (:mod:`aiinfra.course.exercises.record`).
"""

from __future__ import annotations

import ctypes
import json
import logging
import os
import resource
import signal
import sys

PR_SET_PDEATHSIG = 1
PR_SET_DUMPABLE = 4
PR_SET_NO_NEW_PRIVS = 38
CLONE_NEWUSER = 0x10000000
_CAP_VERSION_3 = 0x20080522
_LIMITS = {
    "as": resource.RLIMIT_AS,
    "fsize": resource.RLIMIT_FSIZE,
    "core": resource.RLIMIT_CORE,
    "nofile": resource.RLIMIT_NOFILE,
    "nproc": resource.RLIMIT_NPROC,
}


def _libc():
    return ctypes.CDLL(None, use_errno=True)


def _fail(libc_call: int, what: str) -> None:
    if libc_call != 0:
        err = ctypes.get_errno()
        raise OSError(err, f"{what}: {os.strerror(err)}")


def _read_stage(stage: str, dir_fd: int | None = None) -> tuple[dict, list[tuple[list[str], bytes]]]:
    """The spec and the files of a stage: a path, or a path relative to an open folder (``dir_fd``)."""

    def opener(path: str, flags: int) -> int:
        return os.open(path, flags, dir_fd=dir_fd)

    with open(os.path.join(stage, "spec.json"), encoding="utf-8", opener=opener) as text:
        spec = json.load(text)
    files = []
    for parts, name in spec["files"]:
        with open(os.path.join(stage, "files", name), "rb", opener=opener) as fh:
            files.append((parts, fh.read()))
    return spec, files


def _set_limits(limits: dict) -> None:
    for name, value in limits.items():
        which = _LIMITS[name]
        _, hard = resource.getrlimit(which)
        value = value if hard == resource.RLIM_INFINITY else min(value, hard)
        resource.setrlimit(which, (value, value))


class _CapHeader(ctypes.Structure):
    _fields_ = [("version", ctypes.c_uint32), ("pid", ctypes.c_int)]


class _CapData(ctypes.Structure):
    _fields_ = [
        ("effective", ctypes.c_uint32),
        ("permitted", ctypes.c_uint32),
        ("inheritable", ctypes.c_uint32),
    ]


def _enter_user_namespace(libc) -> None:
    """A fresh user namespace mapping only our own uid and gid; its capabilities are cleared at once."""
    uid, gid = os.geteuid(), os.getegid()
    _fail(libc.unshare(CLONE_NEWUSER), "unshare(CLONE_NEWUSER)")
    for name, text in (
        ("setgroups", "deny"),
        ("uid_map", f"{uid} {uid} 1\n"),
        ("gid_map", f"{gid} {gid} 1\n"),
    ):
        with open(f"/proc/self/{name}", "w", encoding="ascii") as fh:
            fh.write(text)
    data = (_CapData * 2)()
    _fail(libc.capset(ctypes.byref(_CapHeader(_CAP_VERSION_3, 0)), data), "capset")


def drop_privileges(spec: dict) -> None:
    """Step 3 of the module docstring (the limits are already set)."""
    libc = _libc()
    parent = os.getppid()
    uid: int | None = spec.get("uid")
    if uid is not None and os.geteuid() == 0:
        gid: int = spec["gid"]  # every spec with a uid has its gid (sandbox.py, extract.py)
        os.setgroups([])
        os.setresgid(gid, gid, gid)
        os.setresuid(uid, uid, uid)
    _fail(libc.prctl(PR_SET_NO_NEW_PRIVS, 1, 0, 0, 0), "prctl(NO_NEW_PRIVS)")
    if spec.get("userns"):
        # a uid change made the process non-dumpable, which makes /proc/self/*_map root's
        _fail(libc.prctl(PR_SET_DUMPABLE, 1, 0, 0, 0), "prctl(DUMPABLE)")
        _enter_user_namespace(libc)
    _fail(
        libc.prctl(PR_SET_PDEATHSIG, signal.SIGKILL, 0, 0, 0), "prctl(PDEATHSIG)"
    )  # cleared by a uid change
    if os.getppid() != parent:
        os._exit(1)


def _init(kernel_pid: int, keep_caps: bool) -> None:
    """PID 1's whole life: reap children, and end (taking the namespace with it) when the kernel ends.

    It keeps the uid it started with, so the death signal of bubblewrap (or of
    the grader worker) reaches it; it holds no capabilities inside bubblewrap.
    """
    try:
        libc = _libc()
        if not keep_caps:
            _fail(libc.capset(ctypes.byref(_CapHeader(_CAP_VERSION_3, 0)), (_CapData * 2)()), "capset")
        _fail(libc.prctl(PR_SET_NO_NEW_PRIVS, 1, 0, 0, 0), "prctl(NO_NEW_PRIVS)")
        while True:
            try:
                pid, status = os.wait()
            except InterruptedError:
                continue
            if pid == kernel_pid:
                os._exit(os.waitstatus_to_exitcode(status) & 0xFF)
    finally:
        os._exit(1)  # never run the kernel's code here; ending takes the kernel with it


def _write_files(work: str, files: list[tuple[list[str], bytes]]) -> None:
    os.makedirs(work, mode=0o700, exist_ok=True)
    for parts, data in files:
        folder = os.path.join(work, *parts[:-1])
        os.makedirs(folder, mode=0o700, exist_ok=True)
        with open(os.path.join(folder, parts[-1]), "xb") as fh:
            fh.write(data)


def _lean_imports() -> None:
    """Leave out what a graded kernel never uses, before ipykernel is imported (a third of its start-up).

    * debugpy: without it ipykernel runs no debugger (nobody attaches to a graded kernel);
    * jupyter_client's package body, which imports its kernel managers, provisioners (and their
      entry points) and clients: the kernel needs only its session and connection modules. The
      package is registered without running its ``__init__``; the first use of any other
      name runs it then, so ``import jupyter_client`` in a notebook still sees all of it. The two
      submodules it needs are imported by their full names: ``from jupyter_client import _version``
      would look the name up on the package first, and that lookup would run the whole body.
    """
    import importlib
    import importlib.util

    # None in sys.modules makes the import fail (documented in the import system); typeshed allows modules only
    sys.modules.setdefault("debugpy", None)  # type: ignore[arg-type]
    if "jupyter_client" in sys.modules:
        return
    spec = importlib.util.find_spec("jupyter_client")
    if spec is None or spec.loader is None or not spec.submodule_search_locations:
        return
    pkg = importlib.util.module_from_spec(spec)
    full: list[bool] = []

    def __getattr__(name):
        if not full:
            full.append(True)
            spec.loader.exec_module(pkg)
            if name in pkg.__dict__:
                return pkg.__dict__[name]
        raise AttributeError(f"module 'jupyter_client' has no attribute {name!r}")

    vars(pkg)["__getattr__"] = __getattr__  # a module's own __getattr__ (PEP 562)
    sys.modules["jupyter_client"] = pkg
    _version = importlib.import_module("jupyter_client._version")
    connect = importlib.import_module("jupyter_client.connect")
    vars(pkg).update(
        __version__=_version.__version__,
        version_info=_version.version_info,
        protocol_version=_version.protocol_version,
        protocol_version_info=_version.protocol_version_info,
        write_connection_file=connect.write_connection_file,
    )


STREAM_CHUNK_CHARS = 16384  # at most 64 KiB of UTF-8 per stream message, far below the grader's size cap


def _chunked_outstream(limit_chars: int):
    """ipykernel's stdout/stderr, sending what it buffered in pieces of at most STREAM_CHUNK_CHARS,
    and at most ``limit_chars`` characters in all (stdout and stderr together).

    ipykernel batches stream output between flushes into one message; a print loop would
    then send one message above the grader's size cap, which is refused unread. In pieces,
    a flood reaches the grader's output cap and is reported as such; the limit (the grader's
    cap plus one piece, so the grader still sees the cap crossed) keeps a flood from filling
    the IOPub queue, where a dropped status message would stall the run.
    """
    from ipykernel.iostream import OutStream

    sent = [0]

    class ChunkedOutStream(OutStream):
        def _flush_buffers(self):
            for parent, data in super()._flush_buffers():
                data = data[: max(limit_chars - sent[0], 0)]
                sent[0] += len(data)
                for i in range(0, len(data), STREAM_CHUNK_CHARS):
                    yield parent, data[i : i + STREAM_CHUNK_CHARS]

    globals()["ChunkedOutStream"] = ChunkedOutStream
    return f"{__name__}.ChunkedOutStream"


def _kernel_app_class(stream_limit_chars: int):
    _lean_imports()
    from ipykernel.ipkernel import IPythonKernel
    from ipykernel.kernelapp import IPKernelApp
    from ipykernel.kernelbase import Kernel
    from IPython.core.compilerop import CachingCompiler
    from traitlets import Type

    outstream = _chunked_outstream(stream_limit_chars)

    class SandboxKernel(IPythonKernel):
        """IPython's own cell compiler: ipykernel's names every cell by a pure-Python hash, for
        debuggers (about a millisecond a cell), and no debugger attaches to a graded kernel."""

        # ipykernel types the trait as its XCachingCompiler subclass; IPython's base class is what we want
        compiler_class = Type(CachingCompiler)  # type: ignore[assignment]

    class SandboxKernelApp(IPKernelApp):
        """An IPython kernel that connects to sockets the grader has bound, and runs no heartbeat."""

        _deferred = None
        outstream_class = outstream
        kernel_class = Type(SandboxKernel, klass=Kernel)
        # a kernel makes no client; resolving the default ("jupyter_client.BlockingKernelClient")
        # would run the package body that _lean_imports leaves out
        blocking_class = Type(object, klass=object)

        def _try_bind_socket(self, s, port):
            url = f"ipc://{self.ip}-{port}"
            if s is getattr(self, "shell_socket", None):
                self._deferred = (s, url)  # after init_control, so its debug socket stays unconnected
            else:
                s.connect(url)
            return port

        def init_sockets(self):
            super().init_sockets()
            sock, url = self._deferred
            sock.connect(url)

        def init_heartbeat(self):
            self.heartbeat = None

    return SandboxKernelApp


def _start_failed(exc: BaseException) -> None:
    """The last line on stderr names the failure (the grader reports it); the kernel never starts."""
    sys.stderr.write(f"the kernel could not start: {type(exc).__name__}: {exc}"[:300] + "\n")
    sys.stderr.flush()
    os._exit(1)


def main(argv: list[str] | None = None) -> None:
    argv = list(sys.argv[1:] if argv is None else argv)
    stage = argv[0]  # arguments after it (nbclient's) are ignored
    run(*_read_stage(stage))


def run(spec: dict, files: list) -> None:
    """Steps 2 to 4 of the module docstring, from the stage already read; never returns."""
    _set_limits(spec["rlimits"])
    kernel = os.fork()
    if kernel:
        _init(kernel, keep_caps=not spec["namespaces"])
    signal.signal(signal.SIGXFSZ, signal.SIG_IGN)  # a file above the disk cap fails to write, with a reason
    try:
        _prepare(spec, files)
    except Exception as exc:
        _start_failed(exc)
    app_class = _kernel_app_class(
        spec["output_bytes"] + STREAM_CHUNK_CHARS
    )  # before the student's folder joins the path
    site = next(
        (i for i, p in enumerate(sys.path) if p.endswith(("site-packages", "dist-packages"))), len(sys.path)
    )
    sys.path.insert(site, spec["work"])  # the student's own modules, as IPython would add the cwd
    app = app_class.instance()
    app.initialize(
        ["-f", spec["connection_file"], "--HistoryManager.enabled=False", "--IPKernelApp.log_level=CRITICAL"]
    )
    app.log.setLevel(logging.CRITICAL)  # not just the handler: each debug call would still build a record
    app.start()


def _prepare(spec: dict, files: list) -> None:
    """Steps 3 and 4 up to the kernel: drop privileges, write the files, the connection and the sheet."""
    drop_privileges(spec)
    home, work = spec["home"], spec["work"]
    os.makedirs(home, mode=0o700, exist_ok=True)
    _write_files(work, files)
    spec["connection_file"] = os.path.join(home, ".kernel.json")
    with open(spec["connection_file"], "w", encoding="utf-8") as fh:
        json.dump(spec["connection"], fh)
    with open(spec["env"]["AIINFRA_SHEET"], "w", encoding="utf-8") as fh:
        json.dump(spec["sheet"], fh)
    os.environ.clear()
    os.environ.update(spec["env"])
    os.chdir(work)


def probe(argv: list[str] | None = None) -> None:
    """Run once per batch in a sandbox built like the real ones: print what a kernel there can read."""
    argv = list(sys.argv[1:] if argv is None else argv)
    spec, _ = _read_stage(argv[0])
    _set_limits(spec["rlimits"])
    drop_privileges(spec)
    report = {
        "uid": os.getuid(),
        "readable": {p: os.access(p, os.R_OK) for p in spec["probe"]["needed"]},
        "present": {p: os.path.lexists(p) for p in spec["probe"]["hidden"]},
    }
    print(json.dumps(report))
