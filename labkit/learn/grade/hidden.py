"""Hidden checks: answer checks an instructor keeps out of the learners' repository.

A hidden check is a plain Python file, kept in the instructor's own tree (never in the
exercises learners fork), e.g. ``instructor/hidden/ex_a.py``:

    from labkit.learn.check._base import CheckFailed, answer_check

    @answer_check(points=2)
    def ex_a_hidden_transfer(groups):
        \"\"\"The deeper model's null groups, answered without the hint.\"\"\"
        if set(groups) != {"backbone.0"}:
            raise CheckFailed("...")
        return "right"

    ex_a_hidden_transfer(deeper_null_groups)    # names the learner's notebook defined

`labkit grade NOTEBOOK --hidden instructor/hidden` grades every notebook whose checks belong
to the same exercise (the name's prefix, ``ex_a``) with them. The file never reaches the
learner's kernel: its top-level calls' arguments (``steps_to_2``, the learner's own names)
are evaluated there, after the last cell, and handed over as data; the file's definitions
run in the grader's process, and its checks judge that data there. Each call is a row like
any other; its points are set beside it; Gradescope shows it ``after_published`` by default.
"""

from __future__ import annotations

import ast
from dataclasses import dataclass, field
from pathlib import Path


def exercise_of(check: str) -> str:
    """``ex_a_hidden_transfer`` -> ``ex_a``; ``lab15_record`` -> ``lab15``."""
    return check.split("_")[0] if check.startswith("lab15") else "_".join(check.split("_")[:2])


def _points(decorator) -> int | None:
    """1 for ``@answer_check``, N for ``@answer_check(points=N)``; None if not a check."""
    name = decorator.func if isinstance(decorator, ast.Call) else decorator
    name = name.id if isinstance(name, ast.Name) else getattr(name, "attr", None)
    if name != "answer_check":
        return None
    for kw in getattr(decorator, "keywords", []):
        if kw.arg == "points" and isinstance(kw.value, ast.Constant):
            return kw.value.value
    return 1


@dataclass
class Hidden:
    """The hidden checks of one file or folder: their sources, questions and points."""

    sources: dict[str, list[str]] = field(default_factory=dict)  # exercise -> the calls, as
    # the source of one cell per file: all that is handed to the learner's kernel
    checks: dict = field(default_factory=dict)  # check -> the function, defined in the grader
    # by `define`
    modules: list = field(default_factory=list)  # (file, module without its calls, checks)
    questions: dict[str, str] = field(default_factory=dict)  # check -> first docstring line
    points: dict[str, int] = field(default_factory=dict)  # check -> points
    files: list[Path] = field(default_factory=list)  # the .py files they were read from

    def refuse_unmatched(self, exercises) -> None:
        """Refuse hidden checks of which none belongs to one of `exercises` (those graded)."""
        if self.sources and not set(self.sources) & set(exercises):
            raise ValueError(
                f"--hidden holds checks for {', '.join(sorted(self.sources))}, and "
                "none of the notebooks to grade is that exercise (they are "
                f"{', '.join(sorted(exercises)) or 'none'}), so no hidden check "
                "would run; nothing was graded."
            )

    def define(self) -> None:
        """Run each file, its calls left out, in the grader's process: fills `checks`."""
        for file, module, names in self.modules:
            if not set(names) <= set(self.checks):
                self.checks.update(_define(file, module, names))

    def cells_for(self, checks) -> list[str]:
        """The hidden cells (the calls alone) for a notebook that calls `checks`."""
        exercises = dict.fromkeys(exercise_of(c) for c in checks)
        return [src for ex in exercises for src in self.sources.get(ex, [])]


def read_hidden(path) -> Hidden:
    """Every ``*.py`` file at `path` (a file or a folder), each defining hidden checks."""
    path = Path(path)
    files = sorted(path.glob("*.py")) if path.is_dir() else [path]
    if not path.exists() or not files:
        raise ValueError(
            f"--hidden={str(path)!r} holds no hidden checks: give a .py file, or a "
            "folder of them, each defining checks with @answer_check."
        )
    from ...store import read_text

    out = Hidden(files=files)
    for file in files:
        source = read_text(file, what="hidden checks file")
        try:
            tree = ast.parse(source)
        except SyntaxError as exc:
            raise ValueError(f"hidden checks {file.name} line {exc.lineno}: {exc.msg}.") from None
        found = []
        for node in tree.body:
            if isinstance(node, ast.FunctionDef):
                pts = next((p for p in map(_points, node.decorator_list) if p is not None), None)
                if pts is not None:
                    found.append(node.name)
                    out.points[node.name] = pts
                    out.questions[node.name] = (ast.get_docstring(node) or node.name).splitlines()[
                        0
                    ]
        if not found:
            raise ValueError(
                f"hidden checks {file.name} defines no function decorated with @answer_check."
            )
        exercises = {exercise_of(n) for n in found}
        if len(exercises) != 1:
            raise ValueError(
                f"hidden checks {file.name} mixes exercises {sorted(exercises)}; keep "
                "one exercise per file, names starting with its id (ex_a_...)."
            )
        calls, rest = _split(tree, source, set(found))
        out.sources.setdefault(exercises.pop(), []).append(calls)
        out.modules.append((file, rest, found))
    return out


def _split(tree, source: str, checks: set) -> tuple[str, ast.Module]:
    """The top-level calls of `checks` (their source, one per line) and the module without
    the statements that make them."""
    calls, rest = [], []
    for node in tree.body:
        found = [
            n
            for n in ast.walk(node)
            if isinstance(n, ast.Call)
            and getattr(n.func, "id", getattr(n.func, "attr", None)) in checks
        ]
        if not found or isinstance(node, (ast.FunctionDef, ast.ClassDef)):
            rest.append(node)
            continue
        inner = {id(n) for d in found for n in ast.walk(d) if n is not d}
        calls += [ast.get_source_segment(source, c) for c in found if id(c) not in inner]
    return "".join(f"{c}\n" for c in calls), ast.Module(body=rest, type_ignores=[])


def _define(file: Path, module: ast.Module, names: list) -> dict:
    """Run the hidden file, its calls left out, in the grader's process: its checks by name."""
    namespace: dict = {"__name__": f"labkit_hidden_{file.stem}"}
    try:
        exec(compile(module, str(file), "exec"), namespace)  # noqa: S102 -- the instructor's file
    except Exception as exc:  # noqa: BLE001 -- any error in the file is said in one sentence
        why = (
            "only the checks' calls are evaluated in the learner's kernel, so use the "
            "learner's names as the calls' arguments alone"
            if isinstance(exc, NameError)
            else "it must run as a plain Python module with labkit installed"
        )
        raise ValueError(
            f"hidden checks {file.name} do not run in the grader "
            f"({type(exc).__name__}: {str(exc)[:120]}); {why}."
        ) from None
    return {n: namespace[n] for n in names}
