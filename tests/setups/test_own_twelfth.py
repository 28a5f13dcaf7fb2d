"""The twelfth batch (tests/own_setups/twelfth.py, issue 55): kinds no earlier batch held, each
beside a healthy twin, scored at first sight before any rule was read (5 of 11 right system,
1 of 11 right mechanism, one healthy twin convicted and one UNKNOWN).

The measurements first, each on a few steps of a real loop or two real calls of `batches`:
what the backward() calls of a step added against the gradient the step uses, the optimizers
a run built one after another, what differs between two calls of `batches` (whatever the
layout), a sliding window emptied at each epoch, a constant scale on an honest mean, and a
model re-drawn by PyTorch's defaults. Then every setup triaged once (the bar), and the words
each new mechanism prints, read off the same records."""

import math

import pytest
import torch

import own_setups.report as report
from own_setups.twelfth import (
    TWELFTH,
    TWELFTH_EXPECTED,
    AllReduceMean,
    AllReduceSumNotDivided,
    ConstantInit,
    LabelEncoderPerBatch,
    SeqFirstFlattenedTogether,
    SgdBuiltOnce,
    SgdRebuiltEachStep,
    VocabBuiltOnce,
    VocabRebuiltPerBatch,
)

from labkit.diagnosis.own.step1_capture import setup as proto
from labkit.diagnosis.own.step1_capture.loops import default_init
from labkit.diagnosis.own.step1_capture.replay import Replay
from labkit.diagnosis.own.step2_h3.logcount import _sliding
from labkit.diagnosis.own.step2_h3.rebuild import scaled
from labkit.diagnosis.own.step3_h2.calls import drift
from labkit.diagnosis.own.step6_decide.gaps import _optimizers_built, summed_backwards
from labkit.diagnosis.own.step6_decide.evidence import SeedEvidence


class _Seen:
    """A replay and a run, as a `SeedEvidence` holds them, for the readings above."""

    def __init__(self, setup_class, epochs=1):
        self.setup = setup_class()
        with Replay(self.setup) as self.replay:
            self.run = proto.train(self.setup, 0, epochs)


def test_the_step_gradient_is_read_against_what_the_backward_calls_added():
    summed, mean = _Seen(AllReduceSumNotDivided), _Seen(AllReduceMean)
    assert all(st["over_produced"] == pytest.approx(1.0) for st in summed.replay.steps)
    assert all(st["over_produced"] == pytest.approx(0.25) for st in mean.replay.steps)
    # x (the 4 values backpropagated / the logged loss, their mean): a one-process step is 1
    factor, k = summed_backwards(summed)
    assert k == 4 and factor == pytest.approx(4.0, rel=1e-4)
    assert summed_backwards(mean)[0] == pytest.approx(1.0, rel=1e-4)
    assert summed_backwards(_Seen(SgdBuiltOnce)) is None  # one backward() a step: nothing read


def test_optimizers_built_one_after_another_are_counted_and_side_by_side_are_not():
    rebuilt, once = _Seen(SgdRebuiltEachStep), _Seen(SgdBuiltOnce)
    assert _optimizers_built(rebuilt) == (32, 32) and _optimizers_built(once) == (1, 32)

    class Two:  # two optimizers stepped side by side at every step (a GAN's shape)
        replay = type("R", (), {"steps": [{"optimizer": 1 + t % 2} for t in range(10)]})

    assert _optimizers_built(Two) == (1, 10)


@pytest.mark.parametrize(
    "setup_class, inputs, labels",
    [
        (VocabRebuiltPerBatch, True, False),
        (LabelEncoderPerBatch, False, True),
        (VocabBuiltOnce, False, False),
        (SeqFirstFlattenedTogether, False, False),  # (time, batch): the examples run along dim 1
    ],
)
def test_two_calls_of_batches_are_compared_as_the_same_examples(setup_class, inputs, labels):
    got = drift(SeedEvidence(setup_class(), 0))
    assert (got["inputs"] > 0.5) is inputs and (got["inputs"] == 0.0) is not inputs
    assert (got["labels"] > 0.5) is labels
    if not inputs and not labels:  # the same rows in another order: nothing differs at all
        assert got == {"inputs": 0.0, "labels": 0.0, "integer": True}


def test_a_window_emptied_at_each_epoch_is_honest_and_a_lag_is_not():
    raw = [float(v) for v in torch.rand(40, generator=torch.Generator().manual_seed(0))]
    window = [
        sum(raw[max(t - 4, t - t % 10) : t + 1]) / len(raw[max(t - 4, t - t % 10) : t + 1])
        for t in range(40)
    ]
    assert _sliding(raw, window, range(40), 10) == (5, True)
    assert _sliding(raw, [math.nan] + window[:-1], range(1, 40), 10) is None  # one step late


def test_a_constant_scale_is_named_and_an_honest_mean_is_not():
    raw = [1.0 / (t + 1) for t in range(30)]
    honest = [sum(raw[t - t % 10 : t + 1]) / (t % 10 + 1) for t in range(30)]
    key, text = scaled(raw, [v / math.log(2) for v in honest], list(range(30)), 10)
    assert key == "constant_scale" and "the loss in bits (divided by ln 2): x1.443" in text
    assert "x3" in scaled(raw, [3 * v for v in honest], list(range(30)), 10)[1]
    assert scaled(raw, honest, list(range(30)), 10) is None


def test_default_init_redraws_every_layer_of_a_constant_init():
    model = ConstantInit().make_model(0)
    assert torch.all(model.head.weight == 0.05)
    assert default_init(model) == 3  # the three nn.Linear
    assert model.head.weight.std() > 0.01


@pytest.fixture(autouse=True)
def _twelfth(monkeypatch):
    monkeypatch.setattr(report, "SETUPS", {**report.SETUPS, **TWELFTH})
    monkeypatch.setattr(report, "EXPECTED", {**report.EXPECTED, **TWELFTH_EXPECTED})


# Targets flattened batch first against time-first logits, a rotation that changes what a
# label means, and a pos_weight copied onto balanced data were misses until the alignment rule,
# the calls comparison and the class-weight shares (`offset.alignment_rule`, `calls`,
# `targets.class_weights`). A miss that comes back is listed here, kept strict.
MISSED: set[str] = set()


@pytest.mark.slow
@pytest.mark.parametrize(
    "name",
    [
        pytest.param(n, marks=pytest.mark.xfail(strict=True, reason="a known miss"))
        if n in MISSED
        else n
        for n in TWELFTH
    ],
)
def test_every_twelfth_setup_is_triaged_right(name):
    row = report.triage(name, keep=True)  # an acquittal is right only beside its references
    assert row["right_mechanism"], (row["system"], row["mechanism"][:300])
    if row["expected"] != "NONE":
        assert row["granted"], "labkit no longer signs it alone"


WORDS = {
    "twelfth_h1_sgd_rebuilt_each_step": [
        "your loop, not its parts",
        "optimizers one after another",
        "(a new one at every step)",
    ],
    "twelfth_h1_all_reduce_sum_not_divided": ["never divided by 4", "4x the gradient of the loss"],
    "twelfth_h1_constant_init": ["re-initialised as PyTorch's layers draw themselves"],
    "twelfth_h1_tied_head_frozen": ["out holds the same tensor as a frozen input layer"],
    "twelfth_h2_vocab_rebuilt_per_batch": ["the token ids change between two calls of batches()"],
    "twelfth_h2_label_encoder_per_batch": ["the class ids change between two calls of batches()"],
    "twelfth_h3_loss_in_bits": ["the loss in bits (divided by ln 2): x1.443"],
    "twelfth_h2_seq_first_targets_transposed": ["the label grid read transposed"],
    "twelfth_h2_rot90_augment": ["a random transform of the inputs on every call"],
}


@pytest.mark.slow
@pytest.mark.parametrize("name", list(WORDS))
def test_each_new_mechanism_says_what_it_measured(name):
    row = report.triage(name, keep=True)
    assert all(w in row["mechanism"] for w in WORDS[name]), row["mechanism"]
