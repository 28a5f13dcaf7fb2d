"""Lab 15's twin in the forgery suite (`test_grade_forgery`), and its forgeries.

``lab15_conviction(mystery, record, defect)`` judges a conviction against the answer of the
mystery it is handed, and lets the record give its verdict from the rows the kernel filled.
The twin (mystery A, from its parameters cell) hands over two strict records, filled here as
the lab fills them: one whose fix of the logger meets its FORECAST, convicted with the wrong
defect, and one whose LR change misses it, convicted with the right one; both rows fail. The
forgeries name another mystery (one whose answer is that wrong defect), set the missed
FORECAST to met, and trade the FORECAST for one the baseline already meets, its values made
to fit: each would pass, and the grader, which takes the mystery from the parameters cell,
trains the record's runs again and applies its rules to what they measured, fails them.
"""

import functools
import json

import nbformat

MYSTERY = "A"  # its defect: the logger divides by the wrong count
OTHER = "random-6"  # a draw of mystery A's other variant, whose defect is the stale logger
LOSS = {"H1": [[0, 2.3], [20, 2.6]], "H2": [[0, 2.3], [49, 2.3]], "H3": [[0, 2.3], [49, 1.2]]}
GRAD = {"H1": [[0, 0.5], [20, 20.0]], "H2": [[0, 0.5], [49, 0.5]], "H3": [[0, 0.5], [49, 0.7]]}
FORECAST = "loss_reported > 0.5 by step 45"
BELIEFS = {
    "baseline": "H3 and H1 stay open: the raw loss falls while the dashboard shows little",
    "raw_vs_reported": "H3 supported: the reported value is a small fraction of the raw loss",
    "overfit": "H2 weakened: the pipeline memorises 64 samples to ~0",
    "label_shuffle": "H2 ruled out: shuffled labels train differently from the real ones",
    "intervention": "H3 tested on the first seed: the change and what it did to the loss",
    "confirmation": "H3 tested again on the second seed, with the same one change",
}
RUNS = """from labkit.diagnosis import lab15
for change in ({"fix": "logger"}, {"lr_factor": 0.5}):
    for seed in lab15.seeds(mystery):
        lab15.run_mystery(mystery, seed=seed, **change)
"""  # the intervention and confirmation runs, which the grader hears begin
CELLS = [
    f"mystery = {MYSTERY!r}",  # the parameters cell
    "RECORDS",  # `source()`
    f"print(check.lab15_forecast({FORECAST!r}))\n{RUNS}",  # the FORECAST, then its runs
    'print(check.lab15_conviction(mystery, record_met, "logger reports a stale value"))',
    'print(check.lab15_conviction(mystery, record_missed, "logger divides by the wrong count"))',
]
AS = "the answer to lab15_conviction could not be checked: "
FORGERIES = {  # name -> (the block added to the records' cell, {check or (check, cell): starts})
    "mystery": (
        f"mystery = {OTHER!r}\n",
        {
            "lab15_conviction": f"{AS}mystery (given as argument 1) is not the notebook's "
            f"mystery, 'A' (from its parameters cell): it is {OTHER!r}; pass what",
        },
    ),
    "met": (
        """for row in ("intervention", "confirmation"):
    record_missed.rows[row]["data"]["met"] = True
""",
        {
            ("lab15_conviction", 4): f"{AS}record (given as argument 2) is not the record of "
            "mystery A's runs: its intervention row says met=True, and the grader's run of "
            "{'mystery': 'A', 'fix': None, 'lr_factor': 0.5} on seed 3 gives met=False",
        },
    ),
    "forecast": (  # a FORECAST doing nothing meets, sealed anew, its values worked out to fit
        """from labkit.diagnosis import lab15
from labkit.diagnosis.record.prediction import Prediction
record_missed.forecast = Prediction("loss < 100 by step 45").seal()
for row in ("intervention", "confirmation"):
    data = record_missed.rows[row]["data"]
    run = lab15.run_mystery(mystery, seed=data["seed"], lr_factor=0.5)
    data["met"], data["observed"] = record_missed.forecast.judge(run.table["step"], run.table["loss_raw"])
""",
        {  # never handed over before its runs: the grader counts it as not sealed
            ("lab15_conviction", 4): f"{AS}record (given as argument 2) is not the record of "
            "mystery A's runs: its FORECAST 'loss < 100 by step 45' is marked sealed before the "
            "intervention run, and the grader never received it (check.lab15_forecast)",
        },
    ),
    "unsealed": (  # the runs first, the FORECAST after: the record still says sealed before
        RUNS,
        {
            ("lab15_conviction", cell): f"{AS}record (given as argument 2) is not the record of "
            f"mystery A's runs: its FORECAST {FORECAST!r} is marked sealed before the "
            "intervention run, and the grader received it (check.lab15_forecast) only after "
            "the intervention run began, so it counts as not sealed"
            for cell in (3, 4)
        },
    ),
}


@functools.cache
def source() -> str:
    """The records' cell: the two records, filled here as the lab fills them, read back."""
    records = {"record_met": {"fix": "logger"}, "record_missed": {"lr_factor": 0.5}}
    lines = [
        "import json",
        "from labkit import check",
        "from labkit.diagnosis.record.triage import TriageRecord",
    ]
    for name, change in records.items():
        text = json.dumps(filled(change).to_dict())
        lines.append(f"{name} = TriageRecord.from_dict(json.loads({text!r}))")
    return "\n".join(lines)


@functools.cache
def _probes():
    from labkit.diagnosis import lab15
    from labkit.probes import label_shuffle_control, overfit_probe

    model, batch, forward, loss_fn = lab15.pipeline(MYSTERY)
    overfit = overfit_probe(model, batch, forward=forward, loss_fn=loss_fn)
    shuffle = label_shuffle_control(model, batch, real=overfit, forward=forward, loss_fn=loss_fn)
    return {"overfit": overfit, "label_shuffle": shuffle}


def filled(change: dict):
    """Mystery A's strict record, every row in order, its one intervention `change`, convicted
    as H3."""
    from labkit import Forecast
    from labkit.diagnosis import lab15
    from labkit.diagnosis.record.triage import TriageRecord
    from labkit.probes import raw_vs_reported

    cfg = lab15.config(MYSTERY)
    sealed = lambda points: {  # noqa: E731
        h: Forecast(p, nan_step=25 if h == "H1" else None).seal(cfg) for h, p in points.items()
    }
    rec = TriageRecord(f"Lab 15, mystery {MYSTERY}", strict=True)
    rec.predict(sealed(LOSS), sealed(GRAD))
    base = lab15.run_mystery(MYSTERY)
    rec.record_hashes(base)
    rec.record_baseline(base)
    probes = {"raw_vs_reported": raw_vs_reported(base), **_probes()}
    rec.believe("baseline", BELIEFS["baseline"])
    for row, result in probes.items():
        rec.record_probe(row, result)
        rec.believe(row, BELIEFS[row])
    sketch = Forecast([[0, 2.3], [25, 1.7], [49, 1.3]]).seal(cfg)
    rec.plan_intervention(lab15.setup(MYSTERY), lab15.setup(MYSTERY, **change), FORECAST, sketch)
    rec.record_intervention_run(lab15.run_mystery(MYSTERY, **change))
    rec.believe("intervention", BELIEFS["intervention"])
    second = lab15.seeds(MYSTERY)[1]
    rec.record_confirmation(lab15.run_mystery(MYSTERY, seed=second, **change))
    rec.believe("confirmation", BELIEFS["confirmation"])
    rec.convict("H3", "the logger divides the epoch's loss sum by 500, not the batches seen")
    return rec


def write(folder, name: str, forgery: str = "") -> None:
    nb = nbformat.v4.new_notebook()
    nb.cells = [nbformat.v4.new_code_cell(source() if c == "RECORDS" else c) for c in CELLS]
    nb.cells[0].metadata["tags"] = ["parameters"]
    nb.cells[1].source += "\n" + forgery
    nbformat.write(nb, folder / f"lab15_{name}.ipynb")
