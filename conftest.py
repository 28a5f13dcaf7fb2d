"""Test-wide setup, loaded before any test or notebook runs.

Jupyter, IPython and matplotlib keep state in folders under $HOME; tests point
them at a fresh temporary folder so that runs are hermetic and leave nothing
behind. Kernels started by nbval and papermill inherit these variables.
"""

import atexit
import os
import shutil
import tempfile

_STATE = tempfile.mkdtemp(prefix="labkit-test-state-")
atexit.register(shutil.rmtree, _STATE, ignore_errors=True)
for _var, _sub in (("JUPYTER_CONFIG_DIR", "jupyter-config"), ("JUPYTER_RUNTIME_DIR", "jupyter-runtime"),
                   ("JUPYTERLAB_WORKSPACES_DIR", "lab-workspaces"), ("IPYTHONDIR", "ipython"),
                   ("MPLCONFIGDIR", "matplotlib"), ("LABKIT_HOME", "labkit-home")):
    os.environ[_var] = os.path.join(_STATE, _sub)
    os.makedirs(os.environ[_var], exist_ok=True)
os.environ["MPLBACKEND"] = "Agg"
os.environ.setdefault("PYDEVD_DISABLE_FILE_VALIDATION", "1")
# No OMP_NUM_THREADS or ATEN_CPU_CAPABILITY is set here: the first pass of `make test` runs
# on the machine's own CPU path with its default threads, as a learner's kernel does. The
# second pass sets ATEN_CPU_CAPABILITY=default OMP_NUM_THREADS=1 (portable kernels, one
# thread) for the notebooks and the tests marked `chaotic`; kernels started by nbval and
# papermill inherit whichever is set. Checked outputs must agree on both (README, "Tests
# and speed").


def pytest_report_header(config):
    capability = os.environ.get("ATEN_CPU_CAPABILITY", "the machine's best")
    threads = os.environ.get("OMP_NUM_THREADS", f"torch's default ({os.cpu_count()} cores)")
    return f"labkit CPU path: ATEN_CPU_CAPABILITY={capability}, OMP_NUM_THREADS={threads}"


def pytest_collection_modifyitems(config, items):
    """Mark nbval's notebook cells `nbval`, so `-m "nbval or chaotic"` selects them."""
    import pytest
    for item in items:
        if item.path.suffix == ".ipynb":
            item.add_marker(pytest.mark.nbval)
