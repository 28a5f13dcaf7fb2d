"""The tenth batch (issue 46, item 0): an acquittal earns its words.

- the whole graph: a tensor the loss depends on that is made outside the model, so
  ``model.parameters()`` leaves it out of the optimizer (a learned logit scale on a cosine
  classifier under Adam, as CLIP's, an embedding table kept beside a GRU LM under SGD, a learned output offset on a
  regression under SGD); twins: the same tensors passed to the optimizer, or moved by the
  learner's own update; and a healthy loop that calls ``torch.autograd.backward(loss)``, whose
  loss labkit cannot trace (the acquittal must say so, not claim the check);
- the whole input: a regression whose feature matrix still holds its target, a classifier
  whose features hold the class id; twins: a regression with a constant bias column, a
  classifier with a strong but imperfect categorical feature.

- an LR raised 100-fold (the word-language-model LSTM at SGD LR 200 under clipping at 0.25, a
  clipped SGD classifier at LR 10): H1, an LR too high, not the data; twins at the usual LR;
- a tensor made outside the model that the optimizer holds at LR 0 (`leaves.still_rule`): an
  embedding table beside a GRU LM under SGD, a zero-initialised input gate on a regression under
  Adam and on a classifier under SGD; twins: the gate fixed at 1 on purpose, a cosine
  classifier's temperature fixed by LR 0 (both learn), and the table under SGD's LR;
- more of the short kinds: a double shift on sequence-first batches and under SGD (twin: one
  shift under SGD); a regression's epoch total in an integer array, and its worst batch so far
  shown as progress (twin: a float array).

Nothing here uses labkit but `Run.from_log`.
"""

from __future__ import annotations

import time

import numpy as np
import torch
import torch.nn as nn
import torch.nn.functional as F

from labkit import Run

from .common import MLP, N_FEATURES, VOCAB, batches_of, blob_mixture, markov_tokens, split
from .eighth import _LstmLM
from .fourth import mlp, plain_train, shuffled, tabular_regression
from .ninth import LmDoubleShift, LmShiftedOnce, _SeqFirstLm


class _Blobs:
    LR = 3e-3

    def __init__(self):
        (self.x, self.y), _ = split(*blob_mixture(n=1280, seed=4610))

    def make_model(self, seed):
        torch.manual_seed(seed)
        return MLP()

    def make_optimizer(self, model):
        return torch.optim.Adam(model.parameters(), lr=self.LR)

    def batches(self, seed):
        return batches_of(self.x, self.y, 32, seed)

    def loss_fn(self, model, batch):
        x, y = batch
        return F.cross_entropy(model(x), y)

    def train(self, seed, epochs):
        return plain_train(self, seed, epochs)


class _Regression(_Blobs):
    LR = 0.05

    def __init__(self):
        self.x, self.y = tabular_regression(n=1024, seed=4620)

    def make_model(self, seed):
        torch.manual_seed(seed)
        return mlp(self.x.shape[1], 1)

    def make_optimizer(self, model):
        return torch.optim.SGD(model.parameters(), lr=self.LR)

    def batches(self, seed):
        return [(self.x[i], self.y[i]) for i in shuffled(len(self.x), 32, seed)]

    def loss_fn(self, model, batch):
        x, y = batch
        return F.mse_loss(model(x).squeeze(-1), y)


# ------------------------------------------------------------------------------ the whole graph
class CosineClassifier(nn.Module):
    """An MLP body whose logits are cosine similarities with learned class vectors, in [-1, 1]."""

    def __init__(self):
        super().__init__()
        self.body = MLP(n_out=32)
        self.classes = nn.Parameter(torch.randn(6, 32))

    def forward(self, x):
        return F.normalize(self.body(x), dim=-1) @ F.normalize(self.classes, dim=-1).T


class LogitScaleNotInOptimizer(_Blobs):
    """Bug (H1): a cosine classifier with a learned logit scale (as CLIP's), kept beside the model
    as a log-scale with requires_grad=True; the optimizer gets model.parameters() only, so the
    logits stay within [-1, 1] and the loss cannot fall far."""

    LR = 0.01

    def make_model(self, seed):
        torch.manual_seed(seed)
        self.logit_scale = torch.zeros((), requires_grad=True)
        return CosineClassifier()

    def loss_fn(self, model, batch):
        x, y = batch
        return F.cross_entropy(model(x) * self.logit_scale.exp(), y)


class LogitScaleInOptimizer(LogitScaleNotInOptimizer):
    """Healthy: the same, with the logit scale passed to Adam beside the model's parameters."""

    def make_optimizer(self, model):
        return torch.optim.Adam([*model.parameters(), self.logit_scale], lr=self.LR)


class GruOverVectors(nn.Module):
    """A GRU LM body and head that take embedded tokens: (B, T, 32) -> (B, T, V)."""

    def __init__(self, dim=32):
        super().__init__()
        self.rnn = nn.GRU(dim, dim, batch_first=True)
        self.out = nn.Linear(dim, VOCAB)

    def forward(self, vectors):
        h, _ = self.rnn(vectors)
        return self.out(h)


class _LmTable:
    """A GRU LM over an embedding table kept beside the model (an nn.Parameter of the setup)."""

    LR = 0.5

    def __init__(self):
        self.ids = markov_tokens(n=256, seed=4630, follow=0.85)[:, :12]

    def make_model(self, seed):
        torch.manual_seed(seed)
        self.table = nn.Parameter(0.02 * torch.randn(VOCAB, 32))  # a small init, as GPT-2's
        return GruOverVectors()

    def make_optimizer(self, model):
        return torch.optim.SGD(model.parameters(), lr=self.LR)

    def batches(self, seed):
        return [(self.ids[i, :-1], self.ids[i, 1:]) for i in shuffled(256, 16, seed)]

    def loss_fn(self, model, batch):
        x, y = batch
        return F.cross_entropy(model(F.embedding(x, self.table)).flatten(0, 1), y.flatten())

    def train(self, seed, epochs):
        return plain_train(self, seed, epochs)


class LmTableNotInOptimizer(_LmTable):
    """Bug (H1): the embedding table is left out of SGD: it keeps its random init."""


class LmTableInOptimizer(_LmTable):
    """Healthy: the table is passed to SGD with the model's parameters."""

    def make_optimizer(self, model):
        return torch.optim.SGD([*model.parameters(), self.table], lr=self.LR)


class OffsetNotInOptimizer(_Regression):
    """Bug (H1): the targets sit around 5; a learned offset is added to the prediction, made
    outside the model and never given to SGD."""

    def __init__(self):
        super().__init__()
        self.y = self.y + 5.0

    def make_model(self, seed):
        self.offset = torch.zeros(1, requires_grad=True)
        return super().make_model(seed)

    def loss_fn(self, model, batch):
        x, y = batch
        return F.mse_loss(model(x).squeeze(-1) + self.offset, y)


class OffsetByHand(OffsetNotInOptimizer):
    """Healthy: the offset is moved by the learner's own update after each step."""

    def train(self, seed, epochs):
        started = time.time()
        model = self.make_model(seed)
        opt = self.make_optimizer(model)
        raw, shown = [], []
        for epoch in range(epochs):
            running = 0.0
            for i, batch in enumerate(self.batches(seed * 10 + epoch)):
                opt.zero_grad()
                self.offset.grad = None
                loss = self.loss_fn(model, batch)
                loss.backward()
                opt.step()
                with torch.no_grad():
                    self.offset -= self.LR * self.offset.grad
                running += loss.item()
                raw.append(loss.item())
                shown.append(running / (i + 1))
        return Run.from_log(
            {"step": list(range(len(raw))), "loss_raw": raw, "loss_reported": shown},
            seed=seed,
            started_at=started,
        )


class HeadGroupLrZero(_Blobs):
    """Healthy (a choice): the head sits in a parameter group at LR 0, a body trained under a fixed
    random head; the run learns, so labkit acquits it and says the head never moves, as advice."""

    def make_optimizer(self, model):
        groups = [
            {"params": model.body.parameters()},
            {"params": model.head.parameters(), "lr": 0.0},
        ]
        return torch.optim.Adam(groups, lr=self.LR)


class AutogradBackward(_Blobs):
    """Healthy: the loop calls torch.autograd.backward(loss) instead of loss.backward()."""

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
                torch.autograd.backward(loss)
                opt.step()
                running += loss.item()
                raw.append(loss.item())
                shown.append(running / (i + 1))
        return Run.from_log(
            {"step": list(range(len(raw))), "loss_raw": raw, "loss_reported": shown},
            seed=seed,
            started_at=started,
        )


# ------------------------------------------------------------------------------ the whole input
class RegressionTargetInInputs(_Regression):
    """Bug (H2): the feature matrix was built from the whole table, target column included."""

    def __init__(self):
        super().__init__()
        self.x = torch.cat([self.x, self.y[:, None]], 1)  # (1024, 9): column 8 is y


class RegressionBiasColumn(_Regression):
    """Healthy: a constant column of ones (a bias feature) beside the 8 real ones."""

    def __init__(self):
        super().__init__()
        self.x = torch.cat([self.x, torch.ones(len(self.x), 1)], 1)


class ClassifierLabelInInputs(_Blobs):
    """Bug (H2): the class id was left in the features, as a float column."""

    LR = 0.01

    def __init__(self):
        super().__init__()
        self.x = torch.cat([self.x, self.y[:, None].float()], 1)

    def make_model(self, seed):
        torch.manual_seed(seed)
        return MLP(n_in=N_FEATURES + 1)

    def make_optimizer(self, model):
        return torch.optim.SGD(model.parameters(), lr=self.LR, momentum=0.9)


class ClassifierStrongFeature(ClassifierLabelInInputs):
    """Healthy: a categorical feature that agrees with the class on 60% of the rows."""

    def __init__(self):
        _Blobs.__init__(self)
        gen = torch.Generator().manual_seed(4640)
        noisy = torch.where(
            torch.rand(len(self.y), generator=gen) < 0.6,
            self.y,
            torch.randint(0, 6, (len(self.y),), generator=gen),
        )
        self.x = torch.cat([self.x, noisy[:, None].float()], 1)


# ------------------------------------------------------------------------ an LR raised 100-fold
class LstmLr100(_LstmLM):
    """Bug (H1): the word-language-model's LSTM with its SGD LR raised 100-fold (2.0 -> 200);
    clipping at 0.25 keeps it from blowing up, and it learns far less than at 2.0."""

    def make_optimizer(self, model):
        return torch.optim.SGD(model.parameters(), lr=200.0)


class LstmLr2(_LstmLM):
    """Healthy: the same LSTM at its own LR, 2.0, with clipping at 0.25."""


class _ClippedSgd(_Blobs):
    LR = 0.1

    def make_optimizer(self, model):
        return torch.optim.SGD(model.parameters(), lr=self.LR, momentum=0.9)

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
                loss.backward()
                torch.nn.utils.clip_grad_norm_(model.parameters(), 1.0)
                opt.step()
                running += loss.item()
                raw.append(loss.item())
                shown.append(running / (i + 1))
        return Run.from_log(
            {"step": list(range(len(raw))), "loss_raw": raw, "loss_reported": shown},
            seed=seed,
            started_at=started,
        )


class ClassifierLr100(_ClippedSgd):
    """Bug (H1): SGD with momentum at LR 10, 100 times its usual 0.1, clipped at norm 1.0."""

    LR = 10.0


class ClassifierLrUsual(_ClippedSgd):
    """Healthy: the same loop at LR 0.1."""


# ---------------------------------------------------- which target each output is scored against
class SeqFirstDoubleShift(_SeqFirstLm):
    """Bug (H2): sequence-first batches whose targets are two steps ahead (shifted twice)."""

    def batches(self, seed):
        t = self.ids.T  # (12, 256)
        return [(t[:-2, i], t[2:, i]) for i in shuffled(256, 16, seed)]


class LmDoubleShiftSgd(LmDoubleShift):
    """Bug (H2): batches already shifted, shifted again in the loss, under SGD."""

    def make_optimizer(self, model):
        return torch.optim.SGD(model.parameters(), lr=0.5)


class LmShiftedOnceSgd(LmShiftedOnce):
    """Healthy: whole rows as inputs and labels, one shift in the loss, under SGD."""

    def make_optimizer(self, model):
        return torch.optim.SGD(model.parameters(), lr=0.5)


# ------------------------------------------------------------------------ the logger's hypothesis
class _RegressionTotals(_Regression):
    """The epoch's total kept in a NumPy array, one slot per epoch, divided by the count."""

    DTYPE = float

    def train(self, seed, epochs):
        started = time.time()
        model, raw, shown = self.make_model(seed), [], []
        opt = self.make_optimizer(model)
        totals = np.zeros(epochs, dtype=self.DTYPE)
        for epoch in range(epochs):
            for i, batch in enumerate(self.batches(seed * 10 + epoch)):
                opt.zero_grad()
                loss = self.loss_fn(model, batch)
                loss.backward()
                opt.step()
                totals[epoch] += loss.item()
                raw.append(loss.item())
                shown.append(float(totals[epoch]) / (i + 1))
        return Run.from_log(
            {"step": list(range(len(raw))), "loss_raw": raw, "loss_reported": shown},
            seed=seed,
            started_at=started,
        )


class RegressionIntTotals(_RegressionTotals):
    """Bug (H3): np.zeros(epochs, dtype=int) on a regression under SGD: each add truncates."""

    DTYPE = int


class RegressionFloatTotals(_RegressionTotals):
    """Healthy: the same with a float array."""


class RegressionWorstSoFar(_Regression):
    """Bug (H3): the progress value is max(value, loss) within each epoch (meant min, or meant
    the mean): it shows the epoch's worst batch so far."""

    def train(self, seed, epochs):
        started = time.time()
        model, raw, shown = self.make_model(seed), [], []
        opt = self.make_optimizer(model)
        for epoch in range(epochs):
            value = 0.0
            for batch in self.batches(seed * 10 + epoch):
                opt.zero_grad()
                loss = self.loss_fn(model, batch)
                loss.backward()
                opt.step()
                value = max(value, loss.item())
                raw.append(loss.item())
                shown.append(value)
        return Run.from_log(
            {"step": list(range(len(raw))), "loss_raw": raw, "loss_reported": shown},
            seed=seed,
            started_at=started,
        )


# ------------------------------------------- a tensor the optimizer holds at LR 0 (`still_rule`)
class LmTableGroupLrZero(_LmTable):
    """Bug (H1): the embedding table beside the model is passed to SGD in its own group, whose
    LR is 0 (an `embed_lr` left at 0): it keeps its small random init and the LM cannot learn."""

    def make_optimizer(self, model):
        groups = [{"params": model.parameters()}, {"params": [self.table], "lr": 0.0}]
        return torch.optim.SGD(groups, lr=self.LR)


class _Gated:
    """A learned per-feature input gate kept beside the model, in its own parameter group."""

    GATE_INIT, GATE_LR = 0.0, 0.0

    def make_model(self, seed):
        self.gate = torch.full((self.x.shape[1],), self.GATE_INIT, requires_grad=True)
        return super().make_model(seed)

    def groups(self, model):
        return [{"params": model.parameters()}, {"params": [self.gate], "lr": self.GATE_LR}]


class RegressionGateLrZero(_Gated, _Regression):
    """Bug (H1): a regression under Adam whose input gate starts at 0 and sits in a group at LR
    0: every input stays multiplied by 0, and only the mean of the target is learned."""

    LR = 0.01

    def make_optimizer(self, model):
        return torch.optim.Adam(self.groups(model), lr=self.LR)

    def loss_fn(self, model, batch):
        x, y = batch
        return F.mse_loss(model(x * self.gate).squeeze(-1), y)


class RegressionGateFixed(RegressionGateLrZero):
    """Healthy: the same gate held at LR 0 on purpose, at 1 (a fixed gate passes the inputs)."""

    GATE_INIT = 1.0


class RegressionGateTrained(RegressionGateLrZero):
    """Healthy: the gate starts at 0 and is trained at the group's LR (it opens within steps);
    at init the loss ignores the inputs, which must not read as a loss that ignores pairing."""

    GATE_LR = 0.01


class ClassifierGateLrZero(_Gated, _Blobs):
    """Bug (H1): the same zero gate at LR 0 on a classifier under SGD with momentum."""

    LR = 0.05

    def make_optimizer(self, model):
        return torch.optim.SGD(self.groups(model), lr=self.LR, momentum=0.9)

    def loss_fn(self, model, batch):
        x, y = batch
        return F.cross_entropy(model(x * self.gate), y)


class ClassifierGateFixed(ClassifierGateLrZero):
    """Healthy: the gate held at LR 0 on purpose, at 1."""

    GATE_INIT = 1.0


class RegressionAggregateLoss(_Regression):
    """Bug (H1): the squared error of the batch's means, not of each prediction: the model
    learns the mean of the target and nothing of which row it belongs to."""

    def loss_fn(self, model, batch):
        x, y = batch
        return (model(x).squeeze(-1).mean() - y.mean()) ** 2


class ClassifierGateTrained(ClassifierGateLrZero):
    """Healthy: the zero gate trained at the optimizer's LR."""

    GATE_LR = 0.05


class LogitScaleGroupLrZero(LogitScaleNotInOptimizer):
    """Healthy: the cosine classifier's logit scale held at LR 0 on purpose (a fixed
    temperature): the logits stay within [-1, 1], and the run still learns."""

    def make_optimizer(self, model):
        groups = [{"params": model.parameters()}, {"params": [self.logit_scale], "lr": 0.0}]
        return torch.optim.Adam(groups, lr=self.LR)


TENTH = {
    "tenth_h1_logit_scale_not_in_optimizer": LogitScaleNotInOptimizer,
    "tenth_ok_logit_scale_in_optimizer": LogitScaleInOptimizer,
    "tenth_h1_lm_table_not_in_optimizer": LmTableNotInOptimizer,
    "tenth_ok_lm_table_in_optimizer": LmTableInOptimizer,
    "tenth_h1_offset_not_in_optimizer": OffsetNotInOptimizer,
    "tenth_ok_offset_by_hand": OffsetByHand,
    "tenth_ok_autograd_backward": AutogradBackward,
    "tenth_ok_head_group_lr_zero": HeadGroupLrZero,
    "tenth_h2_regression_target_in_inputs": RegressionTargetInInputs,
    "tenth_ok_regression_bias_column": RegressionBiasColumn,
    "tenth_h2_classifier_label_in_inputs": ClassifierLabelInInputs,
    "tenth_ok_classifier_strong_feature": ClassifierStrongFeature,
    "tenth_h1_lstm_lr_x100": LstmLr100,
    "tenth_ok_lstm_lr_usual": LstmLr2,
    "tenth_h1_classifier_lr_x100": ClassifierLr100,
    "tenth_ok_classifier_lr_usual": ClassifierLrUsual,
    "tenth_h2_seq_first_double_shift": SeqFirstDoubleShift,
    "tenth_h2_lm_double_shift_sgd": LmDoubleShiftSgd,
    "tenth_ok_lm_shifted_once_sgd": LmShiftedOnceSgd,
    "tenth_h3_regression_int_totals": RegressionIntTotals,
    "tenth_ok_regression_float_totals": RegressionFloatTotals,
    "tenth_h3_regression_worst_so_far": RegressionWorstSoFar,
    "tenth_h1_lm_table_group_lr_zero": LmTableGroupLrZero,
    "tenth_h1_regression_gate_lr_zero": RegressionGateLrZero,
    "tenth_ok_regression_gate_fixed": RegressionGateFixed,
    "tenth_h1_classifier_gate_lr_zero": ClassifierGateLrZero,
    "tenth_ok_classifier_gate_fixed": ClassifierGateFixed,
    "tenth_ok_regression_gate_trained": RegressionGateTrained,
    "tenth_ok_classifier_gate_trained": ClassifierGateTrained,
    "tenth_h1_regression_aggregate_loss": RegressionAggregateLoss,
    "tenth_ok_logit_scale_group_lr_zero": LogitScaleGroupLrZero,
}

_UNSTEPPED = [("not in the optimizer",), ("outside the model", "model.parameters()")]
_LEAK = [("target", "label"), ("feature",)]
TENTH_EXPECTED = {
    **{name: ("NONE", []) for name in TENTH if name.startswith("tenth_ok_")},
    "tenth_h1_logit_scale_not_in_optimizer": ("H1", [*_UNSTEPPED, ("logit_scale",)]),
    "tenth_h1_lm_table_not_in_optimizer": ("H1", [*_UNSTEPPED, ("table",)]),
    "tenth_h1_offset_not_in_optimizer": ("H1", [*_UNSTEPPED, ("offset",)]),
    "tenth_h2_regression_target_in_inputs": ("H2", [*_LEAK, ("feature 8",)]),
    "tenth_h2_classifier_label_in_inputs": ("H2", [*_LEAK, ("feature 12",)]),
    "tenth_h1_lstm_lr_x100": (
        "H1",
        [("lr", "learning rate"), ("too high", "too large", "diverge")],
    ),
    "tenth_h1_classifier_lr_x100": (
        "H1",
        [("lr", "learning rate"), ("too high", "too large", "diverge")],
    ),
    "tenth_h2_seq_first_double_shift": ("H2", [("shift",), ("twice", "t+2", "two")]),
    "tenth_h2_lm_double_shift_sgd": ("H2", [("shift",), ("twice", "t+2", "two")]),
    "tenth_h3_regression_int_totals": ("H3", [("int", "integer", "truncat")]),
    "tenth_h1_regression_aggregate_loss": ("H1", [("does not pair",), ("permuted",)]),
    "tenth_h3_regression_worst_so_far": ("H3", [("max",)]),
    **{
        f"tenth_h1_{kind}_lr_zero": ("H1", [("never move",), ("lr is 0",), (what,)])
        for kind, what in (
            ("lm_table_group", "self.table"),
            ("regression_gate", "self.gate"),
            ("classifier_gate", "self.gate"),
        )
    },
}
assert set(TENTH) == set(TENTH_EXPECTED)
