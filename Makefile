# Every target sets up what it needs: a virtual environment in .venv with the project installed.
PYTHON ?= python3
VENV := .venv
PY := $(VENV)/bin/python
STAMP := $(VENV)/.installed

.PHONY: test demo lint docs bench soak clean

$(STAMP): pyproject.toml
	$(PYTHON) -m venv $(VENV)
	$(PY) -m pip install -q --upgrade pip
	$(PY) -m pip install -q -e '.[dev]'
	touch $(STAMP)

## make test: the test suite (unit tests, sandbox integration tests, Redis tests), run once on
## asyncio's own event loop and once on uvloop
test: $(STAMP)
	$(PY) -m pytest -q
	TXC_TEST_LOOP=uvloop $(PY) -m pytest -q

## make demo: backfill a year of mining rewards from the embedded sandbox and print a summary
demo: $(STAMP)
	@echo "make demo: starts the embedded sandbox on 127.0.0.1 and backfills a year of rewards of all its accounts"
	$(VENV)/bin/txc-async demo

## make lint: mypy --strict and ruff
lint: $(STAMP)
	$(VENV)/bin/mypy --strict txc_async
	$(VENV)/bin/ruff check .

## make docs: the API reference, HTML built from the docstrings into docs/_build (offline)
docs: $(STAMP)
	rm -rf docs/_build
	$(VENV)/bin/pdoc txc_async txc_async.sandbox txc_async.pytest_plugin txc_async.cli \
		-o docs/_build --docformat restructuredtext

## make bench: every benchmark, printing figures and ratios against baselines of the same run
bench: $(STAMP)
	$(PY) -m pip install -q -e '.[dev,bench]'
	$(PY) benchmarks/run_all.py

clean:
	rm -rf $(VENV) build *.egg-info .mypy_cache .ruff_cache .pytest_cache docs/_build
