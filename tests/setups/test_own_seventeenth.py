"""The seventeenth batch (tests/own_setups/seventeenth.py): written blind after the sixteenth's
rules, and scored at first sight (6 of 6 bugs right system, 2 of 6 right mechanism read
strictly, no healthy twin convicted, none UNKNOWN). Four mechanisms it showed unnamed,
measured since, read here on the bug and its one-change twin:

- micro-batch losses summed into one step without / 8, logged one row per backward():
  "the LR is too high" (the gradient-sum reading needed a row per step);
- weights drawn from N(0, 1) at width 128, diverging under SGD: "the LR is too high", where
  the same loop on PyTorch's default init learns (`parts.init_first`);
- a vocabulary numbered from 0 whose word 0 meets the embedding's padding_idx: "labels
  decorrelated" (`padid`);
- the scheduler's LR shown as the loss: "another tensor" (`logger.SERIES`).
"""

from own_setups.seventeenth import (
    AccumulatedLossDivided,
    AccumulatedLossUndivided,
    InitNormalStdOne,
    VocabFromOne,
    VocabFromZeroMeetsPadding,
)

from labkit.core.run import Run
from labkit.diagnosis.own.step1_capture import setup as proto
from labkit.diagnosis.own.step2_h3.logger import check_logger
from labkit.diagnosis.own.step3_h2 import padid
from labkit.diagnosis.own.step6_decide.evidence import SeedEvidence
from labkit.diagnosis.own.step6_decide.gaps import summed_backwards
from labkit.diagnosis.own.step6_decide.parts import init_first
from labkit.diagnosis.finding import Finding


def test_micro_batches_logged_one_row_each_are_read_as_summed_or_divided():
    factor, k = summed_backwards(SeedEvidence(AccumulatedLossUndivided(), 0))
    assert k == 8 and abs(factor - 8) < 0.05
    factor, k = summed_backwards(SeedEvidence(AccumulatedLossDivided(), 0))
    assert k == 8 and abs(factor - 1) < 0.05


def test_a_divergence_the_default_init_does_not_share_is_the_inits():
    evs = [SeedEvidence(InitNormalStdOne(), s) for s in (0, 1)]
    lr = Finding("H1", "divergence", "the loss diverged: the LR is too high")
    found = init_first(evs, lr)
    assert found.key == "init" and "also measured: the loss diverged" in found.mechanism
    other = Finding("H1", "lr_zero", "an LR of 0")
    assert init_first(evs, other) is other  # only an LR blamed is tested against the init


def test_the_padding_id_inside_sequences_is_read_and_trailing_padding_is_not():
    bug, twin = VocabFromZeroMeetsPadding(), VocabFromOne()
    assert padid.inside_share(proto.batches(bug, 0), 0) > 0.5
    assert padid.inside_share(proto.batches(twin, 0), 0) == 0.0
    found = padid.collision_rule([SeedEvidence(bug, s) for s in (0, 1)])
    assert found is not None and found.key == "pad_id_collides"


def test_the_learning_rate_after_each_update_shown_as_the_loss_is_named():
    raw = [1.5 * 0.98**t for t in range(30)]
    lrs = [0.1 * 0.9**t for t in range(31)]  # the LR at each step, and after the last update
    run = Run.from_log(
        {"step": list(range(30)), "loss_raw": raw, "loss_reported": lrs[1:]},
        seed=0,
        started_at=0.0,
    )
    found = check_logger(run, per_epoch=10, series={"lr": lrs[:30], "lr_next": lrs[1:]})
    assert found.details["mechanism"] == "lr_next_shown", found.verdict
    assert "learning rate after the step" in found.verdict
