"""Predictions sealed before a run, and their review after it.

A prediction is a dict of answers to the questions a run is about to settle. `seal`
checks its form (every field answered, each from its answer space) and notes the time;
`review`, after the run, refuses a prediction changed since sealing or runs started
before it, then compares each field with what the runs measured. A miss does not fail:
it is the lesson, so the review says what was expected and what happened, and keeps the
comparison in the learner store (kind ``prediction``).

Forms: ``("choice", choices)``, ``("bool",)``, ``("groups", names)`` (a list of names),
``("text",)`` (a reason: kept, not scored), ``("roles", keys, choices)`` (a dict),
``("check", fn)`` (``fn(value)`` raises `CheckFailed` on a malformed answer).
"""

from __future__ import annotations

import json
import time
from contextlib import contextmanager

from ._base import CheckFailed, NotYetAnswered
from ._words import need_text

_SEALED: dict = {}  # key -> (canonical text, sealed_at)
_CLOCK = None  # while `labkit grade` replays a notebook's checks: the seal time, from the grader


@contextmanager
def replaying(clock):
    """`labkit grade` re-running one notebook's checks in its own process: seals start afresh,
    each is dated `clock()` (when the grader started the sealing cell), and nothing goes to
    the learner store."""
    global _SEALED, _CLOCK
    saved = _SEALED, _CLOCK
    _SEALED, _CLOCK = {}, clock
    try:
        yield
    finally:
        _SEALED, _CLOCK = saved


def _canonical(prediction: dict) -> str:
    def plain(v):
        if isinstance(v, (set, frozenset, tuple)):
            return sorted(map(plain, v), key=repr)
        if isinstance(v, list):
            return sorted(map(plain, v), key=repr) if all(isinstance(x, str) for x in v) else v
        if isinstance(v, dict):
            return {str(k): plain(x) for k, x in v.items()}
        return v

    return json.dumps(plain(prediction), sort_keys=True, ensure_ascii=False)


def _check_field(name: str, value, form: tuple):
    kind = form[0]
    if value is None or value is ... or (isinstance(value, str) and not value.strip()):
        raise NotYetAnswered(f"prediction[{name!r}] is still empty: answer it before the run.")
    if kind == "bool" and not isinstance(value, bool):
        raise CheckFailed(f"prediction[{name!r}] must be True or False; got {value!r}.")
    if kind == "choice" and value not in form[1]:
        raise CheckFailed(
            f"prediction[{name!r}] must be one of {', '.join(map(repr, form[1]))}; got {value!r}."
        )
    if kind == "groups":
        if not isinstance(value, (list, tuple, set)) or not all(isinstance(g, str) for g in value):
            raise CheckFailed(
                f"prediction[{name!r}] must be a list of names from "
                f"{', '.join(map(repr, form[1]))}; got {value!r}."
            )
        unknown = sorted(set(value) - set(form[1]))
        if unknown:
            raise CheckFailed(
                f"prediction[{name!r}] names {unknown[0]!r}, which is not one of "
                f"{', '.join(map(repr, form[1]))}."
            )
    if kind == "roles":
        keys, choices = form[1], form[2]
        if not isinstance(value, dict) or set(value) != set(keys):
            raise CheckFailed(
                f"prediction[{name!r}] must be a dict with one entry for each of "
                f"{', '.join(map(repr, keys))}; got {value!r}."
            )
        bad = [k for k, v in value.items() if v not in choices]
        if bad:
            raise CheckFailed(
                f"prediction[{name!r}][{bad[0]!r}] must be one of "
                f"{', '.join(map(repr, choices))}; got {value[bad[0]]!r}."
            )
    if kind == "text":
        need_text(value, f"prediction[{name!r}]")
    if kind == "check":
        form[1](value)


def _is_form(prediction) -> bool:
    """A prediction answered in a form (`labkit.widgets.ask_prediction`), not a dict."""
    return callable(getattr(prediction, "require", None))


def _answers(prediction):
    """The form's sealed dict, waiting for the Seal where a front end shows the form."""
    return prediction.require() if _is_form(prediction) else prediction


def seal(key: str, prediction, forms: dict) -> str:
    """Check the prediction's form and note the time; run this before the runs it predicts."""
    prediction = _answers(prediction)
    if not isinstance(prediction, dict):
        raise CheckFailed(
            f"Write the prediction as a dict with the fields "
            f"{', '.join(map(repr, forms))}; got {type(prediction).__name__}."
        )
    missing = [f for f in forms if f not in prediction]
    if missing:
        raise NotYetAnswered(
            f"The prediction has no {missing[0]!r} field yet: answer every question before the run."
        )
    extra = sorted(set(prediction) - set(forms))
    if extra:
        raise CheckFailed(
            f"The prediction has a field {extra[0]!r} that no question asks for; "
            f"the fields are {', '.join(map(repr, forms))}."
        )
    for name, form in forms.items():
        _check_field(name, prediction[name], form)
    text = _canonical(prediction)
    old = _SEALED.get(key)
    if old is None or old[0] != text:
        _SEALED[key] = (text, _first_sealed(key, text) if _CLOCK is None else _CLOCK())
    return (
        f"ok: prediction sealed ({len(forms)} answers); the runs it predicts must start "
        "after this cell"
    )


def _first_sealed(key: str, text: str) -> float:
    """When this very prediction was first sealed: kept in the learner store (kind
    ``prediction_seal``), so a re-run or a restarted kernel keeps the seal and its review
    counts once. A store that cannot be used gives the time now."""
    import hashlib

    try:
        from ...store.learner import default_store

        store = default_store()
        name = f"{key}:{hashlib.sha256(text.encode()).hexdigest()[:16]}"
        old = store.get("prediction_seal", name)
        if old is not None:
            return old["body"]["sealed_at"]
        body = {"exercise": key, "prediction": json.loads(text), "sealed_at": time.time()}
        return store.add("prediction_seal", name, body)["body"]["sealed_at"]
    except (ValueError, OSError):
        return time.time()


def _same(a, b) -> bool:
    many = (list, tuple, set, frozenset)
    if isinstance(a, many) and isinstance(b, many):
        return set(a) == set(b)
    return a == b


def review(key: str, prediction, truth: dict, runs, same: dict | None = None) -> str:
    """Compare a sealed prediction with what `runs` measured; a miss is shown, not failed.

    `same` maps a field to its own comparison ``(said, actual) -> bool``."""
    if _is_form(prediction):
        if prediction.prediction is None:
            raise NotYetAnswered(
                "The prediction form above is not sealed yet: answer it and press "
                "Seal, then run the experiment again."
            )
        prediction = prediction.prediction
    if key not in _SEALED:
        raise CheckFailed(
            "This prediction was never sealed: run its sealing cell before the runs, "
            "then run the experiment again."
        )
    text, sealed_at = _SEALED[key]
    if not isinstance(prediction, dict) or _canonical(prediction) != text:
        raise CheckFailed(
            "The prediction changed after it was sealed; put back what you wrote "
            "before the run, since a prediction edited afterwards is hindsight."
        )
    for run in runs:
        started = run.timing.get("started_at")
        if started is None or started < sealed_at:
            raise CheckFailed(
                "A run compared here started before the prediction was sealed; seal "
                "the prediction first, then run the experiment again."
            )
    lines, hits = [], 0
    for name, actual in truth.items():
        said = prediction[name]
        if same and name in same:
            hit = same[name](said, actual)
        elif isinstance(actual, dict):
            hit = all(_same(said.get(k), v) for k, v in actual.items())
        else:
            hit = _same(said, actual)
        hits += hit
        lines.append(
            f"  {name}: you predicted {said!r}; the run shows {actual!r}: "
            f"{'hit' if hit else 'miss'}"
        )
    if _CLOCK is None:
        _keep(key, prediction, truth, hits, sealed_at)
    head = f"ok: {hits} of {len(truth)} predictions hit" + (
        "" if hits == len(truth) else "; each miss is your lesson, read it below"
    )
    return "\n".join([head, *lines])


def _keep(key, prediction, truth, hits, sealed_at) -> None:
    """Keep the comparison in the learner store; a store that cannot be written is not fatal."""
    try:
        from ...store.learner import default_store

        body = json.loads(
            json.dumps(
                {
                    "exercise": key,
                    "prediction": json.loads(_canonical(prediction)),
                    "truth": json.loads(_canonical(truth)),
                    "hits": hits,
                    "total": len(truth),
                    "sealed_at": sealed_at,
                },
                default=str,
            )
        )
        default_store().add("prediction", f"{key}:{sealed_at:.6f}", body)
    except (ValueError, OSError):
        pass
