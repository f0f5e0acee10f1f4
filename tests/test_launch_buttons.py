"""Launch buttons and downloads in the built HTML all open the page's generated notebook.

Colab and Binder open the committed copy in `notebooks/` (from the configured repository
and branch); the `.ipynb` download serves the notebook this build generated, which
`python -m aiinfra_build.notebooks --check` (test_notebooks) holds byte for byte equal to the committed copy.
"""

import html
import re
from pathlib import Path

import pytest

from aiinfra_build import notebooks as gen
from book_pages import built

ROOT = Path(__file__).resolve().parents[1]

PAGES = gen.pages()


def hrefs(page: Path) -> list[str]:
    return [html.unescape(h) for h in re.findall(r'href="([^"]+)"', page.read_text())]


def test_the_book_was_built_with_every_page():
    assert PAGES, "no notebook pages found"
    for md in PAGES:
        built(md)


@pytest.mark.parametrize("md", PAGES, ids=lambda p: str(p.relative_to(ROOT)))
def test_colab_button_opens_the_generated_ipynb(md):
    url, branch = gen.repository()
    org_repo = url.split("github.com/", 1)[1]
    rel = md.relative_to(ROOT / "book").with_suffix(".ipynb")
    expected = f"https://colab.research.google.com/github/{org_repo}/blob/{branch}/notebooks/{rel.as_posix()}"
    links = [h for h in hrefs(built(md)) if "colab.research.google.com" in h]
    assert links == [expected]
    assert (ROOT / "notebooks" / rel).exists()


@pytest.mark.parametrize("md", PAGES, ids=lambda p: str(p.relative_to(ROOT)))
def test_binder_button_opens_the_generated_ipynb_in_jupyterlab(md):
    url, branch = gen.repository()
    org_repo = url.split("github.com/", 1)[1]
    rel = md.relative_to(ROOT / "book").with_suffix(".ipynb").as_posix()
    links = [h for h in hrefs(built(md)) if "mybinder.org" in h]
    assert links == [f"https://mybinder.org/v2/gh/{org_repo}/{branch}?urlpath=lab/tree/notebooks/{rel}"]
    assert (ROOT / "notebooks" / rel).exists()


@pytest.mark.parametrize("md", PAGES, ids=lambda p: str(p.relative_to(ROOT)))
def test_ipynb_download_serves_the_generated_notebook(md):
    page = built(md)
    downloads = [h for h in hrefs(page) if h.endswith(".ipynb") and "_sources" in h]
    assert len(downloads) == 1
    served = (page.parent / downloads[0]).resolve()
    assert served.read_bytes() == gen.target(md, gen.BUILT).read_bytes()
    assert served.read_bytes() == gen.target(md).read_bytes(), "stale notebooks/: run `make notebooks`"
