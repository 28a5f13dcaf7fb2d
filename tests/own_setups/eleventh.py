"""The eleventh batch (issue 46, a fresh batch): optimizer and data bugs of kinds no earlier
batch holds, each beside a healthy twin that makes an unusual but correct choice.

Written before any rule was read in depth, and scored at first sight (figures in
docs/developer/unseen-bugs.md). Each bug was checked in plain PyTorch against its one-change
twin first (`python -m own_setups.eleventh` from tests/): the bug clearly hurts, the twin learns.

- the data's order: batches sorted by label, each batch one class, under SGD with momentum
  (twin: a fixed round-robin order of the classes, unshuffled on purpose);
- an augmentation that changes what the label means: a random sign flip of the whole input on
  a task whose class is the input's quadrant (twin: small Gaussian jitter);
- parameters re-initialised at the start of every epoch (twin: a zero-initialised output layer,
  set once before training);
- accumulated gradients divided by the data set's size instead of the number of micro-batches
  (twin: divided by the number of micro-batches, by hand);
- Adam with eps=1.0 on an LM (twin: eps=1e-6, amsgrad in both);
- gradients clipped by value at 1e-4 on a regression (twin: clipped by value at 1.0);
- ReduceLROnPlateau written with mode="max" on a regression's loss (twin: mode="min");
- a hand-written update that adds the gradient (twin: the same update that subtracts it).

After the first score, second and third shapes were written after the rules they test (LM,
CNN, regression and classifier; SGD and Adam), and two healthy loops that do what the loop
audit reads and still learn: Lookahead by hand (weights moved outside step()) and gradients
scaled by 1000 under Adam. `TWINS` pairs each bug with a twin for `verify`.

Nothing here uses labkit but `Run.from_log`.
"""

from __future__ import annotations

import math
import time

import torch
import torch.nn as nn
import torch.nn.functional as F

from labkit import Run

from .common import MLP, SmallCNN, TinyGRULM, bar_images, blob_mixture, markov_tokens, split
from .fourth import mlp, shuffled, tabular_regression


def _gen(seed):
    return torch.Generator().manual_seed(seed)


def _log(raw, shown, seed, started):
    return Run.from_log(
        {"step": list(range(len(raw))), "loss_raw": raw, "loss_reported": shown},
        seed=seed,
        started_at=started,
    )


class _Plain:
    """The plain loop: zero_grad, loss, backward, `self.before_step`, step; the progress value
    is `self.shown` (the running epoch mean). `self.model` keeps the last trained model (for
    `verify`); `self.batch_optimizer` gives the optimizer each batch uses (the one built)."""

    def before_step(self, model, opt):
        pass

    def start_epoch(self, model, epoch):
        pass

    def end_epoch(self, opt, mean):
        pass

    def batch_optimizer(self, model, opt):
        return opt

    def shown(self, running, epoch_raw):
        return running / len(epoch_raw)

    def train(self, seed, epochs):
        started = time.time()
        model = self.make_model(seed)
        opt = self.make_optimizer(model)
        raw, shown = [], []
        for epoch in range(epochs):
            self.start_epoch(model, epoch)
            running, epoch_raw = 0.0, []
            for batch in self.batches(seed * 10 + epoch):
                opt = self.batch_optimizer(model, opt)
                opt.zero_grad()
                loss = self.loss_fn(model, batch)
                loss.backward()
                self.before_step(model, opt)
                opt.step()
                running += loss.item()
                raw.append(loss.item())
                epoch_raw.append(loss.item())
                shown.append(self.shown(running, epoch_raw))
            self.end_epoch(opt, running / len(epoch_raw))
        self.model = model
        return _log(raw, shown, seed, started)


class _Blobs(_Plain):
    LR = 3e-3

    def __init__(self):
        (self.x, self.y), _ = split(*blob_mixture(n=1280, seed=4710))

    def make_model(self, seed):
        torch.manual_seed(seed)
        return MLP()

    def make_optimizer(self, model):
        return torch.optim.Adam(model.parameters(), lr=self.LR)

    def batches(self, seed):
        return [(self.x[i], self.y[i]) for i in shuffled(len(self.x), 32, seed)]

    def loss_fn(self, model, batch):
        x, y = batch
        return F.cross_entropy(model(x), y)


class _Regression(_Plain):
    LR = 0.05

    def __init__(self):
        self.x, self.y = tabular_regression(n=1024, seed=4720)

    def make_model(self, seed):
        torch.manual_seed(seed)
        return mlp(8, 1)

    def make_optimizer(self, model):
        return torch.optim.SGD(model.parameters(), lr=self.LR)

    def batches(self, seed):
        return [(self.x[i], self.y[i]) for i in shuffled(len(self.x), 32, seed)]

    def loss_fn(self, model, batch):
        x, y = batch
        return F.mse_loss(model(x).squeeze(-1), y)


# ------------------------------------------------------------------------------ the data's order
class SortedByLabel(_Blobs):
    """Bug (H2): the rows were sorted by label (to count the classes) and the batches cut from
    the sorted table with no shuffle: every batch holds one class, and the model chases the
    class of the last few batches."""

    def __init__(self):
        super().__init__()
        order = torch.argsort(self.y, stable=True)
        self.x, self.y = self.x[order], self.y[order]

    def make_optimizer(self, model):
        return torch.optim.SGD(model.parameters(), lr=0.05, momentum=0.9)

    def batches(self, seed):  # the same order every epoch: the seed does not change it
        return [(self.x[i : i + 32], self.y[i : i + 32]) for i in range(0, len(self.x), 32)]


class SortedByLabelShuffled(SortedByLabel):
    """The learner's fix of `SortedByLabel`: a new permutation of the rows for every seed."""

    def batches(self, seed):
        perm = torch.randperm(len(self.x), generator=torch.Generator().manual_seed(seed))
        return [
            (self.x[perm[i : i + 32]], self.y[perm[i : i + 32]]) for i in range(0, len(self.x), 32)
        ]


class SortedByLabelReversed(SortedByLabel):
    """Not a fix: the sorted batches in reverse order, still one class a batch."""

    def batches(self, seed):
        return list(reversed(super().batches(seed)))


class RoundRobinClasses(SortedByLabel):
    """Healthy (a choice): the same fixed, unshuffled order, but the rows interleave the
    classes round-robin (one of each class in turn), so every batch holds every class."""

    def __init__(self):
        super().__init__()
        rank = torch.zeros(len(self.y), dtype=torch.long)
        for c in range(6):
            idx = (self.y == c).nonzero().squeeze(1)
            rank[idx] = torch.arange(len(idx)) * 6 + c
        order = torch.argsort(rank)
        self.x, self.y = self.x[order], self.y[order]


# ------------------------------------------------------------------ an augmentation and its label
class _Quadrants(_Plain):
    """Four classes, the quadrant of features 0 and 1 (away from the axes); 6 noise features."""

    LR = 3e-3

    def __init__(self):
        g = _gen(4730)
        x = torch.randn(1024, 8, generator=g)
        x[:, :2] += 0.6 * torch.sign(x[:, :2])
        self.x = x
        self.y = (x[:, 0] > 0).long() + 2 * (x[:, 1] > 0).long()

    def make_model(self, seed):
        torch.manual_seed(seed)
        return mlp(8, 4)

    def make_optimizer(self, model):
        return torch.optim.Adam(model.parameters(), lr=self.LR)

    def augment(self, x, g):
        raise NotImplementedError

    def batches(self, seed):
        g = _gen(seed + 99)
        return [(self.augment(self.x[i], g), self.y[i]) for i in shuffled(len(self.x), 32, seed)]

    def loss_fn(self, model, batch):
        x, y = batch
        return F.cross_entropy(model(x), y)


class SignFlipAugment(_Quadrants):
    """Bug (H2): a 'random mirror' augmentation copied from an image pipeline multiplies half
    the inputs by -1; the class is the input's quadrant, so a flipped input belongs to the
    opposite quadrant's class while keeping its own label."""

    def augment(self, x, g):
        flip = torch.randint(0, 2, (len(x), 1), generator=g) * 2 - 1
        return x * flip


class JitterAugment(_Quadrants):
    """Healthy: the augmentation adds Gaussian jitter of std 0.05, which keeps every label."""

    def augment(self, x, g):
        return x + 0.05 * torch.randn(x.shape, generator=g)


# ------------------------------------------------------------------------------ the optimizer
class ReinitEachEpoch(_Regression):
    """Bug (H1): `model.apply(init_weights)` sits inside the epoch loop (meant once, before it):
    every epoch starts again from fresh random weights, so the run never trains for more than
    one epoch's steps."""

    def batches(self, seed):
        return [(self.x[i], self.y[i]) for i in shuffled(len(self.x), 64, seed)]

    def start_epoch(self, model, epoch):
        for m in model.modules():
            if isinstance(m, nn.Linear):
                m.reset_parameters()


class ZeroInitHeadOnce(ReinitEachEpoch):
    """Healthy (a choice): the same init call, once before the first epoch, and the output
    layer's weight set to zero there (the body stays random, so its gradient is not zero)."""

    def start_epoch(self, model, epoch):
        if epoch == 0:
            super().start_epoch(model, epoch)
            nn.init.zeros_(model[-1].weight)


class _Accumulate(_Blobs):
    """Four micro-batches of 8 per step, the mean loss of each backpropagated, the summed
    gradients divided by `self.divisor()` by hand before an SGD step with momentum."""

    LR = 0.05

    def make_optimizer(self, model):
        return torch.optim.SGD(model.parameters(), lr=self.LR, momentum=0.9)

    def divisor(self):
        return 4

    def train(self, seed, epochs):
        started = time.time()
        model = self.make_model(seed)
        opt = self.make_optimizer(model)
        raw, shown = [], []
        for epoch in range(epochs):
            running = 0.0
            for i, (x, y) in enumerate(self.batches(seed * 10 + epoch)):
                opt.zero_grad()
                total = 0.0
                for xs, ys in zip(x.split(8), y.split(8)):
                    loss = self.loss_fn(model, (xs, ys))
                    loss.backward()
                    total += loss.item()
                for p in model.parameters():
                    p.grad /= self.divisor()
                opt.step()
                running += total / 4
                raw.append(total / 4)
                shown.append(running / (i + 1))
        self.model = model
        return _log(raw, shown, seed, started)


class GradOverDatasetSize(_Accumulate):
    """Bug (H1): the accumulated gradients are divided by len(dataset), 'the average over the
    data', instead of by the 4 micro-batches: each step is 256 times too small."""

    def divisor(self):
        return len(self.x)


class GradOverMicroBatches(_Accumulate):
    """Healthy: the accumulated gradients divided by the 4 micro-batches, by hand."""


class _LmAdam(_Plain):
    """A GRU LM on Markov tokens under Adam with amsgrad."""

    EPS = 1e-6

    def __init__(self):
        self.ids = markov_tokens(n=256, seed=4740)[:, :9]

    def make_model(self, seed):
        torch.manual_seed(seed)
        return TinyGRULM()

    def make_optimizer(self, model):
        return torch.optim.Adam(model.parameters(), lr=5e-3, eps=self.EPS, amsgrad=True)

    def batches(self, seed):
        return [
            {"input_ids": self.ids[i, :-1], "labels": self.ids[i, 1:]}
            for i in shuffled(len(self.ids), 16, seed)
        ]

    def loss_fn(self, model, batch):
        logits = model(batch["input_ids"])
        return F.cross_entropy(logits.flatten(0, 1), batch["labels"].flatten())


class AdamEpsOne(_LmAdam):
    """Bug (H1): Adam's eps=1.0 (read as 'a safe epsilon'): the denominator sqrt(v) + eps is
    about 1 for gradients far below 1, so each step is lr x gradient, 100 times too small."""

    EPS = 1.0


class AdamEpsSmall(_LmAdam):
    """Healthy: the same Adam with eps=1e-6."""


class ClipValueTiny(_Regression):
    """Bug (H1): `clip_grad_value_(model.parameters(), 1e-4)` (meant 1.0, or meant a norm): every
    gradient element is cut to at most 1e-4, so SGD's steps are almost nothing."""

    CLIP = 1e-4

    def before_step(self, model, opt):
        torch.nn.utils.clip_grad_value_(model.parameters(), self.CLIP)


class ClipValueOne(ClipValueTiny):
    """Healthy: the same clip by value at 1.0."""

    CLIP = 1.0


class _Plateau(_Regression):
    """A regression under plain SGD, batches of 128; ReduceLROnPlateau (factor 0.1, patience 0)
    stepped once per epoch with the epoch's mean loss."""

    MODE = "min"

    def batches(self, seed):
        return [(self.x[i], self.y[i]) for i in shuffled(len(self.x), 128, seed)]

    def make_optimizer(self, model):
        opt = torch.optim.SGD(model.parameters(), lr=self.LR)
        self.scheduler = torch.optim.lr_scheduler.ReduceLROnPlateau(
            opt, mode=self.MODE, factor=0.1, patience=0
        )
        return opt

    def end_epoch(self, opt, mean):
        self.scheduler.step(mean)


class PlateauModeMax(_Plateau):
    """Bug (H1): mode="max" (copied from a loop that tracked accuracy) on the loss: every epoch
    whose loss falls counts as no improvement, and the LR is cut tenfold each epoch."""

    MODE = "max"


class PlateauModeMin(_Plateau):
    """Healthy: mode="min" on the loss."""


class _ByHand(_Regression):
    """No torch.optim: the learner's update(model) moves the parameters itself."""

    SIGN = -1.0

    def make_optimizer(self, model):
        return None

    def update(self, model):
        with torch.no_grad():
            for p in model.parameters():
                p.add_(p.grad, alpha=self.SIGN * self.LR)

    def train(self, seed, epochs):
        started = time.time()
        model = self.make_model(seed)
        raw, shown = [], []
        for epoch in range(epochs):
            running = 0.0
            for i, batch in enumerate(self.batches(seed * 10 + epoch)):
                model.zero_grad()
                loss = self.loss_fn(model, batch)
                loss.backward()
                self.update(model)
                running += loss.item()
                raw.append(loss.item())
                shown.append(running / (i + 1))
        self.model = model
        return _log(raw, shown, seed, started)


class UpdateAddsGradient(_ByHand):
    """Bug (H1): the hand-written update is `p.add_(p.grad, alpha=lr)`: it climbs the loss."""

    SIGN = 1.0


class UpdateByHand(_ByHand):
    """Healthy (a choice): the hand-written update `p.add_(p.grad, alpha=-lr)`."""


# ------------------------------------------------- second shapes, written after the rules
class _LmSgd(_LmAdam):
    """The GRU LM under plain SGD at LR 1.0."""

    def make_optimizer(self, model):
        return torch.optim.SGD(model.parameters(), lr=1.0)


class LmReloadEachEpoch(_LmSgd):
    """Bug (H1, after the rules): the loop reloads the initial checkpoint at every epoch's start
    (`model.load_state_dict(init)`, meant once, to start every seed from the same weights)."""

    def start_epoch(self, model, epoch):
        if epoch == 0:
            self.init = {k: v.clone() for k, v in model.state_dict().items()}
        model.load_state_dict(self.init)


class LmReloadOnce(LmReloadEachEpoch):
    """Healthy (after the rules): the same reload, at the first epoch only."""

    def start_epoch(self, model, epoch):
        if epoch == 0:
            super().start_epoch(model, epoch)


class LmGradClampedByHand(_LmSgd):
    """Bug (H1, after the rules): `p.grad.clamp_(-1e-5, 1e-5)` by hand before the step (meant
    1e5, 'against spikes')."""

    def before_step(self, model, opt):
        for p in model.parameters():
            p.grad.clamp_(-1e-5, 1e-5)


class AdamClipNormSmall(_Blobs):
    """Healthy (after the rules): Adam with clip_grad_norm_ at 1e-3: Adam divides the clip back
    out, so the run learns like an unclipped one (an edit that does not hurt is no defect)."""

    def before_step(self, model, opt):
        torch.nn.utils.clip_grad_norm_(model.parameters(), 1e-3)


class RegressionNegatedBackward(_Regression):
    """Bug (H1, after the rules): `(-loss).backward()` (a sign left from a reward-maximising
    script) under Adam; the positive loss is logged."""

    def make_optimizer(self, model):
        return torch.optim.Adam(model.parameters(), lr=1e-2)

    def train(self, seed, epochs):
        started = time.time()
        model = self.make_model(seed)
        opt = self.make_optimizer(model)
        raw, shown = [], []
        for epoch in range(epochs):
            running = 0.0
            for i, batch in enumerate(self.batches(seed * 10 + epoch)):
                opt.zero_grad()
                loss = self.loss_fn(model, batch)
                (-loss).backward()
                opt.step()
                running += loss.item()
                raw.append(loss.item())
                shown.append(running / (i + 1))
        self.model = model
        return _log(raw, shown, seed, started)


class _Ordered(_Regression):
    """A regression under Adam whose rows keep the order of `self.key()`, never shuffled."""

    def __init__(self):
        super().__init__()
        order = torch.argsort(self.key())
        self.x, self.y = self.x[order], self.y[order]

    def make_optimizer(self, model):
        return torch.optim.Adam(model.parameters(), lr=1e-2)

    def batches(self, seed):
        return [(self.x[i : i + 32], self.y[i : i + 32]) for i in range(0, len(self.x), 32)]


class RegressionSortedByTarget(_Ordered):
    """Bug (H2, after the rules): the table is sorted by its target (a time series read in time
    order) and cut into batches unshuffled: the model follows the target's current range."""

    def key(self):
        return self.y


class RegressionSortedByNoise(_Ordered):
    """Healthy (after the rules): the rows sorted by a random id column, unshuffled: a fixed
    order that carries nothing about the target."""

    def key(self):
        return torch.randperm(len(self.y), generator=_gen(4750))


# -------------------------------------------------- third shapes, written after those rules
class ClassifierNegatedBackward(_Blobs):
    """Bug (H1, after the negation rule): `(loss * -1.0).backward()` under SGD with momentum,
    the positive loss logged (a classifier where the regression had Adam)."""

    def make_optimizer(self, model):
        return torch.optim.SGD(model.parameters(), lr=0.01, momentum=0.9)

    def train(self, seed, epochs):
        started = time.time()
        model = self.make_model(seed)
        opt = self.make_optimizer(model)
        raw, shown = [], []
        for epoch in range(epochs):
            running = 0.0
            for i, batch in enumerate(self.batches(seed * 10 + epoch)):
                opt.zero_grad()
                loss = self.loss_fn(model, batch)
                (loss * -1.0).backward()
                opt.step()
                running += loss.item()
                raw.append(loss.item())
                shown.append(running / (i + 1))
        self.model = model
        return _log(raw, shown, seed, started)


class _Bars(_Plain):
    """The stroke-image CNN under Adam, batches of 16 cut in the table's order."""

    def __init__(self):
        self.x, self.y = bar_images(n=384, seed=4760)

    def make_model(self, seed):
        torch.manual_seed(seed)
        return SmallCNN()

    def make_optimizer(self, model):
        return torch.optim.Adam(model.parameters(), lr=3e-3)

    def batches(self, seed):
        return [(self.x[i : i + 16], self.y[i : i + 16]) for i in range(0, len(self.x), 16)]

    def loss_fn(self, model, batch):
        x, y = batch
        return F.cross_entropy(model(x), y)


class CnnSortedByLabel(_Bars):
    """Bug (H2, after the order rule): the images were grouped by class when saved and are read
    back unshuffled (a CNN under Adam where the first was an MLP under SGD)."""

    def __init__(self):
        super().__init__()
        order = torch.argsort(self.y, stable=True)
        self.x, self.y = self.x[order], self.y[order]


class CnnTableOrder(_Bars):
    """Healthy (after the order rule): the same images in the order they were generated, which
    is random, read back unshuffled."""


# --------------------------- healthy loops that do what the loop audit reads, and still learn
class LookaheadByHand(_Blobs):
    """Healthy (after the rules): Lookahead written by hand: every 5 steps the weights are pulled
    halfway back to a slow copy, which then takes their place (parameters change outside
    step(), on purpose, and the run learns)."""

    def start_epoch(self, model, epoch):
        if epoch == 0:
            self.slow = [p.detach().clone() for p in model.parameters()]
            self.count = 0

    def before_step(self, model, opt):
        self.count += 1
        if self.count % 5 == 0:
            with torch.no_grad():
                for p, s in zip(model.parameters(), self.slow):
                    s.add_(p - s, alpha=0.5)
                    p.copy_(s)


class AdamGradTimesThousand(_Blobs):
    """Healthy (after the rules): the gradients multiplied by 1000 before Adam's step (a loss
    scale left from mixed-precision code): Adam divides the scale back out, and the run learns."""

    def before_step(self, model, opt):
        for p in model.parameters():
            p.grad.mul_(1000.0)


ELEVENTH = {
    "eleventh_h2_sorted_by_label": SortedByLabel,
    "eleventh_ok_round_robin_classes": RoundRobinClasses,
    "eleventh_h2_sign_flip_augment": SignFlipAugment,
    "eleventh_ok_jitter_augment": JitterAugment,
    "eleventh_h1_reinit_each_epoch": ReinitEachEpoch,
    "eleventh_ok_zero_init_head_once": ZeroInitHeadOnce,
    "eleventh_h1_grad_over_dataset_size": GradOverDatasetSize,
    "eleventh_ok_grad_over_micro_batches": GradOverMicroBatches,
    "eleventh_h1_adam_eps_one": AdamEpsOne,
    "eleventh_ok_adam_eps_small": AdamEpsSmall,
    "eleventh_h1_clip_value_tiny": ClipValueTiny,
    "eleventh_ok_clip_value_one": ClipValueOne,
    "eleventh_h1_plateau_mode_max": PlateauModeMax,
    "eleventh_ok_plateau_mode_min": PlateauModeMin,
    "eleventh_h1_update_adds_gradient": UpdateAddsGradient,
    "eleventh_ok_update_by_hand": UpdateByHand,
    # second shapes, written after the rules
    "eleventh_h1_lm_reload_each_epoch": LmReloadEachEpoch,
    "eleventh_ok_lm_reload_once": LmReloadOnce,
    "eleventh_h1_lm_grad_clamped_by_hand": LmGradClampedByHand,
    "eleventh_ok_adam_clip_norm_small": AdamClipNormSmall,
    "eleventh_h1_regression_negated_backward": RegressionNegatedBackward,
    "eleventh_h2_regression_sorted_by_target": RegressionSortedByTarget,
    "eleventh_ok_regression_sorted_by_noise": RegressionSortedByNoise,
    # third shapes, written after the negation and order rules
    "eleventh_h1_classifier_negated_backward": ClassifierNegatedBackward,
    "eleventh_h2_cnn_sorted_by_label": CnnSortedByLabel,
    "eleventh_ok_cnn_table_order": CnnTableOrder,
    "eleventh_ok_lookahead_by_hand": LookaheadByHand,
    "eleventh_ok_adam_grad_times_thousand": AdamGradTimesThousand,
}

_SMALL = [("step", "update", "lr", "learning rate"), ("small", "tiny", "negligible", "never")]
ELEVENTH_EXPECTED = {
    **{name: ("NONE", []) for name in ELEVENTH if name.startswith("eleventh_ok_")},
    "eleventh_h2_sorted_by_label": ("H2", [("sorted", "order", "one class", "single class")]),
    "eleventh_h2_sign_flip_augment": (
        "H2",
        [("label", "augment"), ("flip", "sign", "decorrelated", "conflict", "ambiguous")],
    ),
    "eleventh_h1_reinit_each_epoch": ("H1", [("init", "reset")]),
    "eleventh_h1_grad_over_dataset_size": ("H1", [*_SMALL, ("grad",)]),
    "eleventh_h1_adam_eps_one": ("H1", [("eps",)]),
    "eleventh_h1_clip_value_tiny": ("H1", [("clip",)]),
    "eleventh_h1_plateau_mode_max": ("H1", [("lr", "learning rate"), ("plateau", "mode")]),
    "eleventh_h1_update_adds_gradient": ("H1", [("ascent", "adds the gradient", "sign", "climb")]),
    "eleventh_h1_lm_reload_each_epoch": ("H1", [("init", "reset", "load_state_dict")]),
    "eleventh_h1_lm_grad_clamped_by_hand": ("H1", [*_SMALL, ("grad",)]),
    "eleventh_h1_regression_negated_backward": (
        "H1",
        [("ascent", "sign", "climb", "negat", "maximi")],
    ),
    "eleventh_h2_regression_sorted_by_target": ("H2", [("sorted", "order")]),
    "eleventh_h1_classifier_negated_backward": (
        "H1",
        [("ascent", "sign", "climb", "negat", "maximi")],
    ),
    "eleventh_h2_cnn_sorted_by_label": ("H2", [("sorted", "order", "one class")]),
}
assert set(ELEVENTH) == set(ELEVENTH_EXPECTED)

# twin of each bug, for `verify`
TWINS = {
    "eleventh_h2_sorted_by_label": "eleventh_ok_round_robin_classes",
    "eleventh_h2_sign_flip_augment": "eleventh_ok_jitter_augment",
    "eleventh_h1_reinit_each_epoch": "eleventh_ok_zero_init_head_once",
    "eleventh_h1_grad_over_dataset_size": "eleventh_ok_grad_over_micro_batches",
    "eleventh_h1_adam_eps_one": "eleventh_ok_adam_eps_small",
    "eleventh_h1_clip_value_tiny": "eleventh_ok_clip_value_one",
    "eleventh_h1_plateau_mode_max": "eleventh_ok_plateau_mode_min",
    "eleventh_h1_update_adds_gradient": "eleventh_ok_update_by_hand",
    "eleventh_h1_lm_reload_each_epoch": "eleventh_ok_lm_reload_once",
    "eleventh_h1_lm_grad_clamped_by_hand": "eleventh_ok_lm_reload_once",
    "eleventh_h1_regression_negated_backward": "eleventh_ok_update_by_hand",
    "eleventh_h2_regression_sorted_by_target": "eleventh_ok_regression_sorted_by_noise",
    "eleventh_h1_classifier_negated_backward": "eleventh_ok_round_robin_classes",
    "eleventh_h2_cnn_sorted_by_label": "eleventh_ok_cnn_table_order",
}


def full_data_loss(setup) -> float:
    """The trained model's loss on all of its (unaugmented) data, with the twin's loss."""
    model = setup.model
    with torch.no_grad():
        if hasattr(setup, "ids"):
            ids = setup.ids
            return F.cross_entropy(model(ids[:, :-1]).flatten(0, 1), ids[:, 1:].flatten()).item()
        out = model(setup.x)
        if out.shape[-1] == 1:
            return F.mse_loss(out.squeeze(-1), setup.y).item()
        return F.cross_entropy(out, setup.y).item()


def verify() -> None:
    """Train every bug and its twin in plain PyTorch (seeds 0 and 1), for the epochs a triage
    asks (about 150 steps), and print the loss of each trained model on all of its data: the
    bug must clearly hurt, the twin must learn."""
    for bug, twin in TWINS.items():
        cells = []
        for name in (bug, twin):
            losses = []
            for seed in (0, 1):
                s = ELEVENTH[name]()
                s.train(seed, max(3, min(50, math.ceil(150 / len(s.batches(seed))))))
                losses.append(full_data_loss(s))
            cells.append(" ".join(f"{v:.3f}" if math.isfinite(v) else "nan" for v in losses))
        print(f"{bug:40s} {cells[0]:>16s} | twin {cells[1]}", flush=True)


if __name__ == "__main__":
    verify()
