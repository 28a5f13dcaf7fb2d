"""Lab 15's truth, made again: the mystery a conviction is judged on, and what its record measured.

``lab15_conviction(mystery, record, defect)`` judges the conviction against the answer of the
mystery handed over, and lets the record give its verdict from rows the learner's kernel
filled. Another mystery's name would judge a wrong conviction against another answer; a record
edited after its runs (the intervention's FORECAST set to met, a hashes row of another setup)
would give a verdict its runs never earned. So the grader (`labkit.learn.grade.truth.given`)
takes the mystery from the notebook's parameters cell (`made.Notebook.mystery`), and trains
again each run the record measured: the baseline (its hashes, its first and last loss and
gradient norm, the columns a FORECAST is judged against), the raw-vs-reported check on that
baseline, the overfit probe and the label-shuffle control (their verdicts), and
the one intervention and its confirmation on their seeds (the setup declared, the FORECAST met
or not, the value observed). A row that differs fails the conviction's row with both values.
The record's own times count for nothing: its FORECAST is sealed before the intervention and
confirmation runs only where the grader received it (``check.lab15_forecast``) before it heard
those runs begin (`labkit.learn.grade.truth.Heard`); else the row says it was not sealed.
"""

from __future__ import annotations

import functools
import math

RTOL, ATOL = 1e-5, 1e-7  # as labkit.learn.grade.truth: one machine, another summation order
HASHES = ("seed", "data_hash", "init_hash")
LONGEST = 1000  # steps: far above the lab's 50, and what the grader trains again in seconds
RAW_KEYS = ("agree", "steps_compared")  # what the raw_vs_reported row's verdict rests on
AGREE = {True: "agree", False: "disagree"}  # the head of its line, as the record writes it
SHUFFLED = {True: "same as", False: "differs from"}


def notebook_mystery(given, nb, arguments: dict) -> dict:
    """The mystery the notebook runs: its parameters cell's, drawn as the notebook draws it."""
    if given != nb.mystery:
        raise ValueError(
            f"the notebook's mystery, {nb.mystery!r} (from its parameters cell): it is {given!r}"
        )
    return {"the notebook's mystery": given}


def measured_record(given, nb, arguments: dict) -> dict:
    """Lab 15's strict record, each measured row as the grader's own runs measure it."""
    from ....diagnosis.record.triage import TriageRecord

    what = f"the record of mystery {nb.mystery}'s runs"
    if isinstance(given, TriageRecord) and given.strict:  # else the check says what it needs
        try:
            why = _differs(given, nb.mystery) or _unsealed(given, nb.mystery, nb.heard)
        except (TypeError, KeyError, AttributeError, IndexError) as exc:
            why = f"its rows cannot be read ({type(exc).__name__}: {str(exc)[:120]})"
        if why:
            raise ValueError(f"{what}: {why}")
    return {what: given}


@functools.cache
def _run(mystery: str, seed: int | None, steps: int, fix: str | None, lr_factor: float):
    from ....diagnosis import lab15

    return lab15.run_mystery(mystery, seed=seed, steps=steps, fix=fix, lr_factor=lr_factor)


@functools.cache
def _probes(mystery: str) -> dict:
    """The overfit probe and the label-shuffle control as the lab calls them, on the
    mystery's own pipeline: what each row's verdict rests on."""
    from ....diagnosis import lab15
    from ....diagnosis.probes.overfit import label_shuffle_control, overfit_probe

    model, batch, forward, loss_fn = lab15.pipeline(mystery)
    overfit = overfit_probe(model, batch, forward=forward, loss_fn=loss_fn)
    shuffle = label_shuffle_control(model, batch, real=overfit, forward=forward, loss_fn=loss_fn)
    return {
        "overfit row's reached": bool(overfit.details["reached"]),
        "label_shuffle row's same": bool(shuffle.details["same"]),
        "label_shuffle row's inconclusive": bool(shuffle.details["inconclusive"]),
    }


def _differs(rec, mystery: str) -> str | None:
    """Where the record's measured rows differ from the grader's runs, in words."""
    rows = {name: row for name, row in rec.rows.items() if row["status"] != "UNKNOWN"}
    steps = rows.get("baseline", {}).get("data", {}).get("steps", 50)
    if type(steps) is not int or not 1 <= steps <= LONGEST:
        return f"its baseline row has steps={steps!r}, and a baseline has 1 to {LONGEST}"
    base = _run(mystery, None, steps, None, 1.0)
    checks = []
    if "hashes" in rows:
        hashes = rows["hashes"]["data"]
        checks += [(f"hashes row's {k}", hashes.get(k), base.meta[k]) for k in HASHES]
    if "baseline" in rows:
        data = rows["baseline"]["data"]
        for column in ("loss", "grad_norm"):
            mine = base.table["loss_raw" if column == "loss" else column]
            checks.append((f"baseline row's {column}", data.get(column), [mine[0], mine[-1]]))
        for column, values in rec.baseline_columns.items():
            own = base.table.get(column) if column != "loss" else base.table["loss_raw"]
            checks.append((f"baseline's {column!r} column", values, own))
    if "raw_vs_reported" in rows:  # the verdict's head and its numbers, from the baseline
        from ....diagnosis.probes.reported import raw_vs_reported

        own, data = raw_vs_reported(base).details, rows["raw_vs_reported"]["data"]
        head = str(rows["raw_vs_reported"].get("text", "")).split(" ")[0].rstrip(":;")
        checks += [(f"raw_vs_reported row's {k}", data.get(k), own[k]) for k in RAW_KEYS]
        checks.append(("raw_vs_reported row's verdict", head, AGREE[own["agree"]]))
    for row, key in (
        ("overfit", "reached"),
        ("label_shuffle", "same"),
        ("label_shuffle", "inconclusive"),
    ):
        if row in rows:
            what = f"{row} row's {key}"
            checks.append((what, rows[row]["data"].get(key), _probes(mystery)[what]))
    if "label_shuffle" in rows:
        head = str(rows["label_shuffle"].get("text", "")).split(" real labels")[0]
        same = _probes(mystery)["label_shuffle row's same"]
        checks.append(("label_shuffle row's verdict", head, SHUFFLED[same]))
    for what, had, own in checks:
        if not _same(had, own):
            return f"its {what} is {_short(had)}, and the grader's run has {_short(own)}"
    return _intervention(rec, rows, mystery)


def _intervention(rec, rows: dict, mystery: str) -> str | None:
    """The intervention and confirmation rows against the declared setup, run again."""
    from ....diagnosis import lab15
    from ....diagnosis.record.prediction import Prediction

    if "met" not in rows.get("intervention", {}).get("data", {}):
        return None
    plan = rows["intervention"]["data"]
    child, parent = plan.get("child"), lab15.setup(mystery)
    if rec.forecast is None:
        return "its intervention row was judged, and it holds no FORECAST"
    try:
        declared = lab15.setup(mystery, **{k: v for k, v in child.items() if k != "mystery"})
        forecast = Prediction(rec.forecast.text)
    except (TypeError, ValueError, AttributeError) as exc:
        return f"its intervention row declares {child!r}, not a setup of mystery {mystery} ({exc})"
    changed = [k for k in parent if parent[k] != declared.get(k)]
    if declared != child or len(changed) != 1:
        return f"its intervention row declares {child!r}, not one change to {parent!r}"
    first = lab15.seeds(mystery)[0]
    seeds = {"intervention": plan.get("seed")}
    if seeds["intervention"] != first:
        return (
            f"its intervention row is on seed {plan.get('seed')!r}, and mystery {mystery}'s "
            f"baseline (whose controlled variables it keeps) on seed {first}"
        )
    if "confirmation" in rows:
        seeds["confirmation"] = rows["confirmation"]["data"].get("seed")
        if not _whole(seeds["confirmation"]) or seeds["confirmation"] == first:
            return (
                f"its confirmation row is on seed {seeds['confirmation']!r}, and a confirmation "
                f"runs on a second seed, not {first}"
            )
    steps = max(50, forecast.parse()["step"] + 1)  # the lab's 50, or as far as the FORECAST
    if steps > LONGEST:
        return (
            f"its FORECAST {forecast.text!r} is judged at step {steps - 1}, and the grader trains "
            f"the lab's runs again to step {LONGEST} at most (the lab's run 50 steps)"
        )
    for row, seed in seeds.items():
        data = rows[row]["data"]
        run = _run(mystery, seed, steps, declared["fix"], declared["lr_factor"])
        met, observed = forecast.judge(run.table["step"], run.column(forecast.parse()["column"]))
        for name, own in (("met", met), ("observed", observed)):
            if not _same(data.get(name), own):
                return (
                    f"its {row} row says {name}={_short(data.get(name))}, and the grader's run "
                    f"of {declared!r} on seed {seed} gives {name}={_short(own)}"
                )
    if sorted(set(rec.seeds)) != sorted(set(seeds.values())):
        return f"its seeds are {rec.seeds!r}, and its runs' are {sorted(set(seeds.values()))}"
    return None


def _unsealed(rec, mystery: str, heard) -> str | None:
    """Where the record says its FORECAST was sealed before a run, and what the grader heard
    says otherwise: it counts a FORECAST (and the sketch sealed with it) as sealed before the
    intervention and confirmation runs only where it received that FORECAST
    (check.lab15_forecast) before it heard the run begin (`grade.truth.Heard`). None outside
    grading (`heard` None)."""
    rows = rec.rows
    if heard is None:
        return None
    plan = rows["intervention"]["data"]
    if "met" not in plan or rec.forecast is None:
        return None
    from ....diagnosis.record.prediction import Prediction

    text, child = rec.forecast.text, plan["child"]
    got = _received(heard, "lab15_forecast", lambda a: a == [text])
    steps = max(50, Prediction(text).parse()["step"] + 1)
    for row in ("intervention", "confirmation"):
        seed = rows[row]["data"].get("seed")
        if seed is None:
            continue
        key = _key(mystery, seed, steps, child["fix"], child["lr_factor"])
        why = _after(got, heard.begun.get(key), f"{row} run")
        if why:
            return (
                f"its FORECAST {text!r} is marked sealed before the {row} run, and the grader "
                f"{why}, so it counts as not sealed; check the FORECAST with "
                "check.lab15_forecast and plan the intervention before you run the change"
            )
    return None


def _received(heard, check: str, same) -> float | None:
    """When the grader first received an answer to `check` whose arguments are `same`."""
    from ...grade.answers import read_answer

    for when, name, text in heard.answers:
        try:
            if name == check and same(read_answer(text)[0]):
                return when
        except (ValueError, TypeError, KeyError, AttributeError, IndexError):  # not that answer
            continue
    return None


def _after(got, began, run: str) -> str | None:
    """Why a FORECAST received at `got` is not sealed before a run heard at `began`."""
    if got is None:
        return "never received it (check.lab15_forecast)"
    if began is None:
        return f"never heard the {run} begin (it hears labkit's own runs as they begin)"
    if got >= began:
        return f"received it (check.lab15_forecast) only after the {run} began"
    return None


@functools.cache
def _key(mystery: str, seed, steps: int, fix, lr_factor: float) -> str:
    """How the hand-over names the mystery's run as it begins (`core.train.setup_key`)."""
    from ....core.train import setup_key
    from ....diagnosis import lab15

    return "setup:" + setup_key(lab15._trainer(mystery, seed, steps, fix, lr_factor))


def _whole(v) -> bool:
    return type(v) is int and 0 <= v < 2**31


def _same(a, b) -> bool:
    """`a` (the record's) is `b` (the grader's): lists value by value, numbers within RTOL."""
    if isinstance(b, (list, tuple)):
        return isinstance(a, (list, tuple)) and len(a) == len(b) and all(map(_same, a, b))
    if a is None or b is None or isinstance(b, (bool, str)):
        return type(a) is type(b) and a == b
    if isinstance(a, bool) or not isinstance(a, (int, float)):
        return False
    if not (math.isfinite(a) and math.isfinite(b)):
        return (math.isnan(a) and math.isnan(b)) or a == b
    return math.isclose(a, b, rel_tol=RTOL, abs_tol=ATOL)


def _short(v) -> str:
    text = repr(v)
    return text if len(text) <= 80 else f"{text[:77]}..."
