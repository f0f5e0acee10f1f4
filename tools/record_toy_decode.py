"""Measure the toy decode sweep that chapter 8's page 3 draws before anything runs, and store it.

The committed notebook of that page must be the same file on every machine, so its figure
cannot come from the build machine's fresh measurement. It comes from one stored sweep
(``aiinfra.measure.stored_decode_sweep``), written by this tool with the machine's record, the
date and the conditions of the run::

    python tools/record_toy_decode.py --conditions "idle machine, nothing else running"

Rerun it only to replace the stored sweep on purpose (a new reference machine): the figure, the
page's notebook and the tests that read the stored file change with it.
"""

from __future__ import annotations

import argparse
import os
from pathlib import Path

from aiinfra import measure

OUT = Path(__file__).resolve().parents[1] / "src" / "aiinfra" / "catalog" / "data" / measure.STORED_SWEEP


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--conditions", required=True, help="what else ran on the machine, its power state")
    parser.add_argument("--budget-s", type=float, default=1.6, help="total time of the sweep (interleaved)")
    args = parser.parse_args(argv)
    if os.environ.get(measure.SCALE_ENV, "").strip():
        raise SystemExit(f"{measure.SCALE_ENV} is set: it falsifies every time; unset it to store a sweep")
    source = f"tools/record_toy_decode.py, {args.budget_s:g} s; {args.conditions}"
    sweep = measure.measure_decode_sweep_record(budget_s=args.budget_s, source=source)
    OUT.write_text(sweep.to_json(), encoding="utf-8")
    print(f"{OUT}: {sweep.machine.backend}, batches {sweep.batches}")


if __name__ == "__main__":
    main()
