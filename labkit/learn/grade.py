"""`labkit grade`: run exercise notebooks to the end and report every answer check.

A notebook is executed cell by cell with nbclient, going on past a failing cell, so a
stub left as it is or a wrong answer never hides the checks after it. Each call of a
`labkit.check` function in the notebook's source is one row:

    passed            the check ran and accepted the answer;
    failed            the check ran and refused it (its teaching sentence is the message),
                      or the learner's own code raised before the check could run;
    not yet answered  the answer was never written: the check's cell stopped on a name
                      that a stub still leaves undefined, or on the stub itself.

The kernel runs with its own empty $LABKIT_HOME, so grading never adds to the learner's
forecast history. A notebook with no answer check is not an exercise: `GradeError`.
"""

from __future__ import annotations

import ast
import json
import os
import sys
import tempfile
import time
from dataclasses import asdict, dataclass
from pathlib import Path

STATUSES = ("passed", "failed", "not yet answered")
NOT_ANSWERED = ("NameError", "NotImplementedError", "SketchNotSealed")
_READ = ("import json as _j\nfrom labkit.learn.check import _base as _b\n"
         "print(_j.dumps(_b.OUTCOMES))")


class GradeError(ValueError):
    """A notebook that cannot be graded: missing, unreadable, or not a labkit exercise."""


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
    if not path.is_file():
        raise GradeError(f"notebook={str(path)!r} does not exist; pass the path of an exercise "
                         "notebook, e.g. exercises/ex_a_break_the_graph.ipynb.")
    try:
        return nbformat.read(path, as_version=4)
    except Exception as exc:  # nbformat raises several kinds for a file that is not a notebook
        raise GradeError(f"notebook={str(path)!r} is not a readable Jupyter notebook "
                         f"({type(exc).__name__}).") from None


def _error_of(cell) -> dict | None:
    return next((o for o in cell.get("outputs", []) if o.get("output_type") == "error"), None)


def grade_notebook(path, *, timeout: int = 300, progress=None, hidden=None) -> list[Row]:
    """Execute the notebook at `path` (it is not modified) and return one Row per check call.
    `hidden`: the instructor's hidden checks (`labkit.learn.hidden`), run after the last cell."""
    import nbformat
    from nbclient import NotebookClient
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
    code_cells = [i for i, c in enumerate(nb.cells) if c.cell_type == "code"]
    client = NotebookClient(nb, timeout=timeout, kernel_name="python3", allow_errors=True,
                            extra_arguments=["--IPKernelApp.log_level=ERROR"],
                            resources={"metadata": {"path": str(path.parent.resolve())}})
    home = tempfile.mkdtemp(prefix="labkit-grade-")
    env = {**os.environ, "LABKIT_HOME": home}
    from ..forecast.carry import ENV, sketches_in
    drawn = sketches_in(nb)  # sketches the learner sealed by hand, kept in the saved outputs
    if drawn:
        handed = os.path.join(home, "sketches.json")
        with open(handed, "w") as f:
            json.dump(drawn, f)
        env[ENV] = handed
    stub_seen = False
    first_stub = {}
    with client.setup_kernel(env=env):
        for done, i in enumerate(code_cells, 1):
            client.execute_cell(nb.cells[i], i)
            err = _error_of(nb.cells[i])
            if err and err["ename"] == "NotImplementedError":
                stub_seen = True
            first_stub[i] = stub_seen
            if progress:
                progress(done, len(code_cells))
        reader = nbformat.v4.new_code_cell(_READ)
        nb.cells.append(reader)  # run after the notebook, never saved: it reads OUTCOMES
        client.execute_cell(reader, len(nb.cells) - 1)
        nb.cells.pop()
    outcomes = json.loads("".join(o.get("text", "") for o in reader.outputs
                                  if o.get("output_type") == "stream") or "[]")
    return _rows(path, nb, plan, outcomes, names, first_stub)


def _rows(path, nb, plan, outcomes, names, stub_before) -> list[Row]:
    remaining = list(outcomes)
    rows = []
    unsealed = [j for j, c in enumerate(nb.cells) if (_error_of(c) or {}).get("ename") == "SketchNotSealed"]
    for i, name in plan:
        exercise = name.split("_")[0] if name.startswith("lab15") else "_".join(name.split("_")[:2])
        got = next((o for o in remaining if o["check"] == name), None)
        if got is not None:
            remaining.remove(got)
            status, message = got["status"], got["message"]
        else:
            err = _error_of(nb.cells[i])
            if err is None:
                status, message = "failed", "the check was never called: its cell ran without it"
            elif err["ename"] == "SketchNotSealed":
                status, message = "not yet answered", "draw and seal the forecast sketch first"
            elif err["ename"] in NOT_ANSWERED and (stub_before[i] or err["ename"] != "NameError"
                                                   or (unsealed and unsealed[0] < i)):
                status, message = "not yet answered", "write your answer in the cell above"
            else:
                status = "failed"
                message = f"your code raised {err['ename']} before the check ran: {err['evalue']}"
        rows.append(Row(str(path), exercise, name, names[name], status, message, i))
    return rows


def grade(paths, *, json_path=None, write=None, hidden=None, out=None, err=None) -> int:
    """Grade several notebooks into one table; 0 when every check passed, else 1.
    `write(rows)`, if given, writes the rows in other formats (`labkit.learn.grade_formats`)."""
    out, err = out or sys.stdout, err or sys.stderr
    rows: list[Row] = []
    for path in map(Path, paths):
        started = time.perf_counter()
        tty = err.isatty()

        def progress(done, total, name=path.name):
            if tty:
                err.write(f"\rgrading {name}: cell {done}/{total}")
                err.flush()
        got = grade_notebook(path, progress=progress, hidden=hidden)
        rows += got
        _keep(path, got)
        passed = sum(r.status == "passed" for r in got)
        err.write(("\r" if tty else "") + f"graded {path.name}: {passed}/{len(got)} checks "
                  f"passed in {time.perf_counter() - started:.1f} s\n")
    out.write(format_table(rows))
    if json_path:
        from ..store import atomic_write_json
        from .grade_formats import grades_document
        atomic_write_json(json_path, grades_document(rows, summary(rows)), backup=False)
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


def summary(rows) -> dict:
    per = {}
    for r in rows:
        per.setdefault(r.exercise, {s: 0 for s in STATUSES})[r.status] += 1
    return {"exercises": per, "total": {s: sum(r.status == s for r in rows) for s in STATUSES}}


def format_table(rows, width: int = 100) -> str:
    """One line per check, the sentence wrapped under it; a summary per exercise; a total."""
    import textwrap
    lines = []
    for nb in dict.fromkeys(r.notebook for r in rows):
        lines.append(nb)
        for r in (r for r in rows if r.notebook == nb):
            lines += textwrap.wrap(f"{r.check}: {r.question}", width, initial_indent=
                                   f"  {r.status:16s}  ", subsequent_indent=" " * 20)
            if r.status != "passed":
                lines += textwrap.wrap(r.message, width, initial_indent=" " * 20 + "> ",
                                       subsequent_indent=" " * 22)
    s = summary(rows)
    lines.append("")
    for ex, counts in s["exercises"].items():
        n = sum(counts.values())
        lines.append(f"{ex}: {counts['passed']}/{n} passed, {counts['failed']} failed, "
                     f"{counts['not yet answered']} not yet answered")
    t = s["total"]
    lines.append(f"TOTAL: {t['passed']} passed, {t['failed']} failed, {t['not yet answered']} "
                 f"not yet answered, in {len(s['exercises'])} exercise(s)")
    return "\n".join(lines) + "\n"
