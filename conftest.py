"""Test-wide setup, loaded before any test or notebook runs, in every pytest-xdist worker.

Jupyter, IPython and matplotlib keep state in folders under $HOME; tests point them at a
fresh temporary folder so that runs are hermetic and leave nothing behind. Each xdist worker
is its own process and makes its own folder, so no two workers share a $LABKIT_HOME or a
Jupyter runtime folder. Kernels started by nbval, papermill and nbclient inherit all of it.
"""

import atexit
import importlib.util
import os
import shutil
import sys
import tempfile

_WORKER = os.environ.get("PYTEST_XDIST_WORKER", "main")
_STATE = tempfile.mkdtemp(prefix=f"labkit-test-{_WORKER}-")
atexit.register(shutil.rmtree, _STATE, ignore_errors=True)
for _var, _sub in (
    ("JUPYTER_CONFIG_DIR", "jupyter-config"),
    ("JUPYTER_RUNTIME_DIR", "jupyter-runtime"),
    ("JUPYTERLAB_WORKSPACES_DIR", "lab-workspaces"),
    ("IPYTHONDIR", "ipython"),
    ("MPLCONFIGDIR", "matplotlib"),
    ("LABKIT_HOME", "labkit-home"),
):
    os.environ[_var] = os.path.join(_STATE, _sub)
    os.makedirs(os.environ[_var], exist_ok=True)
os.environ["MPLBACKEND"] = "Agg"
os.environ.setdefault("PYDEVD_DISABLE_FILE_VALIDATION", "1")


def _load(folder: str, name: str):
    """FOLDER/NAME.py as the module NAME (tools/ and tests/ are not packages)."""
    spec = importlib.util.spec_from_file_location(
        name, os.path.join(os.path.dirname(os.path.abspath(__file__)), folder, f"{name}.py")
    )
    module = sys.modules[name] = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


# tests/ holds helpers.py and the test files' shared modules; its test files sit in folders
# that mirror labkit/ (tests/core/, tests/diagnosis/own/, ...), each of which pytest puts on
# sys.path for its own files, so tests/ itself is put there once, here.
sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "tests"))

_cores = _load("tools", "workers").cores  # what `make test` counts its workers from


# Threads. Under pytest-xdist each worker's torch gets cores / workers threads (at least 1),
# in this process and in every kernel it starts: two workers each spinning two OpenMP threads
# on two cores is far slower than serial (Exercise E's five runs: 11 s idle, 303 s
# oversubscribed). A thread count set by the caller wins: the second pass of `make test`
# runs on the portable path (tools/cpu_paths.py: ATen's, MKL's and oneDNN's portable kernels,
# one thread), the same bits on every x86 CPU. Without xdist, torch keeps its default.
_WORKERS = int(os.environ.get("PYTEST_XDIST_WORKER_COUNT", "0") or 0)
if _WORKERS and "OMP_NUM_THREADS" not in os.environ:
    _THREADS = str(max(1, _cores() // _WORKERS))
    for _var in ("OMP_NUM_THREADS", "MKL_NUM_THREADS", "OPENBLAS_NUM_THREADS"):
        os.environ.setdefault(_var, _THREADS)
if "OMP_NUM_THREADS" in os.environ:
    if "torch" in sys.modules:  # imported by a plugin before this file: set it directly too
        sys.modules["torch"].set_num_threads(int(os.environ["OMP_NUM_THREADS"]))

# Kernels that nbval, papermill and nbclient start in this process are forked from one that
# has already imported torch, with the environment above (tests/warm_kernels.py): about 3 s
# of CPU saved per kernel.
_warm = _load("tests", "warm_kernels")
_warm.install()


def pytest_report_header(config):
    capability = os.environ.get("ATEN_CPU_CAPABILITY", "the machine's best")
    threads = os.environ.get("OMP_NUM_THREADS", f"torch's default ({_cores()} cores)")
    return (
        f"labkit CPU path: ATEN_CPU_CAPABILITY={capability}, OMP_NUM_THREADS={threads} "
        "(under xdist: cores / workers per worker unless set)"
    )


# How pytest-xdist shares the work (`make test` runs one worker per core and one more). A unit of work goes to one
# worker, whole, in order:
# - every cell of one notebook: nbval runs them in order in one kernel;
# - the browser tests, all of them: each starts JupyterLab and Chromium, and two at once on
#   two cores turn their waits for the page into time-outs;
# - every other test file, whole, so that a module-scoped fixture (one `labkit grade` run,
#   one set of exercise runs) is built once, on one worker;
# - except the files below, whose tests are independent and long (two-seed triages, whole
#   notebook executions): each of their tests is a unit of its own, so that the workers
#   share them (test_own_eighth.py as one unit ran 71 s, last, on one worker while the others
#   had finished); in test_examples.py the tests of one example are one unit (the GPT-2 pair
#   then imports transformers once, 3 s);
# - a held-out setup's triage and the test that signs its fix (test_own_sign.py) are one unit,
#   so the fix signs a copy of that triage (`own_setups.report.record_of`) instead of a second;
# - test_bugs.py's signatures on one seed are one unit: each compares its bug's run with the
#   healthy run of its task on that seed, trained once per worker (the LM's: 2 s).
# Longest units go first (browser, notebooks, then these, round robin over their files: see
# `_order`), so that no worker is left alone with a long unit at the end.
SERIAL_FILES = {
    "test_browser.py": "browser",
    "test_exercises_browser.py": "browser",
    "test_drill_browser.py": "browser",
    "test_front_ends_browser.py": "browser",
    "test_lab.py": "browser",
    "test_docs_site.py": "browser",
}
SPLIT_FILES = {
    "test_diagnose.py",
    "test_own_held_out.py",
    "test_own_triage.py",
    "test_exercise_gate.py",
    "test_instructor.py",
    "test_lab15_checks.py",
    "test_naive_strategies.py",
    "test_examples.py",
    "test_drill.py",
    "test_bugs.py",
    "test_own_eighth.py",
}
SETUP_FILES = {
    "test_own_triage.py",
    "test_own_held_out.py",
    "test_own_tenth.py",
    "test_own_eleventh.py",
    "test_own_twelfth.py",
}  # one unit a setup
# Whole files that are long units (9-30 s each in a pass-1 timeline), several of them mostly
# waiting (a grading time-out, a sleeping loop, a killed kernel): they go out with the split
# files' units, not last, where one of them kept a single worker busy for the run's last 10 s.
LONG_FILES = {
    "test_grade_limits.py",
    "test_own_blind_spots.py",
    "test_own_ninth.py",
    "test_own_ddp.py",  # two launches of two ranks
    "test_lesson_ranks.py",
    "test_drill_ranks.py",  # one launch of two ranks
    "test_check_ex_e.py",
    "test_grade_formats.py",
    "test_curves.py",
    "test_own_speed.py",
    "test_warm_kernels.py",
    "test_own_shapes.py",
}


def work_unit(nodeid: str) -> str:
    """The unit of work (see above) that the test `nodeid` belongs to."""
    path = nodeid.split("::", 1)[0]
    name = path.rsplit("/", 1)[-1]
    if name in SERIAL_FILES:
        return SERIAL_FILES[name]
    if name == "test_examples.py" and "[" in nodeid:
        return path + "[" + nodeid.split("[", 1)[1]
    if name == "test_bugs.py" and "::test_bug_reproduces_its_signature[" in nodeid:
        return f"{path}::signatures on seed {nodeid[:-1].rsplit('-', 1)[1]}"  # one healthy run per task
    if "[" in nodeid and (
        name in SETUP_FILES or nodeid.startswith(f"{path}::test_each_fix_signs[")
    ):
        return "own-setup[" + nodeid.split("[", 1)[1]
    if name in SPLIT_FILES:
        return nodeid
    return path


def _rank(item) -> int:
    name = item.path.name
    return (
        0
        if name in SERIAL_FILES
        else 1
        if item.path.suffix == ".ipynb"
        else 2
        if name in SPLIT_FILES or name in LONG_FILES
        else 3
    )


def pytest_xdist_make_scheduler(config, log):
    """Schedule by `work_unit`, in collection order (see `pytest_collection_modifyitems`),
    whatever `--dist` says, except `--dist each` (every test on every worker)."""
    from xdist.scheduler import LoadScopeScheduling

    if config.getvalue("dist") == "each":
        return None

    class WorkUnits(LoadScopeScheduling):
        def _split_scope(self, nodeid):
            return work_unit(nodeid)

    config.option.loadscopereorder = False
    return WorkUnits(config, log)


import pytest  # noqa: E402


@pytest.hookimpl(tryfirst=True)
def pytest_collection_modifyitems(config, items):
    """Mark nbval's notebook cells `nbval`, so `-m "nbval or chaotic"` selects them, and put
    the longest units of work first (a stable sort: the order inside a unit is kept)."""
    for item in items:
        if item.path.suffix == ".ipynb":
            item.add_marker(pytest.mark.nbval)
    if _WORKERS:  # an xdist worker: the controller schedules units in this order
        items.sort(key=_order(items))


def _order(items):
    """The sort key of `pytest_collection_modifyitems`: by `_rank`, and among the units of
    rank 2 (the split files' and the long whole files'), round robin over the files (the first
    unit of each file, then the second of each, ...). In file order, the files whose tests
    wait on kernels (the exercise gate's two-second look for a view, the instructor's
    workflow, Lab 15's mysteries) ran on all three workers at once, and the two cores idled a
    third of the time for some 15 s."""
    ordinal: dict = {}
    seen: dict = {}
    for item in items:
        if _rank(item) == 2 and item.nodeid not in ordinal:
            units = seen.setdefault(item.path.name, {})
            ordinal[item.nodeid] = units.setdefault(work_unit(item.nodeid), len(units))
    return lambda item: (_rank(item), ordinal.get(item.nodeid, 0))
