"""`labkit grade` against endless cells, dying kernels, crashes before a check, folders,
damaged notebooks and Ctrl-C. One grading of a folder serves the row checks."""

import json
import os
import signal
import subprocess
import sys
import time
from pathlib import Path

import nbformat
import pytest
import warm_kernels

from helpers import one_sentence

pytestmark = pytest.mark.slow  # each test starts Jupyter kernels or the CLI in a subprocess
ROOT = Path(__file__).resolve().parents[3]
IMPORT = "from labkit import check"


def mechanism() -> str:
    """Exercise A's solved mechanism text: a check call that passes."""
    nb = nbformat.read(ROOT / "solutions" / "ex_a_break_the_graph.ipynb", as_version=4)
    source = next(c.source for c in nb.cells if "mechanism = (" in c.source)
    return source[source.index("mechanism = (") :].split("\n)")[0] + "\n)"


def notebook(path: Path, *cells: str) -> Path:
    nb = nbformat.v4.new_notebook()
    nb.cells = [nbformat.v4.new_code_cell(c) for c in cells]
    nbformat.write(nb, path)
    return path


def env(tmp: Path) -> dict:
    # MPLCONFIGDIR stays the worker's own (conftest): a kernel given another one would start
    # cold (tests/warm_kernels.py: matplotlib reads it while the zygote imports it)
    names = ("JUPYTER_CONFIG_DIR", "JUPYTER_RUNTIME_DIR", "JUPYTERLAB_WORKSPACES_DIR", "IPYTHONDIR")
    (tmp / "tmp").mkdir(exist_ok=True)  # TMPDIR: where grading's scratch homes go
    return {
        **os.environ,
        "LABKIT_HOME": str(tmp / "home"),
        "OMP_NUM_THREADS": "1",
        "TMPDIR": str(tmp / "tmp"),
        **{n: str(tmp / n.lower()) for n in names},
    }


def scratch_left(tmp: Path) -> list[str]:
    return sorted(p.name for p in (tmp / "tmp").glob("labkit-grade-*"))


def labkit(tmp: Path, *args, timeout=300) -> subprocess.CompletedProcess:
    """`python -m labkit.cli ARGS` in a process of its own (its kernels: the worker's warm ones)."""
    return subprocess.run(
        warm_kernels.command("labkit.cli", *args),
        capture_output=True,
        text=True,
        cwd=ROOT,
        env={**env(tmp), **warm_kernels.client_env()},
        timeout=timeout,
    )


@pytest.fixture(scope="module")
def graded(tmp_path_factory):
    """`labkit grade FOLDER --timeout 20` over an endless cell, a dying kernel and a crash
    (20 s: importing torch in the first cell must fit on a loaded machine too)."""
    tmp = tmp_path_factory.mktemp("limits")
    folder = tmp / "work"
    folder.mkdir()
    good = "check.ex_a_mechanism(mechanism)"
    notebook(folder / "a_crash.ipynb", IMPORT, mechanism(), "answer = 1 / 0\n" + good, good)
    # endless, but asleep: the 20 s it waits for the time-out leave the CPU to the other tests
    notebook(
        folder / "b_endless.ipynb",
        IMPORT,
        mechanism(),
        "import time\nwhile True:\n    time.sleep(0.05)",
        good,
    )
    notebook(folder / "c_dies.ipynb", IMPORT, "import os\nos._exit(1)", good)
    notebook(folder / "scratch.ipynb", "print('not an exercise')")  # skipped: no check
    (folder / "notes.txt").write_text("not a notebook")
    started = time.monotonic()
    out = labkit(tmp, "grade", str(folder), "--timeout", "20", "--json", str(tmp / "g.json"))
    elapsed = time.monotonic() - started
    rows = json.loads((tmp / "g.json").read_text())["rows"]
    return (
        out,
        elapsed,
        tmp,
        {
            name: [r for r in rows if r["notebook"].endswith(name)]
            for name in ("a_crash.ipynb", "b_endless.ipynb", "c_dies.ipynb")
        },
    )


def test_a_folder_grades_its_exercise_notebooks(graded):
    out, _, _, rows = graded
    assert out.returncode == 1, out.stderr
    assert "Traceback" not in out.stderr + out.stdout
    assert all(rows.values()) and "scratch.ipynb" not in out.stdout


def test_a_crash_before_a_check_never_grades_as_passed(graded):
    _, _, _, rows = graded
    crash, later = rows["a_crash.ipynb"]
    assert crash["status"] == "failed" and "ZeroDivisionError" in crash["message"]
    assert later["status"] == "passed" and later["cell"] > crash["cell"]


def test_an_endless_cell_is_a_timed_out_row_and_grading_goes_on(graded):
    _, elapsed, _, rows = graded
    stopped, after = rows["b_endless.ipynb"]
    assert stopped["status"] == "failed" and "timed out after 20 s" in stopped["message"]
    assert after["status"] == "passed"  # the kernel was interrupted, not lost
    assert elapsed < 150  # three kernels, one 20 s limit and its interrupt: nothing waits 300 s


def test_no_scratch_home_is_left_behind_after_a_crash_a_timeout_or_a_death(graded):
    _, _, tmp, _ = graded
    assert (tmp / "tmp").is_dir() and scratch_left(tmp) == []


def test_a_dying_kernel_is_a_row_not_a_traceback(graded):
    _, _, _, rows = graded
    died, never = rows["c_dies.ipynb"]
    assert died["status"] == "failed" and "the kernel died in cell 1" in died["message"]
    assert never["status"] == "failed" and never["message"].startswith(
        "not graded: the kernel died"
    )


def test_folders_without_exercises_and_damaged_notebooks_get_a_sentence(tmp_path):
    empty = tmp_path / "empty"
    empty.mkdir()
    bad = tmp_path / "bad.ipynb"
    doc = nbformat.v4.new_notebook()
    doc.cells = [nbformat.v4.new_code_cell(IMPORT)]
    text = json.loads(nbformat.writes(doc))
    text["cells"][0]["source"] = 5
    bad.write_text(json.dumps(text))
    for target, expected in (
        (empty, "is a folder with no exercise notebook in it"),
        (bad, "cell 0's source is int, not text"),
    ):
        out = labkit(tmp_path, "grade", str(target))
        assert out.returncode == 2 and "does not exist" not in out.stderr
        line = out.stderr.strip()
        assert len(line.splitlines()) == 1 and expected in line and one_sentence(line), line
    out = labkit(tmp_path, "grade", "exercises", "--timeout", "0")
    assert out.returncode == 2 and "--timeout=0.0 is out of range" in out.stderr


STUCK_CLEANUP = """import asyncio, sys
import nbclient.client as c
from jupyter_core.utils import run_sync

async def stuck(self):
    await asyncio.sleep(1000)
c.NotebookClient._cleanup_kernel = run_sync(stuck)  # nbclient's clean-up never returns
from labkit.cli import main
sys.exit(main(sys.argv[1:]))
"""


def interrupted_grading(tmp_path, python_args: list) -> tuple:
    """Run `python PYTHON_ARGS grade NB` on a notebook whose second cell sleeps 120 s, and
    Ctrl-C its process group once the kernel is in that cell: (the process, its stderr, the
    seconds from Ctrl-C to its end)."""
    running = tmp_path / "running"
    nb = notebook(
        tmp_path / "slow.ipynb",
        IMPORT,
        f"import time\nopen({str(running)!r}, 'w').close()\ntime.sleep(120)",
        "check.ex_a_mechanism('x')",
    )
    proc = subprocess.Popen(
        [sys.executable, *python_args, "grade", str(nb)],
        cwd=ROOT,
        env=env(tmp_path),
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
        start_new_session=True,
    )
    deadline = time.monotonic() + 120
    while not running.exists() and time.monotonic() < deadline:
        time.sleep(0.1)  # until the kernel is in the middle of the notebook
    started = time.monotonic()
    os.killpg(proc.pid, signal.SIGINT)  # what Ctrl-C in a terminal sends
    _, err = proc.communicate(timeout=60 if "-c" in python_args else 30)
    return proc, err, time.monotonic() - started


def test_ctrl_c_ends_grading_even_when_the_kernels_clean_up_hangs(tmp_path):
    """Seen in `make test` under load: after Ctrl-C, `labkit grade` had not ended in 30 s.
    With nbclient's clean-up made to hang, grading still ends in about 10 s (CTRL_C_EXIT_S):
    exit 130, the usual line, the kernel killed and its scratch home removed."""
    from labkit.learn.grade.run import CTRL_C_EXIT_S

    proc, err, seconds = interrupted_grading(tmp_path, ["-c", STUCK_CLEANUP])
    assert proc.returncode == 130 and CTRL_C_EXIT_S <= seconds < 30
    assert err.strip().endswith(
        "labkit: interrupted; the notebooks were not changed, and the grading so far was not kept."
    ), err
    assert scratch_left(tmp_path) == [] and list((tmp_path / "tmp").iterdir()) == []


def test_ctrl_c_stops_grading_with_one_line_and_exit_130(tmp_path):
    proc, err, _ = interrupted_grading(tmp_path, ["-m", "labkit.cli"])
    assert proc.returncode == 130
    assert scratch_left(tmp_path) == []  # the kernel's scratch home went with it
    assert err.strip() == (
        "labkit: interrupted; the notebooks were not changed, and the grading so far was not kept."
    )
