"""Memory and process caps for a whole submission: one control group per worker slot.

cgroup v1 (``memory`` and ``pids`` hierarchies) and v2 (unified) are both
handled. The groups live below the grader's own group (so the instructor's
limits still apply), in ``aiinfra-grade-<grader pid>-<its start time>/slot-<n>``. The sandbox
launcher writes its PID into the slot's ``cgroup.procs`` before it starts
bubblewrap, so every process of the submission is counted and capped
together. A grader that finds groups of a grader that is no longer running
kills what is left in them and removes them. "No longer running" means that no process has
that PID with that start time (field 22 of ``/proc/<pid>/stat``): a reused PID is not the
grader, and a grader started under any command line (a wrapper script) is still one.

Where no group can be created (no root, a read-only cgroupfs in a container)
:func:`open_cgroups` says why, and the caller falls back to per-process limits.
"""

from __future__ import annotations

import os
import signal
import time
from pathlib import Path

PREFIX = "aiinfra-grade-"


def _read(path: Path) -> str:
    try:
        return path.read_text()
    except OSError:
        return ""


def _write(path: Path, value) -> None:
    with open(path, "w") as fh:
        fh.write(str(value))


def _pids(files) -> set[int]:
    out: set[int] = set()
    for f in files:
        out.update(int(x) for x in _read(f).split())
    return out


def _kill_all(procs_files, cgroup_kill: Path | None = None) -> None:
    """SIGKILL everything in the groups until they are empty (a fork racing the kill is caught next round)."""
    if cgroup_kill is not None and cgroup_kill.exists():
        try:
            _write(cgroup_kill, 1)
        except OSError:
            pass
    for _ in range(200):
        pids = _pids(procs_files)
        if not pids:
            return
        for pid in pids:
            try:
                os.kill(pid, signal.SIGKILL)
            except ProcessLookupError:
                pass
        time.sleep(0.01)


def _process_start(pid: int) -> str | None:
    """The start time of process ``pid`` (clock ticks after boot, ``/proc/<pid>/stat`` field 22), or None."""
    stat = _read(Path(f"/proc/{pid}/stat"))
    fields = stat[stat.rfind(")") + 2 :].split()  # the command name, in parentheses, may hold spaces
    return fields[19] if len(fields) > 19 else None


def _run_name(pid: int) -> str:
    return f"{PREFIX}{pid}-{_process_start(pid)}"


def _grader_alive(name: str) -> bool:
    """Whether the grader that named a group ``aiinfra-grade-<pid>-<start>`` still runs (any other name: leave it)."""
    pid, _, start = name[len(PREFIX) :].partition("-")
    if not (pid.isdigit() and start.isdigit()):
        return True
    return _process_start(int(pid)) == start


def _own_paths() -> dict[str, str]:
    """Controller (or "" for v2) -> this process's group path, from /proc/self/cgroup."""
    out = {}
    for line in _read(Path("/proc/self/cgroup")).splitlines():
        _, controllers, path = line.split(":", 2)
        for c in controllers.split(","):
            out[c] = path
    return out


def _mounts() -> dict[str, Path]:
    """Controller (or "" for the v2 hierarchy) -> mount point."""
    out: dict[str, Path] = {}
    for line in _read(Path("/proc/self/mountinfo")).splitlines():
        left, _, right = line.partition(" - ")
        fields, rfields = left.split(), right.split()
        if len(rfields) < 3 or len(fields) < 5:
            continue
        if rfields[0] == "cgroup2":
            out.setdefault("", Path(fields[4]))
        elif rfields[0] == "cgroup":
            for opt in rfields[2].split(","):
                if opt in ("memory", "pids"):
                    out[opt] = Path(fields[4])
    return out


class Slot:
    """The group(s) of one worker slot."""

    def __init__(self, dirs: dict[str, Path], version: int):
        self.dirs, self.version = dirs, version

    @property
    def procs_files(self) -> list[str]:
        return [str(d / "cgroup.procs") for d in self.dirs.values()]

    def prepare(self, memory_bytes: int, max_processes: int) -> None:
        """Set the caps and reset the counters before a submission starts; the group must be empty."""
        self.kill()
        if self.version == 1:
            mem, pids = self.dirs["memory"], self.dirs["pids"]
            _write(mem / "memory.limit_in_bytes", memory_bytes)
            if (mem / "memory.memsw.limit_in_bytes").exists():
                _write(mem / "memory.memsw.limit_in_bytes", memory_bytes)  # no swapping around the cap
            for counter in ("memory.max_usage_in_bytes", "memory.failcnt", "memory.memsw.max_usage_in_bytes"):
                if (mem / counter).exists():
                    _write(mem / counter, 0)
            _write(pids / "pids.max", max_processes)
        else:
            d = self.dirs[""]
            try:  # a fresh group: v2 counters (memory.peak) cannot be reset for other readers
                d.rmdir()
            except OSError:
                pass
            d.mkdir(exist_ok=True)
            _write(d / "memory.max", memory_bytes)
            if (d / "memory.swap.max").exists():
                _write(d / "memory.swap.max", 0)
            _write(d / "pids.max", max_processes)
        self._events0 = self._events()

    def _events(self) -> dict[str, int]:
        text = (
            _read(self.dirs["memory"] / "memory.oom_control")
            if self.version == 1
            else _read(self.dirs[""] / "memory.events")
        )
        out = {}
        for line in text.splitlines():
            k, _, v = line.partition(" ")
            if v.strip().isdigit():
                out[k] = int(v)
        return out

    def usage(self) -> dict:
        """Peak memory of the submission and whether a cap was hit."""
        if self.version == 1:
            peak = _read(self.dirs["memory"] / "memory.max_usage_in_bytes").strip()
            fork_refused = _read(self.dirs["pids"] / "pids.events").split()
        else:
            peak = _read(self.dirs[""] / "memory.peak").strip()
            fork_refused = _read(self.dirs[""] / "pids.events").split()
        events = self._events()
        before = getattr(self, "_events0", {})
        return {
            "memory_peak_bytes": int(peak) if peak.isdigit() else None,
            "oom_kills": events.get("oom_kill", 0) - before.get("oom_kill", 0),
            "fork_refusals": int(fork_refused[1])
            if len(fork_refused) > 1 and fork_refused[1].isdigit()
            else 0,
        }

    def kill(self) -> None:
        kill_file = None if self.version == 1 else self.dirs[""] / "cgroup.kill"
        _kill_all([d / "cgroup.procs" for d in self.dirs.values()], kill_file)

    def remove(self) -> None:
        self.kill()
        for d in self.dirs.values():
            try:
                d.rmdir()
            except OSError:
                pass


class Cgroups:
    """The grader's group(s) and one :class:`Slot` per worker."""

    def __init__(self, bases: dict[str, Path], version: int, workers: int):
        self.version = version
        self.bases = bases
        self.runs = {c: b / _run_name(os.getpid()) for c, b in bases.items()}
        self.cleaned = self._remove_stale()
        for run in self.runs.values():
            run.mkdir(exist_ok=True)
            if version == 2:
                _write(run / "cgroup.subtree_control", "+memory +pids")
        self.slots = []
        for n in range(workers):
            dirs = {c: run / f"slot-{n}" for c, run in self.runs.items()}
            for d in dirs.values():
                d.mkdir(exist_ok=True)
            self.slots.append(Slot(dirs, version))

    def _remove_stale(self) -> list[str]:
        gone = []
        for base in self.bases.values():
            for run in base.glob(f"{PREFIX}*"):
                if not run.is_dir() or _grader_alive(run.name):
                    continue
                slots = [d for d in run.iterdir() if d.is_dir()]
                _kill_all([d / "cgroup.procs" for d in slots] + [run / "cgroup.procs"])
                for d in slots + [run]:
                    try:
                        d.rmdir()
                    except OSError:
                        pass
                gone.append(str(run))
        return gone

    def describe(self) -> str:
        return f"cgroup v{self.version} ({', '.join(str(r) for r in self.runs.values())})"

    def close(self) -> None:
        for s in self.slots:
            s.remove()
        for run in self.runs.values():
            try:
                run.rmdir()
            except OSError:
                pass


def open_cgroups(workers: int) -> tuple[Cgroups | None, str | None]:
    """(groups, None) where memory and process caps per submission are possible, else (None, why not)."""
    mounts, own = _mounts(), _own_paths()
    try:
        if "memory" in mounts and "pids" in mounts:
            bases = {c: mounts[c] / own.get(c, "/").lstrip("/") for c in ("memory", "pids")}
            return Cgroups(bases, 1, workers), None
        if "" in mounts and (mounts[""] / "cgroup.controllers").exists():
            root = mounts[""]
            path = root / own.get("", "/").lstrip("/")
            while (
                True
            ):  # the nearest group that may hand memory and pids to children (no processes of its own)
                enabled = _read(path / "cgroup.subtree_control").split()
                if {"memory", "pids"} <= set(enabled) or path == root:
                    break
                path = path.parent
            return Cgroups({"": path}, 2, workers), None
    except OSError as exc:
        return None, f"no control group could be created ({exc.strerror or exc})"
    return None, "no memory and pids cgroup controllers are mounted"
