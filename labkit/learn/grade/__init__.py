"""`labkit grade`: run exercise notebooks to the end and report every answer check.

A notebook is executed cell by cell with nbclient, going on past a failing cell, so a
stub left as it is or a wrong answer never hides the checks after it. Each call of a
`labkit.check` function in the notebook's source is one row:

    passed            the check ran and accepted the answer;
    failed            the check ran and refused it (its teaching sentence is the message),
                      or the learner's own code raised before the check could run;
    not yet answered  the answer was never written: the check's cell stopped on a name
                      that a stub still leaves undefined, or on the stub itself.

Every verdict is reached in the grader's own process, on the learner's answers handed over
as data (`grade_verdict`); the kernel's own run of a check is the learner's feedback and
counts for nothing. Each row belongs to the cell that ran its check. A cell over the time
limit (`timeout`, ``--timeout``) or a kernel that dies gives rows that say so, and grading goes
on (`labkit.learn.grade.run`). A folder stands for the exercise notebooks in it.

The kernel runs with its own empty $LABKIT_HOME, so grading never adds to the learner's
forecast history. A notebook with no answer check is not an exercise: `GradeError`.
"""

from __future__ import annotations

import os
import signal
import sys
import threading
import time
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path

from .formats import STATUSES, format_table, summary  # noqa: F401 (the table is a format too)
from .read import Unreadable, check_names, checks_in, exercises_in, notebooks_in, read_notebook
from .run import DEFAULT_TIMEOUT_S, STUBS, GradeError, KernelNotStarted, check_timeout, execute
from ..check._predict import replaying
from .sites import hand_over, occurrence
from .store import keep_grading
from . import pool
from .sandbox import UNTRUSTED
from .verdict import verdict
from .hidden import exercise_of

OWN_ERRORS = ("CheckFailed", "NotYetAnswered", "CellTimeoutError")  # not the learner's code
VERDICTS = threading.Lock()  # one notebook's checks at a time: `replaying` is process-wide
NOT_ANSWERED = ("NameError", "SketchNotSealed", *STUBS)


@dataclass
class Row:
    notebook: str
    exercise: str
    check: str
    question: str  # the check's docstring, first line
    status: str  # one of STATUSES
    message: str  # the teaching sentence, or what stopped the cell
    cell: int  # index of the cell that calls the check


def grade_notebook(
    path,
    *,
    timeout: float | None = None,
    progress=None,
    hidden=None,
    sandbox: str = "none",
    notebook_timeout: float | None = None,
) -> list[Row]:
    """Execute the notebook at `path` (it is not modified) and return one Row per check call;
    each cell runs under `timeout` seconds (default `grade_run.DEFAULT_TIMEOUT_S`), the whole
    notebook under `notebook_timeout` (None: no bound but the cells'), its kernel in `sandbox`
    ("bwrap" or "none", as `grade_sandbox.mode` chose). `hidden`: the instructor's hidden
    checks (`labkit.learn.grade.hidden`), run after the last cell."""
    import nbformat

    timeout = DEFAULT_TIMEOUT_S if timeout is None else timeout
    check_timeout("timeout", timeout)
    path = Path(path)
    nb = read_notebook(path)
    names = {**check_names(), **(hidden.questions if hidden else {})}
    plan = [
        (i, n)
        for i, c in enumerate(nb.cells)
        if c.cell_type == "code"
        for n in checks_in(c.source, names)
    ]
    if hidden is not None and plan:
        nb.cells += [nbformat.v4.new_code_cell(s) for s in hidden.cells_for(n for _, n in plan)]
        plan = [
            (i, n)
            for i, c in enumerate(nb.cells)
            if c.cell_type == "code"
            for n in checks_in(c.source, names)
        ]
    if not plan:
        raise Unreadable(
            f"{path.name} is not a labkit exercise: none of its cells calls an "
            "answer check from labkit.check."
        )
    if hidden is not None:
        hidden.define()
    data_only = set(hidden.questions) if hidden else set()
    sites = {i: hand_over(nb.cells[i].source, i, names, data_only) for i, _ in plan}
    run = execute(
        path,
        nb,
        sites,
        plan,
        timeout=timeout,
        progress=progress,
        sandbox=sandbox,
        notebook_timeout=notebook_timeout,
    )
    return _rows(path, plan, run, names, hidden, sandbox)


def _error_of(cell) -> dict | None:
    return next((o for o in cell.get("outputs", []) if o.get("output_type") == "error"), None)


def _rows(path, plan, run, names, hidden, sandbox="none") -> list[Row]:
    """One row per planned check call: the grader's verdict on the answer its own cell handed
    over, or, where none was, what stopped the cell."""
    from .. import check as checks

    nb, rows, cell = run.nb, [], [0]
    unsealed = [
        j for j, c in enumerate(nb.cells) if (_error_of(c) or {}).get("ename") == "SketchNotSealed"
    ]
    run.first_raised = next(
        (
            (j, e)
            for j, c in enumerate(nb.cells)
            if (e := _error_of(c)) and e.get("ename") not in (*NOT_ANSWERED, *OWN_ERRORS)
        ),
        None,
    )
    with VERDICTS, replaying(lambda: run.started.get(cell[0], 0.0)):
        for at, (i, name) in enumerate(plan):
            cell[0] = i
            check = (
                hidden.checks[name] if hidden and name in hidden.checks else getattr(checks, name)
            )
            text = run.answers.get((i, name, occurrence(plan, at)))
            got = verdict(check, name, text, sandbox)
            rows.append(_row(path, i, name, names, got, run, unsealed))
    return sorted(rows + _stopped_rows(path, plan, run, rows), key=lambda r: r.cell)


def _row(path, i, name, names, got, run, unsealed) -> Row:
    """The row of check `name` in cell `i`: its verdict `got`, or why no answer came."""
    err = _error_of(run.nb.cells[i])
    if got is not None:
        status, message = got
    elif run.halted and i >= run.halted[0]:
        status = "failed"
        message = (
            run.halted[1]
            if i == run.halted[0]
            else f"not graded: {run.halted[1]}, before this check's cell ran"
        )
    elif i in run.timed_out:
        status, message = "failed", run.timed_out[i]
    elif err is None:
        status, message = (
            "failed",
            (
                "no answer was handed over: the check was never called, "
                "or its cell kept the answer back"
            ),
        )
    elif err["ename"] == "SketchNotSealed":
        status, message = "not yet answered", "draw and seal the forecast sketch first"
    elif err["ename"] == "PredictionNotGiven":
        status, message = "not yet answered", "answer the prediction form and seal it first"
    elif err["ename"] in NOT_ANSWERED and (
        run.stub_before.get(i) or err["ename"] != "NameError" or (unsealed and unsealed[0] < i)
    ):
        status, message = "not yet answered", "write your answer in the cell above"
    elif err["ename"] in ("CheckFailed", "NotYetAnswered"):  # the kernel's own check ran
        status, message = (
            "failed",
            (
                "no answer was handed over: the check ran in the kernel, "
                "but its answer never reached the grader"
            ),
        )
    elif err["ename"] == "NameError" and run.first_raised and run.first_raised[0] < i:
        j, first = run.first_raised  # the name an earlier cell would have defined: its error
        status = "failed"
        message = (
            f"your code raised {first['ename']} in cell {j}, before this check ran: "
            f"{first['evalue']}"
        )
    else:
        status = "failed"
        message = f"your code raised {err['ename']} before the check ran: {err['evalue']}"
    return Row(str(path), exercise_of(name), name, names[name], status, message, i)


def _stopped_rows(path, plan, run, rows) -> list[Row]:
    """A row for each cell without a check that ran out of time or took the kernel down,
    so a notebook that stops there never reads as all passed."""
    planned = {i for i, _ in plan}
    stopped = dict(run.timed_out)
    if run.halted:
        stopped[run.halted[0]] = run.halted[1]
    out = []
    for i, why in sorted(stopped.items()):
        if i not in planned:
            exercise = next((r.exercise for r in rows if r.cell > i), rows[-1].exercise)
            out.append(
                Row(
                    str(path),
                    exercise,
                    f"cell {i}",
                    "the cell runs to its end within the time limit",
                    "failed",
                    why,
                    i,
                )
            )
    return out


def grade(
    paths,
    *,
    json_path=None,
    timeout=None,
    write=None,
    hidden=None,
    out=None,
    err=None,
    sandbox: str = "none",
    jobs: int | None = None,
    notebook_timeout: float | None = None,
) -> int:
    """Grade several notebooks (or the exercise notebooks of a folder) into one table, `jobs`
    at a time (default: this machine's cores), each kernel in `sandbox` ("bwrap" or "none");
    0 when every check passed, else 1. `write(rows)`, if given, writes the rows in other
    formats (`labkit.learn.grade.formats`). Stopped (Ctrl-C, SIGTERM, SIGHUP), it raises
    `Interrupted`, whose sentence says which notebooks were graded and kept."""
    out, err = out or sys.stdout, err or sys.stderr
    notebooks = notebooks_in(paths)
    from ...store.outputs import check_command

    check_command({"json_path": json_path}, {"notebook": notebooks})
    jobs = check_jobs(jobs)
    if hidden is not None:
        hidden.refuse_unmatched(exercises_in(notebooks))
        hidden.define()
    preload()  # all the grader will run, imported before any kernel starts
    if sandbox == "none":
        err.write(f"labkit grade: {UNTRUSTED}.\n")
    tty = err.isatty() and jobs == 1 and len(notebooks) == 1

    def one(path):
        def progress(done, total):
            if tty:
                err.write(f"\rgrading {path.name}: cell {done}/{total}")
                err.flush()

        started = time.perf_counter()
        got = grade_notebook(
            path,
            timeout=timeout,
            progress=progress,
            hidden=hidden,
            sandbox=sandbox,
            notebook_timeout=notebook_timeout,
        )
        return got, time.perf_counter() - started

    by, unread, kept, not_kept, began = {}, [], [], None, time.monotonic()
    try:
        for path, result in pool.graded(notebooks, one, jobs):
            if isinstance(result, (Unreadable, KernelNotStarted)):  # a row; the others go on
                unread.append(result)
                by[path] = [_unreadable_row(path, result)]
                continue
            if isinstance(result, BaseException):
                raise result
            got, seconds = result
            with _signals_held():  # kept in the store and said as kept: both, or neither
                by[path] = got
                why = keep_grading(path, got)
                not_kept = not_kept or why
                if why is None:
                    kept.append(path)
            err.write(("\r" if tty else "") + _progress(path, got, seconds, by, notebooks, began))
    except KeyboardInterrupt:
        pool.stop()
        raise Interrupted(_interrupted(notebooks, by, kept)) from None
    rows = [r for path in notebooks for r in by[path]]
    if len(unread) == len(notebooks):
        raise unread[0]  # nothing was graded: one sentence, as for any bad input
    out.write(format_table(rows, hidden=hidden))
    if sandbox == "none":
        out.write(f"({UNTRUSTED})\n")
    if json_path:
        from ...store.outputs import write_json
        from .formats import grades_document

        doc = grades_document(rows, summary(rows), sandbox=sandbox)
        write_json(json_path, doc, parameter="json_path")
    if write is not None:
        write(rows)
    if not_kept:
        raise GradeError(
            f"The grades were not kept in the learner store ({not_kept}); the "
            "table and every report asked for were written."
        )
    return 0 if all(r.status == "passed" for r in rows) else 1


class Interrupted(KeyboardInterrupt):
    """Grading stopped by a signal; `said` tells which notebooks were graded and kept."""

    def __init__(self, said: str):
        super().__init__(said)
        self.said = said


def check_jobs(jobs) -> int:
    """`jobs`, checked (None: this machine's cores)."""
    from ...errors import check_number

    if jobs is None:
        return max(1, os.cpu_count() or 1)
    check_number("--jobs", jobs, minimum=1, maximum=MAX_JOBS, integer=True)
    return jobs


def _names(paths) -> str:
    names = [p.name for p in paths]
    return names[0] if len(names) == 1 else ", ".join(names[:-1]) + " and " + names[-1]


def _interrupted(notebooks, by, kept) -> str:
    """What a stopped grading kept, e.g. "A was graded and kept; B was not graded"."""
    parts = []
    lost = [p for p in notebooks if p in by and p not in kept]
    never = [p for p in notebooks if p not in by]
    for group, what in (
        (kept, "graded and kept"),
        (lost, "graded, not kept"),
        (never, "not graded"),
    ):
        if group:
            parts.append(f"{_names(group)} {'was' if len(group) == 1 else 'were'} {what}")
    return "; ".join(parts) + "; the notebooks were not changed"


def _progress(path, got, seconds, by, notebooks, began) -> str:
    """One line per notebook graded, with the count done, failures so far, time left."""
    passed = sum(r.status == "passed" for r in got)
    done = len(by)
    failing = sum(any(r.status != "passed" for r in rows) for rows in by.values())
    line = f"graded {path.name}: {passed}/{len(got)} checks passed in {seconds:.1f} s"
    if len(notebooks) > 1:
        left = (time.monotonic() - began) / done * (len(notebooks) - done)
        line += f" ({done}/{len(notebooks)} done, {failing} with a check not passed"
        line += f", about {_duration(left)} left)" if done < len(notebooks) else ")"
    return line + "\n"


def _duration(seconds: float) -> str:
    return f"{seconds:.0f} s" if seconds < 90 else f"{seconds / 60:.0f} min"


@contextmanager
def _signals_held():
    """Hold Ctrl-C, SIGTERM and SIGHUP back while the block runs (in the main thread, where
    Python runs signal handlers), then stop as they would have."""
    if threading.current_thread() is not threading.main_thread():
        yield
        return
    pending = []
    held = (signal.SIGINT, signal.SIGTERM, signal.SIGHUP)
    previous = {s: signal.signal(s, lambda signum, frame: pending.append(signum)) for s in held}
    try:
        yield
    finally:
        for s, handler in previous.items():
            signal.signal(s, handler)
        if pending:
            raise KeyboardInterrupt


def preload() -> None:
    """Import every module the grader runs after kernels start (the checks, the answers'
    classes, the reports), so a module changed on disk by a kernel is never read by it."""
    import importlib

    for name in PRELOAD:
        importlib.import_module(name, __package__)


PRELOAD = (
    "labkit.learn.check",
    "labkit.learn.check._predict",
    "labkit.learn.curves.quiz",
    "labkit.core.run",
    "labkit.diagnosis.probes._common",
    "labkit.diagnosis.record.triage",
    "labkit.forecast.forecast",
    "labkit.store.learner",
    "labkit.store.outputs",
    "labkit.learn.grade.formats",
    "labkit.learn.grade.verdict",
    "labkit.learn.grade.sandbox",
    "IPython.core.inputtransformer2",
    "nbclient",
    "jupyter_client.manager",
    "numpy",
    "torch",
)
MAX_JOBS = 512  # threads, each waiting on one kernel; far beyond any machine's cores


def _unreadable_row(path: Path, exc: Exception) -> Row:
    return Row(
        str(path),
        exercise_of(path.stem) if path.stem.startswith(("ex_", "lab15")) else path.stem,
        "notebook",
        "the notebook can be read as an exercise",
        "failed",
        f"could not be {'read' if isinstance(exc, Unreadable) else 'graded'}: {exc}",
        -1,
    )
