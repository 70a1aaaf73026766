# The two commands of the README. Each creates .venv (and installs the project) when missing.
PYTHON ?= python3
VENV   := .venv
BIN    := $(VENV)/bin
STAMP  := $(VENV)/.installed
TESTS  := $(VENV)/.installed-test

.PHONY: demo test bench docs-output

$(STAMP): pyproject.toml
	test -x $(BIN)/python || $(PYTHON) -m venv $(VENV)
	$(BIN)/python -m pip install --quiet --upgrade pip
	$(BIN)/python -m pip install --quiet -e .
	$(BIN)/python -m collective.warm_up  # compile the demo's and the README's kernels once, here
	touch $(STAMP)

$(TESTS): $(STAMP)  # what only the tests need (pytest, the adapters' libraries, Stable-Baselines3 and torch)
	$(BIN)/python -m pip install --quiet -e '.[test]'
	touch $(TESTS)

QUICKSTART := runs/quickstart

demo: $(STAMP)
	$(BIN)/collective sweep experiments/quickstart.toml --out $(QUICKSTART) --executor ray  # the real thing: embedded Ray
	$(BIN)/collective figures $(QUICKSTART) --out $(QUICKSTART)/figures & \
	$(BIN)/collective dashboard $(QUICKSTART) --out $(QUICKSTART)/report.html; \
	report=$$?; wait $$! && exit $$report  # figures and dashboard at once, each on a core; fails if either does

test: $(TESTS)
	@command -v chromium >/dev/null || (apt-get update -qq && apt-get install -y -qq chromium >/dev/null)
	$(BIN)/python -m pytest -q

bench: $(STAMP)
	$(BIN)/python benchmarks/throughput.py

docs-output: $(TESTS)  # rewrite the output blocks of README.md and docs/ from what their commands print now
	$(BIN)/python tests/doc_blocks.py --update
