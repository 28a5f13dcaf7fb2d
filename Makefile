# labkit: `make lab` (study in JupyterLab) and `make test` (what CI runs).
# Both create .venv on first use: pip, constraints.txt pins (torch==2.13.0, CPU).

PYTHON ?= python3
VENV   := .venv
BIN    := $(VENV)/bin
STAMP  := $(VENV)/.labkit-installed
PORT   ?= 8888
# Extra pip options, e.g. PIP_EXTRA='--extra-index-url https://download.pytorch.org/whl/cpu'
# on a machine where PyPI's default torch wheel would be the multi-GB CUDA build.
PIP_EXTRA ?=

.PHONY: lab test exercises bench env clean-env help

help:
	@echo "make lab        create .venv if needed and open JupyterLab on notebooks/00_start_here.ipynb"
	@echo "make test       create .venv if needed and run every test (unit, notebooks, browser)"
	@echo "make exercises  regenerate exercises/ from solutions/"
	@echo "make bench      speed of the instrumented loop and of labkit.watch vs plain PyTorch"

env: $(STAMP)

$(STAMP): pyproject.toml constraints.txt
	@test -x $(BIN)/python || $(PYTHON) -m venv $(VENV)
	$(BIN)/python -m pip install --quiet --upgrade pip
	$(BIN)/python -m pip install --quiet $(PIP_EXTRA) -c constraints.txt -e '.[lab,test]'
	@touch $(STAMP)

lab: $(STAMP)
	PORT=$(PORT) $(BIN)/python tools/lab.py notebooks/00_start_here.ipynb

test: $(STAMP)
	$(BIN)/python -m pytest

exercises: $(STAMP)
	$(BIN)/python tools/make_exercises.py

bench: $(STAMP)
	$(BIN)/python benchmarks/bench_loop.py
	$(BIN)/python benchmarks/bench_triage.py
	$(BIN)/python benchmarks/bench_watch.py

clean-env:
	rm -rf $(VENV)
