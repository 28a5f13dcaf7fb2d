"""Where a cell hands its answers over: each answer check's call site, rewritten.

``print(ex_a_transfer(groups, reason, deeper))`` runs in the grader's kernel as
``print(__labkit_answer__(7, 'ex_a_transfer', 0, ex_a_transfer)(groups, reason, deeper))``:
the same arguments, evaluated once, written down by the hand-over (`grade_handover`) as
answer 0 of ``ex_a_transfer`` in cell 7, then given to the check as before. A hidden check's
call is handed over the same way with no check after it: the hidden check is the grader's.
Only the callee is replaced; the learner's arguments run as written.
"""

from __future__ import annotations

import ast

NAME = "__labkit_answer__"  # what the hand-over defines in the kernel


def python_of(source: str) -> str | None:
    """The cell as plain Python (IPython's magics turned into calls), or None if it is not."""
    try:
        ast.parse(source)
        return source
    except SyntaxError:
        pass
    try:
        from IPython.core.inputtransformer2 import TransformerManager

        python = TransformerManager().transform_cell(source)
        ast.parse(python)
        return python
    except (SyntaxError, ImportError, ValueError):
        return None


def call_sites(python: str, names) -> list[tuple[ast.expr, str]]:
    """(callee node, check name) of each call of a check in `python`, in order of appearance."""
    calls = [n for n in ast.walk(ast.parse(python)) if isinstance(n, ast.Call)]
    out = []
    for call in sorted(calls, key=lambda c: (c.lineno, c.col_offset)):
        f = call.func
        name = f.id if isinstance(f, ast.Name) else f.attr if isinstance(f, ast.Attribute) else None
        if name in names:
            out.append((f, name))
    return out


def hand_over(source: str, cell: int, names, data_only=()) -> str | None:
    """`source` with every call of a check in `names` handing its answer over first; the
    callee of a name in `data_only` is dropped (its check runs in the grader alone). None
    when the cell is not Python, so nothing in it can be handed over."""
    python = python_of(source)
    if python is None:
        return None
    raw = python.encode()  # ast's offsets count UTF-8 bytes
    starts = [0]
    for line in raw.splitlines(keepends=True):
        starts.append(starts[-1] + len(line))
    seen: dict[str, int] = {}
    edits = []
    for node, name in call_sites(python, names):
        j = seen[name] = seen.get(name, -1) + 1
        a = starts[node.lineno - 1] + node.col_offset
        b = starts[node.end_lineno - 1] + node.end_col_offset
        check = "None" if name in data_only else raw[a:b].decode()
        edits.append((a, b, f"{NAME}({cell}, {name!r}, {j}, {check})".encode()))
    for a, b, text in reversed(edits):
        raw = raw[:a] + text + raw[b:]
    return raw.decode()


def occurrence(plan, at: int) -> int:
    """Which call of its check (0, 1, ...) the plan's entry `at` is, within its own cell."""
    cell, name = plan[at]
    return sum(1 for c, n in plan[:at] if (c, n) == (cell, name))
