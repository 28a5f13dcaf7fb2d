"""`labkit grade` against forgery: a notebook that tampers with grading in its own kernel is
graded exactly as its honest twin, in the table, the JSON, the CSV and Gradescope's
results.json, with and without hidden checks; one that tampers with the hand-over itself
only gets rows that do not pass.

One small Exercise A notebook (a sealed prediction, a review, a wrong mechanism, a
placeholder, a wrong transfer) is the honest twin; each forgery is one more block at the end
of its first cell, so every check keeps its cell. Two `labkit grade` calls on one folder
grade them all, in the sandbox: one as a process of its own writing its JSON to stdout
(``--json -``, which a kernel writing to the grader's stdout would spoil), one in this process
with hidden checks. The forgeries of the sandbox's round (issue 53) edit labkit's own files,
leave a daemon behind to rewrite the reports, write to the grader's stdout, send answers after
the fact, signal the grader, fork until the sandbox's process limit, wrap labkit's run loader
to fabricate a run, and route a text check through a function that prints a verdict. The
data round: a second honest twin calls Exercises C, E and F's checks that work their truth out
of data handed over beside the answer (wrong answers, all six), and each forgery makes that
data up to fit (an empty sweep and an x10 arm made to fall, a halved ||g||^2, the split's rows
whose floor is the answer, sixteen classes of labels and a transposed matrix); graded with the
hidden checks, in the same grading. So are two more twins and their forgeries: the reviews of
Exercises A, B, D, E and F, handed runs of other setups under the exercise's names
(`forgery_reviews`), and Lab 15's conviction, handed another mystery's name or a record edited
after its runs (`forgery_lab15`).
"""

import csv
import functools
import io
import json
import time
from pathlib import Path

import nbformat
import pytest

import forgery_lab15
import forgery_reviews
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
    "RUNS",  # real three-step runs (`runs_source`)
    "print(ex_a_review(prediction, healthy, detached))",
    'print(check.ex_a_mechanism({"head": "learns"}, "the loss falls"))',
    "print(ex_a_steps_to(..., healthy, detached))",
    (
        'deeper_groups = ["backbone.2"]\n'
        'print(ex_a_transfer(deeper_groups, "the layers before the detach lose it, those after '
        'keep it", deeper))'
    ),
]


def forward_detach_deeper(ctx):
    """Exercise A's deeper detach, by the name the grader knows it (`check.ex.seams`)."""
    hidden = ctx.model.backbone[:2](ctx.batch["x"]).detach()  # (B, hidden)
    return ctx.model.head(ctx.model.backbone[2:](hidden))  # (B, C)


@functools.cache
def runs_source() -> str:
    """Cell 2: three real three-step runs, trained once here and handed to every kernel as
    JSON (the grader trains each again, `labkit.learn.grade.truth`), started when the cell
    runs, after the prediction's seal, as a review requires."""
    import labkit
    from labkit.core.seams import Seams

    runs = {
        "healthy": labkit.train(steps=3),
        "detached": labkit.train(bug="detach", steps=3),
        "deeper": labkit.train(steps=3, seams=Seams().replace(forward=forward_detach_deeper)),
    }
    lines = ["now = time.time()"]
    for name, run in runs.items():
        lines += [
            f"{name} = labkit.Run.from_json({run.to_json()!r})",
            f"{name}.timing['started_at'] = now",
        ]
    return "\n".join(lines)


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
SANDBOX_FORGERIES = (  # each boundary of the sandbox, from inside one learner's notebook
    {
        "edit_labkit": """import labkit.learn.grade.formats as target
try:  # labkit's own code, which the grader runs: read-only in the sandbox
    with open(target.__file__, "a") as f:
        f.write("\\nSTATUSES = ('passed', 'passed', 'passed')  # forged\\n")
except OSError:
    pass
""",
        "daemon": """import os, time
if os.fork() == 0:  # a daemon: double-forked, a session of its own
    os.setsid()
    if os.fork() == 0:
        time.sleep(3)  # after the grader is done: rewrite every report it was asked for
        for pid in os.listdir("/proc"):
            try:
                argv = open(f"/proc/{pid}/cmdline", "rb").read().split(b"\\0")
            except OSError:
                continue
            for flag in (b"--json", b"--csv", b"--gradescope"):
                if flag in argv and argv.index(flag) + 1 < len(argv):
                    try:
                        with open(argv[argv.index(flag) + 1].decode(), "w") as f:
                            f.write('{"score": 100}')
                    except OSError:
                        pass
    os._exit(0)
""",
        "stdout": """import os, sys
os.write(1, b'{"format": "labkit.grades/2", "forged": true}\\n')  # the grader's stdout
sys.__stdout__.write('{"forged": true}\\n')
sys.__stdout__.flush()
""",
    }
)
FORGERIES.update(  # answers forged after the fact: the grader holds the first, per cell
    {
        "answers_folder": """import os
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
folder = folder_of(__labkit_answer__, set())  # the hand-over keeps none now: nothing happens
for cell in range(12 if folder else 0):
    for name in ("ex_a_predict", "ex_a_review", "ex_a_mechanism", "ex_a_steps_to",
                 "ex_a_transfer", "ex_a_hidden_groups", "ex_a_hidden_steps"):
        with open(os.path.join(folder, f"{cell}-{name}-0.json"), "w") as f:
            f.write('{"args": [{"$": "pickle", "data": "gAR9lC4="}], '
                    '"kwargs": {"$": "dict", "items": []}}')
""",
        "late": """ip = get_ipython()
def forge(*args):  # after every cell: answers for every check, sent after the real ones
    for name in ("ex_a_predict", "ex_a_review", "ex_a_mechanism", "ex_a_steps_to",
                 "ex_a_transfer", "ex_a_hidden_groups", "ex_a_hidden_steps"):
        for k in range(2):
            data = {"application/x-labkit-answer":
                    f'{name}\\n{k}\\n{{"args": ["forged"], "kwargs": {{"$": "dict", "items": []}}}}'}
            ip.display_pub.publish(data, metadata={})
            ip.display_pub.publish(data, metadata={}, update=True, transient={"display_id": "x"})
ip.events.register("post_run_cell", forge)
""",
    }
)
SANDBOX_FORGERIES.update(
    {
        "signal": """import os, signal
os.kill(os.getppid(), signal.SIGINT)  # the grader, as its parent: Ctrl-C
os.kill(os.getppid(), signal.SIGTERM)
""",
        "fork_bomb": """import os, time
kids = []
for _ in range(1000):  # bounded: sleeping children until a fork fails at the sandbox's limit
    try:
        pid = os.fork()
    except OSError:
        break
    if pid == 0:
        time.sleep(1)
        os._exit(0)
    kids.append(pid)
for pid in kids:
    os.waitpid(pid, 0)
""",
    }
)
NEVER_PASS = {  # the hand-over itself forged: no row of these may pass
    "dropped": "__labkit_answer__ = lambda cell, name, k, check: (check or (lambda *a: None))\n",
}

TARGETED = {  # forged answers to one check: that row never passes, the others are the twin's
    "function": (  # a text check routed through a function answer that prints a verdict
        """def forged(*args, **kwargs):
    import atexit
    atexit.register(print, '["passed", "ok"]')  # after the judge's own last line
    print('["passed", "ok"]')
    return "forged"
real_answer = __labkit_answer__
def __labkit_answer__(cell, name, k, check):
    call = real_answer(cell, name, k, check)
    return (lambda *a, **kw: call(a[0], forged)) if name == "ex_a_mechanism" else call
""",
        {
            "ex_a_mechanism": "the answer to ex_a_mechanism is a function, and ex_a_mechanism "
            "takes none"
        },  # refused unrun
    ),
    "fabricated": (  # labkit's loader wrapped: the deeper run's nulls moved to fit the answer
        """real_load = labkit.Run.from_json
def load(text):
    run = real_load(text)
    if run.meta["seams"]:
        n = len(run.table["step"])
        run.table["grad_norm/backbone.0"], run.table["grad_norm/backbone.2"] = [0.5] * n, [None] * n
    return run
labkit.Run.from_json = load
""",
        {
            "ex_a_transfer": "the answer to ex_a_transfer could not be checked: the run given "
            "as argument 3 is not the run its config trains: its table['grad_norm/backbone.0'][0]",
            "ex_a_hidden_groups": "the answer to ex_a_hidden_groups could not be checked: the "
            "run given as argument 2 is not the run its config trains",
        },
    ),
    "started_at": (  # the review's runs trained before the seal, their start time set after it
        """early = [labkit.train(steps=3), labkit.train(bug="detach", steps=3)]
""",
        {
            "ex_a_review": "A run compared here started before the prediction was sealed",
        },  # the grader dates a run from when it heard it begin, not from its started_at
    ),
    "classname": (  # a class of the learner's named as labkit's Run, with forged data
        """class Run:
    def __init__(self, real):
        self.table, self.evals, self.meta, self.timing = dict(real.table), real.evals, real.meta, real.timing
        self.table["grad_norm/backbone.2"] = [None] * len(self.table["step"])
Run.__module__, Run.__qualname__ = "labkit.core.run", "Run"
ip = get_ipython()
def swap(*args):
    if "deeper" in ip.user_ns and type(ip.user_ns["deeper"]) is not Run:
        ip.user_ns["deeper"] = Run(ip.user_ns["deeper"])
ip.events.register("post_run_cell", swap)
""",
        {
            "ex_a_transfer": "the answer to ex_a_transfer could not be read: it holds a "
            "labkit.core.run.Run that is not labkit's own class",
            "ex_a_hidden_groups": "the answer to ex_a_hidden_groups could not be read",
        },
    ),
}


DATA_CELLS = [  # Exercises C, E and F's checks that work their truth out of data handed over
    """import json, math, types
import torch
import labkit
from labkit.check import (ex_c_transfer, ex_c_update_ratio, ex_c_uphill_lr, ex_e_two_ahead_floor,
                          ex_f_majority_accuracy, ex_f_minority_precision)
from labkit.core.seams import make_data
from labkit.learn.lm_floor import floor, successor_table
from labkit.probes import ProbeResult
""",
    "DATA",  # the exercises' data, as their cells make it (`data_source`)
    (  # honest, and wrong: each of these fails its check
        "ratios = {lr: r.table['grad_norm'][0] / r.table['update_norm'][0] for lr, r in runs.items()}\n"
        "uphill_lr = g_sq / g_h_g  # the 2 forgotten\n"
        'x10_from_best = "falls faster"\n'
        "two_ahead_floor = math.log(4)  # four equally likely tokens two ahead\n"
        "majority_accuracy = float((fdata.val['y'] == 1).float().mean())  # the minority's share\n"
        "precision_final = float(cm_final[1, 1] / cm_final[1].sum())  # recall\n"
    ),
    "print(ex_c_update_ratio(ratios, runs))",
    "print(ex_c_uphill_lr(uphill_lr, g_sq, g_h_g))",
    'print(ex_c_transfer(x10_from_best, "the curvature is larger there", best))',
    "print(ex_e_two_ahead_floor(two_ahead_floor, data.val, succ))",
    "print(ex_f_majority_accuracy(majority_accuracy, fdata.val['y']))",
    "print(ex_f_minority_precision(cm_final, precision_final))",
]
DATA_FORGERIES = {  # name -> (the block added to the answers' cell, {check: its row starts})
    "sweep": (  # Exercise C: an empty sweep of runs, and the x10 arm made to fall
        """runs, ratios = {}, {}
arms = best.details["arms"]
arms[10.0].update(nonfinite=False, drop=2 * arms[1.0]["drop"] + 1)
""",
        {
            "ex_c_update_ratio": "the answer to ex_c_update_ratio could not be checked: runs "
            "(given as argument 2) is not one run per LR of the sweep",
            "ex_c_transfer": "the answer to ex_c_transfer could not be checked: sweep (given as "
            "argument 3) is not lr_sweep from step 100 of the run at lr 1",
        },
    ),
    "uphill": (  # Exercise C: the measured ||g||^2 made to fit the answer
        "g_sq = uphill_lr * g_h_g / 2\n",
        {
            "ex_c_uphill_lr": "the answer to ex_c_uphill_lr could not be checked: g_sq (given "
            "as argument 2) is not the exercise's g_sq at its initial weights and batch 0",
        },
    ),
    "split": (  # Exercise E: the validation rows whose two-ahead floor is the answer
        """def row_floor(i):
    return floor({k: v[i : i + 1] for k, v in data.val.items()}, succ, ahead=2)
order = sorted(range(len(data.val["labels"])), key=row_floor, reverse=True)
for n in range(1, len(order) + 1):
    part = {k: v[order[:n]] for k, v in data.val.items()}
    if abs(floor(part, succ, ahead=2) - two_ahead_floor) < 0.005:
        break
data = types.SimpleNamespace(val=part)
""",
        {
            "ex_e_two_ahead_floor": "the answer to ex_e_two_ahead_floor could not be checked: "
            "split (given as argument 2) is not data.val",
        },
    ),
    "labels": (  # Exercise F: sixteen classes of 32 labels, and the matrix transposed
        """fdata = types.SimpleNamespace(val={"y": torch.arange(512) % 16})
cm_final = cm_final.T
""",
        {
            "ex_f_majority_accuracy": "the answer to ex_f_majority_accuracy could not be "
            'checked: y_true (given as argument 2) is not data.val["y"]',
            "ex_f_minority_precision": "the answer to ex_f_minority_precision could not be "
            "checked: cm (given as argument 1) is not its model's confusion matrix after 50 "
            "steps",
        },
    ),
}


@functools.cache
def data_source() -> str:
    """The data cell: five three-step runs of the sweep's LRs, the sweep from the best run and
    Exercise F's final matrix made once here (as the grader makes them: in this process its
    cache then holds them), the cheap rest as the exercises' own cells make it."""
    import labkit
    from labkit.learn.check.ex import made

    sweep = made._sweep(0, 1.0)
    details = {**sweep.details, "arms": {str(f): a for f, a in sweep.details["arms"].items()}}
    cm = made._confusions(0)["at the end of the run"].tolist()  # Exercise F's cm_final
    lines = ["runs = {}"]
    for lr in (1e-6, 1e-4, 1e-2, 1, 30):
        run = labkit.train(lr=lr, steps=3)
        lines.append(f"runs[{lr!r}] = labkit.Run.from_json({run.to_json()!r})")
    return "\n".join(
        lines
        + [
            f"details = json.loads({json.dumps(details)!r})",
            'details["arms"] = {float(f): arm for f, arm in details["arms"].items()}',
            f"best = ProbeResult({sweep.probe!r}, {sweep.verdict!r}, details)",
            f"cm_final = torch.tensor({cm!r})",
            "trainer = labkit.Trainer(labkit.Config(lr=1.0))  # Exercise C's cell, as it is",
            "model, batch = trainer.ctx.model, trainer.batch(0)",
            "params = list(model.parameters())",
            "loss = torch.nn.functional.cross_entropy(model(batch['x']), batch['y'])",
            "grads = torch.autograd.grad(loss, params, create_graph=True)",
            "g_sq = sum((g * g).sum() for g in grads)",
            "hess_g = torch.autograd.grad(g_sq / 2, params)",
            "g_h_g = sum((g * hg).sum() for g, hg in zip(grads, hess_g)).item()",
            "g_sq = g_sq.item()",
            "data = make_data(labkit.Config(task='lm'))  # Exercise E's",
            "succ = successor_table(50, 0)",
            "fdata = labkit.make_imbalanced(seed=0)  # Exercise F's",
        ]
    )


def write(folder: Path, name: str, forgery: str = "") -> None:
    nb = nbformat.v4.new_notebook()
    nb.cells = [nbformat.v4.new_code_cell(runs_source() if c == "RUNS" else c) for c in CELLS]
    nb.cells[0].source += forgery
    nbformat.write(nb, folder / f"ex_a_{name}.ipynb")


def write_data(folder: Path, name: str, forgery: str = "") -> None:
    nb = nbformat.v4.new_notebook()
    nb.cells = [nbformat.v4.new_code_cell(data_source() if c == "DATA" else c) for c in DATA_CELLS]
    nb.cells[2].source += forgery
    nbformat.write(nb, folder / f"ex_cef_{name}.ipynb")


def grade(tmp: Path, folder: Path, *extra, process: bool = False) -> tuple:
    """Grade `folder` once, every format asked for: (outputs, table, JSON text). As a process
    of its own, the JSON goes to stdout (and the table to stderr)."""
    out = {k: tmp / f"{folder.name}.{k}" for k in ("json", "csv", "gs")}
    rc, stdout, err = labkit_cli(
        "grade",
        str(folder),
        *extra,
        "--json",
        "-" if process else str(out["json"]),
        "--csv",
        str(out["csv"]),
        "--gradescope",
        str(out["gs"]),
        process=process,
    )
    assert rc in (0, 1), err
    return out, err if process else stdout, stdout if process else None


def parsed(out: dict, table: str, doc_text: str | None) -> dict:
    """Every format, parsed, by notebook name (Gradescope: one results.json per notebook)."""
    doc = json.loads(doc_text if doc_text is not None else out["json"].read_text())
    gs = {"tests": []}
    for results in sorted(out["gs"].rglob("results.json")):
        gs["tests"] += json.loads(results.read_text())["tests"]
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
    import labkit.learn.grade.formats as target

    tmp = tmp_path_factory.mktemp("forgery")
    (tmp / "hidden.py").write_text(HIDDEN)
    plain, hidden, boxed = tmp / "plain", tmp / "hidden", tmp / "sandbox"
    for folder, forgeries in ((plain, FORGERIES), (hidden, FORGERIES), (boxed, SANDBOX_FORGERIES)):
        folder.mkdir()
        write(folder, "honest")
        for name, block in forgeries.items():
            write(folder, f"forged_{name}", block)
    for name, block in NEVER_PASS.items():
        write(hidden, f"forged_{name}", block)
    for name, (block, _) in TARGETED.items():
        write(hidden, f"forged_{name}", block)
    write_data(hidden, "honest")
    for name, (block, _) in DATA_FORGERIES.items():
        write_data(hidden, f"forged_{name}", block)
    for twin in (forgery_reviews, forgery_lab15):
        twin.write(hidden, "honest")
        for name, (block, _) in twin.FORGERIES.items():
            twin.write(hidden, f"forged_{name}", block)
    mine = Path(target.__file__)
    try:
        done = {  # forgeries in the kernel: without the sandbox, in this process (warm kernels)
            "plain": grade(tmp, plain, "--sandbox", "none"),
            "hidden": grade(tmp, hidden, "--sandbox", "none", "--hidden", str(tmp / "hidden.py")),
            "sandbox": grade(tmp, boxed, "--hidden", str(tmp / "hidden.py"), process=True),
        }
        time.sleep(4)  # what a daemon left behind would do after the grader ended, done
    finally:
        text = mine.read_text()
        edited = "# forged" in text
        if edited:  # never left edited, even if a sandbox let the write through
            mine.write_text("".join(x for x in text.splitlines(True) if "# forged" not in x))
    return {
        "edited": edited,
        **{run: parsed(*out) for run, out in done.items()},
    }


def test_labkits_own_files_were_not_edited(grades):
    assert not grades["edited"]


def test_the_honest_twin_passes_fails_and_waits_where_it_should(grades):
    secret = ["ex_a_hidden_groups", "ex_a_hidden_steps"]
    for run, hidden in (("plain", []), ("hidden", secret), ("sandbox", secret)):
        rows = grades[run]["honest"]["json"]
        assert [(r[0], r[1]) for r in rows] == [
            ("ex_a_predict", "passed"),
            ("ex_a_review", "passed"),
            ("ex_a_mechanism", "failed"),
            ("ex_a_steps_to", "not yet answered"),
            ("ex_a_transfer", "failed"),
            *zip(hidden, ["failed", "passed"]),
        ]


@pytest.mark.parametrize(
    "run, forgery",
    [(run, f) for run in ("plain", "hidden") for f in sorted(FORGERIES)]
    + [("sandbox", f) for f in sorted(SANDBOX_FORGERIES)],
)
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


def only_rows_fail(forged: list, honest: list, says: dict) -> None:
    """The forged notebook's JSON rows: each row of a check in `says` (by its name, or by its
    name and cell) failed, its message starting with what `says` holds for it; every other row
    is the honest twin's."""
    assert [r[0] for r in forged] == [r[0] for r in honest]
    for mine, twin in zip(forged, honest):
        starts = says.get(mine[0], says.get((mine[0], mine[3])))
        if starts is not None:
            assert mine[1] == "failed" and mine[2].startswith(starts), mine
        else:
            assert mine == twin


@pytest.mark.parametrize("forgery", sorted(TARGETED))
def test_a_forged_answer_fails_its_row_and_leaves_the_others_as_the_twins(grades, forgery):
    honest, forged = (
        grades["hidden"]["honest"]["json"],
        grades["hidden"][f"forged_{forgery}"]["json"],
    )
    only_rows_fail(forged, honest, TARGETED[forgery][1])


def test_the_data_twin_fails_each_wrong_answer(grades):
    rows = grades["hidden"]["ex_cef_honest"]["json"]
    assert [(r[0], r[1]) for r in rows] == [
        (name, "failed")
        for name in (
            "ex_c_update_ratio",
            "ex_c_uphill_lr",
            "ex_c_transfer",
            "ex_e_two_ahead_floor",
            "ex_f_majority_accuracy",
            "ex_f_minority_precision",
        )
    ], rows
    assert not [r for r in rows if "could not be checked" in r[2]], rows


@pytest.mark.parametrize("forgery", sorted(DATA_FORGERIES))
def test_made_up_data_fails_its_row_and_leaves_the_others_as_the_twins(grades, forgery):
    """Data a check works its truth out of, made up to fit a wrong answer: the grader makes
    that data again as the exercise's cell does, and the row says which part differs."""
    honest = grades["hidden"]["ex_cef_honest"]
    forged = grades["hidden"][f"ex_cef_forged_{forgery}"]
    only_rows_fail(forged["json"], honest["json"], DATA_FORGERIES[forgery][1])
    for form in ("csv", "gradescope"):  # the same points as the twin's, in every report
        assert [r[-2 if form == "gradescope" else -1] for r in forged[form]] == [
            r[-2 if form == "gradescope" else -1] for r in honest[form]
        ], form


def test_the_review_twin_passes_each_review(grades):
    rows = grades["hidden"]["ex_rev_honest"]["json"]  # and Exercise A's hidden checks after
    assert [(r[0], r[1]) for r in rows if "hidden" not in r[0]] == [
        (f"ex_{e}_{kind}", "passed") for kind in ("predict", "review") for e in "abdef"
    ], rows


@pytest.mark.parametrize("forgery", sorted(forgery_reviews.FORGERIES))
def test_a_run_under_another_name_fails_its_review_and_leaves_the_others_as_the_twins(
    grades, forgery
):
    """A review's runs by their names (`forgery_reviews`): another setup under the name fails
    that review's row with both setups; every other row is the twin's."""
    honest = grades["hidden"]["ex_rev_honest"]["json"]
    forged = grades["hidden"][f"ex_rev_forged_{forgery}"]["json"]
    only_rows_fail(forged, honest, forgery_reviews.FORGERIES[forgery][1])


def test_the_lab15_twin_fails_its_wrong_defect_and_its_missed_forecast(grades):
    rows = grades["hidden"]["lab15_honest"]["json"]
    assert [(r[0], r[1]) for r in rows] == [
        ("lab15_forecast", "passed"),
        *[("lab15_conviction", "failed")] * 2,
    ], rows
    assert rows[1][2].startswith("H3 is the right system, but"), rows
    assert "the intervention run did not meet its FORECAST" in rows[2][2], rows


@pytest.mark.parametrize("forgery", sorted(forgery_lab15.FORGERIES))
def test_a_forged_mystery_or_record_fails_its_conviction(grades, forgery):
    """Lab 15 (`forgery_lab15`): another mystery's name, a FORECAST set to met, an
    uninformative one made to fit: each row they touch fails with what differs."""
    honest = grades["hidden"]["lab15_honest"]["json"]
    forged = grades["hidden"][f"lab15_forged_{forgery}"]["json"]
    only_rows_fail(forged, honest, forgery_lab15.FORGERIES[forgery][1])
