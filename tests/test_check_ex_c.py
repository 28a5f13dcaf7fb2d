"""Exercise C's checks teach on wrong answers, and the solution passes them on another seed."""


import pytest

import labkit
from labkit.check._base import CheckFailed
from labkit.check.ex_c import ex_c_forecast, ex_c_lr_roles, ex_c_update_ratio
from helpers import run_solution

pytestmark = pytest.mark.ex_c
LRS = [1e-6, 1e-4, 1e-2, 1, 30]
RIGHT = {1e-6: "too small", 1e-4: "too small", 1e-2: "slow", 1: "best", 30: "too large"}


@pytest.fixture(scope="module")
def runs():
    return {lr: labkit.train(lr=lr, seed=0) for lr in LRS}


def test_forecast_needs_a_role_per_lr_and_one_best():
    assert ex_c_forecast(RIGHT, LRS).startswith("ok")
    with pytest.raises(CheckFailed, match="missing"):
        ex_c_forecast({1: "best"}, LRS)
    with pytest.raises(CheckFailed, match="Each role must be one of.*'huge'"):
        ex_c_forecast({**RIGHT, 30: "huge"}, LRS)
    with pytest.raises(CheckFailed, match="exactly one LR 'best'"):
        ex_c_forecast({**RIGHT, 1e-2: "best"}, LRS)


def test_update_ratio_is_the_lr_for_plain_sgd(runs):
    ratios = {lr: r.table["update_norm"][0] / r.table["grad_norm"][0] for lr, r in runs.items()}
    assert ex_c_update_ratio(ratios).startswith("ok")
    with pytest.raises(CheckFailed, match="lr=1e-06.*same row of run.table"):
        ex_c_update_ratio({**ratios, 1e-6: 1.0})


def test_right_roles_pass(runs):
    assert ex_c_lr_roles(RIGHT, runs) == ("ok: lr=1e-06 too small, lr=0.0001 too small, "
                                          "lr=0.01 slow, lr=1 best, lr=30 too large")


@pytest.mark.parametrize("wrong, words", [
    ({1e-2: "too small"}, r"lr=0.01 is not 'too small': its loss did fall, by 0\.\d\d"),
    ({1e-4: "slow"}, "lr=0.0001 is not 'slow': its loss never strayed more than .* update_norm"),
    ({1: "too large"}, "lr=1 is not 'too large': .* so its steps went downhill"),
    ({30: "slow"}, "lr=30 is not 'slow': its loss moved, but not down .* grad_norm"),
    ({1e-2: "best", 1: "slow"}, "lr=0.01 is not 'best': another run ends lower"),
    ({1: "slow", 1e-2: "slow"}, "lr=1 is not 'slow': no run ends below its"),
])
def test_wrong_roles_get_a_sentence_pointing_at_the_evidence(runs, wrong, words):
    with pytest.raises(CheckFailed, match=words) as err:
        ex_c_lr_roles({**RIGHT, **wrong}, runs)
    assert str(err.value).count(". ") == 0 and str(err.value).endswith(".")  # one sentence
    assert "'best'" not in str(err.value).split(":", 1)[1]  # points at evidence, not the answer


@pytest.mark.chaotic  # the solution's lr=30 run blows up
def test_solution_passes_its_checks_on_another_seed(tmp_path):
    text = run_solution("ex_c_learning_rate_sweep", tmp_path, seed=1)
    assert text.count("ok: ") == 3
    assert "lr=30 blew up (non-finite, or ended above its start): True" in text
