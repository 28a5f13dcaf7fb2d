"""The readings added from the eighteenth batch's misses, written before each reading, on
inputs that batch does not hold: each must fire on its defect and stay silent on the healthy
look-alike beside it (no training here: each reading is a function of tensors or of loss
curves)."""

import math

import torch
import torch.nn.functional as F

from labkit.diagnosis.own.step1_capture.loops import LoopResult
from labkit.diagnosis.own.step3_h2.data import label_signal
from labkit.diagnosis.own.step4_h1 import targets


def _gen(seed):
    return torch.Generator().manual_seed(seed)


def _curve(start, end, steps=100, tau=10.0, wobble=0.0):
    """A loss curve that falls from `start` to `end` with time constant `tau` (steps)."""
    return [end + (start - end) * math.exp(-t / tau) + wobble * (-1) ** t for t in range(steps)]


def _result(losses):
    return LoopResult("ref", losses, [1.0] * len(losses), [0.1] * len(losses))


def test_a_regression_that_learns_is_not_read_as_no_signal_when_its_starts_differ():
    # real labels reach 0.01, shuffled ones the targets' variance (0.2); the two seeds start
    # at 1.5 and 4 and fall at different speeds: the whole-run means differ by more per seed
    # than between real and shuffled, the ends do not
    real = [_result(_curve(1.5, 0.01, tau=5)), _result(_curve(4.0, 0.012, tau=12))]
    shuffled = [_result(_curve(1.5, 0.2, tau=5)), _result(_curve(4.0, 0.21, tau=12))]
    sig = label_signal(real, shuffled)
    assert sig["verdict"] != "none" and "ends" in sig


def test_labels_without_signal_still_read_as_none_when_the_ends_agree():
    real = [_result(_curve(1.5, 0.2, tau=5)), _result(_curve(4.0, 0.21, tau=12))]
    shuffled = [_result(_curve(1.5, 0.205, tau=5)), _result(_curve(4.0, 0.2, tau=12))]
    sig = label_signal(real, shuffled)
    assert sig["verdict"] == "none" and "ends" not in sig


def test_noisy_ends_that_barely_differ_are_not_read_as_apart():
    real = [_result(_curve(1.5, 0.2, tau=5, wobble=0.05)), _result(_curve(4, 0.3, tau=12))]
    shuffled = [_result(_curve(1.5, 0.22, tau=5)), _result(_curve(4.0, 0.26, tau=12))]
    assert "ends" not in label_signal(real, shuffled)


def test_class_probability_targets_that_sum_to_one_are_not_read_as_several_classes_on():
    logits = torch.randn(40, 5, generator=_gen(1))
    ids = torch.randint(0, 5, (40,), generator=_gen(2))
    onehot = F.one_hot(ids, 5).float()
    smoothed = onehot * 0.9 + 0.1 / 5  # label smoothing written by hand
    lam = torch.rand(40, 1, generator=_gen(3))
    mixed = lam * onehot + (1 - lam) * onehot.roll(1, 0)  # mixup: still one unit per row
    soft = torch.softmax(torch.randn(40, 5, generator=_gen(4)), 1)  # a teacher's softmax
    for target in (onehot, smoothed, mixed, soft):
        assert targets.multi_hot("cross_entropy", logits, target) is None
    assert targets.multi_hot("cross_entropy", logits, ids) is None  # class ids
    tags = (torch.rand(40, 5, generator=_gen(5)) < 0.5).float()
    assert targets.multi_hot("binary_cross_entropy_with_logits", logits, tags) is None


def test_multi_hot_rows_under_cross_entropy_are_read_as_several_classes_on():
    logits = torch.randn(40, 5, generator=_gen(6))
    tags = (torch.rand(40, 5, generator=_gen(7)) < 0.5).float()
    found = targets.multi_hot("cross_entropy", logits, tags)
    assert found["binary"] and found["share"] > 0.5 and found["classes"] == 5
    one_off = F.one_hot(torch.randint(0, 5, (40,), generator=_gen(8)), 5).float()
    one_off[:2, :] = 1.0  # two rows of forty with every class on: under MULTI, left alone
    assert targets.multi_hot("cross_entropy", logits, one_off) is None
