"""Running one exercise notebook for `labkit grade`: every cell under a time limit.

Each code cell runs with nbclient under `timeout` seconds. A cell over the limit is
interrupted (as Ctrl-C in Jupyter would) and grading goes on with the next cell; if the
kernel does not answer after that, or dies (a crash, memory running out, ``os._exit``),
the notebook's remaining checks get rows that say so, and grading goes on with the next
notebook. Before the first cell the hand-over (`grade_handover`) is put into the kernel, and
each cell that calls an answer check runs with its call sites rewritten to hand their
answers over (`grade_sites`), as messages the grader holds as they arrive, filed under the
cell the grader was running: so each answer belongs to the cell that gave it, a cell that
crashed before its check gave none, and no later cell can change one. The whole notebook may
have a time limit too (`notebook_timeout`). The kernel runs in the sandbox
(`labkit.learn.grade.sandbox`) unless grading runs with none; its stdout and stderr are a pipe
the grader drains and never shows. Nothing the kernel prints is read.
"""

from __future__ import annotations

import json
import os
import re
import shutil
import subprocess
import sys
import tempfile
import threading
import time
from contextlib import contextmanager
from dataclasses import dataclass, field
from pathlib import Path

from . import pool
from .truth import Heard

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
    "_lk['install'](get_ipython())\ndel _lk"
)
ANSWER_MIME = "application/x-labkit-answer"  # the hand-over's messages: "CHECK\nK\nJSON"
RUN_MIME = "application/x-labkit-run"  # and "setup:KEY\nrun:KEY" as a labkit run begins


class GradeError(ValueError):
    """A notebook that cannot be graded: missing, unreadable, or not a labkit exercise."""


class KernelNotStarted(GradeError):
    """No kernel could be started for a notebook, twice: among others, a row of its own."""


@dataclass
class Execution:
    """What running a notebook left: the executed cells and, per cell, what stopped it."""

    nb: object
    answers: dict = field(default_factory=dict)  # (cell, check, k) -> the answer's JSON text,
    # held as it arrived from that cell's run (the first per call site wins)
    started: dict = field(default_factory=dict)  # cell index -> time.time() as it started
    timed_out: dict = field(default_factory=dict)  # cell index -> "timed out after N s"
    halted: tuple | None = None  # (cell index, why nothing ran after it)
    stub_before: dict = field(default_factory=dict)  # cell index -> a stub failed at or before it
    said: str = ""  # the last of what the kernel's own stdout and stderr received
    heard: Heard = field(default_factory=Heard)  # runs begun and answers, on the grader's clock
    received: dict = field(default_factory=dict)  # (cell, check, k) -> when the grader got it
    first_raised: tuple | None = None  # (cell, error output) of the first error of the
    # learner's own code, which a later NameError is reported as

    def hold(self, cell: int, payload, planned) -> None:
        """Keep an answer the hand-over sent while `cell` ran, unless that call site has one:
        the cell is the grader's own count, never what the message says."""
        if not isinstance(payload, str):
            return
        name, k, text = (payload.split("\n", 2) + ["", ""])[:3]
        if (cell, name) in planned and k.isdigit() and (cell, name, int(k)) not in self.answers:
            self.answers[cell, name, int(k)] = text
            self.received[cell, name, int(k)] = self.heard.answered(name, text)


def check_timeout(parameter: str, timeout) -> None:
    """Refuse a cell time limit that is not a number of seconds in TIMEOUT_RANGE_S."""
    from ...errors import check_number

    low, high = TIMEOUT_RANGE_S
    check_number(parameter, timeout, minimum=low, maximum=high, allow_none=True)


def _client_class():
    """nbclient's NotebookClient with a time limit in any seconds (its own takes whole ones),
    which holds each answer the hand-over sends as it arrives, out of the cell's outputs."""
    from nbclient import NotebookClient
    from traitlets import Float

    class Client(NotebookClient):
        timeout = Float(DEFAULT_TIMEOUT_S, allow_none=True)
        run = None  # the Execution answers are held in
        planned = frozenset()  # (cell, check) of every planned call

        def process_message(self, msg, cell, cell_index):
            content = msg.get("content")
            data = content.get("data") if isinstance(content, dict) else None
            if isinstance(data, dict) and (ANSWER_MIME in data or RUN_MIME in data):
                if msg.get("msg_type") == "display_data":  # never an update of an earlier one
                    if ANSWER_MIME in data:
                        self.run.hold(cell_index, data[ANSWER_MIME], self.planned)
                    else:
                        self.run.heard.run_begins(data[RUN_MIME])
                return None
            return super().process_message(msg, cell, cell_index)

    return Client


def execute(
    path: Path,
    nb,
    sites: dict,
    plan,
    *,
    timeout: float = DEFAULT_TIMEOUT_S,
    progress=None,
    sandbox: str = "none",
    notebook_timeout: float | None = None,
) -> Execution:
    """Run `nb`'s code cells, the cells in `sites` (index -> source) as rewritten there, each
    handing its answers over as a message the grader holds; in `sandbox` ("bwrap" or "none")."""
    run = Execution(nb)
    work = tempfile.mkdtemp(prefix="labkit-grade-")  # the submission's one writable folder
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
        resources={
            "metadata": {"path": work if sandbox == "bwrap" else str(path.parent.resolve())}
        },
    )
    client.run, client.planned = run, frozenset(plan)
    code_cells = [i for i, c in enumerate(nb.cells) if c.cell_type == "code"]
    env = _kernel_env(nb, work, sandbox)
    pool.started(client, work)  # a grading stopped by a signal ends this kernel (`pool.stop`)
    try:
        for attempt in (1, 2):  # a kernel that dies before it answers gets one more start
            try:
                _run_cells(
                    client,
                    env,
                    run,
                    code_cells,
                    sites,
                    timeout,
                    progress,
                    sandbox,
                    notebook_timeout,
                )
                break
            except KernelNotStarted:
                if attempt == 2:
                    raise
    finally:  # the submission's folder goes with it, however grading ended
        pool.ended(client)
        if sandbox == "bwrap":
            from .sandbox import release

            release(work)
        shutil.rmtree(work, ignore_errors=True)
    return run


def _run_cells(client, env, run, code_cells, sites, timeout, progress, sandbox, whole) -> None:
    from ...store import read_text
    from nbclient.exceptions import DeadKernelError

    nb, stub, began = run.nb, False, time.monotonic()
    i = code_cells[0] if code_cells else 0  # a kernel that dies in the hand-over: its first cell
    source = read_text(Path(__file__).with_name("handover.py"), what="hand-over")
    with _started(client, env, sandbox, run):
        try:
            _scratch(client, nb, _INSTALL.format(source=source))
            for done, i in enumerate(code_cells, 1):
                left = None if whole is None else whole - (time.monotonic() - began)
                client.timeout = timeout if left is None else max(min(timeout, left), 0.1)
                started, run.started[i] = time.monotonic(), time.time()
                _execute_as(client, nb.cells[i], i, sites.get(i))
                if left is not None and time.monotonic() - began >= whole:
                    run.halted = (
                        i,
                        f"the notebook ran past its {whole:g} s (--notebook-timeout) in cell {i}",
                    )
                    break
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
def _started(client, env: dict, sandbox: str, run: Execution):
    """`client.setup_kernel` (in the sandbox, its stdout and stderr a pipe this process
    drains), with a kernel that cannot start said in one sentence."""
    from jupyter_client.kernelspec import NoSuchKernel

    work = env["HOME"] if sandbox == "bwrap" else None
    client.km = client.create_kernel_manager() if work is None else _sandboxed(client, env, work)
    read, write = os.pipe()
    threading.Thread(target=_drain, args=(read, run), daemon=True).start()
    streams = {"stdout": write, "stderr": write}
    if work is not None:
        streams.update(stdin=subprocess.DEVNULL, cwd=work)
    try:
        manager = client.setup_kernel(env=env, **streams)
        try:
            manager.__enter__()
        except (NoSuchKernel, RuntimeError, TimeoutError) as exc:
            os.close(write)
            write = -1
            time.sleep(0.2)  # what the kernel said before it ended, drained
            said = (run.said.strip().splitlines() or ["nothing"])[-1][:160]
            raise KernelNotStarted(
                f"A Python kernel could not be started to grade the notebook "
                f"({type(exc).__name__}: {str(exc)[:120]}; its last words: {said}); check "
                "that ipykernel is installed in this environment (`python -m ipykernel "
                "--version`)."
            ) from None
    finally:
        if write >= 0:
            os.close(write)  # the kernel holds its own copy; EOF once all of it is gone
    try:
        yield
    except BaseException:
        if not manager.__exit__(*sys.exc_info()):
            raise
    else:
        manager.__exit__(None, None, None)


SAID_TAIL = 4096  # how much of the kernel's own output is kept, to say why it died


def _drain(fd: int, run: Execution) -> None:
    """Read the kernel's stdout and stderr to their end, keeping the last SAID_TAIL bytes:
    a kernel that floods them never blocks, and never reaches the grader's own streams."""
    tail = b""
    try:
        while chunk := os.read(fd, 65536):
            tail = (tail + chunk)[-SAID_TAIL:]
    except OSError:
        pass
    finally:
        os.close(fd)
        run.said = tail.decode("utf-8", "replace")


def _sandboxed(client, env: dict, work: str):
    """A kernel manager whose kernel runs in bubblewrap (`labkit.learn.grade.sandbox`): ZeroMQ
    over socket files in `work`, interrupts as messages (no signal crosses the sandbox)."""
    from jupyter_client.manager import AsyncKernelManager

    from .sandbox import bwrap_command

    class Sandboxed(AsyncKernelManager):
        def format_kernel_cmd(self, extra_arguments=None):
            cmd = super().format_kernel_cmd(extra_arguments)
            return bwrap_command(cmd, work=work, env=env)

    km = Sandboxed(kernel_name=client.kernel_name, config=client.config)
    km.transport, km.ip = "ipc", os.path.join(work, "kernel")
    km.connection_file = os.path.join(work, "kernel.json")
    km.kernel_spec.interrupt_mode = "message"
    return km


def _kernel_env(nb, work: str, sandbox: str) -> dict:
    """The kernel's environment. In the sandbox: the allow-list (`sandbox.allowed_env`), the
    submission's folder as its home. Without: the grader's environment without what names a
    secret (a CI job's tokens, keys and passwords). Both: an empty $LABKIT_HOME, so grading
    never adds to the learner's records, and the sketches the learner sealed by hand, taken
    from the notebook's saved outputs."""
    from ...forecast.carry import ENV, sketches_in
    from ...forecast.gate import NO_WAIT

    home = os.path.join(work, "home")
    os.mkdir(home)
    own = {"LABKIT_HOME": home, NO_WAIT: "1"}  # nobody sees a grader's widgets
    drawn = sketches_in(nb)
    if drawn:
        handed = os.path.join(home, "sketches.json")
        with open(handed, "w") as f:
            json.dump(drawn, f)
        own[ENV] = handed
    if sandbox == "bwrap":
        from .sandbox import allowed_env

        dirs = {n: os.path.join(work, n.lower()) for n in ("MPLCONFIGDIR", "IPYTHONDIR")}
        return allowed_env({"HOME": work, **dirs, **own})
    env = {k: v for k, v in os.environ.items() if not SECRET.search(k)}  # a CI job's tokens
    return {**env, **own}


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
