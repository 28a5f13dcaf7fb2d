"""The readings added from the eighteenth batch's misses, written before each reading, on
inputs that batch does not hold: each must fire on its defect and stay silent on the healthy
look-alike beside it (no training here: each reading is a function of tensors or of loss
curves)."""

import math

import torch
import torch.nn as nn
import torch.nn.functional as F

from labkit import Run
from labkit.diagnosis.own.step1_capture import replay
from labkit.diagnosis.own.step1_capture.replay import Replay
from labkit.diagnosis.own.step1_capture.loops import LoopResult
from labkit.diagnosis.own.step2_h3 import logcount
from labkit.diagnosis.own.step2_h3.logger import check_logger
from labkit.diagnosis.own.step3_h2 import paired
from labkit.diagnosis.own.step3_h2.data import label_signal
from labkit.diagnosis.own.step4_h1 import targets
from labkit.diagnosis.own.step5_sign import acquit
from labkit.diagnosis.own.step5_sign.intervene import _epoch_mean


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


def _columns_run(shown_column):
    """Three outputs' squared errors per step, the loss their mean; the report is the epoch
    running mean of column `shown_column` (None: of the loss itself)."""
    per_epoch, g = 8, _gen(9)
    cols = (torch.rand(32, 3, generator=g) + torch.tensor([0.2, 1.0, 2.0])).tolist()
    raw = [sum(c) / 3 for c in cols]
    values = raw if shown_column is None else [c[shown_column] for c in cols]
    reported = _epoch_mean(values, per_epoch)
    run = Run.from_log({"step": list(range(32)), "loss_raw": raw, "loss_reported": reported},
                       seed=0, started_at=0.0)  # fmt: skip
    forwards = [{"step": t, "columns": {"mse": c, "l1": c}} for t, c in enumerate(cols)]
    return run, logcount._columns(forwards, 32), per_epoch


def test_one_output_shown_as_the_loss_is_named_and_the_mean_over_outputs_is_honest():
    run, series, per_epoch = _columns_run(1)
    found = check_logger(run, per_epoch=per_epoch, series=series)
    assert found.details["mechanism"] == "column1of3_mse_shown"
    assert "column 1 of the 3 outputs" in found.verdict
    run, series, per_epoch = _columns_run(None)
    assert check_logger(run, per_epoch=per_epoch, series=series).details["agree"]


def test_columns_are_read_only_for_float_labels_of_the_outputs_shape():
    out = torch.randn(6, 3, generator=_gen(10))
    ids = replay._columns(out, (torch.zeros(6, 4), torch.randint(0, 3, (6,))))
    assert "accuracy" in ids and "mse" not in ids  # class ids: the accuracy, no columns
    assert replay._columns(out[:, :1], (torch.zeros(6, 4), torch.zeros(6, 1))) is None  # one
    assert replay._columns(out, (torch.zeros(6, 4), torch.zeros(6, 2))) is None  # other shape
    found = replay._columns(out, (torch.zeros(6, 4), torch.zeros(6, 3)))
    assert torch.allclose(torch.tensor(found["mse"]), (out**2).mean(0))
    assert logcount._columns([{"step": 0, "columns": found}], 2) == {}  # a step without one


def _metric_run(shown: str | None):
    """Batch accuracies that rise while the loss falls; the report is the epoch running mean
    of the loss (None), of the accuracy, or of the error rate."""
    per_epoch, g = 8, _gen(11)
    accuracy = [
        min(1.0, 0.2 + t / 40 + 0.05 * float(torch.rand((), generator=g))) for t in range(32)
    ]
    raw = [1.6 * (1 - a) + 0.05 for a in accuracy]  # a loss that follows it, not equal to it
    values = {None: raw, "accuracy": accuracy, "error_rate": [1 - a for a in accuracy]}[shown]
    reported = _epoch_mean(values, per_epoch)
    run = Run.from_log({"step": list(range(32)), "loss_raw": raw, "loss_reported": reported},
                       seed=0, started_at=0.0)  # fmt: skip
    forwards = [{"step": t, "columns": {"accuracy": a}} for t, a in enumerate(accuracy)]
    return run, logcount._columns(forwards, 32), per_epoch


def test_the_accuracy_or_the_error_rate_shown_as_the_loss_is_named_and_the_loss_is_not():
    for shown in ("accuracy", "error_rate"):
        run, series, per_epoch = _metric_run(shown)
        found = check_logger(run, per_epoch=per_epoch, series=series)
        assert found.details["mechanism"] == f"{shown}_shown", found.verdict
        assert "a metric is not the loss" in found.verdict
    run, series, per_epoch = _metric_run(None)
    assert check_logger(run, per_epoch=per_epoch, series=series).details["agree"]


def test_accuracy_counts_only_the_positions_a_loss_scores():
    logits = torch.zeros(2, 3, 4)
    logits[..., 1] = 1.0  # every position predicts class 1
    labels = torch.tensor([[1, 2, -100], [1, -100, -100]])  # three scored, two of them right
    assert replay._columns(logits, (torch.zeros(2, 3), labels))["accuracy"] == 2 / 3
    every = torch.full((2, 3), -100)
    assert replay._columns(logits, (torch.zeros(2, 3), every)) is None  # nothing scored


def test_a_sign_flipped_report_is_named_and_a_positive_scale_keeps_its_words():
    from labkit.diagnosis.own.step2_h3.rebuild import scaled

    raw = [1.0 / (t + 1) + 0.2 for t in range(30)]
    honest = _epoch_mean(raw, 10)
    key, text = scaled(raw, [-v for v in honest], list(range(30)), 10)
    assert key == "sign_flipped" and "minus the honest mean of the epoch" in text
    assert "times" not in text  # exactly -1: no factor to name
    assert "times 2.5" in scaled(raw, [-2.5 * v for v in honest], list(range(30)), 10)[1]
    assert scaled(raw, [2.5 * v for v in honest], list(range(30)), 10)[0] == "constant_scale"


def test_a_forecast_threshold_in_any_exponent_form_is_understood():
    from labkit.diagnosis.record.prediction import Prediction

    for text, value in (("loss_reported > 0.000e+00 by step 15", 0.0), ("loss < 1.5E-3 by step 2",
                        0.0015), ("loss < -2e+01 by step 4", -20.0)):  # fmt: skip
        assert Prediction(text).parse()["value"] == value


def _broadcast_run(shown: str):
    """A (B, 1) regression whose loss is right; the report is the epoch running mean of the
    loss, or of the error broadcast to (B, B) by a metric given the (B,) labels."""
    g, per_epoch, raw, broad, forwards = _gen(12), 8, [], [], []
    for t in range(32):
        out, y = torch.randn(16, 1, generator=g), torch.randn(16, generator=g) * (1 + t / 8)
        found = replay._columns(out, (torch.zeros(16, 3), y))
        forwards.append({"step": t, "columns": found})
        raw.append(float(((out.squeeze(1) - y) ** 2).mean()))
        broad.append(found["broadcast_mse"])
    reported = _epoch_mean(broad if shown == "broadcast" else raw, per_epoch)
    run = Run.from_log({"step": list(range(32)), "loss_raw": raw, "loss_reported": reported},
                       seed=0, started_at=0.0)  # fmt: skip
    return run, logcount._columns(forwards, 32), per_epoch


def test_an_error_broadcast_to_b_by_b_is_named_and_the_right_loss_is_honest():
    run, series, per_epoch = _broadcast_run("broadcast")
    found = check_logger(run, per_epoch=per_epoch, series=series)
    assert found.details["mechanism"] == "broadcast_mse_shown", found.verdict
    run, series, per_epoch = _broadcast_run("loss")
    assert check_logger(run, per_epoch=per_epoch, series=series).details["agree"]
    out = torch.zeros(4, 1)
    assert replay._columns(out, (torch.zeros(4, 2), torch.zeros(4, 1))) is None  # same shape
    assert replay._columns(out, (torch.zeros(4, 2), torch.ones(4))) == {
        "broadcast_mse": 1.0,
        "broadcast_l1": 1.0,
    }


class _Tagged(nn.Module):
    """A body and a head; `extra` is built beside them: used, frozen, tied or never used."""

    def __init__(self, extra: str):
        super().__init__()
        self.body, self.head, self.extra = nn.Linear(4, 8), nn.Linear(8, 3), extra
        self.table = nn.Embedding(5, 8)  # used only by "used" and "frozen"
        self.scale = nn.Parameter(torch.ones(8))  # a bare parameter, used unless "bare"
        if extra == "frozen":
            self.table.requires_grad_(False)
        if extra == "tied":
            self.table.weight = self.head.weight  # tied: one tensor, read by both names

    def forward(self, x):  # (B, 4) -> (B, 3)
        h = torch.relu(self.body(x))
        if self.extra != "bare":
            h = h * self.scale
        if self.extra in ("used", "frozen"):
            h = h + self.table(torch.zeros(len(x), dtype=torch.long))
        return self.head(h)


def _never_grad(extra, exclude=()):
    model = _Tagged(extra)
    params = [p for n, p in model.named_parameters() if not n.startswith(exclude)]
    opt = torch.optim.SGD(params, lr=0.1)
    x, y = torch.randn(16, 4, generator=_gen(11)), torch.randint(0, 3, (16,), generator=_gen(12))
    with Replay() as rp:
        for _ in range(3):
            opt.zero_grad()
            F.cross_entropy(model(x), y).backward()
            opt.step()
    return acquit.never_grad(rp)


def test_a_parameter_the_optimizer_holds_and_the_loss_never_reads_is_named():
    assert _never_grad("unused") == [("table.weight", 40, False)]  # its module never ran
    assert _never_grad("bare") == [("scale", 8, True), ("table.weight", 40, False)]


def test_frozen_tied_used_or_left_out_parameters_are_not_named():
    assert _never_grad("used") == []
    assert _never_grad("frozen") == []  # requires_grad off: a freeze, read elsewhere
    assert _never_grad("tied") == []  # the head's weight, under a second name
    assert _never_grad("unused", exclude=("table",)) == []  # left out of the optimizer


def _blobs(n, seed, shape="wedge", dark=False):
    """(N, 1, 12, 12) images of one shape at a random place in noise, and its (N, 1, 12, 12)
    mask; a wedge is asymmetric left to right, a square centred left to right is not."""
    g = _gen(seed)
    masks = torch.zeros(n, 1, 12, 12)
    for i in range(n):
        r, c = (int(v) for v in torch.randint(0, 7, (2,), generator=g))
        for k in range(5):
            if shape == "square":  # centred left to right: a flip leaves it where it was
                masks[i, 0, r + k, 4:8] = 1.0
            else:
                masks[i, 0, r + k, c : c + k + 1] = 1.0
    images = (-1.0 if dark else 1.0) * masks + 0.3 * torch.randn(n, 1, 12, 12, generator=g)
    return images, masks


def _flipped(images, masks, seed, apart):
    g = _gen(seed)
    a = torch.rand(len(images), generator=g) < 0.5
    b = torch.rand(len(images), generator=g) < 0.5 if apart else a
    images, masks = images.clone(), masks.clone()
    images[a], masks[b] = images[a].flip(-1), masks[b].flip(-1)
    return [(images[i : i + 16], masks[i : i + 16]) for i in range(0, len(images), 16)]


def test_masks_flipped_with_their_images_or_symmetric_or_dark_are_not_read_as_apart():
    x, m = _blobs(64, 13)
    assert paired.readings(_flipped(x, m, 14, apart=False))["share"] < paired.SHARE
    x, m = _blobs(64, 15, shape="square")
    assert paired.readings(_flipped(x, m, 16, apart=True))["share"] < paired.SHARE
    x, m = _blobs(64, 17, dark=True)  # the object darker than the ground: r < 0 as given
    assert paired.readings(_flipped(x, m, 18, apart=False))["share"] < paired.SHARE
    ids = [(torch.randint(0, 9, (16, 12)), torch.randint(0, 2, (16, 12)))]  # not images
    assert paired.readings(ids) is None


def test_masks_flipped_apart_from_their_images_are_read():
    x, m = _blobs(64, 19)
    found = paired.readings(_flipped(x, m, 20, apart=True))
    assert found["share"] > 0.3 and found["how"] == "left-right"
