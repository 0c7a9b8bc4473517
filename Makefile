# One entry point for set-up, tests and the main job.  Idempotent: a second
# `make setup` with nothing changed takes about a second.
PY ?= python3
VENV := .venv
BIN := $(VENV)/bin
STAMP := $(VENV)/.installed
OUT ?= report

.PHONY: setup test report lint bench clean

# setup: what `fsc` and the main job need (runtime dependencies, graphviz, compiled kernels);
# `make test` adds the test tools, Dask and Storm.
setup: $(STAMP) dot $(VENV)/.kernels

$(BIN)/python:
	$(PY) -m venv $(VENV)

# torch first, pinned: this machine has the CPU build of 2.13.0 on disk, and
# an unpinned torch would download a CUDA build of several GB.
$(STAMP): pyproject.toml | $(BIN)/python
	$(BIN)/python -m pip install -q --upgrade pip
	$(BIN)/python -m pip install -q torch==2.13.0
	$(BIN)/python -m pip install -q -e .
	touch $(STAMP)

# The evaluator's compiled loops (fsc/engines/kernels.py, numba) are compiled
# once here into numba's on-disk cache, so that the first `fsc train` does not
# spend seconds compiling them: a short training (both step loops) and an
# evaluation with its gradient.  Compiled again when kernels.py changes.
$(VENV)/.kernels: $(STAMP) fsc/engines/kernels.py
	rm -rf $(VENV)/warm-up
	$(BIN)/fsc train --memory ram:2 --init uniform --max-steps 3 --rows-per-decade 5 --quiet --out $(VENV)/warm-up >/dev/null
	$(BIN)/fsc evaluate --memory memento:3 --policy random --grad >/dev/null
	rm -rf $(VENV)/warm-up
	touch $@

# graphviz drawing needs the `dot` program.
dot:
	@command -v dot >/dev/null 2>&1 || { \
	  if [ "$$(id -u)" = 0 ] && command -v apt-get >/dev/null 2>&1; then \
	    (apt-get update -qq && DEBIAN_FRONTEND=noninteractive apt-get install -y -qq graphviz >/dev/null) ; \
	  else \
	    echo "graphviz's dot program is missing: install Debian's graphviz package (apt-get install graphviz)"; exit 1; \
	  fi; }

# The tests: pytest and ruff, Dask (the cluster extra) and the Storm model
# checker, a second opinion on the evaluations (the storm extra).
$(VENV)/.test: $(STAMP)
	$(BIN)/python -m pip install -q -e '.[test,cluster,storm]'
	touch $(VENV)/.test

test: setup $(VENV)/.test
	$(BIN)/python -m pytest -q

report: setup
	$(BIN)/fsc report --out $(OUT)

lint: setup $(VENV)/.test
	$(BIN)/ruff check fsc tasks policies viz tests examples benchmarks

bench: setup $(VENV)/.test
	bash benchmarks/run_slow.sh $(POMDP_DIR)  # POMDP_DIR: a folder of classic .POMDP files (large-world benchmark)

clean:
	rm -rf $(VENV) $(OUT)
