"""`labkit grade`: run exercise notebooks to the end and report every answer check.

A notebook is executed cell by cell with nbclient, going on past a failing cell, so a
stub left as it is or a wrong answer never hides the checks after it. Each call of a
`labkit.check` function in the notebook's source is one row:

    passed            the check ran and accepted the answer;
    failed            the check ran and refused it (its teaching sentence is the message),
                      or the learner's own code raised before the check could run;
    not yet answered  the answer was never written: the check's cell stopped on a name
                      that a stub still leaves undefined, or on the stub itself.

Each row belongs to the cell that ran its check. A cell over the time limit (`timeout`,
``--timeout``) or a kernel that dies gives rows that say so, and grading goes on
(`labkit.learn.grade_run`). A folder stands for the exercise notebooks in it.

The kernel runs with its own empty $LABKIT_HOME, so grading never adds to the learner's
forecast history. A notebook with no answer check is not an exercise: `GradeError`.
"""

from __future__ import annotations

import ast
import sys
import time
from dataclasses import asdict, dataclass
from pathlib import Path

from .grade_formats import STATUSES, format_table, summary  # noqa: F401 (the table is a format too)
from .grade_run import DEFAULT_TIMEOUT_S, STUBS, GradeError, execute

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


def check_names() -> dict[str, str]:
    """name -> first docstring line of every public answer check."""
    from . import check
    out = {}
    for name in check.__all__:
        fn = getattr(check, name)
        if getattr(fn, "is_answer_check", False):
            out[name] = (fn.__doc__ or "").strip().splitlines()[0]
    return out


def checks_in(source: str, names) -> list[str]:
    """The answer checks a cell's source calls, in order of appearance."""
    try:
        tree = ast.parse(source)
    except SyntaxError:  # IPython magics or a learner's typo: fall back to the plain text
        return [n for n in names if f"{n}(" in source]
    calls = [node for node in ast.walk(tree) if isinstance(node, ast.Call)]
    called = []
    for call in sorted(calls, key=lambda c: (c.lineno, c.col_offset)):
        f = call.func
        name = f.id if isinstance(f, ast.Name) else f.attr if isinstance(f, ast.Attribute) else None
        if name in names:
            called.append(name)
    return called


def _read_notebook(path: Path):
    import nbformat
    if path.is_dir():
        raise GradeError(f"notebook={str(path)!r} is a folder; `labkit grade` wants notebook "
                         "files (.ipynb), or a folder that holds exercise notebooks.")
    if not path.is_file():
        raise GradeError(f"notebook={str(path)!r} does not exist; pass the path of an exercise "
                         "notebook, e.g. exercises/ex_a_break_the_graph.ipynb.")
    try:
        nb = nbformat.read(path, as_version=4)
    except Exception as exc:  # nbformat raises several kinds for a file that is not a notebook
        raise GradeError(f"notebook={str(path)!r} is not a readable Jupyter notebook "
                         f"({type(exc).__name__}).") from None
    for i, cell in enumerate(nb.get("cells") or []):
        source = cell.get("source")
        if isinstance(source, list) and all(isinstance(x, str) for x in source):
            cell["source"] = "".join(source)
        elif not isinstance(source, str) or not isinstance(cell.get("cell_type"), str):
            raise GradeError(f"notebook={str(path)!r} is damaged: cell {i}'s source is "
                             f"{type(source).__name__}, not text; open it in Jupyter and save "
                             "it again, or restore it from the exercises folder.")
    return nb


def notebooks_in(paths) -> list[Path]:
    """The notebooks to grade: files as given, and the exercise notebooks of each folder."""
    out = []
    for path in map(Path, paths):
        if not path.is_dir():
            out.append(path)
            continue
        found = [p for p in sorted(path.glob("*.ipynb")) if _is_exercise(p)]
        if not found:
            raise GradeError(f"notebook={str(path)!r} is a folder with no exercise notebook in "
                             "it (a .ipynb file that calls a check from labkit.check); pass "
                             "notebook files, e.g. exercises/ex_a_break_the_graph.ipynb.")
        out += found
    return out


def _is_exercise(path: Path) -> bool:
    try:
        nb = _read_notebook(path)
    except GradeError:
        return True  # graded, so that its row says what is wrong with it
    names = check_names()
    return any(checks_in(c.source, names) for c in nb.cells if c.cell_type == "code")


def grade_notebook(path, *, timeout: float | None = None, progress=None, hidden=None) -> list[Row]:
    """Execute the notebook at `path` (it is not modified) and return one Row per check call;
    each cell runs under `timeout` seconds (default `grade_run.DEFAULT_TIMEOUT_S`).
    `hidden`: the instructor's hidden checks (`labkit.learn.hidden`), run after the last cell."""
    import nbformat
    from ..errors import check_number
    timeout = DEFAULT_TIMEOUT_S if timeout is None else timeout
    check_number("timeout", timeout, minimum=0, strict_min=True)
    path = Path(path)
    nb = _read_notebook(path)
    names = {**check_names(), **(hidden.questions if hidden else {})}
    plan = [(i, n) for i, c in enumerate(nb.cells) if c.cell_type == "code"
            for n in checks_in(c.source, names)]
    if hidden is not None and plan:
        nb.cells += [nbformat.v4.new_code_cell(s) for s in hidden.cells_for(n for _, n in plan)]
        plan = [(i, n) for i, c in enumerate(nb.cells) if c.cell_type == "code"
                for n in checks_in(c.source, names)]
    if not plan:
        raise GradeError(f"{path.name} is not a labkit exercise: none of its cells calls an "
                         "answer check from labkit.check.")
    run = execute(path, nb, {i for i, _ in plan}, timeout=timeout, progress=progress)
    return _rows(path, plan, run, names)


def _error_of(cell) -> dict | None:
    return next((o for o in cell.get("outputs", []) if o.get("output_type") == "error"), None)


def _rows(path, plan, run, names) -> list[Row]:
    """One row per planned check call, from the outcomes recorded while its own cell ran."""
    nb, rows = run.nb, []
    left = {i: list(got) for i, got in run.outcomes.items()}
    unsealed = [j for j, c in enumerate(nb.cells) if (_error_of(c) or {}).get("ename") == "SketchNotSealed"]
    for i, name in plan:
        exercise = name.split("_")[0] if name.startswith("lab15") else "_".join(name.split("_")[:2])
        got = next((o for o in left.get(i, []) if o["check"] == name), None)
        err = _error_of(nb.cells[i])
        if got is not None:
            left[i].remove(got)
            status, message = got["status"], got["message"]
        elif run.halted and i >= run.halted[0]:
            status = "failed"
            message = (run.halted[1] if i == run.halted[0] else
                       f"not graded: {run.halted[1]}, before this check's cell ran")
        elif i in run.timed_out:
            status, message = "failed", run.timed_out[i]
        elif err is None:
            status, message = "failed", "the check was never called: its cell ran without it"
        elif err["ename"] == "SketchNotSealed":
            status, message = "not yet answered", "draw and seal the forecast sketch first"
        elif err["ename"] == "PredictionNotGiven":
            status, message = "not yet answered", "answer the prediction form and seal it first"
        elif err["ename"] in NOT_ANSWERED and (run.stub_before.get(i) or err["ename"] != "NameError"
                                               or (unsealed and unsealed[0] < i)):
            status, message = "not yet answered", "write your answer in the cell above"
        else:
            status = "failed"
            message = f"your code raised {err['ename']} before the check ran: {err['evalue']}"
        rows.append(Row(str(path), exercise, name, names[name], status, message, i))
    return sorted(rows + _stopped_rows(path, plan, run, rows), key=lambda r: r.cell)


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
            out.append(Row(str(path), exercise, f"cell {i}", "the cell runs to its end within "
                           "the time limit", "failed", why, i))
    return out


def grade(paths, *, json_path=None, timeout=None, write=None, hidden=None, out=None,
          err=None) -> int:
    """Grade several notebooks (or the exercise notebooks of a folder) into one table;
    0 when every check passed, else 1. `write(rows)`, if given, writes the rows in other
    formats (`labkit.learn.grade_formats`)."""
    out, err = out or sys.stdout, err or sys.stderr
    rows: list[Row] = []
    notebooks = notebooks_in(paths)
    from ..store.outputs import check_command
    check_command({"json_path": json_path}, {"notebook": notebooks})
    for path in notebooks:
        started = time.perf_counter()
        tty = err.isatty()

        def progress(done, total, name=path.name):
            if tty:
                err.write(f"\rgrading {name}: cell {done}/{total}")
                err.flush()
        got = grade_notebook(path, timeout=timeout, progress=progress, hidden=hidden)
        rows += got
        _keep(path, got)
        passed = sum(r.status == "passed" for r in got)
        err.write(("\r" if tty else "") + f"graded {path.name}: {passed}/{len(got)} checks "
                  f"passed in {time.perf_counter() - started:.1f} s\n")
    out.write(format_table(rows))
    if json_path:
        from ..store.outputs import write_json
        from .grade_formats import grades_document
        write_json(json_path, grades_document(rows, summary(rows)), parameter="json_path")
    if write is not None:
        write(rows)
    return 0 if all(r.status == "passed" for r in rows) else 1


def _keep(path: Path, rows) -> None:
    """Add this grading to the learner store (kind "grade"); a grade is never replaced, each
    run of `labkit grade` adds one record per notebook."""
    import uuid
    from ..store.learner import default_store
    body = {"notebook": str(path.resolve()), "graded_at": time.time(),
            "rows": [asdict(r) for r in rows], "summary": summary(rows)}
    default_store().add("grade", f"{path.stem}/{uuid.uuid4().hex}", body)
