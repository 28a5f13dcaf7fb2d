"""Exercise A's checks teach on wrong answers, and the solution passes them on another seed."""

import re

import pytest

import labkit
from labkit.check._base import CheckFailed
from helpers import one_sentence, run_solution
from labkit.check.ex_a import ex_a_curve, ex_a_head_learns, ex_a_null_groups

pytestmark = pytest.mark.ex_a



@pytest.fixture(scope="module")
def detached():
    return labkit.train(bug="detach", steps=5)


def test_right_answers_pass_in_any_order(detached):
    assert ex_a_null_groups(["backbone.2", "backbone.0"], detached).startswith("ok")
    assert ex_a_null_groups({"backbone.0", "backbone.2"}, detached).startswith("ok")
    assert ex_a_head_learns(True).startswith("ok")
    assert ex_a_curve("slower").startswith("ok")


@pytest.mark.parametrize("answer, words", [
    (["backbone.0", "backbone.2", "head"], "You listed head, whose grad_norm column holds numbers"),
    (["head"], "You listed head"),
    (["backbone.2"], "You missed 1 group"),
    ([], "You missed 2 group"),
    (["backbone"], "'backbone' is not a layer group of this run"),
    (["backbone.0.weight"], "not modules or single tensors"),
    ("backbone.0", "Answer with a list of layer-group names"),
    (None, "Answer with a list of layer-group names"),
])
def test_wrong_null_groups_get_a_sentence_not_the_answer(detached, answer, words):
    with pytest.raises(CheckFailed, match=re.escape(words)) as info:
        ex_a_null_groups(answer, detached)
    message = str(info.value)
    assert one_sentence(message), message
    if "missed" in message:
        assert "backbone.0" not in message and "backbone.2" not in message


def test_null_groups_refuse_a_run_that_is_not_detached():
    with pytest.raises(CheckFailed, match="pass the run you trained with bug='detach'"):
        ex_a_null_groups([], labkit.train(steps=3))


@pytest.mark.parametrize("answer, words", [
    (False, "The head sits after the detach"),
    ("yes", "Answer True or False"),
    (1, "Answer True or False"),
])
def test_wrong_head_answers_teach(answer, words):
    with pytest.raises(CheckFailed, match=words) as info:
        ex_a_head_learns(answer)
    assert one_sentence(str(info.value))


@pytest.mark.parametrize("answer, words", [
    ("flat", "A flat curve means nothing learns"),
    ("same", "freezing the backbone costs something"),
    ("nan", "No loss of the detached run is non-finite"),
    ("stalls", "Answer with one of 'flat', 'slower', 'same', 'nan'"),
])
def test_wrong_curves_point_at_the_evidence(answer, words):
    with pytest.raises(CheckFailed, match=re.escape(words)) as info:
        ex_a_curve(answer)
    assert one_sentence(str(info.value))
    assert "slower" not in str(info.value) or answer == "stalls"


def test_solution_passes_its_own_checks_on_another_seed(tmp_path):
    text = run_solution("ex_a_break_the_graph", tmp_path, seed=1)
    assert "detached: loss at step 0 = 2.30" in text
    assert "ok: 2 of 3 groups never get a gradient (None, not 0)" in text
    assert "ok: the head learns" in text
    assert "ok: the curve falls, but more slowly than healthy" in text
