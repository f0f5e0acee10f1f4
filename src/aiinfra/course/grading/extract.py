"""Run one submission in its sandbox and bring back what it recorded, as plain JSON.

:class:`Extraction` forks a worker (its own session; it dies with the grader)
that reads the submission within bounds, stages it with the sheet and a spec
for :mod:`~aiinfra.course.grading.kernel`, starts the kernel in the sandbox of
:mod:`~aiinfra.course.grading.sandbox` and executes the code cells one by one with
nbclient. The worker binds the kernel's sockets itself, in a folder the
sandbox sees read-only, and refuses any kernel message above a size cap
before decoding it (ZeroMQ's ``MAXMSGSIZE``).

The execution rule: cells run top to bottom; the first cell that raises, times
out or kills its kernel stops the run, and every answer recorded before that
point counts. Answers reach the grader only through a pipe that ``answer()``
writes to; the worker stops reading it the moment the run stops and then kills
the sandbox, so nothing written later counts. No scoring happens here.
"""

from __future__ import annotations

import asyncio
import json
import multiprocessing
import os
import resource
import secrets
import signal
import stat
import subprocess
import tempfile
import time
from collections.abc import Callable
from pathlib import Path
from queue import Empty
from typing import Any

# Imported here, before any fork, so that every worker starts warm.
import nbformat
import zmq
from jupyter_client.asynchronous import AsyncKernelClient
from jupyter_client.connect import channel_socket_types
from jupyter_client.kernelspec import KernelSpec
from jupyter_client.manager import AsyncKernelManager
from jupyter_client.provisioning import KernelProvisionerFactory
from nbclient import NotebookClient
from nbclient.exceptions import CellExecutionError, CellTimeoutError, DeadKernelError

from . import bounded
from .sandbox import START_ENV, Limits, Plan, write_identity_files
from .submissions import content_hash, read_submission
from .template import ForkedKernel, Template

MAX_ANSWER_BYTES = 2 * 2**20
MAX_ANSWER_LINE_BYTES = 256 * 2**10
MAX_RESULT_BYTES = 8 * 2**20
MAX_STDERR_KEPT = 8 * 2**10
MAX_NOTEBOOK_DEPTH = 64
# address space a worker may add to what it inherits from the grader: nbclient, the capped output
# and the bounded reads need far less; past it the worker fails this submission alone, with a reason
WORKER_HEADROOM_BYTES = 1024 * 2**20
PORTS = {"shell_port": 1, "iopub_port": 2, "stdin_port": 3, "hb_port": 4, "control_port": 5}
PR_SET_PDEATHSIG = 1


# --- the grader's end of the kernel's sockets ------------------------------------------------


class _BindingMixin:
    """Bind (not connect) each channel, refuse oversized messages, and watch for dropped peers."""

    max_message_bytes = 2 * 2**20
    send_timeout_ms = 1000  # a send with no peer (a kernel that never started, or died) fails, never blocks
    monitors: list = []

    def _create_connected_socket(self, channel, identity=None):
        sock = self.context.socket(channel_socket_types[channel])
        sock.linger = 0
        if identity:
            sock.identity = identity
        sock.setsockopt(zmq.MAXMSGSIZE, self.max_message_bytes)
        sock.setsockopt(zmq.SNDTIMEO, self.send_timeout_ms)
        url = self._make_url(channel)
        sock.bind(url)
        os.chmod(url[len("ipc://") :], 0o666)  # the sandbox uid connects; the folder is the grader's
        _BindingMixin.monitors.append(sock.get_monitor_socket(zmq.EVENT_DISCONNECTED))
        return sock


class SandboxClient(_BindingMixin, AsyncKernelClient):
    def start_channels(self, shell=True, iopub=True, stdin=True, hb=True, control=True):
        super().start_channels(shell=shell, iopub=iopub, stdin=stdin, hb=False, control=False)

    async def wait_for_ready(self, timeout: float | None = None) -> None:
        """jupyter_client's wait for ``kernel_info_reply`` with IOPub proven connected, less its idle end.

        jupyter_client then flushes IOPub until 0.2 s pass without a message: a fifth of a
        submission's run spent idle. Here what has arrived is drained and no more is awaited;
        a late message carries the ``kernel_info`` request as its parent, which nbclient ignores.
        A kernel that never connects (its start failed) is noticed within a second: the request's
        send times out instead of blocking, and the kernel's process is checked on every round.
        """
        deadline = time.monotonic() + (float("inf") if timeout is None else timeout)
        while True:
            if not await self._async_is_alive():
                raise RuntimeError("Kernel died before replying to kernel_info")
            try:
                self.kernel_info()
            except zmq.Again:
                await asyncio.sleep(0.05)
                if time.monotonic() > deadline:
                    raise RuntimeError(f"Kernel didn't respond in {timeout:g} seconds") from None
                continue
            try:
                msg = await self.shell_channel.get_msg(timeout=1)
            except Empty:
                pass
            else:
                if msg["msg_type"] == "kernel_info_reply":
                    try:
                        await self.iopub_channel.get_msg(timeout=0.2)  # IOPub is connected: start over if not
                    except Empty:
                        pass
                    else:
                        self._handle_kernel_info_reply(msg)
                        break
            if not await self._async_is_alive():
                raise RuntimeError("Kernel died before replying to kernel_info")
            if time.monotonic() > deadline:
                raise RuntimeError(f"Kernel didn't respond in {timeout:g} seconds")
        while True:
            try:
                await self.iopub_channel.get_msg(timeout=0)
            except Empty:
                return


class SandboxKernelManager(_BindingMixin, AsyncKernelManager):
    #: (stderr fd, answers fd) -> the kernel, forked from the slot's template; None: a fresh sandbox
    fork_kernel: Callable[[int, int], ForkedKernel] | None = None
    forked: ForkedKernel | None = None
    origin = "a fresh sandbox"

    async def _async_launch_kernel(self, kernel_cmd, **kw):
        """Fork the kernel from the template where there is one; where it fails, start a fresh sandbox."""
        if self.fork_kernel is not None:
            try:
                self.forked = self.fork_kernel(kw["stderr"], kw["pass_fds"][0])
            except OSError as exc:
                self.origin = (
                    f"a fresh sandbox (the template could not fork: {bounded.clean_text(str(exc))[:120]})"
                )
            else:
                self.origin = "forked from the worker's template"
                self.provisioner.process, self.provisioner.pid = self.forked, self.forked.pid
                self._reconcile_connection_info(self.provisioner.connection_info)
                return
        await super()._async_launch_kernel(kernel_cmd, **kw)

    def client(self, **kwargs):
        self.client_factory = SandboxClient
        return super().client(**kwargs)

    def _connect_control_socket(self):
        """Unused: the kernel is stopped by killing its sandbox."""


class _CappedClient(NotebookClient):
    """nbclient that counts the cell output against ``output_cap`` bytes and keeps none of it.

    Answers reach the grader through their pipe and errors through the execute replies, so no
    output is read after the run: none is stored (nor validated against the notebook schema).
    It keeps no widget or comm state either (nbclient would store every widget state a
    kernel sends, and open an object per Output widget): comm messages are read and dropped.
    """

    output_cap = 2**20
    output_truncated = False
    _output_bytes = 0

    def __init__(self, *args, **kwargs):
        super().__init__(*args, store_widget_state=False, **kwargs)
        self.comm_open_handlers = {}

    def output(self, outs, msg, display_id, cell_index):
        content = msg.get("content", {})
        size = (
            len(json.dumps(content, default=str))
            if msg.get("msg_type") != "stream"
            else len(content.get("text", ""))
        )
        self._output_bytes += size
        if self._output_bytes > self.output_cap:
            self.output_truncated = True
        return None


# --- reading the submission --------------------------------------------------------------------


def parse_notebook(raw: bytes, limits: Limits):
    """(notebook of its code cells, None) or (None, reason)."""
    try:
        data = bounded.loads(
            raw, max_bytes=limits.max_notebook_bytes, max_depth=MAX_NOTEBOOK_DEPTH, what="the notebook"
        )
    except ValueError as exc:
        return None, f"not a notebook: {exc}"
    if not isinstance(data, dict) or not isinstance(data.get("cells"), list):
        return None, "not a notebook: the JSON has no list of cells"
    if data.get("nbformat") != 4:
        return None, f"not a notebook in format 4 (nbformat is {str(data.get('nbformat'))[:20]})"
    sources = []
    for cell in data["cells"]:
        if not isinstance(cell, dict) or cell.get("cell_type") != "code":
            continue
        src = cell.get("source")
        if isinstance(src, list) and all(isinstance(s, str) for s in src):
            src = "".join(src)
        if not isinstance(src, str):
            return None, "not a notebook: a code cell has no source text"
        sources.append(bounded.clean_text(src))
    return _notebook(sources), None


def _notebook(sources: list[str]):
    """The notebook nbclient runs: these code cells, built as ``nbformat.v4`` builds them, unvalidated.

    ``new_code_cell`` would check every cell against the JSON schema (jsonschema, not the compiled
    validator: a few milliseconds a cell, and the schema compiled again in every worker), which
    the fields set here satisfy by construction.
    """
    node = nbformat.NotebookNode
    cells = [
        node(id=f"c{i}", cell_type="code", metadata=node(), execution_count=None, source=src, outputs=[])
        for i, src in enumerate(sources)
    ]
    return node(nbformat=4, nbformat_minor=5, metadata=node(), cells=cells)


def parse_answers(raw: bytes, truncated: bool = False) -> tuple[dict, str | None, list[str]]:
    """The answer lines: ((exercise, part) -> last record, reported student id, problems)."""
    records: dict = {}
    student = None
    problems = [f"answers beyond the first {MAX_ANSWER_BYTES} bytes were ignored"] if truncated else []
    bad = 0
    for line in raw.split(b"\n"):
        if not line.strip():
            continue
        try:
            rec = bounded.loads(line, max_bytes=MAX_ANSWER_LINE_BYTES, max_depth=4, what="an answer line")
        except ValueError:
            bad += 1
            continue
        if type(rec) is not dict:
            bad += 1
        elif set(rec) == {"student"} and type(rec["student"]) is str:
            student = bounded.clean_text(rec["student"][:128])
        elif type(rec.get("exercise")) is str and type(rec.get("part")) is str:
            rec = {k: bounded.clean_text(v) if type(v) is str else v for k, v in rec.items()}
            records[(rec["exercise"][:16], rec["part"][:4])] = rec
        else:
            bad += 1
    if bad:
        problems.append(f"{bad} unreadable answer line(s) were ignored")
    return records, student, problems


# --- staging and running -----------------------------------------------------------------------


def _stage(
    plan: Plan,
    stage: str,
    ipc: str,
    work: str | None,
    uid: int | None,
    files: list,
    sheet: dict,
    key: str,
    student: str,
    variants: bool,
    answers_fd: int,
) -> dict:
    """Write what the kernel's first code reads (:mod:`~aiinfra.course.grading.kernel`); returns its environment."""
    os.mkdir(os.path.join(stage, "files"), mode=0o700)  # never makedirs: a removed run folder stays removed
    manifest = []
    for n, (parts, data) in enumerate(files):
        name = f"f{n}"
        with open(os.path.join(stage, "files", name), "xb") as fh:
            fh.write(data)
        manifest.append([list(parts), name])
    write_identity_files(stage, uid)
    inside = plan.paths(stage, ipc, work)
    env = {
        **START_ENV,
        "HOME": inside["home"],
        "MPLCONFIGDIR": os.path.join(inside["home"], ".mpl"),
        "IPYTHONDIR": os.path.join(inside["home"], ".ipython"),
        "JUPYTER_RUNTIME_DIR": os.path.join(inside["home"], ".runtime"),
        "TMPDIR": "/tmp" if plan.mode == "bwrap" else inside["work"],
        "AIINFRA_STUDENT_ID": student,
        "AIINFRA_VARIANTS": "1" if variants else "0",
        "AIINFRA_ANSWERS_FD": str(answers_fd),
        "AIINFRA_SHEET": os.path.join(inside["home"], ".aiinfra-sheet.json"),
    }
    connection = {
        "transport": "ipc",
        "ip": os.path.join(inside["ipc"], "k"),
        "key": key,
        "signature_scheme": "hmac-sha256",
        **PORTS,
    }
    spec = {
        "files": manifest,
        "rlimits": plan.rlimits(),
        "uid": uid,
        "gid": uid,
        "userns": plan.userns,
        "namespaces": plan.mode == "bwrap",
        "work": inside["work"],
        "home": inside["home"],
        "env": env,
        "connection": connection,
        "sheet": sheet,
        "output_bytes": plan.limits.output_bytes,
    }
    with open(os.path.join(stage, "spec.json"), "x", encoding="utf-8") as fh:
        json.dump(spec, fh)
    return env


class _Pipe:
    """A pipe the worker drains while the run lasts, keeping at most ``cap`` bytes."""

    def __init__(self, cap: int):
        self.r, self.w = os.pipe()
        os.set_blocking(self.r, False)
        self.cap, self.data, self.truncated = cap, bytearray(), False

    def drain(self) -> bool:
        """Read what is there; False at end of file (every writer has gone)."""
        while True:
            try:
                chunk = os.read(self.r, 1 << 16)
            except BlockingIOError:
                return True
            if not chunk:
                return False
            room = self.cap - len(self.data)
            self.data += chunk[: max(room, 0)]
            self.truncated |= len(chunk) > room

    def follow(self, loop) -> None:
        """Drain from the event loop while the run lasts (and stop watching at end of file)."""

        def ready():
            if not self.drain():
                loop.remove_reader(self.r)

        loop.add_reader(self.r, ready)


async def _execute(
    nb,
    km: SandboxKernelManager,
    limits: Limits,
    answers: _Pipe,
    stderr: _Pipe,
    cwd: str,
    env: dict,
    bwrap: bool,
) -> dict:
    started = time.monotonic()
    deadline = started + limits.total_timeout_s
    client = _CappedClient(
        nb,
        km=km,
        timeout=limits.cell_timeout_s,
        allow_errors=False,
        interrupt_on_timeout=False,
        shutdown_kernel="immediate",
        iopub_timeout=2,
        raise_on_iopub_timeout=False,
        startup_timeout=min(limits.startup_timeout_s, limits.total_timeout_s),
        record_timing=False,
        kernel_name="aiinfra-sandbox",
    )
    client.output_cap = limits.output_bytes
    code_cells = [i for i, c in enumerate(nb.cells) if c.get("cell_type") == "code"]
    out: dict[str, Any] = {"status": "ok", "errors": [], "cells_total": len(code_cells), "cells_run": 0}
    loop = asyncio.get_running_loop()
    answers.follow(loop)
    stderr.follow(loop)
    alive_at_stop, dropped = False, 0
    try:
        async with client.async_setup_kernel(
            cwd=cwd, env=env, stdout=subprocess.DEVNULL, stderr=stderr.w, pass_fds=(answers.w,)
        ):
            os.close(answers.w)
            os.close(stderr.w)
            answers.w = stderr.w = -1
            for n, index in enumerate(code_cells, 1):
                remaining = deadline - time.monotonic()
                if remaining <= 0:
                    out.update(status="timeout")
                    out["errors"].append(
                        f"total time limit of {limits.total_timeout_s:g} s reached before code cell {n}"
                    )
                    break
                client.timeout = max(1, int(min(limits.cell_timeout_s, remaining) + 0.999))
                try:
                    await client.async_execute_cell(nb.cells[index], index)
                    out["cells_run"] = n
                except CellTimeoutError:
                    which = (
                        f"total time limit of {limits.total_timeout_s:g} s"
                        if remaining < limits.cell_timeout_s
                        else f"cell time limit of {limits.cell_timeout_s:g} s"
                    )
                    out.update(status="timeout")
                    out["errors"].append(f"code cell {n} ran past the {which}; the run stopped there")
                    break
                except CellExecutionError as exc:
                    out.update(status="error")
                    ename = bounded.clean_text(str(getattr(exc, "ename", "") or "error"))[:80]
                    evalue = bounded.clean_text(str(getattr(exc, "evalue", "") or ""))[:200]
                    out["errors"].append(f"code cell {n} raised {ename}: {evalue}; the run stopped there")
                    break
                except DeadKernelError:
                    out.update(status="dead")
                    out["errors"].append(
                        f"the kernel died in code cell {n} (exit, crash or memory limit); "
                        "the run stopped there"
                    )
                    break
            # the stop: take what was recorded up to now, then nothing more
            answers.drain()
            loop.remove_reader(answers.r)
            alive_at_stop = await km.is_alive()
            dropped = _dropped_connections() if alive_at_stop else 0  # before the stop disconnects them all
            _stop_sandbox(km, bwrap)
    except DeadKernelError:
        if out["status"] == "ok":
            out.update(status="dead")
            out["errors"].append("the kernel died" + _last_line(stderr, ": "))
    except (RuntimeError, TimeoutError, zmq.ZMQError) as exc:
        if out["status"] == "ok":
            out.update(status="error")
            out["errors"].append(
                f"the kernel could not be run: {_last_line(stderr) or bounded.clean_text(str(exc))}"
            )
    finally:
        for fd in (answers.r, stderr.r):
            loop.remove_reader(fd)
    out["output_truncated"] = bool(client.output_truncated)
    if client.output_truncated:
        out["errors"].append(f"output above {limits.output_bytes} bytes was discarded")
    if dropped:
        out["errors"].append(
            f"{dropped} kernel message(s) above {_BindingMixin.max_message_bytes} bytes "
            "were discarded unread (or the kernel closed a socket)"
        )
    return out


def _last_line(pipe: _Pipe, prefix: str = "") -> str:
    """The last line the sandbox wrote to stderr (bubblewrap's or Python's complaint), if any."""
    pipe.drain()
    lines = pipe.data.decode("utf-8", "replace").strip().splitlines()
    return prefix + bounded.clean_text(lines[-1])[:300] if lines else ""


def _children(pid: int) -> list[int]:
    try:
        return [int(c) for c in Path(f"/proc/{pid}/task/{pid}/children").read_text().split()]
    except OSError:
        return []


def _stop_sandbox(km: SandboxKernelManager, bwrap: bool) -> None:
    """End the run by killing the kernel: PID 1 reaps it and ends, taking the sandbox with it.

    Each level then reaps the one below it, so the kernel's CPU time reaches
    this worker (killing PID 1 itself would lose it).
    """
    proc = getattr(km.provisioner, "process", None)
    if proc is None or proc.poll() is not None:
        return
    init = (_children(proc.pid) or [proc.pid])[0] if bwrap else proc.pid
    try:
        os.kill((_children(init) or [init])[0], signal.SIGKILL)
        proc.wait(timeout=5)
    except (OSError, subprocess.TimeoutExpired):
        pass


def _given(fallback_root: str | None) -> str:
    if fallback_root is None:
        raise ValueError("fallback_root must be a folder when the plan's mode is not 'bwrap'")
    return fallback_root


def _dropped_connections() -> int:
    n = 0
    for mon in _BindingMixin.monitors:
        sync: zmq.Socket = zmq.Socket.shadow(mon.underlying)
        while sync.poll(0):
            sync.recv_multipart()
            n += 1
    return n


def _reap_and_measure(wait_s: float = 1.0) -> tuple[float, float]:
    """Reap the finished sandbox (so its CPU time is counted); return the CPU seconds of this
    worker and its sandbox together, and of this worker alone."""
    end = time.monotonic() + wait_s
    while True:
        try:
            pid, _ = os.waitpid(-1, os.WNOHANG)
        except ChildProcessError:
            break
        if pid == 0:
            if time.monotonic() > end:
                break
            time.sleep(0.01)
    own, sandbox = (resource.getrusage(who) for who in (resource.RUSAGE_SELF, resource.RUSAGE_CHILDREN))
    worker_s = own.ru_utime + own.ru_stime
    return round(worker_s + sandbox.ru_utime + sandbox.ru_stime, 3), round(worker_s, 3)


def _close_inherited() -> None:
    """The worker keeps no file of the grader open: not the gradebook, its journal or its lock.

    Pipes stay: one of them tells the grader when this worker exits.
    """
    for name in os.listdir("/proc/self/fd"):
        fd = int(name)
        try:
            if fd > 2 and stat.S_ISREG(os.fstat(fd).st_mode):
                os.close(fd)
        except OSError:
            pass


def _run(job: dict) -> dict:
    plan: Plan = job["plan"]
    limits = plan.limits
    try:
        raw, files, notes = read_submission(job["sub"], limits)  # the one read: hashed, staged and graded
    except (OSError, ValueError) as exc:
        why = exc.strerror if isinstance(exc, OSError) and exc.strerror else str(exc)
        return {
            "status": "invalid",
            "errors": [f"the submission could not be read: {bounded.clean_text(why)}"],
        }
    sha256 = content_hash(job["sub"], files)
    if len(raw) > limits.max_notebook_bytes:
        return {
            "status": "invalid",
            "errors": [f"the notebook is above the {limits.max_notebook_bytes}-byte limit"],
            "sha256": sha256,
        }
    nb, why = parse_notebook(raw, limits)
    if nb is None:
        return {"status": "invalid", "errors": [why], "sha256": sha256}
    stage, ipc, work, uid = job["stage"], job["ipc"], job["work"], job["uid"]
    answers, stderr = _Pipe(MAX_ANSWER_BYTES), _Pipe(MAX_STDERR_KEPT)
    env = _stage(
        plan,
        stage,
        ipc,
        work,
        uid,
        files,
        job["sheet"],
        job["key"],
        job["student"],
        job["variants"],
        answers.w,
    )
    slot = plan.cgroups.slots[job["slot"]] if plan.cgroups else None
    if slot:
        slot.prepare(limits.memory_bytes, limits.max_processes)
    km = SandboxKernelManager(
        transport="ipc", ip=os.path.join(ipc, "k"), connection_file=os.path.join(stage, "host-kernel.json")
    )
    for name, port in PORTS.items():
        setattr(km, name, port)
    procs = slot.procs_files if slot else []
    template: Template | None = job.get("template")
    if template is not None:
        km.fork_kernel = lambda err, ans: template.fork(stage, ipc, err, ans, procs)
    km.session.key = job["key"].encode()
    km._kernel_spec = KernelSpec(
        argv=plan.command(stage, ipc, procs, env),
        display_name="aiinfra sandbox",
        language="python",
        env={},
    )
    _BindingMixin.max_message_bytes = max(limits.output_bytes, 64 * 2**10) + 64 * 2**10
    try:
        result = asyncio.run(_execute(nb, km, limits, answers, stderr, stage, env, plan.mode == "bwrap"))
    finally:
        if slot:
            result_usage = slot.usage()
            slot.kill()
        else:
            result_usage = {}
        result_usage["kernel"] = km.origin
        if km.forked is not None:  # not this worker's descendant: the template's child counted it (None: not)
            km.forked.poll()
            result_usage["kernel_cpu_s"] = km.forked.cpu_s
            km.forked.close()
    records, reported, problems = parse_answers(bytes(answers.data), answers.truncated)
    result["answers"] = [records[k] for k in sorted(records)]
    result["reported_student"] = reported
    result["errors"] += notes + problems
    if result_usage.get("oom_kills"):
        result["errors"].append(
            f"the sandbox reached its memory cap of {limits.memory_bytes} bytes "
            f"({result_usage['oom_kills']} process(es) killed)"
        )
    result["usage"] = result_usage
    result["sha256"] = sha256
    return result


def _vm_bytes() -> int:
    with open("/proc/self/statm", encoding="ascii") as fh:
        return int(fh.read().split()[0]) * os.sysconf("SC_PAGE_SIZE")


def limit_worker_memory(headroom_bytes: int = WORKER_HEADROOM_BYTES) -> int:
    """Cap this worker's address space at what it has now plus ``headroom_bytes`` (soft limit only:
    the sandbox it starts sets its own). Returns the cap in bytes."""
    cap = _vm_bytes() + headroom_bytes
    _, hard = resource.getrlimit(resource.RLIMIT_AS)
    resource.setrlimit(resource.RLIMIT_AS, (cap if hard == resource.RLIM_INFINITY else min(cap, hard), hard))
    return cap


def _child(conn, job: dict) -> None:
    signal.pthread_sigmask(signal.SIG_SETMASK, set())  # forked while the grader held its signals
    os.setsid()
    try:
        import ctypes

        ctypes.CDLL(None).prctl(PR_SET_PDEATHSIG, signal.SIGKILL, 0, 0, 0)
        if os.getppid() != job["grader_pid"]:
            os._exit(1)
        _close_inherited()
        limit_worker_memory()
        result = _run(job)
    except MemoryError:
        resource.setrlimit(resource.RLIMIT_AS, resource.getrlimit(resource.RLIMIT_AS)[1:] * 2)
        result = {
            "status": "error",
            "errors": [
                "the grader's own handling of this submission reached its memory limit; the run stopped"
            ],
        }
    except BaseException as exc:  # report, never hang the grader
        result = {
            "status": "error",
            "errors": [f"grader worker failed: {type(exc).__name__}: {bounded.clean_text(str(exc))[:200]}"],
        }
    result["cpu_s"], result["worker_cpu_s"] = _reap_and_measure()
    kernel_cpu_s = result.get("usage", {}).get("kernel_cpu_s")
    if kernel_cpu_s is not None:
        result["cpu_s"] = round(result["cpu_s"] + kernel_cpu_s, 3)
    result["worker_max_rss_bytes"] = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss * 1024
    try:
        data = json.dumps(result).encode()
        conn.send_bytes(
            data
            if len(data) <= MAX_RESULT_BYTES
            else json.dumps({"status": "error", "errors": ["the worker's report was too large"]}).encode()
        )
        conn.close()
    finally:
        os._exit(0)


class Extraction:
    """One submission's run: ``start()``, wait on ``waitables``, then ``finish()``."""

    def __init__(
        self,
        sub: dict,
        student: str,
        variants: bool,
        sheet: dict,
        plan: Plan,
        run_dir: str,
        slot: int = 0,
        seq: int = 0,
        fallback_root: str | None = None,
        template: Template | None = None,
    ):
        self.sub, self.student, self.variants, self.sheet = sub, student, variants, sheet
        self.plan, self.slot = plan, slot
        if fallback_root is None:
            raise ValueError("fallback_root is required: the private root of the kernels' sockets")
        self.stage = os.path.join(run_dir, f"{slot}-{seq}")
        # the grader binds the kernel's sockets here: a folder only the grader may write, which (without
        # namespaces) the sandbox uid can enter but nobody can list, under a name nobody can guess, in a
        # private temporary root, never under --out (a bound socket's path shows in /proc/net/unix)
        self.ipc = os.path.join(
            template.ipcs if template else fallback_root, f"{slot}-{seq}-{secrets.token_hex(8)}"
        )
        self.template = template
        self.work = os.path.join(fallback_root, f"{slot}-{seq}-work") if plan.mode == "none" else None
        # set by start() and collect(): the worker process, its pipe, its answer, its start time
        self.proc: Any = None
        self.conn: Any = None
        self.result_bytes: Any = None
        self.started: Any = None

    def start(self) -> None:
        # built here once (it scans every installed package's entry points), so each fork inherits it
        KernelProvisionerFactory.instance()
        self.started = time.monotonic()
        uid = self.plan.uid(self.slot)
        os.mkdir(self.stage, 0o700)
        os.mkdir(self.ipc, 0o711)
        if self.work:
            os.mkdir(self.work, 0o700)
            if uid is not None:
                os.chown(self.work, uid, uid)
        job = {
            "sub": self.sub,
            "plan": self.plan,
            "stage": self.stage,
            "ipc": self.ipc,
            "work": self.work,
            "uid": uid,
            "slot": self.slot,
            "sheet": self.sheet,
            "key": secrets.token_hex(32),
            "student": self.student,
            "variants": self.variants,
            "grader_pid": os.getpid(),
            "template": self.template,
        }
        ctx = multiprocessing.get_context("fork")
        recv, send = ctx.Pipe(duplex=False)
        self.conn = recv
        self.proc = ctx.Process(target=_child, args=(send, job), daemon=False)
        self.proc.start()
        send.close()

    @property
    def deadline(self) -> float:
        # the worker enforces the limits itself; this is the backstop for a wedged worker
        lim = self.plan.limits
        return self.started + lim.total_timeout_s + lim.startup_timeout_s + 15.0

    @property
    def waitables(self) -> list:
        return [self.conn, self.proc.sentinel]

    def poll(self) -> bool:
        """True once the worker has reported (or exited, or overrun its deadline)."""
        if self.result_bytes is None and self.conn.poll():
            try:
                self.result_bytes = self.conn.recv_bytes(MAX_RESULT_BYTES)
            except (EOFError, OSError):
                self.result_bytes = b""
        return self.result_bytes is not None or not self.proc.is_alive() or time.monotonic() > self.deadline

    def abort(self) -> None:
        """Kill the worker and its sandbox and delete its folders (an interrupted or failed start)."""
        if self.proc is not None and self.proc.pid:
            for kill in (os.kill, os.killpg):  # the worker, then its session (once it has made one)
                try:
                    kill(self.proc.pid, signal.SIGKILL)
                except OSError:
                    pass
            self.proc.join(5)
        if self.plan.cgroups:
            self.plan.cgroups.slots[self.slot].kill()
        if self.plan.drop_uid and self.plan.mode == "none":
            uid = self.plan.uid(self.slot)
            assert uid is not None  # drop_uid gives every slot its own uid
            kill_uid(uid)
        if self.conn is not None:
            self.conn.close()
        for path in (self.stage, self.ipc, self.work):
            if path:
                bounded.remove_tree(path)

    def finish(self) -> dict:
        """Collect the result, kill anything left, delete the staged copy."""
        overrun = self.result_bytes is None and self.proc.is_alive()
        if overrun:
            try:
                os.killpg(self.proc.pid, signal.SIGKILL)
            except OSError:
                pass
        self.proc.join(5)
        if self.proc.is_alive():
            self.proc.kill()
            self.proc.join()
        if self.plan.cgroups:
            self.plan.cgroups.slots[self.slot].kill()
        uid = self.plan.uid(self.slot)
        if uid is not None and self.plan.mode == "none":  # uid() is None unless the plan drops the uid
            kill_uid(uid)
        try:
            result: Any = json.loads(self.result_bytes.decode()) if self.result_bytes else None
        except ValueError:
            result = None
        if not isinstance(result, dict):
            why = (
                "the grader worker overran its deadline and was killed"
                if overrun
                else "the grader worker died"
            )
            result = {"status": "timeout" if overrun else "error", "errors": [why]}
        result.setdefault("errors", [])
        result.setdefault("answers", [])
        result["elapsed_s"] = round(time.monotonic() - self.started, 3)
        result["sandbox"] = {
            **self.plan.facts,
            **result.pop("usage", {}),
            "worker_max_rss_bytes": result.pop("worker_max_rss_bytes", None),
            "worker_cpu_s": result.pop("worker_cpu_s", None),
        }
        self.conn.close()
        for path in (self.stage, self.ipc, self.work):
            if path:
                bounded.remove_tree(path)
        return result


def kill_uid(uid: int) -> None:
    """Kill every process of a sandbox uid (fallback mode: detached processes have no namespace to die with)."""
    pid = os.fork()
    if pid == 0:
        try:
            os.setgid(uid)
            os.setuid(uid)
            os.kill(-1, signal.SIGKILL)
        except OSError:
            pass
        os._exit(0)
    os.waitpid(pid, 0)


def new_fallback_root() -> str:
    root = tempfile.mkdtemp(prefix="aiinfra-grade-")
    os.chmod(root, 0o711)
    return root
