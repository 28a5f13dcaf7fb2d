"""The fault suite, `labkit.watch`: an optimizer that changes mid-run (a param group added)
and a writer that fails. Checked against a float64 reference of the same steps."""

import warnings

import pytest
import torch
import torch.nn.functional as F

import labkit


def setup():
    torch.manual_seed(0)
    model = torch.nn.Sequential(torch.nn.Linear(4, 8), torch.nn.Tanh(), torch.nn.Linear(8, 3))
    x, y = torch.randn(32, 4), torch.randint(0, 3, (32,))
    return model, x, y


def step(model, optimizer, x, y) -> float:
    optimizer.zero_grad()
    loss = F.cross_entropy(model(x), y)
    loss.backward()
    optimizer.step()
    return loss.item()


def test_a_param_group_added_mid_run_is_measured_from_the_step_it_joins():
    model, x, y = setup()
    head = model[2]
    optimizer = torch.optim.SGD(model[0].parameters(), lr=0.1)  # the head starts frozen out
    w = labkit.watch(model, optimizer)
    assert any("not in the optimizer" in f for f in w.findings)
    raw, reference = [], []
    for i in range(6):
        if i == 3:
            optimizer.add_param_group({"params": head.parameters(), "lr": 0.5})
        before = [p.detach().double().clone() for p in head.parameters()]
        raw.append(step(model, optimizer, x, y))
        moved = [(p.detach().double() - b).pow(2).sum() for p, b in zip(head.parameters(), before)]
        reference.append(float(torch.stack(moved).sum().sqrt()))
    run = w.run(loss_raw=raw)
    w.close()
    got = run.table["update_norm/2"]
    assert got[:3] == [0.0, 0.0, 0.0] and min(reference[3:]) > 1e-3
    assert max(abs(a - b) for a, b in zip(got, reference)) < 1e-6
    assert not any("not in the optimizer" in f for f in w.findings)
    assert run.table["lr/1"][3:] == [0.5] * 3


class FullDisk:
    def __init__(self):
        self.calls = 0

    def add_scalar(self, tag, value, global_step):
        self.calls += 1
        raise OSError(28, "No space left on device")


def test_a_writer_that_fails_is_detached_once_and_no_step_is_lost():
    model, x, y = setup()
    optimizer = torch.optim.SGD(model.parameters(), lr=0.1)
    writer = FullDisk()
    w = labkit.watch(model, optimizer, writer=writer)
    w._writer.every = 2  # the writer is reached within the loop, inside optimizer.step()
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        raw = [step(model, optimizer, x, y) for _ in range(5)]  # never raises
        w.close()  # never raises, and removes every hook
    said = [str(c.message) for c in caught if "labkit.watch" in str(c.message)]
    assert len(said) == 1 and "the writer FullDisk failed (OSError" in said[0], said
    assert writer.calls == 1
    assert not optimizer._optimizer_step_pre_hooks and not optimizer._optimizer_step_post_hooks
    assert len(w.run(loss_raw=raw).table["update_norm"]) == 5
    step(model, optimizer, x, y)
    assert w.steps == 5  # closed: no longer measured


def test_a_layer_frozen_at_first_and_unfrozen_mid_run_is_measured_from_the_step_it_joins():
    model, x, y = setup()
    head = model[2].requires_grad_(False)  # frozen, and left out of the optimizer
    optimizer = torch.optim.SGD(model[0].parameters(), lr=0.1)
    w = labkit.watch(model, optimizer)
    assert not w.findings and "update_norm/2" not in w.columns()
    raw, reference, grads = [], [], []
    for i in range(6):
        if i == 3:  # unfrozen, the usual way: requires grad again, then a group of its own
            optimizer.add_param_group({"params": head.requires_grad_(True).parameters(), "lr": 0.5})
        before = [p.detach().double().clone() for p in head.parameters()]
        raw.append(step(model, optimizer, x, y))
        moved = [(p.detach().double() - b).pow(2).sum() for p, b in zip(head.parameters(), before)]
        reference.append(float(torch.stack(moved).sum().sqrt()))
        grads.append(
            float(
                torch.stack([p.grad.double().pow(2).sum() for p in head.parameters()]).sum().sqrt()
            )
            if i >= 3
            else None
        )
    run = w.run(loss_raw=raw)
    w.close()
    assert run.table["update_norm/2"][:3] == [0.0, 0.0, 0.0] and min(reference[3:]) > 1e-3
    assert max(abs(a - b) for a, b in zip(run.table["update_norm/2"], reference)) < 1e-6
    assert run.table["grad_norm/2"][:3] == [None] * 3
    assert max(abs(a - b) for a, b in zip(run.table["grad_norm/2"][3:], grads[3:])) < 1e-6
    # the layer measured from the start keeps its columns in place
    assert all(v > 0 for v in run.table["update_norm/0"]) and len(run.table["update_norm"]) == 6


def _broken(*args, **kwargs):
    raise RuntimeError("a fault inside labkit's own measuring")


@pytest.mark.parametrize(
    "where, kept", [("step", 2), ("pre-hook", 2), ("clip", 2), ("no optimizer", 1)]
)
def test_an_error_inside_the_watch_stops_it_and_never_reaches_the_learners_loop(
    where, kept, monkeypatch
):
    """Without an optimizer a step is recorded at the next forward, so one fewer is kept.
    The learner's own step hooks, registered after the watch's, run at every step: the watch
    stops inside torch's loop over the hooks, and removing its hooks there made
    `optimizer.step()` raise "OrderedDict mutated during iteration" and skip the learner's."""
    model, x, y = setup()
    optimizer = torch.optim.SGD(model.parameters(), lr=0.1)
    w = labkit.watch(model, None if where == "no optimizer" else optimizer)
    theirs = []
    optimizer.register_step_pre_hook(lambda *a: theirs.append("pre"))
    optimizer.register_step_post_hook(lambda *a: theirs.append("post"))
    losses = []
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        for i in range(5):
            if i == 2 and where == "pre-hook":  # fails before the step, in its pre-hook
                monkeypatch.setattr(labkit.core.watch.follow, "storage", _broken)
            elif i == 2:  # from the third step on, labkit's own measuring fails
                w._norms = w.plan.diffs = _broken
                if w._ring is not None:  # a small model's steps, kept (watch/ring.py)
                    w._ring.put = w._ring.diffs = _broken
            optimizer.zero_grad()
            loss = F.cross_entropy(model(x), y)
            loss.backward()  # never raises
            if where == "clip":
                torch.nn.utils.clip_grad_norm_(model.parameters(), 1.0)  # never raises
            optimizer.step()  # never raises
            losses.append(loss.item())
        w.close()
    said = [str(c.message) for c in caught if c.category is labkit.core.watch.guard.WatchStopped]
    assert len(said) == 1 and f"stopped measuring at step {kept}" in said[0], said
    assert "a fault inside labkit's own measuring" in said[0]
    assert theirs == ["pre", "post"] * 5  # the learner's hooks ran at every step
    assert w.steps == kept and len(optimizer._optimizer_step_pre_hooks) == 1  # theirs only
    assert len(optimizer._optimizer_step_post_hooks) == 1 and not w._handles
    assert not _hooked_globally(w)  # nothing of it left among torch's global hooks
    assert len(w.run(loss_raw=losses[:kept]).table["update_norm"]) == kept
    assert losses[-1] < losses[0]  # the loop went on training


def _hooked_globally(w) -> bool:
    """Whether one of torch's global optimizer pre-hooks still leads to watch `w`."""
    import weakref

    from torch.optim.optimizer import _global_optimizer_pre_hooks

    return any(
        isinstance(cell.cell_contents, weakref.ref) and cell.cell_contents() is w
        for hook in _global_optimizer_pre_hooks.values()
        for cell in getattr(hook, "__closure__", None) or ()
    )


def test_a_watch_stopped_inside_a_step_and_never_closed_loses_its_hooks_at_the_next_watch():
    """Its hooks stay (doing nothing) while torch loops over them, and go when the next
    watch is made; the next watch measures on."""
    model, x, y = setup()
    optimizer = torch.optim.SGD(model.parameters(), lr=0.1)
    w = labkit.watch(model, optimizer)
    step(model, optimizer, x, y)
    w._norms = w.plan.diffs = _broken
    if w._ring is not None:
        w._ring.put = w._ring.diffs = _broken
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", labkit.core.watch.guard.WatchStopped)
        step(model, optimizer, x, y)
    assert w.stopped is not None and len(optimizer._optimizer_step_post_hooks) == 1
    again = labkit.watch(model, optimizer)  # the stopped one is never closed
    assert len(optimizer._optimizer_step_post_hooks) == 1  # the new watch's alone
    assert not _hooked_globally(w) and _hooked_globally(again)
    step(model, optimizer, x, y)
    assert again.steps == 1 and again.columns()["update_norm"][0] > 0
    again.close()
    assert not optimizer._optimizer_step_pre_hooks and not _hooked_globally(again)
