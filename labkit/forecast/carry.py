"""Sealed sketches carried inside the notebook, so `labkit grade` can re-run a learner's work.

A sketch drawn in the browser lives in the learner's kernel and store, not in the .ipynb. When
the run cell's ``require()`` passes on a sketch the learner drew, it leaves one output in that
cell: a short line for the learner, and the sealed curves under the MIME type `MIME`. The
notebook keeps that output when it is saved. `labkit grade` reads those outputs before it
re-executes the notebook (`sketches_in`), hands them to the fresh kernel through the
``LABKIT_SKETCHES`` file (`ENV`), and a `SketchForecast` with the same key, quantity and
curves takes its points from there (`carried`), as a headless run takes them from code.
"""

from __future__ import annotations

import json
import os

MIME = "application/vnd.labkit.sketch+json"
PREDICTION_MIME = "application/vnd.labkit.prediction+json"  # a prediction sealed in a form
ENV = "LABKIT_SKETCHES"


def payload(key: str, quantity: str, drawn: dict) -> dict:
    """What a sealed sketch leaves in the notebook: {key, quantity, series: {name: {...}}}."""
    return {
        "key": key,
        "quantity": quantity,
        "series": {
            n: {"points": [list(p) for p in d["points"]], "nan_step": d["nan_step"]}
            for n, d in drawn.items()
        },
    }


def show(body: dict) -> None:
    """Leave the sealed curves in the current cell's outputs (no-op outside IPython)."""
    try:
        from IPython.display import display
    except ImportError:
        return
    names = ", ".join(body["series"])
    cell = _cell()
    said = cell is not None and cell == _SAID.get("cell")  # this cell said it already
    _SAID["cell"] = cell
    display(
        {
            MIME: body,
            "text/plain": ""
            if said
            else f"(your sealed sketch [{names}] is kept in this notebook, "
            "so a grader re-running it uses your curves)",
        },
        raw=True,
    )


_SAID: dict = {}  # the cell whose output last said that a sketch is kept: it says so once


def _cell() -> str | None:
    """The id of the request (the cell) the kernel is running now, or None."""
    from IPython import get_ipython

    shell = get_ipython()
    return (getattr(shell, "parent_header", None) or {}).get("header", {}).get("msg_id")


def show_prediction(key: str, prediction: dict) -> None:
    """Leave a prediction sealed in a form in the current cell's outputs, for a grader."""
    try:
        from IPython.display import display
    except ImportError:
        return
    answers = json.loads(json.dumps(prediction, default=str))  # roles keyed by numbers: text
    display(
        {
            PREDICTION_MIME: {"key": key, "prediction": answers},
            "text/plain": "(your sealed prediction is kept in this notebook, so a grader "
            "re-running it uses your answers)",
        },
        raw=True,
    )


def sketches_in(nb) -> list[dict]:
    """Every carried sketch and form-sealed prediction in a notebook's saved outputs, in
    cell order."""
    found = []
    for cell in nb.cells:
        for out in cell.get("outputs", []) if cell.get("cell_type") == "code" else []:
            body = out.get("data", {}).get(MIME)
            if isinstance(body, dict) and isinstance(body.get("series"), dict):
                found.append(body)
            body = out.get("data", {}).get(PREDICTION_MIME)
            if isinstance(body, dict) and isinstance(body.get("prediction"), dict):
                found.append(body)
    return found


def _handed() -> list:
    path = os.environ.get(ENV)
    if not path or not os.path.isfile(path):
        return []
    try:
        with open(path) as f:
            bodies = json.load(f)
    except (OSError, ValueError):
        return []
    return bodies if isinstance(bodies, list) else []


def carried_prediction(key: str) -> dict | None:
    """The prediction a grader handed over for exercise `key` (the latest seal), or None."""
    for body in reversed(_handed()):
        if (
            isinstance(body, dict)
            and body.get("key") == key
            and isinstance(body.get("prediction"), dict)
        ):
            return body["prediction"]
    return None


def carried(key: str, quantity: str, names: list) -> dict | None:
    """{name: {"points", "nan_step"}} handed over by a grader for this sketch, or None."""
    if not key:
        return None
    for body in reversed(_handed()):  # the latest seal wins
        if (
            isinstance(body, dict)
            and (body.get("key"), body.get("quantity")) == (key, quantity)
            and sorted(body.get("series", {})) == sorted(names)
        ):
            return body["series"]
    return None
