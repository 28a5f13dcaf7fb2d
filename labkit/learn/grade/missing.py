"""What a check's cell is missing, when it stopped on a name that was never made.

A check cell that raises NameError read a name some cell above should have made. That cell
says what is missing: a forecast or prediction refused because it is not sealed (seal it), or
an answer cell still holding its stub, which names the answer only in a comment
(write the answer there). `missing(cells, i, err)` names
the cell and the thing, or gives None when no cell above assigns the name.
"""

from __future__ import annotations

import ast
import re

SEALS = {
    "SketchNotSealed": "the forecast sketch",
    "PredictionNotGiven": "the prediction form",
}


def _assigns(source: str, name: str) -> bool:
    try:
        tree = ast.parse(source)
    except SyntaxError:
        return False
    return any(
        isinstance(n, ast.Name) and n.id == name and isinstance(n.ctx, ast.Store)
        for n in ast.walk(tree)
    )


def _error(cell) -> dict | None:
    return next((o for o in cell.get("outputs", []) if o.get("output_type") == "error"), None)


def missing(cells, i: int, err: dict) -> str | None:
    """The hint for check cell `i` that stopped on `err` (a NameError), or None."""
    found = re.search(r"name '(\w+)' is not defined", err.get("evalue", ""))
    if not found or err.get("ename") != "NameError":
        return None
    name = found.group(1)
    for j in range(i - 1, -1, -1):
        cell = cells[j]
        source = cell.get("source", "")
        if cell.get("cell_type") != "code":
            continue
        if not _assigns(source, name):
            stub = _error(cell)
            if stub and stub["ename"] == "NotImplementedError" and name in source:
                return f"write your answer in cell {j}, in place of its stub ({name} = ...)"
            continue
        stopped = _error(cell)
        if stopped is None:
            return None  # it ran: the name went missing some other way
        if stopped["ename"] in SEALS:
            return (
                f"{SEALS[stopped['ename']]} is not sealed, so cell {j} never made "
                f"{name!r}: seal it, then run cell {j} and the cells below it"
            )
        if stopped["ename"] == "NameError" and j != i:
            return missing(cells, j, stopped)  # that cell waited on another one in turn
        return f"write your answer in cell {j}, in place of its stub, so that it makes {name!r}"
    return None
