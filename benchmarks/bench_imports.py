#!/usr/bin/env python3
"""Import time of the formula modules: ``import aiinfra`` plus units, hardware, models, memory, roofline, decode.

    python benchmarks/bench_imports.py [--runs 15]

Each run is a fresh interpreter (``python -c``). Printed: the median and the best of
``--runs`` runs of the whole process (interpreter start-up included) and of the imports
alone (timed inside the process), the modules the imports pulled in that they should not
(sympy, matplotlib, ipywidgets), and the ten slowest modules by their own import time
(``-X importtime``, best of the runs). Target: <= 350 ms, no sympy. Then the start-up the tools
pay in every process (``import nbformat``: each pytest worker, every grader run, nbclient, the
book build), CPU median: jsonschema builds an RFC 3987 parser there when ``rfc3987-syntax`` is
installed (1.3 CPU s; ``make venv`` removes it). Not a test: the machine may be shared (the
load average is printed).
"""

from __future__ import annotations

import argparse
import importlib.util
import json
import os
import resource
import statistics
import subprocess
import sys
import time

TARGET_S = 0.350
IMPORTS = (
    "import aiinfra; from aiinfra import units, memory, roofline, decode; "
    "from aiinfra.catalog import hardware, models"
)
HEAVY = ("sympy", "matplotlib", "ipywidgets", "IPython", "scipy", "pandas")
PROBE = (
    f"import time, sys, json; t0 = time.perf_counter(); {IMPORTS}; t1 = time.perf_counter(); "
    f"print(json.dumps({{'imports_s': t1 - t0, 'heavy': sorted({{m.split('.')[0] for m in sys.modules}} & {set(HEAVY)!r})}}))"
)


def _children_cpu_s() -> float:
    r = resource.getrusage(resource.RUSAGE_CHILDREN)
    return r.ru_utime + r.ru_stime


TOOLS = "import nbformat"
TOOLS_TARGET_S = 0.5


def tools_cpu_s(runs: int) -> float:
    """Median CPU seconds of a fresh interpreter that runs :data:`TOOLS`."""
    cpus = []
    for _ in range(runs):
        c0 = _children_cpu_s()
        subprocess.run([sys.executable, "-c", TOOLS], check=True)
        cpus.append(_children_cpu_s() - c0)
    return statistics.median(cpus)


def one_run() -> tuple[float, float, float, list[str]]:
    """(wall s of the process, CPU s of the process, wall s of the imports, heavy modules imported)."""
    t0, c0 = time.perf_counter(), _children_cpu_s()
    out = subprocess.run([sys.executable, "-c", PROBE], capture_output=True, text=True, check=True)
    wall, cpu = time.perf_counter() - t0, _children_cpu_s() - c0
    data = json.loads(out.stdout)
    return wall, cpu, data["imports_s"], data["heavy"]


def self_times(runs: int) -> list[tuple[float, str]]:
    """Per module, the best self time (s) over ``runs`` runs of ``-X importtime``."""
    best: dict[str, float] = {}
    for _ in range(runs):
        err = subprocess.run(
            [sys.executable, "-X", "importtime", "-c", IMPORTS], capture_output=True, text=True, check=True
        ).stderr
        for line in err.splitlines()[1:]:
            parts = line.split("|")
            if len(parts) == 3 and parts[0].split(":")[-1].strip().isdigit():
                name, own = parts[2].strip(), int(parts[0].split(":")[-1]) * 1e-6
                best[name] = min(best.get(name, own), own)
    return sorted(((t, n) for n, t in best.items()), reverse=True)


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--runs", type=int, default=15)
    args = ap.parse_args()
    load0 = os.getloadavg()[0]
    one_run()  # warm the file cache and the bytecode
    walls, cpus, imports, heavy = [], [], [], set()
    for _ in range(args.runs):
        w, c, i, h = one_run()
        walls.append(w)
        cpus.append(c)
        imports.append(i)
        heavy.update(h)
    print(f"cores: {os.cpu_count()}, load average before: {load0:.2f}")
    print(f"  {IMPORTS}")
    print(
        f"  whole process (python start-up + imports): median {statistics.median(walls) * 1e3:.0f} ms, "
        f"best {min(walls) * 1e3:.0f} ms over {args.runs} runs; CPU median {statistics.median(cpus) * 1e3:.0f} ms"
    )
    print(
        f"  the imports alone:                         median {statistics.median(imports) * 1e3:.0f} ms, "
        f"best {min(imports) * 1e3:.0f} ms"
    )
    print(f"  heavy modules imported: {', '.join(sorted(heavy)) or 'none'}")
    print(
        "  slowest modules, own time (best of 5):  "
        + ", ".join(f"{n} {t * 1e3:.1f} ms" for t, n in self_times(5)[:10])
    )
    verdict = "within" if statistics.median(walls) <= TARGET_S and not {"sympy"} & heavy else "OVER"
    print(
        f"  {verdict} the target (whole process <= {TARGET_S * 1e3:.0f} ms, no sympy); "
        f"load average after: {os.getloadavg()[0]:.2f}"
    )
    tools = tools_cpu_s(max(args.runs // 3, 3))
    parser = importlib.util.find_spec("rfc3987_syntax") is not None
    print(
        f"  {TOOLS} (the tools' start-up): CPU median {tools * 1e3:.0f} ms; rfc3987-syntax installed: {parser}"
    )
    print(
        f"row: {TOOLS + ' (tools start-up, CPU)':<44} {tools * 1e3:7.0f} ms goal <= {TOOLS_TARGET_S * 1e3:.0f} ms; "
        f"rfc3987-syntax installed: {parser}"
    )
    print(
        f"row: {'import aiinfra + formula modules':<44} {statistics.median(walls) * 1e3:7.0f} ms goal <= "
        f"{TARGET_S * 1e3:.0f} ms, no sympy; heavy imported: {', '.join(sorted(heavy)) or 'none'}; "
        f"load {load0:.2f} -> {os.getloadavg()[0]:.2f}"
    )


if __name__ == "__main__":
    main()
