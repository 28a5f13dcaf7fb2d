"""A sketch sealed by hand travels inside the saved notebook, so `labkit grade`, re-running
the notebook in a fresh kernel, seals the learner's own curves instead of stopping."""

import json

import nbformat
import pytest
from nbclient import NotebookClient

from labkit.forecast.carry import ENV, MIME, sketches_in

MAKE = (
    "import labkit\nfrom labkit.widgets import SketchForecast\ncfg = labkit.Config(steps=40)\n"
    "sketch = SketchForecast(config=cfg, series={'healthy': None, 'zero LR': 'zero_lr'}, key='carry_t')"
)
DRAW = (
    "sketch.points = [[0, 2.3], [39, 0.5]]  # what the mouse does in the browser\n"
    "sketch.select('zero LR').points = [[0, 2.3], [39, 2.3]]\n"
    "sketch.seal_requested += 1  # the Seal button"
)
RUN = (
    "sketch.require()\nprint('RAN', sorted(sketch.forecasts()),\n"
    "      sketch.forecasts()['zero LR'].points)"
)


def execute(nb, tmp_path, env=None):
    import os

    client = NotebookClient(
        nb,
        timeout=120,
        kernel_name="python3",
        allow_errors=True,
        resources={"metadata": {"path": str(tmp_path)}},
    )
    with client.setup_kernel(
        env={**os.environ, "LABKIT_HOME": str(tmp_path / "home"), **(env or {})}
    ):
        for i, cell in enumerate(nb.cells):
            client.execute_cell(cell, i)
    return nb


def text_of(cell):
    return "".join(o.get("text", "") for o in cell.outputs) + "".join(
        o.get("ename", "") for o in cell.outputs if o.get("output_type") == "error"
    )


@pytest.mark.slow
def test_a_hand_drawn_sketch_is_kept_in_the_notebook_and_used_by_a_fresh_kernel(tmp_path):
    nb = nbformat.v4.new_notebook()
    nb.cells = [nbformat.v4.new_code_cell(c) for c in (MAKE, DRAW, RUN)]
    execute(nb, tmp_path)
    assert "RAN" in text_of(nb.cells[2])
    kept = sketches_in(nb)
    assert len(kept) == 1 and kept[0]["key"] == "carry_t"
    assert kept[0]["series"]["zero LR"]["points"] == [[0, 2.3], [39, 2.3]]
    assert any(MIME in o.get("data", {}) for o in nb.cells[2].outputs)

    # the grader's copy: the drawing happened in a browser, so no cell draws
    graded = nbformat.v4.new_notebook()
    graded.cells = [nbformat.v4.new_code_cell(MAKE), nbformat.v4.new_code_cell(RUN)]
    graded.cells[1].outputs = nb.cells[2].outputs  # the saved outputs carry the sketch
    handed = tmp_path / "sketches.json"
    handed.write_text(json.dumps(sketches_in(graded)))
    blank = nbformat.v4.new_notebook()
    blank.cells = [nbformat.v4.new_code_cell(MAKE), nbformat.v4.new_code_cell(RUN)]
    assert "SketchNotSealed" in text_of(execute(blank, tmp_path).cells[1])  # nothing handed over
    execute(graded, tmp_path, env={ENV: str(handed)})
    out = text_of(graded.cells[1])
    assert "RAN ['healthy', 'zero LR'] ((0, 2.3), (39, 2.3))" in out


def test_only_the_matching_sketch_is_taken(tmp_path, monkeypatch):
    import labkit
    from labkit.widgets import SketchForecast

    body = {
        "key": "ex_q",
        "quantity": "loss",
        "series": {"a": {"points": [[0, 1.0], [39, 0.5]], "nan_step": None}},
    }
    path = tmp_path / "s.json"
    path.write_text(json.dumps([body]))
    monkeypatch.setenv(ENV, str(path))
    cfg = labkit.Config(steps=40)
    same = SketchForecast(
        config=cfg, series={"a": None}, key="ex_q", history_path=tmp_path / "h.sqlite3"
    )
    other = SketchForecast(
        config=cfg, series={"a": None}, key="ex_r", history_path=tmp_path / "h.sqlite3"
    )
    assert same.points == [[0, 1.0], [39, 0.5]] and other.points == []
    same.require()
    assert same.sealed and not other.sealed
