"""A fifth held-out batch: twelve plain-PyTorch setups (nine buggy, three healthy controls)
written by a reviewer who did not read the rules, with bugs unlike the other batches:
gradient ascent through `maximize=True`, a mean-before-square MSE, label smoothing typed as
0.9, a feature in other units, a reused staging buffer that aliases every batch's inputs, a
validation split left unstandardised, a progress bar that divides a partial sum by the whole
epoch's batch count, a logged loss already divided for gradient accumulation, and an
accuracy logged under the name of the loss. Models: a GRU pulse-timing classifier, a 2-D
texture CNN, tabular MLPs for classification and (Huber / MSE) regression. Nothing here uses
labkit but `Run.from_log`.

Written while the fourth batch's rules were being built and scored once after them, unseen
(2026-12-03): right system on 7 of the 9 buggy setups, right mechanism on 3; no healthy
control convicted (the GRU with OneCycleLR came back UNKNOWN: its label signal was unclear).
Three general measurements came from its misses (a loss unchanged when the labels are
permuted within the batch, one feature's scale swamping the others, held-out inputs on
another scale than the training inputs, a [0, 1] metric that rises as the loss falls logged
as the loss), after which 8 of 9 have the right system and 7 the right mechanism. Still
missed: label smoothing 0.9 (read as labels without signal).
"""

from __future__ import annotations

import time

import torch
import torch.nn as nn
import torch.nn.functional as F

from labkit import Run


# --------------------------------------------------------------------------- data (fixed seeds)

def _gen(seed):
    return torch.Generator().manual_seed(seed)


def pulse_sequences(n=1280, steps=16, seed=101):
    """Noisy 2-channel sequences with one pulse on channel 0; the class is the quarter of the
    sequence the pulse falls in, so the model has to keep track of time. (n, 16, 2), (n,)."""
    g = _gen(seed)
    y = torch.randint(0, 4, (n,), generator=g)
    x = 0.5 * torch.randn(n, steps, 2, generator=g)
    when = y * (steps // 4) + torch.randint(0, steps // 4, (n,), generator=g)
    x[torch.arange(n), when, 0] += 3.0
    return x, y


def texture_images(n=1024, size=10, seed=103, noise=2.5):
    """Three textures at a random phase: horizontal stripes, vertical stripes, checkerboard.
    (n, 1, 10, 10), (n,)."""
    g = _gen(seed)
    y = torch.randint(0, 3, (n,), generator=g)
    r = torch.arange(size)
    rows, cols = r[:, None].expand(size, size), r[None, :].expand(size, size)
    patterns = torch.stack([rows % 2, cols % 2, (rows + cols) % 2]).float()  # (3, 10, 10)
    phase = torch.randint(0, 2, (n,), generator=g)
    x = (patterns[y] + phase[:, None, None]) % 2
    x = 2 * x - 1 + noise * torch.randn(n, size, size, generator=g)
    return x[:, None], y


def machine_states(n=1280, seed=107, n_states=4, modes=3):
    """Standard-normal-ish sensor features of 8 channels; each machine state is a mixture of
    3 operating modes. (n, 8), (n,)."""
    g = _gen(seed)
    centres = 1.6 * torch.randn(n_states * modes, 8, generator=g)
    k = torch.randint(0, len(centres), (n,), generator=g)
    return centres[k] + torch.randn(n, 8, generator=g), k % n_states


# Physical units of the 8 sensor channels: a mean and a spread per channel
# (temperature C, pressure hPa, rpm, load fraction, current A, vibration mm/s, humidity %, flow l/min).
SENSOR_MEAN = torch.tensor([60.0, 1013.0, 3000.0, 0.5, 12.0, 4.0, 45.0, 150.0])
SENSOR_STD = torch.tensor([8.0, 20.0, 400.0, 0.1, 3.0, 1.5, 10.0, 30.0])


def raw_sensor_readings(n=1280, seed=109):
    """The same kind of machine-state data as it comes off the sensors, in physical units."""
    z, y = machine_states(n=n, seed=seed)
    return SENSOR_MEAN + SENSOR_STD * z, y


def smooth_regression(n=1280, seed=113, outliers=0.05):
    """6 features, y = smooth function + small noise, 5% gross outliers (Huber territory).
    (n, 6), (n, 1)."""
    g = _gen(seed)
    x = torch.randn(n, 6, generator=g)
    y = 2 * torch.sin(1.5 * x[:, 0]) + x[:, 1] * x[:, 2] - 0.6 * x[:, 3] + 0.1 * torch.randn(n, generator=g)
    bad = torch.rand(n, generator=g) < outliers
    y = torch.where(bad, y + 6 * torch.randn(n, generator=g), y)
    return x, y[:, None]


def calibration_pairs(n=1280, seed=127):
    """Sensor calibration: 5 raw readings -> the reference value, a nonlinear map with small
    noise, centred per sample around different operating points. (n, 5), (n, 1)."""
    g = _gen(seed)
    x = torch.randn(n, 5, generator=g)
    w = torch.randn(5, generator=g)
    y = x @ w + 0.8 * torch.tanh(2 * x[:, 0]) * x[:, 1] + 0.05 * torch.randn(n, generator=g)
    return x, y[:, None]


def shuffled(n, batch_size, seed):
    return torch.randperm(n, generator=_gen(seed)).split(batch_size)


def holdout(x, y, n_val=256):
    return (x[n_val:], y[n_val:]), (x[:n_val], y[:n_val])


# --------------------------------------------------------------------------- models

class PulseGRU(nn.Module):
    def __init__(self, hidden=24, n_out=4):
        super().__init__()
        self.rnn = nn.GRU(2, hidden, batch_first=True)
        self.head = nn.Linear(hidden, n_out)

    def forward(self, x):  # (B, 16, 2) -> (B, 4)
        _, h = self.rnn(x)
        return self.head(h[-1])


class TextureCNN(nn.Module):
    def __init__(self, n_out=3):
        super().__init__()
        self.features = nn.Sequential(nn.Conv2d(1, 8, 3, padding=1), nn.ReLU(),
                                      nn.Conv2d(8, 12, 3, padding=1), nn.ReLU(), nn.MaxPool2d(2),
                                      nn.AdaptiveAvgPool2d(1))
        self.classifier = nn.Linear(12, n_out)

    def forward(self, x):  # (B, 1, 10, 10) -> (B, 3)
        return self.classifier(self.features(x).flatten(1))


def tabular_mlp(n_in, n_out, hidden=40):
    return nn.Sequential(nn.Linear(n_in, hidden), nn.ReLU(), nn.Linear(hidden, hidden), nn.ReLU(),
                         nn.Linear(hidden, n_out))


def epoch_mean_loop(setup, seed, epochs):
    """The textbook loop most setups below use: zero_grad, loss, backward, step; the
    progress bar shows the running mean of the epoch so far."""
    started = time.time()
    model = setup.make_model(seed)
    opt = setup.make_optimizer(model)
    raw, shown = [], []
    for epoch in range(epochs):
        running = 0.0
        for i, batch in enumerate(setup.batches(seed * 1000 + epoch)):
            opt.zero_grad()
            loss = setup.loss_fn(model, batch)
            loss.backward()
            opt.step()
            running += loss.item()
            raw.append(loss.item())
            shown.append(running / (i + 1))
    return Run.from_log({"step": list(range(len(raw))), "loss_raw": raw, "loss_reported": shown},
                        seed=seed, started_at=started)


# --------------------------------------------------------------------------- healthy controls

class GruOneCycle:
    """Healthy: GRU pulse-timing classifier, Adam under a OneCycleLR schedule (max_lr 1e-2)
    stepped every batch, the per-batch loss printed."""

    def __init__(self):
        (self.x, self.y), (self.val_x, self.val_y) = holdout(*pulse_sequences())

    def make_model(self, seed):
        torch.manual_seed(seed)
        return PulseGRU()

    def make_optimizer(self, model):
        return torch.optim.Adam(model.parameters(), lr=1e-3)

    def batches(self, seed):
        return [(self.x[i], self.y[i]) for i in shuffled(len(self.x), 32, seed)]

    def val_batches(self, seed):
        return [(self.val_x[i], self.val_y[i]) for i in shuffled(len(self.val_x), 64, seed)]

    def loss_fn(self, model, batch):
        seqs, labels = batch
        return F.cross_entropy(model(seqs), labels)

    def train(self, seed, epochs):
        started = time.time()
        model = self.make_model(seed)
        opt = self.make_optimizer(model)
        per_epoch = len(self.batches(seed))
        sched = torch.optim.lr_scheduler.OneCycleLR(opt, max_lr=1e-2, total_steps=epochs * per_epoch)
        raw = []
        for epoch in range(epochs):
            for batch in self.batches(seed * 1000 + epoch):
                opt.zero_grad()
                loss = self.loss_fn(model, batch)
                loss.backward()
                opt.step()
                sched.step()
                raw.append(loss.item())
        return Run.from_log({"step": list(range(len(raw))), "loss_raw": raw, "loss_reported": list(raw)},
                            seed=seed, started_at=started)


class CnnAdamWAccumTwo:
    """Healthy: texture CNN, AdamW (weight decay 0.05), gradient accumulation over two
    micro-batches of 16 (each loss divided by 2 before backward); one value printed per
    optimizer step, the mean of its two micro-batch losses."""

    accum = 2

    def __init__(self):
        self.x, self.y = texture_images()

    def make_model(self, seed):
        torch.manual_seed(seed)
        return TextureCNN()

    def make_optimizer(self, model):
        return torch.optim.AdamW(model.parameters(), lr=4e-3, weight_decay=0.05)

    def batches(self, seed):
        return [(self.x[i], self.y[i]) for i in shuffled(len(self.x), 16, seed)]

    def loss_fn(self, model, batch):
        images, labels = batch
        return F.cross_entropy(model(images), labels)

    def train(self, seed, epochs):
        started = time.time()
        model = self.make_model(seed)
        opt = self.make_optimizer(model)
        raw, shown, pending = [], [], []
        for epoch in range(epochs):
            opt.zero_grad()
            for i, batch in enumerate(self.batches(seed * 1000 + epoch)):
                loss = self.loss_fn(model, batch)
                (loss / self.accum).backward()
                raw.append(loss.item())
                pending.append(loss.item())
                if (i + 1) % self.accum == 0:
                    opt.step()
                    opt.zero_grad()
                    shown.append(sum(pending) / len(pending))
                    pending = []
                else:
                    shown.append(None)
        return Run.from_log({"step": list(range(len(raw))), "loss_raw": raw, "loss_reported": shown},
                            seed=seed, started_at=started)


class HuberNesterov:
    """Healthy: MLP regression with Huber loss (delta 1, outliers in the targets), SGD with
    Nesterov momentum, StepLR multiplying the rate by 0.7 once per epoch, the running epoch mean
    printed every 8 batches."""

    def __init__(self):
        (self.x, self.y), (self.val_x, self.val_y) = holdout(*smooth_regression())

    def make_model(self, seed):
        torch.manual_seed(seed)
        return tabular_mlp(6, 1, hidden=32)

    def make_optimizer(self, model):
        return torch.optim.SGD(model.parameters(), lr=0.05, momentum=0.9, nesterov=True)

    def batches(self, seed):
        return [{"x": self.x[i], "y": self.y[i]} for i in shuffled(len(self.x), 32, seed)]

    def val_batches(self, seed):
        return [{"x": self.val_x[i], "y": self.val_y[i]} for i in shuffled(len(self.val_x), 64, seed)]

    def loss_fn(self, model, batch):
        return F.huber_loss(model(batch["x"]), batch["y"], delta=1.0)

    def train(self, seed, epochs):
        started = time.time()
        model = self.make_model(seed)
        opt = self.make_optimizer(model)
        sched = torch.optim.lr_scheduler.StepLR(opt, step_size=1, gamma=0.7)
        raw, shown = [], []
        for epoch in range(epochs):
            running = 0.0
            for i, batch in enumerate(self.batches(seed * 1000 + epoch)):
                opt.zero_grad()
                loss = self.loss_fn(model, batch)
                loss.backward()
                opt.step()
                running += loss.item()
                raw.append(loss.item())
                shown.append(running / (i + 1) if i % 8 == 7 else None)
            sched.step()
        return Run.from_log({"step": list(range(len(raw))), "loss_raw": raw, "loss_reported": shown},
                            seed=seed, started_at=started)


# --------------------------------------------------------------------------- H1: optimizer / loss / loop

class _MachineStates:
    """Machine-state classifier on standardised sensor features, MLP, cross-entropy."""

    def __init__(self):
        (self.x, self.y), (self.val_x, self.val_y) = holdout(*machine_states())

    def make_model(self, seed):
        torch.manual_seed(seed)
        return tabular_mlp(8, 4)

    def make_optimizer(self, model):
        return torch.optim.Adam(model.parameters(), lr=3e-3)

    def batches(self, seed):
        return [(self.x[i], self.y[i]) for i in shuffled(len(self.x), 32, seed)]

    def val_batches(self, seed):
        return [(self.val_x[i], self.val_y[i]) for i in shuffled(len(self.val_x), 64, seed)]

    def loss_fn(self, model, batch):
        x, y = batch
        return F.cross_entropy(model(x), y)

    def train(self, seed, epochs):
        return epoch_mean_loop(self, seed, epochs)


class AdamMaximize(_MachineStates):
    """Bug: the optimizer line was copied from the critic of a WGAN script, which maximises
    its objective: Adam(..., maximize=True) climbs the cross-entropy (gradient ascent)."""

    def make_optimizer(self, model):
        return torch.optim.Adam(model.parameters(), lr=3e-3, maximize=True)


class MeanThenSquare:
    """Bug: a hand-written MSE, `(pred - target).mean() ** 2`, takes the mean of the errors
    before squaring: positive and negative errors cancel, so the loss only asks the batch's
    mean prediction to match the batch's mean target: it sits near 0 from the first step
    while the per-sample fit stays as bad as predicting the mean."""

    def __init__(self):
        (self.x, self.y), (self.val_x, self.val_y) = holdout(*calibration_pairs())

    def make_model(self, seed):
        torch.manual_seed(seed)
        return tabular_mlp(5, 1, hidden=32)

    def make_optimizer(self, model):
        return torch.optim.Adam(model.parameters(), lr=3e-3)

    def batches(self, seed):
        return [(self.x[i], self.y[i]) for i in shuffled(len(self.x), 32, seed)]

    def val_batches(self, seed):
        return [(self.val_x[i], self.val_y[i]) for i in shuffled(len(self.val_x), 64, seed)]

    @staticmethod
    def mse(pred, target):
        return (pred - target).mean() ** 2

    def loss_fn(self, model, batch):
        x, target = batch
        return self.mse(model(x), target)

    def train(self, seed, epochs):
        return epoch_mean_loop(self, seed, epochs)


class LabelSmoothingTypo(_MachineStates):
    """Bug: `nn.CrossEntropyLoss(label_smoothing=0.9)`, the 0.9 taken from another codebase's
    `LabelSmoothingLoss(confidence=0.9)`: the target puts only 0.325 on the true class and
    0.225 on each other one, so the loss sits at its floor near ln(4) and the logits stay flat."""

    def __init__(self):
        super().__init__()
        self.criterion = nn.CrossEntropyLoss(label_smoothing=0.9)

    def loss_fn(self, model, batch):
        x, y = batch
        return self.criterion(model(x), y)


# --------------------------------------------------------------------------- H2: data

class DisplacementInMicrometres(_MachineStates):
    """Bug: the shaft-displacement channel (column 5) is joined from the maintenance table,
    which stores it in micrometres, after the other channels were standardised: it is ~1e6
    times larger than every other feature and swamps the first layer."""

    def __init__(self):
        super().__init__()
        self.x = self.x.clone()
        self.x[:, 5] = self.x[:, 5] * 1e6
        self.val_x = self.val_x.clone()
        self.val_x[:, 5] = self.val_x[:, 5] * 1e6


class StagingBufferAliased(_MachineStates):
    """Bug: batches are copied into one preallocated staging tensor 'to avoid allocations',
    and that same tensor is appended to the epoch's list: once the list is built, every
    batch's inputs are the last batch's rows, paired with each batch's own labels."""

    def __init__(self):
        (x, y), (self.val_x, self.val_y) = holdout(*machine_states())
        self.x, self.y = x[:1024], y[:1024]  # 32 full batches of 32
        self.staging = torch.empty(32, 8)

    def batches(self, seed):
        out = []
        for i in shuffled(len(self.x), 32, seed):
            self.staging.copy_(self.x[i])
            out.append((self.staging, self.y[i]))
        return out

    def val_batches(self, seed):
        return [(self.val_x[i], self.val_y[i]) for i in shuffled(len(self.val_x), 64, seed)]


class ValNotStandardised(_MachineStates):
    """Bug: the scaler is fitted on the training split and applied to it, but the validation
    split is served as read from the sensors, in physical units (rpm ~3000, hPa ~1000)."""

    def __init__(self):
        (x, self.y), (val_x, self.val_y) = holdout(*raw_sensor_readings())
        self.mean, self.std = x.mean(0), x.std(0)
        self.x = (x - self.mean) / self.std
        self.val_x = val_x  # the transform was never applied here


# --------------------------------------------------------------------------- H3: the logged loss

class PartialSumOverEpochLength(_MachineStates):
    """Bug: the progress bar shows `running / len(loader)`, the sum of the losses seen so far
    divided by the number of batches in the whole epoch: it starts each epoch near 0 and
    climbs to the true mean only at the epoch's last batch."""

    def train(self, seed, epochs):
        started = time.time()
        model = self.make_model(seed)
        opt = self.make_optimizer(model)
        raw, shown = [], []
        for epoch in range(epochs):
            batches = self.batches(seed * 1000 + epoch)
            running = 0.0
            for batch in batches:
                opt.zero_grad()
                loss = self.loss_fn(model, batch)
                loss.backward()
                opt.step()
                running += loss.item()
                raw.append(loss.item())
                shown.append(running / len(batches))
        return Run.from_log({"step": list(range(len(raw))), "loss_raw": raw, "loss_reported": shown},
                            seed=seed, started_at=started)


class AccumScaledLossLogged(CnnAdamWAccumTwo):
    """Bug: under gradient accumulation the loss is divided by `accum` before backward, and
    the logger prints that divided tensor's `.item()` for every micro-batch: the printed loss
    is half the real one."""

    def train(self, seed, epochs):
        started = time.time()
        model = self.make_model(seed)
        opt = self.make_optimizer(model)
        raw, shown = [], []
        for epoch in range(epochs):
            opt.zero_grad()
            for i, batch in enumerate(self.batches(seed * 1000 + epoch)):
                loss = self.loss_fn(model, batch)
                raw.append(loss.item())
                loss = loss / self.accum
                loss.backward()
                shown.append(loss.item())
                if (i + 1) % self.accum == 0:
                    opt.step()
                    opt.zero_grad()
        return Run.from_log({"step": list(range(len(raw))), "loss_raw": raw, "loss_reported": shown},
                            seed=seed, started_at=started)


class AccuracyLoggedAsLoss(GruOneCycle):
    """Bug: `batch_metrics` returns (accuracy, loss) and the loop unpacks it as
    `loss_value, acc = ...`: the running value printed as the loss is the batch accuracy."""

    @staticmethod
    def batch_metrics(logits, labels, loss):
        return (logits.argmax(-1) == labels).float().mean().item(), loss.item()

    def train(self, seed, epochs):
        started = time.time()
        model = self.make_model(seed)
        opt = self.make_optimizer(model)
        per_epoch = len(self.batches(seed))
        sched = torch.optim.lr_scheduler.OneCycleLR(opt, max_lr=1e-2, total_steps=epochs * per_epoch)
        raw, shown = [], []
        for epoch in range(epochs):
            running = 0.0
            for i, (seqs, labels) in enumerate(self.batches(seed * 1000 + epoch)):
                opt.zero_grad()
                logits = model(seqs)
                loss = F.cross_entropy(logits, labels)
                loss.backward()
                opt.step()
                sched.step()
                loss_value, acc = self.batch_metrics(logits, labels, loss)
                running += loss_value
                raw.append(loss.item())
                shown.append(running / (i + 1))
        return Run.from_log({"step": list(range(len(raw))), "loss_raw": raw, "loss_reported": shown},
                            seed=seed, started_at=started)


# --------------------------------------------------------------------------- the batch

FIFTH = {
    "fifth_ok_gru_onecycle": GruOneCycle,
    "fifth_ok_cnn_adamw_accum2": CnnAdamWAccumTwo,
    "fifth_ok_huber_nesterov": HuberNesterov,
    "fifth_h1_adam_maximize": AdamMaximize,
    "fifth_h1_mean_then_square": MeanThenSquare,
    "fifth_h1_label_smoothing_typo": LabelSmoothingTypo,
    "fifth_h2_feature_in_micrometres": DisplacementInMicrometres,
    "fifth_h2_staging_buffer_aliased": StagingBufferAliased,
    "fifth_h2_val_not_standardised": ValNotStandardised,
    "fifth_h3_partial_sum_over_epoch_length": PartialSumOverEpochLength,
    "fifth_h3_accum_scaled_loss_logged": AccumScaledLossLogged,
    "fifth_h3_accuracy_logged_as_loss": AccuracyLoggedAsLoss,
}

# Key terms written with the setups, before any labkit output was seen.
FIFTH_EXPECTED = {
    "fifth_ok_gru_onecycle": ("NONE", []),
    "fifth_ok_cnn_adamw_accum2": ("NONE", []),
    "fifth_ok_huber_nesterov": ("NONE", []),
    "fifth_h1_adam_maximize": ("H1", [("maximize", "maximise", "ascent", "ascend", "uphill", "climb",
                                       "wrong direction", "opposite direction", "sign flip", "flipped sign",
                                       "negated", "against the gradient")]),
    "fifth_h1_mean_then_square": ("H1", [("mean", "average", "cancel"),
                                          ("square", "squaring", "mse", "**2", "** 2")]),
    "fifth_h1_label_smoothing_typo": ("H1", [("smoothing", "smoothed", "soft target", "soft label")]),
    "fifth_h2_feature_in_micrometres": ("H2", [("scale", "unit", "magnitude", "1e6", "micromet", "normali",
                                                "standardi", "dominat", "swamp", "large feature",
                                                "huge feature")]),
    "fifth_h2_staging_buffer_aliased": ("H2", [("same input", "identical input", "same x", "same rows",
                                                "same feature", "alias", "buffer", "overwrit", "shared tensor",
                                                "same tensor", "identical", "unrelated", "decorrelated",
                                                "no signal", "carry no")]),
    "fifth_h2_val_not_standardised": ("H2", [("validation", "held-out", "held out", "val "),
                                             ("normali", "standardi", "scale", "unit", "preprocess",
                                              "transform", "distribution", "shift", "skew")]),
    "fifth_h3_partial_sum_over_epoch_length": ("H3", [("divid", "denominator", "divisor", "len(", "number of batches",
                                                       "total", "ramp", "partial", "climb")]),
    "fifth_h3_accum_scaled_loss_logged": ("H3", [("accumulat", "divided", "scaled", "half", "factor", "/ 2",
                                                  "/2", "0.5")]),
    "fifth_h3_accuracy_logged_as_loss": ("H3", [("accuracy", "metric", "swapped", "unpack", "not the loss",
                                                 "another quantity", "other quantity")]),
}
