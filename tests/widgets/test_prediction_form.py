"""The prediction form (`labkit.widgets.ask_prediction`): an exercise's prediction answered by
clicks and sealed, kept in the store for a re-run, carried in the notebook for a grader, and
refused at once (as "not yet answered") where nobody can answer it."""

import json

import nbformat
import pytest

from labkit.forecast import carry
from labkit.learn.check import _predict
from labkit.widgets import prediction_form as pf
from labkit.widgets import PredictionForm, PredictionNotGiven, ask_prediction


@pytest.fixture(autouse=True)
def _fresh(tmp_path, monkeypatch):
    monkeypatch.setenv("LABKIT_HOME", str(tmp_path / "home"))
    monkeypatch.delenv(carry.ENV, raising=False)
    monkeypatch.setattr(pf, "_FORMS", {})
    monkeypatch.setattr(_predict, "_SEALED", {})


A = {
    "null_groups": ["backbone.0", "backbone.2"],
    "head_learns": "True",
    "why": "the detach stops backward before the backbone",
}  # as the front end sends them


def test_answers_from_the_front_end_are_sealed_in_their_own_types():
    form = PredictionForm("ex_a")
    assert [q["name"] for q in form.spec] == ["null_groups", "head_learns", "why"]
    assert form.spec[0]["choices"] == ["backbone.0", "backbone.2", "head"]
    form.answers = A
    form.seal_requested += 1  # what the Seal button does
    assert form.sealed and form.message.startswith("Sealed at")
    assert form.prediction == {**A, "head_learns": True}
    assert _predict.seal("ex_a", form.prediction, pf.forms_of("ex_a")).startswith("ok:")


def test_a_missing_or_malformed_answer_is_one_sentence_and_no_seal():
    form = PredictionForm("ex_a")
    form.answers = {k: v for k, v in A.items() if k != "why"}
    form.seal_requested += 1
    assert not form.sealed and "prediction['why'] is still empty" in form.message
    form.answers = {**A, "null_groups": ["backbone.9"]}
    form.seal_requested += 1
    assert not form.sealed and "'backbone.9', which is not one of" in form.message


def test_roles_keyed_by_numbers_come_back_as_numbers():
    form = PredictionForm("ex_c")
    roles = dict(
        zip(
            ("1e-06", "0.0001", "0.01", "1", "30"),
            ("too small", "slow", "best", "too large", "too large"),
        )
    )
    assert form.spec[0]["keys"] == list(roles)
    form.answers = {"roles": roles, "why": "the step grows with lr until it overshoots"}
    assert form.seal() and set(form.prediction["roles"]) == {1e-6, 1e-4, 1e-2, 1, 30}


def test_headless_with_nothing_to_go_on_stops_at_once_as_not_yet_answered():
    from labkit.learn.check import ex_a_predict

    form = ask_prediction("ex_a")
    assert not form.sealed
    with pytest.raises(PredictionNotGiven) as info:
        ex_a_predict(form)  # the exercise's next cell: nobody can see the form, so no wait
    assert isinstance(info.value, NotImplementedError)  # what `labkit grade` counts as a stub
    assert "'null_groups', 'head_learns', 'why'" in str(info.value)
    from labkit.learn.check import NotYetAnswered

    with pytest.raises(NotYetAnswered, match="form above is not sealed yet"):
        _predict.review("ex_a", form, {}, [])  # the review after the runs: not answered
    with pytest.raises(ValueError, match="key='ex_aa' is not an exercise.*Did you mean 'ex_a'"):
        ask_prediction("ex_aa")


def test_a_sealed_prediction_comes_back_sealed_from_the_store_after_a_restart(monkeypatch):
    form = PredictionForm("ex_a")
    form.answers = A
    assert form.seal()
    first_at = _predict._SEALED["ex_a"][1]
    monkeypatch.setattr(pf, "_FORMS", {})  # a new kernel: nothing in memory
    monkeypatch.setattr(_predict, "_SEALED", {})
    restored = ask_prediction("ex_a")
    assert restored.require() == form.prediction
    assert restored.sealed and "Restored from your store" in restored.message
    assert _predict._SEALED["ex_a"][1] == first_at  # the same seal, not a new one
    restored.again_requested += 1  # Answer again: a new attempt in the same form
    assert not restored.sealed and "A new attempt" in restored.message


def test_a_grader_gets_the_answers_the_notebook_kept(tmp_path, monkeypatch, capsys):
    typed = {**A, "head_learns": True}
    nb = nbformat.v4.new_notebook()
    cell = nbformat.v4.new_code_cell("prediction = ask_prediction('ex_a')")
    cell.outputs = [
        nbformat.v4.new_output(
            "display_data",
            data={
                carry.PREDICTION_MIME: {"key": "ex_a", "prediction": typed},
                "text/plain": "(kept)",
            },
        )
    ]
    nb.cells = [cell]
    handed = carry.sketches_in(nbformat.reads(nbformat.writes(nb), as_version=4))
    assert handed == [{"key": "ex_a", "prediction": typed}]
    path = tmp_path / "handed.json"
    path.write_text(json.dumps(handed))
    monkeypatch.setenv(carry.ENV, str(path))
    from labkit.learn.check import ex_a_predict

    form = ask_prediction("ex_a")
    assert form.sealed and form.require() == typed
    assert ex_a_predict(form).startswith("ok: prediction sealed")
    assert carry.carried_prediction("ex_b") is None
