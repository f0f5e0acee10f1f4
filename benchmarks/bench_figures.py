"""Time each interactive figure's live update and size its precomputed static payload.

For every figure of :data:`aiinfra.book.figures.SOURCE_FIGURES`:

* **live update**: the figure is built in live mode and its first slider is
  moved through its values; each move runs the pure function and rasterises
  the new frame into the image widget (compute + redraw). Printed: median and
  90th percentile wall time, median CPU time of this process (the machine may
  be shared), and the target (<= 100 ms).
* **static payload**: the figure is built as in the book
  (``AIINFRA_BOOK_BUILD=1``); printed: frames, dpi, the exact embedded widget
  state in bytes (what the page carries) against the 400 KB budget, and the
  build time.

Prints a table; asserts nothing (``make bench``). ``--json PATH`` also
writes the numbers; ``--only NAME`` limits the run to one figure.
"""
from __future__ import annotations

import argparse
import importlib
import json
import os
import platform
import statistics
import time

from aiinfra.book import interactive
from aiinfra.book.figures import SOURCE_FIGURES

TARGET_S = 0.100
MOVES = 12


def live_times(mod, moves: int = MOVES):
    f = mod.show(mode="live")
    first = f.sliders[0]
    values = list(first.static_values())
    wall, cpu = [], []
    for k in range(moves):
        v = values[(k + 1) % len(values)]
        if v == f.params()[first.name] and len(values) > 1:
            v = values[(k + 2) % len(values)]
        c0 = time.process_time()
        f.set(**{first.name: v})
        cpu.append(time.process_time() - c0)
        wall.append(f.last_update_s)
    return wall, cpu


def static_payload(mod):
    t0 = time.perf_counter()
    f = mod.show(mode="static")
    build_s = time.perf_counter() - t0
    return {
        "frames": len(f.frames),
        "dpi": f.dpi,
        "embedded_bytes": interactive.embedded_state_bytes(f),
        "estimate_bytes": f.payload_bytes,
        "live_only": f.live_only,
        "build_s": build_s,
    }


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--json", help="also write the results to this file")
    ap.add_argument("--only", choices=SOURCE_FIGURES, help="run one figure")
    ap.add_argument("--moves", type=int, default=MOVES, help="slider moves timed per figure")
    args = ap.parse_args(argv)

    print(f"python {platform.python_version()} on {platform.machine()}, {os.cpu_count()} CPUs; "
          f"load average {os.getloadavg()[0]:.2f}")
    print(f"live target <= {TARGET_S * 1e3:.0f} ms per update; static budget <= "
          f"{interactive.DEFAULT_MAX_BYTES / 1e3:.0f} KB per figure")
    header = (f"{'figure':15s} {'live median':>11s} {'p90':>7s} {'cpu med':>8s} {'ok':>3s} | "
              f"{'frames':>6s} {'dpi':>4s} {'embedded':>10s} {'ok':>3s} {'build':>7s}  live-only")
    print(header)
    print("-" * len(header))
    results = {}
    for name in [args.only] if args.only else SOURCE_FIGURES:
        mod = importlib.import_module(f"aiinfra.book.figures.{name}")
        wall, cpu = live_times(mod, args.moves)
        med = statistics.median(wall)
        p90 = sorted(wall)[max(int(0.9 * len(wall)) - 1, 0)]
        st = static_payload(mod)
        results[name] = {"live_median_s": med, "live_p90_s": p90, "live_cpu_median_s": statistics.median(cpu),
                         "live_all_s": wall, **st}
        print(f"{name:15s} {med * 1e3:9.0f} ms {p90 * 1e3:5.0f} ms {statistics.median(cpu) * 1e3:6.0f} ms "
              f"{'yes' if med <= TARGET_S else 'NO':>3s} | {st['frames']:6d} {st['dpi']:4.0f} "
              f"{st['embedded_bytes'] / 1e3:7.1f} KB {'yes' if st['embedded_bytes'] <= interactive.DEFAULT_MAX_BYTES else 'NO':>3s} "
              f"{st['build_s']:6.1f} s  {', '.join(st['live_only']) or '-'}")
    if args.json:
        with open(args.json, "w") as fh:
            json.dump(results, fh, indent=2)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
