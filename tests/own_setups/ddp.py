"""Distributed setups as a learner writes them: plain PyTorch DDP on ranks that
`labkit.diagnose` launches (``world_size = 2``). `DDPSetup` is healthy; each bug changes one
method, the way a bug lives in one place of a training script."""

from __future__ import annotations

import contextlib
import os
import time

import torch
import torch.distributed as dist
import torch.nn as nn
import torch.nn.functional as F
from torch.nn.parallel import DistributedDataParallel as DDP
from torch.utils.data import DataLoader, TensorDataset
from torch.utils.data.distributed import DistributedSampler

from labkit import Run


class DDPSetup:
    """An MLP with a BatchNorm, SGD with momentum, a DistributedSampler, the loss all-reduced."""

    world_size = 2
    batch_size = 16  # per rank

    def __init__(self):
        g = torch.Generator().manual_seed(0)
        self.x = torch.randn(256, 8, generator=g)
        self.y = (self.x[:, :4].argmax(1) + (self.x[:, 4] > 1).long()) % 4

    def make_model(self, seed):
        torch.manual_seed(seed)
        return nn.Sequential(nn.Linear(8, 32), nn.BatchNorm1d(32), nn.ReLU(), nn.Linear(32, 4))

    def make_optimizer(self, model):
        return torch.optim.SGD(model.parameters(), lr=0.05, momentum=0.9)

    def batches(self, seed):
        order = torch.randperm(len(self.x), generator=torch.Generator().manual_seed(seed))
        return [(self.x[i], self.y[i]) for i in order.split(2 * self.batch_size)]

    def loss_fn(self, model, batch):
        x, y = batch
        return F.cross_entropy(model(x), y)

    # ---- the loop, in the pieces a bug changes ----------------------------------------
    def wrap(self, model):
        return DDP(model)

    def forward(self, ddp, x):
        return ddp(x)

    def sync_context(self, ddp):
        return contextlib.nullcontext()  # DDP syncs the gradients in this backward

    def after_backward(self, model):
        pass

    def optimizer_step(self, opt):
        opt.step()

    def sampler(self, data, seed):
        return DistributedSampler(data, shuffle=True, seed=seed)

    def epoch_start(self, sampler, epoch):
        sampler.set_epoch(epoch)

    def reported(self, loss):
        total = loss.detach().clone()
        dist.all_reduce(total)
        return total.item() / dist.get_world_size()

    def step_begins(self, step):
        pass

    def train(self, seed, epochs):
        started = time.time()
        model = self.make_model(seed)
        ddp = self.wrap(model)
        opt = self.make_optimizer(ddp)
        data = TensorDataset(self.x, self.y)
        sampler = self.sampler(data, seed)
        loader = DataLoader(data, batch_size=self.batch_size, sampler=sampler)
        log = {"step": [], "loss_raw": [], "loss_reported": []}
        step = 0
        for epoch in range(epochs):
            self.epoch_start(sampler, epoch)
            for x, y in loader:
                self.step_begins(step)
                opt.zero_grad()
                with self.sync_context(ddp):
                    loss = F.cross_entropy(self.forward(ddp, x), y)
                    loss.backward()
                self.after_backward(model)
                self.optimizer_step(opt)
                log["step"].append(step)
                log["loss_raw"].append(loss.item())
                log["loss_reported"].append(self.reported(loss))
                step += 1
        return Run.from_log(log, seed=seed, started_at=started)


class ForwardThroughModule(DDPSetup):
    def forward(self, ddp, x):
        return ddp.module(x)  # skips DDP's hooks: no gradient sync


class NoSyncEveryStep(DDPSetup):
    def sync_context(self, ddp):
        return ddp.no_sync()  # meant for accumulation, never left


class NoSetEpoch(DDPSetup):
    def epoch_start(self, sampler, epoch):
        pass  # sampler.set_epoch(epoch) forgotten


class DoubleAllReduce(DDPSetup):
    def after_backward(self, model):
        for p in model.parameters():  # DDP has averaged them already
            dist.all_reduce(p.grad)


class LocalReportedLoss(DDPSetup):
    def reported(self, loss):
        return loss.item()  # this rank's shard only


class BuffersNotBroadcast(DDPSetup):
    def wrap(self, model):
        return DDP(model, broadcast_buffers=False)


class NoDDP(DDPSetup):
    def wrap(self, model):
        return model  # DDP(model) forgotten: each rank trains alone


class NoShuffle(DDPSetup):
    def sampler(self, data, seed):
        return DistributedSampler(data, shuffle=False)  # set_epoch then changes nothing


class RankDies(DDPSetup):
    """Rank 1's process ends at step 3, as an out-of-memory kill would end it."""

    def step_begins(self, step):
        if dist.get_rank() == 1 and step == 3:
            os._exit(1)


class MissingLayer(DDPSetup):
    """A one-process bug inside DDP: the last layer left out of the optimizer."""

    def make_optimizer(self, model):
        head = list(model.parameters())[-2:]  # the last Linear's weight and bias
        rest = [p for p in model.parameters() if all(p is not q for q in head)]
        return torch.optim.SGD(rest, lr=0.05, momentum=0.9)


class ZeroLR(DDPSetup):
    """A one-process bug inside DDP: a learning rate of 0 (a schedule's start value)."""

    def make_optimizer(self, model):
        return torch.optim.SGD(model.parameters(), lr=0.0, momentum=0.9)


class WrongDivisor(DDPSetup):
    """A one-process logger bug inside DDP: the all-reduced loss divided by the 8 GPUs of
    the machine the script was written for, not by world_size."""

    def reported(self, loss):
        total = loss.detach().clone()
        dist.all_reduce(total)
        return total.item() / 8


class FixedDivisor(WrongDivisor):
    """The fix of `WrongDivisor`: divided by world_size (record.intervene's test)."""

    def reported(self, loss):
        return DDPSetup.reported(self, loss)


SINGLE = {  # one-process bugs inside a DDP loop; their healthy twin is DDPSetup
    "missing_layer": MissingLayer,
    "zero_lr": ZeroLR,
    "wrong_divisor": WrongDivisor,
}

BUGS = {
    "forward_through_module": ForwardThroughModule,
    "no_sync_every_step": NoSyncEveryStep,
    "no_set_epoch": NoSetEpoch,
    "double_allreduce": DoubleAllReduce,
    "local_reported_loss": LocalReportedLoss,
    "buffers_not_broadcast": BuffersNotBroadcast,
}


class RankHangs(DDPSetup):
    """Rank 1 stops answering at step 3, as a rank stuck in I/O or a deadlock does."""

    def step_begins(self, step):
        if dist.get_rank() == 1 and step == 3:
            time.sleep(3600)
