"""A fourth held-out batch: fourteen plain-PyTorch setups (ten buggy, four healthy controls)
written by a reviewer who did not read the rules, with model kinds and bugs unlike the other
batches: a 1-D CNN, GRU and LSTM sequence classifiers, a tiny causal Transformer LM, a
regression MLP, a count regressor, a multi-label classifier and an autoencoder; SGD with
momentum, Adam, AdamW and RMSprop. Nothing here uses labkit but `Run.from_log`.

Scored once against the rules as they stood (2026-12-03): right system on 4 of the 10 buggy
setups, right mechanism on 1; no healthy control convicted. Five rules came from its misses,
each written as a general measurement (`own.losspath`: broadcast, probabilities into a loss
on logits, a piecewise-constant op with zero gradients; `own.settings`: one optimizer setting
at a time; repeated input rows; a running minimum or an EMA from 0 in the logger), after which
9 of 10 are right. Still missed: the LM whose labels equal its inputs (no shift), acquitted.
It is scored by tests/setups/test_own_held_out.py, apart from the first batch's bars.
"""

from __future__ import annotations

import math
import time

import torch
import torch.nn as nn
import torch.nn.functional as F

from labkit import Run


# --------------------------------------------------------------------------- data (fixed seeds)

def _gen(seed):
    return torch.Generator().manual_seed(seed)


def vibration_windows(n=960, length=32, seed=31):
    """1-D signals, 3 classes by frequency (random phase), additive noise. (n, 1, 32), (n,)."""
    g = _gen(seed)
    y = torch.randint(0, 3, (n,), generator=g)
    freq = torch.tensor([1.0, 2.5, 4.0])[y]
    phase = 2 * math.pi * torch.rand(n, generator=g)
    t = torch.linspace(0, 1, length)
    x = torch.sin(2 * math.pi * freq[:, None] * t[None, :] + phase[:, None])
    x = x + 0.4 * torch.randn(n, length, generator=g)
    return x[:, None, :], y


def load_windows(n=960, length=32, seed=37):
    """1-D sensor windows where the load class sets the offset and the gain of the sensor:
    x = offset_k + gain_k * (sin(...) + 0.3 * noise). (n, 1, 32), (n,)."""
    g = _gen(seed)
    y = torch.randint(0, 3, (n,), generator=g)
    offset = torch.tensor([-1.0, 0.5, 2.0])[y]
    gain = torch.tensor([0.5, 1.0, 2.0])[y]
    phase = 2 * math.pi * torch.rand(n, generator=g)
    t = torch.linspace(0, 1, length)
    shape = torch.sin(2 * math.pi * 2.0 * t[None, :] + phase[:, None]) + 0.3 * torch.randn(n, length, generator=g)
    x = offset[:, None] + gain[:, None] * shape
    return x[:, None, :], y


def drift_sequences(n=960, steps=20, dim=4, seed=41, scale=0.6):
    """Sequences whose class sets a small drift direction hidden in noise. (n, 20, 4), (n,)."""
    g = _gen(seed)
    means = scale * torch.randn(3, dim, generator=g)
    y = torch.randint(0, 3, (n,), generator=g)
    x = means[y][:, None, :] + torch.randn(n, steps, dim, generator=g)
    return x, y


def tabular_regression(n=1024, seed=43):
    """y = smooth function of 8 features + small noise; y has shape (n,)."""
    g = _gen(seed)
    x = torch.randn(n, 8, generator=g)
    w = torch.randn(8, generator=g)
    y = torch.tanh(x @ w / 2) * 2 + 0.5 * x[:, 0] * x[:, 1] + 0.1 * torch.randn(n, generator=g)
    return x, y


def tabular_counts(n=1024, seed=47):
    """Poisson counts whose rate depends on 6 features; y float, shape (n, 1)."""
    g = _gen(seed)
    x = torch.randn(n, 6, generator=g)
    w = 0.5 * torch.randn(6, generator=g)
    rate = torch.exp(1.0 + x @ w)
    y = torch.poisson(rate, generator=g)
    return x, y[:, None]


def multilabel_tags(n=1024, seed=53, n_tags=8):
    """10 features, 8 independent binary tags, each a noisy linear-threshold of the features."""
    g = _gen(seed)
    x = torch.randn(n, 10, generator=g)
    w = torch.randn(10, n_tags, generator=g)
    y = ((x @ w + 0.5 * torch.randn(n, n_tags, generator=g)) > 0).float()
    return x, y


def low_rank_points(n=1024, seed=59):
    """16-d points near a 3-d subspace, for the autoencoder."""
    g = _gen(seed)
    z = torch.randn(n, 3, generator=g)
    basis = torch.randn(3, 16, generator=g)
    return torch.tanh(z @ basis / 2) + 0.05 * torch.randn(n, 16, generator=g)


def rule_tokens(n=512, length=17, vocab=24, seed=61, follow=0.8):
    """Token sequences where the next token is rule[token] with probability `follow`."""
    g = _gen(seed)
    rule = torch.randperm(vocab, generator=g)
    ids = torch.empty(n, length, dtype=torch.long)
    ids[:, 0] = torch.randint(0, vocab, (n,), generator=g)
    for t in range(1, length):
        keep = torch.rand(n, generator=g) < follow
        ids[:, t] = torch.where(keep, rule[ids[:, t - 1]], torch.randint(0, vocab, (n,), generator=g))
    return ids


def shuffled(n, batch_size, seed):
    return torch.randperm(n, generator=_gen(seed)).split(batch_size)


# --------------------------------------------------------------------------- models

class Conv1dNet(nn.Module):
    def __init__(self, n_out=3):
        super().__init__()
        self.net = nn.Sequential(nn.Conv1d(1, 8, 5, padding=2), nn.ReLU(), nn.MaxPool1d(2),
                                 nn.Conv1d(8, 16, 5, padding=2), nn.ReLU(), nn.AdaptiveAvgPool1d(1),
                                 nn.Flatten(), nn.Linear(16, n_out))

    def forward(self, x):  # (B, 1, 32) -> (B, 3)
        return self.net(x)


class RecurrentClassifier(nn.Module):
    def __init__(self, cell="gru", dim=4, hidden=24, n_out=3):
        super().__init__()
        self.rnn = (nn.GRU if cell == "gru" else nn.LSTM)(dim, hidden, batch_first=True)
        self.head = nn.Linear(hidden, n_out)

    def forward(self, x):  # (B, T, 4) -> (B, 3)
        out, _ = self.rnn(x)
        return self.head(out[:, -1])


class TinyCausalLM(nn.Module):
    def __init__(self, vocab=24, dim=32, max_len=32):
        super().__init__()
        self.tok = nn.Embedding(vocab, dim)
        self.pos = nn.Embedding(max_len, dim)
        self.block = nn.TransformerEncoderLayer(dim, nhead=2, dim_feedforward=64, dropout=0.0,
                                                batch_first=True)
        self.out = nn.Linear(dim, vocab)

    def forward(self, ids):  # (B, T) -> (B, T, V)
        T = ids.shape[1]
        h = self.tok(ids) + self.pos(torch.arange(T))[None]
        mask = nn.Transformer.generate_square_subsequent_mask(T)
        return self.out(self.block(h, src_mask=mask, is_causal=True))


def mlp(n_in, n_out, hidden=48):
    return nn.Sequential(nn.Linear(n_in, hidden), nn.ReLU(), nn.Linear(hidden, hidden), nn.ReLU(),
                         nn.Linear(hidden, n_out))


# --------------------------------------------------------------------------- healthy controls

class GruClipAdam:
    """Healthy: GRU sequence classifier, Adam, gradient clipping at 1.0, running epoch mean."""

    def __init__(self):
        x, y = drift_sequences()
        self.x, self.y = x, y

    def make_model(self, seed):
        torch.manual_seed(seed)
        return RecurrentClassifier("gru")

    def make_optimizer(self, model):
        return torch.optim.Adam(model.parameters(), lr=5e-3)

    def batches(self, seed):
        return [(self.x[i], self.y[i]) for i in shuffled(len(self.x), 32, seed)]

    def loss_fn(self, model, batch):
        seqs, labels = batch
        return F.cross_entropy(model(seqs), labels)

    def train(self, seed, epochs):
        started = time.time()
        model = self.make_model(seed)
        opt = self.make_optimizer(model)
        raw, shown = [], []
        for epoch in range(epochs):
            running = 0.0
            for i, batch in enumerate(self.batches(seed * 100 + epoch)):
                opt.zero_grad()
                loss = self.loss_fn(model, batch)
                loss.backward()
                nn.utils.clip_grad_norm_(model.parameters(), 1.0)
                opt.step()
                running += loss.item()
                raw.append(loss.item())
                shown.append(running / (i + 1))
        return Run.from_log({"step": list(range(len(raw))), "loss_raw": raw, "loss_reported": shown},
                            seed=seed, started_at=started)


class CnnCosineSgd:
    """Healthy: 1-D CNN on vibration windows, SGD momentum 0.9, cosine LR over the run,
    the mean of the last 4 batches printed every 4 steps."""

    def __init__(self):
        self.x, self.y = vibration_windows()

    def make_model(self, seed):
        torch.manual_seed(seed)
        return Conv1dNet()

    def make_optimizer(self, model):
        return torch.optim.SGD(model.parameters(), lr=0.05, momentum=0.9)

    def batches(self, seed):
        return [(self.x[i], self.y[i]) for i in shuffled(len(self.x), 32, seed)]

    def loss_fn(self, model, batch):
        return F.cross_entropy(model(batch[0]), batch[1])

    def train(self, seed, epochs):
        started = time.time()
        model = self.make_model(seed)
        opt = self.make_optimizer(model)
        per_epoch = len(self.batches(seed))
        sched = torch.optim.lr_scheduler.CosineAnnealingLR(opt, T_max=epochs * per_epoch)
        raw, shown, window = [], [], []
        for epoch in range(epochs):
            for batch in self.batches(seed + 7 * epoch):
                opt.zero_grad()
                loss = self.loss_fn(model, batch)
                loss.backward()
                opt.step()
                sched.step()
                raw.append(loss.item())
                window.append(loss.item())
                if len(window) == 4:
                    shown.append(sum(window) / 4)
                    window = []
                else:
                    shown.append(None)
        return Run.from_log({"step": list(range(len(raw))), "loss_raw": raw, "loss_reported": shown},
                            seed=seed, started_at=started)


class TransformerLmWarmup:
    """Healthy: tiny causal Transformer LM, AdamW (weight decay 0.01), linear warmup over 15
    steps, labels shifted by one, the per-batch loss printed."""

    def __init__(self):
        self.ids = rule_tokens()

    def make_model(self, seed):
        torch.manual_seed(seed)
        return TinyCausalLM()

    def make_optimizer(self, model):
        return torch.optim.AdamW(model.parameters(), lr=3e-3, weight_decay=0.01)

    def batches(self, seed):
        return [{"input_ids": self.ids[i, :-1], "labels": self.ids[i, 1:]}
                for i in shuffled(len(self.ids), 32, seed)]

    def loss_fn(self, model, batch):
        logits = model(batch["input_ids"])
        return F.cross_entropy(logits.reshape(-1, logits.shape[-1]), batch["labels"].reshape(-1))

    def train(self, seed, epochs):
        started = time.time()
        model = self.make_model(seed)
        opt = self.make_optimizer(model)
        sched = torch.optim.lr_scheduler.LambdaLR(opt, lambda s: min(1.0, (s + 1) / 15))
        raw = []
        for epoch in range(epochs):
            for batch in self.batches(seed + epoch):
                opt.zero_grad()
                loss = self.loss_fn(model, batch)
                loss.backward()
                opt.step()
                sched.step()
                raw.append(loss.item())
        return Run.from_log({"step": list(range(len(raw))), "loss_raw": raw, "loss_reported": list(raw)},
                            seed=seed, started_at=started)


class AutoencoderRmsprop:
    """Healthy: MLP autoencoder 16 -> 3 -> 16 with MSE, RMSprop, epoch mean printed at the end
    of each epoch (weighted by batch size)."""

    def __init__(self):
        self.x = low_rank_points()

    def make_model(self, seed):
        torch.manual_seed(seed)
        return nn.Sequential(nn.Linear(16, 32), nn.Tanh(), nn.Linear(32, 3), nn.Linear(3, 32), nn.Tanh(),
                             nn.Linear(32, 16))

    def make_optimizer(self, model):
        return torch.optim.RMSprop(model.parameters(), lr=2e-3)

    def batches(self, seed):
        return [(self.x[i], self.x[i]) for i in shuffled(len(self.x), 32, seed)]

    def loss_fn(self, model, batch):
        x, target = batch
        return F.mse_loss(model(x), target)

    def train(self, seed, epochs):
        started = time.time()
        model = self.make_model(seed)
        opt = self.make_optimizer(model)
        raw, shown = [], []
        for epoch in range(epochs):
            batches = self.batches(seed + epoch)
            total, seen = 0.0, 0
            for i, batch in enumerate(batches):
                opt.zero_grad()
                loss = self.loss_fn(model, batch)
                loss.backward()
                opt.step()
                total += loss.item() * len(batch[0])
                seen += len(batch[0])
                raw.append(loss.item())
                shown.append(total / seen if i == len(batches) - 1 else None)
        return Run.from_log({"step": list(range(len(raw))), "loss_raw": raw, "loss_reported": shown},
                            seed=seed, started_at=started)


# --------------------------------------------------------------------------- H1: optimizer / loss / loop

def plain_train(setup, seed, epochs):
    """The loop most of the buggy setups use: zero_grad, loss, backward, step; the running
    epoch mean is the progress-bar value."""
    started = time.time()
    model = setup.make_model(seed)
    opt = setup.make_optimizer(model)
    raw, shown = [], []
    for epoch in range(epochs):
        running = 0.0
        for i, batch in enumerate(setup.batches(seed * 10 + epoch)):
            opt.zero_grad()
            loss = setup.loss_fn(model, batch)
            loss.backward()
            opt.step()
            running += loss.item()
            raw.append(loss.item())
            shown.append(running / (i + 1))
    return Run.from_log({"step": list(range(len(raw))), "loss_raw": raw, "loss_reported": shown},
                        seed=seed, started_at=started)


class RegressionBroadcast:
    """Bug: the model returns (B, 1), the targets are (B,); F.mse_loss broadcasts them to
    (B, B) (a UserWarning nobody reads), so every prediction is pulled to the batch mean."""

    def __init__(self):
        self.x, self.y = tabular_regression()

    def make_model(self, seed):
        torch.manual_seed(seed)
        return mlp(8, 1)

    def make_optimizer(self, model):
        return torch.optim.Adam(model.parameters(), lr=3e-3)

    def batches(self, seed):
        return [{"inputs": self.x[i], "targets": self.y[i]} for i in shuffled(len(self.x), 32, seed)]

    def loss_fn(self, model, batch):
        return F.mse_loss(model(batch["inputs"]), batch["targets"])

    def train(self, seed, epochs):
        return plain_train(self, seed, epochs)


class SigmoidIntoBceWithLogits:
    """Bug: multi-label tagger whose model ends in nn.Sigmoid(), trained with
    BCEWithLogitsLoss, which applies a second sigmoid: probabilities are stuck in (0.5, 0.73)."""

    def __init__(self):
        self.x, self.y = multilabel_tags()
        self.criterion = nn.BCEWithLogitsLoss()

    def make_model(self, seed):
        torch.manual_seed(seed)
        return nn.Sequential(mlp(10, 8), nn.Sigmoid())

    def make_optimizer(self, model):
        return torch.optim.Adam(model.parameters(), lr=3e-3)

    def batches(self, seed):
        return [(self.x[i], self.y[i]) for i in shuffled(len(self.x), 32, seed)]

    def loss_fn(self, model, batch):
        x, tags = batch
        return self.criterion(model(x), tags)

    def train(self, seed, epochs):
        return plain_train(self, seed, epochs)


class AdamWDecayTypo:
    """Bug: AdamW(weight_decay=1e2) for the intended 1e-2: the decoupled decay shrinks every
    weight by lr * 100 = 10% per step, pinning the LSTM near zero."""

    def __init__(self):
        self.x, self.y = drift_sequences()

    def make_model(self, seed):
        torch.manual_seed(seed)
        return RecurrentClassifier("lstm")

    def make_optimizer(self, model):
        return torch.optim.AdamW(model.parameters(), lr=1e-3, weight_decay=1e2)

    def batches(self, seed):
        return [(self.x[i], self.y[i]) for i in shuffled(len(self.x), 32, seed)]

    def loss_fn(self, model, batch):
        return F.cross_entropy(model(batch[0]), batch[1])

    def train(self, seed, epochs):
        return plain_train(self, seed, epochs)


class RoundedCountLoss:
    """Bug: counts are integers, so the predictions are rounded before the MSE; torch.round
    has zero gradient almost everywhere and nothing learns."""

    def __init__(self):
        self.x, self.y = tabular_counts()

    def make_model(self, seed):
        torch.manual_seed(seed)
        return mlp(6, 1, hidden=32)

    def make_optimizer(self, model):
        return torch.optim.RMSprop(model.parameters(), lr=1e-3)

    def batches(self, seed):
        return [(self.x[i], self.y[i]) for i in shuffled(len(self.x), 32, seed)]

    def loss_fn(self, model, batch):
        x, counts = batch
        return F.mse_loss(torch.round(model(x)), counts)

    def train(self, seed, epochs):
        return plain_train(self, seed, epochs)


# --------------------------------------------------------------------------- H2: data

class PerWindowStandardised:
    """Bug: windows standardised over their own time axis (dim=-1) instead of with the
    training set's statistics (dim=(0, 2)): the offset and gain that carry the load class
    are divided out of every window."""

    def __init__(self):
        x, self.y = load_windows()
        self.x = (x - x.mean(dim=-1, keepdim=True)) / x.std(dim=-1, keepdim=True)

    def make_model(self, seed):
        torch.manual_seed(seed)
        return Conv1dNet()

    def make_optimizer(self, model):
        return torch.optim.Adam(model.parameters(), lr=3e-3)

    def batches(self, seed):
        return [(self.x[i], self.y[i]) for i in shuffled(len(self.x), 32, seed)]

    def loss_fn(self, model, batch):
        return F.cross_entropy(model(batch[0]), batch[1])

    def train(self, seed, epochs):
        return plain_train(self, seed, epochs)


class LmLabelsNotShifted(TransformerLmWarmup):
    """Bug: labels = input_ids (the shift by one forgotten); with the causal mask each position
    sees its own label, so the LM learns to copy and the loss collapses toward 0."""

    def batches(self, seed):
        return [{"input_ids": self.ids[i, :-1], "labels": self.ids[i, :-1]}
                for i in shuffled(len(self.ids), 32, seed)]


class SameBatchEveryStep:
    """Bug: the slicing start is never advanced (`x[start:start + bs]` with start fixed at the
    first index of the permutation's first chunk), so every step sees the same 32 rows."""

    def __init__(self):
        x, y = drift_sequences(n=1216, seed=67, scale=0.2)
        self.x, self.y = x[256:], y[256:]
        self.val_x, self.val_y = x[:256], y[:256]

    def make_model(self, seed):
        torch.manual_seed(seed)
        return RecurrentClassifier("gru")

    def make_optimizer(self, model):
        return torch.optim.Adam(model.parameters(), lr=5e-3)

    def batches(self, seed):
        order = torch.randperm(len(self.x), generator=_gen(seed))
        first = order[:32]
        return [(self.x[first], self.y[first]) for _ in range(len(self.x) // 32)]

    def val_batches(self, seed):
        return [(self.val_x[i], self.val_y[i]) for i in shuffled(len(self.val_x), 64, seed)]

    def loss_fn(self, model, batch):
        return F.cross_entropy(model(batch[0]), batch[1])

    def train(self, seed, epochs):
        return plain_train(self, seed, epochs)


# --------------------------------------------------------------------------- H3: the logged loss

class BestSoFarLogged(AutoencoderRmsprop):
    """Bug: the progress bar shows `best = min(best, loss.item())` (kept for checkpointing)
    under the label 'loss'."""

    def train(self, seed, epochs):
        started = time.time()
        model = self.make_model(seed)
        opt = self.make_optimizer(model)
        raw, shown, best = [], [], float("inf")
        for epoch in range(epochs):
            for batch in self.batches(seed + epoch):
                opt.zero_grad()
                loss = self.loss_fn(model, batch)
                loss.backward()
                opt.step()
                best = min(best, loss.item())
                raw.append(loss.item())
                shown.append(best)
        return Run.from_log({"step": list(range(len(raw))), "loss_raw": raw, "loss_reported": shown},
                            seed=seed, started_at=started)


class EmaFromZero(GruClipAdam):
    """Bug: the smoothed loss is `ema = 0.98 * ema + 0.02 * loss` from ema = 0.0 without the
    bias correction: it starts near 0 and climbs for ~100 steps, under the real loss."""

    def train(self, seed, epochs):
        started = time.time()
        model = self.make_model(seed)
        opt = self.make_optimizer(model)
        raw, shown, ema = [], [], 0.0
        for epoch in range(epochs):
            for batch in self.batches(seed * 100 + epoch):
                opt.zero_grad()
                loss = self.loss_fn(model, batch)
                loss.backward()
                nn.utils.clip_grad_norm_(model.parameters(), 1.0)
                opt.step()
                ema = 0.98 * ema + 0.02 * loss.item()
                raw.append(loss.item())
                shown.append(ema)
        return Run.from_log({"step": list(range(len(raw))), "loss_raw": raw, "loss_reported": shown},
                            seed=seed, started_at=started)


class ValidationLossLogged(CnnCosineSgd):
    """Bug: the value printed as the training loss is the loss on a fixed validation batch,
    computed in eval mode after each step (a 'quick check' that replaced the training value)."""

    def __init__(self):
        x, y = vibration_windows(n=1216, seed=71)
        self.x, self.y = x[256:], y[256:]
        self.val_x, self.val_y = x[:256], y[:256]

    def val_batches(self, seed):
        return [(self.val_x[i], self.val_y[i]) for i in shuffled(len(self.val_x), 64, seed)]

    def train(self, seed, epochs):
        started = time.time()
        model = self.make_model(seed)
        opt = self.make_optimizer(model)
        per_epoch = len(self.batches(seed))
        sched = torch.optim.lr_scheduler.CosineAnnealingLR(opt, T_max=epochs * per_epoch)
        vx, vy = self.val_x[:64], self.val_y[:64]
        raw, shown = [], []
        for epoch in range(epochs):
            for batch in self.batches(seed + 7 * epoch):
                model.train()
                opt.zero_grad()
                loss = self.loss_fn(model, batch)
                loss.backward()
                opt.step()
                sched.step()
                model.eval()
                with torch.no_grad():
                    shown_value = F.cross_entropy(model(vx), vy).item()
                raw.append(loss.item())
                shown.append(shown_value)
        return Run.from_log({"step": list(range(len(raw))), "loss_raw": raw, "loss_reported": shown},
                            seed=seed, started_at=started)


# --------------------------------------------------------------------------- the batch

FOURTH = {
    "fourth_ok_gru_clip_adam": GruClipAdam,
    "fourth_ok_cnn1d_cosine_sgd": CnnCosineSgd,
    "fourth_ok_transformer_lm_warmup": TransformerLmWarmup,
    "fourth_ok_autoencoder_rmsprop": AutoencoderRmsprop,
    "fourth_h1_regression_broadcast": RegressionBroadcast,
    "fourth_h1_sigmoid_into_bce_logits": SigmoidIntoBceWithLogits,
    "fourth_h1_adamw_decay_typo": AdamWDecayTypo,
    "fourth_h1_rounded_count_loss": RoundedCountLoss,
    "fourth_h2_per_window_standardised": PerWindowStandardised,
    "fourth_h2_lm_labels_not_shifted": LmLabelsNotShifted,
    "fourth_h2_same_batch_every_step": SameBatchEveryStep,
    "fourth_h3_best_so_far_logged": BestSoFarLogged,
    "fourth_h3_ema_from_zero": EmaFromZero,
    "fourth_h3_validation_loss_logged": ValidationLossLogged,
}

# Key terms written with the setups, before any labkit output was seen.
FOURTH_EXPECTED = {
    "fourth_ok_gru_clip_adam": ("NONE", []),
    "fourth_ok_cnn1d_cosine_sgd": ("NONE", []),
    "fourth_ok_transformer_lm_warmup": ("NONE", []),
    "fourth_ok_autoencoder_rmsprop": ("NONE", []),
    "fourth_h1_regression_broadcast": ("H1", [("broadcast", "shape")]),
    "fourth_h1_sigmoid_into_bce_logits": ("H1", [("sigmoid",)]),
    "fourth_h1_adamw_decay_typo": ("H1", [("weight decay", "weight_decay")]),
    "fourth_h1_rounded_count_loss": ("H1", [("round", "non-differentiable", "piecewise", "zero gradient",
                                              "no gradient", "blocked"), ("loss",)]),
    "fourth_h2_per_window_standardised": ("H2", [("normali", "standardi", "axis", "no signal",
                                                  "no information", "carry no", "erased", "uninformative")]),
    "fourth_h2_lm_labels_not_shifted": ("H2", [("shift", "same as the input", "equal to the input",
                                                "identical to the input", "copy of the input", "leak")]),
    "fourth_h2_same_batch_every_step": ("H2", [("same batch", "one batch", "single batch", "repeated",
                                                "same 32", "same rows", "same samples")]),
    "fourth_h3_best_so_far_logged": ("H3", [("min", "best", "lowest")]),
    "fourth_h3_ema_from_zero": ("H3", [("ema", "moving average", "smoothed", "exponential"),
                                       ("zero", "bias", "starts at 0", "start at 0", "initiali")]),
    "fourth_h3_validation_loss_logged": ("H3", [("validation", "held-out", "held out", "other batch",
                                                 "another batch", "different batch", "not the training batch")]),
}
