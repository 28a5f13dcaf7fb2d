# labkit: `make lab` (study in JupyterLab) and `make test` (what CI runs).
# Both create .venv on first use: pip, constraints.txt pins (torch==2.13.0, CPU).

# The Python that makes .venv: unset, tools/venv.sh takes the first of python3, python3.12,
# python3.11, ... that is 3.11 or newer (make lab PYTHON=python3.12 to choose).
PYTHON ?=
VENV   := .venv
BIN    := $(VENV)/bin
# What `make lab` needs (torch, JupyterLab, labkit), then the test tools on top for `make test`.
LAB_STAMP := $(VENV)/.labkit-lab
STAMP  := $(VENV)/.labkit-installed
PORT   ?= 8888
# Extra pip options, e.g. PIP_EXTRA='--extra-index-url https://download.pytorch.org/whl/cpu'
# on a machine where PyPI's default torch wheel would be the multi-GB CUDA build.
PIP_EXTRA ?=
# pip's byte-compile is left out of the install (it compiles all 1.4 GB, most of which no
# process ever imports); tools/warm_bytecode.py then compiles what the lab and the tests import,
# once, instead of in every test worker and kernel that starts at the same moment.
# Where PYTHONDONTWRITEBYTECODE is set (as on some CI images and containers) it would not, and
# every kernel would compile torch again: so no recipe here (lab, tests, bench) sees it.
unexport PYTHONDONTWRITEBYTECODE
# A .venv whose Python no longer runs (the interpreter it links to was removed or upgraded away)
# loses its stamps here, so the recipes below make it again (tools/venv.sh) and reinstall.
ifneq ($(wildcard $(VENV)),)
ifneq ($(shell $(BIN)/python -c "print(1)" 2>/dev/null),1)
$(shell rm -f $(LAB_STAMP) $(STAMP))
endif
endif

.PHONY: lab test check lint docs portability exercises references bench env clean-env help

help:
	@echo "make lab        create .venv if needed and open JupyterLab on notebooks/00_start_here.ipynb"
	@echo "                (SOLUTIONS=1 also lists solutions/; PORT=8899 for another port)"
	@echo "make test       create .venv if needed and run every test (unit, notebooks, browser),"
	@echo "                then the notebooks and chaotic tests again on the portable CPU path;"
	@echo "                in parallel (pytest-xdist, one worker per core and one more). CI runs this."
	@echo "make lint       ruff check and ruff format --check (run first by make check and make test)"
	@echo "make check      the quick tier for the loop of a change (no notebooks, no browser, <= 90 s);"
	@echo "                not a replacement for make test"
	@echo "make portability  the numeric tests and the triage's verdicts under four CPU paths"
	@echo "                (tools/cpu_paths.py), with the margins of its thresholds; not part of make test"
	@echo "make exercises  regenerate exercises/ from solutions/"
	@echo "make references re-execute the study notebooks into tests/reference/, clear notebooks/"
	@echo "make docs       build the documentation site into site/ (MkDocs, strict: a warning fails)"
	@echo "make bench      speed against plain PyTorch (loop, labkit.watch), triage, the learner store, drill probes, own-code triage"

env: $(STAMP)

# Two steps, so that `make lab` waits only for what the lab needs; `make test` adds the test
# tools. pip writes about 1.4 GB here, so its time follows the disk: from a fresh clone with a
# warm pip cache on an idle 2-core machine, the lab's install took 28-41 s without
# byte-compiling and 35-78 s with it, which is why pip does not byte-compile (see above).
$(LAB_STAMP): pyproject.toml constraints.txt
	@echo "labkit: setting up $(VENV) for the lab (first time only, and after pyproject.toml or constraints.txt change)."
	@echo "labkit: installing torch 2.13.0 (CPU), JupyterLab and labkit itself: 1.4 GB, about 30-45 s"
	@echo "labkit: (measured from a fresh clone, warm pip cache, idle 2-core machine)."
	@sh tools/venv.sh $(VENV) "$(PYTHON)"
	@$(BIN)/python -c "import pip, sys; sys.exit(int(pip.__version__.split('.')[0]) < 23)" 2>/dev/null \
	  || $(BIN)/python -m pip install --upgrade pip --progress-bar on
	@echo "labkit: pip now resolves, fetches (from its cache when warm) and installs about 110"
	@echo "labkit: packages; its bars show the downloads, then one bar counts the installs."
	$(BIN)/python -m pip install --no-compile --progress-bar on $(PIP_EXTRA) -c constraints.txt -e '.[lab]'
	@echo "labkit: compiling what the lab imports (torch, JupyterLab, a kernel, labkit), once: about 8 s."
	@$(BIN)/python tools/warm_bytecode.py lab
	@# widget state saved with each notebook, whichever way Jupyter is started from this venv
	@$(BIN)/python -c "import sys; sys.path.insert(0, 'tools'); import lab; lab.quiet_news()"
	@touch $(LAB_STAMP)
	@echo "labkit: $(VENV) is ready for the lab."

# The test tools are pyproject's `test` extra, installed on top of the lab's environment by name
# (labkit itself is already there: pip neither rebuilds nor reinstalls it), without pip's
# byte-compile: see `test` below.
$(STAMP): $(LAB_STAMP)
	@echo "labkit: adding the test tools to $(VENV) (pytest, nbval, papermill, playwright, transformers,"
	@echo "labkit: tensorboard; about 40 packages, 15 s with a warm pip cache)."
	@$(BIN)/python -c "import tomllib; print('\\n'.join(tomllib.load(open('pyproject.toml', 'rb'))['project']['optional-dependencies']['test']))" > $(VENV)/test-requirements.txt
	$(BIN)/python -m pip install --no-compile --progress-bar on $(PIP_EXTRA) -c constraints.txt -r $(VENV)/test-requirements.txt
	@$(BIN)/python tools/warm_bytecode.py test
	@touch $(STAMP)
	@echo "labkit: $(VENV) is ready for the tests."

# The learner's view: notebooks/, exercises/, examples/ and the README are listed;
# SOLUTIONS=1 lists solutions/ too. Terminals in the lab find `labkit` (.venv/bin first on PATH).
SOLUTIONS ?=

lab: $(LAB_STAMP)
	PORT=$(PORT) SOLUTIONS=$(SOLUTIONS) $(BIN)/python tools/lab.py notebooks/00_start_here.ipynb

# Two passes, each in parallel on every core (pytest-xdist; conftest.py gives each worker
# cores / workers torch threads, its own $LABKIT_HOME and its own Jupyter folders, and keeps
# each notebook's cells, and the browser tests, on one worker):
# 1. everything, on this machine's own CPU path;
# 2. the notebooks and the `chaotic` tests again on the portable path, the same bits on every
#    x86 CPU: ATen's portable kernels, MKL's COMPATIBLE mode, oneDNN capped at SSE4.1, one
#    thread (tools/cpu_paths.py). Checked outputs must agree on both.
PORTABLE := $(shell $(or $(PYTHON),python3) tools/cpu_paths.py portable)
# Pass 2 collects only where its tests are (the notebooks, and the test files that mark a test
# chaotic, found by name): each worker then imports 7 test files, not 90 (373 items either way).
PORTABLE_PATHS = tests/reference solutions $(shell grep -rl --include='test_*.py' chaotic tests)
# One worker more than the cores (a worker that waits, for a kernel, a browser page or a
# grading time-out, leaves its core to the others), and no more than about 1.5 GB of the
# available memory each: see tools/workers.py. Each runs torch on cores / workers threads.
# Pass 2 waits on no browser or time-out: one worker per core (tools/workers.py --no-spare).
WORKERS   = $(shell $(or $(PYTHON),python3) tools/workers.py)
WORKERS2  = $(shell $(or $(PYTHON),python3) tools/workers.py --no-spare)
XDIST    ?= -n $(WORKERS)
XDIST2   ?= $(if $(filter file,$(origin XDIST)),-n $(WORKERS2),$(XDIST))

# ruff, pinned in constraints.txt and configured in pyproject.toml: the linter, then the
# formatter's check. Both run first in `make check` and `make test` (about 1 s).
lint: $(STAMP)
	@$(BIN)/ruff check --quiet . && $(BIN)/ruff format --check --quiet . \
	  && echo "labkit: ruff check and ruff format --check: clean" \
	  || { echo "labkit: ruff found the above; \`.venv/bin/ruff check --fix . && .venv/bin/ruff format .\` fixes most"; exit 1; }

test: $(STAMP) lint
	@t0=$$(date +%s); $(BIN)/python -m pytest $(XDIST) --durations=15; rc=$$?; \
	  echo "labkit: pass 1 (everything, this machine's CPU path) took $$(( $$(date +%s) - t0 )) s"; exit $$rc
	@t0=$$(date +%s); $(PORTABLE) $(BIN)/python -m pytest $(XDIST2) -m "nbval or chaotic" $(PORTABLE_PATHS); rc=$$?; \
	  echo "labkit: pass 2 (notebooks and chaotic tests, portable path: $(PORTABLE)) took $$(( $$(date +%s) - t0 )) s"; exit $$rc

# The quick tier: unit tests without notebooks, browsers or the slow batches (<= 90 s).
check: $(STAMP) lint
	@t0=$$(date +%s); $(BIN)/python -m pytest $(XDIST) -q -m "not slow and not browser and not nbval" tests; \
	  rc=$$?; echo "labkit: make check took $$(( $$(date +%s) - t0 )) s"; exit $$rc

# Not part of make test (about N minutes on 2 cores): the numeric tests, the notebooks and the
# own-code setups under four CPU paths (tools/cpu_paths.py), one after another, then the table
# and the margins. PATHS=native,avx2 runs fewer.
portability: $(STAMP)
	$(BIN)/python tools/portability.py $(if $(PATHS),--paths $(PATHS))

exercises: $(STAMP)
	$(BIN)/python tools/make_exercises.py

references: $(STAMP)
	$(BIN)/python tools/references.py

bench: $(STAMP)
	$(BIN)/python benchmarks/bench_loop.py
	$(BIN)/python benchmarks/bench_triage.py
	$(BIN)/python benchmarks/bench_store.py
	$(BIN)/python benchmarks/bench_watch.py
	$(BIN)/python benchmarks/bench_drill.py
	$(BIN)/python benchmarks/bench_own_triage.py
	OMP_NUM_THREADS=1 $(BIN)/python benchmarks/bench_own_shapes.py
	$(BIN)/python benchmarks/bench_watch_ddp.py
	$(BIN)/python benchmarks/bench_drill_ranks.py

# The documentation site (docs/, mkdocs.yml) into site/; open site/index.html. Strict: a warning
# or a broken link fails, as in make test (tests/test_docs_site.py). The API pages are made from
# labkit._PUBLIC at build time (docs/hooks.py), without importing labkit or torch.
docs: $(STAMP)
	NO_MKDOCS_2_WARNING=1 $(BIN)/python -m mkdocs build --strict --site-dir site

clean-env:
	rm -rf $(VENV)
