"""The tenth batch (tests/own_setups/tenth.py, issue 46 item 0): an acquittal earns its words.

The measurements first, each on a real loss or a real batch in well under a second: the walk
of the autograd graph finds a tensor made outside the model, the replay of a learner's loop
sees that no optimizer holds it and that it never moves, and the per-feature input checks find
a label left in the features and a constant bias column. Then the whole batch triaged once
(module-scoped): right system and mechanism on every setup, every healthy twin acquitted with
words that say what was checked and what could not be, and a tensor left out of the optimizer
signed by labkit's own intervention and by the learner's fix."""

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
)

from labkit.diagnosis.own.step1_capture import setup as proto
from labkit.diagnosis.own.step1_capture.graph import leaves_of
from labkit.diagnosis.own.step1_capture.replay import Replay
from labkit.diagnosis.own.step3_h2.features import feature_checks


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


@pytest.fixture(scope="module")
def rows():
    with pytest.MonkeyPatch.context() as mp:
        mp.setattr(report, "SETUPS", {**report.SETUPS, **TENTH})
        mp.setattr(report, "EXPECTED", {**report.EXPECTED, **TENTH_EXPECTED})
        yield {name: report.triage(name, keep=True) for name in TENTH}  # kept: signed below


@pytest.mark.slow
def test_every_tenth_setup_is_triaged_right(rows):
    wrong = {
        n: (r["system"], r["mechanism"][:200])
        for n, r in rows.items()
        if not r["right_mechanism"]  # a healthy twin: acquitted
    }
    assert not wrong, wrong


@pytest.mark.slow
@pytest.mark.parametrize(
    "name, words",
    [
        (
            "tenth_ok_autograd_backward",
            ["not checked: the tensors your loss depends on (the loss could not be traced"],
        ),
        (
            "tenth_ok_logit_scale_in_optimizer",
            [
                "all 8 tensors your loss depends on",
                "outside the model: self.logit_scale",
                "8 of them are stepped by the optimizer",
            ],
        ),
        ("tenth_ok_offset_by_hand", ["1 is moved by your own loop"]),
        (
            "tenth_ok_head_group_lr_zero",
            ["4 of them are stepped", "2 never move (head.bias, head.weight)"],
        ),
        (
            "tenth_ok_regression_bias_column",
            ["feature 8 is constant", "no feature is a copy of the label"],
        ),
        (
            "tenth_ok_lm_table_in_optimizer",
            ["token ids", "not checked: whether a feature copies the label"],
        ),
    ],
)
def test_an_acquittal_says_what_was_checked_and_what_was_not(rows, name, words):
    line = rows[name]["mechanism"]
    assert rows[name]["system"] == "NONE" and all(w in line for w in words), line
    if name != "tenth_ok_autograd_backward":
        assert "could not be traced" not in line
    if name == "tenth_ok_head_group_lr_zero":  # a freeze by LR in a run that learns: advice
        notes = report.record_of(name).notes
        assert any(n.startswith("advice, not a defect: layer head gets a gradient") for n in notes)


@pytest.mark.slow
def test_a_tensor_left_out_of_the_optimizer_is_signed_by_labkit_and_by_the_fix(rows):
    """labkit's own intervention (the same loop, the optimizer also holding self.logit_scale)
    signs it; so does the learner's one-change fix."""
    assert rows["tenth_h1_logit_scale_not_in_optimizer"]["granted"]
    assert not rows["tenth_h1_offset_not_in_optimizer"]["granted"]  # a model bias learns it too
    record = report.record_of("tenth_h1_logit_scale_not_in_optimizer", setups=TENTH)
    signed = copy.deepcopy(record).intervene(LogitScaleInOptimizer())
    assert signed.startswith("CONVICTION: H1") and "self.logit_scale" in signed
