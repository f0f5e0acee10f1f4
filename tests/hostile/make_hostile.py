#!/usr/bin/env python3
"""Write the hostile submissions of tests/test_grading_hostile.py as real notebooks.

    python tests/hostile/make_hostile.py      # rewrites tests/hostile/*.ipynb (deterministic)

Each file is named after the student id the grader will give it. Cells that
record a correct answer compute it with aiinfra, as a student would.
"""

from __future__ import annotations

import json
from pathlib import Path

HERE = Path(__file__).resolve().parent

SETUP = "from aiinfra.course.exercises import answer, check, set_student\nfrom aiinfra import units"
# (h) of exercise 1-2 is the 400 Gbit/s line rate in GB/s; (i) the time to move 1 GB, in ms.
GOOD_H = 'answer("1-2", "h", units.bytes_per_s_from_gbit_per_s(400) / units.GB)'
GOOD_I = 'answer("1-2", "i", 1e3 * units.GB / units.bytes_per_s_from_gbit_per_s(400))'

# forks a detached process that sends a correct (i) straight to the answers channel 1.5 s later
DETACHED_WRITER = (
    "import json, os, time\n"
    "fd = int(os.environ['AIINFRA_ANSWERS_FD'])\n"
    "late = json.dumps({'exercise': '1-2', 'part': 'i', "
    "'value': 1e3 * units.GB / units.bytes_per_s_from_gbit_per_s(400)}) + '\\n'\n"
    "if os.fork() == 0:\n"
    "    os.setsid()\n"
    "    if os.fork() == 0:\n"
    "        time.sleep(1.5)\n"
    "        os.write(fd, late.encode())\n"
    "    os._exit(0)\n"
    "os.wait()\n"
)

CASES: dict[str, list[str]] = {
    # a run that raises midway: (h) counts, (i) is never reached
    "raises_midway": [SETUP, GOOD_H, "1 / 0", GOOD_I],
    # an infinite loop is stopped by the cell time limit; the answer before it counts
    "infinite_loop": [SETUP, GOOD_H, "while True:\n    pass", GOOD_I],
    # the kernel process exits; the answer before it counts
    "os_exit": [SETUP, GOOD_H, "import os\nos._exit(1)", GOOD_I],
    # allocating far beyond the memory limit
    "memory_bomb": [SETUP, GOOD_H, "hog = []\nwhile True:\n    hog.append(bytearray(64 * 2**20))", GOOD_I],
    # 10 MB of printing, then a correct answer that must still count
    "print_10mb": [SETUP, 'line = "x" * 999\nfor _ in range(10_000):\n    print(line)', GOOD_H],
    # an object that claims to equal everything, and its friends
    "always_equal": [
        SETUP,
        "class Anything(float):\n    def __eq__(self, other):\n        return True\n"
        "    __hash__ = float.__hash__\n\n"
        "class Blob:\n    def __eq__(self, other):\n        return True\n"
        "    def __float__(self):\n        return 50.0\n\n"
        'answer("1-2", "h", Blob())\nanswer("1-2", "i", Anything(20.0))',
    ],
    # NaN, infinity, a string, a numpy scalar and a bool where numbers are due
    "wrong_types": [
        SETUP,
        "import numpy as np\n"
        'answer("1-2", "a", float("nan"))\n'
        'answer("1-2", "b", float("inf"))\n'
        'answer("1-2", "h", "50")\n'
        'answer("1-2", "i", np.float64(20.0))\n'
        'answer("1-2", "d", True)\n'
        'answer("1-2", "e", [1.0, 2.0])',
    ],
    # numpy, math and the feedback module patched to call everything correct; the answers are wrong
    "numpy_patch": [
        SETUP,
        "import math, numpy as np\nimport aiinfra.course.exercises.feedback as fb\n"
        "np.isclose = lambda *a, **k: True\nnp.allclose = lambda *a, **k: True\n"
        "math.isclose = lambda *a, **k: True\n"
        'fb.diagnose = lambda *a, **k: ("correct", "correct")\n'
        'answer("1-2", "h", 7.0)\nanswer("1-2", "i", 7.0)\ncheck("1-2")',
    ],
    # check() redefined (and the library's check replaced) to print praise; the answers are wrong
    "redefined_check": [
        SETUP,
        "import aiinfra.course.exercises as ex\nimport aiinfra.course.exercises.runtime as rt\n"
        "def check(*args, **kwargs):\n    print('all parts correct, full marks')\n"
        "ex.check = rt.check = check\n"
        'answer("1-2", "h", 400.0)\nanswer("1-2", "i", 2.5)\ncheck("1-2")',
    ],
    # looks for the gradebook through /proc and /tmp and tries to rewrite it
    "writes_gradebook": [
        SETUP,
        "import glob, os, sqlite3\n"
        "found = set()\n"
        "for cmd in glob.glob('/proc/[0-9]*/cmdline'):\n"
        "    try:\n"
        "        args = open(cmd, 'rb').read().split(b'\\0')\n"
        "    except OSError:\n"
        "        continue\n"
        "    for i, a in enumerate(args[:-1]):\n"
        "        if a in (b'--out', b'--gradebook'):\n"
        "            p = args[i + 1].decode()\n"
        "            found.add(p if p.endswith('.sqlite') else os.path.join(p, 'gradebook.sqlite'))\n"
        "found.update(glob.glob('/tmp/**/gradebook.sqlite', recursive=True))\n"
        "attempts = []\n"
        "for path in sorted(found):\n"
        "    try:\n"
        "        db = sqlite3.connect(path)\n"
        '        db.execute("UPDATE submissions SET auto_score = 999")\n'
        "        db.execute(\"INSERT INTO submissions VALUES ('ch01','intruder','x','x','x','ok','x',999,29,4,0,0,'{}','now')\")\n"
        "        db.commit()\n"
        "        attempts.append((path, 'written'))\n"
        "    except Exception as exc:\n"
        "        attempts.append((path, type(exc).__name__))\n"
        "    try:\n"
        "        with open(path, 'r+b') as fh:\n"
        "            fh.write(b'garbage')\n"
        "        attempts.append((path, 'overwritten'))\n"
        "    except Exception as exc:\n"
        "        attempts.append((path, type(exc).__name__))\n"
        "print(attempts)",
        GOOD_H,
    ],
    # --- a batch that must never crash -----------------------------------------------------------
    # an answer line nested 100,000 levels deep, written straight to the answers channel; the next answer counts
    "nested_answer_line": [
        SETUP,
        GOOD_H,
        'import os\nline = b\'{"exercise": "1-2", "part": "i", "value": \''
        " + b'[' * 100000 + b']' * 100000 + b'}\\n'\n"
        "os.write(int(os.environ['AIINFRA_ANSWERS_FD']), line)",
        GOOD_I,
    ],
    # 3,000 nested folders in the work folder
    "deep_tree": [
        SETUP,
        GOOD_H,
        "import os\nbase = os.getcwd()\nfor _ in range(3000):\n    os.mkdir('d')\n    os.chdir('d')\n"
        "os.chdir(base)",
        GOOD_I,
    ],
    # a free-text answer holding lone surrogates
    "surrogate_answer": [SETUP, GOOD_H, 'answer("1-1", "g", "caf\\udce9 and \\ud800 alone")'],
    # --- nothing may outlive the sandbox ---------------------------------------------------------
    "litter": [
        SETUP,
        "import ctypes, os, subprocess\n"
        "written = []\n"
        "for d in ('/tmp', '/var/tmp', '/dev/shm', '/run/lock'):\n"
        "    try:\n"
        "        with open(os.path.join(d, 'aiinfra-hostile-litter'), 'w') as fh:\n"
        "            fh.write('x')\n"
        "        written.append(d)\n"
        "    except OSError:\n"
        "        pass\n"
        "shmid = ctypes.CDLL(None).shmget(0x41494E46, 4096, 0o1666)\n"
        "subprocess.Popen(['sleep', '31415'], start_new_session=True)\n"
        "if os.fork() == 0:\n"
        "    os.setsid()\n"
        "    if os.fork() == 0:\n"
        "        os.execvp('sleep', ['sleep', '31416'])\n"
        "    os._exit(0)\n"
        "os.wait()\n"
        "answer('1-1', 'g', f'written {written}; shared memory id {shmid}')",
        GOOD_H,
    ],
    # --- limits that limit -----------------------------------------------------------------------
    # five processes of ~150 MiB each: each is under the per-process limit, together they are not
    "forked_memory": [
        SETUP,
        GOOD_H,
        # each child holds its 150 MB until all five have said so (or died): 750 MB at once, whatever
        # the machine's load, with no sleep to outlast a cell time limit
        "import subprocess, sys\n"
        'hog = \'import sys; b = b"x" * (150 * 2**20); print("held", flush=True); sys.stdin.read()\'\n'
        "procs = [subprocess.Popen([sys.executable, '-c', hog], stdin=subprocess.PIPE, stdout=subprocess.PIPE)\n"
        "         for _ in range(5)]\n"
        "held = [p.stdout.readline() for p in procs]\n"
        "for p in procs:\n"
        "    p.stdin.close()\n"
        "codes = [p.wait() for p in procs]",
    ],
    # a fork bomb: stopped by the cap on processes, and the cell goes on
    "fork_bomb": [
        SETUP,
        GOOD_H,
        "import os, time\nkids = 0\ntry:\n    for _ in range(1000):\n        if os.fork() == 0:\n"
        "            time.sleep(20)\n            os._exit(0)\n        kids += 1\nexcept OSError:\n    pass\n"
        "answer('1-1', 'g', f'forked {kids}')",
    ],
    # fill /tmp far past its cap
    "disk_hog": [
        SETUP,
        GOOD_H,
        "for i in range(1000):\n    with open(f'/tmp/fill{i}', 'wb') as fh:\n"
        "        fh.write(b'x' * (8 * 2**20))",
        GOOD_I,
    ],
    # one 40 MB output message: refused by the grader before it is decoded
    "huge_message": [SETUP, 'import sys\nsys.stdout.write("y" * (40 * 2**20))\nsys.stdout.flush()', GOOD_H],
    # a detached process writes a correct answer 1.5 s after the kernel died / after the run stopped
    "writer_after_death": [SETUP, GOOD_H, DETACHED_WRITER + "os._exit(1)", GOOD_I],
    "writer_after_error": [SETUP, GOOD_H, DETACHED_WRITER + "raise RuntimeError('stop here')", GOOD_I],
}


def notebook(sources: list[str]) -> dict:
    cells = [
        {
            "cell_type": "code",
            "execution_count": None,
            "id": f"c{i}",
            "metadata": {},
            "outputs": [],
            "source": src,
        }
        for i, src in enumerate(sources)
    ]
    return {
        "cells": cells,
        "metadata": {"kernelspec": {"display_name": "Python 3", "language": "python", "name": "python3"}},
        "nbformat": 4,
        "nbformat_minor": 5,
    }


def main() -> None:
    for name, sources in CASES.items():
        (HERE / f"{name}.ipynb").write_text(json.dumps(notebook(sources), indent=1) + "\n", encoding="utf-8")
    (HERE / "empty.ipynb").write_text(json.dumps(notebook([]), indent=1) + "\n", encoding="utf-8")
    (HERE / "malformed.ipynb").write_text(
        '{"cells": [{"cell_type": "code", "source": "answer(', encoding="utf-8"
    )
    (HERE / "not_a_notebook.ipynb").write_bytes(b"\x89PNG\r\n\x1a\n\x00\x00\x00\rIHDR" + bytes(range(256)))


if __name__ == "__main__":
    main()
