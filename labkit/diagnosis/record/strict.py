"""The strict rules of Lab 15's record, the chapter's Training Run Explorer taken literally.

A `TriageRecord(strict=True)` calls these; `labkit.diagnose` fills a plain record and is
not bound by them. Each rule refuses with a `TriageRefused` sentence that says why:

- rows in the chapter's order: hashes, baseline, raw vs reported, overfit, label shuffle,
  one intervention, its confirmation, the conviction;
- three sealed, distinct H1/H2/H3 sketches (loss and gradient norm) before any probe;
- every run row holds an OBSERVATION (loss and gradient norm at fixed steps) and an
  UPDATED BELIEF, written before the next row;
- the intervention and confirmation runs are the declared setup;
- a FORECAST the baseline already meets is uninformative;
- an H1 verdict about the LR or the optimizer needs a passed overfit row.
"""

from __future__ import annotations

import math
import re

from ...core.metrics import ZERO_NORM, norm_shape  # noqa: F401 (ZERO_NORM re-exported)
from ...core.learner.prose import says_nothing
from .prediction import TriageRefused

ORDER = (
    "hashes",
    "baseline",
    "raw_vs_reported",
    "overfit",
    "label_shuffle",
    "intervention",
    "confirmation",
    "conviction",
)
RUN_ROWS = (
    "baseline",
    "raw_vs_reported",
    "overfit",
    "label_shuffle",
    "intervention",
    "confirmation",
)  # rows that hold an OBSERVATION and an UPDATED BELIEF
PROBE_ROWS = ("raw_vs_reported", "overfit", "label_shuffle")
WHY = {  # why a row waits for the ones before it
    "baseline": "the symptom is quantified before anything else",
    "raw_vs_reported": "instrumentation (H3) is checked first because it costs no training",
    "overfit": "the data (H2) is examined only once the logger is known to tell the truth",
    "label_shuffle": "the label-shuffle control is read against the overfit probe",
    "intervention": "one variable is changed only after the three triage rows",
    "confirmation": "the confirmation repeats an intervention that has run",
    "conviction": "a conviction comes after the confirmation on a second seed",
}
LOSS_SHAPES = ("flat", "descending", "nan")
GRAD_SHAPES = ("zero", "steady", "growing")
HYPOTHESES = ("H1", "H2", "H3")
_LR_WORDS = re.compile(
    r"\b(lr|learning[ -]rate|optimi[sz]er|scheduler|momentum|step ?size|"
    r"sgd|adam)\b",
    re.I,
)


# ---- the order -------------------------------------------------------------------
def filled(record, row: str) -> bool:
    """Whether `row` holds what the next row needs (a planned intervention counts)."""
    r = record.rows[row]
    if row == "intervention":
        return "forecast" in r["data"] and "met" in r["data"]
    return r["status"] != "UNKNOWN"


def require_turn(record, row: str) -> None:
    """Refuse `row` while an earlier row is empty or an earlier run row has no belief."""
    if row in PROBE_ROWS and record.predictions is None:
        raise TriageRefused(
            f"the {row} row waits for your three sealed sketches: call "
            "record.predict(loss_sketch, grad_norm_sketch) first, since a "
            "prediction written after the evidence predicts nothing."
        )
    for earlier in ORDER[: ORDER.index(row)]:
        if earlier == "intervention" and row == "intervention":
            continue
        if not filled(record, earlier):
            raise TriageRefused(
                f"the {row} row comes after the {earlier} row, which is still empty: {WHY[row]}."
            )
        if earlier in RUN_ROWS and not record.rows[earlier]["data"].get("belief"):
            raise TriageRefused(
                f"write the UPDATED BELIEF of the {earlier} row first "
                f"(record.believe({earlier!r}, ...)): each run changes what you "
                "believe before the next one is chosen."
            )


# ---- observations ----------------------------------------------------------------
def _fmt(v) -> str:
    return "null" if v is None else ("NaN" if not math.isfinite(v) else f"{v:.4g}")


def fixed_steps(n: int) -> list[int]:
    """Steps 0, 10, 25, 49, then every 50th, and the last: the same for every run."""
    steps = [s for s in (0, 10, 25, 49) if s < n] + list(range(99, n, 50)) + [n - 1]
    return sorted(set(steps))


def observe(columns: dict, n: int) -> tuple[str, dict]:
    """OBSERVATION text and data: each column's values at the fixed steps, as recorded."""
    steps = fixed_steps(n)
    data = {name: [values[s] for s in steps] for name, values in columns.items()}
    text = "; ".join(
        f"step {s}: " + ", ".join(f"{name} {_fmt(data[name][i])}" for name in columns)
        for i, s in enumerate(steps)
    )
    return text, {"steps": steps, **data}


def observe_run(run) -> tuple[str, dict]:
    """The loss and gradient norm at the fixed steps; with a NaN, where it came and the
    gradient norm of the (up to) ten steps before it: the record a NaN needs."""
    text, data = observe(
        {"loss": run.table["loss_raw"], "grad_norm": run.table["grad_norm"]}, len(run)
    )
    nan, gnan = run.first_nonfinite_step(), run.first_nonfinite_step("grad_norm")
    if nan is not None or gnan is not None:
        first = min(s for s in (nan, gnan) if s is not None)
        before = run.table["grad_norm"][max(0, first - 10) : first]
        text += (
            f"; first non-finite grad_norm at step {gnan}, loss at step {nan}; grad_norm on "
            f"the {len(before)} steps before: {', '.join(_fmt(v) for v in before) or 'none'}"
        )
        data.update(first_nan=nan, first_nan_grad=gnan, grad_norm_before_nan=before)
    return text, data


# ---- the sketches ----------------------------------------------------------------
def forecasts_of(sketch) -> dict:
    """{series name: Forecast} from a multi-series SketchForecast, a dict or one Forecast."""
    if isinstance(sketch, dict):
        return dict(sketch)
    if hasattr(sketch, "forecasts"):
        if not getattr(sketch, "sealed", True):
            raise TriageRefused(
                "a sketch is not sealed yet: draw every curve and press Seal before anything runs."
            )
        return dict(sketch.forecasts())
    if hasattr(sketch, "points") and hasattr(sketch, "is_intact"):
        return {"forecast": sketch}
    raise TypeError(
        f"expected a SketchForecast (or a dict of sealed Forecasts); got {type(sketch).__name__}."
    )


def require_sealed(name: str, f) -> None:
    if f is None or not f.sealed:
        raise TriageRefused(
            f"the {name} sketch is not sealed: draw it and press Seal before anything runs."
        )
    if not f.is_intact():
        raise TriageRefused(f"the {name} sketch was changed after it was sealed.")


def loss_shape(f) -> str:
    shape = "nan" if f.nan_step is not None else f.expected_shape  # labkit.forecast's shape rule
    if shape not in LOSS_SHAPES:
        raise TriageRefused(
            f"a loss sketch reads as {shape!r}; Lab 15 reads one as flat, "
            "descending or NaN (put a NaN step on a curve you expect to blow up)."
        )
    return shape


def grad_shape(f) -> str:
    """zero (collapsed), steady, or growing (over 2x), read before any NaN step."""
    return norm_shape(v for s, v in f.points if f.nan_step is None or s < f.nan_step)


def predictions(loss_sketch, grad_sketch) -> dict:
    """{H: {"loss": shape, "grad_norm": shape, "sealed_at": ...}}, or TriageRefused."""
    loss, grad = forecasts_of(loss_sketch), forecasts_of(grad_sketch)
    out = {}
    for h in HYPOTHESES:
        for what, series in (("loss", loss), ("gradient-norm", grad)):
            if h not in series:
                raise TriageRefused(
                    f"the {what} sketch has no {h} series; draw one curve per "
                    f"hypothesis, named H1, H2 and H3 (it has {sorted(series)})."
                )
            require_sealed(f"{h} {what}", series[h])
        out[h] = {
            "loss": loss_shape(loss[h]),
            "grad_norm": grad_shape(grad[h]),
            "sealed_at": max(loss[h].sealed_at, grad[h].sealed_at),
            "content_hash": loss[h].content_hash[:12] + grad[h].content_hash[:12],
        }
    for i, a in enumerate(HYPOTHESES):
        for b in HYPOTHESES[i + 1 :]:
            pa, pb = out[a], out[b]
            if (pa["loss"], pa["grad_norm"]) == (pb["loss"], pb["grad_norm"]):
                raise TriageRefused(
                    f"{a} and {b} predict the same curves (loss {pa['loss']}, "
                    f"gradient norm {pa['grad_norm']}), so no run could tell them "
                    "apart; change one so they differ in the loss or the norm."
                )
    return out


# ---- the declared setup ------------------------------------------------------------
def setup_of(run) -> dict:
    """The setup a run was made from, without its seed and length."""
    if run.meta.get("setup") is not None:
        return dict(run.meta["setup"])
    config = {k: v for k, v in run.meta.get("config", {}).items() if k not in ("seed", "steps")}
    return {**config, "bug": run.meta.get("bug")}


def require_parent(record, parent: dict) -> None:
    base = record.rows["baseline"]["data"].get("setup")
    if base is not None and dict(parent) != base:
        raise TriageRefused(
            f"the intervention's parent {parent!r} is not the baseline's setup "
            f"{base!r}; change one variable of the setup you observed."
        )


def require_declared(record, run, row: str) -> None:
    plan = record.rows["intervention"]["data"]
    child, got = plan["child"], setup_of(run)
    if got != child:
        diff = sorted(k for k in set(got) | set(child) if got.get(k) != child.get(k))
        raise TriageRefused(
            f"this run is not the declared setup: it differs in "
            f"{', '.join(diff)} (declared {child!r}, got {got!r})."
        )
    hashes = record.rows["hashes"]["data"]
    m = run.meta
    if row == "intervention":
        checks = [
            ("seed", m["seed"], hashes.get("seed")),
            ("init_hash", m["init_hash"], hashes.get("init_hash")),
        ]
        if "data" not in (plan["variable"], plan["after"]):  # a change to the data moves its hash
            checks.append(("data_hash", m["data_hash"], hashes.get("data_hash")))
        for name, got_v, want in checks:
            if got_v != want:
                raise TriageRefused(
                    f"the intervention run has {name} {got_v} but the hashes row "
                    f"holds {want}: the controlled variables must stay fixed."
                )


def require_informative(record, prediction) -> None:
    cols = record.baseline_columns
    if not cols:
        return
    p = prediction.parse()
    last = cols["step"][-1]
    if p["step"] > last:
        raise TriageRefused(
            f"the FORECAST is judged at step {p['step']}, but the baseline ran to "
            f"step {last} only, so nothing shows that doing nothing would miss it; "
            "forecast by a step the baseline reached, or record a longer baseline."
        )
    met, observed = prediction.judge(cols["step"], cols[p["column"]])
    if met:
        raise TriageRefused(
            f"the baseline already meets {prediction.text!r} ({observed:.3g} near "
            f"step {p['step']}), so it cannot tell the intervention from doing "
            "nothing; forecast something only the change would produce."
        )


def require_overfit_gate(record, system: str, mechanism: str) -> None:
    if system != "H1" or not _LR_WORDS.search(mechanism):
        return
    if not record.rows["overfit"]["data"].get("reached"):
        raise TriageRefused(
            "an H1 verdict about the learning rate or the optimizer needs a passed "
            "overfit row first: only a pipeline that can memorise 64 samples "
            "rules out the data and the loss."
        )


def require_belief(text: str) -> str:
    if not isinstance(text, str) or not re.search(r"\bH[123]\b", text):
        raise TriageRefused(
            f"an UPDATED BELIEF says which hypotheses (H1, H2, H3) this row "
            f"supports or rules out; got {text!r}."
        )
    require_said(
        text,
        "UPDATED BELIEF",
        "say which hypothesis it supports or rules out, and what in the row shows it",
    )
    return text.strip()


def require_said(text: str, what: str, how: str) -> None:
    """Refuse a belief or a mechanism line that says nothing (`labkit.core.learner.prose`)."""
    empty = says_nothing(text)
    if empty:
        raise TriageRefused(
            f"this {what} {empty}, so it says nothing about the run; {how}; got {text!r}."
        )


# What a belief must not assert after each probe's verdict: {row: {verdict head: pattern}}
CONTRADICTS = {
    "raw_vs_reported": {
        "agree": r"disagree|differ|mismatch|misreport|do(?:es)?n'?t match",
        "disagree": r"(?<!dis)agree|\bmatch|\bthe same\b|identical|honest",
    },
    "overfit": {
        "reaches ~0": (
            r"stall|(?:can'?t|cannot|fails? to|unable to) (?:learn|memori[sz]e|fit)|"
            r"not (?:get )?memori[sz]ed"
        ),
        "stalls": r"reach(?:es|ed)? ~?0|memori[sz]es|memori[sz]ed|fits (?:them|the batch)",
    },
    "label_shuffle": {
        "differs from": (
            r"same as (?:the )?real|no difference|carr(?:y|ies) no signal|ignores? the labels"
        ),
        "same as": r"differ|trains? differently|carr(?:y|ies) (?:a )?signal|reads? the labels",
    },
}
_DENIED = re.compile(r"\b(?:not|no|never|nor|cannot|without|\w+n't)\b")


def require_consistent(record, row: str, text: str) -> None:
    """Refuse a belief that asserts the opposite of the probe line printed for `row`."""
    line = record.rows[row].get("text") or ""
    for head, pattern in CONTRADICTS.get(row, {}).items():
        if not line.startswith(head):
            continue
        for found in re.finditer(pattern, text.lower()):
            if _DENIED.search(" ".join(text.lower()[: found.start()].split()[-3:])):
                continue  # "does not agree" says what the probe says
            raise TriageRefused(
                f"this UPDATED BELIEF says {found.group(0)!r}, but the {row} line above says "
                f"{line.split(';')[0]!r}: write what the probe shows, then what it means "
                "for H1, H2 and H3."
            )


def sketch_score(sketch, run) -> dict:
    """How a sealed sketch of the loss compares with a run: the mean |ln predicted - ln actual|
    over its points (NaN steps are misses) and whether a NaN was predicted and seen."""
    if run.timing.get("started_at", 0) < sketch.sealed_at:
        raise TriageRefused(
            "the intervention sketch was sealed after this run started; a "
            "sketch must come before the run it predicts."
        )
    loss = dict(zip(run.table["step"], run.table["loss_raw"]))
    errors = []
    for step, pred in sketch.points:
        real = loss.get(step)
        if real is not None and math.isfinite(real) and real > 0 and pred > 0:
            errors.append(abs(math.log(pred) - math.log(real)))
    nan_seen = run.first_nonfinite_step()
    mean = sum(errors) / len(errors) if errors else None
    text = (
        f"mean log error {'n/a' if mean is None else f'{mean:.2f}'} over {len(errors)} of "
        f"{len(sketch.points)} points; NaN predicted {'no' if sketch.nan_step is None else 'yes'}, "
        f"seen {'no' if nan_seen is None else 'yes'}"
    )
    return {
        "mean_log_error": mean,
        "misses": len(sketch.points) - len(errors),
        "nan_predicted": sketch.nan_step,
        "nan_seen": nan_seen,
        "text": text,
    }
