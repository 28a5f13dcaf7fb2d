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

`labkit grade NOTEBOOK --hidden instructor/hidden` runs the file as one more cell at the end
of every notebook whose checks belong to the same exercise (the name's prefix, ``ex_a``),
in the learner's kernel, so it reads the learner's variables. Each call is a row like any
other; its points are set beside it; Gradescope shows it ``after_published`` by default.
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

    sources: dict[str, list[str]] = field(default_factory=dict)  # exercise -> cell sources
    questions: dict[str, str] = field(default_factory=dict)  # check -> first docstring line
    points: dict[str, int] = field(default_factory=dict)  # check -> points
    files: list[Path] = field(default_factory=list)  # the .py files they were read from

    def refuse_unmatched(self, exercises) -> None:
        """Refuse hidden checks of which none belongs to one of `exercises` (those graded)."""
        if self.sources and not set(self.sources) & set(exercises):
            raise ValueError(f"--hidden holds checks for {', '.join(sorted(self.sources))}, and "
                             "none of the notebooks to grade is that exercise (they are "
                             f"{', '.join(sorted(exercises)) or 'none'}), so no hidden check "
                             "would run; nothing was graded.")

    def cells_for(self, checks) -> list[str]:
        """The hidden cells for a notebook that calls `checks`."""
        exercises = dict.fromkeys(exercise_of(c) for c in checks)
        return [src for ex in exercises for src in self.sources.get(ex, [])]


def read_hidden(path) -> Hidden:
    """Every ``*.py`` file at `path` (a file or a folder), each defining hidden checks."""
    path = Path(path)
    files = sorted(path.glob("*.py")) if path.is_dir() else [path]
    if not path.exists() or not files:
        raise ValueError(f"--hidden={str(path)!r} holds no hidden checks: give a .py file, or a "
                         "folder of them, each defining checks with @answer_check.")
    from ..store import read_text
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
                    out.questions[node.name] = (ast.get_docstring(node) or node.name).splitlines()[0]
        if not found:
            raise ValueError(f"hidden checks {file.name} defines no function decorated with "
                             "@answer_check.")
        exercises = {exercise_of(n) for n in found}
        if len(exercises) != 1:
            raise ValueError(f"hidden checks {file.name} mixes exercises {sorted(exercises)}; keep "
                             "one exercise per file, names starting with its id (ex_a_...).")
        out.sources.setdefault(exercises.pop(), []).append(source)
    return out
