"""The eighteenth batch (tests/own_setups/eighteenth.py, eighteenth_b.py): written blind after
the seventeenth's rules, and scored at first sight (7 of 12 right system, 6 of 12 right
mechanism, 1 of 6 healthy twins convicted, none UNKNOWN). The readings measured since, each
read here on the bug and its one-change twin:

- the healthy MSE regression read as "labels decorrelated": the whole-run means carried each
  seed's start; the runs' ends now rule out "no signal" (`data.label_signal`);
- multi-hot tags under softmax cross-entropy (`targets.multi_hot`);
- a position table built and never used: a finding beside the acquittal
  (`acquit.never_grad`);
- image and mask flipped with two random draws (`paired`);
- one output's error of three shown as the loss (`logcount._columns`).

Not read: the cased vocabulary looked up lower-cased (see docs/developer/triage-scores.md).
"""

from own_setups.eighteenth import (
    MultiLabelBinaryCrossEntropy,
    MultiLabelSoftmaxCrossEntropy,
    PositionsAdded,
    PositionsNeverAdded,
)
from own_setups.eighteenth_b import (
    FirstTargetShown,
    FlipsDrawnApart,
    FlipsDrawnTogether,
    MeanOverTargetsShown,
    MseShown,
)

from labkit.diagnosis.own.step1_capture import setup as proto
from labkit.diagnosis.own.step2_h3.logcount import logger_check
from labkit.diagnosis.own.step3_h2 import paired
from labkit.diagnosis.own.step4_h1.losspath import audit
from labkit.diagnosis.own.step5_sign.acquit import never_grad
from labkit.diagnosis.own.step6_decide.evidence import SeedEvidence
from labkit.diagnosis.own.step6_decide.rules import _label_signal


def test_a_regression_that_learns_is_not_read_as_labels_without_signal():
    sig = _label_signal([SeedEvidence(MseShown(), s) for s in (0, 1)])
    assert sig["verdict"] != "none" and "ends" in sig


def test_multi_hot_tags_under_cross_entropy_are_read_and_binary_cross_entropy_is_not():
    bug, twin = MultiLabelSoftmaxCrossEntropy(), MultiLabelBinaryCrossEntropy()
    found = audit(bug, 0, proto.batches(bug, 0))["multi_hot"]
    assert found["binary"] and found["classes"] == 6 and found["share"] > 0.5
    assert audit(twin, 0, proto.batches(twin, 0))["multi_hot"] is None


def test_a_position_table_never_added_is_named_and_one_added_is_not():
    assert never_grad(SeedEvidence(PositionsNeverAdded(), 0).replay) == [("pos.weight", 320, False)]
    assert never_grad(SeedEvidence(PositionsAdded(), 0).replay) == []


def test_masks_flipped_apart_from_their_images_are_read_and_flipped_together_are_not():
    assert paired.readings(proto.batches(FlipsDrawnApart(), 0))["share"] > 0.3
    assert paired.readings(proto.batches(FlipsDrawnTogether(), 0))["share"] < paired.SHARE


def test_the_first_of_three_outputs_shown_as_the_loss_is_named():
    found = logger_check(SeedEvidence(FirstTargetShown(), 0))
    assert found.details["mechanism"] == "column0of3_mse_shown"
    assert logger_check(SeedEvidence(MeanOverTargetsShown(), 0)).details["agree"]
