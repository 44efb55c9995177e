# The one entry point for checks. `make test` works on a fresh machine: it creates the
# virtual environment, installs the project with its test dependencies and runs every check.
PYTHON ?= python3
VENV ?= .venv
BIN := $(VENV)/bin

.PHONY: test demo venv test-venv lint typecheck pytest schemas bench clean

test: test-venv lint typecheck pytest

# The README's first command: the demo (the web UI and the demo agent on SQLite in
# ./handrail-demo, the scripted model unless HANDRAIL_MODEL names another, users alice, bob and
# admin) on DEMO_PORT, opening the browser when there is a display.
DEMO_PORT ?= 8000
demo: venv
	$(BIN)/handrail demo --port $(DEMO_PORT)

$(BIN)/python:
	$(PYTHON) -m venv $(VENV)
	$(BIN)/python -m pip install --quiet --upgrade pip

# The demo needs only the package; the checks add the test extras (browsers' drivers, fuzzers).
venv: $(BIN)/python
	$(BIN)/python -m pip install --quiet -e .

test-venv: $(BIN)/python
	$(BIN)/python -m pip install --quiet -e '.[test]'

lint:
	$(BIN)/ruff check src tests bench examples
	$(BIN)/ruff format --check src tests bench examples

typecheck:
	$(BIN)/mypy

# pytest exits 5 when it collects no tests; that is a failure here too, never a silent pass.
pytest:
	scripts/ensure-postgres.sh
	scripts/ensure-chromium.sh
	scripts/ensure-npm-packages.sh
	$(BIN)/python -m pytest -W error

schemas: venv
	$(BIN)/handrail schemas

# Every benchmark with its defaults (bench/README.md says what each times and for how long).
# events.py, load.py and reliability.py start a throwaway PostgreSQL cluster as the tests do, so
# they need the test extra too; pg_store_cycle.py and instructions.py (callgrind) compare two
# trees (--before) and run by hand.
BENCHES := asks_validation turn_cycle list_paging mcp_call reliability events load sqlite_writes
bench: test-venv
	$(BIN)/python -m pip install --quiet -e '.[bench]'
	scripts/ensure-postgres.sh
	@for name in $(BENCHES); do echo "== bench/$$name.py"; $(BIN)/python bench/$$name.py || exit 1; done

clean:
	rm -rf $(VENV) .mypy_cache .pytest_cache .ruff_cache
