"""The mechanism checks of Exercises A-F (issue 54): the claim decides, exactly; the prose is
kept for a person and read by the rubric only as a hint.

Every combination of choices of every claim is judged: exactly the right one passes, every
other fails with a teaching sentence. With the right claim, every answer of
tests/data/free_text/ex_*_mechanism.txt passes, right or wrong prose alike, and the rubric's
reading comes back as a hint, never as the verdict."""

import itertools
from pathlib import Path

import pytest

from labkit import check
from labkit.check import CheckFailed, NotYetAnswered
from labkit.learn.check.ex.claims import CLAIMS
from helpers import one_sentence

DATA = Path(__file__).resolve().parents[2] / "data" / "free_text"
EXERCISES = sorted(CLAIMS)


def right(key: str) -> dict:
    return {name: f.right for name, f in CLAIMS[key].fields.items()}


def prose(key: str) -> list[tuple[str, str]]:
    lines = (DATA / f"{key}_mechanism.txt").read_text().splitlines()
    return [(line[0], line[2:].strip()) for line in lines if line[:2] in ("+ ", "- ")]


@pytest.mark.parametrize("key", EXERCISES)
def test_only_the_right_claim_passes_and_each_wrong_one_teaches(key):
    mechanism = getattr(check, f"{key}_mechanism")
    fields = CLAIMS[key].fields
    text = prose(key)[0][1]
    passed = []
    for combo in itertools.product(*(f.choices for f in fields.values())):
        claim = dict(zip(fields, combo))
        try:
            said = mechanism(claim, text)
        except CheckFailed as exc:
            assert not isinstance(exc, NotYetAnswered) and one_sentence(str(exc)), str(exc)
            assert "parts of your claim" in str(exc)
            continue
        assert said.startswith(f"ok: all {len(fields)} parts")
        passed.append(claim)
    assert passed == [right(key)]


@pytest.mark.parametrize("key", EXERCISES)
def test_the_prose_never_decides_and_comes_back_with_the_model_answer(key):
    mechanism = getattr(check, f"{key}_mechanism")
    for mark, text in prose(key):
        said = mechanism(right(key), text)
        assert "kept for your instructor" in said and "model answer:" in said
        if mark == "-":  # the rubric refuses it: a hint for the learner, not a failure
            assert "a hint, not a grade" in said, text


@pytest.mark.parametrize(
    "claim, text, kind, words",
    [
        ({}, "x", CheckFailed, "Answer with a dict of the keys"),
        ("the backbone gets None", "x", CheckFailed, "Answer with a dict of the keys"),
        ({**right("ex_a"), "head": ...}, "x", NotYetAnswered, "Replace the ... of 'head'"),
        ({**right("ex_a"), "head": "trains"}, "x", CheckFailed, "'head' takes one of"),
        (right("ex_a"), "", NotYetAnswered, "Write your explanation"),
        (right("ex_a"), "asdf qwer zxcv", CheckFailed, "says nothing a person could grade"),
    ],
)
def test_malformed_answers_get_a_sentence(claim, text, kind, words):
    with pytest.raises(kind, match=words) as info:
        check.ex_a_mechanism(claim, text)
    assert str(info.value).endswith(".")


def test_case_and_spaces_of_a_choice_do_not_matter():
    claim = {k: f"  {v.upper()} " for k, v in right("ex_a").items()}
    assert check.ex_a_mechanism(claim, prose("ex_a")[0][1]).startswith("ok")
