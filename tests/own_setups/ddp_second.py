"""A second set of distributed setups, written after the zoo and its rules, as a learner
writes them in plain DDP code: bugs none of `ddp.py`'s seams covers, and healthy loops that
use DDP's features the way the documentation intends (they must be acquitted)."""

from __future__ import annotations

import contextlib
import time

import torch
import torch.distributed as dist
import torch.nn.functional as F
from torch.nn.parallel import DistributedDataParallel as DDP
from torch.utils.data import DataLoader, RandomSampler, TensorDataset
from torch.utils.data.distributed import DistributedSampler

from labkit import Run

from .ddp import DDPSetup


class AccumulateWithNoSync(DDPSetup):
    """Healthy: two micro-batches per optimizer step, DDP's sync skipped on the first only
    (``no_sync()`` as its documentation shows it)."""

    micro = 2

    def train(self, seed, epochs):
        started = time.time()
        ddp = DDP(self.make_model(seed))
        opt = self.make_optimizer(ddp)
        data = TensorDataset(self.x, self.y)
        sampler = DistributedSampler(data, shuffle=True, seed=seed)
        loader = DataLoader(data, batch_size=self.batch_size // self.micro, sampler=sampler)
        log = {"step": [], "loss_raw": [], "loss_reported": []}
        step, k, total = 0, 0, 0.0
        for epoch in range(epochs):
            sampler.set_epoch(epoch)
            for x, y in loader:
                last = (k + 1) % self.micro == 0
                with contextlib.nullcontext() if last else ddp.no_sync():
                    loss = F.cross_entropy(ddp(x), y) / self.micro
                    loss.backward()
                total, k = total + loss.item(), k + 1
                if last:
                    opt.step()
                    opt.zero_grad()
                    mean = torch.tensor(total)
                    dist.all_reduce(mean)
                    log["step"].append(step)
                    log["loss_raw"].append(total)
                    log["loss_reported"].append(mean.item() / dist.get_world_size())
                    step, total = step + 1, 0.0
        return Run.from_log(log, seed=seed, started_at=started)


class LRScaledByWorldSize(DDPSetup):
    """Healthy: the LR scaled linearly with the number of ranks, on purpose."""

    def make_optimizer(self, model):
        return torch.optim.SGD(model.parameters(), lr=0.025 * dist.get_world_size(), momentum=0.9)


class ClipAfterSync(DDPSetup):
    """Healthy: gradient clipping after backward, where DDP has averaged the gradients."""

    def after_backward(self, model):
        torch.nn.utils.clip_grad_norm_(model.parameters(), 1.0)


class LRDependsOnRank(DDPSetup):
    """Bug: the learning rate is scaled by the rank (a line meant for a per-rank seed)."""

    def make_optimizer(self, model):
        lr = 0.05 * (1 + dist.get_rank())
        return torch.optim.SGD(model.parameters(), lr=lr, momentum=0.9)


class StepOnRankZeroOnly(DDPSetup):
    """Bug: ``optimizer.step()`` under ``if rank == 0`` (a guard meant for logging)."""

    def optimizer_step(self, opt):
        if dist.get_rank() == 0:
            opt.step()


class SameSamplerOnEveryRank(DDPSetup):
    """Bug: a RandomSampler seeded alike on every rank, not a DistributedSampler."""

    def sampler(self, data, seed):
        return RandomSampler(data, generator=torch.Generator().manual_seed(seed))

    def epoch_start(self, sampler, epoch):
        pass


HEALTHY = {
    "ok_accumulate_with_no_sync": AccumulateWithNoSync,
    "ok_lr_scaled_by_world_size": LRScaledByWorldSize,
    "ok_clip_after_sync": ClipAfterSync,
}
BUGS = {
    "lr_depends_on_rank": LRDependsOnRank,
    "step_on_rank_zero_only": StepOnRankZeroOnly,
    "same_sampler_on_every_rank": SameSamplerOnEveryRank,
}
