"""Exercise E's checks teach on wrong answers, and the solution still passes them on seed 1."""

import math

import pytest

from labkit.check import CheckFailed
from labkit.check.ex_e import (ex_e_double_shift_floor, ex_e_inflated_count, ex_e_nan_variant,
                               ex_e_perplexity, ex_e_two_ahead)
from helpers import run_solution

pytestmark = pytest.mark.ex_e


def test_nan_run_is_the_one_with_no_targets():
    assert ex_e_nan_variant("all_masked_labels").startswith("ok")
    with pytest.raises(CheckFailed, match="valid_tokens column is 0"):
        ex_e_nan_variant("padding_in_loss")
    with pytest.raises(CheckFailed, match="Did you mean 'all_masked_labels'"):
        ex_e_nan_variant("all_masked_label")


def test_two_ahead_points_at_the_response_loss_and_the_audit():
    assert ex_e_two_ahead("double_shift").startswith("ok")
    with pytest.raises(CheckFailed, match="val_response_loss rises while its training loss falls"):
        ex_e_two_ahead("prompt_in_loss")


def test_double_shift_floor_is_ln_4_and_ln_2_gets_its_own_hint():
    assert ex_e_double_shift_floor(1.386).startswith("ok")
    with pytest.raises(CheckFailed, match="floor one step ahead.*count paths"):
        ex_e_double_shift_floor(math.log(2))
    with pytest.raises(CheckFailed, match="costs ln k"):
        ex_e_double_shift_floor(3.912)
    with pytest.raises(CheckFailed, match="must be a finite number"):
        ex_e_double_shift_floor("ln 4")


def test_inflated_count_needs_both_runs_and_no_others():
    assert ex_e_inflated_count(["prompt_in_loss", "padding_in_loss"]).startswith("ok")
    with pytest.raises(CheckFailed, match="You found 1 of the runs"):
        ex_e_inflated_count("padding_in_loss")
    with pytest.raises(CheckFailed, match=r"\['double_shift'\] do not count more tokens"):
        ex_e_inflated_count(["padding_in_loss", "prompt_in_loss", "double_shift"])


def test_perplexity_is_e_to_the_loss_and_the_base_gets_a_hint():
    assert ex_e_perplexity(2.0, 7.389) == "ok: e^2.000 = 7.39"
    with pytest.raises(CheckFailed, match="natural log"):
        ex_e_perplexity(2.0, 4.0)
    with pytest.raises(CheckFailed, match="exponentiate the loss"):
        ex_e_perplexity(2.0, math.log(2.0))


def test_failures_are_assertion_errors_with_one_sentence():
    with pytest.raises(AssertionError) as info:
        ex_e_nan_variant("correct")
    assert str(info.value).count(". ") == 0 and str(info.value).endswith(".")


def test_solution_runs_on_seed_1_and_passes_its_checks(tmp_path):
    text = run_solution("ex_e_masking_errors", tmp_path, seed=1)
    assert sum(line.startswith("ok: ") for line in text.splitlines()) == 5, text[-2000:]
    assert "double_shift val_response_loss rose" in text
    assert "all_masked_labels: 200 of 200 updates are exactly 0" in text
    assert "uniform loss for a 50,000-token vocabulary: ln 50000 = 10.82" in text
