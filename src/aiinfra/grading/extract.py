"""Run one submission in a sandboxed kernel and bring back its answers as plain JSON.

:class:`Extraction` forks a worker process (its own session) that copies the
submission into a fresh temporary folder, starts an IPython kernel through
:mod:`aiinfra.grading.sandbox` (memory limit, no network, unprivileged uid
when the grader is root) and executes the code cells one by one with nbclient.

The execution rule: cells run top to bottom; the first cell that raises, times
out or kills its kernel stops the run, and every answer recorded before that
point counts. Answers reach the grader only through the JSON-lines file that
``answer()`` appends to (``AIINFRA_ANSWERS_FILE``); nothing else the kernel
does is read back, and no scoring happens here.
"""
from __future__ import annotations

import asyncio
import json
import multiprocessing
import multiprocessing.connection
import os
import resource
import shutil
import signal
import stat
import sys
import tempfile
import time
from dataclasses import asdict, dataclass
from pathlib import Path

# Imported here, before any fork, so that every worker starts warm.
import nbformat
from jupyter_client.kernelspec import KernelSpec
from jupyter_client.manager import AsyncKernelManager
from nbclient import NotebookClient
from nbclient.exceptions import CellExecutionError, CellTimeoutError, DeadKernelError

from aiinfra import _check

MAX_ANSWER_FILE_BYTES = 2 * 2**20
MAX_RESULT_BYTES = 4 * 2**20
UID_BASE = 200_000


@dataclass(frozen=True)
class Limits:
    """Resource limits of one submission (seconds, bytes)."""

    cell_timeout_s: float = 30.0
    total_timeout_s: float = 120.0
    memory_bytes: int = 2 * 2**30
    output_bytes: int = 1 * 2**20
    max_notebook_bytes: int = 20 * 2**20
    max_folder_bytes: int = 50 * 2**20
    isolate_network: bool = True
    drop_privileges: bool = True
    startup_timeout_s: float = 30.0

    def __post_init__(self):
        _check.positive("cell_timeout_s", self.cell_timeout_s)
        _check.positive("total_timeout_s", self.total_timeout_s)
        _check.at_least("memory_bytes", self.memory_bytes, 64 * 2**20)
        _check.at_least("output_bytes", self.output_bytes, 1024)
        _check.positive("startup_timeout_s", self.startup_timeout_s)


class _CappedClient(NotebookClient):
    """nbclient that keeps at most ``output_cap`` bytes of cell output and drops the rest."""

    output_cap = 2**20

    def output(self, outs, msg, display_id, cell_index):
        content = msg.get("content", {})
        size = len(json.dumps(content, default=str)) if msg.get("msg_type") != "stream" else len(content.get("text", ""))
        self._output_bytes = getattr(self, "_output_bytes", 0) + size
        if self._output_bytes > self.output_cap:
            self.output_truncated = True
            return None
        return super().output(outs, msg, display_id, cell_index)


def _uid_for(slot: int) -> int:
    return UID_BASE + (os.getpid() % 100_000) * 64 + slot


def _copy_submission(notebook: Path, whole_folder: bool, dest: Path, limits: Limits) -> Path:
    """Copy the notebook (and, for a per-student folder, its siblings) into ``dest``."""
    dest.mkdir()
    if whole_folder:
        total = 0
        for src in sorted(notebook.parent.rglob("*")):
            if src.is_symlink() or not (src.is_file() or src.is_dir()):
                continue
            rel = src.relative_to(notebook.parent)
            if src.is_dir():
                (dest / rel).mkdir(parents=True, exist_ok=True)
                continue
            total += src.stat().st_size
            if total > limits.max_folder_bytes:
                break
            (dest / rel).parent.mkdir(parents=True, exist_ok=True)
            shutil.copyfile(src, dest / rel)
    target = dest / notebook.name
    if not target.exists():
        shutil.copyfile(notebook, target)
    return target


def _chown_tree(root: Path, uid: int, gid: int) -> None:
    os.chown(root, uid, gid)
    for dirpath, dirnames, filenames in os.walk(root):
        for name in dirnames + filenames:
            os.chown(os.path.join(dirpath, name), uid, gid, follow_symlinks=False)


def _read_notebook(path: Path, limits: Limits):
    """(notebook, None) or (None, reason) for a file that cannot be run."""
    size = path.stat().st_size
    if size > limits.max_notebook_bytes:
        return None, f"the notebook is {size} bytes, above the {limits.max_notebook_bytes}-byte limit"
    raw = path.read_bytes()
    try:
        data = json.loads(raw.decode("utf-8"))
    except UnicodeDecodeError:
        return None, "not a notebook: the file is not UTF-8 text"
    except ValueError as exc:
        return None, f"not a notebook: malformed JSON ({str(exc)[:120]})"
    if not isinstance(data, dict) or not isinstance(data.get("cells"), list):
        return None, "not a notebook: the JSON has no list of cells"
    try:
        nb = nbformat.reads(raw.decode("utf-8"), as_version=4)
    except Exception as exc:  # nbformat raises many kinds of errors for odd documents
        return None, f"not a notebook: {type(exc).__name__}: {str(exc)[:120]}"
    for cell in nb.cells:
        if cell.get("cell_type") == "code":
            if not isinstance(cell.get("source"), str):
                return None, "not a notebook: a code cell has no source text"
            cell["outputs"] = []
    return nb, None


async def _execute(nb, ws: dict, env: dict, limits: Limits, uid: int | None) -> dict:
    started = time.monotonic()
    deadline = started + limits.total_timeout_s
    sandbox = [sys.executable, "-m", "aiinfra.grading.sandbox", "--memory-bytes", str(limits.memory_bytes),
               "--connection-file", "{connection_file}", "--status", ws["status"]]
    if limits.isolate_network:
        sandbox.append("--no-network")
    if uid is not None:
        sandbox += ["--uid", str(uid), "--gid", str(uid)]
        for path in sorted({sys.base_prefix, sys.prefix, os.path.dirname(os.path.realpath(sys.executable))}):
            sandbox += ["--reach", path]
    sandbox += ["--", sys.executable, "-m", "ipykernel_launcher", "-f", "{connection_file}"]
    km = AsyncKernelManager(transport="ipc", ip=ws["ipc"], connection_file=ws["connection"])
    km._kernel_spec = KernelSpec(argv=sandbox, display_name="aiinfra sandbox", language="python", env={})
    client = _CappedClient(nb, km=km, timeout=limits.cell_timeout_s, allow_errors=False,
                           interrupt_on_timeout=False, shutdown_kernel="immediate",
                           startup_timeout=min(limits.startup_timeout_s, limits.total_timeout_s),
                           resources={"metadata": {"path": ws["work"]}}, record_timing=False)
    client.output_cap = limits.output_bytes
    client.output_truncated = False
    code_cells = [i for i, c in enumerate(nb.cells) if c.get("cell_type") == "code"]
    out = {"status": "ok", "errors": [], "cells_total": len(code_cells), "cells_run": 0}
    try:
        async with client.async_setup_kernel(env=env, cwd=ws["work"], cleanup_kc=True):
            for n, index in enumerate(code_cells, 1):
                remaining = deadline - time.monotonic()
                if remaining <= 0:
                    out.update(status="timeout")
                    out["errors"].append(f"total time limit of {limits.total_timeout_s:g} s reached before code cell {n}")
                    break
                client.timeout = max(1, int(min(limits.cell_timeout_s, remaining) + 0.999))
                try:
                    await client.async_execute_cell(nb.cells[index], index)
                    out["cells_run"] = n
                except CellTimeoutError:
                    total = remaining < limits.cell_timeout_s
                    which = f"total time limit of {limits.total_timeout_s:g} s" if total else \
                        f"cell time limit of {limits.cell_timeout_s:g} s"
                    out.update(status="timeout")
                    out["errors"].append(f"code cell {n} ran past the {which}; the run stopped there")
                    break
                except CellExecutionError as exc:
                    out.update(status="error")
                    ename = getattr(exc, "ename", "") or "error"
                    evalue = (getattr(exc, "evalue", "") or "")[:200]
                    out["errors"].append(f"code cell {n} raised {ename}: {evalue}; the run stopped there")
                    break
                except DeadKernelError:
                    out.update(status="dead")
                    out["errors"].append(f"the kernel died in code cell {n} (exit, crash or memory limit); "
                                         "the run stopped there")
                    break
    except DeadKernelError:
        if out["status"] == "ok":
            out.update(status="dead")
            out["errors"].append("the kernel died")
    except RuntimeError as exc:
        if out["status"] == "ok":
            out.update(status="error")
            out["errors"].append(f"the kernel could not be run: {str(exc)[:200]}")
    out["output_truncated"] = bool(client.output_truncated)
    if client.output_truncated:
        out["errors"].append(f"output above {limits.output_bytes} bytes was discarded")
    return out


def _reap_and_measure(wait_s: float = 1.0) -> float:
    """Reap the finished kernel (so its CPU time is counted) and return this worker's CPU seconds."""
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
    usage = [resource.getrusage(who) for who in (resource.RUSAGE_SELF, resource.RUSAGE_CHILDREN)]
    return round(sum(u.ru_utime + u.ru_stime for u in usage), 3)


def _child(conn, notebook: str, ws: dict, env: dict, limits: Limits, uid: int | None) -> None:
    os.setsid()
    try:
        nb, why = _read_notebook(Path(notebook), limits)
        if nb is None:
            result = {"status": "invalid", "errors": [why], "cells_total": 0, "cells_run": 0}
        else:
            result = asyncio.run(_execute(nb, ws, env, limits, uid))
    except BaseException as exc:  # report, never hang the grader
        result = {"status": "error", "errors": [f"grader worker failed: {type(exc).__name__}: {str(exc)[:200]}"],
                  "cells_total": 0, "cells_run": 0}
    result["cpu_s"] = _reap_and_measure()
    try:
        conn.send_bytes(json.dumps(result).encode())
        conn.close()
    finally:
        os._exit(0)


def _reject_constant(name):
    raise ValueError(f"{name} is not valid JSON")


def read_answers(path: Path) -> tuple[dict, str | None, list[str]]:
    """Parse the answers file: ((exercise, part) -> last record, reported student id, problems)."""
    records: dict = {}
    student = None
    problems: list[str] = []
    try:  # the kernel owns this folder: refuse symlinks, FIFOs and devices instead of following them
        fd = os.open(path, os.O_RDONLY | os.O_NOFOLLOW | os.O_NONBLOCK)
    except FileNotFoundError:
        return records, student, problems
    except OSError as exc:
        return records, student, [f"the answers file could not be read safely ({exc.strerror})"]
    with os.fdopen(fd, "rb") as fh:
        if not stat.S_ISREG(os.fstat(fh.fileno()).st_mode):
            return records, student, ["the answers file is not a regular file; it was ignored"]
        raw = fh.read(MAX_ANSWER_FILE_BYTES + 1)
    if len(raw) > MAX_ANSWER_FILE_BYTES:
        problems.append(f"answers beyond the first {MAX_ANSWER_FILE_BYTES} bytes were ignored")
        raw = raw[:MAX_ANSWER_FILE_BYTES]
    bad = 0
    for line in raw.decode("utf-8", errors="replace").splitlines():
        if not line.strip():
            continue
        try:
            rec = json.loads(line, parse_constant=_reject_constant)
        except ValueError:
            bad += 1
            continue
        if type(rec) is not dict:
            bad += 1
        elif set(rec) == {"student"} and type(rec["student"]) is str:
            student = rec["student"][:128]
        elif type(rec.get("exercise")) is str and type(rec.get("part")) is str:
            records[(rec["exercise"][:16], rec["part"][:4])] = rec
        else:
            bad += 1
    if bad:
        problems.append(f"{bad} unreadable line(s) in the answers file were ignored")
    return records, student, problems


def _kill_group(pid: int) -> None:
    try:
        os.killpg(pid, signal.SIGKILL)
    except (ProcessLookupError, PermissionError, OSError):
        pass


def _kill_uid(uid: int) -> None:
    """Kill every process of the sandbox uid (stragglers the kernel may have spawned)."""
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


class Extraction:
    """One submission's run: ``start()``, wait on ``waitables``, then ``finish()``."""

    def __init__(self, notebook: Path, student_id: str, variants: bool, limits: Limits, slot: int = 0,
                 whole_folder: bool = False):
        self.notebook = Path(notebook)
        self.student_id = student_id
        self.variants = variants
        self.limits = limits
        self.slot = slot
        self.whole_folder = whole_folder
        self.proc = None
        self.conn = None
        self.result_bytes = None
        self.started = None
        self.base = None
        self.uid = None

    def _workspace(self) -> dict:
        base = Path(tempfile.mkdtemp(prefix="aiinfra-grade-"))
        self.base = base
        os.chmod(base, 0o711)
        for name in ("ctl", "io", "ipc", "home"):
            (base / name).mkdir()
        (base / "ctl").chmod(0o755)
        work = base / "work"
        nb = _copy_submission(self.notebook, self.whole_folder, work, self.limits)
        ws = {"base": str(base), "work": str(work), "notebook": str(nb), "ipc": str(base / "ipc" / "k"),
              "connection": str(base / "ctl" / "kernel.json"), "status": str(base / "ctl" / "sandbox.json"),
              "answers": str(base / "io" / "answers.jsonl"), "home": str(base / "home")}
        if self.uid is not None:
            for name in ("io", "ipc", "home"):
                os.chown(base / name, self.uid, self.uid)
            _chown_tree(work, self.uid, self.uid)
        return ws

    def _env(self, ws: dict) -> dict:
        env = {k: os.environ[k] for k in ("PATH", "LANG", "LC_ALL", "PYTHONPATH", "TZ") if k in os.environ}
        env.update({
            "HOME": ws["home"], "IPYTHONDIR": os.path.join(ws["home"], ".ipython"),
            "MPLCONFIGDIR": os.path.join(ws["home"], ".mpl"), "MPLBACKEND": "Agg",
            "JUPYTER_RUNTIME_DIR": os.path.join(ws["home"], ".runtime"), "PYTHONDONTWRITEBYTECODE": "1",
            "OPENBLAS_NUM_THREADS": "1", "OMP_NUM_THREADS": "1", "MKL_NUM_THREADS": "1", "MALLOC_ARENA_MAX": "2",
            "PYDEVD_DISABLE_FILE_VALIDATION": "1",
            "AIINFRA_STUDENT_ID": self.student_id, "AIINFRA_ANSWERS_FILE": ws["answers"],
            "AIINFRA_VARIANTS": "1" if self.variants else "0",
        })
        return env

    def start(self) -> None:
        self.started = time.monotonic()
        if self.limits.drop_privileges and os.geteuid() == 0:
            self.uid = _uid_for(self.slot)
        self.ws = self._workspace()
        ctx = multiprocessing.get_context("fork")
        recv, send = ctx.Pipe(duplex=False)
        self.conn = recv
        self.proc = ctx.Process(target=_child, args=(send, self.ws["notebook"], self.ws, self._env(self.ws),
                                                     self.limits, self.uid), daemon=False)
        self.proc.start()
        send.close()

    @property
    def deadline(self) -> float:
        # the worker enforces the limits itself; this is the backstop for a wedged worker
        return self.started + self.limits.total_timeout_s + self.limits.startup_timeout_s + 10.0

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

    def _sandbox_status(self) -> dict:
        try:
            with open(os.path.join(self.ws["status"]), encoding="utf-8") as fh:
                status = json.load(fh)
            return status if isinstance(status, dict) else {}
        except (OSError, ValueError):
            return {}

    def finish(self) -> dict:
        """Collect the result, kill anything left, read the answers, delete the temporary folder."""
        overrun = self.result_bytes is None and self.proc.is_alive()
        if overrun:
            _kill_group(self.proc.pid)
        self.proc.join(5)
        if self.proc.is_alive():
            self.proc.kill()
            self.proc.join()
        sandbox = self._sandbox_status()
        if isinstance(sandbox.get("pid"), int) and sandbox["pid"] > 1:
            _kill_group(sandbox["pid"])
        if self.uid is not None:
            _kill_uid(self.uid)
        try:
            result = json.loads(self.result_bytes.decode()) if self.result_bytes else None
        except ValueError:
            result = None
        if not isinstance(result, dict):
            why = "the grader worker overran its deadline and was killed" if overrun else "the grader worker died"
            result = {"status": "timeout" if overrun else "error", "errors": [why], "cells_total": 0, "cells_run": 0}
        records, reported, problems = read_answers(Path(self.ws["answers"]))
        result["errors"] = list(result.get("errors", [])) + problems
        result["answers"] = [records[k] for k in sorted(records)]
        result["reported_student"] = reported
        result["elapsed_s"] = round(time.monotonic() - self.started, 3)
        notes = [n for n in sandbox.get("notes", []) if isinstance(n, str)]
        result["sandbox"] = {"network_isolated": bool(sandbox.get("network_isolated")),
                             "privileges_dropped": bool(sandbox.get("privileges_dropped")),
                             "memory_bytes": self.limits.memory_bytes, "notes": notes}
        self.conn.close()
        shutil.rmtree(self.base, ignore_errors=True)
        return result


def extract(notebook: Path, student_id: str, variants: bool, limits: Limits = Limits(), slot: int = 0,
            whole_folder: bool = False) -> dict:
    """Run one submission to completion and return its extraction result (blocking)."""
    job = Extraction(notebook, student_id, variants, limits, slot, whole_folder)
    job.start()
    while not job.poll():
        multiprocessing.connection.wait(job.waitables, timeout=max(0.05, job.deadline - time.monotonic()))
    return job.finish()


def limits_dict(limits: Limits) -> dict:
    return asdict(limits)
