"""The "write the loop from memory" check: run the learner's `train_step` on a reference
model and compare what it did with the reference step, from behaviour alone.

The model starts with a stale gradient already in every ``.grad`` (from another batch,
as after a previous step), and ``optimizer.step`` is watched: the gradient it sees tells
a missing ``zero_grad`` (stale + fresh), a step before ``backward`` (stale, or nothing)
and a loss cut from its graph (backward never reaches the weights) apart.
"""

from __future__ import annotations

import copy

import torch
import torch.nn.functional as F

from ..lessons.mechanism import reference_batch, reference_setup, reference_step
from ._base import CheckFailed, answer_check

TOL = dict(rtol=1e-4, atol=1e-6)


def _grads(model) -> list:
    return [None if p.grad is None else p.grad.detach().clone() for p in model.parameters()]


def _state(grads, stale, fresh) -> str:
    """Which gradient `grads` holds: none, zero, stale, fresh, sum (stale + fresh) or other."""
    if all(g is None for g in grads):
        return "none"
    if any(g is None for g in grads):
        return "other"
    if all(float(g.abs().max()) == 0.0 for g in grads):
        return "zero"
    for name, want in (
        ("fresh", fresh),
        ("stale", stale),
        ("sum", [a + b for a, b in zip(stale, fresh)]),
    ):
        if all(torch.allclose(g, w, **TOL) for g, w in zip(grads, want)):
            return name
    return "other"


def _watch(optimizer, model, seen: list) -> None:
    """Record the gradients optimizer.step() finds each time it is called."""
    original = optimizer.step

    def step(*args, **kwargs):
        seen.append(_grads(model))
        return original(*args, **kwargs)

    optimizer.step = step


def _fresh_gradient(model, batch) -> list:
    twin = copy.deepcopy(model)
    twin.zero_grad(set_to_none=True)
    F.cross_entropy(twin(batch[0]), batch[1]).backward()
    return _grads(twin)


@answer_check
def loop_train_step(train_step) -> str:
    """Does train_step(model, optimizer, batch) do one correct training step?"""
    if not callable(train_step):
        raise CheckFailed(
            f"Pass your function itself, train_step, not {type(train_step).__name__}."
        )
    model, optimizer, batch = reference_setup(seed=0)
    reference = copy.deepcopy(model)
    old = reference_batch(seed=0, offset=64)  # the batch before: its gradient is left in .grad
    F.cross_entropy(model(old[0]), old[1]).backward()
    stale = _grads(model)
    fresh = _fresh_gradient(reference, batch)
    before = [p.detach().clone() for p in model.parameters()]
    seen: list = []
    _watch(optimizer, model, seen)
    try:
        train_step(model, optimizer, batch)
    except AttributeError as exc:
        if "'float'" in str(exc) and "backward" in str(exc):
            raise CheckFailed(
                "Your train_step calls backward() on a Python float: .item() turns "
                "the loss into a plain number with no graph, so keep the tensor for "
                "backward() and use .item() only for the value you log."
            ) from None
        raise CheckFailed(
            f"Your train_step raised AttributeError ({exc}); it is called as "
            "train_step(model, optimizer, (inputs, targets))."
        ) from None
    except RuntimeError as exc:
        if "modified by an inplace operation" in str(exc):
            raise CheckFailed(
                "optimizer.step() changed the weights before loss.backward() ran, "
                "and autograd needs the weights the forward pass used: call "
                "backward() first, then step()."
            ) from None
        raise CheckFailed(
            f"Your train_step raised RuntimeError ({str(exc).splitlines()[0]}); it "
            "is called as train_step(model, optimizer, (inputs, targets))."
        ) from None
    except Exception as exc:  # noqa: BLE001 -- any error in the learner's code is the answer
        raise CheckFailed(
            f"Your train_step raised {type(exc).__name__} ({exc}); it is called as "
            "train_step(model, optimizer, (inputs, targets))."
        ) from None
    after = _state(_grads(model), stale, fresh)
    moved = any(not torch.equal(p.detach(), b) for p, b in zip(model.parameters(), before))
    if after in ("none", "stale", "zero"):
        raise CheckFailed(
            "backward() never reached the weights (their .grad is not this batch's "
            "gradient): call loss.backward() on the tensor the model produced, not "
            "on a loss rebuilt from .item(), detached, or made under torch.no_grad()."
        )
    if not seen:
        raise CheckFailed(
            "optimizer.step() never ran: the gradients were computed, but nothing "
            "moved the weights, so the loss cannot change."
        )
    if len(seen) > 1:
        raise CheckFailed(
            f"optimizer.step() ran {len(seen)} times in one train_step; one batch "
            "should give exactly one step."
        )
    at_step = _state(seen[0], stale, fresh)
    if at_step == "sum":
        raise CheckFailed(
            "optimizer.step() used the old gradient plus the new one: zero_grad() is "
            "missing, so .grad keeps adding up from batch to batch."
        )
    if at_step in ("none", "zero", "stale"):
        held = "the previous batch's gradient" if at_step == "stale" else "no gradient"
        raise CheckFailed(
            f"optimizer.step() ran before loss.backward(): at that moment .grad held "
            f"{held}, so the step did not use this batch; call backward() first, "
            "then step()."
        )
    reference_step(reference, torch.optim.SGD(reference.parameters(), lr=0.1), batch)
    same = all(
        torch.allclose(p, r, **TOL) for p, r in zip(model.parameters(), reference.parameters())
    )
    if at_step != "fresh" or not moved or not same:
        raise CheckFailed(
            "The step used a gradient or moved the weights differently from the "
            "reference step: use F.cross_entropy on the model's logits and the "
            "optimizer you were given, unchanged."
        )
    return "ok: zero_grad, forward, loss, backward, step: your step matches the reference step"
