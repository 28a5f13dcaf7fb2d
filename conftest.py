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
# The models are tiny: one intra-op thread is faster than two fighting over a 2-core box,
# and kernels started by nbval/papermill inherit it.
os.environ.setdefault("OMP_NUM_THREADS", "1")
os.environ.setdefault("PYDEVD_DISABLE_FILE_VALIDATION", "1")
