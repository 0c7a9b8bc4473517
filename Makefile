# One entry point for set-up, tests and the main job.  Idempotent: a second
# `make setup` with nothing changed takes about a second.
PY ?= python3
VENV := .venv
BIN := $(VENV)/bin
STAMP := $(VENV)/.installed
OUT ?= report

.PHONY: setup test report lint bench clean

# setup: what `fsc` and the main job need (runtime dependencies, graphviz, compiled kernels);
# `make test` adds the test tools, Dask and Storm.  `make report` installs and
# runs the report without the warm-up of every command's kernels: the report
# compiles the few it uses as it runs (once: numba's cache keeps them).
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
# once here into numba's on-disk cache, for every shape of arguments the
# commands pass (fsc/cli/warm.py: train by each optimiser, to a step count and
# to a time as a sweep's points run, a sweep's pool worker, evaluate with and
# without --grad, solve's methods; on the dense and choices engines), so that
# no command compiles at first use; the two engines' kernels in two processes
# at once; and the modules' bytecode.  Compiled again when kernels.py changes.
$(VENV)/.kernels: $(STAMP) fsc/engines/kernels.py fsc/cli/warm.py
	$(BIN)/python -m fsc.cli.warm
	$(BIN)/python -m compileall -q fsc tasks policies viz
	touch $@

# graphviz drawing needs the `dot` program.
dot:
	@command -v dot >/dev/null 2>&1 || { \
	  if [ "$$(id -u)" = 0 ] && command -v apt-get >/dev/null 2>&1; then \
	    (apt-get update -qq && DEBIAN_FRONTEND=noninteractive apt-get install -y -qq graphviz >/dev/null) ; \
	  else \
	    echo "graphviz's dot program is missing: install Debian's graphviz package (apt-get install graphviz)"; exit 1; \
	  fi; }

# The tests: pytest, pytest-xdist and ruff, Dask (the cluster extra) and the
# Storm model checker, a second opinion on the evaluations (the storm extra).
# They run in one worker process per core, at most two (pytest-xdist; more
# workers would each import torch for little gain); tests/conftest.py gives
# each worker one torch thread.
$(VENV)/.test: $(STAMP)
	$(BIN)/python -m pip install -q -e '.[test,cluster,storm]'
	touch $(VENV)/.test

test: setup $(VENV)/.test
	$(BIN)/python -m pytest -q -n auto --maxprocesses 2

# The report needs the runtime dependencies, graphviz and the modules'
# bytecode, not the kernels of solve, sweep and the other optimisers: on a
# fresh clone it compiles the evaluator's and the flow's kernels it uses itself
# (about 100 CPU seconds: the first report takes about two minutes longer
# than the next), and `make setup` compiles the rest.
report: $(STAMP) dot
	@test -f $(VENV)/.kernels || echo "make report: the first report compiles the kernels it uses (numba; about two minutes); 'make setup' compiles those of every command"
	$(BIN)/python -m compileall -q fsc tasks policies viz
	$(BIN)/fsc report --out $(OUT)

lint: setup $(VENV)/.test
	$(BIN)/ruff check fsc tasks policies viz tests examples benchmarks

bench: setup $(VENV)/.test
	bash benchmarks/run_slow.sh $(POMDP_DIR)  # POMDP_DIR: a folder of classic .POMDP files (large-world benchmark)

clean:
	rm -rf $(VENV) $(OUT)
