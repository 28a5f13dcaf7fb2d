"""H1 setups: the data and the logger are fine; the loss cannot descend, or the step is wrong."""

from __future__ import annotations

import time

import torch
import torch.nn as nn
import torch.nn.functional as F

from labkit import Run

from .common import MLP, N_CLASSES
from .healthy import BlobSetup, MlpAdam


def _log():
    return {"step": [], "loss_raw": [], "loss_reported": [], "batch_id": []}


def _append(log, loss_value, i, total):
    log["step"].append(len(log["step"]))
    log["loss_raw"].append(loss_value)
    log["loss_reported"].append(total / (i + 1))
    log["batch_id"].append(i)


class HeadMissingFromOptimizer(BlobSetup):
    """'Only the body needs momentum': the optimizer is built from model.body alone."""

    def make_optimizer(self, model):
        return torch.optim.SGD(model.body.parameters(), lr=0.05, momentum=0.9)


class FrozenBody(MlpAdam):
    """Copied from a fine-tuning script: the body is frozen, only the head trains, but here
    the body is a random init, not a pretrained network."""

    def make_model(self, seed):
        model = super().make_model(seed)
        for p in model.body.parameters():
            p.requires_grad_(False)
        return model

    def make_optimizer(self, model):
        return torch.optim.Adam([p for p in model.parameters() if p.requires_grad], lr=3e-3)


class HeadReplacedAfterOptimizer(BlobSetup):
    """A model factory from a 4-class project; the head is swapped for this data's 6 classes
    after the optimizer was built, so the optimizer holds the old head."""

    def make_model(self, seed):
        torch.manual_seed(seed)
        return MLP(n_out=4)

    def make_optimizer(self, model):
        opt = torch.optim.SGD(model.parameters(), lr=0.05, momentum=0.9)
        model.head = nn.Linear(64, N_CLASSES)
        return opt


class _CustomLoop(BlobSetup):
    """Helpers for setups that write their own loop."""

    def _loop(self, seed, epochs, step_fn, opt_factory=None):
        started = time.time()
        model = self.make_model(seed)
        opt = (opt_factory or self.make_optimizer)(model)
        log = _log()
        ctx = {"model": model, "opt": opt, "global": 0}
        ctx.update(self.before(ctx, epochs))
        for epoch in range(epochs):
            total = 0.0
            for i, batch in enumerate(self.batches(seed)):
                value = step_fn(ctx, batch)
                total += value
                _append(log, value, i, total)
                ctx["global"] += 1
        return Run.from_log(log, seed=seed, started_at=started)

    def before(self, ctx, epochs):
        return {}


class WarmupIntegerDivision(_CustomLoop):
    """Linear warmup written as `step // warmup_steps` (integer division): the factor, and
    the learning rate, stay 0 for the first 2000 steps, longer than the whole run."""

    def before(self, ctx, epochs):
        return {"sched": torch.optim.lr_scheduler.LambdaLR(ctx["opt"], lambda s: min(1, s // 2000))}

    def train(self, seed, epochs):
        def step(ctx, batch):
            loss = self.loss_fn(ctx["model"], batch)
            ctx["opt"].zero_grad()
            loss.backward()
            ctx["opt"].step()
            ctx["sched"].step()
            return loss.item()
        return self._loop(seed, epochs, step)


class SchedulerPerBatch(_CustomLoop):
    """StepLR(step_size=2, gamma=0.1) meant as 'every 2 epochs', stepped every batch."""

    def before(self, ctx, epochs):
        return {"sched": torch.optim.lr_scheduler.StepLR(ctx["opt"], step_size=2, gamma=0.1)}

    def train(self, seed, epochs):
        def step(ctx, batch):
            loss = self.loss_fn(ctx["model"], batch)
            ctx["opt"].zero_grad()
            loss.backward()
            ctx["opt"].step()
            ctx["sched"].step()
            return loss.item()
        return self._loop(seed, epochs, step)


class ZeroGradAfterBackward(_CustomLoop):
    """zero_grad() moved below backward() during a refactor: the step sees zeros."""

    def train(self, seed, epochs):
        def step(ctx, batch):
            loss = self.loss_fn(ctx["model"], batch)
            loss.backward()
            ctx["opt"].zero_grad()
            ctx["opt"].step()
            return loss.item()
        return self._loop(seed, epochs, step)


class StepNeverCalled(_CustomLoop):
    """The loop calls scheduler.step() and not optimizer.step(), as if one did the other."""

    def before(self, ctx, epochs):
        return {"sched": torch.optim.lr_scheduler.ExponentialLR(ctx["opt"], gamma=0.999)}

    def train(self, seed, epochs):
        def step(ctx, batch):
            ctx["opt"].zero_grad()
            loss = self.loss_fn(ctx["model"], batch)
            loss.backward()
            ctx["sched"].step()
            return loss.item()
        import warnings
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")  # torch warns about the scheduler order
            return self._loop(seed, epochs, step)


class ClipToZero(_CustomLoop):
    """`max_norm=0.` in the config, meant as 'no clipping': clip_grad_norm_ scales every
    gradient to norm 0."""

    max_norm = 0.0

    def train(self, seed, epochs):
        def step(ctx, batch):
            ctx["opt"].zero_grad()
            loss = self.loss_fn(ctx["model"], batch)
            loss.backward()
            torch.nn.utils.clip_grad_norm_(ctx["model"].parameters(), max_norm=self.max_norm)
            ctx["opt"].step()
            return loss.item()
        return self._loop(seed, epochs, step)


class LossFromItem(BlobSetup):
    """The loss is assembled from Python floats 'to add the L2 term cheaply', then wrapped
    back into a tensor: it has no graph back to the model."""

    def loss_fn(self, model, batch):
        x, y = batch
        ce = F.cross_entropy(model(x), y)
        l2 = sum(p.pow(2).sum() for p in model.parameters())
        return torch.tensor(ce.item() + 1e-5 * l2.item(), requires_grad=True)


class ForwardUnderNoGrad(_CustomLoop):
    """The forward is copied from the evaluation code, inside torch.no_grad(); backward()
    then failed, and `loss.requires_grad_(True)` silenced the error."""

    def train(self, seed, epochs):
        def step(ctx, batch):
            x, y = batch
            with torch.no_grad():
                logits = ctx["model"](x)
            loss = F.cross_entropy(logits, y)
            loss.requires_grad_(True)
            ctx["opt"].zero_grad()
            loss.backward()
            ctx["opt"].step()
            return loss.item()
        return self._loop(seed, epochs, step)


class _DetachedBody(MLP):
    def forward(self, x):
        features = self.body(x).detach()  # left over from a feature-extraction experiment
        return self.head(features)


class DetachMidModel(BlobSetup):
    """The model detaches its body's output: the body never gets a gradient."""

    def make_model(self, seed):
        torch.manual_seed(seed)
        return _DetachedBody()


class LrTooHigh(BlobSetup):
    """lr=3.0 with momentum 0.9 (the value from a sweep of another, normalised problem)."""

    def make_optimizer(self, model):
        return torch.optim.SGD(model.parameters(), lr=3.0, momentum=0.9)


def _softmax_cross_entropy(logits, y):
    """Hand-written softmax cross-entropy: exp overflows float16 once a logit passes ~11."""
    e = torch.exp(logits)
    p = e / e.sum(dim=1, keepdim=True)
    return -torch.log(p[torch.arange(len(y)), y]).mean()


class AutocastFp16(_CustomLoop):
    """float16 autocast in the loop and a hand-written softmax cross-entropy."""

    def make_optimizer(self, model):
        return torch.optim.Adam(model.parameters(), lr=1e-2)

    def train(self, seed, epochs):
        def step(ctx, batch):
            x, y = batch
            with torch.autocast("cpu", dtype=torch.float16):
                loss = _softmax_cross_entropy(ctx["model"](x), y)
            ctx["opt"].zero_grad()
            loss.backward()
            ctx["opt"].step()
            return loss.item()
        return self._loop(seed, epochs, step)


class HalfModel(MlpAdam):
    """`.half()` on the model 'to halve memory', inputs cast to half, the same hand-written
    softmax cross-entropy."""

    def make_model(self, seed):
        return super().make_model(seed).half()

    def make_optimizer(self, model):
        return torch.optim.SGD(model.parameters(), lr=0.1, momentum=0.9)

    def loss_fn(self, model, batch):
        return _softmax_cross_entropy(model(batch["x"].half()), batch["y"])


class MissingZeroGrad(_CustomLoop):
    """zero_grad() was never written: every backward adds to the gradients of all steps before."""

    def train(self, seed, epochs):
        def step(ctx, batch):
            loss = self.loss_fn(ctx["model"], batch)
            loss.backward()
            ctx["opt"].step()
            return loss.item()
        return self._loop(seed, epochs, step)


H1 = {"h1_head_missing_from_optimizer": HeadMissingFromOptimizer, "h1_frozen_body": FrozenBody,
      "h1_head_replaced_after_optimizer": HeadReplacedAfterOptimizer,
      "h1_lr_zero_warmup": WarmupIntegerDivision, "h1_scheduler_per_batch": SchedulerPerBatch,
      "h1_zero_grad_after_backward": ZeroGradAfterBackward, "h1_step_never_called": StepNeverCalled,
      "h1_clip_to_zero": ClipToZero, "h1_loss_from_item": LossFromItem,
      "h1_forward_under_no_grad": ForwardUnderNoGrad, "h1_detach_mid_model": DetachMidModel,
      "h1_lr_too_high": LrTooHigh, "h1_fp16_autocast_softmax": AutocastFp16,
      "h1_fp16_half_model": HalfModel, "h1_missing_zero_grad": MissingZeroGrad}
