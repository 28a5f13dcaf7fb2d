"""The learner's fixes: for a buggy setup, the same setup with the one change its prescription
names, as a learner would write it (a subclass overriding one method). `record.intervene`
must sign each (tests/setups/test_own_sign.py; `python -m own_setups.signing` from tests/ measures
them all). Nothing here uses labkit but `Run.from_log` (through the setups).
"""

from __future__ import annotations

import time

import torch
import torch.nn as nn
import torch.nn.functional as F

from labkit import Run

from .common import MLP, N_CLASSES, batches_of
from .fifth import AccumScaledLossLogged, StagingBufferAliased, shuffled as shuffled5
from .fourth import LmLabelsNotShifted, SameBatchEveryStep, _gen
from .h1 import DetachMidModel, HeadReplacedAfterOptimizer, LrTooHigh
from .h2 import NanInputs


class DetachRemoved(DetachMidModel):
    """flow_blocked: the model without the stray detach()."""

    def make_model(self, seed):
        torch.manual_seed(seed)
        return MLP()


class SliceAdvanced(SameBatchEveryStep):
    """repeated_rows (memorised): each batch takes its own slice of the permutation."""

    def batches(self, seed):
        order = torch.randperm(len(self.x), generator=_gen(seed))
        return [(self.x[i], self.y[i]) for i in order.split(32) if len(i) == 32]


class StagingCopied(StagingBufferAliased):
    """repeated_rows (one input for every label): each batch keeps its own rows."""

    def batches(self, seed):
        return [(self.x[i], self.y[i]) for i in shuffled5(len(self.x), 32, seed)]


class RawLossLogged(AccumScaledLossLogged):
    """H3 divisor: the logger prints the loss before it is divided for accumulation."""

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
                shown.append(loss.item())
                (loss / self.accum).backward()
                if (i + 1) % self.accum == 0:
                    opt.step()
                    opt.zero_grad()
        return Run.from_log({"step": list(range(len(raw))), "loss_raw": raw, "loss_reported": shown},
                            seed=seed, started_at=started)


class OptimizerAfterHead(HeadReplacedAfterOptimizer):
    """replaced: the head is swapped first, then the optimizer is built."""

    def make_optimizer(self, model):
        model.head = nn.Linear(64, N_CLASSES)
        return torch.optim.SGD(model.parameters(), lr=0.05, momentum=0.9)


class LrLowered(LrTooHigh):
    """divergence: the learning rate the plain loop descended with (lr/100)."""

    def make_optimizer(self, model):
        return torch.optim.SGD(model.parameters(), lr=0.03, momentum=0.9)


class NanImputed(NanInputs):
    """input_nonfinite: missing values replaced by the feature's training mean."""

    def batches(self, seed):
        x = self.x.clone()
        column = x[:, 3]
        column[column.isnan()] = column[~column.isnan()].mean()
        return [{"x": xb, "y": yb} for xb, yb in batches_of(x, self.y, 32, seed)]


class LabelsShifted(LmLabelsNotShifted):
    """labels_are_inputs: the labels are the next tokens."""

    def loss_fn(self, model, batch):
        logits = model(batch["input_ids"])  # (B, T, V)
        return F.cross_entropy(logits[:, :-1].reshape(-1, logits.shape[-1]),
                               batch["labels"][:, 1:].reshape(-1))


# buggy setup's name -> its fix
FIXED = {
    "h1_detach_mid_model": DetachRemoved,
    "fourth_h2_same_batch_every_step": SliceAdvanced,
    "fifth_h2_staging_buffer_aliased": StagingCopied,
    "fifth_h3_accum_scaled_loss_logged": RawLossLogged,
    "h1_head_replaced_after_optimizer": OptimizerAfterHead,
    "h1_lr_too_high": LrLowered,
    "h2_nan_inputs": NanImputed,
    "fourth_h2_lm_labels_not_shifted": LabelsShifted,
}

# Right convictions that labkit does not sign alone (no arm of its own reaches the mechanism):
# each is signed by its fix above, but the fp16 one, where no plain loop finishes, float32 included.
SIGNED_BY_FIX_ONLY = {"h1_detach_mid_model", "fourth_h2_same_batch_every_step",
                      "fifth_h2_staging_buffer_aliased"}
UNSIGNED = {"h1_fp16_half_model"}
