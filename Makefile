# Two commands set everything up: `make book` and `make test`.
SHELL := /bin/bash
PYTHON ?= python3
VENV ?= .venv
PY := $(VENV)/bin/python
STAMP := $(VENV)/.installed
JB := $(VENV)/bin/jupyter-book
JOBS ?= $(shell nproc 2>/dev/null || echo 2)

.PHONY: book test venv vendor notebooks clean bench nbval pdf test-pdf

venv: $(STAMP)

$(STAMP): requirements.txt pyproject.toml
	@test -x $(PY) || $(PYTHON) -m venv $(VENV)
	$(PY) -m pip install -q --upgrade pip
	$(PY) -m pip install -q -r requirements.txt
	$(PY) -m pip uninstall -q -y jupyterlab-myst 2>/dev/null || true  # dropped: incompatible with JupyterLab 4.6
	$(PY) -m pip install -q --no-deps -e .
	@touch $(STAMP)

vendor: $(STAMP)
	$(PY) tools/vendor_js.py

# The book build writes one notebook per page to _build/notebooks/; this commits them to notebooks/.
notebooks: book
	$(PY) tools/notebooks.py --write

# The execution cache keys pages by their code only, so a change to the library (or its
# shipped configs) clears it: every page then re-executes against the new code. Sphinx's
# saved environment goes too, or pages whose source did not change would keep the HTML (and
# the generated notebook) rendered from the old outputs.
LIBRARY_STAMP := _build/.library-stamp
$(LIBRARY_STAMP): $(shell find src -name '*.py' -o -name '*.json') requirements.txt
	rm -rf _build/.jupyter_cache _build/.doctrees
	@mkdir -p _build && touch $@

# Pages run in parallel into the execution cache first; the build then finds them all cached.
book: $(STAMP) vendor $(LIBRARY_STAMP)
	$(PY) tools/preexecute.py -j $(JOBS)
	AIINFRA_BOOK_BUILD=1 $(JB) build . --builder html -W -n --keep-going

# Library, grader and hostile submissions, stale notebooks, nbval over the student handouts
# (exercises/), launch links, browser tests (the book in chromium, a chapter notebook in JupyterLab).
# notebooks/ is not executed again: `make book` has just run the same cells, and the stale check
# holds notebooks/ to that build's outputs (`make nbval` re-executes them).
# Property tests run derandomized (hypothesis profile "ci"); HYPOTHESIS_PROFILE=dev explores.
HYPOTHESIS_PROFILE ?= ci
test: book
	HYPOTHESIS_PROFILE=$(HYPOTHESIS_PROFILE) $(PY) -m pytest -n $(JOBS) --dist loadfile

# Re-execute notebooks/ (the Colab copies of the pages) in fresh kernels, outside the book build,
# and compare the glue cells' outputs (tag nbval-check-output) with the saved ones.
nbval: $(STAMP)
	$(PY) -m pytest -n $(JOBS) --dist loadfile -p no:cacheprovider notebooks

# Every benchmark, with the machine's load, then the rows of issue 17's table (BENCH=--quick:
# without the build benchmark, which copies the checkout and runs make book and make test).
bench: $(STAMP)
	$(PY) benchmarks/run_all.py $(BENCH)

# The whole book as one PDF, $(PDF): Jupyter Book's LaTeX builder, then latexmk with XeLaTeX.
# Debian packages: texlive-xetex latexmk texlive-fonts-recommended texlive-latex-extra
# fonts-freefont-otf librsvg2-bin, and poppler-utils for the test; .ci/run installs them for this
# step only. Pages come from the execution cache, as in `make book`. `make test-pdf` checks the
# PDF's text (tests/pdf, outside `make test`: it fails, never skips, when the PDF is missing).
PDF := _build/latex/book.pdf
pdf: $(STAMP) $(LIBRARY_STAMP)
	$(PY) tools/preexecute.py -j $(JOBS)
	rm -f $(PDF)
	AIINFRA_BOOK_BUILD=1 $(JB) build . --builder pdflatex -W -n --keep-going
	test -s $(PDF)

test-pdf: pdf
	AIINFRA_PDF=$(PDF) $(PY) -m pytest -q -p no:cacheprovider tests/pdf

clean:
	rm -rf _build
