"""Where a submission's kernel runs, and what that guarantees.

With bubblewrap (``bwrap``, Debian package ``bubblewrap``) each kernel gets
fresh mount, PID, IPC, UTS and network namespaces and a user namespace, a
read-only view of the interpreter and the packages it needs (the system's
``/usr``, the Python installation, its site-packages and the ``aiinfra``
package, wherever they live) and one writable place: a size-capped tmpfs at
``/tmp``. The repository, the submissions folder, the output folder and the
gradebook are never mounted (or are covered by an empty read-only tmpfs where
they lie inside a mounted tree), and the exercise definitions and references
inside every mounted copy of the package are covered too, so ``check()`` and
the answer key are unreachable there. PID 1 of the namespace is a small init
(:mod:`~aiinfra.course.grading.kernel`) that ends when the kernel ends, so everything
the notebook started dies with the kernel; ``--die-with-parent`` chains this to
the grader worker, which dies with the grader.

As root, bubblewrap mounts with root's rights (so an installation inside a
private folder is reachable), the kernel then drops to a uid of its own, sets
``no_new_privs`` and enters a fresh user namespace. As another user,
bubblewrap builds the user namespace itself. :class:`Plan` records what was
achieved; a batch that runs with less (no bubblewrap, no namespaces, no
cgroups) says so on stderr, in the summary and in every gradebook row.
"""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
from dataclasses import dataclass, field
from pathlib import Path

from .bounded import remove_tree
from .cgroups import Cgroups, open_cgroups

UID_BASE = 200_000
INSIDE_STAGE = "/run/aiinfra/stage"
INSIDE_IPC = "/run/aiinfra/ipc"
INSIDE_IPCS = "/run/aiinfra/ipcs"  # a template's: the socket folders of all its submissions
INSIDE_HOLD = (
    "/run/aiinfra/hold"  # a template's: where a child keeps the mounts below /tmp while it replaces /tmp
)
#: What a template holds besides the kernel's setuid and setgid, to build each child's namespaces (zygote.py).
TEMPLATE_CAPS = ("CAP_SYS_ADMIN", "CAP_NET_ADMIN", "CAP_SETPCAP")
#: The environment every graded interpreter starts with (a kernel, a template), before its own
#: names: glibc, BLAS and matplotlib read some of these once, at start-up.
START_ENV = {
    "PATH": "/usr/bin:/bin",
    "LC_ALL": "C.UTF-8",
    "MPLBACKEND": "Agg",
    "PYTHONDONTWRITEBYTECODE": "1",
    "OPENBLAS_NUM_THREADS": "1",
    "OMP_NUM_THREADS": "1",
    "MKL_NUM_THREADS": "1",
    "MALLOC_ARENA_MAX": "2",
    "PYDEVD_DISABLE_FILE_VALIDATION": "1",
}
INSIDE_WORK = "/tmp/work"
INSIDE_HOME = "/tmp/home"
#: What the kernel may load from the exercises package: the recording side only.
EXERCISE_FILES_KEPT = ("__init__.py", "_format.py", "registry.py", "runtime.py", "record.py", "feedback.py")
SYSTEM_DIRS = ("/usr", "/bin", "/sbin", "/lib", "/lib32", "/lib64", "/libx32")
ETC_FILES = (
    "/etc/ld.so.cache",
    "/etc/ld.so.conf",
    "/etc/ld.so.conf.d",
    "/etc/localtime",
    "/etc/alternatives",
)
LAUNCHER = 'while [ "$1" != -- ]; do echo $$ > "$1" || exit 97; shift; done; shift; exec "$@"'


@dataclass(frozen=True)
class Limits:
    """Resource limits of one submission (seconds, bytes, counts)."""

    cell_timeout_s: float = 30.0
    total_timeout_s: float = 120.0
    memory_bytes: int = 2 * 2**30
    output_bytes: int = 1 * 2**20
    disk_bytes: int = 256 * 2**20
    max_processes: int = 128
    max_open_files: int = 1024
    max_notebook_bytes: int = 20 * 2**20
    max_folder_bytes: int = 50 * 2**20
    max_folder_entries: int = 1000
    max_folder_depth: int = 16
    isolate_network: bool = True
    startup_timeout_s: float = 30.0

    def __post_init__(self):
        for name, low in (
            ("cell_timeout_s", 0),
            ("total_timeout_s", 0),
            ("startup_timeout_s", 0),
            ("memory_bytes", 64 * 2**20 - 1),
            ("output_bytes", 1023),
            ("disk_bytes", 2**20 - 1),
            ("max_processes", 7),
            ("max_open_files", 63),
        ):
            value = getattr(self, name)
            if isinstance(value, bool) or not isinstance(value, (int, float)) or not value > low:
                raise ValueError(f"{name} must be a number > {low}, got {value!r}")


def _real(path) -> str:
    return os.path.realpath(path)


def _inside(path: str, folder: str) -> bool:
    return path == folder or path.startswith(folder.rstrip("/") + "/")


def _repository(package_dir: str) -> str | None:
    """The checkout that holds the package (a folder with .git or pyproject.toml above it), if any."""
    p = Path(package_dir).parent
    while p != p.parent:
        if p.name in ("site-packages", "dist-packages"):
            return None
        if (p / ".git").exists() or (p / "pyproject.toml").exists():
            return str(p)
        p = p.parent
    return None


def _closed_ancestor(path: str) -> str | None:
    """The highest folder above ``path`` that other users may not enter (no o+x), if any."""
    parts = _real(path).split(os.sep)
    for i in range(2, len(parts)):
        folder = os.sep.join(parts[:i])
        try:
            if not os.stat(folder).st_mode & 0o001:
                return folder
        except OSError:
            return None
    return None


def kernel_sys_path(python: str) -> list[str]:
    """The import path of ``python -I`` (what the kernel will search), realpaths of existing folders."""
    out = subprocess.run(
        [python, "-I", "-c", "import sys, json; print(json.dumps(sys.path))"],
        capture_output=True,
        text=True,
        timeout=60,
        cwd="/",
        check=True,
    )
    return [_real(p) for p in json.loads(out.stdout) if p and os.path.isdir(p)]


@dataclass
class Plan:
    """The sandbox every kernel of one batch gets, decided and self-checked once."""

    mode: str  # "bwrap" or "none"
    bwrap: str | None
    python: str
    package: str  # top package name, "aiinfra"
    package_dir: str
    kernel_module: str
    root: bool
    drop_uid: bool
    userns: bool
    limits: Limits
    binds: list[str] = field(default_factory=list)
    masks: list[str] = field(default_factory=list)
    exercise_dirs: list[str] = field(default_factory=list)
    cgroups: Cgroups | None = None
    templates: bool = False  # kernels forked from a template per worker slot (template.py)
    warnings: list[str] = field(default_factory=list)
    facts: dict = field(default_factory=dict)

    # --- the kernel command ---------------------------------------------------------------

    def uid(self, slot: int) -> int | None:
        return UID_BASE + (os.getpid() % 100_000) * 64 + slot if self.drop_uid else None

    def _python_code(self, function: str = "main", module: str | None = None) -> str:
        """``python -c`` code that calls ``function`` of ``module`` (default: the kernel's module)."""
        return (
            f"import sys; sys.path.insert(0, {str(Path(self.package_dir).parent)!r}); "
            f"from {module or self.kernel_module} import {function}; {function}()"
        )

    def bwrap_args(self, stage: str, ipc: str | None, env: dict, template: bool = False) -> list[str]:
        assert self.bwrap is not None, "bwrap_args needs mode 'bwrap' (a bwrap binary was found)"
        a = [self.bwrap, "--die-with-parent", "--new-session"]
        # a template stays in the grader's PID namespace: its children make their own, and live on should it die
        a += [] if template else ["--as-pid-1", "--unshare-pid"]
        a += [
            "--unshare-ipc",
            "--unshare-uts",
            "--unshare-cgroup-try",
            "--hostname",
            "sandbox",
            "--clearenv",
        ]
        for k, v in sorted(env.items()):  # at exec time: glibc and BLAS read some of these once, at start-up
            a += ["--setenv", k, v]
        if self.limits.isolate_network:
            a.append("--unshare-net")
        if self.root:
            a += ["--cap-drop", "ALL"]
            if self.drop_uid:
                a += ["--cap-add", "CAP_SETUID", "--cap-add", "CAP_SETGID"]
            for cap in TEMPLATE_CAPS if template else ():
                a += ["--cap-add", cap]
        else:
            a += ["--unshare-user", "--disable-userns"]
        a += ["--perms", "1777", "--size", str(self.limits.disk_bytes), "--tmpfs", "/tmp"]
        for d in SYSTEM_DIRS:
            if os.path.islink(d):
                a += ["--symlink", os.readlink(d), d]
            elif os.path.isdir(d):
                a += ["--ro-bind", d, d]
        for d in ("/etc", "/run", "/run/aiinfra"):  # folders bwrap would create with mode 0700
            a += ["--perms", "0755", "--dir", d]
        for f in ETC_FILES:
            a += ["--ro-bind-try", f, f]
        a += [
            "--ro-bind",
            os.path.join(stage, "passwd"),
            "/etc/passwd",
            "--ro-bind",
            os.path.join(stage, "group"),
            "/etc/group",
        ]
        # the folders leading to each mount, made here (mode 0755) unless a read-only mount already has them;
        # sorted by depth, each comes after the mask it lies in and before what is mounted in it
        bound = self.binds + [d for d in SYSTEM_DIRS if os.path.isdir(d) and not os.path.islink(d)]
        ops = [(p, "bind") for p in self.binds] + [(p, "mask") for p in self.masks]

        def read_only(folder: str) -> bool:  # the innermost mount over it is a read-only bind
            over = [m for m in bound + self.masks if _inside(folder, m)]
            return bool(over) and max(over, key=len) in bound

        for path in self.binds + self.masks:
            for anc in map(str, list(Path(path).parents)[:-1]):
                if anc != "/tmp" and anc not in self.masks and not read_only(anc) and (anc, "dir") not in ops:
                    ops.append((anc, "dir"))
        for path, kind in sorted(ops, key=lambda o: (o[0].count("/"), o[1])):
            if kind == "dir":
                a += ["--perms", "0755", "--dir", path]
            elif kind == "bind":
                a += ["--ro-bind", path, path]
            else:
                a += ["--perms", "0755", "--tmpfs", path]
        for d in self.exercise_dirs:
            a += ["--perms", "0755", "--tmpfs", d]
            for name in EXERCISE_FILES_KEPT:
                if os.path.isfile(os.path.join(d, name)):
                    a += ["--ro-bind", os.path.join(d, name), os.path.join(d, name)]
                for cached in _bytecode(d, name):  # spares every kernel compiling them again
                    a += ["--ro-bind", cached, cached]
        a += ["--proc", "/proc", "--dev", "/dev", "--ro-bind", stage, INSIDE_STAGE]
        if ipc and template:
            a += ["--ro-bind", ipc, INSIDE_IPCS]
            a += ["--perms", "0755", "--dir", INSIDE_IPC, "--perms", "0755", "--dir", INSIDE_HOLD]
        elif ipc:
            a += ["--ro-bind", ipc, INSIDE_IPC]
        for d in self.masks + self.exercise_dirs:
            a += ["--remount-ro", d]
        a += ["--remount-ro", "/", "--chdir", "/"]
        return a

    def command(
        self, stage: str, ipc: str | None, procs_files: list[str], env: dict, probe: bool = False
    ) -> list[str]:
        """argv of the kernel process (the stage path is the host's); ``env`` is the kernel's environment."""
        code = self._python_code("probe" if probe else "main")
        inner_stage = INSIDE_STAGE if self.mode == "bwrap" else stage
        cmd = [self.python, "-I", "-c", code, inner_stage]
        if self.mode == "bwrap":
            cmd = self.bwrap_args(stage, ipc, env) + ["--"] + cmd
        if procs_files:
            cmd = ["/bin/sh", "-c", LAUNCHER, "sh", *procs_files, "--"] + cmd
        return cmd

    def template_command(self, stage: str, ipcs: str, env: dict, fd: int) -> list[str]:
        """argv of a worker slot's template (:mod:`~aiinfra.course.grading.zygote`), serving on ``fd``."""
        code = self._python_code("serve", self.kernel_module.rsplit(".", 1)[0] + ".zygote")
        return self.bwrap_args(stage, ipcs, env, template=True) + [
            "--",
            self.python,
            "-I",
            "-c",
            code,
            INSIDE_STAGE,
            str(fd),
        ]

    def paths(self, stage: str, ipc: str, work: str | None) -> dict:
        """Where the kernel finds its stage, sockets, work folder and home (its own view)."""
        if self.mode == "bwrap":
            return {"stage": INSIDE_STAGE, "ipc": INSIDE_IPC, "work": INSIDE_WORK, "home": INSIDE_HOME}
        assert work is not None, "without bwrap the kernel's work folder is a real path"
        return {
            "stage": stage,
            "ipc": ipc,
            "work": os.path.join(work, "work"),
            "home": os.path.join(work, "home"),
        }

    def rlimits(self) -> dict:
        lim = self.limits
        out = {"as": lim.memory_bytes, "fsize": lim.disk_bytes, "core": 0, "nofile": lim.max_open_files}
        if self.drop_uid:
            out["nproc"] = lim.max_processes  # the uid is this slot's own, so the count is this submission's
        return out

    def summary_lines(self) -> list[str]:
        f = self.facts
        lines = [
            f"sandbox: {f['isolation']}; kernel uid: {f['kernel_uid']}; caps: {f['caps']}; "
            f"writable: {f['writable']}",
            f"kernels: {f['kernels']}",
        ]
        return lines + [f"WARNING: {w}" for w in self.warnings]


def _hidden_imports(exercises_dir: str) -> list[str]:
    """Load-time imports of a kept module that the sandbox hides (they would break ``answer()``)."""
    import ast

    kept = {n[: -len(".py")] for n in EXERCISE_FILES_KEPT}
    siblings = _modules(exercises_dir)
    bad = []
    for name in EXERCISE_FILES_KEPT:
        targets = []
        for node in ast.parse(
            Path(exercises_dir, name).read_text(encoding="utf-8")
        ).body:  # module level only
            if isinstance(node, ast.ImportFrom):
                mod = (node.module or "").split(".") if node.module else []
                if node.level == 1 or mod[-1:] == ["exercises"]:
                    targets += mod[:1] if node.level == 1 and mod else [a.name for a in node.names]
                elif "exercises" in mod:
                    targets.append(mod[mod.index("exercises") + 1])
            elif isinstance(node, ast.Import):
                for alias in node.names:
                    parts = alias.name.split(".")
                    if "exercises" in parts[:-1]:
                        targets.append(parts[parts.index("exercises") + 1])
        bad += [f"{name} imports {t}" for t in targets if t in siblings and t not in kept]
    return bad


def _modules(folder: str) -> set[str]:
    return {n[: -len(".py")] for n in os.listdir(folder) if n.endswith(".py")}


def _bytecode(folder: str, module_file: str) -> list[str]:
    """The compiled copies of one kept module in ``__pycache__`` (``runtime.cpython-311.pyc``...)."""
    cache = os.path.join(folder, "__pycache__")
    stem = module_file[: -len(".py")] + "."
    try:
        return sorted(
            os.path.join(cache, n) for n in os.listdir(cache) if n.startswith(stem) and n.endswith(".pyc")
        )
    except OSError:
        return []


def compile_package(package_dir: str) -> bool:
    """Write the bytecode of every module of the package the kernels load, once per batch.

    The kernels see the package read-only and write no bytecode, so a module nothing had
    imported outside the sandbox before (an editable checkout) would be compiled again in
    every kernel that imports it. Returns False where the folder is not writable (an
    installation owned by another user; its installer wrote the bytecode).
    """
    import compileall

    return bool(compileall.compile_dir(package_dir, quiet=2))


def write_identity_files(stage: str, uid: int | None) -> None:
    """/etc/passwd and /etc/group as the kernel sees them: root and the sandbox user."""
    u = uid if uid is not None else os.getuid()
    Path(stage, "passwd").write_text(
        f"root:x:0:0:root:/root:/usr/sbin/nologin\n"
        f"student:x:{u}:{u}:student:{INSIDE_HOME}:/usr/sbin/nologin\n"
    )
    Path(stage, "group").write_text(f"root:x:0:\nstudent:x:{u}:\n")


def _probe(plan: Plan, stage: str) -> tuple[dict | None, str]:
    """Run the probe kernel (no cgroup) in a sandbox built like the real ones."""
    procs: list = []
    try:
        env = {"PATH": "/usr/bin:/bin", "LC_ALL": "C.UTF-8"}
        done = subprocess.run(
            plan.command(stage, None, procs, env, probe=True),
            capture_output=True,
            timeout=120,
            cwd=stage,
            env=env,
        )
    except (OSError, subprocess.TimeoutExpired) as exc:
        return None, str(exc)
    err = done.stderr.decode("utf-8", "replace").strip()
    if done.returncode != 0:
        return None, err.splitlines()[-1] if err else f"exit status {done.returncode}"
    try:
        return json.loads(done.stdout.decode().strip().splitlines()[-1]), err
    except (ValueError, IndexError):
        return None, f"unreadable probe output {done.stdout[:200]!r}"


def _probe_spec(plan: Plan, slot_uid: int | None, needed: list[str], hidden: list[str]) -> dict:
    return {
        "files": [],
        "rlimits": plan.rlimits(),
        "uid": slot_uid,
        "gid": slot_uid,
        "userns": plan.userns,
        "probe": {"needed": needed, "hidden": hidden},
    }


def _find_bwrap(requested: str, bwrap: str | None) -> tuple[str | None, str | None]:
    """(path of bwrap, None) or (None, why not); ``--sandbox bwrap`` without it is an error."""
    if requested == "none":
        return None, "--sandbox none was given"
    path = bwrap if bwrap is not None else shutil.which("bwrap")
    if path and os.access(path, os.X_OK):
        return path, None
    why = f"bubblewrap not found ({path or 'bwrap is not on PATH'}; Debian package 'bubblewrap')"
    if requested == "bwrap":
        raise ValueError(why)
    return None, why


def _read_only_mounts(package_dir: str, sys_path: list[str], repo: str | None) -> list[str]:
    """The interpreter's prefixes, the import path and the package, shallowest first, none inside another."""
    prefixes = {_real(p) for p in (sys.prefix, sys.base_prefix, sys.exec_prefix, sys.base_exec_prefix)}
    needed = prefixes | {package_dir}
    for p in sys_path:
        if not (repo and _inside(p, repo) and not any(_inside(p, x) for x in prefixes)):
            needed.add(p)  # but not <repo>/src of an editable install: the package alone is mounted
    binds: list[str] = []
    for p in sorted(needed, key=lambda x: (x.count("/"), x)):
        if not any(_inside(p, b) for b in binds + list(SYSTEM_DIRS)):
            binds.append(p)
    return binds


def _unseen(plan: Plan, exercises_dir: str, forbid: list[str]) -> list[str]:
    """Paths the self-check must find absent: hidden exercise files, and a few entries of each forbidden folder."""
    bad = _hidden_imports(exercises_dir)
    if bad:
        raise ValueError(f"the recording side of the exercises package needs what the sandbox hides: {bad}")
    kept = {c for d in plan.exercise_dirs for n in EXERCISE_FILES_KEPT for c in _bytecode(d, n)}
    out = []
    for d in plan.exercise_dirs:
        out += [
            os.path.join(d, n)
            for n in sorted(os.listdir(d))
            if n not in EXERCISE_FILES_KEPT + ("__pycache__",)
        ]
        cache = os.path.join(d, "__pycache__")
        if os.path.isdir(cache):
            out += [c for c in (os.path.join(cache, n) for n in sorted(os.listdir(cache))) if c not in kept]
    for f in forbid:
        if os.path.isdir(f):
            entries = sorted(os.path.join(f, n) for n in os.listdir(f))
            out += [e for e in entries if not any(_inside(b, e) for b in plan.binds)][:5]
    return out


def _settle(
    plan: Plan, run_dir: str, needed: list[str], unseen: list[str]
) -> tuple[dict | None, str, list[str]]:
    """The most isolated kernel that starts in this mode: own uid and user namespace; own uid; root."""

    def attempt(drop: bool, userns: bool = True) -> tuple[dict | None, str]:
        plan.drop_uid, plan.userns = plan.root and drop, plan.root and drop and userns
        stage = os.path.join(run_dir, "probe")
        remove_tree(stage)
        os.makedirs(stage, mode=0o755)
        uid = plan.uid(0)
        write_identity_files(stage, uid)
        Path(stage, "spec.json").write_text(json.dumps(_probe_spec(plan, uid, needed, unseen)))
        try:
            return _probe(plan, stage)
        finally:
            remove_tree(stage)

    report, err = attempt(True)
    if not plan.root or (report is not None and all(report["readable"].values())):
        return report, err, []
    first = (
        err
        if report is None
        else "cannot read " + ", ".join(p for p, ok in report["readable"].items() if not ok)
    )
    report, err = attempt(True, userns=False)
    if report is not None and all(report["readable"].values()):
        return report, err, [f"the kernel gets no user namespace of its own ({first})"]
    report, err = attempt(False)
    caps = "no capabilities left" if plan.mode == "bwrap" else "all of root's capabilities"
    closed = sorted({a for b in plan.binds for a in [_closed_ancestor(b)] if a})
    where = (
        f"; {', '.join(closed)} cannot be entered by other users" if closed and plan.mode == "none" else ""
    )
    return (
        report,
        err,
        [
            f"the kernel runs as root ({caps}), because an unprivileged uid cannot start it "
            f"here ({first}{where})"
        ],
    )


def make_plan(
    limits: Limits,
    forbidden: list[str],
    run_dir: str,
    workers: int,
    requested: str = "auto",
    bwrap: str | None = None,
    templates: bool = True,
) -> Plan:
    """Decide the sandbox for a batch and check it once: the kernel can load what it needs and no more.

    ``requested``: ``auto`` (bubblewrap where it works, else a loud fallback),
    ``bwrap`` (refuse to grade without it) or ``none`` (no namespaces, loudly).
    ``templates``: fork each kernel from a template per worker slot where the grader runs as
    root with bubblewrap (elsewhere, and with ``False``, every kernel gets a fresh sandbox).
    Raises ValueError when the requested isolation cannot be had or the
    answer key is visible inside the sandbox.
    """
    from .. import exercises

    exercises_dir = _real(os.path.dirname(exercises.__file__))
    package_dir = str(Path(exercises_dir).parent)
    while (
        Path(package_dir, "__init__.py").exists()
        and Path(package_dir).parent.joinpath("__init__.py").exists()
    ):
        package_dir = str(Path(package_dir).parent)  # the top package, should exercises move deeper
    compile_package(package_dir)
    root = os.geteuid() == 0
    bwrap_path, why_not = _find_bwrap(requested, bwrap)
    plan = Plan(
        mode="bwrap" if bwrap_path else "none",
        bwrap=bwrap_path,
        python=sys.executable,
        package=Path(package_dir).name,
        package_dir=package_dir,
        kernel_module=f"{__name__.rsplit('.', 1)[0]}.kernel",
        root=root,
        drop_uid=root,
        userns=root,
        limits=limits,
    )
    sys_path, repo = kernel_sys_path(plan.python), _repository(package_dir)
    plan.binds = _read_only_mounts(package_dir, sys_path, repo)
    forbid = sorted({_real(f) for f in forbidden + ([repo] if repo else []) if f and os.path.exists(f)})
    both = [f for f in forbid if f in plan.binds]
    if both:
        raise ValueError(
            f"cannot isolate the kernel: {both} are both needed by the kernel and forbidden to it"
        )
    plan.masks = [f for f in forbid if any(_inside(f, b) and f != b for b in plan.binds + list(SYSTEM_DIRS))]
    rel = os.path.relpath(exercises_dir, package_dir)
    plan.exercise_dirs = sorted(
        {
            os.path.join(d, plan.package, rel)
            for d in {str(Path(package_dir).parent), *sys_path}
            if os.path.isdir(os.path.join(d, plan.package, rel))
        }
        | {exercises_dir}
    )
    needed = [
        os.path.join(exercises_dir, "runtime.py"),
        os.path.join(exercises_dir, "record.py"),
        plan.python,
    ]
    unseen = _unseen(plan, exercises_dir, forbid)
    report, err, notes = _settle(plan, run_dir, needed, unseen)
    if report is None and plan.mode == "bwrap":
        if requested == "bwrap":
            raise ValueError(f"bubblewrap cannot build the sandbox here: {err}")
        why_not = f"bubblewrap cannot build the sandbox here ({err})"
        plan.mode, plan.bwrap = "none", None
        report, err, notes = _settle(plan, run_dir, needed, unseen)
    if report is None:
        raise ValueError(f"the kernel cannot start in any sandbox: {err}")
    unreadable = [p for p, ok in report["readable"].items() if not ok]
    if unreadable:
        raise ValueError(f"the kernel cannot read {unreadable}")
    visible = [p for p, present in report["present"].items() if present]
    if plan.mode == "bwrap" and visible:
        raise ValueError(f"sandbox self-check failed: the kernel would see {visible[:5]}")
    plan.warnings += notes
    if plan.mode == "none":
        plan.warnings.insert(
            0,
            f"NO SANDBOX NAMESPACES: {why_not}. Kernels share the grader's file system, "
            "processes, IPC and network: a notebook can read every file its uid can (other "
            "submissions, the exercise definitions, the answer key), and its detached processes "
            "are only killed by uid or cgroup.",
        )
    plan.cgroups, why = open_cgroups(workers)
    if plan.cgroups is None:
        plan.warnings.append(
            f"NO CGROUPS: {why}. Memory is capped per process only ({limits.memory_bytes} bytes "
            "of address space each), so several processes together can exceed it"
            + (
                "; processes are capped per sandbox uid."
                if plan.drop_uid
                else "; the number of processes is not capped."
            )
        )
    plan.templates = templates and plan.mode == "bwrap" and plan.root
    plan.facts = _facts(plan)
    return plan


def _facts(plan: Plan) -> dict:
    if plan.mode == "bwrap":
        ns = "user, mount, PID, IPC, UTS" + (", network" if plan.limits.isolate_network else "")
        iso = f"bubblewrap ({ns} namespaces)"
        writable = f"/tmp only ({plan.limits.disk_bytes} bytes, tmpfs)"
    else:
        iso = "none (no namespaces)"
        writable = "its work folder and whatever its uid may write"
    uid = "a uid of its own per worker" if plan.drop_uid else ("root" if plan.root else "the grader's user")
    caps = "none" if plan.mode == "bwrap" or plan.drop_uid or not plan.root else "all (root)"
    cg = plan.cgroups.describe() if plan.cgroups else "none"
    return {
        "mode": plan.mode,
        "isolation": iso,
        "kernel_uid": uid,
        "caps": caps,
        "writable": writable,
        "cgroups": cg,
        "memory_bytes": plan.limits.memory_bytes,
        "max_processes": plan.limits.max_processes,
        "network_isolated": plan.mode == "bwrap" and plan.limits.isolate_network,
        "answer_key_hidden": plan.mode == "bwrap",
        "kernels": "forked from a template per worker" if plan.templates else "one fresh sandbox each",
        "warnings": list(plan.warnings),
    }
