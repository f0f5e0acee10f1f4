"""Execute the book's pages in parallel into the execution cache, before Sphinx runs.

Jupyter Book executes pages one at a time as Sphinx reads them. This script reads each page
exactly as myst-nb does, runs the ones the cache (``_build/.jupyter_cache``) does not hold
yet on ``-j`` worker processes, and stores the results there; the build that follows then
finds every page in the cache. A page that raises fails this step with its traceback.

    python tools/preexecute.py [-j 2]
"""
from __future__ import annotations

import argparse
import os
import sys
import time
from concurrent.futures import ProcessPoolExecutor
from pathlib import Path

import yaml

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT / "tools"))
from notebooks import pages  # noqa: E402


def read_page(path: Path):
    """The notebook myst-nb builds from a page (so the cache hashes agree)."""
    from myst_nb.core.config import NbParserConfig
    from myst_nb.core.read import create_nb_reader
    from myst_parser.config.main import MdParserConfig

    text = path.read_text()
    return create_nb_reader(str(path), MdParserConfig(), NbParserConfig(), text).read(text)


def execute(path: Path, timeout_s: int):
    from jupyter_cache.executors.utils import single_nb_execution

    os.environ["AIINFRA_BOOK_BUILD"] = "1"
    nb = read_page(path)
    result = single_nb_execution(nb, cwd=str(path.parent), allow_errors=False, timeout=timeout_s, meta_override=True)
    return path, nb, result.time, result.exc_string if result.err else None


def main(argv=None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("-j", "--jobs", type=int, default=os.cpu_count() or 1)
    args = parser.parse_args(argv)
    from jupyter_cache import get_cache
    from jupyter_cache.base import CacheBundleIn

    config = yaml.safe_load((ROOT / "_config.yml").read_text())["execute"]
    cache = get_cache(str(ROOT / config["cache"]))
    todo = []
    for path in pages():
        try:
            cache.match_cache_notebook(read_page(path))
        except KeyError:
            todo.append(path)
    print(f"preexecute: {len(todo)} of {len(pages())} pages to run on {args.jobs} workers")
    start, failed = time.perf_counter(), []
    with ProcessPoolExecutor(max_workers=max(1, args.jobs)) as pool:
        futures = [pool.submit(execute, path, config["timeout"]) for path in todo]
        for future in futures:
            path, nb, seconds, error = future.result()
            rel = path.relative_to(ROOT)
            if error:
                failed.append(rel)
                print(f"FAILED {rel}\n{error}", file=sys.stderr)
                continue
            cache.cache_notebook_bundle(CacheBundleIn(nb, str(path), data={"execution_seconds": seconds}),
                                        check_validity=False, overwrite=True)
            print(f"  {seconds:6.2f} s  {rel}")
    print(f"preexecute: done in {time.perf_counter() - start:.1f} s")
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main())
