# Every target sets up what it needs in a virtual environment in .venv: `make demo` the project
# alone (what the command line needs), the other targets the project with its development tools.
PYTHON ?= python3
VENV := .venv
PY := $(VENV)/bin/python
# Each stamp says what .venv holds; the development one implies the other, so `make test` after
# `make demo` adds the tools to the same environment and `make demo` after `make test` installs
# nothing.
INSTALLED := $(VENV)/.installed-project
DEV_INSTALLED := $(VENV)/.installed-dev

.PHONY: test demo lint docs bench soak clean generate

$(INSTALLED): pyproject.toml
	$(PYTHON) -m venv $(VENV)
	$(PY) -m pip install -q --upgrade pip
	$(PY) -m pip install -q -e .
	touch $(INSTALLED)

$(DEV_INSTALLED): $(INSTALLED)
	$(PY) -m pip install -q -e '.[dev]'
	touch $(DEV_INSTALLED)

## make test: the test suite (unit tests, sandbox integration tests, Redis tests), run once on
## asyncio's own event loop and once on uvloop
test: $(DEV_INSTALLED)
	$(PY) -m pytest -q
	TXC_TEST_LOOP=uvloop $(PY) -m pytest -q

## make demo: backfill a year of mining rewards from the embedded sandbox and print a summary
demo: $(INSTALLED)
	@echo "make demo: starts the embedded sandbox on 127.0.0.1 and backfills a year of rewards of all its accounts"
	$(VENV)/bin/txc-async demo

## make lint: mypy --strict and ruff
lint: $(DEV_INSTALLED)
	$(VENV)/bin/mypy --strict txc_async
	$(VENV)/bin/ruff check .

## make docs: the documentation site (guides, explanations and the API reference built from the
## docstrings) into site/, offline; a broken link or reference fails the build. The performance
## page's charts are drawn first from the benchmarks' figures in benchmarks/results/.
## NO_MKDOCS_2_WARNING: mkdocs-material's notice of its end of life (May 2027), printed on every
## build, is not a warning about this site.
docs: $(DEV_INSTALLED)
	$(PY) benchmarks/chart.py
	NO_MKDOCS_2_WARNING=1 $(VENV)/bin/mkdocs build --strict

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
