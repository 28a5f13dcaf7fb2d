"""The tenth batch (tests/own_setups/tenth.py, issue 46 item 0): an acquittal earns its words.

The measurements first, each on a real loss or a real batch in well under a second: the walk
of the autograd graph finds a tensor made outside the model, the replay of a learner's loop
sees that no optimizer holds it and that it never moves, and the per-feature input checks find
a label left in the features and a constant bias column. Then every setup triaged
once: right system and mechanism on every setup, every healthy twin acquitted with
words that say what was checked and what could not be, and a tensor left out of the optimizer
signed by labkit's own intervention and by the learner's fix. The signing mechanisms of the
later session (a label held constant, the next-token loss on the measured axis, the learner's
own loop at the lower LR, a group at LR 0 given the default LR) sign their setups alone, by
margins far wider than any CPU path moves them."""

import copy

import pytest
import torch
import torch.nn.functional as F

import own_setups.report as report
from own_setups.tenth import (
    TENTH,
    TENTH_EXPECTED,
    LogitScaleInOptimizer,
    LogitScaleNotInOptimizer,
    OffsetByHand,
    OffsetNotInOptimizer,
    RegressionBiasColumn,
    RegressionTargetInInputs,
    SeqFirstDoubleShift,
)

from labkit.diagnosis.own.step1_capture import setup as proto
from labkit.diagnosis.own.step1_capture.graph import leaves_of
from labkit.diagnosis.own.step1_capture.replay import Replay
from labkit.diagnosis.own.step3_h2.features import feature_checks
from labkit.diagnosis.own.step5_sign import refloss, unleaked


def test_the_walk_from_the_loss_finds_tensors_outside_the_model():
    s = LogitScaleNotInOptimizer()
    model = s.make_model(0)
    found = {id(t) for t in leaves_of(s.loss_fn(model, s.batches(0)[0]))}
    assert id(s.logit_scale) in found and {id(p) for p in model.parameters()} <= found
    assert leaves_of(F.mse_loss(torch.zeros(3), torch.ones(3))) == []  # no graph, no leaf


@pytest.mark.parametrize("setup, moved", [(OffsetNotInOptimizer, False), (OffsetByHand, True)])
def test_the_replay_reads_whether_an_outside_tensor_is_held_and_moves(setup, moved):
    s = setup()
    with Replay(s) as rp:
        proto.train(s, 0, 1)
    held = {id(p) for o in rp.optimizers.values() for g in o.param_groups for p in g["params"]}
    (row,) = [e for e in rp.graph.persistent() if e["name"] == "self.offset"]
    assert row["grad"] and row["moved"] is moved and id(row["tensor"]) not in held
    assert len(rp.graph.persistent()) == 7  # the MLP's 6 tensors and the offset


def test_the_input_is_read_feature_by_feature():
    leak = feature_checks(RegressionTargetInInputs().batches(0))
    bias = feature_checks(RegressionBiasColumn().batches(0))
    assert leak["label"] == [8] and leak["constant"] == []
    assert bias["label"] == [] and bias["constant"] == [8]


def test_the_next_token_loss_reads_the_time_axis_it_is_given():
    """Logits that name token t+1 of a sequence-first grid, flattened as the model returns
    them: the next-token loss along axis 0 is near 0, along axis 1 it is far from it."""
    s = SeqFirstDoubleShift()
    batch = s.batches(0)[0]
    x = proto.inputs_of(batch)  # (time, batch)
    nxt = torch.roll(x, -1, dims=0)
    out = 20.0 * F.one_hot(nxt, 20).float().flatten(0, 1)
    right, wrong = refloss.next_token(out, batch, 0), refloss.next_token(out, batch, 1)
    assert float(right) < 1e-6 and float(wrong) > 5.0


def test_a_leaked_feature_is_held_constant_and_the_width_kept():
    s = RegressionTargetInInputs()
    held = unleaked._held(s.batches(0), [8])
    x = torch.cat([proto.inputs_of(b) for b in held])
    assert x.shape[1] == 9 and bool((x[:, 8] == x[0, 8]).all())
    assert torch.equal(x[:, :8], torch.cat([proto.inputs_of(b) for b in s.batches(0)])[:, :8])


@pytest.fixture(autouse=True)
def _tenth(monkeypatch):
    monkeypatch.setattr(report, "SETUPS", {**report.SETUPS, **TENTH})
    monkeypatch.setattr(report, "EXPECTED", {**report.EXPECTED, **TENTH_EXPECTED})


# Each setup's tests take its name as their only parameter, so conftest.work_unit keeps them
# in one unit: the setup is triaged once (report.record_of keeps the record), and the 28
# triages spread over the workers instead of one module fixture on one worker.


@pytest.mark.slow
@pytest.mark.parametrize("name", list(TENTH))
def test_every_tenth_setup_is_triaged_right(name):
    row = report.triage(name, keep=True)  # a healthy twin is right when it is acquitted
    assert row["right_mechanism"], (row["system"], row["mechanism"][:200])


WORDS = {
    "tenth_ok_autograd_backward": [
        "not checked: the tensors your loss depends on (the loss could not be traced"
    ],
    "tenth_ok_logit_scale_in_optimizer": [
        "all 8 tensors your loss depends on",
        "outside the model: self.logit_scale",
        "8 of them are stepped by the optimizer",
    ],
    "tenth_ok_offset_by_hand": ["1 is moved by your own loop"],
    "tenth_ok_head_group_lr_zero": [
        "4 of them are stepped",
        "2 never move (head.bias, head.weight)",
    ],
    "tenth_ok_regression_bias_column": [
        "feature 8 is constant",
        "no feature is a copy of the label",
    ],
    "tenth_ok_lm_table_in_optimizer": [
        "token ids",
        "not checked: whether a feature copies the label",
    ],
}


@pytest.mark.slow
@pytest.mark.parametrize("name", list(WORDS))
def test_an_acquittal_says_what_was_checked_and_what_was_not(name):
    row = report.triage(name, keep=True)
    line = row["mechanism"]
    assert row["system"] == "NONE" and all(w in line for w in WORDS[name]), line
    if name != "tenth_ok_autograd_backward":
        assert "could not be traced" not in line
    if name == "tenth_ok_head_group_lr_zero":  # a freeze by LR in a run that learns: advice
        notes = report.record_of(name).notes
        assert any(n.startswith("advice, not a defect: layer head gets a gradient") for n in notes)


@pytest.mark.slow
@pytest.mark.parametrize("name", ["tenth_h1_logit_scale_not_in_optimizer"])
def test_a_tensor_left_out_of_the_optimizer_is_signed_by_labkit_and_by_the_fix(name):
    """labkit's own intervention (the same loop, the optimizer also holding self.logit_scale)
    signs it; so does the learner's one-change fix."""
    assert report.triage(name, keep=True)["granted"]
    record = report.record_of(name, setups=TENTH)
    signed = copy.deepcopy(record).intervene(LogitScaleInOptimizer())
    assert signed.startswith("CONVICTION: H1") and "self.logit_scale" in signed


@pytest.mark.slow
@pytest.mark.parametrize("name", ["tenth_h1_offset_not_in_optimizer"])
def test_an_offset_a_model_bias_also_learns_is_convicted_but_not_signed_alone(name):
    row = report.triage(name, keep=True)
    assert row["right_mechanism"] and not row["granted"]  # holding it changes nothing


# labkit's own one-change intervention signs each alone; the words say what it changed
SIGNED_ALONE = {
    "tenth_h2_regression_target_in_inputs": "feature 8 held at the training mean",
    "tenth_h2_classifier_label_in_inputs": "feature 12 held at the training mean",
    "tenth_h2_seq_first_double_shift": "along the batches' first axis (sequence-first)",
    "tenth_h1_classifier_lr_x100": "yours / 100, in your own loop",
    "tenth_h1_lm_table_group_lr_zero": "the LR of self.table",
    "tenth_h1_regression_gate_lr_zero": "the LR of self.gate",
    "tenth_h1_classifier_gate_lr_zero": "the LR of self.gate",
}


@pytest.mark.slow
@pytest.mark.parametrize("name", list(SIGNED_ALONE))
def test_labkit_signs_it_alone_by_the_one_change_it_names(name):
    row = report.triage(name, keep=True)
    assert row["right_mechanism"] and row["granted"], row["mechanism"][:200]
    assert SIGNED_ALONE[name] in report.record_of(name).rows["intervention"]["text"]
