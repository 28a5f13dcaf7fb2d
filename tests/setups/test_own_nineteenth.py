"""The nineteenth batch (tests/own_setups/nineteenth.py, nineteenth_b.py): written blind after
the eighteenth's rules, and scored at first sight (7 of 12 right system, 6 of 12 right
mechanism, none of the 6 healthy twins convicted, none UNKNOWN, 1 crash). The readings measured
since, each read here on the bug and its one-change twin:

- a functional dropout left on after model.eval(): two eval-mode passes differ
  (`evalnoise.repeat`);
- a table sorted by class and split by slicing: a class the output has never reaches the
  training labels (`unseen.reading`);
- a one-way LSTM read at its first step: its recurrent weight's gradient is exactly 0 at every
  step (`acquit.zero_grad`), a finding beside an acquittal, convicted where the same plain loop
  with the layer's outputs read in reverse time order learns beyond the seed spread
  (`parts.first_step_gap`).

Not read: the keypoints normalised by the input size (see docs/developer/triage-scores.md).
"""

from own_setups.nineteenth import (
    FirstStepPooled,
    FunctionalDropoutAtEval,
    FunctionalDropoutFollowsMode,
)
from own_setups.nineteenth_b import SplitShuffledTable, SplitSortedTable

from labkit.diagnosis.own.step1_capture import setup as proto
from labkit.diagnosis.own.step3_h2 import unseen
from labkit.diagnosis.own.step5_sign.acquit import zero_grad
from labkit.diagnosis.own.step6_decide import evalnoise
from labkit.diagnosis.own.step6_decide.evidence import SeedEvidence


def _repeat(setup):
    return evalnoise.repeat(setup, setup.make_model(0), proto.batches(setup, 0), 0)


def test_a_functional_dropout_left_on_in_eval_mode_is_read_and_one_that_follows_it_is_not():
    found = _repeat(FunctionalDropoutAtEval())
    assert found["relative"] > 0.1 and found["drops"] == [("dropout", 0.3)]
    assert _repeat(FunctionalDropoutFollowsMode())["relative"] == 0


def test_a_class_cut_off_by_a_sorted_split_is_read_and_a_shuffled_split_is_not():
    found = unseen.reading(SeedEvidence(SplitSortedTable(), 0))
    assert found["missing"] == [4] and found["classes"] == 5 and found["rows"] == 800
    assert unseen.reading(SeedEvidence(SplitShuffledTable(), 0)) is None


def test_an_lstm_read_at_its_first_step_leaves_its_recurrent_weight_at_a_zero_gradient():
    # one run, the bug's (the last step's read is in test_own_nineteenth_set)
    assert zero_grad(SeedEvidence(FirstStepPooled(), 0).replay) == [
        ("lstm.weight_hh_l0", 16384, True)
    ]
