"""A chapter notebook in JupyterLab, as a Binder or local reader opens it.

JupyterLab is started from the project's venv (headless, no token, on a free localhost
port) over a scratch copy of one generated chapter notebook, and driven in Debian's
chromium through Playwright, with every non-local request aborted. The test checks what a
reader meets, in order: the notebook opens unmodified (not dirty, and saving it rewrites the
committed bytes); the prose is rendered Markdown that shows the page's glued numbers
(among them the 8-bit size of the 70B model's weights) and no MyST; the set-up cell and
the other cells the book hides are folded; Run All finishes without an error; and moving
a slider of the live figure changes its image.
"""

from __future__ import annotations

import html
import json
import os
import platform
import re
import socket
import subprocess
import sys
import time
import urllib.request
from pathlib import Path

import pytest

from aiinfra.book import colab

from .conftest import ARTIFACTS, ROOT

pytestmark = pytest.mark.slow

PAGE = "ch01/05-one-model-step"
NOTEBOOK = ROOT / "notebooks" / f"{PAGE}.ipynb"
BUILT_PAGE = ROOT / "_build" / "html" / "book" / f"{PAGE}.html"
GLUE_JSON = ROOT / "_build" / "jupyter_execute" / "book" / f"{PAGE}.glue.json"
INT8_KEY = "ch01_p5_int8"  # the 8-bit (grouped int8 + scales) size of DeepSeek-R1-Distill-Llama-70B
START_TIMEOUT_S = 120
RUN_ALL_TIMEOUT_MS = 240_000
UI_TIMEOUT_MS = 90_000

# JupyterLab for a test: every cell in the DOM (no windowing), no news, no update checks.
SETTINGS = {
    "@jupyterlab/notebook-extension/tracker.jupyterlab-settings": {"windowingMode": "none"},
    "@jupyterlab/apputils-extension/notification.jupyterlab-settings": {
        "fetchNews": "false",
        "checkForUpdates": False,
    },
}
PAGE_CONFIG = {"disabledExtensions": {"@jupyterlab/apputils-extension:announcements": True}}


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def glued(key: str) -> str:
    """One value as myst-nb glued it (the build writes them next to the executed page)."""
    data = json.loads(GLUE_JSON.read_text(encoding="utf-8"))
    assert key in data, f"{GLUE_JSON.name} has no {key!r}: update INT8_KEY in this test"
    return data[key]["data"]["text/plain"].strip("'\"")


def measured_values() -> set[str]:
    """Values measured on the build machine: this build's, which the committed notebook cannot hold."""
    built = json.loads((ROOT / "_build" / "notebooks" / f"{PAGE}.ipynb").read_text(encoding="utf-8"))
    prose = "".join("".join(c["source"]) for c in built["cells"] if c["cell_type"] == "markdown")
    return {html.unescape(m) for m in re.findall(r'<span title="measured[^"]*">(.*?)</span>', prose, re.S)}


def glued_values() -> list[str]:
    """The values myst-nb pasted into the built page (what the notebook's prose must show)."""
    assert BUILT_PAGE.is_file(), f"{BUILT_PAGE} missing: run `make book` first"
    spans = re.findall(
        r'<span class="pasted-text">(.*?)</span>', BUILT_PAGE.read_text(encoding="utf-8"), re.S
    )
    return [html.unescape(re.sub(r"<[^>]+>", "", s)) for s in spans]


@pytest.fixture(scope="module")
def jupyterlab(tmp_path_factory):
    """(base URL, notebook path on disk) of a JupyterLab serving a scratch copy of the notebook."""
    assert NOTEBOOK.is_file(), f"{NOTEBOOK} missing: run `make notebooks`"
    base = tmp_path_factory.mktemp("jupyterlab")
    root = base / "root"
    copy = root / "notebooks" / f"{PAGE}.ipynb"
    copy.parent.mkdir(parents=True)
    # The reader's kernel here is this venv's Python. JupyterLab records the kernel's Python
    # version in language_info on open, the one piece of metadata a committed notebook cannot
    # know (colab.NOTEBOOK_METADATA leaves it out); the copy carries this reader's, as a notebook
    # saved once by the same reader would, and must then open clean.
    nb = json.loads(NOTEBOOK.read_text(encoding="utf-8"))
    nb["metadata"]["language_info"]["version"] = platform.python_version()
    copy.write_text(colab.notebook_text(nb), encoding="utf-8")
    settings, config = base / "settings", base / "config"
    for name, value in SETTINGS.items():
        path = settings / name
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(json.dumps(value))
    (config / "labconfig").mkdir(parents=True)
    (config / "labconfig" / "page_config.json").write_text(json.dumps(PAGE_CONFIG))
    env = {k: v for k, v in os.environ.items() if k not in ("AIINFRA_BOOK_BUILD", "JUPYTER_PATH")}
    env.update(
        JUPYTER_CONFIG_DIR=str(config),
        JUPYTER_DATA_DIR=str(base / "data"),
        JUPYTER_RUNTIME_DIR=str(base / "runtime"),
        JUPYTERLAB_SETTINGS_DIR=str(settings),
        JUPYTERLAB_WORKSPACES_DIR=str(base / "workspaces"),
        IPYTHONDIR=str(base / "ipython"),
        MPLCONFIGDIR=str(base / "mpl"),
    )
    port = _free_port()
    jupyter = Path(sys.executable).parent / "jupyter"
    log = (base / "jupyterlab.log").open("w")
    proc = subprocess.Popen(
        [
            str(jupyter),
            "lab",
            "--no-browser",
            f"--ServerApp.port={port}",
            "--ServerApp.port_retries=0",
            "--ServerApp.ip=127.0.0.1",
            "--IdentityProvider.token=",
            "--ServerApp.password=",
            f"--ServerApp.root_dir={root}",
            "--LabApp.check_for_updates_class=jupyterlab.NeverCheckForUpdate",
            "--LabApp.extension_manager=readonly",
            "--ServerApp.allow_root=True",
        ],
        cwd=root,
        env=env,
        stdout=log,
        stderr=subprocess.STDOUT,
    )
    url = f"http://127.0.0.1:{port}"
    try:
        deadline = time.monotonic() + START_TIMEOUT_S
        while True:
            assert proc.poll() is None, f"JupyterLab exited: {(base / 'jupyterlab.log').read_text()[-3000:]}"
            try:
                with urllib.request.urlopen(f"{url}/api/status", timeout=5) as r:
                    if r.status == 200:
                        break
            except OSError:
                pass
            assert time.monotonic() < deadline, (
                f"JupyterLab did not start: {(base / 'jupyterlab.log').read_text()[-3000:]}"
            )
            time.sleep(0.5)
        yield url, copy
    finally:
        proc.terminate()
        try:
            proc.wait(timeout=30)
        except subprocess.TimeoutExpired:
            proc.kill()
            proc.wait()
        log.close()


@pytest.fixture
def lab_page(browser, jupyterlab):
    url, copy = jupyterlab
    context = browser.new_context(viewport={"width": 1400, "height": 1000}, service_workers="block")
    page = context.new_page()
    blocked, errors = [], []

    def route(r):
        if r.request.url.startswith((url, "data:", "blob:", "about:")):
            r.continue_()
        else:
            blocked.append(r.request.url)
            r.abort()

    page.route("**/*", route)
    page.on("pageerror", lambda e: errors.append(str(e)))
    yield page, url, copy, blocked, errors
    context.close()


def _cells(page):
    return page.locator(".jp-NotebookPanel .jp-Notebook .jp-Cell")


def _screenshot(page, name: str):
    ARTIFACTS.mkdir(parents=True, exist_ok=True)
    page.screenshot(path=str(ARTIFACTS / f"jupyterlab-{name}.png"), full_page=False)


def menu(page, name: str, item: str):
    page.locator(".lm-MenuBar-itemLabel", has_text=re.compile(f"^{re.escape(name)}$")).click()
    page.locator(".lm-Menu-itemLabel", has_text=re.compile(f"^{re.escape(item)}$")).click()


def saved_when_run(page, copy: Path, timeout_s: float) -> dict:
    """Save the notebook (Ctrl+S) until every code cell has run and the kernel is idle; the saved notebook."""
    deadline = time.monotonic() + timeout_s
    while True:
        page.wait_for_timeout(2000)
        idle = page.locator(".jp-Notebook-ExecutionIndicator[data-status='idle']").count() == 1
        page.keyboard.press("Control+s")
        page.wait_for_timeout(1000)
        nb = json.loads(copy.read_text())
        if idle and all(c["execution_count"] for c in nb["cells"] if c["cell_type"] == "code"):
            return nb
        assert time.monotonic() < deadline, "Run All did not finish"


def test_chapter_notebook_in_jupyterlab(lab_page):
    page, url, copy, blocked, errors = lab_page
    saved = json.loads(copy.read_text())
    page.goto(f"{url}/lab/tree/notebooks/{PAGE}.ipynb", wait_until="load", timeout=UI_TIMEOUT_MS)
    cells = _cells(page)
    cells.first.wait_for(timeout=UI_TIMEOUT_MS)
    page.wait_for_function(
        f"() => document.querySelectorAll('.jp-NotebookPanel .jp-Cell').length >= {len(saved['cells'])}",
        timeout=UI_TIMEOUT_MS,
    )
    n_markdown = sum(c["cell_type"] == "markdown" for c in saved["cells"])
    page.wait_for_function(
        "n => document.querySelectorAll('.jp-MarkdownCell.jp-mod-rendered .jp-RenderedMarkdown').length === n"
        " && document.querySelectorAll('.jp-RenderedMarkdown mjx-container').length > 10",
        arg=n_markdown,
        timeout=UI_TIMEOUT_MS,
    )
    _screenshot(page, "opened")

    # 0. Opening changes nothing: once the kernel is up and idle (its kernel_info reply is in, which
    # is when JupyterLab fills in language metadata), the document is not dirty, and saving it
    # writes back the committed bytes: the metadata JupyterLab writes on open was already there.
    committed = copy.read_bytes()
    page.locator(".jp-Notebook-ExecutionIndicator[data-status='idle']").wait_for(timeout=UI_TIMEOUT_MS)
    page.wait_for_timeout(2000)
    assert page.locator(".jp-NotebookPanel.jp-mod-dirty, .lm-TabBar-tab.jp-mod-dirty").count() == 0, (
        "the notebook is modified right after opening"
    )
    page.keyboard.press("Control+s")
    page.wait_for_function(
        "() => !document.querySelector('.jp-NotebookPanel.jp-mod-dirty')", timeout=UI_TIMEOUT_MS
    )
    page.wait_for_timeout(1000)
    assert copy.read_bytes() == committed, "saving the just-opened notebook changed the file"

    # 1. The prose is rendered Markdown with the page's numbers and no MyST.
    prose = page.locator(".jp-MarkdownCell .jp-RenderedMarkdown")
    assert prose.count() == n_markdown
    text = "\n".join(prose.all_inner_texts())
    values = glued_values()
    assert len(values) > 20, values
    missing = [v for v in values if v not in text and v not in measured_values()]
    assert not missing, f"glued values not shown in JupyterLab: {missing} in {text[-700:]!r}"
    assert "{glue" not in text and "{term}" not in text and "{eq}" not in text and ":::" not in text
    assert page.locator(".jp-MarkdownCell .jp-RenderedMarkdown table").count() >= 1
    weights = glued(INT8_KEY)
    assert re.fullmatch(r"[\d.]+ GB", weights) and weights in text, f"8-bit 70B weights ({weights}) not shown"

    # 2. The set-up cell is first and folded; so is every cell the book hides.
    setup = cells.first
    assert "jp-CodeCell" in setup.get_attribute("class")
    assert setup.locator(".jp-InputPlaceholder").is_visible()
    assert not setup.locator(".jp-InputArea-editor").is_visible()
    code = [c for c in saved["cells"] if c["cell_type"] == "code"]
    hidden = sum(c["metadata"].get("jupyter", {}).get("source_hidden", False) for c in code)
    assert hidden >= 3
    assert page.locator(".jp-CodeCell .jp-InputPlaceholder").count() == hidden

    # 3. Run All (saved outputs cleared first, so every count comes from this run) finishes without an error.
    menu(page, "Edit", "Clear Outputs of All Cells")
    menu(page, "Run", "Run All Cells")
    ran = saved_when_run(page, copy, RUN_ALL_TIMEOUT_MS / 1000)
    assert [c["execution_count"] for c in ran["cells"] if c["cell_type"] == "code"] == list(
        range(1, len(code) + 1)
    )
    _screenshot(page, "ran")
    errors_saved = [
        o
        for c in ran["cells"]
        if c["cell_type"] == "code"
        for o in c["outputs"]
        if o["output_type"] == "error"
    ]
    assert not errors_saved, errors_saved
    assert page.locator(".jp-OutputArea-output[data-mime-type='application/vnd.jupyter.error']").count() == 0
    stderr = page.locator(
        ".jp-OutputArea-output[data-mime-type='application/vnd.jupyter.stderr']"
    ).all_inner_texts()
    assert not any("Error" in s or "Traceback" in s for s in stderr), stderr

    # 4. The live figure responds: moving a slider changes its image.
    figure = page.locator(".aiinfra-figure").first
    figure.wait_for(timeout=UI_TIMEOUT_MS)
    figure.scroll_into_view_if_needed()
    assert "aiinfra-figure-static" not in (figure.get_attribute("class") or ""), (
        "the figure ran in static mode"
    )
    image = figure.locator("img.aiinfra-frame")
    image.wait_for(timeout=UI_TIMEOUT_MS)
    before = image.get_attribute("src")
    handle = figure.locator(".aiinfra-slider .noUi-handle").first
    handle.focus()
    page.keyboard.press("ArrowRight")
    page.wait_for_function(
        "([img, src]) => img.getAttribute('src') !== src",
        arg=[image.element_handle(), before],
        timeout=UI_TIMEOUT_MS,
    )
    _screenshot(page, "slider-moved")
    assert image.get_attribute("src") != before

    assert not blocked, f"JupyterLab requested non-local URLs: {blocked}"
    assert not errors, errors
