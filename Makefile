# Two commands set everything up: `make book` and `make test`.
SHELL := /bin/bash
PYTHON ?= python3
VENV ?= .venv
PY := $(VENV)/bin/python
STAMP := $(VENV)/.installed
JB := $(VENV)/bin/jupyter-book
JOBS ?= $(shell nproc 2>/dev/null || echo 2)

.PHONY: book test lint venv vendor notebooks clean bench nbval library-stamp oracle pdf test-pdf test-colab

venv: $(STAMP)

$(STAMP): requirements.txt requirements-lint.txt pyproject.toml tools/pyproject.toml
	@test -x $(PY) || $(PYTHON) -m venv $(VENV)
	$(PY) -m pip install -q --upgrade pip
	$(PY) -m pip install -q -r requirements.txt -r requirements-lint.txt
	$(PY) -m pip uninstall -q -y jupyterlab-myst 2>/dev/null || true  # dropped: incompatible with JupyterLab 4.6
	@# jsonschema builds an Earley parser of RFC 3987 at import when rfc3987-syntax is installed
	@# (jupyter-events pulls it in, through jsonschema[format-nongpl]): 1.3 CPU s in every process
	@# that imports nbformat (each pytest worker, every grader run, nbclient, the book build).
	@# Nothing here checks the "iri" formats it serves; without it, jsonschema leaves them unchecked.
	$(PY) -m pip uninstall -q -y rfc3987-syntax
	$(PY) -m pip install -q --no-deps -e .
	$(PY) -m pip install -q --no-deps -e tools  # aiinfra_build: the build tools, dev venv only (CONTRIBUTING)
	@touch $(STAMP)

vendor: $(STAMP)
	$(PY) tools/vendor_js.py

# The book build writes one notebook per page to _build/notebooks/; this commits them to notebooks/.
notebooks: book
	$(PY) -m aiinfra_build.notebooks --write

# The execution cache keys pages by their code only, so a change to the library (or its
# shipped configs) clears it: every page then re-executes against the new code. The cache
# carries the hash of the library it was made with (content, not mtimes: a fresh checkout or
# a cache restored by CI keeps it when the library is the same). Sphinx's saved environment
# goes too, or pages whose source did not change would keep the HTML (and the generated
# notebook) rendered from the old outputs.
CACHE := _build/.jupyter_cache
LIBRARY_HASH = $(shell { find src \( -name '*.py' -o -name '*.json' \) -print0 | LC_ALL=C sort -z \
	| xargs -0 sha256sum; sha256sum requirements.txt; } | sha256sum | cut -c1-16)
library-stamp:
	@if [ "$$(cat $(CACHE)/library.sha256 2>/dev/null)" != "$(LIBRARY_HASH)" ]; then \
	  echo "library changed: clearing $(CACHE) and _build/.doctrees"; \
	  rm -rf $(CACHE) _build/.doctrees; mkdir -p $(CACHE); echo "$(LIBRARY_HASH)" > $(CACHE)/library.sha256; fi

# Chapter 8 measures the build machine once per build into one record, kept in the execution
# cache beside the outputs that quote it (aiinfra.measure.machine_record).
book: export AIINFRA_MACHINE_RECORD := $(CURDIR)/$(CACHE)/machine-record.json

# Pages run in parallel into the execution cache first; the build then finds them all cached.
# PREEXECUTE_FLAGS=--no-fork starts every kernel from scratch (plain nbclient kernels, no zygote).
PREEXECUTE_FLAGS ?=
book: $(STAMP) vendor library-stamp
	$(PY) -m aiinfra_build.preexecute -j $(JOBS) $(PREEXECUTE_FLAGS)
	AIINFRA_BOOK_BUILD=1 $(JB) build . --builder html -W -n --keep-going

# Library, grader and hostile submissions, stale notebooks, nbval over the student handouts
# (exercises/), launch links, browser tests (the book in chromium, a chapter notebook in JupyterLab).
# notebooks/ is not executed again: `make book` has just run the same cells, and the stale check
# holds notebooks/ to that build's outputs (`make nbval` re-executes them).
# Property tests run derandomized (hypothesis profile "ci"); HYPOTHESIS_PROFILE=dev explores.
# --dist loadgroup: one test at a time to either worker, a file whose tests share a module-scoped
# fixture (or a notebook's cells) as one unit, and the browser checks of one built page as one unit
# (they read one chromium visit of it, tests/browser/snapshots.py) (tests/conftest.py);
# --durations=15: the slowest. Bytecode is written even where the caller's shell turns it off
# (PYTHONDONTWRITEBYTECODE): the suite starts hundreds of Python processes (kernels, graders, CLI
# runs, two workers), and without it each one compiles the library and pytest rewrites every test.
HYPOTHESIS_PROFILE ?= ci
test: book lint
	HYPOTHESIS_PROFILE=$(HYPOTHESIS_PROFILE) env -u PYTHONDONTWRITEBYTECODE \
	  $(PY) -m pytest -n $(JOBS) --dist loadgroup --durations=15

# Lint and types (configured in pyproject.toml): zero findings, or `make test` fails.
LINTED := src tools tests benchmarks
lint: $(STAMP)
	$(VENV)/bin/ruff check $(LINTED)
	$(VENV)/bin/ruff format --check $(LINTED)
	$(VENV)/bin/mypy

# Re-execute notebooks/ (the Colab copies of the pages) in fresh kernels, outside the book build,
# and compare the glue cells' outputs (tag nbval-check-output) with the saved ones.
nbval: $(STAMP)
	$(PY) -m pytest -n $(JOBS) --dist loadfile -p no:cacheprovider notebooks

# Every benchmark, with the machine's load, then the rows of issue 17's table (BENCH=--quick:
# without the build benchmark, which copies the checkout and runs make book and make test).
bench: $(STAMP)
	$(PY) benchmarks/run_all.py $(BENCH)

# The independent oracle for the exact counter (not part of `make test`: torch and transformers are
# a large download). Its own venv builds every shipped config on the meta device with transformers,
# compares the counts tensor group by tensor group and the cache bytes at a few contexts, and writes
# src/aiinfra/catalog/data/oracle.json, which tests/test_oracle.py holds the calculator to.
ORACLE_VENV ?= .oracle-venv
ORACLE_PY := $(ORACLE_VENV)/bin/python
oracle:
	@test -x $(ORACLE_PY) || $(PYTHON) -m venv $(ORACLE_VENV)
	$(ORACLE_PY) -m pip install -q torch==2.13.0 transformers==5.24.0 numpy
	$(ORACLE_PY) -m pip install -q --no-deps -e .
	$(ORACLE_PY) tools/oracle.py --write

# The whole book as one PDF, $(PDF): Jupyter Book's LaTeX builder, then latexmk with XeLaTeX.
# Debian packages: texlive-xetex latexmk texlive-fonts-recommended texlive-latex-extra
# fonts-freefont-otf librsvg2-bin, and poppler-utils for the test; .ci/run installs them for this
# step only. Pages come from the execution cache, as in `make book`. `make test-pdf` checks the
# PDF's text (tests/pdf, outside `make test`: it fails, never skips, when the PDF is missing).
PDF := _build/latex/book.pdf
pdf: export AIINFRA_MACHINE_RECORD := $(CURDIR)/$(CACHE)/machine-record.json
pdf: $(STAMP) vendor library-stamp
	$(PY) -m aiinfra_build.preexecute -j $(JOBS) $(PREEXECUTE_FLAGS)
	rm -f $(PDF)
	AIINFRA_BOOK_BUILD=1 $(JB) build . --builder pdflatex -W -n --keep-going
	test -s $(PDF)

# Every chapter notebook and handout run top to bottom in a Colab-pinned environment (Python 3.12,
# ipywidgets 7.7.1, ...) and on the project's pins (tests/test_every_notebook_runs.py; its venv is
# cached under _build/). Outside `make test` for now: about 10 minutes of CPU per environment.
test-colab: book
	$(PY) -m pytest -p no:cacheprovider -o addopts="-ra --strict-markers" tests/test_every_notebook_runs.py

test-pdf: pdf
	AIINFRA_PDF=$(PDF) $(PY) -m pytest -q -p no:cacheprovider tests/pdf

clean:
	rm -rf _build
