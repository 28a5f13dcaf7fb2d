"""No notebook shows a number of a run before its forecast is sealed, whatever the learner does.

Every learner copy that makes a forecast (a sketch, an exercise's prediction form) ships with
``forecast_points = None``. Each is walked here once, cell by cell in a fresh kernel with no
front end and every seal withheld, going on past each refusal as a learner running one cell at
a time does. Then:

- no decimal number that the executed reference prints for its runs (its outputs from the first
  forecast cell on, less the numbers it prints before it or states in its text) appears in
  any output of the walk, and no cell after the forecast draws a figure;
- every run cell that needs the seal is refused with the forecast's one sentence (no
  traceback), and so is every cell that reads what a refused run never made;
- in Exercises A-F, the first run cell (what a Run All reaches) stops with SketchNotSealed,
  said once, before any setup is built.
"""

import ast
import re
from pathlib import Path

import nbformat
import pytest

ROOT = Path(__file__).resolve().parents[2]
EXERCISES = {
    "ex_a": "ex_a_break_the_graph",
    "ex_b": "ex_b_optimizer_membership",
    "ex_c": "ex_c_learning_rate_sweep",
    "ex_d": "ex_d_validation_below_training",
    "ex_e": "ex_e_masking_errors",
    "ex_f": "ex_f_loss_metric_mismatch",
}
# (learner copy, executed reference) for every notebook that makes a forecast
WALKED = {
    **{e: (f"exercises/{n}.ipynb", f"solutions/{n}.ipynb") for e, n in EXERCISES.items()},
    "lab15": (
        "exercises/lab15_one_variable_intervention.ipynb",
        "solutions/lab15_one_variable_intervention.ipynb",
    ),
    **{
        n: (f"notebooks/{n}.ipynb", f"tests/reference/{n}.ipynb")
        for n in ("00_start_here", "02_forecast_first", "18_distributed")
    },
}
FORECAST = re.compile(r"SketchForecast\(|ask_prediction\(")
NUMBER = re.compile(r"(?<![\w.])-?\d+\.\d{2,}(?:e[-+]?\d+)?")  # 2.305, 0.5428, 1.2e-05
REFUSALS = {"SketchNotSealed", "PredictionNotGiven"}


def _shown(cell) -> str:
    """Everything a cell's outputs say in words: streams, text, HTML, an error's lines."""
    parts = []
    for out in cell.get("outputs", []):
        parts.append(out.get("text", ""))
        data = out.get("data", {})
        parts += [str(data.get("text/plain", "")), str(data.get("text/html", ""))]
        parts += [out.get("evalue", "")] + list(out.get("traceback", []))
    return "\n".join(parts)


def _first_forecast(nb) -> int:
    return next(
        i for i, c in enumerate(nb.cells) if c.cell_type == "code" and FORECAST.search(c.source)
    )


def run_numbers(reference) -> set[str]:
    """The decimals the reference prints from its first forecast cell on, less those it prints
    before it (ln 10, the setup) or states in its own text."""
    start = _first_forecast(reference)
    before = "\n".join(_shown(c) for c in reference.cells[:start])
    text = "\n".join(c.source for c in reference.cells)
    after = set(NUMBER.findall("\n".join(_shown(c) for c in reference.cells[start:])))
    return {n for n in after if n not in before and n not in text}


COUNT_TRAINERS = """\
from labkit.core import train as _train  # the walk's own cell: every setup built from here on
_made, _init = [], _train.Trainer.__init__
def _counted(self, *args, **kwargs):
    _init(self, *args, **kwargs)
    _made.append(1)
_train.Trainer.__init__ = _counted
"""


def _names(source: str, ctx) -> set[str] | None:
    try:
        tree = ast.parse(source)
    except SyntaxError:
        return None
    return {n.id for n in ast.walk(tree) if isinstance(n, ast.Name) and isinstance(n.ctx, ctx)}


def _errors(cell) -> list:
    return [o for o in cell.get("outputs", []) if o.output_type == "error"]


@pytest.mark.slow
@pytest.mark.parametrize(
    "name",
    [pytest.param(n, marks=getattr(pytest.mark, n)) if n in EXERCISES else n for n in WALKED],
)
def test_no_number_of_a_run_before_its_forecast_is_sealed(name, monkeypatch):
    from nbclient import NotebookClient
    from nbformat.v4 import new_code_cell

    learner, reference = (nbformat.read(ROOT / p, as_version=4) for p in WALKED[name])
    assert "forecast_points = None" in learner.cells[1].source
    start = _first_forecast(learner)
    walk = nbformat.from_dict(learner)
    walk.cells.insert(start + 1, new_code_cell(COUNT_TRAINERS))
    walk.cells.append(new_code_cell('print(f"setups built after the forecast: {len(_made)}")'))
    monkeypatch.setenv("LABKIT_NO_WAIT", "1")  # no front end: refuse at once, no 2 s look
    NotebookClient(
        walk,
        kernel_name="python3",
        allow_errors=True,  # go on past each refusal: one cell at a time, in order
        timeout=120,
        resources={"metadata": {"path": str(ROOT / Path(WALKED[name][0]).parent)}},
    ).execute()
    counted = walk.cells.pop()
    del walk.cells[start + 1]
    assert "".join(o.get("text", "") for o in counted.outputs) == (
        "setups built after the forecast: 0\n"
    ), counted.outputs

    refused = [c for c in walk.cells[start:] if any(e.ename in REFUSALS for e in _errors(c))]
    unmade = [c for c in walk.cells[start:] if any(e.ename == "NameError" for e in _errors(c))]
    assert unmade or name in ("00_start_here", "02_forecast_first", "18_distributed"), (
        "no cell read what a refused run never made: the walk shows no NameError"
    )
    assert refused, "no cell was refused: the walk gated nothing"
    gated = set().union(*(_names(c.source, ast.Store) or set() for c in refused))
    forbidden = run_numbers(reference)
    assert forbidden, "the reference prints no number of its runs: nothing would be checked"
    for i, cell in enumerate(walk.cells[start:], start):
        read = _names(cell.source, ast.Load)
        if not _errors(cell) and read is not None and not read & gated:
            continue  # it reads nothing a refused cell makes, and built no setup: no run's
        leaked = sorted(set(NUMBER.findall(_shown(cell))) & forbidden)
        assert not leaked, f"cell {i} shows {leaked} before the seal:\n{cell.source[:200]}"
        figures = [o for o in cell.get("outputs", []) if "image/png" in o.get("data", {})]
        assert not figures, f"cell {i} draws a figure before the seal:\n{cell.source[:200]}"
        for error in _errors(cell):  # a refusal (of a run, of what it never made) is one line
            if error.ename in REFUSALS | {"NameError", "KeyError"}:
                assert len(error.traceback) == 1, f"cell {i}: a traceback\n{cell.source[:200]}"

    if name in EXERCISES:  # what a Run All reaches first: the run cell's own refusal, said once
        gate = next(
            c
            for c in walk.cells
            if c.cell_type == "code" and c.source.lstrip().startswith("sketch.require()")
        )
        errors = _errors(gate)
        assert errors and errors[0].ename == "SketchNotSealed"
        assert len(errors[0].traceback) == 1 and "press Seal" not in errors[0].traceback[0]
        boxes = [o for o in gate.outputs if o.output_type == "display_data"]
        assert len(boxes) == 1 and "press Seal" in boxes[0].data["text/html"]  # said once
        assert not _errors(walk.cells[start])  # the sketch itself is shown


@pytest.mark.parametrize("in_a_notebook", [True, False])
def test_an_error_that_teaches_says_its_sentence_once(monkeypatch, in_a_notebook):
    import labkit.errors
    from labkit.forecast.gate import SketchNotSealed
    from labkit.learn.check import CheckFailed

    monkeypatch.setattr(labkit.errors, "notebook_box", lambda *a, **k: in_a_notebook)
    for error in (
        SketchNotSealed("Draw your forecast, then press Seal."),
        CheckFailed("Your reason names 1 of the 2 ideas."),
    ):
        lines = error._render_traceback_()
        assert len(lines) == 1 and (str(error) in lines[0]) is not in_a_notebook


@pytest.mark.parametrize("in_a_notebook", [True, False])
def test_a_failed_check_names_itself_once(monkeypatch, in_a_notebook):
    """In a notebook the box's title names the check ("Not yet: ex_a_mechanism"); the red line
    under it says CheckFailed only. Elsewhere the one line names it."""
    import labkit.errors
    from labkit.learn.check import CheckFailed

    monkeypatch.setattr(labkit.errors, "notebook_box", lambda *a, **k: in_a_notebook)
    error = CheckFailed("Your reason names 1 of the 2 ideas.")
    error.check = "ex_a_mechanism"
    (line,) = error._render_traceback_()
    assert ("ex_a_mechanism" in line) is not in_a_notebook
