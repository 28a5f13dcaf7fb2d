"""The seventeenth batch: a fresh batch of kinds no earlier batch holds, each beside a healthy
twin that differs by the bug's one change, written in plain PyTorch without reading any rule of
the triage (nor the tests that reveal them, nor the triage's docs), and scored at first sight.

The optimizer, the loop, the model (H1):
- gradient accumulation over 8 micro-batches whose loss is never divided by 8, under an SGD LR
  tuned on single micro-batches: each step moves 8 times as far as tuned (twin: `loss / 8`);
- weights drawn with `nn.init.normal_(m.weight)`, std 1 whatever the fan-in ("N(0, 1) init"),
  in a 4-layer MLP of width 128 under SGD: activations grow about 8-fold a layer, the logits
  are in the thousands and so are the gradients (twin: `std=math.sqrt(2 / m.in_features)`, He's normal init).
The data (H2), in `seventeenth_b.py`:
- a vocabulary built with `enumerate(words)`, so the first word ("a") gets id 0, the id the
  padding also has (`nn.Embedding(..., padding_idx=0)`): the task is to count the "a"s in a
  ragged sentence, and the "a"s read as padding (twin: `enumerate(words, start=1)`);
- labels joined to the training rows by their position in the training split while the label
  table is keyed by the row's position in the whole file (validation rows first): every label
  belongs to the row 256 further on (twin: the key offset by the validation split's size).
The report (H3), in `seventeenth_b.py`:
- the progress bar's "loss" is `scheduler.get_last_lr()[0]`, the learning rate (a cosine
  schedule, stepped per batch, so it falls smoothly like a loss) (twin: the running mean loss);
- the loss shown in percent, `100 * running / (i + 1)`, the accuracy's format applied to every
  metric (twin: the running mean as it is).

Each was checked in plain PyTorch against its twin before the score (`python -m
own_setups.seventeenth` from tests/, seeds 0 and 1, about 150 steps): the trained model's loss
on all of its data with the true labels (the sentences as served), and for the H3 pairs the
last value shown over the last epoch's mean raw loss:

    seventeenth_h1_accumulated_loss_undivided       1.826 2.554 | twin 0.014 0.011
    seventeenth_h1_init_normal_std_one                  nan nan | twin 0.001 0.001
    seventeenth_h2_vocab_from_zero_meets_padding    1.263 1.282 | twin 0.213 0.226
    seventeenth_h2_labels_joined_by_train_position  1.720 1.752 | twin 0.006 0.007
    seventeenth_h3_learning_rate_shown_as_loss      0.021 0.018 shown/raw 0 0
                                                    | twin 0.021 0.018 shown/raw 1 1
    seventeenth_h3_loss_shown_in_percent            0.006 0.006 shown/raw 100 100
                                                    | twin 0.006 0.006 shown/raw 1 1

(The LR's last value is the cosine's end, 0. The N(0, 1) init's logits start at a mean |logit|
of 3650, against 2.9 under He's init; under Adam at 3e-3 it reached a loss of 0.000 like its
twin, so the pair uses SGD with momentum, where it diverges. The accumulation's SGD LR was
lowered from 0.4, at which the twin did not learn either, to 0.1.)

First score (`python -m own_setups.score_seventeenth`, labkit/ as at 711e851, the setups
committed at 555bb65 before it, scored once, 22 s): 6 of 6 bugs right system, 3 of 6 right
mechanism as the scorer counted (2 of 6 on a strict reading, below), 0 of 6 healthy convicted
(6 acquitted, each NONE), 0 UNKNOWN; 6 of 6 right convictions granted.
- accumulation undivided: H1 right, "the LR is too high for this model: at LR 0.1 the loss
  never settles ... at LR/10 the same loop reaches 0.0205; the LR sits at the edge of
  stability": the effect (a step too large), not the accumulation nor the missing `/ 8`. The
  scorer counted it right through the loose words "too high" and "lr"; those words were
  tightened after the score (the first group now asks for the accumulation), under which this
  row is a mechanism miss (not rerun: the count above is the scorer's, at first sight);
- N(0, 1) init: H1 right, mechanism MISS: "the loss diverged: it rose x1.11e+14 (gradient norm
  x1.68e+13) at LR 0.01; the LR is too high": blames the LR, the init's scale not named;
- vocabulary from 0: H2 right, mechanism MISS: "the labels are decorrelated from the inputs
  ... (no signal)": the labels are blamed; the ids colliding with the padding not named;
- labels joined by train position: H2 right, "the labels are decorrelated from the inputs":
  right (each row's label belongs to another row), though the join is not named;
- LR shown as the loss: H3 right, mechanism MISS: "matches no honest summary ... computed from
  another tensor: another forward pass, the model in eval mode, or another batch": the
  learning rate not named;
- loss in percent: H3 right, "the honest mean of the epoch so far times one constant scale,
  x100 at every one of the 160 reports ... in other units": right.
No setup broke the setup protocol; no setup was changed after the score.

Nothing here uses labkit but `Run.from_log` (through `eleventh._log`).
"""

from __future__ import annotations

import math
import time

import torch
import torch.nn as nn

from .eleventh import _log, full_data_loss
from .fourth import shuffled
from .seventeenth_b import (
    LabelsJoinedByFilePosition,
    LabelsJoinedByTrainPosition,
    LearningRateShownAsLoss,
    LossShownAsIs,
    LossShownInPercent,
    RunningLossShown,
    VocabFromOne,
    VocabFromZeroMeetsPadding,
    _Blobs,
    _CountWords,
)


# ------------------------------------------------------------------ accumulation, undivided
class _Accumulated(_Blobs):
    """Micro-batches of 16, 8 accumulated per step (an effective batch of 128); the SGD LR was
    tuned earlier on single micro-batches of 16, before accumulation was added."""

    SEED = 5901
    ACCUM = 8
    DIVIDE = True

    def make_optimizer(self, model):
        return torch.optim.SGD(model.parameters(), lr=0.1, momentum=0.9)

    def batches(self, seed):
        return [(self.x[i], self.y[i]) for i in shuffled(len(self.x), 16, seed)]

    def train(self, seed, epochs):
        """The learner's loop."""
        started = time.time()
        model = self.make_model(seed)
        opt = self.make_optimizer(model)
        raw, shown = [], []
        for epoch in range(epochs):
            running = 0.0
            opt.zero_grad()
            for i, batch in enumerate(self.batches(seed * 10 + epoch)):
                loss = self.loss_fn(model, batch)
                (loss / self.ACCUM if self.DIVIDE else loss).backward()
                if (i + 1) % self.ACCUM == 0:
                    opt.step()
                    opt.zero_grad()
                running += loss.item()
                raw.append(loss.item())
                shown.append(running / (i + 1))
        self.model = model
        return _log(raw, shown, seed, started)


class AccumulatedLossUndivided(_Accumulated):
    """Bug (H1): `loss.backward()` on each of the 8 micro-batches, never `loss / 8`: the step
    is the sum of 8 gradients, 8 times the one the LR was tuned for."""

    DIVIDE = False


class AccumulatedLossDivided(_Accumulated):
    """Healthy: `(loss / 8).backward()`, the mean gradient of the 8 micro-batches."""


# ------------------------------------------------------------------ N(0, 1) weights
class _NormalInit(_Blobs):
    """A 4-layer MLP of width 128 whose Linear weights the learner draws from a normal
    distribution by hand (`model.apply(init)`), biases at 0; SGD with momentum."""

    SEED = 5902

    def make_optimizer(self, model):
        return torch.optim.SGD(model.parameters(), lr=0.01, momentum=0.9)

    def std(self, m):
        return math.sqrt(2 / m.in_features)

    def make_model(self, seed):
        torch.manual_seed(seed)
        model = nn.Sequential(
            nn.Linear(12, 128), nn.ReLU(), nn.Linear(128, 128), nn.ReLU(),
            nn.Linear(128, 128), nn.ReLU(), nn.Linear(128, 6),
        )  # fmt: skip

        def init(m):
            if isinstance(m, nn.Linear):
                nn.init.normal_(m.weight, std=self.std(m))
                nn.init.zeros_(m.bias)

        model.apply(init)
        return model


class InitNormalStdOne(_NormalInit):
    """Bug (H1): `nn.init.normal_(m.weight)`: std 1 whatever the fan-in, so each layer scales
    its input up about sqrt(128 / 2) = 8-fold and the logits start in the thousands."""

    def std(self, m):
        return 1.0


class InitNormalHe(_NormalInit):
    """Healthy: `nn.init.normal_(m.weight, std=math.sqrt(2 / m.in_features))` (He's init)."""


SEVENTEENTH = {
    "seventeenth_h1_accumulated_loss_undivided": AccumulatedLossUndivided,
    "seventeenth_ok_accumulated_loss_divided": AccumulatedLossDivided,
    "seventeenth_h1_init_normal_std_one": InitNormalStdOne,
    "seventeenth_ok_init_normal_he": InitNormalHe,
    "seventeenth_h2_vocab_from_zero_meets_padding": VocabFromZeroMeetsPadding,
    "seventeenth_ok_vocab_from_one": VocabFromOne,
    "seventeenth_h2_labels_joined_by_train_position": LabelsJoinedByTrainPosition,
    "seventeenth_ok_labels_joined_by_file_position": LabelsJoinedByFilePosition,
    "seventeenth_h3_learning_rate_shown_as_loss": LearningRateShownAsLoss,
    "seventeenth_ok_running_loss_shown": RunningLossShown,
    "seventeenth_h3_loss_shown_in_percent": LossShownInPercent,
    "seventeenth_ok_loss_shown_as_is": LossShownAsIs,
}

SEVENTEENTH_EXPECTED = {
    **{name: ("NONE", []) for name in SEVENTEENTH if name.startswith("seventeenth_ok_")},
    "seventeenth_h1_accumulated_loss_undivided": (
        "H1",
        [
            ("accumulat", "micro-batch", "undivided", "not divided"),
            ("accumulat", "not divided", "undivided", "8 times", "8x", "lr", "learning rate"),
        ],
    ),
    "seventeenth_h1_init_normal_std_one": (
        "H1",
        [
            ("init", "weight scale", "std", "fan-in", "fan_in"),
            ("too large", "std 1", "scale", "explod", "saturat", "huge", "fan-in", "fan_in"),
        ],
    ),
    "seventeenth_h2_vocab_from_zero_meets_padding": (
        "H2",
        [
            ("token", "vocab", "id", "padding", "input"),
            ("padding", "collid", "pad id", "offset", "off by one", "indistinguishable"),
        ],
    ),
    "seventeenth_h2_labels_joined_by_train_position": (
        "H2",
        [
            ("label", "target"),
            (
                "misalign",
                "mismatch",
                "shift",
                "offset",
                "join",
                "decorrelat",
                "wrong row",
                "no signal",
                "unrelated",
            ),
        ],
    ),
    "seventeenth_h3_learning_rate_shown_as_loss": (
        "H3",
        [("learning rate", "lr", "schedule"), ("not the loss", "learning rate", "lr", "instead")],
    ),
    "seventeenth_h3_loss_shown_in_percent": (
        "H3",
        [("100", "percent", "%"), ("scale", "factor", "times", "100", "percent")],
    ),
}
assert set(SEVENTEENTH) == set(SEVENTEENTH_EXPECTED)

TWINS = dict(zip(list(SEVENTEENTH)[::2], list(SEVENTEENTH)[1::2]))


def clean_loss(setup) -> float:
    """The trained model's loss on all of its data, true labels, without the setup's defect:
    the sentences as served (their ids are the defect's only trace); else
    `eleventh.full_data_loss` on the true (x, y) pairs. For the H3 bugs the defect is in the
    report: this is the trained model's loss, and `shown/raw` tells the report's harm."""
    setup.model.eval()
    if isinstance(setup, _CountWords):
        return setup.clean_loss()
    return full_data_loss(setup)


def verify(names=()) -> None:
    """Train every bug and its twin in plain PyTorch (seeds 0 and 1), about 150 steps, and print
    each trained model's clean loss: the bug must clearly hurt, the twin must learn. For the H3
    setups each cell also gives the last value shown over the last epoch's mean raw loss."""
    for bug, twin in TWINS.items():
        if names and not any(n in bug for n in names):
            continue
        cells = []
        for name in (bug, twin):
            losses, ratios = [], []
            for seed in (0, 1):
                s = SEVENTEENTH[name]()
                n = len(s.batches(seed))
                run = s.train(seed, max(3, min(50, math.ceil(150 / n))))
                losses.append(clean_loss(s))
                raw, shown = run.table["loss_raw"], run.table["loss_reported"]
                ratios.append(shown[-1] / (sum(raw[-n:]) / n))
            cell = " ".join(f"{v:.3f}" if math.isfinite(v) else "nan" for v in losses)
            if bug.startswith("seventeenth_h3_"):
                cell += " shown/raw " + " ".join(f"{r:.3g}" for r in ratios)
            cells.append(cell)
        print(f"{bug:48s} {cells[0]:>28s} | twin {cells[1]}", flush=True)


if __name__ == "__main__":
    import sys

    verify(sys.argv[1:])
