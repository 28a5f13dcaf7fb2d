"""Exercise B's checks teach on wrong answers, and the solution passes them on another seed."""

import re

import pytest

import labkit
from labkit.check._base import CheckFailed
from helpers import one_sentence, run_solution
from labkit.check.ex_b import (ex_b_frozen_groups, ex_b_grad_state, ex_b_worse_variant,
                               ex_b_zero_grad_clears)

pytestmark = pytest.mark.ex_b



@pytest.fixture(scope="module")
def runs():
    return {"backbone_only": labkit.train(bug="missing_optimizer_params", steps=5),
            "head_only": labkit.train(bug="missing_optimizer_params:head_only", steps=5)}


def test_right_answers_pass(runs):
    assert ex_b_frozen_groups(["head"], runs["backbone_only"]).startswith("ok: head:")
    assert ex_b_frozen_groups(("backbone.2", "backbone.0"), runs["head_only"]).startswith("ok")
    assert ex_b_grad_state("finite").startswith("ok")
    assert ex_b_zero_grad_clears(False).startswith("ok")
    assert ex_b_worse_variant("backbone_only").startswith("ok")


@pytest.mark.parametrize("variant, answer, words", [
    ("backbone_only", ["backbone.0", "backbone.2"], "You listed backbone.0, backbone.2, whose "
                                                    "update_norm is above 0 at least once"),
    ("backbone_only", ["head", "backbone.0"], "You listed backbone.0"),
    ("backbone_only", [], "You missed 1 group(s) whose update_norm is exactly 0"),
    ("head_only", ["backbone.0"], "You missed 1 group(s)"),
    ("head_only", ["head"], "You listed head"),
    ("head_only", ["backbone"], "'backbone' is not a layer group of this run"),
    ("head_only", "head", "Answer with a list of layer-group names"),
])
def test_wrong_frozen_groups_get_a_sentence_not_the_answer(runs, variant, answer, words):
    with pytest.raises(CheckFailed, match=re.escape(words)) as info:
        ex_b_frozen_groups(answer, runs[variant])
    message = str(info.value)
    assert one_sentence(message), message
    if "missed" in message:
        assert not any(g in message for g in ("head", "backbone.0", "backbone.2"))


def test_frozen_groups_refuse_a_healthy_run():
    with pytest.raises(CheckFailed, match="no parameter was left out of its optimizer"):
        ex_b_frozen_groups(["head"], labkit.train(steps=3))


@pytest.mark.parametrize("check, answer, words", [
    (ex_b_grad_state, "none", "None would mean autograd never reached those weights"),
    (ex_b_grad_state, "zero", "the gradient is computed"),
    (ex_b_grad_state, None, "Answer with one of 'none', 'zero', 'finite'"),
    (ex_b_zero_grad_clears, True, "compare its first and last values"),
    (ex_b_zero_grad_clears, "no", "Answer True or False"),
    (ex_b_worse_variant, "head_only", "the variant hurt more is the one whose loss ends higher"),
    (ex_b_worse_variant, "backbone", "Answer with one of 'backbone_only', 'head_only'"),
])
def test_wrong_answers_point_at_the_evidence(check, answer, words):
    with pytest.raises(CheckFailed, match=re.escape(words)) as info:
        check(answer)
    assert one_sentence(str(info.value)), str(info.value)


def test_solution_passes_its_own_checks_on_another_seed(tmp_path):
    text = run_solution("ex_b_optimizer_membership", tmp_path, seed=1)
    assert "head_only and detach have the same raw loss at every step: True" in text
    assert "ok: head: a gradient at every step, an update of exactly 0" in text
    assert "ok: backbone.0, backbone.2: a gradient at every step, an update of exactly 0" in text
    assert "ok: a finite, nonzero gradient that nothing applies" in text
    assert "ok: zero_grad() clears only what the optimizer owns" in text
    assert "ok: a frozen random head blocks more" in text
