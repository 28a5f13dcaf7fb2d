"""Exercise A's checks: a prediction sealed before the runs, and questions no output answers."""

import re

import pytest

import labkit
from labkit.check._base import CheckFailed, NotYetAnswered
from labkit.check.ex_a import (
    ex_a_predict,
    ex_a_review,
    ex_a_steps_to,
    ex_a_transfer,
    first_below,
)
from labkit.core.seams import Seams
from helpers import one_sentence, run_solution, misjudged

pytestmark = pytest.mark.ex_a
RIGHT = {
    "null_groups": ["backbone.0", "backbone.2"],
    "head_learns": True,
    "why": "the backward pass stops at the detach; the head is after it.",
}


def forward_detach_deeper(ctx):
    hidden = ctx.model.backbone[:2](ctx.batch["x"]).detach()
    return ctx.model.head(ctx.model.backbone[2:](hidden))


@pytest.fixture(scope="module")
def runs():
    return {
        "healthy": labkit.train(),
        "detached": labkit.train(bug="detach"),
        "deeper": labkit.train(seams=Seams().replace(forward=forward_detach_deeper)),
    }


def test_a_prediction_sealed_before_the_runs_is_reviewed_and_a_miss_does_not_fail():
    ex_a_predict({**RIGHT, "head_learns": False})
    healthy, detached = labkit.train(steps=30), labkit.train(bug="detach", steps=30)
    text = ex_a_review({**RIGHT, "head_learns": False}, healthy, detached)
    assert text.startswith("ok: 1 of 2 predictions hit")
    assert "head_learns: you predicted False; the run shows True: miss" in text


def test_a_review_refuses_hindsight_and_an_edited_prediction(runs):
    ex_a_predict(RIGHT)
    with pytest.raises(CheckFailed, match="started before the prediction was sealed"):
        ex_a_review(RIGHT, runs["healthy"], runs["detached"])
    with pytest.raises(CheckFailed, match="changed after it was sealed"):
        ex_a_review({**RIGHT, "null_groups": ["head"]}, runs["healthy"], runs["detached"])


@pytest.mark.parametrize(
    "prediction, words, kind",
    [
        (
            {"null_groups": ["backbone.0"], "head_learns": True},
            "no 'why' field yet",
            NotYetAnswered,
        ),
        ({**RIGHT, "why": ""}, "still empty", NotYetAnswered),
        ({**RIGHT, "why": "asdf qwer"}, "is 2 words long, so it says nothing", CheckFailed),
        ({**RIGHT, "why": "asdf qwer zxcv hjkl"}, "is keyboard noise", CheckFailed),
        ({**RIGHT, "why": "I just think so really"}, "names nothing of the run", CheckFailed),
        ({**RIGHT, "head_learns": "yes"}, "must be True or False", CheckFailed),
        (
            {**RIGHT, "null_groups": ["backbone"]},
            "names 'backbone', which is not one of",
            CheckFailed,
        ),
    ],
)
def test_a_malformed_prediction_is_refused_with_a_sentence(prediction, words, kind):
    with pytest.raises(kind, match=words) as info:
        ex_a_predict(prediction)
    assert one_sentence(str(info.value))


def test_steps_to_is_computed_from_the_runs(runs):
    truth = {"healthy": first_below(runs["healthy"]), "detached": first_below(runs["detached"])}
    assert truth["detached"] > truth["healthy"] > 0
    assert ex_a_steps_to(truth, runs["healthy"], runs["detached"]).startswith("ok")
    for wrong, words in (
        ({**truth, "detached": truth["detached"] - 1}, "scan its run.table"),
        ({**truth, "healthy": truth["healthy"] + 1}, "first drops below 2.0"),
        ({**truth, "healthy": 2.3}, "must be a step number"),
    ):
        with pytest.raises(CheckFailed, match=words) as info:
            ex_a_steps_to(wrong, runs["healthy"], runs["detached"])
        assert one_sentence(str(info.value))


def test_transfer_needs_the_groups_and_a_reason(runs):
    reason = "layers before the detach lose it, layers after keep it"
    assert ex_a_transfer(["backbone.0"], reason, runs["deeper"]) == (
        "ok: backbone.0 gets None; every group after the detach still learns"
    )
    with pytest.raises(CheckFailed, match="find where its forward calls detach") as info:
        ex_a_transfer(["backbone.0", "backbone.2"], reason, runs["deeper"])
    assert "backbone.0" not in str(info.value)  # no answer by elimination
    # the groups decide; the reason is read as feedback for a person, never a failure
    said = ex_a_transfer(["backbone.0"], "layers before the detach lose it", runs["deeper"])
    assert said.startswith("ok: backbone.0 gets None")
    assert "does not yet say which layers keep it, and why (a person grades" in said
    with pytest.raises(CheckFailed, match="is 2 words long"):
        ex_a_transfer(["backbone.0"], "asdf qwer", runs["deeper"])
    assert not misjudged("ex_a_transfer", lambda c, r: ex_a_transfer(*c, r, runs["deeper"]))
    with pytest.raises(CheckFailed, match="not the deeper-detach run"):
        ex_a_transfer(["backbone.0"], reason, runs["healthy"])


@pytest.mark.slow
def test_solution_passes_its_own_checks_on_another_seed(tmp_path):
    text = run_solution("ex_a_break_the_graph", tmp_path, seed=1)
    assert "detached: loss at step 0 = 2.30" in text
    assert "ok: 2 of 2 predictions hit" in text
    assert re.search(r"ok: below 2.0 at step \d+ \(healthy\)", text)
    assert "ok: backbone.0 gets None" in text
