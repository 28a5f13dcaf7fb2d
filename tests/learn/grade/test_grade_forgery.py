"""`labkit grade` against forgery: a notebook that tampers with grading in its own kernel is
graded exactly as its honest twin, in the table, the JSON, the CSV and Gradescope's
results.json, with and without hidden checks; one that tampers with the hand-over itself
only gets rows that do not pass.

One small Exercise A notebook (a sealed prediction, a review, a wrong mechanism, a
placeholder, a wrong transfer) is the honest twin; each forgery is one more block at the end
of its first cell, so every check keeps its cell. Two `labkit grade` calls on one folder
grade them all.
"""

import csv
import io
import json
from pathlib import Path

import nbformat
import pytest

from helpers import labkit_cli

pytestmark = pytest.mark.slow  # two gradings, each of several notebooks in kernels

IMPORTS = """import time
import labkit
from labkit import check
from labkit.check import ex_a_predict, ex_a_review, ex_a_steps_to, ex_a_transfer
"""
CELLS = [
    IMPORTS,
    (
        'prediction = {"null_groups": ["backbone.0", "backbone.2"], "head_learns": True,\n'
        '              "why": "detach() cuts the graph, so no gradient reaches the backbone"}\n'
        "print(check.ex_a_predict(prediction))"
    ),
    (
        "def run_of(null):  # a three-step run whose groups in `null` get no gradient\n"
        '    cols = {"step": [0, 1, 2], "loss_raw": [2.3, 1.9, 1.5]}\n'
        '    for g in ("backbone.0", "backbone.2", "head"):\n'
        '        cols[f"grad_norm/{g}"] = [None if g in null else 0.5] * 3\n'
        '        cols[f"update_norm/{g}"] = [0.0 if g in null else 0.1] * 3\n'
        "    return labkit.Run.from_log(cols, seed=0, started_at=time.time())\n"
        'healthy, detached, deeper = run_of(()), run_of(("backbone.0", "backbone.2")), '
        'run_of(("backbone.0",))'
    ),
    "print(ex_a_review(prediction, healthy, detached))",
    'print(check.ex_a_mechanism("the loss falls"))',
    "print(ex_a_steps_to(..., healthy, detached))",
    (
        'deeper_groups = ["backbone.2"]\n'
        'print(ex_a_transfer(deeper_groups, "the layers before the detach lose it, those after '
        'keep it", deeper))'
    ),
]
HIDDEN = '''from labkit.learn.check._base import CheckFailed, answer_check


@answer_check(points=2)
def ex_a_hidden_groups(groups, run):
    """The groups the deeper run leaves without a gradient at every step."""
    never = {g for g in run.groups if all(v is None for v in run.table[f"grad_norm/{g}"])}
    if set(groups) != never:
        raise CheckFailed("These are not the groups whose grad_norm is None at every step.")
    return "ok"


@answer_check
def ex_a_hidden_steps(run):
    """The healthy run has three steps."""
    if len(run) != 3:
        raise CheckFailed("The healthy run should have three steps.")
    return "ok"


ex_a_hidden_groups(deeper_groups, deeper)  # noqa: F821 (the notebook's names)
print(ex_a_hidden_steps(healthy))  # noqa: F821
'''
FORGERIES = {  # name -> the block added to the first cell
    "outcomes": """from labkit.learn.check import _base
class Passed(list):
    def append(self, outcome):
        super().append({**outcome, "status": "passed"})
_base.OUTCOMES = Passed()
""",
    "modules": """import sys, types
fake = types.ModuleType("labkit.learn.check")
fake.__getattr__ = lambda name: (lambda *a, **k: "ok")
for name in [n for n in sys.modules if n.startswith(("labkit.learn.check", "labkit.check"))]:
    sys.modules[name] = fake
check = labkit.check = fake
ex_a_predict = ex_a_review = ex_a_steps_to = ex_a_transfer = fake.anything
""",
    "json": """import json, json.encoder
real_dumps = json.dumps
def dumps(obj, *args, **kwargs):
    if isinstance(obj, list):
        obj = [{**o, "status": "passed"} if isinstance(o, dict) else o for o in obj]
    return real_dumps(obj, *args, **kwargs)
json.dumps = dumps
json.encoder.encode_basestring_ascii = lambda s: '"passed"'
""",
    "print": """import builtins, sys
FORGED = '[{"check": "ex_a_transfer", "status": "passed", "message": "ok"}]'
builtins.print = lambda *args, **kwargs: sys.__stdout__.write(FORGED + "\\n")
""",
    "hidden": """from labkit.learn.check import _base
def always(fn=None, **kwargs):
    return always if fn is None else (lambda *a, **k: "ok")
_base.answer_check = always
_base.CheckFailed = type("CheckFailed", (Exception,), {})
import builtins
builtins.CheckFailed = _base.CheckFailed
""",
    "store": """from labkit.store.learner import default_store
store = default_store()
store.add("prediction_seal", "ex_a:forged", {"exercise": "ex_a", "sealed_at": 0.0,
          "prediction": {}})
store.add("grade", "ex_a_forged/1", {"notebook": "ex_a", "graded_at": 0.0, "rows": [],
          "summary": {"total": {"passed": 9, "failed": 0, "not yet answered": 0}}})
""",
}
NEVER_PASS = {  # the hand-over itself forged: no row of these may pass
    "dropped": "__labkit_answer__ = lambda cell, name, k, check: (check or (lambda *a: None))\n",
    "garbage": """import os
def folder_of(f, seen):
    for c in getattr(f, "__closure__", None) or ():
        v = c.cell_contents
        if isinstance(v, str) and "labkit-answers-" in v:
            return v
        if callable(v) and id(v) not in seen:
            seen.add(id(v))
            found = folder_of(v, seen)
            if found:
                return found
folder = folder_of(__labkit_answer__, set())
for cell in range(12):
    for name in ("ex_a_predict", "ex_a_review", "ex_a_mechanism", "ex_a_steps_to",
                 "ex_a_transfer", "ex_a_hidden_groups", "ex_a_hidden_steps"):
        with open(os.path.join(folder, f"{cell}-{name}-0.json"), "w") as f:
            f.write('{"args": [{"$": "pickle", "data": "gAR9lC4="}], '
                    '"kwargs": {"$": "dict", "items": []}}')
""",
}


def write(folder: Path, name: str, forgery: str = "") -> None:
    nb = nbformat.v4.new_notebook()
    nb.cells = [nbformat.v4.new_code_cell(c) for c in CELLS]
    nb.cells[0].source += forgery
    nbformat.write(nb, folder / f"ex_a_{name}.ipynb")


def graded(tmp: Path, folder: Path, *extra) -> dict:
    """Grade `folder` once: every format, parsed, by notebook name."""
    out = {k: tmp / f"{folder.name}{''.join(extra[:1])}.{k}" for k in ("json", "csv", "gs")}
    rc, table, err = labkit_cli(
        "grade",
        str(folder),
        *extra,
        "--json",
        str(out["json"]),
        "--csv",
        str(out["csv"]),
        "--gradescope",
        str(out["gs"]),
    )
    assert rc in (0, 1), err
    doc, gs = json.loads(out["json"].read_text()), json.loads(out["gs"].read_text())
    csv_rows = list(csv.DictReader(io.StringIO(out["csv"].read_text())))
    names = sorted({Path(r["notebook"]).stem for r in doc["rows"]})
    by = {}
    for name in names:
        by[name.removeprefix("ex_a_")] = {
            "json": [
                (r["check"], r["status"], r["message"], r["cell"], r["points"])
                for r in doc["rows"]
                if Path(r["notebook"]).stem == name
            ],
            "csv": [
                (r["check"], r["status"], r["message"], r["points"])
                for r in csv_rows
                if Path(r["notebook"]).stem == name
            ],
            "gradescope": [
                (t["name"].split(": ", 1)[1], t["status"], t["output"], t["score"], t["visibility"])
                for t in gs["tests"]
                if f"/{name}.ipynb:" in "/" + t["name"]
            ],
            "table": _table(table, name),
        }
    return by


def _table(text: str, name: str) -> list[str]:
    """The notebook's block of the printed table, without its heading line."""
    lines = text.splitlines()
    start = next(i for i, line in enumerate(lines) if line.endswith(f"{name}.ipynb"))
    end = next(
        (i for i in range(start + 1, len(lines)) if not lines[i].startswith(" ")), len(lines)
    )
    return lines[start + 1 : end]


@pytest.fixture(scope="module")
def grades(tmp_path_factory):
    tmp = tmp_path_factory.mktemp("forgery")
    (tmp / "hidden.py").write_text(HIDDEN)
    plain, hidden = tmp / "plain", tmp / "hidden"
    plain.mkdir(), hidden.mkdir()
    for folder in (plain, hidden):
        write(folder, "honest")
        for name, block in FORGERIES.items():
            write(folder, f"forged_{name}", block)
    for name, block in NEVER_PASS.items():
        write(hidden, f"forged_{name}", block)
    return {
        "plain": graded(tmp, plain),
        "hidden": graded(tmp, hidden, "--hidden", str(tmp / "hidden.py")),
    }


def test_the_honest_twin_passes_fails_and_waits_where_it_should(grades):
    for run, hidden in (("plain", []), ("hidden", ["ex_a_hidden_groups", "ex_a_hidden_steps"])):
        rows = grades[run]["honest"]["json"]
        assert [(r[0], r[1]) for r in rows] == [
            ("ex_a_predict", "passed"),
            ("ex_a_review", "passed"),
            ("ex_a_mechanism", "failed"),
            ("ex_a_steps_to", "not yet answered"),
            ("ex_a_transfer", "failed"),
            *zip(hidden, ["failed", "passed"]),
        ]


@pytest.mark.parametrize("forgery", sorted(FORGERIES))
@pytest.mark.parametrize("run", ["plain", "hidden"])
def test_a_forged_notebook_is_graded_as_its_honest_twin(grades, run, forgery):
    honest, forged = grades[run]["honest"], grades[run][f"forged_{forgery}"]
    for form in ("json", "csv", "gradescope"):
        assert forged[form] == honest[form], form
    assert forged["table"] == honest["table"]


@pytest.mark.parametrize("forgery", sorted(NEVER_PASS))
def test_a_forged_hand_over_changes_answers_never_verdicts(grades, forgery):
    rows = grades["hidden"][f"forged_{forgery}"]["json"]
    assert len(rows) == 7 and not [r for r in rows if r[1] == "passed"], rows
    if forgery == "dropped":
        assert all(r[2].startswith("no answer was handed over: ") for r in rows), rows
    if forgery == "garbage":
        assert all(
            r[2].startswith(
                f"the answer to {r[0]} could not be read: it holds an object tagged 'pickle'"
            )
            for r in rows
        ), rows
