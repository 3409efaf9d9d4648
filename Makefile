# Every target sets up what it needs in a virtual environment in .venv: `make demo` the project
# alone (what the command line needs), the other targets the project with its development tools.
PYTHON ?= python3
VENV := .venv
PY := $(VENV)/bin/python
# Each stamp says what .venv holds; the development one implies the others, so `make test` after
# `make demo` adds the tools to the same environment and `make demo` or `make docs` after
# `make test` installs nothing.
INSTALLED := $(VENV)/.installed-project
DOCS_INSTALLED := $(VENV)/.installed-docs
DEV_INSTALLED := $(VENV)/.installed-dev
# Where `make docs-serve` serves the site.
DOCS_ADDRESS ?= 127.0.0.1:8000

.PHONY: test test-under-load demo lint docs docs-serve charts bench soak clean generate

$(INSTALLED): pyproject.toml
	$(PYTHON) -m venv $(VENV)
	$(PY) -m pip install -q --upgrade pip
	$(PY) -m pip install -q -e .
	touch $(INSTALLED)

$(DOCS_INSTALLED): $(INSTALLED)
	$(PY) -m pip install -q -e '.[docs]'
	touch $(DOCS_INSTALLED)

$(DEV_INSTALLED): $(INSTALLED)
	$(PY) -m pip install -q -e '.[dev]'
	touch $(DEV_INSTALLED) $(DOCS_INSTALLED)

## make test: the test suite (unit tests, sandbox integration tests, Redis tests), run once on
## asyncio's own event loop, then the tests that run on the event loop (LOOP_TESTS: not the
## repository's checks, the documentation's examples and the documented answers, which start
## their own interpreters or run no loop) once more on uvloop. Both passes run whatever the
## first gives; the target fails when either failed, and says which.
LOOP_TESTS := tests/unit tests/integration
test: $(DEV_INSTALLED)
	@on_asyncio=0; on_uvloop=0; \
	echo "$(PY) -m pytest -q"; \
	$(PY) -m pytest -q || on_asyncio=$$?; \
	echo "TXC_TEST_LOOP=uvloop $(PY) -m pytest -q $(LOOP_TESTS)"; \
	TXC_TEST_LOOP=uvloop $(PY) -m pytest -q $(LOOP_TESTS) || on_uvloop=$$?; \
	if [ $$on_asyncio -ne 0 ] || [ $$on_uvloop -ne 0 ]; then \
		echo "make test: failed (pytest's exit status: $$on_asyncio on asyncio's loop," \
		     "$$on_uvloop on uvloop)" >&2; \
		exit 1; \
	fi

## make test-under-load: `make test` beside processes that keep a core busy each, two unless
## BUSY=n says otherwise, stopped however the run ends: no test may depend on how soon the
## scheduler runs it.
BUSY ?= 2
test-under-load: $(DEV_INSTALLED)
	.ci/under-load -n $(BUSY) $(MAKE) --no-print-directory test

## make demo: backfill a year of mining rewards from the embedded sandbox and print a summary
demo: $(INSTALLED)
	@echo "make demo: starts the embedded sandbox on 127.0.0.1 and backfills a year of rewards of all its accounts"
	$(VENV)/bin/txc-async demo

## make lint: mypy --strict and ruff
lint: $(DEV_INSTALLED)
	$(VENV)/bin/mypy --strict txc_async
	$(VENV)/bin/ruff check .

## make docs: the documentation site (guides, explanations and the API reference built from the
## docstrings) into site/, a static site that needs no network to be viewed (open it with
## `make docs-serve`, or `python3 -m http.server -d site` after the build); a broken link or
## reference fails the build. It installs the docs extra only (mkdocs-material, mkdocstrings),
## and puts the pinned Mermaid release the site serves into docs/assets/javascripts/, fetched once
## from the npm registry and checked against its SHA-256 (sitebuild/mermaid.py).
## NO_MKDOCS_2_WARNING: mkdocs-material's notice of its end of life (May 2027), printed on every
## build, is not a warning about this site.
docs: $(DOCS_INSTALLED)
	$(PY) sitebuild/mermaid.py
	NO_MKDOCS_2_WARNING=1 $(VENV)/bin/mkdocs build --strict

## make docs-serve: the site on http://127.0.0.1:8000/, rebuilt when a page changes
## (DOCS_ADDRESS=host:port to serve elsewhere)
docs-serve: $(DOCS_INSTALLED)
	$(PY) sitebuild/mermaid.py
	NO_MKDOCS_2_WARNING=1 $(VENV)/bin/mkdocs serve --dev-addr $(DOCS_ADDRESS)

## make charts: draw the performance page's charts and tables again from the recorded runs in
## benchmarks/results/ (matplotlib, from the dev extra); commit what changed with them
charts: $(DEV_INSTALLED)
	$(PY) benchmarks/chart.py

## make bench: every benchmark, printing figures and ratios against baselines of the same run
bench: $(DEV_INSTALLED)
	$(PY) -m pip install -q -e '.[dev,bench]'
	$(PY) benchmarks/run_all.py

clean:
	rm -rf $(VENV) build *.egg-info .mypy_cache .ruff_cache .pytest_cache site docs/_build

## make generate: rewrite the generated declarations and answer models from generator/facts.json,
## and the sandbox's own table of the operations (txc_async/sandbox/_documented.json)
generate:
	python3 generator/generate.py
	python3 generator/sandbox_table.py
