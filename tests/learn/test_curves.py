"""The curve gallery: every one of the packet's seven cases comes from a real run and shows
its signature, its discriminating test and its fix on seeds 0 and 1 (as the zoo tests do);
the quiz draws fresh runs and its check teaches without giving the answer away."""

import math
import statistics
from functools import cache

import pytest

from helpers import one_sentence
from labkit import check
from labkit.learn.curves import quiz as curve_quiz
from labkit.learn import curves
from labkit.learn.curves.probes import spike_steps

SEEDS = (0, 1)
LN10 = math.log(10)


@cache
def shown(key, seed):
    return curves.run_case(key, seed=seed, confirm_seeds=(seed,))


def tail(run, n=20):
    return statistics.fmean(run.table["loss_raw"][-n:])


def sig_overfitting(c, e, fixed):
    ev = c.run.evals
    assert e["val_min_step"] <= 0.4 * len(c.run)  # val turns early...
    assert e["val_end"] > e["val_min"] + 0.15  # ...and climbs
    assert e["train_eval_end"] < e["train_eval_at_min"] - 0.3  # while training keeps falling
    assert ev["val_loss"][-1] - ev["train_eval_loss"][-1] > 0.3  # a widening gap
    assert e["duplicates"] == 0 and e["share_gap"] < 0.15  # the split is sound
    assert e["wrong_labels"] > 10  # the noise is memorised as val turns
    assert (
        e["wrong_labels_fitted"] > 0.15
        and e["wrong_labels_fitted"] > 2 * e["wrong_labels_fitted_at_min"]
    )
    v = fixed.evals["val_loss"]
    assert v[-1] - min(v) < 0.1 and v[-1] < e["val_end"] - 0.15  # weight decay stops the climb


def sig_high_flat(c, e, fixed):
    assert tail(c.run) > LN10 - 0.3 and c.run.evals["val_loss"][-1] > LN10 - 0.3
    assert c.run.evals["val_acc"][-1] < 0.3
    assert e["median_update_norm"] > 0.005  # the weights move: not an optimizer failure
    assert not e["one_batch_reached"] and e["same"]  # one batch: no memorising, labels unread
    assert tail(fixed) < 0.5 and fixed.evals["val_acc"][-1] > 0.9


def sig_spiking(c, e, fixed):
    from labkit.learn.curves.setups import OUTLIER_ROW

    assert len(e["spikes"]) >= 2 and e["culprit_row"] == OUTLIER_ROW and e["culprit_in_every_spike"]
    assert e["replay_spiking"] > 2 * e["replay_normal"]  # the batch spikes from the same weights
    assert e["culprit_loss"] > 20 * e["others_median"] and e["culprit_size"] > 10
    half = len(c.run) // 2
    loss = c.run.table["loss_raw"]
    assert max(loss[half:]) > 3 * statistics.median(loss[half:])
    assert all(loss[s + 1] < 0.5 * loss[s] for s in e["spikes"] if s + 1 < len(loss))  # recovers
    assert spike_steps(fixed.table["loss_raw"][20:]) == []
    assert max(fixed.table["loss_raw"][half:]) < 2.5 * statistics.median(
        fixed.table["loss_raw"][half:]
    )


def sig_val_below_train(c, e, fixed):
    assert e["online"] > e["train_eval"] + 0.2 and e["online"] > e["val"] + 0.2
    assert abs(e["train_eval"] - e["val"]) < 0.1
    step = fixed.evals["step"][-1]
    gap = fixed.table["loss_reported"][step] - fixed.evals["train_eval_loss"][-1]
    assert gap < 0.4 * (e["online"] - e["train_eval"])  # without dropout the gap is timing only


def sig_flat_train(c, e, fixed):
    assert not e["has_graph"] and e["none_grads"] == e["params"]
    assert e["max_from_ln10"] < 0.05
    assert set(c.run.table["update_norm"]) == {0.0}
    assert tail(fixed) < 0.5


def sig_nan(c, e, fixed):
    assert e["step"] is not None and e["finite_before"]
    assert all(math.isnan(v) for v in c.run.table["loss_raw"][e["step"] :])
    assert e["where"] == "input x"  # the first non-finite value is the data, not the loss
    assert fixed.first_nonfinite_step() is None and tail(fixed) < 0.5


def sig_metric_flat(c, e, fixed):
    assert abs(e["acc_last"] - e["acc_first"]) < 0.03  # accuracy stays put...
    assert abs(e["acc_first"] - e["majority_share"]) < 0.03  # ...at "always say common"
    assert e["loss_first"] - e["val_loss_last"] > 0.4  # ...while the loss falls
    assert e["true_prob_end"] > e["true_prob_init"] + 0.3 and e["rare_prob_end"] < 0.5
    base = c.run.evals["val_minority_recall"][-1]
    assert fixed.evals["val_minority_recall"][-1] > base + 0.2


SIGNATURES = {name[4:]: fn for name, fn in globals().items() if name.startswith("sig_")}


def test_every_case_has_a_signature_and_the_packet_numbering():
    assert set(SIGNATURES) == set(curves.CASES)
    assert sorted(c.number for c in curves.CASES.values()) == list(range(1, 8))
    for case in curves.CASES.values():
        assert case.hypothesis and len(case.alternatives) >= 2 and case.test
        assert case.intervention and case.confirms and case.setup is not None


@pytest.mark.slow
@pytest.mark.parametrize("seed", SEEDS)
@pytest.mark.parametrize("key", list(curves.CASES))
def test_case_reproduces_its_signature(key, seed):
    c = shown(key, seed)
    SIGNATURES[key](c, c.evidence, c.fixed[seed])
    report = c.report()
    assert report.startswith(f"Case {c.case.number}:") and "intervention:" in report
    assert f"seed {seed}:" in report


def test_unknown_case_gets_a_suggestion():
    with pytest.raises(ValueError, match="Did you mean 'spiking'"):
        curves.get_case("spikng")


@pytest.fixture(scope="module")
def quiz():
    return curve_quiz.draw(seed=2024)


@pytest.mark.slow
def test_quiz_holds_every_case_once_on_fresh_seeds(quiz):
    assert sorted(quiz.answer_key().values()) == sorted(curves.CASES)
    assert [i.letter for i in quiz.items] == list("ABCDEFG")
    assert all(i.seed not in SEEDS for i in quiz.items)
    again = curve_quiz.draw(seed=2024)
    assert again.answer_key() == quiz.answer_key()
    assert next(i.run.table["loss_raw"] for i in again.items) == quiz.items[0].run.table["loss_raw"]
    assert "flat_train" not in repr(quiz).split(":")[0]  # the repr names no answer


def test_quiz_without_a_seed_is_new_each_time():
    assert curve_quiz.draw.__defaults__[0] is None
    seeds = {curve_quiz.secrets.randbelow(1_000_000) for _ in range(5)}
    assert len(seeds) > 1


def test_quiz_check_accepts_names_and_numbers(quiz):
    key = quiz.answer_key()
    assert check.curves_quiz(quiz, key).startswith("ok: all 7")
    numbers = {letter: curves.CASES[k].number for letter, k in key.items()}
    assert check.curves_quiz(quiz, numbers).startswith("ok")


def test_quiz_check_teaches_without_naming_the_answer(quiz):
    key = quiz.answer_key()
    wrong = dict(key)
    letter = next(ltr for ltr, k in key.items() if k == "flat_train")
    wrong[letter] = "high_flat"
    with pytest.raises(check.CheckFailed) as info:
        check.curves_quiz(quiz, wrong)
    message = str(info.value)
    assert f"curve {letter} is not 'high_flat'" in message and "update norm" in message
    assert "flat_train" not in message and one_sentence(message)
    with pytest.raises(check.CheckFailed, match="labels every curve"):
        check.curves_quiz(quiz, {"A": "nan"})
    with pytest.raises(check.CheckFailed, match="Did you mean 'spiking'"):
        check.curves_quiz(quiz, {**key, "A": "spikin"})
    with pytest.raises(check.CheckFailed, match="Pass the quiz"):
        check.curves_quiz("quiz", key)
