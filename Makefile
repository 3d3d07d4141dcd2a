# wh — developer entry points. The first two targets do all set-up on a fresh machine.
PYTHON ?= python3
VENV := .venv
PY := $(VENV)/bin/python
STAMP := $(VENV)/.installed

.PHONY: demo test lint typecheck unit bench clean

demo: $(STAMP)
	$(PY) demo/run.py

test: $(STAMP) lint typecheck unit

lint: $(STAMP)
	$(VENV)/bin/ruff check installer tests demo tools
	$(VENV)/bin/ruff format --check installer tests demo tools
	$(VENV)/bin/lint-imports --no-cache

typecheck: $(STAMP)
	$(VENV)/bin/mypy

unit: $(STAMP)
	$(PY) -m pytest -q $(PYTEST_ARGS)

bench: $(STAMP)
	$(PY) -m tests.bench $(BENCH_ARGS)

$(STAMP): pyproject.toml
	$(PYTHON) -m venv $(VENV)
	$(PY) -m pip install -q --upgrade pip
	$(PY) -m pip install -q -e '.[dev]'
	touch $(STAMP)

clean:
	rm -rf $(VENV) demo-out .mypy_cache .ruff_cache .pytest_cache
