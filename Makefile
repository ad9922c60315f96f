# Two commands: `make report` and `make test` (`make test-fast` leaves out the slow tests). Both create .venv on first use.
PYTHON ?= python3
VENV   := .venv
BIN    := $(VENV)/bin
STAMP  := $(VENV)/.installed-$(shell cat pyproject.toml | cksum | cut -d' ' -f1)

.PHONY: report test test-fast lint format bench check-wheel clean

$(BIN)/python:
	$(PYTHON) -c 'import sys; assert sys.version_info >= (3, 11), "Python 3.11+ needed, found " + sys.version'
	$(PYTHON) -m venv $(VENV)
	$(BIN)/python -m pip install --quiet --upgrade pip

$(STAMP): $(BIN)/python pyproject.toml
	$(BIN)/python -m pip install --quiet -e '.[dev]'
	rm -f $(VENV)/.installed-*
	touch $(STAMP)

report: $(STAMP)  ## run pipelines/demo.toml: simulated cluster + pods -> reports/demo/report.{html,pdf}
	$(BIN)/reliability run pipelines/demo.toml

# one worker per core; a test module stays on one worker (its module fixtures run once)
TEST_JOBS ?= auto
test: $(STAMP)  ## run the test suite (TEST_JOBS=1 for one process)
	$(BIN)/python -m pytest -n $(TEST_JOBS) --dist loadfile

test-fast: $(STAMP)  ## the suite without the tests marked slow (each over ~8 s)
	$(BIN)/python -m pytest -n $(TEST_JOBS) --dist loadfile -m "not slow"

lint: $(STAMP)
	$(BIN)/ruff check .
	$(BIN)/ruff format --check .

format: $(STAMP)
	$(BIN)/ruff format .
	$(BIN)/ruff check --fix .

check-wheel: $(STAMP)  ## build wheel + sdist, install the wheel without extras in a fresh venv, run it
	.ci/check-wheel

bench: $(STAMP)  ## ingestion benchmark (override ROWS=4000000 for the issue's target)
	$(BIN)/python benchmarks/bench_ingest.py --rows $(or $(ROWS),500000)

clean:
	rm -rf $(VENV) .pytest_cache .ruff_cache reports/demo benchmarks/_work
