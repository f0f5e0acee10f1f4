"""What the hostile suites do to the grader from outside: run its CLI, find processes by their arguments."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path


def run_grader(*args, env: dict | None = None, timeout: float = 400) -> subprocess.CompletedProcess:
    """``python -m aiinfra.course.grading.cli ARGS`` in this interpreter, its output captured as text."""
    return subprocess.run(
        [sys.executable, "-m", "aiinfra.course.grading.cli", *map(str, args)],
        capture_output=True,
        text=True,
        timeout=timeout,
        env=env,
    )


def processes_with(text: str) -> list[int]:
    """PIDs of the processes whose command line contains ``text``."""
    out = []
    for pid in os.listdir("/proc"):
        if pid.isdigit():
            try:
                if text.encode() in Path(f"/proc/{pid}/cmdline").read_bytes():
                    out.append(int(pid))
            except OSError:
                pass
    return out
