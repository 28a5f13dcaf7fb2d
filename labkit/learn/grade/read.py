"""Which notebooks `labkit grade` grades, read safely: a folder stands for its exercise
notebooks, a notebook given twice is graded once, and one that cannot be read as an exercise
raises `Unreadable`, which grading turns into a row of its own."""

from __future__ import annotations

import ast
from pathlib import Path

from .run import GradeError
from .hidden import exercise_of


class Unreadable(GradeError):
    """A notebook that cannot be graded as an exercise; among others, it becomes a row."""


def check_names() -> dict[str, str]:
    """name -> first docstring line of every public answer check."""
    from .. import check

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


def read_notebook(path: Path):
    import nbformat

    if path.is_dir():
        raise GradeError(
            f"notebook={str(path)!r} is a folder; `labkit grade` wants notebook "
            "files (.ipynb), or a folder that holds exercise notebooks."
        )
    if not path.is_file():
        raise GradeError(
            f"notebook={str(path)!r} does not exist; pass the path of an exercise "
            "notebook, e.g. exercises/ex_a_break_the_graph.ipynb."
        )
    try:
        nb = nbformat.read(path, as_version=4)
    except Exception as exc:  # noqa: BLE001 (named below) nbformat raises several kinds for a file that is not a notebook
        raise Unreadable(
            f"notebook={str(path)!r} is not a readable Jupyter notebook ({type(exc).__name__})."
        ) from None
    for i, cell in enumerate(nb.get("cells") or []):
        source = cell.get("source")
        if isinstance(source, list) and all(isinstance(x, str) for x in source):
            cell["source"] = "".join(source)
        elif not isinstance(source, str) or not isinstance(cell.get("cell_type"), str):
            raise Unreadable(
                f"notebook={str(path)!r} is damaged: cell {i}'s source is "
                f"{type(source).__name__}, not text; open it in Jupyter and save "
                "it again, or restore it from the exercises folder."
            )
    return nb


def notebooks_in(paths) -> list[Path]:
    """The notebooks to grade: files as given, and the exercise notebooks of each folder."""
    out = []
    for path in map(Path, paths):
        if not path.exists():
            raise GradeError(
                f"notebook={str(path)!r} does not exist; pass the path of an "
                "exercise notebook, e.g. exercises/ex_a_break_the_graph.ipynb."
            )
        if not path.is_dir():
            if path not in out:  # a notebook given twice is graded once
                out.append(path)
            continue
        found = [p for p in sorted(path.glob("*.ipynb")) if _is_exercise(p)]
        if not found:
            raise GradeError(
                f"notebook={str(path)!r} is a folder with no exercise notebook in "
                "it (a .ipynb file that calls a check from labkit.check); pass "
                "notebook files, e.g. exercises/ex_a_break_the_graph.ipynb."
            )
        out += found
    return out


def _is_exercise(path: Path) -> bool:
    try:
        nb = read_notebook(path)
    except GradeError:
        return True  # graded, so that its row says what is wrong with it
    names = check_names()
    return any(checks_in(c.source, names) for c in nb.cells if c.cell_type == "code")


def exercises_in(notebooks) -> set[str]:
    """The exercises the readable `notebooks` check answers of."""
    names, found = check_names(), set()
    for path in notebooks:
        try:
            found |= {
                exercise_of(n)
                for c in read_notebook(path).cells
                if c.cell_type == "code"
                for n in checks_in(c.source, names)
            }
        except GradeError:
            pass
    return found


SEED_RANGE = (0, 2**31 - 1)  # what torch.manual_seed and the exercises' data take


def _whole(v) -> bool:
    return type(v) is int and SEED_RANGE[0] <= v <= SEED_RANGE[1]


PARAMETERS = {  # what the grader makes data from, by name: whether a value is one it takes
    "seed": _whole,
    "draw_seed": _whole,  # Lab 15's, when its mystery is "random"
    "dropout": lambda v: type(v) in (int, float) and 0 <= v < 1,  # Exercise D's
    "mystery": lambda v: type(v) is str,  # Lab 15's: "A" to "D", or "random"
}


def parameters_of(nb):
    """The parameters the notebook runs with (a `labkit.learn.check.ex.made.Notebook`): the
    last ``NAME = literal`` of each name in `PARAMETERS` in its parameters cells (papermill's
    injected one included), else the notebooks' defaults. The grader makes the exercise's data
    again from them (`labkit.learn.grade.truth.given`)."""
    from ..check.ex.made import Notebook

    found = {}
    for cell in nb.cells:
        tags = cell.get("metadata", {}).get("tags", [])
        if cell.cell_type != "code" or not {"parameters", "injected-parameters"} & set(tags):
            continue
        try:
            tree = ast.parse(cell.source)
        except SyntaxError:
            continue
        for node in tree.body:
            names = [getattr(t, "id", None) for t in getattr(node, "targets", ())]
            value = getattr(getattr(node, "value", None), "value", None)
            if (
                isinstance(node, ast.Assign)
                and len(names) == 1
                and names[0] in PARAMETERS
                and isinstance(node.value, ast.Constant)
                and PARAMETERS[names[0]](value)
            ):
                found[names[0]] = value
    mystery = found.get("mystery", Notebook.mystery)
    if mystery == "random":  # as the notebook draws it: labkit.diagnosis.lab15.draw(draw_seed)
        mystery = f"random-{found.get('draw_seed', 0)}"
    seed, dropout = found.get("seed", Notebook.seed), found.get("dropout", Notebook.dropout)
    return Notebook(seed=seed, dropout=float(dropout), mystery=mystery)


def seed_of(nb) -> int:
    """The seed the notebook runs with (`parameters_of`), else the exercises' 0."""
    return parameters_of(nb).seed
