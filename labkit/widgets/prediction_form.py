"""`ask_prediction(key)`: an exercise's prediction answered in a form, sealed, then Run All goes on.

    >>> prediction = ask_prediction("ex_a")   # the form, below this cell
    >>> print(ex_a_predict(prediction))        # next cell: Run All waits here for the Seal

The form has one control per question of the exercise's FORMS (`labkit.learn.check.ex_X`):
a menu for a choice, True/False, a box per name for a list of names, one menu per key for
roles, a text box for a reason. Seal checks the answers as `ex_X_predict` does (one sentence
under the form when one is missing or malformed) and keeps the seal in the learner store.

Where the prediction comes from, first match wins:
1. a grader's hand-over (`labkit grade` re-running the saved notebook: the sealed answers
   this cell left in its outputs, `labkit.forecast.carry`);
2. a seal kept in the learner store for this exercise (a re-run or a restarted kernel): the
   form comes back sealed, with "Answer again" to start a new attempt;
3. the learner, in the form: in a kernel whose front end shows it, the next cell (the
   exercise's check, through `require()`) waits for Seal, keeping the form live, and for the
   exercise's sketch above it when that is not sealed yet; the stop button ends the wait
   with one sentence. (The form is shown by one cell and waited on in
   the next, as a sketch is: a view drawn while its own cell runs never reports back.)
Headless with none of these (papermill, nbval, a blank exercise graded), it stops at once
with `PredictionNotGiven`, which `labkit grade` counts as "not yet answered". A learner who
prefers typing replaces the `ask_prediction` line with the dict itself.
"""

from __future__ import annotations

import datetime
import importlib
from pathlib import Path

import anywidget
import traitlets as t

from ..core.learner import pending
from ..errors import suggest, teaching_lines
from ..forecast.carry import carried_prediction, show_prediction
from ..forecast.gate import wait_for
from ..learn.check import _predict
from ..learn.check._base import CheckFailed
from .sketch import gate as sketch_gate

HERE = Path(__file__).parent
_FORMS: dict = {}  # key -> the live form of this kernel, so a re-run shows the same one


class PredictionNotGiven(NotImplementedError):
    """No prediction yet: the form was not sealed, or nobody could see it (a headless run)."""

    def _render_traceback_(self) -> list[str]:
        return teaching_lines(self, "Predict first", "PredictionNotGiven", "#1f6fb2", "1;34")


EXERCISES = ("ex_a", "ex_b", "ex_c", "ex_d", "ex_e", "ex_f")  # the ones that seal a prediction


def forms_of(key: str) -> dict:
    """The exercise's questions: FORMS of `labkit.learn.check.ex.<letter>` (``labkit.check.<key>``)."""
    if key not in EXERCISES:
        raise ValueError(
            f"key={key!r} is not an exercise with a prediction; the keys are "
            f"{', '.join(EXERCISES)}.{suggest(key, EXERCISES)}"
        )
    return importlib.import_module(f"labkit.learn.check.ex.{key[3:]}").FORMS


def _spec(forms: dict) -> list[dict]:
    """What the front end draws: one entry per question, choices as text."""
    out = []
    for name, form in forms.items():
        kind = form[0]
        entry = {"name": name, "kind": kind}
        if kind in ("choice", "groups"):
            entry["choices"] = [str(c) for c in form[1]]
        if kind == "roles":
            entry["keys"], entry["choices"] = [str(k) for k in form[1]], [str(c) for c in form[2]]
        out.append(entry)
    return out


def _value(form: tuple, raw):
    """The front end's answer (text, a list of text, a dict of text) in the form's own types."""
    kind = form[0]
    if raw in (None, "", [], {}) and kind != "groups":
        return None
    if kind == "bool":
        return {"True": True, "False": False}.get(raw, raw)
    if kind == "choice":
        return next((c for c in form[1] if str(c) == raw), raw)
    if kind == "groups":
        return [next((c for c in form[1] if str(c) == r), r) for r in (raw or [])]
    if kind == "roles":
        return _roles_back(form, raw, drop_empty=True)
    return raw


def _roles_back(form, roles: dict, drop_empty: bool = False) -> dict:
    """A roles answer's keys as the form's own (the front end and JSON give strings)."""
    keys = {str(k): k for k in form[1]}
    return {keys.get(k, k): v for k, v in roles.items() if v or not drop_empty}


def _text(form: tuple, value):
    """A sealed answer back as the front end's text."""
    if form[0] == "groups":
        return [str(v) for v in value]
    if form[0] == "roles":
        return {str(k): str(v) for k, v in value.items()}
    return str(value)


class PredictionForm(anywidget.AnyWidget):
    _esm = HERE / "prediction_form.js"
    _css = HERE / "sketch" / "sketch.css"  # the sketch's own look

    spec = t.List().tag(sync=True)
    answers = t.Dict().tag(sync=True)  # name -> the front end's text, list or dict
    sealed = t.Bool(False).tag(sync=True)
    message = t.Unicode("").tag(sync=True)
    seal_requested = t.Int(0).tag(sync=True)  # the Seal button adds 1; Python seals
    again_requested = t.Int(0).tag(sync=True)  # Answer again adds 1; Python unseals
    rendered = t.Int(0).tag(sync=True)  # views a front end drew: a kernel that can wait

    def __init__(self, key: str):
        self.key, self.forms = key, forms_of(key)
        super().__init__(spec=_spec(self.forms))
        self.prediction: dict | None = None
        self._shown = self._handed = False
        self.observe(lambda change: self.seal(), "seal_requested")
        self.observe(lambda change: self.again(), "again_requested")
        pending.hold(("prediction", key), self)  # every run of this kernel waits for its seal

    def collected(self) -> dict:
        return {name: _value(form, self.answers.get(name)) for name, form in self.forms.items()}

    def seal(self, prediction: dict | None = None) -> bool:
        """Check and seal the answers (or `prediction`); a refusal is one sentence below."""
        if self.sealed:
            return True
        prediction = self.collected() if prediction is None else prediction
        try:
            _predict.seal(self.key, prediction, self.forms)
        except CheckFailed as exc:
            self.message = str(exc)
            return False
        self.prediction = prediction
        self.answers = {n: _text(self.forms[n], v) for n, v in prediction.items()}
        at = _predict._SEALED[self.key][1]
        self.message = (
            f"Sealed at {datetime.datetime.fromtimestamp(at):%H:%M:%S}; the runs "
            "below are compared with it."
        )
        self.sealed = True
        return True

    def require(self) -> dict:
        """The sealed prediction; in a kernel whose front end shows the form, wait for Seal.
        Headless and unsealed: `PredictionNotGiven` at once."""
        if not self.sealed:
            # One wait seals the exercise's sketch above too: a second wait later in the same
            # Run All never hears its widgets (jupyter-ui-poll replays the queued cells
            # inside the first), so the sketch is drawn and sealed while this one waits.
            sketches = [s for s in sketch_gate.live(self.key) if not s.sealed and not s._from_code]
            what = "your sealed prediction" + (" and sketch" if sketches else "") + " above"
            wait_for(
                lambda: self.sealed and all(s.sealed for s in sketches),
                lambda: self.rendered > 0,
                what=what,
            )
        if not self.sealed:
            raise self.refusal()
        if not self._shown and not self._handed:
            self._shown = True  # answered by hand: keep the answers in the notebook for a grader
            show_prediction(self.key, self.prediction)
        return self.prediction

    def refusal(self) -> PredictionNotGiven:
        """The one sentence of a cell refused because this prediction is not sealed."""
        return PredictionNotGiven(
            "Answer the questions in the form above and press Seal, then run this cell and "
            "the ones below it; or write the prediction as a dict with the fields "
            f"{', '.join(map(repr, self.forms))} in place of the ask_prediction line."
        )

    def again(self) -> None:
        """Unseal for a new attempt; the old seal stays kept in the store."""
        self.sealed, self.prediction, self._shown = False, None, False
        self.message = "A new attempt: change your answers, press Seal, then run this cell again."


def _kept(key: str) -> dict | None:
    """The latest prediction sealed for `key` in the learner store, or None."""
    try:
        from ..store.learner import default_store

        bodies = [
            r["body"]
            for r in default_store().records("prediction_seal")
            if r["body"].get("exercise") == key
        ]
    except (ValueError, OSError):
        return None
    return max(bodies, key=lambda b: b["sealed_at"])["prediction"] if bodies else None


def ask_prediction(key: str) -> PredictionForm:
    """The exercise's prediction form (see the module docstring): handed over by a grader or
    kept in the store, it comes back sealed; otherwise the learner answers it. The exercise's
    `ex_X_predict(form)` then waits for the Seal (`PredictionForm.require`)."""
    forms_of(key)
    form = _FORMS.get(key)
    if form is None or form.sealed:
        form = _FORMS[key] = _resolved(key)
    from IPython import get_ipython

    if get_ipython() is not None:  # shown below this cell, assigned or not
        from IPython.display import display

        display(form)
    return form


def _resolved(key: str) -> PredictionForm:
    """A new form, sealed already where a grader handed answers over or the store kept a seal."""
    form = PredictionForm(key)
    handed = carried_prediction(key)
    if handed is not None:
        form._handed = form.seal(_typed(form.forms, handed))
    else:
        kept = _kept(key)
        if kept is not None and form.seal(_typed(form.forms, kept)):
            form.message += " Restored from your store; Answer again starts a new attempt."
    return form


def _typed(forms: dict, kept: dict) -> dict:
    """A prediction read back from JSON: roles' keys back to the form's own (e.g. floats)."""
    out = dict(kept)
    for name, form in forms.items():
        if form[0] == "roles" and isinstance(out.get(name), dict):
            out[name] = _roles_back(form, out[name])
    return out


__all__ = ["PredictionForm", "PredictionNotGiven", "ask_prediction", "forms_of"]
