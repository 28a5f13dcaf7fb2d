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

import dataclasses
import threading
from dataclasses import dataclass, field
from pathlib import Path

from .missing import missing
from .formats import STATUSES, format_table, summary  # noqa: F401 (the table is a format too)
from .read import (  # noqa: F401
    Unreadable,
    check_names,
    checks_in,
    notebooks_in,
    parameters_of,
    read_notebook,
    seed_of,
)
from .run import DEFAULT_TIMEOUT_S, STUBS, GradeError, check_timeout, execute  # noqa: F401
from ..check._predict import replaying
from .sites import hand_over, occurrence
from . import batch
from .batch import Interrupted, check_jobs, preload  # noqa: F401
from .verdict import verdict
from .hidden import exercise_of
from .manual import prose_of

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
    prose: dict = field(default_factory=dict)  # part -> the learner's prose, for a person
    manual: dict | None = None  # {"points", "max_points"} a person gave (`grade.manual`)


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
    notebook = dataclasses.replace(parameters_of(nb), heard=run.heard)
    return _rows(path, plan, run, names, hidden, sandbox, notebook)


def _error_of(cell) -> dict | None:
    return next((o for o in cell.get("outputs", []) if o.get("output_type") == "error"), None)


def _rows(path, plan, run, names, hidden, sandbox="none", notebook=None) -> list[Row]:
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
            key = (i, name, occurrence(plan, at))
            text = run.answers.get(key)
            got = verdict(check, name, text, sandbox, notebook, run.received.get(key))
            rows.append(_row(path, i, name, names, got, run, unsealed))
            rows[-1].prose = prose_of(check, text)
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
        status = "not yet answered"  # the hint names what is missing: the seal, the answer
        message = missing(run.nb.cells, i, err) or "write your answer in the cell above"
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


def grade(paths, **options) -> int:
    """Grade notebooks, or the exercise notebooks of folders, into one table and the reports
    asked for: `labkit.learn.grade.batch.grade` (its options) with `grade_notebook`."""
    return batch.grade(paths, grade_notebook, _unreadable_row, **options)


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
