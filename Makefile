# One entry point for set-up, tests and the main job.  Idempotent: a second
# `make setup` with nothing changed takes about a second.
PY ?= python3
VENV := .venv
BIN := $(VENV)/bin
STAMP := $(VENV)/.installed
OUT ?= report

.PHONY: setup test report lint bench clean

setup: $(STAMP) dot

$(BIN)/python:
	$(PY) -m venv $(VENV)

# torch first, pinned: this machine has the CPU build of 2.13.0 on disk, and
# an unpinned torch would download a CUDA build of several GB.
$(STAMP): pyproject.toml | $(BIN)/python
	$(BIN)/python -m pip install -q --upgrade pip
	$(BIN)/python -m pip install -q torch==2.13.0
	$(BIN)/python -m pip install -q -e '.[test,cluster]'
	touch $(STAMP)

# graphviz drawing needs the `dot` program.
dot:
	@command -v dot >/dev/null 2>&1 || { \
	  if [ "$$(id -u)" = 0 ] && command -v apt-get >/dev/null 2>&1; then \
	    (apt-get update -qq && DEBIAN_FRONTEND=noninteractive apt-get install -y -qq graphviz >/dev/null) ; \
	  else \
	    echo "graphviz's dot program is missing: install Debian's graphviz package (apt-get install graphviz)"; exit 1; \
	  fi; }

# The tests also compare with the Storm model checker (the storm extra).
$(VENV)/.storm: $(STAMP)
	$(BIN)/python -m pip install -q -e '.[test,cluster,storm]'
	touch $(VENV)/.storm

test: setup $(VENV)/.storm
	$(BIN)/python -m pytest -q

report: setup
	$(BIN)/fsc report --out $(OUT)

lint: setup
	$(BIN)/ruff check fsc tasks policies viz tests examples benchmarks

bench: setup
	bash benchmarks/run_slow.sh

clean:
	rm -rf $(VENV) $(OUT)
