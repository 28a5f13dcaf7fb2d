"""Running one exercise notebook for `labkit grade`: every cell under a time limit.

Each code cell runs with nbclient under `timeout` seconds. A cell over the limit is
interrupted (as Ctrl-C in Jupyter would) and grading goes on with the next cell; if the
kernel does not answer after that, or dies (a crash, memory running out, ``os._exit``),
the notebook's remaining checks get rows that say so, and grading goes on with the next
notebook. Before the first cell the hand-over (`grade_handover`) is put into the kernel, and
each cell that calls an answer check runs with its call sites rewritten to hand their
answers over (`grade_sites`), into a folder of the grader's, one file per call site: so each
answer belongs to the cell that gave it, and a cell that crashed before its check gave none.
Nothing the kernel prints is read.
"""

from __future__ import annotations

import json
import os
import re
import shutil
import signal
import sys
import tempfile
import threading
import time
from contextlib import contextmanager
from dataclasses import dataclass, field
from pathlib import Path

DEFAULT_TIMEOUT_S = 120  # per cell; the slowest solution cell (Exercise E's five LM runs,
# about 11 s) fits ten times over on a slow machine
STUBS = ("NotImplementedError", "PredictionNotGiven")  # an answer not written yet: a stub's
# raise, or a prediction form nobody sealed (labkit.widgets.ask_prediction)
TIMEOUT_RANGE_S = (0.1, 1e6)  # a cell's limit: below 0.1 s no cell can start; a million
# seconds (11 days) is far beyond any exercise, and well inside what the timers can hold
SECRET = re.compile(
    r"(^|_)(TOKEN|SECRET|PASSWORD|PASSWD|CREDENTIALS?|KEY|AUTH)(_|$)", re.IGNORECASE
)  # environment variables the learner's kernel never sees
PROBE_S = 5  # after a timeout, how long the kernel has to answer before it counts as stuck
_INSTALL = (
    "exec(compile({source!r}, '<labkit grade: hand-over>', 'exec'), _lk := {{}})\n"
    "_lk['install']({folder!r}, get_ipython().user_ns)\ndel _lk"
)


class GradeError(ValueError):
    """A notebook that cannot be graded: missing, unreadable, or not a labkit exercise."""


@dataclass
class Execution:
    """What running a notebook left: the executed cells and, per cell, what stopped it."""

    nb: object
    answers: Path  # the folder the hand-over writes each call's answer into
    started: dict = field(default_factory=dict)  # cell index -> time.time() as it started
    timed_out: dict = field(default_factory=dict)  # cell index -> "timed out after N s"
    halted: tuple | None = None  # (cell index, why nothing ran after it)
    stub_before: dict = field(default_factory=dict)  # cell index -> a stub failed at or before it


def check_timeout(parameter: str, timeout) -> None:
    """Refuse a cell time limit that is not a number of seconds in TIMEOUT_RANGE_S."""
    from ...errors import check_number

    low, high = TIMEOUT_RANGE_S
    check_number(parameter, timeout, minimum=low, maximum=high, allow_none=True)


def _client_class():
    """nbclient's NotebookClient with a time limit in any seconds (its own takes whole ones)."""
    from nbclient import NotebookClient
    from traitlets import Float

    class Client(NotebookClient):
        timeout = Float(DEFAULT_TIMEOUT_S, allow_none=True)

    return Client


def execute(
    path: Path, nb, sites: dict, answers: Path, *, timeout: float = DEFAULT_TIMEOUT_S, progress=None
) -> Execution:
    """Run `nb`'s code cells, the cells in `sites` (index -> source) as rewritten there, each
    handing its answers over into the folder `answers`."""
    run = Execution(nb, Path(answers))
    client = _client_class()(
        nb,
        timeout=timeout,
        kernel_name="python3",
        allow_errors=True,
        startup_timeout=60,
        shutdown_kernel="immediate",  # a stuck or dead kernel is killed, not waited for
        interrupt_on_timeout=True,
        extra_arguments=["--IPKernelApp.log_level=ERROR"],
        error_on_timeout={
            "ename": "CellTimeoutError",
            "evalue": f"timed out after {timeout:g} s",
            "traceback": [],
        },
        resources={"metadata": {"path": str(path.parent.resolve())}},
    )
    code_cells = [i for i, c in enumerate(nb.cells) if c.cell_type == "code"]
    env = _kernel_env(nb)
    restore = _bounded_ctrl_c(client, [env["LABKIT_HOME"], str(run.answers)])
    try:
        _run_cells(client, env, run, code_cells, sites, timeout, progress)
    finally:  # the kernel's scratch $LABKIT_HOME goes with it, however grading ended
        shutil.rmtree(env["LABKIT_HOME"], ignore_errors=True)
        restore()
    return run


INTERRUPTED = "the notebooks were not changed, and the grading so far was not kept"
CTRL_C_EXIT_S = 10.0  # how long a Ctrl-C may take to end grading before it is forced


def _bounded_ctrl_c(client, scratch: list):
    """Ctrl-C ends grading as before (KeyboardInterrupt, then the kernel's clean-up), within
    CTRL_C_EXIT_S: after that the kernel is killed, its `scratch` folders removed, the usual line
    printed and the process ends with 130. Seen in `make test` under load: nbclient's clean-up
    after a KeyboardInterrupt inside its event loop did not return in 30 s. Returns the
    function that puts the previous SIGINT handler back (a no-op off the main thread)."""
    if threading.current_thread() is not threading.main_thread():
        return lambda: None

    def force():
        process = getattr(getattr(client.km, "provisioner", None), "process", None)
        try:
            if process is not None:
                os.killpg(process.pid, signal.SIGKILL)
        except (OSError, AttributeError):
            pass
        for folder in scratch:
            shutil.rmtree(folder, ignore_errors=True)
        try:
            os.remove(client.km.connection_file)
        except (OSError, AttributeError, TypeError):
            pass
        sys.stderr.write(f"labkit: interrupted; {INTERRUPTED}.\n")
        sys.stderr.flush()
        os._exit(130)

    def on_ctrl_c(signum, frame):
        timer = threading.Timer(CTRL_C_EXIT_S, force)
        timer.daemon = True
        timer.start()
        raise KeyboardInterrupt

    previous = signal.signal(signal.SIGINT, on_ctrl_c)
    return lambda: signal.signal(signal.SIGINT, previous)


def _run_cells(client, env, run, code_cells, sites, timeout, progress) -> None:
    from ...store import read_text
    from nbclient.exceptions import DeadKernelError

    nb, stub = run.nb, False
    source = read_text(Path(__file__).with_name("handover.py"), what="hand-over")
    with _started(client, env):
        try:
            _scratch(client, nb, _INSTALL.format(source=source, folder=str(run.answers)))
            for done, i in enumerate(code_cells, 1):
                started, run.started[i] = time.monotonic(), time.time()
                _execute_as(client, nb.cells[i], i, sites.get(i))
                if time.monotonic() - started >= timeout:
                    run.timed_out[i] = f"the cell timed out after {timeout:g} s and was interrupted"
                    if not _answers(client, nb):
                        run.halted = (
                            i,
                            (
                                f"cell {i} was still running after its {timeout:g} s "
                                "and did not stop when interrupted"
                            ),
                        )
                        break
                err = next(
                    (o for o in nb.cells[i].get("outputs", []) if o.get("output_type") == "error"),
                    None,
                )
                stub = stub or bool(err and err["ename"] in STUBS)
                run.stub_before[i] = stub
                if progress:
                    progress(done, len(code_cells))
        except DeadKernelError:
            run.halted = (
                i,
                (
                    f"the kernel died in cell {i} (a crash, memory running out, or "
                    "the process killed)"
                ),
            )


@contextmanager
def _started(client, env: dict):
    """`client.setup_kernel`, with a kernel that cannot start said in one sentence."""
    from jupyter_client.kernelspec import NoSuchKernel

    manager = client.setup_kernel(env=env)
    try:
        manager.__enter__()
    except (NoSuchKernel, RuntimeError, TimeoutError) as exc:
        raise GradeError(
            f"A Python kernel could not be started to grade the notebook "
            f"({type(exc).__name__}: {str(exc)[:120]}); check that ipykernel is "
            "installed in this environment (`python -m ipykernel --version`)."
        ) from None
    try:
        yield
    except BaseException:
        if not manager.__exit__(*sys.exc_info()):
            raise
    else:
        manager.__exit__(None, None, None)


def _kernel_env(nb) -> dict:
    """An empty $LABKIT_HOME, so grading never adds to the learner's records, the sketches
    the learner sealed by hand, taken from the notebook's saved outputs, and the grader's
    environment without what names a secret (a CI job's tokens, keys and passwords)."""
    from ...forecast.carry import ENV, sketches_in
    from ...forecast.gate import NO_WAIT

    home = tempfile.mkdtemp(prefix="labkit-grade-")
    env = {k: v for k, v in os.environ.items() if not SECRET.search(k)}  # a CI job's tokens
    env.update({"LABKIT_HOME": home, NO_WAIT: "1"})  # nobody sees a grader's widgets
    drawn = sketches_in(nb)
    if drawn:
        handed = os.path.join(home, "sketches.json")
        with open(handed, "w") as f:
            json.dump(drawn, f)
        env[ENV] = handed
    return env


def _scratch(client, nb, source: str):
    """Run `source` in the kernel as a cell that is never saved; return that cell."""
    import nbformat

    cell = nbformat.v4.new_code_cell(source)
    nb.cells.append(cell)
    try:
        client.execute_cell(cell, len(nb.cells) - 1)
    finally:
        nb.cells.pop()
    return cell


def _execute_as(client, cell, i: int, source: str | None) -> None:
    """Run `cell` as `source` (its answers handed over), then give it back its own source."""
    own = cell.source
    cell.source = own if source is None else source
    try:
        client.execute_cell(cell, i)
    finally:
        cell.source = own


def _answers(client, nb) -> bool:
    """Whether the kernel runs a trivial cell within PROBE_S after an interrupted one."""
    saved, client.timeout = client.timeout, PROBE_S
    try:
        started = time.monotonic()
        _scratch(client, nb, "pass")
        return time.monotonic() - started < PROBE_S
    finally:
        client.timeout = saved
