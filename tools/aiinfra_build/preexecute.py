"""Execute the book's pages in parallel into the execution cache, before Sphinx runs.

Jupyter Book executes pages one at a time as Sphinx reads them. This script reads each page
exactly as myst-nb does, runs the ones the cache (``_build/.jupyter_cache``) does not hold
yet on ``-j`` worker processes, and stores the results there; the build that follows then
finds every page in the cache. A page that raises fails this step with its traceback.

Each page still gets a fresh kernel of its own, but forked (:mod:`.forkkernel`) from a process
that has already imported what the pages import, so no page pays for the imports again;
``--no-fork`` starts every kernel from scratch as Jupyter would (for comparison, and what the
build falls back to where forking is unavailable).

    python -m aiinfra_build.preexecute [-j 2] [--no-fork]
"""

from __future__ import annotations

import argparse
import json
import os
import sys
import time
from concurrent.futures import ProcessPoolExecutor, as_completed
from pathlib import Path

import yaml

from aiinfra_build import ROOT, forkkernel
from aiinfra_build.notebooks import pages

_KERNEL_MANAGER = None  # set in each worker process by _start_worker: None is nbclient's own


def read_page(path: Path):
    """The notebook myst-nb builds from a page (so the cache hashes agree)."""
    from myst_nb.core.config import NbParserConfig
    from myst_nb.core.read import create_nb_reader
    from myst_parser.config.main import MdParserConfig

    text = path.read_text()
    return create_nb_reader(str(path), MdParserConfig(), NbParserConfig(), text).read(text)


def _start_worker(statements: list[str] | None) -> None:
    """Worker start-up: the book-build environment, and (unless ``None``) a zygote importing ``statements``."""
    global _KERNEL_MANAGER
    os.environ["AIINFRA_BOOK_BUILD"] = "1"
    if statements is not None:
        os.environ.setdefault(
            "MPLBACKEND", "module://matplotlib_inline.backend_inline"
        )  # as ipykernel sets it
        from multiprocessing.util import Finalize

        zygote = forkkernel.start(statements, env=dict(os.environ))
        if zygote is not None:
            Finalize(zygote, zygote.close, exitpriority=10)  # reaped, so its kernels' CPU time is counted
        _KERNEL_MANAGER = forkkernel.kernel_manager_class()


def execute(path: Path, timeout_s: int):
    from jupyter_cache.executors.utils import single_nb_execution

    nb = read_page(path)
    extra = {} if _KERNEL_MANAGER is None else {"kernel_manager_class": _KERNEL_MANAGER}
    result = single_nb_execution(
        nb, cwd=str(path.parent), allow_errors=False, timeout=timeout_s, meta_override=True, **extra
    )
    return path, nb, result.time, result.exc_string if result.err else stderr_text(nb)


def stderr_text(nb) -> str | None:
    """What the cells wrote to stderr, or None: a page writes none, so any is a fault to fail on.

    A warning, or a kernel's own error (a ZMQ fault under load once left "DELIM not in msg_list" in
    a cell's output), would otherwise be cached and published as the page's output.
    """
    text = "".join(
        "".join(out.get("text", ""))
        for cell in nb.cells
        if cell.cell_type == "code"
        for out in cell.get("outputs", ())
        if out.get("output_type") == "stream" and out.get("name") == "stderr"
    )
    return f"a cell wrote to stderr:\n{text}" if text else None


def imports_of(notebooks) -> list[str]:
    return forkkernel.page_imports([c.source for nb in notebooks for c in nb.cells if c.cell_type == "code"])


def expected_seconds(nb, rel: str, last: dict) -> float:
    """How long a page should take, to start the longest first: its last time, else a guess from its code."""
    if rel in last:
        return last[rel]
    code = "\n".join(c.source for c in nb.cells if c.cell_type == "code")
    return 10.0 * code.count("measure.") + 2.0 * code.count("interactive_figure(") + len(code) / 2000


def main(argv=None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("-j", "--jobs", type=int, default=os.cpu_count() or 1)
    parser.add_argument("--no-fork", action="store_true", help="start every kernel from scratch")
    args = parser.parse_args(argv)
    from jupyter_cache import get_cache
    from jupyter_cache.base import CacheBundleIn

    config = yaml.safe_load((ROOT / "_config.yml").read_text())["execute"]
    cache_dir = ROOT / config["cache"]
    cache = get_cache(str(cache_dir))
    timings = cache_dir.parent / ".page-seconds.json"  # outside the cache, which a library change wipes
    last = json.loads(timings.read_text()) if timings.is_file() else {}
    todo = []
    for path in pages():
        nb = read_page(path)
        try:
            cache.match_cache_notebook(nb)
        except KeyError:
            todo.append((path, nb))
    rel = {path: str(path.relative_to(ROOT)) for path, _ in todo}
    todo.sort(key=lambda item: -expected_seconds(item[1], rel[item[0]], last))
    jobs = max(1, min(args.jobs, len(todo)))
    print(
        f"preexecute: {len(todo)} of {len(pages())} pages to run on {jobs} workers"
        + (", kernels forked from a warm process" if todo and not args.no_fork else "")
    )
    start, failed = time.perf_counter(), []
    statements = None if args.no_fork or not todo else imports_of(nb for _, nb in todo)
    with ProcessPoolExecutor(max_workers=jobs, initializer=_start_worker, initargs=(statements,)) as pool:
        futures = [pool.submit(execute, path, config["timeout"]) for path, _ in todo]
        for future in as_completed(futures):
            path, nb, seconds, error = future.result()
            if error:
                failed.append(rel[path])
                print(f"FAILED {rel[path]}\n{error}", file=sys.stderr)
                continue
            last[rel[path]] = round(seconds, 2)
            cache.cache_notebook_bundle(
                CacheBundleIn(nb, str(path), data={"execution_seconds": seconds}),
                check_validity=False,
                overwrite=True,
            )
            print(f"  {seconds:6.2f} s  {rel[path]}")
    if todo:
        timings.write_text(json.dumps(last, indent=0, sort_keys=True))
    print(f"preexecute: done in {time.perf_counter() - start:.1f} s")
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main())
