"""The replay sees a plain loop through PyTorch's global hooks, and leaves nothing behind."""

import pytest
import torch
import torch.nn as nn
import torch.nn.functional as F
import torch.optim.optimizer as optim_hooks
from torch.nn.modules import module as module_hooks

from labkit.diagnosis.own.step4_h1.flow import facts
from labkit.diagnosis.own.step1_capture.replay import Replay


class Net(nn.Module):
    def __init__(self, detach=False):
        super().__init__()
        self.body, self.head, self.detach = nn.Linear(4, 8), nn.Linear(8, 3), detach

    def forward(self, x):
        h = torch.relu(self.body(x))
        return self.head(h.detach() if self.detach else h)


def _loop(model, opt, steps=6, *, zero_grad=True, step=True, clip=None, no_grad=False, item=False):
    gen = torch.Generator().manual_seed(0)
    x, y = torch.randn(16, 4, generator=gen), torch.randint(0, 3, (16,), generator=gen)
    for _ in range(steps):
        if zero_grad:
            opt.zero_grad()
        with torch.set_grad_enabled(not no_grad):
            out = model(x)
        loss = F.cross_entropy(out, y)
        if item or no_grad:
            loss = torch.tensor(loss.item(), requires_grad=True)
        loss.backward()
        if clip is not None:
            torch.nn.utils.clip_grad_norm_(model.parameters(), max_norm=clip)
        if step:
            opt.step()


class _Run:  # the two columns `facts` reads from the learner's run
    table = {"loss_raw": [1.0] * 6}  # noqa: RUF012 (read only)


def _facts(**loop):
    torch.manual_seed(0)
    model = Net(detach=loop.pop("detach", False))
    opt = torch.optim.SGD(loop.pop("params", None) or model.parameters(), lr=loop.pop("lr", 0.1))
    with Replay() as rp:
        _loop(model, opt, **loop)
    return facts(rp, _Run()), rp


def _hook_counts():
    return (
        len(optim_hooks._global_optimizer_pre_hooks),
        len(optim_hooks._global_optimizer_post_hooks),
        len(module_hooks._global_forward_pre_hooks),
        len(module_hooks._global_forward_hooks),
    )


def test_every_hook_and_wrapper_is_removed_also_when_the_loop_raises():
    before = (_hook_counts(), torch.Tensor.backward, torch.nn.utils.clip_grad_norm_)
    with pytest.raises(RuntimeError, match="boom"):
        with Replay():
            raise RuntimeError("boom")
    _facts()
    assert (_hook_counts(), torch.Tensor.backward, torch.nn.utils.clip_grad_norm_) == before


def test_a_healthy_loop_has_steps_updates_and_no_flags():
    f, rp = _facts()
    assert (f["steps"], f["backwards"], f["leaf_share"], f["cleared_share"], f["stale_share"]) == (
        6,
        6,
        0,
        0,
        0,
    )
    assert all(s["update_norm"] > 0 and s["lr"] == [0.1] for s in rp.steps)
    assert not (f["missing"] or f["orphans"] or f["blocked"] or f["frozen"])


@pytest.mark.parametrize(
    "loop, fact, value",
    [
        ({"step": False}, "steps", 0),
        ({"zero_grad": False}, "stale_share", 1.0),
        ({"clip": 0.0}, "clip_zero", [("max_norm", 0.0)] * 6),
        ({"item": True}, "leaf_share", 1.0),
        ({"no_grad": True}, "no_grad_forward", True),
        ({"lr": 0.0}, "lr_all_zero", True),
        ({"detach": True}, "blocked", ["body.weight", "body.bias"]),
    ],
)
def test_each_defect_shows_as_one_fact(loop, fact, value):
    assert _facts(**loop)[0][fact] == value


def test_a_loss_rebuilt_from_a_float_had_a_graph_at_the_forward():
    assert _facts(item=True)[0]["graph_forward"] is True
    assert _facts(no_grad=True)[0]["graph_forward"] is False


def test_parameters_missing_from_the_optimizer_and_a_replaced_module_differ():
    torch.manual_seed(0)
    model = Net()
    f, _ = _facts(params=list(model.body.parameters()))  # another model's body: all of ours missing
    assert set(f["missing"]) == {"body.weight", "body.bias", "head.weight", "head.bias"}
    assert len(f["orphans"]) == 2  # the optimizer holds tensors our model does not use
    model = Net()
    opt = torch.optim.SGD(model.body.parameters(), lr=0.1)
    with Replay() as rp:
        _loop(model, opt)
    f = facts(rp, _Run())
    assert f["missing"] == ["head.weight", "head.bias"] and f["orphans"] == []


def test_the_replay_measures_lr_per_step_and_the_loss_value():
    torch.manual_seed(0)
    model = Net()
    opt = torch.optim.SGD(model.parameters(), lr=1.0)
    sched = torch.optim.lr_scheduler.ExponentialLR(opt, gamma=0.1)
    with Replay() as rp:
        for _ in range(5):
            _loop(model, opt, steps=1)
            sched.step()
    assert [round(s["lr"][0], 6) for s in rp.steps] == [1.0, 0.1, 0.01, 0.001, 0.0001]
    assert (
        0 < rp.backwards[0]["value"] < 5
        and rp.backwards[0]["graph"]
        and not rp.backwards[0]["leaf"]
    )
