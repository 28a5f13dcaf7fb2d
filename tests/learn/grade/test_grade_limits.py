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
    """Exercise A's solved mechanism claim and explanation: a check call that passes."""
    nb = nbformat.read(ROOT / "solutions" / "ex_a_break_the_graph.ipynb", as_version=4)
    source = next(c.source for c in nb.cells if "mechanism = {" in c.source)
    return source[source.index("mechanism = {") :]


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
    good = "check.ex_a_mechanism(mechanism, explanation)"
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
    out = labkit(
        tmp,
        "grade",
        str(folder),
        "--timeout",
        "20",
        "--json",
        str(tmp / "g.json"),
        "--manual",  # the prose for a person, from the same grading (issue 54)
        str(tmp / "prose.csv"),
    )
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


def test_the_prose_of_each_graded_check_is_exported_for_a_person(graded):
    import csv

    _, _, tmp, _ = graded
    lines = list(csv.DictReader(open(tmp / "prose.csv", encoding="utf-8")))
    assert {(r["notebook"].rsplit("/", 1)[-1], r["check"], r["part"]) for r in lines} == {
        (name, "ex_a_mechanism", "explanation") for name in ("a_crash.ipynb", "b_endless.ipynb")
    }
    assert all(r["prose"].startswith("detach() returns") and r["score"] == "" for r in lines)


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

own = c.NotebookClient._async_cleanup_kernel

async def stuck(self):  # nbclient's clean-up never returns, for the notebook that sleeps
    if any("time.sleep(600)" in cell.source for cell in self.nb.cells):
        await asyncio.sleep(1000)
    await own(self)
c.NotebookClient._async_cleanup_kernel = stuck
c.NotebookClient._cleanup_kernel = run_sync(stuck)
from labkit.cli import main
sys.exit(main(sys.argv[1:]))
"""
STAYS = """import glob, os, subprocess, sys, time
subprocess.Popen(["sleep", "600.{token}"])  # a child of the kernel
middle = os.fork()
if middle == 0:  # and a daemon: double-forked into a session of its own
    os.setsid()
    if os.fork() == 0:
        os.execvp("sleep", ["sleep", "601.{token}"])
    os._exit(0)
os.waitpid(middle, 0)


def exec_done():  # the daemon's command line holds the token once its exec is done
    for path in glob.glob("/proc/[0-9]*/cmdline"):
        try:
            if b"601.{token}" in open(path, "rb").read():
                return True
        except OSError:
            pass
    return False


deadline = time.monotonic() + 20
while not exec_done() and time.monotonic() < deadline:
    time.sleep(0.05)
open("running", "w").close()  # the kernel's own folder: the grader's, in the sandbox or not
time.sleep(600)"""


def left_running(token: str) -> list[str]:
    """The pids of the processes whose command line holds `token`, after up to 5 s for them
    to end."""
    deadline = time.monotonic() + 5
    while True:
        found = subprocess.run(["pgrep", "-f", token], capture_output=True, text=True).stdout
        if not found.split() or time.monotonic() > deadline:
            return found.split()
        time.sleep(0.2)


def _as_from_a_terminal():
    """In the grader's process before it starts: the three signals at their defaults and not
    blocked, as a shell started from a terminal has them. A child inherits an ignored SIGINT
    (Python then never installs its KeyboardInterrupt), and in the full suite a test before
    this one left this worker's SIGINT ignored: the Ctrl-C case waited out its 30 s."""
    signal.signal(signal.SIGINT, signal.SIG_DFL)
    signal.pthread_sigmask(signal.SIG_UNBLOCK, {signal.SIGINT, signal.SIGTERM, signal.SIGHUP})


@pytest.mark.parametrize(
    "sig, python, extra",
    [
        (signal.SIGINT, ["-c", STUCK_CLEANUP], []),  # Ctrl-C, with nbclient's clean-up hanging
        (signal.SIGTERM, ["-m", "labkit.cli"], []),
        (signal.SIGHUP, ["-m", "labkit.cli"], ["--sandbox", "none"]),
    ],
)
def test_a_signal_stops_grading_says_what_was_kept_and_leaves_nothing(tmp_path, sig, python, extra):
    """`labkit grade A B` stopped while B's cell sleeps 600 s with a child and a double-forked
    daemon running (seen: the daemon outlived the grader; Ctrl-C said nothing was kept while
    the store kept A): within seconds, the shell's status for that signal (130, 143, 129;
    SIGTERM once gave 130), one line that names what was kept, as the store has it, no report
    half-written, no process and no folder of the run left."""
    token = f"{os.getpid()}{int(sig)}"
    quick = notebook(
        tmp_path / "a_quick.ipynb",
        IMPORT,
        mechanism(),
        "check.ex_a_mechanism(mechanism, explanation)",
    )
    slow = notebook(
        tmp_path / "b_slow.ipynb", IMPORT, STAYS.format(token=token), "check.ex_a_mechanism('x')"
    )
    argv = [sys.executable, *python, "grade", str(quick), str(slow), "--jobs", "1", *extra]
    argv += ["--json", str(tmp_path / "g.json")]
    proc = subprocess.Popen(
        argv,
        cwd=ROOT,
        env=env(tmp_path),
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
        start_new_session=True,
        preexec_fn=_as_from_a_terminal,
    )
    deadline = time.monotonic() + 180
    while not list(tmp_path.glob("running")) + list(tmp_path.glob("tmp/labkit-grade-*/running")):
        assert time.monotonic() < deadline and proc.poll() is None, proc.communicate()
        time.sleep(0.1)  # until B's kernel is in the middle of its cell
    started = time.monotonic()
    if sig == signal.SIGINT:
        os.killpg(proc.pid, sig)  # what Ctrl-C in a terminal sends: the whole group
    else:
        os.kill(proc.pid, sig)
    _, err = proc.communicate(timeout=30)
    assert proc.returncode == 128 + sig and time.monotonic() - started < 15, err
    how = "interrupted" if sig == signal.SIGINT else f"stopped by {signal.Signals(sig).name}"
    assert err.strip().splitlines()[-1] == (
        f"labkit: {how}; a_quick.ipynb was graded and kept; b_slow.ipynb was not graded; "
        "the notebooks were not changed."
    ), err
    from labkit.store.learner import LearnerStore

    kept = LearnerStore(tmp_path / "home" / "labkit.sqlite3").records("grade")
    assert [Path(r["body"]["notebook"]).name for r in kept] == ["a_quick.ipynb"]
    assert not [p for p in tmp_path.iterdir() if "g.json" in p.name]  # not even half of one
    assert left_running(f"600.{token}") == []  # the kernel's child ended with it
    daemon = left_running(f"601.{token}")  # and its daemon, in the sandbox (its PID namespace)
    for pid in daemon:  # without one it outlives the kernel (docs/instructor/grading.md)
        os.kill(int(pid), signal.SIGKILL)
    assert len(daemon) == (1 if extra else 0)
    assert scratch_left(tmp_path) == []
